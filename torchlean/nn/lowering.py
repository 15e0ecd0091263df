"""Graph interpretation of :class:`~torchlean.nn.ops.Ops`: lower a model to the canonical IR.

Running a layer's forward program with :class:`GraphOps` appends one IR node per operation
(:class:`torchlean.ir.builder.GraphBuilder`). Parameters are deferred constants, emitted as
``const`` nodes at their first use, as the original lowers models (anchor-runtime.md §4.2), so
``linear 4 -> 8 -> relu -> linear 8 -> 1`` on a vector gives the 18-node graph of the seed
chapter. :class:`Lowered` remembers which ``const`` and payload nodes hold which model
parameter (batch norm's running statistics included), so a typed-graph executor can feed the
*current* parameter values each step.

Two training-mode layers lower to graphs that need their caller:

* dropout (``p > 0``) lowers to ``mul_elem(x, mask)`` (then ``scale(1 / (1 - p))`` when
  ``p < 1``), as :func:`torchlean.functional.dropout` computes it, with ``mask`` an extra
  ``input`` node (:class:`DropoutMask`): the caller draws each mask with the session's
  ``bernoulli_mask`` in :attr:`Lowered.dropout_masks` order, which is the order eager execution
  draws them in, so both consume the session's random counter alike. The IR's own
  ``bernoulli_mask`` node keys its draw by node index (anchor-runtime.md §1.6), not by the
  session counter, so it would not reproduce eager masks and is not used.
* an embedding (the model's first layer, which receives int64 ids) lowers to ``gather 0`` of the
  table by an int64 ``(ids, dim)`` index, then ``reshape`` to ``(*ids.shape, dim)``, as
  :func:`torchlean.functional.embedding` computes it; the index is an extra ``input`` node
  (:class:`EmbeddingIndex`) the caller makes from the ids (the IR computes no integers). In
  training, a ``padding_idx`` lowers to ``gather 0`` of ``concat [table, detach table]``, the
  index sending each id equal to the padding row to its detached copy (row ``id + V``): the
  values are the table's rows exactly and the padding positions send no gradient, the other
  positions' gradients summed by the gather VJP in index order (``reference.gather``; under
  ``fast_cpu``, ``aten.gather``'s torch ``scatter_add_``, whose order is implementation-defined:
  tests/training/test_embedding_padding.py checks the bits against eager's), so weights and
  gradients are eager's (whose lookup splits the ids instead, an op sequence that depends on the
  ids).
* batch norm lowers to ``batch_norm_train`` (batch statistics; affine payload); the running
  statistics' update is recorded as a :class:`RunningUpdate` (the node whose value is the batch
  norm input, the buffers, the momentum), which the caller applies as
  :meth:`~torchlean.nn.eager.EagerOps.update_running_statistics` does in eager execution. In
  evaluation batch norm lowers to ``batch_norm_eval``, its running statistics recorded in
  :attr:`Lowered.statistic_params` so they are fed from the model's current buffers.

Layer programs treat axis 0 as the batch axis (``reshape``/``flatten`` keep it, ``mean_pool``
reduces the axis after it, attention unpacks ``(batch, tokens, d_model)``), so
:func:`lower_model` lowers one sample without a batch axis only for models whose every layer
computes the same values either way (:func:`unbatched_refusal`).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_int, padding_index
from torchlean._tensor_shapes import expanded_shape
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference.guards import reshape_target
from torchlean.backend.providers.reference.spatial_guards import normalized_ndim_fault
from torchlean.functional._params import _int, _ints, _real
from torchlean.ir.builder import BuiltGraph, GraphBuilder, Param
from torchlean.ir.errors import IRError
from torchlean.ir.ops import ConvConfig, WindowConfig
from torchlean.ir.payloads import BatchNormParams, BatchNormTrainParams, LayerNormParams
from torchlean.nn.handles import Node
from torchlean.nn.layers import (
    Activation,
    Dropout,
    Layer,
    LayerNorm,
    Linear,
    PositionalEmbedding,
    Residual,
    Sequential,
    ShapeError,
)
from torchlean.nn.model import Model
from torchlean.nn.ops import broadcast_operands
from torchlean.tensor import TensorError, TensorTypeError

__all__ = [
    "DropoutMask",
    "EmbeddingIndex",
    "GraphOps",
    "Lowered",
    "LoweringTypeError",
    "Node",
    "RunningUpdate",
    "lower_model",
    "unbatched_refusal",
]


class LoweringTypeError(IRError, TypeError):
    """A lowering argument of the wrong kind: :func:`lower_model` given something other than a
    built :class:`~torchlean.nn.model.Model`, or a conv/layer_norm weight or bias that is a computed
    graph value rather than a model parameter. An :class:`IRError` and a ``TypeError``."""


@dataclass(frozen=True, slots=True)
class DropoutMask:
    """A training-mode dropout's mask, an ``input`` node of the lowered graph.

    ``node`` is the input node id, ``shape`` its shape (the dropout input's), ``keep_prob`` is
    ``1 - p``. Its value is the 0/1 mask ``torchlean.functional.bernoulli_mask(shape, keep_prob,
    dtype=...)`` draws in the session, in the model dtype (what eager dropout draws).
    """

    node: int
    shape: tuple[int, ...]
    keep_prob: float


@dataclass(frozen=True, slots=True)
class EmbeddingIndex:
    """An embedding lookup's row index, an ``input`` node of the lowered graph.

    ``node`` is the int64 input node ``(n, dim)``; ``ids`` the input node holding the ids (the
    model input), ``n`` their count and ``dim`` the table's row length. Its value is the ids
    flattened, one per row, repeated across ``dim`` columns:
    ``np.broadcast_to(ids.reshape(-1, 1), (n, dim))`` as int64 (the index eager ``embedding``
    gathers with). ``padding`` is ``None``, or (a training lookup with a ``padding_idx``) the
    pair ``(padding_idx, num_embeddings)``: the graph then gathers from ``concat [table, detach
    table]`` and an id equal to ``padding_idx`` is sent to row ``id + num_embeddings``, the
    detached copy (:meth:`rows`).
    """

    node: int
    ids: int
    dim: int
    padding: tuple[int, int] | None = None

    def rows(self, ids: npt.NDArray[Any]) -> npt.NDArray[np.int64]:
        """The index input's value for the integer ``ids`` (any shape): ``(ids.size, dim)`` int64,
        C-contiguous."""
        flat = ids.astype(np.int64).reshape(-1)
        if self.padding is not None:
            pad, count = self.padding
            flat = flat + count * (flat == pad)
        return np.ascontiguousarray(np.broadcast_to(flat.reshape(-1, 1), (flat.size, self.dim)))


@dataclass(frozen=True, slots=True)
class RunningUpdate:
    """A training-mode batch norm's running-statistics update, for the caller to apply.

    ``node`` is the graph node whose value is the batch norm's input ``x``; ``running_mean`` and
    ``running_var`` are the model parameter indices of the buffers; ``momentum`` the layer's.
    The next values are ``(1 - momentum) * running + momentum * batch`` as
    :meth:`~torchlean.nn.eager.EagerOps.update_running_statistics` computes them from ``x``.
    """

    node: int
    running_mean: int
    running_var: int
    momentum: float


@dataclass(frozen=True, slots=True)
class Lowered:
    """A lowered model: the graph, its payloads and where each model parameter enters.

    ``param_nodes`` maps a ``const`` node id to the model parameter index it holds;
    ``payload_params`` maps a payload-carrying node (linear, conv, layernorm, batch norm) to the
    indices of its weight and bias parameters (``None`` for an absent one);
    ``statistic_params`` maps a ``batch_norm_eval`` node to the indices of its running mean and
    variance. ``inputs`` are the input node ids in creation order (the model input first, then
    any dropout masks, in forward order); ``output`` is the result node. ``dropout_masks`` and
    ``running_updates`` (training only) list, in forward order, the masks the caller feeds and
    the batch norm updates it applies; ``embedding_indices`` the int64 index inputs of embedding
    lookups (module docstring).
    """

    built: BuiltGraph
    inputs: tuple[int, ...]
    output: int
    param_nodes: dict[int, int]
    payload_params: dict[int, tuple[int | None, int | None]]
    statistic_params: dict[int, tuple[int, int]] = field(default_factory=dict)
    dropout_masks: tuple[DropoutMask, ...] = ()
    running_updates: tuple[RunningUpdate, ...] = ()
    embedding_indices: tuple[EmbeddingIndex, ...] = ()


@dataclass(slots=True)
class GraphOps:
    """:class:`~torchlean.nn.ops.Ops` whose values are IR node references."""

    builder: GraphBuilder = field(default_factory=GraphBuilder)
    param_index: dict[int, int] = field(default_factory=dict)
    param_nodes: dict[int, int] = field(default_factory=dict)
    payload_params: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    statistic_params: dict[int, tuple[int, int]] = field(default_factory=dict)
    inputs: list[int] = field(default_factory=list)
    dropout_masks: list[DropoutMask] = field(default_factory=list)
    running_updates: list[RunningUpdate] = field(default_factory=list)
    embedding_indices: list[EmbeddingIndex] = field(default_factory=list)
    fuse_linear: bool = False
    """Lower ``ops.linear`` to one IR ``linear`` node (the trainer's typed graph) instead of the
    original's matmul/transpose/broadcast/add form (``lower_model``, ``torchlean graph``)."""
    training: bool = False
    """The program is lowered for a training step, whose gradients the tape records (an embedding
    with a ``padding_idx`` then gathers from the table and its detached copy)."""

    # ------------------------------------------------------------------------------- sources

    def input(self, shape: Sequence[int]) -> Node:
        """A new ``input`` node of ``shape`` (the forward's input, the loss's target)."""
        return Node(self._new_input(shape))

    def _new_input(self, shape: Sequence[int]) -> int:
        node = self.builder.input(shape)
        self.inputs.append(node)
        return node

    def params(self, model: Model) -> list[Node]:
        """Declare every model parameter as a deferred constant (emitted at first use), each
        behind a :class:`Node` handle, the ``params`` a layer's forward receives."""
        declared = []
        for index, (spec, value) in enumerate(zip(model.specs, model.parameters, strict=True)):
            param = self.builder.param(value, spec.name)
            self.param_index[param.key] = index
            declared.append(Node(param))
        return declared

    @staticmethod
    def _unwrap(ref: object) -> int | Param:
        """The node id or parameter behind a :class:`Node`; anything else refused: a number, an
        array, a bare int (review173 F1, F5)."""
        if not isinstance(ref, Node):
            raise LoweringTypeError(
                f"a layer's ops call got {_shown(ref)} where a graph value goes (an ops result, the "
                "forward's input or one of its params): under typed-graph execution a constant is "
                "ops.constant(np.asarray(value, dtype=the model's dtype)) and a number factor "
                "ops.scale(x, factor)"
            )
        return ref.ref

    def _ref(self, ref: Node) -> int:
        return self._resolved(self._unwrap(ref))

    def _resolved(self, target: int | Param) -> int:
        """The node id of ``target``, a parameter's ``const`` node emitted at its first use and
        recorded as that parameter's (:attr:`param_nodes`)."""
        node = self.builder.resolve(target)
        if isinstance(target, Param):
            self.param_nodes[node] = self.param_index[target.key]
        return node

    def _param_of(self, ref: Param | None) -> int | None:
        return None if ref is None else self.param_index[ref.key]

    def _payload_param(self, ref: Node | None, op: str, role: str) -> Param | None:
        """``ref`` as a model parameter (``None`` stays ``None``) for a node that carries it as a
        payload; raises :class:`LoweringTypeError` for a computed value (a graph node id) or what
        is no graph value (:meth:`_unwrap`)."""
        if ref is None:
            return None
        target = self._unwrap(ref)
        if isinstance(target, Param) and target.key in self.param_index:
            return target
        what = (
            f"the computed graph node {target}" if not isinstance(target, Param)
            else f"the constant {target.name or target.key}, which is not a model parameter"
        )
        raise LoweringTypeError(
            f"{op}: the {role} must be a model parameter (an entry of the `params` a layer's forward "
            f"receives, passed unchanged), got {what}; the IR {op} node carries its "
            "parameters as a payload, so a computed weight cannot be lowered (accepted: a model "
            "parameter; use ops.linear or ops.matmul for computed weights)"
        )

    def lowered(self, output: Node) -> Lowered:
        out = self._ref(output)
        return Lowered(self.builder.build(), tuple(self.inputs), out, dict(self.param_nodes),
                       dict(self.payload_params), dict(self.statistic_params),
                       tuple(self.dropout_masks), tuple(self.running_updates),
                       tuple(self.embedding_indices))

    # ------------------------------------------------------------------------------------ ops

    def shape(self, x: Node) -> tuple[int, ...]:
        return tuple(self.builder.shape(self._unwrap(x)))

    def constant(self, value: npt.NDArray[np.floating]) -> Node:
        return Node(self.builder.const(value))

    def reshape(self, x: Node, shape: Sequence[int]) -> Node:
        """The IR's ``reshape`` node; a ``-1`` (inferred, as eager's ``functional.reshape`` and
        torch take it) is resolved here with the reference guard's rule, as the IR takes only
        extents."""
        node = self._ref(x)
        sizes = _ints("reshape", "shape", shape)  # eager's check: integers only (review113 F3, F4)
        if -1 in sizes:
            sizes = reshape_target(self.builder.shape(node), sizes)
        return Node(self.builder.reshape(node, sizes))

    def transpose(self, x: Node, axis1: int, axis2: int) -> Node:
        return Node(self.builder.transpose(self._ref(x), axis1, axis2))

    def permute(self, x: Node, perm: Sequence[int]) -> Node:
        return Node(self.builder.permute(self._ref(x), perm))

    def broadcast_to(self, x: Node, shape: Sequence[int]) -> Node:
        """The IR's ``broadcast_to`` node; a ``-1`` (keep an existing axis's size, as eager's
        ``functional.broadcast_to`` and torch take it) is resolved here, as the IR takes only
        extents."""
        node = self._ref(x)
        sizes = _ints("broadcast_to", "shape", shape)  # eager's check (review113 F3, F4)
        if -1 in sizes:
            sizes = tuple(expanded_shape(self.builder.shape(node), sizes, "broadcast_to"))
        return Node(self.builder.broadcast_to(node, sizes))

    def matmul(self, a: Node, b: Node) -> Node:
        return Node(self.builder.matmul(self._ref(a), self._ref(b)))

    def linear(self, x: Node, weight: Node, bias: Node | None) -> Node:
        """With :attr:`fuse_linear` (typed-graph training), one node that runs eager's ``linear``
        kernel: an IR ``linear`` node (payload: the weight and bias, fed from the model parameters
        by the typed-graph executor) when the weight and bias are model parameters, else a
        ``linear_of`` node taking them as parents (a computed weight: review144 F1, where the
        original's lowering ran other kernels than eager). Without it, the original's lowering
        (anchor-runtime.md §4.2): a vector input is reshaped to ``[1, n]``, the weight
        transposed, ``matmul``, the bias broadcast and added, and a vector reshaped back."""
        if self.fuse_linear:
            w = self._unwrap(weight)
            b = None if bias is None else self._unwrap(bias)
            if (
                isinstance(w, Param)
                and w.key in self.param_index
                and (b is None or (isinstance(b, Param) and b.key in self.param_index))
            ):
                node = self.builder.linear(self._ref(x), w.value, None if b is None else b.value)
                self.payload_params[node] = (self._param_of(w), self._param_of(b))
                return Node(node)
            computed_bias = None if bias is None else self._ref(bias)
            return Node(self.builder.linear_of(self._ref(x), self._ref(weight), computed_bias))
        shape = self.shape(x)
        vector = len(shape) == 1
        h: Node = self.reshape(x, (1, shape[0])) if vector else x
        h = self.matmul(h, self.transpose(weight, 0, 1))
        if bias is not None:
            h = self.add(h, self.broadcast_to(bias, self.shape(h)))
        return self.reshape(h, (self.shape(h)[-1],)) if vector else h

    def add(self, a: Node, b: Node) -> Node:
        first, second = broadcast_operands(self, a, b)
        return Node(self.builder.add(self._ref(first), self._ref(second)))

    def mul(self, a: Node, b: Node) -> Node:
        first, second = broadcast_operands(self, a, b)
        return Node(self.builder.mul_elem(self._ref(first), self._ref(second)))

    def scale(self, x: Node, factor: float) -> Node:
        # read as eager reads it (a Fraction, a numpy float: review173 F5)
        return Node(self.builder.scale(self._ref(x), _real("scale", "factor", factor)))

    def relu(self, x: Node) -> Node:
        return Node(self.builder.relu(self._ref(x)))

    def gelu(self, x: Node) -> Node:
        return Node(self.builder.gelu(self._ref(x)))

    def tanh(self, x: Node) -> Node:
        return Node(self.builder.tanh(self._ref(x)))

    def sigmoid(self, x: Node) -> Node:
        return Node(self.builder.sigmoid(self._ref(x)))

    def softplus(self, x: Node) -> Node:
        return Node(self.builder.softplus(self._ref(x)))

    def embedding(self, ids: Node, weight: Node, padding_idx: int | None = None) -> Node:
        """Rows of the ``(V, D)`` table ``weight`` (a model parameter) picked by the ids, an
        ``input`` node of the graph (the model's input): ``gather 0`` of the table by a new int64
        index input ``(n, D)`` (:class:`EmbeddingIndex`), then ``reshape`` to ``(*ids, D)``, the
        ops :func:`torchlean.functional.embedding` records. With a ``padding_idx`` (an int in
        ``[-V, V)``, a negative one counting from the end, checked as eager's) in
        :attr:`training`, the gather reads ``concat [table, detach table]`` and the index sends
        the padding ids to the detached copy, so they send no gradient (the module docstring); in
        evaluation eager's lookup is the plain one.

        Raises:
            IRError: ``ids`` is not an input node (ids computed in the graph: the IR computes no
                integers).
            LoweringTypeError: ``weight`` is not a model parameter.
            TensorTypeError, GuardError: a ``padding_idx`` that is not an integer, or outside
                ``[-V, V)``, as eager's refusals.
        """
        table = self._payload_param(weight, "embedding", "table")
        assert table is not None
        node_ids = self._ref(ids)
        if node_ids not in self.inputs:
            raise IRError(
                f"embedding: the ids must be an input of the graph (the model's input, int64 ids), got "
                f"node {node_ids} ({self.builder.build().graph.nodes[node_ids].kind.describe()}); the IR "
                "computes no integers"
            )
        shape = tuple(self.builder.shape(node_ids))
        count, dim = table.shape
        index = self._new_input((math.prod(shape), dim))
        source = self._resolved(table)
        # checked and made a row in [0, V) as eager's (review173 F2: -1 matched no id here)
        pad = None if padding_idx is None else padding_index(
            padding_idx, count, "embedding", TensorTypeError, GuardError
        )
        padding = None
        if pad is not None and self.training:
            padding = (pad, count)
            source = self.builder.concat([source, self.builder.detach(source)], 0)
        self.embedding_indices.append(EmbeddingIndex(index, node_ids, dim, padding))
        rows = self.builder.gather(source, index, 0)
        return Node(self.builder.reshape(rows, (*shape, dim)))

    def softmax(self, x: Node, axis: int) -> Node:
        return Node(self.builder.softmax(self._ref(x), axis))

    def log_softmax(self, x: Node, axis: int) -> Node:
        return Node(self.builder.log_softmax(self._ref(x), axis))

    def reduce_sum(self, x: Node, axis: int) -> Node:
        return Node(self.builder.reduce_sum(self._ref(x), _one_axis("reduce_sum", axis)))

    def reduce_mean(self, x: Node, axis: int) -> Node:
        return Node(self.builder.reduce_mean(self._ref(x), _one_axis("reduce_mean", axis)))

    def sum(self, x: Node) -> Node:
        return Node(self.builder.sum(self._ref(x)))

    def mse_loss(self, prediction: Node, target: Node) -> Node:
        return Node(self.builder.mse_loss(self._ref(prediction), self._ref(target)))

    def layer_norm(self, x: Node, weight: Node, bias: Node, *, normalized_ndim: int, eps: float) -> Node:
        """One IR ``layernorm`` node whose payload is the affine ``weight`` and ``bias``.

        Raises:
            LoweringTypeError: ``weight`` or ``bias`` is not a model parameter (a computed node).
            TensorTypeError: ``normalized_ndim`` is not an integer, as eager's.
            GuardError: ``normalized_ndim`` outside ``[1, rank]``, as eager's.
        """
        w = self._payload_param(weight, "layernorm", "weight")
        b = self._payload_param(bias, "layernorm", "bias")
        assert w is not None and b is not None
        shape = self.shape(x)
        ndim = _int("layer_norm", "normalized_ndim", normalized_ndim)  # eager's type refusal (review174 F3)
        fault = normalized_ndim_fault(normalized_ndim, ndim, shape)
        if fault is not None:  # eager's refusal (review173 F5: past the rank, the last axis was normalised)
            raise GuardError(f"layer_norm: {fault}")
        axis = len(shape) - ndim
        node = self.builder.layernorm(self._ref(x), axis, LayerNormParams(w.value, b.value, eps))
        self.payload_params[node] = (self._param_of(w), self._param_of(b))
        return Node(node)

    def conv(
        self,
        x: Node,
        weight: Node,
        bias: Node | None,
        *,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> Node:
        """One IR ``conv`` node whose payload is ``weight`` and ``bias`` (or no bias).

        Raises:
            LoweringTypeError: ``weight`` or ``bias`` is not a model parameter (a computed node).
        """
        w = self._payload_param(weight, "conv", "weight")
        b = self._payload_param(bias, "conv", "bias")
        assert w is not None
        out_channels, in_per_group, *kernel = w.shape
        n = len(kernel)  # an int stride, padding or dilation is one per spatial axis, as eager's
        config = ConvConfig(
            in_channels=in_per_group * groups,
            out_channels=out_channels,
            kernel=tuple(kernel),
            stride=_per_axis(stride, n),
            padding=_per_axis(padding, n),
            dilation=_per_axis(dilation, n),
            groups=groups,
            channel_axis=len(self.shape(x)) - 1 - len(kernel),
        )
        node = self.builder.conv(self._ref(x), config, w.value, None if b is None else b.value)
        self.payload_params[node] = (self._param_of(w), self._param_of(b))
        return Node(node)

    def max_pool(
        self, x: Node, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> Node:
        window = _window(kernel_size, stride, padding, len(self.shape(x)) - 2)
        return Node(self.builder.max_pool(self._ref(x), window))

    def avg_pool(
        self, x: Node, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> Node:
        window = _window(kernel_size, stride, padding, len(self.shape(x)) - 2)
        return Node(self.builder.avg_pool(self._ref(x), window))

    def dropout(self, x: Node, p: float) -> Node:
        """Training-mode dropout as :func:`torchlean.functional.dropout` computes it:
        ``mul_elem(x, mask)``, then ``scale(1 / (1 - p))`` when ``p < 1``, with ``mask`` a new
        ``input`` node of ``x``'s shape recorded as a :class:`DropoutMask` (keep probability
        ``1 - p``) for the caller to feed; ``x`` itself in evaluation (not :attr:`training`) and for
        ``p == 0``, as eager's dropout, which draws no mask there (review173 F3, F4). ``p`` is read
        as eager reads it (a float: a ``np.float32`` p does not round ``1 - p`` to float32).

        Raises:
            TensorTypeError: ``p`` is not a real number (a bool, a string), as eager's.
            TensorError: ``p`` outside ``[0, 1]``, as eager's.
        """
        self._unwrap(x)  # the operand first, as eager checks it (review176 F4)
        prob = _real("dropout", "p", p)
        if not 0.0 <= prob <= 1.0:
            raise TensorError(f"dropout probability p={p!r} is outside [0, 1]")
        if prob == 0.0 or not self.training:  # its operand checked above (review175 F2)
            return x
        p = prob
        node = self._ref(x)
        shape = tuple(self.builder.shape(node))
        mask = self._new_input(shape)
        self.dropout_masks.append(DropoutMask(mask, shape, 1.0 - p))
        kept = self.builder.mul_elem(node, mask)
        return Node(kept if p == 1.0 else self.builder.scale(kept, 1.0 / (1.0 - p)))

    def batch_norm(
        self,
        x: Node,
        weight: Node | None,
        bias: Node | None,
        running_mean: Node,
        running_var: Node,
        *,
        training: bool,
        eps: float,
        momentum: float,
    ) -> Node:
        """Batch normalisation over axis 1 of ``x (N, C, *spatial)``. In training one
        ``batch_norm_train`` node (batch statistics; payload: the affine ``weight`` and ``bias``
        and ``eps``) and a :class:`RunningUpdate` of the running statistics for the caller; in
        evaluation one ``batch_norm_eval`` node whose payload holds the running statistics too,
        recorded in :attr:`statistic_params` so an executor feeds their current values.

        Raises:
            LoweringTypeError: ``weight``, ``bias``, ``running_mean`` or ``running_var`` is not a
                model parameter (a computed node).
        """
        w = self._payload_param(weight, "batch_norm", "weight")
        b = self._payload_param(bias, "batch_norm", "bias")
        mean = self._payload_param(running_mean, "batch_norm", "running mean")
        var = self._payload_param(running_var, "batch_norm", "running variance")
        assert mean is not None and var is not None
        mean_index, var_index = self.param_index[mean.key], self.param_index[var.key]
        node_x = self._ref(x)
        weight_value = None if w is None else w.value
        bias_value = None if b is None else b.value
        if training:
            trained = BatchNormTrainParams(weight_value, bias_value, eps)
            node = self.builder.batch_norm_train(node_x, 1, trained)
            self.running_updates.append(RunningUpdate(node_x, mean_index, var_index, momentum))
        else:
            params = BatchNormParams(mean.value, var.value, weight_value, bias_value, eps)
            node = self.builder.batch_norm_eval(node_x, 1, params)
            self.statistic_params[node] = (mean_index, var_index)
        self.payload_params[node] = (self._param_of(w), self._param_of(b))
        return Node(node)

    def attention(self, q: Node, k: Node, v: Node, mask: npt.NDArray[np.bool_] | None) -> Node:
        return Node(self.builder.attention(self._ref(q), self._ref(k), self._ref(v), mask=mask))


def _one_axis(op: str, axis: Any) -> int:
    """``axis`` when it is one integer (the ``Ops`` form); a tuple, list or ``None``, which eager's
    functional op also takes, refused naming the way to write it (review173 F5: the IR said
    "expected a non-negative integer", negative axes being fine)."""
    if is_int(axis):
        return int(axis)
    several = axis is None or isinstance(axis, (tuple, list))
    how = (f": under typed-graph execution reduce one axis per ops.{op} call (eager's functional {op} "
           "also takes a tuple or None)" if several else "")
    raise LoweringTypeError(
        f"ops.{op} takes one integer axis (negative ones count from the end), got {_shown(axis)}{how}"
    )


def _per_axis(value: Any, n: int) -> Any:
    """An int window argument as ``n`` of it (one per spatial axis), as eager's conv and pools read
    it (review173 F5); anything else as given, for the IR's own check."""
    return (int(value),) * n if is_int(value) else value


def _window(kernel_size: Any, stride: Any, padding: Any, spatial: int) -> WindowConfig:
    """A pool's window for an ``(N, C, *spatial)`` input of ``spatial`` spatial axes, each
    argument an int (for every spatial axis) or one per axis, and a ``None`` stride the kernel
    size, as eager's pools (and torch's) read them (review173 F5, review176 F1)."""
    stride = kernel_size if stride is None else stride
    return WindowConfig(
        _per_axis(kernel_size, spatial), _per_axis(stride, spatial), _per_axis(padding, spatial)
    )


def _shown(value: object) -> str:
    """``value`` for a refusal: its repr, cut to 60 characters, and its type."""
    text = repr(value)
    return f"{text if len(text) <= 60 else text[:57] + '...'} ({type(value).__name__})"


def unbatched_refusal(layer: Layer) -> Layer | None:
    """The first layer of ``layer`` that cannot be lowered on one sample without a batch axis, or
    ``None`` when every layer can.

    Accepted unbatched: ``linear`` (a vector is lowered as the original does, reshaped to
    ``[1, n]``; a higher-rank sample is a plain matmul over its last axis), the pointwise
    activations, ``dropout`` (the identity in evaluation; in training a mask of the sample's
    shape),
    ``layer_norm`` (normalises the trailing axes), ``positional_embedding`` (adds a table of the
    sample's shape) and ``sequential``/``residual`` of these. Every other layer (``reshape``,
    ``flatten``, ``mean_pool``, convolutions, pooling, attention and custom layers) treats axis 0
    as the batch axis, so it is refused.
    """
    if isinstance(layer, Sequential):
        for child in layer.layers:
            refused = unbatched_refusal(child)
            if refused is not None:
                return refused
        return None
    if isinstance(layer, Residual):
        return unbatched_refusal(layer.body)
    if isinstance(layer, Linear | Activation | Dropout | LayerNorm | PositionalEmbedding):
        return None
    return layer


def _shape_tuple(value: object) -> tuple[int, ...] | None:
    """``value`` as a tuple of ints when it is a tuple, list (``torch.Size`` included) or 1-d
    numpy array of integers (Python or numpy, not bools); else ``None``."""
    items: Sequence[object]
    if isinstance(value, tuple | list):
        items = value
    elif isinstance(value, np.ndarray) and value.ndim == 1:
        items = list(value)
    else:
        return None
    dims = [d for d in items if is_int(d)]
    if len(dims) != len(items):
        return None
    return tuple(int(d) for d in dims)


def _checked_input_shape(model: Model, input_shape: object) -> tuple[int, ...]:
    """``input_shape`` if it is ``(batch, *model.input_shape)`` with ``batch >= 1``, or, for a
    model :func:`unbatched_refusal` accepts (every layer works on the trailing axes alone),
    ``model.input_shape`` behind any number of leading axes (none, one of extent 0, or several);
    else raises :class:`ShapeError` naming it and the accepted shapes."""
    sample = tuple(model.input_shape)
    refused = unbatched_refusal(model.layer)
    shape = _shape_tuple(input_shape)
    if shape is not None and len(shape) == len(sample) + 1 and shape[1:] == sample and shape[0] >= 1:
        return shape
    batched = f"(batch, {', '.join(map(str, sample))}) with batch an int >= 1"
    if refused is None:
        lead = None if shape is None else len(shape) - len(sample)
        if (
            shape is not None
            and lead is not None
            and lead >= 0
            and shape[lead:] == sample
            and all(extent >= 0 for extent in shape[:lead])
        ):
            return shape
        reason = f"does not fit the model's per-sample input shape {sample}"
        accepted = (
            f"{batched}, {sample} (one sample without a batch axis), or {sample} behind any leading "
            "axes (this model works on the trailing axes alone)"
        )
    elif shape == sample:
        reason = (
            f"is one sample without a batch axis, which this model cannot be lowered on: "
            f"{refused.describe()} treats axis 0 as the batch axis"
        )
        accepted = batched
    else:
        reason = f"does not fit the model's per-sample input shape {sample}"
        accepted = (
            f"{batched} (a batch axis is required: {refused.describe()} treats axis 0 as the batch axis)"
        )
    given = " ".join(repr(input_shape).split()) if shape is None else str(shape)  # one line
    raise ShapeError(f"lower_model: input shape {given} {reason}; accepted: {accepted}")


def lower_model(model: Model, input_shape: Sequence[int], *, training: bool = False) -> Lowered:
    """Lower ``model``'s forward program for inputs of ``input_shape``.

    ``input_shape`` is ``(batch, *model.input_shape)`` with ``batch >= 1``; when every layer of
    the model computes the same values on the trailing axes alone (:func:`unbatched_refusal`:
    ``linear``, activations, ``dropout``, ``layer_norm``, ``positional_embedding``, and
    ``sequential``/``residual`` of these), also ``model.input_shape`` behind any leading axes:
    none (one sample, no batch axis), a batch of 0, or several (``(batch, tokens, features)``
    for a per-token MLP). A tuple, list, ``torch.Size`` or 1-d integer numpy array. A vector MLP
    on an unbatched ``[4]`` input gives the seed chapter's 18-node graph (anchor-runtime.md §4.2).

    Raises:
        LoweringTypeError: ``model`` is not a built :class:`~torchlean.nn.model.Model` (e.g. a
            layer not yet passed to ``nn.build``).
        ShapeError: any other ``input_shape``, naming it and the accepted shapes (e.g. an
            unbatched sample for a model with ``reshape``/``flatten``/``mean_pool``/conv/attention,
            or a batch of samples of another shape).
        IRError: a layer program the IR cannot express (ids computed in the graph).

    With ``training=True`` a dropout's mask becomes an extra input node and a batch norm records
    its running-statistics update (:attr:`Lowered.dropout_masks`, :attr:`Lowered.running_updates`;
    the module docstring); evaluation lowers neither (dropout is the identity, batch norm reads the
    running statistics). An embedding's row index is an int64 input node in either mode
    (:attr:`Lowered.embedding_indices`).
    """
    if not isinstance(model, Model):
        raise LoweringTypeError(
            f"lower_model: model must be a built Model (nn.build(layer, input_shape=..., seed=...)), got "
            f"{type(model).__name__} {model!r}"
        )
    shape = _checked_input_shape(model, input_shape)
    ops = GraphOps(training=training)
    x = ops.input(shape)
    params = ops.params(model)
    out = model.layer.forward(ops, params, x, training=training)
    return ops.lowered(out)
