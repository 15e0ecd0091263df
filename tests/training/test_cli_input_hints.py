"""Hints on input that points the wrong way (review56 F8): a binary file given as ``--dataset``
(a ``.npz`` checkpoint is a zip: not UTF-16 advice), ``--no-header`` on a file whose first line
is a header, and constant columns (a note; scale 1 as scikit-learn's ``StandardScaler``)."""

from __future__ import annotations

import bz2
import gzip
import json
import lzma
import os
import pty
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli
from sklearn.preprocessing import StandardScaler

from torchlean import data


def _rows(n: int = 60) -> list[tuple[float, float, int]]:
    rng = np.random.default_rng(8)
    return [(float(a), float(b), int(a > 0)) for a, b in rng.standard_normal((n, 2))]


def test_a_checkpoint_given_as_the_dataset_says_it_is_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    csv_path, model = tmp_path / "t.csv", tmp_path / "m.npz"
    csv_path.write_text("a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows()))
    code, _, err = cli(capsys, "train", "--dataset", str(csv_path), "--epochs", "1", "--hidden", "4",
                       "--save", str(model))
    assert code == 0, err
    assert model.read_bytes()[:4] == b"PK\x03\x04"  # the premise: numpy's .npz is a zip
    code, out, err = cli(capsys, "train", "--dataset", str(model))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {model}: the file looks like a binary file, a zip archive (a .npz checkpoint that torchlean "
        "train --save writes, or an Excel .xlsx workbook), not CSV text: a checkpoint is read by torchlean "
        "predict CHECKPOINT --dataset DATA; save a workbook as \"CSV UTF-8\"\n"
    )
    assert "UTF-16" not in err
    packed = tmp_path / "t.csv.gz"
    packed.write_bytes(gzip.compress(csv_path.read_bytes()))
    with pytest.raises(data.DataError, match=r"looks like a binary file, gzip-compressed, not CSV text"):
        data.load(packed)
    # a file that is UTF-16 without a byte-order mark keeps its advice
    utf16 = tmp_path / "u.csv"
    utf16.write_bytes("a,b,y\n1,2,0\n".encode("utf-16-le") + "é".encode("utf-16-le") + b"\xff\xfe\xf0")
    with pytest.raises(data.DataError, match="UTF-16"):
        data.load(utf16)


def test_no_header_on_a_file_with_a_header_says_line_1_looks_like_one(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,label\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows()))
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--no-header")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: line 1, column column_0: not a number: 'a'; line 1 looks like a header (the rows "
        "after it are numbers in these columns): pass --header, or leave out --no-header: the default reads "
        "such a first line as the header\n"
    )
    with pytest.raises(data.DataError, match=r"pass header=True or None \(CLI: --header, or leave out"):
        data.load(path, header=False)
    # a text cell in a data row further down is no header: no such hint
    bad = tmp_path / "bad.csv"
    bad.write_text("1,2,0\nx,3,1\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows()))
    with pytest.raises(data.DataError) as info:
        data.load(bad, header=False)
    assert str(info.value) == f"{bad}: line 2, column column_0: not a number: 'x'"


def test_constant_columns_get_a_note(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rows = _rows()
    path = tmp_path / "k.csv"
    path.write_text("a,k,b,y\n" + "".join(f"{a},7.0,{b},{y}\n" for a, b, y in rows))
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--hidden", "4")
    assert code == 0
    assert err == (
        f"note: {path}: column k is constant in the rows trained on, so it carries no information (scaled "
        "with scale 1, as scikit-learn's StandardScaler scales a zero-variance column)\n"
    )
    loaded = data.load(path)
    oracle = StandardScaler().fit(np.array([[a, 7.0, b] for a, b, _ in rows]))
    assert oracle.scale_[1] == 1.0 and loaded.feature_scale[1] == 1.0
    # a constant regression target, with a constant feature: both named
    target = tmp_path / "y.csv"
    target.write_text("a,k,y\n" + "".join(f"{a},7.0,3.5\n" for a, _, _ in rows))
    code, _, err = cli(capsys, "train", "--dataset", str(target), "--task", "regression", "--epochs", "1",
                       "--hidden", "4")
    assert code == 0
    assert err == (
        f"note: {target}: columns k, y (the target) are constant in the rows trained on, so they carry no "
        "information (scaled with scale 1, as scikit-learn's StandardScaler scales a zero-variance column)\n"
    )
    assert data.load(target, task="regression").target_statistics() == (3.5, 1.0)
    # nothing constant: no note; shipped data keep theirs out of the notes (digits' blank pixels)
    plain = tmp_path / "p.csv"
    plain.write_text("a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in rows))
    assert data.load(plain).notes == () and data.load(plain).constant_note == ""
    digits = data.load("digits")
    assert digits.notes == () and digits.constant_note.startswith("digits: columns ")


def _csv_text() -> str:
    return "a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows())


@pytest.mark.parametrize(("suffix", "pack", "what", "advice"), [
    (".bz2", bz2.compress, "bzip2-compressed", "bunzip2 -k FILE"),
    (".xz", lzma.compress, "xz-compressed", "unxz -k FILE"),
])
def test_bzip2_and_xz_files_are_named_by_their_first_bytes(
    tmp_path: Path, suffix: str, pack: Callable[[bytes], bytes], what: str, advice: str
) -> None:
    """review115 F5: named as gzip is, with the command that decompresses them (an empty file
    packed too: bzip2's end-of-stream magic)."""
    for text in (_csv_text(), ""):
        path = tmp_path / f"t.csv{suffix}"
        path.write_bytes(pack(text.encode()))
        with pytest.raises(data.DataError) as info:
            data.load(path)
        assert str(info.value) == (
            f"{path}: the file looks like a binary file, {what}, not CSV text: decompress it first "
            f"({advice})"
        )


def test_json_files_are_named_with_the_pandas_line_that_converts_them(tmp_path: Path) -> None:
    """review115 F5: a JSON array of records, indented or not, a JSON object of columns, and JSON
    Lines (one object a line) were read as CSV text ('no data rows', '1 column', 'not a number')."""
    records = [{"a": a, "b": b, "y": y} for a, b, y in _rows()]
    columns = {key: [record[key] for record in records] for key in ("a", "b", "y")}
    convert = (
        "torchlean reads CSV; convert it, e.g. with pandas: pandas.read_json(FILE{}).to_csv(NEW_FILE, "
        "index=False)"
    )
    cases = [
        (json.dumps(records), "JSON", "[{", ""),
        (json.dumps(records, indent=2), "JSON", "[{", ""),
        ("\ufeff" + json.dumps(columns), "JSON", '{"', ""),
        (json.dumps(columns, indent=1), "JSON", '{"', ""),
        ("".join(json.dumps(record) + "\n" for record in records), "JSON Lines (a JSON object a line)", '{"',
         ", lines=True"),
    ]
    for text, what, start, lines in cases:
        path = tmp_path / "t.json"
        path.write_bytes(text.encode())
        with pytest.raises(data.DataError) as info:
            data.load(path)
        assert str(info.value) == (
            f"{path}: the file looks like {what}, not CSV text (it starts with {start!r}): "
            f"{convert.format(lines)}"
        )
    # a CSV file whose first name holds a bracket is CSV text
    path = tmp_path / "brackets.csv"
    path.write_text("[a] {b},y\n" + "".join(f"{a},{y}\n" for a, _, y in _rows()))
    assert data.load(path).feature_names == ("[a] {b}",)


def test_a_pytorch_checkpoint_is_named_with_the_way_to_load_its_weights(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review115 F5: a torch.save file given as the checkpoint said "entry 'pt/data.pkl' is not a
    numpy array"; predict, inspect and --resume name it, in either of torch.save's formats."""
    torch = pytest.importorskip("torch")
    csv_path = tmp_path / "t.csv"
    csv_path.write_text(_csv_text())
    weights = {"weight": torch.zeros(2, 2)}
    modern, legacy = tmp_path / "pt.pt", tmp_path / "old.pt"
    torch.save(weights, modern)
    torch.save(weights, legacy, _use_new_zipfile_serialization=False)
    advice = (
        "which torchlean does not read (it unpickles nothing): a torchlean checkpoint is written by "
        "torchlean train --save or checkpoint.save; to use a torch state_dict's weights, read it with torch "
        "(state = torch.load(PATH, weights_only=True)) and load it into a torchlean model with "
        "model.load_state(state) (strict=False to load a part)"
    )
    for path, what in ((modern, "a zip archive holding 'pt/data.pkl'"),
                       (legacy, "its legacy pickle format, before torch 1.6")):
        expected = f"error: {path}: a PyTorch checkpoint written by torch.save ({what}), {advice}\n"
        for argv in (("predict", str(path), "--dataset", str(csv_path)), ("inspect", str(path)),
                     ("train", "--resume", str(path))):
            assert cli(capsys, *argv) == (2, "", expected), argv


@pytest.mark.parametrize(("cell", "delimiter", "hint"), [
    ("\u22121.5", ",", "U+2212 MINUS SIGN is not read as a minus: write -1.5"),
    ("2e\u22123", ",", "U+2212 MINUS SIGN is not read as a minus: write 2e-3"),
    ("1,000", ",", "thousands separators are not read: write 1000"),
    ("-12,345,678.25", ",", "thousands separators are not read: write -12345678.25"),
    ("1 000", ",", "thousands separators are not read: write 1000"),
    ("1\u00a0000,5", ";", "thousands separators are not read: write 1000.5"),
    ("1'000", ",", "thousands separators are not read: write 1000"),
    ("1.000.000", ",", "thousands separators are not read: write 1000000"),
    ("1.000,5", ";", "thousands separators are not read: write 1000.5"),
    ("1,000", ";",
     "decimal commas are not read: write 1.000; or, if ',' separates thousands, write 1000"),
    ("\u22121,000.5", ",", "U+2212 MINUS SIGN and thousands separators are not read: write -1000.5"),
    ("\u22121,5", ";", "U+2212 MINUS SIGN and decimal commas are not read: write -1.5"),
    ("0,001", ";", "decimal commas are not read: write 0.001"),  # review119 F5: no thousands reading
])
def test_a_minus_sign_or_thousands_separators_get_a_hint(cell: str, delimiter: str, hint: str) -> None:
    """review115 F6: such cells got a bare "not a number", where a decimal comma gets a hint."""
    with pytest.raises(data.DataError) as info:
        data.targets("f.csv", "y", ["1", cell], np.float64, first_line=2, delimiter=delimiter)
    assert str(info.value) == f"f.csv: line 3, column y: not a number: {cell!r} ({hint})"


@pytest.mark.parametrize(
    "cell", ["1,00", "1,000,5", "12,34,567", "1 00", "1,000.", "\u2212", "a\u22121", "1_000"]
)
def test_near_misses_of_a_minus_sign_or_thousands_get_no_hint(cell: str) -> None:
    with pytest.raises(data.DataError) as info:
        data.targets("f.csv", "y", [cell], np.float64)
    assert str(info.value) == f"f.csv: line 1, column y: not a number: {cell!r}"


def test_a_feature_column_written_with_a_minus_sign_is_no_categorical_column(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A column of U+2212 minus signs gets that hint only, not the one-hot advice of a text column."""
    path = tmp_path / "m.csv"
    path.write_text("a,b,y\n" + "".join(f"\u2212{abs(a):.3f},{b},{y}\n" for a, b, y in _rows()))
    first = path.read_text().splitlines()[1].split(",")[0]
    code, out, err = cli(capsys, "train", "--dataset", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: line 2, column a: not a number: {first!r} (U+2212 MINUS SIGN is not read as a "
        f"minus: write {first.replace(chr(0x2212), '-')})\n"
    )


@pytest.mark.parametrize(
    "cells", [["\u22122.04", "\u22123.5", "\u22121.5"], ['"1,345"', '"2,000"', '"3,001"']]
)
def test_regression_on_numbers_written_otherwise_gets_only_their_hint(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, cells: list[str]
) -> None:
    """review119 F1: numbers written with U+2212 or thousands separators under --task regression
    got their hint and also "this column holds class names ... pass --task classification"."""
    path = tmp_path / "r.csv"
    path.write_text("a,y\n" + "".join(f"{i},{cell}\n" for i, cell in enumerate(cells * 4)))
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--task", "regression")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {path}: line 2, column y: not a number: ") and err.count("\n") == 1, err
    assert "write " in err and "class names" not in err and "classification" not in err, err


def test_class_names_beside_one_number_written_otherwise_keep_the_class_names_clause(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review120 F2: one thousands-separated number among class names switched the clause off for
    the whole column; it depends on the cell the message names."""
    path = tmp_path / "r.csv"
    cells = ["cat", "dog", "bird", '"1 000"'] * 3
    path.write_text("a,y\n" + "".join(f"{i},{cell}\n" for i, cell in enumerate(cells)))
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--task", "regression")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {path}: line 2, column y: not a number: 'cat': --task regression "), err
    assert "this column holds class names" in err and "pass --task classification" in err, err


_ZEROS = "import sys, time\nsys.stdout.buffer.write(bytes(1 << 20))\nsys.stdout.flush()\ntime.sleep(3600)\n"
"""1 MiB of NUL bytes and then a stream that stays open, as ``cat /dev/zero`` does: a reader that
reads to the end before judging the first line waits until the timeout (without filling the memory)."""
_HEADER_THEN_ZEROS = (
    "import sys, time\nsys.stdout.buffer.write(b'a,b,y\\n')\nsys.stdout.flush()\ntime.sleep(2)\n"
    "sys.stdout.buffer.write(bytes(1 << 20))\nsys.stdout.flush()\ntime.sleep(3600)\n"
)
"""A header, a pause, then NUL bytes: the first read of the pipe is the header alone (review192 F2)."""


@pytest.mark.parametrize(("command", "writer", "line"),
                         [("train", _ZEROS, 1), ("predict", _ZEROS, 1), ("train", _HEADER_THEN_ZEROS, 2)])
def test_an_endless_stream_of_nul_bytes_is_refused_from_its_first_bytes(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str, writer: str, line: int
) -> None:
    """review188 F3: NUL bytes are UTF-8 text, so ``cat /dev/zero | torchlean train --dataset -``
    read its never-ending first line until memory ran out, printing nothing; predict reads standard
    input into a copy (to read it twice) and read it to its end first."""
    argv = ["train", "--epochs", "1"]
    if command == "predict":
        csv_path, model = tmp_path / "t.csv", tmp_path / "m.npz"
        csv_path.write_text("a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows()))
        code, _, err = cli(capsys, "train", "--dataset", str(csv_path), "--epochs", "1", "--hidden", "4",
                           "--save", str(model))
        assert code == 0, err
        argv = ["predict", str(model)]
    with subprocess.Popen([sys.executable, "-c", writer], stdout=subprocess.PIPE,
                          stderr=subprocess.DEVNULL) as zeros:
        try:  # the timeout only ends a hang (the old reader's), it measures nothing
            done = subprocess.run([sys.executable, "-m", "torchlean", *argv, "--dataset", "-"],
                                  stdin=zeros.stdout, capture_output=True, text=True, timeout=120)
        finally:
            zeros.kill()
    assert done.returncode == 2, done.stderr
    assert done.stderr == (
        f"error: standard input (-): line {line}: byte 0x00 (character 1 of the line) is a control "
        "character, which text does not hold: the file looks like a binary file, not CSV text (accepted: "
        "a CSV file of UTF-8 text, whose only control characters are tab, line feed and carriage return)\n"
    )


def test_a_file_with_a_stray_nul_byte_is_named_by_its_line(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A few control bytes are left to the line check, which names the line and the character
    (the early refusal judges a start of mostly control bytes only)."""
    csv_path = tmp_path / "nul.csv"
    rows = "".join(f"{a},{b},{y}\n" for a, b, y in _rows(200))
    csv_path.write_bytes(b"a,b,y\n" + rows.encode() + b"1,2\x00,0\n")
    assert len(csv_path.read_bytes()) > 4096
    code, _, err = cli(capsys, "train", "--dataset", str(csv_path), "--epochs", "1")
    assert code == 2
    assert err.startswith(f"error: {csv_path}: line 202: byte 0x00 (character 4 of the line) is a control "
                          "character"), err


def test_a_control_character_delimiter_is_no_control_start(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """The early look at a file's first bytes counts the control characters the line check refuses,
    not an ASCII control given as the delimiter (a third of these bytes are \\x01)."""
    csv_path = tmp_path / "ctl.csv"
    csv_path.write_bytes(b"a\x01y\n" + b"".join(b"%d\x01%d\n" % (i % 7, i % 2) for i in range(2000)))
    code, _, err = cli(capsys, "train", "--dataset", str(csv_path), "--delimiter", "\x01", "--epochs", "1",
                       "--hidden", "4")
    assert code == 0, err


@pytest.mark.parametrize("command", ["train", "predict"])
def test_a_dataset_typed_on_a_terminal_ends_at_one_ctrl_d(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, command: str
) -> None:
    """review194 F1, review195 F1: the first 8 KiB of standard input are read before its lines
    (predict keeps a copy of it), and a terminal gives its end (Ctrl-D) once: reading on after it
    waited for a second Ctrl-D, silently."""
    text = "a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows())
    argv = ["train", "--epochs", "1", "--hidden", "4"]
    if command == "predict":
        csv_path, model = tmp_path / "t.csv", tmp_path / "m.npz"
        csv_path.write_text(text)
        code, _, err = cli(capsys, *argv, "--dataset", str(csv_path), "--save", str(model))
        assert code == 0, err
        argv = ["predict", str(model), "--output", str(tmp_path / "p.csv")]
    master, slave = pty.openpty()
    try:
        run = subprocess.Popen([sys.executable, "-m", "torchlean", *argv, "--dataset", "-"], stdin=slave,
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        for line in text.splitlines(keepends=True):  # as typed: a line at a time, then Ctrl-D
            os.write(master, line.encode())
        os.write(master, b"\x04")
        try:  # the timeout only ends a hang (the old reader's), it measures nothing
            out, err = run.communicate(timeout=120)
        finally:
            run.kill()
    finally:
        os.close(slave)
        os.close(master)
    assert run.returncode == 0, err
    if command == "train":
        assert out.startswith("dataset=- train=48 test=12 "), out
    else:
        assert len((tmp_path / "p.csv").read_text().splitlines()) == len(_rows()) + 1


def test_predict_reads_a_named_pipe_once_where_it_reads_the_data_twice(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review195 F2: predict reads its data a second time as the checkpoint's run read them (with
    ``--report-json`` or ``--split``); a named pipe cannot be read twice, and the second open waited
    for a writer that was gone. It is read once and kept, as standard input is."""
    text = "a,b,y\n" + "".join(f"{a},{b},{y}\n" for a, b, y in _rows())
    csv_path, model, fifo = tmp_path / "t.csv", tmp_path / "m.npz", tmp_path / "data.fifo"
    csv_path.write_text(text)
    code, _, err = cli(capsys, "train", "--dataset", str(csv_path), "--epochs", "1", "--hidden", "4",
                       "--save", str(model))
    assert code == 0, err
    os.mkfifo(fifo)
    record = tmp_path / "r.json"
    argv = [sys.executable, "-m", "torchlean", "predict", str(model), "--dataset", str(fifo), "--report-json",
            str(record), "--output", str(tmp_path / "p.csv")]
    run = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        fifo.write_text(text)  # one writer, once (opening blocks until predict opens the pipe)
        _, err = run.communicate(timeout=120)  # the timeout only ends a hang, it measures nothing
    finally:
        run.kill()
    assert run.returncode == 0, err
    facts = json.loads(record.read_text())
    assert facts["data_matches_training"] is True, facts
