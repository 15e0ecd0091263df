"""review91 F1-F3, F10: reordered feature columns whose statistics differ are not called the
run's data; a validation target that standardises beyond the dtype is refused naming it (not as
NaN training data); the inferred-task note only on the validation split's class refusals; large
epoch losses in exponent form. Oracles: the rows the split functions choose (scikit-learn's
train_test_split), the values written, and the messages as the README words them."""

from __future__ import annotations

import math
import subprocess
import sys
import warnings
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, ok, repeated_names_note, rewrite_metadata

from torchlean import data, nn, optim, provenance
from torchlean.cli._output import loss_text
from torchlean.trainer import RunConfig, Trainer, TrainerError

SMALL = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n4,5,x\n6,7,y\n8,9,x\n1,1,y\n"


def _run_and_shifted_swap(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> tuple[Path, Path]:
    """A one-epoch run on ``SMALL`` saved to ``s.npz``, and ``SMALL`` with columns a and b swapped
    and b shifted by 1000 (``shifted.csv``)."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part))
    shifted = tmp_path / "shifted.csv"
    rows = [line.split(",") for line in SMALL.split()]
    shifted.write_text("b,a,label\n" + "".join(f"{float(b) + 1000!r},{a},{y}\n" for a, b, y in rows[1:]))
    return part, shifted


def test_reordered_columns_with_a_shifted_one_are_other_data(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    """F1: columns a and b swapped and b shifted by 1000: predict said "so it predicts on the run's
    data" (its accuracy fell); the statistics, compared after reordering, differ."""
    part, shifted = _run_and_shifted_swap(capsys, tmp_path)
    difference = ("their feature columns are the run's in another order, and once reordered their "
                  "standardised values hash alike, but their means and scales (the features', or the "
                  "target's) differ from the checkpoint's: other units or an offset")
    code, _, err = cli(capsys, "predict", str(part), "--dataset", str(shifted), "--output",
                       str(tmp_path / "p.csv"), "--report-json", str(tmp_path / "r.json"))
    assert code == 0, err
    assert err.splitlines() == [
        f"note: the data of {shifted} are not those checkpoint {part}'s run trained on ({difference}): the "
        "model standardises its inputs with the checkpoint's statistics, so its outputs on these data are "
        "not its outputs on the training data"]
    code, out, err = cli(capsys, "inspect", str(part), "--dataset", str(shifted))
    assert out.splitlines()[-1] == "data_matches: no"
    assert err.splitlines()[-1] == (f"note: the data of {shifted} are not those checkpoint {part}'s run "
                                    f"trained on: {difference}")


def _regression_with_a_huge_validation_target(path: Path, huge: float = 1e39) -> float:
    """200 rows ``a,y`` (y = 2a + noise); the first row of the validation split (seed 0, test
    fraction 0.2, validation fraction 0.2 of the train rows) set to ``huge``. Returns it."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=200)
    y = 2 * a + 0.1 * rng.normal(size=200)
    train, _ = data.split_rows(y, "regression", 0, 0.2, source="t")
    _, val = data.validation_rows(y[train], "regression", 0, 0.2, source="t")
    y[train[val[0]]] = huge
    path.write_text("a,y\n" + "".join(f"{float(u)!r},{float(v)!r}\n" for u, v in zip(a, y, strict=True)))
    return huge


def test_a_validation_target_beyond_float32_is_refused_naming_it(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path) -> None:
    """F2: "validation data: targets hold 1 NaN or infinite value ...; training on them would make
    every parameter NaN": the file holds none, and validation targets are not trained on."""
    path = tmp_path / "t.csv"
    _regression_with_a_huge_validation_target(path)
    loaded = data.load(str(path), val_fraction=0.2)
    assert loaded.y_val is not None and 1e39 in loaded.y_val.tolist()  # the premise
    mean, scale = loaded.target_statistics()
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--val-fraction", "0.2")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: the validation split's target 1e+39 standardises beyond the float32 range with the "
        f"train split's mean {mean:.6g} and scale {scale:.6g}, so the validation loss would be infinite "
        "(accepted: validation targets whose (y - mean) / scale, and the mean of its square, fit float32; "
        "pass --dtype float64, or leave out --val-fraction: the test split's metrics are measured on the "
        "targets as read)\n"
    )
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--val-fraction", "0.2",
                         "--dtype", "float64")
    assert code == 0, err
    val_mse = float(out.split("val_mse=")[1].split()[0])
    assert val_mse == pytest.approx(1e78 / len(loaded.y_val), rel=1e-6)  # (1e39)^2 / n_val dominates


@pytest.mark.parametrize(("huge", "dtype", "way"), [
    (1e39, "float32", "load with dtype=np.float64, or without val_fraction"),
    (1e300, "float32", "rescale the target (it overflows float64 too), or load without val_fraction"),
    (1e300, "float64", "rescale the target (it overflows float64 too), or load without val_fraction"),
])
def test_python_standardised_val_targets_refuses_what_the_cli_refuses(tmp_path: Path, huge: float, dtype: str,
                                                                      way: str) -> None:
    """review92 F4: ``data.load(..., val_fraction=)`` then ``standardised_val_targets()`` gave a
    float32 inf for the file's 1e39, which Trainer then called "NaN or infinite" without naming
    the dtype. The oracle: the statistics of the train part computed here in float64."""
    path = tmp_path / "t.csv"
    _regression_with_a_huge_validation_target(path, huge)
    loaded = data.load(str(path), val_fraction=0.2, dtype=dtype)
    assert loaded.y_val is not None and huge in loaded.y_val.tolist()  # the premise
    mean, scale = float(np.mean(loaded.y_train)), float(np.std(loaded.y_train))
    with pytest.raises(data.DataError) as caught:
        loaded.standardised_val_targets()
    # float64 holds 1e300 standardised, but not its square (review95 L6)
    subject = ("the mean of the squares of the validation part's standardised targets, inf, is beyond the "
               "float64 range" if dtype == "float64" else
               f"the validation part's target {huge:.6g} standardises beyond the {dtype} range")
    assert str(caught.value) == (
        f"t: {subject} with the "
        f"train part's mean {mean:.6g} and scale {scale:.6g}, so the validation loss would be infinite "
        "(accepted: validation targets whose (y - mean) / scale, and the mean of its square, "
        f"fit {dtype}; {way})"
    )
    assert data.validation_target_overflow(loaded.y_val, mean, scale, dtype) == data.TargetOverflow(
        huge, math.inf if dtype == "float64" else None, huge == 1e39)


def test_python_standardised_val_targets_keeps_targets_float64_holds(tmp_path: Path) -> None:
    """The nearest right thing to the refusal above: under float64 the 1e39 target standardises
    to a finite value, ``(1e39 - mean) / scale`` as computed here."""
    path = tmp_path / "t.csv"
    _regression_with_a_huge_validation_target(path)
    loaded = data.load(str(path), val_fraction=0.2, dtype="float64")
    assert loaded.y_val is not None
    mean, scale = float(np.mean(loaded.y_train)), float(np.std(loaded.y_train))
    np.testing.assert_array_equal(loaded.standardised_val_targets(), (loaded.y_val - mean) / scale)
    assert data.validation_target_overflow(loaded.y_val, mean, scale, np.float64) is None
    assert data.validation_target_overflow(loaded.y_val, mean, scale, np.float32) == data.TargetOverflow(
        1e39, None, True)


def test_a_mean_of_squares_beyond_the_dtype_is_named_as_such(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    """review95 L6: every validation target standardises within float32 (about 2e19), but the mean
    of their squares (about 5e38) does not; the refusal said the target "standardises beyond the
    float32 range". The oracle: the mean square computed here in float64."""
    rng = np.random.default_rng(4)
    a = rng.normal(size=200)
    y = 1e-30 * rng.normal(size=200)
    train, _ = data.split_rows(y, "regression", 0, 0.2, source="t")
    _, val = data.validation_rows(y[train], "regression", 0, 0.2, source="t")
    y[train[val]] = 2.2e-11
    path = tmp_path / "t.csv"
    path.write_text("a,y\n" + "".join(f"{float(u)!r},{float(v)!r}\n" for u, v in zip(a, y, strict=True)))
    loaded = data.load(str(path), val_fraction=0.2)
    assert loaded.y_val is not None
    mean, scale = loaded.target_statistics()
    z = (loaded.y_val - mean) / scale
    largest = float(np.finfo(np.float32).max)
    assert np.abs(z).max() < largest < float(np.mean(z**2))  # the premise
    with pytest.raises(data.DataError) as caught:
        loaded.standardised_val_targets()
    assert str(caught.value).startswith(
        f"t: the mean of the squares of the validation part's standardised targets, {np.mean(z**2):.6g}, is "
        f"beyond the float32 range with the train part's mean {mean:.6g} and scale {scale:.6g}")
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--val-fraction", "0.2")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {path}: the mean of the squares of the validation split's standardised "
                          f"targets, {np.mean(z**2):.6g}, is beyond the float32 range"), err
    assert "pass --dtype float64" in err


def test_a_resumed_run_is_not_told_to_change_its_dtype_or_validation_part(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review99 M1: resume refuses another --dtype, and its validation part is the checkpoint's,
    but the refusal of a validation target beyond float32 named both as the way out."""
    clean, big = tmp_path / "clean.csv", tmp_path / "big.csv"
    _regression_with_a_huge_validation_target(clean, 1.0)
    _regression_with_a_huge_validation_target(big)
    part = tmp_path / "r.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(clean), "--epochs", "1", "--val-fraction", "0.2",
                       "--save", str(part))
    assert code == 0, err
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(big), "--epochs", "2")
    assert [str(w.message) for w in caught] == []  # review107 F2: numpy's "overflow encountered in cast"
    assert (code, out) == (2, "")  # other data than the run's: that refusal first (review103 F9)
    assert err.startswith(f"error: the data of --dataset {big} differ from those the run in {part} "), err
    # a run that trained on them (written before torchlean checked validation targets): the data
    # hash alike, and the validation target is refused with the resumed run's way out
    as_read = data.load(str(big), seed=0, val_fraction=0.2, dtype="float32")  # as --resume reads it
    older = rewrite_metadata(part, tmp_path / "older.npz", lambda meta: meta["training"]["settings"].update(
        data_sha256=provenance.data_sha256(as_read)))
    code, out, err = cli(capsys, "train", "--resume", str(older), "--dataset", str(big), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err.rstrip().endswith(
        "fit float32; the checkpoint's dtype is float32 and its run holds out a validation part: correct or "
        "remove the row)"), err
    assert "--dtype float64" not in err and "leave out --val-fraction" not in err


def test_trainer_says_validation_targets_would_make_the_validation_loss_infinite() -> None:
    trainer = Trainer(nn.sequential(nn.linear(2, 1)), objective="mse", seed=0,
                      config=RunConfig(optim.sgd(0.1)))
    x = np.ones((4, 2), dtype=np.float32)
    with pytest.raises(TrainerError) as caught:
        held_out = (x, np.array([0, np.inf, 0, 0], np.float32))
        trainer.fit(x, np.zeros(4, np.float32), epochs=1, validation=held_out)
    assert str(caught.value) == (
        "validation data: targets hold 1 NaN or infinite value (the first in row 1); the validation loss "
        "would be NaN or infinite (accepted: finite numbers)"
    )


def test_the_inferred_task_note_is_added_to_class_split_refusals_only(tmp_path: Path) -> None:
    """F3: with val_fraction, any data error (here a feature whose statistics overflow) got the note
    that the task classification was inferred, though its 12 classes have 30 samples each."""
    labels = [i % 12 for i in range(360)]
    path = tmp_path / "t.csv"
    path.write_text("a,b,y\n" + "".join(f"{1e200 * (-1) ** i!r},{i},{c}\n" for i, c in enumerate(labels)))
    with pytest.raises(data.DataError) as caught:
        data.load(str(path), val_fraction=0.2)
    assert "standardising it overflows float64" in str(caught.value)
    assert "task classification was inferred" not in str(caught.value)
    assert not isinstance(caught.value, data.ClassSplitError)


def test_large_epoch_losses_print_in_exponent_form() -> None:
    """F10: val_loss=8822794884653620520309621847109696536504537137038874477390392840621796622336.000000."""
    assert loss_text(8.822794884653621e75) == "8.822795e+75"
    assert loss_text(1e9) == "1.000000e+09" and loss_text(999999999.0) == "999999999.000000"
    assert loss_text(0.5) == "0.500000" and loss_text(math.inf) == "inf" and loss_text(0.0) == "0.000000"


def test_resume_names_reordered_columns_and_quotes_an_empty_pattern(capsys: pytest.CaptureFixture[str],
                                                                    tmp_path: Path) -> None:
    """F10: resume said "(the file or its split changed)" of the run's data with the feature columns
    swapped, where inspect and predict name the order; `--freeze ''` read "--freeze  differs"."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part), "--freeze", "^0\\.")
    swapped = tmp_path / "swapped.csv"
    rows = [line.split(",") for line in SMALL.split()]
    swapped.write_text("".join(f"{b},{a},{y}\n" for a, b, y in rows))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(swapped), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err == (
        f"error: the data of --dataset {swapped} are those the run in {part} trained on with the feature "
        "columns in another order, and train reads columns in their order, so each weight would go on with "
        "another feature: put the columns in the run's order (a, b), or train a new run\n"
    )
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "2", "--freeze", "")
    assert (code, out) == (2, "")
    assert "; --freeze '' differs from the checkpoint's ^0\\. (leave out the option" in err


def test_a_validation_target_float64_cannot_hold_squared_is_not_sent_to_float64(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review92 F3: a 1e300 validation target was refused under float32 with "pass --dtype float64",
    which then trained with val_loss=inf (its square overflows float64 too); review92 F8: standard
    input is "standard input (-)"."""
    path = tmp_path / "t.csv"
    _regression_with_a_huge_validation_target(path, 1e300)
    for dtype in ("float32", "float64"):
        code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--val-fraction",
                             "0.2", "--dtype", dtype)
        assert (code, out) == (2, ""), err
        subject = ("the mean of the squares of the validation split's standardised targets, inf, is beyond "
                   "the float64 range" if dtype == "float64" else
                   "the validation split's target 1e+300 standardises beyond the float32 range")
        assert err.startswith(f"error: {path}: {subject}"), err
        assert err.endswith("; rescale the target (it overflows float64 too), or leave out --val-fraction: "
                            "the test split's metrics are measured on the targets as read)\n")
    done = subprocess.run([sys.executable, "-m", "torchlean", "train", "--dataset", "-", "--epochs", "1",
                           "--val-fraction", "0.2"], input=path.read_text(), capture_output=True, text=True,
                          check=False, timeout=300)
    assert done.returncode == 2
    assert done.stderr.startswith("error: standard input (-): the validation split's target 1e+300")


def test_resume_refuses_reordered_and_shifted_columns_for_their_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review92 F1: resume called reordered and shifted data "those the run trained on with the
    feature columns in another order"; reordering them as told met a second refusal."""
    part, shifted = _run_and_shifted_swap(capsys, tmp_path)
    rows = [line.split(",") for line in SMALL.split()]
    train_b = [float(b) for a, b, y in rows[1:]]  # the run's mean of b over its train rows
    recorded = float(np.load(part)["feature_mean"][1])
    assert recorded == pytest.approx(np.mean([train_b[i] for i in data.split_rows(
        np.array([0 if y == "x" else 1 for _, _, y in rows[1:]]), "classification", 0, 0.2, source="s")[0]]))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(shifted), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err == (
        f"error: checkpoint {part}: the data of --dataset {shifted} are not those its run trained on: their "
        "feature columns are the run's in another order, and once reordered their standardised values hash "
        f"alike, but feature b's mean is {recorded + 1000!r}, the checkpoint's {recorded!r} (the same rows "
        "in other units or with an offset): resume with the data the run trained on, or train a new run on "
        "these data\n"
    )


def test_predict_refuses_to_take_columns_by_name_for_a_checkpoint_that_repeats_a_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review92 F2: trained on a header a,a,c,y, predict on a,b,c,y fed column a to both a features
    and ignored b (accuracy 0.97 -> 0.745), saying only that b was ignored."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3))
    body = "".join(",".join([*map(repr, map(float, r)), "p" if r[0] + r[1] > 0 else "q"]) + "\n" for r in x)
    dup, named, part = tmp_path / "dup.csv", tmp_path / "abc.csv", tmp_path / "dup.npz"
    dup.write_text("a,a,c,y\n" + body)
    named.write_text("a,b,c,y\n" + body)
    code, _, err = cli(capsys, "train", "--dataset", str(dup), "--epochs", "1", "--save", str(part))
    assert code == 0 and err == repeated_names_note(dup, 0, 1, "a"), err  # review188 F4: said at train time
    out_csv = str(tmp_path / "p")
    code, out, err = cli(capsys, "predict", str(part), "--dataset", str(named), "--output", out_csv)
    assert (code, out) == (2, "")
    assert err == (
        f"error: {named}: checkpoint {part}'s run named features a more than once, so predict cannot take "
        "the file's columns by name: give the file the header training read (a, a, c, with the label column "
        "anywhere), or no header, to take the columns by position\n"
    )
    code, _, err = cli(capsys, "predict", str(part), "--dataset", str(dup), "--output", out_csv)
    assert code == 0, err  # the header training read: by position
