"""The CSV reader at scale and on odd files: rows kept as one string each and read a block at a
time (review68 F1), columns named in linear time (review67 F8), an over-long cell without a quote
(review67 F9), UTF-32 and binary files (review67 F10), control characters on any line (review87 F2).

Oracles: the cells as written (hand values, ``np.loadtxt``), the cell-by-cell reader's refusals,
``_cells._shown`` without its counts, the encodings written with Python's codecs, and
``tracemalloc``'s count of the bytes allocated (not a timing).
"""

from __future__ import annotations

import codecs
import csv
import random
import tracemalloc
from pathlib import Path

import numpy as np
import pytest

from torchlean import _cells, _csv, data
from torchlean._rows import Rows
from torchlean.data import DataError

LIMIT = csv.field_size_limit()


def _write(tmp_path: Path, text: str | bytes, name: str = "t.csv") -> Path:
    path = tmp_path / name
    if isinstance(text, bytes):
        path.write_bytes(text)
    else:
        path.write_text(text)
    return path


def _refusal(path: Path, **kwargs: object) -> str:
    with pytest.raises(DataError) as info:
        data.read_csv(path, **kwargs)  # type: ignore[arg-type]
    return str(info.value)


# --- Rows -------------------------------------------------------------------------------------


def test_rows_give_back_the_cells_they_were_given() -> None:
    given = [["1", " 2 ", "x"], [""], ["a\x00b", "c"], ["", "", ""], ['q"uote', "line\nbreak", "\r\n"]]
    rows = Rows(given)
    assert len(rows) == 5
    assert [rows[r] for r in range(5)] == given and list(rows) == given
    assert rows == given and given == rows and rows != given[:4] and rows != "abc"
    assert list(rows.lengths()) == [3, 1, 2, 3, 3]
    assert rows[1:3] == given[1:3] and isinstance(rows[1:3], Rows)
    assert rows[-1] == given[-1]
    copy = rows[0]
    copy[0] = "changed"  # a new list each time
    assert rows[0] == ["1", " 2 ", "x"]
    wide = Rows([row for row in given if len(row) >= 2])
    assert wide.without_first_cell() == [row[1:] for row in given if len(row) >= 2]
    assert wide.without_last_cell() == [row[:-1] for row in given if len(row) >= 2]
    assert rows.with_first(["h", "i"]) == [["h", "i"], *given[1:]]
    assert [block for block in rows.blocks(2)] == [given[0:2], given[2:4], given[4:5]]
    appended = Rows()
    for row in given:
        appended.append(row)
    assert appended == given


def test_read_csv_keeps_one_string_per_row(tmp_path: Path) -> None:
    """review68 F1: one str per row instead of a list of a str per cell."""
    path = _write(tmp_path, "a,b,y\n1,2,x\n3,4,y\n")
    rows = data.read_csv(path).rows
    assert isinstance(rows, Rows)
    assert rows._packed == ["1\x002\x00x", "3\x004\x00y"]
    assert rows == [["1", "2", "x"], ["3", "4", "y"]]


# --- reading a block at a time (review68 F1) -------------------------------------------------------


def _numbers_file(tmp_path: Path, rows: int, cols: int, seed: int = 0) -> tuple[Path, np.ndarray]:
    rng = np.random.default_rng(seed)
    values = rng.standard_normal((rows, cols))
    labels = rng.integers(0, 3, size=rows)
    lines = [",".join([*(f"f{i}" for i in range(cols)), "y"])]
    for row, label in zip(values, labels, strict=True):
        lines.append(",".join(f"{v:.6g}" for v in row) + f",{label}")
    path = _write(tmp_path, "\n".join(lines) + "\n")
    return path, np.loadtxt(path, delimiter=",", skiprows=1)  # the label column last


@pytest.mark.parametrize("block_cells", [1, 7, 50, 1 << 16])
def test_blocks_of_rows_read_the_values_numpy_reads(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, block_cells: int
) -> None:
    path, expected = _numbers_file(tmp_path, 103, 6)
    monkeypatch.setattr(_csv, "_BLOCK_CELLS", block_cells)
    table = data.read_csv(path)
    x, labels = table.columns(6)
    assert x.dtype == np.float64 and x.shape == (103, 6)
    assert np.array_equal(x, expected[:, :6])
    assert labels == [line.rsplit(",", 1)[1] for line in path.read_text().splitlines()[1:]]
    assert labels == [str(int(v)) for v in expected[:, 6]]
    # a label in the middle, every other column a feature
    x, labels = table.columns(2)
    assert np.array_equal(x, np.delete(expected, 2, axis=1))
    assert labels == [line.split(",")[2] for line in path.read_text().splitlines()[1:]]


def test_a_refusal_in_a_later_block_is_the_cell_readers(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first refusal in file order, whichever block it is in: the same message as the cell
    reader gives when the file is one block."""
    path, _ = _numbers_file(tmp_path, 100, 6)
    lines = path.read_text().splitlines()
    faults = ["1,2,abc,4,5,6,0", "1,2,3,inf,5,6,0", "1,2,3", '1,2,3,4,5,6,"a\n7,8,9,1,2,3,b"',
              "1,2,3,4_0,5,6,0"]
    for fault in faults:  # not a number, not finite, a short row, rows read into a label, 4_0
        _write(tmp_path, "\n".join([*lines[:80], fault, *lines[81:]]) + "\n")
        monkeypatch.setattr(_csv, "_BLOCK_CELLS", 1 << 16)
        one_block = _columns_refusal(path)
        monkeypatch.setattr(_csv, "_BLOCK_CELLS", 14)  # two rows a block
        assert _columns_refusal(path) == one_block
        assert "line 81" in one_block


def _columns_refusal(path: Path) -> str:
    with pytest.raises(DataError) as info:
        data.read_csv(path).columns(6)
    return str(info.value)


def test_reading_holds_a_small_multiple_of_the_float64_array(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review68 F1: the reader held about 100 bytes per cell (a str and a pointer per cell, and a
    copy of the pointers by column), 13 times the float64 features here. Now the rows' text (the
    file's size) and the features, plus a block of cells (small here)."""
    path, _ = _numbers_file(tmp_path, 4000, 50)
    monkeypatch.setattr(_csv, "_BLOCK_CELLS", 5000)
    tracemalloc.start()
    try:
        table = data.read_csv(path)
        x, _ = table.columns(50)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    file_bytes = path.stat().st_size
    assert x.nbytes == 4000 * 50 * 8
    assert peak < 1.5 * file_bytes + 1.5 * x.nbytes, (peak, file_bytes, x.nbytes)


# --- naming columns (review67 F8) --------------------------------------------------------------


class _Uncounted(tuple[str, ...]):
    """A tuple of names whose ``count`` fails: naming a column must not count the names."""

    def count(self, value: object) -> int:
        raise AssertionError("names.count called: quadratic in the columns")


def test_columns_are_named_without_counting_the_names_each_time(tmp_path: Path) -> None:
    names = ("a", "b", "a", "", "c", "", "d", "Unnamed: 7", "y")
    table = data.read_csv(_write(tmp_path, ",".join(names) + "\n" + ",".join(["1"] * len(names)) + "\n"))
    uncounted = data.Table(table.file, _Uncounted(names), True, table.first_row, table.rows, table.lines, "")
    shown = [uncounted.shown(i) for i in range(len(names))]
    assert shown == [_cells._shown(names, i) for i in range(len(names))]  # the counting oracle
    assert shown == ["0 ('a')", "b", "2 ('a')", "3", "c", "5", "d", "Unnamed: 7", "y"]
    note = uncounted.unnamed_features_note(8)
    assert note.startswith(f"{table.file}: columns 3, 5, Unnamed: 7 have no name")


def test_a_wide_file_loads_and_names_its_columns(tmp_path: Path) -> None:
    cols = 3000
    header = ",".join([*(f"f{i}" for i in range(cols)), "y"])
    rows = [",".join([*(str((r * 7 + i) % 11) for i in range(cols)), str(r % 2)]) for r in range(6)]
    path = _write(tmp_path, "\n".join([header, *rows]) + "\n")
    ds = data.load(path, test_fraction=0.5)
    assert ds.feature_names == tuple(f"f{i}" for i in range(cols))
    table = data.read_csv(path)
    assert [table.shown(i) for i in range(cols + 1)] == [*(f"f{i}" for i in range(cols)), "y"]


# --- an over-long cell (review67 F9) ------------------------------------------------------------


def _long(line: int, column: int, length: int, name: str = "") -> str:
    there = f"; the first row has {name} there" if name else ""
    return (
        f"line {line}, column {column} (counted from 0{there}): a cell of {length} characters, longer than "
        f"the {LIMIT} that Python's csv module reads in a cell, and no quote is left open in it (accepted: "
        f"cells of at most {LIMIT} characters)"
    )


def test_an_over_long_unquoted_cell_is_named_by_its_length(tmp_path: Path) -> None:
    digits = "1" * (LIMIT + 10)
    path = _write(tmp_path, f"a,b,y\n1,2,0\n3,{digits},1\n")
    assert _refusal(path) == f"{path}: {_long(3, 1, LIMIT + 10, 'b')}"  # review69 F5: named
    path = _write(tmp_path, digits)  # no line break at all
    assert _refusal(path) == f"{path}: {_long(1, 0, LIMIT + 10)}"
    # a quoted cell before it, closed, spanning lines: the long cell is on the record's last line
    path = _write(tmp_path, f'a,b,y\n"x\ny",5,{digits}\n')
    assert _refusal(path) == f"{path}: {_long(3, 2, LIMIT + 10, 'y')}"
    # a quoted cell closed, then text up to the delimiter: csv keeps both in the cell
    path = _write(tmp_path, f'a,b,y\n"1""2"{digits},5,6\n')
    assert _refusal(path) == f"{path}: {_long(2, 0, LIMIT + 13, 'a')}"
    path = _write(tmp_path, f"a;b;y\n1;{digits};0\n")
    assert _refusal(path, delimiter=";") == f"{path}: {_long(2, 1, LIMIT + 10, 'b')}"
    path = _write(tmp_path, f"1,2,0\n3,{digits},1\n")  # a first row of numbers names nothing
    assert _refusal(path) == f"{path}: {_long(2, 1, LIMIT + 10)}"
    path = _write(tmp_path, f"a,b,y\n1,2,0\n3,4,5,{digits}\n")  # past the first row's columns
    assert _refusal(path) == f"{path}: {_long(3, 3, LIMIT + 10)}"


def test_an_over_long_cell_that_a_quote_opens_still_asks_about_the_quote(tmp_path: Path) -> None:
    path = _write(tmp_path, 'a,b,y\n1,2,0\n3,"4,' + "5" * (LIMIT + 10) + ",1\n")
    assert _refusal(path) == (
        f"{path}: line 3: cannot read the row that starts here: field larger than field limit ({LIMIT}); is "
        "a quote left open? (accepted: every quoted cell closed by a quote)"
    )


def test_the_cell_at_the_limit_loads(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,y\n" + "x" * LIMIT + ",0\n1,1\n")
    assert data.read_csv(path).rows[0] == ["x" * LIMIT, "0"]


# --- UTF-32 and binary files (review67 F10) -----------------------------------------------------

UTF32 = (
    "the file is UTF-32 text (it starts with UTF-32's byte-order mark), not UTF-8: convert it, e.g. "
    "iconv -f UTF-32 -t UTF-8 FILE > NEW_FILE, or save it as \"CSV UTF-8\""
)


@pytest.mark.parametrize("encoded", [
    "a,b,y\n1,2,x\n".encode("utf-32-le"), "a,b,y\n1,2,x\n".encode("utf-32-be"),
])
def test_utf32_is_named_before_utf16(tmp_path: Path, encoded: bytes) -> None:
    bom = codecs.BOM_UTF32_LE if encoded[:1] != b"\x00" else codecs.BOM_UTF32_BE
    assert bom[:2] in (codecs.BOM_UTF16_LE, b"\x00\x00")  # the premise: LE starts as UTF-16's mark
    path = _write(tmp_path, bom + encoded)
    assert _refusal(path) == f"{path}: {UTF32}"
    assert "\n1,2,x\n" in (bom + encoded).decode("utf-32")  # the advice's encoding reads it


def _binary(controls: int, sample: int) -> str:
    return (
        f"the file looks like a binary file, not CSV text: {controls} of its first {sample} bytes are NUL or "
        "other control characters, which text does not hold (accepted: a CSV file of UTF-8 text)"
    )


def _controls(raw: bytes) -> int:
    return sum((byte < 0x20 and byte not in b"\t\n\r") or byte == 0x7F for byte in raw)


def test_executables_and_random_bytes_are_called_binary(tmp_path: Path) -> None:
    rng = random.Random(0)
    elf = b"\x7fELF\x02\x01\x01" + bytes(9) + bytes(rng.getrandbits(8) for _ in range(20000))
    noise = bytes(rng.getrandbits(8) for _ in range(100000))
    for raw in (elf, noise):
        path = _write(tmp_path, raw)
        assert _refusal(path) == f"{path}: {_binary(_controls(raw[:8192]), 8192)}"
        assert "iconv" not in _refusal(path)
    short = b"\x01\x02\x03\xff\xfe"  # shorter than the sample: counted over what there is
    path = _write(tmp_path, short)
    assert _refusal(path) == f"{path}: {_binary(3, 5)}"


def test_nul_bytes_that_are_not_utf16s_are_a_binary_file(tmp_path: Path) -> None:
    path = _write(tmp_path, bytes(1000) + b"\n" + bytes(50))  # valid UTF-8: NULs on both sides
    assert _refusal(path) == f"{path}: {_control(1, 0x00, 1)}"
    path = _write(tmp_path, bytes(LIMIT + 100))  # one cell over csv's limit
    assert _refusal(path) == f"{path}: {_control(1, 0x00, 1)}"
    path = _write(tmp_path, b"x\x00\x01\x02,b,y\n1,2,x\n")  # a short line's one NUL is not UTF-16's
    assert _refusal(path) == f"{path}: {_control(1, 0x00, 2)}"


def _control(line: int, byte: int, character: int, delimiter: str = "") -> str:
    also = f", and the delimiter {delimiter!r}" if delimiter else ""
    return (
        f"line {line}: byte 0x{byte:02X} (character {character} of the line) is a control character, which "
        "text does not hold: the file looks like a binary file, not CSV text (accepted: a CSV file of UTF-8 "
        f"text, whose only control characters are tab, line feed and carriage return{also})"
    )


@pytest.mark.parametrize(("raw", "line", "byte", "character"), [
    (b"a,b,y\n\x00\x01\x02" * 10, 2, 0x00, 1),  # NULs every 9th byte: not UTF-16's every other byte
    (b"a,b,y\n" + b"\x01\x02\x03\x04,1,x\n" * 20, 2, 0x01, 1),  # control bytes without a NUL
    (b"a,b,y\n" + b"1,2,x\n" * 4 + b"3,4,z\x00\n" * 40, 6, 0x00, 6),  # a NUL after row 2, in a label
    (b"a,b,y\n" + b"1,2,x\n" * 3000 + b"1,2\x7f,z\n", 3002, 0x7F, 4),  # DEL past the first 8 KiB
    (b"a,b,y\r\n1,2,\"x\r\nx\"\r\n\x1c5\x1f,3,x\r\n", 4, 0x1C, 1),  # a quoted line break; CR LF
    (b"a,b,y\n1,2,x\n1,2,\x1b[31mred\n", 3, 0x1B, 5),  # a terminal's escape sequence
], ids=["nul-every-9th-byte", "controls-without-nul", "nul-in-a-later-label", "del-past-8-kib",
        "separators-after-a-quoted-break", "escape-sequence"])
def test_control_characters_in_utf8_text_are_refused_by_line_and_byte(
    tmp_path: Path, raw: bytes, line: int, byte: int, character: int
) -> None:
    """review87 F2: a UTF-8 file was checked for control characters only in its first two rows,
    and for a NUL only, so a NUL in a later label became part of a class name and went raw into
    the predictions file; control bytes without a NUL were read as cells. Oracle: the line, byte
    and character counted by hand in the bytes written (lines end at LF, CR LF or CR)."""
    raw.decode("utf-8")  # the premise: valid UTF-8, so no encoding advice applies
    path = _write(tmp_path, raw)
    assert _refusal(path) == f"{path}: {_control(line, byte, character)}"
    assert "iconv" not in _refusal(path)


@pytest.mark.parametrize(("text", "line", "code", "character", "what"), [
    ("a,y\n1,cat\n2,d\x85og\n", 3, 0x85, 4, "a C1 control character, which some terminals act on"),
    ("a,y\n1,cat\n2,\x9b31mred\n", 3, 0x9B, 3, "a C1 control character, which some terminals act on"),
    ("a,y\u2028b\n1,cat\n", 1, 0x2028, 4, "Unicode's line separator, which line-based tools take for a "
     "line break"),
    ("a,y\n1,\"c\u2029at\"\n", 2, 0x2029, 5, "Unicode's paragraph separator, which line-based tools take "
     "for a line break"),
], ids=["nel-in-a-label", "csi", "line-separator-in-the-header", "paragraph-separator-quoted"])
def test_c1_controls_and_unicode_line_separators_are_refused_by_line_and_character(
    tmp_path: Path, text: str, line: int, code: int, character: int, what: str
) -> None:
    """review88 F5: U+0085 (NEL) and the other C1 controls, U+2028 and U+2029 passed the check into
    class names and the predictions CSV, where str.splitlines() broke its rows. Oracle: the line and
    character counted by hand in the text written; other non-ASCII text (café, U+00A0) still reads."""
    path = _write(tmp_path, text.encode("utf-8"))
    assert _refusal(path) == (
        f"{path}: line {line}: character U+{code:04X} (character {character} of the line) is {what}: it "
        "would reach a cell, a class name and the predictions file raw (accepted: UTF-8 text whose only "
        "control characters are tab, line feed and carriage return, without Unicode's line and paragraph "
        "separators; remove or replace it)"
    )
    ok = _write(tmp_path, "a,y\n1,caf\u00e9\n2,\u00a0x\u00ff\n".encode())
    assert data.read_csv(ok).rows == [["1", "caf\u00e9"], ["2", "\u00a0x\u00ff"]]


def test_a_control_character_that_is_the_delimiter_is_read(tmp_path: Path) -> None:
    """The delimiter is not refused as a control character, another one still is."""
    path = _write(tmp_path, "a\x01b\x01y\n1\x012\x01x\n3\x014\x01z\n")
    assert data.read_csv(path, delimiter="\x01").rows == [["1", "2", "x"], ["3", "4", "z"]]
    path = _write(tmp_path, "a\x01b\x01y\n1\x012\x01x\n3\x02\x014\x01z\n")
    expected = _control(3, 0x02, 2, delimiter="\x01")
    assert _refusal(path, delimiter="\x01") == f"{path}: {expected}"
    path = _write(tmp_path, "a b y\n1 2 x\n3\x02 4 z\n")
    assert _refusal(path, delimiter="whitespace") == f"{path}: {_control(3, 0x02, 2)}"


def test_the_cli_refuses_control_characters_in_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from torchlean.cli import main

    path = _write(tmp_path, b"a,b,y\n" + b"1,2,x\n3,4,z\n" * 5 + b"5,6,z\x00\n")
    assert main(["train", "--dataset", str(path), "--epochs", "1"]) == 2
    assert capsys.readouterr().err == f"error: {path}: {_control(12, 0x00, 6)}\n"


def test_text_keeps_its_encoding_advice(tmp_path: Path) -> None:
    """UTF-16 without a mark (NULs on one side), Windows-1252 (no control byte) and a stray
    control character in text are not called binary."""
    text = "a,b,y\n1,2,caf\xe9\n3,4,th\xe9\n"
    path = _write(tmp_path, text.encode("utf-16-le"))
    assert "UTF-16LE" in _refusal(path) and "binary" not in _refusal(path)
    path = _write(tmp_path, text.encode("utf-16-be"))
    assert "UTF-16BE" in _refusal(path) and "binary" not in _refusal(path)
    path = _write(tmp_path, text.encode("cp1252"))
    assert "iconv -f WINDOWS-1252" in _refusal(path)
    path = _write(tmp_path, ("a,b,y\n" + "1,2,caf\xe9\n" * 10 + "\x1a").encode("cp1252"))  # DOS end of file
    assert "iconv -f WINDOWS-1252" in _refusal(path)
