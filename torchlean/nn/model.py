"""Built models: a layer description plus seeded parameter values.

``build(layer, input_shape=..., seed=...)`` creates every parameter from its
:class:`~torchlean.nn.layers.ParamSpec` with a generator seeded by ``(seed, parameter index)``,
so the same seed always gives the same weights, independent of the other parameters. Seeds are
integers (Python or numpy; not bools) in ``[0, 2**64)``, the seeds of ``torchlean.session`` (numpy's
``default_rng`` takes any nonnegative int). :mod:`torchlean.data`, and so the CLI's ``--seed``,
keeps ``[0, 2**32)``: scikit-learn's ``train_test_split`` seeds a numpy ``RandomState``.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import Any, TypeGuard

import numpy as np
import numpy.typing as npt

from torchlean._checks import dtype_shown, float_dtype, is_int
from torchlean.backend.errors import TorchLeanError
from torchlean.nn.layers import Layer, Linear, ParamSpec, Sequential, Shape, ShapeError, checked_dims

_REALS = (numbers.Real, Decimal)
"""What an object-dtype state entry may hold (Python and numpy reals, Fraction, Decimal)."""

__all__ = ["SEED_RANGE", "Model", "StateError", "build", "is_seed", "not_a_layer"]

SEED_RANGE = "[0, 2**64)"
"""The accepted seeds, as error messages render them."""

Array = npt.NDArray[np.floating]


class StateError(TorchLeanError, ValueError):
    """A state dictionary does not match the model (names the missing/extra/mismatched entry)."""


@dataclass(slots=True, eq=False)
class Model:
    """A layer with its parameters; ``input_shape``/``output_shape`` are per sample.

    ``specs`` are the layer's :meth:`~torchlean.nn.layers.Layer.param_specs` and ``parameters``
    one array per spec, in state order, of the spec's shape and of ``dtype`` (float32 or
    float64). Built by :func:`build`.
    """

    layer: Layer
    input_shape: Shape
    output_shape: Shape
    specs: tuple[ParamSpec, ...]
    parameters: list[Array]
    dtype: np.dtype[np.floating]

    def state(self) -> dict[str, Array]:
        """A copy of every parameter, buffers included (``running_mean``), by name (``weight``;
        ``0.weight`` inside a sequential), in state order: arrays of the spec's shape in the model
        ``dtype`` (as ``torch.nn.Module.state_dict``, but copies)."""
        return {spec.name: value.copy() for spec, value in zip(self.specs, self.parameters, strict=True)}

    def load_state(self, state: Mapping[str, npt.ArrayLike]) -> None:
        """Replace the parameters by ``state`` (same names and shapes; cast to the model dtype).

        Raises:
            StateError: ``state`` is not a mapping; naming the missing, unexpected or mis-shaped
                entry, or an entry that is not a rectangular array of real numbers (accepted: bool,
                integer or float arrays, or object arrays of real numbers such as ``Fraction``
                and ``Decimal``; refused: strings, other objects, complex values,
                datetime64/timedelta64 values, ragged lists), a tensor that requires grad (torch's
                ``named_parameters()``: pass ``state_dict()`` or ``.detach()``), or a finite value the
                model dtype cannot hold (``1e39`` in a float32 model; NaN and infinities load as
                they are), before any parameter changes.
        """
        if not isinstance(state, Mapping):
            raise StateError(
                f"state must be a mapping of parameter names to arrays (as Model.state() returns), got "
                f"{type(state).__name__}"
            )
        names = [spec.name for spec in self.specs]
        missing = [n for n in names if n not in state]
        extra = [n for n in state if n not in names]
        if missing or extra:
            counters = [n for n in extra if isinstance(n, str) and n.endswith("num_batches_tracked")]
            hint = (
                f"; torch's batch norm counters ({', '.join(counters)}) are not kept (they serve only "
                "momentum=None), drop them" if counters else ""
            )
            raise StateError(f"state does not match the model: missing {missing}, unexpected {extra}{hint}")
        values: list[Array] = []
        for spec in self.specs:
            entry = state[spec.name]
            if getattr(entry, "requires_grad", False) is True:  # a torch or torchlean tensor
                raise StateError(
                    f"state entry {spec.name} is a {type(entry).__name__} that requires grad (accepted: "
                    "arrays of its values, e.g. its .detach(), or torch's state_dict() entries)"
                )
            try:
                raw = np.asarray(entry)
            except ValueError as error:  # ragged nested lists
                raise StateError(f"state entry {spec.name} is not a rectangular array: {error}") from None
            refusal = (
                f"state entry {spec.name} has dtype {raw.dtype} (accepted: real numbers, cast to the "
                f"model dtype {self.dtype})"
            )
            # complex (the imaginary part would be dropped), text, bytes, void, and datetime64 /
            # timedelta64 (numpy would cast their tick counts to numbers): only bool, integer and
            # float arrays are real numbers (object arrays are checked per entry below)
            if raw.dtype.kind not in "biufO":
                raise StateError(refusal)
            if raw.dtype.kind == "O":  # numpy would cast None to NaN and parse '0.5' as a number
                others = [item for item in raw.flat if not isinstance(item, _REALS)][:1]
                if others:
                    raise StateError(f"{refusal}: it holds {others[0]!r} of type {type(others[0]).__name__}")
            try:  # an object array of reals (Fraction, Decimal, Python floats) casts as numpy casts it
                with np.errstate(over="ignore"):
                    value = np.array(raw, dtype=self.dtype)
            except (TypeError, ValueError, OverflowError) as error:
                raise StateError(f"{refusal}: {error}") from None
            overflowed = np.isinf(value) & _finite_entries(raw)
            if overflowed.any():
                largest = max(abs(item) for item in raw[overflowed].flat)
                wider = "" if self.dtype == np.float64 else "; build the model in float64"
                raise StateError(
                    f"state entry {spec.name} holds {int(overflowed.sum())} finite values beyond the "
                    f"{self.dtype} range (largest magnitude {largest!s}; accepted: magnitude at most "
                    f"{np.finfo(self.dtype).max!s}{wider})"
                )
            if value.shape != spec.shape:
                raise StateError(
                    f"state entry {spec.name} has shape {list(value.shape)}, expected {list(spec.shape)}"
                )
            values.append(value)
        self.parameters = values

    def describe(self) -> str:
        """One line: the layer, per-sample shapes and the trainable parameter count (torch's
        ``sum(p.numel() for p in parameters())``), then the buffer values if any, e.g.
        ``linear(4, 8): [4] -> [8], 40 parameters`` or
        ``batch_norm1d(4): [4] -> [4], 8 parameters, 8 buffer values``."""
        trainable = sum(math.prod(spec.shape) for spec in self.specs if spec.trainable)
        buffered = sum(math.prod(spec.shape) for spec in self.specs if not spec.trainable)
        shapes = f"{list(self.input_shape)} -> {list(self.output_shape)}"
        buffers = f", {buffered} buffer values" if buffered else ""
        return f"{self.layer.describe()}: {shapes}, {trainable} parameters{buffers}"


def _finite_entries(raw: npt.NDArray[Any]) -> npt.NDArray[np.bool_]:
    """Which entries of a bool, integer, float (longdouble too) or object array of reals are
    finite, judged on the values themselves (a float64 copy would already have turned
    ``Decimal('1e400')`` or a longdouble ``1e4000`` into inf)."""
    if raw.dtype.kind == "f":
        return np.asarray(np.isfinite(raw), dtype=bool)
    if raw.dtype.kind != "O":
        return np.ones(raw.shape, dtype=bool)

    def finite(item: object) -> bool:
        if isinstance(item, Decimal):
            return item.is_finite()
        if isinstance(item, np.floating):  # np.float32 is no float; a longdouble would round
            return bool(np.isfinite(item))
        return not isinstance(item, float) or math.isfinite(item)  # ints and Fractions are finite

    return np.asarray(np.frompyfunc(finite, 1, 1)(raw), dtype=bool)


def is_seed(seed: object) -> TypeGuard[int]:
    """True for an integer (Python or numpy; not a bool) in ``[0, 2**64)``."""
    return is_int(seed) and 0 <= int(seed) < 2**64


def _infer_input_shape(layer: Layer) -> Shape:
    first = layer
    while isinstance(first, Sequential) and first.layers:
        first = first.layers[0]
    if isinstance(first, Linear):
        return (first.in_features,)
    raise ShapeError(f"cannot infer the input shape of {layer.describe()}; pass input_shape=")


def not_a_layer(value: object) -> str:
    """The refusal of ``value`` where a :class:`Layer` is expected, its repr cut to 80 characters
    (a built :class:`Model`'s repr holds every weight); a Model is told to pass its layer."""
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    message = f"layer must be a Layer (e.g. nn.linear(4, 1)), got {type(value).__name__} {shown}"
    if isinstance(value, Model):
        message += "; a built Model: pass model.layer, then copy its weights with load_state(model.state())"
    return message


def build(
    layer: Layer,
    *,
    input_shape: Sequence[int] | None = None,
    seed: int = 0,
    dtype: npt.DTypeLike = np.float32,
) -> Model:
    """Instantiate ``layer`` for per-sample ``input_shape`` with seeded parameters.

    ``input_shape`` (a tuple, list or 1-d integer numpy array of ints >= 1; stored as a tuple of
    ints) may be omitted when the first layer is a linear layer. ``seed`` is an integer (Python or
    numpy) in ``[0, 2**64)``; parameter ``i`` is drawn from ``np.random.default_rng([seed, i])``.
    ``dtype`` is float32 or float64 (a numpy spelling or the torch dtype). Initial values follow
    PyTorch's default initialisation of ``nn.Linear``/``nn.Conv2d`` in distribution
    (U(-1/sqrt(fan_in), 1/sqrt(fan_in)), :class:`~torchlean.nn.layers.ParamSpec`), not torch's
    random stream. Returns a :class:`Model` whose ``parameters`` are in ``dtype``.

    Raises:
        ShapeError: ``layer`` is not a :class:`Layer`; a bad ``input_shape``, or none given for a
            model that does not start with a linear layer (``cannot infer the input shape of
            relu; pass input_shape=``); ``seed`` not an
            integer in ``[0, 2**64)`` (``seed must be an integer in [0, 2**64), got -1``); a dtype
            other than float32/float64 (also ``None`` or a spelling numpy cannot read); a layer
            does not fit the shape it receives; or a layer cannot run in ``dtype``
            (:meth:`~torchlean.nn.layers.Layer.dtype_fault`: a normalisation ``eps`` of ``1e39``
            in float32, or a batch norm ``eps`` of ``1e-50``, which rounds to 0 there).
    """
    if not isinstance(layer, Layer):
        raise ShapeError("build: " + not_a_layer(layer))
    if not is_seed(seed):
        raise ShapeError(f"seed must be an integer in {SEED_RANGE}, got {seed!r}")
    shape = (
        checked_dims(input_shape, "build: input_shape", allow_int=False)
        if input_shape is not None
        else _infer_input_shape(layer)
    )
    resolved = float_dtype(dtype)
    if resolved is None:
        raise ShapeError(f"model dtype must be float32 or float64, got {dtype_shown(dtype)}")
    output_shape = layer.output_shape(shape)
    fault = layer.dtype_fault(resolved)
    if fault is not None:
        raise ShapeError(fault)
    specs = layer.param_specs()
    parameters = [
        spec.initial(np.random.default_rng([int(seed), index]), resolved) for index, spec in enumerate(specs)
    ]
    return Model(layer, shape, output_shape, specs, parameters, resolved)
