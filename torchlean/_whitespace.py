"""Rows of a file whose cells are separated by runs of blanks (spaces and tabs), as numpy's
``savetxt`` and R's ``write.table`` write them by default: the reader of
:func:`torchlean.data.read_csv` under ``delimiter="whitespace"``.

Mirrors pandas' ``read_csv(sep=r"\\s+")`` (and ``np.loadtxt``): blanks at the ends of a line are
ignored, so a line's cells are its runs of non-blanks; a cell that starts with a double quote runs
to the closing quote and may hold blanks, line breaks and doubled quotes (``""`` for one ``"``), as
R quotes strings and header names; inside a quoted cell a backslash before a quote (``\\"``) is
one quote too, as R's ``write.table`` escapes a quote by default (``qmethod = "escape"``; the
doubled quote is its ``qmethod = "double"``; pandas reads ``\\"`` so given
``escapechar="\\\\"``), and another backslash is text (``write.table`` escapes only quotes, so
a string ending in a backslash, written ``"a\\"``, is misread: its closing quote is taken as an
escaped one). What follows a closing quote up to the next blank is part of the cell, and a quote
inside an unquoted cell is text, as Python's ``csv`` reads quotes when not strict. An empty quoted
cell ``""`` is a cell.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator

__all__ = ["OpenQuote", "Record", "rows"]

Record = tuple[list[str], int, int]
"""A row's cells, and the file lines (from 1) it starts and ends on."""

_CELLS = re.compile(r"[^ \t\r\n]+")
_BLANKS = " \t"
_LINE_ENDS = "\r\n"


class OpenQuote(Exception):
    """A quote left open at the end of the file: the row that holds it starts on line ``start``,
    and the file ends on line ``end``."""

    def __init__(self, start: int, end: int) -> None:
        super().__init__(start, end)
        self.start = start
        self.end = end


def rows(lines: Iterable[str]) -> Iterator[Record]:
    """The rows of ``lines`` (a text file's lines, each with its line break, as a file opened
    with ``newline=""`` gives them), each with the lines it starts and ends on; a line without a
    cell gives no row.

    Raises:
        OpenQuote: a quoted cell not closed by the end of the file.
    """
    cells: list[str] = []
    cell: list[str] | None = None  # the cell being read, None between cells
    quoted = False  # inside a quoted cell
    start = number = 0
    for number, line in enumerate(lines, start=1):
        if not quoted and '"' not in line:  # the common case: no quote to follow
            found = _CELLS.findall(line)
            if found:
                yield found, number, number
            continue
        if not cells and cell is None:
            start = number
        i = 0
        while i < len(line):
            char = line[i]
            i += 1
            if quoted:
                if char == "\\" and line[i:i + 1] == '"':  # R's escaped quote: one
                    assert cell is not None
                    cell.append('"')
                    i += 1
                elif char != '"':
                    assert cell is not None
                    cell.append(char)
                elif line[i:i + 1] == '"':  # a doubled quote is one
                    assert cell is not None
                    cell.append('"')
                    i += 1
                else:
                    quoted = False
            elif char in _BLANKS or char in _LINE_ENDS:
                if cell is not None:
                    cells.append("".join(cell))
                    cell = None
                if char in _LINE_ENDS and cells:
                    yield cells, start, number
                    cells = []
            elif cell is None:
                if not cells:
                    start = number
                cell = []
                quoted = char == '"'
                if not quoted:
                    cell.append(char)
            else:
                cell.append(char)
    if quoted:
        raise OpenQuote(start, number)
    if cell is not None:  # the last line had no line break
        cells.append("".join(cell))
    if cells:
        yield cells, start, number
