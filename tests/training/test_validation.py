"""Validation part and early stopping: ``data.load(val_fraction=)``, ``Trainer.fit(validation=,
early_stopping=)`` and ``torchlean train --val-fraction/--early-stopping``.

Oracles: scikit-learn's ``train_test_split`` and ``StandardScaler`` called here on the raw data
(the split and its statistics), ``Trainer.evaluate`` and torch's float64 ``cross_entropy`` on
the held-out rows (the metrics), an uninterrupted run stepped one epoch at a time with its
weights kept after every epoch (what early stopping restores), a Keras-style patience loop
written here (where it stops), and the same training without validation (bit for bit).
"""

from __future__ import annotations

import contextlib
import io
import json
import math
import operator
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from sklearn.datasets import load_diabetes, load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from torchlean import checkpoint, data, nn, optim
from torchlean.autograd import profiler
from torchlean.cli import main
from torchlean.models import build_model
from torchlean.trainer import Objective, RunConfig, Trainer, TrainerError
from torchlean.validation import EarlyStopping, EarlyStoppingError, History, ValLossMonitor

Array = np.ndarray[Any, Any]


def keras_stop(
    values: list[float], patience: int, mode: str = "min", min_delta: float = 0.0
) -> tuple[int | None, int | None]:
    """Keras 3's ``EarlyStopping(monitor=..., mode=mode, min_delta=min_delta, patience=P)`` over
    ``values``, written independently in Keras' own form (a ``wait`` counter bumped every epoch
    and reset on improvement; ``min_delta`` negated in min mode; improvement iff
    ``op(current - min_delta, best)``, ``op`` ``<`` or ``>``, ``best`` the value of the last
    improvement): ``(best epoch, stopped epoch)``, epochs from 0, ``None`` for none; without
    Keras' ``epoch > 0`` condition, which torchlean leaves out on purpose (``torchlean.validation``:
    a NaN or +inf first value counts toward patience; with finite values the first epoch always
    improves, so the condition never matters)."""
    compare = operator.lt if mode == "min" else operator.gt
    delta = -min_delta if mode == "min" else min_delta
    best, best_epoch, wait = (math.inf if mode == "min" else -math.inf), None, 0
    for epoch, current in enumerate(values):
        wait += 1
        if compare(current - delta, best):
            best, best_epoch, wait = current, epoch, 0
            continue
        if wait >= patience:
            return best_epoch, epoch
    return best_epoch, None


def moving_reference_stop(
    values: list[float], patience: int, mode: str = "min", min_delta: float = 0.0
) -> tuple[int | None, int | None]:
    """A rule that is *not* Keras': the reference is the best value seen so far, improvement or
    not (a gain of at most ``min_delta`` moves it). Used only to show that a case tells the two
    apart (a premise), so a test on it fails if torchlean moved the reference."""
    sign = 1.0 if mode == "min" else -1.0
    best, best_epoch, wait = math.inf, None, 0
    for epoch, current in enumerate(values):
        improved = sign * current + min_delta < best
        best = min(best, sign * current)
        if improved:
            best_epoch, wait = epoch, 0
            continue
        wait += 1
        if wait >= patience:
            return best_epoch, epoch
    return best_epoch, None


def same_state(a: dict[str, Array], b: dict[str, Array]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


# --------------------------------------------------------------------------------- the split


@pytest.mark.parametrize(("seed", "fraction"), [(0, 0.2), (7, 0.35)])
def test_iris_validation_part_is_sklearns_split_of_the_train_split(seed: int, fraction: float) -> None:
    x, y = load_iris(return_X_y=True)
    train, test = train_test_split(np.arange(len(y)), test_size=0.2, random_state=seed, stratify=y)
    fit, val = train_test_split(
        np.arange(len(train)), test_size=fraction, random_state=seed, stratify=y[train]
    )
    fit_rows, val_rows = train[fit], train[val]
    scaler = StandardScaler().fit(x[fit_rows])
    ds = data.load("iris", seed=seed, val_fraction=fraction)
    assert ds.x_val is not None and ds.y_val is not None
    np.testing.assert_array_equal(ds.y_train, y[fit_rows])
    np.testing.assert_array_equal(ds.y_val, y[val_rows])
    np.testing.assert_array_equal(ds.y_test, y[test])
    for got, rows in ((ds.x_train, fit_rows), (ds.x_val, val_rows), (ds.x_test, test)):
        np.testing.assert_array_equal(got, scaler.transform(x[rows]).astype(np.float32))
    # the statistics are the fitted part's, not the whole train split's (no leakage)
    np.testing.assert_array_equal(ds.feature_mean, x[fit_rows].mean(axis=0))
    assert not np.allclose(ds.feature_mean, x[train].mean(axis=0), rtol=0, atol=1e-9)
    # stratified: every class in both parts
    assert set(ds.y_val) == set(ds.y_train) == {0, 1, 2}
    # the test split is the one without a validation part
    np.testing.assert_array_equal(ds.y_test, data.load("iris", seed=seed).y_test)


def test_diabetes_validation_part_and_target_statistics_come_from_the_fitted_part() -> None:
    x, y = load_diabetes(return_X_y=True)
    train, _ = train_test_split(np.arange(len(y)), test_size=0.2, random_state=3)
    fit, val = train_test_split(np.arange(len(train)), test_size=0.25, random_state=3)
    fit_rows, val_rows = train[fit], train[val]
    ds = data.load("diabetes", seed=3, val_fraction=0.25, dtype="float64")
    assert ds.x_val is not None and ds.y_val is not None
    np.testing.assert_array_equal(ds.y_val, y[val_rows])
    np.testing.assert_array_equal(ds.x_val, StandardScaler().fit(x[fit_rows]).transform(x[val_rows]))
    mean, scale = ds.target_statistics()
    assert (mean, scale) == (float(np.mean(y[fit_rows])), float(np.std(y[fit_rows])))
    assert mean != float(np.mean(y[train]))
    np.testing.assert_array_equal(ds.standardised_val_targets(), (y[val_rows] - mean) / scale)
    with pytest.raises(data.DataError, match="no validation part"):
        data.load("diabetes").standardised_val_targets()


def test_csv_validation_part(tmp_path: Path) -> None:
    rng = np.random.default_rng(5)
    x = rng.normal(size=(60, 3)).round(3)
    labels = np.array(["a", "b", "c"])[np.arange(60) % 3]
    path = tmp_path / "three.csv"
    rows = "".join(f"{r[0]},{r[1]},{r[2]},{k}\n" for r, k in zip(x, labels, strict=True))
    path.write_text("f1,f2,f3,kind\n" + rows)
    y = np.arange(60) % 3
    train, _ = train_test_split(np.arange(60), test_size=0.2, random_state=0, stratify=y)
    fit, val = train_test_split(np.arange(len(train)), test_size=0.25, random_state=0, stratify=y[train])
    ds = data.load(path, val_fraction=0.25, dtype="float64")
    assert ds.x_val is not None and ds.y_val is not None
    np.testing.assert_array_equal(ds.y_val, y[train[val]])
    np.testing.assert_array_equal(ds.x_train, StandardScaler().fit(x[train[fit]]).transform(x[train[fit]]))
    assert (ds.x_train.shape[0], ds.x_val.shape[0]) == (36, 12)


def test_validation_rows_refusals() -> None:
    with pytest.raises(data.DataError, match=r"class 'x' has 1 sample in the train split"):
        data.validation_rows(np.array([0, 1, 1, 1, 1]), "classification", 0, 0.4, classes=("x", "y"))
    with pytest.raises(data.DataError, match=r"gives 2 validation and 118 to train on, too few for one "
                       r"sample of each of the 3 classes"):
        data.validation_rows(np.arange(120) % 3, "classification", 0, 0.01)
    # scikit-learn allots the 2-sample class no validation sample (2 of 102 rows in a part of 2)
    y = np.array([0, 0] + [1] * 100)
    with pytest.raises(data.DataError, match=r"leaves class 0 \(2 train-split samples\) no sample in the "
                       r"validation part"):
        data.validation_rows(y, "classification", 0, 0.015)
    with pytest.raises(data.DataError, match=r"leaves an empty part \(1 validation and 0 to train on"):
        data.validation_rows(np.zeros(1), "regression", 0, 0.5)
    for bad in (0, 1, 1.5, -0.1, math.nan, True, "0.2", None):
        with pytest.raises(data.DataError, match="val_fraction must be"):
            data.validation_rows(np.zeros(10), "regression", 0, bad)  # type: ignore[arg-type]
    huge = r"val_fraction must be in \(0, 1\), got an integer of about 401 digits"
    with pytest.raises(data.DataError, match=huge):
        data.validation_rows(np.zeros(10), "regression", 0, 10**400)
    fit, val = data.validation_rows(np.zeros(10), "regression", 0, 0.3)
    assert (len(fit), len(val)) == (7, 3) and sorted([*fit, *val]) == list(range(10))


# ------------------------------------------------------------------------------- the trainer


def _iris(val_fraction: float = 0.2) -> data.Dataset:
    return data.load("iris", seed=0, val_fraction=val_fraction)


def _trainer(layer: nn.Layer | None = None, *, execution: str = "eager", lr: float = 0.05,
             smoothing: float = 0.0, objective: Objective = Objective.CROSS_ENTROPY, outputs: int = 3,
             features: int = 4) -> Trainer[Any, Any]:
    if layer is None:
        layer = nn.sequential(nn.linear(features, 8), nn.relu(), nn.linear(8, outputs))
    config = RunConfig(optimizer=optim.adam(lr=lr), execution=execution)
    return Trainer(layer, objective=objective, config=config, seed=0, input_shape=(features,),
                   label_smoothing=smoothing)


def _dropout_bn() -> nn.Layer:
    return nn.sequential(nn.linear(4, 8), nn.batch_norm1d(8), nn.relu(), nn.dropout(0.3), nn.linear(8, 3))


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_training_with_validation_is_bit_identical_to_training_without(execution: str) -> None:
    ds = _iris()
    assert ds.x_val is not None
    # eager: batch norm's running statistics and dropout's random draws included
    layer = _dropout_bn if execution == "eager" else None
    plain = _trainer(layer() if layer else None, execution=execution)
    checked = _trainer(layer() if layer else None, execution=execution)
    losses = plain.fit(ds.x_train, ds.y_train, epochs=4, batch_size=20)
    with_val = checked.fit(ds.x_train, ds.y_train, epochs=4, batch_size=20, validation=(ds.x_val, ds.y_val))
    assert with_val == losses
    assert same_state(checked.model.state(), plain.model.state())
    assert checked.optimizer.state_dict().keys() == plain.optimizer.state_dict().keys()
    # and the next epochs go on identically (optimizer state and shuffle order untouched)
    assert checked.fit(ds.x_train, ds.y_train, epochs=2, batch_size=20) == plain.fit(
        ds.x_train, ds.y_train, epochs=2, batch_size=20
    )
    assert same_state(checked.model.state(), plain.model.state())


@pytest.mark.parametrize(("layer", "smoothing", "onehot"), [
    (None, 0.0, False), (None, 0.1, True), (_dropout_bn, 0.0, False),
])
def test_validation_metrics_equal_evaluate_and_torch_cross_entropy(
    layer: Any, smoothing: float, onehot: bool
) -> None:
    ds = _iris()
    assert ds.x_val is not None and ds.y_val is not None
    y_val = np.eye(3)[ds.y_val] if onehot else ds.y_val
    trainer = _trainer(layer() if layer else None, smoothing=smoothing)
    trainer.fit(ds.x_train, ds.y_train, epochs=3, batch_size=32, validation=(ds.x_val, y_val))
    history = trainer.history
    assert history is not None and history.val_loss is not None and history.val_accuracy is not None
    assert history.epochs == (0, 1, 2) and history.val_mse is None
    oracle = _trainer(layer() if layer else None, smoothing=smoothing)
    for epoch in range(3):
        oracle.fit(ds.x_train, ds.y_train, epochs=1, batch_size=32)
        assert history.val_accuracy[epoch] == oracle.evaluate(ds.x_val, ds.y_val)["accuracy"]
        logits = torch.tensor(oracle.predict(ds.x_val), dtype=torch.float64)
        expected = torch.nn.functional.cross_entropy(
            logits, torch.tensor(ds.y_val), label_smoothing=smoothing
        ).item()
        assert history.val_loss[epoch] == pytest.approx(expected, rel=1e-12, abs=0)
    assert history.best_epoch == int(np.argmin(history.val_loss))
    assert history.as_dict() == {"loss": list(history.loss), "val_loss": list(history.val_loss),
                                 "val_accuracy": list(history.val_accuracy)}


def test_regression_validation_mse_equals_evaluate() -> None:
    ds = data.load("diabetes", seed=0, val_fraction=0.2)
    assert ds.x_val is not None
    y_train, y_val = ds.standardised_targets()[0], ds.standardised_val_targets()
    trainer = _trainer(objective=Objective.MSE, outputs=1, features=10, lr=0.01)
    trainer.fit(ds.x_train, y_train, epochs=2, validation=(ds.x_val, y_val))
    history = trainer.history
    assert history is not None and history.val_mse is not None and history.val_accuracy is None
    assert history.val_loss == history.val_mse
    oracle = _trainer(objective=Objective.MSE, outputs=1, features=10, lr=0.01)
    for epoch in range(2):
        oracle.fit(ds.x_train, y_train, epochs=1)
        assert history.val_mse[epoch] == oracle.evaluate(ds.x_val, y_val)["mse"]
        prediction = oracle.predict(ds.x_val).astype(np.float64)[:, 0]
        expected = np.mean((prediction - y_val.astype(np.float64)) ** 2)
        assert history.val_mse[epoch] == pytest.approx(float(expected), rel=1e-12)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_val_outputs_are_the_one_validation_pass_per_epoch(execution: str) -> None:
    """review28 F7: MSE's ``val_outputs`` are the outputs the last epoch's ``val_loss`` came from,
    bit for bit ``predict(x_val)`` of an oracle trained as far, from one pass over ``x_val`` per
    epoch (kernel counts: 282 training rows in minibatches of 32 are 9 steps, 71 validation rows
    one chunk; three linear layers); ``None`` without validation and for cross-entropy."""
    ds = data.load("diabetes", seed=0, val_fraction=0.2)
    assert ds.x_val is not None and ds.x_val.shape[0] == 71
    y_train, y_val = ds.standardised_targets()[0], ds.standardised_val_targets()
    layer = nn.sequential(nn.linear(10, 8), nn.relu(), nn.linear(8, 8), nn.relu(), nn.linear(8, 1))
    trainer = _trainer(layer, execution=execution, objective=Objective.MSE, features=10, lr=0.01)
    assert trainer.val_outputs is None
    with profiler.profile() as prof:
        trainer.fit(ds.x_train, y_train, epochs=2, validation=(ds.x_val, y_val))
    calls = {k.capsule: (k.forward_calls, k.vjp_calls) for k in prof.kernels}
    assert calls["reference.linear"] == (3 * 9 * 2 + 3 * 1 * 2, 3 * 9 * 2)  # one validation pass per epoch
    outputs, history = trainer.val_outputs, trainer.history
    assert outputs is not None and history is not None and history.val_mse is not None
    assert outputs.shape == (71, 1) and outputs.dtype == np.float32
    oracle = _trainer(layer, execution=execution, objective=Objective.MSE, features=10, lr=0.01)
    oracle.fit(ds.x_train, y_train, epochs=2)
    np.testing.assert_array_equal(outputs, oracle.predict(ds.x_val), strict=True)
    expected = torch.mean((torch.tensor(outputs, dtype=torch.float64)[:, 0] - torch.tensor(y_val)) ** 2)
    assert history.val_mse[-1] == pytest.approx(expected.item(), rel=1e-12, abs=0)
    trainer.fit(ds.x_train, y_train, epochs=1)  # each fit resets it
    assert trainer.val_outputs is None
    classifier = _trainer(execution=execution)
    iris = _iris()
    classifier.fit(iris.x_train, iris.y_train, epochs=1, validation=(iris.x_val, iris.y_val))
    assert classifier.val_outputs is None


def test_fit_without_validation_records_only_its_losses() -> None:
    ds = _iris()
    trainer = _trainer()
    assert trainer.history is None
    losses = trainer.fit(ds.x_train, ds.y_train, epochs=2)
    assert isinstance(losses, list) and all(isinstance(v, float) for v in losses)
    assert trainer.history == History((0, 1), tuple(losses))
    trainer.fit(ds.x_train, ds.y_train, epochs=1)  # a later fit: lifetime epoch numbers
    assert trainer.history is not None and trainer.history.epochs == (2,)
    assert trainer.history.as_dict() == {"loss": list(trainer.history.loss)}


# ---------------------------------------------------------------------------- early stopping


@pytest.mark.parametrize(("losses", "patience", "best", "stop"), [
    ([5, 4, 4, 3, 3, 3], 2, 3, 5),       # ties do not improve
    ([5, 4, 4, 3, 3, 3], 3, 3, None),
    ([1, 2], 1, 0, 1),
    ([math.nan, math.nan, 3, 2], 2, None, 1),   # NaN never improves
    ([math.inf, 3, math.inf, 4, 2], 2, 1, 3),   # nor does +inf
    ([3, math.nan, 2, 2.5], 2, 2, None),
])
def test_monitor_stops_where_the_rule_says(
    losses: list[float], patience: int, best: int | None, stop: int | None
) -> None:
    assert keras_stop(losses, patience) == (best, stop)  # the hand values agree with Keras' loop
    monitor = ValLossMonitor(patience)
    stopped = None
    for epoch, loss in enumerate(losses):
        monitor.update(loss)
        if monitor.should_stop:
            stopped = epoch
            break
    assert (monitor.best, stopped) == (best, stop)


def test_monitor_agrees_with_keras_on_random_sequences() -> None:
    rng = np.random.default_rng(0)
    for _ in range(300):
        losses = list(rng.integers(0, 5, size=rng.integers(1, 12)).astype(float))
        patience = int(rng.integers(1, 4))
        best, stop = keras_stop(losses, patience)
        monitor = ValLossMonitor(patience)
        stopped = None
        for epoch, loss in enumerate(losses):
            monitor.update(loss)
            if monitor.should_stop:
                stopped = epoch
                break
        assert (stopped, monitor.best if stopped is not None else best) == (stop, best)


def _watch(values: list[float], patience: int, mode: str = "min", min_delta: float = 0.0) -> tuple[
    int | None, int | None
]:
    """``(best, stopped)`` of a :class:`ValLossMonitor` fed ``values`` until it says stop."""
    monitor = ValLossMonitor(patience, mode=mode, min_delta=min_delta)
    for epoch, value in enumerate(values):
        monitor.update(value)
        if monitor.should_stop:
            return monitor.best, epoch
    return monitor.best, None


NAN, INF = math.nan, math.inf


@pytest.mark.parametrize(("values", "patience", "mode", "min_delta", "best", "stop"), [
    # min mode, min_delta 0.5: 9.75 and 9.5 gain at most 0.5 (9.5 exactly 0.5: not more) and leave
    # the reference at 10, so 9.25 improves on 10 (a moving reference, 9.5, would not count it)
    ([10, 9.75, 9.5, 9.25, 9.0, 8.875, 9.5], 3, "min", 0.5, 3, 6),
    ([10, 9.75, 9.5, 9.25, 9.0, 8.875, 9.5], 4, "min", 0.5, 3, None),
    ([10, 9.75, 9.5, 9.25], 2, "min", 0.5, 0, 2),
    ([10, 9.75, 9.5, 9.25], 2, "min", 0.0, 3, None),   # min_delta 0: every gain counts
    # max mode (accuracy): ties never improve
    ([0.5, 0.625, 0.625, 0.75, 0.6875, 0.75, 0.8125], 2, "max", 0.0, 3, 5),
    ([0.5, 0.625, 0.625, 0.75, 0.6875, 0.75, 0.8125], 3, "max", 0.0, 6, None),
    # max mode, min_delta 0.125: 0.5625 and 0.625 (exactly 0.125 more) do not count; 0.6875 does
    ([0.5, 0.5625, 0.625, 0.6875, 0.75], 3, "max", 0.125, 3, None),
    ([0.5, 0.5625, 0.625, 0.6875, 0.75], 2, "max", 0.125, 0, 2),
    ([0.5, 0.5625, 0.625, 0.6875, 0.75], 2, "min", 0.125, 0, 2),  # the same values minimised
    # NaN never improves, in either mode, with or without min_delta
    ([NAN, 0.5, NAN, NAN], 2, "max", 0.0, 1, 3),
    ([NAN, 2, NAN, 1.5], 2, "min", 0.25, 3, None),
    ([NAN, NAN, 3, 2], 2, "max", 0.25, None, 1),
    ([INF, 3, INF, 4, 2], 2, "min", 0.5, 1, 3),        # +inf does not improve in min mode
    # patience 1: the first epoch without improvement stops
    ([1, 1], 1, "min", 0.0, 0, 1),
    ([0.5, 0.5], 1, "max", 0.0, 0, 1),
    ([3, 2.875], 1, "min", 0.25, 0, 1),
    ([0.25, 0.5, 0.5], 1, "max", 0.0, 1, 2),
    ([NAN], 1, "max", 0.0, None, 0),                   # Keras would not stop at epoch 0 (documented)
])
def test_monitor_modes_and_min_delta_stop_where_keras_does(
    values: list[float], patience: int, mode: str, min_delta: float, best: int | None, stop: int | None
) -> None:
    assert keras_stop(values, patience, mode, min_delta) == (best, stop)  # the hand values are Keras'
    assert _watch(values, patience, mode, min_delta) == (best, stop)


def test_the_reference_is_the_last_improvement_not_the_best_value() -> None:
    """min_delta > 0: the case the moving-reference rule gets wrong, and the monitor's best epoch
    is not the one with the best value (9.75 is lower than 10 but did not count)."""
    values = [10, 9.75, 9.5, 9.25, 9.0, 8.875, 9.5]
    assert moving_reference_stop(values, 3, "min", 0.5) == (0, 3) != keras_stop(values, 3, "min", 0.5)
    accuracies = [0.5, 0.5625, 0.625, 0.6875, 0.75]
    assert moving_reference_stop(accuracies, 3, "max", 0.125) == (0, 3)
    monitor = ValLossMonitor(3, mode="max", min_delta=0.125)
    for value in accuracies[:3]:
        monitor.update(value)
    assert monitor.best == 0 and monitor.values == (0.5, 0.5625, 0.625) and monitor.waited == 2
    assert not monitor.improves(0.625) and monitor.improves(0.6875)  # 0.625 is exactly 0.5 + 0.125


@pytest.mark.parametrize("mode", ["min", "max"])
@pytest.mark.parametrize("min_delta", [0.0, 0.5, 1.0, 2.5])
def test_monitor_agrees_with_keras_on_random_sequences_in_both_modes(mode: str, min_delta: float) -> None:
    rng = np.random.default_rng(int(min_delta * 10) + (mode == "max"))
    for _ in range(300):
        values = [float(v) for v in rng.integers(0, 8, size=int(rng.integers(1, 14)))]  # many ties
        if rng.random() < 0.3:
            values[int(rng.integers(len(values)))] = math.nan
        patience = int(rng.integers(1, 5))
        assert _watch(values, patience, mode, min_delta) == keras_stop(values, patience, mode, min_delta), (
            values, patience)


def test_default_monitor_is_the_old_rule_bit_for_bit() -> None:
    """val_loss with min_delta 0 is the rule before monitor and min_delta existed: an epoch
    improves when strictly lower than every earlier one (np.less against the running minimum)."""
    rng = np.random.default_rng(3)
    for _ in range(300):
        values = list(rng.normal(size=int(rng.integers(1, 12))).round(1))
        if rng.random() < 0.3:
            values[int(rng.integers(len(values)))] = math.nan
        monitor = ValLossMonitor.of(EarlyStopping(2))
        lowest, best = math.inf, None
        for epoch, value in enumerate(values):
            monitor.update(value)
            if np.less(value, lowest):
                lowest, best = value, epoch
            assert monitor.best == best


def _reference_run(epochs: int, execution: str = "eager") -> tuple[list[float], list[dict[str, Array]]]:
    """An uninterrupted run, one epoch a call: its validation losses and its weights after each."""
    ds = _iris()
    trainer = _trainer(execution=execution)
    val_losses, states = [], []
    for _ in range(epochs):
        trainer.fit(ds.x_train, ds.y_train, epochs=1, validation=(ds.x_val, ds.y_val))
        assert trainer.history is not None and trainer.history.val_loss is not None
        val_losses.append(trainer.history.val_loss[0])
        states.append(trainer.model.state())
    return val_losses, states


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_early_stopping_restores_the_best_epochs_weights(execution: str) -> None:
    epochs, patience = 40, 2
    val_losses, states = _reference_run(epochs, execution)
    best, stop = keras_stop(val_losses, patience)
    assert stop is not None and best is not None and best < stop < epochs - 1  # the run does stop early
    ds = _iris()
    trainer = _trainer(execution=execution)
    losses = trainer.fit(ds.x_train, ds.y_train, epochs=epochs, validation=(ds.x_val, ds.y_val),
                         early_stopping=EarlyStopping(patience))
    assert len(losses) == stop + 1 and trainer.epochs_done == stop + 1
    history = trainer.history
    assert history is not None
    assert (history.best_epoch, history.stopped_epoch, history.restored_epoch) == (best, stop, best)
    assert list(history.val_loss or ()) == val_losses[: stop + 1]
    assert same_state(trainer.model.state(), states[best])
    # without restoring: the stopped epoch's weights
    keep = _trainer(execution=execution)
    keep.fit(ds.x_train, ds.y_train, epochs=epochs, validation=(ds.x_val, ds.y_val),
             early_stopping=EarlyStopping(patience, restore_best_weights=False))
    assert keep.history is not None and keep.history.restored_epoch is None
    assert same_state(keep.model.state(), states[stop])


@pytest.fixture(scope="module")
def iris_epochs() -> tuple[list[float], list[float], list[dict[str, Array]]]:
    """An uninterrupted iris run of 16 epochs, one epoch a call: its validation losses and
    accuracies and its weights after each epoch."""
    ds = _iris()
    trainer = _trainer()
    losses, accuracies, states = [], [], []
    for _ in range(16):
        trainer.fit(ds.x_train, ds.y_train, epochs=1, validation=(ds.x_val, ds.y_val))
        history = trainer.history
        assert history is not None and history.val_loss is not None and history.val_accuracy is not None
        losses.append(history.val_loss[0])
        accuracies.append(history.val_accuracy[0])
        states.append(trainer.model.state())
    return losses, accuracies, states


@pytest.mark.parametrize(("patience", "min_delta", "premise"), [
    (2, 0.0, "the monitor"), (2, 0.05, "min_delta"), (4, 0.05, "the reference"),
])
def test_early_stopping_on_val_accuracy_stops_where_keras_does(
    iris_epochs: tuple[list[float], list[float], list[dict[str, Array]]],
    patience: int,
    min_delta: float,
    premise: str,
) -> None:
    """Monitoring val_accuracy (max mode) on the run's real accuracies (24 validation rows: steps
    of 1/24; 0.05 is more than one row, less than two): the oracle says where it stops, and each
    case's premise shows what it tells apart - another outcome for the val_loss rule (the
    monitor), for min_delta 0 (min_delta), or for a rule whose reference moves with a gain that
    does not count (the reference: 23/24 at epoch 2 leaves it at 22/24, so 24/24 counts)."""
    losses, accuracies, states = iris_epochs
    best, stop = keras_stop(accuracies, patience, "max", min_delta)
    assert stop is not None and best is not None and stop < len(accuracies) - 1  # premise: it stops
    other = {
        "the monitor": keras_stop(losses, patience, "min", min_delta),
        "min_delta": keras_stop(accuracies, patience, "max", 0.0),
        "the reference": moving_reference_stop(accuracies, patience, "max", min_delta),
    }[premise]
    assert other != (best, stop)  # premise
    ds = _iris()
    trainer = _trainer()
    rule = EarlyStopping(patience, monitor="val_accuracy", min_delta=min_delta)
    fit_losses = trainer.fit(ds.x_train, ds.y_train, epochs=16, validation=(ds.x_val, ds.y_val),
                             early_stopping=rule)
    history = trainer.history
    assert history is not None and len(fit_losses) == stop + 1
    assert (history.best_epoch, history.stopped_epoch, history.restored_epoch) == (best, stop, best)
    assert list(history.val_accuracy or ()) == accuracies[: stop + 1]
    assert list(history.val_loss or ()) == losses[: stop + 1]  # the losses are still the losses
    assert same_state(trainer.model.state(), states[best])


def test_early_stopping_on_val_mse_is_val_loss_in_a_regression_fit() -> None:
    """An MSE fit's val_mse equals its val_loss: monitoring either with the same min_delta stops
    at the same epoch, where the oracle says (on the run's own values)."""
    ds = data.load("diabetes", seed=0, val_fraction=0.25)
    assert ds.x_val is not None
    y_train, y_val = ds.standardised_targets()[0], ds.standardised_val_targets()
    runs = {}
    for monitor in ("val_loss", "val_mse"):
        trainer = _trainer(objective=Objective.MSE, outputs=1, features=10, lr=0.01)
        trainer.fit(ds.x_train, y_train, epochs=30, batch_size=64, validation=(ds.x_val, y_val),
                    early_stopping=EarlyStopping(2, monitor=monitor, min_delta=0.02))
        assert trainer.history is not None and trainer.history.val_mse is not None
        runs[monitor] = trainer.history
    assert runs["val_loss"] == runs["val_mse"]
    history = runs["val_mse"]
    assert history.val_mse is not None
    best, stop = keras_stop(list(history.val_mse), 2, "min", 0.02)
    assert stop is not None and (history.best_epoch, history.stopped_epoch) == (best, stop)
    assert keras_stop(list(history.val_mse), 2) != (best, stop)  # premise: min_delta matters here


def test_early_stopping_follows_a_hand_built_loss_sequence(monkeypatch: pytest.MonkeyPatch) -> None:
    """The validation losses replaced by a sequence: stop after epoch 4 (best 1, patience 3); the
    weights are those an uninterrupted run had after epoch 1."""
    ds = _iris()
    sequence = iter([0.9, 0.5, 0.5, 0.7, 0.6, 0.1, 0.05])
    trainer = _trainer()
    monkeypatch.setattr(trainer, "_validate", lambda held_out: (next(sequence), 0.0))
    losses = trainer.fit(ds.x_train, ds.y_train, epochs=7, validation=(ds.x_val, ds.y_val),
                         early_stopping=EarlyStopping(3))
    assert len(losses) == 5
    assert trainer.history is not None
    assert (trainer.history.best_epoch, trainer.history.stopped_epoch) == (1, 4)
    oracle = _trainer()
    oracle.fit(ds.x_train, ds.y_train, epochs=2)
    assert same_state(trainer.model.state(), oracle.model.state())
    assert oracle.fit(ds.x_train, ds.y_train, epochs=3) == losses[2:]  # the epochs it ran, bit for bit


def test_early_stopping_that_never_stops_still_restores_the_best(monkeypatch: pytest.MonkeyPatch) -> None:
    ds = _iris()
    sequence = iter([0.9, 0.3, 0.5, 0.4])
    trainer = _trainer()
    monkeypatch.setattr(trainer, "_validate", lambda held_out: (next(sequence), 0.0))
    trainer.fit(ds.x_train, ds.y_train, epochs=4, validation=(ds.x_val, ds.y_val),
                early_stopping=EarlyStopping(5))
    assert trainer.history is not None
    assert (trainer.history.best_epoch, trainer.history.stopped_epoch, trainer.history.restored_epoch) == (
        1, None, 1)
    oracle = _trainer()
    oracle.fit(ds.x_train, ds.y_train, epochs=2)
    assert same_state(trainer.model.state(), oracle.model.state())


# ----------------------------------------------------------------------------------- refusals


def test_early_stopping_monitor_and_min_delta_are_checked() -> None:
    for bad in ("loss", "val_acc", "VAL_LOSS", None, 3):
        with pytest.raises(EarlyStoppingError) as caught:
            EarlyStopping(2, monitor=bad)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"monitor must be one of 'val_loss', 'val_accuracy', 'val_mse', got {bad!r}"
        )
    for bad in (-0.1, -1, math.nan, math.inf, -math.inf, True, np.bool_(False), "0.1", None, 10**400):
        with pytest.raises(EarlyStoppingError) as caught:
            EarlyStopping(2, min_delta=bad)  # type: ignore[arg-type]
        assert str(caught.value).startswith(
            "min_delta must be a finite number >= 0 (the change of the monitored quantity that an epoch must "
            "exceed to count as an improvement), got "
        )
    with pytest.raises(EarlyStoppingError, match="got an integer of about 401 digits"):
        EarlyStopping(2, min_delta=10**400)
    rule = EarlyStopping(2, monitor="val_accuracy", min_delta=np.float32(0.25))  # type: ignore[arg-type]
    assert (rule.monitor, rule.min_delta, rule.mode) == ("val_accuracy", 0.25, "max")
    assert type(rule.min_delta) is float and type(EarlyStopping(2, min_delta=1).min_delta) is float
    assert math.copysign(1.0, EarlyStopping(2, min_delta=-0.0).min_delta) == 1.0
    assert EarlyStopping(2) == EarlyStopping(2, True, "val_loss", 0.0)
    assert (EarlyStopping(2).mode, EarlyStopping(2, monitor="val_mse").mode) == ("min", "min")
    with pytest.raises(EarlyStoppingError, match="mode must be 'min' or 'max', got 'auto'"):
        ValLossMonitor(2, mode="auto")
    with pytest.raises(EarlyStoppingError, match="min_delta must be a finite number >= 0"):
        ValLossMonitor(2, min_delta=-1.0)


def test_early_stopping_settings_are_checked() -> None:
    for bad in (0, -1, 1.5, True, "3", None):
        with pytest.raises(EarlyStoppingError, match="patience must be an int >= 1"):
            EarlyStopping(bad)  # type: ignore[arg-type]
    with pytest.raises(EarlyStoppingError, match="restore_best_weights must be a bool, got 'yes'"):
        EarlyStopping(2, restore_best_weights="yes")  # type: ignore[arg-type]
    assert EarlyStopping(np.int64(2), np.bool_(False)) == EarlyStopping(2, False)  # type: ignore[arg-type]


@pytest.mark.parametrize(("validation", "early", "message"), [
    ("xy", None, "validation must be a pair (x_val, y_val) of inputs and targets, as fit's x and y, or None, "
                 "got 'xy'"),
    ((1, 2, 3), None, "got a tuple of 3 items"),
    (np.zeros((1000, 4)), None, "got an array of shape (1000, 4)"),  # its shape, not 1000 rows (review28 F6)
    ({"x": 1, "y": 2}, None, "got a dict with keys 'x', 'y'"),
    ((np.zeros((4, 5)), np.zeros(4, dtype=np.int64)), None,
     "validation data: inputs must have shape (n, 4), got (4, 5)"),
    ((np.zeros((4, 4)), np.array([0, 1, 2, 3])), None,
     "validation data: cross-entropy labels must be integers in [0, 3), got dtype int64 with range [0, 3]"),
    ((np.zeros((4, 4)), np.zeros(3, dtype=np.int64)), None, "validation data: got 4 inputs but 3 targets"),
    ((np.full((4, 4), np.nan), np.zeros(4, dtype=np.int64)), None,
     "validation data: inputs hold 16 NaN or infinite values (the first in row 0)"),
    ((np.zeros((0, 4)), np.zeros(0, dtype=np.int64)), None, "validation data: no samples"),
    (None, EarlyStopping(2),
     "early_stopping monitors the validation loss: give validation=(x_val, y_val) too"),
    (None, EarlyStopping(2, monitor="val_accuracy"),
     "early_stopping monitors the validation accuracy (val_accuracy): give validation=(x_val, y_val) too"),
    ((np.zeros((4, 4)), np.zeros(4, dtype=np.int64)), EarlyStopping(2, monitor="val_mse"),
     "early_stopping monitors 'val_mse', which this fit's objective (cross-entropy) does not produce "
     "(accepted: 'val_loss', 'val_accuracy')"),
    ((np.zeros((4, 4)), np.zeros(4, dtype=np.int64)), 2, "early_stopping must be a validation.EarlyStopping"),
])
def test_bad_validation_is_refused_before_any_step(validation: Any, early: Any, message: str) -> None:
    ds = _iris()
    trainer = _trainer()
    before = trainer.model.state()
    with pytest.raises(TrainerError) as caught:
        trainer.fit(ds.x_train, ds.y_train, epochs=1, validation=validation, early_stopping=early)
    assert message in str(caught.value)
    assert trainer.steps_done == 0 and same_state(trainer.model.state(), before)


def test_a_regression_fit_refuses_val_accuracy_before_any_step() -> None:
    trainer = _trainer(objective=Objective.MSE, outputs=1)
    x, y = np.zeros((6, 4), dtype=np.float32), np.zeros((6, 1), dtype=np.float32)
    before = trainer.model.state()
    with pytest.raises(TrainerError) as caught:
        trainer.fit(x, y, validation=(x, y), early_stopping=EarlyStopping(1, monitor="val_accuracy"))
    assert str(caught.value) == (
        "early_stopping monitors 'val_accuracy', which this fit's objective (mse) does not produce "
        "(accepted: 'val_loss', 'val_mse')"
    )
    assert trainer.steps_done == 0 and same_state(trainer.model.state(), before)


# ------------------------------------------------------------------------------------ the CLI


def train(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = main(["train", *argv])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


IRIS = ("--dataset", "iris", "--hidden", "8", "--lr", "0.05")


def _cli_trainer(ds: data.Dataset, execution: str = "eager") -> Trainer[Any, Any]:
    layer, shape = build_model("mlp", ds.n_features, ds.n_classes or 1, hidden=8)
    config = RunConfig(optimizer=optim.adam(lr=0.05), execution=execution).with_profile("checked_cpu")
    objective = Objective.CROSS_ENTROPY if ds.task == "classification" else Objective.MSE
    return Trainer(layer, objective=objective, config=config, seed=0, input_shape=shape)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_cli_prints_and_records_each_epochs_validation(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, execution: str
) -> None:
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, *IRIS, "--epochs", "3", "--val-fraction", "0.2", "--execution", execution,
                           "--report-json", str(record_path))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("dataset=iris train=96 val=24 test=30 features=4 ")
    assert " val_fraction=0.2 epochs=3 " in lines[1] and "early_stopping" not in lines[1]
    record = json.loads(record_path.read_text())
    validation = record["validation"]
    ds = _iris()
    oracle = _cli_trainer(ds, execution)
    plain = _cli_trainer(ds, execution)
    assert oracle.fit(ds.x_train, ds.y_train, epochs=3, validation=(ds.x_val, ds.y_val)) == record["losses"]
    assert plain.fit(ds.x_train, ds.y_train, epochs=3) == record["losses"]  # validation changes nothing
    history = oracle.history
    assert history is not None and history.val_accuracy is not None
    assert validation == {
        "fraction": 0.2, "n": 24, "losses": list(history.val_loss or ()),
        "accuracy": list(history.val_accuracy),
        "best_epoch": history.best_epoch + 1 if history.best_epoch is not None else None,
        "patience": None, "monitor": "val_loss", "min_delta": 0.0, "stopped_epoch": None,
        "restored_epoch": None,
    }
    for epoch in range(3):
        assert lines[2 + epoch] == (
            f"epoch {epoch + 1:>3}/3  loss={record['losses'][epoch]:.6f}  "
            f"val_loss={validation['losses'][epoch]:.6f}  val_accuracy={validation['accuracy'][epoch]:.4f}"
        )
    best = validation["best_epoch"]
    assert lines[5] == (f"best_epoch={best} (val_loss={validation['losses'][best - 1]:.6f}); the weights are "
                        "the last epoch's (3)")
    assert lines[6] == f"test_accuracy={oracle.evaluate(ds.x_test, ds.y_test)['accuracy']:.4f}"


def test_cli_early_stopping_saves_and_tests_the_best_weights(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record_path, saved = tmp_path / "run.json", tmp_path / "best.npz"
    code, out, err = train(capsys, *IRIS, "--epochs", "40", "--val-fraction", "0.2", "--early-stopping", "2",
                           "--report-json", str(record_path), "--save", str(saved))
    assert (code, err) == (0, "")
    record = json.loads(record_path.read_text())
    validation = record["validation"]
    best, stop = keras_stop(validation["losses"], 2)
    assert best is not None and stop is not None and stop < 39
    assert (validation["best_epoch"], validation["stopped_epoch"], validation["restored_epoch"]) == (
        best + 1, stop + 1, best + 1)
    assert validation["patience"] == 2 and len(record["losses"]) == stop + 1
    lines = out.splitlines()
    assert " val_fraction=0.2 early_stopping=2 epochs=40 " in lines[1]
    summary = lines[2 + stop + 1]
    assert summary == (
        f"early stopping at epoch {stop + 1}/40: val_loss did not improve for 2 epochs; "
        f"best_epoch={best + 1} (val_loss={validation['losses'][best]:.6f}); restored its weights"
    )
    # the oracle: the same run, uninterrupted, its weights after the best epoch
    ds = _iris()
    oracle = _cli_trainer(ds)
    oracle.fit(ds.x_train, ds.y_train, epochs=best + 1)
    loaded = checkpoint.load(saved)
    assert same_state(dict(loaded.weights), oracle.model.state())
    assert lines[2 + stop + 2] == f"test_accuracy={oracle.evaluate(ds.x_test, ds.y_test)['accuracy']:.4f}"
    assert record["test_accuracy"] == oracle.evaluate(ds.x_test, ds.y_test)["accuracy"]
    # the saved statistics are those of the part trained on
    np.testing.assert_array_equal(loaded.feature_mean, ds.feature_mean)
    assert not np.array_equal(loaded.feature_mean, data.load("iris", seed=0).feature_mean)


def test_cli_early_stopping_on_val_accuracy_with_min_delta(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--monitor val_accuracy --min-delta 0.05 (24 validation rows: a gain of one row, 0.0417, does
    not count): the run stops where the oracle says on its own accuracies, and its best epoch is
    not the one with the highest accuracy (a later one gained a row only)."""
    record_path, saved = tmp_path / "run.json", tmp_path / "best.npz"
    code, out, err = train(capsys, *IRIS, "--epochs", "40", "--val-fraction", "0.2", "--early-stopping", "3",
                           "--monitor", "val_accuracy", "--min-delta", "0.05",
                           "--report-json", str(record_path), "--save", str(saved))
    assert (code, err) == (0, "")
    record = json.loads(record_path.read_text())
    validation = record["validation"]
    accuracies = validation["accuracy"]
    best, stop = keras_stop(accuracies, 3, "max", 0.05)
    assert best is not None and stop is not None and stop < 39
    assert max(accuracies[: stop + 1]) > accuracies[best]  # premise: a higher accuracy that did not count
    assert keras_stop(accuracies, 3, "max") != (best, stop)  # premise: min_delta matters
    assert keras_stop(validation["losses"], 3, "min", 0.05) != (best, stop)  # premise: the monitor matters
    assert (validation["best_epoch"], validation["stopped_epoch"], validation["restored_epoch"]) == (
        best + 1, stop + 1, best + 1)
    assert (validation["monitor"], validation["min_delta"], validation["patience"]) == (
        "val_accuracy", 0.05, 3)
    assert len(record["losses"]) == len(validation["losses"]) == stop + 1
    lines = out.splitlines()
    assert " val_fraction=0.2 early_stopping=3 monitor=val_accuracy min_delta=0.05 epochs=40 " in lines[1]
    assert lines[2 + stop + 1] == (
        f"early stopping at epoch {stop + 1}/40: val_accuracy did not improve by more than 0.05 for 3 "
        f"epochs; best_epoch={best + 1} (val_accuracy={accuracies[best]:.4f}); restored its weights"
    )
    ds = _iris()
    oracle = _cli_trainer(ds)
    oracle.fit(ds.x_train, ds.y_train, epochs=best + 1)
    assert same_state(dict(checkpoint.load(saved).weights), oracle.model.state())
    assert lines[2 + stop + 2] == f"test_accuracy={oracle.evaluate(ds.x_test, ds.y_test)['accuracy']:.4f}"


def test_cli_regression_early_stopping_on_val_mse_takes_min_delta_in_target_units(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """--monitor val_mse --min-delta 150: 150 in the target's units squared (diabetes' val_mse is
    in the thousands), where the same number on the standardised val_loss (below 1) would stop
    after the first epoch."""
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", "diabetes", "--hidden", "8", "--lr", "0.01",
                           "--batch-size", "64", "--epochs", "30", "--val-fraction", "0.25",
                           "--early-stopping", "3", "--monitor", "val_mse", "--min-delta", "150",
                           "--report-json", str(record_path))
    assert (code, err) == (0, "")
    validation = json.loads(record_path.read_text())["validation"]
    best, stop = keras_stop(validation["mse"], 3, "min", 150.0)
    assert best is not None and stop is not None and stop < 29
    assert keras_stop(validation["mse"], 3) != (best, stop)  # premise: min_delta matters
    assert keras_stop(validation["losses"], 3, "min", 150.0) == (0, 3) != (best, stop)  # premise: units
    assert (validation["best_epoch"], validation["stopped_epoch"], validation["restored_epoch"]) == (
        best + 1, stop + 1, best + 1)
    assert (validation["monitor"], validation["min_delta"]) == ("val_mse", 150.0)
    lines = out.splitlines()
    assert " val_fraction=0.25 early_stopping=3 monitor=val_mse min_delta=150.0 epochs=30 " in lines[1]
    assert lines[2 + stop + 1] == (
        f"early stopping at epoch {stop + 1}/30: val_mse did not improve by more than 150.0 for 3 epochs; "
        f"best_epoch={best + 1} (val_mse={validation['mse'][best]:.4f}); restored its weights"
    )


def test_cli_help_says_which_units_min_delta_has() -> None:
    text = " ".join(train_parser_help().split())
    assert ("in the quantity's units: for val_accuracy a fraction (0.01: one percentage point), for val_mse "
            "the target's units squared, for val_loss the loss's (regression: on the standardised target, a "
            "fraction of the target's variance); needs --early-stopping (default: 0)") in text
    assert "--monitor NAME the quantity --early-stopping monitors: val_loss (lower is better)" in text


def train_parser_help() -> str:
    buffer = io.StringIO()
    with contextlib.redirect_stdout(buffer), pytest.raises(SystemExit):
        main(["train", "--help"])
    return buffer.getvalue()


def test_cli_regression_reports_val_mse_in_target_units(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", "diabetes", "--hidden", "8", "--lr", "0.05", "--epochs", "2",
                           "--val-fraction", "0.25", "--report-json", str(record_path))
    assert (code, err) == (0, "")
    record = json.loads(record_path.read_text())
    validation = record["validation"]
    assert set(validation) == {"fraction", "n", "losses", "mse", "best_epoch", "patience", "monitor",
                               "min_delta", "stopped_epoch", "restored_epoch"}
    ds = data.load("diabetes", seed=0, val_fraction=0.25)
    assert ds.x_val is not None and ds.y_val is not None
    mean, scale = ds.target_statistics()
    oracle = _cli_trainer(ds)
    lines = out.splitlines()
    assert lines[0].startswith(f"dataset=diabetes train={len(ds.y_train)} val={len(ds.y_val)} test=89 ")
    for epoch in range(2):
        oracle.fit(ds.x_train, ds.standardised_targets()[0], epochs=1)
        assert validation["losses"][epoch] == oracle.evaluate(ds.x_val, ds.standardised_val_targets())["mse"]
        prediction = oracle.predict(ds.x_val).astype(np.float64)[:, 0] * scale + mean
        mse = float(np.mean((prediction - ds.y_val.astype(np.float64)) ** 2))
        assert validation["mse"][epoch] == mse
        assert lines[2 + epoch].endswith(
            f"  val_loss(standardised y)={validation['losses'][epoch]:.6f}  val_mse={mse:.4f}"
        )


@pytest.mark.parametrize(("fraction", "epochs", "steps", "chunks"), [
    ("0.25", 1, 9, 1),   # the review's run: 264 training rows (9 minibatches), 89 validation rows
    ("0.9", 2, 2, 2),    # 35 training rows (2 minibatches), 318 validation rows (2 chunks of <= 256)
])
def test_cli_regression_runs_the_model_once_over_the_validation_part(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, fraction: str, epochs: int, steps: int, chunks: int
) -> None:
    """review28 F7: val_loss and val_mse come from one pass per epoch (--kernel-times: the mlp's
    three linear layers run once per minibatch and once per validation chunk; two passes gave
    33 for the first case), and val_mse is the oracle's: the same weights' predictions in float64
    (bit for bit) and torch's float64 mean (to the last bits)."""
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", "diabetes", "--hidden", "8", "--lr", "0.05", "--epochs",
                           str(epochs), "--val-fraction", fraction, "--kernel-times",
                           "--report-json", str(record_path))
    assert (code, err) == (0, "")
    record = json.loads(record_path.read_text())
    linear = {k["capsule"]: k for k in record["kernel_times"]["kernels"]}["reference.linear"]
    assert (linear["forward_calls"], linear["vjp_calls"]) == (3 * steps * epochs + 3 * chunks * epochs,
                                                              3 * steps * epochs)
    row = next(line for line in out.splitlines() if line.lstrip().startswith("reference.linear "))
    assert int(row.split()[2]) == 3 * (steps + chunks) * epochs
    ds = data.load("diabetes", seed=0, val_fraction=float(fraction))
    assert ds.x_val is not None and ds.y_val is not None
    assert (-(-ds.x_train.shape[0] // 32), -(-ds.x_val.shape[0] // 256)) == (steps, chunks)  # the premise
    mean, scale = ds.target_statistics()
    oracle = _cli_trainer(ds)
    for epoch in range(epochs):
        oracle.fit(ds.x_train, ds.standardised_targets()[0], epochs=1)
        outputs = oracle.predict(ds.x_val)
        prediction = outputs.astype(np.float64)[:, 0] * scale + mean
        mse = float(np.mean((prediction - ds.y_val.astype(np.float64)) ** 2))
        assert record["validation"]["mse"][epoch] == mse
        in_torch = torch.tensor(outputs, dtype=torch.float64)[:, 0] * scale + mean
        expected = torch.mean((in_torch - torch.tensor(ds.y_val, dtype=torch.float64)) ** 2).item()
        assert record["validation"]["mse"][epoch] == pytest.approx(expected, rel=1e-13, abs=0)


def test_cli_diverged_run_has_no_best_epoch_and_a_strict_json_record(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", "diabetes", "--lr", "1e30", "--epochs", "4", "--val-fraction",
                           "0.2", "--early-stopping", "2", "--report-json", str(record_path))
    assert code == 0 and "warning: the training loss is not finite (nan) at epoch 1" in err
    lines = out.splitlines()
    assert lines[2].endswith("  val_loss(standardised y)=nan  val_mse=nan")
    assert lines[4] == ("early stopping at epoch 2/4: no epoch had a finite val_loss; the last epoch's "
                        "weights are kept")
    record = json.loads(record_path.read_text())  # strict JSON: NaN written as null
    assert record["validation"] == {
        "fraction": 0.2, "n": 71, "losses": [None, None], "mse": [None, None], "best_epoch": None,
        "patience": 2, "monitor": "val_loss", "min_delta": 0.0, "stopped_epoch": 2, "restored_epoch": None,
    }


def test_cli_csv_with_validation(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(50, 2)).round(3)
    path = tmp_path / "two.csv"
    path.write_text("a,b,label\n" + "".join(f"{r[0]},{r[1]},{int(r[0] > 0)}\n" for r in x))
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", str(path), "--hidden", "8", "--lr", "0.05", "--epochs", "2",
                           "--val-fraction", "0.3", "--report-json", str(record_path))
    assert (code, err) == (0, "")
    ds = data.load(path, val_fraction=0.3)
    assert ds.x_val is not None
    sizes = f"train={len(ds.y_train)} val={len(ds.x_val)} test=10 "
    assert out.splitlines()[0].startswith(f"dataset={path} {sizes}")
    oracle = _cli_trainer(ds)
    record = json.loads(record_path.read_text())
    assert oracle.fit(ds.x_train, ds.y_train, epochs=2, validation=(ds.x_val, ds.y_val)) == record["losses"]
    assert oracle.history is not None
    assert record["validation"]["losses"] == list(oracle.history.val_loss or ())


@pytest.mark.parametrize(("argv", "message"), [
    (["--val-fraction", "0"],
     "error: argument --val-fraction: expected a number in (0, 1) (0 and 1 excluded), got '0'"),
    (["--val-fraction", "1"],
     "error: argument --val-fraction: expected a number in (0, 1) (0 and 1 excluded), got '1'"),
    (["--val-fraction", "nan"], "error: argument --val-fraction: expected a number in (0, 1) (0 and 1 "
                                "excluded), got 'nan'"),
    (["--val-fraction", "x"], "error: argument --val-fraction: expected a number in (0, 1) (0 and 1 "
                              "excluded), got 'x'"),
    (["--early-stopping", "2"],
     "error: --early-stopping 2 monitors the validation loss, but no validation part is held out: give "
     "--val-fraction F too (e.g. --val-fraction 0.2)"),
    (["--monitor", "loss"],
     "error: argument --monitor: expected one of val_loss, val_accuracy (classification), val_mse "
     "(regression), got 'loss'"),
    (["--min-delta", "-1"], "error: argument --min-delta: expected a finite number >= 0, got '-1'"),
    (["--min-delta", "nan"], "error: argument --min-delta: expected a finite number >= 0, got 'nan'"),
    (["--min-delta", "inf"], "error: argument --min-delta: expected a finite number >= 0, got 'inf'"),
    (["--min-delta", "0.1x"], "error: argument --min-delta: expected a number, got '0.1x'"),
    (["--val-fraction", "0.2", "--monitor", "val_accuracy"],
     "error: --monitor val_accuracy chooses how --early-stopping monitors the validation part, but no "
     "--early-stopping is given: give --early-stopping P too (e.g. --early-stopping 3)"),
    (["--val-fraction", "0.2", "--min-delta", "0"],
     "error: --min-delta 0.0 chooses how --early-stopping monitors the validation part, but no "
     "--early-stopping is given: give --early-stopping P too (e.g. --early-stopping 3)"),
    (["--early-stopping", "2", "--monitor", "val_accuracy"],
     "error: --early-stopping 2 monitors val_accuracy, but no validation part is held out: give "
     "--val-fraction F too (e.g. --val-fraction 0.2)"),
    (["--dataset", "diabetes", "--val-fraction", "0.2", "--early-stopping", "2", "--monitor", "val_accuracy"],
     "error: --monitor val_accuracy: a regression run has no val_accuracy (accepted for regression: "
     "val_loss, val_mse)"),
    (["--dataset", "iris", "--val-fraction", "0.2", "--early-stopping", "2", "--monitor", "val_mse"],
     "error: --monitor val_mse: a classification run has no val_mse (accepted for classification: val_loss, "
     "val_accuracy)"),
    (["--val-fraction", "0.2", "--early-stopping", "0"],
     "error: argument --early-stopping: expected an integer >= 1 (epochs without improvement), got 0"),
    (["--val-fraction", "0.2", "--early-stopping", "1.5"],
     "error: argument --early-stopping: expected an integer >= 1 (epochs without improvement), got '1.5'"),
    (["--dataset", "iris", "--val-fraction", "0.01"],
     "error: iris: a validation fraction of 0.01 of the 120 train-split samples gives 2 validation and 118 "
     "to train on, too few for one sample of each of the 3 classes in both parts (accepted: a fraction that "
     "leaves each part at least one sample of every class)"),
    (["--dataset", "iris", "--val-fraction", "0.999"],
     "error: iris: a validation fraction of 0.999 of the 120 train-split samples leaves an empty part (120 "
     "validation and 0 to train on; accepted: a fraction that leaves at least one sample in each)"),
])
def test_cli_refusals_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], argv: list[str], message: str
) -> None:
    code, out, err = train(capsys, *argv)
    assert (code, out, err) == (2, "", message + "\n")
