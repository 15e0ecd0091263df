"""Torch's optimizer calling forms (``torch.optim.Adam(params, lr=...)``) met with torchlean's
spelling: the records take no parameters, ``create`` does (review89 F5, review90 F9, review91
F8, review92 F5)."""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator, Mapping
from typing import ParamSpec, TypeVar

import numpy as np

from torchlean.optim._common import OptimizerError
from torchlean.tensor import Tensor

P = ParamSpec("P")
R = TypeVar("R")

PARAMS_FIRST = (
    ": parameters in the learning rate's place are torch's Optimizer(params, lr) order; torchlean's "
    "optimizers take no params: build the record, then create the optimizer with them, "
    "optim.{name}(lr).create(model.parameters)"
)
"""The hint on parameters given where torch's optimizers take them (review89 F5, review90 F9)."""


def parameters_shown(value: object, *, empty: bool = False) -> str:
    """What torch's ``params`` argument in an optimizer's first place is: ``a list of 4 arrays``
    (or tensors) for a model's parameters, ``an array``/``a Tensor`` for one (not 0-d: a rate),
    ``an iterator`` (``model.parameters()``'s kind), ``torch's parameter groups (dicts with
    'params')``, and, with ``empty``, an empty list; ``""`` for anything else (review90 F9,
    review91 F8)."""
    if isinstance(value, np.ndarray | Tensor) or _torch_tensor(value):
        if getattr(value, "ndim", None) == 0:
            return ""
        return "an array" if isinstance(value, np.ndarray) else "a Tensor"
    if isinstance(value, Iterator):
        return "an iterator"
    items = value if isinstance(value, list | tuple) else ()
    if items and all(isinstance(v, Mapping) and "params" in v for v in items):
        return "torch's parameter groups (dicts with 'params'; optim.group(pattern, ...) gives settings)"
    listed = any(isinstance(v, np.ndarray | Tensor) or _torch_tensor(v) for v in items)
    if not listed and not (empty and isinstance(value, list | tuple) and not items):
        return ""
    kind = ("torch tensors" if any(_torch_tensor(v) for v in items) else
            "tensors" if any(isinstance(v, Tensor) for v in items) else "arrays")
    return f"a {type(value).__name__} of {len(items)} {kind}"


def _torch_tensor(value: object) -> bool:
    """A ``torch.Tensor`` (``torch.nn.Parameter`` too), told by its class's module so that the
    optimizers need not import torch."""
    return type(value).__module__.split(".")[0] == "torch" and hasattr(value, "requires_grad")


def torch_order(make: Callable[P, R]) -> Callable[P, R]:
    """``make`` (a record factory, ``optim.adam``) refusing torch's ``Adam(params, lr=...)``,
    parameters first and the rate by keyword, with the hint :data:`PARAMS_FIRST`, where Python
    would say "got multiple values for argument 'lr'" (review90 F9)."""

    @functools.wraps(make)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        first = args[0] if args else kwargs.get("params")
        # torch's forms that Python's binding would refuse or misread: (params, lr=...), (params,
        # 0.1, momentum=...), (params, 1e-3, betas=...), params=...; (params, 0.1) alone reaches
        # the record's own check
        shown = parameters_shown(first, empty=True) if (args and kwargs) or "params" in kwargs else ""
        if shown:
            where = ("as params=" if not args else "before lr=" if "lr" in kwargs
                     else "in the learning rate's place")
            raise OptimizerError(
                f"optimizer: {make.__name__}() got {shown} {where}" + PARAMS_FIRST.format(name=make.__name__)
            )
        return make(*args, **kwargs)

    return checked
