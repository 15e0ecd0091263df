"""Layer descriptions: shapes, parameter specifications and forward programs.

A layer is an immutable description (``linear(4, 8)``); it knows its output shape for a given
per-sample input shape, the parameters it needs (:class:`ParamSpec`, in state order), and a
forward program written against :class:`torchlean.nn.ops.Ops`. Parameters are created by
:func:`torchlean.nn.model.build` with a seed, so the same seed gives the same weights.

Shapes here are per-sample (no batch axis). Forward programs receive batched values
``(batch, *input_shape)``; :class:`Linear` also accepts an unbatched vector. A linear layer is one
``linear`` op (``ops.linear``): one eager kernel, and one IR ``linear`` node in the trainer's typed
graph; :func:`torchlean.nn.lowering.lower_model` lowers it the way the original does (reshape a
vector to ``[1, n]``, transpose the weight, matmul, broadcast the bias, add, reshape back;
anchor-runtime.md §4.2).
"""

from __future__ import annotations

import math
import numbers
from abc import ABC, abstractmethod
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any, ClassVar, Literal, TypeGuard, get_args

import numpy as np
import numpy.typing as npt

from torchlean import _checks
from torchlean._checks import is_int
from torchlean._limits import MAX_RANK
from torchlean.backend.errors import TorchLeanError
from torchlean.nn.ops import Ops, T

__all__ = [
    "Activation",
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm",
    "Conv1d",
    "Conv2d",
    "Dropout",
    "Embedding",
    "Flatten",
    "Identity",
    "Layer",
    "LayerNorm",
    "LeakyReLU",
    "Linear",
    "MaxPool1d",
    "MaxPool2d",
    "MeanPool",
    "ParamSpec",
    "PositionalEmbedding",
    "Reshape",
    "Residual",
    "Sequential",
    "ShapeError",
    "checked_bool",
    "checked_dims",
    "checked_int",
    "is_bool",
    "is_int",
    "specs_of",
    "window",
]

Shape = tuple[int, ...]
ACTIVATIONS = ("relu", "gelu", "tanh", "sigmoid", "silu", "softplus")
InitKind = Literal["uniform", "normal", "zeros", "ones"]
_INIT_KINDS: tuple[str, ...] = get_args(InitKind)
_MAX_ELEMENTS = int(np.iinfo(np.intp).max) // 8  # bytes of one float64 array, numpy's limit


class ShapeError(TorchLeanError, ValueError):
    """A layer description or build argument is invalid: a layer does not fit the shape it
    receives, or a builder argument (size, probability, seed, ...) is outside its domain. The
    message names the argument (or both shapes) and the offending value."""


def checked_int(value: object, what: str, minimum: int) -> int:
    """``value`` as an ``int`` if it is an integer (:func:`torchlean._checks.is_int`: Python or
    numpy, not a bool) ``>= minimum``.

    Raises:
        ShapeError: ``<what> must be an int >= <minimum>, got <value!r>``.
    """
    return _checks.checked_int(value, what, minimum, ShapeError)


def is_bool(value: object) -> TypeGuard[bool | np.bool_]:
    """True for a Python ``bool`` or a ``numpy.bool_`` (as tensor flags accept); False for ints,
    strings and ``None``."""
    return isinstance(value, (bool, np.bool_))


def checked_bool(value: object, what: str) -> bool:
    """``value`` as a Python ``bool`` if it is a ``bool`` or a ``numpy.bool_``.

    Raises:
        ShapeError: ``<what> must be a bool, got <value!r>`` (ints, strings, ``None``).
    """
    if not is_bool(value):
        raise ShapeError(f"{what} must be a bool, got {value!r}")
    return bool(value)


def checked_dims(value: object, what: str, *, allow_int: bool) -> Shape:
    """``value`` as a non-empty tuple of ints >= 1; a tuple or list (as ``torch.Size`` arguments,
    ``torch.Size`` included), a 1-d integer numpy array (``np.array([4])``, e.g.
    ``np.array(x.shape[1:])``), or, with ``allow_int``, a single int meaning a one-axis shape (as
    ``torch.nn.LayerNorm``).

    At most 64 entries (numpy's and torch's rank limit): the length is read before any entry, so
    a declared-only view of ``2**40`` entries is refused at once (review239 F2: listing it raised
    a bare ``MemoryError``).

    Raises:
        ShapeError: ``<what> must be ..., got <value>`` naming the accepted forms (the value
            shortened); ``<what> must have at most 64 entries (numpy's and torch's rank limit), got
            array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,)) of length 1099511627776``.
    """
    items: Sequence[object] = ()
    if allow_int and is_int(value):
        items = (value,)
    elif isinstance(value, (tuple, list)) or (isinstance(value, np.ndarray) and value.ndim == 1):
        if len(value) > MAX_RANK:
            raise ShapeError(
                f"{what} must have at most {MAX_RANK} entries (numpy's and torch's rank limit), got "
                f"{_checks.shown_briefly(value)} of length {len(value)}"
            )
        items = list(value)
    dims = [int(d) for d in items if is_int(d) and int(d) >= 1]
    if not items or len(dims) != len(items):
        accepted = "an int >= 1 or a non-empty" if allow_int else "a non-empty"
        raise ShapeError(
            f"{what} must be {accepted} tuple or list of ints >= 1, got {_checks.shown_briefly(value, 80)}"
        )
    return tuple(dims)


def _checked_real(value: object, what: str) -> float:
    """``value`` as a float if it is a real number (not a bool) that a float can hold."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise ShapeError(f"{what} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:  # an int or Fraction beyond the float range
        message = f"{what} must be finite, got {_checks.shown(value)} (beyond the float range)"
        raise ShapeError(message) from None


def _param_shape(value: object, name: str) -> Shape:
    """A parameter's shape as a tuple of ints >= 0 (``()`` for a scalar): a tuple or list, or a
    1-d integer numpy array, as shapes elsewhere."""
    items: Sequence[object] | None = None
    if isinstance(value, (tuple, list)):
        items = value
    elif isinstance(value, np.ndarray) and value.ndim == 1:
        items = list(value)
    if items is None or not all(is_int(d) and int(d) >= 0 for d in items):
        raise ShapeError(
            f"parameter {name}: shape must be a tuple or list of ints >= 0 (() for a scalar), got "
            f"{_checks.shown(value)}"
        )
    return tuple(int(d) for d in items)  # type: ignore[call-overload]


def _set(record: Any, name: str, value: object) -> None:
    """Store a normalised field value on a frozen record (from its ``__post_init__``)."""
    object.__setattr__(record, name, value)


@dataclass(frozen=True, slots=True)
class ParamSpec:
    """A parameter a layer needs: name, shape and initialiser.

    ``uniform`` draws from U(-bound, bound) — PyTorch's default for ``nn.Linear`` and
    ``nn.ConvNd`` is ``bound = 1 / sqrt(fan_in)``; ``normal`` from N(0, bound**2) (``bound`` is
    the standard deviation: 1 for ``nn.Embedding``, as torch); ``zeros``/``ones`` are constant.
    ``zero_row`` (``None`` by default), an index on axis 0, is set to zeros after the draw, the
    other rows keeping their values (``nn.Embedding``'s ``padding_idx`` row, as torch's
    ``_fill_padding_idx_with_zero`` after ``normal_``). A trainable
    parameter gets a gradient and an optimizer update. ``trainable=False`` makes it a buffer
    (``torch.nn.Module.register_buffer``), such as batch norm's running statistics: it is in the
    model state and checkpoints, never differentiated nor given to the optimizer, and only its
    layer's forward program changes it in training (``ops.batch_norm``). A value a layer never
    changes is a constant of its program (``ops.constant``).

    Raises:
        ShapeError: an ``init`` other than ``uniform``, ``normal``, ``zeros`` or ``ones``; a
            ``zero_row`` that is not an int in ``[0, shape[0])``.
    """

    name: str
    shape: Shape
    init: InitKind
    bound: float = 0.0
    trainable: bool = True
    zero_row: int | None = None

    def __post_init__(self) -> None:
        # name, shape and bound checked and normalised (review173 F7: a list shape trained, then
        # every shape comparison refused "shape [3, 3], expected [3, 3]"; a NaN bound gave NaN weights)
        if not isinstance(self.name, str) or not self.name:
            raise ShapeError(f"ParamSpec: name must be a non-empty string, got {_checks.shown(self.name)}")
        _set(self, "shape", _param_shape(self.shape, self.name))
        if self.init not in _INIT_KINDS:
            raise ShapeError(
                f"parameter {self.name}: init {self.init!r} is unknown (accepted: "
                f"{' | '.join(_INIT_KINDS)})"
            )
        bound = _checked_real(self.bound, f"parameter {self.name}: bound")
        if not (math.isfinite(bound) and bound >= 0.0):
            raise ShapeError(
                f"parameter {self.name}: bound must be a finite number >= 0 (the uniform half-width or the "
                f"normal standard deviation), got {_checks.shown(self.bound)}"
            )
        _set(self, "bound", bound)
        _set(self, "trainable", checked_bool(self.trainable, f"parameter {self.name}: trainable"))
        if self.zero_row is not None:
            rows = self.shape[0] if self.shape else 0
            if not is_int(self.zero_row) or not 0 <= int(self.zero_row) < rows:
                raise ShapeError(
                    f"parameter {self.name}: zero_row must be None or an int in [0, {rows}) (a row of "
                    f"shape {list(self.shape)}), got {_checks.shown(self.zero_row)}"
                )
            _set(self, "zero_row", int(self.zero_row))

    def initial(self, rng: np.random.Generator, dtype: np.dtype[np.floating]) -> npt.NDArray[np.floating]:
        """A fresh array of ``shape`` in ``dtype``: zeros, ones, or U(-bound, bound) or
        N(0, bound**2) drawn from ``rng`` in float64 and then cast; row ``zero_row``, if any, is
        then zeros.

        Raises:
            ShapeError: more elements than one float64 array can hold (before any allocation;
                a merely large parameter that does not fit in memory raises MemoryError).
        """
        count = math.prod(self.shape)
        if count > _MAX_ELEMENTS:
            raise ShapeError(
                f"parameter {self.name} of shape {list(self.shape)} has {count} elements "
                f"(accepted: at most {_MAX_ELEMENTS}, what one float64 array can hold, the cap for every "
                "parameter as random initial values are drawn in float64 whatever the model dtype)"
            )
        if self.init == "zeros":
            values = np.zeros(self.shape, dtype=dtype)
        elif self.init == "ones":
            values = np.ones(self.shape, dtype=dtype)
        elif self.init == "normal":
            values = (rng.standard_normal(size=self.shape) * self.bound).astype(dtype)
        else:
            values = rng.uniform(-self.bound, self.bound, size=self.shape).astype(dtype)
        if self.zero_row is not None:
            values[self.zero_row] = 0
        return values

    def prefixed(self, prefix: str) -> ParamSpec:
        """This spec named ``<prefix>.<name>`` (a child's parameter inside a container layer)."""
        return replace(self, name=f"{prefix}.{self.name}")


def window(value: int | Sequence[int], name: str, *, n: int, minimum: int) -> tuple[int, ...]:
    """``value`` as ``n`` ints >= ``minimum``, one per spatial axis: one int (used for every axis)
    or a tuple/list of ``n``, as ``torch.nn.Conv1d``/``Conv2d`` and the pooling layers accept;
    bools are refused.

    Raises:
        ShapeError: ``<name> must be an int >= <minimum> or a pair of them, got <value!r>`` (``a
            tuple of one of them`` for ``n == 1``).
    """
    items: Sequence[object] = ()
    if is_int(value):
        items = (value,) * n
    elif isinstance(value, (tuple, list)):
        items = value
    ints = [int(v) for v in items if is_int(v) and int(v) >= minimum]
    if len(items) != n or len(ints) != n:
        several = "a pair of them" if n == 2 else "a tuple of one of them" if n == 1 else f"a tuple of {n}"
        raise ShapeError(f"{name} must be an int >= {minimum} or {several}, got {value!r}")
    return tuple(ints)


_AXES = {1: "L", 2: "H, W"}
"""The spatial axes of 1-d and 2-d samples, as messages name them."""


def _own_param_specs(layer: Layer, defined: object) -> bool:
    """Whether ``layer``'s ``param_specs`` is not ``defined`` (a class's ``param_specs``): its
    class overrides it, or the instance holds one of its own (review186 F7)."""
    return type(layer).param_specs is not defined or "param_specs" in getattr(layer, "__dict__", ())


def specs_of(layer: Layer) -> tuple[ParamSpec, ...]:
    """``layer.param_specs()``, checked to be a tuple or list of :class:`ParamSpec`: a layer of
    one's own returning one spec bare, plain tuples, a dict or ``None`` in it failed deep in a
    container or ``build`` with Python's ``'ParamSpec' object is not iterable`` or ``'tuple' object
    has no attribute 'name'``, naming no layer (review220 F2).

    Raises:
        ShapeError: naming the layer's class, what it returned and what is accepted.
    """
    method = layer.param_specs
    if not callable(method):  # a class attribute holding the specs (review226 F3)
        raise ShapeError(
            f"{type(layer).__name__}.param_specs must be a method returning a tuple of ParamSpec, got "
            f"{method!r} ({type(method).__name__}): write def param_specs(self): return (...)"
        )
    specs = method()
    if isinstance(specs, tuple | list) and all(isinstance(spec, ParamSpec) for spec in specs):
        return tuple(specs)
    if isinstance(specs, tuple | list):
        wrong = next(spec for spec in specs if not isinstance(spec, ParamSpec))
        got = f"a {type(specs).__name__} holding {wrong!r} ({type(wrong).__name__})"
    else:
        got = f"{specs!r} ({type(specs).__name__})"
    raise ShapeError(
        f"{type(layer).__name__}.param_specs must return a tuple of ParamSpec (one spec as (spec,); "
        f"none as ()), got {got}"
    )


class Layer(ABC):
    """A model layer: shape rule, parameters and forward program."""

    kind: str = "layer"

    @abstractmethod
    def output_shape(self, input_shape: Shape) -> Shape:
        """Per-sample output shape for ``input_shape``; raises :class:`ShapeError` if it does not fit."""

    def param_specs(self) -> tuple[ParamSpec, ...]:
        """Parameters in state order (children's included, prefixed by their position).

        Parameter shapes never depend on the input shape."""
        return ()

    def param_count(self) -> int:
        """``len(self.param_specs())``, without building the specs where the class knows it: a
        layer that keeps the base :meth:`param_specs` has none, and a built-in layer that keeps its
        own says how many it makes (a container's forward slices its children's parameters with
        it on every call); a subclass that overrides :meth:`param_specs`, or an instance given one
        of its own, is counted through it."""
        if not _own_param_specs(self, Layer.param_specs):
            return 0
        return len(specs_of(self))

    @abstractmethod
    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        """Apply the layer to ``x`` with its parameters ``params`` (as many as ``param_specs``, in
        their order): ``x`` is batched ``(batch, *input_shape)`` and the result is
        ``(batch, *output_shape(input_shape))``, in ``x``'s dtype; ``training`` switches dropout on."""

    def describe(self) -> str:
        """A short rendering for model summaries (default: ``kind``; layers with hyper-parameters
        add them, e.g. ``linear(4, 8)``)."""
        return self.kind

    def dtype_fault(self, dtype: np.dtype[np.floating]) -> str | None:
        """Why this layer cannot run in the model ``dtype`` (a hyper-parameter its kernels would
        round to an unusable value, e.g. an ``eps`` of ``1e-50`` in float32), or ``None`` (the
        default). :func:`~torchlean.nn.model.build` refuses a model with such a layer; a layer
        of your own that holds others should return the first of their faults, as
        :class:`Sequential` does."""
        return None

    def index_count(self) -> int | None:
        """How many ids this layer's input may hold when it takes integer ids instead of real
        values (an embedding of ``V`` rows: ids in ``[0, V)``), else ``None`` (the default).
        :class:`~torchlean.nn.model.Model` and the trainer read a model's inputs as ids by it; a
        layer of your own that holds others should return its first child's, as
        :class:`Sequential` does."""
        return None

    def needs_paired_samples(self, input_shape: Shape) -> Layer | None:
        """The first layer of this one (itself or a child) that trains on statistics over the
        minibatch with one value per channel per sample for ``input_shape`` (a batch norm of
        ``(C,)``, ``(C, 1)`` or ``(C, 1, 1)`` samples), so a minibatch of one sample cannot train
        it (torch: "Expected more than 1 value per channel when training"); ``None`` (the default)
        when there is none. ``input_shape`` fits this layer (:meth:`output_shape`). The trainer
        refuses such minibatches before any step; a layer of your own that holds others should
        ask them, as :class:`Sequential` does."""
        return None


@dataclass(frozen=True, slots=True)
class Linear(Layer):
    """``y = x W^T + b`` with weight ``[out, in]`` and bias ``[out]`` (``torch.nn.Linear``): per-sample
    ``(..., in)`` -> ``(..., out)``.

    Raises:
        ShapeError: a size not an int >= 1 or a non-bool ``bias`` (when built); an input whose last
            axis is not ``in_features`` (:meth:`output_shape`).
    """

    in_features: int
    out_features: int
    bias: bool = True
    kind = "linear"

    def __post_init__(self) -> None:
        _set(self, "in_features", checked_int(self.in_features, "linear: in_features", 1))
        _set(self, "out_features", checked_int(self.out_features, "linear: out_features", 1))
        _set(self, "bias", checked_bool(self.bias, "linear: bias"))

    def output_shape(self, input_shape: Shape) -> Shape:
        if not input_shape or input_shape[-1] != self.in_features:
            raise ShapeError(
                f"linear({self.in_features}, {self.out_features}) expects inputs whose last axis is "
                f"{self.in_features}, got shape {list(input_shape)}"
            )
        return (*input_shape[:-1], self.out_features)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        bound = 1.0 / math.sqrt(self.in_features)
        weight = ParamSpec("weight", (self.out_features, self.in_features), "uniform", bound)
        if not self.bias:
            return (weight,)
        return (weight, ParamSpec("bias", (self.out_features,), "uniform", bound))

    def param_count(self) -> int:
        if _own_param_specs(self, Linear.param_specs):  # a subclass or an instance with specs of its own
            return len(specs_of(self))
        return 2 if self.bias else 1

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.linear(x, params[0], params[1] if self.bias else None)

    def describe(self) -> str:
        return f"linear({self.in_features}, {self.out_features})"


@dataclass(frozen=True, slots=True)
class Activation(Layer):
    """A pointwise activation: ``relu``, ``gelu`` (exact erf form), ``tanh``, ``sigmoid``, ``silu``
    (``x * sigmoid(x)``, recorded as ``sigmoid`` and ``mul``) or ``softplus`` (``log(1 + exp(x))``;
    :func:`torchlean.functional.softplus`) (``torch.nn.ReLU``/``GELU()``/``Tanh``/``Sigmoid``/
    ``SiLU``/``Softplus()``); shape preserving.

    Raises:
        ShapeError: an unknown ``kind`` (``unknown activation 'softmax' (known: relu | gelu | tanh |
            sigmoid)``).
    """

    kind: str

    def __post_init__(self) -> None:
        if self.kind not in ACTIVATIONS:
            raise ShapeError(f"unknown activation {self.kind!r} (known: {' | '.join(ACTIVATIONS)})")

    def output_shape(self, input_shape: Shape) -> Shape:
        return input_shape

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        if self.kind == "relu":
            return ops.relu(x)
        if self.kind == "gelu":
            return ops.gelu(x)
        if self.kind == "tanh":
            return ops.tanh(x)
        if self.kind == "silu":
            return ops.mul(x, ops.sigmoid(x))
        if self.kind == "softplus":
            return ops.softplus(x)
        return ops.sigmoid(x)


@dataclass(frozen=True, slots=True)
class LeakyReLU(Layer):
    """``x`` where ``x > 0``, else ``negative_slope * x`` (``torch.nn.LeakyReLU``), computed as
    ``relu(x) + (-negative_slope) * relu(-x)`` (``relu``, ``scale``, ``relu``, ``scale``, ``add``),
    whose values are torch's bit for bit (one of the two terms is an exact zero), but for the sign
    of a zero result: a negative input whose product with the slope rounds to zero (float32
    ``-1e-45``) gives ``0.0`` (``0.0 + -0.0``), torch ``-0.0`` (review73 F1; ``-0.0`` itself gives
    ``-0.0`` as torch); and whose gradient is 1 for ``x > 0`` and
    ``negative_slope`` for ``x < 0``; at ``x == 0`` it is 0 (both relus' gradient there, torch's
    convention for relu), where torch's is ``negative_slope``, and at a NaN input ``1 +
    negative_slope`` (torch: ``negative_slope``). Shape preserving.

    Raises:
        ShapeError: ``negative_slope`` not a finite real number (bools and strings refused); at
            build, a slope the model dtype cannot hold (``3.5e38`` in float32,
            :meth:`dtype_fault`).
    """

    negative_slope: float = 0.01
    kind = "leaky_relu"

    def __post_init__(self) -> None:
        slope = _checked_real(self.negative_slope, "leaky_relu: negative_slope")
        if not math.isfinite(slope):
            raise ShapeError(f"leaky_relu: negative_slope must be finite, got {slope}")
        _set(self, "negative_slope", slope)

    def output_shape(self, input_shape: Shape) -> Shape:
        return input_shape

    def dtype_fault(self, dtype: np.dtype[np.floating]) -> str | None:
        with np.errstate(over="ignore"):
            held = np.isfinite(dtype.type(self.negative_slope))
        if held:
            return None
        return (
            f"leaky_relu: negative_slope {self.negative_slope!r} is beyond the {dtype} range (accepted: "
            f"magnitude at most {np.finfo(dtype).max!s}; build the model in float64)"
        )

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        negative = ops.scale(ops.relu(ops.scale(x, -1.0)), -self.negative_slope)
        return ops.add(ops.relu(x), negative)

    def describe(self) -> str:
        return f"leaky_relu({self.negative_slope})"


@dataclass(frozen=True, slots=True)
class Identity(Layer):
    """Its input, unchanged and without an op (``torch.nn.Identity``): a placeholder, e.g. a
    layer switched off in a configurable model."""

    kind = "identity"

    def output_shape(self, input_shape: Shape) -> Shape:
        return input_shape

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return x


@dataclass(frozen=True, slots=True)
class Dropout(Layer):
    """Inverted dropout (``torch.nn.Dropout``): identity in evaluation, seeded masks in training
    (kept values scaled by ``1 / (1 - p)``; ``p = 1`` zeroes everything); shape preserving.

    Raises:
        ShapeError: ``p`` not a real number (bools and strings refused) with ``0 <= p <= 1``.
    """

    p: float
    kind = "dropout"

    def __post_init__(self) -> None:
        p = _checked_real(self.p, "dropout: p")
        if not (math.isfinite(p) and 0.0 <= p <= 1.0):  # p = 1 drops everything, as torch.nn.Dropout
            raise ShapeError(f"dropout: p must satisfy 0 <= p <= 1, got {p}")
        _set(self, "p", p)

    def output_shape(self, input_shape: Shape) -> Shape:
        return input_shape

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        if not training or self.p == 0.0:
            return x
        return ops.dropout(x, self.p)

    def describe(self) -> str:
        return f"dropout({self.p})"


@dataclass(frozen=True, slots=True)
class LayerNorm(Layer):
    """Layer normalisation over the trailing ``normalized_shape`` axes (``torch.nn.LayerNorm``), with
    a weight (ones) and bias (zeros) of shape ``normalized_shape``; shape preserving.

    Raises:
        ShapeError: a bad ``normalized_shape`` (an int >= 1 or a non-empty tuple/list of at most
            64 of them: :func:`checked_dims`), an
            ``eps`` that is not a finite real >= 0 (when built); an input whose trailing axes are
            not ``normalized_shape`` (:meth:`output_shape`).
    """

    normalized_shape: Shape
    eps: float = 1e-5
    kind = "layer_norm"

    def __post_init__(self) -> None:
        shape = checked_dims(self.normalized_shape, "layer_norm: normalized_shape", allow_int=True)
        _set(self, "normalized_shape", shape)
        eps = _checked_real(self.eps, "layer_norm: eps")
        if not (math.isfinite(eps) and eps >= 0.0):  # 0 as torch.nn.LayerNorm and tl.layer_norm
            raise ShapeError(f"layer_norm: eps must be finite and >= 0, got {self.eps!r}")
        _set(self, "eps", eps)

    def output_shape(self, input_shape: Shape) -> Shape:
        n = len(self.normalized_shape)
        if n == 0 or tuple(input_shape[-n:]) != self.normalized_shape:
            raise ShapeError(
                f"layer_norm({list(self.normalized_shape)}) does not fit input shape {list(input_shape)}"
            )
        return input_shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (
            ParamSpec("weight", self.normalized_shape, "ones"),
            ParamSpec("bias", self.normalized_shape, "zeros"),
        )

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.layer_norm(x, params[0], params[1], normalized_ndim=len(self.normalized_shape),
                              eps=self.eps)

    def dtype_fault(self, dtype: np.dtype[np.floating]) -> str | None:
        return _eps_fault(f"layer_norm({list(self.normalized_shape)})", self.eps, dtype, positive=False)

    def describe(self) -> str:
        """``layer_norm([4])``, with an ``eps`` other than torch's 1e-5 (review75 F6)."""
        return f"layer_norm({list(self.normalized_shape)}{_non_default(('eps', self.eps, 1e-5))})"


@dataclass(frozen=True, slots=True)
class BatchNorm(Layer):
    """Batch normalisation over the channel axis of ``(C,)``/``(C, L)`` samples (``spatial_ndim`` 1,
    ``torch.nn.BatchNorm1d``) or ``(C, H, W)`` samples (``spatial_ndim`` 2, ``torch.nn.BatchNorm2d``),
    with running statistics; shape preserving.

    Parameters, in state order: ``weight`` (ones) and ``bias`` (zeros), each ``(C,)``, when
    ``affine``; then the buffers (``ParamSpec.trainable`` false) ``running_mean`` (zeros) and
    ``running_var`` (ones), each ``(C,)``, as torch's ``state_dict`` names them (torch's
    ``num_batches_tracked`` counter is not kept: it only serves ``momentum=None``, which is not
    offered). Training normalises with the batch's statistics and updates the running ones
    (``ops.batch_norm``); evaluation normalises with the running statistics.

    Raises:
        ShapeError: ``num_features`` not an int >= 1, ``spatial_ndim`` other than 1 or 2, ``eps``
            not a finite real > 0 (torch refuses ``eps <= 0`` in training), ``momentum`` not a real
            in ``[0, 1]`` (``None``, torch's cumulative average, included) or ``affine`` not a bool
            (when built); a sample that is not ``(num_features, ...)`` of the accepted rank
            (:meth:`output_shape`).
    """

    num_features: int
    spatial_ndim: int
    eps: float = 1e-5
    momentum: float = 0.1
    affine: bool = True
    kind = "batch_norm"

    def __post_init__(self) -> None:
        if not is_int(self.spatial_ndim) or int(self.spatial_ndim) not in (1, 2):
            raise ShapeError(f"batch_norm: spatial_ndim must be 1 or 2, got {self.spatial_ndim!r}")
        _set(self, "spatial_ndim", int(self.spatial_ndim))
        name = self._name()
        _set(self, "num_features", checked_int(self.num_features, f"{name}: num_features", 1))
        eps = _checked_real(self.eps, f"{name}: eps")
        if not (math.isfinite(eps) and eps > 0.0):
            raise ShapeError(f"{name}: eps must be finite and > 0, got {self.eps!r}")
        _set(self, "eps", eps)
        if self.momentum is None:
            raise ShapeError(
                f"{name}: momentum must be a real number in [0, 1], got None (torch's cumulative "
                "moving average is not offered; pass a fixed momentum such as 0.1)"
            )
        momentum = _checked_real(self.momentum, f"{name}: momentum")
        if not 0.0 <= momentum <= 1.0:
            raise ShapeError(f"{name}: momentum must be a real number in [0, 1], got {self.momentum!r}")
        _set(self, "momentum", momentum)
        _set(self, "affine", checked_bool(self.affine, f"{name}: affine"))

    def _name(self) -> str:
        return "batch_norm2d" if self.spatial_ndim == 2 else "batch_norm1d"

    def output_shape(self, input_shape: Shape) -> Shape:
        c = self.num_features
        ranks: tuple[int, ...]
        if self.spatial_ndim == 2:
            ranks, expected = (3,), f"({c}, H, W)"
        else:
            ranks, expected = (1, 2), f"({c},) or ({c}, L)"
        if len(input_shape) not in ranks or input_shape[0] != c:
            raise ShapeError(
                f"{self.describe()} expects samples of shape {expected}, got shape {list(input_shape)}"
            )
        return input_shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        shape = (self.num_features,)
        affine = (ParamSpec("weight", shape, "ones"), ParamSpec("bias", shape, "zeros"))
        return (
            *(affine if self.affine else ()),
            ParamSpec("running_mean", shape, "zeros", trainable=False),
            ParamSpec("running_var", shape, "ones", trainable=False),
        )

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        weight, bias = (params[0], params[1]) if self.affine else (None, None)
        return ops.batch_norm(
            x, weight, bias, params[-2], params[-1], training=training, eps=self.eps, momentum=self.momentum
        )

    def describe(self) -> str:
        """``batch_norm1d(4)``, with the settings that are not torch's defaults (``eps=0.001``,
        ``momentum=0.3``, ``affine=False``; review75 F6)."""
        settings = _non_default(("eps", self.eps, 1e-5), ("momentum", self.momentum, 0.1),
                                ("affine", self.affine, True))
        return f"{self._name()}({self.num_features}{settings})"

    def dtype_fault(self, dtype: np.dtype[np.floating]) -> str | None:
        return _eps_fault(f"{self._name()}({self.num_features})", self.eps, dtype, positive=True)

    def needs_paired_samples(self, input_shape: Shape) -> Layer | None:
        return self if math.prod(input_shape[1:]) == 1 else None


def _eps_fault(layer: str, eps: float, dtype: np.dtype[np.floating], *, positive: bool) -> str | None:
    """An ``eps`` the normalisation kernels, which add it in x's ``dtype``, refuse: not finite
    there, or (``positive``: batch norm in training, as PyTorch) rounded to 0."""
    with np.errstate(over="ignore", under="ignore"):
        rounded = float(dtype.type(eps))
    if math.isfinite(rounded) and (rounded > 0.0 or not positive):
        return None
    problem = "is not finite" if not math.isfinite(rounded) else "rounds to 0"
    accepted = "a positive eps" if positive else "an eps"
    return (
        f"{layer}: eps={eps!r} {problem} in {dtype}, where the kernels add it (accepted: {accepted} "
        f"that {dtype} holds as a finite{' nonzero' if positive else ''} number; or build the model in "
        "float64)"
    )


@dataclass(frozen=True, slots=True)
class _Conv(Layer):
    """Convolution over ``(C, *spatial)`` samples with ``spatial_ndim`` spatial axes (channel
    first, torch's ``ConvNd``): per-sample ``(in_channels, *size)`` -> ``(out_channels, *out)``
    with ``out = (size + 2 p - d (k - 1) - 1) // s + 1`` per axis, torch's formula; weight
    ``[out, in / groups, *kernel]``; window arguments an int or one int per spatial axis."""

    in_channels: int
    out_channels: int
    kernel_size: tuple[int, ...]
    stride: tuple[int, ...] = (1,)
    padding: tuple[int, ...] = (0,)
    dilation: tuple[int, ...] = (1,)
    groups: int = 1
    bias: bool = True
    spatial_ndim: ClassVar[int] = 1

    def __post_init__(self) -> None:
        for name in ("in_channels", "out_channels"):
            _set(self, name, checked_int(getattr(self, name), f"{self.kind}: {name}", 1))
        for name, minimum in (("kernel_size", 1), ("stride", 1), ("padding", 0), ("dilation", 1)):
            value = window(getattr(self, name), f"{self.kind}: {name}", n=self.spatial_ndim, minimum=minimum)
            _set(self, name, value)
        _set(self, "groups", checked_int(self.groups, f"{self.kind}: groups", 1))
        if self.in_channels % self.groups or self.out_channels % self.groups:
            raise ShapeError(  # refused when built, as torch.nn.ConvNd refuses at construction
                f"{self.kind}: groups={self.groups} must divide in_channels={self.in_channels} and "
                f"out_channels={self.out_channels}"
            )
        _set(self, "bias", checked_bool(self.bias, f"{self.kind}: bias"))

    def output_shape(self, input_shape: Shape) -> Shape:
        if len(input_shape) != 1 + self.spatial_ndim or input_shape[0] != self.in_channels:
            raise ShapeError(
                f"{self.kind} expects (C={self.in_channels}, {_AXES[self.spatial_ndim]}) samples, got shape "
                f"{list(input_shape)}"
            )
        spatial = []
        for size, k, s, p, d in zip(input_shape[1:], self.kernel_size, self.stride, self.padding,
                                    self.dilation, strict=True):
            out = (size + 2 * p - d * (k - 1) - 1) // s + 1
            if out < 1:
                raise ShapeError(
                    f"{self.kind} kernel {list(self.kernel_size)} (dilation {list(self.dilation)}) does not "
                    f"fit input {list(input_shape)} with padding {list(self.padding)}"
                )
            spatial.append(out)
        return (self.out_channels, *spatial)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        fan_in = (self.in_channels // self.groups) * math.prod(self.kernel_size)
        bound = 1.0 / math.sqrt(fan_in)
        shape = (self.out_channels, self.in_channels // self.groups, *self.kernel_size)
        weight = ParamSpec("weight", shape, "uniform", bound)
        if not self.bias:
            return (weight,)
        return (weight, ParamSpec("bias", (self.out_channels,), "uniform", bound))

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.conv(
            x,
            params[0],
            params[1] if self.bias else None,
            stride=self.stride,
            padding=self.padding,
            dilation=self.dilation,
            groups=self.groups,
        )

    def describe(self) -> str:
        """``conv2d(1, 16, [3, 3])``, then each setting that is not torch's default (``stride=[2,
        2]``, ``padding=[1, 1]``, ``dilation``, ``groups=2``, ``bias=False``; review72 F4)."""
        n = self.spatial_ndim
        settings = _non_default(
            ("stride", self.stride, (1,) * n), ("padding", self.padding, (0,) * n),
            ("dilation", self.dilation, (1,) * n), ("groups", self.groups, 1), ("bias", self.bias, True),
        )
        return f"{self.kind}({self.in_channels}, {self.out_channels}, {list(self.kernel_size)}{settings})"


def _non_default(*settings: tuple[str, object, object]) -> str:
    """``, name=value`` for each ``(name, value, default)`` whose value is not its default (a
    tuple of ints written as a list, as the kernel size is), in the order given."""
    shown = [f", {name}={list(value) if isinstance(value, tuple) else value}"
             for name, value, default in settings if value != default]
    return "".join(shown)


@dataclass(frozen=True, slots=True)
class Conv1d(_Conv):
    """1-d convolution over ``(C, L)`` samples (``torch.nn.Conv1d``, channel-first): per-sample
    ``(in_channels, L)`` -> ``(out_channels, (L + 2 p - d (k - 1) - 1) // s + 1)``; weight
    ``[out, in / groups, k]``.

    Raises:
        ShapeError: a bad size, window argument or ``bias``, or ``groups`` not dividing both
            channel counts (when built); samples that are not ``(in_channels, L)`` or too short
            for the dilated kernel (:meth:`output_shape`).
    """

    kind = "conv1d"


@dataclass(frozen=True, slots=True)
class Conv2d(_Conv):
    """2-d convolution over ``(C, H, W)`` samples (``torch.nn.Conv2d``, channel-first): per-sample
    ``(in_channels, H, W)`` -> ``(out_channels, H_out, W_out)`` with ``H_out = (H + 2 p - d (k - 1)
    - 1) // s + 1`` (likewise ``W_out``), torch's formula; weight ``[out, in / groups, kH, kW]``.

    Raises:
        ShapeError: a bad size, window argument or ``bias``, or ``groups`` not dividing both
            channel counts (when built); samples that are not ``(in_channels, H, W)`` or too small
            for the dilated kernel (:meth:`output_shape`).
    """

    stride: tuple[int, ...] = (1, 1)
    padding: tuple[int, ...] = (0, 0)
    dilation: tuple[int, ...] = (1, 1)
    kind = "conv2d"
    spatial_ndim: ClassVar[int] = 2


@dataclass(frozen=True, slots=True)
class _Pool(Layer):
    """Max or average pooling (``pooling``) over ``(C, *spatial)`` samples with ``spatial_ndim``
    spatial axes, floor mode: per-sample ``(C, *size)`` -> ``(C, *out)``,
    ``out = (size + 2 p - k) // s + 1`` per axis."""

    kernel_size: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...] = (0,)
    spatial_ndim: ClassVar[int] = 1
    pooling: ClassVar[str] = "max"

    def __post_init__(self) -> None:
        for name, minimum in (("kernel_size", 1), ("stride", 1), ("padding", 0)):
            value = window(getattr(self, name), f"{self.kind}: {name}", n=self.spatial_ndim, minimum=minimum)
            _set(self, name, value)

    def output_shape(self, input_shape: Shape) -> Shape:
        if len(input_shape) != 1 + self.spatial_ndim:
            raise ShapeError(
                f"{self.kind} expects (C, {_AXES[self.spatial_ndim]}) samples, got shape {list(input_shape)}"
            )
        if any(2 * p > k for p, k in zip(self.padding, self.kernel_size, strict=True)):
            raise ShapeError(
                f"{self.kind}: padding {list(self.padding)} must be at most half of kernel "
                f"{list(self.kernel_size)}"
            )
        spatial = []
        for size, k, s, p in zip(input_shape[1:], self.kernel_size, self.stride, self.padding, strict=True):
            out = (size + 2 * p - k) // s + 1
            if out < 1:
                raise ShapeError(
                    f"{self.kind} kernel {list(self.kernel_size)} does not fit {list(input_shape)}"
                )
            spatial.append(out)
        return (input_shape[0], *spatial)

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        pool = ops.max_pool if self.pooling == "max" else ops.avg_pool
        return pool(x, kernel_size=self.kernel_size, stride=self.stride, padding=self.padding)

    def describe(self) -> str:
        """``max_pool2d([2, 2])``, then a stride other than the kernel size (torch's default) and a
        padding other than 0 (review72 F4)."""
        settings = _non_default(
            ("stride", self.stride, self.kernel_size), ("padding", self.padding, (0,) * self.spatial_ndim)
        )
        return f"{self.kind}({list(self.kernel_size)}{settings})"


@dataclass(frozen=True, slots=True)
class MaxPool1d(_Pool):
    """1-d max pooling (``torch.nn.MaxPool1d``, floor mode, padding never wins the max):
    per-sample ``(C, L)`` -> ``(C, (L + 2 p - k) // s + 1)``; errors as :class:`MaxPool2d`."""

    kind = "max_pool1d"


@dataclass(frozen=True, slots=True)
class AvgPool1d(_Pool):
    """1-d average pooling; zero padding counts in the divisor (``torch.nn.AvgPool1d`` with
    ``count_include_pad=True``, floor mode); shapes and errors as :class:`MaxPool1d`."""

    kind = "avg_pool1d"
    pooling: ClassVar[str] = "avg"


@dataclass(frozen=True, slots=True)
class MaxPool2d(_Pool):
    """2-d max pooling (``torch.nn.MaxPool2d``, floor mode, padding never wins the max): per-sample
    ``(C, H, W)`` -> ``(C, (H + 2 p - k) // s + 1, (W + 2 p - k) // s + 1)``.

    Raises:
        ShapeError: a bad window argument (when built); samples that are not ``(C, H, W)``, a
            padding above half the kernel (as torch refuses it), or a kernel larger than the
            padded input (:meth:`output_shape`).
    """

    padding: tuple[int, ...] = (0, 0)
    kind = "max_pool2d"
    spatial_ndim: ClassVar[int] = 2


@dataclass(frozen=True, slots=True)
class AvgPool2d(_Pool):
    """2-d average pooling; zero padding counts in the divisor (``torch.nn.AvgPool2d`` with
    ``count_include_pad=True``, floor mode); shapes and errors as :class:`MaxPool2d`."""

    padding: tuple[int, ...] = (0, 0)
    kind = "avg_pool2d"
    spatial_ndim: ClassVar[int] = 2
    pooling: ClassVar[str] = "avg"


@dataclass(frozen=True, slots=True)
class Embedding(Layer):
    """A ``(num_embeddings, embedding_dim)`` table whose rows the integer ids of each sample pick
    (``torch.nn.Embedding``, its N(0, 1) initialisation and its ``padding_idx``; no ``max_norm``
    or ``sparse``): samples of ids ``(...)``, e.g. ``(tokens,)``, give ``(..., embedding_dim)``.
    One ``embedding`` op (:func:`torchlean.functional.embedding`); in a typed graph a ``gather``
    by an int64 index input and a ``reshape`` (training with a ``padding_idx`` gathers from the
    table and its detached copy: :meth:`torchlean.nn.lowering.GraphOps.embedding`).

    ``padding_idx`` (torch.nn.Embedding's ``padding_idx``; ``None`` for none) is an int in
    ``[-num_embeddings, num_embeddings)``, stored normalised to ``[0, num_embeddings)`` (``-1``
    is the last row), as torch stores it. That row starts as zeros (the others are drawn as
    without it) and gets a zero gradient, so SGD and Adam without weight decay never change it
    (with weight decay, or AdamW, it decays as in torch); ids equal to it look it up like any
    other row (its current value, zero unless changed).

    Raises:
        ShapeError: a size not an int >= 1, or a ``padding_idx`` that is not ``None`` or an int
            in ``[-num_embeddings, num_embeddings)`` (when built; bools and floats refused),
            naming the value and the range.
    """

    num_embeddings: int
    embedding_dim: int
    padding_idx: int | None = None
    kind = "embedding"

    def __post_init__(self) -> None:
        _set(self, "num_embeddings", checked_int(self.num_embeddings, "embedding: num_embeddings", 1))
        _set(self, "embedding_dim", checked_int(self.embedding_dim, "embedding: embedding_dim", 1))
        if self.padding_idx is not None:
            count, error = self.num_embeddings, ShapeError
            pad = _checks.padding_index(self.padding_idx, count, "embedding", error, error)
            _set(self, "padding_idx", pad)

    def output_shape(self, input_shape: Shape) -> Shape:
        return (*input_shape, self.embedding_dim)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        shape = (self.num_embeddings, self.embedding_dim)
        return (ParamSpec("weight", shape, "normal", 1.0, zero_row=self.padding_idx),)

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.embedding(x, params[0], self.padding_idx)

    def index_count(self) -> int | None:
        return self.num_embeddings

    def describe(self) -> str:
        pad = "" if self.padding_idx is None else f", padding_idx={self.padding_idx}"
        return f"embedding({self.num_embeddings}, {self.embedding_dim}{pad})"


@dataclass(frozen=True, slots=True)
class PositionalEmbedding(Layer):
    """Adds a learned ``(tokens, d_model)`` position table to ``(tokens, d_model)`` samples.

    Raises:
        ShapeError: a size not an int >= 1 (when built); samples not ``(tokens, d_model)``
            (:meth:`output_shape`).
    """

    tokens: int
    d_model: int
    kind = "positional_embedding"

    def __post_init__(self) -> None:
        _set(self, "tokens", checked_int(self.tokens, "positional_embedding: tokens", 1))
        _set(self, "d_model", checked_int(self.d_model, "positional_embedding: d_model", 1))

    def output_shape(self, input_shape: Shape) -> Shape:
        if input_shape != (self.tokens, self.d_model):
            raise ShapeError(
                f"positional_embedding({self.tokens}, {self.d_model}) does not fit samples "
                f"{list(input_shape)}"
            )
        return input_shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("table", (self.tokens, self.d_model), "uniform", 0.1),)

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.add(x, ops.broadcast_to(params[0], ops.shape(x)))

    def describe(self) -> str:
        return f"positional_embedding({self.tokens}, {self.d_model})"


@dataclass(frozen=True, slots=True)
class Reshape(Layer):
    """Reshape each sample to ``shape`` (same element count; every dimension explicit and >= 1: no
    ``-1`` as ``torch.reshape`` allows).

    Raises:
        ShapeError: a bad ``shape`` (when built); an element count that differs
            (:meth:`output_shape`).
    """

    shape: Shape
    kind = "reshape"

    def __post_init__(self) -> None:
        _set(self, "shape", checked_dims(self.shape, "reshape: shape", allow_int=False))

    def output_shape(self, input_shape: Shape) -> Shape:
        if math.prod(input_shape) != math.prod(self.shape):
            raise ShapeError(f"reshape: cannot view {list(input_shape)} as {list(self.shape)}")
        return self.shape

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        batch = ops.shape(x)[0]
        return ops.reshape(x, (batch, *self.shape))

    def describe(self) -> str:
        return f"reshape({list(self.shape)})"


@dataclass(frozen=True, slots=True)
class Flatten(Layer):
    """Flatten each sample to a vector (``torch.nn.Flatten``): ``(C, H, W)`` -> ``(C*H*W,)``."""

    kind = "flatten"

    def output_shape(self, input_shape: Shape) -> Shape:
        return (math.prod(input_shape),)

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        shape = ops.shape(x)
        return ops.reshape(x, (shape[0], math.prod(shape[1:])))


@dataclass(frozen=True, slots=True)
class MeanPool(Layer):
    """Mean over per-sample axis ``axis`` (e.g. the token axis of a sequence model), which is
    removed (``torch.mean(x, dim=axis + 1)``, the batch axis first).

    Raises:
        ShapeError: ``axis`` not an int >= 0 (when built) or not an axis of the sample
            (:meth:`output_shape`).
    """

    axis: int = 0
    kind = "mean_pool"

    def __post_init__(self) -> None:
        _set(self, "axis", checked_int(self.axis, "mean_pool: axis", 0))

    def output_shape(self, input_shape: Shape) -> Shape:
        if not 0 <= self.axis < len(input_shape):
            raise ShapeError(f"mean_pool axis {self.axis} is out of range for shape {list(input_shape)}")
        return input_shape[: self.axis] + input_shape[self.axis + 1 :]

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.reduce_mean(x, self.axis + 1)


def _child_shapes(layers: Sequence[Layer], input_shape: Shape) -> list[Shape]:
    shapes = [input_shape]
    for layer in layers:
        shapes.append(layer.output_shape(shapes[-1]))
    return shapes


def _check_child_output(layer: Layer, position: int, given: Shape, got: Shape) -> None:
    """Refuse a layer of one's own inside a :class:`Sequential` whose ``forward`` gave another
    shape than its ``output_shape`` declares for its input (one leading batch axis), naming it;
    the next layer refused the shape instead, and its note named that layer (review214 F2).

    Raises:
        ShapeError: naming the layer, its position and both shapes.
    """
    expected = (*given[:1], *layer.output_shape(tuple(given[1:])))
    if tuple(got) != tuple(expected):
        raise ShapeError(
            f"{layer.describe()}, layer {position} of a sequential, produced outputs of shape {tuple(got)}, "
            f"but its output_shape gives {tuple(expected)} for inputs of shape {tuple(given)} (accepted: a "
            "forward that produces the shape output_shape declares)"
        )


@dataclass(frozen=True, slots=True)
class Sequential(Layer):
    """Layers applied in order (``torch.nn.Sequential``); child ``i``'s parameters are named
    ``i.<name>``.

    Raises:
        ShapeError: ``layers`` not a tuple or list, or an item that is not a :class:`Layer` (when
            built); a child that does not fit the shape it receives (:meth:`output_shape`).
    """

    layers: tuple[Layer, ...]
    kind = "sequential"

    def __post_init__(self) -> None:
        if not isinstance(self.layers, (tuple, list)):
            raise ShapeError(f"sequential: layers must be a tuple or list of layers, got {self.layers!r}")
        for position, layer in enumerate(self.layers):
            if not isinstance(layer, Layer):
                raise ShapeError(
                    f"sequential: item {position} must be a Layer (e.g. nn.relu()), got "
                    f"{type(layer).__name__} {layer!r}"
                )
        _set(self, "layers", tuple(self.layers))

    def output_shape(self, input_shape: Shape) -> Shape:
        for position, layer in enumerate(self.layers[1:], start=1):
            if layer.index_count() is not None:
                raise ShapeError(
                    f"sequential: {layer.describe()} at position {position} looks up integer ids, which "
                    f"only the first layer receives (it would get the real-valued output of "
                    f"{self.layers[position - 1].describe()}); put it first"
                )
        return _child_shapes(self.layers, input_shape)[-1]

    def param_specs(self) -> tuple[ParamSpec, ...]:
        specs: list[ParamSpec] = []
        for index, layer in enumerate(self.layers):
            specs.extend(s.prefixed(str(index)) for s in specs_of(layer))
        return tuple(specs)

    def param_count(self) -> int:
        if _own_param_specs(self, Sequential.param_specs):  # a subclass or an instance with specs of its own
            return len(specs_of(self))
        return sum(layer.param_count() for layer in self.layers)

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        offset = 0
        for position, layer in enumerate(self.layers):
            count = layer.param_count()
            own = not type(layer).__module__.startswith("torchlean.")  # a layer of one's own
            given = ops.shape(x) if own else ()  # the built-in layers keep their output_shape
            try:
                x = layer.forward(ops, params[offset : offset + count], x, training=training)
            except Exception as error:  # name the layer whose forward failed (review173 F9)
                error.add_note(f"in the forward of {layer.describe()}, layer {position} of a sequential")
                raise
            if own:
                try:
                    got = ops.shape(x)
                except (AttributeError, TypeError, TorchLeanError):  # review218 F3, review219 F1
                    raise ShapeError(
                        f"{layer.describe()}, layer {position} of a sequential, returned "
                        f"{'None' if x is None else 'a ' + type(x).__name__} from its forward (accepted: the "
                        "layer's output value, as the ops give it; a forward without a return?)"
                    ) from None
                _check_child_output(layer, position, given, got)
            offset += count
        return x

    def describe(self) -> str:
        return "sequential(" + ", ".join(layer.describe() for layer in self.layers) + ")"

    def dtype_fault(self, dtype: np.dtype[np.floating]) -> str | None:
        return next((f for f in (layer.dtype_fault(dtype) for layer in self.layers) if f is not None), None)

    def index_count(self) -> int | None:
        return self.layers[0].index_count() if self.layers else None

    def needs_paired_samples(self, input_shape: Shape) -> Layer | None:
        pairs = zip(self.layers, _child_shapes(self.layers, input_shape), strict=False)
        return next((f for f in (layer.needs_paired_samples(s) for layer, s in pairs) if f is not None), None)


@dataclass(frozen=True, slots=True)
class Residual(Layer):
    """``x + f(x)``; ``f`` must preserve the shape; its parameters are named ``body.<name>``.

    Raises:
        ShapeError: ``body`` not a :class:`Layer` (when built); a body that changes the shape
            (:meth:`output_shape`).
    """

    body: Layer
    kind = "residual"

    def __post_init__(self) -> None:
        if not isinstance(self.body, Layer):
            raise ShapeError(
                f"residual: body must be a Layer (e.g. nn.linear(4, 4)), got "
                f"{type(self.body).__name__} {self.body!r}"
            )

    def output_shape(self, input_shape: Shape) -> Shape:
        if self.body.index_count() is not None:
            raise ShapeError(
                f"residual: its body {self.body.describe()} looks up integer ids, but a residual adds "
                "its input to the body's output (put the embedding before the residual)"
            )
        out = self.body.output_shape(input_shape)
        if out != input_shape:
            raise ShapeError(
                f"residual body maps {list(input_shape)} to {list(out)}; a residual needs equal shapes"
            )
        return out

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return tuple(s.prefixed("body") for s in specs_of(self.body))

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        return ops.add(x, self.body.forward(ops, params, x, training=training))

    def describe(self) -> str:
        return f"residual({self.body.describe()})"

    def dtype_fault(self, dtype: np.dtype[np.floating]) -> str | None:
        return self.body.dtype_fault(dtype)

    def needs_paired_samples(self, input_shape: Shape) -> Layer | None:
        return self.body.needs_paired_samples(input_shape)

