"""User-facing tensor operations; each one runs on the kernel its session accepted for it.

Every function here lowers to one or more :class:`~torchlean.backend.vocabulary.BackendOp` s and
calls :func:`torchlean.autograd.session.run_op` for each, so the current eager session plans,
accepts, binds and records the capsule, and the tape records the node (anchor-runtime.md §1.8).
The docstring of each function names the ops it records. Semantics mirror the PyTorch function
named in each docstring; the reference kernels' guards refuse bad input with a ``GuardError``.

Operands (one rule, checked in one place):

* Tensor arguments must be :class:`~torchlean.tensor.Tensor` s (``None`` where the argument is
  optional). The only exceptions (where torch accepts Python numbers) are the operands of the
  binary arithmetic functions ``add``, ``sub``, ``mul``, ``div``, ``maximum``, ``minimum`` (and so
  the operators ``+ - * /``) and ``mse_loss``: there one operand may be a Python number, a numeric
  numpy array or a nested list of numbers, and becomes a constant of the other (tensor) operand's
  dtype on its device (for ``mse_loss``, a number is filled to the tensor's shape). A Python
  integer must fit that dtype (``x * 10**400`` is a ``TensorError``).
  Masks (``hard_masked_softmax``, ``scaled_dot_product_attention``) and index arrays
  (``gather``, ``scatter_add``, ``cross_entropy`` targets) may also be array-likes; they land on
  the device of the tensor they apply to, uncast (the kernel guard refuses a wrong dtype), except
  that integer index data becomes int64 (a uint64 value above ``2**63 - 1`` is refused with the
  guard's out-of-range message naming it, never wrapped); ragged nested lists there are refused
  with a ``TensorError`` naming the op and the argument.
  Anything else in a tensor position (a numpy array for ``relu``, ``x @ 3.0``, a list, ``None``
  where the input is not optional) is refused by
  :func:`torchlean.autograd.dispatch.check_operands`, the boundary every op passes, with a
  :class:`~torchlean.tensor.TensorTypeError` (a ``TensorError`` and a ``TypeError``) naming the op,
  the input position and the type received. ``None`` stands for an absent bias, affine weight,
  running statistic or attention mask (``dispatch.OPTIONAL_INPUTS``).
* A constant must be numeric: ``None``, strings, objects and complex numbers are refused with a
  ``TensorTypeError``, ragged nested lists with a ``TensorError``. A ``torch.Tensor`` is data like
  a numpy array (its values copied, cast to the other operand's dtype); one that requires grad is
  refused with a ``TensorTypeError``, since torch's autograd history cannot reach torchlean's tape
  (torch itself refuses to turn such a tensor into numpy).
* Integer parameters (axes, shapes, permutations, slice bounds, ``groups``, seeds) must be Python
  or numpy integers; floats and bools are refused with a ``TensorTypeError`` rather than truncated
  (the kernel guards apply the same rule to the window parameters they receive unconverted,
  refusing with a ``GuardTypeError``, also a ``TypeError``, and refusing with a ``GuardError`` a
  window parameter above ``2**31 - 1`` for the pools and ``conv_transpose``, above ``2**63 - 1``
  for ``conv``, as torch: see
  :func:`~torchlean.backend.providers.reference.spatial_guards.window_parameter_limit`).
  Axes are refused when out of range, never wrapped; seeds must be below ``2**64``.
  Real parameters (factors, bounds, ``eps``, probabilities, ``scale``) must be real numbers (bool
  refused); they are not parsed from strings.
* Flags (``keepdims``, ``training``) must be bools (Python or numpy), as torch requires.

Dtypes, shapes and errors (shared by every function below, under every CPU profile; a function's
``Raises`` lists at least what it adds): tensor inputs are float32 or float64 and results keep that
dtype. An int64 or bool tensor where a float one is expected (``relu``, ``matmul``, ``gather`` of
int64 data) is refused by the kernel guard with a ``GuardError`` (a ``ValueError``) naming the op,
the input and its dtype (``relu: input x has dtype int64; accepted: float32 or float64``); the
only non-float inputs are boolean masks (a non-boolean mask is a ``GuardTypeError``), int64
indices, and int64 or bool data of the shape ops ``reshape``, ``permute``/``transpose``,
``broadcast_to``, ``concat`` and slicing on ``cpu`` (they move values without arithmetic: a label
tensor or a mask may be sliced). The kernels never promote dtypes: float32, float64 and int64 tensors do
not mix (``GuardError``); tensors on different devices do not mix either
(``DeviceError``; move them with ``Tensor.to``). Shapes that do not fit (operands that do not
broadcast, contracted extents that differ, an axis out of range) are refused by the guard with a
``GuardError`` naming the shapes and the accepted ones. Elementwise functions return a tensor of
x's shape; the binary ones (``add``, ``sub``, ``mul``, ``div``, ``maximum``, ``minimum``) the
broadcast shape of their operands (numpy/PyTorch broadcasting). Values outside a function's
domain are not errors: they give torch's IEEE result (``log(-1)`` is NaN, ``log(0)`` and
``inv(0)`` are ``-inf``/``inf``).

Zero-size inputs (a batch, sequence or feature axis of extent 0) give torch's result under every
CPU profile: an empty tensor, ``0`` for a sum and NaN for a mean over nothing, the bias alone
for a ``linear`` with no input features, zeros for an attention row without keys; gradients
have their inputs' shapes (zeros where an input only met empty axes, except a divisor that is
0 or NaN, or whose square underflows (``1e-30`` in float32): ``div`` records ``inv``, whose
gradient there is NaN, where torch's ``div`` gives 0). Where torch refuses an
empty axis (pool channels or spatial extents, a convolution's spatial extents with a non-empty
batch, empty weights), the guard refuses it with a ``GuardError``. A few calls torch answers are
refused too, each with torch's behaviour as evidence in ``tests/runtime/test_zero_size.py``: a
convolution input with 0 channels (torch returns 0 output channels), a transposed convolution
of an empty batch whose output size would be 0 (torch returns shape ``(0, C_out, 0)``), and
mis-shaped operands
that torch accepts only because they are empty (an empty ``gather``/``scatter_add`` index that
does not fit, a 1-D empty tensor in ``concat``, a ``batch_norm`` weight of the wrong length).

Lowerings that record more than one op (the catalog has no division, negation, select or
cross-entropy op):

* ``div(a, b)`` → ``inv`` then ``mul`` (by a number that is finite and nonzero with a finite
  reciprocal in the tensor's dtype: ``scale`` by its reciprocal; by zero, ``±inf`` or ``nan``,
  ``inv`` of the constant then ``mul``, so ``x / 0`` is ``±inf``/``nan`` as in torch; by
  divisors whose reciprocal overflows, ``mul`` by exact powers of two around them first);
* ``neg(x)`` → ``scale`` by -1; ``mul`` by a finite number → ``scale``, by ``±inf`` or ``nan``
  (which ``scale`` refuses) → ``mul`` with a constant tensor, so the values are torch's;
* ``x[i]`` (an integer index) → ``slice`` then ``reshape``; ``None`` in an index → ``reshape``;
* ``cross_entropy`` with class indices → ``log_softmax``, ``gather``, ``reduce_mean``, ``scale``;
  with class probabilities → ``log_softmax``, ``mul``, ``reduce_sum``, ``reduce_mean``, ``scale``;
* ``dropout`` → ``bernoulli_mask``, ``mul``, ``scale``.
"""

from __future__ import annotations

import builtins
import functools
import math
import numbers
from collections.abc import Callable, Iterable, Sequence
from typing import Any, ParamSpec, TypeGuard, TypeVar

import numpy as np
import numpy.typing as npt

from torchlean._checks import (
    id_outside,
    int_overflow,
    is_builtin_int,
    is_builtin_or_numpy_int,
    is_int,
    padding_index,
    shown,
)
from torchlean.autograd import storage
from torchlean.autograd.grad_mode import is_grad_enabled
from torchlean.autograd.session import current_session, run_op
from torchlean.autograd.tape import AutogradError
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.reference.guards import (
    axis_in_range,
    index_out_of_range,
    reduced_shape,
    reduction_axes,
)
from torchlean.backend.vocabulary import BackendOp
from torchlean.tensor import (
    DEFAULT_DTYPE,
    DTypeLike,
    Tensor,
    TensorError,
    TensorTypeError,
    _flag,
    _from_torch_array,
    _is_torch_tensor,
    _preview,
    _require_int64_fits,
    operand_type,
    resolve_dtype,
)

__all__ = [
    "abs",
    "add",
    "avg_pool",
    "batch_norm",
    "bernoulli_mask",
    "broadcast_to",
    "clamp",
    "concat",
    "conv",
    "conv_transpose",
    "cos",
    "cross_entropy",
    "div",
    "dropout",
    "embedding",
    "exp",
    "gather",
    "gelu",
    "getitem",
    "hard_masked_softmax",
    "inv",
    "layer_norm",
    "linear",
    "log",
    "log_softmax",
    "logsumexp",
    "matmul",
    "max_pool",
    "maximum",
    "minimum",
    "mse_loss",
    "mul",
    "neg",
    "permute",
    "rand_uniform",
    "reduce_mean",
    "reduce_sum",
    "relu",
    "reshape",
    "safe_log",
    "scale",
    "scaled_dot_product_attention",
    "scatter_add",
    "sigmoid",
    "sin",
    "slice",
    "smooth_max_pool",
    "softmax",
    "softplus",
    "sqrt",
    "sub",
    "tanh",
    "transpose",
]

Operand = Tensor | float | int | npt.NDArray[Any]
Axes = int | Sequence[int] | None
IntOrTuple = int | Sequence[int]
_P = ParamSpec("_P")
_R = TypeVar("_R")

# ------------------------------------------------------------------------------------- helpers


def _on_device_of(array: npt.NDArray[Any], like: Tensor) -> Tensor:
    """A tensor holding ``array`` (not copied on the CPU) on ``like``'s device."""
    return Tensor._make(storage.like(array, like._data))


def _constant(value: object, like: Tensor) -> Tensor:
    """A number or numeric array-like as a constant of ``like``'s dtype on its device.

    Python integers beyond numpy's integer range (e.g. ``2**70``, which numpy holds only as an
    object) are accepted when they fit ``like``'s dtype (:func:`_check_int_fits`).

    Raises:
        TensorTypeError: non-numeric data (``None``, strings, objects, complex numbers); a
            ``torch.Tensor`` that requires grad (its gradient would be lost).
        TensorError: ragged nested sequences, a meta, sparse or nested torch tensor or one of a
            dtype numpy cannot hold, an integer that does not fit ``like``'s dtype, or
            for an int64 ``like`` a value int64 cannot hold (NaN, ``±inf``, ``1e30``;
            :func:`torchlean.tensor._require_int64_fits`).
    """
    raw = _constant_values(value, like.dtype)
    if like.dtype == np.int64:  # numpy's cast would turn NaN, inf or 1e30 into -2**63
        _require_int64_fits(raw)
    with np.errstate(over="ignore"):  # a float beyond float32's range rounds to +-inf, as in torch
        return _on_device_of(np.array(raw, dtype=like.dtype, copy=True), like)


def _constant_values(
    value: object, dtype: np.dtype[Any], role: str = "a constant operand"
) -> npt.NDArray[Any]:
    """The numeric values of a constant (a number, a numeric array-like or a torch tensor) as a
    numpy array of their own dtype, not yet cast to ``dtype``, which only decides whether a Python
    integer beyond numpy's range fits (:func:`_check_int_fits`; such object data is returned cast
    to ``dtype``). ``role`` names the argument in the messages: the functional ops' constant
    operands, and the values written by :meth:`Tensor.__setitem__` and :meth:`Tensor.copy_`.

    Raises:
        TensorTypeError: non-numeric data (``None``, strings, bytes, objects, complex numbers); a
            ``torch.Tensor`` that requires grad (its gradient would be lost).
        TensorError: ragged nested sequences, a meta, sparse or nested torch tensor or one of a
            dtype numpy cannot hold, an integer that does not fit ``dtype``.
    """
    if _is_torch_tensor(value):
        t: Any = value
        if t.requires_grad:
            raise TensorTypeError(
                f"cannot use a torch tensor that requires grad (shape {tuple(t.shape)}) as "
                f"{role}: torch's autograd history does not reach torchlean's tape, so its "
                "gradient would be lost (accepted: t.detach() as a constant, or "
                "torchlean.from_torch(t.detach(), requires_grad=True) as a torchlean leaf)"
            )
        value = _from_torch_array(t)
    try:
        raw = np.asarray(value)
    except ValueError as exc:
        raise TensorError(
            f"cannot use {_preview(value)} as {role}: {exc} (accepted: a Python number, "
            "a numeric numpy array or nested lists of numbers of one rectangular shape)"
        ) from exc
    if raw.dtype == object and raw.size and all(_is_number(v) for v in raw.flat):
        for v in raw.flat:
            if is_builtin_int(v):
                _check_int_fits(v, dtype)
        with np.errstate(over="ignore"):
            return raw.astype(dtype)
    if raw.dtype.kind not in "biuf":
        raise TensorTypeError(
            f"cannot use {_preview(value)} of type {type(value).__name__} as {role}: it "
            "is not numeric (accepted: a Tensor, a Python number, a numeric numpy array or nested "
            "lists of numbers)"
        )
    if dtype.kind in "ib" and raw.dtype.kind in "uf" and raw.size:
        return _integers_as_written(value, raw, dtype)
    return raw


def _integers_as_written(value: object, raw: npt.NDArray[Any], dtype: np.dtype[Any]) -> npt.NDArray[Any]:
    """``raw`` (numpy's uint64 or float array for ``value``) checked against the int64 range for
    an int64 or bool ``dtype``, as the integers the user wrote: numpy holds a Python integer in
    ``[2**63, 2**64)`` as uint64, and a list mixing it with other integers (``[2**63, 1]``) as
    float64, so the integers are read again and each checked (:func:`_check_int_fits`), as torch
    refuses them ("Overflow when unpacking long long"). Float data the user wrote as floats is
    returned unchanged (the int64 float rule, :func:`torchlean.tensor._require_int64_fits`, is
    the caller's); integers that fit come back as int64.

    Raises:
        TensorError: ``the integer 9223372036854775808 (19 digits) does not fit the tensor's dtype
            int64 (accepted: integers in [-9223372036854775808, 9223372036854775807])``, naming
            the first such integer in row-major order (the same for a bool ``dtype``).
    """
    if raw.dtype.kind == "u":
        over = raw > np.iinfo(np.int64).max
        if over.any():
            _check_int_fits(int(raw[over].flat[0]), dtype)
        return raw
    if isinstance(value, np.ndarray | np.generic):
        return raw  # floats, as the user gave them
    exact = np.array(value, dtype=object)
    if exact.shape != raw.shape or not all(
        isinstance(v, numbers.Integral) for v in exact.flat
    ):
        return raw  # a float among them: float data
    for v in exact.flat:
        _check_int_fits(int(v), dtype)
    return exact.astype(np.int64)


def _check_int_fits(value: int, dtype: np.dtype[Any]) -> None:
    """Refuse a Python integer that ``dtype`` cannot hold: outside int64 for an int64 tensor; for a
    float tensor, one whose magnitude rounds past the dtype's largest finite value (torch refuses
    integers beyond int64 with an ``OverflowError``).

    Raises:
        TensorError: ``the integer 1000...000 (401 digits) does not fit the tensor's dtype ...``.
    """
    accepted = int_overflow(value, dtype)
    if accepted is not None:
        try:
            what = f"the integer {_preview(value)} ({len(str(builtins.abs(value)))} digits)"
        except ValueError:  # past Python's 4300-digit str limit
            what = shown(value)
        raise TensorError(
            f"{what} does not fit the tensor's dtype "
            f"{dtype} (accepted: {accepted})"
        )


def _factor(value: int | float, like: Tensor) -> float:
    """A Python number operand of ``mul``/``div`` as a float (an integer must fit ``like``'s
    dtype, :func:`_check_int_fits`)."""
    if is_builtin_int(value):
        _check_int_fits(value, like.dtype)
    return float(value)


def _int(fn: str, name: str, value: object) -> int:
    """``value`` as an int when it is a Python or numpy integer (bool excluded, as the kernel
    guards do).

    Raises:
        TensorTypeError: ``<fn>: <name> must be an integer; got 1.5 of type float ...``.
    """
    if type(value) is int:  # the common case, without the numbers.Integral ABC check
        return value
    if not is_int(value):
        raise TensorTypeError(
            f"{fn}: {name} must be an integer; got {_preview(value)} of type {type(value).__name__} "
            "(accepted: int or a numpy integer; floats are not truncated and bools are refused)"
        )
    return int(value)


def _ints(fn: str, name: str, values: object) -> tuple[int, ...]:
    """A sequence of integers (each checked by :func:`_int`) as a tuple.

    Raises:
        TensorTypeError: ``values`` is not a sequence, or an entry is not an integer.
    """
    if isinstance(values, str | bytes) or not isinstance(values, Iterable):
        raise TensorTypeError(
            f"{fn}: {name} must be a sequence of integers; got {_preview(values)} of type "
            f"{type(values).__name__}"
        )
    return tuple(_int(fn, f"{name}[{i}]", v) for i, v in enumerate(values))


def _real(fn: str, name: str, value: object) -> float:
    """``value`` as a float when it is a real number (bool excluded, as the kernel guards do).

    Raises:
        TensorTypeError: ``<fn>: <name> must be a real number; got '2' of type str ...``.
    """
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise TensorTypeError(
            f"{fn}: {name} must be a real number; got {_preview(value)} of type {type(value).__name__} "
            "(accepted: int, float or a numpy number; strings are not parsed and bools are refused)"
        )
    try:
        return float(value)
    except OverflowError as exc:
        raise TensorError(
            f"{fn}: {name} = {_preview(value)} does not fit a float64 (accepted: real numbers of "
            f"magnitude at most {np.finfo(np.float64).max:.7g})"
        ) from exc


def _axis(fn: str, name: str, value: object, ndim: int) -> int:
    """``value`` as an axis of a rank-``ndim`` input, normalised to ``[0, ndim)``; out-of-range
    axes are refused, never wrapped (:func:`~torchlean.backend.providers.reference.guards.axis_in_range`,
    the reference guards' rule and wording).

    Raises:
        TensorTypeError: ``value`` is not an integer (:func:`_int`).
        GuardError: ``<fn>: axis 5 is out of range for a rank-2 input (accepted: an integer in
            [-2, 1])``.
    """
    return axis_in_range(fn, name, _int(fn, name, value), ndim)


def _pair(a: Operand, b: Operand) -> tuple[Tensor, Tensor]:
    """Both operands as tensors; a non-tensor takes the other operand's dtype and device."""
    if isinstance(a, Tensor):
        return a, b if isinstance(b, Tensor) else _constant(b, a)
    if isinstance(b, Tensor):
        return _constant(a, b), b
    raise TensorError(
        f"at least one operand must be a Tensor (got {type(a).__name__} and {type(b).__name__})"
    )


def _require_tensor(fn: str, name: str, value: object) -> Tensor:
    """``value`` when it is a :class:`Tensor` (for functions that read its shape or device before
    dispatching).

    Raises:
        TensorTypeError: ``<fn>: <name> must be a torchlean Tensor; got <type> ...``.
    """
    if isinstance(value, Tensor):
        return value
    raise TensorTypeError(
        f"{fn}: {name} must be a torchlean Tensor; got {operand_type(value)} (convert data with "
        "torchlean.tensor(...))"
    )


def _array_like(fn: str, name: str, value: object) -> npt.NDArray[Any]:
    """``np.asarray(value)`` for an array-like mask, index or target operand of ``fn``.

    Raises:
        TensorError: ragged nested sequences (``<fn>: <name> [[0], [0, 1]] is not a rectangular
            array: ...``), which numpy refuses with a bare ``ValueError``.
    """
    try:
        return np.asarray(value)
    except ValueError as exc:
        raise TensorError(
            f"{fn}: {name} {_preview(value)} is not a rectangular array: {exc} (accepted: a Tensor, "
            "a numpy array or nested lists of one rectangular shape)"
        ) from exc


def _mask(fn: str, value: Tensor | npt.ArrayLike, like: Tensor) -> Tensor:
    """A mask operand of ``fn`` as a tensor on ``like``'s device, never cast: the kernel guard
    refuses a non-boolean mask.

    Raises:
        GuardTypeError: ``None`` (no mask; ``hard_masked_softmax`` has no maskless form).
        TensorError: ragged nested sequences (:func:`_array_like`).
    """
    if isinstance(value, Tensor):
        return value
    if value is None:
        raise GuardTypeError(
            f"{fn}: mask is None; accepted: a boolean mask broadcastable to x's shape (True = "
            "allowed); for a softmax without a mask use softmax(x, axis)"
        )
    return _on_device_of(np.array(_array_like(fn, "mask", value), copy=True), like)


def _index(value: Tensor | npt.ArrayLike, like: Tensor, op: str, axis: object) -> Tensor:
    """An index operand of ``op`` along ``axis`` of ``like`` as a tensor on ``like``'s device;
    integer data becomes int64 (tensors hold only int64 integers), anything else is left for the
    kernel guard to refuse.

    Raises:
        GuardError: a uint64 value above ``2**63 - 1``, which the int64 cast would wrap to a
            negative number: refused here with the guard's out-of-range message naming the value
            itself (``gather: index value 9223372036854775808 is out of range for extent 3 along
            axis 1 (accepted: 0 <= index < 3)``), after ``axis`` is checked as the guard checks it.
        TensorError: ragged nested sequences (:func:`_array_like`).
    """
    if isinstance(value, Tensor):
        return value
    raw = _array_like(op, "index", value)
    if raw.dtype == np.uint64 and raw.size and int(raw.max()) > np.iinfo(np.int64).max:
        ax = _axis(op, "axis", axis, like.ndim)
        raise index_out_of_range(op, int(raw.max()), like.shape[ax], ax)
    if raw.dtype.kind in "iu":
        return _on_device_of(raw.astype(np.int64), like)
    return _on_device_of(np.array(raw, copy=True), like)


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _axes(fn: str, axis: Axes) -> int | tuple[int, ...] | None:
    if axis is None:
        return None
    if is_int(axis):
        return int(axis)
    zero_d = isinstance(axis, np.ndarray) and axis.ndim == 0  # iterable to Python, not to iterate
    if isinstance(axis, Iterable) and not isinstance(axis, str | bytes) and not zero_d:
        return _ints(fn, "axis", axis)
    return _int(fn, "axis", axis)


# ------------------------------------------------------------------------------------- pointwise


def add(a: Operand, b: Operand) -> Tensor:
    """``a + b`` elementwise with broadcasting (``torch.add`` without ``alpha``); records ``add``
    (its VJP left-folds the broadcast axes back to each operand's shape).

    Returns the broadcast shape of ``a`` and ``b`` (numpy/PyTorch rules) in their one dtype,
    float32 or float64. One operand may be a Python number or numeric array data, which becomes
    a constant of the tensor operand's dtype (the module's operand rule). Unlike ``torch.add``,
    which promotes float32 + float64 to float64 and computes on int64 and bool tensors, the
    kernels never promote: tensors of two dtypes are refused (convert one with
    ``t.to(dtype=...)``), and so are int64 and bool tensors. ``sub``, ``mul``, ``div``,
    ``maximum`` and ``minimum`` share these rules.

    Raises:
        GuardError: an int64 or bool operand; operands of different dtypes (``add: operand b
            has dtype float64 but operand a has dtype float32; torchlean kernels do not promote
            dtypes ...``); shapes that do not broadcast.
        TensorTypeError: a constant operand that is not numeric (a string, ``None``, a complex
            number) or a torch tensor that requires grad.
        TensorError: neither operand is a Tensor (two numbers or arrays: convert one with
            ``torchlean.tensor``); a Python integer that does not fit the tensor's dtype
            (``x + 10**400``); ragged nested lists.
        DeviceError: tensors on different devices.
    """
    x, y = _pair(a, b)
    return run_op(BackendOp.ADD, (x, y), {})


def sub(a: Operand, b: Operand) -> Tensor:
    """``a - b`` elementwise with broadcasting (``torch.sub`` without ``alpha``); records ``sub``.
    Returns the broadcast shape in the operands' one dtype (float32 or float64); operands and
    dtypes as :func:`add`: no promotion, unlike torch.

    Raises:
        GuardError: an int64 or bool operand; operands of different dtypes (float32 and float64
            are not promoted); shapes that do not broadcast.
        TensorTypeError, TensorError, DeviceError: as :func:`add` (a non-numeric constant;
            no Tensor operand or an integer that does not fit; devices that differ).
    """
    x, y = _pair(a, b)
    return run_op(BackendOp.SUB, (x, y), {})


def scale(x: Tensor, factor: float) -> Tensor:
    """``x * factor`` for a real number ``factor`` (rounded to x's dtype); records ``scale``.

    A finite factor beyond the dtype's range rounds to ``±inf`` and a tiny one to 0 (float32
    ``1e300``, ``1e-50``), as torch rounds a Python number to the tensor's dtype.

    Raises:
        GuardError: a factor that is not finite (``inf``, ``nan``; :func:`mul` handles those); an
            int64 or bool ``x``.
        TensorTypeError: a factor that is not a real number (a string, a bool); ``x`` is not a
            Tensor.
    """
    return run_op(BackendOp.SCALE, (x,), {"factor": _real("scale", "factor", factor)})


def mul(a: Operand, b: Operand) -> Tensor:
    """Elementwise ``a * b`` with broadcasting (``torch.mul``); records ``mul``, or ``scale`` when
    one operand is a finite Python number. A non-finite number (``inf``, ``nan``), which ``scale``
    does not accept, becomes a constant tensor of the other operand's dtype and device and records
    ``mul``, so ``x * inf`` is ``[nan, inf]`` for ``x = [0, 1]`` as in torch.

    Raises:
        TensorError: a Python integer that does not fit the tensor's dtype (``x * 10**400``).
        GuardError, TensorTypeError, DeviceError: as :func:`add` (no dtype promotion; an int64
            or bool tensor is refused by ``scale`` when the other operand is a number).
    """
    if isinstance(a, Tensor) and _is_number(b):
        factor = _factor(b, a)
        if math.isfinite(factor):
            return scale(a, factor)
    elif isinstance(b, Tensor) and _is_number(a):
        factor = _factor(a, b)
        if math.isfinite(factor):
            return scale(b, factor)
    x, y = _pair(a, b)
    return run_op(BackendOp.MUL, (x, y), {})


def inv(x: Tensor) -> Tensor:
    """``1 / x`` elementwise (``torch.reciprocal``; ``±inf`` at ``±0``); records ``inv``. Returns
    x's shape and dtype (float32 or float64).

    Raises:
        GuardError: an int64 or bool ``x`` (``torch.reciprocal`` computes those in float32).
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return run_op(BackendOp.INV, (x,), {})


def div(a: Operand, b: Operand) -> Tensor:
    """``a / b`` with broadcasting; records ``inv`` then ``mul`` (the catalog has no division), or
    ``scale`` by ``1/b`` when ``b`` is a Python number whose value is finite and whose reciprocal
    is normal in ``a``'s dtype. Results may differ from ``torch.div`` in the last bit
    (``a * (1/b)`` rounds twice). Division by any other number (0, ``±inf``, ``nan``, or one that
    overflows the dtype) records ``inv`` of the constant then ``mul`` (``±inf``, or ``nan`` for
    ``0/0``, ``x/nan`` and ``inf/inf``, as ``torch.div``). When some nonzero divisor is so small
    that its reciprocal overflows the dtype (a float32 below about 2.9e-39, a float64 below about
    5.6e-309: the subnormals), or so large that its reciprocal is subnormal and keeps fewer bits
    (a float32 above ``2**126``, about 8.5e37; a float64 above ``2**1022``, about 4.5e307: up to 4
    ulp off otherwise, ``3e38 / 3e38`` was ``0.99999994``), the quotient is
    ``(a * s) * inv(b * s)`` with ``s`` a constant power of two at those divisors (``2**96`` or
    ``2**-96`` for float32, ``2**768`` or ``2**-768`` for float64) and 1 elsewhere, so it stays
    finite where torch's is (``1e-39 / 2e-39 == 0.5``, ``0 / b == 0``) and within 2 ulp of it; the
    products by ``s`` are exact except where the quotient overflows or underflows to 0 either way
    (``a * 2**96`` overflows only for ``|a| >= 2**32``, whose quotient by such a divisor is at
    least ``2**160``; ``a * 2**-96`` rounds only for ``|a| < 2**-30``, whose quotient is below
    ``2**-156``), and ``mul`` is recorded three times. Gradients are those of the recorded ops, as
    for ``x * torch.reciprocal(b)`` in torch: the divisor's (``-a/b**2``) is
    ``-(g*a*s) * r**2 * s`` with ``r = 1/(b*s)`` (``inv``'s VJP, then ``mul``'s; ``s = 1`` at
    ordinary divisors). Rescaled divisors keep ``r**2`` normal (``|b*s|`` between ``2**-53`` and
    ``2**32`` in float32, ``2**-306`` and ``2**256`` in float64). At ordinary divisors, where
    ``r**2`` underflows (``|b|`` above about ``2**75`` in float32, ``2**537`` in float64; it loses
    bits from ``2**63``, ``2**511``) the gradient is ``±0``, or NaN where ``g*a`` is infinite, and
    where ``r**2`` overflows (``|b|`` at or below ``2**-64``, ``2**-512``) it is ``±inf``, or NaN
    where ``g*a`` is 0; at any divisor, a cotangent so extreme that ``g*a*s`` itself under- or
    overflows does the same (float32 ``|g*a|`` below about ``2**-246`` at a subnormal divisor:
    ``-0.0``; it loses bits from ``2**-222``). ``torch.div``'s own gradient may be finite and
    nonzero there (float32 ``1e38 / 1e23``: ``-0.0`` here, ``-1e-8`` from torch).
    Checking the divisors reads them (for CUDA storage, a mask copied to the host per division).

    Raises:
        TensorError: a Python integer that does not fit the tensor's dtype (``x / 10**400``).
        GuardError, TensorTypeError, DeviceError: as :func:`add` (no dtype promotion).
    """
    if isinstance(a, Tensor) and _is_number(b):
        divisor = _factor(b, a)
        if divisor != 0 and _finite_in(divisor, a) and _normal_in(1.0 / divisor, a):
            return scale(a, 1.0 / divisor)
    x, y = _pair(a, b)
    rescale = _reciprocal_rescale(y)
    if rescale is None:
        return mul(x, inv(y))
    return mul(mul(x, rescale), inv(mul(y, rescale)))


def _reciprocal_rescale(y: Tensor) -> Tensor | None:
    """For :func:`div`: ``None`` when every entry of ``y`` has a reciprocal that is normal, 0 or
    infinite in its dtype (always for integer dtypes), else a constant of ``y``'s shape, dtype and
    device holding ``s = 2**(3 * maxexp // 4)`` (``2**96`` for float32, ``2**768`` for float64)
    where the reciprocal overflows (nonzero divisors below ``1 / finfo.max``), ``1 / s`` where it
    is subnormal (finite divisors above ``1 / finfo.tiny``) and 1 elsewhere: multiplying by a power
    of two is exact and brings each such divisor where its reciprocal and that reciprocal's square
    (the divisor gradient's factor) are normal. The exponent meets both sides' bounds: float32
    needs 86..102 (from 86 the squares stay finite; above 102, ``a * 2**-k`` would round where
    the quotient stays nonzero), float64 563..969."""
    overflows = storage.reciprocal_overflows(y._data)
    subnormal = storage.reciprocal_subnormal(y._data)
    if not (overflows.any() or subnormal.any()):
        return None
    factor = 2.0 ** (3 * np.finfo(y.dtype).maxexp // 4)
    return _constant(np.where(overflows, factor, np.where(subnormal, 1 / factor, 1.0)).astype(y.dtype), y)


def _finite_in(value: float, like: Tensor) -> bool:
    """Whether ``value`` stays finite when rounded to ``like``'s dtype; True for a dtype that is
    not floating (the op refuses it, naming the accepted dtypes)."""
    if like.dtype.kind != "f":
        return True
    with np.errstate(over="ignore"):
        return bool(np.isfinite(like.dtype.type(value)))


def _normal_in(value: float, like: Tensor) -> bool:
    """Whether ``value`` is finite and normal when rounded to ``like``'s dtype: the scalar path of
    :func:`div` multiplies by a reciprocal that keeps every significant bit (the reciprocal of a
    divisor finite in the dtype is at least ``1 / finfo.max``, never 0); True for a dtype that is
    not floating (``scale`` refuses it, naming the accepted dtypes)."""
    if like.dtype.kind != "f":
        return True
    with np.errstate(over="ignore", under="ignore"):
        rounded = like.dtype.type(value)
    return bool(np.isfinite(rounded)) and bool(np.abs(rounded) >= np.finfo(like.dtype).tiny)


def neg(x: Tensor) -> Tensor:
    """``-x`` (``torch.neg``); records ``scale`` by -1 (exact; ``-0.0`` for ``0.0``). Returns x's
    shape and dtype (float32 or float64).

    Raises:
        GuardError: an int64 ``x`` (``torch.neg`` keeps int64) or a bool one (torch refuses it
            too); the message names ``scale``, the recorded op.
        TensorTypeError: ``x`` is not a Tensor (a number, a numpy array or torch tensor: convert
            with ``torchlean.tensor``).
    """
    return scale(x, -1.0)


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
    gradient loses the ``Phi(x)`` term), this keeps the tiny negative values. Records ``gelu``.
    Returns x's shape and dtype (float32 or float64).

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
    lo: float | None = None,
    hi: float | None = None,
    *,
    min: float | None = None,  # torch.clamp's keyword names
    max: float | None = None,
) -> Tensor:
    """``min(max(x, lo), hi)`` (``torch.clamp``; a missing bound is infinite); records ``clamp``.
    torch's keywords ``min=``/``max=`` name the same bounds (``clamp(x, min=0.0)`` ports as
    written, as ``Tensor.clamp`` takes them).

    Unlike ``torch.clamp``, which returns ``hi`` everywhere when ``lo > hi`` and NaN for a NaN
    bound, the ``clamp`` guard refuses both: the bounds must satisfy ``lo <= hi``.

    Raises:
        GuardError: ``lo > hi`` (naming both) or a NaN bound (naming it).
        TensorTypeError: a bound that is not a real number (a string or a bool; ``None`` is a
            missing bound); a bound given twice (``lo`` and ``min``, ``hi`` and ``max``).
    """
    for name, value, alias, torch_value in (("lo", lo, "min", min), ("hi", hi, "max", max)):
        if value is not None and torch_value is not None:
            raise TensorTypeError(
                f"clamp: {name}={_preview(value)} and {alias}={_preview(torch_value)} are one bound "
                f"given twice (accepted: {name}, or torch's keyword {alias}=)"
            )
    lo = min if lo is None else lo
    hi = max if hi is None else hi
    low = -math.inf if lo is None else _real("clamp", "lo", lo)
    high = math.inf if hi is None else _real("clamp", "hi", hi)
    return run_op(BackendOp.CLAMP, (x,), {"lo": low, "hi": high})


def maximum(a: Operand, b: Operand) -> Tensor:
    """Elementwise maximum with broadcasting (``torch.maximum``); records ``max``. NaN propagates
    and a tie sends half the gradient to each operand, as in torch. Returns the broadcast shape in
    the operands' one dtype (float32 or float64); operands and dtypes as :func:`add`: no
    promotion, unlike torch. The guard's messages name the recorded op ``max``.

    Raises:
        GuardError: an int64 or bool operand; operands of different dtypes (float32 and float64
            are not promoted); shapes that do not broadcast.
        TensorTypeError, TensorError, DeviceError: as :func:`add`.
    """
    x, y = _pair(a, b)
    return run_op(BackendOp.MAX, (x, y), {})


def minimum(a: Operand, b: Operand) -> Tensor:
    """Elementwise minimum with broadcasting (``torch.minimum``); records ``min``. NaN, ties,
    shapes, dtypes (no promotion) and errors as :func:`maximum`; the guard's messages name
    ``min``.

    Raises:
        GuardError: an int64 or bool operand; operands of different dtypes; shapes that do not
            broadcast.
        TensorTypeError, TensorError, DeviceError: as :func:`add`.
    """
    x, y = _pair(a, b)
    return run_op(BackendOp.MIN, (x, y), {})


def safe_log(x: Tensor, eps: float = 1e-12) -> Tensor:
    """``log(softplus(x) + eps)`` (not ``log(max(x, eps))`` nor ``log(x + eps)``: ``safe_log(1.0)``
    is 0.2725, the log of ``softplus(1.0)`` = 1.3133), computed with ``eps`` rounded to x's dtype: finite for
    every finite x whose ``softplus(x) + eps`` stays below the dtype's largest value (the IR's
    ``safe_log``); records ``safe_log``. For ``torch.log(torch.clamp(x, min=eps))``, write
    ``log(clamp(x, eps))``.

    Raises:
        GuardError: ``eps`` not finite and positive, or one that rounds to 0 or ``inf`` in x's
            dtype (``1e-50`` in float32), naming eps, the dtype and the accepted range; an int64
            or bool ``x``.
        TensorTypeError: ``eps`` is not a real number; ``x`` is not a Tensor (a number, a numpy
            array or a torch tensor: convert with ``torchlean.tensor``).
    """
    return run_op(BackendOp.SAFE_LOG, (x,), {"eps": _real("safe_log", "eps", eps)})


# ------------------------------------------------------------------------------ normalisations


def softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Max-shifted softmax along ``axis`` (``torch.softmax``); records ``softmax``. Returns x's
    shape; a rank-0 ``x`` gives 1, as in torch.

    Raises:
        GuardError: ``axis`` out of range for x's rank (never wrapped).
        TensorTypeError: a non-integer ``axis``.
    """
    return run_op(BackendOp.SOFTMAX, (x,), {"axis": _int("softmax", "axis", axis)})


def log_softmax(x: Tensor, axis: int = -1) -> Tensor:
    """Max-shifted log-softmax along ``axis`` (``torch.log_softmax``); records ``log_softmax``.
    Returns x's shape; errors as :func:`softmax`."""
    return run_op(BackendOp.LOG_SOFTMAX, (x,), {"axis": _int("log_softmax", "axis", axis)})


def logsumexp(x: Tensor, axis: Axes, keepdims: bool = False) -> Tensor:
    """``log(sum(exp(x)))`` over ``axis``, max-shifted (``torch.logsumexp``: ``max + log(sum(exp(x
    - max)))``); ``axis`` is None (every axis), an integer or a non-empty sequence of distinct
    integers, as in :func:`reduce_sum` (torch requires it too; a rank-0 ``x`` takes 0 or -1 and
    gives its value). Returns x's shape without the reduced axes (extent 1 there when
    ``keepdims``), in x's dtype. The gradient is ``softmax(x)`` over the reduced axes.

    The catalog has no logsumexp op: it is composed of accepted kernels, with torch's values.
    The reduced axes are moved last (``permute``, when they are not) and merged (``reshape``);
    along them ``x - log_softmax(x)`` is the logsumexp at every position, and at the maximum it
    is rounded as torch's formula, ``max - (-log(sum(exp(x - max))))`` (the sum a left fold under
    ``checked_cpu``), so a ``gather`` takes it from the position of the row's (first) maximum,
    found from the values (an index, which carries no gradient). A row whose maximum is not
    finite takes that value itself from ``x`` (the same ``gather`` over ``concat [x -
    log_softmax(x), x]``): ``-inf`` for a row of ``-inf``, ``inf`` for a row holding ``inf``, NaN
    for a row holding NaN, as torch. The gradient of such a row is NaN throughout (torch's,
    ``exp(x - result)``, is NaN throughout a row of ``-inf`` or one holding NaN, but in a row
    holding ``inf`` only at its ``inf`` entries, 0 elsewhere). Over an empty axis the result is
    ``-inf`` (``log`` of the empty ``reduce_sum`` of ``exp``), with a zero-size gradient.

    Records ``permute`` (when needed), ``reshape``, ``log_softmax``, ``sub``, ``concat``,
    ``gather`` and ``reshape`` (``exp``, ``reduce_sum``, ``log`` over an empty axis);
    ``result.produced_by`` is the last ``reshape``'s kernel.

    Raises:
        GuardError: an int64 or bool ``x``; an axis out of range (never wrapped), repeated, or
            ``axis=()``.
        TensorTypeError: ``x`` is not a Tensor; a non-integer axis; a ``keepdims`` that is not a
            bool.
    """
    x = _require_tensor("logsumexp", "x", x)
    keep = _flag("logsumexp: keepdims", keepdims)
    if x.dtype not in (np.float32, np.float64):
        raise GuardError(f"logsumexp: input x has dtype {x.dtype}; accepted: float32 or float64")
    shape = x.shape
    axes = reduction_axes("logsumexp", x.ndim, _axes("logsumexp", axis))
    kept = [a for a in range(x.ndim) if a not in axes]
    if axes and list(axes) != list(range(len(kept), x.ndim)):
        x = permute(x, (*kept, *axes))
    extent = math.prod(x.shape[len(kept):]) if axes else 1
    rows = reshape(x, (*x.shape[: len(kept)], extent))
    if extent == 0:
        result = log(reduce_sum(exp(rows), -1, keepdims=True))
    else:
        values = rows.numpy()
        at = np.argmax(values, axis=-1, keepdims=True)
        peak = np.take_along_axis(values, at, axis=-1)
        index = np.where(np.isfinite(peak), at, extent + at).astype(np.int64)
        both = concat([sub(rows, log_softmax(rows, -1)), rows], -1)
        result = gather(both, _on_device_of(index, rows), -1)
    return reshape(result, reduced_shape(shape, axes, keep))


def hard_masked_softmax(x: Tensor, mask: Tensor | npt.ArrayLike, axis: int = -1) -> Tensor:
    """Softmax over the entries ``mask`` allows (True), exactly 0 elsewhere; a fully blocked row is
    all zeros (anchor-runtime.md §5.2). ``mask`` is boolean and broadcasts to ``x``; records
    ``hard_masked_softmax``. Returns x's shape and dtype.

    Raises:
        GuardTypeError: a non-boolean mask (a float 0/1 array is an additive bias, not a mask),
            or ``None`` (``softmax`` is the maskless form; the specification's
            ``hard_masked_softmax`` takes ``None`` as that).
        GuardError: a mask that does not broadcast to x's shape; ``axis`` out of range.
        TensorTypeError: ``x`` is not a Tensor; a non-integer ``axis``.
    """
    x = _require_tensor("hard_masked_softmax", "x", x)
    params = {"axis": _int("hard_masked_softmax", "axis", axis)}
    return run_op(BackendOp.HARD_MASKED_SOFTMAX, (x, _mask("hard_masked_softmax", mask, x)), params)


# ---------------------------------------------------------------------------------- reductions


def reduce_sum(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Left-fold sum over ``axis`` (None: all axes) (``torch.sum``); records ``reduce_sum``. As in
    torch, a rank-0 ``x`` takes ``axis`` 0 or -1 and gives its value, shape ``()``.

    ``axis`` is None, an integer or a non-empty sequence of distinct integers in ``[-ndim, ndim)``.
    Returns x's shape without the reduced axes (kept with extent 1 when ``keepdims``); ``()`` for
    ``axis=None``. The sum over an empty axis is 0.

    Raises:
        GuardError: an axis out of range (never wrapped), a repeated axis, or ``axis=()`` (numpy
            reduces nothing there, torch everything).
        TensorTypeError: a non-integer axis; a ``keepdims`` that is not a bool.
    """
    params = {"axis": _axes("reduce_sum", axis), "keepdims": _flag("reduce_sum: keepdims", keepdims)}
    return run_op(BackendOp.REDUCE_SUM, (x,), params)


def reduce_mean(x: Tensor, axis: Axes = None, keepdims: bool = False) -> Tensor:
    """Left-fold mean over ``axis`` (None: all axes) (``torch.mean``); records ``reduce_mean``.
    A rank-0 ``x`` takes ``axis`` 0 or -1; ``axis``, ``keepdims``, the result's shape and the
    errors are as in :func:`reduce_sum`. The mean over an empty axis is NaN, as in torch."""
    params = {"axis": _axes("reduce_mean", axis), "keepdims": _flag("reduce_mean: keepdims", keepdims)}
    return run_op(BackendOp.REDUCE_MEAN, (x,), params)


# --------------------------------------------------------------------------------------- views


def reshape(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Row-major reshape (one ``-1`` inferred) (``torch.reshape``); records ``reshape``.

    Raises:
        GuardError: an element count that differs from x's, a negative extent other than one
            ``-1``, or a ``-1`` beside a 0 extent (torch refuses it too).
        TensorTypeError: ``shape`` is not a sequence of integers (a bare int included).
    """
    return run_op(BackendOp.RESHAPE, (x,), {"shape": _ints("reshape", "shape", shape)})


def permute(x: Tensor, perm: Sequence[int]) -> Tensor:
    """Output axis ``i`` is input axis ``perm[i]`` (``torch.permute``); records ``permute``.

    Raises:
        GuardError: ``perm`` is not a permutation of x's axes (entries in ``[-ndim, ndim)``).
        TensorTypeError: ``perm`` is not a sequence of integers.
    """
    return run_op(BackendOp.PERMUTE, (x,), {"perm": _ints("permute", "perm", perm)})


def transpose(x: Tensor, axis0: int, axis1: int) -> Tensor:
    """Swap two axes (``torch.transpose``); each axis in ``[-ndim, ndim)``; records ``permute``.
    A rank-0 input takes axes in ``[-1, 0]``, as in torch (``transpose(0, 0)``, ``transpose(-1,
    0)``): the result is a new rank-0 tensor of the same value, its gradient the incoming one.

    Raises:
        GuardError: an axis out of range (``transpose: axis1 5 is out of range for a rank-2 input
            (accepted: an integer in [-2, 1])``; for a rank-0 input, outside ``[-1, 0]``), never
            wrapped.
        TensorTypeError: a non-integer axis.
    """
    x = _require_tensor("transpose", "x", x)
    if x.ndim == 0:  # torch's dim range of a 0-d tensor is [-1, 0], as unsqueeze's and sum's here
        for name, value in (("axis0", axis0), ("axis1", axis1)):
            if not -1 <= _int("transpose", name, value) <= 0:
                raise GuardError(
                    f"transpose: {name} {value} is out of range for a rank-0 input (accepted: an "
                    "integer in [-1, 0])"
                )
        return permute(x, [])
    perm = list(range(x.ndim))
    a = _axis("transpose", "axis0", axis0, x.ndim)
    b = _axis("transpose", "axis1", axis1, x.ndim)
    perm[a], perm[b] = perm[b], perm[a]
    return permute(x, perm)


def broadcast_to(x: Tensor, shape: Sequence[int]) -> Tensor:
    """Materialised numpy-rule broadcast (``torch.broadcast_to``); records ``broadcast``.

    Raises:
        GuardError: x does not broadcast to ``shape`` (fewer axes than x, or a trailing extent
            that is neither x's nor where x has 1), or a negative extent.
        TensorTypeError: ``shape`` is not a sequence of integers.
    """
    return run_op(BackendOp.BROADCAST, (x,), {"shape": _ints("broadcast_to", "shape", shape)})


def concat(xs: Sequence[Tensor], axis: int = 0) -> Tensor:
    """Concatenate the tensors ``xs`` (a list or tuple) along ``axis`` (``torch.cat``); records
    ``concat``.

    Raises:
        TensorTypeError: ``xs`` is a single Tensor (it is not iterated over its rows: ``torch.cat``
            refuses a tensor too; write ``concat([x])``), a string or not iterable (``1.5``,
            ``None``); an entry that is not a Tensor (the operand rule); a non-integer ``axis``.
        GuardError: an empty ``xs``; inputs whose ranks differ or whose extents differ outside
            ``axis``; ``axis`` out of range (never wrapped; every axis of rank-0 inputs).
    """
    if isinstance(xs, Tensor | str | bytes) or not isinstance(xs, Iterable):
        what = "a Tensor" if isinstance(xs, Tensor) else f"{_preview(xs)} of type {type(xs).__name__}"
        raise TensorTypeError(
            f"concat: xs must be a sequence of Tensors; got {what} (accepted: a list or tuple of "
            "Tensors, as torch.cat; write concat([x]) for one tensor)"
        )
    return run_op(BackendOp.CONCAT, tuple(xs), {"axis": _int("concat", "axis", axis)})


def slice(
    x: Tensor, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int] | None = None
) -> Tensor:
    """``x[start0:stop0:step0, ...]`` with one bound per axis, ``0 <= start <= stop <= extent``,
    ``step >= 1``; records ``slice``. ``steps`` defaults to 1 on every axis. Bounds are absolute
    (a negative start is refused, not counted from the end, unlike Python slicing).

    Raises:
        GuardError: ``starts``/``stops``/``steps`` not of length ``x.ndim``, a bound outside
            ``0 <= start <= stop <= extent``, or a step below 1.
        TensorTypeError: a bound or step that is not an integer.
    """
    params: dict[str, Any] = {
        "starts": _ints("slice", "starts", starts),
        "stops": _ints("slice", "stops", stops),
        "steps": None if steps is None else _ints("slice", "steps", steps),
    }
    return run_op(BackendOp.SLICE, (x,), params)


def _index_tuple(index: Any) -> tuple[Any, ...]:
    return index if isinstance(index, tuple) else (index,)


def _check_slice(item: builtins.slice, index: Any) -> None:
    """Refuse a slice of ``index`` that torchlean does not take, before Python's
    ``slice.indices`` would raise its own ``TypeError``/``ValueError``: bounds and step must be
    Python or numpy integers or ``None`` (floats and bools are refused rather than truncated), and
    the step positive (torch refuses a negative or zero step too, with a ``ValueError``). Shared
    by :func:`getitem` and item assignment (:meth:`Tensor.__setitem__`).

    Raises:
        TensorTypeError: a bound or step that is not an integer or None (``slice bounds must be
            integers or None; got 0.0 of type float as the start of slice(0.0, 2.0, None) ...``).
        TensorError: a negative or zero step (``negative or zero slice steps are not supported``).
    """
    start, stop, step = item.start, item.stop, item.step
    if (
        (start is None or type(start) is int)  # the common x[a:b]: checked without the loop below
        and (stop is None or type(stop) is int)
        and (step is None or (type(step) is int and step >= 1))
    ):
        return
    for part, value in (("start", start), ("stop", stop), ("step", step)):
        if value is not None and not is_builtin_or_numpy_int(value):
            raise TensorTypeError(
                f"slice bounds must be integers or None; got {shown(value)} of type "
                f"{type(value).__name__} as the {part} of {item!r} (index {index!r}; accepted: Python "
                "or numpy integers, None)"
            )
    if item.step is not None and item.step < 1:
        raise TensorError(
            f"negative or zero slice steps are not supported (index {index!r}; accepted: a step of "
            "at least 1, or None)"
        )


def getitem(x: Tensor, index: Any) -> Tensor:
    """Basic indexing ``x[index]``: integers, slices with positive steps, ``...`` and ``None``.

    Records ``slice`` (also when the index selects everything: ``x[:]``, ``x[...]`` and
    ``x[0:n]`` are new tensors too), then ``reshape`` when an integer drops an axis or ``None``
    inserts one; on a rank-0 ``x`` (no axis to slice) ``reshape`` alone. Negative steps and
    advanced (array) indexing are refused (use :func:`gather`).

    Unlike torch, where basic indexing returns a view, the result is always new storage (torchlean
    has no views; see :mod:`torchlean.tensor`): an in-place write through ``x[index]`` never
    changes ``x``, and one into ``x`` never changes an earlier ``x[index]``. Gradients flow back
    to ``x`` through the recorded ops.

    Raises:
        TensorTypeError: ``x`` is not a Tensor; a slice bound or step that is not an integer or
            None (a float, a bool: :func:`_check_slice`).
        TensorError: an unsupported index, an integer out of range, a negative or zero slice step.
    """
    if not isinstance(x, Tensor):
        raise TensorTypeError(
            f"getitem: input 0 must be a torchlean Tensor; got {operand_type(x)} (accepted: a "
            "torchlean Tensor; convert data with torchlean.tensor(...))"
        )
    items = _index_tuple(index)
    if builtins.sum(1 for i in items if i is Ellipsis) > 1:
        raise TensorError("an index can only have a single ellipsis ('...')")
    consuming = builtins.sum(1 for i in items if i is not None and i is not Ellipsis)
    if consuming > x.ndim:
        raise TensorError(f"too many indices for a tensor of rank {x.ndim}: {index!r}")
    expanded: list[Any] = []
    for item in items:
        if item is Ellipsis:
            expanded.extend([builtins.slice(None)] * (x.ndim - consuming))
        else:
            expanded.append(item)
    expanded.extend([builtins.slice(None)] * (x.ndim - builtins.sum(1 for i in expanded if i is not None)))
    starts: list[int] = []
    stops: list[int] = []
    steps: list[int] = []
    final_shape: list[int] = []
    axis = 0
    for item in expanded:
        if item is None:
            final_shape.append(1)
            continue
        extent = x.shape[axis]
        if isinstance(item, builtins.slice):
            _check_slice(item, index)
            start, stop, step = item.indices(extent)
            stop = builtins.max(stop, start)
            starts.append(start)
            stops.append(stop)
            steps.append(step)
            final_shape.append(len(range(start, stop, step)))
        elif is_builtin_or_numpy_int(item):
            position = int(item)
            if not -extent <= position < extent:
                raise TensorError(f"index {position} is out of range for axis {axis} with extent {extent}")
            position %= extent
            starts.append(position)
            stops.append(position + 1)
            steps.append(1)
        else:
            raise TensorError(
                f"unsupported index {item!r} of type {type(item).__name__}: only integers, slices, "
                "'...' and None are supported (use torchlean.gather for index arrays)"
            )
        axis += 1
    if x.ndim == 0:  # no axis to slice: ``reshape`` makes the new tensor (with None's axes)
        return reshape(x, final_shape)
    result = slice(x, starts, stops, steps)
    if tuple(final_shape) != result.shape:
        result = reshape(result, final_shape)
    return result


# The functional gather/scatter_add take the axis last; torch's function and method take it first.
_AXIS_LAST_ORDERS = {
    "gather": ("(x, index, axis)", "torch.gather(x, dim, index)", "t.gather(dim, index)"),
    "scatter_add": (
        "(base, index, src, axis)",
        "torch.scatter_add(base, dim, index, src)",
        "t.scatter_add(dim, index, src)",
    ),
}


def _axis_last(fn: str, axis: object, index: object) -> int:
    """The ``axis`` of ``gather``/``scatter_add`` (``fn``), whose functional forms take it last.

    Raises:
        TensorTypeError: ``axis`` is not an integer (:func:`_int`'s message); when it is array data
            (a Tensor, an array, a list) and ``index`` is an integer, as in a call written in
            torch's order, the message adds both orders (``...; index is the integer 1 and axis
            is array data: tl.gather takes (x, index, axis), axis last, unlike
            torch.gather(x, dim, index) and the method t.gather(dim, index)``).
    """
    try:
        return _int(fn, "axis", axis)
    except TensorTypeError as exc:
        arrayish = isinstance(axis, Tensor | np.ndarray | list | tuple) or _is_torch_tensor(axis)
        if not (arrayish and is_int(index)):
            raise
        ours, torch_order, method_order = _AXIS_LAST_ORDERS[fn]
        raise TensorTypeError(
            f"{exc}; index is the integer {int(index)} and axis is array data: tl.{fn} takes {ours}, "
            f"axis last, unlike {torch_order} and the method {method_order}"
        ) from None


def gather(x: Tensor, index: Tensor | npt.ArrayLike, axis: int) -> Tensor:
    """Values of ``x`` picked along ``axis`` by ``index`` (``torch.gather``), with the arguments in
    another order: **the axis comes last** here, ``gather(x, index, axis)``, where torch writes
    ``torch.gather(x, dim, index)`` and the method ``t.gather(dim, index)`` (torchlean's method
    keeps torch's order). ``index`` is int64 of x's rank; records ``gather``.

    ``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``; the result has the
    index's shape and x's dtype. ``index`` extents must not exceed x's on every axis but ``axis``.
    Integer index data (a numpy array or nested lists) becomes int64.

    Raises:
        GuardError: an index value outside ``[0, x.shape[axis])`` (negative values are not counted
            from the end, as in torch), an index of another rank or too large, a non-integer
            index dtype, or ``axis`` out of range.
        TensorTypeError: ``x`` is not a Tensor; a non-integer ``axis`` (for array data there and
            an integer ``index``, torch's order ``gather(x, dim, index)``, the message says so).
    """
    x = _require_tensor("gather", "x", x)
    params = {"axis": _axis_last("gather", axis, index)}
    return run_op(BackendOp.GATHER, (x, _index(index, x, "gather", axis)), params)


def scatter_add(base: Tensor, index: Tensor | npt.ArrayLike, src: Tensor, axis: int) -> Tensor:
    """``src`` added into a copy of ``base`` at ``index`` along ``axis`` (``torch.scatter_add``),
    with the arguments in another order: **the axis comes last** here, ``scatter_add(base, index,
    src, axis)``, where torch writes ``torch.scatter_add(base, dim, index, src)`` and the method
    ``t.scatter_add(dim, index, src)`` (torchlean's method keeps torch's order). Repeated indices
    accumulate in index order; records ``scatter_add``. Returns a new tensor of base's shape and
    dtype (``base`` is not written). ``index`` (int64, base's rank) has extents <= src's on every
    axis and <= base's on every axis but ``axis``; src has base's dtype.

    Raises:
        GuardError: an index value outside ``[0, base.shape[axis])``, shapes that do not fit,
            a src dtype other than base's, or ``axis`` out of range.
        TensorTypeError: ``base`` or ``src`` is not a Tensor; a non-integer ``axis`` (for array
            data there and an integer ``index``, torch's order ``scatter_add(base, dim, index,
            src)``, the message says so).
    """
    base = _require_tensor("scatter_add", "base", base)
    params = {"axis": _axis_last("scatter_add", axis, index)}
    return run_op(BackendOp.SCATTER_ADD, (base, _index(index, base, "scatter_add", axis), src), params)


# ---------------------------------------------------------------------------------- contractions


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``torch.matmul`` (1-D promotion, broadcast batch axes), left fold over the contracted axis;
    records ``matmul``. a ``(..., n, k)`` @ b ``(..., k, m)`` gives ``(broadcast(...), n, m)``; a
    1-D operand's promoted axis is dropped from the result (1-D @ 1-D is rank 0).

    Raises:
        GuardError: a rank-0 operand, contracted extents that differ, or batch axes that do not
            broadcast.
    """
    return run_op(BackendOp.MATMUL, (a, b), {})


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with x ``(..., in)``, weight ``(out, in)``, bias ``(out,)``
    (``torch.nn.functional.linear``); records ``linear``. Returns ``(..., out)``.

    Raises:
        GuardError: x of rank 0, a weight that is not ``(out, in)`` for x's ``in``, or a bias that
            is not ``(out,)``.
    """
    return run_op(BackendOp.LINEAR, (x, weight, bias), {})


# --------------------------------------------------------------------------------------- losses


def mse_loss(prediction: Tensor, target: Operand) -> Tensor:
    """Mean squared error over all elements, a rank-0 tensor (``torch.nn.functional.mse_loss``,
    reduction ``mean``); records ``mse_loss``.

    Tensor and array shapes must be equal (no broadcasting); a real number (Python or numpy
    scalar) on either side becomes a constant of the tensor's shape, dtype and device, as torch
    broadcasts a 0-d target (``mse_loss(x, 1.0)`` is ``mean((x - 1)**2)``).

    Raises:
        GuardError: shapes differ; TensorError: an integer that does not fit the tensor's dtype.
    """
    if isinstance(prediction, Tensor) and _is_real(target):
        return run_op(BackendOp.MSE_LOSS, (prediction, _filled(target, prediction)), {})
    if isinstance(target, Tensor) and _is_real(prediction):
        return run_op(BackendOp.MSE_LOSS, (_filled(prediction, target), target), {})
    x, y = _pair(prediction, target)
    return run_op(BackendOp.MSE_LOSS, (x, y), {})


def _is_real(value: object) -> bool:
    """A Python or numpy real number (bools excluded)."""
    return isinstance(value, numbers.Real) and not isinstance(value, bool | np.bool_)


def _filled(value: object, like: Tensor) -> Tensor:
    """The number ``value`` as a constant of ``like``'s shape, dtype and device."""
    if is_builtin_int(value):
        _check_int_fits(value, like.dtype)
    elif like.dtype == np.int64:  # numpy's cast would turn NaN, inf or 1e30 into -2**63
        _require_int64_fits(np.asarray(value))
    with np.errstate(over="ignore"):  # a float beyond float32's range rounds to +-inf, as in torch
        return _on_device_of(np.full(like.shape, value, dtype=like.dtype), like)


def _check_class_ids(raw: npt.NDArray[Any], classes: int, axis: int) -> None:
    """Refuse a class index of ``cross_entropy`` outside ``[0, classes)``, naming the value (the
    most negative one, else the largest) and the range, before anything is recorded.

    Raises:
        GuardError: ``cross_entropy: target value 3 is out of range for 3 classes along axis 1
            (accepted: class ids in [0, 3); torch's ignore_index=-100 is not supported)``.
    """
    outside = id_outside(raw, classes)
    if outside is not None:
        raise GuardError(
            f"cross_entropy: target value {outside} is out of range for {classes} "
            f"classes along axis {axis} (accepted: class ids in [0, {classes}); torch's "
            "ignore_index=-100 is not supported)"
        )


def _label_smoothing(value: object) -> float:
    """``cross_entropy``'s ``label_smoothing`` as a float in ``[0, 1]``.

    Raises:
        TensorTypeError: not a real number (:func:`_real`).
        TensorError: outside ``[0, 1]``, NaN, or beyond the float range (``10**400``).
    """
    try:
        smoothing = _real("cross_entropy", "label_smoothing", value)
    except TensorTypeError:
        raise
    except TensorError:  # beyond the float range: refused below with the accepted range
        smoothing = math.nan
    if not 0.0 <= smoothing <= 1.0:
        raise TensorError(
            f"cross_entropy: label_smoothing must be in [0, 1] (torch's documented range), got {shown(value)}"
        )
    return smoothing


def cross_entropy(
    logits: Tensor, target: Tensor | npt.ArrayLike, axis: int | None = None, *, label_smoothing: float = 0.0
) -> Tensor:
    """Mean cross-entropy of ``logits`` (classes along ``axis``) against ``target``
    (``torch.nn.functional.cross_entropy``, reduction ``mean``).

    ``axis`` defaults to torch's class axis: 1 for logits of rank >= 2 (``(N, C)``, ``(N, C, d1,
    ...)``), 0 for unbatched rank-1 logits ``(C,)``; pass it for classes elsewhere (``axis=-1``
    for ``(N, L, C)``). Until 2026-12-01 the default was the last axis, which differs from torch's
    for logits of rank 3 or more: code written against that default passes ``axis=-1``.

    ``target`` is either class indices (an integer tensor/array with the logits' shape minus the
    class axis, every value a class id in ``[0, C)``) or class probabilities (a float tensor of the
    logits' shape). Unlike torch, there is no ``ignore_index``: torch's default
    ``ignore_index=-100`` (skip that target) is not supported, so ``-100`` is refused like any
    other value outside ``[0, C)``.

    ``label_smoothing`` (in ``[0, 1]``, torch's argument) mixes the target with the uniform
    distribution over the ``C`` classes as torch does: for indices, ``(1 - s) * nll + (s / C) *
    mean(-sum_c log_softmax)`` (torch's ``cross_entropy_loss_label_smoothing``); for
    probabilities, the target ``p * (1 - s) + s / C`` (computed in the logits' dtype).

    Records ``log_softmax``, ``gather``, ``reduce_mean``, ``scale`` for indices (the indices are
    given the class axis by a numpy reshape of the index data, which carries no gradient), and
    ``log_softmax``, ``mul``, ``reduce_sum``, ``reduce_mean``, ``scale`` for probabilities; with
    smoothing, indices add ``reduce_sum``, ``reduce_mean``, ``scale`` and ``add`` (a probability
    Tensor target adds ``scale`` and ``add``). Returns a rank-0 tensor in the logits' dtype.

    Raises:
        GuardError: ``axis`` out of range for the logits' rank (never wrapped), as ``softmax``;
            a class index outside ``[0, C)`` (``cross_entropy: target value -100 is out of range
            for 3 classes along axis 1 (accepted: class ids in [0, 3); ...)``).
            A probability target Tensor of another float dtype than the logits (numpy
            probabilities are cast to the logits' dtype).
        TensorError: 0-d logits; a target whose shape or dtype fits neither form, or ragged
            nested lists; ``label_smoothing`` outside ``[0, 1]`` (torch's documented range; torch 2.13
            itself takes a negative or NaN value silently as no smoothing), or beyond the float range.
        TensorTypeError: ``logits`` is not a Tensor; ``label_smoothing`` not a real number.
    """
    logits = _require_tensor("cross_entropy", "logits", logits)
    smoothing = _label_smoothing(label_smoothing)
    if logits.ndim == 0:
        raise TensorError(
            "cross_entropy: logits must have a class axis (accepted: rank >= 1, as (C,), (N, C) or "
            "(N, C, d1, ...)); got a 0-d tensor"
        )
    if axis is None:
        axis = 1 if logits.ndim >= 2 else 0
    ax = _axis("cross_entropy", "axis", axis, logits.ndim)
    raw: npt.NDArray[Any] = (
        target.numpy() if isinstance(target, Tensor) else _array_like("cross_entropy", "target", target)
    )
    if raw.dtype.kind in "iu":
        expected = logits.shape[:ax] + logits.shape[ax + 1 :]
        if raw.shape != expected:
            raise TensorError(
                f"cross_entropy: class indices of shape {raw.shape} do not fit logits of shape "
                f"{logits.shape} with classes along axis {ax} (expected {expected}; pass axis= for "
                "another class axis)"
            )
        _check_class_ids(raw, logits.shape[ax], ax)
        index = _index(np.expand_dims(raw, ax), logits, "gather", ax)
        log_p = log_softmax(logits, ax)
        nll = neg(reduce_mean(gather(log_p, index, ax)))
        if smoothing == 0.0:
            return nll
        uniform = neg(reduce_mean(reduce_sum(log_p, ax)))  # mean over positions of -sum_c log p_c
        return add(scale(nll, 1.0 - smoothing), scale(uniform, smoothing / logits.shape[ax]))
    if raw.dtype.kind == "f":
        if raw.shape != logits.shape:
            raise TensorError(
                f"cross_entropy: class probabilities of shape {raw.shape} must have the logits' shape "
                f"{logits.shape}"
            )
        if isinstance(target, Tensor) and target.dtype != logits.dtype:
            raise GuardError(
                f"cross_entropy: the class probabilities have dtype {target.dtype} but the logits "
                f"{logits.dtype} (accepted: a probability Tensor of the logits' dtype, or numpy "
                "probabilities, which are cast to it)"
            )
        classes = logits.shape[ax]
        if isinstance(target, Tensor):
            probs = target
            if smoothing != 0.0:
                probs = add(scale(target, 1.0 - smoothing), smoothing / classes)
        else:
            dt = logits.dtype.type
            values = np.asarray(raw, dtype=logits.dtype)
            if smoothing != 0.0:  # torch: target * (1 - s) + s / C, two roundings in the dtype
                values = values * dt(1.0 - smoothing) + dt(smoothing / classes)
            probs = _constant(values, logits)
        return neg(reduce_mean(reduce_sum(mul(probs, log_softmax(logits, ax)), ax)))
    raise TensorError(
        f"cross_entropy: target dtype {raw.dtype} is neither integer indices nor float probabilities"
    )



def embedding(ids: Tensor | npt.ArrayLike, weight: Tensor, padding_idx: int | None = None) -> Tensor:
    """Rows of ``weight`` picked by ``ids`` (``torch.nn.functional.embedding(ids, weight,
    padding_idx)``; no ``max_norm`` or ``sparse``): integer ``ids`` of any shape and a ``(V, D)``
    float ``weight`` give ``(*ids.shape, D)`` in the weight's dtype, ``out[..., :] =
    weight[ids[...], :]``, exactly (no arithmetic).

    Records ``gather`` along axis 0 of the weight (with the ids as a ``(n, D)`` index, made by
    numpy and carrying no gradient) and ``reshape``; the gradient of ``weight`` is ``gather``'s
    VJP, ``scatter_add``: an id used several times receives the sum of its rows' gradients, as
    torch's dense embedding backward, added in index order by ``reference.gather`` (``fixed-left``)
    and in the order of torch's ``scatter_add_`` by ``aten.gather`` (``fast_cpu``; declared
    ``implementation-defined``).

    ``padding_idx`` (torch's ``padding_idx``; ``None``, the default, for none) is a row of the
    table, an int in ``[-V, V)``, a negative one counting from the end (``-1`` is row ``V - 1``).
    It changes the gradient only, as in torch: the values at ids equal to it are still that row
    of ``weight`` (zero only if the row is zero), but they send no gradient, so the weight's
    gradient row ``padding_idx`` is zero (not ``None``: an optimizer's weight decay still applies
    to it, as torch's) and the upstream gradient at those positions is never read (a NaN there
    does not reach the weight). The other rows' gradients are those without ``padding_idx``, in
    the same order. When the gradient is recorded (``weight.requires_grad``, outside
    :func:`~torchlean.no_grad`) and some id equals ``padding_idx``, the lookup records ``gather``
    (the other ids' rows), ``gather`` (the padding rows, from ``weight.detach()``), ``concat``,
    ``gather`` (back into the ids' order) and ``reshape``, all exact; otherwise as without it.

    Raises:
        GuardError: an id outside ``[0, V)`` (torch raises ``IndexError``; negative ids are not
            counted from the end), naming the value: ``embedding: id 7 is out of range for 5
            embeddings (accepted: ids in [0, 5))``; ids that are not integers (a float tensor or
            array: torch refuses them too), or a ``weight`` that is not a 2-d float table; a
            ``padding_idx`` outside ``[-V, V)`` (torch: "Padding_idx must be within
            num_embeddings"), naming it and the range.
        TensorError: ragged nested ids.
        TensorTypeError: ``weight`` is not a Tensor; a ``padding_idx`` that is not an integer or
            ``None`` (a float, even ``2.0``, or a bool: torch refuses both).
    """
    weight = _require_tensor("embedding", "weight", weight)
    if weight.ndim != 2 or weight.dtype.kind != "f":
        raise GuardError(
            f"embedding: weight must be a 2-d float32 or float64 table (num_embeddings, embedding_dim), "
            f"got shape {list(weight.shape)} and dtype {weight.dtype}"
        )
    count, dim = weight.shape
    pad = (
        None
        if padding_idx is None
        else padding_index(padding_idx, count, "embedding", TensorTypeError, GuardError)
    )
    raw: npt.NDArray[Any] = ids.numpy() if isinstance(ids, Tensor) else _array_like("embedding", "ids", ids)
    if raw.dtype.kind not in "iu":
        raise GuardError(
            f"embedding: ids have dtype {raw.dtype} (accepted: integers, as torch's Long/Int indices; "
            "integral values can be cast with .astype(np.int64); in a model, an embedding must be the "
            "first layer, the one that receives the ids)"
        )
    outside = id_outside(raw, count)
    if outside is not None:
        raise GuardError(
            f"embedding: id {outside} is out of range for {count} embeddings (accepted: ids in [0, {count}))"
        )
    flat = raw.astype(np.int64).reshape(-1)
    padded = None if pad is None or not (weight.requires_grad and is_grad_enabled()) else flat == pad
    if padded is None or not padded.any():
        rows = gather(weight, _rows_index(flat, dim, weight), 0)
    else:
        rows = _lookup_without_padding_gradient(weight, flat, padded)
    return reshape(rows, (*raw.shape, dim))


def _rows_index(ids: npt.NDArray[np.int64], dim: int, like: Tensor) -> Tensor:
    """The ``(len(ids), dim)`` int64 index that gathers rows ``ids`` of a ``(V, dim)`` table."""
    return _on_device_of(np.ascontiguousarray(np.broadcast_to(ids.reshape(-1, 1), (ids.size, dim))), like)


def _lookup_without_padding_gradient(
    weight: Tensor, ids: npt.NDArray[np.int64], padded: npt.NDArray[np.bool_]
) -> Tensor:
    """``weight``'s rows ``ids`` (``(n, D)``), where the positions marked ``padded`` take their row
    from ``weight.detach()``, so they send no gradient (torch's ``padding_idx``): the other rows
    are gathered in their order (their gradient is ``scatter_add`` in index order, as without
    padding), the padding rows after them, and a last ``gather`` puts every row back at its
    position. No arithmetic: the values are the table's rows exactly."""
    dim = weight.shape[1]
    kept = np.flatnonzero(~padded)
    dropped = np.flatnonzero(padded)
    order = np.empty(ids.size, dtype=np.int64)
    order[kept] = np.arange(kept.size, dtype=np.int64)
    order[dropped] = np.arange(kept.size, ids.size, dtype=np.int64)
    rows = concat(
        [
            gather(weight, _rows_index(ids[kept], dim, weight), 0),
            gather(weight.detach(), _rows_index(ids[dropped], dim, weight), 0),
        ],
        0,
    )
    return gather(rows, _rows_index(order, dim, weight), 0)


# ------------------------------------------------------------------------------ normalisation layers


def _torch_normalized_shape(weight: object) -> None:
    """Refuse torch's ``normalized_shape`` (an int or a sequence of ints) in :func:`layer_norm`'s
    weight position, pointing to ``normalized_ndim``; anything else is left to the dispatcher.

    Raises:
        TensorTypeError: ``layer_norm: weight must be a torchlean Tensor or None; got (3,) ...``.
    """
    if is_int(weight):
        count = 1
    elif isinstance(weight, tuple | list) and all(is_int(v) for v in weight):
        count = len(weight)
    else:
        return
    raise TensorTypeError(
        f"layer_norm: weight must be a torchlean Tensor or None; got {_preview(weight)} of type "
        f"{type(weight).__name__}, which looks like torch's normalized_shape: torch's "
        "layer_norm(input, normalized_shape, weight, bias, eps) takes the normalised shape second, "
        "torchlean's layer_norm(x, weight=None, bias=None, normalized_ndim=1, eps=1e-05) takes the "
        f"number of trailing axes to normalise as normalized_ndim= (here normalized_ndim={count})"
    )


def layer_norm(
    x: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    normalized_ndim: int = 1,
    eps: float = 1e-5,
) -> Tensor:
    """Normalise over the trailing ``normalized_ndim`` axes, then ``* weight + bias``
    (``torch.nn.functional.layer_norm``, biased variance); records ``layer_norm``.

    Shapes: x of rank >= ``normalized_ndim`` >= 1; weight and bias (each optional) have x's
    trailing ``normalized_ndim`` extents and x's dtype. Returns x's shape.

    The order differs from torch's ``layer_norm(input, normalized_shape, weight=None, bias=None,
    eps=1e-5)``: the normalised axes are given as a count, ``normalized_ndim=`` (4th), not as
    torch's shape (2nd); a torch-style shape in weight's place (``tl.layer_norm(x, (3,))``) is
    refused with a message saying so.

    Raises:
        GuardError: ``normalized_ndim`` outside ``[1, x.ndim]``, a weight or bias of another shape
            or dtype, or an ``eps`` that is negative or not finite in x's dtype (0 is accepted).
        TensorTypeError: a non-integer ``normalized_ndim``; an ``eps`` that is not a real number;
            a weight that is not a Tensor or None (an int or a sequence of ints there, torch's
            ``normalized_shape``, names ``normalized_ndim=``).
    """
    _torch_normalized_shape(weight)
    params = {
        "normalized_ndim": _int("layer_norm", "normalized_ndim", normalized_ndim),
        "eps": _real("layer_norm", "eps", eps),
    }
    return run_op(BackendOp.LAYER_NORM, (x, weight, bias), params)


_BATCH_NORM_ORDERS = (
    "tl.batch_norm takes x positionally and everything else by keyword, since its order differs from "
    "torch.nn.functional.batch_norm(input, running_mean, running_var, weight=None, bias=None, "
    "training=False, momentum=0.1, eps=1e-05): write tl.batch_norm(x, running_mean=..., "
    "running_var=..., weight=..., bias=..., training=False, eps=...) (training defaults to True "
    "here, and there is no momentum: the running statistics are never updated)"
)


def _keywords_after_x(orders: str) -> Callable[[Callable[_P, _R]], Callable[_P, _R]]:
    """A decorator for a function whose parameters after ``x`` are keyword-only: a call with
    extra positional arguments is refused with a :class:`TensorTypeError` ending in ``orders``
    (the two orders, for :func:`batch_norm`, where a call ported from torch in torch's order would
    otherwise run with the statistics as weight and bias), not Python's ``TypeError``. Type
    checkers see the function's own signature, so they flag such a call too."""

    def decorate(fn: Callable[_P, _R]) -> Callable[_P, _R]:
        @functools.wraps(fn)
        def checked(*args: _P.args, **kwargs: _P.kwargs) -> _R:
            if len(args) > 1:
                raise TensorTypeError(
                    f"{fn.__name__}: got {len(args)} positional arguments (accepted: 1, x); {orders}"
                )
            return fn(*args, **kwargs)

        return checked

    return decorate


@_keywords_after_x(_BATCH_NORM_ORDERS)
def batch_norm(
    x: Tensor,
    *,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    training: bool = True,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation over channel axis 1 of ``(N, C, *spatial)``
    (``torch.nn.functional.batch_norm``): batch statistics in training, the running statistics in
    eval. The running statistics are inputs only (never updated here: no ``momentum``) and are not
    differentiated: one that requires grad is refused while gradients are recorded, as torch
    refuses it (its gradient would silently stay None); records ``batch_norm``.

    **Every argument after x is keyword-only**, because the order and a default differ from
    torch's ``batch_norm(input, running_mean, running_var, weight=None, bias=None,
    training=False, momentum=0.1, eps=1e-5)``: here ``training`` defaults to **True** (torch:
    False), so an eval call must say ``training=False``. A call in torch's order
    (``tl.batch_norm(x, running_mean, running_var)``) is refused with a ``TensorTypeError``
    naming both orders instead of running with the statistics as weight and bias.

    Shapes: x ``(N, C, *spatial)`` float32/float64; weight, bias, running_mean, running_var ``(C,)``
    or None, in x's dtype. Returns a tensor of x's shape.

    Raises:
        GuardError: bad shapes or dtypes, eval without both running statistics, running
            statistics in training (ignored there, where torch's call updates them), one value per
            channel in training, or an eps that is negative, not finite in x's dtype, or not
            positive in training (PyTorch refuses ``eps <= 0`` in training).
        TensorTypeError: more than one positional argument (torch's order, above); ``training``
            not a bool, or ``eps`` not a real number. An unknown keyword (torch's ``momentum``)
            is Python's ``TypeError``.
        AutogradError: ``running_mean`` or ``running_var`` requires grad while gradients are
            recorded (pass ``.detach()``, or compute a learnable shift with ordinary ops).
    """
    for name, stat in (("running_mean", running_mean), ("running_var", running_var)):
        if isinstance(stat, Tensor) and stat.requires_grad and is_grad_enabled():
            raise AutogradError(
                f"batch_norm: {name} requires grad, but batch_norm is not differentiable with respect "
                f"to the running statistics (as torch); pass {name}.detach(), or write a learnable "
                "shift and scale with ordinary ops"
            )
    training = _flag("batch_norm: training", training)  # a numpy bool too (mread 2)
    if training and (running_mean is not None or running_var is not None):
        raise GuardError(  # torch's training call updates them; here they would be ignored (review52 F15)
            "batch_norm: running_mean/running_var are neither read nor updated with training=True "
            "(torch's F.batch_norm updates them in place with its momentum); pass them with "
            "training=False only; an nn.batch_norm layer keeps them as torch does (momentum-weighted "
            "batch mean and unbiased variance)"
        )
    return run_op(
        BackendOp.BATCH_NORM,
        (x, weight, bias, running_mean, running_var),
        {"training": training, "eps": _real("batch_norm", "eps", eps)},
    )


# ----------------------------------------------------------------------------------- convolutions


def conv(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    """N-d (1-3 spatial axes) channel-first cross-correlation (``torch.nn.functional.conv1d/2d/3d``):
    x ``(N, C_in, *spatial)``, weight ``(C_out, C_in/groups, *kernel)``, bias ``(C_out,)`` or None
    (torch's parameter names, so ``conv(x, w, bias=b)`` ports as written); records ``conv``.

    The number of spatial axes is ``x.ndim - 2`` (there is no unbatched form: a rank-3 x is
    ``(N, C, L)``). ``stride``, ``padding`` (zeros, >= 0) and ``dilation`` are an int or one int per
    spatial axis. Returns ``(N, C_out, *out)`` with torch's
    ``out = (size + 2*padding - dilation*(kernel-1) - 1) // stride + 1``.

    Raises:
        GuardError: x of rank outside 3-5, weight not of x's rank, a weight/bias shape or dtype that does not
            fit, ``groups`` that does not divide C_in (or is < 1), a stride/dilation < 1 or a
            negative padding, a window parameter sequence of the wrong length, or an effective
            kernel larger than the padded input.
        GuardTypeError: a window parameter that is not an int or a sequence of ints (``1.0``,
            ``"same"``).
        TensorTypeError: a non-integer ``groups``.
    """
    params = {
        "stride": stride,
        "padding": padding,
        "dilation": dilation,
        "groups": _int("conv", "groups", groups),
    }
    return run_op(BackendOp.CONV, (x, weight, bias), params)


def conv_transpose(
    x: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    groups: int = 1,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """Transposed convolution (``torch.nn.functional.conv_transpose1d/2d/3d``, its arguments in
    its order: ``groups`` before ``dilation``, unlike :func:`conv`, where torch too puts
    ``dilation`` first): x ``(N, C_in, *spatial)``, weight ``(C_in, C_out/groups, *kernel)``, bias
    ``(C_out,)`` or None; records ``conv_transpose``. Window parameters and x's rank as in :func:`conv`.
    Returns
    ``(N, C_out, *out)`` with torch's ``out = (size - 1)*stride - 2*padding
    + dilation*(kernel-1) + output_padding + 1``.

    Raises:
        GuardError: as :func:`conv` (weight's first axis must be C_in), an ``output_padding`` not below
            ``max(stride, dilation)`` on some axis, or an output size below 1 (also for an empty
            batch, where torch returns an empty result).
        GuardTypeError: a window parameter that is not an int or a sequence of ints.
        TensorTypeError: a non-integer ``groups``.
    """
    params = {
        "stride": stride,
        "padding": padding,
        "output_padding": output_padding,
        "dilation": dilation,
        "groups": _int("conv_transpose", "groups", groups),
    }
    return run_op(BackendOp.CONV_TRANSPOSE, (x, weight, bias), params)


def max_pool(
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """Max pooling, floor mode (``torch.nn.functional.max_pool1d/2d/3d``); stride defaults to the
    kernel size; records ``max_pool``.

    x is ``(N, C, *spatial)`` with 1-3 spatial axes (no unbatched form); window parameters are an
    int or one int per spatial axis; padded positions never win (torch's implicit ``-inf``).
    Returns ``(N, C, *out)`` with ``out = (size + 2*padding - dilation*(kernel-1) - 1) // stride
    + 1``.

    Raises:
        GuardError: x of rank outside 3-5, an empty C or spatial axis (only N may be 0), a kernel,
            stride or dilation < 1, a padding above ``kernel_size // 2`` (torch's rule), a
            parameter sequence of the wrong length, a window larger than the padded input, or a
            window whose taps all fall in the padding (a dilation beyond the input; torch returns
            ``-inf`` there and its backward writes outside the input).
        GuardTypeError: a window parameter that is not an int or a sequence of ints.
    """
    params = {"kernel_size": kernel_size, "stride": stride, "padding": padding, "dilation": dilation}
    return run_op(BackendOp.MAX_POOL, (x,), params)


def avg_pool(
    x: Tensor, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
) -> Tensor:
    """Average pooling, floor mode, padding counted (``torch.nn.functional.avg_pool1d/2d/3d``);
    records ``avg_pool``. Stride defaults to the kernel size; shapes, the output-size rule (no
    dilation) and errors as :func:`max_pool`, zero padding included in each window's divisor
    (torch's ``count_include_pad=True``)."""
    params = {"kernel_size": kernel_size, "stride": stride, "padding": padding}
    return run_op(BackendOp.AVG_POOL, (x,), params)


def smooth_max_pool(
    x: Tensor,
    kernel_size: IntOrTuple,
    beta: float,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Tensor:
    """Smooth maximum over each window, ``log(sum(exp(beta * x))) / beta`` (finite nonzero
    ``beta``); records ``smooth_max_pool``. TorchLean's own op (torch has none). Stride defaults
    to the kernel size; padded positions are left out of the sum. Shapes and window errors as
    :func:`max_pool` (no dilation); a negative ``beta`` gives a smooth minimum.

    Raises:
        GuardError: as :func:`max_pool`, or a ``beta`` that is zero or not finite in x's dtype.
        TensorTypeError: a ``beta`` that is not a real number.
    """
    params = {
        "beta": _real("smooth_max_pool", "beta", beta),
        "kernel_size": kernel_size,
        "stride": stride,
        "padding": padding,
    }
    return run_op(BackendOp.SMOOTH_MAX_POOL, (x,), params)


# ---------------------------------------------------------------------------------- attention


def scaled_dot_product_attention(
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | npt.ArrayLike | None = None,
    *,
    scale: float | None = None,
) -> Tensor:
    """``softmax(q kᵀ · scale) v`` with an optional boolean hard mask (True = attend; blocked
    entries contribute exactly 0, a fully blocked row gives zeros); q ``(..., nQ, d)``, k
    ``(..., nK, d)``, v ``(..., nK, dv)``; scale defaults to ``1/sqrt(d)`` (1 when d == 0)
    (``torch.nn.functional.scaled_dot_product_attention``). Records
    ``scaled_dot_product_attention`` on whichever capsule the session selected
    (``reference.attention`` under ``checked_cpu``, ``aten.scaled_dot_product_attention`` under
    ``fast_cpu``, ``libtorch.sdpa_forward`` under ``libtorch_forward_cpu``).

    ``scale`` is keyword-only, as in torch, where the fifth positional slot is ``dropout_p``: a
    call ported from torch that passes a dropout probability there is a ``TypeError``, not a
    scale. There is no ``dropout_p`` or ``is_causal``: give a causal mask as ``mask``
    (``torchlean.spec.causal_mask(n_q, n_k)``, upper-left aligned as torch's ``is_causal``;
    ``align="lower_right"`` for the other alignment).

    The leading batch axes of q, k and v broadcast; the mask broadcasts to the scores
    ``(..., nQ, nK)``. Returns ``(..., nQ, dv)`` in q's dtype. Any finite ``scale`` is accepted
    (0 and negative ones too). Under CUDA profiles the capsules' contracts narrow the shapes:
    ``torchlean.composed_attention`` (``checked_cuda``) takes q, k, v of rank 3 or 4 only (the
    original's ``(batch, heads, n, d)``, batch optional: give a single head an axis with
    ``reshape``), ``native_cuda.direct_attention`` ``d, dv <= 256``.

    Order of operations (every provider, as the original): the scores ``q kᵀ`` are formed in
    q's dtype and then multiplied by ``scale``, where torch's SDPA scales q and k first. So a
    score beyond the dtype's range is ±inf before a small ``scale`` could bring it back (its row
    turns NaN where torch stays finite), and a ``scale`` the dtype cannot hold (``1e39`` in
    float32) is inf and gives NaN rows (torch, multiplying q and k by ``sqrt(scale)``, stays
    finite where those products do; ``libtorch.sdpa_forward`` recomputes such rows the
    reference's way, so its forward agrees with its backward and the other providers). A row
    whose allowed scores are all -inf (not a blocked row) is NaN in forward and backward, the
    softmax of all -inf, in every provider; torch's SDPA with a boolean mask returns zeros there.

    Raises:
        GuardError: an operand of rank below 2, shapes that do not fit (d or nK differ, batch axes
            or the mask do not broadcast), mixed float dtypes, or a ``scale`` that is not finite.
        GuardTypeError: a non-boolean mask.
        TensorTypeError: a ``scale`` that is not a real number.
        TensorError: a ``scale`` beyond the float64 range (``10**400``).
    """
    mask_t = None if mask is None else _mask("scaled_dot_product_attention", mask, q)
    params: dict[str, Any] = {}
    if scale is not None:
        params["scale"] = _real("scaled_dot_product_attention", "scale", scale)
    return run_op(BackendOp.SCALED_DOT_PRODUCT_ATTENTION, (q, k, v, mask_t), params)


# ------------------------------------------------------------------------------- random sources


_SEED_LIMIT = 2**64


def _seed(fn: str, seed: object, session_seed: object) -> int:
    """The seed of a random op (``session_seed`` when ``seed`` is None): an integer below
    ``2**64``, since ``keyOf`` takes it as an unsigned 64-bit number and a larger one would
    silently wrap onto a smaller seed; a negative one is refused here too (the kernel guard's
    wording, naming ``fn``).

    Raises:
        TensorTypeError: a non-integer seed.
        GuardError: ``rand_uniform: seed = 18446744073709551621 is out of range (accepted: integers
            in [0, 2**64 - 1]) ...``; ``dropout: seed = -1 is negative (accepted: integers >= 0)``.
    """
    name = "session seed" if seed is None else "seed"
    value = _int(fn, name, session_seed if seed is None else seed)
    if value < 0:
        raise GuardError(f"{fn}: {name} = {value} is negative (accepted: integers >= 0)")
    if value >= _SEED_LIMIT:
        raise GuardError(
            f"{fn}: {name} = {value} is out of range (accepted: integers in [0, 2**64 - 1]; a larger "
            "seed would wrap modulo 2**64 onto another seed's stream)"
        )
    return value


def rand_uniform(shape: Sequence[int], seed: int | None = None, dtype: DTypeLike = DEFAULT_DTYPE) -> Tensor:
    """Uniform values on the grid ``u / 2**32`` from ``keyOf(seed, counter)``, where ``counter`` is
    the session's random counter (advanced once per call; anchor-runtime.md §1.6). ``seed``
    defaults to the session's seed. Never requires grad; records ``rand_uniform``.

    Returns a tensor of ``shape`` in ``dtype`` (float32 or float64) with values in ``[0, 1]``: the
    exact ``u / 2**32`` rounded once to ``dtype``, so float32 can round a draw within ``2**-25``
    of 1 up to exactly 1. The same session seed replays the same stream in a new session.

    Seeds are not mixed before the counter is added (``keyOf(seed, counter) = splitmix64(seed +
    counter)``, the original's schedule, so streams match it): seed ``s + 1`` draws at counter ``k``
    what seed ``s`` draws at ``k + 1``. For independent streams (runs, layers) use seeds far apart,
    e.g. multiples of ``2**32``, not ``0, 1, 2``.

    Raises:
        GuardError: a tensor dtype other than float32/float64 (int64, bool), a negative extent,
            or a seed outside ``[0, 2**64 - 1]``.
        TensorError: a dtype torchlean tensors do not hold (``float16``, ``complex64``, an
            unknown name: :func:`~torchlean.tensor.resolve_dtype`).
        TensorTypeError: a non-integer extent or seed.
    """
    session = current_session()
    params = {
        "shape": _ints("rand_uniform", "shape", shape),
        "seed": _seed("rand_uniform", seed, session.seed),
        "dtype": resolve_dtype(dtype),
    }
    params["counter"] = session.next_random_counter()
    return run_op(BackendOp.RAND_UNIFORM, (), params)


def bernoulli_mask(
    shape: Sequence[int], keep_prob: float, seed: int | None = None, dtype: DTypeLike = DEFAULT_DTYPE
) -> Tensor:
    """A 0/1 mask, 1 where ``keep_prob > u / 2**32`` (strict), from ``keyOf(seed, counter)`` with
    the session's random counter (advanced once per call). Never requires grad; records
    ``bernoulli_mask``. Returns a tensor of ``shape`` in ``dtype`` (float32 or float64) holding
    0 and 1; ``u`` is the :func:`rand_uniform` draw of the same key (so neighbouring seeds overlap
    one draw apart, as there).

    Raises:
        GuardError: ``keep_prob`` outside ``[0, 1]`` or NaN, a tensor dtype other than
            float32/float64 (int64, bool), a negative extent, or a seed outside ``[0, 2**64 - 1]``.
        TensorError: a dtype torchlean tensors do not hold (``float16``, ``complex64``, an
            unknown name: :func:`~torchlean.tensor.resolve_dtype`).
        TensorTypeError: a non-integer extent or seed; a ``keep_prob`` that is not a real number.
    """
    session = current_session()
    params = {
        "shape": _ints("bernoulli_mask", "shape", shape),
        "keep_prob": _real("bernoulli_mask", "keep_prob", keep_prob),
        "seed": _seed("bernoulli_mask", seed, session.seed),
        "dtype": resolve_dtype(dtype),
    }
    params["counter"] = session.next_random_counter()
    return run_op(BackendOp.BERNOULLI_MASK, (), params)


def dropout(x: Tensor, p: float, training: bool = True, seed: int | None = None) -> Tensor:
    """Inverted dropout (``torch.nn.functional.dropout`` semantics, TorchLean's seeded mask): in
    training, ``x * mask / (1 - p)`` with ``mask = bernoulli_mask(x.shape, 1 - p)``; the realised
    mask is saved by the ``mul`` node for the backward. Identity when not training or ``p == 0``.
    Records ``bernoulli_mask``, ``mul``, ``scale`` (``p == 1``: ``bernoulli_mask``, ``mul``).
    Returns x's shape and dtype (``x`` itself when it is the identity); the mask is drawn in x's
    dtype with ``seed`` (default: the session's seed), as :func:`bernoulli_mask`: from the seed and
    the session's random counter, which every draw advances, so two calls with one ``seed`` in a
    session give different masks, and a new session with the same seeds replays them.
    Seeds ``s`` and ``s + 1`` give the same masks one draw apart (see :func:`rand_uniform`): give
    two dropout layers or two runs seeds far apart.

    Raises:
        TensorError: ``p`` outside ``[0, 1]`` (NaN included).
        TensorTypeError: ``x`` is not a Tensor; a ``p`` that is not a real number; a ``training``
            that is not a bool; a ``seed`` that is not an integer or None (checked in eval too; a
            bool there, as torch's 4th argument ``inplace``, gets a message saying so).
        GuardError: a seed outside ``[0, 2**64 - 1]`` (checked in eval too); in training with
            ``0 < p``, an x whose dtype is not float32/float64.
    """
    x = _require_tensor("dropout", "x", x)
    if seed is not None and not is_int(seed):
        hint = (
            " (torch's dropout(input, p, training, inplace) takes inplace 4th; torchlean's 4th "
            "argument is seed, and there is no in-place dropout: drop that argument)"
            if isinstance(seed, bool | np.bool_)
            else ""
        )
        raise TensorTypeError(
            f"dropout: seed must be an integer or None; got {_preview(seed)} of type "
            f"{type(seed).__name__}{hint}"
        )
    if seed is not None:
        _seed("dropout", seed, None)  # refuses negatives and 2**64 and beyond, naming dropout
    if not 0.0 <= _real("dropout", "p", p) <= 1.0:
        raise TensorError(f"dropout probability p={p!r} is outside [0, 1]")
    if not _flag("dropout: training", training) or p == 0.0:
        return x
    mask = bernoulli_mask(x.shape, 1.0 - p, seed=None if seed is None else int(seed), dtype=x.dtype)
    kept = mul(x, mask)
    return kept if p == 1.0 else scale(kept, 1.0 / (1.0 - p))
