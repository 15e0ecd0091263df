"""Model checkpoints: a trained model with everything needed to predict with it later.

A :class:`Checkpoint` holds the model family and sizes (rebuilt by
:func:`torchlean.models.build_model`), the dtype, the task, the preprocessing of training
(the train split's feature standardisation statistics and, for regression, the target's), the
class labels in the order of the output units, where the data came from, the backend profile and
execution mode it was trained under, and the weights (:meth:`torchlean.nn.model.Model.state`).

:func:`save` writes it as an uncompressed numpy ``.npz`` archive and :func:`load` reads it back
with ``allow_pickle=False``: nothing in a checkpoint is pickled, so loading one runs no code.
Archive entries: ``metadata`` (a 0-d unicode array holding a JSON object: ``format`` =
``"torchlean-checkpoint"``, ``version`` and the scalar fields; version 2 also ``dropout``, the
model's drop probability, which version 1 files lack and read as 0.0, and ``test_fraction``, the
test fraction of the train/test split, which version 1 files and version 2 files written before
``torchlean train --test-fraction`` lack and read as 0.2; and, in files written since torchlean
recorded them (older version 2 files lack them and read as stated), ``split_seed`` (the data
split's seed; absent: ``seed``), ``torch_threads`` (absent: ``null``), ``torch_threads_segments``
(the count of each segment of a run resumed since torchlean recorded it; absent: one segment, or
not recorded), ``environment`` (:func:`torchlean.provenance.environment`'s block; absent:
``null``), ``data_sha256`` (when the
training settings do not hold it), ``capsules_order`` and ``capsules`` (the capsules that computed
the run, one :func:`torchlean.backend.report.audit_to_json` row each, and the word of their order,
:attr:`Checkpoint.capsules`; absent: not recorded), ``earlier_capsules`` (after ``--resume``,
the earlier segments' capsule-table digests and capsules, one entry per run of consecutive
segments that share them, with its count, :attr:`Checkpoint.earlier_capsules`; absent: one
segment, or not recorded)), ``feature_mean`` and
``feature_scale`` (float64 ``[features]``), ``target_statistics`` (regression only: float64
``[mean, scale]``) and one ``weights/<parameter name>`` array per parameter, in the model dtype.
Version 2 (written since ``torchlean train --resume``) may add the run's :class:`TrainingState`:
a ``training`` metadata object (``epochs_done``, ``epochs``, ``random_counter``, ``settings`` and
two flags, ``validation`` and ``last_weights``), one ``optimizer/<key>`` array per entry of the optimizer's
``state_dict()`` and, with the flags, the entries ``validation/losses`` and
``validation/metrics`` (float64 ``[epochs_done]``: each epoch's validation loss and metric); with
the second, one ``last_weights/<parameter name>`` array per parameter, in the model dtype (the
last epoch's weights, when ``weights`` are another epoch's). Version 1 files (no training state)
are still read (with ``dropout`` 0.0), and written back as version 1.
"""

from __future__ import annotations

import dataclasses
import json
import math
import os
import sys
import zipfile
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from types import MappingProxyType
from typing import Any, BinaryIO

import numpy as np
import numpy.typing as npt

from torchlean import _npz
from torchlean._atomic import replace_file, resolve_links, stream_sha256
from torchlean._cells import LISTED
from torchlean._cells import names_listed as _listed
from torchlean._checkpoint_capsules import CAPSULE_KEYS, CAPSULE_LABELS
from torchlean._checkpoint_capsules import capsule_rows as _capsule_rows
from torchlean._checkpoint_capsules import json_ready as _json_ready
from torchlean._checkpoint_capsules import value_shown as _value_shown
from torchlean._checkpoint_errors import CheckpointError, FeatureValueError
from torchlean._checkpoint_model import Model as _Model
from torchlean._checkpoint_model import built_model as _built_model
from torchlean._checkpoint_model import check_dtype as _check_dtype
from torchlean._checkpoint_model import check_model_fields as _check_model_fields
from torchlean._checkpoint_model import declared as _declared
from torchlean._checkpoint_model import fit_weights as _fit_weights
from torchlean._checkpoint_model import literals as _literals
from torchlean._checkpoint_model import optimizer_fit as _optimizer_fit
from torchlean._checkpoint_model import optimizer_form as _optimizer_form
from torchlean._checkpoint_model import optimizer_values as _optimizer_values
from torchlean._checks import DECIMAL_INTEGER, is_builtin_int, shown_briefly
from torchlean._csv import refused_character
from torchlean._limits import MAX_TORCH_THREADS
from torchlean._memory import usable_memory
from torchlean._paths import lookup_failure, missing_file_name
from torchlean._tensor_data import host_array
from torchlean.backend import profiles
from torchlean.backend.display import cut, path_shown
from torchlean.data import TEST_FRACTION, Task, display_name
from torchlean.models import MODELS, build_model, checked_dropout
from torchlean.nn.layers import ShapeError
from torchlean.provenance import ENVIRONMENT_KEYS, LATER_KEYS, environment_fault, is_sha256
from torchlean.trainer import RECORD_ORDERS, ExecutionMode, Objective, RunConfig, Trainer

__all__ = [
    "CAPSULE_KEYS", "CAPSULE_LABELS", "FORMAT_VERSION", "SUPPORTED_VERSIONS", "Checkpoint", "CheckpointError",
    "FeatureValueError", "TrainingState", "load", "load_digested", "profile_name", "save",
]

FORMAT_VERSION = 2
"""The checkpoint format this version of torchlean writes (by default)."""

SUPPORTED_VERSIONS = (1, 2)
"""The checkpoint formats this version of torchlean reads: 1 (no training state) and 2."""

EARLIER_CAPSULE_KEYS = ("segments", "capsule_table_sha256", "capsules")
"""The keys of each entry of :attr:`Checkpoint.earlier_capsules`, in their order: how many
consecutive segments of a resumed run (before the last) it stands for, their capsule table's digest
and their capsules."""

_FORMAT = "torchlean-checkpoint"
_WEIGHTS = "weights/"
_OPTIMIZER = "optimizer/"
_LAST_WEIGHTS = "last_weights/"
_VAL_LOSSES = "validation/losses"
_VAL_METRICS = "validation/metrics"
_ARCHIVE_ERRORS = (
    OSError,
    ValueError,
    EOFError,
    zipfile.BadZipFile,
    RuntimeError,  # zipfile: an encrypted member
    NotImplementedError,  # zipfile: an unsupported compression method
    MemoryError,  # an entry whose header claims more memory than there is
)
"""What numpy raises for a file that is not a readable ``.npz`` archive: not a zip or ``.npy``
(``ValueError``: it would need pickle), empty (``EOFError``), truncated or damaged
(``BadZipFile``, ``OSError``, ``ValueError``)."""
_NPY_MAGIC = b"\x93NUMPY"
_LAST_CODE_POINT = 0x10FFFF
"""Unicode's last code point: a UTF-32 code unit above it is no character."""
_METADATA_CHARS = 2**24
"""The most characters a checkpoint's metadata entry may declare (64 MiB as numpy stores text;
a run's metadata is some kilobytes, a few megabytes with tens of thousands of feature names):
the entry is read whole before anything else is known."""
# What np.savez stores without pickling: bool, integer, float and unicode text arrays (never object).
_PLAIN_KINDS = "biufU"
# numpy < 2.1 has no allow_pickle keyword in np.savez and stored save's allow_pickle=False as an
# entry of this name (review60 F2); load ignores it in files written so.
_STRAY_ENTRY = "allow_pickle"

Array = npt.NDArray[Any]


def profile_name(profile: profiles.BackendProfile) -> str:
    """The name a :class:`Checkpoint` records for ``profile`` (``Checkpoint(profile=...)``):
    a maintained profile as shipped, one ``predict`` can rebuild. A profile of your own, including
    ``with_capsule_modules`` of a shipped one (which keeps that one's name), is refused rather than
    recorded under a shipped profile's name.

    Raises:
        CheckpointError: ``profile 'checked_cpu' is not a maintained profile as shipped (a
            checkpoint names one that predict can rebuild: checked_cpu | ...)``; ``profile`` not
            a :class:`~torchlean.backend.profiles.BackendProfile` (a name such as
            ``"checked_cpu"`` is what ``Checkpoint(profile=...)`` takes, not this function).
    """
    if not isinstance(profile, profiles.BackendProfile):
        raise CheckpointError(
            f"profile_name takes a BackendProfile (torchlean.profiles.get('checked_cpu')), got "
            f"{profile!r}: a profile's name is what Checkpoint(profile=...) records"
        )
    name = profile.name
    if name not in profiles.names() or profiles.get(name) != profile:
        raise CheckpointError(
            f"profile {name!r} is not a maintained profile as shipped (a checkpoint names one "
            f"that predict can rebuild: {' | '.join(profiles.names())})"
        )
    return name

def _rebuilt(cls: type[Any], fields: dict[str, Any]) -> Any:
    """``cls(**fields)``: an unpickled :class:`Checkpoint` or :class:`TrainingState`, checked
    again as a new one is."""
    return cls(**fields)


def _plain(value: Any) -> Any:
    """``value`` with each read-only mapping (``MappingProxyType``), also inside tuples and
    mappings, as a plain dict; anything else as it is."""
    if isinstance(value, MappingProxyType):
        return {key: _plain(item) for key, item in value.items()}
    if isinstance(value, tuple):
        return tuple(_plain(item) for item in value)
    return value


def _reduced(value: Any) -> tuple[Any, ...]:
    """``__reduce__`` of a frozen dataclass whose fields hold read-only mappings
    (``MappingProxyType``, which pickle and ``copy.deepcopy`` refuse: review77 F6): rebuilt from
    its fields, each mapping (also one inside a tuple, as :attr:`Checkpoint.capsules`' rows) as a
    plain dict."""
    fields = {field.name: _plain(getattr(value, field.name)) for field in dataclasses.fields(value)}
    return (_rebuilt, (type(value), fields))


@dataclass(frozen=True, slots=True, eq=False)
class TrainingState:
    """What a run needs to continue where it stopped (``torchlean train --resume``), beside a
    :class:`Checkpoint`'s weights: torch's habit of saving ``optimizer.state_dict()`` and the epoch
    with the model's.

    Fields: ``epochs_done`` (an int >= 0, the whole epochs trained: :attr:`Trainer.epochs_done
    <torchlean.trainer.Trainer.epochs_done>`); ``epochs`` (an int >= 1 and >= ``epochs_done``,
    the run's planned total, which a schedule annealing over the run depends on);
    ``random_counter`` (an int in ``[0, 2**64)``, 0 by default: :attr:`Trainer.random_counter
    <torchlean.trainer.Trainer.random_counter>`, the random-op invocations the trainer's session
    served, so a resumed run's dropout masks go on where the run's stopped); ``optimizer``
    (:meth:`Optimizer.state_dict <torchlean.optim.Optimizer.state_dict>`: names to numeric arrays,
    stored as read-only copies: its entries as ``state_dict`` writes them, ``kind`` a 0-d text
    array naming one of :data:`torchlean.optim.OPTIMIZERS` (``adam``, ``adamw`` or ``rmsprop``
    with ``third.<i>`` buffers), ``steps`` a 0-d and ``param_steps`` a 1-d integer array >= 0,
    ``lr`` a 0-d real number, finite and >= 0, and the buffers ``first.<i>``, ``second.<i>``,
    ``third.<i>``, which :class:`Checkpoint` checks against the model's parameters; the
    record's other settings are checked when it is loaded into an optimizer);
    ``settings`` (names to ``str``, ``bool`` or ``None``: the options of the run, as the
    writer spells them, so a reader can rebuild the run; ``torchlean train`` writes its options'
    command-line texts and a digest of its data), stored as a read-only mapping. numpy integers
    are taken as ``int`` (bools refused).

    A run with a validation part also keeps its history: ``val_losses`` and
    ``val_metrics`` (each epoch's validation loss and metric, the first epoch first, one per epoch
    done: float sequences or float arrays, stored as tuples of ``float``; NaN and infinities
    kept; ``torchlean train`` records ``val_accuracy`` or, for regression, ``val_mse`` as the
    metric), both ``None`` without one; and ``last_weights``, the last epoch's weights when the
    checkpoint's ``weights`` are another epoch's (Keras' ``restore_best_weights`` put the best
    epoch's there, for ``predict``; training goes on from the last), else ``None``: names to
    float arrays, stored as a read-only mapping of read-only copies, checked against the model
    by :class:`Checkpoint`.

    Raises:
        CheckpointError: a field outside what is stated above, naming it.
    """

    epochs_done: int
    epochs: int
    optimizer: Mapping[str, Array]
    settings: Mapping[str, str | bool | None]
    val_losses: tuple[float, ...] | None = None
    val_metrics: tuple[float, ...] | None = None
    last_weights: Mapping[str, Array] | None = None
    random_counter: int = 0

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and deep-copied as its fields, checked again when rebuilt (review77 F6)."""
        return _reduced(self)

    def __post_init__(self) -> None:
        for name in ("epochs_done", "epochs", "random_counter"):
            if isinstance(getattr(self, name), np.integer):
                object.__setattr__(self, name, int(getattr(self, name)))
        _check_epochs(self.epochs_done, self.epochs, self.random_counter)
        if not isinstance(self.optimizer, Mapping):
            raise CheckpointError(
                f"training optimizer must be a mapping of names to arrays (Optimizer.state_dict()), got "
                f"{type(self.optimizer).__name__}"
            )
        state: dict[str, Array] = {}
        for key, value in self.optimizer.items():
            if not isinstance(key, str) or not key:
                raise CheckpointError(
                    f"training optimizer entry names must be non-empty strings, got {key!r}"
                )
            if key == "kind" and isinstance(value, np.ndarray) and value.dtype.kind == "U":
                pass  # the optimizer's name (Optimizer.state_dict); load_state_dict checks it
            elif not isinstance(value, np.ndarray) or value.dtype.kind not in "biuf":
                shown = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
                raise CheckpointError(
                    f"training optimizer entry {display_name(key)} must be a numeric numpy array, got {shown}"
                )
        _optimizer_form(self.optimizer)  # before any copy: the form bounds what is copied
        for key, value in self.optimizer.items():
            state[key] = _read_only(value)
        _optimizer_values(state)
        object.__setattr__(self, "optimizer", MappingProxyType(state))
        if not isinstance(self.settings, Mapping):
            raise CheckpointError(
                f"training settings must be a mapping of names to str, bool or None, got "
                f"{type(self.settings).__name__}"
            )
        for key, setting in self.settings.items():
            if not isinstance(key, str) or not (setting is None or isinstance(setting, str | bool)):
                raise CheckpointError(
                    f"training settings must map names to str, bool or None, got {key!r}: {setting!r}"
                )
        object.__setattr__(self, "settings", MappingProxyType(dict(self.settings)))
        if (self.val_losses is None) != (self.val_metrics is None):
            raise CheckpointError(
                "training val_losses and val_metrics must be given together (a validation history) or "
                f"both be None, got {'None' if self.val_losses is None else 'losses'} and "
                f"{'None' if self.val_metrics is None else 'metrics'}"
            )
        for name in ("val_losses", "val_metrics"):
            if getattr(self, name) is not None:
                object.__setattr__(self, name, _history(getattr(self, name), name, self.epochs_done))
        if self.last_weights is not None:
            if not isinstance(self.last_weights, Mapping):
                raise CheckpointError(
                    f"training last_weights must be a mapping of names to arrays or None, got "
                    f"{type(self.last_weights).__name__}"
                )
            for key, value in self.last_weights.items():
                if not isinstance(key, str) or not isinstance(value, np.ndarray) or value.dtype.kind != "f":
                    shown = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
                    raise CheckpointError(
                        f"training last_weights must map names to float arrays, got {key!r}: {shown}"
                    )
            last = {key: _read_only(value) for key, value in self.last_weights.items()}
            object.__setattr__(self, "last_weights", MappingProxyType(last))

    @property
    def has_validation(self) -> bool:
        """Whether the state holds a validation history or last weights."""
        return self.val_losses is not None or self.last_weights is not None


@dataclass(frozen=True, slots=True, eq=False)
class Checkpoint:
    """A trained model ready to be saved, rebuilt (:meth:`build`) and fed raw features.

    Fields: ``model`` (one of :data:`torchlean.models.MODELS`), ``hidden``, ``features`` and
    ``outputs`` (ints >= 1, the arguments of :func:`~torchlean.models.build_model`); ``dtype``
    (``"float32"`` or ``"float64"``); ``task`` (``"classification"``: ``outputs`` class logits,
    ``classes`` a tuple of strings naming the class of each output unit, at least two, distinct,
    not blank;
    ``"regression"``:
    one output, ``classes == ()``); ``feature_mean`` and ``feature_scale`` (float64
    ``[features]``, finite, scale > 0: the train split's ``StandardScaler`` statistics);
    ``target_mean``/``target_scale`` (regression: finite ``float`` values, a numpy float stored as
    one, ints refused, scale > 0: the train targets' float64 mean and standard deviation, a zero
    deviation taken as 1, as ``torchlean train`` standardises the target; both
    ``None`` for classification); ``dataset``, ``label_column`` and ``feature_names`` (where the
    data came from; ``feature_names`` is ``()`` when unknown, else one name per feature);
    ``profile`` and ``execution`` (the backend profile name and execution-mode label trained
    under); ``dropout`` (the ``dropout`` of :func:`~torchlean.models.build_model`, a float in
    ``[0, 1)``, 0.0 by default; numpy floats and Python ints taken as ``float``, bools refused;
    version 1 holds only 0.0: its files have no such field); ``seed`` (a Python int in
    ``[0, 2**64)``, the trainer's seed); ``split_seed`` (the ``seed`` of the
    :func:`torchlean.data.load` call that made the train/test split, :attr:`Dataset.seed
    <torchlean.data.Dataset.seed>`: an int in ``[0, 2**32)``, which ``torchlean predict --split``
    splits with; ``None``, the default, means ``seed``, and is stored as ``seed`` (whatever its
    range), the meaning of a file without it: ``torchlean train`` splits with its ``--seed``;
    version 1 holds only ``seed``); ``weights`` (parameter name -> array of the model's
    parameter shape, in ``dtype``: exactly the model's parameters, named as the model with its
    ``dropout`` layers names them);
    ``test_fraction`` (the ``test_fraction`` of :func:`torchlean.data.load` that made the train/test
    split, a float in ``(0, 1)``, :data:`torchlean.data.TEST_FRACTION` (0.2) by default: ``torchlean
    predict --split train|test`` recomputes that split with it; numpy floats taken as ``float``,
    bools and ints refused; version 1 holds only 0.2);
    ``torch_threads`` (an int in ``[1, 1024]``, torch's intra-op thread count in the run, which the bits of
    ``aten``/``libtorch`` capsules, whose reductions are implementation-defined, may depend on; or
    ``None``, unknown or torch unused; version 1 holds only ``None``); after ``torch_threads``,
    ``torch_threads_segments`` (the ``torch_threads`` of each segment of the run, its first part
    and then each ``torchlean train --resume``, in order, each an int >= 1 or ``None``, the last
    one ``torch_threads``, stored as a tuple: the run is bit for bit an uninterrupted one only when
    they agree, review64 F3; or ``None``: a run of one segment, which ran on ``torch_threads``
    (``torchlean train`` records the list only after ``--resume``), or not recorded (a file
    written before it, or built in Python), taken so; version 1 holds only ``None``);
    ``environment`` (the software and command that wrote the checkpoint,
    :func:`torchlean.provenance.environment`'s block, or ``None``: a mapping with exactly the
    keys :data:`torchlean.provenance.ENVIRONMENT_KEYS` (or all but those of
    :data:`~torchlean.provenance.LATER_KEYS`, an earlier torchlean's block, which read as
    ``None``), each value of the type that function
    writes (:func:`torchlean.provenance.environment_fault`), stored read-only in that order with
    lists as tuples, its ``profile`` ``None`` or the checkpoint's ``profile``; version 1 holds
    only ``None``);
    ``data_sha256`` (:func:`torchlean.provenance.data_sha256` of the ``Dataset`` the run trained,
    validated and tested on, 64 lowercase hex digits, which ``torchlean inspect --dataset`` and
    ``predict`` compare data with; or ``None``, not recorded: then the training settings'
    ``data_sha256``, which ``torchlean train --save`` records, is taken, and one given must equal
    it; stored in the file's metadata only when the training settings do not hold it; version 1
    holds only ``None``);
    ``capsules`` (the kernel capsules that computed the run: the accepted kernels the segment of
    the run that wrote the file selected, :attr:`Trainer.selected
    <torchlean.trainer.Trainer.selected>`, for ``torchlean train --save`` those of its training,
    validation and test passes, after ``--resume`` the resumed segment's only (the earlier
    segments' are ``earlier_capsules``), one row each as
    :func:`torchlean.backend.report.audit_to_json` writes it, the ``capsules`` of ``train
    --report-json``: a non-empty list of mappings with exactly the keys :data:`CAPSULE_KEYS`, the
    labels ``op``, ``provider``, ``device``, ``trust``, ``vjp`` and ``reduction`` labels of their
    vocabulary (:data:`CAPSULE_LABELS`), ``device`` the ``profile``'s device, ``capsule`` a
    non-empty string, each pair of op and capsule name once, ``contracts`` a mapping of the four
    obligations (``shape``, ``layout``, ``value``, ``vjp``) to their descriptors as
    ``audit_to_json`` writes them (``claim``: ``kind``, ``op`` (the row's), ``label`` and the
    optional ``layout`` and ``mode``; ``summary``; ``evidence``: ``kind``, ``name`` (a string or
    ``None``), ``label``; ``provenance``: a list of ``path``, ``symbol``, ``build_target`` (a
    string or ``None``)), stored as a tuple of read-only mappings, each with its keys in that
    order and lists as tuples; or ``None``: not recorded (a file written before torchlean
    recorded them, or built in Python without them); version 1 holds only ``None``);
    ``capsules_order`` (the order of ``capsules``: the word of
    :data:`torchlean.trainer.RECORD_ORDERS` for ``execution``, ``first-use`` or ``graph-plan``;
    given with ``capsules`` and only with them, ``None`` without);
    ``earlier_capsules`` (after ``torchlean train --resume``: the capsules of the segments of the
    run before the last, in order, which computed the weights too (review147 F1: resuming into the
    file resumed from kept only the last segment's), a non-empty list of read-only mappings with
    exactly the keys :data:`EARLIER_CAPSULE_KEYS`, each standing for ``segments`` (an int >= 1)
    consecutive segments that ran under one ``capsule_table_sha256`` (their ``environment``'s
    digest, 64 lowercase hex digits, or ``None``: unknown) with one ``capsules`` list (checked as
    that field, in the same order, or ``None``: not recorded), so that a run resumed many times
    under one torchlean keeps one entry (review149 F1); the ``segments`` add up to the segments
    :meth:`thread_counts` has before the last, so ``None`` for a run of one segment; or ``None``:
    not recorded (a run never resumed, a file written before torchlean recorded them, or built in
    Python without them); version 1 holds only ``None``);
    ``training`` (a :class:`TrainingState`, or ``None``: enough for ``predict``, not to resume);
    ``version`` (:data:`FORMAT_VERSION` by default; 1 writes a file older torchlean reads, and
    holds no training state).

    The arrays are stored as read-only copies (``weights`` as a read-only mapping). The values the
    rest of the API hands out are taken in the stored spelling: numpy integers as ``int`` (bools
    refused), a numpy dtype or scalar type (``np.float32``) as its name, an ``ExecutionMode`` as
    its label, a maintained ``BackendProfile`` as its name (a modified one is refused), lists of class or
    feature names as tuples.

    Raises:
        CheckpointError: any field outside what is stated above, naming the field and the
            accepted values (``version`` not in :data:`SUPPORTED_VERSIONS`: ``unsupported
            checkpoint version 3 (supported: 1, 2)``; a ``dtype``, ``task`` or ``capsules_order``
            that is not a string, an array or a tensor included, named shortened with its type
            before it is compared (review239 F6, F7: numpy's and torch's errors before); a
            ``dropout`` outside ``[0, 1)`` or nonzero with ``version`` 1; a ``test_fraction``
            outside ``(0, 1)`` or other than 0.2 with ``version`` 1; a missing, unexpected or
            mis-shaped weight, or one that is not an array of ``dtype``, and the same for the training state's
            ``last_weights``; a ``training`` that is not a :class:`TrainingState` or ``None``, or
            one with ``version`` 1; a training state whose optimizer state does not fit the model
            (no ``steps`` or ``param_steps`` entry, ``param_steps`` not one count per parameter, a
            buffer naming no parameter or of another shape or dtype than its parameter's, a
            parameter with only one of its ``first``/``second`` buffers, or a ``third`` without
            them); a ``split_seed``, ``torch_threads``, ``torch_threads_segments``,
            ``environment`` or ``data_sha256`` outside what is stated above, or, with ``version``
            1, other than ``seed``, ``None``, ``None``, ``None``, ``None`` (an ``environment``
            missing a key or with another, or whose ``profile`` names an unknown profile or
            another than the checkpoint's, names them; a ``data_sha256`` other than the training
            settings', names both); ``capsules`` or ``capsules_order`` outside what is stated
            above, naming the row's index, its key, the value and the accepted ones
            (``capsules[2] trust must be one of checked | trusted-external, got 'trusted'``), or
            either of them not ``None`` with ``version`` 1;
            training settings whose ``profile`` or ``execution`` name another known profile or
            execution mode than the checkpoint's own, or whose ``seed`` or ``test_fraction``
            another split than ``split_seed`` and ``test_fraction``, or whose ``seed`` is not the
            trainer's ``seed``, naming both values).
    """

    model: str
    hidden: int
    features: int
    outputs: int
    dtype: str
    task: Task
    feature_mean: Array
    feature_scale: Array
    target_mean: float | None
    target_scale: float | None
    classes: tuple[str, ...]
    dataset: str
    label_column: str
    feature_names: tuple[str, ...]
    profile: str
    execution: str
    seed: int
    weights: Mapping[str, Array]
    training: TrainingState | None = None
    version: int = FORMAT_VERSION
    dropout: float = 0.0
    test_fraction: float = TEST_FRACTION
    split_seed: int | None = None
    torch_threads: int | None = None
    environment: Mapping[str, Any] | None = None
    torch_threads_segments: tuple[int | None, ...] | None = None
    data_sha256: str | None = None
    capsules: Sequence[Mapping[str, Any]] | None = None  # stored as a tuple
    capsules_order: str | None = None
    earlier_capsules: Sequence[Mapping[str, Any]] | None = None  # stored as a tuple

    def __reduce__(self) -> tuple[Any, ...]:
        """Pickled and deep-copied as its fields, checked again when rebuilt (review77 F6)."""
        return _reduced(self)

    def __post_init__(self) -> None:
        _check_version(self.version)
        if self.training is not None:
            if not isinstance(self.training, TrainingState):
                raise CheckpointError(
                    f"training must be a TrainingState or None, got {type(self.training).__name__}"
                )
            if self.version == 1:
                raise CheckpointError("a version 1 checkpoint holds no training state (version 2 does)")
        self._coerce()
        object.__setattr__(self, "dropout", _check_model_fields(
            self.model, self.hidden, self.features, self.outputs, self.dropout, self.version))
        self._check_test_fraction()
        _check_dtype(self.dtype)
        self._check_task()
        for name in ("dataset", "label_column", "profile"):
            if not isinstance(getattr(self, name), str):
                raise CheckpointError(f"{name} must be a string, got {getattr(self, name)!r}")
        if not _strings(self.feature_names) or len(self.feature_names) not in (0, self.features):
            raise CheckpointError(
                f"feature_names must be () or {self.features} strings, got {_literals(self.feature_names)}"
            )
        if self.profile not in profiles.names():
            raise CheckpointError(f"unknown profile {self.profile!r} (known: {' | '.join(profiles.names())})")
        if not isinstance(self.execution, str) or self.execution not in ExecutionMode.labels():
            raise CheckpointError(
                f"unknown execution {self.execution!r} (known: {' | '.join(ExecutionMode.labels())})"
            )
        if not is_builtin_int(self.seed) or not 0 <= self.seed < 2**64:
            raise CheckpointError(f"seed must be an int in [0, 2**64), got {self.seed!r}")
        self._check_settings_agree()  # first: an edited profile is named as such (its environment's agrees)
        self._check_provenance()
        self._check_split_agrees()
        self._check_capsules()
        self._check_earlier_capsules()
        for name in ("feature_mean", "feature_scale"):
            object.__setattr__(self, name, _statistic(getattr(self, name), name, self.features))
        if not bool(np.all(self.feature_scale > 0)):
            j = int(np.argmin(self.feature_scale > 0))
            raise CheckpointError(f"feature_scale[{j}] must be > 0, got {float(self.feature_scale[j])}")
        model = self._model()
        object.__setattr__(self, "weights", _checked_weights(self.weights, model, "weight"))
        if self.training is not None:
            if self.training.last_weights is not None:  # checked, kept as given
                _checked_weights(self.training.last_weights, model, "last_weights entry")
            _optimizer_fit(self.training.optimizer, model)

    def _check_provenance(self) -> None:
        """Check (and store in their spelling) ``split_seed``, ``torch_threads`` and
        ``environment``; see the class docstring."""
        if self.split_seed is None:  # the meaning of a file without it (any seed: predict --split names one
            object.__setattr__(self, "split_seed", self.seed)  # beyond 2**32, which no split used)
        split_seed = self.split_seed
        if not is_builtin_int(split_seed) or (split_seed != self.seed and not 0 <= split_seed < 2**32):
            raise CheckpointError(
                f"split_seed must be an int in [0, 2**32) (the seed of the data.load call that made the "
                f"train/test split, Dataset.seed), got {split_seed!r}"
            )
        threads = self.torch_threads
        if threads is not None and (not is_builtin_int(threads) or not 1 <= threads <= MAX_TORCH_THREADS):
            raise CheckpointError(
                f"torch_threads must be an int in [1, {MAX_TORCH_THREADS}] (--torch-threads's range) or "
                f"None, got {threads!r}"
            )
        self._check_thread_segments()
        if self.environment is not None:
            object.__setattr__(self, "environment", _environment(self.environment))
            self._check_environment_profile()
        self._check_data_digest()
        recorded = (split_seed != self.seed or threads is not None or self.environment is not None
                    or self.torch_threads_segments is not None or self.data_sha256 is not None)
        if self.version == 1 and recorded:
            raise CheckpointError(
                f"a version 1 checkpoint has no split_seed, torch_threads, torch_threads_segments, "
                f"environment or data_sha256 (version 2 does), got split_seed {split_seed!r} (seed "
                f"{self.seed}), torch_threads {threads!r}, torch_threads_segments "
                f"{self.torch_threads_segments!r}, environment "
                f"{'None' if self.environment is None else 'given'}, data_sha256 {self.data_sha256!r}"
            )

    def _check_capsules(self) -> None:
        """Check (and store read-only) ``capsules`` and ``capsules_order``; see the class
        docstring."""
        rows, order = self.capsules, self.capsules_order
        if self.version == 1 and (rows is not None or order is not None):
            raise CheckpointError(
                f"a version 1 checkpoint has no capsules or capsules_order (version 2 does), got capsules "
                f"{'None' if rows is None else 'given'}, capsules_order {_value_shown(order)}"
            )
        words = [RECORD_ORDERS[mode] for mode in ExecutionMode]
        if order is not None and not isinstance(order, str):  # review239 F7: before comparing it
            raise CheckpointError(
                f"capsules_order must be one of {' | '.join(words)} (a string) or None, got "
                f"{shown_briefly(order)} of type {type(order).__name__}"
            )
        if order is not None and order not in words:
            raise CheckpointError(
                f"capsules_order must be one of {' | '.join(words)} (the order of the capsules list) or "
                f"None, got {_value_shown(order)}"
            )
        if (rows is None) != (order is None):
            raise CheckpointError(
                "capsules and capsules_order must be given together (the run's capsules and their order) "
                f"or both be None, got capsules {'None' if rows is None else 'given'} and capsules_order "
                f"{_value_shown(order)}"
            )
        if rows is None:
            return
        expected = RECORD_ORDERS[ExecutionMode.parse(self.execution)]
        if order != expected:
            raise CheckpointError(
                f"capsules_order {order!r} is not the order of execution {self.execution!r} ({expected!r}; "
                "one of them was edited): a run's capsules are listed in its execution mode's order"
            )
        device = profiles.get(self.profile).policy.device.label
        object.__setattr__(self, "capsules", _capsule_rows(rows, self.profile, device))

    def _check_earlier_capsules(self) -> None:
        """Check (and store read-only) ``earlier_capsules``; see the class docstring."""
        earlier = self.earlier_capsules
        if earlier is None:
            return
        if self.version == 1:
            raise CheckpointError("a version 1 checkpoint has no earlier_capsules (version 2 does), got them")
        before = len(self.thread_counts()) - 1
        if not before:
            raise CheckpointError(
                "earlier_capsules must be None for a run of one segment (torch_threads_segments records "
                f"none before the last), got {_value_shown(earlier)}"
            )
        if not isinstance(earlier, list | tuple) or not earlier:
            raise CheckpointError(
                f"earlier_capsules must be a non-empty list of mappings with the keys "
                f"{', '.join(EARLIER_CAPSULE_KEYS)} (the {before} segments before the last) or None, got "
                f"{_value_shown(earlier)}"
            )
        device = profiles.get(self.profile).policy.device.label
        checked = [self._earlier_entry(index, entry, device) for index, entry in enumerate(earlier)]
        counted = sum(entry["segments"] for entry in checked)
        if counted != before:
            raise CheckpointError(
                f"earlier_capsules' segments add up to {counted}, but torch_threads_segments records "
                f"{before} segments before the last (one of them was edited)"
            )
        object.__setattr__(self, "earlier_capsules", tuple(checked))

    def _earlier_entry(self, index: int, entry: object, device: str) -> Mapping[str, Any]:
        """One checked, read-only entry of ``earlier_capsules``.

        Raises:
            CheckpointError: naming the entry, the key and the accepted values.
        """
        where = f"earlier_capsules[{index}]"
        keys = ", ".join(EARLIER_CAPSULE_KEYS)
        if not isinstance(entry, Mapping) or set(entry) != set(EARLIER_CAPSULE_KEYS):
            found = sorted(map(str, entry)) if isinstance(entry, Mapping) else None
            raise CheckpointError(
                f"{where} must be a mapping with exactly the keys {keys}, got "
                f"{_value_shown(entry) if found is None else 'the keys ' + ', '.join(found)}"
            )
        count, digest, rows = entry["segments"], entry["capsule_table_sha256"], entry["capsules"]
        if isinstance(count, np.integer):
            count = int(count)
        if not is_builtin_int(count) or count < 1:
            raise CheckpointError(
                f"{where} segments must be an int >= 1 (how many consecutive segments ran with these "
                f"capsules), got {_value_shown(count)}"
            )
        if digest is not None and not is_sha256(digest):
            raise CheckpointError(
                f"{where} capsule_table_sha256 must be 64 lowercase hex digits (those segments' "
                f"environment's) or None, got {_value_shown(digest)}"
            )
        if rows is not None:
            try:
                rows = _capsule_rows(rows, self.profile, device)
            except CheckpointError as error:
                raise CheckpointError(f"{where} {error}") from None
        return MappingProxyType({"segments": count, "capsule_table_sha256": digest, "capsules": rows})

    def earlier_capsules_json(self) -> list[dict[str, Any]] | None:
        """:attr:`earlier_capsules` as JSON-ready data (plain dicts and lists, a new copy); ``None``
        when not recorded."""
        return None if self.earlier_capsules is None else _json_ready(self.earlier_capsules)

    def capsules_json(self) -> list[dict[str, Any]] | None:
        """:attr:`capsules` as JSON-ready data, as :func:`torchlean.backend.report.audit_to_json`
        wrote them (plain dicts and lists, a new copy); ``None`` when not recorded."""
        return None if self.capsules is None else [_json_ready(row) for row in self.capsules]

    def _check_data_digest(self) -> None:
        """Check ``data_sha256``, taking the training settings' when it is ``None``; see the class
        docstring."""
        digest = self.data_sha256
        if digest is not None and not is_sha256(digest):
            raise CheckpointError(
                f"data_sha256 must be 64 lowercase hex digits (provenance.data_sha256 of the run's "
                f"Dataset) or None, got {digest!r}"
            )
        recorded = None if self.training is None else self.training.settings.get("data_sha256")
        if not isinstance(recorded, str):
            return
        if not is_sha256(recorded):  # review69 F2: the settings' copy is checked as the field is
            raise CheckpointError(
                f"the training settings' data_sha256 must be 64 lowercase hex digits (provenance.data_sha256 "
                f"of the run's Dataset), got {recorded!r}"
            )
        if digest is None:
            object.__setattr__(self, "data_sha256", recorded)
        elif digest != recorded:
            raise CheckpointError(
                f"data_sha256 {digest!r} and the training settings' data_sha256 {recorded!r} differ "
                "(one of them was edited): a checkpoint records the digest of one run's data"
            )

    def _check_environment_profile(self) -> None:
        """Refuse an ``environment`` whose ``profile`` names no known profile, or another one than
        the checkpoint's: the block records the profile the run ran under, whose capsule table
        ``inspect`` compares (review64 F4)."""
        assert self.environment is not None
        named = self.environment["profile"]
        if named is None:
            return
        if named not in profiles.names():
            raise CheckpointError(
                f"environment's profile must be a known profile name or None (known: "
                f"{' | '.join(profiles.names())}), got {named!r}"
            )
        if named != self.profile:
            raise CheckpointError(
                f"the checkpoint's profile {self.profile!r} and its environment's profile {named!r} differ "
                "(one of them was edited): the environment records the profile the run ran under"
            )

    def _check_thread_segments(self) -> None:
        """Check ``torch_threads_segments`` (stored as a tuple of ints); see the class docstring."""
        segments = self.torch_threads_segments
        if segments is None:
            return
        if isinstance(segments, list | tuple):
            segments = tuple(int(n) if isinstance(n, np.integer) else n for n in segments)
        if (not isinstance(segments, tuple) or not segments
                or any(n is not None and (not is_builtin_int(n) or not 1 <= n <= MAX_TORCH_THREADS)
                       for n in segments)):
            raise CheckpointError(
                f"torch_threads_segments must be a non-empty list of ints in [1, {MAX_TORCH_THREADS}] or "
                f"None (the torch thread count of each segment of the run) or None, got "
                f"{self.torch_threads_segments!r}"
            )
        if segments[-1] != self.torch_threads:
            raise CheckpointError(
                f"torch_threads_segments must end with torch_threads {self.torch_threads!r} (the count of "
                f"the run's last segment), got {list(segments)!r}"
            )
        object.__setattr__(self, "torch_threads_segments", segments)

    def thread_counts(self) -> tuple[int | None, ...]:
        """The torch thread count of each segment of the run (its first part, then each
        ``--resume``): :attr:`torch_threads_segments`, or, when not recorded, ``(torch_threads,)``
        (the run taken as one segment)."""
        return self.torch_threads_segments or (self.torch_threads,)

    def not_finite(self) -> list[tuple[str, int, int]]:
        """The arrays holding NaN or infinite values, as ``(name, count, size)`` with the names the
        archive gives them (``weights/4.bias``, ``last_weights/...``, ``optimizer/second.0``), in
        that order: a diverged run's, or a hand edit's. ``predict`` leaves the rows such weights
        reach without a prediction, ``--resume`` warns, ``inspect`` lists them (review158 F8)."""
        groups: list[tuple[str, Mapping[str, Array]]] = [("weights/", self.weights)]
        if self.training is not None:
            groups += [("last_weights/", self.training.last_weights or {}),
                       ("optimizer/", self.training.optimizer)]
        return [
            (f"{prefix}{name}", count, int(array.size))
            for prefix, arrays in groups
            for name, array in arrays.items()
            if array.dtype.kind in "biuf" and (count := int(np.count_nonzero(~np.isfinite(array))))
        ]

    def _check_settings_agree(self) -> None:
        """Refuse training settings whose ``profile`` or ``execution`` (the run's options, which
        ``--resume`` runs under) differ from the checkpoint's own (which ``predict`` runs under),
        or whose ``model``, ``hidden``, ``dropout`` or ``dtype`` differ from the model's fields:
        one of the two copies was edited, and neither can be trusted (review62 F6, review69 F2).
        A setting that is not a value its option takes is left to ``--resume``'s parser, which
        names the option."""
        if self.training is None:
            return
        known = {"profile": profiles.names(), "execution": ExecutionMode.labels()}
        for name in ("profile", "execution"):
            setting = self.training.settings.get(name)
            # a setting that names no profile (mode) is --resume's to refuse, naming those accepted
            if setting in known[name] and setting != getattr(self, name):
                raise CheckpointError(
                    f"the checkpoint's {name} {getattr(self, name)!r} and its training settings' {name} "
                    f"{setting!r} differ (one of them was edited): a checkpoint records one {name}, which "
                    f"predict and --resume both run under"
                )
        model = (("model", "model", _known(MODELS)), ("hidden", "hidden", _positive_int),
                 ("dropout", "dropout", _dropout), ("dtype", "dtype", _known(("float32", "float64"))))
        self._refuse_edited_settings(model, "one model, which predict rebuilds and --resume trains on")

    def _refuse_edited_settings(
        self, pairs: tuple[tuple[str, str, Callable[[str], object]], ...], records: str
    ) -> None:
        """Refuse a training setting (``pairs``: its name, the field it must equal and its parser,
        which gives None for a value its option does not take) that parses to another value than
        the field: ``... differ (one of them was edited): a checkpoint records <records>``."""
        assert self.training is not None
        for name, field, parse in pairs:
            setting = self.training.settings.get(name)
            value = parse(setting) if isinstance(setting, str) else None
            if value is not None and value != getattr(self, field):
                raise CheckpointError(
                    f"the checkpoint's {field} {getattr(self, field)!r} and its training settings' {name} "
                    f"{setting!r} differ (one of them was edited): a checkpoint records {records}"
                )

    def _check_split_agrees(self) -> None:
        """Refuse training settings whose ``seed`` or ``test_fraction`` (the options the run split
        its data with, which ``predict --split`` and ``inspect --dataset`` load the data with to
        compare their digest) differ from ``split_seed`` or ``test_fraction`` (the split ``predict
        --split`` scores): the digest would vouch for one split while another is scored
        (review115 F1); and a ``seed`` setting other than the trainer's ``seed`` (review221 F5).
        A setting that is not a value its option takes is left to ``--resume``'s parser, which
        names the option."""
        if self.training is None:
            return
        split = (("seed", "split_seed", _seed), ("test_fraction", "test_fraction", _fraction))
        self._refuse_edited_settings(split, "one train/test split, which predict --split scores and --resume "
                                     "trains on")
        # review221 F5: the trainer's seed too, which inspect shows and --resume trains with
        self._refuse_edited_settings((("seed", "seed", _seed),), "one seed, the trainer's, which --resume "
                                     "trains with")

    def _check_test_fraction(self) -> None:
        """Refuse a ``test_fraction`` that is not a float in ``(0, 1)``, or is not the default with
        ``version`` 1 (its files cannot hold another)."""
        fraction = self.test_fraction
        if isinstance(fraction, np.floating):
            fraction = float(fraction)
            object.__setattr__(self, "test_fraction", fraction)
        if not isinstance(fraction, float) or not 0.0 < fraction < 1.0:
            raise CheckpointError(
                f"test_fraction must be a float in (0, 1) (the test fraction of the train/test split), got "
                f"{fraction!r}"
            )
        if self.version == 1 and fraction != TEST_FRACTION:
            raise CheckpointError(
                f"a version 1 checkpoint has no test_fraction (version 2 does; version 1 files mean "
                f"{TEST_FRACTION}), got test_fraction {fraction!r}"
            )

    def _coerce(self) -> None:
        """Store the API's other spellings of a field as this record's (see the class docstring);
        anything else is left for the checks to refuse."""
        for name in ("hidden", "features", "outputs", "seed", "split_seed", "torch_threads"):
            value = getattr(self, name)
            if isinstance(value, np.integer):
                object.__setattr__(self, name, int(value))
        # a dtype or a scalar type only: np.dtype reads any value's .dtype (np.float64(1.0), an
        # array) and raises ValueError for a torch tensor (review239 F6)
        if isinstance(self.dtype, np.dtype | type):
            try:
                dtype_name = np.dtype(self.dtype).name
            except TypeError:
                dtype_name = None
            if dtype_name in ("float32", "float64"):
                object.__setattr__(self, "dtype", dtype_name)
        if isinstance(self.execution, ExecutionMode):
            object.__setattr__(self, "execution", self.execution.label)
        if isinstance(self.profile, profiles.BackendProfile):
            object.__setattr__(self, "profile", profile_name(self.profile))
        for name in ("classes", "feature_names"):
            if isinstance(getattr(self, name), list):
                object.__setattr__(self, name, tuple(getattr(self, name)))

    def _check_task(self) -> None:
        if not isinstance(self.task, str):  # review239 F7: compared below, an array raised numpy's errors
            raise CheckpointError(
                f"task must be classification or regression (a string), got {shown_briefly(self.task)} of "
                f"type {type(self.task).__name__}"
            )
        if self.task == "classification":
            if (
                not _strings(self.classes)
                or len(set(self.classes)) != len(self.classes)
                or not all(name.strip() for name in self.classes)
            ):  # a blank name would print as predict's empty "no prediction" cell
                raise CheckpointError(
                    f"classes must be distinct, non-blank strings, got {_literals(self.classes)}"
                )
            for index, name in enumerate(self.classes):  # predict writes them raw (review158 F3, F4)
                refused = refused_character(name)
                if refused is not None:
                    raise CheckpointError(
                        f"class {index} {cut(display_name(name))} holds {refused}, which a class name read "
                        "from CSV text cannot hold and predict would write raw (accepted: text whose only "
                        "control characters are tab, line feed and carriage return)"
                    )
            if len(self.classes) < 2 or len(self.classes) != self.outputs:
                raise CheckpointError(
                    f"a classifier needs one class per output unit ({self.outputs}), at least two; "
                    f"got classes {_literals(self.classes)}"
                )
            if self.target_mean is not None or self.target_scale is not None:
                raise CheckpointError("target_mean and target_scale must be None for classification")
        elif self.task == "regression":
            if self.outputs != 1 or self.classes != ():
                raise CheckpointError(
                    f"a regression model has outputs 1 and classes (), got outputs {self.outputs} "
                    f"and classes {self.classes!r}"
                )
            for name in ("target_mean", "target_scale"):
                value = getattr(self, name)
                if isinstance(value, np.floating):  # np.float32(0.5) as the float of its value
                    value = float(value)
                    object.__setattr__(self, name, value)
                if not isinstance(value, float) or not np.isfinite(value):
                    raise CheckpointError(f"{name} must be a finite float for regression, got {value!r}")
            assert self.target_scale is not None
            if self.target_scale <= 0:
                raise CheckpointError(f"target_scale must be > 0, got {self.target_scale!r}")
        else:
            raise CheckpointError(f"unknown task {self.task!r} (known: classification | regression)")

    def _model(self) -> _Model:
        """The model these fields describe, its parameters listed (fields already checked)."""
        return _built_model(self.model, self.hidden, self.features, self.outputs, self.dropout, self.dtype)

    def build(
        self, *, profile: str | None = None, execution: str | None = None, show_backend: bool = False
    ) -> Trainer[Any, Any]:
        """A trainer holding this model with its saved weights, ready for
        :meth:`~torchlean.trainer.Trainer.predict` on standardised features (:meth:`standardise`).

        The model has the saved ``dropout`` layers (the saved weights' names are theirs), which
        :meth:`~torchlean.trainer.Trainer.predict` runs in evaluation mode: as the identity.
        ``profile`` and ``execution`` default to the ones saved; the session is opened on first
        use (:meth:`~torchlean.trainer.Trainer.open`). Classification outputs are ``[n, outputs]``
        logits (the predicted class is ``classes[argmax]``); regression outputs ``[n, 1]`` are the
        standardised target (``output * target_scale + target_mean`` in float64 gives target
        units). A ``profile`` sets the trainer's device to the profile's (``checked_cuda`` gives
        a ``cuda`` trainer), as :meth:`~torchlean.trainer.RunConfig.with_profile`.

        The trainer gets the weights, not the :attr:`training` state: ``fit`` on it starts a new
        run from these weights (``RunConfig``'s default optimizer, SGD with ``lr=0.01``; epoch 0's
        shuffle), not a resumed one (``torchlean train --resume`` rebuilds the run with its
        optimizer and position). To fine-tune, build a ``Trainer`` with the optimizer you want and
        copy the weights in (``trainer.model.load_state(built.model.state())``).

        Raises:
            TrainerLabelError: an unknown profile name or execution label.
            TrainerError: a ``profile``/``execution`` that is not a string (or a
                :class:`~torchlean.backend.profiles.BackendProfile` for ``profile``), or a
                non-bool ``show_backend``.
        """
        layer, input_shape = build_model(
            self.model, self.features, self.outputs, hidden=self.hidden, dropout=self.dropout
        )
        config = RunConfig(
            execution=self.execution if execution is None else execution,
            show_backend=show_backend,
            dtype=self.dtype,
        ).with_profile(self.profile if profile is None else profile)
        trainer: Trainer[Any, Any] = Trainer(
            layer,
            objective=Objective.CROSS_ENTROPY if self.task == "classification" else Objective.MSE,
            config=config,
            seed=self.seed,
            input_shape=input_shape,
        )
        trainer.model.load_state(self.weights)
        return trainer

    def standardise(self, x: npt.ArrayLike) -> Array:
        """Raw features ``[n, features]`` as the model saw them in training: ``(x - feature_mean)
        / feature_scale`` in float64 (the arithmetic of scikit-learn's
        ``StandardScaler.transform``, which :func:`torchlean.data.load` applies), then cast to
        ``dtype``: ``[n, features]`` of ``dtype``, bit for bit what training computed for the same
        rows.

        Raises:
            CheckpointError: ``x`` is not a rectangular array of real numbers (strings, objects,
                complex numbers, ragged sequences and torch tensors that require grad are refused, as
                by the trainer), not
                ``[n, features]`` (naming both feature counts); :class:`FeatureValueError` (a
                CheckpointError): a value is NaN or infinite, or standardises beyond ``dtype``'s
                range (``x[0, 0] (feature alcohol): ...``, numpy's 0-based indices).
        """
        given = host_array(
            x, "features", CheckpointError, "feature data (accepted: [n, features] real numbers)"
        )
        if given.dtype.kind not in "biuf":
            raise CheckpointError(
                "features must be real numbers (accepted: bool, integer or float arrays), got dtype "
                f"{given.dtype}"
            )
        raw = np.asarray(given, dtype=np.float64)
        if raw.ndim != 2 or raw.shape[1] != self.features:
            raise CheckpointError(
                f"the model takes {self.features} feature{'' if self.features == 1 else 's'} per row, got an "
                f"array of shape {list(raw.shape)}"
            )
        with np.errstate(over="ignore", invalid="ignore"):
            values = ((raw - self.feature_mean) / self.feature_scale).astype(self.dtype)
        if not np.isfinite(raw).all():
            i, j = (int(k) for k in np.argwhere(~np.isfinite(raw))[0])
            raise FeatureValueError(
                i, j, display_name(self.feature_names[j]), f"the value {raw[i, j]} is not a finite number"
            )
        bad = ~np.isfinite(values)
        if bad.any():
            i, j = (int(k) for k in np.argwhere(bad)[0])
            raise FeatureValueError(
                i, j, display_name(self.feature_names[j]),
                f"the value {raw[i, j]:.6g} standardises beyond the {self.dtype} range (training's mean "
                f"{self.feature_mean[j]:.6g}, standard deviation {self.feature_scale[j]:.6g}; the model's "
                f"dtype is {self.dtype}: correct or remove the row)",  # a way forward (review99 L2)
            )
        return values


def _checked_weights(weights: object, model: _Model, what: str) -> Mapping[str, Array]:
    """``weights`` as read-only copies, in ``model``'s parameter order, after :func:`_fit_weights`."""
    if not isinstance(weights, Mapping):
        raise CheckpointError(f"weights must be a mapping of names to arrays, got {type(weights).__name__}")
    for name, value in weights.items():
        if not isinstance(value, np.ndarray):
            raise CheckpointError(
                f"{what} {name} is a {type(value).__name__}, expected a numpy array of {model.dtype}"
            )
    _fit_weights(weights, model, what)
    return MappingProxyType({name: _read_only(weights[name]) for name, _ in model.params})


def _check_epochs(epochs_done: object, epochs: object, random_counter: object) -> None:
    """The counts of a :class:`TrainingState` (see there).

    Raises:
        CheckpointError: naming the count and the accepted values.
    """
    if not is_builtin_int(epochs_done) or epochs_done < 0:
        raise CheckpointError(f"training epochs_done must be an int >= 0, got {epochs_done!r}")
    if not is_builtin_int(epochs) or epochs < max(1, epochs_done):
        raise CheckpointError(
            f"training epochs (the run's total) must be an int >= 1 and >= epochs_done "
            f"({epochs_done}), got {epochs!r}"
        )
    if not is_builtin_int(random_counter) or not 0 <= random_counter < 2**64:
        raise CheckpointError(f"training random_counter must be an int in [0, 2**64), got {random_counter!r}")


def _check_version(version: object) -> int:
    """``version``, refused when not in :data:`SUPPORTED_VERSIONS` (bools and floats too)."""
    if not is_builtin_int(version) or version not in SUPPORTED_VERSIONS:
        supported = ", ".join(map(str, SUPPORTED_VERSIONS))
        raise CheckpointError(f"unsupported checkpoint version {version!r} (supported: {supported})")
    return version


def _history(values: object, name: str, epochs_done: int) -> tuple[float, ...]:
    """A validation history as a tuple of ``float``, one per epoch done.

    Raises:
        CheckpointError: not a sequence or 1-d array of floats (bools, ints and strings
            refused), or not ``epochs_done`` long; a value below 0 or ``-inf`` (a validation loss,
            accuracy or MSE is >= 0; a diverged epoch's is NaN or +inf; review31 F4).
    """
    if isinstance(values, np.ndarray):
        if values.ndim != 1 or values.dtype.kind != "f":
            raise CheckpointError(
                f"training {name} must be a 1-d float array, got dtype {values.dtype}, shape "
                f"{list(values.shape)}"
            )
        found = tuple(float(v) for v in values)
    elif isinstance(values, list | tuple) and all(isinstance(v, float | np.floating) for v in values):
        found = tuple(float(v) for v in values)
    else:
        raise CheckpointError(
            f"training {name} must be a sequence of floats (one per epoch done), got {values!r}"
        )
    if len(found) != epochs_done:
        raise CheckpointError(
            f"training {name} must hold one value per epoch done ({epochs_done}), got {len(found)}"
        )
    negative = [(epoch, value) for epoch, value in enumerate(found, 1) if value < 0.0]
    if negative:
        epoch, value = negative[0]
        raise CheckpointError(
            f"training {name} must be >= 0 (a validation loss, accuracy or MSE; NaN or +inf for a "
            f"diverged epoch), got {value!r} at epoch {epoch}"
        )
    return found


def _strings(values: object) -> bool:
    return isinstance(values, tuple) and all(isinstance(v, str) for v in values)


def _read_only(value: Array) -> Array:
    copy = np.array(value, copy=True)
    copy.flags.writeable = False
    return copy


def _statistic(value: object, name: str, features: int) -> Array:
    """``value`` as a read-only float64 ``[features]`` copy of finite numbers.

    Raises:
        CheckpointError: another dtype or shape, or a non-finite entry (naming it).
    """
    if not isinstance(value, np.ndarray):
        raise CheckpointError(f"{name} must be a float64 array of shape [{features}], got {value!r}")
    if value.dtype != np.float64 or value.shape != (features,):
        found = f"dtype {value.dtype}, shape {list(value.shape)}"
        raise CheckpointError(f"{name} must be a float64 array of shape [{features}], got {found}")
    finite = np.isfinite(value)
    if not finite.all():
        j = int(np.argmin(finite))
        raise CheckpointError(f"{name}[{j}] is not finite: {float(value[j])} (accepted: finite statistics)")
    return _read_only(value)


def _check_path(path: object) -> None:
    """Refuse a checkpoint path that is not a ``str`` or ``os.PathLike`` (``Path`` would raise a
    bare ``TypeError``) or is empty (``Path`` would read it as ``.``, the current folder)."""
    if not isinstance(path, str | os.PathLike):
        raise CheckpointError(f"a checkpoint path must be a str or os.PathLike, got {type(path).__name__}")
    if not isinstance(os.fspath(path), str):  # Path() raised a bare TypeError (review241 F10)
        raise CheckpointError(
            f"a checkpoint path must be a str or an os.PathLike returning str, got a {type(path).__name__} "
            "returning bytes"
        )
    if os.fspath(path) in ("", b""):
        raise CheckpointError("a checkpoint path must name a file, got ''")


def save(path: str | os.PathLike[str], checkpoint: Checkpoint) -> str:
    """Write ``checkpoint`` to ``path`` (exactly that name: no ``.npz`` is appended) as an
    uncompressed numpy ``.npz`` archive with the entries of the module docstring. The parent
    folder must exist; an existing file is replaced only once the new one is completely written
    (a temporary file beside it is renamed over it, with the replaced file's permissions, else
    those of a new file under the umask); a symbolic link is followed (the link stays, its
    target is replaced); an existing path that is not a regular file is refused.

    Returns:
        The SHA-256 (hex, what ``sha256sum PATH`` prints) of the bytes written, read back before
        they replace ``path`` (so it is of this save even if another process replaces the file
        at once; ``torchlean train --report-json`` records it as ``checkpoint_sha256``). A link
        is followed to the file it names, which is replaced (``/dev/stdout`` redirected to a file:
        that file).

    Raises:
        CheckpointError: ``checkpoint`` is not a :class:`Checkpoint`, ``path`` is not a ``str`` or
            ``os.PathLike`` or is empty, ``path`` names a folder by its spelling (a final ``/``,
            ``.`` or ``..``, as the CLI's ``--save`` refuses it), is a directory (``it is a
            directory``) or another
            existing path that is not a regular file (a device or a pipe), or the file cannot be
            written (naming the path as :func:`load` shows it and the reason: the operating system's,
            ``File name too long`` for a name or path too long, ``Too many levels of symbolic links``
            for a loop of links, which is left as it is, or ``the path holds a NUL byte,
            which no file name can``: review239 F11); an entry that is not a
            bool, integer, float or text array, which ``np.savez`` would pickle (naming it;
            :class:`Checkpoint` admits none); metadata longer than :func:`load` reads (2**24
            characters), before anything is written.
    """
    if not isinstance(checkpoint, Checkpoint):
        raise CheckpointError(f"save needs a Checkpoint, got {type(checkpoint).__name__}")
    _check_path(path)
    given = os.fsdecode(os.fspath(path))
    named = path_shown(given)  # one line, nothing for the terminal, as load names it (review239 F11)
    if given.endswith(("/", os.sep)) or os.path.basename(given) in (".", ".."):  # review119 F4
        raise CheckpointError(  # realpath would drop a final "/" and write the file "newdir"
            f"cannot write checkpoint {named}: it names a folder (a final /, . or ..); give a file path, as "
            "torchlean train --save takes it"
        )
    try:  # a NUL byte, a name or path too long, a loop of links: the reason (review239 F11, review241 F10)
        file = resolve_links(given)  # through a symbolic link: the link keeps naming the checkpoint
        is_dir, exists, is_file = file.is_dir(), file.exists(), file.is_file()
    except OSError as error:
        raise CheckpointError(f"cannot write checkpoint {named}: {error.strerror or error}") from None
    if is_dir:  # review115 F6: named as the CLI names it, not as "a device or a pipe"
        raise CheckpointError(f"cannot write checkpoint {named}: it is a directory; give a file path")
    if exists and not is_file:
        raise CheckpointError(
            f"cannot write checkpoint {named}: it exists and is not a regular file (a device or a pipe "
            "would be replaced); give a file path"
        )
    metadata = {
        "format": _FORMAT,
        "version": checkpoint.version,
        "model": checkpoint.model,
        "hidden": checkpoint.hidden,
        "features": checkpoint.features,
        "outputs": checkpoint.outputs,
        "dtype": checkpoint.dtype,
        "task": checkpoint.task,
        "classes": list(checkpoint.classes),
        "dataset": checkpoint.dataset,
        "label_column": checkpoint.label_column,
        "feature_names": list(checkpoint.feature_names),
        "profile": checkpoint.profile,
        "execution": checkpoint.execution,
        "seed": checkpoint.seed,
    }
    if checkpoint.version >= 2:
        metadata["dropout"] = checkpoint.dropout
        metadata["test_fraction"] = checkpoint.test_fraction
        metadata["split_seed"] = checkpoint.split_seed
        metadata["torch_threads"] = checkpoint.torch_threads
        if checkpoint.torch_threads_segments is not None:  # absent: one segment (or not recorded)
            metadata["torch_threads_segments"] = list(checkpoint.torch_threads_segments)
        metadata["environment"] = None if checkpoint.environment is None else {
            key: list(value) if isinstance(value, tuple) else value
            for key, value in checkpoint.environment.items()
        }
        settings = {} if checkpoint.training is None else checkpoint.training.settings
        if checkpoint.data_sha256 is not None and settings.get("data_sha256") is None:
            metadata["data_sha256"] = checkpoint.data_sha256  # else the training settings hold it
        if checkpoint.capsules is not None:  # absent: not recorded
            metadata["capsules_order"] = checkpoint.capsules_order
            metadata["capsules"] = checkpoint.capsules_json()
        if checkpoint.earlier_capsules is not None:  # absent: one segment (or not recorded)
            metadata["earlier_capsules"] = checkpoint.earlier_capsules_json()
    training = checkpoint.training
    if training is not None:
        metadata["training"] = {
            "epochs_done": training.epochs_done,
            "epochs": training.epochs,
            "random_counter": training.random_counter,
            "settings": dict(training.settings),
            "validation": training.val_losses is not None,
            "last_weights": training.last_weights is not None,
        }
    text = json.dumps(metadata)
    if len(text) > _METADATA_CHARS:  # review149 F1: load would refuse it, after it replaced a good file
        raise CheckpointError(
            f"cannot write checkpoint {named}: its metadata has {len(text)} characters, more than load reads "
            f"({_METADATA_CHARS}); nothing was written"
        )
    # Any: numpy's stubs type savez's keyword arguments as its own allow_pickle flag
    arrays: dict[str, Any] = {
        "metadata": np.array(text),
        "feature_mean": checkpoint.feature_mean,
        "feature_scale": checkpoint.feature_scale,
    }
    if checkpoint.target_mean is not None and checkpoint.target_scale is not None:
        arrays["target_statistics"] = np.array([checkpoint.target_mean, checkpoint.target_scale])
    arrays.update({_WEIGHTS + name: value for name, value in checkpoint.weights.items()})
    if training is not None:
        arrays.update({_OPTIMIZER + name: value for name, value in training.optimizer.items()})
        if training.val_losses is not None and training.val_metrics is not None:
            arrays[_VAL_LOSSES] = np.array(training.val_losses, dtype=np.float64)
            arrays[_VAL_METRICS] = np.array(training.val_metrics, dtype=np.float64)
        if training.last_weights is not None:
            arrays.update({_LAST_WEIGHTS + name: value for name, value in training.last_weights.items()})
    # np.savez pickles only object arrays, and numpy < 2.1 would store an allow_pickle keyword as
    # an entry: pass none, and refuse any array load's allow_pickle=False could not read
    for name, value in arrays.items():
        if not isinstance(value, np.ndarray) or value.dtype.kind not in _PLAIN_KINDS:
            shown = value.dtype if isinstance(value, np.ndarray) else type(value).__name__
            raise CheckpointError(
                f"cannot write checkpoint {named}: entry {name!r} is {shown}, not a bool, integer, float "
                "or text array (np.savez would pickle it)"
            )
    # written beside the target and renamed over it, so a failed write (a full disk) leaves an
    # existing checkpoint whole
    try:
        digest = replace_file(file, lambda handle: np.savez(handle, **arrays))
    except OSError as error:
        raise CheckpointError(f"cannot write checkpoint {named}: {error.strerror or error}") from None
    assert digest is not None, "a real path is replaced, never written in place"  # streams: refused above
    return digest


# The metadata fields of each format version, in the order ``save`` writes them (``training``
# only with a training state).
_V1_FIELDS = (
    "format", "version", "model", "hidden", "features", "outputs", "dtype", "task", "classes", "dataset",
    "label_column", "feature_names", "profile", "execution", "seed",
)
_METADATA_FIELDS = {
    1: _V1_FIELDS,
    2: (*_V1_FIELDS, "dropout", "test_fraction", "split_seed", "torch_threads", "torch_threads_segments",
        "environment", "data_sha256", "capsules_order", "capsules", "earlier_capsules", "training"),
}
# A version 2 file may lack ``training`` (no training state), ``test_fraction`` (written before
# ``torchlean train --test-fraction``, whose split used data.TEST_FRACTION) and ``split_seed``,
# ``torch_threads``, ``environment``, ``capsules_order``, ``capsules`` and ``earlier_capsules``
# (absent too for a run never resumed) (written before they were
# recorded: the split's seed was ``seed``, the others are unknown).
_TRAINING_FIELDS = ("epochs_done", "epochs", "random_counter", "settings", "validation", "last_weights")
_TRAINING_FLAGS = ("validation", "last_weights")


def load(path: str | os.PathLike[str]) -> Checkpoint:
    """Read the checkpoint :func:`save` wrote to ``path`` (as ``np.load(..., allow_pickle=False)``
    would, nothing unpickled).

    An archive may be hostile (a zip entry of a few kilobytes can inflate to gigabytes), so no
    entry's data is read before it is known to be one the metadata calls for, of the dtype and
    shape it describes: the entry names are checked first, then the ``metadata`` entry is read
    (at most 2**24 characters), then the names against the metadata, then each entry's ``.npy``
    header (dtype, shape, from its first bytes) against the model, the statistics and the
    training state the metadata describes, and only then the data. Memory is bounded by the
    arrays of the model the metadata describes.

    An ``allow_pickle`` entry holding a 0-d bool is ignored: under numpy < 2.1, whose ``np.savez``
    has no such keyword, torchlean 0.1.0's ``save`` stored its ``allow_pickle=False`` so.

    Raises:
        CheckpointError: ``path`` is not a ``str`` or ``os.PathLike``, or is empty; else naming ``path`` and
            what is wrong: no such file (or a directory, a device or a pipe); a file that cannot be
            read (``cannot read checkpoint <path>: <reason>``: a name too long, a loop of symbolic links, an
            I/O error); not a
            numpy ``.npz`` archive (another file, an empty one, a ``.npy`` array, a PyTorch checkpoint that
            ``torch.save`` wrote, named as such with the way to load its weights) or an archive that cannot be
            read (truncated, damaged, an entry that would need pickle, refused from its header);
            two entries of one name (``the archive holds more than one entry named ...``); not a
            torchlean checkpoint (no ``metadata`` entry, an entry that is not a ``.npy`` array, or
            metadata that is not the JSON object of the format); metadata declaring more than 2**24
            characters; a JSON object of the metadata naming a key twice (``the metadata names the
            key 'model' twice in one JSON object``); an unsupported ``version``; a missing, unknown
            or wrongly typed metadata field; a missing or unexpected entry (``unexpected archive
            entries: junk``: names shown as :func:`torchlean.data.display_name` shows them, a
            long list elided as ``x0, x1, x2, ..., x19999 (20000 in all)``); an entry whose header
            declares another dtype or shape than the metadata describes (weights, statistics, the
            validation history, the optimizer state: each buffer ``first.<i>``, ``second.<i>``,
            ``third.<i>`` of parameter ``i``'s shape and the model's dtype), refused before any data
            is read; non-finite statistics; an optimizer state that ``--resume`` could not load
            (an unknown ``kind``, negative step counts, a learning rate that is not finite and
            >= 0, a ``steps`` or ``param_steps`` entry missing, a parameter with one of its first
            and second buffers only, a third buffer for an optimizer that keeps none); any
            inconsistency :class:`Checkpoint` or :class:`TrainingState` refuses. The training
            settings' values (``--batch-size``, ``--lr``, ``--freeze`` texts) are the command
            line's, read by ``torchlean train --resume``, which refuses those it cannot parse.
    """
    return _load(path, digest=False)[0]


def load_digested(path: str | os.PathLike[str]) -> tuple[Checkpoint, str]:
    """:func:`load`, with the SHA-256 (hex, ``sha256sum``'s) of the bytes read: the file is opened
    once, digested, read and digested again through that one open file, so a file another process
    replaces meanwhile (``torchlean train --save`` and :func:`save` write a new file and rename it
    over the old) changes neither what is read nor its digest (review237 F2: a path digested before
    and after the read could pair one file's contents with a byte-identical other file's digest).
    ``predict --report-json`` and ``inspect`` record it as ``checkpoint_sha256``.

    Raises:
        CheckpointError: what :func:`load` raises; the file was written in place while it was read
            (the two digests differ: ``checkpoint <path> changed while it was read ...``).
    """
    saved, digest = _load(path, digest=True)
    assert digest is not None
    return saved, digest


def _load(path: str | os.PathLike[str], *, digest: bool) -> tuple[Checkpoint, str | None]:
    """:func:`load`, and with ``digest`` :func:`load_digested`'s digest (else None)."""
    _check_path(path)
    file = path if isinstance(path, Path) else Path(path)  # a Path subclass keeps how it prints
    named = path_shown(str(file))  # one line, nothing for the terminal (review103 F4, review210 F3)
    try:  # Path.is_dir() and exists() raise what is not "no such file" (a name too long)
        is_dir, exists, is_file = file.is_dir(), file.exists(), file.is_file()
    except OSError as error:
        raise CheckpointError(f"cannot read checkpoint {named}: {error.strerror or error}") from None
    if is_dir:
        raise CheckpointError(f"checkpoint {named} is a directory, not a file")
    if exists and not is_file:
        raise CheckpointError(
            f"checkpoint {named} is not a regular file (a device or a pipe); give the path of a file "
            "written by torchlean train --save"
        )
    if not is_file:
        failure = lookup_failure(file)  # a loop of symbolic links is there, but reads as absent
        if failure is not None:
            raise CheckpointError(f"cannot read checkpoint {named}: {failure}")
        raise CheckpointError(f"checkpoint file not found: {missing_file_name(str(file))}")
    try:
        handle = file.open("rb")
    except OSError as error:
        raise CheckpointError(f"cannot read checkpoint {named}: {error.strerror}") from None
    with handle:  # one open file for the digest and every read (review237 F2)
        try:
            before = stream_sha256(handle) if digest else None
            head = handle.read(len(_TORCH_LEGACY_MAGIC))
            is_zip = zipfile.is_zipfile(handle)
        except OSError as error:
            raise CheckpointError(f"cannot read checkpoint {named}: {error.strerror}") from None
        saved = _read_open(handle, named, head, is_zip)
        if before is None:
            return saved, None
        try:
            after = stream_sha256(handle)
        except OSError as error:
            raise CheckpointError(f"cannot read checkpoint {named}: {error.strerror}") from None
    if after != before:  # written in place while it was read (a rename over it changes nothing here)
        raise CheckpointError(
            f"checkpoint {named} changed while it was read (written in place by another program), so "
            "what was read and its digest may differ; run the command again once it is written"
        )
    return saved, before


def _read_open(handle: BinaryIO, named: str, head: bytes, is_zip: bool) -> Checkpoint:
    """The checkpoint in the open file ``handle`` (shown as ``named``), whose first bytes are
    ``head`` and which ``zipfile.is_zipfile`` judged by ``is_zip``.

    Raises:
        CheckpointError: as :func:`load`, for what the file holds.
    """
    magic = head[: len(_NPY_MAGIC)]
    if magic == _NPY_MAGIC:
        raise CheckpointError(
            f"{named}: not a torchlean checkpoint: a single .npy array, not an .npz archive"
        )
    if not is_zip and magic.startswith(b"PK\x03\x04"):  # a zip's first entry, but no directory at the end
        raise CheckpointError(
            f"{named}: a truncated or damaged .npz archive (it starts as a zip file but its end is missing: "
            "an interrupted copy or a full disk?)"
        )
    if not is_zip and head.startswith(_TORCH_LEGACY_MAGIC):
        raise CheckpointError(f"{named}: {_torch_refusal('its legacy pickle format, before torch 1.6')}")
    if not is_zip:
        # np.load would read any other file as a pickle and suggest allow_pickle=True
        raise CheckpointError(f"{named}: not a numpy .npz archive (not a zip file)")
    try:
        opened = zipfile.ZipFile(handle)
    except _ARCHIVE_ERRORS as error:
        raise CheckpointError(f"{named}: not a numpy .npz archive ({error})") from None
    with opened as archive:
        pickled = _torch_save_entry(archive)
        if pickled is not None:  # review115 F5: torch.save's format, not numpy's
            raise CheckpointError(f"{named}: {_torch_refusal(f'a zip archive holding {pickled!r}')}")
        try:
            meta, arrays = _read_archive(archive)
        except CheckpointError as error:
            raise CheckpointError(f"{named}: {error}") from None
        except _npz.NotAnArray as error:  # np.load would hand out its raw bytes
            raise CheckpointError(f"{named}: not a torchlean checkpoint: {error}") from None
        except _ARCHIVE_ERRORS as error:
            reason = str(error) or type(error).__name__
            raise CheckpointError(f"{named}: cannot read the .npz archive ({reason})") from None
    try:
        return _from_arrays(meta, arrays)
    except CheckpointError as error:
        raise CheckpointError(f"{named}: {error}") from None


_TORCH_LEGACY_MAGIC = b"\x80\x02\x8a\x0al\xfc\x9cF\xf9 j\xa8P\x19"
"""The first bytes of a file ``torch.save`` wrote in its legacy format (``_use_new_zipfile_serialization=
False``, or torch before 1.6): pickle protocol 2 and torch's magic number 0x1950a86a20f9469cfc6c."""


def _torch_save_entry(archive: zipfile.ZipFile) -> str | None:
    """The ``<name>/data.pkl`` entry that marks a zip archive ``torch.save`` wrote (its pickled
    object, next to ``<name>/data/0``, ... and ``<name>/version``), else ``None``; nothing is read."""
    for info in archive.infolist():
        folder, slash, rest = info.filename.partition("/")
        if folder and slash and rest == "data.pkl":
            return info.filename
    return None


def _torch_refusal(what: str) -> str:
    """Why a PyTorch checkpoint (``what`` tells its format) is not read, and how to load its
    weights into a torchlean model."""
    return (
        f"a PyTorch checkpoint written by torch.save ({what}), which torchlean does not read (it unpickles "
        "nothing): a torchlean checkpoint is written by torchlean train --save or checkpoint.save; to use a "
        "torch state_dict's weights, read it with torch (state = torch.load(PATH, weights_only=True)) and "
        "load it into a torchlean model with model.load_state(state) (strict=False to load a part)"
    )


def _read_archive(archive: zipfile.ZipFile) -> tuple[dict[str, Any], dict[str, Array]]:
    """The metadata and the arrays of a checkpoint archive, read in an order that reads no entry's
    data before it is known to be one the metadata describes, of the shape and dtype it
    describes (a zip entry of a few kilobytes may inflate to gigabytes): the entry names; the
    metadata (its size bounded); the names against the metadata; each entry's ``.npy`` header
    against the model, the statistics and the training state the metadata describes; then the
    data.

    Raises:
        CheckpointError: what :func:`load` names (without the path).
        torchlean._npz.NotAnArray: a member that is not a ``.npy`` array.
        ValueError, OSError, ...: an archive entry that cannot be read (:data:`_ARCHIVE_ERRORS`).
    """
    repeated = _npz.repeated_names(archive)
    if repeated:  # review67 F13: zip readers differ on which copy they read
        raise CheckpointError(
            f"the archive holds more than one entry named {_listed(repeated)} (a zip tool reading the "
            "first copy and torchlean, the last, would see different checkpoints)"
        )
    members = _npz.members(archive)
    stray = members.get(_STRAY_ENTRY)
    if stray is not None:
        entry = _npz.header(archive, _STRAY_ENTRY, stray)
        if entry.shape == () and entry.dtype == np.bool_:
            del members[_STRAY_ENTRY]  # save's allow_pickle=False, stored by numpy < 2.1 (review60 F2)
    info = members.pop("metadata", None)
    if info is None:
        raise CheckpointError(
            f"not a torchlean checkpoint: no metadata entry (entries: {_listed(list(members)) or 'none'})"
        )
    meta = _metadata(archive, _npz.header(archive, "metadata", info))
    _check_entry_names(meta, list(members))
    entries = {name: _npz.header(archive, name, member) for name, member in members.items()}
    _check_declared(meta, entries)
    _check_fits_in_memory(entries)
    return meta, {name: _npz.read(archive, entry) for name, entry in entries.items()}


def _check_fits_in_memory(entries: Mapping[str, _npz.Entry]) -> None:
    """Refuse a checkpoint whose arrays, as their headers declare them (checked against the
    metadata), hold more bytes than this process may use (:func:`torchlean._memory.usable_memory`: the
    machine's memory, or a container's limit): a model described consistently huge,
    whose compressed entries (a checkpoint re-zipped with deflate loads too) would inflate past
    the memory and get the process killed instead of refused (stop34's archive gap).

    Raises:
        CheckpointError: ``its arrays declare 86000000000 bytes (80.1 GiB), more than the
            memory this process may use (15.6 GiB): ...``.
    """
    memory = usable_memory()
    declared = sum(entry.dtype.itemsize * math.prod(entry.shape) for entry in entries.values())
    if memory is not None and declared > memory:
        raise CheckpointError(
            f"its arrays declare {declared} bytes ({declared / 2**30:.1f} GiB), more than the memory "
            f"this process may use ({memory / 2**30:.1f} GiB): a checkpoint of that size cannot be "
            "loaded here"
        )


class _RepeatedKey(Exception):
    """A JSON object of the metadata names ``key`` twice (:func:`_unique_keys`)."""

    def __init__(self, key: str) -> None:
        super().__init__(key)
        self.key = key


def _unique_keys(pairs: list[tuple[str, Any]]) -> dict[str, Any]:
    """``json.loads``'s ``object_pairs_hook``: the object, refusing a key it names twice (which
    ``json`` would read as the last value, and another reader as the first)."""
    found: dict[str, Any] = {}
    for key, value in pairs:
        if key in found:
            raise _RepeatedKey(key)
        found[key] = value
    return found


def _metadata(archive: zipfile.ZipFile, entry: _npz.Entry) -> dict[str, Any]:
    """The metadata object of the ``metadata`` entry (its header checked first: a 0-d text array
    of at most :data:`_METADATA_CHARS` characters), with a supported ``version`` and known fields.

    Raises:
        CheckpointError: naming what is wrong.
    """
    if entry.shape != () or entry.dtype.kind != "U":
        raise CheckpointError("not a torchlean checkpoint: the metadata entry is not a text entry")
    chars = entry.dtype.itemsize // 4
    if chars > _METADATA_CHARS:
        raise CheckpointError(
            f"the metadata entry declares {chars} characters, more than a checkpoint's metadata may hold "
            f"({_METADATA_CHARS})"
        )
    stored = _npz.read(archive, entry)
    units = np.frombuffer(stored.tobytes(), dtype=np.dtype(np.uint32).newbyteorder(stored.dtype.byteorder))
    beyond = np.flatnonzero(units > _LAST_CODE_POINT)
    if beyond.size:  # numpy makes such UTF-32 units a str CPython deems invalid (review158 F2)
        raise CheckpointError(
            f"not a torchlean checkpoint: the metadata's character {int(beyond[0])} is code unit "
            f"{int(units[beyond[0]]):#x}, beyond Unicode's last code point U+10FFFF"
        )
    text = str(stored[()])
    try:
        meta = json.loads(text, object_pairs_hook=_unique_keys)
    except _RepeatedKey as error:  # review67 F13
        raise CheckpointError(
            f"the metadata names the key {error.key!r} twice in one JSON object (readers differ on which "
            "value they take: each key once)"
        ) from None
    except (ValueError, RecursionError) as error:  # JSONDecodeError, an int beyond Python's digit limit
        reason = str(error)
        if not isinstance(error, json.JSONDecodeError) and "int_max_str_digits" in reason:  # review69 F5
            reason = f"a number of more than {sys.get_int_max_str_digits()} digits, which no field holds"
        raise CheckpointError(f"not a torchlean checkpoint: the metadata is not JSON ({reason})") from None
    if not isinstance(meta, dict) or meta.get("format") != _FORMAT:
        raise CheckpointError(f"not a torchlean checkpoint: the metadata has no \"format\": \"{_FORMAT}\"")
    version = _check_version(meta.get("version"))
    known = _METADATA_FIELDS[version]
    unknown = [name for name in meta if name not in known]
    if unknown:  # as an unexpected archive entry: a misspelt hand edit must not pass silently
        shown, count = ", ".join(map(repr, unknown)), ""
        if len(unknown) > LISTED:  # elided as _literals elides (a hostile file may name thousands)
            shown = f"{', '.join(map(repr, unknown[:3]))}, ..., {unknown[-1]!r}"
            count = f"{len(unknown)} in all; "
        raise CheckpointError(
            f"unexpected metadata fields: {shown} ({count}version {version} writes: {', '.join(known)})"
        )
    return meta


def _field(meta: Mapping[str, Any], name: str, kind: type) -> Any:
    """Metadata field ``name``, a JSON value of ``kind`` (bools are not ints).

    Raises:
        CheckpointError: the field is missing or of another type.
    """
    if name not in meta:
        raise CheckpointError(f"metadata field {name!r} is missing")
    value = meta[name]
    if not isinstance(value, kind) or isinstance(value, bool):
        raise CheckpointError(f"metadata field {name!r} must be of type {kind.__name__}, got {value!r}")
    return value


def _check_entry_names(meta: dict[str, Any], names: list[str]) -> None:
    """Check the archive's entry ``names`` (but ``metadata``) against those ``meta`` calls for,
    reading no entry: ``feature_mean``, ``feature_scale``, ``target_statistics`` for regression,
    ``weights/...``; with a training state, ``optimizer/...``, the validation history its flag
    announces and ``last_weights/...`` with the other flag.

    Raises:
        CheckpointError: a missing entry (the first), entries the metadata does not call for (all
            of them, a long list elided), a ``task`` or ``training`` field :func:`_from_arrays`
            refuses.
    """
    required = ["feature_mean", "feature_scale"]
    if _field(meta, "task", str) == "regression":
        required.insert(0, "target_statistics")
    prefixes = [_WEIGHTS]
    training: dict[str, Any] = {}
    if "training" in meta:
        training = _check_training_meta(meta["training"])
        prefixes.append(_OPTIMIZER)
        if training["last_weights"]:
            prefixes.append(_LAST_WEIGHTS)
    for name in required:
        if name not in names:
            raise CheckpointError(f"the archive has no {name} entry")
    if training and training["validation"]:
        for name in (_VAL_LOSSES, _VAL_METRICS):
            if name not in names:
                raise CheckpointError(
                    f"the training state has a validation history, but the archive has no {name} entry"
                )
        required += [_VAL_LOSSES, _VAL_METRICS]
    unexpected = [name for name in names if name not in required and not name.startswith(tuple(prefixes))]
    if unexpected:
        raise CheckpointError(f"unexpected archive entries: {_listed(unexpected)}")


def _check_declared(meta: dict[str, Any], entries: Mapping[str, _npz.Entry]) -> None:
    """Check the ``.npy`` header (dtype, shape) of each entry against what ``meta`` (checked by
    :func:`_check_entry_names`) describes, before any entry's data is read, with the messages of
    the checks on the arrays (:class:`Checkpoint`, :class:`TrainingState`): ``target_statistics``
    float64 ``[2]``, the statistics float64 ``[features]``, the weights (and last weights) the
    model's parameters, the validation history float ``[epochs_done]``, the optimizer state's
    entries of their form and of the model's parameters.

    Raises:
        CheckpointError: the first entry whose header does not fit, or a model field the model
            cannot be built from.
    """
    if meta["task"] == "regression":
        statistics = entries["target_statistics"]
        if statistics.dtype != np.float64 or statistics.shape != (2,):
            raise CheckpointError(
                f"target_statistics must be float64 [mean, scale], got {_declared(statistics)}"
            )
    version = meta["version"]
    fields = [_field(meta, name, kind) for name, kind in (
        ("model", str), ("hidden", int), ("features", int), ("outputs", int), ("dtype", str))]
    model, hidden, features, outputs, dtype = fields
    dropout = _check_model_fields(model, hidden, features, outputs,
                                  0.0 if version == 1 else _dropout_field(meta), version)
    _check_dtype(dtype)
    described = _built_model(model, hidden, features, outputs, dropout, dtype)
    for name in ("feature_mean", "feature_scale"):
        if entries[name].dtype != np.float64 or entries[name].shape != (features,):
            raise CheckpointError(
                f"{name} must be a float64 array of shape [{features}], got {_declared(entries[name])}"
            )
    _fit_weights(_prefixed(entries, _WEIGHTS), described, "weight")
    training = meta.get("training")
    if training is None:
        return
    _check_epochs(training["epochs_done"], training["epochs"], training["random_counter"])
    if training["validation"]:
        for name, shown in ((_VAL_LOSSES, "val_losses"), (_VAL_METRICS, "val_metrics")):
            history, done = entries[name], training["epochs_done"]
            if len(history.shape) != 1 or history.dtype.kind != "f":
                if math.prod(history.shape) == done:  # small: TrainingState names its values
                    continue
                raise CheckpointError(
                    f"training {shown} must be a 1-d float array, got {_declared(history)}"
                )
            if history.shape[0] != done:
                raise CheckpointError(
                    f"training {shown} must hold one value per epoch done ({done}), got {history.shape[0]}"
                )
    if training["last_weights"]:
        _fit_weights(_prefixed(entries, _LAST_WEIGHTS), described, "last_weights entry")
    optimizer = _prefixed(entries, _OPTIMIZER)
    _optimizer_form(optimizer)
    _optimizer_fit(optimizer, described)


def _prefixed(entries: Mapping[str, _npz.Entry], prefix: str) -> dict[str, _npz.Entry]:
    """The entries named ``prefix...``, named without it."""
    return {name[len(prefix) :]: entry for name, entry in entries.items() if name.startswith(prefix)}


def _from_arrays(meta: dict[str, Any], arrays: dict[str, Array]) -> Checkpoint:
    """The checkpoint held by an archive's metadata ``meta`` (:func:`_metadata`) and ``arrays``
    (every other entry); see :func:`load`."""

    version: int = meta["version"]

    def field(name: str, kind: type) -> Any:
        return _field(meta, name, kind)

    def array(name: str) -> Array:
        found = arrays.pop(name, None)
        if found is None:
            raise CheckpointError(f"the archive has no {name} entry")
        return found

    task = field("task", str)
    target: list[float | None] = [None, None]
    if task == "regression":
        statistics = array("target_statistics")
        if statistics.dtype != np.float64 or statistics.shape != (2,):
            raise CheckpointError(
                f"target_statistics must be float64 [mean, scale], got dtype {statistics.dtype}, "
                f"shape {list(statistics.shape)}"
            )
        target = [float(v) for v in statistics]
    feature_mean = array("feature_mean")
    feature_scale = array("feature_scale")
    weights = {name[len(_WEIGHTS) :]: arrays.pop(name) for name in list(arrays) if name.startswith(_WEIGHTS)}
    training = None
    if "training" in meta:
        optimizer = {
            name[len(_OPTIMIZER) :]: arrays.pop(name) for name in list(arrays) if name.startswith(_OPTIMIZER)
        }
        training = _training(meta["training"], optimizer, arrays)
    if arrays:
        raise CheckpointError(f"unexpected archive entries: {_listed(list(arrays))}")
    return Checkpoint(
        model=field("model", str),
        hidden=field("hidden", int),
        features=field("features", int),
        outputs=field("outputs", int),
        dtype=field("dtype", str),
        task=task,
        feature_mean=feature_mean,
        feature_scale=feature_scale,
        target_mean=target[0],
        target_scale=target[1],
        classes=tuple(field("classes", list)),
        dataset=field("dataset", str),
        label_column=field("label_column", str),
        feature_names=tuple(field("feature_names", list)),
        profile=field("profile", str),
        execution=field("execution", str),
        seed=field("seed", int),
        weights=weights,
        training=training,
        version=version,
        dropout=0.0 if version == 1 else _dropout_field(meta),
        test_fraction=_test_fraction_field(meta),
        split_seed=_optional_field(meta, "split_seed", int),
        torch_threads=_optional_field(meta, "torch_threads", int),
        torch_threads_segments=_optional_field(meta, "torch_threads_segments", list),
        environment=_optional_field(meta, "environment", dict),
        data_sha256=_optional_field(meta, "data_sha256", str),
        capsules=_optional_field(meta, "capsules", list),
        capsules_order=_optional_field(meta, "capsules_order", str),
        earlier_capsules=_optional_field(meta, "earlier_capsules", list),
    )


def _training(meta: object, optimizer: dict[str, Array], arrays: dict[str, Array]) -> TrainingState:
    """The training state of a version 2 archive: its ``training`` metadata object, its
    ``optimizer/`` entries (named without the prefix) and the ``validation/`` and
    ``last_weights/`` entries its flags announce (taken out of ``arrays``)."""
    meta = _check_training_meta(meta)
    losses = metrics = last = None
    if meta["validation"]:
        for name in (_VAL_LOSSES, _VAL_METRICS):
            if name not in arrays:
                raise CheckpointError(
                    f"the training state has a validation history, but the archive has no {name} entry"
                )
        # as lists of Python numbers: a float array gives floats, which TrainingState takes; another gives
        # ints, bools or nested lists, which it refuses
        losses, metrics = arrays.pop(_VAL_LOSSES).tolist(), arrays.pop(_VAL_METRICS).tolist()
    if meta["last_weights"]:
        names = [name for name in arrays if name.startswith(_LAST_WEIGHTS)]
        last = {name[len(_LAST_WEIGHTS) :]: arrays.pop(name) for name in names}
    return TrainingState(
        epochs_done=meta["epochs_done"], epochs=meta["epochs"], optimizer=optimizer,
        settings=meta["settings"], val_losses=losses, val_metrics=metrics, last_weights=last,
        random_counter=meta["random_counter"],
    )


def _check_training_meta(meta: object) -> dict[str, Any]:
    """Check the ``training`` metadata object's fields and their types (the counts' ranges are
    :class:`TrainingState`'s).

    Raises:
        CheckpointError: not an object with exactly the fields of :data:`_TRAINING_FIELDS`; a
            count that is not an int, a flag that is not a bool.
    """
    fields = _TRAINING_FIELDS
    if not isinstance(meta, dict) or sorted(meta) != sorted(fields):
        # review229 F3: an object's keys read as its value (``got []`` for ``{}``)
        if not isinstance(meta, dict):
            shown = json.dumps(meta)  # as the metadata spells it (review232 F7: null, not None)
        elif meta:
            shown = f"an object with the fields {_literals(sorted(meta))}"
        else:
            shown = "an object with no fields"
        raise CheckpointError(
            f"metadata field 'training' must be an object with the fields {', '.join(fields)}, "
            f"got {shown}"
        )
    for name in ("epochs_done", "epochs", "random_counter"):
        if not is_builtin_int(meta[name]):
            raise CheckpointError(f"training {name} must be an int, got {meta[name]!r}")
    for name in _TRAINING_FLAGS:
        if not isinstance(meta[name], bool):
            raise CheckpointError(f"training {name} must be true or false, got {meta[name]!r}")
    return meta


def _known(names: tuple[str, ...]) -> Callable[[str], str | None]:
    """A setting's parser for an option whose values are ``names``: the setting, or None."""
    return lambda setting: setting if setting in names else None


def _positive_int(setting: str) -> int | None:
    """A ``--hidden`` setting's value (a decimal int >= 1), or None."""
    return int(setting) if DECIMAL_INTEGER.fullmatch(setting) and int(setting) >= 1 else None


def _seed(setting: str) -> int | None:
    """A ``--seed`` setting's value (a decimal int >= 0), or None."""
    return int(setting) if DECIMAL_INTEGER.fullmatch(setting) and int(setting) >= 0 else None


def _fraction(setting: str) -> float | None:
    """A ``--test-fraction`` setting's value (a float in ``(0, 1)``), or None."""
    try:
        value = float(setting)
    except ValueError:
        return None
    return value if 0.0 < value < 1.0 else None


def _dropout(setting: str) -> float | None:
    """A ``--dropout`` setting's value (:func:`~torchlean.models.checked_dropout`), or None."""
    try:
        return checked_dropout(float(setting))
    except (ValueError, ShapeError):
        return None


def _optional_field(meta: dict[str, Any], name: str, kind: type) -> Any:
    """An optional metadata field (``split_seed``, ``torch_threads``, ``environment``,
    ``data_sha256``, ``capsules``, ``capsules_order``): ``None``
    when absent or ``null``, else a JSON value of ``kind`` (checked further by :class:`Checkpoint`).

    Raises:
        CheckpointError: a value of another type (bools are not ints).
    """
    value = meta.get(name)
    if value is not None and (not isinstance(value, kind) or isinstance(value, bool)):
        raise CheckpointError(
            f"metadata field {name!r} must be of type {kind.__name__} or null, got {value!r}"
        )
    return value


def _environment(value: object) -> Mapping[str, Any]:
    """``value`` (a checkpoint's ``environment``) as a read-only mapping in the order of
    :data:`ENVIRONMENT_KEYS`, lists as tuples.

    A block that lacks only keys of :data:`~torchlean.provenance.LATER_KEYS` (written by an
    earlier torchlean) reads each of them as ``None``.

    Raises:
        CheckpointError: not a mapping with string keys; keys other than
            :data:`ENVIRONMENT_KEYS`; a value :func:`torchlean.provenance.environment_fault` finds
            fault with, naming it.
    """
    if not isinstance(value, Mapping):
        raise CheckpointError(
            f"environment must be a mapping (provenance.environment()), got {type(value).__name__}"
        )
    block: dict[str, Any] = {}
    for key, item in value.items():
        if not isinstance(key, str):
            raise CheckpointError(f"environment names must be strings, got {key!r}")
        block[key] = tuple(item) if isinstance(item, list | tuple) else item
    missing = [key for key in ENVIRONMENT_KEYS if key not in block]
    if set(missing) <= set(LATER_KEYS):  # an earlier torchlean's block: those are unknown
        block.update(dict.fromkeys(missing))
        missing = []
    unexpected = [key for key in block if key not in ENVIRONMENT_KEYS]
    if missing or unexpected:  # review64 F4: a hand edit must not pass silently
        faults = "; ".join(f"{what} {', '.join(map(repr, keys))}" for what, keys in (
            ("missing", missing), ("unexpected", unexpected)) if keys)
        newer = (" (a newer torchlean's block, or an edited one: read a newer torchlean's checkpoint with "
                 "that version)" if unexpected and not missing else "")  # review113 F12
        raise CheckpointError(
            f"environment must have the keys of provenance.environment() ({', '.join(ENVIRONMENT_KEYS)}): "
            f"{faults}{newer}"
        )
    fault = environment_fault(block)
    if fault is not None:  # review65 F5, F6: each value of the type provenance.environment() writes
        raise CheckpointError(f"environment: {fault}")
    return MappingProxyType({key: block[key] for key in ENVIRONMENT_KEYS})


def _dropout_field(meta: dict[str, Any]) -> float:
    """A version 2 archive's ``dropout`` metadata field: a JSON number (``0.2``; an integral one,
    ``0``, a hand edit, is taken), checked by :class:`Checkpoint`.

    Raises:
        CheckpointError: the field is missing or not a number.
    """
    if "dropout" not in meta:
        raise CheckpointError("metadata field 'dropout' is missing")
    value = meta["dropout"]
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise CheckpointError(f"metadata field 'dropout' must be a number, got {value!r}")
    return value


def _test_fraction_field(meta: dict[str, Any]) -> float:
    """A version 2 archive's ``test_fraction`` metadata field: a JSON number, checked by
    :class:`Checkpoint`; :data:`torchlean.data.TEST_FRACTION` when absent (version 1, and version
    2 files written before ``torchlean train --test-fraction``, whose split used that fraction).

    Raises:
        CheckpointError: the field is not a JSON number.
    """
    value = meta.get("test_fraction", TEST_FRACTION)
    if not isinstance(value, int | float) or isinstance(value, bool):
        raise CheckpointError(f"metadata field 'test_fraction' must be a number, got {value!r}")
    return value  # an int (a hand edit) is refused by Checkpoint, naming it
