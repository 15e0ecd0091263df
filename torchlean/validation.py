"""Validation during training: early stopping's rule, the per-epoch record of a ``fit``, and the
validation loss of model outputs.

:class:`EarlyStopping` is the setting (Keras' ``EarlyStopping(monitor="val_loss", patience=P,
min_delta=0, restore_best_weights=True)``); :class:`ValLossMonitor` follows the monitored
quantity epoch by epoch and applies it (``Trainer.fit`` uses one per call, ``torchlean train``
one per run, as it calls ``fit`` once per epoch); :class:`History` is what a ``fit`` trained and
measured (``Trainer.history``, Keras' ``History``). :func:`cross_entropy_terms` and
:func:`squared_errors` are the validation loss's per-prediction terms, in float64, from the
model's outputs.

The monitored quantity is one of :data:`MONITORS`: ``val_loss`` (the default), ``val_accuracy``
(cross-entropy fits only) or ``val_mse`` (MSE fits only); as Keras' ``mode="auto"``, its name
gives the direction: accuracy is better higher (``"max"``), a loss or an MSE lower (``"min"``).

The rule is Keras 3's ``EarlyStopping`` (``baseline=None``, ``start_from_epoch=0``): an epoch
improves when its value ``v`` beats the reference ``best`` by more than ``min_delta`` (>= 0),
``v + min_delta < best`` in min mode, ``v - min_delta > best`` in max mode (Keras' own
expressions, mathematically ``v < best - min_delta`` and ``v > best + min_delta``). ``best`` is
the value of the epoch that last improved (+inf in min mode, -inf in max mode before one has):
with ``min_delta > 0`` a gain of at most ``min_delta`` does not count and does not move the
reference, so small gains add up: the first epoch more than ``min_delta`` better than the last
improvement improves. A tie never improves, nor does a NaN (every comparison with NaN is false),
nor +inf in min mode. Training stops after the epoch that makes ``patience`` consecutive epochs
without improvement. With ``restore_best_weights`` the model ends with the weights (batch norm's
running statistics included) it had after the best epoch, the one that last improved, whether or
not the run stopped early (Keras 3 restores at the end of training either way); when no epoch
improved (every value NaN or +inf), the last epoch's weights stay. With the default
``monitor="val_loss"`` and ``min_delta=0`` this is, bit for bit, the rule of the versions before
``monitor`` and ``min_delta`` existed (an epoch improves when its validation loss is strictly
lower than every earlier one's).

Where it differs from Keras 3 on values that are not finite, which only ``val_loss`` and
``val_mse`` can take (``val_accuracy`` is always finite, in [0, 1], a prediction from logits that
are not finite counting as wrong, so its first epoch always improves and neither difference
applies): Keras never stops after the first epoch (``epoch > 0``), so with ``patience=1`` a NaN
or +inf first value stops a run here and not there; and when no epoch improved, Keras restores
the first epoch's weights, while here the last epoch's stay. Two more differences: Keras takes
``abs(min_delta)``, where a negative ``min_delta`` is refused here; and Keras compares through its
backend's ``ops.less``/``ops.greater``, which (on the torch backend, for one) read a Python float
as its ``floatx``, float32 by default, so values equal in float32 tie there, where they are
compared in float64 here.
Lightning (``check_finite=True``, its default) stops at the first NaN loss.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import checked_int, shown
from torchlean.backend.errors import TorchLeanError
from torchlean.nn.layers import is_bool

__all__ = [
    "MONITORS",
    "EarlyStopping",
    "EarlyStoppingError",
    "History",
    "ValLossMonitor",
    "cross_entropy_terms",
    "squared_errors",
]

Array = npt.NDArray[Any]
Weights = Mapping[str, Array]

MONITORS: Mapping[str, str] = {"val_loss": "min", "val_accuracy": "max", "val_mse": "min"}
"""The quantities early stopping can monitor, each with its mode (Keras' ``mode="auto"``:
``"max"``, higher is better, for accuracy; ``"min"`` for a loss or an MSE). ``val_accuracy`` is
produced by cross-entropy fits only, ``val_mse`` by MSE fits only."""


class EarlyStoppingError(TorchLeanError, ValueError):
    """A bad :class:`EarlyStopping` setting (the message names the value and what is accepted)."""


def _checked_min_delta(value: object) -> float:
    """``min_delta`` as a float: a real number (bools refused), finite and >= 0.

    Raises:
        EarlyStoppingError: ``min_delta must be a finite number >= 0 (...), got -0.1``.
    """
    if not isinstance(value, bool | np.bool_) and isinstance(value, numbers.Real):
        try:
            delta = float(value)
        except OverflowError:  # an int beyond the float range
            delta = math.inf
        if math.isfinite(delta) and delta >= 0.0:
            return delta + 0.0  # -0.0 as 0.0
    raise EarlyStoppingError(
        "min_delta must be a finite number >= 0 (the change of the monitored quantity that an epoch "
        f"must exceed to count as an improvement), got {shown(value)}"
    )


def _checked_monitor(value: object) -> str:
    """``monitor`` as one of :data:`MONITORS`.

    Raises:
        EarlyStoppingError: ``monitor must be one of 'val_loss', 'val_accuracy', 'val_mse', got 'loss'``.
    """
    if isinstance(value, str) and value in MONITORS:
        return value
    accepted = ", ".join(map(repr, MONITORS))
    raise EarlyStoppingError(f"monitor must be one of {accepted}, got {value!r}")


@dataclass(frozen=True, slots=True)
class EarlyStopping:
    """Stop a ``fit`` when the monitored validation quantity has not improved for ``patience``
    epochs (Keras 3's ``EarlyStopping``; the rule is the module docstring's).

    ``patience`` is an int >= 1 (bools refused); ``restore_best_weights`` (a ``bool`` or
    ``numpy.bool_``, default ``True``; Keras' default is ``False``) makes the model end with the
    best epoch's weights. ``monitor`` is one of :data:`MONITORS` (default ``"val_loss"``;
    ``"val_accuracy"`` for a cross-entropy fit, ``"val_mse"`` for an MSE fit, where it equals
    ``val_loss``; ``Trainer.fit`` refuses one its objective does not produce); its name gives
    :attr:`mode`. ``min_delta`` (a real number, finite and >= 0, default 0; stored as a float) is
    the change an epoch must exceed to improve, in the monitored quantity's units.

    Raises:
        EarlyStoppingError: ``patience must be an int >= 1, got 0``; a ``restore_best_weights``
            that is not a bool; ``monitor must be one of 'val_loss', 'val_accuracy', 'val_mse',
            got 'loss'``; ``min_delta must be a finite number >= 0 (...), got -0.1`` (NaN, inf,
            bools and non-numbers too).
    """

    patience: int
    restore_best_weights: bool = True
    monitor: str = "val_loss"
    min_delta: float = 0.0

    def __post_init__(self) -> None:
        object.__setattr__(self, "patience", checked_int(self.patience, "patience", 1, EarlyStoppingError))
        if not is_bool(self.restore_best_weights):
            raise EarlyStoppingError(
                f"restore_best_weights must be a bool, got {self.restore_best_weights!r}"
            )
        object.__setattr__(self, "restore_best_weights", bool(self.restore_best_weights))
        object.__setattr__(self, "monitor", _checked_monitor(self.monitor))
        object.__setattr__(self, "min_delta", _checked_min_delta(self.min_delta))

    @property
    def mode(self) -> str:
        """``"max"`` for ``val_accuracy`` (higher is better), else ``"min"``."""
        return MONITORS[self.monitor]


class ValLossMonitor:
    """The monitored validation quantity of one run, epoch by epoch, and early stopping's view of
    it (the name is from when it was always the validation loss, still the default).

    ``patience`` (``None``: never stop) and ``keep_best_weights`` (snapshot the weights each time
    an epoch improves) come from an :class:`EarlyStopping`, or are given for a run without one
    (``ValLossMonitor()`` only finds the best epoch); ``mode`` (``"min"``, the default, or
    ``"max"``) and ``min_delta`` (finite, >= 0, default 0) are the rule's, as
    :class:`EarlyStopping` takes them. Epochs are counted from 0 in the order :meth:`update` is
    called.

    Raises:
        EarlyStoppingError: a ``mode`` other than ``"min"`` or ``"max"``; a bad ``min_delta``
            (as :class:`EarlyStopping`).
    """

    def __init__(
        self,
        patience: int | None = None,
        *,
        keep_best_weights: bool = False,
        mode: str = "min",
        min_delta: float = 0.0,
    ) -> None:
        if mode not in ("min", "max"):
            raise EarlyStoppingError(f"mode must be 'min' or 'max', got {mode!r}")
        self._patience = patience
        self._keep = keep_best_weights
        self._mode = mode
        self._min_delta = _checked_min_delta(min_delta)
        self._values: list[float] = []
        self._best: int | None = None
        self._best_weights: dict[str, Array] | None = None

    @classmethod
    def of(cls, rule: EarlyStopping | None) -> ValLossMonitor:
        """The monitor that applies ``rule`` (``None``: one that never stops, on the validation
        loss with ``min_delta=0``)."""
        if rule is None:
            return cls()
        return cls(rule.patience, keep_best_weights=rule.restore_best_weights, mode=rule.mode,
                   min_delta=rule.min_delta)

    def improves(self, value: float) -> bool:
        """Whether an epoch with ``value`` would improve now: Keras 3's ``_is_improvement``,
        ``value + min_delta < best`` (min mode) or ``value - min_delta > best`` (max mode), in
        float64, ``best`` the value of the epoch that last improved (+inf, or -inf in max mode,
        before one has). False for NaN."""
        value = float(value)
        if self._mode == "min":
            reference = math.inf if self._best is None else self._values[self._best]
            return value + self._min_delta < reference
        reference = -math.inf if self._best is None else self._values[self._best]
        return value - self._min_delta > reference

    def update(self, value: float, weights: Callable[[], Weights] | None = None) -> None:
        """Record the next epoch's value of the monitored quantity; when it improves and best
        weights are kept, ``weights()`` is kept as the best (``trainer.model.state``, which returns
        copies: the dict is kept as given, not copied again)."""
        improved = self.improves(value)
        self._values.append(float(value))
        if improved:
            self._best = len(self._values) - 1
            if self._keep and weights is not None:
                self._best_weights = dict(weights())

    def resume(self, values: Sequence[float], best_weights: Weights | None = None) -> None:
        """Continue a run from its saved history: record ``values`` (the monitored quantity of its
        epochs so far, the first first) as :meth:`update` would have, and take ``best_weights`` as
        the weights of the best epoch they give (with ``keep_best_weights``, when one improved;
        else they are not needed and ignored). The monitor then stands where the run's own stood:
        :attr:`best`, :attr:`waited` and :attr:`should_stop` count from the run's first epoch.

        Raises:
            EarlyStoppingError: the monitor has recorded an epoch already; ``best_weights`` is
                ``None`` where the history has a best epoch and best weights are kept.
        """
        if self._values:
            raise EarlyStoppingError(
                f"resume continues a run from its history; this monitor has recorded {len(self._values)} "
                "epochs already"
            )
        replay = ValLossMonitor(self._patience, mode=self._mode, min_delta=self._min_delta)
        for value in values:
            replay.update(value)
        if self._keep and replay.best is not None:
            if best_weights is None:
                raise EarlyStoppingError(
                    f"the history's best epoch ({replay.best}) needs its weights (best_weights), got None"
                )
            self._best_weights = dict(best_weights)
        self._values, self._best = replay._values, replay.best

    @property
    def mode(self) -> str:
        """``"min"`` or ``"max"``."""
        return self._mode

    @property
    def min_delta(self) -> float:
        """The change an epoch must exceed to improve."""
        return self._min_delta

    @property
    def values(self) -> tuple[float, ...]:
        """The recorded values of the monitored quantity, epoch 0 first."""
        return tuple(self._values)

    @property
    def best(self) -> int | None:
        """The epoch that last improved, or ``None`` before one has (no epochs, or only NaN or
        +inf values in min mode). With ``min_delta=0``, the best value's first occurrence (the
        lowest, or in max mode the highest); with ``min_delta > 0``, a later epoch whose value is
        better by at most ``min_delta`` is not it."""
        return self._best

    @property
    def waited(self) -> int:
        """Epochs since the best one (since the start when none improved)."""
        return len(self._values) - 1 - (-1 if self._best is None else self._best)

    @property
    def should_stop(self) -> bool:
        """Whether ``patience`` consecutive epochs have not improved (never without a patience)."""
        return self._patience is not None and self.waited >= self._patience

    @property
    def best_weights(self) -> dict[str, Array] | None:
        """The weights taken at the best epoch (with ``keep_best_weights``), else ``None``."""
        return self._best_weights


@dataclass(frozen=True, slots=True)
class History:
    """What one ``Trainer.fit`` call trained and measured (``Trainer.history``; Keras' ``History``
    of ``model.fit``, whose ``history`` dict :meth:`as_dict` gives).

    ``epochs`` are the trainer's lifetime epoch numbers (from 0, as ``on_batch`` and
    ``lr_schedule`` get them) of the epochs this fit completed, ``loss`` their mean training
    losses (what ``fit`` returns); an epoch stopped (Ctrl-C, an ``on_batch`` that raised) right
    after its last update counts in ``Trainer.epochs_done`` but is not listed, as its mean loss
    and validation were never taken. With validation data, ``val_loss`` is each epoch's validation
    loss (the training objective, label smoothing included, in float64 over the whole validation
    set) and ``val_accuracy`` (cross-entropy) or ``val_mse`` (MSE; equal to ``val_loss``) its
    metric as :meth:`Trainer.evaluate` computes it; else those are ``None``. ``best_epoch`` is
    the lifetime number of the best epoch of the quantity early stopping monitors, by its rule:
    the epoch that last improved (with ``min_delta > 0`` not necessarily the best value: a later
    epoch better by at most ``min_delta`` does not take its place), whose weights
    ``restore_best_weights`` restores; without early stopping, and with its default
    ``monitor="val_loss", min_delta=0``, the epoch with the lowest validation loss (its first
    occurrence). It is ``None`` without validation or when no epoch improved (every value NaN or
    +inf). ``stopped_epoch`` is the epoch after which patience ran out (the fit's last epoch,
    which may be the last it was asked for, as Keras' ``stopped_epoch``), ``None`` when it never
    did; ``restored_epoch`` the epoch whose weights early stopping restored
    (``restore_best_weights``), else ``None``.
    """

    epochs: tuple[int, ...]
    loss: tuple[float, ...]
    val_loss: tuple[float, ...] | None = None
    val_accuracy: tuple[float, ...] | None = None
    val_mse: tuple[float, ...] | None = None
    best_epoch: int | None = None
    stopped_epoch: int | None = None
    restored_epoch: int | None = None

    def as_dict(self) -> dict[str, list[float]]:
        """Keras' ``History.history``: ``{"loss": [...], "val_loss": [...], "val_accuracy": [...]}``
        (``val_mse`` for MSE; only ``loss`` without validation)."""
        found = {"loss": self.loss, "val_loss": self.val_loss, "val_accuracy": self.val_accuracy,
                 "val_mse": self.val_mse}
        return {key: list(values) for key, values in found.items() if values is not None}


def cross_entropy_terms(logits: Array, targets: Array, smoothing: float = 0.0) -> Array:
    """The cross-entropy of each prediction, float64 ``(n, ...)``, for ``logits`` ``(n, ...,
    classes)`` and ``targets``: int class labels ``(n, ...)`` or probability (one-hot) rows
    ``(n, ..., classes)``, with the target first mixed with the uniform distribution,
    ``(1 - smoothing) * target + smoothing / classes``, as torch's ``cross_entropy(...,
    reduction="none", label_smoothing=smoothing)``. The log-softmax is taken in float64; a row of
    logits that is not finite gives NaN (or +inf)."""
    z = np.asarray(logits, dtype=np.float64)
    classes = z.shape[-1]
    with np.errstate(invalid="ignore", over="ignore"):
        shifted = z - z.max(axis=-1, keepdims=True)
        log_p = shifted - np.log(np.exp(shifted).sum(axis=-1, keepdims=True))
        if targets.dtype.kind in "iu":
            picked = np.take_along_axis(log_p, targets.astype(np.intp)[..., None], axis=-1)[..., 0]
            terms = -(1.0 - smoothing) * picked
            if smoothing != 0.0:
                terms = terms - (smoothing / classes) * log_p.sum(axis=-1)
            return np.asarray(terms, dtype=np.float64)
        mixed = np.asarray(targets, dtype=np.float64) * (1.0 - smoothing) + smoothing / classes
        return np.asarray(-(mixed * log_p).sum(axis=-1), dtype=np.float64)


def squared_errors(prediction: Array, target: Array) -> Array:
    """``(prediction - target) ** 2`` in float64, element by element (an MSE's terms)."""
    with np.errstate(over="ignore", invalid="ignore"):
        return np.asarray(
            (np.asarray(prediction, dtype=np.float64) - np.asarray(target, dtype=np.float64)) ** 2
        )
