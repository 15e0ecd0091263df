"""The ``--report-json`` records (review56 F3): train's gains the run's shape (task, split sizes,
features, parameters, classes) and the CSV read settings as resolved; predict writes one too;
``--format json`` is refused naming ``--report-json``. Oracles: scikit-learn's split sizes, the
MLP's parameter count by hand, accuracy recomputed from the predictions CSV."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli


@pytest.fixture
def semicolons(tmp_path: Path) -> Path:
    """103 rows ``a;b;c;label`` with three string classes, separated by ';'."""
    rng = np.random.default_rng(5)
    x = rng.standard_normal((103, 3))
    names = np.array(["cat", "dog", "eel"])[np.argmax(x, axis=1)]
    path = tmp_path / "animals.csv"
    rows = [";".join([*(f"{v:.5f}" for v in row), str(label)]) for row, label in zip(x, names, strict=True)]
    path.write_text("a;b;c;label\n" + "\n".join(rows) + "\n")
    return path


def _mlp_parameters(features: int, hidden: int, outputs: int) -> int:
    """Two hidden layers of ``hidden`` units, each linear layer a weight and a bias."""
    return (features + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * outputs


def test_train_record_has_the_run_shape_and_csv_settings(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, semicolons: Path
) -> None:
    record_path = tmp_path / "run.json"
    code, out, err = cli(capsys, "train", "--dataset", str(semicolons), "--delimiter", ";", "--label-column",
                         "-1", "--hidden", "8", "--epochs", "1", "--val-fraction", "0.25",
                         "--report-json", str(record_path))
    assert (code, err) == (0, ""), err
    record = json.loads(record_path.read_text())
    # scikit-learn: ceil(0.2 * 103) = 21 test rows; of the 82 left, ceil(0.25 * 82) = 21 validate
    keys = ("task", "train", "val", "test", "features", "parameters", "classes")
    shape = {key: record[key] for key in keys}
    assert shape == {"task": "classification", "train": 61, "val": 21, "test": 21, "features": 3,
                     "parameters": _mlp_parameters(3, 8, 3), "classes": ["cat", "dog", "eel"]}
    assert record["validation"]["n"] == 21
    assert (record["label_column"], record["delimiter"], record["header"]) == ("label", ";", True)
    assert out.splitlines()[0].startswith(
        f"dataset={semicolons} train=61 val=21 test=21 features=3 task=classification model=mlp "
    )
    assert out.splitlines()[0].endswith(f" parameters={_mlp_parameters(3, 8, 3)}")


def test_train_record_of_a_headerless_regression_csv_and_of_a_shipped_dataset(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "plain.csv"
    rng = np.random.default_rng(1)
    path.write_text("".join(f"{a:.4f}\t{a * 2 + 0.25:.4f}\n" for a in rng.standard_normal(40)))
    record_path = tmp_path / "run.json"
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--delimiter", "tab", "--hidden", "4",
                       "--epochs", "1", "--report-json", str(record_path))
    assert code == 0, err
    record = json.loads(record_path.read_text())
    assert (record["task"], record["train"], record["val"], record["test"], record["classes"]) == (
        "regression", 32, None, 8, None)
    assert (record["label_column"], record["delimiter"], record["header"]) == ("column_1", "\t", False)
    assert record["parameters"] == _mlp_parameters(1, 4, 1)
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--hidden", "4", "--epochs", "1",
                       "--report-json", str(record_path))
    assert code == 0, err
    record = json.loads(record_path.read_text())
    assert record["classes"] == ["setosa", "versicolor", "virginica"]
    assert (record["train"], record["test"], record["features"]) == (120, 30, 4)
    assert (record["label_column"], record["delimiter"], record["header"]) == (None, None, None)


@pytest.mark.parametrize("command", ["train", "predict"])
@pytest.mark.parametrize("words", [["--format", "json"], ["--format=json"]])
def test_format_json_is_refused_naming_report_json(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, words: list[str]
) -> None:
    model = tmp_path / "m.npz"
    model.write_bytes(b"")
    argv = ["train"] if command == "train" else ["predict", str(model)]
    argv += ["--dataset", "iris"]
    code, out, err = cli(capsys, *argv, *words)
    assert (code, out) == (2, "")
    assert err == (
        f"error: unrecognized arguments: {' '.join(words)} (torchlean {command} has no --format: "
        f"--report-json PATH, or - for standard output, writes its record as JSON; torchlean {command} "
        "--help lists the accepted options)\n"
    )


def test_predict_record(capsys: pytest.CaptureFixture[str], tmp_path: Path, semicolons: Path) -> None:
    model, predictions, record_path = tmp_path / "m.npz", tmp_path / "p.csv", tmp_path / "out" / "p.json"
    code, _, err = cli(capsys, "train", "--dataset", str(semicolons), "--delimiter", ";", "--hidden", "8",
                       "--epochs", "2", "--save", str(model))
    assert code == 0, err
    code, out, err = cli(capsys, "predict", str(model), "--dataset", str(semicolons), "--delimiter", ";",
                         "--split", "test", "--output", str(predictions), "--report-json", str(record_path))
    assert (code, err) == (0, ""), err
    record = json.loads(record_path.read_text())
    with predictions.open(newline="") as handle:
        rows = list(csv.DictReader(handle, delimiter=";"))
    labels = [line.rsplit(";", 1)[1] for line in semicolons.read_text().splitlines()[1:]]
    correct = sum(labels[int(r["row"])] == r["prediction"] for r in rows)
    assert record == {
        "checkpoint": str(model), "dataset": str(semicolons), "rows": 21, "split": "test",
        "test_fraction": 0.2, "task": "classification", "profile": "checked_cpu", "execution": "eager",
        "trained_under": "checked_cpu", "accuracy": correct / 21, "correct": correct,
        "rows_without_prediction": 0, "output": str(predictions),
        "capsules_order": "first-use", "capsules": record["capsules"], "preference_notes": [],
        # review62: the audit's keys (tests/training/test_audit_records.py checks their values)
        "checkpoint_sha256": record["checkpoint_sha256"], "torch_threads": record["torch_threads"],
        "data_sha256": record["trained_data_sha256"], "trained_data_sha256": record["trained_data_sha256"],
        "data_matches_training": True, "notes": [], "environment": record["environment"],
    }
    assert [c["capsule"] for c in record["capsules"]] == ["reference.linear", "reference.relu"]
    assert f"accuracy={correct / 21:.4f} ({correct}/21)" in out.splitlines()
    assert out.splitlines()[-2:] == [f"wrote {predictions}", f"wrote {record_path}"]
    # the CSV and the record cannot share stdout; the record cannot overwrite an input or the CSV
    for argv, refusal in (
        (["--report-json", "-"], "error: --report-json on standard output and the predictions CSV (without "
         "--output, or with --output naming standard output) would both go there: give --output PATH for the "
         "CSV, or a file path to --report-json\n"),
        (["--output", str(predictions), "--report-json", str(predictions)],
         f"error: --output {predictions} and --report-json {predictions} name the same file; give them "
         "different paths\n"),
        (["--report-json", str(model)],
         f"error: --report-json {model} is the checkpoint {model}: writing it would destroy that input; give "
         "another path\n"),
    ):
        code, out, err = cli(capsys, "predict", str(model), "--dataset", str(semicolons), "--delimiter", ";",
                             *argv)
        assert (code, out, err) == (2, "", refusal)
