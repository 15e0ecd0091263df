"""The label column: which column of a CSV file it is (:func:`_label_index`, and the note of
:func:`_label_name_note`), and its cells read as class ids or regression targets, the task inferred
from them (:func:`_labels`; :func:`targets` and :func:`class_ids`, re-exported by
:mod:`torchlean.data`, read label cells against known classes or as regression targets).

A ``label_column`` string is a header name first, an index only when it names no column: ``"3"``
with the header ``a,3,b,y`` is column 1, with a note saying how to ask for index 3 (``3`` as an
int; CLI: ``--label-column -1`` or ``y``). Classification labels may be numbers or non-blank strings
and are mapped to ``0 .. n_classes - 1`` in sorted order (names kept in ``class_names``); in a
column whose labels are all finite numbers, they are classes by exact value, so ``1``, ``1.0``,
``01``, ``+1`` and ``1e0`` are one class, named ``1`` (a non-integer class is named by its first
spelling in the file), also among non-number labels (under ``task='classification'``: the numbers'
classes first, by value, then the names, compared as text; a number with a decimal exponent beyond
400 is a name); a single class is refused, in the file (here) or in the train split
(:func:`torchlean.data.load`), as scikit-learn classifiers refuse it. Unless ``task`` says
otherwise, the task is ``classification`` when every label is an integer of magnitude below 2**53
or every label is a non-number, ``regression`` when every label is a number and some is not such an
integer (a fraction, or a number at or beyond 2**53, where every float64 is an integer: ``1e30`` is a
quantity, not a class id); a classification so inferred in which every one of three or more labels
is a class of its own is refused (no test row's class would be trained on), naming
``task='regression'`` for numbers, ``label_column`` for names; a column mixing
numbers and non-numbers (a target with missing values such as ``NA``, ``?`` or ``null``) is
refused, naming its first non-number and how many labels are numbers: no missing value is read
(remove such rows), and, when the numbers are all whole (class ids among names?),
``task='classification'`` reads every label as a class name (``nan`` labels are missing values
there, not numbers: counted apart, and named first when no other label is a number; review128 F8).
A label column holding cells written
with decimal commas (under another delimiter than the comma) is refused unless ``task`` is given.
Blank labels are left out of that decision and refused by line and column under either task
(``not a number: ''``, ``not a class label: ''``). Class names equal in Unicode NFC form
(``café`` written with a composed accent and with a combining one, ``'cafe\\u0301'``) are one
class, named as the file writes it, or in NFC form when it writes it both ways (a note names the
two spellings); a ``label_column`` name matches a header name equal to it in that form
(review115 F2).
"""

from __future__ import annotations

import math
import shlex
from collections.abc import Sequence
from decimal import Decimal
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from torchlean import _delimiter
from torchlean._cells import (
    Lines,
    Place,
    _cell_shown,
    _decimal_comma,
    _float_dtype,
    _is_number,
    _line,
    _not_a_number,
    _number,
    _respelled,
    _shown,
    display_name,
    first_respelling,
    nfc,
    quoted,
)
from torchlean._checks import DECIMAL_INTEGER, is_builtin_or_numpy_int
from torchlean._data_errors import DataError
from torchlean.backend.display import LINE_LIMIT, cut, name_shown
from torchlean.backend.errors import UnknownLabelError

__all__ = ["Task", "class_ids", "targets"]

Task: TypeAlias = Literal["classification", "regression"]
"""A dataset's task: class labels (cross-entropy on logits) or a real target (MSE on a standardised
target)."""
Array: TypeAlias = npt.NDArray[Any]


def refuse_unknown_task(task: object) -> None:
    """Refuse a task other than ``classification`` or ``regression`` (``None``, infer it, is the
    caller's to take).

    Raises:
        UnknownLabelError: ``unknown task clf (known: classification | regression)``.
    """
    if not isinstance(task, str) or task not in ("classification", "regression"):  # an array: review239 F7
        raise UnknownLabelError(f"unknown task {name_shown(task)} (known: classification | regression)")


def _label_index(file: str, names: Sequence[str], column: object, has_header: bool) -> int:
    """The index of the label column: the last one for ``None``, an integer index (Python or
    numpy; negative counts from the end), or a header name used exactly once (names compared in
    Unicode NFC form, :func:`torchlean._cells.nfc`); in a file without a
    header, ``column_<i>``, the name messages and records give its column ``i`` (review59 F8).

    Raises:
        UnknownLabelError: an index out of range or an unknown name, naming the accepted ones.
        DataError: a name the header repeats (ambiguous, also when written two ways that are
            equal in NFC form), naming its columns and the spellings, escaped.
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
    # names are compared in NFC form (review115 F2): 'café' names a header's 'cafe\u0301'
    where = [i for i, name in enumerate(names) if nfc(name) == nfc(column)] if isinstance(column, str) else []
    if where:  # without a header, names are column_0, column_1, ...: each once
        if len(where) > 1:
            spellings = list(dict.fromkeys(names[i] for i in where))
            written = (quoted(spellings[0]) if len(spellings) == 1 else
                       f"{', '.join(map(quoted, spellings))} (one name in Unicode NFC form)")
            raise DataError(
                f"{file}: label column {quoted(str(column))} is ambiguous: the header names columns "
                f"{', '.join(map(str, where))} {written} (accepted: a name the header uses once, or a "
                f"column index 0..{len(names) - 1})"
            )
        return where[0]
    if isinstance(column, str) and DECIMAL_INTEGER.fullmatch(column.strip()):  # names no column: an index
        return _label_index(file, names, int(column), has_header)
    known = (" | ".join(map(display_name, names)) if has_header
             else f"indices 0..{len(names) - 1} or their names {names[0]}..{names[-1]} (the file has no "
             "header)")
    raise UnknownLabelError(f"unknown label column {name_shown(column)} in {file} (known: {known})")


def _label_name_note(file: str, names: Sequence[str], column: object, has_header: bool) -> str:
    """The note of :meth:`torchlean.data.Table.label_note`: ``column`` is a string of an integer that names a
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
    file: str,
    column: str,
    cells: list[str],
    task: Task | None,
    first_line: Lines,
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
            class name unless ``task='classification'``); with ``task='regression'``, labels
            none of which is a number, two or more distinct (class names: the first named, and
            ``task='classification'``); a
            regression label that is not a finite float64 number (as a feature cell,
            :func:`_number`: targets are kept and standardised in float64, review86 F1), a
            blank classification label (``line 2, column y: not a class label: ''``, as a blank
            feature cell is ``not a number: ''``), or a single class
            (a classifier needs two; scikit-learn classifiers refuse such a target too).
    """
    labels = [cell.strip() for cell in cells]
    numeric = [_is_number(v) for v in labels]
    if task is not None:
        refuse_unknown_task(task)
    # the task is inferred from the non-blank labels; a blank one is refused below, by either task
    filled = [r for r, v in enumerate(labels) if v]
    text = [r for r in filled if not numeric[r]]
    if task is None and text and len(text) < len(filled):  # a quantity with missing values, or classes?
        _refuse_mixed(file, column, cells, labels, [r for r in filled if numeric[r]], text, first_line,
                      delimiter)
    comma = next((r for r in text if _decimal_comma(labels[r], delimiter) is not None), None)
    if task is None and comma is not None:  # a quantity written with decimal commas, or classes?
        raise DataError(
            f"{file}: line {_line(first_line, comma)}, column {display_name(column)}: "
            f"{_not_a_number(cells[comma], delimiter)}: a quantity written with decimal commas? write its "
            "numbers with points (or, if the labels are class names, pass task='classification', CLI: --task "
            "classification)"
        )
    inferred = task is None and not text and not all(_integral(labels[r]) for r in filled)
    if inferred:
        _refuse_merged_ids(file, column, [labels[r] for r in filled])
    if task is None and not inferred and len(filled) >= 3 and len(set(map(nfc, labels))) == len(labels):
        _refuse_one_class_per_row(file, column, labels, numeric)
    text_names = {labels[r] for r in text}
    # the cell named is a number written otherwise ('−2.04', '1,345': review119 F1), not a class name
    respelled = bool(text) and _respelled(cells[text[0]], delimiter)
    if (task == "regression" and comma is None and not respelled and len(text) == len(filled)
            and len(text_names) > 1):
        # review115 F6: class names under task='regression' were a bare "not a number"
        raise DataError(
            f"{file}: line {_line(first_line, text[0])}, column {display_name(column)}: "
            f"{_not_a_number(cells[text[0]], delimiter, missing=False)}: task regression (CLI: --task "
            f"regression) needs a number in each label, and this column holds class names "
            f"({len(text_names)} distinct, none a number); to classify them, pass "
            "task='classification' (CLI: --task classification)"
        )
    if task == "regression" or inferred:
        targets_read = targets(file, column, cells, np.float64, first_line=first_line, delimiter=delimiter)
        return targets_read, (), "regression"
    blank = next((r for r, v in enumerate(labels) if not v), None)
    if blank is not None:
        raise DataError(
            f"{file}: line {_line(first_line, blank)}, column {display_name(column)}: not a class label: "
            f"{cells[blank]!r} "
            "(accepted: a number or a non-blank name)"
        )
    # numbers name their value: 1, 1.0, 01 and +1 are one class (named 1), also among names (the
    # numbers first, by value, then the names in sorted order); names equal in NFC form are one
    # class (review115 F2), named as the file writes it, or in NFC form when it writes it two ways
    values = [_exact(v) for v in labels]
    spelling: dict[Decimal, str] = {}
    written: dict[str, set[str]] = {}
    for v, value in zip(labels, values, strict=True):
        if value is not None:
            spelling.setdefault(value, v)
        else:
            written.setdefault(nfc(v), set()).add(v)
    by_value = sorted(spelling)
    named = {key: next(iter(ways)) if len(ways) == 1 else key for key, ways in written.items()}
    names = sorted(named.values())
    classes = (*(_class_name(spelling[value], value) for value in by_value), *names)
    position: dict[Decimal | str, int] = {value: i for i, value in enumerate(by_value)}
    order = {name: len(by_value) + i for i, name in enumerate(names)}
    position.update((key, order[name]) for key, name in named.items())
    ids = [position[nfc(v) if value is None else value] for v, value in zip(labels, values, strict=True)]
    if len(classes) == 1:
        quantity = (  # review59 F5: a constant number may be a (constant) quantity
            "; if it is a quantity, pass task='regression' (CLI: --task regression)"
            if task is None and by_value else ""
        )
        raise DataError(
            f"{file}: label column {display_name(column)}: all {len(labels)} labels are "
            f"{quoted(classes[0])}, a single class "
            f"(accepted: at least two classes for classification){quantity}"
        )
    return np.asarray(ids, dtype=np.int64), classes, "classification"


def blank_spellings_note(file: str, column: str, cells: Sequence[str]) -> str:
    """A note when two class label ``cells`` differ only in blanks around them (``' x'`` and
    ``'x'``), which :func:`_labels` reads as one class (``x``, as cells are read after each comma:
    review67 F15), naming the first such pair; ``""`` when every label is spelled one way (a file
    written ``a, b, x`` throughout gives none). Linear in the cells."""
    pair = first_respelling(cells, str.strip)
    if pair is None:
        return ""
    seen, cell = cells[pair[0]], cells[pair[1]]
    return (
        f"{file}: column {display_name(column)}: the labels {quoted(seen)} and {quoted(cell)} are "
        f"one class, {quoted(cell.strip())} (blanks around a label are not part of it)"
    )


def nfc_spellings_note(file: str, column: str, cells: Sequence[str]) -> str:
    """A note when two class label ``cells`` (blanks around them stripped) are one text written
    two ways, equal only in Unicode NFC form (``'café'`` with a composed accent and
    ``'cafe\\u0301'`` with a combining one, as a file merged from macOS and Windows exports may
    hold), which :func:`_labels` reads as one class (review115 F2), naming the first such pair,
    escaped so that the difference shows, and the class; ``""`` when every label is written one
    way. Linear in the cells."""
    labels = [cell.strip() for cell in cells]
    pair = first_respelling(labels, nfc)
    if pair is None:
        return ""
    seen, label = labels[pair[0]], labels[pair[1]]  # written two ways: the class is named in NFC form
    return (
        f"{file}: column {display_name(column)}: the labels {quoted(seen)} and {quoted(label)} are "
        f"one class, {quoted(nfc(label))} (the same text in Unicode NFC form, its accents composed "
        "or combining: such labels are compared in NFC form)"
    )


def class_names(file: str, column: str, cells: list[str], first_line: Lines) -> tuple[str, ...]:
    """The class names, in the model's output order, that :func:`torchlean.data.load` gives the
    label ``cells`` read as classes (numbers by value, then names sorted), for comparing them with
    a checkpoint's (review69 F4).

    Raises:
        DataError: as :func:`torchlean.data.load` for such labels (a blank label, one class).
    """
    return _labels(file, column, cells, "classification", first_line)[1]


def _refuse_merged_ids(file: str, column: str, labels: Sequence[str]) -> None:
    """Refuse labels read as a quantity only because whole numbers among them reach 2**53, when
    float64 cannot tell them apart: ids such as ``1234567890123456789`` and ``...790`` (3 distinct
    in the file became one number, a "constant" target: review59 F4). Both ways out are named.

    Raises:
        DataError: naming the distinct counts in the file and as numbers.
    """
    values = [_exact(v) for v in labels]
    if any(value is None or value != value.to_integral_value() for value in values):
        return  # not all whole numbers: a quantity
    written = {value for value in values if value is not None}
    read = {float(v) for v in labels}
    if len(read) < len(written):
        raise DataError(
            f"{file}: label column {display_name(column)}: the labels are whole numbers beyond 2**53, "
            f"{len(written)} distinct as written but {len(read)} once read as float64 numbers (which "
            "cannot hold them exactly): if they are class ids, pass task='classification' (CLI: --task "
            "classification); to read them as rounded quantities, pass task='regression' (CLI: --task "
            "regression)"
        )


def _refuse_one_class_per_row(
    file: str, column: str, labels: Sequence[str], numeric: Sequence[bool]
) -> None:
    """Refuse a label column read as classification (``task`` not given) whose labels are all
    distinct (numbers by value: ``1`` and ``1.0`` are one class, which does not refuse): every
    row a class of its own, so no class has a sample in both splits
    and the test accuracy is 0 by construction.

    Raises:
        DataError: naming the column, the count and the way out (``task='regression'`` when the
            labels are numbers, else another ``label_column``; ``task='classification'`` keeps them).
    """
    values: set[Decimal | str | None] = {nfc(v) if _exact(v) is None else _exact(v) for v in labels}
    if len(values) < len(labels):  # 1 and 1.0: one class, so not every row is its own
        return
    if all(numeric):
        kind = "whole numbers"
        way_out = "pass task='regression' (CLI: --task regression) if they are a quantity"
    else:
        kind = "labels"
        way_out = "if another column holds the labels, pass label_column=NAME (CLI: --label-column NAME)"
    raise DataError(
        f"{file}: label column {display_name(column)}: its {len(labels)} {kind} are all distinct, so "
        "classification (inferred from them) would make every row a class of its own, and no test row's "
        f"class would be trained on: {way_out}; pass task='classification' (CLI: --task classification) "
        "to train on them as classes anyway"
    )


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
    finite once rounded to ``dtype`` (float32 or float64; training and ``torchlean predict`` read
    them with float64, whatever the model's dtype, and standardise them in float64). Messages
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
    class when it equals it once blanks around it are stripped, compared in Unicode NFC form
    (:func:`torchlean._cells.nfc`: ``'cafe\\u0301'`` names class ``'café'``; by text alone for a
    checkpoint whose classes hold two names equal in that form, as before review115 F2); a numeric
    cell names the numeric
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
    texts = [c for c, value in zip(classes, exact, strict=True) if not (by_value and value is not None)]
    by_nfc = len(set(map(nfc, texts))) == len(texts)  # else a checkpoint of before review115 F2
    index: dict[str | Decimal, int] = {
        (value if by_value and value is not None else nfc(c) if by_nfc else c): i
        for i, (c, value) in enumerate(zip(classes, exact, strict=True))
    }
    ids = np.empty(len(cells), dtype=np.int64)
    for r, cell in enumerate(cells):
        value = cell.strip()
        number = _exact(value) if by_value else None
        found = index.get((nfc(value) if by_nfc else value) if number is None else number)
        if found is None:
            # each name cut (review158 F5) and the list too (review161 F2), at a length that keeps the
            # lists of ordinary class names whole
            known = cut(" | ".join(cut(display_name(c)) for c in classes), 5 * LINE_LIMIT)
            raise UnknownLabelError(
                f"{source}: {place} {_line(first_line, r)}, column {display_name(column)}: "
                f"unknown class label {_cell_shown(value)} (known: {known})"
            )
        ids[r] = found
    return ids


_WHOLE_LIMIT = 2.0**53
"""A number label of this magnitude or more is no whole number to the task inference: every float64
of it is an integer (its spacing is 2 or more), so ``-2.3e30`` is "whole" trivially, and a float64
cannot hold class ids of that size exactly (2**53 + 1 is no float64)."""


def _refuse_mixed(
    file: str,
    column: str,
    cells: Sequence[str],
    labels: Sequence[str],
    numbers: Sequence[int],
    text: Sequence[int],
    first_line: Lines,
    delimiter: str,
) -> None:
    """Refuse the label ``cells`` (``labels`` stripped) of a column mixing numbers (the rows
    ``numbers``) and non-numbers (``text``, non-blank), read without a task: a quantity with missing
    values, or class ids beside class names? The first non-number is named, and how many labels are
    numbers. A NaN label (``nan``, a number to Python) is a missing value, not a number there
    (review128 F8): when every number is NaN, the first NaN is named as the missing value; else
    the NaN labels are counted apart and whether the other numbers are whole decides the advice.

    Raises:
        DataError: always.
    """
    nans = [r for r in numbers if math.isnan(float(labels[r]))]
    if len(nans) == len(numbers):  # 'nan' beside names: missing values, not a quantity
        r = nans[0]
        raise DataError(
            f"{file}: line {_line(first_line, r)}, column {display_name(column)}: not a finite number: "
            f"{_cell_shown(cells[r])} (a missing value: {len(nans)} of the {len(labels)} labels are NaN, "
            f"and the others are not numbers, {_cell_shown(cells[text[0]])} on line "
            f"{_line(first_line, text[0])} the first): torchlean reads no missing values (remove such rows)"
        )
    r, count = text[0], len(numbers) - len(nans)
    missing = set(nans)  # a set: a list made this check O(numbers x NaNs) (review131 F1)
    whole = all(_integral(labels[i]) for i in numbers if i not in missing)
    classes = "to read every label as a class name"
    if nans:  # under a task, 'nan' is a class name like any other (review131 F4)
        classes += " (a 'nan' label then names a class of its own: remove those rows first)"
    way_out = (
        f"; pass task='classification' (CLI: --task classification) {classes}" if whole else
        " (the numbers are not all whole: a quantity, whose rows without one cannot be trained on)"
    )
    nan = f", and {len(nans)} {'is' if len(nans) == 1 else 'are'} NaN, a missing value too" if nans else ""
    raise DataError(
        f"{file}: line {_line(first_line, r)}, column {display_name(column)}: "
        f"{_not_a_number(cells[r], delimiter, missing=False)}, but {count} of the {len(labels)} labels "
        f"are numbers{nan}: torchlean reads no missing values (remove such rows){way_out}"
    )


def _integral(cell: str) -> bool:
    """Whether a number cell is a whole number below :data:`_WHOLE_LIMIT` in magnitude (``3``,
    ``3.0``, ``-1e3``; not ``2.5``, ``1e30``, ``inf``)."""
    value = float(cell.strip())
    return math.isfinite(value) and abs(value) < _WHOLE_LIMIT and value == int(value)


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
