"""review67 F3: a checkpoint whose class names or feature names were reordered by hand keeps the
data digest (it covers the data's own names), so the names are compared on their own: ``inspect
--dataset`` says ``data_matches: no`` with the first differing position, ``predict --split`` notes
it, and ``train --resume`` refuses it instead of taking the data's names."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import cli


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("names") / "m.npz"
    assert main(["train", "--dataset", "iris", "--hidden", "8", "--epochs", "1", "--save", str(path)]) == 0
    return path


def edited(source: Path, target: Path, field: str, value: list[str]) -> Path:
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    meta[field] = value
    arrays["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


SWAPS: list[tuple[str, list[str], str]] = [
    ("classes", ["virginica", "versicolor", "setosa"],
     "they name class 0 setosa, where the checkpoint names it virginica"),
    ("feature_names", ["sepal length (cm)", "petal length (cm)", "sepal width (cm)", "petal width (cm)"],
     "they name feature 1 sepal width (cm), where the checkpoint names it petal length (cm)"),
]


@pytest.mark.parametrize(("field", "value", "difference"), SWAPS)
def test_inspect_says_no_and_why(capsys: pytest.CaptureFixture[str], saved: Path, tmp_path: Path,
                                 field: str, value: list[str], difference: str) -> None:
    path = edited(saved, tmp_path / "e.npz", field, value)
    code, out, err = cli(capsys, "inspect", str(path), "--dataset", "iris")
    assert code == 0 and out.endswith("data_matches: no\n")
    reason = ("their digest agrees, but the checkpoint names the classes or features otherwise: "
              f"{difference}")
    assert err == f"note: the data of iris are not those checkpoint {path}'s run trained on: {reason}\n"
    report = tmp_path / "r.json"
    assert cli(capsys, "inspect", str(path), "--dataset", "iris", "--report-json", str(report))[0] == 0
    record: dict[str, Any] = json.loads(report.read_text())
    assert (record["data_matches"], record["data_difference"]) == (False, reason)
    # the unedited checkpoint: yes, no note, no difference
    code, out, err = cli(capsys, "inspect", str(saved), "--dataset", "iris", "--report-json", str(report))
    assert (code, err) == (0, "") and out.splitlines()[-2] == "data_matches: yes"
    assert json.loads(report.read_text())["data_difference"] is None


@pytest.mark.parametrize(("field", "value", "difference"), SWAPS)
def test_resume_refuses_and_predict_notes(capsys: pytest.CaptureFixture[str], saved: Path, tmp_path: Path,
                                          field: str, value: list[str], difference: str) -> None:
    path = edited(saved, tmp_path / "e.npz", field, value)
    code, out, err = cli(capsys, "train", "--resume", str(path), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err == (f"error: checkpoint {path}: the data of the recorded dataset iris hash as those its run "
                   f"trained on, but {difference} (the data's names or the checkpoint's were edited): its "
                   "model would go on under other names; resume with data named as the checkpoint names "
                   "them, or train a new run on these data\n")
    code, _, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--split", "test", "--output",
                       str(tmp_path / "p.csv"))
    assert code == 0
    assert (f"note: the data of iris hash as those checkpoint {path}'s run trained on, but {difference} "
            "(the data's names or the checkpoint's were edited): predict names the predictions by the "
            "checkpoint's classes and takes a CSV file's columns by the checkpoint's feature names; if the "
            "data's names are the edited ones, name them as the checkpoint does\n") in err


def test_renamed_features_are_named_at_the_first(capsys: pytest.CaptureFixture[str], saved: Path,
                                                 tmp_path: Path) -> None:
    path = edited(saved, tmp_path / "e.npz", "feature_names", ["a", "b", "c", "d"])
    code, _, err = cli(capsys, "inspect", str(path), "--dataset", "iris")
    assert code == 0 and "they name feature 0 sepal length (cm), where the checkpoint names it a" in err


def _edited_setting(source: Path, target: Path, name: str, value: str) -> Path:
    with np.load(source, allow_pickle=False) as archive:
        arrays = {key: archive[key] for key in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    meta["training"]["settings"][name] = value
    arrays["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


@pytest.mark.parametrize(("name", "value", "own"), [
    ("model", "cnn", "'mlp'"), ("hidden", "65", "8"), ("dropout", "0.5", "0.0"),
    ("dtype", "float64", "'float32'"),
])
def test_an_edited_copy_of_the_model_fields_is_refused_at_load(capsys: pytest.CaptureFixture[str],
                                                                saved: Path, tmp_path: Path, name: str,
                                                                value: str, own: str) -> None:
    """review69 F2: the training settings' copies of the model's fields must agree with them, as
    profile's and execution's must; --resume no longer blames the data or the command line."""
    path = _edited_setting(saved, tmp_path / "e.npz", name, value)
    fault = (f"the checkpoint's {name} {own} and its training settings' {name} {value!r} differ (one of them "
             "was edited): a checkpoint records one model, which predict rebuilds and --resume trains on")
    for argv in (["inspect", str(path)], ["train", "--resume", str(path), "--epochs", "2"]):
        assert cli(capsys, *argv) == (2, "", f"error: {path}: {fault}\n")


def test_a_settings_digest_that_is_not_hex_is_refused(capsys: pytest.CaptureFixture[str], saved: Path,
                                                      tmp_path: Path) -> None:
    path = _edited_setting(saved, tmp_path / "e.npz", "data_sha256", "zz")
    assert cli(capsys, "inspect", str(path)) == (
        2, "", f"error: {path}: the training settings' data_sha256 must be 64 lowercase hex digits "
        "(provenance.data_sha256 of the run's Dataset), got 'zz'\n")


def test_plain_predict_notes_a_reordered_class_list(capsys: pytest.CaptureFixture[str], saved: Path,
                                                    tmp_path: Path) -> None:
    """review69 F4: without --split, predict on the run's own data notes classes the checkpoint
    lists in another order than those data give them; the unedited checkpoint says nothing."""
    path = edited(saved, tmp_path / "e.npz", "classes", ["virginica", "versicolor", "setosa"])
    code, _, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--output", str(tmp_path / "p.csv"))
    assert code == 0
    assert err == (f"note: checkpoint {path} names its classes in another order than the data it trained "
                   "on (iris): they name class 0 setosa, where the checkpoint names it virginica (the "
                   "checkpoint was edited?): its predictions and accuracy follow the checkpoint's names\n")
    out = str(tmp_path / "p.csv")
    assert cli(capsys, "predict", str(saved), "--dataset", "iris", "--output", out)[2] == ""


def test_a_huge_number_in_the_metadata_is_named_for_a_user(capsys: pytest.CaptureFixture[str], saved: Path,
                                                           tmp_path: Path) -> None:
    """review69 F5: not CPython's advice to call sys.set_int_max_str_digits()."""
    import sys

    with np.load(saved, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    text = str(arrays["metadata"]).replace('"seed": 0', '"seed": ' + "9" * 5000)
    arrays["metadata"] = np.array(text)
    path = tmp_path / "digits.npz"
    with path.open("wb") as handle:
        np.savez(handle, **arrays)
    assert cli(capsys, "inspect", str(path)) == (
        2, "", f"error: {path}: not a torchlean checkpoint: the metadata is not JSON (a number of more than "
        f"{sys.get_int_max_str_digits()} digits, which no field holds)\n")


def test_a_stored_explosive_pattern_asks_for_a_new_run() -> None:
    from torchlean import optim
    from torchlean.backend.errors import TorchLeanError
    from torchlean.cli import _patterns

    ending = r"backtracks exponentially in Python's re\): train a new run with a simpler pattern$"
    with pytest.raises(TorchLeanError, match=ending):
        _patterns.check_matches_quickly(optim.group(r"(?:(?:(?:(?:.*)*)*)*)*Z", frozen=True), "--freeze",
                                        ["0.weight"] * 6, "checkpoint m.npz's setting ", seconds=0.2)


def test_an_unknown_model_setting_names_the_checkpoint(capsys: pytest.CaptureFixture[str], saved: Path,
                                                       tmp_path: Path) -> None:
    """review71 F3: a settings' model that names no model is --resume's to refuse, naming the
    checkpoint (not the load's: it is not a known model to compare)."""
    path = _edited_setting(saved, tmp_path / "e.npz", "model", "MLP")
    assert cli(capsys, "train", "--resume", str(path), "--epochs", "2") == (
        2, "", f"error: checkpoint {path}: its setting --model 'MLP' is not one of mlp, cnn, transformer\n")
