"""Argument predicates shared by the runtime, ``nn``, the trainer and the data loaders.

What counts as an integer and what as a float dtype, and how numbers and CUDA devices are spelled
in text (CSV cells, command-line options), written once. Each caller keeps the
accepted set it documents, so there are three integer predicates, from widest to narrowest:

* :func:`is_int`: any ``numbers.Integral`` (Python ints, numpy integers and other registered
  integer types such as ``gmpy2.mpz``) — layer sizes, seeds of :func:`torchlean.nn.build`;
* :func:`is_builtin_or_numpy_int`: exactly Python ints and numpy integers — dataset seeds and
  label-column indices;
* :func:`is_builtin_int`: Python ints only — the arbitrary-precision integers whose magnitude the
  runtime checks against a tensor dtype (numpy integers always fit int64).

All three refuse ``bool`` (and ``numpy.bool_``, which is not an integer type): ``True`` is not a
size, an index or a seed, as torch refuses it too.

From torchlean this module imports only ``torchlean.backend.display`` (a leaf of the backend), so
every package may import it except ``torchlean.backend``, which imports nothing above itself
(``tests/backend/test_layering.py``).
"""

from __future__ import annotations

import math
import numbers
import re
import reprlib
from collections.abc import Callable
from typing import Any, TypeGuard

import numpy as np

from torchlean.backend.display import name_shown

__all__ = [
    "FLOAT_DTYPES",
    "checked_int",
    "dtype_shown",
    "float_dtype",
    "id_outside",
    "is_builtin_int",
    "is_builtin_or_numpy_int",
    "is_int",
    "padding_index",
    "plain_bool",
    "plain_float",
    "shown",
]

FLOAT_DTYPES: tuple[np.dtype[np.floating], ...] = (np.dtype(np.float32), np.dtype(np.float64))
"""The floating dtypes of tensors, models and datasets: float32 (the default) and float64."""


DECIMAL_NUMBER = re.compile(
    r"[+-]?(?:(?:[0-9]+\.?[0-9]*|\.[0-9]+)(?:[eE][+-]?[0-9]+)?|inf|infinity|nan)", re.IGNORECASE | re.ASCII
)
"""A number as CSV cells and command-line options spell it (match the text with blanks around it
stripped): ASCII decimal digits with an optional sign, point and exponent, or an ASCII spelling of
inf or nan. Narrower than Python's ``float``, which also reads ``1_000`` (1000), ``1_0.5`` (10.5)
and other scripts' digits (``١٢``, 12); like pandas' ``read_csv`` and numpy's ``loadtxt``, those
are text here."""

DECIMAL_INTEGER = re.compile(r"[+-]?[0-9]+", re.ASCII)
"""An integer as command-line options spell it (blanks around it stripped): ASCII decimal digits
with an optional sign; not ``1_000`` or other scripts' digits, which Python's ``int`` reads."""

CUDA_DEVICE = re.compile(r"cuda(?::([0-9]+))?", re.ASCII)
"""A CUDA device as torch spells it (match the whole text): ``cuda`` (the current device) or
``cuda:N``, N in ASCII digits (group 1, or None)."""


def is_int(value: object) -> TypeGuard[numbers.Integral]:
    """True for Python and numpy integers (any ``numbers.Integral``); False for bools."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def is_builtin_or_numpy_int(value: object) -> TypeGuard[int | np.integer[Any]]:
    """True for a Python ``int`` or a numpy integer scalar; False for bools and for other
    ``numbers.Integral`` types."""
    return isinstance(value, int | np.integer) and not isinstance(value, bool)


def is_builtin_int(value: object) -> TypeGuard[int]:
    """True for a Python ``int`` that is not a bool (numpy integers are not)."""
    return isinstance(value, int) and not isinstance(value, bool)


_LONG_INT_BITS = 333
"""Integers of more bits (about 100 decimal digits) are named by their size in messages."""


def plain_float(value: float | np.floating[Any]) -> float:
    """A builder's real argument (``RealLike``) as the ``float`` its record stores: a numpy float
    (``np.float32(0.1)``) becomes the Python float of its value, as the record's own check would
    convert it; anything else is passed on unchanged, for that check to accept (a Python number)
    or refuse with its message (a bool, a string, at run time)."""
    return float(value) if isinstance(value, np.floating) else value


def plain_bool(value: bool | np.bool_) -> bool:
    """A builder's flag (``BoolLike``) as the ``bool`` its record stores: a numpy bool becomes a
    Python bool, as the record's own check would convert it; anything else is passed on unchanged,
    for that check to refuse with its message at run time."""
    return bool(value) if isinstance(value, np.bool_) else value


def int_overflow(value: int, dtype: np.dtype[Any]) -> str | None:
    """The integers ``dtype`` accepts, when the Python integer ``value`` does not fit it; None when it
    does. Every int64 value fits every tensor dtype's reading of it (int64, bool, float32, float64);
    beyond int64, a float dtype takes what rounds to a finite value, and int64 and bool take nothing
    (torch refuses integers beyond int64 with an ``OverflowError``)."""
    if -(2**63) <= value < 2**63:
        return None
    if dtype.kind == "f":
        try:
            with np.errstate(over="ignore"):
                if np.isfinite(dtype.type(float(value))):
                    return None
        except OverflowError:
            pass
        floats = np.finfo(dtype)  # 2**maxexp - 2**(maxexp - nmant - 2) is the first to round to inf
        digits = str(2**floats.maxexp - 2 ** (floats.maxexp - floats.nmant - 2))  # past float64's range
        limit = f"{digits[0]}.{digits[1:8]}e+{len(digits) - 1}"
        return f"integers that round to a finite {dtype}, of magnitude below about {limit}"
    ints = np.iinfo(np.int64)
    return f"integers in [{ints.min}, {ints.max}]"


def _digits(n: int) -> int:
    """About how many decimal digits ``abs(n)`` has (from its bit length; no decimal conversion)."""
    return int(abs(n).bit_length() * math.log10(2)) + 1


def shown(value: object) -> str:
    """``repr(value)`` for messages, except that an integer or fraction with more than about 100
    digits is named by its size (``an integer of about 1506 digits``, ``a negative fraction of
    about 401 digits over 1 digits``): its repr would flood the message, and past 4300 digits
    Python refuses to print it at all (``ValueError``)."""
    if isinstance(value, numbers.Rational) and not isinstance(value, bool):
        top, bottom = int(value.numerator), int(value.denominator)
        if max(top.bit_length(), bottom.bit_length()) > _LONG_INT_BITS:
            if bottom == 1:
                return f"{'a negative' if top < 0 else 'an'} integer of about {_digits(top)} digits"
            sign = "a negative" if top < 0 else "a"
            return f"{sign} fraction of about {_digits(top)} digits over {_digits(bottom)} digits"
    return repr(value)


def shown_safely(value: object) -> str:
    """:func:`shown` of ``value``, or ``a <type name>`` when even that fails (a ``__repr__`` that
    raises), for refusals that must not be replaced by another error (review156 L3)."""
    try:
        return shown(value)
    except Exception:  # any failure of a user's __repr__ must not replace the refusal
        return f"a {type(value).__name__}"


class _BoundedRepr(reprlib.Repr):
    """``reprlib.Repr`` naming a long integer by its size (:func:`shown`): ``repr`` refuses one of
    more than 4300 digits."""

    def repr_int(self, x: int, level: int) -> str:
        return shown(x)


def _bounded_repr(limit: int) -> reprlib.Repr:
    """A ``reprlib.Repr`` that shows at most 8 entries of a container, 4 levels deep, and cuts
    other reprs to ``limit`` characters: the repr of a list numpy refused is read in bounded time
    (``[[...] * 10] * 10`` nested 9 deep is 10**9 numbers, a few hundred bytes: its full repr took
    minutes, review242 F1)."""
    bounded = _BoundedRepr()
    bounded.maxlevel = 4
    bounded.maxlist = bounded.maxtuple = bounded.maxdict = bounded.maxset = bounded.maxfrozenset = 8
    bounded.maxdeque = bounded.maxarray = 8
    bounded.maxstring = bounded.maxother = bounded.maxlong = limit
    return bounded


def shown_briefly(value: object, limit: int = 60) -> str:
    """:func:`shown` of ``value`` on one line (numpy's line breaks and their indent read as one
    space, a carriage return written ``\\r``), cut to ``limit`` characters (``...`` marks the
    cut); a list, tuple, mapping or set shown by its first entries (``[1.0, 1.0, ...]``, 4 levels
    deep at most: :func:`_bounded_repr`); ``a <type> object`` when its ``repr`` raises (review126
    F1: the refusal naming it must not become that exception)."""
    try:
        if isinstance(value, list | tuple | dict | set | frozenset):
            text = _bounded_repr(limit).repr(value)
        else:
            text = shown(value)
        text = re.sub(r"\n\s*", " ", text).replace("\r", "\\r")
    except Exception:  # a user class's __repr__ may raise anything
        return f"a {type(value).__qualname__} object"
    return text if len(text) <= limit else text[: limit - 3] + "..."


def checked_int(value: object, what: str, minimum: int, error: Callable[[str], Exception]) -> int:
    """``value`` as an ``int`` if it is an integer (:func:`is_int`) ``>= minimum``.

    Raises:
        the ``error`` class given: ``<what> must be an int >= <minimum>, got <value!r>``
            (:func:`shown`).
    """
    if not is_int(value) or int(value) < minimum:
        raise error(f"{what} must be an int >= {minimum}, got {shown(value)}")
    return int(value)


def id_outside(ids: np.ndarray[Any, Any], count: int) -> int | None:
    """The id of integer array ``ids`` outside ``[0, count)`` that a refusal names (the most
    negative one, else the largest), or ``None`` when every id is in range (or there is none)."""
    if ids.size == 0:
        return None
    low, high = int(ids.min()), int(ids.max())
    return low if low < 0 else high if high >= count else None


def padding_index(
    value: object,
    count: int,
    what: str,
    type_error: Callable[[str], Exception],
    range_error: Callable[[str], Exception],
) -> int:
    """``value``, an embedding's ``padding_idx`` for a table of ``count`` rows, as a row index in
    ``[0, count)``: an integer (:func:`is_int`) in ``[-count, count)``, a negative one counted
    from the end (``-1`` is row ``count - 1``), as ``torch.nn.Embedding`` normalises it.

    Raises:
        the ``type_error`` class given: ``value`` is not an integer (a float, even ``2.0``, a
            bool, a string), naming it and its type;
        the ``range_error`` class given: an integer outside ``[-count, count)`` (torch:
            ``Padding_idx must be within num_embeddings``), naming it and the accepted range.
    """
    accepted = (
        f"None or an int in [-{count}, {count}), a negative one counting from the end"
        if count
        else "None, as the table has no rows"
    )
    if not is_int(value):
        raise type_error(
            f"{what}: padding_idx must be None or an integer, got {shown(value)} of type "
            f"{type(value).__name__} (accepted: {accepted}; floats are not truncated and bools are refused)"
        )
    index = int(value)
    if not -count <= index < count:
        raise range_error(
            f"{what}: padding_idx {shown(index)} is out of range for {count} embeddings "
            f"(accepted: {accepted})"
        )
    return index % count


def is_dtype_spelling(value: object) -> bool:
    """Whether ``value`` is of a kind that spells a dtype: a string, a numpy dtype, a type (numpy
    scalar types, ``float``, ``bool``) or a torch dtype. numpy's ``np.dtype`` also reads the
    ``dtype`` of any value that has one (``np.int64(2)``, an array, a tensor), and ``None`` as
    float64; those are values, not spellings (review239 F6)."""
    if isinstance(value, str | np.dtype | type):
        return True
    kind = type(value)
    return kind.__module__ == "torch" and kind.__name__ == "dtype"


def _read_dtype(dtype: object) -> np.dtype[Any] | None:
    """numpy's reading of a dtype spelling (a torch dtype by its name, as ``torchlean.tensor``
    reads it), or ``None`` for ``None``, for a value that is not a spelling
    (:func:`is_dtype_spelling`) and for what numpy cannot read."""
    if not is_dtype_spelling(dtype):
        return None
    if type(dtype).__module__ == "torch":
        dtype = str(dtype).removeprefix("torch.")
    try:
        return np.dtype(dtype)  # type: ignore[call-overload, no-any-return]
    except (TypeError, ValueError):
        return None


def is_ambiguous_float(dtype: object) -> bool:
    """The string ``"float"``: numpy reads it as float64, torch's ``torch.float`` is float32."""
    return isinstance(dtype, str) and dtype.strip() == "float"


def float_dtype(dtype: object) -> np.dtype[np.floating] | None:
    """The member of :data:`FLOAT_DTYPES` that ``dtype`` spells (``"float32"``, ``np.float64``,
    ``np.dtype("f8")``, ``torch.float64``, ...), else ``None``: another dtype, a spelling numpy
    cannot read, ``None`` (which numpy would read as float64) or the string ``"float"`` (float64 to
    numpy, float32 to torch: a torch user would silently get float64). Each caller words its own
    refusal, naming the value by :func:`dtype_shown`."""
    resolved = _read_dtype(dtype)
    if resolved is None or is_ambiguous_float(dtype):  # not ``== candidate``: numpy reads None as float64
        return None
    for candidate in FLOAT_DTYPES:
        if resolved == candidate:
            return candidate
    return None


def dtype_shown(dtype: object) -> str:
    """How a refused dtype is named in messages: numpy's name for what numpy reads (``float16``,
    ``int32``; a float of the other byte order says so: ``>f8 (big-endian; accepted: native byte
    order)``), else :func:`~torchlean.backend.display.name_shown` of it (a string as given, or its
    literal when it is empty or blank; any other value's ``repr``)."""
    if is_ambiguous_float(dtype):
        return "'float' (ambiguous: numpy reads it as float64, torch as float32)"
    resolved = _read_dtype(dtype)
    if resolved is None:
        return name_shown(dtype)
    if resolved.newbyteorder("=") in FLOAT_DTYPES and resolved not in FLOAT_DTYPES:
        order = "big" if resolved.byteorder == ">" else "little"
        return f"{resolved} ({order}-endian; accepted: native byte order)"
    return str(resolved)
