"""Gradient clipping: torch's ``clip_grad_norm_`` and ``clip_grad_value_`` on numpy gradients."""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import shown
from torchlean.optim._common import (
    _FLOAT_DTYPES,
    Array,
    OptimizerError,
    _listed,
    _not_a_float_array,
    _plain_arrays,
)
from torchlean.tensor import RealLike


def _real(name: str, value: object, caller: str = "clip_grad_norm") -> float:
    """``value`` as a float for :func:`clip_grad_norm` or :func:`clip_grad_value` (``caller``): a
    real number (bools refused); one beyond the float range (``10**400``) is refused rather than
    raising ``OverflowError``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise OptimizerError(f"{caller}: {name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        message = f"{caller}: {name} must be a float, got {shown(value)} (beyond the float range)"
        raise OptimizerError(message) from None


def clip_limit(name: str, value: object, caller: str) -> float:
    """``value`` as a clipping limit of ``caller`` (its argument ``name``): a real number >= 0,
    ``inf`` allowed.

    Raises:
        OptimizerError: ``{caller}: {name} must be ...``: not a real number (bools refused), beyond
            the float range, negative or NaN.
    """
    limit = _real(name, value, caller)
    if not limit >= 0.0:
        raise OptimizerError(f"{caller}: {name} must be >= 0 (inf allowed), got {value!r}")
    return limit


def _checked_grads(grads: object, caller: str) -> list[Array | None]:
    """``grads`` as a list, each entry ``None`` or a numpy float array (a subclass read as a plain
    array: :func:`_plain_arrays`).

    Raises:
        OptimizerError: not a sequence (:func:`_listed`), an entry that is not a numpy float
            array (:func:`_not_a_float_array`), or a masked array with a masked entry.
    """
    listed: list[Array | None] = _plain_arrays("gradient", _listed("gradients", grads, caller), caller)
    for index, grad in enumerate(listed):
        if grad is not None and (not isinstance(grad, np.ndarray) or grad.dtype not in _FLOAT_DTYPES):
            raise OptimizerError(_not_a_float_array("gradient", index, grad, caller))
    return listed


def clip_grad_value(grads: Sequence[Array | None], clip_value: RealLike) -> list[Array | None]:
    """Clamp every gradient entry to ``[-clip_value, clip_value]``
    (``torch.nn.utils.clip_grad_value_``): returns the clipped gradients, new arrays of the
    gradients' shapes and dtypes (``None`` entries stay ``None``, as torch skips parameters
    without a gradient). Each gradient is clipped on its own (any mix of float16, float32 and
    float64 arrays, any shapes, 0-d and empty ones included), elementwise, so no summation order
    is involved and the values are torch's bit for bit: as torch's ``clamp_``, the bound is
    ``clip_value`` rounded to the gradient's dtype, and a NaN entry stays NaN. ``clip_value=0``
    zeroes every gradient; ``inf`` leaves them as they are. A finite ``clip_value`` beyond the
    dtype's range (``1e300`` for float32 gradients, ``70000`` for float16), which torch refuses
    (``value cannot be converted to type float without overflow``), rounds to infinity and bounds
    nothing, as ``inf`` (the exact clamp of an infinite entry to it rounds back to infinity).

    Raises:
        OptimizerError: ``clip_value`` not a real number (bools refused; beyond the float range,
            as ``10**400``), or negative or NaN (torch accepts a negative one and then sets every
            entry to ``-|clip_value|``); gradients that are not numpy float arrays (a subclass
            such as ``np.matrix`` is read as a plain array; a masked array with a masked entry is
            refused), or not a sequence (as :meth:`Optimizer.step`).
    """
    limit = clip_limit("clip_value", clip_value, "clip_grad_value")
    clipped = _checked_grads(grads, "clip_grad_value")
    with np.errstate(over="ignore"):  # a bound beyond the dtype's range rounds to inf: no bound
        for index, grad in enumerate(clipped):
            if grad is not None:
                bound = grad.dtype.type(limit)
                clipped[index] = np.asarray(np.clip(grad, -bound, bound), dtype=grad.dtype)
    return clipped


def _left_fold(terms: npt.NDArray[Any]) -> Any:
    """``((t0 + t1) + t2) + ...`` over a non-empty 1-D array, in its dtype (``np.add.accumulate``
    is that sequential recurrence; ``np.sum`` is pairwise)."""
    return np.add.accumulate(terms)[-1]


def clip_grad_norm(
    grads: Sequence[Array | None], max_norm: RealLike, *, norm_type: RealLike | str = 2.0
) -> tuple[list[Array | None], float]:
    """Scale the gradients so that their total norm is at most ``max_norm``
    (``torch.nn.utils.clip_grad_norm_``): returns the clipped gradients (new arrays; ``None``
    entries stay ``None``, as torch skips parameters without a gradient) and the total norm before
    clipping, as a Python float.

    As torch computes it: each gradient's ``norm_type``-norm (``inf``, or torch's string
    ``"inf"``: the largest magnitude), the
    same norm of those norms (``0.0`` when every entry is ``None``, and for empty gradients, where
    torch's infinity norm raises), ``coef = max_norm / (total + 1e-6)`` (evaluated as torch does,
    ``reciprocal(total + 1e-6) * max_norm``) clamped to at most 1, every gradient multiplied by
    ``coef`` (by 1.0 under the limit: values unchanged). The norms are computed in the gradients'
    dtype (float16 ones in float32), as torch's, so they overflow where torch's do (float32
    gradients whose squares pass about 3.4e38); as torch's, the norm of one element (a one-element
    gradient, and the total of one gradient) is its magnitude, whatever ``norm_type``, so a lone
    ``3e19`` has norm ``3e19`` (two such entries overflow) and a lone ``1e-30`` keeps its norm
    where its square underflows (review184 F6). Every sum is a left fold in a stated order, under
    every profile (review79 F1: it was numpy's pairwise sum, an order of numpy's own): a
    gradient's terms in row-major order, then the per-gradient norms in the order of ``grads``
    (``((t0 + t1) + t2) + ...``, from the first term). torch sums in another order, so a norm
    may differ from torch's by a few ulps, and by more for float32 gradients of many entries,
    where a left fold drifts: about 2e-4 relative to the exact norm for 10**6 standard-normal
    float32 entries (torch's about 1e-5, numpy's pairwise sum about 1e-8). A NaN or
    infinite total (torch's default ``error_if_nonfinite=False``) makes ``coef`` NaN or 0, so the
    gradients become NaN or zeros (NaN where infinite), as in torch: an overflowed norm skips the
    update.

    Raises:
        OptimizerError: ``max_norm`` not a real number (or beyond the float range, as ``10**400``),
            or negative or NaN (torch accepts a negative
            one and then flips every gradient's sign), ``norm_type`` not ``inf`` or a finite
            number > 0; gradients that are not numpy float arrays of one dtype (a subclass such as
            ``np.matrix`` is read as a plain array; a masked array with a masked entry is
            refused), or not a sequence (as :meth:`Optimizer.step`).
    """
    if norm_type == "inf":  # torch's documented spelling of the infinity norm (review54 F7)
        norm_type = math.inf
    limit, p = clip_limit("max_norm", max_norm, "clip_grad_norm"), _real("norm_type", norm_type)
    if not (p > 0.0 and (math.isfinite(p) or p == math.inf)):
        raise OptimizerError(
            f"clip_grad_norm: norm_type must be inf or a finite number > 0, got {norm_type!r}"
        )
    grads = _checked_grads(grads, "clip_grad_norm")
    present = [(index, grad) for index, grad in enumerate(grads) if grad is not None]
    dtypes = {grad.dtype for _, grad in present}
    if len(dtypes) > 1:
        raise OptimizerError(
            f"clip_grad_norm: the gradients have dtypes {sorted(str(d) for d in dtypes)} (accepted: "
            "one dtype)"
        )
    if not present:
        return list(grads), 0.0
    dtype = present[0][1].dtype
    work = np.promote_types(dtype, np.float32)  # torch computes float16 norms in float32

    def norm(values: npt.NDArray[Any]) -> Any:
        magnitudes = np.abs(values.astype(work).ravel())
        if magnitudes.size == 0:
            return dtype.type(0.0)
        if magnitudes.size == 1:  # torch's norm of one element is its magnitude: nothing squared
            return dtype.type(magnitudes[0])
        if p == math.inf:
            return dtype.type(magnitudes.max())
        if p == 2.0:
            return dtype.type(np.sqrt(_left_fold(magnitudes * magnitudes)))
        return dtype.type(_left_fold(magnitudes ** work.type(p)) ** work.type(1.0 / p))

    with np.errstate(all="ignore"):
        total = norm(np.array([norm(grad) for _, grad in present], dtype=dtype))
        # torch's max_norm / (total + 1e-6) is Tensor.__rtruediv__: reciprocal(total + 1e-6) * max_norm
        coef = (dtype.type(1.0) / (total + dtype.type(1e-6))) * dtype.type(limit)
        coef = np.minimum(coef, dtype.type(1.0))
        clipped = list(grads)
        for index, grad in present:
            clipped[index] = np.asarray(grad * coef, dtype=dtype)
    return clipped, float(total)
