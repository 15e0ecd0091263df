"""``label_smoothing`` of ``tl.cross_entropy`` and ``Trainer``: torch's ``cross_entropy(...,
label_smoothing=s)``.

Oracle: torch in float64 (and float32) on the same logits and targets, and training loops from
the same weights.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.tensor import TensorError, TensorTypeError
from torchlean.trainer import RunConfig, Trainer, TrainerError

CASES = [((6, 4), 1), ((3, 4, 5), 1), ((4,), 0)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("smoothing", [0.0, 0.1, 0.5, 1.0])
@pytest.mark.parametrize(("shape", "axis"), CASES)
def test_indices_and_probabilities_match_torch(shape, axis, smoothing, dtype):
    """Loss and logit gradients within 1e-12 (float64) or a few ulps (float32) of torch's."""
    rng = np.random.default_rng(len(shape) + int(10 * smoothing))
    z = rng.standard_normal(shape).astype(dtype)
    labels = rng.integers(0, shape[axis], size=shape[:axis] + shape[axis + 1 :])
    probs = rng.random(shape).astype(dtype)
    tol = 1e-12 if dtype == "float64" else 4e-7
    for target, theirs in (
        (labels, torch.tensor(labels)),
        (probs, torch.tensor(probs)),
        (tl.tensor(probs), torch.tensor(probs)),
    ):
        ours_z = tl.tensor(z, requires_grad=True)
        loss = tl.cross_entropy(ours_z, target, label_smoothing=smoothing)
        loss.backward()
        torch_z = torch.tensor(z, requires_grad=True)
        expected = torch.nn.functional.cross_entropy(torch_z, theirs, label_smoothing=smoothing)
        expected.backward()
        assert float(loss.numpy()) == pytest.approx(expected.item(), rel=tol, abs=tol)
        assert ours_z.grad is not None and torch_z.grad is not None
        np.testing.assert_allclose(ours_z.grad.numpy(), torch_z.grad.numpy(), rtol=tol, atol=tol)


def test_by_hand():
    """Two classes, logits (0, 0): log p = -log 2 for both; with s = 0.5 the loss is
    0.5 * log 2 + (0.5 / 2) * 2 log 2 = log 2 whatever the label."""
    loss = tl.cross_entropy(tl.tensor(np.zeros((1, 2))), [1], label_smoothing=0.5)
    assert float(loss.numpy()) == pytest.approx(np.log(2.0), rel=1e-15)


@pytest.mark.parametrize(
    ("value", "error", "message"),
    [
        (-0.1, TensorError, r"label_smoothing must be in \[0, 1\] \(torch's documented range\), got -0.1"),
        (1.5, TensorError, r"label_smoothing must be in \[0, 1\]"),
        (float("nan"), TensorError, r"label_smoothing must be in \[0, 1\]"),
        (True, TensorTypeError, "label_smoothing must be a real number"),
        ("0.1", TensorTypeError, "label_smoothing must be a real number"),
        (10**400, TensorError, r"label_smoothing must be in \[0, 1\] .* got an integer of about 401 digits"),
    ],
)
def test_bad_smoothing_is_refused(value, error, message):
    with pytest.raises(error, match=message):
        tl.cross_entropy(tl.tensor(np.zeros((1, 2))), [0], label_smoothing=value)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize(("shape", "labels_shape"), [((3,), (7,)), ((2, 3), (7, 2))])
def test_trainer_matches_torch_float64(shape, labels_shape, execution):
    """Three SGD steps with label_smoothing 0.2: loss and every parameter within 1e-12 of torch."""
    config = RunConfig(optimizer=optim.sgd(0.3), dtype="float64", execution=execution)
    input_shape = (*shape[:-1], 4)
    trainer = Trainer(
        nn.linear(4, 3),
        objective="cross-entropy",
        config=config,
        seed=2,
        input_shape=input_shape,
        label_smoothing=0.2,
    )
    module = torch.nn.Linear(4, 3).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()})
    sgd = torch.optim.SGD(module.parameters(), lr=0.3)
    rng = np.random.default_rng(1)
    for _ in range(3):
        x, labels = rng.standard_normal((7, *input_shape)), rng.integers(0, 3, size=labels_shape)
        loss = trainer.step(x, labels)
        sgd.zero_grad()
        logits = module(torch.tensor(x))
        expected = torch.nn.functional.cross_entropy(
            logits.reshape(-1, 3), torch.tensor(labels).reshape(-1), label_smoothing=0.2
        )
        expected.backward()
        sgd.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12)
        for key, value in trainer.model.state().items():
            np.testing.assert_allclose(value, module.state_dict()[key].numpy(), rtol=1e-12, atol=1e-14)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        (
            {"objective": "cross-entropy", "label_smoothing": 1.5},
            r"label_smoothing must be a real number in \[0, 1\] \(torch's documented range\), got 1.5",
        ),
        ({"objective": "cross-entropy", "label_smoothing": "0.1"}, r"got '0.1'"),
        (
            {"objective": "mse", "label_smoothing": 0.1},
            "label_smoothing applies to objective cross-entropy, got mse",
        ),
    ],
)
def test_trainer_refuses_bad_smoothing(kwargs, message):
    with pytest.raises(TrainerError, match=message):
        Trainer(nn.linear(4, 3), **kwargs)
    assert Trainer(nn.linear(4, 3), objective="mse", label_smoothing=0).label_smoothing == 0.0
