"""A note when predicted class labels would read as spreadsheet formulas (review67 F16): a label
beginning with ``=``, ``+``, ``-``, ``@``, a tab or a carriage return, from someone else's training
data, is written to the predictions CSV as the data wrote it, and Excel or LibreOffice may evaluate
it when the file is opened ("CSV injection", OWASP). The labels are not altered (the file reads
back as the checkpoint's classes); the note says which would be taken so."""

from __future__ import annotations

from collections.abc import Iterable

__all__ = ["FORMULA_STARTS", "formula_note"]

FORMULA_STARTS = ("=", "+", "-", "@", "\t", "\r")
"""The first characters OWASP's CSV-injection advice names."""


def _reads_as_formula(label: str) -> bool:
    """Whether ``label`` begins as a formula and is not a plain number (``-1``, ``+2.5``), which
    spreadsheets read as numbers."""
    if not label.startswith(FORMULA_STARTS):
        return False
    try:
        float(label)
    except ValueError:
        return True
    return False


def formula_note(labels: Iterable[str]) -> str:
    """A ``note:`` naming the predicted ``labels`` (each once) that spreadsheets may evaluate as
    formulas, at most three of them shown; ``""`` when there is none."""
    risky = sorted({label for label in labels if _reads_as_formula(label)})
    if not risky:
        return ""
    more = f", ... ({len(risky)} labels)" if len(risky) > 3 else ""
    shown = ", ".join(repr(label) for label in risky[:3]) + more
    return (f"note: predicted class labels begin with =, +, -, @, a tab or a carriage return ({shown}); "
            "spreadsheet programs may evaluate such cells as formulas when they open the predictions "
            "file: they are written as the training data wrote them")
