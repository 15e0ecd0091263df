"""Runtime side of ``torchlean.shapes``: reading dims off ``Shape[...]`` and checking data against them.

Oracles are hand-written dims; the property test builds ``Shape[...]`` from random tuples.
Shapes are subscripted through :func:`shape` because mypy reads a literal ``shape(4)`` written in an
expression as a type application (see examples/mypy/shapes_mismatch.py).
"""

from __future__ import annotations

from typing import Annotated, Any, Literal, TypeVar, TypeVarTuple, Unpack, get_args

import numpy as np
import pytest
import typing_extensions
from hypothesis import given
from hypothesis import strategies as st

from torchlean.backend.errors import TorchLeanError
from torchlean.shapes import Shape, ShapeMismatchError, ShapeSpecError, check_dims, dims_of
from torchlean.trainer import Trainer

N = TypeVar("N")
TS = TypeVarTuple("TS")


def shape(*dims: object) -> Any:
    """``Shape[dims]`` built at run time (``shape(4, 3)`` is ``Shape[4, 3]``)."""
    subscriptable: Any = Shape
    return subscriptable[dims]


@pytest.mark.parametrize(
    ("declared", "dims"),
    [
        (shape(4), (4,)),
        (shape(4, 3), (4, 3)),
        (shape(Literal[2], 5), (2, 5)),
        (shape(Any, 4), (None, 4)),
        (shape(), ()),
        (shape(0), (0,)),
    ],
)
def test_dims_of(declared: object, dims: tuple[int | None, ...]) -> None:
    assert dims_of(declared) == dims


@pytest.mark.parametrize(
    "dim",
    [
        "a",
        -1,
        1.5,
        True,
        False,
        b"x",
        None,
        int,
        Literal[-1],
        Literal[True],
        Literal[1, 2],
        Literal["a"],
        np.int64(-2),
        np.bool_(True),
        np.float64(3.0),
        np.array(3.0),  # a float array's __index__ raises TypeError: refused by name
        np.array([3]),  # an array with an axis is not a dimension
        np.array(True),  # a 0-d bool array is not the dimension 1
        2**63,  # beyond numpy's int64 axes, and read as Any by mypy (review117 F5)
        Literal[2**63],
        np.uint64(2**63),
        TS,
    ],
    ids=repr,
)
def test_malformed_dimensions_are_refused_when_subscripted(dim: object) -> None:
    """README: ``Shape[...]`` refuses these at subscription, with the argument in the message."""
    with pytest.raises(ShapeSpecError, match=r"^invalid Shape dimension ") as error:
        shape(4, dim)
    assert isinstance(error.value, TorchLeanError)
    assert f"invalid Shape dimension {dim!r}: " in str(error.value)
    subscriptable: Any = Shape
    with pytest.raises(ShapeSpecError):
        subscriptable[dim]  # a single (non-tuple) subscript is checked the same way


def test_unpacked_tuple_dimension_is_refused() -> None:
    """``Shape[*tuple[int, ...]]`` is not a list of dims; dims_of could not read it either."""
    # the item as Python shows it: *tuple[int, ...] (3.11) or typing.Unpack[tuple[int, ...]] (3.12)
    shown = r"(\*tuple\[int, \.\.\.\]|typing(_extensions)?\.Unpack\[tuple\[int, \.\.\.\]\])"
    with pytest.raises(ShapeSpecError, match=rf"^invalid Shape dimension {shown}: "):
        shape(Unpack[tuple[int, ...]])


def test_an_annotated_dimension_is_its_dimension_as_mypy_reads_it() -> None:
    """``Annotated[Literal[3], "rows"]`` names an axis; mypy reads it as ``Literal[3]``, and so
    does the runtime (it was refused there)."""
    rows = Annotated[Literal[3], "rows"]
    assert Shape[rows, Literal[4]] == Shape[Literal[3], Literal[4]]
    assert dims_of(Shape[rows, Annotated[Any, "batch"]]) == (3, None)
    with pytest.raises(ShapeMismatchError, match=r"^x has shape \[4\], but Shape\[3\] is declared$"):
        check_dims(Shape[rows], (4,), what="x")
    with pytest.raises(ShapeSpecError, match=r"invalid Shape dimension typing.Literal\[-1\]"):
        Shape[Annotated[Literal[-1], "rows"]]


def test_type_variables_are_kept() -> None:
    """Generic code writes ``Shape[N]`` and ``Shape[*Ts]``; both subscript and keep their argument."""
    assert get_args(shape(N, 3)) == (N, 3)
    assert get_args(shape(Unpack[TS])) == (Unpack[TS],)


def test_typing_extensions_unpack_is_unpack() -> None:
    """``typing_extensions.Unpack`` (a distinct object before Python 3.12) is ``*`` as for mypy:
    ``Shape[Unpack[Ts]]`` is kept and substitutes, ``Shape[Unpack[tuple[...]]]`` is refused."""
    spelled = typing_extensions.Unpack
    assert get_args(shape(3, spelled[TS])) == (3, spelled[TS])
    assert shape(spelled[TS])[Literal[2], Literal[5]] == shape(Literal[2], Literal[5])
    shown = r"(\*tuple\[int\]|typing(_extensions)?\.Unpack\[tuple\[int\]\])"
    with pytest.raises(ShapeSpecError, match=rf"^invalid Shape dimension {shown}: "):
        shape(spelled[tuple[int]])


@pytest.mark.parametrize("dim", [np.int64(3), np.int32(3), np.uint8(3)], ids=repr)
def test_numpy_integers_are_their_int_value(dim: object) -> None:
    """A numpy integer is stored as the Python int: ``Shape[np.int64(3)]`` is ``Shape[3]``."""
    declared = shape(dim, 2)
    assert declared == shape(3, 2)
    assert dims_of(declared) == (3, 2)
    assert [type(d) for d in get_args(declared)] == [int, int]
    check_dims(declared, (3, 2), what="x")


class _BrokenIndex:
    def __index__(self) -> int:
        raise RuntimeError("no index")


def test_dimensions_whose_index_fails_are_shape_spec_errors() -> None:
    """Whatever a foreign ``__index__`` raises, the caller gets the documented ShapeSpecError."""
    subscriptable: Any = Shape
    with pytest.raises(ShapeSpecError, match=r"^invalid Shape dimension <"):
        subscriptable[_BrokenIndex()]
    with pytest.raises(ShapeSpecError, match=r"^x: actual shape \(array\(3\.\), 4\)"):
        check_dims(shape(3, 4), (np.array(3.0), 4), what="x")  # type: ignore[arg-type]
    check_dims(shape(3, 4), (np.int64(3), np.array(4)), what="x")  # type: ignore[arg-type]
    torch = pytest.importorskip("torch")
    with pytest.raises(ShapeSpecError, match=r"^invalid Shape dimension tensor\(True\)"):
        subscriptable[torch.tensor(True)]
    with pytest.raises(ShapeSpecError, match=r"^x: actual shape tensor\(\[ True, False\]\)"):
        check_dims(shape(1, 0), torch.tensor([True, False]), what="x")
    check_dims(shape(1, 0), torch.tensor([1, 0]), what="x")


def test_numpy_integer_is_not_cached_as_itself() -> None:
    """typing's cache keys np.int64(7) like 7; normalising keeps a later ``Shape[7]`` an int."""
    shape(np.int64(7))
    assert type(get_args(shape(7))[0]) is int


def test_bool_is_not_cached_as_an_int() -> None:
    """typing's cache keys Shape[True] like Shape[1]; refusing bools keeps Shape[1] an int."""
    with pytest.raises(ShapeSpecError):
        shape(True)
    assert dims_of(shape(1)) == (1,)
    assert type(dims_of(shape(1))[0]) is int


@pytest.mark.parametrize(
    "declared",
    [Shape, shape(N), shape(N)[Literal[-2]], shape(N)[int], shape(N)[Literal[True]], shape(Unpack[TS])],
    ids=[
        "bare",
        "type-variable",
        "substituted-negative",
        "substituted-int-type",
        "substituted-bool",
        "unpacked",
    ],
)
def test_malformed_shapes_are_refused_by_dims_of(declared: object) -> None:
    """What subscription cannot see (a bare Shape, a type variable, a substitution) dims_of refuses."""
    with pytest.raises(ShapeSpecError) as error:
        dims_of(declared)
    assert isinstance(error.value, TorchLeanError)


def test_check_dims_messages() -> None:
    check_dims(shape(Any, 4), (32, 4), what="batch")
    with pytest.raises(
        ShapeMismatchError, match=r"^batch has shape \[32, 5\], but Shape\[Any, 4\] is declared$"
    ):
        check_dims(shape(Any, 4), (32, 5), what="batch")
    with pytest.raises(ShapeMismatchError, match=r"^row has shape \[3, 1\], but Shape\[3\] is declared$"):
        check_dims(shape(3), (3, 1), what="row")


@given(st.lists(st.integers(min_value=0, max_value=64), max_size=5), st.data())
def test_check_dims_accepts_exactly_the_declared_dims(dims: list[int], data: st.DataObject) -> None:
    declared = shape(*dims)
    check_dims(declared, tuple(dims), what="x")
    if dims:
        axis = data.draw(st.integers(min_value=0, max_value=len(dims) - 1))
        changed = list(dims)
        changed[axis] += data.draw(st.integers(min_value=1, max_value=3))
        with pytest.raises(ShapeMismatchError):
            check_dims(declared, tuple(changed), what="x")
        wildcard = shape(*(Any if i == axis else d for i, d in enumerate(dims)))
        check_dims(wildcard, tuple(changed), what="x")
    with pytest.raises(ShapeMismatchError):
        check_dims(declared, (*dims, 1), what="x")


@pytest.mark.parametrize("declared", [(2, 3), Shape, Trainer], ids=["tuple", "bare Shape", "Trainer"])
def test_check_dims_refuses_a_shape_argument_mypy_accepts(declared: object) -> None:
    """README "Shapes": ``check_dims``'s shape is typed ``object`` (a narrower annotation would
    refuse correct code), so mypy accepts these; the run-time check refuses them (review101 F8)."""
    with pytest.raises(ShapeSpecError) as error:
        check_dims(declared, (2, 3), what="x")
    assert str(error.value) == (
        f"expected a subscripted Shape[...] type such as Shape[4, 3], got {declared!r}"
    )


def test_a_batch_is_checked_against_the_per_sample_shape_with_any_in_front() -> None:
    """README "Shapes": ``Trainer[In, Out]`` takes per-sample shapes; a batch array has the batch axis
    in front, so it is checked against ``Shape[Any, ...]`` (review101 F3)."""
    check_dims(Shape[Any, Literal[4]], (32, 4), what="inputs")
    with pytest.raises(ShapeMismatchError) as error:
        check_dims(Shape[Literal[4]], (32, 4), what="inputs")
    assert str(error.value) == "inputs has shape [32, 4], but Shape[4] is declared"
