"""A note when an epoch will be long and no progress bar shows it (review68 F5): off a terminal
(a log file, a batch job) tqdm draws nothing, and a large model under ``checked_cpu`` can run for
minutes before its first epoch line. The second step's time (the first includes capsule
selection and first-use costs) times the epoch's steps estimates the epoch; past
:data:`SLOW_EPOCH_SECONDS`, one ``note:`` says so, once per run."""

from __future__ import annotations

import time
from dataclasses import dataclass, field

__all__ = ["SLOW_EPOCH_SECONDS", "EpochPace"]

SLOW_EPOCH_SECONDS = 60.0
"""An epoch estimated to take longer than this gets the note."""


def _duration(seconds: float) -> str:
    """``seconds`` as the note says it: ``75 s``, ``12 min``, ``3.2 h``."""
    if seconds < 120:
        return f"{seconds:.0f} s"
    if seconds < 7200:
        return f"{seconds / 60:.0f} min"
    return f"{seconds / 3600:.1f} h"


@dataclass(slots=True)
class EpochPace:
    """Watches the steps of a run's first epoch (``steps`` of them) for :meth:`step`'s note.

    Attributes:
        steps: the steps of an epoch.
        hint: what the note suggests after its estimate (``""`` for nothing).
    """

    steps: int
    hint: str = ""
    _last: float | None = field(default=None, init=False)
    _done: int = field(default=0, init=False)
    _spoken: bool = field(default=False, init=False)

    def step(self) -> str | None:
        """Record that a step ended now; the note (``note: ...``) when this is the second step of
        the watch and the epoch's estimate exceeds :data:`SLOW_EPOCH_SECONDS`, else None."""
        now = time.perf_counter()
        last, self._last = self._last, now
        self._done += 1
        if self._spoken or self._done != 2 or last is None:
            return None
        self._spoken = True
        seconds = now - last
        estimate = seconds * self.steps
        if estimate <= SLOW_EPOCH_SECONDS:
            return None
        return (f"note: a training step takes about {seconds:.2g} s, so an epoch of {self.steps} steps "
                f"takes about {_duration(estimate)} (no progress bar: stderr is not a terminal){self.hint}")
