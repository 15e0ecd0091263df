"""Real datasets for training: the ones shipped with scikit-learn, and CSV files. No network.

``load(name_or_path, seed=..., test_fraction=..., dtype=...)`` returns a :class:`Dataset` with a
seeded train/test split (scikit-learn ``train_test_split``; stratified by class for classification
whenever every class has at least two samples and both splits can hold every class) and features
standardised with statistics fitted on the **train split only** (scikit-learn ``StandardScaler``; a
zero-variance feature gets scale 1, so it becomes 0 instead of NaN; one whose variance
scikit-learn's near-constant test takes as 0 for the size of its mean gets scale 1 too, and becomes
x - mean).
With ``val_fraction=F`` a validation part is held out of the train split (:func:`validation_rows`:
``train_test_split`` of the train split's rows with the same seed, stratified by class for
classification) and the statistics are fitted on the rest of the train split only, the part trained
on, so that nothing of the validation (or test) rows leaks into the features the model is trained
on.

Shipped datasets: :data:`DATASETS` (``digits`` by default; :mod:`torchlean._shipped` lists their
sizes and tasks). CSV files: one sample per row; the label column is chosen by name or index
(default: the last column). The rules of reading a file are in the docstrings of the modules that
apply them: :mod:`torchlean._csv` for the layout (the header rule, column names, the delimiter,
Excel's ``sep=`` line, comment lines, a trailing delimiter, R's row names, pandas' index column,
each guess reported in :attr:`Dataset.header_note` or :attr:`Dataset.notes`), :mod:`torchlean._cells`
for the cells (which are numbers, decimal commas, the range of ``dtype``) and
:mod:`torchlean._labels` for the label column (a ``label_column`` string, class names and ids, the
task inferred, missing values). Features are standardised in float64, so a column beyond float32's
range loads under float32 as long as each feature's (each regression target's) train-split mean and
standard deviation are finite in float64 and the standardised features fit ``dtype`` (refused by
column otherwise).

The reader's pieces are public for data that is not split or rescaled (``torchlean predict``
applies a checkpoint's saved statistics): :func:`locate` (shipped name or CSV path),
:func:`shipped` (a whole shipped dataset), :func:`read_csv` (a :class:`Table` of cells, whose
``columns`` converts the features), :func:`class_ids` and :func:`targets` (label cells against
known classes, or as regression targets). This module re-exports them, with the splits
(:func:`split_rows`, :func:`validation_rows`, :func:`split_note`, :func:`class_coverage_note`:
:mod:`torchlean._splits`), :func:`validation_target_overflow` (the regression validation targets a
dtype cannot hold standardised) and
:class:`DataError` and :class:`EmptySplitError` (:mod:`torchlean._data_errors`).
"""

from __future__ import annotations

import dataclasses
import math
import os
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from torchlean import _delimiter
from torchlean._cells import MISSING_VALUES as MISSING_VALUES
from torchlean._cells import Lines as Lines
from torchlean._cells import Place, _float_dtype, _is_number, display_name
from torchlean._csv import STDIN, Table, _name, read_csv, reading
from torchlean._data_errors import (
    FLOAT64_HOLDS,
    FLOAT64_NEITHER,
    FLOAT64_PARTLY,
    ClassSplitError,
    DataError,
    DataMemoryError,
    EmptySplitError,
)
from torchlean._labels import (
    Task,
    _labels,
    blank_spellings_note,
    class_ids,
    class_names,
    nfc_spellings_note,
    targets,
)
from torchlean._shipped import DATASETS, shipped
from torchlean._splits import (
    TEST_FRACTION,
    class_coverage_note,
    split_note,
    split_rows,
    validation_rows,
)
from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError
from torchlean.batches import BatchError, minibatches

__all__ = [
    "DATASETS",
    "STDIN",
    "TEST_FRACTION",
    "BatchError",
    "ClassSplitError",
    "DataError",
    "DataMemoryError",
    "Dataset",
    "EmptySplitError",
    "Place",
    "Table",
    "TargetOverflow",
    "Task",
    "class_coverage_note",
    "class_ids",
    "class_names",
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
    "validation_target_overflow",
]

Array: TypeAlias = npt.NDArray[Any]


@dataclass(frozen=True, slots=True, eq=False)
class Dataset:
    """A train/test split ready for training.

    ``x_train`` ``[n_train, n_features]`` and ``x_test`` ``[n_test, n_features]`` in ``dtype``,
    standardised with the train statistics ``feature_mean`` / ``feature_scale`` (float64,
    ``[n_features]``). Labels: int64 class ids in ``0 .. n_classes - 1`` for classification,
    float64 targets for regression (``n_classes == 0``, ``class_names == ()``). ``label_name``
    is the label column as messages name it (``target`` for shipped datasets).
    ``header_note`` says how a CSV header was guessed from an all-numbers first row (read as a
    header or as data, and how to override) or from a first row with one text cell among numbers
    (read as a header), or that ``header=True`` read an all-numbers first row (one that looks like
    data, not the column positions ``0,1,...``) as the header; it is empty for shipped datasets,
    when ``header`` was given otherwise, and when the first row had several non-numeric cells.
    ``split_note`` says when a classification split could not be stratified by class
    (:func:`split_note`), and which classes the split left without a train row (a model trained on
    it has no example of them) or without a test row (the test metric does not measure them), with
    their sample counts (:func:`class_coverage_note`), the two
    joined by ``; ``, else is empty. ``notes`` are the other notes on how a CSV file was read, one
    line each, in this order:
    Excel's ``sep=`` first line skipped (naming the delimiter), numpy's ``savetxt`` header ``# a b y``
    read as the header (under ``delimiter="whitespace"``), an unnamed empty last column ignored
    (a trailing delimiter), R's row names left out (a header one cell shorter than the rows), a
    ``label_column`` string read as a column name that is also a column index, an unnamed first
    column of distinct integers (pandas' ``to_csv`` index) left out of the features, feature columns
    without a name of their own (:meth:`Table.unnamed_features_note`) or two named alike
    (:meth:`Table.repeated_features_note`), two class labels
    made one by the blanks around them (``' x'`` and ``'x'``), the task classification inferred
    from over 10 whole-number labels too few of each to stratify (``task='regression'`` exists),
    the constant columns (:attr:`constant_note`); ``()`` for shipped
    datasets and when none applies (:attr:`Table.notes`, :meth:`Table.label_note`,
    :meth:`Table.index_note`). ``torchlean train`` prints each as a ``note:`` line.

    With :func:`load`'s ``val_fraction``, ``x_val`` ``[n_val, n_features]`` and ``y_val``
    ``[n_val]`` (same dtypes) are the validation part held out of the train split, and
    ``x_train``/``y_train`` are the rest of it (the part trained on), whose statistics standardise
    all three parts (``feature_mean``/``feature_scale``, and :meth:`target_statistics`); without
    it both are ``None``.

    Regression: ``y_train``, ``y_test`` (and ``y_val``) are the targets as read, float64 whatever
    ``dtype`` is, as the features are standardised in float64 before they are cast: their
    statistics (:meth:`target_statistics`) and :meth:`standardised_targets` come from these values,
    not from values rounded to ``dtype`` (a float32 target near 1e8 is rounded to a multiple of 8:
    review86 F1), and ``torchlean train`` measures ``test_mse`` (``val_mse``) against them.

    ``constant_note`` names the feature columns (and a regression target) that are constant in
    the part trained on (their values all equal: values that differ by so little that float64
    computes their deviation as 0, or from a subnormal variance more than 0.1% off, which happens
    only below about 1.49e-154, are refused by :func:`load`, asking to rescale the column, not
    called constant: review115 F3, review119 F3): they carry no
    information, and are scaled with scale 1 (as scikit-learn's
    ``StandardScaler`` scales a zero-variance column), so they standardise to 0 up to the rounding
    of their mean (scikit-learn's mean of a constant column of large values, 12345678901.234567,
    is a few ulps off it, so they standardise to about -3e-5: review91 F4); ``""`` when none
    is. For a CSV file it is one of ``notes`` too (shipped datasets have such columns: digits'
    blank pixels). It names too, in a clause of its own with their deviations and the bound of
    their standardised values, the feature columns whose deviation is not 0 but which
    ``StandardScaler`` scales with 1 all the same, its near-constant test taking their variance as
    0 for the size of their mean (review222 F4, review225 F2).

    A CSV file's read settings as resolved: ``has_header`` (whether its first row was read as the
    header, given or guessed) and ``delimiter`` (the cells' separator, ``","``, ``"\\t"``, ...,
    or ``"whitespace"``); both ``None`` for shipped datasets.

    The split as :func:`load` made it: ``seed`` (the ``seed`` of ``train_test_split``, an int in
    ``[0, 2**32)``), ``test_fraction`` and ``val_fraction`` (``None`` without a validation part).
    A checkpoint records the first two (``Checkpoint(split_seed=ds.seed,
    test_fraction=ds.test_fraction)``) for ``torchlean predict --split``;
    :func:`torchlean.provenance.data_sha256` digests the split data.
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
    has_header: bool | None = None
    delimiter: str | None = None
    constant_note: str = ""
    seed: int = 0
    test_fraction: float = TEST_FRACTION
    val_fraction: float | None = None

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
            DataError: a classification dataset, or one loaded without ``val_fraction``; or a
                target whose standardised value, or the mean of their squares (the scale of the
                validation loss), is beyond ``dtype``, where the validation loss would be
                infinite (the CLI refuses it as ``torchlean train --val-fraction`` does; review92
                F4), naming the target, the statistics and ``dtype=np.float64`` where float64
                holds them.
        """
        mean, scale = self.target_statistics()
        if self.y_val is None:
            raise DataError(f"{self.name}: no validation part (load it with val_fraction=...)")
        dtype = self.x_train.dtype
        overflow = validation_target_overflow(self.y_val, mean, scale, dtype)
        if overflow is not None:
            way = ("load with dtype=np.float64, or" if overflow.wider
                   else "rescale the target (it overflows float64 too), or load")
            raise DataError(
                f"{self.name}: {overflow.subject('validation part', dtype)} with the train part's mean "
                f"{mean:.6g} and scale {scale:.6g}, so the validation loss would be infinite (accepted: "
                "validation targets whose (y - mean) / scale, and the mean of its square, fit "
                f"{dtype}; {way} without val_fraction)"
            )
        return self._standardised(self.y_val, mean, scale)

    def _standardised(self, y: Array, mean: float, scale: float) -> Array:
        # a test or validation target beyond the dtype's range standardised is +-inf, as torch's
        # cast gives it; the metric on the float64 targets says so, not a RuntimeWarning (review90 F7)
        with np.errstate(over="ignore"):
            return ((y.astype(np.float64) - mean) / scale).astype(self.x_train.dtype)


@dataclass(frozen=True, slots=True)
class TargetOverflow:
    """Regression validation targets a dtype cannot hold standardised
    (:func:`validation_target_overflow`): ``target``, the one whose standardised value is largest
    in magnitude; ``mean_square``, the mean of the squared standardised values when each of them
    fits the dtype but that mean does not (None when a value itself does not fit); ``wider``,
    whether float64 holds them all."""

    target: float
    mean_square: float | None
    wider: bool

    def subject(self, part: str, dtype: npt.DTypeLike) -> str:
        """What is beyond ``dtype``, for a message on the validation ``part`` (``validation part``,
        ``validation split``): the target's standardised value, or the mean of their squares
        (review95 L6)."""
        if self.mean_square is None:
            return f"the {part}'s target {self.target:.6g} standardises beyond the {np.dtype(dtype)} range"
        return (f"the mean of the squares of the {part}'s standardised targets, {self.mean_square:.6g}, is "
                f"beyond the {np.dtype(dtype)} range")


def validation_target_overflow(
    y: Array, mean: float, scale: float, dtype: npt.DTypeLike
) -> TargetOverflow | None:
    """Whether regression validation targets ``y`` (as read) standardise, ``(y - mean) / scale``
    in float64, beyond ``dtype``'s range, or the mean of their squares does (the validation loss
    would be infinite; review91 F2): ``None`` when both fit, else a :class:`TargetOverflow`."""
    with np.errstate(over="ignore", invalid="ignore"):
        z = (np.asarray(y, dtype=np.float64) - mean) / scale
        mean_square = float(np.sum(np.square(z / len(z)))) * len(z)  # no overflow before the division
    largest = float(np.finfo(dtype).max)
    values_fit = bool(np.all(np.abs(z) <= largest))
    if values_fit and mean_square <= largest:
        return None
    value = float(np.asarray(y)[int(np.argmax(np.abs(z)))])
    wider = np.dtype(dtype) != np.float64 and mean_square <= float(np.finfo(np.float64).max)
    return TargetOverflow(value, mean_square if values_fit else None, wider)


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
    docstring and :mod:`torchlean._csv`'s); for a shipped dataset they must be None. ``delimiter``
    ``None`` is the comma (:func:`read_csv` has the delimiters accepted).
    ``label_column`` is a column name, else an integer index (Python or numpy, or a string of one
    such as ``"2"`` that names no column; negative counts from the end; a string that names a
    column and is another column's index is the name, with a note in :attr:`Dataset.notes`);
    ``header`` is ``None``, a ``bool`` or a ``numpy.bool_``. ``seed`` is an integer (Python or
    numpy; not a bool) in ``[0, 2**32)``: scikit-learn's ``train_test_split`` seeds a numpy
    ``RandomState``, which takes no larger seed.

    Returns a :class:`Dataset` (shapes and dtypes there): features in ``dtype``, class ids int64,
    regression targets float64 (review136 F7). The split and scaling are scikit-learn's, so they match
    ``train_test_split(..., random_state=seed, stratify=...)`` and ``StandardScaler`` bit for bit.
    ``val_fraction`` (``None``, the default, or a real number in ``(0, 1)``) holds that fraction
    of the train split out as :attr:`Dataset.x_val`/``y_val`` (:func:`validation_rows`), the
    statistics then fitted on the rest (Keras' ``validation_split`` takes the last rows unshuffled
    instead; this is scikit-learn's seeded, stratified split applied once more).

    Raises:
        UnknownLabelError: an unknown name that is not an existing file, naming the accepted
            datasets; an unknown CSV label column, naming the columns; an unknown ``task``.
        DataError: ``name_or_path`` not a ``str`` or ``os.PathLike`` (naming the accepted
            datasets) or empty, missing file (or a directory), a path that cannot be looked up (a
            loop of symbolic links: ``PATH: cannot read the file: <reason>``), a file that is not
            UTF-8, has no rows or no data rows, a row whose cells are all blank (``,,``, line named;
            an empty line is skipped), a row whose cell count differs, a file read as one column
            (with a hint when another common separator than ``delimiter`` splits it), non-numeric or
            non-finite feature cell (a decimal comma named as such), a regression label beyond
            float64's range or a blank label cell (line and column named), labels mixing numbers
            and non-numbers, or written with decimal commas, without ``task`` (the first
            non-number named), a first line starting with ``#`` (a comment) or Excel's ``sep=``
            line naming a separator other than ``delimiter``, a single class, a label column and
            pandas' index column without another column,
            a ``label_column`` name the header repeats (naming its columns), bad ``header``,
            ``seed``, ``test_fraction`` (a real number, not a bool or a string, in ``(0, 1)``) or
            ``dtype``, a split that leaves no train or test sample or a single class to train on,
            a column whose standardisation overflows, or whose values are not all equal but
            whose standard deviation underflows (0, or a subnormal variance's more than 0.1% off,
            below about 1.49e-154) (column named); ``label_column``,
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
    file path: an ``os.PathLike`` such as ``pathlib.Path("iris")``, which names a file even when
    it spells a dataset's name (review136 F3: the shipped data silently replaced the file), or a
    string that has a file extension (``.csv``, ``.tsv``, ``.txt``, ...), holds a path separator
    or names an existing file or symbolic link, so a missing ``data.tsv`` is "not found", not an unknown
    name, and a loop of links is named as such).

    Raises:
        DataError: not a ``str`` or ``os.PathLike``, or empty (naming the accepted datasets).
        UnknownLabelError: neither a shipped dataset nor a CSV path, naming the shipped datasets.
    """
    accepted = f"a shipped dataset name ({' | '.join(DATASETS)}) or a path to a CSV file"
    name = _name(name_or_path, "dataset", "dataset name", accepted)
    if isinstance(name_or_path, os.PathLike):
        return name, False
    if name in DATASETS:
        return name, True
    # lexists: a symbolic link that names no file (a loop) is a path too; False for a name too long
    if os.path.splitext(name)[1] or os.sep in name or os.path.lexists(name):
        return name, False
    raise UnknownLabelError(
        f"unknown dataset {name_shown(name)} (known: {' | '.join(DATASETS)}, or a path to a CSV file)"
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
    same arguments, result and errors; :mod:`torchlean._csv`'s docstring gives the CSV rules,
    :func:`read_csv` the ``delimiter`` accepted.

    Raises:
        DataError, UnknownLabelError: as :func:`load` lists them for a CSV file.
        DataMemoryError: the memory ran out while the file was read or split (naming the file
            and its size); also a ``MemoryError``.
    """
    with reading(path):  # the split's arrays too
        return _load_csv(
            path, label_column, header, task, seed, test_fraction, dtype, val_fraction, delimiter
        )


def _load_csv(
    path: str | os.PathLike[str],
    label_column: str | int | None,
    header: bool | None,
    task: Task | None,
    seed: int,
    test_fraction: float,
    dtype: npt.DTypeLike,
    val_fraction: float | None,
    delimiter: str,
) -> Dataset:
    """:func:`load_csv`'s work, whose out-of-memory error it names."""
    target = _float_dtype(dtype)
    table = read_csv(path, header=header, delimiter=delimiter)
    if len(table.names) < 2:
        raise DataError(
            f"{table.shown_file}: expected a label column and at least one feature column, got "
            f"{len(table.names)}{table.separator_hint}"
        )
    label = table.column(label_column)
    feature_idx = table.feature_indices(label)
    if not feature_idx:  # a label and pandas' index only
        raise DataError(
            f"{table.shown_file}: expected a label column and at least one feature column, got the label "
            f"column {display_name(table.shown(label))} and column 0, pandas' to_csv index of row numbers, "
            "which is not a feature"
        )
    with table.notes_told(label_column):
        x, cells = table.columns(label)
        assert cells is not None  # a label column was asked for
        y, classes, kind = _labels(
            table.shown_file, table.shown(label), cells, task, table.lines, delimiter=table.delimiter
        )
    many_whole = task is None and len(classes) > 10 and all(_is_number(name) for name in classes)
    inferred = (  # often a quantity read as classes
        f"the labels are whole numbers ({len(classes)} distinct) with too few samples of each to "
        "stratify the split, so the task classification was inferred: pass task='regression' (CLI: "
        "--task regression) if they are a quantity"
    )
    try:
        dataset = _split(
            table.file.stem, x, y, kind, tuple(table.names[i] for i in feature_idx), classes, seed,
            test_fraction, target, source=table.shown_file,
            columns=tuple(table.shown(i) for i in feature_idx), label=table.shown(label),
            val_fraction=val_fraction,
        )
    except ClassSplitError as error:  # a validation split short of samples of a class (review90 F5)
        if many_whole and kind == "classification":
            raise ClassSplitError(f"{error}; {inferred}") from None
        raise
    if not (many_whole and split_note(y, kind, test_fraction)):  # not the classes-left-out note alone
        # over 10 whole-number classes, too few samples to stratify; one of notes, which Python
        # callers read, not only a clause of split_note (review89 F7)
        inferred = ""
    merged = "" if kind == "regression" else blank_spellings_note(table.shown_file, table.shown(label), cells)
    composed = "" if kind == "regression" else nfc_spellings_note(table.shown_file, table.shown(label), cells)
    notes = (*table.notes, table.label_note(label_column), table.index_note(label),
             table.unnamed_features_note(label), table.repeated_features_note(label), merged, composed,
             inferred, dataset.constant_note)
    return dataclasses.replace(
        dataset, header_note=table.header_note, notes=tuple(note for note in notes if note),
        has_header=table.has_header, delimiter=table.delimiter,
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
            is not finite in float64 (``torchlean train`` standardises it); a feature or regression
            target whose train-split values are not all equal but whose standard deviation float64
            computes as 0 or, from a subnormal variance (below about 1.49e-154), more than 0.1%
            off; a bad
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
        _check_statistics(source, columns, x_train, mean, std, "feature column")
        if kind == "regression":
            target = np.asarray(y_train, dtype=np.float64)
            _check_statistics(
                source, (label,), target[:, None], np.array([np.mean(target)]), np.array([np.std(target)]),
                "label column",
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
            with np.errstate(over="ignore", invalid="ignore"):  # does float64 hold every refused value?
                this_wide = bool(np.isfinite((raw[i, j] - mean[j]) / scale[j]))
                wide = all(bool(np.isfinite((r - mean) / scale).all()) for _, r, _ in parts)  # review95 L4
            rows = sum(int((~np.isfinite(part)).any(axis=1).sum()) for _, _, part in parts)
            way = (FLOAT64_HOLDS if wide and dtype != np.float64  # review92 F10
                   else FLOAT64_NEITHER if not this_wide else FLOAT64_PARTLY)
            way += ("correct or remove the row" if rows == 1  # review99 L1: rows of every column
                    else f"correct or remove the {rows} rows holding such values")
            raise DataError(
                f"{source}: feature column {display_name(columns[j])}: the {split}-split value "
                f"{raw[i, j]:.6g} "
                f"standardises to (x - mean) / std beyond the {dtype} range, with the train split's mean "
                f"{mean[j]:.6g} and standard deviation {scale[j]:.6g} (accepted: |x - mean| / std at most "
                f"{np.finfo(dtype).max!s}; {way})"
            )
    # regression targets stay float64, as read: standardised from these values (review86 F1)
    label_dtype = np.dtype(np.int64) if kind == "classification" else np.dtype(np.float64)
    constant = [display_name(columns[j]) for j in np.flatnonzero(np.asarray(scaler.var_) == 0.0)]
    if kind == "regression" and float(np.std(np.asarray(y_train, dtype=np.float64))) == 0.0:
        constant.append(f"{display_name(label)} (the target)")
    constant_note = "" if not constant else (
        f"{source}: column{'s' if len(constant) > 1 else ''} {', '.join(constant)} "
        f"{'are' if len(constant) > 1 else 'is'} constant in the rows trained on, so "
        f"{'they carry' if len(constant) > 1 else 'it carries'} no information (scaled with scale 1, as "
        "scikit-learn's StandardScaler scales a zero-variance column)"
    )
    constant_note = "; ".join(note for note in (
        constant_note, _rounding_note(source, columns, x_train, mean, std, scale)) if note)
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
        split_note="; ".join(note for note in (  # review222 F2/F3: classes unstratified splits miss too
            split_note(y, kind, test_fraction), class_coverage_note(y, test_rows, kind, classes)) if note),
        x_val=standardised_val,
        y_val=None if val_rows is None else np.asarray(y[val_rows], dtype=label_dtype),
        constant_note=constant_note,
        seed=int(seed),
        test_fraction=float(test_fraction),
        val_fraction=None if val_fraction is None else float(val_fraction),
    )


def _check_statistics(
    source: str, columns: Sequence[str], values: Array, mean: Array, std: Array, what: str
) -> None:
    """Refuse the first column whose train-split ``mean`` or ``std`` (float64, one per column of
    ``values``, the train rows) is not finite: standardising it would give NaN or infinity; then
    the first whose values are not all equal but whose ``std`` is below ``2**-511`` (about
    1.49e-154, the square root of float64's smallest normal number) and 0 or more than 0.1% off
    the true deviation (:func:`_check_underflow`).

    scikit-learn's ``StandardScaler`` and ``np.std`` sum the squared deviations from the mean
    before dividing by the row count ``n``, so the deviation is infinite from
    ``sqrt(float64 max / n)`` on (about 1.06e153 for 160 rows); the message then gives the
    column's true one, computed on the values divided by their largest magnitude, and that limit
    (review88 F6: it said "standard deviation inf" and accepted "a finite standard deviation").

    Raises:
        DataError: naming ``source``, the column, both statistics and the limit; or, from
            :func:`_check_underflow`, the column, its range, its true deviation and that limit.
    """
    bad = ~(np.isfinite(mean) & np.isfinite(std))
    if not bad.any():
        _check_underflow(source, columns, values, std, what)
        return
    j = int(np.argmax(bad))
    rows = len(values)
    limit = math.sqrt(float(np.finfo(np.float64).max) / rows)
    column = np.asarray(values[:, j], dtype=np.float64)
    largest = float(np.max(np.abs(column)))  # finite: the reader refuses beyond float64's range
    true_mean = largest * float(np.mean(column / largest))  # review90 F6: never beyond the range
    true_std = largest * float(np.std(column / largest))
    if not np.isfinite(mean[j]):  # a running sum overflows before it is divided (review91 F9)
        found = (f"the train split's values' running sum goes beyond float64's range (their mean is "
                 f"{true_mean:.6g} and their standard deviation {_shown_against(true_std, limit)})")
    else:
        found = (f"the train split's mean is {mean[j]:.6g} and its standard deviation "
                 f"{_shown_against(true_std, limit)}, whose squared deviations from the mean sum beyond "
                 "float64's range")
    raise DataError(
        f"{source}: {what} {display_name(columns[j])}: standardising it overflows float64: {found} "
        "(accepted: values whose running sum over the train rows stays finite in float64, and squared "
        f"deviations whose sum does too: a standard deviation below {_shown_against(limit, true_std)} for "
        f"{rows} train rows; rescale the column)"
    )


def _rounding_note(
    source: str, columns: Sequence[str], train: Array, mean: Array, std: Array, scale: Array
) -> str:
    """The note on the feature columns whose train-split deviation ``std`` is not 0 but which
    scikit-learn's ``StandardScaler`` scales with 1 (``scale``) all the same: its near-constant test
    takes a variance below about ``(n * mean * eps)**2`` as 0, for ``n`` rows (``0.3`` and
    ``0.30000000000000004``; review222 F4: such a column was scaled with 1 without a word), which
    also catches real spreads about a large mean (nanosecond timestamps: review225 F2); the note
    gives each column's deviation, mean and the largest ``|x - mean|`` of the rows ``train`` (its
    standardised values' bound, far from a standardised column's ±1 for such a spread); ``""``
    when there is none."""
    rounded = [int(j) for j in np.flatnonzero((scale == 1.0) & (std != 1.0) & (std != 0.0))]
    if not rounded:
        return ""
    several = len(rounded) > 1
    them, their = ("them", "their") if several else ("it", "its")
    named = ", ".join(
        f"{display_name(columns[j])} (standard deviation {std[j]:.3g} about a mean of {mean[j]:.6g}: "
        f"standardised to within ±{float(np.max(np.abs(train[:, j] - mean[j]))):.3g})" for j in rounded
    )
    return (
        f"{source}: column{'s' if several else ''} {named} {'vary' if several else 'varies'} so little "
        f"for the size of {their} mean in the rows trained on that scikit-learn's StandardScaler takes "
        f"{them} as constant (its test: a variance below about (rows * mean * 2.2e-16)**2) and scales "
        f"{them} with scale 1, so standardising only subtracts the mean (if those differences carry "
        f"information, subtract {their} mean in the file first: the column is then standardised as any "
        "other)"
    )


def _check_underflow(source: str, columns: Sequence[str], values: Array, std: Array, what: str) -> None:
    """Refuse the first column whose train-split values (``values``, one column each) are not all
    equal but whose ``std`` (float64, as scikit-learn's ``StandardScaler`` and ``np.std`` compute
    it) is below ``2**-511``, about 1.49e-154, and off the true deviation: its squared deviations
    from the mean then sum below float64's smallest normal number, to 0 (values near 1e-170, which
    decide the label, were called constant and scaled with scale 1: review115 F3) or to a
    subnormal holding too few bits to give the deviation within :data:`_UNDERFLOW_TOLERANCE`
    (0.1%); a subnormal that still gives it that closely standardises the column as before
    (review119 F3). A column whose values are all equal passes (it is constant, and :func:`_split`
    notes it). The true deviation is computed on the values divided by their largest magnitude.

    Raises:
        DataError: naming ``source``, the column, its range, its true deviation, what float64
            computes, and asking to rescale the column.
    """
    limit = math.sqrt(float(np.finfo(np.float64).tiny))  # 2**-511: exact, as tiny is 2**-1022
    for j in np.flatnonzero(std < limit):
        column = np.asarray(values[:, j], dtype=np.float64)
        low, high = float(np.min(column)), float(np.max(column))
        if low == high:  # constant: noted, scaled with scale 1
            continue
        largest = max(abs(low), abs(high))  # positive: the values are not all equal
        true_std = largest * float(np.std(column / largest))  # 0 for 0 and 5e-324 (review120 F1)
        off = abs(float(std[j]) - true_std) / true_std if true_std > 0 else 1.0
        if std[j] != 0.0 and off <= _UNDERFLOW_TOLERANCE:
            continue
        true_shown = f"{true_std:.6g}" if true_std > 0 else "below 4.94066e-324, float64's smallest subnormal"
        computed = ("0, as for a column whose values are all equal" if std[j] == 0.0 else
                    f"{float(std[j]):.6g}, {off:.2%} off, from a subnormal variance holding too few bits")
        raise DataError(
            f"{source}: {what} {display_name(columns[int(j)])}: standardising it underflows float64: the "
            f"train split's values are not all equal (they range from {low:.6g} to {high:.6g}) and their "
            f"standard deviation is {true_shown}, but their squared deviations from the mean sum below "
            f"float64's smallest normal number, so it computes as {computed} (accepted: a standard "
            f"deviation float64 computes within {_UNDERFLOW_TOLERANCE:.1%}, which any of at least "
            f"{limit:.6g} is, or values all equal, a constant column; rescale the column)"
        )


_UNDERFLOW_TOLERANCE = 1e-3
"""How far (relatively) a standard deviation float64 computes from a subnormal variance may be off
the true one for :func:`_check_underflow` to accept the column (its standardised values then
have a deviation within 0.1% of 1)."""


def _shown_against(value: float, other: float) -> str:
    """``value`` to 6 significant digits, or to as many as tell it from ``other`` (a deviation
    just over the limit read "2.37019e+153 ... below 2.37019e+153": review90 F6)."""
    for digits in range(6, 18):
        if f"{value:.{digits}g}" != f"{other:.{digits}g}" or value == other:
            return f"{value:.{digits}g}"
    return repr(value)
