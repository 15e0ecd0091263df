"""``torchlean train --val-fraction F --early-stopping P``: the validation part's options, epoch
line suffix, early stopping and JSON record, kept out of ``train.py``.

The validation part is held out of the train split by :func:`torchlean.data.load`
(``val_fraction``: seeded, stratified by class for classification; the standardisation
statistics come from the rest of the train split only). After each epoch the trainer's ``fit``
evaluates it (:attr:`torchlean.trainer.Trainer.history`); the epoch line gains
``val_loss=`` (regression: ``val_loss(standardised y)=``, the training objective on the
standardised target) and ``val_accuracy=`` (regression: ``val_mse=``, in the target's units as
``test_mse=``). With ``--early-stopping P`` the run stops after the epoch that makes P
consecutive epochs without an improvement of the monitored quantity (``--monitor``: ``val_loss``,
the default, strictly lower; ``val_accuracy``, classification, higher; ``val_mse``, regression,
in the target's units, lower; by more than ``--min-delta D``, default 0: Keras 3's rule,
:mod:`torchlean.validation`) and ends with the best epoch's weights (Keras'
``EarlyStopping(monitor=..., min_delta=D, patience=P, restore_best_weights=True)``), which
``test_*`` and ``--save`` then use; a line before the test metric says where it stopped (or that
it did not), the best epoch and that its weights were restored. ``--monitor`` and
``--min-delta`` need ``--early-stopping``; without it the best epoch is ``val_loss``'s.

``--resume`` (:mod:`torchlean.cli._resume`) continues such a run: :meth:`Validation.resume` takes
the saved history, so the epochs, the best epoch and the record count from the run's first
epoch; :attr:`Validation.last_weights` are the last epoch's weights, which ``--save`` keeps
beside the restored best ones.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from torchlean import data
from torchlean.backend.errors import TorchLeanError
from torchlean.cli._args import int_at_least, number, open_fraction
from torchlean.cli._output import data_shown, loss_text, metric_text
from torchlean.trainer import Trainer
from torchlean.validation import MONITORS, ValLossMonitor

__all__ = [
    "Validation",
    "add_options",
    "check_options",
    "monitored",
    "no_prediction_warning",
    "stalled",
    "target_mse",
]

_patience = int_at_least(1, "expected an integer >= 1 (epochs without improvement), got {}")


_fraction = open_fraction()
"""``--val-fraction``: a number strictly between 0 and 1."""


def _monitor(text: str) -> str:
    """``--monitor``: one of :data:`~torchlean.validation.MONITORS`.

    Raises:
        argparse.ArgumentTypeError: ``expected one of val_loss, val_accuracy (classification),
            val_mse (regression), got 'loss'``.
    """
    if text not in MONITORS:
        raise argparse.ArgumentTypeError(
            f"expected one of val_loss, val_accuracy (classification), val_mse (regression), got {text!r}"
        )
    return text


def _min_delta(text: str) -> float:
    """``--min-delta``: a finite number >= 0.

    Raises:
        argparse.ArgumentTypeError: ``expected a finite number >= 0, got '-0.1'``.
    """
    value = number(text)
    if not (math.isfinite(value) and value >= 0.0):
        raise argparse.ArgumentTypeError(f"expected a finite number >= 0, got {text!r}")
    return value + 0.0  # -0 as 0


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--val-fraction``, ``--early-stopping``, ``--monitor`` and ``--min-delta`` to
    ``torchlean train``'s parser."""
    parser.add_argument("--val-fraction", type=_fraction, default=None, metavar="F",
                        help="hold out the fraction F (0 < F < 1) of the train split as a validation part "
                        "(seeded by --seed, stratified by class for classification, as scikit-learn's "
                        "train_test_split; the standardisation statistics come from the rest of the "
                        "train split only), evaluated after every epoch: val_loss= and val_accuracy= "
                        "(regression: val_mse=, in the target's units) on each epoch line "
                        "(default: no validation part)")
    parser.add_argument("--early-stopping", type=_patience, default=None, metavar="P",
                        help="stop when the monitored quantity (--monitor, default val_loss) has not "
                        "improved (by more than --min-delta, default 0: val_loss strictly lower) for P "
                        "consecutive epochs, P an integer >= 1, and end with the best epoch's weights "
                        "(Keras' EarlyStopping(patience=P, restore_best_weights=True)), which the test "
                        "metric and --save use; needs --val-fraction (default: train every epoch)")
    parser.add_argument("--monitor", type=_monitor, default=None, metavar="NAME",
                        help="the quantity --early-stopping monitors: val_loss (lower is better), "
                        "val_accuracy (classification; higher is better) or val_mse (regression, in the "
                        "target's units; lower is better), as Keras' EarlyStopping(monitor=NAME); needs "
                        "--early-stopping (default: val_loss)")
    parser.add_argument("--min-delta", type=_min_delta, default=None, metavar="D",
                        help="the change of the monitored quantity an epoch must exceed to count as an "
                        "improvement, a finite number >= 0 (Keras' min_delta: the reference is the value of "
                        "the last improvement, so smaller gains add up), in the quantity's units: for "
                        "val_accuracy a fraction (0.01: one percentage point), for val_mse the target's "
                        "units squared, for val_loss the loss's (regression: on the standardised target, a "
                        "fraction of the target's variance); needs --early-stopping (default: 0)")


def check_options(args: argparse.Namespace) -> None:
    """Refuse ``--early-stopping`` without ``--val-fraction``, and ``--monitor`` or
    ``--min-delta`` without ``--early-stopping``, before any work.

    Raises:
        TorchLeanError: ``--early-stopping 3 monitors the validation loss, but no validation part
            is held out: give --val-fraction F too (e.g. --val-fraction 0.2)``; ``--monitor
            val_accuracy chooses what --early-stopping monitors: give --early-stopping P too``.
    """
    for option, value in (("--monitor", args.monitor), ("--min-delta", args.min_delta)):
        if value is not None and args.early_stopping is None:
            raise TorchLeanError(
                f"{option} {value} chooses how --early-stopping monitors the validation part, but no "
                "--early-stopping is given: give --early-stopping P too (e.g. --early-stopping 3)"
            )
    if args.early_stopping is not None and args.val_fraction is None:
        watched = "the validation loss" if args.monitor in (None, "val_loss") else args.monitor
        raise TorchLeanError(
            f"--early-stopping {args.early_stopping} monitors {watched}, but no validation part "
            "is held out: give --val-fraction F too (e.g. --val-fraction 0.2)"
        )


def target_mse(outputs: np.ndarray[Any, Any], y: np.ndarray[Any, Any], mean: float, scale: float) -> float:
    """Regression: the MSE in the target's units of a model trained on ``(y - mean) / scale``,
    from its ``outputs`` ``(n, 1)`` (``trainer.predict(x)``, or :attr:`Trainer.val_outputs
    <torchlean.trainer.Trainer.val_outputs>` for the validation part: no second pass) for the
    targets ``y`` ``(n,)`` (the data's own, float64: :attr:`torchlean.data.Dataset.y_test`,
    not rounded to the model's dtype), mapped back as ``p * scale + mean`` (float64; a diverged
    model's inf or NaN is the result)."""
    standardised = outputs.astype(np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        prediction = standardised * scale + mean
        return float(np.mean((prediction - y.astype(np.float64)) ** 2))


def no_prediction_warning(
    missing: int, rows: int, what: str, weights: Mapping[str, np.ndarray[Any, Any]], dtype: str,
    named: str = "the weights",
) -> str:
    """The ``warning:`` line for ``missing`` of ``rows`` rows (``what``: ``rows``, ``test rows``)
    whose model outputs are not finite, naming the cause: ``weights`` (``named`` so) not finite (a
    diverged training), or, with finite weights and inputs, outputs that overflow ``dtype``. ``train`` says
    it under a test score, ``predict`` under its rows (review184 F1)."""
    not_finite = sum(int(np.count_nonzero(~np.isfinite(w))) for w in weights.values())
    if not_finite:
        total = sum(int(w.size) for w in weights.values())
        cause = f"{named} are not finite ({not_finite} of {total} values; the training diverged)"
    else:
        cause = f"the weights and inputs are finite, but the model's outputs overflow {dtype}"
    cell = " (an empty cell)" if what == "rows" else ""  # predict's CSV rows
    return (f"warning: {missing} of {rows} {what} have no prediction{cell}: their model outputs "
            f"are not finite because {cause}")


def monitored(name: str, losses: Sequence[float], metrics: Sequence[float]) -> Sequence[float]:
    """The values of the monitored quantity ``name`` in a run's validation history: its
    ``losses`` for ``val_loss``, else its ``metrics`` (``val_accuracy``, or regression's
    ``val_mse`` in the target's units)."""
    return losses if name == "val_loss" else metrics


def stalled(name: str, patience: int, min_delta: float) -> str:
    """Why early stopping ended a run: ``val_loss did not improve for 2 epochs``, or with a
    ``min_delta``, ``val_accuracy did not improve by more than 0.01 for 1 epoch``."""
    by = f" by more than {min_delta!r}" if min_delta else ""
    return f"{name} did not improve{by} for {patience} epoch{'s' if patience > 1 else ''}"


def _check_validation_targets(
    args: argparse.Namespace, dataset: data.Dataset, y: np.ndarray[Any, Any], target: tuple[float, float]
) -> None:
    """Refuse regression validation targets whose standardised values, ``(y - mean) / scale``
    with the train split's ``target`` statistics, or the mean of their squares (the scale of the
    validation loss), are beyond the run's dtype: the validation loss would be infinite
    (review91 F2). ``--dtype float64`` is named only where it holds them (review92 F3), and not
    for a resumed run, whose dtype and validation part are its checkpoint's (review99 M1).

    Raises:
        TorchLeanError: naming the target largest in magnitude, the statistics and the way out.
    """
    mean, scale = target
    dtype = dataset.x_train.dtype
    overflow = data.validation_target_overflow(y, mean, scale, dtype)
    if overflow is None:
        return
    way = ("pass --dtype float64, or leave" if overflow.wider
           else "rescale the target (it overflows float64 too), or leave")
    way += " out --val-fraction: the test split's metrics are measured on the targets as read"
    if getattr(args, "resume", None) is not None:  # its dtype and validation part are the run's (review99 M1)
        way = (f"the checkpoint's dtype is {dtype} and its run holds out a validation part: correct or "
               "remove the row")
    raise TorchLeanError(
        f"{data_shown(args.dataset)}: {overflow.subject('validation split', dtype)} with the train "
        f"split's mean {mean:.6g} and scale {scale:.6g}, so the validation "
        "loss would be infinite (accepted: validation targets whose (y - mean) / scale, and the mean of its "
        f"square, fit {dtype}; {way})"
    )


class Validation:
    """One run's validation part and early stopping (``--val-fraction`` given).

    Raises:
        TorchLeanError: a ``--monitor`` the task does not produce (``val_accuracy`` for
            regression, ``val_mse`` for classification), naming the accepted ones.
    """

    def __init__(
        self, args: argparse.Namespace, dataset: data.Dataset, target: tuple[float, float] | None
    ) -> None:
        """``target``: regression's ``(mean, scale)`` of the standardised target, else ``None``."""
        assert dataset.x_val is not None and dataset.y_val is not None  # loaded with val_fraction
        self.fraction: float = args.val_fraction
        self.patience: int | None = args.early_stopping
        self.x = dataset.x_val
        self.y = dataset.y_val  # regression: the targets as read (float64), what val_mse is against
        self.target = target
        if target is not None:  # before standardised_val_targets, which words it for Python
            _check_validation_targets(args, dataset, self.y, target)
        self.fit_targets = self.y if target is None else dataset.standardised_val_targets()
        self.monitored: str = "val_loss" if args.monitor is None else args.monitor
        self.min_delta: float = 0.0 if args.min_delta is None else args.min_delta
        accepted = ("val_loss", "val_accuracy") if target is None else ("val_loss", "val_mse")
        if self.monitored not in accepted:
            task = "classification" if target is None else "regression"
            raise TorchLeanError(
                f"--monitor {self.monitored}: a {task} run has no {self.monitored} (accepted for {task}: "
                f"{', '.join(accepted)})"
            )
        self.monitor = ValLossMonitor(self.patience, keep_best_weights=self.patience is not None,
                                      mode=MONITORS[self.monitored], min_delta=self.min_delta)
        self.losses: list[float] = []
        self.metrics: list[float] = []
        self.stopped: int | None = None
        self.restored: int | None = None
        self.last_weights: dict[str, np.ndarray[Any, Any]] | None = None

    def resume(
        self,
        losses: Sequence[float],
        metrics: Sequence[float],
        best_weights: Mapping[str, np.ndarray[Any, Any]],
    ) -> None:
        """Continue a saved run (``--resume``): its epochs' validation ``losses`` and ``metrics``
        (the first epoch first) become this run's first, and ``best_weights`` (the checkpoint's
        weights: the best epoch's under early stopping, which restored them) the monitor's best,
        so the best epoch, the patience count, the stop and the record are the uninterrupted
        run's."""
        self.monitor.resume(monitored(self.monitored, losses, metrics), best_weights)
        self.losses = list(losses)
        self.metrics = list(metrics)

    @property
    def data(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """``fit``'s ``validation`` argument (regression: the target standardised as training's)."""
        return self.x, self.fit_targets

    def settings(self) -> str:
        """The second header line's addition: `` val_fraction=F`` and `` early_stopping=P``, then
        `` monitor=NAME`` and `` min_delta=D`` unless they are the defaults (val_loss, 0)."""
        stopping = "" if self.patience is None else f" early_stopping={self.patience}"
        if self.monitored != "val_loss":
            stopping += f" monitor={self.monitored}"
        if self.min_delta:
            stopping += f" min_delta={self.min_delta!r}"
        return f" val_fraction={self.fraction!r}{stopping}"

    def after_epoch(self, trainer: Trainer[Any, Any], epoch: int) -> str:
        """Record the epoch ``fit`` just ran (``epoch`` from 0 in this run) and return its line's
        suffix; :attr:`stop` then says whether early stopping ends the run after it."""
        suffix = self._measure(trainer)
        self.monitor.update(monitored(self.monitored, self.losses, self.metrics)[-1], trainer.model.state)
        return suffix

    def _measure(self, trainer: Trainer[Any, Any]) -> str:
        """Record the epoch's validation loss and metric; its line's suffix."""
        history = trainer.history
        assert history is not None and history.val_loss is not None
        loss = history.val_loss[-1]
        self.losses.append(loss)
        if self.target is None:
            assert history.val_accuracy is not None
            metric = history.val_accuracy[-1]
            self.metrics.append(metric)
            return f"  val_loss={loss_text(loss)}  val_accuracy={metric:.4f}"
        assert trainer.val_outputs is not None  # fit's validation pass over self.x (regression: MSE)
        mse = target_mse(trainer.val_outputs, self.y, *self.target)
        self.metrics.append(mse)
        return f"  val_loss(standardised y)={loss_text(loss)}  val_mse={metric_text(mse)}"

    @property
    def stop(self) -> bool:
        """Whether early stopping ends the run after the last recorded epoch."""
        return self.monitor.should_stop

    def finish(self, trainer: Trainer[Any, Any], epochs: int) -> str:
        """After the last epoch run: restore the best weights under early stopping (keeping the
        last epoch's in :attr:`last_weights` when they differ, for ``--save``); the line that says
        so (or, without early stopping, which epoch was best and that the last is kept; or that
        early stopping has not stopped yet, when a Ctrl-C ended the run before ``epochs``)."""
        ran = len(self.monitor.values)
        best = self.monitor.best
        if best is None:
            kept = f"no epoch had a finite {self.monitored}; the last epoch's weights are kept"
            if self.patience is None:
                return f"best_epoch=none ({kept})"
            self.stopped = ran if self.stop else None
            where = f"early stopping at epoch {ran}/{epochs}" if self.stop else self._not_stopped(ran, epochs)
            return f"{where}: {kept}"
        shown = f"best_epoch={best + 1} ({self._value(best)})"
        if self.patience is None:
            return f"{shown}; the weights are the last epoch's ({ran})"
        weights = self.monitor.best_weights
        assert weights is not None
        if best + 1 != ran:  # --save keeps the last epoch's too: a resumed run trains on from them
            self.last_weights = trainer.model.state()
        trainer.model.load_state(weights)
        self.restored = best + 1
        if self.stop:
            self.stopped = ran
            why = stalled(self.monitored, self.patience, self.min_delta)
            return f"early stopping at epoch {ran}/{epochs}: {why}; {shown}; restored its weights"
        if ran < epochs:  # review29 F3: an interrupted run's weights are the best so far
            return f"{self._not_stopped(ran, epochs)}; {shown}; its weights are tested and saved"
        return f"{self._not_stopped(ran, epochs)}; {shown}; restored its weights"

    def _not_stopped(self, ran: int, epochs: int) -> str:
        """Early stopping did not end a run of ``ran`` epochs out of ``epochs``: it ran them all,
        or a Ctrl-C under ``--save`` (the only other way the loop ends) stopped it before, when it
        can be resumed and may still stop (review29 F3)."""
        patience = f"patience {self.patience}"
        if ran < epochs:
            return f"early stopping has not stopped by epoch {ran}/{epochs} (interrupted; {patience})"
        return f"early stopping did not stop by the last epoch ({ran}/{epochs}; {patience})"

    def _value(self, epoch: int) -> str:
        """``val_loss=0.123456`` (``val_accuracy=0.9333``, ``val_mse=0.1234``; regression's loss
        ``val_loss(standardised y)=...``): the monitored quantity at ``epoch`` (from 0), as the
        epoch lines show it."""
        name = self.monitored
        if name == "val_loss" and self.target is not None:  # review31 F6: not the target's units
            name = "val_loss(standardised y)"
        value = self.monitor.values[epoch]
        if self.monitored == "val_mse":
            return f"{name}={metric_text(value)}"
        if self.monitored == "val_loss":
            return f"{name}={loss_text(value)}"
        return f"{name}={value:.4f}"

    def record(self, classification: bool) -> dict[str, Any]:
        """The JSON record's ``validation`` (epoch numbers from 1, as the epoch lines; a resumed
        run's cover the whole run, the epochs before the resume included); ``monitor`` and
        ``min_delta`` are early stopping's (without it, ``val_loss`` and 0: what ``best_epoch``
        is the best of)."""
        best = self.monitor.best
        return {
            "fraction": self.fraction,
            "n": int(self.x.shape[0]),
            "losses": list(self.losses),
            "accuracy" if classification else "mse": list(self.metrics),
            "best_epoch": None if best is None else best + 1,
            "patience": self.patience,
            "monitor": self.monitored,
            "min_delta": self.min_delta,
            "stopped_epoch": self.stopped,
            "restored_epoch": self.restored,
        }
