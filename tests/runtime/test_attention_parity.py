"""Attention parity sweep: the spec, ``reference.attention``, ``libtorch.sdpa_forward`` and
``aten.scaled_dot_product_attention`` against torch SDPA (issue 5, first "Done when" item).

For every case of a seeded sweep — shapes x mask kinds x dtypes — each implementation computes
the forward output and the gradients ``(dq, dk, dv)`` of ``sum(out * g)`` for a random cotangent
``g``; the two runtime paths go through the eager op and TorchLean's tape under the profile that
selects them (``checked_cpu`` -> ``reference.attention``, ``libtorch_forward_cpu`` ->
``libtorch.sdpa_forward``, ``fast_cpu`` -> ``aten.scaled_dot_product_attention``).

Oracle: ``torch.nn.functional.scaled_dot_product_attention`` with a boolean ``attn_mask`` and
``torch.autograd``, in float64 on the (upcast) inputs. Tolerance: max abs error <= tol * max|oracle|
with tol 1e-10 (float64 inputs) or 1e-5 (float32 inputs).

Fully blocked query rows (DESIGN §1.9) are compared with torch only where a query has an allowed
key; on blocked rows ours must be exactly zero (output and dq), and dk/dv must equal torch's with
those rows' cotangent zeroed (blocked rows contribute nothing). Poisoned cases put NaN or inf in
K/V rows blocked for every query and in the cotangent rows of fully blocked queries; every output
and gradient must then be finite and bit-equal to the unpoisoned run.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torchlean as tl
from torchlean import spec
from torchlean.backend.vocabulary import BackendOp

Array = np.ndarray[Any, Any]


# ------------------------------------------------------------------------------------ the case table


@dataclass(frozen=True, slots=True)
class Shape:
    """q (*batch, n_q, d), k (*batch, n_k, d), v (*batch, n_k, d_v)."""

    name: str
    batch: tuple[int, ...]
    n_q: int
    n_k: int
    d: int
    d_v: int


SHAPES = (
    Shape("plain_nq<nk", (), 3, 5, 4, 4),
    Shape("batch_nq>nk_dv<d", (2,), 5, 3, 3, 2),
    Shape("heads_d1", (2, 3), 4, 4, 1, 3),
    Shape("single_query_dv>d", (2,), 1, 4, 3, 5),
    Shape("single_key", (), 4, 1, 2, 3),
    Shape("heads_nq<nk_dv1", (1, 2), 6, 7, 5, 1),
)
MASK_KINDS = (
    "none",
    "causal_upper_left",
    "causal_lower_right",
    "random",
    "blocked_rows",
    "poison_nan",
    "poison_inf",
)
DTYPES = (np.float64, np.float32)
TOLERANCE = {np.dtype(np.float64): 1e-10, np.dtype(np.float32): 1e-5}


@dataclass(frozen=True, slots=True)
class Path:
    """An implementation under test: the eager op under ``profile`` (which must select
    ``capsule``), or the spec when ``profile`` is None. ``bit_stable``: a poisoned run must equal
    the clean run bit for bit; otherwise to the sweep tolerance (the spec contracts with BLAS
    ``@`` when the selected operand is finite and with a select-and-add loop when it is not)."""

    profile: str | None
    capsule: str | None
    bit_stable: bool


PATHS = {
    "spec": Path(None, None, bit_stable=False),
    "reference": Path("checked_cpu", "reference.attention", bit_stable=True),
    "libtorch": Path("libtorch_forward_cpu", "libtorch.sdpa_forward", bit_stable=True),
    "aten": Path("fast_cpu", "aten.scaled_dot_product_attention", bit_stable=True),
}


@dataclass(frozen=True, slots=True)
class Case:
    """Operands of one sweep case; ``poisoned`` is the same case with NaN/inf planted, or None."""

    q: Array
    k: Array
    v: Array
    mask: Array | None
    g: Array
    poisoned: tuple[Array, Array, Array] | None  # (k, v, g)

    def allowed(self) -> Array:
        """The mask broadcast to the score shape (*batch, n_q, n_k); all True without a mask."""
        full = (*self.q.shape[:-1], self.k.shape[-2])
        return np.ones(full, dtype=bool) if self.mask is None else np.broadcast_to(self.mask, full)

    def live_rows(self) -> Array:
        """(*batch, n_q): whether the query has at least one allowed key."""
        return np.asarray(self.allowed().any(axis=-1))


def _mask(kind: str, shape: Shape, rng: np.random.Generator) -> Array | None:
    n_q, n_k = shape.n_q, shape.n_k
    if kind == "none":
        return None
    if kind == "causal_upper_left":  # torch is_causal / causal_upper_left: tril(ones(L, S))
        return np.tril(np.ones((n_q, n_k), dtype=bool))
    if kind == "causal_lower_right":  # torch causal_lower_right: tril(ones(L, S), S - L)
        return np.tril(np.ones((n_q, n_k), dtype=bool), k=n_k - n_q)
    # random masks; with two leading axes the head axis broadcasts (size 1)
    lead = (shape.batch[0], 1) if len(shape.batch) == 2 else shape.batch
    mask = rng.random((*lead, n_q, n_k)) < 0.6
    if kind == "random":
        return mask
    mask[rng.random((*lead, n_q)) < 0.3] = False
    mask[(0,) * len(lead) + (0,)] = False  # at least one fully blocked row
    if kind == "blocked_rows":
        return mask
    mask[..., n_k - 1] = False  # the poisoned key: blocked for every query
    return mask


def _make_case(shape: Shape, kind: str, dtype: type, seed: int) -> Case:
    rng = np.random.default_rng(seed)

    def normal(*dims: int) -> Array:
        return rng.standard_normal((*shape.batch, *dims)).astype(dtype)

    q, k, v = normal(shape.n_q, shape.d), normal(shape.n_k, shape.d), normal(shape.n_k, shape.d_v)
    mask = _mask(kind, shape, rng)
    g = normal(shape.n_q, shape.d_v)
    clean = Case(q, k, v, mask, g, None)
    if not kind.startswith("poison"):
        return clean
    bad_k, bad_v, bad_g = (np.nan, np.nan, np.nan) if kind == "poison_nan" else (np.inf, -np.inf, np.inf)
    pk, pv, pg = k.copy(), v.copy(), g.copy()
    pk[..., -1, :] = bad_k  # the last key is blocked for every query (see _mask)
    pv[..., -1, :] = bad_v
    pg[~clean.live_rows()] = bad_g  # cotangent rows of fully blocked queries
    return Case(q, k, v, mask, g, (pk, pv, pg))


# ------------------------------------------------------------------------------ the implementations


@dataclass(frozen=True, slots=True)
class Result:
    out: Array
    dq: Array
    dk: Array
    dv: Array

    def items(self) -> tuple[tuple[str, Array], ...]:
        return (("out", self.out), ("dq", self.dq), ("dk", self.dk), ("dv", self.dv))


Runner = Callable[[Array, Array, Array, Array | None, Array], Result]


def _run_spec(q: Array, k: Array, v: Array, mask: Array | None, g: Array) -> Result:
    out = spec.scaled_dot_product_attention(q, k, v, mask)
    dq, dk, dv = spec.scaled_dot_product_attention_backward(q, k, v, g, mask)
    return Result(out, dq, dk, dv)


def _eager_runner(profile: str, capsule: str) -> Runner:
    def run(q: Array, k: Array, v: Array, mask: Array | None, g: Array) -> Result:
        inputs = [tl.tensor(a, requires_grad=True) for a in (q, k, v)]
        with tl.session(profile) as s:
            out = tl.scaled_dot_product_attention(inputs[0], inputs[1], inputs[2], mask=mask)
            tl.reduce_sum(tl.mul(out, tl.tensor(g))).backward()
        chosen = [a.capsule.name for a in s.selected if a.op is BackendOp.SCALED_DOT_PRODUCT_ATTENTION]
        assert chosen == [capsule], f"{profile} selected {chosen} for attention"
        grads = [t.grad for t in inputs]
        assert all(grad is not None for grad in grads)
        dq, dk, dv = (grad.numpy() for grad in grads if grad is not None)
        return Result(out.numpy(), dq, dk, dv)

    return run


def _runner(path: Path) -> Runner:
    if path.profile is None or path.capsule is None:
        return _run_spec
    return _eager_runner(path.profile, path.capsule)


def _torch_oracle(case: Case) -> Result:
    """Float64 torch SDPA + autograd, with the cotangent of fully blocked rows zeroed."""
    q, k, v = (torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (case.q, case.k, case.v))
    g = np.where(case.live_rows()[..., None], case.g.astype(np.float64), 0.0)
    mask = None if case.mask is None else torch.tensor(case.mask)
    out = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    dq, dk, dv = (grad.numpy() for grad in torch.autograd.grad((out * torch.tensor(g)).sum(), (q, k, v)))
    return Result(out.detach().numpy(), dq, dk, dv)


# ---------------------------------------------------------------------------------------- checks


def _assert_close(label: str, ours: Array, expected: Array, tol: float) -> None:
    scale = float(np.max(np.abs(expected), initial=0.0))
    error = float(np.max(np.abs(ours.astype(np.float64) - expected), initial=0.0))
    assert error <= tol * scale, f"{label}: max error {error:.3e} > {tol:g} * scale {scale:.3e}"


def _check_against_torch(label: str, ours: Result, oracle: Result, case: Case) -> None:
    dtype = case.q.dtype
    tol = TOLERANCE[dtype]
    live = case.live_rows()
    for (name, mine), (_, theirs) in zip(ours.items(), oracle.items(), strict=True):
        assert mine.dtype == dtype, f"{label} {name}: dtype {mine.dtype}, inputs are {dtype}"
        assert mine.shape == theirs.shape, f"{label} {name}: shape {mine.shape} != torch {theirs.shape}"
        if name in ("out", "dq"):  # per query row: torch only where the query has an allowed key
            _assert_close(f"{label} {name}", mine[live], theirs[live], tol)
            assert np.all(mine[~live] == 0.0), f"{label} {name}: fully blocked rows are not exactly 0"
        else:
            _assert_close(f"{label} {name}", mine, theirs, tol)


def _check_poison_is_inert(label: str, path: Path, clean: Result, case: Case) -> None:
    assert case.poisoned is not None
    k, v, g = case.poisoned
    assert not np.all(np.isfinite(k)) and not np.all(np.isfinite(v))
    with np.errstate(invalid="ignore"):  # the poisoned cotangent meets exact zeros in sum(out * g)
        poisoned = _runner(path)(case.q, k, v, case.mask, g)
    for (name, dirty), (_, reference) in zip(poisoned.items(), clean.items(), strict=True):
        assert np.all(np.isfinite(dirty)), f"{label} {name}: NaN/inf at blocked positions leaked"
        if path.bit_stable:
            assert np.array_equal(dirty, reference), f"{label} {name}: poisoned run differs from clean"
        else:
            _assert_close(f"{label} {name} poisoned vs clean", dirty, reference, TOLERANCE[dirty.dtype])


CASES = [
    pytest.param(shape, kind, dtype, id=f"{shape.name}-{kind}-{np.dtype(dtype).name}")
    for shape in SHAPES
    for kind in MASK_KINDS
    for dtype in DTYPES
]


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize(("shape", "kind", "dtype"), CASES)
def test_attention_matches_torch_sdpa(path: str, shape: Shape, kind: str, dtype: type) -> None:
    seed = 1000 * SHAPES.index(shape) + 10 * MASK_KINDS.index(kind) + DTYPES.index(dtype)
    case = _make_case(shape, kind, dtype, seed)
    label = f"{path} [{shape.name}, {kind}, {np.dtype(dtype).name}]"
    ours = _runner(PATHS[path])(case.q, case.k, case.v, case.mask, case.g)
    _check_against_torch(label, ours, _torch_oracle(case), case)
    if case.poisoned is not None:
        _check_poison_is_inert(label, PATHS[path], ours, case)


MIXED_BATCHES = {  # q, k, v shapes whose leading axes differ in rank and broadcast
    "values_only": ((3, 4), (5, 4), (2, 5, 6)),
    "queries_only": ((2, 1, 3, 4), (5, 4), (5, 2)),
    "keys_and_values": ((3, 4), (2, 5, 4), (3, 1, 5, 2)),
}


@pytest.mark.parametrize("path", list(PATHS))
@pytest.mark.parametrize("masked", [False, True], ids=["unmasked", "masked"])
@pytest.mark.parametrize("shapes", list(MIXED_BATCHES))
def test_leading_axes_of_different_rank_broadcast_like_torch(path: str, masked: bool, shapes: str) -> None:
    """Q, K, V whose batch axes differ (only V has one; only Q; K and V of different rank): the
    output has the broadcast batch shape and each gradient is summed back to its operand's shape,
    as torch float64 autograd computes them."""
    rng = np.random.default_rng(sorted(MIXED_BATCHES).index(shapes))
    q, k, v = (rng.standard_normal(shape) for shape in MIXED_BATCHES[shapes])
    mask = None
    if masked:
        mask = rng.random((q.shape[-2], k.shape[-2])) < 0.5
        mask[:, 0] = True  # every query attends a key: torch's value is then the masked softmax
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    g = rng.standard_normal((*batch, q.shape[-2], v.shape[-1]))
    ours = _runner(PATHS[path])(q, k, v, mask, g)
    inputs = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    out = TF.scaled_dot_product_attention(*inputs, attn_mask=None if mask is None else torch.tensor(mask))
    grads = torch.autograd.grad((out * torch.tensor(g)).sum(), inputs)
    oracle = Result(out.detach().numpy(), *(grad.numpy() for grad in grads))
    for (name, mine), (_, theirs) in zip(ours.items(), oracle.items(), strict=True):
        assert mine.shape == theirs.shape, f"{path} {name}: shape {mine.shape} != torch {theirs.shape}"
        _assert_close(f"{path} [{shapes}] {name}", mine, theirs, TOLERANCE[mine.dtype])


def test_sweep_covers_the_required_situations() -> None:
    """The table really contains the situations the issue asks for (guards against edits)."""
    assert any(s.n_q != s.n_k for s in SHAPES) and any(s.d == 1 for s in SHAPES)
    assert any(s.d_v != s.d for s in SHAPES) and any(len(s.batch) == 2 for s in SHAPES)
    assert any(s.n_q == 1 for s in SHAPES) and any(s.n_k == 1 for s in SHAPES)
    blocked = 0
    for shape in SHAPES:
        for kind in ("causal_lower_right", "blocked_rows", "poison_nan", "poison_inf"):
            case = _make_case(shape, kind, np.float64, 0)
            blocked += int(np.count_nonzero(~case.live_rows()))
            if kind.startswith("poison"):
                assert not np.any(case.allowed()[..., -1]), "the poisoned key must be blocked everywhere"
    assert blocked > 0
