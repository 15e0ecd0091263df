"""``torchlean predict``: predict with a saved checkpoint and report the capsules that computed it.

``torchlean predict CHECKPOINT --dataset NAME_OR_CSV`` reads the data with the reader of
``torchlean train`` (:mod:`torchlean.data`), standardises the features with the statistics saved
in the checkpoint (never refitted), runs the model under the checkpoint's profile and execution
mode (``--profile``/``--execution`` override them) and writes the predictions.

Every row is predicted by default (a shipped dataset whole, in scikit-learn's order, training
rows included); ``--split train|test`` takes only the rows of that side of the split ``torchlean
train`` makes of the data (:func:`torchlean.data.split_rows` with the checkpoint's test fraction,
``torchlean train --test-fraction``, 0.2 for a checkpoint written before that option, and the
checkpoint's split seed (its ``--seed``), stratified by class when possible, so a classification
split needs the label column), in
data order, and the CSV then has a ``row`` column (the 0-based data row) before ``prediction``;
on the data trained on these are the rows trained or tested on (a ``note:`` on stderr when
``--dataset`` is other data). ``--torch-threads N`` is as for ``torchlean train``. A CSV file's
columns are matched to the checkpoint's ``feature_names``:

- by position when its header is the one training read (the checkpoint's feature names in their
  order, with the checkpoint's label column at any position or absent), even if names repeat;
- by name, in the checkpoint's order, when its header names each of them exactly once (names
  compared in Unicode NFC form: a header's ``café`` written with a combining accent names the
  feature ``café`` written with a composed one); the
  label column is ``--label-column`` when given, else the checkpoint's label column when the
  header names it, else none; other columns are ignored (a ``note:`` line names them);
- refused (naming the missing or repeated features) when the header names only some of them,
  or one of them twice;
- by position when the header names none of them (a ``note:`` line says so) or the file has no
  header; the label column is then ``--label-column`` when given, else the header's column named
  as the checkpoint's label column, else none when the file has exactly the checkpoint's feature
  count of columns, else the column named as the checkpoint's label column (``column_<i>``
  without a header when the checkpoint's run read its file without one too) when the file has
  one, else the last column (with a ``note:`` naming
  it when the checkpoint's label column is a header name ``column_<i>`` that a file without a
  header cannot name).

The file is read as ``torchlean train`` reads it (:func:`torchlean.data.read_csv`, each ``note:``
on stderr), its cells separated by ``--delimiter`` (default ``,``; predict's own, as the file may
be written otherwise than the training data): Excel's ``sep=`` line naming it is skipped, an
unnamed last column blank on every line (a trailing delimiter) is dropped, R's row names (a header
one cell shorter than every data row) are left out, and pandas' ``to_csv``
index (an unnamed first column of the row numbers) is no feature, as training left it out, so a
checkpoint trained on such a file predicts on the same layout; it still counts in
``--label-column`` indices. A checkpoint whose features name that column (trained before it was
left out) still takes it, by name.

``--ignore-labels`` predicts only: the label column is found as above and left out of the
features, but its cells are never read (a ``note:`` names it), so labels in another encoding than
the checkpoint's classes, or targets that are not numbers, are no error; no ``accuracy=`` or
``mse=`` is reported, and ``--split train|test`` of a classifier, whose split is stratified by
class, is refused. Without it such labels are refused, the message ending with that option (as
Keras' ``predict`` takes no labels where ``evaluate`` scores them, the labels are read only to
score).

Predictions: a CSV with the header ``prediction`` and one row per input row, in input order —
the class label as the training data wrote it (``3``, ``setosa``) or the target value in its
units (the float64 ``output * target_scale + target_mean``, as ``torchlean train`` computes
``test_mse``, written in Python's shortest round-trip form) — to ``--output PATH`` or stdout,
its cells separated by ``--delimiter``, the input's (commas without it), and quoted by Python's
``csv`` where they hold it, a quote or a line break; for ``whitespace``, separated by a tab and
quoted where they hold a blank too (``"p_Iris setosa"``, as R's ``write.table`` quotes strings), so
they read back as a TSV and with ``--delimiter whitespace``.
``--probabilities`` (classification checkpoints only; refused for regression, naming the task)
adds, after ``prediction``, one column per class, ``p_<class name>`` in the checkpoint's class
order: the softmax of the row's logits, computed by the ``softmax`` op of
:mod:`torchlean.functional` in the prediction's session (an accepted capsule of the profile that
predicts, listed in the audit lines: ``reference.softmax`` under ``checked_cpu``), in the
checkpoint's dtype, and written so that the text reads back to that value: a float64
probability in Python's shortest round-trip form (``repr``), a float32 one with 9 significant
digits (``'%.9g'``: ``numpy.float32(float(cell))`` is the value). A row whose model outputs
(or target value) are not all finite, as a diverged model's are, gets an empty cell (and empty
probability cells), and a ``warning:`` line on stderr counts such rows and says whether the
checkpoint's weights are not finite or the outputs overflow (the standardised inputs are finite: the
checkpoint's ``standardise`` refuses any that are not). ``--output`` naming the checkpoint
or the input CSV is refused before any work.

The report goes to stdout when ``--output`` is given, else to stderr (stdout then holds only the
CSV, and a reader of it that goes away stops the command with exit status 141, the record of
``--report-json`` unwritten): ``checkpoint=...`` (with ``trained_on=``, the checkpoint's dataset,
a character that is not printable written as its backslash escape, one over
:data:`~torchlean.backend.display.LINE_LIMIT` characters cut, with its length; ``trained_under=``, the
profile the weights were trained under,
which ``--profile`` does not change, and ``dropout=P`` after ``model=`` for a model trained with
``--dropout``, whose dropout layers predict as the identity, as ``torch.nn.Dropout`` in
``eval()``) and ``dataset=...`` (with ``profile=``, the one predicting)
lines; with ``--show-backend`` each capsule's
contract report as it is first selected; when the data has the label column,
``accuracy=<value> (<correct>/<rows>)`` (a row without a prediction counts as wrong: ``(0/150;
150 rows without a prediction)``) or ``mse=<value>`` (in the target's units, against the targets
as read, in float64, not rounded to the checkpoint's dtype, as ``test_mse``; over the rows with a
prediction, the others
counted: ``(140/150 rows; 10 rows without a prediction excluded)``); then one audit line per
backend capsule used, as ``torchlean train`` prints them (with its ``note:`` lines on stderr for a
preferred provider's refused capsule); ``wrote PATH`` with ``--output``. A ``note:`` line on
stderr says how a CSV header was guessed from an all-numbers first row.

``--report-json PATH`` (``-`` for stdout, as ``torchlean train``'s: the report then goes to stderr,
and the predictions CSV needs ``--output``, else it is refused) writes a JSON record: ``checkpoint``,
``dataset``, ``rows``, ``split``, ``test_fraction`` (the checkpoint's, ``null`` for ``--split all``),
``task``, ``profile``, ``execution``, ``trained_under``, with scored labels ``accuracy`` and
``correct`` (classification) or ``mse`` (regression; ``null`` when not finite),
``rows_without_prediction``, ``output`` (``null`` for stdout), ``capsules`` (in ``torchlean plan
--format json``'s schema) and ``preference_notes``; ``wrote PATH`` follows ``--output``'s line.
``--format`` is refused naming ``--report-json``.
"""

from __future__ import annotations

import argparse
import collections
import contextlib
import csv
import dataclasses
import io
import itertools
import math
import os
import re
import sys
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

import numpy as np
import numpy.typing as npt

from torchlean import _delimiter, checkpoint, data, provenance
from torchlean import functional as F
from torchlean._cells import _is_number, names_listed, nfc
from torchlean._checks import DECIMAL_INTEGER
from torchlean._csv import reading, stdin_read_once
from torchlean._rows import Rows
from torchlean.autograd.grad_mode import no_grad
from torchlean.backend import profiles, report
from torchlean.backend.display import cut
from torchlean.backend.errors import SessionError, TorchLeanError
from torchlean.backend.vocabulary import Device
from torchlean.cli import _formulas, _resume
from torchlean.cli._args import (
    DELIMITER_HELP,
    OneWay,
    delimiter,
    json_record_instead,
    note_shadowed_dataset,
    refuse_csv_options,
)
from torchlean.cli._audit import RECORD_ORDERS, print_capsules_used
from torchlean.cli._checkpoint_input import csv_refusal
from torchlean.cli._completion import completed
from torchlean.cli._eager_hint import eager_alternative
from torchlean.cli._loading import loading_bar
from torchlean.cli._output import (
    STDOUT,
    check_distinct,
    check_writable,
    dataset_name,
    escaped,
    file_path,
    given_path,
    header_value,
    input_dataset,
    is_stdout,
    metric_text,
    output_path,
    report_beside,
    shell_word,
    shown_path,
    source_note,
    write_json_record,
    write_text_file,
)
from torchlean.cli._spelling import cli_spelling
from torchlean.cli._stdout import ReaderMayLeave, reader_may_leave
from torchlean.cli._threads import (
    MAX_TORCH_THREADS,
    obey_torch_threads,
    set_torch_threads,
    torch_threads,
    torch_threads_in_use,
    unused_threads_note,
)
from torchlean.cli._validation import no_prediction_warning, target_mse
from torchlean.tensor import Tensor
from torchlean.trainer import ExecutionMode, Trainer

__all__ = ["PROBABILITY_PREFIX", "SPLITS", "register", "run"]

SPLITS: tuple[str, ...] = ("all", "train", "test")
"""The accepted ``--split`` values."""

PROBABILITY_PREFIX = "p_"
"""``--probabilities``: a class's column is named this prefix and the class name (``p_setosa``)."""


def register(subparsers: Any) -> None:
    """Add the ``predict`` subcommand to ``subparsers``."""
    parser = subparsers.add_parser(
        "predict",
        help="predict with a checkpoint saved by train --save and report the kernel capsules used",
        description="Predict with a saved model on a scikit-learn dataset (all of it) or a CSV file.",
    )
    parser.known = {"--dataset": f"{' | '.join(data.DATASETS)}, or a path to a CSV file"}
    parser.add_argument("checkpoint", type=_checkpoint_argument, metavar="CHECKPOINT",
                        help="a checkpoint written by torchlean train --save")
    parser.add_argument("--dataset", required=True, type=input_dataset,
                        help=f"{' | '.join(data.DATASETS)} or a path to a CSV file, - for standard input")
    parser.add_argument("--label-column", default=None,
                        help="CSV label column (name or index; without a header, column_N is index N). A "
                        "CSV whose header names each of the "
                        "checkpoint's features once has its features taken by name (other columns ignored) "
                        "and by default the checkpoint's label column when named, else none; one naming only "
                        "some is refused; otherwise columns are matched by position and the default is the "
                        "checkpoint's label column when the header names it, else none when the file has "
                        "exactly the model's feature count of columns, else the checkpoint's label column "
                        "when the file names it (column_N of a run without a header), else the last "
                        "column. A header "
                        "name comes first: a number that names a column is that column, with a 'note:' "
                        "on stderr when it is another column's index too (give that index counted from the "
                        "end, -1, or the column's name)")
    parser.add_argument("--ignore-labels", action="store_true",
                        help="the label column is still found (as above) and left out of the "
                        "features, but its cells are not read, so labels in another encoding than the "
                        "checkpoint's classes (0/1/2 for setosa/versicolor/virginica) are no error; no "
                        "accuracy or mse is reported, and --split train|test of a classifier is refused "
                        "(its split is stratified by the labels)")
    parser.add_argument("--header", action=OneWay, default=None,
                        help="CSV only: the first row names the columns (--header) or is data "
                        "(--no-header); default: as the checkpoint's run read its data when it gave "
                        "--header or --no-header, else guessed as torchlean train guesses it")
    parser.add_argument("--delimiter", type=delimiter, default=None, metavar="D",
                        help=f"{DELIMITER_HELP}. The file's own: the checkpoint does not fix it (a run "
                        "trained on a ';' file predicts on a ',' file as well). The predictions CSV is "
                        "written with it (a tab for whitespace, a cell holding a blank quoted; commas "
                        "without --delimiter)")
    parser.add_argument("--profile", default=None,
                        help=f"{' | '.join(profiles.names())} (default: the checkpoint's)")
    parser.add_argument("--execution", default=None,
                        help="eager | typed-graph (default: the checkpoint's)")
    parser.add_argument("--output", type=output_path, default=None, metavar="PATH",
                        help="write the predictions CSV to PATH instead of stdout (missing parent folders "
                        "are created; checked before anything runs; not the checkpoint or the input CSV), "
                        "separated by --delimiter (a tab for whitespace), commas by default; "
                        "the report then goes to stdout, unless PATH is stdout itself (- or /dev/stdout)")
    parser.add_argument("--probabilities", action="store_true",
                        help="classification checkpoints only: after prediction, one column per class, "
                        "p_<class name> in the checkpoint's class order, holding the softmax probabilities "
                        "of the model's logits, computed by the softmax op of the profile that predicts "
                        "(listed with the capsules used) in the checkpoint's dtype and written to read back "
                        "exactly (float64: Python's shortest repr; float32: 9 significant digits); empty "
                        "for a row without a prediction")
    parser.add_argument("--split", default="all", choices=SPLITS,
                        help="all: every row (default); train or test: the rows of the split torchlean train "
                        "makes of this data (the checkpoint's test fraction, torchlean train "
                        "--test-fraction, 0.2 for checkpoints written before it; stratified by class when "
                        "possible; the checkpoint's split seed), "
                        "the same rows it trained or tested on when the data is the one trained on (train: "
                        "with a --val-fraction run's validation rows too); the "
                        "predictions CSV then has a row column (0-based data row) first")
    parser.add_argument("--torch-threads", type=torch_threads, default=None, metavar="N",
                        help=f"intra-op threads (1 to {MAX_TORCH_THREADS}) of the torch kernels behind "
                             "aten/libtorch capsules (default: $OMP_NUM_THREADS when it is in that range, "
                             "else 1), as torchlean train")
    parser.add_argument("--report-json", type=output_path, default=None, metavar="PATH",
                        help="write a JSON record of the prediction to PATH (- for stdout, which then needs "
                        "--output for the predictions CSV; the report then goes to stderr; missing parent "
                        "folders are created; checked before anything runs): checkpoint, dataset, rows, "
                        "split, task, profile, execution, trained_under, accuracy and correct "
                        "(classification) or mse (regression) when labels are scored, "
                        "rows_without_prediction, output, capsules, preference_notes; a non-finite mse is "
                        "null")
    parser.add_argument("--show-backend", action="store_true",
                        help="print each capsule's full contract report when it is first selected")
    parser.set_defaults(func=run, refuse_extras=json_record_instead("predict"))


@dataclass(frozen=True, slots=True, eq=False)
class _Input:
    """Data to predict on (``source``: the file as messages name it, already shown: a ``$'...'``
    where it needs escapes, :attr:`torchlean.data.Table.shown_file`): raw float64 features
    ``[rows, features]``, the feature columns as
    messages name them, and the label column (its name and cells, ``None`` without one;
    ``lines`` holds each row's file line, or its row number from 1 for a shipped dataset, as
    ``place`` says); ``notes`` for stderr once the data is accepted; ``delimiter`` the CSV's (the
    label cells' messages name a decimal comma under another one)."""

    source: str
    x: npt.NDArray[np.float64]
    columns: tuple[str, ...]
    label: str
    cells: list[str] | None
    lines: tuple[int, ...]
    notes: tuple[str, ...] = ()
    place: data.Place = "line"
    delimiter: str = ","


def _label_index(
    table: data.Table, text: str | None, saved: checkpoint.Checkpoint, path: Path
) -> tuple[int | None, str]:
    """The label column of ``table`` when its columns are matched by position (the module
    docstring's rule; ``text`` is ``--label-column``), and a note (else "") when the label is the
    last column because the file, without a header, cannot name the checkpoint's label column, a
    header name of the file its run read (``y``, which that file need not have had last:
    review194 F7; ``column_<i>``, not index ``i``: review63 F1).

    Raises:
        UnknownLabelError: an unknown column; DataError: an ambiguous name.
    """
    if text is not None:
        return table.column(text, header_note=False), ""  # a header name, else an index ("0", "-1")
    # a header cell named as the label column is the label, also in a file of the feature count of
    # columns (q1,q2,label for x1,x2,x3: a feature count mismatch, not "label is no number": review188
    # F1); a headerless file's column_<i> is a position, so a file of the feature count holds no
    # label (review192 F1: a run whose label was column_0 took a features-only file's first column)
    if table.has_header and table.names.count(saved.label_column) == 1:
        return table.names.index(saved.label_column), ""
    if len(table.feature_indices(None)) == saved.features:  # pandas' index column not counted
        return None, ""
    named = table.has_header or _trained_without_header(saved)  # column_<i> is index i only then
    if named and table.names.count(saved.label_column) == 1:
        return table.names.index(saved.label_column), ""
    label = table.column(None)
    if named or not _label_named(saved):
        return label, ""
    # a headerless file cannot name a header run's label column, which need not have been its last
    # when the run named it (a run of y,a,b: review194 F7); its column_<i> reads here as index i,
    # which it is not (review63 F1)
    last, given = table.shown(label), data.display_name(saved.label_column)
    index = given.removeprefix("column_")
    not_index = ""
    if saved.label_column in table.names:
        not_index = f" (a header name of the file its run read, not index {index})"
    return label, (
        f"{table.shown_file}: it has no header to name checkpoint {shown_path(path)}'s label column "
        f"{given}{not_index}, so the last column ({data.display_name(last)}) was taken as the label; "
        "--label-column INDEX names another (--ignore-labels reads none)"
    )


def _label_named(saved: checkpoint.Checkpoint) -> bool:
    """Whether the checkpoint's run may have read its label from another column than its file's
    last: it was given ``--label-column`` by a name or by an index other than the last column's
    (``-1``, or the feature count: review200 F8; a setting the checkpoint lacks counts as a name),
    or the label column is a headerless file's ``column_<i>``. A checkpoint without its run's
    settings (one saved from Python) says nothing of it: False."""
    if saved.label_column.startswith("column_"):
        return True
    given = None if saved.training is None else saved.training.settings.get("label_column", "")
    if isinstance(given, str) and DECIMAL_INTEGER.fullmatch(given.strip()):
        return int(given) not in (-1, saved.features)
    return given is not None


def _trained_without_header(saved: checkpoint.Checkpoint) -> bool:
    """Whether the checkpoint's run read its CSV file without a header: its ``--no-header``, or,
    with the header guessed (or no training state), feature and label names that are a headerless
    file's ``column_0``, ``column_1``, ... (the label's index left out of the features), which are
    then that file's indices. Its ``--header`` means a header, whatever its names."""
    given = None if saved.training is None else saved.training.settings.get("header")
    if isinstance(given, bool):
        return not given
    count = len(saved.feature_names) + 1
    return any(
        saved.label_column == f"column_{label}"
        and saved.feature_names == tuple(f"column_{i}" for i in range(count) if i != label)
        for label in range(count)
    )


def _by_name(table: data.Table, text: str | None, saved: checkpoint.Checkpoint, path: Path) -> _Input:
    """The checkpoint's features of ``table`` by header name, in the checkpoint's order, and its
    label column (``--label-column`` ``text``, else the checkpoint's when the header names it,
    else none); the other columns are ignored, named in a note.

    Raises:
        TorchLeanError: the label column is one of the features; the errors of
            :meth:`torchlean.data.Table.columns` (a short row, a cell that is not a number).
    """
    # each name's first column, names compared in NFC form (review115 F2)
    first = {nfc(name): i for i, name in reversed(list(enumerate(table.names)))}
    features = [first[nfc(name)] for name in saved.feature_names]
    label: int | None = None
    own = nfc(saved.label_column)
    if text is not None:
        label = table.column(text, header_note=False)  # its header note printed already
    elif own in first and own not in map(nfc, saved.feature_names):
        label = table.column(saved.label_column, header_note=False)
    if label is not None and label in features:
        given, column = data.display_name(str(text)), data.display_name(table.shown(label))
        named = "" if given == column else f" (column {column})"
        raise TorchLeanError(f"--label-column {given}{named} is one of the features of checkpoint "
                             f"{shown_path(path)}")
    for r in range(len(table.rows)):  # checked before columns are picked out of the rows
        error = table.row_error(r)
        if error is not None:
            raise error
    keep = features if label is None else [*features, label]
    picked = dataclasses.replace(table, names=tuple(table.names[i] for i in keep),
                                 rows=Rows([row[i] for i in keep] for row in table.rows), index_column=None)
    x, cells = picked.columns(None if label is None else len(features))
    # pandas' index column gets its own note (a checkpoint that trained on it names it a feature)
    index = None if table.index_column in keep else table.index_column
    kept = set(keep)  # a set: a file may have 10**5 columns (review69 F1)
    ignored = tuple(table.shown(i) for i in range(len(table.names)) if i not in kept and i != index)
    notes = (
        (f"ignored {len(ignored)} column(s) of {table.shown_file} that are not checkpoint "
         f"{shown_path(path)}'s features "
         f"or label column: {_names(ignored)}",)
        if ignored else ()
    )
    index_note = table.index_note(None) if index is not None else ""
    return _Input(table.shown_file, x, saved.feature_names, "" if label is None else table.shown(label),
                  cells, table.lines, (index_note, *notes) if index_note else notes,
                  delimiter=table.delimiter)


def _read(args: argparse.Namespace, saved: checkpoint.Checkpoint) -> _Input:
    """The data of ``--dataset``: a whole shipped dataset (its labels as their class names, or
    targets), or a CSV file, its columns matched by the module docstring's rule.

    Raises:
        TorchLeanError: ``--label-column``/``--header``/``--delimiter`` given for a shipped dataset; a
            header that names only some of the checkpoint's features, or one twice; the errors of
            :func:`torchlean.data.locate` and :func:`torchlean.data.read_csv`.
    """
    name, shipped = data.locate(args.dataset)
    note_shadowed_dataset(name, data.DATASETS)
    if shipped:
        refuse_csv_options(args, name)
        x, y, features, classes, task = data.shipped(name)
        labels = [classes[i] for i in y] if task == "classification" else [repr(float(v)) for v in y]
        return _Input(name, x, features, "target", labels, tuple(range(1, len(labels) + 1)), place="row")
    with reading(name), loading_bar(name):  # its out-of-memory error names the file (review103 F2)
        return _read_csv(args, saved, name)


def _read_csv(args: argparse.Namespace, saved: checkpoint.Checkpoint, name: str) -> _Input:
    """:func:`_read` of the CSV file ``name``."""
    header = args.header
    run_note = ""
    if header is None and saved.training is not None:  # the run's --header/--no-header, if it gave one
        header = saved.training.settings.get("header")
        if isinstance(header, bool):
            way = "--no-header if it is data" if header else "--header if it names the columns"
            run_note = (f"note: the first row is read as {'column names' if header else 'data'}, as "
                        f"checkpoint {shown_path(args.checkpoint)}'s run read its data "
                        f"({'--header' if header else '--no-header'}): pass {way}")
        else:
            header = None
    try:
        table = data.read_csv(name, header=header, delimiter=args.delimiter or ",")
    except TorchLeanError:
        if run_note:
            print(run_note, file=sys.stderr)
        raise
    header_note = table.header_note
    if run_note and header_note:  # a first row of numbers read as names: one note says both (review63 F7)
        header_note += f" (read so as checkpoint {shown_path(args.checkpoint)}'s run read its data: --header)"
    elif run_note:
        print(run_note, file=sys.stderr)
    if table.separator_hint and saved.features > 1:
        raise TorchLeanError(
            f"{table.shown_file}: read as 1 column, but checkpoint {shown_path(args.checkpoint)} expects "
            f"{saved.features} features{table.separator_hint}"
        )
    for note in (header_note, *table.notes, table.label_note(args.label_column)):
        if note:
            print(f"note: {cli_spelling(note)}", file=sys.stderr)
    wanted = saved.feature_names
    training_layout = _training_layout(table, saved) if args.label_column is None else None
    if training_layout is not None:  # the header training read (repeated names included)
        label = None if training_layout < 0 else training_layout
        x, cells = table.columns(label)
        columns = tuple(table.shown(i) for i in table.feature_indices(label))
        index_note = table.index_note(label)
        return _Input(table.shown_file, x, columns, "" if label is None else table.shown(label), cells,
                      table.lines, (index_note,) if index_note else (), delimiter=table.delimiter)
    # names compared in NFC form: 'café' names a header's 'cafe\u0301' (review115 F2)
    counts = collections.Counter(map(nfc, table.names))  # once: 10**5 columns (review67 F8, review69 F1)
    if table.has_header and any(nfc(feature) in counts for feature in wanted):
        forms = collections.Counter(map(nfc, wanted))
        twice = tuple(name for name in dict.fromkeys(wanted) if forms[nfc(name)] > 1)
        if twice:  # one file column cannot be two of the features (review92 F2)
            raise TorchLeanError(
                f"{table.shown_file}: checkpoint {shown_path(args.checkpoint)}'s run named features "
                f"{_names(twice)} more "
                "than once, so predict cannot take the file's columns by name: give the file the header "
                f"training read ({_names(wanted)}, with the label column anywhere), or no header, to take "
                "the columns by position"
            )
        missing = tuple(feature for feature in wanted if nfc(feature) not in counts)
        repeated = tuple(feature for feature in dict.fromkeys(wanted) if counts[nfc(feature)] > 1)
        if missing or repeated:
            faults = "; ".join(
                f"{what} {_names(names)}"
                for what, names in (("missing", missing), ("repeated", repeated))
                if names
            )
            raise TorchLeanError(
                f"{table.shown_file}: the header does not name each of checkpoint "
                f"{shown_path(args.checkpoint)}'s "
                f"{len(wanted)} features once ({faults})"
            )
        return _by_name(table, args.label_column, saved, args.checkpoint)
    label, label_note = _label_index(table, args.label_column, saved, args.checkpoint)
    x, cells = table.columns(label)
    columns = tuple(table.shown(i) for i in table.feature_indices(label))
    notes = tuple(note for note in (table.index_note(label), label_note) if note)
    if table.has_header and wanted:
        # a row of numbers in every feature column reads as data lost to a header guess (review205 F1)
        numbers = all(_is_number(table.names[i]) for i in table.feature_indices(label))
        data_row = ""
        if numbers:
            data_row = "; its feature cells are all numbers: if it is a data row, pass --no-header"
        notes += (
            f"matched {table.shown_file}'s columns to the features by position: its header "
            f"({_names(table.names)}) names none of checkpoint {shown_path(args.checkpoint)}'s features "
            f"({_names(wanted)}){data_row}",
        )
    return _Input(table.shown_file, x, columns, "" if label is None else table.shown(label), cells,
                  table.lines, notes, delimiter=table.delimiter)


def _training_layout(table: data.Table, saved: checkpoint.Checkpoint) -> int | None:
    """When ``table``'s header is the one training read — the checkpoint's feature names in order,
    with its label column at some position or absent, and pandas' index column (which training
    left out) left out — the label column's index (-1: absent); else ``None``. Such a file is read
    by position even when names repeat (``a,a,c,y``), which matching by name cannot do."""
    wanted = saved.feature_names
    if not table.has_header or not wanted:
        return None
    kept = table.feature_indices(None)  # pandas' index column left out, as training left it out
    names = tuple(table.names[i] for i in kept)
    if names == wanted:
        return -1
    for position, index in enumerate(kept):
        # a repeated name is saved as shown
        labelled = saved.label_column in (names[position], table.shown(index))
        if labelled and names[:position] + names[position + 1 :] == wanted:
            return index
    return None


def _names(names: tuple[str, ...]) -> str:
    """``names`` as predict's messages list them (their count is said beside them)."""
    return names_listed(names, counted=False)


def _check_features(source: _Input, saved: checkpoint.Checkpoint, path: Path) -> None:
    """Refuse data whose feature count differs from the checkpoint's.

    Raises:
        TorchLeanError: naming both counts and columns.
    """
    count = source.x.shape[1]
    if count == saved.features:
        return
    label = "no label column"
    if source.cells is not None:
        label = f"label column {data.display_name(source.label)}"
    expected = f" ({_names(saved.feature_names)})" if saved.feature_names else ""
    columns = _names(source.columns) or "none"
    raise TorchLeanError(
        f"{source.source} has {count} feature column{'' if count == 1 else 's'} ({columns}; "
        f"{label}), "
        f"but checkpoint {shown_path(path)} expects {saved.features} "
        f"feature{'' if saved.features == 1 else 's'}"
        f"{expected}"
    )


def _split(args: argparse.Namespace, source: _Input, saved: checkpoint.Checkpoint,
           truth: npt.NDArray[Any] | None, compared: DataComparison | None) -> npt.NDArray[np.int64] | None:
    """The data rows ``--split`` selects, in the split's order (``None``: all of them), the order
    of ``torchlean train``'s ``x_test`` (the caller sorts them for the predictions CSV): the train
    or test rows of :func:`torchlean.data.split_rows` with the checkpoint's split seed
    (:attr:`~torchlean.checkpoint.Checkpoint.split_seed`), stratified by the class ids ``truth``
    for classification. With ``--split test``, the note that a class has no test row, as
    ``torchlean train`` prints it (review59 F12), unless the split is not stratified (that note
    then, as train prints it). A ``note:`` on stderr when ``--dataset`` is not the
    data the checkpoint was trained on (the split is then that of these rows): another dataset
    whose data do not hash as the run's did (:func:`compare_data`), or the training file
    changed since (its split's rows may include rows the model trained on: review43 F3).

    Raises:
        TorchLeanError: a classification split without the label column (the split is
            stratified by class); the errors of :func:`torchlean.data.split_rows`.
    """
    if args.split == "all":
        return None
    if saved.task == "classification" and truth is None and args.ignore_labels and source.cells is not None:
        raise TorchLeanError(
            f"--split {args.split} needs the labels of {source.source}, which --ignore-labels "
            f"leaves unread: "
            "torchlean train stratifies its split by class (drop --ignore-labels, or use --split all)"
        )
    if saved.task == "classification" and truth is None:
        raise TorchLeanError(
            f"--split {args.split} needs the label column of {source.source}: torchlean train "
            f"stratifies its "
            "split by class (name it with --label-column, or use --split all)"
        )
    assert saved.split_seed is not None  # Checkpoint stores seed for a file without it
    if saved.split_seed >= 2**32:  # torchlean train's seeds are below 2**32 (a numpy RandomState seed)
        raise TorchLeanError(
            f"--split {args.split}: checkpoint {shown_path(args.checkpoint)} has seed {saved.split_seed}, "
            f"which no "
            "torchlean train split used (its seeds are below 2**32); use --split all"
        )
    labels = truth if truth is not None else np.zeros(source.x.shape[0])
    try:
        train, test = data.split_rows(labels, saved.task, saved.split_seed, saved.test_fraction,
                                      source=source.source)
    except data.EmptySplitError as error:
        raise TorchLeanError(
            f"--split {args.split}: {error}: checkpoint {shown_path(args.checkpoint)} was trained with "
            f"--test-fraction "
            f"{saved.test_fraction!r}, which takes {error.test_rows} test rows of these {error.samples}, "
            "leaving none to train on; use --split all"
        ) from None
    same = _same_data(args.dataset, saved.dataset) or (args.dataset == data.STDIN and saved.dataset in (
        data.STDIN, "-"))  # standard input both times
    assert compared is not None  # _run compares the data for every --split but all
    hashed = matches_training(compared, saved)
    taken = f"--split {args.split} takes the {args.split} rows of the split torchlean train would make of"
    if hashed is None and args.dataset == data.STDIN:  # no digest recorded: none to compare with
        print(f"note: checkpoint {shown_path(args.checkpoint)} records no digest of its training data, so "
              f"whether "
              f"standard input holds them cannot be checked: {taken} it, and rows the model trained on may "
              "be among them unless these are the training data as they were", file=sys.stderr)
    elif (alike := _hashing_alike_note(args, source, compared)) is not None:  # review65 F1, review67 F3
        print(alike, file=sys.stderr)
    elif same and hashed is False:  # the training file, changed since (rows edited, reordered, cut)
        print(f"note: the data of {source.source} differ from those checkpoint "
              f"{shown_path(args.checkpoint)}'s run "
              f"trained on ({compared.difference or _DIGEST_DIFFERS}): {taken} them now, which may include "
              "rows the model trained on", file=sys.stderr)
    elif not same and not hashed:
        print(f"note: checkpoint {shown_path(args.checkpoint)} was trained on "
              f"{dataset_name(saved.dataset)}; {taken} "
              f"{source.source}, among which rows the model trained on may be, if these data "
              f"hold any",
              file=sys.stderr)
    note = data.split_note(labels, saved.task, saved.test_fraction)
    if args.split == "test":  # review59 F12, review222 F2: train's note on a class either split lacks
        note = "; ".join(part for part in (note, data.class_coverage_note(
            labels, test, saved.task, saved.classes)) if part)
    if note:
        print(f"note: {cli_spelling(note)}", file=sys.stderr)
    return np.asarray(train if args.split == "train" else test, dtype=np.int64)


def _hashing_alike_note(args: argparse.Namespace, source: _Input, compared: DataComparison) -> str | None:
    """The ``note:`` on data that hash as the checkpoint's run's did but are not its data
    (``compared``, :func:`compare_data`): their statistics differ from the checkpoint's (the same
    rows in other units or with an offset: review65 F1), or their class or feature names do
    (review67 F3), said without naming which of the two was edited (review88 F2); None otherwise.
    ``predict`` prints it under every ``--split`` for which it compared the data (review88 F2)."""
    if compared.difference is not None and compared.difference.endswith(_STATISTICS_DIFFER):  # review65 F1
        return (f"note: the data of {source.source} are not those checkpoint "
                f"{shown_path(args.checkpoint)}'s run trained "
                f"on ({compared.difference}): the model standardises its inputs with the checkpoint's "
                "statistics, so its outputs on these data are not its outputs on the training data")
    if compared.difference == _COLUMNS_REORDERED:  # review90 F8: taken by name, the run's data
        return (f"note: the data of {source.source} are not those checkpoint "
                f"{shown_path(args.checkpoint)}'s run trained "
                f"on as they were: {_COLUMNS_REORDERED}; predict takes a CSV file's columns by the "
                "checkpoint's feature names, so it predicts on the run's data (train --resume, which reads "
                "columns in their order, refuses them)")
    if compared.difference is not None and compared.difference.startswith(_LABEL_MOVED_START):
        return (f"note: the data of {source.source} are not those checkpoint "
                f"{shown_path(args.checkpoint)}'s run trained "
                f"on as they were: {compared.difference}, as predict reads them (train --resume, which reads "
                "the label where the run did, names --label-column)")
    if compared.names is not None:
        return (f"note: the data of {source.source} hash as those checkpoint "
                f"{shown_path(args.checkpoint)}'s run trained "
                f"on, but {compared.names} (the data's names or the checkpoint's were edited): predict "
                "names the predictions by the checkpoint's classes and takes a CSV file's columns by the "
                "checkpoint's feature names; if the data's names are the edited ones, name them as the "
                "checkpoint does")
    return None


_HEADER_HINT = re.compile(r"; line \d+ looks like a header \(.*$")
"""The data reader's hint on a first line read as data under ``header=False`` (it names the
option to leave out), replaced by :func:`_no_header_clause` when the checkpoint's run set it."""


def _no_header_clause(args: argparse.Namespace, saved: checkpoint.Checkpoint, error: Exception) -> str:
    """The clause that explains a refusal of line 1 read as data only because the checkpoint's
    run gave ``--no-header`` (predict's own ``--header``/``--no-header`` not given): the first row of
    a file with a header, text or numbers (review43 F6, review44 F3); else ""."""
    run_header = None if saved.training is None else saved.training.settings.get("header")
    if args.header is not None or run_header is not False or ": line 1, " not in str(error):
        return ""
    return (f"; line 1 is read as data, as checkpoint {shown_path(args.checkpoint)}'s run read its data "
            "(--no-header): pass --header if it names the columns")


def _run_delimiter_clause(args: argparse.Namespace, saved: checkpoint.Checkpoint) -> str:
    """The clause that names the checkpoint's run's ``--delimiter`` when it was not a comma and
    predict's own was not given (predict reads commas then), for a refusal of the data: ``;
    checkpoint m.npz's run read its data with --delimiter ';' (predict reads commas without
    --delimiter): pass --delimiter ';' if these are such data`` (review88 F4); else ""."""
    run = None if saved.training is None else saved.training.settings.get("delimiter")
    if args.delimiter is not None or not isinstance(run, str) or run == _delimiter.COMMA:
        return ""
    spelled = _delimiter.cli(run)
    return (f"; checkpoint {shown_path(args.checkpoint)}'s run read its data with --delimiter {spelled} "
            f"(predict reads commas without --delimiter): pass --delimiter {spelled} if these are such data")


@dataclass(frozen=True, slots=True)
class DataComparison:
    """``--dataset`` loaded and split as a checkpoint's run loaded its data (:func:`compare_data`).

    Attributes:
        digest: their digest (:func:`torchlean.cli._resume.data_digest`; the recorded one when
            they have it as a regression checkpoint of torchlean before review86 F1 computed it,
            over the targets rounded to its dtype: :func:`torchlean.cli._resume.recorded_as`);
            None when they could not be loaded so.
        matches: whether it is the run's recorded digest; None when that cannot be told (no
            recorded digest, or data that could not be loaded so).
        failure: why the data could not be loaded so (the loader's message); None when they were.
        difference: why they are not the run's data when ``matches`` is False: their digest
            differs, or it agrees but the statistics the features (a regression target) are
            standardised with differ from the checkpoint's (the same values in other units or with
            an offset standardise alike: review65 F1), or it agrees but the checkpoint names the
            classes or features otherwise (review67 F3); else None.
        names: in that last case, where the names first differ
            (:func:`torchlean.cli._resume.names_difference`); else None.
    """

    digest: str | None
    matches: bool | None
    failure: str | None = None
    difference: str | None = None
    names: str | None = None


_DIGEST_DIFFERS = "their digest differs"
_COLUMNS_REORDERED = "their feature columns are the run's in another order"
_NAMES_DIFFER = "their digest agrees, but the checkpoint names the classes or features otherwise"
_STATISTICS_DIFFER = (
    "their standardised values hash alike, but their means and scales (the features', or the target's) "
    "differ from the checkpoint's: other units or an offset"
)


_LABEL_MOVED_START = "their label column "
_LABEL_MOVED = _LABEL_MOVED_START + "{name} is not in the column the run read the label from ({where})"


def _label_moved(saved: checkpoint.Checkpoint, also: str = "") -> str:
    """``compare_data``'s difference for the run's data whose label column moved (``also``: and
    how else they differ): ``their label column y is not in the column the run read the label
    from (the last column); read by name, they are the run's data``."""
    setting = None if saved.training is None else saved.training.settings.get("label_column")
    where = f"--label-column {setting}" if isinstance(setting, str) else "the last column"
    name = data.display_name(saved.label_column)
    return _LABEL_MOVED.format(name=name, where=where) + f"{also}; read by name, they are the run's data"


def compare_data(
    dataset: str, saved: checkpoint.Checkpoint, delimiter: str | None = None
) -> DataComparison:
    """``dataset`` loaded and split as the checkpoint's run loaded its data: its recorded training
    settings (label column, header, delimiter unless ``delimiter`` (the command's own) is given,
    task, seed, dtype, test and validation fractions), or, for a checkpoint without training state
    (one built in Python), the checkpoint's own label column, task, dtype, ``split_seed`` and
    ``test_fraction``. The digest is computed even when the checkpoint records none (review64
    F7), for a later comparison. Standard input (:data:`torchlean.data.STDIN`) is read again, so
    only inside :func:`torchlean._csv.stdin_read_once`, after the data were read there (``run``
    opens it).
    """
    training = saved.training
    recorded = saved.data_sha256
    shipped = dataset in data.DATASETS
    if training is None:  # the checkpoint's own fields (a file built in Python: checkpoint.save)
        settings: dict[str, object] = {
            "label_column": None if shipped else saved.label_column, "task": None if shipped else saved.task,
            "seed": str(saved.seed if saved.split_seed is None else saved.split_seed), "dtype": saved.dtype,
            "test_fraction": repr(saved.test_fraction),
        }
    else:
        settings = dict(training.settings)

    def text(name: str) -> str | None:
        value = settings.get(name)
        return value if isinstance(value, str) else None

    def number(name: str) -> float | None:
        value = text(name)
        return None if value is None else float(value)

    header = settings.get("header")
    # a CSV file's task as the run read it, recorded in the checkpoint: inferred again, a rule that
    # changed since (labels at or beyond 2**53, all distinct) would read the labels otherwise
    # (review59 F1); a shipped dataset has its own task
    task = text("task") or (None if shipped else saved.task)

    def load(label_column: str | None) -> data.Dataset:
        with loading_bar(dataset):
            return data.load(
                dataset, label_column=label_column, header=header if isinstance(header, bool) else None,
                delimiter=delimiter or text("delimiter"), task="regression" if task == "regression" else (
                    "classification" if task == "classification" else None),
                seed=int(text("seed") or 0), dtype=text("dtype") or "float32",
                # settings written before --test-fraction lack it: the checkpoint's field is the
                # split predict --split scores (0.2 unless edited: review118 F1)
                test_fraction=number("test_fraction") or saved.test_fraction,
                val_fraction=number("val_fraction"),
            )

    def label_moved(digest: str | None, failure: str | None = None) -> DataComparison | None:
        """The data read with the run's label column by name, when the run did not name it so
        (the last column, or an index): the run's data whose label column moved (review95 M3,
        M4), with ``digest``, theirs loaded as the run loaded its data, or None and the
        ``failure`` of that load when they cannot be (review97 M2, review98 M1); else None."""
        if shipped or recorded is None or text("label_column") == saved.label_column:
            return None
        try:
            again = load(saved.label_column)
        except (TorchLeanError, ValueError, TypeError):
            return None
        match = _resume.run_match(again, saved, recorded)
        if match is None or match.statistics is not None or (
                _resume.names_difference(match.dataset, saved) is not None):
            return None
        also = f", and {_COLUMNS_REORDERED}" if match.reordered else ""  # review97 L3
        return DataComparison(digest, False, failure=failure, difference=_label_moved(saved, also))

    try:
        loaded = load(text("label_column"))
    except (TorchLeanError, ValueError, TypeError) as error:
        failure = cli_spelling(str(error))
        return label_moved(None, failure) or DataComparison(None, None, failure)
    if recorded is None:
        return DataComparison(_resume.data_digest(loaded), None)
    # a regression checkpoint of torchlean before review86 F1 hashed the targets rounded to its dtype
    match = _resume.run_match(loaded, saved, recorded)
    if match is None:
        moved = _resume.moved_label(loaded, saved)  # review92 F9
        why = _resume.digest_difference(loaded, saved) if moved is None else moved  # review188 F2
        return label_moved(_resume.data_digest(loaded)) or DataComparison(
            _resume.data_digest(loaded), False, difference=f"{_DIGEST_DIFFERS}; {why}")
    digest = _resume.data_digest(loaded) if match.reordered else recorded
    if match.statistics is not None:  # review65 F1: x10 or +100 standardises alike
        return DataComparison(digest, False, difference=_STATISTICS_DIFFER if not match.reordered else (
            f"{_COLUMNS_REORDERED}, and once reordered {_STATISTICS_DIFFER}"))
    if match.reordered:  # review90 F8
        return DataComparison(digest, False, difference=_COLUMNS_REORDERED)
    names = _resume.names_difference(match.dataset, saved)
    if names is not None:  # review67 F3: the data's names or the checkpoint's were edited
        return DataComparison(recorded, False, difference=f"{_NAMES_DIFFER}: {names}", names=names)
    return DataComparison(recorded, True)


def matches_training(compared: DataComparison, saved: checkpoint.Checkpoint) -> bool | None:
    """Whether the data ``compared`` (:func:`compare_data`) are the checkpoint's run's: ``None``
    when that cannot be told (no recorded digest); ``False`` for data that cannot be loaded as the
    run loaded its own (``predict`` has read them with its own settings, and the run's data load
    with the run's), else ``compared.matches``."""
    if compared.failure is not None:
        return None if saved.data_sha256 is None else False
    return compared.matches


def _class_order_note(source: _Input, saved: checkpoint.Checkpoint, path: Path) -> str:
    """A ``note:`` line when ``source``, the data the checkpoint's run trained on, names the same
    classes as the checkpoint in another order: the checkpoint was edited (the same labels always
    give the same order), and its predictions are named otherwise (review69 F4); else ``""``."""
    assert source.cells is not None
    try:
        ours = data.class_names(source.source, source.label, list(source.cells), source.lines)
    except data.DataError:
        return ""
    if ours == saved.classes or sorted(ours) != sorted(saved.classes):
        return ""
    return (f"note: checkpoint {shown_path(path)} names its classes in another order than the data it "
            f"trained on "
            f"({source.source}): {_resume.first_name_difference('class', ours, saved.classes)} "
            f"(the "
            "checkpoint was edited?): its predictions and accuracy follow the checkpoint's names\n")


def _same_data(source: str, trained_on: str) -> bool:
    """Whether ``source`` (a shipped dataset name or a CSV path) is the data ``trained_on`` names."""
    if source == trained_on:
        return True
    # a recorded path this locale cannot encode (an ASCII locale, a non-ASCII name) names no file
    # here: not the same data (review163 F1: the UnicodeEncodeError read as an output failure)
    with contextlib.suppress(OSError, UnicodeEncodeError):
        return os.path.samefile(source, trained_on)
    return False


def _write(
    rows: list[str],
    output: Path | None,
    index: npt.NDArray[np.int64] | None,
    probabilities: tuple[tuple[str, ...], Iterable[list[str]]] | None = None,
    *,
    delimiter: str = _delimiter.COMMA,
) -> None:
    """The predictions CSV (header ``prediction``; ``row,prediction`` with the 0-based data row
    ``index`` of each prediction; with ``probabilities``, the column names and each row's cells
    after ``prediction``) to ``output``, or stdout, its cells separated by ``delimiter``, the one
    the input was read with, and quoted by Python's ``csv`` where they hold it, a quote or a line
    break; for ``"whitespace"``, separated by a tab and quoted where they hold a blank (a space or
    a tab), a quote or a line break (:func:`_blank_quoted`), so the file reads back as a TSV and
    with ``--delimiter whitespace`` (pandas' ``sep="\\t"`` and ``sep=r"\\s+"``). The text is made
    and written :data:`WRITE_BLOCK` rows at a time (review155 M1: the whole CSV, its rows' lists
    and its encoded copy stood in memory at once, 1.6 GB for 2 million rows with probabilities).

    Raises:
        TorchLeanError: ``output`` cannot be written.
    """
    names, cells = ((), ([] for _ in rows)) if probabilities is None else probabilities
    first = [] if index is None else ["row"]
    numbers = ([] for _ in rows) if index is None else ([row] for row in index.tolist())
    table = itertools.chain(
        [[*first, "prediction", *names]],
        ([*number, row, *more] for number, row, more in zip(numbers, rows, cells, strict=True)),
    )
    blocks = _csv_blocks(table, delimiter)
    if output is None:
        _to_stdout(blocks)
        return
    write_text_file(output, blocks, "--output")  # a failed write leaves an old file whole


WRITE_BLOCK = 4096
"""The rows of the predictions CSV formatted and written at a time (:func:`_write`)."""


def _csv_blocks(table: Iterable[list[object]], delimiter: str) -> Iterator[str]:
    """The CSV text of ``table``'s rows, :data:`WRITE_BLOCK` rows a piece (:func:`_write`'s rules)."""
    text = io.StringIO()
    blanks = delimiter == _delimiter.WHITESPACE
    writer = None if blanks else csv.writer(text, delimiter=delimiter, lineterminator="\n")
    for count, row in enumerate(table, 1):
        if writer is None:
            text.write(_delimiter.TAB.join(_blank_quoted(str(cell)) for cell in row) + "\n")
        else:
            writer.writerow(row)
        if count % WRITE_BLOCK == 0:
            yield text.getvalue()
            text.seek(0)
            text.truncate()
    if text.tell():
        yield text.getvalue()


STDOUT_CHUNK = 4096
"""The characters of the predictions CSV handed to standard output at a time (:func:`_to_stdout`)."""


def _to_stdout(pieces: Iterable[str]) -> None:
    """Write ``pieces`` (the predictions CSV) to standard output in writes of at most
    :data:`STDOUT_CHUNK` characters, then flush, so that a reader of a pipe that goes away
    (``| head -3``) raises :class:`BrokenPipeError` (torchlean's main exits 141, quietly, as the
    docs/command-line.md's "Standard streams" says) and never exits 0 with the CSV cut off: one large write
    was cut short by the reader's leaving without an error (review68 F3). The pieces go to the
    stream itself, not to the :class:`~torchlean.cli._stdout.ReaderMayLeave` stand-in that keeps
    a report's lost reader from stopping a run with files to write: the CSV is the output here.

    Raises:
        BrokenPipeError: the reader of the pipe went away.
    """
    stream = sys.stdout
    stream = stream.stream if isinstance(stream, ReaderMayLeave) else stream
    for text in pieces:
        for start in range(0, len(text), STDOUT_CHUNK):
            stream.write(text[start:start + STDOUT_CHUNK])
    stream.flush()


def _blank_quoted(cell: str) -> str:
    """``cell`` as the predictions for a ``"whitespace"`` input write it: double-quoted, a quote
    in it doubled, when it holds a blank (a space or a tab), a quote or a line break, or is empty
    (``p_Iris setosa`` → ``"p_Iris setosa"``), as R's ``write.table`` quotes strings; else as
    is. Python's ``csv`` reads such a tab-separated cell back whole, and so does a reader that
    splits at runs of blanks (:mod:`torchlean._whitespace`, pandas' ``sep=r"\\s+"``)."""
    if cell and not any(char in cell for char in ' \t"\r\n'):
        return cell
    return '"' + cell.replace('"', '""') + '"'


def _probabilities(
    trainer: Trainer[Any, Any],
    logits: npt.NDArray[Any],
    finite: npt.NDArray[np.bool_],
    classes: tuple[str, ...],
) -> tuple[tuple[str, ...], Iterator[list[str]]]:
    """``--probabilities``: the column names (``p_<class>``, in the checkpoint's class order) and
    each row's cells: the softmax of ``logits`` ``[rows, classes]`` (the model's outputs, in its
    dtype) over the classes, run by :func:`torchlean.functional.softmax` in ``trainer``'s
    session without gradients (so an accepted capsule of its profile computes it, and the audit
    lists it), written to read back exactly (:func:`_probability_cells`); empty cells for a row
    whose logits are not all finite (``finite`` false: no prediction)."""
    session = trainer.open()
    with session, no_grad():
        values = F.softmax(Tensor(logits, device=trainer.config.device.label), axis=-1).numpy()
    names = tuple(PROBABILITY_PREFIX + name for name in classes)
    return names, _probability_cells(values, finite)


def _probability_cells(values: npt.NDArray[Any], finite: npt.NDArray[np.bool_]) -> Iterator[list[str]]:
    """The probability cells of ``values`` ``[rows, classes]`` (float32 or float64), a row at a
    time (made as they are written: review155 M1): each written to read back to the same value,
    float64 in Python's shortest round-trip form (``repr``), float32 with 9 significant digits
    (``'%.9g'``, enough for any float32: ``numpy.float32(float(text))`` is the value), a value
    that is not finite as an empty cell; a row whose ``finite`` is false (no prediction) as empty
    cells. Finiteness is tested and the values converted to Python floats (``tolist``) a block of
    :data:`WRITE_BLOCK` rows at a time, so formatting 6 million cells costs the formatting alone
    (review68 F2: one ``np.isfinite`` per cell tripled the time)."""
    width = values.shape[1]
    text = "{:.9g}".format if values.dtype == np.float32 else repr
    for start in range(0, values.shape[0], WRITE_BLOCK):
        block, oks = values[start:start + WRITE_BLOCK], finite[start:start + WRITE_BLOCK].tolist()
        clean = np.isfinite(block).all(axis=1).tolist()
        for row, ok, whole in zip(block.tolist(), oks, clean, strict=True):
            if not ok:
                yield [""] * width
            elif whole:
                yield [text(v) for v in row]
            else:
                yield [text(v) if math.isfinite(v) else "" for v in row]


def run(args: argparse.Namespace) -> int:
    """Execute ``torchlean predict``; returns the exit status. ``--output`` naming stdout
    (``/dev/stdout``) is as no ``--output``: the CSV on stdout, the report on stderr. With
    ``--output`` naming a file, a reader of the report on stdout that goes away (``| head -3``) does
    not stop the command before it writes the file (a ``note:`` on stderr says so)."""
    if args.checkpoint == STDIN_CHECKPOINT:  # refused before any other check, as argparse refused it
        _load_checkpoint(args, digest=False)
    if is_stdout(args.output):
        args.output = None
    json_on_stdout = args.report_json == STDOUT or is_stdout(args.report_json)
    if json_on_stdout and args.output is None:
        raise TorchLeanError(
            "--report-json on standard output and the predictions CSV (without --output, or with --output "
            "naming standard output) would both go there: "
            "give --output PATH for the CSV, or a file path to --report-json"
        )
    files = [shown_path(path) for path in (args.output, args.report_json) if path is not None and not
             is_stdout(path)]
    notes = _NoteRecorder(sys.stderr)
    # standard input is read once and kept: read again as the checkpoint's run loaded its data, its
    # digest is compared with the run's, as train --resume compares it (review63 F3)
    with reader_may_leave(files), report_beside(args.report_json), contextlib.redirect_stderr(notes), \
            stdin_read_once():
        return completed(_run(args, json_on_stdout, notes.lines))  # outputs written (review128 F3)


class _NoteRecorder(io.TextIOBase):
    """A stand-in for stderr that writes through to ``stream`` and keeps each ``note:`` and
    ``warning:`` line written (:attr:`lines`, as printed), for the record's ``notes``."""

    def __init__(self, stream: TextIO) -> None:
        super().__init__()
        self.stream = stream
        self.lines: list[str] = []
        self._partial = ""

    def write(self, text: str) -> int:
        self.stream.write(text)
        *done, self._partial = (self._partial + text).split("\n")
        # what a progress bar drew and cleared with carriage returns is not part of the line
        # (review104 H2: a note after the reading bar was not recorded)
        lines = (line.rpartition("\r")[2] for line in done)
        self.lines.extend(line for line in lines if line.startswith(("note: ", "warning: ")))
        return len(text)

    def flush(self) -> None:
        self.stream.flush()

    def fileno(self) -> int:  # the terminal's width for a progress bar (review104 L5)
        try:
            return int(self.stream.fileno())
        except AttributeError:  # a stream without a file (closed stderr)
            raise io.UnsupportedOperation("fileno") from None

    def writable(self) -> bool:
        return True

    def isatty(self) -> bool:
        return self.stream.isatty()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return str(getattr(self.stream, "encoding", None) or "utf-8")


def _load_checkpoint(args: argparse.Namespace, *, digest: bool) -> tuple[checkpoint.Checkpoint, str | None]:
    """The checkpoint of ``predict CHECKPOINT``, and with ``digest`` the SHA-256 of the bytes read
    (:func:`torchlean.checkpoint.load_digested`; else None).

    Raises:
        CheckpointError: ``CHECKPOINT`` is not a readable checkpoint (naming it and why).
        TorchLeanError: it is not, and the file ``--dataset`` names is one: the arguments swapped
            (``predict DATA.csv --dataset CHECKPOINT.npz``, or ``predict - --dataset CHECKPOINT.npz``),
            saying the order and the command line with the two swapped, the other options kept
            (review59 F14, review63 F5); ``CHECKPOINT`` is ``-`` (a checkpoint is a file); it is a
            CSV file (``predict DATA.csv --dataset DATA.csv``), saying so.
    """
    if args.checkpoint == STDIN_CHECKPOINT:  # "-": a checkpoint is read from a file (review63 F5)
        swapped = _swapped_clause(args, data.STDIN)
        raise TorchLeanError(f"argument CHECKPOINT: {_STDIN_REFUSAL}{swapped}")
    try:
        if digest:
            return checkpoint.load_digested(args.checkpoint)
        return checkpoint.load(args.checkpoint), None
    except checkpoint.CheckpointError as error:
        if not os.path.isfile(args.checkpoint):
            raise
        swapped = _swapped_clause(args, args.checkpoint)
        if swapped:
            raise TorchLeanError(f"{error}{swapped}") from None
        refusal = csv_refusal(  # predict DATA.csv --dataset DATA.csv (review63 F5)
            error, args.checkpoint, "CHECKPOINT",
            "the order is predict CHECKPOINT --dataset DATA, CHECKPOINT a file written by torchlean train "
            "--save",
        )
        if refusal is not None:
            raise refusal from None
        raise


STDIN_CHECKPOINT = "-"
"""``predict -``: taken by argparse (:func:`_checkpoint_argument`) so that the refusal can say
whether the arguments were swapped."""

_STDIN_REFUSAL = ("expected a file path, got '-' (standard input and output are not accepted here; a file "
                  "named - is ./-)")


def _checkpoint_argument(text: str) -> Path | str:
    """argparse ``type`` of ``CHECKPOINT``: :func:`~torchlean.cli._output.file_path`, except that
    ``-`` is kept (:data:`STDIN_CHECKPOINT`) for :func:`_load_checkpoint` to refuse, naming the
    swap when ``--dataset`` is a checkpoint."""
    return STDIN_CHECKPOINT if text == "-" else file_path(text)


def _swapped_clause(args: argparse.Namespace, data_given: str | os.PathLike[str]) -> str:
    """When ``--dataset`` names a checkpoint file (and ``CHECKPOINT``, ``data_given``, is not
    one): the clause that says so, with the order and the command line to run, the user's other
    words kept and the two swapped (:func:`_swapped_command`); else ""."""
    dataset = args.dataset
    if dataset in data.DATASETS or dataset == data.STDIN or not os.path.isfile(dataset):
        return ""
    try:
        checkpoint.load(dataset)
    except TorchLeanError:
        return ""
    given = shown_path(dataset)
    data_text = "-" if data_given == data.STDIN else os.fspath(data_given)
    command = _swapped_command(getattr(args, "argv", None), data_text, dataset)
    return (f", and --dataset {given} is a checkpoint: swapped? the order is predict CHECKPOINT "
            f"--dataset DATA ({command})")


def _swapped_command(argv: list[str] | None, checkpoint_text: str, dataset_text: str) -> str:
    """The command line ``argv`` (``["torchlean", "predict", ...]``) with ``CHECKPOINT``
    (``checkpoint_text``, as typed) and ``--dataset``'s value (``dataset_text``; ``--dataset X``,
    ``--dataset=X`` or a prefix argparse accepts, ``--data X``) swapped, every other word kept, shell
    quoted word by word (:func:`~torchlean.cli._output.shell_word`: ``$'...'`` for a word holding
    what is not printable, so the command pastes back as one line: review218 F1);
    ``torchlean predict DATASET --dataset CHECKPOINT`` alone when the words cannot be found in
    ``argv``. A swapped name that starts with ``-`` is given as ``./-m.npz``, which argparse does
    not read as an option (review219 F4)."""
    checkpoint_text, dataset_text = _not_an_option(checkpoint_text), _not_an_option(dataset_text)
    plain = f"torchlean predict {shell_word(dataset_text)} --dataset {shell_word(checkpoint_text)}"
    if not argv or argv[1:2] != ["predict"]:
        return plain
    words = list(argv)
    value: int | None = None  # the index of --dataset's value
    typed = {_not_an_option(word): word for word in words}  # the words as typed, by their ./ form
    for i, word in enumerate(words[2:], start=2):
        name, equals, rest = word.partition("=")
        if len(name) >= 4 and "--dataset".startswith(name):  # --da is the shortest unique prefix
            if equals and rest == typed.get(dataset_text, dataset_text):
                words[i] = f"{name}={checkpoint_text}"
                value = i
            elif not equals and i + 1 < len(words) and words[i + 1] == typed.get(dataset_text, dataset_text):
                words[i + 1] = checkpoint_text
                value = i + 1
            break
    given = typed.get(checkpoint_text, checkpoint_text)
    taken = (i for i, word in enumerate(words[2:], start=2) if word == given and i != value)
    position = next(taken, None)
    if value is None or position is None:
        return plain
    words[position] = dataset_text
    return " ".join(shell_word(word) for word in words)


def _not_an_option(path: str) -> str:
    """``path`` as a command word argparse reads as a value: ``./-m.npz`` for a name that starts
    with ``-`` (not ``-`` itself, standard input), else as it is."""
    return f"./{path}" if path.startswith("-") and path != "-" else path


def _trained_under_clause(error: object, saved: checkpoint.Checkpoint, path: str) -> str:
    """``error`` (the session of the checkpoint's own non-cpu profile could not open here, e.g. no
    CUDA, or typed-graph execution, which runs on the CPU only, under it) with where that profile
    came from, the checkpoint's ``trained_under``, and the ``--profile`` that predicts on the CPU
    (:func:`~torchlean.backend.profiles.cpu_counterpart`)."""
    counterpart = profiles.cpu_counterpart(saved.profile)
    cpu = "a cpu profile" if counterpart is None else counterpart.name
    return (
        f"{error}; profile {saved.profile} is checkpoint {shown_path(path)}'s trained_under (predict runs "
        f"under it unless --profile is given): --profile {cpu} predicts on the CPU (with other kernels: "
        "values may differ in the last bits)"
    )


def _run(args: argparse.Namespace, json_on_stdout: bool, notes: list[str] | None = None) -> int:
    print(source_note(), end="", file=sys.stderr)
    threads = set_torch_threads(args.torch_threads)
    inputs = [("the checkpoint", args.checkpoint)]
    if args.dataset not in data.DATASETS:
        inputs.append(("the input --dataset", given_path(args.dataset)))
    check_distinct([("--output", args.output), ("--report-json", args.report_json)], inputs)
    if args.output is not None:
        check_writable(args.output, "--output")
    if args.report_json is not None:
        check_writable(args.report_json, "--report-json")
    # the digest of the bytes read, for the record (review207 F7, review237 F2)
    saved, digest = _load_checkpoint(args, digest=args.report_json is not None)
    if args.probabilities and saved.task != "classification":
        raise TorchLeanError(
            f"--probabilities applies to classification checkpoints, and checkpoint "
            f"{shown_path(args.checkpoint)} is of task {saved.task} (its output is a target value, not class "
            "logits): leave out --probabilities"
        )
    try:
        source = _read(args, saved)
    except data.DataError as error:
        clause = _no_header_clause(args, saved, error)
        if clause:  # the run's --no-header, not this command's: the reader's own hint would say leave it out
            raise data.DataError(f"{_HEADER_HINT.sub('', str(error))}{clause}") from None
        clause = _run_delimiter_clause(args, saved)
        if clause:  # review88 F4: the checkpoint's own file, read with commas
            raise data.DataError(f"{error}{clause}") from None
        raise
    _check_features(source, saved, args.checkpoint)
    for note in source.notes:
        print(f"note: {cli_spelling(note)}", file=sys.stderr)
    classification = saved.task == "classification"
    truth: npt.NDArray[Any] | None = None
    if source.cells is not None and not args.ignore_labels:
        where = (source.source, source.label, source.cells)
        try:
            truth = (
                data.class_ids(*where, saved.classes, first_line=source.lines, place=source.place)
                if classification
                else data.targets(*where, np.float64, first_line=source.lines, place=source.place,
                                  delimiter=source.delimiter)
            )
        except TorchLeanError as error:  # labels the checkpoint cannot score: say how to predict anyway
            clause = _no_header_clause(args, saved, error) or (
                f"; --ignore-labels predicts without reading the labels (no "
                f"{'accuracy' if classification else 'mse'})"
            )
            raise TorchLeanError(f"{error}{clause}") from None
    own_data = args.split == "all" and _same_data(args.dataset, saved.dataset)
    reordered = ""
    if truth is not None and classification and own_data:  # review69 F4: --split compares them below
        reordered = _class_order_note(source, saved, args.checkpoint)
        print(reordered, end="", file=sys.stderr)
    # loaded and split as the run loaded its data, once, for --split's note and the record
    read_with = None if source.place == "row" else source.delimiter  # a CSV's, as read (review88 F4)
    compared = (compare_data(args.dataset, saved, args.delimiter or read_with)
                if args.split != "all" or args.report_json is not None else None)
    order = _split(args, source, saved, truth, compared)  # the split's rows in its order (train's x_test's)
    if compared is not None and compared.failure is not None:  # review86 F6: as inspect says it
        # after _split, which refuses --split train/test for the same failure (one error, no note)
        why = _resume.as_the_run_read(compared.failure, saved)
        unknown = ", so whether they are its data is unknown" if compared.difference is None else ""
        print(f"note: {source.source} could not be loaded as checkpoint "
              f"{shown_path(args.checkpoint)}'s run "
              f"loaded its data ({why}){unknown}", file=sys.stderr)
    if order is None and compared is not None:  # review88 F2: why the record's data_matches_training is false
        alike = _hashing_alike_note(args, source, compared)
        if alike is not None and not (compared.names is not None and reordered):  # said once
            print(alike, file=sys.stderr)
    # the split's rows forwarded in its order, as train forwards x_test: under fast_cpu a row's output
    # can depend on its batch and its place in it (review159 F1); ranked: their positions in x
    chosen = ranked = None
    if order is not None:
        chosen = np.sort(order)
        ranked = np.searchsorted(chosen, order)
    if source.cells is not None and args.ignore_labels:
        print(f"note: --ignore-labels: {source.source}'s label column "
              f"{data.display_name(source.label)} is "
              f"left out of the features and not read (no {'accuracy' if classification else 'mse'})",
              file=sys.stderr)
    elif args.ignore_labels:  # review32 F8: say that the option had nothing to leave out
        print(f"note: --ignore-labels: {source.source} has no label column (nothing to leave "
              f"out)",
              file=sys.stderr)
    raw = source.x if chosen is None else source.x[chosen]
    if chosen is not None and truth is not None:
        truth = truth[chosen]
    try:
        x = saved.standardise(raw)
    except checkpoint.FeatureValueError as error:  # the cell as the data's other messages name it
        row = error.row if chosen is None else int(chosen[error.row])
        raise TorchLeanError(
            f"{source.source}: {source.place} {source.lines[row]}, column "
            f"{source.columns[error.feature]}: "
            f"{error.detail}"
        ) from None
    except checkpoint.CheckpointError as error:
        raise TorchLeanError(f"{source.source}: {error}") from None
    trainer = saved.build(profile=args.profile, execution=args.execution, show_backend=args.show_backend)
    # with --report-json on stdout, report_beside has made sys.stdout stderr
    out: TextIO = sys.stdout if args.output is not None else sys.stderr
    # Open the session first, so a profile that cannot run here fails before any output; the
    # session's --show-backend banner follows the header lines, on the report's stream.
    banner = io.StringIO()
    config = trainer.config
    typed_graph = config.execution is ExecutionMode.TYPED_GRAPH
    if typed_graph and config.device is not Device.CPU and (args.execution is None or args.profile is None):
        # the mode or the profile came from the checkpoint, not from the command line
        name, device = config.resolve_profile().name, config.device.label
        if args.profile is None:  # the checkpoint's trained_under: name its CPU counterpart (review63 F4)
            mode = ("--execution typed-graph" if args.execution is not None else
                    f"checkpoint {shown_path(args.checkpoint)} was saved with execution typed-graph, which")
            raise TorchLeanError(_trained_under_clause(
                f"{mode} runs on cpu only, and profile {name} targets {device}", saved, args.checkpoint
            ) + eager_alternative(config.resolve_profile(), f"profile {name}"))
        raise TorchLeanError(
            f"checkpoint {shown_path(args.checkpoint)} was saved with execution typed-graph, which runs on "
            f"cpu only, and profile {name} targets {device} "
            "(accepted: --execution eager with that profile, or a cpu profile)"
        )
    with contextlib.redirect_stdout(banner):
        try:
            trainer.open()
        except SessionError as error:
            if args.profile is not None or config.device is Device.CPU:
                raise
            raise SessionError(_trained_under_clause(error, saved, args.checkpoint)) from None
    dropout = f" dropout={saved.dropout!r}" if saved.dropout else ""  # trained with; predicting without
    trained_on = header_value(cut(escaped(dataset_name(saved.dataset))))  # a crafted 50 MB string: one line
    print(f"checkpoint={header_value(args.checkpoint)} model={saved.model}{dropout} task={saved.task} "
          f"features={saved.features} dtype={saved.dtype} trained_on={trained_on} "
          f"trained_under={saved.profile}", file=out)
    split = "" if chosen is None else f" split={args.split}"
    if chosen is not None and saved.test_fraction != data.TEST_FRACTION:
        split += f" test_fraction={saved.test_fraction!r}"
    print(f"dataset={header_value(dataset_name(args.dataset))} rows={x.shape[0]}{split} "
          f"profile={trainer.profile.name} execution={trainer.config.execution.label}", file=out)
    print(banner.getvalue(), end="", file=out, flush=True)
    runs_torch = provenance.runs_torch(trainer.profile)
    print(unused_threads_note(args.torch_threads, trainer.profile.name, runs_torch), end="", file=sys.stderr,
          flush=True)
    with contextlib.redirect_stdout(out):
        logits = trainer.predict(x if ranked is None else x[ranked])
    if ranked is not None:
        in_file_order = np.empty_like(logits)
        in_file_order[ranked] = logits
        logits = in_file_order
    obey_torch_threads(threads)
    outputs = logits.astype(np.float64)
    count = outputs.shape[0]
    summary = None
    scores: dict[str, Any] = {}  # the record's accuracy and correct, or mse, when labels are scored
    probabilities = None
    if classification:
        finite = np.asarray(np.isfinite(outputs).all(axis=1), dtype=np.bool_)
        if args.probabilities:
            with contextlib.redirect_stdout(out):  # --show-backend's report of the softmax capsule
                probabilities = _probabilities(trainer, logits, finite, saved.classes)
            obey_torch_threads(threads)
        predicted = outputs.argmax(axis=1)
        rows = [saved.classes[i] if ok else "" for i, ok in zip(predicted, finite, strict=True)]
        formulas = _formulas.formula_note(rows)  # review67 F16: CSV injection
        if formulas:
            print(formulas, file=sys.stderr)
        missing = count - int(np.count_nonzero(finite))
        if truth is not None:
            correct = int(np.count_nonzero((predicted == truth) & finite))
            unpredicted = f"; {missing} rows without a prediction" if missing else ""
            summary = f"accuracy={correct / count:.4f} ({correct}/{count}{unpredicted})"
            scores = {"accuracy": correct / count, "correct": correct}
    else:
        assert saved.target_scale is not None and saved.target_mean is not None
        with np.errstate(over="ignore", invalid="ignore"):  # a diverged model's inf/nan is reported below
            values = outputs.reshape(-1) * saved.target_scale + saved.target_mean
            finite = np.isfinite(values) & np.isfinite(outputs).all(axis=1)
            missing = count - int(np.count_nonzero(finite))
            if truth is not None:
                # train's test_mse, by the same function (against the targets as read, in float64, not
                # rounded to the checkpoint's dtype), over the rows in the split's order, as train sums
                # them: --split test's mse is its test_mse bit for bit (review59 F15)
                in_order = np.arange(count) if ranked is None else ranked
                scored = in_order[finite[in_order]]
                mse = (target_mse(outputs[scored], truth[scored], saved.target_mean, saved.target_scale)
                       if scored.size else math.nan)
                kept = f" ({count - missing}/{count} rows; {missing} rows without a prediction excluded)"
                summary = f"mse={metric_text(mse)}{kept if missing else ''}"
                scores = {"mse": mse}
        rows = [repr(float(v)) if ok else "" for v, ok in zip(values, finite, strict=True)]
    if missing:
        print(no_prediction_warning(missing, count, "rows", saved.weights, saved.dtype,
                                    "the checkpoint's weights"), file=sys.stderr)
    _write(rows, args.output, chosen, probabilities, delimiter=args.delimiter or _delimiter.COMMA)
    if summary is not None:
        print(summary, file=out)
    selected = trainer.selected
    preference_notes = print_capsules_used(selected, trainer.profile, out, trainer.config.execution,
                                           len(trainer.selected_outside_graph))
    if args.output is not None:
        if args.report_json is None:  # every output written: this line is the last (review128 F3)
            completed(0)
        print(f"wrote {shown_path(args.output)}", file=out)
    if args.report_json is not None:
        assert compared is not None and digest is not None
        write_json_record(args.report_json, {
            "checkpoint": str(args.checkpoint),
            "checkpoint_sha256": digest,
            "dataset": dataset_name(args.dataset),
            "rows": count,
            "split": args.split,
            "test_fraction": None if chosen is None else saved.test_fraction,
            "task": saved.task,
            "profile": trainer.profile.name,
            "execution": trainer.config.execution.label,
            "trained_under": saved.profile,
            **scores,
            "rows_without_prediction": missing,
            "output": None if args.output is None else str(args.output),
            "torch_threads": torch_threads_in_use(),
            "data_sha256": compared.digest,
            "trained_data_sha256": saved.data_sha256,
            "data_matches_training": compared.matches,  # null when unknown, as inspect's (review86 F6)
            "notes": [] if notes is None else list(notes),
            "environment": provenance.environment(getattr(args, "argv", None), trainer.profile),
            "capsules_order": RECORD_ORDERS[trainer.config.execution],
            "capsules": [report.audit_to_json(k.audit()) for k in selected],
            "preference_notes": list(preference_notes),
        })
        completed(0)  # every output written: a Ctrl-C from here changes nothing (review128 F3)
        if not json_on_stdout:
            print(f"wrote {shown_path(args.report_json)}", file=out)
    return 0
