"""numpy kernels of the ``reference`` provider: forward functions and their VJPs.

Convention (team brief): for a reference op label ``<op>`` the forward is
``<op>(*inputs, **params) -> np.ndarray`` and, when the op is differentiable, the VJP is
``<op>_vjp(g, *inputs, out, **params) -> tuple[np.ndarray | None, ...]`` with one cotangent per
input (``None`` for masks and indices), already reduced to that input's shape.  ``out`` is the
forward's result (keyword-only).  Every kernel first calls its guard
``torchlean.backend.providers.reference.guards.check_<op>`` (which calls ``check_canonical_layout``
on each array input), works in the inputs' dtype (float32 or float64, never promoted; the shape
ops also move int64 and bool data), returns
fresh C-contiguous arrays that never alias an input, and follows IEEE semantics silently (NaN
and inf propagate as in PyTorch; no numpy warnings).

Every reduction and contraction is a left fold (``_fold``; capsule reduction policy
``fixed-left``).  The spatial ops live in ``spatial.py``.

Sources: the reference catalog (anchor-backend.md §4.2), the hard-mask and attention specs
(anchor-runtime.md §5.1-5.2), the seeded random sources (anchor-runtime.md §1.6), and the PyTorch
op each kernel mirrors (named per function).
"""

from __future__ import annotations

import builtins
import math
from collections.abc import Iterator, Sequence

import numpy as np
import numpy.typing as npt

from torchlean.backend.providers.reference import guards
from torchlean.backend.providers.reference._fold import (
    Array,
    fold_matmul,
    fold_matmul_to,
    fold_matmul_where,
    fold_sum,
    fold_sum_axes,
    sum_to_shape,
)
from torchlean.backend.providers.reference.ieee import ieee

Grads = tuple[Array | None, ...]
"""One cotangent per forward input; ``None`` for a non-differentiable input (mask, index)."""

Axis = int | tuple[int, ...] | None


def _arr(x: object) -> Array:
    """A ufunc result as an ndarray (numpy returns scalars for 0-d operands)."""
    return np.asarray(x)


def _check_vjp(op: str, g: Array, out: Array, shape: Sequence[int], dtype: np.dtype[np.generic]) -> None:
    guards.check_cotangent(op, g, shape, dtype)
    guards.check_cotangent(op, out, shape, dtype, name="saved output out")


# ============================================================================ binary pointwise


@ieee
def add(a: Array, b: Array) -> Array:
    """``a + b`` with numpy/PyTorch broadcasting (``torch.add``). Same float dtype required."""
    guards.check_add(a, b)
    return _arr(a + b)


@ieee
def add_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`add`: ``g`` summed (left fold) back to each operand's shape."""
    shape = guards.check_add(a, b)
    _check_vjp("add", g, out, shape, a.dtype)
    return sum_to_shape(g, a.shape), sum_to_shape(g, b.shape)


@ieee
def sub(a: Array, b: Array) -> Array:
    """``a - b`` with broadcasting (``torch.sub``)."""
    guards.check_sub(a, b)
    return _arr(a - b)


@ieee
def sub_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`sub`: ``(g, -g)`` reduced to the operands' shapes."""
    shape = guards.check_sub(a, b)
    _check_vjp("sub", g, out, shape, a.dtype)
    return sum_to_shape(g, a.shape), sum_to_shape(_arr(-g), b.shape)


@ieee
def mul(a: Array, b: Array) -> Array:
    """Elementwise ``a * b`` with broadcasting (``torch.mul``)."""
    guards.check_mul(a, b)
    return _arr(a * b)


@ieee
def mul_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`mul`: ``(g*b, g*a)`` reduced to the operands' shapes."""
    shape = guards.check_mul(a, b)
    _check_vjp("mul", g, out, shape, a.dtype)
    return sum_to_shape(_arr(g * b), a.shape), sum_to_shape(_arr(g * a), b.shape)


@ieee
def max(a: Array, b: Array) -> Array:  # the op label is `max`
    """Elementwise maximum with broadcasting (``torch.maximum``; NaN propagates). Which zero a
    ``-0.0``/``0.0`` tie gives is unspecified, as in torch (its vectorised and scalar paths
    differ)."""
    guards.check_max(a, b)
    return _arr(np.maximum(a, b))


def _select_vjp(g: Array, a: Array, b: Array, a_loses: Array, b_loses: Array) -> Grads:
    # torch.maximum / torch.minimum backward: where(a == b, g/2, g) with the loser's entries
    # zeroed; so ties split g/2 to each side and a NaN comparison gives g to both (as torch).
    half = g.dtype.type(0.5)
    zero = g.dtype.type(0)
    tie = a == b
    ga = np.where(tie, g * half, np.where(a_loses, zero, g))
    gb = np.where(tie, g * half, np.where(b_loses, zero, g))
    return sum_to_shape(_arr(ga), a.shape), sum_to_shape(_arr(gb), b.shape)


@ieee
def max_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`max`: ``g`` to the larger operand; ties give ``g/2`` to each (as torch)."""
    shape = guards.check_max(a, b)
    _check_vjp("max", g, out, shape, a.dtype)
    return _select_vjp(g, a, b, _arr(a < b), _arr(a > b))


@ieee
def min(a: Array, b: Array) -> Array:  # the op label is `min`
    """Elementwise minimum with broadcasting (``torch.minimum``; NaN propagates; the zero of a
    ``-0.0``/``0.0`` tie unspecified, as :func:`max`)."""
    guards.check_min(a, b)
    return _arr(np.minimum(a, b))


@ieee
def min_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`min`: ``g`` to the smaller operand; ties give ``g/2`` to each (as torch)."""
    shape = guards.check_min(a, b)
    _check_vjp("min", g, out, shape, a.dtype)
    return _select_vjp(g, a, b, _arr(a > b), _arr(a < b))


# ============================================================================= unary pointwise


@ieee
def scale(x: Array, *, factor: float) -> Array:
    """``x * factor`` with ``factor`` rounded to ``x.dtype`` first (``torch.mul`` by a scalar)."""
    guards.check_scale(x, factor=factor)
    return _arr(x * x.dtype.type(factor))


@ieee
def scale_vjp(g: Array, x: Array, *, out: Array, factor: float) -> Grads:
    """VJP of :func:`scale`: ``g * factor``."""
    guards.check_scale(x, factor=factor)
    _check_vjp("scale", g, out, x.shape, x.dtype)
    return (_arr(g * x.dtype.type(factor)),)


@ieee
def clamp(x: Array, *, lo: float, hi: float) -> Array:
    """``min(max(x, lo), hi)`` elementwise (``torch.clamp``; NaN stays NaN; x itself on a tie
    with a bound, so ``clamp(-0.0, lo=0)`` is ``-0.0`` as torch). Needs ``lo <= hi``."""
    guards.check_clamp(x, lo=lo, hi=hi)
    low, high = x.dtype.type(lo), x.dtype.type(hi)
    return _arr(np.where(x < low, low, np.where(x > high, high, x)))


@ieee
def clamp_vjp(g: Array, x: Array, *, out: Array, lo: float, hi: float) -> Grads:
    """VJP of :func:`clamp`: ``g`` where ``lo <= x <= hi`` (bounds inclusive, as torch up to 2.13;
    torch 2.14 gives 0 at a bound), else 0 (NaN included)."""
    guards.check_clamp(x, lo=lo, hi=hi)
    _check_vjp("clamp", g, out, x.shape, x.dtype)
    inside = (x >= x.dtype.type(lo)) & (x <= x.dtype.type(hi))
    return (_arr(np.where(inside, g, g.dtype.type(0))),)


@ieee
def abs(x: Array) -> Array:  # the op label is `abs`
    """``|x|`` elementwise (``torch.abs``)."""
    guards.check_abs(x)
    return _arr(np.abs(x))


@ieee
def abs_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`abs`: ``g * sign(x)`` with ``sign`` 0 at ``x == 0`` and at NaN ``x``, as
    torch's ``abs`` backward ``g * sgn(x)`` (``torch.sign(nan)`` is 0, numpy's ``sign(nan)`` NaN);
    so the gradient at a NaN input is ``g * 0``: 0, or NaN for a non-finite ``g``."""
    guards.check_abs(x)
    _check_vjp("abs", g, out, x.shape, x.dtype)
    sign = np.where(np.isnan(x), x.dtype.type(0), np.sign(x))
    return (_arr(g * sign),)


@ieee
def sqrt(x: Array) -> Array:
    """``sqrt(x)`` elementwise (``torch.sqrt``; NaN for ``x < 0``)."""
    guards.check_sqrt(x)
    return _arr(np.sqrt(x))


@ieee
def sqrt_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`sqrt`: ``g / (2 * out)`` (inf at 0, as torch)."""
    guards.check_sqrt(x)
    _check_vjp("sqrt", g, out, x.shape, x.dtype)
    return (_arr(g / (x.dtype.type(2) * out)),)


@ieee
def relu(x: Array) -> Array:
    """``max(x, 0)`` elementwise (``torch.relu``; NaN stays NaN, ``-0.0`` stays ``-0.0``)."""
    guards.check_relu(x)
    return _arr(np.where(x < 0, x.dtype.type(0), x))


@ieee
def relu_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`relu`: 0 where ``out <= 0``, else ``g`` (torch's ``threshold_backward`` on
    the result): gradient 0 at 0 and below, ``g`` at a NaN input (``NaN <= 0`` is false)."""
    guards.check_relu(x)
    _check_vjp("relu", g, out, x.shape, x.dtype)
    return (_arr(np.where(out <= 0, g.dtype.type(0), g)),)


_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)
_ERFC = np.frompyfunc(math.erfc, 1, 1)


def _normal_cdf(x: Array) -> Array:
    # Phi(x) = erfc(-x / sqrt 2) / 2, which equals (1 + erf(x / sqrt 2)) / 2 without its
    # cancellation for negative x.  erfc is the C library's (math.erfc) evaluated at the float64
    # value of -x / sqrt 2 and rounded to x.dtype; the halving is exact.
    erfc = np.asarray(_ERFC(x.astype(np.float64) * -_SQRT_HALF), dtype=np.float64).astype(x.dtype)
    return _arr(erfc * x.dtype.type(0.5))


@ieee
def gelu(x: Array) -> Array:
    """Exact GELU ``x * Phi(x)``, ``Phi(x) = erfc(-x / sqrt 2) / 2`` the standard normal CDF
    (``torch.nn.functional.gelu`` with its default ``approximate='none'``; not the tanh
    approximation).  erfc comes from the C library in float64 and is rounded to ``x.dtype``; in
    float64 the rounding of ``-x / sqrt 2`` before it bounds the far negative tail's relative
    accuracy to about ``x**2`` ulp (1.8e-13 at x = -37, a value near 1e-294; review166 F3)."""
    guards.check_gelu(x)
    return _arr(x * _normal_cdf(x))


@ieee
def gelu_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`gelu`: ``g * (Phi(x) + x * phi(x))`` with ``phi`` the standard normal pdf."""
    guards.check_gelu(x)
    _check_vjp("gelu", g, out, x.shape, x.dtype)
    pdf = np.exp(x * x * x.dtype.type(-0.5)) * x.dtype.type(_INV_SQRT_2PI)
    return (_arr(g * (_normal_cdf(x) + x * pdf)),)


def _sigmoid(x: Array) -> Array:
    # Stable logistic: exp(-|x|) never overflows; both branches are exact rewrites.
    e = np.exp(-np.abs(x))
    one = x.dtype.type(1)
    return _arr(np.where(x >= 0, one / (one + e), e / (one + e)))


@ieee
def sigmoid(x: Array) -> Array:
    """Logistic ``1 / (1 + exp(-x))``, evaluated stably (``torch.sigmoid``)."""
    guards.check_sigmoid(x)
    return _sigmoid(x)


@ieee
def sigmoid_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`sigmoid`: ``g * sigmoid(x) * sigmoid(-x)``, evaluated from ``x`` as
    ``g * e / (1 + e)**2`` with ``e = exp(-|x|)``: accurate to a few ulp where the output rounds
    to 1 (torch's ``sigmoid_backward``, ``g * out * (1 - out)``, cancels there: 0 for float32
    ``x >= 16.6``, where the true value is about ``exp(-x)``; review166 F1)."""
    guards.check_sigmoid(x)
    _check_vjp("sigmoid", g, out, x.shape, x.dtype)
    e = np.exp(-np.abs(x))
    one_plus = x.dtype.type(1) + e
    return (_arr(g * (e / (one_plus * one_plus))),)


@ieee
def tanh(x: Array) -> Array:
    """``tanh(x)`` elementwise (``torch.tanh``)."""
    guards.check_tanh(x)
    return _arr(np.tanh(x))


@ieee
def tanh_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`tanh`: ``g * (1 - tanh(x)**2)``, evaluated from ``x`` as ``g * 4e / (1 + e)**2``
    with ``e = exp(-2|x|)``: accurate to a few ulp where the output rounds to ±1 (torch's
    ``tanh_backward``, ``g * (1 - out**2)``, cancels there: 0 for float32 ``|x| >= 9``, where the
    true value is about ``4 exp(-2|x|)``; review166 F1)."""
    guards.check_tanh(x)
    _check_vjp("tanh", g, out, x.shape, x.dtype)
    e = np.exp(np.abs(x) * x.dtype.type(-2))
    one_plus = x.dtype.type(1) + e
    return (_arr(g * (e * x.dtype.type(4) / (one_plus * one_plus))),)


def _softplus(x: Array) -> Array:
    # log(1 + exp(x)) = max(x, 0) + log1p(exp(-|x|)): no overflow, exact rewrite.
    return _arr(np.maximum(x, x.dtype.type(0)) + np.log1p(np.exp(-np.abs(x))))


@ieee
def softplus(x: Array) -> Array:
    """``log(1 + exp(x))`` (beta 1), evaluated stably for every x.  ``torch.nn.functional.softplus``
    returns ``x`` itself above its threshold 20; the two differ there by less than ``exp(-20)``."""
    guards.check_softplus(x)
    return _softplus(x)


@ieee
def softplus_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`softplus`: ``g * sigmoid(x)``."""
    guards.check_softplus(x)
    _check_vjp("softplus", g, out, x.shape, x.dtype)
    return (_arr(g * _sigmoid(x)),)


@ieee
def exp(x: Array) -> Array:
    """``exp(x)`` elementwise (``torch.exp``)."""
    guards.check_exp(x)
    return _arr(np.exp(x))


@ieee
def exp_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`exp`: ``g * out``."""
    guards.check_exp(x)
    _check_vjp("exp", g, out, x.shape, x.dtype)
    return (_arr(g * out),)


@ieee
def log(x: Array) -> Array:
    """Natural ``log(x)`` (``torch.log``; ``-inf`` at 0, NaN below)."""
    guards.check_log(x)
    return _arr(np.log(x))


@ieee
def log_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`log`: ``g / x``."""
    guards.check_log(x)
    _check_vjp("log", g, out, x.shape, x.dtype)
    return (_arr(g / x),)


@ieee
def sin(x: Array) -> Array:
    """``sin(x)`` elementwise (``torch.sin``)."""
    guards.check_sin(x)
    return _arr(np.sin(x))


@ieee
def sin_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`sin`: ``g * cos(x)``."""
    guards.check_sin(x)
    _check_vjp("sin", g, out, x.shape, x.dtype)
    return (_arr(g * np.cos(x)),)


@ieee
def cos(x: Array) -> Array:
    """``cos(x)`` elementwise (``torch.cos``)."""
    guards.check_cos(x)
    return _arr(np.cos(x))


@ieee
def cos_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`cos`: ``-g * sin(x)``."""
    guards.check_cos(x)
    _check_vjp("cos", g, out, x.shape, x.dtype)
    return (_arr(g * -np.sin(x)),)


@ieee
def inv(x: Array) -> Array:
    """``1 / x`` elementwise (``torch.reciprocal``; inf at 0)."""
    guards.check_inv(x)
    return _arr(x.dtype.type(1) / x)


@ieee
def inv_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`inv`: ``-g * out**2``."""
    guards.check_inv(x)
    _check_vjp("inv", g, out, x.shape, x.dtype)
    return (_arr(-g * (out * out)),)


@ieee
def safe_log(x: Array, *, eps: float) -> Array:
    """``log(softplus(x) + eps)`` with ``eps > 0`` (the IR's ``safe_log``, anchor-runtime.md §4.3):
    finite for every finite x."""
    guards.check_safe_log(x, eps=eps)
    return _arr(np.log(_softplus(x) + x.dtype.type(eps)))


@ieee
def safe_log_vjp(g: Array, x: Array, *, out: Array, eps: float) -> Grads:
    """VJP of :func:`safe_log`: ``g * sigmoid(x) / (softplus(x) + eps)``."""
    guards.check_safe_log(x, eps=eps)
    _check_vjp("safe_log", g, out, x.shape, x.dtype)
    return (_arr(g * _sigmoid(x) / (_softplus(x) + x.dtype.type(eps))),)


# ===================================================================== softmax normalisations


def _as_rows(x: Array) -> Array:
    """A rank-0 tensor is normalised as one row of length 1 (torch accepts dim 0 / -1 there)."""
    return x.reshape(1) if x.ndim == 0 else x


def _softmax_core(x: Array, axis: int) -> Array:
    if x.shape[axis] == 0:
        return x.copy()
    shifted = x - np.max(x, axis=axis, keepdims=True)
    num = np.exp(shifted)
    return _arr(num / fold_sum(num, axis, keepdims=True))


def _softmax_vjp_core(g: Array, w: Array, axis: int) -> Array:
    return _arr(w * (g - fold_sum(_arr(g * w), axis, keepdims=True)))


@ieee
def softmax(x: Array, *, axis: int = -1) -> Array:
    """Softmax along ``axis``, max-shifted: ``exp(x - max) / sum(exp(x - max))`` with a left-fold
    denominator (``torch.softmax``).  A rank-0 input gives 1; an empty axis an empty result."""
    ax = guards.check_softmax(x, axis=axis)
    return _softmax_core(_as_rows(x), ax).reshape(x.shape)


@ieee
def softmax_vjp(g: Array, x: Array, *, out: Array, axis: int = -1) -> Grads:
    """VJP of :func:`softmax`: ``out * (g - sum(g * out))`` (left-fold row sum)."""
    ax = guards.check_softmax(x, axis=axis)
    _check_vjp("softmax", g, out, x.shape, x.dtype)
    return (_softmax_vjp_core(_as_rows(g), _as_rows(out), ax).reshape(x.shape),)


@ieee
def log_softmax(x: Array, *, axis: int = -1) -> Array:
    """Log-softmax along ``axis``: ``s - log(sum(exp(s)))`` with ``s = x - max`` and a left-fold
    sum (``torch.log_softmax``).  A rank-0 input gives 0."""
    ax = guards.check_log_softmax(x, axis=axis)
    rows = _as_rows(x)
    if rows.shape[ax] == 0:
        return x.copy()
    shifted = rows - np.max(rows, axis=ax, keepdims=True)
    return _arr(shifted - np.log(fold_sum(np.exp(shifted), ax, keepdims=True))).reshape(x.shape)


@ieee
def log_softmax_vjp(g: Array, x: Array, *, out: Array, axis: int = -1) -> Grads:
    """VJP of :func:`log_softmax`: ``g - exp(out) * sum(g)`` (left-fold row sums). At the one
    entry of a row whose probability ``exp(out)`` exceeds 1/2, if any, it is evaluated as
    ``(g - sum(g)) + rest * sum(g)``, ``rest`` the left-fold sum of the row's other
    probabilities (``1 - exp(out)`` there, without its cancellation): a confident class's ``out``
    rounds to 0 and ``exp(out)`` to 1, so the first form gave 0 for float32 logits 20 apart where
    the gradient is -2.06e-9, as torch's backward does (review166 F2)."""
    ax = guards.check_log_softmax(x, axis=axis)
    _check_vjp("log_softmax", g, out, x.shape, x.dtype)
    rows_g, rows_out = _as_rows(g), _as_rows(out)
    total = fold_sum(rows_g, ax, keepdims=True)
    probabilities = np.exp(rows_out)
    # at most one entry a row (the probabilities sum to 1); a row whose cotangent sum is not finite
    # keeps the first form, whose inf - inf the second would turn into NaN (review171 F2)
    likely = (rows_out > x.dtype.type(-math.log(2.0))) & np.isfinite(total)
    rest = fold_sum(np.where(likely, x.dtype.type(0), probabilities), ax, keepdims=True)
    grad = np.where(likely, (rows_g - total) + rest * total, rows_g - probabilities * total)
    return (_arr(grad).reshape(x.shape),)


def _hard_masked_core(scores: Array, allowed: Array, axis: int) -> Array:
    """Hard-masked softmax of ``scores`` (``allowed`` already broadcast to their shape).

    Per row: ``m`` = max over allowed entries; numerator ``exp(s - m)`` at allowed entries and
    exactly 0 at blocked ones (selected with ``np.where``, so a NaN/inf score at a blocked entry is
    never read into arithmetic that reaches the output); weights = numerator / left-fold sum at
    allowed entries, and the quotient is selected again so that blocked entries stay exactly 0
    when the row's sum is NaN (an allowed NaN or +inf score, or every allowed score -inf: the
    allowed weights are then NaN, as ``torchlean.spec.hard_masked_softmax``).
    Fully blocked rows give zeros (anchor-runtime.md §5.2).
    """
    dtype = scores.dtype
    zero = dtype.type(0)
    if scores.shape[axis] == 0:
        return scores.copy()
    any_allowed = np.any(allowed, axis=axis, keepdims=True)
    safe = np.where(allowed, scores, zero)
    row_max = np.max(np.where(allowed, safe, dtype.type(-np.inf)), axis=axis, keepdims=True)
    row_max = np.where(any_allowed, row_max, zero)
    num = np.where(allowed, np.exp(safe - row_max), zero)
    den = fold_sum(_arr(num), axis, keepdims=True)
    return _arr(np.where(allowed, num / np.where(any_allowed, den, dtype.type(1)), zero))


def _hard_masked_vjp_core(g: Array, w: Array, allowed: Array, axis: int) -> Array:
    """VJP of the hard-masked softmax with the mask constant: ``w * (g - sum(g * w))`` at allowed
    entries, exactly 0 at blocked ones: the row sum runs over allowed entries only (a blocked
    product is selected away, whatever ``g`` or ``w`` hold there), as
    ``torchlean.spec.scaled_dot_product_attention_backward``'s ``dS``."""
    zero = g.dtype.type(0)
    dot = fold_sum(_arr(np.where(allowed, g * w, zero)), axis, keepdims=True)
    return _arr(np.where(allowed, w * (g - dot), zero))


@ieee
def hard_masked_softmax(x: Array, mask: Array, *, axis: int = -1) -> Array:
    """Softmax over the allowed entries of each row along ``axis``.

    ``x``: float scores; ``mask``: bool, broadcastable to ``x.shape``, True = allowed.  Blocked
    entries are exactly 0, fully blocked rows are all 0, and NaN/inf at blocked positions never
    reach the output (anchor-runtime.md §5.2; the finite encoding of
    ``masked_fill(~mask, -inf)`` followed by ``torch.softmax``).  A rank-0 score gives 1 if allowed
    else 0.  Raises :class:`GuardError` for a non-boolean mask.
    """
    ax = guards.check_hard_masked_softmax(x, mask, axis=axis)
    allowed = np.broadcast_to(mask, x.shape)
    return _hard_masked_core(_as_rows(x), _as_rows(allowed), ax).reshape(x.shape)


@ieee
def hard_masked_softmax_vjp(g: Array, x: Array, mask: Array, *, out: Array, axis: int = -1) -> Grads:
    """VJP of :func:`hard_masked_softmax` with the mask constant: ``(dx, None)``.  ``dx`` is 0 at
    blocked entries and on fully blocked rows, whatever ``g`` or ``x`` hold there."""
    ax = guards.check_hard_masked_softmax(x, mask, axis=axis)
    _check_vjp("hard_masked_softmax", g, out, x.shape, x.dtype)
    allowed = _as_rows(np.broadcast_to(mask, x.shape))
    return _hard_masked_vjp_core(_as_rows(g), _as_rows(out), allowed, ax).reshape(x.shape), None


# ================================================================================== reductions


def _count(shape: Sequence[int], axes: Sequence[int]) -> int:
    count = 1
    for ax in axes:
        count *= shape[ax]
    return count


def _expand_reduced(g: Array, shape: Sequence[int], axes: Sequence[int]) -> Array:
    kept = tuple(1 if ax in axes else s for ax, s in enumerate(shape))
    return np.broadcast_to(g.reshape(kept), tuple(shape)).copy()


@ieee
def reduce_sum(x: Array, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """Sum over ``axis`` (int, non-empty tuple, or None = all) as one left fold over the reduced
    elements in row-major order (``torch.sum``).  An empty reduction gives 0."""
    axes = guards.check_reduce_sum(x, axis=axis, keepdims=keepdims)
    return fold_sum_axes(x, axes, keepdims=keepdims)


@ieee
def reduce_sum_vjp(g: Array, x: Array, *, out: Array, axis: Axis = None, keepdims: bool = False) -> Grads:
    """VJP of :func:`reduce_sum`: ``g`` broadcast back over the reduced axes."""
    axes = guards.check_reduce_sum(x, axis=axis, keepdims=keepdims)
    _check_vjp("reduce_sum", g, out, guards.reduced_shape(x.shape, axes, keepdims), x.dtype)
    return (_expand_reduced(g, x.shape, axes),)


@ieee
def reduce_mean(x: Array, *, axis: Axis = None, keepdims: bool = False) -> Array:
    """Mean over ``axis``: the left-fold sum divided by the element count in ``x.dtype``
    (``torch.mean``; an empty reduction gives NaN, as torch)."""
    axes = guards.check_reduce_mean(x, axis=axis, keepdims=keepdims)
    total = fold_sum_axes(x, axes, keepdims=keepdims)
    return _arr(total / x.dtype.type(_count(x.shape, axes)))


@ieee
def reduce_mean_vjp(g: Array, x: Array, *, out: Array, axis: Axis = None, keepdims: bool = False) -> Grads:
    """VJP of :func:`reduce_mean`: ``g / count`` broadcast back over the reduced axes."""
    axes = guards.check_reduce_mean(x, axis=axis, keepdims=keepdims)
    _check_vjp("reduce_mean", g, out, guards.reduced_shape(x.shape, axes, keepdims), x.dtype)
    scaled = _arr(g / x.dtype.type(_count(x.shape, axes)))
    return (_expand_reduced(scaled, x.shape, axes),)


@ieee
def mse_loss(a: Array, b: Array) -> Array:
    """Mean squared residual ``sum((a - b)**2) / n`` as a rank-0 array; the sum is one left fold in
    row-major order (``torch.nn.functional.mse_loss``, reduction 'mean'; NaN for empty inputs)."""
    guards.check_mse_loss(a, b)
    squares = _arr(a - b)
    np.multiply(squares, squares, out=squares)  # in place: one temporary the size of the input
    total = fold_sum_axes(squares, tuple(range(a.ndim)))
    return _arr(total / a.dtype.type(a.size))


@ieee
def mse_loss_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`mse_loss`: ``(2 g (a - b) / n, -2 g (a - b) / n)``."""
    guards.check_mse_loss(a, b)
    _check_vjp("mse_loss", g, out, (), a.dtype)
    coef = g * a.dtype.type(2) / a.dtype.type(a.size)
    da = _arr(coef * (a - b))
    return da, _arr(-da)


# ======================================================================================= views


@ieee
def reshape(x: Array, *, shape: Sequence[int]) -> Array:
    """Row-major reshape to ``shape`` (one ``-1`` may be inferred; ``torch.reshape``)."""
    target = guards.check_reshape(x, shape=shape)
    return x.reshape(target).copy()


@ieee
def reshape_vjp(g: Array, x: Array, *, out: Array, shape: Sequence[int]) -> Grads:
    """VJP of :func:`reshape`: ``g`` reshaped to ``x.shape``."""
    target = guards.check_reshape(x, shape=shape)
    _check_vjp("reshape", g, out, target, x.dtype)
    return (g.reshape(x.shape).copy(),)


@ieee
def permute(x: Array, *, perm: Sequence[int]) -> Array:
    """Axis permutation: output axis ``i`` is input axis ``perm[i]`` (``torch.permute``)."""
    axes = guards.check_permute(x, perm=perm)
    return np.transpose(x, axes).copy()


@ieee
def permute_vjp(g: Array, x: Array, *, out: Array, perm: Sequence[int]) -> Grads:
    """VJP of :func:`permute`: ``g`` permuted by the inverse permutation."""
    axes = guards.check_permute(x, perm=perm)
    _check_vjp("permute", g, out, tuple(x.shape[a] for a in axes), x.dtype)
    inverse = [0] * len(axes)
    for i, a in enumerate(axes):
        inverse[a] = i
    return (np.transpose(g, inverse).copy(),)


@ieee
def broadcast(x: Array, *, shape: Sequence[int]) -> Array:
    """``x`` broadcast (numpy rules) to ``shape`` and materialised (``torch.broadcast_to``)."""
    target = guards.check_broadcast(x, shape=shape)
    return np.broadcast_to(x, target).copy()


@ieee
def broadcast_vjp(g: Array, x: Array, *, out: Array, shape: Sequence[int]) -> Grads:
    """VJP of :func:`broadcast`: ``g`` summed (left fold) back to ``x.shape``."""
    target = guards.check_broadcast(x, shape=shape)
    _check_vjp("broadcast", g, out, target, x.dtype)
    return (sum_to_shape(g, x.shape),)


@ieee
def concat(*xs: Array, axis: int = 0) -> Array:
    """Concatenation of one or more arrays along ``axis`` (``torch.cat``)."""
    guards.check_concat(*xs, axis=axis)
    return np.concatenate(xs, axis=axis)


@ieee
def concat_vjp(g: Array, *xs: Array, out: Array, axis: int = 0) -> Grads:
    """VJP of :func:`concat`: the slices of ``g`` that each input occupied."""
    shape = guards.check_concat(*xs, axis=axis)
    _check_vjp("concat", g, out, shape, xs[0].dtype)
    ax = axis % g.ndim
    grads: list[Array | None] = []
    start = 0
    for x in xs:
        index = tuple(
            builtins.slice(start, start + x.shape[ax]) if d == ax else builtins.slice(None)
            for d in range(g.ndim)
        )
        grads.append(g[index].copy())
        start += x.shape[ax]
    return tuple(grads)


@ieee
def slice(
    x: Array,
    *,
    starts: Sequence[int],
    stops: Sequence[int],  # the op label is `slice`
    steps: Sequence[int] | None = None,
) -> Array:
    """``x[start0:stop0:step0, start1:stop1:step1, ...]`` with one bound per axis,
    ``0 <= start <= stop <= extent`` and ``step >= 1`` (``torch`` basic slicing)."""
    bounds = guards.check_slice(x, starts=starts, stops=stops, steps=steps)
    return np.array(x[guards.slice_index(bounds)], copy=True)  # a 0-d array stays an array (not a scalar)


@ieee
def slice_vjp(
    g: Array,
    x: Array,
    *,
    out: Array,
    starts: Sequence[int],
    stops: Sequence[int],
    steps: Sequence[int] | None = None,
) -> Grads:
    """VJP of :func:`slice`: ``g`` scattered into zeros of ``x.shape`` at the sliced positions."""
    bounds = guards.check_slice(x, starts=starts, stops=stops, steps=steps)
    index = guards.slice_index(bounds)
    grad = np.zeros(x.shape, dtype=x.dtype)
    _check_vjp("slice", g, out, grad[index].shape, x.dtype)
    grad[index] = g
    return (grad,)


def _prefix(arr: Array, extents: Sequence[int], axis: int | None) -> Array:
    """The view ``arr[:extents[0], :extents[1], ...]``, leaving ``axis`` (if any) whole."""
    return arr[
        tuple(builtins.slice(None) if d == axis else builtins.slice(0, e) for d, e in enumerate(extents))
    ]


def _scatter_add_into(target: Array, index: Array, src: Array, axis: int) -> None:
    """``target[..., index[..., j, ...], ...] += src[..., j, ...]`` in place (torch.scatter_add_).

    Loops over the scatter axis ``j`` in increasing order; within one ``j`` every element hits a
    distinct target, so repeated indices accumulate in index order (a fixed left fold that starts
    from the target's value).
    """
    region = _prefix(target, index.shape, axis)
    source = _prefix(src, index.shape, None)
    for j in range(index.shape[axis]):
        step = tuple(
            builtins.slice(j, j + 1) if d == axis else builtins.slice(None) for d in range(index.ndim)
        )
        idx = index[step]
        current = np.take_along_axis(region, idx, axis=axis)
        np.put_along_axis(region, idx, current + source[step], axis=axis)


@ieee
def gather(x: Array, index: Array, *, axis: int) -> Array:
    """``torch.gather``: ``out[i][j][k] = x[i][index[i][j][k]][k]`` (axis 1); ``index`` int64 of
    ``x``'s rank, output shape ``index.shape``."""
    guards.check_gather(x, index, axis=axis)
    ax = axis % x.ndim
    return np.take_along_axis(_prefix(x, index.shape, ax), index, axis=ax)


@ieee
def gather_vjp(g: Array, x: Array, index: Array, *, out: Array, axis: int) -> Grads:
    """VJP of :func:`gather`: ``(scatter_add(zeros_like(x), index, g), None)``; repeated indices
    accumulate in index order."""
    shape = guards.check_gather(x, index, axis=axis)
    _check_vjp("gather", g, out, shape, x.dtype)
    grad = np.zeros(x.shape, dtype=x.dtype)
    _scatter_add_into(grad, index, g, axis % x.ndim)
    return grad, None


@ieee
def scatter_add(base: Array, index: Array, src: Array, *, axis: int) -> Array:
    """``torch.scatter_add(base, axis, index, src)``: a copy of ``base`` with
    ``out[i][index[i][j][k]][k] += src[i][j][k]`` (axis 1); repeated indices accumulate in index
    order along ``axis`` (fixed left)."""
    guards.check_scatter_add(base, index, src, axis=axis)
    result = base.copy()
    _scatter_add_into(result, index, src, axis % base.ndim)
    return result


@ieee
def scatter_add_vjp(g: Array, base: Array, index: Array, src: Array, *, out: Array, axis: int) -> Grads:
    """VJP of :func:`scatter_add`: ``(g, None, dsrc)`` with ``dsrc`` = ``g`` gathered at the
    indices (zeros where ``src`` extends beyond ``index``)."""
    shape = guards.check_scatter_add(base, index, src, axis=axis)
    _check_vjp("scatter_add", g, out, shape, base.dtype)
    ax = axis % base.ndim
    dsrc = np.zeros(src.shape, dtype=src.dtype)
    _prefix(dsrc, index.shape, None)[...] = np.take_along_axis(_prefix(g, index.shape, ax), index, axis=ax)
    return g.copy(), None, dsrc


# ================================================================================ contractions


def _promote(a: Array, b: Array) -> tuple[Array, Array]:
    """torch.matmul's 1-D promotion: a 1-D ``a`` becomes ``(1, K)``, a 1-D ``b`` becomes ``(K, 1)``."""
    return (a[None, :] if a.ndim == 1 else a), (b[:, None] if b.ndim == 1 else b)


def _swap(x: Array) -> Array:
    return np.swapaxes(x, -1, -2)


@ieee
def matmul(a: Array, b: Array) -> Array:
    """``torch.matmul`` semantics (1-D promotion, broadcast batch axes) with a left fold over the
    contracted axis in the operands' dtype: entry ``[m, n]`` is
    ``((a[m,0] b[0,n] + a[m,1] b[1,n]) + ...)``.  Never BLAS."""
    shape = guards.check_matmul(a, b)
    a2, b2 = _promote(a, b)
    return fold_matmul(a2, b2).reshape(shape)


@ieee
def matmul_vjp(
    g: Array, a: Array, b: Array, *, out: Array, needs_input_grad: Sequence[bool] | None = None
) -> Grads:
    """VJP of :func:`matmul`: ``(g b^T, a^T g)``, reduced to the operands' shapes (broadcast batch
    axes summed in the same left fold as the contracted axis, :func:`fold_matmul_to`) and
    un-promoted. ``needs_input_grad`` (one bool per operand,
    default all): an operand marked False gets ``None`` and its contraction is not computed."""
    shape = guards.check_matmul(a, b)
    _check_vjp("matmul", g, out, shape, a.dtype)
    need_a, need_b = (True, True) if needs_input_grad is None else needs_input_grad
    a2, b2 = _promote(a, b)
    batch = np.broadcast_shapes(a2.shape[:-2], b2.shape[:-2])
    g2 = g.reshape((*batch, a2.shape[-2], b2.shape[-1]))
    da = fold_matmul_to(a2.shape, g2, _swap(b2)).reshape(a.shape) if need_a else None
    db = fold_matmul_to(b2.shape, _swap(a2), g2).reshape(b.shape) if need_b else None
    return da, db


@ieee
def linear(x: Array, w: Array, b: Array | None = None) -> Array:
    """``fold_matmul(x, w^T) + b`` (``torch.nn.functional.linear``): ``x (..., in)``, ``w (out, in)``,
    ``b (out,)`` or None; the product is a left fold over ``in``, the bias is added last."""
    shape = guards.check_linear(x, w, b)
    rows = x.reshape((math.prod(x.shape[:-1]), w.shape[1]))  # not -1: x may hold no element
    y = fold_matmul(rows, _swap(w))
    if b is not None:
        y = _arr(y + b)
    return y.reshape(shape)


@ieee
def linear_vjp(
    g: Array,
    x: Array,
    w: Array,
    b: Array | None = None,
    *,
    out: Array,
    needs_input_grad: Sequence[bool] | None = None,
) -> Grads:
    """VJP of :func:`linear`: ``(fold_matmul(g, w), fold_matmul(g^T, x), fold_sum(g rows))`` (the
    weight and bias gradients fold over all leading rows in row-major order); ``None`` for an absent bias and
    for an input marked False in ``needs_input_grad`` (default all), whose fold is skipped."""
    shape = guards.check_linear(x, w, b)
    _check_vjp("linear", g, out, shape, x.dtype)
    need_x, need_w, need_b = (True, True, True) if needs_input_grad is None else needs_input_grad
    rows = x.reshape((math.prod(x.shape[:-1]), w.shape[1]))
    g_rows = g.reshape((rows.shape[0], w.shape[0]))
    dx = fold_matmul(g_rows, w).reshape(x.shape) if need_x else None
    dw = fold_matmul(_swap(g_rows), rows) if need_w else None
    db = None if b is None or not need_b else fold_sum(g_rows, 0)
    return dx, dw, db


# ==================================================================================== attention


def _attention_scale(q: Array, scale: float | None) -> np.floating[npt.NBitBase]:
    d = q.shape[-1]
    value = (1.0 / math.sqrt(d) if d > 0 else 1.0) if scale is None else float(scale)
    result: np.floating[npt.NBitBase] = q.dtype.type(value)
    return result


def _attention_weights(
    q: Array, k: Array, v: Array, mask: Array | None, scale: float | None
) -> tuple[Array, Array | None, np.floating[npt.NBitBase]]:
    """Scaled scores, softmax or hard-masked softmax; weights broadcast to the full batch."""
    factor = _attention_scale(q, scale)
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    full = (*batch, q.shape[-2], k.shape[-2])
    scores = np.broadcast_to(fold_matmul(q, _swap(k)) * factor, full)
    if mask is None:
        return _softmax_core(scores, scores.ndim - 1), None, factor
    allowed = np.broadcast_to(mask, full)
    return _hard_masked_core(scores, allowed, scores.ndim - 1), allowed, factor


@ieee
def scaled_dot_product_attention(
    q: Array, k: Array, v: Array, mask: Array | None = None, *, scale: float | None = None
) -> Array:
    """Composed reference attention (``reference.attention``; anchor-runtime.md §5.1-5.2).

    ``q (..., nQ, d)``, ``k (..., nK, d)``, ``v (..., nK, dv)`` with broadcast leading axes;
    ``mask`` bool broadcastable to ``(..., nQ, nK)``, True = the key may be attended.  Scores
    ``q k^T * scale`` (default ``1/sqrt(d)``, 1 when ``d == 0``), row softmax (hard-masked when a
    mask is given), output ``fold_matmul(weights, v)`` (``fold_matmul_where(weights, v, allowed)``
    with a mask) — all contractions left folds over the contracted axis in increasing order.  With
    a mask, blocked (query, key) pairs are selected away in every contraction (a blocked term is
    ``+0.0``), so fully masked rows are zeros and
    NaN/inf at blocked positions never reach the output.  The shapes, broadcasting and mask
    polarity of ``torch.nn.functional.scaled_dot_product_attention`` with a boolean
    ``attn_mask``; where they differ (torch 2.13 propagates NaN/inf from blocked positions; the
    order of scaling; rows whose allowed scores are all -inf) is listed in
    :func:`torchlean.functional.scaled_dot_product_attention`.
    """
    guards.check_scaled_dot_product_attention(q, k, v, mask, scale=scale)
    weights, allowed, _ = _attention_weights(q, k, v, mask, scale)
    if allowed is None:
        return fold_matmul(weights, v)
    return fold_matmul_where(weights, v, allowed)


@ieee
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
    """VJP of :func:`scaled_dot_product_attention`: ``(dq, dk, dv, None)``.

    Recomputes the weights ``W`` from ``q, k, v, mask`` (the saved output is not needed), then
    ``dW = g v^T``, ``dv = W^T g``, ``dS = softmax-VJP(dW) * scale`` (hard-masked VJP with the
    mask constant), ``dq = dS k``, ``dk = dS^T q`` (anchor-runtime.md §5.1), each reduced to its
    operand's shape, broadcast leading axes (K/V shared across heads) in the same left fold as the
    contracted axis (:func:`fold_matmul_to`).  Blocked pairs are selected away, so fully masked rows get zero
    gradients and NaN/inf at blocked positions never leak.
    """
    shape = guards.check_scaled_dot_product_attention(q, k, v, mask, scale=scale)
    _check_vjp("scaled_dot_product_attention", g, out, shape, q.dtype)
    weights, allowed, factor = _attention_weights(q, k, v, mask, scale)
    d_weights = fold_matmul(g, _swap(v))
    last = weights.ndim - 1
    if allowed is None:
        d_scores = _softmax_vjp_core(d_weights, weights, last) * factor
        dq = fold_matmul_to(q.shape, d_scores, k)
        dk = fold_matmul_to(k.shape, _swap(d_scores), q)
        dv = fold_matmul_to(v.shape, _swap(weights), g)
    else:
        d_scores = _hard_masked_vjp_core(d_weights, weights, allowed, last) * factor
        dq = fold_matmul_to(q.shape, d_scores, k, allowed)
        dk = fold_matmul_to(k.shape, _swap(d_scores), q, _swap(allowed))
        dv = fold_matmul_to(v.shape, _swap(weights), g, _swap(allowed))
    return dq, dk, dv, None


# =============================================================================== random sources

_MASK64 = (1 << 64) - 1
_GOLDEN = np.uint64(0x9E3779B97F4A7C15)
_MIX1 = np.uint64(0xBF58476D1CE4E5B9)
_MIX2 = np.uint64(0x94D049BB133111EB)


def splitmix64(x: Array) -> Array:
    """SplitMix64 finaliser on a uint64 array (all arithmetic mod 2**64; anchor-runtime.md §1.6):
    ``z1 = x + 0x9e3779b97f4a7c15``, ``z2 = (z1 ^ z1>>30) * 0xbf58476d1ce4e5b9``,
    ``z3 = (z2 ^ z2>>27) * 0x94d049bb133111eb``, result ``z3 ^ z3>>31``.

    Memory: the result and one scratch array of its size (the steps run in place, review243 F7)."""
    z = np.array(x, dtype=np.uint64)  # a fresh copy, mixed in place
    return _splitmix64_inplace(z, np.empty_like(z))


_SHIFT30, _SHIFT27, _SHIFT31 = np.uint64(30), np.uint64(27), np.uint64(31)


def _splitmix64_inplace(z: Array, scratch: Array) -> Array:
    """:func:`splitmix64` of the uint64 array ``z``, written over ``z`` (returned); ``scratch``
    is a uint64 array of ``z``'s shape whose contents are overwritten. The same ufuncs as the
    formula, in the same order, with ``out=``: the bits are the formula's."""
    np.add(z, _GOLDEN, out=z)
    for shift, factor in ((_SHIFT30, _MIX1), (_SHIFT27, _MIX2)):
        np.right_shift(z, shift, out=scratch)
        np.bitwise_xor(z, scratch, out=z)
        np.multiply(z, factor, out=z)
    np.right_shift(z, _SHIFT31, out=scratch)
    np.bitwise_xor(z, scratch, out=z)
    return z


def key_of(seed: int, counter: int) -> int:
    """``keyOf(seed, counter) = splitmix64(u64(seed) + u64(counter))`` as a Python int."""
    total = np.array([(seed + counter) & _MASK64], dtype=np.uint64)
    return int(splitmix64(total)[0])


SAMPLE_BLOCK = 1 << 20
"""How many indices the random sources draw at once (:func:`_sample_blocks`): their temporaries
are a few arrays of this length (8 MiB each for uint64 and float64), whatever the output's size."""


def _sample_blocks(key: int, count: int, denom: int) -> Iterator[tuple[int, int, Array]]:
    """``(start, stop, sampleNat(key, start..stop-1, denom))`` for consecutive blocks of at most
    :data:`SAMPLE_BLOCK` indices covering ``0..count-1``. Element ``i`` depends on ``(key, i)``
    alone, so drawing by blocks gives the bits of drawing all at once; each block's arrays are
    reused for the next (the yielded array is overwritten by the next step)."""
    if count <= 0:
        return
    size = builtins.min(count, SAMPLE_BLOCK)
    z = np.empty(size, dtype=np.uint64)
    scratch = np.empty(size, dtype=np.uint64)
    offset = np.uint64(key & _MASK64)
    divisor = np.uint64(denom)
    for start in range(0, count, size):
        stop = builtins.min(start + size, count)
        block, spare = z[: stop - start], scratch[: stop - start]
        block[...] = np.arange(start, stop, dtype=np.uint64)
        np.add(block, offset, out=block)  # key + u64(i), mod 2**64
        _splitmix64_inplace(block, spare)
        np.remainder(block, divisor, out=block)
        yield start, stop, block


def sample_nat(key: int, count: int, denom: int = 1 << 32) -> Array:
    """``sampleNat(key, i, denom) = splitmix64(key + u64(i)) mod denom`` for ``i = 0..count-1``
    (uint64 array of length ``count``). Memory: the result plus one block's temporaries
    (:data:`SAMPLE_BLOCK`), drawn block by block (review243 F7)."""
    out = np.empty(builtins.max(count, 0), dtype=np.uint64)
    for start, stop, block in _sample_blocks(key, count, denom):
        out[start:stop] = block
    return out


def _uniform(
    shape: tuple[int, ...],
    seed: int,
    counter: int,
    dtype: np.dtype[np.floating],
    keep_prob: float | None = None,
) -> Array:
    """The :func:`rand_uniform` draws of ``shape`` in ``dtype``, or with ``keep_prob`` the
    :func:`bernoulli_mask` made of them (``1`` where ``keep_prob > u``, else ``0``, in ``dtype``).
    The output is allocated once and filled block by block (:func:`_sample_blocks`): the peak is
    the output plus about 40 MiB of block temporaries, not several uint64 and float64 arrays of
    the full size (review243 F7: 6x the float32 output)."""
    count = math.prod(shape)
    out = np.empty(shape, dtype=dtype)
    flat = out.reshape(-1)  # a view: out is fresh and C-contiguous
    scale = float(1 << 32)
    size = builtins.min(count, SAMPLE_BLOCK)
    grid = np.empty(size, dtype=np.float64)
    keep = None if keep_prob is None else np.empty(size, dtype=np.bool_)
    threshold = dtype.type(keep_prob or 0)
    for start, stop, block in _sample_blocks(key_of(seed, counter), count, 1 << 32):
        values, target = grid[: stop - start], flat[start:stop]
        values[...] = block  # u < 2**32: exact in float64
        np.divide(values, scale, out=values)
        # Dividing by 2**32 is exact, so rounding once to the target dtype equals computing
        # u / 2**32 in that dtype (the original's schedule).
        target[...] = values
        if keep is not None:
            kept = keep[: stop - start]
            np.greater(threshold, target, out=kept)  # strict, both in dtype
            target[...] = kept
    return out


def rand_uniform(
    *, shape: Sequence[int], seed: int, counter: int, dtype: npt.DTypeLike = np.float32
) -> Array:
    """Deterministic uniform tensor: element at row-major index ``i`` is
    ``sampleNat(keyOf(seed, counter), i) / 2**32`` rounded to ``dtype`` (so in ``[0, 1]``; float32
    can round values within 2**-25 of 1 up to exactly 1, as the original does).  Forward only.
    A source has no array input: its layout guard checks the array it produces."""
    dims, resolved = guards.check_rand_uniform(shape=shape, seed=seed, counter=counter, dtype=dtype)
    out = _uniform(dims, seed, counter, resolved)
    return guards.check_canonical_layout(out, op="rand_uniform", name="out")


def bernoulli_mask(
    *, shape: Sequence[int], keep_prob: float, seed: int, counter: int, dtype: npt.DTypeLike = np.float32
) -> Array:
    """Deterministic keep mask: element ``i`` is 1 if ``keep_prob > u_i`` (strict; both in
    ``dtype``) else 0, with ``u_i`` the :func:`rand_uniform` draw of the same key.  Forward only."""
    dims, resolved = guards.check_bernoulli_mask(
        shape=shape, keep_prob=keep_prob, seed=seed, counter=counter, dtype=dtype
    )
    mask = _uniform(dims, seed, counter, resolved, keep_prob)  # block by block: no full-size temporary
    return guards.check_canonical_layout(mask, op="bernoulli_mask", name="out")  # the produced layout
