"""How a refusal names a file that is not there: the name as given, escaped (one line, nothing
for the terminal), and quoted when blanks at either end would not show (review110 F5:
``dataset file not found: ok.csv `` looked like a false refusal of ``ok.csv``); and why a path
that is not found as a file may be there all the same (:func:`lookup_failure`)."""

from __future__ import annotations

import os

from torchlean.backend.display import path_shown

__all__ = ["lookup_failure", "missing_file_name"]


def missing_file_name(given: str) -> str:
    """``given`` (a path as the user wrote it) as a not-found message names it: as
    :func:`~torchlean.backend.display.path_shown` shows it (``$'q\\x80.npz'`` for a name that needs
    escapes: review207 F8); when it has blanks (spaces, tabs) at an end,
    quoted, followed by a word on them, naming the file without them when that exists
    (``'ok.csv ' (its name ends in a blank; ok.csv exists)``). Raises nothing: a path that
    cannot be checked is named without that word."""
    named = path_shown(given)
    stripped = given.strip(" \t")
    if stripped == given:
        return named
    if named == given:  # else quoted already
        named = f"'{named}'"
    ends = "starts and ends" if given[0] in " \t" and given[-1] in " \t" else (
        "starts" if given[0] in " \t" else "ends")
    try:
        found = bool(stripped) and os.path.exists(stripped)  # not Path: it drops a final "/"
    except OSError:  # a name too long, or not checkable here
        found = False
    other = f"; {path_shown(stripped)} exists" if found else ""
    return f"{named} (its name {ends} with a blank{other})"


def lookup_failure(path: str | os.PathLike[str]) -> str | None:
    """Why ``path`` cannot be looked up (``os.stat``, through symbolic links), when the reason is
    not that it is absent: the system's text (``Too many levels of symbolic links`` for a loop of
    links, which ``Path.exists()`` and ``os.path.exists()`` read as no file, so that a path ``ls``
    lists was refused as not found: review128 F4); None when it can be looked up or is not there
    (no such file, or a file named as a folder: ``ok.csv/x``). Raises nothing."""
    try:
        os.stat(path)
    except (FileNotFoundError, NotADirectoryError, ValueError):  # ValueError: a NUL in the name
        return None
    except OSError as error:
        return error.strerror or str(error)
    return None
