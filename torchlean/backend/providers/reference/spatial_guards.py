"""Runtime guards of the seven channel-first ``reference`` ops (the capsules' ``runtimeGuard`` evidence).

``layer_norm``, ``batch_norm``, ``conv``, ``conv_transpose``, ``max_pool``, ``smooth_max_pool`` and
``avg_pool`` in :mod:`torchlean.backend.providers.reference.spatial` call their ``check_<op_label>``
here before computing anything (their VJPs call it too, then check the cotangent).  A guard
refuses bad input with :class:`~torchlean.backend.errors.GuardError`; the message starts with the op
label, names the offending value and says what is accepted; a parameter of the wrong kind (a float,
bool or string where an int or a real number is meant) raises its subclass
:class:`~torchlean.backend.errors.GuardTypeError`, also a ``TypeError``. Refused: arrays that are
not numpy float32/float64 arrays, dtype mismatches between operands, wrong ranks (x is
``(N, C, *spatial)`` with 1 to 3 spatial axes), the empty axes PyTorch refuses (see below),
channel counts that ``groups`` does not divide, window parameters out of range (stride < 1,
padding < 0, dilation < 1, output_padding not below stride or dilation, pool padding above half
the kernel, any window parameter or ``groups`` above :func:`window_parameter_limit`: int64's
largest for ``conv``, :data:`MAX_WINDOW_PARAMETER` for the pools and ``conv_transpose``), kernels
larger than the padded input (for the 3-d ``avg_pool``, as torch's ``avg_pool3d``: larger than
the unpadded input), pool windows that read padding only, element counts that overflow
int64 (computed with Python ints), non-finite or zero smooth-max ``beta``,
and out-of-range ``eps``/``momentum``.

Zero-size inputs follow PyTorch (``torch.nn.functional``, observed on torch 2.13): an empty batch
``N = 0`` is accepted by every op (the result is empty, parameter gradients are zeros: a left fold
over nothing); convolutions then also accept empty spatial axes (the output size follows the
usual formula), which they refuse for ``N >= 1``; pools refuse empty channel or spatial axes;
convolution weights and biases have no empty axis; ``layer_norm`` accepts any empty axis;
``batch_norm`` accepts an empty batch or spatial extent (0 values per channel; exactly 1 is still
refused in training) and ``C = 0`` without affine weight and bias. Two refusals are kept where
torch returns a result: a convolution input with ``C_in = 0`` (torch returns 0 output channels
instead of ``C_out``, dropping the bias; pytorch/pytorch#56998 is open), and the argument checks
(ranks, weight and statistic lengths) that torch skips for an empty ``batch_norm`` input but
applies to every non-empty one.

The window guards return a :class:`Window`, the validated per-axis geometry the kernel uses.

Source: PyTorch's ``torch.nn.functional`` conv/conv_transpose/pool/norm argument rules (the
behaviour mirrored) and the channel-first window contract of anchor-runtime.md §4.3.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.reference import guards as reference_guards
from torchlean.backend.providers.reference._fold import Array
from torchlean.backend.providers.reference.guards import check_layout_size, check_numel

IntOrTuple = int | Sequence[int]
"""A window parameter: one int for every spatial axis, or one int per spatial axis."""


@dataclass(frozen=True, slots=True)
class Window:
    """Validated geometry of a sliding window over the spatial axes of a channel-first array.

    Tap ``k`` (a kernel offset) of output position ``o`` reads padded position
    ``o * stride + k * dilation`` along each axis.  ``input`` is the unpadded spatial extent the
    window slides over and ``output`` the extent of window positions.  For ``conv_transpose`` this
    is the window of the convolution whose adjoint it computes: ``input`` is the transpose
    convolution's output extent and ``output`` its input extent.
    """

    kernel: tuple[int, ...]
    stride: tuple[int, ...]
    padding: tuple[int, ...]
    dilation: tuple[int, ...]
    input: tuple[int, ...]
    output: tuple[int, ...]


def _fail(op: str, message: str) -> GuardError:
    return GuardError(f"{op}: {message}")


def _type_fail(op: str, message: str) -> GuardTypeError:
    """A parameter of the wrong kind (a float or bool where an int is meant): also a TypeError."""
    return GuardTypeError(f"{op}: {message}")


def _array(op: str, name: str, value: object) -> Array:
    """An array operand in the canonical layout, of any shape (empty axes included)."""
    # through the module, so that the layout evidence it stands behind is one function everywhere
    return reference_guards.check_canonical_layout(value, op=op, name=name)


def _full(op: str, name: str, value: object) -> Array:
    """An array operand without empty axes (convolution weights, as PyTorch requires)."""
    arr = _array(op, name, value)
    if arr.size == 0:
        raise _fail(op, f"{name} has shape {arr.shape} with an empty axis (accepted: every axis >= 1)")
    return arr


def _same_dtype(op: str, name: str, arr: Array, x: Array) -> None:
    if arr.dtype != x.dtype:
        raise _fail(
            op,
            f"{name} has dtype {arr.dtype} but x has dtype {x.dtype} (accepted: every operand in "
            "x's dtype; torchlean kernels do not promote, whatever the provider)",
        )


def _operand(op: str, name: str, value: object, x: Array, shape: tuple[int, ...]) -> Array:
    """An array operand that must have x's dtype and exactly ``shape``."""
    arr = _array(op, name, value)
    _same_dtype(op, name, arr, x)
    if arr.shape != shape:
        raise _fail(op, f"{name} has shape {arr.shape} (accepted: {shape})")
    return arr


def _weight(op: str, w: object, x: Array, layout: str) -> Array:
    arr = _full(op, "w", w)
    _same_dtype(op, "w", arr, x)
    if arr.ndim != x.ndim:
        raise _fail(
            op,
            f"w has rank {arr.ndim} with shape {arr.shape} (accepted: rank {x.ndim}, {layout} "
            f"to match x of shape {x.shape})",
        )
    return arr


def _channel_first(op: str, x: object, *, convolution: bool) -> Array:
    """x ``(N, C, *spatial)`` with 1-3 spatial axes, any N (0 included) and C >= 1; spatial
    extents >= 1, except that a convolution (``convolution=True``) of an empty batch accepts
    empty spatial axes, as PyTorch ("Only zero batch or zero channel inputs are supported")."""
    arr = _array(op, "x", x)
    if not 3 <= arr.ndim <= 5:
        raise _fail(
            op,
            f"x has rank {arr.ndim} with shape {arr.shape} (accepted: rank 3, 4 or 5, "
            "i.e. (N, C, *spatial) with 1 to 3 spatial axes)",
        )
    fault = empty_axis_fault(op, tuple(arr.shape), convolution=convolution, shown=str(arr.shape))
    if fault is not None:
        raise _fail(op, fault)
    return arr


def empty_axis_fault(op: str, shape: tuple[int, ...], *, convolution: bool, shown: str) -> str | None:
    """What is wrong with the empty axes of a channel-first x ``(N, C, *spatial)`` (rank >= 3),
    or ``None``: PyTorch's rule (the batch N may be 0; C may not; spatial extents may be 0 only
    for a convolution of an empty batch), except that ``conv`` also refuses C_in = 0, where torch
    returns 0 output channels instead of C_out (dropping the bias). ``shown`` is the shape as the
    caller's messages print it. Shared with the native CUDA guards."""
    n, c, spatial = shape[0], shape[1], shape[2:]
    if op == "conv" and c == 0:
        return (
            f"x has shape {shown} with 0 input channels (accepted: C_in >= 1; for C_in = 0 "
            "PyTorch returns 0 output channels instead of C_out, dropping the bias, so torchlean "
            "refuses it)"
        )
    if c == 0 or (0 in spatial and (n > 0 or not convolution)):
        accepted = (
            "C_in >= 1 and spatial extents >= 1 unless the batch N is 0, as PyTorch convolutions"
            if convolution
            else "C >= 1 and spatial extents >= 1; only the batch N may be 0, as PyTorch pools"
        )
        return f"x has shape {shown} with an empty axis (accepted: {accepted})"
    return None


def _as_int(value: object) -> int | None:
    """``value`` as an int when it is an integer (bool excluded), else None."""
    if isinstance(value, numbers.Integral) and not isinstance(value, bool):
        return int(value)
    return None


_INT64_MAX = 2**63 - 1
MAX_WINDOW_PARAMETER = 2**31 - 1
"""The largest ``kernel_size``, ``stride``, ``padding``, ``output_padding``, ``dilation`` or
``groups`` the transposed-convolution and pool guards accept (every provider runs the same
guard).

ATen's pooling and transposed-convolution kernels hold these parameters in 32-bit ints (torch
2.13 refuses ``max_pool2d(x, 2, 2**31)`` and wraps ``conv_transpose2d(..., stride=2**31)`` to a
negative stride), so the bound for those ops, under every profile, is 2**31 - 1. ``conv``
takes parameters up to int64's largest, as torch's convolution takes 64-bit strides, paddings
and dilations (a stride of 2**31 is a legitimate, if odd, 1-output convolution). A larger integer
is refused with a
:class:`GuardError` naming it, never converted to a C integer (where numpy raised
``OverflowError`` and torch ``TypeError``)."""


def shown_value(value: object) -> str:
    """``repr(value)`` for messages; a value holding an integer too long for Python to print
    (more than 4300 digits) is described instead."""
    try:
        return repr(value)
    except ValueError:
        return f"<a {type(value).__name__} holding an integer of more than 4300 digits>"


def window_parameter_limit(op: str) -> int:
    """The largest window parameter of ``op``: int64's for ``conv`` (ATen's convolution takes
    64-bit strides, paddings and dilations), :data:`MAX_WINDOW_PARAMETER` for the others.
    Shared with the native CUDA guards."""
    return _INT64_MAX if op == "conv" else MAX_WINDOW_PARAMETER


def too_large_fault(op: str, name: str, value: object) -> str:
    """The refusal of a window parameter above :func:`window_parameter_limit`. Shared with the
    native CUDA guards."""
    if op == "conv":
        return f"{name}={shown_value(value)} is too large (accepted: at most 2**63 - 1, int64's largest)"
    return (
        f"{name}={shown_value(value)} is too large (accepted: at most {MAX_WINDOW_PARAMETER} = 2**31 - 1 "
        "on every spatial axis; ATen's pooling and transposed-convolution kernels hold window "
        "parameters in 32-bit ints)"
    )


def _too_large(op: str, name: str, value: object) -> GuardError:
    return _fail(op, too_large_fault(op, name, value))


def _int_param(op: str, name: str, value: object, minimum: int) -> int:
    result = _as_int(value)
    if result is None:
        raise _type_fail(op, f"{name} must be an int, got {name}={shown_value(value)}")
    if result < minimum:
        raise _fail(op, f"{name}={shown_value(result)} is out of range (accepted: {name} >= {minimum})")
    if result > window_parameter_limit(op):
        raise _too_large(op, name, result)
    return result


def _per_axis(op: str, name: str, value: object, nd: int, minimum: int) -> tuple[int, ...]:
    """Normalise an int-or-sequence window parameter to one int per spatial axis, each in
    ``[minimum, MAX_WINDOW_PARAMETER]``."""
    single = _as_int(value)
    if single is not None:
        items: list[int | None] = [single] * nd
    elif isinstance(value, Sequence) and not isinstance(value, str) and len(value) == nd:
        items = [_as_int(v) for v in value]
    else:
        sequence = isinstance(value, Sequence) and not isinstance(value, str)
        fail = _fail if sequence else _type_fail
        unbatched = ""
        if sequence and isinstance(value, Sequence) and len(value) == nd + 1:  # review109 F4: (C, H, W)
            unbatched = (
                f"; an input of rank {nd + 2} is read as (N, C) and {nd} spatial "
                f"ax{'is' if nd == 1 else 'es'}, with no unbatched form: for one unbatched sample, "
                "add a batch axis (x[None])"
            )
        raise fail(
            op,
            f"{name}={value!r} is not accepted (accepted: an int or a sequence of {nd} ints, "
            f"one per spatial axis){unbatched}",
        )
    result = tuple(v for v in items if v is not None)
    if len(result) != nd:
        raise _type_fail(op, f"{name}={value!r} has a non-integer entry (accepted: ints >= {minimum})")
    if any(v < minimum for v in result):
        raise _fail(
            op,
            f"{name}={shown_value(value)} is out of range "
            f"(accepted: {name} >= {minimum} on every spatial axis)",
        )
    if any(v > window_parameter_limit(op) for v in result):
        raise _too_large(op, name, value)
    return result


def _real_param(op: str, name: str, value: object, dtype: np.dtype[np.generic]) -> float:
    """A real scalar parameter that is finite once cast to the kernel dtype."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise _type_fail(op, f"{name} must be a real number, got {name}={value!r}")
    with np.errstate(over="ignore", under="ignore"):
        cast = float(np.asarray(value).astype(dtype))
    if not math.isfinite(cast):
        raise _fail(op, f"{name}={value!r} is not finite in {dtype} (accepted: a finite real number)")
    return cast


def _eps(op: str, eps: object, dtype: np.dtype[np.generic]) -> tuple[float, float]:
    """``(eps as given, eps rounded to dtype)`` (the second is the value the kernels add), once
    eps is a real number, ``>= 0`` as given (as PyTorch, which refuses a negative eps whatever x's
    dtype) and finite in dtype."""
    rounded = _real_param(op, "eps", eps, dtype)
    assert isinstance(eps, numbers.Real)  # _real_param refuses the rest
    if float(eps) < 0.0:
        raise _fail(op, f"eps={eps!r} is negative (accepted: a finite eps >= 0)")
    return float(eps), rounded


def training_eps_fault(eps: float, rounded: float, dtype: str) -> str | None:
    """What is wrong with a ``batch_norm`` eps in training, or ``None``: ``eps`` as given,
    ``rounded`` to x's ``dtype`` (the value the kernels add). PyTorch's
    ``torch.nn.functional.batch_norm`` refuses ``eps <= 0`` in training ("batch_norm eps must be
    positive during training"), where a channel of zero batch variance would divide 0 by 0 (ATen
    then returns the bias, the reference NaN); an eps that rounds to 0 in x's dtype (``1e-50`` in
    float32) would do the same, so it is refused too. Evaluation accepts ``eps = 0`` (as torch
    2.13's ``torch.nn.functional.batch_norm``; torch 2.11's refuses it there too, "batch_norm eps
    must be positive, but got 0.0", so providers call the ATen op ``torch.batch_norm``). Shared
    with the native CUDA guards."""
    if rounded > 0.0:
        return None
    if eps > 0.0:
        return (
            f"eps={eps!r} rounds to 0 in {dtype}, so it is not positive in training (accepted: eps > 0 "
            f"in x's dtype in training, as PyTorch; eps >= 0 in eval)"
        )
    return (
        f"eps={eps!r} is not positive in training (accepted: eps > 0 in training, as PyTorch; "
        "eps >= 0 in eval)"
    )


def _slide(
    op: str,
    x: Array,
    kernel: tuple[int, ...],
    stride: tuple[int, ...],
    padding: tuple[int, ...],
    dilation: tuple[int, ...],
) -> Window:
    """The window of a forward convolution/pool over x's spatial axes (floor output sizes)."""
    spatial = tuple(x.shape[2:])
    check_numel(
        op, (*x.shape[:2], *(n + 2 * p for n, p in zip(spatial, padding, strict=True))), "padded input shape"
    )
    fault = span_fault(spatial, kernel, padding, dilation)
    if fault is not None:
        raise _fail(op, fault)
    return window_of(spatial, kernel, stride, padding, dilation)


def span_fault(
    spatial: Sequence[int], kernel: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
) -> str | None:
    """What is wrong with sliding ``kernel`` over the padded ``spatial`` extents, or ``None``: an
    effective kernel ``dilation * (kernel - 1) + 1`` larger than ``input + 2 * padding`` on an
    axis (the output would be empty; PyTorch refuses it). Shared with the native CUDA guards."""
    for axis, (n, k, p, d) in enumerate(zip(spatial, kernel, padding, dilation, strict=True)):
        effective = d * (k - 1) + 1
        if effective > n + 2 * p:
            return (
                f"effective kernel size {effective} (dilation*(kernel-1)+1) exceeds the padded input "
                f"size {n + 2 * p} (input {n} + 2*padding {p}) on spatial axis {axis}, so the output "
                "would be empty (accepted: effective kernel size <= padded input size)"
            )
    return None


def conv_span_fault(
    batch: int, spatial: Sequence[int], kernel: Sequence[int], padding: Sequence[int], dilation: Sequence[int]
) -> str | None:
    """The refusal of a convolution whose ``input + 2*padding - dilation*(kernel - 1) - 1`` on an
    axis is beyond 2**31 - 1 for a non-empty batch, else None: ATen's convolution computes it in
    32-bit ints, and past it returns a wrong (empty) shape or fails (review199 F1, review201 F1: a
    fuzz against the exact sizes separates the failing cases by it); an empty batch computes
    nothing and is right. Shared with the native CUDA guards."""
    if not batch:
        return None
    for axis, (n, k, p, d) in enumerate(zip(spatial, kernel, padding, dilation, strict=True)):
        span = n + 2 * p - d * (k - 1) - 1
        if span > MAX_WINDOW_PARAMETER:
            return (
                f"input + 2*padding - dilation*(kernel - 1) - 1 = {span} on spatial axis {axis} is too "
                f"large (accepted: at most {MAX_WINDOW_PARAMETER} = 2**31 - 1 for a non-empty batch; "
                "ATen's convolution computes it in 32-bit ints)"
            )
    return None


def transpose_fault(
    batch: int, axis: int, kernel: int, padding: int, dilation: int
) -> str | None:
    """The refusal of a transposed convolution that ATen's 32-bit size arithmetic wraps on
    ``axis``, else None: its ``dilation*(kernel - 1) + 1`` beyond 2**31 - 1 ("output size
    -4294967240" for a true 56: review201 F1), or, for a non-empty batch, ``2*padding`` beyond
    it: the backward's shape check takes its sizes as 32-bit ints and fails where the forward is
    right (review203 F2; review204 F1: of 2379 fuzzed geometries, the backward fails exactly
    when ``2*padding`` passes 2**31 - 1). Shared with the native CUDA guards."""
    effective = dilation * (kernel - 1) + 1
    if effective > MAX_WINDOW_PARAMETER:
        return (
            f"dilation*(kernel - 1) + 1 = {effective} on spatial axis {axis} is too large (accepted: at most "
            f"{MAX_WINDOW_PARAMETER} = 2**31 - 1; ATen's transposed convolution computes it in 32-bit ints)"
        )
    if batch and 2 * padding > MAX_WINDOW_PARAMETER:
        return (
            f"2*padding = {2 * padding} on spatial axis {axis} is too large (accepted: at most "
            f"{MAX_WINDOW_PARAMETER} = 2**31 - 1 for a non-empty batch; the backward of ATen's transposed "
            "convolution computes it in 32-bit ints)"
        )
    return None


def window_of(
    spatial: Sequence[int],
    kernel: Sequence[int],
    stride: Sequence[int],
    padding: Sequence[int],
    dilation: Sequence[int],
) -> Window:
    """The :class:`Window` of a geometry :func:`span_fault` accepts (floor output extents)."""
    output = tuple(
        (n + 2 * p - (d * (k - 1) + 1)) // s + 1
        for n, k, s, p, d in zip(spatial, kernel, stride, padding, dilation, strict=True)
    )
    return Window(tuple(kernel), tuple(stride), tuple(padding), tuple(dilation), tuple(spatial), output)


def _groups(op: str, groups: object, c_in: int) -> int:
    g = _int_param(op, "groups", groups, 1)
    if c_in % g:
        raise _fail(
            op, f"groups={g} does not divide the input channels C_in={c_in} (accepted: a divisor of C_in)"
        )
    return g


def _bias(op: str, b: object, x: Array, c_out: int) -> None:
    if b is not None:
        _operand(op, "b", b, x, (c_out,))


def check_conv(
    x: object,
    w: object,
    b: object = None,
    *,
    stride: object = 1,
    padding: object = 0,
    dilation: object = 1,
    groups: object = 1,
) -> Window:
    """Guard of ``conv`` (``torch.nn.functional.conv1d/2d/3d`` argument rules).

    Accepted: x ``(N, C_in, *spatial)`` with 1-3 spatial axes, w ``(C_out, C_in/groups, *kernel)``
    of the same rank, b ``(C_out,)`` or None, one float dtype; ``groups >= 1`` dividing C_in and
    C_out; stride >= 1, padding >= 0, dilation >= 1 (int or one per axis); effective kernel no
    larger than the padded input; ``input + 2*padding - dilation*(kernel - 1) - 1`` at most
    2**31 - 1 when N > 0 (ATen computes it in 32-bit ints); padded input and output element counts
    within int64.  Empty
    axes: N may be 0, and then the spatial extents too (as PyTorch); C_in and every axis of w
    and b are >= 1 (C_in = 0 is refused although torch returns a 0-channel result).
    Returns the :class:`Window`.  Raises :class:`GuardError`.
    """
    op = "conv"
    xs = _channel_first(op, x, convolution=True)
    ws = _weight(op, w, xs, "(C_out, C_in/groups, *kernel)")
    g = _groups(op, groups, xs.shape[1])
    c_out = ws.shape[0]
    if c_out % g:
        raise _fail(
            op, f"groups={g} does not divide the output channels C_out={c_out} (accepted: a divisor of C_out)"
        )
    if ws.shape[1] != xs.shape[1] // g:
        raise _fail(
            op,
            f"w.shape[1]={ws.shape[1]} does not match C_in/groups={xs.shape[1] // g} "
            "(accepted: w of shape (C_out, C_in/groups, *kernel))",
        )
    _bias(op, b, xs, c_out)
    nd = xs.ndim - 2
    window = _slide(
        op,
        xs,
        tuple(ws.shape[2:]),
        _per_axis(op, "stride", stride, nd, 1),
        _per_axis(op, "padding", padding, nd, 0),
        _per_axis(op, "dilation", dilation, nd, 1),
    )
    fault = conv_span_fault(xs.shape[0], window.input, window.kernel, window.padding, window.dilation)
    if fault is not None:
        raise _fail(op, fault)
    _check_output(op, (xs.shape[0], c_out, *window.output), xs.dtype.itemsize)
    return window


def check_conv_transpose(
    x: object,
    w: object,
    b: object = None,
    *,
    stride: object = 1,
    padding: object = 0,
    output_padding: object = 0,
    dilation: object = 1,
    groups: object = 1,
) -> Window:
    """Guard of ``conv_transpose`` (``torch.nn.functional.conv_transpose1d/2d/3d`` rules).

    Accepted: x ``(N, C_in, *spatial)`` with 1-3 spatial axes, w ``(C_in, C_out/groups, *kernel)``
    of the same rank, b ``(C_out,)`` or None, one float dtype; ``groups >= 1`` dividing C_in;
    stride >= 1, padding >= 0, dilation >= 1, ``0 <= output_padding < max(stride, dilation)``,
    ``dilation*(kernel - 1) + 1``, and for N > 0 ``2*padding``, at most 2**31 - 1 (ATen
    computes them in 32-bit ints); a non-empty output
    ``(n-1)*stride - 2*padding + dilation*(kernel-1) + output_padding + 1``; element counts
    within int64.  Empty axes: N may be 0, and then the spatial extents too (as PyTorch); C_in
    and every axis of w and b are >= 1.  Returns the :class:`Window` of the
    adjoint convolution (``input`` = this op's output extent, ``output`` = x's spatial extent).
    Raises :class:`GuardError`.
    """
    op = "conv_transpose"
    xs = _channel_first(op, x, convolution=True)
    ws = _weight(op, w, xs, "(C_in, C_out/groups, *kernel)")
    if ws.shape[0] != xs.shape[1]:
        raise _fail(
            op,
            f"w.shape[0]={ws.shape[0]} does not match the input channels C_in={xs.shape[1]} "
            "(accepted: w of shape (C_in, C_out/groups, *kernel))",
        )
    g = _groups(op, groups, xs.shape[1])
    c_out = ws.shape[1] * g
    _bias(op, b, xs, c_out)
    nd = xs.ndim - 2
    kernel = tuple(ws.shape[2:])
    stride_t = _per_axis(op, "stride", stride, nd, 1)
    padding_t = _per_axis(op, "padding", padding, nd, 0)
    extra = _per_axis(op, "output_padding", output_padding, nd, 0)
    dilation_t = _per_axis(op, "dilation", dilation, nd, 1)
    if any(e >= max(s, d) for e, s, d in zip(extra, stride_t, dilation_t, strict=True)):
        raise _fail(
            op,
            f"output_padding={output_padding!r} is out of range for stride={stride!r} and "
            f"dilation={dilation!r} (accepted: output_padding < max(stride, dilation) on every axis)",
        )
    output = []
    for axis, (n, k, s, p, e, d) in enumerate(
        zip(xs.shape[2:], kernel, stride_t, padding_t, extra, dilation_t, strict=True)
    ):
        fault = transpose_fault(xs.shape[0], axis, k, p, d)
        if fault is not None:
            raise _fail(op, fault)
        size = (n - 1) * s - 2 * p + d * (k - 1) + e + 1
        if size < 1:
            raise _fail(
                op,
                f"output size {size} on spatial axis {axis} is empty: (input {n} - 1)*stride {s} "
                f"- 2*padding {p} + dilation {d}*(kernel {k} - 1) + output_padding {e} + 1 "
                "(accepted: output size >= 1)",
            )
        output.append(size)
    window = Window(kernel, stride_t, padding_t, dilation_t, tuple(output), tuple(xs.shape[2:]))
    _check_output(op, (xs.shape[0], c_out, *window.input), xs.dtype.itemsize)
    return window


def _check_output(op: str, shape: tuple[int, ...], itemsize: int) -> None:
    """Refuse a convolution's output shape whose element count overflows int64, or that numpy
    cannot lay out: an empty batch (0 elements) with extents whose product passes int64 bytes
    (numpy's bare "array is too big"; torch returns an empty tensor, the native CUDA guard
    refuses it too, review242 F3)."""
    check_numel(op, shape, "output shape")
    check_layout_size(op, shape, "output shape", itemsize)


def _pool(
    op: str, x: object, kernel_size: object, stride: object, padding: object, dilation: object
) -> tuple[Array, Window]:
    xs = _channel_first(op, x, convolution=False)
    nd = xs.ndim - 2
    kernel = _per_axis(op, "kernel_size", kernel_size, nd, 1)
    stride_t = kernel if stride is None else _per_axis(op, "stride", stride, nd, 1)
    padding_t = _per_axis(op, "padding", padding, nd, 0)
    if any(p > k // 2 for p, k in zip(padding_t, kernel, strict=True)):
        raise _fail(
            op,
            f"padding={padding!r} is more than half of kernel_size={kernel_size!r} "
            "(accepted: padding <= kernel_size // 2 on every spatial axis, as PyTorch pools)",
        )
    window = _slide(op, xs, kernel, stride_t, padding_t, _per_axis(op, "dilation", dilation, nd, 1))
    _every_window_reads_input(op, window)
    check_numel(op, (*xs.shape[:2], *window.output), "output shape")
    return xs, window


def _every_window_reads_input(op: str, window: Window) -> None:
    fault = padding_only_fault(window)
    if fault is not None:
        raise _fail(op, fault)


def padding_only_fault(window: Window) -> str | None:
    """What is wrong with ``window``, or ``None``: a window made of padding only (PyTorch's
    max_pool backward writes outside the input there). With padding <= kernel // 2 this needs
    dilation > input size, so only such axes (which then have at most a few windows) are scanned.
    Shared with the native CUDA guards."""
    for axis, (n, k, s, p, d, size) in enumerate(
        zip(
            window.input,
            window.kernel,
            window.stride,
            window.padding,
            window.dilation,
            window.output,
            strict=True,
        )
    ):
        if d <= n:
            continue
        for o in range(size):
            if not any(0 <= o * s + t * d - p < n for t in range(k)):
                return (
                    f"window {o} on spatial axis {axis} covers only padding (input size {n}, kernel {k}, "
                    f"dilation {d}, padding {p}) (accepted: geometries where every window reads an input "
                    "element)"
                )
    return None


def check_max_pool(
    x: object, *, kernel_size: object, stride: object = None, padding: object = 0, dilation: object = 1
) -> Window:
    """Guard of ``max_pool`` (``torch.nn.functional.max_pool1d/2d/3d`` rules, floor mode).

    Accepted: x ``(N, C, *spatial)`` float32/float64 with 1-3 spatial axes, N >= 0 and every
    other extent >= 1 (as PyTorch pools); kernel_size >= 1,
    stride >= 1 (None = kernel_size), dilation >= 1, ``0 <= padding <= kernel_size // 2`` (int or
    one per axis); effective kernel no larger than the padded input; every window reading at
    least one input element; counts within int64.  Returns the :class:`Window`.
    Raises :class:`GuardError`.
    """
    return _pool("max_pool", x, kernel_size, stride, padding, dilation)[1]


def _unpadded_input_holds_kernel(op: str, x: Array, window: Window) -> None:
    fault = unpadded_input_fault(window, shown=str(x.shape))
    if fault is not None:
        raise _fail(op, fault)


def unpadded_input_fault(window: Window, *, shown: str) -> str | None:
    """PyTorch's 3-d average pool rule, for x whose shape displays as ``shown``: every unpadded
    spatial extent at least the kernel's (``pool3d_shape_check(..., check_input_size=true)`` in
    ATen's ``avg_pool3d``, CPU
    and CUDA; its message reads "input image (T: .. H: .. W: ..) smaller than kernel size"). The
    1-d and 2-d average pools and every max pool accept a kernel larger than the unpadded input
    as long as it fits the padded one. ``None`` when it holds; shared with the native CUDA guards."""
    for axis, (n, k) in enumerate(zip(window.input, window.kernel, strict=True)):
        if n < k:
            return (
                f"x of shape {shown} has spatial extents {window.input}, smaller than kernel_size "
                f"{window.kernel} on spatial axis {axis} ({n} < {k}) (accepted for a 3-d average "
                "pool: every unpadded spatial extent >= kernel_size, padding not counted, as "
                "torch.nn.functional.avg_pool3d)"
            )
    return None


def check_avg_pool(x: object, *, kernel_size: object, stride: object = None, padding: object = 0) -> Window:
    """Guard of ``avg_pool`` (``torch.nn.functional.avg_pool1d/2d/3d`` rules, floor mode).

    Accepted as :func:`check_max_pool` without dilation; with 3 spatial axes also every unpadded
    spatial extent at least the kernel size on its axis (torch's ``avg_pool3d`` refuses smaller
    inputs, padding or not; ``avg_pool1d/2d`` need only the padded input to hold the kernel).
    Returns the :class:`Window`.  Raises :class:`GuardError`.
    """
    xs, window = _pool("avg_pool", x, kernel_size, stride, padding, 1)
    if len(window.input) == 3:
        _unpadded_input_holds_kernel("avg_pool", xs, window)
    return window


def check_smooth_max_pool(
    x: object, *, beta: object, kernel_size: object, stride: object = None, padding: object = 0
) -> Window:
    """Guard of ``smooth_max_pool``: the window rules of :func:`check_avg_pool` plus ``beta``
    real, finite and nonzero in x's dtype.  Returns the :class:`Window`.  Raises :class:`GuardError`.
    """
    op = "smooth_max_pool"
    xs, window = _pool(op, x, kernel_size, stride, padding, 1)
    if _real_param(op, "beta", beta, xs.dtype) == 0.0:
        raise _fail(op, f"beta={beta!r} is zero in {xs.dtype} (accepted: a finite nonzero beta)")
    return window


def normalized_ndim_fault(given: object, ndim: int | None, shape: tuple[int, ...]) -> str | None:
    """What is wrong with ``layer_norm``'s ``normalized_ndim`` (``given``, ``ndim`` its integer
    value or None) for ``x`` of ``shape``, or None: an ``x`` of rank 0 is named as such (review236
    F4: the accepted range was the empty ``[1, 0]``), else ``ndim`` outside ``[1, rank]``."""
    if not shape:
        return "x has rank 0, shape () (accepted: rank >= 1; normalized_ndim counts x's trailing axes)"
    if ndim is None or not 1 <= ndim <= len(shape):
        return (
            f"normalized_ndim={given!r} is out of range for x of shape {shape} "
            f"(accepted: an int in [1, {len(shape)}])"
        )
    return None


def check_layer_norm(
    x: object, weight: object = None, bias: object = None, *, normalized_ndim: object = 1, eps: object = 1e-5
) -> tuple[int, ...]:
    """Guard of ``layer_norm`` (``torch.nn.functional.layer_norm`` rules).

    Accepted: x float32/float64 of rank >= 1, any axis possibly empty (as PyTorch: the result
    is then empty); ``1 <= normalized_ndim <= x.ndim``; weight and bias None or of shape
    ``x.shape[-normalized_ndim:]`` in x's dtype; eps finite >= 0.
    Returns the normalised axes (the trailing ``normalized_ndim`` axes).  Raises :class:`GuardError`.
    """
    op = "layer_norm"
    xs = _array(op, "x", x)
    k = _as_int(normalized_ndim)
    fault = normalized_ndim_fault(normalized_ndim, k, xs.shape)
    if fault is not None:
        raise _fail(op, fault)
    assert k is not None
    axes = tuple(range(xs.ndim - k, xs.ndim))
    affine_shape = tuple(xs.shape[a] for a in axes)
    for name, value in (("weight", weight), ("bias", bias)):
        if value is not None:
            _operand(op, name, value, xs, affine_shape)
    _eps(op, eps, xs.dtype)
    return axes


def _batch_channels(op: str, x: object, stats: Sequence[tuple[str, object]]) -> Array:
    xs = _array(op, "x", x)
    if xs.ndim < 2:
        raise _fail(op, f"x has rank {xs.ndim} with shape {xs.shape} (accepted: rank >= 2, (N, C, *spatial))")
    for name, value in stats:
        if value is not None:
            _operand(op, name, value, xs, (xs.shape[1],))
    return xs


def _batch_count(op: str, xs: Array) -> None:
    fault = batch_count_fault(tuple(xs.shape))
    if fault is not None:
        raise _fail(op, fault)


def batch_count_fault(shape: tuple[int, ...], *, shown: str | None = None) -> str | None:
    """Exactly one value per channel in training, for x of ``shape`` ``(N, C, *spatial)``, is
    refused (PyTorch's rule: none is accepted, the statistics of an empty channel are never
    read); ``None`` otherwise. ``shown`` displays the shape (default: the tuple). Shared with the
    native CUDA guards."""
    count = math.prod(shape[:1] + shape[2:])
    if count == 1:
        return (
            f"batch statistics of x with shape {shown or shape} have {count} value per channel "
            "(accepted: N * prod(spatial) >= 2 values per channel, or 0 for an empty batch, as "
            "PyTorch in training)"
        )
    return None


def check_batch_norm(
    x: object,
    weight: object,
    bias: object,
    running_mean: object,
    running_var: object,
    *,
    training: object,
    eps: object = 1e-5,
) -> tuple[int, ...]:
    """Guard of ``batch_norm`` (``torch.nn.functional.batch_norm`` rules, channel axis 1).

    Accepted: x ``(N, C, *spatial)`` float32/float64 of rank >= 2; weight, bias, running_mean,
    running_var None or ``(C,)`` in x's dtype; ``training`` a bool; in training not exactly 1
    value per channel (``N * prod(spatial)`` may be 0: an empty batch or spatial extent gives an
    empty result, as PyTorch); ``C = 0`` only without weight and bias (PyTorch raises there);
    in eval both running statistics given; eps >= 0 and finite in x's dtype, and > 0 in x's
    dtype in training (:func:`training_eps_fault`).
    Returns the reduced axes ``(0, 2, 3, ...)``.  Raises :class:`GuardError`.
    """
    op = "batch_norm"
    named = (("weight", weight), ("bias", bias), ("running_mean", running_mean), ("running_var", running_var))
    xs = _batch_channels(op, x, named)
    if xs.shape[1] == 0 and (weight is not None or bias is not None):
        raise _fail(
            op,
            f"x has shape {xs.shape} with 0 channels and an affine weight or bias (accepted: C >= 1, "
            "or C = 0 with weight and bias None, as PyTorch)",
        )
    if not isinstance(training, bool):
        raise _type_fail(op, f"training must be a bool, got training={training!r}")
    if training:
        _batch_count(op, xs)
    elif running_mean is None or running_var is None:
        raise _fail(
            op,
            f"eval mode (training=False) normalises with the running statistics, got "
            f"running_mean={'None' if running_mean is None else 'given'}, "  # review220 F4: not "array"
            f"running_var={'None' if running_var is None else 'given'} (accepted: both given, of shape "
            f"({xs.shape[1]},))",
        )
    given, rounded = _eps(op, eps, xs.dtype)
    # the dtype's name is formatted only for a refusal (review155 L4: a few µs of every step)
    fault = training_eps_fault(given, rounded, str(xs.dtype)) if training and rounded <= 0.0 else None
    if fault is not None:
        raise _fail(op, fault)
    return (0, *range(2, xs.ndim))


def check_batch_norm_running_stats(
    x: object, running_mean: object, running_var: object, *, momentum: object = 0.1
) -> tuple[int, ...]:
    """Guard of ``batch_norm_running_stats``: x as :func:`check_batch_norm` in training (no
    values per channel accepted: the update then leaves the statistics unchanged), both running
    statistics ``(C,)`` arrays in x's dtype, ``0 <= momentum <= 1``.
    Returns the reduced axes.  Raises :class:`GuardError`.
    """
    op = "batch_norm"
    if running_mean is None or running_var is None:
        raise _fail(op, "the running-statistics update needs running_mean and running_var (accepted: arrays)")
    xs = _batch_channels(op, x, (("running_mean", running_mean), ("running_var", running_var)))
    _batch_count(op, xs)
    if not 0.0 <= _real_param(op, "momentum", momentum, xs.dtype) <= 1.0:
        raise _fail(op, f"momentum={momentum!r} is out of range (accepted: 0 <= momentum <= 1)")
    return (0, *range(2, xs.ndim))
