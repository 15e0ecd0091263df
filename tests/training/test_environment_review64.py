"""review64 F4, F5: a checkpoint's ``environment`` block with an unknown or another profile, a
missing or an unexpected key is refused naming the file and the field; the
``provenance.environment`` docstring lists the keys in their order."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import cli

from torchlean import checkpoint, profiles, provenance
from torchlean.checkpoint import CheckpointError

KEYS = ", ".join(provenance.ENVIRONMENT_KEYS)


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint of ``torchlean train`` on iris (checked_cpu)."""
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("env") / "m.npz"
    assert main(["train", "--dataset", "iris", "--hidden", "8", "--epochs", "1", "--save", str(path)]) == 0
    return path


def edited(source: Path, target: Path, edit: Any) -> Path:
    """A copy of checkpoint ``source`` whose metadata's environment ``edit`` changed in place."""
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    edit(meta["environment"])
    arrays["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


@pytest.mark.parametrize(("edit", "fault"), [
    (lambda env: env.update(profile="nope"),
     "environment's profile must be a known profile name or None (known: "
     f"{' | '.join(profiles.names())}), got 'nope'"),
    (lambda env: env.update(profile="fast_cpu"),
     "the checkpoint's profile 'checked_cpu' and its environment's profile 'fast_cpu' differ (one of them "
     "was edited): the environment records the profile the run ran under"),
    (lambda env: env.pop("torch"),
     f"environment must have the keys of provenance.environment() ({KEYS}): missing 'torch'"),
    (lambda env: env.update(foo="bar"),
     f"environment must have the keys of provenance.environment() ({KEYS}): unexpected 'foo' (a newer "
     "torchlean's block, or an edited one: read a newer torchlean's checkpoint with that version)"),
    (lambda env: (env.pop("cwd"), env.pop("utc"), env.update(x=1)),
     f"environment must have the keys of provenance.environment() ({KEYS}): missing 'cwd', 'utc'; "
     "unexpected 'x'"),
])
def test_a_bad_environment_is_refused_naming_the_file_and_field(capsys: pytest.CaptureFixture[str],
                                                                saved: Path, tmp_path: Path, edit: Any,
                                                                fault: str) -> None:
    path = edited(saved, tmp_path / "e.npz", edit)
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == f"{path}: {fault}"
    for argv in (["inspect", str(path)], ["predict", str(path), "--dataset", "iris"]):
        assert cli(capsys, *argv) == (2, "", f"error: {path}: {fault}\n")


@pytest.mark.parametrize(("edit", "fault"), [
    (lambda env: env.update(argv="torchlean train"),
     "environment: 'argv' must be a list of strings, got 'torchlean train'"),
    (lambda env: env.update(torch=5), "environment: 'torch' must be a string or None, got 5"),
    (lambda env: env.update(python=None), "environment: 'python' must be a string, got None"),
    (lambda env: env.update(cwd=["/"]), "environment: 'cwd' must be a string or None, got ('/',)"),
    (lambda env: env.update(utc="yesterday"),
     "environment: 'utc' must be a UTC time such as '2025-01-31T12:00:00Z', got 'yesterday'"),
    (lambda env: env.update(capsule_table_sha256="66DB"),
     "environment: 'capsule_table_sha256' must be 64 lowercase hex digits (a SHA-256) or None, got '66DB'"),
    (lambda env: env.update(profile=None),  # review65 F5: a digest of no profile's table
     "environment: 'profile' and 'capsule_table_sha256' are both None or both given "
     "(provenance.environment(profile=...) writes both), got profile None and capsule_table_sha256 "
     f"{provenance.capsule_table_sha256('fast_cpu')!r}"),
    (lambda env: env.update(capsule_table_sha256=None),
     "environment: 'profile' and 'capsule_table_sha256' are both None or both given "
     "(provenance.environment(profile=...) writes both), got profile 'checked_cpu' and "
     "capsule_table_sha256 None"),
])
def test_an_environment_value_of_another_type_is_refused(capsys: pytest.CaptureFixture[str], saved: Path,
                                                         tmp_path: Path, edit: Any, fault: str) -> None:
    """review65 F5, F6: each value of the type provenance.environment() writes."""
    def edit_with_fast_digest(env: dict[str, Any]) -> None:
        env["capsule_table_sha256"] = provenance.capsule_table_sha256("fast_cpu")
        edit(env)

    path = edited(saved, tmp_path / "e.npz", edit_with_fast_digest)
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == f"{path}: {fault}"
    assert cli(capsys, "inspect", str(path)) == (2, "", f"error: {path}: {fault}\n")


def test_an_environment_in_another_order_is_stored_in_its_order(saved: Path, tmp_path: Path) -> None:
    path = edited(saved, tmp_path / "e.npz", lambda env: [env.update({k: env.pop(k)}) for k in reversed(
        list(env))])
    loaded = checkpoint.load(path)
    assert loaded.environment is not None and tuple(loaded.environment) == provenance.ENVIRONMENT_KEYS
    assert loaded.environment == checkpoint.load(saved).environment


def test_an_environment_without_a_profile_still_loads(saved: Path, tmp_path: Path) -> None:
    path = edited(saved, tmp_path / "e.npz",
                  lambda env: env.update(profile=None, capsule_table_sha256=None))
    loaded = checkpoint.load(path)
    assert loaded.environment is not None and loaded.environment["profile"] is None
    assert tuple(loaded.environment) == provenance.ENVIRONMENT_KEYS


def test_the_environment_docstring_lists_the_keys_in_their_order() -> None:
    doc = provenance.environment.__doc__ or ""
    named = [word for word in re.findall(r"``(\w+)``", doc) if word in provenance.ENVIRONMENT_KEYS]
    order = list(dict.fromkeys(named))
    assert order == list(provenance.ENVIRONMENT_KEYS)
    assert list(provenance.environment(["x"], "checked_cpu")) == list(provenance.ENVIRONMENT_KEYS)
