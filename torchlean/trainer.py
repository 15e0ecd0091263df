"""``Trainer[In, Out]``: train a model with eager or typed-graph execution (anchor-runtime.md §3).

The trainer is generic over phantom input/output shapes (``Trainer[Shape[4], Shape[1]]``), those of
one sample, without the batch axis (data is ``(n, *input_shape)``); the execution mode is an
ordinary :class:`RunConfig` field and never changes the type. A trainer
opens one eager session over its backend profile; device/profile resolution and its messages
follow the original (anchor-backend.md §7). Minibatches are real vectorised batches.

* ``ExecutionMode.EAGER``: the model's forward program runs op by op through the session
  (plan → accept → bind → run → tape node); the tape gives the gradients.
* ``ExecutionMode.TYPED_GRAPH``: the model and its loss are lowered once per batch shape to the
  canonical IR, planned and accepted by ``profile.accept_graph``, and every step executes the
  accepted kernels in graph order (:class:`~torchlean.autograd.typed_graph.GraphProgram`); the
  backward pass is the tape over the same nodes, in the schedule's reverse order. Same seed, same
  data: bit-identical to eager. A training dropout's mask is an input of the graph, drawn each
  step by the session's ``bernoulli_mask`` capsule in the order eager execution draws it (so the
  same session counters give the same masks); a training batch norm is a ``batch_norm_train``
  node, and its running statistics are updated after the step by the eager update
  (``EagerOps.update_running_statistics``) on the graph's value of the batch norm's input. In
  evaluation the ``batch_norm_eval`` node reads the running statistics' current values each run.

Buffers (parameters whose ``ParamSpec.trainable`` is false: batch norm's running statistics) are
wrapped as tensors that require no gradient; the optimizer skips them, and after its update
each takes the value the eager forward program computed for it (``EagerOps.buffer_updates``).

Devices: parameters and optimizer state stay numpy arrays on the host; each step wraps the
parameters as leaf tensors (views of the arrays on the host — the optimizer returns new arrays, so
nothing writes through them — and copies on the profile's device, ``cuda`` under
``checked_cuda``), and brings the gradients and loss back to the host.
"""

from __future__ import annotations

import contextlib
import itertools
import math
import numbers
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any, Generic, Never, NoReturn

import numpy as np
import numpy.typing as npt
from typing_extensions import TypeVar

from torchlean import functional as F
from torchlean._checks import (
    checked_int,
    dtype_shown,
    float_dtype,
    id_outside,
    shown,
    shown_briefly,
    shown_safely,
)
from torchlean._exclusive import Exclusive, one_at_a_time
from torchlean._interrupts import store_together
from torchlean._tensor_data import host_array
from torchlean.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad
from torchlean.autograd.session import Session, gradient_acceptance_of
from torchlean.autograd.typed_graph import GraphProgram
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedGraphKernelPlan, AcceptedKernel, acceptance_failures
from torchlean.backend.errors import PlanningError, SessionError, TorchLeanError, UnknownLabelError
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.vocabulary import BackendOp, Device, LabelledEnum, Provider, VJPMode
from torchlean.batches import BatchError, minibatches
from torchlean.ir.graph import Graph
from torchlean.nn.eager import RUNNING_STATISTICS_OPS, EagerOps
from torchlean.nn.layers import Layer, ShapeError, is_bool
from torchlean.nn.lowering import DropoutMask, EmbeddingIndex, GraphOps, RunningUpdate
from torchlean.nn.model import SEED_RANGE, InputShape, Model, StateError, build, is_seed, not_a_layer
from torchlean.nn.ops import Ops, T
from torchlean.optim import (
    OPTIMIZERS,
    SGD,
    Optimizer,
    OptimizerConfig,
    OptimizerError,
    ParamGroup,
    clip_grad_norm,
    clip_grad_value,
    names_shown,
)
from torchlean.optim._groups import freezing
from torchlean.tensor import BoolLike, RealLike, Tensor
from torchlean.validation import EarlyStopping, History, ValLossMonitor, cross_entropy_terms, squared_errors

__all__ = [
    "RECORD_ORDERS",
    "ExecutionMode",
    "NonFiniteStepError",
    "Objective",
    "RunConfig",
    "Trainer",
    "TrainerError",
    "TrainerLabelError",
    "maintained_profile",
    "session_seed",
]

# Unparameterised ``Trainer(...)`` means ``Trainer[Any, Any]`` (PEP 696 defaults), so an
# unannotated ``trainer = Trainer(layer)`` type-checks under --strict.
In = TypeVar("In", default=Any)
Out = TypeVar("Out", default=Any)
Array = npt.NDArray[np.floating]
Inputs = npt.NDArray[Any]
"""Model inputs as the trainer holds them: real values in the model dtype, or int64 ids for a
model that takes ids (:meth:`~torchlean.nn.layers.Layer.index_count`)."""
_EVALUATION_CHUNK = 256
"""Rows of logits :meth:`Trainer.evaluate` holds at a time for cross-entropy (predict's batch)."""
_WATCHED = {"val_loss": "the validation loss", "val_accuracy": "the validation accuracy (val_accuracy)",
            "val_mse": "the validation MSE (val_mse)"}
"""Early stopping's monitored quantities as the refusal of ``fit`` without ``validation`` names them."""
Targets = npt.NDArray[Any]
"""Targets as the trainer holds them: values in the model dtype (MSE targets, one-hot or
probability rows), or int64 class labels ``(n, ...)`` for cross-entropy, made one-hot per
minibatch (:func:`_loss_operand`), so a large vocabulary costs one minibatch of one-hot rows."""


class TrainerError(TorchLeanError, ValueError):
    """Bad trainer configuration or data (the message names the value and what is accepted)."""


class NonFiniteStepError(TrainerError):
    """``fit(stop_on_non_finite=True)`` met a step whose loss, new weights or new optimizer moments
    are not finite; its update was not stored (the message names the epoch, the minibatch and the
    step; a note says when early stopping restored its best weights). Its attributes say the same
    for a caller that words its own message (``torchlean train --stop-on-non-finite``): ``epoch``
    and ``minibatch`` (from 0), ``step`` (from 1, over the trainer's lifetime), ``loss``, and
    ``values`` and ``state_values``, the model's and the optimizer's values the update would have
    made not finite, of the model's ``total``."""

    epoch: int
    minibatch: int
    step: int
    loss: float
    values: int
    state_values: int
    total: int


class TrainerLabelError(TrainerError, UnknownLabelError):
    """An unknown execution-mode, device, objective or profile label given to the trainer or its
    :class:`RunConfig`; both a :class:`TrainerError` and an :class:`UnknownLabelError`, with the
    vocabulary's message (``unknown execution mode graph (known: eager | typed-graph)``)."""


E = TypeVar("E", bound=LabelledEnum)


def _member(enum: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``enum``: a member, or its label parsed by ``enum.parse``.

    Raises:
        TrainerLabelError: an unknown label (the vocabulary's message).
        TrainerError: neither a member nor a string (``<what> must be one of the labels a | b or
            a member of <Enum>, got <value!r>``).
    """
    if isinstance(value, enum):
        return value
    if isinstance(value, str):
        try:
            return enum.parse(value)
        except UnknownLabelError as error:
            raise TrainerLabelError(str(error)) from None
    raise TrainerError(
        f"{what} must be one of the labels {' | '.join(enum.labels())} or a member of {enum.__name__}, "
        f"got {value!r}"
    )


def _profile(value: object) -> str | BackendProfile | None:
    """A profile override: ``None``, a built-in profile name (checked now), or a profile.

    Raises:
        TrainerLabelError: an unknown profile name (``unknown profile P (known: ...)``).
        TrainerError: any other value.
    """
    if value is None or isinstance(value, BackendProfile):
        return value
    if isinstance(value, str):
        try:
            profiles.get(value)
        except UnknownLabelError as error:
            raise TrainerLabelError(str(error)) from None
        return value
    raise TrainerError(
        f"profile must be a profile name ({' | '.join(profiles.names())}), a BackendProfile or None, "
        f"got {value!r}"
    )


class ExecutionMode(LabelledEnum):
    """How the trainer runs the model: eagerly, or from an accepted typed graph."""

    EAGER = "eager"
    TYPED_GRAPH = "typed-graph"

    @classmethod
    def kind(cls) -> str:
        """``"execution mode"``: the vocabulary's name in error messages."""
        return "execution mode"


RECORD_ORDERS: dict[ExecutionMode, str] = {
    ExecutionMode.EAGER: "first-use",
    ExecutionMode.TYPED_GRAPH: "graph-plan",
}
"""The order of :attr:`Trainer.selected` per execution mode, as records name it (``torchlean train
--report-json``'s and ``predict``'s ``capsules_order``, a checkpoint's
:attr:`~torchlean.checkpoint.Checkpoint.capsules_order`): ``first-use`` (eager: the session's
selections, each when its op first ran), ``graph-plan`` (typed graph: the graph plans' kernels in
node order, then those run outside the graph)."""


class Objective(LabelledEnum):
    """Training loss: mean squared error, or mean cross-entropy over class logits.

    The minibatch loss is ``torch.nn.functional.mse_loss`` / ``cross_entropy`` with the default
    ``reduction="mean"`` (MSE: over every output element; cross-entropy: log-softmax over the last
    axis, the classes, and the mean over every prediction: the rows of ``(classes,)`` outputs, or
    every position of ``(..., classes)`` outputs such as a language model's ``(tokens, vocab)``,
    as torch's ``cross_entropy(logits.reshape(-1, classes), labels.reshape(-1))``), in the model
    dtype. The cross-entropy is ``sum(log_softmax(z) * (-onehot/n))`` over every class
    (:func:`_loss`), so a ``-inf`` logit of a class that is not the target gives ``0 * -inf = NaN``
    and a NaN loss where torch's class-index loss, which reads the target's log-probability only,
    is finite; the gradients are torch's (review130 F1; ``tl.cross_entropy`` gathers the target).
    """

    MSE = "mse"
    CROSS_ENTROPY = "cross-entropy"

    @classmethod
    def kind(cls) -> str:
        """``"objective"``: the vocabulary's name in error messages."""
        return "objective"


def maintained_profile(device: Device) -> BackendProfile:
    """The maintained profile for ``device`` (cpu → checked_cpu, cuda → checked_cuda); ``device`` is
    a :class:`Device` member (labels are parsed by :class:`RunConfig`, not here).

    Raises:
        TrainerError: ``device `metal` has no maintained runtime profile; provide a backend
            profile with executable capsules`` (anchor-backend.md §3.1 and the runtime ``Config`` of
            anchor-runtime.md §1.7; the original's trainer ``RunConfig.withDevice`` ends "provide an
            explicit backend profile" instead: torchlean has one ``RunConfig`` and keeps the
            runtime ``Config`` wording).
    """
    found = profiles.maintained_for_device(device)
    if found is None:
        raise TrainerError(
            f"device `{device.label}` has no maintained runtime profile; provide a backend profile "
            "with executable capsules"
        )
    return found


def _param_groups(value: object) -> tuple[ParamGroup, ...]:
    """``RunConfig.param_groups`` checked: a sequence of :func:`torchlean.optim.group` records.

    Raises:
        TrainerError: ``param_groups must be a sequence of optim.group(...) records, got ...``.
    """
    single = isinstance(value, ParamGroup | str | bytes | Mapping) or getattr(value, "shape", 0) == ()
    refusal = f"param_groups must be a sequence of optim.group(...) records, got {_value_shown(value)}"
    if single or not isinstance(value, Iterable):  # a 0-d array too: iterating it raises
        raise TrainerError(refusal)
    # at most one entry past the groups a model could use: a huge sequence is not listed (review241 F3)
    listed = list(itertools.islice(value, _MOST_GROUPS + 1))
    if len(listed) > _MOST_GROUPS or not all(isinstance(entry, ParamGroup) for entry in listed):
        raise TrainerError(refusal)
    return tuple(listed)


_MOST_GROUPS = 2**16
"""The most parameter groups a RunConfig takes (each group selects parameters; far more than any
model has)."""


def _grad_limit(value: object, name: str) -> float | None:
    """``RunConfig.max_grad_norm`` or ``max_grad_value`` (``name``) checked: ``None`` or a real
    number >= 0 (``inf`` allowed).

    Raises:
        TrainerError: ``max_grad_norm must be None or a real number >= 0 (inf allowed), got -1.0``.
    """
    if value is None:
        return None
    number = _float_or_none(value)
    if number is not None and number >= 0.0:
        return number
    raise TrainerError(f"{name} must be None or a real number >= 0 (inf allowed), got {_value_shown(value)}")


def _float_or_none(value: object) -> float | None:
    """``value`` as a float (``-0.0`` as ``0.0``) when it is a real number a float can hold (bools
    and ``10**400`` are not), else ``None``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        return None
    with contextlib.suppress(OverflowError):
        return float(value) + 0.0
    return None


def _pair_shown(values: Sequence[object]) -> str:
    """A refused ``validation`` sequence as its message shows it: its type and length."""
    return f"a {type(values).__name__} of {len(values)} item{'' if len(values) == 1 else 's'}"


def _value_shown(value: object) -> str:
    """A refused setting as its message shows it (a huge integer by its digit count)."""
    return shown(value) if isinstance(value, numbers.Real) else repr(value)


@dataclass(frozen=True, slots=True, init=False)
class RunConfig:
    """Runtime settings (anchor-runtime.md §3.1 ``RunConfig``).

    ``profile`` overrides the maintained profile of ``device``; it must target the same device.
    Building a config never opens a device: a typed-graph CUDA config is accepted here and
    refused when the trainer opens its session.

    Every field is checked when the config is built, each on its own; that ``profile`` targets
    ``device`` is checked when a trainer opens its session (:meth:`resolve_profile`: a
    ``RunConfig(profile="checked_cuda")``, whose device is ``cpu``, builds, and its first ``fit``
    is refused; review160 F9). ``execution`` and ``device`` take a member or
    its label (``"typed-graph"``, ``"cuda"``), stored as the member; ``profile`` takes ``None``, a
    built-in profile name or a :class:`BackendProfile`; ``show_backend`` is a ``bool`` or a
    ``numpy.bool_`` (stored as a ``bool``); ``dtype`` is anything ``np.dtype`` resolves to float32
    or float64 (``"float32"``, ``np.float64``, ``np.dtype("float64")``, ``"f8"``) or a torch
    dtype of those two, stored as the string ``"float32"`` or ``"float64"``. ``max_grad_norm``
    (``None``, the default, or a real number >= 0, ``inf`` included, stored as a float) clips
    each step's gradients to that total 2-norm before the optimizer update, as
    ``torch.nn.utils.clip_grad_norm_(model.parameters(), max_norm)`` between ``backward()`` and
    ``optimizer.step()`` (:func:`torchlean.optim.clip_grad_norm`; not part of the original's
    config). ``max_grad_value`` (``None``, the default, or a real number >= 0, ``inf`` included,
    stored as a float) clamps each gradient entry to ``[-max_grad_value, max_grad_value]``, as
    ``torch.nn.utils.clip_grad_value_(model.parameters(), clip_value)``
    (:func:`torchlean.optim.clip_grad_value`). Given both, value clipping comes first: the step is
    torch's ``clip_grad_value_(params, v)`` then ``clip_grad_norm_(params, n)``, so the norm is
    that of the clamped gradients (:attr:`Trainer.grad_norm` reports it) and the update's
    gradients keep both bounds (a torch loop calling them the other way round clamps the scaled
    gradients, which can differ; Keras refuses ``clipvalue`` with ``clipnorm``).
    ``param_groups`` (a sequence of :func:`torchlean.optim.group` records, stored as a tuple)
    give the parameters they select by name (``model.names``) other hyper-parameters of
    ``optimizer``, as torch's parameter groups (``RunConfig(optim.adamw(3e-4, weight_decay=0.1),
    param_groups=[optim.group("bias", weight_decay=0.0)])``); the trainer checks them against its
    model when it is built. A frozen group (``optim.group(r"^0\\.", frozen=True)``) freezes the
    parameters it selects, as torch's ``p.requires_grad_(False)``: no gradient is computed for
    them, they take no update, weight decay or optimizer state, and their gradients, having none,
    are out of ``max_grad_norm``'s norm (the ``lr_scale=0.0`` of a group keeps parameters fixed,
    but their gradients are still computed and clipped with the others).

    Raises:
        TrainerError: ``optimizer`` is not an :class:`OptimizerConfig` (build one with
            ``optim.sgd(...)`` etc. or ``optim.by_name``), ``execution``/``device``/``profile`` of
            the wrong type, a non-bool ``show_backend``, a ``max_grad_norm`` or ``max_grad_value``
            that is not ``None`` or a real number >= 0, ``param_groups`` that is not a sequence of
            groups, or a bad ``dtype`` (``dtype must be float32 or float64, got float16``; ``None``
            is refused rather than read as numpy's default float64).
        TrainerLabelError: an unknown execution-mode, device or profile label.
    """

    optimizer: OptimizerConfig
    execution: ExecutionMode
    device: Device
    profile: str | BackendProfile | None
    show_backend: bool
    dtype: str
    max_grad_norm: float | None
    param_groups: tuple[ParamGroup, ...]
    max_grad_value: float | None

    def __init__(
        self,
        optimizer: OptimizerConfig = SGD(),  # noqa: B008 - a frozen record, safe to share
        execution: ExecutionMode | str = ExecutionMode.EAGER,
        device: Device | str = Device.CPU,
        profile: str | BackendProfile | None = None,
        show_backend: BoolLike = False,
        dtype: npt.DTypeLike = "float32",
        max_grad_norm: RealLike | None = None,
        param_groups: Sequence[ParamGroup] = (),
        max_grad_value: RealLike | None = None,
    ) -> None:
        if not isinstance(optimizer, OptimizerConfig):
            known = " | ".join(f"optim.{name}(...)" for name in OPTIMIZERS)
            raise TrainerError(f"optimizer must be an optimizer record ({known}), got {optimizer!r}")
        if not is_bool(show_backend):
            raise TrainerError(f"show_backend must be a bool, got {show_backend!r}")
        values = {
            "optimizer": optimizer,
            "execution": _member(ExecutionMode, execution, "execution"),
            "device": _member(Device, device, "device"),
            "profile": _profile(profile),
            "show_backend": bool(show_backend),
            "dtype": _dtype_name(dtype),
            "max_grad_norm": _grad_limit(max_grad_norm, "max_grad_norm"),
            "max_grad_value": _grad_limit(max_grad_value, "max_grad_value"),
            "param_groups": _param_groups(param_groups),
        }
        for name, value in values.items():
            object.__setattr__(self, name, value)

    def with_device(self, device: Device | str) -> RunConfig:
        """This config on ``device`` (a member or its label) with the override cleared (last
        writer wins).

        Raises:
            TrainerError: the device has no maintained profile, or is not a device.
            TrainerLabelError: an unknown device label.
        """
        member = _member(Device, device, "device")
        maintained_profile(member)
        return replace(self, device=member, profile=None)

    def with_profile(self, profile: str | BackendProfile) -> RunConfig:
        """This config with ``profile`` as override and ``device`` set to the profile's device.

        Raises:
            TrainerLabelError: an unknown profile name.
            TrainerError: neither a name nor a :class:`BackendProfile`.
        """
        checked = _profile(profile)
        if checked is None:
            raise TrainerError("with_profile needs a profile name or a BackendProfile, got None")
        resolved = profiles.get(checked) if isinstance(checked, str) else checked
        return replace(self, device=resolved.policy.device, profile=resolved)

    def resolve_profile(self) -> BackendProfile:
        """The profile this config runs under.

        Raises:
            TrainerError: the override targets another device (``backend profile `P` targets
                `D1`, but the runtime requested `D2```) or the device has no maintained profile
                (:func:`maintained_profile`). A profile name is checked when the config is built
                (:class:`TrainerLabelError`), so an unknown one never reaches here.
        """
        if self.profile is None:
            return maintained_profile(self.device)
        resolved = profiles.get(self.profile) if isinstance(self.profile, str) else self.profile
        if resolved.policy.device != self.device:
            mismatch = TrainerError(
                f"backend profile `{resolved.name}` targets `{resolved.policy.device.label}`, but the "
                f"runtime requested `{self.device.label}`"
            )  # the original's message; the way out in a note (tracebacks print it)
            mismatch.add_note(
                f"RunConfig(profile=...) keeps its device ({self.device.label}); "
                f"RunConfig(...).with_profile({resolved.name!r}) sets both, or give "
                f"device={resolved.policy.device.label!r} too"
            )
            raise mismatch
        return resolved

    def numpy_dtype(self) -> np.dtype[np.floating]:
        """``dtype`` as a numpy dtype (float32 or float64; checked when the config was built)."""
        return np.dtype(np.float64) if self.dtype == "float64" else np.dtype(np.float32)


def _dtype_name(dtype: object) -> str:
    """``"float32"`` or ``"float64"``: the name of what ``np.dtype(dtype)`` resolves to (a torch
    dtype by its name, :func:`torchlean._checks.float_dtype`).

    Raises:
        TrainerError: ``dtype must be float32 or float64, got <value>``, naming the resolved dtype
            (``float16``, ``int32``), the string as given, or the ``repr`` of a value numpy cannot
            read as a dtype; ``None`` (numpy's default float64) is refused too.
    """
    found = float_dtype(dtype)
    if found is None:
        raise TrainerError(f"dtype must be float32 or float64, got {dtype_shown(dtype)}")
    return found.name


# Typed-graph programs a trainer keeps (per batch shape, with or without the loss): a training
# run uses two or three (full batches, the last partial batch, predict).
GRAPH_CACHE_SIZE = 8

# The spawn key of the session seed's stream: parameters draw from ``[seed, i]`` and shuffling
# from ``[seed, epoch]`` (entropy), the session seed from a child of ``seed`` (a spawn key).
_SESSION_STREAM = 0x5E5510


def session_seed(seed: int) -> int:
    """The seed of the session a :class:`Trainer` with ``seed`` opens: 64 bits drawn from
    ``np.random.SeedSequence(seed, spawn_key=(0x5E5510,))``, an integer in ``[0, 2**64)``.

    A session's random ops key their draws by ``splitmix64(session seed + counter)`` (the seed
    chapter's ``keyOf``), so the sessions of seeds ``s`` and ``s + 1`` share one stream a draw
    apart; a seed sweep of trainers (``seed in range(5)``) would reuse its dropout masks one step
    late. Hashing the trainer seed first gives each trainer seed its own stream; a session opened
    directly (``torchlean.session(seed=...)``) keeps the original's keys.

    Raises:
        TrainerError: ``seed`` is not an integer (Python or numpy; not a bool) in ``[0, 2**64)``,
            as :class:`Trainer` refuses it (review220 F1: ``None`` drew a fresh seed from the
            operating system on every call, so a session seeded so was silently unrepeatable).
    """
    if not is_seed(seed):
        raise TrainerError(f"session_seed: seed must be an integer in {SEED_RANGE}, got {seed!r}")
    sequence = np.random.SeedSequence(seed, spawn_key=(_SESSION_STREAM,))
    return int(sequence.generate_state(1, dtype=np.uint64)[0])


def _rectangular(values: npt.ArrayLike, what: str) -> Array:
    """``np.asarray(values)`` (:func:`~torchlean._tensor_data.host_array`: a torch tensor read as
    ``from_torch`` reads it, one that requires grad, or a meta or sparse one, refused); raises
    TrainerError for ragged nested sequences (numpy's bare ``ValueError``), and for a single
    value that is not a number (``None``, a string, a dict:
    ``targets: None of type NoneType is not target data ...``, as ``torchlean.tensor(None)`` says
    it is not numeric data, rather than a shape ``()`` refusal), naming ``what`` (``inputs``,
    ``targets``)."""
    if isinstance(values, tuple) and values and all(isinstance(part, np.ndarray) for part in values):
        lengths = ", ".join(str(len(part)) if part.ndim else "()" for part in values)
        if len({part.shape for part in values}) > 1:  # a (train, test) pair, say (review106 L5)
            raise TrainerError(
                f"{what} must be one array with a row per sample, got a tuple of {len(values)} arrays of "
                f"lengths {lengths} (as Dataset.standardised_targets() returns (train, test): pass one of "
                "them)"
            )
    accepted = (
        f"{what.removesuffix('s')} data (accepted: real numbers with one row per sample: a numpy array, "
        "a torchlean Tensor or nested lists)"
    )
    return host_array(values, what, TrainerError, accepted)


def _real_kind(array: Array, what: str) -> None:
    """Refuse data that is not real numbers (by dtype: strings, objects, complex numbers)."""
    if array.dtype.kind not in "biuf":
        raise TrainerError(
            f"{what} must be real numbers (accepted: bool, integer or float arrays), got dtype {array.dtype}"
        )


def _cast_real(array: Array, dtype: np.dtype[np.floating], what: str) -> Array:
    """Real-number ``array`` (:func:`_real_kind`) as ``dtype``; raises TrainerError for finite values
    that ``dtype`` cannot hold (``1e39`` in float32, which the cast would make ``inf``). The
    overflow check looks for an infinity in the cast first, and only when it finds one builds the
    mask of the finite values the cast made infinite (review243 F4: two full-size masks on every
    call)."""
    if array.dtype == dtype:  # nothing to cast (no overflow to check)
        return array
    with np.errstate(over="ignore"):
        cast = np.asarray(array, dtype=dtype)
    infinite = np.isinf(cast)
    if infinite.any():
        overflowed = infinite & np.isfinite(array)
        if overflowed.any():
            largest = np.max(np.abs(array[overflowed]))
            wider = "" if dtype == np.float64 else "; use dtype float64"
            values = _count(int(overflowed.sum()), "value")
            raise TrainerError(
                f"{what} hold {values} beyond the {dtype} range (largest magnitude {largest!s}; accepted: "
                f"magnitude at most {np.finfo(dtype).max!s}, as numpy prints {dtype}'s largest value{wider})"
            )
    return cast


def _real_array(values: npt.ArrayLike, dtype: np.dtype[np.floating], what: str) -> Array:
    """``values`` as an array of ``dtype``; raises TrainerError for data that is not real numbers
    (strings, objects, complex numbers, ragged sequences) or holds finite values that ``dtype``
    cannot (``1e39`` in float32, which the cast would make ``inf``)."""
    array = _rectangular(values, what)
    _real_kind(array, what)
    return _cast_real(array, dtype, what)


def _id_kind(array: Array, count: int) -> None:
    """Refuse ids that are not integers (floats, bools, strings: torch's embedding takes Long/Int
    indices only) for a first layer that looks up ``count`` rows."""
    if array.dtype.kind not in "iu":
        raise TrainerError(
            f"inputs must be ids, integers in [0, {count}), for this model (its first layer looks them "
            f"up: an embedding of {count} rows); got dtype {array.dtype} (integral values can be cast with "
            ".astype(np.int64))"
        )


def _ids_in_range(array: Array, count: int) -> Inputs:
    """Integer ``array`` (:func:`_id_kind`) as int64 ids; raises TrainerError for an id outside
    ``[0, count)``, naming the value."""
    outside = id_outside(array, count)
    if outside is not None:
        raise TrainerError(
            f"inputs hold the id {outside}, out of range for the model's first layer (accepted: ids in "
            f"[0, {count}))"
        )
    return array.astype(np.int64)


def _target_forms(output_shape: tuple[int, ...], got: tuple[int, ...]) -> str:
    """The refusal of cross-entropy targets of shape ``got`` for per-sample ``output_shape``."""
    *positions, classes = output_shape
    labels = ", ".join(["n", *map(str, positions)])
    return (
        f"cross-entropy targets must be labels ({labels}{',' if not positions else ''}) or one-hot "
        f"({labels}, {classes}), got {got}"
    )


def _mse_target_shapes(output_shape: tuple[int, ...]) -> str:
    """The target shapes :meth:`Trainer.fit` accepts for MSE and per-sample ``output_shape``, as
    its refusal names them: ``(n, 3)``; ``(n, 1) or (n,)`` for ``(1,)`` (a column or a vector)."""
    rows = "(" + ", ".join(["n", *map(str, output_shape)]) + ("," if not output_shape else "") + ")"
    return f"{rows} or (n,)" if output_shape == (1,) else rows


def _count(n: int, noun: str) -> str:
    return f"{n} {noun}" if n == 1 else f"{n} {noun}s"


_TRAINED_ON = "training on them would make every parameter NaN"
"""What NaN or infinite training data would do (torch would train on them silently)."""


def _finite_for_training(array: Array, what: str, consequence: str = _TRAINED_ON) -> None:
    """Refuse NaN or infinite data: one step on training data makes the loss, then every
    parameter and the optimizer state, NaN; validation data make the validation loss so
    (``consequence`` says which: review91 F2)."""
    finite = np.isfinite(array)
    if finite.all():
        return
    bad = ~finite
    row = int(np.argwhere(bad)[0][0])
    values = _count(int(bad.sum()), "NaN or infinite value")
    raise TrainerError(
        f"{what} hold {values} (the first in row {row}); {consequence} (accepted: finite numbers)"
    )


def _label_smoothing(value: object, objective: Objective) -> float:
    """``Trainer``'s ``label_smoothing`` checked: a real number in ``[0, 1]``, nonzero only for
    cross-entropy.

    Raises:
        TrainerError: ``label_smoothing must be a real number in [0, 1] (torch's documented range),
            got 1.5``;
            ``label_smoothing applies to objective cross-entropy, got mse``.
    """
    number = _float_or_none(value)
    if number is None or not 0.0 <= number <= 1.0:
        raise TrainerError(
            f"label_smoothing must be a real number in [0, 1] (torch's documented range), got "
            f"{_value_shown(value)}"
        )
    if number != 0.0 and objective is not Objective.CROSS_ENTROPY:
        raise TrainerError(f"label_smoothing applies to objective cross-entropy, got {objective.label}")
    return number


def _loss_operand(
    objective: Objective, y: Targets, classes: int, dtype: np.dtype[np.floating], smoothing: float = 0.0
) -> Array:
    """The target operand :func:`_loss` takes for minibatch targets ``y`` (:data:`Targets`, at
    least one row): ``y`` itself for MSE; for cross-entropy the per-entry weights ``y * (-1/n)``
    of the ``(n, ..., classes)`` one-hot (or probability) rows, made here from int64 labels,
    ``n`` the number of predictions (rows times positions), ``-1/n`` rounded to ``dtype`` first
    (as ``scale`` rounds its factor), so ``1/n`` and the sign are folded into the constant target
    instead of costing a ``scale`` op and its VJP on the tape each step. With ``smoothing`` the
    rows are first ``y * (1 - s) + s / classes`` in ``dtype`` (torch's smoothed target)."""
    if objective is Objective.MSE:
        return y
    if y.dtype.kind in "iu":  # class labels
        onehot = np.zeros((*y.shape, classes), dtype=dtype)
        np.put_along_axis(onehot, y.astype(np.intp)[..., None], 1, axis=-1)
        y = onehot
    if smoothing != 0.0:
        y = y * dtype.type(1.0 - smoothing) + dtype.type(smoothing / classes)
    predictions = y.size // y.shape[-1]  # the rows, or rows x positions of (n, ..., classes)
    return y * np.asarray(-1.0 / predictions, dtype=dtype)


def _loss(ops: Ops[T], objective: Objective, prediction: T, target: T) -> T:
    """The objective as ops, ``target`` being :func:`_loss_operand`'s: ``mse_loss``, or the mean
    cross-entropy ``sum(log_softmax(z) * w)`` with ``w = -onehot/n`` over all ``n`` rows and classes
    (one left-fold sum under ``checked_cpu``). Its gradient with respect to ``log_softmax(z)`` is
    ``w``, bit for bit what ``scale(sum(log_softmax(z) * onehot), -1/n)`` gives; the loss value
    differs from that form by rounding only (one product per entry instead of one final scale)
    where every ``log_softmax`` entry is finite: a ``-inf`` one (a ``-inf`` logit) at a zero weight
    gives ``0 * -inf = NaN`` in either form, where torch's class-index loss, which reads the target
    only, is finite (:class:`Objective`)."""
    if objective is Objective.MSE:
        return ops.mse_loss(prediction, target)
    log_p = ops.log_softmax(prediction, len(ops.shape(prediction)) - 1)
    return ops.sum(ops.mul(log_p, target))


@dataclass(frozen=True, slots=True)
class _Validation:
    """Validation data checked by :meth:`Trainer._validation_data`: inputs as the model takes
    them, and targets as the metrics read them (int64 labels, else float64 values of the
    targets as given, shaped as :meth:`Trainer._y` shapes them)."""

    x: Inputs
    y: npt.NDArray[Any]


@dataclass(slots=True)
class _GraphStep:
    """An accepted program, its output node, and (training) the dropout masks it takes as inputs
    and the batch norm updates to apply after it runs (:class:`~torchlean.nn.lowering.Lowered`).
    Mutable for one flag, ``recorded``, set once when its kernels are first recorded: the entry
    lives in the trainer's LRU cache of steps, which evicts the flag with it."""

    program: GraphProgram
    output: int
    masks: tuple[DropoutMask, ...] = ()
    updates: tuple[RunningUpdate, ...] = ()
    indices: tuple[EmbeddingIndex, ...] = ()
    recorded: bool = False  # its kernels are in the trainer's selected (Trainer._record_graph_kernels)

    def inputs(self, xb: Inputs, target: Array | None, dtype: np.dtype[np.floating]) -> list[Tensor]:
        """The program's inputs in node order: the minibatch, each embedding's int64 row index
        (made from the ids as ``functional.embedding`` makes it), each dropout mask (drawn now by
        the session's ``bernoulli_mask``, in forward order: eager's draws) and, when training, the
        loss target."""
        program = self.program
        feeds: dict[int, Tensor] = {program.input_ids[0]: Tensor(xb)}
        for index in self.indices:
            feeds[index.node] = Tensor(index.rows(xb))
        for mask in self.masks:
            feeds[mask.node] = F.bernoulli_mask(mask.shape, mask.keep_prob, dtype=dtype)
        if target is not None:
            feeds[program.input_ids[-1]] = Tensor(target)
        return [feeds[node] for node in program.input_ids]


def _preflight(
    session: Session, ops: Sequence[BackendOp], grad_enabled: bool, why: str
) -> list[SessionError]:
    """Have ``session`` select, accept and bind (without running or recording) ``ops``, which a
    typed-graph step runs eagerly besides its graph (a dropout mask's ``bernoulli_mask``, drawn
    before the graph runs; batch norm's running-statistics update,
    :data:`~torchlean.nn.eager.RUNNING_STATISTICS_OPS`, after it), so a profile that cannot serve
    one is refused before the graph's first kernel runs, as the graph's own ops are (review93 M1).
    Returns the refusals, each the session's selection message with ``why`` the op is needed and
    its notes, one per op refused (all of them, not the first: review152 F2).
    """
    refusals = []
    for op in ops:
        try:
            session.preflight(op, grad_enabled=grad_enabled)
        except SessionError as error:
            refused = SessionError(f"{error} ({why.format(op=op.label)}; refused before the graph runs)")
            for note in getattr(error, "__notes__", ()):
                refused.add_note(note)
            refused.__cause__ = error
            refusals.append(refused)
    return refusals


def _graph_verdicts(
    profile: BackendProfile, graph: Graph
) -> tuple[AcceptedGraphKernelPlan | None, list[str], list[str], set[BackendOp]]:
    """``graph`` accepted under ``profile``: its accepted plan, or None with the problems (one
    message per op no capsule covers, then the gate's failures of every op that has a capsule,
    each once: review152 F2, review154 L1), the notes (each missing op's :meth:`explain`) and the
    ops refused. A planning error used to hide the gate's verdicts on the ops that did plan, which
    a second round then showed."""
    try:
        result = profile.accept_graph(graph)
    except PlanningError as error:  # an op no capsule covers: a SessionError, as in eager mode
        problems, refused = list(error.messages), set(error.missing_ops)
        notes = [profile.explain(op) for op in error.missing_ops]  # none for a registry error
        planned = [op for op in _graph_ops(graph) if op not in refused]
        if error.missing_ops and planned:  # the gate's verdict on each op that has a capsule
            for kernel in profile.plan_ops(planned).kernels:
                failures = acceptance_failures(kernel, profile.policy)
                if failures:
                    refused.add(kernel.op)
                    problems.extend(failure.message for failure in failures)
        return None, problems, notes, refused
    if result.plan is not None:
        return result.plan, [], [], set()
    refused = {kernel.op for kernel in profile.plan_ops(_graph_ops(graph)).kernels
               if acceptance_failures(kernel, profile.policy)}
    return None, [failure.message for failure in result.failures], [], refused


def _graph_ops(graph: Graph) -> list[BackendOp]:
    """The distinct ops of ``graph``'s kernel nodes, in graph order."""
    ops = (node.kind.backend_op for node in graph.nodes)
    return [op for op in dict.fromkeys(ops) if op is not None]


def _graph_refusal(
    profile_name: str, graph_problems: Sequence[str], notes: Sequence[str], eager: Sequence[SessionError]
) -> SessionError:
    """One refusal of a typed graph naming everything a profile refuses at once (review152 F2): the
    graph's own problems (ops no capsule covers, or the gate's failures, each once) after
    ``typed graph rejected by profile NAME:``, then the refusals of the ops the step runs eagerly
    beside the graph (:func:`_preflight`), each with its own ``torch: kernel selection failed``
    message; every note once, in order."""
    messages = list(dict.fromkeys(graph_problems))
    head = [f"typed graph rejected by profile {profile_name}: {'; '.join(messages)}"] if messages else []
    refused = SessionError("; ".join([*head, *(str(error) for error in eager)]))
    for note in dict.fromkeys([*notes, *(n for error in eager for n in getattr(error, "__notes__", ()))]):
        refused.add_note(note)
    if len(eager) == 1 and not messages:
        refused.__cause__ = eager[0].__cause__
    return refused


_RUNNING_STATISTICS_NEED = (
    "batch norm's running-statistics update runs `{op}` without gradient after each training step's graph"
)
_DROPOUT_NEED = "a dropout mask is drawn by `{op}` before each training step's graph runs"


def _hits(logits: np.ndarray[Any, Any], labels: np.ndarray[Any, Any]) -> int:
    """How many rows of ``logits`` (n, classes) predict their label (n,): the argmax class, and
    only for a row whose logits are all finite (a diverged model's NaN row has numpy argmax 0,
    which is no prediction; ``torchlean predict`` counts it wrong too). :meth:`Trainer.evaluate`'s
    accuracy and each epoch's validation accuracy both count with it."""
    right = logits.argmax(axis=-1) == labels
    return int(np.count_nonzero(right & np.isfinite(logits).all(axis=-1)))


class Trainer(Generic[In, Out]):
    """Trains ``layer`` on ``(x, y)`` arrays; see the module docstring.

    Args:
        layer: the model description (``nn.sequential(...)``).
        objective: ``Objective.MSE`` (targets shaped like outputs) or
            ``Objective.CROSS_ENTROPY`` (integer class labels ``(n,)`` or one-hot ``(n, classes)``;
            for ``(..., classes)`` outputs, labels ``(n, ...)`` or one-hot ``(n, ..., classes)``,
            the classes on the output's last axis; float rows are class probabilities, as torch's
            ``cross_entropy`` with probability targets, and are not checked to be distributions:
            negative entries give a negative loss); a label (``"mse"``, ``"cross-entropy"``) is
            parsed.
        config: runtime settings (``None``: ``RunConfig()``).
        seed: the run's seed, an integer (Python or numpy; not a bool) in ``[0, 2**64)``: it draws
            the initial parameters, the shuffling order and, through :func:`session_seed`, the
            seed of the session whose random ops (dropout masks) it runs. Consecutive seeds give
            unrelated dropout streams (the session's own seeds ``s`` and ``s + 1`` share one
            stream a draw apart).
        input_shape: per-sample input shape, a tuple, list, ``torch.Size`` or 1-d integer numpy
            array (inferred when the model starts with a linear layer, or with layers that keep
            its input shape before one: an identity, activations, dropout, a layer norm).
        label_smoothing: cross-entropy's target mixed with the uniform distribution over the
            classes, ``(1 - s) * target + s / classes`` (torch's ``cross_entropy(...,
            label_smoothing=s)``), a real number in ``[0, 1]``; 0 (the default) for none.

    The model is built at once (:func:`torchlean.nn.model.build`) with parameters in
    ``config.dtype``; data given to :meth:`fit`, :meth:`predict` and :meth:`evaluate` is
    ``(n, *input_shape)`` real numbers (bool, integer or float arrays), cast to that dtype, or,
    for a model whose first layer looks up ids (``nn.embedding``), integer ids kept as int64.

    Raises:
        ShapeError: the layers do not fit the input shape, a bad ``input_shape``, or none given
            for a model that does not start with a linear layer; a layer that cannot run in the
            config's dtype (a normalisation ``eps`` it rounds to infinity, or a batch norm ``eps``
            it rounds to 0: :func:`~torchlean.nn.model.build`).
        TrainerError: ``layer`` is not a layer, ``config`` is not a :class:`RunConfig`,
            ``seed`` is out of range (``seed must be an integer in [0, 2**64), got -1``), or
            ``label_smoothing`` is not a real number in ``[0, 1]`` or is given with MSE, or
            cross-entropy for a model whose output shape is ``()`` or has one class on its last
            axis (``(..., 1)``: the loss and its gradient would be 0 at every step; review214 F1).
        TrainerLabelError: an unknown objective label.
        OptimizerError: ``config.param_groups`` that do not fit the model: a group selecting no
            parameter (the message lists the model's names), only buffers, or one another group
            selects (neither frozen), an override the optimizer does not take
            (:meth:`torchlean.optim.OptimizerConfig.create`), frozen groups that freeze every
            trainable parameter (naming them).
    """

    def __init__(
        self,
        layer: Layer,
        *,
        objective: Objective | str = Objective.MSE,
        config: RunConfig | None = None,
        seed: int | np.integer[Any] = 0,
        input_shape: InputShape | None = None,
        label_smoothing: RealLike = 0.0,
    ) -> None:
        if not isinstance(layer, Layer):
            raise TrainerError(not_a_layer(layer))
        if config is not None and not isinstance(config, RunConfig):
            raise TrainerError(f"config must be a RunConfig or None, got {config!r}")
        if not is_seed(seed):
            raise TrainerError(f"seed must be an integer in {SEED_RANGE}, got {seed!r}")
        self._config = config if config is not None else RunConfig()
        self._objective = _member(Objective, objective, "objective")
        self._label_smoothing = _label_smoothing(label_smoothing, self._objective)
        self._seed = int(seed)
        self._model: Model = build(layer, input_shape=input_shape, seed=self.seed,
                                   dtype=self.config.numpy_dtype())
        if self._objective is Objective.CROSS_ENTROPY and not self._model.output_shape:
            raise TrainerError(  # review173 F8: a raw ValueError at the first step
                f"objective cross-entropy needs class logits on the output's last axis, and "
                f"{type(layer).__name__}'s output shape is () (one number per sample): use objective "
                "'mse', or give the layer an output of shape (..., classes)"
            )
        if self._objective is Objective.CROSS_ENTROPY and self._model.output_shape[-1] == 1:
            raise TrainerError(  # review214 F1: loss and gradient 0 at every step, accuracy 1.0
                f"objective cross-entropy needs at least 2 classes on the output's last axis, and "
                f"{type(layer).__name__}'s output shape is {tuple(self._model.output_shape)} (one class: "
                "the log-softmax of one logit is 0, so the loss and its gradient would be 0 at every step "
                "and every prediction class 0): for binary classification give the model 2 outputs and "
                "labels 0/1 (where torch code would use BCEWithLogitsLoss over one logit)"
            )
        self._session: Session | None = None
        self._exclusive = Exclusive()  # fit and step: one at a time (review237 F3)
        self._random_counter = 0  # the session's, until it opens (random_counter)
        self._unstored_from: int | None = None  # the counter before a step whose update is not stored
        self._optimizer: Optimizer | None = None
        self.grad_norm: float | None = None
        """The total 2-norm of the last step's gradients before clipping, when ``config`` has a
        ``max_grad_norm`` (``inf`` logs it without clipping, unless the norm itself is not finite,
        which makes every gradient NaN, as in torch), else ``None``; with a ``max_grad_value`` too,
        the norm of the gradients that clipping by value gave (what torch's ``clip_grad_norm_``
        returns after ``clip_grad_value_``)."""
        self._graphs: dict[tuple[tuple[int, ...], bool], _GraphStep] = {}
        self._graph_kernels: list[AcceptedKernel] = []
        self._epochs_done = 0
        self.history: History | None = None
        """What the last :meth:`fit` call trained and measured (epoch losses, and with
        ``validation`` each epoch's validation loss and metric, the best epoch, where early
        stopping stopped), set when it returns or fails (then up to its last whole epoch whose
        mean loss was taken: an epoch stopped right after its last update counts in
        :attr:`epochs_done` but is not listed); ``None`` before the first. Keras'
        ``model.fit(...).history``."""
        self.val_outputs: Array | None = None
        """MSE: the model's outputs for ``x_val`` from the last validation of :meth:`fit`,
        ``(n_val, *output_shape)`` in the model dtype, bit for bit what :meth:`predict` (its
        default ``batch_size``) gives for ``x_val`` with the weights of the last epoch validated
        (not the best epoch's that early stopping may restore after it): the outputs of its last
        ``val_loss``, so another metric of them (``torchlean train``'s ``val_mse`` in the target's
        units) needs no second pass over ``x_val``. ``None`` before, for a ``fit`` without
        ``validation`` (each ``fit`` resets it) and for cross-entropy, whose logits are read a
        chunk at a time and not kept."""
        # a misspelt or overlapping group is refused here, not at fit; a model without parameters
        # has no optimizer (fit and step refuse it, predict runs: review200 F4)
        if self.config.param_groups and self.model.parameters:
            self._optimizer = self._create_optimizer()  # kept: a selection function runs once

    def __repr__(self) -> str:
        """``Trainer(objective='cross-entropy', profile='checked_cpu', execution='eager',
        dtype='float32', parameters=67, epochs_done=1, steps_done=4)``: what a notebook shows
        (review106 L7); the profile is the config's (its name, or the device's maintained one)."""
        profile = self.config.profile
        named = profile.name if isinstance(profile, BackendProfile) else profile
        if named is None:
            try:
                named = self.config.resolve_profile().name
            except TorchLeanError:  # no maintained profile for the device: say which device
                named = f"(device {self.config.device.label})"
        parameters = sum(int(p.size) for p in self.model.parameters)
        return (
            f"Trainer(objective={self.objective.label!r}, profile={named!r}, "
            f"execution={self.config.execution.label!r}, dtype={self.config.dtype!r}, "
            f"parameters={parameters}, epochs_done={self.epochs_done}, steps_done={self.steps_done})"
        )

    def __getstate__(self) -> dict[str, Any]:
        """A trainer that has not run copies and pickles as a plain object (a template cloned for a
        sweep, sent to a worker process); once it has opened its session it is refused: the
        session and the typed-graph plans hold accepted kernels, which are never copied
        (``torchlean.backend.sealed``), and the copy failed deep inside on one of them
        (``copy.deepcopy(trainer)`` to keep the best model is a torch habit).
        ``trainer.model.state()`` returns copies of the weights.

        Raises:
            TypeError: ``Trainer cannot be copied or pickled once it has run (...); keep the
                weights with ...``.
        """
        if self._session is not None or self._graphs or self._graph_kernels:
            raise TypeError(
                "Trainer cannot be copied or pickled once it has run (its session holds accepted "
                "kernels); keep the weights with state = trainer.model.state() and restore them "
                "with trainer.model.load_state(state), in this trainer or a new one"
            )
        # empty here, but containers of their own: a shallow copy shared them, and then listed the
        # kernels its original ran and was refused as run itself (review132 F3); a copy's fit and
        # step are its own too
        return {**self.__dict__, "_graphs": {}, "_graph_kernels": [], "_exclusive": Exclusive()}

    def __setstate__(self, state: dict[str, Any]) -> None:
        """The state :meth:`__getstate__` gave, with a free :class:`Exclusive` of its own (one
        pickled before fit and step held one had none: review238 F7)."""
        self.__dict__.update(state)
        self._exclusive = Exclusive()

    # ------------------------------------------------------------------------------ lifecycle

    def open(self) -> Session:
        """Resolve the profile, check the execution mode and open the eager session (once).

        Raises:
            TrainerError: ``typed graph execution currently supports device `cpu`; requested
                `cuda``` and the profile-resolution errors of :meth:`RunConfig.resolve_profile`.
            SessionError: the profile cannot execute on this machine (``torch eager session: ...``).
        """
        if self._session is None:
            profile = self.config.resolve_profile()
            if self.config.execution is ExecutionMode.TYPED_GRAPH and self.config.device is not Device.CPU:
                raise TrainerError(
                    "typed graph execution currently supports device `cpu`; requested "
                    f"`{self.config.device.label}`"
                )
            # param_groups create it at construction; a model without parameters gets none (torch's
            # optimizers refuse an empty list), and fit and step refuse it (_require_parameters)
            if self._optimizer is None and self.model.parameters:
                self._optimizer = self._create_optimizer()
            self._session = Session(profile, show_backend=self.config.show_backend,
                                    seed=session_seed(self.seed))
            self._session.random_counter = self._random_counter
        return self._session

    def _open_for_training(self, caller: str) -> Session:
        """:meth:`open`, refusing a profile whose policy has VJP mode none: it records no
        gradient (inference only; :meth:`predict` and :meth:`evaluate` run under it).

        Raises:
            TrainerError: ``fit trains with gradients, but profile `P` has a policy of VJP mode
                none ...`` (``step`` for :meth:`step`); the errors of :meth:`open`.
        """
        session = self.open()
        if session.profile.policy.vjp_mode is VJPMode.NONE:
            raise TrainerError(
                f"{caller} trains with gradients, but profile `{session.profile.name}` has a policy of VJP "
                "mode none (inference only: predict and evaluate run under it); give a profile whose VJP "
                "mode owns a backward (torchlean-tape or backend-vjp)"
            )
        return session

    @property
    def random_counter(self) -> int:
        """The position in the trainer's random stream: the random-op invocations (dropout masks,
        eager or typed-graph, one per dropout layer and training step) its session has served,
        :attr:`Session.random_counter <torchlean.autograd.session.Session.random_counter>`; 0
        before it opens. Evaluation (``predict``, ``evaluate``, ``fit``'s ``validation``) draws
        nothing. A step's draws count once its update is stored: after a Ctrl-C (or an error)
        inside a step, the counter is that of the :attr:`steps_done` steps the weights and
        optimizer state hold, and the next step draws that step's masks again (review70 F1).

        Settable, before or after the session opens (reading or setting it opens nothing), to
        resume a run: with the saved run's weights, optimizer state
        (``optimizer.load_state_dict``), :attr:`epochs_done` and this counter, a new trainer of the
        same seed and layers draws the masks the run would have drawn next (``torchlean train
        --resume`` restores it from :class:`~torchlean.checkpoint.TrainingState`), as torch's
        ``torch.set_rng_state`` continues a generator.

        Raises:
            TrainerError: (on setting) not an integer (Python or numpy; bools refused) in
                ``[0, 2**64)``.
        """
        if self._unstored_from is not None:  # a step interrupted before its store: its draws do not count
            return self._unstored_from
        return self._random_counter if self._session is None else self._session.random_counter

    @random_counter.setter
    def random_counter(self, counter: int) -> None:
        if not is_seed(counter):
            raise TrainerError(f"random_counter must be an integer in {SEED_RANGE}, got {counter!r}")
        if self._session is not None:
            self._session.random_counter = int(counter)
        self._random_counter = int(counter)
        self._unstored_from = None  # the counter given is the position to go on from

    # The settings are read-only: checked once, at construction, and fixed in the session, the
    # optimizer and the graphs the trainer builds from them (review26_ls F4).

    @property
    def config(self) -> RunConfig:
        """The runtime settings (read-only: build a new ``Trainer`` for others, and carry the
        weights over with ``model.state()``/``load_state``)."""
        return self._config

    @property
    def objective(self) -> Objective:
        """The training objective (read-only)."""
        return self._objective

    @property
    def label_smoothing(self) -> float:
        """Cross-entropy's label smoothing, 0.0 for none (read-only)."""
        return self._label_smoothing

    @property
    def seed(self) -> int:
        """The run's seed (read-only: assigning one raises ``AttributeError``)."""
        return self._seed

    @seed.setter
    def seed(self, value: Never) -> NoReturn:
        """Refuse another seed (review154 L5): the initial weights, the shuffling and the session's
        dropout stream were drawn from this one; typed ``Never``, as :attr:`model`'s setter.

        Raises:
            AttributeError: always (as the other settings' assignments, review26_ls F4), saying
                what to do instead.
        """
        raise AttributeError(
            f"Trainer.seed is fixed when the trainer is made (its weights, shuffling and dropout masks "
            f"come from it), so {shown_safely(value)} was not assigned; make a new Trainer(..., seed=...) "
            "instead (trainer.random_counter moves along this one's dropout stream)"
        )

    def _create_optimizer(self) -> Optimizer:
        """A fresh optimizer of ``config`` for the model's parameters, with its ``param_groups``.

        Raises:
            OptimizerError: a group that selects no parameter of the model (``GroupSelectionError``),
                only buffers, or one another group selects (neither frozen), or an override the
                optimizer does not take (:meth:`OptimizerConfig.create`); frozen groups that
                freeze every trainable parameter (naming them).
        """
        optimizer = self.config.optimizer.create(
            self.model.parameters, names=self.model.names, groups=self.config.param_groups
        )
        for index, group in enumerate(self.config.param_groups):
            members = [i for i, member in enumerate(optimizer.membership) if member == index]
            # no members: a frozen group took every parameter it selects (create checked it selects some)
            if members and not any(self.model.specs[i].trainable for i in members):
                buffers = ", ".join(self.model.names[i] for i in members)
                raise OptimizerError(
                    f"optimizer: {group.describe()} selects only buffers ({buffers}), which have no "
                    "gradient and are never updated (a group selects trainable parameters)"
                )
        trainable = [i for i, spec in enumerate(self.model.specs) if spec.trainable]
        if trainable and all(optimizer.is_frozen(i) for i in trainable):
            names = names_shown([self.model.names[i] for i in trainable])
            raise OptimizerError(
                f"optimizer: {freezing(self.config.param_groups)} every trainable parameter of the model "
                f"({names}), so nothing would train (freeze fewer)"
            )
        return optimizer

    @property
    def profile(self) -> BackendProfile:
        """The backend profile this trainer runs under (opens the session; see :meth:`open`);
        read-only: assigning one raises ``AttributeError``."""
        return self.open().profile

    @profile.setter
    def profile(self, value: Never) -> NoReturn:
        """Refuse another profile (review154 L5, as ``Session.profile``: review152 F1): the kernels
        the trainer's session accepted were accepted under this one; typed ``Never``.

        Raises:
            AttributeError: always, as ``Session.profile``'s, saying what to do instead.
        """
        shown = repr(value.name) if isinstance(value, BackendProfile) else shown_safely(value)
        raise AttributeError(
            f"Trainer.profile is fixed when the trainer is made (its session accepted its kernels "
            f"under it, and checkpoints name it), so {shown} was not assigned; make a new Trainer "
            "with RunConfig(profile=...) instead"
        )

    @property
    def lr(self) -> float:
        """The learning rate in effect: inside :meth:`fit` with an ``lr_schedule`` (read from
        ``on_batch``), the current epoch's, or with ``schedule_by="step"`` the rate of the step just
        taken; otherwise the optimizer's own (``config.optimizer.lr``), which the next update
        outside a scheduled ``fit`` uses.

        Read-only: ``trainer.lr = 0.5`` raises ``AttributeError`` naming
        ``trainer.optimizer.set_lr(0.5)``, which changes the rate (torch's ``param_group["lr"] =
        0.5``: the rate lives in the optimizer, and :meth:`Optimizer.set_lr
        <torchlean.optim.Optimizer.set_lr>` scales every parameter group's with it). This property
        reads the rate in effect, which inside a scheduled ``fit`` is the schedule's, so a setter
        could not promise that the rate set is the one used (the schedule sets its own at the next
        epoch or step).
        """
        return (self.config.optimizer if self._optimizer is None else self._optimizer.config).lr

    @lr.setter
    def lr(self, lr: float) -> None:
        given = shown_briefly(lr)
        raise AttributeError(
            f"Trainer.lr is read-only (the rate in effect, which a fit's lr_schedule sets); set the "
            f"learning rate with trainer.optimizer.set_lr({given}) (torch's param_group['lr'] = ...), got "
            f"trainer.lr = {given}"
        )

    @property
    def model(self) -> Model:
        """The built model being trained (``trainer.model.state()``, ``load_state(...)``,
        ``output_shape``): read-only, its architecture fixed
        (:class:`~torchlean.nn.model.ArchitectureError`), as the optimizer state and the accepted
        typed graphs are made for it."""
        return self._model

    @model.setter
    def model(self, value: Never) -> NoReturn:
        """Refuse replacing the model (review132 F1: a typed-graph trainer ran its cached graphs,
        lowered from the old architecture, on the new model's weights); typed ``Never``, so mypy
        reports the assignment where it is written.

        Raises:
            TrainerError: always, saying what to do instead.
        """
        raise TrainerError(
            f"Trainer.model cannot be replaced (by a {type(value).__name__}): the trainer's optimizer state "
            "and accepted typed graphs are made for its model; replace its weights with "
            "trainer.model.load_state(...), or make a new Trainer for another model"
        )

    @property
    def optimizer(self) -> Optimizer:
        """The trainer's stateful optimizer (created from ``config`` on first use, without opening
        the session): ``trainer.optimizer.state_dict()`` and ``load_state_dict`` save and restore
        its moments, step counts and learning rate with the weights (``model.state()``), to resume
        a run; ``trainer.optimizer.set_lr(...)`` changes the rate.

        Raises:
            OptimizerError: as :meth:`OptimizerConfig.create` (``config.param_groups``).
            TrainerError: a model without parameters (it has nothing to optimize).
        """
        if self._optimizer is None:
            if not self.model.parameters:
                self._require_parameters()
            self._optimizer = self._create_optimizer()
        return self._optimizer

    @property
    def epochs_done(self) -> int:
        """Whole epochs :meth:`fit` has run: the next epoch's number, which seeds its shuffle
        order (``default_rng([seed, epoch])``) and indexes an epoch-wise schedule.

        Settable, to resume a run (with the weights, ``optimizer.load_state_dict`` and
        :attr:`random_counter`) or to renumber epochs.

        Raises:
            TrainerError: (on setting) not an integer (Python or numpy; bools refused) >= 0:
                ``epochs_done must be an int >= 0, got -1``.
        """
        return self._epochs_done

    @epochs_done.setter
    def epochs_done(self, epochs: int) -> None:
        self._epochs_done = checked_int(epochs, "epochs_done", 0, TrainerError)

    @property
    def steps_done(self) -> int:
        """Optimizer updates made so far (by :meth:`fit` and :meth:`step`), the index a
        ``schedule_by="step"`` schedule gets for the next one."""
        return 0 if self._optimizer is None else self._optimizer.steps

    @property
    def selected(self) -> list[AcceptedKernel]:
        """Accepted kernels that computed this trainer's values, each once.

        Eager: the session's selections, in first-use order. Typed graph: the distinct kernels
        of the accepted graph plans, in the graphs' node order (the order the forward runs
        them), then those of ops run eagerly outside the graph (none on the default path; a
        dropout mask's ``bernoulli_mask``, drawn before each step's graph runs, comes last
        there, where eager execution lists it where the dropout layer first ran). Empty before
        the trainer has run anything (reading it opens no session, so it never raises).
        """
        eager = [] if self._session is None else self._session.selected
        chosen: list[AcceptedKernel] = []
        seen: set[tuple[str, BackendOp, Provider, Device]] = set()
        for kernel in [*self._graph_kernels, *eager]:
            if kernel.capsule.identity not in seen:
                seen.add(kernel.capsule.identity)
                chosen.append(kernel)
        return chosen

    @property
    def selected_outside_graph(self) -> list[AcceptedKernel]:
        """The kernels of :attr:`selected` that ran outside a typed graph, in its order: under
        typed-graph execution, those of ops run eagerly and not in a graph plan (a dropout mask's
        ``bernoulli_mask``, and the ops of batch norm's running-statistics update that no graph
        ran, such as ``slice``; none on the default path); under eager execution, none (nothing
        runs in a graph). Never raises."""
        if self.config.execution is not ExecutionMode.TYPED_GRAPH:
            return []
        planned = {kernel.capsule.identity for kernel in self._graph_kernels}
        return [kernel for kernel in self.selected if kernel.capsule.identity not in planned]

    # --------------------------------------------------------------------------------- data

    def _x(self, x: npt.ArrayLike) -> Inputs:
        return self._x_values(self._x_array(x))

    def _x_array(self, x: npt.ArrayLike) -> Array:
        """``x`` read as an array and refused by its dtype and its declared shape, not yet cast
        (review243 F4: a float64 input was cast to the model dtype, and ids range-checked, before
        the shape refusal); :meth:`_x_values` casts it."""
        array = _rectangular(x, "inputs")
        count = self.model.layer.index_count()
        if count is None:
            _real_kind(array, "inputs")
        else:
            _id_kind(array, count)
        if array.shape[1:] != self.model.input_shape:
            raise TrainerError(
                f"inputs must have shape (n, {', '.join(map(str, self.model.input_shape))}), "
                f"got {tuple(array.shape)}"
            )
        return array

    def _x_values(self, array: Array) -> Inputs:
        """:meth:`_x_array`'s array as the model reads it: cast to the model dtype (finite values
        beyond its range refused), or int64 ids in range."""
        count = self.model.layer.index_count()
        return _cast_real(array, self.model.dtype, "inputs") if count is None else _ids_in_range(array, count)

    def _x_and_y(self, x: npt.ArrayLike, y: npt.ArrayLike) -> tuple[Inputs, Targets]:
        """Inputs and targets as :meth:`_x` and :meth:`_y` read them, both refused by shape (the
        row counts too) before the inputs are cast (review243 F4)."""
        array = self._x_array(x)
        ys = self._y(y, array.shape[0])
        return self._x_values(array), ys

    def _y(self, y: npt.ArrayLike, n: int) -> Targets:
        array = _rectangular(y, "targets")
        if self.objective is Objective.CROSS_ENTROPY:
            *positions, classes = self.model.output_shape
            if array.ndim == len(positions) + 1:
                # an empty list is float64 to numpy, and holds no label that is not an integer
                integral = array.dtype.kind in "iu" or (array.size == 0 and array.dtype.kind == "f")
                if not integral or (array.size and (array.min() < 0 or array.max() >= classes)):
                    span = f" with range [{array.min()}, {array.max()}]" if integral else ""
                    whole = array.dtype.kind == "f" and bool(np.all(np.isfinite(array))) and bool(
                        np.all(array == np.round(array)))  # review106 L3: as embedding ids are told
                    cast = " (integral values can be cast with .astype(np.int64))" if whole else ""
                    raise TrainerError(
                        f"cross-entropy labels must be integers in [0, {classes}), "
                        f"got dtype {array.dtype}{span}{cast}"
                    )
                if array.shape[1:] != tuple(positions):
                    raise TrainerError(_target_forms(self.model.output_shape, array.shape))
                if array.shape[0] != n:
                    raise TrainerError(f"got {n} inputs but {array.shape[0]} targets")
                return array.astype(np.int64)
            elif array.shape[1:] != self.model.output_shape:
                raise TrainerError(_target_forms(self.model.output_shape, array.shape))
        elif array.shape[1:] != self.model.output_shape:
            if array.ndim == 1 and self.model.output_shape == (1,):
                array = array.reshape(-1, 1)
            else:
                ids = array.ndim == 1 and array.dtype.kind in "iu" and len(self.model.output_shape) == 1
                hint = "; class ids (n,) need objective='cross-entropy'" if ids else ""
                raise TrainerError(
                    f"targets must have shape {_mse_target_shapes(self.model.output_shape)} (n = {n}, "
                    f"the inputs' rows; the model's output shape is {self.model.output_shape}), "
                    f"got {tuple(array.shape)}{hint}"
                )
        if array.shape[0] != n:
            raise TrainerError(f"got {n} inputs but {array.shape[0]} targets")
        return _real_array(array, self.model.dtype, "targets")

    def _training_data(
        self, x: npt.ArrayLike, y: npt.ArrayLike, consequence: str = _TRAINED_ON
    ) -> tuple[Inputs, Targets]:
        """Inputs and targets as :meth:`_x` and :meth:`_y` read them, refused when not finite
        (``consequence``: what such values would do)."""
        xs, ys = self._x_and_y(x, y)
        _finite_for_training(xs, "inputs", consequence)
        _finite_for_training(ys, "targets", consequence)
        return xs, ys

    def batches(
        self, x: Inputs, y: Targets, batch_size: int, *, shuffle: bool, epoch: int, drop_last: bool = False
    ) -> Iterator[tuple[Inputs, Targets]]:
        """Minibatches ``(x[index], y[index])`` of ``batch_size`` rows (the last may be smaller;
        with ``drop_last`` it is left out, as torch's ``DataLoader(drop_last=True)``), copies taken
        along the first axis of ``x`` ``(n, ...)`` and ``y`` ``(n, ...)``; with ``shuffle`` in the
        order ``np.random.default_rng([seed, epoch]).permutation(n)``, else in row order
        (:func:`torchlean.batches.minibatches`, which gives a loop of your own the same
        minibatches). ``x`` and ``y`` are used as given (:meth:`fit` checks
        them first).

        Raises:
            TrainerError: ``batch_size`` not an int >= 1, or ``epoch`` not an int >= 0 (bools
                refused), or ``shuffle`` or ``drop_last`` neither a ``bool`` nor a ``numpy.bool_``,
                when the iteration starts.
        """
        try:  # minibatches checks the settings; the trainer's callers expect its error type
            batches = minibatches(
                x, y, batch_size=batch_size, shuffle=shuffle, seed=self.seed, epoch=epoch, drop_last=drop_last
            )
        except BatchError as error:
            raise TrainerError(str(error)) from None
        for xb, yb in batches:  # noqa: UP028 - unpacked: minibatches yields tuples of any length
            yield xb, yb

    # ----------------------------------------------------------------------------- execution

    def _graph(self, batch_shape: tuple[int, ...], *, with_loss: bool) -> _GraphStep:
        """The accepted program for ``batch_shape`` (with the loss when training). The last
        ``GRAPH_CACHE_SIZE`` programs used are kept: each holds its schedule and bound kernels (no
        copy of the weights since review144 F2), so a serving loop predicting on many batch
        lengths would otherwise grow without bound."""
        key = (batch_shape, with_loss)
        step = self._graphs.pop(key, None)
        if step is not None:
            self._graphs[key] = step  # most recently used last
        else:
            ops = GraphOps(fuse_linear=True, training=with_loss)
            x = ops.input(batch_shape)
            params = ops.params(self.model)
            out = self.model.layer.forward(ops, params, x, training=with_loss)
            self._check_output(tuple(ops.shape(out)), batch_shape[0])  # once, when lowered
            if with_loss:
                target = ops.input((batch_shape[0], *self.model.output_shape))
                out = _loss(ops, self.objective, out, target)
            lowered = ops.lowered(out)
            session = self.open()
            profile = session.effective_profile(grad_enabled=with_loss)  # eval: no_grad policy (review93 L1)
            plan, problems, notes, refused = _graph_verdicts(profile, lowered.built.graph)
            eager = []  # the ops the step runs beside the graph, each refused once (review154 L1)
            if lowered.dropout_masks:  # drawn under the caller's gradient mode, as here
                eager += _preflight(session, (BackendOp.BERNOULLI_MASK,), is_grad_enabled(), _DROPOUT_NEED)
            if lowered.running_updates:
                statistics = [op for op in RUNNING_STATISTICS_OPS if op not in refused]
                eager += _preflight(session, statistics, False, _RUNNING_STATISTICS_NEED)
            if plan is None or eager:
                raise _graph_refusal(self.profile.name, problems, notes, eager)
            program = GraphProgram(lowered.built.graph, lowered.built.payloads, plan,
                                   lowered.param_nodes, lowered.payload_params, lowered.statistic_params)
            step = _GraphStep(program, lowered.output, lowered.dropout_masks, lowered.running_updates,
                              lowered.embedding_indices)
            # evict the least recently used until there is room: threads predicting on one trainer
            # may race here (review77 F4: a KeyError), and two that both found room left one entry
            # too many for good with a single eviction (review155 L3)
            while self._graphs and len(self._graphs) >= GRAPH_CACHE_SIZE:
                with contextlib.suppress(RuntimeError):  # the dict changed size while iterated
                    oldest = next(iter(self._graphs), None)
                    if oldest is not None:
                        self._graphs.pop(oldest, None)
            self._graphs[key] = step
        return step

    def _record_graph_kernels(self, step: _GraphStep) -> None:
        """Remember newly used graph kernels once nothing but their program (and the eager ops
        :func:`_preflight` accepted) can refuse the step: just before the step's dropout masks
        are drawn and its program runs, not when its graph is accepted (review93); with
        ``show_backend``, print each one's report lines on first use through the session, which
        prints each capsule once (:meth:`Session.report`), in the order of :attr:`selected`. Once
        per step program: later calls return at once (it runs on every minibatch)."""
        if step.recorded:
            return
        session = self.open()
        known = {kernel.capsule.identity for kernel in self.selected}
        for kernel in step.program.plan.kernels:
            identity = kernel.capsule.identity
            if identity not in known:
                known.add(identity)
                session.report(kernel)
                self._graph_kernels.append(kernel)
                continue
            for index, listed in enumerate(self._graph_kernels):  # review147 F4, as the session's
                if listed.capsule.identity == identity and gradient_acceptance_of(listed, kernel):
                    self._graph_kernels[index] = kernel
        step.recorded = True

    def _loss_and_gradients(
        self, params: list[Tensor], xb: Inputs, yb: Targets
    ) -> tuple[Tensor, dict[int, Array]]:
        """The minibatch loss, with its gradients accumulated into ``params``' ``.grad``, and the
        next values of the buffers the forward program changed, by parameter index."""
        # an output of shape () (one number per sample) has no class axis; only MSE takes it
        classes = self.model.output_shape[-1] if self.model.output_shape else 1
        target = _loss_operand(self.objective, yb, classes, self.model.dtype, self.label_smoothing)
        if self.config.execution is ExecutionMode.TYPED_GRAPH:
            step = self._graph(tuple(xb.shape), with_loss=True)
            if step.masks or step.updates or step.indices:
                return self._graph_loss_with_masks_and_buffers(step, params, xb, target)
            self._record_graph_kernels(step)
            return step.program.run_and_backward([Tensor(xb), Tensor(target)], params, step.output), {}
        ops = EagerOps()
        device = self.config.device.label
        out = self.model.layer.forward(ops, params, Tensor(xb, device=device), training=True)
        self._check_output(out.shape, xb.shape[0])  # a tuple comparison
        loss = _loss(ops, self.objective, out, Tensor(target, device=device))
        loss.backward()
        return loss, self._buffer_values(params, ops.buffer_updates)

    def _graph_loss_with_masks_and_buffers(
        self, step: _GraphStep, params: list[Tensor], xb: Inputs, target: Array
    ) -> tuple[Tensor, dict[int, Array]]:
        """:meth:`_loss_and_gradients` for a typed graph with dropout masks, batch norm updates or
        embedding indices.

        The masks are drawn first, in forward order, by the session's ``bernoulli_mask`` (the
        capsule and session counters eager dropout uses, as nothing else in a step draws), then
        the program runs forward and backward; each batch norm's running statistics are then
        updated as eager execution updates them (:meth:`EagerOps.update_running_statistics`, in
        forward order) from the graph's value of the batch norm's input."""
        self._record_graph_kernels(step)  # before the masks: selected's order
        inputs = step.inputs(xb, target, self.model.dtype)
        keep = tuple(update.node for update in step.updates)
        loss, kept = step.program.run_and_backward_keeping(inputs, params, step.output, keep)
        ops = EagerOps()
        for update, x in zip(step.updates, kept, strict=True):
            ops.update_running_statistics(
                x, params[update.running_mean], params[update.running_var], momentum=update.momentum
            )
        return loss, self._buffer_values(params, ops.buffer_updates)

    def _buffer_values(
        self, params: list[Tensor], updates: Sequence[tuple[Tensor, Tensor]]
    ) -> dict[int, Array]:
        """``EagerOps.buffer_updates`` as host arrays in the model dtype, by parameter index.

        Raises:
            TrainerError: an update of a tensor that is not one of the model's buffers (a custom
                layer passing a computed value or a trainable parameter as running statistics).
        """
        try:
            positions = self.model.buffer_positions(params, updates)
        except StateError as error:
            raise TrainerError(str(error)) from None
        dtype = self.model.dtype
        return {position: np.array(value.numpy(), dtype=dtype) for position, value in positions.items()}

    def _leaf_parameters(self, device: str) -> list[Tensor]:
        """The model parameters as leaf tensors, trainable ones requiring gradients (not those of a
        frozen group, as torch's ``requires_grad_(False)``: the tape computes no gradient for them,
        nor for ops whose operands all require none): on the host,
        views of the parameter arrays (the optimizer returns new arrays and buffers get new ones, so
        nothing writes through them); on a device, copies there."""
        assert self._optimizer is not None  # created when the session opened
        optimizer = self._optimizer
        wanted = (spec.trainable and not optimizer.is_frozen(i) for i, spec in enumerate(self.model.specs))
        pairs = zip(self.model.parameters, wanted, strict=True)
        if device == "cpu":
            # np.require keeps a 0-d parameter 0-d (np.ascontiguousarray made it (1,): review174 F2)
            # a plain C-contiguous array (what the optimizer stores) is what np.require returns
            # unchanged: it is asked only for the others (about 0.4 us a parameter; review183 F5)
            return [Tensor._make(p if type(p) is np.ndarray and p.flags.c_contiguous
                                 else np.require(p, requirements="C"), trainable) for p, trainable in pairs]
        return [Tensor(p, requires_grad=trainable, device=device) for p, trainable in pairs]

    @one_at_a_time("step", TrainerError)
    def step(self, xb: npt.ArrayLike, yb: npt.ArrayLike) -> float:
        """One optimizer update on a minibatch; returns the minibatch's mean loss (:class:`Objective`)
        as a Python float, computed in the model dtype before the update.

        ``xb`` is ``(b, *input_shape)`` and ``yb`` takes the forms :meth:`fit` accepts; both are
        cast to the model dtype (ids and cross-entropy class labels are kept as int64). Opens the
        session on first use (:meth:`open`). The new weights and optimizer state are stored
        together, Ctrl-C held back meanwhile, as :meth:`fit` says.

        Raises:
            TrainerError: called while this trainer's :meth:`fit` or another ``step`` runs (in
                another thread, or from ``fit``'s ``on_batch``: review237 F3), naming it and where,
                before anything else; a model without parameters; bad shapes or labels, or values
                that are not finite (as :meth:`fit`); an empty minibatch (its mean loss
                is undefined: torch's would be NaN, and an update with it would fill the
                optimizer state with NaN); a minibatch of one sample for a batch norm layer that
                sees one value per channel (as :meth:`fit`); a profile whose policy has VJP mode
                none (inference only); the errors of :meth:`open`.
            SessionError: as :meth:`open`; a kernel refused before it runs (an op the profile selects no
                capsule for: eager at the op's first use, typed graph when its graph is accepted,
                with the dropout mask's and batch norm's update ops, before any kernel runs).
            IRError: typed graph: a layer it cannot lower (a custom layer whose ops the IR lacks),
                before any update.
        """
        self._require_parameters()
        x, y = self._training_data(xb, yb)  # before the session opens, as fit (review132 F4)
        if x.shape[0] == 0:
            raise TrainerError(
                f"step needs at least one sample; got an empty minibatch (x of shape {x.shape})"
            )
        self._refuse_single_sample_batches(x.shape[0], x.shape[0], data="the minibatch holds")
        self._open_for_training("step")
        return self._update(x, y)

    def _require_parameters(self) -> None:
        """Training needs a parameter (torch's optimizers refuse an empty parameter list); the
        backward pass of a model without one failed with an autograd error about the loss."""
        if not any(spec.trainable for spec in self.model.specs):
            raise TrainerError(
                f"the model has no parameters to train ({self.model.layer.describe()}); add a layer "
                "with weights (nn.linear, nn.conv2d, ...); predict and evaluate need none"
            )

    def _update(self, x: Inputs, y: Targets, refuse_non_finite_at: tuple[int, int] | None = None) -> float:
        """:meth:`step` on a minibatch already checked and cast by :meth:`_training_data`
        (:data:`Inputs` and :data:`Targets`, at least one row). With ``refuse_non_finite_at`` (the
        step's place, its epoch and minibatch from 0), a loss, new weights or new optimizer moments that
        are not finite raise :class:`NonFiniteStepError` before anything is stored
        (``fit(stop_on_non_finite=True)``)."""
        session = self.open()
        assert self._optimizer is not None
        # the masks this step draws count once its update is stored (review70 F1): an earlier step
        # that was interrupted (Ctrl-C, an error) before its store gives its draws back first;
        # each of these two lines leaves a consistent state if interrupted before the other
        if self._unstored_from is not None:
            session.random_counter = self._unstored_from
        self._unstored_from = session.random_counter
        with session, enable_grad():  # a caller's no_grad (asyncio.to_thread carries it) does not
            device = self.config.device.label  # reach the step's own backward (review77 F5)
            params = self._leaf_parameters(device)
            loss, buffers = self._loss_and_gradients(params, x, y)
            grads = [None if p.grad is None else p.grad.numpy() for p in params]
        if self.config.max_grad_value is not None:  # before the norm, as torch's loops call them
            grads = clip_grad_value(grads, self.config.max_grad_value)
        norm = self.grad_norm
        if self.config.max_grad_norm is not None:
            grads, norm = clip_grad_norm(grads, self.config.max_grad_norm)
        prepared = self._optimizer._prepare_step(self.model.parameters, grads)
        updated = list(prepared.params)
        for position, value in buffers.items():
            updated[position] = value
        optimizer, model = self._optimizer, self.model
        if refuse_non_finite_at is not None:
            moments = [*prepared.first, *prepared.second, *prepared.third]
            self._refuse_non_finite(float(loss.numpy()), updated, moments, refuse_non_finite_at)

        def store() -> None:  # weights, optimizer state and masks drawn: all stored or none (review61 F2)
            optimizer._commit_step(prepared)
            model.parameters = updated
            self.grad_norm = norm
            self._unstored_from = None

        store_together(store)
        return float(loss.numpy())

    def _refuse_non_finite(
        self, loss: float, updated: Sequence[Array], state: Sequence[Array | None], where: tuple[int, int]
    ) -> None:
        """Raise :class:`NonFiniteStepError` when ``loss``, a value of the ``updated`` model or of
        the optimizer's new ``state`` (its moment buffers: an RMSprop second moment can overflow
        while the weights stay finite, and then never move them again; review186 F2) is not
        finite."""
        bad = sum(int(np.count_nonzero(~np.isfinite(w))) for w in updated)
        bad_state = sum(int(np.count_nonzero(~np.isfinite(b))) for b in state if b is not None)
        if math.isfinite(loss) and not bad and not bad_state:
            return
        total = sum(int(np.size(w)) for w in updated)
        of_state = f" and {bad_state} of the optimizer's state values" if bad_state else ""
        update = f"the update would make {bad} of the model's {total} values{of_state} not finite"
        if not bad and not bad_state:  # review214 F6: "would make 0 of ... not finite" read as a fault
            update = "the update would leave the model's values finite"
        found = f"the loss is {loss}" if not math.isfinite(loss) else "the loss is finite"
        epoch, minibatch = where
        error = NonFiniteStepError(
            f"stop_on_non_finite: at epoch {epoch}, minibatch {minibatch} (both from 0, as on_batch's "
            f"epoch), step {self.steps_done + 1} (from 1), {found} and {update}; it was not stored: the "
            f"model and the optimizer are those of the {_count(self.steps_done, 'step')} before it (lower "
            "the learning rate, or clip the gradients: RunConfig(max_grad_norm=...))"
        )
        error.epoch, error.minibatch, error.step, error.loss = epoch, minibatch, self.steps_done + 1, loss
        error.values, error.state_values, error.total = bad, bad_state, total
        raise error

    @one_at_a_time("fit", TrainerError)
    def fit(
        self,
        x: npt.ArrayLike,
        y: npt.ArrayLike,
        *,
        epochs: int = 1,
        batch_size: int = 32,
        shuffle: bool = True,
        drop_last: bool = False,
        on_batch: Callable[[int, float], None] | None = None,
        lr_schedule: Callable[[int], float] | None = None,
        schedule_by: str = "epoch",
        validation: tuple[npt.ArrayLike, npt.ArrayLike] | None = None,
        early_stopping: EarlyStopping | None = None,
        stop_on_non_finite: bool = False,
    ) -> list[float]:
        """Train for ``epochs`` more epochs; returns the mean training loss of each epoch (of the
        epochs it ran, when early stopping ends it sooner).

        ``stop_on_non_finite=True`` (Keras' ``TerminateOnNaN``, but before the harm) checks each
        step's loss and the weights and optimizer moments its update would store: when one is not
        finite the update is not stored and the fit raises :class:`NonFiniteStepError`, naming the
        epoch and the minibatch, with the model and the optimizer as the steps before it left them
        (with ``early_stopping``'s ``restore_best_weights``, the best epoch's weights restored, as
        a note on the error says); the refused epoch is not done, as after a Ctrl-C (torch, and
        the default here, train on: every later update is NaN).

        Epoch ``e`` (counted over the trainer's lifetime, so calling ``fit`` twice continues the
        schedule) shuffles with ``(seed, e)``. ``on_batch(epoch, loss)`` is called after each
        step (progress bars hook in here). ``drop_last`` leaves out each epoch's last minibatch
        when it holds fewer than ``batch_size`` samples (torch's ``DataLoader(drop_last=True)``;
        with shuffling, those samples may take part in later epochs); an epoch's loss is then the
        mean over the samples it trained on. ``lr_schedule(e)``, when given, is the learning rate
        of epoch ``e``, set before its first step (an epoch-wise scheduler, as torch's
        ``StepLR``/``CosineAnnealingLR`` stepped once per epoch: ``lambda e: 0.1 * 0.5 ** (e // 10)``),
        checked as the optimizer's ``lr`` (finite, >= 0, also in binary32: the original's rule,
        so ``1e300`` is refused for a float64 model too); :attr:`lr` reads it. Without it, and
        after ``fit`` returns or fails, the optimizer's own ``lr`` applies (the rate it had before a
        scheduled ``fit``; without a schedule, a ``trainer.optimizer.set_lr(...)`` made during the
        fit, e.g. from ``on_batch``, stays, as torch's ``param_group["lr"] = ...``). With
        ``schedule_by="step"``, ``lr_schedule(t)`` is instead the rate of optimizer step ``t``
        (from 0, counted over the trainer's lifetime: :attr:`steps_done`), set before each step,
        as a torch scheduler stepped after every ``optimizer.step()`` (``LambdaLR``, the warmup
        and cosine schedules of transformer training: :func:`torchlean.optim.warmup_cosine`).

        ``validation=(x_val, y_val)`` (Keras' ``validation_data``; the forms :meth:`evaluate`
        takes, checked as ``x`` and ``y`` are, finiteness included, before any step) is evaluated
        after each epoch, in evaluation mode (dropout off, batch norm's running statistics used and
        left unchanged, no gradients, no random draws), outside the training path: the
        optimizer, its learning rate, the shuffle order and the session's random stream are
        untouched, so the training losses and weights are bit for bit those of a ``fit`` without
        it. Each epoch's validation loss is the training objective (``label_smoothing``
        included, as Keras' ``val_loss`` uses the compiled loss) computed in float64 from the
        model's outputs over the whole validation set (the mean over every prediction, or every
        output element for MSE), and its metric is :meth:`evaluate`'s (``accuracy``, or ``mse``
        in ``y_val``'s units); :attr:`history` holds them (a :class:`~torchlean.validation.History`),
        and for MSE :attr:`val_outputs` the last epoch's outputs for ``x_val``.
        ``early_stopping`` (an :class:`~torchlean.validation.EarlyStopping`, which needs
        ``validation``) ends the fit after the epoch that makes ``patience`` consecutive epochs
        without an improvement of its ``monitor`` (``val_loss``: strictly lower, by more than its
        ``min_delta``; ``val_accuracy``, cross-entropy only: higher by more than ``min_delta``;
        ``val_mse``, MSE only: as ``val_loss``, which it equals; Keras 3's rule, in
        :mod:`torchlean.validation`) and, with ``restore_best_weights`` (its
        default), leaves the model with the weights of the best epoch, whether or not it stopped
        early (Keras 3's ``EarlyStopping(restore_best_weights=True)``; the optimizer state,
        :attr:`epochs_done` and :attr:`steps_done` stay those of the last epoch run). Its state
        lives for this call: a later ``fit`` starts counting afresh, as a Keras callback does.

        Its steps run with gradients on whatever the caller's grad mode (a ``no_grad`` block around
        ``fit``, or one ``asyncio.to_thread`` carries into its worker, changes nothing), as they run
        in the trainer's own session. An exception raised by ``on_batch`` or ``lr_schedule``
        propagates unchanged. A ``fit`` that stops mid-epoch (such an exception, a refused step,
        ``KeyboardInterrupt``) keeps the updates it made (a ``stop_on_non_finite`` refusal with early
        stopping's ``restore_best_weights`` then restores the best epoch's weights);
        :attr:`epochs_done` counts whole epochs only, so the next ``fit`` starts that epoch again with
        its number (its shuffle order and scheduled learning rate), as a restarted torch loop over the
        same epoch range would. An epoch whose every update was stored counts as done even when the
        stop comes after its last update (a Ctrl-C held back through that update's store, an
        ``on_batch`` raising on the last minibatch): its mean loss is then not in :attr:`history` and
        it is not validated, but it is not trained twice. Each update is stored at once: its new
        weights and the optimizer's new state (step counts, moments) are computed first and then
        stored together, with Ctrl-C (SIGINT) held back for those few assignments (in the main thread,
        the only one Python delivers it to), so after a ``KeyboardInterrupt`` the model and the
        optimizer are those of an uninterrupted run of :attr:`steps_done` steps, never a step's
        moments without its weights; ``model.state()`` and ``optimizer.state_dict()`` saved in an
        ``except KeyboardInterrupt:`` handler resume that run. (An exception raised by another
        signal's handler, say ``SIGALRM``'s, is not held back.)

        ``x`` is ``(n, *input_shape)`` (integer ids for a model starting with an embedding); ``y`` is
        ``(n, *output_shape)`` for MSE (``(n,)`` too when the output shape is ``(1,)``), and integer
        class labels ``(n,)`` in ``[0, classes)`` or one-hot ``(n, classes)`` for cross-entropy
        (for ``(..., classes)`` outputs, labels ``(n, ...)`` or one-hot ``(n, ..., classes)``, the
        loss the mean over every position; float rows are taken as class probabilities, soft
        labels as torch's probability targets, unchecked). An epoch's loss is the mean of its minibatch
        losses weighted by minibatch size, a float. ``x`` and ``y`` are checked (finiteness
        included) once, before the first step, and read in place after that where they already
        have the dtype training uses (no copy of the data set, as a torch ``TensorDataset`` holds
        its tensors): leave them unchanged until ``fit`` returns (an ``on_batch`` that writes NaN
        into ``x`` trains on it; review179 F5).

        Raises:
            TrainerError: called while this trainer's ``fit`` or :meth:`step` runs (in another
                thread, or from this fit's own ``on_batch`` or ``lr_schedule``: a trainer runs one
                at a time; review237 F3), naming it and where, before anything else; a model
                without parameters (``the model has no parameters to train (...)``); bad shapes
                or labels (``inputs must have shape (n, 4), got (10, 5)``, ``got 10 inputs but 5
                targets``, labels outside ``[0, classes)`` or not integers,
                data that is not a rectangular array of real numbers; ``None`` or a string for
                ``x`` or ``y``: ``targets: None of type NoneType is not target data (...)``, also
                in ``predict``, ``evaluate`` and ``step``); values beyond the model
                dtype's range (``1e39`` for float32) or NaN or infinite values in ``x`` or ``y``
                (one step on them makes every parameter NaN; refused before any step); no samples
                (``n == 0``); a batch norm layer that sees one value per channel per sample
                (``nn.batch_norm1d`` on ``(C,)`` or ``(C, 1)`` samples, ``nn.batch_norm2d`` on
                ``(C, 1, 1)``) and a minibatch of one sample (``batch_size=1``, or
                ``n % batch_size == 1`` without ``drop_last``: torch refuses such a step too);
                ``epochs`` or ``batch_size`` not an int (bools refused) >= 1 (``epochs must be an
                int >= 1, got 1.5``); a ``shuffle`` or ``drop_last`` that is neither a ``bool`` nor
                a ``numpy.bool_``; ``drop_last`` with fewer samples than ``batch_size`` (no
                minibatch); an ``on_batch`` or ``lr_schedule`` that is not callable, a
                ``schedule_by`` other than ``"epoch"`` or ``"step"``, or ``"step"`` without an
                ``lr_schedule`` (checked before any step); a ``validation`` that is not a pair
                ``(x_val, y_val)`` or whose data would be refused as training data (``validation
                data: inputs must have shape (n, 4), got (10, 5)``), or holds no sample; an
                ``early_stopping`` that is not an ``EarlyStopping`` or ``None``, given without
                ``validation``, or monitoring a quantity the objective does not produce
                (``val_accuracy`` for MSE, ``val_mse`` for cross-entropy); a
                learning rate from ``lr_schedule`` that is not a real number or that
                the optimizer refuses (before that epoch's, or step's, first update; earlier
                updates stay); a profile whose policy has VJP mode none (inference only); the
                errors of :meth:`open`; a ``stop_on_non_finite`` that is not a bool.
            NonFiniteStepError: with ``stop_on_non_finite``, a step whose loss, new weights or new
                optimizer moments are not finite (its update not stored).
            SessionError: as :meth:`open`; a kernel refused before it runs (an op the profile selects no
                capsule for: eager at the op's first use, typed graph when its graph is accepted,
                with the dropout mask's and batch norm's update ops, before any kernel runs).
            IRError: as :meth:`step`.
        """
        epochs = checked_int(epochs, "epochs", 1, TrainerError)
        batch_size = checked_int(batch_size, "batch_size", 1, TrainerError)
        if not is_bool(shuffle):
            raise TrainerError(f"shuffle must be a bool, got {shuffle!r}")
        if not is_bool(drop_last):
            raise TrainerError(f"drop_last must be a bool, got {drop_last!r}")
        if not is_bool(stop_on_non_finite):
            raise TrainerError(f"stop_on_non_finite must be a bool, got {stop_on_non_finite!r}")
        if on_batch is not None and not callable(on_batch):
            raise TrainerError(
                f"on_batch must be a callable on_batch(epoch, loss) or None, got {on_batch!r} of type "
                f"{type(on_batch).__name__}"
            )
        if lr_schedule is not None and not callable(lr_schedule):
            raise TrainerError(
                f"lr_schedule must be a callable lr_schedule(epoch or step) -> learning rate or None, got "
                f"{lr_schedule!r} of type {type(lr_schedule).__name__}"
            )
        if not isinstance(schedule_by, str) or schedule_by not in ("epoch", "step"):  # review239 F7
            raise TrainerError(f"schedule_by must be 'epoch' or 'step', got {schedule_by!r}")
        if schedule_by == "step" and lr_schedule is None:
            raise TrainerError("schedule_by='step' schedules nothing without an lr_schedule")
        per_step = lr_schedule if schedule_by == "step" else None
        per_epoch = lr_schedule if schedule_by == "epoch" else None
        shuffle, drop_last = bool(shuffle), bool(drop_last)
        self._require_parameters()
        xs, ys = self._training_data(x, y)
        if xs.shape[0] == 0:
            raise TrainerError("no training samples; check the dataset and batch size")
        self._refuse_single_sample_batches(xs.shape[0], batch_size, drop_last=drop_last)
        if drop_last and xs.shape[0] < batch_size:
            raise TrainerError(
                f"drop_last=True with batch_size={batch_size} leaves no minibatch of the {xs.shape[0]} "
                f"sample{'s' if xs.shape[0] > 1 else ''} (accepted: a batch_size of at most "
                f"{xs.shape[0]}, or drop_last=False)"
            )
        held_out = None if validation is None else self._validation_data(validation)
        if early_stopping is not None and not isinstance(early_stopping, EarlyStopping):
            raise TrainerError(
                f"early_stopping must be a validation.EarlyStopping(patience=...) or None, got "
                f"{early_stopping!r}"
            )
        if early_stopping is not None and held_out is None:
            watched = _WATCHED[early_stopping.monitor]
            raise TrainerError(f"early_stopping monitors {watched}: give validation=(x_val, y_val) too")
        if early_stopping is not None and early_stopping.monitor not in self._monitors():
            accepted = ", ".join(map(repr, self._monitors()))
            raise TrainerError(
                f"early_stopping monitors {early_stopping.monitor!r}, which this fit's objective "
                f"({self.objective.value}) does not produce (accepted: {accepted})"
            )
        self._open_for_training("fit")
        assert self._optimizer is not None
        base_lr = self._optimizer.config.lr
        history: list[float] = []
        epochs_run: list[int] = []
        monitor = ValLossMonitor.of(early_stopping)
        on_loss = early_stopping is None or early_stopping.monitor == "val_loss"
        val_losses: list[float] = []
        metrics: list[float] = []
        self.val_outputs = None
        stopped: int | None = None
        steps_per_epoch = xs.shape[0] // batch_size if drop_last else -(-xs.shape[0] // batch_size)
        epoch_started: tuple[int, int] | None = None  # (epoch, steps_done before it) while one runs
        restored_on_refusal: int | None = None
        try:
            for epoch in range(self.epochs_done, self.epochs_done + epochs):
                epoch_started = (epoch, self.steps_done)
                if per_epoch is not None:
                    self._set_scheduled_lr(per_epoch, epoch)
                total, count = 0.0, 0
                for minibatch, (xb, yb) in enumerate(self.batches(
                    xs, ys, batch_size, shuffle=shuffle, epoch=epoch, drop_last=drop_last
                )):
                    if per_step is not None:
                        self._set_scheduled_lr(per_step, self._optimizer.steps)
                    # xs and ys are checked: no check per minibatch
                    where = (epoch, minibatch) if stop_on_non_finite else None
                    loss = self._update(xb, yb, where)
                    total += loss * xb.shape[0]
                    count += xb.shape[0]
                    if on_batch is not None:
                        on_batch(epoch, loss)
                history.append(total / count)
                epochs_run.append(epoch)
                self.epochs_done = epoch + 1
                epoch_started = None
                if held_out is not None:
                    val_loss, metric = self._validate(held_out)
                    monitor.update(val_loss if on_loss else metric, self.model.state)
                    val_losses.append(val_loss)
                    metrics.append(metric)
                    if monitor.should_stop:
                        stopped = epoch
                        break
        except BaseException as error:
            # stopped after the epoch's last update was stored (a Ctrl-C held back through that store
            # lands right after it; an on_batch that raises on the last minibatch): the epoch is done,
            # so a resumed run does not train it twice (review71 F2)
            if epoch_started is not None and self.steps_done - epoch_started[1] == steps_per_epoch:
                self.epochs_done = epoch_started[0] + 1
            best = monitor.best_weights
            if isinstance(error, NonFiniteStepError) and best is not None and monitor.best is not None:
                # early stopping's best weights are not lost with the refused fit (review186 F1)
                self.model.load_state(best)
                restored_on_refusal = epochs_run[monitor.best]
                error.add_note(f"early stopping restored the weights of epoch {restored_on_refusal}, its "
                               "best (restore_best_weights)")
            raise
        finally:
            if lr_schedule is not None:  # the schedule's rates end with the fit; a set_lr without
                self._optimizer.set_lr(base_lr)  # one stays, as torch's param_group["lr"] (review54 F1)
            self.history = self._fit_history(
                epochs_run, history, held_out, monitor, (val_losses, metrics), stopped, restored_on_refusal
            )
        best = monitor.best_weights
        if best is not None and monitor.best is not None:
            self.model.load_state(best)
            restored = epochs_run[monitor.best]
            self.history = self._fit_history(
                epochs_run, history, held_out, monitor, (val_losses, metrics), stopped, restored
            )
        return history

    def _fit_history(
        self,
        epochs: list[int],
        losses: list[float],
        held_out: _Validation | None,
        monitor: ValLossMonitor,
        measured: tuple[list[float], list[float]],
        stopped: int | None,
        restored: int | None,
    ) -> History:
        """:attr:`history` of a fit that ran ``epochs`` (lifetime numbers) with these results
        (``measured``: the validation losses and metrics; ``monitor``: the best epoch's)."""
        if held_out is None:
            return History(tuple(epochs), tuple(losses))
        accuracy = self.objective is Objective.CROSS_ENTROPY
        val_losses, metrics = measured
        return History(
            tuple(epochs),
            tuple(losses),
            val_loss=tuple(val_losses),
            val_accuracy=tuple(metrics) if accuracy else None,
            val_mse=None if accuracy else tuple(metrics),
            best_epoch=None if monitor.best is None else epochs[monitor.best],
            stopped_epoch=stopped,
            restored_epoch=restored,
        )

    def _monitors(self) -> tuple[str, ...]:
        """The quantities early stopping can monitor in a fit of this objective."""
        metric = "val_accuracy" if self.objective is Objective.CROSS_ENTROPY else "val_mse"
        return ("val_loss", metric)

    def _validation_data(self, validation: object) -> _Validation:
        """``fit``'s ``validation`` checked as training data is (:meth:`_training_data`).

        Raises:
            TrainerError: not a pair ``(x_val, y_val)``; the refusals of :meth:`_training_data`,
                prefixed ``validation data: ``; no samples.
        """
        if not isinstance(validation, tuple | list) or len(validation) != 2:
            if isinstance(validation, tuple | list):
                got = _pair_shown(validation)
            elif isinstance(validation, np.ndarray):  # its shape, not its repr (review28 F6)
                got = f"an array of shape {validation.shape}"
            elif isinstance(validation, Mapping):
                got = f"a {type(validation).__name__} with keys {', '.join(map(repr, list(validation)[:5]))}"
            else:
                got = _value_shown(validation)
            raise TrainerError(
                "validation must be a pair (x_val, y_val) of inputs and targets, as fit's x and y, or None, "
                f"got {got}"
            )
        x, y = validation
        try:
            xs, ys = self._training_data(x, y, "the validation loss would be NaN or infinite")
        except TrainerError as error:
            raise TrainerError(f"validation data: {error}") from None
        if xs.shape[0] == 0:
            raise TrainerError("validation data: no samples (accepted: at least one)")
        if ys.dtype.kind in "iu":
            return _Validation(xs, ys)
        # the targets as given, in float64 (read as _y read them: a bfloat16 torch tensor, review179 F3)
        return _Validation(xs, _rectangular(y, "targets").astype(np.float64).reshape(ys.shape))

    def _validate(self, held_out: _Validation) -> tuple[float, float]:
        """The validation loss and metric (accuracy or mse, as :meth:`evaluate`) of ``held_out``
        in evaluation mode, float64, from one pass over it in chunks of :data:`_EVALUATION_CHUNK`
        (predict's batch); for MSE the outputs are kept in :attr:`val_outputs`."""
        session = self.open()
        chunks = self._outputs(session, held_out.x, _EVALUATION_CHUNK)
        if self.objective is Objective.MSE:  # evaluate's mse, bit for bit: one mean over every element
            self.val_outputs = np.concatenate(list(chunks))
            mse = float(np.mean(squared_errors(self.val_outputs, held_out.y)))
            return mse, mse
        total, hits, start = 0.0, 0, 0
        for logits in chunks:  # a chunk of logits at a time (a vocabulary's), as evaluate
            target = held_out.y[start : start + logits.shape[0]]
            start += logits.shape[0]
            total += float(np.sum(cross_entropy_terms(logits, target, self.label_smoothing)))
            labels = target if target.dtype.kind in "iu" else target.argmax(axis=-1)
            hits += _hits(logits, labels)
        labelled = held_out.y.dtype.kind in "iu"
        predictions = held_out.y.size if labelled else held_out.y.size // held_out.y.shape[-1]
        return total / predictions, hits / predictions

    def _set_scheduled_lr(self, lr_schedule: Callable[[int], float], when: int) -> None:
        """The optimizer's learning rate for epoch or step ``when``: ``lr_schedule(when)``, checked."""
        assert self._optimizer is not None
        lr = lr_schedule(when)
        try:
            self._optimizer.set_lr(lr)
        except OptimizerError as error:
            raise TrainerError(
                f"lr_schedule({when}) gave {lr!r}, which the optimizer refuses: {error}"
            ) from None

    def _refuse_single_sample_batches(
        self, n: int, batch_size: int, *, drop_last: bool = False, data: str = "the data hold"
    ) -> None:
        """Before any step: a batch norm layer that sees one value per channel per sample cannot
        train on a minibatch of one sample, which ``n`` samples in minibatches of ``batch_size``
        would reach (in :meth:`fit`, mid-epoch, after earlier updates; torch refuses such a step
        too, "Expected more than 1 value per channel when training"); ``drop_last`` leaves the
        last incomplete minibatch out (one sample alone is refused as such)."""
        layer = self.model.layer.needs_paired_samples(self.model.input_shape)
        trained = n - n % batch_size if drop_last and n > 1 else n
        if layer is None or (batch_size > 1 and trained % batch_size != 1):
            return
        if n == 1:
            detail, accepted = f"{data} 1 sample", "at least 2 samples"
        elif batch_size == 1:
            detail, accepted = "batch_size=1", "a batch_size >= 2 that leaves no sample over alone"
        else:
            detail = f"{n} samples in minibatches of {batch_size} leave a last minibatch of 1"
            accepted = "a batch_size that leaves no sample over alone, drop_last=True, or drop one sample"
        raise TrainerError(
            f"{layer.describe()} trains on each minibatch's statistics and needs at least 2 samples in "
            f"every minibatch (as torch); {detail} (accepted: {accepted})"
        )

    def predict(self, x: npt.ArrayLike, *, batch_size: int = 256) -> Array:
        """Model outputs for ``x`` ``(n, *input_shape)`` (evaluation mode: dropout off, no gradients),
        ``(n, *output_shape)`` in the model dtype (``(0, *output_shape)`` for ``n == 0``); raw
        logits for cross-entropy models.

        Raises:
            TrainerError: inputs of the wrong shape (a single unbatched sample included), not
                real numbers or beyond the model dtype's range (NaN and infinite inputs are
                accepted and give NaN or infinite outputs; for a model that looks up ids, inputs
                that are not integers or hold an id out of range), or ``batch_size`` not an int >= 1
                (``batch_size must be an int >= 1, got 0``); the errors of :meth:`open`.
            SessionError: as :meth:`open`; a kernel refused before it runs (an op the profile selects no
                capsule for: eager at the op's first use, typed graph when its graph is accepted,
                under the no-grad policy as eager inference).
            IRError: a layer the typed graph cannot lower (a custom layer whose ops the IR lacks).
        """
        batch_size = checked_int(batch_size, "batch_size", 1, TrainerError)
        xs = self._x(x)  # before the session opens: a refused call leaves an unrun trainer copyable
        outputs = list(self._outputs(self.open(), xs, batch_size))
        if not outputs:
            return np.zeros((0, *self.model.output_shape), dtype=self.model.dtype)
        return np.concatenate(outputs)

    def _outputs(self, session: Session, xs: Inputs, batch_size: int) -> Iterator[Array]:
        """The model's evaluation-mode outputs for checked inputs ``xs``, ``batch_size`` rows at a
        time, the parameters wrapped (uploaded, on a device) once for all of them."""
        with session, no_grad():
            params = [Tensor(p, device=self.config.device.label) for p in self.model.parameters]
            for start in range(0, xs.shape[0], batch_size):
                xb = xs[start : start + batch_size]
                if self.config.execution is ExecutionMode.TYPED_GRAPH:
                    step = self._graph(tuple(xb.shape), with_loss=False)
                    self._record_graph_kernels(step)
                    feeds = step.inputs(xb, None, self.model.dtype) if step.indices else [Tensor(xb)]
                    out = step.program.run(feeds, params, step.output)
                else:
                    x_t = Tensor(xb, device=self.config.device.label)
                    out = self.model.layer.forward(EagerOps(training=False), params, x_t, training=False)
                    self._check_output(out.shape, xb.shape[0])  # a tuple comparison
                yield out.numpy()

    def _check_output(self, got: tuple[int, ...], rows: int) -> None:
        """Refuse a forward whose output is not ``(rows, *model.output_shape)``: a layer of one's
        own whose ``forward`` disagrees with its ``output_shape`` (review132 F10), which would
        otherwise give ``predict`` results of the wrong shape and ``evaluate`` scores of them.

        Raises:
            ShapeError: naming the layer and both shapes.
        """
        expected = (rows, *self.model.output_shape)
        if tuple(got) != expected:
            raise ShapeError(
                f"{self.model.layer.describe()} produced outputs of shape {tuple(got)}, but its "
                f"output_shape gives {expected} for {rows} rows (accepted: a forward that produces "
                "the shape output_shape declares)"
            )

    def evaluate(self, x: npt.ArrayLike, y: npt.ArrayLike) -> dict[str, float]:
        """``{"accuracy": ...}`` for cross-entropy, ``{"mse": ...}`` for MSE (float64 metrics).

        ``x`` is ``(n, *input_shape)`` (as :meth:`predict`) and ``y`` takes the forms :meth:`fit`
        accepts; accuracy is the fraction of predictions (rows, or every position of ``(...,
        classes)`` outputs) whose logits' argmax is the label, mse the mean
        over every output element of ``(prediction - y)**2`` in float64 (in ``y``'s units squared);
        NaN for an empty set. The label of a probability (or one-hot) target row is its argmax,
        the first largest entry, as ``torch.argmax``: a row of zeros (a position a loss of your own
        masks out) counts as class 0, so leave such rows out of ``x`` and ``y`` to score without
        them. A row whose outputs are
        not all finite (a diverged model's) predicts no class and counts as wrong (numpy's
        ``argmax`` would name the first NaN's class), as ``torchlean predict`` counts it.

        Raises:
            TrainerError: bad shapes or labels (as :meth:`fit`); the errors of :meth:`predict`.
            SessionError: as :meth:`open`; a kernel refused before it runs (an op the profile selects no
                capsule for: eager at the op's first use, typed graph when its graph is accepted,
                under the no-grad policy as eager inference).
        """
        xs, targets = self._x_and_y(x, y)  # the data before the session opens, as predict's (review132 F4)
        if self.objective is Objective.CROSS_ENTROPY:  # a chunk of logits at a time (a vocabulary's)
            session = self.open()
            labels = targets if targets.dtype.kind in "iu" else targets.argmax(axis=-1)
            hits, start = 0, 0
            for logits in self._outputs(session, xs, _EVALUATION_CHUNK):
                hits += _hits(logits, labels[start : start + logits.shape[0]])
                start += logits.shape[0]
            return {"accuracy": hits / labels.size if labels.size else math.nan}
        prediction = self.predict(xs).astype(np.float64)
        if prediction.shape[0] == 0:
            return {"mse": math.nan}
        target = _rectangular(y, "targets").astype(np.float64).reshape(targets.shape)  # as _y read them
        return {"mse": float(np.mean((prediction - target) ** 2))}
