"""``optim.clip_grad_value``, ``RunConfig(max_grad_value=)`` and ``step_(max_grad_value=)``:
gradient clipping by value, alone and before clipping by norm.

Oracles: ``torch.nn.utils.clip_grad_value_`` on the same gradients (float16, float32, float64:
elementwise, so bit for bit), and torch float64 training loops calling ``clip_grad_value_`` (then
``clip_grad_norm_``) between ``backward()`` and ``step()``.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.trainer import RunConfig, Trainer, TrainerError

SHAPES = [(3, 4), (5,), (2, 2, 2), (), (0, 3)]


def _torch_clip_value(grads: list[np.ndarray], clip_value: float, foreach: bool) -> list[np.ndarray]:
    params = []
    for grad in grads:
        param = torch.nn.Parameter(torch.zeros(grad.shape, dtype=torch.from_numpy(grad).dtype))
        param.grad = torch.tensor(grad)
        params.append(param)
    torch.nn.utils.clip_grad_value_(params, clip_value, foreach=foreach)
    return [p.grad.numpy() for p in params]


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("clip_value", [0.0, 0.1, 0.7, 3, 70000.0, 1e300, math.inf])
@pytest.mark.parametrize("foreach", [False, True])
def test_clipping_matches_torch_bit_for_bit(dtype, clip_value, foreach):
    """Every entry of torch's result, NaN and infinite gradients and bounds that round in the
    dtype (0.1 in float16) included. A finite bound beyond the dtype's range (70000 in float16,
    1e300 in float32), which torch refuses, bounds nothing, as torch's ``inf`` does (the exact
    clamp of an infinite entry to it rounds back to infinity in the dtype)."""
    rng = np.random.default_rng(int(clip_value) % 100 if math.isfinite(clip_value) else 9)
    grads = [np.asarray(rng.standard_normal(shape) * 2.0, dtype=dtype) for shape in SHAPES]
    grads[0][0, :3] = [np.nan, np.inf, -np.inf]
    ours = optim.clip_grad_value([*grads, None], clip_value)
    beyond = math.isfinite(clip_value) and clip_value > float(np.finfo(dtype).max)
    if beyond:
        with pytest.raises(RuntimeError, match=r"cannot be converted to type .* without overflow"):
            _torch_clip_value(grads, clip_value, foreach)
    theirs = _torch_clip_value(grads, math.inf if beyond else clip_value, foreach)
    assert ours[-1] is None and len(ours) == len(grads) + 1
    for mine, other, given in zip(ours, theirs, grads, strict=False):
        assert mine is not None and mine.dtype == dtype and mine.shape == given.shape
        np.testing.assert_array_equal(mine, other)
        assert mine is not given
    assert np.isnan(ours[0][0, 0])
    if clip_value == 0.0:
        assert all(not np.any(g) for g in ours[1:-1])


def test_mixed_dtypes_are_clipped_each_in_its_own():
    grads = [np.array([0.3, -5.0], np.float16), np.array([0.3, -5.0], np.float32), np.array([0.3, -5.0])]
    ours = optim.clip_grad_value(grads, 0.3)
    theirs = _torch_clip_value(grads, 0.3, foreach=True)
    for mine, other in zip(ours, theirs, strict=True):
        assert mine is not None
        np.testing.assert_array_equal(mine, other)
    assert ours[0] is not None and ours[0][1] == np.float16(-0.3)
    assert ours[2] is not None and ours[2][1] == -0.3
    np.testing.assert_array_equal(grads[2], [0.3, -5.0])  # the input is unchanged


@pytest.mark.parametrize(
    ("value", "message"),
    [(-0.5, r"clip_value must be >= 0 \(inf allowed\), got -0\.5"),
     (math.nan, r"clip_value must be >= 0 \(inf allowed\), got nan"),
     (-math.inf, r"clip_value must be >= 0 \(inf allowed\), got -inf"),
     (True, "clip_value must be a real number, got True"),
     ("1", "clip_value must be a real number, got '1'"),
     (None, "clip_value must be a real number, got None"),
     (10**400, "clip_value must be a float, got an integer of about 401 digits")],
)
def test_bad_limits_are_refused(value, message):
    with pytest.raises(OptimizerError, match=f"^clip_grad_value: {message}"):
        optim.clip_grad_value([np.ones(2)], value)


def test_bad_gradients_are_refused():
    expected = r"^clip_grad_value: gradient 1 must be a numpy float array .* got list"
    with pytest.raises(OptimizerError, match=expected):
        optim.clip_grad_value([np.ones(2), [1.0]], 1.0)  # type: ignore[list-item]
    with pytest.raises(OptimizerError, match=r"gradient 0 .* got numpy\.ndarray of dtype int64"):
        optim.clip_grad_value([np.ones(2, dtype=np.int64)], 1.0)
    with pytest.raises(OptimizerError, match=r"^clip_grad_value: gradients must be a sequence of numpy"):
        optim.clip_grad_value(np.ones(2), 1.0)  # type: ignore[arg-type]
    assert optim.clip_grad_value([], 1.0) == [] and optim.clip_grad_value([None], 1.0) == [None]


def _pair(seed: int, execution: str, **limits: float) -> tuple[Trainer, torch.nn.Module]:
    config = RunConfig(optimizer=optim.adam(0.05, weight_decay=0.01), dtype="float64", execution=execution,
                       **limits)
    trainer = Trainer(nn.sequential(nn.linear(3, 5), nn.tanh(), nn.linear(5, 2)), config=config, seed=seed)
    module = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()})
    return trainer, module


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("order", ["value", "value-then-norm"])
def test_trainer_clips_as_a_torch_loop(execution, order):
    """Four steps of large targets (every step clips): clip_grad_value_ alone, or then
    clip_grad_norm_ (RunConfig's documented order), between backward and step; the losses,
    the norm torch's clip_grad_norm_ returns (trainer.grad_norm) and every parameter within
    1e-12 of torch's in float64."""
    limits = {"max_grad_value": 0.05} if order == "value" else {"max_grad_value": 0.05, "max_grad_norm": 0.1}
    trainer, module = _pair(1, execution, **limits)
    theirs = torch.optim.Adam(module.parameters(), lr=0.05, weight_decay=0.01)
    rng = np.random.default_rng(2)
    for _ in range(4):
        x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 2)) * 20.0
        loss = trainer.step(x, y)
        theirs.zero_grad()
        expected = torch.nn.functional.mse_loss(module(torch.tensor(x)), torch.tensor(y))
        expected.backward()
        torch.nn.utils.clip_grad_value_(module.parameters(), 0.05)
        if order == "value":
            assert trainer.grad_norm is None
        else:
            norm = torch.nn.utils.clip_grad_norm_(module.parameters(), 0.1)
            assert trainer.grad_norm == pytest.approx(float(norm), rel=1e-12) and float(norm) > 0.1
        theirs.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12)
        for key, value in trainer.model.state().items():
            np.testing.assert_allclose(value, module.state_dict()[key].numpy(), rtol=1e-12, atol=1e-14)


def test_the_other_order_gives_other_weights():
    """Norm, then value (the order RunConfig does not take) differs from value, then norm after
    one step: the test above tells the two orders apart."""
    trainer, module = _pair(1, "eager", max_grad_value=0.05, max_grad_norm=0.1)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 2)) * 20.0
    trainer.step(x, y)
    theirs = torch.optim.Adam(module.parameters(), lr=0.05, weight_decay=0.01)
    torch.nn.functional.mse_loss(module(torch.tensor(x)), torch.tensor(y)).backward()
    torch.nn.utils.clip_grad_norm_(module.parameters(), 0.1)
    torch.nn.utils.clip_grad_value_(module.parameters(), 0.05)
    theirs.step()
    assert not np.allclose(trainer.model.state()["0.weight"], module.state_dict()["0.weight"].numpy(),
                           rtol=1e-6, atol=0)


def test_step_underscore_clips_by_value_then_norm_as_torch():
    """A loop of one's own: step_(params, max_grad_value=, max_grad_norm=) against torch's loop."""
    model = nn.build(nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 2)), seed=5, dtype="float64")
    module = torch.nn.Sequential(torch.nn.Linear(3, 4), torch.nn.ReLU(), torch.nn.Linear(4, 2)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in model.state().items()})
    params = model.tensors()
    ours = optim.sgd(0.1, 0.9).create(model.parameters)
    theirs = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
    rng = np.random.default_rng(3)
    for step in range(4):
        x, labels = rng.standard_normal((8, 3)) * 5.0, rng.integers(0, 2, size=8)
        both = step % 2 == 1
        with tl.session(profile="checked_cpu"):
            tl.cross_entropy(model(tl.tensor(x), params, training=True), labels).backward()
            norm = ours.step_(params, max_grad_value=0.02, max_grad_norm=0.03 if both else None)
        theirs.zero_grad()
        torch.nn.functional.cross_entropy(module(torch.tensor(x)), torch.tensor(labels)).backward()
        torch.nn.utils.clip_grad_value_(module.parameters(), 0.02)
        if both:
            expected = torch.nn.utils.clip_grad_norm_(module.parameters(), 0.03)
            assert norm == pytest.approx(float(expected), rel=1e-12)
        else:
            assert norm is None
        theirs.step()
        assert all(p.grad is None for p in params)
    model.load_tensors(params)
    for name, value in model.state().items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14)


def test_step_underscore_refuses_a_bad_limit_before_anything_changes():
    model = nn.build(nn.linear(2, 1), seed=0, dtype="float64")
    params = model.tensors()
    ours = optim.sgd(0.1).create(model.parameters)
    with tl.session(profile="checked_cpu"):
        out = model(tl.tensor(np.ones((2, 2))), params, training=True)
        tl.mse_loss(out, tl.tensor(np.zeros((2, 1)))).backward()
    before = [p.numpy().copy() for p in params]
    step_ = r"^optimizer: step_: "
    with pytest.raises(OptimizerError, match=step_ + r"max_grad_value must be >= 0 \(inf allowed\), got -1$"):
        ours.step_(params, max_grad_value=-1)  # named as step_'s argument (review58 F4)
    with pytest.raises(OptimizerError, match=step_ + r"max_grad_norm must be a real number, got '1'$"):
        ours.step_(params, max_grad_norm="1")  # type: ignore[arg-type]
    assert ours.steps == 0 and all(p.grad is not None for p in params)
    for p, old in zip(params, before, strict=True):
        np.testing.assert_array_equal(p.numpy(), old)


@pytest.mark.parametrize("value", [-0.1, float("nan"), "1", True, [1.0], 10**400])
def test_run_config_refuses_bad_limits(value):
    expected = r"^max_grad_value must be None or a real number >= 0 \(inf allowed\), got"
    with pytest.raises(TrainerError, match=expected):
        RunConfig(max_grad_value=value)


def test_run_config_stores_the_limit_as_a_float():
    config = RunConfig(max_grad_value=2)
    assert config.max_grad_value == 2.0 and isinstance(config.max_grad_value, float)
    assert config.with_profile("fast_cpu").max_grad_value == 2.0
    assert RunConfig().max_grad_value is None
    assert RunConfig(max_grad_value=math.inf).max_grad_value == math.inf


def test_an_infinite_limit_changes_nothing():
    rng = np.random.default_rng(0)
    data = rng.standard_normal((8, 3)), rng.standard_normal((8, 1))
    runs = []
    for limit in (None, math.inf):
        config = RunConfig(optimizer=optim.adam(lr=0.01), dtype="float64", max_grad_value=limit)
        trainer = Trainer(nn.sequential(nn.linear(3, 1)), config=config, seed=0)
        trainer.fit(*data, epochs=2, batch_size=4, shuffle=False)
        runs.append(trainer.model.state())
    for key, value in runs[0].items():
        np.testing.assert_array_equal(runs[1][key], value)
