"""Standard scaled dot-product attention: the mathematical reference, forward and backward.

Shapes: ``q`` (..., nQ, d), ``k`` (..., nK, d), ``v`` (..., nK, dv), optional boolean ``mask``
broadcastable to (..., nQ, nK) with True = the key may be attended. Leading (batch, head) axes
of q, k, v and mask broadcast against each other as in PyTorch
``torch.nn.functional.scaled_dot_product_attention``. Arithmetic is generic: floating inputs
compute in their (common) dtype, object arrays of ``mpmath.mpf`` at mpmath's working precision.

Source: anchor-runtime.md §5.1 (``scaledDotProductAttention`` and its backward), seed chapter
"The Attention Specification Theorem" and "Boolean Attention Masks"; fully masked rows are zeros
in forward and backward as in PyTorch >= 2.5 (peers.md §1.7). A row whose allowed scores are all
-inf is not masked: it is the softmax of all -inf, NaN in forward and backward (torch's SDPA with
a boolean mask returns zeros there).
"""

from __future__ import annotations

import numbers
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import shown
from torchlean.backend.providers.reference.ieee import ieee
from torchlean.spec import _arith
from torchlean.spec._arith import Array, BoolArray
from torchlean.spec.errors import SpecTypeError, SpecValueError
from torchlean.spec.masks import as_bool_mask, masked_softmax_last_axis


@dataclass(frozen=True, slots=True)
class AttentionInputs:
    """Validated attention operands in the working arithmetic.

    ``q``, ``k``, ``v`` keep the caller's shapes (their own, possibly smaller, leading axes, so
    gradients can be reduced back to them); ``allowed`` is the boolean mask or None, broadcastable
    to the scores ``(*batch, nQ, nK)`` without enlarging them; ``batch`` is the broadcast of the
    leading axes of q, k and v; ``scale`` is a scalar of the working type ``dtype``.
    """

    q: Array
    k: Array
    v: Array
    allowed: BoolArray | None
    scale: Any
    dtype: np.dtype[Any]
    batch: tuple[int, ...]

    @property
    def n_q(self) -> int:
        """Number of queries: ``q.shape[-2]``."""
        return int(self.q.shape[-2])

    @property
    def n_k(self) -> int:
        """Number of keys: ``k.shape[-2]``."""
        return int(self.k.shape[-2])

    @property
    def d(self) -> int:
        """Query/key feature size: ``q.shape[-1]``."""
        return int(self.q.shape[-1])

    @property
    def d_v(self) -> int:
        """Value feature size: ``v.shape[-1]``."""
        return int(self.v.shape[-1])

    @property
    def out_shape(self) -> tuple[int, ...]:
        """Shape of the attention output: ``(*batch, n_q, d_v)``."""
        return (*self.batch, self.n_q, self.d_v)

    def allowed_full(self) -> BoolArray | None:
        """The mask as a read-only broadcast view of shape (*batch, nQ, nK), or None."""
        if self.allowed is None:
            return None
        return np.broadcast_to(self.allowed, (*self.batch, self.n_q, self.n_k))


def prepare_attention(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: npt.ArrayLike | None,
    scale: Any,
) -> AttentionInputs:
    """Validate and convert attention operands (shared by the standard and the tiled spec).

    Raises:
        SpecTypeError: a non-floating q/k/v (an object array is taken only of ``mpmath.mpf``
            entries: :func:`~torchlean.spec.as_mpf_array` converts others), a non-boolean mask, a
            torch tensor that requires grad, is not on the CPU or has no values (review239 F5:
            ``t.detach().cpu()`` is named), or a ``scale`` that is not a real number (a string, a
            bool, an array).
        SpecValueError: rank below 2, mismatched feature or key axes, leading axes of q, k, v
            that do not broadcast, a mask that does not broadcast to the scores
            ``(*batch, nQ, nK)`` (or would enlarge them, which PyTorch's
            ``scaled_dot_product_attention`` refuses too), a non-finite ``scale`` (see
            :func:`_scale`), or a ragged nested sequence for q, k, v or the mask.
    """
    arrays = {name: _arith.as_array(name, value) for name, value in (("q", q), ("k", k), ("v", v))}
    allowed = None if mask is None else as_bool_mask(mask)
    for name, array in arrays.items():
        if array.ndim < 2:
            raise SpecValueError(f"{name} must have rank >= 2 (..., n, d), got shape {array.shape}")
    qa, ka, va = arrays["q"], arrays["k"], arrays["v"]
    if ka.shape[-1] != qa.shape[-1]:
        raise SpecValueError(
            f"q and k must share the feature size d: q has shape {qa.shape}, k has shape {ka.shape}"
        )
    if va.shape[-2] != ka.shape[-2]:
        raise SpecValueError(
            f"k and v must share the key count nK: k has shape {ka.shape}, v has shape {va.shape}"
        )
    try:
        batch = np.broadcast_shapes(qa.shape[:-2], ka.shape[:-2], va.shape[:-2])
    except ValueError as error:
        raise SpecValueError(
            f"leading axes of q {qa.shape}, k {ka.shape}, v {va.shape} do not broadcast (accepted: leading "
            "axes that agree on each trailing axis or have extent 1 there, numpy's broadcasting)"
        ) from error
    if allowed is not None:
        target = (*batch, qa.shape[-2], ka.shape[-2])
        try:
            full = np.broadcast_shapes(allowed.shape, target)
        except ValueError:
            full = None
        if full != target:  # a mask may not enlarge the scores (PyTorch SDPA refuses it too)
            raise SpecValueError(
                f"mask of shape {allowed.shape} does not broadcast to the score shape {target}"
            )
    dtype = _arith.working_dtype(arrays)
    scale_value = _arith.inverse_sqrt(int(qa.shape[-1]), dtype) if scale is None else _scale(scale, dtype)
    return AttentionInputs(
        q=_arith.to_working(qa, dtype),
        k=_arith.to_working(ka, dtype),
        v=_arith.to_working(va, dtype),
        allowed=allowed,
        scale=scale_value,
        dtype=dtype,
        batch=tuple(batch),
    )


def _scale(scale: object, dtype: np.dtype[Any]) -> Any:
    """An explicit ``scale`` as a scalar of the working type ``dtype``.

    PyTorch's ``scaled_dot_product_attention`` accepts any float ``scale`` (NaN and inf give NaN
    outputs). The spec is the oracle other kernels are checked against, so it refuses a scale
    that cannot give a meaningful answer instead of returning NaN silently.

    Raises:
        SpecTypeError: ``scale`` is not a real number (bool excluded): ``scale must be a real
            number or None, got '0.5' of type str``.
        SpecValueError: ``scale`` is NaN or infinite (``scale = nan is not accepted (accepted: a
            finite real number, or None for 1/sqrt(d))``), or overflows ``dtype`` (``scale = 1e+300
            overflows the working dtype float32 (accepted: ...)``).

    Finiteness is judged in the scale's own type (``_arith.is_finite_scalar``): an int or a
    ``Fraction`` of any size is finite, and so is a ``np.longdouble`` above float64's range. Such
    a scale is accepted where the working dtype holds it (the mpmath path; ``longdouble``) and
    otherwise refused as overflowing, naming its own value (``scale = np.longdouble('1e+400')
    overflows the working dtype float64``; ``scale = a fraction of about 401 digits over 1
    digits overflows ...``).
    """
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise SpecTypeError(
            f"scale must be a real number or None, got {scale!r} of type {type(scale).__name__}"
        )
    accepted = "(accepted: a finite real number, or None for 1/sqrt(d))"
    if not _arith.is_finite_scalar(scale):
        raise SpecValueError(f"scale = {scale} is not accepted {accepted}")
    try:
        with np.errstate(over="ignore"):
            value = _arith.scalar(scale, dtype)
    except OverflowError:  # a Python int beyond the float range
        value = None
    if value is None or not _arith.is_finite_scalar(value):
        raise SpecValueError(f"scale = {shown(scale)} overflows the working dtype {dtype} {accepted}")
    return value


def _swap(array: Array) -> Array:
    return np.swapaxes(array, -1, -2)


def _attention_weights(inputs: AttentionInputs) -> tuple[Array, BoolArray | None]:
    """(weights (*batch, nQ, nK), allowed view or None) of the standard attention."""
    scores = np.asarray(inputs.q @ _swap(inputs.k)) * inputs.scale
    allowed = inputs.allowed_full()
    scores = np.broadcast_to(scores, (*inputs.batch, inputs.n_q, inputs.n_k))
    return masked_softmax_last_axis(scores, allowed), allowed


@ieee
def scaled_dot_product_attention(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    scale: Any = None,
) -> Array:
    """Standard attention ``softmax_mask(q kᵀ · scale) v``.

    Args:
        q: (..., nQ, d) floating or mpmath object array.
        k: (..., nK, d).
        v: (..., nK, dv).
        mask: optional bool array broadcastable to (..., nQ, nK); True = may attend.
        scale: score factor, a finite real number; defaults to ``1/sqrt(d)``, and to 1 when
            ``d == 0``. PyTorch accepts any float ``scale`` (NaN or inf give NaN outputs); the
            spec is the oracle other kernels are checked against, so it refuses a non-finite one.

    Returns:
        (*batch, nQ, dv) in the working dtype, batch the broadcast of the leading axes. A query
        row with no allowed key is zero; values at blocked positions (scores, rows of k or v
        blocked for a query) never reach that query's output. Source: anchor-runtime.md §5.1;
        PyTorch ``scaled_dot_product_attention`` with a boolean ``attn_mask`` (PyTorch >= 2.5
        fully-masked-row convention).

    The scores ``q kᵀ`` are numpy's ``@`` (BLAS: no fixed order, fused multiply-adds), so near the
    working dtype's overflow threshold this spec and a fixed-left kernel can disagree on which
    scores are finite (a sum whose partial product overflows); compare such inputs in float64 or
    with mpmath arrays.

    Raises:
        SpecTypeError, SpecValueError: see :func:`prepare_attention` (a non-finite ``scale`` is a
            SpecValueError naming it).
    """
    inputs = prepare_attention(q, k, v, mask, scale)
    weights, allowed = _attention_weights(inputs)
    out = _arith.selected_matmul(weights, allowed, inputs.v)
    return np.broadcast_to(out, inputs.out_shape).copy()


@ieee
def scaled_dot_product_attention_backward(
    q: npt.ArrayLike,
    k: npt.ArrayLike,
    v: npt.ArrayLike,
    d_out: npt.ArrayLike,
    mask: npt.ArrayLike | None = None,
    *,
    scale: Any = None,
) -> tuple[Array, Array, Array]:
    """Vector-Jacobian product of :func:`scaled_dot_product_attention` for cotangent ``d_out``.

    With weights ``W`` recomputed from the inputs (anchor-runtime.md §5.1):
    ``dW = dO vᵀ``, ``dv = Wᵀ dO``, ``dS = W ⊙ (dW - rowsum(dW ⊙ W)) · scale``, ``dq = dS k``,
    ``dk = dSᵀ q``; every contraction skips blocked (query, key) pairs, so rows with no allowed
    key give zero gradients and non-finite values at blocked positions never leak.

    Args:
        q, k, v, mask, scale: as in :func:`scaled_dot_product_attention`.
        d_out: (*batch, nQ, dv), the cotangent of the output (its broadcast shape).

    Returns:
        ``(dq, dk, dv)`` with the shapes of ``q``, ``k`` and ``v`` (gradients of broadcast leading
        axes are summed back), in the working dtype.

    Raises:
        SpecTypeError, SpecValueError: see :func:`prepare_attention`; SpecValueError also when
            ``d_out`` does not have the output shape.
    """
    inputs = prepare_attention(q, k, v, mask, scale)
    grad = _checked_cotangent(d_out, inputs)
    weights, allowed = _attention_weights(inputs)
    allowed_t = None if allowed is None else _swap(allowed)
    d_v = _arith.selected_matmul(_swap(weights), allowed_t, grad)
    d_weights = np.asarray(grad @ _swap(inputs.v))
    row_dot = np.sum(_arith.select(allowed, d_weights * weights), axis=-1, keepdims=True)
    d_scores = _arith.select(allowed, weights * (d_weights - row_dot)) * inputs.scale
    d_q = _arith.selected_matmul(d_scores, allowed, inputs.k)
    d_k = _arith.selected_matmul(_swap(d_scores), allowed_t, inputs.q)
    return (
        _arith.sum_to_shape(np.broadcast_to(d_q, (*inputs.batch, inputs.n_q, inputs.d)), inputs.q.shape),
        _arith.sum_to_shape(np.broadcast_to(d_k, (*inputs.batch, inputs.n_k, inputs.d)), inputs.k.shape),
        _arith.sum_to_shape(np.broadcast_to(d_v, (*inputs.batch, inputs.n_k, inputs.d_v)), inputs.v.shape),
    )


def _checked_cotangent(d_out: npt.ArrayLike, inputs: AttentionInputs) -> Array:
    grad = _arith.as_array("d_out", d_out)
    _arith.working_dtype({"d_out": grad})
    if grad.shape != inputs.out_shape:
        raise SpecValueError(f"d_out must have the output shape {inputs.out_shape}, got {grad.shape}")
    return _arith.to_working(grad, inputs.dtype)
