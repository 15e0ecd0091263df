"""Reference (numpy, fixed-left) kernels of the channel-first ops and their VJPs.

``layer_norm``, ``batch_norm``, ``conv``, ``conv_transpose``, ``max_pool``, ``smooth_max_pool``,
``avg_pool``: the ``reference.*`` capsules 38-44 (anchor-backend.md §4.2), mirroring
``torch.nn.functional`` semantics.  Each forward ``<op>(*inputs, **params)`` and each
``<op>_vjp(g, *inputs, out, **params)`` first calls its guard
``spatial_guards.check_<op>`` (VJPs then check ``g`` against the output's shape and dtype) and
computes in the input dtype (float32 or float64, no promotion).  A VJP returns one cotangent per
input, of that input's shape, or None for an absent optional input and for non-differentiable
inputs (batch-norm running statistics).  ``out`` (the forward result) is part of the uniform VJP
signature; these VJPs recompute what they need from the inputs.

Fixed-left order (DESIGN.md §1.6): every sum is a left fold in increasing row-major order of the
summed index, ``((t0 + t1) + t2) + ...``, in the input dtype; no numpy reduction, ``@`` or BLAS.
Convolutions fold over the contracted ``(C_in/groups, *kernel)`` index in row-major order
(channel, then kernel offsets) and add the bias afterwards; a pool folds over its window in
row-major kernel-offset order; normalisation statistics fold over the normalised elements.
``conv_transpose``'s forward and the input gradients of ``conv`` and the pools scatter their terms
onto a zero canvas, each element receiving its terms in row-major order of the contracted index
(``(C_out/groups, *kernel)`` for ``conv``'s input gradient, ``(C_in/groups, *kernel)`` for
``conv_transpose``, the kernel offsets for a pool) after a ``+0.0`` start (the sign of a zero
result can differ from a fold that starts from its first term).  For a pool, kernel-offset order
is the reverse of window order: tap 0 of window ``o + k`` (stride 1) reads the element that tap
``k`` of window ``o`` reads, so the later window's term comes first.
Windows are gathered im2col-style, one array per kernel offset: a strided view of the input
where the offset reads no padding, else a copy holding the padding value where it does (the
padded input itself is never built, so memory does not grow with the padding). The pools read
only the offsets that reach the input (:func:`_live_taps`); the convolutions read every offset, as
their ``0 * w`` padding terms are part of the fold (an infinite weight makes them NaN, as torch's).
"""

from __future__ import annotations

import itertools
import math
from collections.abc import Iterable, Iterator, Sequence
from types import EllipsisType
from typing import Any, NamedTuple

import numpy as np

from torchlean.backend.providers.reference._fold import Array, fold_sum_axes
from torchlean.backend.providers.reference.guards import check_cotangent
from torchlean.backend.providers.reference.ieee import ieee
from torchlean.backend.providers.reference.spatial_guards import (
    IntOrTuple,
    Window,
    check_avg_pool,
    check_batch_norm,
    check_batch_norm_running_stats,
    check_conv,
    check_conv_transpose,
    check_layer_norm,
    check_max_pool,
    check_smooth_max_pool,
)

__all__ = [
    "avg_pool",
    "avg_pool_vjp",
    "batch_norm",
    "batch_norm_running_stats",
    "batch_norm_vjp",
    "conv",
    "conv_transpose",
    "conv_transpose_vjp",
    "conv_vjp",
    "layer_norm",
    "layer_norm_vjp",
    "max_pool",
    "max_pool_vjp",
    "smooth_max_pool",
    "smooth_max_pool_vjp",
]

# ------------------------------------------------------------------------------ fold and window

Index = tuple[int | slice | EllipsisType, ...]
"""A basic (view-producing) numpy index."""
Offset = tuple[int, ...]
"""A kernel offset (tap): one index per spatial axis."""


def _scalar(value: float, like: Array) -> np.floating[Any]:
    """``value`` as a scalar of ``like``'s dtype, so arithmetic stays in that dtype."""
    result: np.floating[Any] = like.dtype.type(value)
    return result


def _left_fold(terms: Iterable[Array]) -> Array:
    """``((t0 + t1) + t2) + ...`` of equally shaped arrays, as a fresh array (at least one term)."""
    it = iter(terms)
    acc = np.array(next(it), copy=True)
    for term in it:
        acc += term
    return acc


def _taps(window: Window) -> Iterator[tuple[int, ...]]:
    """Kernel offsets in row-major order."""
    return itertools.product(*(range(k) for k in window.kernel))


class _Span(NamedTuple):
    """Where tap ``offset`` reads input: ``output[out] <- input[inp]`` per spatial axis."""

    out: Index  # the output positions whose tap lands on input (a contiguous run per axis)
    inp: Index  # the input elements they read (a strided run per axis)
    whole: bool  # every output position reads input (no tap lands on padding)


def _span(window: Window, offset: tuple[int, ...]) -> _Span | None:
    """The output positions ``o`` at which tap ``offset`` reads an input element, and those
    elements: padded position ``o * stride + k * dilation`` is input position
    ``o * stride + k * dilation - padding``, increasing in ``o``, so the positions inside
    ``[0, input)`` are one run of outputs per axis.  None where the tap reads only padding on some
    axis.  Python ints throughout, so a padding of 2**31 costs nothing."""
    outs: list[slice] = []
    inps: list[slice] = []
    whole = True
    for k, d, n, s, p, size in zip(
        offset, window.dilation, window.output, window.stride, window.padding, window.input, strict=True
    ):
        first = k * d - p  # input position read at output 0
        lo = min(n, max(0, -(first // s) if first < 0 else 0))
        hi = min(n, max(0, -((first - size) // s)))
        if hi <= lo:
            return None
        start = first + lo * s
        outs.append(slice(lo, hi))
        inps.append(slice(start, start + (hi - lo - 1) * s + 1, s))
        whole = whole and lo == 0 and hi == n
    return _Span((Ellipsis, *outs), (Ellipsis, *inps), whole)


def _tap_values(a: Array, window: Window, offset: tuple[int, ...], fill: float = 0.0) -> Array:
    """Tap ``offset``'s value at every output position of ``a`` padded with ``fill``:
    ``padded(a)[..., o * stride + offset * dilation]``, of shape ``(*leading, *window.output)``.

    The padded array is never built (its size grows with the padding, not the data): a view of
    ``a`` where the tap reads input at every position, else a fresh array of ``fill`` holding the
    input elements the tap reads."""
    span = _span(window, offset)
    if span is not None and span.whole:
        return a[span.inp]
    leading = a.shape[: a.ndim - len(window.kernel)]
    values = np.full((*leading, *window.output), fill, dtype=a.dtype)
    if span is not None:
        values[span.out] = a[span.inp]
    return values


def _add_tap(canvas: Array, window: Window, offset: tuple[int, ...], part: Array) -> None:
    """Adjoint of :func:`_tap_values` (fill 0): add ``part`` (of shape ``(*leading,
    *window.output)``) into ``canvas`` ``(*leading, *window.input)`` at the
    input elements tap ``offset`` reads; terms landing on padding are dropped."""
    span = _span(window, offset)
    if span is not None:
        canvas[span.inp] += part[span.out]


def _live_taps(window: Window) -> list[tuple[int, tuple[int, ...]]]:
    """``(number, offset)`` of each kernel offset that reads an input element at some output
    position (``number`` its row-major position among all offsets), in row-major order.

    A pool may have far more offsets than its windows read input at (a kernel of 2**20 with a
    padding of 2**19 over one element: one live offset, review243 F1); the pools walk only these,
    which leaves their results unchanged (an offset reading only padding is never a maximum, and
    adds ``+0.0`` terms or ``exp(-inf) = 0`` ones, see :func:`_fold_with_padding`). Per axis, offset
    ``k`` is live when ``0 <= o*stride + k*dilation - padding < input`` for some output ``o``: one
    run of ``k`` per ``o``, merged, from the last output whose window reaches the input until every
    offset is live (a few outputs for a usual pool; never more than the output extent)."""
    per_axis: list[list[int]] = []
    geometry = (window.kernel, window.dilation, window.output, window.stride, window.padding, window.input)
    for kernel, d, n, s, p, size in zip(*geometry, strict=True):
        live: list[int] = []
        for o in range(min(n - 1, (p + size - 1) // s), -1, -1):  # runs of increasing k
            first = p - o * s  # k*d must lie in [first, first + size)
            lo = max(0, -(-first // d), live[-1] + 1 if live else 0)
            live.extend(range(lo, min(kernel, -(-(first + size) // d))))
            if (live and live[-1] == kernel - 1) or first >= kernel * d:
                break
        per_axis.append(live)
    strides = [math.prod(window.kernel[axis + 1:]) for axis in range(len(window.kernel))]
    return [
        (sum(k * stride for k, stride in zip(offset, strides, strict=True)), offset)
        for offset in itertools.product(*per_axis)
    ]


def _fold_with_padding(terms: Iterable[Array], window: Window, live: int) -> Array:
    """The left fold of the ``live`` offsets' ``terms`` as the fold over every offset gives it: the
    offsets reading only padding add exact ``+0.0`` terms, which change no sum but a ``-0.0`` one
    (to ``+0.0``); one ``+0.0`` added last does the same (a ``-0.0`` partial sum stays ``-0.0`` only
    while every term is ``-0.0``)."""
    total = _left_fold(terms)
    if live < math.prod(window.kernel):
        total += _scalar(0, total)
    return total


def _real_positions(window: Window, offset: tuple[int, ...]) -> Array:
    """Boolean ``window.output`` mask: True where tap ``offset`` reads an input (not padding) element."""
    mask = np.zeros(window.output, dtype=bool)
    span = _span(window, offset)
    if span is not None:
        mask[span.out] = True
    return mask


def _scatter_taps(
    window: Window, shape: Sequence[int], dtype: np.dtype[np.generic], parts: Iterable[tuple[Offset, Array]]
) -> Array:
    """Adjoint of the tap values: add ``parts`` (``(offset, part)`` pairs, in row-major offset
    order; an offset reading only padding may be left out) into a zero canvas of shape
    ``(*shape, *window.input)``."""
    canvas = np.zeros((*shape, *window.input), dtype=dtype)
    for offset, part in parts:
        _add_tap(canvas, window, offset, part)
    return canvas


def _spatial_axes(ndim: int, window: Window) -> tuple[int, ...]:
    return tuple(range(ndim - len(window.kernel), ndim))


def _per_channel(v: Array, ndim: int) -> Array:
    """A ``(C,)`` vector shaped to broadcast over axis 1 of a rank-``ndim`` channel-first array."""
    return v.reshape((v.shape[0], *(1,) * (ndim - 2)))


# ------------------------------------------------------------------------- grouped contractions
# Activations are viewed as (N, G, channels per group, *spatial), weights as (G, ., ., *kernel).


def _grouped(a: Array, groups: int) -> Array:
    return a.reshape((a.shape[0], groups, a.shape[1] // groups, *a.shape[2:]))


def _gather_contract(src: Array, wt: Array, window: Window) -> Array:
    """``out[n,g,b,o] = sum_{a, k} wt[g,b,a,k] * src[n,g,a,o*stride + k*dilation]``.

    src ``(N, G, A, *input)`` (zero padding read as 0), wt ``(G, B, A, *kernel)``, result
    ``(N, G, B, *output)``; the sum is a left fold over ``(a, k)`` in row-major order, padding
    taps included as ``0 * wt`` terms.
    """
    nd = len(window.kernel)

    def terms() -> Iterator[Array]:
        for a in range(src.shape[2]):
            for offset in _taps(window):
                at: Index = (slice(None), slice(None), a, *offset)
                coefficient = wt[at]
                yield _tap_values(src[:, :, a], window, offset)[:, :, None] * coefficient.reshape(
                    (1, *coefficient.shape, *(1,) * nd)
                )

    return _left_fold(terms())


def _scatter_contract(src: Array, wt: Array, window: Window) -> Array:
    """Adjoint of :func:`_gather_contract` in its first argument.

    ``canvas[n,g,b,o*stride + k*dilation - padding] += wt[g,a,b,k] * src[n,g,a,o]`` for ``(a, k)``
    in row-major order (each canvas element receives its terms in that order, after a zero
    start); terms landing on padding are dropped.  src ``(N, G, A, *output)``, wt
    ``(G, A, B, *kernel)``, result ``(N, G, B, *input)``.
    """
    nd = len(window.kernel)
    canvas = np.zeros((src.shape[0], src.shape[1], wt.shape[2], *window.input), dtype=src.dtype)
    for a in range(src.shape[2]):
        for offset in _taps(window):
            span = _span(window, offset)
            if span is None:
                continue
            at: Index = (slice(None), a, slice(None), *offset)
            coefficient = wt[at]
            canvas[span.inp] += src[:, :, a, None][span.out] * coefficient.reshape(
                (1, *coefficient.shape, *(1,) * nd)
            )
    return canvas


def _weight_contract(src: Array, gout: Array, window: Window) -> Array:
    """``dw[g,a,b,k] = sum_{n, o} src[n,g,a,o*stride + k*dilation] * gout[n,g,b,o]``.

    src ``(N, G, A, *input)`` (zero padding read as 0), gout ``(N, G, B, *output)``, result
    ``(G, A, B, *kernel)``; the sum is a left fold over ``(n, o)`` in row-major order, padding
    positions included as ``0 * gout`` terms.
    """
    groups, a_size, b_size = src.shape[1], src.shape[2], gout.shape[2]
    result = np.empty((groups, a_size, b_size, *window.kernel), dtype=src.dtype)
    summed = (0, *_spatial_axes(gout.ndim, window))
    for a in range(a_size):
        for offset in _taps(window):
            product = _tap_values(src[:, :, a], window, offset)[:, :, None] * gout
            at: Index = (slice(None), a, slice(None), *offset)
            result[at] = fold_sum_axes(product, summed)
    return result


def _bias_grad(g: Array, b: Array | None) -> Array | None:
    return None if b is None else fold_sum_axes(g, (0, *range(2, g.ndim)))


# ----------------------------------------------------------------------------------------- conv


@ieee
def conv(
    x: Array,
    w: Array,
    b: Array | None = None,
    *,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Array:
    """N-d convolution (cross-correlation), ``torch.nn.functional.conv1d/2d/3d`` semantics.

    x ``(N, C_in, *spatial)`` with 1-3 spatial axes, w ``(C_out, C_in/groups, *kernel)``,
    b ``(C_out,)`` or None, one dtype (float32/float64); stride/padding/dilation an int or one
    per axis; zero padding.  Returns ``(N, C_out, *out)`` with
    ``out = (n + 2*padding - dilation*(kernel-1) - 1) // stride + 1``, each entry a left fold over
    ``(C_in/groups, *kernel)`` plus the bias.  Raises GuardError (:func:`check_conv`).
    """
    window = check_conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    c_out = w.shape[0]
    wt = w.reshape((groups, c_out // groups, *w.shape[1:]))
    out = _gather_contract(_grouped(x, groups), wt, window)
    out = out.reshape((x.shape[0], c_out, *window.output))
    return out if b is None else out + _per_channel(b, out.ndim)


@ieee
def conv_vjp(
    g: Array,
    x: Array,
    w: Array,
    b: Array | None = None,
    *,
    out: Array,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
    needs_input_grad: Sequence[bool] | None = None,
) -> tuple[Array | None, Array | None, Array | None]:
    """VJP of :func:`conv`: ``(dx, dw, db)`` for cotangent g ``(N, C_out, *out)``.

    dx is the transpose convolution of g (each input element receives its contributing
    ``(C_out/groups, *kernel)`` terms in row-major order, scattered onto a ``+0.0`` start), dw a
    left fold over ``(N, *out)`` in row-major order per weight entry (padding positions included as
    ``0 * g`` terms), db a left fold over ``(N, *out)`` in row-major order (None for an absent b).
    An input marked False in ``needs_input_grad`` (default all) gets ``None`` and is not computed.
    Raises GuardError.
    """
    window = check_conv(x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups)
    c_out = w.shape[0]
    check_cotangent("conv", g, (x.shape[0], c_out, *window.output), x.dtype)
    need_x, need_w, need_b = (True, True, True) if needs_input_grad is None else needs_input_grad
    gg = _grouped(g, groups)
    dx = dw = None
    if need_x:
        wt = w.reshape((groups, c_out // groups, *w.shape[1:]))
        dx = _scatter_contract(gg, wt, window).reshape(x.shape)
    if need_w:
        dw = _weight_contract(_grouped(x, groups), gg, window).swapaxes(1, 2).reshape(w.shape)
    return dx, dw, _bias_grad(g, b) if need_b else None


@ieee
def conv_transpose(
    x: Array,
    w: Array,
    b: Array | None = None,
    *,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Array:
    """N-d transpose convolution, ``torch.nn.functional.conv_transpose1d/2d/3d`` semantics.

    x ``(N, C_in, *spatial)``, w ``(C_in, C_out/groups, *kernel)``, b ``(C_out,)`` or None, one
    dtype.  Returns ``(N, C_out, *out)`` with ``out = (n-1)*stride - 2*padding +
    dilation*(kernel-1) + output_padding + 1``; each entry is a left fold over the contributing
    ``(C_in/groups, *kernel)`` terms in row-major order, plus the bias.
    Raises GuardError (:func:`check_conv_transpose`).
    """
    window = check_conv_transpose(
        x,
        w,
        b,
        stride=stride,
        padding=padding,
        output_padding=output_padding,
        dilation=dilation,
        groups=groups,
    )
    c_out = w.shape[1] * groups
    wt = w.reshape((groups, w.shape[0] // groups, *w.shape[1:]))
    out = _scatter_contract(_grouped(x, groups), wt, window).reshape((x.shape[0], c_out, *window.input))
    return out if b is None else out + _per_channel(b, out.ndim)


@ieee
def conv_transpose_vjp(
    g: Array,
    x: Array,
    w: Array,
    b: Array | None = None,
    *,
    out: Array,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> tuple[Array, Array, Array | None]:
    """VJP of :func:`conv_transpose`: ``(dx, dw, db)`` for cotangent g ``(N, C_out, *out)``.

    dx is the convolution of the zero-padded g (a left fold over ``(C_out/groups, *kernel)`` in
    row-major order); dw a left fold over x's positions ``(N, *in)`` in row-major order per weight
    entry; db a left fold over g's positions ``(N, *out)`` in row-major order (None for an absent
    b).
    Raises GuardError.
    """
    window = check_conv_transpose(
        x,
        w,
        b,
        stride=stride,
        padding=padding,
        output_padding=output_padding,
        dilation=dilation,
        groups=groups,
    )
    c_out = w.shape[1] * groups
    check_cotangent("conv_transpose", g, (x.shape[0], c_out, *window.input), x.dtype)
    gp = _grouped(g, groups)
    wt = w.reshape((groups, w.shape[0] // groups, *w.shape[1:]))
    dx = _gather_contract(gp, wt, window).reshape(x.shape)
    dw = _weight_contract(gp, _grouped(x, groups), window)
    return dx, dw.swapaxes(1, 2).reshape(w.shape), _bias_grad(g, b)


# ---------------------------------------------------------------------------------------- pools


def _max_select(x: Array, window: Window) -> tuple[Array, Array]:
    """Window maxima and the row-major tap number that supplied each.

    PyTorch's CPU rule, scanned in window order: the first input element starts the scan, a
    later one replaces the current one when it is greater or NaN (ties keep the first maximum,
    NaN propagates).  Padding is never selected (the guard ensures every window reads input).
    """
    shape = (*x.shape[:2], *window.output)
    best = np.full(shape, -np.inf, dtype=x.dtype)
    index = np.full(shape, -1, dtype=np.int64)
    for number, offset in _live_taps(window):  # an offset reading only padding is never selected
        value = _tap_values(x, window, offset, -np.inf)
        take = _real_positions(window, offset) & ((value > best) | np.isnan(value) | (index < 0))
        best = np.where(take, value, best)
        index = np.where(take, number, index)
    return best, index


@ieee
def max_pool(
    x: Array,
    *,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Array:
    """N-d max pooling, ``torch.nn.functional.max_pool1d/2d/3d`` semantics (floor mode).

    x ``(N, C, *spatial)`` float32/float64 with 1-3 spatial axes; stride defaults to kernel_size;
    padding is never selected (an input of -inf still is).  Returns ``(N, C, *out)`` (output
    sizes as :func:`conv`).  Raises GuardError (:func:`check_max_pool`).
    """
    window = check_max_pool(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)
    return _max_select(x, window)[0]


@ieee
def max_pool_vjp(
    g: Array,
    x: Array,
    *,
    out: Array,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> tuple[Array]:
    """VJP of :func:`max_pool`: ``(dx,)``, each g entry routed to the element its window selected
    (first maximum in window order); overlapping windows accumulate in kernel-offset order.
    Raises GuardError."""
    window = check_max_pool(x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation)
    check_cotangent("max_pool", g, (*x.shape[:2], *window.output), x.dtype)
    index = _max_select(x, window)[1]
    zero = _scalar(0, x)
    parts = ((offset, np.where(index == number, g, zero)) for number, offset in _live_taps(window))
    return (_scatter_taps(window, x.shape[:2], x.dtype, parts),)


@ieee
def avg_pool(
    x: Array, *, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
) -> Array:
    """N-d average pooling, ``torch.nn.functional.avg_pool1d/2d/3d`` with
    ``count_include_pad=True`` (zero padding counts in the divisor, anchor-runtime.md §4.3).

    x ``(N, C, *spatial)`` float32/float64; returns ``(N, C, *out)``: the left fold of each window
    in kernel-offset order divided by ``prod(kernel_size)``.  Raises GuardError.
    """
    window = check_avg_pool(x, kernel_size=kernel_size, stride=stride, padding=padding)
    live = _live_taps(window)
    total = _fold_with_padding((_tap_values(x, window, offset) for _, offset in live), window, len(live))
    mean: Array = total / _scalar(math.prod(window.kernel), x)
    return mean


@ieee
def avg_pool_vjp(
    g: Array,
    x: Array,
    *,
    out: Array,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> tuple[Array]:
    """VJP of :func:`avg_pool`: ``(dx,)``, ``g / prod(kernel_size)`` spread over each window;
    overlapping windows accumulate in kernel-offset order from ``+0.0`` (see the module
    docstring).  Raises GuardError."""
    window = check_avg_pool(x, kernel_size=kernel_size, stride=stride, padding=padding)
    check_cotangent("avg_pool", g, (*x.shape[:2], *window.output), x.dtype)
    share = g / _scalar(math.prod(window.kernel), x)
    parts = ((offset, share) for _, offset in _live_taps(window))
    return (_scatter_taps(window, x.shape[:2], x.dtype, parts),)


class _SmoothWindows(NamedTuple):
    """Per-window quantities of smooth max pooling, each of the output's shape (see
    :func:`_smooth_windows`)."""

    offsets: list[tuple[int, ...]]  # the live taps (:func:`_live_taps`)
    views: list[Array]  # each live tap's values, padding as ``-inf * sign(beta)``
    extreme: Array  # the window max (beta > 0) or min (beta < 0); NaN if the window holds one
    terms: list[Array]  # ``exp(beta * (v - shift))`` per tap, 0 at padding
    total: Array  # left fold of ``terms``


def _finite_shift(extreme: Array) -> Array:
    """The shift of :func:`_smooth_windows`: the window extreme, 0 where it is infinite."""
    shifted: Array = np.where(np.isinf(extreme), _scalar(0, extreme), extreme)
    return shifted


def _smooth_windows(x: Array, window: Window, beta: float) -> _SmoothWindows:
    """Views, extremes, the terms ``exp(beta*(v - shift))`` per tap and their left-fold sum.

    The shift is the window max (beta > 0) or min (beta < 0), so the sum is >= 1 (the shift
    element contributes 1); an infinite shift is replaced by 0, as ``torch.logsumexp`` does, so
    that ``inf - inf`` never arises: the sum is then ``inf`` (a window holding ``+inf * sign(beta)``,
    result ``+-inf`` as the formula gives) or 0 (every element ``-inf * sign(beta)``, result
    ``-inf * sign(beta)``). A NaN in the window makes the shift NaN.
    """
    b = _scalar(beta, x)
    fill = -np.inf if beta > 0 else np.inf
    offsets = [offset for _, offset in _live_taps(window)]  # the others' terms are exp(-inf) = 0
    views = [_tap_values(x, window, offset, fill) for offset in offsets]
    pick = np.maximum if beta > 0 else np.minimum
    extreme = views[0]
    for view in views[1:]:
        extreme = pick(extreme, view)
    shift = _finite_shift(extreme)
    terms = [np.exp(b * (view - shift)) for view in views]
    return _SmoothWindows(offsets, views, extreme, terms, _fold_with_padding(terms, window, len(offsets)))


@ieee
def smooth_max_pool(
    x: Array,
    *,
    beta: float,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Array:
    """Smooth max pooling: ``(1/beta) * log(sum(exp(beta * window)))`` over each window.

    Computed stably as ``shift + log(sum exp(beta*(v - shift))) / beta`` with the window max
    (beta > 0) or min (beta < 0) as shift, so large inputs do not overflow; an infinite shift is
    replaced by 0 (as ``torch.logsumexp``), so a window holding ``inf`` gives the formula's
    ``+-inf``, never ``inf - inf = NaN``.  Padding is left out
    of the window (as -inf*sign(beta)).  x ``(N, C, *spatial)`` float32/float64; beta finite and
    nonzero; stride defaults to kernel_size.  Returns ``(N, C, *out)``.  Source: the
    ``reference.smooth_max_pool`` capsule (anchor-backend.md §4.2).
    Raises GuardError (:func:`check_smooth_max_pool`).
    """
    window = check_smooth_max_pool(x, beta=beta, kernel_size=kernel_size, stride=stride, padding=padding)
    stats = _smooth_windows(x, window, beta)
    result: Array = _finite_shift(stats.extreme) + np.log(stats.total) / _scalar(beta, x)
    return result


@ieee
def smooth_max_pool_vjp(
    g: Array,
    x: Array,
    *,
    out: Array,
    beta: float,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> tuple[Array]:
    """VJP of :func:`smooth_max_pool`: ``(dx,)``, g spread over each window with the weights
    ``softmax(beta * window)`` (each tap's ``g * (term / total)``, ``total`` the forward's window
    fold); overlapping windows accumulate in kernel-offset order from ``+0.0`` (see the module
    docstring).  A window whose max (beta > 0) or min (beta < 0) is infinite takes
    ``torch.logsumexp``'s weights ``exp(beta * (v - out))``: 0 at its finite elements, NaN at the
    infinite ones.  Raises GuardError."""
    window = check_smooth_max_pool(x, beta=beta, kernel_size=kernel_size, stride=stride, padding=padding)
    check_cotangent("smooth_max_pool", g, (*x.shape[:2], *window.output), x.dtype)
    stats = _smooth_windows(x, window, beta)
    infinite = np.isinf(stats.extreme)
    weights = (term / stats.total for term in stats.terms)
    if infinite.any():
        # torch.logsumexp's weights exp(v - out) with out = +-inf: 0 at every finite element, NaN
        # at the infinite ones (term / total would be inf / inf at an overflowing finite term)
        nan, zero = _scalar(np.nan, x), _scalar(0, x)
        weights = (
            np.where(infinite, np.where(view == stats.extreme, nan, zero), weight)
            for view, weight in zip(stats.views, weights, strict=True)
        )
    parts = ((offset, g * weight) for offset, weight in zip(stats.offsets, weights, strict=True))
    return (_scatter_taps(window, x.shape[:2], x.dtype, parts),)


# ------------------------------------------------------------------------------- normalisation


def _normalize(x: Array, axes: tuple[int, ...], eps: float) -> tuple[Array, Array]:
    """``(xhat, rstd)`` with biased statistics over ``axes`` (kept as extent-1 axes in rstd), from
    :func:`_moments`.

    A group whose statistics overflow although its values are finite (a sum beyond the dtype's
    largest value, or squared deviations beyond it: ``|x - mean|`` above about 1.8e19 in float32,
    1.3e154 in float64) is normalised from its values scaled by a power of two ``2**-e`` that
    brings its largest magnitude below 1 (exact unless a tiny value becomes subnormal), where
    nothing overflows: ``xhat = c_s / sqrt(var_s + eps * 2**(-2e))``, ``rstd = 2**-e / sqrt(...)``.
    The unscaled formulas gave the bias and zero gradients (``1/sqrt(inf) = 0``) or NaN (an
    overflowing sum); torch gives NaN there."""
    count = _scalar(math.prod(x.shape[a] for a in axes), x)
    _, centred, var = _moments(x, axes, count)
    eps_x = _scalar(eps, x)
    rstd = 1 / np.sqrt(var + eps_x)
    xhat = centred * rstd
    overflowed = np.isinf(var) & np.isfinite(x).all(axis=axes, keepdims=True)
    if overflowed.any():
        top = np.max(np.abs(x), axis=axes, keepdims=True)
        exponent = np.frexp(np.where(np.isfinite(top), top, 0))[1]
        _, scaled, scaled_var = _moments(np.ldexp(x, -exponent), axes, count)
        root = np.sqrt(scaled_var + np.ldexp(eps_x, -2 * exponent))
        zero = root == 0  # equal values with an eps that vanishes at this scale: variance 0
        safe = np.where(zero, 1, root)
        plain = 1 / np.sqrt(eps_x)
        xhat = np.where(overflowed, np.where(zero, scaled * plain, scaled / safe), xhat)
        rstd = np.where(overflowed, np.where(zero, plain, np.ldexp(1 / safe, -exponent)), rstd)
    return xhat, rstd


def _moments(x: Array, axes: tuple[int, ...], count: np.floating[Any]) -> tuple[Array, Array, Array]:
    """``(mean, x - mean, biased variance)`` over ``axes`` by left folds (mean and variance kept
    as extent-1 axes). A group of equal finite deviations, which equal values give, gets its
    first value as the mean and 0 deviations and variance: the left-fold mean of equal values
    can be off by a rounding (``3 * v / 3 != v``), which left every deviation equal and nonzero,
    so xhat ±1 (torch's more precise mean gives the value itself and 0)."""
    mean = fold_sum_axes(x, axes, keepdims=True) / count
    centred = x - mean
    var = fold_sum_axes(centred * centred, axes, keepdims=True) / count
    if centred.size:
        first = tuple(slice(0, 1) if a in axes else slice(None) for a in range(centred.ndim))
        equal = (centred == centred[first]).all(axis=axes, keepdims=True) & np.isfinite(centred[first])
        if equal.any():
            mean = np.where(equal, x[first], mean)
            centred = np.where(equal, 0, centred)
            var = np.where(equal, 0, var)
    return mean, centred, var


def _normalize_vjp(dxhat: Array, xhat: Array, rstd: Array, axes: tuple[int, ...]) -> Array:
    """Cotangent of x given the cotangent of ``xhat`` from :func:`_normalize`:
    ``(rstd / n) * (n * dxhat - sum(dxhat) - xhat * sum(dxhat * xhat))`` over each group of ``n``
    normalised elements, both group sums left folds in row-major order over ``axes``."""
    count = _scalar(math.prod(xhat.shape[a] for a in axes), xhat)
    total = fold_sum_axes(dxhat, axes, keepdims=True)
    projection = fold_sum_axes(dxhat * xhat, axes, keepdims=True)
    dx: Array = (rstd / count) * (count * dxhat - total - xhat * projection)
    return dx


@ieee
def layer_norm(
    x: Array,
    weight: Array | None = None,
    bias: Array | None = None,
    *,
    normalized_ndim: int = 1,
    eps: float = 1e-5,
) -> Array:
    """Layer normalisation over the trailing ``normalized_ndim`` axes,
    ``torch.nn.functional.layer_norm`` semantics (biased variance, ``1/sqrt(var + eps)``).

    x float32/float64 of any rank >= normalized_ndim; weight and bias None or of shape
    ``x.shape[-normalized_ndim:]``.  Returns an array of x's shape.  Mean and variance are left
    folds over the normalised elements in row-major order (a row of equal values gets 0, its
    exact variance); where the sum or the sum of squares overflows while every value is finite,
    the statistics are those of the row scaled by a power of two, so the result stays the
    normalised row. torch, and so ``fast_cpu`` and ``checked_cuda``, give zeros there where the
    sum of squared deviations overflows (float32 ``[0, 2e19, 2e19, 0]``: ``1/sqrt(inf)`` is 0),
    NaN where the sum itself overflows (float32 ``[3e38, 3e38]``); checked with torch 2.13's CPU
    ``layer_norm``.
    Raises GuardError (:func:`check_layer_norm`).
    """
    axes = check_layer_norm(x, weight, bias, normalized_ndim=normalized_ndim, eps=eps)
    y = _normalize(x, axes, eps)[0]
    if weight is not None:
        y = y * weight
    return y if bias is None else y + bias


@ieee
def layer_norm_vjp(
    g: Array,
    x: Array,
    weight: Array | None = None,
    bias: Array | None = None,
    *,
    out: Array,
    normalized_ndim: int = 1,
    eps: float = 1e-5,
) -> tuple[Array, Array | None, Array | None]:
    """VJP of :func:`layer_norm`: ``(dx, dweight, dbias)`` (None for an absent weight or bias);
    dweight and dbias are left folds over the leading axes in row-major order; dx's two group
    sums as :func:`_normalize_vjp`.  Raises GuardError."""
    axes = check_layer_norm(x, weight, bias, normalized_ndim=normalized_ndim, eps=eps)
    check_cotangent("layer_norm", g, x.shape, x.dtype)
    xhat, rstd = _normalize(x, axes, eps)
    dx = _normalize_vjp(g if weight is None else g * weight, xhat, rstd, axes)
    leading = tuple(range(axes[0]))
    dweight = None if weight is None else fold_sum_axes(g * xhat, leading)
    dbias = None if bias is None else fold_sum_axes(g, leading)
    return dx, dweight, dbias


def _batch_xhat(
    x: Array,
    axes: tuple[int, ...],
    running_mean: Array | None,
    running_var: Array | None,
    *,
    training: bool,
    eps: float,
) -> tuple[Array, Array]:
    """``(xhat, rstd)`` from batch statistics (training) or the running statistics (eval)."""
    if training:
        return _normalize(x, axes, eps)
    assert running_mean is not None and running_var is not None  # check_batch_norm refuses None in eval
    rstd = _running_rstd(running_var, x, eps)
    return (x - _per_channel(running_mean, x.ndim)) * rstd, rstd


def _running_rstd(running_var: Array, x: Array, eps: float) -> Array:
    """``1 / sqrt(running_var + eps)`` per channel, shaped to broadcast against x."""
    return _per_channel(1 / np.sqrt(running_var + _scalar(eps, x)), x.ndim)


@ieee
def batch_norm(
    x: Array,
    weight: Array | None,
    bias: Array | None,
    running_mean: Array | None,
    running_var: Array | None,
    *,
    training: bool,
    eps: float = 1e-5,
) -> Array:
    """Batch normalisation over axis 1 of x ``(N, C, *spatial)``, ``torch.nn.functional.batch_norm``.

    training=True normalises with the batch mean and biased variance (left folds over
    ``(N, *spatial)`` per channel; equal values and overflowing sums as in :func:`layer_norm`,
    where torch returns the bias or NaN) and does not read the running statistics; their update
    is :func:`batch_norm_running_stats`: ``xhat * weight + bias``.  training=False uses
    running_mean and running_var, with the weight folded into the scale first, as torch folds it:
    ``(x - running_mean) * (rstd * weight) + bias``, so a large ``x`` whose ``xhat`` alone would
    overflow gives the finite result (review81 F1: ``xhat * weight`` gave inf or NaN there).
    torch computes ``x * scale + (bias - running_mean * scale)``: here ``x - running_mean``
    still overflows where it does (values near the dtype's maximum of opposite signs), and
    elsewhere the two round differently (neither order is the more accurate on all data).
    weight, bias, running_mean, running_var are ``(C,)`` or None, in x's dtype.  Returns an array
    of x's shape.  Raises GuardError (:func:`check_batch_norm`).
    """
    axes = check_batch_norm(x, weight, bias, running_mean, running_var, training=training, eps=eps)
    if training:
        y = _normalize(x, axes, eps)[0]
        if weight is not None:
            y = y * _per_channel(weight, x.ndim)
    else:
        assert running_mean is not None and running_var is not None  # check_batch_norm refuses None
        scale = _running_rstd(running_var, x, eps)
        if weight is not None:
            scale = scale * _per_channel(weight, x.ndim)
        y = (x - _per_channel(running_mean, x.ndim)) * scale
    return y if bias is None else y + _per_channel(bias, x.ndim)


@ieee
def batch_norm_vjp(
    g: Array,
    x: Array,
    weight: Array | None,
    bias: Array | None,
    running_mean: Array | None,
    running_var: Array | None,
    *,
    out: Array,
    training: bool,
    eps: float = 1e-5,
) -> tuple[Array, Array | None, Array | None, None, None]:
    """VJP of :func:`batch_norm`: ``(dx, dweight, dbias, None, None)``; the running statistics are
    buffers, not differentiated.  In training, dx includes the paths through the batch mean and
    variance (its two group sums as :func:`_normalize_vjp`, over ``(N, *spatial)`` per channel);
    dweight and dbias are left folds over ``(N, *spatial)`` in row-major order.  Raises
    GuardError."""
    axes = check_batch_norm(x, weight, bias, running_mean, running_var, training=training, eps=eps)
    check_cotangent("batch_norm", g, x.shape, x.dtype)
    xhat, rstd = _batch_xhat(x, axes, running_mean, running_var, training=training, eps=eps)
    dxhat = g if weight is None else g * _per_channel(weight, x.ndim)
    dx = _normalize_vjp(dxhat, xhat, rstd, axes) if training else dxhat * rstd
    dweight = None if weight is None else fold_sum_axes(g * xhat, axes)
    dbias = None if bias is None else fold_sum_axes(g, axes)
    return dx, dweight, dbias, None, None


@ieee
def batch_norm_running_stats(
    x: Array, running_mean: Array, running_var: Array, *, momentum: float = 0.1
) -> tuple[Array, Array]:
    """Updated running statistics after a training-mode :func:`batch_norm` step, as PyTorch:
    ``(1 - momentum) * running + momentum * batch`` with the batch mean and the *unbiased* batch
    variance (left folds over ``(N, *spatial)``, divided by ``count - 1``).

    x ``(N, C, *spatial)``, running_mean and running_var ``(C,)`` in x's dtype; returns new
    ``(mean, var)`` arrays (the inputs are not modified).  With no value per channel (an empty
    batch or spatial extent) there are no batch statistics and the update returns copies of the
    running statistics unchanged, as PyTorch.
    Raises GuardError (:func:`check_batch_norm_running_stats`).
    """
    axes = check_batch_norm_running_stats(x, running_mean, running_var, momentum=momentum)
    count = math.prod(x.shape[a] for a in axes)
    if count == 0:
        return running_mean.copy(), running_var.copy()
    mean, centred, _ = _moments(x, axes, _scalar(count, x))  # equal values: their value, variance 0
    var = fold_sum_axes(centred * centred, axes) / _scalar(count - 1, x)
    m = _scalar(momentum, x)
    keep = 1 - m
    return keep * running_mean + m * mean.reshape(running_mean.shape), keep * running_var + m * var
