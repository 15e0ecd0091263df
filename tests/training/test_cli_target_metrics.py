"""``torchlean train`` / ``predict``'s regression metrics (review56 F1, F7): ``test_mse``,
``val_mse`` and predict's ``mse=`` are measured against the CSV's own targets in float64 (not
rounded to the model's float32), and a metric too large for fixed point prints in exponent form.
The oracle is numpy float64 over the predictions CSV and the targets parsed with ``float``, the
test rows scikit-learn's ``train_test_split`` (regression: not stratified)."""

from __future__ import annotations

import csv
import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli
from sklearn.model_selection import train_test_split


def _write(path: Path, scale: float) -> list[float]:
    """A 120-row regression CSV ``a,b,y`` whose targets (times ``scale``) are no float32 values;
    the targets as written (``repr``, so ``float`` reads them back exactly)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((120, 2))
    y = (1.5 * x[:, 0] - 2.0 * x[:, 1] + 3.7 + 0.1 * rng.standard_normal(120)) * scale
    assert not np.array_equal(y.astype(np.float32).astype(np.float64), y)  # the premise: rounding moves them
    lines = ["a,b,y"] + [f"{a!r},{b!r},{t!r}" for (a, b), t in zip(x.tolist(), y.tolist(), strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return [float(v) for v in y.tolist()]


def _oracle(predictions: Path, y: list[float]) -> tuple[float, float, list[int]]:
    """The MSE of the predictions CSV (``row,prediction``) against ``y`` in float64 and against
    ``y`` rounded to float32; the rows."""
    with predictions.open(newline="") as handle:
        table = list(csv.DictReader(handle))
    rows = [int(r["row"]) for r in table]
    values = np.array([float(r["prediction"]) for r in table])
    truth = np.array(y)[rows]
    return (float(np.mean((values - truth) ** 2)),
            float(np.mean((values - truth.astype(np.float32).astype(np.float64)) ** 2)), rows)


@pytest.mark.parametrize("scale", [1.0, 1e30])
def test_test_mse_and_predict_mse_are_against_the_targets_as_read(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, scale: float
) -> None:
    names = ("t.csv", "m.npz", "r.json", "p.csv")
    data_path, model, record_path, out_path = (tmp_path / name for name in names)
    y = _write(data_path, scale)
    code, out, err = cli(capsys, "train", "--dataset", str(data_path), "--epochs", "3", "--hidden", "8",
                         "--task", "regression", "--save", str(model), "--report-json", str(record_path))
    assert (code, err) == (0, ""), err
    record = json.loads(record_path.read_text())
    code, report, err = cli(capsys, "predict", str(model), "--dataset", str(data_path), "--split", "test",
                            "--output", str(out_path))
    assert (code, err) == (0, ""), err
    exact, rounded, rows = _oracle(out_path, y)
    _, test_rows = train_test_split(np.arange(120), test_size=0.2, random_state=0)
    assert rows == sorted(test_rows.tolist())
    # the same predictions, summed in another row order: equal to the last bits
    assert record["test_mse"] == pytest.approx(exact, rel=1e-12)
    if scale != 1.0:  # the rounded targets' MSE differs in the 7th digit: the test tells them apart
        assert abs(rounded - exact) > 1e-9 * exact
        assert record["test_mse"] != pytest.approx(rounded, rel=1e-9)
    (summary,) = [line for line in report.splitlines() if line.startswith("mse=")]
    (line,) = [line for line in out.splitlines() if line.startswith("test_mse=")]
    assert summary == line.removeprefix("test_")
    # review56 F7: below 1e9 four decimals, as before; beyond it exponent form, 7 significant digits
    shown = f"{record['test_mse']:.4f}" if scale == 1.0 else f"{record['test_mse']:.6e}"
    assert line == f"test_mse={shown}"
    if scale != 1.0:
        assert re.fullmatch(r"test_mse=\d\.\d{6}e\+\d\d", line), line


def test_val_mse_is_against_the_targets_as_read(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    from torchlean import data

    names = ("t.csv", "m.npz", "r.json", "p.csv")
    data_path, model, record_path, out_path = (tmp_path / name for name in names)
    y = np.array(_write(data_path, 1e30))
    code, _, err = cli(capsys, "train", "--dataset", str(data_path), "--epochs", "1", "--hidden", "8",
                       "--task", "regression", "--val-fraction", "0.25", "--save", str(model),
                       "--report-json", str(record_path))
    assert (code, err) == (0, ""), err
    (val_mse,) = json.loads(record_path.read_text())["validation"]["mse"]
    ds = data.load(data_path, val_fraction=0.25, task="regression")
    assert ds.y_val is not None
    train_rows, test_rows = train_test_split(np.arange(120), test_size=0.2, random_state=0)
    _, val_rows = train_test_split(train_rows, test_size=0.25, random_state=0)
    assert ds.y_val.tolist() == y[val_rows].tolist()  # the values as written, bit for bit
    assert ds.y_test.tolist() == y[test_rows].tolist()
    assert ds.y_val.dtype == ds.y_test.dtype == np.float64  # not rounded to the features' float32
    # the saved weights are the epoch's (no early stopping): predict every row, take the validation ones
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(data_path), "--output", str(out_path))
    assert code == 0, err
    with out_path.open(newline="") as handle:
        values = np.array([float(r["prediction"]) for r in csv.DictReader(handle)])[val_rows]
    exact = float(np.mean((values - y[val_rows]) ** 2))
    rounded = float(np.mean((values - y[val_rows].astype(np.float32).astype(np.float64)) ** 2))
    assert val_mse == pytest.approx(exact, rel=1e-12)
    assert val_mse != pytest.approx(rounded, rel=1e-9)


@pytest.mark.parametrize(("value", "text"), [
    (0.0, "0.0000"), (3400.41125, "3400.4113"), (999999999.99994, "999999999.9999"), (-5.5, "-5.5000"),
    (1e9, "1.000000e+09"), (-2.5e12, "-2.500000e+12"), (1.5674981234263027e58, "1.567498e+58"),
    (float("nan"), "nan"), (float("inf"), "inf"),
    # review59 F3/F15: small ones lost every digit; a value that rounds up to 1e9 is in exponent form
    (1.090231856943193e-07, "1.090232e-07"), (-5e-5, "-5.000000e-05"), (1e-4, "0.0001"),
    (999999999.99996, "1.000000e+09"),
])
def test_metric_text(value: float, text: str) -> None:
    from torchlean.cli._output import metric_text

    assert metric_text(value) == text
