"""``torchlean inspect --dataset`` of a comma file against a checkpoint trained on a ``;`` file
(review65 F4): the loader's advice to leave out ``--delimiter`` was wrong there (inspect, left
without it, reads with the checkpoint's ``;``); it now says to pass ``--delimiter ,``, and doing
so makes the comparison (the same rows: ``data_matches: yes``). Oracle: the two files are written
here with the same cells."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import cli
from sklearn.datasets import load_iris


def test_the_advice_names_the_delimiter_to_pass(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    x, y = load_iris(return_X_y=True)
    rows = ["a,b,c,d,y", *(",".join([*(repr(float(v)) for v in row), str(int(label))])
                           for row, label in zip(x, y, strict=True))]
    commas, semis = tmp_path / "commas.csv", tmp_path / "semis.csv"
    commas.write_text("\n".join(rows) + "\n")
    semis.write_text("\n".join(row.replace(",", ";") for row in rows) + "\n")
    model = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(semis), "--delimiter", ";", "--epochs", "1",
                       "--hidden", "4", "--save", str(model))
    assert code == 0, err
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(commas))
    assert code == 0, err
    assert "data_matches: unknown" in out.splitlines()
    assert ("the file seems to be separated by commas, not ';': pass --delimiter , (inspect reads the file "
            "with the checkpoint's --delimiter ';' when the option is left out)") in err
    assert "leave out --delimiter" not in err
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(commas), "--delimiter", ",")
    assert code == 0, err
    assert "data_matches: yes" in out.splitlines()
    # given --delimiter ';' explicitly, leaving it out is the right advice again
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(commas), "--delimiter", ";")
    assert code == 0 and "leave out --delimiter, the default" in err
