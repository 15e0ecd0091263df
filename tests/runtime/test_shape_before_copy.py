"""Shapes refused before a large operand is copied or a broadcast result is computed (review243
F2, F3, F11(a)): the operands are zero-strided views declaring far more entries than memory
holds, so the old code raised MemoryError (or allocated GBs) where the refusal must come first."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import GuardError
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
