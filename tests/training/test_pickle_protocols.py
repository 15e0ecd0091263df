"""Every pickle protocol (0 through pickle.HIGHEST_PROTOCOL) round-trips a leaf tensor with its
gradient, a model and an unrun trainer (review77 F9: protocols 0 and 1 raised "a class that
defines __slots__ without defining __getstate__ cannot be pickled" for all three). Oracle: the
original's values, and the losses the original's own fit gives."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn
from torchlean.nn.model import Model
from torchlean.trainer import Trainer

PROTOCOLS = list(range(pickle.HIGHEST_PROTOCOL + 1))


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_leaf_tensor_with_its_grad_round_trips(protocol: int) -> None:
    w = tl.tensor(np.array([1.0, -2.0, 3.0]), requires_grad=True)
    tl.reduce_sum(w * w).backward()
    back = pickle.loads(pickle.dumps(w, protocol=protocol))
    np.testing.assert_array_equal(back.numpy(), [1.0, -2.0, 3.0], strict=True)
    assert back.requires_grad and back.grad is not None
    np.testing.assert_array_equal(back.grad.numpy(), [2.0, -4.0, 6.0], strict=True)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_a_model_and_an_unrun_trainer_round_trip_and_train_alike(protocol: int) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.random((8, 3)), rng.random((8, 1))
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 1)), seed=3)
    model = pickle.loads(pickle.dumps(trainer.model, protocol=protocol))
    assert model.names == trainer.model.names
    for ours, theirs in zip(model.parameters, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(ours, theirs, strict=True)
    clone = pickle.loads(pickle.dumps(trainer, protocol=protocol))
    assert clone.fit(x, y, epochs=2) == trainer.fit(x, y, epochs=2)
    for ours, theirs in zip(clone.model.parameters, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(ours, theirs, strict=True)


class NotedModel(Model):
    """A user's subclass of ``Model`` with an instance ``__dict__``."""


class SlottedModel(Model):
    """A user's slotted subclass of ``Model``."""

    __slots__ = ("extra",)


@pytest.mark.parametrize("protocol", PROTOCOLS)
def test_subclasses_of_model_keep_their_own_attributes(protocol: int) -> None:
    """review82 F4: a state of ``Model``'s own slots lost a subclass's instance attributes (or
    raised for a slotted subclass) in pickle, ``copy`` and ``deepcopy``. Oracle: the values set."""
    model = Trainer(nn.sequential(nn.linear(3, 2)), seed=1).model
    fields = (model.layer, model.input_shape, model.output_shape, model.specs, model.parameters, model.dtype)
    noted, slotted = NotedModel(*fields), SlottedModel(*fields)
    noted.note = "kept"  # type: ignore[attr-defined]
    slotted.extra = 5
    for copier in (lambda v: pickle.loads(pickle.dumps(v, protocol=protocol)), copy.copy, copy.deepcopy):
        assert copier(noted).note == "kept"
        assert copier(slotted).extra == 5
        np.testing.assert_array_equal(copier(noted).parameters[0], model.parameters[0], strict=True)
