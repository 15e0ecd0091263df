"""review93: typed-graph training with batch norm planned its running-statistics update only
after the graph had run forward and backward (M1); typed-graph predict/evaluate accepted their
graph under the training VJP policy where eager inference uses the no-grad one (L1); and
``trainer.selected`` listed a graph's capsules once the graph was accepted, before any ran.
Oracles: the kernels the profiler saw run (none before a refusal), the parameters before and
after, eager execution's own ops and outputs, and a float64 numpy forward pass."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean import nn, optim, profiler
from torchlean.autograd.session import Session
from torchlean.backend import profiles
from torchlean.backend.errors import SessionError
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.registry import CapsuleModule, maintained_modules
from torchlean.backend.vocabulary import BackendOp, VJPMode
from torchlean.nn.eager import RUNNING_STATISTICS_OPS, EagerOps
from torchlean.tensor import Tensor
from torchlean.trainer import Objective, RunConfig, Trainer


def _without(op: BackendOp) -> BackendProfile:
    """checked_cpu whose reference module lacks ``op``'s capsule."""
    reference = next(m for m in maintained_modules() if m.name == "reference")
    kept = tuple(c for c in reference.capsules if c.op is not op)
    return profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("reference", kept)])


def _batch_norm_trainer(profile: BackendProfile | str, execution: str = "typed-graph") -> Trainer:
    layer = nn.sequential(nn.linear(4, 8), nn.batch_norm1d(8), nn.relu(), nn.linear(8, 1))
    return Trainer(layer, objective=Objective.MSE, seed=0,
                   config=RunConfig(optimizer=optim.adam(0.01), execution=execution, profile=profile))


def test_the_running_statistics_ops_are_those_the_update_runs() -> None:
    """The constant the trainer checks is what ``update_running_statistics`` runs, in order."""
    with Session(profiles.get("checked_cpu")) as session:
        x = Tensor(np.random.default_rng(0).standard_normal((5, 3)))
        EagerOps().update_running_statistics(x, Tensor(np.zeros(3)), Tensor(np.ones(3)), momentum=0.1)
        assert tuple(kernel.op for kernel in session.selected) == RUNNING_STATISTICS_OPS


@pytest.mark.parametrize("op", RUNNING_STATISTICS_OPS, ids=lambda op: op.label)
def test_typed_graph_refuses_a_missing_running_statistics_op_before_any_kernel(op: BackendOp) -> None:
    trainer = _batch_norm_trainer(_without(op))
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 1))
    before = [np.array(p, copy=True) for p in trainer.model.parameters]
    with profiler.profile() as seen, pytest.raises(SessionError) as caught:
        trainer.fit(x, y, epochs=1, batch_size=8)
    assert seen.kernels == ()  # nothing ran: the refusal came before the graph's first kernel
    assert trainer.steps_done == 0 and trainer.selected == []
    for old, new in zip(before, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(old, new)
    message = str(caught.value)
    assert f"`{op.label}`" in message
    if "typed graph rejected" not in message:  # an op the graph needs too is refused by the graph
        assert message.endswith(
            f"(batch norm's running-statistics update runs `{op.label}` without gradient after each "
            "training step's graph; refused before the graph runs)")


def test_typed_graph_batch_norm_still_trains_as_eager_does() -> None:
    """The preflight changes nothing when every op is served: the same weights as eager."""
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 1))
    trained = []
    for execution in ("eager", "typed-graph"):
        trainer = _batch_norm_trainer("checked_cpu", execution)
        trainer.fit(x, y, epochs=2, batch_size=8)
        trained.append(trainer.model.parameters)
    for eager, graph in zip(*trained, strict=True):
        np.testing.assert_array_equal(eager, graph)


def test_typed_graph_inference_uses_the_no_grad_policy_as_eager_does() -> None:
    """L1: under a backend-vjp profile (no capsule owns its backward that way), eager predict ran
    under the no-grad policy and typed-graph predict was refused for linear and relu."""
    profile = profiles.get("checked_cpu").with_vjp_mode(VJPMode.BACKEND_VJP)
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((5, 4)), rng.standard_normal((5, 1))
    outputs, metrics = [], []
    for execution in ("eager", "typed-graph"):
        layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1))
        trainer = Trainer(layer, objective=Objective.MSE, seed=0, config=RunConfig(
            optimizer=optim.sgd(0.1), execution=execution, profile=profile, dtype="float64"))
        outputs.append(trainer.predict(x))
        metrics.append(trainer.evaluate(x, y))
        assert {kernel.policy.vjp_mode for kernel in trainer.selected} == {VJPMode.NONE}
    w1, b1, w2, b2 = trainer.model.parameters
    expected = np.maximum(x @ w1.T + b1, 0.0) @ w2.T + b2  # numpy's float64 forward
    np.testing.assert_allclose(outputs[1], expected, rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(outputs[0], outputs[1])
    assert metrics[0] == metrics[1]
    assert metrics[1]["mse"] == pytest.approx(float(np.mean((expected - y) ** 2)), rel=1e-12)


def test_selected_lists_no_graph_capsule_before_the_graph_runs() -> None:
    """A typed-graph step refused at its dropout mask (no bernoulli_mask capsule) ran nothing,
    and ``selected`` lists nothing; once a step runs, the graph's capsules are listed."""
    layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.dropout(0.2), nn.linear(8, 1))
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((8, 4)), rng.standard_normal((8, 1))
    refused = Trainer(layer, objective=Objective.MSE, seed=0, config=RunConfig(
        optimizer=optim.sgd(0.1), execution="typed-graph", profile=_without(BackendOp.BERNOULLI_MASK)))
    with profiler.profile() as seen, pytest.raises(SessionError, match="bernoulli_mask"):
        refused.fit(x, y, epochs=1, batch_size=8)
    assert seen.kernels == () and refused.selected == []
    trainer = Trainer(layer, objective=Objective.MSE, seed=0, config=RunConfig(
        optimizer=optim.sgd(0.1), execution="typed-graph"))
    trainer.fit(x, y, epochs=1, batch_size=8)
    with profiler.profile() as seen:
        trainer.fit(x, y, epochs=1, batch_size=8)
    assert {kernel.capsule.name for kernel in trainer.selected} == {k.capsule for k in seen.kernels}


def test_show_backend_reports_each_capsule_once_in_the_order_of_selected(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """review95 M1: with dropout, the graph's reports came after bernoulli_mask's (drawn first),
    unlike ``selected`` and the CLI's audit list; with batch norm, the capsules the graph and the
    running-statistics update share (reshape, mul, ...) were reported twice."""
    layer = nn.sequential(nn.linear(4, 8), nn.batch_norm1d(8), nn.relu(), nn.dropout(0.2), nn.linear(8, 1))
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((16, 4)), rng.standard_normal((16, 1))
    trainer = Trainer(layer, objective=Objective.MSE, seed=0, config=RunConfig(
        optimizer=optim.sgd(0.1), execution="typed-graph", show_backend=True))
    trainer.fit(x, y, epochs=2, batch_size=8)
    headers = [line.split(":")[0].strip() for line in capsys.readouterr().out.splitlines()
               if line.startswith("  ") and not line.startswith("    ")]
    assert headers == [kernel.op.label for kernel in trainer.selected]  # once each, selected's order
    outside = [kernel.op.label for kernel in trainer.selected_outside_graph]
    assert headers[-len(outside):] == outside
    assert "bernoulli_mask" in headers and "slice" in headers


def test_typed_graph_refuses_a_missing_dropout_mask_op_naming_why() -> None:
    layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.dropout(0.2), nn.linear(8, 1))
    trainer = Trainer(layer, objective=Objective.MSE, seed=0, config=RunConfig(
        optimizer=optim.sgd(0.1), execution="typed-graph", profile=_without(BackendOp.BERNOULLI_MASK)))
    with pytest.raises(SessionError) as caught:
        trainer.fit(np.ones((8, 4)), np.ones((8, 1)), epochs=1, batch_size=8)
    assert str(caught.value).endswith(
        "(a dropout mask is drawn by `bernoulli_mask` before each training step's graph runs; refused "
        "before the graph runs)")
