"""Standard output whose reader may go away (``torchlean ... | head``)."""

from __future__ import annotations

import contextlib
import io
import os
import sys
from collections.abc import Iterator, Sequence
from typing import Any, TextIO, cast

__all__ = ["ReaderMayLeave", "reader_may_leave", "silence_stdout"]


def silence_stdout() -> None:
    """Point the stdout file descriptor at the null device, so the interpreter's final flush of
    what stdout still buffers cannot fail again (and print a traceback) after the command ended."""
    with contextlib.suppress(OSError, ValueError, io.UnsupportedOperation):
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


class ReaderMayLeave:
    """A stand-in for ``stream`` (stdout) for a command that has files to write: when the reader
    of the pipe goes away (``BrokenPipeError``), the rest of the report goes to the null device
    and the command goes on; :attr:`gone` says whether that happened."""

    def __init__(self, stream: TextIO) -> None:
        self.stream = stream
        self.gone = False

    def write(self, text: str) -> int:
        if not self.gone:
            try:
                return self.stream.write(text)
            except BrokenPipeError:
                self._leave()
        return len(text)

    def flush(self) -> None:
        if not self.gone:
            try:
                self.stream.flush()
            except BrokenPipeError:
                self._leave()

    def _leave(self) -> None:
        self.gone = True
        silence_stdout()

    def __getattr__(self, name: str) -> Any:  # isatty, fileno, encoding ... of the stream
        return getattr(self.stream, name)


@contextlib.contextmanager
def reader_may_leave(files: Sequence[str], doer: str = "the run") -> Iterator[None]:
    """For a command with ``files`` to write (their names as shown; none: nothing changes): within
    the block stdout is a :class:`ReaderMayLeave`, so a reader that goes away (``| head -3``) does
    not stop the command before it writes them; when that happened, a ``note:`` on stderr after a
    block that ended without an exception names them (``note: ... went away; {doer} went on to
    write ...``)."""
    if not files:
        yield
        return
    stdout = ReaderMayLeave(sys.stdout)
    with contextlib.redirect_stdout(cast(TextIO, stdout)):
        yield
    if stdout.gone:
        print(
            f"note: the reader of standard output went away; {doer} went on to write {' and '.join(files)}",
            file=sys.stderr,
        )

