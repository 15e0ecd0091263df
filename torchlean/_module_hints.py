"""What :class:`torchlean.nn.Model` and :class:`torchlean.optim.Optimizer` say about the
``torch.nn.Module`` and ``torch.optim.Optimizer`` attributes they lack (review85 F2).

The mechanism is :class:`torchlean.tensor.Tensor`'s (:mod:`torchlean._tensor_hints`): the class's
``__getattr__``, defined for run time only, appends the hint of :data:`MODEL_HINTS` or
:data:`OPTIMIZER_HINTS` to the ``AttributeError`` (:func:`missing_attribute`). Data and one pure
function: this module imports nothing from torchlean.

``model.parameters()`` cannot get a hint this way: ``parameters`` is an attribute (a list of numpy
arrays, ``create(model.parameters)``), so calling it is Python's ``TypeError: 'list' object is not
callable``; docs/python.md says so under "Tensors compared with torch".
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Final

_NO_MODE = (
    "a Model keeps no train/eval mode: each call says which, model(x, params, training=True) for "
    "torch's model.train() (dropout masks, batch norm's batch statistics and running-statistics "
    "update), and training=False, the default, for torch's model.eval() (so a call without it "
    "evaluates, the opposite of a fresh torch module)"
)
_DEVICE = (
    "a Model holds host (numpy) values: model.tensors(device='cuda') gives its parameters on a "
    "device, and model(x, params) runs on x's device"
)
_DTYPE = "a Model's dtype is chosen when it is built: nn.build(layer, ..., dtype={dtype!r})"
_CLEAR_GRADS = (
    "the optimizer's step_(params) sets every .grad to None after its update (torch's step() then "
    "zero_grad()); to clear them without a step, set p.grad = None for each tensor p"
)

MODEL_HINTS: Final[dict[str, str]] = {
    "train": _NO_MODE,
    "eval": _NO_MODE,
    "training": _NO_MODE,
    "state_dict": (
        "model.state() gives the parameters and buffers by name (numpy copies: np.savez(path, "
        "**model.state()) saves them); model.load_state(state) loads them"
    ),
    "load_state_dict": (
        "model.load_state(state, strict=True) loads a model.state() mapping or a torch state_dict() "
        "(strict=False for batch norm's num_batches_tracked, which torchlean does not keep)"
    ),
    "named_parameters": (
        "zip(model.names, model.parameters) gives the names and numpy arrays in state order, buffers "
        "included (model.specs[i].trainable tells them apart); model.tensors() gives them as leaf "
        "tensors"
    ),
    "zero_grad": _CLEAR_GRADS,
    "to": _DEVICE,
    "cuda": _DEVICE,
    "cpu": _DEVICE,
    "double": _DTYPE.format(dtype="float64"),
    "float": _DTYPE.format(dtype="float32"),
}
"""The hints of ``Model.__getattr__`` (``model.parameters`` is a list of numpy arrays, and
``model.tensors()`` gives leaf tensors; ``model.parameters()`` itself cannot get one: see the
module docstring)."""

OPTIMIZER_HINTS: Final[dict[str, str]] = {
    "zero_grad": (
        "step_(params) sets every tensor's .grad to None after its update (torch's step() then "
        "zero_grad()); to clear them without a step, set p.grad = None for each tensor p"
    ),
    "param_groups": (
        "groups are optim.group(...) records given to create(params, names=model.names, "
        "groups=[...]) (optimizer.groups holds them); set_lr(lr) sets every group's rate (torch's "
        "param_group['lr'] = lr; a group runs at lr times its lr_scale), config_of(i) is the record "
        "parameter i is updated with"
    ),
    "add_param_group": (
        "an optimizer's parameters and groups are fixed when it is created: pass every group to "
        "create(params, names=model.names, groups=[optim.group(...), ...])"
    ),
    "state": (
        "state_dict() gives the state as numpy arrays (steps, param_steps and per parameter i the "
        "buffers first.<i>, second.<i>); load_state_dict(state) resumes from it"
    ),
    "defaults": "optimizer.config is the record it was created from (optim.adam(...)), every hyper-parameter",
    "lr": (
        "the learning rate in effect is optimizer.config.lr; set_lr(lr) changes it (torch's "
        "param_group['lr'] = lr)"
    ),
}
"""The hints of ``Optimizer.__getattr__``."""


def missing_attribute(owner: object, name: str, hints: Mapping[str, str]) -> AttributeError:
    """The ``AttributeError`` for ``owner.name``, which ``owner``'s class lacks: Python's message
    (``'Model' object has no attribute 'train'``) followed by ``": "`` and the hint where ``hints``
    has one, as ``Tensor.__getattr__`` writes it. A dunder name (a protocol probe such as
    ``copy``'s ``__setstate__``) gets no hint; an unhinted name keeps Python's ``name`` and ``obj``,
    so a traceback still suggests a close spelling."""
    if name.startswith("__"):
        return AttributeError(name)
    message = f"{type(owner).__name__!r} object has no attribute {name!r}"
    hint = hints.get(name)
    if hint is None:
        return AttributeError(message, name=name, obj=owner)
    return AttributeError(f"{message}: {hint}")


_VALUES = ("torchlean builds no values itself: make them with numpy and copy them in, "
           "tl.tensor(np.{name}(...), dtype=...)")

TORCH_NAMESPACE_HINTS: Final[dict[str, str]] = {
    **{name: _VALUES.format(name=name)
       for name in ("zeros", "ones", "full", "eye", "arange", "linspace", "empty")},
    "as_tensor": "tl.tensor(data) (a copy: torchlean tensors never share an array's memory)",
    # of the tensor's shape, not of the tensor (np.zeros_like(t) reads t's values: refused for a
    # tensor that requires grad, review231 F6)
    **{f"{name}_like": f"torchlean builds no values itself: tl.tensor(np.{name}({args}), dtype=t.dtype, "
                       "device=t.device)"
       for name, args in (("zeros", "t.shape"), ("ones", "t.shape"), ("full", "t.shape, value"))},
    "randn": ("random values: tl.tensor(np.random.default_rng(seed).standard_normal(shape)), or "
              "tl.rand_uniform(shape, ...) for the session's seeded stream"),
    "rand": "tl.rand_uniform(shape, ...) draws from the session's seeded stream",
    "manual_seed": "a session's seed seeds its random ops: with tl.session(seed=...)",
    "from_numpy": "tl.tensor(array) (a copy: torchlean tensors never share an array's memory)",
    "float32": 'dtypes are spelled as strings or numpy dtypes: dtype="float32"',
    "float64": 'dtypes are spelled as strings or numpy dtypes: dtype="float64"',
    "int64": 'dtypes are spelled as strings or numpy dtypes: dtype="int64" (ids and indices; no gradient)',
    "bool": 'dtypes are spelled as strings or numpy dtypes: dtype="bool" (masks)',
    "set_default_dtype": ('torchlean has no default dtype to set: tl.tensor(data, dtype="float64"), and a '
                          'Trainer\'s RunConfig(dtype="float64")'),
    "is_tensor": "isinstance(x, tl.Tensor)",
    "where": ("no select op: a hard mask of scores is tl.hard_masked_softmax(scores, mask); a blend is "
              "a * m + b * (1 - m) with m a 0/1 array (a NaN or inf on the side not taken propagates, unlike "
              "torch.where)"),
    "argmax": "indices carry no gradient: np.argmax(t.numpy(), axis=...)",
    "argmin": "indices carry no gradient: np.argmin(t.numpy(), axis=...)",
    "max": ("tl.maximum(a, b) elementwise; over an axis, tl.max_pool over windows, or the values with "
            "np.max(t.numpy(), axis=...) (tl.logsumexp(x, axis) is a smooth, differentiable stand-in)"),
    "min": ("tl.minimum(a, b) elementwise; over an axis, the values with np.min(t.numpy(), axis=...), or "
            "-tl.logsumexp(-x, axis) as a smooth, differentiable stand-in"),
    "einsum": "no einsum op: tl.matmul (its leading axes broadcast) with tl.permute and tl.reshape",
    "pow": "no power op: t * t for t ** 2, tl.sqrt(t), tl.inv(t), tl.exp(p * tl.log(t)) for t > 0",
    "square": "t * t (or t.square())",
    "clip": "tl.clamp(x, lo, hi) (or x.clip(lo, hi))",
    **{name: f"the method: t.{name}(...)" for name in ("flatten", "squeeze", "unsqueeze")},
    "randint": "tl.tensor(np.random.default_rng(seed).integers(low, high, size))",
    "randperm": "tl.tensor(np.random.default_rng(seed).permutation(n))",
    "device": 'devices are spelled as strings: device="cpu", "cuda" or "cuda:1"',
    "inference_mode": "tl.no_grad() (nothing is recorded under it; torchlean has no inference tensors)",
    "cat": "tl.concat(tensors, axis)",
    "stack": "tl.concat of the tensors given a new axis first: tl.concat([tl.reshape(t, (1, *t.shape)) for t "
             "in ts], 0)",
    "sum": "tl.reduce_sum(x, axis) (or x.sum(dim))",
    "mean": "tl.reduce_mean(x, axis) (or x.mean(dim))",
    "save": "a model's state: np.savez(path, **model.state()); a trained run: torchlean train --save",
    "load": "np.load(path) and model.load_state(...); a checkpoint: torchlean.checkpoint.load(path)",
}
"""What ``torchlean.<name>`` says for torch's top-level names it lacks (review230 F5: ported code's
``torch.inference_mode()`` got Python's bare ``AttributeError``)."""
