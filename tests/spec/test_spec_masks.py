"""Boolean masks and the hard-masked softmax: seed-chapter examples and edge semantics.

Oracles: the printed values of the seed chapter / anchor-runtime.md §5.2, hand-computed
exponentials, PyTorch's ``torch.nn.attention.bias`` masks, and mpmath.
"""

from __future__ import annotations

import math
import warnings

import mpmath
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp

from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.spec import SpecTypeError, SpecValueError, as_mpf_array, causal_mask, hard_masked_softmax

SCORES = np.array([[1.0, 2.0, 3.0], [0.5, 0.0, -0.5], [2.0, 2.0, 2.0]])


def ordinary_softmax(x: np.ndarray) -> np.ndarray:
    """Test-local plain row softmax (the sentinel route the seed chapter warns against)."""
    e = np.exp(x - x.max(axis=-1, keepdims=True))
    return np.asarray(e / e.sum(axis=-1, keepdims=True))


def sentinel_softmax(scores: np.ndarray, mask: np.ndarray, sentinel: float) -> np.ndarray:
    return ordinary_softmax(np.where(mask, scores, sentinel))


def fmt(x: np.ndarray) -> list[list[str]]:
    return [[f"{v:.6f}" for v in row] for row in np.atleast_2d(x)]


# --- causal masks -------------------------------------------------------------------------------


def test_causal_mask_square_is_lower_triangular() -> None:
    expected = np.array(
        [[True, False, False, False], [True, True, False, False], [True, True, True, False], [True] * 4]
    )
    for align in ("upper_left", "lower_right"):
        got = causal_mask(4, align=align)
        assert got.dtype == np.bool_
        np.testing.assert_array_equal(got, expected)


def test_causal_alignments_match_pytorch_peers_example() -> None:
    # peers.md §1.6, (L, S) = (3, 4)
    upper = [[1, 0, 0, 0], [1, 1, 0, 0], [1, 1, 1, 0]]
    lower = [[1, 1, 0, 0], [1, 1, 1, 0], [1, 1, 1, 1]]
    np.testing.assert_array_equal(causal_mask(3, 4, align="upper_left"), np.array(upper, dtype=bool))
    np.testing.assert_array_equal(causal_mask(3, 4, align="lower_right"), np.array(lower, dtype=bool))


@pytest.mark.parametrize(("n_q", "n_k"), [(1, 1), (3, 4), (4, 3), (5, 2), (2, 5), (6, 6), (0, 3), (3, 0)])
def test_causal_masks_equal_torch_causal_bias(n_q: int, n_k: int) -> None:
    from torch.nn.attention.bias import causal_lower_right, causal_upper_left

    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns about NaN rows when n_q > n_k
        lower = causal_lower_right(n_q, n_k)._materialize().numpy()
    upper = causal_upper_left(n_q, n_k)._materialize().numpy()
    np.testing.assert_array_equal(causal_mask(n_q, n_k, align="lower_right"), lower)
    np.testing.assert_array_equal(causal_mask(n_q, n_k, align="upper_left"), upper)
    np.testing.assert_array_equal(causal_mask(n_q, n_k), np.tril(np.ones((n_q, n_k), dtype=bool)))


def test_lower_right_with_more_queries_blocks_top_rows() -> None:
    mask = causal_mask(5, 2, align="lower_right")
    assert not mask[:3].any()
    np.testing.assert_array_equal(mask[3:], [[True, False], [True, True]])


def test_causal_mask_errors() -> None:
    with pytest.raises(UnknownLabelError, match=r"'diagonal'.*upper_left, lower_right"):
        causal_mask(3, align="diagonal")
    with pytest.raises(SpecValueError, match="n_q must be >= 0, got -1"):
        causal_mask(-1)
    with pytest.raises(SpecValueError, match="n_k must be >= 0, got -2"):
        causal_mask(2, -2)
    with pytest.raises(SpecTypeError, match="n_q must be an int"):
        causal_mask(2.0)  # type: ignore[arg-type]
    with pytest.raises(SpecTypeError):
        causal_mask(True)
    assert issubclass(SpecValueError, TorchLeanError) and issubclass(SpecValueError, ValueError)


# --- seed examples ------------------------------------------------------------------------------


def test_seed_causal_three_by_three_weights() -> None:
    weights = hard_masked_softmax(SCORES, causal_mask(3))
    assert fmt(weights) == [
        ["1.000000", "0.000000", "0.000000"],
        ["0.622459", "0.377541", "0.000000"],
        ["0.333333", "0.333333", "0.333333"],
    ]
    # exact structure: blocked entries are exactly 0, row two has ratio exp(0.5) : exp(0)
    assert weights[0, 1] == 0.0 and weights[0, 2] == 0.0 and weights[1, 2] == 0.0
    assert weights[0, 0] == 1.0
    e = math.exp(0.5)
    np.testing.assert_allclose(weights[1, :2], [e / (e + 1), 1 / (e + 1)], rtol=1e-15)
    np.testing.assert_allclose(weights[2], [1 / 3] * 3, rtol=1e-15)


def test_seed_sentinel_leak_triple() -> None:
    mask = causal_mask(3)
    leak_30 = sentinel_softmax(SCORES, mask, -30.0)[0, 2] * 1e12
    leak_1e30 = sentinel_softmax(SCORES, mask, -1e30)[0, 2]
    hard = hard_masked_softmax(SCORES, mask)[0, 2]
    assert f"({leak_30:.6f}, {leak_1e30:.6f}, {hard:.6f})" == "(0.034425, 0.000000, 0.000000)"
    # by hand: exp(-31) / (1 + 2 exp(-31)) * 1e12
    assert leak_30 == pytest.approx(math.exp(-31) / (1 + 2 * math.exp(-31)) * 1e12, rel=1e-12)
    assert leak_30 > 0 and hard == 0.0


def test_seed_all_blocked_hard_mask_is_zero_while_sentinel_is_uniform() -> None:
    blocked = np.zeros((3, 3), dtype=bool)
    hard = hard_masked_softmax(SCORES, blocked)
    assert fmt(hard) == [["0.000000"] * 3] * 3
    assert np.all(hard == 0.0)
    sentinel = sentinel_softmax(SCORES, blocked, -1.0e30)
    assert fmt(sentinel) == [["0.333333"] * 3] * 3


def test_seed_gpu_chapter_examples() -> None:
    scores = np.array([-5000.0, -1000.0])
    mask = np.array([True, False])
    assert fmt(sentinel_softmax(scores, mask, -1000.0)) == [["0.000000", "1.000000"]]
    assert fmt(hard_masked_softmax(scores, mask)) == [["1.000000", "0.000000"]]
    rows = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    masks = np.array([[True, True, False], [False, False, False]])
    assert fmt(hard_masked_softmax(rows, masks)) == [
        ["0.268941", "0.731059", "0.000000"],
        ["0.000000", "0.000000", "0.000000"],
    ]
    assert f"{math.exp(-1000.0):.6f}" == "0.000000"


# --- semantics ----------------------------------------------------------------------------------


def test_non_boolean_mask_is_refused_with_dtype_and_bias_hint() -> None:
    with pytest.raises(TypeError, match=r"dtype float64.*additive score biases are a separate operation"):
        hard_masked_softmax(SCORES, np.tril(np.ones((3, 3))))
    with pytest.raises(SpecTypeError) as caught:  # review223 F6: integers are no bias
        hard_masked_softmax(SCORES, np.tril(np.ones((3, 3), dtype=np.int64)))
    assert str(caught.value) == ("mask must be a boolean array (True = the key may be attended), got dtype "
                                 "int64; convert 0/1 integers with mask.astype(bool)")


def test_nan_and_inf_at_blocked_positions_never_reach_the_output() -> None:
    scores = SCORES.copy()
    scores[0, 1] = np.nan
    scores[0, 2] = np.inf
    scores[1, 2] = -np.inf
    weights = hard_masked_softmax(scores, causal_mask(3))
    assert np.all(np.isfinite(weights))
    np.testing.assert_array_equal(weights, hard_masked_softmax(SCORES, causal_mask(3)))
    all_nan = np.full((2, 3), np.nan)
    np.testing.assert_array_equal(hard_masked_softmax(all_nan, np.zeros((2, 3), dtype=bool)), 0.0)


def test_nan_at_allowed_position_propagates() -> None:
    scores = SCORES.copy()
    scores[2, 0] = np.nan
    weights = hard_masked_softmax(scores, causal_mask(3))
    assert np.all(np.isnan(weights[2]))
    assert np.all(np.isfinite(weights[:2]))


def test_axis_argument_and_mask_broadcasting() -> None:
    mask = causal_mask(3)
    along_rows = hard_masked_softmax(SCORES.T, mask.T, axis=0)
    np.testing.assert_array_equal(along_rows, hard_masked_softmax(SCORES, mask).T)
    batched = np.stack([SCORES, SCORES + 1.0])
    got = hard_masked_softmax(batched, mask)  # mask broadcasts over the leading axis
    np.testing.assert_allclose(got[1], hard_masked_softmax(SCORES, mask), rtol=1e-15)
    key_mask = np.array([True, False, True])  # one mask per key, broadcast over rows
    got = hard_masked_softmax(SCORES, key_mask)
    assert np.all(got[:, 1] == 0.0)
    # review102 L4: the refusals say what is accepted
    with pytest.raises(SpecValueError) as caught:
        hard_masked_softmax(SCORES, mask, axis=2)
    assert str(caught.value) == ("axis 2 is out of range for scores of rank 2 (accepted: an integer in "
                                 "[-2, 1])")
    with pytest.raises(SpecValueError) as caught:
        hard_masked_softmax(SCORES, np.ones((2, 2), dtype=bool))
    assert str(caught.value) == (
        f"scores of shape {SCORES.shape} and mask of shape (2, 2) do not broadcast (accepted: shapes that "
        "agree on each trailing axis or have extent 1 there, numpy's broadcasting)")


def test_rank_zero_is_one_if_allowed_else_zero() -> None:
    assert hard_masked_softmax(np.float64(4.2), np.True_) == 1.0
    assert hard_masked_softmax(np.float64(np.nan), np.False_) == 0.0


def test_empty_axis_gives_empty_result() -> None:
    assert hard_masked_softmax(np.zeros((2, 0)), np.zeros((2, 0), dtype=bool)).shape == (2, 0)


def test_float32_computes_in_float32_and_integers_are_refused() -> None:
    weights = hard_masked_softmax(SCORES.astype(np.float32), causal_mask(3))
    assert weights.dtype == np.float32
    np.testing.assert_allclose(weights, hard_masked_softmax(SCORES, causal_mask(3)), rtol=1e-6)
    with pytest.raises(SpecTypeError, match="scores has dtype int64"):
        hard_masked_softmax(np.arange(3), np.ones(3, dtype=bool))


def test_mpmath_path_matches_exact_exponentials_at_50_digits() -> None:
    with mpmath.workdps(50):
        weights = hard_masked_softmax(as_mpf_array(SCORES), causal_mask(3))
        assert weights.dtype == object and all(isinstance(w, mpmath.mpf) for w in weights.flat)
        e = mpmath.exp(mpmath.mpf("0.5"))
        assert abs(weights[1, 0] - e / (e + 1)) < mpmath.mpf("1e-48")
        assert weights[0, 2] == 0 and weights[1, 2] == 0
        assert abs(weights[2, 1] - mpmath.mpf(1) / 3) < mpmath.mpf("1e-48")


@settings(max_examples=60, deadline=None)
@given(
    scores=hnp.arrays(
        np.float64,
        hnp.array_shapes(min_dims=1, max_dims=3, max_side=6),
        elements=st.floats(-50, 50),
    ),
    data=st.data(),
)
def test_hard_mask_properties(scores: np.ndarray, data: st.DataObject) -> None:
    mask = data.draw(hnp.arrays(np.bool_, scores.shape))
    poisoned = np.where(mask, scores, np.nan)
    weights = hard_masked_softmax(poisoned, mask)
    assert np.all(np.isfinite(weights))
    assert np.all(weights[~mask] == 0.0)
    assert np.all(weights >= 0.0)
    sums = weights.sum(axis=-1)
    has_any = mask.any(axis=-1)
    np.testing.assert_allclose(sums[has_any], 1.0, rtol=1e-12)
    assert np.all(sums[~has_any] == 0.0)
    # oracle: torch softmax over masked_fill(-inf) on rows with an allowed key
    reference = torch.softmax(
        torch.from_numpy(scores).masked_fill(~torch.from_numpy(mask), float("-inf")), dim=-1
    ).numpy()
    np.testing.assert_allclose(weights[has_any], reference[has_any], rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("score", [2.0, -1e30, float("nan"), float("inf"), -float("inf")])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_zero_rank_score_is_a_one_element_row(score: float, dtype: type) -> None:
    """As torch.softmax of a 0-d tensor and the spec's own one-element rows: 1 when allowed and
    finite, NaN for an allowed NaN or infinite score (exp(s - s)), 0 when blocked whatever it holds;
    the mpmath path agrees."""
    value = np.asarray(score, dtype=dtype)
    allowed = hard_masked_softmax(value, True)
    expected = torch.softmax(torch.tensor(value), 0).item()
    assert allowed.shape == () and allowed.dtype == dtype
    np.testing.assert_array_equal(allowed, np.asarray(expected, dtype=dtype))
    np.testing.assert_array_equal(allowed, hard_masked_softmax(value.reshape(1), np.array([True]))[0])
    assert hard_masked_softmax(value, False) == 0.0
    exact = hard_masked_softmax(np.array(mpmath.mpf(float(value)), dtype=object), True)
    assert (mpmath.isnan(exact[()]) and math.isnan(expected)) or exact[()] == expected


def test_a_none_mask_allows_every_entry() -> None:
    """As ``mask=None`` in the attention specifications: the stable softmax (torch.softmax)."""
    scores = np.array([[1.0, 2.0, 3.0], [1e300, -1e300, 0.0]])
    np.testing.assert_allclose(
        hard_masked_softmax(scores, None), torch.softmax(torch.from_numpy(scores), -1).numpy(), rtol=1e-15
    )
    np.testing.assert_array_equal(hard_masked_softmax(scores, None), hard_masked_softmax(scores, np.True_))


def test_complex_scores_are_refused_naming_their_dtype() -> None:
    """Only real floating (or mpmath) scores: a complex softmax has no ordering of scores
    (torch's softmax accepts complex, so it is no oracle here; the spec's documented refusal is)."""
    with pytest.raises(SpecTypeError, match=r"^scores has dtype complex128; accepted: a floating dtype"):
        hard_masked_softmax(np.array([1 + 0j, 2 + 0j]), None)
    with pytest.raises(SpecTypeError, match=r"^scores has dtype complex64; accepted: a floating dtype"):
        hard_masked_softmax(np.array([1, 2], dtype=np.complex64), np.ones(2, dtype=bool))


def test_a_long_ragged_mask_is_shown_shortened_in_the_refusal() -> None:
    ragged = [[True] * 50, [True]]
    refusal = r"^mask \[\[True, True, .*\.\.\. is not a rectangular array: "
    with pytest.raises(SpecValueError, match=refusal) as info:
        hard_masked_softmax(np.zeros((2, 50)), ragged)
    shown = str(info.value).split(" is not a rectangular array")[0]
    assert len(shown) == len("mask ") + 80 and shown.endswith("...")
    assert repr(ragged)[:77] in shown
