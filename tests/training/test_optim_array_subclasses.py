"""Optimizers and gradient clipping on numpy array subclasses (review179 F1): an ``np.matrix``'s
``*`` is a matrix product, so RMSprop's and Adagrad's squared gradient was a matrix square. Oracles:
torch.optim in float64 on the same values, and the plain-array result."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

from torchlean import optim
from torchlean.optim import OptimizerError

P = np.array([[1.0, 2.0], [3.0, 4.0]])
pytestmark = pytest.mark.filterwarnings("ignore:the matrix subclass:PendingDeprecationWarning")

G = np.array([[0.5, -1.0], [2.0, 0.25]])


def _torch_step(make: Callable[[list[torch.Tensor]], torch.optim.Optimizer]) -> np.ndarray:
    param = torch.tensor(P, requires_grad=True)
    opt = make([param])
    param.grad = torch.tensor(G)
    opt.step()
    return param.detach().numpy()


@pytest.mark.parametrize(("ours", "theirs"), [
    (optim.rmsprop(lr=0.01), lambda ps: torch.optim.RMSprop(ps, lr=0.01)),
    (optim.adagrad(lr=0.1), lambda ps: torch.optim.Adagrad(ps, lr=0.1)),
    (optim.adam(lr=0.1), lambda ps: torch.optim.Adam(ps, lr=0.1)),
    (optim.sgd(lr=0.1, momentum=0.9), lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
], ids=["rmsprop", "adagrad", "adam", "sgd"])
def test_a_matrix_parameter_steps_as_torch(ours: Any, theirs: Any) -> None:
    opt = ours.create([np.matrix(P)])
    out = opt.step([np.matrix(P)], [np.matrix(G)])[0]
    assert type(out) is np.ndarray
    np.testing.assert_allclose(out, _torch_step(theirs), rtol=1e-14, atol=0)
    assert all(type(buffer) is np.ndarray for buffer in (*opt.first, *opt.second))


def test_clip_grad_norm_of_a_matrix_is_the_plain_arrays() -> None:
    clipped, total = optim.clip_grad_norm([np.matrix(G)], 1.0)
    assert total == pytest.approx(np.sqrt(5.3125), rel=1e-15)  # 0.25 + 1 + 4 + 0.0625, by hand
    assert type(clipped[0]) is np.ndarray
    np.testing.assert_allclose(clipped[0], G / np.sqrt(5.3125), rtol=1e-6)


def test_a_masked_gradient_is_refused_naming_the_entry() -> None:
    grad = np.ma.masked_array(G, mask=[[False, True], [False, False]])
    opt = optim.sgd(lr=0.1).create([P.copy()])
    with pytest.raises(OptimizerError, match=r"^optimizer: gradient 0 is a masked array with 1 masked "
                       r"entry \(the first at index \(0, 1\)\)"):
        opt.step([P.copy()], [grad])
    unmasked = opt.step([P.copy()], [np.ma.masked_array(G)])[0]
    np.testing.assert_array_equal(unmasked, P - 0.1 * G)
