"""torchlean.data: shipped scikit-learn datasets and CSV files, seeded split, train-only scaling."""

from __future__ import annotations

import os
import subprocess
import sys
import threading
from pathlib import Path

import numpy as np
import pytest
from sklearn import datasets

from torchlean import data
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.data import DataError, Dataset

SIZES = {"digits": (1797, 64, 10), "iris": (150, 4, 3), "breast_cancer": (569, 30, 2), "wine": (178, 13, 3)}


@pytest.mark.parametrize("name", sorted(SIZES))
def test_classification_datasets(name: str) -> None:
    n, features, classes = SIZES[name]
    d = data.load(name, seed=3)
    n_test = -(-n // 5)  # ceil(0.2 n), as scikit-learn
    assert d.x_train.shape == (n - n_test, features)
    assert d.x_test.shape == (n_test, features)
    assert d.y_train.shape == (n - n_test,)
    assert d.x_train.dtype == np.float32 and d.y_train.dtype == np.int64
    assert (d.task, d.n_classes, d.name, d.n_features) == ("classification", classes, name, features)
    assert len(d.feature_names) == features and len(d.class_names) == classes
    # stratified: every class is in both splits, in proportion
    train_counts = np.bincount(d.y_train, minlength=classes)
    test_counts = np.bincount(d.y_test, minlength=classes)
    assert np.all(train_counts > 0) and np.all(test_counts > 0)
    assert np.all(np.abs(test_counts / n_test - train_counts / (n - n_test)) < 0.05)


def test_default_is_digits() -> None:
    d = data.load()
    assert d.name == "digits" and d.x_train.shape[1] == 64


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_regression_target_statistics_are_the_train_split_mean_and_deviation(dtype: type) -> None:
    """Oracle: sklearn's StandardScaler on the train targets (population deviation, float64).
    ``torchlean train`` trains on these (``standardised_targets``) and saves them in its
    checkpoint; a Python run had no way to get them and trained diabetes to NaN (review17 P1)."""
    from sklearn.preprocessing import StandardScaler

    d = data.load("diabetes", dtype=dtype)
    scaler = StandardScaler().fit(d.y_train.astype(np.float64).reshape(-1, 1))
    mean, scale = d.target_statistics()
    assert mean == pytest.approx(float(scaler.mean_[0]), rel=1e-12)
    assert scale == pytest.approx(float(scaler.scale_[0]), rel=1e-12)
    train, test = d.standardised_targets()
    assert train.dtype == dtype and test.dtype == dtype
    assert train.shape == d.y_train.shape and test.shape == d.y_test.shape
    expected = scaler.transform(d.y_test.astype(np.float64).reshape(-1, 1)).ravel()
    np.testing.assert_allclose(test, expected, rtol=1e-6 if dtype == np.float32 else 1e-12)
    assert abs(float(np.mean(train.astype(np.float64)))) < 1e-6


def test_target_statistics_are_refused_for_classification() -> None:
    with pytest.raises(DataError) as info:
        data.load("iris").target_statistics()
    assert str(info.value) == (
        "iris: target statistics are for regression; this dataset's targets are 3 class ids"
    )


def test_diabetes_is_regression() -> None:
    d = data.load("diabetes", dtype=np.float64)
    assert (d.task, d.n_classes, d.class_names) == ("regression", 0, ())
    assert d.x_train.shape == (353, 10) and d.x_test.shape == (89, 10)
    assert d.y_train.dtype == np.float64 and d.x_train.dtype == np.float64
    targets = np.sort(np.concatenate([d.y_train, d.y_test]))
    assert np.array_equal(targets, np.sort(datasets.load_diabetes().target))


def test_split_is_deterministic_by_seed_and_a_partition() -> None:
    a, b, c = data.load("iris", seed=7), data.load("iris", seed=7), data.load("iris", seed=8)
    assert np.array_equal(a.x_train, b.x_train) and np.array_equal(a.y_test, b.y_test)
    assert not np.array_equal(a.x_train, c.x_train)
    # the two splits partition the original rows
    raw = datasets.load_iris().data
    restored = np.concatenate([a.x_train, a.x_test]).astype(np.float64) * a.feature_scale + a.feature_mean
    rows = {tuple(np.round(r, 4)) for r in restored}
    assert len(restored) == 150
    assert rows == {tuple(np.round(r, 4)) for r in raw}


def test_a_split_that_cannot_be_stratified_says_why(tmp_path: Path) -> None:
    # 100 distinct whole numbers, every row its own class, are refused (review56 F2); one row fewer
    # of a class of its own each, 99 of 100 classes are single samples
    singletons = _write(tmp_path, "a,y\n" + "".join(f"{i},{i}\n" for i in range(100)), "singletons.csv")
    with pytest.raises(data.DataError, match="its 100 whole numbers are all distinct"):
        data.load(singletons, seed=0)
    singletons = _write(tmp_path, "a,y\n" + "".join(f"{i},{min(i, 98)}\n" for i in range(100)), "single.csv")
    d = data.load(singletons, seed=0)
    untrained = sorted(set(range(99)) - set(d.y_train.tolist()))  # review222 F3: named, five, then a count
    untested = sorted(set(range(99)) - set(d.y_test.tolist()))
    assert d.split_note == (
        "the train/test split is not stratified by class: 98 of 99 classes have fewer than 2 samples (a "
        "stratified split needs 2 samples of each class and room for each class in both splits); some "
        "classes may be missing from a split; the train/test split leaves classes "
        + ", ".join(f"{c} (1 sample)" for c in untrained[:5]) + f" and {len(untrained) - 5} more without a "
        "train row, so a model trained on this split has no example of them (their test rows are right "
        "only by chance; a smaller test fraction or more samples of them would give them one); it leaves "
        "classes "
        + ", ".join(f"{c} (1 sample)" for c in untested[:5]) + f" and {len(untested) - 5} more without a "
        "test row, so the test metric does not measure them (more samples would)"
    )
    assert len(untrained) > 5 and len(untested) > 5 and set(untrained).isdisjoint(untested)
    inferred = (  # one of notes, which a Python caller reads (review89 F7)
        "the labels are whole numbers (99 distinct) with too few samples of each to stratify the split, so "
        "the task classification was inferred: pass task='regression' (CLI: --task regression) if they "
        "are a quantity"
    )
    assert d.notes == (inferred,)
    # the hint is for many whole-number classes with few samples each, and only when task was inferred
    assert inferred not in data.load(singletons, seed=0, task="classification").notes
    words = _write(tmp_path, "a,y\n" + "".join(f"{i},c{min(i, 98)}\n" for i in range(100)), "words.csv")
    assert not any("whole numbers" in note for note in data.load(words, seed=0).notes)
    distinct = _write(tmp_path, "a,y\n" + "".join(f"{i},c{i}\n" for i in range(100)), "distinct.csv")
    with pytest.raises(data.DataError, match="its 100 labels are all distinct"):  # review56 F2
        data.load(distinct, seed=0)
    # the boundary: over 10 classes (10 or 11 classes of 2 samples and one of 1)
    for n_classes, hinted in ((10, False), (11, True)):
        rows = [i % n_classes for i in range(2 * n_classes - 1)]
        text = "a,y\n" + "".join(f"{i},{c}\n" for i, c in enumerate(rows))
        few = data.load(_write(tmp_path, text, f"few{n_classes}.csv"), seed=0)
        assert few.split_note.startswith("the train/test split is not stratified")
        assert any("task='regression'" in note for note in few.notes) is hinted, few.notes
    # however many samples each: 11 classes in 44 rows (4 each; a 9-row test split cannot hold them
    # all) get the hint (review20 user F8: 42 classes in 200 rows had none); 11 classes in 110 rows
    # are stratified, so there is no note at all
    for rows, hinted in ((44, True), (110, False)):
        text = "a,y\n" + "".join(f"{i},{i % 11}\n" for i in range(rows))
        loaded = data.load(_write(tmp_path, text, f"rows{rows}.csv"), seed=0)
        assert any("task='regression'" in note for note in loaded.notes) is hinted, loaded.notes
        assert bool(loaded.split_note) is hinted
    # ten classes of two samples: a test split of 4 rows cannot hold each of them
    pairs = np.repeat(np.arange(10), 2)
    assert "a split of 16 train and 4 test rows cannot hold each of 10 classes" in data.split_note(
        pairs, "classification"
    )
    assert data.split_note(pairs, "classification", test_fraction=0.5) == ""  # 10 and 10: stratified
    one_single = np.array([0, 0, 0, 0, 1, 1, 1, 1, 2])
    assert "1 of 3 classes has fewer than 2 samples" in data.split_note(one_single, "classification")
    assert data.split_note(np.zeros(9), "regression") == ""
    assert data.load("iris").split_note == "" and data.load("diabetes").split_note == ""
    # the stratified split keeps the class proportions: iris's 10 test rows of each class
    assert np.bincount(data.load("iris").y_test).tolist() == [10, 10, 10]


def test_train_prints_the_split_note(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    from torchlean.cli import main

    singletons = _write(tmp_path, "a,y\n" + "".join(f"{i},{i % 30}\n" for i in range(40)), "few.csv")
    assert main(["train", "--dataset", str(singletons), "--epochs", "1"]) == 0
    err = capsys.readouterr().err
    assert "note: the train/test split is not stratified by class: 20 of 30 classes have fewer than 2" in err


def test_standardisation_is_fitted_on_train_only() -> None:
    d = data.load("wine", seed=1, dtype=np.float64)
    np.testing.assert_allclose(d.x_train.mean(axis=0), 0.0, atol=1e-12)
    np.testing.assert_allclose(d.x_train.std(axis=0), 1.0, rtol=1e-12)
    assert np.abs(d.x_test.mean(axis=0)).max() > 1e-3  # test statistics were not used
    raw = datasets.load_wine().data
    x_train_raw = d.x_train * d.feature_scale + d.feature_mean
    np.testing.assert_allclose(d.feature_mean, x_train_raw.mean(axis=0), rtol=1e-12)
    assert d.feature_mean.shape == (raw.shape[1],)


def test_zero_variance_feature_becomes_zero(tmp_path: Path) -> None:
    path = tmp_path / "const.csv"
    rows = ["a,b,label"] + [f"{i},5,{i % 2}" for i in range(20)]
    path.write_text("\n".join(rows) + "\n")
    d = data.load(path, seed=0)
    assert np.all(d.x_train[:, 1] == 0.0) and np.all(d.x_test[:, 1] == 0.0)
    assert d.feature_scale[1] == 1.0
    assert np.all(np.isfinite(d.x_train))


def test_unknown_dataset_names_the_accepted_ones() -> None:
    with pytest.raises(UnknownLabelError) as info:
        data.load("mnist")
    assert str(info.value) == (
        "unknown dataset mnist (known: digits | iris | breast_cancer | wine | diabetes, "
        "or a path to a CSV file)"
    )


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"test_fraction": 0.0}, r"^test_fraction must be in \(0, 1\), got 0\.0$"),
        ({"test_fraction": 1}, r"^test_fraction must be in \(0, 1\), got 1$"),
        ({"dtype": np.int32}, r"^dtype must be float32 or float64, got int32$"),
        ({"dtype": "bogus"}, r"^dtype must be float32 or float64, got bogus$"),
        ({"dtype": None}, r"^dtype must be float32 or float64, got None$"),
    ],
)
def test_bad_parameters(kwargs: dict[str, object], message: str) -> None:
    with pytest.raises(DataError, match=message):
        data.load("iris", **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("seed", [-1, 2**32, np.int64(-1), np.uint64(2**32), True, np.True_, 1.0, "1", None])
def test_bad_seed_names_the_range_and_why(seed: object) -> None:
    """The split's range stays [0, 2**32): scikit-learn's train_test_split seeds a RandomState,
    which refuses larger seeds; the message says so (and names the value)."""
    with pytest.raises(DataError) as info:
        data.load("iris", seed=seed)  # type: ignore[arg-type]
    assert str(info.value) == (
        "seed must be an integer in [0, 2**32) (scikit-learn's train_test_split seeds a numpy "
        f"RandomState), got {seed!r}"
    )


@pytest.mark.parametrize("seed", [np.int64(1), np.uint32(2**32 - 1), np.int8(1)])
def test_numpy_integer_seeds_split_as_the_same_int(seed: np.integer) -> None:
    a, b = data.load("iris", seed=seed), data.load("iris", seed=int(seed))  # type: ignore[arg-type]
    for got, want in zip(
        (a.x_train, a.x_test, a.y_train, a.y_test), (b.x_train, b.x_test, b.y_train, b.y_test), strict=True
    ):
        np.testing.assert_array_equal(got, want)


# ------------------------------------------------------------------------------------------- CSV


def _write(tmp_path: Path, text: str, name: str = "table.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def test_csv_with_header_and_named_label(tmp_path: Path) -> None:
    lines = ["x1,species,x2"] + [f"{i * 0.5},{'ab'[i % 2]},{i}" for i in range(10)]
    d = data.load(_write(tmp_path, "\n".join(lines)), label_column="species", seed=0)
    assert d.feature_names == ("x1", "x2")
    assert (d.task, d.n_classes, d.class_names, d.name) == ("classification", 2, ("a", "b"), "table")
    assert d.x_train.shape == (8, 2) and d.x_test.shape == (2, 2)


def test_csv_without_header_label_by_index(tmp_path: Path) -> None:
    lines = [f"{i % 3},{i * 1.5},{i * 2.0}" for i in range(12)]
    d = data.load(_write(tmp_path, "\n".join(lines)), label_column=0, seed=0)
    assert d.feature_names == ("column_1", "column_2")
    assert (d.task, d.n_classes, d.class_names) == ("classification", 3, ("0", "1", "2"))


def test_numeric_class_labels_are_classes_by_exact_value(tmp_path: Path) -> None:
    # one number written several ways is one class; 2**64 and 2**64 + 1 are equal as float64 but two classes
    spellings = ["0", "0.0", "1", "1.0", "01", "+1", "1e0", "-0", str(2**64), str(2**64 + 1)]
    lines = ["a,y"] + [f"{i},{label}" for i, label in enumerate(spellings * 2)]
    path = _write(tmp_path, "\n".join(lines))
    # 2**64 is at or beyond 2**53, where every float64 is whole: no class id to the inference (review56
    # F2); but 2**64 and 2**64 + 1 are one float64, so reading them as a quantity would merge them:
    # the inference refuses, naming both tasks (review59 F4)
    with pytest.raises(DataError, match=r"4 distinct as written but 3 once read as float64 numbers"):
        data.load(path, test_fraction=0.25, seed=0)
    d = data.load(path, test_fraction=0.25, seed=0, task="classification")
    assert d.task == "classification"
    assert d.class_names == ("0", "1", str(2**64), str(2**64 + 1))
    ids = np.concatenate([d.y_train, d.y_test])
    assert sorted(ids.tolist()) == sorted([0, 0, 1, 1, 1, 1, 1, 0, 2, 3] * 2)
    table = data.read_csv(tmp_path / "table.csv")
    _, cells = table.columns(1)
    assert cells is not None
    expected = [0, 0, 1, 1, 1, 1, 1, 0, 2, 3] * 2
    assert data.class_ids("table.csv", "y", cells, d.class_names, first_line=2).tolist() == expected
    halves = ["a,y"] + [f"{i},{label}" for i, label in enumerate(["0.5", "1.50", "0.50", "1.5"] * 3)]
    forced = data.load(_write(tmp_path, "\n".join(halves), "halves.csv"), task="classification", seed=0)
    assert forced.class_names == ("0.5", "1.50")  # a non-integer class keeps its first spelling


def test_numeric_labels_with_huge_exponents_load_at_once(tmp_path: Path) -> None:
    # exact values by Fraction computed 10**999999999 for "0e-999999999" (train and predict hung)
    lines = ["a,y", "1,0e-999999999", "2,1", "3,0", "4,1.0", "5,0.0e5", "6,+1"]
    d = data.load(_write(tmp_path, "\n".join(lines)), test_fraction=0.5, seed=0)
    assert d.class_names == ("0", "1")
    assert data.class_ids("t.csv", "y", ["0e-999999999", "1e0"], d.class_names).tolist() == [0, 1]
    # beyond float64's exponent range a number is not a usable class value: the column is names
    huge = ["a,y", "1,1e999999999", "2,1", "3,1e999999999", "4,1"]
    named = data.load(_write(tmp_path, "\n".join(huge), "huge.csv"), task="classification", seed=0,
                      test_fraction=0.5)
    assert named.class_names == ("1", "1e999999999")


def test_a_column_with_a_name_among_numbers_is_read_as_names(tmp_path: Path) -> None:
    """With task='classification'; without a task such a column is refused (review F1: a target
    with missing values read as classes), tests/data/test_csv_layouts.py."""
    lines = ["a,y"] + [f"{i},{label}" for i, label in enumerate(["0", "0.0", "1", "cat", "00", "1.0"] * 3)]
    d = data.load(_write(tmp_path, "\n".join(lines)), seed=0, task="classification")
    # review36 F3: numbers keep their value among names (were compared as text: 0, 0.0, 00 three classes)
    assert d.class_names == ("0", "1", "cat")
    ids = np.concatenate([d.y_train, d.y_test])
    assert sorted(np.bincount(ids).tolist()) == [3, 6, 9]  # cat 3, 1 and 1.0 6, 0 0.0 00 9
    assert data.class_ids("f", "y", ["0.0", "+1", "cat", "1e0"], d.class_names).tolist() == [0, 1, 2, 1]


def test_csv_regression_inferred_and_forced(tmp_path: Path) -> None:
    lines = ["a,b,y"] + [f"{i},{i * i},{i * 0.25}" for i in range(10)]
    d = data.load(_write(tmp_path, "\n".join(lines)), seed=0)
    assert d.task == "regression" and d.y_train.dtype == np.float64  # as read (review86 F1)
    integral = ["a,y"] + [f"{i},{i * 10}" for i in range(10)]
    forced = data.load(_write(tmp_path, "\n".join(integral), "int.csv"), task="regression", seed=0)
    assert forced.task == "regression"
    assert sorted(np.concatenate([forced.y_train, forced.y_test]).tolist()) == [
        float(i * 10) for i in range(10)
    ]


def test_csv_values_are_exact(tmp_path: Path) -> None:
    lines = ["a,b,label"] + [f"{i},{-i},{i % 2}" for i in range(10)]
    d = data.load(_write(tmp_path, "\n".join(lines)), seed=4, dtype=np.float64)
    restored = d.x_train * d.feature_scale + d.feature_mean
    assert np.allclose(restored[:, 0], -restored[:, 1])
    assert np.array_equal(d.y_train, np.round(restored[:, 0]).astype(np.int64) % 2)


def test_csv_missing_file(tmp_path: Path) -> None:
    missing = tmp_path / "nope.csv"
    with pytest.raises(DataError) as info:
        data.load(missing)
    assert str(info.value) == f"dataset file not found: {missing}"
    assert isinstance(info.value, TorchLeanError)



@pytest.mark.parametrize("name", ["nothere.tsv", "nothere.txt", "NOTHERE.CSV"])
def test_a_missing_file_with_any_extension_is_not_found_rather_than_an_unknown_name(
    name: str, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review58 F9: a bare ``nothere.tsv`` was an "unknown dataset" whose accepted list said .csv."""
    monkeypatch.chdir(tmp_path)
    with pytest.raises(DataError, match=f"^dataset file not found: {name}$"):
        data.load(name)


def test_csv_non_numeric_cell_names_line_and_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,b,label\n1,2,0\n3,oops,1\n")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 3, column b: not a number: 'oops'"
    headerless = _write(tmp_path, "1,2,0\n3,,1\n", "nohead.csv")
    with pytest.raises(DataError, match=r"line 2, column column_1: not a number: '' \(a missing value\? "):
        data.load(headerless, header=False)
    infinite = _write(tmp_path, "a,label\n1,0\ninf,1\n", "inf.csv")
    with pytest.raises(DataError, match=r"line 3, column a: not a finite number: 'inf'$"):
        data.load(infinite)


@pytest.mark.parametrize(
    "cell", ["1_000", "1_0.5", "\u0661\u0662", "\uff11", "0x10", "1e", "--1", "1.2.3", "\u0131nf", "\u0130nf"]
)
def test_only_ascii_decimal_numbers_are_numbers(tmp_path: Path, cell: str) -> None:
    """Python's ``float`` reads ``1_000`` as 1000, ``1_0.5`` as 10.5 and Arabic-Indic or
    full-width digits as numbers; a CSV feature cell holding them is refused as not a number, as
    pandas' ``read_csv`` leaves such cells as text."""
    path = _write(tmp_path, f"a,b,label\n1,2,0\n3,{cell},1\n4,5,0\n6,7,1\n")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 3, column b: not a number: {cell!r}"


@pytest.mark.parametrize(
    "cell", ["1", "+1", "-1.", ".5", "1e3", "1E-3", "-0.0", " 2 ", "\t3", "\xa04", "1.5E+03"]
)
def test_ascii_decimal_spellings_are_numbers(tmp_path: Path, cell: str) -> None:
    """Blanks around a number (``str.strip``'s, no-break spaces included) are not part of it; the
    stripped text is what is read. (The control separators ``\\x1c``-``\\x1f``, which
    ``str.strip`` also strips, refuse the file: tests/data/test_csv_scale.py, review87 F2; the
    column reader's handling of them is tested in tests/data/test_csv_fast_path.py.)"""
    path = _write(tmp_path, f"a,label\n{cell},0\n1,1\n2,0\n3,1\n")
    table = data.read_csv(path)
    x, _ = table.columns(1)
    assert x[0, 0] == float(cell.strip())


def test_underscored_and_non_ascii_labels_are_class_names(tmp_path: Path) -> None:
    """``1_000`` is not the number 1000 as a label either: it is a class name of its own;
    ``\u0661`` (Arabic-Indic one) is not the class ``1``, and ``\u0131nf`` (dotless i) is a name."""
    rows = ["1_000", "1000", "\u0661", "1", "\u0131nf"] * 3
    path = _write(tmp_path, "a,label\n" + "".join(f"{k},{label}\n" for k, label in enumerate(rows)))
    d = data.load(path, test_fraction=0.34, seed=0, task="classification")  # numbers among names
    assert (d.task, d.class_names) == ("classification", ("1", "1000", "1_000", "\u0131nf", "\u0661"))


def test_an_underscored_first_row_is_a_header(tmp_path: Path) -> None:
    path = _write(tmp_path, "1_0,2_0\n1,0\n2,1\n3,0\n4,1\n")
    d = data.load(path, test_fraction=0.5, seed=0)
    assert d.feature_names == ("1_0",)
    assert d.header_note == ""


def test_csv_unknown_label_column(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,b,label\n1,2,0\n3,4,1\n")
    with pytest.raises(UnknownLabelError) as info:
        data.load(path, label_column="target")
    assert str(info.value) == f"unknown label column target in {path} (known: a | b | label)"
    with pytest.raises(
        UnknownLabelError, match=r"unknown label column 5 in .* \(known: indices 0\.\.2 or -3\.\.-1\)"
    ):
        data.load(path, label_column=5)
    # an index is ASCII digits, as a number cell: another script's digit names a column or none
    with pytest.raises(UnknownLabelError) as info:
        data.load(path, label_column="\u0661")
    assert str(info.value) == f"unknown label column \u0661 in {path} (known: a | b | label)"
    assert data.read_csv(path).column(" 2 ") == 2


def test_names_holding_a_newline_stay_on_one_message_line(tmp_path: Path) -> None:
    # quoted CSV cells may hold newlines; messages print such names as Python literals
    path = _write(tmp_path, 'x,"y\nz"\n1,"a\nb"\n2,c\n3,"a\nb"\n4,c\n5,c\n6,"a\nb"\n')
    with pytest.raises(UnknownLabelError) as info:
        data.load(path, label_column="bad\ncol")
    assert str(info.value) == f"unknown label column 'bad\\ncol' in {path} (known: x | 'y\\nz')"
    table = data.read_csv(path)
    assert table.shown(1) == "y\nz"  # the name itself: it is saved as the label column's name
    assert data.load(path, label_column="y\nz").label_name == "y\nz"
    with pytest.raises(UnknownLabelError) as unknown:
        data.class_ids(path, "y", ["d"], ("a\nb", "c"))
    assert str(unknown.value) == f"{path}: line 1, column y: unknown class label 'd' (known: 'a\\nb' | c)"
    assert "\n" not in str(info.value) + str(unknown.value)
    assert data.display_name("plain name") == "plain name"
    assert data.display_name("tab\there") == "'tab\\there'"


def test_csv_ragged_and_empty(tmp_path: Path) -> None:
    ragged = _write(tmp_path, "a,b,label\n1,2,0\n3,4\n")
    with pytest.raises(DataError, match=r"line 3 has 2 cells, expected 3$"):
        data.load(ragged)
    with pytest.raises(DataError, match=r"no data rows$"):
        data.load(_write(tmp_path, "a,b,label\n", "head.csv"))
    with pytest.raises(DataError, match=r"the file has no rows$"):
        data.load(_write(tmp_path, "\n\n", "empty.csv"))


OPEN_QUOTE = "(accepted: every quoted cell closed by a quote)"


@pytest.mark.parametrize(
    ("text", "line", "last"),
    [
        ('a,b,label\n1,2,x\n3,4,"y\n5,6,x\n7,8,y\n', 3, 5),  # a label's quote left open
        ('a,b,label\r\n1,"2,x\r\n3,4,y\r\n5,6,x', 2, 4),  # a feature's, CRLF lines, no final newline
        ('a,b,label\n1,2,x\n3,4,"y""\n5,6,x\n', 3, 4),  # an escaped quote inside the open one
        ('label,a,b\nx,1,2\nq"r,3,"4\n5,6,7\nx,8,9\n', 3, 5),  # a literal quote earlier in the row
        ('a,b,label\n1,2,x\n3,4,z\n5,6,"x\n   \n', 4, 5),  # only a blank line after it
    ],
    ids=["label", "feature-crlf", "escaped-quote", "literal-quote-before", "blank-line-after"],
)
def test_a_quote_left_open_is_refused_by_the_line_its_row_starts(
    tmp_path: Path, text: str, line: int, last: int
) -> None:
    """Without the refusal the rest of the file is one cell: a new class label made of rows (the
    label case trained on two samples), or a number that is not one."""
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line {line}: a quote opened in the row that starts here is never closed, so the rest "
        f"of the file (lines {line}-{last}) would be read into one cell {OPEN_QUOTE}"
    )


@pytest.mark.parametrize("ending", ["", "\n", "\r\n"])
def test_a_quote_left_open_on_the_last_line_is_refused(tmp_path: Path, ending: str) -> None:
    path = _write(tmp_path, 'a,b,label\n1,2,x\n3,4,z\n5,6,x\n7,8,"z' + ending)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 5: a quote opened on this line is never closed {OPEN_QUOTE}"


def test_a_quote_left_open_before_a_cell_over_the_csv_size_limit_names_its_line(tmp_path: Path) -> None:
    """Past 131072 characters Python's csv stops the cell first; the message still names the line."""
    rows = "".join(f"{i},{i % 7},{'xz'[i % 2]}\n" for i in range(20000))
    path = _write(tmp_path, 'a,b,label\n1,2,x\n3,4,"y\n' + rows)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 3: cannot read the row that starts here: field larger than field limit "
        f"(131072); is a quote left open? {OPEN_QUOTE}"
    )


def test_rows_read_into_a_label_between_two_stray_quotes_are_refused(tmp_path: Path) -> None:
    """The quote opened on line 3 closes on line 5: rows 4-5 would be one class label (the last
    rows still train, so nothing else would say so)."""
    text = 'a,b,label\n1,2,x\n3,4,"y\n5,6,x\n7,8,y"\n' + "".join(f"{i},{i},{'xy'[i % 2]}\n" for i in range(8))
    path = _write(tmp_path, text)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line 3, column label: a quoted cell runs over lines 3-5 and holds commas, as if rows "
        "were read into it: 'y\\n5,6,x\\n7,8,y'; is a quote misplaced? (accepted: a label quoted on "
        "its row, or spanning lines without commas)"
    )


def test_a_multi_line_cell_with_commas_outside_the_label_is_read_as_written(tmp_path: Path) -> None:
    """Only label cells are checked for rows read into them: a notes column a spreadsheet wrote
    with line breaks and commas reads as one cell (``predict`` ignores columns it does not use)."""
    path = _write(tmp_path, 'a,notes,label\n1,"first, line\r\nsecond",x\n2,plain,y\n')
    table = data.read_csv(path)
    assert table.rows == [["1", "first, line\r\nsecond", "x"], ["2", "plain", "y"]]
    assert table.lines == (2, 4)
    with pytest.raises(DataError, match=r"line 2, column notes: a quoted cell runs over lines 2-3 and holds"):
        table.columns(1)


@pytest.mark.parametrize(
    ("text", "rows", "classes"),
    [
        ('a,b,label\n1,2,"x\ny"\n3,4,z\n5,6,"x\ny"\n7,8,z\n9,9,"x\ny"\n', 5, ("x\ny", "z")),
        ('a,b,label\n1,2,"x ""q"" y"\n3,4,z\n5,6,"x ""q"" y"\n7,8,z\n', 4, ('x "q" y', "z")),
        # text after a closing quote stays in the cell (Python's csv, not strict), on the last row too
        ('a,b,label\n1,2,z\n3,4,"x\ny"z"\n5,6,z\n7,8,"x\ny"z"\n', 4, ('x\nyz"', "z")),
        ('a,b,label\n1,2,x\n3,4,z\n5,6,x\n7,8,z\n\n  \n', 4, ("x", "z")),  # blank lines at the end
    ],
    ids=["closed-multiline-last", "escaped", "literal-after-closing-quote", "blank-lines-last"],
)
def test_closed_quotes_load(tmp_path: Path, text: str, rows: int, classes: tuple[str, ...]) -> None:
    """A closed quoted cell may span lines (the last row's too) when it holds no comma."""
    d = data.load(_write(tmp_path, text), test_fraction=0.5, seed=0)
    assert d.x_train.shape[0] + d.x_test.shape[0] == rows
    assert d.class_names == classes


def test_a_long_cell_is_cut_short_in_messages(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,b,label\n1,2,x\n3," + "9" * 100 + "z,y\n")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 3, column b: not a number: {'9' * 60!r}... (101 characters)"


def test_dataset_is_frozen() -> None:
    d = data.load("iris")
    assert isinstance(d, Dataset)
    with pytest.raises(AttributeError):
        d.name = "x"  # type: ignore[misc]


# ------------------------------------------------------------------------------ CSV header rule


def _numbered(tmp_path: Path, first: str, n: int = 50, name: str = "numhdr.csv") -> Path:
    """``first`` then ``n`` data rows ``0.1 i, 0.2 i, i % 2`` (two features, labels 0/1)."""
    rows = [first] + [f"{i * 0.1:.1f},{i * 0.2:.1f},{i % 2}" for i in range(n)]
    return _write(tmp_path, "\n".join(rows) + "\n", name)


def test_numeric_header_of_column_positions_is_a_header(tmp_path: Path) -> None:
    # pandas.DataFrame(array).to_csv(index=False) writes the header 0,1,2
    path = _numbered(tmp_path, "0,1,2")
    for column in ("2", 2, -1, None):
        d = data.load(path, label_column=column, seed=0)
        assert d.x_train.shape[0] + d.x_test.shape[0] == 50  # the header is not a sample
        assert (d.x_train.shape[0], d.x_test.shape[0]) == (40, 10)
        assert d.feature_names == ("0", "1")
        assert (d.n_classes, d.class_names) == (2, ("0", "1"))  # "2" did not become a class
        assert d.header_note == (
            f"{path}: first row 0,1,2 is all numbers equal to the column positions, so it was read "
            "as a header (as pandas to_csv writes one); pass header=False (CLI: --no-header) to read "
            "it as data"
        )
    # explicitly data: 51 samples, class "2" from the first row, no note
    d = data.load(path, label_column=2, header=False, seed=0)
    assert d.x_train.shape[0] + d.x_test.shape[0] == 51
    assert d.class_names == ("0", "1", "2") and d.header_note == ""


def test_other_all_number_first_row_is_data_and_says_so(tmp_path: Path) -> None:
    path = _numbered(tmp_path, "5.5,6.5,1")
    d = data.load(path, seed=0)
    assert d.x_train.shape[0] + d.x_test.shape[0] == 51
    assert d.feature_names == ("column_0", "column_1")
    assert d.header_note == (
        f"{path}: first row 5.5,6.5,1 is all numbers, so it was read as data (no header); "
        "pass header=True (CLI: --header) if it names the columns"
    )
    named = data.load(path, header=True, seed=0)
    # review59 F13: header=True takes the row as names, and the note says that it looks like data
    assert named.feature_names == ("5.5", "6.5") and named.header_note == (
        f"{path}: first row 5.5,6.5,1 was read as a header though its cells are all numbers, so they name "
        "the columns and the row is not read as data; pass header=False (CLI: --no-header) if it is a data "
        "row"
    )
    assert named.x_train.shape[0] + named.x_test.shape[0] == 50
    # a wide first row is abbreviated in the note
    wide = _write(tmp_path, "\n".join(",".join(str(i + r) for i in range(10)) for r in range(1, 12)), "w.csv")
    note = data.load(wide, seed=0, task="regression").header_note  # 11 distinct labels: no classes
    assert note.startswith(f"{wide}: first row 1,2,3,...,10 is all numbers")


def test_a_non_numeric_first_row_is_a_header_without_a_note(tmp_path: Path) -> None:
    d = data.load(_numbered(tmp_path, "a,b,y"), seed=0)
    assert d.feature_names == ("a", "b") and d.header_note == ""
    assert data.load("iris").header_note == ""


def test_a_first_row_with_one_text_cell_is_a_header_and_says_so(tmp_path: Path) -> None:
    """``1,2,setosa`` is the first sample of a headerless file with text labels as often as a
    header: it is read as a header (the rule), with a note naming --no-header; the other rows
    carry text labels too, so header=False keeps every sample."""
    rows = ["5.5,6.5,setosa"] + [f"{i * 0.1:.1f},{i * 0.2:.1f},{'ab'[i % 2]}" for i in range(50)]
    path = _write(tmp_path, "\n".join(rows) + "\n", "text.csv")
    d = data.load(path, seed=0)
    assert d.x_train.shape[0] + d.x_test.shape[0] == 50 and d.feature_names == ("5.5", "6.5")
    assert d.header_note == (
        f"{path}: first row 5.5,6.5,setosa was read as a header, as its cell 'setosa' is not a number "
        "(its other cells are); pass header=False (CLI: --no-header) if it is a data row with a text label"
    )
    kept = data.load(path, header=False, seed=0)
    assert kept.x_train.shape[0] + kept.x_test.shape[0] == 51 and "setosa" in kept.class_names
    assert kept.header_note == ""
    # two text cells, or a blank one (a pandas index header ",0,1"), read as headers without a note
    assert data.load(_numbered(tmp_path, "x,6.5,y"), seed=0).header_note == ""
    assert data.load(_numbered(tmp_path, ",0,1"), seed=0).header_note == ""


def test_header_must_be_a_bool_or_none(tmp_path: Path) -> None:
    with pytest.raises(DataError, match=r"^header must be True, False or None, got 'yes'$"):
        data.load(_numbered(tmp_path, "a,b,y"), header="yes")  # type: ignore[arg-type]
    with pytest.raises(DataError, match=r"^header must be True, False or None, got 1$"):
        data.load(_numbered(tmp_path, "a,b,y"), header=1)  # type: ignore[arg-type]


@pytest.mark.parametrize("flag", [np.True_, np.False_])
def test_header_accepts_numpy_bools_as_bools(tmp_path: Path, flag: np.bool_) -> None:
    path = _numbered(tmp_path, "5.5,6.5,1")
    got, want = data.load(path, header=flag, seed=0), data.load(path, header=bool(flag), seed=0)  # type: ignore[arg-type]
    assert got.feature_names == want.feature_names == (("5.5", "6.5") if flag else ("column_0", "column_1"))
    # header=True on this all-numbers row notes that it looks like data (review59 F13), as the bool's does
    assert got.header_note == want.header_note and (got.header_note != "") == bool(flag)
    assert got.x_train.shape == want.x_train.shape
    np.testing.assert_array_equal(got.x_train, want.x_train)


@pytest.mark.parametrize("column", [np.int64(0), np.int32(-3), np.uint8(0)])
def test_numpy_integer_label_column_is_an_index(tmp_path: Path, column: np.integer) -> None:
    lines = [f"{i % 3},{i * 1.5},{i * 2.0}" for i in range(12)]
    path = _write(tmp_path, "\n".join(lines))
    d = data.load(path, label_column=column, seed=0)  # type: ignore[arg-type]
    assert d.feature_names == ("column_1", "column_2") and d.class_names == ("0", "1", "2")
    with pytest.raises(UnknownLabelError) as info:
        data.load(path, label_column=np.int64(3))  # type: ignore[arg-type]
    assert str(info.value) == f"unknown label column 3 in {path} (known: indices 0..2 or -3..-1)"


def _four(tmp_path: Path, first: str, name: str = "dup.csv") -> Path:
    """``first`` then 40 rows of three features ``i // 2, 2i, i % 5`` and a 0/1 label (the first
    column repeats its numbers: distinct integers under a blank name are pandas' index, no feature)."""
    rows = [first] + [f"{i // 2},{2 * i},{i % 5},{i % 2}" for i in range(40)]
    return _write(tmp_path, "\n".join(rows) + "\n", name)


@pytest.mark.parametrize("first", ["x,x,x,y", ",,,y", " x ,x, x,y", "a,b,a,y"])
@pytest.mark.parametrize("label", [None, 3, -1, np.int64(3), "y"])
def test_repeated_or_blank_feature_names_load_as_pandas_reads_them(
    tmp_path: Path, first: str, label: object
) -> None:
    """Nothing is ambiguous when the label is chosen by index or by a name used once: the file
    loads exactly as the same file with unique names (the oracle), keeping the names as written."""
    path = _four(tmp_path, first)
    d = data.load(path, label_column=label, seed=0)  # type: ignore[arg-type]
    unique = data.load(_four(tmp_path, "a,b,c,y", "unique.csv"), seed=0)
    for got, want in zip(
        (d.x_train, d.x_test, d.y_train, d.y_test, d.feature_mean, d.feature_scale),
        (unique.x_train, unique.x_test, unique.y_train, unique.y_test, unique.feature_mean,
         unique.feature_scale),
        strict=True,
    ):
        np.testing.assert_array_equal(got, want)
    assert d.feature_names == tuple(c.strip() for c in first.split(",")[:3])
    assert (d.task, d.class_names) == ("classification", ("0", "1"))


def test_a_repeated_last_column_name_is_fine_when_the_label_is_the_default(tmp_path: Path) -> None:
    path = _numbered(tmp_path, "a,b,a")
    d = data.load(path, seed=0)
    assert d.feature_names == ("a", "b") and d.n_classes == 2
    assert data.load(path, label_column="b", seed=0).feature_names == ("a", "a")


@pytest.mark.parametrize(
    ("first", "label", "columns"),
    [
        ("a,a,y", "a", "0, 1"),
        ("a,b,a", "a", "0, 2"),
        ("x, x ,y", "x", "0, 1"),  # names are compared after stripping blanks
        (",,y", "", "0, 1"),
    ],
)
def test_a_label_name_the_header_repeats_is_refused(
    tmp_path: Path, first: str, label: str, columns: str
) -> None:
    path = _numbered(tmp_path, first)
    with pytest.raises(DataError) as info:
        data.load(path, label_column=label)
    assert str(info.value) == (
        f"{path}: label column {label!r} is ambiguous: the header names columns {columns} {label!r} "
        "(accepted: a name the header uses once, or a column index 0..2)"
    )


def test_several_repeated_groups_load_and_each_repeated_label_name_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "p,q,p,q,y\n" + "\n".join(f"{i},{i},{i},{i},{i % 2}" for i in range(6)))
    assert data.load(path).feature_names == ("p", "q", "p", "q")
    with pytest.raises(DataError, match=r"label column 'q' is ambiguous: the header names columns 1, 3 'q' "
                       r"\(accepted: a name the header uses once, or a column index 0\.\.4\)$"):
        data.load(path, label_column="q")
    # without a header the columns are numbered, so nothing repeats
    assert data.load(_write(tmp_path, "1,1,0\n2,2,1\n3,3,0\n4,4,1\n", "n.csv"), header=False).n_features == 2


def test_cell_errors_name_a_repeated_or_blank_column_by_its_index(tmp_path: Path) -> None:
    repeated = _write(tmp_path, "x,x,y\n1,2,0\n3,oops,1\n", "rep.csv")
    with pytest.raises(DataError) as info:
        data.load(repeated)
    assert str(info.value) == f"{repeated}: line 3, column 1 ('x'): not a number: 'oops'"
    blank = _write(tmp_path, ",,y\nnan?,2,0\n", "blank.csv")
    with pytest.raises(DataError) as info:
        data.load(blank)
    assert str(info.value) == (  # column 0 holds no number: a label? (review F4)
        f"{blank}: line 2, column 0: not a number: 'nan?' (feature columns must be numbers: if 0 is "
        "categorical, one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass "
        "label_column=0 (CLI: --label-column 0))"
    )
    label = _write(tmp_path, "y,a,y\n1,2,0\n3,4,0.5\n5,6,x\n", "label.csv")
    with pytest.raises(DataError) as info:
        data.load(label, task="regression")
    assert str(info.value) == f"{label}: line 4, column 2 ('y'): not a number: 'x'"


def test_csv_path_that_is_a_directory(tmp_path: Path) -> None:
    folder = tmp_path / "tables.csv"
    folder.mkdir()
    for given in (folder, str(tmp_path)):
        with pytest.raises(DataError) as info:
            data.load(given)
        assert str(info.value) == f"dataset path is a directory, not a CSV file: {Path(given)}"


def test_csv_file_named_as_a_folder(tmp_path: Path) -> None:
    """review114 F8: ``ok.csv/`` trained from ``ok.csv`` (``Path`` drops the final ``/``; the
    system refuses it: ENOTDIR), where a checkpoint path so written is refused."""
    table = _write(tmp_path, "a,y\n1,0\n2,1\n3,0\n4,1\n5,0\n", "ok.csv")
    for suffix in ("/", "/.", "//", "/./"):
        with pytest.raises(DataError) as info:
            data.load(f"{table}{suffix}")
        assert str(info.value) == (
            f"dataset path {table}{suffix} takes a file for a folder (a / after a file's name): {table} is "
            "the file, give that"
        )
    for suffix in ("/..", "/x.csv"):  # review118 F8: not "not found", which reads as a missing file
        with pytest.raises(DataError) as info:
            data.load(f"{table}{suffix}")
        assert str(info.value) == (
            f"dataset path {table}{suffix} takes a file for a folder (a / after a file's name)"
        )
    with pytest.raises(DataError, match="dataset file not found"):  # a folder that is not there
        data.load(f"{tmp_path / 'absent.csv'}/")


# ------------------------------------------------- blank labels, argument types (reviewer's round)

SHIPPED = "a shipped dataset name (digits | iris | breast_cancer | wine | diabetes) or a path to a CSV file"


@pytest.mark.parametrize(
    ("text", "line", "column", "cell"),
    [
        ("a,b,y\n1,2,\n3,4,1\n5,6,0\n7,8,1\n", 2, "y", ""),  # the reviewer's file
        ("a,b,y\n1,2,1\n3,4,  \n5,6,0\n7,8,1\n", 3, "y", "  "),  # blanks only: shown as read
        ("a,b,y\n1,2,x\n3,4,y\n5,6,\n7,8,x\n", 4, "y", ""),  # string classes
        ("y,a,y\n1,2,0\n3,4,1\n5,6,\n", 4, "2 ('y')", ""),  # a repeated name: by index
    ],
)
def test_blank_class_label_names_line_and_column(
    tmp_path: Path, text: str, line: int, column: str, cell: str
) -> None:
    """A blank label cell is refused as a blank feature cell is (``not a number: ''``), instead of
    becoming a class ``''``."""
    path = _write(tmp_path, text, "b.csv")
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == (
        f"{path}: line {line}, column {column}: not a class label: {cell!r} "
        "(accepted: a number or a non-blank name)"
    )
    with pytest.raises(DataError) as info:
        data.load(path, task="classification")
    assert str(info.value).startswith(f"{path}: line {line}, column {column}: not a class label: ")


def test_blank_regression_label_is_not_a_number(tmp_path: Path) -> None:
    path = _write(tmp_path, "a,b,y\n1,2,\n3,4,1\n5,6,0\n7,8,1\n", "b.csv")
    with pytest.raises(DataError) as info:
        data.load(path, task="regression")
    missing = " (a missing value? torchlean reads none: remove such rows)"
    assert str(info.value) == f"{path}: line 2, column y: not a number: ''" + missing
    blank_feature = _write(tmp_path, "a,b,y\n1,,0\n3,4,1\n", "f.csv")
    with pytest.raises(DataError) as info:
        data.load(blank_feature)
    assert str(info.value) == f"{blank_feature}: line 2, column b: not a number: ''" + missing


@pytest.mark.parametrize("fraction", ["0.2", None, b"0.2", [0.2], np.True_, False, 1j])
def test_test_fraction_must_be_a_real_number(fraction: object) -> None:
    with pytest.raises(DataError) as info:
        data.load("iris", test_fraction=fraction)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"test_fraction must be a real number (int or float) in (0, 1), got {fraction!r}"
    )


def test_test_fraction_range_holds_for_huge_ints_and_real_number_types() -> None:
    with pytest.raises(DataError) as info:
        data.load("iris", test_fraction=10**40)
    assert str(info.value) == f"test_fraction must be in (0, 1), got {10**40!r}"
    for huge, size in ((10**400, "401"), (10**5000, "5001")):  # 5001 digits: past Python's repr limit
        with pytest.raises(DataError) as info:
            data.load("iris", test_fraction=huge)
        assert str(info.value) == f"test_fraction must be in (0, 1), got an integer of about {size} digits"
    with pytest.raises(DataError) as info:
        data.load("iris", seed=-(10**5000))
    assert str(info.value).endswith("RandomState), got a negative integer of about 5001 digits")
    from fractions import Fraction

    # ceil(0.2 * 150) = 30 test samples, as for the float 0.2
    assert data.load("iris", test_fraction=Fraction(1, 5)).x_test.shape == (30, 4)  # type: ignore[arg-type]
    assert data.load("iris", test_fraction=np.float64(0.2)).x_test.shape == (30, 4)


@pytest.mark.parametrize("given", [None, 3, b"iris", ["iris"], 1.5])
def test_dataset_must_be_a_name_or_path(given: object) -> None:
    with pytest.raises(DataError) as info:
        data.load(given)  # type: ignore[arg-type]
    assert str(info.value) == f"dataset must be {SHIPPED} (str or os.PathLike), got {given!r}"
    assert isinstance(info.value, TorchLeanError)
    with pytest.raises(DataError) as info:
        data.load_csv(given)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"dataset path must be a path to a .csv file (str or os.PathLike), got {given!r}"
    )


def test_bytes_path_like_is_refused() -> None:
    class BytesPath:
        def __fspath__(self) -> bytes:
            return b"table.csv"

    with pytest.raises(DataError, match=r"^dataset must be a shipped dataset name .* got <"):
        data.load(BytesPath())  # type: ignore[arg-type]


def test_empty_dataset_name() -> None:
    with pytest.raises(DataError) as info:
        data.load("")
    assert str(info.value) == f"dataset name is empty (accepted: {SHIPPED})"
    with pytest.raises(DataError) as info:
        data.load_csv("")
    assert str(info.value) == "dataset path is empty (accepted: a path to a .csv file)"


def test_messages_name_the_file_line_an_editor_shows(tmp_path: Path) -> None:
    # blank lines and a header cell holding a line break: the bad cell is on line 7 of the file
    path = _write(tmp_path, 'a,"b\nc",y\n1,2,0\n\n3,4,1\n\n5,abc,0\n')
    assert data.read_csv(path).lines == (3, 5, 7)
    with pytest.raises(DataError) as info:
        data.load(path)
    assert str(info.value) == f"{path}: line 7, column 'b\\nc': not a number: 'abc'"
    ragged = _write(tmp_path, "a,b,y\n\n1,2,0\n1,2\n", "ragged.csv")
    with pytest.raises(DataError, match=r": line 4 has 2 cells, expected 3$"):
        data.load(ragged)
    labels = _write(tmp_path, "a,y\n1,0\n\n2,\n", "blank_label.csv")
    with pytest.raises(DataError, match=r": line 4, column y: not a class label: ''"):
        data.load(labels)


def test_a_pipe_is_read_like_a_file(tmp_path: Path) -> None:
    """``--dataset /dev/stdin`` with piped input, or a shell's ``<(...)``: a FIFO, not a regular file."""
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=("a,y\n1,0\n2,1\n",))
    writer.start()
    table = data.read_csv(fifo)
    writer.join(timeout=10)
    assert (table.names, table.rows, table.lines) == (("a", "y"), [["1", "0"], ["2", "1"]], (2, 3))


def test_a_string_of_an_integer_is_an_index_unless_a_column_has_that_name(tmp_path: Path) -> None:
    rows = "".join(f"{i},{i % 3},{i % 2}\n" for i in range(20))
    path = _write(tmp_path, "a,b,y\n" + rows)
    assert data.load(path, label_column="1").label_name == "b"
    assert data.load(path, label_column=" -1 ").label_name == "y"
    named = _write(tmp_path, "a,2,y\n" + rows, "named.csv")
    assert data.load(named, label_column="2").label_name == "2"  # the name wins over index 2
    with pytest.raises(UnknownLabelError, match=r"unknown label column 7 in .* \(known: indices 0\.\.2"):
        data.load(path, label_column="7")
    # a pipe is read once, whatever the label column
    fifo = tmp_path / "pipe.csv"
    os.mkfifo(fifo)
    writer = threading.Thread(target=fifo.write_text, args=("a,b,y\n" + rows,))
    writer.start()
    assert data.load(fifo, label_column="1").label_name == "b"
    writer.join(timeout=10)


def test_csv_only_options_are_refused_for_a_shipped_dataset() -> None:
    """As the CLI refuses ``--label-column``/``--task``/``--header`` there (they were ignored)."""
    for options in ({"task": "regression"}, {"label_column": 0}, {"header": True}):
        with pytest.raises(DataError, match=r"apply to CSV files; iris is a shipped dataset$"):
            data.load("iris", **options)  # type: ignore[arg-type]
    assert data.load("iris", task=None, label_column=None, header=None).n_classes == 3


def test_quoted_cells_read_as_csv_defines_them(tmp_path: Path) -> None:
    """Quotes that open and close (a doubled quote inside, a line break inside) are plain CSV."""
    path = _write(tmp_path, 'a,"b ""x""",y\n1,"2.5",0\n3,4,"1"\n')
    table = data.read_csv(path)
    assert table.names == ("a", 'b "x"', "y")
    assert table.rows == [["1", "2.5", "0"], ["3", "4", "1"]]


def test_a_blank_after_a_closing_quote_is_kept_as_spreadsheets_write_it(tmp_path: Path) -> None:
    """Python's csv in its default mode (a strict reader refuses these lines)."""
    path = _write(tmp_path, 'a,b,y\n1,2,"setosa" \n3,4,"virginica"\n5,6,setosa\n7,8,virginica\n')
    table = data.read_csv(path)
    assert table.rows[0] == ["1", "2", "setosa "]
    numbers = _write(tmp_path, 'a,b,y\n"1" ,2,0\n3,"4" ,1\n5,6,0\n7,8,1\n', "numbers.csv")
    assert data.load(numbers, test_fraction=0.5, seed=0, dtype=np.float64).n_features == 2
    with pytest.raises(DataError, match=r": line 2 has 1 cell, expected 3$"):
        data.load(_write(tmp_path, "a,b,y\n1\n3,4,1\n", "short.csv"))
    loaded = data.load(path, test_fraction=0.5)
    assert loaded.class_names == ("setosa", "virginica")


@pytest.mark.parametrize("device", ["/dev/null", "/dev/zero"])
def test_a_device_is_refused_before_it_is_read(device: str) -> None:
    """``/dev/zero`` would be read until memory runs out (a checkpoint path refuses devices too).
    Run in a child with its address space capped at 8 GiB and a timeout, so that a regression
    fails here instead of taking the machine's memory."""
    code = (
        "import resource, sys; resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))\n"
        "from torchlean import data\n"
        "try:\n"
        f"    data.read_csv({device!r})\n"
        "except data.DataError as error:\n"
        "    print(error)\n"
        "else:\n"
        "    print('read without refusal')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=False, timeout=120
    )
    assert (done.returncode, done.stdout) == (
        0,
        f"dataset path {device} is a device, not a CSV file (accepted: a file, a pipe, or standard "
        "input as -)\n",
    ), done.stderr[-2000:]


def test_standard_input_is_read_whatever_it_was_redirected_from() -> None:
    """``--dataset -`` from ``/dev/null`` (a device) is an empty input, not a refused device."""
    done = subprocess.run(
        [sys.executable, "-c", "from torchlean import data; data.read_csv(data.STDIN)"],
        stdin=subprocess.DEVNULL, capture_output=True, text=True, check=False,
    )
    assert "DataError: standard input (-): the file has no rows" in done.stderr  # review59 F11


def test_a_validation_split_short_of_a_class_names_task_regression_when_the_task_was_inferred(
    tmp_path: Path,
) -> None:
    """review90 F5: with val_fraction, a validation split short of samples of a class was refused
    without the note that the task was inferred from many whole-number labels, so the advice was
    to add samples or drop validation, never task='regression'."""
    labels = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11] * 4 + [12, 13]  # 14 classes, two of one sample
    text = "a,y\n" + "".join(f"{i},{label}\n" for i, label in enumerate(labels))
    path = _write(tmp_path, text, "counts.csv")
    with pytest.raises(data.DataError) as caught:
        data.load(path, seed=0, val_fraction=0.5)
    message = str(caught.value)
    assert "a validation split needs 2 of each class" in message
    assert message.endswith(
        "; the labels are whole numbers (14 distinct) with too few samples of each to stratify the split, so "
        "the task classification was inferred: pass task='regression' (CLI: --task regression) if they are "
        "a quantity"
    )
    assert data.load(path, seed=0, val_fraction=0.5, task="regression").task == "regression"
    names = "a,y\n" + "".join(f"{i},c{label}\n" for i, label in enumerate(labels))
    named = _write(tmp_path, names, "named.csv")  # names, not numbers: the same refusal, no such hint
    with pytest.raises(data.DataError) as caught:
        data.load(named, seed=0, val_fraction=0.5)
    assert "a validation split needs 2 of each class" in str(caught.value)
    assert "task='regression'" not in str(caught.value)


def test_an_unknown_label_column_of_a_guessed_header_says_how_the_first_row_was_read(tmp_path: Path) -> None:
    """review198 F6: a headerless file whose labels are words has its first row guessed to be a
    header, so ``label_column="column_2"`` was refused with "(known: 1 | 2 | z)" and nothing said
    why those are the names; the header note follows the refusal. A file whose header is no guess
    keeps the refusal alone."""
    rows = "".join(f"{i},{i + 1},{'xz'[i % 2]}\n" for i in range(1, 11))
    path = _write(tmp_path, rows)
    with pytest.raises(UnknownLabelError) as info:
        data.load(path, label_column="column_2")
    assert str(info.value) == (
        f"unknown label column column_2 in {path} (known: 1 | 2 | z); {path}: first row 1,2,z was read as "
        "a header, as its cell 'z' is not a number (its other cells are); pass header=False (CLI: "
        "--no-header) if it is a data row with a text label"
    )
    assert data.load(path, label_column="column_2", header=False).class_names == ("x", "z")
    for index in (5, "5"):  # review200 F6: an index out of range is no matter of the header
        with pytest.raises(UnknownLabelError) as info:
            data.load(path, label_column=index)
        assert str(info.value) == f"unknown label column 5 in {path} (known: indices 0..2 or -3..-1)"
    named = _write(tmp_path, "a,b,y\n" + rows, "named.csv")
    with pytest.raises(UnknownLabelError) as info:
        data.load(named, label_column="column_2")
    assert str(info.value) == f"unknown label column column_2 in {named} (known: a | b | y)"
