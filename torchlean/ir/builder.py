"""A small builder that appends IR nodes with inferred shapes and emits constants lazily.

Each op method takes node references and returns the new node's id; the output shape is inferred
with :func:`torchlean.ir.infer.infer_node_shape` (so a bad op fails at once with the shape
checker's message). A reference is a node id or a :class:`Param`: a parameter declared with
:meth:`GraphBuilder.param` is emitted as a ``const`` node at its *first use*, the way the original
lowers model parameters (anchor-runtime.md §4.2). A vector ``linear 4 -> 8`` lowers as::

    b = GraphBuilder()
    x = b.input([4])
    w, bias = b.param(W), b.param(B)                 # W [8, 4], B [8]; nothing emitted yet
    h = b.reshape(x, [1, 4])                         # 1
    h = b.matmul(h, b.transpose(w, 0, 1))            # const W = 2, transpose = 3, matmul = 4
    h = b.add(h, b.broadcast_to(bias, [1, 8]))       # const B = 5, broadcast_to = 6, add = 7
    y = b.reshape(h, [8])                            # 8
    built = b.build()                                # graph + payloads (const values by node id)
"""

from __future__ import annotations

import itertools
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_builtin_or_numpy_int
from torchlean.backend.fields import describe
from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node
from torchlean.ir.infer import check_mask_shape, infer_node_shape
from torchlean.ir.ops import (
    Abs,
    Add,
    AvgPool,
    BatchNormEval,
    BatchNormTrain,
    BernoulliMask,
    BroadcastTo,
    Concat,
    Const,
    Conv,
    ConvConfig,
    Cos,
    Detach,
    Exp,
    Flatten,
    Gather,
    Gelu,
    HardMask,
    HardMaskedSoftmax,
    Input,
    Inv,
    LayerNorm,
    Linear,
    LinearOf,
    Log,
    LogSoftmax,
    Matmul,
    MaxElem,
    MaxPool,
    MinElem,
    MseLoss,
    MulElem,
    OpKind,
    Permute,
    RandUniform,
    ReduceMean,
    ReduceSum,
    Relu,
    Reshape,
    SafeLog,
    Scale,
    ScaledDotProductAttention,
    Shape,
    Sigmoid,
    Sin,
    Softmax,
    Softplus,
    Sqrt,
    Sub,
    Sum,
    Tanh,
    Transpose,
    WindowConfig,
    checked_dims,
    dim_entries,
    render_shape,
)
from torchlean.ir.payloads import (
    Array,
    BatchNormParams,
    BatchNormTrainParams,
    ConvParams,
    LayerNormParams,
    LinearParams,
    Payload,
    as_array,
    read_array,
)

__all__ = ["BuiltGraph", "GraphBuilder", "Param", "Ref"]

_REAL_KINDS = "biuf"  # numpy dtype kinds: bool, signed and unsigned integers, floating point


def _real_array(value: npt.ArrayLike, what: str) -> Array:
    """``as_array(value)`` when numpy makes a bool, integer or floating-point array of it (the
    dtype checked before the copy).

    Raises:
        IRError: ``<what>: expected bool, integer or floating-point data, got dtype <U1 (accepted:
            a bool, int or float array, or numbers numpy turns into one)``; ``<what> value: ...``
            as :func:`~torchlean.ir.payloads.as_array` refuses (ragged data, a torch tensor that
            requires grad or is on ``meta``).
    """
    array = read_array(value, f"{what} value")
    if array.dtype.kind not in _REAL_KINDS:
        raise IRError(
            f"{what}: expected bool, integer or floating-point data, got dtype {array.dtype} "
            "(accepted: a bool, int or float array, or numbers numpy turns into one)"
        )
    return as_array(array, f"{what} value")


@dataclass(frozen=True, slots=True, eq=False)
class Param:
    """A constant declared to a builder and emitted as a ``const`` node at its first use."""

    key: int
    value: Array
    name: str = ""

    @property
    def shape(self) -> Shape:
        return tuple(int(d) for d in self.value.shape)


Ref = int | Param
"""A node reference: an existing node id (a Python int, or a numpy integer read as one), or a
deferred constant."""


@dataclass(frozen=True, slots=True)
class BuiltGraph:
    """A finished graph with its payload store (const values and layer parameters by node id)."""

    graph: Graph
    payloads: Mapping[int, Payload]

    @property
    def output(self) -> int:
        """Id of the last node (the graph's result by convention)."""
        return len(self.graph.nodes) - 1


class GraphBuilder:
    """Appends IR nodes in order; ids are ``0, 1, 2, ...``. See the module docstring.

    Every op method takes :data:`Ref` arguments, appends one node (after any deferred constants
    it uses) and returns the node's id; its output shape is inferred. A bad op raises
    :class:`IRError` with the shape checker's message and appends nothing but the constants it
    already emitted.
    """

    def __init__(self) -> None:
        self._nodes: list[Node] = []
        self._payloads: dict[int, Payload] = {}
        self._emitted: dict[int, int] = {}
        self._declared: dict[int, Param] = {}
        self._keys = itertools.count()

    # ------------------------------------------------------------------------------------- core

    def node(self, kind: OpKind, *parents: Ref, out_shape: Sequence[int] = ()) -> int:
        """Append a node of ``kind`` over ``parents`` and return its id.

        Deferred parameters among ``parents`` are emitted first, in argument order. ``out_shape``
        is only read by kinds whose shape is declared (input, rand_uniform, bernoulli_mask,
        linear); it must be a sequence (not a string) of integers >= 0 (Python or numpy ints;
        bools refused), as every op's shape arguments.

        Raises:
            IRError: ``<kind>: expected a non-negative integer, got 2.5`` (or ``... a sequence of
                non-negative integers, got ...``) for a bad ``out_shape``, before anything is
                appended; else the shape checker's message.
        """
        declared = checked_dims(out_shape, kind.tag)
        ids = tuple(self.resolve(p) for p in parents)
        draft = Node(len(self._nodes), ids, kind, declared)
        shape = infer_node_shape(draft, [self._nodes[i].out_shape for i in ids])
        self._nodes.append(Node(draft.id, ids, kind, shape))
        return draft.id

    def resolve(self, ref: Ref) -> int:
        """The node id of ``ref``, emitting a deferred parameter's ``const`` node on first use.

        A node id is a Python or numpy integer (returned as a Python int); bools are refused.

        Raises:
            IRError: ``builder: parameter w was declared to another builder``;
                ``builder: unknown node reference 5 (nodes 0..1)`` for anything else that is not an
                existing node's id (``(no nodes yet)`` on an empty builder).
        """
        if isinstance(ref, Param):
            if self._declared.get(ref.key) is not ref:
                raise IRError(f"builder: parameter {ref.name or ref.key} was declared to another builder")
            if ref.key not in self._emitted:
                self._emitted[ref.key] = self.const(ref.value)
            return self._emitted[ref.key]
        if not is_builtin_or_numpy_int(ref) or not 0 <= ref < len(self._nodes):
            known = f"nodes 0..{len(self._nodes) - 1}" if self._nodes else "no nodes yet"
            raise IRError(f"builder: unknown node reference {ref!r} ({known})")
        return int(ref)

    def shape(self, ref: Ref) -> Shape:
        """The output shape of ``ref`` (a deferred parameter's value shape; emits nothing)."""
        if isinstance(ref, Param):
            return ref.shape
        return self._nodes[self.resolve(ref)].out_shape

    def build(self) -> BuiltGraph:
        """The graph so far and a read-only view of a copy of its payloads."""
        return BuiltGraph(Graph(tuple(self._nodes)), MappingProxyType(dict(self._payloads)))

    # ---------------------------------------------------------------------------------- sources

    def input(self, shape: Sequence[int]) -> int:
        """An ``input`` node of ``shape``: a sequence of integers >= 0 (Python or numpy ints, not
        bools), stored as a tuple of Python ints.

        Raises:
            IRError: ``input: expected a non-negative integer, got -2`` (also for ``2.5``, ``"2"``,
                ``True``), or ``input: expected a sequence of non-negative integers, got 4`` when
                ``shape`` is not a sequence (a string counts as none).
        """
        return self.node(Input(), out_shape=shape)

    def const(self, value: npt.ArrayLike) -> int:
        """A ``const`` node emitted now; the value (copied, read-only) goes to the payload store.

        ``value`` is real data: anything numpy turns into a bool, integer or floating-point array
        (the kernels then compute on float32/float64 and move int64/bool through the shape ops).

        Raises:
            IRError: ``const: expected bool, integer or floating-point data, got dtype <U1
                (accepted: ...)`` for strings, objects, complex numbers and the like; ``const
                value: [[1.0, 2.0], [3.0]] is not a rectangular array: ...`` for ragged data;
                ``const value: a torch tensor of shape (2,) that requires grad, which numpy cannot
                read (accepted: its values, t.detach())`` (a meta tensor likewise).
        """
        array = _real_array(value, "const")
        node = self.node(Const(tuple(int(d) for d in array.shape)))
        self._payloads[node] = array
        return node

    def param(self, value: npt.ArrayLike, name: str = "") -> Param:
        """Declare a constant emitted as a ``const`` node at its first use (same node afterwards).

        Raises:
            IRError: as :meth:`const`, at declaration, for data that is not real
                (``param: expected bool, integer or floating-point data, ...``), ragged
                (``param value: ... is not a rectangular array``) or a torch tensor numpy cannot
                read.
        """
        param = Param(next(self._keys), _real_array(value, "param"), name)
        self._declared[param.key] = param
        return param

    def rand_uniform(self, seed: int, shape: Sequence[int]) -> int:
        """Seeded U[0, 1) tensor of ``shape`` (key ``keyOf(seed, node id)``)."""
        return self.node(RandUniform(seed), out_shape=shape)

    def bernoulli_mask(self, seed: int, keep_prob: Ref, shape: Sequence[int]) -> int:
        """Seeded {0, 1} mask of ``shape``; ``keep_prob`` is a scalar node."""
        return self.node(BernoulliMask(seed), keep_prob, out_shape=shape)

    # ------------------------------------------------------------------------------------ views

    def _axis(self, op: str, x: Ref, axis: int, *, scalar_axis: bool = False) -> int:
        """``axis`` of ``x`` with a negative integer counted from the end (as torch and the eager
        ops); anything else unchanged, for the payload's own check (the IR stores natural-number
        axes, as the original). ``scalar_axis``: the op takes axis 0 of a scalar as torch does
        (the scalar itself; softmax, log_softmax, reduce_sum, reduce_mean), so -1 is 0 there too.

        Raises:
            IRError: a negative axis below ``-rank``, naming ``op``, the shape and the range.
        """
        if not is_builtin_or_numpy_int(axis) or axis >= 0:
            return axis
        shape = self.shape(x)
        rank = max(len(shape), 1) if scalar_axis else len(shape)
        if int(axis) < -rank:
            accepted = f"{-rank}..{rank - 1}" if rank else "none: a scalar has no axes"
            raise IRError(
                f"{op}: axis {int(axis)} out of range for shape {render_shape(shape)} (accepted: {accepted})"
            )
        return int(axis) + rank

    def permute(self, x: Ref, perm: Sequence[int]) -> int:
        """``perm`` may hold negative axes (counted from the end); it is a list, tuple or 1-d
        integer array of at most 64 entries (:func:`~torchlean.ir.ops.dim_entries`).

        Raises:
            IRError: ``permute perm: expected a sequence of non-negative integers, got {1, 0} of
                type set (accepted: ...)`` (also ``None``, a number, a 0-d array, more than 64
                entries); an axis out of range; the shape checker's message.
        """
        entries = dim_entries(perm, "permute perm")
        return self.node(Permute(tuple(self._axis("permute", x, a) for a in entries)), x)  # type: ignore[arg-type]

    def transpose(self, x: Ref, axis1: int, axis2: int) -> int:
        """Swap two axes; negative axes count from the end."""
        return self.node(Transpose(self._axis("transpose", x, axis1), self._axis("transpose", x, axis2)), x)

    def detach(self, x: Ref) -> int:
        return self.node(Detach(), x)

    def broadcast_to(self, x: Ref, shape: Sequence[int]) -> int:
        """``broadcast_to <shape of x> <shape>``.

        Raises:
            IRError: ``broadcast_to shape: expected a sequence of non-negative integers, got None
                of type NoneType (accepted: ...)`` (as :meth:`reshape`); the shape checker's
                message.
        """
        return self.node(BroadcastTo(self.shape(x), dim_entries(shape, "broadcast_to shape")), x)  # type: ignore[arg-type]

    def reshape(self, x: Ref, shape: Sequence[int]) -> int:
        """``reshape <shape of x> <shape>``; ``shape`` is a list, tuple or 1-d integer array of at
        most 64 entries (:func:`~torchlean.ir.ops.dim_entries`).

        Raises:
            IRError: ``reshape shape: expected a sequence of non-negative integers, got None of
                type NoneType (accepted: ...)`` (also a number, a set, a 0-d array or tensor, more
                than 64 entries); ``reshape: expected a non-negative integer, got -1``; the shape
                checker's message.
        """
        return self.node(Reshape(self.shape(x), dim_entries(shape, "reshape shape")), x)  # type: ignore[arg-type]

    def flatten(self, x: Ref) -> int:
        return self.node(Flatten(self.shape(x)), x)

    def concat(self, xs: Sequence[Ref], axis: int) -> int:
        """Join along ``axis`` (negative: counted from the end of the first input's axes)."""
        first = xs[0] if isinstance(xs, Sequence) and not isinstance(xs, str) and len(xs) else None
        return self.node(Concat(axis if first is None else self._axis("concat", first, axis)), *xs)

    # -------------------------------------------------------------------------------- pointwise

    def add(self, a: Ref, b: Ref) -> int:
        return self.node(Add(), a, b)

    def sub(self, a: Ref, b: Ref) -> int:
        return self.node(Sub(), a, b)

    def gather(self, x: Ref, index: Ref, axis: int) -> int:
        """``gather axis`` (torchlean extension, ``torch.gather(x, axis, index)``): ``index`` is an
        int64 node of ``x``'s rank (an ``input`` node: the IR computes no integers); negative
        ``axis`` counted from the end of ``x``'s axes.

        Raises:
            IRError: an axis out of range, or an index of another rank or larger than ``x`` on an
                axis other than ``axis`` (the shape checker's message).
        """
        return self.node(Gather(self._axis("gather", x, axis)), x, index)

    def mul_elem(self, a: Ref, b: Ref) -> int:
        return self.node(MulElem(), a, b)

    def max_elem(self, a: Ref, b: Ref) -> int:
        return self.node(MaxElem(), a, b)

    def min_elem(self, a: Ref, b: Ref) -> int:
        return self.node(MinElem(), a, b)

    def abs(self, x: Ref) -> int:
        return self.node(Abs(), x)

    def sqrt(self, x: Ref) -> int:
        return self.node(Sqrt(), x)

    def inv(self, x: Ref) -> int:
        return self.node(Inv(), x)

    def relu(self, x: Ref) -> int:
        return self.node(Relu(), x)

    def tanh(self, x: Ref) -> int:
        return self.node(Tanh(), x)

    def sigmoid(self, x: Ref) -> int:
        return self.node(Sigmoid(), x)

    def exp(self, x: Ref) -> int:
        return self.node(Exp(), x)

    def log(self, x: Ref) -> int:
        return self.node(Log(), x)

    def sin(self, x: Ref) -> int:
        return self.node(Sin(), x)

    def cos(self, x: Ref) -> int:
        return self.node(Cos(), x)

    def softplus(self, x: Ref) -> int:
        return self.node(Softplus(), x)

    def safe_log(self, x: Ref, eps: Ref) -> int:
        """``log(softplus(x) + eps)``; ``eps`` is a scalar node."""
        return self.node(SafeLog(), x, eps)

    def gelu(self, x: Ref) -> int:
        return self.node(Gelu(), x)

    def scale(self, x: Ref, factor: float) -> int:
        return self.node(Scale(factor), x)

    # ------------------------------------------------------------------------------- reductions

    def reduce_sum(self, x: Ref, axis: int) -> int:
        """Sum over ``axis`` (negative: counted from the end; a scalar's axis 0 or -1 is the scalar
        itself, as in torch)."""
        return self.node(ReduceSum(self._axis("reduce_sum", x, axis, scalar_axis=True)), x)

    def reduce_mean(self, x: Ref, axis: int) -> int:
        """Mean over ``axis`` (negative: counted from the end; a scalar's axis 0 or -1 is the
        scalar itself, as in torch)."""
        return self.node(ReduceMean(self._axis("reduce_mean", x, axis, scalar_axis=True)), x)

    def sum(self, x: Ref) -> int:
        return self.node(Sum(), x)

    def mse_loss(self, prediction: Ref, target: Ref) -> int:
        return self.node(MseLoss(), prediction, target)

    # --------------------------------------------------------------------------- linear algebra

    def matmul(self, a: Ref, b: Ref) -> int:
        return self.node(Matmul(), a, b)

    def linear(self, x: Ref, weight: npt.ArrayLike, bias: npt.ArrayLike | None = None) -> int:
        """A ``linear`` node with payload W ``[out, in]`` and b ``[out]`` (or none).

        Raises:
            IRError: ``linear weight: ... is not a rectangular array: ...`` (likewise ``linear
                bias``, and a torch tensor that requires grad or is on ``meta``, as
                :meth:`const`); ``linear: weight [5, 3] and bias none do not fit input [4]``.
        """
        w = as_array(weight, "linear weight")
        b = None if bias is None else as_array(bias, "linear bias")
        in_shape = self.shape(x)
        if (
            w.ndim != 2
            or not in_shape
            or w.shape[1] != in_shape[-1]
            or (b is not None and b.shape != w.shape[:1])
        ):
            raise IRError(
                f"linear: weight {render_shape(w.shape)} and bias "
                f"{'none' if b is None else render_shape(b.shape)} do not fit input {render_shape(in_shape)}"
            )
        node = self.node(Linear(), x, out_shape=(*in_shape[:-1], int(w.shape[0])))
        self._payloads[node] = LinearParams(w, b)
        return node

    def linear_of(self, x: Ref, weight: Ref, bias: Ref | None = None) -> int:
        """A ``linear_of`` node (torchlean extension): ``linear`` with the weight ``[out, in]`` and
        bias ``[out]`` (or none) as parents, for computed values.

        Raises:
            IRError: shapes that do not fit (the shape checker's message).
        """
        return self.node(LinearOf(), x, weight) if bias is None else self.node(LinearOf(), x, weight, bias)

    def conv(
        self, x: Ref, config: ConvConfig, weight: npt.ArrayLike, bias: npt.ArrayLike | None = None
    ) -> int:
        """A ``conv`` node; payload W ``[out_channels, in_channels // groups, *kernel]``, b or none.

        Raises:
            IRError: ``conv weight: ...`` or ``conv bias: ...`` for data numpy cannot read (as
                :meth:`linear`); ``conv: weight [..] and bias [..] do not fit <config>``.
        """
        w = as_array(weight, "conv weight")
        b = None if bias is None else as_array(bias, "conv bias")
        if w.shape != config.weight_shape or (b is not None and b.shape != (config.out_channels,)):
            raise IRError(
                f"conv: weight {render_shape(w.shape)} and bias "
                f"{'none' if b is None else render_shape(b.shape)} do not fit {config.describe()}"
            )
        node = self.node(Conv(config), x)
        self._payloads[node] = ConvParams(w, b)
        return node

    def max_pool(self, x: Ref, config: WindowConfig) -> int:
        return self.node(MaxPool(config), x)

    def avg_pool(self, x: Ref, config: WindowConfig) -> int:
        return self.node(AvgPool(config), x)

    # ---------------------------------------------------------------------------- normalisation

    def batch_norm_eval(self, x: Ref, channel_axis: int, params: BatchNormParams) -> int:
        """``batch_norm_eval channel_axis channels`` with running statistics ``params``.

        Raises:
            IRError: ``batch_norm_eval: params must be a BatchNormParams, got ... (LinearParams)``;
                ``batch_norm_eval: mean, var, weight and bias must be vectors of one length``;
                the shape checker's message. On failure nothing is appended but the constant of a
                deferred parameter ``x`` (emitted before the shape check, as for every op).
        """
        if not isinstance(params, BatchNormParams):
            raise IRError(f"batch_norm_eval: params must be a BatchNormParams, got {describe(params)}")
        channels = int(np.shape(params.mean)[0]) if np.ndim(params.mean) == 1 else -1
        if channels < 0 or any(
            a is not None and np.shape(a) != (channels,) for a in (params.var, params.weight, params.bias)
        ):
            raise IRError("batch_norm_eval: mean, var, weight and bias must be vectors of one length")
        node = self.node(BatchNormEval(channel_axis, channels), x)
        self._payloads[node] = params
        return node

    def batch_norm_train(self, x: Ref, channel_axis: int, params: BatchNormTrainParams) -> int:
        """``batch_norm_train channel_axis channels`` (torchlean extension): normalise with the
        batch's statistics; ``params`` holds the affine weight and bias (``[channels]`` each, or
        absent) and eps, the channel count is ``x``'s extent at ``channel_axis``.

        Raises:
            IRError: ``batch_norm_train: params must be a BatchNormTrainParams, got ...``;
                ``batch_norm_train: weight [5] does not match the 4 channels at axis 1 of [2, 4]``;
                an axis out of range for ``x`` (the shape checker's message). On failure nothing
                is appended but the constant of a deferred parameter ``x`` (emitted before the
                shape check, as for every op).
        """
        if not isinstance(params, BatchNormTrainParams):
            raise IRError(f"batch_norm_train: params must be a BatchNormTrainParams, got {describe(params)}")
        shape = self.shape(x)
        axis = self._axis("batch_norm_train", x, channel_axis)
        in_range = is_builtin_or_numpy_int(axis) and 0 <= axis < len(shape)
        kind = BatchNormTrain(axis, shape[axis] if in_range else 0)
        infer_node_shape(Node(len(self._nodes), (0,), kind, ()), [shape])  # the axis fits x
        for name, a in (("weight", params.weight), ("bias", params.bias)):
            if a is not None and np.shape(a) != (kind.channels,):
                raise IRError(
                    f"batch_norm_train: {name} {render_shape(np.shape(a))} does not match the "
                    f"{kind.channels} channels at axis {axis} of {render_shape(shape)}"
                )
        node = self.node(kind, x)
        self._payloads[node] = params
        return node

    def layernorm(self, x: Ref, axis: int, params: LayerNormParams | None = None) -> int:
        """``layernorm axis``: normalise the axes from ``axis`` on (negative: counted from the
        end, as the other ops); optional affine parameters of the normalised suffix's shape.

        Raises:
            IRError: ``layernorm: axis -3 out of range for shape [2, 3] (accepted: -2..1)``;
                ``layernorm: axis 2 out of range for shape [2, 3]``;
                ``layernorm: params must be a LayerNormParams or None, got ...``;
                ``layernorm: weight [5] does not match the normalised shape [3]``. Each is checked
                before anything is appended (a deferred parameter ``x`` is not emitted either).
        """
        kind = LayerNorm(self._axis("layernorm", x, axis))
        shape = self.shape(x)
        infer_node_shape(Node(len(self._nodes), (0,), kind, ()), [shape])  # the axis fits x
        if params is not None:
            if not isinstance(params, LayerNormParams):
                raise IRError(f"layernorm: params must be a LayerNormParams or None, got {describe(params)}")
            suffix = shape[kind.axis :]
            for name, a in (("weight", params.weight), ("bias", params.bias)):
                if a is not None and np.shape(a) != suffix:
                    raise IRError(
                        f"layernorm: {name} {render_shape(np.shape(a))} does not match the normalised "
                        f"shape {render_shape(suffix)}"
                    )
        node = self.node(kind, x)
        if params is not None:
            self._payloads[node] = params
        return node

    def softmax(self, x: Ref, axis: int) -> int:
        """Softmax over ``axis`` (negative: counted from the end). A scalar takes axis 0 or -1 and
        gives 1, as ``torch.softmax(torch.tensor(3.), 0)``."""
        return self.node(Softmax(self._axis("softmax", x, axis, scalar_axis=True)), x)

    def log_softmax(self, x: Ref, axis: int) -> int:
        """Log-softmax over ``axis`` (negative: counted from the end). A scalar takes axis 0 or -1
        and gives 0, as torch."""
        return self.node(LogSoftmax(self._axis("log_softmax", x, axis, scalar_axis=True)), x)

    def hard_masked_softmax(self, x: Ref, mask: HardMask | npt.ArrayLike) -> int:
        """Last-axis softmax over the allowed entries of a static boolean ``mask``; a boolean
        numpy array's shape is checked against ``x``'s before its entries are read."""
        if isinstance(mask, np.ndarray) and mask.dtype == np.bool_:
            check_mask_shape("hard_masked_softmax", tuple(int(d) for d in mask.shape), self.shape(x))
        hard = mask if isinstance(mask, HardMask) else HardMask.from_array(mask)
        return self.node(HardMaskedSoftmax(hard), x)

    def attention(
        self,
        q: Ref,
        k: Ref,
        v: Ref,
        *,
        mask: HardMask | npt.ArrayLike | None = None,
        causal: str | None = None,
        scale: float | None = None,
    ) -> int:
        """``scaled_dot_product_attention`` (torchlean extension) over q, k, v."""
        hard = mask if mask is None or isinstance(mask, HardMask) else HardMask.from_array(mask)
        return self.node(ScaledDotProductAttention(hard, causal, scale), q, k, v)
