"""review68 F6: on imbalanced data ``train`` records the balanced accuracy (oracle: scikit-learn's
``balanced_accuracy_score`` of the saved model's predictions, recomputed in numpy float64) and
notes a test accuracy that does not beat always predicting the majority class."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli
from sklearn.metrics import balanced_accuracy_score

from torchlean import checkpoint, data
from torchlean.cli._imbalance import baseline_note


def test_an_imbalanced_run_is_noted_and_its_balanced_accuracy_recorded(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(4000, 5))
    y = (rng.uniform(size=4000) < 0.01).astype(int)  # labels unrelated to x: 1 % positives
    path = tmp_path / "imbal.csv"
    np.savetxt(path, np.c_[x, y], delimiter=",", header="a,b,c,d,e,y", comments="", fmt=["%.6g"] * 5 + ["%d"])
    report, saved = tmp_path / "r.json", tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "2", "--report-json", str(report),
                       "--save", str(saved))
    assert code == 0
    record = json.loads(report.read_text())
    # the oracle: the saved weights' predictions on the test split, in float64 numpy
    ds = data.load(str(path))
    weights = {k: v.astype(np.float64) for k, v in checkpoint.load(saved).weights.items()}
    h = np.maximum(ds.x_test.astype(np.float64) @ weights["0.weight"].T + weights["0.bias"], 0)
    h = np.maximum(h @ weights["2.weight"].T + weights["2.bias"], 0)
    predicted = (h @ weights["4.weight"].T + weights["4.bias"]).argmax(axis=1)
    assert record["test_balanced_accuracy"] == pytest.approx(balanced_accuracy_score(ds.y_test, predicted))
    share = np.bincount(ds.y_test).max() / ds.y_test.size
    assert record["test_accuracy"] <= share  # the case: no better than the majority
    assert err == (f"note: test_accuracy={record['test_accuracy']:.4f} is not above {share:.4f}, the share "
                   "of the test rows of its most frequent class (0): always predicting that class would "
                   "score as well; the balanced accuracy (the mean recall over the classes, "
                   f"test_balanced_accuracy in --report-json) tells them apart: "
                   f"{record['test_balanced_accuracy']:.4f}\n")


def test_a_balanced_run_says_nothing(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    report = tmp_path / "r.json"
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--hidden", "8", "--epochs", "3",
                       "--report-json", str(report))
    record = json.loads(report.read_text())
    assert (code, err) == (0, "") and record["test_accuracy"] > 1 / 3
    assert 0 < record["test_balanced_accuracy"] <= 1


@pytest.mark.parametrize(("accuracy", "baseline", "noted"), [
    (0.75, (0, 0.75), True), (0.751, (0, 0.75), False), (0.5, (1, 0.5), False), (0.9, None, False),
])
def test_the_note_rule(accuracy: float, baseline: tuple[int, float] | None, noted: bool) -> None:
    note = baseline_note(accuracy, 0.5, baseline, ("a\nb", "c"))
    assert bool(note) is noted
    if noted:
        assert "most frequent class ('a\\nb')" in note  # a class name is shown on one line


def test_no_python_warning_when_predictions_name_a_class_without_test_rows(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """30 classes in 40 rows: the test rows lack most classes, which the model still predicts;
    scikit-learn's warning about it is not the user's (such classes count for nothing)."""
    import warnings

    path = tmp_path / "few.csv"
    path.write_text("a,y\n" + "".join(f"{i},{i % 30}\n" for i in range(40)))
    report = tmp_path / "r.json"
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--report-json",
                           str(report))
    assert code == 0 and "Warning" not in err
    record = json.loads(report.read_text())
    ds = data.load(str(path))
    assert 0 <= record["test_balanced_accuracy"] <= 1 and len(set(ds.y_test.tolist())) < 30


def test_test_metrics_predict_the_split_once_and_count_a_non_finite_row_as_wrong() -> None:
    """review76 F4: the test split was predicted twice (``evaluate``, then ``predict`` for the
    balanced accuracy). One ``predict`` now gives both; a row whose logits are not all finite
    predicts no class (wrong), as ``Trainer.evaluate`` counts it, for the balanced accuracy too.
    Oracle: counts by hand and scikit-learn on the hand-made predictions."""
    import types

    from torchlean.cli._imbalance import test_metrics

    logits = np.array([[2.0, 1.0], [0.0, 3.0], [np.nan, 5.0], [1.0, 0.0], [4.0, np.inf]], np.float32)
    labels = np.array([0, 1, 1, 1, 0])
    dataset = types.SimpleNamespace(x_test=np.zeros((5, 2)), y_test=labels)
    # the outputs of train's one predict pass (which also gives its no-prediction warning: review184 F1)
    accuracy, balanced, baseline = test_metrics(logits, dataset)  # type: ignore[arg-type]
    assert accuracy == 2 / 5  # rows 0 and 1; rows 2 and 4 are not finite, row 3 is wrong
    with pytest.warns(UserWarning, match="y_pred contains classes not in y_true"):  # the -1 rows
        oracle = balanced_accuracy_score(labels, [0, 1, -1, 0, -1])
    assert balanced == pytest.approx(oracle)
    assert balanced == pytest.approx((1 / 2 + 1 / 3) / 2)
    assert baseline == (1, 3 / 5)


def test_train_reports_the_accuracy_trainer_evaluate_gives(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The one-pass metric is ``Trainer.evaluate``'s, bit for bit, on the run's own model."""
    path, report = tmp_path / "m.npz", tmp_path / "r.json"
    code, _, err = cli(capsys, "train", "--dataset", "digits", "--epochs", "1", "--profile", "fast_cpu",
                       "--save", str(path), "--report-json", str(report))
    assert code == 0, err
    record = json.loads(report.read_text())
    trainer = checkpoint.load(path).build()
    ds = data.load("digits")  # the run's split, standardised as it was
    assert record["test_accuracy"] == trainer.evaluate(ds.x_test, ds.y_test)["accuracy"]
