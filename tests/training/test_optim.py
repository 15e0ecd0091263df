"""Optimizer updates against torch.optim in float64, and the original's validation messages."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchlean import optim
from torchlean.optim import OptimizerError


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
    (optim.adam(lr=0.01), lambda ps: torch.optim.Adam(ps, lr=0.01)),
    (optim.adamw(lr=0.01, weight_decay=0.1), lambda ps: torch.optim.AdamW(ps, lr=0.01, weight_decay=0.1)),
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
    """The original's words (anchor-runtime.md §3.1), then ``, got <value>``."""
    config = build()  # domain checks run at create/validate, as the original checks at open
    with pytest.raises(OptimizerError) as info:
        config.validate()
    assert str(info.value) == message
    with pytest.raises(OptimizerError) as info:
        config.create([np.ones(2)])
    assert str(info.value) == message


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
    assert optim.sgd(2).describe() == "optim.sgd(lr=2.0, momentum=0.0)"


def test_describe_reads_back():
    text = optim.adamw(lr=1e-5, weight_decay=0.02).describe()
    assert text == "optim.adamw(lr=1e-05, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.02)"


def test_unknown_optimizer_names_the_accepted_ones():
    with pytest.raises(ValueError, match="unknown optimizer lamb \\(known: sgd \\| adam \\| adamw"):
        optim.by_name("lamb", 0.1)


def test_parameter_count_change_is_refused():
    opt = optim.sgd().create([np.ones(2)])
    with pytest.raises(OptimizerError, match="expected 1 parameters, got 2"):
        opt.step([np.ones(2), np.ones(2)], [np.ones(2), np.ones(2)])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adam_in_place_step_is_bitwise_the_textbook_expression(dtype):
    """The in-place update rounds exactly like the out-of-place expression of Kingma & Ba
    (m = b1 m + (1-b1) g; v = b2 v + (1-b2) g g; p - lr (m / (1-b1^t)) / (sqrt(v / (1-b2^t)) + eps))."""

    def textbook(config, step, start, grad, m, v):
        dt = start.dtype.type
        m[...] = dt(config.beta1) * m + dt(1.0 - config.beta1) * grad
        v[...] = dt(config.beta2) * v + dt(1.0 - config.beta2) * grad * grad
        denom = np.sqrt(v / dt(1.0 - config.beta2**step)) + dt(config.eps)
        return start - dt(config.lr) * (m / dt(1.0 - config.beta1**step)) / denom

    rng = np.random.default_rng(7)
    config = optim.adam(0.01)
    p1 = rng.standard_normal((20, 3)).astype(dtype)
    p2, m1, v1 = p1.copy(), np.zeros_like(p1), np.zeros_like(p1)
    m2, v2 = m1.copy(), v1.copy()
    for step in range(1, 25):
        g = (rng.standard_normal(p1.shape) * 10.0 ** rng.integers(-8, 3)).astype(dtype)
        p1 = textbook(config, step, p1, g, m1, v1)
        p2 = optim._adam_step(config, step, p2, g, m2, v2)
        assert p1.tobytes() == p2.tobytes()
        assert (m1.tobytes(), v1.tobytes()) == (m2.tobytes(), v2.tobytes())


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
