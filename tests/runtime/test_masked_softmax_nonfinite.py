"""Hard-masked softmax rows whose ALLOWED entries hold NaN or ±inf, under every CPU profile.

The contract (README, DESIGN.md §1, ``torchlean.spec.hard_masked_softmax``): blocked entries are
selected away and are exactly 0, whatever the allowed entries hold. An allowed NaN or +inf (or
allowed entries that are all -inf) makes the row's sum NaN, so every allowed weight of that row
is NaN while its blocked weights stay 0. The kernels used to divide the blocked numerators (0)
by that NaN sum and wrote NaN at blocked positions.

Oracles, all independent of the kernels: hand values, the spec (``torchlean.spec``), and torch
float64 ``where(mask, softmax(where(mask, x, -inf)), 0)`` with its autograd gradient (``where``
routes exactly 0 to blocked scores). The attention ops that share the masked softmax
(``scaled_dot_product_attention``: reference kernel under ``checked_cpu``, the torch core under
``fast_cpu``) and the unmasked softmax normalisations are checked on non-finite inputs too.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from numpy.testing import assert_allclose, assert_array_equal

import torchlean as tl
import torchlean.spec as S
from torchlean.backend.providers.reference import kernels as K

Array = np.ndarray[Any, Any]
PROFILES = ["checked_cpu", "fast_cpu"]
SPECIALS = [np.nan, np.inf, -np.inf]


def _torch_masked(x: Array, mask: Array, axis: int = -1) -> tuple[torch.Tensor, torch.Tensor]:
    """torch float64 oracle: ``(leaf, weights)``, softmax over the allowed entries with blocked
    entries selected to 0; ``leaf`` (x in float64) collects the autograd gradient."""
    leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    allowed = torch.from_numpy(np.broadcast_to(mask, x.shape).copy())
    blocked = torch.tensor(-np.inf, dtype=torch.float64)
    weights = torch.where(allowed, torch.softmax(torch.where(allowed, leaf, blocked), axis), 0.0)
    return leaf, weights


def _same_pattern(got: Array, want: Array, rtol: float, atol: float = 0.0) -> None:
    """Equal NaN positions, equal infinities, and close finite values."""
    assert_array_equal(np.isnan(got), np.isnan(want))
    assert_array_equal(np.isposinf(got), np.isposinf(want))
    assert_array_equal(np.isneginf(got), np.isneginf(want))
    finite = np.isfinite(want)
    assert_allclose(got[finite], want[finite], rtol=rtol, atol=atol)


def _tolerances(dtype: type) -> tuple[float, float]:
    return (1e-5, 1e-6) if dtype == np.float32 else (1e-12, 1e-14)


@pytest.mark.parametrize("profile", PROFILES)
def test_blocked_entries_are_zero_when_an_allowed_entry_is_infinite_or_nan(profile: str) -> None:
    """The review's reproductions; hand values: an allowed +inf gives exp(inf - inf) = NaN in the
    sum, an allowed NaN too, and a row of allowed -inf gives exp(-inf - -inf) = NaN."""
    cases = [
        ([np.inf, 1.0, 5.0], [True, True, False], [np.nan, np.nan, 0.0]),
        ([np.nan, 1.0], [True, False], [np.nan, 0.0]),
        ([1.0, np.nan, np.inf], [True, True, False], [np.nan, np.nan, 0.0]),
        ([-np.inf, -np.inf, 2.0], [True, True, False], [np.nan, np.nan, 0.0]),
        ([-np.inf, 0.0, np.nan], [True, True, False], [0.0, 1.0, 0.0]),  # finite max: -inf gives 0
        ([np.nan, np.inf], [False, False], [0.0, 0.0]),  # fully blocked row
    ]
    with tl.session(profile):
        for x, mask, want in cases:
            for dtype in (np.float32, np.float64):
                got = tl.hard_masked_softmax(tl.tensor(np.array(x, dtype)), mask).numpy()
                assert got.dtype == dtype
                assert_array_equal(got, np.array(want, dtype))
                assert_array_equal(got, S.hard_masked_softmax(np.array(x, dtype), np.array(mask)))


@st.composite
def _rows(draw: st.DrawFn) -> tuple[Array, Array, int, type]:
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    rows = draw(st.integers(1, 3))
    n = draw(st.integers(1, 7))
    values = st.one_of(st.floats(-30, 30), st.sampled_from(SPECIALS))
    x = np.array(draw(st.lists(values, min_size=rows * n, max_size=rows * n)), dtype).reshape(rows, n)
    mask = np.array(draw(st.lists(st.booleans(), min_size=rows * n, max_size=rows * n))).reshape(rows, n)
    axis = draw(st.sampled_from([0, 1, -1]))
    return x, mask, axis, dtype


@settings(max_examples=150, deadline=None)
@given(_rows())
def test_reference_forward_and_vjp_match_spec_and_torch_on_non_finite_rows(
    case: tuple[Array, Array, int, type],
) -> None:
    x, mask, axis, dtype = case
    out = K.hard_masked_softmax(x, mask, axis=axis)
    spec = S.hard_masked_softmax(x, mask, axis=axis)
    rtol, atol = _tolerances(dtype)
    assert_array_equal(out[~mask], 0.0)
    _same_pattern(out, spec, rtol, atol)
    leaf, want = _torch_masked(x.astype(np.float64), mask, axis)
    _same_pattern(out, want.detach().numpy(), rtol, atol)
    g = np.random.default_rng(x.size).standard_normal(x.shape).astype(dtype)
    g[~mask] = np.nan  # a cotangent at a blocked entry never reaches the gradient
    (dx, dmask) = K.hard_masked_softmax_vjp(g, x, mask, out=out, axis=axis)
    assert dmask is None and dx is not None
    assert_array_equal(dx[~mask], 0.0)
    want.backward(torch.from_numpy(np.where(mask, g, 0.0).astype(np.float64)))
    assert leaf.grad is not None
    _same_pattern(dx, leaf.grad.numpy(), rtol, atol)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_tape_gradient_through_the_op_matches_torch_on_non_finite_rows(profile: str, dtype: type) -> None:
    """Forward and tape gradient under the profile: blocked gradients exactly 0, allowed ones
    torch-with-where's (NaN across a row with an allowed NaN/inf, finite elsewhere)."""
    x = np.array(
        [
            [np.inf, 1.0, 5.0, np.nan],
            [0.5, np.nan, -1.0, 2.0],
            [-np.inf, -np.inf, 3.0, np.inf],
            [0.25, -np.inf, np.nan, 1.5],
            [np.nan, np.inf, -np.inf, 0.0],
        ],
        dtype,
    )
    mask = np.array(
        [
            [True, True, False, False],
            [True, True, True, False],
            [True, True, False, False],
            [True, True, False, True],
            [False, False, False, False],
        ]
    )
    g = np.array([[1.0, -2.0, 3.0, 0.5]] * 5, dtype)
    rtol, atol = _tolerances(dtype)
    with tl.session(profile):
        t = tl.tensor(x, requires_grad=True)
        y = tl.hard_masked_softmax(t, mask)
        y.backward(g)
        assert t.grad is not None
        out, dx = y.numpy(), t.grad.numpy()
    assert_array_equal(out[~mask], 0.0)
    assert_array_equal(dx[~mask], 0.0)
    _same_pattern(out, S.hard_masked_softmax(x, mask), rtol, atol)
    leaf, want = _torch_masked(x.astype(np.float64), mask)
    _same_pattern(out, want.detach().numpy(), rtol, atol)
    want.backward(torch.from_numpy(g.astype(np.float64)))
    assert leaf.grad is not None
    _same_pattern(dx, leaf.grad.numpy(), rtol, atol)
    assert np.isnan(dx[:3][mask[:3]]).all()  # rows 0-2: an allowed NaN or +inf, or only -inf allowed
    assert np.isfinite(dx[3]).all()  # row 3: the allowed -inf has weight 0 and gradient 0
    assert dx[3, 1] == 0.0


def _attention_case(dtype: type) -> tuple[Array, Array, Array, Array]:
    """q (2, 3, 2), k/v (2, 4, 2); non-finite entries in allowed and in blocked (query, key) pairs."""
    r = np.random.default_rng(3)
    q, k, v = (r.standard_normal(shape).astype(dtype) for shape in ((2, 3, 2), (2, 4, 2), (2, 4, 2)))
    mask = np.ones((2, 3, 4), dtype=bool)
    mask[0, 0, 1] = mask[0, 2, 3] = False
    mask[1, 1] = False  # a fully blocked query
    mask[1, 2, :2] = False
    k[0, 1, 0] = np.inf  # key 1 of batch 0: allowed for queries 1, 2, blocked for query 0
    v[0, 3, 1] = np.nan  # value 3 of batch 0: blocked for query 2 only
    q[1, 0, 1] = -np.inf  # query 0 of batch 1: every score non-finite
    k[1, 0, 0] = np.nan  # key 0 of batch 1: blocked for queries 1 and 2
    return q, k, v, mask


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_attention_with_non_finite_scores_matches_the_spec(profile: str, dtype: type) -> None:
    """scaled_dot_product_attention shares the masked softmax (reference kernel under
    checked_cpu, the torch core under fast_cpu): forward and all three gradients have the
    spec's NaN/inf pattern and values."""
    q, k, v, mask = _attention_case(dtype)
    g = np.random.default_rng(4).standard_normal((2, 3, 2)).astype(dtype)
    rtol, atol = _tolerances(dtype)
    with tl.session(profile):
        tq, tk, tv = (tl.tensor(a, requires_grad=True) for a in (q, k, v))
        out = tl.scaled_dot_product_attention(tq, tk, tv, mask)
        out.backward(g)
        grads = [t.grad.numpy() for t in (tq, tk, tv) if t.grad is not None]
        got = out.numpy()
    assert len(grads) == 3
    _same_pattern(got, S.scaled_dot_product_attention(q, k, v, mask), rtol, atol)
    assert_array_equal(got[1, 1], 0.0)
    # query 0 of batch 0 never reads the +inf key 1 (blocked), but reads the NaN in value 3
    assert np.isfinite(got[0, 0, 0]) and np.isnan(got[0, 0, 1])
    for mine, want in zip(grads, S.scaled_dot_product_attention_backward(q, k, v, g, mask), strict=True):
        _same_pattern(mine, want, rtol, atol)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("label", ["softmax", "log_softmax"])
def test_unmasked_normalisations_on_non_finite_rows_match_torch(profile: str, label: str) -> None:
    x = np.array([[np.inf, 1.0, 5.0], [np.nan, 0.0, 1.0], [-np.inf, 0.0, 2.0], [-np.inf, -np.inf, -np.inf]])
    g = np.array([[1.0, -2.0, 0.5]] * 4)
    with tl.session(profile):
        t = tl.tensor(x, requires_grad=True)
        y = getattr(tl, label)(t)
        y.backward(g)
        assert t.grad is not None
        out, dx = y.numpy(), t.grad.numpy()
    leaf = torch.tensor(x, requires_grad=True)
    want = getattr(torch, label)(leaf, -1)
    want.backward(torch.from_numpy(g))
    assert leaf.grad is not None
    _same_pattern(out, want.detach().numpy(), 1e-12, 1e-14)
    _same_pattern(dx, leaf.grad.numpy(), 1e-10, 1e-12)
