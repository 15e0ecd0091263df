"""Reading data into a tensor's values: dtypes, and the values of Python, numpy and torch data.

What ``torchlean.tensor(data)`` (``Tensor(data)``), ``from_torch`` and the functional ops'
constant operands read before a tensor exists: the dtype spellings (:func:`resolve_dtype`,
:data:`DEFAULT_DTYPE`, :func:`_check_grad_dtype`), a fresh C-contiguous array of a supported dtype
for the data (:func:`_infer_array`; a torchlean Tensor's values are read by the Tensor class, which
passes them here as an array), a torch tensor's values (:func:`_from_torch_array`,
:func:`_torch_values`), and the refusals of values a dtype cannot hold (:func:`_object_numbers`,
:func:`_require_int64_fits`, :func:`_require_floats_fit_int64`). :mod:`torchlean.tensor`
re-exports the public names.

From torchlean this module imports only ``_checks`` and ``_tensor_errors`` at load, and
``torchlean.tensor`` inside :func:`_float64_tensors` (which looks for Tensors among list data);
torch only where a torch tensor is met.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import (
    FLOAT_DTYPES,
    dtype_shown,
    int_overflow,
    is_ambiguous_float,
    is_dtype_spelling,
    shown,
    shown_briefly,
)
from torchlean._tensor_errors import GradConversionError, TensorError, TensorTypeError, _preview
from torchlean._torch_host import is_torch_tensor

if TYPE_CHECKING:
    import torch

__all__ = ["DEFAULT_DTYPE", "DTypeLike", "operand_type", "resolve_dtype"]

Array = npt.NDArray[Any]
DTypeLike = str | type | np.dtype[Any] | Any
"""``"float32"``, ``np.float64``, ``np.dtype("float32")`` or ``torch.float64``."""

DEFAULT_DTYPE: np.dtype[Any] = np.dtype(np.float32)
_SUPPORTED: tuple[np.dtype[Any], ...] = (*FLOAT_DTYPES, np.dtype(np.int64), np.dtype(np.bool_))
_INT64_MAX = int(np.iinfo(np.int64).max)


def resolve_dtype(dtype: DTypeLike) -> np.dtype[Any]:
    """Normalise a dtype spelling to one of ``float32``, ``float64``, ``int64``, ``bool``.

    Raises:
        TensorError: ``unsupported tensor dtype X (supported: float32 | float64 | int64 | bool)``,
            also for the string ``"float"`` (float64 to numpy, float32 to torch).
        TensorTypeError: ``dtype`` is not a dtype spelling but a value (``None``, ``np.int64(2)``,
            an array or a tensor, whose ``.dtype`` numpy would read: review239 F6).
    """
    if is_ambiguous_float(dtype):
        raise TensorError(_unsupported(dtype_shown(dtype)))
    if not is_dtype_spelling(dtype):  # np.dtype reads a value's .dtype, and None as float64
        raise TensorTypeError(
            f"unsupported tensor dtype {_preview(dtype)} of type {type(dtype).__name__}: not a dtype "
            "(accepted: a string such as 'float32', a numpy dtype or scalar type, or a torch dtype; "
            "supported: float32 | float64 | int64 | bool)"
        )
    spelled = dtype
    if type(dtype).__module__ == "torch":
        spelled = str(dtype).removeprefix("torch.")
    try:
        resolved = np.dtype(spelled)
    except TypeError as exc:
        raise TensorError(_unsupported(dtype)) from exc
    if resolved not in _SUPPORTED:
        raise TensorError(_unsupported(dtype))
    return resolved


def _unsupported(dtype: object) -> str:
    return f"unsupported tensor dtype {dtype} (supported: float32 | float64 | int64 | bool)"


_NUMPY_TORCH_DTYPES = frozenset(
    {"float16", "float32", "float64", "complex64", "complex128", "bool"}
    | {f"{kind}{bits}" for kind in ("int", "uint") for bits in (8, 16, 32, 64)}
)
"""The torch dtypes (``str(dtype)`` without ``torch.``) that ``torch.Tensor.numpy()`` converts;
the others (bfloat16, the float8 types, quantized types, ...) have no numpy dtype."""


_is_torch_tensor = is_torch_tensor
"""The runtime's name for :func:`torchlean._torch_host.is_torch_tensor`."""


def _from_torch_array(t: Any, *, widen: bool = False) -> Array:
    """The values of the torch tensor ``t`` as a numpy array (a view of CPU storage, else a host
    copy), detached, with conjugate and negative bits resolved. With ``widen`` (an explicit dtype
    was requested), a floating dtype numpy cannot hold (bfloat16, the float8 types) is first
    widened to float64, which holds each of its values exactly, as ``t.to(torch.float64)``.

    Raises:
        TensorError: a meta, sparse (any sparse layout), mkldnn or nested tensor (no dense
            values), or a dtype numpy cannot
            hold (``unsupported tensor dtype torch.bfloat16 (supported: float32 | float64 | int64 |
            bool)``) and not widened, before torch's own ``TypeError: Got unsupported ScalarType``.
    """
    layout = str(t.layout).removeprefix("torch.").lstrip("_")  # strided, sparse_csr, mkldnn, jagged ...
    nested = bool(getattr(t, "is_nested", False))
    if t.device.type == "meta" or nested or layout != "strided":  # review160 F2: every sparse layout
        kind = ("meta" if t.device.type == "meta" else "nested" if nested
                else "sparse" if layout.startswith("sparse") else layout)
        # a nested tensor of the default layout has no sizes (review160 F1: its message raised)
        shape = f"{t.size(0)} tensors of their own shapes" if nested else f"shape {tuple(t.shape)}"
        make = ("" if kind == "meta" else "; t.to_padded_tensor(0.0) or t.unbind() makes them" if nested
                else "; t.to_dense() makes one")
        raise TensorError(
            f"cannot copy a {kind} torch tensor ({shape}, layout {layout}): it has no dense values "
            f"(accepted: dense torch tensors on cpu or cuda{make})"
        )
    if str(t.dtype).removeprefix("torch.") not in _NUMPY_TORCH_DTYPES:
        if not (widen and t.is_floating_point()):
            hint = " (torchlean.tensor(t, dtype='float32') converts it)" if t.is_floating_point() else ""
            raise TensorError(_unsupported(t.dtype) + hint)
        import torch

        t = t.detach().to(torch.float64)
    return np.asarray(t.detach().cpu().resolve_conj().resolve_neg().numpy())


def _infer_array(data: object, dtype: DTypeLike | None) -> Array:
    """A fresh C-contiguous array for ``data`` in the resolved dtype (always a copy). A torchlean
    Tensor is not ``data`` here: :class:`torchlean.tensor.Tensor` passes its host values (a numpy
    array of a tensor dtype)."""
    if _is_torch_tensor(data):
        source: Any = _from_torch_array(data, widen=dtype is not None)
        from_array = True
    else:
        source = data
        from_array = isinstance(data, np.ndarray | np.generic)
    if (masked := masked_entries(data)) is not None:
        raise TensorError(f"cannot create a tensor from {masked}")
    # the source numpy read (torch tensors inside a list replaced), which the re-reads below take
    raw, source = _read_values(source, data, widen=dtype is not None)
    if raw.dtype.kind in "USV" and raw.size:  # strings, bytes: found again as the values written
        raw = np.asarray(source, dtype=object)
    # a float16 list cannot reach 2**63, which it would round to inf, warning (review179 F4)
    big = raw.dtype.kind == "f" and float(np.finfo(raw.dtype).max) >= 2.0**63
    if not from_array and big and raw.size and not (np.abs(raw) < 2.0**63).all():
        exact = np.array(source, dtype=object)  # numpy reads [2**63, 1] as float64 (mread 1)
        if all(isinstance(v, int) and not isinstance(v, bool) for v in exact.flat):
            raw = exact  # integers as written: refused beyond int64 as [2**64, 1] is
    if raw.dtype == object:  # Python integers beyond numpy's range, or not numbers at all
        raw = _object_numbers(data, raw, dtype)
    if raw.dtype.kind not in "biuf":  # strings, complex: never cast, even on request
        raise TensorError(_unsupported(raw.dtype))
    if not raw.dtype.isnative:  # e.g. big-endian '>f8' from a file: same values, native byte order
        raw = raw.astype(raw.dtype.newbyteorder("="))
    if dtype is not None:
        target = resolve_dtype(dtype)
    elif raw.dtype.kind == "f":
        if not from_array:
            # a list of float64 tensors stays float64, as torch.tensor keeps 0-d ones (review111 F2)
            target = raw.dtype if raw.dtype == np.float64 and _float64_tensors(data) else DEFAULT_DTYPE
        elif raw.dtype in FLOAT_DTYPES:
            target = raw.dtype
        else:  # float16, longdouble: converted on request, as torch's bfloat16 (review138 F4)
            raise TensorError(
                _unsupported(raw.dtype) + " (torchlean.tensor(data, dtype='float32') or "
                "dtype='float64' converts it)"
            )
    elif raw.dtype.kind in "iu":
        target = np.dtype(np.int64)
    else:
        target = np.dtype(np.bool_)
    if target == np.int64:
        _require_int64_fits(raw)
    # 1e40 as float32 is inf, silently, as in torch.tensor; only a narrowing float cast can
    # overflow, and entering np.errstate costs about a microsecond, so other casts skip it
    narrowing = raw.dtype.kind == "f" and raw.dtype.itemsize > target.itemsize
    with np.errstate(over="ignore", under="ignore") if narrowing else contextlib.nullcontext():
        return np.array(raw, dtype=target, order="C", copy=True)


def _read_values(
    source: object, data: object, *, widen: bool, retried: bool = False
) -> tuple[Array, object]:
    """``np.asarray(source)`` and the source it read. Where numpy fails on torch tensors inside a
    list or tuple (one that requires grad, bfloat16, meta or on a GPU: torch's bare
    ``TypeError``/``RuntimeError``, review179 F2), those elements are read as
    :func:`_from_torch_array` reads a torch tensor given alone (detached, copied to the host;
    ``widen`` as there) and that list is read instead (and returned, for any later re-read of the
    values: review181 F1).

    Raises:
        TensorError: ragged nested sequences; an element :func:`_from_torch_array` refuses.
    """
    try:
        return np.asarray(source), source
    except GradConversionError:  # review230 F2: numpy's conversion is no call of the user's
        raise TensorError(
            f"cannot create a tensor from {type(data).__name__} data holding a torchlean tensor that "
            "requires grad: the new tensor would drop its tape history (accepted: its .detach(), or, to keep "
            "the history, a tensor built with torchlean ops such as tl.concat and tl.reshape)"
        ) from None
    except ValueError as exc:
        raise TensorError(
            f"cannot create a tensor from {type(data).__name__} data: {exc} (accepted: a scalar, a "
            "numpy/torch array or nested sequences of one rectangular shape)"
        ) from exc
    except (TypeError, RuntimeError):
        if retried or not isinstance(source, list | tuple):
            raise
        read = torch_elements_read(source, _as_data_element(widen))
        return _read_values(read, data, widen=widen, retried=True)


def torch_elements_read(
    items: list[Any] | tuple[Any, ...], read: Callable[[Any, str], object], at: str = ""
) -> list[object]:
    """``items`` (nested lists and tuples, as lists) with each torch tensor replaced by
    ``read(tensor, where)``, ``where`` its index path (``[1][0]``): the list numpy failed to read
    (:func:`_read_values`, and the functional ops' operands) read again."""
    out: list[object] = []
    for position, item in enumerate(items):
        where = f"{at}[{position}]"
        if isinstance(item, list | tuple):
            item = torch_elements_read(item, read, where)
        elif _is_torch_tensor(item):
            item = read(item, where)
        out.append(item)
    return out


def _as_data_element(widen: bool) -> Callable[[Any, str], object]:
    """How :func:`_read_values` reads a torch tensor inside ``tl.tensor``'s data.

    Raises (from the reader):
        TensorError: ``cannot create a tensor from data[1][0]: cannot copy a meta torch tensor ...``.
    """

    def read(t: Any, where: str) -> object:
        try:
            return _from_torch_array(t, widen=widen)
        except TensorError as exc:
            raise TensorError(f"cannot create a tensor from data{where}: {exc}") from exc

    return read


def _float64_tensors(data: object) -> bool:
    """Whether ``data`` is a list or tuple (nested or not) whose every element is a float64
    tensor, a torchlean Tensor or a torch tensor, of any shape (``[a, b]``, ``[[a, b], [c, d]]``,
    a list of rows): ``tl.tensor`` keeps float64 for it, as ``torch.tensor`` does, where a list
    holding a number (a Python float, a numpy float64) or a tensor of another dtype gets the
    numbers' rule (float32). False for a list without elements. Stops at the first element
    that is no float64 tensor."""
    from torchlean.tensor import Tensor  # imported here: torchlean.tensor imports this module

    found = False
    pending: list[object] = [data]
    while pending:
        item = pending.pop()
        if isinstance(item, list | tuple):
            pending.extend(item)
        elif isinstance(item, Tensor) or _is_torch_tensor(item):
            dtype: object = getattr(item, "dtype", None)
            if str(dtype).removeprefix("torch.") != "float64":
                return False
            found = True
        else:
            return False
    return found


def _object_numbers(data: object, raw: Array, dtype: DTypeLike | None) -> Array:
    """The numeric values of ``data`` that numpy holds only as objects: real numbers among which
    a Python integer lies outside int64 and uint64 (``2**70``, ``[1, 2**70]``), cast to the requested dtype
    or, without one, to int64 (float32 when a float is among them), as ``torch.tensor`` infers it.
    An integer is accepted only where it fits: never beyond int64 for int64 or bool (torch:
    "Overflow when unpacking long long"), and for a float dtype when it rounds to a finite value
    (the rule of the functional ops' integer constants, :func:`torchlean._checks.int_overflow`).

    Raises:
        TensorTypeError: an element that is not a Python or numpy number (``None``, a dict, a
            ``Fraction``, an object): ``cannot create a tensor from None of type NoneType: it is
            not numeric data ...``.
        TensorError: ``the integer 1180591620717411303424 does not fit the int64 tensor dtype
            (accepted: integers in [-9223372036854775808, 9223372036854775807]; pass
            dtype='float64' for a rounded float value)``, or the same for a float dtype whose
            largest finite value it exceeds.
    """
    values = _element_scalars(raw, widen=dtype is not None)
    raw = np.empty(raw.shape, dtype=object)
    for position, value in enumerate(values):  # one by one: a tuple element stays one object
        raw.flat[position] = value
    # Python and numpy numbers only: another Real (a Fraction) would be cast to int64 truncated,
    # where torch, and the ops' constants, refuse it (review53 F1)
    nonnumeric = [v for v in values if not isinstance(v, int | float | np.integer | np.floating | np.bool_)]
    if nonnumeric or not values:
        bad = nonnumeric[0] if nonnumeric else data
        subject = (
            f"{_preview(data)} of type {type(data).__name__}: it is"
            if raw.ndim == 0 or not values
            else f"{_preview(data)}: its element {_preview(bad)} of type {type(bad).__name__} is"
        )
        raise TensorTypeError(
            f"cannot create a tensor from {subject} not numeric data (accepted: a scalar, a numpy/torch "
            "array or nested sequences of numbers of one rectangular shape)"
        )
    if dtype is not None:
        target = resolve_dtype(dtype)
    elif any(isinstance(v, float | np.floating) for v in values):
        target = DEFAULT_DTYPE
    else:
        target = np.dtype(np.int64)
    for v in values:
        accepted = int_overflow(v, target) if isinstance(v, int) else None
        if accepted is not None:
            if target.kind != "f":
                accepted += "; pass dtype='float64' for a rounded float value"
            what = shown(v)
            what = what if what.startswith(("a ", "an ")) else f"the integer {what}"
            raise TensorError(f"{what} does not fit the {target} tensor dtype (accepted: {accepted})")
    with np.errstate(over="ignore", under="ignore"):
        return raw.astype(target)


def _element_scalars(raw: Array, *, widen: bool) -> list[object]:
    """The elements of an object array numpy made of a list, with a 0-d torch tensor or 0-d numpy
    array among them (``[torch.tensor(1.0), 2**70]``) read as its number (the tensor as
    :func:`_from_torch_array` reads it), so that a refusal names the element that is not a number
    rather than the tensor beside it (review185 F4); other elements as they are.

    Raises:
        TensorError: a tensor element :func:`_from_torch_array` refuses, naming its index path.
    """
    values: list[object] = []
    for index, value in np.ndenumerate(raw):
        if _is_torch_tensor(value):
            value = _as_data_element(widen)(value, "".join(f"[{i}]" for i in index))
        if isinstance(value, np.ndarray) and value.ndim == 0:
            value = value[()]
        values.append(value)
    return values


def _require_int64_fits(raw: Array) -> None:
    """Refuse numeric data that the int64 dtype cannot hold, before a numpy cast would change it
    silently: a uint64 above ``2**63 - 1`` (numpy wraps it to a negative number; torch 2.13 refuses such
    a Python int, "Overflow when unpacking long long", and keeps such an array as a ``torch.uint64``
    tensor, a dtype torchlean does not have), or a float :func:`_require_floats_fit_int64` refuses. Data
    cast to int64 is checked first: by this for :func:`torchlean.tensor.tensor` (and so
    :func:`~torchlean.tensor.from_torch`) and the constant operands of :mod:`torchlean.functional`; item
    assignment checks its floats only (its integers passed
    :func:`torchlean.functional._constant_values`, which refuses those beyond int64), and
    :meth:`Tensor.copy_ <torchlean.tensor.Tensor.copy_>` writes no floats into an int64 tensor. Index
    arrays (``gather``, ``scatter_add``, ``cross_entropy`` targets) refuse a too-large uint64 with the
    index guard's message instead.

    Raises:
        TensorError: ``the integer 9223372036854775808 does not fit the int64 tensor dtype
            (accepted: integers in [-9223372036854775808, 9223372036854775807]; ...)``; ``value nan
            does not fit the int64 tensor dtype (accepted: finite numbers in [-2**63, 2**63),
            truncated toward zero)``, naming the first offending value in row-major order.
    """
    if raw.size == 0:
        return
    if raw.dtype == np.uint64 and raw.max() > _INT64_MAX:
        raise TensorError(
            f"the integer {int(raw.max())} does not fit the int64 tensor dtype (accepted: "
            f"{int_overflow(int(raw.max()), np.dtype(np.int64))}; pass dtype='float64' for a rounded "
            "float value)"
        )
    _require_floats_fit_int64(raw)


def _require_floats_fit_int64(raw: Array) -> None:
    """Refuse float data with a value that is NaN, infinite or outside ``[-2**63, 2**63)`` (numpy's
    cast to int64 turns each into ``-2**63`` with at most a ``RuntimeWarning``; torch refuses
    "value cannot be converted to type int64 without overflow"); other floats are truncated
    toward zero by the cast, as by torch. Integer and bool data pass unchecked: this is the
    float half of :func:`_require_int64_fits`, alone for data whose integers were checked already.

    Raises:
        TensorError: ``value nan does not fit the int64 tensor dtype (accepted: finite numbers in
            [-2**63, 2**63), truncated toward zero)``, naming the first offending value in
            row-major order.
    """
    if raw.dtype.kind == "f" and raw.size:
        wide = raw if raw.dtype.itemsize >= 8 else raw.astype(np.float64)  # 2**63 exactly
        outside = ~((wide >= -(2.0**63)) & (wide < 2.0**63))  # NaN compares False: outside
        if outside.any():
            value = float(wide[outside].flat[0])
            raise TensorError(
                f"value {value!r} does not fit the int64 tensor dtype (accepted: finite numbers in "
                "[-2**63, 2**63), truncated toward zero)"
            )


def _check_grad_dtype(dtype: np.dtype[Any]) -> None:
    """Refuse gradients for a tensor of ``dtype`` unless it is float32 or float64 (as torch allows
    only floating tensors to require gradients).

    Raises:
        TensorError: ``only float32 and float64 tensors can require gradients (got dtype int64;
            ...)``, naming ``dtype="float32"``.
    """
    if dtype not in FLOAT_DTYPES:  # review230 F5: the way to a float tensor
        raise TensorError(
            f"only float32 and float64 tensors can require gradients (got dtype {dtype}; make a float "
            'tensor of the values: tl.tensor(values, dtype="float32", requires_grad=True))'
        )


def operand_type(value: object) -> str:
    """The type of ``value`` given where a torchlean Tensor is required, for messages: a torch
    tensor's full class name with the conversion to use (``torch.Tensor (a torch tensor: convert
    it with torchlean.from_torch(t))``), else the class name."""
    cls = type(value)
    if _is_torch_tensor(value):
        hint = "a torch tensor: convert it with torchlean.from_torch(t)"
        return f"{cls.__module__}.{cls.__qualname__} ({hint})"
    return cls.__name__


def _torch_values(t: torch.Tensor) -> Array:
    """The values of the torch tensor ``t`` for :func:`torchlean.tensor.from_torch` (its checks,
    in its words).

    Raises:
        TensorTypeError: ``t`` is not a ``torch.Tensor``.
        TensorError: a dtype other than float32, float64, an integer type or bool, or a meta,
            sparse or nested tensor.
    """
    if not _is_torch_tensor(t):
        raise TensorTypeError(
            f"from_torch() needs a torch.Tensor; got {_preview(t)} of type {type(t).__name__} "
            "(accepted: a torch.Tensor; create a tensor from a torchlean Tensor, a numpy array, a "
            "number or nested lists with torchlean.tensor(...))"
        )
    arr = _from_torch_array(t)
    if arr.dtype.kind not in "biu" and arr.dtype not in FLOAT_DTYPES:  # float16, complex
        hint = " (torchlean.tensor(t, dtype='float32') converts it)" if arr.dtype.kind == "f" else ""
        raise TensorError(_unsupported(t.dtype) + hint)  # as bfloat16's (review145 F7)
    return arr


def masked_entries(values: object) -> str | None:
    """What is wrong with ``values`` when it holds a masked entry (a missing value), else None:
    a numpy masked array with one (the first named), ``np.ma.masked``, or a list or tuple with
    such an element (``list(m)``, the rows of one): ``np.asarray`` would read the hidden value under
    the mask as data (review133 F3, review135 F2). A structured masked array
    (``np.genfromtxt(..., names=True, usemask=True)``) is left to the dtype refusal that follows
    (its fields are not one array of numbers); deeper nesting is not searched."""
    if isinstance(values, list | tuple):  # one level, by the elements' types (in C), no deeper walk
        masked_types = (np.ma.MaskedArray, np.ma.core.MaskedConstant)
        if not any(issubclass(kind, masked_types) for kind in set(map(type, values))):
            return None
        for position, element in enumerate(values):
            if isinstance(element, masked_types) and (found := masked_entries(element)) is not None:
                return f"element {position}: {found}"
        return None
    if values is np.ma.masked:
        return "np.ma.masked, a masked value: torchlean reads no missing values (accepted: a number)"
    if not isinstance(values, np.ma.MaskedArray) or values.dtype.names is not None:
        return None
    masked = np.ma.getmaskarray(values)
    count = int(masked.sum())
    if not count:
        return None
    first = tuple(int(i) for i in np.argwhere(masked)[0])
    where = "" if masked.ndim == 0 else f" (the first at index {first})"
    entries = "a masked value" if masked.ndim == 0 else f"{count} masked entr{'ies' if count > 1 else 'y'}"
    return (
        f"a masked array with {entries}{where}: torchlean reads no missing values, and the values under "
        "the mask are not data (accepted: a value in every entry: fill them, m.filled(value), or drop "
        "their rows)"
    )


def host_array(values: object, what: str, error: type[Exception], accepted: str) -> Array:
    """``np.asarray(values)`` for data a library function takes (a trainer's inputs and targets,
    a checkpoint's features, :func:`torchlean.batches.minibatches`' arrays), refusing with
    ``error`` (one line naming ``what``) what numpy would refuse with its bare errors or misread:

    * a torch tensor, alone or inside lists, is read as :func:`_from_torch_array` reads it
      (bfloat16 and the float8 types widened to float64, which holds each value), refusing one
      that requires grad (as a torchlean tensor that requires grad is refused) and a meta, sparse
      or nested one (no dense values);
    * ragged nested sequences (numpy's ``ValueError``);
    * a single value that is not a number (``None``, a string, a dict, a generator), named by
      ``shown_briefly`` and its type, ``accepted`` saying what is taken;
    * a numpy masked array with a masked entry (a missing value, as ``np.genfromtxt(...,
      usemask=True)`` marks one), naming the first: ``np.asarray`` would hand over the hidden
      value under the mask (review133 F3). One with nothing masked is read as its values.
    """
    if (masked := masked_entries(values)) is not None:
        raise error(f"{what}: {masked}")
    def read(tensor: Any, where: str = "") -> Array:
        named = f"{what}: element {where}" if where else what
        if tensor.requires_grad:
            raise error(
                f"{named}: a torch tensor of shape {tuple(tensor.shape)} that requires grad, which numpy "
                "cannot read (accepted: its values, t.detach())"
            )
        try:
            return _from_torch_array(tensor, widen=True)
        except TensorError as refused:
            raise error(f"{named}: {refused}") from None

    if _is_torch_tensor(values):
        return read(values)
    try:
        array = np.asarray(values)
    except ValueError as refused:
        raise error(f"{what} must be a rectangular array of real numbers: {refused}") from None
    except (TypeError, RuntimeError):  # torch tensors inside a list numpy cannot read (review185 F2)
        if not isinstance(values, list | tuple):
            raise
        try:
            array = np.asarray(torch_elements_read(values, read))
        except ValueError as refused:
            if isinstance(refused, error):
                raise
            raise error(f"{what} must be a rectangular array of real numbers: {refused}") from None
    if array.ndim == 0 and array.dtype.kind not in "biuf":
        raise error(
            f"{what}: {shown_briefly(values)} of type {type(values).__name__} is not {accepted}"
        )
    return array
