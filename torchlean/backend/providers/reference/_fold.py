"""Fixed-left (left fold) summation and contraction helpers of the reference provider.

Every reduction and contraction of the ``reference`` kernels goes through this module so that its
order is the one the capsules declare (``fixed-left``, DESIGN.md §1.6): the reduced elements are
added one after another, in increasing row-major order, in the arrays' own dtype,
``((x0 + x1) + x2) + ...``.  numpy's ``sum``/``mean`` (pairwise summation), ``matmul``/``@``/
``dot``/``einsum`` (BLAS, implementation-defined order) are never used.  Sums use
``np.add.accumulate`` (a sequential recurrence ``out[i] = out[i-1] + x[i]``, so the order is
fixed); contractions loop over the contracted axis and stay vectorised over all other axes.

A sum over zero elements is ``+0.0``; a non-empty sum starts from its first element (no ``0 +``),
which only matters for the sign of a zero result.  The scatter-style accumulations, which are not
reductions of one array and do not use this module, start from ``+0.0`` instead: the VJPs that add
cotangent terms into a zero array (``gather``'s and the input gradients of the pools and
``conv``) and ``conv_transpose``'s forward add each element's terms in a fixed order onto
``+0.0``, as torch's ``scatter_add`` into zeros does, so there a sum of ``-0.0`` terms is ``+0.0``.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

Array = npt.NDArray[Any]
"""A numpy array of any dtype (the reference kernels use float32/float64, int64 and bool)."""


def fold_sum_axes(x: Array, axes: Sequence[int], *, keepdims: bool = False) -> Array:
    """Left-fold sum of ``x`` over ``axes`` (non-negative, distinct, any order given).

    The reduced elements of each output position are added in increasing row-major order of
    their coordinates along the reduced axes, in ``x.dtype``.  Shape: ``x.shape`` without the
    reduced axes (or with them set to 1 when ``keepdims``).  Always returns a fresh array.

    Memory: a float input of more than :data:`SUM_BLOCK` elements is folded in blocks
    (:func:`_fold_sum_in_blocks`), so besides the result the temporaries are about two blocks
    (or none past the result when the result itself is more than half a block), not an array
    the size of the input (review243 F9: ``np.add.accumulate`` of the whole input, and its
    transposed copy where the reduced axes did not merge into a view). A result holding a NaN
    is recomputed by that one ``accumulate`` (see :func:`_fold_sum_in_blocks`).
    """
    reduced = sorted(set(axes))
    kept = [ax for ax in range(x.ndim) if ax not in reduced]
    kept_shape = tuple(x.shape[ax] for ax in kept)
    count = 1
    for ax in reduced:
        count *= x.shape[ax]
    if count == 0:
        total = np.zeros(kept_shape, dtype=x.dtype)
    elif x.size <= SUM_BLOCK or x.dtype.kind != "f":  # (accumulate widens bool and small ints)
        total = _fold_sum_at_once(x, kept, reduced, kept_shape, count)
    else:
        total = _fold_sum_in_blocks(x, kept, reduced, kept_shape)
        if np.isnan(np.min(total)):  # min propagates NaN, and allocates no mask
            total = _fold_sum_at_once(x, kept, reduced, kept_shape, count)
    if keepdims:
        keep_shape = tuple(1 if ax in reduced else x.shape[ax] for ax in range(x.ndim))
        return total.reshape(keep_shape)
    return total


SUM_BLOCK = 1 << 20
"""How many input elements :func:`fold_sum_axes` folds at once (8 MiB of float64); an input of at
most this many elements is folded by one ``np.add.accumulate``."""


def _fold_sum_at_once(
    x: Array, kept: list[int], reduced: list[int], kept_shape: tuple[int, ...], count: int
) -> Array:
    """:func:`fold_sum_axes` as one ``np.add.accumulate`` over the whole (moved) input, of which
    the last slice is kept: a temporary the size of the input."""
    moved = np.transpose(x, kept + reduced).reshape((*kept_shape, count))
    result: Array = np.add.accumulate(moved, axis=-1)[..., -1].copy()
    return result


def _fold_sum_in_blocks(x: Array, kept: list[int], reduced: list[int], kept_shape: tuple[int, ...]) -> Array:
    """:func:`fold_sum_axes` of a float ``x`` (over at least one element) without a temporary
    the size of ``x``.

    The reduced elements of every output position are taken in row-major order in chunks, and
    each chunk is added to the running sums by the same sequential recurrence
    ``s = s + x[i]``: where a chunk holds one reduced element per position and the result is
    more than half a block, by ``np.add(s, x[i], out=s)`` (no temporary; one Python iteration per
    reduced element, each over the whole result); otherwise by one ``np.add.accumulate`` over
    ``[s, chunk...]`` (as :func:`_fold_in_blocks`) in two reused buffers of about
    :data:`SUM_BLOCK` elements. The additions, and so every result that is not NaN, are those of
    the one ``accumulate`` over the whole input (the first element is not added to ``0``). Which
    of two NaNs an addition keeps differs between numpy's code paths, so :func:`fold_sum_axes`
    recomputes a result holding a NaN at once, which keeps its bits in every case."""
    moved = np.transpose(x, kept + reduced)  # a view: kept axes, then reduced axes
    reduced_shape = tuple(x.shape[ax] for ax in reduced)
    lead = (slice(None),) * len(kept)
    kept_size = math.prod(kept_shape)
    if 2 * kept_size > SUM_BLOCK:
        total: Array | None = None
        for index in np.ndindex(*reduced_shape):
            term = moved[(*lead, *index)]
            if total is None:
                total = term.copy()  # C-contiguous, never a view of x
            else:
                np.add(total, term, out=total)
        assert total is not None
        return total
    width = SUM_BLOCK // max(kept_size, 1)  # reduced elements per position in a chunk (>= 2)
    # Chunks: the trailing reduced axes whose extents multiply to at most `width` are taken
    # whole (`inner` elements), `step` indices of the axis before them at a time, and the axes
    # before that one index at a time.
    split, inner = len(reduced_shape), 1
    while split > 1 and inner * reduced_shape[split - 1] <= width:
        split -= 1
        inner *= reduced_shape[split]
    axis_length = reduced_shape[split - 1]
    step = max(1, width // inner)  # chunks of step * inner <= width elements per position
    terms = np.empty((*kept_shape, width + 1), dtype=x.dtype)
    sums = np.empty_like(terms)
    total = np.empty(kept_shape, dtype=x.dtype)
    offset = 0  # where a chunk goes in `terms`: after the running sums once there are some
    for index in np.ndindex(*reduced_shape[: split - 1]):
        for start in range(0, axis_length, step):
            piece = moved[(*lead, *index, slice(start, start + step))]
            end = offset + math.prod(piece.shape[len(kept) :])
            window = terms[..., offset:end].reshape(piece.shape)  # splits the last axis: a view
            assert window.base is terms
            np.copyto(window, piece)
            np.add.accumulate(terms[..., :end], axis=-1, out=sums[..., :end])
            total[...] = sums[..., end - 1]
            terms[..., 0] = total
            offset = 1
    return total


def fold_sum(x: Array, axis: int, *, keepdims: bool = False) -> Array:
    """Left-fold sum of ``x`` along one non-negative ``axis`` (see :func:`fold_sum_axes`)."""
    return fold_sum_axes(x, (axis,), keepdims=keepdims)


def sum_to_shape(g: Array, shape: Sequence[int]) -> Array:
    """Reduce a broadcast cotangent ``g`` back to ``shape`` with left folds.

    ``shape`` must broadcast to ``g.shape`` under numpy rules.  Leading axes that ``shape`` lacks
    and axes where ``shape`` has extent 1 but ``g`` does not are summed (one left fold over the
    row-major order of all reduced elements).  This is the VJP of ``np.broadcast_to``.
    Returns a fresh array of exactly ``shape``.
    """
    target = tuple(int(s) for s in shape)
    lead = g.ndim - len(target)
    axes = list(range(lead))
    axes += [lead + i for i, s in enumerate(target) if s == 1 and g.shape[lead + i] != 1]
    return fold_sum_axes(g, axes, keepdims=True).reshape(target)


def fold_matmul(a: Array, b: Array) -> Array:
    """Batched matrix product with a left fold over the contracted axis.

    ``a``: ``(..., M, K)``, ``b``: ``(..., K, N)`` with broadcastable leading axes, same dtype.
    Result ``(broadcast(...), M, N)`` in that dtype, where entry ``[m, n]`` is
    ``((a[m,0]*b[0,n] + a[m,1]*b[1,n]) + ...) + a[m,K-1]*b[K-1,n]`` (each product rounded, then
    added; no fused multiply-add).  ``K == 0`` gives zeros.  A fresh C-contiguous array.

    Time and memory: where the result has at most :data:`BLOCKED_STEP_TERMS` entries, the terms
    are formed and folded in blocks of about :data:`BLOCK_TERMS` (:func:`_fold_in_blocks`: a
    handful of Python iterations and one block's temporaries, whatever ``K``); otherwise one
    vectorised addition per term of ``K`` onto the result (review243 F8: a dot product of two
    8 Mi-vectors took 8 Mi Python iterations, 10 s). Both take the same additions in the same
    order, so the same bits.
    """
    return _fold_in_blocks(a, b, None, nan_via_loop=True)


def fold_matmul_where(a: Array, b: Array, allowed: Array) -> Array:
    """:func:`fold_matmul` in which the terms at blocked ``(m, k)`` pairs are selected away.

    ``allowed`` is boolean, broadcastable to ``a.shape`` (``(..., M, K)``).  A term
    ``a[m,k]*b[k,n]`` with ``allowed[m,k]`` false contributes nothing, even when one of its
    factors is NaN or infinite (selection with ``np.where``, not multiplication by zero): it is
    replaced by ``+0.0``, which changes no sum except the sign of a zero one (a row whose allowed
    terms are all ``-0.0`` sums to ``+0.0`` when any of its terms is blocked).
    This is how the hard-mask attention contractions keep values at blocked positions out of
    the result (DESIGN.md §1.9).  Small results are folded in blocks, as in :func:`fold_matmul`.
    """
    allowed = np.broadcast_to(allowed, np.broadcast_shapes(allowed.shape, a.shape))
    return _fold_in_blocks(a, b, allowed, nan_via_loop=True)


def _fold_matmul_loop(a: Array, b: Array) -> Array:
    """:func:`fold_matmul` one term of the contracted axis at a time (one vectorised addition of
    the result's size per term)."""
    batch = np.broadcast_shapes(a.shape[:-2], b.shape[:-2])
    out_shape = (*batch, a.shape[-2], b.shape[-1])
    depth = a.shape[-1]
    if depth == 0:
        return np.zeros(out_shape, dtype=a.dtype)
    acc = np.array(np.broadcast_to(a[..., :, 0:1] * b[..., 0:1, :], out_shape))
    for k in range(1, depth):
        acc += a[..., :, k : k + 1] * b[..., k : k + 1, :]
    return acc


def _fold_matmul_where_loop(a: Array, b: Array, allowed: Array) -> Array:
    """:func:`fold_matmul_where` one term of the contracted axis at a time (``allowed`` already
    broadcast against ``a``)."""
    batch = np.broadcast_shapes(allowed.shape[:-2], b.shape[:-2])
    out_shape = (*batch, a.shape[-2], b.shape[-1])
    zero = a.dtype.type(0)
    acc = np.zeros(out_shape, dtype=a.dtype)
    for k in range(a.shape[-1]):
        term = np.where(allowed[..., :, k : k + 1], a[..., :, k : k + 1] * b[..., k : k + 1, :], zero)
        if k == 0:
            acc = np.array(np.broadcast_to(term, out_shape))
        else:
            acc += term
    return acc


def fold_matmul_to(shape: Sequence[int], a: Array, b: Array, allowed: Array | None = None) -> Array:
    """The product ``a @ b`` (:func:`fold_matmul`, or :func:`fold_matmul_where` with ``allowed``)
    summed down to ``shape``, as one left fold over every reduced term.

    ``a``: ``(..., M, K)``, ``b``: ``(..., K, N)`` (and ``allowed``: broadcastable to ``a``) with
    broadcastable leading axes; ``shape``: ``(..., M, N)`` whose leading axes broadcast to the
    product's (a VJP's operand shape). The leading axes ``shape`` lacks, or has as 1 where the
    product does not, are reduced together with the contracted axis ``K``: the terms
    ``a[i, m, k] * b[i, k, n]`` of each result entry are added in increasing row-major order of
    ``(reduced leading coordinates, k)``, the same order as :func:`sum_to_shape` of the whole
    product would take if the products were not summed first (review79 F2: the per-batch sums were
    folded first, then folded over the batch, which gave other bits than ``linear``'s and
    ``reduce_sum``'s single fold). Returns a fresh array of exactly ``shape``.
    """
    target = tuple(int(extent) for extent in shape)
    shapes = [a.shape[:-2], b.shape[:-2]] + ([] if allowed is None else [allowed.shape[:-2]])
    batch = np.broadcast_shapes(*shapes)
    lead = len(batch) - (len(target) - 2)
    reduced = [
        axis for axis in range(len(batch)) if axis < lead or (target[axis - lead] == 1 and batch[axis] != 1)
    ]
    kept = [axis for axis in range(len(batch)) if axis not in reduced]
    rows, depth, cols = a.shape[-2], a.shape[-1], b.shape[-1]
    count = math.prod(batch[axis] for axis in reduced) * depth
    nb = len(batch)
    kept_shape = tuple(batch[axis] for axis in kept)

    def merged_left(x: Array) -> Array:  # (*batch, M, K) -> (*kept, M, reduced..., K) -> (*kept, M, R*K)
        full = np.broadcast_to(x, (*batch, rows, depth))
        return np.transpose(full, [*kept, nb, *reduced, nb + 1]).reshape((*kept_shape, rows, count))

    left = merged_left(a)
    full_b = np.broadcast_to(b, (*batch, depth, cols))
    right = np.transpose(full_b, [*kept, *reduced, nb, nb + 1]).reshape((*kept_shape, count, cols))
    product = _fold_in_blocks(left, right, None if allowed is None else merged_left(allowed))
    return np.ascontiguousarray(product).reshape(target)


BLOCK_TERMS = 1 << 20
"""How many product terms :func:`_fold_in_blocks` forms at once (8 MiB of float64)."""

BLOCKED_STEP_TERMS = 64
"""The most output entries per term of the contracted axis (``prod(leading) * M * N``) for which
:func:`_fold_in_blocks` folds in blocks: measured on a 2-core machine over a 20 000-term axis,
blocks take 1 ms against the one-term loop's 26 ms at 4 entries, 13 against 28 at 64, but 42
against 31 at 256 and 740 against 76 at 4096 (review84 F1: a 256 x 256 matmul's backward took
276 ms instead of 26 when blocks were used up to 2**17 entries)."""


def _fold_in_blocks(left: Array, right: Array, allowed: Array | None, *, nan_via_loop: bool = False) -> Array:
    """:func:`fold_matmul` (or :func:`fold_matmul_where` with ``allowed``) of ``left`` ``(..., M,
    L)`` and ``right`` ``(..., L, N)`` (broadcastable leading axes), faster where the contracted
    axis is long and the result small (a broadcast batch merged into it: 50 000 items of 2 x 2 took
    130 ms one term at a time, review82 F7; a dot product or a linear layer's weight gradient over
    many rows, review243 F8). The terms of a block of the contracted axis are formed at once and
    added to the running sum by one ``np.add.accumulate`` over ``[sum, terms...]``, a sequential
    recurrence: the order, and so the bits, are those of the one-term loop. Where one term of the
    axis feeds more than :data:`BLOCKED_STEP_TERMS` output entries, the one-term loop runs (its
    vector additions are then long enough to be the faster way). Returns a fresh C-contiguous
    array (never a view of a block's buffer).

    Which of two NaNs an addition keeps (sign and payload) is numpy's choice and differs between
    its code paths (an in-place add on a one-entry array keeps the second, ``accumulate`` the
    first); every other result is fixed by IEEE arithmetic and the order. With ``nan_via_loop``
    (:func:`fold_matmul`, :func:`fold_matmul_where`: review243 F8), a result holding a NaN is
    recomputed by the one-term loop, so that these keep the loop's bits in every case."""
    rows, length, cols = left.shape[-2], left.shape[-1], right.shape[-1]
    shapes = [left.shape[:-2], right.shape[:-2]] + ([] if allowed is None else [allowed.shape[:-2]])
    per_step = math.prod(np.broadcast_shapes(*shapes)) * rows * cols
    block = BLOCK_TERMS // max(per_step, 1)
    if per_step > BLOCKED_STEP_TERMS or block < 8 or length == 0:
        return _fold_loop(left, right, allowed)
    zero = left.dtype.type(0)
    total: Array | None = None
    for start in range(0, length, block):
        stop = min(start + block, length)
        terms = left[..., :, start:stop, None] * right[..., None, start:stop, :]  # (..., M, C, N)
        if allowed is not None:
            terms = np.where(allowed[..., :, start:stop, None], terms, zero)
        if total is not None:
            terms = np.concatenate([total[..., :, None, :], terms], axis=-2)
        total = np.add.accumulate(terms, axis=-2)[..., -1, :]
    assert total is not None and total.shape[-2:] == (rows, cols)
    if nan_via_loop and np.isnan(total).any():
        return _fold_loop(left, right, allowed)
    return total.copy()  # C-contiguous, and does not keep the last block's buffer alive


def _fold_loop(left: Array, right: Array, allowed: Array | None) -> Array:
    """The one-term loop of :func:`fold_matmul` (``allowed`` None) or :func:`fold_matmul_where`."""
    if allowed is None:
        return _fold_matmul_loop(left, right)
    return _fold_matmul_where_loop(left, right, allowed)
