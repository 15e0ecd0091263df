"""Cross-entropy over ``(..., classes)`` outputs: a class per position (a language model's next
token, a tagger's tag), the mean over every position as torch's
``cross_entropy(logits.reshape(-1, classes), labels.reshape(-1))``.

Oracle: torch in float64 trained from the same weights on the same minibatches.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

from torchlean import nn, optim
from torchlean.trainer import RunConfig, Trainer, TrainerError


def _torch_loss(logits: torch.Tensor, labels: np.ndarray) -> torch.Tensor:
    return torch.nn.functional.cross_entropy(
        logits.reshape(-1, logits.shape[-1]), torch.tensor(labels).reshape(-1)
    )


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("form", ["labels", "one-hot"])
def test_a_class_per_position_trains_as_torch(execution, form):
    """(5, 4) samples, (5, 3) logits: three SGD steps, the loss and every parameter within 1e-12;
    evaluate's accuracy is the fraction of positions predicted right."""
    config = RunConfig(optimizer=optim.sgd(0.3, 0.5), dtype="float64", execution=execution)
    layer = nn.sequential(nn.linear(4, 6), nn.tanh(), nn.linear(6, 3))
    trainer = Trainer(layer, objective="cross-entropy", config=config, seed=3, input_shape=(5, 4))
    module = torch.nn.Sequential(torch.nn.Linear(4, 6), torch.nn.Tanh(), torch.nn.Linear(6, 3)).double()
    module.load_state_dict({k: torch.tensor(v) for k, v in trainer.model.state().items()})
    sgd = torch.optim.SGD(module.parameters(), lr=0.3, momentum=0.5)
    rng = np.random.default_rng(0)
    for _ in range(3):
        x, labels = rng.standard_normal((7, 5, 4)), rng.integers(0, 3, size=(7, 5))
        targets = labels if form == "labels" else np.eye(3)[labels]
        loss = trainer.step(x, targets)
        sgd.zero_grad()
        expected = _torch_loss(module(torch.tensor(x)), labels)
        expected.backward()
        sgd.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12, abs=0)
        for key, value in trainer.model.state().items():
            np.testing.assert_allclose(value, module.state_dict()[key].numpy(), rtol=1e-12, atol=1e-14)
    x, labels = rng.standard_normal((6, 5, 4)), rng.integers(0, 3, size=(6, 5))
    with torch.no_grad():
        logits = module(torch.tensor(x)).numpy()
    np.testing.assert_allclose(trainer.predict(x), logits, rtol=1e-12, atol=1e-14)
    assert trainer.evaluate(x, labels) == {"accuracy": float(np.mean(logits.argmax(axis=-1) == labels))}


def test_a_language_model_trains_with_fit():
    """Next-token prediction with nn.embedding: fit over (n, tokens) ids and (n, tokens) next ids
    equals torch's loop (Adam, no shuffling) within 1e-12."""
    layer = nn.sequential(nn.embedding(6, 4), nn.linear(4, 6))
    config = RunConfig(optimizer=optim.adam(lr=0.05), dtype="float64")
    trainer = Trainer(layer, objective="cross-entropy", config=config, seed=1, input_shape=(3,))
    state = trainer.model.state()
    table, weight, bias = (
        torch.tensor(state[k], requires_grad=True) for k in ("0.weight", "1.weight", "1.bias")
    )
    adam = torch.optim.Adam([table, weight, bias], lr=0.05)
    tokens = np.random.default_rng(4).integers(0, 6, size=(8, 4))
    ids, next_ids = tokens[:, :-1], tokens[:, 1:]
    losses = trainer.fit(ids, next_ids, epochs=2, batch_size=4, shuffle=False)
    expected = []
    for _ in range(2):
        total = 0.0
        for start in (0, 4):
            adam.zero_grad()
            logits = (
                torch.nn.functional.embedding(torch.tensor(ids[start : start + 4]), table) @ weight.T + bias
            )
            loss = _torch_loss(logits, next_ids[start : start + 4])
            loss.backward()
            adam.step()
            total += loss.item() * 4
        expected.append(total / 8)
    np.testing.assert_allclose(losses, expected, rtol=1e-12)
    for ours, theirs in zip(trainer.model.state().values(), (table, weight, bias), strict=True):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_labels_out_of_range_are_refused_before_any_update():
    trainer = Trainer(nn.linear(4, 3), objective="cross-entropy", input_shape=(2, 4), seed=0)
    before = trainer.model.state()
    with pytest.raises(
        TrainerError,
        match=r"cross-entropy labels must be integers in \[0, 3\), got dtype int64 with range \[0, 3\]",
    ):
        trainer.fit(np.zeros((2, 2, 4)), np.array([[0, 1], [2, 3]]))
    for key, value in trainer.model.state().items():
        np.testing.assert_array_equal(value, before[key])


def test_labels_stay_labels_until_their_minibatch():
    """fit holds (n, ...) int64 labels, not (n, ..., vocab) one-hot rows: a vocabulary of 50000
    costs one minibatch of one-hot rows."""
    trainer = Trainer(
        nn.sequential(nn.embedding(50000, 2), nn.linear(2, 50000)),
        objective="cross-entropy",
        input_shape=(3,),
    )
    ids = np.random.default_rng(0).integers(0, 50000, size=(40, 3))
    _, targets = trainer._training_data(ids, ids)
    assert targets.dtype == np.int64 and targets.shape == (40, 3)
    losses = trainer.fit(ids, ids, epochs=1, batch_size=4)
    assert len(losses) == 1 and np.isfinite(losses[0])


def test_evaluate_counts_positions_across_its_chunks():
    """600 samples (three chunks of logits): the accuracy is numpy's count over predict's logits,
    a sample whose logits are not finite counting as wrong."""
    trainer = Trainer(nn.linear(4, 3), objective="cross-entropy", input_shape=(2, 4), seed=1)
    rng = np.random.default_rng(2)
    x, labels = rng.standard_normal((600, 2, 4)), rng.integers(0, 3, size=(600, 2))
    x[300, 1, 0] = np.nan
    logits = trainer.predict(x)
    right = (logits.argmax(axis=-1) == labels) & np.isfinite(logits).all(axis=-1)
    assert not right[300, 1]
    assert trainer.evaluate(x, labels) == {"accuracy": float(np.mean(right))}
    assert trainer.evaluate(x, np.eye(3)[labels]) == {"accuracy": float(np.mean(right))}


@pytest.mark.skipif(torch.cuda.is_available(), reason="the session opens where CUDA is usable")
def test_evaluate_opens_the_session_first_as_predict():
    """A trainer that cannot open its session (cuda on this build) reports that once its data are
    accepted, in evaluate as in predict."""
    from torchlean.backend.errors import TorchLeanError

    config = RunConfig().with_profile("checked_cuda")
    trainer = Trainer(nn.linear(4, 3), objective="cross-entropy", config=config, input_shape=(4,))
    for call in (lambda: trainer.predict(np.zeros((0, 4))), lambda: trainer.evaluate(np.zeros((0, 4)), [])):
        with pytest.raises(TorchLeanError, match="CUDA"):
            call()


def test_an_empty_label_list_is_no_labels():
    """``[]`` is float64 to numpy; with no rows it holds no label that is not an integer, so an empty
    evaluation is NaN (as for an empty int array), not a refusal of its dtype."""
    trainer = Trainer(nn.linear(4, 3), objective="cross-entropy", input_shape=(4,))
    for labels in ([], np.zeros(0), np.zeros(0, dtype=np.int64)):
        result = trainer.evaluate(np.zeros((0, 4)), labels)
        assert list(result) == ["accuracy"] and np.isnan(result["accuracy"])
    with pytest.raises(TrainerError, match=r"must be integers in \[0, 3\), got dtype float64$"):
        trainer.evaluate(np.zeros((1, 4)), [0.5])
