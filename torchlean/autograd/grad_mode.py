"""Gradient mode: ``no_grad()`` and ``enable_grad()`` (anchor-runtime.md §1.4).

While gradients are disabled, ops record no tape nodes, their results have
``requires_grad=False``, and the eager session plans every op under its *effective* profile,
whose policy VJP mode is ``none`` ("no-grad sessions request `none` automatically"), so planning
no longer demands a capsule VJP. The mode is a context variable: it is per thread and per
asyncio task, and it nests.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from contextvars import ContextVar
from typing import Any, TypeVar, overload

__all__ = ["enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]

_GRAD_ENABLED: ContextVar[bool] = ContextVar("torchlean_grad_enabled", default=True)


def is_grad_enabled() -> bool:
    """True unless the caller runs inside ``no_grad()`` (or ``set_grad_enabled(False)``)."""
    return _GRAD_ENABLED.get()


@contextmanager
def set_grad_enabled(enabled: bool) -> Iterator[None]:
    """Run the body with gradient recording switched to ``enabled``; restores the previous mode."""
    token = _GRAD_ENABLED.set(bool(enabled))
    try:
        yield
    finally:
        _GRAD_ENABLED.reset(token)


_F = TypeVar("_F", bound=Callable[..., Any])


@overload
def no_grad() -> AbstractContextManager[None]: ...
@overload
def no_grad(func: _F) -> _F: ...
def no_grad(func: _F | None = None) -> AbstractContextManager[None] | _F:
    """Disable gradient recording in the body (as ``torch.no_grad``): ``with no_grad():``, or as a
    decorator, ``@no_grad()`` or ``@no_grad`` (each call of the function runs under it).

    Ops inside record no tape nodes and are planned with policy VJP mode ``none``.
    """
    mode = set_grad_enabled(False)
    return mode if func is None else mode(func)


@overload
def enable_grad() -> AbstractContextManager[None]: ...
@overload
def enable_grad(func: _F) -> _F: ...
def enable_grad(func: _F | None = None) -> AbstractContextManager[None] | _F:
    """Re-enable gradient recording inside a ``no_grad()`` block (as ``torch.enable_grad``); a
    decorator too, with or without parentheses."""
    mode = set_grad_enabled(True)
    return mode if func is None else mode(func)
