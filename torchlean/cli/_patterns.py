"""A time limit on matching ``--freeze`` and ``--no-decay`` patterns against a model's parameter
names (review67 F5): a regular expression with nested repetition (``(a*)*Z``) backtracks
exponentially in Python's ``re``, and a pattern stored in a checkpoint someone else wrote runs on
``--resume`` as if typed. The names are matched once under a timer before the run uses them, so
such a pattern is a one-line error instead of a hang. ``re`` checks for signals while it
backtracks, so a ``SIGALRM`` handler that raises stops it (as Ctrl-C does)."""

from __future__ import annotations

import contextlib
import re
import signal
import threading
import time
from collections.abc import Iterator, Sequence
from types import FrameType

from torchlean import optim
from torchlean.backend.errors import TorchLeanError

__all__ = ["PATTERN_SECONDS", "check_matches_quickly"]

PATTERN_SECONDS = 5.0
"""How long matching one pattern against all of a model's parameter names may take."""


class _TooSlow(Exception):
    """Raised by the timer's ``SIGALRM`` handler inside ``re``'s matching."""


@contextlib.contextmanager
def _time_limit(seconds: float) -> Iterator[None]:
    """Raise :class:`_TooSlow` in the block after ``seconds`` of wall time (``signal.setitimer``;
    no limit outside the main thread or where the platform has no interval timer). A timer the
    host program had set (``signal.alarm``, ``setitimer``) is set again after the block, less the
    time the block took (at once when that ran out in it), with its handler (review76 F6: it was
    cancelled)."""
    if threading.current_thread() is not threading.main_thread() or not hasattr(signal, "setitimer"):
        yield
        return

    def expire(_signum: int, _frame: FrameType | None) -> None:
        raise _TooSlow

    previous = signal.signal(signal.SIGALRM, expire)
    started = time.monotonic()
    host_delay, host_interval = signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
        if host_delay > 0.0:
            left = host_delay - (time.monotonic() - started)
            signal.setitimer(signal.ITIMER_REAL, max(left, 1e-6), host_interval)


def check_matches_quickly(group: optim.ParamGroup | None, option: str, names: Sequence[str],
                          source: str = "", seconds: float | None = None) -> None:
    """Match ``group``'s pattern (``--freeze``'s or ``--no-decay``'s, ``option``) against every
    parameter name in ``names`` within ``seconds`` (default :data:`PATTERN_SECONDS`); ``source``
    says where the pattern came from when the user did not type it (``checkpoint m.npz's setting ``).

    Raises:
        TorchLeanError: ``--freeze '(?:(?:.*)*)*Z': matching it against the 6 parameter names of
            the model took more than 5 s ...``.
    """
    if group is None or not isinstance(group.match, str | re.Pattern):
        return
    pattern = re.compile(group.match) if isinstance(group.match, str) else group.match
    seconds = PATTERN_SECONDS if seconds is None else seconds
    try:
        with _time_limit(seconds):
            for name in names:
                pattern.search(name)
    except _TooSlow:
        raise TorchLeanError(
            f"{source}{option} {pattern.pattern!r}: matching it against the {len(names)} parameter names of "
            f"the model took more than {seconds:g} s (nested repetition, as in '(a*)*', backtracks "
            "exponentially in Python's re): "
            f"{'train a new run with a simpler pattern' if source else 'give a simpler pattern'}"
        ) from None
