"""The data rows of a CSV file held compactly: :class:`Rows`, a sequence of rows of cells that
keeps each row as one string (its cells joined by NUL, which no cell of a CSV file holds; a row
one of whose cells does is kept as its list of cells), and gives each row back as its list of
cells when asked.

A list of rows of Python strings costs about 100 bytes per cell (an object per cell, a pointer to
it, a list per row; review68 F1); one string per row costs about the row's text plus 50 bytes.
:meth:`torchlean.data.Table.columns` reads the rows a block at a time (:meth:`Rows.blocks`), so
the cells of the whole file never exist as objects at once.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from typing import overload

__all__ = ["Rows"]

_JOIN = "\x00"


def _packed(row: Sequence[str]) -> str | list[str]:
    """``row`` as :class:`Rows` keeps it: its cells joined by NUL, or the list of its cells when one
    holds a NUL (the joined text would not split back into them)."""
    text = _JOIN.join(row)
    return text if row and text.count(_JOIN) == len(row) - 1 else list(row)


def _cells(packed: str | list[str]) -> list[str]:
    return packed.split(_JOIN) if isinstance(packed, str) else list(packed)


class Rows(Sequence[list[str]]):
    """Rows of cells (each a non-empty list of strings), kept as one string per row.

    ``rows[r]`` is row ``r`` as a new list of its cells (changing it changes nothing here);
    ``rows[a:b]`` is a :class:`Rows` of those rows (sharing their strings). Rows are compared by
    their cells (``Rows(x) == x`` for a list of lists ``x``)."""

    __slots__ = ("_packed",)

    def __init__(self, rows: Iterable[Sequence[str]] = ()) -> None:
        self._packed: list[str | list[str]] = [_packed(row) for row in rows]

    @classmethod
    def _of(cls, packed: list[str | list[str]]) -> Rows:
        rows = cls()
        rows._packed = packed
        return rows

    def append(self, row: Sequence[str]) -> None:
        """Add ``row`` (a sequence of cells, at least one) at the end."""
        self._packed.append(_packed(row))

    def __len__(self) -> int:
        return len(self._packed)

    @overload
    def __getitem__(self, index: int) -> list[str]: ...

    @overload
    def __getitem__(self, index: slice) -> Rows: ...

    def __getitem__(self, index: int | slice) -> list[str] | Rows:
        if isinstance(index, slice):
            return Rows._of(self._packed[index])
        return _cells(self._packed[index])

    def __iter__(self) -> Iterator[list[str]]:
        return (_cells(packed) for packed in self._packed)

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Sequence) or isinstance(other, str) or len(other) != len(self):
            return False
        return all(mine == list(theirs) for mine, theirs in zip(self, other, strict=True))

    __hash__ = None  # type: ignore[assignment]  # mutable, as a list

    def __repr__(self) -> str:
        return f"Rows({list(self)!r})"

    def with_first(self, row: Sequence[str]) -> Rows:
        """These rows with the first replaced by ``row``."""
        return Rows._of([_packed(row), *self._packed[1:]])

    def without_first_cell(self) -> Rows:
        """Each row without its first cell (every row has two cells or more)."""
        return Rows._of([
            packed[packed.index(_JOIN) + 1:] if isinstance(packed, str) else packed[1:]
            for packed in self._packed
        ])

    def without_last_cell(self) -> Rows:
        """Each row without its last cell (every row has two cells or more)."""
        return Rows._of([
            packed[:packed.rindex(_JOIN)] if isinstance(packed, str) else packed[:-1]
            for packed in self._packed
        ])

    def lengths(self) -> Iterator[int]:
        """The cell count of each row, without splitting it."""
        return (
            packed.count(_JOIN) + 1 if isinstance(packed, str) else len(packed) for packed in self._packed
        )

    def blocks(self, size: int) -> Iterator[list[list[str]]]:
        """The rows as lists of at most ``size`` rows of cells, in order."""
        for start in range(0, len(self._packed), size):
            yield [_cells(packed) for packed in self._packed[start:start + size]]


def blocks(rows: Sequence[Sequence[str]], size: int) -> Iterator[Sequence[Sequence[str]]]:
    """``rows`` (a :class:`Rows` or any sequence of rows) in consecutive blocks of at most ``size``
    rows of cells."""
    if isinstance(rows, Rows):
        yield from rows.blocks(size)
        return
    for start in range(0, len(rows), size):
        yield rows[start:start + size]


def lengths(rows: Sequence[Sequence[str]]) -> Iterator[int]:
    """The cell count of each of ``rows`` (a :class:`Rows` without splitting its rows)."""
    return rows.lengths() if isinstance(rows, Rows) else (len(row) for row in rows)
