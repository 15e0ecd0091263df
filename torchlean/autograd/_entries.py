"""Open entries of reusable context managers that set a context variable: ``Session`` and
``no_grad()``/``enable_grad()`` objects.

Each entry (``__enter__``) sets the variable and keeps the token that undoes it; the record of
open entries is itself a context variable, so it is per thread and per asyncio task, as the value
it restores is. One object may therefore be entered by several threads or by asyncio tasks whose
blocks overlap, each exit undoing its own context's entry (a per-thread record failed there:
review77 F3). A task starts with a copy of its creator's record; an entry made by the creator and
exited in the task cannot be undone there (its token belongs to the creator's context).
"""

from __future__ import annotations

from contextvars import ContextVar, Token
from typing import Generic, TypeVar

from torchlean.backend.vocabulary import LabelledEnum

__all__ = ["EntryRecord", "ExitOutcome"]

_T = TypeVar("_T")


class ExitOutcome(LabelledEnum):
    """What :meth:`EntryRecord.exit` found."""

    RESTORED = "restored"
    """The owner's last open entry in this context was undone."""
    NOT_ENTERED = "not-entered"
    """The owner has no open entry in this thread or task (never entered, already exited, or
    entered in another thread or task); nothing changed."""
    OTHER_CONTEXT = "other-context"
    """The owner's last entry was made in another context (the task's creator); nothing changed."""


class EntryRecord(Generic[_T]):
    """The open entries, per thread and asyncio task, of objects that set ``variable``.

    ``name`` names the record's own context variable (created once per record: make records at
    module level, as context variables should be)."""

    def __init__(self, variable: ContextVar[_T], name: str) -> None:
        self._variable = variable
        self._open: ContextVar[tuple[tuple[object, Token[_T]], ...]] = ContextVar(name, default=())

    def enter(self, owner: object, value: _T) -> None:
        """Set the variable to ``value`` in this context and record the entry as ``owner``'s."""
        token = self._variable.set(value)
        self._open.set((*self._open.get(), (owner, token)))

    def owners(self) -> tuple[object, ...]:
        """The owners of the open entries in this context, first entered first."""
        return tuple(owner for owner, _ in self._open.get())

    def exit(self, owner: object) -> ExitOutcome:
        """Undo ``owner``'s last open entry in this context: the variable gets back the value
        that entry found."""
        entries = self._open.get()
        for index in range(len(entries) - 1, -1, -1):
            if entries[index][0] is owner:
                try:
                    self._variable.reset(entries[index][1])
                except ValueError:  # a token of the creator's context, inherited by this task
                    return ExitOutcome.OTHER_CONTEXT
                self._open.set(entries[:index] + entries[index + 1 :])
                return ExitOutcome.RESTORED
        return ExitOutcome.NOT_ENTERED
