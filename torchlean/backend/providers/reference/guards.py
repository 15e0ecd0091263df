"""Runtime guards of the ``reference`` kernels (the capsules' ``runtimeGuard`` evidence).

Every reference kernel in :mod:`torchlean.backend.providers.reference.kernels` calls its
``check_<op_label>`` guard before computing anything, and every guard calls
:func:`check_canonical_layout` on each array input.  A guard refuses bad input with
:class:`~torchlean.backend.errors.GuardError`; the message starts with the op label, names the
offending value and says what is accepted.  Guards refuse: arrays that are not numpy arrays of
the canonical dtypes, dtype mismatches between operands (no silent promotion), non-broadcastable
or mismatched shapes, bad axes and permutations, out-of-range indices and slices, element counts
that overflow int64, non-boolean masks (:class:`~torchlean.backend.errors.GuardTypeError`, a
GuardError that is also a ``TypeError``), and out-of-domain scalar parameters.

Each ``check_<op_label>`` returns what the kernel needs next: the output shape, or the
normalised axes/slices where the op has them (documented per guard).

Source: the reference capsules' shape and layout obligations (anchor-backend.md §4.1-4.2) and the
hard-mask rules of anchor-runtime.md §5.2; shapes follow the PyTorch op each kernel mirrors.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Literal

import numpy as np
import numpy.typing as npt

from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.reference._fold import Array

Role = Literal["float", "data", "index", "mask"]
"""What an array input is: float data (float32/float64), the data of the shape ops (float32,
float64, int64 or bool: they move values without arithmetic), int64 indices, or a boolean mask."""

INT64_MAX = 2**63 - 1
_FLOAT_DTYPES = (np.dtype(np.float32), np.dtype(np.float64))
_DATA_DTYPES = (*_FLOAT_DTYPES, np.dtype(np.int64), np.dtype(np.bool_))
_ACCEPTED = {
    "float": "float32 or float64",
    "data": "float32, float64, int64 or bool",
    "index": "int64",
    "mask": "bool",
}

Shape = tuple[int, ...]


def _fail(op: str, message: str) -> GuardError:
    return GuardError(f"{op}: {message}")


def _shape_text(shape: Sequence[int]) -> str:
    return "(" + ", ".join(str(s) for s in shape) + ("," if len(shape) == 1 else "") + ")"


def check_canonical_layout(x: object, *, op: str, name: str, role: Role = "float") -> Array:
    """Refuse an array input that is not in TorchLean's canonical CPU tensor layout.

    Accepted: a ``numpy.ndarray`` (any strides) whose dtype is float32 or float64 for float data
    (``role="float"``), also int64 and bool for the shape ops' data (``role="data"``), int64 for indices
    (``role="index"``), bool for masks (``role="mask"``).
    A float 0/1 mask is refused with the hint that it is an additive bias, not a mask; an integer
    one with the hint to convert it. Returns ``x`` unchanged. Raises
    :class:`GuardError`; for a mask of another dtype, its subclass :class:`GuardTypeError` (also a
    ``TypeError``, as the specification's refusal).
    """
    if not isinstance(x, np.ndarray):
        raise _fail(
            op,
            f"{name} must be a numpy.ndarray in TorchLean's canonical tensor layout; "
            f"got {type(x).__name__} (accepted: numpy.ndarray of {_ACCEPTED[role]})",
        )
    dtype = x.dtype
    if role == "float":
        ok = dtype in _FLOAT_DTYPES
    elif role == "data":
        ok = dtype in _DATA_DTYPES
    elif role == "index":
        ok = dtype == np.dtype(np.int64)
    else:
        ok = dtype == np.dtype(np.bool_)
    if not ok:
        message = f"{op}: {name} has dtype {dtype}; accepted: {_ACCEPTED[role]}"
        if role == "mask" and dtype.kind == "f":
            raise GuardTypeError(
                message + "; a mask must be boolean (True = allowed, False = blocked): a float array "
                "is an additive bias, not a mask (convert torch's additive mask, 0 = attend and -inf = "
                "blocked, with mask == 0, and a 0/1 keep-mask, 1 = attend, with mask == 1; or add the "
                "bias to the scores)"
            )
        if role == "mask" and dtype.kind in "iu":
            raise GuardTypeError(
                message + "; a mask must be boolean (True = allowed, False = blocked; convert 0/1 "
                "integers with mask.astype(bool))"
            )
        if role == "mask":
            raise GuardTypeError(message + "; a mask must be boolean (True = allowed, False = blocked)")
        raise GuardError(message)
    return x


def _same_dtype(op: str, arrays: Sequence[tuple[str, Array]]) -> None:
    first_name, first = arrays[0]
    for name, arr in arrays[1:]:
        if arr.dtype != first.dtype:
            raise _fail(
                op,
                f"{name} has dtype {arr.dtype} but {first_name} has dtype {first.dtype}; "
                "torchlean kernels do not promote dtypes, whatever the provider (accepted: operands "
                "of one dtype)",
            )


def check_numel(op: str, shape: Sequence[int], what: str) -> None:
    """Refuse a shape whose element count (product computed with Python ints) exceeds int64."""
    count = 1
    for s in shape:
        count *= int(s)
    if count > INT64_MAX:
        raise _fail(
            op,
            f"{what} {_shape_text(shape)} has {count} elements, which overflows int64 "
            f"(accepted: at most {INT64_MAX} elements)",
        )


def check_layout_size(op: str, shape: Sequence[int], what: str, itemsize: int) -> None:
    """Refuse a target shape (reshape, broadcast) that numpy and torch cannot lay out: an extent
    above int64 (also beside a 0 extent, where the element count is 0 and :func:`check_numel`
    passes), or extents whose product, leaving out the 0 extents, times ``itemsize`` overflows
    int64 bytes (the row-major strides, which numpy and torch compute for a zero-size array too:
    numpy refuses ``(0, 2**60)`` of float64, "array is too big"). Called before the kernel runs,
    so both CPU providers refuse alike."""
    span = itemsize
    for s in shape:
        if s > INT64_MAX:
            raise _fail(
                op,
                f"{what} {_shape_text(shape)} has extent {s}, which overflows int64 (accepted: "
                f"extents at most {INT64_MAX})",
            )
        if s:
            span *= s
    if span > INT64_MAX:
        raise _fail(
            op,
            f"{what} {_shape_text(shape)} of {itemsize}-byte elements spans {span} bytes (its nonzero "
            f"extents times {itemsize}, what its strides address), which overflows int64 (accepted: "
            f"at most {INT64_MAX} bytes)",
        )


def _broadcast(op: str, named: Sequence[tuple[str, Sequence[int]]]) -> Shape:
    first = tuple(named[0][1])
    if all(tuple(shape) == first for _, shape in named[1:]):  # equal shapes: nothing to broadcast
        check_numel(op, first, "broadcast result shape")
        return first
    result: list[int] = []
    for _, shape in named:
        shape = list(shape)
        width = max(len(result), len(shape))
        left = [1] * (width - len(result)) + result
        right = [1] * (width - len(shape)) + shape
        merged: list[int] = []
        for x, y in zip(left, right, strict=True):
            if x != y and x != 1 and y != 1:
                shapes = ", ".join(f"{n} {_shape_text(s)}" for n, s in named)
                raise _fail(
                    op,
                    f"shapes are not broadcastable: {shapes} (accepted: shapes that agree on "
                    "each trailing axis or have extent 1 there, numpy/PyTorch broadcasting)",
                )
            merged.append(y if x == 1 else x)
        result = merged
    shape_out = tuple(result)
    check_numel(op, shape_out, "broadcast result shape")
    return shape_out


def _int(op: str, name: str, value: object) -> int:
    if type(value) is int:  # the common case, without the numbers.Integral ABC check
        return value
    if isinstance(value, bool) or not isinstance(value, numbers.Integral):
        raise GuardTypeError(f"{op}: {name} must be an integer; got {value!r} of type {type(value).__name__}")
    return int(value)


def _real(op: str, name: str, value: object, *, finite: bool) -> float:
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise GuardTypeError(
            f"{op}: {name} must be a real number; got {value!r} of type {type(value).__name__}"
        )
    result = float(value)
    if math.isnan(result) or (finite and not math.isfinite(result)):
        accepted = "a finite real number" if finite else "a real number or +-inf, not NaN"
        raise _fail(op, f"{name} = {result!r} is not accepted (accepted: {accepted})")
    return result


def axis_in_range(op: str, name: str, axis: int, ndim: int) -> int:
    """``axis`` of a rank-``ndim`` input normalised to ``[0, ndim)``; out-of-range axes are refused,
    never wrapped (the rule and wording :mod:`torchlean.functional` applies before dispatch too).

    Raises:
        GuardError: ``<op>: <name> 5 is out of range for a rank-2 input (accepted: an integer in
            [-2, 1])``; every axis of a rank-0 input.
    """
    if not -ndim <= axis < ndim:
        accepted = f"an integer in [{-ndim}, {ndim - 1}]" if ndim > 0 else "none: the input has rank 0"
        raise _fail(op, f"{name} {axis} is out of range for a rank-{ndim} input (accepted: {accepted})")
    return axis % ndim


def _axis(op: str, axis: object, ndim: int, *, name: str = "axis") -> int:
    return axis_in_range(op, name, _int(op, name, axis), ndim)


def _shape_param(op: str, name: str, shape: object) -> Shape:
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise _fail(op, f"{name} must be a sequence of non-negative integers; got {shape!r}")
    dims = tuple(_int(op, f"{name} entry", s) for s in shape)
    if any(s < 0 for s in dims):
        raise _fail(op, f"{name} {list(dims)} has a negative extent (accepted: extents >= 0)")
    check_numel(op, dims, name)
    return dims


def _float_input(op: str, name: str, x: object) -> Array:
    return check_canonical_layout(x, op=op, name=name, role="float")


def _data_input(op: str, name: str, x: object) -> Array:
    """An input of a shape op: float32, float64, int64 or bool (a label tensor or a mask may be
    sliced)."""
    return check_canonical_layout(x, op=op, name=name, role="data")


def check_cotangent(
    op: str, g: object, shape: Sequence[int], dtype: np.dtype[np.generic], *, name: str = "cotangent"
) -> Array:
    """Refuse a VJP cotangent (or saved output) whose layout, shape or dtype differs from the output's.

    Accepted: an ndarray of exactly ``shape`` and ``dtype``.  Raises :class:`GuardError`.
    """
    arr = _float_input(op, name, g)
    if arr.shape != tuple(shape) or arr.dtype != dtype:
        raise _fail(
            op,
            f"{name} has shape {_shape_text(arr.shape)} and dtype {arr.dtype}; accepted: the "
            f"output's shape {_shape_text(shape)} and dtype {dtype}",
        )
    return arr


# --------------------------------------------------------------------------------- pointwise ops


def _check_unary(op: str, x: object) -> Shape:
    arr = _float_input(op, "input x", x)
    return tuple(arr.shape)


def _check_binary(op: str, a: object, b: object) -> Shape:
    left = _float_input(op, "operand a", a)
    right = _float_input(op, "operand b", b)
    if left.dtype is not right.dtype:  # one dtype object is one dtype; else compare them
        _same_dtype(op, [("operand a", left), ("operand b", right)])
    shape = left.shape
    if shape == right.shape:  # _broadcast's equal-shape case, without building its list
        check_numel(op, shape, "broadcast result shape")
        return shape
    return _broadcast(op, [("a", shape), ("b", right.shape)])


def check_add(a: object, b: object) -> Shape:
    """Guard of ``add``: float arrays of one dtype, broadcastable shapes. Returns the output shape."""
    return _check_binary("add", a, b)


def check_sub(a: object, b: object) -> Shape:
    """Guard of ``sub``: float arrays of one dtype, broadcastable shapes. Returns the output shape."""
    return _check_binary("sub", a, b)


def check_mul(a: object, b: object) -> Shape:
    """Guard of ``mul``: float arrays of one dtype, broadcastable shapes. Returns the output shape."""
    return _check_binary("mul", a, b)


def check_max(a: object, b: object) -> Shape:
    """Guard of elementwise ``max``: as :func:`check_add`. Returns the output shape."""
    return _check_binary("max", a, b)


def check_min(a: object, b: object) -> Shape:
    """Guard of elementwise ``min``: as :func:`check_add`. Returns the output shape."""
    return _check_binary("min", a, b)


def check_scale(x: object, *, factor: object) -> Shape:
    """Guard of ``scale``: a float array and a finite real ``factor``. Returns the output shape."""
    shape = _check_unary("scale", x)
    _real("scale", "factor", factor, finite=True)
    return shape


def check_clamp(x: object, *, lo: object, hi: object) -> Shape:
    """Guard of ``clamp``: a float array, real bounds (+-inf allowed, NaN refused), ``lo <= hi``."""
    shape = _check_unary("clamp", x)
    low = _real("clamp", "lo", lo, finite=False)
    high = _real("clamp", "hi", hi, finite=False)
    if low > high:
        raise _fail("clamp", f"lo = {low!r} is greater than hi = {high!r} (accepted: lo <= hi)")
    return shape


def check_abs(x: object) -> Shape:
    """Guard of ``abs``: a float array. Returns the output shape."""
    return _check_unary("abs", x)


def check_sqrt(x: object) -> Shape:
    """Guard of ``sqrt``: a float array. Returns the output shape."""
    return _check_unary("sqrt", x)


def check_relu(x: object) -> Shape:
    """Guard of ``relu``: a float array. Returns the output shape."""
    return _check_unary("relu", x)


def check_gelu(x: object) -> Shape:
    """Guard of ``gelu``: a float array. Returns the output shape."""
    return _check_unary("gelu", x)


def check_sigmoid(x: object) -> Shape:
    """Guard of ``sigmoid``: a float array. Returns the output shape."""
    return _check_unary("sigmoid", x)


def check_tanh(x: object) -> Shape:
    """Guard of ``tanh``: a float array. Returns the output shape."""
    return _check_unary("tanh", x)


def check_softplus(x: object) -> Shape:
    """Guard of ``softplus``: a float array. Returns the output shape."""
    return _check_unary("softplus", x)


def check_exp(x: object) -> Shape:
    """Guard of ``exp``: a float array. Returns the output shape."""
    return _check_unary("exp", x)


def check_log(x: object) -> Shape:
    """Guard of ``log``: a float array. Returns the output shape."""
    return _check_unary("log", x)


def check_sin(x: object) -> Shape:
    """Guard of ``sin``: a float array. Returns the output shape."""
    return _check_unary("sin", x)


def check_cos(x: object) -> Shape:
    """Guard of ``cos``: a float array. Returns the output shape."""
    return _check_unary("cos", x)


def check_inv(x: object) -> Shape:
    """Guard of ``inv``: a float array. Returns the output shape."""
    return _check_unary("inv", x)


def check_safe_log(x: object, *, eps: object) -> Shape:
    """Guard of ``safe_log``: a float array and a finite ``eps > 0`` that stays positive and
    finite in x's dtype, as the kernels use it (``1e-50`` rounds to 0 in float32, where
    ``log(softplus(x) + eps)`` would be ``-inf`` once ``softplus(x)`` underflows; ``1e39`` rounds to
    ``inf``). Returns the output shape."""
    arr = _float_input("safe_log", "input x", x)
    value = _real("safe_log", "eps", eps, finite=True)
    fault = safe_log_eps_fault(value, arr.dtype)
    if fault is not None:
        raise _fail("safe_log", fault)
    return tuple(arr.shape)


def safe_log_eps_fault(value: float, dtype: npt.DTypeLike) -> str | None:
    """What is wrong with a finite ``safe_log`` eps for x of ``dtype``, or ``None``: it must be
    positive as given and stay positive and finite once rounded to ``dtype`` (the value the
    kernels add). Shared with the native CUDA guards."""
    if value <= 0.0:
        return f"eps = {value!r} is not accepted (accepted: a finite eps > 0)"
    kind = np.dtype(dtype)
    with np.errstate(over="ignore", under="ignore"):
        cast = float(np.asarray(value, dtype=kind))
    if 0.0 < cast < math.inf:
        return None
    info = np.finfo(kind)
    return (
        f"eps = {value!r} rounds to {cast!r} in x's dtype {kind} (accepted: a finite eps > 0 "
        f"that stays positive and finite in {kind}: about "
        f"[{float(info.smallest_subnormal):.7g}, {float(info.max):.7g}])"
    )


# ------------------------------------------------------------------------ normalisations (axis)


def _softmax_axis(op: str, arr: Array, axis: object) -> int:
    # A rank-0 input is treated as one row of length 1 (torch accepts dim 0 or -1 there).
    return _axis(op, axis, max(arr.ndim, 1))


def check_softmax(x: object, *, axis: object) -> int:
    """Guard of ``softmax``: a float array and an axis in range. Returns the normalised axis.

    A rank-0 input accepts ``axis`` 0 or -1 (one row of length 1).
    """
    arr = _float_input("softmax", "input x", x)
    return _softmax_axis("softmax", arr, axis)


def check_log_softmax(x: object, *, axis: object) -> int:
    """Guard of ``log_softmax``: as :func:`check_softmax`. Returns the normalised axis."""
    arr = _float_input("log_softmax", "input x", x)
    return _softmax_axis("log_softmax", arr, axis)


def check_hard_masked_softmax(x: object, mask: object, *, axis: object) -> int:
    """Guard of ``hard_masked_softmax``: float scores, a boolean mask broadcastable to them.

    The mask must broadcast *to* the scores' shape (it never enlarges the output).  A float
    0/1 mask is refused: it is an additive bias, not a mask.  Returns the normalised axis.
    """
    op = "hard_masked_softmax"
    scores = _float_input(op, "scores x", x)  # review223 F6: the argument's name too
    allowed = check_canonical_layout(mask, op=op, name="mask", role="mask")
    check_mask_shape(op, scores.shape, allowed.shape)
    return _softmax_axis(op, scores, axis)


def check_mask_shape(op: str, scores: Sequence[int], mask: Sequence[int]) -> None:
    """Refuse a ``mask`` shape that does not broadcast *to* the ``scores`` shape (the shape rule of
    :func:`check_hard_masked_softmax`, which the runtime also applies to array data before copying
    it: a broadcast view declaring 2**40 entries was copied first, review240 F4).

    Raises:
        GuardError: ``shapes are not broadcastable: ...`` or ``mask ... does not broadcast to the
            scores' shape ...``.
    """
    if _broadcast(op, [("scores", scores), ("mask", mask)]) != tuple(scores):
        raise _fail(
            op,
            f"mask {_shape_text(mask)} does not broadcast to the scores' shape "
            f"{_shape_text(scores)} (accepted: a mask broadcastable to the scores)",
        )


# ----------------------------------------------------------------------------------- reductions


def _reduction_axis(op: str, axis: object, ndim: int) -> int:
    """One reduction axis normalised to ``[0, max(ndim, 1))``. As in torch, a rank-0 input takes
    axis 0 or -1 (its dims wrap as those of one axis of extent 1; ``torch.tensor(3.).sum(0)``)."""
    if ndim:
        return _axis(op, axis, ndim)
    value = _int(op, "axis", axis)
    if value not in (0, -1):
        raise _fail(op, f"axis {value} is out of range for a rank-0 input (accepted: an integer in [-1, 0])")
    return 0


def reduction_axes(op: str, ndim: int, axis: object) -> tuple[int, ...]:
    """The sorted normalised axes a reduction of a rank-``ndim`` input takes: all for ``None``, one
    for an integer, the distinct ones of a non-empty tuple. A rank-0 input reduces none (its axis 0
    or -1 names the scalar itself: torch returns it, shape ``()`` with or without keepdim).

    Raises:
        GuardError: an axis out of range (never wrapped), a repeated axis, ``axis=()``; a
            non-integer axis.
    """
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, tuple):
        if not axis:
            raise _fail(
                op,
                "axis () is ambiguous (numpy reduces nothing, torch reduces everything); "
                "accepted: None for all axes, an integer, or a non-empty tuple of integers",
            )
        axes = tuple(_reduction_axis(op, a, ndim) for a in axis)
        if len(set(axes)) != len(axes):
            raise _fail(op, f"axis {axis!r} repeats an axis (accepted: distinct axes)")
        axes = tuple(sorted(axes))
    else:
        axes = (_reduction_axis(op, axis, ndim),)
    return axes if ndim else ()


def reduced_shape(shape: Sequence[int], axes: Sequence[int], keepdims: bool) -> tuple[int, ...]:
    """The shape of a reduction of ``shape`` over ``axes`` (extent 1 kept there when ``keepdims``);
    the output shape :func:`check_reduce_sum` and :func:`check_reduce_mean` imply."""
    if keepdims:
        return tuple(1 if ax in axes else s for ax, s in enumerate(shape))
    return tuple(s for ax, s in enumerate(shape) if ax not in axes)


def check_reduce_sum(x: object, *, axis: object, keepdims: object) -> tuple[int, ...]:
    """Guard of ``reduce_sum``: a float array; ``axis`` None, an int or a non-empty tuple of
    distinct ints in range (0 or -1 for a rank-0 input, as torch); ``keepdims`` a bool.  Returns
    the sorted normalised reduced axes (none for a rank-0 input)."""
    arr = _float_input("reduce_sum", "input x", x)
    if not isinstance(keepdims, bool):
        raise _fail("reduce_sum", f"keepdims must be a bool; got {keepdims!r}")
    return reduction_axes("reduce_sum", arr.ndim, axis)


def check_reduce_mean(x: object, *, axis: object, keepdims: object) -> tuple[int, ...]:
    """Guard of ``reduce_mean``: as :func:`check_reduce_sum`. Returns the reduced axes."""
    arr = _float_input("reduce_mean", "input x", x)
    if not isinstance(keepdims, bool):
        raise _fail("reduce_mean", f"keepdims must be a bool; got {keepdims!r}")
    return reduction_axes("reduce_mean", arr.ndim, axis)


def check_mse_loss(a: object, b: object) -> Shape:
    """Guard of ``mse_loss``: prediction and target float arrays of equal shape and dtype
    (no broadcasting).  Returns the output shape ``()``."""
    op = "mse_loss"
    left = _float_input(op, "prediction", a)
    right = _float_input(op, "target", b)
    _same_dtype(op, [("prediction", left), ("target", right)])
    check_mse_shapes(left.shape, right.shape)
    return ()


def check_mse_shapes(prediction: Sequence[int], target: Sequence[int]) -> None:
    """Refuse ``mse_loss`` operand shapes that differ (it does not broadcast): the shape rule of
    :func:`check_mse_loss`, which the runtime also applies to array data before copying it
    (review240 F4).

    Raises:
        GuardError: ``mse_loss: prediction (2, 3) and target (5,) differ (accepted: ...)``.
    """
    if tuple(prediction) != tuple(target):
        raise _fail(
            "mse_loss",
            f"prediction {_shape_text(prediction)} and target {_shape_text(target)} differ "
            "(accepted: equal shapes; mse_loss does not broadcast)",
        )


# ---------------------------------------------------------------------------------------- views


def check_reshape(x: object, *, shape: object) -> Shape:
    """Guard of ``reshape``: a float32, float64, int64 or bool array and a target shape of
    non-negative ints with at most one ``-1`` (inferred, as in ``torch.reshape``) and the same
    element count, which numpy can lay out (:func:`check_layout_size`: extents and bytes within
    int64, also for a zero-size shape).
    Returns the resolved target shape."""
    op = "reshape"
    arr = _data_input(op, "input x", x)
    if not isinstance(shape, Sequence) or isinstance(shape, str):
        raise _fail(op, f"shape must be a sequence of integers; got {shape!r}")
    dims = reshape_target(arr.shape, [_int(op, "shape entry", s) for s in shape])
    check_layout_size(op, dims, "shape", arr.dtype.itemsize)
    return dims


def reshape_target(in_shape: Sequence[int], dims: Sequence[int]) -> Shape:
    """The shape ``reshape`` gives an input of ``in_shape`` for the target ``dims`` (integers): one
    ``-1`` inferred (as in ``torch.reshape``), the other extents >= 0, the same element count
    (:func:`check_numel`: within int64). The typed graph's lowering resolves a ``-1`` with it.

    Raises:
        GuardError: a negative extent other than one ``-1``; a ``-1`` that cannot be inferred
            (beside a 0 extent, or not dividing the element count); another element count.
    """
    op = "reshape"
    target = list(dims)
    size = math.prod(in_shape)
    if any(s < -1 for s in target) or target.count(-1) > 1:
        raise _fail(
            op,
            f"shape {target} is not accepted (accepted: extents >= 0 and at most one -1 to infer)",
        )
    known = math.prod(s for s in target if s != -1)
    if -1 in target:
        if known == 0 or size % known != 0:
            raise _fail(
                op,
                f"cannot infer the -1 extent of shape {target} for {size} elements (accepted: a "
                "-1 whose other extents have a nonzero product dividing the element count; beside "
                "a 0 extent it could be any value, as torch.reshape refuses)",
            )
        target[target.index(-1)] = size // known
        known = size
    check_numel(op, target, "shape")
    if known != size:
        raise _fail(
            op,
            f"shape {target} has {known} elements but input x {_shape_text(tuple(in_shape))} has "
            f"{size} (accepted: the same element count)",
        )
    return tuple(target)


def check_permute(x: object, *, perm: object) -> tuple[int, ...]:
    """Guard of ``permute``: a float32, float64, int64 or bool array and a permutation of its axes
    (negative axes allowed).  Returns the normalised permutation."""
    op = "permute"
    arr = _data_input(op, "input x", x)
    if not isinstance(perm, Sequence) or isinstance(perm, str):
        raise _fail(op, f"perm must be a sequence of axes; got {perm!r}")
    axes = tuple(_axis(op, a, arr.ndim, name="perm entry") for a in perm)
    if sorted(axes) != list(range(arr.ndim)):
        raise _fail(
            op,
            f"perm {list(perm)} is not a permutation of the {arr.ndim} axes of input x "
            f"(accepted: each of 0..{arr.ndim - 1} exactly once)",
        )
    return axes


def check_broadcast(x: object, *, shape: object) -> Shape:
    """Guard of ``broadcast``: a float32, float64, int64 or bool array whose shape broadcasts to
    ``shape`` (numpy rules: right-aligned, each input extent equal to the target's or 1), a
    shape whose elements and bytes fit int64 (:func:`check_numel`, :func:`check_layout_size`).
    Returns the target shape."""
    op = "broadcast"
    arr = _data_input(op, "input x", x)
    target = _shape_param(op, "shape", shape)
    check_layout_size(op, target, "shape", arr.dtype.itemsize)
    ok = arr.ndim <= len(target) and all(
        s in (1, t) for s, t in zip(arr.shape[::-1], target[::-1], strict=False)
    )
    if not ok:
        raise _fail(
            op,
            f"input x {_shape_text(arr.shape)} cannot be broadcast to {_shape_text(target)} "
            "(accepted: a target of at least the input's rank whose trailing extents equal the "
            "input's or where the input has extent 1)",
        )
    return target


def check_concat(*xs: object, axis: object) -> Shape:
    """Guard of ``concat``: at least one float32, float64, int64 or bool array, equal dtype and
    rank, equal extents except along ``axis``.  Returns the output shape."""
    op = "concat"
    if not xs:
        raise _fail(op, "no inputs (accepted: at least one array)")
    arrays = [_data_input(op, f"input {i}", x) for i, x in enumerate(xs)]
    _same_dtype(op, [(f"input {i}", a) for i, a in enumerate(arrays)])
    first = arrays[0]
    ax = _axis(op, axis, first.ndim)
    for i, a in enumerate(arrays[1:], start=1):
        same_rest = a.ndim == first.ndim and all(
            a.shape[d] == first.shape[d] for d in range(first.ndim) if d != ax
        )
        if not same_rest:
            raise _fail(
                op,
                f"input {i} {_shape_text(a.shape)} does not match input 0 "
                f"{_shape_text(first.shape)} outside axis {ax} (accepted: equal rank and equal "
                "extents on every other axis)",
            )
    out = list(first.shape)
    out[ax] = sum(a.shape[ax] for a in arrays)
    check_numel(op, out, "output shape")
    return tuple(out)


def check_slice(
    x: object, *, starts: object, stops: object, steps: object
) -> tuple[tuple[int, int, int], ...]:
    """Guard of ``slice``: one ``start``, ``stop`` (and ``step``, default 1) per axis with
    ``0 <= start <= stop <= extent`` and ``step >= 1``.  Returns ``(start, stop, step)`` per axis."""
    op = "slice"
    arr = _data_input(op, "input x", x)
    step_list: object = [1] * arr.ndim if steps is None else steps
    bounds = []
    for name, value in (("starts", starts), ("stops", stops), ("steps", step_list)):
        if not isinstance(value, Sequence) or isinstance(value, str) or len(value) != arr.ndim:
            raise _fail(
                op,
                f"{name} {value!r} must give one integer per axis of input x "
                f"{_shape_text(arr.shape)} (accepted: a sequence of length {arr.ndim})",
            )
        bounds.append([_int(op, f"{name} entry", v) for v in value])
    result = []
    for d, (start, stop, step) in enumerate(zip(*bounds, strict=True)):
        extent = arr.shape[d]
        if not 0 <= start <= stop <= extent:
            raise _fail(
                op,
                f"axis {d}: start {start}, stop {stop} out of range for extent {extent} "
                f"(accepted: 0 <= start <= stop <= {extent})",
            )
        if step < 1:
            raise _fail(op, f"axis {d}: step {step} is not accepted (accepted: step >= 1)")
        result.append((start, stop, step))
    return tuple(result)


def slice_index(bounds: Sequence[tuple[int, int, int]]) -> tuple[slice, ...]:
    """The basic index of :func:`check_slice`'s ``(start, stop, step)`` bounds, one ``slice`` per
    axis (numpy and torch index with it alike)."""
    return tuple(slice(start, stop, step) for start, stop, step in bounds)


def index_out_of_range(op: str, value: int, extent: int, axis: int) -> GuardError:
    """The refusal of index ``value`` along ``axis`` of extent ``extent`` (``gather``,
    ``scatter_add``; shared with :mod:`torchlean.functional`, which meets the uint64 values above
    ``2**63 - 1`` that an int64 index cannot carry to this guard): ``gather: index value 3 is out
    of range for extent 3 along axis 1 (accepted: 0 <= index < 3)``."""
    accepted = f"0 <= index < {extent}"
    if extent == 0:
        accepted = "no index value: the axis is empty, so only an empty index fits"
    return _fail(
        op,
        f"index value {value} is out of range for extent {extent} along axis {axis} "
        f"(accepted: {accepted})",
    )


def _index_range(op: str, index: Array, extent: int, axis: int) -> None:
    if index.size == 0:
        return
    low = int(index.min())
    high = int(index.max())
    if low < 0 or high >= extent:
        raise index_out_of_range(op, low if low < 0 else high, extent, axis)


def _refuse_rank_0(op: str, operands: Sequence[tuple[str, Sequence[int]]], result: str) -> None:
    """``gather`` and ``scatter_add`` index along an axis of rank >= 1 operands; torch also takes
    0-d ones, each read as one element along dim 0 or -1 (review153 L1, review154 L6): refused,
    naming the 0-d operands and how to run the call here."""
    flat = [name for name, shape in operands if len(shape) == 0]
    if flat:
        raise _fail(
            op,
            f"{' and '.join([', '.join(flat[:-1]), flat[-1]] if len(flat) > 1 else flat)} "
            f"{'is' if len(flat) == 1 else 'are'} 0-d (accepted: operands of rank "
            ">= 1; torch reads a 0-d operand as one element along dim 0 or -1: reshape each 0-d operand "
            f"to (1,) for the same values; torch's result has {result})",
        )


def check_gather(x: object, index: object, *, axis: object) -> Shape:
    """Guard of ``gather`` (``torch.gather``): float ``x``, int64 ``index`` of the same rank with
    ``index.shape[d] <= x.shape[d]`` for ``d != axis`` and values in ``[0, x.shape[axis])``.
    Returns the output shape (``index.shape``)."""
    op = "gather"
    arr = _float_input(op, "input x", x)
    idx = check_canonical_layout(index, op=op, name="index", role="index")
    ax = check_gather_shapes(arr.shape, idx.shape, axis)
    _index_range(op, idx, arr.shape[ax], ax)
    return tuple(idx.shape)


def check_gather_shapes(x: Sequence[int], index: Sequence[int], axis: object) -> int:
    """The shape rules of :func:`check_gather` (no 0-d operand, ``axis`` in range, the index's
    rank and extents), which the runtime also applies to an index's declared shape before
    copying it (review243 F2: a broadcast view declaring 2**28 rows was cast to int64 first).
    Returns the normalised axis.

    Raises:
        GuardError: as :func:`check_gather` for these faults.
    """
    op = "gather"
    _refuse_rank_0(op, [("input x", x), ("index", index)], "the index's shape")
    ax = _axis(op, axis, len(x))
    fits = len(index) == len(x) and all(index[d] <= x[d] for d in range(len(x)) if d != ax)
    if not fits:
        raise _fail(
            op,
            f"index {_shape_text(index)} does not fit input x {_shape_text(x)} "
            f"(accepted: the same rank and index extents <= the input's on every axis but {ax})",
        )
    return ax


def check_scatter_add(base: object, index: object, src: object, *, axis: object) -> Shape:
    """Guard of ``scatter_add`` (``torch.scatter_add``): float ``base`` and ``src`` of one dtype,
    int64 ``index``, all of one rank, ``index.shape[d] <= src.shape[d]`` for every ``d`` and
    ``<= base.shape[d]`` for ``d != axis``, values in ``[0, base.shape[axis])``.
    Returns the output shape (``base.shape``)."""
    op = "scatter_add"
    out = _float_input(op, "base", base)
    idx = check_canonical_layout(index, op=op, name="index", role="index")
    source = _float_input(op, "src", src)
    _same_dtype(op, [("base", out), ("src", source)])
    ax = check_scatter_add_shapes(out.shape, idx.shape, source.shape, axis)
    _index_range(op, idx, out.shape[ax], ax)
    return tuple(out.shape)


def check_scatter_add_shapes(
    base: Sequence[int], index: Sequence[int], src: Sequence[int], axis: object
) -> int:
    """The shape rules of :func:`check_scatter_add` (no 0-d operand, ``axis`` in range, one rank,
    the index's extents), which the runtime also applies to an index's declared shape before
    copying it (review243 F2). Returns the normalised axis.

    Raises:
        GuardError: as :func:`check_scatter_add` for these faults.
    """
    op = "scatter_add"
    _refuse_rank_0(op, [("base", base), ("index", index), ("src", src)], "base's shape")
    ax = _axis(op, axis, len(base))
    fits = (
        len(index) == len(base) == len(src)
        and all(index[d] <= src[d] for d in range(len(index)))
        and all(index[d] <= base[d] for d in range(len(index)) if d != ax)
    )
    if not fits:
        raise _fail(
            op,
            f"index {_shape_text(index)} does not fit base {_shape_text(base)} and src "
            f"{_shape_text(src)} (accepted: one rank; index extents <= src's on every "
            f"axis and <= base's on every axis but {ax})",
        )
    return ax


# ---------------------------------------------------------------------------------- contractions


def matmul_shape(op: str, a_shape: Sequence[int], b_shape: Sequence[int]) -> Shape:
    """Output shape of ``torch.matmul`` for operands of these shapes, or :class:`GuardError`."""
    if len(a_shape) == 0 or len(b_shape) == 0:
        raise _fail(
            op,
            f"operands a {_shape_text(a_shape)} and b {_shape_text(b_shape)}: rank-0 operands are "
            "not accepted (accepted: rank >= 1, as torch.matmul)",
        )
    a2 = (1, *a_shape) if len(a_shape) == 1 else tuple(a_shape)
    b2 = (*b_shape, 1) if len(b_shape) == 1 else tuple(b_shape)
    if a2[-1] != b2[-2]:
        raise _fail(
            op,
            f"contracted extents differ: a {_shape_text(a_shape)} has {a2[-1]}, b "
            f"{_shape_text(b_shape)} has {b2[-2]} (accepted: a.shape[-1] == b.shape[-2], "
            "or b.shape[0] for a 1-D b)",
        )
    batch = _broadcast(op, [("a batch", a2[:-2]), ("b batch", b2[:-2])])
    out = [*batch]
    if len(a_shape) > 1:
        out.append(a2[-2])
    if len(b_shape) > 1:
        out.append(b2[-1])
    check_numel(op, out, "output shape")
    return tuple(out)


def check_matmul(a: object, b: object) -> Shape:
    """Guard of ``matmul`` (``torch.matmul`` shapes: 1-D promotion, broadcast batch axes):
    float operands of one dtype, equal contracted extents.  Returns the output shape."""
    left = _float_input("matmul", "operand a", a)
    right = _float_input("matmul", "operand b", b)
    _same_dtype("matmul", [("operand a", left), ("operand b", right)])
    return matmul_shape("matmul", left.shape, right.shape)


def check_linear(x: object, w: object, b: object = None) -> Shape:
    """Guard of ``linear``: ``x (..., in)`` with rank >= 1, ``w (out, in)``, ``b (out,)`` or
    None, one float dtype.  Returns the output shape ``(..., out)``."""
    op = "linear"
    xs = _float_input(op, "input x", x)
    ws = _float_input(op, "weight w", w)
    bs = None if b is None else _float_input(op, "bias b", b)
    if ws.dtype is not xs.dtype or (bs is not None and bs.dtype is not xs.dtype):
        # one dtype object is one dtype; else compare them (and name the first that differs)
        named = [("input x", xs), ("weight w", ws)]
        if bs is not None:
            named.append(("bias b", bs))
        _same_dtype(op, named)
    if xs.ndim < 1 or ws.ndim != 2 or xs.shape[-1] != ws.shape[1]:
        raise _fail(
            op,
            f"input x {_shape_text(xs.shape)} and weight w {_shape_text(ws.shape)} do not fit "
            "(accepted: x (..., in) of rank >= 1 and w (out, in))",
        )
    if bs is not None and bs.shape != (ws.shape[0],):
        raise _fail(
            op,
            f"bias b {_shape_text(bs.shape)} does not match weight w {_shape_text(ws.shape)} "
            f"(accepted: b ({ws.shape[0]},) or None)",
        )
    out = (*xs.shape[:-1], ws.shape[0])
    check_numel(op, out, "output shape")
    return out


def _scale_param(op: str, scale: object) -> None:
    if scale is not None:
        _real(op, "scale", scale, finite=True)


def check_scaled_dot_product_attention(
    q: object, k: object, v: object, mask: object = None, *, scale: object = None
) -> Shape:
    """Guard of ``scaled_dot_product_attention``: ``q (..., nQ, d)``, ``k (..., nK, d)``,
    ``v (..., nK, dv)`` of one float dtype with broadcastable leading axes; an optional boolean
    mask broadcastable to the scores ``(..., nQ, nK)`` (never enlarging them); an optional finite
    ``scale``.  Returns the output shape ``(..., nQ, dv)``."""
    op = "scaled_dot_product_attention"
    qs = _float_input(op, "query q", q)
    ks = _float_input(op, "key k", k)
    vs = _float_input(op, "value v", v)
    _same_dtype(op, [("query q", qs), ("key k", ks), ("value v", vs)])
    scores = sdpa_scores_shape(qs.shape, ks.shape, vs.shape)
    if mask is not None:
        allowed = check_canonical_layout(mask, op=op, name="mask", role="mask")
        check_sdpa_mask_shape(scores, allowed.shape)
    _scale_param(op, scale)
    out = (*scores[:-1], vs.shape[-1])
    check_numel(op, out, "output shape")
    return out


def sdpa_scores_shape(q: Sequence[int], k: Sequence[int], v: Sequence[int]) -> Shape:
    """The scores' shape ``(..., nQ, nK)`` of ``scaled_dot_product_attention`` on q, k, v of these
    shapes: the shape rules of :func:`check_scaled_dot_product_attention` (ranks, d and nK, the
    batch broadcast), which the runtime also applies before copying a mask (review243 F2).

    Raises:
        GuardError: as :func:`check_scaled_dot_product_attention` for these faults.
    """
    op = "scaled_dot_product_attention"
    if len(q) < 2 or len(k) < 2 or len(v) < 2:
        raise _fail(
            op,
            f"query q {_shape_text(q)}, key k {_shape_text(k)}, value v "
            f"{_shape_text(v)}: rank below 2 (accepted: q (..., nQ, d), k (..., nK, d), "
            "v (..., nK, dv))",
        )
    if q[-1] != k[-1] or k[-2] != v[-2]:
        which = (f"q's d = {q[-1]} and k's d = {k[-1]} differ"  # review193 F2: which axis
                 if q[-1] != k[-1] else
                 f"k's nK = {k[-2]} and v's nK = {v[-2]} differ")
        raise _fail(
            op,
            f"query q {_shape_text(q)}, key k {_shape_text(k)}, value v "
            f"{_shape_text(v)} do not fit: {which} (accepted: q (..., nQ, d), k (..., nK, d), "
            "v (..., nK, dv))",
        )
    batch = _broadcast(op, [("q batch", q[:-2]), ("k batch", k[:-2]), ("v batch", v[:-2])])
    scores = (*batch, q[-2], k[-2])
    check_numel(op, scores, "scores shape")
    return scores


def check_sdpa_mask_shape(scores: Sequence[int], mask: Sequence[int]) -> None:
    """Refuse a ``scaled_dot_product_attention`` mask shape that does not broadcast *to* the
    ``scores`` shape (:func:`sdpa_scores_shape`), as :func:`check_scaled_dot_product_attention`
    does; the runtime applies it before copying a mask (review243 F2).

    Raises:
        GuardError: ``shapes are not broadcastable: ...`` or ``mask ... does not broadcast to the
            scores' shape ...``.
    """
    op = "scaled_dot_product_attention"
    if _broadcast(op, [("scores", scores), ("mask", mask)]) != tuple(scores):
        raise _fail(
            op,
            f"mask {_shape_text(mask)} does not broadcast to the scores' shape "
            f"{_shape_text(scores)} (accepted: a mask broadcastable to (..., nQ, nK))",
        )


# --------------------------------------------------------------------------------- random sources


def _random_common(
    op: str, shape: object, seed: object, counter: object, dtype: object
) -> tuple[Shape, np.dtype[np.floating]]:
    dims = _shape_param(op, "shape", shape)
    for name, value in (("seed", seed), ("counter", counter)):
        # keyOf takes u64(seed) as the original does (a seed >= 2**64 wraps); torchlean.functional
        # refuses such seeds before they reach a kernel
        if _int(op, name, value) < 0:
            raise _fail(op, f"{name} = {value!r} is negative (accepted: integers >= 0)")
    if dtype is None:  # np.dtype(None) would silently mean float64
        raise _dtype_refused(op, dtype)
    try:
        resolved = np.dtype(dtype)  # type: ignore[call-overload]
    except TypeError:
        raise _dtype_refused(op, dtype) from None
    if resolved == np.dtype(np.float32):
        return dims, np.dtype(np.float32)
    if resolved == np.dtype(np.float64):
        return dims, np.dtype(np.float64)
    raise _dtype_refused(op, dtype)


def _dtype_refused(op: str, dtype: object) -> GuardError:
    """A random source's refusal of ``dtype``, made only when it is refused (review155 L4: made on
    every call, it cost a few µs of every training dropout)."""
    return _fail(op, f"dtype {dtype!r} is not accepted (accepted: float32 or float64)")


def check_rand_uniform(
    *, shape: object, seed: object, counter: object, dtype: npt.DTypeLike
) -> tuple[Shape, np.dtype[np.floating]]:
    """Guard of ``rand_uniform``: a shape of non-negative ints whose element count fits int64,
    integers ``seed, counter >= 0`` (used modulo 2**64, as the original's ``u64``), dtype
    float32/float64.  Returns ``(shape, dtype)``."""
    return _random_common("rand_uniform", shape, seed, counter, dtype)


def check_bernoulli_mask(
    *, shape: object, keep_prob: object, seed: object, counter: object, dtype: npt.DTypeLike
) -> tuple[Shape, np.dtype[np.floating]]:
    """Guard of ``bernoulli_mask``: as :func:`check_rand_uniform` plus ``0 <= keep_prob <= 1``.
    Returns ``(shape, dtype)``."""
    op = "bernoulli_mask"
    result = _random_common(op, shape, seed, counter, dtype)
    prob = _real(op, "keep_prob", keep_prob, finite=True)
    if not 0.0 <= prob <= 1.0:
        raise _fail(op, f"keep_prob = {prob!r} is outside [0, 1] (accepted: 0 <= keep_prob <= 1)")
    return result
