"""A CSV file given where a checkpoint is expected (``predict DATA.csv``, ``inspect DATA.csv``,
``train --resume DATA.csv``): the checkpoint reader's error, then what the file is and what the
command takes there (review63 F5 for predict; review115 F6 for inspect and ``--resume``, which
gave the reader's error alone)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Iterator
from pathlib import Path

from torchlean import checkpoint, data
from torchlean._csv import BlankRowError
from torchlean.backend.errors import TorchLeanError
from torchlean.cli._output import shown_path

__all__ = ["csv_refusal", "csv_refused", "is_csv", "load", "load_digested"]


def is_csv(path: str | os.PathLike[str]) -> bool:
    """Whether ``path`` reads as a CSV file of two or more columns (:func:`torchlean.data.read_csv`;
    one refused only for a row of blank cells, two or more, is one: review128 F2)."""
    try:
        return len(data.read_csv(path).names) >= 2
    except BlankRowError:
        return True
    except TorchLeanError:
        return False


def csv_refusal(
    error: checkpoint.CheckpointError, path: str | Path, role: str, usage: str
) -> TorchLeanError | None:
    """The refusal of ``path``, given as ``role`` (``CHECKPOINT``, ``--resume``), that the
    checkpoint reader refused with ``error``, when it is a regular file that reads as CSV:
    ``{error}: {role} {path} is a CSV text file, not a checkpoint ({usage})``; else ``None``."""
    if not os.path.isfile(path) or not is_csv(path):
        return None
    shown = shown_path(path)
    return TorchLeanError(f"{error}: {role} {shown} is a CSV text file, not a checkpoint ({usage})")


@contextlib.contextmanager
def csv_refused(path: str | Path, role: str, usage: str) -> Iterator[None]:
    """Within the block, a :class:`~torchlean.checkpoint.CheckpointError` for ``path``, given as
    ``role``, that is a CSV file becomes :func:`csv_refusal`'s error, with ``usage``, what the
    command takes there; any other goes on as it is."""
    try:
        yield
    except checkpoint.CheckpointError as error:
        refusal = csv_refusal(error, path, role, usage)
        if refusal is None:
            raise
        raise refusal from None


def load(path: str | Path, role: str, usage: str) -> checkpoint.Checkpoint:
    """:func:`torchlean.checkpoint.load` of ``path``, given as ``role``.

    Raises:
        CheckpointError: ``path`` is not a readable checkpoint (naming it and why).
        TorchLeanError: it is not, and it is a CSV file: the reader's error and :func:`csv_refusal`'s
            clause, with ``usage``, what the command takes there.
    """
    with csv_refused(path, role, usage):
        return checkpoint.load(path)


def load_digested(path: str | Path, role: str, usage: str) -> tuple[checkpoint.Checkpoint, str]:
    """:func:`torchlean.checkpoint.load_digested` of ``path``, given as ``role``: the checkpoint and
    the SHA-256 of the bytes read (review207 F7, review237 F2).

    Raises:
        CheckpointError, TorchLeanError: as :func:`load`; the file was written in place while it
            was read.
    """
    with csv_refused(path, role, usage):
        return checkpoint.load_digested(path)
