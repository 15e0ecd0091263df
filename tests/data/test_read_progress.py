"""review103 F3: reading a large CSV file showed nothing for seconds (about 10 s for 94 MB). The
reader reports the bytes read (``torchlean._csv.read_progress``) and the commands draw a bar from
it on a terminal. Oracles: the file's size from the file system; a stderr that says it is a
terminal, as tqdm asks."""

from __future__ import annotations

import io
import json
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
    # a short relative path: older tqdm (4.66) cut a long description to the width it assumed
    # under xdist, and the bar's text no longer held the whole path (review167 F3)
    monkeypatch.chdir(tmp_path)
    path = _csv(Path("rows.csv"), 10_000)
    monkeypatch.setattr(_loading, "LOADING_BAR_BYTES", path.stat().st_size - 1)
    for stream, drawn in ((_Terminal(), True), (io.StringIO(), False)):
        monkeypatch.setattr(sys, "stderr", stream)
        with _loading.loading_bar(str(path)):
            data.load(path)
        assert (f"reading {path}" in stream.getvalue()) == drawn, stream.getvalue()
        assert (f"read {path}; parsing it" in stream.getvalue()) == drawn, stream.getvalue()
    monkeypatch.setattr(_loading, "LOADING_BAR_BYTES", path.stat().st_size)  # not larger: no bar
    terminal = _Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    with _loading.loading_bar(str(path)):
        data.load(path)
    with _loading.loading_bar("iris"):  # a shipped dataset's name
        data.load("iris")
    assert terminal.getvalue() == ""


def test_a_note_after_the_bar_is_recorded(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                                          capsys: pytest.CaptureFixture[str]) -> None:
    """review104 H2: predict's record lost its notes on a terminal: the bar is cleared with
    carriage returns and no newline, so the next line did not start with ``note: ``. Oracle:
    the same command off a terminal."""
    from torchlean.cli import main

    rows = [f"{i},{i * 0.5},{(i * 7) % 3},{i % 2}\n" for i in range(4000)]
    trained, swapped = tmp_path / "t.csv", tmp_path / "s.csv"
    trained.write_text("a,b,c,y\n" + "".join(rows))
    swapped.write_text("b,a,c,y\n" + "".join(",".join([r.split(",")[1], r.split(",")[0], *r.split(",")[2:]])
                                             for r in rows))
    model = tmp_path / "m.npz"
    argv = ["train", "--dataset", str(trained), "--epochs", "1", "--hidden", "4", "--save", str(model)]
    assert main(argv) == 0
    capsys.readouterr()
    monkeypatch.setattr(_loading, "LOADING_BAR_BYTES", 1)
    notes = []
    for stream in (_Terminal(), io.StringIO()):
        monkeypatch.setattr(sys, "stderr", stream)
        record = tmp_path / f"r{len(notes)}.json"
        code = main(["predict", str(model), "--dataset", str(swapped), "--output", str(tmp_path / "p.csv"),
                     "--report-json", str(record)])
        assert code == 0, stream.getvalue()
        notes.append(json.loads(record.read_text())["notes"])
    assert notes[0] == notes[1] and notes[0][0].startswith("note: the data of "), notes
