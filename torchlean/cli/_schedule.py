"""``torchlean train --lr-schedule``: the learning-rate schedules the command offers: epoch-wise
ones as torch's schedulers stepped once per epoch compute them (their closed forms), and the
per-step linear-warmup cosine schedule of transformer training (:func:`torchlean.optim.warmup_cosine`)."""

from __future__ import annotations

import argparse
import math
from collections.abc import Callable
from dataclasses import dataclass

from torchlean import optim
from torchlean._checks import DECIMAL_INTEGER, DECIMAL_NUMBER
from torchlean.tensor import _preview

__all__ = ["ACCEPTED", "LRSchedule", "lr_schedule"]

ACCEPTED = (
    "constant, cosine, step:N:G or warmup_cosine:W (N a positive integer, G a finite number >= 0, W "
    "warmup steps, an integer >= 0)"
)
"""The accepted spellings, as the refusals name them."""


@dataclass(frozen=True, slots=True)
class LRSchedule:
    """A learning-rate schedule: epoch-wise ``constant``, ``cosine``, or ``step`` with its
    ``step_size`` (epochs per decay, >= 1) and ``gamma`` (the decay factor, finite, >= 0); or
    per-step ``warmup_cosine`` with its ``warmup`` steps (>= 0)."""

    kind: str = "constant"
    step_size: int = 1
    gamma: float = 1.0
    warmup: int = 0

    @property
    def spec(self) -> str:
        """The schedule as ``--lr-schedule`` spells it, which parses back to it: ``constant``,
        ``cosine``, ``step:10:0.5`` (G as Python writes the float), ``warmup_cosine:100``."""
        if self.kind == "step":
            return f"step:{self.step_size}:{self.gamma!r}"
        return f"warmup_cosine:{self.warmup}" if self.kind == "warmup_cosine" else self.kind

    @property
    def by_step(self) -> bool:
        """Whether the schedule gives each optimizer step its rate (``Trainer.fit``'s
        ``schedule_by="step"``) rather than each epoch."""
        return self.kind == "warmup_cosine"

    def step_function(self, lr: float, total_steps: int) -> Callable[[int], float]:
        """``warmup_cosine``'s rate of step ``t`` of a run of ``total_steps`` optimizer steps at
        peak rate ``lr``: :func:`torchlean.optim.warmup_cosine` toward 0, which it reaches one
        step past the run (Hugging Face's schedule).

        Raises:
            ScheduleError: ``total_steps`` not greater than ``warmup`` (the caller words it).
        """
        return optim.warmup_cosine(lr, self.warmup, total_steps)

    def rate(self, lr: float, epochs: int, epoch: int) -> float:
        """The learning rate of ``epoch`` (from 0) of a run of ``epochs`` epochs with base rate
        ``lr``: ``lr`` (constant); ``lr * (1 + cos(pi * epoch / epochs)) / 2`` (torch's
        ``CosineAnnealingLR(T_max=epochs, eta_min=0)``); ``lr * gamma ** (epoch // step_size)``
        (torch's ``StepLR(step_size, gamma)``), ``inf`` where that power overflows. These are
        torch's closed forms; its schedulers' ``step()`` computes the rate from the previous one,
        which can differ in the last bits (``lr == 0`` stays 0, also where the power overflows).
        ``warmup_cosine`` has no epoch rate (:meth:`step_function`): ``ValueError``."""
        if self.by_step:
            raise ValueError(f"{self.spec} gives each step its rate, not each epoch (step_function)")
        if self.kind == "cosine":
            return lr * (1.0 + math.cos(math.pi * epoch / epochs)) / 2.0
        if self.kind == "step":
            try:
                return lr * self.gamma ** (epoch // self.step_size)
            except OverflowError:  # a float power beyond the float range (gamma > 1)
                return 0.0 if lr == 0.0 else math.inf  # torch's repeated products keep a zero rate
        return lr

    def function(self, lr: float, epochs: int) -> Callable[[int], float] | None:
        """``Trainer.fit``'s ``lr_schedule`` for a run of ``epochs`` epochs at base rate ``lr``
        (epoch ``e`` gets :meth:`rate`), or ``None`` for ``constant`` (fit then keeps ``lr``) and
        for the per-step ``warmup_cosine`` (:meth:`step_function`)."""
        if self.kind in ("constant", "warmup_cosine"):
            return None
        return lambda epoch: self.rate(lr, epochs, epoch)


def _too_long(digits: str) -> bool:
    """Whether Python's ``int`` refuses ``digits`` (more than ``sys.get_int_max_str_digits()``)."""
    try:
        int(digits)
    except ValueError:
        return True
    return False


def lr_schedule(text: str) -> LRSchedule:
    """An argparse ``type`` reading ``constant``, ``cosine``, ``step:N:G`` or ``warmup_cosine:W``
    (W spelled as N): N spelled as
    :data:`~torchlean._checks.DECIMAL_INTEGER`, G as :data:`~torchlean._checks.DECIMAL_NUMBER`
    (blanks around each allowed).

    Raises:
        argparse.ArgumentTypeError: ``expected constant, cosine or step:N:G (...), got 'step:3'``;
            ``expected step:N:G with N a positive integer (epochs per decay), got 'step:0:0.5'``;
            ``expected step:N:G with G a finite number >= 0 (the decay factor), got 'step:2:nan'``;
            ``cosine:5`` (cosine anneals over ``--epochs`` and takes no parameters).
    """
    parts = text.strip().split(":")
    if parts in (["constant"], ["cosine"]):
        return LRSchedule(parts[0])
    if parts[0] == "warmup_cosine" and len(parts) == 2:
        warmup = parts[1].strip()
        if DECIMAL_INTEGER.fullmatch(warmup) is None or _too_long(warmup) or int(warmup) < 0:
            raise argparse.ArgumentTypeError(
                f"expected warmup_cosine:W with W an integer >= 0 (warmup steps), got {_preview(text, 80)}"
            )
        return LRSchedule("warmup_cosine", warmup=int(warmup))
    if parts[0] == "cosine":
        raise argparse.ArgumentTypeError(
            f"expected {ACCEPTED}, got {_preview(text, 80)} (cosine anneals over --epochs and takes no "
            "parameters)"
        )
    if parts[0] != "step" or len(parts) != 3:
        raise argparse.ArgumentTypeError(f"expected {ACCEPTED}, got {_preview(text, 80)}")
    step, gamma = parts[1].strip(), parts[2].strip()
    if DECIMAL_INTEGER.fullmatch(step) is None or _too_long(step) or int(step) < 1:
        raise argparse.ArgumentTypeError(
            f"expected step:N:G with N a positive integer (epochs per decay), got {_preview(text, 80)}"
        )
    if DECIMAL_NUMBER.fullmatch(gamma) is None or not (math.isfinite(float(gamma)) and float(gamma) >= 0.0):
        raise argparse.ArgumentTypeError(
            f"expected step:N:G with G a finite number >= 0 (the decay factor), got {_preview(text, 80)}"
        )
    return LRSchedule("step", int(step), float(gamma) + 0.0)  # + 0.0: -0 is 0
