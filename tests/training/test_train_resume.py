"""``torchlean train --resume CKPT``: a run saved after 4 epochs (``--epochs 4 --save``, or a
7-epoch run stopped by Ctrl-C after epoch 4) and resumed to 7 equals the uninterrupted 7-epoch
run bit for bit - its saved weights and optimizer state, its epoch losses, its grad norms and its
test metric - across optimizers, schedules, clipping, parameter groups, datasets and execution
modes (every CLI run shuffles, seeded by the epoch). The oracle is the uninterrupted run of the
same command. Then the refusals: each a one-line ``error:``, exit status 2, no traceback."""

from __future__ import annotations

import json
import re
import signal
import sys
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import OTHER_TRAINING_ROWS, arrays, cli, metadata, ok

from torchlean import checkpoint
from torchlean.checkpoint import CheckpointError, TrainingState
from torchlean.cli import _resume as resume
from torchlean.cli import build_parser, main
from torchlean.trainer import Trainer

SMALL = ("--dataset", "iris", "--hidden", "8")
"""120 training rows: 4 minibatches of 32 an epoch."""






def interrupt_during_epoch(monkeypatch: pytest.MonkeyPatch, epoch: int, times: int = 1) -> None:
    """Send this process SIGINT ``times`` times as epoch ``epoch`` (from 1) starts: the CLI calls
    ``Trainer.fit`` once per epoch."""
    original = Trainer.fit

    def fit(self: Trainer[Any, Any], *args: Any, **kwargs: Any) -> list[float]:
        if self.epochs_done == epoch - 1:
            for _ in range(times):
                signal.raise_signal(signal.SIGINT)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "fit", fit)


def assert_same_run(whole: Path, resumed: Path, **moved: str) -> None:
    """Two checkpoints of a finished 7-epoch run hold the same bits: weights, statistics, every
    optimizer buffer and step count, and the same training state (``moved``: settings that
    name where the resumed run found its data)."""
    a, b = arrays(whole), arrays(resumed)
    assert sorted(a) == sorted(b)
    assert any(name.startswith("optimizer/third.") for name in a) or "optimizer/steps" in a
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], strict=True, err_msg=name)
    ta, tb = metadata(whole)["training"], metadata(resumed)["training"]
    assert (ta["epochs_done"], ta["epochs"]) == (tb["epochs_done"], tb["epochs"]) == (7, 7)
    assert {**ta["settings"], **moved} == tb["settings"]


CASES = {
    "adam": (*SMALL,),
    "adam-amsgrad-float64-smoothing": (*SMALL, "--amsgrad", "--dtype", "float64", "--label-smoothing", "0.1"),
    "sgd-momentum-nesterov": (*SMALL, "--optimizer", "sgd", "--lr", "0.05", "--momentum", "0.9",
                              "--nesterov"),
    "adamw-no-decay": (*SMALL, "--optimizer", "adamw", "--weight-decay", "0.05", "--no-decay", "bias"),
    "rmsprop-centered": (*SMALL, "--optimizer", "rmsprop", "--centered", "--momentum", "0.5", "--lr",
                         "0.002"),
    "adagrad-step-schedule": (*SMALL, "--optimizer", "adagrad", "--lr-schedule", "step:2:0.5"),
    "clipped": (*SMALL, "--max-grad-norm", "0.05"),
    "value-clipped": (*SMALL, "--max-grad-value", "0.02", "--optimizer", "sgd", "--lr", "0.5"),
    "frozen-clipped-no-decay": (*SMALL, "--freeze", r"^0\.", "--max-grad-norm", "0.05", "--optimizer",
                                "adamw", "--no-decay", "bias"),
    "diabetes-regression": ("--dataset", "diabetes", "--hidden", "8", "--batch-size", "64"),
    "typed-graph": (*SMALL, "--execution", "typed-graph", "--optimizer", "sgd", "--momentum", "0.5"),
    "transformer-fast-cpu": ("--dataset", "digits", "--model", "transformer", "--hidden", "8", "--batch-size",
                             "256", "--profile", "fast_cpu", "--no-decay", "ln", "--optimizer", "adamw"),
}


@pytest.mark.parametrize("argv", CASES.values(), ids=CASES.keys())
def test_a_run_saved_after_4_epochs_and_resumed_to_7_equals_the_7_epoch_run(capsys, tmp_path, argv):
    whole, first, resumed = tmp_path / "whole.npz", tmp_path / "first.npz", tmp_path / "resumed.npz"
    whole_lines = ok(capsys, *argv, "--epochs", "7", "--save", str(whole),
                     "--report-json", str(tmp_path / "w.json"))
    ok(capsys, *argv, "--epochs", "4", "--save", str(first))
    assert metadata(first)["training"]["epochs_done"] == 4
    lines = ok(capsys, "--resume", str(first), "--epochs", "7", "--save", str(resumed),
               "--report-json", str(tmp_path / "r.json"))
    assert_same_run(whole, resumed)
    w, r = (json.loads((tmp_path / name).read_text()) for name in ("w.json", "r.json"))
    assert r["losses"] == w["losses"][4:] and len(r["losses"]) == 3
    metric = "test_mse" if "diabetes" in argv else "test_accuracy"
    assert r[metric] == w[metric]
    if "--max-grad-norm" in argv:
        assert r["grad_norms"] == w["grad_norms"][4:]
    assert (r["resumed_from"], r["epochs_before"], r["epochs"]) == (str(first), 4, 7)
    assert "resumed_from" not in w and "interrupted" not in w
    # the header says where the run resumed; the epoch lines go on numbering, as the whole run's
    assert lines[2] == f"resumed_from={first} epochs_before=4 steps_before={4 * steps(argv)}"
    assert [line for line in lines if line.startswith("epoch ")] == [
        line for line in whole_lines if line.startswith(("epoch   5/", "epoch   6/", "epoch   7/"))
    ]
    assert lines[:2] == whole_lines[:2]  # the same settings (epochs=7)


def steps(argv: tuple[str, ...]) -> int:
    """Optimizer steps per epoch of a case (iris: 120 rows; diabetes: 353; digits: 1437)."""
    rows = {"iris": 120, "diabetes": 353, "digits": 1437}[argv[argv.index("--dataset") + 1]]
    batch = int(argv[argv.index("--batch-size") + 1]) if "--batch-size" in argv else 32
    return -(-rows // batch)


def test_a_csv_run_resumes_and_a_moved_file_is_found_by_its_data(capsys, tmp_path):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((50, 5))
    labels = np.array(["low", "high"])[(x[:, 0] + x[:, 1] > 0).astype(int)]
    path = tmp_path / "rows.csv"
    path.write_text("kind," + ",".join(f"f{i}" for i in range(5)) + "\n" + "".join(
        f"{label}," + ",".join(f"{v:.5f}" for v in row) + "\n" for label, row in zip(labels, x, strict=True)
    ))
    argv = ("--dataset", str(path), "--label-column", "kind", "--hidden", "6", "--batch-size", "8")
    whole, first, resumed = tmp_path / "whole.npz", tmp_path / "first.npz", tmp_path / "resumed.npz"
    ok(capsys, *argv, "--epochs", "7", "--save", str(whole))
    ok(capsys, *argv, "--epochs", "4", "--save", str(first))
    moved = path.rename(tmp_path / "moved.csv")  # the recorded path no longer exists
    code, _, err = cli(capsys, "train", "--resume", str(first), "--epochs", "7")
    assert (code, err) == (2, f"error: dataset file not found: {path} (resuming {first}: if the run's CSV "
                           "file moved, give --dataset NEW_PATH; its data must hash as the run's did)\n")
    # the same settings given again (other spellings of the same values) are no conflict
    ok(capsys, "--resume", str(first), "--epochs", "7", "--save", str(resumed), "--dataset", str(moved),
       "--label-column", "kind", "--hid=6", "--batch-size", "08", "--lr", "5e-3")
    assert_same_run(whole, resumed, dataset=str(moved))  # the new checkpoint names the file as moved
    # another file of that shape is not the run's data
    moved.write_text(moved.read_text().replace("0.", "1.", 1))
    code, _, err = cli(capsys, "train", "--resume", str(first), "--epochs", "7", "--dataset", str(moved))
    assert code == 2
    assert re.fullmatch(  # review188 F2: how they differ (the values as this machine sums them)
        re.escape(f"error: the data of --dataset {moved} differ from those the run in {first} trained on (")
        + OTHER_TRAINING_ROWS
        + re.escape("): resume with the data it was trained on\n"), err), err


def test_a_run_resumes_twice_and_in_place(capsys, tmp_path):
    whole, ckpt = tmp_path / "whole.npz", tmp_path / "run.npz"
    ok(capsys, *SMALL, "--epochs", "7", "--save", str(whole))
    ok(capsys, *SMALL, "--epochs", "2", "--save", str(ckpt))
    ok(capsys, "--resume", str(ckpt), "--epochs", "5", "--save", str(ckpt))  # overwrites what it read
    lines = ok(capsys, "--resume", str(ckpt), "--epochs", "7", "--save", str(ckpt))
    assert lines[2].startswith(f"resumed_from={ckpt} epochs_before=5 ")
    assert_same_run(whole, ckpt)


@pytest.mark.parametrize("schedule", ["cosine", "warmup_cosine:5"])
def test_ctrl_c_saves_the_run_that_resumes_under_an_annealing_schedule(
    capsys, tmp_path, monkeypatch, schedule
):
    argv = (*SMALL, "--lr-schedule", schedule, "--epochs", "7", "--max-grad-norm", "1.0")
    # a blank in the name: the hint quotes it for the shell (review44 F6)
    whole, stopped, resumed = tmp_path / "whole.npz", tmp_path / "stopped run.npz", tmp_path / "resumed.npz"
    ok(capsys, *argv, "--save", str(whole), "--report-json", str(tmp_path / "w.json"))
    with monkeypatch.context() as patch:
        interrupt_during_epoch(patch, 4)
        code, out, err = cli(capsys, "train", *argv, "--save", str(stopped),
                             "--report-json", str(tmp_path / "s.json"))
    assert code == 130
    assert err == (
        "note: Ctrl-C: the run stops at the end of this epoch, then tests and saves the model; Ctrl-C again "
        "stops at once, saving nothing\n"
        f"note: interrupted after epoch 4/7; continue with: torchlean train --resume '{stopped}' "
        f"--save '{stopped}'\n"
    )
    epochs = [line.split()[1] for line in out.splitlines() if line.startswith("epoch ")]
    assert epochs == ["1/7", "2/7", "3/7", "4/7"]
    assert out.splitlines()[-1] == f"saved: {stopped}"
    stopped_record = json.loads((tmp_path / "s.json").read_text())
    assert stopped_record["interrupted"] is True and len(stopped_record["losses"]) == 4
    assert (metadata(stopped)["training"]["epochs_done"], metadata(stopped)["training"]["epochs"]) == (4, 7)
    # another total would bend the curve the first 4 epochs ran on
    code, _, err = cli(capsys, "train", "--resume", str(stopped), "--epochs", "9")
    assert code == 2
    assert err == (
        f"error: --lr-schedule {schedule} anneals over the run's total of 7 epochs (the checkpoint's "
        "--epochs), and its first 4 epochs ran on that curve; --epochs 9 would change the rates of the "
        "rest, a run no uninterrupted one equals: resume with --epochs 7 (or leave it out), or train a new "
        "run\n"
    )
    lines = ok(capsys, "--resume", str(stopped), "--save", str(resumed),
               "--report-json", str(tmp_path / "r.json"))
    assert lines[1].endswith(f"lr_schedule={schedule} max_grad_norm=1.0 epochs=7 batch_size=32 seed=0")
    assert_same_run(whole, resumed)
    w, s, r = (json.loads((tmp_path / n).read_text()) for n in ("w.json", "s.json", "r.json"))
    assert s["losses"] + r["losses"] == w["losses"] and s["grad_norms"] + r["grad_norms"] == w["grad_norms"]
    assert r["test_accuracy"] == w["test_accuracy"]


def test_ctrl_c_in_the_last_epoch_leaves_a_complete_run(capsys, tmp_path, monkeypatch):
    """review28 F1: the run ends by itself after the epoch the Ctrl-C came in: exit 0, no
    --resume hint (it would be refused), no ``interrupted`` in the record; the same bits as a run
    without the Ctrl-C."""
    whole, stopped = tmp_path / "whole.npz", tmp_path / "stopped.npz"
    ok(capsys, *SMALL, "--epochs", "3", "--save", str(whole))
    with monkeypatch.context() as patch:
        interrupt_during_epoch(patch, 3)
        code, out, err = cli(capsys, "train", *SMALL, "--epochs", "3", "--save", str(stopped),
                             "--report-json", str(tmp_path / "s.json"))
    assert code == 0 and out.splitlines()[-1] == f"saved: {stopped}"
    assert err.endswith("note: Ctrl-C came in epoch 3/3, the run's last: the run is complete (nothing to "
                        "resume)\n")
    assert "interrupted" not in json.loads((tmp_path / "s.json").read_text())
    for name, value in arrays(whole).items():
        np.testing.assert_array_equal(arrays(stopped)[name], value, strict=True, err_msg=name)


@pytest.mark.parametrize("schedule", ["cosine", "warmup_cosine:5"])
def test_a_complete_run_under_an_annealing_schedule_is_not_extended(capsys, tmp_path, schedule):
    """review28 F2: the advice names the way that works (a new run), not two refused ones."""
    path = tmp_path / "c.npz"
    ok(capsys, *SMALL, "--lr-schedule", schedule, "--epochs", "2", "--save", str(path))
    assert refused(capsys, "--resume", str(path), "--epochs", "6") == (
        f"the run in {path} is complete (2 of 2 epochs) and its --lr-schedule {schedule} annealed over "
        "those 2 epochs: a longer run would need another curve from its first epoch, which no resumed run "
        "follows; train a new run with --epochs 6"
    )
    assert refused(capsys, "--resume", str(path)) == (  # review29 F2: without --epochs too
        f"the run in {path} is complete (2 of 2 epochs) and its --lr-schedule {schedule} annealed over "
        "those 2 epochs, so it is not extended: train a new run"
    )


def test_a_second_ctrl_c_stops_at_once_and_saves_nothing(capsys, tmp_path, monkeypatch):
    interrupt_during_epoch(monkeypatch, 2, times=2)
    code, out, err = cli(capsys, "train", *SMALL, "--epochs", "4", "--save", str(tmp_path / "x.npz"))
    assert code == 130 and err.endswith(
        "note: Ctrl-C again: the run stops at once, and nothing is saved\nerror: interrupted\n"
    ) and "saved:" not in out
    assert not (tmp_path / "x.npz").exists()
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # the handler is put back


def test_two_ctrl_c_inside_one_backward_stop_the_run_at_once(capsys, tmp_path, monkeypatch):
    """review232 F2: with SIGINT held back for a whole backward, two presses inside one counted as
    one, and the run finished, tested and saved. Both are sent from inside the walk of the second
    epoch's first step (tape._propagate), where SIGINT is not held back."""
    from torchlean.autograd import tape

    original = tape._propagate
    sent = []

    def propagate(*args: Any) -> Any:
        if not sent and getattr(propagate, "calls", 0) >= 1:
            sent.append(True)
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
        propagate.calls = getattr(propagate, "calls", 0) + 1  # type: ignore[attr-defined]
        return original(*args)

    monkeypatch.setattr(tape, "_propagate", propagate)
    code, out, err = cli(capsys, "train", *SMALL, "--epochs", "4", "--save", str(tmp_path / "x.npz"))
    assert sent and code == 130 and err.endswith(
        "note: Ctrl-C again: the run stops at once, and nothing is saved\nerror: interrupted\n"
    ), err
    assert "saved:" not in out and not (tmp_path / "x.npz").exists()


def _sigint_in(monkeypatch: pytest.MonkeyPatch, when: str) -> None:
    """Send this process SIGINT as ``train`` starts its test pass (``"testing"``) or once its
    checkpoint is written (``"saved"``: when the record's digest of its weights is taken)."""
    import torchlean.cli.train as train_module

    owner, name = ((train_module._imbalance, "test_metrics") if when == "testing"
                   else (train_module.provenance, "weights_sha256"))
    original = getattr(owner, name)

    def interrupted(*args: Any) -> Any:
        signal.raise_signal(signal.SIGINT)
        return original(*args)

    monkeypatch.setattr(owner, name, interrupted)


@pytest.mark.parametrize("when", ["testing", "saved"])
def test_a_second_ctrl_c_while_the_run_tests_and_saves_says_what_is_saved(
    capsys, tmp_path, monkeypatch, when
):
    """review70 F5: the second Ctrl-C, landing after the epoch the first one came in (while the
    run tests its model, or once the checkpoint is written), gets the note too, which names the
    checkpoint when it is written already."""
    interrupt_during_epoch(monkeypatch, 2)
    target = tmp_path / "x.npz"
    _sigint_in(monkeypatch, when)
    kept = "nothing is saved" if when == "testing" else f"{target} is saved already"
    code, out, err = cli(capsys, "train", *SMALL, "--epochs", "4", "--save", str(target))
    assert code == 130
    assert err.endswith(f"note: Ctrl-C again: the run stops at once, and {kept}\nerror: interrupted\n")
    assert "saved:" not in out
    assert target.exists() == (when == "saved")
    if when == "saved":
        assert metadata(target)["training"]["epochs_done"] == 2  # the interrupted run, resumable


@pytest.mark.parametrize("when", ["testing", "saved"])
def test_a_first_ctrl_c_while_the_run_tests_and_saves_lets_it_finish(capsys, tmp_path, monkeypatch, when):
    """review75 F1: after the last epoch, a first Ctrl-C stopped at once (the trained run lost while
    it was being tested, or saved without a word); now the run tests and saves, says so, and is
    complete (exit 0), the same bits as a run without the Ctrl-C."""
    whole, target = tmp_path / "whole.npz", tmp_path / "x.npz"
    ok(capsys, *SMALL, "--epochs", "3", "--save", str(whole))
    _sigint_in(monkeypatch, when)
    note = (
        "note: Ctrl-C: the run stops once it has tested and saved the model; Ctrl-C again stops at once, "
        "saving nothing\n" if when == "testing" else
        f"note: Ctrl-C: {target} is saved; the run stops once its report is written; Ctrl-C again stops now\n"
    )
    code, out, err = cli(capsys, "train", *SMALL, "--epochs", "3", "--save", str(target))
    assert code == 0 and out.splitlines()[-1] == f"saved: {target}"
    assert err == note + (
        "note: Ctrl-C came after epoch 3/3, the run's last, while the run tested and saved: the run is "
        "complete (nothing to resume)\n"
    )
    for name, value in arrays(whole).items():
        np.testing.assert_array_equal(arrays(target)[name], value, strict=True, err_msg=name)


def test_an_ignored_sigint_stays_ignored_with_save(capsys, tmp_path, monkeypatch):
    """review31 F5: a shell starts background jobs with SIGINT ignored; a run with --save ignores
    it then too (as one without --save does), instead of installing its Ctrl-C handler."""
    interrupt_during_epoch(monkeypatch, 2)
    previous = signal.signal(signal.SIGINT, signal.SIG_IGN)
    try:
        code, out, err = cli(capsys, "train", *SMALL, "--epochs", "4", "--save", str(tmp_path / "x.npz"))
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    finally:
        signal.signal(signal.SIGINT, previous)
    assert code == 0 and "Ctrl-C" not in err and "epoch   4/4" in out
    assert (tmp_path / "x.npz").exists()


def test_ctrl_c_without_save_stops_at_once(capsys, monkeypatch):
    interrupt_during_epoch(monkeypatch, 2)
    code, out, err = cli(capsys, "train", *SMALL, "--epochs", "4")
    assert (code, err) == (130, "error: interrupted\n") and "epoch   2/4" not in out


def test_a_resumed_run_can_go_past_its_planned_total_under_a_step_schedule(capsys, tmp_path):
    whole, first, resumed = tmp_path / "whole.npz", tmp_path / "first.npz", tmp_path / "resumed.npz"
    argv = (*SMALL, "--lr-schedule", "step:3:0.5")
    ok(capsys, *argv, "--epochs", "7", "--save", str(whole))
    ok(capsys, *argv, "--epochs", "4", "--save", str(first))
    code, _, err = cli(capsys, "train", "--resume", str(first))  # the planned 4 are done
    assert (code, err) == (2, f"error: the run in {first} is complete (4 of 4 epochs): give --epochs N "
                               "with N above 4 (--epochs is the run's total) to train on\n")
    ok(capsys, "--resume", str(first), "--epochs", "7", "--save", str(resumed))
    assert_same_run(whole, resumed)


# ------------------------------------------------------------------------------ refusals


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris run of 3 epochs with sgd, momentum and clipping."""
    path = tmp_path_factory.mktemp("resume") / "run.npz"
    assert main(["train", *SMALL, "--epochs", "3", "--optimizer", "sgd", "--momentum", "0.9",
                 "--max-grad-norm", "2", "--save", str(path)]) == 0
    return path


def refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, "train", *argv)
    assert code == 2 and out == "" and err.startswith("error: ") and err.count("\n") == 1, (code, out, err)
    assert "Traceback" not in err
    return err.removeprefix("error: ").rstrip("\n")


@pytest.mark.parametrize("epochs", ["3", "2", "1"])
def test_a_total_not_above_the_epochs_done_is_refused(capsys, saved, epochs):
    assert refused(capsys, "--resume", str(saved), "--epochs", epochs) == (
        f"--epochs {epochs} is not above the 3 epochs the run in {saved} has done: --epochs is the run's "
        "total, as torch Lightning's max_epochs; give more than 3"
    )


def test_conflicting_settings_are_refused_naming_both_values(capsys, saved):
    message = refused(capsys, "--resume", str(saved), "--epochs", "5", "--lr", "0.01", "--nesterov",
                      "--max-grad-norm=3", "--dataset", "wine", "--weight-decay", "0.1", "--momentum", "0.9")
    assert message == (
        f"--resume {saved} continues the run with the checkpoint's settings; --dataset wine differs from the "
        "checkpoint's iris; --lr 0.01 differs from the checkpoint's 0.005; --nesterov on differs from the "
        "checkpoint's off; --weight-decay 0.1 differs from the checkpoint's 0.0 (not given: the default); "
        "--max-grad-norm 3.0 differs from the checkpoint's 2.0 (leave out the option, or train a new run "
        "without --resume)"
    )  # --momentum 0.9 is the checkpoint's


@pytest.fixture(scope="module")
def adam(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris run of 1 epoch with adam (the default optimizer)."""
    path = tmp_path_factory.mktemp("resume") / "adam.npz"
    assert main(["train", *SMALL, "--epochs", "1", "--save", str(path)]) == 0
    return path


def test_an_option_the_checkpoints_optimizer_does_not_take_is_refused_as_in_a_fresh_run(capsys, adam):
    """review28 F10: ``--momentum 0`` with an adam run is refused as a fresh run refuses it (adam
    takes no momentum), not as differing from a momentum the checkpoint did "not give"; so are
    the other options adam does not take, each named as a fresh run names it; one it takes
    (``--amsgrad``) differs from the checkpoint's as before."""
    message = refused(capsys, "--resume", str(adam), "--epochs", "8", "--momentum", "0")
    assert message == (
        f"--resume {adam} continues the run with the checkpoint's settings; --momentum applies to "
        "--optimizer sgd or rmsprop, and the checkpoint's --optimizer is adam (leave out the option, or "
        "train a new run without --resume)"
    )
    message = refused(capsys, "--resume", str(adam), "--epochs", "8", "--nesterov", "--centered", "--amsgrad",
                      "--momentum", "0.5")
    clauses = message.split("; ", 1)[1].removesuffix(" (leave out the option, or train a new run without "
                                                       "--resume)").split("; ")
    assert clauses == [
        "--momentum applies to --optimizer sgd or rmsprop, and the checkpoint's --optimizer is adam",
        "--nesterov applies to --optimizer sgd only, and the checkpoint's --optimizer is adam",
        "--centered applies to --optimizer rmsprop only, and the checkpoint's --optimizer is adam",
        "--amsgrad on differs from the checkpoint's off",
    ]
    given = (("--momentum", "0.5"), ("--nesterov",), ("--centered",))
    for argv, clause in zip(given, clauses, strict=False):
        fresh = refused(capsys, *SMALL, "--epochs", "1", *argv)
        assert fresh == clause.replace(", and the checkpoint's --optimizer is adam", ", got --optimizer adam")


def with_arrays(source: Path, target: Path, changes: dict[str, Any]) -> Path:
    """``source`` with some of its arrays replaced (a hand edit; numpy writes the archive)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    assert set(changes) <= set(entries)
    entries.update(changes)
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_a_checkpoint_whose_state_is_not_finite_resumes_with_a_warning_naming_it(capsys, adam, tmp_path):
    """review28 F10: NaN Adam moments (or NaN or infinite weights) resume, as --save saves such
    weights, but not silently: a warning names each array (as the archive does) and its count."""
    saved = arrays(adam)
    second = np.full_like(saved["optimizer/second.0"], np.nan)
    weight = saved["weights/4.bias"].copy()  # the output layer's 3 biases
    weight[1] = np.inf
    edited = with_arrays(adam, tmp_path / "nan.npz", {"optimizer/second.0": second, "weights/4.bias": weight})
    code, out, err = cli(capsys, "train", "--resume", str(edited), "--epochs", "2")
    assert code == 0 and out.splitlines()[2].startswith(f"resumed_from={edited} ")
    assert err.splitlines()[0] == (
        f"warning: checkpoint {edited} holds values that are not finite (NaN or infinite) in weights/4.bias "
        f"(1 of 3 values), optimizer/second.0 ({second.size} of {second.size} values): the run it saved "
        "diverged, or the file was edited; the resumed run trains on from them, and its losses will likely "
        "not be finite"
    )
    many = {f"optimizer/{kind}.{i}": np.full_like(saved[f"optimizer/{kind}.{i}"], np.nan)
            for kind in ("first", "second") for i in range(6)}
    edited = with_arrays(adam, tmp_path / "many.npz", many)
    code, _, err = cli(capsys, "train", "--resume", str(edited), "--epochs", "2")
    first = err.splitlines()[0]
    assert code == 0 and first.startswith(
        f"warning: checkpoint {edited} holds values that are not finite (NaN or infinite) in "
        "optimizer/first.0 (32 of 32 values), optimizer/second.0 (32 of 32 values), optimizer/first.1 "
        "(8 of 8 values) and 9 more arrays: the run it saved diverged"
    )
    assert err.count("warning: checkpoint ") == 1


@pytest.mark.parametrize(
    ("argv", "shown"),
    [
        (("--execution", "typed-graph"), "--execution typed-graph differs from the checkpoint's eager"),
        (("--dtype", "float64"), "--dtype float64 differs from the checkpoint's float32"),
        (("--seed", "1"), "--seed 1 differs from the checkpoint's 0"),
        (("--batch", "16"), "--batch-size 16 differs from the checkpoint's 32"),  # a prefix argparse takes
        (("--lr-schedule", "cosine"), "--lr-schedule cosine differs from the checkpoint's constant"),
        (("--header",), "--header was not given to the checkpoint's run"),  # review36 F10
        (("--no-header",), "--no-header was not given to the checkpoint's run"),
        (("--profile", "fast_cpu"), "--profile fast_cpu differs from the checkpoint's checked_cpu"),
        (("--model", "cnn"), "--model cnn differs from the checkpoint's mlp"),
    ],
)
def test_each_setting_is_checked(capsys, saved, argv, shown):
    assert f"; {shown} (leave out" in refused(capsys, "--resume", str(saved), "--epochs", "4", *argv)


def test_the_free_options_and_defaults_spelt_out_are_taken(capsys, saved, tmp_path):
    code, out, err = cli(capsys, "train", "--resume", str(saved), "--epochs", "4", "--weight-decay", "0",
                         "--torch-threads", "1", "--report-json", str(tmp_path / "r.json"), "--kernel-times")
    lines = out.splitlines()
    saves_nothing, threads = err.splitlines()  # taken, with the notes that apply (review188 F6)
    assert code == 0 and saves_nothing.startswith("note: this run saves nothing (no --save): "), err
    assert threads.startswith("note: --torch-threads 1 has no effect: profile checked_cpu runs no torch"), err
    assert lines[2].startswith(f"resumed_from={saved} epochs_before=3 ")
    assert lines[3].startswith("epoch   4/4 ")
    assert "kernel times of the training epochs (5 capsules, most time first):" in lines


def test_a_checkpoint_without_training_state_is_refused_but_predicts(capsys, saved, tmp_path):
    old = checkpoint.load(saved)
    bare = tmp_path / "bare.npz"
    fields = {name: getattr(old, name) for name in checkpoint.Checkpoint.__slots__ if name != "training"}
    checkpoint.save(bare, checkpoint.Checkpoint(**fields))  # as built in Python
    assert refused(capsys, "--resume", str(bare)) == (
        f"checkpoint {bare} holds no training state (version 2; written by an older torchlean or built in "
        "Python): --resume continues a run saved by torchlean train --save; torchlean predict still reads it"
    )
    assert cli(capsys, "predict", str(bare), "--dataset", "iris")[0] == 0


def version_1_file(source: Path, target: Path) -> Path:
    """``source`` as torchlean wrote checkpoints before format 2: version 1 metadata without the
    ``training``, ``dropout``, ``test_fraction``, ``split_seed``, ``torch_threads``,
    ``environment``, ``capsules_order`` and ``capsules`` fields and no ``optimizer/`` entries (numpy
    writes the archive, not torchlean)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files if not name.startswith("optimizer/")}
    meta = json.loads(str(entries["metadata"]))
    del meta["training"], meta["dropout"], meta["test_fraction"]
    del meta["split_seed"], meta["torch_threads"], meta["environment"]  # version 2 fields too (review62)
    del meta["capsules_order"], meta["capsules"]  # and review108 F6's
    meta["version"] = 1
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_a_version_1_checkpoint_still_predicts_and_is_refused_for_resume(capsys, saved, tmp_path):
    old = version_1_file(saved, tmp_path / "v1.npz")
    with zipfile.ZipFile(old) as archive:
        assert not any("optimizer" in name for name in archive.namelist())
    loaded = checkpoint.load(old)
    assert (loaded.version, loaded.training) == (1, None)
    code, v1_out, err = cli(capsys, "predict", str(old), "--dataset", "iris")
    assert code == 0, err
    code, v2_out, _ = cli(capsys, "predict", str(saved), "--dataset", "iris")
    assert code == 0 and v1_out == v2_out and v1_out
    message = refused(capsys, "--resume", str(old))
    assert message.startswith(f"checkpoint {old} holds no training state (version 1;")
    again = tmp_path / "again.npz"
    checkpoint.save(again, loaded)  # a version 1 checkpoint is written back as version 1
    assert metadata(again)["version"] == 1 and "training" not in metadata(again)


def test_files_that_are_not_checkpoints_are_refused_without_a_traceback(capsys, saved, tmp_path):
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(saved.read_bytes()[:300])
    text = tmp_path / "notes.txt"
    text.write_text("epochs: 4\n")
    assert refused(capsys, "--resume", str(text)) == f"{text}: not a numpy .npz archive (not a zip file)"
    assert refused(capsys, "--resume", str(corrupt)) == (  # review43 F7: named as cut short
        f"{corrupt}: a truncated or damaged .npz archive (it starts as a zip file but its end is missing: an "
        "interrupted copy or a full disk?)"
    )
    missing = tmp_path / "none.npz"
    assert refused(capsys, "--resume", str(missing)) == f"checkpoint file not found: {missing}"
    assert refused(capsys, "--resume", str(saved), "--report-json", str(saved)) == (
        f"--report-json {saved} is the checkpoint --resume {saved}: writing it would destroy that input; "
        "give another path"
    )
    assert saved.stat().st_size > 300  # untouched


NULL = object()
"""A setting's value for :func:`rewrite_training` that records JSON ``null`` (an option not given)."""


def rewrite_training(source: Path, target: Path, **changes: Any) -> Path:
    """``source`` with its training metadata's settings changed (``None`` removes one, :data:`NULL`
    records it as not given)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    for name, value in changes.items():
        if value is None:
            del meta["training"]["settings"][name]
        else:
            meta["training"]["settings"][name] = None if value is NULL else value
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_recorded_settings_are_read_by_the_options_own_rules(capsys, saved, tmp_path):
    bad = rewrite_training(saved, tmp_path / "bad.npz", batch_size="0")
    assert refused(capsys, "--resume", str(bad), "--epochs", "4") == (
        f"checkpoint {bad}: its setting --batch-size '0' is refused: expected a positive integer, got 0"
    )
    dtype = rewrite_training(saved, tmp_path / "dtype.npz", dtype="f16")  # --dtype's own type refuses it
    assert refused(capsys, "--resume", str(dtype), "--epochs", "4") == (
        f"checkpoint {dtype}: its setting --dtype 'f16' is refused: expected float32 or float64, got 'f16'"
    )
    flag = rewrite_training(saved, tmp_path / "flag.npz", nesterov="yes")
    assert refused(capsys, "--resume", str(flag), "--epochs", "4") == (
        f"checkpoint {flag}: its setting --nesterov must be true, false or null, got 'yes'"
    )
    # names the train parser takes as any text, checked later: refused here, naming the checkpoint
    names = (("optimizer", "lbfgs", "sgd, adam, adamw, rmsprop, adagrad"),
             ("execution", "lazy", "eager, typed-graph"))
    for dest, value, accepted in names:
        named = rewrite_training(saved, tmp_path / f"{dest}.npz", **{dest: value})
        assert refused(capsys, "--resume", str(named), "--epochs", "4") == (
            f"checkpoint {named}: its setting --{dest} {value!r} is not one of {accepted}"
        )
    assert "its setting --profile 'nope' is not one of checked_cpu, " in refused(
        capsys, "--resume", str(rewrite_training(saved, tmp_path / "p.npz", profile="nope")), "--epochs", "4"
    )
    newer = rewrite_training(saved, tmp_path / "newer.npz", mixup="0.2")
    assert refused(capsys, "--resume", str(newer), "--epochs", "4") == (
        f"checkpoint {newer} records settings this torchlean does not know: mixup (written by a newer "
        "torchlean?)"
    )
    nodigest = rewrite_training(saved, tmp_path / "nodigest.npz", data_sha256=None)
    assert "lack the data digest" in refused(capsys, "--resume", str(nodigest), "--epochs", "4")
    # review106 L8: a training state built in Python (TrainingState(settings={})) has no settings at all
    every = dict.fromkeys(metadata(saved)["training"]["settings"])
    built = rewrite_training(saved, tmp_path / "built.npz", **every)
    assert metadata(built)["training"]["settings"] == {}
    assert refused(capsys, "--resume", str(built), "--epochs", "4") == (
        f"checkpoint {built} holds a training state without torchlean train's settings (built in Python: "
        "TrainingState(settings={})): --resume continues a run saved by torchlean train --save; resume this "
        "one in Python (trainer.model.load_state, trainer.optimizer.load_state_dict, epochs_done, "
        "random_counter); torchlean predict still reads it"
    )
    predicted = tmp_path / "p.csv"
    code, _, err = cli(capsys, "predict", str(built), "--dataset", "iris", "--output", str(predicted))
    assert code == 0, err
    # an option the checkpoint does not record (newer than it) takes its default (review115 F4:
    # --label-smoothing, deleted here before, is one every checkpoint records: see below)
    older = rewrite_training(saved, tmp_path / "older.npz", max_grad_value=None, dropout=None, freeze=None)
    ok(capsys, "--resume", str(older), "--epochs", "4")


NEWER_THAN_RESUME = (
    "delimiter", "dropout", "freeze", "max_grad_value", "min_delta", "monitor", "test_fraction",
)
"""The settings of options added after --resume first recorded settings (commit ba0d55c, whose
train parser had the 24 others): checkpoints written before them lack them legitimately."""


def test_an_edited_lr_setting_that_the_optimizer_state_contradicts_is_refused(capsys, tmp_path, monkeypatch):
    """review139 F2: with the settings' lr edited 0.02 -> 0.01, --resume showed lr=0.01 in its
    header and trained at the optimizer state's 0.02 (the same losses as the intact run). Refused,
    naming both rates, with --lr given too; the same rate spelled otherwise resumes; a scheduled
    run's checkpoint (its rate set back to the base when the fit ended) resumes."""
    saved = tmp_path / "lr02.npz"
    ok(capsys, *SMALL, "--epochs", "2", "--lr", "0.02", "--save", str(saved))
    edited = rewrite_training(saved, tmp_path / "edited.npz", lr="0.01")
    expected = (
        f"checkpoint {edited}: its training settings' --lr 0.01 and its optimizer state's lr 0.02 differ "
        "(one of them was edited): the run would resume at 0.02 while its header showed --lr 0.01, so "
        "--resume cannot continue it; train a new run (torchlean predict still reads it)"
    )
    assert refused(capsys, "--resume", str(edited), "--epochs", "3") == expected
    assert refused(capsys, "--resume", str(edited), "--epochs", "3", "--lr", "0.01") == expected
    respelled = rewrite_training(saved, tmp_path / "respelled.npz", lr="2e-2")
    ok(capsys, "--resume", str(respelled), "--epochs", "3")
    cosine = tmp_path / "cosine.npz"  # stopped by Ctrl-C after epoch 2 of 4, mid-schedule
    interrupt_during_epoch(monkeypatch, 2)
    code, _, _ = cli(capsys, "train", *SMALL, "--epochs", "4", "--lr", "0.02", "--lr-schedule", "cosine",
                     "--save", str(cosine))
    monkeypatch.undo()
    assert code == 130 and metadata(cosine)["training"]["epochs_done"] == 2
    ok(capsys, "--resume", str(cosine))


def test_settings_every_checkpoint_records_are_required_the_newer_ones_default(capsys, tmp_path):
    """review115 F4: with ``lr`` deleted from a run saved with --lr 0.02, --resume showed the default
    0.005 in its header while the optimizer state trained at 0.02. A setting every checkpoint
    --save wrote records (the options --resume first recorded) is refused when missing, each
    named; the options added since take their defaults, as in a checkpoint older than them, and
    such a run resumes bit for bit as the intact one."""
    saved = tmp_path / "lr02.npz"
    ok(capsys, *SMALL, "--epochs", "2", "--lr", "0.02", "--save", str(saved))
    deleted = rewrite_training(saved, tmp_path / "del.npz", lr=None)
    assert refused(capsys, "--resume", str(deleted), "--epochs", "3") == (
        f"checkpoint {deleted}: its training settings lack --lr, which every torchlean train --save records "
        "(given or not), so the run's settings are not known (a checkpoint edited by hand?): --resume cannot "
        "continue it; train a new run (torchlean predict still reads it)"
    )
    recorded = set(metadata(saved)["training"]["settings"]) - {"data_sha256"}
    assert recorded - set(NEWER_THAN_RESUME) == resume.ALWAYS_RECORDED
    assert set(NEWER_THAN_RESUME) < recorded and len(resume.ALWAYS_RECORDED) == 24
    for dest in sorted(resume.ALWAYS_RECORDED):
        edited = rewrite_training(saved, tmp_path / f"{dest}.npz", **{dest: None})
        option = "--header/--no-header" if dest == "header" else f"--{dest.replace('_', '-')}"
        assert f"its training settings lack {option}, which every" in refused(
            capsys, "--resume", str(edited), "--epochs", "3"), dest
    several = rewrite_training(saved, tmp_path / "several.npz", seed=None, lr=None, batch_size=None)
    assert refused(capsys, "--resume", str(several), "--epochs", "3").startswith(  # in --help's order
        f"checkpoint {several}: its training settings lack --batch-size, --lr, --seed, which every")
    predicted = tmp_path / "p.csv"
    code, _, err = cli(capsys, "predict", str(deleted), "--dataset", "iris", "--output", str(predicted))
    assert code == 0, err
    # the options newer than --resume, all missing at once: their defaults, the intact run's values
    older = rewrite_training(saved, tmp_path / "older.npz", **dict.fromkeys(NEWER_THAN_RESUME))
    intact, resumed = tmp_path / "intact.npz", tmp_path / "resumed.npz"
    lines = ok(capsys, "--resume", str(older), "--epochs", "3", "--save", str(resumed))
    assert "optimizer=optim.adam(lr=0.02," in lines[1]
    assert ok(capsys, "--resume", str(saved), "--epochs", "3", "--save", str(intact))[1] == lines[1]
    for name, value in arrays(intact).items():
        np.testing.assert_array_equal(arrays(resumed)[name], value, err_msg=name)


def test_a_null_setting_of_an_option_with_a_default_is_refused_as_a_missing_one(capsys, saved, tmp_path):
    """review207 F3/F4: ``train --save`` records an option with a default by its value, given or
    not; a null there (a hand edit) crashed --resume (``dataset``, ``batch_size``, ``lr_schedule``:
    TypeError, AttributeError) or was refused as if the user had given it (``unknown model None``),
    or, for ``test_fraction``, as settings that "predate --test-fraction". Each is refused naming
    the checkpoint and the options; a null of an option without a default (``label_column``, not
    given) is the run's own and resumes."""
    parser = next(a for a in build_parser()._actions if isinstance(a.choices, dict)).choices["train"]
    actions = resume._settings(parser)
    defaulted = [dest for dest, action in actions.items() if action.default is not None]
    assert {"dataset", "batch_size", "lr_schedule", "model", "test_fraction", "seed"} <= set(defaulted)
    for dest in defaulted:
        edited = rewrite_training(saved, tmp_path / f"{dest}.npz", **{dest: NULL})
        option = "/".join(actions[dest].option_strings)
        assert refused(capsys, "--resume", str(edited), "--epochs", "4") == (
            f"checkpoint {edited}: its training settings record {option} as null, which torchlean train "
            "--save never writes (an option with a default is recorded with its value, given or not), so "
            "the run's settings are not known (a checkpoint edited by hand?): --resume cannot continue it; "
            "train a new run (torchlean predict still reads it)"
        ), dest
    several = rewrite_training(saved, tmp_path / "several.npz", seed=NULL, model=NULL)
    assert "record --model, --seed as null," in refused(capsys, "--resume", str(several), "--epochs", "4")
    assert metadata(saved)["training"]["settings"]["label_column"] is None
    ok(capsys, "--resume", str(saved), "--epochs", "4")


def test_a_mismatched_optimizer_state_is_refused(capsys, saved, tmp_path):
    # a hand edit of the settings: sgd and plain adam keep buffers of the same names and shapes,
    # told apart by the state's kind entry; AMSGrad's third buffer is missing from it too
    for amsgrad in (False, True):  # an adam run records momentum as not given (null)
        adam = rewrite_training(saved, tmp_path / "adam.npz", optimizer="adam", momentum=NULL,
                                amsgrad=amsgrad)
        assert refused(capsys, "--resume", str(adam), "--epochs", "4") == (
            f"checkpoint {adam}: optimizer: state was saved from optimizer 'sgd', this one is 'adam' "
            "(create the optimizer from the record the state was saved from)"
        )


# ------------------------------------------------------------------------ TrainingState


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"epochs_done": -1}, r"training epochs_done must be an int >= 0, got -1"),
        ({"epochs_done": True}, r"training epochs_done must be an int >= 0, got True"),
        ({"epochs": 2}, r"must be an int >= 1 and >= epochs_done \(3\), got 2"),
        ({"epochs": 0, "epochs_done": 0}, r"must be an int >= 1 and >= epochs_done \(0\), got 0"),
        ({"optimizer": [("steps", 1)]}, r"training optimizer must be a mapping of names to arrays"),
        ({"optimizer": {"steps": 1}}, r"optimizer entry steps must be a numeric numpy array, got int"),
        ({"optimizer": {"s": np.array(["a"])}}, r"entry s must be a numeric numpy array, got <U1"),
        ({"optimizer": {"": np.zeros(1)}}, r"entry names must be non-empty strings, got ''"),
        ({"settings": {"lr": 0.1}}, r"training settings must map names to str, bool or None, got 'lr': 0.1"),
        ({"settings": None}, r"training settings must be a mapping"),
    ],
)
def test_training_state_refuses_bad_fields(changes, message):
    values: dict[str, Any] = {"epochs_done": 3, "epochs": 5, "optimizer": {"steps": np.array(9)},
                              "settings": {}}
    values.update(changes)
    with pytest.raises(CheckpointError, match=message):
        TrainingState(**values)


def test_training_state_holds_read_only_copies():
    buffer = np.zeros(3)
    settings = {"lr": "0.1"}
    state = TrainingState(epochs_done=np.int64(2), epochs=2, optimizer={"first.0": buffer}, settings=settings)
    buffer[0], settings["lr"] = 5.0, "9"
    assert state.optimizer["first.0"][0] == 0.0 and not state.optimizer["first.0"].flags.writeable
    assert state.settings["lr"] == "0.1" and type(state.epochs_done) is int
    with pytest.raises(TypeError):
        state.settings["lr"] = "1"  # type: ignore[index]


def test_a_bad_training_object_in_a_file_is_named(capsys, saved, tmp_path):
    with np.load(saved, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    meta["training"]["epochs"] = "5"
    entries["metadata"] = np.array(json.dumps(meta))
    path = tmp_path / "field.npz"
    with path.open("wb") as handle:
        np.savez(handle, **entries)
    with pytest.raises(CheckpointError, match=r"field.npz: training epochs must be an int, got '5'"):
        checkpoint.load(path)
    del meta["training"]["settings"]
    entries["metadata"] = np.array(json.dumps(meta))
    with path.open("wb") as handle:
        np.savez(handle, **entries)
    # review229 F3: the object's keys were shown as if they were its value (a list)
    with pytest.raises(CheckpointError, match=r"'training' must be an object with the fields epochs_done.*, "
                       r"got an object with the fields \['epochs', 'epochs_done'"):
        checkpoint.load(path)
    assert "Traceback" not in refused(capsys, "--resume", str(path))
    meta["training"] = {}
    entries["metadata"] = np.array(json.dumps(meta))
    with path.open("wb") as handle:
        np.savez(handle, **entries)
    with pytest.raises(CheckpointError, match=r", got an object with no fields$"):
        checkpoint.load(path)


def test_a_resumed_run_without_save_says_it_saves_nothing(capsys, tmp_path):
    """review42 F2: the Ctrl-C hint left out --save, and the resumed run it suggested trained to the
    end, saved nothing and said nothing, leaving the partly trained checkpoint; it now says so, and
    the hint names --save."""
    ckpt = tmp_path / "run.npz"
    ok(capsys, *SMALL, "--epochs", "2", "--save", str(ckpt))
    before = arrays(ckpt)
    code, out, err = cli(capsys, "train", "--resume", str(ckpt), "--epochs", "3")
    assert code == 0 and "epoch   3/3 " in out
    assert err == (
        f"note: this run saves nothing (no --save): {ckpt} keeps its 2 epoch(s); pass --save {ckpt} to "
        "update it, or --save NEW_PATH\n"
    )
    after = arrays(ckpt)
    assert before.keys() == after.keys() and all(np.array_equal(before[k], after[k]) for k in before)
    code, _, err = cli(capsys, "train", "--resume", str(ckpt), "--epochs", "3", "--save", str(ckpt))
    assert (code, err) == (0, "")
    spaced = tmp_path / "my run.npz"  # review44 F6: the path quoted to paste into a shell
    ok(capsys, *SMALL, "--epochs", "2", "--save", str(spaced))
    code, _, err = cli(capsys, "train", "--resume", str(spaced), "--epochs", "3")
    assert code == 0 and f"pass --save '{spaced}' to update it" in err


@pytest.mark.parametrize("label_column", [None, "2"])  # by name ("y") the moved file reads, and hashes, alike
@pytest.mark.parametrize("names", [("cat", "dog"), ("9", "cat")])
def test_a_resumed_run_on_data_laid_out_otherwise_is_not_told_to_pass_label_column(
    capsys, tmp_path, label_column, names
):
    """review43 F4: under --resume the fresh-run hint "if it is the label, pass --label-column y" led to a
    second refusal (--label-column is the run's setting); the message names what the run read.
    review221 F2: labels mixing numbers and names (a --task classification run) got no advice at all."""
    rows = [f"{i % 7 / 2},{i % 5},{names[i % 2]}" for i in range(40)]
    data_csv, moved = tmp_path / "data.csv", tmp_path / "moved.csv"
    data_csv.write_text("a,b,y\n" + "\n".join(rows) + "\n")
    moved.write_text("y,a,b\n" + "\n".join(",".join([r.split(",")[2], *r.split(",")[:2]]) for r in rows)
                     + "\n")
    ckpt = tmp_path / "run.npz"
    given = () if label_column is None else ("--label-column", label_column)
    given += ("--task", "classification") if names[0] == "9" else ()  # mixed labels are no task's guess
    ok(capsys, "--dataset", str(data_csv), *given, "--hidden", "8", "--epochs", "1", "--save", str(ckpt))
    where = "the last column" if label_column is None else f"its --label-column {label_column}"
    message = refused(capsys, "--resume", str(ckpt), "--dataset", str(moved), "--epochs", "2")
    # review95 M4: the text is in the run's label column y, so the hint names it; review43 F4's
    # concern holds: following the hint is not refused but continues the run (as on data.csv)
    assert message.endswith(
        f" (--resume {ckpt} reads the file as the run read its data, the label in {where}, and the run's "
        "label column y is a feature column here: if the columns were moved, pass --label-column y; else "
        "resume with the data it was trained on, laid out as they were)"
    ), message
    taken = ok(capsys, "--resume", str(ckpt), "--dataset", str(moved), "--label-column", "y", "--epochs", "2")
    oracle = ok(capsys, "--resume", str(ckpt), "--dataset", str(data_csv), "--epochs", "2")
    assert [line for line in taken if "loss=" in line] == [line for line in oracle if "loss=" in line]


def test_a_run_saved_before_the_2_53_task_rule_resumes_and_predicts_with_its_recorded_task(capsys, tmp_path):
    """review59 F1: labels at 2**53 + small integers were classes for the release before; read
    again they are a quantity, so --resume refused the unchanged file as changed data and predict
    noted that it differs. A run that inferred its task (no --task recorded) keeps the task its
    checkpoint records. The older checkpoint is made by removing --task from a run given it."""
    rng = np.random.default_rng(0)
    features = [[f"{v:.6f}" for v in rng.normal(size=3)] for _ in range(40)]
    rows = [",".join([*row, str(2**53 + 2 * (i % 3))]) for i, row in enumerate(features)]
    csv = tmp_path / "big53.csv"
    csv.write_text("a,b,c,y\n" + "\n".join(rows) + "\n")
    argv = ("--dataset", str(csv), "--hidden", "8", "--seed", "1")
    saved, whole = tmp_path / "given.npz", tmp_path / "whole.npz"
    ok(capsys, *argv, "--task", "classification", "--epochs", "2", "--save", str(saved))
    ok(capsys, *argv, "--task", "classification", "--epochs", "3", "--save", str(whole))
    older = rewrite_training(saved, tmp_path / "older.npz", task=NULL)  # recorded as not given
    assert metadata(older)["task"] == "classification"
    resumed = tmp_path / "resumed.npz"
    lines = ok(capsys, "--resume", str(older), "--epochs", "3", "--save", str(resumed))
    assert "task=classification" in lines[0]
    for name, value in arrays(whole).items():
        np.testing.assert_array_equal(arrays(resumed)[name], value, err_msg=name)
    code, out, err = cli(capsys, "predict", str(older), "--dataset", str(csv), "--split", "test")
    assert code == 0 and "differ" not in err, err
    assert len(out.splitlines()) == 1 + 8  # the header row and the 8 test rows


def _signal_during_epoch(monkeypatch: pytest.MonkeyPatch, epoch: int, signum: int) -> None:
    """Send this process ``signum`` as epoch ``epoch`` (from 1) starts."""
    original = Trainer.fit

    def fit(self: Trainer[Any, Any], *args: Any, **kwargs: Any) -> list[float]:
        if self.epochs_done == epoch - 1:
            signal.raise_signal(signum)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "fit", fit)


def test_sigterm_stops_at_the_end_of_the_epoch_saves_and_resumes(capsys, tmp_path, monkeypatch):
    """review76 F3: ``timeout``, ``kill``, systemd and Slurm send SIGTERM, whose default action
    ended the run at once, every epoch lost. With ``--save`` it now acts as Ctrl-C: the epoch
    ends, the run tests and saves, exits 143 (128 + 15); the resumed run is the uninterrupted one
    bit for bit. The default handler is back afterwards."""
    whole, stopped = tmp_path / "whole.npz", tmp_path / "stopped.npz"
    argv = (*SMALL, "--epochs", "7")
    ok(capsys, *argv, "--save", str(whole))
    with monkeypatch.context() as patch:
        _signal_during_epoch(patch, 3, signal.SIGTERM)
        code, out, err = cli(capsys, "train", *argv, "--save", str(stopped))
    assert code == 128 + signal.SIGTERM
    assert err == (
        "note: SIGTERM: the run stops at the end of this epoch, then tests and saves the model; SIGTERM "
        "again (or Ctrl-C) stops at once, saving nothing\n"
        f"note: interrupted by SIGTERM after epoch 3/7; continue with: torchlean train --resume {stopped} "
        f"--save {stopped}\n"
    )
    assert out.splitlines()[-1] == f"saved: {stopped}"
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_DFL
    ok(capsys, "--resume", str(stopped), "--save", str(stopped))
    assert_same_run(whole, stopped)


def test_a_second_sigterm_stops_at_once_with_its_exit_status(capsys, tmp_path, monkeypatch):
    """The second signal (SIGTERM after Ctrl-C here) stops at once, as a second Ctrl-C does, with
    SIGTERM's exit status, and the temporary file of nothing half-written is left behind."""
    original = Trainer.fit

    def fit(self: Trainer[Any, Any], *args: Any, **kwargs: Any) -> list[float]:
        if self.epochs_done == 1:
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGTERM)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Trainer, "fit", fit)
    code, _, err = cli(capsys, "train", *SMALL, "--epochs", "4", "--save", str(tmp_path / "x.npz"))
    assert code == 128 + signal.SIGTERM  # a SystemExit, which the CLI's caller sees as that status
    assert err.endswith("note: SIGTERM after Ctrl-C: the run stops at once, and nothing is saved\n"
                        "error: interrupted by SIGTERM\n")
    assert list(tmp_path.iterdir()) == []
    assert signal.getsignal(signal.SIGTERM) is signal.SIG_DFL


def test_a_hosts_own_sigterm_handler_is_left_alone(capsys, tmp_path, monkeypatch):
    """A program that set its own SIGTERM handler keeps it (only the default action is taken
    over): its handler runs, the run goes on."""
    seen: list[int] = []
    previous = signal.signal(signal.SIGTERM, lambda signum, frame: seen.append(signum))
    try:
        _signal_during_epoch(monkeypatch, 2, signal.SIGTERM)
        code, _, err = cli(capsys, "train", *SMALL, "--epochs", "3", "--save", str(tmp_path / "x.npz"))
    finally:
        signal.signal(signal.SIGTERM, previous)
    assert code == 0 and seen == [signal.SIGTERM] and "SIGTERM" not in err


def test_a_hung_up_terminal_is_silenced_so_the_run_goes_on_to_save(monkeypatch):
    """review78 F1: after a terminal closes (its SIGHUP), every write to it fails with EIO, and
    the run's next epoch line ended it with nothing saved. The signal's note failing so points
    the standard streams that are terminals at /dev/null; one that is a file keeps it."""
    import errno
    import io
    import os

    from torchlean.cli import _resume

    class HungUp(io.StringIO):
        def write(self, text: str) -> int:
            raise OSError(errno.EIO, "Input/output error")

    moved: list[int] = []
    monkeypatch.setattr(sys, "stderr", HungUp())
    monkeypatch.setattr(os, "isatty", lambda fd: fd == 2)  # stdout a file, stderr the terminal
    monkeypatch.setattr(os, "dup2", lambda source, fd: moved.append(fd))
    stop = _resume.Stop(True)
    stop.arm()
    stop.handle(signal.SIGHUP, None)  # no exception: the run stops at the end of its epoch
    assert stop.requested and stop.exit_status == 128 + signal.SIGHUP and moved == [2]


_INTERRUPT_EPOCH_2 = """
import signal, sys
from torchlean.cli import build_parser, main
from torchlean.trainer import Trainer
original = Trainer.fit
def fit(self, *args, **kwargs):
    if self.epochs_done == 1:
        signal.raise_signal(signal.SIGINT)
    return original(self, *args, **kwargs)
Trainer.fit = fit
sys.exit(main(sys.argv[1:]))
"""


def test_ctrl_c_note_of_a_standard_input_run_says_to_pipe_the_data_in(tmp_path: Path) -> None:
    """review128 F5: the continue-with command of a run that read standard input left out the
    data, so pasted into a terminal it was refused (``standard input is a terminal here``). A
    process of its own, as standard input is read from file descriptor 0."""
    import subprocess

    rows = "".join(f"{i % 3},{i / 10:.1f},{(i * 7) % 5}\n" for i in range(60))
    stopped = tmp_path / "stdin.npz"
    done = subprocess.run(
        [sys.executable, "-c", _INTERRUPT_EPOCH_2, "train", "--dataset", "-", "--epochs", "4", "--save",
         str(stopped)], input="y,a,b\n" + rows, capture_output=True, text=True, check=False, timeout=300,
    )
    assert done.returncode == 130, done.stderr
    assert done.stderr.splitlines()[-1] == (
        f"note: interrupted after epoch 2/4; continue with: torchlean train --resume {stopped} --save "
        f"{stopped} < FILE (the data this run read from standard input)"
    )
