"""review67 F4: ``--output``, ``--report-json`` and ``attention-check --json`` are written through
a temporary file renamed over the target, so a write that fails (a full disk) leaves an existing
file whole and no partial or temporary file behind; ``-`` (standard output, which the shell may
have redirected to a file it holds open) and pipes are written in place."""

from __future__ import annotations

import errno
import json
import os
import stat
import subprocess
import sys
import threading
from pathlib import Path
from typing import IO, Any

import pytest
from cli_runs import cli

from torchlean import _atomic


def writer(data: bytes) -> Any:
    """A ``replace_file`` callback writing ``data``."""
    def write(handle: IO[bytes]) -> None:
        handle.write(data)
    return write


def _full_disk(handle: IO[bytes]) -> None:
    handle.write(b"partial")
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


def test_a_failed_write_leaves_the_old_file_and_no_temporary(tmp_path: Path) -> None:
    target = tmp_path / "old.json"
    target.write_text('{"ok": 1}\n')
    target.chmod(0o640)
    with pytest.raises(OSError, match="No space left on device"):
        _atomic.replace_file(target, _full_disk)
    assert target.read_text() == '{"ok": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]
    # a new file: nothing is left behind either
    with pytest.raises(OSError):
        _atomic.replace_file(tmp_path / "new.json", _full_disk)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


def test_a_replaced_file_keeps_its_permissions_and_links_their_target(tmp_path: Path) -> None:
    target = tmp_path / "r.json"
    target.write_text("old")
    target.chmod(0o600)
    link = tmp_path / "link.json"
    link.symlink_to(target)
    _atomic.replace_file(link, writer(b"new"))
    assert link.is_symlink() and target.read_text() == "new"
    assert stat.S_IMODE(target.stat().st_mode) == 0o600
    fresh = tmp_path / "fresh.json"
    _atomic.replace_file(fresh, writer(b"x"))
    assert stat.S_IMODE(fresh.stat().st_mode) == 0o666 & ~_atomic.umask()


@pytest.mark.parametrize("argv", [
    ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--report-json", "{out}"],
    ["attention-check", "--quick", "--no-progress", "--json", "{out}"],
])
def test_the_cli_keeps_an_old_file_when_the_rename_fails(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch,
                                                         argv: list[str]) -> None:
    out = tmp_path / "old.json"
    out.write_text('{"ok": 1}\n')

    def no_space(*_: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_atomic.os, "replace", no_space)
    code, _, err = cli(capsys, *[word.format(out=out) for word in argv])
    assert code == 2 and err.startswith("error: cannot write ")
    assert err.endswith(f" {out}: No space left on device\n")
    assert out.read_text() == '{"ok": 1}\n'
    assert sorted(p.name for p in tmp_path.iterdir()) == ["old.json"]


def test_predict_output_keeps_an_old_file(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    saved = tmp_path / "m.npz"
    train = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1"]
    assert cli(capsys, *train, "--save", str(saved))[0] == 0
    out = tmp_path / "old.csv"
    out.write_text("prediction\nsetosa\n")

    def no_space(*_: Any) -> None:
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(_atomic.os, "replace", no_space)
    code, _, err = cli(capsys, "predict", str(saved), "--dataset", "iris", "--output", str(out))
    assert (code, err.splitlines()[-1]) == (2, f"error: cannot write --output {out}: No space left on device")
    assert out.read_text() == "prediction\nsetosa\n"
    monkeypatch.undo()
    assert cli(capsys, "predict", str(saved), "--dataset", "iris", "--output", str(out))[0] == 0
    assert len(out.read_text().splitlines()) == 151  # the header and 150 rows: replaced whole


def test_stdout_redirected_to_a_file_is_written_in_place(tmp_path: Path) -> None:
    """``--report-json -`` with stdout redirected to a file: the JSON goes into the file the shell
    opened (replacing that file would leave stdout writing to an unlinked one)."""
    out = tmp_path / "out.json"
    with out.open("w") as handle:
        argv = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--report-json", "-"]
        done = subprocess.run([sys.executable, "-m", "torchlean", *argv], stdout=handle,
                              stderr=subprocess.PIPE, text=True, timeout=300, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(out.read_text())["dataset"] == "iris"


def test_a_fifo_is_written_in_place(tmp_path: Path) -> None:
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received: list[bytes] = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()))
    reader.start()
    _atomic.replace_file(fifo, writer(b"through the pipe"))
    reader.join(timeout=30)
    assert received == [b"through the pipe"] and stat.S_ISFIFO(fifo.stat().st_mode)


def test_the_umask_is_read_without_changing_it(monkeypatch: pytest.MonkeyPatch) -> None:
    """review76 F7: reading the umask set it to 0o022 for a moment, in which another thread's new
    file got other permissions; on Linux it is read from /proc (oracle: the mask set here), and
    ``os.umask`` is not called."""
    import os

    if not Path("/proc/self/status").exists():
        pytest.skip("no /proc")
    before = os.umask(0o027)
    try:
        called: list[int] = []
        real = os.umask
        monkeypatch.setattr(os, "umask", lambda mask: called.append(mask) or real(mask))
        assert _atomic.umask() == 0o027 and called == []
    finally:
        os.umask(before)


def test_the_bytes_are_on_disk_before_the_rename(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """review76 F7: the temporary file is fsynced before it is renamed over the target."""
    import os

    events: list[str] = []
    fsync, replace = os.fsync, os.replace
    monkeypatch.setattr(os, "fsync", lambda fd: events.append("fsync") or fsync(fd))
    monkeypatch.setattr(os, "replace", lambda a, b: events.append("replace") or replace(a, b))
    target = tmp_path / "out.bin"
    _atomic.replace_file(target, lambda handle: handle.write(b"abc"))
    assert events == ["fsync", "replace"] and target.read_bytes() == b"abc"


@pytest.mark.parametrize("name", ["n" * 251 + ".npz", "\u00e9" * 125 + ".npz"])
def test_a_name_the_file_system_takes_is_written_however_long(tmp_path: Path, name: str) -> None:
    """review163 F6: the temporary file's name (the target's, 14 bytes longer) went past 255 bytes
    for names of 242 to 255 bytes, which were refused; its copy of the name is cut now (the second
    name is cut inside a two-byte character)."""
    from torchlean._atomic import check_replaceable, replace_file

    target = tmp_path / name
    assert len(os.fsencode(name)) in (255, 254)
    check_replaceable(target)
    replace_file(target, lambda handle: handle.write(b"saved"))
    assert target.read_bytes() == b"saved" and sorted(p.name for p in tmp_path.iterdir()) == [name]


def test_the_temporary_name_fits_the_folders_own_name_limit(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review164 F6: the cut follows the folder's PC_NAME_MAX (a file system with a smaller limit),
    and a limit under 16 bytes keeps none of the name."""
    from torchlean import _atomic

    for limit in (100, 14):
        monkeypatch.setattr(_atomic, "_name_max", lambda folder, limit=limit: limit)
        handle = _atomic._temporary(tmp_path / ("n" * 200 + ".npz"))
        handle.close()
        name = Path(handle.name).name
        os.unlink(handle.name)
        assert len(os.fsencode(name)) <= limit and name.startswith("." + "n" * max(limit - 16, 0) + ".")
