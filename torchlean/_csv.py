"""CSV files read into cells: :func:`read_csv` and its :class:`Table`, with the rules that decide a
file's layout (header, Excel's ``sep=`` line, comment lines, a trailing delimiter, R's row names,
pandas' index column) and the hints of its refusals (another separator, the label column).
:mod:`torchlean.data` re-exports the public names and loads a :class:`~torchlean.data.Dataset`
from a :class:`Table` (:func:`~torchlean.data.load`, :func:`~torchlean.data.load_csv`); the cells
are read by :mod:`torchlean._cells`, the label column found by :mod:`torchlean._labels`.

CSV files: one sample per row (empty lines skipped, a row of blank cells refused: :func:`read_csv`);
the label column is chosen by name or index (default: the last column). Header rule
(``header=None``, the default): the first row is a header when one of its cells is not a number,
or when its cells are exactly the column positions ``0,1,...,n-1`` (the header
``pandas.DataFrame(array).to_csv(index=False)`` writes; its names equal the indices, so
``label_column="2"`` and ``label_column=2`` agree); any other all-numbers first row is data.
Either all-numbers decision is a guess, reported in :attr:`torchlean.data.Dataset.header_note`, and
so is a header read from a row with one text cell among numbers (``1,2,3,4,setosa``: the first
sample of a headerless file with text labels, or a header); ``header=True`` / ``header=False``
decide explicitly (and leave the note empty, except that ``header=True`` on an all-numbers first
row other than the column positions notes that the row, which looks like data, was read as the
header). Column names may repeat or be blank (``x,x,x,y`` or
``,,,y``, as pandas reads such files); only a ``label_column`` given by a name the header repeats
is refused, as it could not say which column it means (give its index); names are compared in
Unicode NFC form, so two names that are one in that form (``café`` with a composed accent and with a
combining one) are repeated there, with a note (review115 F2). Messages about a cell name
a repeated or blank column by its index. Cells are separated by commas unless ``delimiter`` names
another character (``';'``, as European spreadsheets export, ``'\\t'`` for TSV files, ``'|'``; one
character, not a quote, a line break, a digit, ``.``, ``+``, ``-``, ``e``, ``E`` or a blank other
than tab, which would clash with quoting, rows or numbers), or ``delimiter="whitespace"`` reads
cells separated by runs of spaces and tabs, blanks at the ends of a line ignored and double-quoted
cells holding blanks (numpy's ``savetxt`` and R's ``write.table`` defaults, as pandas'
``read_csv(sep=r"\\s+")`` and ``np.loadtxt`` read them); a first row read as one column that another
common separator (``,``, ``;``, tab, ``|``) would split says so, as does one that blanks split (with
the first data row) under a one-character delimiter, and so does a row of another cell count
than the header when both hold such a separator as often (a header name holding the delimiter,
quoted). Decimal commas are not read
(:mod:`torchlean._cells`). Before the header is decided, Excel's first line ``sep=X`` is skipped
when ``X`` is the delimiter and refused, naming the delimiter to give, when it names another; a
first line starting with ``#`` is refused (comment lines are not read; numpy's ``savetxt`` writes
its header so unless given ``comments=''``; under ``delimiter="whitespace"`` its line ``# a b y`` is
read as the header, with a note, when it names a column per cell of the next row, unless
``header=False``); and a last column with no name (or any last column, without a header) whose
cells are blank on every line, as a delimiter ending every line makes it, is dropped, so the label
defaults to the column before it. A header of two names or more one cell shorter than every data
row (R's ``write.table`` with its default row names, which pandas reads as an index) drops the first
cell of each data row (not when one is blank, nor when every last cell is: a delimiter leading or
trailing the data lines, nor when two first cells are equal, as R's row names are distinct: the
row-length error then asks about a cell holding the delimiter unquoted), so column indices are the
header's; an error reading the cells after that says so. After it, a first column whose header cell
is blank (or pandas' ``Unnamed: N``) over distinct integers (the index ``DataFrame.to_csv()``
writes: ``0, 1, ..., n-1`` by default, other integers in any order after a filter, a shuffle or a
re-index) is not a feature unless it is the label column; it still counts in column indices. Each
of these is reported in :attr:`torchlean.data.Dataset.notes`. A feature cell that is not a number,
in a column with no number in any row, is refused with a hint that features must be numbers (a
categorical column one-hot encoded) and that the column may be the label.
"""

from __future__ import annotations

import codecs
import contextlib
import csv
import io
import itertools
import json
import os
import re
import shlex
import sys
from collections import Counter
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from torchlean import _delimiter, _whitespace
from torchlean._cells import (
    _cell_shown,
    _is_number,
    _number,
    _respelled,
    _shown,
    display_name,
    first_respelling,
    nfc,
    quoted,
)
from torchlean._checks import DECIMAL_INTEGER, is_builtin_or_numpy_int
from torchlean._checks import shown as value_shown
from torchlean._data_errors import DataError, DataMemoryError
from torchlean._labels import _label_index, _label_name_note
from torchlean._paths import lookup_failure, missing_file_name
from torchlean._rows import Rows, blocks, lengths
from torchlean.backend.display import path_shown
from torchlean.backend.errors import TorchLeanError, UnknownLabelError

__all__ = [
    "STDIN", "BlankRowError", "Table", "check_file", "read_csv", "refused_character", "stdin_read_once"
]

Array: TypeAlias = npt.NDArray[Any]

STDIN = "/dev/stdin"
"""The path ``--dataset -`` reads (standard input)."""

_FLOAT64 = np.dtype(np.float64)


@dataclass(frozen=True, slots=True, eq=False)
class Table:
    """A CSV file read into cells, before any column is converted (:func:`read_csv`).

    ``names`` has one entry per column: the first row's cells (blanks around them stripped) when
    it is a header, else ``column_<i>``; ``first_row`` is the file's first row as read; ``rows``
    are the data rows as read (empty lines skipped; :func:`read_csv` refuses a row of blank cells);
    ``lines`` the file line on which each of them starts (empty lines and cells holding line breaks
    counted, as an editor numbers lines);
    ``header_note`` as :attr:`torchlean.data.Dataset.header_note`; ``notes`` what else :func:`read_csv` noted
    (Excel's ``sep=`` line skipped, numpy's ``savetxt`` header ``# a b y`` read as the header, an
    unnamed empty last column dropped from ``names`` and ``rows``, R's row names dropped from
    ``rows``). ``index_column`` is ``0`` when the first
    column is pandas' ``to_csv`` index (an unnamed header cell over the row numbers
    ``0 .. len(rows) - 1``, in order), which :meth:`feature_indices` leaves out unless it is the
    label column; else ``None``. It stays in ``names`` and ``rows``, so column indices count it.
    ``delimiter`` is the character the cells were separated by (messages name it), or
    ``"whitespace"``. ``row_names`` is whether the first cell of each data row was dropped as R's
    row name (:meth:`notes_told` adds it to the errors of reading the cells). ``source`` is
    the file as messages name it (:attr:`shown_file`): the path as given to :func:`read_csv`,
    ``./iris`` as typed (``file``, a ``Path``, would drop the ``./``), and :data:`STDIN` as
    ``standard input (-)``, as the command line's ``--dataset -`` reads it.
    """

    file: Path
    names: tuple[str, ...]
    has_header: bool
    first_row: tuple[str, ...]
    rows: Sequence[list[str]]
    lines: tuple[int, ...]
    header_note: str
    notes: tuple[str, ...] = ()
    index_column: int | None = None
    delimiter: str = _delimiter.COMMA
    row_names: bool = False
    source: str = ""
    _name_counts: Mapping[str, int] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        # how often each name occurs, so that naming every column is linear (review67 F8)
        object.__setattr__(self, "_name_counts", Counter(self.names))

    @property
    def shown_file(self) -> str:
        """The file as messages name it: :attr:`source`, else ``str(file)`` (a Table built by
        hand), as :func:`~torchlean.backend.display.path_shown` shows it (one line; ``$'...'``
        where it holds what is not printable: review210 F3)."""
        return path_shown(self.source or str(self.file))

    @property
    def first_line(self) -> int:
        """The file line of the first data row."""
        return self.lines[0]

    def column(self, label_column: object, *, header_note: bool = True) -> int:
        """The index of ``label_column``: ``None`` for the last column, an integer index (Python
        or numpy; negative counts from the end), or a header name used exactly once, else a
        string of an integer (``"2"``, ``"-1"``) as that index (the CLI's ``--label-column``); a
        name that is also another column's index is the name (:meth:`label_note` says so).

        Raises:
            UnknownLabelError: an index out of range or an unknown name, naming the accepted ones,
                and for an unknown name, when the first row was guessed to be a header and
                ``header_note`` (a caller that printed it already passes False), how that row was
                read (:attr:`header_note`, which explains names such as ``1 | 2 | x``: review198
                F6, review200 F6).
            DataError: a name the header repeats (ambiguous), naming its columns.
        """
        try:
            return _label_index(self.shown_file, self.names, label_column, self.has_header)
        except UnknownLabelError as error:
            named = isinstance(label_column, str) and not DECIMAL_INTEGER.fullmatch(label_column.strip())
            if not (header_note and named and self.has_header and self.header_note):
                raise
            raise UnknownLabelError(f"{error}; {self.header_note}") from None

    def label_note(self, label_column: object) -> str:
        """The note on a ``label_column`` string that :meth:`column` read as a header name though
        it is also an integer index of another column (``"3"`` naming column 1 of five), saying how
        to ask for the index; else ``""``."""
        return _label_name_note(self.shown_file, self.names, label_column, self.has_header)

    def feature_indices(self, label: int | None) -> list[int]:
        """The indices of the feature columns, ascending: every column but ``label`` and, unless
        it is ``label``, :attr:`index_column`."""
        return [i for i in range(len(self.names)) if i != label and i != self.index_column]

    def index_note(self, label: int | None) -> str:
        """The note that :attr:`index_column` is not used as a feature (``""`` when there is none
        or it is ``label``)."""
        if self.index_column is None or self.index_column == label:
            return ""
        name = self.names[self.index_column]
        unnamed = "has no name" if not name else f"is named {name!r}, as pandas names an unnamed column,"
        cells = [row[self.index_column].strip() for row in self.rows]
        in_order = cells == [str(r) for r in range(len(cells))]
        held = f"the row numbers 0..{len(self.rows) - 1} in order" if in_order else "distinct whole numbers"
        return (
            f"{self.shown_file}: column {self.index_column} {unnamed} and holds {held}, as pandas' to_csv "
            "writes its index, so it is not used as a feature (to_csv(index=False) leaves it out; a name in "
            "its header cell makes it a feature)"
        )

    def unnamed_features_note(self, label: int | None) -> str:
        """The note naming the feature columns (:meth:`feature_indices`) whose header cell is
        blank or pandas' ``Unnamed: N``: used as features, though such a column is often an index
        an earlier ``to_csv`` wrote (review37 F1: the row numbers of class-sorted data leak the
        label); ``""`` when there is none or the file has no header."""
        if not self.has_header:
            return ""
        unnamed = [
            i for i in self.feature_indices(label)
            if _unnamed(self.names[i])
        ]
        if not unnamed:
            return ""
        shown = ", ".join(self.shown(i) for i in unnamed)
        several = len(unnamed) > 1
        has, are, one = (
            ("have", "are used as features", "one") if several else ("has", "is used as a feature", "it")
        )
        return (
            f"{self.shown_file}: column{'s' if several else ''} {shown} {has} no name of its own (blank, or "
            f"pandas' 'Unnamed: N') and {are}: if {one} is an index an earlier to_csv wrote, remove it (row "
            "numbers can give the label away)"
        )

    def repeated_features_note(self, label: int | None) -> str:
        """The note naming the first two feature columns (:meth:`feature_indices`) the header names
        alike (blank names aside, which :meth:`unnamed_features_note` notes): ``torchlean predict``
        takes a model's features by name only when each is named once, so a checkpoint of them
        predicts on a file with this header, or none, by position only (review188 F4: train said
        nothing, predict refused later); ``""`` when there are none or the file has no header."""
        if not self.has_header:
            return ""
        first: dict[str, int] = {}
        for i in self.feature_indices(label):
            name = self.names[i]
            j = first.setdefault(name, i)
            if j != i and not _unnamed(name):
                return (
                    f"{self.shown_file}: feature columns {j} and {i} are both named {quoted(name)}: "
                    "torchlean predict takes a model's features by name only when each is named once, so it "
                    "will take them by position, from a file with this header or none; rename one to tell "
                    "them apart"
                )
        return ""

    def shown(self, index: int) -> str:
        """Column ``index`` as messages name it: its name when that is non-blank and used once,
        else its index (with the name when there is one: ``2 ('x')``)."""
        return _shown(self.names, index, self._name_counts)

    @property
    def separator_hint(self) -> str:
        """``"; the file seems to be separated by ';', not ',' ..."`` when the file read as one
        column whose first cell holds another common separator (``,``, ``;``, tab, ``|``; the one
        it holds most), or whose first two rows blanks split (``delimiter='whitespace'``), naming
        the ``delimiter`` to read it with, else ``""``."""
        return _separator_hint(self.first_row, self.delimiter, self.rows[0] if self.rows else None)

    def row_error(self, r: int) -> DataError | None:
        """The error for data row ``r`` when its cell count is not the column count
        (``line 4 has 2 cells, expected 3``; under another delimiter than the comma, ``2 cells
        separated by ';'``), else ``None``. When the first row and row ``r`` hold another common
        separator as often (a ``;`` file whose header has a quoted name with a comma in it, which
        commas split: review86 F7), it names the ``delimiter`` to read the file with
        (:func:`_other_separator_hint`)."""
        row = self.rows[r]
        if len(row) == len(self.names):
            return None
        by = "" if self.delimiter == _delimiter.COMMA else f" separated by {_delimiter.one(self.delimiter)}"
        trailing = f"a trailing {_delimiter.word(self.delimiter)}"
        blanks = self.delimiter == _delimiter.WHITESPACE  # blanks ending a line end no cell there
        if not blanks and len(row) == len(self.names) + 1 and not row[-1].strip():
            hint = f" (its last cell is empty: {trailing} on this line?)"
        elif not blanks and len(row) + 1 == len(self.names) and self.has_header and not self.names[-1]:
            hint = f" (the header's last cell is empty: {trailing} on the header line?)"
        elif self.has_header and _one_cell_more(self.names, self.rows):
            hint = f" ({self._one_cell_more_hint()})"
        else:
            hint = _other_separator_hint(self.first_row, row, self.delimiter)
        return DataError(
            f"{self.shown_file}: line {self.lines[r]} has {len(row)} cell{'' if len(row) == 1 else 's'}{by}, "
            f"expected {len(self.names)}{hint}"
        )

    @contextlib.contextmanager
    def notes_told(self, label_column: object) -> Iterator[None]:
        """Add to a :class:`DataError` raised inside (reading the cells: :meth:`columns`, the
        labels) the notes a load that succeeds prints after it, which explain such an error: that
        the first cell of each data row was dropped as R's row name, when it was
        (:attr:`row_names`: a header that is one name short, not R's, shifts the columns), and
        that ``label_column`` was read as a column's name though it is another's index
        (:meth:`label_note`; review216 F4: the user who meant the index gets a feature column of
        class names refused). The error is re-raised, its class and attributes kept."""
        try:
            yield
        except DataError as error:
            told = []
            if self.row_names:
                n = len(self.names)
                told.append(
                    f"the header has {n} cells and every data row {n + 1}, so the first cell of each row "
                    "was taken as R's row name and left out, and the header names the cells after it; if "
                    "the header lacks the first column's name, add it"
                )
            label_note = self.label_note(label_column)
            if label_note:
                told.append(f"note: {label_note}")
            if told:
                error.args = (f"{error} ({'; '.join(told)})", *error.args[1:])
            raise

    def _one_cell_more_hint(self) -> str:
        """Why every data row has one cell more than the header, when its first cells repeat (so
        they are not R's row names): a cell holding the delimiter unquoted?"""
        n = len(self.names)
        held = "a blank" if self.delimiter == _delimiter.WHITESPACE else _delimiter.one(self.delimiter)
        example = (
            ", such as Iris setosa as R's write.table(..., quote = FALSE) writes it"
            if self.delimiter == _delimiter.WHITESPACE else ""
        )
        repeated = _repeated_first_cell(self.rows)
        repeats = "" if repeated is None else (
            f"; its first column is not R's row names, which are distinct: it holds "
            f"{_cell_shown(repeated[0])} on lines {self.lines[repeated[1]]} and {self.lines[repeated[2]]}"
        )
        return (
            f"every data row has {n + 1} cells and the header {n}: does a cell hold {held} without quotes"
            f"{example}? quote such cells{repeats}"
        )

    def columns(self, label: int | None) -> tuple[Array, list[str] | None]:
        """The :meth:`feature_indices` columns (every column but ``label`` and pandas' index) as
        float64 features ``[len(rows), n_features]``, and the cells of column ``label`` as read
        (``None`` when ``label`` is ``None``).

        Raises:
            DataError: a row whose cell count differs from the column count
                (:meth:`row_error`), a feature cell that is not a finite float64 number (a
                decimal comma under another delimiter says so), or a label cell spanning lines
                that holds the delimiter (line and column named); rows are checked in file order.
                A feature cell that is not a number, in a column without a number in any row (a
                decimal comma counting as one), adds the hint ``(feature columns must be numbers:
                if y is categorical, one-hot encode it, ...; if it is the label, pass
                label_column='y' (CLI: --label-column y))`` (:meth:`_label_hint`).
        """
        if label is not None:
            if not is_builtin_or_numpy_int(label):
                raise DataError(  # a name, say (review136 F5)
                    f"label must be a column index or None, got {value_shown(label)} of type "
                    f"{type(label).__name__}"
                    + (f" (table.column({label!r}) gives the index of the column named so)"
                       if isinstance(label, str) else "")
                )
            label = int(label)
        feature_idx = self.feature_indices(label)
        fast = _well_formed(self.rows, len(self.names), label, feature_idx)
        if fast is not None:
            return fast[0], None if label is None else fast[1]
        # something is refused: read cell by cell, so the first refusal in file order is raised
        x = np.empty((len(self.rows), len(feature_idx)), dtype=np.float64)
        cells: list[str] = []
        separator = self._separator_by_blanks()
        shown = [self.shown(i) for i in feature_idx]
        for r, (line, row) in enumerate(zip(self.lines, self.rows, strict=True)):
            error = self.row_error(r)
            if error is not None:
                raise error
            if label is not None:  # first: rows read into a label are the cause of what follows
                _refuse_rows_in_a_label(self.shown_file, line, self.shown(label), row[label], self.delimiter)
                cells.append(row[label])
            for j, i in enumerate(feature_idx):
                # features are read and standardised in float64; the standardised values are checked
                # against the target dtype in _split, so a 1e39-scale column still fits float32
                try:
                    x[r, j] = _number(
                        self.shown_file, line, shown[j], row[i], _FLOAT64, delimiter=self.delimiter
                    )
                except DataError as refused:
                    refusal = self._feature_refusal(refused, r, line, row[i], i, separator, feature_idx)
                    # the column refused as a feature: train --resume tells a run's label column
                    # read as a feature here (it moved) from a bad label cell (review226 F1, review228
                    # F1: standard input cannot be read again for its header)
                    refusal.feature_column = self.names[i]
                    raise refusal from None
        return x, None if label is None else cells

    def _feature_refusal(
        self, error: DataError, r: int, line: int, cell_text: str, i: int, separator: str | None,
        feature_idx: Sequence[int],
    ) -> DataError:
        """The refusal of feature cell ``cell_text`` (data row ``r``, file line ``line``, column
        ``i``) that :func:`_number` refused with ``error``, with what explains it: a file separated
        by ``separator`` rather than blanks, a header read as data, or the label hint."""
        cell = cell_text.strip()
        if separator is not None and (cell.startswith(separator) or cell.endswith(separator)):
            return DataError(
                f"{self.shown_file}: line {line}, column {display_name(self.shown(i))}: not a "
                f"number: {_cell_shown(cell_text)}; the file seems to be separated by "
                f"{_delimiter.named(separator)}, not blanks: {_delimiter.use(separator)}"
            )
        if r == 0 and not self.has_header and self._numbers_after_first(feature_idx):
            return DataError(  # header=False on a file with a header (review56 F8)
                f"{error}; line {line} looks like a header (the rows after it are numbers in "
                "these columns): pass header=True or None (CLI: --header, or leave out "
                "--no-header): the default reads such a first line as the header"
            )
        hint = self._label_hint(i)
        return DataError(f"{error} {hint}") if hint else error

    def _numbers_after_first(self, feature_idx: Sequence[int]) -> bool:
        """Whether the second data row exists and is a number in each feature column of
        ``feature_idx`` (the first row then looks like a header read as data)."""
        if len(self.rows) < 2:
            return False
        row = self.rows[1]
        return len(row) == len(self.names) and all(_is_number(row[i]) for i in feature_idx)

    def _separator_by_blanks(self) -> str | None:
        """Under :data:`torchlean._delimiter.WHITESPACE`, the common separator (``,``, ``;``,
        ``|``) that the first row and the first data row hold as often, each only at a cell's
        start or end (``a, b, y`` over ``1, 2, 0``: a file separated by ``", "``, whose cells the
        blanks split with the separator left on them); else ``None``. Decimal commas (``1,5``)
        sit inside a cell, so they are not taken for one."""
        if self.delimiter != _delimiter.WHITESPACE or not self.rows:
            return None
        for separator in _delimiter.COMMON:
            if separator == _delimiter.TAB:  # a blank, which separates cells here
                continue
            counts = set()
            for row in (self.first_row, self.rows[0]):
                if any(separator in cell.strip().strip(separator) for cell in row):
                    break
                counts.add(sum(cell.count(separator) for cell in row))
            else:
                if len(counts) == 1 and 0 not in counts:
                    return separator
        return None

    def _label_hint(self, index: int) -> str:
        """``(feature columns must be numbers: if y is categorical, one-hot encode it, e.g. with
        pandas.get_dummies; if it is the label, pass label_column='y' (CLI: --label-column y))``
        when feature column ``index`` holds no number in any row (a number written otherwise, with a
        decimal comma under another delimiter than the comma, U+2212 MINUS SIGN or thousands
        separators, counts as one: :func:`torchlean._cells._number_hint`) and some non-blank cell
        (text, as a label column or a categorical feature holds; review86 F9: the label only was
        asked about), else ``""``."""
        cells = [row[index].strip() for row in self.rows if len(row) > index]
        if any(_is_number(cell) or _respelled(cell, self.delimiter) for cell in cells) or not any(cells):
            return ""
        name = self.names[index]
        by_name = self.has_header and name and self._name_counts[name] == 1
        given: str | int = name if by_name else index
        shown = display_name(self.shown(index))
        return (  # the Python spelling first, as the data layer's other hints (review59 F10)
            f"(feature columns must be numbers: if {shown} is categorical, one-hot encode it, e.g. with "
            f"pandas.get_dummies; if it is the label, pass label_column={given!r} (CLI: --label-column "
            f"{shlex.quote(str(given))}))"
        )


_BLOCK_CELLS = 1 << 16
"""About how many cells :func:`_well_formed` splits out of the rows at a time."""


def _well_formed(
    rows: Sequence[Sequence[str]], n_columns: int, label: int | None, feature_idx: Sequence[int]
) -> tuple[Array, list[str]] | None:
    """The features of :meth:`Table.columns` and the cells of column ``label`` (``[]`` when it
    is ``None``), read a block of rows at a time and then a column at a time within it, or ``None``
    when some row or cell would be refused (a row of another length, a label cell spanning lines, a
    feature cell that is not a finite number); the same values as :func:`_number` reads (Python's
    ``float``). Blocks of rows (:data:`_BLOCK_CELLS` cells) keep the cells held at once few, and
    the time linear in the rows (review68 F1).

    On ASCII text without ``_``, every cell that Python's ``float`` reads is one that
    :data:`torchlean._checks.DECIMAL_NUMBER` accepts once ``str.strip`` removed its blanks, with the
    same value (tested in tests/data/test_csv_fast_path.py); ``float`` refuses some that it accepts
    (it does not strip ``\\x1c``-``\\x1f``). Any other column goes cell by cell, which decides.
    """
    if not rows:  # a Table built by hand (read_csv refuses a file without data rows)
        return np.empty((0, len(feature_idx)), dtype=np.float64), []
    if any(length != n_columns for length in lengths(rows)):
        return None
    x = np.empty((len(rows), len(feature_idx)), dtype=np.float64)
    labels: list[str] = []
    start = 0
    for block in blocks(rows, max(1, _BLOCK_CELLS // max(1, n_columns))):
        columns = list(zip(*block, strict=True))
        if label is not None:
            cells = columns[label]
            if any("\n" in cell or "\r" in cell for cell in cells):
                return None  # _refuse_rows_in_a_label decides
            labels.extend(cells)
        stop = start + len(block)
        part = np.empty((len(feature_idx), len(block)), dtype=np.float64)  # a column per row of it
        for j, i in enumerate(feature_idx):
            text = "".join(columns[i])
            if not text.isascii() or "_" in text:
                return None
            try:
                part[j] = np.fromiter(map(float, columns[i]), dtype=np.float64, count=len(block))
            except ValueError:
                return None
        x[start:stop] = part.T
        start = stop
    return (x, labels) if np.isfinite(x).all() else None


_STREAM_COPIES: ContextVar[dict[str, bytes] | None] = ContextVar("torchlean_stream_copies", default=None)
"""Inside :func:`stdin_read_once`: the bytes of standard input and of the other streams that are
no regular file, by path, once read (empty before)."""

_READ_PROGRESS: ContextVar[Callable[[int], object] | None] = ContextVar(
    "torchlean_read_progress", default=None
)
_PROGRESS_ROWS = 4096
""":func:`read_csv` reports the bytes read to :func:`read_progress`'s callback every this many rows."""


@contextlib.contextmanager
def read_progress(callback: Callable[[int], object]) -> Iterator[None]:
    """Within the block, :func:`read_csv` calls ``callback(bytes_read)`` as it reads a file (every
    :data:`_PROGRESS_ROWS` rows and at the end; a pipe, whose position cannot be told, not at all),
    for a command's progress bar (review103 F3). Per thread and asyncio task."""
    token = _READ_PROGRESS.set(callback)
    try:
        yield
    finally:
        _READ_PROGRESS.reset(token)


def _report(progress: Callable[[int], object], handle: io.TextIOWrapper) -> None:
    """``progress(bytes read)`` from ``handle``'s buffer position; nothing for a pipe, whose
    position cannot be told."""
    buffer: Any = handle.buffer  # a BufferedReader or BytesIO (typeshed's protocol lacks tell)
    try:
        position = int(buffer.tell())
    except (OSError, ValueError):
        return
    progress(position)


@contextlib.contextmanager
def stdin_read_once() -> Iterator[None]:
    """Within this context, the first :func:`read_csv` of :data:`STDIN`, or of another path that
    is no regular file (a named pipe, a shell's ``<(...)``: review195 F2, whose second read waited
    for a writer that was gone, or found nothing), reads it to its end and keeps its bytes, and
    every later one reads that copy, so a command can read ``--dataset -`` twice: ``torchlean
    predict`` reads it with its own settings and again as the checkpoint's run loaded its data, to
    compare their digests as ``train --resume`` does (review63 F3). Nothing is read on entering (a
    closed standard input is refused at the first read, as without it)."""
    token = _STREAM_COPIES.set({})
    try:
        yield
    finally:
        _STREAM_COPIES.reset(token)


def _nfc_names_note(shown: str, names: Sequence[str]) -> list[str]:
    """A note (a list of one, or none) when two header ``names`` are one name written two ways,
    equal only in Unicode NFC form (``café`` and ``'cafe\\u0301'``): they print alike, and
    ``label_column`` and ``torchlean predict`` match names in that form (review115 F2)."""
    pair = first_respelling(names, nfc)
    if pair is None:
        return []
    j, i = pair
    return [
        f"{shown}: columns {j} and {i} are named {quoted(names[j])} and {quoted(names[i])}, one name in "
        "Unicode NFC form (its accents composed or combining), which they print alike: a label "
        "column chosen by name and torchlean predict's header matching compare names in that form, "
        "so name them apart"
    ]


_BOM = "\ufeff"
"""The byte-order mark, as text: ``utf-8-sig`` drops one at the start of a file, not a second."""


def _open_text(file: Path, shown: str, delimiter: str) -> io.TextIOWrapper:
    """``file`` opened as UTF-8 text for the reader (an optional byte-order mark dropped), or,
    for :data:`STDIN` and any other path that is no regular file inside :func:`stdin_read_once`,
    the copy of its bytes; its first bytes checked first (:func:`_refuse_control_start`).

    Raises:
        DataError: a start that is mostly control characters (messages name the file ``shown``).
    """
    copies, regular = _STREAM_COPIES.get(), file.is_file()
    if copies is None or (str(file) != STDIN and regular):
        raw = io.BufferedReader(io.FileIO(file, "r"), buffer_size=_SAMPLE)
        try:
            if regular:  # the buffer holds the first _SAMPLE bytes (or the whole file)
                _refuse_control_start(shown, raw.peek(_SAMPLE)[:_SAMPLE], delimiter)
                return io.TextIOWrapper(raw, encoding="utf-8-sig", newline="")
            # a pipe's one read may be a header written before a pause (review192 F2): its first
            # _SAMPLE bytes (or all, before its end) are read, judged, and read again
            first = raw.read(_SAMPLE)
            _refuse_control_start(shown, first, delimiter)
        except BaseException:
            raw.close()
            raise
        # fewer bytes than asked: the stream ended (a terminal's Ctrl-D), and is not read again
        chained = io.BufferedReader(_Prefixed(first, raw, ended=len(first) < _SAMPLE), buffer_size=_SAMPLE)
        return io.TextIOWrapper(chained, encoding="utf-8-sig", newline="")
    key = str(file)
    if key not in copies:
        with file.open("rb") as stream:
            first = stream.read(_SAMPLE)
            _refuse_control_start(shown, first, delimiter)
            # fewer bytes than asked: the end was read (a terminal gives its Ctrl-D once: review195 F1)
            copies[key] = first + (stream.read() if len(first) == _SAMPLE else b"")
    return io.TextIOWrapper(io.BytesIO(copies[key]), encoding="utf-8-sig", newline="")


class _Prefixed(io.RawIOBase):
    """A raw stream of the bytes ``first`` and then of ``rest``'s (a pipe read from, its first
    bytes already taken: :func:`_open_text`), none of them once ``rest`` ended (``ended``, or a read
    of nothing): a terminal gives an end (Ctrl-D) once, and a read after it would wait for another
    (review194 F1); closing it closes ``rest``."""

    def __init__(self, first: bytes, rest: io.BufferedReader[io.FileIO], *, ended: bool) -> None:
        super().__init__()
        self._first = memoryview(first)
        self._rest = rest
        self._ended = ended

    def readable(self) -> bool:
        return True

    def readinto(self, buffer: Any) -> int:
        target = memoryview(buffer).cast("B")
        if len(self._first):
            count = min(len(target), len(self._first))
            target[:count] = self._first[:count]
            self._first = self._first[count:]
            return count
        if self._ended:
            return 0
        data = self._rest.read1(len(target))
        target[: len(data)] = data
        self._ended = not data
        return len(data)

    def close(self) -> None:
        if not self.closed:
            self._rest.close()
        super().close()


_CONTROL_START = 1024
"""The fewest first bytes :func:`_refuse_control_start` judges (a shorter file is read at once)."""

_LINE_END = re.compile(r"\r\n|\r|\n")


def _refuse_control_start(shown: str, sample: bytes, delimiter: str) -> None:
    """Refuse, before its lines are read, a file whose first bytes (``sample``, at least
    :data:`_CONTROL_START` of them) are UTF-8 text over 5 % of whose characters are control
    characters the line check refuses (:func:`_control_characters`, NUL included), with the line
    check's own message for the first of them: NUL bytes are UTF-8 text, so ``cat /dev/zero`` into
    ``--dataset -`` was read without end, its first line never ending, and a file of them was read
    whole before its first line was refused (review188 F3). Bytes that are not UTF-8 are left to the
    decoder's refusal, a few control characters to the line check.

    Raises:
        DataError: :func:`_control_refusal`'s message for that character.
    """
    if len(sample) < _CONTROL_START:
        return
    try:  # an incremental decoder holds back a character the sample's end cuts
        text = codecs.getincrementaldecoder("utf-8")().decode(sample)
    except UnicodeDecodeError:
        return
    control = _control_characters(delimiter)
    if len(control.findall(text)) * 20 <= len(text):
        return
    for number, line in enumerate(_LINE_END.split(text.lstrip(_BOM)), 1):  # BOMs: as _text_lines drops
        found = control.search(line)
        if found is not None:
            raise DataError(_control_refusal(shown, number, line, found.start(), delimiter))


def _stdin_closed() -> bool:
    """Whether the process has no standard input (file descriptor 0 closed)."""
    try:
        os.fstat(0)
    except OSError:
        return True
    return False


def check_file(path: str | os.PathLike[str]) -> tuple[Path, str]:
    """``path`` as a ``Path`` and as messages name it (as given), after the checks :func:`read_csv`
    makes before reading (``torchlean inspect --dataset`` makes them too, so that a missing file is
    the same one-line error as for ``predict``); their refusals write a character of the path that
    is not printable (a line break, an escape character) as its backslash escape (review103 F4).

    Raises:
        DataError: not a path, a directory, a missing file (``dataset file not found: PATH``), a
            path that cannot be looked up (``PATH: cannot read the file: <reason>``: a loop of
            symbolic links, a name too long), a closed standard input, a device.
    """
    given = _name(path, "dataset path", "dataset path", "a path to a .csv file")
    file = Path(given)
    shown = _shown_name(given, file)  # messages name the file as given (review59 F11)
    named = path_shown(shown)  # one line, nothing for the terminal (review103 F4, review210 F3)
    try:  # Path.is_dir() and exists() raise what is not "no such file" (a name too long)
        is_dir, exists = file.is_dir(), file.exists()
        device = str(file) != STDIN and (file.is_char_device() or file.is_block_device())
    except OSError as error:
        raise DataError(f"{named}: cannot read the file: {error.strerror or error}") from None
    if is_dir:
        raise DataError(f"dataset path is a directory, not a CSV file: {named}")
    # Path drops a final "/" or "/.", the system does not (ok.csv/..); a name with blanks at an end
    # ('ok.csv/ ') is named as not found, with a word on its blanks (review110 F5)
    if given.strip(" \t") == given and _file_as_folder(given):
        give = f": {path_shown(str(file))} is the file, give that" if exists else ""
        raise DataError(f"dataset path {named} takes a file for a folder (a / after a file's name){give}")
    if not exists:  # a pipe (/dev/stdin, <(...)) is read like a file
        try:  # Path.exists() is False for a name the file-system encoding cannot write (review163 F1)
            os.fsencode(str(file))
        except UnicodeEncodeError:
            raise DataError(
                f"{named}: its name cannot be written in this locale's file-system encoding "
                f"({sys.getfilesystemencoding()}), so no such file can be opened here; run in a UTF-8 "
                "locale (PYTHONUTF8=1)"
            ) from None
        if str(file) == STDIN and _stdin_closed():  # started with ``<&-``: /dev/stdin names nothing
            raise DataError("standard input is closed (the dataset - reads the CSV from it)")
        failure = lookup_failure(file)  # a loop of symbolic links is there, but reads as absent
        if failure is not None:
            raise DataError(f"{named}: cannot read the file: {failure}")
        raise DataError(f"dataset file not found: {missing_file_name(shown)}")
    if device:
        # /dev/zero or a disk would be read until memory runs out; standard input (``-``, a
        # terminal too) is what the user redirected into it
        raise DataError(
            f"dataset path {named} is a device, not a CSV file (accepted: a file, a pipe, or standard "
            "input as -)"
        )
    return file, shown


def _file_as_folder(given: str) -> bool:
    """Whether the system refuses ``given`` as naming a file as a folder (``ok.csv/``,
    ``ok.csv/.``: ``ENOTDIR``), which ``Path(given)`` reads as the file (review114 F8)."""
    try:
        os.stat(given)
    except NotADirectoryError:
        return True
    except (OSError, ValueError):  # another reason: the checks on the Path name it
        return False
    return False


@contextlib.contextmanager
def reading(path: str | os.PathLike[str]) -> Iterator[None]:
    """Within the block, memory that runs out (a ``MemoryError`` that is not a torchlean error, as
    numpy and Python raise it) is a :class:`~torchlean.data.DataMemoryError` naming the CSV file
    ``path`` and its size, so that a command's out-of-memory error is not taken for the model's
    (review103 F2)."""
    try:
        yield
    except MemoryError as error:
        if isinstance(error, TorchLeanError):
            raise
        name = os.fspath(path)
        try:  # a regular file's size; none for standard input or another pipe (review104 M4)
            size = f" ({os.path.getsize(name) / 1e6:.1f} MB)" if os.path.isfile(name) else ""
        except (OSError, ValueError, TypeError):  # a file gone since
            size = ""
        shown = STDIN_SHOWN if name in (STDIN, "-") else display_name(name)
        raise DataMemoryError(
            f"loading {shown}{size} ran out of memory: its rows are held as text, "
            "then as float64 arrays, several times the file's size; load a smaller file (fewer rows or "
            "columns) or give the process more memory"
        ) from None


def read_csv(
    path: str | os.PathLike[str], *, header: bool | None = None, delimiter: str = _delimiter.COMMA
) -> Table:
    """Read the CSV file ``path`` into cells (UTF-8, an optional byte-order mark, and more of them
    starting the file dropped with a note: review115 F6), deciding whether its first row is a header
    by the module docstring's rule. An empty line (nothing but blanks; under a one-character
    ``delimiter``, none of them it) is skipped, as pandas skips it; a row of two or more cells all
    blank (``,,`` or `` , , ``, as a spreadsheet exports an empty row inside a range, which pandas
    reads as a row of NaN) is refused by line, as a blank cell beside others is (``,,x``: torchlean
    reads no missing values), so every row read is a data row of the file (``predict`` writes one
    prediction per row; review128 F2).

    ``delimiter`` separates the cells: ``","`` (the default), ``";"``, ``"\\t"``, ``"|"`` or
    any other single character but a quote (``"`` or ``'``), a line break, a digit, ``.``, ``+``,
    ``-``, ``e``, ``E`` or a blank other than tab (``str.isspace``), which would clash with
    quoting, rows or numbers (Python's ``csv`` ``delimiter``, as pandas' ``read_csv(sep=...)``
    takes one character); or ``"whitespace"``: cells separated by runs of spaces and tabs, blanks
    at the ends of a line ignored, a double-quoted cell holding blanks, line breaks and quotes,
    doubled or escaped by a backslash as R writes them (:mod:`torchlean._whitespace`; pandas'
    ``read_csv(sep=r"\\s+")``, ``np.loadtxt``). Decimal commas are not read (:meth:`Table.columns`
    says so; under ``"whitespace"``, cells ending in a comma on the first two rows name the comma
    as the file's separator instead).

    Raises:
        DataError: ``path`` not a ``str`` or ``os.PathLike`` or empty, a missing file (or
            :data:`STDIN` when standard input is closed), a directory or a device other than
            :data:`STDIN` (``/dev/zero`` would be read until memory runs out; pipes and standard
            input, a terminal too, are read), a file that is not UTF-8 or cannot be read, a line
            holding a control character other than tab, line feed, carriage return and ``delimiter``
            (:func:`_text_lines`: a NUL, a binary file's bytes), a quote left open, a file without
            rows or without data rows, a first line starting with ``#`` (a comment line; under
            ``"whitespace"``, not numpy's ``savetxt`` header ``# a b y`` naming a column per cell of
            the next row, read as the header unless ``header=False``), a row whose cells are all
            blank (:class:`BlankRowError`, naming its line), Excel's ``sep=`` first line
            naming another separator than ``delimiter`` (the message says which ``delimiter`` to
            give), a bad ``header``, a ``delimiter`` that is not one of the characters accepted
            (naming it, why, and those accepted).
        DataMemoryError: the memory ran out while the file was read (:func:`reading`).

    Excel's ``sep=X`` first line naming ``delimiter`` is skipped, an unnamed last column blank on every
    line is dropped (not under ``"whitespace"``, where blanks ending a line end no cell), R's row
    names (a header one cell shorter than every data row, over distinct first cells) are dropped
    from the rows (:attr:`Table.row_names`),
    and pandas' index column is marked as :attr:`Table.index_column` (the module docstring has the
    rules; :attr:`Table.notes` and :meth:`Table.index_note` report them).

    Quoting is Python's ``csv`` default (not strict), as spreadsheets write it: a blank after a
    closing quote (``"3" ,4``) stays in the cell, where blanks around a number or a label are
    stripped anyway. A quoted cell may span lines (a class label ``"a\\nb"``), but a quote left open
    at the end of the file is refused (the rest of the file would be read into one cell); so is a
    label cell spanning lines that holds the delimiter, when :meth:`Table.columns` reads it (rows read
    into it between two misplaced quotes). A quoted cell may hold the delimiter (``"a;b"``).
    """
    with reading(path):
        return _read_csv(path, header, delimiter)


def _read_csv(path: str | os.PathLike[str], header: bool | None, delimiter: str) -> Table:
    """:func:`read_csv`'s work, whose out-of-memory error it names."""
    why = _delimiter.fault(delimiter)
    if why is not None:
        raise DataError(_delimiter.python_refusal(delimiter, why))
    file, shown = check_file(path)
    rows = Rows()  # one string per row (review68 F1)
    starts: list[int] = []
    boms: list[int] = []
    try:
        with _open_text(file, shown, delimiter) as handle:
            checked = _text_lines(shown, handle, delimiter, boms)
            records = (
                _blank_separated(shown, checked) if delimiter == _delimiter.WHITESPACE
                else _delimited(shown, checked, delimiter)
            )
            progress = _READ_PROGRESS.get()
            for row, start in records:
                if (row and row[0].strip()) or any(cell.strip() for cell in row):  # not blank
                    rows.append(row)
                    starts.append(start)
                    if progress is not None and len(starts) % _PROGRESS_ROWS == 0:
                        _report(progress, handle)
                elif len(row) > 1:  # ',,': a row of blank cells, not an empty line (review128 F2)
                    raise BlankRowError(_blank_row(shown, start, row, delimiter))
            if progress is not None:
                _report(progress, handle)
    except UnicodeDecodeError as error:
        raise DataError(_not_utf8(file, error, shown)) from None
    except OSError as error:
        raise DataError(f"{shown}: cannot read the file: {error}") from None
    notes: list[str] = []
    if boms:
        notes.append(
            f"{shown}: line 1 starts with {boms[0] + 1} byte-order marks (U+FEFF, bytes EF BB BF), as a file "
            "saved with one and then re-saved or joined to another writes; the extra "
            f"{'one was' if boms[0] == 1 else f'{boms[0]} were'} dropped, not read as part of the first "
            "cell"
        )
    if rows and _separator_line(shown, rows[0], starts[0], delimiter):
        text = _delimiter.joiner(delimiter).join(rows[0])
        notes.append(f"{shown}: line {starts[0]} {text!r} is Excel's separator line naming "
                     f"{_delimiter.one(delimiter)}; it was skipped")
        rows, starts = rows[1:], starts[1:]
    if not rows:
        raise DataError(f"{shown}: the file has no rows")
    if rows[0][0].lstrip().startswith("#"):
        commented = _commented_header(rows, header) if delimiter == _delimiter.WHITESPACE else None
        if commented is None:
            raise DataError(
                f"{shown}: line {starts[0]} starts with '#', a comment line: comment lines are not supported "
                "(accepted: a header row or a data row first; remove the comment lines, or rename a first "
                "column whose name starts with '#'; numpy's savetxt writes its header as a comment unless "
                f"given comments=''{_commented_header_rule(rows, header, delimiter)})"
            )
        text = " ".join(rows[0])
        notes.append(
            f"{shown}: line {starts[0]} {text!r} was read as the header, as numpy's savetxt(..., header=...) "
            f"writes one after '# ' (np.loadtxt skips it as a comment): its {len(commented)} names fit the "
            f"{len(rows[1])} cells of line {starts[1]}"
        )
        rows = rows.with_first(commented)
        header = True
    width = len(rows[0])
    while (
        width > 1 and delimiter != _delimiter.WHITESPACE  # blanks ending a line end no cell there
        and all(length == width for length in rows.lengths()) and all(not row[-1].strip() for row in rows)
    ):
        notes.append(
            f"{shown}: the last column ({width - 1}) has no name and is empty on every line (a trailing "
            f"{_delimiter.word(delimiter)}?), so it is ignored"
        )
        rows = rows.without_last_cell()
        width -= 1
    has_header, note = _header(shown, rows[0], header, delimiter)
    names = [c.strip() for c in rows[0]] if has_header else [f"column_{i}" for i in range(len(rows[0]))]
    body = rows[1:] if has_header else rows
    if not body:
        raise DataError(f"{shown}: no data rows")
    lines = tuple(starts[1:] if has_header else starts)
    if has_header:
        notes.extend(_nfc_names_note(shown, names))
    row_names = has_header and _row_names(names, body)
    if row_names:
        notes.append(
            f"{shown}: the header has {len(names)} cells and every data row {len(names) + 1}, as R's "
            "write.table writes row names (pandas reads such a first column as its index), so the first "
            "cell of each row is a row name and is not used (write.table(..., row.names = FALSE) leaves "
            "it out)"
        )
        body = body.without_first_cell()
    index = 0 if has_header and len(names) > 1 and _unnamed(names[0]) and _row_labels(body) else None
    return Table(
        file, tuple(names), has_header, tuple(rows[0]), body, lines, note, tuple(notes), index, delimiter,
        row_names, shown,
    )


class BlankRowError(DataError):
    """A row of two or more cells, every one of them blank (``,,``, ``" , , "``, ``"" ""`` under
    ``"whitespace"``), which :func:`read_csv` refuses by line (review128 F2): a file refused only
    for it still reads as CSV (:func:`torchlean.cli._checkpoint_input.is_csv`)."""


def _blank_row(file: str, line: int, row: Sequence[str], delimiter: str) -> str:
    """The refusal of the ``row`` of blank cells starting on file ``line``: pandas reads such a
    row as missing values (NaN in every column), and torchlean reads none, as it refuses a blank
    cell beside others (``,,x``: ``not a number: ''``); an empty line is skipped (review128 F2)."""
    if delimiter == _delimiter.WHITESPACE:  # only quotes make a blank cell there
        text = " ".join(f'"{cell}"' for cell in row)
    else:
        text = delimiter.join(row)
    return (
        f"{file}: line {line}: all {len(row)} cells are blank: {_cell_shown(text)} (a row of missing "
        "values, as a spreadsheet exports an empty row? torchlean reads none: remove such rows; accepted: "
        "a value in every cell, or an empty line, which is skipped)"
    )


STDIN_SHOWN = "standard input (-)"
"""How messages name :data:`STDIN`: the command line's ``--dataset -`` reads it (review59 F11)."""


def _shown_name(given: str, file: Path) -> str:
    """The file ``given`` (a path as the caller spelled it) as messages name it: as given
    (``./iris`` keeps its ``./``, which ``Path`` drops and which tells it from the shipped dataset
    ``iris``), except :data:`STDIN`, named :data:`STDIN_SHOWN` (review59 F11)."""
    return STDIN_SHOWN if str(file) == STDIN else given


def _utf16_advice(encoding: str = "UTF-16") -> str:
    """How to read a UTF-16 file (torchlean reads UTF-8 only): ``encoding`` names the byte order
    when no byte-order mark says it (``UTF-16LE``/``UTF-16BE``: iconv reads a bare ``UTF-16`` in
    the platform's order, which garbles the other; review44 F4)."""
    return (
        f"convert it, e.g. iconv -f {encoding} -t UTF-8 FILE > NEW_FILE (Excel's \"Unicode Text\" writes "
        "UTF-16, tab-separated: then pass delimiter='\\t' (CLI: --delimiter tab)), or save it as "
        "\"CSV UTF-8\""
    )


_BINARY_SIGNATURES = (
    (re.compile(re.escape(b"PK\x03\x04")),
     "a zip archive (a .npz checkpoint that torchlean train --save writes, or an Excel .xlsx workbook)",
     "a checkpoint is read by torchlean predict CHECKPOINT --dataset DATA; save a workbook as \"CSV UTF-8\""),
    (re.compile(re.escape(b"\x93NUMPY")), "a numpy .npy array", "write the array with numpy.savetxt"),
    (re.compile(re.escape(b"\x1f\x8b")), "gzip-compressed", "decompress it first (gunzip -k FILE)"),
    (re.compile(re.escape(b"%PDF")), "a PDF document", "export its table as CSV"),
    (re.compile(re.escape(b"PAR1")), "a Parquet file", "write it with pandas' to_csv"),
    (re.compile(rb"BZh[1-9](?:1AY&SY|\x17rE8P\x90)"), "bzip2-compressed",
     "decompress it first (bunzip2 -k FILE)"),
    (re.compile(re.escape(b"\xfd7zXZ\x00")), "xz-compressed", "decompress it first (unxz -k FILE)"),
)
"""The first bytes of binary files given as a CSV by mistake (a pattern they start with: bzip2's
``BZh``, its block size and the magic number of its first block or of its end), what each is, and
what to do."""


def _binary_file(file: str, raw: bytes) -> str | None:
    """The refusal of a file whose first bytes (``raw``) are a known binary signature
    (:data:`_BINARY_SIGNATURES`: ``PK\\x03\\x04`` of a zip, which a ``.npz`` checkpoint is), else
    ``None``; not UTF-16 advice (review56 F8)."""
    for signature, what, advice in _BINARY_SIGNATURES:
        if signature.match(raw):
            return f"{file}: the file looks like a binary file, {what}, not CSV text: {advice}"
    return None


_SAMPLE = 8192
"""How many bytes from the start of a file :func:`_binary_text` looks at."""

_CONTROL = bytes([*range(0x09), 0x0B, 0x0C, *range(0x0E, 0x20), 0x7F])
"""The ASCII control bytes that text does not hold (all but tab, line feed and carriage return)."""


def _binary_text(sample: bytes) -> str | None:
    """``"the file looks like a binary file, not CSV text: ..."`` when the bytes ``sample`` (the
    start of a file) hold a NUL or over 5 % of control bytes (:data:`_CONTROL`), as executables,
    compressed or random data do and text in any encoding does not, except UTF-16 (whose ASCII
    characters are each a NUL and a byte: NULs on every other byte, on one side only, are taken
    for it); else ``None`` (review67 F10). A file that is UTF-8 text is checked line by line
    instead (:func:`_text_lines`)."""
    controls = len(sample) - len(sample.translate(None, _CONTROL))
    if not controls or (b"\x00" not in sample and controls * 20 <= len(sample)):
        return None
    nuls = sorted((sample[0::2].count(0), sample[1::2].count(0)))
    if nuls[0] * 8 <= nuls[1] and nuls[1] * 8 >= len(sample) // 2:  # UTF-16: a NUL in an 8th of the pairs
        return None
    return (
        f"the file looks like a binary file, not CSV text: {controls} of its first {len(sample)} bytes are "
        "NUL or other control characters, which text does not hold (accepted: a CSV file of UTF-8 text)"
    )


def _not_utf8(file: Path, error: UnicodeDecodeError, shown: str) -> str:
    """The refusal of a file that is not UTF-8 text: a UTF-16 one by its byte-order mark (Excel's
    "Unicode Text"; review43 F1), else the line and file offset of its first byte that is not
    UTF-8 (a regular file is read again as bytes for them: the decoder's offset is within the chunk
    it was decoding; lines end at ``\\n``, ``\\r\\n`` or ``\\r``, as the reader counts them) and the way
    out: Windows Excel's "CSV (Comma delimited)" writes Windows-1252, which ``iconv`` or Excel's
    "CSV UTF-8" turns into UTF-8 (review42 F3). Messages name the file ``shown``."""
    advice = ("; save it as UTF-8 (Excel: \"CSV UTF-8\"), or convert it, e.g. iconv -f WINDOWS-1252 "
              "-t UTF-8 FILE > NEW_FILE for Excel's \"CSV (Comma delimited)\" on Windows")
    raw = file.read_bytes() if file.is_file() else error.object if error.start < 2 else b""
    binary = _binary_file(shown, raw if raw else bytes(error.object[:16]))
    if binary is not None:
        return binary
    if raw.startswith((codecs.BOM_UTF32_LE, codecs.BOM_UTF32_BE)):  # FF FE 00 00 starts as UTF-16's
        return (f"{shown}: the file is UTF-32 text (it starts with UTF-32's byte-order mark), not UTF-8: "
                "convert it, e.g. iconv -f UTF-32 -t UTF-8 FILE > NEW_FILE, or save it as \"CSV UTF-8\"")
    if raw.startswith((codecs.BOM_UTF16_LE, codecs.BOM_UTF16_BE)):
        return (f"{shown}: the file is UTF-16 text (it starts with UTF-16's byte-order mark), not UTF-8: "
                f"{_utf16_advice()}")
    control = _binary_text(raw[:_SAMPLE] if raw else bytes(error.object[:_SAMPLE]))
    if control is not None:  # an executable, random bytes (review67 F10): no encoding reads them
        return f"{shown}: {control}"
    if file.is_file():
        skip = len(codecs.BOM_UTF8) if raw.startswith(codecs.BOM_UTF8) else 0
        try:
            raw[skip:].decode("utf-8")
        except UnicodeDecodeError as whole:
            position = skip + whole.start
            before = raw[:position]
            line = len(before.splitlines()) + (1 if not before or before.endswith((b"\n", b"\r")) else 0)
            if b"\x00" in before:  # UTF-16 without a byte-order mark, not a one-byte encoding
                order = "UTF-16BE" if raw[skip:skip + 1] == b"\x00" else "UTF-16LE"  # BE: NUL first
                return (f"{shown}: line {line}: byte 0x{raw[position]:02X} (offset {position} in the file) "
                        f"is not UTF-8 text, and NUL bytes come before it, as in UTF-16 text: "
                        f"{_utf16_advice(order)}")
            return (f"{shown}: line {line}: byte 0x{raw[position]:02X} (offset {position} in the file) is "
                    f"not UTF-8 text{advice}")
    return f"{shown}: not a UTF-8 text file ({error.reason}, byte 0x{error.object[error.start]:02X}){advice}"


_BREAKING = "\u0080-\u009f\u2028\u2029"
"""The non-ASCII characters refused as the ASCII controls are (a regular expression class's
ranges): Unicode's C1 control characters (U+0080 to U+009F: NEL, CSI, ...), which some terminals
act on, and its line and paragraph separators, which ``str.splitlines`` and many line-based tools
take for line breaks (review88 F5)."""


_REFUSED_IN_TEXT = re.compile(
    f"[{''.join(re.escape(chr(byte)) for byte in _CONTROL)}{_BREAKING}\ud800-\udfff]"
)


def refused_character(text: str) -> str | None:
    """The first character of ``text`` that a cell of CSV text cannot hold, described
    (``U+001B, a control character``; ``U+D800, a lone surrogate``), or None: the ASCII controls
    but tab, line feed and carriage return (:data:`_CONTROL`), :data:`_BREAKING`, and the lone
    surrogates (U+D800 to U+DFFF), which UTF-8 cannot encode. A checkpoint's class names are
    checked with it: ``predict`` writes them raw (review158 F3, F4)."""
    found = _REFUSED_IN_TEXT.search(text)
    if found is None:
        return None
    point = ord(found.group())
    kind = "a lone surrogate" if 0xD800 <= point <= 0xDFFF else (
        "a line separator" if point in (0x2028, 0x2029) else "a control character")
    return f"U+{point:04X}, {kind}"


def _control_characters(delimiter: str) -> re.Pattern[str]:
    """The control characters (:data:`_CONTROL`, :data:`_BREAKING`) that text does not hold,
    but ``delimiter`` when it is an ASCII one (``\\x01`` separating cells is read)."""
    refused = "".join(re.escape(chr(byte)) for byte in _CONTROL if chr(byte) != delimiter)
    return re.compile(f"[{refused}{_BREAKING}]")


def _text_lines(
    file: str, lines: Iterable[str], delimiter: str, boms: list[int] | None = None
) -> Iterator[str]:
    """``lines`` (a file's, as :func:`_open_text` reads them: ending at ``\\n``, ``\\r\\n`` or
    ``\\r``, as the reader counts them) as they are, except that byte-order marks (U+FEFF) that
    still start the first line once :func:`_open_text` dropped one (a file saved with a BOM and
    re-saved, or concatenated, with another: review115 F6) are dropped too, their count appended
    to ``boms``; each checked first for a control character
    other than tab, line feed, carriage return and ``delimiter``, which CSV text does not hold and
    a binary file does: whatever line holds it, such a character would reach a cell, a class name
    and the predictions file raw (review87 F2); the C1 controls and Unicode's line separators too
    (:data:`_BREAKING`).

    Raises:
        DataError: a line holding one (:func:`_control_refusal`); a file that starts as JSON
            text (:data:`_JSON_START`: ``[{``, ``{"``, ``["``), named as JSON or JSON Lines with
            the pandas line that converts it (:func:`_json_refusal`; review115 F5).
    """
    control = _control_characters(delimiter)
    opening: list[str] | None = []  # the first lines, held until they tell JSON text from CSV text
    source = iter(lines)
    for number, line in enumerate(source, 1):
        if number == 1 and line.startswith(_BOM):
            kept = line.lstrip(_BOM)
            if boms is not None:
                boms.append(len(line) - len(kept))
            line = kept
        found = control.search(line)
        if found is not None:
            raise DataError(_control_refusal(file, number, line, found.start(), delimiter))
        if opening is None:
            yield line
            continue
        opening.append(line)
        start = "".join(opening)
        if _JSON_OPENING.fullmatch(start) and len(opening) < _JSON_LINES_HELD:
            continue  # '[' or '{' and blanks so far: the next line decides
        if _JSON_START.match(start):
            raise DataError(_json_refusal(file, opening, next(source, "")))
        yield from opening
        opening = None
    if opening:
        yield from opening


_JSON_OPENING = re.compile(r"[\[{]\s*")
"""The start of a file that may be JSON text: ``[`` or ``{``, then blanks or line breaks only."""
_JSON_START = re.compile(r"[\[{]\s*[\"{]")
"""The start of JSON text holding objects or names: ``[{``, ``{"``, ``["``, blanks between them
allowed (an indented file's ``[`` and ``{`` are on lines of their own); a CSV file starts with a
name or a number, and a quote opens its first cell without a ``[`` or ``{`` before it."""
_JSON_LINES_HELD = 64
"""The most lines :func:`_text_lines` holds while the file's start is ``[`` or ``{`` and blanks."""


def _json_refusal(file: str, opening: Sequence[str], after: str) -> str:
    """The refusal of a ``file`` whose ``opening`` lines start as JSON text (:data:`_JSON_START`),
    ``after`` the line after them (``""`` at the end): JSON Lines when the first line is a whole
    JSON object and the next starts another (one record a line, as pandas'
    ``to_json(orient="records", lines=True)`` writes), else JSON, each with the pandas line that
    writes it as CSV (pandas reads both; torchlean reads CSV only)."""
    try:
        whole = isinstance(json.loads(opening[0]), dict) and after.lstrip().startswith("{")
    except ValueError:
        whole = False
    what, read = ("JSON Lines (a JSON object a line)", ", lines=True") if whole else ("JSON", "")
    found = _JSON_START.match("".join(opening))
    start = "".join(found.group().split()) if found else ""
    return (
        f"{file}: the file looks like {what}, not CSV text (it starts with {start!r}): torchlean reads "
        f"CSV; convert it, e.g. with pandas: pandas.read_json(FILE{read}).to_csv(NEW_FILE, index=False)"
    )


def _utf16_line(raw: bytes) -> bool:
    """Whether the line ``raw`` (its bytes, line break included) holding a NUL looks like ASCII
    UTF-16 read as UTF-8: NULs on one side of the byte pairs, filling at least half of that side,
    and at most an eighth as many on the other (a non-ASCII character of UTF-16 has no NUL, so a
    line of them is allowed half; review43 F2). A short line's single NUL among other bytes
    is not (review87 F2)."""
    body = raw.rstrip(b"\r\n")
    even, odd = body[0::2].count(0), body[1::2].count(0)
    more, fewer, side = (even, odd, body[0::2]) if even >= odd else (odd, even, body[1::2])
    return more > 0 and more * 2 >= len(side) and fewer * 8 <= more


def _control_refusal(file: str, number: int, line: str, at: int, delimiter: str) -> str:
    """The refusal of the ``file`` whose line ``number`` (its text ``line``) holds the control
    character at ``at``: a known binary signature on the first line (:func:`_binary_file`, a zip
    such as a ``.npz`` checkpoint); UTF-16 without a byte-order mark read as UTF-8, when the line's
    NULs fall on every other byte (:func:`_utf16_line`; the advice names the byte order, which the
    first line shows: big-endian text starts with a NUL; review43 F2, review44 F4); else the line,
    the byte and where it is in the line, and what the reader accepts."""
    raw = line.encode("utf-8", "surrogateescape")
    binary = _binary_file(file, raw) if number == 1 else None
    if binary is not None:
        return binary
    if "\x00" in line and _utf16_line(raw):
        order = "UTF-16BE" if line[:1] == "\x00" else "UTF-16LE"  # ASCII in BE: each NUL comes first
        return (
            f"{file}: line {number} holds NUL characters (\\x00), as UTF-16 text read as UTF-8 does; "
            f"if the file is UTF-16, {_utf16_advice(order)}"
        )
    also = f", and the delimiter {delimiter!r}" if delimiter in _CONTROL.decode("ascii") else ""
    if ord(line[at]) >= 0x80:  # text, not a binary file: a C1 control or a Unicode line separator
        separators = {"\u2028": "line", "\u2029": "paragraph"}
        what = (f"Unicode's {separators[line[at]]} separator, which line-based tools take for a line break"
                if line[at] in separators else "a C1 control character, which some terminals act on")
        return (
            f"{file}: line {number}: character U+{ord(line[at]):04X} (character {at + 1} of the line) is "
            f"{what}: it would reach a cell, a class name and the predictions file raw (accepted: UTF-8 "
            "text whose only control characters are tab, line feed and carriage return, without Unicode's "
            "line and paragraph separators; remove or replace it)"
        )
    return (
        f"{file}: line {number}: byte 0x{ord(line[at]):02X} (character {at + 1} of the line) is a control "
        "character, which text does not hold: the file looks like a binary file, not CSV text (accepted: a "
        f"CSV file of UTF-8 text, whose only control characters are tab, line feed and carriage return{also})"
    )


def _delimited(file: str, lines: Iterable[str], delimiter: str) -> Iterator[tuple[list[str], int]]:
    """The records of ``lines`` read by Python's ``csv`` with the one-character ``delimiter``,
    each with the file line it starts on.

    Raises:
        DataError: a quote left open at the end of the file, or a cell over ``csv``'s size limit
            (:func:`_over_long`: blamed on a quote left open when one opens the cell, else named
            by its line, column and length; :func:`_text_lines` refuses control bytes first).
    """
    pending: list[str] = []  # the lines of the record being read (csv reads no further ahead)

    def tracked() -> Iterator[str]:
        for line in itertools.chain(lines, [_END_OF_FILE + "\n"]):
            pending.append(line)
            yield line

    reader = csv.reader(tracked(), delimiter=delimiter)
    start = end = 0  # the first and last file line of the record just read
    first: list[str] = []  # the first record's cells: they name the columns in the message below
    try:
        for row in reader:
            pending.clear()
            start, end = end + 1, reader.line_num
            if delimiter.join(row) == _END_OF_FILE:  # a delimiter such as ':' splits its text
                return
            if row and _END_OF_FILE in row[-1]:
                _refuse_open_quote(file, start, end - 1)
            first = first or row
            yield row, start
    except csv.Error as error:  # the only one csv raises when not strict: a cell over its size limit
        text = pending[0] if len(pending) == 1 else "".join(pending)
        pending.clear()
        raise DataError(_over_long(file, end + 1, text, delimiter, str(error), first)) from None


_QUOTED = re.compile(r'"((?:[^"]|"")*)("?)', re.DOTALL)
"""A quoted cell's quoted part as Python's ``csv`` reads it (not strict, quotes doubled inside):
its text, and the closing quote (``""`` when the quote is left open)."""


def _over_long(
    file: str, line: int, text: str, delimiter: str, error: str, first: Sequence[str] = ()
) -> str:
    """The refusal of the record that starts on file line ``line``, whose ``text`` (the lines read
    of it) holds a cell over the ``csv`` module's size limit (``error``, its message): a quote left
    open (it opens the cell and never closes), else the cell's line, column (counted from 0, with
    the text the ``first`` record, a header or not, has in that column when it is a non-blank
    non-number: ``column 1 (counted from 0; the first row has b there)``, review69 F5) and length
    (review67 F9). (A record of control bytes never gets here: :func:`_text_lines` refuses it.)

    The cells are found as Python's ``csv`` reads them (not strict): a cell starting with a quote is
    quoted up to the next quote that is not doubled, and what follows up to ``delimiter`` or a
    line break is in it too."""
    limit = csv.field_size_limit()
    unquoted = re.compile(f"[^{re.escape(delimiter)}\r\n]*")
    pos, column = 0, 0
    while pos < len(text):
        begin, length = pos, 0
        if text[pos] == '"':
            quoted = _QUOTED.match(text, pos)
            assert quoted is not None  # it matches any text after a quote
            if not quoted.group(2):  # the quote is never closed: the cell runs to the end
                break
            length, pos = len(quoted.group(1)) - quoted.group(1).count('""'), quoted.end()
        rest = unquoted.match(text, pos)
        assert rest is not None  # it matches the empty text
        length, pos = length + len(rest.group()), rest.end()
        if length > limit:
            where = line + _line_breaks(text[:begin])
            name = first[column].strip() if column < len(first) else ""
            there = f"; the first row has {display_name(name)} there" if name and not _is_number(name) else ""
            return (
                f"{file}: line {where}, column {column} (counted from 0{there}): a cell of {length} "
                f"characters, longer than the {limit} that Python's csv module reads in a cell, and no "
                f"quote is left open in it (accepted: cells of at most {limit} characters)"
            )
        if pos >= len(text) or text[pos] != delimiter:  # a line break: the record ends here
            break
        pos, column = pos + 1, column + 1
    return (
        f"{file}: line {line}: cannot read the row that starts here: {error}; is a quote "
        "left open? (accepted: every quoted cell closed by a quote)"
    )


def _blank_separated(file: str, lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
    """The rows of ``lines`` whose cells are separated by runs of blanks
    (:data:`torchlean._delimiter.WHITESPACE`; :func:`torchlean._whitespace.rows`), each with the
    file line it starts on.

    Raises:
        DataError: a quote left open at the end of the file.
    """
    try:
        for row, start, _ in _whitespace.rows(lines):
            yield row, start
    except _whitespace.OpenQuote as open_quote:
        _refuse_open_quote(file, open_quote.start, open_quote.end)


def _one_cell_more(names: Sequence[str], body: Sequence[Sequence[str]]) -> bool:
    """Whether every data row of ``body`` has one cell more than the header of two names or more
    (``names``), none starts with a blank cell, and not every one ends with one: the layout of R's
    row names, which :func:`_row_names` takes when the first cells are also distinct (a blank
    first or last cell on every row is a delimiter leading or trailing the data lines, which the
    row-length error asks about)."""
    if len(names) < 2 or any(len(row) != len(names) + 1 for row in body):
        return False
    return all(row[0].strip() for row in body) and any(row[-1].strip() for row in body)


def _row_names(names: Sequence[str], body: Sequence[Sequence[str]]) -> bool:
    """Whether the data rows ``body`` start with R's row names: :func:`_one_cell_more` (a header
    of two names or more, ``names``, one cell shorter than every data row), as R's
    ``write.table`` writes a data frame with its row names (its default) and pandas' ``read_csv``
    reads as an index column, and the first cells (blanks around them stripped) are distinct, as
    R's row names are: a first column that repeats a value is no row names, but rows split into
    one cell too many (an unquoted cell holding the delimiter, such as ``Iris setosa`` under
    ``"whitespace"``), which :meth:`Table.row_error` asks about."""
    if not _one_cell_more(names, body):
        return False
    return len({row[0].strip() for row in body}) == len(body)


def _repeated_first_cell(body: Sequence[Sequence[str]]) -> tuple[str, int, int] | None:
    """The first row's first cell that an earlier row's repeats (blanks around it stripped), with
    the positions in ``body`` of the first two rows that hold it; ``None`` when all differ."""
    seen: dict[str, int] = {}
    for r, row in enumerate(body):
        cell = row[0].strip()
        if cell in seen:
            return cell, seen[cell], r
        seen[cell] = r
    return None


def _commented_header(rows: Sequence[Sequence[str]], header: object) -> list[str] | None:
    """The header names of a first row read with :data:`torchlean._delimiter.WHITESPACE` that
    starts with ``#``, as numpy's ``savetxt(..., header="a b y")`` writes ``# a b y``: its cells
    with the ``#`` marks at the start taken off (an empty first cell left out), when there are
    some, ``header`` is ``None`` or true, and they are as many as the cells of the next row,
    which does not start with ``#`` (a data row); else ``None``."""
    if header is not None and not (isinstance(header, (bool, np.bool_)) and header):
        return None
    if len(rows) < 2 or rows[1][0].lstrip().startswith("#"):
        return None
    first = rows[0][0].lstrip().lstrip("#")
    names = [*([first] if first.strip() else []), *rows[0][1:]]
    return names if names and len(names) == len(rows[1]) else None


def _commented_header_rule(rows: Sequence[Sequence[str]], header: object, delimiter: str) -> str:
    """The end of the refusal of a first line starting with ``#`` under ``delimiter``: under
    :data:`torchlean._delimiter.WHITESPACE`, when such a line is read as the header, and why
    this one is not (:func:`_commented_header`); else ``""``."""
    if delimiter != _delimiter.WHITESPACE:
        return ""
    rule = "; under whitespace a first line '# a b y' is read as the header when it has a name for each "
    if header is not None and not (isinstance(header, (bool, np.bool_)) and header):
        return f"{rule}cell of the next row, but not with header=False (CLI: --no-header)"
    if len(rows) < 2 or rows[1][0].lstrip().startswith("#"):
        return f"{rule}cell of the next row, a data row"
    first = rows[0][0].lstrip().lstrip("#")
    count = len(rows[0]) - (0 if first.strip() else 1)
    return f"{rule}cell of the next row: this one has {count} for {len(rows[1])}"


def _unnamed(name: str) -> bool:
    """Whether a header name is no name of its own: blank, or ``Unnamed: N``, as pandas names a
    column whose header cell is blank when it reads one (and so writes it back)."""
    return not name or re.fullmatch(r"Unnamed: \d+", name) is not None


def _row_labels(rows: Sequence[Sequence[str]]) -> bool:
    """Whether the first cells of ``rows`` are distinct integers (blanks around them stripped), as
    pandas' ``to_csv`` writes an integer index: ``0, 1, ..., n - 1`` by default, other numbers in
    any order after a filter, a shuffle or a re-index."""
    cells = [row[0].strip() for row in rows]
    if not all(DECIMAL_INTEGER.fullmatch(cell) for cell in cells):
        return False
    return len({int(cell) for cell in cells}) == len(cells)


def _separator_line(file: str, first: Sequence[str], line: int, delimiter: str) -> bool:
    """Whether the first row (read with ``delimiter``) is Excel's separator line ``sep=X`` naming
    ``delimiter`` (which is skipped).

    Raises:
        DataError: a separator line naming another separator (``sep=;`` read with ``,``), saying
            which ``delimiter`` reads the file (or that none does: ``sep=.``).
    """
    text = _delimiter.joiner(delimiter).join(first)
    found = re.fullmatch(r" *sep=(.) *", text, re.IGNORECASE | re.DOTALL)
    if found is None:
        return False
    separator = found.group(1)
    if separator == delimiter:
        return True
    says = (
        f"{file}: line {line}: Excel's separator line {text!r} says the file is separated by "
        f"{_delimiter.named(separator)}, not {_delimiter.named(delimiter)}"
    )
    why = _delimiter.fault(separator)
    if why is not None:
        raise DataError(
            f"{says}, which no delimiter reads: that separator {why} (accepted: a delimiter of one "
            f"character, {_delimiter.RULE})"
        )
    raise DataError(f"{says}: {_delimiter.use(separator)}")


_END_OF_FILE = "\x1etorchlean: end of file\x1e"
"""The text of one line :func:`read_csv` reads after the file's last: a row of its own, unless a
quote left open reads it into its cell."""


def _refuse_open_quote(file: str, start: int, end: int) -> None:
    """Refuse the quote left open in the row read from file lines ``start..end`` (the last)."""
    where = (
        "on this line is never closed" if end == start else
        f"in the row that starts here is never closed, so the rest of the file (lines {start}-{end}) "
        "would be read into one cell"
    )
    raise DataError(
        f"{file}: line {start}: a quote opened {where} (accepted: every quoted cell closed by a quote)"
    )


def _line_breaks(cell: str) -> int:
    """How many line breaks ``cell`` holds (``\\r\\n`` is one, as the file's lines count it)."""
    return cell.count("\n") + cell.count("\r") - cell.count("\r\n")


def _refuse_rows_in_a_label(file: str, line: int, column: str, cell: str, delimiter: str) -> None:
    """Refuse a class-label cell (from file line ``line``) that holds a line break and the
    ``delimiter``: rows of the file read into one cell by a misplaced quote (a class label holds
    neither)."""
    breaks = _line_breaks(cell)
    if breaks and _delimiter.holds(delimiter, cell):
        named = _delimiter.named(delimiter)
        raise DataError(
            f"{file}: line {line}, column {display_name(column)}: a quoted cell runs over lines "
            f"{line}-{line + breaks} and holds {named}, as if rows were read into it: {_cell_shown(cell)}; "
            f"is a quote misplaced? (accepted: a label quoted on its row, or spanning lines without {named})"
        )


def _separator_hint(first: Sequence[str], delimiter: str, second: Sequence[str] | None = None) -> str:
    """A hint for a first row read with ``delimiter`` as one column: ``"; the file seems to be
    separated by ';', not commas: pass delimiter=';' (CLI: --delimiter ';')"`` when its
    cell holds another common separator (:data:`torchlean._delimiter.COMMON`, the one it holds
    most; ties to the first); else, under a one-character ``delimiter``, ``"; the file seems to be
    separated by blanks, not commas: pass delimiter='whitespace' (CLI: --delimiter whitespace)"``
    when blanks split its cell, and the ``second`` row's (the first data row, when the first is a
    header; one cell too), in two or more (numpy's ``savetxt``, R's ``write.table``); else ``""``."""
    if len(first) != 1:
        return ""
    counts = {other: first[0].count(other) for other in _delimiter.COMMON if other != delimiter}
    separator = max(counts, key=lambda key: counts[key])
    if not counts[separator]:
        rows = (first,) if second is None else (first, second)
        if delimiter == _delimiter.WHITESPACE or any(
            len(row) != 1 or len(_BLANK_SEPARATED.findall(row[0])) < 2 for row in rows
        ):
            return ""
        separator = _delimiter.WHITESPACE
    return (
        f"; the file seems to be separated by {_delimiter.named(separator)}, not "
        f"{_delimiter.named(delimiter)}: {_delimiter.use(separator)}"
    )


def _other_separator_hint(first: Sequence[str], row: Sequence[str], delimiter: str) -> str:
    """``"; the file seems to be separated by ';', not commas: pass delimiter=';' (CLI:
    --delimiter ';')"`` when the ``first`` row and ``row`` (a data row of another cell count),
    their cells joined back with the one-character ``delimiter``, each hold another common
    separator (:data:`torchlean._delimiter.COMMON`) the same number of times, once or more (the one
    they hold most; ties to the first): a file of that separator whose header has a name holding
    ``delimiter`` (``x;"Preis (€, netto)";y`` read with commas); else ``""`` (and always under
    :data:`torchlean._delimiter.WHITESPACE`, which keeps no blanks to count)."""
    if delimiter == _delimiter.WHITESPACE:
        return ""
    ours, theirs = delimiter.join(first), delimiter.join(row)
    counts = {other: ours.count(other) for other in _delimiter.COMMON
              if other != delimiter and ours.count(other) == theirs.count(other)}
    if not counts or not max(counts.values()):
        return ""
    separator = max(counts, key=lambda key: counts[key])
    return (
        f"; the file seems to be separated by {_delimiter.named(separator)}, not "
        f"{_delimiter.named(delimiter)}: {_delimiter.use(separator)}"
    )


_BLANK_SEPARATED = re.compile(r"[^ \t\r\n]+")
"""A cell's runs of non-blanks: those :data:`torchlean._delimiter.WHITESPACE` would read as cells."""


def _header(file: str, first: Sequence[str], header: bool | None, delimiter: str) -> tuple[bool, str]:
    """(is the first row a header, the note on a guess from an all-numbers row); see the module
    docstring for the rule. The note shows the row's cells separated by ``delimiter`` (a tab as
    ``\\t``)."""
    if header is not None and not isinstance(header, (bool, np.bool_)):
        raise DataError(f"header must be True, False or None, got {header!r}")
    cells = [c.strip() for c in first]
    by = _delimiter.joiner(delimiter)
    by = by if by.isprintable() else repr(by)[1:-1]
    shown = by.join(cells) if len(cells) <= 6 else f"{by.join(cells[:3])}{by}...{by}{cells[-1]}"
    texts = [c for c in cells if not _is_number(c)]
    positions = cells == [str(i) for i in range(len(cells))]
    if header is not None:
        if not header or texts or positions:
            return bool(header), ""
        return True, (  # review59 F13: the row is lost to training without a word
            f"{file}: first row {shown} was read as a header though its cells are all numbers, so they name "
            "the columns and the row is not read as data; pass header=False (CLI: --no-header) if it is a "
            "data row"
        )
    if len(texts) == 1 and len(cells) > 1 and texts[0]:  # a header, or a row with a text label
        return True, (
            f"{file}: first row {shown} was read as a header, as its cell {texts[0]!r} is not a number "
            "(its other cells are); pass header=False (CLI: --no-header) if it is a data row with a "
            "text label"
        )
    if texts:
        return True, ""
    if positions:
        return True, (
            f"{file}: first row {shown} is all numbers equal to the column positions, so it was read as "
            "a header (as pandas to_csv writes one); pass header=False (CLI: --no-header) to read it as data"
        )
    return False, (
        f"{file}: first row {shown} is all numbers, so it was read as data (no header); "
        "pass header=True (CLI: --header) if it names the columns"
    )


def _name(value: object, what: str, empty: str, accepted: str) -> str:
    """``value`` (a ``str`` or ``os.PathLike[str]``) as a non-empty string. Messages call it
    ``what`` (``empty`` when it is empty) and list the ``accepted`` values.

    Raises:
        DataError: another type (``os.fspath`` would raise a bare ``TypeError``), or the empty
            name (which ``Path`` would read as ``.``, the current directory).
    """
    name = os.fspath(value) if isinstance(value, str | os.PathLike) else None
    if not isinstance(name, str):
        raise DataError(f"{what} must be {accepted} (str or os.PathLike), got {value!r}")
    if not name:
        raise DataError(f"{empty} is empty (accepted: {accepted})")
    return name
