"""``torchlean inspect CHECKPOINT [--dataset NAME_OR_CSV [--delimiter D]] [--report-json PATH]``:
what a checkpoint says about the run that wrote it, for an auditor, without opening the ``.npz`` by
hand.

Prints one ``name: value`` line per fact (reading no weights into a model and running nothing):
the file and its SHA-256 (``sha256sum``'s), the format version, the model and its sizes, the
task and classes, the data (``dataset``, label column, features, the split's ``split_seed`` and
``test_fraction``, the run's data digest ``data_sha256``), the trainer's ``seed``, the profile and
execution mode trained under, ``torch_threads`` (marked ``mixed``, with each segment's count, for a
run resumed under another count: ``torch_threads_segments``), the training state (epochs done of the run's
total, the random counter, whether a validation history is kept) and its settings, the
``environment`` block (:func:`torchlean.provenance.environment`: versions, platform, command
line, working directory, UTC time, the profile's capsule-table digest), whether this torchlean's
capsule table for that profile has the same digest (``capsule_table: same as this torchlean's``,
``differs from this torchlean's ...``, or ``unknown``: a checkpoint without an environment), the
capsules that computed the run (:attr:`torchlean.checkpoint.Checkpoint.capsules`: ``capsules: 5
(first-use order)``, then one line per capsule as ``train``'s audit lines print it), after
``--resume`` the earlier segments' (``earlier_segments: 2 ...``, then per run of segments with one
capsule table and list, ``segments 1-2 of 3: another capsule table (...); 5 capsules, 1 not in the
last segment's list:`` and those capsules' lines: :func:`_earlier_lines`), and whether
each recorded capsule is still in this torchlean's capsule table for the profile with the same labels
(``capsules_match: same as this torchlean's ...``, ``differs from this torchlean's ...
(<capsule> (<op>): trust checked, now trusted-external; ...)``, an earlier segment's capsule as
``(<capsule> (<op>, as segment 1 ran it): ...)`` (``segments 2-4`` for a run of segments
that shared a table and list), or ``unknown``: a checkpoint that
does not record them),
whether this torchlean's source has the recorded ``torchlean_source_sha256``
(``torchlean_source: same as this torchlean's``, ``differs ...``, or ``unknown``: a checkpoint
written before torchlean recorded it), and the digest of the weights
(:func:`torchlean.provenance.weights_sha256`). A field the checkpoint does not record (an older
file, or one built in Python) is ``unknown``. The checkpoint's texts are shown as messages show
names (:func:`torchlean.data.display_name`: a text that is not printable as its Python literal, so
one field is one line and no control character reaches the terminal; review67 F2), and a value or
list of names over :data:`LINE_LIMIT` characters is cut, naming its length (review67 F7); the JSON
record keeps them whole.

``--dataset NAME_OR_CSV`` also loads those data as the checkpoint's run loaded its data (its
delimiter unless ``--delimiter`` is given) and compares their digest with the recorded one
(``data_matches: yes | no | unknown``), as ``torchlean predict --split`` does: ``unknown`` when the
checkpoint records no digest, or when the data cannot be loaded so (a ``note:`` on stderr and
``dataset_error`` in the JSON say why; review64 F2), never ``no`` (but for the run's data whose
label column moved, which a second note names: review98 M1); a missing file or a folder is
one ``error:`` line, as for ``predict``. ``--report-json PATH`` (``-`` for stdout, the report then
on stderr, with no ``wrote`` line) writes the same facts as a JSON object; naming the checkpoint or
the ``--dataset`` file is refused (review64 F1). A file that is not a checkpoint is one ``error:``
line, exit status 2, as for ``predict``; ``--format`` is refused naming ``--report-json``.
"""

from __future__ import annotations

import argparse
import shlex
import sys
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any

from torchlean import _csv, _delimiter, checkpoint, data, provenance
from torchlean.backend import profiles
from torchlean.backend.display import LINE_LIMIT
from torchlean.backend.errors import TorchLeanError
from torchlean.cli import _checkpoint_input as checkpoint_input
from torchlean.cli import _resume
from torchlean.cli._args import DELIMITER_HELP, delimiter, json_record_instead, refuse_csv_options
from torchlean.cli._completion import completed
from torchlean.cli._output import (
    STDOUT,
    check_distinct,
    check_writable,
    data_shown,
    dataset_name,
    escaped,
    file_path,
    given_path,
    input_dataset,
    is_stdout,
    output_path,
    report_beside,
    shown_path,
    shown_text,
    write_json_record,
)
from torchlean.cli._spelling import cli_spelling
from torchlean.cli._stdout import reader_may_leave

__all__ = ["facts", "register", "run"]


def register(subparsers: Any) -> None:
    """Add the ``inspect`` subcommand to ``subparsers``."""
    parser = subparsers.add_parser(
        "inspect",
        help="print what a checkpoint records about its run (versions, data digest, settings)",
        description="Print a checkpoint's metadata (written by torchlean train --save) for an audit.",
    )
    parser.add_argument("checkpoint", type=file_path, metavar="CHECKPOINT",
                        help="a checkpoint written by torchlean train --save (or checkpoint.save)")
    parser.add_argument("--dataset", type=input_dataset, default=None,
                        help=f"{' | '.join(data.DATASETS)} or a path to a CSV file: load it as the "
                        "checkpoint's run loaded its data and say whether its digest is the recorded one "
                        "(unknown, with the reason, when they cannot be loaded so; no for the run's data "
                        "with its label column moved)")
    parser.add_argument("--delimiter", type=delimiter, default=None, metavar="D",
                        help=DELIMITER_HELP.replace("(default: ,)", "(default: the one the checkpoint's run "
                                                    "read its data with, as torchlean predict compares)"))
    parser.add_argument("--report-json", type=output_path, default=None, metavar="PATH",
                        help="also write the facts as a JSON object to PATH (- for standard output; not "
                        "the checkpoint or the --dataset file)")
    parser.set_defaults(func=run, refuse_extras=json_record_instead("inspect"))


def facts(
    path: Path, saved: checkpoint.Checkpoint, digest: str, dataset: str | None = None,
    delimiter: str | None = None,
) -> dict[str, Any]:
    """What :func:`run` reports of the checkpoint ``saved`` read from ``path``, whose bytes have
    the SHA-256 ``digest``, as JSON-ready data (``None`` where the checkpoint records nothing;
    ``capsules_match`` and ``capsules_differences`` as :func:`_capsules_compared` gives them); with
    ``dataset`` (read with ``delimiter``, default the run's), ``dataset_given``,
    ``dataset_sha256``, ``data_matches`` (None when unknown), ``data_difference`` (why they are
    not the run's data when ``data_matches`` is False, else None) and ``dataset_error`` (why the
    data could not be loaded as the run loaded its data; None when they were)."""
    from torchlean.cli import predict  # the data comparison of predict --split

    training = saved.training
    environment = None if saved.environment is None else {
        key: list(value) if isinstance(value, tuple) else value for key, value in saved.environment.items()
    }
    table = None  # a digest comes with its profile (the checkpoint refuses one without: review65 F5)
    if saved.environment is not None and saved.environment["capsule_table_sha256"] is not None:
        recorded, profile = saved.environment["capsule_table_sha256"], saved.environment["profile"]
        table = recorded == provenance.capsule_table_sha256(profile)
    recorded_source = None if saved.environment is None else saved.environment["torchlean_source_sha256"]
    current_source = provenance.source_sha256_or_none()
    source = None if recorded_source is None or current_source is None else recorded_source == current_source
    record: dict[str, Any] = {
        "checkpoint": str(path),
        "checkpoint_sha256": digest,
        "version": saved.version,
        "model": saved.model,
        "hidden": saved.hidden,
        "features": saved.features,
        "outputs": saved.outputs,
        "dropout": saved.dropout,
        "dtype": saved.dtype,
        "task": saved.task,
        "classes": list(saved.classes),
        "dataset": dataset_name(saved.dataset),  # standard input as -, as train's record (review88 F8)
        "label_column": saved.label_column,
        "feature_names": list(saved.feature_names),
        "seed": saved.seed,
        "split_seed": saved.split_seed,
        "test_fraction": saved.test_fraction,
        "data_sha256": saved.data_sha256,
        "profile": saved.profile,
        "execution": saved.execution,
        "torch_threads": saved.torch_threads,
        "torch_threads_segments": None if saved.torch_threads_segments is None else list(
            saved.torch_threads_segments),
        "training": None if training is None else {
            "epochs_done": training.epochs_done,
            "epochs": training.epochs,
            "random_counter": training.random_counter,
            "validation": training.val_losses is not None,
            "settings": {name: dataset_name(value) if name == "dataset" and isinstance(value, str) else value
                         for name, value in training.settings.items()},
        },
        "environment": environment,
        "capsule_table_matches": table,
        "capsules_order": saved.capsules_order,
        "capsules": saved.capsules_json(),
        "earlier_capsules": saved.earlier_capsules_json(),
        **_capsules_compared(saved),
        "torchlean_source_matches": source,
        "weights_sha256": provenance.weights_sha256(saved.weights),
        "not_finite": [{"array": name, "count": count, "size": size}
                       for name, count, size in saved.not_finite()],
    }
    if dataset is not None:
        compared = predict.compare_data(dataset, saved, delimiter)
        # review86 F5: not the fresh-run hint to pass --label-column, which inspect does not take
        failure = None if compared.failure is None else _resume.as_the_run_read(compared.failure, saved)
        record.update(dataset_given=dataset_name(dataset), dataset_sha256=compared.digest,
                      data_matches=compared.matches, data_difference=compared.difference,
                      dataset_error=_delimiter_advice(failure, saved, delimiter))
    return record


_LABELS = ("provider", "device", "trust", "vjp", "reduction")
"""The labels of a recorded capsule row that :func:`_capsules_compared` compares with this
torchlean's capsule table for the profile."""


def _segments(earlier: Sequence[Mapping[str, Any]] | None) -> list[tuple[int, int]]:
    """The first and last segment number (from 1) that each ``earlier_capsules`` entry stands for."""
    spans, first = [], 1
    for entry in earlier or ():
        spans.append((first, first + entry["segments"] - 1))
        first += entry["segments"]
    return spans


def _span_text(span: tuple[int, int]) -> str:
    """``segment 2`` or ``segments 1-3``."""
    return f"segment {span[0]}" if span[0] == span[1] else f"segments {span[0]}-{span[1]}"


def _recorded_rows(capsules: Sequence[Mapping[str, Any]] | None,
                   earlier: Sequence[Mapping[str, Any]] | None) -> list[tuple[int | None, Mapping[str, Any]]]:
    """The recorded capsule rows with the first segment that ran each: the last segment's
    (``capsules``; segment None), then those of the earlier segments of a resumed run
    (``earlier_capsules``) not already listed with the same labels."""
    rows: list[tuple[int | None, Mapping[str, Any]]] = [(None, row) for row in capsules or ()]
    seen = {_identity(row) for _, row in rows}
    for (first, _), entry in zip(_segments(earlier), earlier or (), strict=True):
        for row in entry["capsules"] or ():
            if _identity(row) not in seen:
                seen.add(_identity(row))
                rows.append((first, row))
    return rows


def _identity(row: Mapping[str, Any]) -> tuple[Any, ...]:
    """A recorded capsule row's op, capsule name and labels."""
    return (row["op"], row["capsule"], *(row[key] for key in _LABELS))


def _capsules_compared(saved: checkpoint.Checkpoint) -> dict[str, Any]:
    """Whether each of the checkpoint's recorded capsules (:func:`_recorded_rows`: the last
    segment's, then an earlier segment's not among them) is in this torchlean's capsule table for its
    profile (:func:`torchlean.provenance.capsule_table`: the capsules the profile can select),
    matched by op and capsule name, with the same :data:`_LABELS`: ``capsules_match`` (None when
    none are recorded) and ``capsules_differences``, one ``{"op", "capsule", "segment", "now"}``
    per recorded row that differs, in that order, ``segment`` None for a row of the last segment,
    else the first earlier segment (from 1) that ran it, ``now`` the differing labels as this
    torchlean's table has them (``{"trust": "trusted-external"}``) or None when the table holds no
    such capsule (None when none are recorded, ``[]`` when they match)."""
    rows = _recorded_rows(saved.capsules, saved.earlier_capsules)
    if not rows:
        return {"capsules_match": None, "capsules_differences": None}
    table = {(row["op"], row["capsule"]): row for row in provenance.capsule_table(saved.profile)["capsules"]}
    differences: list[dict[str, Any]] = []
    for segment, row in rows:
        current = table.get((row["op"], row["capsule"]))
        now = None if current is None else {key: current[key] for key in _LABELS if current[key] != row[key]}
        if now is None or now:
            differences.append({"op": row["op"], "capsule": row["capsule"], "segment": segment, "now": now})
    return {"capsules_match": not differences, "capsules_differences": differences}


def _capsule_lines(record: dict[str, Any], profile: str) -> list[str]:
    """The ``capsules:`` line (the count and the order), one line per recorded capsule in the
    style of the run's audit lines (:func:`torchlean.backend.report.audit_line`: ``  op: capsule
    provider=... trust=... vjp=... reduction=...``, the capsule's name shown as other texts), and
    the earlier segments' lines of a resumed run (:func:`_earlier_lines`), and the
    ``capsules_match:`` line."""
    rows = record["capsules"]
    lines = (["capsules: unknown (written before torchlean recorded them, or built in Python without them)"]
             if rows is None else [f"capsules: {len(rows)} ({record['capsules_order']} order)"])
    lines.extend(_row_line(row) for row in rows or ())
    lines.extend(_earlier_lines(record))
    differences = record["capsules_differences"]
    if differences is None:
        return [*lines, "capsules_match: unknown (no capsules recorded)"]
    shown_profile = _text(profile)
    if not differences:
        lines.append(f"capsules_match: same as this torchlean's for profile {shown_profile}")
        return lines
    said = []
    recorded_rows = {  # a segment lists an op and capsule name once
        (row["op"], row["capsule"], segment): row
        for segment, row in _recorded_rows(record["capsules"], record["earlier_capsules"])
    }
    spans = {span[0]: span for span in _segments(record["earlier_capsules"])}
    for difference in differences[:_DIFFERENCES_SHOWN]:
        now, segment = difference["now"], difference["segment"]
        recorded = recorded_rows[(difference["op"], difference["capsule"], segment)]
        what = ("not in its table" if now is None
                else ", ".join(f"{key} {recorded[key]}, now {value}" for key, value in now.items()))
        where = "" if segment is None else f", as {_span_text(spans[segment])} ran it"
        said.append(f"{_text(difference['capsule'])} ({difference['op']}{where}): {what}")
    more = len(differences) - _DIFFERENCES_SHOWN
    if more > 0:
        said.append(f"... ({len(differences)} capsules differ; {_WHOLE})")
    lines.append(f"capsules_match: differs from this torchlean's for profile {shown_profile} "
                 f"({'; '.join(said)})")
    return lines


def _row_line(row: Mapping[str, Any], indent: str = "  ") -> str:
    """One recorded capsule in the style of the run's audit lines."""
    return (f"{indent}{row['op']}: {_text(row['capsule'])} provider={row['provider']} trust={row['trust']} "
            f"vjp={row['vjp']} reduction={row['reduction']}")


def _earlier_lines(record: dict[str, Any]) -> list[str]:
    """After ``--resume``: an ``earlier_segments:`` line, then per entry of ``earlier_capsules``
    (one or more consecutive segments) its capsule table, against the last segment's, and which of
    its capsules the last segment's list does not hold with the same labels (review147 F1);
    nothing for a run of one segment."""
    earlier = record["earlier_capsules"]
    if earlier is None:
        return []
    environment = record["environment"]
    last = None if environment is None else environment["capsule_table_sha256"]
    listed = None if record["capsules"] is None else {_identity(row) for row in record["capsules"]}
    spans = _segments(earlier)
    total = spans[-1][1] + 1
    lines = [f"earlier_segments: {total - 1} (the run was resumed; the capsules above are the last "
             "segment's, these computed the weights before it)"]
    for span, entry in zip(spans, earlier, strict=True):
        digest = entry["capsule_table_sha256"]
        table = ("capsule table unknown" if digest is None
                 else "the last segment's capsule table" if digest == last
                 else f"capsule table {digest}" if last is None
                 else f"another capsule table ({digest})")
        rows = entry["capsules"]
        head = f"  {_span_text(span)} of {total}: {table}"
        if rows is None:
            lines.append(f"{head}; capsules unknown (not recorded)")
            continue
        others = rows if listed is None else [row for row in rows if _identity(row) not in listed]
        said = ("all in the last segment's list" if not others
                else "the last segment's are unknown:" if listed is None
                else f"{len(others)} not in the last segment's list:")
        lines.append(f"{head}; {len(rows)} capsules, {said}")
        lines.extend(_row_line(row, "    ") for row in others)
    # review159 F3: the environment lines are the last segment's; nothing records an earlier one's
    lines.append("  environment: the last segment's only (the earlier segments' numpy SIMD level, torch CPU "
                 "capability and versions are not recorded; --resume printed a note where one changed)")
    return lines


_DIFFERENCES_SHOWN = 3
"""The most differing capsules the ``capsules_match:`` line names."""


def _delimiter_advice(failure: str | None, saved: checkpoint.Checkpoint, given: str | None) -> str | None:
    """``failure`` with the loader's advice to read commas by leaving out ``--delimiter`` made
    right when the option was left out and the checkpoint's delimiter is another (leaving it out
    reads with that one): ``pass --delimiter ,`` (review65 F4)."""
    run = None if saved.training is None else saved.training.settings.get("delimiter")
    comma = cli_spelling(_delimiter.use(_delimiter.COMMA))
    if failure is None or given is not None or not isinstance(run, str) or run == _delimiter.COMMA:
        return failure
    return failure.replace(comma, (
        f"pass --delimiter , (inspect reads the file with the checkpoint's --delimiter {_delimiter.cli(run)} "
        "when the option is left out)"
    ))


_WHOLE = "--report-json has them all"


def _text(value: str) -> str:
    """A text from the checkpoint (or the command line) as a report line shows it: as
    :func:`torchlean.data.display_name` shows names in messages (itself when printable, without
    blanks at its ends and not empty; else its Python literal: ``''``, ``'iris\\n...'``), so one
    field is one line and no control character reaches the terminal (review67 F2); a character
    stdout's encoding cannot write as Python's backslash escape (:func:`shown_text`: a lone
    surrogate is ``\\ud800``, review67 F14); cut after :data:`LINE_LIMIT` characters, with the
    text's length (``'xxxx'... (50000000 characters; --report-json has them all)``)."""
    if len(value) <= LINE_LIMIT:
        return shown_text(data.display_name(value))
    return f"{shown_text(data.display_name(value[:LINE_LIMIT]))}... ({len(value)} characters; {_WHOLE})"


def _names(values: list[Any] | tuple[Any, ...], noun: str) -> str:
    """A list of names (``classes``, ``feature_names``) as a report line shows it: each name as
    :func:`_text` shows it, joined by `` | ``; ``none`` for an empty list; when that is longer
    than :data:`LINE_LIMIT` characters, the first three names, ``...`` and the last, with the
    count (``f0 | f1 | f2 | ... | f19999 (20000 feature names; --report-json has them all)``), as
    messages elide long lists of columns."""
    if not values:
        return "none"
    shown: list[str] = []
    size = -3
    for value in values:  # stops once too long: a million names are not all rendered to be cut
        shown.append(_shown(value))
        size += len(shown[-1]) + 3
        if size > LINE_LIMIT:
            break
    if size <= LINE_LIMIT or len(values) <= 4:
        return " | ".join(shown if len(shown) == len(values) else map(_shown, values))
    return f"{' | '.join(shown[:3])} | ... | {_shown(values[-1])} ({len(values)} {noun}; {_WHOLE})"


def _argv(words: list[str]) -> str:
    """``environment.argv`` as a report line shows it: the words shell-quoted and joined
    (:func:`shlex.join`), each one's characters that are not printable written as backslash
    escapes (:func:`~torchlean.cli._output.escaped`) and a character stdout's encoding cannot
    write as :func:`shown_path` writes it; cut after :data:`LINE_LIMIT` characters of the command
    line, with its length in words and characters."""
    length = sum(map(len, words)) + max(len(words) - 1, 0)
    kept: list[str] = []
    room = LINE_LIMIT
    for word in words:
        if room <= 0:
            break
        kept.append(shlex.quote(shown_text(word[:room])))
        room -= len(word) + 1
    text = " ".join(kept)
    if length <= LINE_LIMIT:
        return text
    return f"{text}... ({len(words)} words, {length} characters; {_WHOLE})"


def _shown(value: object) -> str:
    """A value as a report line shows it: ``unknown`` for None, ``yes``/``no`` for bools, a text
    as :func:`_text` shows it, lists joined by `` | `` (:func:`_names`)."""
    if value is None:
        return "unknown"
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, str):
        return _text(value)
    if isinstance(value, list | tuple):
        return _names(value, "values")
    return str(value)


def _source_line(matches: bool | None, saved: checkpoint.Checkpoint) -> str:
    """The ``torchlean_source:`` line: whether this torchlean's files have the checkpoint's
    recorded digest, and when they do not, whether another version or another build of this
    version wrote it (review104 L4)."""
    fault = provenance.source_fault()
    if fault is not None:
        return f"torchlean_source: unknown ({escaped(fault)})"
    if matches is None:
        return "torchlean_source: unknown (no digest recorded)"
    if matches:
        return "torchlean_source: same as this torchlean's"
    assert saved.environment is not None  # a digest was recorded
    version, current = saved.environment["torchlean"], provenance.environment()["torchlean"]
    wrote = (f"another build of torchlean {_text(str(current))} wrote it" if version == current
             else f"torchlean {_shown(version)} wrote it, this is {_shown(current)}")
    return f"torchlean_source: differs from this torchlean's ({provenance.source_sha256()}): {wrote}"


def _environment_value(key: str, value: Any, profile: str) -> str:
    """The value of the report's ``environment.KEY`` line: the command line as a shell would
    take it (:func:`_argv`), a null ``torch_cpu_capability`` said why (:func:`_no_capability`),
    else as :func:`_shown` shows it."""
    if key == "argv":
        return _argv(value)
    if key == "torch_cpu_capability" and value is None:
        return _no_capability(profile)
    return _shown(value)


def _no_capability(profile: str) -> str:
    """The ``environment.torch_cpu_capability`` line's value where the checkpoint records none:
    ``none (profile checked_cpu runs no torch kernels on the CPU)`` where it is null by design,
    ``not recorded (an older checkpoint, or an environment recorded without its profile)`` for a
    profile that runs them (``provenance.environment()`` records the capability only when given
    one), as the ``torch_threads`` line says it (review133 F5: not ``unknown``, which reads as a
    value lost). ``profile`` is a known one (:meth:`torchlean.checkpoint.Checkpoint` refuses
    another)."""
    if provenance.runs_torch_on_cpu(profiles.get(profile)):  # review135 F4: or made in Python so
        return "not recorded (an older checkpoint, or an environment recorded without its profile)"
    return f"none (profile {_text(profile)} runs no torch kernels on the CPU)"


def _not_finite_line(arrays: list[dict[str, Any]]) -> str:
    """``not_finite: none``, or the arrays holding NaN or infinite values, the first three named
    (review158 F8: inspect said nothing of weights predict then refused to use)."""
    if not arrays:
        return "not_finite: none (every weight and optimizer value is finite)"
    named = ", ".join(f"{_text(a['array'])} ({a['count']} of {a['size']} values)" for a in arrays[:3])
    more = f" and {len(arrays) - 3} more arrays" if len(arrays) > 3 else ""
    weights = any(str(a["array"]).startswith("weights/") for a in arrays)  # what predict reads (review161 F3)
    effects = "predict gives no prediction where they reach and " if weights else ""
    return (f"not_finite: {named}{more}: the run diverged, or the file was edited; {effects}--resume trains "
            "on from them")


def _lines(record: dict[str, Any], saved: checkpoint.Checkpoint) -> list[str]:
    """The report's ``name: value`` lines for ``record`` (:func:`facts`)."""
    nouns = {"classes": "classes", "feature_names": "feature names"}
    lines = [f"{key}: {_names(record[key], nouns[key]) if key in nouns else _shown(record[key])}" for key in (
        "checkpoint", "checkpoint_sha256", "version", "model", "hidden", "features", "outputs", "dropout",
        "dtype", "task", "classes", "dataset", "label_column", "feature_names", "seed", "split_seed",
        "test_fraction", "data_sha256", "profile", "execution",
    )]
    threads = record["torch_threads"]
    unrecorded = "not recorded (torch unused, or an older checkpoint)"
    segments = record["torch_threads_segments"] or [threads]
    mixed = ""
    counts = " | ".join("unknown" if n is None else str(n) for n in segments)
    if len({n for n in segments if n is not None}) > 1:  # review64 F3: may be no uninterrupted run
        mixed = f" (mixed: its segments, the first run then each --resume, ran torch on {counts} threads)"
    elif None in segments and len(segments) > 1:  # review65 F3: whether they differed is unknown
        mixed = (f" (its segments, the first run then each --resume, ran torch on {counts} threads: whether "
                 "they differed is unknown)")
    if not provenance.runs_torch_on_cpu(profiles.get(saved.profile)):  # --resume keeps the profile
        # review159 F5: no count applies, as the capability line says it (not "unknown"; a count a
        # process that had imported torch for other work recorded is no count of this run's kernels)
        held = threads if len(segments) < 2 else counts  # review161 F6: what the JSON holds
        recorded = ("" if all(n is None for n in segments)
                    else f"; the record holds {held}, which no kernel used")
        lines.append(f"torch_threads: none (profile {_text(saved.profile)} runs no torch kernels on the CPU"
                     f"{recorded})")
    else:
        lines.append(f"torch_threads: {unrecorded if threads is None else threads}{mixed}")
    training = record["training"]
    if training is None:
        lines.append("training: none (predict only; --resume needs a checkpoint of torchlean train --save)")
    else:
        lines.append(f"training: {training['epochs_done']} of {training['epochs']} epochs done, "
                     f"random_counter {training['random_counter']}, validation history "
                     f"{_shown(training['validation'])}")
        lines.extend(f"  setting {_text(name)}: {'not given' if value is None else _shown(value)}"
                     for name, value in training["settings"].items() if name != "data_sha256")
    environment = record["environment"]
    if environment is None:
        lines.append("environment: unknown (written before torchlean recorded it, or built in Python "
                     "without it)")
    else:
        lines.extend(f"environment.{key}: {_environment_value(key, value, saved.profile)}"
                     for key, value in environment.items())
    table = record["capsule_table_matches"]
    profile = saved.profile  # the environment's, when it names one, is this one (checkpoint.load checks)
    shown_profile = _text(profile)
    lines.append(
        "capsule_table: unknown (no digest recorded)" if table is None
        else f"capsule_table: same as this torchlean's for profile {shown_profile}" if table
        else f"capsule_table: differs from this torchlean's for profile {shown_profile} "
        f"({provenance.capsule_table_sha256(profile)}): the profile may select other capsules now"
    )
    lines.extend(_capsule_lines(record, profile))
    lines.append(_source_line(record["torchlean_source_matches"], saved))
    lines.append(f"weights_sha256: {record['weights_sha256']}")
    lines.append(_not_finite_line(record["not_finite"]))
    if "data_matches" in record:
        given = _text(record["dataset_given"])
        lines.append(f"dataset_sha256: {_shown(record['dataset_sha256'])} ({given})")
        lines.append(f"data_matches: {_shown(record['data_matches'])}")
    return lines


def run(args: argparse.Namespace) -> int:
    """Execute ``torchlean inspect``; returns the exit status (0; a bad checkpoint raises
    :class:`~torchlean.checkpoint.CheckpointError`, which the command prints as one ``error:`` line,
    exit status 2).

    Raises:
        torchlean.TorchLeanError: the checkpoint cannot be read (a CSV file given as the checkpoint says
            so: ``... is a CSV text file, not a checkpoint``), ``--report-json`` names the checkpoint or
            cannot be written, ``--dataset`` names an unknown dataset.
    """
    inputs = [("the checkpoint", args.checkpoint)]
    shipped = False
    if args.dataset is not None:
        if args.dataset != data.STDIN:  # an unknown name is refused, naming the shipped datasets
            shipped = data.locate(args.dataset)[1]
        if shipped:
            refuse_csv_options(args, args.dataset)
        else:  # review64 F1: as train and predict, never overwrite the input data
            inputs.append(("the input --dataset", given_path(args.dataset)))
    elif args.delimiter is not None:
        raise TorchLeanError("--delimiter applies to the --dataset file: give --dataset PATH too")
    check_distinct([("--report-json", args.report_json)], inputs)
    if args.report_json is not None:
        check_writable(args.report_json, "--report-json")
    json_on_stdout = args.report_json == STDOUT or is_stdout(args.report_json)  # before report_beside
    # review115 F6: a CSV file given as the checkpoint says so
    saved, digest = checkpoint_input.load_digested(
        args.checkpoint, "CHECKPOINT",
        "the order is inspect CHECKPOINT [--dataset DATA], CHECKPOINT a file written by torchlean train "
        "--save",
    )
    if args.dataset is not None and not shipped:
        _csv.check_file(args.dataset)  # review64 F2: a missing file is an error, as for predict
    record = facts(args.checkpoint, saved, digest, args.dataset, args.delimiter)
    # a reader of the report that goes away (| head -1) does not keep the record from being written
    # (review216 F1), as for train and predict
    files = [shown_path(args.report_json)] if args.report_json is not None and not json_on_stdout else []
    with reader_may_leave(files, "inspect"), report_beside(args.report_json):
        for line in _lines(record, saved):
            print(line)
        if record.get("dataset_error") is not None:  # known not the run's data as laid out (review98 M1)
            unknown = "" if record.get("data_difference") else ", so whether they are its data is unknown"
            print(f"note: {data_shown(record['dataset_given'])} could not be loaded as checkpoint "
                  f"{shown_path(args.checkpoint)}'s run loaded its data ({record['dataset_error']}){unknown}",
                  file=sys.stderr)
        if record.get("data_difference") is not None:
            print(f"note: the data of {data_shown(record['dataset_given'])} are not those checkpoint "
                  f"{shown_path(args.checkpoint)}'s run trained on: {record['data_difference']}",
                  file=sys.stderr)
        if args.report_json is not None:
            write_json_record(args.report_json, record)
            completed(0)  # every output written: a Ctrl-C from here changes nothing (review128 F3)
            if not json_on_stdout:  # as predict: no wrote line for standard output (review64 F6)
                print(f"wrote {shown_path(args.report_json)}")
        completed(0)  # the report printed: a Ctrl-C while report_beside closes changes nothing
    sys.stdout.flush()
    return 0
