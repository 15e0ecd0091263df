"""Optimizers: validated configuration records and their numpy update rules.

An optimizer is built from a frozen record (``optim.sgd(lr=0.01, momentum=0.9)``). Building the
record refuses a hyper-parameter that is not a real number (bools and strings included; SGD's
``nesterov`` flag takes a bool), stores every number as a ``float`` and runs the domain checks, as
``torch.optim`` refuses a bad value at construction (the original checks later, when the trainer
opens), with the original TorchLean
messages followed by the offending value (anchor-runtime.md §3.1; each check is repeated after the
value is rounded to binary32, with the suffix `` after conversion to binary32``):
``optimizer: learning rate must be finite and nonnegative, got -1.0``. :meth:`OptimizerConfig.create`
turns a valid record into a stateful :class:`Optimizer`, whose :meth:`Optimizer.step` takes numpy
arrays and returns new ones and whose :meth:`Optimizer.step_` updates torchlean tensors in place
from their ``.grad`` (torch's ``step()`` + ``zero_grad()``); :func:`clip_grad_norm` is torch's
``clip_grad_norm_`` (a reduction: its norms are sums). Updates are elementwise numpy
arithmetic in each parameter's dtype (no reductions, so no summation order is involved) and follow
the PyTorch update rules of ``torch.optim.SGD`` (with its dampening, L2 weight decay and Nesterov
options), ``Adam`` (with its L2 weight decay and ``amsgrad``), ``AdamW``, ``RMSprop`` (with its weight
decay, momentum and centering) and ``Adagrad`` (with its lr decay, weight decay and initial
accumulator), in the order of operations of
their single-tensor CPU implementations (``_single_tensor_adam`` and the like; torch may fuse a
multiply and an add, so the last bit can differ; in float16, where numpy rounds every operation
and torch computes in float32 and rounds once, a step can differ by many float16 ulps, and an
``eps`` that float16 rounds to 0, such as Adam's default ``1e-8``, gives NaN for an exactly zero
gradient, as in torch): Adam divides ``sqrt(v)`` by
``sqrt(1 - beta2^t)``, so its denominator stays finite, as torch's does, for gradients large
enough (``|g|`` above about 1.8e19 in float32) that ``v / (1 - beta2^t)`` overflows.

The updates, for a parameter ``p`` with gradient ``g`` at step ``t = 1, 2, ...`` (state ``m``, ``v``
starts at zero; the bias corrections in Python floats):

* SGD: ``g = g + weight_decay * p`` (L2, when ``weight_decay`` is nonzero); ``m = g`` at
  ``t = 1``, else ``m = momentum * m + (1 - dampening) * g``; the step direction is ``m``, or
  ``g + momentum * m`` with Nesterov (without momentum, ``g``); ``p = p - lr * direction``.
* Adam: ``g = g + weight_decay * p`` (L2, when nonzero); ``m = lerp(m, g, 1 - beta1)``;
  ``v = beta2 * v + (1 - beta2) * g * g``;
  ``p = p - lr / (1 - beta1^t) * m / (sqrt(v) / sqrt(1 - beta2^t) + eps)``.
  With ``amsgrad``, ``v_max = maximum(v_max, v)`` takes ``v``'s place in the denominator.
* AdamW: Adam's step from the decayed parameter ``p * (1 - lr * weight_decay)``.
* RMSprop: ``g = g + weight_decay * p`` (when nonzero); ``v = decay * v + (1 - decay) * g * g``;
  ``avg = sqrt(v) + eps`` (centered: ``sqrt(v - a * a) + eps`` with ``a = lerp(a, g, 1 - decay)``);
  ``p = p - lr * g / avg``, or with momentum ``m = momentum * m + g / avg``, ``p = p - lr * m``.
* Adagrad: ``g = g + weight_decay * p`` (when nonzero); ``v = v + g * g`` (``v`` starts at
  ``initial_accumulator_value``); ``p = p - lr / (1 + (t - 1) * lr_decay) * g / (sqrt(v) + eps)``.

Parameter groups (:func:`group`, torch's ``param_groups``) give the parameters they select by
name other values of these hyper-parameters and a multiple of the learning rate
(``create(params, names=model.names, groups=[optim.group("bias", weight_decay=0.0)])``).
"""

from __future__ import annotations

import math
import numbers
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import shown
from torchlean.autograd.grad_mode import no_grad
from torchlean.backend.display import name_shown
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.lr_schedules import ScheduleError, warmup_cosine
from torchlean.tensor import Tensor, _preview

__all__ = [
    "OPTIMIZERS",
    "SGD",
    "Adagrad",
    "Adam",
    "AdamW",
    "GroupSelectionError",
    "Optimizer",
    "OptimizerConfig",
    "OptimizerError",
    "ParamGroup",
    "RMSprop",
    "ScheduleError",
    "adagrad",
    "adam",
    "adamw",
    "by_name",
    "clip_grad_norm",
    "group",
    "rmsprop",
    "sgd",
    "warmup_cosine",
]

Array = npt.NDArray[np.floating]


class OptimizerError(TorchLeanError, ValueError):
    """An optimizer hyper-parameter is out of its domain (message names the parameter)."""


class GroupSelectionError(OptimizerError):
    """A parameter group selects no parameter (``group``: the group; ``names``: every parameter's
    name, which the message lists)."""

    def __init__(self, message: str, group: ParamGroup, names: Sequence[str]) -> None:
        super().__init__(message)
        self.group = group
        self.names = tuple(names)


def names_shown(names: Sequence[str], limit: int = 40) -> str:
    """``names`` joined by commas for a message: all of them up to ``limit``, else the first
    ``limit // 2`` and how many more."""
    if len(names) <= limit:
        return ", ".join(names)
    return f"{', '.join(names[: limit // 2])}, ... ({len(names) - limit // 2} more)"


def _as_binary32(value: float) -> float:
    with np.errstate(over="ignore"):  # an overflow to inf is reported by the domain check
        return float(np.float32(value))


def _validate_both(checks: Sequence[tuple[float, str, str]]) -> None:
    """Run each (value, kind, message) check on the value and on its binary32 rounding; the error
    appends ``, got <value>`` (and the rounded value when only that fails)."""
    for suffix, convert in (("", float), (" after conversion to binary32", _as_binary32)):
        for value, kind, message in checks:
            v = convert(value)
            if kind == "nonneg":
                ok = math.isfinite(v) and v >= 0.0
            elif kind == "positive":
                ok = math.isfinite(v) and v > 0.0
            elif kind == "unit":
                ok = math.isfinite(v) and 0.0 <= v < 1.0
            elif kind == "closed_unit":
                ok = math.isfinite(v) and 0.0 <= v <= 1.0
            else:  # pragma: no cover - internal table
                raise AssertionError(kind)
            if not ok:
                got = f"{value!r}" if not suffix else f"{value!r} ({v!r} in binary32)"
                raise OptimizerError(f"optimizer: {message}{suffix}, got {got}")


def _lr_check(lr: float) -> tuple[float, str, str]:
    return (lr, "nonneg", "learning rate must be finite and nonnegative")


def _unit_check(value: float, name: str) -> tuple[float, str, str]:
    return (value, "unit", f"{name} must be finite and satisfy 0 <= {name} < 1")


def _eps_check(eps: float) -> tuple[float, str, str]:
    return (eps, "positive", "epsilon must be finite and positive")


_FLOAT_DTYPES = frozenset(np.dtype(t) for t in (np.float16, np.float32, np.float64))
"""The parameter dtypes an optimizer accepts."""


def _type_name(value: object) -> str:
    """``value``'s class as messages name it (``list``, ``numpy.ndarray``, ``torchlean.tensor.Tensor``)."""
    cls = type(value)
    return cls.__qualname__ if cls.__module__ == "builtins" else f"{cls.__module__}.{cls.__qualname__}"


def _not_a_float_array(what: str, index: int, value: object, caller: str = "optimizer") -> str:
    """The refusal of a parameter or gradient that is not a numpy float array, naming its type."""
    got = f"numpy.ndarray of dtype {value.dtype}" if isinstance(value, np.ndarray) else _type_name(value)
    return (
        f"{caller}: {what} {index} must be a numpy float array (numpy.ndarray of dtype float16, "
        f"float32 or float64), got {got}"
    )


def _listed(what: str, value: object, caller: str = "optimizer") -> list[Any]:
    """``value`` (the parameters or gradients of ``create``/``step``) as a list: any iterable but
    a single array, a string or a mapping (as ``torch.optim`` refuses a single tensor).

    Raises:
        OptimizerError: ``optimizer: parameters must be a sequence of numpy arrays (one per
            parameter), got numpy.ndarray``.
    """
    if isinstance(value, list | tuple):
        return list(value)
    if isinstance(value, np.ndarray | str | bytes | Mapping) or not isinstance(value, Iterable):
        raise OptimizerError(
            f"{caller}: {what} must be a sequence of numpy arrays (one per parameter), "
            f"got {_type_name(value)}"
        )
    return list(value)


def _require_like(what: str, index: int, value: object, like: Array, owner: str) -> None:
    """``value`` is a numpy array of ``like``'s shape and dtype.

    Raises:
        OptimizerError: ``optimizer: gradient 0 has shape (3,) and dtype float64, but parameter 0
            has shape (2,) and dtype float64`` (``owner`` words the second half), or the refusal
            of a value that is not a numpy array (:func:`_not_a_float_array`).
    """
    if not isinstance(value, np.ndarray):
        raise OptimizerError(_not_a_float_array(what, index, value))
    if value.shape != like.shape or value.dtype != like.dtype:
        raise OptimizerError(
            f"optimizer: {what} {index} has shape {value.shape} and dtype {value.dtype}, but {owner} "
            f"shape {like.shape} and dtype {like.dtype}"
        )


_FIELD_WORDS = {"lr": "learning rate", "eps": "epsilon", "weight_decay": "weight decay"}
"""How the messages name a field (the others by their own name)."""


class OptimizerConfig(ABC):
    """A validated optimizer record; :meth:`create` gives the stateful optimizer."""

    name: str = ""
    lr: float

    def __post_init__(self) -> None:
        """Refuse a hyper-parameter that is not a real number; store each one as a ``float``; run
        the domain checks (:meth:`validate`).

        Raises:
            OptimizerError: ``optimizer: learning rate must be a real number (int or float), got True``;
                an out-of-domain value (:meth:`validate`).
        """
        for f in fields(self):  # type: ignore[arg-type]
            value = getattr(self, f.name)
            if f.type == "bool":  # a flag (SGD's nesterov): a bool or numpy.bool_, stored as bool
                if not isinstance(value, (bool, np.bool_)):
                    raise OptimizerError(f"optimizer: {f.name} must be a bool, got {value!r}")
                object.__setattr__(self, f.name, bool(value))
                continue
            if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
                word = _FIELD_WORDS.get(f.name, f.name)
                raise OptimizerError(f"optimizer: {word} must be a real number (int or float), got {value!r}")
            try:
                number = float(value)
            except OverflowError:  # an int (or Fraction) beyond the float range
                word = _FIELD_WORDS.get(f.name, f.name)
                beyond = shown(value)
                message = f"optimizer: {word} must be finite, got {beyond} (beyond the float range)"
                raise OptimizerError(message) from None
            object.__setattr__(self, f.name, number + 0.0)  # + 0.0: -0.0 is stored as 0.0
        self.validate()

    @abstractmethod
    def checks(self) -> list[tuple[float, str, str]]:
        """The (value, kind, message) domain checks of this record."""

    def validate(self) -> None:
        """Raise :class:`OptimizerError` with the original's message if a value is invalid."""
        _validate_both(self.checks())

    def describe(self) -> str:
        """``optim.adam(lr=0.01, beta1=0.9, ...)``: the record in the syntax that builds it."""
        parts = [f"{f.name}={getattr(self, f.name)!r}" for f in fields(self)]  # type: ignore[arg-type]
        return f"optim.{self.name}({', '.join(parts)})"

    def create(
        self,
        params: Sequence[Array],
        *,
        names: Sequence[str] | None = None,
        groups: Sequence[ParamGroup] = (),
    ) -> Optimizer:
        """A fresh optimizer for parameters shaped like ``params`` (the record was validated when
        it was built).

        Each parameter must be a ``numpy.ndarray`` of dtype float16, float32 or float64 (any
        shape, 0-d included); its state buffers take its shape and dtype, which :meth:`Optimizer.step`
        then requires. A torchlean ``Tensor`` is refused (pass ``tensor.numpy()``): the optimizer
        returns new numpy arrays, so it works on host arrays only.

        ``groups`` (:func:`group`) give the parameters they select other hyper-parameters, as
        torch's parameter groups do; they select by the parameters' ``names`` (one string per
        parameter: for a model, ``model.names``), so ``names`` is required with them. A parameter
        no group selects takes this record. Everything is checked here, before any step: each
        parameter selected by at most one group, each group selecting at least one, each
        group's hyper-parameters in their domains (:meth:`Optimizer.config_of` gives the record
        a parameter runs on).

        Raises:
            OptimizerError: ``optimizer: parameter 0 must be a numpy float array (numpy.ndarray of dtype
                float16, float32 or float64), got torchlean.tensor.Tensor``; ``params`` that is a
                single array, a string, a mapping or not iterable (:func:`_listed`); ``groups``
                without ``names``, ``names`` not one string per parameter, a group that selects
                no parameter or a parameter two groups select, an override this optimizer does
                not take or out of its domain (:func:`_group_config`).
        """
        params = _listed("parameters", params)
        for index, param in enumerate(params):
            if not isinstance(param, np.ndarray) or param.dtype not in _FLOAT_DTYPES:
                tensor = isinstance(param, Tensor)
                hint = " (pass tensor.numpy(); for a model, model.parameters)" if tensor else ""
                raise OptimizerError(_not_a_float_array("parameter", index, param) + hint)
        groups = tuple(_listed_groups(groups))
        shown_names = _checked_names(names, len(params), bool(groups))
        shapes = [p.shape for p in params]
        membership = _membership(groups, shown_names, shapes) if groups else (None,) * len(params)
        group_configs = [_group_config(self, g) for g in groups]
        configs = [self if member is None else group_configs[member] for member in membership]
        return Optimizer(
            self,
            [np.zeros_like(p) for p in params],
            [c.initial_second(p) for p, c in zip(params, configs, strict=True)],
            [0] * len(params),
            third=[np.zeros_like(p) if c.has_third() else None for p, c in zip(params, configs, strict=True)],
            groups=groups,
            names=shown_names,
            membership=membership,
            group_configs=group_configs,
        )

    @abstractmethod
    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Array:
        """Return the new parameter; ``m``/``v`` are this parameter's state, updated in place, and
        ``third`` its third buffer where :meth:`has_third` (Adam's ``amsgrad``: the running maximum
        of ``v``; RMSprop's ``centered``: the gradient average), else ``None``."""

    def has_third(self) -> bool:
        """Whether the update keeps a third state buffer per parameter (none by default)."""
        return False

    def initial_second(self, param: Array) -> Array:
        """The second state buffer a parameter starts with: zeros of its shape and dtype (Adagrad
        starts its sum at ``initial_accumulator_value``)."""
        return np.zeros_like(param)


@dataclass(frozen=True, slots=True)
class SGD(OptimizerConfig):
    """Stochastic gradient descent with heavy-ball or Nesterov momentum, dampening and L2 weight
    decay (``torch.optim.SGD``)."""

    lr: float = 0.01
    momentum: float = 0.0
    dampening: float = 0.0
    weight_decay: float = 0.0
    nesterov: bool = False
    name = "sgd"

    def checks(self) -> list[tuple[float, str, str]]:
        return [
            _lr_check(self.lr),
            _unit_check(self.momentum, "momentum"),
            (self.dampening, "closed_unit", "dampening must be finite and satisfy 0 <= dampening <= 1"),
            (self.weight_decay, "nonneg", "weight decay must be finite and nonnegative"),
        ]

    def validate(self) -> None:
        """The domain checks, then torch's rule for Nesterov momentum.

        Raises:
            OptimizerError: as :meth:`OptimizerConfig.validate`; ``nesterov`` with no momentum or
                a nonzero dampening (torch's ``Nesterov momentum requires a momentum and zero
                dampening``).
        """
        OptimizerConfig.validate(self)
        if self.nesterov and (self.momentum == 0.0 or self.dampening != 0.0):
            raise OptimizerError(
                "optimizer: Nesterov momentum requires a momentum and zero dampening, got "
                f"momentum={self.momentum!r}, dampening={self.dampening!r}"
            )

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Array:
        # torch.optim.sgd._single_tensor_sgd: g = g.add(param, alpha=weight_decay); buf = clone(g) at
        # the first step, else buf.mul_(momentum).add_(g, alpha=1 - dampening); g = g.add(buf,
        # alpha=momentum) with Nesterov, else buf; param.add_(g, alpha=-lr).
        dt = param.dtype.type
        if self.weight_decay != 0.0:
            grad = grad + dt(self.weight_decay) * param
        if self.momentum != 0.0:
            if step == 1:
                m[...] = grad
            else:  # dampening 0 multiplies by 1.0, exactly
                m[...] = dt(self.momentum) * m + dt(1.0 - self.dampening) * grad
            grad = grad + dt(self.momentum) * m if self.nesterov else m
        return param + dt(-self.lr) * grad


@dataclass(frozen=True, slots=True)
class Adam(OptimizerConfig):
    """Adam (Kingma & Ba 2015) with bias correction and L2 ``weight_decay`` added to the gradient,
    and the AMSGrad variant (Reddi et al. 2018) with ``amsgrad``, as ``torch.optim.Adam``."""

    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    amsgrad: bool = False
    name = "adam"

    def checks(self) -> list[tuple[float, str, str]]:
        return [
            _lr_check(self.lr),
            _unit_check(self.beta1, "beta1"),
            _unit_check(self.beta2, "beta2"),
            _eps_check(self.eps),
            (self.weight_decay, "nonneg", "weight decay must be finite and nonnegative"),
        ]

    def has_third(self) -> bool:
        return self.amsgrad

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Array:
        # torch.optim.adam._single_tensor_adam: grad = grad.add(param, alpha=weight_decay) first.
        if self.weight_decay != 0.0:
            grad = grad + param.dtype.type(self.weight_decay) * param
        return _adam_step(self, step, param, grad, m, v, third)


@dataclass(frozen=True, slots=True)
class AdamW(OptimizerConfig):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019), with ``amsgrad`` as
    :class:`Adam`'s, as ``torch.optim.AdamW``."""

    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01
    amsgrad: bool = False
    name = "adamw"

    def checks(self) -> list[tuple[float, str, str]]:
        return [
            _lr_check(self.lr),
            _unit_check(self.beta1, "beta1"),
            _unit_check(self.beta2, "beta2"),
            _eps_check(self.eps),
            (self.weight_decay, "nonneg", "weight decay must be finite and nonnegative"),
        ]

    def has_third(self) -> bool:
        return self.amsgrad

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Array:
        decayed = param * param.dtype.type(1.0 - self.lr * self.weight_decay)
        return _adam_step(self, step, decayed, grad, m, v, third)


def _lerp_(m: Array, grad: Array, weight: np.floating[Any]) -> None:
    """``m.lerp_(grad, weight)`` in place, by torch's scalar rule: ``m + weight * (grad - m)`` for
    ``|weight| < 0.5``, else ``grad - (grad - m) * (1 - weight)``. A ufunc on 0-d operands returns
    a numpy scalar, which cannot be written through ``out=``: ``np.asarray`` makes it a 0-d array
    (and returns any other result as it is)."""
    diff = np.asarray(np.subtract(grad, m))
    if abs(weight) < 0.5:
        diff *= weight
        m += diff
    else:
        diff *= weight.dtype.type(1.0) - weight
        np.subtract(grad, diff, out=m)


def _adam_step(
    config: Adam | AdamW, step: int, start: Array, grad: Array, m: Array, v: Array, v_max: Array | None
) -> Array:
    """Update the moments ``m`` and ``v`` in place; return ``start - lr / (1 - b1^t) * m / denom``
    with ``denom = sqrt(v) / sqrt(1 - b2^t) + eps``; with ``amsgrad``, ``v_max`` becomes
    ``maximum(v_max, v)`` in place (NaN propagating, as ``torch.maximum``) and takes ``v``'s
    place in ``denom``.

    The order of operations is ``torch.optim.adam._single_tensor_adam``'s (the CPU path):
    ``m.lerp_(g, 1 - b1)``; ``v.mul_(b2).addcmul_(g, g, value=1 - b2)``; the bias
    corrections, the step size ``lr / (1 - b1^t)`` and ``sqrt(1 - b2^t)`` in Python floats;
    ``denom = v.sqrt() / sqrt(1 - b2^t) + eps`` (``torch.maximum(v_max, v, out=v_max)`` first
    and ``v_max.sqrt()`` with amsgrad); ``start.addcdiv_(m, denom, value=-step_size)``.
    Taking the square root of ``v`` before dividing by the bias correction keeps ``denom`` finite
    wherever ``v`` is: ``sqrt(v / (1 - b2^t))`` overflows once ``|g|`` passes about 1.8e19 in
    float32, and the update would then be exactly 0. The arithmetic is in ``start``'s dtype (the
    parameter's; AdamW passes the decayed parameter), one rounding per torch operation (torch
    may fuse a multiply and an add, so its last bit can differ).
    """
    dt = start.dtype.type
    _lerp_(m, grad, dt(1.0 - config.beta1))
    # v.mul_(b2).addcmul_(g, g, value=1 - b2): v*b2 + ((1 - b2)*g)*g.
    term = np.asarray(np.multiply(grad, dt(1.0 - config.beta2)))
    term *= grad
    v *= dt(config.beta2)
    v += term
    step_size = config.lr / (1.0 - config.beta1**step)
    bias2_sqrt = (1.0 - config.beta2**step) ** 0.5
    if config.amsgrad:
        if v_max is None:  # pragma: no cover - create allocates it for every amsgrad parameter
            raise AssertionError("amsgrad needs its v_max buffer")
        np.maximum(v_max, v, out=v_max)
        v = v_max
    denom = np.asarray(np.sqrt(v))
    denom /= dt(bias2_sqrt)
    denom += dt(config.eps)
    # addcdiv_(m, denom, value=-step_size): start + (-step_size * m) / denom.
    update: Array = np.asarray(np.multiply(m, dt(-step_size)))
    update /= denom
    result: Array = start + update
    return result


@dataclass(frozen=True, slots=True)
class RMSprop(OptimizerConfig):
    """RMSprop (Hinton 2012) as ``torch.optim.RMSprop`` (``decay`` is torch's ``alpha``), with its
    L2 ``weight_decay``, ``momentum`` and ``centered`` options."""

    lr: float = 0.01
    decay: float = 0.99
    eps: float = 1e-8
    weight_decay: float = 0.0
    momentum: float = 0.0
    centered: bool = False
    name = "rmsprop"

    def checks(self) -> list[tuple[float, str, str]]:
        return [
            _lr_check(self.lr),
            _unit_check(self.decay, "decay"),
            _eps_check(self.eps),
            (self.weight_decay, "nonneg", "weight decay must be finite and nonnegative"),
            _unit_check(self.momentum, "momentum"),
        ]

    def has_third(self) -> bool:
        return self.centered

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Array:
        # torch.optim.rmsprop._single_tensor_rmsprop: g = g.add(param, alpha=weight_decay);
        # v.mul_(alpha).addcmul_(g, g, value=1 - alpha); centered: grad_avg.lerp_(g, 1 - alpha),
        # avg = v.addcmul(grad_avg, grad_avg, value=-1).sqrt_(), else v.sqrt(); avg.add_(eps);
        # momentum: buf.mul_(momentum).addcdiv_(g, avg), param.add_(buf, alpha=-lr); else
        # param.addcdiv_(g, avg, value=-lr).
        dt = param.dtype.type
        if self.weight_decay != 0.0:
            grad = grad + dt(self.weight_decay) * param
        v[...] = dt(self.decay) * v + dt(1.0 - self.decay) * grad * grad
        if self.centered:
            if third is None:  # pragma: no cover - create allocates it for every centered parameter
                raise AssertionError("centered RMSprop needs its gradient-average buffer")
            _lerp_(third, grad, dt(1.0 - self.decay))
            avg = np.sqrt(v + dt(-1.0) * third * third) + dt(self.eps)
        else:
            avg = np.sqrt(v) + dt(self.eps)
        if self.momentum != 0.0:
            m[...] = m * dt(self.momentum) + grad / avg
            return param + dt(-self.lr) * m
        return param + dt(-self.lr) * grad / avg


@dataclass(frozen=True, slots=True)
class Adagrad(OptimizerConfig):
    """Adagrad (Duchi et al. 2011) as ``torch.optim.Adagrad``, with its ``lr_decay``, L2
    ``weight_decay`` and ``initial_accumulator_value``."""

    lr: float = 0.01
    lr_decay: float = 0.0
    weight_decay: float = 0.0
    initial_accumulator_value: float = 0.0
    eps: float = 1e-10
    name = "adagrad"

    def checks(self) -> list[tuple[float, str, str]]:
        return [
            _lr_check(self.lr),
            (self.lr_decay, "nonneg", "lr_decay must be finite and nonnegative"),
            (self.weight_decay, "nonneg", "weight decay must be finite and nonnegative"),
            (
                self.initial_accumulator_value,
                "nonneg",
                "initial_accumulator_value must be finite and nonnegative",
            ),
            _eps_check(self.eps),
        ]

    def initial_second(self, param: Array) -> Array:
        return np.full_like(param, self.initial_accumulator_value)

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Array:
        # torch.optim.adagrad._single_tensor_adagrad: g = g.add(param, alpha=weight_decay);
        # clr = lr / (1 + (step - 1) * lr_decay) (Python floats); sum.addcmul_(g, g, value=1);
        # param.addcdiv_(g, sum.sqrt().add_(eps), value=-clr).
        dt = param.dtype.type
        if self.weight_decay != 0.0:
            grad = grad + dt(self.weight_decay) * param
        clr = self.lr / (1 + (step - 1) * self.lr_decay)
        v[...] = v + grad * grad
        return param + dt(-clr) * grad / (np.sqrt(v) + dt(self.eps))


@dataclass(slots=True)
class Optimizer:
    """The stateful optimizer: per-parameter first/second moment buffers and step counts.

    ``steps`` counts calls of :meth:`step`; ``param_steps[i]`` counts the updates parameter ``i``
    received, the ``t`` of its bias corrections and of SGD's first-momentum step. As in
    ``torch.optim``, a parameter whose gradient is ``None`` is skipped: neither its state nor its
    count moves.
    """

    config: OptimizerConfig
    first: list[Array]
    second: list[Array]
    param_steps: list[int]
    steps: int = field(default=0)
    third: list[Array | None] = field(default_factory=list)
    """Per parameter, the third state buffer of records that keep one (AMSGrad's running maximum
    of ``second``, centered RMSprop's gradient average), else ``None``."""
    groups: tuple[ParamGroup, ...] = ()
    names: tuple[str, ...] = ()
    """The parameters' names given to ``create`` (empty when none were)."""
    membership: tuple[int | None, ...] = ()
    """Per parameter, the index of the group that selects it, or ``None``."""
    group_configs: list[OptimizerConfig] = field(default_factory=list)
    """Per group, the record its parameters run on (:func:`_group_config` of ``config``)."""

    def __post_init__(self) -> None:
        """An optimizer built directly (not by ``create``) gets no groups and, where ``config``
        keeps one, zero third buffers."""
        if not self.membership:
            self.membership = (None,) * len(self.first)
        if not self.third:
            self.third = [
                np.zeros_like(m) if self.config_of(i).has_third() else None for i, m in enumerate(self.first)
            ]

    def config_of(self, index: int) -> OptimizerConfig:
        """The record parameter ``index`` is updated with: its group's (``config`` with the
        group's overrides, the learning rate scaled by its ``lr_scale``) or ``config``."""
        member = self.membership[index]
        return self.config if member is None else self.group_configs[member]

    def set_lr(self, lr: float) -> None:
        """Use learning rate ``lr`` from the next :meth:`step` on, keeping the state (torch's
        ``param_group["lr"] = lr``, which its LR schedulers set); ``config`` becomes the record
        with this ``lr``, and each group's rate ``lr * lr_scale`` (torch's schedulers scale every
        group's rate by the same factor).

        Raises:
            OptimizerError: ``lr`` not a real number or out of the record's domain (as when the
                record is built: ``optimizer: learning rate must be finite and nonnegative, got
                -0.1``), or a group's scaled rate out of it; the optimizer is unchanged.
        """
        config = replace(self.config, lr=lr)  # type: ignore[type-var]
        group_configs = [_group_config(config, g) for g in self.groups]
        self.config, self.group_configs = config, group_configs

    def step_(self, params: Sequence[Tensor], *, max_grad_norm: float | None = None) -> float | None:
        """Update the tensors ``params`` in place from their ``.grad`` and then set every ``.grad``
        to ``None``: torch's ``optimizer.step()`` followed by ``optimizer.zero_grad()`` (with
        ``max_grad_norm``, ``clip_grad_norm_`` first). A tensor whose ``.grad`` is ``None`` is
        skipped, as in :meth:`step` (buffers, frozen parameters). Returns the total gradient norm
        before clipping when ``max_grad_norm`` is given (:func:`clip_grad_norm`), else ``None``.

        ``params`` are the tensors this optimizer was created for, in the same order (for a model,
        ``model.tensors()``, created from ``model.parameters``); the writes happen under
        ``no_grad``, so leaf tensors that require grad can be updated. A tensor listed at several
        positions (weights tied by passing one tensor twice) is one parameter, as in torch: its
        gradient counts once in the clipping norm, and each position computes the same update
        from the same value.

        Raises:
            OptimizerError: an entry that is not a torchlean Tensor; the errors of :meth:`step`
                and :func:`clip_grad_norm` (shapes, dtypes, counts), before any tensor changes.
        """
        if isinstance(params, Tensor):
            raise OptimizerError(
                "optimizer: step_ takes a sequence of tensors (one per parameter), got one Tensor"
            )
        tensors = _listed("parameters", params)
        for index, tensor in enumerate(tensors):
            if not isinstance(tensor, Tensor):
                raise OptimizerError(
                    f"optimizer: step_ takes torchlean Tensors; parameter {index} is a {_type_name(tensor)} "
                    "(for numpy arrays use step(params, grads))"
                )
        grads: list[Array | None] = [None if t.grad is None else t.grad.numpy() for t in tensors]
        norm = None
        if max_grad_norm is not None:  # a tensor listed twice (tied weights) is one parameter
            positions: dict[int, int] = {}
            for index, tensor in enumerate(tensors):
                positions.setdefault(id(tensor), index)
            first = list(positions.values())
            clipped, norm = clip_grad_norm([grads[index] for index in first], max_grad_norm)
            by_tensor = {id(tensors[index]): grad for index, grad in zip(first, clipped, strict=True)}
            grads = [by_tensor[id(t)] for t in tensors]
        updated = self.step([t.numpy() for t in tensors], grads)
        with no_grad():
            for tensor, value, grad in zip(tensors, updated, grads, strict=True):
                if grad is not None:
                    tensor.copy_(value)
                tensor.grad = None
        return norm

    def step(self, params: Sequence[Array], grads: Sequence[Array | None]) -> list[Array]:
        """Return updated parameters (new arrays); for a ``None`` gradient the parameter itself (the
        same array object, unchanged).

        ``params[i]`` must have the shape and dtype of the ``i``-th parameter given to ``create``,
        and ``grads[i]`` (when not ``None``) the same shape and dtype (as ``torch`` requires of
        ``param.grad``). Everything is checked before any state moves, so a refused step changes
        nothing.

        Raises:
            OptimizerError: ``optimizer: expected 2 parameters, got 3`` (or ``... gradients ...``);
                ``optimizer: parameter 1 has shape (1, 2) and dtype float64, but the optimizer was
                created for shape (2,) and dtype float64``; ``optimizer: gradient 1 has shape (3,)
                and dtype float32, but parameter 1 has shape (2,) and dtype float64``; a parameter
                or gradient that is not a numpy array (a torchlean ``Tensor``, say), as in ``create``;
                ``params`` or ``grads`` that is a single array or not iterable (as in ``create``).
        """
        params, grads = _listed("parameters", params), _listed("gradients", grads)
        count = len(self.first)
        if len(params) != count:
            raise OptimizerError(f"optimizer: expected {count} parameters, got {len(params)}")
        if len(grads) != count:
            raise OptimizerError(
                f"optimizer: expected {count} gradients (one per parameter, None to skip one), "
                f"got {len(grads)}"
            )
        for index, (param, grad, state) in enumerate(zip(params, grads, self.first, strict=True)):
            _require_like("parameter", index, param, state, "the optimizer was created for")
            if grad is not None:
                _require_like("gradient", index, grad, state, f"parameter {index} has")
        self.steps += 1
        out: list[Array] = []
        with np.errstate(all="ignore"):  # a diverging run overflows to inf silently, as torch.optim
            for index, (param, grad) in enumerate(zip(params, grads, strict=True)):
                if grad is None:
                    out.append(param)
                    continue
                self.param_steps[index] += 1
                new = self.config_of(index).update(
                    self.param_steps[index], param, grad, self.first[index], self.second[index],
                    self.third[index],
                )
                out.append(np.asarray(new, dtype=param.dtype))
        return out


def sgd(
    lr: float = 0.01,
    momentum: float = 0.0,
    *,
    dampening: float = 0.0,
    weight_decay: float = 0.0,
    nesterov: bool = False,
) -> SGD:
    """SGD with heavy-ball momentum, or Nesterov's with ``nesterov=True``, ``dampening`` of the
    momentum and L2 ``weight_decay`` added to the gradient (``torch.optim.SGD``, whose update rule
    and order of operations this follows; ``maximize`` is not offered). The default ``lr=0.01`` is
    the original's (anchor-runtime.md §3.1: ``learningRate := 0.01``); torch's ``SGD`` defaults to
    ``lr=0.001``.

    Domains (the original's, anchor-runtime.md §3.1; stricter than torch, which accepts an
    infinite ``lr``, ``momentum >= 1`` and any dampening): ``lr`` finite and >= 0, ``momentum`` in
    ``[0, 1)``, ``dampening`` in ``[0, 1]``, ``weight_decay`` finite and >= 0, each also after
    rounding to binary32; ``nesterov`` a bool, and only with a momentum and zero dampening (as
    torch).

    Raises:
        OptimizerError: a value that is not a real number (bools and strings included; for
            ``nesterov``, anything but a bool), or out of its domain (``optimizer: momentum must be
            finite and satisfy 0 <= momentum < 1, got 1.0``); ``nesterov=True`` without momentum or
            with dampening.
    """
    return SGD(lr=lr, momentum=momentum, dampening=dampening, weight_decay=weight_decay, nesterov=nesterov)


def _betas(betas: object, beta1: float, beta2: float) -> tuple[float, float]:
    """``beta1, beta2`` from torch's ``betas=(beta1, beta2)`` when given (else as passed); a
    ``beta1``/``beta2`` left at its default is overridden by ``betas``.

    Raises:
        OptimizerError: ``betas`` not a pair, or given with ``beta1``/``beta2`` other than their
            defaults (the two spellings of one setting).
    """
    if betas is None:
        return beta1, beta2
    if not isinstance(betas, tuple | list) or len(betas) != 2:
        raise OptimizerError(f"optimizer: betas must be a pair (beta1, beta2), as torch's, got {betas!r}")
    if (beta1, beta2) != (0.9, 0.999):
        raise OptimizerError(
            f"optimizer: pass betas or beta1/beta2, not both (got betas={betas!r}, beta1={beta1!r}, "
            f"beta2={beta2!r})"
        )
    return betas[0], betas[1]


def adam(
    lr: float = 0.001,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    amsgrad: bool = False,
    *,
    betas: tuple[float, float] | None = None,
) -> Adam:
    """Adam (``torch.optim.Adam``; Kingma & Ba 2015), ``weight_decay`` the L2 penalty torch adds to
    the gradient (:func:`adamw` decouples it); values are checked as by :func:`sgd`: ``lr`` finite
    and >= 0, ``beta1`` and ``beta2`` in ``[0, 1)``, ``eps`` finite and > 0 (torch accepts
    ``eps == 0``), ``weight_decay`` finite and >= 0, each also after rounding to binary32
    (``eps=1e-50`` is refused). ``betas=(beta1, beta2)`` is torch's spelling of the two, so
    ``optim.adam(lr=3e-4, betas=(0.9, 0.95))`` ports as it is. ``amsgrad=True`` is torch's AMSGrad
    (Reddi et al. 2018): the denominator takes the running maximum of the second moment (one
    more state buffer per parameter), in torch's order of operations.

    Raises:
        OptimizerError: a value that is not a real number or out of its domain; ``betas`` that is
            not a pair, or given together with a ``beta1``/``beta2`` other than its default.
    """
    beta1, beta2 = _betas(betas, beta1, beta2)
    return Adam(lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)


def adamw(
    lr: float = 0.001,
    beta1: float = 0.9,
    beta2: float = 0.999,
    eps: float = 1e-8,
    weight_decay: float = 0.01,
    amsgrad: bool = False,
    *,
    betas: tuple[float, float] | None = None,
) -> AdamW:
    """AdamW, decoupled weight decay (``torch.optim.AdamW``; Loshchilov & Hutter 2019); domains as
    :func:`adam`, plus ``weight_decay`` finite and >= 0; ``betas=(beta1, beta2)`` and ``amsgrad``
    as in :func:`adam` (``optim.adamw(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)``).

    Raises:
        OptimizerError: a value that is not a real number or out of its domain; ``betas`` that is
            not a pair, or given together with a ``beta1``/``beta2`` other than its default.
    """
    beta1, beta2 = _betas(betas, beta1, beta2)
    return AdamW(lr=lr, beta1=beta1, beta2=beta2, eps=eps, weight_decay=weight_decay, amsgrad=amsgrad)


def rmsprop(
    lr: float = 0.01,
    decay: float = 0.99,
    eps: float = 1e-8,
    weight_decay: float = 0.0,
    momentum: float = 0.0,
    centered: bool = False,
    *,
    alpha: float | None = None,
) -> RMSprop:
    """RMSprop, ``decay`` = torch's ``alpha`` (``torch.optim.RMSprop``, its arguments in its
    order; ``alpha=`` is accepted as torch spells it): L2 ``weight_decay`` added to the gradient,
    ``momentum`` on the scaled step and ``centered`` (the denominator uses the variance estimate
    ``v - mean(g)**2``, one more state buffer per parameter), in torch's order of operations.
    ``lr`` finite and >= 0, ``decay`` and ``momentum`` in ``[0, 1)`` (torch accepts 1 and any
    momentum >= 0), ``eps`` finite and > 0, ``weight_decay`` finite and >= 0, checked as by
    :func:`sgd`; ``centered`` a bool.

    Raises:
        OptimizerError: a value that is not a real number (or a bool, for ``centered``) or out of
            its domain; ``alpha`` given together with a ``decay`` other than its default.
    """
    if alpha is not None:
        if decay != 0.99:
            raise OptimizerError(
                f"optimizer: pass alpha or decay, not both (got alpha={alpha!r}, decay={decay!r})"
            )
        decay = alpha
    return RMSprop(
        lr=lr, decay=decay, eps=eps, weight_decay=weight_decay, momentum=momentum, centered=centered
    )


def adagrad(
    lr: float = 0.01,
    lr_decay: float = 0.0,
    weight_decay: float = 0.0,
    initial_accumulator_value: float = 0.0,
    eps: float = 1e-10,
) -> Adagrad:
    """Adagrad (``torch.optim.Adagrad``, its arguments in its order; Duchi et al. 2011): step ``t``
    runs at ``lr / (1 + (t - 1) * lr_decay)``, L2 ``weight_decay`` is added to the gradient, and the
    sum of squared gradients starts at ``initial_accumulator_value``. ``lr`` finite and >= 0,
    ``eps`` finite and > 0, the others finite and >= 0, checked as by :func:`sgd`.

    Raises:
        OptimizerError: a value that is not a real number or out of its domain.
    """
    return Adagrad(
        lr=lr,
        lr_decay=lr_decay,
        weight_decay=weight_decay,
        initial_accumulator_value=initial_accumulator_value,
        eps=eps,
    )


Selector = Callable[[str, tuple[int, ...]], bool]
"""A group's selection function: ``(name, shape) -> bool`` for each parameter."""

@dataclass(frozen=True, slots=True)
class ParamGroup:
    r"""Other hyper-parameters for the parameters a group selects: torch's parameter groups
    (``torch.optim.AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}])``),
    selected by name. Build one with :func:`group`; :meth:`OptimizerConfig.create` (``groups=``)
    and ``RunConfig(param_groups=...)`` take them.

    ``match`` is a regular expression (a string or a compiled ``re.Pattern``) searched in each
    parameter's name (``re.search``: ``r"bias$"`` selects ``0.bias`` and ``2.bias``, ``r"^0\."``
    the first layer's; a layer norm's scale is ``1.weight`` or ``3.ln1.weight``, named by its
    position, not by its kind) or a function ``(name, shape) -> bool`` (nanoGPT's rule, no decay
    for biases and norm scales: ``lambda name, shape: len(shape) < 2``; a lambda or a local
    function cannot be pickled, so a ``RunConfig`` or an unrun ``Trainer`` holding one deep-copies
    but does not pickle: use a module-level function to send it to another process).
    ``overrides`` are ``(field, value)`` pairs of the optimizer record (``weight_decay``,
    ``beta1``, ``momentum``, ``amsgrad``, ...) and ``lr_scale``: the group's learning rate is the
    optimizer's times ``lr_scale`` (torch's groups hold a rate of their own, which its schedulers
    scale with the others; a scale states that).

    Raises:
        OptimizerError: ``match`` neither a regular expression nor callable; an override named
            ``lr`` (use ``lr_scale``), a name that is not a string, a value that is neither a bool
            nor a real number, ``lr_scale`` not a finite real number >= 0 (bools refused).
    """

    match: str | re.Pattern[str] | Selector
    overrides: tuple[tuple[str, float | bool], ...] = ()

    def __post_init__(self) -> None:
        if isinstance(self.match, re.Pattern):
            if not isinstance(self.match.pattern, str):
                raise OptimizerError(f"optimizer: a group pattern must match text, got {self.match!r}")
        elif isinstance(self.match, str):
            try:
                re.compile(self.match)
            except (re.error, OverflowError, RecursionError) as error:  # a{99999999999}, deep nesting
                detail = str(error) if isinstance(error, re.error) else f"{type(error).__name__}: {error}"
                raise OptimizerError(
                    f"optimizer: group pattern {_preview(self.match, 80)} is not a regular expression "
                    f"Python compiles ({detail})"
                ) from None
        elif not callable(self.match):
            raise OptimizerError(
                "optimizer: a group selects by a regular expression (str) or a function (name, shape) "
                f"-> bool, got {self.match!r}"
            )
        overrides: list[tuple[str, float | bool]] = []
        for key, value in _listed_pairs(self.overrides):
            if not isinstance(key, str):
                raise OptimizerError(f"optimizer: a group override is named by a string, got {key!r}")
            if key == "lr":
                raise OptimizerError(
                    f"optimizer: a group takes lr_scale, not lr (its rate is the optimizer's lr times "
                    f"lr_scale, so schedules scale every group), got lr={value!r}"
                )
            overrides.append((key, _override_value(key, value)))
        object.__setattr__(self, "overrides", tuple(overrides))

    @property
    def lr_scale(self) -> float:
        """The factor of the optimizer's learning rate this group runs at (1.0 unless set)."""
        return float(dict(self.overrides).get("lr_scale", 1.0))

    def selects(self, name: str, shape: tuple[int, ...]) -> bool:
        """Whether this group selects the parameter ``name`` of ``shape``.

        Raises:
            OptimizerError: the selection function returns something other than a bool.
        """
        if isinstance(self.match, str):
            return re.search(self.match, name) is not None
        if isinstance(self.match, re.Pattern):
            return self.match.search(name) is not None
        chosen = self.match(name, shape)
        if not isinstance(chosen, (bool, np.bool_)):
            raise OptimizerError(
                f"optimizer: {self.describe()} must return a bool for each parameter, got {chosen!r} "
                f"for {name!r}"
            )
        return bool(chosen)

    def describe(self) -> str:
        """``optim.group('bias', weight_decay=0.0)``: the group as :func:`group` builds it (a
        function shown by its name)."""
        if isinstance(self.match, str | re.Pattern):
            shown_match = repr(self.match)
        else:
            shown_match = getattr(self.match, "__qualname__", "function")
        parts = [shown_match, *(f"{key}={value!r}" for key, value in self.overrides)]
        return f"optim.group({', '.join(parts)})"


def _listed_pairs(overrides: object) -> list[tuple[object, object]]:
    """``overrides`` as ``(key, value)`` pairs (a mapping's items, or a sequence of pairs)."""
    items = overrides.items() if isinstance(overrides, Mapping) else overrides
    if not isinstance(items, Iterable) or isinstance(items, str | bytes):
        raise OptimizerError(f"optimizer: group overrides must be (name, value) pairs, got {overrides!r}")
    pairs = [tuple(item) if isinstance(item, tuple | list) else item for item in items]
    if any(not isinstance(pair, tuple) or len(pair) != 2 for pair in pairs):
        raise OptimizerError(f"optimizer: group overrides must be (name, value) pairs, got {overrides!r}")
    return pairs


def _override_value(key: str, value: object) -> float | bool:
    """A group override's value: a bool stays a bool (``amsgrad``, ``nesterov``), an int stays an
    int (so a bool field's refusal shows what was written), another real number becomes a float
    (its domain is the record's, checked by :func:`_group_config`); ``lr_scale`` must be a real
    number (not a bool), finite and >= 0."""
    if isinstance(value, (bool, np.bool_)):
        if key == "lr_scale":
            raise OptimizerError(f"optimizer: lr_scale must be a real number, got {value!r}")
        return bool(value)
    if not isinstance(value, numbers.Real):
        raise OptimizerError(
            f"optimizer: group override {key} must be a bool or a real number, got {value!r}"
        )
    try:
        number = float(value) + 0.0
    except OverflowError:
        raise OptimizerError(
            f"optimizer: group override {key} must be finite, got {shown(value)} (beyond the float range)"
        ) from None
    if key == "lr_scale" and not (math.isfinite(number) and number >= 0.0):
        raise OptimizerError(f"optimizer: lr_scale must be finite and nonnegative, got {value!r}")
    return int(value) if isinstance(value, int | np.integer) and key != "lr_scale" else number


def group(
    match: str | re.Pattern[str] | Selector,
    /,
    *,
    betas: tuple[float, float] | None = None,
    alpha: float | None = None,
    **overrides: float | bool,
) -> ParamGroup:
    """A parameter group (:class:`ParamGroup`): the parameters ``match`` selects by name (a
    regular expression searched in the name, or a function ``(name, shape) -> bool``) take the
    ``overrides`` of the optimizer's hyper-parameters, and ``lr_scale`` times its rate. torch's

        AdamW([{"params": decay}, {"params": no_decay, "weight_decay": 0.0}], lr=3e-4, weight_decay=0.1)

    is ``optim.adamw(3e-4, weight_decay=0.1)`` with ``groups=[optim.group(lambda name, shape:
    len(shape) < 2, weight_decay=0.0)]`` (biases and norm scales; ``optim.group(r"bias$",
    weight_decay=0.0)`` for the biases alone). ``betas=(b1, b2)`` is torch's spelling of
    ``beta1``/``beta2`` and ``alpha`` RMSprop's of ``decay``. Which overrides the optimizer takes
    and their domains are checked when the optimizer is created.

    Raises:
        OptimizerError: as :class:`ParamGroup`; ``betas`` not a pair, or given with
            ``beta1``/``beta2``; ``alpha`` given with ``decay``.
    """
    if alpha is not None:
        if "decay" in overrides:
            raise OptimizerError(
                f"optimizer: pass alpha or decay, not both (got alpha={alpha!r}, "
                f"decay={overrides['decay']!r})"
            )
        overrides = {**overrides, "decay": alpha}
    if betas is not None:
        if not isinstance(betas, tuple | list) or len(betas) != 2:
            raise OptimizerError(f"optimizer: betas must be a pair (beta1, beta2), as torch's, got {betas!r}")
        if "beta1" in overrides or "beta2" in overrides:
            given = {k: overrides[k] for k in ("beta1", "beta2") if k in overrides}
            raise OptimizerError(
                f"optimizer: pass betas or beta1/beta2, not both (got betas={betas!r}, {given})"
            )
        overrides = {**overrides, "beta1": betas[0], "beta2": betas[1]}
    return ParamGroup(match, tuple(overrides.items()))


def _listed_groups(groups: object) -> list[ParamGroup]:
    """``groups`` as a list of :class:`ParamGroup` (any sequence of them).

    Raises:
        OptimizerError: not a sequence (one group alone included), or an entry that is not a group.
    """
    single = isinstance(groups, ParamGroup | str | bytes | Mapping)
    if single or not isinstance(groups, Iterable):
        raise OptimizerError(
            f"optimizer: groups must be a sequence of optim.group(...) records, got {_type_name(groups)}"
        )
    listed = list(groups)
    for index, entry in enumerate(listed):
        if not isinstance(entry, ParamGroup):
            raise OptimizerError(
                f"optimizer: group {index} must be an optim.group(...) record, got {_type_name(entry)}"
            )
    return listed


def _checked_names(names: object, count: int, required: bool) -> tuple[str, ...]:
    """The parameters' names for ``create``: one string per parameter, or none at all.

    Raises:
        OptimizerError: groups without names; names that are not a sequence of ``count`` strings.
    """
    if names is None:
        if required:
            raise OptimizerError(
                "optimizer: groups select parameters by name: pass names= (for a model, model.names)"
            )
        return ()
    if isinstance(names, str | bytes | Mapping) or not isinstance(names, Iterable):
        raise OptimizerError(f"optimizer: names must be a sequence of strings, got {_type_name(names)}")
    listed = list(names)
    others = [name for name in listed if not isinstance(name, str)]
    if others:
        raise OptimizerError(f"optimizer: names must be strings, got {others[0]!r}")
    if len(listed) != count:
        raise OptimizerError(f"optimizer: expected {count} names (one per parameter), got {len(listed)}")
    return tuple(listed)


def _membership(
    groups: Sequence[ParamGroup], names: Sequence[str], shapes: Sequence[tuple[int, ...]]
) -> tuple[int | None, ...]:
    """Per parameter, the index of the one group that selects it, or ``None``.

    Raises:
        OptimizerError: a parameter two groups select (torch refuses a parameter in two groups).
        GroupSelectionError: a group that selects none (a misspelt pattern), naming the
            parameters.
    """
    membership: list[int | None] = []
    for name, shape in zip(names, shapes, strict=True):
        hits = [index for index, g in enumerate(groups) if g.selects(name, tuple(shape))]
        if len(hits) > 1:
            raise OptimizerError(
                f"optimizer: parameter {name!r} is selected by {groups[hits[0]].describe()} and "
                f"{groups[hits[1]].describe()} (a parameter belongs to one group, as in torch)"
            )
        membership.append(hits[0] if hits else None)
    for index, g in enumerate(groups):
        if index not in membership:
            message = f"optimizer: {g.describe()} selects no parameter (names: {names_shown(names)})"
            raise GroupSelectionError(message, g, names)
    return tuple(membership)


_NOT_PER_GROUP = ("lr", "initial_accumulator_value")
"""Fields a group does not override: the rate (``lr_scale`` scales it) and Adagrad's starting sum
(torch's Adagrad initialises every group's state from the constructor's value)."""


def _group_config(config: OptimizerConfig, g: ParamGroup) -> OptimizerConfig:
    """``config`` with ``g``'s overrides and its learning rate times ``g.lr_scale``, validated.

    Raises:
        OptimizerError: an override ``config`` has no field for, or out of its domain (the
            record's message, then ``(in optim.group(...))``).
    """
    accepted = [f.name for f in fields(config) if f.name not in _NOT_PER_GROUP]  # type: ignore[arg-type]
    changes = {key: value for key, value in g.overrides if key != "lr_scale"}
    if "initial_accumulator_value" in changes:
        raise OptimizerError(
            f"optimizer: {g.describe()} sets initial_accumulator_value, which torch's Adagrad takes "
            "from the optimizer only (it ignores a group's): set it in optim.adagrad(...)"
        )
    unknown = [key for key in changes if key not in accepted]
    if unknown:
        raise OptimizerError(
            f"optimizer: {g.describe()} sets {unknown[0]}, which optim.{config.name} does not take "
            f"(accepted: {', '.join([*accepted, 'lr_scale'])})"
        )
    try:
        return replace(config, lr=config.lr * g.lr_scale, **changes)  # type: ignore[type-var]
    except OptimizerError as error:
        raise OptimizerError(f"{error} (in {g.describe()})") from None


def _real(name: str, value: object) -> float:
    """``value`` as a float for :func:`clip_grad_norm`: a real number (bools refused); one beyond
    the float range (``10**400``) is refused rather than raising ``OverflowError``."""
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, numbers.Real):
        raise OptimizerError(f"clip_grad_norm: {name} must be a real number, got {value!r}")
    try:
        return float(value)
    except OverflowError:
        message = f"clip_grad_norm: {name} must be a float, got {shown(value)} (beyond the float range)"
        raise OptimizerError(message) from None


def clip_grad_norm(
    grads: Sequence[Array | None], max_norm: float, *, norm_type: float = 2.0
) -> tuple[list[Array | None], float]:
    """Scale the gradients so that their total norm is at most ``max_norm``
    (``torch.nn.utils.clip_grad_norm_``): returns the clipped gradients (new arrays; ``None``
    entries stay ``None``, as torch skips parameters without a gradient) and the total norm before
    clipping, as a Python float.

    As torch computes it: each gradient's ``norm_type``-norm (``inf``: the largest magnitude), the
    same norm of those norms (``0.0`` when every entry is ``None``, and for empty gradients, where
    torch's infinity norm raises), ``coef = max_norm / (total + 1e-6)`` (evaluated as torch does,
    ``reciprocal(total + 1e-6) * max_norm``) clamped to at most 1, every gradient multiplied by
    ``coef`` (by 1.0 under the limit: values unchanged). The norms are computed in the gradients'
    dtype (float16 ones in float32), as torch's, so they overflow where torch's do (float32
    gradients whose squares pass about 3.4e38); torch sums in another order, so a norm may differ
    from torch's by a few ulps, and by more for gradients of millions of entries, where torch's
    float32 sum drifts (numpy's pairwise sum stays within about an ulp of the exact norm). A NaN or
    infinite total (torch's default ``error_if_nonfinite=False``) makes ``coef`` NaN or 0, so the
    gradients become NaN or zeros (NaN where infinite), as in torch: an overflowed norm skips the
    update.

    Raises:
        OptimizerError: ``max_norm`` not a real number (or beyond the float range, as ``10**400``),
            or negative or NaN (torch accepts a negative
            one and then flips every gradient's sign), ``norm_type`` not ``inf`` or a finite
            number > 0; gradients that are not numpy float arrays of one dtype, or not a sequence
            (as :meth:`Optimizer.step`).
    """
    limit, p = _real("max_norm", max_norm), _real("norm_type", norm_type)
    if not limit >= 0.0:
        raise OptimizerError(f"clip_grad_norm: max_norm must be >= 0 (inf allowed), got {max_norm!r}")
    if not (p > 0.0 and (math.isfinite(p) or p == math.inf)):
        raise OptimizerError(
            f"clip_grad_norm: norm_type must be inf or a finite number > 0, got {norm_type!r}"
        )
    grads = _listed("gradients", grads, "clip_grad_norm")
    present = [(index, grad) for index, grad in enumerate(grads) if grad is not None]
    for index, grad in present:
        if not isinstance(grad, np.ndarray) or grad.dtype not in _FLOAT_DTYPES:
            raise OptimizerError(_not_a_float_array("gradient", index, grad, "clip_grad_norm"))
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
        if p == math.inf:
            return dtype.type(magnitudes.max())
        if p == 2.0:
            return dtype.type(np.sqrt(np.sum(magnitudes * magnitudes)))
        return dtype.type(np.sum(magnitudes ** work.type(p)) ** work.type(1.0 / p))

    with np.errstate(all="ignore"):
        total = norm(np.array([norm(grad) for _, grad in present], dtype=dtype))
        # torch's max_norm / (total + 1e-6) is Tensor.__rtruediv__: reciprocal(total + 1e-6) * max_norm
        coef = (dtype.type(1.0) / (total + dtype.type(1e-6))) * dtype.type(limit)
        coef = np.minimum(coef, dtype.type(1.0))
        clipped = list(grads)
        for index, grad in present:
            clipped[index] = np.asarray(grad * coef, dtype=dtype)
    return clipped, float(total)


OPTIMIZERS: dict[str, type[OptimizerConfig]] = {
    "sgd": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
}


def by_name(name: str, lr: float) -> OptimizerConfig:
    """The optimizer called ``name`` with learning rate ``lr`` and default other settings,
    validated at once.

    Raises:
        UnknownLabelError: ``unknown optimizer X (known: sgd | adam | ...)``.
        OptimizerError: ``lr`` is not a real number or is out of its domain.
    """
    if not isinstance(name, str) or name not in OPTIMIZERS:
        raise UnknownLabelError(f"unknown optimizer {name_shown(name)} (known: {' | '.join(OPTIMIZERS)})")
    return OPTIMIZERS[name](lr=lr)  # type: ignore[call-arg]
