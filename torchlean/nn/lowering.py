"""Graph interpretation of :class:`~torchlean.nn.ops.Ops`: lower a model to the canonical IR.

Running a layer's forward program with :class:`GraphOps` appends one IR node per operation
(:class:`torchlean.ir.builder.GraphBuilder`). Parameters are deferred constants, emitted as
``const`` nodes at their first use, as the original lowers models (anchor-runtime.md §4.2), so
``linear 4 -> 8 -> relu -> linear 8 -> 1`` on a vector gives the 18-node graph of the seed
chapter. :class:`Lowered` remembers which ``const`` and payload nodes hold which model
parameter, so a typed-graph executor can feed the *current* parameter values each step.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
import numpy.typing as npt

from torchlean.ir.builder import BuiltGraph, GraphBuilder, Param, Ref
from torchlean.ir.errors import IRError
from torchlean.ir.ops import ConvConfig, WindowConfig
from torchlean.ir.payloads import LayerNormParams
from torchlean.nn.model import Model

__all__ = ["GraphOps", "Lowered", "lower_model"]


@dataclass(frozen=True, slots=True)
class Lowered:
    """A lowered model: the graph, its payloads and where each model parameter enters.

    ``param_nodes`` maps a ``const`` node id to the model parameter index it holds;
    ``payload_params`` maps a payload-carrying node (conv, layernorm) to the indices of its
    weight and bias parameters (``None`` for an absent bias). ``inputs`` are the input node ids
    in creation order; ``output`` is the result node.
    """

    built: BuiltGraph
    inputs: tuple[int, ...]
    output: int
    param_nodes: dict[int, int]
    payload_params: dict[int, tuple[int | None, int | None]]


@dataclass(slots=True)
class GraphOps:
    """:class:`~torchlean.nn.ops.Ops` whose values are IR node references."""

    builder: GraphBuilder = field(default_factory=GraphBuilder)
    param_index: dict[int, int] = field(default_factory=dict)
    param_nodes: dict[int, int] = field(default_factory=dict)
    payload_params: dict[int, tuple[int | None, int | None]] = field(default_factory=dict)
    inputs: list[int] = field(default_factory=list)
    fuse_linear: bool = False
    """Lower ``ops.linear`` to one IR ``linear`` node (the trainer's typed graph) instead of the
    original's matmul/transpose/broadcast/add form (``lower_model``, ``torchlean graph``)."""

    # ------------------------------------------------------------------------------- sources

    def input(self, shape: Sequence[int]) -> int:
        node = self.builder.input(shape)
        self.inputs.append(node)
        return node

    def params(self, model: Model) -> list[Param]:
        """Declare every model parameter as a deferred constant (emitted at first use)."""
        declared = []
        for index, (spec, value) in enumerate(zip(model.specs, model.parameters, strict=True)):
            param = self.builder.param(value, spec.name)
            self.param_index[param.key] = index
            declared.append(param)
        return declared

    def _ref(self, ref: Ref) -> int:
        node = self.builder.resolve(ref)
        if isinstance(ref, Param):
            self.param_nodes[node] = self.param_index[ref.key]
        return node

    def _param_of(self, ref: Ref | None) -> int | None:
        if ref is None:
            return None
        if not isinstance(ref, Param):
            raise TypeError("payload parameters must be model parameters")
        return self.param_index[ref.key]

    def lowered(self, output: Ref) -> Lowered:
        out = self._ref(output)
        return Lowered(self.builder.build(), tuple(self.inputs), out, dict(self.param_nodes),
                       dict(self.payload_params))

    # ------------------------------------------------------------------------------------ ops

    def shape(self, x: Ref) -> tuple[int, ...]:
        return tuple(self.builder.shape(x))

    def constant(self, value: npt.NDArray[np.floating]) -> int:
        return self.builder.const(value)

    def reshape(self, x: Ref, shape: Sequence[int]) -> int:
        return self.builder.reshape(self._ref(x), shape)

    def transpose(self, x: Ref, axis1: int, axis2: int) -> int:
        return self.builder.transpose(self._ref(x), axis1, axis2)

    def permute(self, x: Ref, perm: Sequence[int]) -> int:
        return self.builder.permute(self._ref(x), perm)

    def broadcast_to(self, x: Ref, shape: Sequence[int]) -> int:
        return self.builder.broadcast_to(self._ref(x), shape)

    def matmul(self, a: Ref, b: Ref) -> int:
        return self.builder.matmul(self._ref(a), self._ref(b))

    def linear(self, x: Ref, weight: Ref, bias: Ref | None) -> int:
        """One IR ``linear`` node (payload: the weight and bias, fed from the model parameters by
        the typed-graph executor) when :attr:`fuse_linear` is set and the weight and bias are
        model parameters; otherwise (a computed or tied weight, or no fusion) the original's
        lowering (anchor-runtime.md §4.2): a vector input is reshaped to ``[1, n]``, the weight
        transposed, ``matmul``, the bias broadcast and added, and a vector reshaped back."""
        if self.fuse_linear and isinstance(weight, Param) and (bias is None or isinstance(bias, Param)):
            node = self.builder.linear(self._ref(x), weight.value, None if bias is None else bias.value)
            self.payload_params[node] = (self._param_of(weight), self._param_of(bias))
            return node
        shape = self.shape(x)
        vector = len(shape) == 1
        h: Ref = self.reshape(x, (1, shape[0])) if vector else x
        h = self.matmul(h, self.transpose(weight, 0, 1))
        if bias is not None:
            h = self.add(h, self.broadcast_to(bias, self.shape(h)))
        return self.reshape(h, (self.shape(h)[-1],)) if vector else self._ref(h)

    def add(self, a: Ref, b: Ref) -> int:
        return self.builder.add(self._ref(a), self._ref(b))

    def mul(self, a: Ref, b: Ref) -> int:
        return self.builder.mul_elem(self._ref(a), self._ref(b))

    def scale(self, x: Ref, factor: float) -> int:
        return self.builder.scale(self._ref(x), factor)

    def relu(self, x: Ref) -> int:
        return self.builder.relu(self._ref(x))

    def gelu(self, x: Ref) -> int:
        return self.builder.gelu(self._ref(x))

    def tanh(self, x: Ref) -> int:
        return self.builder.tanh(self._ref(x))

    def sigmoid(self, x: Ref) -> int:
        return self.builder.sigmoid(self._ref(x))

    def softmax(self, x: Ref, axis: int) -> int:
        return self.builder.softmax(self._ref(x), axis)

    def log_softmax(self, x: Ref, axis: int) -> int:
        return self.builder.log_softmax(self._ref(x), axis)

    def reduce_sum(self, x: Ref, axis: int) -> int:
        return self.builder.reduce_sum(self._ref(x), axis)

    def reduce_mean(self, x: Ref, axis: int) -> int:
        return self.builder.reduce_mean(self._ref(x), axis)

    def sum(self, x: Ref) -> int:
        return self.builder.sum(self._ref(x))

    def mse_loss(self, prediction: Ref, target: Ref) -> int:
        return self.builder.mse_loss(self._ref(prediction), self._ref(target))

    def layer_norm(self, x: Ref, weight: Ref, bias: Ref, *, normalized_ndim: int, eps: float) -> int:
        if not isinstance(weight, Param) or not isinstance(bias, Param):
            raise TypeError("layer_norm affine parameters must be model parameters")
        axis = len(self.shape(x)) - normalized_ndim
        node = self.builder.layernorm(self._ref(x), axis, LayerNormParams(weight.value, bias.value, eps))
        self.payload_params[node] = (self._param_of(weight), self._param_of(bias))
        return node

    def conv(
        self,
        x: Ref,
        weight: Ref,
        bias: Ref | None,
        *,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> int:
        if not isinstance(weight, Param) or not (bias is None or isinstance(bias, Param)):
            raise TypeError("conv weight and bias must be model parameters")
        out_channels, in_per_group, *kernel = weight.shape
        config = ConvConfig(
            in_channels=in_per_group * groups,
            out_channels=out_channels,
            kernel=tuple(kernel),
            stride=stride,
            padding=padding,
            dilation=dilation,
            groups=groups,
            channel_axis=len(self.shape(x)) - 1 - len(kernel),
        )
        node = self.builder.conv(self._ref(x), config, weight.value, None if bias is None else bias.value)
        self.payload_params[node] = (self._param_of(weight), self._param_of(bias))
        return node

    def max_pool(
        self, x: Ref, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> int:
        return self.builder.max_pool(self._ref(x), WindowConfig(kernel_size, stride, padding))

    def avg_pool(
        self, x: Ref, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> int:
        return self.builder.avg_pool(self._ref(x), WindowConfig(kernel_size, stride, padding))

    def dropout(self, x: Ref, p: float) -> int:
        """Refused: raises :class:`~torchlean.ir.errors.IRError` (dropout stays eager)."""
        raise IRError(
            "dropout is not lowered to the typed graph: its eager random schedule (session counter) "
            "differs from the graph's (node index); train models with dropout in eager mode"
        )

    def attention(self, q: Ref, k: Ref, v: Ref, mask: npt.NDArray[np.bool_] | None) -> int:
        return self.builder.attention(self._ref(q), self._ref(k), self._ref(v), mask=mask)


def lower_model(model: Model, input_shape: Sequence[int], *, training: bool = False) -> Lowered:
    """Lower ``model``'s forward program for inputs of ``input_shape`` (with or without batch axis)."""
    ops = GraphOps()
    x: Ref = ops.input(input_shape)
    params: list[Ref] = list(ops.params(model))
    out = model.layer.forward(ops, params, x, training=training)
    return ops.lowered(out)
