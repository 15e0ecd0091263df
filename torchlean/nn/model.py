"""Built models: a layer description plus seeded parameter values, and their forward pass.

``build(layer, input_shape=..., seed=...)`` creates every parameter from its
:class:`~torchlean.nn.layers.ParamSpec` with a generator seeded by ``(seed, parameter index)``,
so the same seed always gives the same weights, independent of the other parameters. Seeds are
integers (Python or numpy; not bools) in ``[0, 2**64)``, the seeds of ``torchlean.session`` (numpy's
``default_rng`` takes any nonnegative int). :mod:`torchlean.data`, and so the CLI's ``--seed``,
keeps ``[0, 2**32)``: scikit-learn's ``train_test_split`` seeds a numpy ``RandomState``.

A training loop of one's own runs a model as a torch module: ``params = model.tensors()``,
``model(x, params, training=True)`` (eager, in the current session), an optimizer's ``step_``,
then ``model.load_tensors(params)``; :class:`~torchlean.trainer.Trainer` does all of it for you.
"""

from __future__ import annotations

import math
import numbers
from collections import Counter
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from decimal import Decimal
from typing import TYPE_CHECKING, Any, NamedTuple, NoReturn, TypeAlias, TypeGuard

import numpy as np
import numpy.typing as npt

from torchlean._checks import dtype_shown, float_dtype, is_int
from torchlean._module_hints import MODEL_HINTS, missing_attribute
from torchlean._slots import PicklesAtEveryProtocol
from torchlean.autograd.grad_mode import no_grad
from torchlean.backend.errors import TorchLeanError
from torchlean.nn.eager import EagerOps
from torchlean.nn.layers import (
    Layer,
    Linear,
    ParamSpec,
    Sequential,
    Shape,
    ShapeError,
    checked_dims,
    is_bool,
    specs_of,
)
from torchlean.tensor import DeviceLike, Tensor, _is_torch_tensor

_REALS = (numbers.Real, Decimal)
"""What an object-dtype state entry may hold (Python and numpy reals, Fraction, Decimal)."""

__all__ = [
    "SEED_RANGE", "ArchitectureError", "IncompatibleKeys", "Model", "ModelInputError", "StateError", "build",
    "is_seed",
    "not_a_layer",
]

SEED_RANGE = "[0, 2**64)"
"""The accepted seeds, as error messages render them."""

Array = npt.NDArray[np.floating]


class IncompatibleKeys(NamedTuple):
    """What :meth:`Model.load_state` with ``strict=False`` left out (torch's
    ``_IncompatibleKeys``): the model's parameters the state lacked (they kept their values)
    and the state's entries the model has no parameter for (ignored)."""

    missing_keys: list[str]
    unexpected_keys: list[str]


class StateError(TorchLeanError, ValueError):
    """A state dictionary does not match the model (names the missing/extra/mismatched entry)."""


class ModelInputError(ShapeError, TypeError):
    """``model(x)`` given what is not a Tensor, or a Tensor of another dtype than the model's, or a
    ``training`` flag that is not a bool: a :class:`~torchlean.nn.layers.ShapeError` as before, and
    a ``TypeError``, which a torch user's ``except TypeError`` catches (review214 F5: sklearn's
    float64 arrays given to a float32 model; review220 F6: ``training="yes"``)."""


class ArchitectureError(TorchLeanError, AttributeError):
    """A built model's architecture (``layer``, ``input_shape``, ``output_shape``, ``specs``,
    ``dtype``) reassigned: a trainer's optimizer state and accepted typed graphs were made for it,
    so the new one would run the old graph on new weights (review132 F1). Also an
    ``AttributeError``, as assigning a frozen dataclass field raises one."""


_ARCHITECTURE = frozenset({"layer", "input_shape", "output_shape", "specs", "dtype"})
""":class:`Model`'s fields set once, by its constructor (``parameters`` is replaced each step)."""


@dataclass(slots=True, eq=False)
class Model(PicklesAtEveryProtocol):
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

    def __setattr__(self, name: str, value: object) -> None:
        """Set a field; the architecture's fields only once (the constructor, unpickling).

        Raises:
            ArchitectureError: ``layer``, ``input_shape``, ``output_shape``, ``specs`` or ``dtype``
                set again (``model.layer = other``): build a new model (:func:`build`), and a new
                ``Trainer`` for it; weights are replaced with :meth:`load_state`.
        """
        if name in _ARCHITECTURE and hasattr(self, name):
            raise ArchitectureError(
                f"Model.{name} is fixed once the model is built (optimizer state and accepted typed graphs "
                "are made for its architecture): build a new model (nn.build) and a new Trainer for another "
                "architecture; replace weights with model.load_state(...)"
            )
        object.__setattr__(self, name, value)

    @property
    def names(self) -> list[str]:
        """The parameters' names in state order, buffers included (``weight``; ``0.weight`` inside a
        sequential): the keys of :meth:`state`, torch's ``named_parameters()`` and
        ``named_buffers()`` names, which optimizer groups select by
        (``optim.OptimizerConfig.create(model.parameters, names=model.names, groups=...)``)."""
        return [spec.name for spec in self.specs]

    def state(self) -> dict[str, Array]:
        """A copy of every parameter, buffers included (``running_mean``), by name (``weight``;
        ``0.weight`` inside a sequential), in state order: arrays of the spec's shape in the model
        ``dtype`` (as ``torch.nn.Module.state_dict``, but copies)."""
        return {spec.name: value.copy() for spec, value in zip(self.specs, self.parameters, strict=True)}

    def load_state(self, state: Mapping[str, npt.ArrayLike], strict: bool = True) -> IncompatibleKeys:
        """Replace the parameters by ``state`` (same names and shapes; cast to the model dtype), as
        ``torch.nn.Module.load_state_dict``: ``state`` may be a torch ``state_dict()`` (its tensors
        are read as arrays). With ``strict=False`` (torch's), entries the model lacks are ignored
        and parameters ``state`` lacks keep their values (torch's batch norm
        ``num_batches_tracked`` counters, which torchlean does not keep, are such entries); the
        result names both, as torch's ``(missing_keys, unexpected_keys)`` (empty lists when
        ``strict``).

        Raises:
            StateError: ``state`` is not a mapping, ``strict`` not a bool; with ``strict``, naming
                the missing or unexpected entries; naming a mis-shaped entry, or an entry that is
                not a rectangular array of real numbers (accepted: bool, integer or float arrays,
                or object arrays of real numbers such as ``Fraction`` and ``Decimal``; refused:
                strings, other objects, complex values, datetime64/timedelta64 values, ragged
                lists), a tensor that requires grad (torch's ``named_parameters()``: pass
                ``state_dict()`` or ``.detach()``), or a finite value the model dtype cannot hold
                (``1e39`` in a float32 model; NaN and infinities load as they are), before any
                parameter changes.
        """
        if not isinstance(state, Mapping):
            raise StateError(
                f"state must be a mapping of parameter names to arrays (as Model.state() returns), got "
                f"{type(state).__name__}"
            )
        if not isinstance(strict, (bool, np.bool_)):
            raise StateError(f"strict must be a bool, got {strict!r}")
        names = [spec.name for spec in self.specs]
        missing = [n for n in names if n not in state]
        known = set(names)  # review243 F10: a list's membership test per entry was quadratic
        extra = [n for n in state if n not in known]
        if strict and (missing or extra):
            counters = [n for n in extra if isinstance(n, str) and n.endswith("num_batches_tracked")]
            hint = (
                f"; torch's batch norm counters ({', '.join(counters)}) are not kept (they serve only "
                "momentum=None), drop them or pass strict=False" if counters else ""
            )
            named = [n for n in extra if isinstance(n, str) and not n.split(".", 1)[0].isdigit()]
            if missing and named:  # a torch module's attribute names (review54 F7)
                hint += (
                    "; torchlean names parameters by their layer's position in a sequential model and "
                    f"the layer's own names (the missing names), not by torch's attribute names such as "
                    f"{named[0]!r}: rename the entries"
                )
            packed = [n for n in extra if isinstance(n, str) and n.endswith("in_proj_weight")]
            if missing and packed:  # torch's MultiheadAttention (review140 F4)
                hint += (
                    f"; torch's {packed[0]!r} packs the query, key and value projections: split its rows "
                    "[0:d], [d:2d], [2d:3d] into wq, wk, wv (out_proj.weight is wo; the builders of "
                    "nn.multi_head_attention and nn.transformer_block give the whole mapping)"
                )
            torch_biases = ("in_proj_bias", "out_proj.bias")
            biases = [n for n in extra if isinstance(n, str) and n.endswith(torch_biases)]
            if biases:  # review223 F2: torch's MultiheadAttention has biases by default
                hint += (
                    f"; torchlean's attention projections have no biases, so {', '.join(map(repr, biases))} "
                    "have no counterpart: the model computes torch's layer only where they are zero "
                    "(strict=False drops them, and with nonzero ones the model then computes another "
                    "function)"
                )
            raise StateError(f"state does not match the model: missing {missing}, unexpected {extra}{hint}")
        values: list[Array] = []
        for spec, current in zip(self.specs, self.parameters, strict=True):
            if spec.name not in state:  # strict=False: the parameter keeps its value
                values.append(current)
                continue
            entry = state[spec.name]
            if getattr(entry, "requires_grad", False) is True:  # a torch or torchlean tensor
                raise StateError(
                    f"state entry {spec.name} is a {type(entry).__name__} that requires grad (accepted: "
                    "arrays of its values, e.g. its .detach(), or torch's state_dict() entries)"
                )
            # refused by shape before the cast (review243 F4: a (2**26, 3) float64 entry for a (1, 3)
            # weight was cast in full, then refused); a torch tensor whose dtype is accepted (not
            # complex) before it is copied to the host or widened, the rest once numpy has read them
            # and their dtype is checked, as before
            tensor: Any = entry
            if _is_torch_tensor(tensor) and tensor.device.type != "meta" and not tensor.is_complex():
                _check_entry_shape(spec, tuple(tensor.shape))
            host = _wide_torch(entry, spec.name)
            try:
                raw = np.asarray(host)
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
            _check_entry_shape(spec, raw.shape)
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
            values.append(value)
        self.parameters = values  # with strict, nothing was missing or unexpected: two empty lists
        return IncompatibleKeys(missing, [n if isinstance(n, str) else repr(n) for n in extra])

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

    def tensors(self, *, device: DeviceLike = "cpu") -> list[Tensor]:
        """The parameters as new leaf tensors on ``device``, in state order (torch's
        ``parameters()`` and buffers together): copies of the values in the model dtype, the
        trainable ones with ``requires_grad=True``, the buffers (batch norm's running statistics)
        without. Pass them to :meth:`forward` in a training loop of your own and write the updated
        values back with :meth:`load_tensors`; changing them does not change the model until then.

        Raises:
            DeviceError: an unknown device or a CUDA device while CUDA is unusable here
                (:func:`torchlean.tensor.resolve_device`).
        """
        return [
            Tensor(value, requires_grad=spec.trainable, device=device)
            for spec, value in zip(self.specs, self.parameters, strict=True)
        ]

    def forward(self, x: Tensor, params: Sequence[Tensor] | None = None, *, training: bool = False) -> Tensor:
        """The layer's forward program on a batch, eager, in the current session (``tl.session``;
        each op planned, accepted and recorded on the tape as :mod:`torchlean.functional` does):
        ``x`` of shape ``(b, *input_shape)`` in the model dtype gives ``(b, *output_shape)``.

        ``params`` are the parameter values to use, one tensor per spec in state order (as
        :meth:`tensors` makes them; ``loss.backward()`` then fills the trainable ones' ``.grad``),
        or ``None`` for the model's own values without gradient. ``training=True`` is torch's
        ``module.train()``: dropout draws masks from the session, and batch norm normalises with
        the batch's statistics and updates its running statistics during the forward pass, as
        torch does: into the buffer tensors of ``params`` (in place, without gradient), or, with
        ``params=None``, into the model's own values (so ``with tl.no_grad():
        model.forward(x, training=True)`` recalibrates them). ``training=False`` is torch's
        ``module.eval()``, as :meth:`~torchlean.trainer.Trainer.predict` runs it. A model whose
        first layer looks up ids (``nn.embedding``; :meth:`~torchlean.nn.layers.Layer.index_count`)
        takes int64 ids ``x`` instead (an id out of range is refused by the lookup).

        Raises:
            ShapeError: ``x`` is not a Tensor, or not of the model dtype (int64 for ids) and shape
                ``(b, *input_shape)`` (``x has shape [3, 5] and dtype float32, expected shape (b,
                4) and dtype float32``); ``training`` not a bool. Not a Tensor, another dtype or
                a ``training`` not a bool is a :class:`ModelInputError`, also a ``TypeError``.
            StateError: ``params`` does not hold one tensor per parameter, of its shape, of the
                model dtype and on ``x``'s device; a layer updated a tensor that is not one of the
                buffers of ``params`` (:meth:`buffer_positions`).
            SessionError, GuardError: as the ops it runs (an op the profile selects no capsule
                for; a batch norm seeing one value per channel in training).
        """
        if not isinstance(x, Tensor):
            raise ModelInputError(
                f"model.forward: x must be a torchlean Tensor (tl.tensor(values, dtype=...)), got {_kind(x)}"
            )
        dtype = self.dtype if self.layer.index_count() is None else np.dtype(np.int64)
        if x.shape[1:] != self.input_shape or x.dtype != dtype:  # shape[1:] of a 0-d x is ()
            ids = "" if dtype == self.dtype else " (ids: the model's first layer looks them up)"
            refusal = ShapeError if x.dtype == dtype else ModelInputError
            raise refusal(
                f"model.forward: x has shape {list(x.shape)} and dtype {x.dtype}, expected shape "
                f"(b, {', '.join(map(str, self.input_shape))}) and dtype {dtype}{ids}"
            )
        if not is_bool(training):
            raise ModelInputError(f"model.forward: training must be a bool, got {training!r}")
        own = params is None
        values = (
            [Tensor(value, device=x.device) for value in self.parameters]
            if own
            else self._checked_params(params, "model.forward", x.device)
        )
        ops = EagerOps(training=bool(training))
        out = self.layer.forward(ops, values, x, training=bool(training))
        updates = self.buffer_positions(values, ops.buffer_updates)
        with no_grad():
            for position, update in updates.items():
                if own:
                    self.parameters[position] = np.array(update.numpy(), dtype=self.dtype)
                else:
                    values[position].copy_(update)
        return out

    def __call__(
        self, x: Tensor, params: Sequence[Tensor] | None = None, *, training: bool = False
    ) -> Tensor:
        """:meth:`forward`: ``model(x)`` as for a torch module (evaluation mode unless
        ``training=True``)."""
        return self.forward(x, params, training=training)

    if not TYPE_CHECKING:  # mypy keeps reporting unknown attributes; at run time they get a hint

        def __getattr__(self, name: str) -> NoReturn:
            """An attribute ``Model`` lacks: ``AttributeError``, with torchlean's spelling for the
            ``torch.nn.Module`` attributes ported code reaches for (``train``/``eval``: the
            ``training=`` argument of each call; ``state_dict``: :meth:`state`;
            :data:`~torchlean._module_hints.MODEL_HINTS`), as ``Tensor`` does."""
            raise missing_attribute(self, name, MODEL_HINTS)

    def _checked_params(self, params: object, caller: str, device: str | None) -> list[Tensor]:
        """``params`` as a list after checking it against the specs: one Tensor per spec, of its
        shape and of the model dtype, on ``device`` unless that is ``None`` (for :meth:`forward`:
        then buffers must not require grad, as torch's batch norm refuses such running
        statistics)."""
        if isinstance(params, Tensor | str | bytes) or not isinstance(params, Sequence):
            raise StateError(
                f"{caller}: params must be a sequence of tensors (model.tensors()), got {_kind(params)}"
            )
        if len(params) != len(self.specs):
            trainable = sum(spec.trainable for spec in self.specs)
            kinds = (
                "parameters"
                if trainable == len(self.specs)
                else f"tensors: {trainable} parameters and {len(self.specs) - trainable} buffers"
            )
            raise StateError(
                f"{caller}: params holds {len(params)} tensors, the model has {len(self.specs)} "
                f"{kinds} ({', '.join(spec.name for spec in self.specs)}; model.tensors() lists them)"
            )
        for spec, value in zip(self.specs, params, strict=True):
            if not isinstance(value, Tensor):
                raise StateError(
                    f"{caller}: params entry {spec.name} is a {_kind(value)}, not a torchlean Tensor "
                    "(model.tensors() makes them; tl.tensor(values) converts data)"
                )
            if value.shape != spec.shape or value.dtype != self.dtype or device not in (None, value.device):
                where = "" if device is None else f" on {device} (x's device)"
                raise StateError(
                    f"{caller}: params entry {spec.name} has shape {list(value.shape)}, dtype "
                    f"{value.dtype} on {value.device}; expected shape {list(spec.shape)}, dtype "
                    f"{self.dtype}{where}"
                )
            if device is not None and not spec.trainable and value.requires_grad:
                raise StateError(
                    f"{caller}: params entry {spec.name} is a buffer and must not require grad (as "
                    "model.tensors() makes it; torch refuses running statistics that require grad)"
                )
        return list(params)

    def buffer_positions(
        self, params: Sequence[Tensor], updates: Sequence[tuple[Tensor, Tensor]]
    ) -> dict[int, Tensor]:
        """:attr:`~torchlean.nn.eager.EagerOps.buffer_updates` of a forward program run on
        ``params``, by parameter index: each buffer's last (so its next) value.

        Raises:
            StateError: an update of a tensor that is not one of the buffers of ``params`` (a
                custom layer passing a computed value or a trainable parameter as running
                statistics).
        """
        index = {id(param): position for position, param in enumerate(params)}
        positions: dict[int, Tensor] = {}
        for buffer, value in updates:
            position = index.get(id(buffer))
            if position is None or self.specs[position].trainable:
                what = (
                    "a computed tensor" if position is None
                    else f"the trainable parameter {self.specs[position].name}"
                )
                raise StateError(
                    f"a layer updated {what} as a buffer (accepted: a parameter whose ParamSpec has "
                    "trainable=False, passed unchanged from the forward program's params)"
                )
            positions[position] = value
        return positions

    def load_tensors(self, params: Sequence[Tensor]) -> None:
        """Replace the parameters by the values of ``params`` (as :meth:`tensors` made them, after
        your optimizer updated them): host copies, in state order.

        Raises:
            StateError: ``params`` is not a sequence of one tensor per parameter, of its shape and
                of the model dtype (on any device), before any parameter changes.
        """
        values = self._checked_params(params, "load_tensors", None)
        self.parameters = [np.array(value.numpy(), dtype=self.dtype) for value in values]


_NUMPY_FLOATS = ("torch.float16", "torch.float32", "torch.float64")
"""The torch floating dtypes numpy has a type for."""


def _check_entry_shape(spec: ParamSpec, shape: tuple[int, ...]) -> None:
    """Refuse a state entry of ``shape`` for ``spec`` of another shape."""
    if tuple(shape) != spec.shape:
        raise StateError(f"state entry {spec.name} has shape {list(shape)}, expected {list(spec.shape)}")


def _wide_torch(entry: object, name: str) -> object:
    """A torch tensor copied to the host (a CUDA checkpoint loaded without ``map_location``), and
    one of a floating dtype numpy has no type for (bfloat16, the float8 types) widened to float64,
    which holds each of its values exactly; anything else as it is.

    Raises:
        StateError: a tensor without data (torch's ``meta`` device), naming the entry."""
    if not _is_torch_tensor(entry):
        return entry
    tensor: Any = entry
    if tensor.device.type == "meta":
        raise StateError(
            f"state entry {name} is a torch tensor on the meta device, which holds no values "
            "(accepted: tensors with data on any device, e.g. torch.load(..., map_location='cpu'))"
        )
    tensor = tensor.detach().cpu()  # review54 F4: numpy reads host tensors only
    if tensor.is_floating_point() and str(tensor.dtype) not in _NUMPY_FLOATS:
        return tensor.double()
    return tensor


def _kind(value: object) -> str:
    """``value``'s type as messages name it: ``torch.Tensor`` for torch's, else the class name."""
    cls = type(value)
    from_torch = cls.__module__ == "torch" or cls.__module__.startswith("torch.")
    return f"torch.{cls.__name__}" if from_torch else cls.__name__


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


def _leading_layers(layer: Layer) -> list[Layer]:
    """``layer``'s layers in order, nested sequentials flattened (empty ones drop out)."""
    if not isinstance(layer, Sequential):
        return [layer]
    return [leaf for child in layer.layers for leaf in _leading_layers(child)]


def _keeps_shape(layer: Layer, shape: Shape) -> bool:
    """Whether ``layer`` maps ``shape`` and a batch of it to themselves (an activation, dropout,
    identity, a layer norm over the last axis), reading no integer ids."""
    try:
        batched = (2, *shape)
        return (layer.index_count() is None and tuple(layer.output_shape(shape)) == shape
                and tuple(layer.output_shape(batched)) == batched)
    except Exception:  # a probe on a guessed shape: a layer of one's own may raise anything
        return False


def _infer_input_shape(layer: Layer) -> Shape:
    """``(in_features,)`` of the model's first linear layer, when every layer before it keeps
    that shape (``nn.sequential(nn.identity(), nn.linear(3, 2))``: review182 F1).

    Raises:
        ShapeError: ``cannot infer the input shape of relu; pass input_shape=``.
    """
    leading = _leading_layers(layer)
    first = next((position for position, leaf in enumerate(leading) if isinstance(leaf, Linear)), None)
    if first is not None:
        linear = leading[first]
        assert isinstance(linear, Linear)
        shape = (linear.in_features,)
        if all(_keeps_shape(before, shape) for before in leading[:first]):
            return shape
    raise ShapeError(f"cannot infer the input shape of {layer.describe()}; pass input_shape=")


def not_a_layer(value: object) -> str:
    """The refusal of ``value`` where a :class:`Layer` is expected, its repr cut to 80 characters
    (a built :class:`Model`'s repr holds every weight); a Model is told to pass its layer, a
    torch module (named by its type alone, its repr is the type's name again and spans lines) to
    describe the model with ``torchlean.nn`` layers."""
    shown = repr(value)
    if len(shown) > 80:
        shown = shown[:77] + "..."
    kind = type(value)
    if kind.__module__.split(".")[0] == "torch":
        named = f"{kind.__module__}.{kind.__qualname__}"
        named = "torch.nn." + kind.__qualname__ if named.startswith("torch.nn.modules.") else named
        return (
            f"layer must be a Layer (e.g. nn.linear(4, 1)), got a {named}: describe the model with "
            "torchlean.nn layers, then load the torch module's weights into the built model: "
            "trainer.model.load_state(module.state_dict()) (a Model of nn.build(layer) has load_state too)"
        )
    message = f"layer must be a Layer (e.g. nn.linear(4, 1)), got {kind.__name__} {shown}"
    if isinstance(value, Model):
        message += "; a built Model: pass model.layer, then copy its weights with load_state(model.state())"
    return message



InputShape: TypeAlias = Sequence[int | np.integer[Any]] | npt.NDArray[np.integer[Any]]
"""A per-sample input shape as :func:`build` and :class:`~torchlean.trainer.Trainer` take it: a
tuple, list or ``torch.Size`` of integers (Python or numpy) or a 1-d integer numpy array
(review117 F4: mypy refused the numpy spellings the run time takes)."""

def _checked_output_shape(layer: Layer, shape: object) -> tuple[int, ...]:
    """``layer.output_shape``'s result as a tuple of ints >= 0 (review173 F8: ``(3.0,)`` trained
    eagerly and was refused by the typed graph without naming the layer)."""
    items = shape if isinstance(shape, (tuple, list)) else None
    if items is None or not all(is_int(d) and int(d) >= 0 for d in items):
        raise ShapeError(
            f"build: {type(layer).__name__}.output_shape must return a tuple of ints >= 0 (the per-sample "
            f"output shape), got {shape!r}"
        )
    return tuple(int(d) for d in items)


def _check_unique_names(layer: Layer, specs: Sequence[ParamSpec]) -> None:
    """Refuse parameter names a layer's ``param_specs`` repeat: the model's state is keyed by name,
    so one of them was lost and the state could not be loaded back (review173 F6)."""
    # a Counter keeps the names in their first occurrence's order (review243 F10: one pass, where
    # list.count per name was quadratic in the parameter count)
    repeated = [name for name, count in Counter(spec.name for spec in specs).items() if count > 1]
    if repeated:
        raise ShapeError(
            f"build: {type(layer).__name__}.param_specs repeats the parameter name"
            f"{'s' if len(repeated) > 1 else ''} {', '.join(repeated)} (the model's "
            "state is keyed by name): give each its own name, as a container does with "
            "ParamSpec.prefixed (nn.sequential names its children's 0.weight, 1.weight, ...)"
        )


def build(
    layer: Layer,
    *,
    input_shape: InputShape | None = None,
    seed: int | np.integer[Any] = 0,
    dtype: npt.DTypeLike = np.float32,
) -> Model:
    """Instantiate ``layer`` for per-sample ``input_shape`` with seeded parameters.

    ``input_shape`` (a tuple, list or 1-d integer numpy array of at most 64 ints >= 1; stored as a
    tuple of ints) may be omitted when the first layer is a linear layer, or layers that keep its input
    shape come before one (an identity, activations, dropout, a layer norm). ``seed`` is an integer (Python or
    numpy) in ``[0, 2**64)``; parameter ``i`` is drawn from ``np.random.default_rng([seed, i])``.
    ``dtype`` is float32 or float64 (a numpy spelling or the torch dtype). Initial values follow
    PyTorch's default initialisation in distribution (``nn.Linear``/``nn.Conv2d``:
    U(-1/sqrt(fan_in), 1/sqrt(fan_in)); ``nn.Embedding``: N(0, 1), its ``padding_idx`` row zeros;
    :class:`~torchlean.nn.layers.ParamSpec`), not torch's random stream. Returns a :class:`Model`
    whose ``parameters`` are in ``dtype``.

    Raises:
        ShapeError: ``layer`` is not a :class:`Layer`; a bad ``input_shape`` (also one of more
            than 64 entries, refused by its length before any entry is read), or none given for a
            model that does not start with a linear layer, or with layers that keep its input
            shape before one (``cannot infer the input shape of relu; pass input_shape=``);
            ``seed`` not an
            integer in ``[0, 2**64)`` (``seed must be an integer in [0, 2**64), got -1``); a dtype
            other than float32/float64 (also ``None`` or a spelling numpy cannot read); a layer
            does not fit the shape it receives; or a layer cannot run in ``dtype``
            (:meth:`~torchlean.nn.layers.Layer.dtype_fault`: a normalisation ``eps`` of ``1e39``
            in float32, or a batch norm ``eps`` of ``1e-50``, which rounds to 0 there); a layer
            whose ``output_shape`` is not a tuple of ints >= 0, or whose ``param_specs`` repeat a
            name (review173 F6, F8), or is not a method returning a tuple (or list) of
            :class:`~torchlean.nn.layers.ParamSpec` (:func:`~torchlean.nn.layers.specs_of`).
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
    output_shape = _checked_output_shape(layer, layer.output_shape(shape))
    fault = layer.dtype_fault(resolved)
    if fault is not None:
        raise ShapeError(fault)
    specs = specs_of(layer)
    _check_unique_names(layer, specs)
    parameters = [
        spec.initial(np.random.default_rng([int(seed), index]), resolved) for index, spec in enumerate(specs)
    ]
    return Model(layer, shape, output_shape, specs, parameters, resolved)
