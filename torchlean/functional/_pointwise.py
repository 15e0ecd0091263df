"""Unary elementwise functions: activations (``relu``, ``gelu``, ``tanh``, ``sigmoid``,
``softplus``), ``exp``, ``log``, ``sin``, ``cos``, ``sqrt``, ``abs``, ``clamp`` and ``safe_log``;
each records one op of the same name."""

from __future__ import annotations

import math

from torchlean.autograd.session import run_op
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._params import _real
from torchlean.tensor import RealLike, Tensor, TensorTypeError, _preview


def _unary(op: BackendOp, x: Tensor) -> Tensor:
    return run_op(op, (x,), {})


def relu(x: Tensor) -> Tensor:
    """``max(x, 0)`` (``torch.relu``; gradient 0 at 0, as torch); records ``relu``. Returns x's
    shape and dtype (float32 or float64).

    Raises:
        GuardError: an int64 ``x`` (``torch.relu`` keeps int64) or a bool one (torch refuses it
            too).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.RELU, x)


def gelu(x: Tensor) -> Tensor:
    """Exact (erf) GELU (``torch.nn.functional.gelu``), computed as ``x * erfc(-x / sqrt(2)) / 2``:
    below about x = -8, where torch's ``x * (1 + erf(x / sqrt(2))) / 2`` cancels to -0.0 (and its
    gradient loses the ``Phi(x)`` term), this keeps the tiny negative values. At +-inf: ``inf``
    at ``+inf`` (torch's float64 value; torch's vectorised float32 kernel gives NaN there), NaN
    at ``-inf`` (``-inf * 0``, as torch) and NaN gradients at both, as torch's (tested in
    tests/runtime/test_pointwise_nonfinite_grads.py), not the limits 0, 1 and 0 (review94 L2,
    review95 L2). Records ``gelu``. Returns x's shape and dtype (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (torch refuses them too).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.GELU, x)


def tanh(x: Tensor) -> Tensor:
    """``torch.tanh`` elementwise; records ``tanh``. Returns x's shape and dtype (float32 or
    float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.tanh`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.TANH, x)


def sigmoid(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))`` elementwise (``torch.sigmoid``); records ``sigmoid``. Returns x's shape
    and dtype (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.sigmoid`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.SIGMOID, x)


def softplus(x: Tensor) -> Tensor:
    """``log(1 + exp(x))``, computed as ``max(x, 0) + log1p(exp(-|x|))`` for every x, with gradient
    ``sigmoid(x)``; records ``softplus``. ``torch.nn.functional.softplus`` with ``beta=1``, except
    that it has no ``threshold``: torch returns ``x`` itself (gradient 1) for ``x > 20``, where the
    exact value differs by ``log1p(exp(-x))`` (about 1.4e-11 at x = 25; below float32's resolution
    of such x, visible in float64). Returns x's shape and dtype (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (torch refuses them too).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.SOFTPLUS, x)


def exp(x: Tensor) -> Tensor:
    """``e ** x`` elementwise (``torch.exp``); records ``exp``. Returns x's shape and dtype (float32
    or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.exp`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.EXP, x)


def log(x: Tensor) -> Tensor:
    """Natural log elementwise (``torch.log``; ``log(0)`` is ``-inf``, ``log(-1)`` NaN); records
    ``log``. Returns x's shape and dtype (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.log`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.LOG, x)


def sin(x: Tensor) -> Tensor:
    """``torch.sin`` elementwise (NaN at ``±inf``); records ``sin``. Returns x's shape and dtype
    (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.sin`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.SIN, x)


def cos(x: Tensor) -> Tensor:
    """``torch.cos`` elementwise (NaN at ``±inf``); records ``cos``. Returns x's shape and dtype
    (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.cos`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.COS, x)


def sqrt(x: Tensor) -> Tensor:
    """``torch.sqrt`` elementwise (NaN below 0); records ``sqrt``. Returns x's shape and dtype
    (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.sqrt`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.SQRT, x)


def abs(x: Tensor) -> Tensor:
    """``|x|`` elementwise (``torch.abs``, also ``abs(t)``); records ``abs``. Returns x's shape and
    dtype (float32 or float64).

    Raises:
        GuardError: an int64 ``x`` (``torch.abs`` keeps int64) or a bool one (torch refuses it too).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return _unary(BackendOp.ABS, x)


def clamp(
    x: Tensor,
    lo: RealLike | None = None,
    hi: RealLike | None = None,
    *,
    min: RealLike | None = None,  # torch.clamp's keyword names
    max: RealLike | None = None,
) -> Tensor:
    """``min(max(x, lo), hi)`` (``torch.clamp``; a missing bound is infinite); records ``clamp``.
    torch's keywords ``min=``/``max=`` name the same bounds (``clamp(x, min=0.0)`` ports as
    written, as ``Tensor.clamp`` takes them).

    Unlike ``torch.clamp``, which returns ``hi`` everywhere when ``lo > hi`` and NaN for a NaN
    bound, the ``clamp`` guard refuses both: the bounds must satisfy ``lo <= hi``.

    Raises:
        GuardError: ``lo > hi`` (naming both) or a NaN bound (naming it).
        TensorError: a bound beyond the float64 range (``10**400``: review160 F4).
        TensorTypeError: neither bound given (torch refuses that too: "At least one of 'min' or
            'max' must not be None"); a bound that is not a real number (a string or a bool;
            ``None`` is a missing bound); a bound given twice (``lo`` and ``min``, ``hi`` and
            ``max``).
    """
    for name, value, alias, torch_value in (("lo", lo, "min", min), ("hi", hi, "max", max)):
        if value is not None and torch_value is not None:
            raise TensorTypeError(
                f"clamp: {name}={_preview(value)} and {alias}={_preview(torch_value)} are one bound "
                f"given twice (accepted: {name}, or torch's keyword {alias}=)"
            )
    lo = min if lo is None else lo
    hi = max if hi is None else hi
    if lo is None and hi is None:
        raise TensorTypeError(
            "clamp: at least one bound must be given, as torch.clamp requires (accepted: clamp(x, lo), "
            "clamp(x, lo, hi), clamp(x, hi=hi), or torch's keywords min=/max=)"
        )
    low = -math.inf if lo is None else _real("clamp", "lo", lo)
    high = math.inf if hi is None else _real("clamp", "hi", hi)
    return run_op(BackendOp.CLAMP, (x,), {"lo": low, "hi": high})


def safe_log(x: Tensor, eps: RealLike = 1e-12) -> Tensor:
    """``log(softplus(x) + eps)`` (not ``log(max(x, eps))`` nor ``log(x + eps)``: ``safe_log(1.0)``
    is 0.2725, the log of ``softplus(1.0)`` = 1.3133), computed with ``eps`` rounded to x's dtype: finite for
    every finite x whose ``softplus(x) + eps`` stays below the dtype's largest value (the IR's
    ``safe_log``); records ``safe_log``. For ``torch.log(torch.clamp(x, min=eps))``, write
    ``log(clamp(x, eps))``.

    Raises:
        GuardError: ``eps`` not finite and positive, or one that rounds to 0 or ``inf`` in x's
            dtype (``1e-50`` in float32), naming eps, the dtype and the accepted range; an int64
            or bool ``x``.
        TensorError: an ``eps`` beyond the float64 range (``10**400``: review160 F4).
        TensorTypeError: ``eps`` is not a real number; ``x`` is not a Tensor (a number, a numpy
            array or a torch tensor: convert with ``torchlean.tensor``).
    """
    return run_op(BackendOp.SAFE_LOG, (x,), {"eps": _real("safe_log", "eps", eps)})
