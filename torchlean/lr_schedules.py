"""Learning-rate schedules as functions of the step (or epoch) index, for ``Trainer.fit(...,
lr_schedule=f, schedule_by="step")`` and for loops of one's own (``optimizer.set_lr(f(t))``).

A schedule is a plain ``Callable[[int], float]``; this module builds the ones transformer training
uses. They are re-exported by :mod:`torchlean.optim` (``optim.warmup_cosine``).
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable
from dataclasses import dataclass

from torchlean._checks import is_int, shown
from torchlean.backend.errors import TorchLeanError
from torchlean.tensor import IntLike, RealLike

__all__ = ["ScheduleError", "warmup_cosine"]


class ScheduleError(TorchLeanError, ValueError):
    """A schedule's setting is out of its domain (the message names it and the accepted range)."""


def _rate(name: str, value: object) -> float:
    """``value`` as a finite float >= 0 (bools refused)."""
    if isinstance(value, bool) or not isinstance(value, numbers.Real):
        raise ScheduleError(f"warmup_cosine: {name} must be a real number, got {value!r}")
    try:
        number = float(value)
    except OverflowError:
        number = math.inf
    if not (math.isfinite(number) and number >= 0.0):
        # shown: a 401-digit lr by its size (review160 F10)
        raise ScheduleError(f"warmup_cosine: {name} must be finite and >= 0, got {shown(value)}")
    return number + 0.0


def warmup_cosine(
    lr: RealLike, warmup_steps: IntLike, total_steps: IntLike, *, min_lr: RealLike = 0.0
) -> Callable[[int], float]:
    """The linear-warmup cosine schedule of transformer training: the rate of step ``t`` (from 0)
    is ``lr * t / warmup_steps`` while ``t < warmup_steps``, then
    ``min_lr + (lr - min_lr) * (1 + cos(pi * p)) / 2`` with ``p = (t - warmup_steps) /
    (total_steps - warmup_steps)``, and ``min_lr`` from ``total_steps`` on.

    This is Hugging Face's ``get_cosine_schedule_with_warmup`` (``num_cycles=0.5``) with a floor
    ``min_lr``, as nanoGPT's ``get_lr`` has; unlike Hugging Face's, the rate stays at ``min_lr``
    after ``total_steps`` instead of rising again. As in Hugging Face's, step 0 runs at rate 0
    (with a warmup: the first update moves nothing, though Adam's moments take it in) and
    ``min_lr`` is reached at step ``total_steps``, one past a run of ``total_steps`` steps, whose
    last step runs just above it. Use it with ``Trainer.fit(...,
    lr_schedule=optim.warmup_cosine(3e-4, 100, steps), schedule_by="step")`` (``steps`` the
    number of optimizer steps of the run, ``epochs * ceil(n / batch_size)``), or call it in a loop
    of your own. Rates are Python floats. The function pickles and copies (to a worker process).

    Raises:
        ScheduleError: ``lr`` or ``min_lr`` not a finite real number >= 0, ``min_lr > lr``,
            ``warmup_steps`` not an int >= 0, ``total_steps`` not an int greater than
            ``warmup_steps`` (bools refused); the returned function, a step that is not an int
            >= 0.
    """
    peak, floor = _rate("lr", lr), _rate("min_lr", min_lr)
    if floor > peak:
        raise ScheduleError(f"warmup_cosine: min_lr must be at most lr ({lr!r}), got {min_lr!r}")
    if not is_int(warmup_steps) or int(warmup_steps) < 0:
        raise ScheduleError(f"warmup_cosine: warmup_steps must be an int >= 0, got {warmup_steps!r}")
    warmup = int(warmup_steps)
    if not is_int(total_steps) or int(total_steps) <= warmup:
        raise ScheduleError(
            f"warmup_cosine: total_steps must be an int greater than warmup_steps ({warmup}), got "
            f"{total_steps!r}"
        )
    return _WarmupCosine(peak, floor, warmup, int(total_steps) - warmup)


@dataclass(frozen=True, slots=True)
class _WarmupCosine:
    """The function :func:`warmup_cosine` returns: a module-level class, so that it pickles (to a
    spawned worker, a process pool) as torch's schedulers do (review142 F4)."""

    peak: float
    floor: float
    warmup: int
    decay: int

    def __repr__(self) -> str:
        """The call that made it (review145 F8)."""
        return (f"warmup_cosine(lr={self.peak!r}, warmup_steps={self.warmup}, "
                f"total_steps={self.warmup + self.decay}, min_lr={self.floor!r})")

    def __call__(self, step: int) -> float:
        if not is_int(step) or int(step) < 0:
            raise ScheduleError(f"warmup_cosine: a step is an int >= 0, got {step!r}")
        t = int(step)
        if t < self.warmup:
            return self.peak * (t / self.warmup)
        progress = min(1.0, (t - self.warmup) / self.decay)
        return self.floor + (self.peak - self.floor) * (1.0 + math.cos(math.pi * progress)) / 2.0
