"""A class that the stratified test split leaves without a row gets a ``note:`` (review56 F6).
Oracle: scikit-learn's ``train_test_split(..., stratify=y, random_state=0)`` of the same labels."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli
from sklearn.model_selection import train_test_split

from torchlean import data


def _csv(path: Path, labels: list[str]) -> Path:
    rng = np.random.default_rng(6)
    x = rng.standard_normal((len(labels), 2))
    rows = [f"{a:.5f},{b:.5f},{y}\n" for (a, b), y in zip(x, labels, strict=True)]
    path.write_text("a,b,label\n" + "".join(rows))
    return path


@pytest.mark.parametrize(("rare", "missing"), [
    ({"bird": 2}, "class bird (2 samples)"),
])
def test_a_class_without_a_test_row_gets_a_note(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, rare: dict[str, int], missing: str
) -> None:
    labels = ["cat"] * 98 + ["dog"] * 100 + [name for name, n in rare.items() for _ in range(n)]
    np.random.default_rng(0).shuffle(labels)
    path = _csv(tmp_path / "rare.csv", labels)
    # the oracle: sklearn's stratified split has no rare row in its test part, and every class trains
    train, test = train_test_split(np.array(labels), test_size=0.2, random_state=0, stratify=np.array(labels))
    assert set(test) == {"cat", "dog"} and set(train) == {"cat", "dog", *rare}
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--hidden", "4")
    assert code == 0
    several = len(rare) > 1
    assert err == (
        f"note: the train/test split leaves {missing} without a test row, so the test metric does "
        f"not measure {'them' if several else 'it'} (more samples would)\n"
    )


def test_no_note_when_every_class_is_tested_or_for_regression(tmp_path: Path) -> None:
    labels = ["cat"] * 98 + ["dog"] * 100 + ["bird"] * 5  # ceil(0.2 * 203) = 41 test rows: one bird
    assert data.load(_csv(tmp_path / "ok.csv", labels)).split_note == ""
    numbers = [f"{v:.3f}" for v in np.random.default_rng(1).standard_normal(50)]
    assert data.load(_csv(tmp_path / "reg.csv", numbers)).split_note == ""


def test_the_note_names_each_untested_class_with_its_count() -> None:
    y = np.array([0, 0, 0, 1, 1, 1, 2, 2, 3])
    note = data.class_coverage_note(y, np.array([0, 3]), "classification", ("a", "b", "c d", "e"))
    assert note == ("the train/test split leaves classes c d (2 samples), e (1 sample) without a "
                    "test row, so the test metric does not measure them (more samples would)")
    assert data.class_coverage_note(y, np.array([0, 3, 6, 8]), "classification", ("a", "b", "c", "e")) == (
        "the train/test split leaves class e (1 sample) without a train row, so a model trained on this "
        "split has no example of it (its test rows are right only by chance; a smaller test fraction or "
        "more samples of it would give it one)"  # review222 F2: its one row tested
    )
    assert data.class_coverage_note(y, np.array([0, 3, 6]), "classification", ("a", "b", "c", "e")) == (
        "the train/test split leaves class e (1 sample) without a test row, so the test metric does not "
        "measure it (more samples would)"
    )
    assert data.class_coverage_note(y[:8], np.array([0, 3, 6]), "classification", ("a", "b", "c")) == ""
