"""review133 F1, F5, F6, F10: ``train --resume`` from another directory whose file of the recorded
relative name fails to load (F1), ``inspect``'s word on a ``torch_cpu_capability`` null by design
(F5), the imbalanced-test note on test rows of one class (F6), and ``train`` under a CUDA profile
where CUDA cannot run (F10). Oracles: the messages as the review and the existing messages word
them (``check_data``'s directories, the ``torch_threads`` line, ``predict``'s CPU counterpart),
the same file's refusal read without another directory, and the profiles' own devices."""

from __future__ import annotations

from pathlib import Path

import pytest
import torch
from cli_runs import cli, ok
from test_cli_review86 import SMALL, _refused
from test_environment_review64 import edited

from torchlean import checkpoint
from torchlean.autograd import session as session_module
from torchlean.backend import profiles
from torchlean.backend.providers.native_cuda import extension
from torchlean.cli._imbalance import baseline_note

# ------------------------------------------------------------------------------------------- F1


@pytest.mark.parametrize("local", [
    "a,b,label\n1,2,x\n",  # one row, one class
    "",  # no rows
    "a,b,label\n1,2,x\n3,4,y\n",  # the split leaves the train rows one class
    "a\n1\n2\n",  # no label column beside the features
])
def test_a_local_file_of_the_recorded_name_that_fails_to_load_names_both_directories(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: str
) -> None:
    run, here = tmp_path / "d", tmp_path / "here"
    run.mkdir()
    here.mkdir()
    (run / "cls.csv").write_text(SMALL)
    monkeypatch.chdir(run)
    ok(capsys, "--dataset", "cls.csv", "--epochs", "1", "--save", str(tmp_path / "m.npz"))
    monkeypatch.chdir(here)
    (here / "cls.csv").write_text(local)
    # the oracle: the same file's refusal where no other directory is involved (--dataset given)
    plain = _refused(capsys, "train", "--resume", "../m.npz", "--epochs", "2", "--dataset", "cls.csv")
    assert "directory" not in plain
    assert _refused(capsys, "train", "--resume", "../m.npz", "--epochs", "2") == (
        f"the recorded dataset path cls.csv (read in this directory, {here}; its run read it in its working "
        f"directory {run}, where a file of that name is: to resume with it, give --dataset "
        f"{run / 'cls.csv'}) is refused: {plain}"
    )
    # the run's file gone too: the run's directory is still named, without the --dataset to give
    (run / "cls.csv").unlink()
    assert _refused(capsys, "train", "--resume", "../m.npz", "--epochs", "2") == (
        f"the recorded dataset path cls.csv (read in this directory, {here}; its run read it in its working "
        f"directory {run}) is refused: {plain}"
    )
    # in the run's own directory, the file's own refusal alone
    (run / "cls.csv").write_text(local)
    monkeypatch.chdir(run)
    assert _refused(capsys, "train", "--resume", str(tmp_path / "m.npz"), "--epochs", "2") == plain


# ------------------------------------------------------------------------------------------- F5


def _capability_line(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    code, out, err = cli(capsys, "inspect", str(path))
    assert code == 0, err
    [line] = [line for line in out.splitlines() if line.startswith("environment.torch_cpu_capability: ")]
    return line.removeprefix("environment.torch_cpu_capability: ")


def test_inspect_says_why_torch_cpu_capability_is_null(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    small = ("--dataset", "iris", "--hidden", "4", "--epochs", "1")
    cpu, fast = tmp_path / "cpu.npz", tmp_path / "fast.npz"
    ok(capsys, *small, "--save", str(cpu))
    assert checkpoint.load(cpu).environment["torch_cpu_capability"] is None  # type: ignore[index]
    assert _capability_line(capsys, cpu) == "none (profile checked_cpu runs no torch kernels on the CPU)"
    ok(capsys, *small, "--profile", "fast_cpu", "--save", str(fast))
    assert _capability_line(capsys, fast) == torch.backends.cpu.get_cpu_capability()
    # a fast_cpu checkpoint of a torchlean that did not record it yet (provenance.LATER_KEYS)
    older = edited(fast, tmp_path / "older.npz", lambda env: env.pop("torch_cpu_capability"))
    assert _capability_line(capsys, older) == (
        "not recorded (an older checkpoint, or an environment recorded without its profile)"
    )


# ------------------------------------------------------------------------------------------- F6


def test_test_rows_of_one_class_are_not_said_to_be_told_apart(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--test-fraction", "0.001", "--epochs", "1")
    assert code == 0 and "test=1 " in out, err
    assert err.splitlines()[-1] == (
        "note: test_accuracy=1.0000 is not above 1.0000, the share of the test rows of its most frequent "
        "class (virginica): always predicting that class would score as well; the test rows hold only class "
        "virginica, so they cannot tell the model from always predicting it"
    )


def test_the_note_on_one_class_names_it_and_no_balanced_accuracy() -> None:
    note = baseline_note(0.5, 0.5, (1, 1.0), ("a", "b\nc"))
    assert note.endswith("; the test rows hold only class 'b\\nc', so they cannot tell the model from always "
                         "predicting it")
    assert "balanced" not in note
    assert "tells them apart: 0.5000" in baseline_note(0.75, 0.5, (0, 0.75), ("a", "b"))  # two classes


# ------------------------------------------------------------------------------------------ F10


COUNTERPARTS = {
    "checked_cuda": "checked_cpu",
    "libtorch_forward_cuda": "libtorch_forward_cpu",
    "libtorch_forward_strict": "libtorch_forward_strict_cpu",
}


def _hint(profile: str) -> str:
    return (f"; --profile {profile} runs on cuda: --profile {COUNTERPARTS[profile]} trains on the CPU under "
            "the same assurance (with other kernels: values may differ in the last bits)")


@pytest.mark.parametrize("profile", list(COUNTERPARTS))
def test_train_under_a_cuda_profile_without_cuda_names_its_cpu_counterpart(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, profile: str
) -> None:
    try:
        extension.require_cuda()
    except extension.NativeExtensionError as error:
        reason = str(error)
    else:
        pytest.skip("CUDA runs here: the refusal this tests does not happen")
    small = ("train", "--dataset", "iris", "--hidden", "4", "--epochs", "1")
    saved = tmp_path / "out" / "m.npz"
    assert _refused(capsys, *small, "--profile", profile, "--save", str(saved)) == (
        f"torch eager session: {reason}{_hint(profile)}"
    )
    assert not saved.parent.exists()  # refused before anything is written
    # the counterpart is the CUDA profile's assurance and VJP mode on the CPU, and trains here
    cuda, cpu = profiles.get(profile), profiles.get(COUNTERPARTS[profile])
    assert (cuda.policy.assurance, cuda.policy.vjp_mode) == (cpu.policy.assurance, cpu.policy.vjp_mode)
    code, out, err = cli(capsys, *small, "--profile", COUNTERPARTS[profile])
    assert code == 0 and "test_accuracy=" in out, err


@pytest.mark.parametrize("cuda_runs", [False, True])
def test_typed_graph_under_a_cuda_profile_names_the_counterpart_and_eager(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, cuda_runs: bool
) -> None:
    """Eager execution under the CUDA profile is offered as a way to run here only where CUDA runs
    (review151 L1: without CUDA, the advice led to the next refusal)."""
    monkeypatch.setattr(session_module, "_cuda_probe", lambda: None if cuda_runs else "no CUDA here")
    eager = ("; or --execution eager with --profile checked_cuda, where cuda runs" if cuda_runs else
             "; or, on a machine where cuda runs (this one cannot), --execution eager with --profile "
             "checked_cuda")
    assert _refused(capsys, "train", "--execution", "typed-graph", "--profile", "checked_cuda") == (
        "typed graph execution currently supports device `cpu`; requested `cuda`" + _hint("checked_cuda")
        + eager
    )
