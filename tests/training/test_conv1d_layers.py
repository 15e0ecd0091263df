"""``nn.conv1d``, ``nn.max_pool1d``, ``nn.avg_pool1d``: against ``torch.nn.Conv1d``/``MaxPool1d``/
``AvgPool1d`` in float64 trained on the same data from the same weights."""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchlean import nn, optim
from torchlean.nn import ShapeError
from torchlean.trainer import RunConfig, Trainer

MODELS = {
    "grouped-strided": (
        lambda: nn.sequential(
            nn.conv1d(2, 4, 3, stride=2, padding=1, groups=2),
            nn.relu(),
            nn.max_pool1d(2, padding=1),
            nn.avg_pool1d(2, stride=1),
            nn.flatten(),
            nn.linear(12, 2),
        ),
        lambda: torch.nn.Sequential(
            torch.nn.Conv1d(2, 4, 3, stride=2, padding=1, groups=2),
            torch.nn.ReLU(),
            torch.nn.MaxPool1d(2, padding=1),
            torch.nn.AvgPool1d(2, stride=1),
            torch.nn.Flatten(),
            torch.nn.Linear(12, 2),
        ),
    ),
    "dilated-no-bias": (
        lambda: nn.sequential(
            nn.conv1d(2, 3, (2,), dilation=3, bias=False),
            nn.tanh(),
            nn.avg_pool1d([3], padding=1),
            nn.flatten(),
            nn.linear(9, 2),
        ),
        lambda: torch.nn.Sequential(
            torch.nn.Conv1d(2, 3, 2, dilation=3, bias=False),
            torch.nn.Tanh(),
            torch.nn.AvgPool1d(3, padding=1),
            torch.nn.Flatten(),
            torch.nn.Linear(9, 2),
        ),
    ),
}


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("model", sorted(MODELS))
def test_training_matches_torch_float64(model, profile, execution):
    """Three SGD steps on (2, 11) samples: the loss and every parameter after each within 1e-12."""
    make_layer, make_torch = MODELS[model]
    config = RunConfig(optimizer=optim.sgd(0.1, 0.5), dtype="float64", profile=profile, execution=execution)
    trainer = Trainer(make_layer(), config=config, seed=2, input_shape=(2, 11))
    module = make_torch().double()
    module.load_state_dict({name: torch.tensor(value) for name, value in trainer.model.state().items()})
    sgd = torch.optim.SGD(module.parameters(), lr=0.1, momentum=0.5)
    rng = np.random.default_rng(6)
    for _ in range(3):
        x, y = rng.standard_normal((5, 2, 11)), rng.standard_normal((5, 2))
        loss = trainer.step(x, y)
        sgd.zero_grad()
        expected = torch.nn.functional.mse_loss(module(torch.tensor(x)), torch.tensor(y))
        expected.backward()
        sgd.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12, abs=0)
        for name, value in trainer.model.state().items():
            np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14)
    x = rng.standard_normal((4, 2, 11))
    with torch.no_grad():
        np.testing.assert_allclose(
            trainer.predict(x), module(torch.tensor(x)).numpy(), rtol=1e-12, atol=1e-14
        )


def test_conv1d_with_batch_norm1d_on_sequences_matches_torch():
    """The usual 1-d block: conv1d, batch_norm1d over (C, L), relu, max_pool1d (eager)."""
    layer = nn.sequential(
        nn.conv1d(3, 4, 3, padding=1),
        nn.batch_norm1d(4),
        nn.relu(),
        nn.max_pool1d(2),
        nn.flatten(),
        nn.linear(16, 1),
    )
    trainer = Trainer(layer, config=RunConfig(optimizer=optim.sgd(0.05), dtype="float64"), input_shape=(3, 8))
    module = torch.nn.Sequential(
        torch.nn.Conv1d(3, 4, 3, padding=1),
        torch.nn.BatchNorm1d(4),
        torch.nn.ReLU(),
        torch.nn.MaxPool1d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(16, 1),
    ).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()}, strict=False)
    sgd = torch.optim.SGD(module.parameters(), lr=0.05)
    rng = np.random.default_rng(1)
    for _ in range(2):
        x, y = rng.standard_normal((6, 3, 8)), rng.standard_normal((6, 1))
        trainer.step(x, y)
        sgd.zero_grad()
        torch.nn.functional.mse_loss(module.train()(torch.tensor(x)), torch.tensor(y)).backward()
        sgd.step()
    for name, value in trainer.model.state().items():
        np.testing.assert_allclose(value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14)


def test_conv1d_initialisation_bound_and_shapes():
    """torch's default bound 1/sqrt(in/groups * k) for weight and bias."""
    weight, bias = nn.conv1d(4, 6, 5, groups=2).param_specs()
    assert weight.shape == (6, 2, 5) and bias.shape == (6,)
    assert weight.bound == bias.bound == pytest.approx(1 / np.sqrt(2 * 5), rel=1e-15)
    model = nn.build(nn.sequential(nn.conv1d(4, 6, 5, groups=2), nn.max_pool1d(2)), input_shape=(4, 20))
    assert model.output_shape == (6, 8)
    assert (
        model.describe()
        == "sequential(conv1d(4, 6, [5], groups=2), max_pool1d([2])): [4, 20] -> [6, 8], 66 parameters"
    )  # review72 F4: the groups setting is shown


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (
            lambda: nn.conv1d(3, 4, (3, 3)),
            "conv1d: kernel_size must be an int >= 1 or a tuple of one of them, got (3, 3)",
        ),
        (
            lambda: nn.conv1d(3, 4, 3, stride=0),
            "conv1d: stride must be an int >= 1 or a tuple of one of them, got 0",
        ),
        (
            lambda: nn.conv1d(3, 4, 3, padding=-1),
            "conv1d: padding must be an int >= 0 or a tuple of one of them, got -1",
        ),
        (
            lambda: nn.conv1d(3, 4, 3, groups=2),
            "conv1d: groups=2 must divide in_channels=3 and out_channels=4",
        ),
        (
            lambda: nn.conv1d(3, 4, True),
            "conv1d: kernel_size must be an int >= 1 or a tuple of one of them, got True",
        ),
        (lambda: nn.conv1d(0, 4, 3), "conv1d: in_channels must be an int >= 1, got 0"),
        (lambda: nn.conv1d(3, 4, 3, bias=1), "conv1d: bias must be a bool, got 1"),
        (
            lambda: nn.max_pool1d([2, 2]),
            "max_pool1d: kernel_size must be an int >= 1 or a tuple of one of them, got [2, 2]",
        ),
        (
            lambda: nn.avg_pool1d(2, stride=2.0),
            "avg_pool1d: stride must be an int >= 1 or a tuple of one of them, got 2.0",
        ),
    ],
)
def test_argument_errors(make, message):
    with pytest.raises(ShapeError) as caught:
        make()
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("layer", "shape", "message"),
    [
        (nn.conv1d(3, 4, 3), (3, 8, 8), "conv1d expects (C=3, L) samples, got shape [3, 8, 8]"),
        (nn.conv1d(3, 4, 3), (2, 8), "conv1d expects (C=3, L) samples, got shape [2, 8]"),
        (
            nn.conv1d(3, 4, 5, dilation=2),
            (3, 8),
            "conv1d kernel [5] (dilation [2]) does not fit input [3, 8] with padding [0]",
        ),
        (nn.max_pool1d(2), (3,), "max_pool1d expects (C, L) samples, got shape [3]"),
        (nn.avg_pool1d(4, padding=3), (3, 8), "avg_pool1d: padding [3] must be at most half of kernel [4]"),
        (nn.max_pool1d(9), (3, 8), "max_pool1d kernel [9] does not fit [3, 8]"),
    ],
)
def test_shape_misfits(layer, shape, message):
    with pytest.raises(ShapeError) as caught:
        nn.build(layer, input_shape=shape)
    assert str(caught.value) == message


def test_window_arguments_of_the_wrong_length_are_refused_whatever_they_hold():
    """An extra item that is not an int must not be dropped before the length is counted."""
    with pytest.raises(ShapeError, match=r"^conv2d: kernel_size must be an int >= 1 or a pair of them"):
        nn.conv2d(1, 2, (3, 3, "x"))
    with pytest.raises(ShapeError, match=r"^conv1d: stride must be an int >= 1 or a tuple of one of them"):
        nn.conv1d(1, 2, 3, stride=(1, None))


def test_records_built_directly_take_one_default_per_spatial_axis():
    from torchlean.nn.layers import AvgPool1d, AvgPool2d, Conv1d, Conv2d, MaxPool1d, MaxPool2d

    assert MaxPool2d((2, 2), (2, 2)).padding == AvgPool2d((2, 2), (2, 2)).padding == (0, 0)
    assert MaxPool1d((2,), (2,)).padding == AvgPool1d((2,), (2,)).padding == (0,)
    conv2 = Conv2d(1, 2, (3, 3))
    assert (conv2.stride, conv2.padding, conv2.dilation) == ((1, 1), (0, 0), (1, 1))
    conv1 = Conv1d(1, 2, 3)
    assert (conv1.kernel_size, conv1.stride, conv1.padding, conv1.dilation) == ((3,), (1,), (0,), (1,))


@pytest.mark.parametrize(("layer", "text"), [
    (nn.conv2d(4, 8, 3), "conv2d(4, 8, [3, 3])"),
    (nn.conv2d(4, 8, 3, stride=2, dilation=(1, 2), groups=2, bias=False),
     "conv2d(4, 8, [3, 3], stride=[2, 2], dilation=[1, 2], groups=2, bias=False)"),
    (nn.conv1d(2, 2, 3, padding=1), "conv1d(2, 2, [3], padding=[1])"),
    (nn.max_pool2d(2), "max_pool2d([2, 2])"),
    (nn.max_pool2d(2, stride=2), "max_pool2d([2, 2])"),
    (nn.max_pool2d(3, stride=1, padding=1), "max_pool2d([3, 3], stride=[1, 1], padding=[1, 1])"),
    (nn.avg_pool1d(4, stride=2), "avg_pool1d([4], stride=[2])"),
    (nn.transformer_block(8, 2), "transformer_block(8, heads=2, mlp=32)"),
    (nn.transformer_block(8, 2, causal=True), "transformer_block(8, heads=2, mlp=32, causal=True)"),
    (nn.batch_norm1d(4), "batch_norm1d(4)"),
    (nn.batch_norm2d(4, eps=1e-3, momentum=0.3, affine=False),
     "batch_norm2d(4, eps=0.001, momentum=0.3, affine=False)"),
    (nn.layer_norm(4), "layer_norm([4])"),
    (nn.layer_norm((2, 3), eps=1e-6), "layer_norm([2, 3], eps=1e-06)"),
])
def test_describe_shows_the_settings_that_are_not_torchs_defaults(layer, text):
    """review72 F4, review73 F10: two models differing in a stride, a padding, groups or a causal
    mask no longer read alike; torch's defaults are left out, as torch's own reprs leave them."""
    assert layer.describe() == text
