"""review88 F7, F8: ``--resume``'s word on a ``--label-column`` name with blanks or none (quoted as
the data's messages quote names), and on a run that read standard input (``inspect`` calls it
``-``; a resume without ``--dataset`` says it reads standard input again, and refuses a terminal,
where it waited for typed rows in silence). Oracles: the messages as the README words names and
standard input, and a pseudo-terminal (``os.openpty``) as standard input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli, ok

SMALL = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n4,5,x\n6,7,y\n8,9,x\n1,1,y\n"


def _torchlean(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchlean", *argv], capture_output=True, text=True,
                          check=False, timeout=300, **kwargs)  # type: ignore[call-overload]


@pytest.mark.parametrize(("given", "shown"), [("", "''"), (" label", "' label'"), ("label ", "'label '")])
def test_a_label_column_name_with_blanks_or_none_is_quoted_under_resume(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, given: str, shown: str
) -> None:
    """It read ``--label-column  differs`` and ``--label-column  label differs from ... label``."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "2", "--label-column", given)
    assert (code, out) == (2, "")
    assert err == (
        f"error: --resume {part} continues the run with the checkpoint's settings; --label-column {shown} "
        "differs from the checkpoint's run's label column label (leave out the option, or train a new run "
        "without --resume)\n"
    )


def test_a_run_on_standard_input_is_resumed_from_standard_input_with_a_note(tmp_path: Path) -> None:
    part = tmp_path / "stdin.npz"
    done = _torchlean("train", "--dataset", "-", "--epochs", "1", "--save", str(part), input=SMALL)
    assert done.returncode == 0, done.stderr
    shown = _torchlean("inspect", str(part), "--report-json", "-")
    record = json.loads(shown.stdout)
    assert record["dataset"] == "-" and record["training"]["settings"]["dataset"] == "-"
    note = (f"note: checkpoint {part}'s run read its data from standard input (-): --resume reads standard "
            "input again (the data digest checks that they are the run's)\n")
    again = _torchlean("train", "--resume", str(part), "--epochs", "2", input=SMALL)
    assert again.returncode == 0 and again.stderr.startswith(note), again.stderr
    empty = _torchlean("train", "--resume", str(part), "--epochs", "2", stdin=subprocess.DEVNULL)
    assert empty.returncode == 2
    assert empty.stderr == note + "error: standard input (-): the file has no rows\n"


def test_resuming_a_standard_input_run_on_a_terminal_is_refused_not_left_waiting(tmp_path: Path) -> None:
    part = tmp_path / "stdin.npz"
    assert _torchlean("train", "--dataset", "-", "--epochs", "1", "--save", str(part),
                      input=SMALL).returncode == 0
    leader, follower = os.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "torchlean", "train", "--resume", str(part), "--epochs",
                               "2"], stdin=follower, capture_output=True, text=True, timeout=120, check=False)
    finally:
        os.close(leader)
        os.close(follower)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: checkpoint {part}'s run read its data from standard input (-), which --resume reads again "
        f"without --dataset, and standard input is a terminal here: pipe the run's data in (torchlean train "
        f"--resume {part} < FILE) or give --dataset FILE\n"
    )


def _semicolon_run(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, Path, Path]:
    """review88 F4's files: ``semi.csv`` (``;``, commas inside the quoted header names), the same
    rows written with commas, and a run on the first saved to ``semi.npz``."""
    rows = [(0.1 * i, (-1) ** i * 0.3 * i, 1.5 - 0.05 * i, 0.2 * i - 1) for i in range(40)]
    names = ['"price, EUR"', '"size (m2, net)"', '"c;d"', '"target, y"']
    semi, comma, part = tmp_path / "semi.csv", tmp_path / "comma.csv", tmp_path / "semi.npz"
    for path, sep in ((semi, ";"), (comma, ",")):
        path.write_text(sep.join(names) + "\n" + "".join(sep.join(map(repr, row)) + "\n" for row in rows))
    ok(capsys, "--dataset", str(semi), "--delimiter", ";", "--epochs", "1", "--save", str(part))
    return semi, comma, part


def test_predict_compares_with_the_delimiter_it_read_the_data_with(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The run's rows written with commas were read by predict with its default comma, but compared
    re-read with the checkpoint's ';': "unknown" (null), unless --delimiter , was typed."""
    _, comma, part = _semicolon_run(capsys, tmp_path)
    report = tmp_path / "r.json"
    for extra in ((), ("--delimiter", ",")):
        code, _, err = cli(capsys, "predict", str(part), "--dataset", str(comma), "--output",
                           str(tmp_path / "p"), "--report-json", str(report), *extra)
        assert code == 0, err
        assert json.loads(report.read_text())["data_matches_training"] is True
        assert "could not be loaded" not in err


def test_predict_on_the_runs_own_file_names_the_checkpoints_delimiter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    semi, _, part = _semicolon_run(capsys, tmp_path)
    code, out, err = cli(capsys, "predict", str(part), "--dataset", str(semi))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {semi}: line 2 has 1 cell, expected 3; checkpoint {part}'s run read its data with "
        "--delimiter ';' (predict reads commas without --delimiter): pass --delimiter ';' if these are such "
        "data\n"
    )
    report = tmp_path / "r.json"
    code, _, err = cli(capsys, "predict", str(part), "--dataset", str(semi), "--delimiter", ";", "--output",
                       str(tmp_path / "p"), "--report-json", str(report))
    assert code == 0 and json.loads(report.read_text())["data_matches_training"] is True, err


def test_the_runs_data_with_columns_in_another_order_are_noted_as_such(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review90 F8: the run's file with feature columns a and b swapped (header too) got
    data_matches_training false with no note, though predict takes columns by name and so
    predicts on the run's data: the predictions equal those on the run's file."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part))
    swapped = tmp_path / "swapped.csv"
    swapped.write_text("".join(f"{b},{a},{y}\n" for a, b, y in (line.split(",") for line in SMALL.split())))
    note = (f"note: the data of {swapped} are not those checkpoint {part}'s run trained on as they were: "
            "their feature columns are the run's in another order; predict takes a CSV file's columns by the "
            "checkpoint's feature names, so it predicts on the run's data (train --resume, which reads "
            "columns in their order, refuses them)")
    outputs = {}
    for data_file in (csv, swapped):
        report, predictions = tmp_path / f"{data_file.stem}.json", tmp_path / f"{data_file.stem}.out.csv"
        code, _, err = cli(capsys, "predict", str(part), "--dataset", str(data_file), "--output",
                           str(predictions), "--report-json", str(report))
        assert code == 0, err
        record = json.loads(report.read_text())
        expected = (True, []) if data_file == csv else (False, [note])
        assert (record["data_matches_training"], record["notes"]) == expected
        outputs[data_file] = [line.split(",")[-1] for line in predictions.read_text().splitlines()]
    assert outputs[csv] == outputs[swapped]
    code, _, err = cli(capsys, "inspect", str(part), "--dataset", str(swapped))
    assert err.splitlines()[-1] == (f"note: the data of {swapped} are not those checkpoint {part}'s run "
                                    "trained on: their feature columns are the run's in another order")


def test_standard_input_is_named_standard_input_in_resume_and_inspect_messages(tmp_path: Path) -> None:
    """review90 F10: "the data of - are not ..." (inspect) and "the data of the recorded dataset path
    - ..." (resume) named standard input otherwise than the reader's "standard input (-)"."""
    part = tmp_path / "stdin.npz"
    trained = _torchlean("train", "--dataset", "-", "--epochs", "1", "--save", str(part), input=SMALL)
    assert trained.returncode == 0, trained.stderr
    lines = SMALL.splitlines()
    units = "\n".join([lines[0], *(f"{float(a) * 100 + 1e6!r},{b},{y}" for a, b, y in
                                   (line.split(",") for line in lines[1:]))]) + "\n"
    resumed = _torchlean("train", "--resume", str(part), "--epochs", "2", input=units)
    assert resumed.returncode == 2
    assert f"error: checkpoint {part}: the data of standard input (-) are not those its run trained on" in (
        resumed.stderr)
    inspected = _torchlean("inspect", str(part), "--dataset", "-", input=units)
    assert inspected.stderr.splitlines()[-1].startswith(
        f"note: the data of standard input (-) are not those checkpoint {part}'s run trained on: ")
