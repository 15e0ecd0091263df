"""Standard error as best effort: diagnostics that cannot be written (``2>&-``, ``2>/dev/full``)
must not stop a run that has results to write (review103 F1)."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import Any, TextIO, cast

__all__ = ["Diagnostics", "best_effort_stderr"]


class Diagnostics:
    """A stand-in for ``stream`` (stderr, or ``None`` when file descriptor 2 is closed): a write
    or flush that fails (``OSError``, ``ValueError`` of a closed file) drops this and every later
    diagnostic, and the command goes on; :attr:`lost` says whether that happened."""

    def __init__(self, stream: TextIO | None) -> None:
        self.stream = stream
        self.lost = stream is None

    def write(self, text: str) -> int:
        if not self.lost and self.stream is not None:
            try:
                return self.stream.write(text)
            except (OSError, ValueError):
                self.lost = True
        return len(text)

    def flush(self) -> None:
        if not self.lost and self.stream is not None:
            try:
                self.stream.flush()
            except (OSError, ValueError):
                self.lost = True

    def isatty(self) -> bool:  # no terminal behind a closed or failing stream (tqdm asks)
        if self.lost or self.stream is None:
            return False
        try:
            return self.stream.isatty()
        except (OSError, ValueError):
            return False

    def __getattr__(self, name: str) -> Any:  # fileno, encoding, ... of the stream
        if self.stream is None:
            raise AttributeError(name)
        return getattr(self.stream, name)


@contextlib.contextmanager
def best_effort_stderr() -> Iterator[Diagnostics]:
    """Within the block ``sys.stderr`` is a :class:`Diagnostics` over the current one (restored
    after, so in-process callers keep theirs): a run goes on to write its results, and its exit
    status says how it ended, when its notes, progress bars or error lines cannot be written."""
    diagnostics = Diagnostics(sys.stderr)
    with contextlib.redirect_stderr(cast(TextIO, diagnostics)):
        yield diagnostics
