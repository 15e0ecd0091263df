"""review64 F3: a run resumed under another torch thread count records each segment's count
(``torch_threads_segments``), ``inspect`` marks it mixed, and a later resume's note claims no count
that keeps a mixed run bit for bit."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import cli, metadata, ok

from torchlean import checkpoint
from torchlean.checkpoint import Checkpoint, CheckpointError

SMALL = ("--dataset", "iris", "--hidden", "8", "--epochs", "2", "--profile", "fast_cpu")
CAUSE = ("(--torch-threads, else $OMP_NUM_THREADS): profile fast_cpu's aten/libtorch capsules reduce in an "
         "implementation-defined order, which may depend on the thread count")


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A checkpoint of ``train SMALL --save`` (fast_cpu, 1 thread)."""
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("segments") / "m.npz"
    assert main(["train", *SMALL, "--torch-threads", "1", "--save", str(path)]) == 0
    return path


def threads_line(capsys: pytest.CaptureFixture[str], path: Path) -> str:
    code, out, err = cli(capsys, "inspect", str(path))
    assert (code, err) == (0, "")
    return next(line for line in out.splitlines() if line.startswith("torch_threads: "))


def test_each_segment_s_count_is_recorded_and_a_mixed_run_is_said_so(capsys: pytest.CaptureFixture[str],
                                                                     tmp_path: Path) -> None:
    first, second, third, fourth = (tmp_path / f"{name}.npz" for name in ("f1", "f2", "f3", "f4"))
    ok(capsys, *SMALL, "--torch-threads", "1", "--save", str(first))
    assert "torch_threads_segments" not in metadata(first)  # one segment: the file format is unchanged
    assert checkpoint.load(first).thread_counts() == (1,)
    assert threads_line(capsys, first) == "torch_threads: 1"
    code, _, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3", "--torch-threads", "2",
                       "--save", str(second))
    assert code == 0
    assert err == (f"note: the run in {first} ran torch on 1 thread and this one runs it on 2 {CAUSE}, so "
                   "the resumed run may no longer be bit for bit the uninterrupted one (--torch-threads 1 "
                   "keeps it)\n")
    meta = metadata(second)
    assert (meta["torch_threads"], meta["torch_threads_segments"]) == (2, [1, 2])
    # the run record carries them too (review65 F7)
    recorded = tmp_path / "second.json"
    code, _, _ = cli(capsys, "train", "--resume", str(first), "--epochs", "3", "--torch-threads", "2",
                     "--report-json", str(recorded))
    assert code == 0 and json.loads(recorded.read_text())["torch_threads_segments"] == [1, 2]
    assert threads_line(capsys, second) == ("torch_threads: 2 (mixed: its segments, the first run then each "
                                            "--resume, ran torch on 1 | 2 threads)")
    report = tmp_path / "i.json"
    assert cli(capsys, "inspect", str(second), "--report-json", str(report))[0] == 0
    assert json.loads(report.read_text())["torch_threads_segments"] == [1, 2]
    # back to 1: the note names the segments and no count that keeps the run
    code, _, err = cli(capsys, "train", "--resume", str(second), "--epochs", "4", "--torch-threads", "1",
                       "--save", str(third))
    assert code == 0
    assert err == (f"note: the run in {second} ran torch on 1 | 2 threads in its segments (its first run, "
                   f"then each --resume) and this one runs it on 1 {CAUSE}, so this run, mixed already, may "
                   "be bit for bit no uninterrupted run, and no count is known to keep it\n")
    assert "keeps it" not in err
    assert metadata(third)["torch_threads_segments"] == [1, 2, 1]
    # the same count as the last segment: no note, one more segment
    ok(capsys, "--resume", str(third), "--epochs", "5", "--torch-threads", "1", "--save", str(fourth))
    assert checkpoint.load(fourth).torch_threads_segments == (1, 2, 1, 1)
    # a run resumed at its own count is not mixed
    same = tmp_path / "same.npz"
    ok(capsys, "--resume", str(first), "--epochs", "3", "--torch-threads", "1", "--save", str(same))
    assert metadata(same)["torch_threads_segments"] == [1, 1]
    assert threads_line(capsys, same) == "torch_threads: 1"


def test_a_checkpoint_without_a_thread_count_resumes_without_the_note(capsys: pytest.CaptureFixture[str],
                                                                      tmp_path: Path) -> None:
    """A checkpoint written before torch_threads was recorded: its count is unknown, so no note;
    the resumed run's segments are then unknown, then the new count."""
    new = tmp_path / "new.npz"
    ok(capsys, *SMALL, "--save", str(new))
    with np.load(new, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    for name in ("split_seed", "torch_threads", "environment"):
        del meta[name]
    arrays["metadata"] = np.array(json.dumps(meta))
    old = tmp_path / "old.npz"
    with old.open("wb") as handle:
        np.savez(handle, **arrays)
    resumed = tmp_path / "resumed.npz"
    # no note: ok() asserts an empty stderr
    ok(capsys, "--resume", str(old), "--epochs", "3", "--torch-threads", "2", "--save", str(resumed))
    assert metadata(resumed)["torch_threads_segments"] == [None, 2]
    # one known count: not mixed, as far as anything tells (review65 F3)
    assert threads_line(capsys, resumed) == ("torch_threads: 2 (its segments, the first run then each "
                                             "--resume, ran torch on unknown | 2 threads: whether they "
                                             "differed is unknown)")
    # resumed again under another count: the usual note, saying an earlier count is unknown
    again = tmp_path / "again.npz"
    code, _, err = cli(capsys, "train", "--resume", str(resumed), "--epochs", "4", "--torch-threads", "1",
                       "--save", str(again))
    assert code == 0
    assert err == (f"note: the run in {resumed} ran torch on 2 threads (an earlier segment's count is "
                   f"unknown) and this one runs it on 1 {CAUSE}, so the resumed run may no longer be bit "
                   "for bit the uninterrupted one (--torch-threads 2 keeps it)\n")
    assert metadata(again)["torch_threads_segments"] == [None, 2, 1]


@pytest.mark.parametrize(("changes", "message"), [
    ({"torch_threads": 2, "torch_threads_segments": (1, 3)},
     r"torch_threads_segments must end with torch_threads 2 .*got \[1, 3\]"),
    ({"torch_threads": 2, "torch_threads_segments": ()}, r"segments must be a non-empty list"),
    ({"torch_threads": 2, "torch_threads_segments": (0, 2)},
     r"must be a non-empty list of ints in \[1, 1024\]"),
    ({"torch_threads": 2, "torch_threads_segments": (5000, 2)},  # review229 F1: --torch-threads's range
     r"in \[1, 1024\] .*got \(5000, 2\)"),
    ({"torch_threads": 2, "torch_threads_segments": (True, 2)}, r"got \(True, 2\)"),
    ({"torch_threads": 2, "torch_threads_segments": "12"}, r"got '12'"),
    ({"version": 1, "training": None, "torch_threads": None, "torch_threads_segments": (None,)},
     r"a version 1 checkpoint has no split_seed, torch_threads, torch_threads_segments, environment or "
     r"data_sha256"),
])
def test_bad_segments_are_refused(trained: Path, tmp_path: Path, changes: dict[str, Any],
                                  message: str) -> None:
    path = tmp_path / "m.npz"
    saved = checkpoint.load(trained)
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    with pytest.raises(CheckpointError, match=message):
        Checkpoint(**{**fields, "environment": None, **changes})
    # accepted: numpy ints and a list, stored as a tuple of ints that round-trips
    built = Checkpoint(**{**fields, "torch_threads": 2, "torch_threads_segments": [np.int64(1), None, 2]})
    assert built.torch_threads_segments == (1, None, 2)
    assert type(built.torch_threads_segments[0]) is int  # type: ignore[index]
    checkpoint.save(path, built)
    assert checkpoint.load(path).torch_threads_segments == (1, None, 2)
    # in a file: a wrong type is refused naming the file and the field
    meta = metadata(path)
    meta["torch_threads_segments"] = 3
    with np.load(path, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["metadata"] = np.array(json.dumps(meta))
    with path.open("wb") as handle:
        np.savez(handle, **arrays)
    refusal = rf"^{path}: metadata field 'torch_threads_segments' must be of type list or null, got 3$"
    with pytest.raises(CheckpointError, match=refusal):
        checkpoint.load(path)


def test_a_resume_keeps_the_run_s_count_unless_one_is_given(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path,
                                                            monkeypatch: pytest.MonkeyPatch) -> None:
    """review70 F3: as every other setting, --resume takes the checkpoint's torch_threads when
    neither --torch-threads nor $OMP_NUM_THREADS gives one (the default 1 is not a choice)."""
    first, second = tmp_path / "f1.npz", tmp_path / "f2.npz"
    ok(capsys, *SMALL, "--torch-threads", "2", "--save", str(first))
    monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    code, out, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3", "--save", str(second))
    assert (code, err) == (0, "") and " torch_threads=2\n" in out
    assert metadata(second)["torch_threads_segments"] == [2, 2]
    # an $OMP_NUM_THREADS that is ignored (with its warning) gives no count either (review71 F1)
    for ignored in ("", "0", "abc"):
        monkeypatch.setenv("OMP_NUM_THREADS", ignored)
        code, out, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3")
        assert code == 0 and " torch_threads=2\n" in out and "ran torch on" not in err
        assert err.startswith(f"warning: ignoring OMP_NUM_THREADS={ignored!r}")
    # the environment's count is the user's choice: taken, with the note
    monkeypatch.setenv("OMP_NUM_THREADS", "1")
    code, _, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3")
    assert code == 0 and (f"note: the run in {first} ran torch on 2 threads and this one runs it on 1 "
                          in err)


def test_a_resumed_checked_cpu_run_runs_no_torch_and_says_so(capsys, tmp_path):
    """review159 F5: inspect said of a resumed checked_cpu run that whether its segments' thread
    counts differed is unknown; checked_cpu runs no torch kernel, so the count does not apply."""
    import torch  # noqa: F401 - imported, as by other tests or a user's script: a count is then recorded

    first, resumed = tmp_path / "first.npz", tmp_path / "resumed.npz"
    ok(capsys, "--dataset", "iris", "--hidden", "8", "--epochs", "2", "--save", str(first))
    ok(capsys, "--resume", str(first), "--epochs", "3", "--save", str(resumed))
    # torch is imported in this process: a count is recorded, as no CLI process of checked_cpu
    # records one; the line says so, as the JSON holds it (review161 F6; review162 F5: not left to
    # the order the tests run in)
    counts = metadata(resumed)["torch_threads_segments"]
    assert None not in counts and len(counts) == 2
    expected = "torch_threads: none (profile checked_cpu runs no torch kernels on the CPU"
    recorded = " | ".join(map(str, counts))
    assert threads_line(capsys, resumed) == f"{expected}; the record holds {recorded}, which no kernel used)"
    bare = tmp_path / "bare.npz"  # no count recorded
    checkpoint.save(bare, dataclasses.replace(checkpoint.load(first), torch_threads=None))
    assert threads_line(capsys, bare) == f"{expected})"
