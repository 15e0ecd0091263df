"""review96 M1: the version is 0.1.0 for every build, so the environment block also records
``torchlean_source_sha256``, a digest of the package's files. Oracle: the digest of a small
directory is computed here by hand from the documented layout (path, NUL, size, NUL, bytes, in
path order); a checkpoint's recorded digest is edited here; an earlier torchlean's block (without
the key) still loads, as unknown."""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runs import cli, rewrite_metadata

from torchlean import checkpoint, provenance
from torchlean.checkpoint import CheckpointError

SMALL = ("--dataset", "iris", "--hidden", "4", "--epochs", "1")


@pytest.fixture
def package(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    """A stand-in package directory that :func:`provenance.source_sha256` digests."""
    root = tmp_path / "pkg"
    (root / "sub").mkdir(parents=True)
    (root / "__pycache__").mkdir()
    (root / "sub" / "__pycache__").mkdir()
    (root / "b.py").write_bytes(b"x = 1\n")
    (root / "sub" / "k.cu").write_bytes(b"")
    (root / "a.typed").write_bytes(b"\xff\x00")
    (root / "__pycache__" / "b.cpython-311.pyc").write_bytes(b"compiled")
    (root / "sub" / "__pycache__" / "c.txt").write_bytes(b"skipped too")
    (root / "stale.pyc").write_bytes(b"compiled")
    monkeypatch.setattr(provenance, "_PACKAGE", root)
    provenance.source_sha256.cache_clear()
    yield root
    provenance.source_sha256.cache_clear()


def test_the_digest_is_the_documented_one(package: Path) -> None:
    by_hand = hashlib.sha256(
        b"a.typed\x002\x00\xff\x00" + b"b.py\x006\x00x = 1\n" + b"sub/k.cu\x000\x00"
    ).hexdigest()
    assert provenance.source_sha256() == by_hand


def test_a_changed_byte_or_an_added_file_changes_the_digest(package: Path) -> None:
    before = provenance.source_sha256()
    (package / "b.py").write_bytes(b"x = 2\n")
    assert provenance.source_sha256() == before  # computed once per process
    provenance.source_sha256.cache_clear()
    edited = provenance.source_sha256()
    assert edited != before
    (package / "sub" / "new.h").write_bytes(b"")
    provenance.source_sha256.cache_clear()
    assert provenance.source_sha256() not in (before, edited)
    (package / "sub" / "__pycache__" / "more.pyc").write_bytes(b"?")
    (package / "sub" / "new.h").unlink()
    provenance.source_sha256.cache_clear()
    assert provenance.source_sha256() == edited


def _refuse_reading(monkeypatch: pytest.MonkeyPatch, name: str) -> None:
    """``Path.read_bytes`` of a file named ``name`` fails as an unreadable file does."""
    real = Path.read_bytes

    def refuse(path: Path) -> bytes:
        if path.name == name:
            raise PermissionError(13, "Permission denied")
        return real(path)

    monkeypatch.setattr(Path, "read_bytes", refuse)


def test_an_unreadable_package_file_is_named(package: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    _refuse_reading(monkeypatch, "b.py")
    refusal = f"cannot read {package / 'b.py'} to digest torchlean's source: Permission denied"
    with pytest.raises(provenance.TorchLeanError, match=refusal):
        provenance.source_sha256()


def test_the_environment_records_this_torchleans_digest() -> None:
    block = provenance.environment(["x"])
    digest = block["torchlean_source_sha256"]
    assert provenance.is_sha256(digest) and digest == provenance.source_sha256()
    assert list(block)[:2] == ["torchlean", "torchlean_source_sha256"]


def _edited(source: Path, target: Path, edit: Callable[[dict[str, Any]], object]) -> Path:
    return rewrite_metadata(source, target, lambda meta: edit(meta["environment"]))


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Path:
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("source") / "m.npz"
    assert main(["train", *SMALL, "--save", str(path)]) == 0
    return path


def test_a_checkpoint_records_the_digest_and_inspect_compares_it(capsys: pytest.CaptureFixture[str],
                                                                 saved: Path, tmp_path: Path) -> None:
    loaded = checkpoint.load(saved)
    assert loaded.environment is not None
    assert loaded.environment["torchlean_source_sha256"] == provenance.source_sha256()
    report = tmp_path / "same.json"
    code, out, err = cli(capsys, "inspect", str(saved), "--report-json", str(report))
    assert (code, err) == (0, "")
    assert "torchlean_source: same as this torchlean's" in out.splitlines()
    assert json.loads(report.read_text())["torchlean_source_matches"] is True

    other = _edited(saved, tmp_path / "other.npz", lambda env: env.update(torchlean_source_sha256="a" * 64))
    report = tmp_path / "other.json"
    code, out, err = cli(capsys, "inspect", str(other), "--report-json", str(report))
    assert (code, err) == (0, "")
    version = provenance.environment()["torchlean"]
    assert (f"torchlean_source: differs from this torchlean's ({provenance.source_sha256()}): another build "
            f"of torchlean {version} wrote it") in out.splitlines()
    assert json.loads(report.read_text())["torchlean_source_matches"] is False
    # review104 L4: another version is not "another build"
    older = _edited(saved, tmp_path / "older.npz",
                    lambda env: env.update(torchlean_source_sha256="a" * 64, torchlean="0.0.1"))
    code, out, err = cli(capsys, "inspect", str(older))
    assert (code, err) == (0, "")
    assert (f"torchlean_source: differs from this torchlean's ({provenance.source_sha256()}): torchlean "
            f"0.0.1 wrote it, this is {version}") in out.splitlines()


def test_an_earlier_torchleans_block_loads_as_unknown(capsys: pytest.CaptureFixture[str], saved: Path,
                                                      tmp_path: Path) -> None:
    earlier = _edited(saved, tmp_path / "earlier.npz", lambda env: env.pop("torchlean_source_sha256"))
    loaded = checkpoint.load(earlier)
    assert loaded.environment is not None
    assert tuple(loaded.environment) == provenance.ENVIRONMENT_KEYS
    assert loaded.environment["torchlean_source_sha256"] is None
    report = tmp_path / "earlier.json"
    code, out, err = cli(capsys, "inspect", str(earlier), "--report-json", str(report))
    assert (code, err) == (0, "")
    assert "torchlean_source: unknown (no digest recorded)" in out.splitlines()
    assert json.loads(report.read_text())["torchlean_source_matches"] is None
    code, _, err = cli(capsys, "train", "--resume", str(earlier), "--epochs", "2")
    assert code == 0 and "other software" not in err  # unknown is not another build


def test_another_key_missing_is_still_refused(saved: Path, tmp_path: Path) -> None:
    def drop_both(env: dict[str, Any]) -> None:
        env.pop("torchlean_source_sha256")
        env.pop("numpy")

    path = _edited(saved, tmp_path / "both.npz", drop_both)
    keys = ", ".join(provenance.ENVIRONMENT_KEYS)
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == (f"{path}: environment must have the keys of provenance.environment() "
                                 f"({keys}): missing 'torchlean_source_sha256', 'numpy'")


@pytest.mark.parametrize("value", ["abc", "A" * 64, 5])
def test_a_malformed_digest_is_refused(saved: Path, tmp_path: Path, value: object) -> None:
    path = _edited(saved, tmp_path / "bad.npz", lambda env: env.update(torchlean_source_sha256=value))
    expected = (
        f"environment: 'torchlean_source_sha256' must be a string or None, got {value!r}" if value == 5
        else "environment: 'torchlean_source_sha256' must be 64 lowercase hex digits (a SHA-256) or None, "
        f"got {value!r}"
    )
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == f"{path}: {expected}"


def test_resume_notes_another_build_of_the_same_version(capsys: pytest.CaptureFixture[str], saved: Path,
                                                        tmp_path: Path) -> None:
    other = _edited(saved, tmp_path / "other.npz", lambda env: env.update(torchlean_source_sha256="b" * 64))
    code, _, err = cli(capsys, "train", "--resume", str(other), "--epochs", "2")
    assert code == 0
    version = provenance.environment()["torchlean"]
    assert (f"note: the run in {other} was written under other software than this one runs under "
            f"(torchlean {version}'s source: another build, whose digest torchlean inspect shows), so the "
            "resumed run may not be bit for bit the uninterrupted one") in err.splitlines()
    # another version as well: the version change is named, not the build too
    both = _edited(saved, tmp_path / "both.npz",
                   lambda env: env.update(torchlean_source_sha256="b" * 64, torchlean="0.0.1"))
    code, _, err = cli(capsys, "train", "--resume", str(both), "--epochs", "2")
    assert code == 0
    assert f"(torchlean 0.0.1 -> {version}), so the resumed run" in err
    assert "another build" not in err


def test_a_package_file_that_cannot_be_read_loses_no_run(
    capsys: pytest.CaptureFixture[str], package: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review104 H1: the digest was computed when the records were written, after the epochs: a
    package file that could not be read lost the whole run (no checkpoint, no record), and a
    file name that is not UTF-8 raised UnicodeEncodeError. Now the name is digested as the file
    system's bytes, and an unreadable file is a note before the run, whose records say null."""
    odd = package / os.fsdecode(b"junk\xff.txt")
    odd.write_bytes(b"z")
    by_hand = hashlib.sha256(
        b"a.typed\x002\x00\xff\x00" + b"b.py\x006\x00x = 1\n" + b"junk\xff.txt\x001\x00z"
        + b"sub/k.cu\x000\x00"
    ).hexdigest()
    assert provenance.source_sha256() == by_hand == provenance.source_sha256_or_none()
    _refuse_reading(monkeypatch, "b.py")
    provenance.source_sha256.cache_clear()
    fault = f"cannot read {package / 'b.py'} to digest torchlean's source: Permission denied"
    assert provenance.source_fault() == fault
    assert provenance.source_sha256_or_none() is None
    assert provenance.environment(["x"])["torchlean_source_sha256"] is None
    saved, record = tmp_path / "m.npz", tmp_path / "r.json"
    code, out, err = cli(capsys, "train", *SMALL, "--save", str(saved), "--report-json", str(record))
    assert code == 0, err
    assert err == f"note: {fault}; the records carry torchlean_source_sha256 null (unknown)\n"
    assert json.loads(record.read_text())["environment"]["torchlean_source_sha256"] is None
    loaded = checkpoint.load(saved)
    assert loaded.environment is not None and loaded.environment["torchlean_source_sha256"] is None
    code, out, err = cli(capsys, "inspect", str(saved))
    assert code == 0 and f"torchlean_source: unknown ({fault})" in out.splitlines(), err
