"""A trainer's ``fit`` and ``step`` refuse, rather than wait for or interleave with, a ``fit`` or
``step`` already running on the same trainer (review237 F3: two threads' ``fit`` on one trainer
ran the same epochs and left ``epochs_done`` counting half of them; a ``fit`` called from its own
``on_batch`` set it back).

A lock that waits was tried before and reverted: a Ctrl-C landing where its ``with`` block exits
left it held, and the next call hung. Here nothing waits, and a hold whose call is no longer on
its thread's stack (left by such an interrupt, or by a thread that ended) is taken over, not
obeyed.
"""

from __future__ import annotations

import functools
import sys
import threading
import time
from collections.abc import Callable
from types import FrameType
from typing import Concatenate, ParamSpec, Protocol, TypeVar

from torchlean._interrupts import store_together

__all__ = ["Exclusive", "one_at_a_time"]

P = ParamSpec("P")
R = TypeVar("R")


class _Holder:
    __slots__ = ("frame", "ident", "name", "succession", "what")

    def __init__(self, what: str, frame: FrameType) -> None:
        self.what = what
        self.frame: FrameType | None = frame
        self.ident = threading.get_ident()
        self.name = threading.current_thread().name
        self.succession: dict[str, _Holder] = {}  # who took it over, once it was left behind

    def running(self) -> bool:
        """Whether its call is still on its thread's stack."""
        frame = self.frame
        if frame is None:  # released
            return False
        here = self.ident == threading.get_ident()
        top = sys._getframe() if here else sys._current_frames().get(self.ident)
        while top is not None:
            if top is frame:
                return True
            top = top.f_back
        return False


class _Released(_Holder):
    """The successor a released hold names: no thread can take it over after its release."""

    def __init__(self) -> None:  # no call, no thread
        self.what, self.frame, self.ident, self.name, self.succession = "released", None, 0, "", {}


_RELEASED = _Released()


class Exclusive:
    """Which of a trainer's exclusive methods runs now, and where; a copy or an unpickled one is
    free (it is the trainer's running state, not its data).

    No lock: the hold is taken with ``dict.setdefault``, one step under the GIL, so nothing can be
    left locked; a hold left behind is taken over by the one thread that wins its own
    ``setdefault`` (review238 F2: removing whatever hold was there could remove a live one)."""

    __slots__ = ("_slot",)

    def __init__(self) -> None:
        self._slot: dict[str, _Holder] = {}

    def __reduce__(self) -> tuple[type[Exclusive], tuple[()]]:
        """A fresh, free one (``copy``, ``deepcopy`` and ``pickle``)."""
        return Exclusive, ()

    def acquire(self, what: str, frame: FrameType) -> tuple[_Holder | None, str | None]:
        """Take it for ``what``, whose call runs ``frame``: ``(holder, None)``; or ``(None, why
        what cannot run)`` while another exclusive call runs."""
        holder = _Holder(what, frame)
        current = self._slot.setdefault("held", holder)
        for _ in range(_ATTEMPTS):
            if current is holder:
                return holder, None
            if current.running():
                break
            # left behind by an interrupt: one thread wins its succession
            successor = current.succession.setdefault("next", holder)
            if successor is holder:  # never released (a release closes it first): the slot is current's
                self._slot["held"] = holder
                return holder, None
            if successor is _RELEASED:  # released as this thread looked: let its release end
                time.sleep(0)
                current = self._slot.setdefault("held", holder)
            else:  # taken over by another call: running, or itself left behind before it stored
                current = successor  # its hold (review240 F1): follow it
        holder.frame = None
        return None, _busy(what, holder, current)

    def release(self, holder: _Holder) -> None:
        """Free it, if ``holder`` still holds it, closing its succession first (so a thread that
        judged it left behind cannot take over the hold that follows it: review238 F2), and drop
        ``holder``'s frame (review238 F1: the frame kept the hold, and so the call's arguments,
        alive in a reference cycle). Run to its end even under Ctrl-C (review240 F1: an interrupt
        between closing and freeing left a closed hold that refused every later call)."""

        def free() -> None:
            holder.succession.setdefault("next", _RELEASED)
            holder.frame = None
            if self._slot.get("held") is holder:
                self._slot.pop("held", None)

        store_together(free)


_ATTEMPTS = 100
"""How many holds one call looks at before it calls itself refused (each a hold that was
released or left behind as it looked, or one its chain of takeovers passes: in practice one or
two)."""


def _busy(what: str, holder: _Holder, current: _Holder) -> str:
    """Why ``what`` (``holder``) cannot run while ``current`` holds it."""
    if current is holder:  # every hold it looked at changed under it
        return f"{what} was called while other calls of this trainer's fit or step kept starting"
    if current.ident == holder.ident:
        return (
            f"{what} was called while this trainer's {current.what} runs, from within it (its "
            f"on_batch or lr_schedule); a trainer runs one fit or step at a time: call {what} after "
            f"{current.what} returns (evaluate and predict may be called from on_batch)"
        )
    return (
        f"{what} was called while this trainer's {current.what} runs in thread {current.name!r}; a "
        "trainer runs one fit or step at a time (two at once would train the same epochs and mix "
        f"their updates): call {what} after it returns, or train another Trainer"
    )


class _HasExclusive(Protocol):
    _exclusive: Exclusive


S = TypeVar("S", bound=_HasExclusive)


def one_at_a_time(
    what: str, refusal: Callable[[str], Exception]
) -> Callable[[Callable[Concatenate[S, P], R]], Callable[Concatenate[S, P], R]]:
    """A method named ``what`` that runs only while no other exclusive method of its object runs
    (in another thread, or further up this one's stack); else it raises ``refusal(reason)``
    before anything else, naming the one that runs and where."""

    def decorate(method: Callable[Concatenate[S, P], R]) -> Callable[Concatenate[S, P], R]:
        @functools.wraps(method)
        def run(self: S, /, *args: P.args, **kwargs: P.kwargs) -> R:
            holder, busy = self._exclusive.acquire(what, sys._getframe())
            if holder is None:
                assert busy is not None
                raise refusal(busy)
            try:
                return method(self, *args, **kwargs)
            finally:
                self._exclusive.release(holder)

        return run

    return decorate
