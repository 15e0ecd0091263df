"""Channel-first kernels of the ``aten`` provider: forwards and VJPs by torch CPU kernels.

``layer_norm``, ``batch_norm``, ``conv``, ``conv_transpose``, ``max_pool`` and ``avg_pool`` with the
signature, guard and rule of the reference kernel of the same label
(:mod:`torchlean.backend.providers.reference.spatial`): every forward and VJP first calls the
reference guard ``reference.spatial_guards.check_<op>`` (same refusals and
:class:`~torchlean.backend.errors.GuardError` messages; VJPs then check ``g`` against the output's
shape and dtype as the reference VJPs do), hands the operands to torch through
:func:`~torchlean.backend.providers.aten.guards.check_aten_layout` (zero copy) and returns fresh
C-contiguous numpy arrays in the input dtype that alias no input (zero copy from torch).

Forwards are ``torch.nn.functional``'s; VJPs are TorchLean's rules evaluated by ATen's backward
kernels, which implement the same formulas: ``aten::convolution_backward`` (dx, dw, db of a
convolution or transpose convolution), ``native_layer_norm_backward`` and
``native_batch_norm_backward`` (the paths through the batch statistics in training, the running
statistics as constants in eval; running statistics get ``None``), and the pooling backwards
``max_pool{2,3}d_with_indices_backward`` (each cotangent routed to the element its window selected:
the first maximum in window order, a later NaN replacing the current one, padding never selected —
the reference's rule, which is PyTorch's CPU rule) and ``avg_pool{2,3}d_backward``
(``count_include_pad``). 1-d pools run as 2-d pools over a unit axis. Sums (contractions, batch
statistics, overlapping windows) run in torch's order: reduction ``implementation-defined``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from torchlean.backend.providers.aten import guards as aten_guards
from torchlean.backend.providers.aten._common import Array, host, optional
from torchlean.backend.providers.reference import spatial_guards
from torchlean.backend.providers.reference.guards import check_cotangent
from torchlean.backend.providers.reference.spatial_guards import IntOrTuple, Window

if TYPE_CHECKING:
    import torch

__all__ = [
    "avg_pool",
    "avg_pool_vjp",
    "batch_norm",
    "batch_norm_vjp",
    "conv",
    "conv_transpose",
    "conv_transpose_vjp",
    "conv_vjp",
    "layer_norm",
    "layer_norm_vjp",
    "max_pool",
    "max_pool_vjp",
]


def _conv_fn(op: str, nd: int) -> Any:
    import torch.nn.functional as F

    table = {
        "conv": (F.conv1d, F.conv2d, F.conv3d),
        "conv_transpose": (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d),
        "max_pool": (F.max_pool1d, F.max_pool2d, F.max_pool3d),
        "avg_pool": (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d),
    }
    return table[op][nd - 1]


def _output_padding(window: Window) -> tuple[int, ...]:
    """The per-axis ``output_padding`` the guard accepted, recovered from the validated window."""
    return tuple(
        size - ((n - 1) * s - 2 * p + d * (k - 1) + 1)
        for size, n, s, p, d, k in zip(
            window.input,
            window.output,
            window.stride,
            window.padding,
            window.dilation,
            window.kernel,
            strict=True,
        )
    )


# ----------------------------------------------------------------------------------------- conv


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
    """``torch.nn.functional.conv1d/2d/3d``: x ``(N, C_in, *spatial)``, w
    ``(C_out, C_in/groups, *kernel)``, b ``(C_out,)`` or None; zero padding. Returns
    ``(N, C_out, *out)`` (guard ``check_conv``)."""
    window = spatial_guards.check_conv(
        x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups
    )
    tx, tw = aten_guards.check_aten_layout("conv", x, w)
    fn = _conv_fn("conv", x.ndim - 2)
    result = fn(
        tx,
        tw,
        optional("conv", b),
        stride=window.stride,
        padding=window.padding,
        dilation=window.dilation,
        groups=groups,
    )
    return host(result)


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
    """VJP of :func:`conv`: ``(dx, dw, db)`` for cotangent g ``(N, C_out, *out)`` by
    ``aten::convolution_backward``: dx the transpose convolution of g, dw the correlation of x
    with g, db the sum of g over ``(N, *out)`` (None for an absent b, and for an input marked False
    in ``needs_input_grad``, default all, which torch is told not to compute)."""
    import torch

    window = spatial_guards.check_conv(
        x, w, b, stride=stride, padding=padding, dilation=dilation, groups=groups
    )
    c_out = w.shape[0]
    check_cotangent("conv", g, (x.shape[0], c_out, *window.output), x.dtype)
    need_x, need_w, need_b = (True, True, True) if needs_input_grad is None else needs_input_grad
    tg, tx, tw = aten_guards.check_aten_layout("conv", g, x, w)
    dx, dw, db = torch.ops.aten.convolution_backward(
        tg,
        tx,
        tw,
        None if b is None else [c_out],
        list(window.stride),
        list(window.padding),
        list(window.dilation),
        False,
        [0] * len(window.kernel),
        groups,
        [bool(need_x), bool(need_w), b is not None and bool(need_b)],
    )
    return (
        host(dx) if need_x else None,
        host(dw) if need_w else None,
        None if b is None or not need_b else host(db),
    )


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
    """``torch.nn.functional.conv_transpose1d/2d/3d``: x ``(N, C_in, *spatial)``, w
    ``(C_in, C_out/groups, *kernel)``, b ``(C_out,)`` or None. Returns ``(N, C_out, *out)``
    (guard ``check_conv_transpose``)."""
    window = spatial_guards.check_conv_transpose(
        x,
        w,
        b,
        stride=stride,
        padding=padding,
        output_padding=output_padding,
        dilation=dilation,
        groups=groups,
    )
    tx, tw = aten_guards.check_aten_layout("conv_transpose", x, w)
    fn = _conv_fn("conv_transpose", x.ndim - 2)
    result = fn(
        tx,
        tw,
        optional("conv_transpose", b),
        stride=window.stride,
        padding=window.padding,
        output_padding=_output_padding(window),
        groups=groups,
        dilation=window.dilation,
    )
    return host(result)


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
    """VJP of :func:`conv_transpose`: ``(dx, dw, db)`` for cotangent g ``(N, C_out, *out)`` by
    ``aten::convolution_backward`` (transposed): dx the convolution of g, dw and db sums over the
    batch and spatial positions (db None for an absent b)."""
    import torch

    window = spatial_guards.check_conv_transpose(
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
    tg, tx, tw = aten_guards.check_aten_layout("conv_transpose", g, x, w)
    dx, dw, db = torch.ops.aten.convolution_backward(
        tg,
        tx,
        tw,
        None if b is None else [c_out],
        list(window.stride),
        list(window.padding),
        list(window.dilation),
        True,
        list(_output_padding(window)),
        groups,
        [True, True, b is not None],
    )
    return host(dx), host(dw), None if b is None else host(db)


# ---------------------------------------------------------------------------------------- pools


def max_pool(
    x: Array,
    *,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Array:
    """``torch.nn.functional.max_pool1d/2d/3d`` (floor mode; padding never selected; NaN
    propagates). Returns ``(N, C, *out)`` (guard ``check_max_pool``)."""
    window = spatial_guards.check_max_pool(
        x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation
    )
    (tx,) = aten_guards.check_aten_layout("max_pool", x)
    fn = _conv_fn("max_pool", x.ndim - 2)
    result = fn(
        tx,
        window.kernel,
        stride=window.stride,
        padding=window.padding,
        dilation=window.dilation,
        ceil_mode=False,
    )
    return host(result)


def _lift(t: torch.Tensor, window: Window) -> tuple[torch.Tensor, list[list[int]]]:
    """A 1-d pool as a 2-d pool over a unit axis: ``t`` with that axis and the window's
    ``[kernel, stride, padding, dilation]`` for the 2-d/3-d ATen pooling kernels."""
    geometry = [list(window.kernel), list(window.stride), list(window.padding), list(window.dilation)]
    if len(window.kernel) != 1:
        return t, geometry
    return t.unsqueeze(2), [[1, *geometry[0]], [1, *geometry[1]], [0, *geometry[2]], [1, *geometry[3]]]


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
    (first maximum in window order, a later NaN replacing it; recomputed by
    ``max_pool{2,3}d_with_indices``); overlapping windows accumulate (``_backward``)."""
    import torch

    window = spatial_guards.check_max_pool(
        x, kernel_size=kernel_size, stride=stride, padding=padding, dilation=dilation
    )
    check_cotangent("max_pool", g, (*x.shape[:2], *window.output), x.dtype)
    tg, tx = aten_guards.check_aten_layout("max_pool", g, x)
    aten = torch.ops.aten
    if x.ndim == 5:
        forward, backward = aten.max_pool3d_with_indices, aten.max_pool3d_with_indices_backward
    else:
        forward, backward = aten.max_pool2d_with_indices, aten.max_pool2d_with_indices_backward
    xs, (k, s, p, d) = _lift(tx, window)
    gs, _ = _lift(tg, window)
    _, indices = forward(xs, k, s, p, d, False)
    return (host(backward(gs, xs, k, s, p, d, False, indices).reshape(x.shape)),)


def avg_pool(
    x: Array, *, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
) -> Array:
    """``torch.nn.functional.avg_pool1d/2d/3d`` with ``count_include_pad=True`` (floor mode).
    Returns ``(N, C, *out)`` (guard ``check_avg_pool``)."""
    window = spatial_guards.check_avg_pool(x, kernel_size=kernel_size, stride=stride, padding=padding)
    (tx,) = aten_guards.check_aten_layout("avg_pool", x)
    fn = _conv_fn("avg_pool", x.ndim - 2)
    result = fn(
        tx,
        window.kernel,
        stride=window.stride,
        padding=window.padding,
        ceil_mode=False,
        count_include_pad=True,
    )
    return host(result)


def avg_pool_vjp(
    g: Array,
    x: Array,
    *,
    out: Array,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> tuple[Array]:
    """VJP of :func:`avg_pool`: ``(dx,)``, ``g / prod(kernel_size)`` spread over each window
    (``avg_pool{2,3}d_backward`` with ``count_include_pad``)."""
    import torch

    window = spatial_guards.check_avg_pool(x, kernel_size=kernel_size, stride=stride, padding=padding)
    check_cotangent("avg_pool", g, (*x.shape[:2], *window.output), x.dtype)
    tg, tx = aten_guards.check_aten_layout("avg_pool", g, x)
    backward = torch.ops.aten.avg_pool3d_backward if x.ndim == 5 else torch.ops.aten.avg_pool2d_backward
    xs, (k, s, p, _) = _lift(tx, window)
    gs, _ = _lift(tg, window)
    return (host(backward(gs, xs, k, s, p, False, True, None).reshape(x.shape)),)


# ------------------------------------------------------------------------------- normalisation


def layer_norm(
    x: Array,
    weight: Array | None = None,
    bias: Array | None = None,
    *,
    normalized_ndim: int = 1,
    eps: float = 1e-5,
) -> Array:
    """``torch.nn.functional.layer_norm`` over the trailing ``normalized_ndim`` axes (biased
    variance, ``1/sqrt(var + eps)``); weight and bias None or of the normalised shape
    (guard ``check_layer_norm``)."""
    import torch

    axes = spatial_guards.check_layer_norm(x, weight, bias, normalized_ndim=normalized_ndim, eps=eps)
    (tx,) = aten_guards.check_aten_layout("layer_norm", x)
    shape = [x.shape[a] for a in axes]
    result = torch.nn.functional.layer_norm(
        tx, shape, optional("layer_norm", weight), optional("layer_norm", bias), float(eps)
    )
    return host(result)


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
    """VJP of :func:`layer_norm`: ``(dx, dweight, dbias)`` (None for an absent weight or bias) by
    ``native_layer_norm_backward`` at the recomputed mean and reciprocal standard deviation;
    dweight and dbias are sums over the leading axes."""
    import torch

    axes = spatial_guards.check_layer_norm(x, weight, bias, normalized_ndim=normalized_ndim, eps=eps)
    check_cotangent("layer_norm", g, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("layer_norm", g, x)
    tw, tb = optional("layer_norm", weight), optional("layer_norm", bias)
    shape = [x.shape[a] for a in axes]
    _, mean, rstd = torch.ops.aten.native_layer_norm(tx, shape, tw, tb, float(eps))
    dx, dw, db = torch.ops.aten.native_layer_norm_backward(
        tg, tx, shape, mean, rstd, tw, tb, [True, weight is not None, bias is not None]
    )
    return host(dx), None if weight is None else host(dw), None if bias is None else host(db)


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
    """``torch.batch_norm`` (the ATen op behind ``torch.nn.functional.batch_norm``) over axis 1 of
    x ``(N, C, *spatial)``. The ATen op is called directly so that the eps rule is the guard's on
    every torch version (``torch.nn.functional.batch_norm`` of torch 2.11 also refuses eps = 0 in
    evaluation, 2.13 only in training).

    training=True normalises with the batch mean and biased variance and neither reads nor updates
    the running statistics (torch gets ``None`` for them; the reference's
    ``batch_norm_running_stats`` is the update); training=False uses running_mean and running_var.
    weight, bias, running_mean, running_var are ``(C,)`` or None, in x's dtype
    (guard ``check_batch_norm``).
    """
    import torch

    spatial_guards.check_batch_norm(x, weight, bias, running_mean, running_var, training=training, eps=eps)
    (tx,) = aten_guards.check_aten_layout("batch_norm", x)
    tw, tb = optional("batch_norm", weight), optional("batch_norm", bias)
    if training:
        stats: tuple[torch.Tensor | None, torch.Tensor | None] = (None, None)
    else:
        stats = (optional("batch_norm", running_mean), optional("batch_norm", running_var))
    cudnn = bool(torch.backends.cudnn.enabled)
    result = torch.batch_norm(tx, tw, tb, stats[0], stats[1], training, 0.0, float(eps), cudnn)
    return host(result)


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
    """VJP of :func:`batch_norm`: ``(dx, dweight, dbias, None, None)`` by
    ``native_batch_norm_backward``; the running statistics are buffers, not differentiated. In
    training dx includes the paths through the batch mean and variance (recomputed by
    ``native_batch_norm``); in eval the running statistics are constants. An empty x (an empty
    batch, spatial extent or channel axis) gives an empty dx and zero dweight, dbias (sums over no
    element) without calling ATen, whose CPU ``native_batch_norm_backward`` divides by the zero
    element count (SIGFPE on torch 2.13)."""
    import torch

    spatial_guards.check_batch_norm(x, weight, bias, running_mean, running_var, training=training, eps=eps)
    check_cotangent("batch_norm", g, x.shape, x.dtype)
    if x.size == 0:
        dweight = None if weight is None else np.zeros(x.shape[1], dtype=x.dtype)
        dbias = None if bias is None else np.zeros(x.shape[1], dtype=x.dtype)
        return np.zeros(x.shape, dtype=x.dtype), dweight, dbias, None, None
    tg, tx = aten_guards.check_aten_layout("batch_norm", g, x)
    tw = optional("batch_norm", weight)
    mask = [True, weight is not None, bias is not None]
    aten = torch.ops.aten
    if training:
        _, mean, invstd = aten.native_batch_norm(tx, tw, None, None, None, True, 0.0, float(eps))
        dx, dw, db = aten.native_batch_norm_backward(
            tg, tx, tw, None, None, mean, invstd, True, float(eps), mask
        )
    else:
        stats = (optional("batch_norm", running_mean), optional("batch_norm", running_var))
        dx, dw, db = aten.native_batch_norm_backward(
            tg, tx, tw, stats[0], stats[1], None, None, False, float(eps), mask
        )
    return host(dx), None if weight is None else host(dw), None if bias is None else host(db), None, None
