"""Shapes refused before a large operand is copied or a broadcast result is computed (review243
F2, F3, F11(a)): the operands are zero-strided views declaring far more entries than memory
holds, so the old code raised MemoryError (or allocated GBs) where the refusal must come first."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.tensor import TensorError

HUGE = 2**40


def _f32(*shape: int) -> tl.Tensor:
    return tl.tensor(np.ones(shape, np.float32))


# ------------------------------------------------------------------ F3: t += other


@pytest.mark.parametrize("spelling", ["+=", "-=", "*=", "/="])
@pytest.mark.parametrize("container", ["numpy", "torch"])
def test_in_place_update_refuses_a_larger_broadcast_before_computing_it(
    spelling: str, container: str
) -> None:
    view = np.broadcast_to(np.float32(1), (HUGE, 2, 3))
    other = view if container == "numpy" else torch.ones(()).expand(HUGE, 2, 3)
    t = _f32(2, 3)
    with tl.no_grad(), pytest.raises(TensorError) as info:
        if spelling == "+=":
            t += other
        elif spelling == "-=":
            t -= other
        elif spelling == "*=":
            t *= other
        else:
            t /= other
    assert str(info.value) == (
        f"in-place {spelling}: the result has shape ({HUGE}, 2, 3), but an in-place update keeps this "
        "tensor's shape (2, 3) (accepted: an operand that broadcasts to (2, 3))"
    )
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 3), np.float32))


def test_in_place_update_message_is_the_one_after_the_op() -> None:
    t = _f32(2, 3)
    with tl.no_grad(), pytest.raises(TensorError, match=r"the result has shape \(4, 2, 3\)"):
        t += _f32(4, 2, 3)
    with tl.no_grad(), pytest.raises(TensorError, match=r"the result has shape \(4, 2, 3\)"):
        t += np.ones((4, 2, 3), np.int64)


def test_in_place_update_keeps_the_dtype_refusal_first() -> None:
    t = _f32(2, 3)
    with tl.no_grad(), pytest.raises(GuardError, match="dtype float64"):
        t += tl.tensor(np.ones((4, 2, 3)))
    ints = tl.tensor(np.ones((2, 3), np.int64))
    with tl.no_grad(), pytest.raises(GuardError, match="dtype int64"):
        ints += np.ones((4, 2, 3))


def test_in_place_update_still_accepts_a_broadcasting_operand() -> None:
    t = _f32(2, 3)
    with tl.no_grad():
        t += np.broadcast_to(np.float32(2), (HUGE, 1, 1))[0]
        t *= torch.full((3,), 2.0)
    np.testing.assert_array_equal(t.numpy(), np.full((2, 3), 6.0, np.float32))


# ------------------------------------------------------------------ F11(a): t[mask] = v


@pytest.mark.parametrize("container", ["numpy", "torch"])
def test_item_assignment_refuses_a_mask_of_too_many_axes_before_numpy_expands_it(container: str) -> None:
    mask = (np.broadcast_to(np.True_, (HUGE, 2, 3)) if container == "numpy"
            else torch.ones((), dtype=torch.bool).expand(HUGE, 2, 3))
    t = _f32(2, 3)
    with tl.no_grad(), pytest.raises(tl.TensorIndexError) as info:
        t[mask] = 0.0
    assert str(info.value).startswith("cannot assign to index ")
    assert str(info.value).endswith(
        "of a tensor of shape (2, 3): too many indices for array: array is 2-dimensional, but 3 were indexed"
    )
    np.testing.assert_array_equal(t.numpy(), np.ones((2, 3), np.float32))


def test_item_assignment_refuses_a_mask_extent_before_numpy_expands_it() -> None:
    t = _f32(2, 3)
    mask = np.broadcast_to(np.True_, (2, HUGE))
    with tl.no_grad(), pytest.raises(TensorError) as info:
        t[..., mask] = 0.0
    assert not isinstance(info.value, tl.TensorIndexError)
    assert str(info.value).endswith(
        "boolean index did not match indexed array along axis 1; size of axis is 3 but size of "
        f"corresponding boolean axis is {HUGE}"
    )


@pytest.mark.parametrize(
    "index",
    [
        np.ones((2, 4), bool),
        (None, slice(None), np.ones(4, bool)),
        (Ellipsis, np.ones(2, bool)),
        (0, np.ones((3, 4, 5), bool)),
        (True, np.ones((2, 5), bool)),
        (np.ones((2, 3), bool), Ellipsis, np.ones(3, bool)),
        (np.array([0, 1]), np.ones((3, 5), bool)),
        np.ones((2, 3, 4, 1), bool),
    ],
)
def test_item_assignment_mask_refusals_are_numpys(index: object) -> None:
    target = np.zeros((2, 3, 4), np.float32)
    with pytest.raises(IndexError) as numpy_refusal:
        target[index] = 0.0  # type: ignore[index]
    t = tl.tensor(target)
    with tl.no_grad(), pytest.raises(TensorError) as info:
        t[index] = 0.0  # type: ignore[index]
    assert str(info.value).endswith(f"of a tensor of shape (2, 3, 4): {numpy_refusal.value}")
    assert isinstance(info.value, tl.TensorIndexError) == ("too many" in str(numpy_refusal.value))


def test_item_assignment_with_masks_that_fit_still_writes() -> None:
    t = _f32(2, 3)
    with tl.no_grad():
        t[np.array([True, False])] = 2.0
        t[..., np.array([False, False, True])] = 3.0
        t[torch.tensor([[False, True, False], [False] * 3])] = 4.0
    np.testing.assert_array_equal(t.numpy(), [[2, 4, 3], [1, 1, 3]])


# ------------------------------------------------------------------ F2: sdpa mask, gather index


def _mask_view(*shape: int, container: str = "numpy") -> object:
    if container == "numpy":
        return np.broadcast_to(np.True_, shape)
    return torch.ones((), dtype=torch.bool).expand(*shape)


@pytest.mark.parametrize("container", ["numpy", "torch"])
def test_sdpa_refuses_a_mask_shape_before_copying_it(container: str) -> None:
    q = _f32(1, 2, 3)
    with pytest.raises(GuardError) as info:
        tl.scaled_dot_product_attention(q, q, q, _mask_view(HUGE, 2, 2, container=container))
    assert str(info.value) == (
        f"scaled_dot_product_attention: mask ({HUGE}, 2, 2) does not broadcast to the scores' shape "
        "(1, 2, 2) (accepted: a mask broadcastable to (..., nQ, nK))"
    )
    with pytest.raises(GuardError, match=r"shapes are not broadcastable: scores \(1, 2, 2\), mask"):
        tl.scaled_dot_product_attention(q, q, q, _mask_view(3, HUGE, container=container))


def test_sdpa_refuses_a_grouped_mask_shape_before_copying_it() -> None:
    q, kv = _f32(1, 4, 2, 3), _f32(1, 2, 2, 3)
    with pytest.raises(GuardError, match=r"the mask's head axis \(-3\) must be 1 or q's 4; got mask \(1099"):
        tl.scaled_dot_product_attention(q, kv, kv, _mask_view(HUGE, 2, 2), enable_gqa=True)
    with pytest.raises(GuardError, match=r"with enable_gqa=True, the mask does not broadcast"):
        tl.scaled_dot_product_attention(q, kv, kv, _mask_view(HUGE, 1, 2, 2), enable_gqa=True)


def test_sdpa_mask_refusal_order_is_kept() -> None:
    q = _f32(1, 2, 3)
    small = np.ones((5, 2, 2))  # a float mask: the dtype refusal first, as for a Tensor mask
    for mask in (small, tl.tensor(small)):
        with pytest.raises(GuardTypeError, match="mask has dtype float64"):
            tl.scaled_dot_product_attention(q, q, q, mask)
    with pytest.raises(GuardError, match="has dtype float64"):  # q, k, v dtypes before the mask
        tl.scaled_dot_product_attention(q, tl.tensor(np.ones((1, 2, 3))), q, np.ones((5, 2, 2), bool))
    with pytest.raises(GuardError, match="rank below 2"):
        tl.scaled_dot_product_attention(_f32(3), _f32(3), _f32(3), np.ones((5, 2, 2), bool))
    out = tl.scaled_dot_product_attention(q, q, q, _mask_view(2, 2))
    assert out.shape == (1, 2, 3)


@pytest.mark.parametrize("container", ["numpy", "torch"])
def test_gather_refuses_an_index_shape_before_casting_it(container: str) -> None:
    x = _f32(1, 2, 3)
    view = np.broadcast_to(np.int32(0), (HUGE, 2))
    index = view if container == "numpy" else torch.zeros((), dtype=torch.int32).expand(HUGE, 2)
    with pytest.raises(GuardError) as info:
        tl.gather(x, index, 0)
    assert str(info.value) == (
        f"gather: index ({HUGE}, 2) does not fit input x (1, 2, 3) (accepted: the same rank and index "
        "extents <= the input's on every axis but 0)"
    )
    with pytest.raises(GuardError, match=r"gather: index \(1099511627776, 2, 3\) does not fit"):
        tl.gather(x, np.broadcast_to(np.int64(0), (HUGE, 2, 3)), 2)


def test_scatter_add_refuses_an_index_shape_before_casting_it() -> None:
    base = _f32(2, 3)
    with pytest.raises(GuardError) as info:
        tl.scatter_add(base, np.broadcast_to(np.uint8(0), (2, HUGE)), base, 0)
    assert str(info.value) == (
        f"scatter_add: index (2, {HUGE}) does not fit base (2, 3) and src (2, 3) (accepted: one rank; "
        "index extents <= src's on every axis and <= base's on every axis but 0)"
    )


def test_gather_index_refusal_order_is_kept() -> None:
    x = _f32(2, 3)
    with pytest.raises(GuardError, match="index has dtype float64"):
        tl.gather(x, np.zeros((5, 5)), 0)
    with pytest.raises(GuardError, match="input x has dtype int64"):
        tl.gather(tl.tensor(np.ones((2, 3), np.int64)), np.zeros((5, 5), np.int64), 0)
    with pytest.raises(GuardError, match="axis"):
        tl.gather(x, np.zeros((2, 3), np.int64), 5)
    with pytest.raises(GuardError, match="out of range for extent 2 along axis 0"):
        tl.gather(x, np.full((1, 3), 2), 0)
    np.testing.assert_array_equal(tl.gather(x, np.broadcast_to(np.int64(1), (2, 3)), 0).numpy(), x.numpy())


@pytest.mark.parametrize("value", ["a", None])
def test_a_non_numeric_value_is_refused_before_a_mask_of_the_wrong_shape(value: object) -> None:
    """review244 F1: the mask's extent check (review243 F11) ran before the value was read, so
    ``t[bad_mask] = 'a'`` named the mask where it named the value before, as torch does ("can't
    assign a str to a torch.FloatTensor"); the value comes first again, the mask before numpy
    expands it."""
    t = tl.tensor(np.zeros((2, 3)))
    value_first = r"^cannot use .* as the value of an item assignment"
    with tl.no_grad(), pytest.raises(tl.TensorTypeError, match=value_first):
        t[np.ones((3, 3), bool)] = value  # type: ignore[assignment]
