"""Forward evaluator of the canonical IR (``denoteAll``, anchor-runtime.md §4.3).

Every node is computed by the same numpy **reference kernels** eager execution uses
(``torchlean.backend.providers.reference.kernels`` and ``.spatial``), so a graph evaluates to the
bits the eager runtime computes on the ``reference`` provider. Layout adapters are pure views:
pooling over ``[..., C, *spatial]`` folds the leading axes into the kernel's batch axis, a conv
with ``channel_axis`` 0 gets a batch axis of 1, ``batch_norm_eval`` (and ``batch_norm_train``
with a channel axis other than 1) views its input as ``[N, C, rest]``; an asymmetric conv padding
is applied as explicit zeros before a convolution without padding.

Randomness: ``rand_uniform seed`` and ``bernoulli_mask seed`` at node ``i`` draw with key
``keyOf(seed, i)`` (the node index, not the eager session's counter; anchor-runtime.md §1.6).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

import numpy as np
import numpy.typing as npt

from torchlean._checks import shown_briefly
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference import kernels, spatial
from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node, require_graph
from torchlean.ir.infer import check_shapes
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
    Cos,
    Detach,
    Exp,
    Flatten,
    Gather,
    Gelu,
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
from torchlean.ir.payload_check import payload_fault, stray_keys, stray_keys_fault
from torchlean.ir.payloads import (
    Array,
    BatchNormParams,
    BatchNormTrainParams,
    ConvParams,
    LayerNormParams,
    LinearParams,
    Payloads,
    read_array,
)
from torchlean.spec.masks import causal_mask

__all__ = ["LOG_DOMAIN_MESSAGE", "evaluate"]

LOG_DOMAIN_MESSAGE = (
    "IR eval: log: input contains values <= 0 (or NaN); use `safe_log`, which is log(softplus(x) + eps)"
)

_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))
_INPUT_DTYPES = (*_FLOATS, np.dtype(np.int64), np.dtype(np.bool_))
_P = TypeVar("_P", LinearParams, ConvParams, BatchNormParams, BatchNormTrainParams, LayerNormParams)

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

    Source: anchor-runtime.md §4.3 (the ``NN.IR`` graph model and its node semantics), each node
    computed by the reference provider's kernel for its op (anchor-backend.md §2.7's op mapping).

    ``inputs`` is a mapping from each ``input`` node id to an array (or array-like) of the node's
    shape, of dtype float32, float64, int64 or bool. As in eager execution and the typed-graph
    executor, int64 and bool values move through ``reshape``, ``flatten``, ``permute``,
    ``transpose``, ``broadcast_to``, ``concat`` and ``detach``; every kernel that computes refuses
    them with its guard's message (below). ``payloads`` holds const values and layer parameters
    by node id (:mod:`torchlean.ir.payloads`): a numpy array at a ``const`` node,
    :class:`LinearParams` at ``linear``, :class:`ConvParams` at ``conv``, :class:`BatchNormParams`
    at ``batch_norm_eval``, :class:`BatchNormTrainParams` at ``batch_norm_train`` (which
    normalises with the batch's statistics and updates nothing), and at ``layernorm`` a
    :class:`LayerNormParams` or nothing (no affine, eps 1e-5). ``dtype`` (float32 or float64: a
    numpy dtype or type, its name, or a torch dtype) is the dtype of ``rand_uniform`` draws (a
    ``bernoulli_mask`` takes its keep probability's dtype); another numpy dtype is refused by the
    first ``rand_uniform`` node, and unused without one.
    The graph is shape-checked first.
    ``log`` refuses values <= 0 or NaN (the typed-graph executor computes NaN/-inf there, as eager).

    Raises:
        IRError: ``evaluate: graph must be a torchlean.ir Graph ...`` for another object; the
            shape checker's messages; ``IR eval: inputs must be a mapping from input node id to
            array (input ids: [0]), got [...] (list)``; ``IR eval: inputs has keys that are not
            input node ids: [1, 7] (input ids: [0])``; ``IR eval: dtype 'bogus' is not a numpy
            dtype (accepted: float32 or float64, the dtype of rand_uniform draws, as a numpy dtype
            or type, its name, or a torch dtype)`` (also ``None`` and values that carry a dtype:
            a numpy scalar, an array, a tensor; a dtype other than float32 or float64: ``IR eval:
            node i (rand_uniform 0): rand_uniform: dtype ... is not accepted (accepted: float32 or
            float64)``);
            ``IR eval: missing input value for node i``; ``IR eval: input i: ...`` (dtype or
            shape; ragged data: ``... is not a rectangular array: ...``; a torch tensor that
            requires grad: ``IR eval: input i: a torch tensor of shape (2,) that requires grad,
            which numpy cannot read (accepted: its values, t.detach())``; a meta one likewise);
            ``IR eval: missing const payload for node i``; ``IR eval: const i: flat
            length mismatch: have a, expected b``; ``IR eval: missing linear payload for node i``
            (likewise conv, batch_norm_eval, batch_norm_train); ``IR eval: node i (<kind>): payload must be a
            LinearParams, got ConvParams`` for a payload of another type at a payload-taking node
            (``... a LayerNormParams or none`` at ``layernorm``, ``... a numpy array`` at
            ``const``); ``IR eval: node i (<kind>): its LinearParams.weight has shape [5, 3]
            (accepted: [4, 3])`` for a payload that does not fit its node
            (:func:`~torchlean.ir.payload_check.payload_fault`: review212 F1, F3);
            ``IR eval: payloads has keys that are not nodes taking a payload: [...]``
            for a payload keyed at another node (it would be ignored); the log domain error
            :data:`LOG_DOMAIN_MESSAGE`; a kernel guard's refusal as ``IR eval: node i (<kind>):
            <guard message>`` (e.g. ``relu: input x has dtype int64; accepted: float32 or
            float64``).
    """
    require_graph(graph, "evaluate")
    check_shapes(graph)
    _check_inputs(graph, inputs)
    draw_dtype = _draw_dtype(dtype)
    store: Payloads = payloads if payloads is not None else {}
    _check_payload_keys(graph, store)
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
            if value is None:
                raise IRError(f"IR eval: missing const payload for node {node.id}")
            if not isinstance(value, np.ndarray):
                raise _wrong_payload(node, "a numpy array", value)
            if value.size != math.prod(shape):
                raise IRError(
                    f"IR eval: const {node.id}: flat length mismatch: have {value.size}, "
                    f"expected {math.prod(shape)}"
                )
            return np.array(np.asarray(value).reshape(shape), copy=True)  # an np.matrix too
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
            if args[0].dtype in _FLOATS and not bool(np.all(args[0] > 0)):
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
        case Gather(axis=axis):
            return kernels.gather(args[0], args[1], axis=axis)
        case LinearOf():
            return kernels.linear(args[0], args[1], args[2] if len(args) > 2 else None)
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
    """Kinds with parameters in the payload store (each checked against the node first:
    :func:`~torchlean.ir.payload_check.payload_fault`), and the pooling/conv layout adapters."""
    fault = payload_fault(node, payloads.get(node.id), x.shape) if node.id in payloads else None
    if fault is not None:  # review212 F1, F3: a weight that does not fit ran, or raised numpy's error
        raise IRError(f"IR eval: node {node.id} ({node.kind.describe()}): {fault}")
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
        case BatchNormTrain(channel_axis=axis):
            bt = _payload(payloads, node, BatchNormTrainParams, "batch_norm_train")
            if axis == 1:  # the kernel's own layout, as eager execution runs it
                return spatial.batch_norm(x, bt.weight, bt.bias, None, None, training=True, eps=bt.eps)
            view = x.reshape((math.prod(x.shape[:axis]), x.shape[axis], math.prod(x.shape[axis + 1 :])))
            out = spatial.batch_norm(view, bt.weight, bt.bias, None, None, training=True, eps=bt.eps)
            return out.reshape(x.shape)
        case LayerNorm(axis=axis):
            found = payloads.get(node.id)
            if found is not None and not isinstance(found, LayerNormParams):
                raise _wrong_payload(node, "a LayerNormParams or none", found)
            ln = found if found is not None else LayerNormParams()
            return spatial.layer_norm(x, ln.weight, ln.bias, normalized_ndim=x.ndim - axis, eps=ln.eps)
    raise IRError(f"IR eval: node {node.id}: no evaluation rule for {node.kind.describe()}")


def _check_inputs(graph: Graph, inputs: object) -> None:
    """Refuse ``inputs`` that is not a mapping, or has keys that are not input node ids."""
    ids = graph.input_ids()
    if not isinstance(inputs, Mapping):  # review225 F6: by type (and shape), not an array's repr
        got = (f"an array of shape {render_shape(inputs.shape)} (pass {{{ids[0]}: array}})"
               if isinstance(inputs, np.ndarray) and ids else type(inputs).__name__)
        raise IRError(
            f"IR eval: inputs must be a mapping from input node id to array (input ids: "
            f"{render_shape(ids)}), got {got}"
        )
    stray = stray_keys(inputs, ids)
    if stray:
        raise IRError(
            f"IR eval: inputs has keys that are not input node ids: {stray} "
            f"(input ids: {render_shape(ids)})"
        )


def _check_payload_keys(graph: Graph, payloads: object) -> None:
    """Refuse ``payloads`` that is not a mapping, or keyed at a node that takes no payload (a
    payload there would be ignored: :func:`~torchlean.ir.payload_check.stray_keys_fault`)."""
    if not isinstance(payloads, Mapping):
        raise IRError(
            "IR eval: payloads must be a mapping from node id to payload, got "  # review219 F6: the
            f"{type(payloads).__name__}"  # type's name, as the executor's (a repr of arrays ran to lines)
        )
    fault = stray_keys_fault(graph, payloads)
    if fault is not None:
        raise IRError(f"IR eval: {fault}")


_DTYPE_ACCEPTED = (
    "accepted: float32 or float64, the dtype of rand_uniform draws, as a numpy dtype or type, its "
    "name, or a torch dtype"
)


def _draw_dtype(dtype: object) -> np.dtype[Any]:
    """``dtype`` as a numpy dtype; the ``rand_uniform`` kernel refuses one other than float32 or
    float64 at the node that draws (a graph without one never uses it). Only a dtype spelling is
    read: a string, a type, a numpy dtype or a torch dtype (by its name). A value that merely
    carries a ``.dtype`` (a numpy scalar, an array, a tensor), which ``np.dtype`` would read as
    its dtype (or refuse with a raw ``ValueError`` for a torch tensor), and ``None`` (float64 to
    ``np.dtype``, though the default is float32) are refused (review239 F6).

    Raises:
        IRError: ``IR eval: dtype 'bogus' is not a numpy dtype (accepted: ...)``.
    """
    spelled: object = dtype
    if type(dtype).__module__ == "torch" and type(dtype).__qualname__ == "dtype":
        spelled = str(dtype).removeprefix("torch.")
    if isinstance(spelled, str | type | np.dtype):
        try:
            return np.dtype(spelled)
        except (TypeError, ValueError):
            pass
    raise IRError(f"IR eval: dtype {shown_briefly(dtype)} is not a numpy dtype ({_DTYPE_ACCEPTED})")


def _wrong_payload(node: Node, accepted: str, found: object) -> IRError:
    return IRError(
        f"IR eval: node {node.id} ({node.kind.describe()}): payload must be {accepted}, "
        f"got {type(found).__name__}"
    )


def _input(node: Node, inputs: Mapping[int, npt.ArrayLike]) -> Array:
    """The value of input ``node``, read by :func:`~torchlean.ir.payloads.read_array` (review239
    F5, F9: ragged data and torch tensors that require grad or live on ``meta`` are refused with
    an :class:`IRError`, not numpy's or torch's error), checked for dtype and shape, copied."""
    if node.id not in inputs:
        raise IRError(f"IR eval: missing input value for node {node.id}")
    value = read_array(inputs[node.id], f"IR eval: input {node.id}")
    if value.dtype not in _INPUT_DTYPES:
        raise IRError(
            f"IR eval: input {node.id}: expected a float32, float64, int64 or bool array, "
            f"got dtype {value.dtype}"
        )
    if value.shape != node.out_shape:
        raise IRError(
            f"IR eval: input {node.id}: shape mismatch: expected {render_shape(node.out_shape)}, "
            f"got {render_shape(value.shape)}"
        )
    return np.array(value, copy=True)


def _payload(payloads: Payloads, node: Node, cls: type[_P], what: str) -> _P:
    value = payloads.get(node.id)
    if value is None:
        raise IRError(f"IR eval: missing {what} payload for node {node.id}")
    if not isinstance(value, cls):
        raise _wrong_payload(node, f"a {cls.__name__}", value)
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
