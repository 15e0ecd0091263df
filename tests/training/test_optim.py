"""Optimizer updates against torch.optim in float64, and the original's validation messages."""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra.numpy import array_shapes

import torchlean
from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.optim._records import _adam_step
from torchlean.trainer import Trainer, TrainerError


def _torch_trajectory(make, params0, grads_seq):
    tensors = [torch.tensor(p, dtype=torch.float64, requires_grad=True) for p in params0]
    opt = make(tensors)
    for grads in grads_seq:
        for t, g in zip(tensors, grads, strict=True):
            t.grad = torch.tensor(g, dtype=torch.float64)
        opt.step()
    return [t.detach().numpy() for t in tensors]


CASES = [
    (optim.sgd(lr=0.1), lambda ps: torch.optim.SGD(ps, lr=0.1)),
    (optim.sgd(lr=0.05, momentum=0.9), lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9)),
    (
        optim.sgd(lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4),
        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.9, nesterov=True, weight_decay=5e-4),
    ),
    (
        optim.sgd(lr=0.05, momentum=0.5, dampening=0.3, weight_decay=0.1),
        lambda ps: torch.optim.SGD(ps, lr=0.05, momentum=0.5, dampening=0.3, weight_decay=0.1),
    ),
    (optim.sgd(lr=0.1, weight_decay=0.2), lambda ps: torch.optim.SGD(ps, lr=0.1, weight_decay=0.2)),
    (optim.adam(lr=0.01), lambda ps: torch.optim.Adam(ps, lr=0.01)),
    (optim.adam(lr=0.01, weight_decay=0.1), lambda ps: torch.optim.Adam(ps, lr=0.01, weight_decay=0.1)),
    (optim.adamw(lr=0.01, weight_decay=0.1), lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)),
    # AMSGrad (review66: only test_param_groups compared it with torch): the 7 random gradients make
    # v fall below its running maximum, so an update that forgot the maximum would differ
    (optim.adam(lr=0.01, amsgrad=True), lambda ps: torch.optim.Adam(ps, lr=0.01, amsgrad=True)),
    (
        optim.adamw(lr=0.01, weight_decay=0.1, amsgrad=True),
        lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1, amsgrad=True),
    ),
    (optim.rmsprop(lr=0.01, decay=0.9), lambda ps: torch.optim.RMSprop(ps, lr=0.01, alpha=0.9)),
    (optim.adagrad(lr=0.1), lambda ps: torch.optim.Adagrad(ps, lr=0.1)),
]


@pytest.mark.parametrize(("config", "make"), CASES, ids=lambda c: getattr(c, "name", ""))
def test_update_matches_torch_optim_float64(config, make):
    rng = np.random.default_rng(0)
    params0 = [rng.standard_normal((3, 4)), rng.standard_normal(5)]
    grads_seq = [[rng.standard_normal(p.shape) for p in params0] for _ in range(7)]
    opt = config.create(params0)
    params = [p.copy() for p in params0]
    for grads in grads_seq:
        params = opt.step(params, grads)
    expected = _torch_trajectory(make, params0, grads_seq)
    for ours, theirs in zip(params, expected, strict=True):
        np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-14)


def test_float32_parameters_stay_float32():
    params = [np.ones((2, 2), dtype=np.float32)]
    opt = optim.adam(lr=0.1).create(params)
    (new,) = opt.step(params, [np.full((2, 2), 0.5, dtype=np.float32)])
    assert new.dtype == np.float32
    np.testing.assert_allclose(new, 0.9, rtol=1e-6)


def test_none_gradient_leaves_parameter():
    params = [np.ones(3)]
    opt = optim.sgd(lr=1.0).create(params)
    (new,) = opt.step(params, [None])
    assert new is params[0]


LR = "optimizer: learning rate must be finite and nonnegative"


def unit(name: str) -> str:
    return f"optimizer: {name} must be finite and satisfy 0 <= {name} < 1"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: optim.sgd(lr=-0.1), f"{LR}, got -0.1"),
        (lambda: optim.sgd(lr=-1), f"{LR}, got -1.0"),
        (lambda: optim.sgd(lr=float("inf")), f"{LR}, got inf"),
        (lambda: optim.sgd(lr=float("nan")), f"{LR}, got nan"),
        (lambda: optim.sgd(momentum=1.0), f"{unit('momentum')}, got 1.0"),
        (lambda: optim.adam(beta1=-0.1), f"{unit('beta1')}, got -0.1"),
        (lambda: optim.adam(beta2=1.5), f"{unit('beta2')}, got 1.5"),
        (
            lambda: optim.rmsprop(decay=float("nan")),
            "optimizer: decay must be finite and satisfy 0 <= decay < 1, got nan",
        ),
        (lambda: optim.adagrad(eps=0.0), "optimizer: epsilon must be finite and positive, got 0.0"),
        (
            lambda: optim.adamw(weight_decay=-1.0),
            "optimizer: weight decay must be finite and nonnegative, got -1.0",
        ),
        (
            lambda: optim.sgd(momentum=0.99999999),
            "optimizer: momentum must be finite and satisfy 0 <= momentum < 1 after conversion to binary32, "
            "got 0.99999999 (1.0 in binary32)",
        ),
        (
            lambda: optim.adam(eps=1e-50),
            "optimizer: epsilon must be finite and positive after conversion to binary32, got 1e-50 "
            "(0.0 in binary32)",
        ),
        (
            lambda: optim.sgd(lr=1e39),
            f"{LR} after conversion to binary32, got 1e+39 (inf in binary32)",
        ),
    ],
)
def test_validation_messages(build, message):
    """The original's words (anchor-runtime.md §3.1), then ``, got <value>``; refused when the
    record is built, as ``torch.optim`` refuses at construction (the original checks later, when
    the trainer opens)."""
    with pytest.raises(OptimizerError) as info:
        build()
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("value", "size"),
    [
        (10**400, "an integer of about 401 digits"),
        (-(10**400), "a negative integer of about 401 digits"),
        (10**5000, "an integer of about 5001 digits"),  # past Python's 4300-digit repr limit
    ],
    ids=["1e400", "-1e400", "1e5000"],
)
def test_an_integer_beyond_the_float_range_is_refused_with_its_size(value, size):
    with pytest.raises(OptimizerError) as info:
        optim.adam(beta1=value)
    assert str(info.value) == f"optimizer: beta1 must be finite, got {size} (beyond the float range)"


def test_by_name_validates_at_once_with_the_value():
    with pytest.raises(OptimizerError) as info:
        optim.by_name("adam", -1.0)
    assert str(info.value) == f"{LR}, got -1.0"


REAL = "must be a real number (int or float), got"


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: optim.adam(lr=True), f"optimizer: learning rate {REAL} True"),
        (lambda: optim.adagrad(lr="0.1"), f"optimizer: learning rate {REAL} '0.1'"),
        (lambda: optim.sgd(momentum=False), f"optimizer: momentum {REAL} False"),
        (lambda: optim.sgd(lr=None), f"optimizer: learning rate {REAL} None"),
        (lambda: optim.adam(beta2="0.999"), f"optimizer: beta2 {REAL} '0.999'"),
        (lambda: optim.rmsprop(eps=np.bool_(True)), f"optimizer: epsilon {REAL} {np.bool_(True)!r}"),
        (lambda: optim.adamw(weight_decay=[0.01]), f"optimizer: weight decay {REAL} [0.01]"),
        (lambda: optim.SGD(lr=True), f"optimizer: learning rate {REAL} True"),
        (lambda: optim.by_name("sgd", "0.1"), f"optimizer: learning rate {REAL} '0.1'"),
    ],
)
def test_non_numbers_are_refused_when_the_record_is_built(build, message):
    with pytest.raises(OptimizerError) as info:
        build()
    assert str(info.value) == message


def test_numbers_are_stored_as_floats():
    """Ints and numpy scalars are accepted (as ``torch.optim`` accepts them) and stored as floats."""
    config = optim.adam(lr=1, beta1=np.float32(0.5), beta2=np.float64(0.25), eps=np.int64(1))
    assert (config.lr, config.beta1, config.beta2, config.eps) == (1.0, 0.5, 0.25, 1.0)
    assert all(type(v) is float for v in (config.lr, config.beta1, config.beta2, config.eps))
    assert config == optim.adam(lr=1.0, beta1=0.5, beta2=0.25, eps=1.0)
    assert optim.sgd(2).describe() == (
        "optim.sgd(lr=2.0, momentum=0.0, dampening=0.0, weight_decay=0.0, nesterov=False)"
    )


def test_describe_reads_back():
    text = optim.adamw(lr=1e-5, weight_decay=0.02).describe()
    assert text == (
        "optim.adamw(lr=1e-05, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.02, amsgrad=False)"
    )


def test_unknown_optimizer_names_the_accepted_ones():
    with pytest.raises(ValueError, match="unknown optimizer lamb \\(known: sgd \\| adam \\| adamw"):
        optim.by_name("lamb", 0.1)


def test_parameter_count_change_is_refused():
    opt = optim.sgd().create([np.ones(2)])
    with pytest.raises(OptimizerError, match="expected 1 parameters, got 2"):
        opt.step([np.ones(2), np.ones(2)], [np.ones(2), np.ones(2)])


def _torch_order_adam(config, step, start, grad, m, v):
    """torch.optim.adam._single_tensor_adam written out with numpy (one rounding per torch
    operation): m.lerp_(g, 1 - b1); v.mul_(b2).addcmul_(g, g, value=1 - b2); step_size and
    sqrt(1 - b2^t) in Python floats; denom = v.sqrt() / sqrt(1 - b2^t) + eps;
    start.addcdiv_(m, denom, value=-step_size)."""
    dt = start.dtype.type
    weight = dt(1.0 - config.beta1)
    if abs(weight) < 0.5:
        m[...] = m + weight * (grad - m)
    else:
        m[...] = grad - (grad - m) * (dt(1.0) - weight)
    v[...] = v * dt(config.beta2) + dt(1.0 - config.beta2) * grad * grad
    step_size = config.lr / (1.0 - config.beta1**step)
    denom = np.sqrt(v) / dt((1.0 - config.beta2**step) ** 0.5) + dt(config.eps)
    return start + dt(-step_size) * m / denom


@pytest.mark.parametrize("beta1", [0.9, 0.3], ids=["lerp-small-weight", "lerp-large-weight"])
@pytest.mark.parametrize("shape", [(20, 3), (), (1,)], ids=str)
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_in_place_step_is_bitwise_torchs_order_of_operations(dtype, shape, beta1):
    """The update (torch's in-place steps, computed into new arrays) rounds exactly like the
    out-of-place expression in torch's order."""
    rng = np.random.default_rng(7)
    config = optim.adam(0.01, beta1=beta1)
    p1 = np.asarray(rng.standard_normal(shape), dtype=dtype)
    p2, m1, v1 = p1.copy(), np.zeros_like(p1), np.zeros_like(p1)
    m2, v2 = m1.copy(), v1.copy()
    for step in range(1, 25):
        g = np.asarray(rng.standard_normal(shape) * 10.0 ** rng.integers(-8, 3), dtype=dtype)
        p1 = np.asarray(_torch_order_adam(config, step, p1, g, m1, v1), dtype=dtype)
        new, m2, v2, _ = _adam_step(config, step, p2, g, m2, v2, None)
        p2 = np.asarray(new, dtype=dtype)
        assert p1.tobytes() == p2.tobytes()
        assert (m1.tobytes(), v1.tobytes()) == (m2.tobytes(), v2.tobytes())


@pytest.mark.parametrize("name", ["adam", "adamw"])
def test_adam_moves_a_parameter_whose_gradient_squared_overflows_the_bias_corrected_moment(name):
    """Review 6 #3: ``sqrt(v / (1 - b2))`` overflowed once ``|g|`` passed about 1.8e19 (float32) or
    1.3e154 (float64), so the update was exactly 0; torch.optim takes ``sqrt(v) / sqrt(1 - b2)``
    and moves the parameter by -lr (the first Adam step is -lr * sign(g) up to eps)."""
    for dtype, g in ((np.float32, 2e19), (np.float64, 1e155)):
        p = np.zeros(1, dtype=dtype)
        config = optim.adam(lr=0.001) if name == "adam" else optim.adamw(lr=0.001, weight_decay=0.0)
        (ours,) = config.create([p]).step([p], [np.array([g], dtype=dtype)])
        t = torch.zeros(1, dtype=torch.float64, requires_grad=True)
        cls = torch.optim.Adam if name == "adam" else partial(torch.optim.AdamW, weight_decay=0.0)
        torch_opt = cls([t], lr=0.001)
        t.grad = torch.tensor([g], dtype=torch.float64)
        torch_opt.step()
        np.testing.assert_allclose(t.detach().numpy(), [-0.001], rtol=1e-12)  # the hand value
        np.testing.assert_allclose(ours, [-0.001], rtol=1e-6 if dtype == np.float32 else 1e-12)


MAGNITUDES = {
    # float32: g*g underflows to 0 (1e-30), sqrt(v / (1 - b2)) overflowed before (2e19, 3e20)
    np.float32: (1e-30, 1e-3, 2e19, 3e20),
    # float64: g*g underflows (1e-160), sqrt(v / (1 - b2)) overflowed before (1e155, 4e155)
    np.float64: (1e-160, 1e-3, 1e155, 4e155),
}
"""Gradient scales of the trajectory tests, per dtype: tiny, ordinary and near-overflow."""

TRAJECTORY_CASES = [
    (optim.sgd(lr=0.05, momentum=0.9), partial(torch.optim.SGD, lr=0.05, momentum=0.9)),
    (
        optim.sgd(lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
        partial(torch.optim.SGD, lr=0.05, momentum=0.9, nesterov=True, weight_decay=0.01),
    ),
    (
        optim.sgd(lr=0.05, momentum=0.5, dampening=0.25),
        partial(torch.optim.SGD, lr=0.05, momentum=0.5, dampening=0.25),
    ),
    (optim.adam(lr=0.01), partial(torch.optim.Adam, lr=0.01)),
    (optim.adam(lr=0.01, weight_decay=0.05), partial(torch.optim.Adam, lr=0.01, weight_decay=0.05)),
    (optim.adam(lr=0.01, beta1=0.3, beta2=0.5), partial(torch.optim.Adam, lr=0.01, betas=(0.3, 0.5))),
    (optim.adamw(lr=0.01, weight_decay=0.1), partial(torch.optim.AdamW, lr=0.01, weight_decay=0.1)),
    (optim.rmsprop(lr=0.01, decay=0.9), partial(torch.optim.RMSprop, lr=0.01, alpha=0.9)),
    (optim.adagrad(lr=0.1), partial(torch.optim.Adagrad, lr=0.1)),
]


def _same_dtype_trajectory(make, params0, grads_seq):
    """torch.optim's trajectory with the parameters and gradients in their own dtype."""
    tensors = [torch.tensor(p, requires_grad=True) for p in params0]
    opt = make(tensors)
    for grads in grads_seq:
        for t, g in zip(tensors, grads, strict=True):
            t.grad = torch.tensor(g)
        opt.step()
    return [t.detach().numpy() for t in tensors]


@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["float32", "float64"])
@pytest.mark.parametrize(
    ("config", "make"),
    TRAJECTORY_CASES,
    ids=["sgd-momentum", "sgd-nesterov-decay", "sgd-dampening", "adam", "adam-l2", "adam-low-betas", "adamw",
         "rmsprop", "adagrad"],
)
def test_trajectories_at_tiny_and_huge_gradients_match_torch_optim(config, make, dtype):
    """Ten steps at each gradient scale of MAGNITUDES from parameters of order 1, against
    torch.optim in the same dtype: the same overflows (3e20 overflows Adam's second moment in
    float32, 4e155 Adagrad's sum in float64, in torch too) and underflows; torch may fuse a
    multiply-add, hence a tolerance of a few roundings per step."""
    rtol = {np.float32: 2e-5, np.float64: 1e-12}[dtype]
    rng = np.random.default_rng(11)
    for scale in MAGNITUDES[dtype]:
        params0, grads_seq = _scaled_run(rng, dtype, scale)
        params = _our_trajectory(config, params0, grads_seq)
        expected = _same_dtype_trajectory(make, params0, grads_seq)
        for ours, theirs in zip(params, expected, strict=True):
            assert ours.dtype == dtype
            np.testing.assert_allclose(ours, theirs, rtol=rtol, atol=rtol * 1e-2, err_msg=f"scale {scale}")


def _scaled_run(rng, dtype, scale, steps=10):
    """Parameters of order 1 and ``steps`` gradients of random signs and magnitudes in
    ``[0.5, 2] * scale``, in ``dtype``."""
    params0 = [np.asarray(rng.standard_normal(shape), dtype=dtype) for shape in ((4, 3), (5,))]
    grads_seq = [
        [np.asarray(rng.choice([-1.0, 1.0], p.shape) * rng.uniform(0.5, 2.0, p.shape) * scale, dtype=dtype)
         for p in params0]
        for _ in range(steps)
    ]
    return params0, grads_seq


def _our_trajectory(config, params0, grads_seq):
    optimizer = config.create(params0)
    params = [p.copy() for p in params0]
    for grads in grads_seq:
        params = optimizer.step(params, grads)
    return params


@pytest.mark.parametrize("name", ["adam", "adamw"])
@pytest.mark.parametrize(
    ("dtype", "scale"), [(np.float32, 4e19), (np.float64, 5e154)], ids=["float32-4e19", "float64-5e154"]
)
def test_adam_trajectory_at_huge_gradients_matches_torch_optim_float64(name, dtype, scale):
    """At gradients (``[0.5, 2] * scale``) where ``sqrt(v / (1 - b2^t))`` overflowed (review 6
    #3: above about 1.8e19 in float32, 1.3e154 in float64) but ``v`` itself does not, the
    trajectory follows torch.optim in float64 (where nothing overflows at the float32 scale) to
    the dtype's precision."""
    config = optim.adam(lr=0.01) if name == "adam" else optim.adamw(lr=0.01, weight_decay=0.1)
    make = partial(torch.optim.Adam, lr=0.01) if name == "adam" else partial(
        torch.optim.AdamW, lr=0.01, weight_decay=0.1
    )
    params0, grads_seq = _scaled_run(np.random.default_rng(3), dtype, scale)
    bound = np.zeros(1, dtype=dtype)  # a bound on every second moment: finite in dtype
    for grads in grads_seq:
        g = max(np.abs(gs).max() for gs in grads)
        bound = bound * dtype(0.999) + dtype(0.001) * g * g
    assert np.all(np.isfinite(bound))
    ours = _our_trajectory(config, params0, grads_seq)
    rtol = 2e-5 if dtype == np.float32 else 1e-12
    for mine, theirs, start in zip(ours, _torch_trajectory(make, params0, grads_seq), params0, strict=True):
        np.testing.assert_allclose(mine, theirs, rtol=rtol, atol=rtol * 1e-2)
        assert np.all(mine != start)  # before the fix, every update was exactly 0


@pytest.mark.parametrize("name", ["adam", "adamw", "sgd"])
def test_a_none_gradient_skips_the_parameter_like_torch(name):
    """torch.optim counts steps per parameter and skips a parameter without a gradient; the bias
    corrections (Adam/AdamW) and the momentum buffer's first step (SGD) follow that count."""
    config = optim.sgd(0.1, momentum=0.9) if name == "sgd" else optim.by_name(name, 0.1)
    params = [np.ones(3), np.full(2, 2.0)]
    optimizer = config.create(params)
    tp = [torch.tensor(p, requires_grad=True) for p in params]
    torch_cls = {"adam": torch.optim.Adam, "adamw": torch.optim.AdamW, "sgd": torch.optim.SGD}[name]
    kwargs: dict[str, float] = {}
    if name == "sgd":
        kwargs["momentum"] = 0.9
    elif name == "adamw":
        kwargs["weight_decay"] = config.weight_decay
    torch_opt = torch_cls(tp, lr=0.1, **kwargs)
    rng = np.random.default_rng(5)
    for step in range(12):
        grads = [None if step in (0, 4, 5) else rng.standard_normal(3), rng.standard_normal(2)]
        params = optimizer.step(params, grads)
        for t, g in zip(tp, grads, strict=True):
            t.grad = None if g is None else torch.tensor(g)
        torch_opt.step()
    for ours, theirs in zip(params, tp, strict=True):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-13, atol=1e-15)
    assert optimizer.param_steps == [9, 12] and optimizer.steps == 12


def _run_both(config, make, params0, grads_seq):
    """Our trajectory and torch.optim's (float64) from ``params0`` under ``grads_seq``."""
    optimizer = config.create(params0)
    params = [p.copy() for p in params0]
    for grads in grads_seq:
        params = optimizer.step(params, grads)
    return params, _torch_trajectory(make, params0, grads_seq)


@pytest.mark.parametrize(("config", "make"), CASES, ids=lambda c: getattr(c, "name", ""))
def test_zero_d_and_one_element_parameters_match_torch_optim(config, make):
    """0-d, (1,) and (1, 1) parameters (a scalar bias, say) take the same path as any other."""
    params0 = [np.array(0.7), np.array([-1.3]), np.array([[0.4]])]
    grads_seq = [
        [np.array(0.5), np.array([-2.0]), np.array([[0.25]])],
        [np.array(-1.5), np.array([0.125]), np.array([[3.0]])],
        [np.array(0.0), np.array([1.0]), np.array([[-0.75]])],
        [np.array(2.0), np.array([-0.5]), np.array([[0.1]])],
        [np.array(-0.3), np.array([0.6]), np.array([[-1.2]])],
    ]
    ours, theirs = _run_both(config, make, params0, grads_seq)
    for p0, mine, expected in zip(params0, ours, theirs, strict=True):
        assert type(mine) is np.ndarray and mine.shape == p0.shape and mine.dtype == np.float64
        np.testing.assert_allclose(mine, expected, rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize("name", list(optim.OPTIMIZERS))
def test_zero_d_float32_parameter_stays_a_0d_float32_array(name):
    optimizer = optim.by_name(name, 0.01).create([np.array(1.0, dtype=np.float32)])
    (new,) = optimizer.step([np.array(1.0, dtype=np.float32)], [np.array(0.5, dtype=np.float32)])
    assert type(new) is np.ndarray and new.shape == () and new.dtype == np.float32
    expected = _torch_trajectory(partial(_torch_optimizer, name, lr=0.01), [np.array(1.0)], [[np.array(0.5)]])
    np.testing.assert_allclose(new, expected[0], rtol=1e-6)


def _torch_optimizer(name, tensors, lr):
    """torch.optim's optimizer ``name`` with the defaults of ``optim.by_name(name, lr)``."""
    if name == "adamw":
        return torch.optim.AdamW(tensors, lr=lr, weight_decay=0.01)
    if name == "rmsprop":
        return torch.optim.RMSprop(tensors, lr=lr, alpha=0.99, eps=1e-8)
    cls = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "adagrad": torch.optim.Adagrad}[name]
    return cls(tensors, lr=lr)


@settings(max_examples=25, deadline=None)
@given(
    name=st.sampled_from(list(optim.OPTIMIZERS)),
    shape=array_shapes(min_dims=0, max_dims=3, min_side=1, max_side=3),
    seed=st.integers(0, 2**32 - 1),
)
def test_any_shape_matches_torch_optim(name, shape, seed):
    rng = np.random.default_rng(seed)
    params0 = [np.asarray(rng.standard_normal(shape))]
    grads_seq = [[np.asarray(rng.standard_normal(shape))] for _ in range(4)]
    ours, theirs = _run_both(
        optim.by_name(name, 0.05), lambda ps: _torch_optimizer(name, ps, 0.05), params0, grads_seq
    )
    assert ours[0].shape == shape
    np.testing.assert_allclose(ours[0], theirs[0], rtol=1e-12, atol=1e-14)


def _state(optimizer):
    return (
        [a.copy() for a in optimizer.first],
        [a.copy() for a in optimizer.second],
        list(optimizer.param_steps),
        optimizer.steps,
    )


def _assert_state(optimizer, state):
    first, second, param_steps, steps = state
    for ours, saved in zip(optimizer.first + optimizer.second, first + second, strict=True):
        assert ours.shape == saved.shape and ours.tobytes() == saved.tobytes()
    assert (optimizer.param_steps, optimizer.steps) == (param_steps, steps)


@pytest.mark.parametrize("name", list(optim.OPTIMIZERS))
def test_a_parameter_whose_shape_changed_is_refused(name):
    """Before: SGD momentum broadcast its (2,) state to (1, 2); Adam raised numpy's ValueError."""
    config = optim.sgd(0.1, momentum=0.9) if name == "sgd" else optim.by_name(name, 0.1)
    params = [np.ones(3), np.ones(2)]
    optimizer = config.create(params)
    params = optimizer.step(params, [np.ones(3), np.ones(2)])
    saved = _state(optimizer)
    with pytest.raises(OptimizerError) as info:
        optimizer.step([params[0], params[1].reshape(1, 2)], [np.ones(3), np.ones((1, 2))])
    assert str(info.value) == (
        "optimizer: parameter 1 has shape (1, 2) and dtype float64, but the optimizer was created "
        "for shape (2,) and dtype float64"
    )
    _assert_state(optimizer, saved)


def test_a_parameter_whose_dtype_changed_is_refused():
    optimizer = optim.adam().create([np.ones(2, dtype=np.float32)])
    with pytest.raises(OptimizerError) as info:
        optimizer.step([np.ones(2)], [np.ones(2)])
    assert str(info.value) == (
        "optimizer: parameter 0 has shape (2,) and dtype float64, but the optimizer was created "
        "for shape (2,) and dtype float32"
    )


@pytest.mark.parametrize(
    ("grad", "message"),
    [
        (np.ones(3), "optimizer: gradient 1 has shape (3,) and dtype float64, but parameter 1 has shape (2,) "
         "and dtype float64"),
        (np.ones(2, dtype=np.float32), "optimizer: gradient 1 has shape (2,) and dtype float32, but "
         "parameter 1 has shape (2,) and dtype float64"),
    ],
    ids=["shape", "dtype"],
)
def test_a_gradient_unlike_its_parameter_is_refused_before_any_state_moves(grad, message):
    """torch refuses a ``.grad`` of another dtype too; before, the first parameter's state moved
    and then the step raised (shape) or the gradient was silently cast (dtype)."""
    optimizer = optim.adam(0.1).create([np.ones(3), np.ones(2)])
    saved = _state(optimizer)
    with pytest.raises(OptimizerError) as info:
        optimizer.step([np.ones(3), np.ones(2)], [np.ones(3), grad])
    assert str(info.value) == message
    _assert_state(optimizer, saved)


@pytest.mark.parametrize("grads", [[np.ones(2)], [np.ones(2), np.ones(2), None]], ids=["short", "long"])
def test_gradient_count_must_match(grads):
    optimizer = optim.sgd().create([np.ones(2), np.ones(2)])
    with pytest.raises(OptimizerError) as info:
        optimizer.step([np.ones(2), np.ones(2)], grads)
    assert str(info.value) == (
        f"optimizer: expected 2 gradients (one per parameter, None to skip one), got {len(grads)}"
    )
    assert optimizer.steps == 0


ACCEPTED = "must be a numpy float array (numpy.ndarray of dtype float16, float32 or float64), got"


@pytest.mark.parametrize(
    ("param", "got"),
    [
        (
            lambda: torchlean.tensor(np.ones(2)),
            "torchlean.tensor.Tensor (pass tensor.numpy(); for a model, model.parameters)",
        ),
        (lambda: [1.0, 2.0], "list"),
        (lambda: np.ones(2, dtype=np.int64), "numpy.ndarray of dtype int64"),
        (lambda: np.float64(1.0), "numpy.float64"),
    ],
    ids=["tensor", "list", "int-array", "numpy-scalar"],
)
def test_create_refuses_what_is_not_a_numpy_float_array(param, got):
    with pytest.raises(OptimizerError) as info:
        optim.adam().create([np.ones(3), param()])
    assert str(info.value) == f"optimizer: parameter 1 {ACCEPTED} {got}"


def test_step_refuses_tensors_as_create_does():
    """Before: ``AttributeError: 'Tensor' object has no attribute 'astype'``."""
    tensor = torchlean.tensor(np.ones(2))
    optimizer = optim.sgd().create([np.ones(2)])
    with pytest.raises(OptimizerError) as info:
        optimizer.step([tensor], [np.ones(2)])
    assert str(info.value) == (  # review58 F6: with create's hint
        f"optimizer: parameter 0 {ACCEPTED} torchlean.tensor.Tensor (pass tensor.numpy(); for a model, "
        "model.parameters)"
    )
    with pytest.raises(OptimizerError) as info:
        optimizer.step([np.ones(2)], [tensor])
    expected = f"optimizer: gradient 0 {ACCEPTED} torchlean.tensor.Tensor (pass tensor.numpy())"
    assert str(info.value) == expected
    assert optimizer.steps == 0


@pytest.mark.parametrize("name", ["sgd", "adam", "rmsprop", "adagrad"])
def test_a_diverging_step_overflows_silently_like_torch(name: str) -> None:
    """Huge learning rate and gradients: the update overflows to +-inf (or NaN) without a numpy
    RuntimeWarning (an exception under ``-W error``), and equals torch.optim's float32 result."""
    import warnings

    param = np.array([1e30, -2e30, 3.0], dtype=np.float32)
    grad = np.array([3e38, -3e38, 1.0], dtype=np.float32)
    opt = optim.by_name(name, 1e10).create([param])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        (ours,) = opt.step([param], [grad])
    tp = torch.tensor(param, requires_grad=True)
    reference = {"sgd": torch.optim.SGD, "adam": torch.optim.Adam, "rmsprop": torch.optim.RMSprop,
                 "adagrad": torch.optim.Adagrad}[name]([tp], lr=1e10)
    tp.grad = torch.tensor(grad)
    reference.step()
    expected = tp.detach().numpy()
    assert not np.all(np.isfinite(expected)) or name != "sgd"  # the case really overflows for SGD
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(expected))
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(ours[~finite], expected[~finite])
    np.testing.assert_allclose(ours[finite], expected[finite], rtol=1e-6)


@pytest.mark.parametrize(
    ("call", "what", "got"),
    [
        (lambda: optim.adam().create(np.ones((2, 3))), "parameters", "numpy.ndarray"),
        (lambda: optim.adam().create(3), "parameters", "int"),
        (lambda: optim.sgd().create({"w": np.ones(2)}), "parameters", "dict"),
        (lambda: optim.adam().create([np.ones(2)]).step(None, [None]), "parameters", "NoneType"),
        (
            lambda: optim.adam().create([np.ones(2)]).step([np.ones(2)], np.ones(2)),
            "gradients",
            "numpy.ndarray",
        ),
    ],
)
def test_parameter_and_gradient_containers_are_checked(
    call: Callable[[], object], what: str, got: str
) -> None:
    # torch.optim refuses a single tensor as params ("should be an iterable of Tensors or dicts")
    with pytest.raises(optim.OptimizerError) as info:
        call()
    assert str(info.value) == (
        f"optimizer: {what} must be a sequence of numpy arrays (one per parameter), got {got}"
    )


def test_any_iterable_of_arrays_is_accepted_like_a_list() -> None:
    lr = 0.5
    by_list = optim.sgd(lr).create([np.ones(2)]).step([np.ones(2)], [np.full(2, 0.5)])
    by_iter = optim.sgd(lr).create(p for p in [np.ones(2)]).step((np.ones(2),), iter([np.full(2, 0.5)]))
    np.testing.assert_array_equal(by_list[0], [0.75, 0.75])  # 1 - 0.5 * 0.5
    np.testing.assert_array_equal(by_iter[0], by_list[0])


def test_adamw_float32_decay_is_torchs_single_rounding_bitwise() -> None:
    """``param * float32(1 - lr*wd)``: lr = wd = 0.3 is a pair where ``float32(1) - float32(lr*wd)``
    differs (review20 mut O1: every other AdamW test runs in float64)."""
    p0 = np.float32([1.0, -3.0, 7.5])
    (ours,) = optim.adamw(lr=0.3, weight_decay=0.3).create([p0]).step([p0], [np.zeros(3, np.float32)])
    t = torch.tensor(p0, requires_grad=True)
    opt = torch.optim.AdamW([t], lr=0.3, weight_decay=0.3, foreach=False)
    t.grad = torch.zeros(3)
    opt.step()
    assert ours.tobytes() == t.detach().numpy().tobytes()


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: optim.sgd(0.1, nesterov=True), "optimizer: Nesterov momentum requires a momentum and zero "
         "dampening, got momentum=0.0, dampening=0.0"),
        (lambda: optim.sgd(0.1, 0.9, nesterov=True, dampening=0.5), "optimizer: Nesterov momentum requires a "
         "momentum and zero dampening, got momentum=0.9, dampening=0.5"),
        (lambda: optim.sgd(0.1, dampening=1.5), "optimizer: dampening must be finite and satisfy 0 <= "
         "dampening <= 1, got 1.5"),
        (lambda: optim.sgd(0.1, dampening=-0.0001), "optimizer: dampening must be finite and satisfy 0 <= "
         "dampening <= 1, got -0.0001"),
        (lambda: optim.sgd(0.1, weight_decay=float("inf")), "optimizer: weight decay must be finite and "
         "nonnegative, got inf"),
        (lambda: optim.sgd(0.1, weight_decay=1e39), "optimizer: weight decay must be finite and nonnegative "
         "after conversion to binary32, got 1e+39 (inf in binary32)"),
        (lambda: optim.sgd(0.1, 0.9, nesterov=1), "optimizer: nesterov must be a bool, got 1"),
        (lambda: optim.sgd(0.1, 0.9, nesterov="yes"), "optimizer: nesterov must be a bool, got 'yes'"),
        (lambda: optim.sgd(0.1, dampening=True), "optimizer: dampening must be a real number (int or float), "
         "got True"),
    ],
)
def test_sgd_option_validation(build, message):
    """torch refuses Nesterov without momentum or with dampening ("Nesterov momentum requires a
    momentum and zero dampening") and a negative weight decay; dampening outside [0, 1] and a
    non-bool nesterov are refused here too."""
    with pytest.raises(OptimizerError) as info:
        build()
    assert str(info.value) == message


def test_sgd_nesterov_accepts_numpy_bools_and_full_dampening_freezes_the_momentum():
    """``numpy.bool_`` is stored as ``bool``; with dampening 1 the momentum buffer keeps the first
    gradient times momentum**t (torch: ``buf.mul_(momentum).add_(g, alpha=0)``)."""
    assert optim.sgd(0.1, 0.9, nesterov=np.True_).nesterov is True
    opt = optim.sgd(lr=1.0, momentum=0.5, dampening=1.0).create([np.zeros(1)])
    params = [np.zeros(1)]
    for grad in (4.0, 100.0, 100.0):
        params = opt.step(params, [np.array([grad])])
    assert params[0].tolist() == [-(4.0 + 2.0 + 1.0)]


def test_sgd_weight_decay_by_hand():
    """One step from p = 2 with g = 1, weight decay 0.5, lr 0.1: p - 0.1 * (1 + 0.5 * 2) = 1.8;
    Nesterov at the first step moves by g + momentum * g."""
    opt = optim.sgd(lr=0.1, weight_decay=0.5).create([np.array([2.0])])
    (p,) = opt.step([np.array([2.0])], [np.array([1.0])])
    assert p.tolist() == [2.0 - 0.1 * 2.0]
    opt = optim.sgd(lr=0.1, momentum=0.5, nesterov=True).create([np.array([2.0])])
    (p,) = opt.step([np.array([2.0])], [np.array([1.0])])
    assert p.tolist() == [2.0 - 0.1 * 1.5]


def test_adam_weight_decay_validation_and_describe():
    with pytest.raises(OptimizerError) as info:
        optim.adam(0.1, weight_decay=-0.5)
    assert str(info.value) == "optimizer: weight decay must be finite and nonnegative, got -0.5"
    config = optim.adam(0.1, weight_decay=0.01)
    assert config.describe() == (
        "optim.adam(lr=0.1, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.01, amsgrad=False)"
    )
    assert eval(config.describe(), {"optim": optim}) == config


def test_torchs_betas_and_alpha_spellings():
    """optim.adam(lr=3e-4, betas=(0.9, 0.95)) ports torch's call as it is; rmsprop takes alpha."""
    assert optim.adam(3e-4, betas=(0.9, 0.95)) == optim.adam(3e-4, 0.9, 0.95)
    expected = optim.adamw(3e-4, 0.8, 0.99, weight_decay=0.1)
    assert optim.adamw(3e-4, betas=[0.8, 0.99], weight_decay=0.1) == expected  # type: ignore[arg-type]
    assert optim.rmsprop(0.01, alpha=0.9) == optim.rmsprop(0.01, 0.9)
    theirs = torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=3e-4, betas=(0.9, 0.95))
    assert theirs.param_groups[0]["betas"] == (0.9, 0.95)
    with pytest.raises(OptimizerError, match=r"betas must be a pair \(beta1, beta2\), as torch's: a tuple, "
                       r"list or 1-d array of two numbers, got 0.9"):
        optim.adam(betas=0.9)  # type: ignore[arg-type]
    with pytest.raises(OptimizerError, match="pass betas or beta1/beta2, not both"):
        optim.adam(beta1=0.8, betas=(0.9, 0.95))
    with pytest.raises(OptimizerError, match=r"beta2 must be finite and satisfy 0 <= beta2 < 1, got 1.5"):
        optim.adamw(betas=(0.9, 1.5))
    with pytest.raises(OptimizerError, match="pass alpha or decay, not both"):
        optim.rmsprop(decay=0.5, alpha=0.9)


@pytest.mark.parametrize(("call", "got"), [
    (lambda: optim.adam(1e-3, betas=(0.8, 0.99), beta1=0.9), "betas=(0.8, 0.99), beta1=0.9"),
    (lambda: optim.adam(1e-3, betas=(0.8, 0.99), beta1=0.8), "betas=(0.8, 0.99), beta1=0.8"),
    (lambda: optim.adamw(1e-3, 0.9, 0.999, betas=(0.8, 0.99)), "betas=(0.8, 0.99), beta1=0.9, beta2=0.999"),
    (lambda: optim.adamw(1e-3, beta2=0.999, betas=(0.8, 0.99)), "betas=(0.8, 0.99), beta2=0.999"),
])
def test_betas_with_beta1_or_beta2_is_refused_whatever_the_values(call, got):
    """review220 F3: checked against the defaults, an explicit beta1=0.9 beside betas was dropped
    and an agreeing beta1=0.8 refused; any call passing both spellings is refused now, as
    optim.group refuses it."""
    with pytest.raises(OptimizerError) as info:
        call()
    assert str(info.value) == f"optimizer: pass betas or beta1/beta2, not both (got {got})"


@pytest.mark.parametrize("call", [lambda: optim.rmsprop(1e-3, decay=0.99, alpha=0.5),
                                  lambda: optim.rmsprop(1e-3, 0.99, alpha=0.5),
                                  lambda: optim.rmsprop(1e-3, decay=0.5, alpha=0.5)])
def test_alpha_with_decay_is_refused_whatever_the_values(call):
    with pytest.raises(OptimizerError, match=r"^optimizer: pass alpha or decay, not both \(got alpha=0\.5, "
                                             r"decay=0\.(99|5)\)$"):
        call()
    assert optim.rmsprop(1e-3, alpha=0.5) == optim.rmsprop(1e-3, 0.5)


def test_an_empty_parameter_list_is_refused_as_torch_refuses_it():
    """review196 F5: ``create([])`` gave an optimizer whose steps did nothing (and counted);
    torch's ``optimizer got an empty parameter list``. A Trainer of a model without parameters
    still predicts, and its optimizer says why there is none."""
    with pytest.raises(optim.OptimizerError) as caught:
        optim.adam(0.01).create([])
    assert str(caught.value) == (
        "optimizer: optim.adam(...).create() got an empty parameter list, so nothing would train (torch "
        "refuses it too): pass the model's parameters, model.parameters"
    )
    with pytest.raises(ValueError, match="empty parameter list"):  # the oracle's refusal
        torch.optim.Adam([], lr=0.01)
    trainer = Trainer(nn.dropout(0.5), input_shape=(4,))
    with pytest.raises(TrainerError, match=r"^the model has no parameters to train \(dropout\(0\.5\)\)"):
        trainer.optimizer  # noqa: B018
    assert trainer.predict(np.ones((2, 4), dtype=np.float32)).shape == (2, 4)
