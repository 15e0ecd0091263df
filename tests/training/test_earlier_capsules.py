"""review147 F1: a run resumed into the checkpoint it resumed from (the Quickstart's way) kept only
the last segment's capsules, so a kernel that computed the weights before the resume dropped out of
the audit. Each earlier segment's capsule-table digest and capsules now travel in
``earlier_capsules`` (checkpoint and record), and ``inspect`` prints the earlier capsules the last
segment did not run.

The first segment runs under a ``fast_cpu`` without ``aten.relu`` (as an older torchlean's, before
that capsule was added): its relu is ``reference.relu``; the resumed segments run today's."""

from __future__ import annotations

import copy
import dataclasses
import json
import pickle
from pathlib import Path
from typing import Any

import pytest
from cli_runs import cli, metadata, ok, rewrite_metadata

from torchlean import checkpoint, provenance
from torchlean.backend import profiles
from torchlean.backend.registry import CapsuleModule
from torchlean.backend.vocabulary import BackendOp
from torchlean.checkpoint import CheckpointError

SMALL = ("--dataset", "iris", "--hidden", "8", "--profile", "fast_cpu", "--torch-threads", "1")


def _older_fast_cpu(monkeypatch: pytest.MonkeyPatch) -> None:
    fast = profiles.get("fast_cpu")
    aten = next(module for module in fast.capsule_modules if module.name == "aten")
    older = fast.with_capsule_modules(
        [CapsuleModule("aten", tuple(c for c in aten.capsules if c.op is not BackendOp.RELU))])
    monkeypatch.setitem(profiles._PROFILES, "fast_cpu", older)


def _relu(rows: list[dict[str, Any]]) -> str:
    return next(row["capsule"] for row in rows if row["op"] == "relu")


@pytest.fixture
def resumed_twice(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, Path, Path]:
    """The first segment's checkpoint, the file after one resume into it, and a copy after a
    second resume into that (each with its --report-json beside it)."""
    path = tmp_path / "run.npz"
    with pytest.MonkeyPatch.context() as patch:
        _older_fast_cpu(patch)
        ok(capsys, *SMALL, "--epochs", "1", "--save", str(path))
    first = tmp_path / "first.npz"
    first.write_bytes(path.read_bytes())
    code, _, _ = cli(capsys, "train", "--resume", str(path), "--epochs", "2", "--save", str(path),
                     "--report-json", str(tmp_path / "second.json"))
    assert code == 0
    second = tmp_path / "second.npz"
    second.write_bytes(path.read_bytes())
    code, _, _ = cli(capsys, "train", "--resume", str(path), "--epochs", "3", "--save", str(path),
                     "--report-json", str(tmp_path / "third.json"))
    assert code == 0
    return first, second, path


def test_a_resumed_run_keeps_each_earlier_segment_s_capsules(
    resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    first, second, third = resumed_twice
    one = metadata(first)
    assert "earlier_capsules" not in one and _relu(one["capsules"]) == "reference.relu"
    today = provenance.capsule_table_sha256("fast_cpu")
    assert one["environment"]["capsule_table_sha256"] != today
    two = metadata(second)
    assert _relu(two["capsules"]) == "aten.relu" and two["environment"]["capsule_table_sha256"] == today
    older = {"segments": 1, "capsule_table_sha256": one["environment"]["capsule_table_sha256"],
             "capsules": one["capsules"]}
    assert two["earlier_capsules"] == [older]
    three = metadata(third)
    assert three["torch_threads_segments"] == [1, 1, 1]
    assert three["earlier_capsules"] == [
        older, {"segments": 1, "capsule_table_sha256": today, "capsules": two["capsules"]}]
    for name, meta in (("second", two), ("third", three)):
        record = json.loads((tmp_path / f"{name}.json").read_text())
        assert record["earlier_capsules"] == meta["earlier_capsules"]
    saved = checkpoint.load(third)
    for again in (copy.deepcopy(saved), pickle.loads(pickle.dumps(saved))):
        assert again.earlier_capsules_json() == three["earlier_capsules"]


def test_inspect_prints_the_earlier_capsules_the_last_segment_did_not_run(
    capsys: pytest.CaptureFixture[str], resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    first, _, third = resumed_twice
    code, out, err = cli(capsys, "inspect", str(third), "--report-json", str(tmp_path / "i.json"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.startswith("earlier_segments: ")))
    older = metadata(first)["environment"]["capsule_table_sha256"]
    assert lines[start:start + 4] == [
        "earlier_segments: 2 (the run was resumed; the capsules above are the last segment's, these "
        "computed the weights before it)",
        f"  segment 1 of 3: another capsule table ({older}); 5 capsules, 1 not in the last segment's list:",
        "    relu: reference.relu provider=reference trust=checked vjp=torchlean-tape reduction=n/a",
        "  segment 2 of 3: the last segment's capsule table; 5 capsules, all in the last segment's list",
    ]
    # review159 F3: the environment lines say they are the last segment's only
    assert lines[start + 4] == (
        "  environment: the last segment's only (the earlier segments' numpy SIMD level, torch CPU "
        "capability and versions are not recorded; --resume printed a note where one changed)"
    )
    assert lines[start + 5] == "capsules_match: same as this torchlean's for profile fast_cpu"
    record = json.loads((tmp_path / "i.json").read_text())
    assert record["earlier_capsules"] == metadata(third)["earlier_capsules"]
    assert record["capsules_match"] is True  # reference.relu is in today's fast_cpu table too


def test_a_resume_of_a_file_without_them_records_the_unknown_segments(
    capsys: pytest.CaptureFixture[str], resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """A checkpoint of a resumed run written before torchlean recorded them: its earlier segments
    are unknown (null), its own segment's capsules are known."""
    _, second, _ = resumed_twice
    older = rewrite_metadata(second, tmp_path / "older.npz", lambda meta: meta.pop("earlier_capsules"))
    code, _, _ = cli(capsys, "train", "--resume", str(older), "--epochs", "3", "--save", str(older))
    assert code == 0
    meta = metadata(older)
    before = metadata(second)
    assert meta["earlier_capsules"] == [
        {"segments": 1, "capsule_table_sha256": None, "capsules": None},
        {"segments": 1, "capsule_table_sha256": before["environment"]["capsule_table_sha256"],
         "capsules": before["capsules"]},
    ]
    code, out, _ = cli(capsys, "inspect", str(older))
    assert "  segment 1 of 3: capsule table unknown; capsules unknown (not recorded)" in out.splitlines()


@pytest.mark.parametrize(("edit", "message"), [
    (lambda meta: meta.pop("torch_threads_segments"),
     r"earlier_capsules must be None for a run of one segment \(torch_threads_segments records none "
     r"before the last\), got \["),
    (lambda meta: meta["earlier_capsules"].append(meta["earlier_capsules"][0]),
     r"earlier_capsules' segments add up to 2, but torch_threads_segments records 1 segments before the "
     r"last \(one of them was edited\)$"),
    (lambda meta: meta["earlier_capsules"][0].update(segments=2),
     r"earlier_capsules' segments add up to 2, but torch_threads_segments records 1"),
    (lambda meta: meta["earlier_capsules"][0].update(segments=0),
     r"earlier_capsules\[0\] segments must be an int >= 1 \(how many consecutive segments ran with these "
     r"capsules\), got 0"),
    (lambda meta: meta["earlier_capsules"][0].update(capsule_table_sha256="abc"),
     r"earlier_capsules\[0\] capsule_table_sha256 must be 64 lowercase hex digits .* got 'abc'"),
    (lambda meta: meta["earlier_capsules"][0].pop("capsules"),
     r"earlier_capsules\[0\] must be a mapping with exactly the keys segments, capsule_table_sha256, "
     r"capsules, got the keys capsule_table_sha256, segments$"),
    (lambda meta: meta["earlier_capsules"][0]["capsules"][1].update(trust="trusted"),
     r"earlier_capsules\[0\] capsules\[1\] trust must be one of checked \| trusted-external, got 'trusted'"),
    (lambda meta: meta.update(earlier_capsules=[]),
     r"earlier_capsules must be a non-empty list of mappings with the keys segments, capsule_table_sha256, "
     r"capsules \(the 1 segments before the last\) or None, got \[\]"),
])
def test_a_malformed_earlier_capsules_is_refused(
    resumed_twice: tuple[Path, Path, Path], tmp_path: Path, edit: Any, message: str
) -> None:
    _, second, _ = resumed_twice
    with pytest.raises(CheckpointError, match=message):
        checkpoint.load(rewrite_metadata(second, tmp_path / "bad.npz", edit))


def test_a_version_1_checkpoint_holds_none(resumed_twice: tuple[Path, Path, Path]) -> None:
    saved = checkpoint.load(resumed_twice[1])
    version_1: dict[str, Any] = dict(
        version=1, training=None, split_seed=None, torch_threads=None, torch_threads_segments=None,
        environment=None, data_sha256=None, capsules=None, capsules_order=None, earlier_capsules=None)
    dataclasses.replace(saved, **version_1)  # what version 1 holds
    with pytest.raises(CheckpointError, match="a version 1 checkpoint has no earlier_capsules"):
        dataclasses.replace(saved, **{**version_1, "earlier_capsules": saved.earlier_capsules_json()})


def test_segments_that_ran_the_same_capsules_share_one_entry(
    capsys: pytest.CaptureFixture[str], resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """review149 F1: each resume copied a whole capsule list, so a run resumed some hundreds of
    times wrote metadata that load refuses; consecutive segments under one capsule table with one
    list are now one entry with a count."""
    _, second, third = resumed_twice
    for epochs in (4, 5):
        code, _, _ = cli(capsys, "train", "--resume", str(third), "--epochs", str(epochs),
                         "--save", str(third))
        assert code == 0
    meta = metadata(third)
    assert meta["torch_threads_segments"] == [1] * 5
    assert [entry["segments"] for entry in meta["earlier_capsules"]] == [1, 3]
    assert meta["earlier_capsules"][1]["capsules"] == metadata(second)["capsules"] == meta["capsules"]
    code, out, _ = cli(capsys, "inspect", str(third))
    assert ("  segments 2-4 of 5: the last segment's capsule table; 5 capsules, all in the last segment's "
            "list") in out.splitlines()

    def relabel(edited: dict[str, Any]) -> None:  # review150 F2: a run of segments is named whole
        row = next(r for r in edited["earlier_capsules"][1]["capsules"] if r["capsule"] == "aten.relu")
        row["vjp"] = "torchlean-tape"

    code, out, _ = cli(capsys, "inspect", str(rewrite_metadata(third, tmp_path / "relabelled.npz", relabel)))
    assert ("capsules_match: differs from this torchlean's for profile fast_cpu (aten.relu (relu, as "
            "segments 2-4 ran it): vjp torchlean-tape, now backend-vjp)") in out.splitlines()


def test_an_earlier_row_relabelled_is_named_with_its_segment(
    capsys: pytest.CaptureFixture[str], resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """review149 F2: a capsule of an earlier segment with the last segment's op and name but other
    labels (a relabel between torchlean versions) was shown with the last segment's labels."""
    third = resumed_twice[2]

    def relabel(meta: dict[str, Any]) -> None:
        row = next(r for r in meta["earlier_capsules"][1]["capsules"] if r["capsule"] == "aten.relu")
        row["vjp"] = "torchlean-tape"  # as an earlier torchlean labelled it

    edited = rewrite_metadata(third, tmp_path / "relabelled.npz", relabel)
    code, out, err = cli(capsys, "inspect", str(edited), "--report-json", str(tmp_path / "r.json"))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert ("capsules_match: differs from this torchlean's for profile fast_cpu (aten.relu (relu, as "
            "segment 2 ran it): vjp torchlean-tape, now backend-vjp)") in lines
    assert "    relu: aten.relu provider=aten trust=checked vjp=torchlean-tape reduction=n/a" in lines
    record = json.loads((tmp_path / "r.json").read_text())
    assert record["capsules_differences"] == [
        {"op": "relu", "capsule": "aten.relu", "segment": 2, "now": {"vjp": "backend-vjp"}}]


def test_save_refuses_metadata_load_would_refuse(
    resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """review149 F1: save wrote metadata beyond what load reads (2**24 characters), replacing a
    file load could read with one it refuses."""
    path = tmp_path / "kept.npz"
    path.write_bytes(resumed_twice[1].read_bytes())
    saved = checkpoint.load(path)
    huge = dataclasses.replace(saved, label_column="y" * 2**24)
    with pytest.raises(CheckpointError, match=r"its metadata has \d+ characters, more than load reads "
                                              r"\(16777216\); nothing was written"):
        checkpoint.save(path, huge)
    assert path.read_bytes() == resumed_twice[1].read_bytes()


def test_inspect_when_the_last_segment_s_environment_or_capsules_are_not_recorded(
    capsys: pytest.CaptureFixture[str], resumed_twice: tuple[Path, Path, Path], tmp_path: Path
) -> None:
    """Without the last segment's environment the earlier digest is shown as it is; without its
    capsules, every earlier capsule is listed (none can be said to be in the last list)."""
    _, second, _ = resumed_twice
    meta = metadata(second)
    older = meta["earlier_capsules"][0]["capsule_table_sha256"]

    def without_environment(edited: dict[str, Any]) -> None:
        edited["environment"] = None

    def without_capsules(edited: dict[str, Any]) -> None:
        del edited["capsules"], edited["capsules_order"]

    for edit, expected in (
        (without_environment, f"  segment 1 of 2: capsule table {older}; 5 capsules, 1 not in the last "
                              "segment's list:"),
        (without_capsules, f"  segment 1 of 2: another capsule table ({older}); 5 capsules, the last "
                           "segment's are unknown:"),
    ):
        path = rewrite_metadata(second, tmp_path / f"{edit.__name__}.npz", edit)
        code, out, err = cli(capsys, "inspect", str(path))
        assert (code, err) == (0, "")
        lines = out.splitlines()
        assert expected in lines, out
        listed = lines[lines.index(expected) + 1:]
        rows = 1 if edit is without_environment else 5
        assert all(line.startswith("    ") for line in listed[:rows]) and not listed[rows].startswith("    ")
