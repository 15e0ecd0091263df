"""Argument helpers shared by the ``torchlean`` subcommands (argparse ``type`` functions, also
used by the ``bench/`` scripts, and the note on a ``--dataset`` name that is also a file)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable
from pathlib import Path

__all__ = ["int_at_least", "note_shadowed_dataset"]


def note_shadowed_dataset(name: str, shipped: tuple[str, ...]) -> None:
    """Print a ``note:`` on stderr when ``--dataset name`` is a shipped dataset and also a file or
    folder here: the shipped one is used; ``./name`` reads the file."""
    if name in shipped and Path(name).exists():
        print(
            f"note: --dataset {name} is the shipped dataset; for the file {name} here, give "
            f"--dataset ./{name}",
            file=sys.stderr,
        )


def int_at_least(
    minimum: int, refusal: str, *, not_int: str | None = None, below: int | None = None
) -> Callable[[str], int]:
    """An argparse ``type`` reading an integer ``>= minimum`` and, when ``below`` is given,
    ``< below`` (``int(text)``: blanks around it and underscores between digits allowed, as Python
    reads integers).

    ``refusal`` is the message, with ``{}`` standing for what was given: the repr of the text when
    it is not an integer, the integer when it is out of range; ``not_int``, when given, is the
    message for text that is not an integer instead (with ``{}`` for its repr). Examples:
    ``int_at_least(1, "expected a positive integer, got {}")``,
    ``int_at_least(0, "expected an integer in [0, 2**32), got {}", below=2**32)``.

    Raises:
        argparse.ArgumentTypeError: the message (argparse prints ``error: argument --n: <message>``).
    """

    def parse(text: str) -> int:
        try:
            value = int(text)
        except ValueError:
            raise argparse.ArgumentTypeError((not_int or refusal).format(repr(text))) from None
        if value < minimum or (below is not None and value >= below):
            raise argparse.ArgumentTypeError(refusal.format(value))
        return value

    return parse
