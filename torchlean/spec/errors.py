"""Errors raised by the attention specification (``torchlean.spec``).

Both derive from :class:`torchlean.backend.errors.TorchLeanError` and from the matching builtin,
so ``except TypeError`` / ``except ValueError`` keep working for callers that do not know
torchlean.
"""

from __future__ import annotations

from torchlean.backend.errors import TorchLeanError


class SpecTypeError(TorchLeanError, TypeError):
    """An argument of the wrong kind: a non-boolean mask, an integer tensor, a non-integer size."""


class SpecValueError(TorchLeanError, ValueError):
    """An argument of the right kind with a bad value: mismatched shapes, a negative size or tile."""
