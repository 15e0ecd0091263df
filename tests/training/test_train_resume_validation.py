"""``torchlean train --resume`` of runs with a validation part (``--val-fraction``, with and
without ``--early-stopping``): the resumed run equals the uninterrupted one bit for bit - its epoch
lines, its best-epoch (or early stopping) line, its test metric and capsule lines, every array of
its checkpoint (weights, optimizer state, validation history, last weights) and its JSON record
(``validation`` included, which covers the whole run) - eager and typed-graph, classification
(iris) and regression (diabetes). The oracle is the uninterrupted run of the same command.

The cases, from the runs' own validation losses (printed by the oracle runs; the tests check
where each one stops, so a change of numerics shows as a failed premise, not a silent pass):
iris at ``--lr 0.05`` with ``--early-stopping 2`` improves last at epoch 14 and stops after
epoch 16; diabetes at ``--lr 0.01`` improves last at epoch 6 and stops after epoch 8. Then the
refusals: a run early stopping ended, a run saved by an older torchlean without its validation
history, a history without ``--val-fraction``; and the checkpoint format's new fields.
"""

from __future__ import annotations

import json
import math
import signal
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import arrays, cli, metadata, ok

from torchlean import checkpoint
from torchlean.checkpoint import CheckpointError, TrainingState
from torchlean.cli import main
from torchlean.trainer import Trainer
from torchlean.validation import EarlyStoppingError, ValLossMonitor

IRIS = ("--dataset", "iris", "--hidden", "8", "--lr", "0.05", "--val-fraction", "0.2")
DIABETES = ("--dataset", "diabetes", "--hidden", "8", "--lr", "0.01", "--batch-size", "64",
            "--val-fraction", "0.25")
DATA = {"iris": IRIS, "diabetes": DIABETES}
EXECUTIONS = ("eager", "typed-graph")

# (best epoch, stopped epoch) of each dataset's run with --early-stopping 2 (epochs from 1)
STOPS = {"iris": (14, 16), "diabetes": (6, 8)}
TOTAL = 40
"""The early-stopping runs' --epochs: more than they run."""






def interrupt_during_epoch(monkeypatch: pytest.MonkeyPatch, epoch: int) -> None:
    """SIGINT to this process as epoch ``epoch`` (from 1) starts (the CLI calls ``fit`` once per
    epoch)."""
    original = Trainer.fit

    def fit(self: Trainer[Any, Any], *args: Any, **kwargs: Any) -> list[float]:
        if self.epochs_done == epoch - 1:
            signal.raise_signal(signal.SIGINT)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "fit", fit)


class Run:
    """One finished CLI run: its stdout lines, JSON record and checkpoint."""

    def __init__(self, lines: list[str], record: dict[str, Any], saved: Path) -> None:
        self.lines = lines
        self.record = record
        self.saved = saved

    def report(self, header: int) -> list[str]:
        """The lines after the ``header`` lines, but those naming this run's files."""
        return [line for line in self.lines[header:] if not line.startswith(("wrote ", "saved: "))]


def run(capsys: pytest.CaptureFixture[str], folder: Path, name: str, *argv: str) -> Run:
    saved, record = folder / f"{name}.npz", folder / f"{name}.json"
    lines = ok(capsys, *argv, "--save", str(saved), "--report-json", str(record))
    return Run(lines, json.loads(record.read_text()), saved)


@pytest.fixture(scope="module")
def oracles() -> dict[tuple[str, ...], Run]:
    """The uninterrupted runs, by command line (several tests share one)."""
    return {}


@pytest.fixture
def whole(capsys, tmp_path_factory, oracles):
    def get(*argv: str) -> Run:
        if argv not in oracles:
            oracles[argv] = run(capsys, tmp_path_factory.mktemp("whole"), "whole", *argv)
        return oracles[argv]

    return get


RUN_DEPENDENT = {
    "seconds", "losses", "grad_norms", "resumed_from", "epochs_before", "checkpoint", "interrupted",
    "environment", "checkpoint_sha256",  # the command line and time, and so the file's bytes
    "torch_threads_segments", "earlier_capsules",  # a resumed run's only (checked below)
}
"""The record's fields that differ between a resumed run and the uninterrupted one by design."""


def assert_resumed_equals_whole(whole: Run, resumed: Run, epochs_before: int) -> None:
    """The resumed run (saved after ``epochs_before`` epochs) printed, recorded and saved what
    the uninterrupted run did, for the epochs it ran."""
    # settings lines, then the epoch lines on from epochs_before, the best-epoch line, the test
    # metric and the capsules: the whole run's from its epoch epochs_before + 1
    assert resumed.lines[:2] == whole.lines[:2]
    assert resumed.lines[2].startswith(f"resumed_from={resumed.record['resumed_from']} "
                                       f"epochs_before={epochs_before} ")
    assert resumed.report(3) == whole.report(2 + epochs_before)
    assert resumed.report(3)[0].startswith(f"epoch {epochs_before + 1:>3}/")
    # the checkpoint: every array (weights, statistics, optimizer state, validation history, last
    # weights) and the training metadata
    a, b = arrays(whole.saved), arrays(resumed.saved)
    assert sorted(a) == sorted(b)
    assert "validation/losses" in a
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], strict=True, err_msg=name)
    assert metadata(whole.saved)["training"] == metadata(resumed.saved)["training"]
    # the record: validation over the whole run, losses of this run's epochs
    w, r = whole.record, resumed.record
    assert r["validation"] == w["validation"]
    assert len(r["validation"]["losses"]) == len(w["losses"])
    assert r["losses"] == w["losses"][epochs_before:] and r["losses"]
    assert w["torch_threads_segments"] is None and len(r["torch_threads_segments"]) >= 2
    assert all(count == w["torch_threads"] for count in r["torch_threads_segments"])
    # review147 F1: each earlier segment ran under this capsule table, on capsules the whole run ran
    assert w["earlier_capsules"] is None
    assert sum(entry["segments"] for entry in r["earlier_capsules"]) == len(r["torch_threads_segments"]) - 1
    for segment in r["earlier_capsules"]:
        assert segment["capsule_table_sha256"] == w["environment"]["capsule_table_sha256"]
        assert segment["capsules"] and all(row in w["capsules"] for row in segment["capsules"])
    assert metadata(resumed.saved)["earlier_capsules"] == r["earlier_capsules"]
    assert {k: v for k, v in r.items() if k not in RUN_DEPENDENT} == {
        k: v for k, v in w.items() if k not in RUN_DEPENDENT
    }
    assert r["epochs_before"] == epochs_before and "interrupted" not in r


def loss_name(dataset: str) -> str:
    """How the best-epoch line names the validation loss (regression's is on the standardised target)."""
    return "val_loss(standardised y)" if dataset == "diabetes" else "val_loss"


def case(dataset: str, execution: str, *more: str) -> tuple[str, ...]:
    return (*DATA[dataset], "--execution", execution, *more)


@pytest.mark.parametrize("execution", EXECUTIONS)
@pytest.mark.parametrize("dataset", DATA)
def test_a_validation_run_resumes_as_the_uninterrupted_run(capsys, tmp_path, whole, dataset, execution):
    argv = case(dataset, execution)
    oracle = whole(*argv, "--epochs", "7")
    run(capsys, tmp_path, "first", *argv, "--epochs", "4")
    resumed = run(capsys, tmp_path, "resumed", "--resume", str(tmp_path / "first.npz"), "--epochs", "7")
    assert_resumed_equals_whole(oracle, resumed, 4)
    validation = resumed.record["validation"]
    assert validation["patience"] is None and validation["stopped_epoch"] is None
    best = validation["best_epoch"]
    assert resumed.report(3)[3] == (
        f"best_epoch={best} ({loss_name(dataset)}={validation['losses'][best - 1]:.6f}); the weights are the "
        "last epoch's (7)"
    )
    assert "last_weights/0.weight" not in arrays(resumed.saved)  # the weights are the last epoch's


def test_not_finite_best_weights_are_warned_of_as_restored_not_trained_from(capsys, tmp_path):
    """review31 F3: under early stopping with last_weights/, NaN in weights/ (the best epoch's) is
    not what the resumed run trains from: the warning says they are restored at the end unless a
    later epoch improves, and the run's losses stay finite (it trains from last_weights/)."""
    stopped = STOPS["iris"][1]
    first = run(capsys, tmp_path, "first", *case("iris", "eager", "--early-stopping", "2"),
                "--epochs", str(stopped - 1))
    with np.load(first.saved, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}  # metadata included
    assert "last_weights/0.bias" in entries
    bias = np.full_like(entries["weights/0.bias"], np.nan)
    entries["weights/0.bias"] = bias
    edited = tmp_path / "edited.npz"
    with edited.open("wb") as handle:
        np.savez(handle, **entries)
    code, out, err = cli(capsys, "train", "--resume", str(edited), "--epochs", str(TOTAL))
    assert code == 0
    assert err.splitlines()[0] == (
        f"warning: checkpoint {edited} holds values that are not finite (NaN or infinite) in weights/0.bias "
        f"({bias.size} of {bias.size} values): the run it saved diverged, or the file was edited; weights/ "
        "are the best epoch's, which the resumed run restores at the end unless a later epoch improves"
    )
    epochs = [line for line in out.splitlines() if line.startswith("epoch ")]
    assert epochs and all("nan" not in line for line in epochs)  # trained on from last_weights/
    # NaN in last_weights/ too: both effects, the trained-from one first
    entries["last_weights/0.bias"] = bias
    with edited.open("wb") as handle:
        np.savez(handle, **entries)
    code, _, err = cli(capsys, "train", "--resume", str(edited), "--epochs", str(TOTAL))
    assert code == 0 and err.splitlines()[0].endswith(
        "the resumed run trains on from them, and its losses will likely not be finite; weights/ are the "
        "best epoch's, which the resumed run restores at the end unless a later epoch improves"
    )


@pytest.mark.parametrize("execution", EXECUTIONS)
@pytest.mark.parametrize("dataset", DATA)
def test_early_stopping_after_the_resume_point_with_the_best_epoch_before_it(
    capsys, tmp_path, whole, dataset, execution
):
    best, stopped = STOPS[dataset]
    argv = case(dataset, execution, "--early-stopping", "2")
    oracle = whole(*argv, "--epochs", str(TOTAL))
    validation = oracle.record["validation"]
    assert (validation["best_epoch"], validation["stopped_epoch"]) == (best, stopped)  # the premise
    # saved one epoch after the best: its weights the best epoch's, its last weights the next
    first = run(capsys, tmp_path, "first", *argv, "--epochs", str(stopped - 1))
    assert first.record["validation"]["restored_epoch"] == best
    saved = arrays(first.saved)
    assert any(not np.array_equal(saved[f"weights/{n}"], saved[f"last_weights/{n}"]) for n in ("0.weight",))
    resumed = run(capsys, tmp_path, "resumed", "--resume", str(first.saved), "--epochs", str(TOTAL))
    assert_resumed_equals_whole(oracle, resumed, stopped - 1)
    assert resumed.report(3)[1] == (
        f"early stopping at epoch {stopped}/{TOTAL}: val_loss did not improve for 2 epochs; "
        f"best_epoch={best} ({loss_name(dataset)}={validation['losses'][best - 1]:.6f}); restored its weights"
    )
    # the weights tested and saved are the best epoch's, which the first part's checkpoint held
    for name, value in checkpoint.load(first.saved).weights.items():
        np.testing.assert_array_equal(arrays(resumed.saved)[f"weights/{name}"], value, strict=True)


@pytest.mark.parametrize("execution", EXECUTIONS)
@pytest.mark.parametrize("dataset", DATA)
def test_ctrl_c_before_early_stopping_saves_a_run_that_resumes_to_the_stop(
    capsys, tmp_path, monkeypatch, whole, dataset, execution
):
    best, _ = STOPS[dataset]
    argv = case(dataset, execution, "--early-stopping", "2", "--epochs", str(TOTAL))
    oracle = whole(*argv)
    at = best - 2  # before the best epoch: the resumed part improves, then stops
    path = tmp_path / "stopped.npz"
    with monkeypatch.context() as patch:
        interrupt_during_epoch(patch, at)
        code, out, err = cli(capsys, "train", *argv, "--save", str(path),
                             "--report-json", str(tmp_path / "s.json"))
    assert code == 130
    assert err.endswith(
        f"note: interrupted after epoch {at}/{TOTAL}; continue with: torchlean train --resume {path} "
        f"--save {path}\n"
    )
    interrupted = json.loads((tmp_path / "s.json").read_text())
    so_far = interrupted["validation"]
    # review29 F3: not "did not stop": the run has not ended, and may still stop when resumed
    assert out.splitlines()[2 + at] == (
        f"early stopping has not stopped by epoch {at}/{TOTAL} (interrupted; patience 2); best_epoch="
        f"{so_far['best_epoch']} ({loss_name(dataset)}={so_far['losses'][so_far['best_epoch'] - 1]:.6f}); "
        "its weights are tested and saved"
    )
    assert interrupted["interrupted"] is True
    assert interrupted["validation"]["losses"] == oracle.record["validation"]["losses"][:at]
    resumed = run(capsys, tmp_path, "resumed", "--resume", str(path))
    assert_resumed_equals_whole(oracle, resumed, at)
    assert interrupted["losses"] + resumed.record["losses"] == oracle.record["losses"]


@pytest.mark.parametrize("execution", EXECUTIONS)
@pytest.mark.parametrize("dataset", DATA)
def test_early_stopping_that_never_stops_resumes_and_extends(capsys, tmp_path, whole, dataset, execution):
    best, stopped = STOPS[dataset]
    argv = case(dataset, execution, "--early-stopping", "2")
    oracle = whole(*argv, "--epochs", str(stopped - 1))  # one epoch short of the stop
    validation = oracle.record["validation"]
    assert (validation["best_epoch"], validation["stopped_epoch"], validation["restored_epoch"]) == (
        best, None, best)
    first = run(capsys, tmp_path, "first", *argv, "--epochs", str(best - 3))
    code, _, err = cli(capsys, "train", "--resume", str(first.saved))  # all its epochs are done
    assert code == 2 and err.startswith(f"error: the run in {first.saved} is complete ({best - 3} of ")
    resumed = run(capsys, tmp_path, "resumed", "--resume", str(first.saved), "--epochs", str(stopped - 1))
    assert_resumed_equals_whole(oracle, resumed, best - 3)
    assert resumed.report(3)[stopped - 1 - (best - 3)] == (  # the epochs all ran: complete, no stop
        f"early stopping did not stop by the last epoch ({stopped - 1}/{stopped - 1}; patience 2); "
        f"best_epoch={best} ({loss_name(dataset)}={validation['losses'][best - 1]:.6f}); restored its weights"
    )
    # and on from the resumed run's checkpoint to where the uninterrupted run stops
    again = run(capsys, tmp_path, "again", "--resume", str(resumed.saved), "--epochs", str(TOTAL))
    assert_resumed_equals_whole(whole(*argv, "--epochs", str(TOTAL)), again, stopped - 1)


def test_a_diverged_run_not_stopped_yet_says_whether_it_was_interrupted(capsys, tmp_path, monkeypatch):
    """review29 F3 where no epoch improved: all epochs run (complete) or Ctrl-C before them."""
    argv = ("--dataset", "diabetes", "--lr", "1e30", "--val-fraction", "0.2", "--early-stopping", "3")
    code, out, _ = cli(capsys, "train", *argv, "--epochs", "2")
    assert code == 0 and out.splitlines()[4] == (
        "early stopping did not stop by the last epoch (2/2; patience 3): no epoch had a finite val_loss; "
        "the last epoch's weights are kept"
    )
    with monkeypatch.context() as patch:
        interrupt_during_epoch(patch, 2)
        code, out, err = cli(capsys, "train", *argv, "--epochs", "6", "--save", str(tmp_path / "d.npz"))
    assert code == 130 and "note: interrupted after epoch 2/6" in err
    assert out.splitlines()[4] == (
        "early stopping has not stopped by epoch 2/6 (interrupted; patience 3): no epoch had a finite "
        "val_loss; the last epoch's weights are kept"
    )


# ------------------------------------------------------------------------------ Ctrl-C at the stop


def test_ctrl_c_in_the_epoch_early_stopping_ends_leaves_a_complete_run(capsys, tmp_path, monkeypatch, whole):
    _, stopped = STOPS["iris"]
    argv = case("iris", "eager", "--early-stopping", "2", "--epochs", str(TOTAL))
    oracle = whole(*argv)
    path = tmp_path / "run.npz"
    with monkeypatch.context() as patch:
        interrupt_during_epoch(patch, stopped)
        code, out, err = cli(capsys, "train", *argv, "--save", str(path),
                             "--report-json", str(tmp_path / "r.json"))
    assert code == 0
    assert err.endswith(f"note: Ctrl-C came in epoch {stopped}/{TOTAL}, after which early stopping ended the "
                        "run: the run is complete (nothing to resume)\n")
    assert "--resume" not in err
    record = json.loads((tmp_path / "r.json").read_text())
    assert "interrupted" not in record and record["validation"] == oracle.record["validation"]
    assert [line for line in out.splitlines() if not line.startswith(("wrote ", "saved: "))] == \
        oracle.lines[:2] + oracle.report(2)
    refused(capsys, "--resume", str(path))


# ------------------------------------------------------------------------------------- refusals


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, "train", *argv)
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (code, out, err)
    return err.removeprefix("error: ").rstrip("\n")


@pytest.mark.parametrize("epochs", [None, "50"])
def test_a_run_early_stopping_ended_is_refused(capsys, whole, epochs):
    best, stopped = STOPS["iris"]
    oracle = whole(*case("iris", "eager", "--early-stopping", "2"), "--epochs", str(TOTAL))
    more = () if epochs is None else ("--epochs", epochs)
    assert refused(capsys, "--resume", str(oracle.saved), *more) == (
        f"the run in {oracle.saved} is complete: early stopping ended it after epoch {stopped} (val_loss did "
        f"not improve for 2 epochs; it holds its best epoch's weights, epoch {best}'s, which torchlean "
        "predict uses), and a resumed run would stop there again, whatever --epochs: to train on, train a "
        "new run (without --resume)"
    )
    assert cli(capsys, "predict", str(oracle.saved), "--dataset", "iris")[0] == 0


def test_a_diverged_run_early_stopping_ended_is_refused(capsys, tmp_path):
    path = tmp_path / "nan.npz"
    code, _, err = cli(capsys, "train", "--dataset", "diabetes", "--lr", "1e30", "--epochs", "4",
                       "--val-fraction", "0.2", "--early-stopping", "2", "--save", str(path))
    assert code == 0 and "not finite" in err
    assert np.isnan(arrays(path)["validation/losses"]).all()
    assert refused(capsys, "--resume", str(path)).startswith(
        f"the run in {path} is complete: early stopping ended it after epoch 2 (val_loss did not improve for "
        "2 epochs; no epoch had a finite val_loss; it holds the last epoch's weights, which torchlean "
        "predict uses)"
    )


def without_history(source: Path, target: Path) -> Path:
    """``source`` with its validation history and last weights removed (a hand edit: the flags
    false, no ``validation/`` or ``last_weights/`` entries; numpy writes the archive)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files
                   if not name.startswith(("validation/", "last_weights/"))}
    meta = json.loads(str(entries["metadata"]))
    meta["training"]["validation"] = meta["training"]["last_weights"] = False
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


@pytest.mark.parametrize("stopping", [(), ("--early-stopping", "2")])
def test_a_validation_run_without_its_history_is_refused_but_predicts(capsys, tmp_path, stopping):
    path = tmp_path / "val.npz"
    ok(capsys, *IRIS, "--epochs", "3", *stopping, "--save", str(path))
    edited = without_history(path, tmp_path / "edited.npz")
    assert checkpoint.load(edited).training.val_losses is None
    assert refused(capsys, "--resume", str(edited), "--epochs", "5") == (
        f"the run in {edited} held out a validation part (--val-fraction), but its checkpoint lacks the "
        "validation history that picks the best epoch (a checkpoint edited by hand?): --resume cannot "
        "continue it; train a new run (its weights: torchlean predict)"
    )
    code, out, _ = cli(capsys, "predict", str(edited), "--dataset", "iris")
    assert code == 0 and out == cli(capsys, "predict", str(path), "--dataset", "iris")[1]


def test_a_history_without_a_validation_part_is_refused(capsys, tmp_path):
    path = tmp_path / "val.npz"
    ok(capsys, *IRIS, "--epochs", "3", "--save", str(path))
    with np.load(path, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    meta["training"]["settings"]["val_fraction"] = None
    entries["metadata"] = np.array(json.dumps(meta))
    edited = tmp_path / "edited.npz"
    with edited.open("wb") as handle:
        np.savez(handle, **entries)
    assert refused(capsys, "--resume", str(edited), "--epochs", "5") == (
        f"checkpoint {edited} records a validation history, but its run held out no validation part (its "
        "setting --val-fraction is not given): a checkpoint edited by hand?"
    )


# ------------------------------------------------------------------------ the checkpoint format


STATE: dict[str, Any] = {"epochs_done": 2, "epochs": 5, "optimizer": {"steps": np.array(8)}, "settings": {}}


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"val_losses": (0.5, 0.4)},
         r"val_losses and val_metrics must be given together .* got losses and None"),
        ({"val_metrics": (0.5, 0.4)}, r"must be given together .* got None and metrics"),
        ({"val_losses": (0.5,), "val_metrics": (0.5,)},
         r"training val_losses must hold one value per epoch done \(2\), got 1"),
        ({"val_losses": (0.5, 1), "val_metrics": (0.5, 0.4)},
         r"training val_losses must be a sequence of floats \(one per epoch done\), got \(0.5, 1\)"),
        ({"val_losses": np.array([1, 2]), "val_metrics": (0.5, 0.4)},
         r"training val_losses must be a 1-d float array, got dtype int64, shape \[2\]"),
        ({"val_losses": (0.5, 0.4), "val_metrics": np.zeros((2, 1))},
         r"training val_metrics must be a 1-d float array, got dtype float64, shape \[2, 1\]"),
        ({"val_losses": "ab", "val_metrics": (0.5, 0.4)}, r"val_losses must be a sequence of floats"),
        ({"val_losses": (0.5, -1.0), "val_metrics": (0.5, 0.4)},  # review31 F4: a hand edit
         r"training val_losses must be >= 0 \(a validation loss, accuracy or MSE; NaN or \+inf for a "
         r"diverged epoch\), got -1.0 at epoch 2"),
        ({"val_losses": (0.5, 0.4), "val_metrics": (-np.inf, 0.4)},
         r"training val_metrics must be >= 0 .* got -inf at epoch 1"),
        ({"last_weights": [("w", np.zeros(2))]},
         r"training last_weights must be a mapping of names to arrays or None, got list"),
        ({"last_weights": {"w": np.zeros(2, dtype=int)}}, r"last_weights must map names to float arrays, got "
                                                         r"'w': int64"),
        ({"last_weights": {"w": [0.0]}}, r"last_weights must map names to float arrays, got 'w': list"),
    ],
)
def test_training_state_refuses_bad_validation_fields(changes, message):
    with pytest.raises(CheckpointError, match=message):
        TrainingState(**{**STATE, **changes})


def test_training_state_keeps_the_history_as_floats_and_read_only_weights():
    weights = {"w": np.zeros(2)}
    state = TrainingState(**STATE, val_losses=np.array([0.5, math.nan]), val_metrics=[np.float32(0.25), 1.0],
                          last_weights=weights)
    weights["w"][0] = 3.0
    assert state.val_losses is not None and state.val_metrics == (0.25, 1.0)
    assert state.val_losses[0] == 0.5 and math.isnan(state.val_losses[1])
    assert all(type(v) is float for v in (*state.val_losses, *state.val_metrics))
    assert state.last_weights is not None and state.last_weights["w"][0] == 0.0
    assert not state.last_weights["w"].flags.writeable and state.has_validation
    assert not TrainingState(**STATE).has_validation


@pytest.fixture(scope="module")
def stopped_early(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris run saved one epoch after its best (weights: the best epoch's; last weights)."""
    path = tmp_path_factory.mktemp("format") / "es.npz"
    best, _ = STOPS["iris"]
    argv = ["train", *IRIS, "--early-stopping", "2", "--epochs", str(best + 1), "--save", str(path)]
    assert main(argv) == 0
    return path


def test_the_checkpoint_checks_last_weights_against_the_model(stopped_early):
    saved = checkpoint.load(stopped_early)
    assert saved.training is not None and saved.training.last_weights is not None
    fields = {name: getattr(saved, name) for name in checkpoint.Checkpoint.__slots__}

    def with_last(last: dict[str, Any], **more: Any) -> dict[str, Any]:
        assert saved.training is not None
        state = {name: getattr(saved.training, name) for name in TrainingState.__slots__}
        return {**fields, "training": TrainingState(**{**state, "last_weights": last}), **more}

    last = dict(saved.training.last_weights)
    with pytest.raises(CheckpointError, match=r"the training last_weights do not match model mlp .*: missing "
                       r"\['4.bias'\], unexpected \[\]"):
        checkpoint.Checkpoint(**with_last({k: v for k, v in last.items() if k != "4.bias"}))
    with pytest.raises(CheckpointError, match=r"last_weights entry 0.weight has shape \[8\], expected \[8"):
        checkpoint.Checkpoint(**with_last({**last, "0.weight": np.zeros(8, dtype=np.float32)}))
    with pytest.raises(CheckpointError, match=r"last_weights entry 0.bias has dtype float64, expected float"):
        checkpoint.Checkpoint(**with_last({**last, "0.bias": np.zeros(8)}))
    with pytest.raises(CheckpointError, match=r"a version 1 checkpoint holds no training state"):
        checkpoint.Checkpoint(**{**fields, "version": 1})


def rewrite(source: Path, target: Path, training: dict[str, Any] | None = None, drop: str = "") -> Path:
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files if not (drop and name.startswith(drop))}
    meta = json.loads(str(entries["metadata"]))
    meta["training"].update(training or {})
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_load_names_a_bad_validation_history(stopped_early, tmp_path):
    cases = [
        (rewrite(stopped_early, tmp_path / "nolosses.npz", drop="validation/losses"),
         r"nolosses.npz: the training state has a validation history, but the archive has no "
         r"validation/losses entry"),
        (rewrite(stopped_early, tmp_path / "flag.npz", {"validation": 1}),
         r"flag.npz: training validation must be true or false, got 1"),
        (rewrite(stopped_early, tmp_path / "noflag.npz", {"validation": False}),
         r"noflag.npz: unexpected archive entries: validation/losses, validation/metrics"),
        (rewrite(stopped_early, tmp_path / "nolast.npz", drop="last_weights/"),
         r"nolast.npz: the training last_weights do not match model mlp .*: missing \['0.weight', "),
        (rewrite(stopped_early, tmp_path / "lastflag.npz", {"last_weights": False}),
         r"lastflag.npz: unexpected archive entries: last_weights/0.weight, "),
        (rewrite(stopped_early, tmp_path / "epochs.npz", {"epochs_done": 14, "epochs": 15}),
         r"epochs.npz: training val_losses must hold one value per epoch done \(14\), got 15"),
    ]
    with np.load(stopped_early, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    entries["validation/metrics"] = entries["validation/metrics"].astype(np.int64)
    ints = tmp_path / "ints.npz"
    with ints.open("wb") as handle:
        np.savez(handle, **entries)
    cases.append((ints, r"ints.npz: training val_metrics must be a sequence of floats"))
    with np.load(stopped_early, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    entries["validation/losses"] = entries["validation/losses"].copy()
    entries["validation/losses"][2] = -1.0
    negative = tmp_path / "negative.npz"
    with negative.open("wb") as handle:
        np.savez(handle, **entries)
    cases.append((negative, r"negative.npz: training val_losses must be >= 0 .* got -1.0 at epoch 3"))
    for path, message in cases:
        with pytest.raises(CheckpointError, match=message):
            checkpoint.load(path)


def test_a_checkpoint_round_trips_its_validation_history(stopped_early, tmp_path):
    saved = checkpoint.load(stopped_early)
    copy = tmp_path / "copy.npz"
    checkpoint.save(copy, saved)
    a, b = arrays(stopped_early), arrays(copy)
    assert sorted(a) == sorted(b) and all(np.array_equal(a[n], b[n]) for n in a)
    assert metadata(copy) == metadata(stopped_early)
    losses = a["validation/losses"]
    assert losses.dtype == np.float64 and losses.shape == (STOPS["iris"][0] + 1,)


# ----------------------------------------------------------------------- --monitor and --min-delta


def keras_stop(values, patience, mode, min_delta):
    """Keras 3's EarlyStopping over ``values`` (its wait counter, its signed min_delta, ``best``
    the value of the last improvement): (best epoch, stopped epoch), from 1, ``None`` for none."""
    sign = -1.0 if mode == "min" else 1.0
    best, best_epoch, wait = -sign * math.inf, None, 0
    for epoch, current in enumerate(values, start=1):
        wait += 1
        if sign * (current - sign * min_delta) > sign * best:
            best, best_epoch, wait = current, epoch, 0
        elif wait >= patience:
            return best_epoch, epoch
    return best_epoch, None


def moving_reference_stop(values, patience, mode, min_delta):
    """Not Keras' rule: the reference is the best value so far, a gain that does not count moving
    it too (what a resume that rebuilt the reference from the history's best value would do)."""
    sign = 1.0 if mode == "min" else -1.0
    best, best_epoch, wait = math.inf, None, 0
    for epoch, current in enumerate(values, start=1):
        improved = sign * current + min_delta < best
        best = min(best, sign * current)
        if improved:
            best_epoch, wait = epoch, 0
        else:
            wait += 1
            if wait >= patience:
                return best_epoch, epoch
    return best_epoch, None


# name: (options, (best, stopped) from 1, the epochs the first part runs, what the case tells apart
# from Keras' rule: min_delta 0, a moving reference). iris' validation part has
# 24 rows (accuracy in steps of 1/24 = 0.0417); its accuracies (x24) run 16, 19, 16, 16, 23, 23,
# 24, 24, 23, ... and its losses 0.8415, 0.534, 0.4461, 0.425, 0.3277, ...
MONITORED = {
    # a one-row gain (epoch 7's 24/24) does not count: the best epoch is 5, not the highest accuracy
    "accuracy": (("--early-stopping", "3", "--monitor", "val_accuracy", "--min-delta", "0.05"), (5, 8),
                 (4, 7), ("min_delta", "not the best value")),
    # 19/24 and 23/24 gain at most 0.3 over 16/24 and leave the reference there, so 24/24 (epoch 7)
    # improves on 16/24; the first part stops after epoch 5's 23/24, so the resumed run must rebuild
    # the reference from the history (a reference at 23/24 would stop after epoch 7 instead)
    "reference": (("--early-stopping", "6", "--monitor", "val_accuracy", "--min-delta", "0.3"), (7, 13),
                  (5, 6), ("reference",)),
    # val_loss, min_delta 0.1: epoch 3 (0.4461) gains 0.088 over 0.534 and does not count, epoch 4
    # (0.425) gains 0.109 over it and does: the first part stops after epoch 3
    "loss": (("--early-stopping", "3", "--min-delta", "0.1"), (8, 11), (3,), ("min_delta", "reference")),
}


def _rule(options):
    monitor = options[options.index("--monitor") + 1] if "--monitor" in options else "val_loss"
    return (monitor, int(options[options.index("--early-stopping") + 1]),
            float(options[options.index("--min-delta") + 1]))


@pytest.mark.parametrize("name", MONITORED)
def test_a_run_with_monitor_and_min_delta_resumes_to_the_same_stop(capsys, tmp_path, whole, name):
    options, (best, stopped), splits, premises = MONITORED[name]
    monitor, patience, min_delta = _rule(options)
    argv = case("iris", "eager", *options)
    oracle = whole(*argv, "--epochs", str(TOTAL))
    validation = oracle.record["validation"]
    values = validation["losses" if monitor == "val_loss" else "accuracy"]
    mode = "min" if monitor == "val_loss" else "max"
    # the premises: the oracle's run stops where Keras' rule says, and the case tells rules apart
    assert (validation["best_epoch"], validation["stopped_epoch"]) == (best, stopped)
    assert keras_stop(values, patience, mode, min_delta) == (best, stopped)
    if "min_delta" in premises:
        assert keras_stop(values, patience, mode, 0.0) != (best, stopped)
    if "reference" in premises:
        assert moving_reference_stop(values, patience, mode, min_delta) != (best, stopped)
    if "not the best value" in premises:
        assert max(values[:stopped]) > values[best - 1]
    assert (validation["monitor"], validation["min_delta"]) == (monitor, min_delta)
    shown = f"{values[best - 1]:.6f}" if monitor == "val_loss" else f"{values[best - 1]:.4f}"
    stop_line = (f"early stopping at epoch {stopped}/{TOTAL}: {monitor} did not improve by more than "
                 f"{min_delta!r} for {patience} epochs; best_epoch={best} ({monitor}={shown}); restored its "
                 "weights")
    assert stop_line in oracle.lines
    for split in splits:
        first = run(capsys, tmp_path, f"first{split}", *argv, "--epochs", str(split))
        resumed = run(capsys, tmp_path, f"resumed{split}", "--resume", str(first.saved),
                      "--epochs", str(TOTAL))
        assert_resumed_equals_whole(oracle, resumed, split)
        assert stop_line in resumed.lines


def test_monitor_and_min_delta_are_settings_of_the_run(capsys, tmp_path, whole):
    options, (best, stopped), _, _ = MONITORED["accuracy"]
    argv = case("iris", "eager", *options)
    oracle = whole(*argv, "--epochs", str(TOTAL))
    first = run(capsys, tmp_path, "first", *argv, "--epochs", "4")
    assert metadata(first.saved)["training"]["settings"]["monitor"] == "val_accuracy"
    assert metadata(first.saved)["training"]["settings"]["min_delta"] == "0.05"
    assert refused(capsys, "--resume", str(first.saved), "--monitor", "val_loss", "--min-delta", "0.1") == (
        f"--resume {first.saved} continues the run with the checkpoint's settings; --monitor val_loss "
        "differs from the checkpoint's val_accuracy; --min-delta 0.1 differs from the checkpoint's 0.05 "
        "(leave out the option, or train a new run without --resume)"
    )
    # the same values given again are no conflict
    resumed = run(capsys, tmp_path, "resumed", "--resume", str(first.saved), "--monitor", "val_accuracy",
                  "--min-delta", "5e-2", "--epochs", str(TOTAL))
    assert_resumed_equals_whole(oracle, resumed, 4)
    # the run early stopping ended is complete, by the rule that ended it
    assert refused(capsys, "--resume", str(oracle.saved)) == (
        f"the run in {oracle.saved} is complete: early stopping ended it after epoch {stopped} "
        f"(val_accuracy did not improve by more than 0.05 for 3 epochs; it holds its best epoch's weights, "
        f"epoch {best}'s, which torchlean predict uses), and a resumed run would stop there again, whatever "
        "--epochs: to train on, train a new run (without --resume)"
    )


def without_settings(source: Path, target: Path, *names: str) -> Path:
    """``source`` with the training settings ``names`` removed (a checkpoint written before they
    existed)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    for name in names:
        del meta["training"]["settings"][name]
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_a_checkpoint_without_monitor_and_min_delta_resumes_as_val_loss_and_0(capsys, tmp_path, whole):
    """A checkpoint written before --monitor and --min-delta (its settings lack them) resumes as
    the run it was, monitor val_loss and min_delta 0, bit for bit; giving those values again is
    no conflict, another value is."""
    best, stopped = STOPS["iris"]
    argv = case("iris", "eager", "--early-stopping", "2")
    oracle = whole(*argv, "--epochs", str(TOTAL))
    first = run(capsys, tmp_path, "first", *argv, "--epochs", str(best - 2))
    assert metadata(first.saved)["training"]["settings"]["monitor"] is None  # not given: None
    older = without_settings(first.saved, tmp_path / "older.npz", "monitor", "min_delta")
    resumed = run(capsys, tmp_path, "resumed", "--resume", str(older), "--epochs", str(TOTAL))
    assert_resumed_equals_whole(oracle, resumed, best - 2)
    assert resumed.record["validation"]["stopped_epoch"] == stopped
    again = run(capsys, tmp_path, "again", "--resume", str(older), "--monitor", "val_loss",
                "--min-delta", "0", "--epochs", str(TOTAL))
    assert_resumed_equals_whole(oracle, again, best - 2)
    assert refused(capsys, "--resume", str(older), "--monitor", "val_accuracy") == (
        f"--resume {older} continues the run with the checkpoint's settings; --monitor val_accuracy differs "
        "from the checkpoint's val_loss (not given: the default) (leave out the option, or train a new run "
        "without --resume)"
    )
    plain = run(capsys, tmp_path, "plain", *IRIS, "--epochs", "2")  # no early stopping: --monitor is not its
    assert refused(capsys, "--resume", str(plain.saved), "--monitor", "val_loss", "--epochs", "3") == (
        f"--resume {plain.saved} continues the run with the checkpoint's settings; --monitor val_loss "
        "was not given to the checkpoint's run (leave out the option, or train a new run without --resume)"
    )


def test_a_checkpoint_with_monitor_but_no_early_stopping_is_refused_naming_its_settings(capsys, tmp_path):
    """A hand edit: --monitor (or --min-delta) recorded without --early-stopping. The refusal names
    the checkpoint's setting; it does not ask for --early-stopping, which would then conflict."""
    path = tmp_path / "val.npz"
    ok(capsys, *IRIS, "--epochs", "2", "--save", str(path))
    for dest, value, shown in (("monitor", "val_accuracy", "--monitor val_accuracy"),
                               ("min_delta", "0.1", "--min-delta 0.1")):
        edited = rewrite_settings(path, tmp_path / f"{dest}.npz", **{dest: value})
        assert refused(capsys, "--resume", str(edited), "--epochs", "3") == (
            f"checkpoint {edited}: its setting {shown} chooses how --early-stopping monitors the "
            "validation part, but its setting --early-stopping is not given: its settings are inconsistent "
            "(a checkpoint edited by hand?), and --resume cannot continue it; train a new run"
        )


def rewrite_settings(source: Path, target: Path, **settings: str) -> Path:
    """``source`` with these training settings set."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    meta["training"]["settings"].update(settings)
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


# --------------------------------------------------------------------------- ValLossMonitor.resume


@pytest.mark.parametrize(("mode", "min_delta"), [("min", 0.0), ("min", 1.5), ("max", 0.0), ("max", 1.0)])
def test_a_resumed_monitor_stands_where_the_uninterrupted_one_did(mode, min_delta):
    rng = np.random.default_rng(11)
    for _ in range(200):
        losses = [float(v) for v in rng.integers(0, 6, size=int(rng.integers(1, 12)))]
        if rng.random() < 0.2:
            losses[int(rng.integers(len(losses)))] = math.nan
        patience = int(rng.integers(1, 4))
        split = int(rng.integers(0, len(losses) + 1))
        rule = {"keep_best_weights": True, "mode": mode, "min_delta": min_delta}
        whole = ValLossMonitor(patience, **rule)
        for epoch, loss in enumerate(losses):
            whole.update(loss, lambda epoch=epoch: {"w": np.array([float(epoch)])})
        resumed = ValLossMonitor(patience, **rule)
        before = ValLossMonitor(patience, **rule)
        for epoch, loss in enumerate(losses[:split]):
            before.update(loss, lambda epoch=epoch: {"w": np.array([float(epoch)])})
        resumed.resume(losses[:split], before.best_weights)
        for epoch, loss in enumerate(losses[split:], start=split):
            resumed.update(loss, lambda epoch=epoch: {"w": np.array([float(epoch)])})
        assert resumed.values == whole.values or math.isnan(sum(losses))
        assert (resumed.best, resumed.waited) == (whole.best, whole.waited)
        assert resumed.should_stop == whole.should_stop
        assert (resumed.best_weights is None) == (whole.best_weights is None)
        if whole.best_weights is not None:
            assert resumed.best_weights is not None
            assert resumed.best_weights["w"][0] == whole.best_weights["w"][0] == whole.best


def test_monitor_resume_refusals():
    monitor = ValLossMonitor(2, keep_best_weights=True)
    with pytest.raises(EarlyStoppingError, match=r"the history's best epoch \(1\) needs its weights"):
        monitor.resume([0.5, 0.25, 0.3])
    assert monitor.values == () and monitor.best is None  # refused before any change
    used = ValLossMonitor(2)
    used.update(0.5)
    with pytest.raises(EarlyStoppingError, match=r"this monitor has recorded 1 epochs already"):
        used.resume([0.4])
    nan = ValLossMonitor(1, keep_best_weights=True)
    nan.resume([math.nan, math.nan])  # no best epoch: no weights needed
    assert (nan.best, nan.should_stop, nan.best_weights) == (None, True, None)


@pytest.mark.parametrize("given", [(), ("--early-stopping", "3")])
def test_early_stopping_without_a_validation_part_in_a_checkpoint_names_its_settings(capsys, tmp_path, given):
    """review29 F4: settings with early_stopping but val_fraction null (a hand edit, history
    removed) were told to give --val-fraction, which the resume then refuses as a conflict; the
    message names the checkpoint's settings and says they are inconsistent."""
    path = tmp_path / "es.npz"
    ok(capsys, *IRIS, "--epochs", "3", "--early-stopping", "3", "--save", str(path))
    edited = without_history(path, tmp_path / "edited.npz")
    with np.load(edited, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    meta["training"]["settings"]["val_fraction"] = None
    assert meta["training"]["settings"]["early_stopping"] == "3"
    entries["metadata"] = np.array(json.dumps(meta))
    with edited.open("wb") as handle:
        np.savez(handle, **entries)
    assert refused(capsys, "--resume", str(edited), "--epochs", "5", *given) == (
        f"checkpoint {edited}: its setting --early-stopping 3 monitors the validation loss, but its setting "
        "--val-fraction is not given (no validation part): its settings are inconsistent (a checkpoint "
        "edited by hand?), and --resume cannot continue it; train a new run"
    )
    # --val-fraction is not the way out
    assert "--val-fraction 0.2 was not given to the checkpoint's run" in refused(
        capsys, "--resume", str(edited), "--epochs", "5", "--val-fraction", "0.2")


def test_an_early_stopping_checkpoint_without_its_last_weights_is_refused(capsys, tmp_path):
    """review29 F1: best epoch before the last, but no last_weights (a hand edit): training on
    from the best weights with the last epoch's optimizer state would not be the run."""
    path = tmp_path / "es.npz"
    ok(capsys, *IRIS, "--epochs", "15", "--early-stopping", "5", "--save", str(path))
    with np.load(path, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    assert any(name.startswith("last_weights/") for name in entries)  # the premise: best is not last
    entries = {name: value for name, value in entries.items() if not name.startswith("last_weights/")}
    meta = json.loads(str(entries["metadata"]))
    meta["training"]["last_weights"] = False
    entries["metadata"] = np.array(json.dumps(meta))
    edited = tmp_path / "edited.npz"
    with edited.open("wb") as handle:
        np.savez(handle, **entries)
    message = refused(capsys, "--resume", str(edited), "--epochs", "20")
    assert message.startswith(f"checkpoint {edited}: its best epoch (") and "holds no last_weights" in message
