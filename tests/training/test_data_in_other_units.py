"""The training data in other units or with an offset are not the training data (review65 F1).

The data digest is taken over the standardised split, so the training CSV with every feature
times 10, or plus 100, hashes alike; but the model standardises its inputs with the checkpoint's
statistics, so its outputs on such a file differ. ``predict`` and ``inspect`` compare the
statistics the reloaded data give with the checkpoint's as well. Oracles: the files are written
here from scikit-learn's iris and diabetes (the rows themselves known), the digest recomputed by
``torchlean.provenance.data_sha256`` over ``data.load`` of each file, and the predictions, which
must differ for the scaled file and agree for an exact copy.
"""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli
from sklearn.datasets import load_diabetes, load_iris

from torchlean import data, provenance


def _write(path: Path, x: np.ndarray, y: np.ndarray) -> Path:
    names = [f"f{j}" for j in range(x.shape[1])]
    lines = [",".join([*names, "y"])]
    for row, label in zip(x, y.tolist(), strict=True):
        lines.append(",".join([*(repr(float(v)) for v in row), repr(label)]))
    path.write_text("\n".join(lines) + "\n")
    return path


def _predict(capsys: pytest.CaptureFixture[str], model: Path, dataset: Path, out: Path) -> tuple[str, dict]:
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(dataset), "--split", "test",
                       "--output", str(out), "--report-json", str(out.with_suffix(".json")))
    assert code == 0, err
    return err, json.loads(out.with_suffix(".json").read_text())


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_scaled_or_shifted_training_data_do_not_match(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                       task: str) -> None:
    x, y = load_iris(return_X_y=True) if task == "classification" else load_diabetes(return_X_y=True)
    y = y.astype(np.int64) if task == "classification" else y
    train_file = _write(tmp_path / "train.csv", x, y)
    model = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(train_file), "--epochs", "2", "--hidden", "4",
                       "--task", task, "--save", str(model))
    assert code == 0, err
    copy = _write(tmp_path / "copy.csv", x, y)
    err, record = _predict(capsys, model, copy, tmp_path / "copy_p.csv")
    assert record["data_matches_training"] is True and record["notes"] == [] and "note:" not in err
    for name, changed in (("times10", x * 10.0), ("plus100", x + 100.0)):
        other = _write(tmp_path / f"{name}.csv", changed, y)
        # the oracle of the cause: the standardised split, and so the digest, is the training data's
        same = data.load(str(copy), label_column="y", task=task)
        moved = data.load(str(other), label_column="y", task=task)
        assert provenance.data_sha256(moved) == provenance.data_sha256(same)
        assert not np.array_equal(moved.feature_mean, same.feature_mean)
        err, record = _predict(capsys, model, other, tmp_path / f"{name}_p.csv")
        assert record["data_matches_training"] is False
        assert record["data_sha256"] == record["trained_data_sha256"]  # the digests agree; the units do not
        note = (f"note: the data of {other} are not those checkpoint {model}'s run trained on (their "
                "standardised values hash alike, but their means and scales (the features', or the "
                "target's) differ from the checkpoint's: other units or an offset): the model standardises "
                "its inputs with the checkpoint's statistics, so its outputs on these data are not its "
                "outputs on the training data")
        assert note in err.splitlines() and note in record["notes"]
        assert (tmp_path / f"{name}_p.csv").read_text() != (tmp_path / "copy_p.csv").read_text()
        code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(other))
        assert code == 0, err
        assert "data_matches: no" in out.splitlines() or "data_matches: no" in err.splitlines()
