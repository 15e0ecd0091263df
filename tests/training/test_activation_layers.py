"""``nn.silu``, ``nn.softplus``, ``nn.leaky_relu``, ``nn.identity``: against ``torch.nn.SiLU``/
``Softplus``/``LeakyReLU``/``Identity`` (values and gradients elementwise, and training in float64
from the same weights, eager and typed graph)."""

from __future__ import annotations

import mpmath
import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.nn import ShapeError
from torchlean.trainer import RunConfig, Trainer

SPECIAL = [0.0, -0.0, 1e-300, -1e-300, 5e-324, 700.0, -700.0, 1e300, -1e300]


def _grid(dtype: str) -> np.ndarray:
    rng = np.random.default_rng(0)
    values = np.concatenate([rng.standard_normal(300) * 8.0, np.linspace(-40.0, 40.0, 161), SPECIAL])
    with np.errstate(over="ignore"):
        return values.astype(dtype)


def _ours(layer: nn.Layer, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    model = nn.build(layer, input_shape=[x.size], dtype=x.dtype)
    xt = tl.tensor(x[None], requires_grad=True)
    tl.reduce_sum(model.forward(xt)).backward()
    assert xt.grad is not None
    return model.forward(tl.tensor(x[None])).numpy()[0], xt.grad.numpy()[0]


def _torch(module: torch.nn.Module, x: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    xt = torch.tensor(x, requires_grad=True)
    module(xt).sum().backward()
    assert xt.grad is not None
    return module(torch.tensor(x)).numpy(), xt.grad.numpy()


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("slope", [0.01, 0.2, 0.0, -1.5, 3.0])
def test_leaky_relu_values_are_torchs_and_gradients_differ_only_at_zero(dtype, slope):
    x = _grid(dtype)
    out, grad = _ours(nn.leaky_relu(slope), x)
    expected, expected_grad = _torch(torch.nn.LeakyReLU(slope), x)
    nonzero = x != 0
    np.testing.assert_array_equal(out, expected)  # the sign of a zero result aside (0.0 == -0.0)
    np.testing.assert_array_equal(grad[nonzero], expected_grad[nonzero])
    np.testing.assert_array_equal(grad[~nonzero], 0.0)  # torch: slope (documented)
    assert out.dtype == np.dtype(dtype)


def test_leaky_relu_sign_of_zero_results_as_documented():
    """review73 F1: ``-0.0`` gives ``-0.0`` as torch; a negative input whose product with the
    slope rounds to zero gives ``+0.0`` (``0.0 + -0.0``), where torch gives ``-0.0``."""
    x = np.array([-0.0, -1e-45, -1e-44, 0.0], np.float32)
    out, _ = _ours(nn.leaky_relu(0.01), x)
    expected, _ = _torch(torch.nn.LeakyReLU(0.01), x)
    np.testing.assert_array_equal(out, 0.0)
    assert np.signbit(out).tolist() == [True, False, False, False]
    assert np.signbit(expected).tolist() == [True, True, True, False]


def test_leaky_relu_by_hand():
    out, grad = _ours(nn.leaky_relu(0.25), np.array([-8.0, -1.0, 0.5, 4.0, np.inf, -np.inf]))
    np.testing.assert_array_equal(out, [-2.0, -0.25, 0.5, 4.0, np.inf, -np.inf])
    np.testing.assert_array_equal(grad, [0.25, 0.25, 1.0, 1.0, 1.0, 0.25])


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_silu_matches_torch_float64(dtype):
    """Values within a few ulps of torch's float64 SiLU at the same inputs; the gradient
    ``s + x * s * (1 - s)`` (``s = sigmoid(x)``) within a few ulps of its terms (bounded by 1.1,
    since it cancels near its zero at x = -1.278) of mpmath's at 400 digits: torch's own float64
    gradient, whose ``s * (1 - s)`` cancels where ``s`` rounds to 1, is up to 3e-15 off near x = 20,
    more than the sigmoid VJP from x (review166 F1)."""
    x = _grid(dtype)
    out, grad = _ours(nn.silu(), x)
    expected, _ = _torch(torch.nn.SiLU(), x.astype(np.float64))
    with mpmath.workdps(400):
        exact = []
        for value in x.astype(np.float64).tolist():
            t = mpmath.mpf(value)
            sigmoid = 1 / (1 + mpmath.exp(-t))
            exact.append(float(sigmoid + t * sigmoid * (1 - sigmoid)))
    eps = float(np.finfo(dtype).eps)
    np.testing.assert_allclose(out, expected, rtol=4 * eps, atol=1e-300)
    np.testing.assert_allclose(grad, exact, rtol=4 * eps, atol=4 * eps)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_softplus_matches_torch_up_to_its_threshold(dtype):
    """torch returns x itself above its threshold 20 (documented): the exact value there differs
    by log1p(exp(-x)), checked against numpy's float64 log1p."""
    x = _grid(dtype)
    out, grad = _ours(nn.softplus(), x)
    expected, expected_grad = _torch(torch.nn.Softplus(), x)
    below = x <= 20.0
    rtol, atol = (1e-6, 1e-37) if dtype == "float32" else (2e-15, 1e-300)
    np.testing.assert_allclose(out[below], expected[below], rtol=rtol, atol=atol)
    np.testing.assert_allclose(grad[below], expected_grad[below], rtol=rtol, atol=atol)
    above = (x > 20.0) & (x < 700.0)
    exact = x[above].astype(np.float64) + np.log1p(np.exp(-x[above].astype(np.float64)))
    np.testing.assert_allclose(out[above], exact.astype(dtype), rtol=rtol, atol=0)


def test_identity_records_no_op_and_passes_gradients():
    x = np.array([[1.0, -2.0, np.nan]])
    with tl.session() as session:
        model = nn.build(nn.identity(), input_shape=[3], dtype="float64")
        xt = tl.tensor(x, requires_grad=True)
        out = model.forward(xt)
        assert out is xt and session.selected == []
    assert nn.identity().describe() == "identity"


LAYERS = {
    "silu": (nn.silu, torch.nn.SiLU),
    "softplus": (nn.softplus, torch.nn.Softplus),
    "leaky_relu": (lambda: nn.leaky_relu(0.1), lambda: torch.nn.LeakyReLU(0.1)),
    "identity": (nn.identity, torch.nn.Identity),
}


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("name", sorted(LAYERS))
def test_training_matches_torch_float64(name, profile, execution):
    """Three SGD steps of linear, activation, linear: the loss and every parameter after each
    within 1e-12, then predictions."""
    ours, theirs = LAYERS[name]
    config = RunConfig(optimizer=optim.sgd(0.1, 0.5), dtype="float64", profile=profile, execution=execution)
    trainer = Trainer(nn.sequential(nn.linear(3, 6), ours(), nn.linear(6, 2)), config=config, seed=3)
    module = torch.nn.Sequential(torch.nn.Linear(3, 6), theirs(), torch.nn.Linear(6, 2)).double()
    module.load_state_dict({key: torch.tensor(value) for key, value in trainer.model.state().items()})
    sgd = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.5)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x, y = rng.standard_normal((7, 3)) * 2.0, rng.standard_normal((7, 2))
        loss = trainer.step(x, y)
        sgd.zero_grad()
        expected = torch.nn.functional.mse_loss(module(torch.tensor(x)), torch.tensor(y))
        expected.backward()
        sgd.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12, abs=0)
        for key, value in trainer.model.state().items():
            np.testing.assert_allclose(value, module.state_dict()[key].numpy(), rtol=1e-12, atol=1e-14)
    x = rng.standard_normal((4, 3))
    with torch.no_grad():
        np.testing.assert_allclose(
            trainer.predict(x), module(torch.tensor(x)).numpy(), rtol=1e-12, atol=1e-14
        )


def test_descriptions_and_capsules():
    model = nn.build(nn.sequential(nn.linear(2, 3), nn.leaky_relu(0.2), nn.silu(), nn.softplus()), seed=0)
    assert (
        model.describe()
        == "sequential(linear(2, 3), leaky_relu(0.2), silu, softplus): [2] -> [3], 9 parameters"
    )
    with tl.session() as session:
        model.forward(tl.tensor(np.ones((1, 2)), dtype="float32"))
        names = [kernel.capsule.name for kernel in session.selected]
    assert names == [
        "reference.linear",
        "reference.scale",
        "reference.relu",
        "reference.add",
        "reference.sigmoid",
        "reference.mul",
        "reference.softplus",
    ]


@pytest.mark.parametrize("slope", ["0.1", True, None, float("inf"), float("nan"), 1j])
def test_bad_slopes_are_refused(slope):
    with pytest.raises(ShapeError, match="leaky_relu: negative_slope must be"):
        nn.leaky_relu(slope)  # type: ignore[arg-type]


def test_a_slope_the_model_dtype_cannot_hold_is_refused_at_build():
    with pytest.raises(ShapeError, match=r"leaky_relu: negative_slope 3.5e\+38 is beyond the float32 range"):
        nn.build(nn.leaky_relu(3.5e38), input_shape=[2])
    model = nn.build(nn.leaky_relu(3.5e38), input_shape=[2], dtype="float64")
    np.testing.assert_array_equal(model(tl.tensor(np.array([[-1.0, 2.0]]))).numpy(), [[-3.5e38, 2.0]])


def test_a_slope_beyond_the_float_range_is_a_shape_error():
    with pytest.raises(
        ShapeError, match=r"leaky_relu: negative_slope must be finite, got .* \(beyond the float range\)"
    ):
        nn.leaky_relu(2**1100)
