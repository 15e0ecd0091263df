"""``train --resume`` of a checkpoint whose recorded environment names other software (another
torch version under a profile with torch kernels, a numpy or torchlean version, or another capsule
table for the profile) notes that the resumed
run may not be bit for bit the uninterrupted one (review65 F2); a checkpoint written here resumes
without the note, and so does one recording no environment. Oracle: the edits are made here to the
checkpoint's metadata; the current values come from importlib.metadata and the capsule table digest
of ``torchlean.provenance``."""

from __future__ import annotations

import json
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, ok

from torchlean import provenance

SMALL = ("--dataset", "iris", "--hidden", "4", "--epochs", "1")


def _edited(source: Path, target: Path, **changes: object) -> Path:
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    if changes.pop("drop", False):
        meta["environment"] = None
    else:
        meta["environment"].update(changes)
    arrays["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


def test_other_software_is_noted_on_resume(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    saved = tmp_path / "m.npz"
    ok(capsys, *SMALL, "--save", str(saved))
    ok(capsys, "--resume", str(saved), "--epochs", "2", "--save", str(tmp_path / "same.npz"))  # no note
    torch_now = metadata.version("torch")
    old_torch = _edited(saved, tmp_path / "t.npz", torch="0.0.1")
    code, _, err = cli(capsys, "train", "--resume", str(old_torch), "--epochs", "2")
    assert code == 0 and "other software" not in err  # checked_cpu runs no torch kernel (review99 L4)
    fast = tmp_path / "f.npz"
    ok(capsys, *SMALL, "--profile", "fast_cpu", "--save", str(fast))
    old_torch = _edited(fast, tmp_path / "ft.npz", torch="0.0.1")
    code, _, err = cli(capsys, "train", "--resume", str(old_torch), "--epochs", "2")
    assert code == 0
    note = (f"note: the run in {old_torch} was written under other software than this one runs under (torch "
            f"0.0.1 -> {torch_now}), so the resumed run may not be bit for bit the uninterrupted one")
    assert note in err.splitlines()  # review104 L5: a run that saves nothing records nothing
    code, _, err = cli(capsys, "train", "--resume", str(old_torch), "--epochs", "2", "--save",
                       str(tmp_path / "saved.npz"))
    assert code == 0
    assert f"{note}; the checkpoint this run saves records this run's environment" in err.splitlines()
    table = _edited(saved, tmp_path / "c.npz", capsule_table_sha256="0" * 64)
    assert provenance.capsule_table_sha256("checked_cpu") != "0" * 64
    code, _, err = cli(capsys, "train", "--resume", str(table), "--epochs", "2")
    assert code == 0
    assert ("(profile checked_cpu's capsule table, whose digest torchlean inspect shows), so the resumed run "
            "may not be bit for bit") in err
    unrecorded = _edited(saved, tmp_path / "n.npz", drop=True)
    code, _, err = cli(capsys, "train", "--resume", str(unrecorded), "--epochs", "2")
    assert code == 0 and "other software" not in err
