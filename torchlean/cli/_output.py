"""Checking an output file path before a command does its work (one-line errors, no traceback)."""

from __future__ import annotations

import argparse
import contextlib
import errno
import io
import json
import math
import os
import shlex
import sys
import tempfile
from collections.abc import Iterable, Iterator, Sequence
from pathlib import Path, PosixPath, WindowsPath
from typing import IO, Any

from torchlean._atomic import (
    NUL_IN_PATH,
    check_name_fits,
    check_renamable_over,
    check_replaceable,
    check_temporary_path_fits,
    replace_file,
    resolve_links,
    writes_in_place,
)
from torchlean._csv import STDIN_SHOWN
from torchlean.backend.display import escaped, path_shown
from torchlean.backend.errors import TorchLeanError
from torchlean.data import STDIN

__all__ = [
    "METRIC_FIXED_LIMIT",
    "STDOUT",
    "check_distinct",
    "check_writable",
    "dataset_name",
    "escaped",
    "file_path",
    "given_path",
    "header_value",
    "input_dataset",
    "is_stdout",
    "loss_text",
    "make_parents",
    "metric_text",
    "output_path",
    "report_beside",
    "shell_word",
    "shown_path",
    "shown_text",
    "source_note",
    "strict_json",
    "write_json_record",
    "write_text_file",
]


STDOUT = Path("/dev/stdout")
"""What ``-`` names as an output file (the Unix convention)."""

if sys.platform == "win32":
    _ConcretePath = WindowsPath
else:
    _ConcretePath = PosixPath


class GivenPath(_ConcretePath):
    """A path given on the command line that prints as it was typed: ``str()`` and
    ``os.fspath()`` are the text given (``./-``, ``./m.npz``, ``a//b``), which the operating
    system reads as the same file, where ``Path`` drops a leading ``./`` (``Path("./-")`` prints
    ``-``, which the commands read as standard input or output: review63 F2). Equality and
    hashing are those of the plain ``Path`` (``GivenPath`` of ``./x`` equals ``Path("x")``);
    paths derived from it (``parent``, ``/``) print as a plain ``Path`` does. Made by
    :func:`given_path`."""

    _given: str | None = None

    def __str__(self) -> str:
        return super().__str__() if self._given is None else self._given

    def _plain(self) -> Path:
        return Path(super().__str__())

    def __eq__(self, other: object) -> bool:
        return self._plain() == (other._plain() if isinstance(other, GivenPath) else other)

    def __hash__(self) -> int:
        return hash(self._plain())


def given_path(text: str) -> Path:
    """``text`` as a :class:`GivenPath`: a ``Path`` that prints as ``text`` (messages, header
    lines, ``wrote``/``saved`` lines and JSON records name a path as the user typed it)."""
    path = GivenPath(text)
    path._given = text
    return path


def output_path(text: str) -> Path:
    """argparse ``type`` of an output-file option: the path (a :class:`GivenPath`, printed as typed:
    ``./-`` is a file named ``-``), ``-`` standing for standard output
    (:data:`STDOUT`; :func:`report_beside` then keeps the report off it), refusing the empty string
    (which ``Path`` would turn into ``.``, the current directory) and a path that names a folder by
    its spelling (``x/``, ``x/.``, ``..``).

    Raises:
        argparse.ArgumentTypeError: ``expected a file path, got ''`` (or ``'x/'``, saying why).
    """
    _refuse_non_file(text)
    return STDOUT if text == "-" else given_path(text)


def _refuse_non_file(text: str) -> None:
    """Refuse the empty string and a path that names a folder by its spelling: one ending in ``/``,
    ``/.`` or ``/..``, or ``.`` or ``..`` itself (``Path`` would silently turn ``out/`` and
    ``out/.`` into the file name ``out``), and a path holding a NUL byte, which no file name can
    (``os.path.realpath`` and ``Path.resolve`` raised a bare ``ValueError`` from the checks that
    follow, review241 F5, review242 F2)."""
    if text == "":
        raise argparse.ArgumentTypeError("expected a file path, got ''")
    if "\0" in text:
        raise argparse.ArgumentTypeError(f"expected a file path, got {path_shown(text)}: {NUL_IN_PATH}")
    if text.endswith(("/", os.sep)) or os.path.basename(text) in (".", ".."):
        raise argparse.ArgumentTypeError(f"expected a file path, got {text!r} (it names a folder)")
    _refuse_unexpanded_home(text)


def _refuse_unexpanded_home(text: str) -> None:
    """Refuse a path starting with a ``~`` the shell left unexpanded (``--save=~/m.npz``: bash
    expands ``~`` only at the start of a word), unless a folder named ``~`` is here: an output's
    missing parents are created, so it made a folder named ``~`` (review163 F5), which a later
    ``rm -rf ~`` meant to remove would not be."""
    first, slash, _ = text.partition("/")
    if not first.startswith("~") or os.path.exists(first) or not (slash or first == "~"):
        return  # ~user/x too (review164 F3); a file named ~user is a name of its own
    home = (f"$HOME{text[1:]}" if first == "~"  # the shell leaves ~user as it is for no such user
            else f"{first} unquoted at the start of a word (where user {first[1:]} exists)")
    raise argparse.ArgumentTypeError(
        f"expected a file path, got {text!r}: the shell did not expand {first} (it expands it only at the "
        f"start of a word: not after = or in quotes), and nothing named {first} is here; write {home}, or "
        f"./{text} for a name {first} here"  # review164 F4: also where no option is involved
    )


def file_path(text: str) -> Path:
    """argparse ``type`` of a path that must name a file (``train --save``, ``predict``'s
    checkpoint), as a :class:`GivenPath` (printed as typed): refuses the empty string (``Path``
    would turn it into ``.``), ``-`` (a checkpoint is written to and read from a file, not a
    stream; a file named ``-`` is ``./-``) and a path that names a folder by its spelling
    (``x/``, ``x/.``, ``..``).

    Raises:
        argparse.ArgumentTypeError: ``expected a file path, got ''`` (or ``'-'``, ``'x/'``, saying
            why).
    """
    if text == "-":
        raise argparse.ArgumentTypeError(
            "expected a file path, got '-' (standard input and output are not accepted here; "
            "a file named - is ./-)"
        )
    _refuse_non_file(text)
    return given_path(text)


def input_dataset(text: str) -> str:
    """argparse ``type`` of ``--dataset``: ``-`` stands for standard input (``/dev/stdin``, read
    as a CSV file); anything else is kept as given, but a ``~`` the shell left unexpanded
    (:func:`_refuse_unexpanded_home`)."""
    _refuse_unexpanded_home(text)
    return STDIN if text == "-" else text


def dataset_name(dataset: str) -> str:
    """``--dataset`` (after :func:`input_dataset`) as the header lines and records name it: ``-``
    for standard input, as the README and the command line call it (review59 F11: not
    ``/dev/stdin``, which :func:`input_dataset` reads it as), else as given (a path keeps its
    spelling, ``./iris`` its ``./``)."""
    return "-" if dataset == STDIN else dataset


def data_shown(dataset: str | os.PathLike[str]) -> str:
    """``--dataset`` as messages name the data: standard input (``-`` or :data:`STDIN`) as the
    reader's messages name it, ``standard input (-)`` (:data:`torchlean._csv.STDIN_SHOWN`), else
    :func:`shown_path` of it."""
    return STDIN_SHOWN if os.fspath(dataset) in ("-", STDIN) else shown_path(dataset)


def check_writable(path: Path, what: str, *, regular: bool = False) -> None:
    """Refuse ``path`` unless a file can be written there. Nothing the writer makes is made here,
    so a run that fails later leaves nothing behind: missing parent folders are checked by making
    and removing a folder of the probe's own in the nearest existing one (the writer makes them:
    :func:`make_parents`); an existing file is left as it is (opened for appending, nothing
    written). For a file whose folder exists, the probe then creates and removes the temporary file
    that the writer writes beside the file and renames over it
    (:func:`torchlean._atomic.check_replaceable`), so an existing file in a folder that takes no new
    file, or a name too long for the temporary file's name, is refused here too, not after the
    work (review128 F1). An existing device or pipe (``/dev/stdout``, a
    FIFO, a shell's ``>(...)``) is checked for write permission only, never opened (a FIFO's
    reader would see the probe's close as the end of the data). ``regular``: the output replaces
    the file (a checkpoint is written beside it and renamed over it), so an existing path that is
    not a regular file (``/dev/null``, a FIFO) is refused rather than replaced.

    Raises:
        TorchLeanError: ``cannot write <what> <path>: <reason>`` — it is a directory, a parent is
            a file, it is not a regular file (``regular``), or the OS refuses (permissions,
            read-only file system, a name too long, a loop of links, a NUL byte:
            :func:`torchlean._atomic.resolve_links`, review241 F5).
    """
    try:  # Path.is_dir() and exists() raise what is not "no such file" (a name too long)
        is_dir, exists, is_file = path.is_dir(), path.exists(), path.is_file()
        target = resolve_links(path)  # a symbolic link: probe the file it names, keep the link
    except OSError as error:
        raise TorchLeanError(f"cannot write {what} {shown_path(path)}: {error.strerror or error}") from None
    if is_dir:
        raise TorchLeanError(f"cannot write {what} {shown_path(path)}: it is a directory")
    if exists and not is_file:  # a device or a pipe (/dev/stdout, a FIFO, >(...))
        if regular:
            raise TorchLeanError(
                f"cannot write {what} {shown_path(path)}: it exists and is not a regular file (a device or a "
                "pipe would be replaced); give a file path"
            )
        if not os.access(path, os.W_OK):  # not opened: opening a FIFO would block or end its reader
            raise TorchLeanError(f"cannot write {what} {shown_path(path)}: permission denied")
        return
    for folder in target.parents:
        if os.path.exists(folder):  # False for a name too long (the checks below report it)
            if not folder.is_dir():
                raise TorchLeanError(
                    f"cannot write {what} {shown_path(path)}: {shown_path(folder)} is a file, not a directory"
                )
            break
        if os.path.islink(folder):  # a link loop (ELOOP): not a folder still to make (review169 F5)
            raise TorchLeanError(
                f"cannot write {what} {shown_path(path)}: {shown_path(folder)}: "
                f"{os.strerror(errno.ELOOP)}"
            )
    try:
        if folder != target.parent:  # missing folders: the writer makes them (make_parents)
            _check_new_folders(target, folder)
            return
        existed = True
        try:  # an existing file: writable? Never created here: a probe that created the target and
            # removed it again deleted a checkpoint another run renamed into place meanwhile, or left
            # an empty one when two probes raced (review163 F2, review164 F1, F2)
            os.close(os.open(target, os.O_WRONLY | os.O_APPEND | os.O_NONBLOCK))
            check_renamable_over(target)
        except FileNotFoundError:  # a new file: the folder's part is the temporary file's probe below
            if writes_in_place(path):  # /dev/stderr of a closed stderr: nothing to write into, none
                raise  # to create (review165 F1)
            existed = False
            check_name_fits(target)
    except OSError as error:
        raise TorchLeanError(f"cannot write {what} {shown_path(path)}: {error.strerror or error}") from None
    try:
        check_replaceable(path)
    except OSError as error:  # the file could be written, the folder takes no new one (review131 F6)
        # a new file: the folder takes no new file, that one no more than the temporary one
        where = ": the temporary file written beside it and renamed over it cannot be created there"
        where = where if existed else ""
        raise TorchLeanError(
            f"cannot write {what} {shown_path(path)}{where}: {error.strerror or error}"
        ) from None


def _check_new_folders(target: Path, folder: Path) -> None:
    """Check that the missing folders between the existing ``folder`` and the file ``target`` can
    be made: ``folder`` takes a new folder (one of the probe's own, uniquely named, made and
    removed; the missing ones are never made here, as a probe that made and removed them removed
    them under another run that had just made them for its own save: review165 F2) and each name
    fits the file system's limit, and so does the path of the temporary file the writer creates
    beside ``target`` (review169 F4).

    Raises:
        OSError: ``folder`` takes no new folder (permissions, a read-only file system), or a name
            or the temporary file's whole path is too long (``ENAMETOOLONG``).
    """
    os.rmdir(tempfile.mkdtemp(prefix=".torchlean-", suffix=".tmp", dir=folder))
    for part in target.relative_to(folder).parts:
        check_name_fits(folder / part, folder)
    check_temporary_path_fits(target, folder)


def make_parents(path: Path, what: str) -> None:
    """Create the missing parent folders of ``path`` before writing it.

    Raises:
        TorchLeanError: ``cannot write <what> <path>: <reason>``.
    """
    if os.path.exists(path):  # nothing to create; a pipe's resolved path (pipe:[N]) names no folder
        return
    try:
        Path(os.path.realpath(path)).parent.mkdir(parents=True, exist_ok=True)  # through a link: its target's
    except OSError as error:
        raise TorchLeanError(f"cannot write {what} {shown_path(path)}: {error.strerror or error}") from None


def _same_file(a: Path, b: Path) -> bool:
    """Whether ``a`` and ``b`` name one file: :func:`os.path.samefile` when both exist (links,
    ``./x`` and ``x``), else their resolved paths are equal."""
    try:
        if a.exists() and b.exists():
            return os.path.samefile(a, b)
        return a.resolve() == b.resolve()
    except (OSError, RuntimeError):  # a link loop, an unreadable folder: not provably the same
        return False


def check_distinct(
    outputs: Sequence[tuple[str, Path | None]], inputs: Sequence[tuple[str, Path]] = ()
) -> None:
    """Refuse two given outputs that name one file, or an output that names an existing input
    file (writing it would destroy the input). Each entry is ``(what, path)``, ``what`` as the
    message names it (``--save``, ``the checkpoint``); an output ``None`` was not given.

    Raises:
        TorchLeanError: ``<what> <path> and <what> <path> name the same file ...`` or
            ``<what> <path> is <input what> <path> ...``.
    """
    given = [(what, path) for what, path in outputs if path is not None]
    for i, (what, path) in enumerate(given):
        for other_what, other in given[:i]:
            if _same_file(path, other):
                raise TorchLeanError(
                    f"{other_what} {shown_path(other)} and {what} {shown_path(path)} name the same file; "
                    "give them different paths"
                )
        for input_what, source in inputs:
            if os.path.exists(source) and _same_file(path, source):  # False for a name too long
                raise TorchLeanError(
                    f"{what} {shown_path(path)} is {input_what} {shown_path(source)}: writing it would "
                    "destroy that input; give another path"
                )


def shown_path(path: str | os.PathLike[str]) -> str:
    """``path`` as a line of the report prints it (:func:`torchlean.backend.display.path_shown`):
    as given when each of its characters is printable and standard output's encoding writes it,
    else in bash's ``$'...'`` quoting (review207 F8), its escapes inside: a byte of a file name
    that is not UTF-8 as the byte (``\\xfd``), a character that is not printable (a line break,
    an escape character: review103 F4) or that stdout cannot write (any non-ASCII character under
    ``PYTHONIOENCODING=ascii``: review200 F7) as its escape. Printed as is, such names raised
    ``UnicodeEncodeError`` after the command's work was done (the checkpoint saved, the run
    reported as failed)."""
    return path_shown(os.fspath(path), getattr(sys.stdout, "encoding", None) or "utf-8")


def shell_word(path: str | os.PathLike[str]) -> str:
    """``path`` as one word to paste into a shell command a message suggests: :func:`shown_path`'s
    ``$'...'`` where the name needs escapes (one word already), else the name shell-quoted
    (:func:`shlex.quote`; ``shlex.quote`` of a ``$'...'`` form named another file)."""
    shown = shown_path(path)
    return shown if shown != os.fspath(path) else shlex.quote(shown)


def shown_text(text: str) -> str:
    """A text that is no path (a name from a checkpoint, written as a Python literal where it holds
    what is not printable: :func:`torchlean.data.display_name`) as standard output's encoding
    writes it: each character that is not printable, or that the encoding cannot write, as Python's
    backslash escape (``\\u00e9`` under ``PYTHONIOENCODING=ascii``, ``\\ud800`` for a lone
    surrogate: review67 F14)."""
    encoding = getattr(sys.stdout, "encoding", None) or "utf-8"
    return escaped(text).encode(encoding, "backslashreplace").decode(encoding)


def source_note() -> str:
    """The ``note:`` line of a command whose records carry ``torchlean_source_sha256`` when this
    torchlean's source cannot be digested (:func:`torchlean.provenance.source_fault`), else "".
    Asked before the command's work, it also computes the digest once for the records."""
    from torchlean import provenance

    fault = provenance.source_fault()
    if fault is None:
        return ""
    return f"note: {escaped(fault)}; the records carry torchlean_source_sha256 null (unknown)\n"


def header_value(path: str | os.PathLike[str]) -> str:
    """``path`` (or another text: ``trained_on=``, the checkpoint's dataset) as a ``key=value``
    header line shows it (``dataset=``, ``checkpoint=``): its characters that are not printable
    written as backslash escapes (:func:`escaped`: ``trained_on='a\\nb'``, one line, review67 F2),
    and those stdout cannot write too (:func:`shown_text`), shell-quoted (:func:`shlex.quote`) when
    shell splitting would not give it back as one word (a blank, a quote, a backslash:
    ``dataset='my data.csv'``), so the line splits into its pairs (``shlex.split``; review63 F7);
    else as is. Not :func:`shown_path`'s ``$'...'``, which ``shlex.split`` does not read: a name
    holding a backslash and one holding what is escaped can print alike here (review207 F8)."""
    shown = shown_text(os.fspath(path))
    try:
        whole = shlex.split(shown) == [shown]
    except ValueError:  # a quote left open
        whole = False
    return shown if whole else shlex.quote(shown)


def is_stdout(path: Path | None) -> bool:
    """Whether ``path`` names the file the process's standard output writes to (``/dev/stdout``,
    ``/dev/fd/1``, or the very file stdout is redirected to), so a report printed to stdout would
    be mixed into it. False when stdout has no file descriptor (a test's capture)."""
    if path is None or sys.stdout is None:  # no stdout at all (started with fd 1 closed)
        return False
    try:
        ours, theirs = os.fstat(sys.stdout.fileno()), os.stat(path)
    except (OSError, ValueError, io.UnsupportedOperation):
        return False
    return (ours.st_dev, ours.st_ino) == (theirs.st_dev, theirs.st_ino)


@contextlib.contextmanager
def report_beside(*paths: Path | None) -> Iterator[None]:
    """Print the command's report to stderr while it runs when one of its output files ``paths``
    is stdout itself (:func:`is_stdout`), so that stdout carries only that file's content (or, for
    a checkpoint renamed over it, the report is not lost with the replaced file)."""
    if not any(is_stdout(path) for path in paths):
        yield
        return
    with contextlib.redirect_stdout(sys.stderr):
        yield


def strict_json(value: Any) -> Any:
    """``value`` with every non-finite float (a diverged run's losses or ``test_mse``) replaced by
    ``None``, so the record is standard JSON (``null``; Python's ``NaN`` token is not JSON and
    strict parsers refuse it)."""
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    if isinstance(value, dict):
        return {key: strict_json(item) for key, item in value.items()}
    if isinstance(value, list):
        return [strict_json(item) for item in value]
    return value


def write_json_record(path: Path, record: dict[str, Any]) -> None:
    """Write ``record`` to ``path`` as ``--report-json`` does (``train``, ``predict``,
    ``inspect``): indented strict JSON (:func:`strict_json`) and a newline, missing parent folders
    created, through a temporary file renamed over ``path`` (:func:`torchlean._atomic.replace_file`:
    a failed write leaves an existing file whole; ``-`` and other streams are written in place).

    Raises:
        TorchLeanError: ``cannot write --report-json PATH: <reason>``.
        BrokenPipeError: the reader of a pipe (``-``) went away: torchlean's main exits 141.
    """
    write_text_file(path, json.dumps(strict_json(record), indent=2, allow_nan=False) + "\n", "--report-json")


def write_text_file(path: Path, text: str | Iterable[str], what: str) -> None:
    """Write ``text`` (UTF-8), or its pieces in order (an iterable of strings, encoded one at a
    time, so a large file never stands in memory whole: review155 M1), to the output file ``path``
    of option ``what``, missing parent folders created (:func:`make_parents`), through a temporary
    file renamed over it (:func:`torchlean._atomic.replace_file`: a failed write, as on a full disk,
    leaves an existing file whole, review67 F4; ``-`` and other streams are written in place).

    Raises:
        TorchLeanError: ``cannot write <what> <path>: <reason>``.
        BrokenPipeError: the reader of a pipe (``-``) went away: torchlean's main exits 141.
    """
    make_parents(path, what)
    pieces = [text] if isinstance(text, str) else text

    def write(handle: IO[bytes]) -> None:
        for piece in pieces:
            handle.write(piece.encode("utf-8"))

    try:
        replace_file(path, write)
    except BrokenPipeError:
        raise
    except OSError as error:
        raise TorchLeanError(f"cannot write {what} {shown_path(path)}: {error.strerror or error}") from None


METRIC_FIXED_LIMIT = 1e9
"""A metric of this magnitude or more is printed in exponent form (:func:`metric_text`)."""
METRIC_SMALL_LIMIT = 1e-4
"""A nonzero metric below this magnitude is printed in exponent form (:func:`metric_text`), which
``.4f`` would print as ``0.0000``."""


def loss_text(value: float) -> str:
    """A loss as the epoch lines print it (``loss=``, ``val_loss=``, ``best_epoch=``'s): ``.6f``
    (``0.123456``, the original's ``loss=`` form), for zero and when not finite; below
    :data:`METRIC_SMALL_LIMIT` in magnitude, 7 significant digits in exponent form
    (``8.382916e-06``, not ``0.000008``: a well-fitting run keeps its digits, review68 F4), and so
    from :data:`METRIC_FIXED_LIMIT` on (``8.822795e+75``, not 76 digits: review91 F10)."""
    small = value != 0.0 and abs(value) < METRIC_SMALL_LIMIT
    if math.isfinite(value) and (small or abs(value) >= METRIC_FIXED_LIMIT):
        return f"{value:.6e}"
    return f"{value:.6f}"


def metric_text(value: float) -> str:
    """A metric as the report lines print it (``test_mse=``, ``val_mse=``, predict's ``mse=``):
    ``.4f`` (``3400.4113``) from :data:`METRIC_SMALL_LIMIT` to below :data:`METRIC_FIXED_LIMIT` in
    magnitude once rounded, for zero and when not finite (``nan``); else 7 significant digits in
    exponent form: ``1.567498e+58``, not 60 digits of fixed point, and ``1.090232e-07``, not
    ``0.0000`` (review59 F3)."""
    fixed = f"{value:.4f}"
    if not math.isfinite(value) or value == 0.0:
        return fixed
    if abs(value) >= METRIC_SMALL_LIMIT and abs(float(fixed)) < METRIC_FIXED_LIMIT:
        return fixed
    return f"{value:.6e}"
