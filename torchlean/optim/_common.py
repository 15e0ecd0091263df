"""Shared pieces of the optimizers: the error type, the domain checks (the original's messages,
also after rounding to binary32) and the checks of parameter and gradient arrays."""

from __future__ import annotations

import math
import operator
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._tensor_data import _is_torch_tensor, masked_entries
from torchlean.backend.errors import TorchLeanError

Array = npt.NDArray[np.floating]


class OptimizerError(TorchLeanError, ValueError):
    """An optimizer hyper-parameter is out of its domain (message names the parameter)."""


class OptimizerCallError(OptimizerError, TypeError):
    """An optimizer record or factory called with arguments it cannot bind (an unknown keyword,
    too many positional arguments, torch's ``Adam(params, lr=...)`` order): an
    :class:`OptimizerError` that is also the ``TypeError`` Python raises for such a call, in the
    optimizers' words (review196 F1)."""


def _as_binary32(value: float) -> float:
    with np.errstate(over="ignore"):  # an overflow to inf is reported by the domain check
        return float(np.float32(value))


def _validate_both(checks: Sequence[tuple[float, str, str]]) -> None:
    """Run each (value, kind, message) check on the value and on its binary32 rounding; the error
    appends ``, got <value>`` (and the rounded value when only that fails)."""
    for suffix, convert in (("", float), (" after conversion to binary32", _as_binary32)):
        for value, kind, message in checks:
            v = convert(value)
            if kind == "nonneg":
                ok = math.isfinite(v) and v >= 0.0
            elif kind == "positive":
                ok = math.isfinite(v) and v > 0.0
            elif kind == "unit":
                ok = math.isfinite(v) and 0.0 <= v < 1.0
            elif kind == "closed_unit":
                ok = math.isfinite(v) and 0.0 <= v <= 1.0
            else:  # pragma: no cover - internal table
                raise AssertionError(kind)
            if not ok:
                got = f"{value!r}" if not suffix else f"{value!r} ({v!r} in binary32)"
                raise OptimizerError(f"optimizer: {message}{suffix}, got {got}")


def _lr_check(lr: float) -> tuple[float, str, str]:
    return (lr, "nonneg", "learning rate must be finite and nonnegative")


def _unit_check(value: float, name: str) -> tuple[float, str, str]:
    return (value, "unit", f"{name} must be finite and satisfy 0 <= {name} < 1")


def _eps_check(eps: float) -> tuple[float, str, str]:
    return (eps, "positive", "epsilon must be finite and positive")


_FLOAT_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
"""The parameter dtypes an optimizer accepts."""


def _type_name(value: object) -> str:
    """``value``'s class as messages name it (``list``, ``numpy.ndarray``, ``torchlean.tensor.Tensor``)."""
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def container_name(value: object) -> str:
    """How a refused container argument is named: its type (:func:`_type_name`), with ``(0-d)``
    for a 0-d array or tensor, which Python says it can iterate but cannot (review239 F4)."""
    return f"{_type_name(value)} (0-d)" if getattr(value, "ndim", None) == 0 else _type_name(value)


def _not_a_float_array(what: str, index: int, value: object, caller: str = "optimizer") -> str:
    """The refusal of a parameter or gradient that is not a numpy float array, naming its type."""
    got = f"numpy.ndarray of dtype {value.dtype}" if isinstance(value, np.ndarray) else _type_name(value)
    if got == "torchlean.tensor.Tensor":  # what to do with one (review58 F6)
        got += " (pass tensor.numpy(); for a model, model.parameters)" if what == "parameter" else (
            " (pass tensor.numpy())"
        )
    return (
        f"{caller}: {what} {index} must be a numpy float array (numpy.ndarray of dtype float16, "
        f"float32 or float64), got {got}"
    )


def is_single_value(value: object, *, arrays: bool = True) -> bool:
    """Whether ``value`` is one value where a sequence of them is expected, though Python can
    iterate it (or says it can): a torch tensor (as ``torch.optim`` refuses one), any value with
    ``ndim == 0`` (``iter`` of a 0-d array or tensor raises a bare ``TypeError``: review239 F4), a
    string, bytes or a mapping, and with ``arrays`` any numpy array (one parameter)."""
    return (
        isinstance(value, str | bytes | Mapping)
        or (arrays and isinstance(value, np.ndarray))
        or _is_torch_tensor(value)
        or getattr(value, "ndim", None) == 0
    )


def listed_entries(
    value: Iterable[Any], refusal: str, entry_fault: Callable[[int, Any], str | None] | None = None
) -> list[Any]:
    """``list(value)``, each entry checked by ``entry_fault`` (its refusal, or None) as it is read,
    so a long iterable is refused at its first bad entry, not listed first (review241 F4: 2**24
    entries took a second and most of a GB before entry 0 was looked at); an iterable with more
    entries than memory holds (a ``range`` or a sized view of ``2**40`` entries: ``list`` raised a
    bare, empty ``MemoryError``; review239 F2) is refused with ``refusal`` (the caller's refusal
    of ``value``) and its length.

    Raises:
        OptimizerError: ``entry_fault``'s refusal; ``<refusal> of length 1099511627776 (more
            entries than memory holds)``.
    """
    listed: list[Any] = []
    try:
        for index, entry in enumerate(value):
            fault = None if entry_fault is None else entry_fault(index, entry)
            if fault is not None:
                raise OptimizerError(fault)
            listed.append(entry)
        return listed
    except MemoryError:
        raise OptimizerError(
            f"{refusal} of length {operator.length_hint(value)} (more entries than memory holds)"
        ) from None


def _listed(what: str, value: object, caller: str = "optimizer") -> list[Any]:
    """``value`` (the parameters or gradients of ``create``/``step``) as a list: any iterable but
    a single array or tensor (0-d included), a string or a mapping (as ``torch.optim`` refuses a
    single tensor): :func:`is_single_value`.

    Raises:
        OptimizerError: ``optimizer: parameters must be a sequence of numpy arrays (one per
            parameter), got numpy.ndarray`` (``torch.Tensor``, ``int``, ...), or ``... got range of
            length 1099511627776 (more entries than memory holds)``.
    """
    if isinstance(value, list | tuple):
        return list(value)
    refusal = (
        f"{caller}: {what} must be a sequence of numpy arrays (one per parameter), "
        f"got {container_name(value)}"
    )
    if is_single_value(value) or not isinstance(value, Iterable):
        raise OptimizerError(refusal)
    entry = what.removesuffix("s")

    def fault(index: int, given: object) -> str | None:  # arrays (and absent gradients) pass on
        usable = isinstance(given, np.ndarray) or (given is None and entry == "gradient")
        return None if usable else _not_a_float_array(entry, index, given, caller)

    return listed_entries(value, refusal, fault)


def _plain_arrays(what: str, values: list[Any], caller: str = "optimizer") -> list[Any]:
    """``values`` with each numpy array subclass read as a plain ``numpy.ndarray`` (no copy), other
    entries as they are: an ``np.matrix``'s ``*`` is a matrix product, so RMSprop's and Adagrad's
    squared gradient was a matrix square (review179 F1). A masked array with a masked entry is
    refused, as :func:`torchlean.tensor` refuses it (the values under the mask are not data).

    Raises:
        OptimizerError: ``optimizer: gradient 0 is a masked array with 1 masked entry ...``.
    """
    plain: list[Any] = []
    for index, value in enumerate(values):
        if isinstance(value, np.ndarray) and type(value) is not np.ndarray:
            fault = masked_entries(value)
            if fault is not None:
                raise OptimizerError(f"{caller}: {what} {index} is {fault}")
            value = np.asarray(value)
        plain.append(value)
    return plain


def _require_like(what: str, index: int, value: object, like: Array, owner: str) -> None:
    """``value`` is a numpy array of ``like``'s shape and dtype.

    Raises:
        OptimizerError: ``optimizer: gradient 0 has shape (3,) and dtype float64, but parameter 0
            has shape (2,) and dtype float64`` (``owner`` words the second half), or the refusal
            of a value that is not a numpy array (:func:`_not_a_float_array`).
    """
    if not isinstance(value, np.ndarray):
        raise OptimizerError(_not_a_float_array(what, index, value))
    if value.shape != like.shape or value.dtype != like.dtype:
        raise OptimizerError(
            f"optimizer: {what} {index} has shape {value.shape} and dtype {value.dtype}, but {owner} "
            f"shape {like.shape} and dtype {like.dtype}"
        )
