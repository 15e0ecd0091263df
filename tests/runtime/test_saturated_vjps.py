"""The VJPs of sigmoid and tanh where the output rounds to ±1 (review166 F1), under the reference
(``checked_cpu``) and the aten capsules (``fast_cpu``), against mpmath evaluated at the rounded
input; and cross_entropy's zero loss is +0.0, as torch's (review166 F2).

torch's ``sigmoid_backward`` (``g * out * (1 - out)``) and ``tanh_backward`` (``g * (1 - out**2)``)
cancel there: float32 ``sigmoid'(20)`` came out 0 against 2.06e-9. Both providers now evaluate
the reference's rule from the input (the native CUDA one too: tests/cuda/test_emulated_edge_cases).
"""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.providers.reference import kernels as reference

mpmath.mp.dps = 50

_POINTS = [-745.0, -40.0, -20.0, -8.0, -3.0, -1e-30, -0.0, 0.0, 0.5, 3.0, 8.0, 16.7, 20.0, 40.0, 100.0]
_TOLERANCE = {np.float32: 4 * 2.0**-24, np.float64: 8 * 2.0**-53}  # a few ulp, relative


def _sigmoid_slope(x: float) -> float:
    with mpmath.workdps(400):  # 1 - s keeps its digits down to exp(-745)
        s = 1 / (1 + mpmath.exp(-mpmath.mpf(x)))
        return float(s * (1 - s))


def _tanh_slope(x: float) -> float:
    return float(1 / mpmath.cosh(mpmath.mpf(x)) ** 2)


def _gradient(op: str, x: np.ndarray, g: np.ndarray, profile: str = "checked_cpu") -> np.ndarray:
    with tl.session(profile=profile):
        t = tl.tensor(x, requires_grad=True)
        getattr(tl, op)(t).backward(g)
        assert t.grad is not None
        return t.grad.numpy()


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize(("op", "slope"), [("sigmoid", _sigmoid_slope), ("tanh", _tanh_slope)])
def test_saturated_slopes_are_accurate_to_a_few_ulp(
    op: str, slope: object, dtype: type, profile: str
) -> None:
    x = np.array(_POINTS, dtype)
    g = np.linspace(0.5, 2.0, x.size).astype(dtype)  # a cotangent other than 1
    got = _gradient(op, x, g, profile)
    assert callable(slope)
    for xi, gi, value in zip(x, g, got, strict=True):
        exact = float(mpmath.mpf(float(gi)) * slope(float(xi)))
        rounded = float(np.array(exact, dtype))  # what the dtype can hold: 0 where it underflows
        if abs(rounded) < np.finfo(dtype).tiny:  # subnormal or zero: within one of its steps
            assert abs(float(value) - exact) <= np.finfo(dtype).smallest_subnormal * 4, (op, xi, value, exact)
        else:
            assert abs(float(value) - exact) <= _TOLERANCE[dtype] * abs(exact), (op, xi, value, exact)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("op", ["sigmoid", "tanh"])
def test_non_finite_inputs_keep_their_gradients(op: str, profile: str) -> None:
    got = _gradient(op, np.array([np.inf, -np.inf, np.nan]), np.ones(3), profile)
    assert got[0] == 0.0 and got[1] == 0.0 and np.isnan(got[2])


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_sigmoid_slope_is_symmetric(dtype: type, profile: str) -> None:
    x, ones = np.array([1.0, 8.0, 20.0, 30.0, 60.0], dtype), np.ones(5, dtype)
    assert np.array_equal(_gradient("sigmoid", x, ones, profile), _gradient("sigmoid", -x, ones, profile))


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_perfectly_fitted_sample_has_loss_plus_zero(profile: str, dtype: type) -> None:
    logits = np.array([[40.0, 0.0]], dtype)
    with tl.session(profile=profile):
        for rows, smoothing in ((logits, 0.0), (np.array([[3.0]], dtype), 0.1)):  # one class: smoothed 0
            loss = float(tl.cross_entropy(tl.tensor(rows), np.array([0]), label_smoothing=smoothing).numpy())
            assert loss == 0.0 and np.copysign(1.0, loss) == 1.0, (smoothing, loss)
        probs = float(tl.cross_entropy(tl.tensor(logits), np.array([[1.0, 0.0]], dtype)).numpy())
        assert probs == 0.0 and np.copysign(1.0, probs) == 1.0
    torch_loss = torch.nn.functional.cross_entropy(torch.from_numpy(logits), torch.tensor([0])).item()
    assert np.copysign(1.0, torch_loss) == 1.0  # torch's sign, which torchlean's now is


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_confident_class_keeps_its_cross_entropy_gradient(dtype: type) -> None:
    """review166 F2: the reference's log_softmax VJP, ``g - exp(out) * sum(g)``, gave 0 at a class
    of probability near 1 (float32 logits 20 apart), as torch's backward does; it now takes
    ``1 - p`` as the sum of the other probabilities there. Oracle: mpmath, -sigmoid(-margin) and
    sigmoid(-margin) for two classes (the mean over one sample)."""
    for margin in (0.5, 8.0, 20.0, 40.0, 80.0):
        with tl.session(profile="checked_cpu"):
            z = tl.tensor(np.array([[margin, 0.0]], dtype), requires_grad=True)
            tl.cross_entropy(z, np.array([0])).backward()
            assert z.grad is not None
            got = z.grad.numpy()[0]
        other = float(1 / (1 + mpmath.exp(mpmath.mpf(margin))))
        # the other class's probability is exp of its rounded log-probability, about -margin:
        # relative error up to margin ulp from that rounding alone
        bound = _TOLERANCE[dtype] * (1 + margin)
        for value, exact in ((got[0], -other), (got[1], other)):
            assert abs(float(value) - exact) <= bound * abs(exact), (margin, got, exact)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_a_row_whose_cotangent_sum_is_not_finite_keeps_torchs_infinities(dtype: type) -> None:
    """review171 F2: the confident-class form ``(g - sum g) + rest * sum g`` turned a row whose
    cotangent sum overflows (float32 ``3e38 + 3e38``) or is infinite into ``inf - inf``: NaN where
    torch's backward, and the old form, give -inf. Such rows keep the first form. Oracle: torch's
    autograd of log_softmax in the dtype."""
    big = float(np.finfo(dtype).max) * 0.9
    x = np.array([[5.0, 0.0], [5.0, 0.0], [0.0, 5.0], [1.0, 0.0]], dtype)
    g = np.array([[big, big], [np.inf, 1.0], [1.0, -np.inf], [np.inf, -np.inf]], dtype)
    out = reference.log_softmax(x, axis=-1)
    (mine,) = reference.log_softmax_vjp(g, x, out=out, axis=-1)
    leaf = torch.tensor(x, requires_grad=True)
    torch.log_softmax(leaf, -1).backward(torch.tensor(g))
    assert leaf.grad is not None
    want = leaf.grad.numpy()
    assert np.array_equal(np.isnan(mine), np.isnan(want)), (mine, want)
    assert np.array_equal(mine[np.isinf(want)], want[np.isinf(want)]), (mine, want)
