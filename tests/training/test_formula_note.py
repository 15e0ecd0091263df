"""review67 F16: predicted class labels that spreadsheets would evaluate as formulas are noted on
stderr (OWASP's CSV-injection first characters), and written unchanged: the predictions file reads
back, with Python's csv module, as the checkpoint's class names."""

from __future__ import annotations

import csv
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli

from torchlean.cli._formulas import formula_note


@pytest.mark.parametrize(("labels", "risky"), [
    (["cat", "dog"], []),
    (["-1", "+2.5", "1e3"], []),  # numbers: spreadsheets read them as numbers
    (["=SUM(A1:A9)", "cat"], ["'=SUM(A1:A9)'"]),
    (["@x", "+cmd|' /C calc'!A0", "-x", "\tt", "\rr"], ["'\\tt'", "'\\rr'", repr("+cmd|' /C calc'!A0")]),
])
def test_the_rule(labels: list[str], risky: list[str]) -> None:
    note = formula_note(labels)
    assert bool(note) is bool(risky)
    for shown in risky:
        assert shown in note
    if len(set(labels) - {"cat"}) > 3:
        assert "(5 labels)" in note


def test_predict_notes_and_keeps_the_labels(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 2))
    names = np.array(["=HYPERLINK(\"http://x/\",\"click\")", "plain"])
    labels = names[(x[:, 0] > 0).astype(int)]
    path = tmp_path / "f.csv"
    with path.open("w", newline="") as handle:
        writer = csv.writer(handle)
        writer.writerow(["a", "b", "label"])
        rows = zip(x.tolist(), labels.tolist(), strict=True)
        writer.writerows([repr(a), repr(b), label] for (a, b), label in rows)
    saved, out = tmp_path / "m.npz", tmp_path / "p.csv"
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "3", "--save", str(saved))
    assert code == 0, err
    code, _, err = cli(capsys, "predict", str(saved), "--dataset", str(path), "--output", str(out))
    assert code == 0
    with out.open(newline="") as handle:
        written = [row[0] for row in csv.reader(handle)][1:]
    assert set(written) <= set(names) and names[0] in written
    assert ("note: predicted class labels begin with =, +, -, @, a tab or a carriage return "
            "('=HYPERLINK(\"http://x/\",\"click\")'); spreadsheet programs may evaluate") in err
