"""The float32 accuracy of a left fold that README (Profiles in detail) and ``reduce_sum``'s
docstring state (review100 M3): terms of one sign are the worst case. Oracles: numpy's
``cumsum`` in float32, a sequential left fold (numpy accumulates in order, unlike ``np.sum``'s
pairwise sum), and the exact value 0.1 * n."""

from __future__ import annotations

import numpy as np
import pytest

import torchlean as tl


@pytest.mark.parametrize(("n", "shown"), [(10**6, "0.100958"), (10**7, "0.1088")])
def test_a_float32_mean_of_one_signed_terms_is_as_far_off_as_documented(n: int, shown: str) -> None:
    x = np.full(n, 0.1, np.float32)
    folded = np.cumsum(x, dtype=np.float32)[-1]
    with tl.session("checked_cpu"):
        total = tl.reduce_sum(tl.tensor(x)).item()
        mean = tl.reduce_mean(tl.tensor(x)).item()
    assert total == float(folded)
    assert mean == float(np.float32(folded) / np.float32(n))
    assert f"{mean:.{len(shown) - 2}f}" == shown
    assert abs(mean - 0.1) / 0.1 > 9e-3  # about a percent and more off, as README says
    with tl.session("fast_cpu"):
        assert tl.reduce_mean(tl.tensor(x)).item() == pytest.approx(0.1, rel=1e-6)
    with tl.session("checked_cpu"):  # float64, the advice: accurate again
        exact = float(np.float32(0.1))  # the float32 value summed, in float64
        assert tl.reduce_mean(tl.tensor(x.astype(np.float64))).item() == pytest.approx(exact, rel=1e-9)


def test_the_sum_in_reduce_sums_docstring() -> None:
    x = np.full(10**6, 0.1, np.float32)
    total = tl.reduce_sum(tl.tensor(x)).item()
    assert f"{total:.2f}" == "100958.34"
    assert "100958.34" in (tl.reduce_sum.__doc__ or "")
