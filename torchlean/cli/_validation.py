"""``torchlean train --val-fraction F --early-stopping P``: the validation part's options, epoch
line suffix, early stopping and JSON record, kept out of ``train.py``.

The validation part is held out of the train split by :func:`torchlean.data.load`
(``val_fraction``: seeded, stratified by class for classification; the standardisation
statistics come from the rest of the train split only). After each epoch the trainer's ``fit``
evaluates it (:attr:`torchlean.trainer.Trainer.history`); the epoch line gains
``val_loss=`` (regression: ``val_loss(standardised y)=``, the training objective on the
standardised target) and ``val_accuracy=`` (regression: ``val_mse=``, in the target's units as
``test_mse=``). With ``--early-stopping P`` the run stops after the epoch that makes P
consecutive epochs without a strictly lower ``val_loss`` and ends with the best epoch's weights
(Keras' ``EarlyStopping(patience=P, restore_best_weights=True)``), which ``test_*`` and
``--save`` then use; a line before the test metric says where it stopped (or that it did not),
the best epoch and that its weights were restored.

``--resume`` (:mod:`torchlean.cli._resume`) continues such a run: :meth:`Validation.resume` takes
the saved history, so the epochs, the best epoch and the record count from the run's first
epoch; :attr:`Validation.last_weights` are the last epoch's weights, which ``--save`` keeps
beside the restored best ones.
"""

from __future__ import annotations

import argparse
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from torchlean import data
from torchlean.backend.errors import TorchLeanError
from torchlean.cli._args import int_at_least, number
from torchlean.trainer import Trainer
from torchlean.validation import ValLossMonitor

__all__ = ["Validation", "add_options", "check_options", "target_mse"]

_patience = int_at_least(1, "expected an integer >= 1 (epochs without improvement), got {}")


def _fraction(text: str) -> float:
    """``--val-fraction``: a number strictly between 0 and 1.

    Raises:
        argparse.ArgumentTypeError: ``expected a number in (0, 1) (0 and 1 excluded), got '1.5'``.
    """
    value = number(text)
    if not 0.0 < value < 1.0:
        raise argparse.ArgumentTypeError(f"expected a number in (0, 1) (0 and 1 excluded), got {text!r}")
    return value


def add_options(parser: argparse.ArgumentParser) -> None:
    """Add ``--val-fraction`` and ``--early-stopping`` to ``torchlean train``'s parser."""
    parser.add_argument("--val-fraction", type=_fraction, default=None, metavar="F",
                        help="hold out the fraction F (0 < F < 1) of the train split as a validation part "
                        "(seeded by --seed, stratified by class for classification, as scikit-learn's "
                        "train_test_split; the standardisation statistics come from the rest of the "
                        "train split only), evaluated after every epoch: val_loss= and val_accuracy= "
                        "(regression: val_mse=, in the target's units) on each epoch line "
                        "(default: no validation part)")
    parser.add_argument("--early-stopping", type=_patience, default=None, metavar="P",
                        help="stop when val_loss has not improved (strictly lower) for P consecutive "
                        "epochs, P an integer >= 1, and end with the best epoch's weights (Keras' "
                        "EarlyStopping(patience=P, restore_best_weights=True)), which the test metric "
                        "and --save use; needs --val-fraction (default: train every epoch)")


def check_options(args: argparse.Namespace) -> None:
    """Refuse ``--early-stopping`` without ``--val-fraction``, before any work.

    Raises:
        TorchLeanError: ``--early-stopping 3 monitors the validation loss, but no validation part
            is held out: give --val-fraction F too (e.g. --val-fraction 0.2)``.
    """
    if args.early_stopping is not None and args.val_fraction is None:
        raise TorchLeanError(
            f"--early-stopping {args.early_stopping} monitors the validation loss, but no validation part "
            "is held out: give --val-fraction F too (e.g. --val-fraction 0.2)"
        )


def target_mse(outputs: np.ndarray[Any, Any], y: np.ndarray[Any, Any], mean: float, scale: float) -> float:
    """Regression: the MSE in the target's units of a model trained on ``(y - mean) / scale``,
    from its ``outputs`` ``(n, 1)`` (``trainer.predict(x)``, or :attr:`Trainer.val_outputs
    <torchlean.trainer.Trainer.val_outputs>` for the validation part: no second pass) for the
    targets ``y`` ``(n,)``, mapped back as ``p * scale + mean`` (float64; a diverged model's inf
    or NaN is the result)."""
    standardised = outputs.astype(np.float64).reshape(-1)
    with np.errstate(over="ignore", invalid="ignore"):
        prediction = standardised * scale + mean
        return float(np.mean((prediction - y.astype(np.float64)) ** 2))


class Validation:
    """One run's validation part and early stopping (``--val-fraction`` given)."""

    def __init__(
        self, args: argparse.Namespace, dataset: data.Dataset, target: tuple[float, float] | None
    ) -> None:
        """``target``: regression's ``(mean, scale)`` of the standardised target, else ``None``."""
        assert dataset.x_val is not None and dataset.y_val is not None  # loaded with val_fraction
        self.fraction: float = args.val_fraction
        self.patience: int | None = args.early_stopping
        self.x = dataset.x_val
        self.y = dataset.y_val
        self.target = target
        self.fit_targets = self.y if target is None else dataset.standardised_val_targets()
        self.monitor = ValLossMonitor(self.patience, keep_best_weights=self.patience is not None)
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
        self.monitor.resume(losses, best_weights)
        self.metrics = list(metrics)

    @property
    def data(self) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
        """``fit``'s ``validation`` argument (regression: the target standardised as training's)."""
        return self.x, self.fit_targets

    def settings(self) -> str:
        """The second header line's addition: `` val_fraction=F`` and `` early_stopping=P``."""
        stopping = "" if self.patience is None else f" early_stopping={self.patience}"
        return f" val_fraction={self.fraction!r}{stopping}"

    def after_epoch(self, trainer: Trainer[Any, Any], epoch: int) -> str:
        """Record the epoch ``fit`` just ran (``epoch`` from 0 in this run) and return its line's
        suffix; :attr:`stop` then says whether early stopping ends the run after it."""
        history = trainer.history
        assert history is not None and history.val_loss is not None
        loss = history.val_loss[-1]
        self.monitor.update(loss, trainer.model.state)
        if self.target is None:
            assert history.val_accuracy is not None
            metric = history.val_accuracy[-1]
            self.metrics.append(metric)
            return f"  val_loss={loss:.6f}  val_accuracy={metric:.4f}"
        assert trainer.val_outputs is not None  # fit's validation pass over self.x (regression: MSE)
        mse = target_mse(trainer.val_outputs, self.y, *self.target)
        self.metrics.append(mse)
        return f"  val_loss(standardised y)={loss:.6f}  val_mse={mse:.4f}"

    @property
    def stop(self) -> bool:
        """Whether early stopping ends the run after the last recorded epoch."""
        return self.monitor.should_stop

    def finish(self, trainer: Trainer[Any, Any], epochs: int) -> str:
        """After the last epoch run: restore the best weights under early stopping (keeping the
        last epoch's in :attr:`last_weights` when they differ, for ``--save``); the line that says
        so (or, without early stopping, which epoch was best and that the last is kept; or that
        early stopping has not stopped yet, when a Ctrl-C ended the run before ``epochs``)."""
        ran = len(self.monitor.losses)
        best = self.monitor.best
        if best is None:
            kept = "no epoch had a val_loss below +inf; the last epoch's weights are kept"
            if self.patience is None:
                return f"best_epoch=none ({kept})"
            self.stopped = ran if self.stop else None
            where = f"early stopping at epoch {ran}/{epochs}" if self.stop else self._not_stopped(ran, epochs)
            return f"{where}: {kept}"
        shown = f"best_epoch={best + 1} (val_loss={self.monitor.losses[best]:.6f})"
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
            return (f"early stopping at epoch {ran}/{epochs}: val_loss did not improve for {self.patience} "
                    f"epoch{'s' if self.patience > 1 else ''}; {shown}; restored its weights")
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

    def record(self, classification: bool) -> dict[str, Any]:
        """The JSON record's ``validation`` (epoch numbers from 1, as the epoch lines; a resumed
        run's cover the whole run, the epochs before the resume included)."""
        best = self.monitor.best
        return {
            "fraction": self.fraction,
            "n": int(self.x.shape[0]),
            "losses": list(self.monitor.losses),
            "accuracy" if classification else "mse": list(self.metrics),
            "best_epoch": None if best is None else best + 1,
            "patience": self.patience,
            "stopped_epoch": self.stopped,
            "restored_epoch": self.restored,
        }
