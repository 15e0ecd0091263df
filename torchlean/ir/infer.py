"""Shape inference and checking for the canonical IR (``NN.IR.Infer``, anchor-runtime.md §4.3).

:func:`infer_node_shape` computes a node's output shape from its kind and its parents' shapes;
:func:`check_shapes` first checks well-formedness, then infers every node in order (from the
*inferred* parent shapes) and requires the result to equal the declared ``out_shape``. Messages
of node-local failures are the original's (``add: shape mismatch: [2] vs [3]``,
``reshape: numel mismatch: 4 vs 6``); a declared shape that disagrees gives
``IR graph: node i: outShape mismatch: inferred=..., declared=... (Node(...))``.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node, require_graph
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
    numel,
    render_shape,
)

__all__ = [
    "broadcast_shapes",
    "check_shapes",
    "conv_out_shape",
    "infer_node_shape",
    "infer_shapes",
    "matmul_out_shape",
    "pool_out_shape",
]

_UNARY = (Abs, Sqrt, Inv, Relu, Tanh, Sigmoid, Exp, Log, Sin, Cos, Softplus, Gelu, Scale, Detach)
_BINARY = (Add, Sub, MulElem, MaxElem, MinElem)

_r = render_shape


def broadcast_shapes(a: Shape, b: Shape) -> Shape | None:
    """numpy/torch broadcast of two shapes (right-aligned, extents equal or 1); None if impossible."""
    out: list[int] = []
    for i in range(1, max(len(a), len(b)) + 1):
        x = a[-i] if i <= len(a) else 1
        y = b[-i] if i <= len(b) else 1
        if x != y and 1 not in (x, y):
            return None
        out.append(y if x == 1 else x)
    return tuple(reversed(out))


def _broadcasts_to(src: Shape, dst: Shape) -> bool:
    return len(src) <= len(dst) and broadcast_shapes(src, dst) == dst


def matmul_out_shape(a: Shape, b: Shape) -> Shape:
    """Output shape of ``torch.matmul(a, b)``.

    1-D operands are promoted (``[k]`` to ``[1, k]`` on the left, ``[k, 1]`` on the right) and the
    added axis removed; leading batch axes broadcast. Raises :class:`IRError`.
    """
    if not a or not b:
        raise IRError(f"matmul: expected operands of rank >= 1, got {_r(a)} and {_r(b)}")
    left = (1, *a) if len(a) == 1 else a
    right = (*b, 1) if len(b) == 1 else b
    if left[-1] != right[-2]:
        raise IRError(f"matmul: inner dimension mismatch: {_r(a)} vs {_r(b)}")
    batch = broadcast_shapes(left[:-2], right[:-2])
    if batch is None:
        raise IRError(f"matmul: batch dimensions do not broadcast: {_r(a)} vs {_r(b)}")
    out = (*batch, left[-2], right[-1])
    if len(a) == 1:
        out = out[:-2] + out[-1:]
    if len(b) == 1:
        out = out[:-1]
    return out


def _window(extent: int, kernel: int, stride: int, before: int, after: int, dilation: int) -> int | None:
    span = dilation * (kernel - 1) + 1
    padded = extent + before + after
    if padded < span:
        return None
    return (padded - span) // stride + 1


def pool_out_shape(tag: str, config: WindowConfig, s: Shape) -> Shape:
    """Pooling output shape: leading axes kept, each spatial ``(in + 2p - k) // s + 1``.

    The input needs at least one axis (channels) before the ``config.spatial_rank`` spatial axes.
    """
    rank = config.spatial_rank
    if len(s) < rank + 1:
        raise IRError(
            f"{tag}: expected an input of rank >= {rank + 1} (channels, {rank} spatial), got {_r(s)}"
        )
    spatial = s[len(s) - rank :]
    out: list[int] = []
    for extent, k, st, p in zip(spatial, config.kernel, config.stride, config.padding, strict=True):
        o = _window(extent, k, st, p, p, 1)
        if o is None:
            raise IRError(
                f"{tag}: window {_r(config.kernel)} does not fit input {_r(s)} "
                f"with padding {_r(config.padding)}"
            )
        out.append(o)
    return (*s[: len(s) - rank], *out)


def conv_out_shape(config: ConvConfig, s: Shape) -> Shape:
    """Convolution output shape for an input ``[..., C_in, *spatial]`` (``channel_axis`` = C_in).

    Each spatial extent: ``(in + pad + pad_after - dilation * (k - 1) - 1) // stride + 1``.
    """
    rank = config.spatial_rank
    if len(s) != config.channel_axis + 1 + rank:
        raise IRError(
            f"conv: input {_r(s)} does not have channel axis {config.channel_axis} followed by {rank} "
            "spatial axes"
        )
    if s[config.channel_axis] != config.in_channels:
        raise IRError(
            f"conv: input {_r(s)} has {s[config.channel_axis]} channels at axis {config.channel_axis}, "
            f"expected {config.in_channels}"
        )
    out: list[int] = []
    for extent, k, st, p, pa, d in zip(
        s[config.channel_axis + 1 :],
        config.kernel,
        config.stride,
        config.padding,
        config.padding_after,
        config.dilation,
        strict=True,
    ):
        o = _window(extent, k, st, p, pa, d)
        if o is None:
            raise IRError(
                f"conv: kernel {_r(config.kernel)} with dilation {_r(config.dilation)} does not fit input "
                f"{_r(s)} with padding {_r(config.padding)}/{_r(config.padding_after)}"
            )
        out.append(o)
    return (*s[: config.channel_axis], config.out_channels, *out)


def _check_axis(tag: str, axis: int, s: Shape) -> None:
    if axis >= len(s):
        raise IRError(f"{tag}: axis {axis} out of range for shape {_r(s)}")


def _check_mask(tag: str, mask: HardMask, scores: Shape) -> None:
    check_mask_shape(tag, mask.shape, scores)


def check_mask_shape(tag: str, mask: Shape, scores: Shape) -> None:
    """Refuse a static mask of shape ``mask`` that does not broadcast to the ``scores`` shape (the
    builder checks an array's declared shape with it before reading its entries, review243 F6).

    Raises:
        IRError: ``<tag>: mask shape [...] does not broadcast to [...]``.
    """
    if not _broadcasts_to(mask, scores):
        raise IRError(f"{tag}: mask shape {_r(mask)} does not broadcast to {_r(scores)}")


def _attention_shape(kind: ScaledDotProductAttention, q: Shape, k: Shape, v: Shape) -> Shape:
    tag = kind.tag
    if min(len(q), len(k), len(v)) < 2 or not len(q) == len(k) == len(v):
        raise IRError(f"{tag}: expected q, k, v of equal rank >= 2, got {_r(q)}, {_r(k)}, {_r(v)}")
    if not q[:-2] == k[:-2] == v[:-2]:
        raise IRError(f"{tag}: leading dimensions differ: {_r(q)}, {_r(k)}, {_r(v)}")
    if q[-1] != k[-1] or k[-2] != v[-2]:
        raise IRError(
            f"{tag}: q [.., nQ, d], k [.., nK, d], v [.., nK, dv] mismatch: {_r(q)}, {_r(k)}, {_r(v)}"
        )
    if kind.mask is not None:
        _check_mask(tag, kind.mask, (*q[:-1], k[-2]))
    return (*q[:-1], v[-1])


def _infer_unary(kind: OpKind, s: Shape, declared: Shape) -> Shape:
    """Kinds with exactly one parent."""
    tag = kind.tag
    match kind:
        case _ if isinstance(kind, _UNARY):
            return s
        case Permute(perm=perm):
            if sorted(perm) != list(range(len(s))):
                raise IRError(f"permute: invalid permutation {_r(perm)} for shape {_r(s)}")
            return tuple(s[p] for p in perm)
        case Transpose(axis1=a1, axis2=a2):
            if max(a1, a2) >= len(s):
                raise IRError(f"transpose: axes {a1} and {a2} out of range for shape {_r(s)}")
            out = list(s)
            out[a1], out[a2] = out[a2], out[a1]
            return tuple(out)
        case BernoulliMask():
            if s != ():
                raise IRError(f"bernoulli_mask: expected scalar keepProb parent, got {_r(s)}")
            return declared
        case BroadcastTo(from_shape=src, to_shape=dst):
            if s != src:
                raise IRError(f"broadcast_to: parent shape mismatch: expected {_r(src)}, got {_r(s)}")
            if not _broadcasts_to(src, dst):
                raise IRError(f"broadcast_to: invalid broadcast from {_r(src)} to {_r(dst)}")
            return dst
        case ReduceSum(axis=axis) | ReduceMean(axis=axis):
            if not s and axis == 0:
                return ()  # torch: a scalar's dim 0 names the scalar itself (torch.tensor(3.).sum(0))
            _check_axis(tag, axis, s)
            return s[:axis] + s[axis + 1 :]
        case Sum():
            return ()
        case Linear():
            if not s or not declared:
                raise IRError(f"linear: expected rank>=1 input/output, got input={_r(s)}, out={_r(declared)}")
            if s[:-1] != declared[:-1]:
                raise IRError(
                    f"linear: leading dimensions must be preserved: input={_r(s)}, outShape={_r(declared)}"
                )
            return declared
        case Conv(config=config):
            return conv_out_shape(config, s)
        case MaxPool(config=config) | AvgPool(config=config):
            return pool_out_shape(tag, config, s)
        case BatchNormEval(channel_axis=axis, channels=channels) | BatchNormTrain(
            channel_axis=axis, channels=channels
        ):
            _check_axis(tag, axis, s)
            if s[axis] != channels:
                raise IRError(f"{tag}: expected {channels} channels at axis {axis}, got {_r(s)}")
            return s
        case Softmax(axis=axis) | LogSoftmax(axis=axis):
            if not s and axis == 0:
                return ()  # torch: torch.softmax(torch.tensor(3.), 0) is 1 (log_softmax: 0), as the kernels
            _check_axis(tag, axis, s)
            return s
        case LayerNorm(axis=axis):
            _check_axis(tag, axis, s)
            return s
        case HardMaskedSoftmax(mask=mask):
            if not s:
                raise IRError(f"hard_masked_softmax: expected an input of rank >= 1, got {_r(s)}")
            _check_mask(tag, mask, s)
            return s
        case Reshape(in_shape=src, out_shape=dst):
            if s != src:
                raise IRError(f"reshape: parent shape mismatch: expected {_r(src)}, got {_r(s)}")
            if numel(src) != numel(dst):
                raise IRError(f"reshape: numel mismatch: {numel(src)} vs {numel(dst)}")
            return dst
        case Flatten(shape=src):
            if s != src:
                raise IRError(f"flatten: parent shape mismatch: expected {_r(src)}, got {_r(s)}")
            return (numel(src),)
    raise IRError(f"{tag}: no shape rule for a kind with one parent")


def infer_node_shape(node: Node, parent_shapes: Sequence[Shape]) -> Shape:
    """The output shape of ``node`` given its parents' shapes (``inferNodeOutShape``).

    ``input``, ``rand_uniform``, ``bernoulli_mask`` and ``linear`` take (part of) their shape from
    the declared ``node.out_shape``; every other kind ignores it.

    Raises:
        IRError: the node-local message (``add: shape mismatch: [2] vs [3]``, ...), or the arity
            message when the parent count does not fit the kind.
    """
    kind = node.kind
    shapes = [tuple(s) for s in parent_shapes]
    arity = Node(node.id, tuple(range(len(shapes))), kind, node.out_shape).arity_error()
    if arity is not None:
        raise IRError(arity)
    match kind:
        case Input() | RandUniform():
            return node.out_shape
        case Const(value_shape=shape):
            return shape
        case _ if isinstance(kind, _BINARY):
            a, b = shapes
            if a != b:
                raise IRError(f"{kind.tag}: shape mismatch: {_r(a)} vs {_r(b)}")
            return a
        case MseLoss():
            a, b = shapes
            if a != b:
                raise IRError(f"mse_loss: yhat/target shape mismatch: {_r(a)} vs {_r(b)}")
            return ()
        case SafeLog():
            x, eps = shapes
            if eps != ():
                raise IRError(f"safe_log: expected scalar epsilon parent, got {_r(eps)}")
            return x
        case Matmul():
            return matmul_out_shape(shapes[0], shapes[1])
        case Concat(axis=axis):
            return _concat_shape(axis, shapes)
        case Gather(axis=axis):
            return _gather_shape(axis, shapes[0], shapes[1])
        case LinearOf():
            return _linear_of_shape(shapes)
        case ScaledDotProductAttention():
            return _attention_shape(kind, shapes[0], shapes[1], shapes[2])
    return _infer_unary(kind, shapes[0], node.out_shape)


def _linear_of_shape(shapes: Sequence[Shape]) -> Shape:
    """``linear``'s rule with the weight ``[out, in]`` and bias ``[out]`` as parents: x of rank >= 1
    whose last extent is ``in``; the output is x's shape with ``out`` last."""
    x, weight = shapes[0], shapes[1]
    bias = shapes[2] if len(shapes) > 2 else None
    if not x or len(weight) != 2 or weight[1] != x[-1] or (bias is not None and bias != weight[:1]):
        raise IRError(
            f"linear_of: weight {_r(weight)} and bias {'none' if bias is None else _r(bias)} do not fit "
            f"input {_r(x)} (accepted: x [..., in], weight [out, in], bias [out])"
        )
    return (*x[:-1], weight[0])


def _gather_shape(axis: int, x: Shape, index: Shape) -> Shape:
    """``torch.gather``'s rule: the index has x's rank and extents at most x's on every axis but
    ``axis``; the output is the index's shape."""
    _check_axis("gather", axis, x)
    if len(index) != len(x) or any(i > d for a, (i, d) in enumerate(zip(index, x, strict=True)) if a != axis):
        raise IRError(
            f"gather: index {_r(index)} does not fit input {_r(x)} along axis {axis} (accepted: the "
            "input's rank, extents at most the input's on every other axis)"
        )
    return index


def _concat_shape(axis: int, shapes: list[Shape]) -> Shape:
    first = shapes[0]
    _check_axis("concat", axis, first)
    total = 0
    for s in shapes:
        if len(s) != len(first) or s[:axis] != first[:axis] or s[axis + 1 :] != first[axis + 1 :]:
            raise IRError(f"concat: shapes differ outside axis {axis}: {_r(first)} vs {_r(s)}")
        total += s[axis]
    return (*first[:axis], total, *first[axis + 1 :])


def infer_shapes(graph: Graph) -> list[Shape]:
    """Check well-formedness, then infer every node's shape in order (``checkShapes``).

    Returns the inferred shapes (equal to the declared ones). Raises :class:`IRError`:
    well-formedness messages (a declared extent that is not an integer >= 0 among them: ``IR
    graph: node i: outShape extent -4 is negative (accepted: integers >= 0) (Node(...))``, or
    ``... extent 2.5 is not an integer ...``); for each node in order, node-local messages; or
    ``IR graph: node i: outShape mismatch: inferred=[..], declared=[..] (Node(...))``; a ``graph``
    that is not a :class:`Graph` gives ``infer_shapes: graph must be a torchlean.ir Graph ...``.
    """
    require_graph(graph, "infer_shapes")
    graph.check_well_formed()
    inferred: list[Shape] = []
    for index, node in enumerate(graph.nodes):
        out = infer_node_shape(node, [inferred[p] for p in node.parents])
        if out != node.out_shape:
            raise IRError(
                f"IR graph: node {index}: outShape mismatch: inferred={_r(out)}, "
                f"declared={_r(node.out_shape)} ({node.summary()})"
            )
        inferred.append(out)
    return inferred


def check_shapes(graph: Graph) -> None:
    """:func:`infer_shapes` without the result: raises :class:`IRError` or returns None.

    A ``graph`` that is not a :class:`Graph` (a list of nodes, say) gives
    ``check_shapes: graph must be a torchlean.ir Graph (from GraphBuilder.build().graph or
    Graph(nodes)), got [...] (list)``.
    """
    require_graph(graph, "check_shapes")
    infer_shapes(graph)
