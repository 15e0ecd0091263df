"""Forward evaluator of the canonical IR (``denoteAll``, anchor-runtime.md §4.3).

Every node is computed by the same numpy **reference kernels** eager execution uses
(``torchlean.backend.providers.reference.kernels`` and ``.spatial``), so a graph evaluates to the
bits the eager runtime computes on the ``reference`` provider. Layout adapters are pure views:
pooling over ``[..., C, *spatial]`` folds the leading axes into the kernel's batch axis, a conv
with ``channel_axis`` 0 gets a batch axis of 1, ``batch_norm_eval`` views its input as
``[N, C, rest]``; an asymmetric conv padding is applied as explicit zeros before a convolution
without padding.

Randomness: ``rand_uniform seed`` and ``bernoulli_mask seed`` at node ``i`` draw with key
``keyOf(seed, i)`` (the node index, not the eager session's counter; anchor-runtime.md §1.6).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference import kernels, spatial
from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node
from torchlean.ir.infer import check_shapes
from torchlean.ir.ops import (
    Abs,
    Add,
    AvgPool,
    BatchNormEval,
    BernoulliMask,
    BroadcastTo,
    Concat,
    Const,
    Conv,
    Cos,
    Detach,
    Exp,
    Flatten,
    Gelu,
    HardMaskedSoftmax,
    Input,
    Inv,
    LayerNorm,
    Linear,
    Log,
    LogSoftmax,
    Matmul,
    MaxElem,
    MaxPool,
    MinElem,
    MseLoss,
    MulElem,
    Permute,
    RandUniform,
    ReduceMean,
    ReduceSum,
    Relu,
    Reshape,
    SafeLog,
    Scale,
    ScaledDotProductAttention,
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
    render_shape,
)
from torchlean.ir.payloads import Array, BatchNormParams, ConvParams, LayerNormParams, LinearParams, Payloads
from torchlean.spec.masks import causal_mask

__all__ = ["LOG_DOMAIN_MESSAGE", "evaluate"]

LOG_DOMAIN_MESSAGE = (
    "IR eval: log: input contains values <= 0 (or NaN); use `safe_log`, which is log(softplus(x) + eps)"
)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_P = TypeVar("_P", LinearParams, ConvParams, BatchNormParams, LayerNormParams)

_UNARY = {
    Abs: kernels.abs,
    Sqrt: kernels.sqrt,
    Inv: kernels.inv,
    Relu: kernels.relu,
    Tanh: kernels.tanh,
    Sigmoid: kernels.sigmoid,
    Exp: kernels.exp,
    Sin: kernels.sin,
    Cos: kernels.cos,
    Softplus: kernels.softplus,
    Gelu: kernels.gelu,
}
_BINARY = {
    Add: kernels.add,
    Sub: kernels.sub,
    MulElem: kernels.mul,
    MaxElem: kernels.max,
    MinElem: kernels.min,
}


def evaluate(
    graph: Graph,
    inputs: Mapping[int, npt.ArrayLike],
    payloads: Payloads | None = None,
    *,
    dtype: npt.DTypeLike = np.float32,
) -> list[Array]:
    """Compute every node's value, in graph order; ``result[i]`` is node ``i``'s array.

    ``inputs`` maps each ``input`` node id to a float32/float64 array of the node's shape;
    ``payloads`` holds const values and layer parameters by node id (:mod:`torchlean.ir.payloads`);
    ``dtype`` is the dtype of ``rand_uniform`` draws (a ``bernoulli_mask`` takes its keep
    probability's dtype). The graph is shape-checked first.

    Raises:
        IRError: the shape checker's messages; ``IR eval: missing input value for node i``;
            ``IR eval: input i: ...`` (dtype or shape); ``IR eval: missing const payload for node i``;
            ``IR eval: const i: flat length mismatch: have a, expected b``;
            ``IR eval: missing linear payload for node i`` (likewise conv, batch_norm_eval);
            the log domain error :data:`LOG_DOMAIN_MESSAGE`; a kernel guard's refusal as
            ``IR eval: node i (<kind>): <guard message>``.
    """
    check_shapes(graph)
    store: Payloads = payloads if payloads is not None else {}
    draw_dtype = np.dtype(dtype)
    values: list[Array] = []
    for node in graph.nodes:
        args = [values[p] for p in node.parents]
        try:
            out = _eval_node(node, args, inputs, store, draw_dtype)
        except GuardError as error:
            raise IRError(f"IR eval: node {node.id} ({node.kind.describe()}): {error}") from error
        if out.shape != node.out_shape:
            raise IRError(
                f"IR eval: shape mismatch: expected {render_shape(node.out_shape)}, "
                f"got {render_shape(out.shape)}"
            )
        values.append(out)
    return values


def _eval_node(
    node: Node,
    args: list[Array],
    inputs: Mapping[int, npt.ArrayLike],
    payloads: Payloads,
    dtype: np.dtype[Any],
) -> Array:
    kind = node.kind
    unary = _UNARY.get(type(kind))
    if unary is not None:
        return unary(args[0])
    binary = _BINARY.get(type(kind))
    if binary is not None:
        return binary(args[0], args[1])
    match kind:
        case Input():
            return _input(node, inputs)
        case Const(value_shape=shape):
            value = payloads.get(node.id)
            if not isinstance(value, np.ndarray):
                raise IRError(f"IR eval: missing const payload for node {node.id}")
            if value.size != math.prod(shape):
                raise IRError(
                    f"IR eval: const {node.id}: flat length mismatch: have {value.size}, "
                    f"expected {math.prod(shape)}"
                )
            return np.array(value.reshape(shape), copy=True)
        case Detach():
            return np.array(args[0], copy=True)
        case RandUniform(seed=seed):
            return kernels.rand_uniform(shape=node.out_shape, seed=seed, counter=node.id, dtype=dtype)
        case BernoulliMask(seed=seed):
            keep = args[0]
            return kernels.bernoulli_mask(
                shape=node.out_shape, keep_prob=float(keep), seed=seed, counter=node.id, dtype=keep.dtype
            )
        case Log():
            if not bool(np.all(args[0] > 0)):
                raise IRError(LOG_DOMAIN_MESSAGE)
            return kernels.log(args[0])
        case SafeLog():
            return kernels.safe_log(args[0], eps=float(args[1]))
        case Scale(factor=factor):
            return kernels.scale(args[0], factor=factor)
        case Permute(perm=perm):
            return kernels.permute(args[0], perm=perm)
        case Transpose(axis1=a1, axis2=a2):
            axes = list(range(args[0].ndim))
            axes[a1], axes[a2] = axes[a2], axes[a1]
            return kernels.permute(args[0], perm=axes)
        case BroadcastTo(to_shape=shape):
            return kernels.broadcast(args[0], shape=shape)
        case Reshape(out_shape=shape):
            return kernels.reshape(args[0], shape=shape)
        case Flatten():
            return kernels.reshape(args[0], shape=(args[0].size,))
        case Concat(axis=axis):
            return kernels.concat(*args, axis=axis)
        case ReduceSum(axis=axis):
            return kernels.reduce_sum(args[0], axis=axis)
        case ReduceMean(axis=axis):
            return kernels.reduce_mean(args[0], axis=axis)
        case Sum():
            return kernels.reduce_sum(args[0], axis=None)
        case MseLoss():
            return kernels.mse_loss(args[0], args[1])
        case Matmul():
            return kernels.matmul(args[0], args[1])
        case Softmax(axis=axis):
            return kernels.softmax(args[0], axis=axis)
        case LogSoftmax(axis=axis):
            return kernels.log_softmax(args[0], axis=axis)
        case HardMaskedSoftmax(mask=mask):
            return kernels.hard_masked_softmax(args[0], mask.to_array(), axis=-1)
        case ScaledDotProductAttention():
            return _attention(kind, args[0], args[1], args[2])
    return _eval_layer(node, args[0], payloads)


def _eval_layer(node: Node, x: Array, payloads: Payloads) -> Array:
    """Kinds with parameters in the payload store, and the pooling/conv layout adapters."""
    match node.kind:
        case Linear():
            lin = _payload(payloads, node, LinearParams, "linear")
            return kernels.linear(x, lin.weight, lin.bias)
        case Conv(config=config):
            conv = _payload(payloads, node, ConvParams, "conv")
            lead = x.shape[: config.channel_axis]
            batched = x.reshape((math.prod(lead), *x.shape[config.channel_axis :]))
            padding: tuple[int, ...] = config.padding
            if config.padding_after != config.padding:
                pads = [(0, 0), (0, 0), *zip(config.padding, config.padding_after, strict=True)]
                batched = np.pad(batched, pads)
                padding = (0,) * config.spatial_rank
            out = spatial.conv(
                batched,
                conv.weight,
                conv.bias,
                stride=config.stride,
                padding=padding,
                dilation=config.dilation,
                groups=config.groups,
            )
            return out.reshape(node.out_shape)
        case MaxPool(config=window):
            return _pool(x, window, node, spatial.max_pool)
        case AvgPool(config=window):
            return _pool(x, window, node, spatial.avg_pool)
        case BatchNormEval(channel_axis=axis):
            bn = _payload(payloads, node, BatchNormParams, "batch_norm_eval")
            view = x.reshape((math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1 :])))
            out = spatial.batch_norm(view, bn.weight, bn.bias, bn.mean, bn.var, training=False, eps=bn.eps)
            return out.reshape(x.shape)
        case LayerNorm(axis=axis):
            found = payloads.get(node.id)
            ln = found if isinstance(found, LayerNormParams) else LayerNormParams()
            return spatial.layer_norm(x, ln.weight, ln.bias, normalized_ndim=x.ndim - axis, eps=ln.eps)
    raise IRError(f"IR eval: node {node.id}: no evaluation rule for {node.kind.describe()}")


def _input(node: Node, inputs: Mapping[int, npt.ArrayLike]) -> Array:
    if node.id not in inputs:
        raise IRError(f"IR eval: missing input value for node {node.id}")
    value = np.asarray(inputs[node.id])
    if value.dtype not in _FLOATS:
        raise IRError(
            f"IR eval: input {node.id}: expected a float32 or float64 array, got dtype {value.dtype}"
        )
    if value.shape != node.out_shape:
        raise IRError(
            f"IR eval: input {node.id}: shape mismatch: expected {render_shape(node.out_shape)}, "
            f"got {render_shape(value.shape)}"
        )
    return np.array(value, copy=True)


def _payload(payloads: Payloads, node: Node, cls: type[_P], what: str) -> _P:
    value = payloads.get(node.id)
    if not isinstance(value, cls):
        raise IRError(f"IR eval: missing {what} payload for node {node.id}")
    return value


def _pool(x: Array, window: WindowConfig, node: Node, kernel: Callable[..., Array]) -> Array:
    split = x.ndim - window.spatial_rank - 1
    batched = x.reshape((math.prod(x.shape[:split]), *x.shape[split:]))
    out: Array = kernel(batched, kernel_size=window.kernel, stride=window.stride, padding=window.padding)
    return out.reshape(node.out_shape)


def _attention(kind: ScaledDotProductAttention, q: Array, k: Array, v: Array) -> Array:
    mask = None if kind.mask is None else kind.mask.to_array()
    if kind.causal is not None:
        causal = causal_mask(q.shape[-2], k.shape[-2], align=kind.causal)
        mask = causal if mask is None else np.logical_and(mask, causal)
    return kernels.scaled_dot_product_attention(q, k, v, mask, scale=kind.scale)
