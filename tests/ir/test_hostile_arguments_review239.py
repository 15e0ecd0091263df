"""review239 F2/F4/F5/F6/F9: the ir builder's and evaluator's arguments that numpy, torch or Python
refused with their own errors (or iterated for minutes) are refused with an ``IRError`` naming the
method, the argument, the value and what is accepted."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any, overload

import numpy as np
import pytest
import torch

from torchlean.ir import ops
from torchlean.ir.builder import GraphBuilder
from torchlean.ir.errors import IRError
from torchlean.ir.evaluate import evaluate

HUGE = np.broadcast_to(np.int64(1), (2**40,))  # 8 bytes of memory, 2**40 entries
HUGE_SHOWN = "array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,))"
DIMS_ACCEPTED = (
    "(accepted: a list, tuple or 1-d integer array of at most 64 entries, one per axis; a set or "
    "mapping has no order)"
)
RAGGED = (
    "is not a rectangular array: setting an array element with a sequence. The requested array has an "
    "inhomogeneous shape after 1 dimensions. The detected shape was (2,) + inhomogeneous part. (accepted: "
    "a numpy array, nested lists of numbers, or a torch tensor that does not require grad)"
)
GRAD = (
    "is a torch tensor (shape (2,), dtype torch.float32) that requires grad: pass t.detach().cpu() "
    "(accepted: a numpy array or a CPU torch tensor that does not require grad)"
)
META = (
    "is a meta torch tensor (shape (2,)): it has no values (accepted: a numpy array or a CPU torch tensor "
    "that does not require grad)"
)


class Endless(Sequence[int]):
    """A sequence claiming 2**40 entries that fails the test if more than 65 are read (the old
    builder read every one of them)."""

    def __len__(self) -> int:
        return 2**40

    @overload
    def __getitem__(self, index: int) -> int: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[int]: ...
    def __getitem__(self, index: int | slice) -> Any:
        if not isinstance(index, int) or index >= 65:
            raise AssertionError("read past the 64-entry limit")
        return 0

    def __repr__(self) -> str:
        return "Endless()"


def _builder() -> tuple[GraphBuilder, int]:
    b = GraphBuilder()
    return b, b.input((2, 3))


@pytest.mark.parametrize(
    ("value", "got"),
    [
        (None, "None of type NoneType"),
        (6, "6 of type int"),
        (np.array(6), "array(6) (a 0-d array)"),
        (np.ones((2, 3), np.int64), "array([[1, 1, 1], [1, 1, 1]]) (a 2-d array)"),  # one line
        (torch.tensor(6), "tensor(6) of type Tensor"),
        ({6}, "{6} of type set"),
        ({6: 0}, "{6: 0} of type dict"),
    ],
)
@pytest.mark.parametrize("method", ["reshape", "permute", "broadcast_to"])
def test_shape_and_perm_that_are_not_sequences_are_refused(
    method: str, value: object, got: str | None
) -> None:
    b, x = _builder()
    argument = "perm" if method == "permute" else "shape"
    with pytest.raises(IRError) as info:
        getattr(b, method)(x, value)
    message = str(info.value)
    assert message.startswith(f"{method} {argument}: expected a sequence of non-negative integers, got ")
    assert message.endswith(DIMS_ACCEPTED)
    if got is not None:
        assert message == (
            f"{method} {argument}: expected a sequence of non-negative integers, got {got} {DIMS_ACCEPTED}"
        )
    assert len(b.build().graph) == 1  # nothing appended


def test_a_generator_is_read_as_its_entries_up_to_the_rank_bound() -> None:
    """review241 F6: a generator, which tl.reshape takes, was refused here."""
    b, x = _builder()
    shape = b.shape(b.reshape(x, (d for d in (6,))))
    assert tuple(shape) == (6,)
    with pytest.raises(IRError, match=r"^permute perm: expected a sequence of non-negative integers, got a "
                                      r"range_iterator of more than 64 entries"):
        b.permute(x, iter(range(10**12)))


def test_a_set_is_not_read_as_an_ordered_permutation() -> None:
    b, x = _builder()
    with pytest.raises(IRError, match=r"^permute perm: .* got \{0, 1\} of type set"):
        b.permute(x, {1, 0})  # type: ignore[arg-type]  # hash order is (0, 1): the identity, not the swap written


@pytest.mark.parametrize("method", ["reshape", "permute", "broadcast_to"])
def test_a_huge_shape_is_refused_by_its_length_at_once(method: str) -> None:
    b, x = _builder()
    argument = "perm" if method == "permute" else "shape"
    with pytest.raises(IRError, match=r"got Endless\(\) of length 1099511627776 \(accepted"):
        getattr(b, method)(x, Endless())  # first: the old builder fails fast here, not in a long loop
    with pytest.raises(IRError) as info:
        getattr(b, method)(x, HUGE)
    assert str(info.value) == (
        f"{method} {argument}: expected a sequence of non-negative integers, got {HUGE_SHOWN} of length "
        f"1099511627776 {DIMS_ACCEPTED}"
    )


def test_input_and_op_kinds_refuse_a_0d_array_and_a_huge_shape() -> None:
    with pytest.raises(IRError) as info:
        GraphBuilder().input(np.array(2))  # type: ignore[arg-type]
    assert str(info.value) == (
        f"input: expected a sequence of non-negative integers, got array(2) (a 0-d array) {DIMS_ACCEPTED}"
    )
    with pytest.raises(IRError, match=r"^input: .* of length 1099511627776 \(accepted: .* most 64 entries"):
        GraphBuilder().input(Endless())
    with pytest.raises(IRError, match=r"^reshape: .* of length 65 \(accepted"):
        ops.Reshape((1,) * 65, (1,))
    assert ops.Reshape((1,) * 64, (1,)).in_shape == (1,) * 64  # 64 axes: numpy's limit, accepted


def test_valid_shapes_and_perms_still_build() -> None:
    """Control: tuples, lists, ranges, torch.Size, 1-d arrays and negative axes."""
    b, x = _builder()
    perm: Any = np.array([-1, 0])
    assert b.shape(b.permute(x, perm)) == (3, 2)
    assert b.shape(b.reshape(x, range(6, 7))) == (6,)
    assert b.shape(b.reshape(x, torch.Size([3, 2]))) == (3, 2)
    assert b.shape(b.broadcast_to(x, [4, 2, 3])) == (4, 2, 3)


@pytest.mark.parametrize("method", ["const", "param"])
def test_const_and_param_refuse_ragged_and_unreadable_torch_data(method: str) -> None:
    b = GraphBuilder()
    with pytest.raises(IRError) as info:
        getattr(b, method)([[1.0, 2.0], [3.0]])
    assert str(info.value) == f"{method} value: [[1.0, 2.0], [3.0]] {RAGGED}"
    with pytest.raises(IRError) as info:
        getattr(b, method)(torch.ones(2, requires_grad=True))
    assert str(info.value) == f"{method} value {GRAD}"
    with pytest.raises(IRError) as info:
        getattr(b, method)([torch.ones(2, requires_grad=True)])
    assert str(info.value) == f"{method} value: element [0] {GRAD}"  # review241 F8: which element
    with pytest.raises(IRError) as info:
        getattr(b, method)([[1.0, 2.0], [torch.empty((), device="meta"), 3.0]])
    assert str(info.value) == f"{method} value: element [1][0] {META.replace('(2,)', '()')}"
    with pytest.raises(IRError) as info:
        getattr(b, method)([torch.ones(2, dtype=torch.bfloat16)])
    assert str(info.value) == (
        f"{method} value: element [0] is a torch tensor of dtype torch.bfloat16, which numpy has no dtype "
        "for: pass t.double() (accepted: a numpy array or a CPU torch tensor of a dtype numpy has)"
    )
    with pytest.raises(IRError) as info:
        getattr(b, method)(torch.empty(2, device="meta"))
    assert str(info.value) == f"{method} value {META}"
    with pytest.raises(IRError) as info:  # numpy's MemoryError for the copy of a declared-only view
        getattr(b, method)(np.broadcast_to(np.float64(1), (2**40,)))
    assert str(info.value) == (
        f"{method} value: cannot copy an array of shape [1099511627776] of dtype float64: not enough memory "
        "(accepted: data that fits in memory)"
    )
    assert len(b.build().graph) == 0


def test_linear_refuses_ragged_weight_and_grad_requiring_bias() -> None:
    b = GraphBuilder()
    x = b.input((2,))
    with pytest.raises(IRError) as info:
        b.linear(x, [[1.0, 2.0], [3.0]])
    assert str(info.value) == f"linear weight: [[1.0, 2.0], [3.0]] {RAGGED}"
    with pytest.raises(IRError) as info:
        b.linear(x, np.ones((2, 2)), torch.ones(2, requires_grad=True))
    assert str(info.value) == f"linear bias {GRAD}"
    node = b.linear(x, torch.ones(3, 2), torch.zeros(3))  # control: plain CPU tensors are data
    built = b.build()
    out = evaluate(built.graph, {0: np.ones(2, np.float32)}, built.payloads)[node]
    np.testing.assert_array_equal(out, np.full(3, 2.0, np.float32))


def _relu() -> Any:
    b = GraphBuilder()
    b.relu(b.input((2,)))
    return b.build()


@pytest.mark.parametrize(
    ("value", "expected"),
    [
        ([[1.0], [2.0, 3.0]], f"IR eval: input 0: [[1.0], [2.0, 3.0]] {RAGGED}"),
        (torch.ones(2, requires_grad=True), f"IR eval: input 0 {GRAD}"),
        (torch.empty(2, device="meta"), f"IR eval: input 0 {META}"),
    ],
)
def test_evaluate_refuses_ragged_and_unreadable_torch_inputs(value: object, expected: str) -> None:
    built = _relu()
    with pytest.raises(IRError) as info:
        evaluate(built.graph, {0: value}, built.payloads)  # type: ignore[dict-item]
    assert str(info.value) == expected


DTYPE_ACCEPTED = (
    "(accepted: float32 or float64, the dtype of rand_uniform draws, as a numpy dtype or type, its name, "
    "or a torch dtype)"
)


@pytest.mark.parametrize(
    ("dtype", "shown"),
    [
        (torch.zeros(1), "tensor([0.])"),  # was numpy's ValueError "Could not convert tensor([0.])"
        (np.float64(2.0), "np.float64(2.0)"),  # a value: np.dtype read its dtype
        (np.zeros(1, np.float32), "array([0.], dtype=float32)"),
        (None, "None"),  # np.dtype(None) is float64; the default is float32
    ],
)
def test_evaluate_dtype_must_be_a_dtype_spelling(dtype: object, shown: str) -> None:
    built = _relu()
    with pytest.raises(IRError) as info:
        evaluate(built.graph, {0: np.ones(2)}, built.payloads, dtype=dtype)  # type: ignore[arg-type]
    assert str(info.value) == f"IR eval: dtype {shown} is not a numpy dtype {DTYPE_ACCEPTED}"


@pytest.mark.parametrize("dtype", [torch.float64, "float64", np.float64, np.dtype("float64")])
def test_evaluate_dtype_spellings_draw_float64(dtype: object) -> None:
    b = GraphBuilder()
    node = b.rand_uniform(0, (3,))
    built = b.build()
    out = evaluate(built.graph, {}, built.payloads, dtype=dtype)[node]  # type: ignore[arg-type]
    assert out.dtype == np.float64


def _shared(depth: int) -> list[Any]:
    """``[[...] * 10] * 10`` nested ``depth`` deep: 10**depth numbers held in a few hundred bytes."""
    nested: Any = 1.0
    for _ in range(depth):
        nested = [nested] * 10
    return list(nested)


def test_a_deeply_shared_list_is_refused_from_a_bounded_read() -> None:
    """review242 F1: after numpy's immediate refusal, the element walk visited (and named) every one
    of the 10**depth entries and the message printed the list's whole repr (minutes at depth 9);
    both now read a bounded part, level by level, so a tensor near the top is still named."""
    b = GraphBuilder()
    with pytest.raises(IRError) as info:
        b.const([_shared(7), torch.ones(2, requires_grad=True)])
    assert str(info.value) == f"const value: element [1] {GRAD}"
    with warnings.catch_warnings():  # "ComplexHalf support is experimental"
        warnings.simplefilter("ignore", UserWarning)
        half_complex = torch.zeros(1, dtype=torch.complex32)  # a dtype numpy lacks and torch won't widen
    with pytest.raises(IRError) as info:
        b.const([half_complex, _shared(9)])
    assert str(info.value).startswith(
        "const value: numpy cannot read [tensor([0.+0.j], dtype=torch.complex32), [[[[...], [...]...: "
    )
