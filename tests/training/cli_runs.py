"""Running ``torchlean`` in-process and reading the checkpoints it writes: the helpers the
train/resume/dropout CLI tests share."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torchlean.cli import main


def rewrite_metadata(source: Path, target: Path, edit: Any) -> Path:
    """A copy of checkpoint ``source`` whose metadata object ``edit`` changed in place."""
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    edit(meta)
    arrays["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``torchlean ARGV`` in-process; argparse's own exits count as return codes."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def ok(capsys: pytest.CaptureFixture[str], *argv: str) -> list[str]:
    """``torchlean train ARGV``, which must succeed with nothing on stderr (a ``--resume`` run
    without ``--save``: only the note that it saves nothing); its stdout lines."""
    code, out, err = cli(capsys, "train", *argv)
    if "--resume" in argv and "--save" not in argv:
        first, _, err = err.partition("\n")
        assert first.startswith("note: this run saves nothing (no --save): "), first
    assert (code, err) == (0, ""), err
    return out.splitlines()


def arrays(path: Path) -> dict[str, np.ndarray[Any, Any]]:
    """Every array of a checkpoint file but its metadata (weights, statistics, optimizer state)."""
    with np.load(path, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files if name != "metadata"}


def metadata(path: Path) -> dict[str, Any]:
    """A checkpoint file's metadata object."""
    with np.load(path, allow_pickle=False) as archive:
        return dict(json.loads(str(archive["metadata"])))


def repeated_names_note(path: object, first: int, second: int, name: str) -> str:
    """The ``note:`` line (with its newline) of a CSV header naming feature columns ``first`` and
    ``second`` alike, ``name`` (review188 F4)."""
    return (f"note: {path}: feature columns {first} and {second} are both named {name!r}: torchlean "
            "predict takes a model's features by name only when each is named once, so it will take them by "
            "position, from a file with this header or none; rename one to tell them apart\n")


OTHER_TRAINING_ROWS = (
    r"the file or its split changed; over the training rows, feature \S+'s mean is \S+, the checkpoint's "
    r"\S+" + re.escape(": values were edited, or other rows train, as when rows are added, removed or "
                       "reordered or labels edited")
)
"""How data of other training rows than a checkpoint's run's differ (review188 F2, review192 F3), as
a regular expression: the values are as this machine's numpy sums them."""
