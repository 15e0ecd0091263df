"""Pointwise VJPs at NaN, ±inf, ±0 and overflow, against torch autograd (float64 and float32).

Every pointwise op's VJP in the ``reference`` and ``aten`` providers must give torch's gradient
bit pattern at non-finite inputs and cotangents: the same NaN positions, the same infinities, and
close finite values. The review found two rules that differed: ``relu`` (torch's
``threshold_backward`` passes ``g`` at a NaN input: ``NaN <= 0`` is false; ours gave 0) and
``abs`` (torch's ``g * sgn(x)`` with ``sign(NaN) = 0``; ours gave NaN). The tape gradients under
``checked_cpu`` and ``fast_cpu`` are checked on the review's reproduction too.

Oracle: torch autograd of the torch op each kernel mirrors, run on the same inputs; the forward
result handed to the VJP is torch's own, so only the VJP rule is compared. For sigmoid and tanh,
whose VJPs are evaluated from x (review166 F1), it is ``g`` times the slope in torch kernels
(:data:`SLOPES`): torch's backward cancels to 0 at a saturated x, giving NaN for an infinite ``g``
where the slope is positive and the gradient infinite. For ``clamp`` it is the
autograd of ``clamp_oracle.clamp_inclusive`` (torch.clamp's rule up to torch 2.13, checked below;
torch 2.14 gives 0 at a bound).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from clamp_oracle import TORCH_CLAMP_ZERO_AT_BOUNDS, clamp_inclusive
from numpy.testing import assert_allclose, assert_array_equal

import torchlean as tl
from torchlean.backend.providers.aten import pointwise as aten
from torchlean.backend.providers.reference import kernels as reference

Array = np.ndarray[Any, Any]
PROVIDERS = {"reference": reference, "aten": aten}
DTYPES = [np.float64, np.float32]
SPECIAL = [np.nan, np.inf, -np.inf, 0.0, -0.0, 1.0, -1.0, 2.5, -3.0, 1e-30, 60.0, -60.0]
COTANGENTS = [1.0, -2.0, np.inf, np.nan, 0.0]

UNARY: dict[str, tuple[Callable[[torch.Tensor], torch.Tensor], dict[str, Any]]] = {
    "relu": (torch.relu, {}),
    "abs": (torch.abs, {}),
    "sqrt": (torch.sqrt, {}),
    "gelu": (F.gelu, {}),
    "sigmoid": (torch.sigmoid, {}),
    "tanh": (torch.tanh, {}),
    "softplus": (F.softplus, {}),
    "exp": (torch.exp, {}),
    "log": (torch.log, {}),
    "sin": (torch.sin, {}),
    "cos": (torch.cos, {}),
    "inv": (torch.reciprocal, {}),
    "scale": (lambda t: t * 3.0, {"factor": 3.0}),
    "clamp": (lambda t: clamp_inclusive(t, -1.0, 2.5), {"lo": -1.0, "hi": 2.5}),  # clamp_oracle.py
    "safe_log": (lambda t: torch.log(F.softplus(t) + 1e-6), {"eps": 1e-6}),
}
BINARY: dict[str, Callable[[torch.Tensor, torch.Tensor], torch.Tensor]] = {
    "add": torch.add,
    "sub": torch.sub,
    "mul": torch.mul,
    "max": torch.maximum,
    "min": torch.minimum,
}


def assert_same_pattern(got: Array, want: Array, rtol: float, label: str) -> None:
    """Equal NaN positions and infinities (signs included), close finite values."""
    assert got.shape == want.shape, label
    assert_array_equal(np.isnan(got), np.isnan(want), err_msg=f"{label}: NaN positions")
    assert_array_equal(np.isposinf(got), np.isposinf(want), err_msg=f"{label}: +inf positions")
    assert_array_equal(np.isneginf(got), np.isneginf(want), err_msg=f"{label}: -inf positions")
    finite = np.isfinite(want)
    assert_allclose(got[finite], want[finite], rtol=rtol, atol=0.0, err_msg=label)


def _grid(dtype: type) -> tuple[Array, Array]:
    xs, gs = np.meshgrid(np.array(SPECIAL, dtype), np.array(COTANGENTS, dtype))
    return xs.ravel(), gs.ravel()


def _rtol(dtype: type) -> float:
    return 2e-5 if dtype == np.float32 else 1e-14  # float32: a few ulp, torch rounds differently


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize("label", list(UNARY))
def test_unary_vjp_matches_torch_at_special_values(label: str, provider: str, dtype: type) -> None:
    fn, params = UNARY[label]
    x, g = _grid(dtype)
    leaf = torch.tensor(x, requires_grad=True)
    out = fn(leaf)
    out.backward(torch.tensor(g))
    assert leaf.grad is not None
    expected = leaf.grad.numpy()
    if label in SLOPES:  # not torch's backward, which cancels where the output rounds to ±1
        expected = (torch.tensor(g) * SLOPES[label](torch.tensor(x))).numpy()
    (mine,) = getattr(PROVIDERS[provider], f"{label}_vjp")(g, x, out=out.detach().numpy(), **params)
    assert mine is not None and mine.dtype == dtype
    assert_same_pattern(mine, expected, _rtol(dtype), f"{provider}.{label}_vjp")


SLOPES: dict[str, Callable[[torch.Tensor], torch.Tensor]] = {
    "sigmoid": lambda t: torch.sigmoid(t) * torch.sigmoid(-t),
    "tanh": lambda t: 1 / torch.cosh(t) ** 2,
}
"""The sigmoid and tanh oracles (review166 F1): torch's ``sigmoid_backward`` and ``tanh_backward``
evaluate ``g * out * (1 - out)`` and ``g * (1 - out**2)``, which cancel to 0 where the output rounds
to ±1, so an infinite cotangent there gives NaN; the slope itself, ``sigmoid(x) * sigmoid(-x)``
and ``1 / cosh(x)**2`` in torch kernels of the dtype (another formula than the providers'
``exp(-|x|)`` forms), is positive there, and ``inf`` times it is ``inf``. At ±inf inputs the slope
is 0 and ``inf * 0`` NaN, as torch's."""


def test_clamp_oracle_is_torchs_rule_by_version() -> None:
    """The clamp oracle is torch.clamp's own gradient, bit for bit at the special values, up to
    torch 2.13; torch 2.14 differs exactly at the bounds, where it gives 0 (torchlean keeps g)."""
    x, g = _grid(np.float64)
    grads = []
    for fn in (lambda t: torch.clamp(t, -1.0, 2.5), lambda t: clamp_inclusive(t, -1.0, 2.5)):
        leaf = torch.tensor(x, requires_grad=True)
        fn(leaf).backward(torch.tensor(g))
        assert leaf.grad is not None
        grads.append(leaf.grad.numpy())
    torch_grad, oracle = grads
    at_bound = (x == -1.0) | (x == 2.5)
    assert_array_equal(oracle[at_bound], g[at_bound])  # g passed through, NaN and inf included
    assert_array_equal(torch_grad[~at_bound], oracle[~at_bound])
    expected = np.zeros(at_bound.sum()) if TORCH_CLAMP_ZERO_AT_BOUNDS else g[at_bound]
    assert_array_equal(torch_grad[at_bound], expected)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float64", "float32"])
@pytest.mark.parametrize("provider", list(PROVIDERS))
@pytest.mark.parametrize("label", list(BINARY))
def test_binary_vjp_matches_torch_at_special_values(label: str, provider: str, dtype: type) -> None:
    a, b = (v.ravel() for v in np.meshgrid(np.array(SPECIAL, dtype), np.array(SPECIAL, dtype)))
    for g_value in (1.0, np.inf, np.nan):
        g = np.full(a.shape, g_value, dtype)
        ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        out = BINARY[label](ta, tb)
        out.backward(torch.tensor(g))
        assert ta.grad is not None and tb.grad is not None
        ga, gb = getattr(PROVIDERS[provider], f"{label}_vjp")(g, a, b, out=out.detach().numpy())
        assert ga is not None and gb is not None
        tag = f"{provider}.{label}_vjp g={g_value}"
        assert_same_pattern(ga, ta.grad.numpy(), _rtol(dtype), f"{tag} (a)")
        assert_same_pattern(gb, tb.grad.numpy(), _rtol(dtype), f"{tag} (b)")


def test_relu_and_abs_rules_at_nan_by_hand() -> None:
    """Hand values of torch's rules: relu passes g at NaN and at +inf, 0 at and below 0;
    abs gives g * sign(x), sign 0 at ±0 and at NaN (so g = inf at NaN gives NaN)."""
    x = np.array([np.nan, np.nan, -1.0, -0.0, 0.0, 2.0, np.inf, -np.inf])
    g = np.array([3.0, np.inf, 5.0, 7.0, 11.0, 13.0, 17.0, 19.0])
    for provider in PROVIDERS.values():
        (relu_grad,) = provider.relu_vjp(g, x, out=reference.relu(x))
        assert relu_grad is not None
        assert_array_equal(relu_grad, [3.0, np.inf, 0.0, 0.0, 0.0, 13.0, 17.0, 0.0])
        (abs_grad,) = provider.abs_vjp(g, x, out=np.abs(x))
        assert abs_grad is not None
        assert_array_equal(abs_grad, [0.0, np.nan, -5.0, 0.0, 0.0, 13.0, 17.0, -19.0])


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("label", ["relu", "abs"])
def test_tape_gradient_at_nan_matches_torch(profile: str, label: str) -> None:
    """The review's reproduction: the tape gradient at a NaN input equals torch's."""
    values = np.array([np.nan, -1.0, 0.0, 2.0])
    with tl.session(profile):
        x = tl.tensor(values, requires_grad=True)
        getattr(tl, label)(x).backward(np.ones(4))
        assert x.grad is not None
        mine = x.grad.numpy()
    leaf = torch.tensor(values, requires_grad=True)
    getattr(torch, label)(leaf).backward(torch.ones(4, dtype=torch.float64))
    assert leaf.grad is not None
    assert_array_equal(mine, leaf.grad.numpy())
    assert_array_equal(mine[0], 1.0 if label == "relu" else 0.0)
