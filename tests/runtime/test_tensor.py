"""``Tensor``: creation, dtypes, conversion to and from torch, repr, copies vs views, in-place
writes and operators (oracles: numpy/torch semantics and hand-written expectations)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.autograd.tape import AutogradError


@pytest.mark.parametrize(
    ("data", "dtype"),
    [
        ([1.0, 2.0], np.float32),
        (3.5, np.float32),
        (np.array([1.0], dtype=np.float64), np.float64),
        (np.array([1.0], dtype=np.float32), np.float32),
        ([1, 2], np.int64),
        (np.array([1, 2], dtype=np.int32), np.int64),
        ([True, False], np.bool_),
        (torch.tensor([1.0], dtype=torch.float64), np.float64),
    ],
)
def test_default_dtypes(data: object, dtype: type) -> None:
    assert tl.tensor(data).dtype == np.dtype(dtype)


@pytest.mark.parametrize("spelling", ["float64", np.float64, np.dtype("float64"), torch.float64])
def test_dtype_spellings(spelling: object) -> None:
    assert tl.tensor([1, 2], dtype=spelling).dtype == np.float64


def test_unsupported_dtypes_are_refused() -> None:
    with pytest.raises(
        tl.TensorError, match=r"unsupported tensor dtype float16 \(supported: float32 \| float64"
    ):
        tl.tensor(np.ones(2, dtype=np.float16))
    with pytest.raises(tl.TensorError, match="unsupported tensor dtype"):
        tl.tensor([1.0], dtype="complex64")
    with pytest.raises(tl.TensorError, match="unsupported tensor dtype"):
        tl.tensor(["a"])


@pytest.mark.parametrize("dtype", [">f8", ">f4", ">i8", ">i4"])
def test_big_endian_arrays_become_native_tensors_with_the_same_values(dtype: str) -> None:
    data = np.array([1.5, -2.0, 3.0]).astype(dtype)  # e.g. read from a big-endian file
    t = tl.tensor(data)
    assert t.dtype.isnative
    np.testing.assert_array_equal(t.numpy(), data.astype(data.dtype.newbyteorder("=")))
    assert t.dtype == (np.float64 if dtype == ">f8" else np.float32 if dtype == ">f4" else np.int64)


def test_only_float_tensors_require_grad() -> None:
    with pytest.raises(tl.TensorError, match="only float32 and float64"):
        tl.tensor([1, 2], requires_grad=True)
    t = tl.tensor([1, 2])
    with pytest.raises(tl.TensorError, match="only float32 and float64"):
        t.requires_grad = True


def test_requires_grad_can_only_change_on_leaves() -> None:
    x = tl.tensor([1.0], requires_grad=True)
    y = x * x
    with pytest.raises(tl.TensorError, match="leaf"):
        y.requires_grad = False
    x.requires_grad = False
    assert not x.requires_grad


def test_repr_shows_values_shape_dtype_and_requires_grad() -> None:
    t = tl.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], requires_grad=True)
    assert repr(t) == (
        "Tensor([[1., 2., 3.],\n        [4., 5., 6.]], shape=(2, 3), dtype=float32, requires_grad=True)"
    )
    assert repr(tl.tensor(2.5)) == "Tensor(2.5, shape=(), dtype=float32, requires_grad=False)"


def test_creation_copies_its_input() -> None:
    source = np.array([1.0, 2.0])
    t = tl.tensor(source)
    source[0] = 99.0
    assert t.numpy()[0] == 1.0


def test_numpy_is_a_read_only_view_that_sees_in_place_writes() -> None:
    t = tl.tensor([1.0, 2.0])
    view = t.numpy()
    with pytest.raises(ValueError, match="read-only"):
        view[0] = 5.0
    t.copy_(np.array([7.0, 8.0]))
    np.testing.assert_array_equal(view, [7.0, 8.0])


def test_torch_round_trip_copies_and_keeps_dtype() -> None:
    source = torch.tensor([[1.0, 2.0]], dtype=torch.float64, requires_grad=True)
    t = tl.from_torch(source, requires_grad=True)
    assert t.dtype == np.float64 and t.requires_grad and t.shape == (1, 2)
    with torch.no_grad():
        source[0, 0] = 50.0
    assert t.numpy()[0, 0] == 1.0
    back = t.to_torch()
    assert back.dtype == torch.float64 and not back.requires_grad
    back[0, 0] = -1.0
    assert t.numpy()[0, 0] == 1.0
    with pytest.raises(tl.TensorError, match=r"unsupported tensor dtype torch\.float16"):
        tl.from_torch(torch.ones(2, dtype=torch.float16))


@pytest.mark.parametrize(
    ("source", "kind"),
    [
        (torch.ones(3, device="meta"), "meta"),
        (torch.eye(3).to_sparse(), "sparse"),
    ],
)
def test_torch_tensors_without_dense_values_are_refused(source: torch.Tensor, kind: str) -> None:
    for make in (tl.from_torch, tl.tensor):
        with pytest.raises(
            tl.TensorError, match=rf"cannot copy a {kind} torch tensor \(shape \(3,(?: 3)?\)\)"
        ):
            make(source)


def test_metadata_and_item() -> None:
    t = tl.tensor(np.zeros((2, 3, 4)))
    assert (t.shape, t.ndim, t.size, t.device, len(t)) == ((2, 3, 4), 3, 24, "cpu", 2)
    assert tl.tensor([4.0]).item() == 4.0
    with pytest.raises(tl.TensorError, match="one element"):
        t.item()
    with pytest.raises(tl.TensorError, match="0-d"):
        len(tl.tensor(1.0))
    assert tl.tensor([[1, 2]]).tolist() == [[1, 2]]
    np.testing.assert_array_equal(np.asarray(tl.tensor([1.0, 2.0])), [1.0, 2.0])


def test_iteration_yields_rows() -> None:
    rows = list(tl.tensor([[1.0, 2.0], [3.0, 4.0]]))
    assert [r.tolist() for r in rows] == [[1.0, 2.0], [3.0, 4.0]]


def test_in_place_writes_bump_the_version_and_check_their_input() -> None:
    t = tl.tensor(np.zeros((2, 2)))
    t[0, 1] = 3.0
    t.copy_(t.numpy() + 1.0)
    t.zero_()
    assert t._version.value == 3
    with pytest.raises(tl.TensorError, match="cannot write"):
        t.copy_(np.ones(3))
    with pytest.raises(tl.TensorError, match="cannot assign"):
        t[5, 5] = 1.0
    assert t._version.value == 3


def test_in_place_write_into_a_broadcast_view_is_refused() -> None:
    b = tl.tensor(np.ones(3))
    view = tl.tensor(np.ones(3))
    view._data = np.broadcast_to(b._data, (2, 3))  # a read-only storage, as numpy broadcasts give
    with pytest.raises(tl.TensorError, match="read-only"):
        view.zero_()


def test_operators_with_numbers_and_arrays() -> None:
    x = tl.tensor([1.0, 2.0, 4.0])
    np.testing.assert_array_equal((x + 1).numpy(), [2.0, 3.0, 5.0])
    np.testing.assert_array_equal((1 - x).numpy(), [0.0, -1.0, -3.0])
    np.testing.assert_array_equal((x * 2).numpy(), [2.0, 4.0, 8.0])
    np.testing.assert_array_equal((x / 2).numpy(), [0.5, 1.0, 2.0])
    np.testing.assert_array_equal((4 / x).numpy(), [4.0, 2.0, 1.0])
    np.testing.assert_array_equal((-x).numpy(), [-1.0, -2.0, -4.0])
    mixed = np.array([1.0, 1.0, 1.0]) + x  # numpy defers to Tensor.__radd__
    assert isinstance(mixed, tl.Tensor) and mixed.dtype == np.float32
    np.testing.assert_array_equal(mixed.numpy(), [2.0, 3.0, 5.0])
    m = tl.tensor(np.eye(3, dtype=np.float32))
    np.testing.assert_array_equal((x @ m).numpy(), x.numpy())
    with pytest.raises(tl.TensorError, match="at least one operand"):
        tl.add(1.0, 2.0)  # type: ignore[arg-type]


def test_method_forms() -> None:
    x = tl.tensor(np.arange(6.0).reshape(2, 3))
    assert x.reshape(3, 2).shape == (3, 2)
    assert x.reshape((6,)).shape == (6,)
    assert x.permute(1, 0).shape == (3, 2)
    assert x.transpose(0, 1).shape == (3, 2)
    np.testing.assert_array_equal(x.T.numpy(), np.arange(6.0).reshape(2, 3).T)
    assert x.sum().item() == 15.0
    np.testing.assert_array_equal(x.mean(axis=0).numpy(), [1.5, 2.5, 3.5])
    assert x.sum(axis=1, keepdims=True).shape == (2, 1)


def test_getitem_matches_numpy_basic_indexing() -> None:
    base = np.arange(60.0).reshape(3, 4, 5)
    x = tl.tensor(base)
    for index in [
        (1,),
        (slice(1, 3),),
        (-1, slice(None, None, 2)),
        (Ellipsis, 2),
        (None, 0, slice(1, 4), None),
        (slice(3, 1),),
        (2, 3, 4),
    ]:
        np.testing.assert_array_equal(x[index].numpy(), base[index])


def test_grad_is_a_plain_tensor() -> None:
    x = tl.tensor([1.0, 2.0], requires_grad=True)
    (x * x).backward(np.ones(2))
    assert isinstance(x.grad, tl.Tensor)
    assert not x.grad.requires_grad and x.grad.is_leaf


def test_inplace_refusal_lists_the_remedy() -> None:
    x = tl.tensor([1.0], requires_grad=True)
    with pytest.raises(AutogradError, match="item assignment on a tensor that requires grad"):
        x[0] = 2.0
