"""Scalar left folds and bit comparisons shared by the bitwise fixed-left suites.

The oracles of ``test_left_fold_attention.py`` and ``test_left_fold_spatial.py`` add float32
scalars one at a time in a stated order; these helpers are that addition and the bitwise checks,
written without any torchlean helper.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
from numpy.testing import assert_array_equal

Array = np.ndarray[Any, Any]
F32 = np.float32


def fold(terms: Sequence[Any], reverse: bool = False) -> Any:
    """``((t0 + t1) + t2) + ...`` with float32 scalars, starting from the first term (from the last
    one when ``reverse``)."""
    items = list(terms)[::-1] if reverse else list(terms)
    acc = items[0]
    for item in items[1:]:
        acc = acc + item
    return acc


def bits(a: Array) -> Array:
    """The float32 bit patterns of ``a`` (so ``-0.0`` and ``+0.0`` differ, and NaN equals itself)."""
    return np.ascontiguousarray(a, dtype=F32).view(np.uint32)


def assert_bitwise(got: Array | None, expected: Array, name: str = "") -> None:
    """``got`` is float32 of ``expected``'s shape and equal to it bit for bit."""
    assert got is not None and got.dtype == F32 and got.shape == expected.shape, name
    assert_array_equal(bits(got), bits(expected), err_msg=name)


def assert_differs(a: Array, b: Array, name: str = "") -> None:
    """Some entry of ``a`` and ``b`` differs in its bits: the other order is visible on this input."""
    assert (bits(a) != bits(b)).any(), f"{name}: the other order gives the same bits on this input"
