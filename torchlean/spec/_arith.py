"""Arithmetic generic over the element type of the attention specification.

The specification is written once and runs in two kinds of arithmetic:

* numpy floating arrays (``float16``/``float32``/``float64``/``longdouble``) compute in their
  own dtype with ordinary numpy operations;
* numpy ``object`` arrays whose elements are ``mpmath.mpf`` compute at mpmath's current working
  precision (``mpmath.mp.dps``; use ``mpmath.workdps(50)`` for 50 significant digits).

Only the handful of operations that differ between the two kinds live here: constants, ``exp``,
``log``, ``1/sqrt(d)``, finiteness, and the *selected* contraction ``selected_matmul`` that keeps
a non-finite value at a blocked position out of a product (``0 * nan`` is ``nan``, so a blocked
entry must be selected away, never multiplied by zero).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping
from typing import Any

import mpmath
import numpy as np
import numpy.typing as npt

from torchlean._checks import shown_briefly
from torchlean._torch_host import is_torch_tensor, torch_refusal, unreadable_element
from torchlean.spec.errors import SpecTypeError, SpecValueError

Array = npt.NDArray[Any]
BoolArray = npt.NDArray[np.bool_]

OBJECT = np.dtype(object)

_mp_exp = np.frompyfunc(mpmath.exp, 1, 1)
_mp_log = np.frompyfunc(mpmath.log, 1, 1)
_mp_isfinite = np.frompyfunc(mpmath.isfinite, 1, 1)


def _mpf_of(value: Any) -> Any:
    """``mpmath.mpf(value)``, exact for numpy scalars too, which mpmath refuses but ``np.float64``
    (review125 F1: ``np.float32(0.5)`` as a ``scale`` raised a bare ``TypeError``): a numpy integer
    through ``int``, a float16/float32 through ``float`` (every such value is a float64 one), a
    ``np.longdouble`` through its integer ratio, whose denominator is a power of two."""
    if isinstance(value, np.integer):
        return mpmath.mpf(int(value))
    if isinstance(value, np.float16 | np.float32):
        return mpmath.mpf(float(value))
    if isinstance(value, np.longdouble) and np.isfinite(value):
        numerator, denominator = value.as_integer_ratio()
        return mpmath.mpf(numerator) / denominator
    if isinstance(value, np.longdouble):  # NaN and the infinities are floats' too
        return mpmath.mpf(float(value))
    return mpmath.mpf(value)


_to_mpf = np.frompyfunc(_mpf_of, 1, 1)


def is_multiprecision(dtype: np.dtype[Any]) -> bool:
    """True for the mpmath path (object arrays of ``mpmath.mpf``)."""
    return dtype == OBJECT


def working_dtype(arrays: Mapping[str, Array]) -> np.dtype[Any]:
    """The dtype the specification computes in for the named input arrays.

    Floating inputs give ``numpy.result_type`` of them; any object input selects the mpmath path.

    Raises:
        SpecTypeError: an input is neither floating nor an object array (integer, bool, complex),
            naming the input, its dtype and the accepted kinds; an object array holding an entry
            that is not an ``mpmath.mpf`` (a Python int beyond int64, which numpy stores as an
            object, a float, a ``Fraction``: review239 F16, taken to the 50-digit path without a
            word before), naming the input, the entry and :func:`as_mpf_array`, which converts
            them.
    """
    has_object = False
    floating: list[np.dtype[Any]] = []
    for name, array in arrays.items():
        kind = array.dtype.kind
        if kind == "O":
            _check_mpf_entries(name, array)
            has_object = True
        elif kind == "f":
            floating.append(array.dtype)
        else:
            raise SpecTypeError(
                f"{name} has dtype {array.dtype}; accepted: a floating dtype (float16, float32, "
                "float64, longdouble) or an object array of mpmath.mpf"
            )
    if has_object:
        return OBJECT
    return np.result_type(*floating) if floating else np.dtype(np.float64)


def _check_mpf_entries(name: str, array: Array) -> None:
    """Refuse an object array ``name`` with an entry that is not an ``mpmath.mpf``. Each stored
    entry is looked at once: an axis of stride 0 (a broadcast view) is read at its first index.

    Raises:
        SpecTypeError: naming the input, the first such entry's index, value and type, and
            :func:`as_mpf_array`.
    """
    stored = array[(..., *(slice(0, 1) if stride == 0 else slice(None) for stride in array.strides))]
    found: tuple[tuple[int, ...], object] | None = None
    for index, entry in np.ndenumerate(stored):
        if isinstance(entry, mpmath.mpf):
            continue
        if found is None or not isinstance(entry, numbers.Real):  # a non-number is named first
            found = (index, entry)  # (review241 F2: a harmless float was named beside a None)
            if not isinstance(entry, numbers.Real):
                break
    if found is None:
        return
    index, entry = found
    at = f" at {index}" if stored.ndim else ""
    held = f"{shown_briefly(entry)} of type {type(entry).__name__}{at}"
    convert = (
        f"spec.as_mpf_array({name}) converts ints and floats, rounded to mpmath's working precision "
        "(mpmath.mp.dps)" if isinstance(entry, numbers.Real) else "it holds a value that is not a number"
    )
    raise SpecTypeError(
        f"{name} is an object array holding {held}, not an mpmath.mpf (accepted: a floating array, or "
        f"an object array of mpmath.mpf for the mpmath path: {convert})"
    )


def as_array(name: str, value: object) -> Array:
    """``np.asarray(value)`` for the array-like argument ``name`` of a spec function.

    Raises:
        SpecValueError: ragged nested sequences (``mask [[True], [True, False]] is not a
            rectangular array: ...``), which numpy refuses with a bare ``ValueError``.
        SpecTypeError: a torch tensor that requires grad, is on another device than the CPU (a
            meta one has no values) or is not strided (review239 F5), naming ``t.detach().cpu()``;
            one whose values numpy cannot hold (bfloat16), naming torch's reason.
    """
    if is_torch_tensor(value):
        refusal = torch_refusal(name, value)
        if refusal is not None:
            raise SpecTypeError(refusal)
        try:
            return np.asarray(value)
        except (RuntimeError, TypeError) as error:  # bfloat16, a conjugate bit: torch's .numpy()
            raise SpecTypeError(
                f"{name} is a torch tensor numpy cannot read: {error} (accepted: a numpy array or a CPU "
                "torch tensor of a numpy dtype, t.detach().cpu().to(torch.float64))"
            ) from None
    try:
        return np.asarray(value)
    except (RuntimeError, TypeError) as error:  # a list holding a torch tensor numpy cannot read
        raise SpecTypeError(  # (review241 F1: torch's own error came through)
            unreadable_element(value, name)
            or f"{name}: numpy cannot read {shown_briefly(value)}: {error} (accepted: a numpy array, nested "
            "lists of numbers, or a CPU torch tensor that does not require grad)"
        ) from None
    except ValueError as error:
        shown = repr(value)
        shown = shown if len(shown) <= 80 else shown[:77] + "..."
        raise SpecValueError(
            f"{name} {shown} is not a rectangular array: {error} (accepted: a numpy array or nested "
            "lists of one rectangular shape)"
        ) from error


def as_mpf_array(values: npt.ArrayLike) -> Array:
    """``values`` as an object array of ``mpmath.mpf`` rounded to mpmath's working precision.

    Floats convert exactly (then round to the working precision, which is exact at 53 bits or
    more). Raises ``SpecTypeError`` when an element cannot be converted, ``SpecValueError`` for
    ragged nested sequences.
    """
    array = as_array("values", values)
    try:
        with np.errstate(invalid="ignore"):  # NaN elements convert to mpf('nan')
            converted = _to_mpf(array)
    except (TypeError, ValueError) as error:
        raise SpecTypeError(
            f"cannot convert elements of dtype {array.dtype} to mpmath.mpf: {error}"
        ) from error
    return np.asarray(converted, dtype=object)


def to_working(array: Array, dtype: np.dtype[Any]) -> Array:
    """``array`` in the working ``dtype`` (a copy only when the dtype changes or mpmath is used)."""
    if is_multiprecision(dtype):
        return as_mpf_array(array)
    return array.astype(dtype, copy=False)


def scalar(value: Any, dtype: np.dtype[Any]) -> Any:
    """A scalar of the working type: ``dtype.type(value)`` or ``mpmath.mpf(value)`` (a
    ``Fraction``, which mpmath refuses, as its numerator over its denominator, rounded once at
    the working precision; a ``np.longdouble``, which mpmath refuses too, exactly through its
    integer ratio, as ``as_mpf_array`` converts longdouble elements)."""
    if is_multiprecision(dtype):
        if isinstance(value, numbers.Rational) and not isinstance(value, int | np.integer):
            # int(): a Fraction of numpy integers keeps them as its parts (review126 F3)
            return mpmath.mpf(int(value.numerator)) / int(value.denominator)
        return _mpf_of(value)
    return dtype.type(value)


def zero(dtype: np.dtype[Any]) -> Any:
    """0 in the working type."""
    return scalar(0, dtype)


def neg_inf(dtype: np.dtype[Any]) -> Any:
    """-inf in the working type (the identity of ``max``; never added to a score)."""
    return scalar("-inf", dtype) if is_multiprecision(dtype) else dtype.type(-np.inf)


def zeros(shape: tuple[int, ...], dtype: np.dtype[Any]) -> Array:
    """An array of zeros of the working type (mpf zeros on the mpmath path, not int 0)."""
    return np.full(shape, zero(dtype), dtype=dtype)


def inverse_sqrt(n: int, dtype: np.dtype[Any]) -> Any:
    """``1/sqrt(n)`` in the working type, or 1 when ``n == 0`` (anchor ``attentionScaleDenom``).

    float16/float32/float64 take the float64 value ``1.0 / math.sqrt(n)`` rounded once into
    ``dtype``, as torch's SDPA computes its default scale (``sdp::calculate_scale``, in double)
    and as the reference provider does (``_attention_scale``: ``q.dtype.type(1.0 /
    math.sqrt(d))``; ``masked_attention.default_scale`` is that float64 value): ``1 / sqrt``
    computed in float32 is 1 ulp off the correctly rounded value for d = 7 and 17. A
    ``longdouble`` computes in its own precision, which float64 would cut."""
    if n == 0:
        return scalar(1, dtype)
    if is_multiprecision(dtype):
        return 1 / mpmath.sqrt(n)
    if np.finfo(dtype).nmant <= np.finfo(np.float64).nmant:
        return dtype.type(1.0 / math.sqrt(n))
    return dtype.type(1) / np.sqrt(dtype.type(n))


def exp(array: Array) -> Array:
    """Elementwise ``exp`` in the array's arithmetic."""
    if is_multiprecision(array.dtype):
        return np.asarray(_mp_exp(array), dtype=object)
    return np.exp(array)


def log(array: Array) -> Array:
    """Elementwise natural ``log`` in the array's arithmetic (callers pass positive values)."""
    if is_multiprecision(array.dtype):
        return np.asarray(_mp_log(array), dtype=object)
    return np.log(array)


def isfinite(array: Array) -> BoolArray:
    """Elementwise finiteness as a boolean array."""
    if is_multiprecision(array.dtype):
        return np.asarray(_mp_isfinite(array), dtype=bool)
    return np.isfinite(array)


def is_finite_scalar(value: Any) -> bool:
    """Finiteness of one real scalar, judged in its own type, never through ``float``: an
    ``mpmath.mpf`` (any exponent), an integer or ``Fraction`` (always finite, of any size;
    ``float`` would overflow converting them), a numpy floating scalar (``np.isfinite``: a
    ``longdouble`` above float64's range is finite), else a float kind."""
    if isinstance(value, mpmath.mpf):
        return bool(mpmath.isfinite(value))
    if isinstance(value, numbers.Rational):
        return True  # ints and Fractions of any size; np.isfinite would overflow converting them
    if isinstance(value, np.floating):
        return bool(np.isfinite(value))
    return math.isfinite(float(value))


def all_finite(array: Array) -> bool:
    """True when every element is finite (vacuously true for an empty array)."""
    return bool(np.all(isfinite(array)))


def select(condition: BoolArray | None, array: Array) -> Array:
    """``array`` where ``condition`` holds, exact 0 elsewhere (selection, not multiplication)."""
    if condition is None:
        return array
    return np.where(condition, array, zero(array.dtype))


def selected_matmul(a: Array, allowed: BoolArray | None, b: Array) -> Array:
    """``c[..., i, p] = sum over j with allowed[..., i, j] of a[..., i, j] * b[..., j, p]``.

    Shapes: ``a`` (..., m, n), ``allowed`` broadcastable to ``a`` or None (everything allowed),
    ``b`` (..., n, p); leading axes broadcast as in ``numpy.matmul``. A pair (i, j) that is not
    allowed contributes nothing even when ``a[i, j]`` or row ``b[j]`` is NaN or infinite. When
    ``b`` is finite this is ``select(allowed, a) @ b``; otherwise the sum runs over ``j`` with the
    blocked terms selected away.
    """
    a_selected = select(allowed, a)
    if allowed is None or all_finite(b):
        return np.asarray(a_selected @ b)
    allowed_full = np.broadcast_to(allowed, a.shape)
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    total = zeros((*batch, a.shape[-2], b.shape[-1]), np.result_type(a, b))
    for j in range(a.shape[-1]):  # callers run under the ieee decorator: no numpy warnings
        term = a_selected[..., :, j : j + 1] * b[..., j : j + 1, :]
        total = total + np.where(allowed_full[..., :, j : j + 1], term, zero(total.dtype))
    return total


def sum_to_shape(gradient: Array, shape: tuple[int, ...]) -> Array:
    """Sum ``gradient`` over the axes that broadcasting added to an input of ``shape``.

    The reverse of numpy broadcasting: leading axes absent from ``shape`` are summed away, axes of
    length 1 in ``shape`` are summed with ``keepdims``. Used to return dq, dk, dv in the shapes of
    q, k, v when their leading (batch/head) axes were broadcast.
    """
    extra = gradient.ndim - len(shape)
    if extra:
        gradient = np.sum(gradient, axis=tuple(range(extra)))
    axes = tuple(i for i, size in enumerate(shape) if size == 1 and gradient.shape[i] != 1)
    if axes:
        gradient = np.sum(gradient, axis=axes, keepdims=True)
    return np.array(gradient)
