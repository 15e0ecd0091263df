"""Hostile or damaged checkpoint files are ``CheckpointError``s, and ``save`` never leaves a
half-written file in place of a good one (review 6: exceptions other than the archive errors
escaped ``load`` and reached the CLI as tracebacks; ``save`` wrote in place)."""

from __future__ import annotations

import json
import zipfile
from pathlib import Path

import numpy as np
import pytest

from torchlean import checkpoint
from torchlean.checkpoint import CheckpointError
from torchlean.cli import main


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("ckpt") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


def _members(path: Path) -> dict[str, bytes]:
    with zipfile.ZipFile(path) as archive:
        return {name: archive.read(name) for name in archive.namelist()}


def _zip(path: Path, members: dict[str, bytes]) -> Path:
    with zipfile.ZipFile(path, "w") as archive:
        for name, payload in members.items():
            archive.writestr(name, payload)
    return path


def _with_metadata(good: Path, target: Path, text: str) -> Path:
    with np.load(good, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    arrays["metadata"] = np.array(text)
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


def test_metadata_json_beyond_python_limits_is_refused(good: Path, tmp_path: Path) -> None:
    meta = json.loads(str(np.load(good, allow_pickle=False)["metadata"]))
    huge_int = json.dumps(meta).replace('"seed": 0', '"seed": ' + "9" * 5000)
    deep = "[" * 100_000 + "]" * 100_000
    for name, text in (("bigint.npz", huge_int), ("deep.npz", deep)):
        expected = rf"{name}: not a torchlean checkpoint: the metadata is not JSON"
        with pytest.raises(CheckpointError, match=expected):
            checkpoint.load(_with_metadata(good, tmp_path / name, text))


def test_a_member_that_is_not_an_npy_array_is_refused(good: Path, tmp_path: Path) -> None:
    members = _members(good)
    del members["metadata.npy"]
    members["metadata"] = b'{"format": "torchlean-checkpoint"}'  # numpy returns a non-.npy member's bytes
    expected = r"raw.npz: not a torchlean checkpoint: entry 'metadata' is not a numpy array"
    with pytest.raises(CheckpointError, match=expected):
        checkpoint.load(_zip(tmp_path / "raw.npz", members))


def test_encrypted_and_unsupported_compression_members_are_refused(good: Path, tmp_path: Path) -> None:
    payload = bytearray(good.read_bytes())
    # set the "encrypted" bit (general purpose flag bit 0) of every local and central header
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        start = 0
        while (start := payload.find(signature, start)) != -1:
            payload[start + offset] |= 1
            start += 4
    encrypted = tmp_path / "encrypted.npz"
    encrypted.write_bytes(bytes(payload))
    with pytest.raises(CheckpointError, match=r"encrypted.npz: cannot read the .npz archive \(.*encrypted"):
        checkpoint.load(encrypted)
    payload = bytearray(good.read_bytes())
    for signature, offset in ((b"PK\x03\x04", 8), (b"PK\x01\x02", 10)):  # compression method 99
        start = 0
        while (start := payload.find(signature, start)) != -1:
            payload[start + offset] = 99
            start += 4
    method = tmp_path / "method99.npz"
    method.write_bytes(bytes(payload))
    with pytest.raises(CheckpointError, match=r"method99.npz: (cannot read|not a numpy .npz)"):
        checkpoint.load(method)


def test_a_failed_save_leaves_the_existing_checkpoint_whole(
    good: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    target = tmp_path / "model.npz"
    target.write_bytes(good.read_bytes())
    saved = checkpoint.load(good)

    def fail_midway(handle: object, **arrays: object) -> None:
        assert hasattr(handle, "write")
        handle.write(b"PK\x03\x04 partial")  # type: ignore[attr-defined]
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(np, "savez", fail_midway)
    expected = r"cannot write checkpoint .*model.npz: No space left on device"
    with pytest.raises(CheckpointError, match=expected):
        checkpoint.save(target, saved)
    assert target.read_bytes() == good.read_bytes()
    assert sorted(p.name for p in tmp_path.iterdir()) == ["model.npz"]  # the temporary file is gone
