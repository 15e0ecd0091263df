"""``Trainer.fit(lr_schedule=...)`` against torch's epoch-wise LR schedulers (torch.optim in float64)."""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from torchlean import nn, optim
from torchlean.lr_schedules import ScheduleError
from torchlean.trainer import RunConfig, Trainer, TrainerError


def _torch_fit(weights, x, y, make_optimizer, make_scheduler, epochs, batch_size):
    """torch's loop: one scheduler step per epoch, minibatches in row order, mean MSE."""
    w, b = (torch.tensor(p, requires_grad=True) for p in weights)
    opt = make_optimizer([w, b])
    scheduler = make_scheduler(opt)
    for _ in range(epochs):
        for start in range(0, len(x), batch_size):
            xb, yb = torch.tensor(x[start : start + batch_size]), torch.tensor(y[start : start + batch_size])
            opt.zero_grad()
            torch.nn.functional.mse_loss(xb @ w.T + b, yb).backward()
            opt.step()
        scheduler.step()
    return [w.detach().numpy(), b.detach().numpy()]


def _torch_lrs(base_lr, make_scheduler, epochs):
    """The learning rate torch's scheduler gives each epoch (read before the epoch's steps)."""
    opt = torch.optim.SGD([torch.zeros(1, requires_grad=True)], lr=base_lr)
    scheduler = make_scheduler(opt)
    lrs = []
    for _ in range(epochs):
        lrs.append(opt.param_groups[0]["lr"])
        opt.step()
        scheduler.step()
    return lrs


@pytest.mark.parametrize(
    ("ours", "theirs", "make_scheduler"),
    [
        (
            optim.sgd(0.1, 0.9),
            lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9),
            lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=2, gamma=0.5),
        ),
        (
            optim.adam(0.05),
            lambda ps: torch.optim.Adam(ps, lr=0.05),
            lambda opt: torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=5, eta_min=0.001),
        ),
    ],
    ids=["sgd-steplr", "adam-cosine"],
)
def test_scheduled_training_matches_torch(ours, theirs, make_scheduler):
    """Six epochs split over two fit calls (epochs count over the trainer's lifetime)."""
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((12, 3)), rng.standard_normal((12, 2))
    trainer = Trainer(nn.linear(3, 2), config=RunConfig(optimizer=ours, dtype="float64"))
    weights = [p.copy() for p in trainer.model.parameters]
    lrs = _torch_lrs(ours.lr, make_scheduler, 6)
    assert len(set(lrs)) > 2
    seen = []

    def schedule(epoch):
        seen.append(epoch)
        return lrs[epoch]

    trainer.fit(x, y, epochs=2, batch_size=5, shuffle=False, lr_schedule=schedule)
    trainer.fit(x, y, epochs=4, batch_size=5, shuffle=False, lr_schedule=schedule)
    assert seen == [0, 1, 2, 3, 4, 5]
    expected = _torch_fit(weights, x, y, theirs, make_scheduler, 6, 5)
    for mine, torch_value in zip(trainer.model.parameters, expected, strict=True):
        np.testing.assert_allclose(mine, torch_value, rtol=1e-12, atol=1e-14)


def test_the_optimizer_lr_applies_again_after_fit():
    """After a scheduled fit, step uses the optimizer's own lr: SGD with lr 0.1 moves by
    0.1 * gradient, not by the last scheduled lr."""
    trainer = Trainer(
        nn.linear(1, 1, bias=False), config=RunConfig(optimizer=optim.sgd(0.1), dtype="float64")
    )
    x, y = np.array([[1.0]]), np.array([[0.0]])
    trainer.fit(x, y, epochs=2, lr_schedule=lambda e: 1e-3)
    (w,) = trainer.model.parameters
    before = float(w[0, 0])
    trainer.step(x, y)
    assert float(trainer.model.parameters[0][0, 0]) == pytest.approx(before - 0.1 * 2 * before, rel=1e-15)


def test_a_set_lr_during_an_unscheduled_fit_stays_as_in_torch():
    """review54 F1: ``optimizer.set_lr`` from ``on_batch`` (a ported manual decay) was undone when
    ``fit`` returned, although no schedule was given; torch's ``param_group["lr"] = 0.02`` stays.
    The weights after a second fit equal torch's SGD with that change (float64)."""
    x = np.random.default_rng(11).standard_normal((8, 2))
    y = x @ np.array([[0.5], [-1.0]])
    trainer = Trainer(
        nn.linear(2, 1, bias=False), config=RunConfig(optimizer=optim.sgd(0.1), dtype="float64")
    )
    start = trainer.model.parameters[0].copy()

    def decay(step: int, loss: float) -> None:
        if trainer.steps_done == 2:
            trainer.optimizer.set_lr(0.02)

    trainer.fit(x, y, epochs=1, batch_size=2, shuffle=False, on_batch=decay)
    assert trainer.lr == 0.02 and trainer.optimizer.config.lr == 0.02
    trainer.fit(x, y, epochs=1, batch_size=2, shuffle=False)
    w = torch.tensor(start, requires_grad=True)
    sgd = torch.optim.SGD([w], lr=0.1)
    for epoch in range(2):
        for i in range(0, 8, 2):
            sgd.zero_grad()
            ((torch.tensor(x[i : i + 2]) @ w.T - torch.tensor(y[i : i + 2])) ** 2).mean().backward()
            sgd.step()
            if epoch == 0 and i == 2:  # after the second step, as on_batch does
                sgd.param_groups[0]["lr"] = 0.02
    np.testing.assert_allclose(trainer.model.parameters[0], w.detach().numpy(), rtol=1e-14, atol=1e-15)


@pytest.mark.parametrize(
    ("schedule", "message"),
    [
        (
            lambda e: 0.1 if e == 0 else -0.5,
            "lr_schedule(1) gave -0.5, which the optimizer refuses: optimizer: "
            "learning rate must be finite and nonnegative, got -0.5",
        ),
        (lambda e: 0.1 if e == 0 else math.nan, "lr_schedule(1) gave nan, which the optimizer refuses"),
        (
            lambda e: 0.1 if e == 0 else 1e39,
            "lr_schedule(1) gave 1e+39, which the optimizer refuses: optimizer: "
            "learning rate must be finite and nonnegative after conversion to binary32",
        ),
        (
            lambda e: 0.1 if e == 0 else "0.1",
            "lr_schedule(1) gave '0.1', which the optimizer refuses: optimizer: "
            "learning rate must be a real number (int or float), got '0.1'",
        ),
        (lambda e: 0.1 if e == 0 else None, "lr_schedule(1) gave None, which the optimizer refuses"),
        (lambda e: 0.1 if e == 0 else True, "lr_schedule(1) gave True"),
    ],
)
def test_a_refused_learning_rate_stops_before_that_epoch(schedule, message):
    """Epoch 0 trains; epoch 1's learning rate is refused before its first step; the optimizer's
    own lr is back afterwards."""
    trainer = Trainer(nn.linear(2, 1), config=RunConfig(optimizer=optim.sgd(0.2)))
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    start = trainer.model.state()
    with pytest.raises(TrainerError) as caught:
        trainer.fit(x, y, epochs=3, lr_schedule=schedule)
    assert str(caught.value).startswith(message)
    assert trainer.epochs_done == 1
    assert not np.array_equal(trainer.model.state()["weight"], start["weight"])
    assert trainer._optimizer is not None and trainer._optimizer.config.lr == 0.2


def test_lr_schedule_must_be_callable():
    trainer = Trainer(nn.linear(2, 1))
    with pytest.raises(TrainerError, match=r"^lr_schedule must be a callable lr_schedule\(epoch or step\)"):
        trainer.fit(np.ones((2, 2)), np.ones((2, 1)), lr_schedule=0.1)
    assert trainer.epochs_done == 0


def test_optimizer_set_lr_keeps_the_state_and_validates():
    opt = optim.adam(0.1).create([np.zeros(2)])
    opt.step([np.zeros(2)], [np.ones(2)])
    first = opt.first[0].copy()
    opt.set_lr(0.5)
    assert opt.config == optim.adam(0.5) and np.array_equal(opt.first[0], first) and opt.param_steps == [1]
    with pytest.raises(optim.OptimizerError, match="learning rate must be finite and nonnegative, got -1"):
        opt.set_lr(-1)
    assert opt.config.lr == 0.5


def test_trainer_lr_reads_the_scheduled_rate_inside_fit():
    trainer = Trainer(nn.linear(2, 1), config=RunConfig(optimizer=optim.sgd(0.2)))
    assert trainer.lr == 0.2  # before the optimizer exists
    seen = []
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    trainer.fit(
        x,
        y,
        epochs=3,
        batch_size=2,
        lr_schedule=lambda e: 0.1 / (e + 1),
        on_batch=lambda epoch, loss: seen.append((epoch, trainer.lr)),
    )
    assert seen == [(0, 0.1), (0, 0.1), (1, 0.05), (1, 0.05), (2, 0.1 / 3), (2, 0.1 / 3)]
    assert trainer.lr == 0.2


def test_an_interrupted_fit_restores_the_lr_and_repeats_the_epoch():
    """on_batch raising mid-epoch: its exception propagates, the first update stays, epochs_done
    counts whole epochs, so the next fit asks the schedule for that epoch again."""
    trainer = Trainer(nn.linear(2, 1), config=RunConfig(optimizer=optim.sgd(0.2)))
    x, y = np.ones((4, 2)), np.zeros((4, 1))
    asked = []

    def stop(epoch, loss):
        if epoch == 1:
            raise KeyboardInterrupt

    def schedule(epoch):
        asked.append(epoch)
        return 0.01

    with pytest.raises(KeyboardInterrupt):
        trainer.fit(x, y, epochs=3, batch_size=2, lr_schedule=schedule, on_batch=stop)
    assert trainer.epochs_done == 1 and trainer.lr == 0.2
    trainer.fit(x, y, epochs=1, lr_schedule=schedule)
    assert asked == [0, 1, 1] and trainer.epochs_done == 2


# ------------------------------------------------------------------ per-step schedules


def _torch_fit_per_step(weights, x, y, make_optimizer, rates, epochs, batch_size):
    """torch's loop with the rate of step t written into the param group before step t."""
    w, b = (torch.tensor(p, requires_grad=True) for p in weights)
    opt = make_optimizer([w, b])
    step = 0
    for _ in range(epochs):
        for start in range(0, len(x), batch_size):
            for group in opt.param_groups:
                group["lr"] = rates[step]
            xb, yb = torch.tensor(x[start : start + batch_size]), torch.tensor(y[start : start + batch_size])
            opt.zero_grad()
            torch.nn.functional.mse_loss(xb @ w.T + b, yb).backward()
            opt.step()
            step += 1
    return [w.detach().numpy(), b.detach().numpy()]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        (optim.sgd(0.1, 0.9), lambda ps: torch.optim.SGD(ps, lr=0.1, momentum=0.9)),
        (optim.adamw(0.05, weight_decay=0.1), lambda ps: torch.optim.AdamW(ps, lr=0.05, weight_decay=0.1)),
    ],
    ids=["sgd", "adamw"],
)
def test_a_per_step_schedule_matches_torch(ours, theirs):
    """schedule_by="step": three steps an epoch (12 rows, batch 5), five epochs over two fit calls;
    step t runs at warmup_cosine's rate t, as a torch loop setting that rate before each step."""
    rng = np.random.default_rng(5)
    x, y = rng.standard_normal((12, 3)), rng.standard_normal((12, 2))
    trainer = Trainer(nn.linear(3, 2), config=RunConfig(optimizer=ours, dtype="float64"))
    weights = [p.copy() for p in trainer.model.parameters]
    schedule = optim.warmup_cosine(ours.lr, 4, 15, min_lr=ours.lr / 10)
    seen: list[tuple[int, float]] = []

    def logged(step):
        seen.append((step, trainer.steps_done))
        return schedule(step)

    rates_read: list[float] = []
    trainer.fit(x, y, epochs=2, batch_size=5, shuffle=False, lr_schedule=logged, schedule_by="step",
                on_batch=lambda epoch, loss: rates_read.append(trainer.lr))
    assert trainer.steps_done == 6
    trainer.fit(x, y, epochs=3, batch_size=5, shuffle=False, lr_schedule=logged, schedule_by="step")
    assert seen == [(t, t) for t in range(15)]
    assert rates_read == [schedule(t) for t in range(6)]
    assert trainer.lr == ours.lr  # the optimizer's own rate after fit
    expected = _torch_fit_per_step(weights, x, y, theirs, [schedule(t) for t in range(15)], 5, 5)
    for mine, torch_value in zip(trainer.model.parameters, expected, strict=True):
        np.testing.assert_allclose(mine, torch_value, rtol=1e-12, atol=1e-14)
    constant = Trainer(nn.linear(3, 2), config=RunConfig(optimizer=ours, dtype="float64"))
    constant.fit(x, y, epochs=5, batch_size=5, shuffle=False)
    assert not np.allclose(constant.model.parameters[0], trainer.model.parameters[0])


def test_a_per_step_rate_the_optimizer_refuses_stops_before_that_step():
    trainer = Trainer(nn.linear(2, 1), config=RunConfig(optimizer=optim.sgd(0.1)))
    x, y = np.ones((6, 2)), np.ones((6, 1))
    with pytest.raises(TrainerError, match=r"^lr_schedule\(2\) gave -0.1, which the optimizer refuses"):
        trainer.fit(x, y, epochs=2, batch_size=2, lr_schedule=lambda t: 0.1 if t < 2 else -0.1,
                    schedule_by="step")
    assert trainer.steps_done == 2 and trainer.epochs_done == 0 and trainer.lr == 0.1


@pytest.mark.parametrize("value", ["steps", "Epoch", None, 1])
def test_schedule_by_must_be_epoch_or_step(value):
    trainer = Trainer(nn.linear(2, 1))
    with pytest.raises(TrainerError, match=r"^schedule_by must be 'epoch' or 'step', got "):
        trainer.fit(np.ones((2, 2)), np.ones((2, 1)), lr_schedule=lambda t: 0.1, schedule_by=value)
    assert trainer.steps_done == 0


def test_warmup_cosine_by_hand():
    """Warmup 4 steps to 1.0, cosine over 8 more to 0.2, then 0.2: values worked out by hand."""
    f = optim.warmup_cosine(1.0, 4, 12, min_lr=0.2)
    assert [f(t) for t in range(5)] == [0.0, 0.25, 0.5, 0.75, 1.0]
    assert f(8) == pytest.approx(0.6, rel=1e-15)  # halfway: cos(pi / 2) = 0
    assert f(6) == pytest.approx(0.2 + 0.8 * (1 + math.sqrt(0.5)) / 2, rel=1e-15)  # a quarter: cos(pi/4)
    assert [f(t) for t in (12, 13, 1000)] == [0.2, 0.2, 0.2]
    g = optim.warmup_cosine(3e-4, 0, 10)
    assert g(0) == 3e-4 and g(10) == 0.0 and g(5) == pytest.approx(1.5e-4, rel=1e-15)


@pytest.mark.parametrize(
    ("args", "kwargs", "message"),
    [
        ((-1.0, 1, 2), {}, "lr must be finite and >= 0, got -1.0"),
        ((math.nan, 1, 2), {}, "lr must be finite and >= 0, got nan"),
        ((True, 1, 2), {}, "lr must be a real number, got True"),
        ((10**400, 1, 2), {}, "lr must be finite and >= 0"),
        ((0.1, 1, 2), {"min_lr": 0.2}, r"min_lr must be at most lr \(0.1\), got 0.2"),
        ((0.1, -1, 2), {}, "warmup_steps must be an int >= 0, got -1"),
        ((0.1, 1.5, 2), {}, "warmup_steps must be an int >= 0, got 1.5"),
        ((0.1, 2, 2), {}, r"total_steps must be an int greater than warmup_steps \(2\), got 2"),
        ((0.1, 0, True), {}, "total_steps must be an int greater than warmup_steps"),
    ],
)
def test_warmup_cosine_refusals(args, kwargs, message):
    with pytest.raises(optim.ScheduleError, match=message):
        optim.warmup_cosine(*args, **kwargs)


def test_warmup_cosine_steps_are_ints_from_zero():
    f = optim.warmup_cosine(0.1, 2, 4)
    assert type(f(np.int64(1))) is float and f(np.int64(1)) == 0.05
    for bad in (-1, 1.5, True):
        with pytest.raises(optim.ScheduleError, match=r"a step is an int >= 0, got "):
            f(bad)
    huge = optim.warmup_cosine(1e308, 3, 4)
    assert huge(2) == pytest.approx(1e308 * (2 / 3))  # no overflow in the warmup


def test_schedule_by_step_without_a_schedule_is_refused():
    trainer = Trainer(nn.linear(2, 1))
    with pytest.raises(TrainerError, match=r"^schedule_by='step' schedules nothing without an lr_schedule"):
        trainer.fit(np.ones((2, 2)), np.ones((2, 1)), schedule_by="step")


def test_warmup_cosine_pickles_and_copies_to_the_same_rates() -> None:
    """review142 F4: the schedule was a local function (``Can't pickle local object``), so a
    ``(trainer, schedule)`` pair could not go to a spawned worker or a process pool."""
    import copy
    import pickle

    from torchlean import optim

    schedule = optim.warmup_cosine(0.1, 10, 100, min_lr=0.01)
    for other in (pickle.loads(pickle.dumps(schedule)), copy.deepcopy(schedule), copy.copy(schedule)):
        assert [other(t) for t in range(0, 130, 7)] == [schedule(t) for t in range(0, 130, 7)]
    assert repr(schedule) == "warmup_cosine(lr=0.1, warmup_steps=10, total_steps=100, min_lr=0.01)"


def test_warmup_cosine_names_a_huge_rate_by_its_size() -> None:
    # review160 F10: the 401 digits were printed in full (and past 4300 digits repr itself raises)
    for value, size in ((10**400, 401), (10**5000, 5001)):
        with pytest.raises(ScheduleError) as caught:
            optim.warmup_cosine(value, 1, 2)
        assert str(caught.value) == (
            f"warmup_cosine: lr must be finite and >= 0, got an integer of about {size} digits"
        )
