"""When a command's work is done, a Ctrl-C changes nothing (review128 F3).

A command that writes files ends by leaving its context managers (the standard-input cache, the
report redirection, the stopping-signal handlers of ``train --save``) and then the interpreter
shuts down (the ``atexit`` handlers of sklearn's and torch's dependencies: about 0.25 s). A Ctrl-C
there used to be reported as ``error: interrupted`` (exit 130) after a complete, saved run, or
printed a ``KeyboardInterrupt`` traceback from an ``atexit`` handler. Now a command marks its
status as final with :func:`completed` as soon as its last output is written; :func:`torchlean.cli.main`
returns that status for a ``KeyboardInterrupt`` raised after it, and
:func:`torchlean.cli.console_main` (the console script and ``python -m torchlean``) ignores SIGINT,
and SIGTERM and SIGHUP where they have their default action, once ``main`` has returned, for the
interpreter's shutdown.
"""

from __future__ import annotations

import signal
import threading

__all__ = ["completed", "final_status", "ignore_stopping_signals", "reset"]

_final: list[int] = []  # the status a command marked final in this call of main, if any


def reset() -> None:
    """Forget a status an earlier in-process call of ``main`` marked final."""
    _final.clear()


def completed(status: int) -> int:
    """Mark ``status`` as the command's final exit status (its outputs are all written) and
    return it: a Ctrl-C from here on does not turn a finished run into ``error: interrupted``."""
    _final[:] = [status]
    return status


def final_status() -> int | None:
    """The status :func:`completed` marked in this call of ``main``, or None (the work was not done)."""
    return _final[0] if _final else None


_TERMINATING = tuple(getattr(signal, name) for name in ("SIGTERM", "SIGHUP") if hasattr(signal, name))


def ignore_stopping_signals() -> None:
    """Ignore SIGINT from now on, and SIGTERM and SIGHUP where they have their default action
    (a handler a program installed is left alone), where Python lets us (the main thread): for
    the interpreter's shutdown after :func:`torchlean.cli.console_main`'s ``main`` returned, so
    that a signal in those last tenths of a second neither prints a traceback nor turns a
    complete run's exit status into the signal's (143 after ``saved:``; review139 F1)."""
    if threading.current_thread() is not threading.main_thread():
        return
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    for number in _TERMINATING:
        if signal.getsignal(number) is signal.SIG_DFL:
            signal.signal(number, signal.SIG_IGN)
