"""``optim.clip_grad_norm`` and ``RunConfig(max_grad_norm=)``: gradient clipping by total norm.

Oracles: ``torch.nn.utils.clip_grad_norm_`` on the same gradients (float32 and float64), torch
training loops that clip between ``backward()`` and ``step()``, and hand computations.
"""

from __future__ import annotations

import math

import numpy as np
import pytest
import torch

from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.trainer import RunConfig, Trainer, TrainerError

SHAPES = [(3, 4), (5,), (2, 2, 2), ()]


def _torch_clip(grads: list[np.ndarray], max_norm: float, norm_type: float) -> tuple[list[np.ndarray], float]:
    params = []
    for grad in grads:
        param = torch.nn.Parameter(torch.zeros(grad.shape, dtype=torch.from_numpy(grad).dtype))
        param.grad = torch.tensor(grad)
        params.append(param)
    total = torch.nn.utils.clip_grad_norm_(params, max_norm, norm_type=norm_type, foreach=False)
    return [p.grad.numpy() for p in params], float(total)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("scale", [1e-4, 0.3, 50.0])
@pytest.mark.parametrize("max_norm", [0.0, 0.5, 1.0, 7.0])
def test_two_norm_matches_torch(dtype, scale, max_norm):
    """The 2-norm within 2 ulps of torch's total (float32 and float64: the accumulation orders
    differ), the clipped gradients within 4."""
    rng = np.random.default_rng(int(scale * 10) + int(max_norm))
    grads = [np.asarray(rng.standard_normal(shape) * scale, dtype=dtype) for shape in SHAPES]
    ours, total = optim.clip_grad_norm([*grads, None], max_norm)
    theirs, expected = _torch_clip(grads, max_norm, 2.0)
    assert ours[-1] is None and len(ours) == len(grads) + 1
    rtol = float(np.finfo(dtype).eps)
    assert total == pytest.approx(expected, rel=2 * rtol, abs=0)
    for mine, other in zip(ours, theirs, strict=False):
        assert mine is not None and mine.dtype == dtype
        np.testing.assert_allclose(mine, other, rtol=4 * rtol, atol=0)


@pytest.mark.parametrize("norm_type", [1.0, 3.0, math.inf])
def test_other_norms_match_torch_float64(norm_type):
    rng = np.random.default_rng(7)
    grads = [np.asarray(rng.standard_normal(shape) * 3.0) for shape in SHAPES]
    ours, total = optim.clip_grad_norm(grads, 2.0, norm_type=norm_type)
    theirs, expected = _torch_clip(grads, 2.0, norm_type)
    assert total == pytest.approx(expected, rel=1e-14)
    for mine, other in zip(ours, theirs, strict=True):
        np.testing.assert_allclose(mine, other, rtol=1e-14, atol=0)


def test_by_hand_and_inputs_untouched():
    """Gradients (3, 4) and (0, 0): total 5; max_norm 1 scales by 1 / (5 + 1e-6); under the limit
    the values stay as they are; the inputs are never written."""
    a, b = np.array([3.0, 4.0]), np.array([0.0, 0.0])
    (ca, cb), total = optim.clip_grad_norm([a, b], 1.0)
    assert total == 5.0
    np.testing.assert_allclose(ca, a * (1.0 / (5.0 + 1e-6)), rtol=1e-15)
    np.testing.assert_array_equal(cb, 0.0)
    np.testing.assert_array_equal(a, [3.0, 4.0])
    (same,), total = optim.clip_grad_norm([a], 10.0)
    np.testing.assert_array_equal(same, a)
    assert same is not a and total == 5.0
    (_,), total = optim.clip_grad_norm([a], 1.0, norm_type=math.inf)
    assert total == 4.0
    assert optim.clip_grad_norm([None, None], 1.0) == ([None, None], 0.0)
    (empty,), total = optim.clip_grad_norm([np.zeros((0, 3))], 1.0, norm_type=math.inf)
    assert total == 0.0 and empty.shape == (0, 3)


def test_non_finite_totals_behave_as_torchs():
    grads = [np.array([np.inf, 1.0]), np.array([2.0])]
    ours, total = optim.clip_grad_norm(grads, 1.0)
    theirs, expected = _torch_clip(grads, 1.0, 2.0)
    assert total == expected == math.inf
    for mine, other in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, other)  # NaN where infinite, zeros elsewhere
    ours, total = optim.clip_grad_norm([np.array([np.nan, 1.0])], 1.0)
    assert math.isnan(total) and np.isnan(ours[0]).all()


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"max_norm": -1.0}, r"max_norm must be >= 0 \(inf allowed\), got -1.0"),
        ({"max_norm": float("nan")}, "max_norm must be >= 0"),
        ({"max_norm": True}, "max_norm must be a real number, got True"),
        ({"max_norm": "1"}, "max_norm must be a real number, got '1'"),
        ({"max_norm": 1.0, "norm_type": 0.0}, r"norm_type must be inf or a finite number > 0, got 0.0"),
        ({"max_norm": 1.0, "norm_type": -math.inf}, "norm_type must be inf or a finite number > 0"),
        ({"max_norm": 1.0, "norm_type": "fro"}, "norm_type must be a real number, got 'fro'"),
    ],
)
def test_bad_arguments_are_refused(kwargs, message):
    with pytest.raises(OptimizerError, match=f"clip_grad_norm: {message}"):
        optim.clip_grad_norm([np.ones(2)], **kwargs)


def test_bad_gradients_are_refused():
    with pytest.raises(OptimizerError, match=r"the gradients have dtypes \['float32', 'float64'\]"):
        optim.clip_grad_norm([np.ones(2), np.ones(2, dtype=np.float32)], 1.0)
    with pytest.raises(OptimizerError, match=r"gradient 1 must be a numpy float array .* got list"):
        optim.clip_grad_norm([np.ones(2), [1.0]], 1.0)  # type: ignore[list-item]
    with pytest.raises(OptimizerError, match="gradients must be a sequence of numpy arrays"):
        optim.clip_grad_norm(np.ones(2), 1.0)  # type: ignore[arg-type]


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("optimizer", ["sgd", "adam"])
def test_trainer_clips_as_a_torch_loop(execution, optimizer):
    """Four steps with max_grad_norm 0.5 (large targets, so every step clips): the loss, the
    reported norm and every parameter match torch clipping between backward and step, float64."""
    ours = optim.sgd(0.1, 0.9) if optimizer == "sgd" else optim.adam(lr=0.05)
    config = RunConfig(optimizer=ours, dtype="float64", execution=execution, max_grad_norm=0.5)
    trainer = Trainer(nn.sequential(nn.linear(3, 5), nn.tanh(), nn.linear(5, 2)), config=config, seed=1)
    assert trainer.grad_norm is None
    module = torch.nn.Sequential(torch.nn.Linear(3, 5), torch.nn.Tanh(), torch.nn.Linear(5, 2)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()})
    if optimizer == "sgd":
        theirs: torch.optim.Optimizer = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.9)
    else:
        theirs = torch.optim.Adam(module.parameters(), lr=0.05)
    rng = np.random.default_rng(2)
    for _ in range(4):
        x, y = rng.standard_normal((6, 3)), rng.standard_normal((6, 2)) * 20.0
        loss = trainer.step(x, y)
        theirs.zero_grad()
        expected = torch.nn.functional.mse_loss(module(torch.tensor(x)), torch.tensor(y))
        expected.backward()
        norm = torch.nn.utils.clip_grad_norm_(module.parameters(), 0.5)
        theirs.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12)
        assert trainer.grad_norm == pytest.approx(float(norm), rel=1e-12)
        assert trainer.grad_norm > 0.5
        for key, value in trainer.model.state().items():
            np.testing.assert_allclose(value, module.state_dict()[key].numpy(), rtol=1e-12, atol=1e-14)


def test_infinite_limit_logs_the_norm_without_clipping():
    data = np.random.default_rng(0).standard_normal((8, 3)), np.random.default_rng(1).standard_normal((8, 1))
    runs = []
    for limit in (None, math.inf):
        config = RunConfig(optimizer=optim.adam(lr=0.01), dtype="float64", max_grad_norm=limit)
        trainer = Trainer(nn.sequential(nn.linear(3, 1)), config=config, seed=0)
        trainer.fit(*data, epochs=2, batch_size=4, shuffle=False)
        runs.append((trainer.model.state(), trainer.grad_norm))
    (plain, none_norm), (logged, norm) = runs
    assert none_norm is None and norm is not None and norm > 0
    for key, value in plain.items():
        np.testing.assert_array_equal(logged[key], value)


@pytest.mark.parametrize("value", [-0.1, float("nan"), "1", True, [1.0]])
def test_run_config_refuses_bad_limits(value):
    with pytest.raises(
        TrainerError, match=r"max_grad_norm must be None or a real number >= 0 \(inf allowed\)"
    ):
        RunConfig(max_grad_norm=value)


def test_run_config_keeps_the_limit_through_its_copies():
    config = RunConfig(max_grad_norm=2)
    assert config.max_grad_norm == 2.0 and isinstance(config.max_grad_norm, float)
    assert config.with_profile("fast_cpu").max_grad_norm == 2.0
    assert RunConfig().max_grad_norm is None


def test_limits_beyond_the_float_range_are_refused():
    with pytest.raises(
        OptimizerError, match=r"clip_grad_norm: max_norm must be a float, got an integer of about 401 digits"
    ):
        optim.clip_grad_norm([np.ones(2)], 10**400)
    with pytest.raises(OptimizerError, match="clip_grad_norm: norm_type must be a float"):
        optim.clip_grad_norm([np.ones(2)], 1.0, norm_type=10**400)
    with pytest.raises(
        TrainerError, match=r"max_grad_norm must be None .* got an integer of about 401 digits"
    ):
        RunConfig(max_grad_norm=10**400)


def test_float32_norms_overflow_where_torchs_do():
    """Squares beyond float32's range: torch's norm is inf, every gradient becomes 0, and an SGD
    step leaves the weights as they are; a float64 accumulation would have clipped instead."""
    for grads in ([np.full(2, 3e20, dtype=np.float32)], [np.full(1000, 1e18, dtype=np.float32)]):
        ours, total = optim.clip_grad_norm(grads, 1.0)
        theirs, expected = _torch_clip(grads, 1.0, 2.0)
        assert total == expected == math.inf
        np.testing.assert_array_equal(ours[0], theirs[0])
        np.testing.assert_array_equal(ours[0], 0.0)


def test_the_coefficient_is_torchs_reciprocal_times_max_norm():
    """torch evaluates max_norm / (total + 1e-6) as reciprocal(total + 1e-6) * max_norm; float32
    cases where the two roundings differ keep torch's bit for bit."""
    rng = np.random.default_rng(0)
    differs = 0
    for _ in range(300):
        g = (rng.standard_normal(5) * 3.0).astype(np.float32)
        limit = float(rng.uniform(0.1, 2.0))
        (ours,), total = optim.clip_grad_norm([g], limit)
        (theirs,), expected = _torch_clip([g], limit, 2.0)
        if total != expected:  # the summation orders differ by an ulp now and then
            continue
        np.testing.assert_array_equal(ours, theirs)
        t = np.float32(total) + np.float32(1e-6)
        differs += (np.float32(1.0) / t) * np.float32(limit) != np.float32(limit) / t
    assert differs > 0  # the cases that tell the two forms apart were met


def test_a_zero_limit_zeroes_the_update_as_torch():
    """torch's clip_grad_norm_(..., 0.0) zeroes every gradient: SGD leaves the weights unchanged."""
    trainer = Trainer(
        nn.sequential(nn.linear(3, 2)), config=RunConfig(optimizer=optim.sgd(0.5), max_grad_norm=0)
    )
    before = [p.copy() for p in trainer.model.parameters]
    trainer.step(np.ones((4, 3)), np.zeros((4, 2)))
    assert trainer.grad_norm is not None and trainer.grad_norm > 0
    for new, old in zip(trainer.model.parameters, before, strict=True):
        np.testing.assert_array_equal(new, old)


def test_messages_name_clip_grad_norm():
    with pytest.raises(OptimizerError, match=r"^clip_grad_norm: gradients must be a sequence"):
        optim.clip_grad_norm(np.ones(3), 1.0)  # type: ignore[arg-type]
    with pytest.raises(OptimizerError, match=r"^clip_grad_norm: gradient 0 must be a numpy float array"):
        optim.clip_grad_norm([[1.0]], 1.0)  # type: ignore[list-item]


def test_the_string_inf_is_torchs_infinity_norm() -> None:
    """review54 F7: torch documents ``norm_type='inf'``; it was refused as not a real number."""
    rng = np.random.default_rng(54)
    grads = [rng.standard_normal((3, 2)), rng.standard_normal(4)]
    tensors = [torch.zeros(g.shape, dtype=torch.float64, requires_grad=True) for g in grads]
    for t, g in zip(tensors, grads, strict=True):
        t.grad = torch.tensor(g)
    torch_total = torch.nn.utils.clip_grad_norm_(tensors, 0.5, norm_type="inf")
    clipped, total = optim.clip_grad_norm(grads, 0.5, norm_type="inf")
    assert total == float(torch_total)
    for ours, t in zip(clipped, tensors, strict=True):
        assert ours is not None and t.grad is not None
        np.testing.assert_array_equal(ours, t.grad.numpy())
    with pytest.raises(OptimizerError, match="norm_type must be a real number, got 'fro'"):
        optim.clip_grad_norm(grads, 0.5, norm_type="fro")


def test_the_norms_are_left_folds_in_the_stated_order() -> None:
    """review79 F1: the norm was numpy's pairwise sum, an order no audit line states. Oracle: a
    hand-written float32 left fold, each gradient's squares in row-major order, then the
    per-gradient norms in order; on these values numpy's pairwise sum gives other bits (control)."""
    f32 = np.float32
    rng = np.random.default_rng(0)
    flat = (rng.standard_normal(1000) * 10.0 ** rng.uniform(-3, 3, 1000)).astype(f32)
    grads = [flat[:600].reshape(20, 30), flat[600:].reshape(4, 10, 10)]

    def fold(terms: list[np.float32]) -> np.float32:
        total = terms[0]
        for term in terms[1:]:
            total = f32(total + term)
        return total

    def two_norm(values: list[np.float32]) -> np.float32:
        return f32(np.sqrt(fold([f32(v * v) for v in values])))

    whole = two_norm(list(np.abs(flat)))
    assert optim.clip_grad_norm([flat], 1.0)[1] == float(whole)  # the norm of one norm: itself
    assert f32(np.sqrt(np.sum(np.abs(flat) * np.abs(flat)))) != whole  # the control: pairwise differs
    norms = [two_norm(list(np.abs(g).ravel())) for g in grads]
    assert optim.clip_grad_norm(grads, 1.0)[1] == float(two_norm(norms))
    _, one = optim.clip_grad_norm([flat], 1.0, norm_type=3.0)
    third = f32(1.0 / 3.0)
    inner = f32(fold([f32(v ** f32(3.0)) for v in np.abs(flat)]) ** third)
    assert one == float(inner)  # the norm of the one norm is its magnitude, as torch's
    assert float(f32(f32(inner ** f32(3.0)) ** third)) != one  # the control: a computed norm differs


@pytest.mark.parametrize("norm_type", [0.5, 1.0, 2.0, 3.0, math.inf])
@pytest.mark.parametrize(
    "grads",
    [
        [np.array([3e19], dtype=np.float32)],  # its square overflows float32
        [np.array([[-3e19]], dtype=np.float32)],
        [np.array([1e-30], dtype=np.float32)],  # its square underflows to 0
        [np.array(2e-300)],  # float64, 0-d
        [np.array([3e19], dtype=np.float32), np.array([4e19], dtype=np.float32)],
        [np.array([3e19], dtype=np.float32), np.array([0.0], dtype=np.float32)],
        [np.array([3e19, 0.0], dtype=np.float32)],
    ],
    ids=["big", "big-2d", "tiny", "tiny-0d-f64", "two-big", "big-and-zero", "two-entries"],
)
def test_one_element_norms_are_magnitudes_as_torchs(grads, norm_type):
    """Review184 F6: torch's norm of one element is its magnitude (nothing squared), so a lone
    float32 ``3e19`` has norm ``3e19`` and is clipped to 1, where a computed square overflows and
    zeroes the gradient; two such entries (in one gradient or two) overflow in torch as here."""
    ours, total = optim.clip_grad_norm(grads, 1.0, norm_type=norm_type)
    theirs, expected = _torch_clip(grads, 1.0, norm_type)
    assert total == expected
    for mine, torchs in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(mine, torchs)
