"""torchlean.data: files whose cells are separated by runs of blanks (``delimiter="whitespace"``,
numpy's ``savetxt`` and R's ``write.table`` defaults; review37 F3), and R's row names, a header one
cell shorter than every data row under any delimiter (review37 F4).

Oracles: ``np.loadtxt`` (numpy's reader of the files its ``savetxt`` writes), the same rows written
comma-separated by Python's ``csv.writer`` (every array of the loaded dataset bit for bit equal),
cells and line numbers written out by hand, and messages written out by hand. pandas'
``read_csv(sep=r"\\s+")``, the reference the rules follow, is not a test dependency.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from torchlean import _whitespace, data
from torchlean.data import DataError, Dataset

N = 24
HINT = "pass delimiter='whitespace' (CLI: --delimiter whitespace)"


def _write(tmp_path: Path, text: str, name: str = "table.txt") -> Path:
    path = tmp_path / name
    path.write_bytes(text.encode())
    return path


def _comma(tmp_path: Path, rows: list[tuple[str, ...]], name: str = "comma.csv") -> Path:
    """``rows`` (header first) as Python's ``csv.writer`` writes them with commas."""
    buffer = io.StringIO()
    csv.writer(buffer, lineterminator="\n").writerows(rows)
    return _write(tmp_path, buffer.getvalue(), name)


def _same(got: Dataset, want: Dataset) -> None:
    """``got`` is ``want`` bit for bit: every array (its bytes), the names, task and classes."""
    for a, b in zip(
        (got.x_train, got.x_test, got.y_train, got.y_test, got.feature_mean, got.feature_scale),
        (want.x_train, want.x_test, want.y_train, want.y_test, want.feature_mean, want.feature_scale),
        strict=True,
    ):
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
    assert (got.feature_names, got.label_name, got.task, got.class_names) == (
        want.feature_names, want.label_name, want.task, want.class_names
    )


def _species(i: int) -> str:
    return ("Iris setosa", "Iris versicolor", 'the "third"')[i % 3]


def _features(i: int) -> tuple[str, str]:
    return f"{(i * 37) % 41 / 10:g}", f"{(i * 11) % 13 / 4 - 1:g}"


def _r_quoted(cell: str) -> str:
    """A string cell as R's write.table(qmethod = "double") quotes it."""
    return '"' + cell.replace('"', '""') + '"'


# -------------------------------------------------------------------------- numpy's savetxt


def test_numpys_savetxt_file_is_read_as_np_loadtxt_reads_it(tmp_path: Path) -> None:
    rng = np.random.default_rng(7)
    array = np.column_stack([rng.normal(size=(N, 3)) * [1, 1e-5, 3e4], np.arange(N) % 3])
    path = tmp_path / "savetxt.txt"
    np.savetxt(path, array)  # '%.18e' cells separated by one space
    table = data.read_csv(path, delimiter="whitespace")
    assert (table.names, table.has_header, table.delimiter) == (
        ("column_0", "column_1", "column_2", "column_3"), False, "whitespace"
    )
    assert table.lines == tuple(range(1, N + 1))
    x, labels = table.columns(3)
    oracle = np.loadtxt(path)
    assert x.tobytes() == oracle[:, :3].tobytes()
    assert labels is not None and [float(cell) for cell in labels] == oracle[:, 3].tolist()
    # the same numbers written with commas load to the same dataset, bit for bit
    text = path.read_text()
    comma = _write(tmp_path, text.replace(" ", ","), "comma.csv")
    for seed in (0, 5):
        _same(data.load(path, delimiter="whitespace", seed=seed), data.load(comma, seed=seed))
    loaded = data.load(path, delimiter="whitespace")
    assert loaded.class_names == ("0", "1", "2")


def test_savetxt_with_a_tab_a_header_and_a_label_column_name(tmp_path: Path) -> None:
    array = np.array([[float(i), i * 0.5, i % 2] for i in range(N)])
    path = tmp_path / "tab.txt"
    np.savetxt(path, array, delimiter="\t", header="a\tb\ty", comments="", fmt="%g")
    table = data.read_csv(path, delimiter="whitespace")
    assert table.names == ("a", "b", "y") and table.header_note == ""
    assert table.columns(2)[0].tobytes() == np.loadtxt(path, skiprows=1)[:, :2].tobytes()
    assert data.load(path, delimiter="whitespace", label_column="y").n_features == 2


# ------------------------------------------------------------------------ blanks and quotes


def test_runs_of_blanks_quotes_and_lines(tmp_path: Path) -> None:
    """Runs of spaces and tabs separate cells, blanks at the ends of a line and blank lines are
    skipped, CRLF ends a line, a double-quoted cell holds blanks, a doubled quote and line breaks,
    text after a closing quote stays in the cell, and a quote inside a cell is text."""
    text = (
        '  "first name"\t  b \t"y"  \r\n'  # line 1: the header, quoted names with a blank
        "\n"  # line 2: blank
        '"Ann Lee"   1.5\t\t"a ""b"""\r\n'  # line 3
        " \t \n"  # line 4: blanks only
        'x"y   -2  "two\nlines"\n'  # lines 5-6: a quote inside a cell; a quoted cell spanning lines
        '"c"d  3e1  ""\n'  # line 7: text after a closing quote; an empty quoted cell
        '"" "" ""\n'  # line 8: empty cells only, a blank row
        "z 4 last"  # line 9: no final line break
    )
    path = _write(tmp_path, text)
    table = data.read_csv(path, delimiter="whitespace", header=True)
    assert table.names == ("first name", "b", "y")
    assert table.rows == [
        ["Ann Lee", "1.5", 'a "b"'],
        ['x"y', "-2", "two\nlines"],
        ["cd", "3e1", ""],
        ["z", "4", "last"],
    ]
    assert table.lines == (3, 5, 7, 9)


@given(st.lists(st.text(alphabet="ab1. \t", max_size=12), max_size=6))
def test_a_line_without_quotes_splits_at_runs_of_spaces_and_tabs(lines: list[str]) -> None:
    """What the reader gives for quote-free lines: each line's runs of non-blanks (``str.split``
    with only the space and the tab as separators), lines without any giving no row."""
    text = [f"{line}\n" for line in lines]
    want = [
        (cells, number, number)
        for number, line in enumerate(lines, start=1)
        if (cells := [cell for cell in line.replace("\t", " ").split(" ") if cell])
    ]
    assert list(_whitespace.rows(text)) == want


def test_other_blanks_stay_in_the_cell(tmp_path: Path) -> None:
    """Only the space and the tab separate (as pandas' ``sep=r"\\s+"`` on a line: a no-break space
    is text there too); the cell's own blanks are stripped when it is read as a number."""
    path = _write(tmp_path, "a b y\n1\xa0 2 0\n3 4 1\n")
    assert data.read_csv(path, delimiter="whitespace").rows == [["1\xa0", "2", "0"], ["3", "4", "1"]]


def test_a_quote_left_open_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, 'a b y\n1 2 "cat\n3 4 dog\n')
    with pytest.raises(DataError) as info:
        data.read_csv(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 2: a quote opened in the row that starts here is never closed, so the rest of the "
        "file (lines 2-3) would be read into one cell (accepted: every quoted cell closed by a quote)"
    )
    path = _write(tmp_path, 'a b y\n1 2 "cat')
    with pytest.raises(DataError, match=r": line 2: a quote opened on this line is never closed \(accepted"):
        data.read_csv(path, delimiter="whitespace")


def test_a_label_spanning_lines_that_holds_blanks_is_refused(tmp_path: Path) -> None:
    """Rows read into one label cell between two misplaced quotes hold blanks, as they held the
    delimiter under another one."""
    path = _write(tmp_path, 'a b y\n1 2 "cat\n3 4 dog"\n5 6 cat\n7 8 dog\n')
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 2, column y: a quoted cell runs over lines 2-3 and holds blanks, as if rows were read "
        "into it: 'cat\\n3 4 dog'; is a quote misplaced? (accepted: a label quoted on its row, or spanning "
        "lines without blanks)"
    )


def test_messages_name_blanks(tmp_path: Path) -> None:
    path = _write(tmp_path, "a b y\n1 2 0\n3 4\n")
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == f"{path}: line 3 has 2 cells separated by blanks, expected 3"
    path = _write(tmp_path, "a b y\n1 2,5 0\n3 4 1\n")  # R's write.table(dec = ",")
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 2, column b: not a number: '2,5' (decimal commas are not read: write 2.5)"
    )
    path = _write(tmp_path, "1 2 3.5\n4 5 6\n")
    assert data.read_csv(path, delimiter="whitespace").header_note == (
        f"{path}: first row 1 2 3.5 is all numbers, so it was read as data (no header); pass header=True "
        "(CLI: --header) if it names the columns"
    )
    path = _write(tmp_path, "sep=;\n1;2;0\n")
    with pytest.raises(DataError) as info:
        data.read_csv(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 1: Excel's separator line 'sep=;' says the file is separated by ';', not blanks: pass "
        "delimiter=';' (CLI: --delimiter ';')"
    )


# ------------------------------------------------------------------------ the separator hint


@pytest.mark.parametrize(
    ("delimiter", "text", "named"),
    [
        (",", "a b y\n1 2 0\n3 4 1\n", "commas"),
        (",", "1.5e+00 2.0e+00 0.0e+00\n3 4 1\n", "commas"),  # savetxt without a header
        (",", '"sl" "sw" "species"\n"1" 5.1 3.5 "setosa"\n', "commas"),  # R's write.table
        (";", "a  b  y\n1 2 0\n", "';'"),
        ("\t", "a  b  y\n1  2  0\n", "tabs"),
    ],
)
def test_a_file_read_as_one_column_that_blanks_split_names_whitespace(
    tmp_path: Path, delimiter: str, text: str, named: str
) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as info:
        data.load(path, delimiter=delimiter)
    assert str(info.value) == (
        f"{path}: expected a label column and at least one feature column, got 1; the file seems to be "
        f"separated by blanks, not {named}: {HINT}"
    )


@pytest.mark.parametrize(
    "text",
    [
        "sepal length\n5.1\n4.9\n",  # one column whose name holds a blank
        "y\n1 2\n",  # a one-word first row
        "a b y\n1,2,0\n",  # a data row of several cells: not one column of blanks
    ],
)
def test_blanks_in_one_row_only_are_no_hint(tmp_path: Path, text: str) -> None:
    path = _write(tmp_path, text)
    assert "whitespace" not in data.read_csv(path).separator_hint


def test_a_comma_file_read_with_whitespace_names_the_comma(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,b,y\n1,2,0\n")
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: expected a label column and at least one feature column, got 1; the file seems to be "
        "separated by commas, not blanks: pass delimiter=',', the default (CLI: leave out --delimiter)"
    )


# ------------------------------------------------------------------------------- R's row names


def _r_rows(count: int = N) -> list[tuple[str, str, str]]:
    return [(*_features(i), _species(i)) for i in range(count)]


def test_r_write_table_default_is_read_without_its_row_names(tmp_path: Path) -> None:
    """write.table(df): quoted header names and strings, row names "1".."n", one space between."""
    rows = _r_rows()
    lines = ['"sl" "sw" "species"'] + [
        f'"{i + 1}" {a} {b} {_r_quoted(label)}' for i, (a, b, label) in enumerate(rows)
    ]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    table = data.read_csv(path, delimiter="whitespace")
    assert table.names == ("sl", "sw", "species")
    assert table.rows == [list(row) for row in rows]
    assert table.index_column is None
    assert table.notes == (
        f"{path}: the header has 3 cells and every data row 4, as R's write.table writes row names (pandas "
        "reads such a first column as its index), so the first cell of each row is a row name and is not "
        "used (write.table(..., row.names = FALSE) leaves it out)",
    )
    comma = _comma(tmp_path, [("sl", "sw", "species"), *rows])
    for seed in (0, 2):
        got = data.load(path, delimiter="whitespace", seed=seed)
        _same(got, data.load(comma, seed=seed))
        assert got.notes == table.notes
    classes = data.load(path, delimiter="whitespace").class_names
    assert classes == ("Iris setosa", "Iris versicolor", 'the "third"')
    assert data.load(path, delimiter="whitespace", label_column=-1).n_features == 2  # indices: the header's


@pytest.mark.parametrize("delimiter", [",", "\t", ";"])
def test_r_row_names_under_any_delimiter_and_of_any_kind(tmp_path: Path, delimiter: str) -> None:
    """write.table(sep = ...) with row names that are text (mtcars' car names), or a subset's."""
    rows = _r_rows()
    names = [f'"car {i}"' if i % 2 else f'"{3 * i + 7}"' for i in range(N)]
    lines = [delimiter.join(['"sl"', '"sw"', '"species"'])] + [
        delimiter.join([name, a, b, _r_quoted(label)])
        for name, (a, b, label) in zip(names, rows, strict=True)
    ]
    path = _write(tmp_path, "\n".join(lines) + "\n", "r.csv")
    got = data.load(path, delimiter=delimiter)
    _same(got, data.load(_comma(tmp_path, [("sl", "sw", "species"), *rows])))
    assert len(got.notes) == 1 and "as R's write.table writes row names" in got.notes[0]


def test_some_rows_longer_stay_a_row_length_error(tmp_path: Path) -> None:
    body = "".join(f"{a},{b},{label}\n" for a, b, label in _r_rows())
    path = _write(tmp_path, "sl,sw,y\n" + body + "x,1,2,cat\n", "some.csv")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line {N + 2} has 4 cells, expected 3"
    # a comma trailing every data line (not the header) is no row name: the row error asks about it
    path = _write(tmp_path, "sl,sw,y\n" + body.replace("\n", ",\n"), "trailing.csv")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 2 has 4 cells, expected 3 (its last cell is empty: a trailing comma on this line?)"
    )
    # nor is a blank first cell (a comma leading the data lines)
    path = _write(tmp_path, "sl,sw,y\n" + "".join(f",{line}\n" for line in body.splitlines()), "leading.csv")
    with pytest.raises(DataError, match=r": line 2 has 4 cells, expected 3$"):
        data.load(path)
    # without a header, the rows are the columns: a longer one is refused
    path = _write(tmp_path, "1,2,0\n5,1,2,1\n", "headerless.csv")
    with pytest.raises(DataError, match=r": line 2 has 4 cells, expected 3$"):
        data.load(path)


def test_a_header_of_one_name_is_not_read_as_row_names(tmp_path: Path) -> None:
    """A ';' file with decimal commas read with commas: a one-cell header over two-cell rows keeps
    its refusal naming ';' (no row names are guessed under a header of one name)."""
    path = _write(tmp_path, "a;b;y\n1,5;2;0\n2,5;3;1\n", "semi.csv")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value).endswith("the file seems to be separated by ';', not commas: pass delimiter=';' "
                                    "(CLI: --delimiter ';')")
