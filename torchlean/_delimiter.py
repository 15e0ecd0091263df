"""CSV delimiters: which characters :func:`torchlean.data.read_csv` accepts as the one between
cells, and how messages spell one (in prose, in Python, on the command line)."""

from __future__ import annotations

import shlex

__all__ = [
    "COMMA", "COMMON", "RULE", "TAB", "cli", "cli_refusal", "fault", "named", "one", "parse_cli", "python",
    "python_refusal", "use", "word",
]

COMMA = ","
"""The default delimiter."""

TAB = "\t"

COMMON: tuple[str, ...] = (COMMA, ";", TAB, "|")
"""The separators a file read as one column is checked for (the separator hint), ties going to
the first."""

RULE = (
    "not a quote (\" or '), a line break, a digit, '.', '+', '-', 'e', 'E' or a blank other than tab, "
    "which would clash with quoting, rows or numbers"
)
"""The rule of :func:`fault`, as refusals state it."""

_IN_NUMBERS = ".+-eE"


def fault(delimiter: object) -> str | None:
    """Why ``delimiter`` cannot separate CSV cells (``"is 2 characters"``, ``"is a digit, which
    numbers are written with"``), or ``None`` when it can: one character that is not a quote,
    a line break (``\\n``, ``\\r``), an ASCII or other digit, ``.``, ``+``, ``-``, ``e``, ``E``, or a
    blank other than tab (``str.isspace``: cells are stripped of blanks)."""
    if not isinstance(delimiter, str):
        return f"is of type {type(delimiter).__name__}, not a str"
    if len(delimiter) != 1:
        return "is empty" if not delimiter else f"is {len(delimiter)} characters, not one"
    if delimiter in "\"'":
        return "is a quote, which encloses cells"
    if delimiter in "\r\n":
        return "is a line break, which ends rows"
    if delimiter.isdigit():
        return "is a digit, which numbers are written with"
    if delimiter in _IN_NUMBERS:
        return "is written in numbers (a point, a sign or an exponent)"
    if delimiter.isspace() and delimiter != TAB:
        return "is a blank other than tab, which is stripped around cells"
    return None


def parse_cli(text: str) -> str:
    """The delimiter a ``--delimiter`` value spells: ``tab`` and ``\\t`` (backslash, t) are a tab,
    anything else is itself (checked by :func:`fault`)."""
    return TAB if text in ("tab", "\\t") else text


def python(delimiter: str) -> str:
    """``delimiter`` as Python writes it: ``';'``, ``'\\t'``."""
    return repr(delimiter)


def cli(delimiter: str) -> str:
    """``delimiter`` as a shell command line gives it to ``--delimiter``: ``tab``, ``';'``,
    ``'|'``, ``,``; a character that is not printable in bash's ``$'...'`` quoting."""
    if delimiter == TAB:
        return "tab"
    if not delimiter.isprintable():
        return f"$'{repr(delimiter)[1:-1]}'"
    return shlex.quote(delimiter)


def named(delimiter: str) -> str:
    """``delimiter`` as prose names several: ``commas``, ``tabs``, else its literal ``';'``."""
    return {COMMA: "commas", TAB: "tabs"}.get(delimiter, repr(delimiter))


def one(delimiter: str) -> str:
    """``delimiter`` as prose names one: ``a comma``, ``a tab``, else its literal ``';'``."""
    return {COMMA: "a comma", TAB: "a tab"}.get(delimiter, repr(delimiter))


def word(delimiter: str) -> str:
    """``delimiter`` as a noun after an article: ``comma``, ``tab``, else its literal ``';'``."""
    return {COMMA: "comma", TAB: "tab"}.get(delimiter, repr(delimiter))


def use(delimiter: str) -> str:
    """How to read a file with ``delimiter``, in Python and on the command line:
    ``pass delimiter=';' (CLI: --delimiter ';')``; for the comma, that it is the default."""
    if delimiter == COMMA:
        return "pass delimiter=',', the default (CLI: leave out --delimiter)"
    return f"pass delimiter={python(delimiter)} (CLI: --delimiter {cli(delimiter)})"


def python_refusal(delimiter: object, why: str) -> str:
    """The refusal of a ``delimiter`` argument :func:`fault` finds ``why`` wrong:
    ``delimiter must be one character such as ... ; got ';;', which is 2 characters, not one``."""
    return (
        f"delimiter must be one character such as ',' (the default), ';', '\\t' or '|', {RULE}; got "
        f"{delimiter!r}, which {why}"
    )


def cli_refusal(text: str, why: str) -> str:
    """The refusal of a ``--delimiter`` value ``text`` (as given) whose delimiter :func:`fault`
    finds ``why`` wrong, listing the command line's spellings: ``expected one character such as ,
    (the default), ';', '|' or tab ...; got ';;', which is 2 characters, not one``."""
    return (
        f"expected one character such as , (the default), ';', '|' or tab (also written \\t, or a literal "
        f"tab), {RULE}; got {text!r}, which {why}"
    )
