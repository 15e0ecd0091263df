"""``nn.batch_norm1d``/``nn.batch_norm2d``: layers with running statistics (buffers).

Oracles: ``torch.nn.BatchNorm1d``/``BatchNorm2d`` in float64 trained on the same data from the same
weights (torch's own update of the running statistics), and hand computations.
"""

from __future__ import annotations

import math
from fractions import Fraction

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.autograd.session import Session
from torchlean.backend.errors import GuardError
from torchlean.nn import ShapeError, StateError
from torchlean.nn.eager import EagerOps
from torchlean.nn.layers import BatchNorm, Layer, ParamSpec
from torchlean.tensor import Tensor
from torchlean.trainer import RunConfig, Trainer, TrainerError

# (torchlean layer, torch module, per-sample input shape)
CASES = {
    "1d-vector": (
        lambda **kw: nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4, **kw), nn.relu(), nn.linear(4, 2)),
        lambda **kw: torch.nn.Sequential(
            torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4, **kw), torch.nn.ReLU(), torch.nn.Linear(4, 2)
        ),
        (3,),
    ),
    "1d-sequence": (
        lambda **kw: nn.sequential(nn.batch_norm1d(3, **kw), nn.flatten(), nn.linear(15, 2)),
        lambda **kw: torch.nn.Sequential(
            torch.nn.BatchNorm1d(3, **kw), torch.nn.Flatten(), torch.nn.Linear(15, 2)
        ),
        (3, 5),
    ),
    "2d": (
        lambda **kw: nn.sequential(
            nn.conv2d(2, 3, 3, padding=1), nn.batch_norm2d(3, **kw), nn.relu(), nn.flatten(), nn.linear(48, 2)
        ),
        lambda **kw: torch.nn.Sequential(
            torch.nn.Conv2d(2, 3, 3, padding=1),
            torch.nn.BatchNorm2d(3, **kw),
            torch.nn.ReLU(),
            torch.nn.Flatten(),
            torch.nn.Linear(48, 2),
        ),
        (2, 4, 4),
    ),
}


def torch_copy(trainer: Trainer, make_torch, **kw) -> torch.nn.Module:
    """The torch model of ``make_torch`` holding ``trainer``'s current parameters and buffers."""
    module = make_torch(**kw).double()
    state = {name: torch.tensor(value) for name, value in trainer.model.state().items()}
    missing, unexpected = module.load_state_dict(state, strict=False)
    assert unexpected == [] and all(name.endswith("num_batches_tracked") for name in missing)
    return module


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("case", sorted(CASES))
@pytest.mark.parametrize("affine", [True, False])
def test_training_and_evaluation_match_torch_float64(case, profile, affine):
    """Three SGD steps (losses, every parameter and both running statistics after each) and
    evaluation with the running statistics equal torch's within 1e-12."""
    make_layer, make_torch, shape = CASES[case]
    kw = {"momentum": 0.3, "eps": 1e-3, "affine": affine}
    config = RunConfig(optimizer=optim.sgd(lr=0.1), dtype="float64", profile=profile)
    trainer = Trainer(make_layer(**kw), config=config, seed=4, input_shape=shape)
    module = torch_copy(trainer, make_torch, **kw)
    sgd = torch.optim.SGD(module.parameters(), lr=0.1)
    rng = np.random.default_rng(8)
    for step in range(3):
        x = rng.standard_normal((6, *shape)) * (step + 1) + step
        y = rng.standard_normal((6, 2))
        loss = trainer.step(x, y)
        sgd.zero_grad()
        expected = torch.nn.functional.mse_loss(module.train()(torch.tensor(x)), torch.tensor(y))
        expected.backward()
        sgd.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12, abs=0)
        theirs = module.state_dict()
        for name, value in trainer.model.state().items():
            np.testing.assert_allclose(value, theirs[name].numpy(), rtol=1e-12, atol=1e-14, err_msg=name)
    x = rng.standard_normal((5, *shape))
    with torch.no_grad():
        expected_out = module.eval()(torch.tensor(x)).numpy()
    np.testing.assert_allclose(trainer.predict(x), expected_out, rtol=1e-12, atol=1e-14)


def test_float32_training_stays_close_to_torch():
    make_layer, make_torch, shape = CASES["2d"]
    trainer = Trainer(make_layer(), config=RunConfig(optimizer=optim.sgd(lr=0.05)), seed=1, input_shape=shape)
    module = torch_copy(trainer, make_torch)
    sgd = torch.optim.SGD(module.parameters(), lr=0.05)
    rng = np.random.default_rng(3)
    for _ in range(4):
        x, y = rng.standard_normal((8, *shape)), rng.standard_normal((8, 2))
        trainer.step(x, y)
        sgd.zero_grad()
        torch.nn.functional.mse_loss(module.train()(torch.tensor(x)), torch.tensor(y)).backward()
        sgd.step()
    for name, value in trainer.model.state().items():
        assert value.dtype == np.float32
        np.testing.assert_allclose(
            value, module.state_dict()[name].numpy(), rtol=2e-5, atol=2e-6, err_msg=name
        )


def test_running_statistics_by_hand():
    """x = [1, 2, 3, 6] in one channel: batch mean 3, biased variance 14/4 normalises, unbiased
    variance 14/3 enters the running variance; momentum 0.5 from (0, 1)."""
    ops = EagerOps()
    x = np.array([[1.0], [2.0], [3.0], [6.0]])
    with Session("checked_cpu"):
        mean, var = Tensor(np.zeros(1)), Tensor(np.ones(1))
        out = ops.batch_norm(Tensor(x), None, None, mean, var, training=True, eps=1e-5, momentum=0.5)
    np.testing.assert_allclose(out.numpy(), (x - 3.0) / math.sqrt(3.5 + 1e-5), rtol=1e-15)
    (old_mean, new_mean), (old_var, new_var) = ops.buffer_updates
    assert old_mean is mean and old_var is var
    assert new_mean.numpy().tolist() == [1.5]
    assert new_var.numpy()[0] == pytest.approx(0.5 + 0.5 * 14 / 3, rel=1e-15)
    assert mean.numpy().tolist() == [0.0] and var.numpy().tolist() == [1.0]  # the update is not applied


def test_evaluation_uses_the_running_statistics_and_records_no_update():
    ops = EagerOps()
    x = np.array([[1.0, 4.0], [3.0, 8.0]])
    with Session("checked_cpu"):
        out = ops.batch_norm(
            Tensor(x),
            Tensor(np.array([2.0, 1.0])),
            Tensor(np.array([0.5, 0.0])),
            Tensor(np.array([1.0, 4.0])),
            Tensor(np.array([4.0, 16.0])),
            training=False,
            eps=0.0,
            momentum=0.1,
        )
    np.testing.assert_array_equal(out.numpy(), [[0.5, 0.0], [2.5, 1.0]])  # (x - mean) / sqrt(var) * w + b
    assert ops.buffer_updates == []


def test_an_empty_batch_leaves_the_running_statistics_alone():
    """As torch (``BatchNorm1d(4)(torch.empty(0, 4))`` keeps its running statistics)."""
    ops = EagerOps()
    out = _batch_norm_training(ops, np.zeros((0, 4)))
    assert out.shape == (0, 4) and ops.buffer_updates == []


def _batch_norm_training(ops: EagerOps, x: np.ndarray, momentum: float = 0.1) -> Tensor:
    """``ops.batch_norm`` in training on ``x`` without affine parameters, from torch's initial
    running statistics (zeros and ones), under checked_cpu."""
    channels = x.shape[1]
    with Session("checked_cpu"):
        zeros, ones = Tensor(np.zeros(channels, dtype=x.dtype)), Tensor(np.ones(channels, dtype=x.dtype))
        return ops.batch_norm(Tensor(x), None, None, zeros, ones, training=True, eps=1e-5, momentum=momentum)


@pytest.mark.parametrize(("momentum", "expected_mean"), [(0.0, [0.0, 0.0]), (1.0, [2.0, 5.0])])
def test_momentum_edges(momentum, expected_mean):
    """Momentum 0 keeps the running statistics, 1 replaces them by the batch's (exactly)."""
    trainer = Trainer(
        nn.sequential(nn.linear(2, 2), nn.batch_norm1d(2, momentum=momentum)),
        config=RunConfig(optimizer=optim.sgd(lr=0.0), dtype="float64"),
    )
    trainer.model.load_state({**trainer.model.state(), "0.weight": np.eye(2), "0.bias": np.zeros(2)})
    trainer.step(np.array([[1.0, 4.0], [3.0, 6.0]]), np.zeros((2, 2)))
    state = trainer.model.state()
    assert state["1.running_mean"].tolist() == expected_mean
    assert state["1.running_var"].tolist() == ([1.0, 1.0] if momentum == 0.0 else [2.0, 2.0])


def test_buffers_get_no_gradient_and_no_optimizer_update():
    """Under Adam with momentum 0 the running statistics stay exactly at their initial values
    while every trainable parameter moves: no gradient step touches them (an Adam step of any
    nonzero gradient moves a value by about lr)."""
    trainer = Trainer(
        nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4, momentum=0.0)),
        config=RunConfig(optimizer=optim.adam(0.1)),
    )
    before = trainer.model.state()
    rng = np.random.default_rng(0)
    trainer.fit(rng.standard_normal((16, 3)), rng.standard_normal((16, 4)), epochs=2, batch_size=4)
    after = trainer.model.state()
    assert after["1.running_mean"].tolist() == [0.0] * 4 and after["1.running_var"].tolist() == [1.0] * 4
    for name in ("0.weight", "0.bias", "1.weight", "1.bias"):
        assert not np.array_equal(before[name], after[name]), name
    assert [spec.trainable for spec in trainer.model.specs] == [True, True, True, True, False, False]


def test_running_statistics_are_computed_by_accepted_capsules():
    """The update is no hidden numpy arithmetic: its ops are selected under the profile."""
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4)))
    trainer.step(np.ones((4, 3)) * np.arange(4)[:, None], np.zeros((4, 4)))
    ops = {kernel.capsule.op.label for kernel in trainer.selected}
    assert {
        "batch_norm",
        "slice",
        "sub",
        "reduce_mean",
        "mul",
        "reduce_sum",
        "scale",
        "add",
        "reshape",
    } <= ops


def test_typed_graph_trains_and_predicts_batch_norm_as_eagerly():
    """The typed graph lowers training batch norm to batch_norm_train and updates the running
    statistics with the eager update; prediction reads them fresh (more cases:
    tests/training/test_typed_graph_dropout_bn.py)."""
    x = np.random.default_rng(0).standard_normal((5, 3))
    trainers = [
        Trainer(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4)), config=RunConfig(execution=mode))
        for mode in ("eager", "typed-graph")
    ]
    for trainer in trainers:
        trainer.fit(x, np.zeros((5, 4)), batch_size=5)
    states = [trainer.model.state() for trainer in trainers]
    assert all(np.array_equal(states[0][k], states[1][k]) for k in states[0])
    assert not np.array_equal(states[1]["1.running_mean"], np.zeros(4))  # updated
    np.testing.assert_array_equal(trainers[0].predict(x), trainers[1].predict(x))


def test_training_on_one_value_per_channel_is_refused_before_any_update():
    """step refuses a one-sample minibatch up front with a TrainerError (review25 F3: the
    capsule's GuardError came from inside the step); the capsule refuses it too."""
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4)))
    before = trainer.model.state()
    with pytest.raises(TrainerError) as caught:
        trainer.step(np.ones((1, 3)), np.ones((1, 4)))
    assert str(caught.value) == (
        "batch_norm1d(4) trains on each minibatch's statistics and needs at least 2 samples in every "
        "minibatch (as torch); the minibatch holds 1 sample (accepted: at least 2 samples)"
    )
    assert all(np.array_equal(v, before[k]) for k, v in trainer.model.state().items())
    assert trainer.predict(np.ones((1, 3))).shape == (1, 4)  # evaluation needs no batch statistics
    with pytest.raises(GuardError, match="1 value per channel"):
        _batch_norm_training(EagerOps(), np.ones((1, 4)))


def test_a_model_with_buffers_only_has_nothing_to_train():
    trainer = Trainer(nn.batch_norm1d(3, affine=False), input_shape=(3,))
    with pytest.raises(TrainerError, match="the model has no parameters to train"):
        trainer.step(np.ones((2, 3)), np.ones((2, 3)))


@pytest.mark.parametrize("trainable", [True, None])
def test_a_custom_layer_updating_a_non_buffer_is_refused(trainable):
    """A layer passing a trainable parameter (or a computed tensor) as running statistics."""

    class Odd(Layer):
        def output_shape(self, input_shape):
            return input_shape

        def param_specs(self):
            return (ParamSpec("shift", (2,), "zeros"), ParamSpec("var", (2,), "ones", trainable=False))

        def forward(self, ops, params, x, *, training):
            mean = params[0] if trainable else ops.add(params[0], params[0])
            out = ops.batch_norm(x, None, None, mean, params[1], training=training, eps=1e-5, momentum=0.1)
            return ops.add(out, params[0])

    trainer = Trainer(Odd(), input_shape=(2,))
    what = "the trainable parameter shift" if trainable else "a computed tensor"
    with pytest.raises(TrainerError, match=f"a layer updated {what} as a buffer"):
        trainer.step(np.arange(6.0).reshape(3, 2), np.zeros((3, 2)))


def test_state_names_and_describe():
    model = nn.build(CASES["2d"][0](), input_shape=(2, 4, 4))
    assert list(model.state()) == [
        "0.weight",
        "0.bias",
        "1.weight",
        "1.bias",
        "1.running_mean",
        "1.running_var",
        "4.weight",
        "4.bias",
    ]
    assert model.state()["1.running_var"].tolist() == [1.0, 1.0, 1.0]
    assert model.describe().endswith("[2, 4, 4] -> [2], 161 parameters, 6 buffer values")
    assert nn.build(nn.linear(4, 8)).describe() == "linear(4, 8): [4] -> [8], 40 parameters"


def test_load_state_from_torch_names_the_counter_to_drop():
    model = nn.build(nn.batch_norm2d(2), input_shape=(2, 3, 3))
    state = torch.nn.BatchNorm2d(2).state_dict()
    with pytest.raises(
        StateError, match=r"unexpected \['num_batches_tracked'\]; torch's batch norm counters"
    ):
        model.load_state(state)
    state.pop("num_batches_tracked")
    state["running_mean"] = torch.tensor([0.25, -1.0])
    model.load_state(state)
    assert model.state()["running_mean"].tolist() == [0.25, -1.0]


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: nn.batch_norm1d(0), "batch_norm1d: num_features must be an int >= 1, got 0"),
        (lambda: nn.batch_norm2d(2.0), "batch_norm2d: num_features must be an int >= 1, got 2.0"),
        (lambda: nn.batch_norm2d(2, eps=0), "batch_norm2d: eps must be finite and > 0, got 0"),
        (lambda: nn.batch_norm1d(2, eps=math.inf), "batch_norm1d: eps must be finite and > 0, got inf"),
        (lambda: nn.batch_norm1d(2, eps="1"), "batch_norm1d: eps must be a real number, got '1'"),
        (
            lambda: nn.batch_norm1d(2, momentum=1.5),
            "batch_norm1d: momentum must be a real number in [0, 1], got 1.5",
        ),
        (
            lambda: nn.batch_norm1d(2, momentum=math.nan),
            "batch_norm1d: momentum must be a real number in [0, 1], got nan",
        ),
        (
            lambda: nn.batch_norm1d(2, momentum=None),
            "batch_norm1d: momentum must be a real number in [0, 1], got None",
        ),
        (lambda: nn.batch_norm2d(2, affine=1), "batch_norm2d: affine must be a bool, got 1"),
        (lambda: BatchNorm(2, 3), "batch_norm: spatial_ndim must be 1 or 2, got 3"),
        (
            lambda: ParamSpec("w", (2,), "ones", trainable="no"),
            "parameter w: trainable must be a bool, got 'no'",
        ),
    ],
)
def test_argument_errors(make, message):
    with pytest.raises(ShapeError) as caught:
        make()
    assert str(caught.value).startswith(message)


@pytest.mark.parametrize(
    ("layer", "shape", "message"),
    [
        (nn.batch_norm1d(4), (3,), "batch_norm1d(4) expects samples of shape (4,) or (4, L), got shape [3]"),
        (
            nn.batch_norm1d(4),
            (4, 2, 2),
            "batch_norm1d(4) expects samples of shape (4,) or (4, L), got shape [4, 2, 2]",
        ),
        (nn.batch_norm2d(4), (4, 5), "batch_norm2d(4) expects samples of shape (4, H, W), got shape [4, 5]"),
        (
            nn.batch_norm2d(4),
            (3, 5, 5),
            "batch_norm2d(4) expects samples of shape (4, H, W), got shape [3, 5, 5]",
        ),
    ],
)
def test_shape_misfits(layer, shape, message):
    with pytest.raises(ShapeError, match=re_escape(message)):
        nn.build(layer, input_shape=shape)


def re_escape(text: str) -> str:
    import re

    return "^" + re.escape(text) + "$"


@pytest.mark.parametrize(
    ("n", "batch_size", "detail"),
    [
        (
            9,
            4,
            "9 samples in minibatches of 4 leave a last minibatch of 1 (accepted: a batch_size that leaves "
            "no sample over alone, drop_last=True, or drop one sample)",
        ),
        (6, 1, "batch_size=1 (accepted: a batch_size >= 2 that leaves no sample over alone)"),
        (1, 32, "the data hold 1 sample (accepted: at least 2 samples)"),
    ],
)
def test_fit_refuses_a_one_sample_minibatch_before_any_step(n, batch_size, detail):
    """torch refuses training batch norm on one value per channel; fit says so before its first
    step instead of failing mid-epoch after earlier updates."""
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.residual(nn.batch_norm1d(4))))
    before = trainer.model.state()
    rng = np.random.default_rng(1)
    with pytest.raises(TrainerError) as caught:
        trainer.fit(rng.standard_normal((n, 3)), rng.standard_normal((n, 4)), batch_size=batch_size)
    assert str(caught.value).startswith(
        f"batch_norm1d(4) trains on each minibatch's statistics and needs at least 2 samples in every "
        f"minibatch (as torch); {detail}"
    )
    assert all(np.array_equal(v, before[k]) for k, v in trainer.model.state().items())
    assert trainer.epochs_done == 0


@pytest.mark.parametrize(
    ("layer", "shape"),
    [(nn.batch_norm1d(2), (2, 3)), (nn.batch_norm2d(2), (2, 1, 2)), (nn.linear(3, 2), (3,))],
)
def test_fit_trains_one_sample_minibatches_with_several_values_per_channel(layer, shape):
    """(C, L) and (C, H, W) samples with L, H*W >= 2 give batch statistics from one sample (torch
    accepts them), so no refusal."""
    trainer = Trainer(
        nn.sequential(layer, nn.flatten(), nn.linear(math.prod(layer.output_shape(shape)), 1)),
        input_shape=shape,
    )
    rng = np.random.default_rng(2)
    history = trainer.fit(rng.standard_normal((5, *shape)), rng.standard_normal((5, 1)), batch_size=2)
    assert len(history) == 1 and math.isfinite(history[0])


def test_needing_pairs_finds_batch_norm_on_single_values_through_containers():
    bn = nn.batch_norm2d(3)
    assert nn.sequential(nn.conv2d(1, 3, 2), nn.residual(bn)).needs_paired_samples((1, 2, 2)) is bn
    assert nn.sequential(nn.conv2d(1, 3, 2), bn).needs_paired_samples((1, 3, 2)) is None
    assert nn.batch_norm1d(4).needs_paired_samples((4, 1)) is not None
    assert nn.sequential(nn.linear(2, 2), nn.relu()).needs_paired_samples((2,)) is None


def _running_after_one_step(x: np.ndarray, momentum: float = 1.0) -> tuple[np.ndarray, np.ndarray]:
    """The running statistics after one training step from torch's initial (0, 1)."""
    ops = EagerOps()
    _batch_norm_training(ops, x, momentum)
    (_, mean), (_, var) = ops.buffer_updates
    return mean.numpy(), var.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("value", [1e7 + 0.3, -3.3e10, 1e20, 2.5e-40])
def test_a_channel_of_equal_values_gets_exactly_its_value_and_variance_zero(dtype, value):
    """A constant channel's batch variance is 0, so its running variance is exactly the kept
    share of the old one; a plain left-fold mean of equal float32 values 1e7 is off by a rounding,
    which made it 1 % off (review25 F1; torch float64 is off too: running variance 7.05e6 for these
    21 values of -0.7 * 1e20)."""
    x = np.full((7, 2, 3), value, dtype=dtype)
    x[:, 1] = dtype(-0.7) * x[:, 1]
    mean, var = _running_after_one_step(x)
    assert mean.tolist() == [float(dtype(value)), float(dtype(-0.7) * dtype(value))]
    assert var.tolist() == [0.0, 0.0]
    mean, var = _running_after_one_step(x, momentum=0.1)
    assert var.tolist() == [float(dtype(0.9))] * 2
    assert mean.tolist() == [float(dtype(0.1) * m) for m in x[0, :, 0]]


@pytest.mark.parametrize("offset", [0.0, 1e3, 1e5])
def test_float32_batch_statistics_stay_accurate_far_from_zero(offset):
    """Mean and unbiased variance of float32 data with a large offset and unit spread, against
    the same values in float64 (numpy's two-pass ``var(ddof=1)``): the mean within 1e-6 of the
    mean magnitude, the variance within 3e-6 relative (measured: 3e-7 and 7e-7)."""
    rng = np.random.default_rng(11)
    for _ in range(5):
        x = (rng.standard_normal((64, 3)) + offset).astype(np.float32)
        mean, var = _running_after_one_step(x)
        exact = x.astype(np.float64)
        np.testing.assert_allclose(var, exact.var(axis=0, ddof=1), rtol=3e-6)
        assert np.all(np.abs(mean - exact.mean(axis=0)) <= 1e-6 * np.abs(exact).mean(axis=0))


@pytest.mark.parametrize(
    ("layer", "dtype", "message"),
    [
        (
            nn.batch_norm1d(3, eps=1e-50),
            "float32",
            "batch_norm1d(3): eps=1e-50 rounds to 0 in float32, where the kernels add it (accepted: a "
            "positive eps that float32 holds as a finite nonzero number; or build the model in float64)",
        ),
        (
            nn.sequential(nn.linear(3, 3), nn.residual(nn.batch_norm1d(3, eps=1e39))),
            "float32",
            "batch_norm1d(3): eps=1e+39 is not finite in float32, where the kernels add it",
        ),
        (
            nn.layer_norm(3, eps=1e39),
            "float32",
            "layer_norm([3]): eps=1e+39 is not finite in float32, where the kernels add it (accepted: an "
            "eps that float32 holds as a finite number; or build the model in float64)",
        ),
    ],
)
def test_an_eps_the_model_dtype_cannot_hold_is_refused_when_built(layer, dtype, message):
    """Before, it built and the first training step raised GuardError (review25 F2)."""
    for make in (
        lambda: nn.build(layer, input_shape=(3,), dtype=dtype),
        lambda: Trainer(layer, input_shape=(3,), config=RunConfig(dtype=dtype)),
    ):
        with pytest.raises(ShapeError) as caught:
            make()
        assert str(caught.value).startswith(message)
    assert nn.build(layer, input_shape=(3,), dtype="float64").dtype == np.float64


def test_layer_norm_keeps_a_tiny_eps_and_batch_norm_a_subnormal_one():
    """layer_norm accepts eps 0 (as torch), so one rounding to 0 is fine; batch norm needs it
    nonzero in the dtype, which a float32 subnormal 1e-44 is."""
    for eps in (1e-44, 1e-50):
        assert nn.build(nn.layer_norm(3, eps=eps), input_shape=(3,)).dtype == np.float32
    trainer = Trainer(nn.sequential(nn.linear(3, 3), nn.batch_norm1d(3, eps=1e-44)))
    assert math.isfinite(trainer.step(np.eye(3), np.eye(3)))


def test_a_buffer_updated_three_times_in_one_step_chains_as_torch():
    """A custom layer normalising three values with the same statistics: torch updates a
    BatchNorm1d called three times, each time from the previous update's result."""

    class TwoCalls(Layer):
        def output_shape(self, input_shape):
            return input_shape

        def param_specs(self):
            return (
                ParamSpec("weight", (2,), "ones"),
                ParamSpec("bias", (2,), "zeros"),
                ParamSpec("running_mean", (2,), "zeros", trainable=False),
                ParamSpec("running_var", (2,), "ones", trainable=False),
            )

        def forward(self, ops, params, x, *, training):
            first = ops.batch_norm(x, *params, training=training, eps=1e-5, momentum=0.3)
            second = ops.batch_norm(ops.mul(first, x), *params, training=training, eps=1e-5, momentum=0.3)
            return ops.batch_norm(ops.add(second, x), *params, training=training, eps=1e-5, momentum=0.3)

    trainer = Trainer(
        TwoCalls(), input_shape=(2,), config=RunConfig(optimizer=optim.sgd(0.0), dtype="float64")
    )
    x = np.array([[1.0, 2.0], [3.0, -1.0], [0.5, 4.0]])
    trainer.step(x, np.zeros((3, 2)))
    module = torch.nn.BatchNorm1d(2, momentum=0.3).double()
    t = torch.tensor(x)
    module(module(module(t) * t) + t)
    state = trainer.model.state()
    np.testing.assert_allclose(state["running_mean"], module.running_mean.numpy(), rtol=1e-14)
    np.testing.assert_allclose(state["running_var"], module.running_var.numpy(), rtol=1e-14)


def test_torch_counters_inside_a_model_get_the_hint():
    model = nn.build(nn.sequential(nn.linear(3, 2), nn.batch_norm1d(2)), input_shape=(3,))
    state = {**model.state(), "1.num_batches_tracked": torch.tensor(4)}
    with pytest.raises(
        StateError, match=r"torch's batch norm counters \(1\.num_batches_tracked\) are not kept"
    ):
        model.load_state(state)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_a_buffer_in_a_differentiable_path_stays_fixed(execution):
    """A frozen projection (trainable=False) used by ops.linear: the loss depends on it, yet no
    optimizer update moves it, in eager and typed-graph training (torch: a buffer, or a
    parameter with requires_grad=False)."""

    class Frozen(Layer):
        def output_shape(self, input_shape):
            return (2,)

        def param_specs(self):
            return (
                ParamSpec("projection", (2, 3), "uniform", 1.0, trainable=False),
                ParamSpec("head", (2, 2), "uniform", 0.5),
            )

        def forward(self, ops, params, x, *, training):
            return ops.linear(ops.linear(x, params[0], None), params[1], None)

    trainer = Trainer(
        Frozen(), input_shape=(3,), config=RunConfig(optimizer=optim.adam(0.1), execution=execution)
    )
    before = trainer.model.state()
    rng = np.random.default_rng(3)
    trainer.fit(rng.standard_normal((8, 3)), rng.standard_normal((8, 2)), epochs=3, batch_size=4)
    after = trainer.model.state()
    assert np.array_equal(after["projection"], before["projection"])
    assert not np.array_equal(after["head"], before["head"])


def test_a_container_of_your_own_forwards_the_checks():
    """The up-front refusals ask the layer (Layer.needs_paired_samples, Layer.dtype_fault): a
    container of your own that forwards them gets them (review25 diff F2)."""

    class Twice(Layer):
        def __init__(self, inner):
            self.inner = inner

        def output_shape(self, input_shape):
            return self.inner.output_shape(input_shape)

        def param_specs(self):
            return self.inner.param_specs()

        def forward(self, ops, params, x, *, training):
            return self.inner.forward(ops, params, x, training=training)

        def needs_paired_samples(self, input_shape):
            return self.inner.needs_paired_samples(input_shape)

        def dtype_fault(self, dtype):
            return self.inner.dtype_fault(dtype)

    trainer = Trainer(Twice(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4))), input_shape=(3,))
    with pytest.raises(TrainerError, match="batch_norm1d\\(4\\) trains on each minibatch's statistics"):
        trainer.fit(np.ones((9, 3)), np.ones((9, 4)), batch_size=4)
    assert trainer.epochs_done == 0
    with pytest.raises(ShapeError, match="eps=1e-50 rounds to 0 in float32"):
        Trainer(Twice(nn.batch_norm1d(3, eps=1e-50)), input_shape=(3,))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_an_outlying_first_value_costs_the_mean_no_precision(dtype):
    """The first value shifts the data (exactness for equal values); far from the rest it made
    ``mean(x - k)`` round at its scale, hundreds of ulps of the spread (review25 user F1). The
    correction pass, grouped ``(k + mean(d)) + mean(c)``, keeps the mean within 2 units of
    ``eps * spread + ulp(mean)`` of the exact mean (Fractions) on non-centred data with an outlying
    first value (grouped ``k + (mean(d) + mean(c))`` it reaches about 8: review25 conv1d F3)."""
    rng = np.random.default_rng(11)
    eps = np.finfo(dtype).eps
    for _ in range(60):
        n = int(rng.choice([17, 64, 513]))
        x = rng.standard_normal(n) * 10.0 ** rng.integers(-5, 5)
        x[0] += 10.0 ** rng.integers(0, 9) * np.std(x) * rng.choice([-1, 1])
        x = x.astype(dtype).reshape(n, 1)
        values = [Fraction(float(v)) for v in x.ravel()]
        exact_mean = sum(values) / n
        exact_var = sum((v - exact_mean) ** 2 for v in values) / (n - 1)
        mean, var = _running_after_one_step(x)
        unit = math.sqrt(exact_var) * eps + float(np.spacing(dtype(abs(float(exact_mean)))))
        assert float(abs(Fraction(float(mean[0])) - exact_mean)) <= 2 * unit
        assert float(abs(Fraction(float(var[0])) - exact_var) / exact_var) <= (n + 4) * eps  # fold of n


def test_drop_last_trains_what_fit_refused_and_matches_torch():
    """9 samples in minibatches of 4 left one alone; drop_last leaves it out, as torch's
    DataLoader(drop_last=True), and the epoch loss is the mean over the 8 samples trained on."""
    make_layer, make_torch, shape = CASES["1d-vector"]
    config = RunConfig(optimizer=optim.sgd(lr=0.1), dtype="float64")
    trainer = Trainer(make_layer(), config=config, seed=4, input_shape=shape)
    module = torch_copy(trainer, make_torch)
    sgd = torch.optim.SGD(module.parameters(), lr=0.1)
    rng = np.random.default_rng(8)
    x, y = rng.standard_normal((9, 3)), rng.standard_normal((9, 2))
    (loss,) = trainer.fit(x, y, batch_size=4, shuffle=False, drop_last=True)
    losses = []
    for start in (0, 4):
        sgd.zero_grad()
        batch = torch.nn.functional.mse_loss(
            module.train()(torch.tensor(x[start : start + 4])), torch.tensor(y[start : start + 4])
        )
        batch.backward()
        sgd.step()
        losses.append(batch.item())
    assert loss == pytest.approx(sum(losses) / 2, rel=1e-12)
    for name, value in trainer.model.state().items():
        np.testing.assert_allclose(
            value, module.state_dict()[name].numpy(), rtol=1e-12, atol=1e-14, err_msg=name
        )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"batch_size": 16, "drop_last": True},
            "drop_last=True with batch_size=16 leaves no minibatch of the 9 "
            "samples (accepted: a batch_size of at most 9, or drop_last=False)",
        ),
        ({"batch_size": 1, "drop_last": True}, "batch_norm1d(4) trains on each minibatch's statistics"),
        ({"drop_last": 1}, "drop_last must be a bool, got 1"),
    ],
)
def test_drop_last_refusals(kwargs, message):
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4)))
    with pytest.raises(TrainerError) as caught:
        trainer.fit(np.ones((9, 3)), np.ones((9, 4)), **kwargs)
    assert str(caught.value).startswith(message)
    assert trainer.epochs_done == 0


def test_batches_drop_last_sizes():
    trainer = Trainer(nn.linear(2, 1))
    x, y = np.zeros((10, 2)), np.zeros((10, 1))
    assert [len(b) for b, _ in trainer.batches(x, y, 4, shuffle=True, epoch=0, drop_last=True)] == [4, 4]
    assert [len(b) for b, _ in trainer.batches(x, y, 5, shuffle=False, epoch=0, drop_last=True)] == [5, 5]
    assert [len(b) for b, _ in trainer.batches(x, y, 4, shuffle=False, epoch=0)] == [4, 4, 2]
    with pytest.raises(TrainerError, match="drop_last must be a bool, got 'yes'"):
        list(trainer.batches(x, y, 4, shuffle=False, epoch=0, drop_last="yes"))


@pytest.mark.parametrize(("n", "batch_size", "steps"), [(4, 4, 1), (9, 4, 2)])
def test_drop_last_at_its_boundaries_and_as_a_numpy_bool(n, batch_size, steps):
    """batch_size == n trains one minibatch (as torch); numpy.bool_ True drops (review25 droplast
    M7, M12)."""
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4)))
    seen = []
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((n, 3)), rng.standard_normal((n, 4))
    trainer.fit(x, y, batch_size=batch_size, drop_last=np.True_, on_batch=lambda e, loss: seen.append(e))
    assert seen == [0] * steps


def test_one_sample_with_drop_last_names_the_sample_count():
    """The batch norm refusal comes first for one sample: no batch_size or drop_last helps."""
    trainer = Trainer(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4)))
    with pytest.raises(TrainerError, match=r"the data hold 1 sample \(accepted: at least 2 samples\)$"):
        trainer.fit(np.ones((1, 3)), np.ones((1, 4)), batch_size=2, drop_last=True)
    plain = Trainer(nn.linear(3, 4))
    with pytest.raises(
        TrainerError, match=r"leaves no minibatch of the 1 sample \(accepted: a batch_size of at most 1"
    ):
        plain.fit(np.ones((1, 3)), np.ones((1, 4)), batch_size=2, drop_last=True)


def test_a_torch_state_dict_loads_with_strict_false():
    """torch's ``load_state_dict(strict=False)``: a torch BatchNorm model's state_dict (tensors,
    with its num_batches_tracked counter) loads as it is; the counter is reported as unexpected,
    and the model then computes torch's eval outputs in float64."""
    layers = (torch.nn.Linear(3, 4), torch.nn.BatchNorm1d(4), torch.nn.Linear(4, 2))
    module = torch.nn.Sequential(*layers).double()
    module.train()
    module(torch.randn(8, 3, dtype=torch.float64))  # move the running statistics off their start
    module.eval()
    model = nn.build(nn.sequential(nn.linear(3, 4), nn.batch_norm1d(4), nn.linear(4, 2)), dtype="float64")
    result = model.load_state(module.state_dict(), strict=False)
    assert result == ([], ["1.num_batches_tracked"])
    assert result.missing_keys == [] and result.unexpected_keys == ["1.num_batches_tracked"]
    x = np.random.default_rng(0).standard_normal((5, 3))
    np.testing.assert_allclose(
        model(tl.tensor(x)).numpy(), module(torch.tensor(x)).detach().numpy(), rtol=1e-12, atol=1e-14
    )


def test_strict_false_keeps_the_missing_parameters():
    model = nn.build(nn.sequential(nn.linear(3, 2), nn.batch_norm1d(2)), input_shape=(3,), seed=1)
    before = model.state()
    result = model.load_state({"0.weight": np.ones((2, 3)), "extra": 1.0}, strict=False)
    assert result.missing_keys == ["0.bias", "1.weight", "1.bias", "1.running_mean", "1.running_var"]
    assert result.unexpected_keys == ["extra"]
    after = model.state()
    np.testing.assert_array_equal(after["0.weight"], np.ones((2, 3)))
    for name in result.missing_keys:
        np.testing.assert_array_equal(after[name], before[name])
    assert model.load_state(after) == ([], [])  # strict: nothing left out
    with pytest.raises(StateError, match="strict must be a bool, got 'no'"):
        model.load_state(after, strict="no")
    with pytest.raises(StateError, match=r"state entry 0\.weight has shape \[3, 2\], expected \[2, 3\]"):
        model.load_state({"0.weight": np.ones((3, 2))}, strict=False)  # shapes are still checked


def test_a_bfloat16_torch_state_dict_loads():
    """review27_user F2: numpy has no bfloat16, so a bf16 state_dict failed with numpy's TypeError;
    its values are widened to float64 exactly, then cast to the model dtype."""
    module = torch.nn.Linear(3, 2).to(torch.bfloat16)
    model = nn.build(nn.linear(3, 2), dtype="float64")
    model.load_state(module.state_dict())
    np.testing.assert_array_equal(model.state()["weight"], module.weight.double().detach().numpy())
