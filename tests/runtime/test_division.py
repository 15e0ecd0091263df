"""``div`` by divisors whose reciprocal overflows (the subnormals): the quotient follows torch.

``div`` records ``inv`` then ``mul`` (the catalog has no division); ``inv`` of a subnormal is
``±inf``, so without the exact power-of-two rescaling the quotient was ``±inf`` (or NaN for
``0 / b``) where ``torch.div`` is finite. Oracle: torch's division in float64 of the same
(exactly representable) values, rounded to the dtype.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.autograd import storage

PROFILES = ("checked_cpu", "fast_cpu", "libtorch_forward_cpu")
DTYPES = (np.float32, np.float64)


def _subnormal_pairs(dtype: type[np.floating]) -> tuple[np.ndarray, np.ndarray]:
    info = np.finfo(dtype)
    tiny = float(info.smallest_subnormal)
    a = np.array([tiny * 3, tiny * 1000, 0.0, -0.0, 1.0, -2.5, tiny, 7.0, np.inf, np.nan], dtype=dtype)
    b = np.array([tiny * 7, tiny * 3, tiny, -tiny * 5, 0.5, 4.0, -tiny * 2, 0.0, tiny, tiny], dtype=dtype)
    return a, b


def _oracle(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    with np.errstate(over="ignore"):
        wide = (torch.from_numpy(a.astype(np.float64)) / torch.from_numpy(b.astype(np.float64))).numpy()
        return wide.astype(a.dtype)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_quotients_by_subnormal_divisors_follow_torch(profile: str, dtype: type[np.floating]) -> None:
    a, b = _subnormal_pairs(dtype)
    expected = _oracle(a, b)
    assert np.isfinite(expected[:7]).all()  # the cases that were inf/nan before
    eps = float(np.finfo(dtype).eps)
    with tl.session(profile):
        got = (tl.tensor(a) / tl.tensor(b)).numpy()
    assert got.dtype == dtype
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_array_equal(np.isinf(got), np.isinf(expected))
    finite = np.isfinite(expected)
    # a * (1/b) rounds twice: within 2 ulp of the correctly rounded quotient
    np.testing.assert_allclose(got[finite], expected[finite], rtol=2 * eps, atol=0)
    np.testing.assert_array_equal(np.signbit(got[finite]), np.signbit(expected[finite]))


@pytest.mark.parametrize("profile", PROFILES)
def test_numbers_on_either_side_of_a_subnormal_division(profile: str) -> None:
    tiny = 2e-39  # float32 subnormal whose reciprocal (5e38) overflows float32
    x = np.array([1e-39, -3e-39, 0.0], dtype=np.float32)
    with tl.session(profile):
        np.testing.assert_allclose((tl.tensor(x) / tiny).numpy(), _oracle(x, np.full(3, tiny, np.float32)),
                                   rtol=2e-7)
        y = np.array([4e-39, -1e-39], dtype=np.float32)
        np.testing.assert_allclose((1e-39 / tl.tensor(y)).numpy(), _oracle(np.full(2, 1e-39, np.float32), y),
                                   rtol=2e-7)


@pytest.mark.parametrize("profile", PROFILES)
def test_broadcast_subnormal_divisor_and_numerator_gradient(profile: str) -> None:
    a = np.array([[1e-300, 2e-300], [3.0, -4.0]])
    b = np.array([2e-310, 1e-3])  # the first divisor's reciprocal overflows float64
    expected = _oracle(a, np.broadcast_to(b, a.shape).copy())
    with tl.session(profile):
        x = tl.tensor(a, requires_grad=True)
        y = tl.tensor(b)
        out = x / y
        np.testing.assert_allclose(out.numpy(), expected, rtol=4.5e-16)
        out.sum().backward()
    tx = torch.tensor(a, requires_grad=True)
    (tx / torch.tensor(b)).sum().backward()
    assert x.grad is not None and tx.grad is not None
    np.testing.assert_allclose(x.grad.numpy(), tx.grad.numpy(), rtol=4.5e-16)  # [inf, 1000]


def test_ordinary_divisors_record_inv_then_mul_unchanged() -> None:
    a = np.array([1.0, 2.0, 3.0], dtype=np.float32)
    b = np.array([3.0, 7.0, 1e-30], dtype=np.float32)  # 1e-30 is normal: its reciprocal is finite
    with tl.session("checked_cpu"):
        got = (tl.tensor(a) / tl.tensor(b)).numpy()
    with np.errstate(over="ignore"):
        np.testing.assert_array_equal(got, a * np.reciprocal(b))


@pytest.mark.parametrize("dtype", DTYPES, ids=lambda d: np.dtype(d).name)
def test_reciprocal_overflow_mask_agrees_on_numpy_and_torch_storage(dtype: type[np.floating]) -> None:
    a, b = _subnormal_pairs(dtype)
    values = np.concatenate([a, b])
    # far from the boundary 1/max, "the reciprocal overflows" is "0 < |v| < 1/max" (NaN compares False)
    expected = (values != 0) & (np.abs(values.astype(np.float64)) < 1 / float(np.finfo(dtype).max))
    assert expected.sum() == 10
    np.testing.assert_array_equal(storage.reciprocal_overflows(values), expected)
    np.testing.assert_array_equal(storage.reciprocal_overflows(torch.from_numpy(values)), expected)
    ints = np.array([0, 1, -3])
    assert not storage.reciprocal_overflows(ints).any()
    assert not storage.reciprocal_overflows(torch.from_numpy(ints)).any()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_division_by_the_largest_divisor_whose_reciprocal_overflows(dtype):
    # the largest positive value whose reciprocal overflows (a subnormal near 1/finfo.max);
    # review21 mut ST1; oracle: torch's division of that value by itself is 1
    x = dtype(1) / np.finfo(dtype).max
    with np.errstate(all="ignore"):
        while not np.isinf(np.reciprocal(x)):
            x = np.nextafter(x, dtype(0))
        while np.isinf(np.reciprocal(np.nextafter(x, dtype(1)))):
            x = np.nextafter(x, dtype(1))
    a = np.array([x, -x], dtype=dtype)
    expected = (torch.from_numpy(a) / torch.from_numpy(a)).numpy()
    assert expected.tolist() == [1.0, 1.0]
    got = tl.div(tl.tensor(a), tl.tensor(a)).numpy()
    assert got.tolist() == [1.0, 1.0]
