"""review86 F3-F9: the command line on home-made CSV files. ``--resume`` with a ``--label-column``
index that names another column than the run's (F3), the signal note on the progress bar's line
(F4), ``inspect``'s and ``predict``'s word on data that cannot be loaded as the run's (F5, F6), the
``--delimiter`` hint for a header name holding a comma (F7), a recorded relative dataset path
resumed from another directory (F8) and a text feature column (F9). Oracles: the messages as the
README and the review word them, the files' own columns, and tqdm's own drawing of a bar."""

from __future__ import annotations

import io
import json
import signal
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli, ok
from tqdm import tqdm

from torchlean.cli import _resume

SMALL = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n4,5,x\n6,7,y\n8,9,x\n1,1,y\n"
"""The review's s.csv: two number features and a text label in the last column."""


OTHER_ROWS = (
    "the file or its split changed; over the training rows, feature a's mean is 1.0625, the checkpoint's "
    "4.0: values were edited, or other rows train, as when rows are added, removed or reordered or labels "
    "edited"
)


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one-line error of ``torchlean ARGV``, which must be refused (exit 2, nothing on stdout)."""
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    return err[len("error: "):-1]


# ------------------------------------------------------------------------------------------- F3


def _trained(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, Path]:
    """``SMALL`` written to ``s.csv`` and a one-epoch run on it saved to ``s.npz``."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part))
    return csv, part


@pytest.mark.parametrize(("index", "column"), [("0", "a"), ("1", "b"), ("-3", "a")])
def test_a_label_column_index_naming_a_feature_is_refused_as_a_name_is(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, index: str, column: str
) -> None:
    _, part = _trained(capsys, tmp_path)
    message = _refused(capsys, "train", "--resume", str(part), "--epochs", "2", "--label-column", index)
    assert message == (
        f"--resume {part} continues the run with the checkpoint's settings; --label-column {index} (column "
        f"{column}) differs from the checkpoint's run's label column label (leave out the option, or train "
        "a new run without --resume)"
    )


def test_a_label_column_index_out_of_range_says_the_option_may_not_change(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    csv, part = _trained(capsys, tmp_path)
    message = _refused(capsys, "train", "--resume", str(part), "--epochs", "2", "--label-column", "9")
    assert message == (
        f"--resume {part} continues the run with the checkpoint's settings; --label-column 9 is not the "
        f"checkpoint's run's label column label: unknown label column 9 in {csv} (known: indices 0..2 or "
        "-3..-1) (leave out the option, or train a new run without --resume)"
    )


def test_on_standard_input_the_refusal_names_the_option_as_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    _, part = _trained(capsys, tmp_path)
    done = subprocess.run(  # read once: its header cannot be read again to resolve the index
        [sys.executable, "-m", "torchlean", "train", "--resume", str(part), "--epochs", "2", "--label-column",
         "0", "--dataset", "-"], input=SMALL, capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: standard input (-): line 2, column label: not a number: 'x' (--resume {part} reads the file "
        "with --label-column 0 as given, and the run read the label in the last column, column label: leave "
        "out the option, and resume with the data the run was trained on)\n"
    )


# ------------------------------------------------------------------------------------------- F4


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal, so tqdm draws its bar on it (``disable=None``)."""

    def isatty(self) -> bool:
        return True


def test_the_signal_note_clears_the_progress_bar_first(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    stop = _resume.Stop(active=True)
    stop.arm()
    with tqdm(total=10, desc="epoch 1/6", unit="step", leave=False, disable=None, file=sys.stderr) as bar:
        bar.update(7)
        bar.refresh()
        drawn = terminal.getvalue()
        assert "epoch 1/6" in drawn  # the bar is on the line, as train draws it on a terminal
        stop.handle(signal.SIGINT, None)
        written = terminal.getvalue()[len(drawn):]
    assert stop.requested and capsys.readouterr().out == ""  # stderr only
    note = "note: Ctrl-C: the run stops at the end of this epoch"
    before, found, _ = written.partition(note)
    assert found, written
    # the bar's line was cleared (tqdm's own clear: blanks over it, back to its start) before the note
    assert before == "\r" + " " * len(drawn.rsplit("\r", 1)[-1]) + "\r", repr(before)


# ------------------------------------------------------------------------------------------- F5


def _base_and_extra(tmp_path: Path) -> tuple[Path, Path]:
    """The review's base.csv (a, b, label) and extra.csv: the same columns with an ``id`` first and
    a ``notes`` column last, which the run's reading (the label in the last column) cannot load."""
    base, extra = tmp_path / "base.csv", tmp_path / "extra.csv"
    base.write_text("a,b,label\n" + "".join(f"{i % 3},{i % 5},{'xy'[i % 2]}\n" for i in range(40)))
    extra.write_text("id,a,b,label,notes\n" + "".join(
        f"{i},{i % 3},{i % 5},{'xy'[i % 2]},z\n" for i in range(40)))
    return base, extra


def test_inspect_does_not_suggest_the_label_column_option_it_does_not_take(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    base, extra = _base_and_extra(tmp_path)
    saved, report = tmp_path / "b.npz", tmp_path / "i.json"
    ok(capsys, "--dataset", str(base), "--epochs", "1", "--save", str(saved))
    code, _, err = cli(capsys, "inspect", str(saved), "--dataset", str(extra), "--report-json", str(report))
    error = (f"{extra}: line 2, column label: not a number: 'x' (the checkpoint's run read the label in the "
             "last column, label)")
    assert (code, err) == (0, (
        f"note: {extra} could not be loaded as checkpoint {saved}'s run loaded its data ({error}), so "
        "whether they are its data is unknown\n"
    ))
    record = json.loads(report.read_text())
    assert (record["dataset_error"], record["data_matches"], record["dataset_sha256"]) == (error, None, None)
    # inspect takes no --label-column: the option the old hint named is refused
    assert cli(capsys, "inspect", str(saved), "--dataset", str(extra), "--label-column", "label")[0] == 2


# ------------------------------------------------------------------------------------------- F6


def test_predict_says_unknown_with_a_note_where_inspect_does(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    base, extra = _base_and_extra(tmp_path)
    saved, report, inspected = tmp_path / "b.npz", tmp_path / "p.json", tmp_path / "i.json"
    ok(capsys, "--dataset", str(base), "--epochs", "1", "--save", str(saved))
    code, _, err = cli(capsys, "inspect", str(saved), "--dataset", str(extra), "--report-json",
                       str(inspected))
    assert code == 0, err
    facts = json.loads(inspected.read_text())
    code, _, err = cli(capsys, "predict", str(saved), "--dataset", str(extra), "--output",
                       str(tmp_path / "p.csv"), "--report-json", str(report))
    assert code == 0, err
    record = json.loads(report.read_text())
    assert facts["data_matches"] is None
    assert (record["data_matches_training"], record["data_sha256"]) == (None, None)
    note = (f"note: {extra} could not be loaded as checkpoint {saved}'s run loaded its data "
            f"({facts['dataset_error']}), so whether they are its data is unknown")
    assert note in record["notes"] and note in err.splitlines()
    # the run's own data: still true
    code, _, err = cli(capsys, "predict", str(saved), "--dataset", str(base), "--output",
                       str(tmp_path / "p.csv"), "--report-json", str(report))
    assert code == 0, err
    assert json.loads(report.read_text())["data_matches_training"] is True


# ------------------------------------------------------------------------------------------- F7


@pytest.mark.parametrize(("name", "text", "hint"), [
    ("eu.csv", 'x;"Preis (€, netto)";y\n1.5;2;a\n2.5;3;b\n', "';', not commas: pass --delimiter ';'"),
    ("eu.tsv", 'x\t"a,b"\ty\n1.5\t2\ta\n2.5\t3\tb\n', "tabs, not commas: pass --delimiter tab"),
    ("eu2.csv", 'x;Preis (€, netto);y\n1.5;2;a\n2.5;3;b\n', "';', not commas: pass --delimiter ';'"),
])
def test_a_header_name_with_a_comma_gets_the_delimiter_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, name: str, text: str, hint: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    message = _refused(capsys, "train", "--dataset", str(path))
    assert message == f"{path}: line 2 has 1 cell, expected 2; the file seems to be separated by {hint}"


def test_a_short_comma_row_gets_no_delimiter_hint(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "short.csv"
    path.write_text("a;x,b,y\n1,2,p\n3;4;5,q\n")  # ";" in the header and in line 3, but not as often
    assert _refused(capsys, "train", "--dataset", str(path)) == f"{path}: line 3 has 2 cells, expected 3"


# ------------------------------------------------------------------------------------------- F9


def test_a_text_feature_column_is_told_to_be_numbers_or_the_label(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "cat.csv"
    path.write_text("a,city,b,y\n1,Paris,2,3\n2,Berlin,3,5\n3,Paris,4,3\n")
    assert _refused(capsys, "train", "--dataset", str(path)) == (
        f"{path}: line 2, column city: not a number: 'Paris' (feature columns must be numbers: if city is "
        "categorical, one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass "
        "--label-column city)"
    )


# ------------------------------------------------------------------------------------------- F8


def test_a_recorded_relative_path_is_not_read_from_another_directory_in_silence(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    run, here = tmp_path / "d", tmp_path / "here"
    run.mkdir()
    here.mkdir()
    base, _ = _base_and_extra(tmp_path)
    (run / "cls.csv").write_text(SMALL)
    monkeypatch.chdir(run)
    ok(capsys, "--dataset", "cls.csv", "--epochs", "1", "--save", str(tmp_path / "m.npz"))
    monkeypatch.chdir(here)
    part = "../m.npz"
    resume = ("train", "--resume", part, "--epochs", "2")
    # not here, but in the run's directory: the --dataset to give
    assert _refused(capsys, *resume) == (
        f"dataset file not found: cls.csv (resuming {part}: its run read that relative path in its working "
        f"directory {run}, where the file is: give --dataset {run / 'cls.csv'}; its data must hash as the "
        "run's did)"
    )
    # another file of that name here: not the --dataset the user did not type
    (here / "cls.csv").write_text(base.read_text())
    assert _refused(capsys, *resume) == (
        f"the data of the recorded dataset path cls.csv (read in this directory, {here}; its run read it in "
        f"its working directory {run}, where a file of that name is: to resume with it, give --dataset "
        f"{run / 'cls.csv'}) differ from those the run in {part} trained on ({OTHER_ROWS}): resume with the "
        "data it was trained on"
    )
    # the advice resumes the run
    (here / "cls.csv").unlink()
    ok(capsys, *resume[1:], "--dataset", str(run / "cls.csv"))
    # in neither directory: the run's directory is named all the same
    (run / "cls.csv").rename(run / "moved.csv")
    assert _refused(capsys, *resume) == (
        f"dataset file not found: cls.csv (resuming {part}: its run read that relative path in its working "
        f"directory {run}, where it is not either: if the run's CSV file moved, give --dataset NEW_PATH; its "
        "data must hash as the run's did)"
    )
    # in the run's own directory, the file changed in place: the recorded path, no other directory
    (run / "cls.csv").write_text(base.read_text())
    monkeypatch.chdir(run)
    assert _refused(capsys, "train", "--resume", str(tmp_path / "m.npz"), "--epochs", "2") == (
        f"the data of the recorded dataset path cls.csv differ from those the run in {tmp_path / 'm.npz'} "
        f"trained on ({OTHER_ROWS}): resume with the data it was trained on"
    )
