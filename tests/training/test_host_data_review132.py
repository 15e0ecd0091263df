"""review132 F2 and F7: data numpy cannot read (torch tensors that require grad, sparse or meta;
ragged rows; objects that are not data) is refused with the library's own errors, one shared
helper (``_tensor_data.host_array``) for the trainer, checkpoints and minibatches."""

import numpy as np
import pytest
import torch

from torchlean import data, nn
from torchlean.batches import BatchError
from torchlean.trainer import Trainer, TrainerError

X = np.random.default_rng(0).random((5, 4))
Y = np.arange(5) % 3


@pytest.mark.parametrize(
    ("tensor", "said"),
    [
        (torch.rand(5, 4, requires_grad=True), "requires grad"),
        (torch.rand(5, 4).to_sparse(), "sparse"),
        (torch.empty(5, 4, device="meta"), "meta"),
    ],
)
def test_trainer_refuses_unreadable_torch_tensors(tensor: torch.Tensor, said: str) -> None:
    t = Trainer(nn.linear(4, 3), objective="cross-entropy")
    for call in (lambda: t.fit(tensor, Y), lambda: t.predict(tensor), lambda: t.evaluate(tensor, Y),
                 lambda: t.step(tensor, Y)):
        with pytest.raises(TrainerError, match=f"inputs: .*{said}"):
            call()
    with pytest.raises(BatchError, match=f"array 0: .*{said}"):
        data.minibatches(tensor)


def test_bfloat16_read_as_its_values() -> None:
    t = Trainer(nn.linear(4, 3), objective="cross-entropy")
    b = torch.tensor(X, dtype=torch.bfloat16)
    assert np.array_equal(t.predict(b), t.predict(b.double().numpy()))
    (batch,) = next(data.minibatches(b, batch_size=5))
    assert batch.dtype == np.float64 and batch.shape == (5, 4)


def test_bfloat16_mse_targets_read_as_their_values_by_evaluate_and_validation() -> None:
    """review179 F3: fit read bfloat16 targets, evaluate and fit's validation re-read them with
    numpy and raised torch's TypeError."""
    targets = torch.tensor(X[:, :2] - 0.5, dtype=torch.bfloat16)
    widened = targets.double().numpy()  # bfloat16 values are exact in float64
    t = Trainer(nn.linear(4, 2), objective="mse")
    assert t.evaluate(X, targets) == t.evaluate(X, widened)
    histories = []
    for held in (targets, widened):
        trainer = Trainer(nn.linear(4, 2), objective="mse")
        trainer.fit(X, widened, epochs=1, validation=(X, held))
        histories.append(trainer.history)
    assert histories[0].val_mse == histories[1].val_mse and histories[0].val_loss == histories[1].val_loss


def test_lists_of_torch_tensors_are_read_as_a_tensor_given_alone() -> None:
    """review185 F2: a list of torch tensors numpy cannot read (requires grad, bfloat16, meta) gave
    torch's bare errors; its elements are now read, or refused naming them, as one tensor is."""
    t = Trainer(nn.linear(4, 3), objective="cross-entropy")
    with pytest.raises(TrainerError, match=r"^inputs: element \[0\]: a torch tensor of shape \(4,\) that "
                       r"requires grad"):
        t.fit([torch.tensor(row, requires_grad=True) for row in X], Y)
    rows = [torch.tensor(row).bfloat16() for row in X]  # widened to float64, as one bfloat16 tensor
    assert np.array_equal(t.predict(rows), t.predict(torch.tensor(X).bfloat16().double().numpy()))
    with pytest.raises(BatchError, match=r"^array 0: element \[1\]: cannot copy a meta torch tensor"):
        data.minibatches([torch.ones(2), torch.ones(2, device="meta")])


def test_minibatches_ragged_and_non_data() -> None:
    with pytest.raises(BatchError, match="array 0 must be a rectangular array"):
        list(data.minibatches([[1.0, 2.0], [3.0]], batch_size=1))
    for value, kind in [((r for r in np.ones((4, 2))), "generator"), ({"x": 1}, "dict"), (None, "NoneType")]:
        with pytest.raises(BatchError, match=f"array 0: .* of type {kind} is not array data"):
            data.minibatches(value)
    with pytest.raises(BatchError, match="array 1 is a scalar"):
        data.minibatches(np.ones(3), 5)


def test_checkpoint_standardise_refuses_grad_tensor(tmp_path) -> None:  # type: ignore[no-untyped-def]
    from torchlean import checkpoint
    from torchlean.checkpoint import CheckpointError
    from torchlean.cli import main

    path = tmp_path / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    saved = checkpoint.load(path)
    with pytest.raises(CheckpointError, match=r"features: a torch tensor .* requires grad"):
        saved.standardise(torch.rand(3, 4, requires_grad=True))
    assert saved.standardise(torch.rand(3, 4, dtype=torch.bfloat16)).shape == (3, 4)
