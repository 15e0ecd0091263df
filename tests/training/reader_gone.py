"""Running the ``torchlean`` command with a standard output whose reader goes away at once."""

from __future__ import annotations

import subprocess
import sys


def run_with_stdout_reader_gone(*argv: str) -> tuple[int, str]:
    """Run ``torchlean ARGV | head -0``: the reader closes the pipe before reading anything (so
    the command's first flush fails whatever the timing); returns the exit status and stderr."""
    child = subprocess.Popen(
        [sys.executable, "-m", "torchlean", *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
    )
    assert child.stdout is not None and child.stderr is not None
    child.stdout.close()
    err = child.stderr.read()
    return child.wait(timeout=300), err
