"""``torchlean train``: train a model on real data and report the capsules that computed it.

Prints two header lines (data and model, with ``dropout=P`` after ``model=`` for a nonzero
``--dropout``; profile and optimiser, then ``lr_schedule=SPEC`` when
``--lr-schedule`` is not ``constant``, ``max_grad_value=V`` with ``--max-grad-value``,
``max_grad_norm=N`` with ``--max-grad-norm`` and
``label_smoothing=S`` with a nonzero ``--label-smoothing``, ``no_decay='REGEX'`` with
``--no-decay``, ``freeze='REGEX'`` with ``--freeze``, ``test_fraction=F`` with a
``--test-fraction`` other than 0.2; with ``--show-backend`` the session's ``[TorchLean] backend
capsules used:`` banner follows them, then
each capsule's report as it is first selected), one line per epoch with the mean training loss
(and, with ``--max-grad-norm``, ``grad_norm=``: the epoch's last step's gradient norm before
clipping; a tqdm progress bar per epoch on a terminal) - ``loss=`` for classification
(cross-entropy), ``loss(standardised y)=`` for regression, whose model is trained on the target
standardised with the train split's mean and standard deviation - then ``test_accuracy=<value>``
(classification) or ``test_mse=<value>`` (regression, in the target's units), then one audit line
per backend capsule used. ``--save PATH`` then writes the trained model as a checkpoint
(:mod:`torchlean.checkpoint`; ``torchlean predict`` reads it) and prints ``saved: PATH`` last; the
checkpoint records the capsules of those audit lines, the ``capsules`` list of ``--report-json``
(one list, :attr:`torchlean.checkpoint.Checkpoint.capsules`, with its ``capsules_order``): those
this process selected, so after ``--resume`` the resumed segment's; the earlier segments' are
carried into ``earlier_capsules`` (:attr:`torchlean.checkpoint.Checkpoint.earlier_capsules`, and the
record's key of that name; review147 F1).
``--report-json PATH`` writes the same facts as a JSON record (the first header line's ``task``,
``train``, ``val`` (``null`` without ``--val-fraction``), ``test``, ``features`` and ``parameters``;
``classes``: the class names, ``null`` for regression; a CSV file's read settings as resolved,
``label_column`` (as messages name it), ``delimiter`` and ``header`` (whether the first row was read
as the header), each ``null`` for a shipped dataset; ``lr_schedule``: the schedule's spec,
``constant`` by default; ``max_grad_value``, ``null`` without ``--max-grad-value``;
``max_grad_norm`` and ``grad_norms``, ``null`` without ``--max-grad-norm``;
``label_smoothing`` and ``dropout``, 0.0 by default; ``test_fraction``, 0.2 by default;
``no_decay``: ``{"pattern": REGEX, "parameters": [names]}`` with ``--no-decay`` (the parameters
it exempts, not those ``--freeze`` freezes), else ``null``; ``freeze``: the same of ``--freeze``
(the parameters it freezes), else ``null``;
``checkpoint``: the saved path, when ``--save`` is given); its ``torch_threads`` is the intra-op
thread count torch ran with, or ``null`` when torch was never imported (a ``checked_cpu`` run does
not import it, so its thread setting is never used). ``--format`` is refused naming ``--report-json``.

``--test-fraction F`` (0 < F < 1, default 0.2) is the test split's fraction
(:func:`torchlean.data.load`'s ``test_fraction``); one that leaves no row to train on is refused
naming the flag and the fractions the data accept; ``--save`` stores it
(:attr:`torchlean.checkpoint.Checkpoint.test_fraction`) for ``torchlean predict --split``.

``--val-fraction F`` and ``--early-stopping P`` (:mod:`torchlean.cli._validation`): a validation part
held out of the train split, ``val=`` in the header, each epoch's validation loss and metric on its
line, a line on the best epoch (and where early stopping stopped, its weights restored) before the
test metric, and the record's ``validation`` (``null`` without them).

``--kernel-times``: each capsule's kernels (forward and VJP calls and seconds) over the training
epochs, validation passes included, as a table after the audit lines and the record's
``kernel_times`` (:mod:`torchlean.autograd.profiler`; ``null`` without it).

``--delimiter D`` reads a CSV file whose cells are separated by D (``;``, ``tab`` or ``\\t``, ``|``,
..., or ``whitespace``/``space`` for runs of blanks; default ``,``; :func:`torchlean.data.read_csv` lists
those accepted); it is a setting of the run, recorded by ``--save`` and kept by ``--resume`` unless
given (another is accepted when the data read with it hash as the run's did, and the checkpoint
the resumed run saves records it).

On stderr: a ``note:`` line when a CSV header was guessed from an all-numbers first row (see
``--header``), and one for each of :attr:`torchlean.data.Dataset.notes` (Excel's ``sep=`` line
naming the delimiter skipped, an unnamed empty last column ignored, R's row names left out, a
``--label-column`` number
read as a column name, pandas' index column left out of the features); after the audit, a ``note:``
per op whose capsule is not of the provider the profile prefers because that provider's capsule was
refused (:meth:`~torchlean.backend.profiles.BackendProfile.preference_notes`); a ``warning:`` line
when ``OMP_NUM_THREADS`` is not an integer in ``[1, MAX_TORCH_THREADS]`` (it is then ignored); a
``warning:`` line the first time an epoch's loss is not finite (the run goes on and exits 0), and
one when ``--save`` saves weights that are not finite. ``--save`` and ``--report-json`` naming one
file, or either naming the training CSV, is refused before any work, as are options the optimizer
does not take (``--momentum``: sgd and rmsprop; ``--nesterov``: sgd; ``--centered``: rmsprop;
``--amsgrad``: adam and adamw), ``--no-decay`` without a weight decay (or matching no parameter or
every one, or every one ``--freeze`` leaves, or a bad expression), ``--freeze`` matching no
parameter or every trainable one (or a bad expression), a ``--lr-schedule`` that would give an
epoch a learning rate the optimizer refuses, and a ``warmup_cosine:W`` whose W is not less than
the run's optimizer steps.

``--save`` also records the run's training state, and ``--resume CKPT`` continues it (a third
header line ``resumed_from=CKPT epochs_before=E steps_before=S``, the epoch lines numbered on;
the record's ``resumed_from`` and ``epochs_before``); with ``--save``, a first Ctrl-C stops the
run at the end of its epoch, tests and saves it (``interrupted: true`` in the record, a
``note:`` naming the ``--resume`` command, exit status 130; SIGTERM and SIGHUP likewise, 143 and
129): :mod:`torchlean.cli._resume`. A
``--val-fraction`` run resumes with its validation history (the record's ``validation`` then
covers the whole run); one that early stopping ended is complete.
"""

from __future__ import annotations

import argparse
import contextlib
import functools
import importlib.util
import io
import math
import sys
import textwrap
import time
from collections.abc import Callable, Collection, Mapping
from typing import Any

import numpy as np
from tqdm import tqdm

from torchlean import checkpoint, data, optim, provenance
from torchlean._memory import byte_count, usable_memory
from torchlean.autograd import profiler
from torchlean.backend import profiles, report
from torchlean.backend.display import escaped
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.backend.vocabulary import Device
from torchlean.cli import _imbalance, _pace, _resume
from torchlean.cli._args import (
    DELIMITER_HELP,
    OneWay,
    delimiter,
    int_at_least,
    json_record_instead,
    note_shadowed_dataset,
    number,
    open_fraction,
    refuse_csv_options,
    typed_number,
    typed_repr,
    with_typed,
)
from torchlean.cli._audit import RECORD_ORDERS, print_capsules_used
from torchlean.cli._completion import completed
from torchlean.cli._eager_hint import eager_alternative
from torchlean.cli._loading import loading_bar
from torchlean.cli._output import (
    check_distinct,
    check_writable,
    dataset_name,
    file_path,
    given_path,
    header_value,
    input_dataset,
    is_stdout,
    loss_text,
    make_parents,
    metric_text,
    output_path,
    report_beside,
    shown_path,
    source_note,
    write_json_record,
)
from torchlean.cli._patterns import check_matches_quickly
from torchlean.cli._schedule import LRSchedule, lr_schedule
from torchlean.cli._spelling import cli_spelling
from torchlean.cli._stdout import reader_may_leave
from torchlean.cli._threads import (
    MAX_TORCH_THREADS,
    environment_threads,
    obey_torch_threads,
    set_torch_threads,
    torch_threads,
    torch_threads_in_use,
    unused_threads_note,
)
from torchlean.cli._validation import (
    Validation,
    add_options,
    check_options,
    no_prediction_warning,
    target_mse,
)
from torchlean.models import MODELS, build_model, checked_dropout
from torchlean.nn.layers import Layer, ShapeError
from torchlean.nn.model import Model
from torchlean.trainer import ExecutionMode, NonFiniteStepError, Objective, RunConfig, Trainer

__all__ = ["MAX_TORCH_THREADS", "register", "run"]

_positive_int = int_at_least(1, "expected a positive integer, got {}")
_seed = int_at_least(
    0,
    "expected an integer in [0, 2**32) (the data split's scikit-learn train_test_split seeds a numpy "
    "RandomState, which takes no larger seed), got {}",
    below=2**32,
)


_test_fraction = open_fraction(": the fraction of the rows held out as the test split")


def _dtype(text: str) -> str:
    """An argparse ``type`` for ``--dtype``: ``float32`` or ``float64``, as written.

    Raises:
        argparse.ArgumentTypeError: ``expected float32 or float64, got 'float16'``.
    """
    if text not in ("float32", "float64"):
        raise argparse.ArgumentTypeError(f"expected float32 or float64, got {text!r}")
    return text


def register(subparsers: Any) -> None:
    """Add the ``train`` subcommand to ``subparsers``."""
    parser = subparsers.add_parser(
        "train",
        help="train a model on a dataset and report the kernel capsules used",
        description="Train a model on a scikit-learn dataset or a CSV file under a backend profile.",
    )
    parser.add_argument("--dataset", default="digits", type=input_dataset,
                        help=f"{' | '.join(data.DATASETS)} or a path to a CSV file, - for standard input "
                        "(default: digits)")
    parser.add_argument("--label-column", default=None,
                        help="CSV label column (name or index; default: last; without a header, column_N "
                        "is index N, as the record names it). A header name comes first: "
                        "a number that names a column (a header 'a,3,b,y' and --label-column 3) is that "
                        "column, with a 'note:' on stderr; give the index then counted from the end (-1) or "
                        "the other column's name")
    parser.add_argument("--header", action=OneWay, default=None,
                        help="CSV only: the first row names the columns (--header) or is data "
                        "(--no-header). Default: a header when a cell of the first row is not a number "
                        "or the row is exactly the column positions 0,1,...,n-1 (as pandas to_csv "
                        "writes); any other all-numbers first row is data. A guess from an all-numbers "
                        "row is reported in a 'note:' line on stderr. Column names may repeat, but a "
                        "--label-column name must be used once (else give its index)")
    parser.add_argument("--delimiter", type=delimiter, default=None, metavar="D",
                        help=f"{DELIMITER_HELP}. A setting of the run: --resume takes the checkpoint's "
                        "unless given; another is accepted when the data it reads hash as the run's did "
                        "(the same data saved with another separator)")
    parser.add_argument("--task", default=None, choices=("classification", "regression"),
                        help="CSV only: override the task inferred from the label column "
                        "(integer labels below 2**53 in magnitude are read as classes, other numbers as a "
                        "regression target, and labels all distinct, one class per row, are refused; labels "
                        "mixing numbers and text, as a target with missing values NA does, are refused "
                        "unless --task is given: classification reads every label as a class name)")
    parser.add_argument("--model", default="mlp", help=f"{' | '.join(MODELS)} (default: mlp); cnn and "
                        "transformer read each row's features as a square image (s*s features; s >= 4 "
                        "for cnn)")
    parser.add_argument("--hidden", type=_positive_int, default=64,
                        help="hidden width: of both hidden layers (mlp), of the classifier's hidden "
                        "layer after the convolutions (cnn), of the transformer block's MLP (transformer, "
                        "whose model width is 32) (default: 64)")
    parser.add_argument("--dropout", type=_dropout, default=0.0, metavar="P",
                        help="drop probability P in [0, 1) of dropout layers added to the model, as "
                        "torch.nn.Dropout (mlp: after each hidden ReLU; cnn: after the classifier's "
                        "hidden ReLU; transformer: after the learned positions and after the mean over "
                        "tokens); training only: validation, the test metric and torchlean predict run "
                        "without it (default: 0, no dropout layers)")
    parser.add_argument("--epochs", type=_positive_int, default=10,
                        help="epochs (default: 10; with --resume, the run's total, default the "
                        "checkpoint's)")
    parser.add_argument("--batch-size", type=_positive_int, default=32, help="minibatch size (default: 32)")
    parser.add_argument("--lr", type=typed_number, default=0.005, help="learning rate (default: 0.005)")
    parser.add_argument("--optimizer", default="adam",
                        help=f"{' | '.join(optim.OPTIMIZERS)} (default: adam)")
    parser.add_argument("--momentum", type=typed_number, default=None, metavar="M",
                        help="momentum, in [0, 1) (default: 0; --optimizer sgd or rmsprop)")
    parser.add_argument("--nesterov", action="store_true",
                        help="Nesterov momentum, as torch.optim.SGD(nesterov=True) (needs a --momentum "
                        "above 0; --optimizer sgd only)")
    parser.add_argument("--weight-decay", type=typed_number, default=None, metavar="W",
                        help="weight decay, finite and >= 0: an L2 term added to the gradient, decoupled "
                        "for adamw (default: 0, for adamw 0.01)")
    parser.add_argument("--centered", action="store_true",
                        help="centered RMSprop, as torch.optim.RMSprop(centered=True) (--optimizer "
                        "rmsprop only)")
    parser.add_argument("--amsgrad", action="store_true",
                        help="AMSGrad, as torch.optim.Adam(amsgrad=True) (--optimizer adam or adamw only)")
    parser.add_argument("--no-decay", type=_no_decay, default=None, metavar="REGEX",
                        help="parameters whose name matches the regular expression REGEX (re.search; "
                        "e.g. 'bias|ln' for the transformer's biases and layer norms) take no weight "
                        "decay, as a torch parameter group with weight_decay=0 (needs a weight decay; "
                        "default: every parameter decays)")
    parser.add_argument("--freeze", type=_freeze, default=None, metavar="REGEX",
                        help="parameters whose name matches the regular expression REGEX (re.search; "
                        "e.g. '^0\\.' for the first layer of --model mlp) are frozen, as torch's "
                        "p.requires_grad_(False): no gradient, no update, no weight decay, no optimizer "
                        "state, left out of --max-grad-norm's norm (default: nothing frozen)")
    parser.add_argument("--lr-schedule", type=lr_schedule, default=LRSchedule(), metavar="SPEC",
                        help="the learning rate of epoch e (from 0): constant: --lr; cosine: --lr * (1 + "
                        "cos(pi * e / epochs)) / 2 (torch's CosineAnnealingLR with T_max=--epochs and "
                        "eta_min=0, stepped once per epoch); step:N:G: --lr * G ** (e // N) (torch's "
                        "StepLR(step_size=N, gamma=G)), N a positive integer, G a finite number >= 0; "
                        "warmup_cosine:W: per optimizer step, linear warmup from 0 to --lr over W steps "
                        "(W less than the run's steps), then cosine toward 0, reached one step past the "
                        "run (optim.warmup_cosine, Hugging Face's schedule) (default: constant)")
    parser.add_argument("--max-grad-value", type=_grad_limit, default=None, metavar="V",
                        help="clamp each gradient entry to [-V, V] before the update, as "
                        "torch.nn.utils.clip_grad_value_ (a finite number >= 0; default: no clipping); "
                        "with --max-grad-norm too, value clipping comes first")
    parser.add_argument("--max-grad-norm", type=_grad_limit, default=None, metavar="N",
                        help="clip each step's gradients to total 2-norm N before the update, as "
                        "torch.nn.utils.clip_grad_norm_ (a finite number >= 0; default: no clipping); "
                        "each epoch's line then ends with its last step's norm before clipping")
    parser.add_argument("--stop-on-non-finite", action="store_true",
                        help="stop the run at the first step whose loss, new weights or new optimizer "
                        "state are not finite, before that update is stored (Keras' TerminateOnNaN, "
                        "but before the harm): exit status 1, nothing saved; without it a diverging "
                        "run trains on into NaN, as torch's does, with a warning")
    parser.add_argument("--label-smoothing", type=_smoothing, default=0.0, metavar="S",
                        help="classification only: mix each target with the uniform distribution over "
                        "the classes, (1 - S) * target + S / classes, as torch's cross_entropy("
                        "label_smoothing=S); S in [0, 1] (default: 0)")
    parser.add_argument("--profile", default="checked_cpu",
                        help=f"{' | '.join(profiles.names())} (default: checked_cpu)")
    parser.add_argument("--execution", default="eager", help="eager | typed-graph (default: eager)")
    parser.add_argument("--dtype", type=_dtype, default="float32",
                        help="float32 | float64 (default: float32)")
    parser.add_argument("--seed", type=_seed, default=0,
                        help="initialisation, split and shuffle seed, in [0, 2**32) (default: 0)")
    parser.add_argument("--test-fraction", type=_test_fraction, default=data.TEST_FRACTION, metavar="F",
                        help="the fraction F (0 < F < 1) of the rows held out as the test split, on which "
                        "test_accuracy or test_mse is measured: scikit-learn's train_test_split with --seed, "
                        "ceil(F * rows) test rows, stratified by class for classification when every class "
                        "has 2 samples and fits both splits (a --val-fraction part is then held out of the "
                        "rest); --save records it, so torchlean predict --split train|test recomputes this "
                        f"split (default: {data.TEST_FRACTION})")
    parser.add_argument("--report-json", type=output_path, default=None, metavar="PATH",
                        help="write a JSON record of the run to PATH (- for stdout, the report then on "
                        "stderr; missing parent folders are created; checked before training starts). "
                        "Its losses are on the standardised target for regression (a non-finite loss or "
                        "test_mse is null, as JSON has no NaN); "
                        "torch_threads is the intra-op thread count torch ran with, or null when torch "
                        "was never imported (checked_cpu does not import it)")
    parser.add_argument("--save", type=file_path, default=None, metavar="PATH",
                        help="write the trained model, its preprocessing and labels as a checkpoint to "
                        "PATH (an .npz archive; missing parent folders are created; checked before "
                        "training starts); torchlean predict PATH uses it")
    parser.add_argument("--torch-threads", type=torch_threads, default=None, metavar="N",
                        help=f"intra-op threads (1 to {MAX_TORCH_THREADS}) of the torch kernels behind "
                             "aten/libtorch capsules (default: $OMP_NUM_THREADS when it is in that range, "
                             "else 1: the models here run small ops, where idle OpenMP workers cost more "
                             "than they save). An invalid OMP_NUM_THREADS (abc, 0, -3) is ignored with a "
                             "one-line warning on stderr, as torch and OpenMP ignore it")
    parser.add_argument("--show-backend", action="store_true",
                        help="print each capsule's full contract report when it is first selected")
    parser.add_argument("--kernel-times", action="store_true",
                        help="time every capsule's kernels (forward and VJP) during the training epochs "
                        "and print a table after the capsule list, most time first "
                        "(torchlean.profiler; the record's kernel_times)")
    add_options(parser)  # --val-fraction, --early-stopping
    _resume.register(parser)
    parser.set_defaults(func=run, refuse_extras=json_record_instead("train"))


def _import_torch_first(profile: profiles.BackendProfile, threads: int) -> None:
    """Import torch (with ``threads`` intra-op threads) before the training epochs when
    ``profile`` has aten or LibTorch capsules on its device, which call it: its import (about a
    second) then falls outside the epochs' wall time that ``--kernel-times`` and the record
    report, as it falls outside every kernel's time (review36 F8). ``checked_cpu`` has none and
    still never imports torch."""
    if provenance.runs_torch(profile):
        try:
            import torch  # noqa: F401
        except ModuleNotFoundError as error:  # a --no-deps install: the model may need none of its
            if error.name != "torch":  # kernels (libtorch_forward_cpu's MLP); one that does is one
                raise  # error line (torchlean.cli.main; review96 L4, review98 L2, L3)
            return
        obey_torch_threads(threads)


_SOFTWARE = ("torchlean", "numpy", "torch")
"""The environment entries whose change may change a resumed run's bits (with the capsule table)."""


def _recorded(value: object) -> str:
    """A value read from a checkpoint's environment block as a note shows it: one line, nothing
    for the terminal (a version or SIMD level edited to hold a line break or an escape sequence,
    review113 F8), as ``inspect`` shows it."""
    return escaped(str(value))


def _software_note(
    resumed: _resume.Resumed | None, profile: profiles.BackendProfile, saving: bool = True
) -> str:
    """The ``note:`` of a run resumed under other software than its checkpoint's run recorded (its
    ``environment``): another capsule table for the profile (the profile may select other capsules
    now), another torchlean, numpy or torch version (torch's only for a profile with torch
    kernels: :func:`torchlean.provenance.runs_torch`), another numpy SIMD level (another CPU: the
    ``reference`` kernels' ``exp``, ``log`` and ``tanh`` round otherwise, review109 F1), another
    torch CPU capability (for a CPU profile with torch kernels, whose kernels round otherwise),
    or another torchlean
    source digest under the same version (another build; either unknown for a checkpoint written
    before it was recorded); the resumed run may
    then not be bit for bit the uninterrupted one (review65 F2; that the checkpoint it saves records
    this run's environment only when ``saving``: review104 L5); else "" (the same, or a checkpoint
    recording none)."""
    if resumed is None or resumed.saved.environment is None:
        return ""
    recorded = resumed.saved.environment
    current = provenance.environment(profile=profile)
    software = _SOFTWARE if provenance.runs_torch(profile) else tuple(k for k in _SOFTWARE if k != "torch")
    changed = [f"{key} {_recorded(recorded.get(key))} -> {current[key]}" for key in software  # no torch
               if recorded.get(key) != current[key]]  # kernel: its version changes no bit (review99 L4)
    source = recorded.get("torchlean_source_sha256")  # None: written before it was recorded
    same_version = recorded.get("torchlean") == current["torchlean"]  # else the version change is named
    simd = recorded.get("numpy_simd")  # None: written before it was recorded (review109 F1)
    if simd is not None and current["numpy_simd"] is not None and simd != current["numpy_simd"]:
        changed.append(f"numpy's SIMD level {_recorded(simd)} -> {current['numpy_simd']}, whose exp, log "
                       "and tanh kernels round otherwise")
    level = recorded.get("torch_cpu_capability")  # None: no torch CPU kernel, or not yet recorded
    if level is not None and current["torch_cpu_capability"] not in (None, level):
        changed.append(f"torch's CPU capability {_recorded(level)} -> {current['torch_cpu_capability']}, "
                       "whose kernels round otherwise")
    if same_version and source not in (None, current["torchlean_source_sha256"]):
        changed.append(f"torchlean {current['torchlean']}'s source: another build, whose digest torchlean "
                       "inspect shows")
    if recorded.get("capsule_table_sha256") != current["capsule_table_sha256"]:
        changed.append(f"profile {profile.name}'s capsule table, whose digest torchlean inspect shows")
    if not changed:
        return ""
    records = "; the checkpoint this run saves records this run's environment" if saving else ""
    return (
        f"note: the run in {shown_path(resumed.path)} was written under other software than this one "
        f"runs under ({'; '.join(changed)}), so the resumed run may not be bit for bit the uninterrupted "
        f"one{records}\n"
    )


def _threads_note(resumed: _resume.Resumed | None, profile: profiles.BackendProfile, threads: int) -> str:
    """The ``note:`` of a run resumed under another torch thread count than its checkpoint's run
    (``--torch-threads`` or ``$OMP_NUM_THREADS``) with a profile that runs torch kernels: the
    resumed run may then not be bit for bit the uninterrupted one (review62 F2); else "". A run
    whose segments already ran on several known counts may be bit for bit no uninterrupted run
    (nothing tells), so the note then names them and no count that keeps it (review64 F3,
    review65 F3); a segment of unknown count is named as such."""
    if resumed is None or resumed.saved.torch_threads in (None, threads):
        return ""
    if not provenance.runs_torch(profile):
        return ""
    before = resumed.saved.torch_threads
    counts = resumed.saved.thread_counts()
    cause = (f"(--torch-threads, else $OMP_NUM_THREADS): profile {profile.name}'s aten/libtorch capsules "
             "reduce in an implementation-defined order, which may depend on the thread count")
    if len({n for n in counts if n is not None}) > 1:  # already mixed: no count is known to keep it
        shown = " | ".join("unknown" if n is None else str(n) for n in counts)
        return (
            f"note: the run in {shown_path(resumed.path)} ran torch on {shown} threads in its segments (its "
            f"first run, then each --resume) and this one runs it on {threads} {cause}, so this run, mixed "
            "already, may be bit for bit no uninterrupted run, and no count is known to keep it\n"
        )
    earlier = " (an earlier segment's count is unknown)" if None in counts else ""
    return (
        f"note: the run in {shown_path(resumed.path)} ran torch on {before} "
        f"thread{'s' if before != 1 else ''}{earlier} and this one runs it on {threads} {cause}, so the "
        f"resumed run may no longer be bit for bit the uninterrupted one (--torch-threads {before} keeps "
        "it)\n"
    )


def _header_note(note: str, resumed: _resume.Resumed | None) -> str:
    """The header guess's note (``...; pass --no-header if it is a data row with a text label``),
    whose way out, on ``--resume``, is for a new run: the resumed run reads the file as its run did
    and refuses the option (review107 F5)."""
    head, separator, way = note.partition("; pass ")
    if resumed is None or not separator:
        return note
    return f"{head}; --resume reads the file as the checkpoint's run did: train a new run and pass {way}"


def _no_update_note(args: argparse.Namespace) -> str:
    """The ``note:`` of settings under which no gradient moves a weight (review103 F5), else "":
    ``--lr 0`` makes every update zero (each optimizer scales its step by the rate, and each
    ``--lr-schedule`` scales the rate), as does a rate that is 0 in the weights' dtype (``--lr
    1e-50`` in float32) and ``--lr-schedule step:N:0`` after epoch N;
    ``--max-grad-norm 0`` or ``--max-grad-value 0`` (or a limit that is 0 in the weights' dtype,
    ``1e-50`` in float32, as the clipping rounds it to the gradients' dtype) clips every
    gradient to zero, after which only weight decay and the optimizer state already built up
    (momentum, moments of a resumed run) move weights. torch accepts these values too."""
    if args.lr == 0.0:
        return ("note: --lr 0 makes every update zero, so the weights stay as they are (torch accepts a "
                "learning rate of 0 too)\n")
    if np.dtype(args.dtype).type(args.lr) == 0.0:  # review110 F3: the update rounds the rate to the weights'
        return (f"note: --lr {args.lr!r} is 0 in {args.dtype}, the weights' dtype, which each update "
                "multiplies by it, so every update is zero and the weights stay as they are\n")
    schedule: LRSchedule = args.lr_schedule
    if schedule.kind == "step" and schedule.gamma == 0.0 and args.epochs > schedule.step_size:  # review107 F4
        after = schedule.step_size
        return (f"note: --lr-schedule {schedule.spec} makes the learning rate 0 from epoch {after + 1} on, "
                f"so no update after epoch {after} moves a weight\n")
    rounded = np.dtype(args.dtype).type  # review123 F1: 1e-50 is 0 in float32, as the clipping rounds it
    given = (("--max-grad-value", args.max_grad_value), ("--max-grad-norm", args.max_grad_norm))
    limits = [
        f"{flag} 0" if value == 0.0 else f"{flag} {value!r} (0 in {args.dtype}, the gradients' dtype)"
        for flag, value in given
        if value is not None and rounded(value) == 0.0
    ]
    if not limits:
        return ""
    return (f"note: {' and '.join(limits)} clip{'' if len(limits) > 1 else 's'} "
            "every gradient to zero, so only weight decay and the optimizer state already built up "
            "(momentum, moments) move the weights\n")


def _kernel_times_record(kernel_times: profiler.KernelProfile) -> dict[str, Any]:
    """The record's ``kernel_times``: the epochs' wall time, the kernels' share, one entry per
    capsule (:meth:`~torchlean.autograd.profiler.KernelTime.to_json`), most time first."""
    return {
        "wall_seconds": kernel_times.wall_seconds,
        "kernel_seconds": kernel_times.kernel_seconds,
        "kernels": [k.to_json() for k in kernel_times.kernels],
    }


def _grad_limit(text: str) -> float:
    """``--max-grad-norm`` and ``--max-grad-value``: a finite number >= 0 (``RunConfig``'s
    ``max_grad_norm``/``max_grad_value``; their ``inf``, which clips nothing, is refused here).

    Raises:
        argparse.ArgumentTypeError: ``expected a finite number >= 0, got '-1'``.
    """
    value = number(text)
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value + 0.0  # -0 is 0


def _smoothing(text: str) -> float:
    """``--label-smoothing``: a number in ``[0, 1]`` (torch's rule).

    Raises:
        argparse.ArgumentTypeError: ``expected a number in [0, 1], got '1.5'``.
    """
    value = number(text)
    if not 0.0 <= value <= 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in [0, 1], got {text!r}")
    return value + 0.0  # -0 is 0


def _dropout(text: str) -> float:
    """``--dropout``: a number in ``[0, 1)`` (:func:`torchlean.models.checked_dropout`; 1, which
    torch takes, drops everything and is refused).

    Raises:
        argparse.ArgumentTypeError: ``expected a number in [0, 1), got '1' (p = 1 drops every
            value: nothing before the dropout would train)``.
    """
    value = number(text)
    try:
        return checked_dropout(value)
    except ShapeError as error:
        why = str(error).partition(" (")[2]
        raise argparse.ArgumentTypeError(
            f"expected a number in [0, 1), got {text!r}" + (f" ({why}" if why else "")
        ) from None


def _empty_split(fraction: float, error: data.EmptySplitError) -> str:
    """The refusal of a ``--test-fraction`` that leaves the train split without a row (the test
    split takes ``ceil(F * rows)`` rows, at least one): the flag, its value, the split and the
    fractions accepted for these rows (``F <= (rows - 1) / rows``); data of a single row, which no
    fraction splits, says so."""
    n, tested = error.samples, error.test_rows
    if n < 2:
        return (
            f"{error}: a single row cannot be split into train and test rows, whatever --test-fraction "
            "(accepted: data of at least 2 rows)"
        )
    return (
        f"--test-fraction {fraction!r}: {error} ({tested} test rows, {n - tested} to train on); accepted: a "
        f"number in (0, 1) at most {n - 1}/{n} for these {n} rows"
    )


def _load(args: argparse.Namespace, resumed: _resume.Resumed | None = None) -> data.Dataset:
    """The dataset; ``--label-column`` is a column name, else an integer index (``0``, ``-1``);
    ``--delimiter`` not given is the comma. A resumed run without ``--task`` reads a CSV file's
    labels as the checkpoint's run did (its recorded task), not by inferring the task again: the
    rule may have changed since (labels at or beyond 2**53, all distinct: review59 F1).

    Raises:
        TorchLeanError: ``--label-column``/``--task``/``--header``/``--delimiter`` given for a
            shipped dataset.
    """
    note_shadowed_dataset(args.dataset, data.DATASETS)
    if args.dataset in data.DATASETS:
        refuse_csv_options(args, args.dataset)
    task = args.task
    if task is None and resumed is not None and args.dataset not in data.DATASETS:
        task = resumed.saved.task
    options: dict[str, Any] = {
        "seed": args.seed, "dtype": args.dtype, "task": task, "header": args.header,
        "val_fraction": args.val_fraction, "test_fraction": args.test_fraction, "delimiter": args.delimiter,
    }
    # a name, else an index: data reads "2" as index 2 when no column is named "2" (one read of
    # the file, so a pipe works)
    with loading_bar(args.dataset):
        return data.load(args.dataset, label_column=args.label_column, **options)


def _cpu_counterpart_hint(error: object, profile: profiles.BackendProfile, execution: ExecutionMode) -> str:
    """``error`` (the session of a new run's ``--profile`` of another device than the CPU could
    not open here, e.g. no CUDA, or typed-graph execution, which runs on the CPU only, under it)
    with the ``--profile`` that trains on the CPU under the same assurance and VJP mode
    (:func:`~torchlean.backend.profiles.cpu_counterpart`), and under typed-graph execution eager
    execution where the device runs, as ``predict`` names them for a checkpoint trained under
    such a profile (review133 F10)."""
    counterpart = profiles.cpu_counterpart(profile.name)
    cpu = "a cpu profile" if counterpart is None else f"--profile {counterpart.name}"
    device = profile.policy.device.label
    eager = (eager_alternative(profile, f"--profile {profile.name}")
             if execution is ExecutionMode.TYPED_GRAPH else "")
    return (f"{error}; --profile {profile.name} runs on {device}: {cpu} trains on the CPU under the same "
            f"assurance (with other kernels: values may differ in the last bits){eager}")


def _load_refused_for_cli(args: argparse.Namespace, resumed: _resume.Resumed | None) -> data.Dataset:
    """:func:`_load_resumed`, with its refusals worded for the command line: a ``--test-fraction``
    that leaves no train row, or a train split that loses a class, names the option; a resumed
    run's refusals get its advice (:func:`_resume.data_refusal`), and a file not found the run's
    directory (:func:`_resume.not_found_advice`).

    Raises:
        TorchLeanError: as :func:`_load_resumed`, so worded.
    """
    try:
        return _load_resumed(args, resumed)
    except data.EmptySplitError as error:
        raise TorchLeanError(_empty_split(args.test_fraction, error)) from None
    except data.DataError as error:
        if "train split" in str(error) and args.test_fraction != data.TEST_FRACTION:
            raise data.DataError(
                f"{error} (with --test-fraction {args.test_fraction!r}: a smaller fraction leaves more rows "
                f"to train on; the default is {data.TEST_FRACTION})"
            ) from None
        columns = functools.partial(_resume.file_columns, args)  # read again only if needed (review104 M2)
        message = _resume.data_refusal(resumed, str(error), columns, error.feature_column)
        if resumed is not None and message.startswith("dataset file not found"):
            message += _resume.not_found_advice(resumed)  # review86 F8: the run's directory too
        if message == str(error):
            raise
        raise data.DataError(message) from None


def _load_resumed(args: argparse.Namespace, resumed: _resume.Resumed | None) -> data.Dataset:
    """:func:`_load`, with a refusal of the data that a ``--label-column`` given to a resumed run
    caused by naming another column than the run's label column said so instead
    (:func:`_resume.label_conflict`, review86 F3).

    Raises:
        TorchLeanError: that conflict; else as :func:`_load`.
    """
    try:
        return _load(args, resumed)
    except (data.DataError, UnknownLabelError) as error:
        conflict = _resume.label_conflict(resumed, args, error)
        if conflict is None:
            raise
        raise TorchLeanError(conflict) from None


_TAKES_MOMENTUM = ("sgd", "rmsprop")


_OPTION_OF = {"learning rate": "--lr", "weight decay": "--weight-decay", "momentum": "--momentum"}
"""The flag of each optimizer value whose refusal names it (``optimizer: learning rate must be ...``)."""


def _optimizer(args: argparse.Namespace, resumed: _resume.Resumed | None = None) -> optim.OptimizerConfig:
    """:func:`_optimizer_config`, with a refused value's message naming its flag, as argparse
    names the flag of a value its type refuses, and the value as typed (``argument --lr: learning
    rate must be finite and nonnegative, got '-1'``, not ``-1.0``: :func:`with_typed`); a value a
    resumed run took from its checkpoint (``resumed``), not from the command line, is named as the
    checkpoint's setting (``checkpoint m.npz: its setting --lr 'nan' is refused: learning rate must
    be ...``, :func:`_resume.setting_refusal`).

    Raises:
        TorchLeanError: as :func:`_optimizer_config`.
    """
    try:
        return _optimizer_config(args)
    except optim.OptimizerError as error:
        message = str(error).removeprefix("optimizer: ")
        flag = next((flag for quantity, flag in _OPTION_OF.items() if message.startswith(quantity)), None)
        if flag is None:
            raise
        dest = flag.removeprefix("--").replace("-", "_")
        message = with_typed(message, getattr(args, dest))  # '1e400' as typed, not inf (review128 F6)
        recorded = _resume.setting_refusal(resumed, args, dest, message)
        raise TorchLeanError(recorded or f"argument {flag}: {message}") from None


def _optimizer_config(args: argparse.Namespace) -> optim.OptimizerConfig:
    """The optimizer of ``--optimizer`` and ``--lr``, with ``--momentum`` (sgd, rmsprop),
    ``--nesterov`` (sgd: ``optim.sgd(lr, momentum, weight_decay=, nesterov=)``, as
    ``torch.optim.SGD``), ``--centered`` (rmsprop), ``--amsgrad`` (adam, adamw) and
    ``--weight-decay`` (L2 on the gradient; adamw: decoupled, 0.01 when not given, as
    ``optim.adamw`` and ``torch.optim.AdamW``). Defaults: momentum 0, no Nesterov, not
    centered, no AMSGrad, weight decay 0.

    Raises:
        UnknownLabelError: an unknown ``--optimizer`` (``optim.by_name``).
        TorchLeanError: an option the optimizer does not take (``--momentum`` with adam,
            ``--nesterov`` with rmsprop, ``--centered`` with sgd, ``--amsgrad`` with adagrad);
            ``--nesterov`` without a nonzero ``--momentum`` (torch's rule).
        OptimizerError: a value out of the optimizer's domain, with its own message
            (``optimizer: momentum must be finite and satisfy 0 <= momentum < 1, got 1.0``).
    """
    name = args.optimizer
    optim.by_name(name, args.lr)  # an unknown name or a bad --lr first
    takes = {
        "--momentum": (args.momentum is not None, _TAKES_MOMENTUM),
        "--nesterov": (args.nesterov, ("sgd",)),
        "--centered": (args.centered, ("rmsprop",)),
        "--amsgrad": (args.amsgrad, ("adam", "adamw")),
    }
    for option, (given, names) in takes.items():
        if given and name not in names:
            accepted = " or ".join(names) if len(names) > 1 else f"{names[0]} only"
            raise TorchLeanError(f"{option} applies to --optimizer {accepted}, got --optimizer {name}")
    options: dict[str, Any] = {} if args.weight_decay is None else {"weight_decay": args.weight_decay}
    if args.momentum is not None:
        options["momentum"] = args.momentum
    if name == "sgd":
        momentum = options.get("momentum", 0.0)
        if args.nesterov and momentum == 0.0:
            given = ("no --momentum (default 0)" if args.momentum is None
                     else f"--momentum {typed_repr(momentum)}")
            raise TorchLeanError(
                f"--nesterov needs a --momentum M with 0 < M < 1 (Nesterov momentum requires a "
                f"momentum, as in torch.optim.SGD), got {given}"
            )
        return optim.sgd(args.lr, nesterov=args.nesterov, **options)
    if name == "adam":
        return optim.adam(args.lr, amsgrad=args.amsgrad, **options)
    if name == "adamw":
        return optim.adamw(args.lr, amsgrad=args.amsgrad, **options)
    if name == "rmsprop":
        return optim.rmsprop(args.lr, centered=args.centered, **options)
    return optim.adagrad(args.lr, **options)


def _no_decay(text: str) -> optim.ParamGroup:
    """An argparse ``type`` for ``--no-decay``: the group of parameters whose name matches the
    regular expression ``text``, with weight decay 0.

    Raises:
        argparse.ArgumentTypeError: ``group pattern '(' is not a regular expression Python
            compiles (missing ), unterminated subpattern at position 0)``.
    """
    try:
        return optim.group(text, weight_decay=0.0)
    except optim.OptimizerError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("optimizer: ")) from None


def _freeze(text: str) -> optim.ParamGroup:
    """An argparse ``type`` for ``--freeze``: the frozen group of parameters whose name matches the
    regular expression ``text`` (``optim.group(text, frozen=True)``).

    Raises:
        argparse.ArgumentTypeError: ``group pattern '(' is not a regular expression Python
            compiles (...)``.
    """
    try:
        return optim.group(text, frozen=True)
    except optim.OptimizerError as error:
        raise argparse.ArgumentTypeError(str(error).removeprefix("optimizer: ")) from None


def _check_freeze(group: optim.ParamGroup | None, layer: Layer, model: str) -> None:
    """``--freeze`` must match some parameter of the model and leave some trainable one
    unfrozen (checked on the layer's parameter names before the trainer is built, so the
    refusal names the flag).

    Raises:
        TorchLeanError: ``--freeze 'x' matches no parameter of --model mlp (names: ...)``;
            ``--freeze '.' matches every trainable parameter of --model mlp (...): nothing would
            train``.
    """
    if group is None:
        return
    specs = layer.param_specs()
    names = [spec.name for spec in specs]
    selected = [spec.name for spec in specs if group.selects(spec.name, tuple(spec.shape))]
    if not selected:
        raise TorchLeanError(
            f"--freeze {group.match!r} matches no parameter of --model {model} (names: "
            f"{optim.names_shown(names)})"
        )
    trainable = [spec.name for spec in specs if spec.trainable]
    if all(name in selected for name in trainable):
        raise TorchLeanError(
            f"--freeze {group.match!r} matches every trainable parameter of --model {model} "
            f"({optim.names_shown(trainable)}): nothing would train; freeze fewer"
        )


def _frozen(args: argparse.Namespace, model: Model) -> set[str]:
    """The names of the parameters ``--freeze`` freezes (none without it)."""
    if args.freeze is None:
        return set()
    pairs = zip(model.names, model.parameters, strict=True)
    return {name for name, value in pairs if args.freeze.selects(name, value.shape)}


def _check_not_everything(group: optim.ParamGroup, model: Model, frozen: Collection[str] = ()) -> None:
    """``--no-decay`` must leave some trainable parameter that is not ``frozen`` decaying, and
    exempt at least one (a pattern matching only frozen parameters exempts none; a torch group of
    frozen parameters is legal, so the Python API takes it, but on the command line it is the
    same mistake as a pattern that matches nothing: review58 F2).

    Raises:
        TorchLeanError: ``--no-decay '.' matches every trainable parameter of the model; for no
            weight decay at all give --weight-decay 0`` (``... every trainable parameter that
            --freeze leaves ...`` with ``frozen``).
    """
    trainable = [
        (name, value) for name, value, spec in zip(model.names, model.parameters, model.specs, strict=True)
        if spec.trainable and name not in frozen
    ]
    if frozen and not any(group.selects(name, value.shape) for name, value in trainable):
        pairs = zip(model.names, model.parameters, strict=True)
        matched = [name for name, value in pairs if name in frozen and group.selects(name, value.shape)]
        raise TorchLeanError(
            f"--no-decay {group.match!r} matches only parameters --freeze freezes "
            f"({optim.names_shown(matched)}), so it exempts none: a frozen parameter takes no weight decay"
        )
    if frozen and all(group.selects(name, value.shape) for name, value in trainable):
        raise TorchLeanError(
            f"--no-decay {group.match!r} matches every trainable parameter that --freeze leaves training; "
            "for no weight decay at all give --weight-decay 0"
        )
    if all(group.selects(name, value.shape) for name, value in trainable):
        raise TorchLeanError(
            f"--no-decay {group.match!r} matches every trainable parameter of the model; for no weight "
            "decay at all give --weight-decay 0"
        )


def _group_record(group: optim.ParamGroup | None, model: Model, frozen: Collection[str] = ()) -> Any:
    """The JSON record's ``no_decay`` or ``freeze``: the pattern and the names of the parameters it
    applies to (for ``no_decay``, those it exempts: not the ``frozen`` ones), or ``None`` without
    the option."""
    if group is None:
        return None
    pairs = zip(model.names, model.parameters, strict=True)
    names = [name for name, value in pairs if group.selects(name, value.shape) and name not in frozen]
    return {"pattern": group.match, "parameters": names}


def _param_groups(args: argparse.Namespace, optimizer: optim.OptimizerConfig) -> tuple[optim.ParamGroup, ...]:
    """``RunConfig.param_groups`` of ``--freeze`` and ``--no-decay`` (none without them; a
    parameter both match is frozen, as the frozen group's).

    Raises:
        TorchLeanError: ``--no-decay`` with no weight decay to exempt from (an optimizer other
            than adamw without ``--weight-decay``).
    """
    groups = () if args.freeze is None else (args.freeze,)
    if args.no_decay is None:
        return groups
    if getattr(optimizer, "weight_decay", 0.0) == 0.0:
        raise TorchLeanError(
            f"--no-decay exempts parameters from weight decay, but --optimizer {args.optimizer} decays "
            "nothing here: give a --weight-decay above 0"
        )
    return (*groups, args.no_decay)


def _checked_schedule(
    schedule: LRSchedule, optimizer: optim.OptimizerConfig, epochs: int
) -> Callable[[int], float] | None:
    """``Trainer.fit``'s ``lr_schedule`` for ``--lr-schedule`` (``None`` for constant), its
    rates checked before any work as fit checks them (``Optimizer.set_lr``). Each schedule is
    monotone in the epoch, so its first and last epochs bound the others: only ``step`` with
    ``G > 1`` can leave the optimizer's domain.

    Raises:
        TorchLeanError: ``--lr-schedule step:1:10.0 gives epoch 45/45 the learning rate 5e+41,
            which the optimizer refuses: optimizer: learning rate must be ...`` (with ``--lr``
            0.005 and 45 epochs: 5e+41 is beyond binary32).
    """
    scheduled = schedule.function(optimizer.lr, epochs)
    if scheduled is not None:
        state = optimizer.create([np.zeros(1)])
        for epoch in sorted({0, epochs - 1}):
            rate = scheduled(epoch)
            try:
                state.set_lr(rate)
            except optim.OptimizerError as error:
                raise TorchLeanError(
                    f"--lr-schedule {schedule.spec} gives epoch {epoch + 1}/{epochs} the learning rate "
                    f"{rate!r}, which the optimizer refuses: {error}"
                ) from None
    return scheduled


def _step_schedule(
    schedule: LRSchedule, optimizer: optim.OptimizerConfig, epochs: int, steps_per_epoch: int
) -> Callable[[int], float]:
    """``Trainer.fit``'s per-step ``lr_schedule`` for ``--lr-schedule warmup_cosine:W`` over the
    run's ``epochs * steps_per_epoch`` optimizer steps (its rates lie in ``[0, --lr]``, so the
    optimizer takes each).

    Raises:
        TorchLeanError: ``--lr-schedule warmup_cosine:500 warms up over 500 steps, but the run
            has 40 (10 epochs of 4 steps); ...``.
    """
    total = epochs * steps_per_epoch
    if schedule.warmup >= total:
        raise TorchLeanError(
            f"--lr-schedule {schedule.spec} warms up over {schedule.warmup} steps, but the run has {total} "
            f"({epochs} epoch{'s' if epochs > 1 else ''} of {steps_per_epoch} step"
            f"{'s' if steps_per_epoch > 1 else ''}); accepted: fewer warmup steps than the run's steps"
        )
    return schedule.step_function(optimizer.lr, total)


def _training_bytes(parameters: int, dtype: str, optimizer: optim.OptimizerConfig) -> int:
    """The memory a run of ``parameters`` parameters holds at its peak, about: the float64
    weights it draws at initialisation (8 bytes each), then, in ``dtype``, the weights, their
    gradients, the optimizer's state buffers (as many per parameter as its ``state_dict`` keeps:
    2 for most, 3 for AMSGrad and centered RMSprop), and two more copies for a step's updated weights and its
    temporaries. Measured: an Adam float32 mlp of 3.6e7 parameters peaks at 32 bytes a parameter
    over the interpreter's own memory, as this gives. Activations are left out (they grow with
    ``--batch-size``, not with the parameter count)."""
    state = optimizer.create([np.zeros(1)]).state_dict()
    buffers = sum(1 for key in state if key.endswith(".0"))
    return parameters * (8 + np.dtype(dtype).itemsize * (4 + buffers))


def _check_model_fits(args: argparse.Namespace, layer: Any, optimizer: optim.OptimizerConfig) -> None:
    """Refuse, before any weight is allocated, a model whose training cannot fit the memory this
    process may use (:func:`torchlean._memory.usable_memory`, a container's limit included;
    :func:`_training_bytes`): ``--hidden 1000000`` makes the mlp's middle layer 1e12
    elements (8 TB), which failed after seconds with a generic out-of-memory line, or after
    allocating gigabytes of the first layer, and ``--hidden 30000`` (9e8 parameters, 6.7 GiB as
    float64) passed a check of the weights alone, then the kernel killed the process in training
    (review59 F2).

    Raises:
        TorchLeanError: naming ``--hidden``, the parameter count, the largest layer's element
            count and shape, and the memory needed beside the machine's.
    """
    memory = usable_memory()
    specs = layer.param_specs()
    sizes = [math.prod(spec.shape) for spec in specs]
    needed = _training_bytes(sum(sizes), args.dtype, optimizer)
    if memory is None or not sizes or needed <= memory:
        return
    largest = specs[sizes.index(max(sizes))]
    raise TorchLeanError(
        f"--hidden {args.hidden}: --model {args.model} would have {sum(sizes):.3g} parameters, its largest "
        f"weight {largest.name} {'x'.join(map(str, largest.shape))} ({max(sizes):.3g} elements); training "
        f"them needs about {byte_count(needed)} (the float64 initial weights, then the weights, gradients, "
        f"{optimizer.name}'s state and a step's copies in {args.dtype}), and this process may use "
        f"{byte_count(memory)} of memory: give a smaller --hidden (the default is 64)"
    )


def _non_finite_stop(error: NonFiniteStepError, args: argparse.Namespace, steps: int) -> str:
    """The ``error:`` line of a run that ``--stop-on-non-finite`` stopped (the trainer's
    :class:`~torchlean.trainer.NonFiniteStepError`, in the command line's words: epochs and steps
    from 1, what was not finite, what is not written, the options to change)."""
    found = [f"the loss is {error.loss}"] if not math.isfinite(error.loss) else []
    if error.values:
        found.append(f"the update would make {error.values} of the model's {error.total} values not finite")
    if error.state_values:
        found.append(f"{error.state_values} of the optimizer's state values not finite")
    done = ["stopped before storing that step"]
    outputs = (("saved no checkpoint", args.save), ("wrote no record", args.report_json))
    done += [what for what, given in outputs if given is not None]
    clip = "" if args.max_grad_norm is not None else " or clip the gradients (--max-grad-norm N)"
    return (
        f"error: --stop-on-non-finite: at epoch {error.epoch + 1}/{args.epochs}, step "
        f"{error.minibatch + 1}/{steps} (step {error.step} of the run), {' and '.join(found)}; the run "
        f"{', '.join(done[:-1]) + ' and ' + done[-1] if len(done) > 1 else done[0]}: lower --lr "
        f"(now {args.lr:g}){clip}"
    )


def _divergence(loss: float, held_out: Validation | None, trainer: Trainer[Any, Any]) -> str | None:
    """What shows an epoch diverged, for ``train``'s warning: its mean training loss not finite;
    else its validation loss; else the weights after its last update (a step's loss is taken
    before its update, so the update that breaks the weights shows in neither loss: review184 F1).
    None when all are finite."""
    if not math.isfinite(loss):
        return f"the training loss is not finite ({loss})"
    if held_out is not None and held_out.losses and not math.isfinite(held_out.losses[-1]):
        return f"the validation loss is not finite ({held_out.losses[-1]})"
    values = trainer.model.parameters  # read, not copied (state() copies every array)
    bad = sum(int(np.count_nonzero(~np.isfinite(w))) for w in values)
    if bad:
        total = sum(int(np.size(w)) for w in values)
        return f"the weights are not finite after the epoch's last update ({bad} of {total} values)"
    return None


def _decay_note(
    args: argparse.Namespace, optimizer: optim.OptimizerConfig, resumed: _resume.Resumed | None
) -> str:
    """The ``note:`` of a weight decay whose step alone makes the weights it decays grow (review184
    F4), else "": AdamW's decoupled decay, and plain SGD's (no momentum: review187 F1), multiply
    each such weight by ``1 - lr * weight_decay`` every step, below -1 once ``lr * weight_decay >
    2``. Only at a constant ``--lr`` of a new run (a schedule or ``--resume`` changes the rate:
    review187 F2); the moment scaling of Adam's and the others' decay has no such fixed factor."""
    weight_decay = getattr(optimizer, "weight_decay", 0.0)
    product = args.lr * weight_decay
    plain_sgd = args.optimizer == "sgd" and not args.momentum and not args.nesterov
    scheduled = args.lr_schedule.kind != "constant"
    if not (plain_sgd or args.optimizer == "adamw") or scheduled or resumed is not None or product <= 2.0:
        return ""
    which = "every weight it decays" if args.no_decay else "every weight"
    return (f"note: --lr {args.lr:g} times the weight decay {weight_decay:g} is {product:g}: the decay alone "
            f"multiplies {which} by {1 - product:g} each step, so the weights grow without bound "
            "(lower --lr or --weight-decay)\n")


def _warn_non_finite(weights: Mapping[str, np.ndarray[Any, Any]]) -> None:
    """A ``warning:`` line on stderr when a weight to be saved is NaN or infinite (a diverged
    run): ``torchlean predict`` gives such a model's rows no prediction."""
    bad = sum(int(np.count_nonzero(~np.isfinite(w))) for w in weights.values())
    if bad:
        total = sum(int(w.size) for w in weights.values())
        print(f"warning: saving a model whose weights are not finite ({bad} of {total} values; the training "
              "diverged): torchlean predict will give its rows no prediction", file=sys.stderr)


def run(args: argparse.Namespace) -> int:
    """Execute ``torchlean train``; returns the exit status. With ``--report-json`` or ``--save``
    naming stdout itself (``/dev/stdout``, or the file stdout is redirected to), the printed report
    goes to stderr, so that stdout holds only the JSON or the checkpoint. With ``--save`` or
    ``--report-json`` naming a file, a reader of stdout that goes away (``| head -3``) does not stop
    the run: the rest of the report is dropped, the files are written, a ``note:`` on stderr says
    so, and the exit status is the run's."""
    json_on_stdout = is_stdout(args.report_json)  # before report_beside moves sys.stdout
    outputs = (args.save, args.report_json)
    files = [shown_path(path) for path in outputs if path is not None and not is_stdout(path)]
    try:
        with reader_may_leave(files), report_beside(args.report_json, args.save), \
                _resume.interruptible(args.save is not None) as stop:
            return completed(_run(args, json_on_stdout, stop))  # outputs written (review128 F3)
    except _NonFiniteStop as stopped:  # nothing written: no note says the run went on to write it
        print(stopped.line, file=sys.stderr, flush=True)
        return 1


class _NonFiniteStop(Exception):
    """A run ``--stop-on-non-finite`` stopped, leaving :func:`run` past its outputs' context
    managers, which must not report them written (review203 F1); ``line`` is its ``error:`` line
    (:func:`_non_finite_stop`)."""

    def __init__(self, line: str) -> None:
        super().__init__(line)
        self.line = line


def _run(args: argparse.Namespace, json_on_stdout: bool, stop: _resume.Stop) -> int:
    started = time.perf_counter()
    print(source_note(), end="", file=sys.stderr)  # before the epochs, not after (review104 H1)
    from_environment = environment_threads() is not None  # before set_torch_threads sets it
    threads = set_torch_threads(args.torch_threads)
    resumed = _resume.prepare(args)  # --resume: the checkpoint's settings in args
    if (resumed is not None and args.torch_threads is None and not from_environment
            and resumed.saved.torch_threads is not None):  # review70 F3: as every other setting
        threads = set_torch_threads(resumed.saved.torch_threads)  # the run's count, unless given
    training = ([] if args.dataset in data.DATASETS
                else [("the training data --dataset", given_path(args.dataset))])
    check_distinct([("--report-json", args.report_json), ("--save", args.save)], training)
    if args.report_json is not None:
        check_writable(args.report_json, "--report-json")
    if args.save is not None:
        check_writable(args.save, "--save", regular=True)
    check_options(args)
    execution = ExecutionMode.parse(args.execution)
    profile = profiles.get(args.profile)
    optimizer = _optimizer(args, resumed)
    schedule: LRSchedule = args.lr_schedule
    scheduled = _checked_schedule(schedule, optimizer, args.epochs)
    try:
        dataset = _load_refused_for_cli(args, resumed)
    except TorchLeanError as error:  # a file of the recorded name here, read where the run did not
        message = _resume.read_elsewhere(resumed, str(error), dataset_name(args.dataset))
        if message == str(error):
            raise
        raise TorchLeanError(message) from None  # review133 F1
    # a CSV file: its path as given (standard input as -)
    source = dataset.name if args.dataset in data.DATASETS else dataset_name(args.dataset)
    if dataset.header_note:  # how the file was read, which a resumed run's refusals depend on
        print(f"note: {_header_note(cli_spelling(dataset.header_note), resumed)}", file=sys.stderr)
    _resume.check_data(resumed, dataset, source)  # before the notes on data it refuses (review103 F9)
    for note in dataset.notes:  # Excel's sep= line, a trailing delimiter, the label by name, pandas' index
        print(f"note: {cli_spelling(note)}", file=sys.stderr)
    if dataset.split_note:
        print(f"note: {cli_spelling(dataset.split_note)}", file=sys.stderr)
    classification = dataset.task == "classification"
    if args.label_smoothing != 0.0 and not classification:
        raise TorchLeanError(
            f"--label-smoothing applies to classification; {shown_path(source)} is a regression task "
            "(its model is trained on mse)"
        )
    outputs = dataset.n_classes if classification else 1
    layer, input_shape = build_model(args.model, dataset.n_features, outputs, hidden=args.hidden,
                                     dropout=args.dropout)
    _check_model_fits(args, layer, optimizer)
    names = [spec.name for spec in layer.param_specs()]
    # on --resume the patterns are the checkpoint's (a --freeze given otherwise is refused)
    stored = "" if resumed is None else f"checkpoint {shown_path(resumed.path)}'s setting "
    for option, group in (("--freeze", args.freeze), ("--no-decay", args.no_decay)):
        check_matches_quickly(group, option, names, stored)  # review67 F5: before any use of it
    _check_freeze(args.freeze, layer, args.model)
    config = RunConfig(optimizer=optimizer, execution=execution, show_backend=args.show_backend,
                       dtype=args.dtype, max_grad_norm=args.max_grad_norm,
                       max_grad_value=args.max_grad_value,
                       param_groups=_param_groups(args, optimizer)).with_profile(profile)
    try:
        trainer: Trainer[Any, Any] = Trainer(
            layer,
            objective=Objective.CROSS_ENTROPY if classification else Objective.MSE,
            config=config,
            seed=args.seed,
            input_shape=input_shape,
            label_smoothing=args.label_smoothing,
        )
    except optim.GroupSelectionError as error:  # --freeze is checked before (_check_freeze)
        raise TorchLeanError(
            f"--no-decay {args.no_decay.match!r} matches no parameter of --model {args.model} (names: "
            f"{optim.names_shown(error.names)})"
        ) from None
    frozen = _frozen(args, trainer.model)
    if args.no_decay is not None:
        _check_not_everything(args.no_decay, trainer.model, frozen)
    steps = -(-dataset.x_train.shape[0] // args.batch_size)  # optimizer steps per epoch
    if schedule.by_step:
        scheduled = _step_schedule(schedule, optimizer, args.epochs, steps)
    y_train: np.ndarray[Any, Any] = dataset.y_train
    y_mean, y_scale = 0.0, 1.0
    if not classification:
        y_mean, y_scale = dataset.target_statistics()
        y_train = dataset.standardised_targets()[0]
    held_out = None if args.val_fraction is None else Validation(
        args, dataset, None if classification else (y_mean, y_scale)
    )
    _resume.restore(resumed, trainer, held_out)  # the weights, optimizer, history
    _resume.check_steps(resumed, trainer, dataset.x_train.shape[0], args.batch_size)

    # Open the session first, so a profile that cannot run here fails before any output, but
    # hold what it prints (the --show-backend banner) until the header lines are out.
    banner = io.StringIO()
    with contextlib.redirect_stdout(banner):
        try:
            trainer.open()
        except TorchLeanError as error:  # the profile is the resumed checkpoint's (review63 F4)
            if profile.policy.device is Device.CPU:
                raise
            if resumed is None:  # review133 F10: the CPU profile of its assurance, as predict names it
                raise type(error)(_cpu_counterpart_hint(error, profile, execution)) from None
            raise type(error)(_resume.cannot_run_here(resumed, error)) from None
    print(
        f"dataset={header_value(source)} train={dataset.x_train.shape[0]} "
        f"{'' if held_out is None else f'val={held_out.x.shape[0]} '}test={dataset.x_test.shape[0]} "
        f"features={dataset.n_features} task={dataset.task} model={args.model} "
        f"{f'dropout={args.dropout!r} ' if args.dropout else ''}"
        f"parameters={sum(int(p.size) for p in trainer.model.parameters)}"
    )
    shown_schedule = "" if scheduled is None else f" lr_schedule={schedule.spec}"
    if args.max_grad_value is not None:
        shown_schedule += f" max_grad_value={args.max_grad_value!r}"
    if args.max_grad_norm is not None:
        shown_schedule += f" max_grad_norm={args.max_grad_norm!r}"
    if args.label_smoothing != 0.0:
        shown_schedule += f" label_smoothing={args.label_smoothing!r}"
    if args.no_decay is not None:
        shown_schedule += f" no_decay={args.no_decay.match!r}"
    if args.freeze is not None:
        shown_schedule += f" freeze={args.freeze.match!r}"
    if args.test_fraction != data.TEST_FRACTION:
        shown_schedule += f" test_fraction={args.test_fraction!r}"
    if held_out is not None:
        shown_schedule += held_out.settings()
    has_torch = importlib.util.find_spec("torch") is not None  # review99 L3
    torch_runs = provenance.runs_torch(profile) and has_torch
    shown_threads = f" torch_threads={threads}" if torch_runs else ""  # bits may depend on it
    print(f"profile={profile.name} execution={execution.label} optimizer={optimizer.describe()}"
          f"{shown_schedule} epochs={args.epochs} batch_size={args.batch_size} seed={args.seed}"
          f"{shown_threads}")
    print(_resume.header(resumed, trainer) + banner.getvalue(), end="", flush=True)
    print(_resume.unsaved_note(resumed, args.save), end="", file=sys.stderr, flush=True)
    print(_threads_note(resumed, profile, threads), end="", file=sys.stderr, flush=True)
    print(unused_threads_note(args.torch_threads, profile.name, torch_runs), end="", file=sys.stderr,
          flush=True)
    print(_no_update_note(args), end="", file=sys.stderr, flush=True)
    print(_decay_note(args, optimizer, resumed), end="", file=sys.stderr, flush=True)
    if args.label_smoothing == 1.0:  # review184 F5: torch accepts it too
        print("note: --label-smoothing 1 makes every target the uniform distribution, so the loss no longer "
              "depends on the labels", file=sys.stderr, flush=True)
    print(_software_note(resumed, profile, args.save is not None), end="", file=sys.stderr, flush=True)
    loss_name = "loss" if classification else "loss(standardised y)"
    warned = False
    losses: list[float] = []
    grad_norms: list[float | None] = []
    stop.arm()  # with --save, Ctrl-C stops at the end of the epoch
    _import_torch_first(profile, threads)
    kernel_times = profiler.profile() if args.kernel_times else None
    faster = "; --profile fast_cpu runs on torch's kernels, several times faster"
    pace = _pace.EpochPace(steps, faster if profile.name == "checked_cpu" else "")
    stopped_at: NonFiniteStepError | None = None
    with contextlib.nullcontext() if kernel_times is None else kernel_times:  # --kernel-times
        for epoch in range(trainer.epochs_done, args.epochs):  # resumed: from the epoch after the saved ones
            with tqdm(total=steps, desc=f"epoch {epoch + 1}/{args.epochs}", unit="step", leave=False,
                      disable=None, file=sys.stderr) as bar:

                def advance(_epoch: int, loss: float, bar: Any = bar) -> None:
                    bar.set_postfix(loss=f"{loss:.4g}", refresh=False)
                    bar.update(1)
                    obey_torch_threads(threads)
                    note = None if not bar.disable else pace.step()  # review68 F5: no bar, a long epoch
                    if note is not None:
                        print(note, file=sys.stderr, flush=True)

                # one epoch per call: fit numbers epochs over the trainer's lifetime, so the schedule
                # gets this loop's epoch
                try:
                    (loss,) = trainer.fit(dataset.x_train, y_train, epochs=1, batch_size=args.batch_size,
                                          on_batch=advance, lr_schedule=scheduled,
                                          schedule_by="step" if schedule.by_step else "epoch",
                                          validation=None if held_out is None else held_out.data,
                                          stop_on_non_finite=args.stop_on_non_finite)
                except NonFiniteStepError as error:
                    stopped_at = error
            if stopped_at is not None:
                raise _NonFiniteStop(_non_finite_stop(stopped_at, args, steps))
            losses.append(loss)
            grad_norms.append(trainer.grad_norm)
            norm = "" if trainer.grad_norm is None else f"  grad_norm={trainer.grad_norm:.6g}"
            if held_out is not None:
                norm += held_out.after_epoch(trainer, epoch)
            print(f"epoch {epoch + 1:>3}/{args.epochs}  {loss_name}={loss_text(loss)}{norm}", flush=True)
            diverged = _divergence(loss, held_out, trainer)
            if not warned and diverged is not None:
                warned = True
                if scheduled is None:
                    rate = ""
                elif schedule.by_step:
                    last = scheduled(trainer.steps_done - 1)
                    rate = f", {last:g} at its last step by --lr-schedule {schedule.spec}"
                else:
                    rate = f", {scheduled(epoch):g} in this epoch by --lr-schedule {schedule.spec}"
                weight_decay = getattr(optimizer, "weight_decay", 0.0)  # adamw: 0.01 unasked (review186 F4)
                decay = "" if not weight_decay else f" or --weight-decay (now {weight_decay:g})"
                print(
                    f"warning: {diverged} at epoch {epoch + 1}; lower --lr (now {args.lr:g}{rate}){decay} "
                    f"or try another --optimizer (now {args.optimizer})"
                    + ("" if args.stop_on_non_finite else
                       "; --stop-on-non-finite stops a run at its first step that is not finite"),
                    file=sys.stderr,
                    flush=True,
                )
            if (held_out is not None and held_out.stop) or stop.requested:
                break
    stop.finishing()  # a first Ctrl-C from now lets the run test and save (review75 F1)
    if held_out is not None:
        print(held_out.finish(trainer, args.epochs))
    # complete, even if a Ctrl-C came in its last epoch
    if held_out is not None and held_out.stopped is not None:
        stop.complete(held_out.stopped, args.epochs, "after which early stopping ended the run")
    elif trainer.epochs_done == args.epochs:
        stop.complete(args.epochs, args.epochs, "the run's last")

    shipped = args.dataset in data.DATASETS
    environment = provenance.environment(getattr(args, "argv", None), profile)
    record: dict[str, Any] = {
        "dataset": source,
        "task": dataset.task,
        "train": int(dataset.x_train.shape[0]),
        "val": None if held_out is None else int(held_out.x.shape[0]),
        "test": int(dataset.x_test.shape[0]),
        "features": dataset.n_features,
        "parameters": sum(int(p.size) for p in trainer.model.parameters),
        "classes": list(dataset.class_names) if classification else None,
        "label_column": None if shipped else dataset.label_name,
        "delimiter": None if shipped else dataset.delimiter,
        "header": None if shipped else dataset.has_header,
        "model": args.model,
        "hidden": args.hidden,
        "dropout": args.dropout,
        "profile": profile.name,
        "device": profile.policy.device.label,
        "assurance": profile.policy.assurance.label,
        "execution": execution.label,
        "dtype": config.dtype,
        "optimizer": optimizer.describe(),
        "lr_schedule": schedule.spec,
        "max_grad_value": args.max_grad_value,
        "max_grad_norm": args.max_grad_norm,
        "grad_norms": grad_norms if args.max_grad_norm is not None else None,
        "label_smoothing": args.label_smoothing,
        "no_decay": _group_record(args.no_decay, trainer.model, frozen),
        "freeze": _group_record(args.freeze, trainer.model),
        "batch_size": args.batch_size,
        "seed": args.seed,
        "test_fraction": args.test_fraction,
        "epochs": args.epochs,
        "torch_threads": torch_threads_in_use(),
        "torch_threads_segments": None if resumed is None else [  # as the checkpoint (review65 F7)
            *resumed.saved.thread_counts(), torch_threads_in_use()],
        "data_sha256": _resume.data_digest(dataset),
        "environment": environment,
        "losses": losses,
        "validation": None if held_out is None else held_out.record(classification),
        "kernel_times": None if kernel_times is None else _kernel_times_record(kernel_times),
        **_resume.record(resumed, stop),
    }
    if classification:
        test_outputs = np.asarray(trainer.predict(dataset.x_test))
        accuracy, balanced, baseline = _imbalance.test_metrics(test_outputs, dataset)
        record["test_accuracy"] = accuracy
        print(f"test_accuracy={accuracy:.4f}")
        record["test_balanced_accuracy"] = balanced
        note = _imbalance.baseline_note(accuracy, balanced, baseline, dataset.class_names)
        if note:
            print(note, file=sys.stderr, flush=True)
    else:
        test_outputs = np.asarray(trainer.predict(dataset.x_test))
        mse = target_mse(test_outputs, dataset.y_test, y_mean, y_scale)  # float64, as read
        record["test_mse"] = mse
        print(f"test_mse={metric_text(mse)}")
    finite_rows = np.isfinite(test_outputs).all(axis=tuple(range(1, test_outputs.ndim)))
    missing = int(np.count_nonzero(~finite_rows))
    record["test_rows_without_prediction"] = missing  # review186 F5
    if missing:  # review184 F1: a diverged model's score, told why
        print(no_prediction_warning(missing, len(test_outputs), "test rows", trainer.model.state(),
                                    trainer.model.dtype.name), file=sys.stderr, flush=True)
    selected = trainer.selected
    # one list: the record's capsules and the checkpoint's (review108 F6)
    capsules = [report.audit_to_json(k.audit()) for k in selected]
    earlier = _resume.earlier_capsules(resumed)  # the earlier segments' (review147 F1), also one value
    preference_notes = print_capsules_used(selected, profile, sys.stdout, execution,
                                           len(trainer.selected_outside_graph))
    if kernel_times is not None:
        print(f"kernel times of the training epochs ({len(kernel_times.kernels)} capsules, most time first):")
        print(textwrap.indent(kernel_times.table(), "  "))
    if args.save is not None:
        weights = trainer.model.state()
        _warn_non_finite(weights)
        make_parents(args.save, "--save")
        saved_sha256 = checkpoint.save(args.save, checkpoint.Checkpoint(
            model=args.model,
            hidden=args.hidden,
            dropout=args.dropout,
            features=dataset.n_features,
            outputs=outputs,
            dtype=config.dtype,
            task=dataset.task,
            feature_mean=dataset.feature_mean,
            feature_scale=dataset.feature_scale,
            target_mean=None if classification else y_mean,
            target_scale=None if classification else y_scale,
            classes=dataset.class_names,
            dataset=args.dataset,
            label_column=dataset.label_name,
            feature_names=dataset.feature_names,
            profile=profile.name,
            execution=execution.label,
            seed=args.seed,
            split_seed=args.seed,
            test_fraction=args.test_fraction,
            torch_threads=torch_threads_in_use(),
            torch_threads_segments=None if resumed is None else (  # review64 F3: each segment's count
                *resumed.saved.thread_counts(), torch_threads_in_use()),
            environment=environment,
            weights=weights,
            training=_resume.training_state(args, trainer, dataset, held_out),
            capsules=capsules,  # this segment's selections (after --resume, the resumed run's)
            capsules_order=RECORD_ORDERS[execution],
            earlier_capsules=earlier,
        ))
        stop.mark_saved(args.save)
        record["checkpoint"] = str(args.save)
        record["checkpoint_sha256"] = saved_sha256  # of the bytes written (review210 F6)
        record["weights_sha256"] = provenance.weights_sha256(weights)  # review159 F6: equal for equal bits
    record["seconds"] = time.perf_counter() - started
    record["capsules_order"] = RECORD_ORDERS[execution]
    record["capsules"] = capsules
    record["earlier_capsules"] = earlier  # as the checkpoint
    record["preference_notes"] = list(preference_notes)
    if args.report_json is not None:
        write_json_record(args.report_json, record)
        if args.save is None:  # every output written; with --save, the run's own handler takes Ctrl-C
            completed(0)  # until it returns (no --save: nothing requests a stop, so the status is 0)
        if not json_on_stdout:  # as predict: stdout carries the record itself
            print(f"wrote {shown_path(args.report_json)}")
    if args.save is not None:
        print(f"saved: {shown_path(args.save)}")
    return stop.status(args, trainer.epochs_done)
