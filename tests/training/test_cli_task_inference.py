"""The task inferred from a CSV label column (review56 F2): a number at or beyond 2**53 in
magnitude is no class id (every float64 there is an integer), a column whose labels are all
distinct is refused rather than read as one class per row, and the CLI's notes and errors name
the option (``--task regression``) where the Python API names its argument."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli

from torchlean import data


def _csv(path: Path, labels: list[str]) -> Path:
    rng = np.random.default_rng(3)
    x = rng.standard_normal(len(labels)).tolist()
    rows = [f"{a!r},{label}" for a, label in zip(x, labels, strict=True)]
    path.write_text("a,y\n" + "\n".join(rows) + "\n")
    return path


@pytest.mark.parametrize(("big", "task"), [
    (2**53 - 1, "classification"),  # the largest whole number every float64 below it can tell apart
    (2**53, "regression"),
    (-(2**53), "regression"),
    (10**30, "regression"),
])
def test_whole_numbers_beyond_2_53_are_a_quantity(tmp_path: Path, big: int, task: str) -> None:
    assert float(big).is_integer()  # the premise: as a float64 it is "whole" whatever its size
    path = _csv(tmp_path / "t.csv", [str(v) for v in [0, 1, big] * 20])
    loaded = data.load(path)
    assert loaded.task == task
    if task == "classification":
        assert loaded.class_names == ("0", "1", str(big))


def test_ids_beyond_2_53_that_float64_merges_are_refused_naming_both_tasks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review59 F4: three ids 1234567890123456789/...790/...800 are one float64 (spacing 256 there),
    so read as a quantity they were a "constant" target; refused, naming both ways out. With
    --task classification the three classes are kept exactly."""
    ids = ["1234567890123456789", "1234567890123456790", "1234567890123456800"]
    assert len({float(v) for v in ids}) == 1  # the premise
    path = _csv(tmp_path / "ids.csv", ids * 14)
    with pytest.raises(data.DataError) as caught:
        data.load(path)
    assert str(caught.value) == (
        f"{path}: label column y: the labels are whole numbers beyond 2**53, 3 distinct as written but 1 "
        "once read as float64 numbers (which cannot hold them exactly): if they are class ids, pass "
        "task='classification' (CLI: --task classification); to read them as rounded quantities, pass "
        "task='regression' (CLI: --task regression)"
    )
    assert data.load(path, task="classification").class_names == tuple(ids)
    assert data.load(path, task="regression").task == "regression"
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1")
    assert code == 2 and err.endswith("pass --task classification; to read them as rounded quantities, pass "
                                      "--task regression\n"), err


def test_the_review_s_large_target_trains_as_regression(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rng = np.random.default_rng(0)
    y = (rng.standard_normal(200) * 1e30).tolist()  # -2.3e30 and alike: every one an integer as float64
    path = _csv(tmp_path / "big.csv", [repr(v) for v in y])
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--hidden", "4")
    assert (code, err) == (0, ""), err
    assert " task=regression " in out.splitlines()[0]
    assert any(line.startswith("test_mse=") for line in out.splitlines())


def test_every_row_its_own_class_is_refused_naming_the_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _csv(tmp_path / "ids.csv", [str(7 * i) for i in range(30)])
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: label column y: its 30 whole numbers are all distinct, so classification (inferred "
        "from them) would make every row a class of its own, and no test row's class would be trained on: "
        "pass --task regression if they are a quantity; pass --task classification to train on them as "
        "classes anyway\n"
    )
    # the Python API names its own argument
    with pytest.raises(data.DataError, match=r"pass task='regression' \(CLI: --task regression\)"):
        data.load(path)
    assert data.load(path, task="regression").task == "regression"
    assert data.load(path, task="classification").n_classes == 30  # asked for: kept
    names = _csv(tmp_path / "names.csv", [f"id{i}" for i in range(30)])
    code, _, err = cli(capsys, "train", "--dataset", str(names), "--epochs", "1")
    assert code == 2 and "if another column holds the labels, pass --label-column NAME;" in err
    # one repeated label (two rows of one class), or one number written twice, is not every row its own
    assert data.load(_csv(tmp_path / "rep.csv", [str(i) for i in [*range(29), 0]])).task == "classification"
    assert data.load(_csv(tmp_path / "two.csv", [*map(str, range(29)), "0.0"])).task == "classification"


def test_notes_name_the_cli_option_first(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    # 12 whole-number classes, two of them single samples: not stratified, and the hint names --task
    labels = [str(i % 12) for i in range(46)]
    path = _csv(tmp_path / "few.csv", labels)
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--hidden", "4")
    assert code == 0
    (note, split) = err.splitlines()
    assert split.startswith("note: the train/test split is not stratified by class")
    assert note.startswith("note: the labels are whole numbers (12 distinct)")
    assert note.endswith("classification was inferred: pass --task regression if they are a quantity")
    assert "task='regression'" not in note and "CLI:" not in note
    # the same note in Python keeps the argument
    (in_python,) = data.load(path).notes
    assert in_python.endswith("pass task='regression' (CLI: --task regression) if they are a quantity")


def test_task_regression_on_class_names_names_the_option_and_the_classes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review115 F6: ``--task regression`` on a column of class names said only ``not a number:
    'lo'``. It says that the option needs numbers and that the column holds class names, and
    names the way out, each in the caller's spelling; the first label (line 2) is the one named."""
    path = _csv(tmp_path / "three.csv", ["lo", "mid", "hi"] * 10)
    with pytest.raises(data.DataError) as caught:
        data.load(path, task="regression")
    assert str(caught.value) == (
        f"{path}: line 2, column y: not a number: 'lo': task regression (CLI: --task regression) needs a "
        "number in each label, and this column holds class names (3 distinct, none a number); to classify "
        "them, pass task='classification' (CLI: --task classification)"
    )
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--task", "regression", "--epochs", "1")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: line 2, column y: not a number: 'lo': --task regression needs a number in each "
        "label, and this column holds class names (3 distinct, none a number); to classify them, pass "
        "--task classification\n"
    )
    assert data.load(path, task="classification").class_names == ("hi", "lo", "mid")  # the way out holds
    # not class names: a number among the labels (a missing value), or one text label throughout,
    # keep the cell's own message
    for labels, cell in ((["1.5", "NA", "2.5"] * 10, "'NA'"), (["x"] * 30, "'x'")):
        other = _csv(tmp_path / "other.csv", labels)
        with pytest.raises(data.DataError) as caught:
            data.load(other, task="regression")
        assert f"not a number: {cell}" in str(caught.value) and "class names" not in str(caught.value)
