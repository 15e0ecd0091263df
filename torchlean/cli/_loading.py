"""A progress bar while a large CSV file is read (review103 F3): on a terminal, as the epochs'
bars, the bytes read so far of a file over :data:`LOADING_BAR_BYTES`; reading about 90 MB takes
seconds, and nothing else is printed before the data are loaded."""

from __future__ import annotations

import contextlib
import os
import sys
from collections.abc import Iterator

from tqdm import tqdm

from torchlean import data
from torchlean._csv import read_progress

__all__ = ["LOADING_BAR_BYTES", "loading_bar"]

LOADING_BAR_BYTES = 8_000_000
"""A CSV file larger than this (in bytes) gets the bar."""


@contextlib.contextmanager
def loading_bar(dataset: object) -> Iterator[None]:
    """Within the block, a bar on stderr (``reading NAME``, in bytes; drawn on a terminal only,
    and cleared at the end) follows :func:`torchlean.data.read_csv`'s reading of ``dataset`` when
    it names a regular file over :data:`LOADING_BAR_BYTES` that is not a shipped dataset's name;
    once every byte is read it says ``read NAME; parsing it`` while the cells are parsed and the
    rows split (about three times as long as the reading); else nothing is shown."""
    name = os.fspath(dataset) if isinstance(dataset, str | os.PathLike) else ""
    try:
        size = os.path.getsize(name) if name and name not in data.DATASETS and os.path.isfile(name) else 0
    except (OSError, ValueError):
        size = 0
    if size <= LOADING_BAR_BYTES:
        yield
        return
    shown = data.display_name(name)
    with tqdm(total=size, unit="B", unit_scale=True, desc=f"reading {shown}", leave=False, disable=None,
              file=sys.stderr) as bar:

        def advance(read: int) -> None:
            bar.update(read - bar.n)
            if read >= size:  # the rows are read: their cells are parsed and split next (review104 M3)
                bar.set_description(f"read {shown}; parsing it")

        with read_progress(advance):
            yield
