"""The checks of a checkpoint's model and optimizer state by their declared shapes and dtypes
(an array's, or an archive entry's header's, before its data is read): the model its fields
describe, as :func:`torchlean.models.build_model` rebuilds it, its weights, and the entries of
:meth:`Optimizer.state_dict <torchlean.optim.Optimizer.state_dict>`."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np
import numpy.typing as npt

from torchlean._cells import LISTED
from torchlean._cells import names_listed as _listed
from torchlean._checkpoint_errors import CheckpointError
from torchlean._checks import is_builtin_int, shown_briefly
from torchlean.backend.errors import TorchLeanError
from torchlean.data import display_name
from torchlean.models import MODELS, build_model, checked_dropout
from torchlean.nn.layers import ShapeError
from torchlean.optim import OPTIMIZERS
from torchlean.optim._records import negative_entry

__all__ = [
    "Declared", "Model", "built_model", "check_dtype", "check_model_fields", "declared", "fit_weights",
    "literals", "optimizer_fit", "optimizer_form", "optimizer_values",
]

Array = npt.NDArray[Any]


class Declared(Protocol):
    """What a check of an entry's form reads: an array's, or an archive entry's header's
    (:class:`torchlean._npz.Entry`, its data not read), ``shape`` and ``dtype``."""

    @property
    def shape(self) -> tuple[int, ...]: ...

    @property
    def dtype(self) -> np.dtype[Any]: ...


@dataclass(frozen=True, slots=True)
class Model:
    """A checkpoint's model as :func:`~torchlean.models.build_model` rebuilds it: its fields and
    its parameters' ``(name, shape)`` in the model's order (the optimizer's parameter order)."""

    name: str
    hidden: int
    features: int
    outputs: int
    dropout: float
    dtype: np.dtype[Any]
    params: tuple[tuple[str, tuple[int, ...]], ...]

    def described(self) -> str:
        dropout = f", dropout {self.dropout!r}" if self.dropout else ""
        return (f"model {self.name} (features {self.features}, outputs {self.outputs}, hidden "
                f"{self.hidden}{dropout})")


def literals(values: object) -> str:
    """``repr(values)`` of a tuple or list, a long one elided as
    :func:`~torchlean._cells.names_listed` elides names (``('c0', 'c1', 'c2', ..., 'c999999')
    (1000000 in all)``); anything else as ``repr``."""
    if not isinstance(values, tuple | list) or len(values) <= LISTED:
        return repr(values)
    opening, closing = ("(", ")") if isinstance(values, tuple) else ("[", "]")
    shown = ", ".join(map(repr, values[:3]))
    return f"{opening}{shown}, ..., {values[-1]!r}{closing} ({len(values)} in all)"


def check_model_fields(model: object, hidden: object, features: object, outputs: object,
                        dropout: object, version: int) -> float:
    """``dropout`` as a float, once the model fields of a checkpoint are checked (see
    :class:`Checkpoint`).

    Raises:
        CheckpointError: an unknown ``model``; ``hidden``, ``features`` or ``outputs`` not an int
            >= 1; a ``dropout`` outside ``[0, 1)``, or nonzero with ``version`` 1.
    """
    if not isinstance(model, str) or model not in MODELS:
        raise CheckpointError(f"unknown model {model!r} (known: {' | '.join(MODELS)})")
    for name, value in (("hidden", hidden), ("features", features), ("outputs", outputs)):
        if not is_builtin_int(value) or value < 1:
            raise CheckpointError(f"{name} must be an int >= 1, got {value!r}")
    try:
        checked = checked_dropout(dropout)
    except ShapeError as error:
        raise CheckpointError(str(error)) from None
    if version == 1 and checked != 0.0:
        raise CheckpointError(
            f"a version 1 checkpoint has no dropout (version 2 does), got dropout {checked!r}"
        )
    return checked


def check_dtype(dtype: object) -> None:
    """Refuse a checkpoint's ``dtype`` other than the strings ``float32`` and ``float64``.

    Raises:
        CheckpointError: ``dtype must be float32 or float64, got 'float16'``; a value that is not a
            string (an array, a tensor, a number: review239 F6/F7, numpy's ``truth value of an array
            ... is ambiguous`` before) named shortened, with its type, before it is compared.
    """
    if not isinstance(dtype, str):
        raise CheckpointError(
            f"dtype must be float32 or float64, got {shown_briefly(dtype)} of type {type(dtype).__name__} "
            "(accepted: 'float32' or 'float64', or a numpy dtype or scalar type naming one)"
        )
    if dtype not in ("float32", "float64"):
        raise CheckpointError(f"dtype must be float32 or float64, got {dtype!r}")


def built_model(model: str, hidden: int, features: int, outputs: int, dropout: float, dtype: str) -> Model:
    """The :class:`Model` of checked fields.

    Raises:
        CheckpointError: ``the model cannot be rebuilt: ...`` (what build_model refuses).
    """
    try:
        layer, _ = build_model(model, features, outputs, hidden=hidden, dropout=dropout)
    except TorchLeanError as error:
        raise CheckpointError(f"the model cannot be rebuilt: {error}") from None
    params = tuple((spec.name, tuple(int(n) for n in spec.shape)) for spec in layer.param_specs())
    return Model(model, hidden, features, outputs, dropout, np.dtype(dtype), params)


def fit_weights(weights: Mapping[str, Declared], model: Model, what: str) -> None:
    """Check that ``weights`` (the ``weights`` field, or the training state's ``last_weights``:
    ``what`` names one of them in messages) are exactly ``model``'s parameters: names, shapes,
    dtype. Only ``shape`` and ``dtype`` are read (an archive entry's header does).

    Raises:
        CheckpointError: a missing or unexpected name (all of them, a long list elided), a
            wrong shape or dtype (the first).
    """
    names = [name for name, _ in model.params]
    missing = [name for name in names if name not in weights]
    extra = [name for name in weights if name not in names]
    if missing or extra:
        which = "weights" if what == "weight" else "training last_weights"
        raise CheckpointError(
            f"the {which} do not match {model.described()}: missing {literals(missing)}, unexpected "
            f"{literals(extra)}"
        )
    for name, shape in model.params:
        value = weights[name]
        if value.dtype != model.dtype:
            raise CheckpointError(f"{what} {name} has dtype {value.dtype}, expected {model.dtype}")
        if value.shape != shape:
            raise CheckpointError(f"{what} {name} has shape {list(value.shape)}, expected {list(shape)}")


# The entries of Optimizer.state_dict(): its counts and rate, and per parameter i its buffers
_OPTIMIZER_ENTRIES = "kind, steps, param_steps, lr, and first.<i>, second.<i>, third.<i> per parameter i"
_BUFFER = re.compile(r"(first|second|third)\.(0|[1-9][0-9]{0,8})")
_KIND_CHARS = max(map(len, OPTIMIZERS))
_THIRD_KINDS = ("adam", "adamw", "rmsprop")
"""The optimizers that keep a third buffer (AMSGrad's maximum, centered RMSprop's average)."""


def declared(value: Declared) -> str:
    return f"dtype {value.dtype}, shape {list(value.shape)}"


def optimizer_form(state: Mapping[str, Declared]) -> None:
    """Check the names, dtypes and ranks of an optimizer state's entries
    (:meth:`Optimizer.state_dict <torchlean.optim.Optimizer.state_dict>`'s), reading only their
    ``shape`` and ``dtype``: ``kind`` a 0-d text array of at most as many characters as the
    longest optimizer name, ``steps`` a 0-d integer, ``param_steps`` 1-d integers, ``lr`` a 0-d
    real number, and the buffers ``first.<i>``, ``second.<i>``, ``third.<i>``.

    Raises:
        CheckpointError: another entry name, or an entry of another form, naming it.
    """
    for key, value in state.items():
        if key == "kind":
            fits = value.shape == () and value.dtype.kind == "U" and value.dtype.itemsize <= 4 * _KIND_CHARS
            what = f"a 0-d text array naming the optimizer ({' | '.join(OPTIMIZERS)})"
        elif key == "steps":
            fits = value.shape == () and value.dtype.kind in "iu"
            what = "a 0-d integer array (the step count)"
        elif key == "param_steps":
            fits = len(value.shape) == 1 and value.dtype.kind in "iu"
            what = "a 1-d integer array (each parameter's step count)"
        elif key == "lr":
            fits = value.shape == () and value.dtype.kind in "iuf"
            what = "a 0-d real array (the learning rate)"
        elif _BUFFER.fullmatch(key):
            continue  # checked against the model's parameters by Checkpoint
        else:
            raise CheckpointError(
                f"training optimizer entry {display_name(key)} is not one of Optimizer.state_dict()'s "
                f"({_OPTIMIZER_ENTRIES})"
            )
        if not fits:
            raise CheckpointError(f"training optimizer entry {key} must be {what}, got {declared(value)}")


def optimizer_values(state: Mapping[str, Array]) -> None:
    """Check the values of an optimizer state :func:`optimizer_form` accepted, as
    :meth:`Optimizer.load_state_dict <torchlean.optim.Optimizer.load_state_dict>` would: a
    ``kind`` naming an optimizer (one of :data:`_THIRD_KINDS` when there are ``third.<i>``
    buffers) whose never-negative buffers hold no negative entry (Adam's second moments), step
    counts >= 0, a finite learning rate >= 0.

    Raises:
        CheckpointError: naming the entry and the accepted values.
    """
    kind = state.get("kind")
    if kind is not None:
        name = str(kind[()])
        if name not in OPTIMIZERS:
            raise CheckpointError(
                f"training optimizer entry kind must name an optimizer ({' | '.join(OPTIMIZERS)}), got "
                f"{name!r}"
            )
        third = sorted(key for key in state if key.startswith("third."))
        if third and name not in _THIRD_KINDS:
            raise CheckpointError(
                f"training optimizer state of kind {name!r} has the entries {_listed(third)}, but a {name} "
                f"optimizer keeps no third buffer (only {', '.join(_THIRD_KINDS)} do: AMSGrad, centered "
                "RMSprop)"
            )
        for key, value in state.items():  # review158 F6: a negative second moment trained into NaN
            negative = negative_entry(name, key, value)
            if negative is not None:
                raise CheckpointError(f"training optimizer {negative}")
    for key in ("steps", "param_steps"):
        counts = state.get(key)
        if counts is not None and bool((counts < 0).any()):
            shown = int(counts) if counts.ndim == 0 else literals(counts.tolist())
            raise CheckpointError(f"training optimizer entry {key} must be >= 0, got {shown}")
    lr = state.get("lr")
    if lr is not None and not (bool(np.isfinite(lr)) and float(lr) >= 0.0):
        raise CheckpointError(
            f"training optimizer entry lr must be a finite learning rate >= 0, got {lr[()]!r}"
        )


def optimizer_fit(state: Mapping[str, Declared], model: Model) -> None:
    """Check an optimizer state against ``model``'s parameters, reading only ``shape`` and
    ``dtype``: its ``steps`` and ``param_steps`` entries present (one count per parameter), each
    buffer naming a parameter and of its shape and dtype, ``first.<i>`` and ``second.<i>``
    together and ``third.<i>`` only with them (as :meth:`Optimizer.state_dict
    <torchlean.optim.Optimizer.state_dict>` writes them; a frozen parameter has none).

    Raises:
        CheckpointError: naming the entry, what it holds and what the model needs.
    """
    count = len(model.params)
    for key in ("steps", "param_steps"):
        if key not in state:
            raise CheckpointError(
                f"the training optimizer state has no {key} entry (Optimizer.state_dict() writes one; "
                "--resume could not load the state)"
            )
    if state["param_steps"].shape != (count,):
        raise CheckpointError(
            f"training optimizer entry param_steps must hold one step count per parameter of "
            f"{model.described()}: {count}, got shape {list(state['param_steps'].shape)}"
        )
    buffers: dict[int, set[str]] = {}
    for key, value in state.items():
        match = _BUFFER.fullmatch(key)
        if match is None:
            continue
        index = int(match.group(2))
        if index >= count:
            raise CheckpointError(
                f"training optimizer entry {key} names parameter {index}, but {model.described()} has "
                f"{count} parameters (0 to {count - 1})"
            )
        name, shape = model.params[index]
        if value.shape != shape or value.dtype != model.dtype:
            raise CheckpointError(
                f"training optimizer entry {key} has {declared(value)}, but parameter {index} ({name}) has "
                f"dtype {model.dtype}, shape {list(shape)}"
            )
        buffers.setdefault(index, set()).add(match.group(1))
    for index, kinds in sorted(buffers.items()):
        if "first" not in kinds or "second" not in kinds:
            lacking = "first" if "first" not in kinds else "second"
            raise CheckpointError(
                f"the training optimizer state has {', '.join(f'{k}.{index}' for k in sorted(kinds))} but no "
                f"{lacking}.{index} (Optimizer.state_dict() writes each parameter's first and second buffers "
                "together, or none for a frozen parameter)"
            )
