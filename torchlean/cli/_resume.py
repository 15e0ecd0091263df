"""``torchlean train --resume CKPT``: continue a run from the checkpoint its ``--save`` wrote, bit
for bit as if it had not stopped; and Ctrl-C under ``--save``, which stops a run at the end of the
epoch it is in and saves it so.

``--save`` records the run's training state in the checkpoint
(:class:`torchlean.checkpoint.TrainingState`): the optimizer's ``state_dict()`` (every buffer and
step count), the epochs done and the run's planned total (``--epochs``), and its settings: every
option of ``torchlean train`` but :data:`FREE`, as the text its parser reads back to the same value
(``--lr 0.005`` as ``"0.005"``, ``--lr-schedule`` as its spec, a flag as a bool, an option not
given and without a default as ``None``), plus a SHA-256 digest of the split data
(:func:`data_digest`).

``--resume`` loads it, refuses an option given on the command line whose value differs from the
checkpoint's (all of them at once, naming both values; the options of :data:`FREE` excepted,
``--dataset`` naming another CSV file, whose data must then hash as the run's did: a moved file,
and ``--delimiter`` naming another delimiter, under the same condition: the run's data saved
with another separator),
puts the checkpoint's settings in place of the others, and, once the trainer is built, loads the
weights and the optimizer state and sets :attr:`Trainer.epochs_done
<torchlean.trainer.Trainer.epochs_done>`, so epoch numbering, shuffling (seeded by the epoch),
epoch-wise and per-step schedules, clipping and parameter groups continue exactly.
``--epochs N`` is the run's total (torch Lightning's ``max_epochs``), by default the checkpoint's
total; it must exceed the epochs done. ``cosine`` and ``warmup_cosine`` anneal over the run's
total, so for them a resumed run keeps the checkpoint's total: another ``N`` would change the
rates of the remaining epochs (and not of those already run), a run no uninterrupted one equals.

A setting the checkpoint lacks takes the option's default (an option newer than the
checkpoint: ``--test-fraction`` 0.2, the split of a run saved before that option), unless every
checkpoint ``--save`` has written records it (:data:`ALWAYS_RECORDED`: ``--lr``, ``--seed``, ...),
which a hand edit removed: that is refused, as is a setting this torchlean does not know. The
trainer session's random counter
(:attr:`Trainer.random_counter <torchlean.trainer.Trainer.random_counter>`: the dropout masks
drawn so far, ``--dropout``) is part of the state and restored, so a resumed run draws the masks
the uninterrupted one draws (validation and the test metric draw none).

A run with ``--val-fraction`` also saves its validation history (each epoch's validation loss
and metric, from the run's first epoch) and, when ``--early-stopping`` restored the best epoch's
weights into the checkpoint's ``weights`` (which ``torchlean predict`` uses), the last epoch's
as ``last_weights``. ``--resume`` trains on from the last epoch's weights,
gives the monitor the history and the checkpoint's weights as the best epoch's, so the best
epoch, the patience count, the stop and the ``best_epoch=``/``early stopping at epoch S/N`` line
are the uninterrupted run's, and the record's ``validation`` covers the whole run (its epochs
from 1, as the uninterrupted run's; ``losses`` only those of this invocation). A run that early
stopping ended is complete and refused (a resumed one would stop there again), as is a
``--val-fraction`` run whose checkpoint lacks its history (a hand edit). With ``--save``, a
Ctrl-C in the run's last epoch, or in the one after which early stopping ends it, leaves a
complete run: a ``note:`` says so and the exit status is 0.
"""

from __future__ import annotations

import argparse
import contextlib
import dataclasses
import math
import os
import re
import shlex
import signal
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import FrameType
from typing import Any

import numpy as np
from tqdm import tqdm

from torchlean import _delimiter, checkpoint, data, optim, provenance
from torchlean._cells import LISTED, names_listed
from torchlean._checks import DECIMAL_INTEGER
from torchlean._data_errors import FLOAT64_HOLDS, FLOAT64_NEITHER, FLOAT64_PARTLY
from torchlean.backend import profiles
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.cli import _checkpoint_input as checkpoint_input
from torchlean.cli import negative_number
from torchlean.cli._output import (
    check_distinct,
    data_shown,
    escaped,
    file_path,
    header_value,
    shell_word,
    shown_path,
)
from torchlean.cli._schedule import LRSchedule
from torchlean.cli._spelling import cli_spelling
from torchlean.cli._validation import Validation, monitored, stalled
from torchlean.models import MODELS
from torchlean.trainer import ExecutionMode, Trainer
from torchlean.validation import MONITORS, ValLossMonitor

__all__ = [
    "ALWAYS_RECORDED", "DIGEST", "FREE", "Resumed", "Stop", "as_the_run_read", "data_digest", "data_refusal",
    "interruptible", "label_conflict", "label_option", "moved_label", "not_found_advice", "prepare",
    "read_elsewhere", "recorded_as", "register", "setting_refusal",
]

FREE = ("epochs", "save", "report_json", "torch_threads", "show_backend", "kernel_times", "resume",
        "stop_on_non_finite")
"""The options of ``torchlean train`` that are not the run's settings: a resumed run takes them
from its own command line (``--epochs``: the new total)."""

_PARSER = "train_parser"
"""The namespace attribute holding the ``train`` parser (set by :func:`register`)."""
_LABEL_HINT = re.compile(
    r" \(feature columns must be numbers: .+; if it is the label, pass label_column=.+ \(CLI: --label-column "
    r".+\)\)$"
)
"""The fresh-run hint of a text cell in a feature column (:meth:`torchlean._csv.Table._label_hint`)."""
_CLI_LABEL_HINT = re.compile(
    r" \(feature columns must be numbers: .+; if it is the label, pass --label-column .+\)$"
)
"""That hint as :func:`torchlean.cli._spelling.cli_spelling` spells it for the command line."""
DIGEST = "data_sha256"
"""The settings entry of a checkpoint that holds its run's :func:`data_digest`."""
ALWAYS_RECORDED = frozenset({
    "amsgrad", "batch_size", "centered", "dataset", "dtype", "early_stopping", "execution", "header",
    "hidden", "label_column", "label_smoothing", "lr", "lr_schedule", "max_grad_norm", "model", "momentum",
    "nesterov", "no_decay", "optimizer", "profile", "seed", "task", "val_fraction", "weight_decay",
})
"""The settings every checkpoint ``torchlean train --save`` has written holds: the options of the
release that first recorded settings (``--resume``'s), each kept in every release since, each
recorded whether given or not (``None`` when not given and without a default). A checkpoint whose
settings lack one was edited by hand, and is refused: taking the option's default would show that
default in the run's header while the optimizer state trains at the recorded rate (review115 F4:
``lr`` deleted). Options added later (``--delimiter``, ``--dropout``, ``--freeze``,
``--max-grad-value``, ``--min-delta``, ``--monitor``, ``--test-fraction``, and any new one) are
absent from the files written before them, which take their defaults: never add to this set."""
_ANNEALING = ("cosine", "warmup_cosine")


def register(parser: argparse.ArgumentParser) -> None:
    """Add ``--resume CKPT`` to the ``train`` parser, and keep the parser in the parsed namespace
    (to tell the options given on the command line from the defaults)."""
    parser.add_argument("--resume", type=file_path, default=None, metavar="CKPT",
                        help="continue the run saved in CKPT by torchlean train --save (its weights, "
                        "optimizer state, epoch count and settings) up to --epochs epochs in all (default: "
                        "the run's own --epochs), bit for bit as if it had not stopped; other options "
                        "given must agree with the checkpoint's, except --epochs, --save, --report-json, "
                        "--torch-threads, --show-backend, --kernel-times and --stop-on-non-finite, and "
                        "--dataset (a moved CSV "
                        "file) and --delimiter (the data saved with another separator), whose data must "
                        "hash as the run's did")
    parser.set_defaults(**{_PARSER: parser})


@dataclass(frozen=True, slots=True)
class Resumed:
    """A run being resumed: the checkpoint's ``path`` as given, the checkpoint and its training
    state (``training``), the data digest it recorded and its delimiter."""

    path: Path
    saved: checkpoint.Checkpoint
    training: checkpoint.TrainingState
    digest: str
    delimiter: str = _delimiter.COMMA
    """The checkpoint's ``--delimiter`` (the comma when not given), which a resumed run reads its
    CSV with unless given another."""
    repeated: tuple[tuple[str, str], ...] = ()
    """``--task``/``--label-column`` given to the resumed run, as ``(option, value)``, and
    ``--header``/``--no-header`` given to resume a run that guessed its header, as ``(option,
    "")``: taken when they resolve to the run's own task, label column and header (:func:`check_data`
    checks it), as a repeated ``--lr`` of the same value is."""
    dataset_given: bool = True
    """Whether ``--dataset`` was given to the resumed run (else it reads the checkpoint's path)."""

    @property
    def epochs_before(self) -> int:
        """The epochs the run had done when it was saved."""
        return self.training.epochs_done

    @property
    def data_named(self) -> str:
        """How messages name the data read: ``--dataset`` when it was given, else ``the recorded
        dataset path`` (review86 F8: the user typed no ``--dataset``), or ``the recorded dataset``
        for a shipped one."""
        if self.dataset_given:
            return "--dataset"
        shipped = self.training.settings.get("dataset") in data.DATASETS
        return "the recorded dataset" if shipped else "the recorded dataset path"

    @property
    def run_directory(self) -> tuple[str, Path] | None:
        """The run's working directory (its recorded ``environment.cwd``) and the checkpoint's
        relative dataset path under it, when the resumed run reads that path (``--dataset`` not
        given) from another working directory, where the relative path names another file than
        the one the run read; else ``None`` (a path given, an absolute path, standard input, a
        shipped dataset, no recorded ``cwd``, or the run's own directory)."""
        dataset = self.training.settings.get("dataset")
        environment = self.saved.environment
        cwd = None if environment is None else environment.get("cwd")
        if (self.dataset_given or not isinstance(dataset, str) or not isinstance(cwd, str) or not cwd
                or dataset in data.DATASETS or dataset in ("-", data.STDIN) or os.path.isabs(dataset)):
            return None
        try:
            if os.path.samefile(cwd, os.getcwd()):
                return None
        except OSError:  # the run's directory is gone (or this one): the path is resolved here
            pass
        return cwd, Path(cwd) / dataset


def _settings(parser: argparse.ArgumentParser) -> dict[str, argparse.Action]:
    """The actions of the run's settings: every option but ``--help`` and :data:`FREE`."""
    return {
        action.dest: action for action in parser._actions
        if action.option_strings and action.dest not in FREE and action.dest != "help"
    }


def _option(action: argparse.Action) -> str:
    """The option as a message names it: ``--lr``, ``--header/--no-header``."""
    return "/".join(action.option_strings)


def _encode(value: object) -> str | bool | None:
    """A setting's value as the checkpoint records it: the text the option's parser reads back
    to ``value`` (a float by its repr, which reads back exactly), a bool or ``None``."""
    if value is None or isinstance(value, bool | str):
        return value
    if isinstance(value, LRSchedule):
        return value.spec
    if isinstance(value, optim.ParamGroup) and isinstance(value.match, str):
        return value.match
    if isinstance(value, float):
        return repr(value)
    if isinstance(value, int):
        return str(value)
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"cannot record a setting of type {type(value).__name__}: {value!r}")


def _given_spelling(option: str, value: str | bool | None, dest: str = "") -> str:
    """An option as the command line gave it: ``--label-column target``; a flag by its name
    (``--nesterov``, ``--header`` or ``--no-header`` of ``--header/--no-header``)."""
    if isinstance(value, bool):
        on, _, off = option.partition("/")
        return on if value else (off or f"{on} off")
    return f"{option} {_shown(value, dest)}"


def _shown(value: str | bool | None, dest: str = "") -> str:
    """A recorded value of option ``dest`` in a message: its text (a ``--delimiter``'s as its
    Python literal, ``';'``, ``'\\t'``, as is any text that is not printable; a
    ``--label-column``'s as :func:`data.display_name` shows a column name), ``on``/``off`` for a
    flag, ``not given`` for ``None``."""
    if isinstance(value, bool):
        return "on" if value else "off"
    if value is None:
        return "not given"
    if dest == "label_column":  # as the data's messages show a name: '' and ' y' quoted (review88 F7)
        return data.display_name(value)
    plain = value.isprintable() and value == value.strip() and value != ""  # '' quoted (review91 F10)
    return value if plain and dest != "delimiter" else repr(value)


def _decode(action: argparse.Action, value: object, path: Path) -> Any:
    """The option's value from its recorded ``value``, read by the option's own parser type.

    Raises:
        TorchLeanError: a value of the wrong kind, or one the option refuses.
    """
    where = f"checkpoint {shown_path(path)}: its setting {_option(action)}"
    if value is None:
        return None
    if action.nargs == 0:  # a flag
        if not isinstance(value, bool):
            raise TorchLeanError(f"{where} must be true, false or null, got {value!r}")
        return value
    if not isinstance(value, str):
        raise TorchLeanError(f"{where} must be a string or null, got {value!r}")
    try:
        parsed = value if action.type is None else action.type(value)  # type: ignore[operator]
    except (argparse.ArgumentTypeError, TypeError, ValueError) as error:
        raise TorchLeanError(f"{where} {value!r} is refused: {error}") from None
    choices = action.choices if action.choices is not None else _NAMES.get(action.dest, lambda: None)()
    if choices is not None and parsed not in choices:
        raise TorchLeanError(f"{where} {value!r} is not one of {', '.join(map(str, choices))}")
    return parsed


_NAMES: dict[str, Callable[[], Sequence[str] | None]] = {
    "optimizer": lambda: tuple(optim.OPTIMIZERS),
    "profile": profiles.names,
    "execution": ExecutionMode.labels,
    "dtype": lambda: ("float32", "float64"),
    "model": lambda: tuple(MODELS),  # review71 F3
}
"""The options whose parser takes any text, checked later by name: a name recorded in a
checkpoint is checked here, so its refusal names the checkpoint (review28 F9)."""


def _given(parser: argparse.ArgumentParser) -> set[str]:
    """The destinations of the options on the command line the parser last read (its ``words``;
    ``--opt=value`` and argparse's unique prefixes of long options included; words after ``--``
    and values, which never start with ``-`` but as negative numbers, are not options)."""
    words: tuple[str, ...] = getattr(parser, "words", ())
    known = parser._option_string_actions
    given: set[str] = set()
    for word in words:
        if word == "--":
            break
        if not word.startswith("-") or word == "-" or negative_number(parser, word):
            continue
        name = word.split("=", 1)[0] if word.startswith("--") else word
        if name in known:
            given.add(known[name].dest)
            continue
        matches = {known[key].dest for key in known if key.startswith("--") and key.startswith(name)}
        if len(matches) == 1:
            given.update(matches)
    return given


_RESOLVED = ("task", "label_column")
"""Options a resumed run takes when they resolve as the run's did (the checkpoint's ``task`` and
``label_column``), whether its run gave them, spelled otherwise (``-1`` for ``label``), or not.
``--header``/``--no-header`` is compared with the header as the run resolved it too
(:func:`_header_conflict`, :func:`_check_repeated`)."""
_HEADER_OPTIONS = ("--header", "--no-header")


def _header_reading(header: bool, *, run: bool = False) -> str:
    """How a CSV file's first row is read with ``header``: ``reads the first row as a header``;
    of the checkpoint's run (``run``), in the past tense."""
    verb = "read" if run else "reads"
    return f"{verb} its first row as a header" if header else f"{verb} the file without a header"


def _header_conflict(given: bool, resolved: bool, gave: bool) -> str:
    """The clause refusing ``--header`` (``given`` true) or ``--no-header`` to resume a run that
    read its data's first row as a header (``resolved``) or not, by its own option (``gave``) or
    by the guess: ``--no-header reads the file without a header, but the checkpoint's run read
    its first row as a header, as it guessed`` (review59 F7: not ``--header/--no-header off
    differs from the checkpoint's on``)."""
    how = f"given {_HEADER_OPTIONS[0 if resolved else 1]}" if gave else "as it guessed"
    return (f"{_HEADER_OPTIONS[0 if given else 1]} {_header_reading(given)}, but the checkpoint's run "
            f"{_header_reading(resolved, run=True)}, {how}")


def _check_repeated(resumed: Resumed, dataset: data.Dataset) -> None:
    """Refuse a ``--task`` or ``--label-column`` given to the resumed run that reads another task
    or label column than the run's, naming both, and a ``--header``/``--no-header`` given to
    resume a run that guessed its header (``dataset`` is read with that guess) that says otherwise.

    Raises:
        TorchLeanError: ``--task regression reads the labels as task regression, and the run in
            c.npz was classification ...``; ``--header reads its first row as a header, but the
            checkpoint's run read the file without a header, as it guessed``.
    """
    saved, shown = resumed.saved, shown_path(resumed.path)
    for option, value in resumed.repeated:
        if option in _HEADER_OPTIONS:  # read with the run's guess: is that what the option says?
            given = option == _HEADER_OPTIONS[0]
            if dataset.has_header is None or dataset.has_header == given:
                continue
            raise TorchLeanError(
                f"--resume {shown} continues the run with the checkpoint's settings; "
                f"{_header_conflict(given, dataset.has_header, gave=False)} (leave out the option, or train "
                "a new run without --resume)"
            )
        if option == "--task" and dataset.task != saved.task:
            mine, theirs = f"task {dataset.task}", f"task {saved.task}"
        elif option == "--label-column" and dataset.label_name != saved.label_column:
            mine = f"label column {data.display_name(dataset.label_name)}"
            theirs = f"label column {data.display_name(saved.label_column)}"
        else:
            continue
        raise TorchLeanError(
            f"--resume {shown} continues the run with the checkpoint's settings; {option} {value} reads "
            f"{mine}, and the checkpoint's run had {theirs} (leave out the option, give the run's value, or "
            "train a new run without --resume)"
        )


def _default_value(dest: str, settings: dict[str, Any]) -> str | None:
    """What an option recorded as not given amounts to, where its default depends on another or is
    not its parser's default: ``--momentum`` 0 (sgd, rmsprop), ``--weight-decay`` 0.01 for adamw,
    else 0; with ``--early-stopping``, ``--monitor`` val_loss and ``--min-delta`` 0 (as in a
    checkpoint written before they existed); ``--delimiter`` the comma (also in a checkpoint
    written before it existed)."""
    if dest == "delimiter":
        return ","
    if settings.get("early_stopping") is not None and dest in ("monitor", "min_delta"):
        return "val_loss" if dest == "monitor" else repr(0.0)
    if dest == "momentum" and settings.get("optimizer") in ("sgd", "rmsprop"):
        return repr(0.0)
    if dest == "weight_decay":
        return repr(0.01 if settings.get("optimizer") == "adamw" else 0.0)
    return None


def _not_taken(option: str, dest: str, optimizer: object) -> str | None:
    """Why ``option`` cannot be given to resume a run of ``optimizer`` (the checkpoint's), when it
    sets a hyper-parameter other optimizers take and this one has not (``--momentum`` with adam;
    review28 F10), as a fresh run refuses it: ``--momentum applies to --optimizer sgd or rmsprop,
    and the checkpoint's --optimizer is adam``; else ``None`` (the optimizers' records, by their
    fields, say which takes what)."""
    fields = {
        name: {f.name for f in dataclasses.fields(record)}  # type: ignore[arg-type]
        for name, record in optim.OPTIMIZERS.items()
    }
    takes = [name for name, names in fields.items() if dest in names]
    if not takes or optimizer not in fields or dest in fields[str(optimizer)]:
        return None
    accepted = " or ".join(takes) if len(takes) > 1 else f"{takes[0]} only"
    return f"{option} applies to --optimizer {accepted}, and the checkpoint's --optimizer is {optimizer}"


def prepare(args: argparse.Namespace) -> Resumed | None:
    """With ``--resume CKPT``: load the checkpoint, check the command line against it and put
    its settings and ``--epochs`` in ``args``; ``None`` (``args`` untouched) without ``--resume``.

    Raises:
        CheckpointError: the file is not a readable checkpoint (naming it and why).
        TorchLeanError: the file is not a checkpoint but a CSV file (saying so,
            :func:`torchlean.cli._checkpoint_input.load`); a checkpoint without training state, or
            whose training state has no settings (built in Python); a setting it records that this
            torchlean does not know or refuses; settings lacking one of :data:`ALWAYS_RECORDED`
            (a hand edit; a setting newer than the checkpoint takes its default), or recording
            null for an option with a default (a hand edit); options given
            that differ from the checkpoint's
            (``--lr 0.01 differs from the checkpoint's 0.005``, every one at once; not
            ``--dataset`` naming a CSV file or ``--delimiter``, which :func:`check_data`'s data digest
            checks; an option
            the checkpoint's optimizer does not take named as a fresh run names it,
            :func:`_not_taken`);
            ``--epochs N`` not above the epochs done, or another total than the checkpoint's
            with ``cosine``/``warmup_cosine``; no ``--epochs`` when the saved run is complete;
            ``--report-json`` naming the checkpoint; a ``test_fraction`` other than 0.2 in a
            checkpoint whose settings predate ``--test-fraction`` (a hand edit; one whose settings
            record it is refused on load); a run that early stopping ended; a
            ``--val-fraction`` run whose checkpoint lacks its validation history, or a history
            without ``--val-fraction``.
    """
    path: Path | None = args.resume
    if path is None:
        return None
    parser: argparse.ArgumentParser = getattr(args, _PARSER)
    check_distinct([("--report-json", args.report_json)], [("the checkpoint --resume", path)])
    saved = checkpoint_input.load(  # review115 F6: a CSV file given as the checkpoint says so
        path, "--resume", "--resume takes the checkpoint a run's --save wrote; the data go in --dataset DATA"
    )
    training = saved.training
    shown = shown_path(path)
    if training is None:
        raise TorchLeanError(
            f"checkpoint {shown} holds no training state (version {saved.version}; written by an older "
            "torchlean or built in Python): --resume continues a run saved by torchlean train --save; "
            "torchlean predict still reads it"
        )
    actions = _settings(parser)
    recorded = dict(training.settings)
    digest = recorded.pop(DIGEST, None)
    if not recorded and digest is None:  # review106 L8: a TrainingState built in Python
        raise TorchLeanError(
            f"checkpoint {shown} holds a training state without torchlean train's settings (built in "
            "Python: TrainingState(settings={})): --resume continues a run saved by torchlean train "
            "--save; resume this one in Python (trainer.model.load_state, "
            "trainer.optimizer.load_state_dict, epochs_done, random_counter); torchlean predict still "
            "reads it"
        )
    if not isinstance(digest, str):
        raise TorchLeanError(f"checkpoint {shown}: its training settings lack the data digest {DIGEST!r}")
    unknown = sorted(set(recorded) - set(actions))
    if unknown:
        raise TorchLeanError(
            f"checkpoint {shown} records settings this torchlean does not know: {', '.join(unknown)} "
            "(written by a newer torchlean?)"
        )
    missing = sorted((ALWAYS_RECORDED & set(actions)) - set(recorded), key=list(actions).index)
    if missing:  # review115 F4: not an older file, whose missing options take their defaults below
        names = ", ".join(_option(actions[dest]) for dest in missing)
        raise TorchLeanError(
            f"checkpoint {shown}: its training settings lack {names}, which every torchlean train --save "
            "records (given or not), so the run's settings are not known (a checkpoint edited by hand?): "
            "--resume cannot continue it; train a new run (torchlean predict still reads it)"
        )
    nulled = [dest for dest in actions if dest in recorded and recorded[dest] is None
              and actions[dest].default is not None]
    if nulled:  # review207 F3/F4: as a missing setting (a null lr_schedule crashed the run)
        names = ", ".join(_option(actions[dest]) for dest in nulled)
        raise TorchLeanError(
            f"checkpoint {shown}: its training settings record {names} as null, which torchlean train "
            "--save never writes (an option with a default is recorded with its value, given or not), so "
            "the run's settings are not known (a checkpoint edited by hand?): --resume cannot continue it; "
            "train a new run (torchlean predict still reads it)"
        )
    for dest, action in actions.items():
        if dest not in recorded:  # an option newer than the checkpoint: its default
            recorded[dest] = _encode(action.default)
    values = {dest: _decode(actions[dest], value, path) for dest, value in recorded.items()}
    recorded = {dest: _encode(value) for dest, value in values.items()}  # canonical spellings
    given = _given(parser)
    delimiter = values.get("delimiter") or _delimiter.COMMA
    conflicts = []
    repeated: list[tuple[str, str]] = []
    for dest in sorted(given & set(actions), key=list(actions).index):
        mine, theirs = _encode(getattr(args, dest)), recorded[dest]
        if dest == "dataset" and mine not in data.DATASETS and theirs not in data.DATASETS:
            values[dest] = getattr(args, dest)  # the run's CSV file, moved: the digest checks it
            continue
        if dest == "delimiter":  # the run's data saved with another delimiter: the digest checks it
            values[dest] = getattr(args, dest)
            continue
        if dest in _RESOLVED:  # the run's own task or label column, spelled or inferred otherwise?
            value, option = getattr(args, dest), _option(actions[dest])
            resolved = saved.task if dest == "task" else saved.label_column
            named = dest == "task" or not DECIMAL_INTEGER.fullmatch(str(value).strip())
            if named and value != resolved and value != theirs:  # an index is resolved by restore
                what = "task" if dest == "task" else "label column"
                conflicts.append(f"{option} {_shown(mine, dest)} differs from the checkpoint's run's {what} "
                                 f"{_shown(resolved, dest)}")
                continue
            values[dest] = value
            repeated.append((option, str(value)))
            continue
        csv_run = recorded.get("dataset") not in data.DATASETS  # a shipped dataset has no header to resolve
        if dest == "header" and isinstance(mine, bool) and csv_run:  # compared with the header as resolved
            if theirs is None:  # guessed: read the file as the run did, and compare (_check_repeated)
                repeated.append((_HEADER_OPTIONS[0 if mine else 1], ""))
            elif mine != theirs:
                conflicts.append(_header_conflict(mine, bool(theirs), gave=True))
            continue
        default = _default_value(dest, recorded) if theirs is None else None
        if mine != theirs and not (default is not None and mine == default):
            option = _option(actions[dest])
            if theirs is None and default is None:
                differs = f"{_given_spelling(option, mine, dest)} was not given to the checkpoint's run"
            else:
                recorded_shown = _shown(theirs if default is None else default, dest)
                if default is not None:
                    recorded_shown += " (not given: the default)"
                differs = f"{option} {_shown(mine, dest)} differs from the checkpoint's {recorded_shown}"
            conflicts.append(_not_taken(option, dest, recorded.get("optimizer")) or differs)
    if conflicts:
        raise TorchLeanError(
            f"--resume {shown} continues the run with the checkpoint's settings; "
            f"{'; '.join(conflicts)} (leave out the option, or train a new run without --resume)"
        )
    _check_monitor(values, shown)
    _check_lr_agrees(training, recorded["lr"], shown)
    if "dataset" not in given and values["dataset"] == data.STDIN:
        _stdin_again(path)
    if values["test_fraction"] != saved.test_fraction:  # review118 F1: settings without the option
        # (written before it) take its default, which a hand-edited test_fraction contradicts;
        # settings that record it are checked against the field when the checkpoint is read
        raise TorchLeanError(
            f"checkpoint {shown}: its settings predate --test-fraction (so its run split with the default "
            f"{values['test_fraction']!r}) but its test_fraction is {saved.test_fraction!r} (the split "
            "torchlean predict --split recomputes): its fields are inconsistent (a checkpoint edited by "
            "hand?), and --resume cannot continue it; train a new run"
        )
    _check_validation(training, values.get("val_fraction"), values.get("early_stopping"), shown,
                      values.get("monitor"), values.get("min_delta"))
    for dest, value in values.items():
        setattr(args, dest, value)
    args.epochs = _epochs(args.epochs if "epochs" in given else None, training, values["lr_schedule"], shown)
    return Resumed(path, saved, training, digest, delimiter, tuple(repeated),
                   dataset_given="dataset" in given)


def _check_lr_agrees(training: checkpoint.TrainingState, setting: str | bool | None, shown: str) -> None:
    """Refuse training settings whose ``--lr`` differs from the optimizer state's ``lr``: the run
    resumes at the state's rate (``load_state_dict``), while the header would show the settings'
    (review139 F2). ``train --save`` writes the two equal: a fit with ``--lr-schedule`` sets its
    base rate back when it ends, Ctrl-C or not. A state without ``lr`` (written before it was
    recorded) is not compared, nor a setting the optimizer refuses (not finite, negative), which
    its own refusal names.

    Raises:
        TorchLeanError: naming both rates.
    """
    state = training.optimizer.get("lr")
    if state is None or not isinstance(setting, str):
        return
    rate = float(setting)
    if not (math.isfinite(rate) and rate >= 0.0) or rate == float(state):
        return
    raise TorchLeanError(
        f"checkpoint {shown}: its training settings' --lr {setting} and its optimizer state's lr "
        f"{float(state)!r} differ (one of them was edited): the run would resume at {float(state)!r} "
        f"while its header showed --lr {setting}, so --resume cannot continue it; train a new run "
        "(torchlean predict still reads it)"
    )


def _stdin_again(path: Path) -> None:
    """The resume, without ``--dataset``, of a run that read standard input, which it reads again:
    said in a note, and refused when standard input is a terminal, where the read would wait for
    typed rows in silence (review88 F8).

    Raises:
        TorchLeanError: standard input is a terminal, naming the ways to give the data.
    """
    if sys.stdin is not None and sys.stdin.isatty():
        raise TorchLeanError(
            f"checkpoint {shown_path(path)}'s run read its data from standard input (-), which --resume "
            "reads again without --dataset, and standard input is a terminal here: pipe the run's data in "
            f"(torchlean train --resume {shell_word(path)} < FILE) or give --dataset FILE"
        )
    print(f"note: checkpoint {shown_path(path)}'s run read its data from standard input (-): --resume reads "
          "standard input again (the data digest checks that they are the run's)", file=sys.stderr)


def setting_refusal(resumed: Resumed | None, args: argparse.Namespace, dest: str, message: str) -> str | None:
    """The refusal of the value of option ``dest`` (``lr``) that a later check refused with
    ``message`` (``learning rate must be finite and nonnegative, got 'nan'``), worded as
    :func:`prepare` words a recorded setting its parser refuses, when the value came from the
    checkpoint of ``resumed``, not from the command line: ``checkpoint PATH: its setting --lr 'nan'
    is refused: <message>`` (review67 F11: the user typed no ``--lr``); ``None`` when the option
    was given on the command line or no run is resumed (the caller names the argument)."""
    if resumed is None:
        return None
    parser: argparse.ArgumentParser = getattr(args, _PARSER)
    if dest in _given(parser):
        return None
    action = _settings(parser)[dest]
    value = resumed.training.settings.get(dest)
    return (f"checkpoint {shown_path(resumed.path)}: its setting {_option(action)} {value!r} is refused: "
            f"{message}")


def label_conflict(resumed: Resumed | None, args: argparse.Namespace, error: Exception) -> str | None:
    """The refusal of a ``--label-column`` given to the resumed run (:attr:`Resumed.repeated`: an
    index, or the run's own name) that names another column than the checkpoint's run's label
    column, when loading the data with it failed with ``error`` (review86 F3: an index that
    points at a feature reads the run's label column as a feature, whose text is refused; the
    message then said the file was read as the run read it): ``--resume m.npz continues the run
    with the checkpoint's settings; --label-column 0 (column a) differs from the checkpoint's run's
    label column label (...)``; one that names no column (``error`` an ``UnknownLabelError``)
    is refused so too (``--label-column 9 is not the checkpoint's run's label column label: unknown
    label column 9 in s.csv (known: ...)``). The header is read again to resolve the index (a
    failure only; standard input, read already, and a file that cannot be read again give
    ``None``); ``None`` too when the option names the run's label column, or was not given.
    """
    given = None if resumed is None else dict(resumed.repeated).get("--label-column")
    if resumed is None or given is None:
        return None
    theirs = resumed.saved.label_column
    differs = f"--label-column {data.display_name(given)}"
    if isinstance(error, UnknownLabelError):
        if given == theirs:  # the run's own name, which the data lack: the data changed
            return None
        differs += f" is not the checkpoint's run's label column {data.display_name(theirs)}: {error}"
    else:
        if str(args.dataset) == data.STDIN:
            return None
        try:
            delimiter = args.delimiter or _delimiter.COMMA
            table = data.read_csv(args.dataset, header=args.header, delimiter=delimiter)
            mine = table.shown(table.column(given))
        except (TorchLeanError, OSError, ValueError):
            return None
        if mine == theirs:
            return None
        differs += (f" (column {data.display_name(mine)}) differs from the checkpoint's run's label column "
                    f"{data.display_name(theirs)}")
    return (f"--resume {shown_path(resumed.path)} continues the run with the checkpoint's settings; "
            f"{differs} (leave out the option, or train a new run without --resume)")


def as_the_run_read(message: str, saved: checkpoint.Checkpoint) -> str:
    """``message``, a refusal of data loaded as the checkpoint's run loaded its own (``inspect
    --dataset``, ``predict``'s comparison), spelled for the command line, with the fresh-run hint
    ``(feature columns must be numbers: ...; if it is the label, pass --label-column y)``
    replaced by the label column the run read
    (review86 F5: neither command takes ``--label-column`` for that load, and ``inspect`` takes
    none at all): ``(the checkpoint's run read the label in the last column, label)``; else
    ``message`` as it is."""
    message = _checkpoint_dtype(message, saved)
    label_hint = _CLI_LABEL_HINT.search(message)
    if label_hint is None:
        return message
    name = data.display_name(saved.label_column)
    if saved.training is None:  # built in Python: loaded by the checkpoint's own label column
        where = f"its label column {name}"
    else:
        column = saved.training.settings.get("label_column")
        where = f"its --label-column {column}" if isinstance(column, str) else f"the last column, {name}"
    return message[: label_hint.start()] + f" (the checkpoint's run read the label in {where})"


def _checkpoint_dtype(message: str, saved: checkpoint.Checkpoint) -> str:
    """``message`` with a fresh run's way forward for a feature value that standardises beyond
    the dtype, ``--dtype float64``, replaced where the data are loaded with checkpoint
    ``saved``'s dtype (``train --resume``, which refuses another ``--dtype``; ``inspect`` and
    ``predict``, which take none): ``the checkpoint's dtype is float32: correct or remove the
    row`` (review95 M2; the other ways forward too, review97 L4, review98 L1)."""
    way = f"the checkpoint's dtype is {saved.dtype}: "
    for fresh in (FLOAT64_HOLDS, cli_spelling(FLOAT64_HOLDS), FLOAT64_NEITHER, FLOAT64_PARTLY):
        message = message.replace(fresh, way)
    return message


def _shown_directory(path: str | Path) -> str:
    """A directory or path (``environment.cwd`` read from a checkpoint) as a message shows it: each
    character that is not printable escaped, so that a hand-edited checkpoint cannot split the
    line or drive the terminal (:func:`torchlean.cli._output.escaped`)."""
    return escaped(shown_path(path))


def not_found_advice(resumed: Resumed) -> str:
    """The advice that follows ``dataset file not found: PATH`` on a resumed run: give
    ``--dataset`` the run's CSV file where it moved; when the run read the recorded relative path
    in another working directory (:attr:`Resumed.run_directory`), that directory, and, where the
    file is there, the ``--dataset`` to give (review86 F8: a relative path is resolved in the
    current directory, and another file of that name there is not read in its place)."""
    shown = shown_path(resumed.path)
    must = "its data must hash as the run's did"
    elsewhere = resumed.run_directory
    if elsewhere is None:
        return f" (resuming {shown}: if the run's CSV file moved, give --dataset NEW_PATH; {must})"
    cwd, there = elsewhere
    read = (f"resuming {shown}: its run read that relative path in its working directory "
            f"{_shown_directory(cwd)}")
    if there.is_file():
        given = shell_word(there)
        return f" ({read}, where the file is: give --dataset {given}; {must})"
    return f" ({read}, where it is not either: if the run's CSV file moved, give --dataset NEW_PATH; {must})"


def _read_here(resumed: Resumed) -> str:
    """`` (read in this directory, D; its run read it in its working directory C, ...)`` when the
    resumed run read the recorded relative path in another directory than the run's
    (:attr:`Resumed.run_directory`), with the ``--dataset`` to give where the file is there too;
    else ``""``."""
    elsewhere = resumed.run_directory
    if elsewhere is None:
        return ""
    cwd, there = elsewhere
    found = (f", where a file of that name is: to resume with it, give --dataset "
             f"{shell_word(there)}" if there.is_file() else "")
    return (f" (read in this directory, {_shown_directory(os.getcwd())}; its run read it in its working "
            f"directory {_shown_directory(cwd)}{found})")


def read_elsewhere(resumed: Resumed | None, message: str, source: str) -> str:
    """``message``, the refusal of a resumed run's data that a file of the recorded relative
    dataset path ``source`` in this directory failed to load (too few rows, one class, no rows),
    led by where it was read when the run read that path in another working directory
    (:attr:`Resumed.run_directory`): ``the recorded dataset path P (read in this directory, D; its
    run read it in its working directory C, where a file of that name is: to resume with it, give
    --dataset C/P) is refused: MESSAGE``, as :func:`check_data` names a file there that loads but
    differs (review133 F1: else the user debugs a file they did not mean to use); else ``message``
    as it is (no other directory, or a file not found, which :func:`not_found_advice` covers)."""
    if resumed is None or resumed.run_directory is None or message.startswith("dataset file not found"):
        return message
    return f"{resumed.data_named} {shown_path(source)}{_read_here(resumed)} is refused: {message}"


def file_columns(args: argparse.Namespace) -> tuple[str, ...] | None:
    """The column names of ``--dataset`` as ``args`` read it (its header and delimiter), for the
    advice of a refusal of its data; None for standard input (read once) or a file that cannot be
    read so."""
    if args.dataset in ("-", data.STDIN) or args.dataset in data.DATASETS:
        return None
    try:
        return tuple(data.read_csv(args.dataset, header=args.header, delimiter=args.delimiter or ",").names)
    except (TorchLeanError, OSError):
        return None


def _names_run_label(message: str, resumed: Resumed) -> bool:
    """Whether ``message`` refuses a cell of the column named as the run's label column (read
    here as a feature: the label column moved, or as the label, holding a bad label)."""
    return f", column {data.display_name(resumed.saved.label_column)}: " in message


def _moved_label_advice(resumed: Resumed, where: str, columns: Callable[[], Sequence[str] | None]) -> str:
    """The advice on a run's label column read as a feature column (``where`` the run read it):
    pass ``--label-column`` if the columns were moved (and the features' order too, where the
    file's ``columns`` show it), else resume with the run's data as laid out then."""
    label = resumed.saved.label_column
    return (
        f" (--resume {shown_path(resumed.path)} reads the file as the run read its data, the label "
        f"in {where}, and the run's label column {data.display_name(label)} is a feature column "
        f"here: if the columns were moved, pass {label_option(label)}"
        f"{_order_too(columns(), label, resumed)}; else resume with the data it was trained on, laid "
        "out as they were)"
    )


def data_refusal(
    resumed: Resumed | None, message: str, columns: Callable[[], Sequence[str] | None] = lambda: None,
    feature_column: str | None = None,
) -> str:
    """``message``, a refusal of the data of a run, with its advice made right for a resumed run:
    the fresh-run hint ``(feature columns must be numbers: ...; if it is the label, pass
    label_column='y' (CLI: --label-column y))``, which
    a resumed run would refuse (the label column is the run's setting), replaced by what the run
    read (review43 F4), or, when another ``--label-column`` than the run's spelling was given
    (on standard input, whose header :func:`label_conflict` cannot read again), by both
    (review86 F3);
    the advice to read the file with commas by leaving out ``--delimiter`` made right when the
    checkpoint's delimiter is another (leaving the option out reads with that one): ``pass
    delimiter=',' (CLI: --delimiter , ...)`` (review37 F7); else ``message`` as it is. With the
    file's ``columns`` (a call, :func:`file_columns`, made only for a refusal of a moved label
    column: it reads the file again), a run's label column moved among them whose other
    columns are the run's features in another order is told both fixes at once (review104 M2).
    ``feature_column`` is the refusal's :attr:`DataError.feature_column`: the run's label column
    refused as a feature column gets the advice that the columns moved even without the hint
    (labels mixing numbers and names: review221 F2), and a bad cell of the label itself does not
    (review226 F1)."""
    if resumed is None:
        return message
    message = _checkpoint_dtype(message, resumed.saved)
    label_hint = _LABEL_HINT.search(message)
    if label_hint is not None:  # --label-column is the run's setting: the hint would be refused next
        column = resumed.training.settings.get("label_column")
        where = f"its --label-column {column}" if isinstance(column, str) else "the last column"
        given = dict(resumed.repeated).get("--label-column")
        if given is not None and given != column:  # read with the option as given (review86 F3)
            return message[: label_hint.start()] + (
                f" (--resume {shown_path(resumed.path)} reads the file with --label-column {given} as given, "
                f"and the run read the label in {where}, column "
                f"{data.display_name(resumed.saved.label_column)}: leave out the option, and resume with the "
                "data the run was trained on)"
            )
        if _names_run_label(message[: label_hint.start()], resumed):  # review95 M4
            return message[: label_hint.start()] + _moved_label_advice(resumed, where, columns)
        return message[: label_hint.start()] + (
            f" (--resume {shown_path(resumed.path)} reads the file as the run read its data, the label in "
            f"{where}: resume with the data it was trained on, laid out as they were)"
        )
    # review221 F2: labels mixing numbers and names get no hint; the advice only where the run's
    # label column was refused as a feature column of these data, not for a bad cell of the label
    # itself (review226 F1), also on standard input (review228 F1)
    if feature_column is not None and feature_column == resumed.saved.label_column:
        column = resumed.training.settings.get("label_column")
        where = f"its --label-column {column}" if isinstance(column, str) else "the last column"
        if dict(resumed.repeated).get("--label-column") in (None, column):
            return message + _moved_label_advice(resumed, where, columns)
    comma = _delimiter.use(_delimiter.COMMA)
    if resumed.delimiter == _delimiter.COMMA or comma not in message:
        return message
    return message.replace(comma, (
        f"pass delimiter=',' (CLI: --delimiter , as --resume {shown_path(resumed.path)} reads the file "
        f"with the checkpoint's --delimiter {_delimiter.cli(resumed.delimiter)} when the option is left "
        "out; the data read must hash as the run's did)"
    ))


def _check_validation(
    training: checkpoint.TrainingState,
    fraction: float | None,
    patience: int | None,
    shown: str,
    name: str | None = None,
    min_delta: float | None = None,
) -> None:
    """Refuse a run with a validation part whose checkpoint lacks its history, and one that early
    stopping ended (replayed from its history by the rule that ended it).

    Raises:
        TorchLeanError: a ``--val-fraction`` run whose checkpoint lacks its validation history, or a
            history or ``--early-stopping`` without ``--val-fraction`` (hand edits); a run early
            stopping ended: it is complete.
    """
    if fraction is None:
        if training.has_validation:
            raise TorchLeanError(
                f"checkpoint {shown} records a validation history, but its run held out no validation part "
                "(its setting --val-fraction is not given): a checkpoint edited by hand?"
            )
        if patience is not None:  # review29 F4: not "give --val-fraction", which would conflict
            raise TorchLeanError(
                f"checkpoint {shown}: its setting --early-stopping {patience} monitors the validation loss, "
                "but its setting --val-fraction is not given (no validation part): its settings are "
                "inconsistent (a checkpoint edited by hand?), and --resume cannot continue it; train a new "
                "run"
            )
        return
    if training.val_losses is None:
        raise TorchLeanError(
            f"the run in {shown} held out a validation part (--val-fraction), but its checkpoint lacks the "
            "validation history that picks the best epoch (a checkpoint edited by hand?): --resume cannot "
            "continue it; train a new run (its weights: torchlean predict)"
        )
    if patience is None:
        return
    name = "val_loss" if name is None else name
    min_delta = 0.0 if min_delta is None else min_delta
    monitor = ValLossMonitor(patience, mode=MONITORS[name], min_delta=min_delta)
    assert training.val_metrics is not None  # given with the losses (TrainingState)
    monitor.resume(monitored(name, training.val_losses, training.val_metrics))
    if monitor.should_stop:
        kept = (
            f"no epoch had a finite {name}; it holds the last epoch's weights" if monitor.best is None
            else f"it holds its best epoch's weights, epoch {monitor.best + 1}'s"
        )
        raise TorchLeanError(
            f"the run in {shown} is complete: early stopping ended it after epoch {training.epochs_done} "
            f"({stalled(name, patience, min_delta)}; {kept}, which "
            "torchlean predict uses), and a resumed run would stop there again, whatever --epochs: to train "
            "on, train a new run (without --resume)"
        )
    ran = len(training.val_losses)
    if monitor.best is not None and monitor.best + 1 != ran and training.last_weights is None:
        raise TorchLeanError(  # review29 F1
            f"checkpoint {shown}: its best epoch ({monitor.best + 1}) is not its last ({ran}), so early "
            "stopping saved the best weights for predict and the last epoch's as last_weights, but it holds "
            "no last_weights (a checkpoint edited by hand?): --resume cannot continue it; train a new run"
        )


def _check_monitor(values: dict[str, Any], shown: str) -> None:
    """Refuse a checkpoint whose settings give ``--monitor`` or ``--min-delta`` but no
    ``--early-stopping`` (a hand edit: giving ``--early-stopping`` would conflict with them).

    Raises:
        TorchLeanError: naming the setting and that the settings are inconsistent.
    """
    if values.get("early_stopping") is not None:
        return
    for dest, option in (("monitor", "--monitor"), ("min_delta", "--min-delta")):
        if values.get(dest) is not None:
            raise TorchLeanError(
                f"checkpoint {shown}: its setting {option} {values[dest]} chooses how --early-stopping "
                "monitors the validation part, but its setting --early-stopping is not given: its settings "
                "are inconsistent (a checkpoint edited by hand?), and --resume cannot continue it; train a "
                "new run"
            )


def _epochs(given: int | None, training: checkpoint.TrainingState, schedule: LRSchedule, shown: str) -> int:
    """The resumed run's total epochs: ``--epochs`` when given, else the checkpoint's total.

    Raises:
        TorchLeanError: not more than the epochs done; another total than the checkpoint's under
            a schedule annealing over the run (``cosine``, ``warmup_cosine``).
    """
    done, total = training.epochs_done, training.epochs
    if given is None:
        if total <= done and schedule.kind in _ANNEALING:
            raise TorchLeanError(
                f"the run in {shown} is complete ({done} of {total} epochs) and its --lr-schedule "
                f"{schedule.spec} annealed over those {total} epochs, so it is not extended: train a new run"
            )
        if total <= done:
            raise TorchLeanError(
                f"the run in {shown} is complete ({done} of {total} epochs): give --epochs N with N above "
                f"{done} (--epochs is the run's total) to train on"
            )
        return total
    if given <= done:
        raise TorchLeanError(
            f"--epochs {given} is not above the {done} epochs the run in {shown} has done: --epochs is "
            f"the run's total, as torch Lightning's max_epochs; give more than {done}"
        )
    if schedule.kind in _ANNEALING and given != total and done == total:
        raise TorchLeanError(
            f"the run in {shown} is complete ({done} of {total} epochs) and its --lr-schedule "
            f"{schedule.spec} annealed over those {total} epochs: a longer run would need another curve "
            f"from its first epoch, which no resumed run follows; train a new run with --epochs {given}"
        )
    if schedule.kind in _ANNEALING and given != total:
        raise TorchLeanError(
            f"--lr-schedule {schedule.spec} anneals over the run's total of {total} epochs (the "
            f"checkpoint's --epochs), and its first {done} epochs ran on that curve; --epochs {given} would "
            f"change the rates of the rest, a run no uninterrupted one equals: resume with --epochs {total} "
            "(or leave it out), or train a new run"
        )
    return given


def cannot_run_here(resumed: Resumed, error: object) -> str:
    """``error`` (the resumed run's session could not open here: its profile targets a device
    this machine cannot run, as CUDA without a CUDA build, or typed-graph execution, CPU only,
    under it) with where the profile came from: the checkpoint's, which ``--resume`` keeps
    (``--profile`` and ``--execution`` are refused as other settings), so the run resumes only
    where it can run; and the CPU profile of the same assurance and VJP mode
    (:func:`~torchlean.backend.profiles.cpu_counterpart`) with which ``torchlean predict`` uses
    its weights here, or a new run trains (review63 F4)."""
    saved, shown = resumed.saved, shown_path(resumed.path)
    counterpart = profiles.cpu_counterpart(saved.profile)
    cpu = "a cpu profile" if counterpart is None else counterpart.name
    return (
        f"{error}; profile {saved.profile} (execution {saved.execution}) is checkpoint {shown}'s "
        "trained_under, and --resume keeps it (--profile and --execution cannot change a resumed run's), "
        "so this run resumes only where it runs; here, "
        f"torchlean predict {shell_word(resumed.path)} --dataset DATA --profile {cpu} predicts with its "
        f"weights on the CPU, and --profile {cpu} without --resume trains a new run"
    )


def names_difference(dataset: data.Dataset, saved: checkpoint.Checkpoint) -> str | None:
    """How ``dataset``'s class names (classification) or feature names differ from checkpoint
    ``saved``'s, which name the model's outputs and pick its input columns by name
    (:func:`first_name_difference`); None when they agree (feature names are compared only when
    both have them). The data digest covers the data's own names, not the checkpoint's fields, so
    a hand edit of these passes it (review67 F3)."""
    found = first_name_difference("class", dataset.class_names, saved.classes)
    if found is None and dataset.feature_names and saved.feature_names:
        found = first_name_difference("feature", dataset.feature_names, saved.feature_names)
    return found


def _named(name: str) -> str:
    """Name ``name`` as :func:`first_name_difference` prints it: quoted when it reads as a number,
    so that ``class 3 '4'`` says which is the position and which the name (review195 F5), else as
    :func:`~torchlean.data.display_name` shows it."""
    try:
        float(name)
    except ValueError:
        return data.display_name(name)
    return repr(name)


def first_name_difference(what: str, ours: Sequence[str], theirs: Sequence[str]) -> str | None:
    """Where the data's names ``ours`` of ``what`` (``class``, ``feature``) first differ from a
    checkpoint's ``theirs``, saying nothing of which of the two was edited (the data's header or
    labels, or the checkpoint: review88 F2); None when they are the same, in order.

    A name at the first differing position that neither side has elsewhere is a rename, said by
    position (``they name class 0 setosa, where the checkpoint names it virginica``); otherwise
    the first name one side lacks is named (``the checkpoint's feature f4 is not among theirs``: a
    column removed and another added is no rename of the next, review194 F3, review195 F3), else
    the first name repeated on one side only (review195 F4), else the same names in another order
    by position. Lists of different lengths also give both counts and lists (review188 F2)."""
    if tuple(ours) == tuple(theirs):
        return None
    by_name = _by_name(what, ours, theirs)
    if len(ours) != len(theirs):
        plural = "name" if len(ours) == 1 else "names"
        found = (f"they have {len(ours)} {what} {plural} ({names_listed(ours, counted=False, show=_named)}), "
                 f"the checkpoint {len(theirs)} ({names_listed(theirs, counted=False, show=_named)})")
        # a list elided in the middle hides where the names part (review192 F4)
        if max(len(ours), len(theirs)) <= LISTED or by_name is None:
            return found
        return f"{found}; {by_name}"
    i = next(i for i, (a, b) in enumerate(zip(ours, theirs, strict=True)) if a != b)
    if by_name is None or (ours[i] not in set(theirs) and theirs[i] not in set(ours)):
        return f"they name {what} {i} {_named(ours[i])}, where the checkpoint names it {_named(theirs[i])}"
    return by_name


def _by_name(what: str, ours: Sequence[str], theirs: Sequence[str]) -> str | None:
    """The first of ``theirs`` that ``ours`` lacks, else the first of ``ours`` that ``theirs``
    lacks, else the first name repeated more often on one side, as a clause of
    :func:`first_name_difference`; None when both hold the same names as often."""
    our_counts, their_counts = Counter(ours), Counter(theirs)
    lacking = next((name for name in theirs if name not in our_counts), None)
    if lacking is not None:
        return f"the checkpoint's {what} {_named(lacking)} is not among theirs"
    extra = next((name for name in ours if name not in their_counts), None)
    if extra is not None:
        return f"their {what} {_named(extra)} is not among the checkpoint's"
    repeated = next((name for name in ours if our_counts[name] > their_counts[name]), None)
    if repeated is not None:
        return f"their {what} {_named(repeated)} is repeated"
    repeated = next((name for name in theirs if their_counts[name] > our_counts[name]), None)
    if repeated is not None:
        return f"the checkpoint's {what} {_named(repeated)} is repeated"
    return None


def statistics_difference(dataset: data.Dataset, saved: checkpoint.Checkpoint) -> str | None:
    """How ``dataset``'s train statistics (the features' means and scales; a regression target's
    mean and scale) first differ from checkpoint ``saved``'s, with both values:
    ``feature a's mean is 1000000.25, the checkpoint's 0.0025``; None when they agree within the
    precision of the standardised values: a mean and a scale each within the dtype's machine
    epsilon times the checkpoint's scale (float32: 1.19e-7), which moves no standardised value
    by more than about a rounding.

    The data digest is taken over the standardised split, so the same rows in other units or with
    an offset (which standardise alike) hash as the run's data did; these statistics tell them
    apart. This is the one comparison ``inspect --dataset``, ``predict`` and ``train --resume``
    make (review65 F1, review88 F1). It is not exact: a float32 run's feature values re-saved
    with 15 significant digits (Excel, pandas' ``float_format``), which hash alike, have means a
    few ulps off, and an edit of a training row that the digest cannot see moves the statistics by
    less than this bound (review90 F2). Under float64, and for a regression's targets (hashed as
    read), such a re-save changes the digest itself, so this bound is not reached (review91 F4)."""
    eps = float(np.finfo(dataset.x_train.dtype).eps)
    ours = (np.asarray(dataset.feature_mean), np.asarray(dataset.feature_scale))
    theirs = (np.asarray(saved.feature_mean), np.asarray(saved.feature_scale))
    if ours[0].shape != theirs[0].shape:
        return f"they have {ours[0].size} feature means, the checkpoint {theirs[0].size}"
    names = dataset.feature_names if len(dataset.feature_names) == ours[0].size else ()
    for j in range(ours[0].size):
        for statistic, mine, recorded in zip(("mean", "scale"), ours, theirs, strict=True):
            found, kept = float(mine[j]), float(recorded[j])
            if not abs(found - kept) <= eps * float(theirs[1][j]):  # NaN differs
                feature = f"feature {data.display_name(names[j])}" if names else f"feature {j}"
                found_shown, kept_shown = _told_apart(found, kept)
                return f"{feature}'s {statistic} is {found_shown}, the checkpoint's {kept_shown}"
    if saved.task != "regression" or dataset.task != "regression":
        return None
    target = dataset.target_statistics()
    if saved.target_mean is None or saved.target_scale is None:  # a regression checkpoint has both
        return f"the target's mean and scale are {target!r}, the checkpoint records none"
    recorded_target = (saved.target_mean, saved.target_scale)
    for k, statistic in enumerate(("mean", "scale")):
        if not abs(target[k] - recorded_target[k]) <= eps * recorded_target[1]:
            found_shown, kept_shown = _told_apart(target[k], recorded_target[k])
            return f"the target's {statistic} is {found_shown}, the checkpoint's {kept_shown}"
    return None


def _told_apart(found: float, kept: float) -> tuple[str, str]:
    """``found`` and ``kept``, two values that differ, with the fewest significant digits that
    show their difference (6 at least, and those before the point): the printed values differ by
    the true difference within half of it, so a rounding boundary between two close values does not
    show ``1.000001`` against ``1`` for a difference of 1e-11 (review200 F2); a value those digits
    hold exactly prints as ``repr`` does (``4.0``), a rounded one without a point as ``about
    1000014``, a value that is not finite as ``repr``. A mean
    was shown with 17 digits where 6 tell it from the checkpoint's (review195 F5)."""
    if not (math.isfinite(found) and math.isfinite(kept)):
        return repr(found), repr(kept)
    whole = max(len(f"{abs(v):.0f}") for v in (found, kept))
    difference = found - kept

    def faithful(digits: int) -> bool:
        shown = float(f"{found:.{digits}g}") - float(f"{kept:.{digits}g}")
        return shown != 0.0 and abs(shown - difference) <= abs(difference) / 2

    digits = next((n for n in range(min(max(6, whole), 17), 17) if faithful(n)), 17)

    def shown(value: float) -> str:
        text = f"{value:.{digits}g}"
        if float(text) == value:
            return repr(value)
        # a rounded whole number does not read as exact: "about 10" beside 9.999999 (review201)
        return text if any(mark in text for mark in ".e") else f"about {text}"

    return shown(found), shown(kept)


def digest_difference(dataset: data.Dataset, saved: checkpoint.Checkpoint) -> str:
    """Why ``dataset``, whose digest is not checkpoint ``saved``'s run's, are other data, as far as
    the checkpoint's fields tell: the first difference of their class or feature names
    (:func:`names_difference`), else of their feature count (a checkpoint without feature names),
    else ``the file or its split changed``, with the first training-rows statistic that differs
    (:func:`statistics_difference`: edited values, or other rows in the train split) when one does
    (review188 F2: only "the file or its split changed" was said)."""
    names = names_difference(dataset, saved)
    if names is not None:
        return names
    features = dataset.x_train.shape[1]
    if features != saved.features:  # a checkpoint without feature names (review194 F2)
        return f"they have {features} feature{'' if features == 1 else 's'}, the checkpoint {saved.features}"
    statistics = statistics_difference(dataset, saved)
    if statistics is None:
        return "the file or its split changed"
    # the statistics are the training rows': a reordered file or an edited label moves rows between
    # the splits and so changes every one of them (review192 F3, review194 F4)
    return (f"the file or its split changed; over the training rows, {statistics}: values were edited, or "
            "other rows train, as when rows are added, removed or reordered or labels edited")


def data_digest(dataset: data.Dataset) -> str:
    """SHA-256 (hex) of the split data ``torchlean train`` trains, validates and tests on:
    :func:`torchlean.provenance.data_sha256`, whose docstring says what it is computed over."""
    return provenance.data_sha256(dataset)


@dataclass(frozen=True, slots=True)
class RunMatch:
    """Data that hash as a checkpoint's run's data did (:func:`run_match`): ``dataset`` as that
    run held them (its columns put in the checkpoint's order when ``reordered``), and how their
    statistics differ from the checkpoint's (:func:`statistics_difference`; None when they agree)."""

    dataset: data.Dataset
    reordered: bool
    statistics: str | None


def run_match(dataset: data.Dataset, saved: checkpoint.Checkpoint, recorded: str) -> RunMatch | None:
    """``dataset`` compared with the run whose digest is ``recorded``: as :func:`recorded_as`
    finds them, else with the feature columns put in the checkpoint's order
    (:func:`by_checkpoint_order`; review90 F8), then their statistics (review88 F1, review91 F1,
    review92 F1); None when neither hashes as ``recorded``. The one comparison ``train --resume``,
    ``inspect --dataset`` and ``predict`` make."""
    as_recorded = recorded_as(dataset, recorded)
    reordered = as_recorded is None
    if as_recorded is None:
        ordered = by_checkpoint_order(dataset, saved.feature_names)
        as_recorded = None if ordered is None else recorded_as(ordered, recorded)
        if as_recorded is None:
            return None
    return RunMatch(as_recorded, reordered, statistics_difference(as_recorded, saved))


def label_option(name: str) -> str:
    """``--label-column NAME`` as a shell takes it: the name quoted (:func:`shlex.quote`), and
    after ``=`` when it starts with ``-``, which argparse would read as an option (review95 L7)."""
    quoted = shlex.quote(name)
    return f"--label-column={quoted}" if name.startswith("-") else f"--label-column {quoted}"


def moved_label(dataset: data.Dataset, saved: checkpoint.Checkpoint) -> str | None:
    """``the run's label column y is a feature column of these data, and c was read as the label``
    when the checkpoint's run's label column is among ``dataset``'s feature columns (a file whose
    columns moved, read with the default last column as the label; review92 F9); else None."""
    if dataset.label_name == saved.label_column or saved.label_column not in dataset.feature_names:
        return None
    return (f"the run's label column {data.display_name(saved.label_column)} is a feature column of these "
            f"data, and {data.display_name(dataset.label_name)} was read as the label")


def _order_too(columns: Sequence[str] | None, label: str, resumed: Resumed) -> str:
    """:func:`_order_advice` for a file of ``columns`` read with the run's ``label`` column by
    name: its other columns, in their order, are the features; "" when ``columns`` is None."""
    if columns is None or label not in columns:
        return ""
    return _order_advice(tuple(name for name in columns if name != label), resumed)


def _order_advice(by_name: tuple[str, ...], resumed: Resumed) -> str:
    """`` and put the feature columns in the run's order (a, b, c): read so, they are the run's
    in another order`` when the features ``by_name`` (read with the run's label column by name)
    are the run's in another order, for a run that read its label from the last column (no
    ``--label-column``); else ""."""
    saved = resumed.saved
    if resumed.training.settings.get("label_column") is not None:
        return ""
    if by_name == tuple(saved.feature_names) or sorted(by_name) != sorted(saved.feature_names):
        return ""
    order = ", ".join(data.display_name(name) for name in saved.feature_names)
    return (f" and put the feature columns in the run's order ({order}): read so, they are the run's in "
            "another order")


def _reordered_once_moved(dataset: data.Dataset, resumed: Resumed) -> str:
    """`` and put the feature columns in the run's order (a, b, c): read so, they are the run's in
    another order`` when ``dataset``, whose label column moved (:func:`moved_label`), read with the
    run's label column would have the run's feature columns in another order, which resume then
    refuses too (review98 L5: one refusal says both); else "". Told only for a run that read its
    label from the last column (no ``--label-column``), whose place in the file is then known."""
    features = (name for name in dataset.feature_names if name != resumed.saved.label_column)
    return _order_advice((*features, dataset.label_name), resumed)


def by_checkpoint_order(loaded: data.Dataset, wanted: tuple[str, ...]) -> data.Dataset | None:
    """``loaded`` with its feature columns (values and statistics) in the order of the
    checkpoint's feature names ``wanted``, when its names are those, each once, in another order;
    else None (review90 F8: predict and inspect name such data, review91 F10: resume too)."""
    names = loaded.feature_names
    if tuple(names) == tuple(wanted) or len(set(names)) != len(names) or sorted(names) != sorted(wanted):
        return None
    position = {name: i for i, name in enumerate(names)}  # review243 F10: names.index was quadratic
    order = [position[name] for name in wanted]
    return dataclasses.replace(
        loaded, x_train=loaded.x_train[:, order], x_test=loaded.x_test[:, order],
        x_val=None if loaded.x_val is None else loaded.x_val[:, order],
        feature_mean=np.asarray(loaded.feature_mean)[order],
        feature_scale=np.asarray(loaded.feature_scale)[order], feature_names=wanted,
    )


def recorded_as(dataset: data.Dataset, recorded: str) -> data.Dataset | None:
    """``dataset`` as the run that recorded the digest ``recorded`` held it: ``dataset`` itself
    when :func:`data_digest` gives ``recorded``; for regression, when the digest is that of the
    targets rounded to the features' dtype, as torchlean recorded it before it kept the targets in
    float64 (review86 F1), ``dataset`` with its targets so rounded (the statistics that run saved
    are those of the rounded targets); None when neither is ``recorded``."""
    if data_digest(dataset) == recorded:
        return dataset
    if dataset.task != "regression":
        return None
    dtype = dataset.x_train.dtype
    with np.errstate(over="ignore"):  # a target beyond float32 rounds to inf: other data (review107 F2)
        rounded = dataclasses.replace(
            dataset, y_train=dataset.y_train.astype(dtype), y_test=dataset.y_test.astype(dtype),
            y_val=None if dataset.y_val is None else dataset.y_val.astype(dtype),
        )
    return rounded if data_digest(rounded) == recorded else None


def check_data(resumed: Resumed | None, dataset: data.Dataset, source: str) -> None:
    """Check that ``dataset`` is the data the saved run trained on (nothing without ``--resume``),
    before anything is said about those data (their notes, review103 F9) or done with them.

    Raises:
        TorchLeanError: the data differ from the run's (``source`` names them), their statistics
            from the checkpoint's (:func:`statistics_difference`), or their class or feature
            names from the checkpoint's (:func:`names_difference`); an option repeated to the
            resumed run that reads the data otherwise than its run did (``--task``,
            ``--label-column``, ``--header``/``--no-header``).
    """
    if resumed is None:
        return
    shown = shown_path(resumed.path)
    _check_repeated(resumed, dataset)
    stdin = str(source) in ("-", data.STDIN) and not resumed.dataset_given  # not "the recorded path -"
    named = data_shown(source) if stdin else f"{resumed.data_named} {shown_path(source)}"  # review90 F10
    match = run_match(dataset, resumed.saved, resumed.digest)
    if match is None:
        moved = moved_label(dataset, resumed.saved)
        why = digest_difference(dataset, resumed.saved) if moved is None else (
            f"{moved}: if the columns were moved, pass {label_option(resumed.saved.label_column)}"
            f"{_reordered_once_moved(dataset, resumed)}")
        raise TorchLeanError(
            f"the data of {named}{_read_here(resumed)} differ from those the run in {shown} trained on "
            f"({why}): resume with the data it was trained on"
        )
    if match.reordered and match.statistics is not None:  # reordered and in other units (review92 F1)
        raise TorchLeanError(
            f"checkpoint {shown}: the data of {named}{_read_here(resumed)} are not those its run trained "
            f"on: their feature columns are the run's in another order, and once reordered their "
            f"standardised values hash alike, but {match.statistics} (the same rows in other units or "
            "with an offset): resume with the data the run trained on, or train a new run on these data"
        )
    if match.reordered:
        raise TorchLeanError(
            f"the data of {named}{_read_here(resumed)} are those the run in {shown} trained on with the "
            "feature columns in another order, and train reads columns in their order, so each weight "
            "would go on with another feature: put the columns in the run's order "
            f"({', '.join(data.display_name(n) for n in resumed.saved.feature_names)}), or train a new run"
        )
    if match.statistics is not None:  # review88 F1: as inspect and predict compare them
        raise TorchLeanError(
            f"checkpoint {shown}: the data of {named}{_read_here(resumed)} are not those its run trained "
            f"on: their standardised values hash alike, but {match.statistics} (the same rows in other "
            "units or with an offset): resumed, the model would go on standardising with other statistics "
            "than its first epochs did; resume with the data the run trained on, or train a new run on "
            "these data"
        )
    names = names_difference(match.dataset, resumed.saved)
    if names is not None:  # review67 F3: the digest agrees, the data's names or the checkpoint's differ
        raise TorchLeanError(
            f"checkpoint {shown}: the data of {named} hash as those its run trained on, but {names} "
            "(the data's names or the checkpoint's were edited): its model would go on under other "
            "names; resume with data named as the checkpoint names them, or train a new run on these data"
        )


def restore(
    resumed: Resumed | None,
    trainer: Trainer[Any, Any],
    held_out: Validation | None = None,
) -> None:
    """Put the saved run's weights, optimizer state, epoch count and random counter in ``trainer``
    (nothing without ``--resume``; its data were checked first, :func:`check_data`); with a
    validation part (``held_out``), its history in ``held_out``. The weights trained on are the
    last epoch's: the training state's ``last_weights`` when the checkpoint's weights are the best
    epoch's (early stopping restored them), which then become the monitor's best.

    Raises:
        TorchLeanError: weights or optimizer state that do not fit the rebuilt model or optimizer
            (a hand-edited file).
    """
    if resumed is None:
        return
    shown = shown_path(resumed.path)
    training = resumed.training
    _warn_not_finite(resumed)
    last = resumed.saved.weights if training.last_weights is None else training.last_weights
    try:
        trainer.model.load_state(last)
        trainer.optimizer.load_state_dict(training.optimizer)
    except TorchLeanError as error:
        raise TorchLeanError(f"checkpoint {shown}: {error}") from None
    trainer.epochs_done = training.epochs_done
    trainer.random_counter = training.random_counter  # dropout masks go on where the run's stopped
    if held_out is not None:
        assert training.val_losses is not None and training.val_metrics is not None  # checked by prepare
        held_out.resume(training.val_losses, training.val_metrics, resumed.saved.weights)


def check_steps(resumed: Resumed | None, trainer: Trainer[Any, Any], rows: int, batch_size: int) -> None:
    """Refuse a resumed run whose optimizer step counts (restored in ``trainer``) are not those
    its epochs done take: ``epochs_done`` epochs of ``rows`` training rows in batches of
    ``batch_size`` (the checkpoint's) are ``epochs_done * ceil(rows / batch_size)`` steps, each
    parameter's the same, a frozen one's 0. A run saves at an epoch's end, so they agree unless
    the checkpoint was edited (its batch size, epochs done or step counts: review158 F7), and the
    resumed run would then be neither the saved run nor any uninterrupted one. A batch size edited
    to one with the same steps an epoch (30 for 32 on 120 rows) is not seen (review162 F1).

    Raises:
        TorchLeanError: naming the counts and what they should be.
    """
    if resumed is None:
        return
    per_epoch = -(-rows // batch_size)
    expected = resumed.training.epochs_done * per_epoch
    optimizer = trainer.optimizer
    wanted = [0 if optimizer.is_frozen(i) else expected for i in range(len(optimizer.param_steps))]
    if optimizer.steps == expected and optimizer.param_steps == wanted:
        return
    counts = (f"took {optimizer.steps} steps" if optimizer.steps != expected
              else f"counts {optimizer.param_steps} steps per parameter")
    done = resumed.training.epochs_done
    raise TorchLeanError(
        f"checkpoint {shown_path(resumed.path)}: its optimizer {counts}, but {done} "
        f"epoch{'' if done == 1 else 's'} of {rows} training rows in batches of {batch_size} take {expected} "
        f"({per_epoch} an epoch"
        f"{', per parameter ' + str(wanted) if optimizer.steps == expected else ''}): its epochs done, "
        "batch size or optimizer state was edited, so the resumed run would be neither the saved run nor "
        "an uninterrupted one; train a new run"
    )


def _warn_not_finite(resumed: Resumed) -> None:
    """A ``warning:`` line on stderr when arrays of the checkpoint the run resumes from hold NaN or
    infinite values (a diverged run's weights and optimizer state, Adam's moments, or a hand
    edit's), naming them as the archive does (``optimizer/second.0``, ``weights/0.weight``,
    ``last_weights/...``), and saying what the resumed run does with them: as ``--save`` warns of
    such weights and the run goes on, it trains on from the weights it continues from
    (``last_weights/`` when the file has them, else ``weights/``) and the optimizer state, and its
    losses will likely not be finite (not a matter of ``--lr``); under early stopping with
    ``last_weights/``, ``weights/`` are the best epoch's, which it restores at the end unless a
    later epoch improves (review31 F3)."""
    best_apart = resumed.training.last_weights is not None
    bad = [(name.partition("/")[0] + "/", f"{name} ({count} of {size} values)")
           for name, count, size in resumed.saved.not_finite()]
    if not bad:
        return
    more = f" and {len(bad) - 3} more arrays" if len(bad) > 3 else ""
    effects = []
    if any(prefix != "weights/" or not best_apart for prefix, _ in bad):
        effects.append("the resumed run trains on from them, and its losses will likely not be finite")
    if best_apart and any(prefix == "weights/" for prefix, _ in bad):
        effects.append("weights/ are the best epoch's, which the resumed run restores at the end unless a "
                       "later epoch improves")
    print(f"warning: checkpoint {shown_path(resumed.path)} holds values that are not finite (NaN or "
          f"infinite) in {', '.join(text for _, text in bad[:3])}{more}: the run it saved diverged, or the "
          f"file was edited; {'; '.join(effects)}", file=sys.stderr, flush=True)


def unsaved_note(resumed: Resumed | None, save: object) -> str:
    """The ``note:`` of a resumed run without ``--save`` (its epochs would be trained and lost
    while the checkpoint keeps the earlier ones: review42 F2), else ""."""
    if resumed is None or save is not None:
        return ""
    path = shown_path(resumed.path)
    return (
        f"note: this run saves nothing (no --save): {path} keeps its {resumed.epochs_before} epoch(s); "
        f"pass --save {shell_word(resumed.path)} to update it, or --save NEW_PATH\n"
    )


def header(resumed: Resumed | None, trainer: Trainer[Any, Any]) -> str:
    """The header line of a resumed run: ``resumed_from=PATH epochs_before=4 steps_before=16``
    ("" without ``--resume``)."""
    if resumed is None:
        return ""
    return (
        f"resumed_from={header_value(resumed.path)} epochs_before={resumed.epochs_before} "
        f"steps_before={trainer.steps_done}\n"
    )


def training_state(
    args: argparse.Namespace,
    trainer: Trainer[Any, Any],
    dataset: data.Dataset,
    held_out: Validation | None = None,
) -> checkpoint.TrainingState:
    """The training state ``--save`` records: the trainer's optimizer state, epochs done and random
    counter, the run's total ``--epochs``, its settings and the data digest; with a validation part
    (``held_out``, after :meth:`~torchlean.cli._validation.Validation.finish`), the whole run's
    validation losses and metrics, and the last epoch's weights when early stopping restored
    another's."""
    settings = {dest: _encode(getattr(args, dest)) for dest in _settings(getattr(args, _PARSER))}
    settings[DIGEST] = data_digest(dataset)
    return checkpoint.TrainingState(
        epochs_done=trainer.epochs_done,
        epochs=args.epochs,
        random_counter=trainer.random_counter,
        optimizer=trainer.optimizer.state_dict(),
        settings=settings,
        val_losses=None if held_out is None else tuple(held_out.losses),
        val_metrics=None if held_out is None else tuple(held_out.metrics),
        last_weights=None if held_out is None else held_out.last_weights,
    )


def earlier_capsules(resumed: Resumed | None) -> list[dict[str, Any]] | None:
    """The ``earlier_capsules`` of the checkpoint and record a resumed run writes (review147 F1):
    those the resumed checkpoint holds (its earlier segments unknown where it holds none, as in a
    file written before torchlean recorded them), then its own segment's capsule-table digest and
    capsules, counted into the last entry when they are that entry's (review149 F1: a run resumed
    many times under one torchlean keeps one entry); None without ``--resume``."""
    if resumed is None:
        return None
    saved = resumed.saved
    before = len(saved.thread_counts()) - 1
    entries = saved.earlier_capsules_json() or (
        [{"segments": before, "capsule_table_sha256": None, "capsules": None}] if before else [])
    digest = None if saved.environment is None else saved.environment["capsule_table_sha256"]
    own = {"segments": 1, "capsule_table_sha256": digest, "capsules": saved.capsules_json()}
    last = entries[-1] if entries else None
    if (last is not None and (last["capsule_table_sha256"], last["capsules"]) == (digest, own["capsules"])
            and digest is not None and own["capsules"] is not None):
        last["segments"] += 1
    else:
        entries.append(own)
    return entries


def record(resumed: Resumed | None, stop: Stop) -> dict[str, Any]:
    """The JSON record's fields of this module: ``resumed_from`` (the checkpoint's path) and
    ``epochs_before`` when resumed, ``interrupted: true`` when Ctrl-C stopped the run."""
    fields: dict[str, Any] = {}
    if resumed is not None:
        fields.update(resumed_from=str(resumed.path), epochs_before=resumed.epochs_before)
    if stop.interrupted:
        fields["interrupted"] = True
    return fields


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))
"""The signals besides SIGINT that a run with ``--save`` takes as a request to stop and save
(SIGHUP does not exist on Windows)."""


def signal_name(signum: int) -> str:
    """``Ctrl-C`` for SIGINT, else the signal's name (``SIGTERM``), as the notes call it."""
    return "Ctrl-C" if signum == signal.SIGINT else signal.Signals(signum).name


def _note(text: str) -> None:
    """Print ``text`` on stderr from the signal handler. A terminal that hung up (the SIGHUP of a
    closed window) fails every later write with EIO, which would end the run at its next epoch
    line with nothing saved (review78 F1): the standard streams that are terminals then write to
    ``/dev/null`` for the rest of the run, which goes on to test and save. The epoch's progress
    bar, drawn on stderr when it is a terminal, is cleared first and drawn again below the note
    (tqdm's ``write``; review86 F4: the note was glued to the bar's line); without the lock, which
    the interrupted code may hold."""
    try:
        tqdm.write(text, file=sys.stderr, nolock=True)
        sys.stderr.flush()
    except (OSError, ValueError):  # EIO from a hung-up terminal, or stderr closed
        _silence_terminals()


def _silence_terminals() -> None:
    """Point file descriptors 1 and 2 at ``/dev/null`` where they are terminals (the hung-up
    one); a stream redirected to a file or a pipe keeps writing there."""
    null = os.open(os.devnull, os.O_WRONLY)
    try:
        for fd in (1, 2):
            with contextlib.suppress(OSError):
                if os.isatty(fd):
                    os.dup2(null, fd)
    finally:
        os.close(null)


class Stop:
    """Ctrl-C while a run with ``--save`` trains (:meth:`arm`ed): the first one asks the run to
    stop at the end of the epoch (:attr:`requested`; a ``note:`` on stderr says so); a second
    one, or one while not armed, interrupts at once (``KeyboardInterrupt``: ``error:
    interrupted``, exit status 130, nothing saved). The second one says so in a ``note:`` also
    while the run tests and saves after its epoch (review70 F5), naming a checkpoint already
    written (:meth:`mark_saved`). A first one while the run tests and saves after its last epoch
    (:meth:`finishing`) lets it finish that, with a ``note:`` (review75 F1: it used to stop at
    once and lose the run). A run that ends by itself in the epoch the first one came in, or
    before it (its last epoch, or the one after which early stopping ends it: :meth:`complete`),
    is complete, not :attr:`interrupted`. SIGTERM and SIGHUP act as Ctrl-C does (:func:`interruptible`):
    the notes name the signal, and a run they stopped exits with 128 + its number (143, 129), as a
    process that signal ended would."""

    def __init__(self, active: bool) -> None:
        self.active = active
        self.armed = False
        self.requested = False
        self.signum: int = signal.SIGINT  # the signal that asked the run to stop
        self.late = False  # the first Ctrl-C came after the training loop, while it tested and saved
        self.training_done = False
        self.ended: str | None = None
        self.saved: str | None = None  # the checkpoint written, as the note shows it

    @property
    def first(self) -> str:
        """The signal that asked the run to stop, as the notes name it (``Ctrl-C``, ``SIGTERM``)."""
        return signal_name(self.signum)

    @property
    def exit_status(self) -> int:
        """128 + that signal's number: 130 for Ctrl-C, 143 for SIGTERM, 129 for SIGHUP."""
        return 128 + self.signum

    def complete(self, epoch: int, epochs: int, why: str) -> None:
        """The run ended by itself after ``epoch`` of ``epochs`` (``why``: ``"its last"``, or
        ``"after which early stopping ended the run"``), in or before the epoch a Ctrl-C came in
        (if one did): the run is complete, not interrupted (:meth:`status` says so and returns 0,
        the record has no ``interrupted``)."""
        self.ended = f"epoch {epoch}/{epochs}, {why}"

    @property
    def interrupted(self) -> bool:
        """Whether a Ctrl-C stopped the run before its end: it can be resumed."""
        return self.requested and self.ended is None

    def arm(self) -> None:
        """From now, the first Ctrl-C stops the run at the end of its epoch."""
        self.armed = self.active

    def finishing(self) -> None:
        """The training loop is over: from now, a first Ctrl-C lets the run test and save."""
        self.training_done = True

    def mark_saved(self, path: Path) -> None:
        """The run's checkpoint is written to ``path``: a Ctrl-C from now says so."""
        self.saved = shown_path(path)

    def handle(self, signum: int, _frame: FrameType | None) -> None:
        """The handler of SIGINT, SIGTERM and SIGHUP (:func:`interruptible`)."""
        name = signal_name(signum)
        if self.requested:  # armed, or testing and saving after the epoch the first one came in
            kept = "nothing is saved" if self.saved is None else f"{self.saved} is saved already"
            again = f"{name} again" if signum == self.signum else f"{name} after {self.first}"
            _note(f"note: {again}: the run stops at once, and {kept}")
        if not self.armed or self.requested:
            if signum == signal.SIGINT:
                raise KeyboardInterrupt  # error: interrupted, exit 130
            _note(f"error: interrupted by {name}")
            raise SystemExit(128 + signum)  # as the signal's default action would end it, cleaning up
        self.requested = True
        self.signum = signum
        later = "Ctrl-C again" if name == "Ctrl-C" else f"{name} again (or Ctrl-C)"
        if not self.training_done:
            _note(f"note: {name}: the run stops at the end of this epoch, then tests and saves the model; "
                  f"{later} stops at once, saving nothing")
            return
        self.late = True
        finish = (
            f"the run stops once it has tested and saved the model; {later} stops at once, saving nothing"
            if self.saved is None
            else f"{self.saved} is saved; the run stops once its report is written; {later} stops now"
        )
        _note(f"note: {name}: {finish}")

    def status(self, args: argparse.Namespace, epochs_done: int) -> int:
        """The exit status: 0, or 130 (128 + the signal's number: 143 for SIGTERM) after a
        ``note:`` naming the checkpoint that continues the run
        (0 and a ``note:`` that the run is complete when it ended by itself in the Ctrl-C's epoch)."""
        if not self.requested:
            return 0
        if self.ended is not None:
            came = f"after {self.ended}, while the run tested and saved" if self.late else f"in {self.ended}"
            print(f"note: {self.first} came {came}: the run is complete (nothing to resume)", file=sys.stderr)
            return 0
        saved = shell_word(args.save)  # pasted into a shell as it is (review44 F6)
        how = "" if self.first == "Ctrl-C" else f" by {self.first}"
        # a run that read standard input reads it again: the command says to pipe the data in (review128 F5)
        piped = " < FILE (the data this run read from standard input)" if str(args.dataset) in (
            "-", data.STDIN) else ""
        print(f"note: interrupted{how} after epoch {epochs_done}/{args.epochs}; continue with: torchlean "
              f"train --resume {saved} --save {saved}{piped}", file=sys.stderr)
        return self.exit_status


@contextlib.contextmanager
def interruptible(active: bool) -> Iterator[Stop]:
    """A :class:`Stop` whose handler takes the stopping signals for the duration (``active``: the
    run saves a checkpoint; and only in the main thread, where Python delivers signals), the
    previous handlers restored after: SIGINT (Ctrl-C) unless it is ignored, as a shell starts
    background jobs (the run then ignores it, as one without ``--save`` does; review31 F5), and
    SIGTERM and SIGHUP where they have their default action, which ends the process at once:
    what ``timeout``, ``kill``, systemd, docker and Slurm send, and a closed terminal (review76 F3:
    such a run lost every epoch, and a signal during the save left its temporary file)."""
    taken: list[signal.Signals] = []
    if active and threading.current_thread() is threading.main_thread():
        if signal.getsignal(signal.SIGINT) is not signal.SIG_IGN:
            taken.append(signal.SIGINT)
        taken += [sig for sig in _TERMINATING if signal.getsignal(sig) is signal.SIG_DFL]
    stop = Stop(bool(taken))
    previous = {sig: signal.signal(sig, stop.handle) for sig in taken}
    try:
        yield stop
    finally:
        for sig, handler in previous.items():
            signal.signal(sig, handler)

