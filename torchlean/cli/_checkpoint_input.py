"""A CSV file given where a checkpoint is expected (``predict DATA.csv``, ``inspect DATA.csv``,
``train --resume DATA.csv``): the checkpoint reader's error, then what the file is and what the
command takes there (review63 F5 for predict; review115 F6 for inspect and ``--resume``, which
gave the reader's error alone)."""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from pathlib import Path

from torchlean import checkpoint, data, provenance
from torchlean._csv import BlankRowError
from torchlean.backend.errors import TorchLeanError
from torchlean.cli._output import shown_path

__all__ = ["csv_refusal", "digested", "is_csv", "load"]


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


def load(path: str | Path, role: str, usage: str) -> checkpoint.Checkpoint:
    """:func:`torchlean.checkpoint.load` of ``path``, given as ``role``.

    Raises:
        CheckpointError: ``path`` is not a readable checkpoint (naming it and why).
        TorchLeanError: it is not, and it is a CSV file: the reader's error and :func:`csv_refusal`'s
            clause, with ``usage``, what the command takes there.
    """
    try:
        return checkpoint.load(path)
    except checkpoint.CheckpointError as error:
        refusal = csv_refusal(error, path, role, usage)
        if refusal is None:
            raise
        raise refusal from None


def digested(
    path: str | Path, read: Callable[[], checkpoint.Checkpoint]
) -> tuple[checkpoint.Checkpoint, str]:
    """``read()`` (the checkpoint at ``path``) with the SHA-256 of the bytes it read: the file is
    digested before and after the read, and the two must agree, so that a report never pairs one
    file's contents with another's digest (review207 F7: another process's ``--save`` may replace
    the file between the reads).

    Raises:
        TorchLeanError: the digests differ (naming the file; run again once it is written), or the
            file read cannot be digested afterwards; what ``read`` raises.
    """
    before: str | None = None  # not a readable regular file: read() says why
    if os.path.isfile(path):  # a FIFO is not opened here: it would wait for a writer
        with contextlib.suppress(TorchLeanError):
            before = provenance.file_sha256(path)
    saved = read()
    after = provenance.file_sha256(path)
    if before != after:
        raise TorchLeanError(
            f"checkpoint {shown_path(path)} changed while it was read (replaced by another process, such as "
            "a torchlean train --save?), so what was read and its digest may be of different files; run "
            "the command again once it is written"
        )
    return saved, after
