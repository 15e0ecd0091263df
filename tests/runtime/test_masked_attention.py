"""The torch attention core (``torchlean.backend.providers.masked_attention``) shared by
``aten.scaled_dot_product_attention`` and ``torchlean.composed_attention``.

Oracles: :func:`selected_matmul` against an element-by-element IEEE sum over the allowed terms in
Python floats (hypothesis places NaN/inf anywhere in ``b``); the hard-masked softmax against
hand-computed rows; empty key sets against the rule "a row with no allowed key is zero".
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean.backend.providers import masked_attention
from torchlean.backend.providers.aten import kernels as aten

VALUES = st.sampled_from([0.0, -0.0, 1.0, -2.5, 0.5, 3.0, math.nan, math.inf, -math.inf])
FINITE = st.sampled_from([0.0, 1.0, -2.5, 0.5, 3.0, -1.25])
BOOLS = st.booleans()


def _ieee_sum(terms: list[float]) -> float:
    """The value any summation order gives when a term is non-finite; else ``math.fsum``."""
    if any(math.isnan(t) for t in terms) or (math.inf in terms and -math.inf in terms):
        return math.nan
    if math.inf in terms:
        return math.inf
    if -math.inf in terms:
        return -math.inf
    return math.fsum(terms)


@st.composite
def _selected_case(draw: st.DrawFn) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    batch, m, n, c = (draw(st.integers(1, 3)) for _ in range(4))

    def draw_tensor(elements: st.SearchStrategy[Any], *shape: int) -> torch.Tensor:
        size = math.prod(shape)
        values = draw(st.lists(elements, min_size=size, max_size=size))
        dtype = torch.bool if elements is BOOLS else torch.float64
        return torch.tensor(values, dtype=dtype).reshape(shape)

    allowed = draw_tensor(BOOLS, batch, m, n)
    a = torch.where(allowed, draw_tensor(FINITE, batch, m, n), 0.0)
    return a, allowed, draw_tensor(VALUES, batch, n, c)


@settings(max_examples=150, deadline=None)
@given(_selected_case())
def test_selected_matmul_counts_non_finite_terms_only_at_allowed_entries(
    case: tuple[torch.Tensor, torch.Tensor, torch.Tensor],
) -> None:
    a, allowed, b = case
    got = masked_attention.selected_matmul(a, allowed, b, b_finite=False)
    for n_, i, c in np.ndindex(*got.shape):
        # Python floats are IEEE doubles: 0 * inf is NaN here as in the matmul
        terms = [float(a[n_, i, j]) * float(b[n_, j, c]) for j in range(a.shape[-1]) if allowed[n_, i, j]]
        want, value = _ieee_sum(terms), float(got[n_, i, c])
        if math.isnan(want):
            assert math.isnan(value), (n_, i, c, terms, value)
        else:
            assert value == pytest.approx(want, rel=1e-12, abs=1e-12), (n_, i, c, terms, value)


def test_selected_matmul_is_a_plain_matmul_when_b_is_finite_or_nothing_is_masked() -> None:
    a = torch.tensor([[[0.5, 0.0], [0.25, 0.75]]], dtype=torch.float64)
    b = torch.tensor([[[2.0], [4.0]]], dtype=torch.float64)
    allowed = torch.tensor([[[True, False], [True, True]]])
    want = torch.tensor([[[1.0], [3.5]]], dtype=torch.float64)  # by hand
    for got in (
        masked_attention.selected_matmul(a, allowed, b, b_finite=True),
        masked_attention.selected_matmul(a, allowed, b, b_finite=False),
        masked_attention.selected_matmul(a, None, b, b_finite=False),
    ):
        assert torch.equal(got, want)


def test_selected_matmul_in_float32_keeps_the_nan_of_an_allowed_term_only() -> None:
    a = torch.tensor([[[0.5, 0.0], [0.25, 0.75]]], dtype=torch.float32)
    allowed = torch.tensor([[[True, False], [True, True]]])
    b = torch.tensor([[[2.0], [math.nan]]], dtype=torch.float32)  # key 1: blocked for row 0 only
    got = masked_attention.selected_matmul(a, allowed, b, b_finite=False)
    assert got.dtype == torch.float32 and got[0, 0, 0].item() == 1.0 and math.isnan(got[0, 1, 0].item())


def test_all_finite() -> None:
    assert masked_attention.all_finite()
    assert masked_attention.all_finite(torch.zeros(0), torch.ones(2, 3))
    assert not masked_attention.all_finite(torch.ones(2), torch.tensor([1.0, math.inf]))
    assert not masked_attention.all_finite(torch.tensor([math.nan]), torch.zeros(0))


def test_hard_masked_softmax_rows_by_hand() -> None:
    scores = torch.tensor(
        [[0.0, math.log(3.0), math.nan], [math.nan, math.inf, 1.0], [2.0, 2.0, 2.0]], dtype=torch.float64
    )
    allowed = torch.tensor([[True, True, False], [False, False, False], [True, False, True]])
    got = masked_attention.hard_masked_softmax(scores, allowed)
    want = torch.tensor([[0.25, 0.75, 0.0], [0.0, 0.0, 0.0], [0.5, 0.0, 0.5]], dtype=torch.float64)
    torch.testing.assert_close(got, want, rtol=1e-15, atol=0.0)
    # NaN at an allowed entry: the row is NaN at its allowed entries, blocked ones stay exactly 0
    row = masked_attention.hard_masked_softmax(
        torch.tensor([[1.0, math.nan, 5.0]], dtype=torch.float64), torch.tensor([[True, True, False]])
    )
    assert math.isnan(row[0, 0].item()) and math.isnan(row[0, 1].item()) and row[0, 2].item() == 0.0


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_aten_attention_with_an_empty_key_set_is_zero_in_value_and_gradient(dtype: Any) -> None:
    """n_k = 0 with a mask: every query row is fully blocked, so the output and dq are zeros."""
    q = np.ones((2, 3, 4), dtype=dtype)
    k, v = np.ones((2, 0, 4), dtype=dtype), np.ones((2, 0, 5), dtype=dtype)
    for mask in (None, np.ones((3, 0), dtype=bool)):
        out = aten.scaled_dot_product_attention(q, k, v, mask)
        assert out.shape == (2, 3, 5) and out.dtype == dtype and not out.any()
        dq, dk, dv, dmask = aten.scaled_dot_product_attention_vjp(np.ones_like(out), q, k, v, mask, out=out)
        assert dq is not None and dk is not None and dv is not None and dmask is None
        assert dq.shape == q.shape and not dq.any()
        assert dk.shape == k.shape and dv.shape == v.shape


def test_a_zero_scale_is_a_scale_not_the_default() -> None:
    """scale=0.0 gives all-zero scores, so uniform weights over the allowed keys (the mean of their
    values), as torch's SDPA; it must not fall back to 1/sqrt(d)."""
    rng = np.random.default_rng(22)
    q, k, v = (rng.standard_normal(shape) for shape in ((1, 3, 4), (1, 5, 4), (1, 5, 2)))
    want = torch.nn.functional.scaled_dot_product_attention(
        torch.tensor(q), torch.tensor(k), torch.tensor(v), scale=0.0
    ).numpy()
    np.testing.assert_allclose(want, np.broadcast_to(v.mean(axis=1, keepdims=True), (1, 3, 2)), rtol=1e-14)
    got = aten.scaled_dot_product_attention(q, k, v, None, scale=0.0)
    np.testing.assert_allclose(np.asarray(got), want, rtol=1e-12, atol=1e-12)
    assert masked_attention.default_scale(4, 0.0) == 0.0
    assert masked_attention.default_scale(4, None) == 0.5


@pytest.mark.parametrize("scale", [1e39, -1e39, 3.5e38])
def test_a_scale_that_is_inf_in_float32_keeps_blocked_rows_zero_in_the_gradient(scale: float) -> None:
    """A scale float32 cannot hold is ±inf there: the score cotangent of a blocked entry was
    ``0 * inf = NaN`` and reached dq of fully blocked rows (review40 F1; the reference gives 0).
    Oracle, by hand: a fully blocked row's output and dq are exactly 0; an allowed row is NaN
    (its scores are ±inf or NaN), as the reference provider gives."""
    from torchlean.backend.providers.reference import kernels as reference

    rng = np.random.default_rng(3)
    q, k, v = (rng.standard_normal(shape).astype(np.float32) for shape in ((2, 3, 4), (2, 5, 4), (2, 5, 2)))
    mask = np.ones((3, 5), dtype=bool)
    mask[1] = False
    out = aten.scaled_dot_product_attention(q, k, v, mask, scale=scale)
    cotangent = np.ones_like(out)
    dq, dk, dv, _ = aten.scaled_dot_product_attention_vjp(cotangent, q, k, v, mask, out=out, scale=scale)
    assert dq is not None and dk is not None and dv is not None
    assert not out[:, 1].any() and not dq[:, 1].any()
    assert np.isnan(out[:, [0, 2]]).all() and np.isnan(dq[:, [0, 2]]).all()
    ref_out = reference.scaled_dot_product_attention(q, k, v, mask, scale=scale)
    ref_grads = reference.scaled_dot_product_attention_vjp(cotangent, q, k, v, mask, out=ref_out, scale=scale)
    np.testing.assert_array_equal(out, ref_out)
    for got, want in zip((dq, dk, dv), ref_grads[:3], strict=True):
        np.testing.assert_array_equal(got, want)
