"""The ``ieee`` decorator of the reference kernels: IEEE 754 results without numpy warnings.

A reference kernel computes what IEEE arithmetic gives (``inf``, ``nan``, signed zeros), as torch
does, and never emits numpy's ``RuntimeWarning`` (``overflow``, ``invalid value``, ``divide by
zero``) on the way, so that ``warnings.simplefilter("error")`` or ``pytest -W error`` in a user's
program does not turn a legitimate non-finite value into an exception.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import ParamSpec, TypeVar

import numpy as np

__all__ = ["ieee"]

_P = ParamSpec("_P")
_R = TypeVar("_R")


def ieee(fn: Callable[_P, _R]) -> Callable[_P, _R]:
    """``fn`` run under ``numpy.errstate(all="ignore")`` (as torch, which never warns on IEEE
    special values)."""

    @functools.wraps(fn)
    def wrapper(*args: _P.args, **kwargs: _P.kwargs) -> _R:
        with np.errstate(all="ignore"):
            return fn(*args, **kwargs)

    return wrapper
