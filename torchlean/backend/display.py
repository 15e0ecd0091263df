"""How error messages print a name the user gave (an op, device, profile, model, optimizer,
dataset or dtype label, a CSV column name).

This module depends on nothing else in torchlean.
"""

from __future__ import annotations

import re
import sys

__all__ = ["LINE_LIMIT", "cut", "escaped", "name_shown", "path_shown"]


def name_shown(text: object) -> str:
    """``text`` as a one-line error message prints it: as given when it is a non-empty, printable
    string without blanks at its ends (``relu``), else its Python literal (``''``, ``' cpu'``,
    ``'a\\nb'``, ``3``), so that an empty or blank value stays visible and a newline cannot split
    the message. Messages of the original (``unknown device {value} (known targets: ...)``,
    anchor-backend.md §3.1) print ordinary values unchanged."""
    if isinstance(text, str) and text and text.isprintable() and text == text.strip():
        return text
    return _as_bytes(repr(text))


_SURROGATE_BYTE = re.compile(r"(?<!\\)((?:\\\\)*)\\udc([89a-f][0-9a-f])")
"""A backslash escape ``\\udcNN`` (NN from 80) not itself escaped: Python's surrogateescape stand-in
for the byte 0xNN of a command-line word or file name that is not UTF-8."""


def _as_bytes(shown: str) -> str:
    """``shown`` (backslash escapes as a Python literal writes them) with each escape of a lone
    surrogate that stands for a byte (``\\udcff``, how Python decodes the byte 0xff of a word
    that is not UTF-8) written as that byte, ``\\xff``, the byte the user typed (review197 F5)."""
    return _SURROGATE_BYTE.sub(r"\1\\x\2", shown)


def escaped(text: str) -> str:
    """``text`` with each character that is not printable (a line break, a tab, an escape
    character, a bidirectional override, a lone surrogate) written as Python's backslash escape
    of it (``\\n``, ``\\x1b``, ``\\u202e``, ``\\ud800``), as a Python literal writes it; ``text``
    itself when every character is printable. Such a text cannot split a line of a report or of a
    message, nor move the cursor, colour or retitle the terminal showing it (review67 F2; file
    names in messages too, review103 F4)."""
    if text.isprintable():
        return text
    return "".join(char if char.isprintable() else _as_bytes(repr(char)[1:-1]) for char in text)


def path_shown(path: str, encoding: str | None = None) -> str:
    """A file name as a line of text shows it: as given when each of its characters is printable
    and ``encoding`` (default: standard error's, where messages go) writes it; else in bash's ANSI-C
    quoting, ``$'...'``, which reads apart from a name holding the same characters literally and
    pastes into bash as the same name (review207 F8: ``q\\x80.npz`` and ``q`` + the byte 0x80
    printed alike). Inside it a byte of a name that is
    not UTF-8 (held as a lone surrogate, ``os.fsdecode``'s surrogateescape) is ``\\x80``, an ASCII
    character that is not printable its escape (``\\n``, ``\\x1b``), any other character that is
    not printable or that ``encoding`` cannot write ``\\u00e9`` / ``\\U0001f600``, and a
    backslash or a quote is escaped; so the name cannot split the line or reach the terminal."""
    if encoding is None:  # review218 F2: under an ASCII stderr, 'é' is \u00e9 inside $'...'
        encoding = getattr(sys.stderr, "encoding", None) or "utf-8"
    if all(_writable(char, encoding) for char in path):
        return path
    return "$'" + "".join(_ansi_c(char, encoding) for char in path) + "'"


def _writable(char: str, encoding: str) -> bool:
    """Whether ``char`` prints as itself: printable, and ``encoding`` writes it."""
    try:
        char.encode(encoding)
    except UnicodeEncodeError:
        return False
    return char.isprintable()


def _ansi_c(char: str, encoding: str) -> str:
    """``char`` inside bash's ``$'...'`` quoting (:func:`path_shown`)."""
    if char in "\\'":
        return "\\" + char
    if _writable(char, encoding):
        return char
    code = ord(char)
    if 0xDC80 <= code <= 0xDCFF:  # the byte 0x80-0xff of a name that is not UTF-8
        return f"\\x{code - 0xDC00:02x}"
    if code < 0x80:
        return repr(char)[1:-1]  # \n, \t, \x1b
    return f"\\u{code:04x}" if code <= 0xFFFF else f"\\U{code:08x}"


LINE_LIMIT = 400
"""The most characters of a checkpoint's text (a name, a setting, ``environment.argv``, the
dataset ``trained_on=`` names) or of a list of names that a report line shows; a longer one is
cut, with its length (review67 F7, review68 F6)."""


def cut(text: str, limit: int = LINE_LIMIT) -> str:
    """``text`` itself when it has at most ``limit`` characters; else its start, ``...`` and its
    length, ``limit`` characters in all: ``'xxxx... (50000000 characters)'``, so a crafted
    checkpoint's 50 MB dataset string prints a header line of some 400 characters. Cut a text
    already escaped (:func:`escaped`), whose length is what prints (review75 F5)."""
    if len(text) <= limit:
        return text
    length = f"... ({len(text)} characters)"
    return text[: max(0, limit - len(length))] + length
