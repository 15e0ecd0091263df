"""The words before a command's name, as the ``torchlean`` parser's refusals read them.

The ``torchlean`` parser takes only ``--help`` and ``--version`` before the command's name; a
command's options follow its name, where they may stand anywhere among its words. An option given
before the name (``torchlean --format json capsules``) is refused naming the command that takes
it and the command line with it moved after the name (review128 F7), whichever error argparse met
first (``json`` read as the command, ``select``'s required ``--profiles`` missing after
``torchlean --format=json select``, or the option set aside as unrecognized: review131 F3). A
mistyped command name gets the nearest one (``torchlean trian``: ``; did you mean train?``).
Words the user typed are shown with their characters that are not printable escaped
(:func:`~torchlean.backend.display.escaped`), so that the refusal stays one line.
"""

from __future__ import annotations

import argparse
import ast
import re
import shlex
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from torchlean.backend.display import escaped
from torchlean.cli import negative_number

__all__ = ["command_refusal", "option_before_command"]

ONLY = "torchlean takes only --help and --version before the command's name"
"""Why an option given before the command's name is refused."""

_INVALID_COMMAND = re.compile(r"argument COMMAND: invalid choice: ('(?:[^'\\]|\\.)*'|\"(?:[^\"\\]|\\.)*\")")
"""argparse's refusal of the command's name, the name as a Python string literal (its ``repr``)."""


def command_refusal(message: str, commands: Sequence[str]) -> str:
    """argparse's refusal of the command's name (``message``: ``argument COMMAND: invalid choice:
    'trian' (...)``) with ``; did you mean train?`` for a command name mistyped
    (:func:`near_command`); any other ``message`` as it is."""
    given = _INVALID_COMMAND.match(message)
    if given is None:
        return message
    return message + near_command(str(ast.literal_eval(given[1])), commands)


def positional(word: str, parser: argparse.ArgumentParser) -> bool:
    """Whether ``parser`` reads ``word`` as a positional (the command's name, at the top level):
    one that does not start with ``-``, ``-`` itself (standard input), or a negative number
    (:func:`~torchlean.cli.negative_number`)."""
    return not word.startswith("-") or word == "-" or negative_number(parser, word)


def near_command(word: str, commands: Sequence[str]) -> str:
    """``; did you mean <command>?`` for a command name mistyped: ``-`` and ``_`` swapped
    (``attention_check``), another case or a close spelling (``trian``, ``inspct``), as
    :func:`~torchlean.backend.vocabulary.did_you_mean` finds it; else ``""``."""
    from torchlean.backend.vocabulary import did_you_mean

    return did_you_mean(word, commands, close=True)


def _action(parser: argparse.ArgumentParser, option: str) -> argparse.Action | None:
    """The action of ``parser`` that reads ``option`` (a word up to its ``=``): one of its
    options, or a ``--`` prefix of only one of them, as argparse reads ``--form`` for
    ``--format``; else ``None``."""
    actions = parser._option_string_actions
    if option in actions:
        return actions[option]
    if not option.startswith("--"):
        return None
    named = [name for name in actions if name.startswith(option)]
    return actions[named[0]] if len(named) == 1 else None


def _values(word: str, parsers: Sequence[argparse.ArgumentParser]) -> int | None:
    """How many words after the option ``word`` its parsers read as its value: none for a flag
    (``--quick``, ``--amsgrad``: argparse ``nargs`` 0) or an option given ``--format=json``, one
    for an option taking a value; ``None`` where that is not known: no parser defines it, those
    that do differ, or it takes a varying number (``--profiles NAME...``)."""
    option, equals, _ = word.partition("=")
    counts: set[int] = set()
    for parser in parsers:
        action = _action(parser, option)
        if action is None:
            continue
        if action.nargs is None:
            counts.add(0 if equals else 1)
        elif isinstance(action.nargs, int):
            counts.add(0 if equals and action.nargs == 1 else action.nargs)
        else:
            return None
    return counts.pop() if len(counts) == 1 else None


@dataclass(frozen=True, slots=True)
class _Head:
    """The words before the command's name, as the command's parser would read them."""

    options: tuple[tuple[int, int], ...]
    """Each command option there (not ``--help``, ``--version``): its index among the words and
    the number of words after it read as its value."""

    command: int | None
    """The index of the word read as the command's name: the first word that is no option nor an
    option's value, where every option before it has a known number of values (:func:`_values`);
    else the first word that names a command; ``None`` when there is none."""


def _head(
    words: Sequence[str], commands: Mapping[str, argparse.ArgumentParser], top: argparse.ArgumentParser
) -> _Head:
    """:class:`_Head` of ``words``, read by the ``torchlean`` parser ``top`` and its ``commands``'."""
    options: list[tuple[int, int]] = []
    known = True
    index = 0
    while index < len(words):
        word = words[index]
        name = word.partition("=")[0]
        if positional(word, top) and (known or word in commands):
            return _Head(tuple(options), index)
        if positional(word, top) or word == "--" or _action(top, name) is not None:
            index += 1  # a word after an option of unknown values, or --help, --version
            continue
        owners = [parser for parser in commands.values() if _action(parser, name) is not None]
        count = _values(word, owners)
        if count is None:
            known = False
            count = 0
        taken = 0
        while taken < count and index + 1 + taken < len(words) and positional(words[index + 1 + taken], top):
            taken += 1
        options.append((index, taken))
        index += 1 + taken
    return _Head(tuple(options), None)


def option_before_command(
    words: Sequence[str], commands: Mapping[str, argparse.ArgumentParser], top: argparse.ArgumentParser
) -> str | None:
    """The refusal of a command's option given before the command's name (``torchlean --format
    json capsules``); ``None`` when no option other than the ``torchlean`` parser's own (those of
    ``top``: ``--help``, ``--version``) stands there.

    With the command named, the refusal names the option and the command line with the words
    before the command moved after it (``torchlean capsules --format json``) when the command
    defines the option (or a unique prefix of it), else refuses it as unrecognized. With no
    command, it names the command (or the commands) that define the option, with the option and
    its value (a flag such as ``--quick`` takes none), and, where a word stands where the
    command's name goes (``torchlean --quick atention-check``), that it is not a command, with the
    nearest one (:func:`near_command`). An option no command defines is refused as unrecognized."""
    head = _head(words, commands, top)
    if not head.options:
        return None
    first, taken = head.options[0]
    option = words[first].partition("=")[0]
    shown = escaped(option)
    if head.command is not None and words[head.command] in commands:
        at, command = head.command, words[head.command]
        if _action(commands[command], option) is None:
            return (f"unrecognized arguments: {shown} ({ONLY}; torchlean {command} --help lists "
                    f"{command}'s options)")
        line = escaped(shlex.join(["torchlean", command, *words[:at], *words[at + 1:]]))
        return f"{shown} is an option of torchlean {command}, and {ONLY}: give it after ({line})"
    owners = [name for name, parser in commands.items() if _action(parser, option) is not None]
    if not owners:
        return f"unrecognized arguments: {shown} ({ONLY})"
    given = escaped(shlex.join(words[first:first + 1 + taken]))
    if len(owners) == 1:
        refusal = (f"{shown} is an option of torchlean {owners[0]}, and {ONLY}: give it after the "
                   f"command's name (torchlean {owners[0]} {given})")
    else:
        refusal = (f"{shown} is an option of a command, and {ONLY}: give it after a command's name "
                   f"(torchlean COMMAND {given}, COMMAND one of {', '.join(map(repr, owners))})")
    if head.command is None:
        return refusal
    word = words[head.command]
    return f"{refusal}; {word!r} is not a command{near_command(word, tuple(commands))}"
