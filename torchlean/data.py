"""Real datasets for training: the ones shipped with scikit-learn, and CSV files. No network.

``load(name_or_path, seed=..., test_fraction=..., dtype=...)`` returns a :class:`Dataset` with a
seeded train/test split (scikit-learn ``train_test_split``; stratified by class for classification
whenever every class has at least two samples and both splits can hold every class) and features
standardised with statistics fitted on the **train split only** (scikit-learn ``StandardScaler``;
a zero-variance feature gets scale 1, so it becomes 0 instead of NaN). With ``val_fraction=F``
a validation part is held out of the train split (:func:`validation_rows`: ``train_test_split`` of
the train split's rows with the same seed, stratified by class for classification) and the
statistics are fitted on the rest of the train split only, the part trained on, so that nothing
of the validation (or test) rows leaks into the features the model is trained on.

Shipped datasets (scikit-learn ``load_*``): ``digits`` (default; 1797 x 64, 10 classes),
``iris`` (150 x 4, 3), ``breast_cancer`` (569 x 30, 2), ``wine`` (178 x 13, 3) — classification
with integer labels — and ``diabetes`` (442 x 10) — regression.

CSV files: one sample per row; the label column is chosen by name or index (default: the last
column). Header rule (``header=None``, the default): the first row is a header when one of its
cells is not a number, or when its cells are exactly the column positions ``0,1,...,n-1`` (the
header ``pandas.DataFrame(array).to_csv(index=False)`` writes; its names equal the indices, so
``label_column="2"`` and ``label_column=2`` agree); any other all-numbers first row is data.
Either all-numbers decision is a guess, reported in :attr:`Dataset.header_note`, and so is a
header read from a row with one text cell among numbers (``1,2,3,4,setosa``: the first sample of a
headerless file with text labels, or a header); ``header=True``
/ ``header=False`` decide explicitly (and leave the note empty). Column names may repeat or be
blank (``x,x,x,y`` or ``,,,y``, as pandas reads such files); only a ``label_column`` given by a
name the header repeats is refused, as it could not say which column it means (give its index).
Messages about a cell name a repeated or blank column by its index. Cells are separated by
commas unless ``delimiter`` names another character (``';'``, as European spreadsheets export,
``'\\t'`` for TSV files, ``'|'``; one character, not a quote, a line break, a digit, ``.``, ``+``,
``-``, ``e``, ``E`` or a blank other than tab, which would clash with quoting, rows or numbers), or
``delimiter="whitespace"`` reads cells separated by runs of spaces and tabs, blanks at the ends of a
line ignored and double-quoted cells holding blanks (numpy's ``savetxt`` and R's ``write.table``
defaults, as pandas' ``read_csv(sep=r"\\s+")`` and ``np.loadtxt`` read them); a
first row read as one column that another common separator (``,``, ``;``, tab, ``|``) would split
says so, as does one that blanks split (with the first data row) under a one-character delimiter.
Decimal commas are not read: under another delimiter a cell ``1,5`` is not a number (its
refusal says to write ``1.5``), and a label column holding such cells is refused unless ``task``
is given. Before the header is decided, Excel's first line ``sep=X`` is skipped when ``X`` is the
delimiter and refused, naming the delimiter to give, when it names another; a first line starting
with ``#`` is refused (comment lines are not read; numpy's ``savetxt`` writes its header so unless
given ``comments=''``; under ``delimiter="whitespace"`` its line ``# a b y`` is read as the header,
with a note, when it names a column per cell of the next row, unless ``header=False``); and a last
column with no name (or any last column, without a header) whose cells are blank on every line, as
a delimiter ending every line makes it, is dropped, so the label defaults to the column before it.
A header of two names or more one cell shorter than every data row (R's ``write.table`` with its
default row names, which pandas reads as an index) drops the first cell of each data row (not when
one is blank, nor when every last cell is: a delimiter leading or trailing the data lines, nor when
two first cells are equal, as R's row names are distinct: the row-length error then asks about a
cell holding the delimiter unquoted), so column indices are the header's; an error reading the
cells after that says so. After
it, a first column whose header cell is blank (or pandas' ``Unnamed: N``) over distinct integers (the index
``DataFrame.to_csv()`` writes: ``0, 1, ..., n-1`` by default, other integers in any order after a
filter, a shuffle or a re-index) is not a feature unless it is the label column; it still counts
in column indices. Each of these is reported in :attr:`Dataset.notes`. A ``label_column``
string is a header name first, an index only when it names no column: ``"3"`` with the header
``a,3,b,y`` is column 1, with a note saying how to ask for index 3 (``3`` as an int; CLI:
``--label-column -1`` or ``y``). A feature cell that is not a number, in a column with no number
in any row, is refused with a hint that the column may be the label. A cell is a number
when it is written with ASCII digits, an optional sign, point and exponent (``1e-3``, ``.5``;
not ``1_000`` or other scripts' digits, which Python's ``float`` would read). Features must be
finite float64 numbers and regression labels finite numbers within the range of ``dtype``
(``1e200`` is refused as a float32 label, by line and column); features are standardised in
float64, so a column beyond float32's range loads under float32 as long as each feature's (each
regression target's) train-split mean and standard deviation are finite in float64 and the
standardised features fit ``dtype`` (refused by column otherwise). Classification labels may be
numbers or non-blank strings and are mapped to ``0 .. n_classes - 1`` in sorted order (names kept
in ``class_names``); in a column whose labels are all finite numbers, they are classes by exact
value, so ``1``, ``1.0``, ``01``, ``+1`` and ``1e0`` are one class, named ``1`` (a non-integer
class is named by its first spelling in the file), also among non-number labels (under
``task='classification'``: the numbers' classes first, by value, then the names, compared as
text; a number with a decimal exponent beyond 400 is a name); a single class
is refused, in the file or in the train split, as scikit-learn classifiers refuse it. Unless
``task`` says otherwise, the task is ``classification`` when every label is an integer or every
label is a non-number, ``regression`` when every label is a number and some is not an integer;
a column mixing numbers and non-numbers (a target with missing values such as ``NA``, ``?`` or
``null``) is refused, naming its first non-number and how many labels are numbers: no missing
value is read (remove such rows), and, when the numbers are all whole (class ids among names?),
``task='classification'`` reads every label as a class name. Blank labels are left out of that
decision and refused by line and column under either task (``not a number: ''``, ``not a class
label: ''``).

The reader's pieces are public for data that is not split or rescaled (``torchlean predict``
applies a checkpoint's saved statistics): :func:`locate` (shipped name or CSV path),
:func:`shipped` (a whole shipped dataset), :func:`read_csv` (a :class:`Table` of cells, whose
``columns`` converts the features), :func:`class_ids` and :func:`targets` (label cells against
known classes, or as regression targets).
"""

from __future__ import annotations

import contextlib
import csv
import dataclasses
import itertools
import math
import numbers
import os
import re
import shlex
from collections.abc import Callable, Iterable, Iterator, Sequence
from dataclasses import dataclass
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from torchlean import _delimiter, _whitespace
from torchlean._checks import (
    DECIMAL_INTEGER,
    DECIMAL_NUMBER,
    dtype_shown,
    float_dtype,
    is_builtin_or_numpy_int,
    shown,
)
from torchlean.backend.display import name_shown
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.batches import minibatches

__all__ = [
    "DATASETS",
    "STDIN",
    "TEST_FRACTION",
    "DataError",
    "Dataset",
    "EmptySplitError",
    "Place",
    "Table",
    "Task",
    "class_ids",
    "display_name",
    "load",
    "load_csv",
    "locate",
    "minibatches",
    "read_csv",
    "shipped",
    "split_note",
    "split_rows",
    "targets",
    "validation_rows",
]

Task: TypeAlias = Literal["classification", "regression"]
Lines: TypeAlias = int | Sequence[int]
"""Where cells sit in a file: the line of the first (the rest on the lines after it), or the line
of each (:attr:`Table.lines`)."""
Place: TypeAlias = Literal["line", "row"]
"""What the numbers of :data:`Lines` count in messages: file lines (a CSV file), or rows from 1 (a
shipped dataset, which has no file lines)."""
Array: TypeAlias = npt.NDArray[Any]

DATASETS: tuple[str, ...] = ("digits", "iris", "breast_cancer", "wine", "diabetes")
"""Names of the shipped datasets, in the order error messages list them."""

TEST_FRACTION = 0.2
"""The default test fraction of :func:`load`'s train/test split (``torchlean train
--test-fraction``'s default, and the one a checkpoint written before that option means)."""

STDIN = "/dev/stdin"
"""The path ``--dataset -`` reads (standard input)."""


class DataError(TorchLeanError, ValueError):
    """A dataset could not be loaded or split (missing file, bad cell, bad parameter)."""


class EmptySplitError(DataError):
    """A train/test split that would leave the train or the test split without a sample
    (:func:`split_rows`): ``samples`` rows, ``test_fraction`` as given and ``test_rows``, the
    ``ceil(test_fraction * samples)`` rows the test split would take, as attributes, so a caller
    can name its own option and the fractions it accepts (``torchlean train --test-fraction``)."""

    def __init__(self, message: str, *, samples: int, test_fraction: float, test_rows: int) -> None:
        super().__init__(message)
        self.samples = samples
        self.test_fraction = test_fraction
        self.test_rows = test_rows


@dataclass(frozen=True, slots=True, eq=False)
class Dataset:
    """A train/test split ready for training.

    ``x_train`` ``[n_train, n_features]`` and ``x_test`` ``[n_test, n_features]`` in ``dtype``,
    standardised with the train statistics ``feature_mean`` / ``feature_scale`` (float64,
    ``[n_features]``). Labels: int64 class ids in ``0 .. n_classes - 1`` for classification,
    ``dtype`` values for regression (``n_classes == 0``, ``class_names == ()``). ``label_name``
    is the label column as messages name it (``target`` for shipped datasets).
    ``header_note`` says how a CSV header was guessed from an all-numbers first row (read as a
    header or as data, and how to override) or from a first row with one text cell among numbers
    (read as a header); it is empty for shipped datasets, when ``header`` was given, and when the
    first row had several non-numeric cells. ``split_note`` says when a classification split could
    not be stratified by class (:func:`split_note`; for a CSV whose task was inferred from over 10
    whole-number labels, it adds that ``task='regression'`` exists), else
    is empty. ``notes`` are the other notes on how a CSV file was read, one line each, in this order:
    Excel's ``sep=`` first line skipped (naming the delimiter), numpy's ``savetxt`` header ``# a b y``
    read as the header (under ``delimiter="whitespace"``), an unnamed empty last column ignored
    (a trailing delimiter), R's row names left out (a header one cell shorter than the rows), a
    ``label_column`` string read as a column name that is also a column index, an unnamed first
    column of distinct integers (pandas' ``to_csv`` index) left out of the features; ``()`` for shipped
    datasets and when none applies (:attr:`Table.notes`, :meth:`Table.label_note`,
    :meth:`Table.index_note`). ``torchlean train`` prints each as a ``note:`` line.

    With :func:`load`'s ``val_fraction``, ``x_val`` ``[n_val, n_features]`` and ``y_val``
    ``[n_val]`` (same dtypes) are the validation part held out of the train split, and
    ``x_train``/``y_train`` are the rest of it (the part trained on), whose statistics standardise
    all three parts (``feature_mean``/``feature_scale``, and :meth:`target_statistics`); without
    it both are ``None``.
    """

    name: str
    task: Task
    x_train: Array
    y_train: Array
    x_test: Array
    y_test: Array
    n_classes: int
    feature_names: tuple[str, ...]
    class_names: tuple[str, ...]
    feature_mean: Array
    feature_scale: Array
    label_name: str = "target"
    header_note: str = ""
    split_note: str = ""
    notes: tuple[str, ...] = ()
    x_val: Array | None = None
    y_val: Array | None = None

    @property
    def n_features(self) -> int:
        """Number of input features: the second axis of ``x_train``."""
        return int(self.x_train.shape[1])

    def target_statistics(self) -> tuple[float, float]:
        """Regression: the train targets' mean and standard deviation (population, float64; a
        zero deviation is taken as 1), what ``torchlean train`` standardises the target with and
        saves as a checkpoint's ``target_mean`` / ``target_scale``.

        Unstandardised targets (diabetes: mean about 152, up to 346) give an MSE in the tens of
        thousands and gradients that can blow a default-rate run up to NaN; train on
        :meth:`standardised_targets` and map predictions back with ``p * scale + mean``.
        :func:`load` has refused targets whose mean or deviation is not finite, so neither is.

        Raises:
            DataError: a classification dataset (its targets are class ids).
        """
        if self.task != "regression":
            raise DataError(
                f"{self.name}: target statistics are for regression; this dataset's targets are "
                f"{self.n_classes} class ids"
            )
        target = self.y_train.astype(np.float64)
        return float(np.mean(target)), float(np.std(target)) or 1.0

    def standardised_targets(self) -> tuple[Array, Array]:
        """Regression: ``(y_train, y_test)`` as ``(y - mean) / scale`` with
        :meth:`target_statistics` (computed in float64, returned in the features' dtype).

        Raises:
            DataError: a classification dataset.
        """
        mean, scale = self.target_statistics()
        return self._standardised(self.y_train, mean, scale), self._standardised(self.y_test, mean, scale)

    def standardised_val_targets(self) -> Array:
        """Regression with a validation part: ``y_val`` as ``(y - mean) / scale`` with
        :meth:`target_statistics` (the part trained on), as :meth:`standardised_targets` computes
        the others.

        Raises:
            DataError: a classification dataset, or one loaded without ``val_fraction``.
        """
        mean, scale = self.target_statistics()
        if self.y_val is None:
            raise DataError(f"{self.name}: no validation part (load it with val_fraction=...)")
        return self._standardised(self.y_val, mean, scale)

    def _standardised(self, y: Array, mean: float, scale: float) -> Array:
        return ((y.astype(np.float64) - mean) / scale).astype(self.x_train.dtype)


def load(
    name_or_path: str | os.PathLike[str] = "digits",
    *,
    seed: int = 0,
    test_fraction: float = TEST_FRACTION,
    dtype: npt.DTypeLike = np.float32,
    label_column: str | int | None = None,
    header: bool | None = None,
    task: Task | None = None,
    val_fraction: float | None = None,
    delimiter: str | None = None,
) -> Dataset:
    """Load a shipped dataset by name, or a CSV file by path, split and standardised.

    ``label_column``, ``header``, ``task`` and ``delimiter`` apply to CSV files only (see the module
    docstring); for a shipped dataset they must be None. ``delimiter`` ``None`` is the comma
    (:func:`read_csv` has the delimiters accepted).
    ``label_column`` is a column name, else an integer index (Python or numpy, or a string of one
    such as ``"2"`` that names no column; negative counts from the end; a string that names a
    column and is another column's index is the name, with a note in :attr:`Dataset.notes`);
    ``header`` is ``None``, a ``bool`` or a ``numpy.bool_``. ``seed`` is an integer (Python or
    numpy; not a bool) in ``[0, 2**32)``: scikit-learn's ``train_test_split`` seeds a numpy
    ``RandomState``, which takes no larger seed.

    Returns a :class:`Dataset` (shapes and dtypes there): features in ``dtype``, class ids int64,
    regression targets in ``dtype``. The split and scaling are scikit-learn's, so they match
    ``train_test_split(..., random_state=seed, stratify=...)`` and ``StandardScaler`` bit for bit.
    ``val_fraction`` (``None``, the default, or a real number in ``(0, 1)``) holds that fraction
    of the train split out as :attr:`Dataset.x_val`/``y_val`` (:func:`validation_rows`), the
    statistics then fitted on the rest (Keras' ``validation_split`` takes the last rows unshuffled
    instead; this is scikit-learn's seeded, stratified split applied once more).

    Raises:
        UnknownLabelError: an unknown name that is not an existing file, naming the accepted
            datasets; an unknown CSV label column, naming the columns; an unknown ``task``.
        DataError: ``name_or_path`` not a ``str`` or ``os.PathLike`` (naming the accepted
            datasets) or empty, missing file (or a directory), a file that is not UTF-8, has no
            rows or no data rows, a row whose cell count differs, a file read as one column (with a
            hint when another common separator than ``delimiter`` splits it), non-numeric or
            non-finite feature cell (a decimal comma named as such), a regression label beyond
            ``dtype``'s range or a blank label cell (line and column named), labels mixing numbers
            and non-numbers, or written with decimal commas, without ``task`` (the first
            non-number named), a first line starting with ``#`` (a comment) or Excel's ``sep=``
            line naming a separator other than ``delimiter``, a single class, a label column and
            pandas' index column without another column,
            a ``label_column`` name the header repeats (naming its columns), bad ``header``,
            ``seed``, ``test_fraction`` (a real number, not a bool or a string, in ``(0, 1)``) or
            ``dtype``, a split that leaves no train or test sample or a single class to train on,
            a column whose standardisation overflows (column named); ``label_column``,
            ``header``, ``task`` or ``delimiter`` given for a shipped dataset; a bad
            ``val_fraction`` or a validation split it cannot make (:func:`validation_rows`); a
            ``delimiter`` that :func:`read_csv` refuses (naming it, why, and those accepted).
    """
    target = _float_dtype(dtype)
    name, is_shipped = locate(name_or_path)
    if is_shipped:
        options = {"label_column": label_column, "header": header, "task": task, "delimiter": delimiter}
        given = [f"{key}={value!r}" for key, value in options.items() if value is not None]
        if given:  # silently ignored before, as the CLI refuses them
            raise DataError(
                f"{', '.join(given)}: label_column, header, task and delimiter apply to CSV files; {name} is "
                "a shipped dataset"
            )
        x, y, features, classes, kind = shipped(name)
        return _split(
            name, x, y, kind, features, classes, seed, test_fraction, target, val_fraction=val_fraction
        )
    return load_csv(
        name,
        label_column=label_column,
        header=header,
        task=task,
        seed=seed,
        test_fraction=test_fraction,
        dtype=target,
        val_fraction=val_fraction,
        delimiter=_delimiter.COMMA if delimiter is None else delimiter,
    )


def locate(name_or_path: object) -> tuple[str, bool]:
    """``name_or_path`` as a string, and whether it names a shipped dataset (else it is a CSV
    file path: it ends in ``.csv``, holds a path separator or names an existing file).

    Raises:
        DataError: not a ``str`` or ``os.PathLike``, or empty (naming the accepted datasets).
        UnknownLabelError: neither a shipped dataset nor a CSV path, naming the shipped datasets.
    """
    accepted = f"a shipped dataset name ({' | '.join(DATASETS)}) or a path to a .csv file"
    name = _name(name_or_path, "dataset", "dataset name", accepted)
    if name in DATASETS:
        return name, True
    if name.lower().endswith(".csv") or os.sep in name or os.path.exists(name):  # False for a name too long
        return name, False
    raise UnknownLabelError(
        f"unknown dataset {name_shown(name)} (known: {' | '.join(DATASETS)}, or a path to a .csv file)"
    )


def load_csv(
    path: str | os.PathLike[str],
    *,
    label_column: str | int | None = None,
    header: bool | None = None,
    task: Task | None = None,
    seed: int = 0,
    test_fraction: float = TEST_FRACTION,
    dtype: npt.DTypeLike = np.float32,
    val_fraction: float | None = None,
    delimiter: str = _delimiter.COMMA,
) -> Dataset:
    """Load a CSV file (features + one label column): what :func:`load` does for a path, with the
    same arguments, result and errors; the module docstring gives the CSV rules, :func:`read_csv`
    the ``delimiter`` accepted.

    Raises:
        DataError, UnknownLabelError: as :func:`load` lists them for a CSV file.
    """
    target = _float_dtype(dtype)
    table = read_csv(path, header=header, delimiter=delimiter)
    if len(table.names) < 2:
        raise DataError(
            f"{table.file}: expected a label column and at least one feature column, got {len(table.names)}"
            f"{table.separator_hint}"
        )
    label = table.column(label_column)
    feature_idx = table.feature_indices(label)
    if not feature_idx:  # a label and pandas' index only
        raise DataError(
            f"{table.file}: expected a label column and at least one feature column, got the label column "
            f"{display_name(table.shown(label))} and column 0, pandas' to_csv index of row numbers, which is "
            "not a feature"
        )
    with table.row_names_told():
        x, cells = table.columns(label)
        assert cells is not None  # a label column was asked for
        y, classes, kind = _labels(
            table.file, table.shown(label), cells, task, table.lines, target, delimiter=table.delimiter
        )
    dataset = _split(
        table.file.stem, x, y, kind, tuple(table.names[i] for i in feature_idx), classes, seed, test_fraction,
        target, source=str(table.file), columns=tuple(table.shown(i) for i in feature_idx),
        label=table.shown(label), val_fraction=val_fraction,
    )
    whole_numbers = all(_is_number(name) for name in classes)
    if task is None and dataset.split_note and len(classes) > 10 and whole_numbers:
        # over 10 whole-number classes, too few samples to stratify: often a quantity read as classes
        dataset = dataclasses.replace(dataset, split_note=(
            f"{dataset.split_note}; the labels are whole numbers ({len(classes)} distinct), so the task "
            "classification was inferred: pass task='regression' (CLI: --task regression) if they are a "
            "quantity"
        ))
    notes = (*table.notes, table.label_note(label_column), table.index_note(label),
             table.unnamed_features_note(label))
    return dataclasses.replace(
        dataset, header_note=table.header_note, notes=tuple(note for note in notes if note)
    )


@dataclass(frozen=True, slots=True, eq=False)
class Table:
    """A CSV file read into cells, before any column is converted (:func:`read_csv`).

    ``names`` has one entry per column: the first row's cells (blanks around them stripped) when
    it is a header, else ``column_<i>``; ``first_row`` is the file's first row as read; ``rows``
    are the data rows as read (blank rows skipped); ``lines`` the file line on which each of them
    starts (blank lines and cells holding line breaks counted, as an editor numbers lines);
    ``header_note`` as :attr:`Dataset.header_note`; ``notes`` what else :func:`read_csv` noted
    (Excel's ``sep=`` line skipped, numpy's ``savetxt`` header ``# a b y`` read as the header, an
    unnamed empty last column dropped from ``names`` and ``rows``, R's row names dropped from
    ``rows``). ``index_column`` is ``0`` when the first
    column is pandas' ``to_csv`` index (an unnamed header cell over the row numbers
    ``0 .. len(rows) - 1``, in order), which :meth:`feature_indices` leaves out unless it is the
    label column; else ``None``. It stays in ``names`` and ``rows``, so column indices count it.
    ``delimiter`` is the character the cells were separated by (messages name it), or
    ``"whitespace"``. ``row_names`` is whether the first cell of each data row was dropped as R's
    row name (:meth:`row_names_told` adds it to the errors of reading the cells).
    """

    file: Path
    names: tuple[str, ...]
    has_header: bool
    first_row: tuple[str, ...]
    rows: list[list[str]]
    lines: tuple[int, ...]
    header_note: str
    notes: tuple[str, ...] = ()
    index_column: int | None = None
    delimiter: str = _delimiter.COMMA
    row_names: bool = False

    @property
    def first_line(self) -> int:
        """The file line of the first data row."""
        return self.lines[0]

    def column(self, label_column: object) -> int:
        """The index of ``label_column``: ``None`` for the last column, an integer index (Python
        or numpy; negative counts from the end), or a header name used exactly once, else a
        string of an integer (``"2"``, ``"-1"``) as that index (the CLI's ``--label-column``); a
        name that is also another column's index is the name (:meth:`label_note` says so).

        Raises:
            UnknownLabelError: an index out of range or an unknown name, naming the accepted ones.
            DataError: a name the header repeats (ambiguous), naming its columns.
        """
        return _label_index(self.file, self.names, label_column, self.has_header)

    def label_note(self, label_column: object) -> str:
        """The note on a ``label_column`` string that :meth:`column` read as a header name though
        it is also an integer index of another column (``"3"`` naming column 1 of five), saying how
        to ask for the index; else ``""``."""
        return _label_name_note(self.file, self.names, label_column, self.has_header)

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
            f"{self.file}: column {self.index_column} {unnamed} and holds {held}, as pandas' to_csv writes "
            "its index, so it is not used as a feature (to_csv(index=False) leaves it out; a name in its "
            "header cell makes it a feature)"
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
        shown = ", ".join(_shown(self.names, i) for i in unnamed)
        several = len(unnamed) > 1
        has, are, one = (
            ("have", "are used as features", "one") if several else ("has", "is used as a feature", "it")
        )
        return (
            f"{self.file}: column{'s' if several else ''} {shown} {has} no name of its own (blank, or "
            f"pandas' 'Unnamed: N') and {are}: if {one} is an index an earlier to_csv wrote, remove it (row "
            "numbers can give the label away)"
        )

    def shown(self, index: int) -> str:
        """Column ``index`` as messages name it: its name when that is non-blank and used once,
        else its index (with the name when there is one: ``2 ('x')``)."""
        return _shown(self.names, index)

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
        separated by ';'``), else ``None``."""
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
            hint = ""
        return DataError(
            f"{self.file}: line {self.lines[r]} has {len(row)} cell{'' if len(row) == 1 else 's'}{by}, "
            f"expected {len(self.names)}{hint}"
        )

    @contextlib.contextmanager
    def row_names_told(self) -> Iterator[None]:
        """Add to a :class:`DataError` raised inside (reading the cells: :meth:`columns`, the
        labels) that the first cell of each data row was dropped as R's row name, when it was
        (:attr:`row_names`): the note would be printed after a load that succeeds, and a header
        that is one name short, not R's, shifts the columns (the error is re-raised, its class and
        attributes kept)."""
        try:
            yield
        except DataError as error:
            if not self.row_names:
                raise
            n = len(self.names)
            error.args = (
                f"{error} (the header has {n} cells and every data row {n + 1}, so the first cell of each "
                "row was taken as R's row name and left out, and the header names the cells after it; if "
                "the header lacks the first column's name, add it)",
                *error.args[1:],
            )
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
                decimal comma counting as one), adds the hint ``(is y the label? pass
                --label-column y, or label_column='y' in Python)``.
        """
        feature_idx = self.feature_indices(label)
        fast = _well_formed_features(self.rows, len(self.names), label, feature_idx)
        if fast is not None:
            return fast, None if label is None else [row[label] for row in self.rows]
        # something is refused: read cell by cell, so the first refusal in file order is raised
        x = np.empty((len(self.rows), len(feature_idx)), dtype=np.float64)
        cells: list[str] = []
        separator = self._separator_by_blanks()
        for r, (line, row) in enumerate(zip(self.lines, self.rows, strict=True)):
            error = self.row_error(r)
            if error is not None:
                raise error
            if label is not None:  # first: rows read into a label are the cause of what follows
                _refuse_rows_in_a_label(self.file, line, self.shown(label), row[label], self.delimiter)
                cells.append(row[label])
            for j, i in enumerate(feature_idx):
                # features are read and standardised in float64; the standardised values are checked
                # against the target dtype in _split, so a 1e39-scale column still fits float32
                try:
                    x[r, j] = _number(
                        self.file, line, self.shown(i), row[i], _FLOAT64, delimiter=self.delimiter
                    )
                except DataError as error:
                    cell = row[i].strip()
                    if separator is not None and (cell.startswith(separator) or cell.endswith(separator)):
                        raise DataError(
                            f"{self.file}: line {line}, column {display_name(self.shown(i))}: not a number: "
                            f"{_cell_shown(row[i])}; the file seems to be separated by "
                            f"{_delimiter.named(separator)}, not blanks: {_delimiter.use(separator)}"
                        ) from None
                    hint = self._label_hint(i)
                    if not hint:
                        raise
                    raise DataError(f"{error} {hint}") from None
        return x, None if label is None else cells

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
        """``(is y the label? ...)`` when feature column ``index`` holds no number in any row (a
        decimal comma, under another delimiter than the comma, counts as one) and some non-blank
        cell (text, as a label column holds), else ``""``."""
        cells = [row[index].strip() for row in self.rows if len(row) > index]
        if any(_is_number(cell) or _decimal_comma(cell, self.delimiter) for cell in cells) or not any(cells):
            return ""
        name = self.names[index]
        by_name = self.has_header and name and self.names.count(name) == 1
        given: str | int = name if by_name else index
        return (
            f"(is {display_name(self.shown(index))} the label? pass --label-column "
            f"{shlex.quote(str(given))}, or label_column={given!r} in Python)"
        )


def _well_formed_features(
    rows: Sequence[Sequence[str]], n_columns: int, label: int | None, feature_idx: Sequence[int]
) -> Array | None:
    """The features of :meth:`Table.columns` read a column at a time, or ``None`` when some row
    or cell would be refused (a row of another length, a label cell spanning lines, a feature cell
    that is not a finite number); the same values as :func:`_number` reads (Python's ``float``).

    On ASCII text without ``_``, every cell that Python's ``float`` reads is one that
    :data:`DECIMAL_NUMBER` accepts once ``str.strip`` removed its blanks, with the same value
    (tested in tests/data/test_csv_fast_path.py); ``float`` refuses some that it accepts (it does
    not strip ``\x1c``-``\x1f``). Any other column goes cell by cell, which decides.
    """
    if not rows:  # a Table built by hand (read_csv refuses a file without data rows)
        return np.empty((0, len(feature_idx)), dtype=np.float64)
    if any(len(row) != n_columns for row in rows):
        return None
    if label is not None and any("\n" in row[label] or "\r" in row[label] for row in rows):
        return None  # _refuse_rows_in_a_label decides
    columns = list(zip(*rows, strict=True))
    x = np.empty((len(rows), len(feature_idx)), dtype=np.float64)
    for j, i in enumerate(feature_idx):
        text = "".join(columns[i])
        if not text.isascii() or "_" in text:
            return None
        try:
            x[:, j] = np.fromiter(map(float, columns[i]), dtype=np.float64, count=len(rows))
        except ValueError:
            return None
    return x if np.isfinite(x).all() else None


def _stdin_closed() -> bool:
    """Whether the process has no standard input (file descriptor 0 closed)."""
    try:
        os.fstat(0)
    except OSError:
        return True
    return False


def read_csv(
    path: str | os.PathLike[str], *, header: bool | None = None, delimiter: str = _delimiter.COMMA
) -> Table:
    """Read the CSV file ``path`` into cells (UTF-8, an optional byte-order mark; blank rows
    skipped), deciding whether its first row is a header by the module docstring's rule.

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
            input, a terminal too, are read), a file that is not UTF-8 or cannot be read, a
            quote left open, a file without rows or without data rows, a first line starting
            with ``#`` (a comment line; under ``"whitespace"``, not numpy's ``savetxt`` header
            ``# a b y`` naming a column per cell of the next row, read as the header unless
            ``header=False``), Excel's ``sep=`` first line naming another separator than
            ``delimiter`` (the message says which ``delimiter`` to give), a bad ``header``, a
            ``delimiter`` that is not one of the characters accepted (naming it, why, and those
            accepted).

    Excel's ``sep=X`` first line naming ``delimiter`` is skipped, an unnamed last column blank on every
    line is dropped (not under ``"whitespace"``, where blanks ending a line end no cell), R's row
    names (a header one cell shorter than every data row, over distinct first cells) are dropped
    from the rows (:attr:`Table.row_names`),
    and pandas' index column is marked as :attr:`Table.index_column` (the module docstring has the
    rules; :attr:`Table.notes` and :meth:`Table.index_note` report them).

    Quoting is Python's ``csv`` default (not strict), as spreadsheets write it: a blank after a
    closing quote (``"3" ,4``) stays in the cell, where blanks around a number or a label are
    stripped anyway. A quoted cell may span lines (a class label ``"a\nb"``), but a quote left open
    at the end of the file is refused (the rest of the file would be read into one cell); so is a
    label cell spanning lines that holds the delimiter, when :meth:`Table.columns` reads it (rows read
    into it between two misplaced quotes). A quoted cell may hold the delimiter (``"a;b"``).
    """
    why = _delimiter.fault(delimiter)
    if why is not None:
        raise DataError(_delimiter.python_refusal(delimiter, why))
    file = Path(_name(path, "dataset path", "dataset path", "a path to a .csv file"))
    try:  # Path.is_dir() and exists() raise what is not "no such file" (a name too long)
        is_dir, exists = file.is_dir(), file.exists()
        device = str(file) != STDIN and (file.is_char_device() or file.is_block_device())
    except OSError as error:
        raise DataError(f"{file}: cannot read the file: {error.strerror or error}") from None
    if is_dir:
        raise DataError(f"dataset path is a directory, not a CSV file: {file}")
    if not exists:  # a pipe (/dev/stdin, <(...)) is read like a file
        if str(file) == STDIN and _stdin_closed():  # started with ``<&-``: /dev/stdin names nothing
            raise DataError("standard input is closed (the dataset - reads the CSV from it)")
        raise DataError(f"dataset file not found: {file}")
    if device:
        # /dev/zero or a disk would be read until memory runs out; standard input (``-``, a
        # terminal too) is what the user redirected into it
        raise DataError(
            f"dataset path {file} is a device, not a CSV file (accepted: a file, a pipe, or standard "
            "input as -)"
        )
    rows: list[list[str]] = []
    starts: list[int] = []
    try:
        with file.open(newline="", encoding="utf-8-sig") as handle:
            records = (
                _blank_separated(file, handle) if delimiter == _delimiter.WHITESPACE
                else _delimited(file, handle, delimiter)
            )
            for row, start in records:
                if (row and row[0].strip()) or any(cell.strip() for cell in row):  # not blank
                    rows.append(row)
                    starts.append(start)
    except UnicodeDecodeError as error:
        raise DataError(f"{file}: not a UTF-8 text file (byte {error.start}: {error.reason})") from None
    except OSError as error:
        raise DataError(f"{file}: cannot read the file: {error}") from None
    notes: list[str] = []
    if rows and _separator_line(file, rows[0], starts[0], delimiter):
        text = _delimiter.joiner(delimiter).join(rows[0])
        notes.append(f"{file}: line {starts[0]} {text!r} is Excel's separator line naming "
                     f"{_delimiter.one(delimiter)}; it was skipped")
        rows, starts = rows[1:], starts[1:]
    if not rows:
        raise DataError(f"{file}: the file has no rows")
    if rows[0][0].lstrip().startswith("#"):
        commented = _commented_header(rows, header) if delimiter == _delimiter.WHITESPACE else None
        if commented is None:
            raise DataError(
                f"{file}: line {starts[0]} starts with '#', a comment line: comment lines are not supported "
                "(accepted: a header row or a data row first; remove the comment lines, or rename a first "
                "column whose name starts with '#'; numpy's savetxt writes its header as a comment unless "
                f"given comments=''{_commented_header_rule(rows, header, delimiter)})"
            )
        text = " ".join(rows[0])
        notes.append(
            f"{file}: line {starts[0]} {text!r} was read as the header, as numpy's savetxt(..., header=...) "
            f"writes one after '# ' (np.loadtxt skips it as a comment): its {len(commented)} names fit the "
            f"{len(rows[1])} cells of line {starts[1]}"
        )
        rows = [commented, *rows[1:]]
        header = True
    width = len(rows[0])
    while (
        width > 1 and delimiter != _delimiter.WHITESPACE  # blanks ending a line end no cell there
        and all(len(row) == width and not row[-1].strip() for row in rows)
    ):
        notes.append(
            f"{file}: the last column ({width - 1}) has no name and is empty on every line (a trailing "
            f"{_delimiter.word(delimiter)}?), so it is ignored"
        )
        rows = [row[:-1] for row in rows]
        width -= 1
    has_header, note = _header(file, rows[0], header, delimiter)
    names = [c.strip() for c in rows[0]] if has_header else [f"column_{i}" for i in range(len(rows[0]))]
    body = rows[1:] if has_header else rows
    if not body:
        raise DataError(f"{file}: no data rows")
    lines = tuple(starts[1:] if has_header else starts)
    row_names = has_header and _row_names(names, body)
    if row_names:
        notes.append(
            f"{file}: the header has {len(names)} cells and every data row {len(names) + 1}, as R's "
            "write.table writes row names (pandas reads such a first column as its index), so the first "
            "cell of each row is a row name and is not used (write.table(..., row.names = FALSE) leaves "
            "it out)"
        )
        body = [row[1:] for row in body]
    index = 0 if has_header and len(names) > 1 and _unnamed(names[0]) and _row_labels(body) else None
    return Table(
        file, tuple(names), has_header, tuple(rows[0]), body, lines, note, tuple(notes), index, delimiter,
        row_names,
    )


def _delimited(file: Path, lines: Iterable[str], delimiter: str) -> Iterator[tuple[list[str], int]]:
    """The records of ``lines`` read by Python's ``csv`` with the one-character ``delimiter``,
    each with the file line it starts on.

    Raises:
        DataError: a quote left open at the end of the file, or a cell over ``csv``'s size limit.
    """
    reader = csv.reader(itertools.chain(lines, [_END_OF_FILE + "\n"]), delimiter=delimiter)
    start = end = 0  # the first and last file line of the record just read
    try:
        for row in reader:
            start, end = end + 1, reader.line_num
            if delimiter.join(row) == _END_OF_FILE:  # a delimiter such as ':' splits its text
                return
            if row and _END_OF_FILE in row[-1]:
                _refuse_open_quote(file, start, end - 1)
            yield row, start
    except csv.Error as error:  # the only one csv raises when not strict: a cell over its size limit
        raise DataError(
            f"{file}: line {end + 1}: cannot read the row that starts here: {error}; is a quote "
            "left open? (accepted: every quoted cell closed by a quote)"
        ) from None


def _blank_separated(file: Path, lines: Iterable[str]) -> Iterator[tuple[list[str], int]]:
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


def _separator_line(file: Path, first: Sequence[str], line: int, delimiter: str) -> bool:
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


def _refuse_open_quote(file: Path, start: int, end: int) -> None:
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
    """How many line breaks ``cell`` holds (``\r\n`` is one, as the file's lines count it)."""
    return cell.count("\n") + cell.count("\r") - cell.count("\r\n")


def _refuse_rows_in_a_label(file: Path, line: int, column: str, cell: str, delimiter: str) -> None:
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


def _cell_shown(cell: str, limit: int = 60) -> str:
    """A CSV cell as messages quote it: its Python literal, cut after ``limit`` characters with
    the cell's length (``'4\\n5,6,7\\nx...' (45064 characters)``), so a huge cell cannot flood an
    ``error:`` line."""
    if len(cell) <= limit:
        return repr(cell)
    return f"{cell[:limit]!r}... ({len(cell)} characters)"


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


_BLANK_SEPARATED = re.compile(r"[^ \t\r\n]+")
"""A cell's runs of non-blanks: those :data:`torchlean._delimiter.WHITESPACE` would read as cells."""


def _header(file: Path, first: Sequence[str], header: bool | None, delimiter: str) -> tuple[bool, str]:
    """(is the first row a header, the note on a guess from an all-numbers row); see the module
    docstring for the rule. The note shows the row's cells separated by ``delimiter`` (a tab as
    ``\\t``)."""
    if header is not None:
        if not isinstance(header, (bool, np.bool_)):
            raise DataError(f"header must be True, False or None, got {header!r}")
        return bool(header), ""
    cells = [c.strip() for c in first]
    by = _delimiter.joiner(delimiter)
    by = by if by.isprintable() else repr(by)[1:-1]
    shown = by.join(cells) if len(cells) <= 6 else f"{by.join(cells[:3])}{by}...{by}{cells[-1]}"
    texts = [c for c in cells if not _is_number(c)]
    if len(texts) == 1 and len(cells) > 1 and texts[0]:  # a header, or a row with a text label
        return True, (
            f"{file}: first row {shown} was read as a header, as its cell {texts[0]!r} is not a number "
            "(its other cells are); pass header=False (CLI: --no-header) if it is a data row with a "
            "text label"
        )
    if texts:
        return True, ""
    if cells == [str(i) for i in range(len(cells))]:
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


def display_name(text: str) -> str:
    """``text`` (a column name or class label) as messages print it: itself when it is a
    non-empty printable string without blanks at its ends, else its Python literal (``''``,
    ``'a\\nb'``), so that an empty name stays visible and a name holding a newline or a control
    character cannot split or garble a one-line ``error:`` (:func:`~torchlean.backend.display.name_shown`)."""
    return name_shown(text)


def _shown(names: Sequence[str], index: int) -> str:
    """Column ``index`` as messages name it: its name when that is non-blank and used once, else
    its index (with the name when there is one: ``2 ('x')``)."""
    name = names[index]
    if name and names.count(name) == 1:
        return name
    return f"{index} ({name!r})" if name else str(index)


# ------------------------------------------------------------------------------------ shipped data


def _loaders() -> dict[str, tuple[Callable[[], Any], Task]]:
    from sklearn import datasets

    return {
        "digits": (datasets.load_digits, "classification"),
        "iris": (datasets.load_iris, "classification"),
        "breast_cancer": (datasets.load_breast_cancer, "classification"),
        "wine": (datasets.load_wine, "classification"),
        "diabetes": (datasets.load_diabetes, "regression"),
    }


def shipped(name: str) -> tuple[Array, Array, tuple[str, ...], tuple[str, ...], Task]:
    """The whole shipped dataset ``name``, unsplit and unscaled: features float64
    ``[n, n_features]``, labels (int64 class ids ``0 .. n_classes - 1``, or float64 targets),
    feature names, class names (``()`` for regression) and task.

    Raises:
        UnknownLabelError: ``name`` is not one of :data:`DATASETS`.
    """
    loaders = _loaders()
    if name not in loaders:
        raise UnknownLabelError(f"unknown dataset {name_shown(name)} (known: {' | '.join(DATASETS)})")
    loader, kind = loaders[name]
    bunch = loader()
    x = np.asarray(bunch.data, dtype=np.float64)
    features = tuple(str(f) for f in bunch.feature_names)
    if kind == "classification":
        return (
            x,
            np.asarray(bunch.target, dtype=np.int64),
            features,
            tuple(str(c) for c in bunch.target_names),
            kind,
        )
    return x, np.asarray(bunch.target, dtype=np.float64), features, (), kind


# ---------------------------------------------------------------------------------------- CSV cells


_FLOAT64 = np.dtype(np.float64)


def _is_number(cell: str) -> bool:
    return DECIMAL_NUMBER.fullmatch(cell.strip()) is not None


def _line(first_line: Lines, r: int) -> int:
    """The file line of cell ``r`` (see :data:`Lines`)."""
    return first_line + r if isinstance(first_line, int) else first_line[r]


def _decimal_comma(cell: str, delimiter: str) -> str | None:
    """``cell`` written with a decimal point (``1.5``) when it is a number written with one decimal
    comma (``1,5``, ``-0,25e3``) and ``delimiter`` is not the comma (under which such a cell was
    quoted on purpose), else ``None``."""
    text = cell.strip()
    if delimiter == _delimiter.COMMA or text.count(",") != 1 or "." in text:
        return None
    pointed = text.replace(",", ".")
    return pointed if _is_number(pointed) else None


MISSING_VALUES = frozenset({"", "NA", "N/A", "n/a", "NULL", "null", "None", "\\N", "?", "#N/A", "-"})
"""Cells that spreadsheets, databases, R and pandas write for a missing value (pandas an empty
cell; MySQL ``\\N``), besides ``nan``, which is read as a number and refused as not finite."""

_MISSING_HINT = " (a missing value? torchlean reads none: remove such rows)"


def _not_a_number(cell: str, delimiter: str, *, missing: bool = True) -> str:
    """``not a number: '1,5'``, with ``(decimal commas are not read: write 1.5)`` for a decimal
    comma (:func:`_decimal_comma`), and, when ``missing``, a missing-value hint for the cells of
    :data:`MISSING_VALUES` (review37 F5)."""
    pointed = _decimal_comma(cell, delimiter)
    if pointed is not None:
        hint = f" (decimal commas are not read: write {pointed})"
    else:
        hint = _MISSING_HINT if missing and cell.strip() in MISSING_VALUES else ""
    return f"not a number: {_cell_shown(cell)}{hint}"


def _number(
    file: str | Path,
    line: int,
    column: str,
    cell: str,
    dtype: np.dtype[Any],
    place: Place = "line",
    *,
    delimiter: str = _delimiter.COMMA,
) -> float:
    """The number in ``cell``, checked to be finite once rounded to ``dtype`` (float32 or
    float64; the round-to-nearest cast, so ``3.4028235e38``, float32's largest value as numpy
    prints it, fits float32).

    Raises:
        DataError: not a number (a decimal comma, read with another ``delimiter`` than the
            comma, says so: ``not a number: '1,5' (decimal commas are not read: write 1.5)``);
            ``nan``/``inf`` spelled out (not a finite number); a number beyond ``dtype``'s range
            (``1e200`` for float32, ``1e400`` for float64), naming the largest magnitude
            ``dtype`` holds.
    """
    where = f"{file}: {place} {line}, column {display_name(column)}"
    if not _is_number(cell):
        raise DataError(f"{where}: {_not_a_number(cell, delimiter)}")
    value = float(cell.strip())
    if math.isnan(value) or (math.isinf(value) and "inf" in cell.lower()):
        hint = _MISSING_HINT if math.isnan(value) else ""
        raise DataError(f"{where}: not a finite number: {_cell_shown(cell)}{hint}")
    with np.errstate(over="ignore"):
        fits = bool(np.isfinite(dtype.type(value)))
    if not fits:
        wider = str(np.finfo(np.float64).max)
        other = "" if dtype == np.float64 else f"; dtype float64 (CLI: --dtype float64) reads up to {wider}"
        raise DataError(
            f"{where}: {_cell_shown(cell.strip())} is outside the {dtype} range "
            f"(accepted: a number of magnitude at most {np.finfo(dtype).max!s} for dtype {dtype}{other})"
        )
    return value


def _label_index(file: Path, names: Sequence[str], column: object, has_header: bool) -> int:
    """The index of the label column: the last one for ``None``, an integer index (Python or
    numpy; negative counts from the end), or a header name used exactly once.

    Raises:
        UnknownLabelError: an index out of range or an unknown name, naming the accepted ones.
        DataError: a name the header repeats (ambiguous), naming its columns.
    """
    if column is None:
        return len(names) - 1
    if is_builtin_or_numpy_int(column):
        index = int(column)
        if -len(names) <= index < len(names):
            return index % len(names)
        raise UnknownLabelError(
            f"unknown label column {index} in {file} "
            f"(known: indices 0..{len(names) - 1} or -{len(names)}..-1)"
        )
    if has_header and column in names:
        where = [i for i, name in enumerate(names) if name == column]
        if len(where) > 1:
            raise DataError(
                f"{file}: label column {column!r} is ambiguous: the header names columns "
                f"{', '.join(map(str, where))} {column!r} (accepted: a name the header uses once, or a "
                f"column index 0..{len(names) - 1})"
            )
        return where[0]
    if isinstance(column, str) and DECIMAL_INTEGER.fullmatch(column.strip()):  # names no column: an index
        return _label_index(file, names, int(column), has_header)
    known = (" | ".join(map(display_name, names)) if has_header
             else f"indices 0..{len(names) - 1} (the file has no header)")
    raise UnknownLabelError(f"unknown label column {name_shown(column)} in {file} (known: {known})")


def _label_name_note(file: Path, names: Sequence[str], column: object, has_header: bool) -> str:
    """The note of :meth:`Table.label_note`: ``column`` is a string of an integer that names a
    header column used once, and as an index it would name another column."""
    if not (isinstance(column, str) and has_header and names.count(column) == 1):
        return ""
    if not DECIMAL_INTEGER.fullmatch(column.strip()):
        return ""
    named, n = names.index(column), len(names)
    index = int(column)
    if not -n <= index < n or index % n == named:
        return ""
    other = index % n
    ways = [f"--label-column {text}" for text in (str(other), str(other - n)) if text not in names]
    if names[other] and names.count(names[other]) == 1:
        ways.append(f"--label-column {shlex.quote(names[other])}")
    cli = f" (CLI: {' or '.join(ways)})" if ways else ""
    return (
        f"{file}: label column {column!r} is a column name and a column index: it was read as the name "
        f"(column {named}), not as index {index} (column {display_name(_shown(names, other))}); names come "
        f"first: for that index pass label_column={index} as an int{cli}"
    )


def _labels(
    file: Path,
    column: str,
    cells: list[str],
    task: Task | None,
    first_line: Lines,
    dtype: np.dtype[Any],
    *,
    delimiter: str = _delimiter.COMMA,
) -> tuple[Array, tuple[str, ...], Task]:
    """The label array, class names and task of the label ``cells`` (as read with ``delimiter``,
    blanks around them kept for messages; ``first_line`` places them in the file, see
    :data:`Lines`).

    Raises:
        UnknownLabelError: an unknown ``task``.
        DataError: with no ``task``, labels that mix numbers and non-blank non-numbers (the
            first non-number named, and how many are numbers: a missing value, or class names?),
            or a label written with a decimal comma under another ``delimiter`` than the comma
            (``not a number: '1,5' (decimal commas are not read: write 1.5)``: not read as a
            class name unless ``task='classification'``); a
            regression label that is not a finite number of ``dtype`` (as a feature
            cell, :func:`_number`), a blank classification label (``line 2, column y: not a
            class label: ''``, as a blank feature cell is ``not a number: ''``), or a single class
            (a classifier needs two; scikit-learn classifiers refuse such a target too).
    """
    labels = [cell.strip() for cell in cells]
    numeric = [_is_number(v) for v in labels]
    if task not in (None, "classification", "regression"):
        raise UnknownLabelError(f"unknown task {name_shown(task)} (known: classification | regression)")
    # the task is inferred from the non-blank labels; a blank one is refused below, by either task
    filled = [r for r, v in enumerate(labels) if v]
    text = [r for r in filled if not numeric[r]]
    if task is None and text and len(text) < len(filled):  # a quantity with missing values, or classes?
        r, count = text[0], len(filled) - len(text)
        whole = all(_integral(labels[i]) for i in filled if numeric[i])
        way_out = (
            "; pass task='classification' (CLI: --task classification) to read every label as a class "
            "name" if whole else
            " (the numbers are not all whole: a quantity, whose rows without one cannot be trained on)"
        )
        raise DataError(
            f"{file}: line {_line(first_line, r)}, column {display_name(column)}: "
            f"{_not_a_number(cells[r], delimiter, missing=False)}, but {count} of the {len(labels)} labels "
            f"are numbers: torchlean reads no missing values (remove such rows){way_out}"
        )
    comma = next((r for r in text if _decimal_comma(labels[r], delimiter) is not None), None)
    if task is None and comma is not None:  # a quantity written with decimal commas, or classes?
        raise DataError(
            f"{file}: line {_line(first_line, comma)}, column {display_name(column)}: "
            f"{_not_a_number(cells[comma], delimiter)}: a quantity written with decimal commas? write its "
            "numbers with points (or, if the labels are class names, pass task='classification', CLI: --task "
            "classification)"
        )
    inferred = task is None and not text and not all(_integral(labels[r]) for r in filled)
    if task == "regression" or inferred:
        targets_read = targets(file, column, cells, dtype, first_line=first_line, delimiter=delimiter)
        return targets_read, (), "regression"
    blank = next((r for r, v in enumerate(labels) if not v), None)
    if blank is not None:
        raise DataError(
            f"{file}: line {_line(first_line, blank)}, column {display_name(column)}: not a class label: "
            f"{cells[blank]!r} "
            "(accepted: a number or a non-blank name)"
        )
    # numbers name their value: 1, 1.0, 01 and +1 are one class (named 1), also among names (the
    # numbers first, by value, then the names in sorted order)
    values = [_exact(v) for v in labels]
    spelling: dict[Decimal, str] = {}
    for v, value in zip(labels, values, strict=True):
        if value is not None:
            spelling.setdefault(value, v)
    by_value = sorted(spelling)
    names = sorted({v for v, value in zip(labels, values, strict=True) if value is None})
    classes = (*(_class_name(spelling[value], value) for value in by_value), *names)
    keys: list[Decimal | str] = [*by_value, *names]
    position = {key: i for i, key in enumerate(keys)}
    ids = [position[v if value is None else value] for v, value in zip(labels, values, strict=True)]
    if len(classes) == 1:
        raise DataError(
            f"{file}: label column {display_name(column)}: all {len(labels)} labels are {classes[0]!r}, "
            "a single class "
            "(accepted: at least two classes for classification)"
        )
    return np.asarray(ids, dtype=np.int64), classes, "classification"


def targets(
    source: str | Path,
    column: str,
    cells: Sequence[str],
    dtype: npt.DTypeLike,
    *,
    first_line: Lines = 1,
    place: Place = "line",
    delimiter: str = _delimiter.COMMA,
) -> Array:
    """Regression targets: each label cell as a float64 number ``[len(cells)]``, checked to be
    finite once rounded to ``dtype`` (float32 or float64), as training reads its labels. Messages
    name ``source``, the file line (``first_line``: the line of ``cells[0]``, or of each cell;
    ``place="row"``: rows of a shipped dataset instead) and ``column``; ``delimiter`` is the one
    the cells were read with (a decimal comma under another one is named as such).

    Raises:
        DataError: a cell that is not a number (``not a number: '1,5' (decimal commas are not
            read: write 1.5)`` under another ``delimiter`` than the comma), not finite, or beyond
            ``dtype``'s range; a bad ``dtype``.
    """
    target = _float_dtype(dtype)
    values = [
        _number(source, _line(first_line, r), column, cell, target, place, delimiter=delimiter)
        for r, cell in enumerate(cells)
    ]
    return np.asarray(values, dtype=np.float64)


def class_ids(
    source: str | Path,
    column: str,
    cells: Sequence[str],
    classes: Sequence[str],
    *,
    first_line: Lines = 1,
    place: Place = "line",
) -> Array:
    """The position in ``classes`` of each label cell: int64 ``[len(cells)]``. A cell names a
    class when it equals it once blanks around it are stripped; a numeric cell names the numeric
    class of equal value (``3.0`` is class ``3``), as training maps numeric labels by value (a
    checkpoint whose classes hold one value twice, as ``0`` and ``0.0`` were before numbers kept
    their value among class names, is matched by text). Messages name ``source``, the file line
    (``first_line``: the line of ``cells[0]``, or of each cell; ``place="row"``: rows of a shipped
    dataset instead) and ``column``.

    Raises:
        UnknownLabelError: the first cell that names no class, naming the known classes.
    """
    exact = [_exact(c) for c in classes]
    numbers = [value for value in exact if value is not None]
    by_value = len(set(numbers)) == len(numbers)
    index: dict[str | Decimal, int] = {
        (value if by_value and value is not None else c): i
        for i, (c, value) in enumerate(zip(classes, exact, strict=True))
    }
    ids = np.empty(len(cells), dtype=np.int64)
    for r, cell in enumerate(cells):
        value = cell.strip()
        number = _exact(value) if by_value else None
        found = index.get(value if number is None else number)
        if found is None:
            raise UnknownLabelError(
                f"{source}: {place} {_line(first_line, r)}, column {display_name(column)}: "
                f"unknown class label {_cell_shown(value)} "
                f"(known: {' | '.join(map(display_name, classes))})"
            )
        ids[r] = found
    return ids


def _integral(cell: str) -> bool:
    value = float(cell.strip())
    return math.isfinite(value) and value == int(value)


_LABEL_EXPONENT_LIMIT = 400
"""Numeric labels whose decimal exponent is beyond this (``1e999``; float64 ends near 1e308) are
class names, not numbers: their exact value is not usable, and making it exact is unbounded work
(``Fraction("0e-999999999")`` computes ``10**999999999``)."""


def _exact(cell: str) -> Decimal | None:
    """The exact value of a finite number cell (``1e3``, ``+01``, ``0.10``, ``0e-999999999``),
    else ``None`` (text, ``nan``/``inf``, or an exponent beyond :data:`_LABEL_EXPONENT_LIMIT`)."""
    if not _is_number(cell):
        return None
    value = Decimal(cell.strip())  # reads every spelling DECIMAL_NUMBER accepts
    if not value.is_finite():
        return None
    if value.is_zero():
        return Decimal(0)
    return value if abs(value.adjusted()) <= _LABEL_EXPONENT_LIMIT else None


def _class_name(cell: str, value: Decimal) -> str:
    """The name of a numeric class: the integer (``1.0``, ``+1``, ``1e0`` → ``1``) or the label's
    first spelling in the file."""
    return str(int(value)) if value == value.to_integral_value() else cell


# ------------------------------------------------------------------------------- split and scaling


def _float_dtype(dtype: npt.DTypeLike) -> np.dtype[Any]:
    found = float_dtype(dtype)
    if found is None:
        raise DataError(f"dtype must be float32 or float64, got {dtype_shown(dtype)}")
    return found


def split_rows(
    y: Array, task: Task, seed: int, test_fraction: float = TEST_FRACTION, *, source: str = "the data"
) -> tuple[Array, Array]:
    """The train and test row indices (int64, each in the order of the split) of :func:`load`'s
    split of ``n = len(y)`` samples: scikit-learn's ``train_test_split`` with ``random_state=seed``,
    shuffled, ``ceil(test_fraction * n)`` test rows, stratified by class for classification when
    every class of ``y`` (int64 class ids) has at least two samples and each split can hold a
    sample of every class (else not stratified: :func:`split_note` says why). ``torchlean predict
    --split`` repeats the split of ``torchlean train``
    (same rows in the same order, same seed) with it.

    Raises:
        DataError: ``seed`` not an integer in ``[0, 2**32)``; ``test_fraction`` not a real number
            in ``(0, 1)``; :class:`EmptySplitError` (a DataError): a split of ``source`` leaving no
            train or test sample.
    """
    from sklearn.model_selection import train_test_split

    if not is_builtin_or_numpy_int(seed) or not 0 <= int(seed) < 2**32:
        raise DataError(
            f"seed must be an integer in [0, 2**32) (scikit-learn's train_test_split seeds a numpy "
            f"RandomState), got {shown(seed)}"
        )
    _check_fraction(test_fraction, "test_fraction")
    n = len(y)
    n_test = math.ceil(float(test_fraction) * n)
    if n_test < 1 or n - n_test < 1:
        raise EmptySplitError(
            f"{source}: a test fraction of {test_fraction} of {n} samples leaves an empty split",
            samples=n, test_fraction=float(test_fraction), test_rows=n_test,
        )
    stratify = y if task == "classification" and _unstratified_reason(y, n_test) is None else None
    train, test = train_test_split(
        np.arange(n, dtype=np.int64), test_size=float(test_fraction), random_state=int(seed), shuffle=True,
        stratify=stratify,
    )
    return np.asarray(train, dtype=np.int64), np.asarray(test, dtype=np.int64)


def _check_fraction(fraction: object, what: str) -> None:
    """Refuse a ``test_fraction`` or ``val_fraction`` that is not a real number in ``(0, 1)``.

    Raises:
        DataError: ``test_fraction must be a real number (int or float) in (0, 1), got 'a'``;
            ``val_fraction must be in (0, 1), got 1.5``.
    """
    if isinstance(fraction, bool | np.bool_) or not isinstance(fraction, numbers.Real):
        raise DataError(f"{what} must be a real number (int or float) in (0, 1), got {shown(fraction)}")
    if not 0 < cast(float, fraction) < 1:  # an int of 400 digits too, which float() refuses
        raise DataError(f"{what} must be in (0, 1), got {shown(fraction)}")


def validation_rows(
    y_train: Array,
    task: Task,
    seed: int,
    val_fraction: float,
    *,
    source: str = "the data",
    classes: Sequence[str] = (),
) -> tuple[Array, Array]:
    """The positions (int64, into the train split, each in the order of the split) of the part
    trained on and of the validation part that :func:`load`'s ``val_fraction`` holds out of the
    train split whose labels are ``y_train`` (int64 class ids for classification):
    scikit-learn's ``train_test_split(np.arange(n), test_size=val_fraction, random_state=seed,
    shuffle=True, stratify=y_train)`` (``stratify=None`` for regression), so
    ``ceil(val_fraction * n)`` validation rows. A classification split must leave every class of
    the train split at least one sample in each part (the validation loss and accuracy then
    cover every class the model is trained on); ``classes`` name the class ids in messages.

    Raises:
        DataError: ``val_fraction`` not a real number in ``(0, 1)``; a part left empty; for
            classification, a class with fewer than 2 train-split samples, a part too small to
            hold one sample of each class, or a class the stratified split leaves out of a part
            (scikit-learn allots each class a whole number of samples, so a rare class can get
            none of a small part): each names ``source``, the class and what is accepted.
    """
    from sklearn.model_selection import train_test_split

    _check_fraction(val_fraction, "val_fraction")
    n = len(y_train)
    n_val = math.ceil(float(val_fraction) * n)
    parts = f"{n_val} validation and {n - n_val} to train on"
    if n_val < 1 or n - n_val < 1:
        raise DataError(
            f"{source}: a validation fraction of {val_fraction} of the {n} train-split samples leaves an "
            f"empty part ({parts}; accepted: a fraction that leaves at least one sample in each)"
        )
    stratify = None
    if task == "classification":
        present, counts = np.unique(y_train, return_counts=True)

        def name(class_id: object) -> str:
            index = int(class_id)  # type: ignore[call-overload]
            return repr(classes[index]) if index < len(classes) else str(index)

        if counts.min() < 2:
            rare = present[counts < 2]
            raise DataError(
                f"{source}: class {name(rare[0])} has 1 sample in the train split, but a validation split "
                "needs 2 of each class, one to train on and one to validate (accepted: at least 2 samples "
                "of every class in the train split; add samples or drop the validation split)"
            )
        if min(n_val, n - n_val) < len(present):
            raise DataError(
                f"{source}: a validation fraction of {val_fraction} of the {n} train-split samples gives "
                f"{parts}, too few for one sample of each of the {len(present)} classes in both parts "
                "(accepted: a fraction that leaves each part at least one sample of every class)"
            )
        stratify = y_train
    fit, val = train_test_split(
        np.arange(n, dtype=np.int64), test_size=float(val_fraction), random_state=int(seed), shuffle=True,
        stratify=stratify,
    )
    fit, val = np.asarray(fit, dtype=np.int64), np.asarray(val, dtype=np.int64)
    if stratify is not None:
        for part, rows in (("validation part", val), ("part trained on", fit)):
            missing = np.setdiff1d(present, y_train[rows])
            if missing.size:
                count = int(counts[np.searchsorted(present, missing[0])])
                raise DataError(
                    f"{source}: the stratified validation split (fraction {val_fraction}, seed {seed}) "
                    f"leaves class {name(missing[0])} ({count} train-split samples) no sample in the {part} "
                    "(accepted: a split with every class in both parts; try a larger fraction or another "
                    "seed)"
                )
    return fit, val


def _unstratified_reason(y: Array, n_test: int) -> str | None:
    """Why class ids ``y`` (int64) cannot be split with ``n_test`` test rows stratified by class,
    or None: a class with fewer than two samples, or a split too small to hold every class."""
    counts = np.bincount(y)
    if counts.min() < 2:
        few = int((counts < 2).sum())
        return f"{few} of {len(counts)} classes {'has' if few == 1 else 'have'} fewer than 2 samples"
    n_train = len(y) - n_test
    if min(n_test, n_train) < len(counts):
        return f"a split of {n_train} train and {n_test} test rows cannot hold each of {len(counts)} classes"
    return None


def split_note(y: Array, task: Task, test_fraction: float = TEST_FRACTION) -> str:
    """The note ``torchlean train`` prints when its split of labels ``y`` (int64 class ids for
    classification) is not stratified by class (see :func:`split_rows`), else ``""``. The
    arguments must be valid for :func:`split_rows`."""
    if task != "classification":
        return ""
    reason = _unstratified_reason(y, math.ceil(float(test_fraction) * len(y)))
    if reason is None:
        return ""
    return (
        f"the train/test split is not stratified by class: {reason} (a stratified split needs 2 samples of "
        "each class and room for each class in both splits); some classes may be missing from a split"
    )


def _split(
    name: str,
    x: Array,
    y: Array,
    kind: Task,
    features: tuple[str, ...],
    classes: tuple[str, ...],
    seed: int,
    test_fraction: float,
    dtype: np.dtype[Any],
    *,
    source: str | None = None,
    columns: tuple[str, ...] | None = None,
    label: str = "target",
    val_fraction: float | None = None,
) -> Dataset:
    """Split ``x`` ``[n, n_features]`` (float64) and ``y`` ``[n]`` and standardise the features;
    with ``val_fraction``, hold a validation part out of the train split
    (:func:`validation_rows`) and standardise with the rest's statistics.

    Messages name the data ``source`` (default ``name``; a CSV file's path as given), the feature
    ``columns`` as messages show them (default ``features``) and the ``label`` column.

    Raises:
        DataError: a bad ``seed`` or ``test_fraction``; a split leaving no train or test sample;
            a classification train split holding a single class; a feature whose train-split mean
            or standard deviation is not finite in float64, or whose standardised values are not
            finite in ``dtype``; a regression target whose train-split mean or standard deviation
            is not finite in float64 (``torchlean train`` standardises it); a bad
            ``val_fraction`` or a validation split it cannot make.
    """
    from sklearn.preprocessing import StandardScaler

    source = name if source is None else source
    columns = features if columns is None else columns
    train_rows, test_rows = split_rows(y, kind, seed, test_fraction, source=source)
    n = len(y)
    if kind == "classification" and len(np.unique(y[train_rows])) < 2:
        raise DataError(
            f"{source}: the train split holds only class {classes[int(y[train_rows][0])]!r}: the other "
            f"classes of the {n} samples fell in the test split (accepted: at least two classes in the train "
            "split; "
            "add samples of each class or change the seed)"
        )
    val_rows = None
    if val_fraction is not None:
        fit, val = validation_rows(y[train_rows], kind, seed, val_fraction, source=source, classes=classes)
        train_rows, val_rows = train_rows[fit], train_rows[val]
    x_train, x_test, y_train, y_test = x[train_rows], x[test_rows], y[train_rows], y[test_rows]
    # Overflow is detected from the results (a non-finite mean, deviation or value), named by column;
    # numpy's RuntimeWarnings on the way there would only repeat it without the column.
    with np.errstate(over="ignore", invalid="ignore"):
        scaler = StandardScaler().fit(x_train)
        mean = np.asarray(scaler.mean_, dtype=np.float64)
        scale = np.asarray(scaler.scale_, dtype=np.float64)
        # An infinite variance makes scikit-learn's near-constant test pass (its bound overflows
        # too), so scale_ comes out 1: test the variance itself.
        std = np.sqrt(np.asarray(scaler.var_, dtype=np.float64))
        _check_statistics(source, columns, mean, std, "feature column")
        if kind == "regression":
            target = np.asarray(y_train, dtype=np.float64)
            _check_statistics(
                source, (label,), np.array([np.mean(target)]), np.array([np.std(target)]), "label column"
            )
        standardised_train = np.asarray(scaler.transform(x_train), dtype=dtype)
        standardised_test = np.asarray(scaler.transform(x_test), dtype=dtype)
        standardised_val = (
            None if val_rows is None else np.asarray(scaler.transform(x[val_rows]), dtype=dtype)
        )
    parts = [("train", x_train, standardised_train), ("test", x_test, standardised_test)]
    if val_rows is not None and standardised_val is not None:
        parts.insert(1, ("validation", x[val_rows], standardised_val))
    for split, raw, values in parts:
        bad = ~np.isfinite(values)
        if bad.any():
            i, j = (int(k) for k in np.argwhere(bad)[0])
            raise DataError(
                f"{source}: feature column {display_name(columns[j])}: the {split}-split value "
                f"{raw[i, j]:.6g} "
                f"standardises to (x - mean) / std beyond the {dtype} range, with the train split's mean "
                f"{mean[j]:.6g} and standard deviation {scale[j]:.6g} (accepted: |x - mean| / std at most "
                f"{np.finfo(dtype).max!s})"
            )
    label_dtype = np.dtype(np.int64) if kind == "classification" else dtype
    return Dataset(
        name=name,
        task=kind,
        x_train=standardised_train,
        y_train=np.asarray(y_train, dtype=label_dtype),
        x_test=standardised_test,
        y_test=np.asarray(y_test, dtype=label_dtype),
        n_classes=len(classes) if kind == "classification" else 0,
        feature_names=features,
        class_names=classes,
        feature_mean=mean,
        feature_scale=scale,
        label_name=label,
        split_note=split_note(y, kind, test_fraction),
        x_val=standardised_val,
        y_val=None if val_rows is None else np.asarray(y[val_rows], dtype=label_dtype),
    )


def _check_statistics(source: str, columns: Sequence[str], mean: Array, std: Array, what: str) -> None:
    """Refuse the first column whose train-split ``mean`` or ``std`` (float64, one per column)
    is not finite: standardising it would give NaN or infinity.

    Raises:
        DataError: naming ``source``, the column and both statistics.
    """
    bad = ~(np.isfinite(mean) & np.isfinite(std))
    if bad.any():
        j = int(np.argmax(bad))
        raise DataError(
            f"{source}: {what} {display_name(columns[j])}: standardising it overflows float64: the train "
            "split's mean "
            f"is {mean[j]:.6g} and its standard deviation {std[j]:.6g} (accepted: values whose mean and "
            "standard deviation are finite in float64; rescale the column)"
        )
