"""review128 F1: the check before a command's work creates (and removes) the temporary file that the
writer (``torchlean._atomic.replace_file``) creates beside an output and renames over it. An
existing output file in a folder that takes no new file was passed by the check (the file itself
could be opened), so the run did all its work and was lost at save time; now it is refused up
front with the one-line error a new path in that folder gets, and nothing is left in the folder."""

from __future__ import annotations

import contextlib
import os
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from cli_runs import cli

from torchlean import _atomic
from torchlean.backend.errors import TorchLeanError
from torchlean.cli._output import check_writable

_TRAIN = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1"]
TEMPORARY = "the temporary file written beside it and renamed over it cannot be created there: "


@contextlib.contextmanager
def _closed(folder: Path) -> Iterator[None]:
    """``folder`` takes no new file while inside: without write permission for a user; for root,
    who may write anything, made immutable (``chattr +i``), else the test is skipped."""
    if os.geteuid() != 0:
        folder.chmod(0o555)
        try:
            yield
        finally:
            folder.chmod(0o755)
        return
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+i", str(folder)], capture_output=True).returncode != 0:
        pytest.skip("root, and the folder cannot be made immutable (chattr) here")
    try:
        yield
    finally:
        subprocess.run([chattr, "-i", str(folder)], check=True)


@pytest.fixture
def saved(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> Path:
    path = tmp_path / "m.npz"
    assert cli(capsys, *_TRAIN, "--save", str(path))[0] == 0
    return path


@pytest.mark.parametrize(("argv", "what", "name"), [
    ([*_TRAIN, "--save", "{out}"], "--save", "x.npz"),
    ([*_TRAIN, "--report-json", "{out}"], "--report-json", "x.json"),
    (["predict", "{saved}", "--dataset", "iris", "--output", "{out}"], "--output", "p.csv"),
    (["predict", "{saved}", "--dataset", "iris", "--output", "{tmp}/p.csv", "--report-json", "{out}"],
     "--report-json", "x.json"),
    (["inspect", "{saved}", "--report-json", "{out}"], "--report-json", "x.json"),
    (["attention-check", "--quick", "--no-progress", "--json", "{out}"], "--json", "x.json"),  # review216 F7
    (["train", "--resume", "{out}", "--epochs", "2", "--save", "{out}"], "--save", "r.npz"),
])
def test_an_existing_output_in_a_closed_folder_is_refused_before_the_work(
        capsys: pytest.CaptureFixture[str], tmp_path: Path, saved: Path, argv: list[str], what: str,
        name: str) -> None:
    folder = tmp_path / "closed"
    folder.mkdir()
    out = folder / name
    shutil.copyfile(saved, out)  # a checkpoint, so that --resume reads it; any bytes for the others
    before = out.read_bytes()
    words = [word.format(out=out, saved=saved, tmp=tmp_path) for word in argv]
    new = folder / f"new-{name}"
    with _closed(folder):
        code, stdout, err = cli(capsys, *words)
        if "--resume" in words:  # a new --save path next to the checkpoint read
            new_words = [*words[:-1], str(new)]
        else:
            new_words = [str(new) if word == str(out) else word for word in words]
        new_code, _, new_err = cli(capsys, *new_words)
    assert (new_code, new_err.count("\n")) == (2, 1)
    assert new_err.startswith(f"error: cannot write {what} {new}: ")
    reason = new_err.split(": ")[-1]
    # review131 F6: the refusal says it is the temporary file that cannot be created
    assert (code, stdout, err) == (2, "", f"error: cannot write {what} {out}: {TEMPORARY}{reason}")
    assert out.read_bytes() == before
    assert sorted(path.name for path in folder.iterdir()) == [name]


def _refuse_new_files_in(folder: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """The temporary files ``_atomic`` creates in ``folder`` are refused as a folder without write
    permission refuses them (EACCES), whoever runs the test."""
    original = tempfile.NamedTemporaryFile

    def refusing(*args: Any, **kwargs: Any) -> Any:
        if Path(kwargs.get("dir") or ".") == folder:
            raise PermissionError(13, "Permission denied")
        return original(*args, **kwargs)

    monkeypatch.setattr(_atomic.tempfile, "NamedTemporaryFile", refusing)


def test_the_check_creates_the_writers_temporary_file(tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    out = tmp_path / "x.json"
    out.write_text("old\n")
    _refuse_new_files_in(tmp_path, monkeypatch)
    refusal = rf"^cannot write --report-json .*/x\.json: {TEMPORARY}Permission denied$"
    with pytest.raises(TorchLeanError, match=refusal):
        check_writable(out, "--report-json")
    assert out.read_text() == "old\n"


def test_a_name_as_long_as_the_file_system_takes_is_saved(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """The temporary file's name is ``.<name>.<random>.tmp``, longer than the output's own: a
    name the file system takes whose temporary name it does not was refused only at save time,
    then refused before the work; since review163 F6 the temporary name keeps only what fits, and
    the output is saved. A name beyond the limit is refused before the work."""
    limit = os.pathconf(tmp_path, "PC_NAME_MAX")
    out = tmp_path / ("a" * (limit - len(".npz")) + ".npz")
    code, stdout, err = cli(capsys, *_TRAIN, "--save", str(out))
    assert (code, err) == (0, "") and stdout.endswith(f"saved: {out}\n")
    assert list(tmp_path.iterdir()) == [out]
    longer = tmp_path / ("a" * (limit + 1 - len(".npz")) + ".npz")
    code, stdout, err = cli(capsys, *_TRAIN, "--save", str(longer))
    assert (code, stdout) == (2, "")
    assert err == f"error: cannot write --save {longer}: File name too long\n"


def test_the_check_leaves_no_file_behind(tmp_path: Path) -> None:
    existing = tmp_path / "x.json"
    existing.write_text("old\n")
    check_writable(existing, "--report-json")
    check_writable(tmp_path / "sub" / "new.npz", "--save", regular=True)
    assert [path.name for path in tmp_path.iterdir()] == ["x.json"]
    assert existing.read_text() == "old\n"


def test_the_probe_never_deletes_a_file_another_run_saved_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review163 F2: the probe of a missing output checked that it did not exist, then created it
    and deleted it; a checkpoint another run renamed into place between the two was deleted. Here
    the other run's file appears just after the probe's first look at the target."""
    target = tmp_path / "m.npz"
    armed = True
    real_exists, real_open = Path.exists, os.open

    def saved_by_another_run() -> None:
        nonlocal armed
        if armed:
            armed = False
            target.write_bytes(b"the other run's checkpoint")

    def exists(self: Path, *args: Any, **kwargs: Any) -> bool:
        seen = real_exists(self, *args, **kwargs)
        if self == target and armed:
            saved_by_another_run()  # just after the look: the race window
        return seen

    def open_(path: Any, flags: int, *args: Any) -> int:
        if Path(path) == target:
            saved_by_another_run()  # just before the probe creates it
        return real_open(path, flags, *args)

    monkeypatch.setattr(Path, "exists", exists)
    monkeypatch.setattr(os, "open", open_)
    check_writable(target, "--save")
    assert target.read_bytes() == b"the other run's checkpoint"


@pytest.mark.parametrize("folder", ["", "new/"])
def test_the_probe_never_creates_the_output_itself(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, folder: str
) -> None:
    """review164 F1, F2: a probe that created the missing output and removed it again could still
    delete a file another run saved in between, and two racing probes left an empty output. The
    output is only opened when it exists; the folder is probed with the temporary file, a missing
    one by a folder of the probe's own beside it."""
    target = tmp_path / f"{folder}m.npz"
    opened: list[int] = []
    real_open = os.open

    def open_(path: Any, flags: int, *args: Any) -> int:
        if Path(path) == target:
            opened.append(flags)
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_)
    check_writable(target, "--save")
    assert not any(flags & os.O_CREAT for flags in opened)
    assert not target.exists() and not target.parent.exists() if folder else not target.exists()
    assert [path.name for path in tmp_path.iterdir()] == []  # the probe's own folder is gone


def test_the_probe_never_removes_a_folder_another_run_made_meanwhile(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review165 F2: the probe made the missing parent folders and removed them after; one that
    another run made meanwhile for its own save was removed under it, whose save then failed.
    Here the other run makes it just after the probe found it missing."""
    target = tmp_path / "det" / "sub" / "m.npz"
    real_exists = os.path.exists
    made = False

    def exists(path: Any) -> bool:
        nonlocal made
        seen = real_exists(path)
        if Path(path) == target.parent and not seen and not made:
            made = True
            target.parent.mkdir(parents=True)  # the other run's make_parents
        return seen

    monkeypatch.setattr(os.path, "exists", exists)
    check_writable(target, "--save")
    assert made and target.parent.is_dir()


def test_missing_folders_past_the_path_limit_are_refused(tmp_path: Path) -> None:
    """Their folders are not made by the probe, so the whole path's length is checked apart."""
    deep = tmp_path.joinpath(*["a" * 200] * 25) / "m.npz"  # > 4096 bytes, each name fits
    with pytest.raises(TorchLeanError, match="File name too long"):
        check_writable(deep, "--save")
    assert list(tmp_path.iterdir()) == []


def test_a_closed_standard_stream_as_an_output_is_refused_before_the_work(tmp_path: Path) -> None:
    """review165 F1: --report-json /dev/stderr with stderr closed passed the check once the probe
    stopped creating outputs, and the run failed after training."""
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", *_TRAIN, "--report-json", "/dev/stderr"],
        cwd=tmp_path, stdout=subprocess.PIPE, text=True, check=False, preexec_fn=lambda: os.close(2),
    )
    assert (done.returncode, done.stdout) == (2, "")  # refused before the header and the epochs


def test_a_name_past_the_folders_limit_is_refused_before_anything_is_made(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review165 F4: a file system that takes shorter names than ext4's 255 bytes (the name is
    checked against the folder's own PC_NAME_MAX, which the probe no longer learns by creating)."""
    monkeypatch.setattr(_atomic, "_name_max", lambda folder: 20)
    with pytest.raises(TorchLeanError, match=r"^cannot write --save .*/a{17}\.npz: File name too long$"):
        check_writable(tmp_path / ("a" * 17 + ".npz"), "--save")
    check_writable(tmp_path / ("a" * 16 + ".npz"), "--save")
    assert list(tmp_path.iterdir()) == []


def test_another_users_file_in_a_sticky_folder_is_refused_before_the_work(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review165 F3 (a): the file could be opened for writing and the folder takes new files, but
    in a folder with the sticky bit (as /tmp) only the file's owner, the folder's or root can
    rename over it: the save failed after training. Another user is played by os.geteuid."""
    folder = tmp_path / "shared"
    folder.mkdir()
    folder.chmod(0o1777)
    existing = folder / "o.npz"
    existing.write_bytes(b"old")
    owner = existing.stat().st_uid
    check_writable(existing, "--save")  # the owner replaces it
    monkeypatch.setattr(os, "geteuid", lambda: owner + 4242)
    monkeypatch.setattr(_atomic, "_acts_as_owner", lambda _info: True)  # the tests' own user may lack it
    check_writable(existing, "--save")  # another user acting as owner (CAP_FOWNER) replaces it too
    monkeypatch.setattr(_atomic, "_acts_as_owner", lambda _info: False)  # review169 F2: root may lack it
    with pytest.raises(TorchLeanError, match=r"o\.npz: Operation not permitted \(another user's file in a "
                       "folder with the sticky bit"):
        check_writable(existing, "--save")
    folder.chmod(0o777)  # no sticky bit: the folder's write permission is enough
    check_writable(existing, "--save")
    assert existing.read_bytes() == b"old"


def test_an_append_only_file_is_refused_before_the_work(tmp_path: Path) -> None:
    """review165 F3 (b): an append-only file (chattr +a) can be opened for appending, which the
    probe did, but no rename replaces it: the save failed after training."""
    existing = tmp_path / "ap.npz"
    existing.write_bytes(b"old")
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+a", str(existing)], capture_output=True).returncode:
        pytest.skip("chattr +a is not available here (no chattr, no CAP_LINUX_IMMUTABLE, or the file "
                    "system keeps no such flag)")
    try:
        with pytest.raises(TorchLeanError, match=r"ap\.npz: Operation not permitted \(the file is append-"):
            check_writable(existing, "--save")
    finally:
        subprocess.run([chattr, "-a", str(existing)], check=True)
    check_writable(existing, "--save")


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="CapEff is Linux's")
def test_acting_as_owner_is_the_fowner_capability_not_uid_0() -> None:
    """review169 F2: root without CAP_FOWNER (setpriv --bounding-set, docker --cap-drop FOWNER)
    cannot replace another user's file in a sticky folder, and another user holding it can; the
    probe reads CapEff. Oracle: the capability sets setpriv gives a child."""
    code = "import os; from torchlean import _atomic; print(_atomic._acts_as_owner(os.stat('/')))"
    env = {**os.environ, "PYTHONPATH": str(Path(_atomic.__file__).parents[1])}
    plain = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env, check=True)
    status = Path("/proc/self/status").read_text()
    effective = int(next(line for line in status.splitlines() if line.startswith("CapEff:")).split()[1], 16)
    assert plain.stdout.strip() == str(bool(effective >> 3 & 1))
    setpriv = shutil.which("setpriv")
    if setpriv is None or not effective >> 3 & 1:
        pytest.skip("needs setpriv and a process holding CAP_FOWNER")
    dropped = subprocess.run([setpriv, "--inh-caps=-fowner", "--bounding-set=-fowner", sys.executable, "-c",
                              code], capture_output=True, text=True, env=env)
    if dropped.returncode:
        pytest.skip(f"setpriv cannot drop CAP_FOWNER here: {dropped.stderr.strip()}")
    assert dropped.stdout.strip() == "False"


def test_the_flags_of_a_write_only_append_only_file_are_read(tmp_path: Path, monkeypatch: pytest.MonkeyPatch
                                                             ) -> None:
    """review169 F3: the flags were read through a new read-only open, which a file of mode 0200
    refuses to its (non-root) owner, so an append-only one passed; they are read through an append
    open then. Here the read-only open is refused as it would be."""
    existing = tmp_path / "wo.npz"
    existing.write_bytes(b"old")
    chattr = shutil.which("chattr")
    if chattr is None or subprocess.run([chattr, "+a", str(existing)], capture_output=True).returncode:
        pytest.skip("chattr +a is not available here")
    real_open = os.open

    def open_(path: Any, flags: int, *args: Any) -> int:
        if Path(path) == existing and flags & (os.O_WRONLY | os.O_RDWR) == 0:
            raise PermissionError(13, "Permission denied", str(path))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_)
    try:
        with pytest.raises(TorchLeanError, match=r"wo\.npz: Operation not permitted \(the file is append-"):
            check_writable(existing, "--save")
    finally:
        subprocess.run([chattr, "-a", str(existing)], check=True)


def test_a_temporary_path_past_the_limit_under_missing_folders_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review169 F4: the path check took the target's length, not the temporary file's 14 bytes
    longer one that the writer creates, so a target 1 to 14 bytes under the limit passed and the
    save failed after the work. The limit is played by pathconf."""
    target = tmp_path / "new" / "m.npz"
    length = len(os.fsencode(target))
    real_pathconf = os.pathconf

    def pathconf(path: Any, name: str) -> int:
        return length + 14 if name == "PC_PATH_MAX" else int(real_pathconf(path, name))

    monkeypatch.setattr(os, "pathconf", pathconf)
    with pytest.raises(TorchLeanError, match="File name too long"):
        check_writable(target, "--save")
    monkeypatch.setattr(os, "pathconf", lambda path, name: length + 15 if name == "PC_PATH_MAX"
                        else int(real_pathconf(path, name)))
    check_writable(target, "--save")  # its temporary file's path and NUL fit
    assert list(tmp_path.iterdir()) == []


def test_a_symbolic_link_loop_is_refused_before_the_work(tmp_path: Path) -> None:
    """review169 F5: a link loop reads as missing (os.path.exists is False), so the probe took it
    for a folder to make; the save then failed with "File exists"."""
    (tmp_path / "loop").symlink_to("loop")
    with pytest.raises(TorchLeanError, match=r"loop: Too many levels of symbolic links$"):
        check_writable(tmp_path / "loop" / "m.npz", "--save")


def test_an_unmapped_owner_is_not_acted_for_in_a_user_namespace(tmp_path: Path) -> None:
    """review171 F3: in a user namespace (rootless containers, ``unshare -U -r``) CapEff is full,
    but the kernel lets CAP_FOWNER act only on files whose owner and group are mapped there; a file
    of an unmapped owner passed the probe and the save failed after training."""
    unshare = shutil.which("unshare")
    if unshare is None or os.geteuid() != 0:
        pytest.skip("needs unshare and root, to own a file by nobody")
    theirs, ours = tmp_path / "theirs", tmp_path / "ours"
    theirs.write_bytes(b"")
    ours.write_bytes(b"")
    os.chown(theirs, 65534, 65534)
    code = ("import os, sys; from torchlean import _atomic; "
            "print(*(_atomic._acts_as_owner(os.stat(p)) for p in sys.argv[1:]))")
    env = {**os.environ, "PYTHONPATH": str(Path(_atomic.__file__).parents[1])}
    done = subprocess.run([unshare, "-U", "-r", sys.executable, "-c", code, str(theirs), str(ours)],
                          capture_output=True, text=True, env=env)
    if done.returncode:
        pytest.skip(f"no user namespace here: {done.stderr.strip()}")
    assert done.stdout.split() == ["False", "True"]  # root's own file is mapped (as 0) there


@pytest.mark.parametrize(
    ("argv", "option"),
    [
        ([*_TRAIN, "--save", "a\0b"], "--save"),
        ([*_TRAIN, "--report-json", "a\0b"], "--report-json"),
        (["attention-check", "--json", "a\0b"], "--json"),
        (["predict", "m.npz", "--dataset", "iris", "--output", "a\0b"], "--output"),
        (["predict", "m.npz", "--dataset", "iris", "--report-json", "a\0b"], "--report-json"),
        (["inspect", "m.npz", "--report-json", "a\0b"], "--report-json"),
        (["predict", "a\0b", "--dataset", "iris"], "CHECKPOINT"),
    ],
)
def test_a_path_with_a_nul_byte_is_refused_by_name_in_process(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, argv: list[str],
    option: str
) -> None:
    """review241 F5, review242 F2: ``cli.main`` with a NUL in a path (no shell can pass one; a Python
    caller can) raised ``os.path.realpath``'s (or ``Path.resolve``'s) bare ``ValueError: embedded
    null byte``; every file option refuses it as it is parsed."""
    monkeypatch.chdir(tmp_path)
    assert cli(capsys, *argv) == (
        2, "", f"error: argument {option}: expected a file path, got $'a\\x00b': the path holds a NUL byte, "
        "which no file name can\n"
    )
    assert list(tmp_path.iterdir()) == []
