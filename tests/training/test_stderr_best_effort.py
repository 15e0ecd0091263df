"""review103 F1: with standard error closed (``2>&-``) or full (``2>/dev/full``), ``train`` and
``predict`` exited 1 silently after the header and wrote no checkpoint, CSV or record (a note, a
progress bar or the error handler's own line raised). Standard error is now best effort: the
run goes on and writes its files, its exit status its own. Oracle: the same commands with stderr
to a pipe, whose files must be byte for byte those written here (the run's results do not depend
on stderr), and the loaded checkpoint."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from torchlean import checkpoint

FULL = Path("/dev/full")


def _run(argv: list[str], cwd: Path, stderr: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "torchlean", *argv]
    if stderr == "closed":
        return subprocess.run(command, stdout=subprocess.PIPE, text=True, cwd=cwd,
                              preexec_fn=lambda: os.close(2))
    if stderr == "full":
        with FULL.open("w") as full:
            return subprocess.run(command, stdout=subprocess.PIPE, stderr=full, text=True, cwd=cwd)
    return subprocess.run(command, capture_output=True, text=True, cwd=cwd)


@pytest.mark.parametrize("stderr", ["closed", pytest.param("full", marks=pytest.mark.skipif(
    not FULL.exists(), reason="no /dev/full on this system"))])
def test_a_run_whose_stderr_cannot_be_written_still_writes_its_files(tmp_path: Path, stderr: str) -> None:
    results = {}
    for way in ("pipe", stderr):
        where = tmp_path / way
        where.mkdir()
        train = _run(["train", "--dataset", "iris", "--epochs", "2", "--hidden", "4", "--save", "m.npz",
                      "--report-json", "r.json"], where, way)
        predict = _run(["predict", "m.npz", "--dataset", "iris", "--output", "p.csv"], where, way)
        assert (train.returncode, predict.returncode) == (0, 0), (way, train.stdout, predict.stdout)
        assert "saved: m.npz" in train.stdout.splitlines() and "wrote p.csv" in predict.stdout.splitlines()
        results[way] = {name: (where / name).read_bytes() for name in ("p.csv",)}
        results[way]["weights"] = repr(sorted(
            (k, v.tobytes()) for k, v in checkpoint.load(where / "m.npz").weights.items()))
        assert (where / "r.json").stat().st_size > 0
    assert results["pipe"] == results[stderr]
    refused = _run(["train", "--dataset", "missing.csv"], tmp_path / stderr, stderr)
    assert (refused.returncode, refused.stdout) == (2, "")  # an error still ends with its status
