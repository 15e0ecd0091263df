"""torchlean.data: CSV files separated by another character than the comma (``delimiter``), read
through the Python API (the CLI's side is tests/training/test_csv_delimiter_cli.py).

Oracles: the same rows written comma-separated (every array of the loaded dataset bit for bit
equal), files written by Python's ``csv.writer`` with that delimiter (which quotes a cell holding
it), the cells themselves, and messages written out by hand.
"""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from torchlean import data
from torchlean.data import DataError, Dataset, UnknownLabelError

N = 20
COMMA_HINT = "pass delimiter=',', the default (CLI: leave out --delimiter)"
RULE = (
    "not a quote (\" or '), a line break, a digit, '.', '+', '-', 'e', 'E' or a blank other than tab, which "
    "would clash with quoting, rows or numbers"
)


def _rows() -> list[tuple[str, str, str]]:
    """``N`` rows of two features and a class label (cat/dog), every value distinct per column."""
    return [(f"{0.5 * i - 3:g}", f"{(7 * i) % N + 0.25:g}", "cat" if i % 3 else "dog") for i in range(N)]


def _written(tmp_path: Path, delimiter: str, rows: list[tuple[str, ...]], name: str) -> Path:
    """``rows`` under the header ``a,b,y`` as Python's ``csv.writer`` writes them with ``delimiter``."""
    buffer = io.StringIO()
    writer = csv.writer(buffer, delimiter=delimiter, lineterminator="\n")
    writer.writerows([("a", "b", "y"), *rows])
    path = tmp_path / name
    path.write_text(buffer.getvalue())
    return path


def _write(tmp_path: Path, text: str, name: str = "table.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _same(got: Dataset, want: Dataset) -> None:
    """``got`` is ``want`` bit for bit: every array (its bytes), the names, task, classes and notes."""
    for a, b in zip(
        (got.x_train, got.x_test, got.y_train, got.y_test, got.feature_mean, got.feature_scale),
        (want.x_train, want.x_test, want.y_train, want.y_test, want.feature_mean, want.feature_scale),
        strict=True,
    ):
        assert (a.dtype, a.shape, a.tobytes()) == (b.dtype, b.shape, b.tobytes())
    assert (got.feature_names, got.label_name, got.task, got.class_names, got.header_note) == (
        want.feature_names, want.label_name, want.task, want.class_names, want.header_note
    )


def _refusal(tmp_path: Path, delimiter: str, *, task: data.Task | None = None) -> str:
    with pytest.raises(DataError) as info:
        data.load(tmp_path / "table.csv", delimiter=delimiter, task=task)
    return str(info.value)


# ------------------------------------------------------------------------ the same data, read alike


@pytest.mark.parametrize("delimiter", [";", "\t", "|", ":", "o", "\x00"])
def test_a_file_read_with_its_delimiter_is_the_comma_files_data(tmp_path: Path, delimiter: str) -> None:
    """``:`` and ``o`` split the reader's end-of-file line (``"...torchlean: end of file..."``):
    it is still recognised, so no row is added."""
    rows: list[tuple[str, ...]] = list(_rows())
    comma = _written(tmp_path, ",", rows, "comma.csv")
    other = _written(tmp_path, delimiter, rows, "other.csv")
    assert delimiter in other.read_text() and "," not in other.read_text()
    table = data.read_csv(other, delimiter=delimiter)
    assert (table.names, table.rows, table.delimiter) == (
        ("a", "b", "y"), [list(row) for row in rows], delimiter
    )
    assert table.lines == tuple(range(2, N + 2))
    for seed in (0, 3):
        _same(data.load(other, delimiter=delimiter, seed=seed), data.load(comma, seed=seed))
        _same(data.load_csv(other, delimiter=delimiter, seed=seed, task="classification"),
              data.load_csv(comma, seed=seed, task="classification"))


@pytest.mark.parametrize("delimiter", [";", ":", "o"])
def test_a_quote_left_open_is_refused_whatever_the_delimiter(tmp_path: Path, delimiter: str) -> None:
    """The reader's end-of-file line, read into the open cell, is found there even when the
    delimiter is one of its characters."""
    cells = ["a", "b", "y\n1", "2", '"x\n3', "4", "0\n"]
    path = _write(tmp_path, delimiter.join(cells))
    with pytest.raises(DataError) as info:
        data.read_csv(path, delimiter=delimiter)
    assert str(info.value) == (
        f"{path}: line 2: a quote opened in the row that starts here is never closed, so the rest of the "
        "file (lines 2-3) would be read into one cell (accepted: every quoted cell closed by a quote)"
    )


def test_load_without_a_delimiter_reads_commas(tmp_path: Path) -> None:
    comma = _written(tmp_path, ",", list(_rows()), "comma.csv")
    _same(data.load(comma, delimiter=None), data.load(comma))
    assert data.read_csv(comma).delimiter == ","


def test_quoted_cells_hold_the_delimiter(tmp_path: Path) -> None:
    """csv.writer quotes a label holding ``;``; the reader gives it back whole, and a comma in a
    cell of a ``;`` file is just a character of the cell (a class name ``a,b``)."""
    rows = [(x, b, "x;y" if i % 2 else "a,b") for i, (x, b, _) in enumerate(_rows())]
    path = _written(tmp_path, ";", rows, "quoted.csv")
    assert '"x;y"' in path.read_text() and '"a,b"' not in path.read_text()
    d = data.load(path, delimiter=";")
    assert d.class_names == ("a,b", "x;y")
    assert data.read_csv(path, delimiter=";").rows == [list(row) for row in rows]
    tab = _written(tmp_path, "\t", [(x, b, "x\ty") for x, b, _ in rows[:-1]] + [rows[-1]], "quoted.tsv")
    assert data.read_csv(tab, delimiter="\t").rows[0][2] == "x\ty"


# ------------------------------------------------------------------------------- bad delimiters


@pytest.mark.parametrize(
    ("delimiter", "why"),
    [
        ("", "is empty"),
        (";;", "is 2 characters, not one"),
        ("tab", "is 3 characters, not one"),  # the CLI's spelling, not Python's
        ("\\t", "is 2 characters, not one"),  # the CLI's too (backslash, t)
        ("Tab", "is 3 characters, not one"),
        ("space", "is 5 characters, not one"),  # the CLI's, for "whitespace"
        ("WHITESPACE", "is 10 characters, not one"),
        ("\\s+", "is 3 characters, not one"),  # pandas' sep=r"\s+"
        (r"[ \t]+", "is 6 characters, not one"),
        ('"', "is a quote, which encloses cells"),
        ("'", "is a quote, which encloses cells"),
        ("\n", "is a line break, which ends rows"),
        ("\r", "is a line break, which ends rows"),
        ("0", "is a digit, which numbers are written with"),
        ("7", "is a digit, which numbers are written with"),
        ("\u0663", "is a digit, which numbers are written with"),
        (".", "is written in numbers (a point, a sign or an exponent)"),
        ("+", "is written in numbers (a point, a sign or an exponent)"),
        ("-", "is written in numbers (a point, a sign or an exponent)"),
        ("e", "is written in numbers (a point, a sign or an exponent)"),
        ("E", "is written in numbers (a point, a sign or an exponent)"),
        (" ", "is a blank other than tab, which is stripped around cells"),
        ("\xa0", "is a blank other than tab, which is stripped around cells"),
        ("\x0b", "is a blank other than tab, which is stripped around cells"),
        ("\x1f", "is a blank other than tab, which is stripped around cells"),
        (None, "is of type NoneType, not a str"),
        (b";", "is of type bytes, not a str"),
        (59, "is of type int, not a str"),
    ],
)
def test_a_bad_delimiter_is_refused_naming_it_why_and_the_accepted_ones(
    tmp_path: Path, delimiter: object, why: str
) -> None:
    path = _written(tmp_path, ",", list(_rows()), "comma.csv")
    pointer = {  # review40 F6: what the other spellings of accepted delimiters are in Python
        " ": " (for cells separated by spaces, as numpy's savetxt and R's write.table write them: "
        "delimiter='whitespace')",
        "tab": " ('tab' is the command line's spelling: pass delimiter='\\t', the tab character)",
        "\\t": " ('\\\\t' is the command line's spelling: pass delimiter='\\t', the tab character)",
        "Tab": " (for a tab pass delimiter='\\t', the tab character)",
        "space": " ('space' is the command line's spelling: pass delimiter='whitespace')",
        "WHITESPACE": " (for runs of blanks pass delimiter='whitespace')",
        "\\s+": " (pandas' sep=r'\\s+', runs of blanks, is delimiter='whitespace' here)",
        r"[ \t]+": r" (pandas' sep=r'[ \t]+', runs of blanks, is delimiter='whitespace' here)",
    }.get(delimiter, "") if isinstance(delimiter, str) else ""
    message = (
        f"delimiter must be one character such as ',' (the default), ';', '\\t' or '|', {RULE}, or "
        f"'whitespace' (runs of spaces and tabs); got {delimiter!r}, which {why}{pointer}"
    )
    readers = [data.read_csv, data.load_csv] + ([] if delimiter is None else [data.load])  # load: None is ','
    for read in readers:
        with pytest.raises(DataError) as info:
            read(path, delimiter=delimiter)  # type: ignore[operator]
        assert str(info.value) == message


def test_a_shipped_dataset_refuses_a_delimiter() -> None:
    for delimiter in (",", ";"):
        with pytest.raises(DataError) as info:
            data.load("iris", delimiter=delimiter)
        assert str(info.value) == (
            f"delimiter={delimiter!r}: label_column, header, task and delimiter apply to CSV files; iris is "
            "a shipped dataset"
        )
    with pytest.raises(DataError, match=r"^header=True, delimiter=';': label_column, header, task and "):
        data.load("iris", header=True, delimiter=";")
    assert data.load("iris", delimiter=None).n_classes == 3


# ------------------------------------------------------------------------- the separator hint


@pytest.mark.parametrize(
    ("delimiter", "text", "hint"),
    [
        (";", "a,b,y\n1,2,0\n", f"commas, not ';': {COMMA_HINT}"),
        ("\t", "a;b;y\n1;2;0\n", "';', not tabs: pass delimiter=';' (CLI: --delimiter ';')"),
        (";", "a\tb\ty\n1\t2\t0\n", "tabs, not ';': pass delimiter='\\t' (CLI: --delimiter tab)"),
        ("|", "a,b;c;y\n1,2;3;0\n", "';', not '|': pass delimiter=';' (CLI: --delimiter ';')"),
        (",", "a|b|y\n1|2|0\n", "'|', not commas: pass delimiter='|' (CLI: --delimiter '|')"),
        (":", "a|b|y\n1|2|0\n", "'|', not ':': pass delimiter='|' (CLI: --delimiter '|')"),
    ],
)
def test_a_file_read_as_one_column_names_the_delimiter_that_splits_it(
    tmp_path: Path, delimiter: str, text: str, hint: str
) -> None:
    path = _write(tmp_path, text)
    assert _refusal(tmp_path, delimiter) == (
        f"{path}: expected a label column and at least one feature column, got 1; the file seems to be "
        f"separated by {hint}"
    )
    table = data.read_csv(path, delimiter=delimiter)
    assert table.separator_hint == f"; the file seems to be separated by {hint}"


def test_the_chosen_delimiter_is_no_hint(tmp_path: Path) -> None:
    """A one-column file read with ';' whose cell holds only ';'-free text gets no hint; nor does the
    delimiter itself count (it cannot be in an unquoted one-column row)."""
    path = _write(tmp_path, "y\n1\n2\n")
    assert _refusal(tmp_path, ";") == (
        f"{path}: expected a label column and at least one feature column, got 1"
    )
    _write(tmp_path, '"a;b"\n1\n')
    assert data.read_csv(tmp_path / "table.csv", delimiter=";").separator_hint == ""


# -------------------------------------------------------------------- Excel's separator line


@pytest.mark.parametrize(("delimiter", "named"), [(";", "';'"), ("\t", "a tab"), ("|", "'|'")])
def test_excels_separator_line_naming_the_delimiter_is_skipped(
    tmp_path: Path, delimiter: str, named: str
) -> None:
    rows: list[tuple[str, ...]] = list(_rows())
    plain = _written(tmp_path, delimiter, rows, "plain.csv")
    path = _write(tmp_path, f"SEP={delimiter}\n" + plain.read_text(), "excel.csv")
    d = data.load(path, delimiter=delimiter)
    _same(d, data.load(_written(tmp_path, ",", rows, "comma.csv")))
    assert d.notes == (
        f"{path}: line 1 {'SEP=' + delimiter!r} is Excel's separator line naming {named}; it was skipped",
    )
    assert data.read_csv(path, delimiter=delimiter).lines[0] == 3


@pytest.mark.parametrize(
    ("delimiter", "line", "message"),
    [
        (";", "sep=,", f"separated by commas, not ';': {COMMA_HINT}"),
        ("\t", "sep=;", "separated by ';', not tabs: pass delimiter=';' (CLI: --delimiter ';')"),
        (";", "sep=\t", "separated by tabs, not ';': pass delimiter='\\t' (CLI: --delimiter tab)"),
        ("|", "sep=:", "separated by ':', not '|': pass delimiter=':' (CLI: --delimiter :)"),
        (
            ";", "sep=.",
            "separated by '.', not ';', which no delimiter reads: that separator is written in numbers (a "
            f"point, a sign or an exponent) (accepted: a delimiter of one character, {RULE})",
        ),
    ],
)
def test_excels_separator_line_naming_another_separator_says_which_delimiter_reads_it(
    tmp_path: Path, delimiter: str, line: str, message: str
) -> None:
    path = _write(tmp_path, f"{line}\na{delimiter}b{delimiter}y\n1{delimiter}2{delimiter}0\n")
    assert _refusal(tmp_path, delimiter) == (
        f"{path}: line 1: Excel's separator line {line!r} says the file is {message}"
    )


# ------------------------------------------------------------------- trailing delimiter, row lengths


@pytest.mark.parametrize(("delimiter", "named"), [(";", "';'"), ("\t", "tab"), ("|", "'|'")])
def test_a_trailing_delimiter_on_every_line_drops_the_empty_column(
    tmp_path: Path, delimiter: str, named: str
) -> None:
    rows: list[tuple[str, ...]] = [(*row, "") for row in _rows()]
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\n").writerows([("a", "b", "y", ""), *rows])
    path = _write(tmp_path, buffer.getvalue())
    assert path.read_text().splitlines()[1].endswith(delimiter)
    d = data.load(path, delimiter=delimiter)
    _same(d, data.load(_written(tmp_path, ",", list(_rows()), "comma.csv")))
    assert d.notes == (
        f"{path}: the last column (3) has no name and is empty on every line (a trailing {named}?), so it is "
        "ignored",
    )


def test_a_row_of_another_length_names_the_delimiter(tmp_path: Path) -> None:
    path = _write(tmp_path, "a;b;y\n1;2;0\n3,5;1\n4;5;6;1\n")
    assert _refusal(tmp_path, ";") == f"{path}: line 3 has 2 cells separated by ';', expected 3"
    _write(tmp_path, "a\tb\ty\n1\t2\t0\n3\t5\n")
    assert _refusal(tmp_path, "\t") == f"{path}: line 3 has 2 cells separated by a tab, expected 3"
    _write(tmp_path, "a,b,y\n1,2,0\n3,5\n")  # the comma's message as before
    assert _refusal(tmp_path, ",") == f"{path}: line 3 has 2 cells, expected 3"
    table = data.read_csv(path)
    assert table.row_error(0) is None and str(table.row_error(1)) == f"{path}: line 3 has 2 cells, expected 3"


def test_a_label_spanning_lines_that_holds_the_delimiter_is_refused(tmp_path: Path) -> None:
    """Rows read into a quoted label hold the delimiter; a comma in such a label of a ';' file is
    just text (a label may hold one)."""
    rows = "".join(f"{i};{i % 5};{'ab'[i % 2]}\n" for i in range(10))
    path = _write(tmp_path, 'a;b;y\n1;2;"x\n3;4;y"\n' + rows)
    assert _refusal(tmp_path, ";") == (
        f"{path}: line 2, column y: a quoted cell runs over lines 2-3 and holds ';', as if rows were read "
        "into it: 'x\\n3;4;y'; is a quote misplaced? (accepted: a label quoted on its row, or spanning lines "
        "without ';')"
    )
    _write(tmp_path, 'a;b;y\n1;2;"x,\ny"\n' + rows)
    assert data.load(path, delimiter=";").class_names == ("a", "b", "x,\ny")


# ------------------------------------------------------------------------------- decimal commas


def _decimal_file(tmp_path: Path, delimiter: str, column: int) -> Path:
    """``N`` rows whose ``column`` holds ``i,5`` numbers: feature 0 from the second row (file line
    3) on, the label (2) on every row."""
    lines = []
    for i in range(N):
        cells = [str(i), str(i % 4), f"{i % 2}.25"]
        if i >= 1 or column == 2:
            cells[column] = f"{i},5"
        lines.append(delimiter.join(f'"{c}"' if delimiter == "," and "," in c else c for c in cells))
    return _write(tmp_path, delimiter.join("aby") + "\n" + "\n".join(lines) + "\n")


@pytest.mark.parametrize("delimiter", [";", "\t", "|"])
def test_a_decimal_comma_feature_says_so_under_another_delimiter(tmp_path: Path, delimiter: str) -> None:
    """No "(is a the label?)" hint either: the column holds numbers, written with decimal commas."""
    path = _decimal_file(tmp_path, delimiter, 0)
    assert _refusal(tmp_path, delimiter) == (
        f"{path}: line 3, column a: not a number: '1,5' (decimal commas are not read: write 1.5)"
    )


def test_a_quoted_decimal_comma_under_the_comma_is_just_not_a_number(tmp_path: Path) -> None:
    path = _decimal_file(tmp_path, ",", 0)
    assert '"1,5"' in path.read_text()
    assert _refusal(tmp_path, ",") == f"{path}: line 3, column a: not a number: '1,5'"


def test_decimal_comma_labels_are_refused_unless_the_task_says_classes(tmp_path: Path) -> None:
    """Labels that are all decimal commas have no number to mix with: without ``task`` they are
    refused, not read as class names behind the user's back."""
    path = _decimal_file(tmp_path, ";", 2)
    assert _refusal(tmp_path, ";") == (
        f"{path}: line 2, column y: not a number: '0,5' (decimal commas are not read: write 0.5): a quantity "
        "written with decimal commas? write its numbers with points (or, if the labels are class names, pass "
        "task='classification', CLI: --task classification)"
    )
    assert _refusal(tmp_path, ";", task="regression") == (
        f"{path}: line 2, column y: not a number: '0,5' (decimal commas are not read: write 0.5)"
    )
    assert data.load(path, delimiter=";", task="classification").class_names[:3] == ("0,5", "1,5", "10,5")
    # the same labels under the comma (quoted): class names, as before (given as such: all distinct,
    # one class per row, inferred classification is refused since review56 F2)
    comma = _decimal_file(tmp_path, ",", 2)
    assert data.load(comma, task="classification").class_names[:3] == ("0,5", "1,5", "10,5")
    with pytest.raises(data.DataError, match=f"its {N} labels are all distinct"):
        data.load(comma)


def test_decimal_commas_in_a_mixed_label_column_say_so(tmp_path: Path) -> None:
    labels = ["1.5", "2,25", *(f"{i}.75" for i in range(N - 2))]
    path = _write(tmp_path, "a;y\n" + "".join(f"{i};{label}\n" for i, label in enumerate(labels)))
    assert _refusal(tmp_path, ";") == (
        f"{path}: line 3, column y: not a number: '2,25' (decimal commas are not read: write 2.25), but "
        f"{N - 1} of the {N} labels are numbers: torchlean reads no missing values (remove such rows) (the "
        "numbers are not all whole: a quantity, whose rows without one cannot be trained on)"
    )


def test_targets_name_a_decimal_comma_under_another_delimiter() -> None:
    for delimiter, hint in ((";", " (decimal commas are not read: write -0.25e3)"), (",", "")):
        with pytest.raises(DataError) as info:
            data.targets("f.csv", "y", ["1", " -0,25e3"], np.float32, first_line=4, delimiter=delimiter)
        assert str(info.value) == f"f.csv: line 5, column y: not a number: ' -0,25e3'{hint}"
    for text in ("1,2,3", "1,5.0", ",", "a,b"):  # not a number with one decimal comma: no hint
        with pytest.raises(DataError) as info:
            data.targets("f.csv", "y", [text], np.float64, delimiter=";")
        assert str(info.value) == f"f.csv: line 1, column y: not a number: {text!r}"


# ------------------------------------------------------------------------------- header notes


@pytest.mark.parametrize(("delimiter", "shown"), [(";", "0;1;2"), ("\t", "0\\t1\\t2"), ("|", "0|1|2")])
def test_the_header_note_shows_the_row_with_its_delimiter(tmp_path: Path, delimiter: str, shown: str) -> None:
    rows = "".join(delimiter.join((str(i), str(i * 2), str(i % 2))) + "\n" for i in range(N))
    path = _write(tmp_path, delimiter.join("012") + "\n" + rows)
    note = data.read_csv(path, delimiter=delimiter).header_note
    assert note.startswith(f"{path}: first row {shown} is all numbers equal to the column positions")


def test_a_label_column_name_is_still_found(tmp_path: Path) -> None:
    path = _write(tmp_path, "y;a;b\n" + "".join(f"{i % 2};{i};{i * 3}\n" for i in range(N)))
    assert data.load(path, delimiter=";", label_column="y").feature_names == ("a", "b")
    with pytest.raises(UnknownLabelError, match=r"^unknown label column y;a in .* \(known: y \| a \| b\)$"):
        data.load(path, delimiter=";", label_column="y;a")
