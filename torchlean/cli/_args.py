"""Argument helpers shared by the ``torchlean`` subcommands (argparse ``type`` functions, also
used by the ``bench/`` scripts, and the note on a ``--dataset`` name that is also a file)."""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from torchlean import _delimiter
from torchlean._checks import DECIMAL_INTEGER, DECIMAL_NUMBER
from torchlean.backend.errors import TorchLeanError

__all__ = [
    "DELIMITER_HELP", "OneWay", "TypedNumber", "delimiter", "int_at_least", "json_record_instead",
    "note_shadowed_dataset", "number", "refuse_csv_options", "typed_number", "typed_repr", "with_typed",
]

DELIMITER_HELP = (
    "CSV only: the character between cells (default: ,): ';' (as European spreadsheets export), tab "
    "(also written \\t, or a literal tab) for TSV files, '|', or another single character but a quote, a "
    "line break, a digit, '.', '+', '-', 'e', 'E' or a blank other than tab (quote ; and | in the shell: "
    "--delimiter ';'); or whitespace (also written space): cells separated by runs of spaces and tabs, "
    "blanks at the ends of a line ignored, as numpy's savetxt and R's write.table write them. Quoted "
    "cells may hold it. Decimal commas are not read: under ';' a cell 1,5 is refused (write 1.5)"
)
"""The ``--delimiter`` help of ``train`` and ``predict``."""


class OneWay(argparse.BooleanOptionalAction):
    """``--flag``/``--no-flag`` (argparse's ``BooleanOptionalAction``, default ``None``) refusing
    both given: argparse took the last one, and a refusal advising ``--header`` then named the
    option given (review103 F7). The same one twice is taken."""

    def __call__(
        self,
        parser: argparse.ArgumentParser,
        namespace: argparse.Namespace,
        values: str | Sequence[Any] | None,
        option_string: str | None = None,
    ) -> None:
        before = getattr(namespace, self.dest, None)  # None until one of the two is given
        super().__call__(parser, namespace, values, option_string)
        if before is not None and before != getattr(namespace, self.dest):
            parser.error(f"{' and '.join(self.option_strings)} contradict each other: give one")


def note_shadowed_dataset(name: str, shipped: tuple[str, ...]) -> None:
    """Print a ``note:`` on stderr when ``--dataset name`` is a shipped dataset and also a file or
    folder here: the shipped one is used; ``./name`` reads the file."""
    if name in shipped and Path(name).exists():
        print(
            f"note: --dataset {name} is the shipped dataset; for the file {name} here, give "
            f"--dataset ./{name}",
            file=sys.stderr,
        )


def delimiter(text: str) -> str:
    """An argparse ``type`` for ``--delimiter``: the delimiter ``text`` spells (``tab`` and ``\\t``
    are a tab, ``whitespace`` and ``space`` the word ``"whitespace"``, runs of blanks; anything
    else is itself), one that :func:`torchlean.data.read_csv` accepts.

    Raises:
        argparse.ArgumentTypeError: ``';;' is refused: it is 2 characters, not one (accepted:
            ...)``, naming the command line's spellings.
    """
    value = _delimiter.parse_cli(text)
    why = _delimiter.fault(value)
    if why is not None:
        raise argparse.ArgumentTypeError(_delimiter.cli_refusal(text, why))
    return value


def refuse_csv_options(args: argparse.Namespace, dataset: str) -> None:
    """Refuse the CSV-only options given (``--label-column``, ``--task``, ``--header`` or
    ``--no-header``, ``--delimiter``; those ``args`` has) for the shipped ``dataset``, naming only
    those given.

    Raises:
        TorchLeanError: ``--header applies to CSV files only; iris is a shipped dataset``.
    """
    header = getattr(args, "header", None)
    given = [
        option
        for option, value in (
            ("--label-column", getattr(args, "label_column", None)),
            ("--task", getattr(args, "task", None)),
            ("--header" if header else "--no-header", header),
            ("--delimiter", getattr(args, "delimiter", None)),
        )
        if value is not None
    ]
    if given:
        verb = "applies" if len(given) == 1 else "apply"
        options = given[0] if len(given) == 1 else f"{', '.join(given[:-1])} and {given[-1]}"
        raise TorchLeanError(f"{options} {verb} to CSV files only; {dataset} is a shipped dataset")


def int_at_least(
    minimum: int, refusal: str, *, not_int: str | None = None, below: int | None = None
) -> Callable[[str], int]:
    """An argparse ``type`` reading an integer ``>= minimum`` and, when ``below`` is given,
    ``< below``: ASCII decimal digits with an optional sign and blanks around them
    (:data:`~torchlean._checks.DECIMAL_INTEGER`; not ``1_000`` or other scripts' digits, which
    Python's ``int`` reads, as CSV cells are read).

    ``refusal`` is the message, with ``{}`` standing for what was given: the repr of the text when
    it is not an integer, the integer when it is out of range; ``not_int``, when given, is the
    message for text that is not an integer instead (with ``{}`` for its repr). Examples:
    ``int_at_least(1, "expected a positive integer, got {}")``,
    ``int_at_least(0, "expected an integer in [0, 2**32), got {}", below=2**32)``.

    Raises:
        argparse.ArgumentTypeError: the message (argparse prints ``error: argument --n: <message>``).
    """

    def parse(text: str) -> int:
        if DECIMAL_INTEGER.fullmatch(text.strip()) is None:
            raise argparse.ArgumentTypeError((not_int or refusal).format(repr(text)))
        value = int(text)
        if value < minimum or (below is not None and value >= below):
            raise argparse.ArgumentTypeError(refusal.format(value))
        return value

    return parse


def number(text: str) -> float:
    """An argparse ``type`` reading a real number spelled as a CSV cell is
    (:data:`~torchlean._checks.DECIMAL_NUMBER`: ASCII digits, sign, point, exponent, ``inf``,
    ``nan``; blanks around it allowed); the option's own checks refuse what it cannot take.

    Raises:
        argparse.ArgumentTypeError: ``expected a number, got '1_0'``.
    """
    if DECIMAL_NUMBER.fullmatch(text.strip()) is None:
        raise argparse.ArgumentTypeError(f"expected a number, got {text!r}")
    return float(text)


class TypedNumber(float):
    """A number read from the command line (:func:`typed_number`) that keeps the text typed
    (``text``), so that a refusal of its value made after parsing (``--lr``, ``--momentum`` and
    ``--weight-decay``, refused by the optimizer) can quote it as argparse ``type`` functions
    quote theirs (:func:`with_typed`). It is a ``float`` everywhere else."""

    text: str


def typed_number(text: str) -> float:
    """:func:`number`, as a :class:`TypedNumber` keeping ``text``.

    Raises:
        argparse.ArgumentTypeError: ``expected a number, got '1_0'``.
    """
    value = TypedNumber(number(text))
    value.text = text
    return value


def typed_repr(value: float) -> str:
    """``value`` as a refusal names it: the text typed, quoted (``'0e5'``), for a
    :class:`TypedNumber`; else its ``repr``."""
    return repr(value.text) if isinstance(value, TypedNumber) else repr(value)


def with_typed(message: str, value: object) -> str:
    """``message``, a refusal of ``value`` ending ``got <repr of the float>`` (and what follows it:
    ``(inf in binary32)``), naming the value as typed when it is a :class:`TypedNumber`: ``got
    '1e400'``, not ``got inf``; ``got '0.99999999999999999'``, not ``got 1.0`` (review128 F6).
    Else ``message`` as it is."""
    if not isinstance(value, TypedNumber):
        return message
    head, got, tail = message.rpartition(", got ")
    shown = repr(float(value) + 0.0)  # as the optimizer's refusal names it (-0.0 stored as 0.0)
    if not got or not tail.startswith(shown):
        return message
    return f"{head}{got}{value.text!r}{tail[len(shown):]}"


def open_fraction(meaning: str = "") -> Callable[[str], float]:
    """An argparse ``type`` reading a number strictly between 0 and 1 (``--test-fraction``,
    ``--val-fraction``), spelled as :func:`number` reads it; ``meaning``, when given, follows the
    range in the refusal.

    Raises:
        argparse.ArgumentTypeError: ``expected a number in (0, 1) (0 and 1 excluded<meaning>), got
            'abc'``, for text that is not a number as for ``0``, ``1``, ``-0.1`` or ``nan``.
    """

    def parse(text: str) -> float:
        refusal = f"expected a number in (0, 1) (0 and 1 excluded{meaning}), got {text!r}"
        try:
            value = number(text)
        except argparse.ArgumentTypeError:
            raise argparse.ArgumentTypeError(refusal) from None
        if not 0.0 < value < 1.0:  # NaN too
            raise argparse.ArgumentTypeError(refusal)
        return value

    return parse


def json_record_instead(command: str) -> Callable[[argparse.Namespace, list[str]], str | None]:
    """A ``refuse_extras`` (:mod:`torchlean.cli`) for ``command`` (``train``, ``predict``), which
    has no ``--format``: given one (``--format json``, ``--format=json``), the refusal names
    ``--report-json``, what writes its run as JSON; ``None`` (argparse's generic message) for
    other words."""

    def refuse(_args: argparse.Namespace, extras: list[str]) -> str | None:
        if not any(word == "--format" or word.startswith("--format=") for word in extras):
            return None
        return (
            f"unrecognized arguments: {' '.join(extras)} (torchlean {command} has no --format: "
            f"--report-json PATH, or - for standard output, writes its record as JSON; torchlean {command} "
            "--help lists the accepted options)"
        )

    return refuse
