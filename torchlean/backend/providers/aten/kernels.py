"""Forward kernels of the ``aten`` provider: torch CPU operators on TorchLean's numpy storage.

Each ``<op>(*inputs, **params)`` has the signature and the semantics of the reference forward of
the same label (:mod:`torchlean.backend.providers.reference.kernels` and ``.spatial``):

1. it calls the reference shape guard with identical semantics (``reference.guards.check_<op>``,
   or ``reference.spatial_guards.check_<op>`` for the spatial ops), which refuses bad shapes,
   dtypes, axes and parameters with :class:`~torchlean.backend.errors.GuardError`;
2. it hands the operands to torch through :func:`~torchlean.backend.providers.aten.guards.check_aten_layout`
   (the layout guard) and runs the torch operator in the operands' dtype (float32 or float64, no
   promotion), outside torch autograd;
3. it returns a fresh C-contiguous numpy array that never aliases an input.

Reductions and contractions run in whatever order torch's CPU kernels choose (BLAS, oneDNN,
vectorised reductions): the capsules declare ``implementation-defined``, and the differential suite
``tests/runtime/test_aten_differential.py`` bounds the difference from the reference left folds.
There are no VJPs here: the ``aten`` capsules' backward is TorchLean's tape applying the reference
VJP at the saved inputs (``aten/handlers.py``). NaN and infinity propagate as in PyTorch.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from torchlean.backend.providers.aten import guards as aten_guards
from torchlean.backend.providers.reference import guards, spatial_guards
from torchlean.backend.providers.reference.spatial_guards import IntOrTuple, Window

if TYPE_CHECKING:
    import torch

__all__ = [
    "avg_pool",
    "conv",
    "conv_transpose",
    "layer_norm",
    "linear",
    "log_softmax",
    "matmul",
    "max_pool",
    "mse_loss",
    "reduce_mean",
    "reduce_sum",
    "scaled_dot_product_attention",
    "softmax",
]

Array = npt.NDArray[Any]
Axis = int | tuple[int, ...] | None


def _tensors(op: str, *arrays: Array | None) -> list[torch.Tensor]:
    """The operands as torch tensors (layout guard); every operand must be present."""
    tensors = aten_guards.check_aten_layout(op, *arrays)
    present = [t for t in tensors if t is not None]
    assert len(present) == len(tensors)
    return present


def _host(result: torch.Tensor, *inputs: Array | None) -> Array:
    """``result`` as a C-contiguous numpy array that shares no memory with ``inputs``."""
    out: Array = result.detach().numpy()
    if not out.flags.c_contiguous or any(
        x is not None and np.may_share_memory(out, x) for x in inputs
    ):
        out = np.array(out, order="C", copy=True)
    return out


# ================================================================================ contractions


def matmul(a: Array, b: Array) -> Array:
    """``torch.matmul(a, b)`` (1-D promotion, broadcast batch axes), same shapes, dtypes and
    errors as the reference ``matmul`` (guard ``check_matmul``)."""
    import torch

    guards.check_matmul(a, b)
    ta, tb = _tensors("matmul", a, b)
    return _host(torch.matmul(ta, tb), a, b)


def linear(x: Array, w: Array, b: Array | None = None) -> Array:
    """``torch.nn.functional.linear``: ``x (..., in)``, ``w (out, in)``, ``b (out,)`` or None;
    returns ``(..., out)`` (guard ``check_linear``)."""
    import torch

    guards.check_linear(x, w, b)
    tx, tw, tb = aten_guards.check_aten_layout("linear", x, w, b)
    assert tx is not None and tw is not None
    return _host(torch.nn.functional.linear(tx, tw, tb), x, w, b)


def mse_loss(a: Array, b: Array) -> Array:
    """``torch.nn.functional.mse_loss(a, b)`` with reduction ``mean``: a rank-0 array (NaN for
    empty inputs); equal shapes and dtypes (guard ``check_mse_loss``)."""
    import torch

    guards.check_mse_loss(a, b)
    ta, tb = _tensors("mse_loss", a, b)
    return _host(torch.nn.functional.mse_loss(ta, tb), a, b)


# ===================================================================== softmax normalisations


def softmax(x: Array, *, axis: int = -1) -> Array:
    """``torch.softmax(x, axis)``; a rank-0 input gives 1 (guard ``check_softmax``)."""
    import torch

    ax = guards.check_softmax(x, axis=axis)
    (tx,) = _tensors("softmax", x)
    return _host(torch.softmax(tx, ax), x)


def log_softmax(x: Array, *, axis: int = -1) -> Array:
    """``torch.log_softmax(x, axis)``; a rank-0 input gives 0 (guard ``check_log_softmax``)."""
    import torch

    ax = guards.check_log_softmax(x, axis=axis)
    (tx,) = _tensors("log_softmax", x)
    return _host(torch.log_softmax(tx, ax), x)


# ================================================================================== reductions


def reduce_sum(x: Array, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """``torch.sum`` over ``axis`` (int, non-empty tuple, or None = all); an empty reduction gives
    0 and a rank-0 input itself (guard ``check_reduce_sum``)."""
    import torch

    axes = guards.check_reduce_sum(x, axis=axis, keepdims=keepdims)
    (tx,) = _tensors("reduce_sum", x)
    if not axes:  # rank 0: summing no axes is the identity (torch's dim=() would mean "all")
        return np.array(x, order="C", copy=True)
    return _host(torch.sum(tx, dim=axes, keepdim=keepdims), x)


def reduce_mean(x: Array, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """``torch.mean`` over ``axis``; an empty reduction gives NaN and a rank-0 input itself
    (guard ``check_reduce_mean``)."""
    import torch

    axes = guards.check_reduce_mean(x, axis=axis, keepdims=keepdims)
    (tx,) = _tensors("reduce_mean", x)
    if not axes:
        return np.array(x, order="C", copy=True)
    return _host(torch.mean(tx, dim=axes, keepdim=keepdims), x)


# =============================================================================== channel-first


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
    tx, tw, tb = aten_guards.check_aten_layout("layer_norm", x, weight, bias)
    assert tx is not None
    shape = [x.shape[a] for a in axes]
    return _host(torch.nn.functional.layer_norm(tx, shape, tw, tb, float(eps)), x, weight, bias)


def _conv_fn(op: str, nd: int) -> Any:
    import torch.nn.functional as F

    table = {
        "conv": (F.conv1d, F.conv2d, F.conv3d),
        "conv_transpose": (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d),
        "max_pool": (F.max_pool1d, F.max_pool2d, F.max_pool3d),
        "avg_pool": (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d),
    }
    return table[op][nd - 1]


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
    tx, tw, tb = aten_guards.check_aten_layout("conv", x, w, b)
    fn = _conv_fn("conv", x.ndim - 2)
    result = fn(
        tx, tw, tb, stride=window.stride, padding=window.padding, dilation=window.dilation, groups=groups
    )
    return _host(result, x, w, b)


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
    tx, tw, tb = aten_guards.check_aten_layout("conv_transpose", x, w, b)
    fn = _conv_fn("conv_transpose", x.ndim - 2)
    result = fn(
        tx,
        tw,
        tb,
        stride=window.stride,
        padding=window.padding,
        output_padding=_output_padding(window),
        groups=groups,
        dilation=window.dilation,
    )
    return _host(result, x, w, b)


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
    (tx,) = _tensors("max_pool", x)
    fn = _conv_fn("max_pool", x.ndim - 2)
    result = fn(
        tx,
        window.kernel,
        stride=window.stride,
        padding=window.padding,
        dilation=window.dilation,
        ceil_mode=False,
    )
    return _host(result, x)


def avg_pool(
    x: Array, *, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
) -> Array:
    """``torch.nn.functional.avg_pool1d/2d/3d`` with ``count_include_pad=True`` (floor mode).
    Returns ``(N, C, *out)`` (guard ``check_avg_pool``)."""
    window = spatial_guards.check_avg_pool(x, kernel_size=kernel_size, stride=stride, padding=padding)
    (tx,) = _tensors("avg_pool", x)
    fn = _conv_fn("avg_pool", x.ndim - 2)
    result = fn(
        tx,
        window.kernel,
        stride=window.stride,
        padding=window.padding,
        ceil_mode=False,
        count_include_pad=True,
    )
    return _host(result, x)


# ==================================================================================== attention


def scaled_dot_product_attention(
    q: Array, k: Array, v: Array, mask: Array | None = None, *, scale: float | None = None
) -> Array:
    """Attention ``(..., nQ, dv)`` composed from torch operators with TorchLean's hard-mask rules.

    ``q (..., nQ, d)``, ``k (..., nK, d)``, ``v (..., nK, dv)`` with broadcast leading axes;
    ``mask`` bool broadcastable to ``(..., nQ, nK)``, True = the key may be attended; ``scale``
    defaults to ``1/sqrt(d)`` (1 when ``d == 0``). Guard ``check_scaled_dot_product_attention``.

    Scores ``torch.matmul(q, k^T) * scale``; without a mask ``torch.softmax`` then
    ``torch.matmul(weights, v)``. With a mask (DESIGN.md §1.9, anchor-runtime.md §5.2) blocked
    scores are *selected away* (``torch.where``), never added as -inf: the weights are exactly 0
    at blocked entries and on fully blocked rows, so those rows are exactly 0, and a NaN or
    infinity in a blocked score never reaches the output. Value rows that are not finite are
    zeroed before the product; a query row that attends such a row is recomputed as a sum over
    its allowed keys only (its result is legitimately non-finite), so a blocked non-finite value
    never leaks into another row.
    """
    import torch

    guards.check_scaled_dot_product_attention(q, k, v, mask, scale=scale)
    op = "scaled_dot_product_attention"
    tq, tk, tv = _tensors(op, q, k, v)
    d = q.shape[-1]
    factor = (1.0 / math.sqrt(d) if d > 0 else 1.0) if scale is None else float(scale)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    full = (*batch, q.shape[-2], k.shape[-2])
    scores = torch.broadcast_to(torch.matmul(tq, tk.transpose(-1, -2)) * factor, full)
    if mask is None:
        return _host(torch.matmul(torch.softmax(scores, -1), tv), q, k, v)
    (tmask,) = _tensors(op, mask)
    allowed = torch.broadcast_to(tmask, full)
    if k.shape[-2] == 0:
        weights = scores
    else:
        any_allowed = allowed.any(-1, keepdim=True)
        safe = torch.where(allowed, scores, 0.0)
        row_max = torch.where(allowed, safe, -math.inf).amax(-1, keepdim=True)
        row_max = torch.where(any_allowed, row_max, 0.0)
        numerator = torch.where(allowed, torch.exp(safe - row_max), 0.0)
        denominator = torch.where(any_allowed, numerator.sum(-1, keepdim=True), 1.0)
        weights = numerator / denominator
    finite_values = torch.isfinite(tv).all(-1)  # (..., nK)
    if bool(finite_values.all()):
        return _host(torch.matmul(weights, tv), q, k, v, mask)
    out = torch.matmul(weights, torch.where(finite_values[..., None], tv, 0.0))
    tainted = (allowed & ~finite_values[..., None, :]).any(-1)  # (..., nQ)
    if bool(tainted.any()):
        terms = torch.where(allowed[..., None], weights[..., None] * tv[..., None, :, :], 0.0)
        out = torch.where(tainted[..., None], terms.sum(-2), out)
    return _host(out, q, k, v, mask)
