"""How error messages print a name the user gave (an op, device, profile, model, optimizer,
dataset or dtype label, a CSV column name).

This module depends on nothing else in torchlean.
"""

from __future__ import annotations

__all__ = ["name_shown"]


def name_shown(text: object) -> str:
    """``text`` as a one-line error message prints it: as given when it is a non-empty, printable
    string without blanks at its ends (``relu``), else its Python literal (``''``, ``' cpu'``,
    ``'a\\nb'``, ``3``), so that an empty or blank value stays visible and a newline cannot split
    the message. Messages of the original (``unknown device {value} (known targets: ...)``,
    anchor-backend.md §3.1) print ordinary values unchanged."""
    if isinstance(text, str) and text and text.isprintable() and text == text.strip():
        return text
    return repr(text)
