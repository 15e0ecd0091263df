"""Indexing: basic slicing (``slice``, ``getitem``, whose slice check item assignment shares)
and index arrays (``gather``, ``scatter_add``, which take the axis last)."""

from __future__ import annotations

import builtins
import operator
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_builtin_or_numpy_int, is_int, shown
from torchlean._tensor_args import _UNSET, _Unset
from torchlean._tensor_errors import TensorIndexError, _preview, _type_name
from torchlean._torch_host import declared_shape, is_torch_tensor, torch_refusal
from torchlean.autograd.session import run_op
from torchlean.backend.providers.reference.guards import check_gather_shapes, check_scatter_add_shapes
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._operands import _index, _is_array_data, _require_tensor, on_host
from torchlean.functional._params import _int, _ints, _required_axis
from torchlean.functional._shape import reshape
from torchlean.tensor import IntLike, Tensor, TensorError, TensorTypeError, _is_torch_tensor, operand_type


def slice(
    x: Tensor,
    starts: Sequence[IntLike],
    stops: Sequence[IntLike],
    steps: Sequence[IntLike] | None = None,
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


def _check_slice(item: builtins.slice, index: Any) -> builtins.slice:
    """``item``, a slice of ``index``, with Python integer bounds, or its refusal before Python's
    ``slice.indices`` would raise its own ``TypeError``/``ValueError``: bounds and step must be
    integers or ``None``, as an integer index is one (a Python or numpy integer, a 0-d integer
    array or tensor, an object with ``__index__``: :func:`_integer_index`, as torch and numpy take
    them; review202 F2), floats and bools refused rather than truncated, and the step positive
    (torch refuses a negative or zero step too, with a ``ValueError``). Shared by :func:`getitem`
    and item assignment (:meth:`Tensor.__setitem__`).

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
        return item
    bounds: list[int | None] = []
    for part, value in (("start", start), ("stop", stop), ("step", step)):
        if value is None or is_builtin_or_numpy_int(value):
            bounds.append(None if value is None else int(value))
            continue
        position = _integer_index(value)
        if position is None and _is_uint8_index(value) and getattr(value, "ndim", None) == 0:
            position = int(value)  # a bound is never a mask: a 0-d uint8 one too (review203 F8)
        if position is None:
            raise TensorTypeError(
                f"slice bounds must be integers or None; got {shown(value)} of type "
                f"{type(value).__name__} as the {part} of {item!r} (index {index!r}; accepted: Python "
                "or numpy integers, 0-d integer arrays or tensors, objects with __index__, None)"
            )
        bounds.append(position)
    if bounds[2] is not None and bounds[2] < 1:
        raise TensorError(
            f"negative or zero slice steps are not supported (index {index!r}; accepted: a step of "
            "at least 1, or None)"
        )
    return builtins.slice(*bounds)


_TORCH_INT_DTYPES = frozenset(
    [f"torch.int{bits}" for bits in (8, 16, 32, 64)] + [f"torch.uint{bits}" for bits in (16, 32, 64)]
)
"""The torch dtypes whose 0-d tensors torch takes as an integer index (uint8 and bool: a mask)."""


def _integer_index(item: object) -> int | None:
    """The integer ``item`` stands for as an index, as torch reads it, or None: a 0-d integer
    array (a torchlean int64 Tensor, a numpy array of a signed or wider-than-8-bit unsigned
    dtype, a torch tensor of such a dtype: torch takes a 0-d uint8 or bool as a mask), or an
    object with ``__index__`` that is not array data and not a bool (``True`` is a mask to
    torch). Python and numpy integer scalars are checked before, by the caller."""
    if isinstance(item, Tensor):
        return int(item.item()) if item.ndim == 0 and item.dtype == np.int64 else None
    if isinstance(item, np.ndarray):
        integer = item.dtype.kind == "i" or (item.dtype.kind == "u" and item.dtype.itemsize > 1)
        return int(item) if item.ndim == 0 and integer else None
    if _is_torch_tensor(item):
        t: Any = item
        return int(t.item()) if t.ndim == 0 and str(t.dtype) in _TORCH_INT_DTYPES else None
    if isinstance(item, bool | np.bool_ | list | tuple | np.generic) or not hasattr(type(item), "__index__"):
        return None
    try:
        return operator.index(item)  # type: ignore[arg-type]
    except TypeError:
        return None


def _is_uint8_index(item: object) -> bool:
    """Whether ``item`` is uint8 index data: a numpy uint8 array, a torch uint8 tensor, or a list
    or tuple numpy reads as uint8 (``list(u8)``). numpy indexes with its values, torch reads it as
    a (deprecated) mask (review113 F2, review114 F1): :func:`getitem`'s refusal calls it a mask,
    item assignment refuses it."""
    if isinstance(item, np.ndarray):
        return bool(item.dtype == np.uint8)
    if isinstance(item, list | tuple):
        try:
            return bool(np.asarray(item).dtype == np.uint8)
        except (ValueError, TypeError):  # ragged, or not numbers: numpy's own refusal follows
            return False
    return _is_torch_tensor(item) and str(getattr(item, "dtype", "")) == "torch.uint8"


def _array_kind(item: object) -> tuple[str, tuple[int, ...]] | None:
    """``("mask", shape)`` for boolean array data (a numpy array, a Tensor, a torch tensor, a
    list or tuple of bools) and for uint8 arrays and tensors, which torch reads as masks too;
    ``("array", shape)`` for other integer array data of rank 1 or more; None for anything else
    (a float array, a number): the route :func:`getitem` names refusing it."""
    kind: str
    if isinstance(item, Tensor | np.ndarray):
        kind, shape = item.dtype.kind, tuple(item.shape)
    elif _is_torch_tensor(item):
        t: Any = item
        kind = "b" if str(t.dtype) == "torch.bool" else "i" if str(t.dtype) in _TORCH_INT_DTYPES else "f"
        shape = tuple(t.shape)
    elif isinstance(item, list | tuple):
        try:
            values = np.asarray(item)
        except (ValueError, TypeError):  # ragged
            return None
        kind, shape = values.dtype.kind, values.shape
    else:
        return None
    if kind == "b" or _is_uint8_index(item):
        return "mask", shape
    return ("array", shape) if kind in "iu" and shape else None


_BASIC_INDICES = (
    "reading t[...] takes basic indices only: integers (also a 0-d integer array or tensor other "
    "than uint8 and bool, which torch reads as masks, or an object with __index__), slices with a "
    "step of at least 1, '...' and None"
)


def _unsupported_index(item: object, x: Tensor) -> TensorError:
    """The refusal of ``item`` in ``x[...]`` (:func:`getitem`), naming what reading accepts and,
    for a boolean mask or an integer index array, the route: :func:`gather`, or item assignment,
    which takes them."""
    found = _array_kind(item)
    kind = _type_name(item)
    if found is None:
        return TensorError(f"unsupported index {_preview(item)} of type {kind}: {_BASIC_INDICES}")
    what, shape = found
    if what == "mask":
        return TensorError(
            f"unsupported index: a mask (bool or uint8) of shape {shape} of type {kind}: {_BASIC_INDICES}, "
            "where torch also reads a mask; read it with torchlean.gather: for a mask of x's "
            "shape, torch's x[mask] is tl.gather(x.reshape(-1), np.flatnonzero(mask), 0) "
            "(np.nonzero(mask) gives the positions along each axis); item assignment "
            "x[mask] = v takes a bool mask itself (a uint8 one converted: mask.astype(bool), or "
            ".bool() for a torch tensor)"
        )
    along = (
        "tl.gather(x, idx, 0)" if x.ndim == 1
        else "tl.gather(x, np.broadcast_to(np.reshape(idx, (-1" + ", 1" * (x.ndim - 1) + ")), "
        f"(len(idx), {', '.join(str(n) for n in x.shape[1:])})), 0)"
    )
    return TensorError(
        f"unsupported index: an integer index array of shape {shape} of type {kind}: {_BASIC_INDICES}, "
        "where torch also reads index arrays; read them with torchlean.gather(x, index, axis), "
        f"whose int64 index has x's rank and entries in [0, extent): x[idx] for a 1-d idx is {along} "
        "(a negative entry, which torch counts from the end, as idx % x.shape[0]); item assignment "
        "x[idx] = v takes index arrays and masks as they are"
    )


def getitem(x: Tensor, index: Any) -> Tensor:
    """Basic indexing ``x[index]``: integers, slices with positive steps, ``...`` and ``None``.
    As in torch, an integer may also be a 0-d integer array (an int64 Tensor, a numpy array, a
    torch tensor; not uint8 or bool, which torch reads as a mask) or an object with
    ``__index__``.

    Records ``slice`` (also when the index selects everything: ``x[:]``, ``x[...]`` and
    ``x[0:n]`` are new tensors too), then ``reshape`` when an integer drops an axis or ``None``
    inserts one; on a rank-0 ``x`` (no axis to slice) ``reshape`` alone. Negative steps and
    advanced indexing (boolean masks, index arrays), which torch reads, are refused: read them
    with :func:`gather` (for a mask of x's shape, ``gather(x.reshape(-1),
    np.flatnonzero(mask), 0)`` is torch's ``x[mask]``); item assignment takes them.

    Unlike torch, where basic indexing returns a view, the result is always new storage (torchlean
    has no views; see :mod:`torchlean.tensor`): an in-place write through ``x[index]`` never
    changes ``x``, and one into ``x`` never changes an earlier ``x[index]``. Gradients flow back
    to ``x`` through the recorded ops.

    Raises:
        TensorTypeError: ``x`` is not a Tensor; a slice bound or step that is not an integer or
            None (a float, a bool: :func:`_check_slice`).
        TensorError: an unsupported index (a float, a bool, a string; a boolean mask or an
            index array, the message naming the :func:`gather` call that reads it), an integer
            out of range, a negative or zero slice step.
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
        raise TensorIndexError(f"too many indices for a tensor of rank {x.ndim}: {index!r}")
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
        if not isinstance(item, builtins.slice) and not is_builtin_or_numpy_int(item):
            position = _integer_index(item)  # a 0-d integer array or tensor, an __index__ object
            if position is None:
                raise _unsupported_index(item, x)
            item = position  # torch takes each as an integer index
        if isinstance(item, builtins.slice):
            item = _check_slice(item, index)
            start, stop, step = item.indices(extent)
            stop = builtins.max(stop, start)
            starts.append(start)
            stops.append(stop)
            steps.append(step)
            final_shape.append(len(range(start, stop, step)))
        elif is_builtin_or_numpy_int(item):
            position = int(item)
            if not -extent <= position < extent:
                raise TensorIndexError(
                    f"index {position} is out of range for axis {axis} with extent {extent}"
                )
            position %= extent
            starts.append(position)
            stops.append(position + 1)
            steps.append(1)
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
        if not (_is_array_data(axis) and is_int(index)):
            raise
        ours, torch_order, method_order = _AXIS_LAST_ORDERS[fn]
        raise TensorTypeError(
            f"{exc}; index is the integer {int(index)} and axis is array data: tl.{fn} takes {ours}, "
            f"axis last, unlike {torch_order} and the method {method_order}"
        ) from None


_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


def _integer_index_shape(index: object) -> tuple[int, ...] | None:
    """The declared shape of array data ``index`` (a numpy array, a torch tensor) of an integer
    dtype that becomes int64, read without copying it, so that the guard's shape rules refuse it
    before the cast (review243 F2: a view declaring 2**28 rows was cast first); else None (a
    Tensor, lists, another dtype, which the guard or the cast refuses first)."""
    shape = declared_shape(index)
    if shape is None or (is_torch_tensor(index) and torch_refusal("index", index) is not None):
        return None
    dtype = str(getattr(index, "dtype", "")).removeprefix("torch.")
    integer = ("int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    return shape if dtype in integer else None


def gather(
    x: Tensor,
    index: Tensor | npt.ArrayLike,
    axis: IntLike | _Unset = _UNSET,
    *,
    dim: IntLike | _Unset = _UNSET,
) -> Tensor:
    """Values of ``x`` picked along ``axis`` by ``index`` (``torch.gather``), with the arguments in
    another order: **the axis comes last** here, ``gather(x, index, axis)``, where torch writes
    ``torch.gather(x, dim, index)`` and the method ``t.gather(dim, index)`` (torchlean's method
    keeps torch's order; torch's keyword ``dim=`` is taken for ``axis``, so
    ``gather(x, dim=1, index=i)`` means what it means in torch). ``index`` is int64 of x's rank;
    records ``gather``.

    ``out[..., i, ...] = x[..., index[..., i, ...], ...]`` along ``axis``; the result has the
    index's shape and x's dtype. ``index`` extents must not exceed x's on every axis but ``axis``.
    Integer index data (a numpy array or nested lists) becomes int64.

    Raises:
        GuardError: an index value outside ``[0, x.shape[axis])`` (negative values are not counted
            from the end, as in torch), an index of another rank or too large, a non-integer
            index dtype, or ``axis`` out of range.
        TensorTypeError: ``x`` is not a Tensor; a non-integer ``axis`` (for array data there and
            an integer ``index``, torch's order ``gather(x, dim, index)``, the message says so);
            no axis, or both ``axis`` and ``dim``.
    """
    x = _require_tensor("gather", "x", x)
    chosen = _required_axis("gather", axis, dim)
    params = {"axis": _axis_last("gather", chosen, index)}
    shape = _integer_index_shape(index)
    if shape is not None and x.dtype in _FLOATS and on_host(x):  # before the copy (review243 F2)
        check_gather_shapes(x.shape, shape, params["axis"])
    return run_op(BackendOp.GATHER, (x, _index(index, x, "gather", chosen)), params)


def scatter_add(
    base: Tensor,
    index: Tensor | npt.ArrayLike,
    src: Tensor,
    axis: IntLike | _Unset = _UNSET,
    *,
    dim: IntLike | _Unset = _UNSET,
) -> Tensor:
    """``src`` added into a copy of ``base`` at ``index`` along ``axis`` (``torch.scatter_add``),
    with the arguments in another order: **the axis comes last** here, ``scatter_add(base, index,
    src, axis)``, where torch writes ``torch.scatter_add(base, dim, index, src)`` and the method
    ``t.scatter_add(dim, index, src)`` (torchlean's method keeps torch's order; torch's keyword
    ``dim=`` is taken for ``axis``). Repeated indices
    accumulate in index order; records ``scatter_add``. Returns a new tensor of base's shape and
    dtype (``base`` is not written). ``index`` (int64, base's rank) has extents <= src's on every
    axis and <= base's on every axis but ``axis``; src has base's dtype.

    Raises:
        GuardError: an index value outside ``[0, base.shape[axis])``, shapes that do not fit,
            a src dtype other than base's, or ``axis`` out of range.
        TensorTypeError: ``base`` or ``src`` is not a Tensor; a non-integer ``axis`` (for array
            data there and an integer ``index``, torch's order ``scatter_add(base, dim, index,
            src)``, the message says so); no axis, or both ``axis`` and ``dim``.
    """
    base = _require_tensor("scatter_add", "base", base)
    chosen = _required_axis("scatter_add", axis, dim)
    params = {"axis": _axis_last("scatter_add", chosen, index)}
    shape = _integer_index_shape(index)
    same = isinstance(src, Tensor) and base.dtype == src.dtype and on_host(base)
    if shape is not None and same and base.dtype in _FLOATS:
        check_scatter_add_shapes(base.shape, shape, src.shape, params["axis"])  # review243 F2
    return run_op(BackendOp.SCATTER_ADD, (base, _index(index, base, "scatter_add", chosen), src), params)
