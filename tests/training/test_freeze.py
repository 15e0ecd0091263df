"""Frozen parameter groups (``optim.group(pattern, frozen=True)``): torch's
``p.requires_grad_(False)`` in ``Trainer`` and in loops of one's own.

Oracles: torch float64 loops that freeze with ``requires_grad_(False)``, clip the trainable
parameters with ``clip_grad_norm_`` and step ``Adam(weight_decay=...)`` (or SGD) over every
parameter (torch skips those without a gradient); the kernel profiler's VJP counts (no gradient
computed for a frozen first layer); uninterrupted runs (save/resume, bit for bit); hand-made
refusals.
"""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.autograd import profiler
from torchlean.optim import GroupSelectionError, OptimizerError
from torchlean.trainer import RunConfig, Trainer

LAYER = nn.sequential(nn.linear(4, 6), nn.tanh(), nn.linear(6, 5), nn.tanh(), nn.linear(5, 3))
NAMES = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]
FREEZE_FIRST = [optim.group(r"^0\.", frozen=True)]


def _data(seed: int = 0, n: int = 20) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, 4)) * 3.0, rng.integers(0, 3, size=n)


def _torch_module(trainer: Trainer) -> torch.nn.Sequential:
    module = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 5),
                                 torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()})
    return module


def _close_to_torch(trainer: Trainer, module: torch.nn.Module) -> None:
    for name, value in trainer.model.state().items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=name)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_trainer_freezing_matches_a_torch_loop_with_requires_grad_false(execution):
    """3 epochs x 4 shuffled steps of Adam(weight_decay=0.1) with max_grad_norm=0.1 (every step
    clips): torch freezes layer 0 with requires_grad_(False) and clips the trainable parameters.
    Every parameter within 1e-12 after each epoch, the clipping norm too; layer 0 unchanged, bit
    for bit; no optimizer state or steps for it."""
    x, labels = _data()
    config = RunConfig(optim.adam(0.05, weight_decay=0.1), dtype="float64", execution=execution,
                       max_grad_norm=0.1, param_groups=FREEZE_FIRST)
    trainer = Trainer(LAYER, objective="cross-entropy", config=config, seed=2)
    initial = {name: value.copy() for name, value in trainer.model.state().items()}
    module = _torch_module(trainer)
    for p in module[0].parameters():
        p.requires_grad_(False)
    theirs = torch.optim.Adam(module.parameters(), lr=0.05, weight_decay=0.1)
    trainable = [p for p in module.parameters() if p.requires_grad]
    assert len(trainable) == 4
    norms: list[float] = []
    for epoch in range(3):
        trainer.fit(x, labels, epochs=1, batch_size=5,
                    on_batch=lambda e, loss: norms.append(trainer.grad_norm))
        order = np.random.default_rng([2, epoch]).permutation(20)  # fit's shuffle (seed, epoch)
        for start in range(0, 20, 5):
            rows = order[start:start + 5]
            theirs.zero_grad()
            out = module(torch.tensor(x[rows]))
            torch.nn.functional.cross_entropy(out, torch.tensor(labels[rows])).backward()
            assert module[0].weight.grad is None
            norm = torch.nn.utils.clip_grad_norm_(trainable, 0.1)
            assert float(norm) > 0.1
            assert norms[epoch * 4 + start // 5] == pytest.approx(float(norm), rel=1e-12)
            theirs.step()
        _close_to_torch(trainer, module)
    for name in ("0.weight", "0.bias"):
        np.testing.assert_array_equal(trainer.model.state()[name], initial[name])
    state = trainer.optimizer.state_dict()
    assert trainer.optimizer.frozen == (True, True, False, False, False, False)
    assert state["param_steps"].tolist() == [0, 0, 12, 12, 12, 12]
    assert not any(key.endswith((".0", ".1")) for key in state)
    for index, p in enumerate(module.parameters()):
        if index >= 2:
            np.testing.assert_allclose(state[f"first.{index}"], theirs.state[p]["exp_avg"].numpy(),
                                       rtol=1e-12, atol=1e-14)
            np.testing.assert_allclose(state[f"second.{index}"], theirs.state[p]["exp_avg_sq"].numpy(),
                                       rtol=1e-12, atol=1e-14)
        else:
            assert p not in theirs.state  # torch keeps no state for a frozen parameter either


def test_a_frozen_group_overlaps_a_no_decay_group_as_torchs_requires_grad_does():
    """torch's recipe: AdamW groups (decay: weights; no decay: every bias) and layer 0 frozen by
    requires_grad_(False), whatever its group. Here the frozen group selects 0.bias, which the
    no-decay group selects too: it is frozen; within 1e-12 of torch. A group whose every
    parameter a frozen group takes is accepted (torch's group of frozen parameters)."""
    x, labels = _data(1)
    groups = [optim.group(r"^0\.", frozen=True), optim.group("bias", weight_decay=0.0)]
    config = RunConfig(optim.adamw(0.05, weight_decay=0.2), dtype="float64", max_grad_norm=0.2,
                       param_groups=groups)
    trainer = Trainer(LAYER, objective="cross-entropy", config=config, seed=3)
    assert trainer.optimizer.membership == (0, 0, None, 1, None, 1)
    module = _torch_module(trainer)
    for p in module[0].parameters():
        p.requires_grad_(False)
    named = dict(module.named_parameters())
    theirs = torch.optim.AdamW(
        [{"params": [named[n] for n in NAMES if n.endswith("weight")]},
         {"params": [named[n] for n in NAMES if n.endswith("bias")], "weight_decay": 0.0}],
        lr=0.05, weight_decay=0.2,
    )
    trainer.fit(x, labels, epochs=2, batch_size=5, shuffle=False)
    for _ in range(2):
        for start in range(0, 20, 5):
            theirs.zero_grad()
            out = module(torch.tensor(x[start:start + 5]))
            torch.nn.functional.cross_entropy(out, torch.tensor(labels[start:start + 5])).backward()
            torch.nn.utils.clip_grad_norm_([p for p in module.parameters() if p.requires_grad], 0.2)
            theirs.step()
    _close_to_torch(trainer, module)
    only_frozen = [optim.group("^0", frozen=True), optim.group(r"^0\.bias", weight_decay=0.0)]
    assert Trainer(LAYER, config=RunConfig(optim.adamw(), param_groups=only_frozen)).optimizer.frozen[:2] == (
        True, True)
    with pytest.raises(OptimizerError, match=r"'2\.bias' is selected by optim\.group\('\^2'\) and"):
        Trainer(LAYER, config=RunConfig(param_groups=[optim.group("^2"), optim.group("bias")]))


def test_the_lr_scale_zero_workaround_differs_from_torch():
    """The gap frozen groups close: lr_scale=0.0 keeps layer 0 fixed, but its gradients count in
    max_grad_norm's norm, so the other layers are clipped harder than torch's."""
    x, labels = _data()
    config = RunConfig(optim.adam(0.05, weight_decay=0.1), dtype="float64", max_grad_norm=0.3,
                       param_groups=[optim.group(r"^0\.", lr_scale=0.0)])
    trainer = Trainer(LAYER, objective="cross-entropy", config=config, seed=2)
    module = _torch_module(trainer)
    for p in module[0].parameters():
        p.requires_grad_(False)
    theirs = torch.optim.Adam(module.parameters(), lr=0.05, weight_decay=0.1)
    trainer.fit(x, labels, epochs=1, batch_size=5, shuffle=False)
    for start in range(0, 20, 5):
        theirs.zero_grad()
        out = module(torch.tensor(x[start:start + 5]))
        torch.nn.functional.cross_entropy(out, torch.tensor(labels[start:start + 5])).backward()
        torch.nn.utils.clip_grad_norm_([p for p in module.parameters() if p.requires_grad], 0.3)
        theirs.step()
    assert not np.allclose(trainer.model.state()["4.weight"], module.state_dict()["4.weight"].numpy(),
                           rtol=1e-6, atol=0)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_no_gradient_is_computed_for_a_frozen_first_layer(execution):
    """The profiler's VJP counts over one epoch of 4 steps: the first linear and the tanh after
    it record no tape node when layer 0 is frozen (their operands require no gradient), so 2 of
    3 linear VJPs and 1 of 2 tanh VJPs run per step; the forward passes are the same."""
    x, labels = _data()
    counts = []
    for groups in ((), FREEZE_FIRST):
        config = RunConfig(optim.adam(0.05), dtype="float64", execution=execution, param_groups=groups)
        trainer = Trainer(LAYER, objective="cross-entropy", config=config, seed=2)
        with profiler.profile() as prof:
            trainer.fit(x, labels, epochs=1, batch_size=5)
        counts.append({k.op: (k.forward_calls, k.vjp_calls) for k in prof.kernels})
    plain, frozen = counts
    assert plain["linear"] == (12, 12) and frozen["linear"] == (12, 8)
    assert plain["tanh"] == (8, 8) and frozen["tanh"] == (8, 4)


def test_typed_graph_equals_eager_bit_for_bit_with_a_frozen_layer():
    x, labels = _data(3)
    states = []
    for execution in ("eager", "typed-graph"):
        config = RunConfig(optim.sgd(0.1, 0.9, weight_decay=0.01), dtype="float64", execution=execution,
                           max_grad_norm=0.5, param_groups=[optim.group(r"^2\.", frozen=True)])
        trainer = Trainer(LAYER, objective="cross-entropy", config=config, seed=4)
        trainer.fit(x, labels, epochs=2, batch_size=5)
        states.append(trainer.model.state())
    for name, value in states[0].items():
        np.testing.assert_array_equal(states[1][name], value, err_msg=name)


def test_own_loop_step_underscore_skips_frozen_parameters_and_their_gradients():
    """model.tensors() all require grad, so layer 0's gradients exist; the frozen group makes
    step_ ignore them (no update, out of the clipping norm), as torch's requires_grad_(False)
    loop, and clears them."""
    model = nn.build(LAYER, seed=5, dtype="float64")
    module = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 5),
                                 torch.nn.Tanh(), torch.nn.Linear(5, 3)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in model.state().items()})
    for p in module[0].parameters():
        p.requires_grad_(False)
    trainable = [p for p in module.parameters() if p.requires_grad]
    theirs = torch.optim.Adam(module.parameters(), lr=0.05, weight_decay=0.1)
    params = model.tensors()
    adam = optim.adam(0.05, weight_decay=0.1)
    ours = adam.create(model.parameters, names=model.names, groups=FREEZE_FIRST)
    before = params[0].numpy().copy()
    x, labels = _data(6)
    for start in range(0, 20, 5):
        with tl.session(profile="checked_cpu"):
            out = model(tl.tensor(x[start:start + 5]), params, training=True)
            tl.cross_entropy(out, labels[start:start + 5]).backward()
            assert params[0].grad is not None
            norm = ours.step_(params, max_grad_norm=0.3)
        assert all(p.grad is None for p in params)
        theirs.zero_grad()
        torch.nn.functional.cross_entropy(module(torch.tensor(x[start:start + 5])),
                                          torch.tensor(labels[start:start + 5])).backward()
        expected = torch.nn.utils.clip_grad_norm_(trainable, 0.3)
        theirs.step()
        assert norm == pytest.approx(float(expected), rel=1e-12)
    model.load_tensors(params)
    for name, value in model.state().items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14)
    np.testing.assert_array_equal(params[0].numpy(), before)


def test_step_ignores_a_frozen_parameters_gradient_and_keeps_no_state():
    params = [np.ones((2, 3)), np.ones(3)]
    ours = optim.adagrad(0.1, initial_accumulator_value=0.5).create(
        params, names=["w", "b"], groups=[optim.group("^w$", frozen=True)]
    )
    assert ours.frozen == (True, False)
    assert ours.first[0].strides == (0, 0) and not ours.first[0].flags.writeable  # one value, read-only
    assert ours.second[0].shape == (2, 3) and not ours.second[0].any()
    assert ours.second[1].tolist() == [0.5] * 3
    new = ours.step(params, [np.full((2, 3), 9.0), np.full(3, 2.0)])
    assert new[0] is params[0] and ours.param_steps == [0, 1] and ours.steps == 1
    assert sorted(ours.state_dict()) == ["first.1", "kind", "lr", "param_steps", "second.1", "steps"]
    with pytest.raises(OptimizerError, match=r"gradient 0 has shape \(3,\)"):  # still checked
        ours.step(params, [np.ones(3), None])


def test_batch_norm_statistics_of_a_frozen_layer_still_update_as_torchs():
    """requires_grad_(False) on a batch norm's weight and bias leaves its running statistics
    updating in training mode, in torch and here (SGD, float64)."""
    layer = nn.sequential(nn.linear(4, 6), nn.batch_norm1d(6), nn.relu(), nn.linear(6, 3))
    frozen = [optim.group(r"^1\.", frozen=True)]
    config = RunConfig(optim.sgd(0.1, 0.9), dtype="float64", param_groups=frozen)
    trainer = Trainer(layer, objective="cross-entropy", config=config, seed=1)
    assert trainer.optimizer.frozen == (False, False, True, True, True, True, False, False)
    module = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.BatchNorm1d(6), torch.nn.ReLU(),
                                 torch.nn.Linear(6, 3)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()}, strict=False)
    for p in module[1].parameters():
        p.requires_grad_(False)
    theirs = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
    x, labels = _data(7)
    trainer.fit(x, labels, epochs=1, batch_size=5, shuffle=False)
    for start in range(0, 20, 5):
        theirs.zero_grad()
        out = module(torch.tensor(x[start:start + 5]))
        torch.nn.functional.cross_entropy(out, torch.tensor(labels[start:start + 5])).backward()
        theirs.step()
    state = trainer.model.state()
    for name, value in state.items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
    assert not np.allclose(state["1.running_mean"], 0.0)
    np.testing.assert_array_equal(state["1.weight"], np.ones(6))


def test_a_frozen_run_saved_and_resumed_equals_the_uninterrupted_one(tmp_path):
    x, labels = _data(8)
    groups = [optim.group(r"^2\.", frozen=True), optim.group("bias", weight_decay=0.0)]
    config = RunConfig(optim.adamw(0.05, weight_decay=0.1, amsgrad=True), dtype="float64", max_grad_norm=0.4,
                       param_groups=groups)
    whole = Trainer(LAYER, objective="cross-entropy", config=config, seed=6)
    whole.fit(x, labels, epochs=3, batch_size=5)
    first = Trainer(LAYER, objective="cross-entropy", config=config, seed=6)
    first.fit(x, labels, epochs=2, batch_size=5)
    np.savez(tmp_path / "optimizer.npz", **first.optimizer.state_dict())
    resumed = Trainer(LAYER, objective="cross-entropy", config=config, seed=6)  # the shuffle's seed
    resumed.model.load_state(first.model.state())
    resumed.optimizer.load_state_dict(np.load(tmp_path / "optimizer.npz"))
    resumed.epochs_done = 2
    resumed.fit(x, labels, epochs=1, batch_size=5)
    for name, value in whole.model.state().items():
        assert np.array_equal(value, resumed.model.state()[name]), name
    # a state saved without the freezing holds the frozen parameters' buffers: refused, named
    plain = Trainer(LAYER, objective="cross-entropy", config=RunConfig(config.optimizer, dtype="float64"))
    with pytest.raises(OptimizerError, match=r"missing \[\], unexpected \['first\.2', 'first\.3', "):
        resumed.optimizer.load_state_dict(plain.optimizer.state_dict())


@pytest.mark.parametrize(
    ("groups", "message"),
    [
        ([optim.group(r"^9\.", frozen=True)],
         r"^optimizer: optim\.group\('\^9\\\\\.', frozen=True\) selects no parameter \(names: 0\.weight, "
         r"0\.bias, 2\.weight, 2\.bias, 4\.weight, 4\.bias\)$"),
        ([optim.group(".", frozen=True)],
         r"^optimizer: optim\.group\('\.', frozen=True\) freezes every parameter \(0\.weight, 0\.bias, "
         r"2\.weight, 2\.bias, 4\.weight, 4\.bias\), so nothing would train \(freeze fewer\)$"),
        ([optim.group("^0", frozen=True), optim.group("^[24]", frozen=True)],
         r"^optimizer: optim\.group\('\^0', frozen=True\) and optim\.group\('\^\[24\]', frozen=True\) freeze "
         r"every parameter \(0\.weight, "),
    ],
)
def test_a_freeze_selecting_nothing_or_everything_is_refused_naming_the_parameters(groups, message):
    config = RunConfig(optim.adam(0.05), param_groups=groups)
    with pytest.raises(OptimizerError, match=message) as caught:
        Trainer(LAYER, config=config)
    if "selects no" in message:
        assert isinstance(caught.value, GroupSelectionError) and caught.value.names == tuple(NAMES)
    with pytest.raises(OptimizerError, match=message):
        optim.adam(0.05).create([np.zeros(2)] * 6, names=NAMES, groups=groups)


def test_freezing_every_trainable_parameter_beside_buffers_is_refused():
    """Batch norm's running statistics are no trainable parameters: freezing every weight and
    bias leaves nothing to train, though not every parameter of the optimizer is frozen."""
    layer = nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4), nn.linear(4, 2))
    config = RunConfig(param_groups=[optim.group("weight|bias", frozen=True)])
    with pytest.raises(OptimizerError) as caught:
        Trainer(layer, config=config)
    assert str(caught.value) == (
        "optimizer: optim.group('weight|bias', frozen=True) freezes every trainable parameter of the model "
        "(0.weight, 0.bias, 1.weight, 1.bias, 2.weight, 2.bias), so nothing would train (freeze fewer)"
    )
    config = RunConfig(param_groups=[optim.group("running", frozen=True)])
    with pytest.raises(OptimizerError, match=r"selects only buffers \(1\.running_mean, 1\.running_var\)"):
        Trainer(layer, config=config)


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: optim.group("^0", frozen=True, weight_decay=0.0),
         r"optim\.group\('\^0', weight_decay=0\.0, frozen=True\) freezes its parameters, which are never "
         r"updated, so it takes no hyper-parameters \(got weight_decay\): give them to another group"),
        (lambda: optim.group("^0", frozen=True, lr_scale=0.5), r"takes no hyper-parameters \(got lr_scale\)"),
        (lambda: optim.group("^0", frozen=1), "frozen must be a bool, got 1"),
        (lambda: optim.group("^0", frozen="yes"), "frozen must be a bool, got 'yes'"),
        (lambda: optim.ParamGroup("^0", frozen=None), "frozen must be a bool, got None"),
    ],
)
def test_frozen_group_refusals(build, message):
    with pytest.raises(OptimizerError, match=message):
        build()


def test_a_frozen_group_describes_copies_and_pickles():
    group = optim.group(r"^0\.", frozen=np.True_)
    assert group.frozen is True and group.describe() == r"optim.group('^0\\.', frozen=True)"
    assert pickle.loads(pickle.dumps(group)) == group == copy.deepcopy(group)
    assert optim.group("bias").frozen is False and "frozen" not in optim.group("bias").describe()
    config = RunConfig(optim.adam(0.05), param_groups=[group])
    assert pickle.loads(pickle.dumps(config)).param_groups[0].frozen


def test_a_state_saved_under_other_frozen_groups_names_freezing_when_it_does_not_load():
    """review58 F3: the refusal listed the missing first.<i>/second.<i> entries only. Unfreezing
    loads (review89 F4): the parameters frozen where the state was saved start from no state, as
    torch's; a state whose entries are missing otherwise, and freezing, are still refused."""
    x, labels = _data(1)
    frozen = RunConfig(optim.adam(0.01), param_groups=[optim.group(r"^0\.", frozen=True)])
    saved = Trainer(LAYER, objective="cross-entropy", config=frozen, seed=0)
    saved.fit(x, labels, epochs=1, batch_size=5)
    plain = Trainer(LAYER, objective="cross-entropy", config=RunConfig(optim.adam(0.01)), seed=0)
    state = saved.optimizer.state_dict()
    assert state["param_steps"].tolist() == [0, 0, 4, 4, 4, 4]
    plain.optimizer.step(plain.model.parameters, [np.ones_like(p) for p in plain.model.parameters])
    plain.optimizer.load_state_dict(state)  # the table's stale moments from the step above are reset
    loaded = plain.optimizer.state_dict()
    for key, value in state.items():
        np.testing.assert_array_equal(loaded[key], value, err_msg=key)
    for key in ("first.0", "second.0", "first.1", "second.1"):
        assert not loaded[key].any(), key
    # the next step: Adam's first step (t = 1, moments from zero) for the unfrozen ones, by hand:
    # m_hat = g and v_hat = g**2, so p - lr * g / (|g| + eps)
    params = plain.model.parameters
    grads = [np.full_like(p, 0.5 - i) for i, p in enumerate(params)]
    stepped = plain.optimizer.step(params, grads)
    for i in (0, 1):
        np.testing.assert_allclose(stepped[i], params[i] - 0.01 * grads[i] / (np.abs(grads[i]) + 1e-8),
                                   rtol=1e-6, atol=0)
    assert plain.optimizer.param_steps == [1, 1, 5, 5, 5, 5]
    partial = {k: v for k, v in state.items() if k != "second.3"}  # one buffer of a stepped parameter
    with pytest.raises(OptimizerError, match=r"missing \['second.3'\], unexpected \[\]"):
        Trainer(LAYER, objective="cross-entropy", config=RunConfig(optim.adam(0.01)), seed=0) \
            .optimizer.load_state_dict(partial)
    counted = dict(state, param_steps=np.array([1, 0, 4, 4, 4, 4]))  # stepped, yet without buffers
    fresh = Trainer(LAYER, objective="cross-entropy", config=RunConfig(optim.adam(0.01)), seed=0)
    with pytest.raises(OptimizerError) as caught:
        fresh.optimizer.load_state_dict(counted)
    assert str(caught.value) == (
        "optimizer: state does not match this optimizer: missing ['first.0', 'second.0'], unexpected [] "
        "(per-parameter entries differ: a frozen parameter keeps no state, so a state with buffers for a "
        "parameter this optimizer freezes does not load, nor one without buffers for a parameter that has "
        "stepped (this optimizer freezes none); create it with the groups the state was saved with (a "
        "parameter frozen there and trainable here loads, from no state))"
    )
    with pytest.raises(OptimizerError, match=r"freezes parameters \[0, 1\]\); create it"):
        saved.optimizer.load_state_dict(fresh.optimizer.state_dict())
    smaller = optim.adam(0.01).create([np.zeros(2)]).state_dict()  # another model: no freezing hint
    with pytest.raises(OptimizerError, match=r"\(create the optimizer from the same record and parameters"):
        plain.optimizer.load_state_dict(smaller)


@pytest.mark.parametrize(("make", "torch_make"), [
    (lambda: optim.adagrad(0.05, initial_accumulator_value=0.5),
     lambda ps: torch.optim.Adagrad(ps, lr=0.05, initial_accumulator_value=0.5)),
    (lambda: optim.adam(0.05, amsgrad=True), lambda ps: torch.optim.Adam(ps, lr=0.05, amsgrad=True)),
    (lambda: optim.sgd(0.05, momentum=0.9), lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9)),
    (lambda: optim.rmsprop(0.01, centered=True), lambda ps: torch.optim.RMSprop(ps, lr=0.01, centered=True)),
], ids=["adagrad-initial-accumulator", "adam-amsgrad", "sgd-momentum", "rmsprop-centered"])
def test_unfreezing_by_loading_the_state_matches_torchs_requires_grad_true(make, torch_make):
    """review89 F4, review90 F1: two steps with layer 0 frozen, then the state loaded into an
    optimizer without the frozen group and three more steps; torch: one optimizer, layer 0's
    requires_grad_(False) for two steps, then True. Adagrad's unfrozen sum starts at
    initial_accumulator_value, as torch's (it started at 0: a full-rate first step)."""
    x, labels = _data(3)
    frozen = Trainer(LAYER, objective="cross-entropy", seed=2,
                     config=RunConfig(make(), dtype="float64", param_groups=FREEZE_FIRST))
    module = _torch_module(frozen)
    for p in module[0].parameters():
        p.requires_grad_(False)
    theirs = torch_make(list(module.parameters()))

    def torch_step(rows: np.ndarray) -> None:
        theirs.zero_grad()
        out = module(torch.tensor(x[rows]))
        torch.nn.functional.cross_entropy(out, torch.tensor(labels[rows])).backward()
        theirs.step()

    params = frozen.model.tensors()
    opt = frozen.optimizer
    for step in range(5):
        rows = np.arange(4 * step, 4 * step + 4)
        if step == 2:
            fresh = make().create(frozen.model.parameters, names=frozen.model.names)
            fresh.load_state_dict(opt.state_dict())
            opt = fresh
            for p in module[0].parameters():
                p.requires_grad_(True)
        with tl.session():
            tl.cross_entropy(frozen.model(tl.tensor(x[rows]), params, training=True), labels[rows]).backward()
        opt.step_(params)
        torch_step(rows)
    for name, tensor in zip(frozen.model.names, params, strict=True):
        np.testing.assert_allclose(tensor.numpy(), module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14,
                                   err_msg=name)
