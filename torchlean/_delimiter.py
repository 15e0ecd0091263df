"""CSV delimiters: which characters :func:`torchlean.data.read_csv` accepts as the one between
cells (or :data:`WHITESPACE`, runs of blanks), and how messages spell one (in prose, in Python, on
the command line)."""

from __future__ import annotations

import shlex

__all__ = [
    "BLANKS", "COMMA", "COMMON", "RULE", "TAB", "WHITESPACE", "cli", "cli_refusal", "fault", "holds",
    "joiner", "named", "one", "parse_cli", "python", "python_refusal", "use", "word",
]

COMMA = ","
"""The default delimiter."""

TAB = "\t"

WHITESPACE = "whitespace"
"""The delimiter that is no one character: cells separated by runs of :data:`BLANKS`, the blanks
at the ends of a line ignored (numpy's ``savetxt`` and R's ``write.table`` defaults; pandas'
``read_csv(sep=r"\\s+")``); double-quoted cells may hold blanks. The CLI also spells it ``space``."""

BLANKS = " \t"
"""The characters :data:`WHITESPACE` separates cells by: the space and the tab."""

_CLI_WHITESPACE = ("whitespace", "space")

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
    blank other than tab (``str.isspace``: cells are stripped of blanks), or the word
    :data:`WHITESPACE`."""
    if not isinstance(delimiter, str):
        return f"is of type {type(delimiter).__name__}, not a str"
    if delimiter == WHITESPACE:
        return None
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
    ``whitespace`` and ``space`` are :data:`WHITESPACE`, anything else is itself (checked by
    :func:`fault`)."""
    if text in _CLI_WHITESPACE:
        return WHITESPACE
    return TAB if text in ("tab", "\\t") else text


def python(delimiter: str) -> str:
    """``delimiter`` as Python writes it: ``';'``, ``'\\t'``."""
    return repr(delimiter)


def cli(delimiter: str) -> str:
    """``delimiter`` as a shell command line gives it to ``--delimiter``: ``tab``, ``';'``,
    ``'|'``, ``,``; a character that is not printable in bash's ``$'...'`` quoting."""
    if delimiter in (TAB, WHITESPACE):
        return "tab" if delimiter == TAB else WHITESPACE
    if not delimiter.isprintable():
        return f"$'{repr(delimiter)[1:-1]}'"
    return shlex.quote(delimiter)


def named(delimiter: str) -> str:
    """``delimiter`` as prose names several: ``commas``, ``tabs``, ``blanks`` (:data:`WHITESPACE`),
    else its literal ``';'``."""
    return {COMMA: "commas", TAB: "tabs", WHITESPACE: "blanks"}.get(delimiter, repr(delimiter))


def one(delimiter: str) -> str:
    """``delimiter`` as prose names one: ``a comma``, ``a tab``, ``blanks`` (:data:`WHITESPACE`:
    ``3 cells separated by blanks``), else its literal ``';'``."""
    return {COMMA: "a comma", TAB: "a tab", WHITESPACE: "blanks"}.get(delimiter, repr(delimiter))


def word(delimiter: str) -> str:
    """``delimiter`` as a noun after an article: ``comma``, ``tab``, ``blank``, else its literal
    ``';'``."""
    return {COMMA: "comma", TAB: "tab", WHITESPACE: "blank"}.get(delimiter, repr(delimiter))


def holds(delimiter: str, cell: str) -> bool:
    """Whether ``cell`` holds ``delimiter`` (for :data:`WHITESPACE`, one of :data:`BLANKS`)."""
    if delimiter == WHITESPACE:
        return any(blank in cell for blank in BLANKS)
    return delimiter in cell


def joiner(delimiter: str) -> str:
    """The text between cells when messages show a row read with ``delimiter``: itself, a space
    for :data:`WHITESPACE`."""
    return " " if delimiter == WHITESPACE else delimiter


def use(delimiter: str) -> str:
    """How to read a file with ``delimiter``, in Python and on the command line:
    ``pass delimiter=';' (CLI: --delimiter ';')``; for the comma, that it is the default."""
    if delimiter == COMMA:
        return "pass delimiter=',', the default (CLI: leave out --delimiter)"
    return f"pass delimiter={python(delimiter)} (CLI: --delimiter {cli(delimiter)})"


def python_refusal(delimiter: object, why: str) -> str:
    """The refusal of a ``delimiter`` argument :func:`fault` finds ``why`` wrong:
    ``delimiter must be one character such as ... ; got ';;', which is 2 characters, not one``;
    a space is pointed to :data:`WHITESPACE`."""
    return (
        f"delimiter must be one character such as ',' (the default), ';', '\\t' or '|', {RULE}, or "
        f"'whitespace' (runs of spaces and tabs); got {delimiter!r}, which {why}"
        f"{_pointer(delimiter, python=True)}"
    )


def cli_refusal(text: str, why: str) -> str:
    """The refusal of a ``--delimiter`` value ``text`` (as given) whose delimiter :func:`fault`
    finds ``why`` wrong, listing the command line's spellings: ``expected one character such as ,
    (the default), ';', '|' or tab ...; got ';;', which is 2 characters, not one``; a space is
    pointed to ``--delimiter whitespace``."""
    return (
        f"expected one character such as , (the default), ';', '|' or tab (also written \\t, or a literal "
        f"tab), {RULE}, or whitespace (also written space: runs of spaces and tabs); got {text!r}, which "
        f"{why}{_pointer(text, python=False)}"
    )


_PANDAS_BLANKS = frozenset({"\\s+", "[ \\t]+", " +"})
"""The regular expressions for runs of blanks that pandas' ``read_csv(sep=...)`` takes
(``r"\\s+"``), which :data:`WHITESPACE` reads here."""


def _pointer(delimiter: object, *, python: bool) -> str:
    """For a refused ``delimiter`` that means an accepted one spelled otherwise, how to spell it
    in Python (``python``) or on the command line: a space, ``space`` (in Python), a case variant
    of ``whitespace`` or ``space`` and pandas' ``sep=r"\\s+"`` are :data:`WHITESPACE`; ``tab``
    and ``\\t`` (backslash, t; in Python) or a case variant of ``tab`` are the tab; else
    ``""``."""
    if not isinstance(delimiter, str):
        return ""
    blanks = "delimiter='whitespace'" if python else "--delimiter whitespace"
    if delimiter == " ":
        return (
            f" (for cells separated by spaces, as numpy's savetxt and R's write.table write them: {blanks})"
        )
    if delimiter in _PANDAS_BLANKS:
        return f" (pandas' sep=r'{delimiter}', runs of blanks, is {blanks} here)"
    word = delimiter.strip().lower()
    tab = "delimiter='\\t', the tab character" if python else "--delimiter tab"
    for words, what, how in ((_CLI_WHITESPACE, "runs of blanks", blanks), (("tab", "\\t"), "a tab", tab)):
        if word not in words:
            continue
        if python and delimiter in words:
            return f" ({delimiter!r} is the command line's spelling: pass {how})"
        return f" (for {what} pass {how})"
    return ""
