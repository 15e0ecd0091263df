"""``reference.attention``: the composed scaled_dot_product_attention kernel and its VJP.

Oracles: the golden outputs of anchor-runtime.md §5.4 (PyTorch float64 digits quoted there),
``torch.nn.functional.scaled_dot_product_attention`` with a boolean ``attn_mask`` (float64 to
1e-10, float32 to 1e-5 relative) and ``torch.autograd`` through it (relative error <= 1e-6),
central finite differences in float64, hand-computed values for ``d == 0``, and attention over
the reduced key set for the NaN-at-blocked-position cases.  Every test name mentions
``scaled_dot_product_attention``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from numpy.testing import assert_allclose, assert_array_equal

from torchlean.backend.providers.reference import kernels as K

SUBJECT_PROVIDERS = ("reference",)
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

Array = np.ndarray[Any, Any]
SDPA = K.scaled_dot_product_attention
SDPA_VJP = K.scaled_dot_product_attention_vjp


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _torch_sdpa(q: Array, k: Array, v: Array, mask: Array | None, scale: float | None = None) -> Array:
    attn_mask = None if mask is None else torch.from_numpy(mask)
    out = F.scaled_dot_product_attention(
        torch.from_numpy(q), torch.from_numpy(k), torch.from_numpy(v), attn_mask=attn_mask, scale=scale
    )
    return out.numpy()


def _torch_grads(
    q: Array, k: Array, v: Array, mask: Array | None, g: Array, scale: float | None = None
) -> list[Array]:
    tensors = [torch.tensor(a, requires_grad=True) for a in (q, k, v)]
    attn_mask = None if mask is None else torch.from_numpy(mask)
    out = F.scaled_dot_product_attention(*tensors, attn_mask=attn_mask, scale=scale)
    out.backward(torch.from_numpy(g))
    return [t.grad.numpy() if t.grad is not None else np.zeros(t.shape) for t in tensors]


def _finite_differences(
    inputs: Sequence[Array], mask: Array | None, g: Array, which: int, scale: float | None = None
) -> Array:
    x = inputs[which]
    grad = np.zeros(x.shape)
    for idx in np.ndindex(*x.shape):
        h = 1e-6 * max(1.0, abs(float(x[idx])))
        losses = []
        for step in (h, -h):
            moved = [a.copy() for a in inputs]
            moved[which][idx] += step
            losses.append(math.fsum((SDPA(*moved, mask, scale=scale) * g).ravel().tolist()))
        grad[idx] = (losses[0] - losses[1]) / (2 * h)
    return grad


# ------------------------------------------------------------------------------ golden values

_QK = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
_V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def test_scaled_dot_product_attention_golden_modern_models_chapter() -> None:
    causal = np.tril(np.ones((3, 3), dtype=bool))
    torch_causal = [
        [1.0, 2.0],
        [2.3395230986533138, 3.3395230986533138],
        [3.5104695304536615, 4.510469530453662],
    ]
    torch_plain = [
        [3.0, 4.0],
        [3.4066725560787154, 4.406672556078716],
        [3.5104695304536615, 4.510469530453662],
    ]
    assert_allclose(SDPA(_QK, _QK, _V, causal), torch_causal, rtol=1e-14)
    assert_allclose(SDPA(_QK, _QK, _V), torch_plain, rtol=1e-14)
    q4 = np.vstack([_QK, [[0.5, 2.0]]])
    v4 = np.vstack([_V, [[7.0, 8.0]]])
    prefix = SDPA(q4, q4, v4, np.tril(np.ones((4, 4), dtype=bool)))
    expected = [[1.0, 2.0], [2.339523, 3.339523], [3.510470, 4.510470], [5.837654, 6.837654]]
    assert_allclose(prefix, expected, atol=5e-7)
    assert_array_equal(prefix[:3], SDPA(_QK, _QK, _V, causal))  # prefix causality, bit for bit


def test_scaled_dot_product_attention_golden_key_value_permutation() -> None:
    k_rev, v_rev = _QK[::-1].copy(), _V[::-1].copy()
    causal = np.tril(np.ones((3, 3), dtype=bool))
    assert_allclose(SDPA(_QK, k_rev, v_rev), SDPA(_QK, _QK, _V), rtol=1e-14)
    assert_allclose(
        SDPA(_QK, k_rev, v_rev, causal), [[5.0, 6.0], [4.0, 5.0], [3.510470, 4.510470]], atol=5e-7
    )


def test_scaled_dot_product_attention_zero_width_uses_scale_one() -> None:
    q, k = np.zeros((3, 0)), np.zeros((4, 0))
    v = _rng(1).standard_normal((4, 2))
    assert_allclose(SDPA(q, k, v), np.broadcast_to(v.mean(axis=0), (3, 2)), rtol=1e-15)
    mask = np.array([[True, False, True, False], [False] * 4, [True] * 4])
    out = SDPA(q, k, v, mask)
    assert_allclose(out[0], (v[0] + v[2]) / 2, rtol=1e-15)
    assert_array_equal(out[1], 0.0)
    assert_allclose(out[2], v.mean(axis=0), rtol=1e-15)


# ------------------------------------------------------------------------------ values vs torch

CASES: list[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...] | None]] = [
    ((3, 4), (5, 4), (5, 2), None),
    ((3, 4), (5, 4), (5, 2), (3, 5)),
    ((2, 1, 3, 4), (1, 2, 5, 4), (2, 2, 5, 3), (2, 1, 3, 5)),
    ((2, 3, 4), (2, 5, 4), (2, 5, 6), (5,)),
    ((1, 4), (1, 4), (1, 1), (1, 1)),
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("sq", "sk", "sv", "sm"), CASES)
def test_scaled_dot_product_attention_value_matches_torch(
    dtype: Any, sq: tuple[int, ...], sk: tuple[int, ...], sv: tuple[int, ...], sm: tuple[int, ...] | None
) -> None:
    r = _rng(2)
    q, k, v = (r.standard_normal(s).astype(dtype) for s in (sq, sk, sv))
    mask = None if sm is None else r.random(sm) > 0.35
    ours = SDPA(q, k, v, mask)
    ref = _torch_sdpa(q, k, v, mask)
    assert ours.dtype == np.dtype(dtype) and ours.shape == ref.shape
    if dtype == np.float64:
        assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)
    else:
        assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def test_scaled_dot_product_attention_value_explicit_scale() -> None:
    r = _rng(3)
    q, k, v = r.standard_normal((3, 4)), r.standard_normal((6, 4)), r.standard_normal((6, 2))
    mask = r.random((3, 6)) > 0.3
    assert_allclose(
        SDPA(q, k, v, mask, scale=0.7), _torch_sdpa(q, k, v, mask, scale=0.7), rtol=1e-10, atol=1e-12
    )


def test_scaled_dot_product_attention_fully_masked_rows_are_zero_in_forward_and_backward() -> None:
    r = _rng(4)
    q, k, v = r.standard_normal((2, 4, 3)), r.standard_normal((2, 5, 3)), r.standard_normal((2, 5, 2))
    mask = r.random((2, 4, 5)) > 0.3
    mask[:, :, 0] = True
    mask[0, 1] = False
    mask[1, 3] = False
    out = SDPA(q, k, v, mask)
    assert_array_equal(out[0, 1], 0.0)
    assert_array_equal(out[1, 3], 0.0)
    assert_allclose(out, _torch_sdpa(q, k, v, mask), rtol=1e-10, atol=1e-12)
    g = r.standard_normal(out.shape)
    dq, dk, dv, dmask = SDPA_VJP(g, q, k, v, mask, out=out)
    assert dmask is None and dq is not None and dk is not None and dv is not None
    assert_array_equal(dq[0, 1], 0.0)
    assert_array_equal(dq[1, 3], 0.0)
    for ours, ref in zip((dq, dk, dv), _torch_grads(q, k, v, mask, g), strict=True):
        assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    # the cotangent of a fully masked row contributes nothing to dk / dv
    g_changed = g.copy()
    g_changed[0, 1] = 1e6
    _, dk2, dv2, _ = SDPA_VJP(g_changed, q, k, v, mask, out=out)
    assert_array_equal(dk2, dk)
    assert_array_equal(dv2, dv)


def test_scaled_dot_product_attention_nan_at_blocked_keys_never_leaks() -> None:
    r = _rng(5)
    q, k, v = r.standard_normal((3, 4)), r.standard_normal((5, 4)), r.standard_normal((5, 2))
    mask = r.random((3, 5)) > 0.3
    mask[:, 0] = True
    mask[:, 2] = False  # key 2 is blocked for every query ...
    k[2] = np.nan  # ... so NaN/inf in its key and value rows must never be read
    v[2] = [np.inf, np.nan]
    out = SDPA(q, k, v, mask)
    keep = np.array([True, True, False, True, True])
    reduced = SDPA(q, k[keep], v[keep], mask[:, keep])
    assert np.isfinite(out).all()
    assert_array_equal(out, reduced)
    assert_allclose(out, _torch_sdpa(q, k[keep], v[keep], mask[:, keep]), rtol=1e-10, atol=1e-12)
    g = r.standard_normal(out.shape)
    dq, dk, dv, _ = SDPA_VJP(g, q, k, v, mask, out=out)
    assert dq is not None and dk is not None and dv is not None
    assert np.isfinite(dq).all() and np.isfinite(dk).all() and np.isfinite(dv).all()
    assert_array_equal(dk[2], 0.0)
    assert_array_equal(dv[2], 0.0)
    rq, rk, rv, _ = SDPA_VJP(g, q, k[keep], v[keep], mask[:, keep], out=reduced)
    assert_array_equal(dq, rq)
    assert_array_equal(dk[keep], rk)
    assert_array_equal(dv[keep], rv)


def test_scaled_dot_product_attention_nan_query_on_fully_masked_row_never_leaks() -> None:
    r = _rng(6)
    q, k, v = r.standard_normal((3, 4)), r.standard_normal((5, 4)), r.standard_normal((5, 2))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    q[1] = np.nan
    out = SDPA(q, k, v, mask)
    assert_array_equal(out[1], 0.0)
    g = r.standard_normal(out.shape)
    g[1] = np.nan  # even a NaN cotangent on the blocked row is selected away
    dq, dk, dv, _ = SDPA_VJP(g, q, k, v, mask, out=out)
    assert dq is not None and dk is not None and dv is not None
    assert_array_equal(dq[1], 0.0)
    assert np.isfinite(dq).all() and np.isfinite(dk).all() and np.isfinite(dv).all()
    rows = np.array([True, False, True])
    ref = _torch_grads(q[rows], k, v, None, g[rows])
    assert_allclose(dq[rows], ref[0], rtol=1e-10, atol=1e-12)
    assert_allclose(dk, ref[1], rtol=1e-10, atol=1e-12)
    assert_allclose(dv, ref[2], rtol=1e-10, atol=1e-12)


def test_scaled_dot_product_attention_value_scale_zero_is_uniform_attention() -> None:
    """An explicit ``scale=0.0`` is a scale, not the default ``1/sqrt(d)`` (review66 S13): every
    allowed key gets the same weight, so each row is the mean of the allowed values (torch agrees);
    the VJP then gives ``dq = dk = 0`` exactly."""
    r = _rng(4)
    q, k, v = r.standard_normal((3, 4)), r.standard_normal((6, 4)), r.standard_normal((6, 2))
    allowed, single = [True, False, True, True, False, True], [False, True, False, False, False, False]
    mask = np.array([allowed, allowed, single])
    out = SDPA(q, k, v, mask, scale=0.0)
    expected = np.stack([v[row].mean(axis=0) for row in mask])
    assert_allclose(out, expected, rtol=1e-14, atol=0)
    assert_allclose(out, _torch_sdpa(q, k, v, mask, scale=0.0), rtol=1e-10, atol=1e-12)
    assert np.abs(out - SDPA(q, k, v, mask)).max() > 0.1  # the default scale gives other values here
    dq, dk, dv, _ = SDPA_VJP(np.ones_like(out), q, k, v, mask, out=out, scale=0.0)
    assert_array_equal(dq, np.zeros_like(q))
    assert_array_equal(dk, np.zeros_like(k))
    assert_allclose(dv, _torch_grads(q, k, v, mask, np.ones_like(out), 0.0)[2], rtol=1e-10, atol=1e-12)


# ------------------------------------------------------------------------------------ gradients

GRAD_CASES: list[
    tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...] | None, float | None]
] = [
    ((3, 2), (4, 2), (4, 3), None, None),
    ((3, 2), (4, 2), (4, 3), (3, 4), None),
    ((2, 1, 2, 2), (1, 2, 3, 2), (2, 2, 3, 2), (2, 1, 2, 3), None),
    ((2, 3, 2), (3, 2), (3, 1), (3,), 0.9),
    ((1, 1), (1, 1), (1, 1), (1, 1), None),
]


@pytest.mark.parametrize(("sq", "sk", "sv", "sm", "scale"), GRAD_CASES)
def test_scaled_dot_product_attention_vjp_matches_torch_and_finite_differences(
    sq: tuple[int, ...],
    sk: tuple[int, ...],
    sv: tuple[int, ...],
    sm: tuple[int, ...] | None,
    scale: float | None,
) -> None:
    r = _rng(7)
    q, k, v = (r.standard_normal(s) for s in (sq, sk, sv))
    mask = None if sm is None else r.random(sm) > 0.3
    if mask is not None:
        mask[..., 0] = True
    out = SDPA(q, k, v, mask, scale=scale)
    g = r.standard_normal(out.shape)
    grads = SDPA_VJP(g, q, k, v, mask, out=out, scale=scale)
    assert grads[3] is None
    for ours, ref, x in zip(grads[:3], _torch_grads(q, k, v, mask, g, scale), (q, k, v), strict=True):
        assert ours is not None and ours.shape == x.shape
        assert_allclose(ours, ref, rtol=1e-10, atol=1e-12)
    for i in range(3):
        assert_allclose(grads[i], _finite_differences([q, k, v], mask, g, i, scale), rtol=1e-6, atol=1e-7)
    # float32 (the training default): within float32 rounding of torch float64 at the rounded inputs
    q32, k32, v32, g32 = (a.astype(np.float32) for a in (q, k, v, g))
    grads32 = SDPA_VJP(g32, q32, k32, v32, mask, out=SDPA(q32, k32, v32, mask, scale=scale), scale=scale)
    q64, k64, v64, g64 = (a.astype(np.float64) for a in (q32, k32, v32, g32))
    for ours, ref in zip(grads32[:3], _torch_grads(q64, k64, v64, mask, g64, scale), strict=True):
        assert ours is not None and ours.dtype == np.float32
        assert_allclose(ours, ref, rtol=1e-4, atol=1e-4 * max(1.0, float(np.abs(ref).max())))


def test_scaled_dot_product_attention_vjp_zero_size_queries() -> None:
    q, k, v = np.zeros((0, 2)), np.ones((3, 2)), np.ones((3, 4))
    out = SDPA(q, k, v)
    assert out.shape == (0, 4)
    dq, dk, dv, _ = SDPA_VJP(np.zeros((0, 4)), q, k, v, out=out)
    assert dq is not None and dk is not None and dv is not None
    assert dq.shape == (0, 2)
    assert_array_equal(dk, 0.0)
    assert_array_equal(dv, 0.0)
