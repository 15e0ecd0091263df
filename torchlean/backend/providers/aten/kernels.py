"""Contraction, normalisation, reduction, view and attention kernels of the ``aten`` provider.

Forwards and VJPs of matmul, linear, mse_loss, log_softmax, softmax, reduce_sum, reduce_mean,
reshape, permute, broadcast, concat, slice, gather and scaled_dot_product_attention, evaluated
with torch CPU kernels on TorchLean's numpy storage (the pointwise ops are in
``aten/pointwise.py``, the channel-first ops in ``aten/spatial.py``). Each has the signature, the
guard and the rule of the reference kernel of the same label
(:mod:`torchlean.backend.providers.reference.kernels`):

1. ``<op>(*inputs, **params)`` calls the reference guard ``reference.guards.check_<op>`` (same
   refusals and :class:`~torchlean.backend.errors.GuardError` messages), hands the operands to
   torch through :func:`~torchlean.backend.providers.aten.guards.check_aten_layout` (zero copy for
   C-contiguous arrays), runs the torch operator in the operands' dtype (float32 or float64, no
   promotion; ``reshape``, ``permute``, ``broadcast``, ``concat`` and ``slice`` also move int64
   and bool data, ``gather`` reads an int64 index) and returns the torch result as a numpy array
   without a copy.
   Every result is freshly allocated and aliases no input, ``reshape``, ``permute``,
   ``broadcast`` and ``slice`` included (torch would return views there; the reference and
   native-cuda providers copy, and a program's values must not depend on the profile it runs
   under — e.g. through an in-place write).
2. ``<op>_vjp(g, *inputs, out, **params)`` runs the same guard, checks ``g`` and ``out`` as the
   reference VJP does, and evaluates TorchLean's backward rule (the reference's) with torch
   kernels inside it: matmul ``g @ b^T``, ``a^T @ g`` by ``torch.matmul``; softmax and log-softmax
   by ``torch._softmax_backward_data`` / ``_log_softmax_backward_data`` (the same formulas); sums
   over broadcast or reduced axes by ``torch.sum``; concat's slices of the cotangent by
   ``Tensor.narrow`` (copied); gather's scatter-add of the cotangent by
   ``Tensor.scatter_add_``. One cotangent per input (``None`` for a mask, an index or an absent
   bias), reduced to that input's shape and dtype, each a fresh C-contiguous array that aliases
   no input, no ``g`` and no other cotangent.

torch autograd never records: operands come from ``torch.from_numpy`` and never require a
gradient. Reductions and contractions run in whatever order torch's CPU kernels choose (BLAS,
vectorised reductions): the capsules declare ``implementation-defined``, and the differential
suites ``tests/runtime/test_aten_differential.py`` (values) and ``test_aten_gradients.py`` (VJPs)
bound the difference from the reference left folds. NaN and infinity propagate as in PyTorch;
attention keeps the hard-mask rules of DESIGN.md §1.9 in value and gradient.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

import numpy as np

from torchlean.backend.providers.aten import guards as aten_guards
from torchlean.backend.providers.aten._common import Array, check_vjp, host, optional, reduce_to
from torchlean.backend.providers.reference import guards

if TYPE_CHECKING:
    import torch

__all__ = [
    "broadcast",
    "broadcast_vjp",
    "concat",
    "concat_vjp",
    "gather",
    "gather_vjp",
    "linear",
    "linear_vjp",
    "log_softmax",
    "log_softmax_vjp",
    "matmul",
    "matmul_vjp",
    "mse_loss",
    "mse_loss_vjp",
    "permute",
    "permute_vjp",
    "reduce_mean",
    "reduce_mean_vjp",
    "reduce_sum",
    "reduce_sum_vjp",
    "reshape",
    "reshape_vjp",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_vjp",
    "slice",
    "slice_vjp",
    "softmax",
    "softmax_vjp",
]

Axis = int | tuple[int, ...] | None
Grads = tuple[Array | None, ...]
"""One cotangent per forward input, as the reference VJPs return."""


# ================================================================================ contractions


def matmul(a: Array, b: Array) -> Array:
    """``torch.matmul(a, b)`` (1-D promotion, broadcast batch axes), same shapes, dtypes and
    errors as the reference ``matmul`` (guard ``check_matmul``)."""
    import torch

    guards.check_matmul(a, b)
    ta, tb = aten_guards.check_aten_layout("matmul", a, b)
    return host(torch.matmul(ta, tb))


def matmul_vjp(
    g: Array, a: Array, b: Array, *, out: Array, needs_input_grad: Sequence[bool] | None = None
) -> Grads:
    """VJP of :func:`matmul`: ``(g @ b^T, a^T @ g)`` by ``torch.matmul``, summed over broadcast
    batch axes and un-promoted to the operands' shapes (a 1-D ``a`` is ``(1, K)``, a 1-D ``b`` is
    ``(K, 1)`` inside the rule). An operand marked False in ``needs_input_grad`` (default all)
    gets ``None`` and its product is not computed."""
    import torch

    shape = guards.check_matmul(a, b)
    check_vjp("matmul", g, out, shape, a.dtype)
    need_a, need_b = (True, True) if needs_input_grad is None else needs_input_grad
    tg, ta, tb = aten_guards.check_aten_layout("matmul", g, a, b)
    if a.ndim == 2 and b.ndim == 2:
        return (
            host(torch.matmul(tg, tb.mT)) if need_a else None,
            host(torch.matmul(ta.mT, tg)) if need_b else None,
        )
    a2 = ta.unsqueeze(0) if a.ndim == 1 else ta
    b2 = tb.unsqueeze(1) if b.ndim == 1 else tb
    batch = np.broadcast_shapes(tuple(a2.shape[:-2]), tuple(b2.shape[:-2]))
    g2 = tg.reshape((*batch, a2.shape[-2], b2.shape[-1]))
    da = host(reduce_to(torch.matmul(g2, b2.mT), a2.shape).reshape(a.shape)) if need_a else None
    db = host(reduce_to(torch.matmul(a2.mT, g2), b2.shape).reshape(b.shape)) if need_b else None
    return da, db


def linear(x: Array, w: Array, b: Array | None = None) -> Array:
    """``torch.nn.functional.linear``: ``x (..., in)``, ``w (out, in)``, ``b (out,)`` or None;
    returns ``(..., out)`` (guard ``check_linear``)."""
    import torch

    guards.check_linear(x, w, b)
    tx, tw = aten_guards.check_aten_layout("linear", x, w)
    return host(torch.nn.functional.linear(tx, tw, optional("linear", b)))


def linear_vjp(
    g: Array,
    x: Array,
    w: Array,
    b: Array | None = None,
    *,
    out: Array,
    needs_input_grad: Sequence[bool] | None = None,
) -> Grads:
    """VJP of :func:`linear`: ``(g @ w, g^T @ x, sum of g over rows)`` by ``torch.matmul`` and
    ``torch.sum`` over all leading rows; ``None`` for an absent bias and for an input marked False
    in ``needs_input_grad`` (default all), which is not computed."""
    import torch

    shape = guards.check_linear(x, w, b)
    check_vjp("linear", g, out, shape, x.dtype)
    need_x, need_w, need_b = (True, True, True) if needs_input_grad is None else needs_input_grad
    tg, tx, tw = aten_guards.check_aten_layout("linear", g, x, w)
    rows = math.prod(x.shape[:-1])
    g_rows = tg.reshape((rows, w.shape[0]))
    dx = host(torch.matmul(g_rows, tw).reshape(x.shape)) if need_x else None
    dw = host(torch.matmul(g_rows.mT, tx.reshape((rows, w.shape[1])))) if need_w else None
    db = None if b is None or not need_b else host(torch.sum(g_rows, 0))
    return dx, dw, db


def mse_loss(a: Array, b: Array) -> Array:
    """``torch.nn.functional.mse_loss(a, b)`` with reduction ``mean``: a rank-0 array (NaN for
    empty inputs); equal shapes and dtypes (guard ``check_mse_loss``)."""
    import torch

    guards.check_mse_loss(a, b)
    ta, tb = aten_guards.check_aten_layout("mse_loss", a, b)
    return host(torch.nn.functional.mse_loss(ta, tb))


def mse_loss_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`mse_loss`: ``(2 g (a - b) / n, -2 g (a - b) / n)`` with the reference's
    coefficient ``g * 2 / n`` (``n`` rounded to the dtype)."""
    import torch

    guards.check_mse_loss(a, b)
    check_vjp("mse_loss", g, out, (), a.dtype)
    tg, ta, tb = aten_guards.check_aten_layout("mse_loss", g, a, b)
    coefficient = torch.mul(tg, 2.0).div_(float(a.size))
    da = torch.sub(ta, tb).mul_(coefficient)
    return host(da), host(torch.neg(da))


# ===================================================================== softmax normalisations


def softmax(x: Array, *, axis: int = -1) -> Array:
    """``torch.softmax(x, axis)``; a rank-0 input gives 1, an empty axis an empty result
    (guard ``check_softmax``)."""
    import torch

    ax = guards.check_softmax(x, axis=axis)
    (tx,) = aten_guards.check_aten_layout("softmax", x)
    return host(torch.softmax(tx, ax))


def _rows(t: torch.Tensor) -> torch.Tensor:
    """A rank-0 tensor as one row of length 1 (as the reference's ``_as_rows``)."""
    return t.reshape(1) if t.dim() == 0 else t


def softmax_vjp(g: Array, x: Array, *, out: Array, axis: int = -1) -> Grads:
    """VJP of :func:`softmax`: ``out * (g - sum(g * out))`` along the axis
    (``torch._softmax_backward_data``)."""
    import torch

    ax = guards.check_softmax(x, axis=axis)
    check_vjp("softmax", g, out, x.shape, x.dtype)
    tg, to = aten_guards.check_aten_layout("softmax", g, out)
    grad = torch.ops.aten._softmax_backward_data(_rows(tg), _rows(to), ax, to.dtype)
    return (host(grad.reshape(x.shape)),)


def log_softmax(x: Array, *, axis: int = -1) -> Array:
    """``torch.log_softmax(x, axis)``; a rank-0 input gives 0 (guard ``check_log_softmax``)."""
    import torch

    ax = guards.check_log_softmax(x, axis=axis)
    (tx,) = aten_guards.check_aten_layout("log_softmax", x)
    return host(torch.log_softmax(tx, ax))


def log_softmax_vjp(g: Array, x: Array, *, out: Array, axis: int = -1) -> Grads:
    """VJP of :func:`log_softmax`: ``g - exp(out) * sum(g)`` along the axis
    (``torch._log_softmax_backward_data``)."""
    import torch

    ax = guards.check_log_softmax(x, axis=axis)
    check_vjp("log_softmax", g, out, x.shape, x.dtype)
    tg, to = aten_guards.check_aten_layout("log_softmax", g, out)
    grad = torch.ops.aten._log_softmax_backward_data(_rows(tg), _rows(to), ax, to.dtype)
    return (host(grad.reshape(x.shape)),)


# ================================================================================== reductions


def _expand(t: torch.Tensor, shape: Sequence[int], axes: Sequence[int]) -> torch.Tensor:
    """``t`` (the reduced shape) broadcast back over ``axes`` to ``shape``, as a fresh tensor."""
    import torch

    kept = tuple(1 if ax in axes else s for ax, s in enumerate(shape))
    return t.reshape(kept).expand(tuple(shape)).clone(memory_format=torch.contiguous_format)


def reduce_sum(x: Array, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """``torch.sum`` over ``axis`` (int, non-empty tuple, or None = all); an empty reduction gives
    0 and a rank-0 input a copy of itself (guard ``check_reduce_sum``)."""
    import torch

    axes = guards.check_reduce_sum(x, axis=axis, keepdims=keepdims)
    (tx,) = aten_guards.check_aten_layout("reduce_sum", x)
    if not axes:  # rank 0: summing no axes is the identity (torch's dim=() would mean "all")
        return host(tx.clone())
    return host(torch.sum(tx, dim=axes, keepdim=keepdims))


def reduce_sum_vjp(g: Array, x: Array, *, out: Array, axis: Axis = None, keepdims: bool = False) -> Grads:
    """VJP of :func:`reduce_sum`: ``g`` broadcast back over the reduced axes."""
    axes = guards.check_reduce_sum(x, axis=axis, keepdims=keepdims)
    check_vjp("reduce_sum", g, out, guards.reduced_shape(x.shape, axes, keepdims), x.dtype)
    (tg,) = aten_guards.check_aten_layout("reduce_sum", g)
    return (host(_expand(tg, x.shape, axes)),)


def reduce_mean(x: Array, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """``torch.mean`` over ``axis``; an empty reduction gives NaN and a rank-0 input a copy of
    itself (guard ``check_reduce_mean``)."""
    import torch

    axes = guards.check_reduce_mean(x, axis=axis, keepdims=keepdims)
    (tx,) = aten_guards.check_aten_layout("reduce_mean", x)
    if not axes:
        return host(tx.clone())
    return host(torch.mean(tx, dim=axes, keepdim=keepdims))


def reduce_mean_vjp(g: Array, x: Array, *, out: Array, axis: Axis = None, keepdims: bool = False) -> Grads:
    """VJP of :func:`reduce_mean`: ``g / count`` (count rounded to the dtype) broadcast back over
    the reduced axes."""
    import torch

    axes = guards.check_reduce_mean(x, axis=axis, keepdims=keepdims)
    check_vjp("reduce_mean", g, out, guards.reduced_shape(x.shape, axes, keepdims), x.dtype)
    (tg,) = aten_guards.check_aten_layout("reduce_mean", g)
    count = math.prod(x.shape[ax] for ax in axes)
    return (host(_expand(torch.div(tg, float(count)), x.shape, axes)),)


# ======================================================================================= views


def reshape(x: Array, *, shape: Sequence[int]) -> Array:
    """Row-major ``torch.reshape`` to ``shape`` (one ``-1`` may be inferred), copied: a fresh
    array, as the reference's (guard ``check_reshape``)."""
    import torch

    target = guards.check_reshape(x, shape=shape)
    (tx,) = aten_guards.check_aten_layout("reshape", x, int64=True)
    return host(tx.reshape(target).clone(memory_format=torch.contiguous_format))


def reshape_vjp(g: Array, x: Array, *, out: Array, shape: Sequence[int]) -> Grads:
    """VJP of :func:`reshape`: ``g`` reshaped to ``x.shape`` (a fresh copy)."""
    import torch

    target = guards.check_reshape(x, shape=shape)
    check_vjp("reshape", g, out, target, x.dtype)
    (tg,) = aten_guards.check_aten_layout("reshape", g)
    return (host(tg.reshape(x.shape).clone(memory_format=torch.contiguous_format)),)


def permute(x: Array, *, perm: Sequence[int]) -> Array:
    """Axis permutation (``torch.permute``, output axis ``i`` is input axis ``perm[i]``) made
    contiguous: a fresh copy, also for the identity permutation (guard ``check_permute``)."""
    import torch

    axes = guards.check_permute(x, perm=perm)
    (tx,) = aten_guards.check_aten_layout("permute", x, int64=True)
    return host(tx.permute(axes).clone(memory_format=torch.contiguous_format))


def permute_vjp(g: Array, x: Array, *, out: Array, perm: Sequence[int]) -> Grads:
    """VJP of :func:`permute`: ``g`` permuted by the inverse permutation (a fresh copy)."""
    import torch

    axes = guards.check_permute(x, perm=perm)
    check_vjp("permute", g, out, tuple(x.shape[a] for a in axes), x.dtype)
    (tg,) = aten_guards.check_aten_layout("permute", g)
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (host(tg.permute(inverse).clone(memory_format=torch.contiguous_format)),)


def broadcast(x: Array, *, shape: Sequence[int]) -> Array:
    """``torch.broadcast_to(x, shape)`` (numpy rules) materialised contiguously: a fresh array,
    also when ``shape`` is x's own shape (guard ``check_broadcast``)."""
    import torch

    target = guards.check_broadcast(x, shape=shape)
    (tx,) = aten_guards.check_aten_layout("broadcast", x, int64=True)
    return host(tx.expand(target).clone(memory_format=torch.contiguous_format))


def broadcast_vjp(g: Array, x: Array, *, out: Array, shape: Sequence[int]) -> Grads:
    """VJP of :func:`broadcast`: ``g`` summed (``torch.sum``) back to ``x.shape``."""
    target = guards.check_broadcast(x, shape=shape)
    check_vjp("broadcast", g, out, target, x.dtype)
    (tg,) = aten_guards.check_aten_layout("broadcast", g)
    reduced = reduce_to(tg, x.shape)
    return (host(reduced.clone() if reduced is tg else reduced),)


def concat(*xs: Array, axis: int = 0) -> Array:
    """``torch.cat(xs, axis)``: one or more arrays of one dtype (float32, float64, int64 or bool)
    and one rank, equal extents off ``axis`` (in ``[-rank, rank)``; rank-0 inputs are refused),
    zero-size operands included; the output's ``axis`` extent is the sum of the inputs' (guard
    ``check_concat``: the reference's refusals and messages, mixed dtypes included: nothing is
    promoted). A fresh array, also for one operand. A copy, no arithmetic: bit for bit the
    reference's ``np.concatenate``."""
    import torch

    guards.check_concat(*xs, axis=axis)
    tensors = aten_guards.check_aten_layout("concat", *xs, int64=True)
    return host(torch.cat(tensors, int(axis) % xs[0].ndim))


def concat_vjp(g: Array, *xs: Array, out: Array, axis: int = 0) -> Grads:
    """VJP of :func:`concat`: for each input, the slice of ``g`` it occupied along ``axis``
    (``Tensor.narrow``, as torch's own ``cat`` backward), copied to a fresh array of the input's
    shape and dtype. Nothing is summed; an input passed twice (``concat([a, a])``) gets its two
    slices as two cotangents, which the tape adds."""
    import torch

    shape = guards.check_concat(*xs, axis=axis)
    check_vjp("concat", g, out, shape, xs[0].dtype)
    (tg,) = aten_guards.check_aten_layout("concat", g)
    ax = int(axis) % g.ndim
    grads: list[Array | None] = []
    start = 0
    for x in xs:
        piece = tg.narrow(ax, start, x.shape[ax])
        grads.append(host(piece.clone(memory_format=torch.contiguous_format)))
        start += x.shape[ax]
    return tuple(grads)


def slice(
    x: Array,
    *,
    starts: Sequence[int],
    stops: Sequence[int],  # the op label is `slice`
    steps: Sequence[int] | None = None,
) -> Array:
    """``x[start0:stop0:step0, start1:stop1:step1, ...]`` by torch basic slicing, one bound per
    axis with ``0 <= start <= stop <= extent`` and ``step >= 1`` (default 1), copied: a fresh
    array, as the reference's (guard ``check_slice``). float32, float64, int64 or bool ``x``
    (torch would return a view); a rank-0 ``x`` (no bounds) gives a rank-0 copy. No arithmetic:
    the elements are the reference's bit for bit."""
    import torch

    bounds = guards.check_slice(x, starts=starts, stops=stops, steps=steps)
    (tx,) = aten_guards.check_aten_layout("slice", x, int64=True)
    return host(tx[guards.slice_index(bounds)].clone(memory_format=torch.contiguous_format))


def slice_vjp(
    g: Array,
    x: Array,
    *,
    out: Array,
    starts: Sequence[int],
    stops: Sequence[int],
    steps: Sequence[int] | None = None,
) -> Grads:
    """VJP of :func:`slice`: ``g`` copied into torch zeros of ``x.shape`` at the sliced positions
    (distinct positions: nothing is summed); every other entry is +0."""
    import torch

    bounds = guards.check_slice(x, starts=starts, stops=stops, steps=steps)
    sliced = tuple(len(range(start, stop, step)) for start, stop, step in bounds)
    check_vjp("slice", g, out, sliced, x.dtype)
    (tg,) = aten_guards.check_aten_layout("slice", g)
    grad = torch.zeros(tuple(x.shape), dtype=tg.dtype)
    grad[guards.slice_index(bounds)] = tg
    return (host(grad),)


def gather(x: Array, index: Array, *, axis: int) -> Array:
    """``torch.gather(x, axis, index)``: ``out[i][j][k] = x[i][index[i][j][k]][k]`` (axis 1).

    ``x`` float32 or float64 of rank >= 1; ``index`` int64 of ``x``'s rank with
    ``index.shape[d] <= x.shape[d]`` for ``d != axis`` and values in ``[0, x.shape[axis])``; the
    output has ``index``'s shape and ``x``'s dtype (guard ``check_gather``: the reference's
    refusals and messages). A selection, no arithmetic: bit for bit the reference's.
    """
    import torch

    guards.check_gather(x, index, axis=axis)
    tx, tindex = aten_guards.check_aten_layout("gather", x, index, int64=True)
    return host(torch.gather(tx, int(axis) % x.ndim, tindex))


def gather_vjp(g: Array, x: Array, index: Array, *, out: Array, axis: int) -> Grads:
    """VJP of :func:`gather`: ``(zeros(x.shape).scatter_add_(axis, index, g), None)``, torch's own
    ``gather_backward`` (dense). Repeated indices add their cotangents in the order torch's CPU
    ``scatter_add_`` kernel chooses: the capsule declares it implementation-defined (the
    reference adds them in index order; a target that no index reaches gets +0)."""
    import torch

    shape = guards.check_gather(x, index, axis=axis)
    check_vjp("gather", g, out, shape, x.dtype)
    tg, tindex = aten_guards.check_aten_layout("gather", g, index, int64=True)
    grad = torch.zeros(tuple(x.shape), dtype=tg.dtype)
    grad.scatter_add_(int(axis) % x.ndim, tindex, tg)
    return host(grad), None


# ==================================================================================== attention


def _allowed(q: Array, k: Array, v: Array, mask: Array | None) -> torch.Tensor | None:
    """The mask through the layout guard, broadcast (a view) to ``(*batch, nQ, nK)``."""
    import torch

    if mask is None:
        return None
    (tmask,) = aten_guards.check_aten_layout("scaled_dot_product_attention", mask)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    return torch.broadcast_to(tmask, (*batch, q.shape[-2], k.shape[-2]))


def scaled_dot_product_attention(
    q: Array, k: Array, v: Array, mask: Array | None = None, *, scale: float | None = None
) -> Array:
    """Attention ``(..., nQ, dv)`` composed from torch operators with TorchLean's hard-mask rules.

    ``q (..., nQ, d)``, ``k (..., nK, d)``, ``v (..., nK, dv)`` with broadcast leading axes;
    ``mask`` bool broadcastable to ``(..., nQ, nK)``, True = the key may be attended; ``scale``
    defaults to ``1/sqrt(d)`` (1 when ``d == 0``). Guard ``check_scaled_dot_product_attention``.

    Evaluated by the torch attention core :mod:`~torchlean.backend.providers.masked_attention`
    (shared with ``torchlean.composed_attention``): scores ``torch.matmul(q, k^T) * scale``;
    without a mask ``torch.softmax`` then ``torch.matmul(weights, v)``. With a mask (DESIGN.md
    §1.9, anchor-runtime.md §5.2) blocked scores are *selected away* (``torch.where``), never
    added as -inf: the weights are exactly 0 at blocked entries and on fully blocked rows, so
    those rows are exactly 0, and a NaN or infinity that no allowed pair reads never reaches the
    output.
    """
    from torchlean.backend.providers import masked_attention

    guards.check_scaled_dot_product_attention(q, k, v, mask, scale=scale)
    tq, tk, tv = aten_guards.check_aten_layout("scaled_dot_product_attention", q, k, v)
    factor = masked_attention.default_scale(q.shape[-1], scale)
    out, _ = masked_attention.attention_forward(tq, tk, tv, _allowed(q, k, v, mask), factor)
    return host(out)


def scaled_dot_product_attention_vjp(
    g: Array,
    q: Array,
    k: Array,
    v: Array,
    mask: Array | None = None,
    *,
    out: Array,
    scale: float | None = None,
) -> Grads:
    """VJP of :func:`scaled_dot_product_attention`: ``(dq, dk, dv, None)``, the reference rule.

    Recomputes the weights ``W``, then ``dW = g v^T``, ``dv = W^T g``, ``dS = W * (dW -
    rowsum(W * dW)) * scale`` (with a mask held constant: the sum over allowed entries, exactly 0
    at blocked ones), ``dq = dS k``, ``dk = dS^T q``, each summed over broadcast leading axes
    (:func:`~torchlean.backend.providers.masked_attention.attention_backward`). Blocked pairs are
    selected away in every contraction, so fully masked rows get zero gradients and NaN/inf at
    blocked positions never leak.
    """
    from torchlean.backend.providers import masked_attention

    shape = guards.check_scaled_dot_product_attention(q, k, v, mask, scale=scale)
    op = "scaled_dot_product_attention"
    check_vjp(op, g, out, shape, q.dtype)
    tg, tq, tk, tv = aten_guards.check_aten_layout(op, g, q, k, v)
    factor = masked_attention.default_scale(q.shape[-1], scale)
    _, tape = masked_attention.attention_forward(tq, tk, tv, _allowed(q, k, v, mask), factor)
    dq, dk, dv = masked_attention.attention_backward(tg, tape)
    return host(reduce_to(dq, q.shape)), host(reduce_to(dk, k.shape)), host(reduce_to(dv, v.shape)), None
