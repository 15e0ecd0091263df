"""``fit(stop_on_non_finite=True)`` (review184 F3): a step whose loss or new weights are not
finite is not stored, and the fit stops naming it. Oracles: the weights recorded after each stored
step (``on_batch``), and a default fit of the same run, which trains on into NaN as torch does."""

from __future__ import annotations

import re
from typing import Any

import numpy as np
import pytest

from torchlean import nn, optim
from torchlean.trainer import NonFiniteStepError, RunConfig, Trainer, TrainerError

RNG = np.random.default_rng(0)
X = RNG.standard_normal((64, 4))
Y = (X[:, 0] > 0).astype(np.int64)


def _trainer(lr: float, execution: str = "eager", dtype: str = "float64") -> Trainer[Any, Any]:
    layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 2))
    return Trainer(layer, objective="cross-entropy", seed=0,
                   config=RunConfig(optim.sgd(lr), execution=execution, dtype=dtype))


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_a_diverging_fit_stops_before_storing_the_first_non_finite_step(execution: str) -> None:
    trainer = _trainer(1e30, execution)
    stored: list[dict[str, np.ndarray]] = []
    with pytest.raises(NonFiniteStepError) as refused:
        trainer.fit(X, Y, epochs=3, batch_size=16, stop_on_non_finite=True,
                    on_batch=lambda epoch, loss: stored.append(trainer.model.state()))
    found = re.fullmatch(
        r"stop_on_non_finite: at epoch (\d+), minibatch (\d+) \(both from 0, as on_batch's epoch\), step "
        r"(\d+) \(from 1\), the loss is "
        r"(nan|finite) and the update would make \d+ of the model's 58 values not finite; it was not "
        r"stored: the model and the optimizer are those of the (\d+) steps? before it \(lower the learning "
        r"rate, or clip the gradients: RunConfig\(max_grad_norm=\.\.\.\)\)", str(refused.value))
    assert found is not None, str(refused.value)
    epoch, minibatch, step, _, before = found.groups()
    # 4 minibatches an epoch (64 rows, 16 a batch): the step's place agrees with the steps stored
    assert int(step) == int(before) + 1 == 4 * int(epoch) + int(minibatch) + 1
    assert trainer.steps_done == len(stored) == int(before) and trainer.epochs_done == int(epoch)
    state = trainer.model.state()
    assert all(np.isfinite(value).all() for value in state.values())
    assert all(np.array_equal(state[name], stored[-1][name]) for name in state)
    assert trainer.optimizer.steps == int(before)  # the refused step's optimizer state not stored

    default = _trainer(1e30, execution)  # the same run without the flag trains on into NaN
    default.fit(X, Y, epochs=3, batch_size=16)
    assert not all(np.isfinite(value).all() for value in default.model.state().values())


def test_finite_weights_with_a_finite_loss_train_as_without_the_flag() -> None:
    checked, plain = _trainer(0.1), _trainer(0.1)
    assert checked.fit(X, Y, epochs=2, batch_size=16, stop_on_non_finite=True) == plain.fit(
        X, Y, epochs=2, batch_size=16)
    assert all(np.array_equal(checked.model.state()[k], v) for k, v in plain.model.state().items())


def test_an_update_that_overflows_from_a_finite_loss_is_refused() -> None:
    """The loss of a step is taken before its update, so the flag checks the new weights too."""
    trainer = _trainer(1e10, dtype="float32")  # inputs of 1e30: gradients of 1e30, updates of 1e40
    with pytest.raises(NonFiniteStepError, match=r"step 1 \(from 1\), the loss is finite and the update "
                       r"would make \d+ of the model's 58 values not finite"):
        trainer.fit(X * 1e30, Y, epochs=1, batch_size=64, stop_on_non_finite=True)
    assert trainer.steps_done == 0


def test_the_flag_must_be_a_bool() -> None:
    with pytest.raises(TrainerError, match=r"^stop_on_non_finite must be a bool, got 1$"):
        _trainer(0.1).fit(X, Y, stop_on_non_finite=1)  # type: ignore[arg-type]


def test_early_stoppings_best_weights_are_restored_when_a_step_is_refused() -> None:
    """review186 F1: the refusal ended the fit before early stopping restored its best weights."""
    from torchlean.validation import EarlyStopping

    trainer = _trainer(0.5, dtype="float32")
    kept: list[dict[str, np.ndarray]] = []

    def schedule(epoch: int) -> float:
        return 0.5 if epoch < 3 else 3e38  # diverges in epoch 3

    with pytest.raises(NonFiniteStepError) as refused:
        trainer.fit(X, Y, epochs=6, batch_size=16, validation=(X, Y), lr_schedule=schedule,
                    early_stopping=EarlyStopping(patience=5, restore_best_weights=True),
                    stop_on_non_finite=True, on_batch=lambda epoch, loss: kept.append(trainer.model.state()))
    history = trainer.history
    assert history is not None and history.best_epoch is not None
    best = history.best_epoch
    assert history.restored_epoch == best
    assert f"early stopping restored the weights of epoch {best}, its best (restore_best_weights)" in (
        refused.value.__notes__)
    at_best = kept[4 * best + 3]  # the last step of the best epoch (4 minibatches an epoch)
    assert all(np.array_equal(trainer.model.state()[name], value) for name, value in at_best.items())


def test_an_optimizer_state_that_overflows_is_refused_too() -> None:
    """review186 F2: Adam's second moment overflows float32 (gradients of about 1e22) while the
    weights stay finite; stored, it would hold those weights still from then on."""
    x = X.astype(np.float32).copy()
    x[:, 0] *= 1e22
    trainer = Trainer(nn.sequential(nn.linear(4, 2)), objective="cross-entropy", seed=0,
                      config=RunConfig(optim.adam(1e-3), dtype="float32"))
    labels = np.random.default_rng(1).integers(0, 2, len(x))  # not separable by the scaled feature
    with pytest.raises(NonFiniteStepError, match=r"the loss is finite and the update would make 0 of the "
                       r"model's 10 values and \d+ of the optimizer's state values not finite"):
        trainer.fit(x, labels, epochs=5, batch_size=64, stop_on_non_finite=True)
    assert all(np.isfinite(np.asarray(v)).all() for v in trainer.optimizer.first + trainer.optimizer.second)


def test_the_error_is_exported_beside_trainer_error() -> None:
    import torchlean

    assert torchlean.NonFiniteStepError is NonFiniteStepError and issubclass(NonFiniteStepError, TrainerError)


def test_a_non_finite_loss_with_a_finite_update_says_the_update_stays_finite() -> None:
    """review214 F6: "the update would make 0 of the model's 5 values not finite" read as a
    contradiction; a float32 MSE whose squared error overflows (targets of 1e20) while its
    gradient, 2 (p - y) / n, does not."""
    trainer = Trainer(nn.linear(4, 1), objective="mse", seed=0,
                      config=RunConfig(optim.sgd(1e-30), dtype="float32"))
    with pytest.raises(NonFiniteStepError) as refused:
        trainer.fit(X, np.full(len(X), 1e20), epochs=1, batch_size=64, stop_on_non_finite=True)
    assert "step 1 (from 1), the loss is inf and the update would leave the model's values finite; it " \
        "was not stored" in str(refused.value)
    assert (refused.value.values, refused.value.state_values) == (0, 0)
