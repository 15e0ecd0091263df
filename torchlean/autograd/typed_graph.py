"""Typed-graph execution from an :class:`AcceptedGraphKernelPlan` (DESIGN.md §1.8).

The original plans graphs only diagnostically; here the accepted plan is what runs. A model
(with its loss) is lowered once to the canonical IR, planned and accepted by
``profile.accept_graph``; each execution then walks the graph in node order and runs every
planned node on the :class:`AcceptedKernel` of its group, through the same
:func:`~torchlean.autograd.dispatch.execute_accepted` path (bind → run → tape node) that eager
execution uses. ``input``/``const``/``detach`` nodes need no kernel. Because the kernels, their
parameters and their order are those of eager execution, eager and typed-graph runs give
bit-identical values; the backward pass is the tape over the same nodes.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np
from beartype import beartype

from torchlean.autograd.dispatch import execute_accepted
from torchlean.backend.acceptance import AcceptedGraph, AcceptedGraphKernelPlan, AcceptedKernel
from torchlean.backend.errors import SessionError
from torchlean.ir.graph import Graph, Node
from torchlean.ir.ops import (
    AvgPool,
    BroadcastTo,
    Const,
    Conv,
    Detach,
    Input,
    LayerNorm,
    LogSoftmax,
    MaxPool,
    Permute,
    ReduceMean,
    ReduceSum,
    Reshape,
    Scale,
    ScaledDotProductAttention,
    Softmax,
    Sum,
    Transpose,
)
from torchlean.ir.payloads import ConvParams, LayerNormParams, Payloads
from torchlean.spec.masks import causal_mask
from torchlean.tensor import Tensor

__all__ = ["GraphProgram", "node_kernels"]

# Kinds whose kernel takes only its graph parents and no parameters.
_PLAIN = frozenset(
    {
        "add",
        "sub",
        "mul_elem",
        "max_elem",
        "min_elem",
        "abs",
        "sqrt",
        "inv",
        "relu",
        "gelu",
        "tanh",
        "sigmoid",
        "exp",
        "log",
        "sin",
        "cos",
        "softplus",
        "matmul",
        "mse_loss",
    }
)


@beartype
def node_kernels(plan: AcceptedGraph) -> dict[int, AcceptedKernel]:
    """The accepted kernel that runs each planned node (its group's kernel).

    Raises:
        beartype.roar.BeartypeCallHintViolation: ``plan`` was not minted by the gate.
    """
    table: dict[int, AcceptedKernel] = {}
    for group, kernel in zip(plan.grouped_plan.groups, plan.kernels, strict=True):
        for node_id in group.node_ids:
            table[node_id] = kernel
    return table


def _swap(rank: int, a: int, b: int) -> tuple[int, ...]:
    perm = list(range(rank))
    perm[a % rank], perm[b % rank] = perm[b % rank], perm[a % rank]
    return tuple(perm)


class GraphProgram:
    """A lowered graph bound to its accepted plan; :meth:`run` executes it once.

    Args:
        graph: the canonical IR graph (already well-formed and shape-checked).
        payloads: const values and layer parameters by node id.
        plan: the plan ``profile.accept_graph(graph)`` accepted for this graph.
        param_nodes: ``const`` node id → index of the model parameter it holds.
        payload_params: payload node id → (weight index, bias index) of its parameters.

    Raises:
        beartype.roar.BeartypeCallHintViolation: ``plan`` was not minted by the gate.
        SessionError: ``plan`` does not cover exactly this graph's kernel nodes.
    """

    def __init__(
        self,
        graph: Graph,
        payloads: Payloads,
        plan: AcceptedGraphKernelPlan,
        param_nodes: Mapping[int, int],
        payload_params: Mapping[int, tuple[int | None, int | None]],
    ) -> None:
        self.kernels = node_kernels(plan)
        kernel_nodes = tuple(n.id for n in graph.nodes if n.kind.backend_op is not None)
        if tuple(plan.node_ids) != kernel_nodes:
            raise SessionError(
                f"typed graph: the accepted plan covers nodes {list(plan.node_ids)}, but the graph's "
                f"kernel nodes are {list(kernel_nodes)}"
            )
        self.graph = graph
        self.payloads = payloads
        self.plan = plan
        self.param_nodes = dict(param_nodes)
        self.payload_params = dict(payload_params)

    def run(self, inputs: Sequence[Tensor], params: Sequence[Tensor], output: int) -> Tensor:
        """Execute every node up to ``output`` and return its value.

        ``inputs`` are the values of the ``input`` nodes in node order; ``params`` the current
        model parameters (leaf tensors when training).

        Raises:
            SessionError: wrong number of inputs, or a planned node without an accepted kernel.
        """
        input_ids = [n.id for n in self.graph.nodes if isinstance(n.kind, Input)]
        if len(inputs) != len(input_ids):
            raise SessionError(f"typed graph: expected {len(input_ids)} inputs, got {len(inputs)}")
        fed = dict(zip(input_ids, inputs, strict=True))
        values: dict[int, Tensor] = {}
        for node in self.graph.nodes[: output + 1]:
            values[node.id] = self._node(node, values, fed, params)
        return values[output]

    def _node(
        self, node: Node, values: Mapping[int, Tensor], fed: Mapping[int, Tensor], params: Sequence[Tensor]
    ) -> Tensor:
        kind = node.kind
        if isinstance(kind, Input):
            return fed[node.id]
        if isinstance(kind, Const):
            if node.id in self.param_nodes:
                return params[self.param_nodes[node.id]]
            const = self.payloads[node.id]
            assert isinstance(const, np.ndarray)
            return Tensor(np.array(const))
        parents = [values[p] for p in node.parents]
        if isinstance(kind, Detach):
            return parents[0].detach()
        kernel = self.kernels.get(node.id)
        if kernel is None:
            raise SessionError(f"typed graph: node {node.id} ({kind.describe()}) has no accepted kernel")
        operands, kernel_params = self._call(node, parents, params)
        return execute_accepted(kernel, None, operands, kernel_params)

    def _weights(self, node: Node, params: Sequence[Tensor]) -> tuple[Tensor | None, Tensor | None]:
        weight, bias = self.payload_params.get(node.id, (None, None))
        payload = self.payloads.get(node.id)
        fixed_w = getattr(payload, "weight", None)
        fixed_b = getattr(payload, "bias", None)
        w = params[weight] if weight is not None else (None if fixed_w is None else Tensor(np.array(fixed_w)))
        b = params[bias] if bias is not None else (None if fixed_b is None else Tensor(np.array(fixed_b)))
        return w, b

    def _call(
        self, node: Node, parents: list[Tensor], params: Sequence[Tensor]
    ) -> tuple[list[Tensor | None], dict[str, Any]]:
        """Operands and kernel parameters of one node, exactly as :mod:`torchlean.functional` passes them."""
        kind = node.kind
        x = parents[0] if parents else None
        match kind:
            case Reshape(out_shape=out_shape):
                return [x], {"shape": tuple(out_shape)}
            case Transpose(axis1=axis1, axis2=axis2):
                assert x is not None
                return [x], {"perm": _swap(max(x.ndim, 1), axis1, axis2)}
            case Permute(perm=perm):
                return [x], {"perm": tuple(perm)}
            case BroadcastTo(to_shape=to_shape):
                return [x], {"shape": tuple(to_shape)}
            case Scale(factor=factor):
                return [x], {"factor": float(factor)}
            case Softmax(axis=axis) | LogSoftmax(axis=axis):
                return [x], {"axis": int(axis)}
            case ReduceSum(axis=axis) | ReduceMean(axis=axis):
                return [x], {"axis": int(axis), "keepdims": False}
            case Sum():
                return [x], {"axis": None, "keepdims": False}
            case LayerNorm(axis=axis):
                payload = self.payloads.get(node.id)
                eps = payload.eps if isinstance(payload, LayerNormParams) else 1e-5
                w, b = self._weights(node, params)
                assert x is not None
                return [x, w, b], {"normalized_ndim": x.ndim - axis, "eps": float(eps)}
            case Conv(config=config):
                if not isinstance(self.payloads.get(node.id), ConvParams):
                    raise SessionError(f"typed graph: conv node {node.id} has no weight payload")
                w, b = self._weights(node, params)
                return [x, w, b], {
                    "stride": tuple(config.stride),
                    "padding": tuple(config.padding),
                    "dilation": tuple(config.dilation),
                    "groups": int(config.groups),
                }
            case MaxPool(config=config):
                return [x], {
                    "kernel_size": tuple(config.kernel),
                    "stride": tuple(config.stride),
                    "padding": tuple(config.padding),
                    "dilation": 1,
                }
            case AvgPool(config=config):
                return [x], {
                    "kernel_size": tuple(config.kernel),
                    "stride": tuple(config.stride),
                    "padding": tuple(config.padding),
                }
            case ScaledDotProductAttention(mask=hard, causal=causal, scale=scale):
                q, k, v = parents
                mask = None if hard is None else hard.to_array()
                if causal is not None:
                    aligned = causal_mask(q.shape[-2], k.shape[-2], align=causal)
                    mask = aligned if mask is None else np.logical_and(mask, aligned)
                operands: list[Tensor | None] = [q, k, v, None if mask is None else Tensor(mask)]
                return operands, ({} if scale is None else {"scale": float(scale)})
        if kind.tag in _PLAIN:
            return list(parents), {}
        raise SessionError(
            f"typed graph: node {node.id} ({kind.describe()}) is not supported by the typed-graph executor"
        )
