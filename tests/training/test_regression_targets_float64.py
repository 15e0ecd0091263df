"""Regression targets are kept as read, float64, under a float32 run (review86 F1, F2): they are
standardised from those values (not from values rounded to float32, which moves a target near
1e8 by up to 4), and the data digest covers them, so an edit inside one float32 rounding interval
is told apart. A regression checkpoint written before this (``fixtures/legacy_regression.npz``,
saved by torchlean at 769b172 with ``train --dataset legacy_regression.csv --epochs 3 --hidden 4
--val-fraction 0.25``) recorded the digest of the rounded targets and their statistics; it is
still recognised as trained on its data.

Oracles: the CSV parsed with ``csv`` and ``float``, the rows of scikit-learn's
``train_test_split`` (regression: not stratified), numpy float64."""

from __future__ import annotations

import csv
import json
import shutil
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, metadata
from sklearn.model_selection import train_test_split

from torchlean import data, provenance

FIXTURES = Path(__file__).resolve().parent / "fixtures"


def _write(path: Path, offset: float) -> np.ndarray:
    """A 200-row CSV ``a,b,c,y`` with ``y = 2a + b + offset`` written to 4 decimals; the targets as
    written, parsed back with ``float``."""
    rng = np.random.default_rng(5)
    x = rng.normal(size=(200, 3))
    lines = ["a,b,c,y"] + [
        f"{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{2 * r[0] + r[1] + offset:.4f}" for r in x.tolist()
    ]
    path.write_text("\n".join(lines) + "\n")
    with path.open(newline="") as handle:
        return np.array([float(row["y"]) for row in csv.DictReader(handle)])


def test_targets_are_float64_as_read_and_standardised_from_them(tmp_path: Path) -> None:
    y = _write(tmp_path / "offset.csv", 1e8)
    assert np.unique(y.astype(np.float32)).size < y.size / 2  # the premise: float32 merges most targets
    ds = data.load(tmp_path / "offset.csv")  # float32 features
    train_rows, test_rows = train_test_split(np.arange(200), test_size=0.2, random_state=0)
    assert ds.x_train.dtype == np.float32
    assert ds.y_train.dtype == ds.y_test.dtype == np.float64
    assert ds.y_train.tolist() == y[train_rows].tolist() and ds.y_test.tolist() == y[test_rows].tolist()
    mean, scale = float(np.mean(y[train_rows])), float(np.std(y[train_rows]))
    assert ds.target_statistics() == pytest.approx((mean, scale), rel=1e-15)
    train, test = ds.standardised_targets()
    assert train.dtype == test.dtype == np.float32
    np.testing.assert_allclose(train, (y[train_rows] - mean) / scale, rtol=0, atol=1e-6)
    # the same data without the offset standardise alike (rounded to float32 first, they were ~8/std apart)
    _write(tmp_path / "plain.csv", 0.0)
    plain = data.load(tmp_path / "plain.csv")
    np.testing.assert_allclose(train, plain.standardised_targets()[0], rtol=0, atol=1e-5)


def test_an_offset_target_trains_as_well_as_the_same_target_without_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mse = {}
    for name, offset in (("offset.csv", 1e8), ("plain.csv", 0.0)):
        _write(tmp_path / name, offset)
        record = tmp_path / f"{name}.json"
        code, _, err = cli(capsys, "train", "--dataset", str(tmp_path / name), "--epochs", "10",
                           "--report-json", str(record))
        assert (code, err) == (0, ""), err
        mse[name] = json.loads(record.read_text())["test_mse"]
    assert mse["plain.csv"] < 0.1  # y = 2a + b is learnt
    # the standardised targets agree to float32 rounding, so the runs' test_mse nearly does (was 3.2 vs 0.002)
    assert mse["offset.csv"] == pytest.approx(mse["plain.csv"], rel=0.05, abs=1e-3)


def _edited_within_float32(source: Path, target: Path) -> None:
    """``source`` with each target moved by 1 towards its float32 value's side, so that it rounds
    to the same float32 as before (the old digest of the rounded targets could not tell)."""
    with source.open(newline="") as handle:
        rows = list(csv.reader(handle))
    with target.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(rows[0])
        for row in rows[1:]:
            y = float(row[-1])
            rounded = float(np.float32(y))
            moved = rounded + (1.0 if y <= rounded else -1.0)
            assert np.float32(moved) == np.float32(y) and moved != y
            writer.writerow([*row[:-1], f"{moved:.4f}"])


def test_targets_edited_inside_a_float32_rounding_interval_are_other_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _write(tmp_path / "offset.csv", 1e8)
    _edited_within_float32(tmp_path / "offset.csv", tmp_path / "edited.csv")
    model = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(tmp_path / "offset.csv"), "--epochs", "2",
                       "--save", str(model))
    assert (code, err) == (0, ""), err
    code, out, _ = cli(capsys, "inspect", str(model), "--dataset", str(tmp_path / "offset.csv"))
    assert (code, out.splitlines()[-1]) == (0, "data_matches: yes")
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(tmp_path / "edited.csv"))
    assert (code, out.splitlines()[-1]) == (0, "data_matches: no")
    assert "their digest differs" in err
    code, out, err = cli(capsys, "train", "--resume", str(model), "--epochs", "3",
                         "--dataset", str(tmp_path / "edited.csv"))
    assert code == 2 and "differ from those the run in" in err


def test_a_checkpoint_that_hashed_the_rounded_targets_is_recognised(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for name in ("legacy_regression.csv", "legacy_regression.npz"):
        shutil.copy(FIXTURES / name, tmp_path / name)
    model, csv_path = tmp_path / "legacy_regression.npz", tmp_path / "legacy_regression.csv"
    recorded = metadata(model)["training"]["settings"]["data_sha256"]
    ds = data.load(csv_path, val_fraction=0.25)
    assert provenance.data_sha256(ds) != recorded  # today's digest covers the float64 targets
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(csv_path))
    assert (code, err) == (0, ""), err
    assert out.splitlines()[-2:] == [f"dataset_sha256: {recorded} ({csv_path})", "data_matches: yes"]
    report = tmp_path / "p.json"
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(csv_path), "--split", "test",
                       "--output", str(tmp_path / "p.csv"), "--report-json", str(report))
    assert (code, err) == (0, ""), err
    assert json.loads(report.read_text())["data_matches_training"] is True
    code, out, err = cli(capsys, "train", "--resume", str(model), "--epochs", "4", "--dataset", str(csv_path),
                         "--save", str(tmp_path / "next.npz"))
    assert (code, err) == (0, ""), err
    # a target moved outside its float32 interval is other data, for the old digest too
    lines = csv_path.read_text().splitlines()
    a, b, y = lines[1].split(",")
    lines[1] = f"{a},{b},{float(y) + 64:.3f}"
    csv_path.write_text("\n".join(lines) + "\n")
    code, out, _ = cli(capsys, "inspect", str(model), "--dataset", str(csv_path))
    assert (code, out.splitlines()[-1]) == (0, "data_matches: no")
