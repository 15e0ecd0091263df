"""Parameter groups (``optim.group``, ``RunConfig(param_groups=)``) and Adam's ``amsgrad``.

Oracles: torch's optimizers in float64 given the same parameter groups (``[{"params": [...],
"weight_decay": 0.0}, ...]``) and the same gradients; hand-made refusals.
"""

from __future__ import annotations

import copy
import dataclasses
import math
import re

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.trainer import Objective, RunConfig, Trainer, TrainerError

NAMES = ["0.weight", "0.bias", "2.weight", "2.bias"]
SHAPES = [(5, 3), (5,), (4, 5), (4,)]


def _arrays(seed: int) -> list[np.ndarray]:
    rng = np.random.default_rng(seed)
    return [rng.standard_normal(shape) for shape in SHAPES]


def _torch_groups(tensors, membership, overrides, lr):
    """torch's param groups: one per group (its overrides; lr scaled) and one for the rest."""
    groups = []
    for index, changes in enumerate(overrides):
        params = [t for t, m in zip(tensors, membership, strict=True) if m == index]
        group = {"params": params, **{k: v for k, v in changes.items() if k != "lr_scale"}}
        group["lr"] = lr * changes.get("lr_scale", 1.0)
        if "beta1" in group:
            group["betas"] = (group.pop("beta1"), group.pop("beta2"))
        groups.append(group)
    rest = [t for t, m in zip(tensors, membership, strict=True) if m is None]
    if rest:
        groups.append({"params": rest})
    return groups


CASES = [
    # (our record, torch class and base kwargs, groups as (match, overrides), membership)
    (optim.adamw(0.01, weight_decay=0.1), torch.optim.AdamW, {"lr": 0.01, "weight_decay": 0.1},
     [("bias", {"weight_decay": 0.0})], [None, 0, None, 0]),
    (optim.adam(0.02, weight_decay=0.01), torch.optim.Adam, {"lr": 0.02, "weight_decay": 0.01},
     [(r"^0\.", {"lr_scale": 0.1, "amsgrad": True}), ("^2.bias$", {"beta1": 0.5, "beta2": 0.9})],
     [0, 0, None, 1]),
    (optim.sgd(0.1, 0.9, weight_decay=5e-4), torch.optim.SGD,
     {"lr": 0.1, "momentum": 0.9, "weight_decay": 5e-4},
     [(lambda name, shape: len(shape) < 2, {"weight_decay": 0.0, "lr_scale": 2.0, "nesterov": True})],
     [None, 0, None, 0]),
    (optim.rmsprop(0.01), torch.optim.RMSprop, {"lr": 0.01, "alpha": 0.99},
     [("weight", {"decay": 0.9, "eps": 1e-6})], [0, None, 0, None]),
    (optim.adagrad(0.05), torch.optim.Adagrad, {"lr": 0.05, "eps": 1e-10},
     [("2", {"lr_scale": 0.0})], [None, None, 0, 0]),
]


def _torch_names(changes: dict) -> dict:
    renamed = dict(changes)
    if "decay" in renamed:
        renamed["alpha"] = renamed.pop("decay")
    return renamed


@pytest.mark.parametrize("case", range(len(CASES)))
def test_groups_match_torch_param_groups(case):
    """Six steps with changing gradients, a rate change after the third (every group scaled,
    as torch's schedulers do): each parameter within 1e-12 of torch's with the same groups."""
    config, torch_class, base, spec, membership = CASES[case]
    groups = [optim.group(match, **changes) for match, changes in spec]
    params = _arrays(1)
    ours = config.create(params, names=NAMES, groups=groups)
    assert [ours.membership[i] for i in range(4)] == membership
    tensors = [torch.tensor(p.copy(), requires_grad=True) for p in params]
    overrides = [_torch_names(changes) for _, changes in spec]
    torch_opt = torch_class(_torch_groups(tensors, membership, overrides, base["lr"]), **base)
    initial_lrs = [g["lr"] for g in torch_opt.param_groups]
    rng = np.random.default_rng(7)
    for step in range(6):
        if step == 3:
            ours.set_lr(base["lr"] * 0.5)
            for g, lr in zip(torch_opt.param_groups, initial_lrs, strict=True):
                g["lr"] = lr * 0.5
        grads = [rng.standard_normal(shape) * (step + 1) for shape in SHAPES]
        params = ours.step(params, grads)
        for t, g in zip(tensors, grads, strict=True):
            t.grad = torch.tensor(g)
        torch_opt.step()
        for name, p, t in zip(NAMES, params, tensors, strict=True):
            np.testing.assert_allclose(p, t.detach().numpy(), rtol=1e-12, atol=1e-14, err_msg=name)
    frozen = [i for i, m in enumerate(membership) if m is not None and spec[m][1].get("lr_scale") == 0.0]
    for index in frozen:  # lr_scale 0 leaves a parameter where it was
        np.testing.assert_array_equal(params[index], _arrays(1)[index])


@pytest.mark.parametrize("cls", [torch.optim.Adam, torch.optim.AdamW])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_amsgrad_matches_torch(cls, dtype):
    """AMSGrad: gradients that shrink after growing, so the running maximum of v differs from v
    (the step is then smaller than plain Adam's), against torch's single-tensor path."""
    build = optim.adam if cls is torch.optim.Adam else optim.adamw
    config = build(0.05, weight_decay=0.01, amsgrad=True)
    plain = build(0.05, weight_decay=0.01).create([np.zeros(3, dtype)])
    param = np.array([0.5, -1.0, 2.0], dtype=dtype)
    ours = config.create([param])
    t = torch.tensor(param.copy(), requires_grad=True)
    theirs = cls([t], lr=0.05, weight_decay=0.01, amsgrad=True, foreach=False)
    plain_param = param.copy()
    for scale in (1.0, 10.0, 0.1, 0.01, 5.0):
        grad = (np.array([1.0, -2.0, 0.5]) * scale).astype(dtype)
        (param,) = ours.step([param], [grad])
        (plain_param,) = plain.step([plain_param], [grad])
        t.grad = torch.tensor(grad)
        theirs.step()
        tolerance = 1e-12 if dtype == np.float64 else 2e-6
        np.testing.assert_allclose(param, t.detach().numpy(), rtol=tolerance, atol=tolerance)
    assert ours.third[0] is not None and np.all(ours.third[0] >= ours.second[0])
    assert not np.allclose(param, plain_param)  # the maximum changed the steps
    assert plain.third == [None]


def test_amsgrad_nan_propagates_as_torch_maximum():
    ours = optim.adam(0.1, amsgrad=True).create([np.zeros(2)])
    (param,) = ours.step([np.zeros(2)], [np.array([np.nan, 1.0])])
    t = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    theirs = torch.optim.Adam([t], lr=0.1, amsgrad=True, foreach=False)
    t.grad = torch.tensor([math.nan, 1.0], dtype=torch.float64)
    theirs.step()
    np.testing.assert_array_equal(param, t.detach().numpy())
    assert np.isnan(ours.third[0][0])


def test_describe_shows_amsgrad_and_groups():
    assert optim.adam(0.1, amsgrad=True).describe() == (
        "optim.adam(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.0, amsgrad=True)"
    )
    assert optim.group("bias", weight_decay=0, lr_scale=2).describe() == (
        "optim.group('bias', weight_decay=0, lr_scale=2.0)"
    )
    assert optim.group(re.compile("b", re.I), alpha=0.5).describe() == (
        "optim.group(re.compile('b', re.IGNORECASE), alpha=0.5)"
    )

    def no_decay(name, shape):
        return len(shape) < 2

    assert optim.group(no_decay, betas=(0.8, 0.9)).describe() == (
        "optim.group(test_describe_shows_amsgrad_and_groups.<locals>.no_decay, betas=(0.8, 0.9))"
    )


def test_model_loop_with_groups_matches_torch():
    """Model.names + create(groups=) + step_ in a loop of one's own: no weight decay on biases
    under AdamW, the torch recipe, against torch's module and param groups."""
    model = nn.build(nn.sequential(nn.linear(3, 5), nn.relu(), nn.linear(5, 2)), seed=3, dtype="float64")
    assert model.names == NAMES
    module = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in model.state().items()})
    decay = [p for n, p in module.named_parameters() if not n.endswith("bias")]
    no_decay = [p for n, p in module.named_parameters() if n.endswith("bias")]
    theirs = torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=0.05,
                               weight_decay=0.3)
    params = model.tensors()
    ours = optim.adamw(0.05, weight_decay=0.3).create(
        model.parameters, names=model.names, groups=[optim.group(r"bias$", weight_decay=0.0)]
    )
    rng = np.random.default_rng(0)
    for _ in range(4):
        x, labels = rng.standard_normal((8, 3)), rng.integers(0, 2, size=8)
        with tl.session(profile="checked_cpu"):
            loss = tl.cross_entropy(model(tl.tensor(x), params, training=True), labels)
            loss.backward()
            ours.step_(params)
        theirs.zero_grad()
        torch.nn.functional.cross_entropy(module(torch.tensor(x)), torch.tensor(labels)).backward()
        theirs.step()
    model.load_tensors(params)
    for name, value in model.state().items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14)


def test_trainer_param_groups_match_torch():
    """Trainer(config=RunConfig(param_groups=...)).fit against a torch loop with param groups
    (no shuffle: the same minibatches)."""
    layer = nn.sequential(nn.linear(3, 5), nn.relu(), nn.linear(5, 2))
    groups = [optim.group("bias", weight_decay=0.0), optim.group("^2.weight", lr_scale=0.5)]
    adamw = optim.adamw(0.05, weight_decay=0.3, amsgrad=True)
    config = RunConfig(adamw, dtype="float64", param_groups=groups)
    trainer = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=4)
    module = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.ReLU(), torch.nn.Linear(5, 2)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()})
    named = dict(module.named_parameters())
    theirs = torch.optim.AdamW(
        [{"params": [named["0.weight"]]},
         {"params": [named["0.bias"], named["2.bias"]], "weight_decay": 0.0},
         {"params": [named["2.weight"]], "lr": 0.025}],
        lr=0.05, weight_decay=0.3, amsgrad=True,
    )
    rng = np.random.default_rng(1)
    x, labels = rng.standard_normal((12, 3)), rng.integers(0, 2, size=12)
    trainer.fit(x, labels, epochs=2, batch_size=4, shuffle=False)
    for _ in range(2):
        for start in range(0, 12, 4):
            theirs.zero_grad()
            out = module(torch.tensor(x[start:start + 4]))
            torch.nn.functional.cross_entropy(out, torch.tensor(labels[start:start + 4])).backward()
            theirs.step()
    for name, value in trainer.model.state().items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14)


def test_trainer_refuses_groups_at_construction():
    layer = nn.sequential(nn.linear(3, 5), nn.relu(), nn.linear(5, 2))
    config = RunConfig(optim.adamw(0.05), param_groups=[optim.group("bais", weight_decay=0.0)])
    with pytest.raises(OptimizerError, match=r"selects no parameter \(names: 0.weight, 0.bias, 2.weight"):
        Trainer(layer, config=config)
    config = RunConfig(optim.adamw(0.05), param_groups=[optim.group("bias"), optim.group("^2")])
    with pytest.raises(OptimizerError, match=r"'2\.bias' is selected by"):
        Trainer(layer, config=config)
    config = RunConfig(optim.adam(0.05), param_groups=[optim.group("bias", momentum=0.9)])
    with pytest.raises(OptimizerError, match=r"sets momentum, which optim\.adam does not take"):
        Trainer(layer, config=config)
    with pytest.raises(TrainerError, match=r"param_groups must be a sequence of optim\.group"):
        RunConfig(param_groups=optim.group("bias"))
    with pytest.raises(TrainerError, match=r"param_groups must be a sequence of optim\.group"):
        RunConfig(param_groups=[{"params": "bias"}])


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: optim.group("(", weight_decay=0.0), "is not a regular expression"),
        (lambda: optim.group(3), "selects by a regular expression"),
        (lambda: optim.group("bias", lr=0.1), "takes lr_scale, not lr"),
        (lambda: optim.group("bias", lr_scale=-1), "lr_scale must be finite and nonnegative, got -1"),
        (lambda: optim.group("bias", lr_scale=math.inf), "lr_scale must be finite"),
        (lambda: optim.group("bias", weight_decay="0"), "must be a bool or a real number, got '0'"),
        (lambda: optim.group("bias", weight_decay=10**400), "beyond the float range"),
        (lambda: optim.group("bias", betas=(0.9,)), "betas must be a pair"),
        (lambda: optim.group("bias", betas=(0.9, 0.99), beta1=0.8), "not both"),
        (lambda: optim.group("bias", lr_scale=False), "lr_scale must be a real number, got False"),
        (lambda: optim.group("bias", alpha=0.9, decay=0.8), "pass alpha or decay, not both"),
        (lambda: optim.group(re.compile(b"bias")), "must match text"),
    ],
)
def test_group_refusals(build, message):
    with pytest.raises(OptimizerError, match=message):
        build()


@pytest.mark.parametrize(
    ("groups", "names", "message"),
    [
        ([optim.group("bias")], None, "pass names="),
        ([optim.group("bias")], NAMES[:3], "expected 4 names"),
        ([optim.group("bias")], [0, 1, 2, 3], "names must be strings, got 0"),
        ([optim.group("bias")], "0.bias", "names must be a sequence of strings"),
        (optim.group("bias"), NAMES, "groups must be a sequence"),
        (["bias"], NAMES, "group 0 must be an optim.group"),
        ([optim.group("bias"), optim.group("^2")], NAMES, "'2.bias' is selected by"),
        ([optim.group("nothing")], NAMES, "selects no parameter"),
        ([optim.group("bias", weight_decay=-1.0)], NAMES,
         r"nonnegative, got -1.0 \(in optim.group\('bias', weight_decay=-1.0\)\)"),
        ([optim.group("bias", lr_scale=1e300)], NAMES, "learning rate must be finite"),
        ([optim.group("bias", amsgrad=1.0)], NAMES, "amsgrad must be a bool, got 1.0"),
        ([optim.group("bias", amsgrad=1)], NAMES, r"amsgrad must be a bool, got 1 \("),
        ([optim.group(lambda name, shape: 1)], NAMES, "must return a bool"),
    ],
)
def test_create_refusals(groups, names, message):
    with pytest.raises(OptimizerError, match=message):
        optim.adamw(0.01).create(_arrays(0), names=names, groups=groups)


def test_set_lr_refuses_a_scaled_rate_out_of_domain_and_changes_nothing():
    ours = optim.sgd(0.1).create(_arrays(0), names=NAMES, groups=[optim.group("bias", lr_scale=1e30)])
    assert ours.config_of(1).lr == pytest.approx(0.1 * 1e30)
    with pytest.raises(OptimizerError, match="after conversion to binary32"):
        ours.set_lr(1e10)  # 1e40 overflows binary32
    assert ours.config.lr == 0.1 and ours.config_of(1).lr == pytest.approx(1e29)
    ours.set_lr(0.2)
    assert (ours.config_of(0).lr, ours.config_of(1).lr) == (0.2, pytest.approx(2e29))


def test_no_groups_keeps_one_record():
    ours = optim.adam(0.1).create(_arrays(0), names=NAMES)
    assert all(ours.config_of(i) is ours.config for i in range(4)) and ours.names == tuple(NAMES)
    assert optim.adam(0.1).create(_arrays(0)).names == ()


def test_a_compiled_pattern_and_alpha_select_and_override():
    groups = [optim.group(re.compile(r"^2\."), alpha=0.5)]
    state = optim.rmsprop(0.1).create(_arrays(0), names=NAMES, groups=groups)
    assert state.membership == (None, None, 0, 0) and state.config_of(2).decay == 0.5


def test_a_group_selecting_only_buffers_is_refused_by_the_trainer():
    layer = nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4), nn.linear(4, 2))
    config = RunConfig(optim.sgd(0.1), param_groups=[optim.group("running", lr_scale=0.5)])
    with pytest.raises(OptimizerError, match=r"selects only buffers \(1.running_mean, 1.running_var\)"):
        Trainer(layer, config=config)
    config = RunConfig(optim.sgd(0.1), param_groups=[optim.group("^1", lr_scale=0.5)])  # weight, bias too
    assert Trainer(layer, config=config).model.names[:6] == [
        "0.weight", "0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"
    ]


def test_the_refusal_names_every_parameter_up_to_forty():
    names = [f"{i}.weight" for i in range(50)]
    with pytest.raises(optim.GroupSelectionError) as info:
        optim.sgd().create([np.zeros(1)] * 50, names=names, groups=[optim.group("bias")])
    assert info.value.names == tuple(names) and str(info.value).endswith("19.weight, ... (30 more))")
    assert optim.names_shown(names[:40]) == ", ".join(names[:40])


def test_an_optimizer_built_directly_steps():
    """Review27 F7: Optimizer(config, first, second, steps) without create's extra fields."""
    state = optim.Optimizer(optim.sgd(0.5), [np.zeros(2)], [np.zeros(2)], [0])
    (value,) = state.step([np.ones(2)], [np.ones(2)])
    np.testing.assert_array_equal(value, [0.5, 0.5])


def test_an_unrun_trainer_with_a_lambda_group_deep_copies():
    layer = nn.sequential(nn.linear(3, 2))
    groups = [optim.group(lambda n, s: len(s) < 2)]
    trainer = Trainer(layer, config=RunConfig(optim.adamw(), param_groups=groups))
    clone = copy.deepcopy(trainer)
    assert clone.config.param_groups[0].selects("0.bias", (2,))


@pytest.mark.parametrize(
    ("config", "cls", "options"),
    [(optim.adam(0.1, amsgrad=True), torch.optim.Adam, {"amsgrad": True}),
     (optim.rmsprop(0.1, centered=True), torch.optim.RMSprop, {"centered": True})],
)
def test_an_optimizer_built_directly_keeps_its_third_buffer(config, cls, options):
    """Review27_sched F2: a directly built AMSGrad or centered RMSprop optimizer steps as torch's."""
    state = optim.Optimizer(config, [np.zeros(2)], [np.zeros(2)], [0])
    t = torch.zeros(2, dtype=torch.float64, requires_grad=True)
    reference = cls([t], lr=0.1, foreach=False, **options)
    param = np.zeros(2)
    for g in ([1.0, -2.0], [0.1, 0.3], [3.0, 0.0]):
        (param,) = state.step([param], [np.array(g)])
        t.grad = torch.tensor(g, dtype=torch.float64)
        reference.step()
    np.testing.assert_allclose(param, t.detach().numpy(), rtol=1e-12, atol=1e-15)


def test_a_group_cannot_set_adagrads_starting_sum():
    """torch's Adagrad starts every group's sum at the constructor's value (review27_sched F3)."""
    with pytest.raises(OptimizerError, match="takes from the optimizer only"):
        groups = [optim.group("bias", initial_accumulator_value=1.0)]
        optim.adagrad(0.1).create(_arrays(0), names=NAMES, groups=groups)


@pytest.mark.parametrize("pattern", ["a{99999999999}", "(" * 5000 + ")" * 5000])
def test_a_pattern_python_cannot_compile_is_refused(pattern):
    """review27_user F1: OverflowError and RecursionError from re.compile escaped as tracebacks.
    Python's default recursion limit, which an earlier test in the process may have raised (mypy's
    API sets 2**14, under which 5000 nested groups compile), is set for the call."""
    import sys

    limit = sys.getrecursionlimit()
    sys.setrecursionlimit(1000)
    try:
        with pytest.raises(OptimizerError, match="is not a regular expression Python compiles"):
            optim.group(pattern)
    finally:
        sys.setrecursionlimit(limit)


def test_betas_as_a_numpy_pair_are_taken_as_torch_takes_them():
    """review196 F2: ``betas=np.array([0.9, 0.99])`` was refused as "not a pair"; torch takes it.
    A generator is refused, saying what a pair is."""
    pair = np.array([0.9, 0.99])
    assert optim.adam(betas=pair) == optim.adam(beta1=0.9, beta2=0.99)
    assert optim.group("bias", betas=pair) == optim.group("bias", beta1=0.9, beta2=0.99)
    with pytest.raises(optim.OptimizerError, match=r"^optimizer: betas must be a pair \(beta1, beta2\), "
                       r"as torch's: a tuple, list or 1-d array of two numbers, got "):
        optim.adam(betas=(b for b in (0.9, 0.99)))
    with pytest.raises(optim.OptimizerError, match="a tuple, list or 1-d array of two numbers, got "):
        optim.group("bias", betas=np.array([0.9, 0.99, 0.5]))


def test_group_overrides_in_torchs_spelling_are_named_as_written():
    """review196 F3: ``alpha=`` and ``betas=`` were named by their stored fields (decay, beta1),
    in refusals and in describe()."""
    params, names = [np.zeros(2), np.zeros(2)], ["0.weight", "0.bias"]
    with pytest.raises(optim.OptimizerError) as caught:
        optim.adam().create(params, names=names, groups=[optim.group("bias", alpha=0.9)])
    assert str(caught.value) == ("optimizer: optim.group('bias', alpha=0.9) sets alpha, which optim.adam "
                                 "does not take (accepted: beta1, beta2, eps, weight_decay, amsgrad, "
                                 "lr_scale)")
    with pytest.raises(optim.OptimizerError) as caught:
        optim.sgd(0.1, 0.9).create(params, names=names, groups=[optim.group("bias", betas=(0.9, 0.99))])
    assert str(caught.value) == ("optimizer: optim.group('bias', betas=(0.9, 0.99)) sets betas, which "
                                 "optim.sgd does not take (accepted: momentum, dampening, weight_decay, "
                                 "nesterov, lr_scale)")
    with pytest.raises(optim.OptimizerError) as caught:
        optim.adam().create(params, names=names, groups=[optim.group("bias", betas=(0.9, 1.5))])
    assert str(caught.value) == ("optimizer: beta2 must be finite and satisfy 0 <= beta2 < 1, got 1.5 (in "
                                 "optim.group('bias', betas=(0.9, 1.5)))")
    assert optim.group("bias", weight_decay=0.0, betas=(0.8, 0.9)).describe() == (
        "optim.group('bias', weight_decay=0.0, betas=(0.8, 0.9))"
    )


def test_a_group_function_that_cannot_take_name_and_shape_is_refused_when_built():
    """review196 F4: ``lambda name: ...`` escaped as Python's TypeError from inside create or the
    Trainer; it is refused when the group is built, naming the call."""
    with pytest.raises(optim.OptimizerError) as caught:
        optim.group(lambda name: name.endswith("bias"), weight_decay=0.0)
    assert str(caught.value) == (
        "optimizer: a group function is called as match(name, shape), name a string and shape a tuple of "
        "ints, and returns a bool; "
        "test_a_group_function_that_cannot_take_name_and_shape_is_refused_when_built.<locals>.<lambda> takes "
        "(name)"
    )

    def flexible(*args: object) -> bool:
        return len(args) == 2

    assert optim.group(flexible).selects("0.bias", (3,))


def test_a_group_changed_by_replace_describes_itself_and_masked_betas_are_refused_by_name():
    """review200 F3: a group built with betas= and replaced without beta2 raised KeyError from
    describe(), which refusals call; F10: a masked betas entry was refused as "got None"."""
    changed = dataclasses.replace(optim.group("w", betas=(0.8, 0.9)), overrides=(("beta1", 0.5),))
    assert changed.describe() == "optim.group('w', beta1=0.5)"
    with pytest.raises(optim.OptimizerError) as caught:
        optim.adam(0.1, betas=np.ma.array([0.9, 0.99], mask=[0, 1]))
    assert str(caught.value) == (
        "optimizer: betas must be a pair of numbers, got a masked array with a masked entry"
    )


def test_a_model_without_parameters_builds_with_groups_and_predicts():
    """review200 F4: with param_groups, a Trainer of a model without parameters could not be built
    (create()'s empty-list refusal); it builds and predicts, and fit says why it cannot train."""
    trainer = Trainer(nn.dropout(0.5), input_shape=(4,), config=RunConfig(optim.sgd(0.1),
                      param_groups=[optim.group("w")]))
    x = np.ones((2, 4), dtype=np.float32)
    np.testing.assert_array_equal(trainer.predict(x), x)  # dropout is off in predict
    with pytest.raises(TrainerError, match=r"^the model has no parameters to train \(dropout\(0\.5\)\)"):
        trainer.fit(x, x, epochs=1)
