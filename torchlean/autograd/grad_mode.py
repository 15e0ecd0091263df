"""Gradient mode: ``no_grad()`` and ``enable_grad()`` (anchor-runtime.md §1.4).

While gradients are disabled, ops record no tape nodes, their results have
``requires_grad=False``, and the eager session plans every op under its *effective* profile,
whose policy VJP mode is ``none`` ("no-grad sessions request `none` automatically"), so planning
no longer demands a capsule VJP. The mode is a context variable: it is per thread and per
asyncio task, and it nests.
"""

from __future__ import annotations

import functools
import inspect
import sys
from collections.abc import Callable, Generator
from contextvars import ContextVar
from typing import Any, TypeVar, cast, overload

from torchlean._checks import shown_briefly
from torchlean._tensor_errors import TensorTypeError
from torchlean.autograd._entries import EntryRecord, ExitOutcome

__all__ = [
    "GradMode",
    "enable_grad",
    "is_grad_enabled",
    "no_grad",
    "set_grad_enabled",
    "torch_no_grad_note",
]

_GRAD_ENABLED: ContextVar[bool] = ContextVar("torchlean_grad_enabled", default=True)
_ENTRIES: EntryRecord[bool] = EntryRecord(_GRAD_ENABLED, "torchlean_grad_mode_entries")


def is_grad_enabled() -> bool:
    """True unless the caller runs inside ``no_grad()`` (or ``set_grad_enabled(False)``)."""
    return _GRAD_ENABLED.get()


def torch_no_grad_note() -> str:
    """``""``, or, when torch is imported and its own grad mode is off (``torch.no_grad()`` is
    open), a note for a refusal that asks for :func:`no_grad`: torch's mode does not switch
    torchlean's recording (review138 F2). torch is never imported here."""
    torch = sys.modules.get("torch")
    is_enabled = getattr(torch, "is_grad_enabled", None)
    if is_enabled is None or is_enabled():
        return ""
    return (
        " (torch's grad mode is off here, as under torch.no_grad(): it switches torch's recording, "
        "not torchlean's)"
    )


_F = TypeVar("_F", bound=Callable[..., Any])


class GradMode:
    """A gradient mode to enter (``with``) or to decorate a function with, as torch's grad-mode
    context managers: reusable and re-entrant (each entry restores what it found, per thread and
    asyncio task), and a decorated function runs each call under the mode (a generator function,
    each step of its body, as ``torch.no_grad`` runs it; a coroutine function, its body until it
    returns, in the task that awaits it: the mode is per task, so other tasks keep theirs, where
    torch's decorator would set the mode only while the coroutine object is made)."""

    def __init__(self, enabled: bool) -> None:
        if type(enabled) is not bool:  # "False" would read as true; torch refuses non-bools too
            kind = type(enabled)  # numpy.bool, not "bool" (numpy 2's name for np.bool_)
            named = kind.__qualname__
            if kind.__module__ != "builtins":
                named = f"{kind.__module__}.{named}"
            raise TensorTypeError(  # a torchlean error, as every argument refusal (review239 F13)
                f"set_grad_enabled: enabled must be a bool; got {shown_briefly(enabled)} of type {named} "
                "(accepted: True or False; other values are not converted)"
            )
        self._enabled = enabled

    def __enter__(self) -> None:
        _ENTRIES.enter(self, self._enabled)

    def __exit__(self, *exc: object) -> None:
        """Restore the mode this object's last ``__enter__`` in this thread or asyncio task found.

        Raises:
            RuntimeError: no ``__enter__`` of this object is open in this thread or task (never
                entered, already exited, or entered in another thread or task), or its entry was
                made by the task's creator (review61 F7; it was an ``IndexError``/``ValueError``).
        """
        outcome = _ENTRIES.exit(self)
        if outcome is ExitOutcome.NOT_ENTERED:
            raise RuntimeError(
                f"{self._name()} (a GradMode): __exit__ without a matching __enter__ in this thread or "
                "asyncio task (never entered, already exited, or entered in another thread or task: a "
                f"grad mode is per thread and task); use a `with {self._name()}:` block"
            )
        if outcome is ExitOutcome.OTHER_CONTEXT:
            raise RuntimeError(
                f"{self._name()} (a GradMode): __exit__ in another asyncio task or context than its "
                f"__enter__ (a grad mode is per task); use a `with {self._name()}:` block"
            )

    def _name(self) -> str:
        """How the messages name this mode: the call that makes it."""
        return "enable_grad()" if self._enabled else "no_grad()"

    def __call__(self, func: _F) -> _F:
        if not callable(func):
            raise TensorTypeError(
                f"a grad mode decorates a function, got {func!r} of type {type(func).__name__}"
            )
        enabled = self._enabled
        if inspect.isgeneratorfunction(func):
            return cast(_F, _generator_under(func, enabled))
        if inspect.iscoroutinefunction(func):

            @functools.wraps(func)
            async def awaited(*args: Any, **kwargs: Any) -> Any:
                with GradMode(enabled):
                    return await func(*args, **kwargs)

            return cast(_F, awaited)

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with GradMode(enabled):
                return func(*args, **kwargs)

        return cast(_F, wrapper)


def _generator_under(func: Callable[..., Generator[Any, Any, Any]], enabled: bool) -> Callable[..., Any]:
    """``func`` (a generator function) whose body runs under the mode ``enabled`` at every step,
    while the caller's code between steps runs under its own mode."""

    @functools.wraps(func)
    def wrapper(*args: Any, **kwargs: Any) -> Generator[Any, Any, Any]:
        with GradMode(enabled):
            generator = func(*args, **kwargs)
        try:
            with GradMode(enabled):
                response = generator.send(None)
            while True:
                try:
                    request = yield response
                except GeneratorExit:
                    with GradMode(enabled):
                        generator.close()
                    raise
                except BaseException as error:
                    with GradMode(enabled):
                        response = generator.throw(error)
                else:
                    with GradMode(enabled):
                        response = generator.send(request)
        except StopIteration as stop:
            return stop.value

    return wrapper


class _SetGradEnabled(GradMode):
    """:func:`set_grad_enabled`'s mode: set when made, as torch's ``set_grad_enabled`` sets it in
    its constructor, so a bare call switches the mode; a ``with`` block or a decorated function
    restores the mode found before it."""

    def __init__(self, enabled: bool) -> None:
        super().__init__(enabled)
        self._before = _GRAD_ENABLED.get()
        _GRAD_ENABLED.set(enabled)

    def __enter__(self) -> None:
        _GRAD_ENABLED.set(self._before)  # the entry records the mode found before the call
        super().__enter__()

    def __call__(self, func: _F) -> _F:
        _GRAD_ENABLED.set(self._before)  # a decorator: only the function's calls run under it (torch)
        return super().__call__(func)

    def _name(self) -> str:
        return f"set_grad_enabled({self._enabled})"


def set_grad_enabled(enabled: bool) -> GradMode:
    """Switch gradient recording to ``enabled`` (as ``torch.set_grad_enabled``): a bare call sets
    it in this thread or asyncio task (the mode is a context variable) until set again; used as a
    ``with`` block it holds within the block and the mode found before the call comes back at its
    end; used as a decorator, each call of the function runs under it and the mode around the
    decoration is left as it was (review100 L2: a bare call changed nothing, where torch's
    switches the mode). Also ``torchlean.set_grad_enabled``.

    Raises:
        TensorTypeError: ``enabled`` not a Python bool (``"False"`` would read as true; torch refuses
            non-bools too, numpy bools included).
    """
    return _SetGradEnabled(enabled)


@overload
def no_grad() -> GradMode: ...
@overload
def no_grad(func: _F) -> _F: ...
def no_grad(func: _F | None = None) -> GradMode | _F:
    """Disable gradient recording in the body (as ``torch.no_grad``): ``with no_grad():``, or as a
    decorator, ``@no_grad()`` or ``@no_grad`` (each call of the function runs under it; each step of
    a generator function's body).

    Ops inside record no tape nodes and are planned with policy VJP mode ``none``.

    Raises:
        TensorTypeError: ``func`` given and not callable.
    """
    mode = GradMode(False)
    return mode if func is None else mode(func)


@overload
def enable_grad() -> GradMode: ...
@overload
def enable_grad(func: _F) -> _F: ...
def enable_grad(func: _F | None = None) -> GradMode | _F:
    """Re-enable gradient recording inside a ``no_grad()`` block (as ``torch.enable_grad``); a
    decorator too, with or without parentheses.

    Raises:
        TensorTypeError: ``func`` given and not callable.
    """
    mode = GradMode(True)
    return mode if func is None else mode(func)
