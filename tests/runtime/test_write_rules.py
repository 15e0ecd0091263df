"""The rules of ``t[...] = v`` and ``t.copy_(src)`` checked against torch (review52 F2-F5): torch's
broadcast rule for ``copy_``'s source, the int64 range of integers written into int64 and bool
tensors, and messages that name the fault the user made."""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl

INT64_RANGE = re.escape("(accepted: integers in [-9223372036854775808, 9223372036854775807])")


def _refused_by_torch(write: Callable[[], object]) -> bool:
    try:
        write()
    except (RuntimeError, ValueError, TypeError, OverflowError):
        return True
    return False


# ------------------------------------------------------------------- F2: copy_'s broadcast rule


@pytest.mark.parametrize("src_shape", [(1, 1, 3), (1, 2, 3), (3, 1, 1, 3), (4,), (3, 2)], ids=str)
def test_copy_refuses_a_source_that_does_not_broadcast_by_torchs_rule(src_shape: tuple[int, ...]) -> None:
    """review52 F2: a source with extra leading size-1 axes was accepted (numpy's copyto drops
    them); torch refuses it, and so does torchlean now, naming both shapes."""
    assert _refused_by_torch(lambda: torch.zeros(2, 3).copy_(torch.ones(src_shape)))
    t = tl.tensor(np.zeros((2, 3), np.float32))
    message = re.escape(
        f"copy_(): a source of shape {src_shape} does not broadcast to the tensor's shape (2, 3) "
        "(accepted: as in torch, a rank of at most 2"
    )
    with pytest.raises(tl.TensorError, match="^" + message):
        t.copy_(np.ones(src_shape))
    assert t.tolist() == [[0.0] * 3] * 2 and t._version.value == 0


@pytest.mark.parametrize("src_shape", [(), (3,), (1, 3), (2, 1), (2, 3)], ids=str)
def test_copy_writes_a_source_that_torch_broadcasts(src_shape: tuple[int, ...]) -> None:
    values = np.arange(1, 1 + int(np.prod(src_shape)), dtype=np.float64).reshape(src_shape)
    t = tl.tensor(np.zeros((2, 3)))
    reference = torch.zeros(2, 3, dtype=torch.float64).copy_(torch.from_numpy(values))
    assert t.copy_(values).tolist() == reference.tolist()


def test_item_assignment_still_takes_extra_leading_size_one_axes_as_torch_does() -> None:
    t, reference = tl.tensor(np.zeros((2, 3))), torch.zeros(2, 3, dtype=torch.float64)
    t[:] = np.ones((1, 1, 3))
    reference[:] = torch.ones(1, 1, 3)
    assert t.tolist() == reference.tolist()


# ------------------- review111 F1: a one-element value of rank >= 1 written to a single element


_ONE_ELEMENT_WRITES: list[tuple[tuple[int, ...], Any, Callable[[], object]]] = [
    ((3,), 0, lambda: np.array([5.0])),
    ((3,), -1, lambda: [[5.0]]),
    ((3,), 1, lambda: tl.tensor(np.array([5.0]))),
    ((3,), 2, lambda: torch.full((1, 1), 5.0, dtype=torch.float64)),
    ((2, 3), (0, 1), lambda: np.full((1, 1), 5.0)),
    ((2, 3), (1, -1), lambda: tl.tensor(np.full((1, 1, 1), 5.0))),
    ((2, 3), (np.int64(1), 0), lambda: np.array([5.0], np.float32)),
    ((), (), lambda: np.array([5.0])),
    ((), Ellipsis, lambda: np.full((1, 1), 5.0)),  # the rule t[...] = src had already
    ((2, 3), (0, slice(1, 2)), lambda: np.full((1, 1, 1), 5.0)),
    ((2, 3), np.array([[False, True, False], [False, False, False]]), lambda: np.full((1, 1), 5.0)),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64"])
@pytest.mark.parametrize(("shape", "index", "make"), _ONE_ELEMENT_WRITES)
def test_a_one_element_value_of_any_rank_is_written_to_one_element_as_torch_writes_it(
    dtype: str, shape: tuple[int, ...], index: Any, make: Callable[[], object]
) -> None:
    """review111 F1: ``t[0] = np.array([5.0])`` (and a (1, 1) list, Tensor or torch tensor) was
    refused with numpy's "setting an array element with a sequence", though ``t[...] = src`` on a
    0-d tensor wrote it; torch drops the value's leading size-1 axes for every index. Oracle:
    torch float64, the value converted by ``torch.as_tensor``."""
    value = make()
    host = value.numpy() if isinstance(value, tl.Tensor | torch.Tensor) else value
    reference = torch.arange(float(np.prod(shape)), dtype=torch.float64).reshape(shape)
    reference[index] = torch.as_tensor(np.array(host, np.float64))
    t = tl.tensor(np.arange(float(np.prod(shape))).reshape(shape), dtype=dtype)
    t[index] = value  # type: ignore[assignment]
    assert t.tolist() == reference.to(getattr(torch, dtype)).tolist() and t._version.value == 1


@pytest.mark.parametrize(
    ("shape", "index", "value_shape", "selects", "accepted"),
    [
        ((3,), 0, (2,), "one element", "one value: a number, or a one-element array, list or tensor"),
        ((2, 3), (0, 1), (1, 2), "one element", "one value: a number, or a one-element array"),
        ((3,), slice(0, 2), (2, 1), "shape (2,)", "a value that broadcasts to (2,) once its extra leading"),
        ((2, 3), 0, (1, 2, 3), "shape (3,)", "a value that broadcasts to (3,) once its extra leading"),
    ],
)
def test_a_value_that_does_not_fit_the_selected_shape_is_refused_naming_both_shapes(
    shape: tuple[int, ...], index: Any, value_shape: tuple[int, ...], selects: str, accepted: str
) -> None:
    """review111 F1: the refusal was numpy's text (``setting an array element with a sequence``,
    ``could not broadcast ...``); now it names the value's shape, the tensor's, what the index
    selects and what is accepted. torch refuses each of these writes too."""
    assert _refused_by_torch(lambda: torch.zeros(shape).__setitem__(index, torch.ones(value_shape)))
    t = tl.tensor(np.zeros(shape))
    message = re.escape(
        f"cannot assign a value of shape {value_shape} to index {index!r} of a tensor of shape {shape}, "
        f"which selects {selects} (accepted: as in torch, {accepted}"
    )
    with pytest.raises(tl.TensorError, match="^" + message):
        t[index] = np.ones(value_shape)
    assert t.tolist() == np.zeros(shape).tolist() and t._version.value == 0


# ------------------------------------------------------- F3, F4: integers beyond int64 in writes


@pytest.mark.parametrize("dtype", ["int64", "bool"])
@pytest.mark.parametrize(
    ("value", "shown"),
    [
        (2**63, "9223372036854775808 (19 digits)"),
        (np.uint64(2**63), "9223372036854775808 (19 digits)"),
        ([2**63, 1], "9223372036854775808 (19 digits)"),
        ([1, 2**64 - 1], "18446744073709551615 (20 digits)"),
        (2**64, "18446744073709551616 (20 digits)"),
        (-(2**63) - 1, "-9223372036854775809 (19 digits)"),
    ],
    ids=["2**63", "uint64", "2**63-list", "2**64-1-list", "2**64", "-2**63-1"],
)
def test_an_integer_outside_int64_is_refused_in_one_wording(dtype: str, value: object, shown: str) -> None:
    """review52 F3/F4: a bool tensor took ``2**63`` though its message for ``2**64`` stated the
    range ends at ``2**63 - 1``; an int64 tensor named tl.tensor's ``dtype='float64'`` hint for
    ``2**63`` and another wording for ``2**64``, and reported ``[2**63, 1]`` as a float. torch
    refuses every one of them."""
    written = value.tolist() if isinstance(value, np.generic) else value
    assert _refused_by_torch(
        lambda: torch.zeros(2, dtype=getattr(torch, dtype)).__setitem__(
            slice(0, 2 if isinstance(written, list) else 1), written
        )
    )
    message = f"^the integer {re.escape(shown)} does not fit the tensor's dtype {dtype} {INT64_RANGE}$"
    t = tl.tensor(np.zeros(2, dtype))
    index = slice(None) if isinstance(value, list) else 0
    with pytest.raises(tl.TensorError, match=message):
        t[index] = value  # type: ignore[assignment]
    with pytest.raises(tl.TensorError, match=message):
        t.copy_(value)  # type: ignore[arg-type]
    assert t.tolist() == np.zeros(2, dtype).tolist() and t._version.value == 0


@pytest.mark.parametrize("dtype", ["int64", "bool"])
def test_integers_at_the_ends_of_int64_are_written(dtype: str) -> None:
    t = tl.tensor(np.zeros(2, dtype))
    reference = torch.zeros(2, dtype=getattr(torch, dtype))
    t[:] = [2**63 - 1, -(2**63)]
    reference[:] = torch.tensor([2**63 - 1, -(2**63)])
    assert t.tolist() == reference.tolist()


def test_a_float_among_integers_stays_float_data_truncated_into_int64() -> None:
    t, reference = tl.tensor([0, 0]), torch.tensor([0, 0])
    t[:] = [2**62, -1.5]
    reference[:] = torch.tensor([2**62, -1.5], dtype=torch.float64)
    assert t.tolist() == reference.tolist()


def test_a_constant_operand_beyond_int64_gets_the_same_wording() -> None:
    shown = re.escape("9223372036854775808 (19 digits)")
    message = f"^the integer {shown} does not fit the tensor's dtype int64 {INT64_RANGE}$"
    with pytest.raises(tl.TensorError, match=message):
        tl.add(tl.tensor([1, 2]), 2**63)


# ---------------------------------------------------------- F5: copy_'s same_kind cast rule

_TRUNCATES = (
    "truncates toward zero as torch does (NaN, ±inf and values beyond int64 refused, where torch "
    "writes an arbitrary integer)"
)


@pytest.mark.parametrize(
    ("dtype", "src", "src_dtype", "torch_cast"),
    [
        ("int64", 1.5, "float64", _TRUNCATES),
        ("int64", float("nan"), "float64", _TRUNCATES),
        ("int64", np.array([1.5, 2.5], np.float32), "float32", _TRUNCATES),
        ("bool", -1, "int64", "writes v != 0, as torch does"),
        ("bool", 0.5, "float64", "writes v != 0, as torch does"),
    ],
    ids=["int64-float", "int64-nan", "int64-float32", "bool-int", "bool-float"],
)
def test_copy_refused_by_the_cast_rule_says_it_is_the_cast_rule(
    dtype: str, src: object, src_dtype: str, torch_cast: str
) -> None:
    """review52 F5: the message named only the shapes, which do broadcast."""
    t = tl.tensor(np.zeros(2, dtype))
    article = "an" if dtype == "int64" else "a"
    message = re.escape(
        f"copy_(): {src_dtype} values are not written into {article} {dtype} tensor by copy_ "
        f"(numpy's same_kind cast rule); t[...] = v {torch_cast}"
    )
    with pytest.raises(tl.TensorError, match=f"^{message}$"):
        t.copy_(src)  # type: ignore[arg-type]
    assert t._version.value == 0


@pytest.mark.parametrize(("dtype", "value"), [("int64", 1.5), ("int64", -2.7), ("bool", -1), ("bool", 0.5)])
def test_the_named_remedy_writes_what_torchs_copy_writes(dtype: str, value: float) -> None:
    t = tl.tensor(np.zeros(2, dtype))
    t[...] = value
    reference = torch.zeros(2, dtype=getattr(torch, dtype)).copy_(torch.tensor(value))
    assert t.tolist() == reference.tolist()


# ------------------------------------ copy_: every refusal comes before the write (mread 8)

_SHAPES = [(), (3,), (1, 3), (2, 1), (2, 3), (0,), (4,), (3, 2), (2, 2), (1, 1, 3), (1, 2, 3)]
# numpy's same_kind rule by hand: a kind casts to its own and every later kind of b < u = i < f
_KIND_RANK = {"b": 0, "u": 1, "i": 1, "f": 2}


def _broadcasts_by_torchs_rule(src: tuple[int, ...], dst: tuple[int, ...]) -> bool:
    """By hand: at most dst's rank, each extent 1 or dst's, aligned from the right."""
    if len(src) > len(dst):
        return False
    return all(s in (1, d) for s, d in zip(src, dst[len(dst) - len(src) :], strict=True))


def _values(shape: tuple[int, ...], dtype: np.dtype[Any]) -> np.ndarray[Any, Any]:
    """Small values every dtype holds exactly (float16 too): -1, -0.5, 0, ... or 0, 1, 2, ..."""
    count = np.arange(int(np.prod(shape)), dtype=np.int64).reshape(shape)
    if dtype.kind == "b":
        return (count % 2 == 1).astype(dtype)
    if dtype.kind == "f":
        return (count * 0.5 - 1.0).astype(dtype)
    return (count - (1 if dtype.kind == "i" else 0)).astype(dtype)


_SOURCES: list[tuple[str, Callable[[tuple[int, ...]], object]]] = [
    *(
        (f"numpy-{np.dtype(d).str}", lambda shape, d=d: _values(shape, np.dtype(d)))
        for d in ("?", "u1", "i1", "<i2", "i4", "i8", "u8", "f2", "f4", "f8", ">f8", np.longdouble)
    ),
    *(
        (f"tensor-{d}", lambda shape, d=d: tl.tensor(_values(shape, np.dtype(d))))
        for d in ("float32", "float64", "int64", "bool")
    ),
    *(
        (f"list-{d}", lambda shape, d=d: _values(shape, np.dtype(d)).tolist())
        for d in ("int64", "float64", "bool")
    ),
]


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "bool"])
@pytest.mark.parametrize("source", [make for _, make in _SOURCES], ids=[name for name, _ in _SOURCES])
def test_copy_writes_or_refuses_before_writing_never_in_numpys_words(
    dtype: str, source: Callable[[tuple[int, ...]], object]
) -> None:
    """Every source that reaches the write (numeric data; Tensors, numpy arrays of each kind and
    byte order, lists) of every shape here is either written, with torch's values, or refused by
    the broadcast or the cast rule before the write, in their words, the tensor unchanged: so
    copy_ needs no handler for numpy's own ValueError/TypeError of the write (it had one, whose
    message no case here reached). Oracles: the two rules written by hand, torch's copy_."""
    for shape in _SHAPES:
        src = source(shape)
        host = np.asarray(src.numpy() if isinstance(src, tl.Tensor) else src)
        t = tl.tensor(np.full((2, 3), 7, dtype))
        before, version = t.tolist(), t._version.value
        if not _broadcasts_by_torchs_rule(host.shape, (2, 3)):
            with pytest.raises(tl.TensorError, match=r"^copy_\(\): a source of shape .* does not broadcast"):
                t.copy_(src)  # type: ignore[arg-type]
        elif _KIND_RANK[host.dtype.kind] > _KIND_RANK[np.dtype(dtype).kind]:
            refusal = rf"^copy_\(\): {host.dtype} values are not written into"
            with pytest.raises(tl.TensorError, match=refusal):
                t.copy_(src)  # type: ignore[arg-type]
        else:
            as_torch = torch.tensor(host.tolist(), dtype=torch.float64 if host.dtype.kind == "f" else None)
            expected = torch.full((2, 3), 7, dtype=getattr(torch, dtype)).copy_(as_torch)
            assert t.copy_(src) is t  # type: ignore[arg-type]
            assert t.tolist() == expected.tolist() and t._version.value == version + 1, (shape, host)
            continue
        assert t.tolist() == before and t._version.value == version, (shape, host)


@pytest.mark.parametrize(
    ("index", "value", "wrapped"),
    [
        (np.array([2**64 - 1], np.uint64), 2**64 - 1, -1),
        ((0, np.array([1, 2**63], np.uint64)), 2**63, -(2**63)),
        ([2**64 - 1], 2**64 - 1, -1),
        (np.uint64(2**64 - 1), 2**64 - 1, None),
        (2**64 - 1, 2**64 - 1, None),
        ([2**70], 2**70, None),
        (-(2**63) - 1, -(2**63) - 1, None),
    ],
    ids=["uint64-array", "uint64-in-tuple", "list", "uint64-scalar", "int", "huge-list", "below-int64"],
)
def test_an_index_beyond_int64_is_refused_in_a_write(index: object, value: int, wrapped: int | None) -> None:
    """review239 F3: numpy casts uint64 index data to int64, so ``x[np.array([2**64 - 1],
    np.uint64)] = 1`` wrote x[-1]; a scalar beyond int64 gave numpy's "Python int too large to
    convert to C long". Oracle: the index out of range, nothing written."""
    x = tl.tensor(np.zeros((2, 4)))
    told = f", which numpy would read as {wrapped}" if wrapped is not None else ""
    with pytest.raises(tl.TensorIndexError) as caught:
        x[index] = 1.0
    assert str(caught.value) == (
        f"cannot assign to index {index!r} of a tensor of shape (2, 4): index {value} is out of range "
        f"(beyond int64{told})"
    )
    assert x.numpy().tolist() == [[0.0] * 4] * 2
    x[np.array([1], np.uint64)] = 1.0  # unsigned index data within int64 is written as positions
    assert x.numpy().tolist() == [[0.0] * 4, [1.0] * 4]


@pytest.mark.parametrize(
    "index",
    [np.array([1, 0, 1], np.uint8), list(np.array([1, 0, 1], np.uint8)), [np.array([1, 0, 1], np.uint8)]],
    ids=["array", "list-of-uint8", "list-holding-an-array"],
)
def test_uint8_index_data_is_refused_in_a_write(index: object) -> None:
    """review113 F2, review114 F1: numpy writes uint8 index data as positions, torch reads it as a
    (deprecated) mask, so ``x[list(u8)] = v`` silently wrote other rows than torch; every form is
    refused, naming both conversions, and nothing is written."""
    x = tl.tensor(np.zeros((3, 2)))
    refusal = (r"it holds uint8 index data, which numpy takes as positions and torch reads as a "
               r"\(deprecated\) mask.*\.bool\(\) or \.long\(\)$")
    with pytest.raises(tl.TensorError, match=refusal):
        x[index] = np.array([7.0, 8.0])
    assert x.numpy().tolist() == [[0.0, 0.0]] * 3
    with pytest.raises(tl.TensorError, match=r"^unsupported index: a mask \(bool or uint8\)"):
        x[index]


def test_torch_index_data_that_numpy_cannot_read_is_refused_by_name() -> None:
    """review239 F5: a torch index tensor that requires grad reached numpy, whose read raised
    torch's "Can't call numpy() on Tensor that requires grad"; a meta one numpy's TypeError. Plain
    torch index data writes as numpy's would (oracle: the same write through torch)."""
    x = tl.tensor(np.zeros((2, 3)))
    with pytest.raises(tl.TensorIndexError) as caught:
        x[torch.tensor([1.0], requires_grad=True)] = 5.0
    assert str(caught.value) == (
        "cannot assign to index tensor([1.], requires_grad=True) of a tensor of shape (2, 3): a torch tensor "
        "of shape (1,) that requires grad, which numpy cannot read (accepted: its values, t.detach())"
    )
    with pytest.raises(tl.TensorIndexError, match=r"cannot copy a meta torch tensor"):
        x[torch.empty(1, dtype=torch.long, device="meta")] = 5.0
    assert x.numpy().tolist() == [[0.0] * 3] * 2
    expected = torch.zeros(2, 3, dtype=torch.float64)
    mask = torch.tensor([[True, False, True], [False] * 3])
    for index in (torch.tensor([1]), (0, torch.tensor([2, 0])), mask):
        x[index] = 5.0
        expected[index] = 5.0
    assert x.numpy().tolist() == expected.tolist()


def test_an_index_list_holding_a_torch_tensor_numpy_cannot_read_is_refused_by_name() -> None:
    """review240 F5: numpy's read of the list raised torch's RuntimeError."""
    x = tl.tensor(np.zeros(4))
    with pytest.raises(tl.TensorIndexError) as caught:
        x[[torch.tensor(1.0, requires_grad=True)]] = 1.0
    assert str(caught.value) == (
        "cannot assign to index [tensor(1., requires_grad=True)] of a tensor of shape (4,): its element 0 "
        "is a torch tensor (shape (), dtype torch.float32) that requires grad: pass t.detach().cpu() "
        "(accepted: a numpy array or a CPU torch tensor that does not require grad)"
    )
    assert x.numpy().tolist() == [0.0] * 4
