"""A typed graph's refusal names everything its profile refuses at once (review152 F2, F3): the
graph's ops no capsule covers, and the ops the step runs eagerly beside the graph (a dropout mask's
``bernoulli_mask``, batch norm's running-statistics update), each once, before any kernel runs.
Oracles: the session's own eager refusal of each op, the profiler (no kernel ran), the weights."""

from __future__ import annotations

import dataclasses

import numpy as np
import pytest

from torchlean import nn, optim, profiler
from torchlean.autograd.session import Session
from torchlean.backend import profiles
from torchlean.backend.contracts import ContractEvidence, EvidenceKind
from torchlean.backend.errors import SessionError
from torchlean.backend.policy import AssurancePolicy
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.registry import CapsuleModule, maintained_modules
from torchlean.backend.vocabulary import BackendOp
from torchlean.trainer import Objective, RunConfig, Trainer


def _without(*ops: BackendOp) -> BackendProfile:
    """checked_cpu whose reference module lacks ``ops``' capsules."""
    reference = next(m for m in maintained_modules() if m.name == "reference")
    kept = tuple(c for c in reference.capsules if c.op not in ops)
    return profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("reference", kept)])


def _eager_refusal(profile: BackendProfile, op: BackendOp, grad_enabled: bool) -> str:
    """The session's own refusal of ``op`` (the oracle of each part of the graph's message)."""
    with pytest.raises(SessionError) as caught:
        Session(profile).preflight(op, grad_enabled=grad_enabled)
    return str(caught.value)


def _refusal(layer: nn.Layer, profile: BackendProfile) -> SessionError:
    trainer = Trainer(layer, objective=Objective.MSE, seed=0, config=RunConfig(
        optimizer=optim.sgd(0.1), execution="typed-graph", profile=profile))
    before = [np.array(p, copy=True) for p in trainer.model.parameters]
    with profiler.profile() as seen, pytest.raises(SessionError) as caught:
        trainer.fit(np.ones((8, 4)), np.ones((8, 1)), epochs=1, batch_size=8)
    assert seen.kernels == () and trainer.steps_done == 0 and trainer.selected == []
    for old, new in zip(before, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(old, new)
    return caught.value


def test_every_missing_op_of_the_graph_and_beside_it_is_named_at_once() -> None:
    """Before review152 F2 only ``relu`` was named; with it back, ``bernoulli_mask``; then ``slice``."""
    profile = _without(BackendOp.RELU, BackendOp.BERNOULLI_MASK, BackendOp.SLICE)
    layer = nn.sequential(nn.linear(4, 8), nn.batch_norm1d(8), nn.relu(), nn.dropout(0.2), nn.linear(8, 1))
    refused = _refusal(layer, profile)
    dropout = _eager_refusal(profile, BackendOp.BERNOULLI_MASK, True)
    statistics = _eager_refusal(profile, BackendOp.SLICE, False)
    assert str(refused) == (
        "typed graph rejected by profile checked_cpu: no admissible kernel capsule for op relu on device "
        f"cpu; {dropout} (a dropout mask is drawn by `bernoulli_mask` before each training step's graph "
        f"runs; refused before the graph runs); {statistics} (batch norm's running-statistics update runs "
        "`slice` without gradient after each training step's graph; refused before the graph runs)"
    )
    explained = [note for note in refused.__notes__ if note.startswith("explain ")]
    assert [note.split()[1] for note in explained] == ["relu", "bernoulli_mask", "slice"]
    assert explained[0] == profile.explain("relu")
    assert len(set(refused.__notes__)) == len(refused.__notes__)


def test_eager_ops_alone_are_named_with_the_sessions_message() -> None:
    """Without a graph problem the message is the eager refusals', as before (review93 M1)."""
    profile = _without(BackendOp.BERNOULLI_MASK)
    layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.dropout(0.2), nn.linear(8, 1))
    refused = _refusal(layer, profile)
    assert str(refused).startswith(_eager_refusal(profile, BackendOp.BERNOULLI_MASK, True) + " (a dropout")
    assert isinstance(refused.__cause__, SessionError)


@dataclasses.dataclass(frozen=True, slots=True)
class _NoTestSuites(AssurancePolicy):
    """A narrowing policy: checked, but no test suite counts as evidence."""

    def accepts_evidence(self, evidence: ContractEvidence) -> bool:
        suite = evidence.kind is EvidenceKind.TEST_SUITE
        return AssurancePolicy.accepts_evidence(self, evidence) and not suite


def test_the_gates_failures_are_named_once_however_many_layers_share_a_capsule() -> None:
    """review152 F3: two linear layers printed reference.linear's failures twice."""
    base = profiles.get("checked_cpu")
    profile = dataclasses.replace(base, name="no_suites",
                                  policy=dataclasses.replace(base.policy, assurance=_NoTestSuites()))
    layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 8), nn.relu(), nn.linear(8, 1))
    message = str(_refusal(layer, profile))
    assert message.startswith("typed graph rejected by profile no_suites: reference.linear has rejected ")
    parts = message.removeprefix("typed graph rejected by profile no_suites: ").split("; ")
    assert len(parts) == len(set(parts)) and sum("reference.linear has" in p for p in parts) >= 1
    assert sum("reference.relu has" in p for p in parts) >= 1


def test_a_missing_op_does_not_hide_the_gates_verdicts_on_the_others() -> None:
    """review154 L1: with relu missing and a policy that refuses test suites, linear's refusal
    came only in a second round, while the ops beside the graph were refused at once."""
    base = _without(BackendOp.RELU)
    profile = dataclasses.replace(base, name="lab",
                                  policy=dataclasses.replace(base.policy, assurance=_NoTestSuites()))
    message = str(_refusal(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), profile))
    assert message.startswith("typed graph rejected by profile lab: no admissible kernel capsule for op relu "
                              "on device cpu; reference.linear has rejected ")
    assert "reference.mse_loss has rejected " in message


def test_an_op_the_graph_refuses_is_not_refused_again_beside_it() -> None:
    """review154 L1: ``mul`` missing was named by the graph and again by batch norm's
    running-statistics update, with two explain notes."""
    profile = _without(BackendOp.MUL)  # the dropout's mask multiplies in the graph
    layer = nn.sequential(nn.linear(4, 8), nn.batch_norm1d(8), nn.relu(), nn.dropout(0.2), nn.linear(8, 1))
    refused = _refusal(layer, profile)
    assert str(refused).count("op mul on device cpu") == 1
    assert [n.split()[1] for n in refused.__notes__ if n.startswith("explain ")].count("mul") == 1
