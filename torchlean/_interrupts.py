"""Storing the few assignments of an optimizer update together, even under Ctrl-C (review61 F2).

An optimizer update is computed first (new weights, new moments, new step counts) and then
stored. :func:`store_together` runs the storing under :class:`DeferredSigint`: a SIGINT that
arrives meanwhile is recorded, and the handler that was installed before (Python's, which raises
``KeyboardInterrupt``, or the program's own) runs once the storing ends, so the weights and the
optimizer state are both stored or neither is. Python runs signal handlers in the main thread only;
in another thread (or with a SIGINT handler that is not a Python callable: ``SIG_DFL``,
``SIG_IGN``) nothing is deferred. A ``KeyboardInterrupt`` raised inside the storing by other means
(a ``SIGALRM`` handler that raises it, say) is caught there, the storing (plain assignments, so
idempotent) is completed, and the interrupt raised again: only a second one during that completion
could still split it.
"""

from __future__ import annotations

import contextlib
import importlib
import signal
import threading
from collections.abc import Callable
from types import FrameType, TracebackType
from typing import Any

__all__ = ["DeferredSigint", "store_together"]

# The C functions behind ``signal.signal`` and ``signal.getsignal``: those wrappers turn each
# handler returned into a ``signal.Handlers`` member when they can, through an ``enum`` lookup that
# fails (a ``ValueError`` raised and caught) for every Python callable. Around each optimizer update
# that cost some 30 µs a step in a training loop, where the enum code is cold (review105 F1).
# CPython has had ``_signal`` since 3.5; elsewhere the public functions serve.
_set_handler: Callable[[int, Any], Any] = signal.signal
_get_handler: Callable[[int], Any] = signal.getsignal
with contextlib.suppress(ImportError):
    _c_signal = importlib.import_module("_signal")
    _set_handler, _get_handler = _c_signal.signal, _c_signal.getsignal
_SIGINT = int(signal.SIGINT)


class DeferredSigint:
    """``with DeferredSigint():`` runs the body with SIGINT held back (main thread only); each
    SIGINT that arrived meanwhile is handed to the previous handler when the block ends, in order
    (Python's default handler raises ``KeyboardInterrupt`` at the first, after the body; a
    program's own handler, such as ``torchlean train``'s, sees every press: its "Ctrl-C again
    stops at once" holds for two presses inside one block, review232 F2)."""

    __slots__ = ("_active", "_pending", "_previous")

    def __init__(self) -> None:
        self._active = False
        self._pending: list[tuple[int, FrameType | None]] = []
        self._previous: Any = None

    def _hold(self, signum: int, frame: FrameType | None) -> None:
        if self._active:
            self._pending.append((signum, frame))
        else:  # a signal handled after the block ended (the handler was being restored)
            self._previous(signum, frame)

    def __enter__(self) -> DeferredSigint:
        if threading.get_ident() != threading.main_thread().ident:
            return self
        previous = _get_handler(_SIGINT)
        if not callable(previous):  # SIG_DFL, SIG_IGN or a handler not set from Python: left alone
            return self
        self._previous = previous
        self._active = True
        try:
            _set_handler(_SIGINT, self._hold)
        except ValueError:  # not the main interpreter: no Python signal handlers here
            self._active = False
            self._previous = None
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        previous = self._previous
        if previous is None:
            return
        _set_handler(_SIGINT, previous)  # first: a SIGINT from now on goes to it directly
        self._active = False
        pending, self._pending, self._previous = self._pending, [], None
        for signum, frame in pending:  # the presses that arrived inside the block, in order
            previous(signum, frame)  # Python's handler raises at the first: KeyboardInterrupt now


def store_together(store: Callable[[], None]) -> None:
    """Run ``store`` (assignments only: running it twice stores the same) with SIGINT held back
    (:class:`DeferredSigint`); a ``KeyboardInterrupt`` raised inside it anyway is caught, ``store``
    run again to its end, and the interrupt re-raised."""
    with DeferredSigint():
        try:
            store()
        except KeyboardInterrupt:
            store()
            raise
