"""Pickling of mutable slotted dataclasses at every pickle protocol."""

from __future__ import annotations

from typing import Any

__all__ = ["PicklesAtEveryProtocol"]


class PicklesAtEveryProtocol:
    """A base for a ``dataclass(slots=True)`` that is not frozen, giving it its own
    ``__getstate__``: Python's default one (``object.__getstate__``: the instance ``__dict__``, if
    any, and every slot of the class and its bases, subclasses included).

    Pickle protocols 0 and 1 (``copyreg``) refuse a slotted class that does not define
    ``__getstate__`` ("a class that defines __slots__ without defining __getstate__ cannot be
    pickled"); ``dataclasses`` defines one for frozen slotted classes only (review77 F9). The state
    is the default one, so protocols 2 and later, ``copy.copy``, ``copy.deepcopy`` and pickles
    written before this base existed are unchanged (review82 F4, F5: a state of the class's own
    slots lost a subclass's attributes).
    """

    __slots__ = ()

    def __getstate__(self) -> Any:
        """``object.__getstate__(self)``."""
        return object.__getstate__(self)
