"""review103 F3: reading a large CSV file showed nothing for seconds (about 10 s for 94 MB). The
reader reports the bytes read (``torchlean._csv.read_progress``) and the commands draw a bar from
it on a terminal. Oracles: the file's size from the file system; a stderr that says it is a
terminal, as tqdm asks."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from torchlean import data
from torchlean._csv import read_progress
from torchlean.cli import _loading


def _csv(path: Path, rows: int) -> Path:
    path.write_text("a,b,y\n" + "".join(f"{i},{i * 0.5},{i % 2}\n" for i in range(rows)))
    return path


def test_the_reader_reports_bytes_read_up_to_the_files_size(tmp_path: Path) -> None:
    path = _csv(tmp_path / "rows.csv", 10_000)
    seen: list[int] = []
    with read_progress(seen.append):
        table = data.read_csv(path)
    assert len(table.names) == 3
    assert len(seen) >= 2 and seen == sorted(seen) and seen[-1] == path.stat().st_size
    seen.clear()
    data.read_csv(path)  # outside the block: no report
    assert seen == []


class _Terminal(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_a_large_file_gets_a_bar_on_a_terminal_only(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = _csv(tmp_path / "rows.csv", 10_000)
    monkeypatch.setattr(_loading, "LOADING_BAR_BYTES", path.stat().st_size - 1)
    for stream, drawn in ((_Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        with _loading.loading_bar(str(path)):
            data.load(path)
        assert (f"reading {path}" in stream.getvalue()) == drawn, stream.getvalue()
    monkeypatch.setattr(_loading, "LOADING_BAR_BYTES", path.stat().st_size)  # not larger: no bar
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with _loading.loading_bar(str(path)):
        data.load(path)
    with _loading.loading_bar("iris"):  # a shipped dataset's name
        data.load("iris")
    assert terminal.getvalue() == ""
