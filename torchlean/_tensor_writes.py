"""The in-place writes of :class:`torchlean.tensor.Tensor` and their checks.

``copy_`` (:func:`copy_into`), ``zero_`` (:func:`zero`), item assignment (:func:`assign`) and
``t += o``, ``-=``, ``*=``, ``/=`` (:func:`update_in_place`): each checks that the tensor may be
written (:func:`check_writable`) and reads the values to write (:func:`written_values`), then
writes into the storage in place and bumps its version counter. The rules and errors are in the
docstrings of the Tensor methods, which call these functions.

:mod:`torchlean.tensor` imports this module, so this one imports it only inside
:func:`_tensor_type` (once); ``torchlean.functional`` (the constant-operand rule, the index checks)
only inside the functions that use it, as ``Tensor``'s methods do.
"""

from __future__ import annotations

import functools
import weakref
from collections.abc import Callable
from contextvars import ContextVar
from typing import TYPE_CHECKING, Any

import numpy as np

from torchlean._tensor_data import Array, _is_torch_tensor, _require_floats_fit_int64, host_array
from torchlean._tensor_errors import TensorError, TensorIndexError
from torchlean._torch_host import declared_shape, is_torch_tensor, torch_refusal
from torchlean.autograd import storage
from torchlean.autograd.grad_mode import is_grad_enabled, torch_no_grad_note
from torchlean.autograd.tape import AutogradError

if TYPE_CHECKING:
    import numpy.typing as npt

    from torchlean.tensor import OperandLike, Tensor


@functools.cache
def _tensor_type() -> type[Tensor]:
    """:class:`torchlean.tensor.Tensor`, imported on the first write: ``torchlean.tensor`` imports
    this module, so it cannot be imported here at load (cached, so a write pays a call, not an
    import)."""
    from torchlean.tensor import Tensor

    return Tensor


_MASK_REMEDY = (
    "tl.concat of the pieces, or t * keep + values * (1 - keep) with a 0/1 mask keep (NaN where t "
    "is inf or NaN at a replaced entry)"
)
"""The out-of-place rewrite of an item assignment into a tensor with a tape history."""

_LAST_INDEXED: ContextVar[tuple[weakref.ref[Tensor], weakref.ref[Tensor]] | None] = ContextVar(
    "torchlean_last_indexed", default=None
)
"""The latest ``t[index]`` read while gradients were recorded, in this thread or asyncio task:
weak references to the result and to ``t`` (:func:`note_indexed`)."""


def note_indexed(result: Tensor, source: Tensor) -> None:
    """Remember that ``result`` is ``source[...]`` (:meth:`Tensor.__getitem__`, while gradients
    are recorded), so that the in-place update Python runs for ``source[...] op= v`` (``tmp =
    source[...]; tmp op= v; source[...] = tmp``) is refused in ``source``'s terms
    (:func:`update_in_place`), not in those of the indexing's internal ops."""
    _LAST_INDEXED.set((weakref.ref(result), weakref.ref(source)))


def _indexed_from(t: Tensor) -> Tensor | None:
    """The tensor ``t`` was indexed from, if ``t`` is the latest indexing's result (and that
    tensor is alive); else None."""
    last = _LAST_INDEXED.get()
    if last is None or last[0]() is not t:
        return None
    return last[1]()


def check_writable(t: Tensor, what: str) -> None:
    """Refuse a write (``what``) into ``t``: one that requires grad while gradients are recorded
    (naming the out-of-place rewrite when ``t`` has a tape history), or read-only storage.

    Raises:
        AutogradError: ``t`` requires grad and gradients are enabled.
        TensorError: ``t``'s storage is read-only.
    """
    if t._requires_grad and is_grad_enabled():
        if t._node is not None:  # under no_grad it would pass, then backward refuses (review52 F1)
            raise AutogradError(
                f"autograd: {what} on a tensor with a tape history (made by `{t._node.name}`) "
                "while gradients are recorded: torchlean's tape records no in-place op (torch "
                "records one), and the op saved this tensor for its backward; build the result "
                "out of place: "
                + (
                    "the source itself (tl.broadcast_to(src, t.shape))" if what == "copy_()"
                    else "a new zero tensor, tl.tensor(np.zeros(t.shape, t.dtype)) (t * 0.0 is NaN where "
                    "t is inf or NaN)" if what == "zero_()"
                    else _MASK_REMEDY
                )
            )
        raise AutogradError(
            f"autograd: {what} on a tensor that requires grad while gradients are recorded; "
            f"write it inside torchlean.no_grad(){torch_no_grad_note()}"
        )
    if isinstance(t._data, np.ndarray) and not t._data.flags.writeable:
        raise TensorError(f"{what} on a read-only view (shape {t.shape}); copy it first")


def written_values(t: Tensor, what: str, role: str, value: object, remedy: str) -> Array:
    """The host values that ``copy_``/item assignment (``what``) write, before any cast: a
    Tensor's storage, or a constant under the functional ops' constant-operand rule
    (:func:`torchlean.functional._constant_values`; ``role`` names it in the messages).

    Raises:
        AutogradError: ``value`` is a Tensor that requires grad (a leaf, or one with a tape
            history) while gradients are recorded: torch records the write and sends the
            gradient back to it; torchlean's tape records no in-place op, so it would be lost.
            The message names ``remedy``, the out-of-place rewrite, and ``torchlean.no_grad()``.
        TensorTypeError: non-numeric data (``None``, strings, bytes, objects, complex); a torch
            tensor that requires grad.
        TensorError: ragged data; a Python integer that does not fit ``t``'s dtype.
    """
    if isinstance(value, _tensor_type()):
        if value._requires_grad and is_grad_enabled():
            made = f" (made by `{value._node.name}`)" if value._node is not None else ""
            raise AutogradError(
                f"autograd: {what} from a tensor of shape {value.shape} that requires grad{made} "
                "while gradients are recorded: torchlean's tape records no in-place op, so its "
                f"gradient would be lost (torch records the copy); {remedy}, or write under "
                f"torchlean.no_grad() when no gradient should reach it{torch_no_grad_note()}"
            )
        return storage.to_host(value._data)
    from torchlean import functional as F

    return F._constant_values(value, t.dtype, role)


def _check_copy_source(value: Array, shape: tuple[int, ...], dtype: np.dtype[Any]) -> None:
    """Refuse a ``copy_`` source that torch's broadcast rule or numpy's ``same_kind`` cast rule
    does not write into a tensor of ``shape`` and ``dtype`` (:meth:`Tensor.copy_`).

    Raises:
        TensorError: ``copy_(): a source of shape (1, 1, 3) does not broadcast to the tensor's
            shape (2, 3) ...``; ``copy_(): float64 values are not written into an int64 tensor by
            copy_ (numpy's same_kind cast rule) ...``.
    """
    try:
        fits = np.broadcast_shapes(value.shape, shape) == shape
    except ValueError:
        fits = False
    if not fits:
        raise TensorError(
            f"copy_(): a source of shape {value.shape} does not broadcast to the tensor's shape "
            f"{shape} (accepted: as in torch, a rank of at most {len(shape)}, each extent 1 or the "
            "tensor's, aligned from the right)"
        )
    if not np.can_cast(value.dtype, dtype, "same_kind"):
        torch_cast = (
            "writes v != 0, as torch does" if dtype.kind == "b"
            else "truncates toward zero as torch does (NaN, ±inf and values beyond int64 refused, "
            "where torch writes an arbitrary integer)"
        )
        raise TensorError(
            f"copy_(): {value.dtype} values are not written into a{'n' if dtype.kind == 'i' else ''} "
            f"{dtype} tensor by copy_ (numpy's same_kind cast rule); t[...] = v {torch_cast}"
        )


def copy_into(t: Tensor, src: Tensor | npt.ArrayLike) -> Tensor:
    """:meth:`Tensor.copy_ <torchlean.tensor.Tensor.copy_>`: ``src`` written into ``t``'s storage
    (rules and errors there); returns ``t``."""
    check_writable(t, "copy_()")
    data = t._data
    value = written_values(
        t,
        "copy_()",
        "the source of copy_()",
        src,
        "use the source tensor itself, or torchlean.broadcast_to(src, t.shape) (a new tensor on "
        "the tape)",
    )
    # no int64 range check here: a Tensor source holds no uint64, and written_values refused any
    # integer beyond int64; floats are refused by the same_kind rule
    _check_copy_source(value, t.shape, t.dtype)
    # numpy's copyto raises ValueError for a shape that does not broadcast or a read-only
    # destination, TypeError for a cast its rule refuses: check_writable, _check_copy_source (the
    # same broadcast and same_kind rules) and written_values (numeric data only) refused each
    # before, so nothing is caught here (tests/runtime/test_write_rules.py sweeps the sources)
    with np.errstate(over="ignore", under="ignore"):  # float64 -> float32 beyond its range: +-inf, as torch
        if isinstance(data, np.ndarray):
            np.copyto(data, value, casting="same_kind")
        else:
            staged = np.empty(t.shape, dtype=t.dtype)
            np.copyto(staged, value, casting="same_kind")
            data.copy_(storage.host_tensor(staged))
    t._version.bump()
    return t


def zero(t: Tensor) -> Tensor:
    """:meth:`Tensor.zero_ <torchlean.tensor.Tensor.zero_>`: zeros written into ``t``'s storage;
    returns ``t``."""
    check_writable(t, "zero_()")
    data = t._data
    if isinstance(data, np.ndarray):
        data.fill(0)
    else:
        data.zero_()
    t._version.bump()
    return t


def _fitted_value(source: Array, target: tuple[int, ...], index: Any, shape: tuple[int, ...]) -> Array:
    """``source`` shaped for ``t[index] = source`` on a tensor of ``shape``, where ``index``
    selects ``target``, by torch's rule, one rule for every index: leading size-1 axes of
    ``source`` are dropped while it has more axes than ``target`` (so ``t[0] = np.array([5.0])``,
    ``t[...] = np.array([5.0])`` on a 0-d ``t`` and ``m[r, c] = np.ones((1, 1))`` write the value,
    as in torch, where numpy's item assignment drops them only into an array target), then it
    must broadcast to ``target``.

    Raises:
        TensorError: ``source`` does not broadcast to ``target`` (``cannot assign a value of
            shape (2,) to index 0 of a tensor of shape (3,), which selects one element (accepted:
            as in torch, one value: ...)``).
    """
    fitted = source
    while fitted.ndim > len(target) and fitted.shape[0] == 1:
        fitted = fitted[0]
    try:
        fits = np.broadcast_shapes(fitted.shape, target) == target
    except ValueError:
        fits = False
    if not fits:
        accepted = (
            "one value: a number, or a one-element array, list or tensor of any rank"
            if not target
            else f"a value that broadcasts to {target} once its extra leading size-1 axes are "
            f"dropped: then a rank of at most {len(target)}, each extent 1 or the selected one, "
            "aligned from the right"
        )
        raise TensorError(
            f"cannot assign a value of shape {source.shape} to index {index!r} of a tensor of shape "
            f"{shape}, which selects {'one element' if not target else f'shape {target}'} "
            f"(accepted: as in torch, {accepted})"
        )
    return fitted


def assign(t: Tensor, index: Any, value: Tensor | npt.ArrayLike) -> None:
    """``t[index] = value`` (:meth:`Tensor.__setitem__ <torchlean.tensor.Tensor.__setitem__>`:
    rules and errors there)."""
    check_writable(t, "item assignment")
    from torchlean import functional as F

    items, changed = list(F._index_tuple(index)), False
    for position, item in enumerate(items):
        if isinstance(item, slice):
            items[position] = F._check_slice(item, index)
            changed = changed or items[position] is not item
        elif isinstance(item, list | tuple) and (why := _unreadable_element(item)) is not None:
            raise TensorIndexError(f"cannot assign to index {index!r} of a tensor of shape {t.shape}: {why}")
        elif F._is_uint8_index(item):
            raise TensorError(
                f"cannot assign to index {index!r} of a tensor of shape {t.shape}: it holds uint8 "
                "index data, which numpy takes as positions and torch reads as a (deprecated) mask, "
                "so it is refused rather than written by either rule; convert it: a numpy array "
                "with .astype(bool) for a mask or .astype(np.int64) for positions, a torch tensor "
                "with .bool() or .long()"
            )
        elif _is_torch_tensor(item):  # read here: numpy's own read raised torch's RuntimeError for
            # one that requires grad, and its TypeError for a meta one (review239 F5)
            items[position] = host_array(
                item, f"cannot assign to index {index!r} of a tensor of shape {t.shape}", TensorIndexError,
                "integer or bool index data"
            )
            changed = True
        beyond = _beyond_int64(items[position])
        if beyond is not None:  # review239 F3: numpy casts uint64 index data to int64, wrapping it
            value, wraps = beyond
            wrapped = f", which numpy would read as {_wrapped(value)}" if wraps else ""  # review240 F8
            raise TensorIndexError(
                f"cannot assign to index {index!r} of a tensor of shape {t.shape}: index {value} is out "
                f"of range (beyond int64{wrapped})"
            )
    if changed:  # slice bounds as integers (a 0-d array or tensor bound: review202 F2), torch index data
        index = tuple(items)
    data = t._data
    source = written_values(
        t,
        "item assignment",
        "the value of an item assignment",
        value,
        "build the tensor out of place (e.g. torchlean.concat of the pieces, or "
        "torchlean.scatter_add into a new tensor)",
    )
    if t.dtype == np.int64:  # written_values refused integers beyond int64 (a Tensor holds none)
        _require_floats_fit_int64(source)
    refusal = _mask_extent_refusal(t.shape, items)  # review243 F11: before numpy expands a mask,
    if refusal is not None:  # after the value's refusals, as torch's order (review244 F1)
        raise _unassignable(t, index, refusal)
    if source.ndim and source.size == 1:  # fits any target by torch's rule (review114 F3: numpy
        source = source.reshape(())  # < 2.4 warns writing it into one element, 2.4 refuses)
    try:  # numpy drops a value's leading size-1 axes into an array target, as torch does
        _write(data, index, source)
    except (ValueError, TypeError, IndexError, OverflowError) as exc:
        if not source.ndim:  # a number broadcasts to any target: the index is at fault
            raise _unassignable(t, index, exc) from exc
        try:  # the selected shape, by numpy's indexing of a zero-strided stand-in (a view for
            # basic indices; an advanced index gathers one byte per selected entry)
            target = np.broadcast_to(np.zeros((), np.bool_), t.shape)[index].shape
        except (ValueError, TypeError, IndexError) as index_fault:
            raise _unassignable(t, index, index_fault) from index_fault
        fitted = _fitted_value(source, target, index, t.shape)  # into one element too, as torch
        try:
            _write(data, index, fitted)
        except (ValueError, TypeError, IndexError, OverflowError) as fault:
            raise _unassignable(t, index, fault) from fault
    t._version.bump()


def _unreadable_element(item: list[object] | tuple[object, ...]) -> str | None:
    """Why a torch tensor in index list ``item`` cannot be read by numpy (review240 F5: one that
    requires grad raised torch's RuntimeError from numpy's read of the list), else None."""
    for position, element in enumerate(item):
        if is_torch_tensor(element):
            why = torch_refusal(f"its element {position}", element)
            if why is not None:
                return why
    return None


_INT64_RANGE = range(-(2**63), 2**63)


def _beyond_int64(item: object) -> tuple[int, bool] | None:
    """An integer of index ``item`` (a Python or numpy integer, an integer array, or a list or
    tuple numpy reads as one) outside int64, the first found, and whether numpy would wrap it
    (unsigned index data, cast to int64 modulo 2**64) rather than refuse it; else None."""
    if isinstance(item, bool | np.bool_):
        return None
    if isinstance(item, int | np.integer):
        return None if int(item) in _INT64_RANGE else (int(item), False)
    if isinstance(item, list | tuple):
        try:
            item = np.asarray(item)
        except (ValueError, TypeError, OverflowError):  # ragged or not numbers: numpy's own refusal
            return None
    if not isinstance(item, np.ndarray) or not item.size or item.dtype.kind not in "uO":
        return None  # nothing copied for other index data (review240 F2: a broadcast view was)
    if item.dtype.kind == "u":
        if item.max() <= np.iinfo(np.int64).max:
            return None
        flat = item.ravel()
        return int(flat[np.argmax(flat > np.iinfo(np.int64).max)]), True
    if item.dtype.kind == "O":  # Python integers beyond uint64 ([2**70])
        for value in item.ravel():
            integer = isinstance(value, int | np.integer) and not isinstance(value, bool | np.bool_)
            if integer and int(value) not in _INT64_RANGE:
                return int(value), False
    return None


def _wrapped(value: int) -> int:
    """``value`` as numpy's cast to int64 reads it (modulo 2**64)."""
    return (value + 2**63) % 2**64 - 2**63


def _write(data: Any, index: Any, source: Array) -> None:
    """``data[index] = source`` into numpy storage, or through a host copy into torch storage
    (written back only when the assignment succeeded), with float overflow to ``±inf`` and
    underflow to 0 as torch casts.

    Raises:
        ValueError, TypeError, IndexError, OverflowError: numpy's, for an index or value it cannot
            apply; ``data`` is then unchanged where numpy checks before writing.
    """
    with np.errstate(over="ignore", under="ignore"):  # beyond float32: +-inf, tiny: 0, as torch
        if isinstance(data, np.ndarray):
            data[index] = source
        else:
            staged = storage.to_host(data).copy()
            staged[index] = source
            data.copy_(storage.host_tensor(staged))


def _axes_taken(item: object) -> tuple[int, tuple[int, ...] | None] | None:
    """How many axes of the target the index entry ``item`` selects, and its shape where it is a
    boolean mask of rank >= 1 (read without copying it), else None where that is not known
    without reading it (a list, a tensor of torchlean's, an object numpy may refuse)."""
    if item is None or isinstance(item, bool | np.bool_):
        return 0, None  # a new axis; a scalar bool adds one too
    if isinstance(item, slice | int | np.integer):
        return 1, None
    shape = declared_shape(item)
    if shape is None or (is_torch_tensor(item) and torch_refusal("index", item) is not None):
        return None
    dtype = str(getattr(item, "dtype", "")).removeprefix("torch.")
    if dtype == "bool":
        return len(shape), shape if shape else None
    if dtype in ("int8", "int16", "int32", "int64", "uint16", "uint32", "uint64"):  # uint8: refused
        return 1, None
    return None


def _mask_extent_refusal(shape: tuple[int, ...], items: list[Any]) -> IndexError | None:
    """numpy's refusal of the boolean masks in index entries ``items`` on a target of ``shape``
    (too many indices, or a mask extent other than the axis's), in numpy's words, found from the
    declared shapes before numpy expands a mask into int64 positions (review243 F11: a view
    declaring 2**26 * 6 entries raised numpy's MemoryError); None where none is found or an
    entry's extent is not known without reading it (numpy then applies the index)."""
    taken = [None if item is Ellipsis else _axes_taken(item) for item in items]
    if not any(entry is not None and entry[1] is not None for entry in taken):
        return None
    ellipses = [position for position, item in enumerate(items) if item is Ellipsis]
    unknown = any(entry is None for position, entry in enumerate(taken) if position not in ellipses)
    if len(ellipses) > 1 or unknown:
        return None
    counts = [0 if entry is None else entry[0] for entry in taken]
    total = sum(counts)
    if total > len(shape):
        return IndexError(
            f"too many indices for array: array is {len(shape)}-dimensional, but {total} were indexed"
        )
    for position, entry in enumerate(taken):
        if entry is None or entry[1] is None:
            continue
        if ellipses and position > ellipses[0]:
            start = len(shape) - sum(counts[position:])
        else:
            start = sum(counts[:position])
        for offset, extent in enumerate(entry[1]):
            if extent != shape[start + offset]:
                return IndexError(
                    f"boolean index did not match indexed array along axis {start + offset}; size of "
                    f"axis is {shape[start + offset]} but size of corresponding boolean axis is {extent}"
                )
    return None


def _unassignable(t: Tensor, index: Any, exc: Exception) -> TensorError:
    """The refusal of an ``index`` numpy cannot apply to ``t`` (out of range, of a kind numpy
    does not index with), naming the index, ``t``'s shape and numpy's reason; an
    :class:`~torchlean.tensor.TensorIndexError` (an ``IndexError`` too, as torch's) for an index
    out of range or too many indices (review203 F4; not for an index of a kind numpy does not
    take, a float or a string, which numpy also calls an ``IndexError``: review204 F3)."""
    out_of_range = isinstance(exc, IndexError) and any(  # not numpy's IndexError of an index's kind
        words in str(exc) for words in ("out of bounds", "too many indices"))
    kind = TensorIndexError if out_of_range else TensorError
    return kind(f"cannot assign to index {index!r} of a tensor of shape {t.shape}: {exc}")


def update_in_place(
    t: Tensor, spelling: str, op: Callable[[OperandLike], Tensor], other: OperandLike
) -> Tensor:
    """``t += o`` (and ``-=``, ``*=``, ``/=``: ``spelling``, ``op`` the bound operator): the op runs
    on the session's accepted kernel, then its result is written into ``t``'s storage as
    :meth:`Tensor.copy_` writes, so every name bound to ``t`` (a parameter list's entry too) sees
    it, as in torch. Like torch, the update keeps ``t``'s shape (``o`` may only broadcast to it)
    and is refused on a leaf that requires grad while gradients are recorded (update parameters
    under ``torchlean.no_grad()``).

    torchlean's tape records no in-place op, so while gradients are recorded an update that
    torch would record is refused, never made silently out of place: on a tensor with a tape
    history (``out += x``, ``loss += reg``; write ``out = out + x``) and with an operand that
    requires grad. (Rebinding the name instead would give torch's gradients only when no
    other reference to ``t`` is used afterwards: a list of activations updated in a loop
    would silently keep the old values.)

    Python runs ``w[i] op= v`` as ``tmp = w[i]; tmp op= v; w[i] = tmp``, so the update that is
    refused then is on ``tmp``, indexing's new tensor; when ``t`` is the latest result of
    indexing (:func:`note_indexed`), the refusal says that ``w[...] op= v`` is an item assignment
    into ``w`` and names ``w``'s own remedy, as ``w[i] = v`` would: ``torchlean.no_grad()`` for a
    leaf, ``tl.concat`` or a 0/1 mask for a tensor with a tape history, an out-of-place build for
    an operand that requires grad.

    Raises:
        AutogradError: as above, naming the rewrite.
        TensorError: a result of another shape than ``t``'s; read-only storage.
        the op's errors (a dtype mismatch, devices, a non-float tensor: ``GuardError`` ...).
    """
    what = f"in-place {spelling}"
    rewrite = f"write t = t {spelling[0]} other (a new tensor on the tape)"
    if is_grad_enabled():
        source = _indexed_from(t)
        if source is not None:
            _refuse_indexed_update(t, source, spelling, other)
    if is_grad_enabled() and t._node is not None:
        raise AutogradError(
            f"autograd: {what} on a tensor with a tape history (made by `{t._node.name}`) while "
            f"gradients are recorded: torchlean's tape records no in-place op (torch records "
            f"one); {rewrite}"
        )
    check_writable(t, what)
    if is_grad_enabled() and isinstance(other, _tensor_type()) and other._requires_grad:
        raise AutogradError(
            f"autograd: {what} with an operand that requires grad while gradients are recorded: "
            f"torchlean's tape records no in-place op, so that gradient would be lost; {rewrite}, "
            f"or update under torchlean.no_grad(){torch_no_grad_note()}"
        )
    declared = _operand_shape(t, other)
    if declared is not None:  # review243 F3: before the op computes the whole broadcast result
        try:
            broadcast = np.broadcast_shapes(t.shape, declared)
        except ValueError:  # the op's guard refuses shapes that do not broadcast
            broadcast = t.shape
        if broadcast != t.shape:
            raise _shape_changed(what, broadcast, t.shape)
    result = op(other)
    if result.shape != t.shape:
        raise _shape_changed(what, result.shape, t.shape)
    return t.copy_(result)._keep_producer(result)


def _shape_changed(what: str, result: tuple[int, ...], shape: tuple[int, ...]) -> TensorError:
    """The refusal of an in-place update ``what`` whose result would have another shape."""
    return TensorError(
        f"{what}: the result has shape {result}, but an in-place update keeps this tensor's shape "
        f"{shape} (accepted: an operand that broadcasts to {shape})"
    )


def _operand_shape(t: Tensor, other: object) -> tuple[int, ...] | None:
    """The shape of the operand ``other`` of ``t op= other`` where the op would accept its dtype
    (and device), so that a result of another shape than ``t``'s can be refused before the op
    computes it; None where the op refuses something else first (a non-float ``t``, a Tensor of
    another dtype or device, array data it cannot read) or the shape is not free to read."""
    if t.dtype not in (np.dtype(np.float32), np.dtype(np.float64)):
        return None
    if isinstance(other, _tensor_type()):
        return other.shape if other.dtype == t.dtype and other.device == t.device else None
    if isinstance(other, np.ndarray):
        return other.shape if other.dtype.kind in "biuf" else None
    if is_torch_tensor(other):
        torch_other: Any = other
        if torch_refusal("other", torch_other) is not None or torch_other.is_complex():
            return None
        return declared_shape(other)
    return None


def _refuse_indexed_update(t: Tensor, source: Tensor, spelling: str, other: object) -> None:
    """Refuse the update ``t op= other`` (``spelling``) of ``t``, the latest ``source[...]``,
    while gradients are recorded, where :func:`update_in_place` would refuse it, in the terms of
    the item assignment ``source[...] op= other`` runs (review111 F3): ``source`` requires grad
    (then ``t`` has a tape history), or ``other`` is a Tensor that requires grad. Returns when
    neither holds.

    Raises:
        AutogradError: naming ``source``'s shape and remedy, and ``tmp = tmp op v`` for a change
            of the indexed copy only.
    """
    op = spelling[0]
    runs = (  # also reached by ``row = t[0]; row += v``: hence "if" (review113 F7)
        f"if this is `t[...] {spelling} v`, Python runs it as `tmp = t[...]; tmp {spelling} v; t[...] = "
        "tmp`, an item assignment into t"
    )
    copy_only = f" (to change only the indexed copy, a new tensor, write tmp = tmp {op} v)"
    if source._requires_grad:
        if source._node is None:
            raise AutogradError(
                f"autograd: in-place {spelling} on a tensor indexed from t, a leaf of shape "
                f"{source.shape} that requires grad, while gradients are recorded: {runs}, "
                "refused as t[...] = v is; write it inside "
                f"torchlean.no_grad(){torch_no_grad_note()}{copy_only}"
            )
        raise AutogradError(
            f"autograd: in-place {spelling} on a tensor indexed from t, a tensor of shape "
            f"{source.shape} with a tape history (made by `{source._node.name}`), while gradients "
            f"are recorded: {runs}, and torchlean's tape records no in-place op (torch records "
            f"one); build t's new value out of place: {_MASK_REMEDY}{copy_only}"
        )
    if isinstance(other, _tensor_type()) and other._requires_grad:
        raise AutogradError(
            f"autograd: in-place {spelling} with an operand that requires grad on a tensor indexed "
            f"from t (shape {source.shape}), while gradients are recorded: {runs} from a value "
            "that requires grad, and torchlean's tape records no in-place op, so that gradient "
            "would be lost; build the tensor out of place (tl.concat of the pieces, or "
            "tl.scatter_add into a new tensor), or write under torchlean.no_grad() when no "
            f"gradient should reach v{torch_no_grad_note()}{copy_only}"
        )
