"""review155 M1: ``predict`` built its whole output CSV (rows' lists, the text, its encoded copy)
in memory before writing; it is now made and written ``WRITE_BLOCK`` rows at a time. Oracle: the
CSV Python's ``csv`` module writes from the same table in one go, and the rows read back."""

from __future__ import annotations

import csv
import io
from pathlib import Path

import numpy as np
import pytest

from torchlean import _delimiter
from torchlean.cli import predict


def _one_go(table: list[list[object]], delimiter: str) -> str:
    text = io.StringIO()
    if delimiter == _delimiter.WHITESPACE:
        for row in table:
            text.write(_delimiter.TAB.join(predict._blank_quoted(str(c)) for c in row) + "\n")
    else:
        csv.writer(text, delimiter=delimiter, lineterminator="\n").writerows(table)
    return text.getvalue()


@pytest.mark.parametrize("delimiter", [",", ";", _delimiter.WHITESPACE])
@pytest.mark.parametrize("block", [1, 3, 7, 4096])
def test_blocks_write_what_one_write_would(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], delimiter: str,
    block: int,
) -> None:
    monkeypatch.setattr(predict, "WRITE_BLOCK", block)
    rng = np.random.default_rng(0)
    values = rng.random((7, 3)).astype(np.float32)
    values[2, 1] = np.nan
    finite = np.array([True, True, True, False, True, True, True])
    rows = ["a b", "x", "y;z", "", 'q"', "x", "last"]
    index = np.arange(7, dtype=np.int64) * 2
    names = ("p_a b", "p_x", "p_y")
    expected_cells = [[f"{v:.9g}" if ok and np.isfinite(v) else "" for v in row]
                      for row, ok in zip(values, finite, strict=True)]
    table = [["row", "prediction", *names]]
    table += [[i, r, *c] for i, r, c in zip(index.tolist(), rows, expected_cells, strict=True)]
    out = tmp_path / "p.csv"
    predict._write(rows, out, index, (names, predict._probability_cells(values, finite)), delimiter=delimiter)
    assert out.read_text(encoding="utf-8") == _one_go(table, delimiter)
    predict._write(rows, None, None, delimiter=delimiter)  # to stdout, without index or probabilities
    assert capsys.readouterr().out == _one_go([["prediction"]] + [[r] for r in rows], delimiter)


def test_an_empty_prediction_set_writes_its_header(tmp_path: Path) -> None:
    out = tmp_path / "empty.csv"
    predict._write([], out, np.zeros(0, dtype=np.int64))
    assert out.read_text() == "row,prediction\n"


def test_the_csv_reaches_the_file_in_pieces_made_as_they_are_written(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review156 L4: the test above passed on code that built the whole text first; here the
    writer is handed pieces, and no piece is made before the one before it was written (the
    probability cells are made as they are written, not all up front)."""
    monkeypatch.setattr(predict, "WRITE_BLOCK", 2)
    made: list[int] = []
    values = np.full((5, 2), 0.5)
    cells = predict._probability_cells(values, np.ones(5, dtype=bool))

    def counted() -> object:
        for number, row in enumerate(cells):
            made.append(number)
            yield row

    written: list[tuple[str, list[int]]] = []

    def spy(path: Path, text: object, what: str) -> None:
        assert not isinstance(text, str)
        for piece in text:  # type: ignore[attr-defined]
            written.append((piece, list(made)))

    monkeypatch.setattr(predict, "write_text_file", spy)
    predict._write(["a"] * 5, tmp_path / "p.csv", None, (("p_a", "p_b"), counted()))
    assert [rows for _, rows in written] == [[0], [0, 1, 2], [0, 1, 2, 3, 4]]
    assert "".join(piece for piece, _ in written) == "prediction,p_a,p_b\n" + "a,0.5,0.5\n" * 5
