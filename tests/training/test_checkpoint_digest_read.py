"""review207 F7: ``inspect`` printed, and ``predict --report-json`` recorded, a ``checkpoint_sha256``
of a second read of the file, after ``checkpoint.load`` had read it; another process's ``--save``
replacing the file between the reads paired one file's contents with another's digest. review237
F2: digesting the path before and after the read still could, where the file was replaced and
replaced back with identical bytes meanwhile. Now the file is opened once, and digested, read and
digested again through that one open file (``checkpoint.load_digested``): a file renamed over it
meanwhile (as ``--save`` writes) changes nothing read, and one written in place is refused.

Oracle: ``hashlib.sha256`` of the file's bytes; the archive reader wrapped to replace the file
right after reading it, by a rename (as a concurrent ``--save`` would) or in place.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
from pathlib import Path

import pytest
from cli_runs import cli

from torchlean import checkpoint, provenance
from torchlean.cli import main


@pytest.fixture(scope="module")
def two(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("digest")
    first, second = folder / "first.npz", folder / "second.npz"
    for path, epochs in ((first, "1"), (second, "2")):
        argv = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", epochs, "--save", str(path)]
        assert main(argv) == 0
    return first, second


def _sha256(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


def _replaced_after_reading(
    monkeypatch: pytest.MonkeyPatch, path: Path, other: Path, *, rename: bool
) -> None:
    """After the archive is read, ``path`` is replaced by a copy of ``other``: renamed over it (as
    ``--save`` writes) or written into it in place."""
    original = checkpoint._read_archive

    def read(archive: object) -> object:
        result = original(archive)  # type: ignore[arg-type]
        if rename:
            copy = path.with_suffix(".tmp")
            shutil.copyfile(other, copy)
            os.replace(copy, path)
        else:
            shutil.copyfile(other, path)
        return result

    monkeypatch.setattr(checkpoint, "_read_archive", read)


def _argv(command: str, path: Path, tmp_path: Path) -> list[str]:
    argv = [command, str(path), "--report-json", str(tmp_path / "record.json")]
    if command == "predict":
        argv += ["--dataset", "iris", "--output", str(tmp_path / "p.csv")]
    return argv


@pytest.mark.parametrize("command", ["inspect", "predict"])
def test_the_digest_is_of_the_bytes_read(two, tmp_path, capsys, command):
    first, _ = two
    code, _, err = cli(capsys, *_argv(command, first, tmp_path))
    assert code == 0, err
    assert json.loads((tmp_path / "record.json").read_text())["checkpoint_sha256"] == _sha256(first)


@pytest.mark.parametrize("command", ["inspect", "predict"])
def test_a_checkpoint_renamed_over_while_it_is_read_is_read_whole_with_its_digest(
    two, tmp_path, capsys, monkeypatch, command
):
    """review237 F2: what was read and the digest recorded are both the file that was opened."""
    first, second = two
    path = tmp_path / "m.npz"
    shutil.copyfile(first, path)
    expected = _sha256(first)
    if command == "predict":
        code, _, err = cli(capsys, *_argv(command, first, tmp_path))
        assert code == 0, err
        predictions = (tmp_path / "p.csv").read_text()
    _replaced_after_reading(monkeypatch, path, second, rename=True)
    code, _, err = cli(capsys, *_argv(command, path, tmp_path))
    assert code == 0, err
    assert _sha256(path) == _sha256(second) != expected  # the rename happened
    record = json.loads((tmp_path / "record.json").read_text())
    assert record["checkpoint_sha256"] == expected
    if command == "predict":
        assert (tmp_path / "p.csv").read_text() == predictions  # the first file's model predicted
    else:
        assert record["weights_sha256"] == provenance.weights_sha256(checkpoint.load(first).weights)


@pytest.mark.parametrize("command", ["inspect", "predict"])
def test_a_checkpoint_written_in_place_while_it_is_read_is_refused(
    two, tmp_path, capsys, monkeypatch, command
):
    first, second = two
    path = tmp_path / "m.npz"
    shutil.copyfile(first, path)
    _replaced_after_reading(monkeypatch, path, second, rename=False)
    argv = _argv(command, path, tmp_path)
    code, out, err = cli(capsys, *argv)
    assert code == 2 and out == ""
    assert err == (
        f"error: checkpoint {path} changed while it was read (written in place by another program), so what "
        "was read and its digest may differ; run the command again once it is written\n"
    )
    assert not (tmp_path / "record.json").exists()
    # the file as it stands now is read and digested as usual
    monkeypatch.undo()
    assert cli(capsys, *argv)[0] == 0
    assert json.loads((tmp_path / "record.json").read_text())["checkpoint_sha256"] == _sha256(second)


def test_predict_without_a_record_does_not_digest(two, tmp_path, capsys, monkeypatch):
    # no digest is reported, so the file is read once, as before
    first, second = two
    path = tmp_path / "m.npz"
    shutil.copyfile(first, path)
    _replaced_after_reading(monkeypatch, path, second, rename=False)
    code, _, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--output", str(tmp_path / "p.csv"))
    assert code == 0, err


@pytest.mark.parametrize("command", ["inspect", "predict"])
def test_a_fifo_given_as_the_checkpoint_is_refused_without_waiting_for_a_writer(tmp_path, command):
    """review210 (seen in passing): the digest read the FIFO before the reader refused it, so the
    command waited for a writer that never came. A child process, so that a hang fails the test
    instead of stalling it."""
    import os
    import subprocess
    import sys

    fifo = tmp_path / "ckpt.npz"
    os.mkfifo(fifo)
    argv = [sys.executable, "-m", "torchlean", command, str(fifo), "--report-json", str(tmp_path / "r.json")]
    if command == "predict":
        argv += ["--dataset", "iris", "--output", str(tmp_path / "p.csv")]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (f"error: checkpoint {fifo} is not a regular file (a device or a pipe); give the "
                           "path of a file written by torchlean train --save\n")


def test_save_returns_the_digest_of_the_file_it_wrote(two, tmp_path):
    """review210 F6: ``checkpoint.save`` digests the bytes it renames into place; through a link
    (``/dev/stdout`` redirected to a file is one: review225 F3), of the file it names."""
    path = tmp_path / "copy.npz"
    assert checkpoint.save(path, checkpoint.load(two[0])) == _sha256(path)
    link = tmp_path / "link.npz"
    link.symlink_to(path)
    before = _sha256(path)
    digest = checkpoint.save(link, checkpoint.load(two[1]))
    assert link.is_symlink() and digest == _sha256(path) != before


def test_train_records_the_digest_of_what_it_saved_not_of_a_later_file(two, tmp_path, capsys, monkeypatch):
    """review210 F6: ``train --save --report-json`` read the file back after writing it, so another
    process's ``--save`` replacing it in between gave the record that file's digest."""
    from torchlean import _atomic

    _, other = two
    path, record = tmp_path / "m.npz", tmp_path / "record.json"
    written: list[str] = []
    original = _atomic.os.replace

    def replace(source: object, target: object) -> None:
        original(source, target)  # type: ignore[arg-type]
        if Path(target) == path.resolve():  # type: ignore[arg-type]
            written.append(_sha256(path))
            shutil.copyfile(other, path)  # another process's --save, just after ours

    monkeypatch.setattr(_atomic.os, "replace", replace)
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--hidden", "4", "--epochs", "1",
                       "--save", str(path), "--report-json", str(record))
    monkeypatch.undo()
    assert code == 0, err
    assert len(written) == 1 and written[0] != _sha256(other)
    assert json.loads(record.read_text())["checkpoint_sha256"] == written[0]
