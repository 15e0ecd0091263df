"""Writing a file so that a failed write (a full disk, an I/O error) leaves the file it would
replace whole: the bytes go to a temporary file beside the target, which is then renamed over it
(``os.replace``, atomic on POSIX file systems), as editors and ``torch.save`` users do by hand.

Used by :func:`torchlean.checkpoint.save` and by ``torchlean train --report-json``, ``predict
--output`` and ``--report-json``, ``inspect --report-json`` and ``attention-check --json`` (review67
F4).
"""

from __future__ import annotations

import errno
import hashlib
import os
import stat
import struct
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from typing import IO

__all__ = [
    "NUL_IN_PATH",
    "check_name_fits",
    "check_renamable_over",
    "check_replaceable",
    "check_temporary_path_fits",
    "replace_file",
    "resolve_links",
    "umask",
    "writes_in_place",
]

NUL_IN_PATH = "the path holds a NUL byte, which no file name can"
"""The reason a path with a NUL byte cannot be written or read (where Python raises a bare
``ValueError: embedded null byte``), as the ``strerror`` of the ``OSError`` raised here for it and
in the messages of :func:`torchlean.checkpoint.save` and :func:`torchlean.provenance.file_sha256`
(review239 F11)."""

_STREAMS = ("dev", "proc")
"""Top-level folders whose links name streams (``/dev/stdout``, ``/dev/fd/1``,
``/proc/self/fd/1``): a link there is written in place, never replaced (a regular file there, as
in ``/dev/shm``, is replaced as anywhere else)."""


def umask() -> int:
    """The process's file-creation mask: read from ``/proc/self/status`` (Linux 4.7+), which
    changes nothing; elsewhere by setting it and restoring it at once, a moment in which another
    thread creating a file would get 0o022 (review76 F7)."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            for line in status:
                if line.startswith("Umask:"):
                    return int(line.split()[1], 8)
    except (OSError, ValueError, IndexError):
        pass
    mask = os.umask(0o022)
    os.umask(mask)
    return mask


def writes_in_place(path: Path) -> bool:
    """Whether :func:`replace_file` writes ``path`` in place rather than replacing it: a stream's
    link (``/dev/stderr``, ``/proc/self/fd/1``) or an existing file that is not a regular one.

    Raises:
        OSError: a path with a NUL byte (:data:`NUL_IN_PATH`).
    """
    return _target(path) is None


def resolve_links(path: str | Path) -> Path:
    """``path`` with every symbolic link followed (``os.path.realpath``), refusing a loop of links.

    A loop at the last component was resolved to the link itself (``realpath`` without
    ``strict`` stops there), which a save then replaced with a regular file; a dangling link
    resolves to the path it names, which may be created.

    Raises:
        OSError: ``ELOOP`` (``Too many levels of symbolic links``) for a loop of links, as opening
            the path would; ``EINVAL`` with :data:`NUL_IN_PATH` for a path with a NUL byte
            (``realpath`` raised a bare ``ValueError``), so that callers catch one exception for
            every unusable path; what ``realpath`` raises (a name too long).
    """
    if "\0" in os.fsdecode(os.fspath(path)):
        raise OSError(errno.EINVAL, NUL_IN_PATH, os.fsdecode(os.fspath(path)))
    real = Path(os.path.realpath(path))
    if real.is_symlink():
        raise OSError(errno.ELOOP, os.strerror(errno.ELOOP), os.fsdecode(os.fspath(path)))
    return real


def _target(path: Path) -> Path | None:
    """The regular file (or absent one) to replace for ``path``, through symbolic links (a link
    keeps naming its target, which is replaced); None when ``path`` is to be written in place: a
    link under ``/dev`` or ``/proc`` (``-`` is ``/dev/stdout``, which may be redirected to a file
    the shell holds open: replacing that file would lose the rest of stdout), or an existing file
    that is not a regular one (a pipe, a device).

    Raises:
        OSError: as :func:`resolve_links` (a NUL byte, a loop of links), so that
            :func:`replace_file`'s and :func:`check_replaceable`'s callers catch one exception for
            every unusable path.
    """
    parts = Path(os.path.abspath(path)).parts
    if len(parts) > 1 and parts[1] in _STREAMS and os.path.islink(path):
        return None
    real = resolve_links(path)
    if real.exists() and not real.is_file():
        return None
    return real


_NAME_BYTES = 255
"""The longest file name (in bytes) of the usual file systems (ext4, XFS, btrfs, tmpfs), taken
where the folder's own limit (``PC_NAME_MAX``) cannot be read."""
_TEMPORARY_BYTES = 14
"""What the temporary file's name adds to the part of the target's it keeps: ``.`` + ``.`` + 8
random characters + ``.tmp``."""
_ADDED_BYTES = 16
""":data:`_TEMPORARY_BYTES` rounded up, kept free of the folder's name limit."""


def _name_max(folder: Path) -> int:
    """The longest file name (bytes) ``folder``'s file system takes."""
    try:
        return int(os.pathconf(folder, "PC_NAME_MAX"))
    except (OSError, ValueError):
        return _NAME_BYTES


def check_name_fits(path: Path, folder: Path | None = None) -> None:
    """Refuse a file name longer than the file system of ``folder`` (by default its own folder,
    which must exist) takes.

    Raises:
        OSError: ``ENAMETOOLONG`` (``File name too long``), as creating it would.
    """
    if len(os.fsencode(path.name)) > _name_max(path.parent if folder is None else folder):
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), str(path))


_FS_IOC_GETFLAGS = 0x80086601
"""Linux's ioctl reading a file's attribute flags (``linux/fs.h``; what ``lsattr`` prints)."""
_UNREPLACEABLE_FLAGS = 0x10 | 0x20
"""``FS_IMMUTABLE_FL`` and ``FS_APPEND_FL`` (``chattr +i``, ``chattr +a``): a rename over such a
file fails with ``EPERM``."""


_CAP_FOWNER = 3
"""Linux's capability to act on files as their owner would (``linux/capability.h``), which lets a
process replace another user's file in a sticky folder."""


def _acts_as_owner(info: os.stat_result) -> bool:
    """Whether the kernel lets this process replace the file ``info`` describes, another user's,
    in a sticky folder: on Linux, ``CAP_FOWNER`` in its effective capabilities (``CapEff`` of
    ``/proc/self/status``: root may lack it, under ``setpriv --bounding-set`` or ``docker run
    --cap-drop FOWNER``, and another user may hold it; review169 F2) with the file's owner and
    group mapped in its user namespace (``/proc/self/uid_map``, ``gid_map``: in a rootless
    container the capability does not reach files of unmapped owners; review171 F3); elsewhere,
    or where that cannot be read, an effective uid 0."""
    try:
        with open("/proc/self/status", encoding="ascii") as status:
            effective = next(line for line in status if line.startswith("CapEff:"))
        capable = bool(int(effective.split()[1], 16) >> _CAP_FOWNER & 1)
        return capable and _mapped(info.st_uid, "uid_map") and _mapped(info.st_gid, "gid_map")
    except (OSError, ValueError, IndexError, StopIteration):
        return os.geteuid() == 0


def _mapped(seen: int, table: str) -> bool:
    """Whether the id ``seen`` (as ``stat`` shows it in this user namespace, where an unmapped
    owner shows as the overflow id) falls in a range of ``/proc/self/<table>`` (lines ``inside
    outside count``); True where the table cannot be read."""
    try:
        with open(f"/proc/self/{table}", encoding="ascii") as ranges:
            rows = [tuple(int(field) for field in line.split()) for line in ranges if line.strip()]
    except (OSError, ValueError):
        return True
    return any(len(row) == 3 and row[0] <= seen < row[0] + row[2] for row in rows)


def _attribute_flags(target: Path) -> int:
    """``target``'s attribute flags (Linux's ``FS_IOC_GETFLAGS``, what ``lsattr`` shows), read
    through a descriptor opened for reading, else for appending (a file the caller may write but
    not read: review169 F3); 0 elsewhere, or where the file system keeps none or it cannot be
    opened."""
    if sys.platform != "linux":
        return 0
    import fcntl  # POSIX only; imported here so that this module imports everywhere

    for mode in (os.O_RDONLY, os.O_WRONLY | os.O_APPEND):
        try:
            descriptor = os.open(target, mode | os.O_NONBLOCK | os.O_NOCTTY)
        except OSError:
            continue
        try:
            return int(struct.unpack("i", fcntl.ioctl(descriptor, _FS_IOC_GETFLAGS, bytes(8))[:4])[0])
        except OSError:
            return 0
        finally:
            os.close(descriptor)
    return 0


def check_renamable_over(target: Path) -> None:
    """Refuse an existing regular file that a rename cannot replace although its folder takes new
    files (review165 F3): one of another user in a folder with the sticky bit (as ``/tmp``) that is
    not the caller's either, unless the caller acts as the owner (:func:`_acts_as_owner`:
    ``CAP_FOWNER``), or, on Linux, one marked append-only or immutable (``chattr +a``/``+i``; a
    file system that keeps no such flags, or a file that cannot be opened, is not refused here).

    Raises:
        PermissionError: ``EPERM``, its message saying which of the two.
    """
    info, folder, user = target.stat(), target.parent.stat(), os.geteuid()
    others = user not in (info.st_uid, folder.st_uid)
    if folder.st_mode & stat.S_ISVTX and others and not _acts_as_owner(info):
        raise PermissionError(errno.EPERM, f"{os.strerror(errno.EPERM)} (another user's file in a folder "
                              "with the sticky bit: only its owner can replace it)", str(target))
    if _attribute_flags(target) & _UNREPLACEABLE_FLAGS:
        raise PermissionError(errno.EPERM, f"{os.strerror(errno.EPERM)} (the file is append-only or "
                              "immutable, chattr +a or +i: no new file can replace it)", str(target))


def check_temporary_path_fits(target: Path, folder: Path) -> None:
    """Refuse a ``target`` whose temporary file (:func:`_temporary`'s name beside it: 14 bytes more
    than its own, unless the name is cut) has a path longer than the file system of the existing
    ``folder`` (``target``'s or one above it) takes (``PC_PATH_MAX``, its terminating NUL counted;
    review169 F4).

    Raises:
        OSError: ``ENAMETOOLONG`` (``File name too long``), as creating it would.
    """
    try:
        limit = int(os.pathconf(folder, "PC_PATH_MAX"))
    except (OSError, ValueError):
        return
    name = len(os.fsencode(target.name))
    kept = min(name, max(_name_max(folder) - _ADDED_BYTES, 0))
    if len(os.fsencode(os.path.abspath(target.parent))) + 1 + kept + _TEMPORARY_BYTES >= limit:
        raise OSError(errno.ENAMETOOLONG, os.strerror(errno.ENAMETOOLONG), str(target))


def _temporary(target: Path) -> IO[bytes]:
    """A new, empty temporary file beside ``target``, ``.<name>.<random>.tmp``, open for writing:
    what :func:`replace_file` writes and renames over ``target`` (and :func:`check_replaceable`
    creates and removes), left in place when closed. A name too long for that (on ext4, 242 bytes
    or more) is cut there to what fits, so that every name the file system takes can be written
    (review163 F6)."""
    name = target.name
    kept = max(_name_max(target.parent) - _ADDED_BYTES, 0)  # a limit under 16 bytes: none of it
    if len(os.fsencode(name)) > kept:  # cut as bytes; a character cut in two stays those bytes
        name = os.fsdecode(os.fsencode(name)[:kept])
    return tempfile.NamedTemporaryFile(  # read back by replace_file for its digest
        "w+b", dir=target.parent, prefix=f".{name}.", suffix=".tmp", delete=False
    )


def check_replaceable(path: Path) -> None:
    """Create and remove the temporary file :func:`replace_file` would create for ``path`` (nothing
    for a path it writes in place), so that a folder which takes no new file (no write permission,
    an immutable or read-only one) or a name too long for the temporary file's longer name is found
    before a command does its work, also when ``path`` exists and could itself be written
    (review128 F1). The parent folder must exist.

    Raises:
        OSError: the temporary file cannot be created (or removed).
    """
    target = _target(path)
    if target is None:
        return
    handle = _temporary(target)
    try:
        handle.close()
    finally:
        os.unlink(handle.name)


def stream_sha256(handle: IO[bytes]) -> str:
    """SHA-256 (hex, ``sha256sum``'s) of the bytes of the open binary file ``handle`` from its
    start, read in 1 MiB blocks; ``handle`` is left at its start again.

    Raises:
        OSError: what reading ``handle`` raises.
    """
    handle.seek(0)
    digest = hashlib.sha256()
    for block in iter(lambda: handle.read(1 << 20), b""):
        digest.update(block)
    handle.seek(0)
    return digest.hexdigest()


def replace_file(path: Path, write: Callable[[IO[bytes]], None]) -> str | None:
    """Call ``write`` with a binary file open for writing, whose bytes become ``path``'s once it
    returns: a temporary file beside the target (``.<name>.<random>.tmp``) renamed over it, with
    the replaced file's permissions, else those of a new file under the umask (0666 less it), and
    its bytes flushed to the disk (``os.fsync``) before the rename, so a crash just after leaves the
    old file or the new one, not an empty one; the temporary file is removed when ``write`` or the
    rename fails. A stream or a non-regular file
    (see :func:`_target`) is written in place.

    Returns:
        The SHA-256 (hex, ``sha256sum``'s) of the bytes renamed into place, read back from the
        temporary file before the rename, so that it is of this write even when another process
        replaces ``path`` just after (review210 F6); ``None`` for a file written in place.

    Raises:
        OSError: the file cannot be written or renamed (the target is then unchanged, unless it
            is written in place); anything ``write`` raises.
    """
    target = _target(path)
    if target is None:
        with open(path, "wb") as handle:
            write(handle)
        return None
    temporary: Path | None = None
    try:
        with _temporary(target) as handle:
            temporary = Path(handle.name)
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())  # on disk before the rename (review76 F7): a crash leaves old or new
            digest = stream_sha256(handle)
        os.chmod(temporary, stat.S_IMODE(target.stat().st_mode) if target.exists() else 0o666 & ~umask())
        os.replace(temporary, target)
        temporary = None
        return digest
    finally:
        if temporary is not None:
            temporary.unlink(missing_ok=True)
