"""``extension.build_lock``: a build lock left by a killed build no longer hangs later loads.

torch's ``cpp_extension.load`` waits, with no limit, for the ``lock`` file of its build
directory to go away; a build killed mid-way leaves that file. These tests leave such a file
(and hold torchlean's own lock from another open file, as another process would) and check what
``build_lock`` and a real load of the host-emulation build then do.
"""

from __future__ import annotations

import fcntl
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path
from types import ModuleType

from torchlean.backend.providers.native_cuda import extension


def test_a_left_lock_is_removed_and_reported(tmp_path: Path) -> None:
    (tmp_path / "lock").touch()
    notes: list[str] = []
    with extension.build_lock(tmp_path, notes.append):
        assert not (tmp_path / "lock").exists()
    assert notes == [f"torchlean: removed {tmp_path / 'lock'}, the build lock of an interrupted build"]


def test_without_a_left_lock_nothing_is_reported(tmp_path: Path) -> None:
    notes: list[str] = []
    with extension.build_lock(tmp_path, notes.append):
        (tmp_path / "lock").touch()  # torch's own lock, taken inside the block, stays torch's
    assert notes == []
    assert (tmp_path / "lock").exists()


def test_a_held_lock_is_waited_for_and_its_build_lock_kept(tmp_path: Path) -> None:
    """While another holder has torchlean's lock, its torch ``lock`` file is live: the block
    waits (and says so) instead of removing it, and clears it only once the holder is gone."""
    (tmp_path / "lock").touch()
    entered = threading.Event()
    waiting = threading.Event()
    notes: list[str] = []

    def note(message: str) -> None:
        notes.append(message)
        waiting.set()

    def build() -> None:
        with extension.build_lock(tmp_path, note):
            entered.set()

    with open(tmp_path / "torchlean.flock", "a") as holder:
        fcntl.flock(holder, fcntl.LOCK_EX)
        thread = threading.Thread(target=build)
        thread.start()
        assert waiting.wait(timeout=60)
        assert not entered.is_set()
        assert (tmp_path / "lock").exists()
        fcntl.flock(holder, fcntl.LOCK_UN)
    thread.join(timeout=60)
    assert entered.is_set()
    assert notes == [
        f"torchlean: waiting for another process that builds or loads {tmp_path}",
        f"torchlean: removed {tmp_path / 'lock'}, the build lock of an interrupted build",
    ]


def test_a_load_after_a_killed_build_does_not_hang(emulation_module: ModuleType, tmp_path: Path) -> None:
    """The emulation build is cached; with a left ``lock`` in its directory torch alone would wait
    forever. A fresh process loads it, removes the file and says so. It loads a private copy of the
    cached build (``$TORCH_EXTENSIONS_DIR``): a test in another worker that loads the shared one
    meanwhile would remove a lock left there itself, and this process would find none."""
    shared = extension.build_directory(extension.EMULATION_NAME, extension.sources_dir())
    env = dict(os.environ, TORCH_EXTENSIONS_DIR=str(tmp_path / "extensions"))
    directory = tmp_path / "extensions" / shared.name
    shutil.copytree(shared, directory, ignore=shutil.ignore_patterns("lock", "torchlean.flock"))
    (directory / "lock").touch()
    code = (
        "from torchlean.backend.providers.native_cuda import extension\n"
        "print(extension.build_directory(extension.EMULATION_NAME, extension.sources_dir()))\n"
        "print(extension.load_host_emulation().__name__)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600, env=env)
    left = (directory / "lock").exists()
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [str(directory), extension.EMULATION_NAME]  # the private copy
    assert f"removed {directory / 'lock'}" in done.stderr
    assert not left


def test_the_lock_of_a_killed_holder_is_free(tmp_path: Path) -> None:
    """The operating system drops torchlean's lock with its holder: a process that took it and was
    killed leaves nothing that blocks the next build."""
    code = (
        "import fcntl, os, sys\n"
        "handle = open(sys.argv[1], 'a')\n"
        "fcntl.flock(handle, fcntl.LOCK_EX)\n"
        "open(sys.argv[2], 'a').close()\n"
        "os.kill(os.getpid(), 9)\n"
    )
    killed = subprocess.run(
        [sys.executable, "-c", code, str(tmp_path / "torchlean.flock"), str(tmp_path / "lock")], timeout=60
    )
    assert killed.returncode == -9
    notes: list[str] = []
    with extension.build_lock(tmp_path, notes.append):
        pass
    assert notes == [f"torchlean: removed {tmp_path / 'lock'}, the build lock of an interrupted build"]
