"""``Shape[*Dims]``: a phantom type that carries tensor dimensions for ``Trainer[In, Out]``.

Statically, ``Shape[4, 3]`` (with the mypy plugin ``torchlean.mypy_plugin``) or
``Shape[Literal[4], Literal[3]]`` (without it) is a distinct type per dimension tuple. Generics
over it are invariant, so mypy reports a ``Trainer[Shape[4], Shape[1]]`` passed where a
``Trainer[Shape[3], Shape[1]]`` is expected. ``Any`` is the wildcard for a dimension known only at
run time (``Shape[Any, 4]``); a bare ``int`` is not, because PEP 646 type-variable tuples are
invariant (reference/typing-notes.md §3).

Nothing checks type arguments at run time (beartype ignores the arguments of user generics),
so code that must refuse wrong data calls :func:`check_dims` with the declared shape type. The
``Shape[4]`` shorthand works only where mypy reads a type (annotations); a ``Shape`` passed as a
call argument is an expression, so write ``check_dims(Shape[Literal[2], Literal[3]], x.shape,
what="x")`` there.
"""

from __future__ import annotations

import operator
import typing
from collections.abc import Iterable, Iterator, Mapping, Sequence, Set
from typing import (
    TYPE_CHECKING,
    Annotated,
    Any,
    Generic,
    Literal,
    SupportsIndex,
    TypeAlias,
    TypeVar,
    TypeVarTuple,
    Unpack,
)

import typing_extensions

from torchlean.backend.errors import TorchLeanError

if TYPE_CHECKING:  # annotations only: this module imports neither numpy nor torch
    import numpy as np
    import numpy.typing as npt
    import torch

    ActualDims: TypeAlias = Sequence[SupportsIndex] | npt.NDArray[np.integer[Any]] | torch.Tensor
else:  # what typing.get_type_hints (beartype, Sphinx) resolves at run time, without numpy or torch
    ActualDims: TypeAlias = Sequence[SupportsIndex] | Any
"""What :func:`check_dims` accepts as the actual shape: a tuple, list or range of ints (Python or
numpy ints), such as an array's ``.shape``, or a 1-d integer numpy array or torch tensor. At run
time any other re-iterable, ordered collection of ints (a dict's ``.values()``, an ``array.array``)
is accepted too, which the annotation leaves out; binary data (``bytes``, ``bytearray``, a
``memoryview`` of bytes) is refused, which the annotation lets through as a sequence of ints."""

Dims = TypeVarTuple("Dims")


class Shape(Generic[*Dims]):
    """Phantom shape type: ``Shape[2, 3]`` stands for arrays of shape ``(2, 3)``.

    Never instantiated for data; it only appears as a type argument (``Trainer[Shape[4],
    Shape[1]]``). Each dimension is a non-negative ``int`` literal or ``Any``.
    """

    __slots__ = ()

    def __class_getitem__(cls, params: object) -> Any:
        """Subscript like any generic, but refuse a malformed dimension at once.

        Each dimension must be a non-negative int, ``Literal[n]`` of one such int, ``Any``, a
        ``TypeVar`` or an unpacked ``TypeVarTuple`` (``*Ts``), as for the mypy plugin. A numpy
        integer (or any other non-bool ``__index__`` type) counts as its int value:
        ``Shape[np.int64(3)]`` is ``Shape[3]``. Refusing here also keeps malformed dimensions out of
        typing's subscription cache, which keys ``Shape[True]``, ``Shape[1.0]``, ``Shape[np.int64(1)]``
        and ``Shape[1]`` alike and would hand back the first one made.

        Raises:
            ShapeSpecError: for a bool, float, string, ``None``, a type such as ``int``, a negative
                int or one beyond ``2**63 - 1`` (numpy's and mypy's largest), ``Literal[-1]``,
                ``Literal[True]``, a ``Literal`` of several values, or an unpacked tuple; the
                message names the argument.
        """
        items = params if isinstance(params, tuple) else (params,)
        dims = tuple(_subscript_dimension(item) for item in items)
        return super().__class_getitem__(dims if isinstance(params, tuple) else dims[0])  # type: ignore[misc]


def _subscript_dimension(item: object) -> object:
    """One ``Shape[...]`` argument as it is stored (ints normalised to ``int``; ``Annotated[d, ...]``
    as ``d``, its metadata dropped, as mypy reads it), or ShapeSpecError."""
    if item is Any or isinstance(item, TypeVar):
        return item
    origin = typing.get_origin(item)
    if origin is Annotated:  # an axis name such as Annotated[Literal[3], "rows"]
        return _subscript_dimension(typing.get_args(item)[0])
    if origin is Unpack or origin is typing_extensions.Unpack:  # not the same object before Python 3.12
        if all(isinstance(inner, TypeVarTuple) for inner in typing.get_args(item)):
            return item
    elif origin is Literal:
        values = typing.get_args(item)
        if len(values) == 1 and type(values[0]) is int and 0 <= values[0] <= _LARGEST:
            return item
    elif origin is None:
        value = _integer(item)
        if value is not None and 0 <= value <= _LARGEST:
            return value
    raise ShapeSpecError(f"invalid Shape dimension {item!r}: {_EXPECTED}")


_LARGEST = 2**63 - 1
"""The largest dimension: numpy's axes are int64, and mypy holds no larger int literal (it reads
``Shape[2**63]`` as ``Any``; review117 F5)."""


def _integer(item: object) -> int | None:
    """The int value of a non-bool ``__index__`` object with no axes (an int, a numpy or torch
    integer scalar; not a bool of any library), else None: a float array's ``__index__`` raises,
    and a one-element 1-d tensor is an array, not a dimension."""
    if not isinstance(item, SupportsIndex) or isinstance(item, bool | type) or getattr(item, "ndim", 0) != 0:
        return None
    if "bool" in str(getattr(item, "dtype", "")):  # a 0-d bool array or tensor (True would be 1)
        return None
    try:
        return operator.index(item)
    except Exception:  # whatever a foreign __index__ raises, it is not an int
        return None


_EXPECTED = ("expected a non-negative int (at most 2**63 - 1), Literal[int], Any, a TypeVar or an unpacked "
             "TypeVarTuple")


class ShapeSpecError(TorchLeanError, TypeError):
    """A ``Shape[...]`` type whose dimensions are not non-negative ints or ``Any``."""


class ShapeMismatchError(TorchLeanError, ValueError):
    """Data whose shape differs from the ``Shape[...]`` type it was declared with."""


def dims_of(shape: object) -> tuple[int | None, ...]:
    """The dimensions declared by a ``Shape[...]`` type; ``None`` marks an ``Any`` wildcard.

    ``dims_of(Shape[Literal[4], Literal[3]]) == (4, 3)``, ``dims_of(Shape[Literal[2], Any]) ==
    (2, None)``, ``dims_of(Shape[()]) == ()``. At run time ``Shape[4, 3]`` works too, but mypy
    reads a call argument as an expression, where the plugin's ``Shape[4]`` shorthand does not
    apply (``Invalid type: try using Literal[4] instead?``): spell ``Literal`` in calls.

    Raises:
        ShapeSpecError: ``shape`` is not a subscripted ``Shape``, or a dimension is negative, a
            ``bool``, not an int (for example ``"a"`` or ``1.5``), a ``TypeVar`` (a generic
            ``Shape[T]`` has no dimensions to read) or an unpacked tuple.
    """
    if typing.get_origin(shape) is not Shape:
        raise ShapeSpecError(f"expected a subscripted Shape[...] type such as Shape[4, 3], got {shape!r}")
    return tuple(_dimension(arg, shape) for arg in typing.get_args(shape))


def _dimension(arg: object, shape: object) -> int | None:
    if arg is Any:
        return None
    value = arg
    if typing.get_origin(arg) is Literal:
        literal_args = typing.get_args(arg)
        value = literal_args[0] if len(literal_args) == 1 else arg
    if type(value) is int and value >= 0:
        return value
    raise ShapeSpecError(
        f"invalid dimension {arg!r} in {shape!r}: expected a non-negative int, Literal[int] or Any"
    )


def _actual_dims(actual: object, what: str) -> tuple[int, ...]:
    """``actual`` as a tuple of non-negative ints.

    Raises:
        ShapeSpecError: ``x: actual shape 3 (int) is not a sequence of non-negative ints ...``.
    """
    # a tuple, list or range, or a 1-d integer array (numpy's, without importing numpy here); not
    # a mapping (its keys), a set (hash order) or a one-shot iterator (consumed by the check)
    accepted = ("(accepted: a tuple, list, range or 1-d integer numpy array or torch tensor, such as an "
                "array's .shape)")
    # review217 F5: binary data alike, however held (a memoryview of bytes; review225 F7: one of
    # an int array is that array's ints)
    if isinstance(actual, memoryview):
        try:  # review228 F8: a released view raised Python's bare ValueError
            items_format = actual.format
            shown_items = actual.tolist()
        except ValueError as error:
            raise ShapeSpecError(f"{what}: actual shape is a memoryview that cannot be read ({error}) "
                                 f"{accepted}") from None
        if items_format not in ("B", "b", "c"):
            if isinstance(shown_items, list) and all(type(d) is int and d >= 0 for d in shown_items):
                return tuple(shown_items)
            raise ShapeSpecError(f"{what}: actual shape {shown_items!r} (memoryview) is not a sequence of "
                                 f"non-negative ints {accepted}")
    if isinstance(actual, bytes | bytearray | memoryview):
        raise ShapeSpecError(f"{what}: actual shape {bytes(actual)!r} ({type(actual).__name__}) is binary "
                             f"data, not a shape {accepted}")
    one_axis = getattr(actual, "ndim", 1) == 1
    unordered_or_once = isinstance(actual, Mapping | Set | Iterator)
    if isinstance(actual, Iterable) and not isinstance(actual, str) and not unordered_or_once and one_axis:
        items = list(actual)
        dims = [_integer(d) for d in items]
        if all(d is not None and d >= 0 for d in dims):
            return tuple(d for d in dims if d is not None)
    raise ShapeSpecError(
        f"{what}: actual shape {actual!r} ({type(actual).__name__}) is not a sequence of non-negative "
        f"ints {accepted}"
    )


def check_dims(shape: object, actual: ActualDims, *, what: str) -> None:
    """Refuse ``actual`` unless it matches the declared ``Shape[...]`` type ``shape``.

    Ranks must be equal; each declared int must equal the actual size; ``Any`` matches every
    size. ``what`` names the checked value in the message (for example ``"input batch row"``).
    Under mypy spell the dimensions with ``Literal`` (a call argument is an expression, where the
    plugin's ``Shape[2, 3]`` shorthand does not apply)::

        check_dims(Shape[Literal[2], Literal[3]], x.shape, what="x")

    ``shape`` is typed ``object`` and checked here, at run time only: mypy accepts any value
    (``(2, 3)``, a bare ``Shape``); a narrower ``type[Shape[*Ts]]`` would still admit a bare
    ``Shape`` and would refuse correct code (a shape typed ``object``, or taken from a tuple of
    shapes of different ranks). A ``Trainer[In, Out]``'s shapes are per sample: check a batch
    against ``Shape[Any, ...]`` (``check_dims(Shape[Any, Literal[4]], x.shape, what="inputs")``).

    Raises:
        ShapeSpecError: ``shape`` is malformed (see :func:`dims_of`), or ``actual`` is not a
            tuple, list or range of non-negative ints (Python or numpy ints; bools refused) or a
            1-d integer numpy array or torch tensor (a torchlean tensor: pass its ``.shape``):
            e.g. the bare size ``3``, a mapping, a set or a one-shot iterator such as a generator.
        ShapeMismatchError: the rank or a size differs, naming the actual and declared dims.
    """
    declared = dims_of(shape)
    actual = _actual_dims(actual, what)
    if len(declared) != len(actual) or any(
        d is not None and d != a for d, a in zip(declared, actual, strict=True)
    ):
        shown = ", ".join("Any" if d is None else str(d) for d in declared)
        raise ShapeMismatchError(f"{what} has shape {list(actual)}, but Shape[{shown}] is declared")
