"""``tl.logsumexp`` (review33 F1), composed of accepted kernels: values and gradients against torch
in float64 (``torch.logsumexp``, its autograd), mpmath where torch's own rounding differs from the
exact value, and hand values for the rows torch special-cases (infinite or NaN maxima, empty axes).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import GuardError
from torchlean.tensor import TensorTypeError

PROFILES = ["checked_cpu", "fast_cpu"]


def _torch(
    values: np.ndarray, axis: object, keepdims: bool, cotangent: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    x = torch.tensor(values, requires_grad=True)
    dims = tuple(range(values.ndim)) if axis is None else axis
    y = torch.logsumexp(x, dims if values.ndim else 0, keepdim=keepdims)
    y.backward(torch.tensor(cotangent))
    assert x.grad is not None
    return y.detach().numpy(), x.grad.numpy()


def _ours(
    values: np.ndarray, axis: object, keepdims: bool, cotangent: np.ndarray
) -> tuple[tl.Tensor, tl.Tensor]:
    x = tl.tensor(values, requires_grad=True)
    y = tl.logsumexp(x, axis, keepdims)  # type: ignore[arg-type]
    y.backward(tl.tensor(cotangent))
    assert x.grad is not None
    return y, x.grad


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("axis", [0, 1, 2, -1, -3, (0, 2), (2, 0), (1, 2), (0, 1, 2), None])
@pytest.mark.parametrize("keepdims", [False, True])
def test_values_and_gradients_are_torchs(profile: str, axis: object, keepdims: bool) -> None:
    rng = np.random.default_rng(7)
    values = rng.normal(0.0, 4.0, (3, 4, 5))
    expected_shape = torch.logsumexp(torch.tensor(values), tuple(range(3)) if axis is None else axis,
                                     keepdim=keepdims).shape  # type: ignore[arg-type]
    cotangent = rng.normal(size=tuple(expected_shape))
    with tl.session(profile):
        y, grad = _ours(values, axis, keepdims, cotangent)
    value, gradient = _torch(values, axis, keepdims, cotangent)
    assert y.shape == value.shape and y.dtype == np.float64
    np.testing.assert_allclose(y.numpy(), value, rtol=1e-15, atol=0)
    np.testing.assert_allclose(grad.numpy(), gradient, rtol=1e-13, atol=1e-16)


@pytest.mark.parametrize("profile", PROFILES)
def test_float32_stays_float32_within_an_ulp_or_two_of_float64(profile: str) -> None:
    rng = np.random.default_rng(3)
    values = rng.normal(0.0, 10.0, (6, 9)).astype(np.float32)
    with tl.session(profile):
        y, grad = _ours(values, 1, False, np.ones(6, np.float32))
    value, gradient = _torch(values.astype(np.float64), 1, False, np.ones(6))
    assert y.dtype == np.float32 and grad.dtype == np.float32
    np.testing.assert_allclose(y.numpy(), value, rtol=3e-7)
    np.testing.assert_allclose(grad.numpy(), gradient, rtol=2e-6, atol=1e-7)


def test_shifting_keeps_large_and_small_rows_finite_and_exact() -> None:
    """Rows where ``log(sum(exp(x)))`` unshifted overflows or underflows: the exact values, at 50
    digits, and the gradient ``softmax(x)`` (where torch's ``exp(x - result)`` rounds the result
    first: 1 and 1 for the row ``[1e308, 1e308]``, whose softmax is 0.5 and 0.5)."""
    values = np.array([[1e308, 1e308, -5.0], [-1000.0, -1000.5, -1001.0], [0.0, -800.0, 700.0]])
    y, grad = _ours(values, 1, False, np.ones(3))
    mpmath.mp.dps = 50
    for row, got, got_grad in zip(values, y.numpy(), grad.numpy(), strict=True):
        peak = mpmath.mpf(float(row.max()))
        total = mpmath.fsum(mpmath.exp(mpmath.mpf(float(v)) - peak) for v in row)
        assert got == pytest.approx(float(peak + mpmath.log(total)), rel=2e-16)
        softmax = [float(mpmath.exp(mpmath.mpf(float(v)) - peak) / total) for v in row]
        np.testing.assert_allclose(got_grad, softmax, rtol=1e-15, atol=1e-300)
    np.testing.assert_array_equal(torch.logsumexp(torch.tensor(values), 1).numpy(), y.numpy())


@pytest.mark.parametrize("profile", PROFILES)
def test_rows_with_an_infinite_or_nan_maximum_take_torchs_values(profile: str) -> None:
    inf, nan = np.inf, np.nan
    values = np.array([[-inf, -inf, -inf], [inf, 1.0, 2.0], [nan, 1.0, 2.0], [inf, nan, 0.0],
                       [1.0, -inf, 3.0], [-inf, 2.0, -inf], [0.5, 0.25, -1.0]])
    with tl.session(profile):
        y, grad = _ours(values, 1, False, np.ones(7))
    value, gradient = _torch(values, 1, False, np.ones(7))
    np.testing.assert_array_equal(y.numpy(), value)
    np.testing.assert_array_equal(y.numpy()[:4], [-inf, inf, nan, nan])
    # rows with a finite maximum: torch's gradient, 0 at the -inf entries; the others torch's too:
    # NaN throughout a row of -inf or one holding NaN, in a row holding inf NaN at its inf entry
    # and 0 elsewhere (exp(x - m) / sum with m = 0 there, as torch's exp(x - inf))
    np.testing.assert_allclose(grad.numpy()[4:], gradient[4:], rtol=1e-15)
    assert grad.numpy()[5, 0] == 0.0 and grad.numpy()[4, 1] == 0.0
    np.testing.assert_array_equal(grad.numpy()[:4], gradient[:4])
    np.testing.assert_array_equal(grad.numpy()[1], [nan, 0.0, 0.0])
    assert np.isnan(grad.numpy()[[0, 2, 3]]).all()


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("dtype", "big"), [(np.float32, 89.0), (np.float64, 800.0)])
def test_a_finite_entry_whose_exp_overflows_beside_inf_has_torchs_zero_gradient(
    profile: str, dtype: type, big: float
) -> None:
    """review210 F1: shifted by 0 in a row holding inf, a finite entry whose exp overflows got
    inf / inf = NaN; torch's exp(x - inf) is 0 there. The shift is now the row's largest finite
    entry. Oracle: torch, and by hand [NaN, 0, 0]."""
    values = np.array([[np.inf, big, 0.0], [np.inf, -np.inf, big]], dtype)
    with tl.session(profile):
        y, grad = _ours(values, 1, False, np.ones(2, dtype))
    value, gradient = _torch(values, 1, False, np.ones(2, dtype))
    np.testing.assert_array_equal(y.numpy(), value)
    np.testing.assert_array_equal(grad.numpy(), gradient)
    np.testing.assert_array_equal(grad.numpy(), [[np.nan, 0.0, 0.0], [np.nan, 0.0, 0.0]])


@pytest.mark.parametrize("profile", PROFILES)
def test_the_gradient_at_the_maximum_is_as_accurate_as_elsewhere(profile: str) -> None:
    """review209 F1: composed through log_softmax, the row maximum's gradient was ``1 + (p - 1)``,
    off by about eps / (2 p) relative: 1.7e-4 in a float32 row of 10**4 equal entries (torch:
    9.8e-8). Oracle: softmax in float64: 1/n for n equal entries (whose float32 sum is exact), and
    for near-equal ones the error at the maximum within that of the other entries (which carries
    the float32 sum's rounding, a left fold's under checked_cpu)."""
    eps = float(np.finfo(np.float32).eps)
    n = 10_000
    with tl.session(profile):
        _, grad = _ours(np.zeros((1, n), np.float32), 1, False, np.ones(1, np.float32))
    np.testing.assert_allclose(grad.numpy(), np.full((1, n), 1 / n), rtol=eps, atol=0)
    near = (np.random.default_rng(3).standard_normal((2, 4096)) * 1e-3).astype(np.float32)
    with tl.session(profile):
        _, grad = _ours(near, 1, False, np.ones(2, np.float32))
    wide = near.astype(np.float64)
    oracle = np.exp(wide - wide.max(1, keepdims=True))
    oracle /= oracle.sum(1, keepdims=True)
    error = np.abs(grad.numpy() - oracle) / oracle
    for row, at in enumerate(near.argmax(1)):
        others = np.delete(error[row], at)
        assert error[row, at] <= others.max() + 2 * eps, (row, error[row, at], others.max())
        assert others.max() < 1e-5


@pytest.mark.parametrize("profile", PROFILES)
def test_ties_nan_free_one_element_and_rank_0(profile: str) -> None:
    with tl.session(profile):
        tie, tie_grad = _ours(np.array([[2.0, 2.0, 2.0, 2.0]]), 1, False, np.ones(1))
        assert tie.numpy()[0] == 2.0 + np.log(4.0)
        np.testing.assert_array_equal(tie_grad.numpy(), [[0.25, 0.25, 0.25, 0.25]])
        one, one_grad = _ours(np.array([[-3.5]]), 1, True, np.ones((1, 1)))
        assert one.shape == (1, 1) and one.numpy()[0, 0] == -3.5 and one_grad.numpy()[0, 0] == 1.0
        for axis in (0, -1):
            scalar, scalar_grad = _ours(np.array(1.25), axis, False, np.array(2.0))
            assert scalar.shape == () and scalar.numpy() == 1.25 and scalar_grad.numpy() == 2.0


EMPTY = [((3, 0), 1), ((2, 0, 3), (1, 2)), ((0,), 0), ((0, 3), 1), ((0, 3), 0)]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("shape", "axis"), EMPTY)
def test_an_empty_axis_gives_minus_inf_and_an_empty_batch_nothing(
    profile: str, shape: tuple[int, ...], axis: object
) -> None:
    values = np.zeros(shape)
    expected = torch.logsumexp(torch.zeros(shape), axis).numpy()  # type: ignore[arg-type]
    with tl.session(profile):
        x = tl.tensor(values, requires_grad=True)
        y = tl.logsumexp(x, axis)  # type: ignore[arg-type]
        assert y.shape == expected.shape
        np.testing.assert_array_equal(y.numpy(), expected)
        tl.reduce_sum(y).backward()
    assert x.grad is not None and x.grad.shape == shape


def test_the_method_is_the_function_bit_for_bit_and_records_accepted_kernels() -> None:
    rng = np.random.default_rng(1)
    values = rng.normal(size=(2, 3, 4))
    with tl.session("checked_cpu") as session:
        x = tl.tensor(values)
        y = x.logsumexp((0, 2), keepdim=True)
        np.testing.assert_array_equal(y.numpy(), tl.logsumexp(x, (0, 2), keepdims=True).numpy())
        assert y.shape == (1, 3, 1)
        ran = {kernel.op.label for kernel in session.selected}
    # review211 F2: the shift m (most of the result where one entry dominates) comes from a gather
    assert {"permute", "reshape", "gather", "sub", "exp", "reduce_sum", "log", "add"} <= ran
    assert not {"log_softmax", "concat"} & ran  # concat only where a row's maximum is infinite
    with tl.session("checked_cpu") as session:
        tl.logsumexp(tl.tensor(np.array([[np.inf, 1.0], [0.0, 1.0]])), 1)
    assert "concat" in {kernel.op.label for kernel in session.selected}
    assert y.produced_by is not None and y.produced_by.capsule.name == "reference.reshape"


def test_bad_arguments_are_refused_naming_the_value() -> None:
    x = tl.tensor(np.ones((2, 3)))
    with pytest.raises(GuardError, match=r"logsumexp: input x has dtype int64; accepted: float32 or float64"):
        tl.logsumexp(tl.tensor(np.ones(3, np.int64)), 0)
    with pytest.raises(GuardError, match=r"logsumexp: axis 2 is out of range for a rank-2 input"):
        tl.logsumexp(x, 2)
    with pytest.raises(GuardError, match=r"logsumexp: axis \(1, -1\) repeats an axis"):
        tl.logsumexp(x, (1, -1))
    with pytest.raises(GuardError, match=r"logsumexp: axis \(\) is ambiguous"):
        tl.logsumexp(x, ())
    with pytest.raises(TensorTypeError, match=r"logsumexp: axis must be an integer; got 1\.0"):
        tl.logsumexp(x, 1.0)  # type: ignore[arg-type]
    with pytest.raises(TensorTypeError, match="logsumexp: keepdims must be a bool; got 1"):
        tl.logsumexp(x, 1, keepdims=1)  # type: ignore[arg-type]
    with pytest.raises(TensorTypeError, match="logsumexp: x must be a torchlean Tensor; got ndarray"):
        tl.logsumexp(np.ones(3), 0)  # type: ignore[arg-type]
