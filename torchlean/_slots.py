"""Pickling of mutable slotted dataclasses at every pickle protocol."""

from __future__ import annotations

__all__ = ["PicklesAtEveryProtocol"]


class PicklesAtEveryProtocol:
    """A base for a ``dataclass(slots=True)`` that is not frozen, giving it its own
    ``__getstate__``/``__setstate__`` (the values of its slots).

    Pickle protocols 0 and 1 (``copyreg``) refuse a slotted class that does not define
    ``__getstate__`` ("a class that defines __slots__ without defining __getstate__ cannot be
    pickled"); ``dataclasses`` defines one for frozen slotted classes only. Protocols 2 and later,
    ``copy.copy`` and ``copy.deepcopy`` go through the same two methods (review77 F9).
    """

    __slots__ = ()

    def __getstate__(self) -> dict[str, object]:
        """The value of each slot, by name."""
        names: tuple[str, ...] = type(self).__slots__
        return {name: getattr(self, name) for name in names}

    def __setstate__(self, state: dict[str, object]) -> None:
        """Set each slot from :meth:`__getstate__`'s dictionary."""
        for name, value in state.items():
            object.__setattr__(self, name, value)
