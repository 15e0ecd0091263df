"""review222: which classes end up in which split.

F1: the split counted classes with ``np.bincount``, so an id with no row below the largest (data
lacking one of a checkpoint's classes, as ``predict --split`` reads them) counted as a class of 0
samples: the split was not stratified and its note gave a false reason. F2: a stratified split
with a test fraction above 0.5 can leave a rare class no train row, silently. F3: an unstratified
split's note did not name the class it left without a train row.

Oracle: scikit-learn's ``train_test_split(..., stratify=...)`` of the same labels and numpy counts
of the split's classes.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli
from sklearn.model_selection import train_test_split

from torchlean import data


def test_an_absent_class_id_leaves_the_split_stratified() -> None:
    y = np.array([1] * 4 + [2] * 16)  # class id 0 has no row
    for seed in range(10):
        train, test = data.split_rows(y, "classification", seed)
        oracle_train, oracle_test = train_test_split(
            np.arange(20), test_size=0.2, random_state=seed, shuffle=True, stratify=y)
        assert test.tolist() == oracle_test.tolist() and train.tolist() == oracle_train.tolist()
        # as the split of the same labels numbered from 0, which torchlean train makes
        assert data.split_rows(y - 1, "classification", seed)[1].tolist() == test.tolist()
    assert data.split_note(y, "classification") == ""


def test_the_note_counts_only_the_classes_present() -> None:
    y = np.array([0] * 5 + [3] * 5 + [7])  # ids 1, 2, 4, 5, 6 absent: 3 classes, one of 1 sample
    assert "1 of 3 classes has fewer than 2 samples" in data.split_note(y, "classification")


def test_large_class_ids_are_counted_without_an_array_of_that_size() -> None:
    y = np.array([10**15] * 5 + [2 * 10**15] * 5)  # np.bincount would ask for 2e15 counts
    assert data.split_note(y, "classification") == ""
    assert len(data.split_rows(y, "classification", 0)[1]) == 2


def _rare_labels() -> np.ndarray:
    return np.array([c for c in range(9) for _ in range(20)] + [9, 9])


@pytest.mark.parametrize("fraction", [0.6, 0.8])
def test_a_class_the_stratified_split_leaves_without_a_train_row_is_named(fraction: float) -> None:
    y = _rare_labels()
    train, test = data.split_rows(y, "classification", 0, fraction)
    assert 9 not in set(y[train].tolist()) and np.count_nonzero(y[test] == 9) == 2  # the premise
    classes = tuple(f"c{i}" for i in range(10))
    assert data.class_coverage_note(y, test, "classification", classes) == (
        "the train/test split leaves class c9 (2 samples) without a train row, so a model trained on this "
        "split has no example of it (its test rows are right only by chance; a smaller test fraction or "
        "more samples of it would give it one)"
    )
    assert data.class_coverage_note(y, test, "regression", classes) == ""


def test_both_clauses_and_the_count_beyond_five() -> None:
    y = np.array([0, 0, 1, 2, 3, 4, 5, 6, 7, 8])
    test = np.array([2, 3, 4, 5, 6, 7])  # classes 1..6 only tested; 0 (twice) and 7, 8 only trained
    classes = tuple("abcdefghi")
    assert data.class_coverage_note(y, test, "classification", classes) == (
        "the train/test split leaves classes b (1 sample), c (1 sample), d (1 sample), e (1 sample), "
        "f (1 sample) and 1 more without a train row, so a model trained on this split has no example of "
        "them (their test rows are right only by chance; a smaller test fraction or more samples of them "
        "would give them one); it leaves classes a (2 samples), h (1 sample), i (1 sample) without a test "
        "row, so the test metric does not measure them (more samples would)"
    )


def _csv(path: Path, labels: list[str]) -> Path:
    x = np.random.default_rng(3).standard_normal((len(labels), 2))
    rows = zip(x, labels, strict=True)
    path.write_text("p,q,y\n" + "".join(f"{a:.4f},{b:.4f},{y}\n" for (a, b), y in rows))
    return path


def test_train_and_predict_say_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    labels = [f"c{c}" for c in range(9) for _ in range(20)] + ["c9", "c9"]
    path, model = _csv(tmp_path / "rare.csv", labels), tmp_path / "m.npz"
    note = ("note: the train/test split leaves class c9 (2 samples) without a train row, so a model "
            "trained on this split has no example of it (its test rows are right only by chance; a smaller "
            "test fraction or more samples of it would give it one)\n")
    code, _, err = cli(capsys, "train", "--dataset", str(path), "--test-fraction", "0.6", "--epochs", "1",
                       "--hidden", "4", "--save", str(model))
    assert (code, err) == (0, note)
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(path), "--split", "test",
                       "--output", str(tmp_path / "t.csv"))
    assert (code, err) == (0, note)


def test_an_unstratified_split_names_the_class_it_did_not_train_on(tmp_path: Path) -> None:
    labels = ["A"] * 20 + ["B"] * 20 + ["C"]
    loaded = data.load(_csv(tmp_path / "one.csv", labels), seed=4)
    assert np.bincount(loaded.y_train, minlength=3)[2] == 0  # the premise: the one C row is tested
    assert loaded.split_note == (
        "the train/test split is not stratified by class: 1 of 3 classes has fewer than 2 samples (a "
        "stratified split needs 2 samples of each class and room for each class in both splits); some "
        "classes may be missing from a split; the train/test split leaves class C (1 sample) without a "
        "train row, so a model trained on this split has no example of it (its test rows are right only "
        "by chance; a smaller test fraction or more samples of it would give it one)"
    )


def test_predict_split_on_data_lacking_a_class_takes_the_stratified_rows(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """F1 through the CLI: the rows ``torchlean train`` would split from the data lacking a class."""
    labels = [name for name, n in (("Mango", 12), ("apple", 6), ("zebra", 22)) for _ in range(n)]
    np.random.default_rng(5).shuffle(labels)
    model = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(_csv(tmp_path / "all.csv", labels)), "--epochs", "1",
                       "--hidden", "4", "--save", str(model))
    assert code == 0, err
    kept = [y for y in labels if y != "Mango"]
    subset = _csv(tmp_path / "no_mango.csv", kept)
    out = tmp_path / "p.csv"
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(subset), "--split", "test",
                       "--output", str(out))
    assert code == 0 and "stratified" not in err and "without a" not in err, err
    rows = np.loadtxt(out, delimiter=",", skiprows=1, usecols=0, dtype=np.int64)
    _, oracle_test = train_test_split(np.arange(len(kept)), test_size=0.2, random_state=0,
                                      stratify=np.array(kept))
    assert sorted(rows.tolist()) == sorted(oracle_test.tolist())  # the CSV lists them in data order


def test_the_note_takes_a_boolean_mask_and_large_class_ids() -> None:
    """review225 F4: test rows given as a boolean mask were read as the indices 0 and 1, and class
    ids were counted by np.bincount, sized by the largest id."""
    y = np.array([0, 0, 1, 1, 2])
    mask = np.array([False, True, False, False, True])  # tests a 0 and the one 2
    classes = ("a", "b", "c")
    expected = ("the train/test split leaves class c (1 sample) without a train row, so a model trained on "
                "this split has no example of it (its test rows are right only by chance; a smaller test "
                "fraction or more samples of it would give it one); it leaves class b (2 samples) without a "
                "test row, so the test metric does not measure it (more samples would)")
    assert data.class_coverage_note(y, mask, "classification", classes) == expected
    assert data.class_coverage_note(y, np.flatnonzero(mask), "classification", classes) == expected
    big = np.array([10**15, 10**15, 2 * 10**15])
    assert data.class_coverage_note(big, np.array([2]), "classification", ()).startswith(
        "the train/test split leaves class 2000000000000000 (1 sample) without a train row")


def test_the_note_takes_an_empty_list_and_refuses_what_the_splits_refuse() -> None:
    """review228 F9: ``[]`` (float64 to numpy) raised numpy's IndexError; a class id of -1 was
    named after the last class."""
    y = np.array([0, 0, 1, 1])
    assert data.class_coverage_note(y, [], "classification", ("a", "b")) == (
        "the train/test split leaves classes a (2 samples), b (2 samples) without a test row, so the test "
        "metric does not measure them (more samples would)")
    with pytest.raises(data.DataError, match=r"^classification labels must be class ids, integers >= 0"):
        data.class_coverage_note(np.array([-1, 0, 0]), [0], "classification", ("a", "b"))
    for rows in ([0.0, 1.0], [0, 0], [-1], [4], [True, False]):  # review231 F8: repeats, range, mask length
        with pytest.raises(data.DataError, match=r"^test_rows must be distinct row indices in \[0, 4\) or a "
                                                 r"boolean mask of 4 rows, got "):
            data.class_coverage_note(y, rows, "classification", ("a", "b"))
