"""The peak of numpy's allocations during one call, shared by the memory tests of the reference
kernels (numpy reports its buffers to ``tracemalloc``, so the peak counts the arrays a kernel
builds, not the interpreter's own memory)."""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import TypeVar

_T = TypeVar("_T")


def traced_peak(call: Callable[[], _T]) -> tuple[_T, int]:
    """``call()`` and the peak bytes allocated meanwhile."""
    tracemalloc.start()
    try:
        result = call()
        return result, tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
