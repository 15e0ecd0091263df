"""review239 F2: a shape argument of ``nn.build`` and the layers (``input_shape``,
``normalized_shape``, ``reshape``'s ``shape``) is refused by its length (at most 64 entries, numpy's
and torch's rank limit) before any entry is read: a declared-only view of ``2**40`` entries gave a
bare ``MemoryError`` from ``list(...)``."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from torchlean import nn
from torchlean.nn.layers import Reshape, ShapeError

HUGE = np.broadcast_to(np.int64(1), (2**40,))
HUGE_SHOWN = "array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,))"
LIMIT = "must have at most 64 entries (numpy's and torch's rank limit), got"


@pytest.mark.parametrize(
    ("call", "what"),
    [
        (lambda: nn.build(nn.linear(2, 3), input_shape=HUGE), "build: input_shape"),
        (lambda: nn.layer_norm(HUGE), "layer_norm: normalized_shape"),  # type: ignore[arg-type]
        (lambda: Reshape(HUGE), "reshape: shape"),  # type: ignore[arg-type]
    ],
)
def test_a_huge_shape_is_refused_by_its_length(call: Callable[[], object], what: str) -> None:
    with pytest.raises(ShapeError) as info:
        call()
    assert str(info.value) == f"{what} {LIMIT} {HUGE_SHOWN} of length 1099511627776"


def test_65_entries_are_refused_and_64_accepted() -> None:
    with pytest.raises(ShapeError) as info:
        nn.build(nn.relu(), input_shape=[1] * 65)
    assert str(info.value) == (
        f"build: input_shape {LIMIT} [1, 1, 1, 1, 1, 1, 1, 1, ...] of length 65"  # its first 8 entries
    )
    assert nn.build(nn.relu(), input_shape=[1] * 64).input_shape == (1,) * 64  # control: the limit itself


def test_a_long_refused_shape_is_shown_shortened() -> None:
    with pytest.raises(ShapeError) as info:
        nn.layer_norm([1] * 40 + [0])
    message = str(info.value)
    assert message.startswith(
        "layer_norm: normalized_shape must be an int >= 1 or a non-empty tuple or list of ints >= 1, got "
        "[1, 1, 1,"
    )
    assert message.endswith("...]") and len(message) < 200  # the list's first entries (reprlib)
