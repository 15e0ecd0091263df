"""``torchlean predict`` on a checkpoint trained under a CUDA profile, on a machine that cannot run
CUDA (review62 F9): the one-line refusal says that the CUDA request is the checkpoint's
``trained_under`` profile and which ``--profile`` predicts on the CPU.

Oracles: the checkpoint as ``train --save`` wrote it under ``checked_cpu`` (the same weights: its
predictions are what ``--profile checked_cpu`` must give), the profiles' own policies (the CPU
counterpart has the CUDA profile's assurance and VJP mode) and hand-written messages.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest
import torch
from cli_runs import cli

from torchlean import checkpoint, provenance
from torchlean.autograd import session as session_module
from torchlean.backend import profiles
from torchlean.backend.errors import UnknownLabelError
from torchlean.backend.fields import BackendTypeError
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.vocabulary import Device

COUNTERPARTS = {
    "checked_cuda": "checked_cpu",
    "libtorch_forward_cuda": "libtorch_forward_cpu",
    "libtorch_forward_strict": "libtorch_forward_strict_cpu",
}


def _cuda_reason() -> str:
    try:
        extension.require_cuda()
    except extension.NativeExtensionError as error:
        return str(error)
    pytest.skip("CUDA runs here: the refusal this tests does not happen")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris checkpoint from ``torchlean train --save`` (checked_cpu, 1 epoch, hidden 4)."""
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("cuda_ckpt") / "cpu.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


def _as_trained_under(source: Path, profile: str, target: Path) -> Path:
    """``source``'s checkpoint, recorded as trained under ``profile`` (what ``train --profile
    PROFILE --save`` writes on a CUDA machine: its run's settings name it too, as a checkpoint must)."""
    _as_run_under(source, profile, "eager", target)
    assert checkpoint.load(target).profile == profile
    return target


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA runs here")
@pytest.mark.parametrize("profile", list(COUNTERPARTS))
def test_the_refusal_names_trained_under_and_the_cpu_profile(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trained: Path, profile: str
) -> None:
    reason = _cuda_reason()
    path = _as_trained_under(trained, profile, tmp_path / f"{profile}.npz")
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris")
    assert (code, out) == (2, "")
    assert err == (
        f"error: torch eager session: {reason}; profile {profile} is checkpoint {path}'s trained_under "
        f"(predict runs under it unless --profile is given): --profile {COUNTERPARTS[profile]} predicts on "
        "the CPU (with other kernels: values may differ in the last bits)\n"
    )
    # the advice works: the CPU profile predicts, and the header still says what it was trained under
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris",
                         "--profile", COUNTERPARTS[profile], "--output", str(tmp_path / "p.csv"))
    assert code == 0, err
    assert out.splitlines()[0].endswith(f"trained_under={profile}")
    assert f"profile={COUNTERPARTS[profile]} execution=eager" in out.splitlines()[1]


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA runs here")
def test_the_cpu_profile_gives_the_cpu_checkpoints_predictions(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trained: Path
) -> None:
    path = _as_trained_under(trained, "checked_cuda", tmp_path / "cuda.npz")
    code, oracle, err = cli(capsys, "predict", str(trained), "--dataset", "iris")
    assert code == 0, err
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--profile", "checked_cpu")
    assert code == 0, err
    assert out == oracle and out.startswith("prediction\n") and out.count("\n") == 151


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA runs here")
def test_an_explicit_cuda_profile_is_the_users_request_and_keeps_the_plain_refusal(
    capsys: pytest.CaptureFixture[str], trained: Path
) -> None:
    reason = _cuda_reason()
    code, out, err = cli(capsys, "predict", str(trained), "--dataset", "iris", "--profile", "checked_cuda")
    assert (code, out, err) == (2, "", f"error: torch eager session: {reason}\n")


def test_cpu_counterpart_keeps_assurance_and_vjp_mode() -> None:
    for profile in profiles.profiles():
        counterpart = profiles.cpu_counterpart(profile.name)
        if profile.policy.device is Device.CPU:
            assert counterpart is None, profile.name
            continue
        assert counterpart is not None and counterpart.name == COUNTERPARTS[profile.name]
        assert counterpart.policy.device is Device.CPU
        assert counterpart.policy.assurance is profile.policy.assurance
        assert counterpart.policy.vjp_mode is profile.policy.vjp_mode
    assert set(COUNTERPARTS) == {p.name for p in profiles.profiles() if p.policy.device is not Device.CPU}


def test_cpu_counterpart_refuses_unknown_names_and_non_strings() -> None:
    with pytest.raises(UnknownLabelError, match=r"^unknown profile cuda \(known: checked_cpu \| "):
        profiles.cpu_counterpart("cuda")
    with pytest.raises(BackendTypeError, match=r"^profile name must be a string .*, got None \(NoneType\)$"):
        profiles.cpu_counterpart(None)  # type: ignore[arg-type]


# --- review63 F4: the same hint on the paths nearby ---------------------------------------------------


def _as_run_under(source: Path, profile: str, execution: str, target: Path) -> Path:
    """``source``'s checkpoint as ``train --profile PROFILE --execution EXECUTION --save`` writes it
    on a CUDA machine: the checkpoint's fields and its run's settings both name them, and its
    environment the profile."""
    saved = checkpoint.load(source)
    assert saved.training is not None
    training = dataclasses.replace(
        saved.training, settings={**saved.training.settings, "profile": profile, "execution": execution}
    )
    assert saved.environment is not None  # train records the profile there too (review64 F4)
    environment = {**saved.environment, "profile": profile,
                   "capsule_table_sha256": provenance.capsule_table_sha256(profile)}
    # its capsules are CUDA ones, which no CPU run selects: left unrecorded
    checkpoint.save(target, dataclasses.replace(saved, profile=profile, execution=execution,
                                                training=training, environment=environment,
                                                capsules=None, capsules_order=None))
    return target


def _hint(path: Path, profile: str, cuda_runs: bool = False) -> str:
    eager = (f"; or --execution eager with profile {profile}, where cuda runs" if cuda_runs else
             "; or, on a machine where cuda runs (this one cannot), --execution eager with profile "
             f"{profile}")
    return (f"profile {profile} is checkpoint {path}'s trained_under (predict runs under it unless --profile "
            f"is given): --profile {COUNTERPARTS[profile]} predicts on the CPU (with other kernels: values "
            f"may differ in the last bits){eager}")


@pytest.mark.parametrize("profile", list(COUNTERPARTS))
def test_typed_graph_under_the_checkpoint_s_cuda_profile_names_its_cpu_counterpart(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path, trained: Path,
    profile: str
) -> None:
    monkeypatch.setattr(session_module, "_cuda_probe", lambda: "no CUDA here")
    eager = _as_run_under(trained, profile, "eager", tmp_path / "eager.npz")
    code, out, err = cli(capsys, "predict", str(eager), "--dataset", "iris", "--execution", "typed-graph")
    assert (code, out, err) == (2, "", (
        f"error: --execution typed-graph runs on cpu only, and profile {profile} targets cuda; "
        f"{_hint(eager, profile)}\n"
    ))
    with monkeypatch.context() as patched:  # where CUDA runs, eager is a way to run here (review151 L1)
        patched.setattr(session_module, "_cuda_probe", lambda: None)
        code, out, err = cli(capsys, "predict", str(eager), "--dataset", "iris", "--execution", "typed-graph")
    assert err.endswith(f"{_hint(eager, profile, cuda_runs=True)}\n") and code == 2
    graph = _as_run_under(trained, profile, "typed-graph", tmp_path / "graph.npz")
    code, out, err = cli(capsys, "predict", str(graph), "--dataset", "iris")
    assert (code, out, err) == (2, "", (
        f"error: checkpoint {graph} was saved with execution typed-graph, which runs on cpu only, and "
        f"profile {profile} targets cuda; {_hint(graph, profile)}\n"
    ))
    # the advice works: the counterpart predicts in the checkpoint's typed graph, as the CPU run does
    code, oracle, err = cli(capsys, "predict", str(trained), "--dataset", "iris", "--execution",
                            "typed-graph")
    assert code == 0, err
    code, out, err = cli(capsys, "predict", str(graph), "--dataset", "iris", "--profile",
                         COUNTERPARTS[profile])
    assert code == 0, err
    if profile == "checked_cuda":  # the same kernels as checked_cpu's
        assert out == oracle
    # a CUDA profile the user gave keeps the plain refusal: the request is theirs
    code, _, err = cli(capsys, "predict", str(graph), "--dataset", "iris", "--profile", profile)
    assert code == 2 and "trained_under" not in err


def _resume_clause(path: Path, profile: str, execution: str) -> str:
    cpu = COUNTERPARTS[profile]
    return (f"; profile {profile} (execution {execution}) is checkpoint {path}'s trained_under, and "
            "--resume keeps it (--profile and --execution cannot change a resumed run's), so this run "
            f"resumes only where it runs; here, torchlean predict {path} --dataset DATA --profile {cpu} "
            f"predicts with its weights on the CPU, and --profile {cpu} without --resume trains a new run\n")


def test_resuming_a_typed_graph_cuda_run_says_the_profile_is_the_checkpoint_s(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trained: Path
) -> None:
    graph = _as_run_under(trained, "checked_cuda", "typed-graph", tmp_path / "graph.npz")
    code, out, err = cli(capsys, "train", "--resume", str(graph), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err == ("error: typed graph execution currently supports device `cpu`; requested `cuda`"
                   + _resume_clause(graph, "checked_cuda", "typed-graph"))
    # what the message says of --resume: another --profile or --execution is refused
    for option, value in (("--profile", "checked_cpu"), ("--execution", "eager")):
        code, _, err = cli(capsys, "train", "--resume", str(graph), "--epochs", "2", option, value)
        assert code == 2 and f"{option} {value} differs from the checkpoint's" in err


@pytest.mark.skipif(torch.cuda.is_available(), reason="CUDA runs here")
def test_resuming_a_cuda_run_without_cuda_says_the_profile_is_the_checkpoint_s(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, trained: Path
) -> None:
    reason = _cuda_reason()
    path = _as_run_under(trained, "checked_cuda", "eager", tmp_path / "cuda.npz")
    code, out, err = cli(capsys, "train", "--resume", str(path), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err == f"error: torch eager session: {reason}" + _resume_clause(path, "checked_cuda", "eager")
    # a new run under a CUDA profile is the user's own request: no trained_under, but the CPU
    # counterpart that trains here, as predict names it (review133 F10)
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--profile", "checked_cuda")
    assert (code, err) == (2, f"error: torch eager session: {reason}; --profile checked_cuda runs on cuda: "
                              "--profile checked_cpu trains on the CPU under the same assurance (with other "
                              "kernels: values may differ in the last bits)\n")
