"""``Optimizer.state_dict``/``load_state_dict`` and ``Trainer.optimizer``: a run saved halfway
(weights and optimizer state through an ``.npz`` file) and resumed equals the uninterrupted run
bit for bit; mismatched states are refused before anything changes."""

from __future__ import annotations

import re

import numpy as np
import pytest

from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.trainer import RunConfig, Trainer, TrainerError

LAYER = nn.sequential(nn.linear(3, 4), nn.tanh(), nn.linear(4, 2))


@pytest.mark.parametrize(
    "config",
    [optim.adam(0.05, amsgrad=True), optim.sgd(0.1, 0.9, nesterov=True), optim.rmsprop(0.01, centered=True,
                                                                                       momentum=0.5)],
    ids=["adam-amsgrad", "sgd-nesterov", "rmsprop-centered"],
)
def test_a_resumed_run_equals_the_uninterrupted_one(config, tmp_path):
    rng = np.random.default_rng(0)
    x, labels = rng.standard_normal((10, 3)), rng.integers(0, 2, size=10)
    run = RunConfig(config, dtype="float64", param_groups=[optim.group("bias", lr_scale=0.5)])
    whole = Trainer(LAYER, objective="cross-entropy", config=run, seed=3)
    whole.fit(x, labels, epochs=4, batch_size=4, shuffle=False)

    first = Trainer(LAYER, objective="cross-entropy", config=run, seed=3)
    first.fit(x, labels, epochs=2, batch_size=4, shuffle=False)
    np.savez(tmp_path / "weights.npz", **first.model.state())
    np.savez(tmp_path / "optimizer.npz", **first.optimizer.state_dict())

    resumed = Trainer(LAYER, objective="cross-entropy", config=run, seed=99)  # other initial weights
    resumed.model.load_state(np.load(tmp_path / "weights.npz"))
    resumed.optimizer.load_state_dict(np.load(tmp_path / "optimizer.npz"))
    assert resumed.steps_done == 6
    resumed.fit(x, labels, epochs=2, batch_size=4, shuffle=False)
    for name, value in whole.model.state().items():
        assert np.array_equal(value, resumed.model.state()[name]), name
    fresh = Trainer(LAYER, objective="cross-entropy", config=run, seed=3)
    fresh.model.load_state(np.load(tmp_path / "weights.npz"))
    fresh.fit(x, labels, epochs=2, batch_size=4, shuffle=False)  # the state matters: moments lost
    assert not np.array_equal(fresh.model.state()["0.weight"], whole.model.state()["0.weight"])


def test_the_state_holds_copies_of_every_buffer():
    state = optim.adam(0.1, amsgrad=True).create([np.zeros(2), np.zeros((1, 2))])
    state.step([np.zeros(2), np.zeros((1, 2))], [np.ones(2), None])
    saved = state.state_dict()
    assert sorted(saved) == ["first.0", "first.1", "kind", "lr", "param_steps", "second.0", "second.1",
                             "steps", "third.0", "third.1"]
    assert saved["kind"].shape == () and str(saved["kind"]) == "adam"
    assert int(saved["steps"]) == 1 and saved["param_steps"].tolist() == [1, 0]
    saved["first.0"][...] = 7.0
    assert not (state.first[0] == 7.0).any()  # a copy
    assert "third.0" not in optim.adam(0.1).create([np.zeros(2)]).state_dict()


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda s: s.pop("third.0"), r"missing \['third\.0'\]"),
        (lambda s: s.update({"extra": np.zeros(1)}), r"unexpected \['extra'\]"),
        (lambda s: s.update({"first.0": np.zeros(3)}), r"first\.0 has shape \(3,\) and dtype float64, but"),
        (lambda s: s.update({"second.0": np.zeros(2, np.float32)}), "dtype float32"),
        (lambda s: s.update({"steps": np.array(-1)}), "steps must be an integer >= 0"),
        (lambda s: s.update({"steps": np.array(1.5)}), "steps must be an integer >= 0"),
        (lambda s: s.update({"param_steps": np.array([1, 2])}), "param_steps must be 1 integers >= 0"),
        (lambda s: s.update({"kind": np.array("adamw")}),
         r"saved from optimizer 'adamw', this one is 'adam'"),
        (lambda s: s.update({"kind": np.array(1)}), r"state entry kind must be an optimizer name"),
    ],
)
def test_mismatched_states_are_refused_before_anything_changes(change, message):
    source = optim.adam(0.1, amsgrad=True).create([np.zeros(2)])
    source.step([np.zeros(2)], [np.ones(2)])
    state = source.state_dict()
    change(state)
    target = optim.adam(0.1, amsgrad=True).create([np.zeros(2)])
    with pytest.raises(OptimizerError, match=message):
        target.load_state_dict(state)
    assert target.steps == 0 and not target.first[0].any()
    with pytest.raises(OptimizerError, match="must be a mapping"):
        target.load_state_dict([("steps", 0)])


def test_a_plain_adam_state_does_not_fit_amsgrad():
    plain = optim.adam(0.1).create([np.zeros(2)]).state_dict()
    with pytest.raises(OptimizerError, match=r"missing \['third\.0'\]"):
        optim.adam(0.1, amsgrad=True).create([np.zeros(2)]).load_state_dict(plain)


def test_a_shuffled_run_resumes_with_its_epoch_count(tmp_path):
    """With shuffling (and epoch schedules), the resumed trainer continues the epoch numbering:
    epochs_done set to the epochs already run gives the uninterrupted run's order and rates."""
    rng = np.random.default_rng(1)
    x, labels = rng.standard_normal((10, 3)), rng.integers(0, 2, size=10)
    run = RunConfig(optim.adamw(0.05), dtype="float64")
    whole = Trainer(LAYER, objective="cross-entropy", config=run, seed=5)
    whole.fit(x, labels, epochs=4, batch_size=4, lr_schedule=lambda e: 0.05 / (e + 1))
    first = Trainer(LAYER, objective="cross-entropy", config=run, seed=5)
    first.fit(x, labels, epochs=2, batch_size=4, lr_schedule=lambda e: 0.05 / (e + 1))
    resumed = Trainer(LAYER, objective="cross-entropy", config=run, seed=5)
    resumed.model.load_state(first.model.state())
    resumed.optimizer.load_state_dict(first.optimizer.state_dict())
    resumed.epochs_done = first.epochs_done
    resumed.fit(x, labels, epochs=2, batch_size=4, lr_schedule=lambda e: 0.05 / (e + 1))
    for name, value in whole.model.state().items():
        assert np.array_equal(value, resumed.model.state()[name]), name


@pytest.mark.parametrize("bad", [-1, 1.5, None, "2", True, np.float64(1.0)])
def test_epochs_done_is_checked_when_set(bad):
    """A bad epochs_done failed at the next fit with an error that did not name it (``-1``: "epoch
    must be an int >= 0"; ``None``: a TypeError from ``+``), and True counted as 1."""
    trainer = Trainer(LAYER, objective="cross-entropy", config=RunConfig(dtype="float64"))
    with pytest.raises(TrainerError, match=rf"^epochs_done must be an int >= 0, got {re.escape(repr(bad))}$"):
        trainer.epochs_done = bad
    assert trainer.epochs_done == 0
    trainer.epochs_done = np.int64(3)
    assert trainer.epochs_done == 3 and type(trainer.epochs_done) is int


@pytest.mark.parametrize(
    ("source", "target"),
    [(optim.sgd(0.1, 0.9), optim.adam(0.1)), (optim.adam(0.1), optim.sgd(0.1, 0.9)),
     (optim.rmsprop(0.01), optim.adagrad(0.1)), (optim.adam(0.1), optim.adamw(0.1))],
    ids=["sgd-into-adam", "adam-into-sgd", "rmsprop-into-adagrad", "adam-into-adamw"],
)
def test_another_kind_of_optimizer_state_is_refused(source, target):
    """SGD's momentum and Adam's first moment (and RMSprop's and Adagrad's buffers) have the same
    entries: such a state loaded silently and the run went on with the wrong moments."""
    saved = source.create([np.ones(3)])
    saved.step([np.ones(3)], [np.full(3, 2.0)])
    loading = target.create([np.ones(3)])
    expected = rf"saved from optimizer '{source.name}', this one is '{target.name}'"
    with pytest.raises(OptimizerError, match=expected):
        loading.load_state_dict(saved.state_dict())
    assert loading.steps == 0 and not loading.first[0].any()


def test_a_state_saved_without_its_kind_still_loads():
    """States written before the ``kind`` entry (an ``.npz`` of an earlier version) load by their
    buffers, as they did."""
    saved = optim.sgd(0.1, 0.9).create([np.ones(3)])
    saved.step([np.ones(3)], [np.full(3, 2.0)])
    state = saved.state_dict()
    del state["kind"]
    loading = optim.sgd(0.1, 0.9).create([np.ones(3)])
    loading.load_state_dict(state)
    assert loading.steps == 1 and np.array_equal(loading.first[0], saved.first[0])


@pytest.mark.parametrize(("saved", "loading", "hint"), [
    (optim.adam(0.1), optim.adam(0.1, amsgrad=True),
     "missing ['third.0', 'third.1'], unexpected [] (per-parameter entries differ in third.<i> only, "
     "AMSGrad's running maximum of v: the state was saved with amsgrad=False for those parameters, this "
     "optimizer has amsgrad=True; create it with amsgrad=False)"),
    (optim.adamw(0.1, amsgrad=True), optim.adamw(0.1),
     "missing [], unexpected ['third.0', 'third.1'] (per-parameter entries differ in third.<i> only, "
     "AMSGrad's running maximum of v: the state was saved with amsgrad=True for those parameters, this "
     "optimizer has amsgrad=False; create it with amsgrad=True)"),
    (optim.rmsprop(0.1, centered=True), optim.rmsprop(0.1),
     "missing [], unexpected ['third.0', 'third.1'] (per-parameter entries differ in third.<i> only, "
     "centered RMSprop's gradient average: the state was saved with centered=True for those parameters, "
     "this optimizer has centered=False; create it with centered=True)"),
])
def test_a_state_saved_with_another_amsgrad_or_centered_names_that_setting(saved, loading, hint):
    """review72 F1: the refusal blamed frozen groups, which neither optimizer has."""
    params = [np.ones(3), np.ones((2, 2))]
    with pytest.raises(OptimizerError) as caught:
        loading.create(params).load_state_dict(saved.create(params).state_dict())
    assert str(caught.value) == f"optimizer: state does not match this optimizer: {hint}"


def test_amsgrad_set_otherwise_per_group_in_both_directions_names_each_side():
    """review75 F4: parameter 0 saved with amsgrad, parameter 1 without, loaded into groups set the
    other way round: both third entries differ, and the hint names each side (it blamed frozen
    groups, which neither optimizer has)."""
    params, names = [np.ones(3), np.ones(2)], ["w", "b"]
    saved = optim.adam(0.1).create(params, names=names, groups=[optim.group("^w$", amsgrad=True)])
    loading = optim.adam(0.1).create(params, names=names, groups=[optim.group("^b$", amsgrad=True)])
    with pytest.raises(OptimizerError) as caught:
        loading.load_state_dict(saved.state_dict())
    assert str(caught.value) == (
        "optimizer: state does not match this optimizer: missing ['third.1'], unexpected ['third.0'] "
        "(per-parameter entries differ in third.<i> only, AMSGrad's running maximum of v: the state was "
        "saved with amsgrad=True for parameters [0] and amsgrad=False for parameters [1], this optimizer "
        "the other way round; create it with the amsgrad settings (parameter groups) it was saved with)"
    )


@pytest.mark.parametrize("key", ["third.x", "third.9"])
def test_a_third_entry_that_names_no_parameter_gets_the_plain_refusal(key):
    """A crafted state whose only odd entry is ``third.<something>`` that is no parameter index:
    the amsgrad hint (which reads the index) does not apply, and the refusal is the plain one, not a
    bare ValueError from reading the index."""
    params = [np.ones(3)]
    state = {**optim.adam(0.1).create(params).state_dict(), key: np.ones(3)}
    with pytest.raises(OptimizerError, match=rf"unexpected \['{re.escape(key)}'\] \(create the optimizer"):
        optim.adam(0.1).create(params).load_state_dict(state)


@pytest.mark.parametrize(
    ("config", "key", "what"),
    [
        (optim.adam(0.05), "second.0", "the second moment, a running mean of squared gradients"),
        (optim.adamw(0.05, amsgrad=True), "third.2", "AMSGrad's running maximum of the second moment"),
        (optim.rmsprop(0.01), "second.1", "the running mean of squared gradients"),
        (optim.adagrad(0.1), "second.3", "the sum of squared gradients"),
    ],
)
def test_a_negative_entry_in_a_buffer_of_squares_is_refused_before_anything_changes(config, key, what):
    # review158 F6: such a state loaded, and the resumed run trained into NaN (sqrt of it)
    params = [p.copy() for p in nn.build(LAYER, input_shape=(3,), seed=0, dtype=np.float64).parameters]
    optimizer = config.create(params)
    grads = [np.full_like(p, 0.5) for p in params]
    optimizer.step(params, grads)
    state = optimizer.state_dict()
    before = {name: value.copy() for name, value in state.items()}
    state[key] = state[key].copy()
    state[key].flat[1] = -0.25
    kind = config.name
    index = [int(i) for i in np.unravel_index(1, state[key].shape)]
    message = (f"optimizer: state entry {key} holds -0.25 at index {index} (1 of {state[key].size} entries "
               f"negative), but {kind}'s {key.partition('.')[0]} buffer holds {what}, never "
               "negative: the state was altered")
    with pytest.raises(OptimizerError) as caught:
        optimizer.load_state_dict(state)
    assert str(caught.value) == message
    after = optimizer.state_dict()
    assert all(np.array_equal(after[name], value) for name, value in before.items())


def test_a_centered_rmsprop_gradient_average_may_be_negative():
    params = [p.copy() for p in nn.build(LAYER, input_shape=(3,), seed=0, dtype=np.float64).parameters]
    optimizer = optim.rmsprop(0.01, centered=True).create(params)
    optimizer.step(params, [np.full_like(p, -0.5) for p in params])
    state = optimizer.state_dict()
    assert (state["third.0"] < 0).all()  # the premise: a real run's average of negative gradients
    optimizer.load_state_dict(state)

