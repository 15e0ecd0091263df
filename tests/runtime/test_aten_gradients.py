"""The ``aten`` VJPs (TorchLean's rules evaluated with torch CPU kernels) against two oracles.

This is the VJP evidence of every ``aten.<op>`` capsule (DESIGN.md §1.8). For each of the 40 ops
(the cases of ``aten_cases.py``, checked below to cover ``ATEN_OPS`` exactly):

* the aten VJP equals the reference VJP (numpy left folds, torch-free) at the same inputs, output
  and cotangent: the same cotangent per input (``None`` for masks, absent biases and running
  statistics), reduced to the input's shape, in the input's dtype, to 1e-10 (float64) / 1e-5
  (float32) relative; every cotangent is a fresh C-contiguous array aliasing no input, no ``g``,
  no ``out`` and no other cotangent;
* in float64 the aten VJP also equals torch autograd of the mirrored ``torch`` function
  (a second oracle) at generic inputs — away from ties and NaN, where the reference's
  conventions below are the contract and differ from torch's (e.g. relu's gradient at NaN is 0
  here, torch gives 1) — and torch autograd itself never records anything inside the aten kernels;
* broadcasting binary ops reduce their cotangents back to each input's shape (hypothesis), tie
  conventions (max/min ``g/2``, relu/abs gradient 0 at 0, inclusive clamp bounds, max_pool's first
  maximum) and NaN propagation are the reference's, and bad cotangents are refused with the
  reference's GuardError;
* ``concat``'s VJP (each input's slice of the cotangent, copied), ``slice``'s (a copy into zeros)
  and ``gather``'s where no index repeats are bit for bit the reference's (``concat([a, a])``
  through the tape too: the tape adds the two slices, as torch autograd does); gather's repeated
  indices add their cotangents (hand values, the reference's left fold and torch autograd agree;
  the order of those additions is torch's ``scatter_add_``'s, declared implementation-defined);
* through the TorchLean tape, ``fast_cpu`` gradients equal ``checked_cpu`` gradients, the tape
  applies the aten VJP, and small MLP/CNN/transformer models trained a few steps under the two
  profiles agree, with every covered op computed by its ``aten.*`` capsule.
"""

from __future__ import annotations

import ast
import importlib
import inspect
import json
import math
import re
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from aten_cases import (
    CASES,
    DTYPE_IDS,
    DTYPES,
    IDS,
    MASK,
    TOLERANCE,
    Array,
    Builder,
    Inputs,
    assert_close,
    aten_forward,
    aten_vjp,
    normal,
    reference_forward,
    reference_vjp,
)
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlean as tl
from torchlean import data, optim
from torchlean.autograd.dispatch import linked_kernels, select_linked
from torchlean.autograd.session import run_op
from torchlean.backend import profiles
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.aten import capsules as aten_capsules
from torchlean.backend.providers.aten import kernels as aten
from torchlean.backend.providers.aten import pointwise
from torchlean.backend.providers.aten import spatial as aten_spatial
from torchlean.backend.providers.reference import kernels as reference
from torchlean.backend.providers.reference import spatial
from torchlean.backend.vocabulary import BackendOp, VJPMode
from torchlean.cli import main
from torchlean.models import build_model
from torchlean.trainer import Objective, RunConfig, Trainer

SUBJECT_PROVIDERS = ("aten",)
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

F = torch.nn.functional

COVERED_LABELS = (
    "matmul", "linear", "mse_loss", "relu", "gelu", "add", "sub", "mul", "scale", "abs", "sqrt",
    "clamp", "max", "min", "sigmoid", "tanh", "softplus", "exp", "log", "sin", "cos", "inv",
    "safe_log", "log_softmax", "softmax", "reduce_sum", "reduce_mean", "reshape", "permute",
    "broadcast", "concat", "slice", "gather", "layer_norm", "batch_norm", "conv", "conv_transpose",
    "max_pool", "avg_pool", "scaled_dot_product_attention",
)  # fmt: skip


def test_cases_cover_every_aten_vjp() -> None:
    assert tuple(op.label for op in aten_capsules.ATEN_OPS) == COVERED_LABELS
    assert {op for _, op, _ in CASES} == set(aten_capsules.ATEN_OPS)
    for capsule in aten_capsules.CAPSULES:
        assert capsule.vjp_contract.evidence.name == "tests/runtime/test_aten_gradients.py"
        assert capsule.vjp_contract.provenance[0].symbol == f"def {capsule.op.label}_vjp("
        # ATen's own backward kernel (backend-vjp, the seed's "local VJP computed by a backend
        # kernel"), or the reference rule written in torch ops (torchlean-tape): read off the VJP's
        # own code, which the label and the summary must agree with (review134 F1); a composition
        # whose helper fuses one step (attention's softmax step, review135 F3) is torchlean's rule
        module = importlib.import_module(
            capsule.vjp_contract.provenance[0].path.removesuffix(".py").replace("/", ".")
        )
        (function,) = ast.parse(inspect.getsource(getattr(module, f"{capsule.op.label}_vjp"))).body
        assert isinstance(function, ast.FunctionDef)
        code = ast.unparse(function.body[1:])  # without its docstring (and comments)
        backend = re.search(r"\baten\.\w+_backward(_data)?\b", code) is not None  # an ATen op
        summary = capsule.vjp_contract.summary
        if backend:
            assert capsule.vjp_mode is VJPMode.BACKEND_VJP, capsule.name
            assert capsule.vjp_contract.claim.mode is VJPMode.BACKEND_VJP, capsule.name
            assert summary.startswith(f"ATen's own `{capsule.op.label}` backward kernel computes"), summary
        else:
            assert capsule.vjp_mode is VJPMode.TORCHLEAN_TAPE, capsule.name
            assert capsule.vjp_contract.claim.mode is VJPMode.TORCHLEAN_TAPE, capsule.name
            assert "evaluated with torch CPU kernels" in summary
    backend_ops = {c.op.label for c in aten_capsules.CAPSULES if c.vjp_mode is VJPMode.BACKEND_VJP}
    assert backend_ops == {
        "relu", "log_softmax", "softmax", "layer_norm", "batch_norm", "conv", "conv_transpose", "max_pool",
        "avg_pool",
    }  # fmt: skip


def _differentiable(x: Array) -> bool:
    """A float input gets a gradient; a mask (bool) or an index (int64) does not."""
    return bool(np.issubdtype(x.dtype, np.floating))


def _cotangent(rng: np.random.Generator, out: Array) -> Array:
    return np.array(rng.standard_normal(out.shape), dtype=out.dtype)


def _assert_fresh(grads: tuple[Array | None, ...], *others: Array | None) -> None:
    arrays = [x for x in others if x is not None and x.size]
    for i, grad in enumerate(grads):
        if grad is None:
            continue
        assert isinstance(grad, np.ndarray) and grad.flags.c_contiguous, f"cotangent {i}"
        if grad.size == 0:
            continue
        for other in arrays + [h for j, h in enumerate(grads) if j != i and h is not None and h.size]:
            assert not np.may_share_memory(grad, other), f"cotangent {i} aliases another array"


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_vjp_matches_the_reference_vjp(case_id: str, op: BackendOp, build: Builder, dtype: type) -> None:
    rng = np.random.default_rng(200 + len(case_id))
    inputs, params = build(rng, dtype)
    out = reference_forward(op)(*inputs, **params)
    g = _cotangent(rng, out)
    frozen = [None if x is None else x.copy() for x in (g, out, *inputs)]
    mine = aten_vjp(op)(g, *inputs, out=out, **params)
    theirs = reference_vjp(op)(g, *inputs, out=out, **params)
    assert len(mine) == len(theirs) == len(inputs)
    for position, (got, want, x) in enumerate(zip(mine, theirs, inputs, strict=True)):
        assert (got is None) == (want is None), f"{case_id} input {position}"
        if got is not None and want is not None and x is not None:
            assert got.shape == x.shape and got.dtype == x.dtype
            assert_close(got, want, TOLERANCE[dtype], f"{case_id} cotangent of input {position}")
    _assert_fresh(tuple(mine), g, out, *inputs)
    for x, before in zip((g, out, *inputs), frozen, strict=True):
        if x is not None:
            np.testing.assert_array_equal(x, before)  # nothing is written in place


# ------------------------------------------------------------------------ torch autograd oracle

TorchFn = Callable[..., torch.Tensor]


def _sum(x: torch.Tensor, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    if x.dim() == 0:
        return x.clone()
    return torch.sum(x, dim=axis, keepdim=keepdims) if axis is not None else torch.sum(x)


def _mean(x: torch.Tensor, axis: Any = None, keepdims: bool = False) -> torch.Tensor:
    return torch.mean(x, dim=axis, keepdim=keepdims) if axis is not None else torch.mean(x)


def _batch_norm(x: Any, w: Any, b: Any, rm: Any, rv: Any, *, training: bool, eps: float) -> torch.Tensor:
    stats = (None, None) if training else (rm.detach(), rv.detach())
    return F.batch_norm(x, stats[0], stats[1], w, b, training, 0.0, eps)


def _conv(x: Any, w: Any, b: Any, *, stride: Any, padding: Any, dilation: Any, groups: int) -> torch.Tensor:
    fn = (F.conv1d, F.conv2d, F.conv3d)[x.dim() - 3]
    return fn(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)


def _conv_t(x: Any, w: Any, b: Any, *, output_padding: Any, **params: Any) -> torch.Tensor:
    fn = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[x.dim() - 3]
    return fn(x, w, b, output_padding=output_padding, **params)


def _pool(kind: str) -> TorchFn:
    def run(
        x: torch.Tensor, *, kernel_size: Any, stride: Any = None, padding: Any = 0, **extra: Any
    ) -> torch.Tensor:
        if kind == "max":
            max_fn: Any = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[x.dim() - 3]
            result: torch.Tensor = max_fn(x, kernel_size, stride=stride, padding=padding, **extra)
            return result
        avg_fn: Any = (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[x.dim() - 3]
        averaged: torch.Tensor = avg_fn(
            x, kernel_size, stride=stride, padding=padding, count_include_pad=True
        )
        return averaged

    return run


def _attention(q: Any, k: Any, v: Any, mask: Any, *, scale: float | None = None) -> torch.Tensor:
    assert mask is None
    return F.scaled_dot_product_attention(q, k, v, scale=scale)


TORCH: dict[str, TorchFn] = {
    "matmul": torch.matmul,
    "linear": lambda x, w, b: F.linear(x, w, b),
    "mse_loss": F.mse_loss,
    "relu": torch.relu,
    "gelu": F.gelu,
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "scale": lambda x, *, factor: x * factor,
    "abs": torch.abs,
    "sqrt": torch.sqrt,
    "clamp": lambda x, *, lo, hi: torch.clamp(x, lo, hi),
    "max": torch.maximum,
    "min": torch.minimum,
    "sigmoid": torch.sigmoid,
    "tanh": torch.tanh,
    "softplus": lambda x: F.softplus(x, threshold=1e4),
    "exp": torch.exp,
    "log": torch.log,
    "sin": torch.sin,
    "cos": torch.cos,
    "inv": torch.reciprocal,
    "safe_log": lambda x, *, eps: torch.log(F.softplus(x, threshold=1e4) + eps),
    "log_softmax": lambda x, *, axis: torch.log_softmax(x, axis),
    "softmax": lambda x, *, axis: torch.softmax(x, axis),
    "reduce_sum": _sum,
    "reduce_mean": _mean,
    "reshape": lambda x, *, shape: x.reshape(shape),
    "permute": lambda x, *, perm: x.permute(perm),
    "broadcast": lambda x, *, shape: x.expand(shape),
    "slice": lambda x, *, starts, stops, steps=None: x[
        tuple(slice(a, b, c) for a, b, c in zip(starts, stops, steps or [1] * x.dim(), strict=True))
    ],
    "concat": lambda *xs, axis: torch.cat(xs, axis),
    "gather": lambda x, index, *, axis: torch.gather(x, axis, index),
    "layer_norm": lambda x, w, b, *, normalized_ndim, eps: F.layer_norm(
        x, x.shape[x.dim() - normalized_ndim :], w, b, eps
    ),
    "batch_norm": _batch_norm,
    "conv": _conv,
    "conv_transpose": _conv_t,
    "max_pool": _pool("max"),
    "avg_pool": _pool("avg"),
    "scaled_dot_product_attention": _attention,
}
AUTOGRAD_CASES = [
    c for c in CASES if not (c[1] is BackendOp.SCALED_DOT_PRODUCT_ATTENTION and "unmasked" not in c[0])
]


@pytest.mark.parametrize(("case_id", "op", "build"), AUTOGRAD_CASES, ids=[c[0] for c in AUTOGRAD_CASES])
def test_vjp_matches_torch_autograd_in_float64(case_id: str, op: BackendOp, build: Builder) -> None:
    rng = np.random.default_rng(300 + len(case_id))
    inputs, params = build(rng, np.float64)
    leaves = [
        None if x is None else torch.tensor(x, requires_grad=_differentiable(x) and x.size > 0)
        for x in inputs
    ]
    with torch.enable_grad():
        result = TORCH[op.label](*leaves, **params)
        g = _cotangent(rng, result.detach().numpy())
        differentiable = [t for t in leaves if t is not None and t.requires_grad]
        expected = (
            torch.autograd.grad(result, differentiable, torch.from_numpy(g), allow_unused=True)
            if differentiable
            else ()
        )
    out = aten_forward(op)(*inputs, **params)
    assert_close(out, result.detach().numpy().astype(out.dtype), 1e-10, f"{case_id} value")
    grads = dict(zip((id(t) for t in differentiable), expected, strict=True))
    for position, (got, leaf) in enumerate(
        zip(aten_vjp(op)(g, *inputs, out=out, **params), leaves, strict=True)
    ):
        if leaf is None or not leaf.requires_grad:
            continue
        want = grads[id(leaf)]
        if want is None:  # torch: the input does not influence the output (running statistics)
            assert got is None or not got.any()
            continue
        assert got is not None, f"{case_id} input {position}"
        assert_close(got, want.numpy(), 1e-10, f"{case_id} cotangent of input {position}")


def test_torch_autograd_never_records_inside_the_aten_kernels() -> None:
    saved: list[torch.Tensor] = []

    def pack(t: torch.Tensor) -> torch.Tensor:
        saved.append(t)
        return t

    with torch.enable_grad(), torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        for _, op, build in CASES:
            inputs, params = build(np.random.default_rng(1), np.float32)
            out = aten_forward(op)(*inputs, **params)
            aten_vjp(op)(np.ones_like(out), *inputs, out=out, **params)
    assert saved == []


# ------------------------------------------------------------------------------- conventions


def _broadcast_pair(draw: st.DrawFn) -> tuple[tuple[int, ...], tuple[int, ...]]:
    out = draw(st.lists(st.integers(0, 3), max_size=3))
    shapes = []
    for _ in range(2):
        rank = draw(st.integers(0, len(out)))
        tail = out[len(out) - rank :]
        shapes.append(tuple(s if draw(st.booleans()) else 1 for s in tail))
    return shapes[0], shapes[1]


@settings(max_examples=40, deadline=None)
@given(pair=st.composite(_broadcast_pair)(), label=st.sampled_from(["add", "sub", "mul", "max", "min"]))
def test_binary_vjps_reduce_broadcast_axes_like_the_reference(
    pair: tuple[tuple[int, ...], tuple[int, ...]], label: str
) -> None:
    rng = np.random.default_rng(sum(pair[0]) + 7 * sum(pair[1]))
    a, b = normal(rng, np.float64, *pair[0]), normal(rng, np.float64, *pair[1])
    out = getattr(reference, label)(a, b)
    g = _cotangent(rng, out)
    mine = getattr(pointwise, f"{label}_vjp")(g, a, b, out=out)
    theirs = getattr(reference, f"{label}_vjp")(g, a, b, out=out)
    for got, want, x in zip(mine, theirs, (a, b), strict=True):
        assert got.shape == x.shape
        assert_close(got, want, 1e-12, label)
    _assert_fresh(tuple(mine), g, out, a, b)


def test_tie_conventions_are_the_reference_ones() -> None:
    a = np.array([1.0, 2.0, -0.0, 3.0, np.nan])
    b = np.array([1.0, 1.0, 0.0, 4.0, 1.0])
    g = np.array([2.0, 4.0, 6.0, 8.0, 10.0])
    for label in ("max", "min"):
        out = getattr(reference, label)(a, b)
        mine = getattr(pointwise, f"{label}_vjp")(g, a, b, out=out)
        np.testing.assert_array_equal(mine[0], getattr(reference, f"{label}_vjp")(g, a, b, out=out)[0])
        np.testing.assert_array_equal(mine[1], getattr(reference, f"{label}_vjp")(g, a, b, out=out)[1])
        assert mine[0][0] == mine[1][0] == 1.0 and mine[0][4] == mine[1][4] == 10.0  # tie g/2; NaN: g to both
    x = np.array([-1.0, -0.0, 0.0, 1.0, np.nan, np.inf])
    ones = np.ones_like(x)
    # torch: relu passes g at NaN (threshold_backward: out <= 0 ? 0 : g), abs gives g * sign(NaN) = 0
    np.testing.assert_array_equal(pointwise.relu_vjp(ones, x, out=reference.relu(x))[0], [0, 0, 0, 1, 1, 1])
    np.testing.assert_array_equal(pointwise.abs_vjp(ones, x, out=np.abs(x))[0], [-1, 0, 0, 1, 0, 1])
    clamped = pointwise.clamp_vjp(ones, x, out=reference.clamp(x, lo=0.0, hi=1.0), lo=0.0, hi=1.0)[0]
    np.testing.assert_array_equal(clamped, [0, 1, 1, 1, 0, 0])  # bounds inclusive, NaN gets 0
    pooled = np.array([[[3.0, 3.0, 1.0, 3.0, np.nan, 2.0, np.nan]]])
    out = spatial.max_pool(pooled, kernel_size=3, stride=2)
    mine_pool = aten_spatial.max_pool_vjp(np.ones_like(out), pooled, out=out, kernel_size=3, stride=2)[0]
    np.testing.assert_array_equal(mine_pool, [[[1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 1.0]]])  # first max; last NaN
    np.testing.assert_array_equal(
        mine_pool, spatial.max_pool_vjp(np.ones_like(out), pooled, out=out, kernel_size=3, stride=2)[0]
    )


SPECIAL = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 0.5, -2.5, 30.0, -30.0, 1e-30])
UNARY_PARAMS: dict[str, dict[str, Any]] = {
    "relu": {}, "gelu": {}, "abs": {}, "sqrt": {}, "sigmoid": {}, "tanh": {}, "softplus": {}, "exp": {},
    "log": {}, "sin": {}, "cos": {}, "inv": {}, "scale": {"factor": -3.0}, "clamp": {"lo": -1.0, "hi": 2.0},
    "safe_log": {"eps": 1e-6},
}  # fmt: skip


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("label", list(UNARY_PARAMS))
def test_special_values_in_gradients_like_the_reference(label: str, dtype: type) -> None:
    x: Array = SPECIAL.astype(dtype)
    params = UNARY_PARAMS[label]
    out = getattr(reference, label)(x, **params)
    g = np.ones_like(x)
    g[3] = np.nan  # a NaN cotangent where relu/clamp select it away
    (mine,) = getattr(pointwise, f"{label}_vjp")(g, x, out=out, **params)
    (theirs,) = getattr(reference, f"{label}_vjp")(g, x, out=out, **params)
    assert_close(mine, theirs, 8 * float(np.finfo(dtype).eps), label)


# --------------------------------------------------------------------------- slice and gather


def _same_bits(got: Array | None, want: Array | None) -> None:
    """Equal shape, dtype and bytes: -0.0 is not +0.0 and a NaN keeps its payload."""
    assert got is not None and want is not None
    assert got.shape == want.shape and got.dtype == want.dtype
    assert np.ascontiguousarray(got).tobytes() == np.ascontiguousarray(want).tobytes()


_PAYLOAD_NAN = np.array([0x7FF8_0000_0000_1234], np.uint64).view(np.float64)[0]


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_slice_vjp_is_bit_identical_to_the_reference(dtype: type) -> None:
    """The cotangent is copied, never added: NaN payloads, -0.0 and infinities reach the sliced
    positions as they are, and every other position is +0.0, as the reference's."""
    x = normal(np.random.default_rng(21), dtype, 5, 6)
    bounds = {"starts": (1, 0), "stops": (5, 6), "steps": (2, 4)}
    out = reference.slice(x, **bounds)
    g = np.array([[_PAYLOAD_NAN, -0.0], [np.inf, -np.inf]], dtype=dtype)
    (mine,) = aten.slice_vjp(g, x, out=out, **bounds)
    (theirs,) = reference.slice_vjp(g, x, out=out, **bounds)
    _same_bits(mine, theirs)
    assert mine is not None and np.signbit(mine[1, 4]) and not np.signbit(mine[0, 1])
    want = np.zeros((5, 6), dtype)
    want[1:5:2, 0:6:4] = g
    _same_bits(mine, want)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gather_vjp_without_repeated_indices_is_bit_identical_to_the_reference(dtype: type) -> None:
    rng = np.random.default_rng(22)
    x = normal(rng, dtype, 4, 3)
    index = np.argsort(rng.random((4, 3)), axis=0).astype(np.int64)  # a permutation per column
    out = reference.gather(x, index, axis=0)
    g = normal(rng, dtype, 4, 3)
    g[0, 0], g[1, 1], g[2, 2] = _PAYLOAD_NAN, np.inf, -0.0
    mine = aten.gather_vjp(g, x, index, out=out, axis=0)
    theirs = reference.gather_vjp(g, x, index, out=out, axis=0)
    assert mine[1] is None and theirs[1] is None
    _same_bits(mine[0], theirs[0])


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_gather_vjp_adds_the_cotangents_of_repeated_indices_by_hand(dtype: type) -> None:
    """An embedding's lookup (ids 2, 0, 2, 2 of a 3-row table) and an axis-1 gather: a row or
    entry read k times gets the sum of its k cotangents (integers: exact in any order); a row
    never read gets +0."""
    table = np.zeros((3, 2), dtype)
    index = np.repeat(np.array([2, 0, 2, 2])[:, None], 2, axis=1)
    g = np.array([[1.0, 10.0], [2.0, 20.0], [4.0, 40.0], [8.0, 80.0]], dtype)
    out = aten.gather(table, index, axis=0)
    grad, none = aten.gather_vjp(g, table, index, out=out, axis=0)
    assert none is None and grad is not None and grad.dtype == dtype
    np.testing.assert_array_equal(grad, [[2.0, 20.0], [0.0, 0.0], [13.0, 130.0]])
    assert not np.signbit(grad[1]).any()
    x = np.zeros((2, 4), dtype)
    index = np.array([[3, 3, 3], [0, 1, 0]])
    g = np.array([[1.0, 2.0, 4.0], [16.0, 32.0, 64.0]], dtype)
    grad, _ = aten.gather_vjp(g, x, index, out=aten.gather(x, index, axis=1), axis=1)
    np.testing.assert_array_equal(grad, [[0.0, 0.0, 0.0, 7.0], [80.0, 32.0, 0.0, 0.0]])


def test_gather_vjp_of_repeated_indices_matches_torch_autograd_and_the_reference_left_fold() -> None:
    """Many repeats of non-integer cotangents, where the order of the additions shows in the
    last bits: aten agrees with torch autograd of ``torch.gather`` (float64) and with the
    reference's left fold to rounding, not necessarily bit for bit (implementation-defined)."""
    rng = np.random.default_rng(23)
    x = normal(rng, np.float64, 3, 5)
    index = rng.integers(0, 3, size=(400, 5), dtype=np.int64)
    g = normal(rng, np.float64, 400, 5) * 1e3
    out = aten.gather(x, index, axis=0)
    (mine, _) = aten.gather_vjp(g, x, index, out=out, axis=0)
    (theirs, _) = reference.gather_vjp(g, x, index, out=out, axis=0)
    leaf = torch.tensor(x, requires_grad=True)
    with torch.enable_grad():
        (want,) = torch.autograd.grad(
            torch.gather(leaf, 0, torch.from_numpy(index)), leaf, torch.from_numpy(g)
        )
    assert mine is not None and theirs is not None
    assert_close(mine, want.numpy(), 1e-12, "gather VJP vs torch autograd")
    assert_close(mine, theirs, 1e-12, "gather VJP vs the reference")
    by_hand = np.array([[math.fsum(g[index[:, c] == r, c]) for c in range(5)] for r in range(3)])
    assert_close(mine, by_hand, 1e-12, "gather VJP vs an exactly rounded sum")


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 4), min_size=1, max_size=3), data=st.data())
def test_slice_and_gather_vjps_property_match_the_reference(shape: list[int], data: st.DataObject) -> None:
    rng = np.random.default_rng(sum(shape) * 3 + len(shape))
    x = normal(rng, np.float64, *shape)
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    index_shape = [data.draw(st.integers(0, s)) for s in shape]
    index_shape[axis] = data.draw(st.integers(0, 6)) if shape[axis] else 0
    index = rng.integers(0, max(shape[axis], 1), size=index_shape, dtype=np.int64)
    out = reference.gather(x, index, axis=axis)
    g = _cotangent(rng, out)
    mine = aten.gather_vjp(g, x, index, out=out, axis=axis)
    theirs = reference.gather_vjp(g, x, index, out=out, axis=axis)
    assert mine[1] is None and mine[0] is not None and theirs[0] is not None
    assert_close(mine[0], theirs[0], 1e-12, "gather VJP")
    _assert_fresh(tuple(mine), g, out, x, index)
    starts = [data.draw(st.integers(0, s)) for s in shape]
    stops = [data.draw(st.integers(a, s)) for a, s in zip(starts, shape, strict=True)]
    bounds = {"starts": starts, "stops": stops, "steps": [data.draw(st.integers(1, 3)) for _ in shape]}
    out = reference.slice(x, **bounds)
    g = _cotangent(rng, out)
    _same_bits(aten.slice_vjp(g, x, out=out, **bounds)[0], reference.slice_vjp(g, x, out=out, **bounds)[0])


# ------------------------------------------------------------------------------------- concat


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_concat_vjp_is_bit_identical_to_the_reference(dtype: type) -> None:
    """Each input gets its slice of the cotangent, copied, never added: NaN payloads, -0.0 and
    infinities reach it as they are; a zero-size operand gets a zero-size cotangent."""
    rng = np.random.default_rng(31)
    xs = (normal(rng, dtype, 2, 1), normal(rng, dtype, 2, 0), normal(rng, dtype, 2, 3))
    out = reference.concat(*xs, axis=1)
    g: Array = np.array([[_PAYLOAD_NAN, -0.0, np.inf, 1.5], [-np.inf, 0.0, -0.0, 2.25]], dtype=dtype)
    mine = aten.concat_vjp(g, *xs, out=out, axis=1)
    theirs = reference.concat_vjp(g, *xs, out=out, axis=1)
    assert len(mine) == 3
    for got, want, x in zip(mine, theirs, xs, strict=True):
        _same_bits(got, want)
        assert got is not None and got.shape == x.shape
    _same_bits(mine[0], g[:, :1].copy())
    _same_bits(mine[2], g[:, 1:].copy())
    assert mine[2] is not None and np.signbit(mine[2][0, 0]) and np.signbit(mine[2][1, 1])
    _assert_fresh(tuple(mine), g, out, *xs)


def test_concat_vjp_by_hand() -> None:
    """The slices along axis 0 and along the last axis; one operand gets all of ``g`` (a copy)."""
    a, b = np.zeros((1, 2)), np.zeros((2, 2))
    g = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    da, db = aten.concat_vjp(g, a, b, out=np.zeros((3, 2)), axis=0)
    np.testing.assert_array_equal(da, [[1.0, 2.0]])
    np.testing.assert_array_equal(db, [[3.0, 4.0], [5.0, 6.0]])
    da, db = aten.concat_vjp(g.T.copy(), a.T.copy(), b.T.copy(), out=np.zeros((2, 3)), axis=-1)
    np.testing.assert_array_equal(da, [[1.0], [2.0]])
    np.testing.assert_array_equal(db, [[3.0, 5.0], [4.0, 6.0]])
    (only,) = aten.concat_vjp(g, g, out=g.copy(), axis=0)
    assert only is not None and not np.may_share_memory(only, g)
    np.testing.assert_array_equal(only, g)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("profile", ["fast_cpu", "checked_cpu"])
def test_concat_of_one_tensor_twice_through_the_tape(profile: str, dtype: type) -> None:
    """``tl.concat([a, a, b])``: a's gradient is the sum of its two slices of the cotangent (the
    tape adds them; one addition, exactly rounded in any order), b's its own slice: bit for bit
    the hand sums and torch autograd of ``torch.cat`` in the same dtype (float64 and float32), the
    same under fast_cpu (aten.concat) as under checked_cpu (reference.concat)."""
    rng = np.random.default_rng(32)
    a_data, b_data = normal(rng, dtype, 2, 3), normal(rng, dtype, 1, 3)
    g = normal(rng, dtype, 5, 3)
    a, b = tl.tensor(a_data, requires_grad=True), tl.tensor(b_data, requires_grad=True)
    with tl.session(profile) as s:
        out = tl.concat([a, a, b], 0)
    assert [k.capsule.name for k in s.selected] == [
        "aten.concat" if profile == "fast_cpu" else "reference.concat"
    ]
    out.backward(g)
    assert a.grad is not None and b.grad is not None
    _same_bits(np.array(out.numpy()), np.concatenate([a_data, a_data, b_data]))
    ta, tb = torch.tensor(a_data, requires_grad=True), torch.tensor(b_data, requires_grad=True)
    with torch.enable_grad():
        want_a, want_b = torch.autograd.grad(torch.cat([ta, ta, tb], 0), [ta, tb], torch.from_numpy(g))
    _same_bits(np.array(a.grad.numpy()), (g[:2] + g[2:4]).astype(dtype))
    _same_bits(np.array(b.grad.numpy()), g[4:].copy())
    _same_bits(np.array(a.grad.numpy()), want_a.numpy())  # torch autograd in the same dtype
    _same_bits(np.array(b.grad.numpy()), want_b.numpy())


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_concat_tape_gradients_fast_cpu_bit_identical_to_checked_cpu(dtype: type) -> None:
    """Values and gradients of a small graph around concat (a zero-size operand included) are the
    same bits under fast_cpu as under checked_cpu: concat sums nothing, and the rest is relu."""
    rng = np.random.default_rng(33)
    datas = [normal(rng, dtype, 3, 2), normal(rng, dtype, 3, 0), normal(rng, dtype, 3, 4)]
    g = normal(rng, dtype, 3, 6)
    results = []
    for profile in ("fast_cpu", "checked_cpu"):
        leaves = [tl.tensor(x, requires_grad=True) for x in datas]
        with tl.session(profile) as s:
            out = tl.relu(tl.concat(leaves, -1))
        out.backward(g)
        names = {k.capsule.name for k in s.selected}
        provider = "aten" if profile == "fast_cpu" else "reference"
        assert names == {f"{provider}.concat", f"{provider}.relu"}
        grads = []
        for leaf in leaves:
            assert leaf.grad is not None
            grads.append(np.array(leaf.grad.numpy()))
        results.append((np.array(out.numpy()), grads))
    (fast_out, fast_grads), (checked_out, checked_grads) = results
    _same_bits(fast_out, checked_out)
    for mine, theirs, x in zip(fast_grads, checked_grads, datas, strict=True):
        _same_bits(mine, theirs)
        assert mine.shape == x.shape


@settings(max_examples=40, deadline=None)
@given(shape=st.lists(st.integers(0, 3), min_size=1, max_size=3), data=st.data())
def test_concat_vjp_property_bit_identical_to_the_reference(shape: list[int], data: st.DataObject) -> None:
    rng = np.random.default_rng(sum(shape) * 5 + len(shape))
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    dtype = data.draw(st.sampled_from(DTYPES))
    xs: list[Array] = []
    for _ in range(data.draw(st.integers(1, 4))):
        own = list(shape)
        own[axis] = data.draw(st.integers(0, 3))
        xs.append(normal(rng, dtype, *own))
    out = reference.concat(*xs, axis=axis)
    g = _cotangent(rng, out)
    mine = aten.concat_vjp(g, *xs, out=out, axis=axis)
    theirs = reference.concat_vjp(g, *xs, out=out, axis=axis)
    assert len(mine) == len(theirs) == len(xs)
    for got, want in zip(mine, theirs, strict=True):
        _same_bits(got, want)
    _assert_fresh(tuple(mine), g, out, *xs)


# ------------------------------------------------------------------------------------ guards


@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_bad_cotangents_are_refused_like_the_reference(case_id: str, op: BackendOp, build: Builder) -> None:
    inputs, params = build(np.random.default_rng(5), np.float64)
    out = reference_forward(op)(*inputs, **params)
    for bad in (np.zeros((*out.shape, 2)), out.astype(np.float32), list(out.ravel())):
        with pytest.raises(GuardError) as refused:
            reference_vjp(op)(bad, *inputs, out=out, **params)
        with pytest.raises(GuardError) as also_refused:
            aten_vjp(op)(bad, *inputs, out=out, **params)
        assert str(also_refused.value) == str(refused.value)


_OUT_UNREAD = {"conv", "conv_transpose", "max_pool", "avg_pool", "layer_norm", "batch_norm"}
"""The ops whose VJPs (both providers') recompute from the inputs and never read the saved output."""


@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_a_bad_saved_output_is_refused_like_the_reference(
    case_id: str, op: BackendOp, build: Builder
) -> None:
    """review148 F1: the saved output a VJP takes (``out=``) is checked for the output's shape and
    dtype in both providers; without the check a wrong ``out`` broadcast into the gradient (an
    ``exp`` VJP given ``out=[5.0]`` returned all 5s). The spatial VJPs do not read it: a wrong one
    changes no bit of their gradients."""
    inputs, params = build(np.random.default_rng(5), np.float64)
    out = reference_forward(op)(*inputs, **params)
    g = np.random.default_rng(6).standard_normal(out.shape)
    for bad in (np.zeros((*out.shape, 2)), out.astype(np.float32), np.full((1,) * max(out.ndim, 1), 5.0)):
        if bad.shape == out.shape and bad.dtype == out.dtype:
            continue  # a one-element output: the third is as good as the output
        if op.label in _OUT_UNREAD:
            for vjp in (reference_vjp(op), aten_vjp(op)):
                for got, want in zip(vjp(g, *inputs, out=bad, **params), vjp(g, *inputs, out=out, **params),
                                     strict=True):
                    if got is not None or want is not None:
                        _same_bits(got, want)
            continue
        expected = (f"{op.label}: saved output out has shape {bad.shape} and dtype {bad.dtype}; accepted: "
                    f"the output's shape {out.shape} and dtype {out.dtype}")
        with pytest.raises(GuardError) as refused:
            reference_vjp(op)(g, *inputs, out=bad, **params)
        assert str(refused.value).startswith(expected), refused.value
        with pytest.raises(GuardError) as also_refused:
            aten_vjp(op)(g, *inputs, out=bad, **params)
        assert str(also_refused.value) == str(refused.value)


def _resolve(dotted: str) -> tuple[Any, str]:
    module, _, name = dotted.rpartition(".")
    return importlib.import_module(module), name


@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_named_guards_run_on_the_vjp_path(
    case_id: str, op: BackendOp, build: Builder, monkeypatch: pytest.MonkeyPatch
) -> None:
    capsule = next(c for c in aten_capsules.CAPSULES if c.op is op)
    inputs, params = build(np.random.default_rng(0), np.float64)
    linked = select_linked(op, capsule, linked_kernels(op))
    out = linked.forward(capsule, inputs, params)
    called: list[str] = []
    for descriptor in (capsule.shape_contract, capsule.layout_contract):
        name = descriptor.evidence.name
        assert name is not None
        module, function = _resolve(name)
        original = getattr(module, function)

        def spy(*args: Any, _original: Any = original, _name: str = name, **kwargs: Any) -> Any:
            called.append(_name)
            return _original(*args, **kwargs)

        monkeypatch.setattr(module, function, spy)
    assert linked.vjp is not None
    linked.vjp(capsule, np.ones_like(out), inputs, out, params)
    assert called[0] == capsule.shape_contract.evidence.name
    assert set(called) == {capsule.shape_contract.evidence.name, capsule.layout_contract.evidence.name}


# ---------------------------------------------------------------------------------- the tape


def _tape_gradients(
    profile: str, op: BackendOp, inputs: Inputs, params: dict[str, Any], seed: int
) -> tuple[Array, list[Array | None], str]:
    tensors = [None if x is None else tl.tensor(x, requires_grad=_differentiable(x)) for x in inputs]
    with tl.session(profile) as s:
        out = run_op(op, tensors, params)
        cotangent = np.asarray(np.random.default_rng(seed).standard_normal(out.shape))
        out.backward(cotangent.astype(out.dtype))
    (selected,) = [k.capsule.name for k in s.selected]
    grads = [
        None if t is None or not t.requires_grad or t.grad is None else np.array(t.grad.numpy())
        for t in tensors
    ]
    return np.array(out.numpy()), grads, selected


@pytest.mark.parametrize(("case_id", "op", "build"), CASES, ids=IDS)
def test_tape_gradients_fast_cpu_equal_checked_cpu(case_id: str, op: BackendOp, build: Builder) -> None:
    inputs, params = build(np.random.default_rng(100 + len(case_id)), np.float64)
    out_fast, grads_fast, fast = _tape_gradients("fast_cpu", op, inputs, params, 7)
    out_ref, grads_ref, checked = _tape_gradients("checked_cpu", op, inputs, params, 7)
    assert fast == f"aten.{op.label}"
    assert checked.startswith("reference.")
    assert_close(out_fast, out_ref, 1e-10, f"{case_id} value")
    for position, (mine, theirs) in enumerate(zip(grads_fast, grads_ref, strict=True)):
        assert (mine is None) == (theirs is None), f"{case_id} input {position}"
        if mine is not None and theirs is not None:
            assert_close(mine, theirs, 1e-10, f"{case_id} gradient of input {position}")


def test_the_tape_applies_the_aten_vjp(monkeypatch: pytest.MonkeyPatch) -> None:
    def refuse(*args: Any, **kwargs: Any) -> Any:
        raise AssertionError("the reference VJP ran under fast_cpu")

    monkeypatch.setattr(reference, "matmul_vjp", refuse)
    rng = np.random.default_rng(4)
    a_data, b_data, g = (
        normal(rng, np.float32, 4, 3),
        normal(rng, np.float32, 3, 5),
        normal(rng, np.float32, 4, 5),
    )
    a = tl.tensor(a_data, requires_grad=True)
    b = tl.tensor(b_data, requires_grad=True)
    with tl.session("fast_cpu") as s:
        out = tl.matmul(a, b)
    assert [k.capsule.name for k in s.selected] == ["aten.matmul"]
    out.backward(g)
    da, db = aten.matmul_vjp(g, a_data, b_data, out=np.array(out.numpy()))
    assert a.grad is not None and b.grad is not None and a.grad.dtype == np.float32
    np.testing.assert_array_equal(a.grad.numpy(), da)
    np.testing.assert_array_equal(b.grad.numpy(), db)


def test_attention_fully_blocked_rows_have_zero_gradients() -> None:
    rng = np.random.default_rng(11)
    q, k, v = (
        normal(rng, np.float64, 2, 3, 4),
        normal(rng, np.float64, 2, 5, 4),
        normal(rng, np.float64, 2, 5, 6),
    )
    inputs = [tl.tensor(x, requires_grad=True) for x in (q, k, v)]
    with tl.session("fast_cpu"):
        out = tl.scaled_dot_product_attention(inputs[0], inputs[1], inputs[2], mask=MASK)
    assert np.all(out.numpy()[:, 1] == 0.0)
    out.backward(np.ones(out.shape))
    assert inputs[0].grad is not None and np.all(inputs[0].grad.numpy()[:, 1] == 0.0)
    blocked = np.zeros((3, 5), dtype=bool)
    grads = aten.scaled_dot_product_attention_vjp(
        np.ones((2, 3, 6)), q, k, v, blocked, out=np.zeros((2, 3, 6))
    )
    for grad in grads[:3]:
        assert grad is not None and np.all(grad == 0.0)
    assert grads[3] is None


def test_attention_non_finite_values_blocked_everywhere_never_reach_a_gradient() -> None:
    rng = np.random.default_rng(13)
    q, k, v = normal(rng, np.float64, 3, 4), normal(rng, np.float64, 5, 4), normal(rng, np.float64, 5, 6)
    mask = MASK.copy()
    mask[:, [1, 4]] = False  # keys 1 and 4 are blocked for every query
    k[1, 0], v[1, 3], v[4, 2], k[4, 1] = np.nan, np.nan, np.inf, -np.inf
    clean_k, clean_v = k.copy(), v.copy()
    clean_k[[1, 4]], clean_v[[1, 4]] = 0.0, 0.0
    g = normal(rng, np.float64, 3, 6)
    out = aten.scaled_dot_product_attention(q, k, v, mask)
    mine = aten.scaled_dot_product_attention_vjp(g, q, k, v, mask, out=out)
    clean = reference.scaled_dot_product_attention_vjp(g, q, clean_k, clean_v, mask, out=out)
    for got, want in zip(mine[:3], clean[:3], strict=True):
        assert got is not None and want is not None and np.all(np.isfinite(got))
        assert_close(got, want, 1e-10, "attention gradient")
    for got in mine[1:3]:
        assert got is not None and np.all(got[[1, 4]] == 0.0)


def test_attention_non_finite_value_attended_by_one_query_matches_the_reference() -> None:
    rng = np.random.default_rng(14)
    q, k, v = normal(rng, np.float64, 3, 4), normal(rng, np.float64, 5, 4), normal(rng, np.float64, 5, 6)
    q[1, 2] = np.nan  # query 1 is fully blocked: its NaN must reach nothing
    v[1, 3] = np.inf  # key 1 is allowed only for query 2
    g = normal(rng, np.float64, 3, 6)
    out = reference.scaled_dot_product_attention(q, k, v, MASK)
    mine = aten.scaled_dot_product_attention_vjp(g, q, k, v, MASK, out=out)
    theirs = reference.scaled_dot_product_attention_vjp(g, q, k, v, MASK, out=out)
    for got, want in zip(mine[:3], theirs[:3], strict=True):
        assert got is not None and want is not None
        assert_close(got, want, 1e-10, "attention gradient with non-finite entries")


# ------------------------------------------------------------------------------- end to end


def _train_steps(
    model: str, profile: str, steps: int
) -> tuple[list[float], list[Array], set[tuple[str, str]]]:
    dataset = data.load("digits", seed=0, dtype="float64")
    layer, input_shape = build_model(model, dataset.n_features, dataset.n_classes, hidden=16)
    config = RunConfig(optimizer=optim.by_name("adam", 0.01), dtype="float64").with_profile(
        profiles.get(profile)
    )
    trainer: Trainer[Any, Any] = Trainer(
        layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=input_shape
    )
    losses = [
        trainer.step(dataset.x_train[i * 16 : (i + 1) * 16], dataset.y_train[i * 16 : (i + 1) * 16])
        for i in range(steps)
    ]
    selected = {(k.capsule.op.label, k.capsule.name) for k in trainer.selected}
    return losses, [np.array(p) for p in trainer.model.parameters], selected


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_small_models_train_alike_under_fast_cpu_and_checked_cpu(model: str) -> None:
    fast_losses, fast_params, fast_selected = _train_steps(model, "fast_cpu", 3)
    checked_losses, checked_params, checked_selected = _train_steps(model, "checked_cpu", 3)
    np.testing.assert_allclose(fast_losses, checked_losses, rtol=1e-9)
    for mine, theirs in zip(fast_params, checked_params, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=1e-7, atol=1e-9)
    assert {op for op, _ in fast_selected} == {op for op, _ in checked_selected}
    for label, name in fast_selected:
        assert name == (f"aten.{label}" if label in COVERED_LABELS else f"reference.{label}"), name
    assert all(name.startswith("reference.") for _, name in checked_selected)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_train_fast_cpu_end_to_end(
    execution: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    losses: dict[str, list[float]] = {}
    for profile in ("fast_cpu", "checked_cpu"):
        record_path = tmp_path / f"{profile}.json"
        argv = ["train", "--profile", profile, "--execution", execution, "--epochs", "1"]
        argv += ["--dtype", "float64", "--report-json", str(record_path)]
        assert main(argv) == 0
        text = capsys.readouterr().out
        record = json.loads(record_path.read_text())
        losses[profile] = record["losses"]
        if profile == "fast_cpu":
            assert record["test_accuracy"] > 0.8
            assert all(c["provider"] == "aten" for c in record["capsules"] if c["op"] in COVERED_LABELS)
            aten_rows = [c for c in record["capsules"] if c["provider"] == "aten"]
            assert {c["op"] for c in aten_rows} >= {"linear", "relu", "log_softmax", "reduce_sum"}
            unreduced = {"relu", "scale", "reshape", "permute"}  # no sum in their forward or VJP
            assert all(
                c["reduction"] == ("n/a" if c["op"] in unreduced else "implementation-defined")
                for c in aten_rows
            )
            assert all(c["capsule"] == f"aten.{c['op']}" for c in aten_rows)
            assert (
                "  linear: aten.linear provider=aten trust=checked vjp=torchlean-tape "
                "reduction=implementation-defined"
            ) in text.splitlines()
    np.testing.assert_allclose(losses["fast_cpu"], losses["checked_cpu"], rtol=1e-9)


def test_batch_norm_calls_the_aten_op_so_the_eps_rule_is_the_guards(monkeypatch: pytest.MonkeyPatch) -> None:
    """torch 2.11's ``torch.nn.functional.batch_norm`` refuses eps = 0 in evaluation too (seen on the
    lent GPU machine), which leaked its ValueError through ``fast_cpu``; the provider calls the ATen
    op, so a functional form that refuses everything changes nothing. Oracle: by hand,
    (1 - 0) / sqrt(4) = 0.5."""
    from torchlean.backend.providers.aten import spatial

    def refuses(*args: object, **kwargs: object) -> None:
        raise ValueError("batch_norm eps must be positive, but got 0.0")

    monkeypatch.setattr(torch.nn.functional, "batch_norm", refuses)
    x = np.ones((4, 3, 2))
    out = spatial.batch_norm(x, None, None, np.zeros(3), np.full(3, 4.0), training=False, eps=0.0)
    assert out.tolist() == np.full((4, 3, 2), 0.5).tolist()
