"""Integer, real and axis parameters of the functional ops: Python or numpy numbers, checked
and converted before dispatch (the module docstring of :mod:`torchlean.functional` states the
rule: floats and bools are not truncated, axes are never wrapped)."""

from __future__ import annotations

import itertools
import numbers
from collections.abc import Iterable, Mapping, MappingView, Sequence, Set, Sized
from typing import TypeAlias, TypeVar

import numpy as np

from torchlean._checks import is_int
from torchlean._limits import MAX_RANK
from torchlean._tensor_args import _one_spelling, _Unset
from torchlean.backend.providers.reference.guards import axis_in_range
from torchlean.tensor import BoolLike, IntLike, TensorError, TensorTypeError, _preview

Axes: TypeAlias = "IntLike | Sequence[IntLike] | None"
"""An axis argument: an int (Python or numpy, :data:`torchlean.tensor.IntLike`), a sequence of
them, or None."""
_V = TypeVar("_V")
IntOrTuple: TypeAlias = "IntLike | Sequence[IntLike]"
"""A size argument: an int (Python or numpy) or a sequence of them."""


def _int(fn: str, name: str, value: object) -> int:
    """``value`` as an int when it is a Python or numpy integer (bool excluded, as the kernel
    guards do).

    Raises:
        TensorTypeError: ``<fn>: <name> must be an integer; got 1.5 of type float ...``.
    """
    if type(value) is int:  # the common case, without the numbers.Integral ABC check
        return value
    if not is_int(value):
        raise TensorTypeError(
            f"{fn}: {name} must be an integer; got {_preview(value)} of type {type(value).__name__} "
            "(accepted: int or a numpy integer; floats are not truncated and bools are refused)"
        )
    return int(value)


def _ints(fn: str, name: str, values: object) -> tuple[int, ...]:
    """A sequence of integers (each checked by :func:`_int`) as a tuple, of at most
    :data:`~torchlean._limits.MAX_RANK` entries (a shape, a permutation, axes, per-axis starts).

    Raises:
        TensorTypeError: ``values`` is not a sequence (a 0-d array or tensor included: iterating
            one raised "iteration over a 0-d array"), is a set or a mapping (no order: ``{2, 0,
            1}`` was read in hash order, so ``tl.permute(x, {2, 0, 1})`` was the identity;
            review239 F1, F4), or an entry is not an integer.
        TensorError: more than :data:`~torchlean._limits.MAX_RANK` entries, counted before any is
            read (review239 F2).
    """
    kind = type(values).__name__
    zero_d = getattr(values, "shape", 0) == ()  # a 0-d array or tensor: iterating it raises
    if isinstance(values, str | bytes) or not isinstance(values, Iterable) or zero_d:
        raise TensorTypeError(
            f"{fn}: {name} must be a sequence of integers; got {_preview(values)} of type {kind}"
        )
    if isinstance(values, Set | Mapping | MappingView):
        raise TensorTypeError(
            f"{fn}: {name} must be a sequence of integers; got {_preview(values)} of type {kind}, which has "
            "no order (accepted: a tuple or a list)"
        )
    if isinstance(values, Sized):
        entries: Iterable[object] = values
        count, told = len(values), str(len(values))
    else:  # a generator: no more than one entry past the bound is drawn
        entries = list(itertools.islice(values, MAX_RANK + 1))
        count, told = len(entries), f"more than {MAX_RANK}"
    if count > MAX_RANK:
        raise TensorError(
            f"{fn}: {name} has {told} entries; got {_preview(values)} (accepted: at most {MAX_RANK}, "
            "numpy's most axes)"
        )
    return tuple(_int(fn, f"{name}[{i}]", v) for i, v in enumerate(entries))


def _real(fn: str, name: str, value: object) -> float:
    """``value`` as a float when it is a real number (bool excluded, as the kernel guards do).

    Raises:
        TensorTypeError: ``<fn>: <name> must be a real number; got '2' of type str ...``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TensorTypeError(
            f"{fn}: {name} must be a real number; got {_preview(value)} of type {type(value).__name__} "
            "(accepted: int, float or a numpy number; strings are not parsed and bools are refused)"
        )
    try:
        return float(value)
    except OverflowError as exc:
        raise TensorError(
            f"{fn}: {name} = {_preview(value)} does not fit a float64 (accepted: real numbers of "
            f"magnitude at most {np.finfo(np.float64).max:.7g})"
        ) from exc


def _axis(fn: str, name: str, value: object, ndim: int) -> int:
    """``value`` as an axis of a rank-``ndim`` input, normalised to ``[0, ndim)``; out-of-range
    axes are refused, never wrapped (:func:`~torchlean.backend.providers.reference.guards.axis_in_range`,
    the reference guards' rule and wording).

    Raises:
        TensorTypeError: ``value`` is not an integer (:func:`_int`).
        GuardError: ``<fn>: axis 5 is out of range for a rank-2 input (accepted: an integer in
            [-2, 1])``.
    """
    return axis_in_range(fn, name, _int(fn, name, value), ndim)


def _axes(fn: str, axis: Axes) -> int | tuple[int, ...] | None:
    if axis is None:
        return None
    if is_int(axis):
        return int(axis)
    # a 0-d array or tensor (numpy's, torch's, torchlean's) is iterable to Python but iterating it
    # raises "iteration over a 0-d tensor": it goes to _int, which names it (review236 F1)
    zero_d = getattr(axis, "shape", None) == ()
    if isinstance(axis, Iterable) and not isinstance(axis, str | bytes) and not zero_d:
        return _ints(fn, "axis", axis)
    return _int(fn, "axis", axis)


def _axis_spelling(fn: str, axis: _V | _Unset, dim: _V | _Unset, default: _V) -> _V:
    """The axis argument of ``fn`` given as ``axis`` (positional or keyword) or as torch's keyword
    ``dim`` (README: a torch call either means what it means in torch or is refused), else
    ``default``.

    Raises:
        TensorTypeError: both were given (``softmax: got both dim=0 and axis=1; ...``).
    """
    return _one_spelling(fn, "dim", dim, "axis", axis, default)


def _required_axis(fn: str, axis: _V | _Unset, dim: _V | _Unset) -> _V:
    """:func:`_axis_spelling` for an op whose axis has no default (``gather``, ``logsumexp``).

    Raises:
        TensorTypeError: neither was given, or both were.
    """
    if isinstance(dim, _Unset):
        if isinstance(axis, _Unset):
            raise TensorTypeError(f"{fn}: missing its axis argument (give axis=, or torch's dim=)")
        return axis
    return _one_spelling(fn, "dim", dim, "axis", axis, dim)


def _keepdims_spelling(fn: str, keepdims: BoolLike | _Unset, keepdim: BoolLike | _Unset) -> BoolLike:
    """``keepdims`` or torch's keyword ``keepdim`` (default False).

    Raises:
        TensorTypeError: both were given.
    """
    default: BoolLike = False  # typed as the union, so that mypy infers BoolLike, not object
    return _one_spelling(fn, "keepdim", keepdim, "keepdims", keepdims, default)
