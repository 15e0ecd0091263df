"""Reductions over axes: the left-fold ``reduce_sum`` and ``reduce_mean``, and ``logsumexp``,
composed of accepted kernels (the catalog has no logsumexp op)."""

from __future__ import annotations

import math

import numpy as np

from torchlean._tensor_args import _UNSET, _Unset
from torchlean.autograd.session import run_op
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference.guards import reduced_shape, reduction_axes
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._arithmetic import add, sub
from torchlean.functional._indexing import gather
from torchlean.functional._operands import _on_device_of, _require_tensor
from torchlean.functional._params import Axes, _axes, _axis_spelling, _keepdims_spelling, _required_axis
from torchlean.functional._pointwise import exp, log
from torchlean.functional._shape import concat, permute, reshape
from torchlean.tensor import BoolLike, Tensor, _flag


def reduce_sum(
    x: Tensor,
    axis: Axes | _Unset = _UNSET,
    keepdims: BoolLike | _Unset = _UNSET,
    *,
    dim: Axes | _Unset = _UNSET,
    keepdim: BoolLike | _Unset = _UNSET,
) -> Tensor:
    """Left-fold sum over ``axis`` (default None: all axes) (``torch.sum``); records
    ``reduce_sum``. As in torch, a rank-0 ``x`` takes ``axis`` 0 or -1 and gives its value, shape
    ``()``. torch's keywords ``dim=`` and ``keepdim=`` are taken for ``axis`` and ``keepdims``
    (``reduce_sum(x, dim=1, keepdim=True)``).

    ``axis`` is None, an integer or a non-empty sequence of distinct integers in ``[-ndim, ndim)``.
    Returns x's shape without the reduced axes (kept with extent 1 when ``keepdims``); ``()`` for
    ``axis=None``; in x's dtype (float32 or float64). The sum over an empty axis is 0.

    Under ``checked_cpu`` the left fold is reproducible, not accurate: its rounding error can grow
    as ``n`` times the dtype's epsilon for ``n`` terms of one sign (the float32 sum of 10^6 copies
    of ``0.1`` is 100958.34, 1 % off; torch's pairwise sum, ``fast_cpu``'s, is 100000 to float32's
    precision): sum long axes in float64 there (README.md, Profiles in detail).

    Raises:
        GuardError: an axis out of range (never wrapped), a repeated axis, or ``axis=()`` (numpy
            reduces nothing there, torch everything); an int64 or bool ``x``.
        TensorTypeError: a non-integer axis; a ``keepdims`` that is not a bool; both ``axis`` and
            ``dim``, or both ``keepdims`` and ``keepdim``.
    """
    return run_op(BackendOp.REDUCE_SUM, (x,), _reduction_params("reduce_sum", axis, keepdims, dim, keepdim))


def reduce_mean(
    x: Tensor,
    axis: Axes | _Unset = _UNSET,
    keepdims: BoolLike | _Unset = _UNSET,
    *,
    dim: Axes | _Unset = _UNSET,
    keepdim: BoolLike | _Unset = _UNSET,
) -> Tensor:
    """Left-fold mean over ``axis`` (None: all axes) (``torch.mean``); records ``reduce_mean``.
    A rank-0 ``x`` takes ``axis`` 0 or -1; ``axis``, ``keepdims`` (or torch's ``dim=``,
    ``keepdim=``), the result's shape and dtype and its accuracy under ``checked_cpu`` (a left
    fold: float32 means of many terms of one sign can be percents off) are as in
    :func:`reduce_sum`. The mean over an empty axis is NaN, as in torch. The sum is divided once
    at the end, so a sum that overflows gives ``inf`` although the mean fits (float32 four times
    1e38), as in torch; :func:`layer_norm` rescales such rows, this does not (review166 F6).

    Raises:
        GuardError: an axis out of range (never wrapped), a repeated axis, or ``axis=()``; an
            int64 or bool ``x``.
        TensorTypeError: a non-integer axis; a ``keepdims`` that is not a bool; both ``axis`` and
            ``dim``, or both ``keepdims`` and ``keepdim``.
    """
    return run_op(BackendOp.REDUCE_MEAN, (x,), _reduction_params("reduce_mean", axis, keepdims, dim, keepdim))


def _reduction_params(
    fn: str,
    axis: Axes | _Unset,
    keepdims: BoolLike | _Unset,
    dim: Axes | _Unset,
    keepdim: BoolLike | _Unset,
) -> dict[str, object]:
    """The kernel parameters of ``reduce_sum``/``reduce_mean`` (``fn``) from either spelling of
    each argument (default: every axis, not kept)."""
    axes = _axes(fn, _axis_spelling(fn, axis, dim, None))
    return {"axis": axes, "keepdims": _flag(f"{fn}: keepdims", _keepdims_spelling(fn, keepdims, keepdim))}


def logsumexp(
    x: Tensor,
    axis: Axes | _Unset = _UNSET,
    keepdims: BoolLike | _Unset = _UNSET,
    *,
    dim: Axes | _Unset = _UNSET,
    keepdim: BoolLike | _Unset = _UNSET,
) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, max-shifted as ``torch.logsumexp``: ``log(sum(exp(x -
    m))) + m``, ``m`` the row's maximum taken as a constant (where it is ``inf``, the row's largest
    finite entry; 0 where the row holds no finite entry, as torch's 0 for an infinite maximum);
    ``axis`` (or torch's keyword ``dim=``; ``keepdim=`` for ``keepdims``) is None (every axis), an
    integer or a non-empty sequence of distinct integers, as in :func:`reduce_sum`; it is
    required, as torch requires it (a rank-0 ``x`` takes 0 or -1 and gives its value). Returns
    x's shape without the reduced axes (extent 1 there when ``keepdims``), in x's dtype. The
    gradient is ``softmax(x)`` over the reduced axes: ``exp(x - m) / sum(exp(x - m))``, as
    accurate as torch's ``exp(x - result)`` (review209 F1: composed through ``log_softmax``, the
    row maximum's gradient was ``1 + (p - 1)``, off by about ``eps / (2 p)`` relative, 1.3e-2 in a
    float32 row of 10**6 equal entries).

    The catalog has no logsumexp op: it is composed of accepted kernels, with torch's values (the
    sum a left fold under ``checked_cpu``). The reduced axes are moved last (``permute``, when
    they are not) and merged (``reshape``). A row holding NaN gives NaN (value and gradient); a
    row holding ``inf`` gives ``inf``, its gradient NaN at the ``inf`` entries and 0 elsewhere; a
    row of ``-inf`` gives ``-inf`` with a NaN gradient; as torch. Over an empty axis the result is
    ``-inf`` (``log`` of the empty sum), with a zero-size gradient.

    Records ``permute`` (when needed), ``reshape``, ``gather`` (``m``: gathered from the rows cut
    from the tape at each row's first maximum, found from the values, or, where that maximum is
    ``inf``, at its largest finite entry; review211 F2: ``m`` is most of the result where one entry
    dominates, so it comes from a kernel too; where some row's maximum is infinite, a ``concat``
    first appends a 0 to each row, gathered for a row without a finite entry), ``sub``, ``exp``,
    ``reduce_sum``, ``log``, ``add`` and ``reshape`` (``exp``, ``reduce_sum``, ``log`` and
    ``reshape`` over an empty axis); ``result.produced_by`` is the last ``reshape``'s kernel.

    Raises:
        GuardError: an int64 or bool ``x``; an axis out of range (never wrapped), repeated, or
            ``axis=()``.
        TensorTypeError: ``x`` is not a Tensor; a non-integer axis; no axis; a ``keepdims`` that
            is not a bool; both ``axis`` and ``dim``, or both ``keepdims`` and ``keepdim``.
    """
    x = _require_tensor("logsumexp", "x", x)
    axis = _required_axis("logsumexp", axis, dim)
    keep = _flag("logsumexp: keepdims", _keepdims_spelling("logsumexp", keepdims, keepdim))
    if x.dtype not in (np.float32, np.float64):
        raise GuardError(f"logsumexp: input x has dtype {x.dtype}; accepted: float32 or float64")
    shape = x.shape
    axes = reduction_axes("logsumexp", x.ndim, _axes("logsumexp", axis))
    kept = [a for a in range(x.ndim) if a not in axes]
    if axes and list(axes) != list(range(len(kept), x.ndim)):
        x = permute(x, (*kept, *axes))
    extent = math.prod(x.shape[len(kept):]) if axes else 1
    rows = reshape(x, (*x.shape[: len(kept)], extent))
    if extent == 0:
        result = log(reduce_sum(exp(rows), -1, keepdims=True))
    else:
        # the shift m, without gradient: a gather of the row's (first) maximum, found from the
        # values (an index); where that maximum is inf, of its largest finite entry (so that a
        # finite entry whose exp overflows gets torch's 0 gradient, not inf / inf: review210 F1);
        # of a 0 appended to the row where it holds no finite entry and no NaN
        values = rows.numpy()
        at = np.argmax(values, axis=-1, keepdims=True)
        infinite = np.isinf(np.take_along_axis(values, at, axis=-1))
        fixed = rows.detach()
        if infinite.any():  # the rare rows: a finite-entry search and a 0 column (review213 F4: cost)
            peak = np.take_along_axis(values, at, axis=-1)
            finite = np.where(np.isfinite(values), values, -np.inf)
            at_finite = np.argmax(finite, axis=-1, keepdims=True)
            has_finite = np.isfinite(np.take_along_axis(finite, at_finite, axis=-1))
            at = np.where(infinite, np.where(has_finite & (peak > 0), at_finite, extent), at)
            zero = _on_device_of(np.zeros((*rows.shape[:-1], 1), values.dtype), rows)
            fixed = concat([fixed, zero], -1)
        shift = gather(fixed, _on_device_of(at.astype(np.int64), rows), -1)
        result = add(log(reduce_sum(exp(sub(rows, shift)), -1, keepdims=True)), shift)
    return reshape(result, reduced_shape(shape, axes, keep))
