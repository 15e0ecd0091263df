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

from torchlean import checkpoint
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
    PROFILE --save`` writes on a CUDA machine: the profile and the training settings' copy of it)."""
    saved = checkpoint.load(source)
    assert saved.training is not None
    training = dataclasses.replace(saved.training, settings={**saved.training.settings, "profile": profile})
    checkpoint.save(target, dataclasses.replace(saved, profile=profile, training=training))
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
