"""``torchlean train --test-fraction F``: the test split's fraction, a setting of the run (header,
record, checkpoint, ``--resume``) that ``torchlean predict --split`` recomputes.

Oracles: scikit-learn's ``train_test_split`` of the row numbers with the same seed and fraction
(stratified by the class labels for classification, as :func:`torchlean.data.split_rows` does when
every class has two samples and fits both splits) and ``StandardScaler`` fitted on its train rows;
``math.ceil`` for the sizes; the uninterrupted run for a resumed one; the documented messages for
the refusals (each one line, exit status 2, no traceback).
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import arrays, cli, ok
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from torchlean import checkpoint, data
from torchlean.checkpoint import Checkpoint, CheckpointError

REFUSAL = ("error: argument --test-fraction: expected a number in (0, 1) (0 and 1 excluded: the fraction of "
           "the rows held out as the test split), got {}\n")


@pytest.fixture(scope="module")
def regression_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50 rows of three features and a non-integral target (regression: a split not stratified)."""
    rng = np.random.default_rng(7)
    x = rng.standard_normal((50, 3))
    y = 3 * x[:, 0] - x[:, 1] + 0.25 + 0.1 * rng.standard_normal(50)
    path = tmp_path_factory.mktemp("tf") / "reg.csv"
    path.write_text("f0,f1,f2,target\n" + "".join(
        ",".join(f"{v:.5f}" for v in (*r, t)) + "\n" for r, t in zip(x, y, strict=True)))
    return path


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err, err
    return err


def split_column(out: str) -> list[int]:
    """The ``row`` column of a predictions CSV on stdout."""
    lines = out.splitlines()
    assert lines[0].startswith("row,prediction")
    return [int(line.split(",")[0]) for line in lines[1:]]


# ------------------------------------------------------------------- the split, end to end


@pytest.mark.parametrize(("task", "fraction", "seed"), [("classification", 0.3, 2), ("regression", 0.45, 1)])
def test_split_sizes_and_rows_match_scikit_learn(capsys, tmp_path, regression_csv, task, fraction, seed):
    if task == "classification":
        dataset, (raw_x, labels) = "iris", load_iris(return_X_y=True)
        stratify: np.ndarray[Any, Any] | None = labels
    else:
        dataset = str(regression_csv)
        table = np.loadtxt(regression_csv, delimiter=",", skiprows=1)
        raw_x, stratify = table[:, :-1], None
    n = raw_x.shape[0]
    train_rows, test_rows = train_test_split(np.arange(n), test_size=fraction, random_state=seed,
                                             shuffle=True, stratify=stratify)
    assert len(test_rows) == math.ceil(fraction * n)
    saved, record_path = tmp_path / "run.npz", tmp_path / "run.json"
    lines = ok(capsys, "--dataset", dataset, "--epochs", "1", "--hidden", "4", "--seed", str(seed),
               "--test-fraction", str(fraction), "--save", str(saved), "--report-json", str(record_path))
    assert lines[0].startswith(f"dataset={dataset} train={len(train_rows)} test={len(test_rows)} ")
    assert f" optimizer=optim.adam(lr=0.005, beta1=0.9, beta2=0.999, eps=1e-08, weight_decay=0.0, " \
           f"amsgrad=False) test_fraction={fraction} epochs=1 batch_size=32 seed={seed}" in lines[1]
    record = json.loads(record_path.read_text())
    assert record["test_fraction"] == fraction
    loaded = checkpoint.load(saved)
    assert loaded.test_fraction == fraction
    assert loaded.training is not None and loaded.training.settings["test_fraction"] == repr(fraction)

    # the run's test rows are scikit-learn's: standardised with the statistics of its train rows
    scaler = StandardScaler().fit(raw_x[train_rows])
    np.testing.assert_array_equal(loaded.feature_mean, scaler.mean_)
    ds = data.load(dataset, seed=seed, test_fraction=fraction)
    expected = scaler.transform(raw_x[test_rows]).astype(np.float32)
    np.testing.assert_array_equal(ds.x_test, expected, strict=True)

    # predict --split recomputes that split from the checkpoint alone
    for side, rows in (("test", test_rows), ("train", train_rows)):
        code, out, err = cli(capsys, "predict", str(saved), "--dataset", dataset, "--split", side)
        assert code == 0, err
        assert split_column(out) == sorted(rows.tolist())
        header = err.splitlines()[1]
        assert header == (f"dataset={dataset} rows={len(rows)} split={side} test_fraction={fraction} "
                          "profile=checked_cpu execution=eager")
        if side == "test":  # the same rows and weights as the run's test metric
            metric = "accuracy" if task == "classification" else "mse"
            line = next(line for line in err.splitlines() if line.startswith(f"{metric}="))
            assert line.split()[0] == f"{metric}={record[f'test_{metric}']:.4f}"


def test_the_default_is_0_2_and_is_not_shown(capsys, tmp_path):
    record_path, saved = tmp_path / "run.json", tmp_path / "run.npz"
    lines = ok(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--report-json",
               str(record_path), "--save", str(saved))
    given = ok(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--test-fraction", "0.2")
    assert lines[0].startswith("dataset=iris train=120 test=30 ")
    assert given[:2] == lines[:2] and "test_fraction" not in lines[1]
    assert json.loads(record_path.read_text())["test_fraction"] == 0.2
    assert checkpoint.load(saved).test_fraction == 0.2 == data.TEST_FRACTION


def test_help_names_the_option_and_its_range(capsys):
    code, out, _ = cli(capsys, "train", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--test-fraction F the fraction F (0 < F < 1) of the rows held out as the test split" in text
    assert "torchlean predict --split train|test recomputes this split (default: 0.2)" in text


# ----------------------------------------------------------------------------- bad values


@pytest.mark.parametrize("value", ["0", "1", "-0.1", "nan", "abc", "inf", "1.5", "", "0x0.5"])
def test_bad_values_are_one_line_errors(capsys, value):
    assert one_line_error(capsys, "train", "--dataset", "iris", "--test-fraction", value) == REFUSAL.format(
        repr(value)
    )
    assert one_line_error(capsys, "train", f"--test-fraction={value}") == REFUSAL.format(repr(value))


def test_a_fraction_that_leaves_no_row_to_train_on_names_the_flag_and_the_accepted_values(capsys, tmp_path):
    assert one_line_error(capsys, "train", "--dataset", "iris", "--test-fraction", "0.999") == (
        "error: --test-fraction 0.999: iris: a test fraction of 0.999 of 150 samples leaves an empty split "
        "(150 test rows, 0 to train on); accepted: a number in (0, 1) at most 149/150 for these 150 rows\n"
    )
    # the bound it names is the largest fraction that leaves a row: 149/150 keeps one (a single class,
    # refused as data.load refuses it)
    err = one_line_error(capsys, "train", "--dataset", "iris", "--test-fraction", repr(149 / 150))
    assert "the train split holds only class" in err
    # review36 F4: a fraction that starves the train split of classes names the flag too
    assert one_line_error(capsys, "train", "--dataset", "iris", "--test-fraction", "0.99").endswith(
        "(with --test-fraction 0.99: a smaller fraction leaves more rows to train on; the default is 0.2)\n"
    )
    starved = ("--test-fraction", "0.97", "--val-fraction", "0.5")
    err = one_line_error(capsys, "train", "--dataset", "iris", *starved)
    assert "a validation split needs 2 of each class" in err and "(with --test-fraction 0.97: " in err
    two = tmp_path / "two.csv"
    two.write_text("a,y\n1,0.5\n2,1.5\n")
    assert one_line_error(capsys, "train", "--dataset", str(two), "--test-fraction", "0.6") == (
        f"error: --test-fraction 0.6: {two}: a test fraction of 0.6 of 2 samples leaves an empty split "
        "(2 test rows, 0 to train on); accepted: a number in (0, 1) at most 1/2 for these 2 rows\n"
    )
    code, _, err = cli(capsys, "train", "--dataset", str(two), "--test-fraction", "0.5", "--epochs", "1")
    assert code == 0  # one row to train on: every column is constant there, and a note says so (review56 F8)
    assert err == (
        f"note: {two}: columns a, y (the target) are constant in the rows trained on, so they carry no "
        "information (scaled with scale 1, as scikit-learn's StandardScaler scales a zero-variance column)\n"
    )


# ------------------------------------------------------------------------------- --resume


def test_resume_takes_the_checkpoints_fraction_and_refuses_another(capsys, tmp_path):
    run = ("--dataset", "iris", "--hidden", "4", "--test-fraction", "0.3")
    whole, part, resumed = tmp_path / "whole.npz", tmp_path / "part.npz", tmp_path / "resumed.npz"
    whole_lines = ok(capsys, *run, "--epochs", "3", "--save", str(whole))
    ok(capsys, *run, "--epochs", "2", "--save", str(part))
    lines = ok(capsys, "--resume", str(part), "--epochs", "3", "--save", str(resumed))  # no flag: inherited
    assert lines[:2] == whole_lines[:2]
    assert lines[0].startswith("dataset=iris train=105 test=45 ") and " test_fraction=0.3 " in lines[1]
    assert lines[3:] == [line.replace(str(whole), str(resumed)) for line in whole_lines[4:]]  # epoch 3 on
    a, b = arrays(whole), arrays(resumed)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], strict=True, err_msg=name)
    assert checkpoint.load(resumed).test_fraction == 0.3
    # the same value in another spelling is no conflict; another value is refused, naming both
    ok(capsys, "--resume", str(part), "--epochs", "3", "--test-fraction", "0.30")
    assert one_line_error(capsys, "train", "--resume", str(part), "--test-fraction", "0.25") == (
        f"error: --resume {part} continues the run with the checkpoint's settings; --test-fraction 0.25 "
        "differs from the checkpoint's 0.3 (leave out the option, or train a new run without --resume)\n"
    )


def without_test_fraction(source: Path, target: Path, *, settings: bool = True, **meta_changes: Any) -> Path:
    """``source`` as a checkpoint written before ``--test-fraction``: no ``test_fraction`` metadata
    field, nor (``settings``) a ``test_fraction`` training setting; ``meta_changes`` edit the
    metadata instead."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    del meta["test_fraction"]
    if settings:
        del meta["training"]["settings"]["test_fraction"]
    meta.update(meta_changes)
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_a_checkpoint_written_before_the_option_means_0_2(capsys, tmp_path):
    saved = tmp_path / "new.npz"
    run = ("--dataset", "iris", "--hidden", "4")
    whole_lines = ok(capsys, *run, "--epochs", "3")
    ok(capsys, *run, "--epochs", "2", "--save", str(saved))
    old = without_test_fraction(saved, tmp_path / "old.npz")
    with np.load(old, allow_pickle=False) as archive:
        meta = json.loads(str(archive["metadata"]))
    assert "test_fraction" not in meta and "test_fraction" not in meta["training"]["settings"]
    assert checkpoint.load(old).test_fraction == 0.2
    # predict --split: scikit-learn's split at 0.2
    _, labels = load_iris(return_X_y=True)
    _, test_rows = train_test_split(np.arange(150), test_size=0.2, random_state=0, shuffle=True,
                                    stratify=labels)
    code, out, err = cli(capsys, "predict", str(old), "--dataset", "iris", "--split", "test")
    assert code == 0 and split_column(out) == sorted(test_rows.tolist())
    assert "dataset=iris rows=30 split=test profile=checked_cpu execution=eager" in err.splitlines()
    # --resume: the split it was trained on, and a fraction other than 0.2 is refused
    lines = ok(capsys, "--resume", str(old), "--epochs", "3")
    assert lines[:2] == whole_lines[:2] and lines[3:] == whole_lines[4:]
    assert one_line_error(capsys, "train", "--resume", str(old), "--test-fraction", "0.3") == (
        f"error: --resume {old} continues the run with the checkpoint's settings; --test-fraction 0.3 "
        "differs from the checkpoint's 0.2 (leave out the option, or train a new run without --resume)\n"
    )
    ok(capsys, "--resume", str(old), "--epochs", "3", "--test-fraction", "0.2")
    # a version 1 file has no such field either
    version1 = tmp_path / "v1.npz"
    loaded = checkpoint.load(saved)
    fields = {name: getattr(loaded, name) for name in Checkpoint.__slots__}
    checkpoint.save(version1, Checkpoint(**{**fields, "version": 1, "training": None, "environment": None,
                                            "torch_threads": None, "data_sha256": None, "capsules": None,
                                            "capsules_order": None}))
    assert checkpoint.load(version1).test_fraction == 0.2


def test_a_hand_edited_checkpoint_whose_fractions_disagree_is_refused_on_load(capsys, tmp_path):
    """review115 F1: predict --split scored the edited fraction's split while its digest was of the
    settings' split; the file is refused when read, by --resume, predict and inspect alike."""
    saved = tmp_path / "run.npz"
    ok(capsys, "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--test-fraction", "0.3", "--save",
       str(saved))
    edited = without_test_fraction(saved, tmp_path / "edited.npz", settings=False, test_fraction=0.25)
    message = ("the checkpoint's test_fraction 0.25 and its training settings' test_fraction '0.3' differ "
               "(one of them was edited): a checkpoint records one train/test split, which predict --split "
               "scores and --resume trains on")
    with pytest.raises(checkpoint.CheckpointError) as info:
        checkpoint.load(edited)
    assert str(info.value).endswith(message)
    for argv in (["train", "--resume", str(edited), "--epochs", "2"],
                 ["predict", str(edited), "--dataset", "iris", "--split", "test"],
                 ["inspect", str(edited)]):
        error = one_line_error(capsys, *argv)
        assert error.startswith("error: ") and message in error, error
    reseeded = without_test_fraction(saved, tmp_path / "seed.npz", settings=False, test_fraction=0.3,
                                     split_seed=7)
    with pytest.raises(checkpoint.CheckpointError) as info:
        checkpoint.load(reseeded)
    assert str(info.value).endswith(
        "the checkpoint's split_seed 7 and its training settings' seed '0' differ (one of them was edited): "
        "a checkpoint records one train/test split, which predict --split scores and --resume trains on")
    assert checkpoint.load(without_test_fraction(saved, tmp_path / "same.npz", settings=False,
                                                 test_fraction=0.3, split_seed=0)).split_seed == 0


@pytest.mark.parametrize("seed", [2**40, 1])
def test_a_hand_edited_trainer_seed_is_refused_on_load(capsys, tmp_path, seed):
    """review221 F5: a top-level seed other than the training settings' (which --resume trains
    with) was taken silently by predict, inspect and --resume, as a split_seed edit is not."""
    saved = tmp_path / "run.npz"
    ok(capsys, "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--save", str(saved))
    edited = without_test_fraction(saved, tmp_path / "edited.npz", settings=False, test_fraction=0.2,
                                   seed=seed, split_seed=0)
    message = (f"the checkpoint's seed {seed} and its training settings' seed '0' differ (one of them was "
               "edited): a checkpoint records one seed, the trainer's, which --resume trains with")
    with pytest.raises(checkpoint.CheckpointError) as info:
        checkpoint.load(edited)
    assert str(info.value).endswith(message)
    for argv in (["train", "--resume", str(edited), "--epochs", "2"],
                 ["predict", str(edited), "--dataset", "iris"], ["inspect", str(edited)]):
        error = one_line_error(capsys, *argv)
        assert error.startswith("error: ") and message in error, error


def test_an_edited_fraction_beside_settings_that_predate_the_option_is_caught(capsys, tmp_path):
    """review118 F1: settings written before --test-fraction take its default 0.2, so a hand-edited
    field of 0.3 is not caught on load; --resume refuses it (it would train on 0.2's split), and
    predict --split compares the data split as it scores them (0.3's), so they are not the run's."""
    saved = tmp_path / "run.npz"
    ok(capsys, "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--save", str(saved))
    edited = without_test_fraction(saved, tmp_path / "edited.npz", test_fraction=0.3)
    assert checkpoint.load(edited).test_fraction == 0.3
    assert one_line_error(capsys, "train", "--resume", str(edited), "--epochs", "2") == (
        f"error: checkpoint {edited}: its settings predate --test-fraction (so its run split with the "
        "default 0.2) but its test_fraction is 0.3 (the split torchlean predict --split recomputes): its "
        "fields are inconsistent (a checkpoint edited by hand?), and --resume cannot continue it; train a "
        "new run\n"
    )
    for path, matches in ((edited, False), (without_test_fraction(saved, tmp_path / "old.npz"), True)):
        record = tmp_path / "p.json"
        code, _, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--split", "test",
                           "--output", str(tmp_path / "p.csv"), "--report-json", str(record))
        assert code == 0, err
        assert json.loads(record.read_text())["data_matches_training"] is matches  # unedited: the run's data


# ----------------------------------------------------------------- the checkpoint field


def test_the_checkpoint_field_is_checked(tmp_path):
    from torchlean.cli import main

    saved = tmp_path / "run.npz"
    assert main(["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--save", str(saved)]) == 0
    loaded = checkpoint.load(saved)
    fields = {name: getattr(loaded, name) for name in Checkpoint.__slots__}
    for bad in (0.0, 1.0, -0.1, math.nan, True, 1, "0.3", None):
        with pytest.raises(CheckpointError, match=r"^test_fraction must be a float in \(0, 1\) \(the test "
                           r"fraction of the train/test split\), got "):
            Checkpoint(**{**fields, "test_fraction": bad})
    taken = Checkpoint(**{**fields, "training": None, "test_fraction": np.float64(0.35)})  # no settings
    assert (taken.test_fraction, type(taken.test_fraction)) == (0.35, float)
    with pytest.raises(CheckpointError, match=r"^a version 1 checkpoint has no test_fraction \(version 2 "
                       r"does; version 1 files mean 0\.2\), got test_fraction 0\.35$"):
        Checkpoint(**{**fields, "version": 1, "training": None, "test_fraction": 0.35})
    copy = tmp_path / "copy.npz"
    checkpoint.save(copy, Checkpoint(**{**fields, "training": None, "test_fraction": 1 / 3}))
    assert checkpoint.load(copy).test_fraction == 1 / 3  # JSON keeps the float exactly
    for value, message in (("0.3", r"metadata field 'test_fraction' must be a number, got '0\.3'"),
                           (True, r"metadata field 'test_fraction' must be a number, got True"),
                           (1, r"test_fraction must be a float in \(0, 1\) .*, got 1$")):
        edited = without_test_fraction(saved, tmp_path / "edited.npz", settings=False, test_fraction=value)
        with pytest.raises(CheckpointError, match=message):
            checkpoint.load(edited)


def test_predict_on_other_data_too_small_for_the_checkpoints_split(capsys, tmp_path, regression_csv):
    saved = tmp_path / "run.npz"
    ok(capsys, "--dataset", str(regression_csv), "--hidden", "4", "--epochs", "1", "--test-fraction", "0.9",
       "--save", str(saved))
    small = tmp_path / "small.csv"
    small.write_text("".join(regression_csv.read_text().splitlines(keepends=True)[:6]))  # header + 5 rows
    assert one_line_error(capsys, "predict", str(saved), "--dataset", str(small), "--split", "test") == (
        f"error: --split test: {small}: a test fraction of 0.9 of 5 samples leaves an empty split: "
        f"checkpoint {saved} was trained with --test-fraction 0.9, which takes 5 test rows of these 5, "
        "leaving none to train on; use --split all\n"
    )
    code, out, _ = cli(capsys, "predict", str(saved), "--dataset", str(small))
    assert code == 0 and len(out.splitlines()) == 6
