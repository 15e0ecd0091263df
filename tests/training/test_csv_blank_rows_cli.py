"""``torchlean train``, ``predict`` and ``inspect`` on a CSV file with a row whose cells are all
blank (``,,``, a spreadsheet's empty row): refused by line as one ``error:`` line, exit status 2,
as a row with one blank cell is, from a file and from standard input; empty lines are still
skipped, so ``predict`` writes one prediction per data row (review128 F2). Labels written ``nan``
beside class names are named as missing values (review128 F8). The Python side is
tests/data/test_csv_blank_rows.py.
"""

from __future__ import annotations

import csv
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli

TRAIN = ("--epochs", "1", "--hidden", "8")
ADVICE = (
    "(a row of missing values, as a spreadsheet exports an empty row? torchlean reads none: remove such "
    "rows; accepted: a value in every cell, or an empty line, which is skipped)"
)
ROWS = "".join(f"{i},{(i * 7) % 5},{'xy'[i % 2]}\n" for i in range(30))


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _refused(capsys: pytest.CaptureFixture[str], message: str, *argv: str) -> None:
    code, out, err = cli(capsys, *argv)
    assert (code, out, err) == (2, "", f"error: {message}\n")


@pytest.fixture
def model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> Path:
    """A checkpoint trained on a clean file of features ``a, b`` and classes ``x, y``."""
    path = _write(tmp_path, "clean.csv", "a,b,y\n" + ROWS)
    code, _, err = cli(capsys, "train", "--dataset", str(path), *TRAIN, "--save", str(tmp_path / "m.npz"))
    assert code == 0, err
    return tmp_path / "m.npz"


def test_train_refuses_a_row_of_blank_cells(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The review's file: 30 rows and a line ',,' after the sixth, which trained on 30 rows."""
    lines = ROWS.splitlines(keepends=True)
    path = _write(tmp_path, "gap.csv", "a,b,y\n" + "".join(lines[:6]) + ",,\n" + "".join(lines[6:]))
    _refused(capsys, f"{path}: line 8: all 3 cells are blank: ',,' {ADVICE}", "train", "--dataset", str(path),
             *TRAIN)
    crlf = _write(tmp_path, "crlf.csv", "a;b;y\r\n" + "".join(lines[:6]).replace(",", ";").replace(
        "\n", "\r\n") + " ; ; \r\n")
    _refused(capsys, f"{crlf}: line 8: all 3 cells are blank: ' ; ; ' {ADVICE}", "train", "--dataset",
             str(crlf), "--delimiter", ";", *TRAIN)


def test_predict_refuses_it_and_writes_a_prediction_per_data_row(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: Path
) -> None:
    blank = _write(tmp_path, "pc.csv", "a,b,y\n1,2,x\n,,\n2,3,y\n\n3,4,x\n , , \n4,5,y\n")
    out = tmp_path / "out.csv"
    _refused(capsys, f"{blank}: line 3: all 3 cells are blank: ',,' {ADVICE}", "predict", str(model),
             "--dataset", str(blank), "--output", str(out))
    assert not out.exists()
    _refused(capsys, f"{blank}: line 3: all 3 cells are blank: ',,' {ADVICE}", "predict", str(model),
             "--dataset", str(blank), "--split", "test", "--output", str(out))
    # the same rows with empty lines only: one prediction per data row
    empty = _write(tmp_path, "empty.csv", "a,b,y\n1,2,x\n\n2,3,y\n\n3,4,x\n   \n4,5,y\n\n")
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(empty), "--output", str(out))
    assert code == 0, err
    with out.open(newline="") as handle:
        assert len(list(csv.reader(handle))) == 1 + 4


def test_inspect_names_the_row_and_a_csv_given_as_checkpoint_is_still_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, model: Path
) -> None:
    blank = _write(tmp_path, "blank.csv", "a,b,y\n" + ROWS + ",,\n")
    code, _, err = cli(capsys, "inspect", str(model), "--dataset", str(blank))
    assert code == 0
    assert f"({blank}: line 32: all 3 cells are blank: ',,' {ADVICE})" in err
    code, _, err = cli(capsys, "predict", str(blank), "--dataset", str(blank))
    assert code == 2
    assert f"CHECKPOINT {blank} is a CSV text file, not a checkpoint" in err


def test_standard_input_refuses_a_row_of_blank_cells(tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path))
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "train", "--dataset", "-", *TRAIN],
        input="a,b,y\n1,2,x\n,,\n" + ROWS, capture_output=True, text=True, cwd=tmp_path, env=env,
        timeout=300, check=False,
    )
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == f"error: standard input (-): line 3: all 3 cells are blank: ',,' {ADVICE}\n"


def test_nan_labels_are_named_as_missing_values(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = _write(tmp_path, "lnan.csv", "a,b,y\n1,2,nan\n2,3,cat\n3,4,nan\n4,5,cat\n5,6,nan\n6,7,cat\n")
    _refused(
        capsys,
        f"{path}: line 2, column y: not a finite number: 'nan' (a missing value: 3 of the 6 labels are NaN, "
        "and the others are not numbers, 'cat' on line 3 the first): torchlean reads no missing values "
        "(remove such rows)",
        "train", "--dataset", str(path), *TRAIN,
    )
    ids = _write(tmp_path, "ids.csv", "a,b,y\n1,2,1\n2,3,cat\n3,4,nan\n4,5,2\n5,6,1\n6,7,cat\n")
    _refused(
        capsys,
        f"{ids}: line 3, column y: not a number: 'cat', but 3 of the 6 labels are numbers, and 1 is NaN, a "
        "missing value too: torchlean reads no missing values (remove such rows); pass --task classification "
        "to read every label as a class name (a 'nan' label then names a class of its own: remove those rows "
        "first)",  # review131 F4
        "train", "--dataset", str(ids), *TRAIN,
    )
