"""The optimizer records (``optim.sgd(...)`` and the others), their numpy update rules in
torch's order of operations, and the stateful :class:`Optimizer` they create."""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field, fields, replace
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar, NoReturn

import numpy as np
import numpy.typing as npt

from torchlean._checks import plain_bool, plain_float, shown, shown_briefly
from torchlean._interrupts import store_together
from torchlean._module_hints import OPTIMIZER_HINTS, missing_attribute
from torchlean._slots import PicklesAtEveryProtocol
from torchlean.autograd.grad_mode import no_grad
from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError
from torchlean.optim._clip import clip_grad_norm, clip_grad_value, clip_limit
from torchlean.optim._common import (
    _FLOAT_DTYPES,
    Array,
    OptimizerError,
    _eps_check,
    _listed,
    _lr_check,
    _not_a_float_array,
    _plain_arrays,
    _require_like,
    _type_name,
    _unit_check,
    _validate_both,
)
from torchlean.optim._groups import (
    ALPHA_IS_DECAY,
    ParamGroup,
    _checked_names,
    _group_config,
    _listed_groups,
    _membership,
    as_written,
    betas_pair,
    freezing,
    names_shown,
)
from torchlean.optim._ties import refuse_split_ties
from torchlean.optim._torch_forms import (
    PARAMS_FIRST,
    one_spelling,
    parameters_shown,
    torch_forms_refused,
    torch_order,
)
from torchlean.tensor import BoolLike, RealLike, Tensor

Updated = tuple[Array, Array, Array, Array | None]
"""What :meth:`OptimizerConfig.update` returns: the new parameter and its new state buffers
``(param, m, v, third)``."""

_FIELD_WORDS = {"lr": "learning rate", "eps": "epsilon", "weight_decay": "weight decay"}
"""How the messages name a field (the others by their own name)."""


class OptimizerConfig(ABC):
    """A validated optimizer record; :meth:`create` gives the stateful optimizer."""

    name: str = ""
    lr: float
    third_buffer: ClassVar[tuple[str, str]] = ("its setting", "a third buffer")
    """The setting that makes :meth:`has_third` true and what its buffer holds, as messages name
    them (``("amsgrad", "AMSGrad's running maximum of v")``)."""
    never_negative: ClassVar[Mapping[str, str]] = MappingProxyType({})
    """The state buffers (``second``, ``third``) that no run of this record makes negative, each
    with what it holds (Adam's ``second``: a running mean of squared gradients); a state loaded
    with a negative entry there was altered (review158 F6: it trained into NaN)."""

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
                got = parameters_shown(value) or shown_briefly(value)  # not every weight (review89 F5)
                message = f"optimizer: {word} must be a real number (int or float), got {got}"
                if f.name == "lr" and parameters_shown(value):
                    message += PARAMS_FIRST.format(name=self.name)  # torch's Optimizer(params, lr) order
                elif getattr(value, "ndim", None) == 0 and not isinstance(value, np.bool_):  # a 0-d array
                    message += f": pass it as a number, float({f.name})"
                raise OptimizerError(message)
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
        shape, 0-d included; a subclass such as ``np.matrix`` is read as a plain array, here and in
        :meth:`Optimizer.step`, and a masked array with a masked entry is refused); its state buffers
        take its shape and dtype, which :meth:`Optimizer.step` then requires. A torchlean ``Tensor``
        is refused (pass ``tensor.numpy()``): the optimizer returns new numpy arrays, so it works on
        host arrays only.

        ``groups`` (:func:`group`) give the parameters they select other hyper-parameters, as
        torch's parameter groups do; they select by the parameters' ``names`` (one string per
        parameter: for a model, ``model.names``), so ``names`` is required with them. A parameter
        no group selects takes this record. Everything is checked here, before any step: each
        parameter selected by at most one group, each group selecting at least one, each
        group's hyper-parameters in their domains (:meth:`Optimizer.config_of` gives the record
        a parameter runs on).

        A parameter of a frozen group (``optim.group(..., frozen=True)``) is never updated and
        gets no state buffers (:meth:`Optimizer.is_frozen`).

        Raises:
            OptimizerError: ``optimizer: parameter 0 must be a numpy float array (numpy.ndarray of dtype
                float16, float32 or float64), got torchlean.tensor.Tensor``; ``params`` that is a
                single array or torch tensor (a 0-d one included), a string, a mapping, not
                iterable, or of more entries than memory holds (:func:`_listed`); ``groups``
                (likewise; and ``groups`` without ``names``), ``names`` not one string per
                parameter (a sized one of another length refused before any entry is read), a
                group that selects no parameter or a parameter two groups select (neither frozen),
                an override this optimizer does not take or out of its domain
                (:func:`_group_config`); frozen groups that freeze every parameter (naming them); a
                parameter that is a masked array with a masked entry (:func:`_plain_arrays`); no
                parameters at all, as torch's ``optimizer got an empty parameter list`` (review196
                F5: its steps did nothing).
            Exception: what a group's selection function raises, noted with the group and the
                parameter (:meth:`ParamGroup.selects`).
        """
        params = _plain_arrays("parameter", _listed("parameters", params))
        if not params:
            raise OptimizerError(
                f"optimizer: optim.{self.name}(...).create() got an empty parameter list, so nothing would "
                "train (torch refuses it too): pass the model's parameters, model.parameters"
            )
        for index, param in enumerate(params):
            if not isinstance(param, np.ndarray) or param.dtype not in _FLOAT_DTYPES:
                raise OptimizerError(_not_a_float_array("parameter", index, param))
        groups = tuple(_listed_groups(groups))
        shown_names = _checked_names(names, len(params), bool(groups))
        shapes = [p.shape for p in params]
        membership = _membership(groups, shown_names, shapes) if groups else (None,) * len(params)
        group_configs = [_group_config(self, g) for g in groups]
        configs = [self if member is None else group_configs[member] for member in membership]
        frozen = [member is not None and groups[member].frozen for member in membership]
        if params and all(frozen):
            raise OptimizerError(
                f"optimizer: {freezing(groups)} every parameter ({names_shown(shown_names)}), so nothing "
                "would train (freeze fewer)"
            )
        return Optimizer(
            self,
            [_no_state(p) if cold else np.zeros_like(p) for p, cold in zip(params, frozen, strict=True)],
            [_no_state(p) if cold else c.initial_second(p) for p, c, cold in zip(params, configs, frozen,
                                                                                 strict=True)],
            [0] * len(params),
            third=[np.zeros_like(p) if c.has_third() and not cold else None
                   for p, c, cold in zip(params, configs, frozen, strict=True)],
            groups=groups,
            names=shown_names,
            membership=membership,
            group_configs=group_configs,
        )

    @abstractmethod
    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Updated:
        """Return the new parameter and this parameter's new state ``(param, m, v, third)``;
        ``m``/``v`` are its state buffers and ``third`` its third buffer where :meth:`has_third`
        (Adam's ``amsgrad``: the running maximum of ``v``; RMSprop's ``centered``: the gradient
        average), else ``None``. No argument is changed: each buffer that moves comes back as a new
        array (one that does not move, as itself), so :meth:`Optimizer.step` stores the whole step
        at once, with no copies of the buffers made beforehand (review61 F2)."""

    def has_third(self) -> bool:
        """Whether the update keeps a third state buffer per parameter (none by default)."""
        return False

    def initial_second(self, param: Array) -> Array:
        """The second state buffer a parameter starts with: zeros of its shape and dtype (Adagrad
        starts its sum at ``initial_accumulator_value``)."""
        return np.zeros_like(param)


@torch_forms_refused("sgd")
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
    ) -> Updated:
        # torch.optim.sgd._single_tensor_sgd: g = g.add(param, alpha=weight_decay); buf = clone(g) at
        # the first step, else buf.mul_(momentum).add_(g, alpha=1 - dampening); g = g.add(buf,
        # alpha=momentum) with Nesterov, else buf; param.add_(g, alpha=-lr).
        dt = param.dtype.type
        if self.weight_decay != 0.0:
            grad = grad + dt(self.weight_decay) * param
        if self.momentum != 0.0:
            if step == 1:  # a copy: grad may be the caller's array
                m = np.array(grad, dtype=m.dtype)
            else:  # dampening 0 multiplies by 1.0, exactly
                m = np.asarray(dt(self.momentum) * m + dt(1.0 - self.dampening) * grad, dtype=m.dtype)
            grad = grad + dt(self.momentum) * m if self.nesterov else m
        return param + dt(-self.lr) * grad, m, v, third


class _AdamFamily(OptimizerConfig):
    """Adam's and AdamW's shared domain checks and AMSGrad buffer (their fields are the
    dataclasses')."""

    lr: float
    beta1: float
    beta2: float
    eps: float
    weight_decay: float
    amsgrad: bool

    def checks(self) -> list[tuple[float, str, str]]:
        return [
            _lr_check(self.lr),
            _unit_check(self.beta1, "beta1"),
            _unit_check(self.beta2, "beta2"),
            _eps_check(self.eps),
            (self.weight_decay, "nonneg", "weight decay must be finite and nonnegative"),
        ]

    third_buffer = ("amsgrad", "AMSGrad's running maximum of v")
    never_negative = MappingProxyType({
        "second": "the second moment, a running mean of squared gradients",
        "third": "AMSGrad's running maximum of the second moment",
    })

    def has_third(self) -> bool:
        return self.amsgrad


@torch_forms_refused("adam")
@dataclass(frozen=True, slots=True)
class Adam(_AdamFamily):
    """Adam (Kingma & Ba 2015) with bias correction and L2 ``weight_decay`` added to the gradient,
    and the AMSGrad variant (Reddi et al. 2018) with ``amsgrad``, as ``torch.optim.Adam``."""

    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.0
    amsgrad: bool = False
    name = "adam"

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Updated:
        # torch.optim.adam._single_tensor_adam: grad = grad.add(param, alpha=weight_decay) first.
        if self.weight_decay != 0.0:
            grad = grad + param.dtype.type(self.weight_decay) * param
        return _adam_step(self, step, param, grad, m, v, third)


@torch_forms_refused("adamw")
@dataclass(frozen=True, slots=True)
class AdamW(_AdamFamily):
    """Adam with decoupled weight decay (Loshchilov & Hutter 2019), with ``amsgrad`` as
    :class:`Adam`'s, as ``torch.optim.AdamW``."""

    lr: float = 0.001
    beta1: float = 0.9
    beta2: float = 0.999
    eps: float = 1e-8
    weight_decay: float = 0.01
    amsgrad: bool = False
    name = "adamw"

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Updated:
        decayed = param * param.dtype.type(1.0 - self.lr * self.weight_decay)
        return _adam_step(self, step, decayed, grad, m, v, third)


def _lerp(m: Array, grad: Array, weight: np.floating[Any]) -> Array:
    """``m.lerp_(grad, weight)`` as a new array (``m`` unchanged), by torch's scalar rule:
    ``m + weight * (grad - m)`` for ``|weight| < 0.5``, else ``grad - (grad - m) * (1 - weight)``,
    computed into the array that holds ``grad - m`` (the operands in the same order as in place, so
    the same bits). A ufunc on 0-d operands returns a numpy scalar, which cannot be written through
    ``out=``: ``np.asarray`` makes it a 0-d array (and returns any other result as it is)."""
    diff = np.asarray(np.subtract(grad, m))
    if abs(weight) < 0.5:
        diff *= weight
        np.add(m, diff, out=diff)
    else:
        diff *= weight.dtype.type(1.0) - weight
        np.subtract(grad, diff, out=diff)
    return diff


def _adam_step(
    config: _AdamFamily, step: int, start: Array, grad: Array, m: Array, v: Array, v_max: Array | None
) -> Updated:
    """Return ``(start - lr / (1 - b1^t) * m / denom, m, v, v_max)`` with the moments ``m`` and
    ``v`` updated (new arrays; the arguments are unchanged) and ``denom = sqrt(v) / sqrt(1 - b2^t)
    + eps``; with ``amsgrad``, the new ``v_max`` is ``maximum(v_max, v)`` (NaN propagating, as
    ``torch.maximum``) and takes ``v``'s place in ``denom``.

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
    m = _lerp(m, grad, dt(1.0 - config.beta1))
    # v.mul_(b2).addcmul_(g, g, value=1 - b2): v*b2 + ((1 - b2)*g)*g.
    term = np.asarray(np.multiply(grad, dt(1.0 - config.beta2)))
    term *= grad
    v = np.asarray(np.multiply(v, dt(config.beta2)))
    v += term
    step_size = config.lr / (1.0 - config.beta1**step)
    bias2_sqrt = (1.0 - config.beta2**step) ** 0.5
    if config.amsgrad:
        if v_max is None:  # pragma: no cover - create allocates it for every amsgrad parameter
            raise AssertionError("amsgrad needs its v_max buffer")
        v_max = np.asarray(np.maximum(v_max, v))
    denom = np.asarray(np.sqrt(v if v_max is None else v_max))
    denom /= dt(bias2_sqrt)
    denom += dt(config.eps)
    # addcdiv_(m, denom, value=-step_size): start + (-step_size * m) / denom.
    update: Array = np.asarray(np.multiply(m, dt(-step_size)))
    update /= denom
    np.add(start, update, out=update)  # start + update, into the array update holds
    return update, m, v, v_max


def _less_square(v: Array, a: Array) -> Array:
    """``v - a * a``, as torch's fused ``v.addcmul(a, a, value=-1)`` computes it where ``a * a``
    is beyond the dtype's range: float32 operands are subtracted in float64, where ``a * a`` is
    exact, and rounded once to float32, so an ``a`` past about 1.8e19 gives ``v``'s ``inf`` rather
    than ``inf - inf = NaN`` (review116 F1); float64 operands in float64 (two roundings, a last-bit
    difference from the fused op as this module allows, but for ``v == a * a`` in real arithmetic,
    as centered RMSprop with ``decay`` 0 makes it: this gives 0, the fused op the rounding error of
    ``a * a``, whose square root is NaN when negative: review196 F7), an infinite ``v`` giving ``inf`` where a
    finite ``a``'s square overflows too (past about 1.3e154: review118 F2; a finite ``v`` holds the
    square of the average, so it does not overflow there), an infinite or NaN ``a`` NaN, as the
    fused op gives (review119). ``[*]`` of ``v``'s dtype."""
    with np.errstate(over="ignore", invalid="ignore"):  # inf - inf: NaN, as torch, quietly
        if v.dtype == np.float32:
            wide = v.astype(np.float64) - np.square(a.astype(np.float64))
            return wide.astype(np.float32)
        result: Array = np.where(np.isposinf(v) & np.isfinite(a), v, v - a * a)  # inf a: NaN, as torch
    return result


@torch_forms_refused("rmsprop")
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

    third_buffer = ("centered", "centered RMSprop's gradient average")
    never_negative = MappingProxyType({"second": "the running mean of squared gradients"})

    def has_third(self) -> bool:
        return self.centered

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Updated:
        # torch.optim.rmsprop._single_tensor_rmsprop: g = g.add(param, alpha=weight_decay);
        # v.mul_(alpha).addcmul_(g, g, value=1 - alpha); centered: grad_avg.lerp_(g, 1 - alpha),
        # avg = v.addcmul(grad_avg, grad_avg, value=-1).sqrt_(), else v.sqrt(); avg.add_(eps);
        # momentum: buf.mul_(momentum).addcdiv_(g, avg), param.add_(buf, alpha=-lr); else
        # param.addcdiv_(g, avg, value=-lr).
        dt = param.dtype.type
        if self.weight_decay != 0.0:
            grad = grad + dt(self.weight_decay) * param
        v = np.asarray(dt(self.decay) * v + dt(1.0 - self.decay) * grad * grad, dtype=v.dtype)
        if self.centered:
            if third is None:  # pragma: no cover - create allocates it for every centered parameter
                raise AssertionError("centered RMSprop needs its gradient-average buffer")
            third = _lerp(third, grad, dt(1.0 - self.decay))
            avg = np.sqrt(_less_square(v, third)) + dt(self.eps)
        else:
            avg = np.sqrt(v) + dt(self.eps)
        if self.momentum != 0.0:
            m = np.asarray(m * dt(self.momentum) + grad / avg, dtype=m.dtype)
            return param + dt(-self.lr) * m, m, v, third
        return param + dt(-self.lr) * grad / avg, m, v, third


@torch_forms_refused("adagrad")
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

    never_negative = MappingProxyType({"second": "the sum of squared gradients"})

    def initial_second(self, param: Array) -> Array:
        return np.full_like(param, self.initial_accumulator_value)

    def update(
        self, step: int, param: Array, grad: Array, m: Array, v: Array, third: Array | None = None
    ) -> Updated:
        # torch.optim.adagrad._single_tensor_adagrad: g = g.add(param, alpha=weight_decay);
        # clr = lr / (1 + (step - 1) * lr_decay) (Python floats); sum.addcmul_(g, g, value=1);
        # param.addcdiv_(g, sum.sqrt().add_(eps), value=-clr).
        dt = param.dtype.type
        if self.weight_decay != 0.0:
            grad = grad + dt(self.weight_decay) * param
        clr = self.lr / (1 + (step - 1) * self.lr_decay)
        v = np.asarray(v + grad * grad, dtype=v.dtype)
        return param + dt(-clr) * grad / (np.sqrt(v) + dt(self.eps)), m, v, third


def _no_state(param: Array) -> Array:
    """The state buffer of a frozen parameter: a read-only zero of its shape and dtype that
    holds one value (``np.broadcast_to``), so a frozen backbone costs no state memory; it is the
    template :meth:`Optimizer.step` checks the parameter against, and is never updated or saved."""
    return np.broadcast_to(np.zeros((), dtype=param.dtype), param.shape)


@dataclass(frozen=True, slots=True)
class _PreparedStep:
    """One optimizer step computed but not stored (:meth:`Optimizer._prepare_step`): the new
    parameters, and the optimizer's new ``steps``, ``param_steps`` and state buffer lists."""

    params: list[Array]
    steps: int
    param_steps: list[int]
    first: list[Array]
    second: list[Array]
    third: list[Array | None]


def _indices(keys: list[str]) -> list[int]:
    """The parameter indices of entries ``<kind>.<i>``."""
    return [int(key.rpartition(".")[2]) for key in keys]


def _third_buffer_hint(config: OptimizerConfig, saved_with: list[int], saved_without: list[int]) -> str:
    """The hint of a state whose entries differ in the ``third.<i>`` buffers only: it was saved
    with ``amsgrad`` (``centered``) set otherwise than this optimizer has it, for the parameters
    ``saved_with`` (the state has their buffer) and ``saved_without`` (review72 F1, review75 F4;
    the frozen-groups hint named a cause that was not there)."""
    setting, buffer = config.third_buffer
    if not saved_without:
        saved = f"{setting}=True for those parameters, this optimizer has {setting}=False"
        remedy = f"{setting}=True"
    elif not saved_with:
        saved = f"{setting}=False for those parameters, this optimizer has {setting}=True"
        remedy = f"{setting}=False"
    else:
        saved = (f"{setting}=True for parameters {saved_with} and {setting}=False for parameters "
                 f"{saved_without}, this optimizer the other way round")
        remedy = f"the {setting} settings (parameter groups) it was saved with"
    return (
        f"per-parameter entries differ in third.<i> only, {buffer}: the state was saved with {saved}; "
        f"create it with {remedy}"
    )


def _unfrozen(missing: set[str], saved_steps: npt.NDArray[Any], count: int) -> set[str]:
    """The parameter indices (as the entries spell them) whose every buffer is missing from a
    state and whose saved step count is 0: parameters frozen where the state was saved (a frozen
    parameter keeps no state and never steps) and trainable here. They load as torch loads a
    parameter without state, from the buffers ``create`` gives (freeze, then unfreeze to
    fine-tune: review89 F4).
    A parameter missing some buffers only, or with a nonzero count, is not one of them."""
    if saved_steps.shape != (count,) or saved_steps.dtype.kind not in "iu":
        return set()
    by_index: dict[str, set[str]] = {}
    for key in missing:
        kind, _, index = key.rpartition(".")
        by_index.setdefault(index, set()).add(kind)
    return {
        index for index, kinds in by_index.items()
        if index.isdigit() and int(index) < count and saved_steps[int(index)] == 0
        and {"first", "second"} <= kinds
    }


@dataclass(slots=True)
class Optimizer(PicklesAtEveryProtocol):
    """The stateful optimizer: per-parameter first/second moment buffers and step counts.

    ``steps`` counts calls of :meth:`step`; ``param_steps[i]`` counts the updates parameter ``i``
    received, the ``t`` of its bias corrections and of SGD's first-momentum step. As in
    ``torch.optim``, a parameter whose gradient is ``None`` is skipped: neither its state nor its
    count moves. A frozen parameter (:meth:`is_frozen`) is skipped whatever its gradient.
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

    if not TYPE_CHECKING:  # mypy keeps reporting unknown attributes; at run time they get a hint

        def __getattr__(self, name: str) -> NoReturn:
            """An attribute ``Optimizer`` lacks: ``AttributeError``, with torchlean's spelling for
            the ``torch.optim.Optimizer`` attributes ported code reaches for (``zero_grad``:
            :meth:`step_` clears the gradients; ``param_groups``;
            :data:`~torchlean._module_hints.OPTIMIZER_HINTS`), as ``Tensor`` does."""
            raise missing_attribute(self, name, OPTIMIZER_HINTS)

    def is_frozen(self, index: int) -> bool:
        """Whether parameter ``index`` belongs to a frozen group (``optim.group(..., frozen=True)``):
        never updated, no state buffers, left out of :meth:`step_`'s clipping norm."""
        member = self.membership[index]
        return member is not None and self.groups[member].frozen

    @property
    def frozen(self) -> tuple[bool, ...]:
        """:meth:`is_frozen` of every parameter, in order."""
        return tuple(self.is_frozen(index) for index in range(len(self.first)))

    def config_of(self, index: int) -> OptimizerConfig:
        """The record parameter ``index`` is updated with: its group's (``config`` with the
        group's overrides, the learning rate scaled by its ``lr_scale``) or ``config``."""
        member = self.membership[index]
        return self.config if member is None else self.group_configs[member]

    def state_dict(self) -> dict[str, np.ndarray[Any, Any]]:
        """The optimizer's state as a flat mapping of numpy arrays (copies), so that
        ``np.savez(path, **optimizer.state_dict())`` saves it and :meth:`load_state_dict` resumes
        from ``np.load(path)`` (torch's ``optimizer.state_dict()``): ``steps`` (0-d int64),
        ``param_steps`` (int64, one per parameter), and per parameter ``i`` its buffers
        ``first.i``, ``second.i`` and, where the record keeps one, ``third.i``; ``kind``, the
        record's name (0-d str: ``"sgd"``, ``"adam"``, ``"adamw"``, ``"rmsprop"``,
        ``"adagrad"``), since SGD's momentum and Adam's first moment have the same entries; and
        ``lr`` (0-d float64), the learning rate in effect (``config.lr``, which :meth:`set_lr`
        changes; each group's rate is it times the group's ``lr_scale``), as torch's
        ``param_groups`` carry ``lr``. The other hyper-parameters are not in it: they are the
        record's (``config``), which builds the optimizer the state is loaded into. A frozen
        parameter has no buffers, so no ``first.i``/``second.i``/``third.i`` entries (its
        ``param_steps`` entry stays 0), as torch keeps no state for a parameter without
        gradient."""
        state: dict[str, np.ndarray[Any, Any]] = {
            "kind": np.array(self.config.name),
            "steps": np.array(self.steps, dtype=np.int64),
            "param_steps": np.array(self.param_steps, dtype=np.int64),
            "lr": np.array(self.config.lr, dtype=np.float64),
        }
        for index, (first, second, third) in enumerate(zip(self.first, self.second, self.third, strict=True)):
            if self.is_frozen(index):
                continue
            state[f"first.{index}"] = first.copy()
            state[f"second.{index}"] = second.copy()
            if third is not None:
                state[f"third.{index}"] = third.copy()
        return state

    def load_state_dict(self, state: Mapping[str, npt.ArrayLike]) -> None:
        """Resume from :meth:`state_dict`'s mapping (torch's ``load_state_dict``): the step counts
        and every buffer, copied, and the learning rate (its ``lr`` entry: :meth:`set_lr` of it,
        so a run whose rate ``set_lr`` changed resumes at that rate, as torch's
        ``load_state_dict`` restores its ``param_groups``' ``lr``; a state without it, saved
        before the entry existed, leaves this optimizer's rate as it is). The optimizer must have
        been created for the same parameters with a record of the same kind (its ``kind`` entry;
        a state without one, saved before the entry existed, is taken by its buffers alone) and
        the same buffers (AMSGrad's or centered RMSprop's third one included); everything is
        checked before anything changes.

        A parameter frozen where the state was saved (no buffers, step count 0) and trainable here
        loads with the state :meth:`OptimizerConfig.create` gives it (zero buffers; Adagrad's sum
        at ``initial_accumulator_value``), as torch loads a parameter without state: freeze, then
        unfreeze to fine-tune (review89 F4, review90 F1). The reverse, a state with buffers for a
        parameter this optimizer freezes, is refused.

        A state saved inside a ``Trainer.fit`` with an ``lr_schedule`` (from ``on_batch``) holds
        that step's scheduled rate; a scheduled ``fit`` sets its own rate each epoch or step
        anyway. ``Trainer.fit`` restores, when it returns, the rate it started with, so a state
        saved after it holds the unscheduled rate.

        torch's own ``optimizer.state_dict()`` (entries ``state`` and ``param_groups``, tensors
        keyed by parameter index) is not read: it is refused, naming the format this takes.

        Raises:
            OptimizerError: ``state`` not a mapping; torch's optimizer format; a ``kind`` that is
                not this record's (Adam's state loaded into SGD); missing or unexpected entries
                (named); a buffer whose shape or dtype is not the parameter's; step counts that are
                not nonnegative integers of the right length; an ``lr`` that is not a 0-d real
                number or that the record refuses (``set_lr``'s checks).
        """
        if not isinstance(state, Mapping):
            raise OptimizerError(
                f"optimizer: state must be a mapping (as state_dict() returns), got {_type_name(state)}"
            )
        torch_keys = sorted(str(key) for key in ("state", "param_groups") if key in state)
        if torch_keys:
            raise OptimizerError(
                f"optimizer: state has the entries {torch_keys} of torch's optimizer.state_dict(), a format "
                "torchlean does not read; load_state_dict takes the flat mapping of numpy arrays that "
                "torchlean's Optimizer.state_dict() returns (kind, steps, param_steps, lr, and first.<i>, "
                "second.<i>, third.<i> per parameter), as np.savez(path, **optimizer.state_dict()) saves it"
            )
        if "kind" in state:
            saved_kind = np.asarray(state["kind"])
            if saved_kind.shape != () or saved_kind.dtype.kind != "U":
                raise OptimizerError(
                    "optimizer: state entry kind must be an optimizer name (a 0-d str array), got "
                    f"{saved_kind!r}"
                )
            if str(saved_kind) != self.config.name:
                raise OptimizerError(
                    f"optimizer: state was saved from optimizer {str(saved_kind)!r}, this one is "
                    f"{self.config.name!r} (create the optimizer from the record the state was saved from)"
                )
        expected = set(self.state_dict()) - ({"kind", "lr"} - set(state))  # older states lack them
        saved_steps = np.asarray(state.get("param_steps", ()))
        unfrozen = _unfrozen(expected - set(state), saved_steps, len(self.first))  # review89 F4
        expected -= {key for key in expected if key.rpartition(".")[2] in unfrozen}
        missing = sorted(expected - set(state))
        extra = sorted(str(key) for key in set(state) - expected)
        if missing or extra:
            indices = {key.rpartition(".")[2] for key in [*missing, *extra]}
            same_count = saved_steps.shape == (len(self.first),)
            indexed = all(i.isdigit() and int(i) < len(self.first) for i in indices)
            third_only = all(key.startswith("third.") for key in [*missing, *extra])
            if same_count and indexed and third_only:  # review72 F1, review75 F4
                hint = _third_buffer_hint(self.config, _indices(extra), _indices(missing))
            elif same_count and indexed:  # review58 F3
                frozen = [i for i in range(len(self.first)) if self.is_frozen(i)]
                hint = (
                    "per-parameter entries differ: a frozen parameter keeps no state, so a state with "
                    "buffers for a parameter this optimizer freezes does not load, nor one without "
                    "buffers for a parameter that has stepped (this optimizer freezes "
                    f"{'parameters ' + str(frozen) if frozen else 'none'}); create it with the groups "
                    "the state was saved with (a parameter frozen there and trainable here loads, "
                    "from no state)"
                )
            else:
                hint = "create the optimizer from the same record and parameters the state was saved from"
            raise OptimizerError(
                f"optimizer: state does not match this optimizer: missing {missing}, unexpected {extra} "
                f"({hint})"
            )
        count = len(self.first)
        steps = np.asarray(state["steps"])
        param_steps = np.asarray(state["param_steps"])
        if steps.shape != () or steps.dtype.kind not in "iu" or int(steps) < 0:
            raise OptimizerError(f"optimizer: state entry steps must be an integer >= 0, got {steps!r}")
        if param_steps.shape != (count,) or param_steps.dtype.kind not in "iu" or (param_steps < 0).any():
            raise OptimizerError(
                f"optimizer: state entry param_steps must be {count} integers >= 0, got {param_steps!r}"
            )
        configs = None if "lr" not in state else self._configs_at(state["lr"])
        buffers: dict[str, np.ndarray[Any, Any]] = {}
        for key in expected - {"kind", "steps", "param_steps", "lr"}:
            kind, index = key.split(".")
            like = getattr(self, kind)[int(index)]
            value = np.asarray(state[key])
            if value.shape != like.shape or value.dtype != like.dtype:
                raise OptimizerError(
                    f"optimizer: state entry {key} has shape {value.shape} and dtype {value.dtype}, but "
                    f"parameter {index} has shape {like.shape} and dtype {like.dtype}"
                )
            negative = negative_entry(self.config.name, key, value)
            if negative is not None:
                raise OptimizerError(f"optimizer: {negative}")
            buffers[key] = value.copy()
        self.steps = int(steps)
        self.param_steps = [int(n) for n in param_steps]
        for key, value in buffers.items():
            kind, index = key.split(".")
            getattr(self, kind)[int(index)] = value
        for position in map(int, unfrozen):  # no state yet, as create gives it (review90 F1: Adagrad's sum)
            self.first[position] = np.zeros_like(self.first[position])
            self.second[position] = self.config_of(position).initial_second(self.first[position])
            third = self.third[position]
            self.third[position] = None if third is None else np.zeros_like(third)
        if configs is not None:
            self.config, self.group_configs = configs

    def _configs_at(self, saved: npt.ArrayLike) -> tuple[OptimizerConfig, list[OptimizerConfig]]:
        """The record and the groups' records at a state's ``lr`` entry, checked (changing nothing).

        Raises:
            OptimizerError: not a 0-d real number (bools refused), or a rate the record or a
                group refuses (:meth:`set_lr`'s checks), naming the entry.
        """
        value = np.asarray(saved)
        if value.shape != () or value.dtype.kind not in "iuf":
            raise OptimizerError(
                f"optimizer: state entry lr must be a learning rate (a 0-d real number), got {value!r}"
            )
        try:
            config = replace(self.config, lr=value.item())  # type: ignore[type-var]
            return config, [_group_config(config, g) for g in self.groups]
        except OptimizerError as error:
            detail = str(error).removeprefix("optimizer: ")
            raise OptimizerError(f"optimizer: state entry lr: {detail}") from None

    def set_lr(self, lr: RealLike) -> None:
        """Use learning rate ``lr`` from the next :meth:`step` on, keeping the state (torch's
        ``param_group["lr"] = lr``, which its LR schedulers set); ``config`` becomes the record
        with this ``lr``, and each group's rate ``lr * lr_scale`` (torch's schedulers scale every
        group's rate by the same factor).

        Raises:
            OptimizerError: ``lr`` not a real number or out of the record's domain (as when the
                record is built: ``optimizer: learning rate must be finite and nonnegative, got
                -0.1``), or a group's scaled rate out of it; an array or tensor of one or more
                dimensions (``got array([0.05]): pass it as a number, float(lr.item())``, not the
                records' hint on torch's ``Optimizer(params, lr)`` order, which does not apply
                here); the optimizer is unchanged.
        """
        _refuse_array_rate(lr)
        config = replace(self.config, lr=plain_float(lr))  # type: ignore[type-var]
        group_configs = [_group_config(config, g) for g in self.groups]
        self.config, self.group_configs = config, group_configs

    def step_(
        self,
        params: Sequence[Tensor],
        *,
        max_grad_norm: RealLike | None = None,
        max_grad_value: RealLike | None = None,
    ) -> float | None:
        """Update the tensors ``params`` in place from their ``.grad`` and then set every ``.grad``
        to ``None``: torch's ``optimizer.step()`` followed by ``optimizer.zero_grad()`` (with
        ``max_grad_value``, ``clip_grad_value_`` first; with ``max_grad_norm``,
        ``clip_grad_norm_`` first, after the value clipping when both are given, as
        ``RunConfig`` orders them). A tensor whose ``.grad`` is ``None`` is
        skipped, as in :meth:`step` (buffers, parameters that do not require grad), and so is a
        parameter of a frozen group, its gradient left out of the clipping norm too (torch's
        ``requires_grad_(False)``, whose parameter has no gradient to count). Returns the total gradient norm
        before norm clipping when ``max_grad_norm`` is given (:func:`clip_grad_norm`), else ``None``.

        ``params`` are the tensors this optimizer was created for, in the same order (for a model,
        ``model.tensors()``, created from ``model.parameters``); the writes happen under
        ``no_grad``, so leaf tensors that require grad can be updated. A tensor listed at several
        positions (weights tied by passing one tensor twice) is one parameter, as in torch: its
        gradient counts once in the clipping norm, and each position computes the same update
        from the same value. Its positions must therefore take the same update rule: the same
        group, or groups with the same settings (overrides, ``lr_scale``), or both frozen; a tie
        across groups that disagree (a no-decay group on the embedding table but not on the tied
        head, a frozen table but not the head) is refused before anything changes, as torch
        refuses a parameter in two parameter groups (:func:`refuse_split_ties`), rather than
        resolved by whichever position comes last. Its positions' states (step counts, moment
        buffers) must be equal too, as they stay from a fresh optimizer: a state loaded from a run
        where the positions were separate parameters is refused (review89 F3).

        The update is computed first and then stored (the optimizer's state, every tensor, the
        ``.grad`` resets) with Ctrl-C (SIGINT) held back in the main thread until all of it is
        stored, so a ``KeyboardInterrupt`` lands before the step or after it: the tensors and the
        optimizer state always belong to the same number of steps (torch's per-parameter loop can
        be interrupted between two parameters).

        Raises:
            OptimizerError: an entry that is not a torchlean Tensor; not one tensor per parameter
                (``optimizer: expected 4 parameters, got 5``); a tensor at two positions whose
                groups disagree (``optimizer: parameters 0 ('0.weight') and 3 ('2.weight') are one
                tensor (tied weights), so one parameter, but their groups disagree: ...``, naming
                both groups and a pattern that selects both names), or whose states differ
                (``... but their optimizer states differ (their first state buffers) ...``); the
                errors of :meth:`step`,
                :func:`clip_grad_value` and :func:`clip_grad_norm` (shapes, dtypes, the limits),
                before any tensor changes.
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
        count = len(self.first)
        if len(tensors) != count:  # before is_frozen indexes them (an extra tensor was an IndexError)
            raise OptimizerError(f"optimizer: expected {count} parameters, got {len(tensors)}")
        refuse_split_ties(  # review85 F1, review89 F3
            tensors, self._update_rule, self.names, self.groups, self.membership, self._state_difference
        )
        for name, limit in (("max_grad_value", max_grad_value), ("max_grad_norm", max_grad_norm)):
            if limit is not None:  # named as step_'s arguments, not clip_grad_*'s (review58 F4)
                clip_limit(name, limit, "optimizer: step_")
        # a frozen parameter's gradient is left out of the clipping norm, as torch's requires_grad_(False)
        grads: list[Array | None] = [
            None if t.grad is None or self.is_frozen(i) else t.grad.numpy() for i, t in enumerate(tensors)
        ]
        if max_grad_value is not None:  # elementwise: a tied tensor's positions clip alike
            grads = clip_grad_value(grads, max_grad_value)
        norm = None
        if max_grad_norm is not None:  # a tensor listed twice (tied weights) is one parameter
            positions: dict[int, int] = {}
            for index, tensor in enumerate(tensors):
                positions.setdefault(id(tensor), index)
            first = list(positions.values())
            clipped, norm = clip_grad_norm([grads[index] for index in first], max_grad_norm)
            by_tensor = {id(tensors[index]): grad for index, grad in zip(first, clipped, strict=True)}
            grads = [by_tensor[id(t)] for t in tensors]
        prepared = self._prepare_step([t.numpy() for t in tensors], grads)

        def store() -> None:  # the state and the tensors are stored together (review61 F2)
            self._commit_step(prepared)
            with no_grad():
                for tensor, value, grad in zip(tensors, prepared.params, grads, strict=True):
                    if grad is not None:
                        tensor.copy_(value)
                    tensor.grad = None

        store_together(store)
        return norm

    def _state_difference(self, a: int, b: int) -> str:
        """What differs between parameters ``a`` and ``b``'s state, for :func:`refuse_split_ties`:
        ``"step counts 2 and 3"``, ``"their first state buffers"`` (the buffer as :meth:`state_dict`
        names it), or ``""`` (NaN equals NaN: both positions of a diverged tie hold it alike)."""
        if self.param_steps[a] != self.param_steps[b]:
            return f"step counts {self.param_steps[a]} and {self.param_steps[b]}"
        for name, buffers in (("first", self.first), ("second", self.second), ("third", self.third)):
            x, y = buffers[a], buffers[b]
            if (x is None) != (y is None) or (
                x is not None and y is not None and not np.array_equal(x, y, equal_nan=True)
            ):
                return f"their {name} state buffers"
        return ""

    def _update_rule(self, index: int) -> tuple[object, ...]:
        """What decides parameter ``index``'s update, for :func:`refuse_split_ties`: ``("frozen",)``
        for a frozen one, else its record and its group's ``lr_scale`` (1.0 outside groups)."""
        if self.is_frozen(index):
            return ("frozen",)
        member = self.membership[index]
        return (self.config_of(index), 1.0 if member is None else self.groups[member].lr_scale)

    def step(self, params: Sequence[Array], grads: Sequence[Array | None]) -> list[Array]:
        """Return updated parameters (new arrays); for a ``None`` gradient, and for a frozen
        parameter (:meth:`is_frozen`, whatever its gradient), the parameter itself (the same array
        object, unchanged; for a numpy array subclass such as ``np.matrix``, a plain-array view of
        it).

        ``params[i]`` must have the shape and dtype of the ``i``-th parameter given to ``create``,
        and ``grads[i]`` (when not ``None``) the same shape and dtype (as ``torch`` requires of
        ``param.grad``). Everything is checked before any state moves, so a refused step changes
        nothing. The new moments and step counts are computed into new arrays and stored together at
        the end, with Ctrl-C (SIGINT) held back for those few assignments in the main thread, so a
        ``KeyboardInterrupt`` leaves the optimizer's state either before the step or after it, never
        in between (the returned arrays are yours to store).

        Raises:
            OptimizerError: ``optimizer: expected 2 parameters, got 3`` (or ``... gradients ...``);
                ``optimizer: parameter 1 has shape (1, 2) and dtype float64, but the optimizer was
                created for shape (2,) and dtype float64``; ``optimizer: gradient 1 has shape (3,)
                and dtype float32, but parameter 1 has shape (2,) and dtype float64``; a parameter
                or gradient that is not a numpy array (a torchlean ``Tensor``, say), as in ``create``;
                ``params`` or ``grads`` that is a single array or tensor (0-d included) or not
                iterable (as in ``create``); a masked array with a masked entry (as in ``create``).
        """
        prepared = self._prepare_step(params, grads)
        store_together(lambda: self._commit_step(prepared))
        return prepared.params

    def _prepare_step(self, params: Sequence[Array], grads: Sequence[Array | None]) -> _PreparedStep:
        """:meth:`step`'s checks and arithmetic, changing nothing: the new parameters, step counts
        and state buffers (:meth:`OptimizerConfig.update` returns new buffers and leaves the
        stored ones as they are), for :meth:`_commit_step`.

        Raises:
            OptimizerError: as :meth:`step`.
        """
        params = _plain_arrays("parameter", _listed("parameters", params))
        grads = _plain_arrays("gradient", _listed("gradients", grads))
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
        param_steps = list(self.param_steps)
        first, second, third = list(self.first), list(self.second), list(self.third)
        out: list[Array] = []
        with np.errstate(all="ignore"):  # a diverging run overflows to inf silently, as torch.optim
            for index, (param, grad) in enumerate(zip(params, grads, strict=True)):
                if grad is None or self.is_frozen(index):
                    out.append(param)
                    continue
                param_steps[index] += 1
                new, first[index], second[index], third[index] = self.config_of(index).update(
                    param_steps[index], param, grad, first[index], second[index], third[index]
                )
                out.append(np.asarray(new, dtype=param.dtype))
        return _PreparedStep(out, self.steps + 1, param_steps, first, second, third)

    def _commit_step(self, prepared: _PreparedStep) -> None:
        """Store a :meth:`_prepare_step` result: five assignments, no computation (callers hold
        Ctrl-C back around them, and around the weights they store with them)."""
        self.first, self.second, self.third = prepared.first, prepared.second, prepared.third
        self.param_steps, self.steps = prepared.param_steps, prepared.steps


@torch_order
def sgd(
    lr: RealLike = 0.01,
    momentum: RealLike = 0.0,
    *,
    dampening: RealLike = 0.0,
    weight_decay: RealLike = 0.0,
    nesterov: BoolLike = False,
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
    return SGD(
        lr=plain_float(lr),
        momentum=plain_float(momentum),
        dampening=plain_float(dampening),
        weight_decay=plain_float(weight_decay),
        nesterov=plain_bool(nesterov),
    )


def _betas(betas: object, beta1: RealLike, beta2: RealLike) -> tuple[float, float]:
    """``beta1, beta2`` from torch's ``betas=(beta1, beta2)`` when given (else as passed; the
    factories refuse a call passing both spellings: :func:`one_spelling`).

    Raises:
        OptimizerError: ``betas`` not a pair; a tuple, list or 1-d numpy array as
            ``beta1`` (torch's ``Adam(params, lr, betas)`` written positionally), naming ``betas=``.
    """
    given: object = beta1
    values = given if not isinstance(given, np.ndarray) or given.ndim != 1 else (
        given.tolist() if given.shape == (2,) else ()  # review239 F2: no tolist() of a 2**40-entry view
    )
    if betas is None and isinstance(values, tuple | list):  # torch's Adam(params, lr, betas) order
        valid = len(values) == 2 and all(  # echo the pair only where the keyword form takes it (review53 F7)
            isinstance(v, int | float) and not isinstance(v, bool) and 0 <= v < 1 for v in values
        )
        pair = repr(tuple(values)) if valid else "(b1, b2)"
        raise OptimizerError(
            f"optimizer: beta1 must be a real number (int or float), got {shown_briefly(beta1)}: a sequence "
            "in beta1's place is torch's Adam(params, lr, betas) order; torchlean's optimizers take no "
            f"params, and beta1, beta2 one by one: pass betas={pair} (or beta1=, beta2=) by keyword"
        )
    if betas is None:
        return plain_float(beta1), plain_float(beta2)
    first, second = betas_pair(betas)
    return plain_float(first), plain_float(second)


def _adam_fields(
    lr: RealLike,
    beta1: RealLike,
    beta2: RealLike,
    eps: RealLike,
    weight_decay: RealLike,
    amsgrad: BoolLike,
    betas: tuple[RealLike, RealLike] | None,
) -> dict[str, Any]:
    """:func:`adam`'s and :func:`adamw`'s arguments as their records' fields: Python floats and
    bools (numpy scalars converted), ``betas`` resolved against ``beta1``/``beta2`` (:func:`_betas`)."""
    b1, b2 = _betas(betas, beta1, beta2)
    return {
        "lr": plain_float(lr), "beta1": b1, "beta2": b2, "eps": plain_float(eps),
        "weight_decay": plain_float(weight_decay), "amsgrad": plain_bool(amsgrad),
    }


@torch_order
@one_spelling("betas", ("beta1", "beta2"))
def adam(
    lr: RealLike = 0.001,
    beta1: RealLike = 0.9,
    beta2: RealLike = 0.999,
    eps: RealLike = 1e-8,
    weight_decay: RealLike = 0.0,
    amsgrad: BoolLike = False,
    *,
    betas: tuple[RealLike, RealLike] | None = None,
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
            not a pair, or given together with ``beta1`` or ``beta2`` (any value); a
            tuple or list as ``beta1`` (torch's positional ``Adam(params, lr, betas)``): the
            message names ``betas=``.
    """
    return Adam(**_adam_fields(lr, beta1, beta2, eps, weight_decay, amsgrad, betas))


@torch_order
@one_spelling("betas", ("beta1", "beta2"))
def adamw(
    lr: RealLike = 0.001,
    beta1: RealLike = 0.9,
    beta2: RealLike = 0.999,
    eps: RealLike = 1e-8,
    weight_decay: RealLike = 0.01,
    amsgrad: BoolLike = False,
    *,
    betas: tuple[RealLike, RealLike] | None = None,
) -> AdamW:
    """AdamW, decoupled weight decay (``torch.optim.AdamW``; Loshchilov & Hutter 2019); domains as
    :func:`adam`, plus ``weight_decay`` finite and >= 0; ``betas=(beta1, beta2)`` and ``amsgrad``
    as in :func:`adam` (``optim.adamw(lr=3e-4, betas=(0.9, 0.95), weight_decay=0.1)``).

    Raises:
        OptimizerError: a value that is not a real number or out of its domain; ``betas`` that is
            not a pair, or given together with ``beta1`` or ``beta2`` (any value); a
            tuple or list as ``beta1`` (torch's positional ``Adam(params, lr, betas)``): the
            message names ``betas=``.
    """
    return AdamW(**_adam_fields(lr, beta1, beta2, eps, weight_decay, amsgrad, betas))


@torch_order
@one_spelling("alpha", ("decay",))
def rmsprop(
    lr: RealLike = 0.01,
    decay: RealLike = 0.99,
    eps: RealLike = 1e-8,
    weight_decay: RealLike = 0.0,
    momentum: RealLike = 0.0,
    centered: BoolLike = False,
    *,
    alpha: RealLike | None = None,
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
            its domain; ``alpha`` given together with ``decay`` (any value).
    """
    if alpha is not None:  # never with decay: one_spelling refuses both
        try:  # alpha alone first, so a refusal names it as written
            RMSprop(decay=plain_float(alpha))
        except OptimizerError as error:
            raise as_written(error, "decay", "alpha", ALPHA_IS_DECAY) from None
        decay = alpha
    return RMSprop(
        lr=plain_float(lr),
        decay=plain_float(decay),
        eps=plain_float(eps),
        weight_decay=plain_float(weight_decay),
        momentum=plain_float(momentum),
        centered=plain_bool(centered),
    )


def _refuse_array_rate(lr: object) -> None:
    """Refuse a rate given as an array or tensor of one or more dimensions (a schedule's
    ``np.array([0.05])``), naming it and the way to a number: the records' refusal of an array in
    the rate's place is about torch's ``Optimizer(params, lr)`` order, which ``set_lr`` and
    schedules do not have (review132 F6)."""
    ndim = getattr(lr, "ndim", None)
    if not isinstance(ndim, int) or ndim == 0 or isinstance(lr, numbers.Real):
        return
    size = int(np.prod(getattr(lr, "shape", ()), dtype=np.int64))
    way = "pass it as a number, float(lr.item())" if size == 1 else f"it holds {size} values"
    raise OptimizerError(
        f"optimizer: learning rate must be a real number (int or float), got {shown_briefly(lr)}: {way}"
    )


@torch_order
def adagrad(
    lr: RealLike = 0.01,
    lr_decay: RealLike = 0.0,
    weight_decay: RealLike = 0.0,
    initial_accumulator_value: RealLike = 0.0,
    eps: RealLike = 1e-10,
) -> Adagrad:
    """Adagrad (``torch.optim.Adagrad``, its arguments in its order; Duchi et al. 2011): step ``t``
    runs at ``lr / (1 + (t - 1) * lr_decay)``, L2 ``weight_decay`` is added to the gradient, and the
    sum of squared gradients starts at ``initial_accumulator_value``. ``lr`` finite and >= 0,
    ``eps`` finite and > 0, the others finite and >= 0, checked as by :func:`sgd`.

    Raises:
        OptimizerError: a value that is not a real number or out of its domain.
    """
    return Adagrad(
        lr=plain_float(lr),
        lr_decay=plain_float(lr_decay),
        weight_decay=plain_float(weight_decay),
        initial_accumulator_value=plain_float(initial_accumulator_value),
        eps=plain_float(eps),
    )


OPTIMIZERS: dict[str, type[OptimizerConfig]] = {
    "sgd": SGD,
    "adam": Adam,
    "adamw": AdamW,
    "rmsprop": RMSprop,
    "adagrad": Adagrad,
}


def negative_entry(kind: str, key: str, value: Array) -> str | None:
    """Why state entry ``key`` (``second.3``) of an optimizer of ``kind`` (``"adam"``) cannot be
    ``value``: an entry below zero in a buffer that the record's updates never make negative
    (:attr:`OptimizerConfig.never_negative`), named with its first such value and index; else None
    (NaN is not negative: a diverged run's NaN state gets its own warning).
    """
    record = OPTIMIZERS.get(kind)
    what = None if record is None else record.never_negative.get(key.partition(".")[0])
    if what is None:
        return None
    below = np.flatnonzero(np.asarray(value < 0))
    if not below.size:
        return None
    at = np.unravel_index(int(below[0]), value.shape)
    return (f"state entry {key} holds {value[at].item()!r} at index {[int(i) for i in at]} "
            f"({below.size} of {value.size} entries negative), but {kind}'s {key.partition('.')[0]} buffer "
            f"holds {what}, never negative: the state was altered")


def by_name(name: str, lr: RealLike) -> OptimizerConfig:
    """The optimizer called ``name`` with learning rate ``lr`` and default other settings,
    validated at once.

    Source: anchor-runtime.md §3.1 (the optimizers and their defaults), with torch.optim's names.

    Raises:
        UnknownLabelError: ``unknown optimizer X (known: sgd | adam | ...)``.
        OptimizerError: ``lr`` is not a real number or is out of its domain.
    """
    if not isinstance(name, str) or name not in OPTIMIZERS:
        raise UnknownLabelError(f"unknown optimizer {name_shown(name)} (known: {' | '.join(OPTIMIZERS)})")
    return OPTIMIZERS[name](lr=plain_float(lr))  # type: ignore[call-arg]
