"""The command line's spelling of the data layer's hints: :mod:`torchlean.data` words a hint for
both callers, the Python argument first (``pass task='regression' (CLI: --task regression)``);
on the command line the option is what the user can pass, so :func:`cli_spelling` keeps it alone
(``pass --task regression``). The Python API's messages keep their own spelling."""

from __future__ import annotations

import re

__all__ = ["cli_spelling"]

_PASS = re.compile(r"\bpass [^()]*? \(CLI: (?P<cli>[^()]*)\)")
"""``pass header=False (CLI: --no-header)``, ``pass label_column=3 as an int (CLI: --label-column
-1 or --label-column y)``, ``pass delimiter=',', the default (CLI: leave out --delimiter)``."""

_INLINE = re.compile(r"\bpass [^(),]*, CLI: (?P<cli>[^()]*)\)")
"""Inside parentheses: ``(or, if ..., pass task='classification', CLI: --task classification)``."""

_OPTION = re.compile(r"\b\w+ \w+ \(CLI: (?P<cli>--[^()]*)\)")
"""An argument named with its value: ``dtype float64 (CLI: --dtype float64) reads up to ...``."""


def _pass(match: re.Match[str]) -> str:
    cli = match["cli"]
    return f"{cli}, the default" if cli.startswith("leave out ") else f"pass {cli}"


def cli_spelling(text: str) -> str:
    """``text`` with each hint worded for Python and the CLI (``pass task='regression' (CLI:
    --task regression)``) worded for the CLI only (``pass --task regression``; ``pass
    delimiter=',', the default (CLI: leave out --delimiter)`` is ``leave out --delimiter, the
    default``); text without such a hint is returned as it is."""
    if "CLI: " not in text:
        return text
    text = _PASS.sub(_pass, text)
    text = _INLINE.sub(lambda match: f"pass {match['cli']})", text)
    return _OPTION.sub(lambda match: match["cli"], text)
