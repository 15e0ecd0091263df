"""torchlean.data: CSV layouts that spreadsheets, pandas and numpy write, read through the Python API
(the CLI's side is tests/training/test_csv_layouts_cli.py).

- a label column mixing numbers and non-numbers (a target with missing values) is refused without
  ``task`` instead of becoming one class per value;
- an unnamed last column blank on every line (a trailing comma) is dropped, with a note;
- pandas' ``to_csv`` index (an unnamed first column of the row numbers) is not a feature, with a
  note, and still counts in column indices;
- a ``#`` comment first line and Excel's ``sep=`` first line are recognised;
- a text feature column gets a hint that it may be the label;
- a ``label_column`` string that is a name and another column's index says so in a note.

Oracles: the same data written without the extra column or line, loaded by the rules that were
there before (every array bit for bit equal), and messages written out by hand.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from torchlean import data
from torchlean.data import DataError, Dataset

N = 20


def _write(tmp_path: Path, text: str, name: str = "table.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _rows() -> list[tuple[str, str, str]]:
    """``N`` rows of two features and a class label (cat/dog), every value distinct per column."""
    return [(f"{0.5 * i - 3:g}", f"{(7 * i) % N + 0.25:g}", "cat" if i % 3 else "dog") for i in range(N)]


def _same(got: Dataset, want: Dataset) -> None:
    """``got`` is ``want`` bit for bit: every array, the names, the task and the classes."""
    for a, b in zip(
        (got.x_train, got.x_test, got.y_train, got.y_test, got.feature_mean, got.feature_scale),
        (want.x_train, want.x_test, want.y_train, want.y_test, want.feature_mean, want.feature_scale),
        strict=True,
    ):
        assert a.dtype == b.dtype
        np.testing.assert_array_equal(a, b)
    assert (got.feature_names, got.label_name, got.task, got.class_names) == (
        want.feature_names, want.label_name, want.task, want.class_names
    )


def _clean(tmp_path: Path) -> Path:
    """The oracle file: header ``a,b,y`` and the rows of :func:`_rows`."""
    return _write(tmp_path, "a,b,y\n" + "".join(",".join(row) + "\n" for row in _rows()), "clean.csv")


# ------------------------------------------------------------- F1: numbers and non-numbers as labels


def _target(tmp_path: Path, cell: str, line: int = 5) -> Path:
    """A regression file of ``N`` rows whose target is a non-integer number but on ``line``
    (the header is line 1), which holds ``cell`` as written."""
    rows = [f"{i},{i * i},{0.5 * i + 0.25}" for i in range(N)]
    rows[line - 2] = f"{line},{line * line},{cell}"
    return _write(tmp_path, "a,b,y\n" + "\n".join(rows) + "\n", "target.csv")


MIXED = (
    "but {k} of the {n} labels are numbers: torchlean reads no missing values (remove such rows) (the "
    "numbers are not all whole: a quantity, whose rows without one cannot be trained on)"
)
"""The refusal of a quantity with missing values (review36 F2: reading its values as class names,
which the refusal of whole numbers mixed with names suggests, is no way out for a quantity)."""
MISSING = " (a missing value? torchlean reads none: remove such rows)"
"""The hint a missing-value cell's refusal ends with (review37 F5)."""
MIXED_WHOLE = (
    "but {k} of the {n} labels are numbers: torchlean reads no missing values (remove such rows); pass "
    "task='classification' (CLI: --task classification) to read every label as a class name"
)


@pytest.mark.parametrize(
    ("cell", "shown"),
    [("NA", "'NA'"), ("N/A", "'N/A'"), ("?", "'?'"), ("null", "'null'"), ("True", "'True'"),
     ('"1,5"', "'1,5'"), (" NA ", "' NA '")],
)
def test_a_target_with_a_missing_value_is_refused_without_a_task(
    tmp_path: Path, cell: str, shown: str
) -> None:
    """Was: read as classification with one class per value (test_accuracy 0.0000, exit 0)."""
    path = _target(tmp_path, cell)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 5, column y: not a number: {shown}, " + MIXED.format(k=N - 1, n=N)
    )


def test_an_explicit_task_keeps_reading_such_a_column(tmp_path: Path) -> None:
    path = _target(tmp_path, "NA", line=7)
    with pytest.raises(DataError) as info:
        data.load(path, task="regression")
    assert str(info.value) == f"{path}: line 7, column y: not a number: 'NA'" + MISSING
    names = data.load(path, task="classification", seed=0)
    assert names.task == "classification" and names.n_classes == N  # every label a name, as text
    assert "NA" in names.class_names and "0.25" in names.class_names


def test_the_first_non_number_is_named_and_blanks_are_not_counted_as_numbers(tmp_path: Path) -> None:
    rows = ["a,y", "1,0.5", "2,", "3,1.5", "4,?", "5,NA", "6,2.5"]
    path = _write(tmp_path, "\n".join(rows) + "\n")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 5, column y: not a number: '?', " + MIXED.format(k=3, n=6)


def test_integer_labels_mixed_with_names_are_refused_too(tmp_path: Path) -> None:
    """``1, 2, other``: classes or a quantity? Without ``task`` it is not guessed."""
    path = _write(tmp_path, "a,y\n" + "".join(f"{i},{('1', '2', 'other')[i % 3]}\n" for i in range(9)))
    with pytest.raises(DataError) as info:
        data.load(path)
    refusal = f"{path}: line 4, column y: not a number: 'other', " + MIXED_WHOLE.format(k=6, n=9)
    assert str(info.value) == refusal
    assert data.load(path, task="classification", seed=0).class_names == ("1", "2", "other")


def test_all_numbers_and_all_names_keep_their_rules(tmp_path: Path) -> None:
    floats = _write(tmp_path, "a,y\n" + "".join(f"{i},{i * 0.5}\n" for i in range(10)), "f.csv")
    integers = _write(tmp_path, "a,y\n" + "".join(f"{i},{i % 2}\n" for i in range(10)), "i.csv")
    names = _write(tmp_path, "a,y\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(10)), "n.csv")
    assert data.load(floats).task == "regression"
    assert (data.load(integers).task, data.load(integers).class_names) == ("classification", ("0", "1"))
    assert (data.load(names).task, data.load(names).class_names) == ("classification", ("a", "b"))


def test_a_blank_target_among_non_integers_is_refused_as_not_a_number(tmp_path: Path) -> None:
    """The task is inferred from the non-blank labels (regression), so a blank target is ``not a
    number`` (it was ``not a class label``); among integers it stays ``not a class label``."""
    path = _target(tmp_path, "", line=4)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 4, column y: not a number: ''" + MISSING
    classes = _write(tmp_path, "a,y\n1,0\n2,1\n3,\n4,1\n", "c.csv")
    with pytest.raises(DataError) as info:
        data.load(classes)
    assert str(info.value) == (
        f"{classes}: line 4, column y: not a class label: '' (accepted: a number or a non-blank name)"
    )


# --------------------------------------------------------------- F2: a trailing comma on every line


def test_a_trailing_comma_on_every_line_is_an_ignored_empty_column(tmp_path: Path) -> None:
    """Was: ``column y: not a number: 'cat'`` (the empty column was the label)."""
    path = _write(tmp_path, "a,b,y,\n" + "".join(",".join(row) + ",\n" for row in _rows()))
    d = data.load(path, seed=0)
    _same(d, data.load(_clean(tmp_path), seed=0))
    assert d.n_features == 2 and d.label_name == "y"
    assert d.notes == (
        f"{path}: the last column (3) has no name and is empty on every line (a trailing comma?), so it "
        "is ignored",
    )
    assert d.header_note == ""
    table = data.read_csv(path)
    assert table.names == ("a", "b", "y") and table.first_row == ("a", "b", "y")
    assert all(len(row) == 3 for row in table.rows)
    # column indices count the columns that remain: -1 is y
    _same(data.load(path, label_column=-1, seed=0), d)
    _same(data.load(path, label_column=2, seed=0), d)


def test_a_trailing_comma_without_a_header(tmp_path: Path) -> None:
    """The dropped column is left out before the header is guessed: the first row is all numbers
    (data, with its note), not a header because of its blank last cell."""
    rows = [f"{i},{(3 * i) % 7},{i % 2}" for i in range(N)]
    path = _write(tmp_path, "".join(row + ",\n" for row in rows))
    clean = _write(tmp_path, "".join(row + "\n" for row in rows), "clean.csv")
    d, want = data.load(path, seed=0), data.load(clean, seed=0)
    _same(d, want)
    assert d.feature_names == ("column_0", "column_1")
    assert d.header_note == want.header_note.replace(str(clean), str(path)) != ""
    assert d.notes == (
        f"{path}: the last column (3) has no name and is empty on every line (a trailing comma?), so it "
        "is ignored",
    )


def test_an_empty_last_column_is_kept_when_named_or_filled_somewhere(tmp_path: Path) -> None:
    """Only an unnamed column blank on every line is dropped: a named one stays (the default
    label, so y is a feature and refused with a hint), and so does one with a cell somewhere."""
    hint = ("not a number: 'dog' (feature columns must be numbers: if y is categorical, one-hot encode it, "
            "e.g. with pandas.get_dummies; if it is the label, pass label_column='y' (CLI: --label-column "
            "y))")
    named = _write(tmp_path, "a,b,y,z\n" + "".join(",".join(row) + ",\n" for row in _rows()), "named.csv")
    assert data.read_csv(named).names == ("a", "b", "y", "z")
    with pytest.raises(DataError) as info:
        data.load(named)
    assert str(info.value) == f"{named}: line 2, column y: {hint}"
    with pytest.raises(DataError) as info:  # z is a feature then: blank, so no hint
        data.load(named, label_column="y")
    assert str(info.value) == f"{named}: line 2, column z: not a number: ''" + MISSING
    lines = [",".join(row) + "," for row in _rows()]
    lines[3] += "x"
    filled = _write(tmp_path, "a,b,y,\n" + "\n".join(lines) + "\n", "filled.csv")
    table = data.read_csv(filled)
    assert (table.names, table.notes) == (("a", "b", "y", ""), ())
    with pytest.raises(DataError) as info:
        data.load(filled)
    assert str(info.value) == f"{filled}: line 2, column y: {hint}"


# --------------------------------------------------------------------- F3: pandas' to_csv index


def _indexed(tmp_path: Path, first: str = "", numbers: list[str] | None = None) -> Path:
    """What ``DataFrame.to_csv(path)`` writes for the oracle file: ``,a,b,y`` and the row numbers."""
    numbers = [str(i) for i in range(N)] if numbers is None else numbers
    body = "".join(f"{n},{','.join(row)}\n" for n, row in zip(numbers, _rows(), strict=True))
    return _write(tmp_path, f"{first},a,b,y\n{body}", "indexed.csv")


def test_pandas_index_column_is_not_a_feature(tmp_path: Path) -> None:
    path = _indexed(tmp_path)
    d = data.load(path, seed=0)
    _same(d, data.load(_clean(tmp_path), seed=0))
    assert d.n_features == 2 and d.feature_names == ("a", "b")
    assert d.notes == (
        f"{path}: column 0 has no name and holds the row numbers 0..{N - 1} in order, as pandas' to_csv "
        "writes its index, so it is not used as a feature (to_csv(index=False) leaves it out; a name in its "
        "header cell makes it a feature)",
    )
    table = data.read_csv(path)
    assert (table.index_column, table.names, table.feature_indices(3)) == (0, ("", "a", "b", "y"), [1, 2])
    # indices count the index column: 3 and -1 are y, 1 is a
    for label in (3, -1, "3", "y"):
        _same(data.load(path, label_column=label, seed=0), d)
    assert (table.feature_indices(1), table.feature_indices(None), table.feature_indices(0)) == (
        [2, 3], [1, 2, 3], [1, 2, 3]
    )


def test_pandas_index_as_the_label_is_the_label(tmp_path: Path) -> None:
    rows = "".join(f"{i},{a},{b}\n" for i, (a, b, _) in enumerate(_rows()))
    path = _write(tmp_path, ",a,b\n" + rows, "index_label.csv")
    d = data.load(path, label_column=0, task="regression", seed=0)
    assert (d.label_name, d.feature_names, d.notes) == ("0", ("a", "b"), ())


@pytest.mark.parametrize(
    ("first", "numbers", "held"),
    [
        ("", [str(i + 1) for i in range(N)], "distinct whole numbers"),  # re-indexed from 1
        ("", ["1", "0", *map(str, range(2, N))], "distinct whole numbers"),  # shuffled
        ("", [str(7 * i + 3) for i in reversed(range(N))], "distinct whole numbers"),  # filtered, sorted
        ("Unnamed: 0", None, "the row numbers 0..{last} in order"),  # pd.read_csv(...).to_csv(...)
    ],
)
def test_other_integer_indexes_are_pandas_index_too(
    tmp_path: Path, first: str, numbers: list[str] | None, held: str
) -> None:
    """review36 F1: a filtered, shuffled or re-indexed frame's to_csv index, or pandas' name for an
    unnamed column, leaked the row number into the features."""
    path = _indexed(tmp_path, first, numbers)
    d = data.load(path, seed=0)
    _same(d, data.load(_clean(tmp_path), seed=0))
    unnamed = "has no name" if not first else f"is named {first!r}, as pandas names an unnamed column,"
    assert d.notes == (
        f"{path}: column 0 {unnamed} and holds {held.format(last=N - 1)}, as pandas' to_csv writes its "
        "index, so it is not used as a feature (to_csv(index=False) leaves it out; a name in its header cell "
        "makes it a feature)",
    )


@pytest.mark.parametrize(
    ("first", "numbers"),
    [
        ("id", None),  # named: a column the user wrote
        ("Unnamed: x", None),  # not pandas' name
        ("", ["1", "1", *map(str, range(2, N))]),  # a repeated number: not row labels
        ("", [f"{i}.0" for i in range(N)]),  # not written as integers
    ],
)
def test_other_first_columns_stay_features(tmp_path: Path, first: str, numbers: list[str] | None) -> None:
    path = _indexed(tmp_path, first, numbers)
    d = data.load(path, seed=0)
    assert d.feature_names == (first, "a", "b") and data.read_csv(path).index_column is None
    # a blank name is noted: such a column is often an index (review37 F1); 'id' and 'Unnamed: x' are names
    assert d.notes == (() if first else (
        f"{path}: column 0 has no name of its own (blank, or pandas' 'Unnamed: N') and is used as a feature: "
        "if it is an index an earlier to_csv wrote, remove it (row numbers can give the label away)",
    ))


def test_a_pandas_round_trip_index_kept_as_a_feature_is_noted(tmp_path: Path) -> None:
    """review37 F1: ``pd.read_csv(a).to_csv(b)`` writes ``,Unnamed: 0,...``: column 0 is the index
    (left out), column 1 the earlier index, a feature that leaks the row number: noted."""
    body = "".join(f"{i},{i},{','.join(row)}\n" for i, row in enumerate(_rows()))
    path = _write(tmp_path, ",Unnamed: 0,a,b,y\n" + body, "roundtrip.csv")
    d = data.load(path, seed=0)
    assert d.feature_names == ("Unnamed: 0", "a", "b")
    assert d.notes[-1] == (
        f"{path}: column Unnamed: 0 has no name of its own (blank, or pandas' 'Unnamed: N') and is used as a "
        "feature: if it is an index an earlier to_csv wrote, remove it (row numbers can give the label away)"
    )


def test_pandas_index_and_a_label_alone_are_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, ",y\n" + "".join(f"{i},{'ab'[i % 2]}\n" for i in range(6)))
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: expected a label column and at least one feature column, got the label column y and "
        "column 0, pandas' to_csv index of row numbers, which is not a feature"
    )


def test_pandas_index_needs_a_header(tmp_path: Path) -> None:
    """Without a header no cell names the column, so it is data."""
    path = _write(tmp_path, "".join(f"{i},{i * 0.5},{i % 2}\n" for i in range(10)))
    assert data.load(path, header=False, seed=0).feature_names == ("column_0", "column_1")


# ---------------------------------------------------------- F4: comment and separator first lines


@pytest.mark.parametrize(("text", "line"), [("# a,b,y\n", 1), ("\n\n#comment\n", 3)])
def test_a_comment_first_line_is_refused(tmp_path: Path, text: str, line: int) -> None:
    path = _write(tmp_path, text + "".join(",".join(row) + "\n" for row in _rows()))
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line {line} starts with '#', a comment line: comment lines are not supported "
        "(accepted: a header row or a data row first; remove the comment lines, or rename a first column "
        "whose name starts with '#'; numpy's savetxt writes its header as a comment unless given "
        "comments='')"
    )


@pytest.mark.parametrize("line", ["sep=,", "SEP=,"])
def test_excel_comma_separator_line_is_skipped(tmp_path: Path, line: str) -> None:
    path = _write(tmp_path, f"{line}\na,b,y\n" + "".join(",".join(row) + "\n" for row in _rows()))
    d = data.load(path, seed=0)
    _same(d, data.load(_clean(tmp_path), seed=0))
    assert d.notes == (f"{path}: line 1 {line!r} is Excel's separator line naming a comma; it was skipped",)
    assert data.read_csv(path).lines[0] == 3  # the file's lines still count it


@pytest.mark.parametrize(
    ("separator", "shown", "python", "cli"),
    [(";", "';'", "';'", "';'"), ("\t", "tabs", "'\\t'", "tab"), ("|", "'|'", "'|'", "'|'")],
)
def test_excel_separator_line_of_another_separator_is_refused(
    tmp_path: Path, separator: str, shown: str, python: str, cli: str
) -> None:
    """Read with the comma, the line names the delimiter that reads the file (and that one does:
    tests/data/test_csv_delimiter.py)."""
    rows = "".join(separator.join(row) + "\n" for row in _rows())
    path = _write(tmp_path, f"sep={separator}\n{separator.join('aby')}\n{rows}")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 1: Excel's separator line {'sep=' + separator!r} says the file is separated by "
        f"{shown}, not commas: pass delimiter={python} (CLI: --delimiter {cli})"
    )


def test_a_text_feature_column_hints_that_it_is_the_label(tmp_path: Path) -> None:
    """``y,a,b,c`` with text in y: the label defaults to c, and y's first cell is refused with a
    hint; a column with a number somewhere gets none."""
    rows = "".join(f"{'ab'[i % 2]},{i},{i * 2},{i % 2}\n" for i in range(8))
    path = _write(tmp_path, "y,a,b,c\n" + rows)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 2, column y: not a number: 'a' (feature columns must be numbers: if y is categorical, "
        "one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass label_column='y' (CLI: "
        "--label-column y))"
    )
    assert data.load(path, label_column="y", seed=0).feature_names == ("a", "b", "c")
    # a repeated name: the hint gives the index; a name needing quotes is quoted for the shell
    rows = "".join(f"{i},{'ab'[i % 2]},{i % 2}\n" for i in range(8))
    repeated = _write(tmp_path, "x,x,c\n" + rows, "r.csv")
    with pytest.raises(DataError) as info:
        data.load(repeated)
    assert str(info.value) == (
        f"{repeated}: line 2, column 1 ('x'): not a number: 'a' (feature columns must be numbers: if 1 ('x') "
        "is categorical, one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass "
        "label_column=1 (CLI: --label-column 1))"
    )
    rows = "".join(f"{'ab'[i % 2]},{i},{i % 2}\n" for i in range(8))
    spaced = _write(tmp_path, "my label,a,c\n" + rows, "s.csv")
    with pytest.raises(DataError) as info:
        data.load(spaced)
    assert str(info.value).endswith(
        "(feature columns must be numbers: if my label is categorical, one-hot encode it, e.g. with "
        "pandas.get_dummies; if it is the label, pass label_column='my label' (CLI: --label-column "
        "'my label'))"
    )
    # one number in the column: a typo in a feature, no hint
    rows = "".join(f"{'1' if i == 5 else 'ab'[i % 2]},{i},{i % 2}\n" for i in range(8))
    mostly = _write(tmp_path, "y,a,c\n" + rows, "m.csv")
    with pytest.raises(DataError) as info:
        data.load(mostly)
    assert str(info.value) == f"{mostly}: line 2, column y: not a number: 'a'"


# -------------------------------------------------------- F7: a label column name that is an index


def test_a_label_column_name_that_is_another_index_is_the_name_with_a_note(tmp_path: Path) -> None:
    rows = "".join(f"{i * 0.5},{i % 3},{(7 * i) % 5},{i % 2}\n" for i in range(30))
    path = _write(tmp_path, "a,3,b,y\n" + rows)
    d = data.load(path, label_column="3", seed=0)
    assert (d.label_name, d.feature_names, d.class_names) == ("3", ("a", "b", "y"), ("0", "1", "2"))
    assert d.notes == (
        f"{path}: label column '3' is a column name and a column index: it was read as the name (column 1), "
        "not as index 3 (column y); names come first: for that index pass label_column=3 as an int (CLI: "
        "--label-column -1 or --label-column y)",
    )
    by_index = data.load(path, label_column=3, seed=0)
    assert (by_index.label_name, by_index.notes) == ("y", ())
    assert data.load(path, label_column="-1", seed=0).notes == ()  # names no column: the index
    # a name at its own index (pandas' 0,1,2 header) is not ambiguous
    numbered = _write(tmp_path, "0,1,2\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(10)), "n.csv")
    assert data.load(numbered, label_column="2", seed=0).notes == ()
    # the name out of index range: no index to confuse it with
    far = _write(tmp_path, "a,7,y\n" + "".join(f"{i},{i % 2},{i % 2}\n" for i in range(10)), "far.csv")
    assert data.load(far, label_column="7", seed=0).notes == ()


# ------------------------------------------------- near misses of the layouts above (review36 F11)


def test_two_trailing_commas_drop_two_empty_columns(tmp_path: Path) -> None:
    body = "".join(f"{a},{b},{y},,\n" for a, b, y in _rows())
    path = _write(tmp_path, "a,b,y,,\n" + body, "two.csv")
    d = data.load(path, seed=0)
    _same(d, data.load(_clean(tmp_path), seed=0))
    assert [note.split(": ", 1)[1] for note in d.notes] == [
        "the last column (4) has no name and is empty on every line (a trailing comma?), so it is ignored",
        "the last column (3) has no name and is empty on every line (a trailing comma?), so it is ignored",
    ]


def test_a_trailing_comma_on_some_lines_is_named_in_the_row_error(tmp_path: Path) -> None:
    rows = [",".join(row) for row in _rows()]
    data_only = _write(tmp_path, "a,b,y\n" + "".join(f"{row},\n" for row in rows), "data_only.csv")
    with pytest.raises(DataError) as info:
        data.load(data_only)
    assert str(info.value) == (
        f"{data_only}: line 2 has 4 cells, expected 3 (its last cell is empty: a trailing comma on this "
        "line?)"
    )
    header_only = _write(tmp_path, "a,b,y,\n" + "".join(f"{row}\n" for row in rows), "header_only.csv")
    with pytest.raises(DataError) as info:
        data.load(header_only)
    assert str(info.value) == (
        f"{header_only}: line 2 has 3 cells, expected 4 (the header's last cell is empty: a trailing comma "
        "on the header line?)"
    )
    short = _write(tmp_path, "a,b,y\n1,2\n" + "".join(f"{row}\n" for row in rows), "short.csv")
    with pytest.raises(DataError) as info:
        data.load(short)
    assert str(info.value) == f"{short}: line 2 has 2 cells, expected 3"  # no hint: nothing trails


@pytest.mark.parametrize("line", ["sep=, ", " sep=,", "SEP=,  "])
def test_the_separator_line_with_blanks_around_it_is_skipped(tmp_path: Path, line: str) -> None:
    body = "".join(",".join(row) + "\n" for row in _rows())
    d = data.load(_write(tmp_path, f"{line}\na,b,y\n{body}", "sep.csv"), seed=0)
    _same(d, data.load(_clean(tmp_path), seed=0))
    assert len(d.notes) == 1 and "is Excel's separator line naming a comma; it was skipped" in d.notes[0]


@pytest.mark.parametrize(
    ("cell", "shown", "kind"),
    [("NULL", "'NULL'", "not a number"), ("\\N", "'\\\\N'", "not a number"), ("", "''", "not a number"),
     ("NaN", "'NaN'", "not a finite number"), ("None", "'None'", "not a number")],
)
def test_a_missing_feature_value_is_named_so(tmp_path: Path, cell: str, shown: str, kind: str) -> None:
    """review37 F5: database and pandas exports write a missing value as NULL, \\N, an empty cell
    or NaN; the refusal says what it probably is."""
    rows = [",".join(row) for row in _rows()]
    rows[2] = f"{cell},{rows[2].split(',', 1)[1]}"
    path = _write(tmp_path, "a,b,y\n" + "\n".join(rows) + "\n", "db.csv")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 4, column a: {kind}: {shown} (a missing value? torchlean reads none: remove such rows)"
    )
    rows[2] = f"oops,{rows[2].split(',', 1)[1]}"  # not a missing-value spelling: no hint
    with pytest.raises(DataError, match=r"column a: not a number: 'oops'$"):
        data.load(_write(tmp_path, "a,b,y\n" + "\n".join(rows) + "\n", "oops.csv"))


ADVICE = (
    '; save it as UTF-8 (Excel: "CSV UTF-8"), or convert it, e.g. iconv -f WINDOWS-1252 -t UTF-8 FILE > '
    'NEW_FILE for Excel\'s "CSV (Comma delimited)" on Windows'
)


@pytest.mark.parametrize("bom", [b"", b"\xef\xbb\xbf"], ids=["plain", "utf8-bom"])
def test_a_windows_1252_file_is_refused_naming_its_line_and_the_way_out(tmp_path: Path, bom: bytes) -> None:
    """review42 F3: a Windows Excel export (Windows-1252, ``é`` is the byte 0xE9) was refused with
    the decoder's offset in its chunk and no hint. Oracle: the line and file offset counted by hand."""
    text = "a,b,y\n1,2,cat\n3,4,caf\xe9\n5,6,cat\n"
    path = tmp_path / "excel.csv"
    path.write_bytes(bom + text.encode("cp1252"))
    offset = len(bom) + text.index("\xe9")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 3: byte 0xE9 (offset {offset} in the file) is not UTF-8 text{ADVICE}"
    )
    path.write_bytes(bom + text.encode("utf-8"))  # the same text as UTF-8 loads
    assert data.load(path, task="classification").class_names == ("caf\xe9", "cat")


def _utf16(encoding: str = "UTF-16") -> str:
    return (
        f"convert it, e.g. iconv -f {encoding} -t UTF-8 FILE > NEW_FILE (Excel's \"Unicode Text\" writes "
        "UTF-16, tab-separated: then pass delimiter='\\t' (CLI: --delimiter tab)), or save it as "
        "\"CSV UTF-8\""
    )


def test_utf16_files_are_named_as_such(tmp_path: Path) -> None:
    """review43 F1/F2: Excel's "Unicode Text" (UTF-16 with a byte-order mark) was told to convert
    from Windows-1252, which gives a file of NULs; UTF-16 without the mark read as UTF-8 printed
    raw NUL bytes in a --label-column hint. Oracle: the encodings written with Python's codecs."""
    text = "a\tb\ty\n1\t2\tcat\n3\t4\tdog\n"
    path = tmp_path / "unicode.txt"
    path.write_bytes(text.encode("utf-16"))  # byte-order mark, as Excel writes it
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="\t")
    assert str(info.value) == (
        f"{path}: the file is UTF-16 text (it starts with UTF-16's byte-order mark), not UTF-8: {_utf16()}"
    )
    # no mark: decodes as UTF-8 with a NUL after (LE) or before (BE) each character; iconv's bare
    # UTF-16 is the platform's order, so the advice names it (review44 F4)
    for codec, order in (("utf-16-le", "UTF-16LE"), ("utf-16-be", "UTF-16BE")):
        path.write_bytes(text.encode(codec))
        with pytest.raises(DataError) as info:
            data.load(path, delimiter="\t")
        assert str(info.value) == (
            f"{path}: line 1 holds NUL characters (\\x00), as UTF-16 text read as UTF-8 does; if the file is "
            f"UTF-16, {_utf16(order)}"
        )
    path.write_bytes(text.replace("cat", "caf\xe9").encode("utf-16-be"))  # 00 E9: not UTF-8 after NULs
    with pytest.raises(DataError) as info:
        data.load(path, delimiter="\t")
    assert str(info.value).startswith(f"{path}: line 2: byte 0xE9 (offset ")
    assert str(info.value).endswith(
        f"is not UTF-8 text, and NUL bytes come before it, as in UTF-16 text: {_utf16('UTF-16BE')}"
    )


def test_the_line_of_a_byte_that_is_not_utf8_counts_cr_line_ends(tmp_path: Path) -> None:
    """review43 F5: lines ending in a bare CR (classic Mac) were not counted (line 1 for line 3)."""
    path = tmp_path / "mac.csv"
    path.write_bytes(b"a,b,y\r1,2,cat\r3,4,caf\xe9\r5,6,cat\r")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value).startswith(f"{path}: line 3: byte 0xE9 (offset 21 in the file) is not UTF-8 text")
