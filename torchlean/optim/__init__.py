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
``clip_grad_norm_`` (a reduction: its norms are left folds, in a stated order) and
:func:`clip_grad_value` torch's ``clip_grad_value_`` (elementwise). Updates are elementwise numpy
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
(``create(params, names=model.names, groups=[optim.group("bias", weight_decay=0.0)])``); a frozen
group (``optim.group(r"^0\\.", frozen=True)``) is torch's ``requires_grad_(False)``: its parameters
take no update and keep no state.

Modules: ``_records`` (the records, their update rules, :class:`Optimizer` and the builders),
``_groups`` (parameter groups), ``_clip`` (:func:`clip_grad_norm`, :func:`clip_grad_value`),
``_common`` (the error type and the checks); the schedules are :mod:`torchlean.lr_schedules`'s.
"""

from torchlean.lr_schedules import ScheduleError, warmup_cosine
from torchlean.optim._clip import clip_grad_norm, clip_grad_value
from torchlean.optim._common import OptimizerError
from torchlean.optim._groups import GroupSelectionError, ParamGroup, group, names_shown
from torchlean.optim._records import (
    OPTIMIZERS,
    SGD,
    Adagrad,
    Adam,
    AdamW,
    Optimizer,
    OptimizerConfig,
    RMSprop,
    adagrad,
    adam,
    adamw,
    by_name,
    rmsprop,
    sgd,
)

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
    "clip_grad_value",
    "group",
    "names_shown",
    "rmsprop",
    "sgd",
    "warmup_cosine",
]
