"""review132 F1: ``trainer.model = other`` (or ``trainer.model.layer = other``) was accepted, and a
typed-graph trainer then ran its cached graphs, lowered from the old architecture, on the new
model's weights: ``predict`` differed from a fresh trainer of the new model by up to 0.56, and
one trainer answered from two architectures depending on the batch length. The trainer's model
is now read-only and a built model's architecture fixed; its weights are still replaced."""

from __future__ import annotations

import copy
import pickle
from typing import Any

import numpy as np
import pytest

from torchlean import nn, optim
from torchlean.backend import profiles
from torchlean.nn.model import ArchitectureError
from torchlean.trainer import RunConfig, Trainer, TrainerError

X = np.random.default_rng(0).random((20, 4))
Y = np.arange(20) % 3
class _BadRepr:
    def __repr__(self) -> str:
        raise RuntimeError("no repr")


RELU = nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 3))
TANH = nn.sequential(nn.linear(4, 8), nn.tanh(), nn.linear(8, 3))


@pytest.fixture
def trainer() -> Trainer[Any, Any]:
    t: Trainer[Any, Any] = Trainer(
        RELU, objective="cross-entropy", config=RunConfig(optim.sgd(0.1), execution="typed-graph")
    )
    t.fit(X, Y, shuffle=False)
    return t


def test_the_trainer_s_model_cannot_be_replaced(trainer: Trainer[Any, Any]) -> None:
    before, model = trainer.predict(X), trainer.model
    with pytest.raises(TrainerError, match=r"^Trainer\.model cannot be replaced \(by a Model\): .*"
                       r"trainer\.model\.load_state\(\.\.\.\), or make a new Trainer for another model$"):
        trainer.model = nn.build(TANH, seed=3)  # type: ignore[assignment]
    with pytest.raises(TrainerError, match=r"by a Sequential"):
        trainer.model = TANH  # type: ignore[assignment]
    assert trainer.model is model
    np.testing.assert_array_equal(trainer.predict(X), before)


def test_the_trainer_s_seed_and_profile_cannot_be_replaced(trainer: Trainer[Any, Any]) -> None:
    """review154 L5: as ``Session.profile`` and ``seed`` (review152 F1), with the trainer's words."""
    before = trainer.predict(X)
    with pytest.raises(AttributeError, match=r"^Trainer\.seed is fixed when the trainer is made .* so 7 "
                       r"was not assigned; make a new Trainer\(\.\.\., seed=\.\.\.\) instead"):
        trainer.seed = 7  # type: ignore[assignment]
    with pytest.raises(AttributeError, match=r"^Trainer\.profile is fixed when the trainer is made .* so "
                       r"'fast_cpu' was not assigned; make a new Trainer with RunConfig\(profile=\.\.\.\)"):
        trainer.profile = profiles.get("fast_cpu")  # type: ignore[assignment]
    # a value whose repr fails or floods is named safely: still the AttributeError (review156 L3)
    with pytest.raises(AttributeError, match=r"so an integer of about 5001 digits was not assigned"):
        trainer.seed = 10**5000  # type: ignore[assignment]
    with pytest.raises(AttributeError, match=r"so a _BadRepr was not assigned"):
        trainer.profile = _BadRepr()  # type: ignore[assignment]
    assert (trainer.seed, trainer.profile.name) == (0, "checked_cpu")
    np.testing.assert_array_equal(trainer.predict(X), before)


@pytest.mark.parametrize("field", ["layer", "input_shape", "output_shape", "specs", "dtype"])
def test_a_built_model_s_architecture_is_fixed(trainer: Trainer[Any, Any], field: str) -> None:
    other = nn.build(TANH, input_shape=(4,), seed=3, dtype=np.float64)
    before = trainer.predict(X)
    with pytest.raises(ArchitectureError, match=rf"^Model\.{field} is fixed once the model is built"):
        setattr(trainer.model, field, getattr(other, field))
    assert isinstance(ArchitectureError("x"), AttributeError)
    np.testing.assert_array_equal(trainer.predict(X), before)


def test_weights_are_still_replaced_and_models_still_copy(trainer: Trainer[Any, Any]) -> None:
    fresh: Trainer[Any, Any] = Trainer(RELU, objective="cross-entropy", seed=5)
    trainer.model.load_state(fresh.model.state())
    np.testing.assert_array_equal(trainer.predict(X), fresh.predict(X))
    model = trainer.model
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        again = pickle.loads(pickle.dumps(model, protocol=protocol))
        assert (again.layer, again.input_shape, again.dtype) == (model.layer, model.input_shape, model.dtype)
    clone = copy.deepcopy(model)
    clone.parameters = [2 * p for p in clone.parameters]  # parameters are not architecture
    np.testing.assert_array_equal(clone.parameters[0], 2 * model.parameters[0])


def test_a_shallow_copy_of_an_unrun_trainer_has_its_own_graph_cache() -> None:
    """review132 F3: ``copy.copy`` of an unrun typed-graph trainer shared its graph cache and kernel
    list, so once the original ran, the copy listed kernels it never ran and was refused as run."""
    original: Trainer[Any, Any] = Trainer(
        nn.linear(4, 3), objective="cross-entropy", config=RunConfig(execution="typed-graph")
    )
    clone = copy.copy(original)
    original.fit(X, Y)
    assert original.selected and clone.selected == []
    assert clone.model is original.model  # the model is shared, as for a torch module
    copy.deepcopy(clone)  # still an unrun template


BAD_DATA = {
    "predict": lambda t: t.predict(X[:, :3]),
    "predict-none": lambda t: t.predict(None),
    "evaluate-x": lambda t: t.evaluate(X[:, :3], Y),
    "step": lambda t: t.step(X[:, :3], Y),
    "step-y": lambda t: t.step(X, Y[:5]),
}
BAD_TARGETS = {  # per objective: labels out of range, targets of another shape
    "cross-entropy": lambda t: t.evaluate(X, Y + 10),
    "mse": lambda t: t.evaluate(X, np.ones((20, 7))),
}
CASES = [(objective, call) for objective in BAD_TARGETS for call in (*BAD_DATA, "evaluate-y")]


@pytest.mark.parametrize(("objective", "call"), CASES, ids=[f"{o}-{c}" for o, c in CASES])
def test_a_call_refused_for_its_data_leaves_an_unrun_trainer_copyable(objective: str, call: str) -> None:
    """review132 F4: predict, evaluate and step opened the session before checking their data, so a
    call refused for bad data left the trainer 'run': copy and pickle then refused it. They check
    the data first now, as fit does."""
    t: Trainer[Any, Any] = Trainer(nn.linear(4, 3), objective=objective)
    with pytest.raises(TrainerError):
        BAD_DATA.get(call, BAD_TARGETS[objective])(t)
    assert t.selected == []
    copy.deepcopy(t)
    pickle.loads(pickle.dumps(t)).fit(X, Y if objective == "cross-entropy" else np.ones((20, 3)))
