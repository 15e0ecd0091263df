"""argparse ``type`` helpers shared by the ``torchlean`` subcommands and the ``bench/`` scripts."""

from __future__ import annotations

import argparse
from collections.abc import Callable

__all__ = ["int_at_least"]


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
