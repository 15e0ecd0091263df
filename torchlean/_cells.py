"""CSV cells: which are numbers and the values they hold (:func:`_number`, checked against a float
``dtype``, which :func:`_float_dtype` checks), the refusals naming a cell that is not one (a decimal
comma, a missing value), where a cell sits in a file (:data:`Lines`, :data:`Place`), and how
messages show a cell, a column or a class label (:func:`display_name`, re-exported by
:mod:`torchlean.data`).

A cell is a number when it is written with ASCII digits, an optional sign, point and exponent
(``1e-3``, ``.5``; not ``1_000`` or other scripts' digits, which Python's ``float`` would read).
Decimal commas are not read: under another delimiter than the comma a cell ``1,5`` is not a number
(its refusal says to write ``1.5``). Features must be finite float64 numbers and regression labels
finite numbers within the range of ``dtype`` (``1e200`` is refused as a float32 label, by line and
column).
"""

from __future__ import annotations

import math
import re
import unicodedata
from collections.abc import Callable, Mapping, Sequence
from pathlib import Path
from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from torchlean import _delimiter
from torchlean._checks import DECIMAL_NUMBER, dtype_shown, float_dtype
from torchlean._data_errors import DataError
from torchlean.backend.display import name_shown

__all__ = [
    "LISTED", "MISSING_VALUES", "Lines", "Place", "display_name", "first_respelling", "names_listed", "nfc",
    "quoted",
]

Lines: TypeAlias = int | Sequence[int]
"""Where cells sit in a file: the line of the first (the rest on the lines after it), or the line
of each (:attr:`torchlean.data.Table.lines`)."""
Place: TypeAlias = Literal["line", "row"]
"""What the numbers of :data:`Lines` count in messages: file lines (a CSV file), or rows from 1 (a
shipped dataset, which has no file lines)."""


def _float_dtype(dtype: npt.DTypeLike) -> np.dtype[Any]:
    found = float_dtype(dtype)
    if found is None:
        raise DataError(f"dtype must be float32 or float64, got {dtype_shown(dtype)}")
    return found


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


_MINUS = "\u2212"
"""U+2212 MINUS SIGN, which word processors and some locales' number formats write for ``-``."""

_GROUPED = re.compile(
    r"(?P<sign>[+-]?)(?P<int>[1-9]\d{0,2}(?P<sep>[, \u00a0\u202f'.])\d{3}(?:(?P=sep)\d{3})*)"
    r"(?P<frac>[.,]\d+)?"
)
"""A number written with a thousands separator (``1,000``, ``1 000``, ``1'000``, ``1.000.000``,
with a no-break or narrow no-break space too) and an optional fraction after a point or comma
(``1,000.5``, ``1 000,5``, ``1.000,5``); its first group does not start with 0 (``0,001`` is a
decimal comma, never thousands: review119 F5)."""


def _ungrouped(text: str) -> str | None:
    """``text`` (blanks around it stripped) without its thousands separators, written with a
    decimal point (``1,000.5`` → ``1000.5``, ``1.000,5`` → ``1000.5``), when it is a number
    written with them (:data:`_GROUPED`; its fraction on the other side of the separator: not
    ``1,000,5``); else ``None``."""
    found = _GROUPED.fullmatch(text)
    if found is None:
        return None
    sep, frac = found["sep"], found["frac"] or ""
    if frac[:1] == sep:  # '1,000,5', '1.000.5': no fraction after the separator itself
        return None
    number = f"{found['sign']}{found['int'].replace(sep, '')}{'.' + frac[1:] if frac else ''}"
    return number if _is_number(number) else None


def _number_hint(cell: str, delimiter: str) -> str:
    """Why ``cell``, which is no number, may be one written otherwise (``""`` else): a decimal
    comma under another ``delimiter`` than the comma (:func:`_decimal_comma`), U+2212 MINUS SIGN
    for ``-``, or thousands separators (:func:`_ungrouped`; under another delimiter, ``1,000`` is
    a decimal comma or a thousands separator, both named), each with the number to write
    (review115 F6)."""
    text = cell.strip()
    minus = text.replace(_MINUS, "-")
    pointed = _decimal_comma(minus, delimiter)
    grouped = _ungrouped(minus)
    sign = "U+2212 MINUS SIGN and " if minus != text else ""
    if sign and _is_number(minus):  # '−1.738': a minus sign only, no thousands
        return f" (U+2212 MINUS SIGN is not read as a minus: write {minus})"
    if pointed is not None:
        thousands = f"; or, if ',' separates thousands, write {grouped}" if grouped is not None else ""
        return f" ({sign}decimal commas are not read: write {pointed}{thousands})"
    if grouped is not None:
        return f" ({sign}thousands separators are not read: write {grouped})"
    return ""


def _respelled(cell: str, delimiter: str) -> bool:
    """Whether ``cell`` is a number written otherwise (:func:`_number_hint`)."""
    return bool(_number_hint(cell, delimiter))


MISSING_VALUES = frozenset({"", "NA", "N/A", "n/a", "NULL", "null", "None", "\\N", "?", "#N/A", "-"})
"""Cells that spreadsheets, databases, R and pandas write for a missing value (pandas an empty
cell; MySQL ``\\N``), besides ``nan``, which is read as a number and refused as not finite."""

_MISSING_HINT = " (a missing value? torchlean reads none: remove such rows)"


def _not_a_number(cell: str, delimiter: str, *, missing: bool = True) -> str:
    """``not a number: '1,5'``, with ``(decimal commas are not read: write 1.5)`` for a decimal
    comma (:func:`_decimal_comma`), the like for U+2212 MINUS SIGN and thousands separators
    (:func:`_number_hint`: ``not a number: '1,000' (thousands separators are not read: write
    1000)``), and, when ``missing``, a missing-value hint for the cells of
    :data:`MISSING_VALUES` (review37 F5)."""
    hint = _number_hint(cell, delimiter)
    if not hint:
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
            comma, says so: ``not a number: '1,5' (decimal commas are not read: write 1.5)``;
            so do U+2212 MINUS SIGN and thousands separators: :func:`_number_hint`);
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


def _cell_shown(cell: str, limit: int = 60) -> str:
    """A CSV cell as messages quote it: its Python literal (:func:`quoted`), cut after ``limit``
    characters with the cell's length (``'4\\n5,6,7\\nx...' (45064 characters)``), so a huge cell
    cannot flood an ``error:`` line."""
    if len(cell) <= limit:
        return quoted(cell)
    return f"{quoted(cell[:limit])}... ({len(cell)} characters)"


def nfc(text: str) -> str:
    """``text`` in Unicode normalisation form NFC (accents composed: ``'cafe\\u0301'`` →
    ``'café'``): class labels and column names are compared in this form, so that the two ways
    of writing one accented text (macOS exports often decompose, most others compose) are one
    label and one name (review115 F2)."""
    return unicodedata.normalize("NFC", text)


def first_respelling(values: Sequence[str], key: Callable[[str], str]) -> tuple[int, int] | None:
    """The positions ``(j, i)`` of the first of ``values`` that differs from an earlier one with
    the same ``key`` (``values[j]``, the first with that key): one text written two ways (blanks
    around a label, its accents composed or combining); ``None`` when each key is written one
    way. Linear in the values."""
    first: dict[str, int] = {}
    for i, value in enumerate(values):
        j = first.setdefault(key(value), i)
        if values[j] != value:
            return j, i
    return None


def quoted(text: str) -> str:
    """``text``'s Python literal (``'café'``), with every non-ASCII character escaped
    (``'cafe\\u0301'``, as :func:`ascii` writes it) when ``text`` is not in NFC form
    (:func:`nfc`): a decomposed accent prints as its composed twin does, so a message naming
    both spellings would show the same text twice (review115 F2)."""
    return repr(text) if nfc(text) == text else ascii(text)


def display_name(text: str) -> str:
    """``text`` (a column name or class label) as messages print it: itself when it is a
    non-empty printable string without blanks at its ends and in NFC form (:func:`nfc`), else
    its Python literal (``''``, ``'a\\nb'``; ``'cafe\\u0301'``: :func:`quoted`), so that an empty
    name stays visible, a name holding a newline or a control character cannot split or garble a
    one-line ``error:`` (:func:`~torchlean.backend.display.name_shown`), and a name whose accents
    are decomposed does not print as its composed twin does."""
    if isinstance(text, str) and nfc(text) != text:
        return quoted(text)
    return name_shown(text)


LISTED = 6
"""The most names a message lists whole; a longer list shows its first three and its last."""


def names_listed(names: Sequence[str], *, counted: bool = True,
                 show: Callable[[str], str] | None = None) -> str:
    """``names`` as one line of a message: each as ``show`` shows it (default
    :func:`display_name`), joined by ``, ``; more than :data:`LISTED` elided to the first three,
    ``...`` and the last, with their count unless the message says it already (``counted=False``):
    ``f0, f1, f2, ..., f19999 (20000 in all)``."""
    show = display_name if show is None else show
    if len(names) <= LISTED:
        return ", ".join(show(name) for name in names)
    shown = [show(name) for name in (*names[:3], names[-1])]
    return f"{', '.join(shown[:3])}, ..., {shown[-1]}" + (f" ({len(names)} in all)" if counted else "")


def _shown(names: Sequence[str], index: int, counts: Mapping[str, int] | None = None) -> str:
    """Column ``index`` as messages name it: its name when that is non-blank and used once, else
    its index (with the name when there is one: ``2 ('x')``). ``counts`` (how often each of
    ``names`` occurs, a ``collections.Counter``) spares counting ``names`` once per call, which
    naming every column of a wide file would repeat (review67 F8)."""
    name = names[index]
    if name and (names.count(name) if counts is None else counts[name]) == 1:
        return name
    return f"{index} ({name!r})" if name else str(index)
