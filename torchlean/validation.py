"""Validation during training: early stopping's rule, the per-epoch record of a ``fit``, and the
validation loss of model outputs.

:class:`EarlyStopping` is the setting (Keras' ``EarlyStopping(monitor="val_loss", patience=P,
restore_best_weights=True)``); :class:`ValLossMonitor` follows the validation losses epoch by
epoch and applies it (``Trainer.fit`` uses one per call, ``torchlean train`` one per run, as it
calls ``fit`` once per epoch); :class:`History` is what a ``fit`` trained and measured
(``Trainer.history``, Keras' ``History``). :func:`cross_entropy_terms` and :func:`squared_errors`
are the validation loss's per-prediction terms, in float64, from the model's outputs.

The rule, as Keras' (``min_delta=0``, ``mode="min"``) and Lightning's ``EarlyStopping``: an epoch
improves when its validation loss is strictly lower than every earlier one of the run (the first
epoch improves on +inf; a NaN or +inf loss never improves, so a diverged epoch counts as one
without improvement); training stops after the epoch that makes ``patience`` consecutive epochs
without improvement. With ``restore_best_weights`` the model ends with the weights (batch norm's
running statistics included) it had after the best epoch, the one that last improved, whether or
not the run stopped early (Keras 3 restores at the end of training either way); when no epoch
improved (every loss NaN), the last epoch's weights stay.

Where it differs from Keras 3, only on losses that are not finite: Keras never stops after the
first epoch (``epoch > 0``), so with ``patience=1`` a NaN or +inf first loss stops a run here and
not there; and when no epoch improved, Keras restores the first epoch's weights, while here the
last epoch's stay. Lightning (``check_finite=True``, its default) stops at the first NaN loss.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import checked_int
from torchlean.backend.errors import TorchLeanError
from torchlean.nn.layers import is_bool

__all__ = [
    "EarlyStopping",
    "EarlyStoppingError",
    "History",
    "ValLossMonitor",
    "cross_entropy_terms",
    "squared_errors",
]

Array = npt.NDArray[Any]
Weights = Mapping[str, Array]


class EarlyStoppingError(TorchLeanError, ValueError):
    """A bad :class:`EarlyStopping` setting (the message names the value and what is accepted)."""


@dataclass(frozen=True, slots=True)
class EarlyStopping:
    """Stop a ``fit`` when its validation loss has not improved for ``patience`` epochs.

    ``patience`` is an int >= 1 (bools refused); ``restore_best_weights`` (a ``bool`` or
    ``numpy.bool_``, default ``True``; Keras' default is ``False``) makes the model end with the
    best epoch's weights. The rule is the module docstring's.

    Raises:
        EarlyStoppingError: ``patience must be an int >= 1, got 0``; a ``restore_best_weights``
            that is not a bool.
    """

    patience: int
    restore_best_weights: bool = True

    def __post_init__(self) -> None:
        object.__setattr__(self, "patience", checked_int(self.patience, "patience", 1, EarlyStoppingError))
        if not is_bool(self.restore_best_weights):
            raise EarlyStoppingError(
                f"restore_best_weights must be a bool, got {self.restore_best_weights!r}"
            )
        object.__setattr__(self, "restore_best_weights", bool(self.restore_best_weights))


class ValLossMonitor:
    """The validation losses of one run, epoch by epoch, and early stopping's view of them.

    ``patience`` (``None``: never stop) and ``keep_best_weights`` (snapshot the weights each time
    an epoch improves) come from an :class:`EarlyStopping`, or are given for a run without one
    (``ValLossMonitor()`` only finds the best epoch). Epochs are counted from 0 in the order
    :meth:`update` is called.
    """

    def __init__(self, patience: int | None = None, *, keep_best_weights: bool = False) -> None:
        self._patience = patience
        self._keep = keep_best_weights
        self._losses: list[float] = []
        self._best: int | None = None
        self._best_weights: dict[str, Array] | None = None

    @classmethod
    def of(cls, rule: EarlyStopping | None) -> ValLossMonitor:
        """The monitor that applies ``rule`` (``None``: one that never stops)."""
        if rule is None:
            return cls()
        return cls(rule.patience, keep_best_weights=rule.restore_best_weights)

    def update(self, val_loss: float, weights: Callable[[], Weights] | None = None) -> None:
        """Record the next epoch's validation loss; when it improves and best weights are kept,
        ``weights()`` is kept as the best (``trainer.model.state``, which returns copies: the
        dict is kept as given, not copied again)."""
        improved = val_loss < (math.inf if self._best is None else self._losses[self._best])
        self._losses.append(float(val_loss))
        if improved:
            self._best = len(self._losses) - 1
            if self._keep and weights is not None:
                self._best_weights = dict(weights())

    def resume(self, losses: Sequence[float], best_weights: Weights | None = None) -> None:
        """Continue a run from its saved history: record ``losses`` (the validation losses of its
        epochs so far, the first first) as :meth:`update` would have, and take ``best_weights`` as
        the weights of the best epoch they give (with ``keep_best_weights``, when one improved;
        else they are not needed and ignored). The monitor then stands where the run's own stood:
        :attr:`best`, :attr:`waited` and :attr:`should_stop` count from the run's first epoch.

        Raises:
            EarlyStoppingError: the monitor has recorded an epoch already; ``best_weights`` is
                ``None`` where the history has a best epoch and best weights are kept.
        """
        if self._losses:
            raise EarlyStoppingError(
                f"resume continues a run from its history; this monitor has recorded {len(self._losses)} "
                "epochs already"
            )
        replay = ValLossMonitor(self._patience)
        for loss in losses:
            replay.update(loss)
        if self._keep and replay.best is not None:
            if best_weights is None:
                raise EarlyStoppingError(
                    f"the history's best epoch ({replay.best}) needs its weights (best_weights), got None"
                )
            self._best_weights = dict(best_weights)
        self._losses, self._best = replay._losses, replay.best

    @property
    def losses(self) -> tuple[float, ...]:
        """The recorded validation losses, epoch 0 first."""
        return tuple(self._losses)

    @property
    def best(self) -> int | None:
        """The epoch that last improved (the lowest loss, its first occurrence), or ``None``
        before one has (no epochs, or only NaN or +inf losses)."""
        return self._best

    @property
    def waited(self) -> int:
        """Epochs since the best one (since the start when none improved)."""
        return len(self._losses) - 1 - (-1 if self._best is None else self._best)

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
    losses (what ``fit`` returns). With validation data, ``val_loss`` is each epoch's validation
    loss (the training objective, label smoothing included, in float64 over the whole validation
    set) and ``val_accuracy`` (cross-entropy) or ``val_mse`` (MSE; equal to ``val_loss``) its
    metric as :meth:`Trainer.evaluate` computes it; else those are ``None``. ``best_epoch`` is
    the lifetime number of the epoch with the lowest validation loss (its first occurrence;
    ``None`` without validation or when no loss was below +inf); ``stopped_epoch`` the one after
    which patience ran out (the fit's last epoch, which may be the last it was asked for, as
    Keras' ``stopped_epoch``), ``None`` when it never did; ``restored_epoch`` the
    epoch whose weights early stopping restored (``restore_best_weights``), else ``None``.
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
