"""Torch's optimizer calling forms (``torch.optim.Adam(params, lr=...)``) met with torchlean's
spelling: the records take no parameters, ``create`` does (review89 F5, review90 F9, review91
F8, review92 F5)."""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Iterator, Mapping
from typing import ParamSpec, TypeVar

import numpy as np

from torchlean.optim._common import OptimizerCallError, OptimizerError
from torchlean.tensor import Tensor

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

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


TORCH_SPELLINGS = {
    "betas": ("beta1", "beta1= and beta2=", "betas=(b1, b2)"),
    "alpha": ("decay", "decay=", "alpha=..."),
}
"""Torch's keyword spellings that the records' classes do not take: the field that tells a class
has them, the fields they are, and the builder's form that takes them (review196 F1)."""


def _binding_refusal(shown: str, builder: str, signature: inspect.Signature, args: tuple[object, ...],
                     kwargs: Mapping[str, object]) -> str | None:
    """Why ``shown(*args, **kwargs)`` (``optim.Adam``, ``optim.sgd``) cannot be called as
    ``signature`` binds arguments (``self`` left out), in the optimizers' words, or None when it
    can: torch's ``Optimizer(params, lr=...)`` order (:data:`PARAMS_FIRST`, naming ``builder``),
    an unknown keyword (with the accepted ones; torch's ``betas=`` and ``alpha=`` named as the
    fields they are, and the builder that takes them), too many positional arguments (naming the
    ones that are keywords), an argument given twice, where Python raises a bare ``TypeError``
    (review90 F9, review196 F1)."""
    first = args[0] if args else kwargs.get("params")
    # torch's forms that Python's binding would refuse or misread: (params, lr=...), (params,
    # 0.1, momentum=...), (params, 1e-3, betas=...), params=...; (params, 0.1) alone reaches the
    # record's own check
    params = parameters_shown(first, empty=True) if (args and kwargs) or "params" in kwargs else ""
    if params:
        where = ("as params=" if not args else "before lr=" if "lr" in kwargs
                 else "in the learning rate's place")
        return f"optimizer: {shown}() got {params} {where}" + PARAMS_FIRST.format(name=builder)
    try:
        signature.bind(*args, **kwargs)
    except TypeError:
        pass
    else:
        return None
    listed = list(signature.parameters.values())
    positional = [q.name for q in listed if q.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
    keywords = [q.name for q in listed if q.kind is inspect.Parameter.KEYWORD_ONLY]
    unknown = [key for key in kwargs if key not in positional + keywords]
    if unknown:
        key = unknown[0]
        message = (f"optimizer: {shown}() got an unexpected keyword argument {key!r} (accepted: "
                   f"{', '.join(positional + keywords)})")
        field, fields, form = TORCH_SPELLINGS.get(key, ("", "", ""))
        if field in positional:
            message += f": torch's {key}= is {fields} here; optim.{builder}({form}) takes torch's spelling"
        return message
    if len(args) > len(positional):
        message = (f"optimizer: {shown}() takes at most {len(positional)} arguments by position "
                   f"({', '.join(positional)}), got {len(args)}")
        if keywords:
            message += f"; pass {', '.join(f'{name}=' for name in keywords)} by keyword"
        return message
    twice = next((name for name in positional[: len(args)] if name in kwargs), "an argument")
    return f"optimizer: {shown}() got {twice} both by position and by keyword"


def torch_order(make: Callable[P, R]) -> Callable[P, R]:
    """``make`` (a record factory, ``optim.adam``) refusing what it cannot bind with an
    :class:`OptimizerCallError` that says why (:func:`_binding_refusal`: torch's ``Adam(params,
    lr=...)``, an unknown keyword, extra positional arguments), where Python would raise a bare
    ``TypeError`` (review90 F9, review196 F1)."""
    signature = inspect.signature(make)

    @functools.wraps(make)
    def checked(*args: P.args, **kwargs: P.kwargs) -> R:
        refusal = _binding_refusal(make.__name__, make.__name__, signature, args, kwargs)
        if refusal is not None:
            raise OptimizerCallError(refusal)
        return make(*args, **kwargs)

    return checked


def one_spelling(theirs: str, ours: tuple[str, ...]) -> Callable[[Callable[P, R]], Callable[P, R]]:
    """A decorator of a record factory taking torch's spelling ``theirs`` of a setting (``betas``,
    ``alpha``) besides its own ``ours`` (``beta1``/``beta2``, ``decay``): a call passing both
    spellings is refused, whatever the values (review220 F3: compared with the defaults, an
    explicit ``beta1=0.9`` beside ``betas=(0.8, 0.99)`` was dropped, and an agreeing ``beta1=0.8``
    refused), as ``optim.group`` refuses it.

    Raises (from the decorated factory):
        OptimizerError: ``optimizer: pass betas or beta1/beta2, not both (got betas=..., beta1=...)``.
    """

    def decorate(make: Callable[P, R]) -> Callable[P, R]:
        signature = inspect.signature(make)

        @functools.wraps(make)
        def checked(*args: P.args, **kwargs: P.kwargs) -> R:
            try:
                passed = signature.bind(*args, **kwargs).arguments
            except TypeError:  # torch_order names what cannot be bound
                return make(*args, **kwargs)
            given = [name for name in ours if name in passed]
            if passed.get(theirs) is not None and given:
                values = ", ".join(f"{name}={passed[name]!r}" for name in (theirs, *given))
                raise OptimizerError(f"optimizer: pass {theirs} or {'/'.join(ours)}, not both (got {values})")
            return make(*args, **kwargs)

        return checked

    return decorate


def torch_forms_refused(builder: str) -> Callable[[type[T]], type[T]]:
    """A class decorator: the record class's ``__init__`` (``optim.Adam(...)``) refuses what it
    cannot bind as :func:`torch_order` does, naming ``builder`` (``adam``), the factory that takes
    torch's spellings; the class's own checks run as before (review196 F1: ``optim.Adam(params,
    lr=1e-3)`` and ``optim.Adam(betas=...)`` got Python's bare ``TypeError``)."""

    def decorate(cls: type[T]) -> type[T]:
        init = cls.__init__
        signature = inspect.signature(init)
        unbound = signature.replace(parameters=list(signature.parameters.values())[1:])  # no self
        shown = f"optim.{cls.__name__}"

        @functools.wraps(init)
        def checked(self: object, *args: object, **kwargs: object) -> None:
            refusal = _binding_refusal(shown, builder, unbound, args, kwargs)
            if refusal is not None:
                raise OptimizerCallError(refusal)
            init(self, *args, **kwargs)

        cls.__init__ = checked  # type: ignore[method-assign]
        return cls

    return decorate
