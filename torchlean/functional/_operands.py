"""Operands of the functional ops: constants made from numbers and array data in the other
operand's dtype and device (integers checked against that dtype), masks and index arrays, and the
Tensor check of the functions that read an input before dispatch."""

from __future__ import annotations

import builtins
import numbers
from collections.abc import Callable
from typing import Any, TypeAlias, TypeGuard

import numpy as np
import numpy.typing as npt

from torchlean._checks import int_overflow, is_builtin_int, shown
from torchlean._tensor_data import masked_entries, torch_elements_read
from torchlean._tensor_errors import GradConversionError
from torchlean._torch_host import declared_shape
from torchlean.autograd import storage
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.reference.guards import index_out_of_range
from torchlean.functional._params import _axis
from torchlean.tensor import (
    OperandLike,
    Tensor,
    TensorError,
    TensorTypeError,
    _from_torch_array,
    _is_torch_tensor,
    _preview,
    _require_int64_fits,
    operand_type,
)

Operand: TypeAlias = OperandLike


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

    Each value is checked once: :func:`_constant_values` checks the integers (Python, numpy and
    uint64 data, the integers of a list) against ``like``'s dtype, so for an int64 ``like`` only
    the float data it returns goes through the int64 float rule.
    """
    raw = _constant_values(value, like.dtype)  # integers already checked against like's dtype
    if like.dtype == np.int64 and raw.dtype.kind == "f":  # numpy's cast: NaN, inf, 1e30 -> -2**63
        _require_int64_fits(raw)
    with np.errstate(over="ignore", under="ignore"):  # beyond float32: +-inf, tiny: 0, as torch
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
    if (masked := masked_entries(value)) is not None:
        raise TensorError(f"{role}: {masked}")
    try:
        raw, value = _host_values(value, role)
    except GradConversionError:  # review231 F9: numpy's conversion is no call of the user's
        raise TensorError(
            f"cannot use a list holding a torchlean tensor that requires grad as {role}: its tape history "
            "would be dropped (accepted: its .detach(), or the tensor itself, built with torchlean ops "
            "such as tl.concat and tl.reshape)"
        ) from None
    except TensorError:  # a torch element refused, named (a ValueError too)
        raise
    except ValueError as exc:
        raise TensorError(
            f"cannot use {_preview(value)} as {role}: {exc} (accepted: a Python number, "
            "a numeric numpy array or nested lists of numbers of one rectangular shape)"
        ) from exc
    if raw.dtype == object and raw.size and all(_is_number(v) for v in raw.flat):
        for v in raw.flat:
            if is_builtin_int(v):
                _check_int_fits(v, dtype)
        with np.errstate(over="ignore", under="ignore"):
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


def refuse_unbroadcastable(op: str, a: tuple[int, ...], b: tuple[int, ...]) -> None:
    """Refuse operand shapes ``a`` and ``b`` of elementwise ``op`` that do not broadcast, in the
    words of the binary ops' guards.

    Raises:
        GuardError: ``add: shapes are not broadcastable: a (2, 3), b (5,) (accepted: ...)``.
    """
    try:
        if a != b:  # the common case costs nothing more
            np.broadcast_shapes(a, b)
    except ValueError:
        raise GuardError(
            f"{op}: shapes are not broadcastable: a {a}, b {b} (accepted: shapes that agree "
            "on each trailing axis or have extent 1 there, numpy/PyTorch broadcasting)"
        ) from None


def on_host(t: Tensor) -> bool:
    """Whether ``t`` has host (numpy) storage: a CPU tensor. ``gather`` and ``scatter_add`` check
    an index's declared shape before copying it in the reference guards' words only for one: the
    native CUDA guard words its own refusal of a CUDA tensor's index (the emulated ``checked_cuda``
    tests pin it), which sees the index after its copy. The elementwise ops, ``mse_loss`` and the
    masks check on every device, in the reference guards' words."""
    return isinstance(t._data, np.ndarray)


def _pair(a: Operand, b: Operand, op: str | None = None) -> tuple[Tensor, Tensor]:
    """Both operands as tensors; a non-tensor takes the other operand's dtype and device. For an
    elementwise ``op``, a constant numpy array or torch tensor whose shape does not broadcast with
    the tensor's is refused before it is converted (review239 F10, review240 F4: a stride-0 view of
    shape ``(2**40,)`` beside a ``(2, 3)`` tensor was copied first, numpy's 4 TiB MemoryError).

    Raises:
        GuardError: for ``op``, shapes that do not broadcast (:func:`refuse_unbroadcastable`).
        TensorError, TensorTypeError: as :func:`_constant`; neither operand is a Tensor.
    """
    if op is not None:
        tensor, other = (a, b) if isinstance(a, Tensor) else (b, a)
        shape = declared_shape(other)
        if isinstance(tensor, Tensor) and shape is not None:
            first, second = (tensor.shape, shape) if tensor is a else (shape, tensor.shape)
            refuse_unbroadcastable(op, first, second)
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


def _torch_grad_refusal(role: str, t: Any) -> TensorTypeError:
    return TensorTypeError(
        f"{role} is a torch tensor that requires grad (shape {tuple(t.shape)}): torch's autograd "
        "history does not reach torchlean's tape, so its gradient would be lost (accepted: "
        "t.detach())"
    )


def _as_operand_element(role: str) -> Callable[[Any, str], object]:
    """How :func:`_host_values` reads a torch tensor inside a list operand: as a torch operand is
    read (:func:`_from_torch_array`; one that requires grad refused).

    Raises (from the reader):
        TensorTypeError: ``cross_entropy: target: element [1] is a torch tensor that requires grad ...``.
        TensorError: an element :func:`_from_torch_array` refuses, named so.
    """

    def read(t: Any, where: str) -> object:
        if t.requires_grad:
            raise _torch_grad_refusal(f"{role}: element {where}", t)
        try:
            return _from_torch_array(t)
        except TensorError as exc:
            raise TensorError(f"{role}: element {where}: {exc}") from exc

    return read


def _host_values(value: object, role: str) -> tuple[npt.NDArray[Any], object]:
    """``np.asarray(value)`` and the value it read: where numpy fails on torch tensors inside a
    list or tuple (torch's bare ``TypeError``/``RuntimeError`` for one that requires grad, is
    bfloat16, meta or on a GPU; review181 F2), those elements are read by
    :func:`_as_operand_element` and that list is read instead.

    Raises:
        ValueError: numpy's, for ragged nested sequences (the callers word it).
        TensorTypeError, TensorError: as :func:`_as_operand_element`.
    """
    try:
        return np.asarray(value), value
    except (TypeError, RuntimeError):
        if not isinstance(value, list | tuple):
            raise
        read = torch_elements_read(value, _as_operand_element(role))
        return np.asarray(read), read


def _array_like(fn: str, name: str, value: object) -> npt.NDArray[Any]:
    """``np.asarray(value)`` for an array-like mask, index or target operand of ``fn``; a torch
    tensor, alone or inside lists, is read as a constant operand's is (:func:`_from_torch_array`:
    a dtype numpy cannot hold, such as bfloat16, refused naming it), not by numpy, whose bare
    torch errors named no operand (review179 F2, review181 F2, F3).

    Raises:
        TensorError: ragged nested sequences (``<fn>: <name> [[0], [0, 1]] is not a rectangular
            array: ...``), which numpy refuses with a bare ``ValueError``; a meta, sparse or
            nested torch tensor (no dense values), or one of a dtype numpy cannot hold.
        TensorTypeError: a torch tensor that requires grad (its gradient would be lost).
    """
    role = f"{fn}: {name}"
    if _is_torch_tensor(value):
        t: Any = value
        if t.requires_grad:
            raise _torch_grad_refusal(role, t)
        try:
            return _from_torch_array(t)
        except TensorError as exc:
            raise TensorError(f"{role}: {exc}") from exc
    if (masked := masked_entries(value)) is not None:
        raise TensorError(f"{role}: {masked}")
    try:
        return _host_values(value, role)[0]
    except TensorError:  # a torch element refused, named (a ValueError too)
        raise
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
    integer data becomes int64 (tensors hold only int64 integers; a tensor of another dtype is
    left for the kernel guard to refuse).

    Raises:
        GuardError: index data that is not integer (bool, float), naming the integer dtypes taken.
        GuardError: a uint64 value above ``2**63 - 1``, which the int64 cast would wrap to a
            negative number: refused here with the guard's out-of-range message naming the value
            itself (``gather: index value 9223372036854775808 is out of range for extent 3 along
            axis 1 (accepted: 0 <= index < 3)``), after ``axis`` is checked as the guard checks it
            (``gather`` and ``scatter_add`` refuse a numpy or torch index of the wrong rank or
            extents before calling this, review243 F2: that comes first, as for int64 data).
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
    raise GuardError(  # the guard's words, and the integer dtypes taken here (review100 L4)
        f"{op}: index has dtype {raw.dtype}; accepted: int64 (index data of another integer dtype, such as "
        "int32 or uint8, becomes int64)"
    )


def _is_number(value: object) -> TypeGuard[int | float]:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_array_data(value: object) -> bool:
    """Whether ``value`` is array data (a Tensor, a numpy array, a list or tuple, a torch
    tensor) where an integer axis is expected: a call written in torch's argument order
    (``gather(x, dim, index)``, ``cross_entropy(input, target, weight)``) puts it there."""
    return isinstance(value, Tensor | np.ndarray | list | tuple) or _is_torch_tensor(value)
