"""The learning rate in ``Optimizer.state_dict()`` (torch's ``param_groups`` carry ``lr``): a run
whose rate ``set_lr`` changed resumes at that rate; a state saved before the entry existed loads
as before; torch's own optimizer format is refused naming the one read; ``Trainer.lr`` is
read-only with an error naming ``trainer.optimizer.set_lr``.

Oracles: torch's ``Adam``/``SGD`` in float64 whose ``param_groups[...]["lr"]`` is changed, saved
with ``state_dict()`` and loaded into a fresh optimizer; uninterrupted runs of the same trainer
(bit for bit)."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from cli_runs import arrays, ok

from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.trainer import RunConfig, Trainer

SHAPES = [(3, 2), (2,)]
LAYER = nn.sequential(nn.linear(3, 4), nn.tanh(), nn.linear(4, 2))


def _grads(rng: np.random.Generator, step: int) -> list[np.ndarray]:
    return [rng.standard_normal(shape) * (step + 1) for shape in SHAPES]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [(optim.adam(0.05, weight_decay=0.01), lambda ps: torch.optim.Adam(ps, lr=0.05, weight_decay=0.01)),
     (optim.sgd(0.1, 0.9), lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9))],
    ids=["adam", "sgd"],
)
def test_a_rate_changed_by_set_lr_survives_save_and_load_as_torchs(ours, theirs, tmp_path):
    """torch: param_group["lr"] = 0.01 after 2 steps, state_dict() loaded into an optimizer built
    with the original rate, 3 more steps at 0.01. Ours: set_lr(0.01), np.savez/np.load, 3 more
    steps: within 1e-12 of torch's, and the loaded optimizer's rate is 0.01."""
    rng = np.random.default_rng(0)
    start = [rng.standard_normal(shape) for shape in SHAPES]
    tensors = [torch.tensor(p.copy(), requires_grad=True) for p in start]
    reference = theirs(tensors)
    params = [p.copy() for p in start]
    first = ours.create(params)
    for step in range(2):
        grads = _grads(rng, step)
        params = first.step(params, grads)
        for t, g in zip(tensors, grads, strict=True):
            t.grad = torch.tensor(g)
        reference.step()
    first.set_lr(0.01)
    for group in reference.param_groups:
        group["lr"] = 0.01
    np.savez(tmp_path / "state.npz", **first.state_dict())
    saved_torch = reference.state_dict()
    reference = theirs(tensors)  # built at the original rate, as ours below
    reference.load_state_dict(saved_torch)
    resumed = ours.create(params)
    assert resumed.config.lr == ours.lr != 0.01
    resumed.load_state_dict(np.load(tmp_path / "state.npz"))
    assert resumed.config.lr == 0.01 == reference.param_groups[0]["lr"]
    for step in range(2, 5):
        grads = _grads(rng, step)
        params = resumed.step(params, grads)
        for t, g in zip(tensors, grads, strict=True):
            t.grad = torch.tensor(g)
        reference.step()
    for p, t in zip(params, tensors, strict=True):
        np.testing.assert_allclose(p, t.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_a_state_saved_before_the_lr_entry_loads_as_before():
    """An older state (no ``lr``) keeps the loading optimizer's own rate, with every buffer and
    count loaded: its next step is the step of an optimizer created at that rate."""
    source = optim.adam(0.05).create([np.ones(3)])
    source.step([np.ones(3)], [np.array([1.0, -2.0, 0.5])])
    source.set_lr(0.5)
    state = source.state_dict()
    assert float(state["lr"]) == 0.5 and state["lr"].dtype == np.float64 and state["lr"].shape == ()
    del state["lr"]
    loading = optim.adam(0.05).create([np.ones(3)])
    loading.load_state_dict(state)
    assert loading.config == optim.adam(0.05) and loading.steps == 1
    assert np.array_equal(loading.first[0], source.first[0])
    twin = optim.adam(0.05).create([np.ones(3)])
    twin.step([np.ones(3)], [np.array([1.0, -2.0, 0.5])])
    grad = [np.array([0.3, 0.2, -0.1])]
    assert np.array_equal(loading.step([np.ones(3)], grad)[0], twin.step([np.ones(3)], grad)[0])


def test_the_loaded_rate_scales_every_group():
    names = ["0.weight", "0.bias"]
    groups = [optim.group("bias", lr_scale=0.5)]
    source = optim.sgd(0.1).create([np.zeros((3, 2)), np.zeros(2)], names=names, groups=groups)
    source.set_lr(0.3)
    loading = optim.sgd(0.1).create([np.zeros((3, 2)), np.zeros(2)], names=names, groups=groups)
    loading.load_state_dict(source.state_dict())
    assert (loading.config_of(0).lr, loading.config_of(1).lr) == (0.3, 0.15)


@pytest.mark.parametrize(
    ("lr", "message"),
    [(np.array(-1.0), r"state entry lr: learning rate must be finite and nonnegative, got -1\.0"),
     (np.array(np.nan), r"state entry lr: learning rate must be finite"),
     (np.array(1e300), r"state entry lr: .*after conversion to binary32"),
     (np.array([0.1]),
      r"state entry lr must be a learning rate \(a 0-d real number\), got array\(\[0\.1\]\)"),
     (np.array(True), r"state entry lr must be a learning rate"),
     (np.array("0.1"), r"state entry lr must be a learning rate")],
)
def test_a_bad_lr_entry_is_refused_before_anything_changes(lr, message):
    source = optim.adam(0.1).create([np.zeros(2)])
    source.step([np.zeros(2)], [np.ones(2)])
    state = {**source.state_dict(), "lr": lr}
    target = optim.adam(0.1).create([np.zeros(2)])
    with pytest.raises(OptimizerError, match=message):
        target.load_state_dict(state)
    assert target.steps == 0 and not target.first[0].any() and target.config.lr == 0.1


def test_a_group_rate_out_of_range_at_the_loaded_lr_is_refused():
    groups = [optim.group("bias", lr_scale=1e30)]
    state = optim.sgd(0.1).create([np.zeros(2), np.zeros(2)], names=["w", "bias"]).state_dict()
    state["lr"] = np.array(1e10)  # 1e40 for the group: beyond binary32
    target = optim.sgd(0.1).create([np.zeros(2), np.zeros(2)], names=["w", "bias"], groups=groups)
    expected = r"state entry lr: .*binary32, got 1e\+40 \(inf in binary32\) \(in optim.group\('bias'"
    with pytest.raises(OptimizerError, match=expected):
        target.load_state_dict(state)
    assert target.config.lr == 0.1


def test_torchs_optimizer_format_is_refused_naming_the_one_read():
    module = torch.nn.Linear(3, 2).double()
    theirs = torch.optim.Adam(module.parameters(), lr=0.1)
    module(torch.ones(1, 3, dtype=torch.float64)).sum().backward()
    theirs.step()
    ours = optim.adam(0.1).create([np.zeros((2, 3)), np.zeros(2)])
    with pytest.raises(OptimizerError) as caught:
        ours.load_state_dict(theirs.state_dict())
    assert str(caught.value) == (
        "optimizer: state has the entries ['param_groups', 'state'] of torch's optimizer.state_dict(), a "
        "format torchlean does not read; load_state_dict takes the flat mapping of numpy arrays that "
        "torchlean's Optimizer.state_dict() returns (kind, steps, param_steps, lr, and first.<i>, "
        "second.<i>, third.<i> per parameter), as np.savez(path, **optimizer.state_dict()) saves it"
    )
    assert ours.steps == 0


def test_a_trainer_resumes_at_the_rate_set_lr_gave_it(tmp_path):
    """A run that lowered its rate with set_lr after 2 epochs, saved after 3 and resumed in a new
    trainer equals the uninterrupted run bit for bit (before the entry, the resumed run went on at
    the record's rate)."""
    rng = np.random.default_rng(2)
    x, labels = rng.standard_normal((10, 3)), rng.integers(0, 2, size=10)
    run = RunConfig(optim.adam(0.05), dtype="float64", param_groups=[optim.group("bias", lr_scale=0.5)])
    whole = Trainer(LAYER, objective="cross-entropy", config=run, seed=3)
    first = Trainer(LAYER, objective="cross-entropy", config=run, seed=3)
    for trainer in (whole, first):
        trainer.fit(x, labels, epochs=2, batch_size=4)
        trainer.optimizer.set_lr(0.01)
        trainer.fit(x, labels, epochs=1, batch_size=4)
    whole.fit(x, labels, epochs=2, batch_size=4)
    np.savez(tmp_path / "optimizer.npz", **first.optimizer.state_dict())
    resumed = Trainer(LAYER, objective="cross-entropy", config=run, seed=3)
    resumed.model.load_state(first.model.state())
    resumed.optimizer.load_state_dict(np.load(tmp_path / "optimizer.npz"))
    resumed.epochs_done = first.epochs_done
    assert resumed.lr == 0.01 and resumed.optimizer.config_of(1).lr == 0.005
    resumed.fit(x, labels, epochs=2, batch_size=4)
    for name, value in whole.model.state().items():
        assert np.array_equal(value, resumed.model.state()[name]), name


def test_a_scheduled_fit_resumes_unchanged_and_keeps_the_rate_set_before_it():
    """Under an epoch schedule, the state saved after fit holds the rate fit restored (the one
    set_lr gave before it), not the last scheduled one; the resumed scheduled fit equals the
    uninterrupted one and ends at that rate too. A state saved from on_batch holds that step's
    scheduled rate."""
    rng = np.random.default_rng(4)
    x, labels = rng.standard_normal((10, 3)), rng.integers(0, 2, size=10)
    run = RunConfig(optim.sgd(0.1, 0.9), dtype="float64")
    schedule = lambda e: 0.1 / (e + 1)  # noqa: E731
    whole = Trainer(LAYER, objective="cross-entropy", config=run, seed=1)
    first = Trainer(LAYER, objective="cross-entropy", config=run, seed=1)
    inside: list[float] = []
    for trainer in (whole, first):
        trainer.optimizer.set_lr(0.02)
    whole.fit(x, labels, epochs=4, batch_size=4, lr_schedule=schedule)
    first.fit(x, labels, epochs=2, batch_size=4, lr_schedule=schedule,
              on_batch=lambda e, loss: inside.append(float(first.optimizer.state_dict()["lr"])))
    assert inside == [0.1] * 3 + [0.05] * 3
    state = first.optimizer.state_dict()
    assert float(state["lr"]) == 0.02
    resumed = Trainer(LAYER, objective="cross-entropy", config=run, seed=1)
    resumed.model.load_state(first.model.state())
    resumed.optimizer.load_state_dict(state)
    resumed.epochs_done = 2
    resumed.fit(x, labels, epochs=2, batch_size=4, lr_schedule=schedule)
    assert resumed.lr == whole.lr == 0.02
    for name, value in whole.model.state().items():
        assert np.array_equal(value, resumed.model.state()[name]), name


@pytest.mark.parametrize("value", [0.5, 10**400])
def test_setting_trainer_lr_names_set_lr(value):
    trainer = Trainer(LAYER, config=RunConfig(optim.adam(0.05)))
    with pytest.raises(AttributeError) as caught:
        trainer.lr = value
    shown = "0.5" if value == 0.5 else "an integer of about 401 digits"
    assert str(caught.value) == (
        "Trainer.lr is read-only (the rate in effect, which a fit's lr_schedule sets); set the learning rate "
        f"with trainer.optimizer.set_lr({shown}) (torch's param_group['lr'] = ...), got trainer.lr = {shown}"
    )
    assert trainer.lr == 0.05
    trainer.optimizer.set_lr(0.5)
    assert trainer.lr == 0.5


def test_a_cli_checkpoint_without_the_lr_entry_resumes_as_with_it(capsys, tmp_path):
    """``torchlean train --save`` writes ``optimizer/lr`` (the --lr, fit having restored it after
    the schedule); a checkpoint written before the entry existed (the entry removed) resumes to
    the same bits."""
    argv = ("--dataset", "iris", "--hidden", "8", "--lr-schedule", "step:1:0.5")
    first, with_lr, without_lr = tmp_path / "first.npz", tmp_path / "a.npz", tmp_path / "b.npz"
    ok(capsys, *argv, "--epochs", "2", "--save", str(first))
    saved = arrays(first)
    assert saved["optimizer/lr"].dtype == np.float64 and float(saved["optimizer/lr"]) == 0.005
    older = tmp_path / "older.npz"
    with np.load(first, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files if name != "optimizer/lr"}
    np.savez(older, **entries)
    ok(capsys, "--resume", str(first), "--epochs", "3", "--save", str(with_lr))
    ok(capsys, "--resume", str(older), "--epochs", "3", "--save", str(without_lr))
    a, b = arrays(with_lr), arrays(without_lr)
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], strict=True, err_msg=name)
