"""Pointwise kernels of the ``aten`` provider: forwards and VJPs evaluated with torch CPU kernels.

The twenty pointwise ops of the reference catalog (add, sub, mul, scale, abs, sqrt, clamp, max,
min, relu, gelu, sigmoid, tanh, softplus, exp, log, sin, cos, inv, safe_log), each with the
signature, guard and rule of the reference kernel of the same label
(:mod:`torchlean.backend.providers.reference.kernels`):

* ``<op>(*inputs, **params)`` calls the reference guard ``reference.guards.check_<op>`` first
  (same refusals, same :class:`~torchlean.backend.errors.GuardError` messages), hands the operands
  to torch through :func:`~torchlean.backend.providers.aten.guards.check_aten_layout` (zero copy)
  and returns the torch result as a fresh C-contiguous numpy array (zero copy) in the input dtype;
* ``<op>_vjp(g, *inputs, out, **params)`` runs the same guard, checks ``g`` and ``out`` like the
  reference VJP, and evaluates the reference's backward rule with torch kernels: the same
  cotangent per input, reduced over broadcast axes with ``torch.sum`` back to the input's shape,
  in the input's dtype, as fresh arrays that alias no input, no ``g`` and no other cotangent.

Binary ops broadcast with numpy/PyTorch rules. Scalar parameters (``factor``, ``lo``, ``hi``,
``eps``) are rounded to the input dtype before use, as the reference does. Correctly rounded
elementwise operations (``+ - * /``, comparisons, selections) give the reference's values bit for
bit; transcendental functions (exp, log, tanh, erfc, ...) and torch's vectorised float32 ``sqrt``
may differ from numpy's by an ulp or a few (more in float32 tails: torch's float32 ``erfc`` is
1.1e-5 relative off near 1e-37, and its float32 ``sigmoid`` is 0 below about -88.7 where numpy's
keeps the subnormal value: review166), and the sign of a zero result may differ (torch's
``relu(-0.0)`` is ``-0.0``, its ``maximum`` picks either zero of a ``±0`` tie) — the differential
suites bound these differences. NaN propagates exactly where the reference propagates it, in
values and in gradients, which follow torch autograd's rules (at a NaN input ``abs``' gradient
is ``g * sign(NaN) = g * 0`` and ``relu``'s is ``g``), except sigmoid's and tanh's, evaluated from
``x`` as the reference's: where the output rounds to ±1 torch's backward cancels to 0 (an
infinite ``g`` there gives NaN), theirs keep the slope (``inf``; review166 F1).
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING

from torchlean.backend.providers.aten import guards as aten_guards
from torchlean.backend.providers.aten._common import Array, check_vjp, host, reduce_to, scalar_in
from torchlean.backend.providers.reference import guards

if TYPE_CHECKING:
    import torch

__all__ = [
    "abs",
    "abs_vjp",
    "add",
    "add_vjp",
    "clamp",
    "clamp_vjp",
    "cos",
    "cos_vjp",
    "exp",
    "exp_vjp",
    "gelu",
    "gelu_vjp",
    "inv",
    "inv_vjp",
    "log",
    "log_vjp",
    "max",
    "max_vjp",
    "min",
    "min_vjp",
    "mul",
    "mul_vjp",
    "relu",
    "relu_vjp",
    "safe_log",
    "safe_log_vjp",
    "scale",
    "scale_vjp",
    "sigmoid",
    "sigmoid_vjp",
    "sin",
    "sin_vjp",
    "softplus",
    "softplus_vjp",
    "sqrt",
    "sqrt_vjp",
    "sub",
    "sub_vjp",
    "tanh",
    "tanh_vjp",
]

Grads = tuple[Array | None, ...]
"""One cotangent per forward input, as the reference VJPs return."""

_SQRT_HALF = math.sqrt(0.5)
_INV_SQRT_2PI = 1.0 / math.sqrt(2.0 * math.pi)


def _grad_to(t: torch.Tensor, shape: tuple[int, ...], owned: bool) -> Array:
    """``t`` reduced to ``shape`` as a numpy array; copied when nothing was summed and ``t`` is not
    ``owned`` (it is ``g`` itself), so a cotangent never aliases ``g``."""
    reduced = reduce_to(t, shape)
    if reduced is t and not owned:
        reduced = t.clone()
    return host(reduced)


# ============================================================================ binary pointwise


def add(a: Array, b: Array) -> Array:
    """``torch.add(a, b)`` with broadcasting; float operands of one dtype (guard ``check_add``)."""
    import torch

    guards.check_add(a, b)
    ta, tb = aten_guards.check_aten_layout("add", a, b)
    return host(torch.add(ta, tb))


def add_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`add`: ``g`` summed back to each operand's shape."""
    shape = guards.check_add(a, b)
    check_vjp("add", g, out, shape, a.dtype)
    (tg,) = aten_guards.check_aten_layout("add", g)
    return _grad_to(tg, a.shape, False), _grad_to(tg, b.shape, False)


def sub(a: Array, b: Array) -> Array:
    """``torch.sub(a, b)`` with broadcasting (guard ``check_sub``)."""
    import torch

    guards.check_sub(a, b)
    ta, tb = aten_guards.check_aten_layout("sub", a, b)
    return host(torch.sub(ta, tb))


def sub_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`sub`: ``(g, -g)`` summed back to the operands' shapes."""
    import torch

    shape = guards.check_sub(a, b)
    check_vjp("sub", g, out, shape, a.dtype)
    (tg,) = aten_guards.check_aten_layout("sub", g)
    return _grad_to(tg, a.shape, False), _grad_to(torch.neg(tg), b.shape, True)


def mul(a: Array, b: Array) -> Array:
    """Elementwise ``torch.mul(a, b)`` with broadcasting (guard ``check_mul``)."""
    import torch

    guards.check_mul(a, b)
    ta, tb = aten_guards.check_aten_layout("mul", a, b)
    return host(torch.mul(ta, tb))


def mul_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`mul`: ``(g*b, g*a)`` summed back to the operands' shapes."""
    import torch

    shape = guards.check_mul(a, b)
    check_vjp("mul", g, out, shape, a.dtype)
    tg, ta, tb = aten_guards.check_aten_layout("mul", g, a, b)
    return _grad_to(torch.mul(tg, tb), a.shape, True), _grad_to(torch.mul(tg, ta), b.shape, True)


def max(a: Array, b: Array) -> Array:  # the op label is `max`
    """Elementwise ``torch.maximum(a, b)`` with broadcasting; NaN propagates (guard ``check_max``)."""
    import torch

    guards.check_max(a, b)
    ta, tb = aten_guards.check_aten_layout("max", a, b)
    return host(torch.maximum(ta, tb))


def _select_vjp(op: str, g: Array, a: Array, b: Array, a_wins: bool) -> Grads:
    """The reference ``max``/``min`` rule (torch's): the winner gets ``g``, the loser 0, a tie
    ``g/2`` each, and a NaN comparison (no loser) ``g`` to both."""
    import torch

    tg, ta, tb = aten_guards.check_aten_layout(op, g, a, b)
    half = torch.mul(tg, 0.5)
    tie = torch.eq(ta, tb)
    smaller, larger = torch.lt(ta, tb), torch.gt(ta, tb)
    a_loses, b_loses = (smaller, larger) if a_wins else (larger, smaller)
    ga = torch.where(tie, half, torch.where(a_loses, 0.0, tg))
    gb = torch.where(tie, half, torch.where(b_loses, 0.0, tg))
    return _grad_to(ga, a.shape, True), _grad_to(gb, b.shape, True)


def max_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`max`: ``g`` to the larger operand; ties give ``g/2`` to each (as torch)."""
    shape = guards.check_max(a, b)
    check_vjp("max", g, out, shape, a.dtype)
    return _select_vjp("max", g, a, b, True)


def min(a: Array, b: Array) -> Array:  # the op label is `min`
    """Elementwise ``torch.minimum(a, b)`` with broadcasting; NaN propagates (guard ``check_min``)."""
    import torch

    guards.check_min(a, b)
    ta, tb = aten_guards.check_aten_layout("min", a, b)
    return host(torch.minimum(ta, tb))


def min_vjp(g: Array, a: Array, b: Array, *, out: Array) -> Grads:
    """VJP of :func:`min`: ``g`` to the smaller operand; ties give ``g/2`` to each (as torch)."""
    shape = guards.check_min(a, b)
    check_vjp("min", g, out, shape, a.dtype)
    return _select_vjp("min", g, a, b, False)


# ============================================================================= unary pointwise


def scale(x: Array, *, factor: float) -> Array:
    """``x * factor`` with ``factor`` rounded to ``x.dtype`` first (guard ``check_scale``)."""
    import torch

    guards.check_scale(x, factor=factor)
    (tx,) = aten_guards.check_aten_layout("scale", x)
    return host(torch.mul(tx, scalar_in(factor, x.dtype)))


def scale_vjp(g: Array, x: Array, *, out: Array, factor: float) -> Grads:
    """VJP of :func:`scale`: ``g * factor``."""
    import torch

    guards.check_scale(x, factor=factor)
    check_vjp("scale", g, out, x.shape, x.dtype)
    (tg,) = aten_guards.check_aten_layout("scale", g)
    return (host(torch.mul(tg, scalar_in(factor, x.dtype))),)


def clamp(x: Array, *, lo: float, hi: float) -> Array:
    """``torch.clamp(x, lo, hi)`` = ``min(max(x, lo), hi)`` with the bounds rounded to ``x.dtype``;
    NaN stays NaN; needs ``lo <= hi`` (guard ``check_clamp``)."""
    import torch

    guards.check_clamp(x, lo=lo, hi=hi)
    (tx,) = aten_guards.check_aten_layout("clamp", x)
    return host(torch.clamp(tx, scalar_in(lo, x.dtype), scalar_in(hi, x.dtype)))


def clamp_vjp(g: Array, x: Array, *, out: Array, lo: float, hi: float) -> Grads:
    """VJP of :func:`clamp`: ``g`` where ``lo <= x <= hi`` (bounds inclusive, as torch up to 2.13;
    torch 2.14 gives 0 at a bound), else 0 (NaN included)."""
    import torch

    guards.check_clamp(x, lo=lo, hi=hi)
    check_vjp("clamp", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("clamp", g, x)
    inside = torch.logical_and(torch.ge(tx, scalar_in(lo, x.dtype)), torch.le(tx, scalar_in(hi, x.dtype)))
    return (host(torch.where(inside, tg, 0.0)),)


def abs(x: Array) -> Array:  # the op label is `abs`
    """``torch.abs(x)`` (guard ``check_abs``)."""
    import torch

    guards.check_abs(x)
    (tx,) = aten_guards.check_aten_layout("abs", x)
    return host(torch.abs(tx))


def abs_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`abs`: ``g * sign(x)`` with ``torch.sign`` (0 at ``x == 0`` and at NaN ``x``),
    torch's ``abs`` backward and the reference rule."""
    import torch

    guards.check_abs(x)
    check_vjp("abs", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("abs", g, x)
    return (host(torch.sign(tx).mul_(tg)),)


def sqrt(x: Array) -> Array:
    """``torch.sqrt(x)`` (NaN below 0; guard ``check_sqrt``)."""
    import torch

    guards.check_sqrt(x)
    (tx,) = aten_guards.check_aten_layout("sqrt", x)
    return host(torch.sqrt(tx))


def sqrt_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`sqrt`: ``g / (2 * out)`` (inf at 0, as torch)."""
    import torch

    guards.check_sqrt(x)
    check_vjp("sqrt", g, out, x.shape, x.dtype)
    tg, to = aten_guards.check_aten_layout("sqrt", g, out)
    return (host(torch.div(tg, torch.mul(to, 2.0))),)


def relu(x: Array) -> Array:
    """``torch.relu(x)``: ``max(x, 0)``, NaN stays NaN (guard ``check_relu``)."""
    import torch

    guards.check_relu(x)
    (tx,) = aten_guards.check_aten_layout("relu", x)
    return host(torch.relu(tx))


def relu_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`relu`: 0 where ``out <= 0``, else ``g`` (``g`` at a NaN input), by torch's
    own rule ``threshold_backward(g, out, 0)``, the reference's."""
    import torch

    guards.check_relu(x)
    check_vjp("relu", g, out, x.shape, x.dtype)
    tg, to = aten_guards.check_aten_layout("relu", g, out)
    return (host(torch.ops.aten.threshold_backward(tg, to, 0)),)


def _normal_cdf(tx: torch.Tensor) -> torch.Tensor:
    """``Phi(x) = erfc(-x / sqrt 2) / 2`` (no cancellation for negative x), in ``x``'s dtype."""
    import torch

    erfc: torch.Tensor = torch.special.erfc(torch.mul(tx, -_SQRT_HALF))
    return erfc.mul_(0.5)


def gelu(x: Array) -> Array:
    """Exact GELU ``x * Phi(x)`` with ``Phi(x) = erfc(-x / sqrt 2) / 2`` (the reference's form of
    ``torch.nn.functional.gelu``'s default ``approximate='none'``, not the tanh approximation),
    torch's erfc in ``x``'s dtype (guard ``check_gelu``)."""
    import torch

    guards.check_gelu(x)
    (tx,) = aten_guards.check_aten_layout("gelu", x)
    return host(torch.mul(tx, _normal_cdf(tx)))


def gelu_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`gelu`: ``g * (Phi(x) + x * phi(x))``, ``phi(x) = exp(-x^2/2) / sqrt(2 pi)``."""
    import torch

    guards.check_gelu(x)
    check_vjp("gelu", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("gelu", g, x)
    pdf = torch.mul(tx, tx).mul_(-0.5).exp_().mul_(_INV_SQRT_2PI)
    return (host(pdf.mul_(tx).add_(_normal_cdf(tx)).mul_(tg)),)


def sigmoid(x: Array) -> Array:
    """``torch.sigmoid(x)`` (guard ``check_sigmoid``)."""
    import torch

    guards.check_sigmoid(x)
    (tx,) = aten_guards.check_aten_layout("sigmoid", x)
    return host(torch.sigmoid(tx))


def sigmoid_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`sigmoid`: the reference's rule from ``x``, ``g * e / (1 + e)**2`` with
    ``e = exp(-|x|)`` (torch's ``sigmoid_backward``, ``g * out * (1 - out)``, cancels where the
    output rounds to 1: review166 F1)."""
    import torch

    guards.check_sigmoid(x)
    check_vjp("sigmoid", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("sigmoid", g, x)
    e = torch.abs(tx).neg_().exp_()
    squared = torch.add(e, 1.0).square_()
    return (host(e.div_(squared).mul_(tg)),)


def tanh(x: Array) -> Array:
    """``torch.tanh(x)`` (guard ``check_tanh``)."""
    import torch

    guards.check_tanh(x)
    (tx,) = aten_guards.check_aten_layout("tanh", x)
    return host(torch.tanh(tx))


def tanh_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`tanh`: the reference's rule from ``x``, ``g * 4e / (1 + e)**2`` with
    ``e = exp(-2|x|)`` (torch's ``tanh_backward``, ``g * (1 - out**2)``, cancels where the output
    rounds to ±1: review166 F1)."""
    import torch

    guards.check_tanh(x)
    check_vjp("tanh", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("tanh", g, x)
    e = torch.abs(tx).mul_(-2.0).exp_()
    squared = torch.add(e, 1.0).square_()
    return (host(e.mul_(4.0).div_(squared).mul_(tg)),)


def _softplus(tx: torch.Tensor) -> torch.Tensor:
    """``max(x, 0) + log1p(exp(-|x|))`` (the reference's overflow-free form, no threshold)."""
    import torch

    return torch.clamp_min(tx, 0.0).add_(torch.abs(tx).neg_().exp_().log1p_())


def softplus(x: Array) -> Array:
    """``log(1 + exp(x))`` (beta 1) as ``max(x, 0) + log1p(exp(-|x|))`` for every x, the
    reference's form (``torch.nn.functional.softplus`` would return ``x`` itself above 20)
    (guard ``check_softplus``)."""
    guards.check_softplus(x)
    (tx,) = aten_guards.check_aten_layout("softplus", x)
    return host(_softplus(tx))


def softplus_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`softplus`: ``g * sigmoid(x)``."""
    import torch

    guards.check_softplus(x)
    check_vjp("softplus", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("softplus", g, x)
    return (host(torch.sigmoid(tx).mul_(tg)),)


def exp(x: Array) -> Array:
    """``torch.exp(x)`` (guard ``check_exp``)."""
    import torch

    guards.check_exp(x)
    (tx,) = aten_guards.check_aten_layout("exp", x)
    return host(torch.exp(tx))


def exp_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`exp`: ``g * out``."""
    import torch

    guards.check_exp(x)
    check_vjp("exp", g, out, x.shape, x.dtype)
    tg, to = aten_guards.check_aten_layout("exp", g, out)
    return (host(torch.mul(tg, to)),)


def log(x: Array) -> Array:
    """``torch.log(x)`` (``-inf`` at 0, NaN below; guard ``check_log``)."""
    import torch

    guards.check_log(x)
    (tx,) = aten_guards.check_aten_layout("log", x)
    return host(torch.log(tx))


def log_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`log`: ``g / x``."""
    import torch

    guards.check_log(x)
    check_vjp("log", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("log", g, x)
    return (host(torch.div(tg, tx)),)


def sin(x: Array) -> Array:
    """``torch.sin(x)`` (guard ``check_sin``)."""
    import torch

    guards.check_sin(x)
    (tx,) = aten_guards.check_aten_layout("sin", x)
    return host(torch.sin(tx))


def sin_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`sin`: ``g * cos(x)``."""
    import torch

    guards.check_sin(x)
    check_vjp("sin", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("sin", g, x)
    return (host(torch.cos(tx).mul_(tg)),)


def cos(x: Array) -> Array:
    """``torch.cos(x)`` (guard ``check_cos``)."""
    import torch

    guards.check_cos(x)
    (tx,) = aten_guards.check_aten_layout("cos", x)
    return host(torch.cos(tx))


def cos_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`cos`: ``-g * sin(x)``."""
    import torch

    guards.check_cos(x)
    check_vjp("cos", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("cos", g, x)
    return (host(torch.sin(tx).neg_().mul_(tg)),)


def inv(x: Array) -> Array:
    """``torch.reciprocal(x)`` = ``1 / x`` (inf at 0; guard ``check_inv``)."""
    import torch

    guards.check_inv(x)
    (tx,) = aten_guards.check_aten_layout("inv", x)
    return host(torch.reciprocal(tx))


def inv_vjp(g: Array, x: Array, *, out: Array) -> Grads:
    """VJP of :func:`inv`: ``-g * out**2``."""
    import torch

    guards.check_inv(x)
    check_vjp("inv", g, out, x.shape, x.dtype)
    tg, to = aten_guards.check_aten_layout("inv", g, out)
    return (host(torch.mul(to, to).mul_(tg).neg_()),)


def safe_log(x: Array, *, eps: float) -> Array:
    """``log(softplus(x) + eps)`` with ``eps > 0`` rounded to ``x.dtype`` (the IR's ``safe_log``,
    anchor-runtime.md §4.3; guard ``check_safe_log``)."""
    guards.check_safe_log(x, eps=eps)
    (tx,) = aten_guards.check_aten_layout("safe_log", x)
    return host(_softplus(tx).add_(scalar_in(eps, x.dtype)).log_())


def safe_log_vjp(g: Array, x: Array, *, out: Array, eps: float) -> Grads:
    """VJP of :func:`safe_log`: ``g * sigmoid(x) / (softplus(x) + eps)``."""
    import torch

    guards.check_safe_log(x, eps=eps)
    check_vjp("safe_log", g, out, x.shape, x.dtype)
    tg, tx = aten_guards.check_aten_layout("safe_log", g, x)
    denominator = _softplus(tx).add_(scalar_in(eps, x.dtype))
    return (host(torch.sigmoid(tx).mul_(tg).div_(denominator)),)
