"""Checking an output file path before a command does its work (one-line errors, no traceback)."""

from __future__ import annotations

import argparse
from pathlib import Path

from torchlean.backend.errors import TorchLeanError

__all__ = ["check_writable", "output_path"]


def output_path(text: str) -> Path:
    """argparse ``type`` of an output-file option: the path, refusing the empty string (which
    ``Path`` would turn into ``.``, the current directory).

    Raises:
        argparse.ArgumentTypeError: ``expected a file path, got ''``.
    """
    if text == "":
        raise argparse.ArgumentTypeError("expected a file path, got ''")
    return Path(text)


def check_writable(path: Path, what: str) -> None:
    """Refuse ``path`` unless a file can be written there (creating missing parent folders). A
    file the probe had to create is removed again, so a run that fails later leaves no empty
    file behind; an existing file is left as it is (opened for appending, nothing written).

    Raises:
        TorchLeanError: ``cannot write <what> <path>: <reason>`` — it is a directory, a parent is
            a file, or the OS refuses (permissions, read-only file system).
    """
    if path.is_dir():
        raise TorchLeanError(f"cannot write {what} {path}: it is a directory")
    for parent in path.parents:
        if parent.exists():
            if not parent.is_dir():
                raise TorchLeanError(f"cannot write {what} {path}: {parent} is a file, not a directory")
            break
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        existed = path.exists()
        with path.open("a"):
            pass
        if not existed:
            path.unlink()
    except OSError as error:
        raise TorchLeanError(f"cannot write {what} {path}: {error.strerror or error}") from None
