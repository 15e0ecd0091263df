"""A ``-inf`` logit under the Trainer's cross-entropy (review130 F1): the Trainer computes the mean
cross-entropy as ``sum(log_softmax(z) * (-onehot/n))`` over every class (three ops, see
``trainer._loss``), so a non-target class whose logit is ``-inf`` contributes ``0 * -inf = NaN`` to
the reported loss, where torch's class-index ``cross_entropy`` (and ``tl.cross_entropy``, a
``gather`` of the target's log-probability) reads the target only and stays finite. The gradient is
torch's: the log-softmax VJP multiplies by ``exp(-inf) = 0``. This is the documented behaviour
(``Objective``'s docstring, README "Trainer"); the oracle is torch in float64."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.trainer import RunConfig, Trainer

X = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0], [0.5, 0.0]])
Y = np.array([0, 1, 0, 1])


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_neg_inf_logit_gives_nan_loss_and_torch_gradients(profile: str, execution: str) -> None:
    trainer = Trainer(
        nn.sequential(nn.linear(2, 3)),
        objective="cross-entropy",
        config=RunConfig(optim.sgd(0.1), dtype="float64", execution=execution, profile=profile),
        seed=0,
    )
    state = trainer.model.state()
    state["0.bias"] = np.array([0.0, 0.0, -np.inf])  # class 2 switched off
    trainer.model.load_state(state)

    weight = torch.tensor(state["0.weight"], dtype=torch.float64, requires_grad=True)
    logits = torch.nn.functional.linear(torch.tensor(X), weight, torch.tensor(state["0.bias"]))
    torch_loss = torch.nn.functional.cross_entropy(logits, torch.tensor(Y))
    torch_loss.backward()  # type: ignore[no-untyped-call]
    assert weight.grad is not None
    expected_weight = (weight - 0.1 * weight.grad).detach().numpy()
    assert math.isfinite(torch_loss.item())

    with tl.session(profile):  # the gather form reads the target's log-probability only
        functional = tl.cross_entropy(tl.tensor(trainer.predict(X)), Y).item()
    assert functional == pytest.approx(torch_loss.item(), rel=1e-12)

    loss = trainer.step(X, Y)
    assert math.isnan(loss)
    after = trainer.model.state()
    np.testing.assert_allclose(after["0.weight"], expected_weight, rtol=1e-12, atol=1e-15)
    np.testing.assert_array_equal(after["0.bias"][2], -np.inf)
    assert np.isfinite(after["0.bias"][:2]).all()
