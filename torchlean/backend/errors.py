"""Exceptions raised by torchlean.

Every error torchlean raises on purpose derives from :class:`TorchLeanError` and carries the
verbatim message of the original TorchLean where one exists (seed chapter; anchor-backend.md §3.1).
This module depends on nothing else in torchlean.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING

if TYPE_CHECKING:  # for annotations only: the vocabulary imports this module
    from torchlean.backend.vocabulary import BackendOp


class TorchLeanError(Exception):
    """Base class of every error torchlean raises deliberately."""


class UnknownLabelError(TorchLeanError, ValueError):
    """A label (op, device, provider, profile, ...) that is not in the closed vocabulary.

    The message names the offending value and lists the accepted ones.
    """


class PlanningError(TorchLeanError):
    """Planning found no admissible capsule, or the registry is invalid.

    ``messages`` holds one message per failure (a plan reports every missing op at once);
    ``str(error)`` joins them with newlines. ``missing_ops`` names the ops no capsule was found
    for, in request order (empty for a registry error).
    """

    def __init__(self, messages: str | list[str], missing_ops: Sequence[BackendOp] = ()) -> None:
        self.messages: list[str] = [messages] if isinstance(messages, str) else list(messages)
        self.missing_ops: tuple[BackendOp, ...] = tuple(missing_ops)
        super().__init__("\n".join(self.messages))


class BindingError(TorchLeanError):
    """A handler does not match the capsule it is bound to (op, then provider, then device)."""


class GuardError(TorchLeanError, ValueError):
    """A runtime guard at a kernel boundary refused its input before any computation."""


class GuardTypeError(GuardError, TypeError):
    """A guard refused an operand or parameter of the wrong kind: a non-boolean mask, a float or
    bool where an integer parameter (axis, window size, stride) is meant, a non-real scalar.

    Still a :class:`GuardError` (and so a ``ValueError``); also a ``TypeError``, like the
    specification's ``SpecTypeError`` for the same input (``torchlean.spec.errors``).
    """


class SessionError(TorchLeanError):
    """An eager session or trainer could not be opened or could not execute an op."""


class SessionTypeError(SessionError, TypeError):
    """A session was asked for with a profile that is neither a profile name nor a profile."""
