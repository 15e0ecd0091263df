"""The CSV feature reader's column-at-a-time path (``_csv._well_formed``) against the
cell-by-cell reader (``_cells._number``), which stays the oracle and the source of every refusal.

The column path leans on one fact about Python: on ASCII text without ``_``, every cell that
``float`` reads is a number to ``DECIMAL_NUMBER`` once ``str.strip`` removed its blanks, with the
same value. The converse does not hold (``float`` does not strip the separators ``\x1c``-``\x1f``,
which ``str.strip`` does): such a column goes cell by cell. The property tests check that fact and
the two readers' agreement on generated columns.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean import _cells, _csv, data
from torchlean._checks import DECIMAL_NUMBER
from torchlean.data import DataError

FLOAT64 = np.dtype(np.float64)

# cells near the grammar's edges: signs, points, exponents, inf/nan spellings, ASCII blanks
# (the separators \x1c-\x1f are blanks to str.strip), underscores and stray letters
NEAR_NUMBERS = st.text(alphabet="0123456789+-.eE_ infINFatyTY\t\x0b\x0c\x1c\x1f", max_size=10)
ASCII = st.text(alphabet=st.characters(max_codepoint=127), max_size=8)
CELLS = st.one_of(NEAR_NUMBERS, ASCII, st.floats().map(repr), st.integers().map(str))


def _cell_value(cell: str) -> float | None:
    try:
        return _cells._number("t.csv", 2, "a", cell, FLOAT64)
    except DataError:
        return None


@settings(max_examples=400, deadline=None)
@given(CELLS)
def test_what_float_reads_in_ascii_the_number_grammar_reads_too(cell: str) -> None:
    if "_" in cell:
        return
    try:
        value = float(cell)
    except ValueError:
        return
    assert DECIMAL_NUMBER.fullmatch(cell.strip()) is not None
    assert float(cell.strip()) == value or (np.isnan(value) and np.isnan(float(cell.strip())))


def test_float_strips_fewer_blanks_than_str_strip() -> None:
    """Why a column whose cells hold the separators ``\x1c``-``\x1f`` is read cell by cell."""
    with pytest.raises(ValueError):
        float("0\x1f")
    assert DECIMAL_NUMBER.fullmatch("0\x1f".strip())
    assert _csv._well_formed([["0\x1f"]], 1, None, [0]) is None


@settings(max_examples=300, deadline=None)
@given(st.lists(CELLS, min_size=1, max_size=6), st.integers(min_value=1, max_value=3))
def test_column_reader_agrees_with_the_cell_reader(cells: list[str], width: int) -> None:
    rows = [[cell] * width + ["0"] for cell in cells]  # every feature column the same, label last
    read = _csv._well_formed(rows, width + 1, width, list(range(width)))
    fast = None if read is None else read[0]
    values = [_cell_value(cell) for cell in cells]
    if any(value is None for value in values):
        assert fast is None  # the cell-by-cell reader then raises the first refusal
        return
    if any(separator in cell for cell in cells for separator in "\x1c\x1d\x1e\x1f"):
        assert fast is None  # float refuses them, the cell reader strips them (see above)
        return
    assert fast is not None
    expected = np.array(values, dtype=np.float64)
    for j in range(width):
        assert np.array_equal(fast[:, j], expected)
        assert np.array_equal(np.signbit(fast[:, j]), np.signbit(expected))  # -0.0 kept


def test_a_well_formed_file_is_read_without_the_cell_reader(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n 1.5 ,-0,x\n+.5,1E3,y\n\t2,1e-3,x\n")

    def refuse(*args: object, **kwargs: object) -> float:
        raise AssertionError("the cell-by-cell reader ran on a well-formed file")

    monkeypatch.setattr(_csv, "_number", refuse)  # the name Table.columns calls
    table = data.read_csv(path)
    x, labels = table.columns(2)
    assert x.tolist() == [[1.5, -0.0], [0.5, 1000.0], [2.0, 0.001]]
    assert np.signbit(x[0, 1])
    assert labels == ["x", "y", "x"]


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ("1,2,0\n3,x,1\n", "line 3, column b: not a number: 'x'"),
        ("1,2,0\n3,nan,1\n", "line 3, column b: not a finite number: 'nan'"),
        ("1,2,0\n1e400,2,1\n", "line 3, column a: '1e400' is outside the float64 range"),
        ("1,2,0\n3,1_0,1\n", "line 3, column b: not a number: '1_0'"),
        ("1,2,0\n3,4\n", "line 3 has 2 cells, expected 3"),
        # the first refusal in file order wins, whichever column it is in
        ("1,x,0\ny,2,1\n", "line 2, column b: not a number: 'x'"),
    ],
)
def test_refusals_still_come_from_the_cell_reader(tmp_path: Path, body: str, message: str) -> None:
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n" + body)
    with pytest.raises(DataError) as info:
        data.read_csv(path).columns(2)
    assert message in str(info.value)


def test_a_table_without_rows_has_empty_columns(tmp_path: Path) -> None:
    """read_csv refuses a file without data rows, but a Table built by hand may have none: empty
    features and labels, as the cell-by-cell reader gave (review20 diff F1: IndexError)."""
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n1,2,x\n")
    table = data.read_csv(path)
    empty = data.Table(table.file, table.names, True, table.first_row, [], (), "")
    x, labels = empty.columns(2)
    assert (x.shape, x.dtype, labels) == ((0, 2), np.float64, [])
    assert empty.columns(None)[0].shape == (0, 3)

