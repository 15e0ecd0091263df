"""The channel-first ``reference`` kernels' sums really are ``fixed-left`` (DESIGN.md §1.6).

``spatial.py``'s module docstring: "every sum is a left fold in increasing row-major order of the
summed index, ``((t0 + t1) + t2) + ...``, in the input dtype"; a pool folds over its window in
row-major kernel-offset order; normalisation statistics fold over the normalised elements; the
input gradients of the pools "scatter their terms onto a zero canvas, each element receiving its
terms in that row-major order after a ``+0.0`` start".  The tests below pin, bit for bit in
float32, the sums that ``test_reference_spatial.py`` leaves open:

- ``smooth_max_pool``: the window sum of ``exp(beta * (v - shift))`` (forward and VJP);
- ``conv`` and ``conv_transpose``: the weight gradient (a fold over ``(N, *positions)``), the
  bias gradient (a fold over ``(N, *out)``) and the input gradient (``conv``: each input element
  receives its ``(C_out/groups, *kernel)`` terms in row-major order from +0.0; ``conv_transpose``:
  a left fold over ``(C_out/groups, *kernel)`` of the zero-padded cotangent);
- ``layer_norm`` and ``batch_norm``: the mean and variance sums and the two sums of the
  normalisation VJP (``sum(dxhat)`` and ``sum(dxhat * xhat)``), plus the weight and bias
  gradients and the running statistics;
- ``max_pool``, ``avg_pool`` and ``smooth_max_pool`` VJPs: the order in which an input element
  shared by overlapping windows receives its terms (row-major kernel-offset order, from +0.0).

Every oracle is a scalar float32 Python loop over the documented definition (no torchlean
helper), and every test also shows that another order of the pinned sum (reversed, or numpy's
``np.sum``) gives other bits on the same input, so a kernel that changed the order would fail.
"""

from __future__ import annotations

import itertools
from collections.abc import Callable, Collection, Iterator, Sequence
from typing import Any

import numpy as np
import pytest
from fold_oracle import F32, Array, assert_bitwise, assert_differs, fold
from numpy.testing import assert_array_equal

from torchlean.backend.providers.reference import spatial as S

ZERO = F32(0)


def _scatter_fold(terms: Sequence[Any], reverse: bool = False) -> Any:
    """``((+0.0 + t0) + t1) + ...``: how a scatter onto a zero canvas accumulates one element."""
    acc = ZERO
    for item in list(terms)[::-1] if reverse else terms:
        acc = acc + item
    return acc


def _mixed(rng: np.random.Generator, *shape: int, spread: float = 2.0) -> Array:
    """Normal values scaled by ``10**u``, u uniform in ``[-spread, spread]``: many magnitudes."""
    return (rng.standard_normal(shape) * 10.0 ** rng.uniform(-spread, spread, shape)).astype(F32)


def _rows(shape: Sequence[int]) -> Iterator[tuple[int, ...]]:
    """All indices of ``shape`` in row-major order."""
    return itertools.product(*(range(n) for n in shape))


# -------------------------------------------------------------------------- 2-D window geometry


def _out_size(n: int, k: int, s: int, p: int, d: int = 1) -> int:
    return (n + 2 * p - d * (k - 1) - 1) // s + 1


def _source(o: int, k: int, s: int, p: int, d: int = 1) -> int:
    """The input position (maybe padding: < 0 or >= n) that output ``o`` reads through offset ``k``."""
    return o * s + k * d - p


def _reader(i: int, k: int, s: int, p: int, n_out: int, d: int = 1) -> int | None:
    """The output position that reads input ``i`` through offset ``k``, or None."""
    num = i + p - k * d
    if num % s or not 0 <= num // s < n_out:
        return None
    return num // s


# ------------------------------------------------------------------------------ smooth_max_pool


def _smooth_oracle(
    x: Array,
    g: Array,
    beta: float,
    kernel: int,
    stride: int,
    padding: int,
    reverse: Collection[str] = (),
) -> tuple[Array, Array]:
    """``(smooth_max_pool(x), its VJP dx)`` for a 2-D float32 ``x (N, C, H, W)``, square window.

    Per window (taps in row-major ``(kh, kw)`` order, padding left out as ``-inf*sign(beta)``):
    ``shift`` = max (beta > 0) or min; ``t = exp(b * (v - shift))``; ``total`` = left fold of the
    taps' ``t``; out = ``shift + log(total) / b``.  VJP: each tap's ``g * (t / total)`` scattered onto
    a +0.0 canvas, every input element receiving its terms in row-major tap order.  ``reverse``
    may name ``sum`` (fold the window in reverse) and ``scatter`` (reverse the tap order of the
    scatter), to show that these orders matter.  The inputs are finite, so the kernel's
    replacement of an infinite shift by 0 never applies.
    """
    n, c, h, w = x.shape
    oh, ow = _out_size(h, kernel, stride, padding), _out_size(w, kernel, stride, padding)
    b = F32(beta)
    pad_value = F32(-np.inf if beta > 0 else np.inf)
    out = np.empty((n, c, oh, ow), dtype=F32)
    share = np.empty((n, c, oh, ow, kernel, kernel), dtype=F32)  # g * t / total per tap
    for b_, c_, i, j in _rows((n, c, oh, ow)):
        values = []
        for p, q in _rows((kernel, kernel)):
            r, s = _source(i, p, stride, padding), _source(j, q, stride, padding)
            values.append(x[b_, c_, r, s] if 0 <= r < h and 0 <= s < w else pad_value)
        shift = max(values) if beta > 0 else min(values)
        terms = [np.exp(b * (value - shift)) for value in values]
        total = fold(terms, "sum" in reverse)
        out[b_, c_, i, j] = shift + np.log(total) / b
        for number, (p, q) in enumerate(_rows((kernel, kernel))):
            share[b_, c_, i, j, p, q] = g[b_, c_, i, j] * (terms[number] / total)
    dx = np.empty_like(x)
    for b_, c_, r, s in _rows(x.shape):
        parts = []
        for p, q in _rows((kernel, kernel)):
            oi, oj = _reader(r, p, stride, padding, oh), _reader(s, q, stride, padding, ow)
            if oi is not None and oj is not None:
                parts.append(share[b_, c_, oi, oj, p, q])
        dx[b_, c_, r, s] = _scatter_fold(parts, "scatter" in reverse)
    return out, dx


@pytest.mark.parametrize(("beta", "stride", "padding"), [(2.0, 8, 0), (-1.5, 4, 1)])
def test_smooth_max_pool_window_sum_is_a_left_fold_bitwise_float32(
    beta: float, stride: int, padding: int
) -> None:
    """Pins the window sum of ``_smooth_terms``: taps folded in row-major kernel-offset order
    (module docstring, "a pool folds over its window in row-major kernel-offset order"), in the
    forward and in the VJP's ``term / total``.  8x8 windows hold 64 terms of many magnitudes."""
    rng = np.random.default_rng(10)
    x = (rng.standard_normal((2, 3, 16, 24)) * 3).astype(F32)
    kw: dict[str, Any] = {"beta": beta, "kernel_size": 8, "stride": stride, "padding": padding}
    out = S.smooth_max_pool(x, **kw)
    g = _mixed(rng, *out.shape)
    (dx,) = S.smooth_max_pool_vjp(g, x, out=out, **kw)
    expected_out, expected_dx = _smooth_oracle(x, g, beta, 8, stride, padding)
    assert_bitwise(out, expected_out, "out")
    assert_bitwise(dx, expected_dx, "dx")
    other_out, other_dx = _smooth_oracle(x, g, beta, 8, stride, padding, reverse={"sum"})
    assert_differs(other_out, expected_out, "out, window sum reversed")
    assert_differs(other_dx, expected_dx, "dx, window sum reversed")


# --------------------------------------------------------------------------------- pool scatters


def test_smooth_max_pool_vjp_scatters_in_kernel_offset_order_bitwise_float32() -> None:
    """Pins the accumulation order of overlapping windows in ``smooth_max_pool_vjp`` (stride 1,
    3x3 windows: an inner element receives 9 terms): row-major kernel-offset order from +0.0."""
    rng = np.random.default_rng(11)
    x = (rng.standard_normal((1, 2, 9, 9)) * 3).astype(F32)
    kw: dict[str, Any] = {"beta": 1.0, "kernel_size": 3, "stride": 1, "padding": 1}
    out = S.smooth_max_pool(x, **kw)
    g = _mixed(rng, *out.shape, spread=3.0)
    (dx,) = S.smooth_max_pool_vjp(g, x, out=out, **kw)
    expected_out, expected_dx = _smooth_oracle(x, g, 1.0, 3, 1, 1)
    assert_bitwise(out, expected_out, "out")
    assert_bitwise(dx, expected_dx, "dx")
    assert_differs(_smooth_oracle(x, g, 1.0, 3, 1, 1, reverse={"scatter"})[1], expected_dx, "dx")


def _max_pool_vjp_oracle(
    x: Array, g: Array, kernel: tuple[int, int], stride: int, padding: int, reverse: bool = False
) -> Array:
    """max_pool VJP for 2-D float32 ``x``: each window's g goes to its first maximum in row-major
    tap order (padding never selected); an input element receives, in row-major tap order from
    +0.0, the g of every window that selected it through that tap."""
    n, c, h, w = x.shape
    oh, ow = _out_size(h, kernel[0], stride, padding), _out_size(w, kernel[1], stride, padding)
    chosen = np.empty((n, c, oh, ow, 2), dtype=np.int64)  # the selected tap (p, q)
    for b_, c_, i, j in _rows((n, c, oh, ow)):
        best: Any = None
        for p, q in _rows(kernel):
            r, s = _source(i, p, stride, padding), _source(j, q, stride, padding)
            if 0 <= r < h and 0 <= s < w and (best is None or x[b_, c_, r, s] > best):
                best, chosen[b_, c_, i, j] = x[b_, c_, r, s], (p, q)
    dx = np.empty_like(x)
    for b_, c_, r, s in _rows(x.shape):
        parts = []
        for p, q in _rows(kernel):
            oi, oj = _reader(r, p, stride, padding, oh), _reader(s, q, stride, padding, ow)
            if oi is not None and oj is not None and tuple(chosen[b_, c_, oi, oj]) == (p, q):
                parts.append(g[b_, c_, oi, oj])
        dx[b_, c_, r, s] = _scatter_fold(parts, reverse)
    return dx


def test_max_pool_vjp_overlapping_windows_accumulate_in_kernel_offset_order_bitwise_float32() -> None:
    """Pins ``max_pool_vjp``'s docstring: "overlapping windows accumulate in kernel-offset order"
    (row-major, from +0.0).  A 3x3 window at stride 1 over smooth bumps makes each local maximum
    the choice of up to 9 windows; the cotangents span 1e-3 to 1e3."""
    rng = np.random.default_rng(12)
    grid = np.arange(10)
    bumps = np.sin(grid[:, None] * 1.3) + np.cos(grid[None, :] * 1.7)
    x = (bumps[None, None] + 1e-3 * rng.standard_normal((2, 2, 10, 10))).astype(F32)
    kw: dict[str, Any] = {"kernel_size": 3, "stride": 1, "padding": 1}
    out = S.max_pool(x, **kw)
    g = _mixed(rng, *out.shape, spread=3.0)
    (dx,) = S.max_pool_vjp(g, x, out=out, **kw)
    expected = _max_pool_vjp_oracle(x, g, (3, 3), 1, 1)
    assert_bitwise(dx, expected)
    assert_differs(_max_pool_vjp_oracle(x, g, (3, 3), 1, 1, reverse=True), expected)


def test_max_pool_vjp_accumulation_order_hand_computed() -> None:
    """1-D, kernel 4, stride 1: the peak at position 3 is the maximum of the 4 windows o = 0..3;
    it reads them through taps k = 3, 2, 1, 0, so in kernel-offset order it receives
    ``g[3], g[2], g[1], g[0]`` = ``1, -1e8, 1, 1e8``: ``(((0 + 1) - 1e8) + 1) + 1e8 = 0`` in float32,
    while window order (reversed) gives ``((1e8 + 1) - 1e8) + 1 = 1``."""
    x = np.array([[[0.0, 0.0, 0.0, 5.0, 0.0, 0.0, 0.0]]], dtype=F32)
    out = S.max_pool(x, kernel_size=4, stride=1)
    g = np.array([[[1e8, 1.0, -1e8, 1.0]]], dtype=F32)
    (dx,) = S.max_pool_vjp(g, x, out=out, kernel_size=4, stride=1)
    assert_array_equal(dx, np.array([[[0.0, 0.0, 0.0, 0.0, 0.0, 0.0, 0.0]]], dtype=F32))
    assert _scatter_fold(list(g[0, 0])) == F32(1.0)


def _avg_pool_vjp_oracle(
    g: Array, shape: Sequence[int], kernel: tuple[int, int], stride: int, padding: int, reverse: bool = False
) -> Array:
    """avg_pool VJP for 2-D float32: ``share = g / (kh * kw)``; an input element receives, in
    row-major tap order from +0.0, the share of every window that reads it."""
    oh, ow = g.shape[2:]
    divisor = F32(kernel[0] * kernel[1])
    dx = np.empty(tuple(shape), dtype=F32)
    for b_, c_, r, s in _rows(shape):
        parts = []
        for p, q in _rows(kernel):
            oi, oj = _reader(r, p, stride, padding, oh), _reader(s, q, stride, padding, ow)
            if oi is not None and oj is not None:
                parts.append(g[b_, c_, oi, oj] / divisor)
        dx[b_, c_, r, s] = _scatter_fold(parts, reverse)
    return dx


@pytest.mark.parametrize(("kernel", "stride", "padding"), [((3, 3), 1, 1), ((4, 3), 2, 1)])
def test_avg_pool_vjp_overlapping_windows_accumulate_in_kernel_offset_order_bitwise_float32(
    kernel: tuple[int, int], stride: int, padding: int
) -> None:
    """Pins the scatter of ``avg_pool_vjp`` ("``g / prod(kernel_size)`` spread over each window;
    overlapping windows accumulate in kernel-offset order from ``+0.0``"): each input element
    receives its shares in row-major kernel-offset order from +0.0."""
    rng = np.random.default_rng(13)
    x = rng.standard_normal((2, 2, 9, 10)).astype(F32)
    kw: dict[str, Any] = {"kernel_size": kernel, "stride": stride, "padding": padding}
    out = S.avg_pool(x, **kw)
    g = _mixed(rng, *out.shape, spread=3.0)
    (dx,) = S.avg_pool_vjp(g, x, out=out, **kw)
    expected = _avg_pool_vjp_oracle(g, x.shape, kernel, stride, padding)
    assert_bitwise(dx, expected)
    assert_differs(_avg_pool_vjp_oracle(g, x.shape, kernel, stride, padding, reverse=True), expected)


# ---------------------------------------------------------------- conv weight and bias gradients


def _conv_dw_oracle(
    x: Array,
    g: Array,
    w_shape: Sequence[int],
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
    reverse: bool = False,
) -> Array:
    """conv's ``dw[co, a, p, q]``: the fold over ``(n, i, j)`` (output positions, row-major) of
    ``xpad[n, ci, i*s + p*d, j*s + q*d] * g[n, co, i, j]``, ``ci = group(co) * C_in/groups + a``;
    padding is read as 0."""
    n, _, h, w = x.shape
    c_out, c_per = w_shape[:2]
    oh, ow = g.shape[2:]
    dw = np.empty(tuple(w_shape), dtype=F32)
    for co, a, p, q in _rows(w_shape):
        ci = (co // (c_out // groups)) * c_per + a
        terms = []
        for b_, i, j in _rows((n, oh, ow)):
            r, s = _source(i, p, stride, padding, dilation), _source(j, q, stride, padding, dilation)
            value = x[b_, ci, r, s] if 0 <= r < h and 0 <= s < w else ZERO
            terms.append(value * g[b_, co, i, j])
        dw[co, a, p, q] = fold(terms, reverse)
    return dw


def _conv_transpose_dw_oracle(
    x: Array,
    g: Array,
    w_shape: Sequence[int],
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
    reverse: bool = False,
) -> Array:
    """conv_transpose's ``dw[ci, b, p, q]``: the fold over ``(n, i, j)`` (x's positions, row-major)
    of ``x[n, ci, i, j] * gpad[n, co, i*s + p*d, j*s + q*d]``, ``co = group(ci) * C_out/groups + b``;
    g is read as 0 outside its extent (the padding)."""
    n, c_in, h, w = x.shape
    gh, gw = g.shape[2:]
    dw = np.empty(tuple(w_shape), dtype=F32)
    for ci, b, p, q in _rows(w_shape):
        co = (ci // (c_in // groups)) * w_shape[1] + b
        terms = []
        for b_, i, j in _rows((n, h, w)):
            r, s = _source(i, p, stride, padding, dilation), _source(j, q, stride, padding, dilation)
            value = g[b_, co, r, s] if 0 <= r < gh and 0 <= s < gw else ZERO
            terms.append(x[b_, ci, i, j] * value)
        dw[ci, b, p, q] = fold(terms, reverse)
    return dw


def _bias_grad_oracle(g: Array, reverse: bool = False) -> Array:
    """``db[c] = fold over (n, i, j) of g[n, c, i, j]`` in row-major order."""
    n, c, h, w = g.shape
    return np.array([fold([g[b_, c_, i, j] for b_, i, j in _rows((n, h, w))], reverse) for c_ in range(c)])


def _cotangent_and_vjp(
    forward: Callable[..., Array],
    vjp: Callable[..., tuple[Any, Any, Any]],
    rng: np.random.Generator,
    x: Array,
    w: Array,
    bias: Array,
    spread: float,
    **kw: Any,
) -> tuple[Array, tuple[Any, Any, Any]]:
    """A cotangent ``g`` of ``forward``'s output shape (:func:`_mixed` with ``spread``, drawn after
    the forward) and ``vjp(g, ...)``: the common part of the conv and conv_transpose VJP tests."""
    out = forward(x, w, bias, **kw)
    g = _mixed(rng, *out.shape, spread=spread)
    return g, vjp(g, x, w, bias, out=out, **kw)


CONV_CASES = [  # (x shape, w shape, stride, padding, dilation, groups)
    ((2, 3, 10, 18), (4, 3, 3, 3), 1, 1, 1, 1),
    ((2, 4, 9, 20), (4, 2, 2, 3), 2, 2, 2, 2),
]


@pytest.mark.parametrize(("x_shape", "w_shape", "stride", "padding", "dilation", "groups"), CONV_CASES)
def test_conv_weight_and_bias_gradients_are_left_folds_bitwise_float32(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: int, padding: int, dilation: int, groups: int
) -> None:
    """Pins ``conv_vjp``'s docstring: "dw a left fold over ``(N, *out)`` in row-major order per
    weight entry (padding positions included as ``0 * g`` terms), db a left fold over ``(N, *out)``
    in row-major order" (``_weight_contract`` and ``_bias_grad``)."""
    rng = np.random.default_rng(14)
    x = _mixed(rng, *x_shape)
    w = rng.standard_normal(w_shape).astype(F32)
    bias = rng.standard_normal(w_shape[0]).astype(F32)
    g, (_, dw, db) = _cotangent_and_vjp(S.conv, S.conv_vjp, rng, x, w, bias, 2.0, stride=stride,
                                        padding=padding, dilation=dilation, groups=groups)
    _check_weight_and_bias(dw, db, g, lambda reverse: _conv_dw_oracle(
        x, g, w_shape, stride, padding, dilation, groups, reverse=reverse
    ))


def _check_weight_and_bias(
    dw: Array | None, db: Array | None, g: Array, dw_oracle: Callable[[bool], Array]
) -> None:
    """dw and db equal their oracles bit for bit, and the reversed folds (and ``np.sum`` for db)
    give other bits on this input."""
    expected_dw, expected_db = dw_oracle(False), _bias_grad_oracle(g)
    assert_bitwise(dw, expected_dw, "dw")
    assert_bitwise(db, expected_db, "db")
    assert_differs(dw_oracle(True), expected_dw, "dw reversed")
    assert_differs(_bias_grad_oracle(g, reverse=True), expected_db, "db reversed")
    assert_differs(np.sum(g, axis=(0, 2, 3)), expected_db, "db by np.sum")


CONV_TRANSPOSE_CASES = [  # (x shape, w shape, stride, padding, output_padding, dilation, groups)
    ((2, 3, 9, 16), (3, 4, 3, 3), 1, 1, 0, 1, 1),
    ((2, 4, 6, 11), (4, 2, 3, 2), 2, 1, 1, 2, 2),
]


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "padding", "output_padding", "dilation", "groups"), CONV_TRANSPOSE_CASES
)
def test_conv_transpose_weight_and_bias_gradients_are_left_folds_bitwise_float32(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    stride: int,
    padding: int,
    output_padding: int,
    dilation: int,
    groups: int,
) -> None:
    """Pins ``conv_transpose_vjp``'s docstring: "dw a left fold over x's positions ``(N, *in)`` in
    row-major order per weight entry; db a left fold over g's positions ``(N, *out)`` in row-major
    order" (``_weight_contract`` with x as the cotangent side, and ``_bias_grad``)."""
    rng = np.random.default_rng(15)
    x = _mixed(rng, *x_shape)
    w = rng.standard_normal(w_shape).astype(F32)
    bias = rng.standard_normal(w_shape[1] * groups).astype(F32)
    g, (_, dw, db) = _cotangent_and_vjp(S.conv_transpose, S.conv_transpose_vjp, rng, x, w, bias, 2.0,
                                        stride=stride, padding=padding, output_padding=output_padding,
                                        dilation=dilation, groups=groups)
    _check_weight_and_bias(dw, db, g, lambda reverse: _conv_transpose_dw_oracle(
        x, g, w_shape, stride, padding, dilation, groups, reverse=reverse
    ))


# ------------------------------------------------------------------------- conv input gradients


def _conv_dx_oracle(
    g: Array,
    w: Array,
    x_shape: Sequence[int],
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
    reverse: bool = False,
) -> Array:
    """conv's ``dx[n, ci, r, s]``: from +0.0, the terms ``g[n, co, i, j] * w[co, a, p, q]`` in
    row-major ``(co, p, q)`` order, ``co`` over the output channels of ci's group and
    ``a = ci mod C_in/groups``, for each tap ``(p, q)`` through which an output ``(i, j)`` reads
    ``(r, s)`` (taps reading no output contribute nothing)."""
    c_out, c_per = w.shape[:2]
    out_per = c_out // groups
    oh, ow = g.shape[2:]
    dx = np.empty(tuple(x_shape), dtype=F32)
    for b_, ci, r, s in _rows(x_shape):
        group, a = divmod(ci, c_per)
        parts = []
        for co in range(group * out_per, (group + 1) * out_per):
            for p, q in _rows(w.shape[2:]):
                i = _reader(r, p, stride, padding, oh, dilation)
                j = _reader(s, q, stride, padding, ow, dilation)
                if i is not None and j is not None:
                    parts.append(g[b_, co, i, j] * w[co, a, p, q])
        dx[b_, ci, r, s] = _scatter_fold(parts, reverse)
    return dx


@pytest.mark.parametrize(("x_shape", "w_shape", "stride", "padding", "dilation", "groups"), CONV_CASES)
def test_conv_input_gradient_is_a_left_fold_bitwise_float32(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], stride: int, padding: int, dilation: int, groups: int
) -> None:
    """Pins ``conv_vjp``'s docstring: "dx is the transpose convolution of g (each input element
    receives its contributing ``(C_out/groups, *kernel)`` terms in row-major order, scattered onto a
    ``+0.0`` start)" (``_scatter_contract``).  The cotangents span 1e-3 to 1e3."""
    rng = np.random.default_rng(18)
    x = rng.standard_normal(x_shape).astype(F32)
    w = _mixed(rng, *w_shape)
    bias = rng.standard_normal(w_shape[0]).astype(F32)
    g, (dx, _, _) = _cotangent_and_vjp(S.conv, S.conv_vjp, rng, x, w, bias, 3.0, stride=stride,
                                       padding=padding, dilation=dilation, groups=groups)
    expected = _conv_dx_oracle(g, w, x_shape, stride, padding, dilation, groups)
    assert_bitwise(dx, expected, "dx")
    other = _conv_dx_oracle(g, w, x_shape, stride, padding, dilation, groups, reverse=True)
    assert_differs(other, expected, "dx reversed")


def _conv_transpose_dx_oracle(
    g: Array,
    w: Array,
    x_shape: Sequence[int],
    stride: int,
    padding: int,
    dilation: int,
    groups: int,
    reverse: bool = False,
) -> Array:
    """conv_transpose's ``dx[n, ci, i, j]``: the fold, from its first term, over ``(b, p, q)`` in
    row-major order of ``gpad[n, co, i*s + p*d, j*s + q*d] * w[ci, b, p, q]``,
    ``co = group(ci) * C_out/groups + b``; g is read as 0 outside its extent (the padding), so
    every tap contributes a term (``0 * w`` at the padding)."""
    c_in = x_shape[1]
    b_size = w.shape[1]
    gh, gw = g.shape[2:]
    dx = np.empty(tuple(x_shape), dtype=F32)
    for b_, ci, i, j in _rows(x_shape):
        group = ci // (c_in // groups)
        terms = []
        for b in range(b_size):
            co = group * b_size + b
            for p, q in _rows(w.shape[2:]):
                r, s = _source(i, p, stride, padding, dilation), _source(j, q, stride, padding, dilation)
                value = g[b_, co, r, s] if 0 <= r < gh and 0 <= s < gw else ZERO
                terms.append(value * w[ci, b, p, q])
        dx[b_, ci, i, j] = fold(terms, reverse)
    return dx


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "stride", "padding", "output_padding", "dilation", "groups"), CONV_TRANSPOSE_CASES
)
def test_conv_transpose_input_gradient_is_a_left_fold_bitwise_float32(
    x_shape: tuple[int, ...],
    w_shape: tuple[int, ...],
    stride: int,
    padding: int,
    output_padding: int,
    dilation: int,
    groups: int,
) -> None:
    """Pins ``conv_transpose_vjp``'s docstring: "dx is the convolution of the zero-padded g (a left
    fold over ``(C_out/groups, *kernel)`` in row-major order)" (``_gather_contract``).  The
    cotangents span 1e-3 to 1e3."""
    rng = np.random.default_rng(19)
    x = rng.standard_normal(x_shape).astype(F32)
    w = _mixed(rng, *w_shape)
    bias = rng.standard_normal(w_shape[1] * groups).astype(F32)
    g, (dx, _, _) = _cotangent_and_vjp(S.conv_transpose, S.conv_transpose_vjp, rng, x, w, bias, 3.0,
                                       stride=stride, padding=padding, output_padding=output_padding,
                                       dilation=dilation, groups=groups)
    expected = _conv_transpose_dx_oracle(g, w, x_shape, stride, padding, dilation, groups)
    assert_bitwise(dx, expected, "dx")
    other = _conv_transpose_dx_oracle(g, w, x_shape, stride, padding, dilation, groups, reverse=True)
    assert_differs(other, expected, "dx reversed")


# ------------------------------------------------------------------------------- normalisation

AFFECTS = {"mean": "y", "var": "y", "total": "dx", "projection": "dx", "dweight": "dweight", "dbias": "dbias"}
"""The sums of a normalisation, each with an output whose bits it decides: the mean's and the
variance's (``_moments``), the VJP's ``sum(dxhat)`` and ``sum(dxhat * xhat)`` (``_normalize_vjp``),
and the weight and bias gradients."""


def _norm_group(
    values: Sequence[Any], dxhat: Sequence[Any], eps: float, reverse: Collection[str] = ()
) -> tuple[list[Any], list[Any]]:
    """One group's ``(xhat, dx)``; ``values`` and ``dxhat`` are listed in the fold order.

    ``mean = fold(x) / n``, ``c = x - mean``, ``var = fold(c * c) / n``, ``rstd = 1 / sqrt(var + eps)``,
    ``xhat = c * rstd``; VJP ``dx = (rstd / n) * ((n * dxhat - fold(dxhat)) - xhat * fold(dxhat * xhat))``
    (``spatial._moments``, ``_normalize`` and ``_normalize_vjp``).  ``reverse`` names sums
    (``mean``, ``var``, ``total``, ``projection``) to fold in reverse order.
    """
    count = F32(len(values))
    mean = fold(values, "mean" in reverse) / count
    centred = [value - mean for value in values]
    var = fold([c * c for c in centred], "var" in reverse) / count
    rstd = F32(1) / np.sqrt(var + F32(eps))
    xhat = [c * rstd for c in centred]
    total = fold(dxhat, "total" in reverse)
    projection = fold([d * h for d, h in zip(dxhat, xhat, strict=True)], "projection" in reverse)
    dx = [(rstd / count) * ((count * d - total) - h * projection) for d, h in zip(dxhat, xhat, strict=True)]
    return xhat, dx


def _layer_norm_oracle(
    x: Array, weight: Array, bias: Array, g: Array, ndim: int, eps: float, reverse: Collection[str] = ()
) -> dict[str, Array]:
    """layer_norm over the trailing ``ndim`` axes: ``y``, ``dx``, ``dweight``, ``dbias``.  A row's
    elements are folded in row-major order; dweight and dbias fold ``g * xhat`` and ``g`` over the
    leading rows in row-major order.  ``reverse`` names sums (keys of :data:`AFFECTS`) to reverse."""
    lead, inner = x.shape[: x.ndim - ndim], x.shape[x.ndim - ndim :]
    rows = [np.ravel(x[idx]) for idx in _rows(lead)]
    g_rows = [np.ravel(g[idx]) for idx in _rows(lead)]
    w_flat, b_flat = np.ravel(weight), np.ravel(bias)
    y, dx, xhats = [], [], []
    for row, g_row in zip(rows, g_rows, strict=True):
        dxhat = [gv * wv for gv, wv in zip(g_row, w_flat, strict=True)]
        xhat, d = _norm_group(list(row), dxhat, eps, reverse)
        y.append([h * wv + bv for h, wv, bv in zip(xhat, w_flat, b_flat, strict=True)])
        dx.append(d)
        xhats.append(xhat)
    lead_count = len(rows)
    dweight = [
        fold([g_rows[r][e] * xhats[r][e] for r in range(lead_count)], "dweight" in reverse)
        for e in range(len(w_flat))
    ]
    dbias = [fold([g_rows[r][e] for r in range(lead_count)], "dbias" in reverse) for e in range(len(w_flat))]
    return {
        "y": np.array(y, dtype=F32).reshape(x.shape),
        "dx": np.array(dx, dtype=F32).reshape(x.shape),
        "dweight": np.array(dweight, dtype=F32).reshape(inner),
        "dbias": np.array(dbias, dtype=F32).reshape(inner),
    }


def _norm_input(rng: np.random.Generator, *shape: int) -> Array:
    """Values around an offset of 10 with magnitudes of the deviations spread over 1e-2 to 1e2."""
    return (10.0 + _mixed(rng, *shape)).astype(F32)


@pytest.mark.parametrize(("shape", "ndim"), [((24, 100), 1), ((5, 12, 20), 2)])
def test_layer_norm_statistics_and_vjp_sums_are_left_folds_bitwise_float32(
    shape: tuple[int, ...], ndim: int
) -> None:
    """Pins ``layer_norm``'s docstring ("mean and variance are left folds over the normalised
    elements in row-major order"), the VJP's two group sums (``_normalize_vjp``: "both group sums
    left folds in row-major order over ``axes``"), and dweight and dbias ("left folds over the
    leading axes in row-major order")."""
    rng = np.random.default_rng(16)
    eps = 1e-5
    x = _norm_input(rng, *shape)
    weight = rng.standard_normal(shape[-ndim:]).astype(F32)
    bias = rng.standard_normal(shape[-ndim:]).astype(F32)
    y = S.layer_norm(x, weight, bias, normalized_ndim=ndim, eps=eps)
    g = _mixed(rng, *shape)
    dx, dweight, dbias = S.layer_norm_vjp(g, x, weight, bias, out=y, normalized_ndim=ndim, eps=eps)
    expected = _layer_norm_oracle(x, weight, bias, g, ndim, eps)
    got = {"y": y, "dx": dx, "dweight": dweight, "dbias": dbias}
    for name, want in expected.items():
        assert_bitwise(got[name], want, name)
    for name, output in AFFECTS.items():
        other = _layer_norm_oracle(x, weight, bias, g, ndim, eps, reverse={name})
        assert_differs(other[output], expected[output], f"{name} reversed")


def _batch_norm_oracle(
    x: Array, weight: Array, bias: Array, g: Array, eps: float, momentum: float, reverse: Collection[str] = ()
) -> dict[str, Array]:
    """Training-mode batch_norm over channel axis 1 of ``x (N, C, H, W)``: each channel's group is
    its ``(n, i, j)`` elements in row-major order.  Returns ``y``, ``dx``, ``dweight``, ``dbias``
    and the running-statistics update from zero ``running_mean`` and unit ``running_var``
    (``keep * running + m * batch`` with the unbiased variance ``fold(c * c) / (n - 1)``).
    ``reverse`` names sums (keys of :data:`AFFECTS`) to fold in reverse order."""
    n, c, h, w = x.shape
    y, dx = np.empty_like(x), np.empty_like(x)
    dweight, dbias = np.empty(c, dtype=F32), np.empty(c, dtype=F32)
    new_mean, new_var = np.empty(c, dtype=F32), np.empty(c, dtype=F32)
    m = F32(momentum)
    keep = F32(1) - m
    for c_ in range(c):
        places = [(b_, c_, i, j) for b_, i, j in _rows((n, h, w))]
        values = [x[at] for at in places]
        g_values = [g[at] for at in places]
        xhat, d = _norm_group(values, [gv * weight[c_] for gv in g_values], eps, reverse)
        for at, h_, d_ in zip(places, xhat, d, strict=True):
            y[at] = h_ * weight[c_] + bias[c_]
            dx[at] = d_
        dweight[c_] = fold([gv * h_ for gv, h_ in zip(g_values, xhat, strict=True)], "dweight" in reverse)
        dbias[c_] = fold(g_values, "dbias" in reverse)
        count = F32(len(values))
        mean = fold(values, "mean" in reverse) / count
        unbiased = fold([(v - mean) * (v - mean) for v in values], "var" in reverse) / F32(len(values) - 1)
        new_mean[c_] = keep * ZERO + m * mean
        new_var[c_] = keep * F32(1) + m * unbiased
    return {"y": y, "dx": dx, "dweight": dweight, "dbias": dbias, "mean": new_mean, "var": new_var}


def test_batch_norm_statistics_and_vjp_sums_are_left_folds_bitwise_float32() -> None:
    """Pins ``batch_norm``'s docstring ("the batch mean and biased variance (left folds over
    ``(N, *spatial)`` per channel)"), the VJP's two sums per channel (``_normalize_vjp``),
    dweight and dbias, and ``batch_norm_running_stats`` (mean and unbiased variance, "left folds
    over ``(N, *spatial)``"), all in row-major ``(n, i, j)`` order."""
    rng = np.random.default_rng(17)
    eps, momentum = 1e-5, 0.1
    x = _norm_input(rng, 6, 3, 7, 9)
    weight = rng.standard_normal(3).astype(F32)
    bias = rng.standard_normal(3).astype(F32)
    y = S.batch_norm(x, weight, bias, None, None, training=True, eps=eps)
    g = _mixed(rng, *x.shape)
    dx, dweight, dbias, _, _ = S.batch_norm_vjp(g, x, weight, bias, None, None, out=y, training=True, eps=eps)
    running = S.batch_norm_running_stats(x, np.zeros(3, dtype=F32), np.ones(3, dtype=F32), momentum=momentum)
    expected = _batch_norm_oracle(x, weight, bias, g, eps, momentum)
    got = {"y": y, "dx": dx, "dweight": dweight, "dbias": dbias, "mean": running[0], "var": running[1]}
    for name, want in expected.items():
        assert_bitwise(got[name], want, name)
    for name, output in AFFECTS.items():
        other = _batch_norm_oracle(x, weight, bias, g, eps, momentum, reverse={name})
        assert_differs(other[output], expected[output], f"{name} reversed")
    other = _batch_norm_oracle(x, weight, bias, g, eps, momentum, reverse={"var"})
    assert_differs(other["var"], expected["var"], "running var: var reversed")
    assert_differs(np.sum(g, axis=(0, 2, 3)), expected["dbias"], "dbias by np.sum")
