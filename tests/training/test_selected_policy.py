"""review147 F4: ``selected`` kept each capsule's first acceptance, so a trainer that predicted
before it trained listed ``linear`` and ``relu`` with the inference policy (VJP mode none) although
their tape VJPs then ran under the training policy. A later acceptance with gradients now takes the
listed one's place (its position kept); one without gradients never replaces one with them."""

from __future__ import annotations

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn, optim
from torchlean.trainer import ExecutionMode, Objective, RunConfig, Trainer

X = np.random.default_rng(0).normal(size=(16, 4)).astype(np.float32)
Y = np.random.default_rng(1).normal(size=(16, 1)).astype(np.float32)


def _listed(trainer: Trainer) -> list[tuple[str, str]]:  # type: ignore[type-arg]
    return [(k.capsule.name, k.policy.vjp_mode.label) for k in trainer.selected]


@pytest.mark.parametrize("execution", list(ExecutionMode))
@pytest.mark.parametrize("predict_first", [True, False])
def test_selected_lists_the_acceptance_whose_vjp_ran(execution: ExecutionMode, predict_first: bool) -> None:
    trainer = Trainer(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), objective=Objective.MSE,
                      config=RunConfig(optimizer=optim.sgd(lr=0.01), execution=execution))
    if predict_first:
        trainer.predict(X)
        assert _listed(trainer) == [("reference.linear", "none"), ("reference.relu", "none")]
    trainer.fit(X, Y, epochs=1)
    trainer.predict(X)  # after training: no downgrade
    assert _listed(trainer) == [("reference.linear", "torchlean-tape"), ("reference.relu", "torchlean-tape"),
                                ("reference.mse_loss", "torchlean-tape")]


def test_a_session_s_selected_takes_the_gradient_acceptance_in_place() -> None:
    x = tl.tensor(np.array([[-1.0, 2.0]]), requires_grad=True)
    with tl.session("checked_cpu") as session:
        with tl.no_grad():
            tl.exp(tl.relu(x))
        tl.reduce_sum(tl.relu(x)).backward()
        with tl.no_grad():
            tl.relu(x)
        listed = [(k.capsule.name, k.policy.vjp_mode.label) for k in session.selected]
    assert listed == [("reference.relu", "torchlean-tape"), ("reference.exp", "none"),
                      ("reference.reduce_sum", "torchlean-tape")]
