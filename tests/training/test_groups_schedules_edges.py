"""Edge cases of parameter groups, schedules, minibatches, load_state and the CLI options that
review27_diff's mutants showed untested (each test kills a named mutant; oracles: torch 2.13 float32
bit for bit, hand values, the docstrings)."""
from __future__ import annotations

import argparse
import re

import numpy as np
import pytest
import torch

from torchlean import nn, optim
from torchlean.batches import BatchError, minibatches
from torchlean.cli import main
from torchlean.cli import train as train_module
from torchlean.cli._schedule import lr_schedule
from torchlean.nn.model import StateError, build
from torchlean.trainer import RunConfig, Trainer


def test_lerp_at_weight_one_half_is_torchs_second_branch():
    """O4 (`abs(weight) <= 0.5`): torch's lerp uses `end - (end - self) * (1 - w)` at w = 0.5,
    i.e. beta1 = 0.5; exp_avg must equal torch's bit for bit in float32."""
    rng = np.random.default_rng(1)
    p = [rng.standard_normal(64).astype(np.float32)]
    state = optim.adam(0.01, beta1=0.5).create(p)
    t = torch.tensor(p[0].copy(), requires_grad=True)
    ref = torch.optim.Adam([t], lr=0.01, betas=(0.5, 0.999), foreach=False)
    for _ in range(5):
        g = rng.standard_normal(64).astype(np.float32)
        p = state.step(p, [g])
        t.grad = torch.tensor(g)
        ref.step()
    assert np.array_equal(state.first[0], ref.state[t]["exp_avg"].numpy())


def test_warmup_cosine_accepts_min_lr_equal_to_lr():
    """L3 (`floor >= peak`): only min_lr > lr is refused; min_lr == lr is warmup then constant."""
    f = optim.warmup_cosine(0.1, 2, 4, min_lr=0.1)
    assert [f(t) for t in range(6)] == [0.0, 0.05, 0.1, 0.1, 0.1, 0.1]


def test_minibatches_seed_upper_bound():
    """B4 (`<= 2**64`): the docstring's range is [0, 2**64)."""
    x = np.arange(4.0)
    assert len(list(minibatches(x, batch_size=2, shuffle=True, seed=2**64 - 1, epoch=0))) == 2
    with pytest.raises(BatchError, match=r"seed must be an int in \[0, 2\*\*64\), got 18446744073709551616"):
        minibatches(x, seed=2**64)


def test_steps_done_counts_steps_when_parameter_0_is_a_buffer():
    """T5 (`param_steps[0]`): steps_done is the optimizer's step count, not parameter 0's."""
    trainer = Trainer(nn.sequential(nn.batch_norm1d(3, affine=False), nn.linear(3, 1)),
                      config=RunConfig(optimizer=optim.sgd(0.1), dtype="float64"), input_shape=(3,))
    trainer.fit(np.random.default_rng(0).standard_normal((8, 3)), np.ones((8, 1)), epochs=2, batch_size=4)
    assert trainer.model.names[0] == "0.running_mean" and trainer.steps_done == 4


def test_cli_warning_names_the_last_steps_scheduled_rate(capsys):
    """C11 (`scheduled(trainer.steps_done)`): 120 rows, batch 64: 2 steps an epoch, 4 in all; with
    warmup 2 the rates are 0, 5e29, 1e30, 5e29: the last step ran at 5e29 (not 0, step 4's)."""
    code = main(["train", "--dataset", "iris", "--optimizer", "sgd", "--lr", "1e30", "--lr-schedule",
                 "warmup_cosine:2", "--epochs", "2", "--batch-size", "64"])
    err = capsys.readouterr().err
    assert code == 0 and "(now 1e+30, 5e+29 at its last step by --lr-schedule warmup_cosine:2)" in err


def test_a_compiled_pattern_is_searched_not_matched():
    """G22 (`self.match.match`): a compiled pattern selects as re.search, as a string does."""
    g = optim.group(re.compile(r"bias$"), weight_decay=0.0)
    assert g.selects("0.bias", (3,)) and g.selects("2.bias", (3,)) and not g.selects("0.weight", (3, 3))


@pytest.mark.parametrize(("overrides", "message"), [
    ([("weight_decay", 0.0, 1)], r"group overrides must be \(name, value\) pairs"),  # G28
    ([1], r"group overrides must be \(name, value\) pairs"),
    ([(1, 0.0)], "a group override is named by a string, got 1"),  # G36
])
def test_param_group_built_directly_checks_its_overrides(overrides, message):
    with pytest.raises(optim.OptimizerError, match=message):
        optim.ParamGroup("bias", overrides)


def test_unexpected_keys_are_shown_as_repr_when_not_strings():
    """N8 (`str(n)`): a non-string key is reported as its repr (Fraction(1, 2), not 1/2)."""
    from fractions import Fraction
    model = build(nn.linear(2, 1), input_shape=(2,), seed=0)
    result = model.load_state({**model.state(), Fraction(1, 2): 1.0}, strict=False)
    assert result.unexpected_keys == ["Fraction(1, 2)"]


def test_strict_refusal_of_a_counter_suggests_strict_false():
    """N9: the hint names strict=False, as the README says."""
    model = build(nn.sequential(nn.linear(2, 2), nn.batch_norm1d(2)), input_shape=(2,), seed=0)
    with pytest.raises(StateError, match=r"drop them or pass strict=False"):
        model.load_state({**model.state(), "1.num_batches_tracked": torch.tensor(0)})


def test_warmup_cosine_spec_takes_one_parameter():
    """C14 (`len(parts) >= 2`): warmup_cosine:3:4 must not be read as warmup_cosine:3."""
    assert lr_schedule("warmup_cosine:3").warmup == 3
    with pytest.raises(argparse.ArgumentTypeError):
        lr_schedule("warmup_cosine:3:4")


def test_no_decay_may_spare_all_but_one_parameter():
    """C19 (`trainable[1:]`): a pattern that leaves one trainable parameter decaying is accepted."""
    model = build(nn.sequential(nn.linear(2, 3), nn.relu(), nn.linear(3, 1)), input_shape=(2,), seed=0)
    train_module._check_not_everything(optim.group(r"^(?!0\.weight$)", weight_decay=0.0), model)
    with pytest.raises(Exception, match="matches every trainable parameter"):
        train_module._check_not_everything(optim.group(r".", weight_decay=0.0), model)


def test_float8_torch_entries_load_exactly():
    """review27_diff F1: numpy has no float8 type; such entries are widened to float64 exactly."""
    module = torch.nn.Linear(2, 1)
    state = {name: value.detach().to(torch.float8_e4m3fn) for name, value in module.state_dict().items()}
    model = build(nn.linear(2, 1), input_shape=(2,), dtype="float64")
    model.load_state(state)
    np.testing.assert_array_equal(model.state()["weight"], state["weight"].double().numpy())


def test_group_spelling_conflicts_show_the_values():
    with pytest.raises(optim.OptimizerError, match=r"got betas=\(0\.9, 0\.99\), \{'beta1': 0\.8\}"):
        optim.group("bias", betas=(0.9, 0.99), beta1=0.8)
    with pytest.raises(optim.OptimizerError, match=r"got alpha=0\.9, decay=0\.8"):
        optim.group("bias", alpha=0.9, decay=0.8)


def test_the_var_hint_gives_torchs_unbiased_variance():
    import torchlean as tl

    x = tl.tensor(np.array([[1.0, 2.0, 4.0], [0.0, 3.0, 9.0]]))
    with pytest.raises(AttributeError, match="unbiased") as info:
        x.var(1)
    assert "/ (n - 1)" in str(info.value)
    composed = ((x - x.mean(1, keepdim=True)).square()).sum(1).numpy() / (3 - 1)
    np.testing.assert_allclose(composed, torch.tensor(x.numpy()).var(1).numpy(), rtol=1e-15)


def test_a_trainer_runs_a_selection_function_once_per_parameter():
    """review27_diff F7: the optimizer validated at construction is the one fit uses."""
    calls: list[str] = []

    def vectors(name: str, shape: tuple[int, ...]) -> bool:
        calls.append(name)
        return len(shape) < 2

    groups = [optim.group(vectors, weight_decay=0.0)]
    trainer = Trainer(nn.linear(2, 1), config=RunConfig(optimizer=optim.adamw(0.1), param_groups=groups))
    trainer.fit(np.ones((4, 2)), np.ones((4, 1)), epochs=1, batch_size=2)
    assert calls == ["weight", "bias"]


def test_trainer_batches_refuses_a_non_bool_shuffle():
    from torchlean.trainer import TrainerError

    trainer = Trainer(nn.linear(2, 1))
    with pytest.raises(TrainerError, match="shuffle must be a bool, got 'yes'"):
        next(trainer.batches(np.ones((4, 2)), np.ones((4, 1)), 2, shuffle="yes", epoch=0))


def test_an_epoch_schedule_has_no_step_rates_and_back():
    from torchlean.cli._schedule import LRSchedule

    with pytest.raises(ValueError, match="gives each step its rate, not each epoch"):
        LRSchedule("warmup_cosine", warmup=2).rate(0.1, 3, 0)
