"""Launch guards of the native-cuda provider.

The native-cuda capsules (and ``native_cuda.direct_attention``) name two of these functions as
their ``runtimeGuard`` evidence, and every wrapper in :mod:`.kernels` calls both before it
reaches the extension:

* :func:`check_launch` (shape obligation): operands are torch tensors on the extension's device
  (CUDA; the CPU under :func:`.extension.host_emulation`), float32 or float64 with one dtype,
  boolean masks, int64 indices, ranks in range, equal shapes where required, and element counts
  that fit int64;
* :func:`check_flat_row_major` (layout obligation): every buffer is contiguous row-major.

The remaining helpers validate launch parameters (per-axis window sizes, finite scalars, output
shapes) and the zero-size rules of the channel-first ops (:func:`check_channel_first`,
:func:`check_no_empty_axis`), which the CPU profiles' guards (``reference.spatial_guards``)
share; :mod:`.operand_guards` checks how operands relate. Every refusal is a
:class:`~torchlean.backend.errors.GuardError` that names the op, the
offending value and what is accepted. The C++ entry points repeat these checks (defence in depth;
anchor-runtime.md §6.2 describes the original's boundary checks, which aborted instead of raising).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Collection, Mapping, Sequence
from typing import TypeGuard

import torch

from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.providers.reference.spatial_guards import (
    empty_axis_fault,
    shown_value,
    too_large_fault,
    window_parameter_limit,
)

__all__ = [
    "FLOAT_DTYPES",
    "INT64_MAX",
    "check_channel_first",
    "check_element_count",
    "check_finite",
    "check_flat_row_major",
    "check_launch",
    "check_no_empty_axis",
    "dtype_name",
    "is_finite_real",
    "per_axis",
]

FLOAT_DTYPES: tuple[torch.dtype, ...] = (torch.float32, torch.float64)
INT64_MAX = (1 << 63) - 1

Operands = Mapping[str, "torch.Tensor | None"]


def _fail(op: str, message: str) -> GuardError:
    return GuardError(f"native_cuda.{op}: {message}")


def dtype_name(dtype: torch.dtype) -> str:
    """``torch.float32`` -> ``"float32"``."""
    return str(dtype).removeprefix("torch.")


def check_element_count(op: str, what: str, shape: Sequence[int]) -> int:
    """The element count of ``shape``; every extent an int >= 0, and both the element count and the
    product of the non-zero extents at most 2**63 - 1. The second bound is torch's own rule (a
    shape like ``(2**40, 2**40, 0)`` holds no element, yet ``torch.empty`` and
    ``torch.broadcast_to`` refuse it with ``numel: integer multiplication overflow``), so a shape
    that passes here can be materialised.

    Raises:
        GuardError: a non-int or negative extent, or an element count (or a product of the non-zero
            extents) that overflows int64.
    """
    for extent in shape:
        if isinstance(extent, bool) or not isinstance(extent, int) or extent < 0:
            raise _fail(op, f"{what} {list(shape)} has extent {extent!r} (accepted: ints >= 0)")
    count = math.prod(shape)
    if count > INT64_MAX:
        raise _fail(op, f"{what} {list(shape)} has {count} elements, more than int64 can count")
    nonzero = math.prod(extent for extent in shape if extent != 0)
    if nonzero > INT64_MAX:
        raise _fail(
            op,
            f"{what} {list(shape)} has non-zero extents whose product {nonzero} is more than int64 "
            "can count (torch refuses such a shape even when another extent is 0)",
        )
    return count


def check_launch(
    op: str,
    tensors: Operands,
    *,
    ranks: Mapping[str, tuple[int, int]] | None = None,
    masks: Collection[str] = (),
    indices: Collection[str] = (),
    same_shape: Sequence[tuple[str, str]] = (),
) -> torch.dtype | None:
    """Check the operands of one native launch; return their float dtype (None when there is no
    float operand, as for the seeded sources, which take no tensor).

    ``tensors`` maps argument names to tensors (``None`` marks an absent optional input, which is
    skipped). Names listed in ``masks`` must be bool, in ``indices`` int64, all others float32 or
    float64 with one common dtype. All operands must be on one device of the extension's type.
    ``ranks[name] = (lo, hi)`` bounds a rank; ``same_shape`` lists pairs of names whose shapes must
    be equal.

    Raises:
        GuardError: naming the operand and the accepted values; a non-bool mask raises its
            subclass ``GuardTypeError`` (also a ``TypeError``).
    """
    expected = extension.expected_device_type()
    device: torch.device | None = None
    dtype: torch.dtype | None = None
    first = ""
    for name, tensor in tensors.items():
        if tensor is None:
            continue
        if not isinstance(tensor, torch.Tensor):
            raise _fail(op, f"{name} is a {type(tensor).__name__} (accepted: torch.Tensor)")
        if tensor.device.type != expected:
            raise _fail(op, f"{name} is on device {tensor.device} (accepted: {expected} tensors)")
        if device is None:
            device, first = tensor.device, name
        elif tensor.device != device:
            raise _fail(op, f"{name} is on {tensor.device} but {first} is on {device}")
        if name in masks:
            if tensor.dtype != torch.bool:
                raise GuardTypeError(
                    f"native_cuda.{op}: {name} has dtype {dtype_name(tensor.dtype)} (accepted: bool, "
                    "True = allowed; an additive bias is a separate operation)"
                )
        elif name in indices:
            if tensor.dtype != torch.int64:
                raise _fail(op, f"{name} has dtype {dtype_name(tensor.dtype)} (accepted: int64)")
        elif tensor.dtype not in FLOAT_DTYPES:
            raise _fail(op, f"{name} has dtype {dtype_name(tensor.dtype)} (accepted: float32, float64)")
        elif dtype is None:
            dtype = tensor.dtype
        elif tensor.dtype != dtype:
            raise _fail(
                op,
                f"{name} has dtype {dtype_name(tensor.dtype)} but the other operands are "
                f"{dtype_name(dtype)} (accepted: one float dtype per launch)",
            )
        check_element_count(op, f"{name} of shape", list(tensor.shape))
    for name, (lo, hi) in (ranks or {}).items():
        tensor = tensors.get(name)
        if tensor is not None and not lo <= tensor.dim() <= hi:
            raise _fail(
                op, f"{name} has rank {tensor.dim()} (shape {list(tensor.shape)}; accepted ranks {lo}..{hi})"
            )
    for left, right in same_shape:
        a, b = tensors.get(left), tensors.get(right)
        if a is not None and b is not None and a.shape != b.shape:
            raise _fail(
                op,
                f"{left} has shape {list(a.shape)} but {right} has shape {list(b.shape)} "
                "(accepted: equal shapes)",
            )
    return dtype


def check_flat_row_major(op: str, tensors: Operands) -> None:
    """Every given tensor is a contiguous (flat row-major) buffer.

    Raises:
        GuardError: naming the first strided operand (``tensor.contiguous()`` makes a copy that
            passes).
    """
    for name, tensor in tensors.items():
        if tensor is not None and not tensor.is_contiguous():
            raise _fail(
                op,
                f"{name} of shape {list(tensor.shape)} has strides {list(tensor.stride())}, not a flat "
                "row-major buffer (accepted: contiguous tensors)",
            )


def check_no_empty_axis(op: str, name: str, tensor: torch.Tensor | None) -> None:
    """``tensor`` (skipped when None) has no axis of extent 0: convolution weights and biases, as
    PyTorch requires ("expected weight to be at least 1 at dimension 0").

    Raises:
        GuardError: naming the operand and its shape.
    """
    if tensor is not None and 0 in tensor.shape:
        raise _fail(
            op, f"{name} has shape {list(tensor.shape)} with an empty axis (accepted: every axis >= 1)"
        )


def check_channel_first(op: str, x: torch.Tensor, *, convolution: bool) -> None:
    """The zero-size rule of a channel-first input x ``(N, C, *spatial)`` (PyTorch's, as
    ``reference.spatial_guards``): the batch N may be 0; C may not (for a convolution, C_in = 0 is
    refused although torch returns 0 output channels instead of C_out there, dropping the bias:
    pytorch/pytorch#56998); spatial extents may be 0 only for a convolution of an empty batch
    (torch: "Only zero batch or zero channel inputs are supported"), never for a pool (torch:
    "tensor with optional 0 dim batch size"). An x of rank below 3 is left to the rank checks.

    Raises:
        GuardError: naming x's shape and what is accepted.
    """
    if x.dim() < 3:
        return
    shape = tuple(int(d) for d in x.shape)
    fault = empty_axis_fault(op, shape, convolution=convolution, shown=str(list(shape)))
    if fault is not None:
        raise _fail(op, fault)


def per_axis(op: str, name: str, value: int | Sequence[int], axes: int, minimum: int) -> tuple[int, ...]:
    """An int or a sequence of ``axes`` ints, each >= ``minimum`` and at most the window parameter
    limit of ``op`` (``reference.spatial_guards.window_parameter_limit``: int64's for ``conv``,
    2**31 - 1 for the pools and ``conv_transpose``), as a tuple of ``axes`` ints.

    Raises:
        GuardError: a wrong length, a non-int, or a value below ``minimum`` or above the limit.
    """
    items = [value] * axes if _is_integer(value) else value
    if not isinstance(items, Sequence) or len(items) != axes:
        raise _fail(op, f"{name}={shown_value(value)} (accepted: an int or {axes} ints)")
    result: list[int] = []
    for item in items:
        if not _is_integer(item) or int(item) < minimum:
            raise _fail(op, f"{name}={shown_value(value)} (accepted: ints >= {minimum})")
        if int(item) > window_parameter_limit(op):
            raise _fail(op, too_large_fault(op, name, value))
        result.append(int(item))
    return tuple(result)


def _is_integer(value: object) -> TypeGuard[numbers.Integral]:
    """An integer (a Python or numpy int, as the reference guards accept), bool excluded."""
    return isinstance(value, numbers.Integral) and not isinstance(value, bool)


def check_finite(op: str, name: str, value: float, *, nonzero: bool = False) -> float:
    """A finite real (and nonzero when asked), returned as a float.

    Raises:
        GuardError: a non-number, NaN, infinity, or zero where nonzero is required.
    """
    if not is_finite_real(value):
        accepted = "a finite number" + (", not 0" if nonzero else "")
        raise _fail(op, f"{name}={shown_value(value)} (accepted: {accepted})")
    if nonzero and value == 0:
        raise _fail(op, f"{name}={value!r} (accepted: a finite nonzero number)")
    return float(value)


def is_finite_real(value: object) -> bool:
    """Whether ``value`` is an int or float (bool excluded) that is finite as a float64 (an int
    beyond float64's range is not)."""
    if isinstance(value, bool) or not isinstance(value, int | float):
        return False
    try:
        return math.isfinite(value)
    except OverflowError:
        return False
