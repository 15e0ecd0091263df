"""review91 F1-F3, F10: reordered feature columns whose statistics differ are not called the
run's data; a validation target that standardises beyond the dtype is refused naming it (not as
NaN training data); the inferred-task note only on the validation split's class refusals; large
epoch losses in exponent form. Oracles: the rows the split functions choose (scikit-learn's
train_test_split), the values written, and the messages as the README words them."""

from __future__ import annotations

import math
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, ok

from torchlean import data, nn, optim
from torchlean.cli._output import loss_text
from torchlean.trainer import RunConfig, Trainer, TrainerError

SMALL = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n4,5,x\n6,7,y\n8,9,x\n1,1,y\n"


def test_reordered_columns_with_a_shifted_one_are_other_data(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    """F1: columns a and b swapped and b shifted by 1000: predict said "so it predicts on the run's
    data" (its accuracy fell); the statistics, compared after reordering, differ."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part))
    shifted = tmp_path / "shifted.csv"
    rows = [line.split(",") for line in SMALL.split()]
    shifted.write_text("b,a,label\n" + "".join(f"{float(b) + 1000!r},{a},{y}\n" for a, b, y in rows[1:]))
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


def _regression_with_a_huge_validation_target(path: Path) -> float:
    """200 rows ``a,y`` (y = 2a + noise); the first row of the validation split (seed 0, test
    fraction 0.2, validation fraction 0.2 of the train rows) set to 1e39. Returns that target."""
    rng = np.random.default_rng(3)
    a = rng.normal(size=200)
    y = 2 * a + 0.1 * rng.normal(size=200)
    train, _ = data.split_rows(y, "regression", 0, 0.2, source="t")
    _, val = data.validation_rows(y[train], "regression", 0, 0.2, source="t")
    y[train[val[0]]] = 1e39
    path.write_text("a,y\n" + "".join(f"{float(u)!r},{float(v)!r}\n" for u, v in zip(a, y, strict=True)))
    return 1e39


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
        "(accepted: validation targets whose (y - mean) / scale fits float32; pass --dtype float64, or leave "
        "out --val-fraction: the test split's metrics are measured on the targets as read)\n"
    )
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--epochs", "1", "--val-fraction", "0.2",
                         "--dtype", "float64")
    assert code == 0, err
    val_mse = float(out.split("val_mse=")[1].split()[0])
    assert val_mse == pytest.approx(1e78 / len(loaded.y_val), rel=1e-6)  # (1e39)^2 / n_val dominates


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
