"""``torchlean train`` / ``predict`` on a user's CSV file (review59 F7, F8, F11-F15): the header and
label column as the run resolved them under ``--resume``, the ``column_N`` names the tool prints
for a headerless file, the file named as typed (standard input as ``-``), the notes predict
repeats from train, the swapped ``predict`` arguments, and predict's ``mse`` equal to train's
``test_mse`` bit for bit.

Oracles: the uninterrupted run (or the same run given the index instead of the name), scikit-learn's
``train_test_split`` (the split's rows and their order), numpy float64 over the predictions CSV,
and messages written out by hand.
"""

from __future__ import annotations

import csv
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_runs import OTHER_TRAINING_ROWS, arrays, cli, metadata, ok
from sklearn.model_selection import train_test_split

from torchlean import data

RUN = ("--epochs", "2", "--hidden", "4")


def _features(rows: int, seed: int) -> np.ndarray:
    return np.random.default_rng(seed).standard_normal((rows, 3))


@pytest.fixture
def intlab(tmp_path: Path) -> Path:
    """40 rows ``a,b,c,y`` with whole-number labels 0, 1, 2: the header is guessed (a text cell)."""
    x = _features(40, 0)
    y = (x[:, 0] > 0).astype(int) + (x[:, 1] > 0)
    path = tmp_path / "intlab.csv"
    rows = zip(x, y, strict=True)
    path.write_text("a,b,c,y\n" + "".join(f"{a:.4f},{b:.4f},{c:.4f},{k}\n" for (a, b, c), k in rows))
    return path


@pytest.fixture
def headerless(tmp_path: Path) -> Path:
    """The same kind of rows without a header, the label (a quantity) first: every row numbers."""
    x = _features(40, 1)
    y = x @ [1.0, 2.0, 3.0]
    path = tmp_path / "nohdr.csv"
    path.write_text("".join(f"{t:.4f},{a:.4f},{b:.4f},{c:.4f}\n" for (a, b, c), t in zip(x, y, strict=True)))
    return path


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
    return err.removeprefix("error: ").rstrip("\n")


def _test_line(lines: list[str]) -> list[str]:
    return [line for line in lines if line.startswith(("test_accuracy=", "test_mse="))]


# --- F7: --header/--no-header under --resume, as the run resolved the header -------------------------


def test_header_repeated_for_a_guessed_header_resumes_as_the_uninterrupted_run(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, intlab: Path
) -> None:
    whole, part, resumed = (tmp_path / name for name in ("whole.npz", "part.npz", "resumed.npz"))
    full = ok(capsys, "--dataset", str(intlab), *RUN, "--epochs", "3", "--save", str(whole))
    ok(capsys, "--dataset", str(intlab), *RUN, "--epochs", "1", "--save", str(part))
    lines = ok(capsys, "--resume", str(part), "--epochs", "3", "--header", "--save", str(resumed))
    assert _test_line(lines) == _test_line(full) and len(_test_line(lines)) == 1
    saved, expected = arrays(resumed), arrays(whole)
    assert saved.keys() == expected.keys()
    assert all(np.array_equal(saved[k], expected[k]) for k in expected if k.startswith("weights/"))
    # the run's setting stays what it was (guessed), as a repeated --lr of the same value leaves it
    assert metadata(resumed)["training"]["settings"]["header"] is None


def test_no_header_for_a_run_that_read_a_header_is_refused_in_words(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, intlab: Path
) -> None:
    part = tmp_path / "part.npz"
    ok(capsys, "--dataset", str(intlab), *RUN, "--epochs", "1", "--save", str(part))
    assert _refused(capsys, "train", "--resume", str(part), "--epochs", "2", "--no-header") == (
        f"--resume {part} continues the run with the checkpoint's settings; --no-header reads the file "
        "without a header, but the checkpoint's run read its first row as a header, as it guessed (leave out "
        "the option, or train a new run without --resume)"
    )
    given = tmp_path / "given.npz"
    ok(capsys, "--dataset", str(intlab), *RUN, "--epochs", "1", "--header", "--save", str(given))
    assert _refused(capsys, "train", "--resume", str(given), "--epochs", "2", "--no-header") == (
        f"--resume {given} continues the run with the checkpoint's settings; --no-header reads the file "
        "without a header, but the checkpoint's run read its first row as a header, given --header (leave "
        "out the option, or train a new run without --resume)"
    )


def test_header_for_a_headerless_run_is_refused_in_words_and_no_header_taken(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, headerless: Path
) -> None:
    given, guessed = tmp_path / "given.npz", tmp_path / "guessed.npz"
    csv_options = ("--label-column", "0", "--task", "regression")
    ok(capsys, "--dataset", str(headerless), *RUN, *csv_options, "--no-header", "--epochs", "1", "--save",
       str(given))
    # guessed: every cell of the first row is a number, so it is data (the guess's note on stderr)
    code, _, err = cli(capsys, "train", "--dataset", str(headerless), *RUN, *csv_options, "--epochs", "1",
                       "--save", str(guessed))
    assert code == 0 and "so it was read as data (no header)" in err
    for path, how in ((given, "given --no-header"), (guessed, "as it guessed")):
        code, out, err = cli(capsys, "train", "--resume", str(path), "--epochs", "2", "--header")
        # the file is read with the run's guess (its note first), then the option compared with it
        guess = [] if path == given else [line for line in err.splitlines() if line.startswith("note: ")]
        assert (code, out, err.splitlines()) == (2, "", [*guess, (
            f"error: --resume {path} continues the run with the checkpoint's settings; --header reads its "
            f"first row as a header, but the checkpoint's run read the file without a header, {how} (leave "
            "out the option, or train a new run without --resume)"
        )])
        assert len(guess) == (path == guessed)
        # review107 F5: the guess's way out is for a new run, as the refusal says
        assert all(line.endswith("so it was read as data (no header); --resume reads the file as the "
                                 "checkpoint's run did: train a new run and pass --header if it names the "
                                 "columns") for line in guess), guess
    lines = ok(capsys, "--resume", str(given), "--epochs", "2", "--no-header")
    assert lines[2].startswith(f"resumed_from={given} epochs_before=1 ")
    code, out, _ = cli(capsys, "train", "--resume", str(guessed), "--epochs", "2", "--no-header")
    assert code == 0 and f"resumed_from={guessed} epochs_before=1 " in out


# --- F8: the column_N names of a headerless file are label columns ----------------------------------


def test_column_n_names_index_n_in_train_resume_and_predict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, headerless: Path
) -> None:
    by_index, by_name = tmp_path / "index.npz", tmp_path / "name.npz"
    csv_options = ("--no-header", "--task", "regression")
    ok(capsys, "--dataset", str(headerless), *RUN, *csv_options, "--label-column", "0", "--save",
       str(by_index))
    ok(capsys, "--dataset", str(headerless), *RUN, *csv_options, "--label-column", "column_0", "--save",
       str(by_name))
    got, want = arrays(by_name), arrays(by_index)
    assert got.keys() == want.keys() and all(np.array_equal(got[k], want[k]) for k in want)
    assert metadata(by_name)["label_column"] == "column_0" == metadata(by_index)["label_column"]
    # the name the checkpoint records, given back to resume (and another one refused naming both)
    lines = ok(capsys, "--resume", str(by_index), "--epochs", "3", "--label-column", "column_0")
    assert lines[2].startswith(f"resumed_from={by_index} epochs_before=2 ")
    assert _refused(capsys, "train", "--resume", str(by_index), "--epochs", "3", "--label-column",
                    "column_3") == (
        f"--resume {by_index} continues the run with the checkpoint's settings; --label-column column_3 "
        "differs from the checkpoint's run's label column column_0 (leave out the option, or train a new run "
        "without --resume)"
    )
    # predict: by name as by index
    reports = []
    for column in ("0", "column_0"):
        code, out, err = cli(capsys, "predict", str(by_index), "--dataset", str(headerless), "--no-header",
                             "--label-column", column, "--output", str(tmp_path / f"p{column}.csv"))
        assert (code, err) == (0, ""), err
        reports.append([line for line in out.splitlines() if line.startswith("mse=")])
    assert reports[0] == reports[1] and len(reports[0]) == 1
    assert (tmp_path / "p0.csv").read_text() == (tmp_path / "pcolumn_0.csv").read_text()


def test_an_unknown_column_n_is_refused_naming_the_names(
    capsys: pytest.CaptureFixture[str], headerless: Path
) -> None:
    given = ("--dataset", str(headerless), "--no-header", "--label-column", "column_4")
    assert _refused(capsys, "train", *given) == (
        f"unknown label column column_4 in {headerless} (known: indices 0..3 or their names "
        "column_0..column_3 (the file has no header))"
    )
    # a file with a header has its own names: column_0 is no name of it
    header = headerless.parent / "named.csv"
    header.write_text("t,a,b,c\n" + headerless.read_text())
    with pytest.raises(data.UnknownLabelError) as info:
        data.load(header, label_column="column_0")
    assert str(info.value) == f"unknown label column column_0 in {header} (known: t | a | b | c)"
    assert data.load(headerless, header=False, label_column="column_2", task="regression").label_name == (
        "column_2"
    )


# --- F11: the file as typed; standard input as - ------------------------------------------------------


def test_a_path_is_named_as_typed(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    assert _refused(capsys, "train", "--dataset", "./iris") == "dataset file not found: ./iris"
    assert _refused(capsys, "train", "--dataset", "./sub/../iris.csv") == (
        "dataset file not found: ./sub/../iris.csv"
    )
    Path("bad.csv").write_text("a,b,y\n1,x,0\n2,3,1\n")
    assert _refused(capsys, "train", "--dataset", "./bad.csv") == (
        "./bad.csv: line 2, column b: not a number: 'x'"
    )


def test_a_missing_path_with_blanks_at_an_end_is_quoted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review110 F5: ``dataset file not found: ok.csv `` hid the blank, reading as a false refusal
    of the file ``ok.csv``; such a name is quoted, with the blank named, and the file without it
    when there is one (a checkpoint too)."""
    monkeypatch.chdir(tmp_path)
    Path("ok.csv").write_text("a,y\n1,0\n2,1\n")
    Path("m.npz").write_bytes(b"")
    assert _refused(capsys, "train", "--dataset", "ok.csv ") == (
        "dataset file not found: 'ok.csv ' (its name ends with a blank; ok.csv exists)"
    )
    assert _refused(capsys, "train", "--dataset", "\tgone.csv") == (
        "dataset file not found: $'\\tgone.csv' (its name starts with a blank)"
    )
    assert _refused(capsys, "train", "--dataset", " ok.csv ") == (
        "dataset file not found: ' ok.csv ' (its name starts and ends with a blank; ok.csv exists)"
    )
    assert _refused(capsys, "train", "--dataset", "ok.csv/ ") == (  # review113 F10: ok.csv/ is no file
        "dataset file not found: 'ok.csv/ ' (its name ends with a blank)"
    )
    assert _refused(capsys, "predict", "m.npz ", "--dataset", "ok.csv") == (
        "checkpoint file not found: 'm.npz ' (its name ends with a blank; m.npz exists)"
    )


def _torchlean(*argv: str, stdin: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    return subprocess.run([sys.executable, "-m", "torchlean", *argv], input=stdin, capture_output=True,
                          text=True, env=env, cwd=cwd, check=False, timeout=600)


def test_standard_input_is_named_dash(tmp_path: Path, intlab: Path) -> None:
    empty = _torchlean("train", "--dataset", "-", stdin="", cwd=tmp_path)
    assert (empty.returncode, empty.stdout, empty.stderr) == (
        2, "", "error: standard input (-): the file has no rows\n"
    )
    bad = _torchlean("train", "--dataset", "-", stdin="a,b,y\n1,x,0\n2,3,1\n", cwd=tmp_path)
    assert bad.stderr == "error: standard input (-): line 2, column b: not a number: 'x'\n"
    model = tmp_path / "m.npz"
    trained = _torchlean("train", "--dataset", "-", *RUN, "--save", str(model), stdin=intlab.read_text(),
                         cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    assert trained.stdout.startswith("dataset=- train=32 test=8 ")
    predicted = _torchlean("predict", str(model), "--dataset", "-", "--output", str(tmp_path / "p.csv"),
                           "--report-json", "-", stdin=intlab.read_text(), cwd=tmp_path)
    assert predicted.returncode == 0, predicted.stderr
    assert json.loads(predicted.stdout)["dataset"] == "-"
    assert predicted.stderr.splitlines()[0].endswith(" trained_on=- trained_under=checked_cpu")
    assert predicted.stderr.splitlines()[1].startswith("dataset=- rows=40 ")


def test_predict_compares_standard_input_with_the_training_data_as_resume_does(
    tmp_path: Path, intlab: Path
) -> None:
    """review63 F3: standard input is read once, but its digest is still compared (no note that it
    cannot be checked); the verdict is resume's, and the digest is that of the same bytes as a file."""
    from torchlean import provenance

    model, record = tmp_path / "m.npz", tmp_path / "r.json"
    trained = _torchlean("train", "--dataset", "-", *RUN, "--save", str(model), stdin=intlab.read_text(),
                         cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    oracle = provenance.data_sha256(data.load(intlab))  # the same bytes read from a file
    edited = intlab.read_text() + "0.5,0.5,0.5,1\n"
    for text, same in ((intlab.read_text(), True), (edited, False)):
        predicted = _torchlean("predict", str(model), "--dataset", "-", "--split", "test", "--output",
                               str(tmp_path / "p.csv"), "--report-json", str(record), stdin=text,
                               cwd=tmp_path)
        assert predicted.returncode == 0, predicted.stderr
        facts = json.loads(record.read_text())
        assert facts["data_matches_training"] is same
        assert facts["trained_data_sha256"] == oracle
        assert (facts["data_sha256"] == oracle) is same
        assert "cannot be checked" not in predicted.stderr
        notes = [line for line in predicted.stderr.splitlines() if line.startswith("note: ")]
        assert len(notes) == (0 if same else 1)
        assert same or re.fullmatch(  # review188 F2: how they differ (the values as this machine sums)
            re.escape(f"note: the data of standard input (-) differ from those checkpoint {model}'s run "
                      "trained on (their digest differs; ")
            + OTHER_TRAINING_ROWS
            + re.escape("): --split test takes the test rows of the split torchlean train would make of them "
                        "now, which may include rows the model trained on"), notes[0]), notes
        resumed = _torchlean("train", "--resume", str(model), "--dataset", "-", "--epochs", "3", stdin=text,
                             cwd=tmp_path)  # resume's own check agrees
        assert (resumed.returncode == 0) is same, resumed.stderr
    inspected = _torchlean("inspect", str(model), "--dataset", "-", stdin=intlab.read_text(), cwd=tmp_path)
    assert inspected.stdout.splitlines()[-2:] == [f"dataset_sha256: {oracle} (-)", "data_matches: yes"]


# --- F12: predict --split test repeats train's note on a class without a test row ---------------------


def test_predict_split_test_repeats_the_note_on_an_untested_class(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    labels = ["a"] * 99 + ["b"] * 99 + ["rare"] * 2
    np.random.default_rng(0).shuffle(labels)
    x = np.random.default_rng(1).standard_normal((200, 2))
    path = tmp_path / "rare.csv"
    rows = zip(x, labels, strict=True)
    path.write_text("p,q,y\n" + "".join(f"{a:.4f},{b:.4f},{y}\n" for (a, b), y in rows))
    _, test = train_test_split(np.array(labels), test_size=0.2, random_state=0, stratify=np.array(labels))
    assert "rare" not in set(test)  # the premise, by scikit-learn's own split
    note = ("note: the train/test split leaves class rare (2 samples) without a test row, so the "
            "test metric does not measure it (more samples would)\n")
    model = tmp_path / "rare.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(path), *RUN, "--save", str(model))
    assert (code, err) == (0, note)
    code, out, err = cli(capsys, "predict", str(model), "--dataset", str(path), "--split", "test", "--output",
                         str(tmp_path / "t.csv"))
    assert (code, err) == (0, note) and "accuracy=" in out
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(path), "--split", "train", "--output",
                       str(tmp_path / "tr.csv"))
    assert (code, err) == (0, "")  # the train rows hold the class: no test metric is short of it


# --- F13: --header on a first row of numbers that looks like data --------------------------------------


def test_header_on_an_all_numbers_first_row_is_noted_in_train_and_predict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, headerless: Path
) -> None:
    first = headerless.read_text().splitlines()[0]
    note = (f"note: {headerless}: first row {first} was read as a header though its cells are all numbers, "
            "so they name the columns and the row is not read as data; pass --no-header if it is a data "
            "row\n")
    model = tmp_path / "h.npz"
    code, out, err = cli(capsys, "train", "--dataset", str(headerless), *RUN, "--header", "--label-column",
                         "0", "--task", "regression", "--save", str(model))
    assert (code, err) == (0, note)
    assert out.startswith("dataset=") and " train=31 test=8 " in out  # 39 data rows: the first is the header
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(headerless), "--header", "--output",
                       str(tmp_path / "p.csv"))
    assert (code, err) == (0, note)
    # without --header, the run's --header reads the row as names: one note, not two (review63 F7)
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(headerless), "--output",
                       str(tmp_path / "p.csv"))
    assert (code, err) == (0, note.replace("\n", f" (read so as checkpoint {model}'s run read its data: "
                                                 "--header)\n"))
    # the column positions 0,1,... are pandas' header: no note (and none under --no-header)
    positions = tmp_path / "positions.csv"
    positions.write_text("0,1,2,3\n" + "\n".join(headerless.read_text().splitlines()[1:]) + "\n")
    assert data.load(positions, header=True, task="regression").header_note == ""
    assert data.load(headerless, header=False, task="regression").header_note == ""


# --- F14: predict DATA --dataset CHECKPOINT ------------------------------------------------------------


def test_swapped_predict_arguments_name_the_order(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, intlab: Path
) -> None:
    model = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(intlab), *RUN, "--save", str(model))
    assert _refused(capsys, "predict", str(intlab), "--dataset", str(model)) == (
        f"{intlab}: not a numpy .npz archive (not a zip file), and --dataset {model} is a checkpoint: "
        f"swapped? the order is predict CHECKPOINT --dataset DATA (torchlean predict {model} --dataset "
        f"{intlab})"
    )
    # a --dataset that is no checkpoint: the CHECKPOINT argument named a CSV file (review63 F5)
    assert _refused(capsys, "predict", str(intlab), "--dataset", str(intlab)) == (
        f"{intlab}: not a numpy .npz archive (not a zip file): CHECKPOINT {intlab} is a CSV text file, not a "
        "checkpoint (the order is predict CHECKPOINT --dataset DATA, CHECKPOINT a file written by torchlean "
        "train --save)"
    )
    # a CHECKPOINT that is neither: the reader's own error; one that does not exist: the same
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)))
    assert _refused(capsys, "predict", str(binary), "--dataset", str(intlab)) == (
        f"{binary}: not a numpy .npz archive (not a zip file)"
    )
    missing = tmp_path / "missing.npz"
    assert _refused(capsys, "predict", str(missing), "--dataset", str(model)) == (
        f"checkpoint file not found: {missing}"
    )


def test_a_csv_file_given_as_the_checkpoint_is_named_by_inspect_and_resume_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, intlab: Path
) -> None:
    """review115 F6: ``train --resume DATA.csv`` and ``inspect DATA.csv`` gave the reader's error
    alone (``not a numpy .npz archive (not a zip file)``); they say what the file is, as predict
    does, and what the command takes there. A file that is neither gets the reader's error."""
    reader = f"{intlab}: not a numpy .npz archive (not a zip file)"
    assert _refused(capsys, "train", "--resume", str(intlab)) == (
        f"{reader}: --resume {intlab} is a CSV text file, not a checkpoint (--resume takes the checkpoint a "
        "run's --save wrote; the data go in --dataset DATA)"
    )
    assert _refused(capsys, "train", "--dataset", str(intlab), "--resume", str(intlab), "--epochs", "2") == (
        f"{reader}: --resume {intlab} is a CSV text file, not a checkpoint (--resume takes the checkpoint a "
        "run's --save wrote; the data go in --dataset DATA)"
    )
    for extra in ((), ("--dataset", str(intlab))):
        assert _refused(capsys, "inspect", str(intlab), *extra) == (
            f"{reader}: CHECKPOINT {intlab} is a CSV text file, not a checkpoint (the order is inspect "
            "CHECKPOINT [--dataset DATA], CHECKPOINT a file written by torchlean train --save)"
        )
    binary = tmp_path / "binary.bin"
    binary.write_bytes(bytes(range(256)))
    for argv in (("train", "--resume", str(binary)), ("inspect", str(binary))):
        assert _refused(capsys, *argv) == f"{binary}: not a numpy .npz archive (not a zip file)"


def test_the_swapped_arguments_hint_keeps_the_other_options(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, intlab: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review63 F5: the command to run is the one typed with the two swapped, every other word kept
    and shell-quoted; ``predict - --dataset CKPT`` gets the hint too."""
    import shlex

    monkeypatch.chdir(tmp_path)
    ok(capsys, "--dataset", str(intlab), *RUN, "--save", "m.npz")
    (tmp_path / "my data.csv").write_text(intlab.read_text())
    argv = ("predict", "my data.csv", "--split", "test", "--dataset=m.npz", "--output", "o u.csv",
            "--label-column", "y")
    message = _refused(capsys, *argv)
    command = message.rsplit(" (", 1)[1].removesuffix(")")
    assert shlex.split(command) == ["torchlean", "predict", "m.npz", "--split", "test",
                                    "--dataset=my data.csv", "--output", "o u.csv", "--label-column", "y"]
    # the command given works, and writes what the options say
    code, out, err = cli(capsys, *shlex.split(command)[1:])
    assert code == 0 and out.splitlines()[1].startswith("dataset='my data.csv' rows=8 split=test "), err
    assert (tmp_path / "o u.csv").read_text().startswith("row,prediction\n")
    message = _refused(capsys, "predict", "my data.csv", "--data", "m.npz", "--split", "train")
    assert message.endswith("(torchlean predict m.npz --data 'my data.csv' --split train)")
    # standard input as CHECKPOINT: the plain refusal, and the swap named when --dataset is a checkpoint
    refusal = ("argument CHECKPOINT: expected a file path, got '-' (standard input and output are not "
               "accepted here; a file named - is ./-)")
    assert _refused(capsys, "predict", "-", "--dataset", "my data.csv") == refusal
    assert _refused(capsys, "predict", "-", "--dataset", "m.npz", "--split", "test") == (
        f"{refusal}, and --dataset m.npz is a checkpoint: swapped? the order is predict CHECKPOINT --dataset "
        "DATA (torchlean predict m.npz --dataset - --split test)"
    )
    assert _refused(capsys, "train", "--dataset", "iris", "--save", "-") == (
        "argument --save: expected a file path, got '-' (standard input and output are not accepted here; a "
        "file named - is ./-)"
    )


# --- F15: predict's mse is train's test_mse, bit for bit ------------------------------------------------


def test_predict_split_test_mse_is_train_test_mse_bit_for_bit(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rng = np.random.default_rng(1)  # the review's kind of data: large targets, 120 rows
    x = rng.standard_normal((120, 3))
    y = (x @ [1.0, 2.0, 3.0]) * 1e5 + 3e5 * rng.standard_normal(120)
    path = tmp_path / "rt.csv"
    path.write_text("a,b,c,y\n" + "".join(f"{a!r},{b!r},{c!r},{t!r}\n" for (a, b, c), t in zip(
        x.tolist(), y.tolist(), strict=True)))
    model, record, report, out = (tmp_path / name for name in ("m.npz", "r.json", "p.json", "p.csv"))
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--hidden", "8", "--save",
                       str(model), "--report-json", str(record))
    assert (code, err) == (0, ""), err
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(path), "--split", "test", "--output",
                       str(out), "--report-json", str(report))
    assert (code, err) == (0, ""), err
    test_mse, mse = json.loads(record.read_text())["test_mse"], json.loads(report.read_text())["mse"]
    # the oracle: numpy over the predictions CSV, in the split's row order (train's x_test order)
    with out.open(newline="") as handle:
        predicted = {int(r["row"]): float(r["prediction"]) for r in csv.DictReader(handle)}
    _, test_rows = train_test_split(np.arange(120), test_size=0.2, random_state=0)
    in_order = np.array([predicted[r] for r in test_rows]) - y[test_rows]
    ascending = np.array([predicted[r] for r in sorted(test_rows)]) - y[sorted(test_rows)]
    assert float(np.mean(ascending**2)) != float(np.mean(in_order**2))  # the premise: order shows in the bits
    assert mse == test_mse == float(np.mean(in_order**2))


def test_predict_split_test_mse_is_train_test_mse_under_fast_cpu(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # review159 F1: under fast_cpu a row's output can depend on its batch and place in it, so predict
    # forwards the split's rows in the split's order (train's x_test's), not in file order
    model, record, report, out = (tmp_path / name for name in ("m.npz", "r.json", "p.json", "p.csv"))
    code, _, err = cli(capsys, "train", "--dataset", "diabetes", "--profile", "fast_cpu", "--epochs", "3",
                       "--save", str(model), "--report-json", str(record))
    assert (code, err) == (0, ""), err
    code, _, err = cli(capsys, "predict", str(model), "--dataset", "diabetes", "--split", "test", "--output",
                       str(out), "--report-json", str(report))
    assert (code, err) == (0, ""), err
    assert json.loads(report.read_text())["mse"] == json.loads(record.read_text())["test_mse"]
    with out.open(newline="") as handle:
        rows = [int(r["row"]) for r in csv.DictReader(handle)]
    assert rows == sorted(rows) and len(rows) == 89  # the output still lists the rows in file order


# --- review63 F1: a header name column_N is no index of a headerless file ----------------------------


def _column_mse(predictions: Path, targets: np.ndarray) -> float:
    """The oracle: numpy float64 MSE of the predictions CSV against ``targets`` (in row order)."""
    with predictions.open(newline="") as handle:
        predicted = np.array([float(row["prediction"]) for row in csv.DictReader(handle)])
    return float(np.mean((predicted - targets) ** 2))


def test_a_header_name_column_n_is_not_index_n_of_a_headerless_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    rng = np.random.default_rng(3)  # the review's regc.csv: header a,b,column_0,c, the target at index 2
    x = rng.standard_normal((60, 3))
    target = x @ [1.0, -2.0, 0.5] + 40.0  # far from every feature, so a feature taken as it shows
    table = np.column_stack([x[:, 0], x[:, 1], target, x[:, 2]])
    body = "".join(",".join(f"{v:.6f}" for v in row) + "\n" for row in table)
    named, bare = tmp_path / "regc.csv", tmp_path / "regc_nohdr.csv"
    named.write_text("a,b,column_0,c\n" + body)
    bare.write_text(body)
    cells = np.array([[float(f"{v:.6f}") for v in row] for row in table])  # the values as written
    model, record = tmp_path / "mrc.npz", tmp_path / "r.json"
    code, _, err = cli(capsys, "train", "--dataset", str(named), "--label-column", "column_0", *RUN,
                       "--save", str(model), "--report-json", str(record))
    assert (code, err) == (0, ""), err
    assert metadata(model)["label_column"] == "column_0"
    out_csv = tmp_path / "p.csv"
    code, out, err = cli(capsys, "predict", str(model), "--dataset", str(bare), "--output", str(out_csv))
    assert code == 0, err
    # the README's rule: no header names column_0 here, so the last column is the label, with a note
    assert (f"note: {bare}: it has no header to name checkpoint {model}'s label column column_0 (a header "
            "name of the file its run read, not index 0), so the last column (column_3) was taken as the "
            "label; --label-column INDEX names another (--ignore-labels reads none)") in err.splitlines()
    mse = float(next(line for line in out.splitlines() if line.startswith("mse=")).split("=")[1])
    oracle = _column_mse(out_csv, cells[:, 3])
    assert mse == pytest.approx(oracle, rel=1e-4, abs=1e-4)  # mse= prints 4 decimals
    assert abs(_column_mse(out_csv, cells[:, 0]) - oracle) > 1.0  # the premise: index 0 scores otherwise
    # the true target named by index: train's test_mse on --split test, bit for bit, and the oracle
    report = tmp_path / "p.json"
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(bare), "--label-column", "2",
                       "--split", "test", "--output", str(out_csv), "--report-json", str(report))
    assert code == 0 and "taken as the label" not in err, err
    got = json.loads(report.read_text())["mse"]
    assert got == json.loads(record.read_text())["test_mse"]
    _, test_rows = train_test_split(np.arange(60), test_size=0.2, random_state=0)
    assert got == pytest.approx(_column_mse(out_csv, cells[sorted(test_rows), 2]), rel=1e-12)
    # a classifier: the class label column_0 is not taken from column 0 (a feature's cells)
    classes = (target > 40.0).astype(int)
    labelled = np.column_stack([x[:, 0], x[:, 1], classes, x[:, 2]])
    collide, collide_bare = tmp_path / "collide.csv", tmp_path / "collide_nohdr.csv"
    rows = "".join(f"{a:.6f},{b:.6f},{int(k)},{c:.6f}\n" for a, b, k, c in labelled)
    collide.write_text("a,b,column_0,c\n" + rows)
    collide_bare.write_text(rows)
    classifier = tmp_path / "mc.npz"
    ok(capsys, "--dataset", str(collide), "--label-column", "column_0", *RUN, "--save", str(classifier))
    code, out, err = cli(capsys, "predict", str(classifier), "--dataset", str(collide_bare), "--label-column",
                         "2", "--output", str(out_csv))
    assert code == 0 and "accuracy=" in out, err


def test_a_headerless_file_for_a_run_given_its_label_column_says_the_last_column_was_taken(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review194 F7: a run of header y,a,b given --label-column y read its label first; the same
    rows without a header take the last column as the label (the README's rule), and said nothing
    of it, so the refusal's --ignore-labels advice led to predictions from y and a. A note names the
    rule and --label-column INDEX; a run not given its label column, or given the last column's
    index, has none."""
    rows = "".join(f"{i % 3},{i / 10:g},{(i * 7) % 11 / 10:g}\n" for i in range(60))
    first, bare = tmp_path / "first.csv", tmp_path / "bare.csv"
    first.write_text("y,a,b\n" + rows)
    bare.write_text(rows)
    model = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(first), "--label-column", "y", *RUN, "--save", str(model))
    note = (f"note: {bare}: it has no header to name checkpoint {model}'s label column y, so the last "
            "column (column_2) was taken as the label; --label-column INDEX names another (--ignore-labels "
            "reads none)")
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(bare), "--no-header")
    assert code == 2 and note in err.splitlines(), err  # column_2's cells are no class labels
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(bare), "--no-header",
                       "--label-column", "0")
    assert code == 0 and "accuracy=" in err and "taken as the label" not in err, err
    last = tmp_path / "last.csv"
    last.write_text("a,b,y\n" + "".join(f"{i / 10:g},{(i * 7) % 11 / 10:g},{i % 3}\n" for i in range(60)))
    bare.write_text(last.read_text().split("\n", 1)[1])
    for given in ((), ("--label-column", "2"), ("--label-column", "-1")):  # the label last (review200 F8)
        ok(capsys, "--dataset", str(last), *given, *RUN, "--save", str(model))
        code, _, err = cli(capsys, "predict", str(model), "--dataset", str(bare), "--no-header")
        assert code == 0 and "accuracy=" in err and "note:" not in err, err


def test_a_headerless_run_s_column_n_stays_index_n_by_default(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, headerless: Path
) -> None:
    model = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(headerless), *RUN, "--task", "regression",
                       "--label-column", "0", "--save", str(model))
    assert code == 0 and "so it was read as data (no header)" in err, err  # guessed: column_0 is index 0
    assert metadata(model)["training"]["settings"]["header"] is None
    assert metadata(model)["feature_names"] == ["column_1", "column_2", "column_3"]
    reports = []
    for given in ((), ("--label-column", "0")):
        out_csv = tmp_path / f"p{len(given)}.csv"
        code, out, err = cli(capsys, "predict", str(model), "--dataset", str(headerless), *given, "--output",
                             str(out_csv))
        assert code == 0 and "taken as the label" not in err, err
        reports.append([line for line in out.splitlines() if line.startswith("mse=")])
    assert reports[0] == reports[1] and len(reports[0]) == 1


def test_a_resume_on_other_standard_input_is_refused_before_any_note_about_those_data(
    tmp_path: Path, intlab: Path
) -> None:
    """review103 F9: the refusal came after the notes the other data drew (there Excel's ``sep=``
    line and a trailing delimiter), which spoke of data the run would never train on."""
    model = tmp_path / "m.npz"
    trained = _torchlean("train", "--dataset", "-", *RUN, "--save", str(model), stdin=intlab.read_text(),
                         cwd=tmp_path)
    assert trained.returncode == 0, trained.stderr
    header, *rows = intlab.read_text().splitlines()
    other = "sep=,\n" + "\n".join(f"{line}," for line in [header, *rows[::-1]]) + "\n"
    noted = _torchlean("train", "--dataset", "-", *RUN, stdin=other, cwd=tmp_path)
    assert noted.returncode == 0 and noted.stderr.count("note: ") == 2, noted.stderr  # the notes it draws
    resumed = _torchlean("train", "--resume", str(model), "--epochs", "3", stdin=other, cwd=tmp_path)
    assert resumed.returncode == 2
    reading, refusal = resumed.stderr.splitlines()  # the note on the resume itself, then the refusal
    assert reading.startswith(f"note: checkpoint {model}'s run read its data from standard input (-): ")
    assert refusal.startswith("error: the data of standard input (-) differ from those the run in ")


def test_predict_says_the_guessed_header_once_beside_an_unknown_label_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review200 F6: predict printed the header note as a ``note:`` line, and the refusal of an
    unknown label column repeated it."""
    rows = "".join(f"{i},{i + 1},{'xz'[i % 2]}\n" for i in range(1, 41))
    guessed = tmp_path / "g.csv"
    guessed.write_text(rows)
    model = tmp_path / "g.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(guessed), *RUN, "--save", str(model))
    assert code == 0 and err.count("was read as a header") == 1, err
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(guessed), "--label-column", "column_2")
    assert code == 2 and err.count("was read as a header") == 1, err
    assert err.splitlines()[-1] == f"error: unknown label column column_2 in {guessed} (known: 1 | 2 | z)"


def test_a_guessed_header_of_numbers_in_every_feature_column_is_said_maybe_data(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review205 F1: a headerless copy of a run's file (text labels) loses its first row to the
    header guess, and the note that its "header" names none of the features did not say that its
    feature cells are all numbers, as a data row's; it names --no-header. A header of words does
    not get the clause."""
    rows = [f"{i / 10:g},{(i * 7) % 11 / 10:g},{'high' if i % 2 else 'low'}" for i in range(40)]
    named, bare = tmp_path / "own.csv", tmp_path / "bare.csv"
    named.write_text("a,b,y\n" + "\n".join(rows) + "\n")
    bare.write_text("\n".join(rows) + "\n")
    model = tmp_path / "own.npz"
    ok(capsys, "--dataset", str(named), *RUN, "--save", str(model))
    out_csv = str(tmp_path / "p.csv")
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(bare), "--output", out_csv)
    note = next(line for line in err.splitlines() if line.startswith("note: matched "))
    assert code == 0
    assert note.endswith("; its feature cells are all numbers: if it is a data row, pass --no-header")
    words = tmp_path / "words.csv"
    words.write_text("p,q,y\n" + "\n".join(rows) + "\n")
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(words), "--output", out_csv)
    note = next(line for line in err.splitlines() if line.startswith("note: matched "))
    assert code == 0 and note.endswith("features (a, b)"), note
