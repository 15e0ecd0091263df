"""Operation kinds of the canonical IR (``NN.IR.OpKind``, anchor-runtime.md §4.3, E2/E3 set).

Every kind is a frozen dataclass carrying its parameters, with class-level facts:

* ``tag`` — the original's tag string (used in arity errors and as the rendered name);
* ``min_parents`` / ``max_parents`` — the arity (``max_parents is None``: no maximum, ``concat``);
* ``backend_op`` — the :class:`BackendOp` of anchor-backend.md §2.7 (``None`` for input, const,
  detach, which need no kernel);
* ``describe()`` — the original's Lean ``repr`` without the namespace, in the tag's spelling:
  ``reshape [4] [1, 4]``, ``transpose 0 1``, ``broadcast_to [8] [1, 8]``, ``const [8, 4]``.

Parameters (weights, biases, constants, statistics) are not part of a kind: they live in a payload
store keyed by node id (:mod:`torchlean.ir.payloads`), so ``linear``, ``conv``, ``batch_norm_eval``
have exactly one parent, the activation.

torchlean extensions (``extension = True``; not in the original's IR, which has no IR source for
these backend ops): ``gelu``, ``log_softmax(axis)``, ``scale(factor)``,
``scaled_dot_product_attention(mask, causal, scale)``, ``batch_norm_train(channel_axis,
channels)``, ``gather(axis)`` and ``linear_of``. They let GELU, the trainer's cross entropy
(``log_softmax``), constant scaling (``Ops.scale``, in a layer of your own), attention layers,
training-mode batch norm (batch statistics), embedding lookups (``gather`` of table rows by an
int64 index input) and a linear layer of computed weights (``linear_of``: weight and bias as
parents) lower to the IR with the same kernels eager execution uses.
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import ClassVar

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_builtin_or_numpy_int, shown_briefly
from torchlean._limits import MAX_RANK
from torchlean.backend.vocabulary import BackendOp
from torchlean.ir.errors import IRError

__all__ = [
    "MAX_RANK",
    "Abs",
    "Add",
    "AvgPool",
    "BatchNormEval",
    "BatchNormTrain",
    "BernoulliMask",
    "BroadcastTo",
    "Concat",
    "Const",
    "Conv",
    "ConvConfig",
    "Cos",
    "Detach",
    "Exp",
    "Flatten",
    "Gather",
    "Gelu",
    "HardMask",
    "HardMaskedSoftmax",
    "Input",
    "Inv",
    "LayerNorm",
    "Linear",
    "Log",
    "LogSoftmax",
    "Matmul",
    "MaxElem",
    "MaxPool",
    "MinElem",
    "MseLoss",
    "MulElem",
    "OpKind",
    "Permute",
    "RandUniform",
    "ReduceMean",
    "ReduceSum",
    "Relu",
    "Reshape",
    "SafeLog",
    "Scale",
    "ScaledDotProductAttention",
    "Shape",
    "Sigmoid",
    "Sin",
    "Softmax",
    "Softplus",
    "Sqrt",
    "Sub",
    "Sum",
    "Tanh",
    "Transpose",
    "WindowConfig",
    "checked_dims",
    "dim_entries",
    "numel",
    "render_shape",
]

Shape = tuple[int, ...]
"""A tensor shape: one non-negative extent per axis; ``()`` is a scalar."""


def render_shape(shape: Sequence[int]) -> str:
    """Render a shape or index list as the original does: ``[1, 4]``, scalar ``[]``."""
    return "[" + ", ".join(str(int(d)) for d in shape) + "]"


def numel(shape: Sequence[int]) -> int:
    """Number of elements of a tensor of ``shape`` (1 for a scalar)."""
    return math.prod(shape)



_DIMS_ACCEPTED = (
    f"accepted: a list, tuple or 1-d integer array of at most {MAX_RANK} entries, one per axis; "
    "a set or mapping has no order"
)


def _nat(value: object, what: str) -> int:
    if not is_builtin_or_numpy_int(value) or int(value) < 0:
        raise IRError(f"{what}: expected a non-negative integer, got {shown_briefly(value)}")
    return int(value)


def dim_entries(value: object, what: str) -> tuple[object, ...]:
    """The entries of ``value``, a shape or permutation argument, unconverted: ``value`` must be a
    sequence (a list, tuple, ``torch.Size``, ``range``) or a 1-d numpy array, not a string, of at
    most :data:`MAX_RANK` entries. Its length is read before any entry (review239 F2: a stride-0
    view of ``2**40`` entries was iterated for minutes); a generator or other iterator is read up to
    one entry past that bound; a set, mapping, 0-d array or tensor, number or ``None`` is refused
    (review239 F4, F9).

    Raises:
        IRError: ``<what>: expected a sequence of non-negative integers, got None of type NoneType
            (accepted: ...)``; ``<what>: expected a sequence of non-negative integers, got
            array([1, 1, ..., 1], ...) of length 1099511627776 (accepted: ... at most 64 ...)``.
    """
    if isinstance(value, Iterator):  # a generator, read up to one entry past the bound (review241 F6)
        drawn = tuple(itertools.islice(value, MAX_RANK + 1))
        if len(drawn) > MAX_RANK:
            raise IRError(
                f"{what}: expected a sequence of non-negative integers, got a {type(value).__name__} of more "
                f"than {MAX_RANK} entries ({_DIMS_ACCEPTED})"
            )
        return drawn
    rank = value.ndim if isinstance(value, np.ndarray) else None
    if (
        isinstance(value, str | bytes)
        or not isinstance(value, Sequence | np.ndarray)
        or rank not in {None, 1}
    ):
        kind = f"(a {rank}-d array)" if rank is not None else f"of type {type(value).__name__}"
        raise IRError(
            f"{what}: expected a sequence of non-negative integers, got {shown_briefly(value)} {kind} "
            f"({_DIMS_ACCEPTED})"
        )
    length = len(value)
    if length > MAX_RANK:
        raise IRError(
            f"{what}: expected a sequence of non-negative integers, got {shown_briefly(value)} of length "
            f"{length} ({_DIMS_ACCEPTED})"
        )
    return tuple(value)


def checked_dims(value: object, what: str) -> Shape:
    """``value`` as a tuple of Python ints >= 0 (Python or numpy ints; bools refused), read by
    :func:`dim_entries` (a sequence or 1-d array of at most :data:`MAX_RANK` entries).

    Raises:
        IRError: ``<what>: expected a sequence of non-negative integers, got ...`` (as
            :func:`dim_entries`) or ``<what>: expected a non-negative integer, got -1``.
    """
    return tuple(_nat(v, what) for v in dim_entries(value, what))


def _finite(op: str, name: str, value: int | float | np.integer | np.floating) -> float:
    """``value`` as a finite float, refused as the kernels' guards refuse it.

    Raises:
        IRError: ``<op>: <name> = nan is not accepted (accepted: a finite real number)`` (also
            ``inf``, ``-inf`` and an int too large for a float).
    """
    try:
        result = float(value)
    except OverflowError:
        result = math.inf if value > 0 else -math.inf
    if not math.isfinite(result):
        raise IRError(f"{op}: {name} = {result!r} is not accepted (accepted: a finite real number)")
    return result


def _set(obj: object, name: str, value: object) -> None:
    """Normalise a field of a frozen dataclass inside ``__post_init__``."""
    object.__setattr__(obj, name, value)


@dataclass(frozen=True, slots=True)
class WindowConfig:
    """Pooling window over the last ``spatial_rank`` axes (``WindowConfig`` of the original).

    ``kernel``, ``stride`` and ``padding`` have one entry per spatial axis; kernel and stride are
    positive; padding is symmetric zero padding of at most half the kernel on every axis
    (``padding <= kernel // 2``, as PyTorch pools and the pooling kernels require). Raises
    :class:`IRError` on bad parameters, e.g. ``window config: padding=[2, 2] is more than half of
    kernel=[2, 2] (accepted: padding <= kernel // 2 on every spatial axis, as PyTorch pools)``.
    """

    kernel: Shape
    stride: Shape
    padding: Shape

    def __post_init__(self) -> None:
        kernel = checked_dims(self.kernel, "window kernel")
        stride = checked_dims(self.stride, "window stride")
        padding = checked_dims(self.padding, "window padding")
        if not kernel or len(stride) != len(kernel) or len(padding) != len(kernel):
            raise IRError(
                "window config: kernel, stride and padding need one entry per spatial axis, got "
                f"kernel={render_shape(kernel)}, stride={render_shape(stride)}, "
                f"padding={render_shape(padding)}"
            )
        if min(kernel) == 0 or min(stride) == 0:
            raise IRError(
                f"window config: kernel and stride must be positive, got kernel={render_shape(kernel)}, "
                f"stride={render_shape(stride)}"
            )
        if any(p > k // 2 for p, k in zip(padding, kernel, strict=True)):
            raise IRError(
                f"window config: padding={render_shape(padding)} is more than half of "
                f"kernel={render_shape(kernel)} (accepted: padding <= kernel // 2 on every spatial axis, "
                "as PyTorch pools)"
            )
        _set(self, "kernel", kernel)
        _set(self, "stride", stride)
        _set(self, "padding", padding)

    @classmethod
    def make(
        cls,
        kernel: int | Sequence[int],
        stride: int | Sequence[int] | None = None,
        padding: int | Sequence[int] = 0,
        *,
        spatial_rank: int = 2,
    ) -> WindowConfig:
        """Build a config from ints (repeated over ``spatial_rank`` axes) or per-axis sequences.

        ``stride`` defaults to the kernel size, as in ``torch.nn.functional.max_pool2d``.
        """
        k = _expand(kernel, spatial_rank)
        return cls(k, k if stride is None else _expand(stride, spatial_rank), _expand(padding, spatial_rank))

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)

    def describe(self) -> str:
        return (
            f"{{kernel={render_shape(self.kernel)}, stride={render_shape(self.stride)}, "
            f"padding={render_shape(self.padding)}}}"
        )


def _expand(value: int | Sequence[int], rank: int) -> Shape:
    if is_builtin_or_numpy_int(value):
        return (int(value),) * rank
    return checked_dims(value, "window parameter")


@dataclass(frozen=True, slots=True)
class ConvConfig:
    """Convolution parameters (``ConvConfig`` of the original).

    Layout: channel axis ``channel_axis`` immediately followed by the ``spatial_rank =
    len(kernel)`` spatial axes, which are the last axes (``[C, *spatial]`` with ``channel_axis=0``,
    ``[N, C, *spatial]`` with ``channel_axis=1``). Empty ``stride``/``dilation`` mean ones, empty
    ``padding`` means zeros, empty ``padding_after`` means ``padding`` (symmetric), as the original's
    defaults. ``in_channels`` and ``out_channels`` must be divisible by ``groups``. The weight
    payload has shape ``[out_channels, in_channels // groups, *kernel]``.
    """

    in_channels: int
    out_channels: int
    kernel: Shape
    stride: Shape = ()
    padding: Shape = ()
    dilation: Shape = ()
    padding_after: Shape = ()
    groups: int = 1
    channel_axis: int = 0

    def __post_init__(self) -> None:
        kernel = checked_dims(self.kernel, "conv kernel")
        rank = len(kernel)
        stride = checked_dims(self.stride, "conv stride") or (1,) * rank
        padding = checked_dims(self.padding, "conv padding") or (0,) * rank
        dilation = checked_dims(self.dilation, "conv dilation") or (1,) * rank
        after = checked_dims(self.padding_after, "conv padding_after") or padding
        groups = _nat(self.groups, "conv groups")
        in_c = _nat(self.in_channels, "conv in_channels")
        out_c = _nat(self.out_channels, "conv out_channels")
        _nat(self.channel_axis, "conv channel_axis")
        if rank == 0 or any(len(t) != rank for t in (stride, padding, dilation, after)):
            raise IRError(
                "conv config: kernel, stride, padding, dilation and padding_after need one entry per "
                f"spatial axis, got kernel={render_shape(kernel)}, stride={render_shape(stride)}, "
                f"padding={render_shape(padding)}, dilation={render_shape(dilation)}, "
                f"padding_after={render_shape(after)}"
            )
        if min(kernel) == 0 or min(stride) == 0 or min(dilation) == 0:
            raise IRError(
                f"conv config: kernel, stride and dilation must be positive, got kernel="
                f"{render_shape(kernel)}, stride={render_shape(stride)}, dilation={render_shape(dilation)}"
            )
        if groups == 0 or in_c % groups or out_c % groups:
            raise IRError(
                f"conv config: groups={groups} must be positive and divide in_channels={in_c} "
                f"and out_channels={out_c}"
            )
        _set(self, "kernel", kernel)
        _set(self, "stride", stride)
        _set(self, "padding", padding)
        _set(self, "dilation", dilation)
        _set(self, "padding_after", after)

    @property
    def spatial_rank(self) -> int:
        return len(self.kernel)

    @property
    def weight_shape(self) -> Shape:
        return (self.out_channels, self.in_channels // self.groups, *self.kernel)

    def describe(self) -> str:
        return (
            f"{{in_channels={self.in_channels}, out_channels={self.out_channels}, "
            f"kernel={render_shape(self.kernel)}, stride={render_shape(self.stride)}, "
            f"padding={render_shape(self.padding)}, dilation={render_shape(self.dilation)}, "
            f"padding_after={render_shape(self.padding_after)}, groups={self.groups}, "
            f"channel_axis={self.channel_axis}}}"
        )


@dataclass(frozen=True, slots=True)
class HardMask:
    """A static boolean mask (``HardMask`` of the original): shape + flat row-major ``allowed``.

    True = the position may be attended. It applies to inputs whose shape it broadcasts to
    (numpy rules), e.g. an ``[nQ, nK]`` mask over ``[batch, heads, nQ, nK]`` scores.
    """

    shape: Shape
    allowed: tuple[bool, ...]

    def __post_init__(self) -> None:
        shape = checked_dims(self.shape, "hard mask shape")
        allowed = tuple(self.allowed)
        if len(allowed) != numel(shape):
            raise IRError(
                f"hard mask: {len(allowed)} entries do not fill shape {render_shape(shape)} "
                f"({numel(shape)} elements)"
            )
        if not all(type(a) is bool for a in allowed):  # one C-speed pass in the usual case
            if not all(isinstance(a, bool | np.bool_) for a in allowed):
                raise IRError("hard mask: allowed entries must be booleans")
            allowed = tuple(bool(a) for a in allowed)
        _set(self, "shape", shape)
        _set(self, "allowed", allowed)

    @classmethod
    def from_array(cls, mask: npt.ArrayLike) -> HardMask:
        """Build from a boolean array; a non-boolean array is refused (a 0/1 float array is a bias)."""
        array = np.asarray(mask)
        if array.dtype != np.bool_:
            raise IRError(f"hard mask: expected a boolean array, got dtype {array.dtype}")
        return cls(tuple(int(d) for d in array.shape), tuple(array.reshape(-1).tolist()))  # Python bools

    def to_array(self) -> npt.NDArray[np.bool_]:
        return np.array(self.allowed, dtype=np.bool_).reshape(self.shape)

    def describe(self) -> str:
        bits = ", ".join("1" if a else "0" for a in self.allowed)
        return f"{{shape={render_shape(self.shape)}, allowed=[{bits}]}}"


class OpKind:
    """Base of every IR operation kind. Subclasses are frozen dataclasses.

    Class attributes: ``tag``, ``min_parents``, ``max_parents`` (None = unbounded),
    ``backend_op`` (None = needs no kernel), ``extension`` (True for torchlean additions).
    """

    __slots__ = ()

    tag: ClassVar[str]
    min_parents: ClassVar[int]
    max_parents: ClassVar[int | None]
    backend_op: ClassVar[BackendOp | None]
    extension: ClassVar[bool] = False

    def __init_subclass__(
        cls,
        *,
        tag: str | None = None,
        arity: int | tuple[int, int | None] = 0,
        op: BackendOp | None = None,
        extension: bool = False,
    ) -> None:
        """Fix the class-level facts: ``class Add(OpKind, tag="add", arity=2, op=BackendOp.ADD)``.

        ``dataclass(slots=True)`` re-creates the class without keywords; the facts are then already
        in the copied class namespace and are kept.
        """
        super().__init_subclass__()
        if tag is None:
            return
        cls.tag = tag
        cls.min_parents, cls.max_parents = (arity, arity) if isinstance(arity, int) else arity
        cls.backend_op = op
        cls.extension = extension

    @property
    def arity(self) -> tuple[int, int | None]:
        """``(min, max)`` parent count; ``max`` is None when unbounded."""
        return (self.min_parents, self.max_parents)

    def _args(self) -> tuple[str, ...]:
        return ()

    def describe(self) -> str:
        """The original's ``repr`` without namespace: the tag then each parameter."""
        return " ".join((self.tag, *self._args()))

    def __str__(self) -> str:
        return self.describe()


# ----------------------------------------------------------------------------------------- sources


@dataclass(frozen=True, slots=True)
class Input(OpKind, tag="input", arity=0, op=None):
    """A graph input; its shape is the node's declared ``out_shape``."""


@dataclass(frozen=True, slots=True)
class Const(OpKind, tag="const", arity=0, op=None):
    """A constant of shape ``value_shape``; the value lives in the payload store."""

    value_shape: Shape

    def __post_init__(self) -> None:
        _set(self, "value_shape", checked_dims(self.value_shape, "const"))

    def _args(self) -> tuple[str, ...]:
        return (render_shape(self.value_shape),)


@dataclass(frozen=True, slots=True)
class RandUniform(OpKind, tag="rand_uniform", arity=0, op=BackendOp.RAND_UNIFORM):
    """Seeded U[0, 1) tensor of the declared shape; key ``keyOf(seed, node index)``."""

    seed: int

    def __post_init__(self) -> None:
        _set(self, "seed", _nat(self.seed, "rand_uniform seed"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.seed),)


@dataclass(frozen=True, slots=True)
class BernoulliMask(OpKind, tag="bernoulli_mask", arity=1, op=BackendOp.BERNOULLI_MASK):
    """Seeded {0, 1} mask of the declared shape; the one parent is the scalar keep probability."""

    seed: int

    def __post_init__(self) -> None:
        _set(self, "seed", _nat(self.seed, "bernoulli_mask seed"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.seed),)


# ------------------------------------------------------------------------------------------- views


@dataclass(frozen=True, slots=True)
class Permute(OpKind, tag="permute", arity=1, op=BackendOp.PERMUTE):
    """Axis permutation: output axis ``i`` is input axis ``perm[i]`` (``torch.permute``)."""

    perm: Shape

    def __post_init__(self) -> None:
        _set(self, "perm", checked_dims(self.perm, "permute"))

    def _args(self) -> tuple[str, ...]:
        return (render_shape(self.perm),)


@dataclass(frozen=True, slots=True)
class Transpose(OpKind, tag="transpose", arity=1, op=BackendOp.PERMUTE):
    """Swap two axes (``torch.transpose``)."""

    axis1: int
    axis2: int

    def __post_init__(self) -> None:
        _set(self, "axis1", _nat(self.axis1, "transpose axis"))
        _set(self, "axis2", _nat(self.axis2, "transpose axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis1), str(self.axis2))


@dataclass(frozen=True, slots=True)
class Detach(OpKind, tag="detach", arity=1, op=None):
    """Identity forward; stops gradients."""


@dataclass(frozen=True, slots=True)
class BroadcastTo(OpKind, tag="broadcast_to", arity=1, op=BackendOp.BROADCAST):
    """Broadcast the parent from ``from_shape`` to ``to_shape`` (numpy/torch rules)."""

    from_shape: Shape
    to_shape: Shape

    def __post_init__(self) -> None:
        _set(self, "from_shape", checked_dims(self.from_shape, "broadcast_to"))
        _set(self, "to_shape", checked_dims(self.to_shape, "broadcast_to"))

    def _args(self) -> tuple[str, ...]:
        return (render_shape(self.from_shape), render_shape(self.to_shape))


@dataclass(frozen=True, slots=True)
class Reshape(OpKind, tag="reshape", arity=1, op=BackendOp.RESHAPE):
    """Row-major reshape from ``in_shape`` to ``out_shape`` (same element count)."""

    in_shape: Shape
    out_shape: Shape

    def __post_init__(self) -> None:
        _set(self, "in_shape", checked_dims(self.in_shape, "reshape"))
        _set(self, "out_shape", checked_dims(self.out_shape, "reshape"))

    def _args(self) -> tuple[str, ...]:
        return (render_shape(self.in_shape), render_shape(self.out_shape))


@dataclass(frozen=True, slots=True)
class Flatten(OpKind, tag="flatten", arity=1, op=BackendOp.RESHAPE):
    """Flatten a tensor of shape ``shape`` to a vector of ``numel(shape)`` elements."""

    shape: Shape

    def __post_init__(self) -> None:
        _set(self, "shape", checked_dims(self.shape, "flatten"))

    def _args(self) -> tuple[str, ...]:
        return (render_shape(self.shape),)


@dataclass(frozen=True, slots=True)
class Concat(OpKind, tag="concat", arity=(2, None), op=BackendOp.CONCAT):
    """Concatenate two or more parents along ``axis``."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "concat axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


@dataclass(frozen=True, slots=True)
class Gather(OpKind, tag="gather", arity=2, op=BackendOp.GATHER, extension=True):
    """torchlean extension: ``torch.gather(x, axis, index)``; parents ``x`` and ``index`` (int64,
    of x's rank, extents at most x's on every axis but ``axis``); the output has the index's
    shape: ``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "gather axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


# ------------------------------------------------------------------------------------- pointwise


@dataclass(frozen=True, slots=True)
class Add(OpKind, tag="add", arity=2, op=BackendOp.ADD):
    """Elementwise sum of two equal-shaped parents (broadcasting is explicit: ``broadcast_to``)."""


@dataclass(frozen=True, slots=True)
class Sub(OpKind, tag="sub", arity=2, op=BackendOp.SUB):
    """Elementwise difference of two equal-shaped parents."""


@dataclass(frozen=True, slots=True)
class MulElem(OpKind, tag="mul_elem", arity=2, op=BackendOp.MUL):
    """Elementwise product of two equal-shaped parents."""


@dataclass(frozen=True, slots=True)
class MaxElem(OpKind, tag="max_elem", arity=2, op=BackendOp.MAX):
    """Elementwise maximum of two equal-shaped parents."""


@dataclass(frozen=True, slots=True)
class MinElem(OpKind, tag="min_elem", arity=2, op=BackendOp.MIN):
    """Elementwise minimum of two equal-shaped parents."""


@dataclass(frozen=True, slots=True)
class Abs(OpKind, tag="abs", arity=1, op=BackendOp.ABS):
    """Elementwise absolute value."""


@dataclass(frozen=True, slots=True)
class Sqrt(OpKind, tag="sqrt", arity=1, op=BackendOp.SQRT):
    """Elementwise square root."""


@dataclass(frozen=True, slots=True)
class Inv(OpKind, tag="inv", arity=1, op=BackendOp.INV):
    """Elementwise reciprocal ``1 / x``."""


@dataclass(frozen=True, slots=True)
class Relu(OpKind, tag="relu", arity=1, op=BackendOp.RELU):
    """Elementwise ``max(x, 0)``."""


@dataclass(frozen=True, slots=True)
class Tanh(OpKind, tag="tanh", arity=1, op=BackendOp.TANH):
    """Elementwise hyperbolic tangent."""


@dataclass(frozen=True, slots=True)
class Sigmoid(OpKind, tag="sigmoid", arity=1, op=BackendOp.SIGMOID):
    """Elementwise logistic function."""


@dataclass(frozen=True, slots=True)
class Exp(OpKind, tag="exp", arity=1, op=BackendOp.EXP):
    """Elementwise exponential."""


@dataclass(frozen=True, slots=True)
class Log(OpKind, tag="log", arity=1, op=BackendOp.LOG):
    """Elementwise natural logarithm.

    :func:`torchlean.ir.evaluate` refuses an input with values <= 0 or NaN
    (:data:`torchlean.ir.evaluate.LOG_DOMAIN_MESSAGE`; use ``safe_log``). The typed-graph executor
    (``torchlean.autograd.typed_graph.GraphProgram``) does not check: it computes them as the eager
    ``log`` and torch do (NaN for negative values and NaN, ``-inf`` for 0).
    """


@dataclass(frozen=True, slots=True)
class Sin(OpKind, tag="sin", arity=1, op=BackendOp.SIN):
    """Elementwise sine."""


@dataclass(frozen=True, slots=True)
class Cos(OpKind, tag="cos", arity=1, op=BackendOp.COS):
    """Elementwise cosine."""


@dataclass(frozen=True, slots=True)
class Softplus(OpKind, tag="softplus", arity=1, op=BackendOp.SOFTPLUS):
    """Elementwise ``log(1 + exp(x))``."""


@dataclass(frozen=True, slots=True)
class SafeLog(OpKind, tag="safe_log", arity=2, op=BackendOp.SAFE_LOG):
    """``log(softplus(x) + eps)``; parents: ``x`` and the scalar ``eps``."""


@dataclass(frozen=True, slots=True)
class Gelu(OpKind, tag="gelu", arity=1, op=BackendOp.GELU, extension=True):
    """torchlean extension: elementwise GELU (exact, erf form, as ``torch.nn.functional.gelu``)."""


@dataclass(frozen=True, slots=True)
class Scale(OpKind, tag="scale", arity=1, op=BackendOp.SCALE, extension=True):
    """torchlean extension: multiply by the constant ``factor``, a finite real number.

    Raises :class:`IRError`: ``scale: expected a real factor, got '2'`` (also for a bool), or
    ``scale: factor = nan is not accepted (accepted: a finite real number)`` (the kernel's refusal,
    up front; likewise ``inf``).
    """

    factor: float

    def __post_init__(self) -> None:
        real = int | float | np.integer | np.floating
        if isinstance(self.factor, bool) or not isinstance(self.factor, real):
            raise IRError(f"scale: expected a real factor, got {self.factor!r}")
        _set(self, "factor", _finite("scale", "factor", self.factor))

    def _args(self) -> tuple[str, ...]:
        return (repr(self.factor),)


# ------------------------------------------------------------------------------------- reductions


@dataclass(frozen=True, slots=True)
class ReduceSum(OpKind, tag="reduce_sum", arity=1, op=BackendOp.REDUCE_SUM):
    """Sum along ``axis``, removing it (``torch.sum(x, dim=axis)``)."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "reduce_sum axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


@dataclass(frozen=True, slots=True)
class ReduceMean(OpKind, tag="reduce_mean", arity=1, op=BackendOp.REDUCE_MEAN):
    """Mean along ``axis``, removing it (``torch.mean(x, dim=axis)``)."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "reduce_mean axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


@dataclass(frozen=True, slots=True)
class Sum(OpKind, tag="sum", arity=1, op=BackendOp.REDUCE_SUM):
    """Sum of all elements, to a scalar."""


@dataclass(frozen=True, slots=True)
class MseLoss(OpKind, tag="mse_loss", arity=2, op=BackendOp.MSE_LOSS):
    """Mean of squared differences of two equal-shaped parents, to a scalar."""


# ------------------------------------------------------------------------------- linear algebra


@dataclass(frozen=True, slots=True)
class Matmul(OpKind, tag="matmul", arity=2, op=BackendOp.MATMUL):
    """``torch.matmul``: last two axes, leading batch axes broadcast, 1-D operands promoted."""


@dataclass(frozen=True, slots=True)
class Linear(OpKind, tag="linear", arity=1, op=BackendOp.LINEAR):
    """``x W^T + b`` over the last axis, leading axes preserved; W ``[out, in]``, b in the payload."""


@dataclass(frozen=True, slots=True)
class LinearOf(OpKind, tag="linear_of", arity=(2, 3), op=BackendOp.LINEAR, extension=True):
    """torchlean extension: ``x W^T + b`` as :class:`Linear`, with W ``[out, in]`` and b ``[out]``
    as parents (computed values: a scaled, masked or normalised weight) rather than a payload, so
    a layer of your own that passes such a weight to ``ops.linear`` runs eager's one ``linear``
    kernel in a typed graph too (review144 F1)."""


@dataclass(frozen=True, slots=True)
class Conv(OpKind, tag="conv", arity=1, op=BackendOp.CONV):
    """N-d convolution (cross-correlation, as ``torch.nn.functional.conv*d``); weights in payload."""

    config: ConvConfig

    def _args(self) -> tuple[str, ...]:
        return (self.config.describe(),)


@dataclass(frozen=True, slots=True)
class MaxPool(OpKind, tag="max_pool", arity=1, op=BackendOp.MAX_POOL):
    """Max pooling over the last ``config.spatial_rank`` axes (padding never wins)."""

    config: WindowConfig

    def _args(self) -> tuple[str, ...]:
        return (self.config.describe(),)


@dataclass(frozen=True, slots=True)
class AvgPool(OpKind, tag="avg_pool", arity=1, op=BackendOp.AVG_POOL):
    """Average pooling over the last spatial axes; zero padding counts in the divisor."""

    config: WindowConfig

    def _args(self) -> tuple[str, ...]:
        return (self.config.describe(),)


# ---------------------------------------------------------------------------------- normalisation


@dataclass(frozen=True, slots=True)
class BatchNormEval(OpKind, tag="batch_norm_eval", arity=1, op=BackendOp.BATCH_NORM):
    """Batch normalisation with running statistics (payload) over ``channel_axis``."""

    channel_axis: int
    channels: int

    def __post_init__(self) -> None:
        _set(self, "channel_axis", _nat(self.channel_axis, "batch_norm_eval channel_axis"))
        _set(self, "channels", _nat(self.channels, "batch_norm_eval channels"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.channel_axis), str(self.channels))


@dataclass(frozen=True, slots=True)
class BatchNormTrain(OpKind, tag="batch_norm_train", arity=1, op=BackendOp.BATCH_NORM, extension=True):
    """torchlean extension: training-mode batch normalisation over ``channel_axis`` with the
    batch's statistics (mean and biased variance over every other axis, as
    ``torch.nn.functional.batch_norm(..., training=True)``); the affine weight and bias and eps in
    the payload (:class:`~torchlean.ir.payloads.BatchNormTrainParams`). The node computes the
    output only: the running statistics' update is the caller's (the trainer runs it eagerly on
    the node's input, as ``EagerOps.buffer_updates`` does)."""

    channel_axis: int
    channels: int

    def __post_init__(self) -> None:
        _set(self, "channel_axis", _nat(self.channel_axis, "batch_norm_train channel_axis"))
        _set(self, "channels", _nat(self.channels, "batch_norm_train channels"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.channel_axis), str(self.channels))


@dataclass(frozen=True, slots=True)
class LayerNorm(OpKind, tag="layernorm", arity=1, op=BackendOp.LAYER_NORM):
    """Normalise the suffix of axes from ``axis`` (``F.layer_norm(x, x.shape[axis:])``)."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "layernorm axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


@dataclass(frozen=True, slots=True)
class Softmax(OpKind, tag="softmax", arity=1, op=BackendOp.SOFTMAX):
    """Softmax along ``axis``."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "softmax axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


@dataclass(frozen=True, slots=True)
class LogSoftmax(OpKind, tag="log_softmax", arity=1, op=BackendOp.LOG_SOFTMAX, extension=True):
    """torchlean extension: log-softmax along ``axis`` (cross-entropy objectives)."""

    axis: int

    def __post_init__(self) -> None:
        _set(self, "axis", _nat(self.axis, "log_softmax axis"))

    def _args(self) -> tuple[str, ...]:
        return (str(self.axis),)


@dataclass(frozen=True, slots=True)
class HardMaskedSoftmax(OpKind, tag="hard_masked_softmax", arity=1, op=BackendOp.HARD_MASKED_SOFTMAX):
    """Last-axis softmax over the allowed entries; blocked entries are exactly 0, blocked rows 0."""

    mask: HardMask

    def _args(self) -> tuple[str, ...]:
        return (self.mask.describe(),)


@dataclass(frozen=True, slots=True)
class ScaledDotProductAttention(
    OpKind,
    tag="scaled_dot_product_attention",
    arity=3,
    op=BackendOp.SCALED_DOT_PRODUCT_ATTENTION,
    extension=True,
):
    """torchlean extension: ``softmax(q k^T * scale, masked) v``; parents q, k, v.

    q ``[..., nQ, d]``, k ``[..., nK, d]``, v ``[..., nK, dv]`` -> ``[..., nQ, dv]`` (equal
    leading axes). ``mask`` (a static :class:`HardMask` broadcasting to ``[..., nQ, nK]``) and
    ``causal`` (``"upper_left"`` or ``"lower_right"`` alignment, or None) combine by AND.
    ``scale`` None means ``1/sqrt(d)`` (1 when ``d == 0``), else a finite real number (NaN and
    +-inf are refused, as the kernel refuses them). Fully blocked rows are zeros.
    """

    mask: HardMask | None = None
    causal: str | None = None
    scale: float | None = None

    def __post_init__(self) -> None:
        if self.causal not in (None, "upper_left", "lower_right"):
            raise IRError(
                f"scaled_dot_product_attention: unknown causal alignment {self.causal!r} "
                "(accepted: upper_left | lower_right)"
            )
        if self.scale is not None:
            real = int | float | np.integer | np.floating
            if isinstance(self.scale, bool) or not isinstance(self.scale, real):
                raise IRError(f"scaled_dot_product_attention: expected a real scale, got {self.scale!r}")
            _set(self, "scale", _finite("scaled_dot_product_attention", "scale", self.scale))

    def _args(self) -> tuple[str, ...]:
        mask = "none" if self.mask is None else self.mask.describe()
        scale = "none" if self.scale is None else repr(self.scale)
        return (f"{{mask={mask}, causal={self.causal or 'none'}, scale={scale}}}",)
