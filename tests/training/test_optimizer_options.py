"""RMSprop's ``weight_decay``/``momentum``/``centered`` and Adagrad's ``lr_decay``/``weight_decay``/
``initial_accumulator_value`` against torch's single-tensor implementations (float64 within 1e-12,
float32 within 2e-6), with gradients that change sign and scale, a skipped step (``None``)
and a parameter group overriding the options."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchlean import optim
from torchlean.optim import OptimizerError

RMSPROP = [
    ({}, {}),
    ({"weight_decay": 0.1}, {"weight_decay": 0.1}),
    ({"momentum": 0.9}, {"momentum": 0.9}),
    ({"centered": True}, {"centered": True}),
    ({"decay": 0.9, "eps": 1e-6, "weight_decay": 0.05, "momentum": 0.5, "centered": True},
     {"alpha": 0.9, "eps": 1e-6, "weight_decay": 0.05, "momentum": 0.5, "centered": True}),
]
ADAGRAD = [
    ({}, {}),
    ({"lr_decay": 0.1}, {"lr_decay": 0.1}),
    ({"weight_decay": 0.2}, {"weight_decay": 0.2}),
    ({"initial_accumulator_value": 0.5}, {"initial_accumulator_value": 0.5}),
    ({"lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 2.0, "eps": 1e-6},
     {"lr_decay": 0.05, "weight_decay": 0.1, "initial_accumulator_value": 2.0, "eps": 1e-6}),
]
CASES = [(optim.rmsprop, torch.optim.RMSprop, o, t) for o, t in RMSPROP] + [
    (optim.adagrad, torch.optim.Adagrad, o, t) for o, t in ADAGRAD
]


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(("build", "cls", "ours", "theirs"), CASES)
def test_options_match_torch(build, cls, ours, theirs, dtype):
    rng = np.random.default_rng(3)
    params = [rng.standard_normal((4, 3)).astype(dtype), rng.standard_normal(3).astype(dtype)]
    optimizer = build(0.05, **ours).create(params)
    tensors = [torch.tensor(p.copy(), requires_grad=True) for p in params]
    reference = cls(tensors, lr=0.05, foreach=False, **theirs)
    tolerance = 1e-12 if dtype == np.float64 else 2e-6
    for step in range(8):
        grads = [(rng.standard_normal(p.shape) * 10.0 ** (step % 3 - 1)).astype(dtype) for p in params]
        if step == 4:  # the bias skips a step: its state and step count stay
            grads[1] = None
        params = optimizer.step(params, grads)
        for t, g in zip(tensors, grads, strict=True):
            t.grad = None if g is None else torch.tensor(g)
        reference.step()
        for mine, t in zip(params, tensors, strict=True):
            np.testing.assert_allclose(mine, t.detach().numpy(), rtol=tolerance, atol=tolerance)
    assert optimizer.param_steps == [8, 7]


@pytest.mark.parametrize(("dtype", "sizes"), [(np.float32, (1e20, 1e30)), (np.float64, (1e155, 1e300))])
@pytest.mark.parametrize("momentum", [0.0, 0.5])
def test_centered_rmsprop_beyond_representable_squares_matches_torch(momentum, dtype, sizes):
    """review116 F1: a gradient average past about 1.8e19 has a square float32 cannot hold; torch's
    fused ``v.addcmul(a, a, value=-1)`` gives ``v``'s inf (a zero step), where ``v - a * a`` in
    float32 was ``inf - inf``, NaN, which then stayed in the parameter; the same past 1.3e154 in
    float64 (review118 F2)."""
    for size in sizes:
        params = [np.ones(2, dtype)]
        optimizer = optim.rmsprop(0.01, 0.9, 1e-8, 0.01, momentum, True).create(params)
        tensor = torch.tensor(params[0].copy(), requires_grad=True)
        reference = torch.optim.RMSprop([tensor], lr=0.01, alpha=0.9, eps=1e-8, weight_decay=0.01,
                                        momentum=momentum, centered=True, foreach=False)
        for _ in range(2):
            grad = np.full(2, size, dtype)
            params = optimizer.step(params, [grad])
            tensor.grad = torch.tensor(grad)
            reference.step()
            np.testing.assert_array_equal(params[0], tensor.detach().numpy())
        assert np.isfinite(params[0]).all()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_the_squared_average_subtraction_matches_torchs_fused_op_at_infinities(dtype):
    """``v - a*a`` as ``v.addcmul(a, a, value=-1)`` gives it: an infinite ``v`` stays inf past a
    finite ``a``'s overflowing square, an infinite or NaN ``a`` gives NaN (review119: inf there)."""
    from torchlean.optim._records import _less_square

    big = 1e20 if dtype == np.float32 else 1e200
    v = np.array([np.inf, np.inf, np.inf, 4.0, np.nan], dtype)
    a = np.array([big, np.inf, np.nan, 1.0, 1.0], dtype)
    theirs = torch.tensor(v).addcmul(torch.tensor(a), torch.tensor(a), value=-1).numpy()
    np.testing.assert_array_equal(_less_square(v, a), theirs)


def test_the_options_change_the_updates():
    """Each option moves the parameters differently from the plain optimizer (the comparisons above
    can fail)."""
    rng = np.random.default_rng(0)
    params = [rng.standard_normal(5)]
    grads = [[rng.standard_normal(5)] for _ in range(4)]

    def run(config: optim.OptimizerConfig) -> np.ndarray:
        state, values = config.create(params), params
        for g in grads:
            values = state.step(values, g)
        return values[0]

    for build, options in [(optim.rmsprop, o) for o, _ in RMSPROP[1:]] + [
        (optim.adagrad, o) for o, _ in ADAGRAD[1:]
    ]:
        assert not np.allclose(run(build(0.1, **options)), run(build(0.1))), options


def test_centered_keeps_a_third_buffer_and_adagrad_starts_its_sum():
    state = optim.rmsprop(0.1, centered=True).create([np.zeros(2)])
    assert state.third[0] is not None and optim.rmsprop(0.1).create([np.zeros(2)]).third == [None]
    started = optim.adagrad(initial_accumulator_value=0.5).create([np.zeros(2)])
    assert np.array_equal(started.second[0], [0.5, 0.5])


def test_a_group_overrides_the_options():
    groups = [optim.group("b", momentum=0.9, centered=True)]
    state = optim.rmsprop(0.1).create([np.ones(2), np.ones(2)], names=["w", "b"], groups=groups)
    assert state.third[0] is None and state.third[1] is not None
    assert state.config_of(1) == optim.rmsprop(0.1, momentum=0.9, centered=True)


def test_describe_reads_back():
    for config in (optim.rmsprop(0.1, 0.9, 1e-6, 0.1, 0.5, True), optim.adagrad(0.1, 0.01, 0.2, 0.3, 1e-8)):
        assert eval(config.describe(), {"optim": optim}) == config
    assert optim.adagrad().describe() == (
        "optim.adagrad(lr=0.01, lr_decay=0.0, weight_decay=0.0, initial_accumulator_value=0.0, eps=1e-10)"
    )


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: optim.rmsprop(momentum=1.0), r"satisfy 0 <= momentum < 1, got 1.0"),
        (lambda: optim.rmsprop(weight_decay=-1), "weight decay must be finite and nonnegative, got -1.0"),
        (lambda: optim.rmsprop(centered=1), "centered must be a bool, got 1"),
        (lambda: optim.adagrad(lr_decay=-0.1), "lr_decay must be finite and nonnegative, got -0.1"),
        (lambda: optim.adagrad(initial_accumulator_value=float("inf")),
         "initial_accumulator_value must be finite and nonnegative, got inf"),
        (lambda: optim.adagrad(weight_decay="0.1"), "weight decay must be a real number"),
    ],
)
def test_refusals(build, message):
    with pytest.raises(OptimizerError, match=message):
        build()
