"""review92 F9: a file whose label column moved (the run took the last column, ``y``; the file
puts ``y`` first) was refused by resume as "the file or its split changed", and inspect said
only "their digest differs". Both now name the moved label column; resume's way out,
``--label-column y``, continues the run bit for bit (the oracle: the same resume on the file as
the run read it)."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, ok


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """``c.csv`` (a,b,c,y; y the class) and ``moved.csv``, the same rows as y,a,b,c."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3)).tolist()
    y = [int(r[0] + r[1] > 0) for r in x]
    run, moved = tmp_path / "c.csv", tmp_path / "moved.csv"
    pairs = list(zip(x, y, strict=True))
    run.write_text("a,b,c,y\n" + "".join(f"{r[0]!r},{r[1]!r},{r[2]!r},{t}\n" for r, t in pairs))
    moved.write_text("y,a,b,c\n" + "".join(f"{t},{r[0]!r},{r[1]!r},{r[2]!r}\n" for r, t in pairs))
    return run, moved


def test_resume_and_inspect_name_a_moved_label_column(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    run, moved = _files(tmp_path)
    part = tmp_path / "c.npz"
    ok(capsys, "--dataset", str(run), "--epochs", "1", "--save", str(part))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(moved), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"error: the data of --dataset {moved} differ from those the run in {part} trained on (the run's "
        "label column y is a feature column of these data, and c was read as the label: if the columns were "
        "moved, pass --label-column y): resume with the data it was trained on"
    )
    code, out, err = cli(capsys, "inspect", str(part), "--dataset", str(moved))
    assert code == 0 and out.splitlines()[-1] == "data_matches: no"
    assert err.splitlines()[-1] == (
        f"note: the data of {moved} are not those checkpoint {part}'s run trained on: their digest differs; "
        "the run's label column y is a feature column of these data, and c was read as the label"
    )
    taken = ok(capsys, "--resume", str(part), "--dataset", str(moved), "--label-column", "y", "--epochs", "2")
    oracle = ok(capsys, "--resume", str(part), "--dataset", str(run), "--epochs", "2")
    assert [line for line in taken if "loss=" in line] == [line for line in oracle if "loss=" in line]
    assert any(line.startswith("epoch   2/2") for line in taken)


def test_other_changed_data_keep_the_plain_refusal(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """The clause is only for a label column among the features: a changed row is "the file or
    its split changed", as before."""
    run, _ = _files(tmp_path)
    part = tmp_path / "c.npz"
    ok(capsys, "--dataset", str(run), "--epochs", "1", "--save", str(part))
    lines = run.read_text().splitlines()
    lines[1] = "9.0," + lines[1].split(",", 1)[1]
    run.write_text("\n".join(lines) + "\n")
    code, _, err = cli(capsys, "train", "--resume", str(part), "--epochs", "2")
    assert code == 2
    assert err.splitlines()[-1].endswith(
        "(the file or its split changed): resume with the data it was trained on")
