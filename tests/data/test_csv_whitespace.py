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


def _r_escaped(cell: str) -> str:
    """A string's quotes as R's write.table(qmethod = "escape"), its default, writes them: ``\\"``."""
    return cell.replace('"', '\\"')


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
        '""\n'  # line 8: one empty quoted cell, an empty line (a row of them is refused: review128 F2)
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


# ------------------------------------------------------------------------------------ review40


def test_r_escaped_quotes_are_quotes() -> None:
    """review40 F5: R's write.table escapes a quote inside a quoted string with a backslash by
    default (qmethod = "escape"); a doubled quote (qmethod = "double") still reads as one, and a
    backslash before anything else, or outside quotes, is text."""
    lines = [
        '"say \\"hi\\" x" "\\"hi\\"" "a ""b"""\n',  # escaped, escaped at both ends, doubled
        '"C:\\dir x" a\\"b "\\\\"" z\n',  # a backslash before a blank; outside quotes; before a backslash
    ]
    assert list(_whitespace.rows(lines)) == [
        (['say "hi" x', '"hi"', 'a "b"'], 1, 1),
        (["C:\\dir x", 'a\\"b', '\\"', "z"], 2, 2),
    ]


def test_r_write_table_with_escaped_quotes_is_read_as_the_comma_file(tmp_path: Path) -> None:
    """review40 F5: write.table(df) with its default qmethod = "escape" loads as the same rows
    written with commas, bit for bit; its class names hold the quotes."""
    rows = _r_rows()
    lines = ['"sl" "sw" "species"'] + [
        f'"{i + 1}" {a} {b} "{_r_escaped(label)}"' for i, (a, b, label) in enumerate(rows)
    ]
    path = _write(tmp_path, "\n".join(lines) + "\n")
    assert '"the \\"third\\""' in path.read_text()
    got = data.load(path, delimiter="whitespace")
    _same(got, data.load(_comma(tmp_path, [("sl", "sw", "species"), *rows])))
    assert got.class_names == ("Iris setosa", "Iris versicolor", 'the "third"')


def test_a_first_column_that_repeats_is_not_r_row_names(tmp_path: Path) -> None:
    """review40 F2: write.table(iris, quote = FALSE, row.names = FALSE): every row splits into one
    cell more than the header at the blank in its species, and the first column repeats values,
    which R's row names never do: the row-length error, asking about an unquoted blank."""
    rows = [(f"{5 + i % 4 / 10:g}", f"{3 + i % 3 / 10:g}", _species(i % 2)) for i in range(N)]
    text = "sl sw species\n" + "".join(f"{a} {b} {label}\n" for a, b, label in rows)
    path = _write(tmp_path, text)
    table = data.read_csv(path, delimiter="whitespace")
    assert table.notes == () and not table.row_names and table.rows[0] == ["5", "3", "Iris", "setosa"]
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 2 has 4 cells separated by blanks, expected 3 (every data row has 4 cells and the "
        "header 3: does a cell hold a blank without quotes, such as Iris setosa as R's write.table(..., "
        "quote = FALSE) writes it? quote such cells; its first column is not R's row names, which are "
        "distinct: it holds '5' on lines 2 and 6)"
    )
    # under a one-character delimiter, the same, naming it
    path = _write(tmp_path, "a;b;y\n" + "".join(f"{i % 3};{i};x;{i % 2}\n" for i in range(N)), "semi.csv")
    with pytest.raises(DataError) as info:
        data.load(path, delimiter=";")
    assert str(info.value) == (
        f"{path}: line 2 has 4 cells separated by ';', expected 3 (every data row has 4 cells and the header "
        "3: does a cell hold ';' without quotes? quote such cells; its first column is not R's row names, "
        "which are distinct: it holds '0' on lines 2 and 5)"
    )


def test_an_error_after_row_names_were_left_out_says_so(tmp_path: Path) -> None:
    """review40 F2: a header one name short over distinct first cells is read as R's row names; when
    the shifted columns then fail, the error says that the first cell of each row was left out
    (train prints the note only after a load that succeeds)."""
    text = "a b y\n" + "".join(f"{3 * i + 1} {'qr'[i % 2]} 2 {i % 2}\n" for i in range(N))
    path = _write(tmp_path, text)
    assert data.read_csv(path, delimiter="whitespace").row_names
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 2, column a: not a number: 'q' (feature columns must be numbers: if a is categorical, "
        "one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass label_column='a' (CLI: "
        "--label-column a)) (the header has 3 cells and every data row 4, so the first cell of "
        "each row was taken as R's row name and left out, and the header names the cells after it; if the "
        "header lacks the first column's name, add it)"
    )
    # a label the shift made a regression target with text: the same ending
    text = "a b y\n" + "".join(f"{3 * i + 1} 2 {i % 5 / 4} {'qr'[i % 2]}\n" for i in range(N))
    with pytest.raises(DataError, match=r"taken as R's row name and left out, .* add it\)$"):
        data.load(_write(tmp_path, text, "label.txt"), delimiter="whitespace", task="regression")
    # an error that does not come after row names is as it was
    path = _write(tmp_path, "a b y\n1 q 0\n2 r 1\n", "plain.txt")
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert "row name" not in str(info.value)


@pytest.mark.parametrize(("separator", "named", "use"), [
    (",", "commas", "pass delimiter=',', the default (CLI: leave out --delimiter)"),
    (";", "';'", "pass delimiter=';' (CLI: --delimiter ';')"),
    ("|", "'|'", "pass delimiter='|' (CLI: --delimiter '|')"),
])
def test_a_file_separated_by_a_separator_and_blanks_names_the_separator(
    tmp_path: Path, separator: str, named: str, use: str
) -> None:
    """review40 F3: ``a, b, y`` read with whitespace leaves the comma on the cells (``1,``): not a
    decimal comma, but the file's separator."""
    text = "".join(f"{a}{separator} {b}{separator} {y}\n" for a, b, y in [("a", "b", "y"), ("1", "2", "0"),
                                                                      ("4", "5", "1"), ("7", "8", "0")])
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="whitespace")
    assert str(info.value) == (
        f"{path}: line 2, column a{separator}: not a number: '1{separator}'; the file seems to be separated "
        f"by {named}, not blanks: {use}"
    )
    # read with that separator, it loads
    assert data.load(path, delimiter=separator).feature_names == ("a", "b")


def test_a_decimal_comma_under_whitespace_keeps_its_hint(tmp_path: Path) -> None:
    """review40 F3's near misses: a comma inside a cell (a decimal comma), or ending a cell of the
    data but not of the header, is no separator."""
    for text in ("a b y\n1,5 2 0\n3 4 1\n", "1,5 2,5 0\n3,5 4,5 1\n", "a b y\n1, 2 0\n3, 4 1\n"):
        path = _write(tmp_path, text)
        with pytest.raises(DataError, match=r"\(decimal commas are not read: write [0-9.]+\)$"):
            data.load(path, delimiter="whitespace", header="a" in text)


def test_numpys_savetxt_header_is_the_header_under_whitespace(tmp_path: Path) -> None:
    """review40 F7: np.savetxt(..., header="a b y") writes '# a b y', which np.loadtxt skips as a
    comment: under whitespace its names are the header (with a note) when they fit the rows."""
    rng = np.random.default_rng(3)
    array = np.column_stack([rng.normal(size=(N, 2)), np.arange(N) % 2])
    path = tmp_path / "savetxt.txt"
    np.savetxt(path, array, header="a b y")
    assert path.read_text().startswith("# a b y\n")
    table = data.read_csv(path, delimiter="whitespace")
    assert (table.names, table.has_header, table.header_note) == (("a", "b", "y"), True, "")
    assert table.lines == tuple(range(2, N + 2))
    assert table.notes == (
        f"{path}: line 1 '# a b y' was read as the header, as numpy's savetxt(..., header=...) writes one "
        "after '# ' (np.loadtxt skips it as a comment): its 3 names fit the 3 cells of line 2",
    )
    assert table.columns(2)[0].tobytes() == np.loadtxt(path)[:, :2].tobytes()
    comma = _comma(tmp_path, [("a", "b", "y"), *(tuple(f"{v:.18e}" for v in row) for row in array)])
    _same(data.load(path, delimiter="whitespace"), data.load(comma))
    # a tab, and '#' without a blank after it (comments='#')
    np.savetxt(path, array, header="a\tb\ty", delimiter="\t", comments="#")
    assert path.read_text().startswith("#a\tb\ty\n")
    assert data.read_csv(path, delimiter="whitespace", header=True).names == ("a", "b", "y")


def test_a_comment_line_that_is_no_header_stays_refused(tmp_path: Path) -> None:
    """review40 F7: a '#' line whose names do not fit the next row, one followed by another '#'
    line, one under header=False, and any under a one-character delimiter are refused as before."""
    refusal = (
        "starts with '#', a comment line: comment lines are not supported (accepted: a header row or a data "
        "row first; remove the comment lines, or rename a first column whose name starts with '#'; numpy's "
        "savetxt writes its header as a comment unless given comments=''"
    )
    rule = (
        "; under whitespace a first line '# a b y' is read as the header when it has a name for each cell of "
    )
    cases: list[tuple[str, bool | None, str, str]] = [
        ("# a b c y\n1 2 0\n3 4 1\n", None, "whitespace", f"{rule}the next row: this one has 4 for 3"),
        ("# a b y\n# more\n1 2 0\n", None, "whitespace", f"{rule}the next row, a data row"),
        ("# a b y\n1 2 0\n3 4 1\n", False, "whitespace",
         f"{rule}the next row, but not with header=False (CLI: --no-header)"),
        ("# a,b,y\n1,2,0\n3,4,1\n", None, ",", ""),
        ("# a b y\n1 2 0\n3 4 1\n", None, ",", ""),  # numpy's savetxt file read with commas
    ]
    for text, header, delimiter, end in cases:
        path = _write(tmp_path, text)
        with pytest.raises(DataError) as info:
            data.read_csv(path, delimiter=delimiter, header=header)
        assert str(info.value) == f"{path}: line 1 {refusal}{end})"
    # a comment of as many words as the rows have cells is read as names, with the note saying so
    path = _write(tmp_path, "# written by me\n1 2 0\n3 4 1\n")
    assert data.read_csv(path, delimiter="whitespace").names == ("written", "by", "me")


@pytest.mark.parametrize(("spellings", "note"), [
    (("x", " x"), "the labels 'x' and ' x' are one class, 'x'"),
    (("x\t", "x"), "the labels 'x\\t' and 'x' are one class, 'x'"),
    ((" 7", "7 "), "the labels ' 7' and '7 ' are one class, '7'"),
])
def test_labels_made_one_class_by_their_blanks_get_a_note(
    tmp_path: Path, spellings: tuple[str, str], note: str
) -> None:
    """review67 F15: blanks around labels are stripped, so two spellings are one class; a note
    names the first pair (the class ids are those of the stripped labels: the merge is real)."""
    first, second = spellings
    labels = [first, second, first, "other"] * 6
    rows = [("a", "b", "y"), *((str(i), str(i % 5), label) for i, label in enumerate(labels))]
    got = data.load(str(_comma(tmp_path, rows)), task="classification")
    assert got.class_names == tuple(sorted({first.strip(), "other"}, key=lambda n: (not n.isdigit(), n)))
    expected = f"{tmp_path / 'comma.csv'}: column y: {note} (blanks around a label are not part of it)"
    assert expected in got.notes


@pytest.mark.parametrize("label", [" x", "x"])
def test_labels_spelled_one_way_get_no_note(tmp_path: Path, label: str) -> None:
    """A file written ``a, b, x`` throughout (each label after a blank) merges nothing: no note;
    nor does a regression target with blanks."""
    rows = [("a", "b", "y"), *((str(i), str(i % 5), label if i % 2 else " z") for i in range(24))]
    assert not any("are one class" in note for note in data.load(str(_comma(tmp_path, rows))).notes)
    rows = [("a", "b", "y"), *((str(i), str(i % 5), f" {i}.5" if i % 2 else f"{i}.5") for i in range(24))]
    regression = data.load(str(_comma(tmp_path, rows, "r.csv")))
    assert regression.task == "regression" and not any("are one class" in note for note in regression.notes)
