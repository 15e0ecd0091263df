"""Rows whose ALLOWED scores are all -inf, on the native CUDA provider through the host emulation
(csrc/ compiled for the CPU; torchlean's own kernels run by the CUDA emulator).

The reference provider and ``torchlean.spec`` normalise such a row 0 by 0, as ``torch.softmax`` of
an all -inf row: NaN output and NaN gradients (dq of the row, dk and dv of the keys it may
attend). A row with NO allowed key stays exactly zero, in value and gradients; a row where only
SOME allowed scores are -inf is an ordinary softmax that gives them weight 0. The scores are -inf
either because a key holds -inf or because finite inputs overflow (q = [[1e200]], k = [[-1e200]]
in float64; 1e30 in float32).

``native_cuda.direct_attention`` used to treat an all -inf row as fully blocked (output 0,
logsumexp -inf, zero gradients); it now tracks per row whether any allowed key was seen,
separately from the online softmax's running max, so the row is NaN (logsumexp NaN, and NaN
gradients from it), while a key tile whose allowed scores are all -inf, seen before a finite
one, adds only its products ``0 * v`` (NaN where v is not finite, as the reference's fold:
review178 F1). ``torchlean.composed_attention`` and ``native_cuda.hard_masked_softmax``
already gave the reference's values; they are pinned here too, with the native softmax kernel's
row-length regimes (one warp per row: fewer entries than lanes, exactly one per lane, several per
lane) and the attention kernel's key tile boundary (``kAttnBc`` keys per tile).

A score that overflows at a BLOCKED position (+inf from finite q and k) is selected away: it
never reaches an output or a gradient.

Oracles: hand-computed values; the reference kernels (``checked_cpu``); torch float64 — SDPA with
a boolean mask for rows that are only partly -inf (torch SDPA gives 0 on an all -inf row, which
is not TorchLean's convention), and ``where(mask, softmax(where(mask, x, -inf)), 0)`` with
autograd for the hard-masked softmax (torch.softmax of an all -inf row is NaN, as ours).
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from numpy.testing import assert_array_equal

import torchlean as tl
from torchlean.backend import profiles
from torchlean.backend.policy import ProviderPreference
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.providers import attention_kernels
from torchlean.backend.providers.native_cuda import kernels, parity
from torchlean.backend.providers.reference import kernels as ref
from torchlean.backend.vocabulary import Provider

Array = np.ndarray[Any, Any]
DTYPES = [torch.float32, torch.float64]
DTYPE_IDS = ["float32", "float64"]
TOLERANCE = {torch.float32: 1e-5, torch.float64: 1e-10}
BIG = {torch.float32: 1e30, torch.float64: 1e200}
"""A magnitude whose square overflows the dtype while three times it does not."""
TILE = parity.ATTENTION_KEY_TILE
DIRECT = "native_cuda.direct_attention"
COMPOSED = "torchlean.composed_attention"
IMPLEMENTATIONS = [DIRECT, COMPOSED]


def _np(t: torch.Tensor | None) -> Array:
    assert t is not None
    return t.detach().to(torch.float64).numpy()


def _rounded(a: Array, dtype: torch.dtype) -> Array:
    """``a`` rounded to ``dtype`` and held in float64: the oracles see the values the kernels do."""
    return torch.tensor(a, dtype=dtype).to(torch.float64).numpy()


def _assert_close(got: Array, want: Array, tolerance: float, what: str) -> None:
    """Same shape, NaN exactly where ``want`` has NaN, the same infinities, and finite entries
    within ``tolerance`` relative to ``max(max|want|, 1)`` (the parity cases' error)."""
    assert got.shape == want.shape, f"{what}: shape {got.shape}, expected {want.shape}"
    assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{what}: NaN positions")
    infinite = np.isinf(want)
    assert_array_equal(got[infinite], want[infinite], err_msg=f"{what}: infinities")
    finite = np.isfinite(want)
    assert np.isfinite(got[finite]).all(), f"{what}: non-finite where the oracle is finite"
    if finite.any():
        scale = max(float(np.abs(want[finite]).max()), 1.0)
        error = float(np.abs(got[finite] - want[finite]).max()) / scale
        assert error <= tolerance, f"{what}: error {error:.3g} > {tolerance:g}"


def _attention(
    implementation: str,
    q: Array,
    k: Array,
    v: Array,
    mask: Array,
    g: Array,
    dtype: torch.dtype,
    **params: Any,
) -> tuple[Array, list[Array]]:
    """``implementation``'s output and ``(dq, dk, dv)`` in ``dtype`` (reference VJP convention)."""
    q_t, k_t, v_t = (torch.tensor(a, dtype=dtype) for a in (q, k, v))
    m_t = torch.from_numpy(np.ascontiguousarray(mask))
    forward: Callable[..., torch.Tensor]
    vjp: Callable[..., Any]
    if implementation == DIRECT:
        forward, vjp = kernels.direct_attention, kernels.direct_attention_vjp
    else:
        forward, vjp = attention_kernels.composed_attention, attention_kernels.composed_attention_vjp
    out = forward(q_t, k_t, v_t, m_t, **params)
    grads = vjp(torch.tensor(g, dtype=dtype), q_t, k_t, v_t, m_t, out=out, **params)
    assert len(grads) == 4 and grads[3] is None
    return _np(out), [_np(d) for d in grads[:3]]


def _reference(
    q: Array, k: Array, v: Array, mask: Array, g: Array, **params: Any
) -> tuple[Array, list[Array]]:
    out = ref.scaled_dot_product_attention(q, k, v, mask, **params)
    grads = ref.scaled_dot_product_attention_vjp(g, q, k, v, mask, out=out, **params)
    return out, [np.asarray(d) for d in grads[:3]]


# ------------------------------------------------------------------------------- hand values


def _hand_problem(dtype: torch.dtype) -> tuple[Array, Array, Array, Array]:
    """One head of five queries, three keys, d = 1, scale 1, with B = BIG[dtype] (B * B
    overflows):

    * query 0 = B may attend key 0 = -B only: its one allowed score overflows to -inf, so the row
      is NaN (the brief's q = [[1e200]], k = [[-1e200], [3]], mask [[True, False]]);
    * query 1 = B attends keys 0 and 1: scores [-inf, 3B], weights [0, 1], output v1;
    * query 2 is fully blocked: zeros;
    * query 3 = B attends key 1 only: output v1;
    * query 4 = 0 attends key 2 = B only: output v2 (key 2 is used, so the composed capsule's score
      matmul computes q_i * B = +inf for queries 0, 1 and 3, where key 2 is BLOCKED).
    """
    b = BIG[dtype]
    q = np.array([[b], [b], [b], [b], [0.0]])
    k = np.array([[-b], [3.0], [b]])
    v = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])
    mask = np.array(
        [
            [True, False, False],
            [True, True, False],
            [False, False, False],
            [False, True, False],
            [False, False, True],
        ]
    )
    return q[None], k[None], v[None], mask[None]


NAN = np.nan
HAND_OUT = np.array([[[NAN, NAN], [3.0, 4.0], [0.0, 0.0], [3.0, 4.0], [5.0, 6.0]]])
# g = ones: dS = 0 on rows 1, 3, 4 (weight 1 on one key: dp - delta = 0), NaN at row 0's key 0
HAND_DQ = np.array([[[NAN], [0.0], [0.0], [0.0], [0.0]]])
HAND_DK = np.array([[[NAN], [0.0], [0.0]]])
HAND_DV = np.array([[[NAN, NAN], [2.0, 2.0], [1.0, 1.0]]])
HAND_G = np.ones((1, 5, 2))


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_reference_hand_values(dtype: torch.dtype) -> None:
    """The oracle itself: the reference kernels in the dtype give the hand values."""
    q, k, v, mask = (_rounded(a, dtype) if a.dtype != np.bool_ else a for a in _hand_problem(dtype))
    numpy_dtype = np.float32 if dtype == torch.float32 else np.float64
    q, k, v = (a.astype(numpy_dtype) for a in (q, k, v))
    out, grads = _reference(q, k, v, mask, HAND_G.astype(numpy_dtype), scale=1.0)
    assert_array_equal(out, HAND_OUT)
    for got, want in zip(grads, (HAND_DQ, HAND_DK, HAND_DV), strict=True):
        assert_array_equal(got, want)


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_hand_values_emulated(dtype: torch.dtype, implementation: str, emulation: ModuleType) -> None:
    q, k, v, mask = _hand_problem(dtype)
    out, (dq, dk, dv) = _attention(implementation, q, k, v, mask, HAND_G, dtype, scale=1.0)
    assert_array_equal(out, HAND_OUT)  # NaN row 0 (was 0 in the direct kernel), zeros on row 2
    assert_array_equal(dq, HAND_DQ)
    assert_array_equal(dk, HAND_DK)
    assert_array_equal(dv, HAND_DV)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_direct_attention_logsumexp_is_nan_on_an_all_minus_inf_row_emulated(
    dtype: torch.dtype, emulation: ModuleType
) -> None:
    """The saved logsumexp: NaN on the all -inf row (so the backward propagates NaN), -inf on the
    fully blocked row (the backward reads nothing of it), m + log l elsewhere."""
    q, k, v, mask = _hand_problem(dtype)
    out, lse = kernels.direct_attention_forward(
        torch.tensor(q, dtype=dtype),
        torch.tensor(k, dtype=dtype),
        torch.tensor(v, dtype=dtype),
        torch.from_numpy(mask),
        scale=1.0,
    )
    three_b = (torch.tensor(BIG[dtype], dtype=dtype) * 3).item()  # the score as the kernel rounds it
    assert_array_equal(_np(lse), [[NAN, three_b, -np.inf, three_b, 0.0]])
    assert_array_equal(_np(out), HAND_OUT)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_a_minus_inf_key_gives_the_same_rows_emulated(dtype: torch.dtype, emulation: ModuleType) -> None:
    """A key holding -inf instead of an overflowing product: the same NaN row, for both capsules
    and the reference."""
    q = np.array([[[1.0], [1.0], [2.0]]])
    k = np.array([[[-np.inf], [3.0]]])
    v = np.array([[[1.0, 2.0], [3.0, 4.0]]])
    mask = np.array([[[True, False], [True, True], [False, False]]])
    g = np.array([[[1.0, -1.0], [0.5, 2.0], [np.nan, np.inf]]])  # the blocked row's g is never read
    want_out, want_grads = _reference(q, k, v, mask, g, scale=1.0)
    assert_array_equal(want_out, [[[NAN, NAN], [3.0, 4.0], [0.0, 0.0]]])
    for implementation in IMPLEMENTATIONS:
        out, grads = _attention(implementation, q, k, v, mask, g, dtype, scale=1.0)
        assert_array_equal(out, want_out)
        for got, want in zip(grads, want_grads, strict=True):
            assert_array_equal(got, want)
        assert_array_equal(grads[0][0, 2], [0.0])  # the fully blocked row: zero gradient
        assert np.isnan(grads[0][0, 0]).all() and np.isnan(grads[2][0, 0]).all()


@pytest.mark.parametrize("minus_inf_tile_first", [True, False], ids=["tile-first", "tile-second"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_an_allowed_minus_inf_key_with_an_infinite_value_reaches_the_row_in_either_tile_emulated(
    dtype: torch.dtype, minus_inf_tile_first: bool, emulation: ModuleType
) -> None:
    """review178 F1: a key tile whose allowed scores were all -inf was skipped whole while the
    row's running max was -inf, so an allowed key of weight exactly 0 with v = inf never added
    0 * inf = NaN: the direct forward was finite when that tile came first, NaN when it came
    second (and its backward NaN either way). The reference folds 0 * v for every allowed key."""
    nk, d, dv = 2 * TILE, 4, 3
    r = np.random.default_rng(0)
    q = np.zeros((1, 1, d))
    q[..., 0] = 1.0
    k, v = r.standard_normal((1, nk, d)), r.standard_normal((1, nk, dv))
    tile = slice(0, TILE) if minus_inf_tile_first else slice(TILE, nk)
    k[0, tile, :] = 0.0
    k[0, tile, 0] = -np.inf  # allowed scores exactly -inf across one key tile
    v[0, tile.start + 3, :] = np.inf
    mask = np.ones((1, 1, nk), dtype=bool)
    g = np.ones((1, 1, dv))
    want_out, want_grads = _reference(q, k, v, mask, g)
    assert np.isnan(want_out).all()  # by hand: 0 * inf is NaN in the value fold
    for implementation in IMPLEMENTATIONS:
        out, grads = _attention(implementation, q, k, v, mask, g, dtype)
        assert np.isnan(out).all(), implementation
        assert np.isnan(grads[0]).all() == np.isnan(want_grads[0]).all(), implementation


# ----------------------------------------------------- random rows across the key tile boundary

KEY_COUNTS = [5, 31, 32, 33, 40, 64, 65, 100]


def _mixed_rows(r: np.random.Generator, nk: int, dtype: torch.dtype) -> tuple[Array, Array, Array, Array]:
    """q (2, 8, 4), k (2, nk, 4), v (2, nk, 3) and a mask, in three kinds of keys: -inf keys
    ``[-inf, 0, 0, 0]`` (the whole first key tile when nk > TILE + 2, else all but the last three
    keys), finite keys ``[0, r, r, r]`` and one huge key H = ``[max / 64, 0, 0, 0]`` (the last).
    Every query but 4 has ``q[0] >= 65``, so its -inf key scores are -inf and its H score
    overflows to +inf, and H is blocked for it; query 4 has ``q[0] = 0`` (H scores 0, the -inf
    keys NaN) and attends H and finite keys only.

    Rows: 0 fully blocked; 1 some -inf keys only (NaN); 2 every -inf key and one finite key of a
    later tile (finite); 3 finite keys only; 4 H and finite keys; 5 one -inf key (NaN); 6 a random
    mix with a finite key; 7 every key but H.
    """
    batch, nq, d, dv = 2, 8, 4, 3
    neg = np.arange(nk) < min(TILE, nk - 3)
    huge = np.arange(nk) == nk - 1
    fin = ~neg & ~huge
    k = np.zeros((batch, nk, d))
    k[:, neg, 0] = -np.inf
    k[:, fin, 1:] = r.standard_normal((batch, int(fin.sum()), d - 1))
    k[:, huge, 0] = float(torch.finfo(dtype).max) / 64
    q = r.standard_normal((batch, nq, d))
    q[..., 0] = np.abs(q[..., 0]) + 65.0
    q[:, 4, 0] = 0.0
    v = r.standard_normal((batch, nk, dv))

    def some(allowed: Array) -> Array:
        """A random non-empty subset of ``allowed`` (bool over keys), per batch entry."""
        picked = (r.random((batch, nk)) < 0.5) & allowed
        first = int(np.flatnonzero(allowed)[0])
        picked[:, first] = True
        return picked

    mask = np.zeros((batch, nq, nk), dtype=bool)
    mask[:, 1] = some(neg)
    mask[:, 2] = neg
    mask[:, 2, np.flatnonzero(fin)[-1]] = True
    mask[:, 3] = some(fin)
    mask[:, 4] = some(fin) | huge
    mask[:, 5, int(r.integers(int(neg.sum())))] = True
    mask[:, 6] = some(fin) | ((r.random((batch, nk)) < 0.5) & neg)
    mask[:, 7] = neg | fin
    return q, k, v, mask


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("nk", KEY_COUNTS)
def test_mixed_rows_match_the_reference_emulated(
    nk: int, dtype: torch.dtype, implementation: str, emulation: ModuleType
) -> None:
    r = np.random.default_rng([nk, len(implementation)])
    q, k, v, mask = _mixed_rows(r, nk, dtype)
    q, k, v = (_rounded(a, dtype) for a in (q, k, v))
    g = _rounded(r.standard_normal((2, 8, 3)), dtype)
    g[:, 0] = np.nan  # the fully blocked row's cotangent is selected away
    out, grads = _attention(implementation, q, k, v, mask, g, dtype)
    want_out, want_grads = _reference(q, k, v, mask, g)
    tolerance = TOLERANCE[dtype]
    _assert_close(out, want_out, tolerance, "out")
    # dq's column 0 meets H's max / 64 on query 4: compared on its own scale
    _assert_close(grads[0][..., :1], want_grads[0][..., :1], tolerance, "dq[..., 0]")
    _assert_close(grads[0][..., 1:], want_grads[0][..., 1:], tolerance, "dq[..., 1:]")
    _assert_close(grads[1], want_grads[1], tolerance, "dk")
    _assert_close(grads[2], want_grads[2], tolerance, "dv")
    # the convention itself: NaN rows, a zero row, finite rows (no blocked overflow leaked)
    assert np.isnan(out[:, [1, 5]]).all() and np.isnan(grads[0][:, [1, 5]]).all()
    assert_array_equal(out[:, 0], 0.0)
    assert_array_equal(grads[0][:, 0], 0.0)
    assert np.isfinite(out[:, [2, 3, 4, 6, 7]]).all()
    assert np.isfinite(grads[0][:, [3, 4]]).all()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("scale", [1e39, -1e39])
@pytest.mark.parametrize("nk", [5, 33, 65])
def test_a_scale_that_is_inf_in_float32_keeps_blocked_rows_and_unread_keys_zero_emulated(
    nk: int, scale: float, implementation: str, emulation: ModuleType
) -> None:
    """A float32 scale of ±inf makes every allowed score ±inf or NaN (NaN rows, as the
    reference), but a fully blocked query row and a key no query attends take no cotangent: their
    dq and dk are exactly 0. The direct kernel multiplied the accumulated ``sum_j ds_ij k_j`` (0
    there) by the scale, ``0 * inf = NaN``; the composed capsule's score cotangent did the same
    at blocked entries (review40 F1). Oracle: the reference kernels, and by hand (zeros)."""
    dtype = torch.float32
    r = np.random.default_rng([nk, 7])
    q, k, v = (_rounded(r.standard_normal(shape), dtype) for shape in ((2, 4, 3), (2, nk, 3), (2, nk, 2)))
    mask = r.random((4, nk)) < 0.7
    mask[1] = False  # a fully blocked query row
    mask[:, nk - 2] = False  # a key no query attends
    mask[[0, 2, 3], 0] = True
    g = _rounded(r.standard_normal((2, 4, 2)), dtype)
    out, grads = _attention(implementation, q, k, v, mask, g, dtype, scale=scale)
    want_out, want_grads = _reference(*(a.astype(np.float32) for a in (q, k, v)), mask, g.astype(np.float32),
                                      scale=scale)  # in float32, where the scale is inf
    _assert_close(out, want_out.astype(np.float64), 0.0, "out")
    for got, want, name in zip(grads, want_grads, ("dq", "dk", "dv"), strict=True):
        _assert_close(got, want.astype(np.float64), TOLERANCE[dtype], name)
    assert_array_equal(out[:, 1], 0.0)
    assert_array_equal(grads[0][:, 1], 0.0)
    assert_array_equal(grads[1][:, nk - 2], 0.0)
    assert np.isnan(grads[0][:, [0, 2, 3]]).all()


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("nk", KEY_COUNTS)
def test_partly_minus_inf_rows_match_torch_sdpa_emulated(
    nk: int, dtype: torch.dtype, implementation: str, emulation: ModuleType
) -> None:
    """Every row attends at least one finite score and some scores that overflow to -inf
    (``q = [B, r, r, r]``, ``k = [-B, r, r, r]``; finite keys ``[0, r, r, r]``), in the first key
    tile only for some rows: an ordinary softmax, as torch SDPA's float64 autograd with a boolean
    mask (where those scores are about -B**2: weight 0 too)."""
    r = np.random.default_rng([nk, 7, len(implementation)])
    batch, nq, d, dv = 2, 6, 4, 3
    b = BIG[dtype]
    q = r.standard_normal((batch, nq, d))
    q[..., 0] = b
    k = r.standard_normal((batch, nk, d))
    neg = np.arange(nk) < min(TILE, nk - 1)
    k[:, neg, 0] = -b
    k[:, ~neg, 0] = 0.0
    v = r.standard_normal((batch, nk, dv))
    mask = r.random((batch, nq, nk)) < 0.5
    mask[:, :, np.flatnonzero(~neg)[-1]] = True  # a finite score in every row
    mask[:, 0] = True  # every key: the -inf ones of the first tile too
    mask[:, 1] = neg
    mask[:, 1, -1] = True  # all -inf keys, then one finite key in the last tile
    q, k, v = (_rounded(a, dtype) for a in (q, k, v))
    g = _rounded(r.standard_normal((batch, nq, dv)), dtype)
    out, grads = _attention(implementation, q, k, v, mask, g, dtype)
    leaves = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    want = TF.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], attn_mask=torch.from_numpy(mask))
    want_grads = torch.autograd.grad(want, leaves, torch.tensor(g))
    tolerance = TOLERANCE[dtype]
    assert np.isfinite(out).all()
    _assert_close(out, _np(want), tolerance, "out")
    for axis, (got, expected) in enumerate(zip(grads, want_grads, strict=True)):
        for cols in (slice(0, 1), slice(1, None)):  # column 0 carries B's scale in dk
            _assert_close(got[..., cols], _np(expected)[..., cols], tolerance, f"d{'qkv'[axis]}[{cols}]")


# ------------------------------------------------------------------------------ through sessions


def _direct_profile() -> BackendProfile:
    """``checked_cuda`` preferring native-cuda capsules: attention runs on
    ``native_cuda.direct_attention`` (``checked_cuda`` itself selects the composed capsule)."""
    base = profiles.get("checked_cuda")
    policy = dataclasses.replace(base.policy, provider=ProviderPreference.prefer(Provider.NATIVE_CUDA))
    return dataclasses.replace(base, name="checked_cuda-direct-attention", policy=policy)


def _session_attention(
    profile: str | BackendProfile,
    device: str,
    inputs: tuple[Array, Array, Array, Array],
    g: Array,
    dtype: str,
) -> tuple[Array, list[Array], list[str]]:
    q, k, v, mask = inputs
    with tl.session(profile) as session:
        leaves = [tl.tensor(x, dtype=dtype, requires_grad=True, device=device) for x in (q, k, v)]
        out = tl.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], mask)
        out.backward(g.astype(dtype))
        selected = [kernel.capsule.name for kernel in session.selected]
    grads = []
    for leaf in leaves:
        assert leaf.grad is not None
        grads.append(leaf.grad.numpy().astype(np.float64))
    return out.numpy().astype(np.float64), grads, selected


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("capsule_name", IMPLEMENTATIONS)
@pytest.mark.parametrize("nk", [5, 40])
def test_checked_cuda_agrees_with_checked_cpu(
    nk: int, capsule_name: str, dtype: str, emulated_cuda: None
) -> None:
    torch_dtype = getattr(torch, dtype)
    r = np.random.default_rng([nk, 3])
    inputs = _mixed_rows(r, nk, torch_dtype)
    g = r.standard_normal((2, 8, 3))
    profile = _direct_profile() if capsule_name == DIRECT else "checked_cuda"
    out, grads, selected = _session_attention(profile, "cuda", inputs, g, dtype)
    cpu_out, cpu_grads, _ = _session_attention("checked_cpu", "cpu", inputs, g, dtype)
    assert capsule_name in selected
    tolerance = 100 * TOLERANCE[torch_dtype]  # both in the dtype, each with its own rounding
    _assert_close(out, cpu_out, tolerance, "out")
    assert np.isnan(out[:, 1]).all() and np.isnan(out[:, 5]).all()
    assert_array_equal(out[:, 0], 0.0)
    _assert_close(grads[0][..., :1], cpu_grads[0][..., :1], tolerance, "dq[..., 0]")
    _assert_close(grads[0][..., 1:], cpu_grads[0][..., 1:], tolerance, "dq[..., 1:]")
    _assert_close(grads[1], cpu_grads[1], tolerance, "dk")
    _assert_close(grads[2], cpu_grads[2], tolerance, "dv")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("capsule_name", IMPLEMENTATIONS)
def test_checked_cuda_hand_values(capsule_name: str, dtype: str, emulated_cuda: None) -> None:
    torch_dtype = getattr(torch, dtype)
    q, k, v, mask = _hand_problem(torch_dtype)
    profile = _direct_profile() if capsule_name == DIRECT else "checked_cuda"
    results = []
    for name, device in ((profile, "cuda"), ("checked_cpu", "cpu")):
        with tl.session(name) as session:
            leaves = [tl.tensor(x, dtype=dtype, requires_grad=True, device=device) for x in (q, k, v)]
            out = tl.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], mask, scale=1.0)
            out.backward(HAND_G.astype(dtype))
        grads = [leaf.grad for leaf in leaves]
        assert all(grad is not None for grad in grads)
        results.append((out.numpy(), [grad.numpy() for grad in grads if grad is not None]))
        if device == "cuda":
            assert capsule_name in [kernel.capsule.name for kernel in session.selected]
    for got, got_grads in results:
        assert_array_equal(got, HAND_OUT)
        for grad, want in zip(got_grads, (HAND_DQ, HAND_DK, HAND_DV), strict=True):
            assert_array_equal(grad, want)


# --------------------------------------------------------------------- hard-masked softmax rows

WIDTHS = [1, 2, 31, 32, 33, 64, 70, 100]
"""Fewer entries than lanes, one per lane, several per lane (lane j reads j, j + 32, ...)."""


def _softmax_rows(r: np.random.Generator, width: int) -> tuple[Array, Array]:
    """Rows: 0 allowed entries all -inf (NaN); 1 one allowed entry, -inf, in the last column
    (NaN); 2 -inf at lane 0's columns (0, 32, ...) before a finite last entry; 3 random -inf among
    allowed entries with a finite one; 4 fully blocked, -inf everywhere (zeros); 5 every entry
    allowed and -inf (NaN); 6 +inf and NaN at blocked entries only (finite)."""
    rows = 7
    x = r.standard_normal((rows, width)) * 3.0
    mask = r.random((rows, width)) < 0.6
    last = width - 1
    mask[0, 0] = True
    x[0][mask[0]] = -np.inf
    mask[1] = False
    mask[1, last] = True
    x[1, last] = -np.inf
    lane0 = np.arange(width) % 32 == 0
    mask[2] |= lane0
    mask[2, last] = True
    x[2][lane0] = -np.inf
    x[2, last] = 1.5
    mask[3, last] = True
    x[3][(r.random(width) < 0.5) & (np.arange(width) != last)] = -np.inf
    mask[4] = False
    x[4] = -np.inf
    mask[5] = True
    x[5] = -np.inf
    mask[6, last] = True
    blocked = ~mask[6]
    x[6][blocked] = np.where(r.random(int(blocked.sum())) < 0.5, np.inf, np.nan)
    return x, mask


def _torch_softmax(x: Array, mask: Array) -> tuple[torch.Tensor, torch.Tensor]:
    """torch float64: ``(leaf, where(mask, softmax(where(mask, x, -inf)), 0))``."""
    leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    allowed = torch.from_numpy(mask)
    scores = torch.where(allowed, leaf, torch.tensor(-np.inf, dtype=torch.float64))
    return leaf, torch.where(allowed, torch.softmax(scores, -1), 0.0)


@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
@pytest.mark.parametrize("width", WIDTHS)
def test_hard_masked_softmax_minus_inf_rows_emulated(
    width: int, dtype: torch.dtype, emulation: ModuleType
) -> None:
    r = np.random.default_rng([width, 5])
    x, mask = _softmax_rows(r, width)
    x = _rounded(x, dtype)
    g = _rounded(np.asarray(r.standard_normal(x.shape)), dtype)
    g[~mask] = np.nan  # selected away
    x_t, m_t = torch.tensor(x, dtype=dtype), torch.from_numpy(mask)
    out = kernels.hard_masked_softmax_forward(x_t, m_t)
    dx, dmask = kernels.hard_masked_softmax_backward(torch.tensor(g, dtype=dtype), x_t, m_t, out=out)
    assert dmask is None
    got, got_dx = _np(out), _np(dx)
    tolerance = TOLERANCE[dtype]
    want = ref.hard_masked_softmax(x, mask)
    (want_dx, _) = ref.hard_masked_softmax_vjp(g, x, mask, out=want)
    _assert_close(got, want, tolerance, "y vs reference")
    _assert_close(got_dx, np.asarray(want_dx), tolerance, "dx vs reference")
    leaf, torch_y = _torch_softmax(x, mask)
    (torch_dx,) = torch.autograd.grad(torch_y, [leaf], torch.from_numpy(np.where(mask, g, 0.0)))
    _assert_close(got, _np(torch_y), tolerance, "y vs torch")
    _assert_close(got_dx, _np(torch_dx), tolerance, "dx vs torch")
    nan_rows = [0, 1, 5]
    assert np.isnan(got[nan_rows][mask[nan_rows]]).all() and np.isnan(got_dx[nan_rows][mask[nan_rows]]).all()
    assert_array_equal(got[~mask], 0.0)
    assert_array_equal(got_dx[~mask], 0.0)
    assert np.isfinite(got[[2, 3, 6]]).all() and np.isfinite(got_dx[[2, 3, 6]]).all()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("width", [5, 33, 70])
def test_hard_masked_softmax_checked_cuda_agrees_with_checked_cpu(
    width: int, dtype: str, emulated_cuda: None
) -> None:
    r = np.random.default_rng([width, 9])
    x, mask = _softmax_rows(r, width)
    g = np.asarray(r.standard_normal(x.shape)).astype(dtype)
    results = []
    for profile, device in (("checked_cuda", "cuda"), ("checked_cpu", "cpu")):
        with tl.session(profile) as session:
            leaf = tl.tensor(x, dtype=dtype, requires_grad=True, device=device)
            y = tl.hard_masked_softmax(leaf, mask)
            y.backward(g)
            names = [kernel.capsule.name for kernel in session.selected]
        assert leaf.grad is not None
        results.append((y.numpy().astype(np.float64), leaf.grad.numpy().astype(np.float64), names))
    (out, dx, names), (cpu_out, cpu_dx, _) = results
    assert "native_cuda.hard_masked_softmax" in names
    tolerance = 100 * TOLERANCE[getattr(torch, dtype)]
    _assert_close(out, cpu_out, tolerance, "y")
    _assert_close(dx, cpu_dx, tolerance, "dx")
    assert np.isnan(out[0][mask[0]]).all() and np.isnan(out[5]).all()
    assert_array_equal(out[4], 0.0)
    assert_array_equal(dx[4], 0.0)


# ------------------------------------------------------------------------------- parity cases


def test_parity_cases_cover_minus_inf_rows() -> None:
    """``bench/gpu_check.py`` runs these on a GPU: attention over three key tiles whose first
    holds only -inf keys (an all -inf row, a row whose -inf tile comes before finite keys, a fully
    blocked row), and hard-masked softmax rows of 33 entries (two in lane 0)."""
    (attention,) = [c for c in parity.cases_for([parity.ATTENTION]) if c.name == "minus-inf-keys"]
    q, k, v, mask = attention.make(np.random.default_rng(0)).arrays
    assert q is not None and k is not None and v is not None and mask is not None
    assert k.shape[-2] > 2 * TILE and np.isneginf(k[:, :TILE, 0]).all() and np.isfinite(k[:, TILE:]).all()
    assert not mask[:, 0].any()
    # review178 F1: an inf value row at a -inf key of the first tile, attended by query 4 alone
    assert np.isposinf(v[:, 7]).all() and (mask[:, :, 7] == (np.arange(mask.shape[1]) == 4)).all()
    assert mask[:, 4, TILE:].any(-1).all()
    assert mask[:, 1].any(-1).all() and not mask[:, 1, TILE:].any()
    assert mask[:, 2, :TILE].any(-1).all() and mask[:, 2, TILE:].any(-1).all()
    (softmax,) = [c for c in parity.cases_for(["hard_masked_softmax"]) if c.name == "minus-inf-rows"]
    x, allowed = softmax.make(np.random.default_rng(0)).arrays
    assert x is not None and allowed is not None and x.shape[-1] == TILE + 1
    assert np.isneginf(x[0][allowed[0]]).all() and np.isneginf(x[1][allowed[1]]).all()


@pytest.mark.parametrize("composed", [False, True], ids=["direct", "composed"])
@pytest.mark.parametrize("dtype", DTYPES, ids=DTYPE_IDS)
def test_parity_cases_pass_emulated(dtype: torch.dtype, composed: bool, emulation: ModuleType) -> None:
    cases = [c for c in parity.CASES if c.name in ("minus-inf-keys", "minus-inf-rows")]
    assert len(cases) == 2
    for case in cases:
        if composed and case.op != parity.ATTENTION:
            continue
        result = parity.run_case(case, dtype, torch.device("cpu"), composed=composed)
        assert result.passed, "; ".join(result.problems)
