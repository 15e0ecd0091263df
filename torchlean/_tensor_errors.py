"""The errors of :mod:`torchlean.tensor` and how their messages show a value.

:class:`TensorError`, :class:`TensorTypeError`, :class:`DeviceError` and :class:`DimensionError`
are raised by the tensor modules (:mod:`torchlean.tensor` and its private parts) and by
:mod:`torchlean.functional`; :mod:`torchlean.tensor` re-exports them, their public home, which
tracebacks and reprs name. :func:`_preview` and :func:`_type_name` are the shortened value and the
type name the messages print.

This module imports nothing from torchlean but ``torchlean.backend.errors`` and ``torchlean._checks``.
"""

from __future__ import annotations

from torchlean._checks import shown
from torchlean.backend.errors import TorchLeanError

__all__ = [
    "DeviceError",
    "DimensionError",
    "GradConversionError",
    "TensorError",
    "TensorIndexError",
    "TensorTypeError",
]


class TensorError(TorchLeanError, ValueError):
    """A tensor could not be created, converted or written (the message names the value)."""

    __module__ = "torchlean.tensor"  # its public home, as tracebacks and reprs name it


class TensorTypeError(TensorError, TypeError):
    """An argument of the wrong kind: a non-Tensor operand where a tensor is required, a
    non-numeric constant, or a non-integer axis or shape entry (also a ``TypeError``, as torch
    raises for these)."""

    __module__ = "torchlean.tensor"


class TensorIndexError(TensorError, IndexError):
    """An index out of its axis's range, or more indices than the tensor has axes: a
    :class:`TensorError` that is also the ``IndexError`` torch, numpy and Python sequences raise,
    so ported ``except IndexError`` code catches it (review202 F4)."""

    __module__ = "torchlean.tensor"


class GradConversionError(TensorError):
    """numpy asked for the values of a tensor that requires grad (``np.asarray(t)``), which would
    drop its tape history; the list reader words its own refusal from it."""

    __module__ = "torchlean.tensor"


class DeviceError(TensorError):
    """A device is unknown or unusable here, or one operation got tensors on different devices."""

    __module__ = "torchlean.tensor"


class DimensionError(TorchLeanError, IndexError):
    """:meth:`Tensor.size` was asked for an axis the tensor does not have (also an ``IndexError``,
    as torch raises)."""

    __module__ = "torchlean.tensor"


def _preview(value: object, limit: int = 60) -> str:
    """``repr(value)`` shortened to ``limit`` characters, for messages (an integer past Python's
    4300-digit repr limit by its size, :func:`torchlean._checks.shown`)."""
    try:
        text = repr(value)
    except ValueError:
        text = shown(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def _type_name(value: object) -> str:
    """A type's name as torch's argument parser prints it: ``bool``, ``float``, ``numpy.bool``."""
    kind = type(value)
    return kind.__name__ if kind.__module__ == "builtins" else f"{kind.__module__}.{kind.__qualname__}"
