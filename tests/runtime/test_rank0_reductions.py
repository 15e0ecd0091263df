"""``reduce_sum`` / ``reduce_mean`` of a rank-0 tensor over axis 0 or -1, as torch does.

torch wraps the dims of a 0-d tensor as those of one axis of extent 1, so ``sum``/``mean`` over
dim 0 or -1 (alone or in a one-element tuple, keepdim or not) return the value with shape ``()``,
and any other dim is refused. Oracle: torch float64 autograd, value and gradient, on every CPU
provider that serves the reductions (``reference`` under ``checked_cpu``, ``aten`` under
``fast_cpu``); the refused axes are checked to be refused by torch as well.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import GuardError

PROFILES = ["checked_cpu", "fast_cpu"]
REDUCTIONS: dict[str, tuple[Callable[..., tl.Tensor], Callable[..., torch.Tensor]]] = {
    "reduce_sum": (tl.reduce_sum, torch.sum),
    "reduce_mean": (tl.reduce_mean, torch.mean),
}
ACCEPTED_AXES: list[Any] = [0, -1, (0,), (-1,)]
VALUE, COTANGENT = -2.75, 1.5


def _torch_oracle(name: str, axis: Any, keepdims: bool) -> tuple[float, tuple[int, ...], float]:
    """Value, shape and d(value)/dx (times COTANGENT) in torch float64."""
    x = torch.tensor(VALUE, dtype=torch.float64, requires_grad=True)
    out = REDUCTIONS[name][1](x, dim=axis, keepdim=keepdims)
    out.backward(torch.tensor(COTANGENT, dtype=torch.float64))
    assert x.grad is not None
    return float(out.detach()), tuple(out.shape), float(x.grad)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize("axis", ACCEPTED_AXES, ids=repr)
@pytest.mark.parametrize("keepdims", [False, True])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_rank0_reduction_over_axis_0_or_minus_1_matches_torch(
    profile: str, name: str, axis: Any, keepdims: bool, dtype: type[np.floating[Any]]
) -> None:
    value, shape, grad = _torch_oracle(name, axis, keepdims)
    x = tl.tensor(np.array(VALUE, dtype=dtype), requires_grad=True)
    with tl.session(profile):
        out = REDUCTIONS[name][0](x, axis, keepdims=keepdims)
        assert out.grad_fn == name
        out.backward(np.array(COTANGENT, dtype=dtype))
    assert out.shape == shape == ()
    assert out.dtype == dtype
    assert float(out.numpy()) == value  # exact: the value of a one-element reduction
    assert not np.may_share_memory(out.numpy(), x.numpy())
    assert x.grad is not None and x.grad.shape == ()
    assert float(x.grad.numpy()) == grad


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
def test_the_tensor_methods_take_axis_0_of_a_scalar(profile: str, name: str) -> None:
    method = {"reduce_sum": "sum", "reduce_mean": "mean"}[name]
    with tl.session(profile):
        out = getattr(tl.tensor(np.array(VALUE)), method)(0)
    assert out.shape == () and float(out.numpy()) == VALUE


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name", sorted(REDUCTIONS))
@pytest.mark.parametrize(
    ("axis", "message"),
    [
        (1, "axis 1 is out of range for a rank-0 input (accepted: an integer in [-1, 0])"),
        (-2, "axis -2 is out of range for a rank-0 input (accepted: an integer in [-1, 0])"),
        ((0, 1), "axis 1 is out of range for a rank-0 input (accepted: an integer in [-1, 0])"),
        ((0, -1), "axis (0, -1) repeats an axis (accepted: distinct axes)"),
    ],
    ids=["1", "-2", "(0, 1)", "(0, -1)"],
)
def test_other_axes_of_a_scalar_are_refused_as_torch_refuses_them(
    profile: str, name: str, axis: Any, message: str
) -> None:
    with pytest.raises((IndexError, RuntimeError)):  # torch refuses the same axes
        REDUCTIONS[name][1](torch.tensor(VALUE, dtype=torch.float64), dim=axis)
    with tl.session(profile), pytest.raises(GuardError) as caught:
        REDUCTIONS[name][0](tl.tensor(np.array(VALUE)), axis)
    assert str(caught.value) == f"{name}: {message}"
