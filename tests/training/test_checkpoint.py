"""Checkpoints: ``torchlean train --save``, ``torchlean predict`` and ``torchlean.checkpoint``.

Oracles: the same model trained in-process with :class:`~torchlean.trainer.Trainer` on the same
split, fed features that scikit-learn's ``StandardScaler`` standardises after an independent
``train_test_split`` of the raw data (checked to reproduce :func:`torchlean.data.load`'s split
bit for bit); class labels and targets read back from the files with the ``csv`` module;
accuracy and mean squared error counted with numpy.
"""

from __future__ import annotations

import csv
import json
import os
import re
import shlex
import stat
import subprocess
import sys
import threading
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from cli_runs import OTHER_TRAINING_ROWS
from sklearn.datasets import load_iris, load_wine
from sklearn.model_selection import train_test_split
from sklearn.preprocessing import StandardScaler

from torchlean import checkpoint, data, optim
from torchlean.backend import profiles, report
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.vocabulary import BackendOp
from torchlean.checkpoint import Checkpoint, CheckpointError, TrainingState
from torchlean.cli import main
from torchlean.cli._output import check_writable
from torchlean.models import build_model
from torchlean.spec.checker import flash_check_cases
from torchlean.trainer import Objective, RunConfig, Trainer

EPOCHS = 2
HIDDEN = 8


def cli(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``torchlean ARGV`` in-process; argparse's own exits count as return codes."""
    try:
        code = main(list(argv))
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def read_rows(path: Path) -> tuple[list[str], list[list[str]]]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    return rows[0], rows[1:]


@pytest.fixture(scope="module")
def labels_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 rows of three features and a class label 3, 5 or 7 (not 0-based), header ``a,b,c,y``."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 3))
    y = np.array([3, 5, 7])[np.argmax(x, axis=1)]
    path = tmp_path_factory.mktemp("csv") / "labels.csv"
    lines = ["a,b,c,y"] + [f"{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{c}" for r, c in zip(x, y, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def regression_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """50 rows of four features and a non-integral target (so the task is regression)."""
    rng = np.random.default_rng(2)
    x = rng.standard_normal((50, 4)) * [1.0, 2.0, 10.0, 0.1]
    y = 30 * x[:, 0] - 4 * x[:, 1] + 0.5 * x[:, 2] + 100.25 + rng.standard_normal(50)
    path = tmp_path_factory.mktemp("csv") / "reg.csv"
    rows = [",".join(f"{v:.4f}" for v in (*r, t)) for r, t in zip(x, y, strict=True)]
    lines = ["f0,f1,f2,f3,target", *rows]
    path.write_text("\n".join(lines) + "\n")
    return path


@pytest.fixture(scope="module")
def iris_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris checkpoint from ``torchlean train --save`` (1 epoch, hidden 4)."""
    path = tmp_path_factory.mktemp("ckpt") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


# ------------------------------------------------------------------------------------ oracles


def csv_data(path: Path) -> tuple[np.ndarray[Any, Any], list[str]]:
    """Features (float64) and label cells of a fixture file (label last), by the csv module."""
    _, rows = read_rows(path)
    return np.array([[float(c) for c in row[:-1]] for row in rows]), [row[-1] for row in rows]


def oracle(
    dataset: str,
    raw_x: np.ndarray[Any, Any],
    stratify: np.ndarray[Any, Any] | None,
    *,
    dtype: str,
    execution: str = "eager",
) -> tuple[np.ndarray[Any, Any], Trainer[Any, Any], tuple[float, float]]:
    """Train in-process as ``torchlean train --dataset DATASET --epochs 2 --hidden 8`` does; return
    the model outputs on every raw row (standardised by a StandardScaler fitted on an independent
    split of ``raw_x``), the trainer, and the regression target's (mean, scale)."""
    ds = data.load(dataset, seed=0, dtype=dtype)
    x_train, x_test = train_test_split(raw_x, test_size=0.2, random_state=0, shuffle=True, stratify=stratify)
    scaler = StandardScaler().fit(x_train)
    np.testing.assert_array_equal(scaler.transform(x_test).astype(dtype), ds.x_test, strict=True)
    classification = ds.task == "classification"
    layer, shape = build_model("mlp", ds.n_features, ds.n_classes if classification else 1, hidden=HIDDEN)
    config = RunConfig(optimizer=optim.by_name("adam", 0.005), execution=execution, dtype=dtype)
    trainer: Trainer[Any, Any] = Trainer(
        layer, objective=Objective.CROSS_ENTROPY if classification else Objective.MSE,
        config=config.with_profile("checked_cpu"), seed=0, input_shape=shape,
    )
    y_train, stats = ds.y_train, (0.0, 1.0)
    if not classification:
        target = ds.y_train.astype(np.float64)
        stats = (float(np.mean(target)), float(np.std(target)))
        y_train = ((target - stats[0]) / stats[1]).astype(dtype)
    trainer.fit(ds.x_train, y_train, epochs=EPOCHS, batch_size=32)
    return trainer.predict(scaler.transform(raw_x).astype(dtype)), trainer, stats


def train_and_save(capsys: pytest.CaptureFixture[str], path: Path, *argv: str) -> str:
    code, out, err = cli(capsys, "train", "--epochs", str(EPOCHS), "--hidden", str(HIDDEN),
                         "--save", str(path), *argv)
    assert code == 0, err
    assert out.splitlines()[-1] == f"saved: {path}"
    return out


def audit_lines(trainer: Trainer[Any, Any]) -> list[str]:
    return [report.audit_line(kernel.audit()) for kernel in trainer.selected]


# ------------------------------------------------------------------------------- round trips


@pytest.mark.parametrize(
    ("dtype", "execution"), [("float32", "eager"), ("float64", "eager"), ("float32", "typed-graph")]
)
def test_iris_round_trip_reproduces_the_trained_model(capsys, tmp_path, dtype, execution):
    path = tmp_path / "sub" / "iris.npz"  # a missing parent folder is created
    record = tmp_path / "run.json"
    train_and_save(capsys, path, "--dataset", "iris", "--dtype", dtype, "--execution", execution,
                   "--report-json", str(record))
    assert json.loads(record.read_text())["checkpoint"] == str(path)
    x, y = load_iris(return_X_y=True)
    outputs, trainer, _ = oracle("iris", x, y, dtype=dtype, execution=execution)

    saved = checkpoint.load(path)
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(saved.weights[name], value, strict=True)
    names = tuple(load_iris().target_names)
    assert (saved.dtype, saved.execution, saved.classes) == (dtype, execution, names)
    assert (saved.dataset, saved.label_column, saved.features, saved.hidden) == ("iris", "target", 4, HIDDEN)

    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris")
    assert code == 0, err
    predicted = outputs.argmax(axis=1)
    assert out == "prediction\n" + "".join(f"{load_iris().target_names[i]}\n" for i in predicted)
    report_lines = err.splitlines()
    correct = int(np.sum(predicted == y))
    assert f"accuracy={correct / 150:.4f} ({correct}/150)" in report_lines
    assert report_lines[1] == f"dataset=iris rows=150 profile=checked_cpu execution={execution}"
    order = "first-use order" if execution == "eager" else "graph plan order"  # none ran outside the graph
    header = report_lines.index(f"backend capsules used (2, {order}):")
    # the forward ops the trainer used, as train prints them
    forward = [line for line in audit_lines(trainer) if line.split(":")[0].strip() in ("linear", "relu")]
    assert report_lines[header + 1 :] == forward


def test_predict_under_another_execution_and_profile_gives_the_same_classes(capsys, tmp_path):
    path = tmp_path / "iris.npz"
    train_and_save(capsys, path, "--dataset", "iris")
    x, y = load_iris(return_X_y=True)
    outputs, _, _ = oracle("iris", x, y, dtype="float32")
    # typed graph: bit for bit the eager outputs (same profile, same dtype)
    output = tmp_path / "typed.csv"
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--execution", "typed-graph",
                         "--output", str(output), "--show-backend")
    assert code == 0, err
    header, rows = read_rows(output)
    assert header == ["prediction"]
    assert [r[0] for r in rows] == [load_iris().target_names[i] for i in outputs.argmax(axis=1)]
    lines = out.splitlines()
    assert lines[1] == "dataset=iris rows=150 profile=checked_cpu execution=typed-graph"
    assert lines[-1] == f"wrote {output}"
    assert lines[2] == "[TorchLean] backend capsules used:"  # --show-backend: each capsule's report
    assert ("    shape: shape safety for linear; guarded at runtime by "
            "torchlean.backend.providers.reference.guards.check_linear") in lines
    # fast_cpu: aten capsules are named in the audit, and the report keeps the training profile
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--profile", "fast_cpu")
    assert code == 0, err
    assert "  linear: aten.linear provider=aten" in err
    assert err.splitlines()[0].endswith(" trained_on=iris trained_under=checked_cpu")
    assert err.splitlines()[1] == "dataset=iris rows=150 profile=fast_cpu execution=eager"


def test_csv_classification_prints_the_original_labels(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    x, cells = csv_data(labels_csv)
    ids = np.array([{"3": 0, "5": 1, "7": 2}[c] for c in cells])
    outputs, _, _ = oracle(str(labels_csv), x, ids, dtype="float32")
    expected = [("3", "5", "7")[i] for i in outputs.argmax(axis=1)]
    saved = checkpoint.load(path)
    assert (saved.classes, saved.label_column, saved.feature_names) == (("3", "5", "7"), "y", ("a", "b", "c"))

    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv))
    assert code == 0, err
    assert out.splitlines() == ["prediction", *expected]
    correct = sum(p == c for p, c in zip(expected, cells, strict=True))
    assert f"accuracy={correct / 60:.4f} ({correct}/60)" in err.splitlines()

    # features only (no label column): same predictions, no accuracy line
    features_only = tmp_path / "features.csv"
    lines = labels_csv.read_text().splitlines()
    features_only.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in lines))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(features_only))
    assert code == 0, err
    assert out.splitlines() == ["prediction", *expected]
    assert "accuracy=" not in err

    # the label first, written as floats and named explicitly: matched by value
    moved = tmp_path / "moved.csv"
    moved.write_text("y,a,b,c\n" + "".join(
        f"{float(line.rsplit(',', 1)[1])},{line.rsplit(',', 1)[0]}\n" for line in lines[1:]
    ))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(moved), "--label-column", "0")
    assert code == 0, err
    assert out.splitlines() == ["prediction", *expected]
    assert f"accuracy={correct / 60:.4f} ({correct}/60)" in err.splitlines()


def test_csv_regression_predicts_in_target_units(capsys, tmp_path, regression_csv):
    path = tmp_path / "reg.npz"
    for dtype in ("float32", "float64"):
        train_and_save(capsys, path, "--dataset", str(regression_csv), "--dtype", dtype)
        x, cells = csv_data(regression_csv)
        outputs, _, (mean, scale) = oracle(str(regression_csv), x, None, dtype=dtype)
        saved = checkpoint.load(path)
        assert (saved.task, saved.target_mean, saved.target_scale) == ("regression", mean, scale)
        assert saved.classes == ()
        expected = outputs.astype(np.float64).reshape(-1) * scale + mean

        code, out, err = cli(capsys, "predict", str(path), "--dataset", str(regression_csv))
        assert code == 0, err
        predicted = np.array([float(v) for v in out.splitlines()[1:]])
        np.testing.assert_array_equal(predicted, expected, strict=True)  # repr round-trips float64
        truth = np.array([float(c) for c in cells]).astype(dtype).astype(np.float64)
        assert f"mse={np.mean((expected - truth) ** 2):.4f}" in err.splitlines()


def test_standardise_reproduces_the_training_features_bit_for_bit(tmp_path, iris_checkpoint):
    saved = checkpoint.load(iris_checkpoint)
    ds = data.load("iris", seed=0)
    x, y = load_iris(return_X_y=True)
    _, x_test = train_test_split(x, test_size=0.2, random_state=0, shuffle=True, stratify=y)
    np.testing.assert_array_equal(saved.standardise(x_test), ds.x_test, strict=True)
    with pytest.raises(CheckpointError, match=r"takes 4 features per row, got an array of shape \[2, 3\]"):
        saved.standardise(np.zeros((2, 3)))
    poisoned = np.ones((3, 4))
    poisoned[1, 2], poisoned[1, 3], poisoned[2, 0] = np.nan, np.inf, np.nan  # the first in row order
    # numpy's 0-based indices, with the feature's name (1-based "row 2, feature 3" read as x[2])
    with pytest.raises(
        checkpoint.FeatureValueError,
        match=r"^x\[1, 2\] \(feature petal length \(cm\)\): the value nan is not a finite number$",
    ) as caught:
        saved.standardise(poisoned)
    assert (caught.value.row, caught.value.feature) == (1, 2) and isinstance(caught.value, CheckpointError)
    beyond = np.ones((3, 4))
    beyond[1, 1], beyond[1, 3], beyond[2, 0] = 1e300, -1e300, 1e300  # the first in row order
    with pytest.raises(CheckpointError, match=r"^x\[1, 1\] \(feature sepal width \(cm\)\): the value "
                       r"1e\+300 standardises beyond"):
        saved.standardise(beyond)
    # not real numbers: refused as the trainer refuses them (were a bare ValueError, or a complex
    # array's real part with a ComplexWarning)
    for bad, message in (
        (np.array([["a"] * 4]), r"^features must be real numbers \(accepted: bool, integer or float"),
        ([[1, 2], [3]], r"^features must be a rectangular array of real numbers: "),
        (np.ones((1, 4)) * (1 + 1j), r"got dtype complex128$"),
    ):
        with pytest.raises(CheckpointError, match=message):
            saved.standardise(bad)  # type: ignore[arg-type]
    ints = saved.standardise(np.ones((1, 4), dtype=np.int64))
    np.testing.assert_array_equal(ints, saved.standardise(np.ones((1, 4))))


def test_paths_that_are_not_strings_and_empty_build_labels_are_refused(iris_checkpoint):
    saved = checkpoint.load(iris_checkpoint)
    for call in (lambda: checkpoint.load(3), lambda: checkpoint.save(3, saved)):
        with pytest.raises(CheckpointError, match=r"checkpoint path must be a str or os\.PathLike, got int"):
            call()  # type: ignore[arg-type]
    for call in (lambda: checkpoint.load(""), lambda: checkpoint.save("", saved)):
        with pytest.raises(CheckpointError, match=r"^a checkpoint path must name a file, got ''$"):
            call()  # Path("") would be ".", the current directory
    # an empty label is an unknown one (it fell back to the saved value), as RunConfig refuses it
    with pytest.raises(TorchLeanError, match="unknown execution mode"):
        saved.build(execution="")
    with pytest.raises(TorchLeanError, match="unknown"):
        saved.build(profile="")


# ------------------------------------------------------------------------------- the API


def test_save_load_round_trip_keeps_every_field(tmp_path, iris_checkpoint):
    saved = checkpoint.load(iris_checkpoint)
    copy = tmp_path / "copy.ckpt"  # saved under exactly this name: no .npz appended
    checkpoint.save(copy, saved)
    again = checkpoint.load(copy)
    for name in Checkpoint.__slots__:
        a, b = getattr(saved, name), getattr(again, name)
        if isinstance(a, np.ndarray):
            np.testing.assert_array_equal(a, b, strict=True)
        elif name == "weights":
            assert list(a) == list(b)
            for key in a:
                np.testing.assert_array_equal(a[key], b[key], strict=True)
        elif name == "training":  # torchlean train --save writes one
            assert (a.epochs_done, a.epochs, a.random_counter, dict(a.settings)) == (
                b.epochs_done, b.epochs, b.random_counter, dict(b.settings)
            )
            assert list(a.optimizer) == list(b.optimizer) and "steps" in a.optimizer
            for key in a.optimizer:
                np.testing.assert_array_equal(a.optimizer[key], b.optimizer[key], strict=True)
        else:
            assert a == b, name
    with zipfile.ZipFile(copy) as archive:  # nothing pickled: plain .npy members
        assert all(name.endswith(".npy") for name in archive.namelist())
    assert not saved.feature_mean.flags.writeable and not saved.weights["0.weight"].flags.writeable
    trainer = saved.build()
    assert trainer.profile.name == "checked_cpu" and trainer.config.dtype == "float32"
    np.testing.assert_array_equal(trainer.model.parameters[0], saved.weights["0.weight"], strict=True)


TRAINING = TrainingState(epochs_done=1, epochs=2, optimizer={"steps": np.array(4)}, settings={})


def fields(saved: Checkpoint, **changes: Any) -> dict[str, Any]:
    values = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    values.update(changes)
    return values


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"version": 3}, r"unsupported checkpoint version 3 \(supported: 1, 2\)"),
        ({"version": 1, "training": TRAINING}, r"a version 1 checkpoint holds no training state"),
        ({"training": {"epochs_done": 1}}, r"training must be a TrainingState or None, got dict"),
        ({"model": "rnn"}, r"unknown model 'rnn' \(known: mlp \| cnn \| transformer\)"),
        ({"classes": ("a", "b")}, r"one class per output unit \(3\)"),
        ({"classes": ("a", "a", "b")}, r"classes must be distinct, non-blank strings"),
        ({"classes": ("a", " ", "b")}, r"classes must be distinct, non-blank strings, got \('a', ' ', 'b'\)"),
        ({"target_mean": 1.0}, r"must be None for classification"),
        ({"feature_mean": np.array([0.0, np.nan, 0.0, 0.0])}, r"feature_mean\[1\] is not finite: nan"),
        ({"feature_scale": np.zeros(4)}, r"feature_scale\[0\] must be > 0"),
        ({"feature_scale": np.ones(4, dtype=np.float32)}, r"feature_scale must be a float64 array of shape"),
        ({"execution": "lazy"}, r"unknown execution 'lazy' \(known: eager \| typed-graph\)"),
        ({"profile": "nope"}, r"unknown profile 'nope' \(known: checked_cpu \| checked_cuda \|"),
        ({"weights": {}}, r"missing \['0.weight', .*\], unexpected \[\]"),
    ],
)
def test_checkpoint_refuses_inconsistent_fields(iris_checkpoint, changes, message):
    with pytest.raises(CheckpointError, match=message):
        Checkpoint(**fields(checkpoint.load(iris_checkpoint), **changes))


def test_checkpoint_takes_the_values_the_api_hands_out(iris_checkpoint):
    """numpy integers (build_model accepts them), ``np.float32`` (RunConfig accepts it), an
    ExecutionMode member, a list of class names and a maintained BackendProfile are stored in the
    record's spelling (each was refused, the member as an "unknown execution"); the result equals
    the loaded checkpoint field for field and predicts the same (review17 audit P2)."""
    from torchlean.backend.registry import CapsuleModule
    from torchlean.trainer import ExecutionMode

    saved = checkpoint.load(iris_checkpoint)
    given = fields(
        saved,
        outputs=np.int64(3),
        hidden=np.int32(saved.hidden),
        seed=np.uint64(saved.seed),
        dtype=np.dtype(saved.dtype).type,
        execution=ExecutionMode(saved.execution),
        classes=list(saved.classes),
        feature_names=list(saved.feature_names),
        profile=profiles.get(saved.profile),
    )
    rebuilt = Checkpoint(**given)
    for name in Checkpoint.__slots__:
        mine, theirs = getattr(rebuilt, name), getattr(saved, name)
        if name == "weights":
            assert list(mine) == list(theirs)
        elif isinstance(theirs, np.ndarray):
            np.testing.assert_array_equal(mine, theirs)
        else:
            assert (mine, type(mine)) == (theirs, type(theirs)), name
    x = np.random.default_rng(0).normal(size=(5, 4))
    np.testing.assert_array_equal(rebuilt.build().predict(x), saved.build().predict(x))
    # a modified profile keeps the maintained name but would be rebuilt as the maintained one
    relu = next(c for c in profiles.get("checked_cpu").registry() if c.name == "reference.relu")
    modified = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mine", (relu,))])
    refused = r"^profile 'checked_cpu' is not a maintained profile as shipped"
    with pytest.raises(CheckpointError, match=refused):
        Checkpoint(**fields(saved, profile=modified))
    listed = {name: value.tolist() for name, value in saved.weights.items()}
    listed_refused = r"^weight 0\.weight is a list, expected a numpy array of float32$"
    with pytest.raises(CheckpointError, match=listed_refused):
        Checkpoint(**fields(saved, weights=listed))
    with pytest.raises(CheckpointError, match="hidden must be an int >= 1, got True"):
        Checkpoint(**fields(saved, hidden=True))
    with pytest.raises(CheckpointError, match=r"dtype must be float32 or float64, got <class 'numpy\.int"):
        Checkpoint(**fields(saved, dtype=np.int64))


def test_checkpoint_refuses_mis_shaped_and_mistyped_weights(iris_checkpoint):
    saved = checkpoint.load(iris_checkpoint)
    weights = dict(saved.weights)
    weights["2.bias"] = np.zeros(5, dtype=np.float32)
    with pytest.raises(CheckpointError, match=r"weight 2.bias has shape \[5\], expected \[4\]"):
        Checkpoint(**fields(saved, weights=weights))
    weights["2.bias"] = np.zeros(4, dtype=np.float64)
    with pytest.raises(CheckpointError, match=r"weight 2.bias has dtype float64, expected float32"):
        Checkpoint(**fields(saved, weights=weights))


# ------------------------------------------------------------------------------ bad files


def rewrite(source: Path, target: Path, *, drop: str | None = None, **replace: Any) -> Path:
    with np.load(source, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files if name != drop}
    arrays.update(replace)
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


def metadata(source: Path, **changes: Any) -> np.ndarray[Any, Any]:
    with np.load(source, allow_pickle=False) as archive:
        meta = json.loads(str(archive["metadata"]))
    meta.update(changes)
    return np.array(json.dumps(meta))


def bad_files(tmp_path: Path, good: Path) -> list[tuple[Path, str]]:
    corrupt = tmp_path / "corrupt.npz"
    corrupt.write_bytes(b"this is not an archive\n" * 10)
    truncated = tmp_path / "truncated.npz"
    truncated.write_bytes(good.read_bytes()[: good.stat().st_size // 2])
    empty = tmp_path / "empty.npz"
    empty.write_bytes(b"")
    npy = tmp_path / "array.npz"
    with npy.open("wb") as handle:
        np.save(handle, np.zeros(3))
    bad_weight = rewrite(good, tmp_path / "w.npz", **{"weights/0.weight": np.zeros((4, 3), np.float32)})
    return [
        (tmp_path / "missing.npz", r"checkpoint file not found: .*missing.npz"),
        (tmp_path, r"checkpoint .* is a directory, not a file"),
        (Path(os.devnull), r"checkpoint /dev/null is not a regular file \(a device or a pipe\)"),
        (corrupt, r"corrupt.npz: not a numpy .npz archive \(not a zip file\)$"),
        (truncated, r"truncated.npz: a truncated or damaged .npz archive \(it starts as a zip file but its "
                    r"end is missing"),
        (empty, r"empty.npz: not a numpy .npz archive \(not a zip file\)$"),
        (npy, r"array.npz: not a torchlean checkpoint: a single .npy array"),
        (rewrite(good, tmp_path / "nometa.npz", drop="metadata"),
         r"nometa.npz: not a torchlean checkpoint: no metadata entry \(entries: feature_mean, "),
        (rewrite(good, tmp_path / "json.npz", metadata=np.array("{not json")),
         r"json.npz: not a torchlean checkpoint: the metadata is not JSON"),
        (rewrite(good, tmp_path / "format.npz", metadata=metadata(good, format="other")),
         r"format.npz: not a torchlean checkpoint: the metadata has no \"format\""),
        (rewrite(good, tmp_path / "v3.npz", metadata=metadata(good, version=3)),
         r"v3.npz: unsupported checkpoint version 3 \(supported: 1, 2\)"),
        (rewrite(good, tmp_path / "unknown.npz", metadata=metadata(good, seeds=1)),
         r"unknown.npz: unexpected metadata fields: 'seeds' \(version 2 writes: format, version, model, "
         r"hidden, features, outputs, dtype, task, classes, dataset, label_column, feature_names, profile, "
         r"execution, seed, dropout, test_fraction, split_seed, torch_threads, torch_threads_segments, "
         r"environment, data_sha256, capsules_order, capsules, earlier_capsules, training\)$"),
        (rewrite(good, tmp_path / "v1train.npz", metadata=metadata(good, version=1)),
         r"v1train.npz: unexpected metadata fields: 'dropout', 'test_fraction', 'split_seed', \.\.\., "
         r"'training' \(8 in all; version 1 "
         r"writes: format, "
         r"version, model, hidden, features, outputs, dtype, task, classes, dataset, label_column, "
         r"feature_names, profile, execution, seed\)$"),
        (rewrite(good, tmp_path / "field.npz", metadata=metadata(good, hidden="4")),
         r"field.npz: metadata field 'hidden' must be of type int, got '4'"),
        (rewrite(good, tmp_path / "nomean.npz", drop="feature_mean"),
         r"nomean.npz: the archive has no feature_mean"),
        (rewrite(good, tmp_path / "nan.npz", feature_scale=np.array([1.0, np.inf, 1.0, 1.0])),
         r"nan.npz: feature_scale\[1\] is not finite: inf"),
        (rewrite(good, tmp_path / "noweight.npz", drop="weights/4.bias"),
         r"noweight.npz: the weights do not match model mlp .*: missing \['4.bias'\], unexpected \[\]"),
        (bad_weight, r"w.npz: weight 0.weight has shape \[4, 3\], expected \[4, 4\]"),
        (rewrite(good, tmp_path / "extra.npz", other=np.zeros(1)),
         r"extra.npz: unexpected archive entries: other"),
    ]


def test_save_writes_exactly_the_metadata_fields_load_accepts(iris_checkpoint):
    with np.load(iris_checkpoint, allow_pickle=False) as archive:
        written = list(json.loads(str(archive["metadata"])))
    # training included; torch_threads_segments and earlier_capsules only after --resume
    # (test_thread_segments_review64.py, test_earlier_capsules.py); data_sha256 only without the
    # training settings that hold it (test_audit_records.py)
    fields = checkpoint._METADATA_FIELDS[checkpoint.FORMAT_VERSION]
    resumed_only = ("torch_threads_segments", "earlier_capsules", "data_sha256")
    assert set(resumed_only) <= set(fields)
    assert written == [name for name in fields if name not in resumed_only]


def test_load_names_the_file_and_the_fault(tmp_path, iris_checkpoint, capsys):
    for path, message in bad_files(tmp_path, iris_checkpoint):
        with pytest.raises(CheckpointError, match=message):
            checkpoint.load(path)
        code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris")
        assert (code, out) == (2, ""), path
        assert err.count("\n") == 1 and err.startswith("error: ") and "Traceback" not in err


# ----------------------------------------------------------------------------- bad input


def one_line_error(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and err.startswith("error: "), err
    return err


def test_a_typed_graph_checkpoint_under_a_cuda_profile_says_where_the_mode_came_from(capsys, tmp_path):
    """The execution mode came from the checkpoint, not the command line: the refusal says so
    and names the accepted ways out (before, the trainer's bare "typed graph execution currently
    supports device `cpu`")."""
    path = tmp_path / "tg.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--execution",
                 "typed-graph", "--save", str(path)]) == 0
    capsys.readouterr()
    err = one_line_error(capsys, "predict", str(path), "--dataset", "iris", "--profile", "checked_cuda")
    assert err == (
        f"error: checkpoint {path} was saved with execution typed-graph, which runs on cpu only, and "
        "profile checked_cuda targets cuda (accepted: --execution eager with that profile, or a cpu "
        "profile)\n"
    )
    if torch.cuda.is_available():
        return
    # with --execution eager the CUDA session is what refuses (no CUDA on this machine)
    err = one_line_error(capsys, "predict", str(path), "--dataset", "iris", "--profile", "checked_cuda",
                         "--execution", "eager")
    assert "typed-graph" not in err and "CUDA" in err


def test_a_value_beyond_the_dtype_after_standardising_names_the_csv_line_and_column(
    capsys, tmp_path, iris_checkpoint
):
    """As the CSV reader names a cell (``line N, column NAME``), also with --split (the row of the
    split mapped back to its file line); the checkpoint's own message uses numpy's indices."""
    x, y = load_iris(return_X_y=True)
    x = x.copy()
    x[3, 1] = 1e39  # file line 5 (the header is line 1)
    names = ["sepal length (cm)", "sepal width (cm)", "petal length (cm)", "petal width (cm)", "target"]
    path = tmp_path / "huge.csv"
    path.write_text(",".join(names) + "\n" + "".join(
        ",".join(repr(float(v)) for v in row) + f",{['setosa', 'versicolor', 'virginica'][t]}\n"
        for row, t in zip(x, y, strict=True)
    ))
    message = (f"error: {path}: line 5, column sepal width (cm): the value 1e+39 standardises beyond the "
               "float32 range (training's mean ")
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", str(path), "--output",
                         str(tmp_path / "p.csv"))
    assert err.startswith(message), err
    assert err.rstrip().endswith("; the model's dtype is float32: correct or remove the row)"), err
    refused = []  # row 3 is in one of the two splits: that one is refused, by its file line
    for split in ("train", "test"):
        code, _, err = cli(capsys, "predict", str(iris_checkpoint), "--dataset", str(path), "--output",
                           str(tmp_path / "p.csv"), "--split", split)
        if code != 0:
            assert code == 2 and err.splitlines()[-1].startswith(message), err
            refused.append(split)
    assert len(refused) == 1


def test_wrong_feature_count_names_both(capsys, iris_checkpoint):
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "wine")
    assert load_wine().data.shape[1] == 13
    assert "wine has 13 feature columns (alcohol, malic_acid, ash, ..., proline; label column target)" in err
    assert (f"checkpoint {iris_checkpoint} expects 4 features (sepal length (cm), sepal width (cm), "
            "petal length (cm), petal width (cm))") in err


def test_unknown_class_names_the_value_and_the_known_classes(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    argv = ["train", "--dataset", str(labels_csv), "--epochs", "1", "--hidden", "4", "--save", str(path)]
    assert main(argv) == 0
    capsys.readouterr()
    unknown = tmp_path / "unknown.csv"
    lines = labels_csv.read_text().splitlines()
    unknown.write_text("\n".join([*lines[:3], lines[3].rsplit(",", 1)[0] + ",9", *lines[4:]]) + "\n")
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(unknown))
    assert err == (f"error: {unknown}: line 4, column y: unknown class label '9' (known: 3 | 5 | 7); "
                   "--ignore-labels predicts without reading the labels (no accuracy)\n")


def test_an_unknown_class_of_a_shipped_dataset_is_named_by_its_row(capsys, tmp_path):
    """A shipped dataset has rows, not file lines: row 1 is its first sample."""
    iris = load_iris()
    csv_path = tmp_path / "two_classes.csv"
    pairs = zip(iris.data[:100].tolist(), iris.target[:100].tolist(), strict=True)
    rows = [",".join(map(str, [*x, y])) for x, y in pairs]
    csv_path.write_text("\n".join(["a,b,c,d,y", *rows]) + "\n")
    path = tmp_path / "two.npz"
    argv = ["train", "--dataset", str(csv_path), "--epochs", "1", "--hidden", "4", "--save", str(path)]
    assert main(argv) == 0
    capsys.readouterr()
    err = one_line_error(capsys, "predict", str(path), "--dataset", "iris")
    assert iris.target_names[iris.target[0]] == "setosa"
    assert err == ("error: iris: row 1, column target: unknown class label 'setosa' (known: 0 | 1); "
                   "--ignore-labels predicts without reading the labels (no accuracy)\n")


def test_ignore_labels_predicts_on_labels_in_another_encoding(capsys, tmp_path, labels_csv):
    """review30 F7: a label column in another encoding than the checkpoint's classes (0/1/2 for
    3/5/7) was refused with no way to predict but deleting the column. ``--ignore-labels`` leaves
    the column out of the features unread: the predictions are those of the features alone, with no
    accuracy; a ``note:`` names the column. The refusal without it says so."""
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    lines = labels_csv.read_text().splitlines()
    features_only = tmp_path / "features.csv"
    features_only.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in lines))
    code, expected, err = cli(capsys, "predict", str(path), "--dataset", str(features_only))
    assert code == 0, err
    recoded = tmp_path / "recoded.csv"
    codes = {"3": "0", "5": "1", "7": "2"}
    recoded.write_text("\n".join([lines[0], *(f"{ln.rsplit(',', 1)[0]},{codes[ln.rsplit(',', 1)[1]]}"
                                                  for ln in lines[1:])]) + "\n")
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(recoded))
    assert err == (f"error: {recoded}: line 2, column y: unknown class label "
                   f"'{codes[lines[1].rsplit(',', 1)[1]]}' (known: 3 | 5 | 7); --ignore-labels predicts "
                   "without reading the labels (no accuracy)\n")
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(recoded), "--ignore-labels")
    assert (code, out) == (0, expected), err
    assert "accuracy=" not in err
    assert (f"note: --ignore-labels: {recoded}'s label column y is left out of the features and not read "
            "(no accuracy)") in err.splitlines()
    # text labels, the label column first and named: its cells are never read
    named = tmp_path / "named.csv"
    named.write_text("".join(f"{'y' if i == 0 else 'label ' + str(i)},{ln.rsplit(',', 1)[0]}\n"
                             for i, ln in enumerate(lines)))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(named), "--label-column", "0",
                         "--ignore-labels")
    assert (code, out) == (0, expected), err
    # on the data trained on it only drops the accuracy line; the predictions are the same
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv), "--ignore-labels")
    assert (code, out) == (0, expected), err
    assert "accuracy=" not in err
    # a file without a label column: nothing to ignore, and a note says so (review32 F8)
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(features_only), "--ignore-labels")
    assert (code, out) == (0, expected)
    assert f"note: --ignore-labels: {features_only} has no label column (nothing to leave out)\n" in err
    # a classifier's split is stratified by the labels: refused before any output, one line
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(recoded), "--ignore-labels",
                         "--split", "test")
    assert err == (f"error: --split test needs the labels of {recoded}, which --ignore-labels leaves "
                   "unread: torchlean train stratifies its split by class (drop --ignore-labels, or use "
                   "--split all)\n")


def test_ignore_labels_of_regression_data_and_of_a_shipped_dataset(capsys, tmp_path, regression_csv,
                                                                   iris_checkpoint):
    path = tmp_path / "reg.npz"
    train_and_save(capsys, path, "--dataset", str(regression_csv))
    code, expected, err = cli(capsys, "predict", str(path), "--dataset", str(regression_csv))
    assert code == 0 and any(line.startswith("mse=") for line in err.splitlines())
    lines = regression_csv.read_text().splitlines()
    unknown = tmp_path / "unknown_targets.csv"
    unknown.write_text("\n".join([lines[0], *(ln.rsplit(",", 1)[0] + ",n/a" for ln in lines[1:])]) + "\n")
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(unknown))
    assert err.startswith(f"error: {unknown}: line 2, column target: ")
    assert err.endswith("; --ignore-labels predicts without reading the labels (no mse)\n")
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(unknown), "--ignore-labels")
    assert (code, out) == (0, expected), err
    assert "mse=" not in err
    # regression's split needs no labels: the same rows as with them
    with_labels = cli(capsys, "predict", str(path), "--dataset", str(regression_csv), "--split", "test")
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(unknown), "--split", "test",
                         "--ignore-labels")
    assert (code, out) == (0, with_labels[1]), err
    # a shipped dataset: the same predictions, no accuracy
    code, expected, err = cli(capsys, "predict", str(iris_checkpoint), "--dataset", "iris")
    assert code == 0 and any(line.startswith("accuracy=") for line in err.splitlines())
    code, out, err = cli(capsys, "predict", str(iris_checkpoint), "--dataset", "iris", "--ignore-labels")
    assert (code, out) == (0, expected), err
    assert "accuracy=" not in err
    assert "note: --ignore-labels: iris's label column target is left out of the features and not read " \
        "(no accuracy)" in err.splitlines()


def test_csv_problems_use_the_readers_messages(capsys, tmp_path, iris_checkpoint):
    bad = tmp_path / "bad.csv"
    bad.write_text("a,b,c,d\n1,2,3,4\n1,x,3,4\n")
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", str(bad))
    assert err == f"error: {bad}: line 3, column b: not a number: 'x'\n"
    short = tmp_path / "short.csv"
    short.write_text("a,b,c,d\n1,2,3,4\n1,2,3\n")
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", str(short))
    assert err == f"error: {short}: line 3 has 3 cells, expected 4\n"
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", str(tmp_path / "none.csv"))
    assert err == f"error: dataset file not found: {tmp_path / 'none.csv'}\n"
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "iris", "--label-column", "y")
    assert err == "error: --label-column applies to CSV files only; iris is a shipped dataset\n"
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "iris", "--header")
    assert err == "error: --header applies to CSV files only; iris is a shipped dataset\n"
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "irs")
    assert err.startswith("error: unknown dataset irs (known: digits | iris")


def test_a_profile_that_cannot_run_the_model_fails_before_any_output(capsys, iris_checkpoint):
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "iris",
                         "--profile", "checked_cuda", "--execution", "typed-graph")
    assert err == "error: typed graph execution currently supports device `cpu`; requested `cuda`\n"
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "iris", "--profile", "nope")
    assert err == f"error: unknown profile nope (known: {' | '.join(profiles.names())})\n"
    if not torch.cuda.is_available():
        err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", "iris",
                             "--profile", "checked_cuda")
        assert "CUDA was requested" in err


def test_unwritable_save_path_fails_before_training(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    target = blocker / "model.npz"
    err = one_line_error(capsys, "train", "--dataset", "iris", "--epochs", "1", "--save", str(target))
    assert err == f"error: cannot write --save {target}: {blocker} is a file, not a directory\n"
    err = one_line_error(capsys, "train", "--dataset", "iris", "--save", str(tmp_path))
    assert err == f"error: cannot write --save {tmp_path}: it is a directory\n"
    err = one_line_error(capsys, "predict", "x.npz", "--dataset", "iris", "--output", str(target))
    assert err == f"error: cannot write --output {target}: {blocker} is a file, not a directory\n"


def test_save_refuses_an_unwritable_path_with_its_reason(tmp_path, iris_checkpoint):
    target = tmp_path / "missing" / "model.npz"
    with pytest.raises(CheckpointError, match=r"cannot write checkpoint .*model.npz: No such file or dir"):
        checkpoint.save(target, checkpoint.load(iris_checkpoint))
    with pytest.raises(CheckpointError, match=r"save needs a Checkpoint, got dict"):
        checkpoint.save(tmp_path / "x.npz", {})  # type: ignore[arg-type]


def test_predict_prints_the_report_to_stdout_only_with_output(capsys, tmp_path, iris_checkpoint):
    code, out, err = cli(capsys, "predict", str(iris_checkpoint), "--dataset", "iris")
    assert code == 0
    assert len(out.splitlines()) == 151 and "accuracy=" not in out and "accuracy=" in err
    assert err.splitlines()[0] == (f"checkpoint={iris_checkpoint} model=mlp task=classification features=4 "
                                   "dtype=float32 trained_on=iris trained_under=checked_cpu")


# ------------------------------------------------------------------- CSV columns by header name


def rewrite_columns(source: Path, target: Path, header: list[str], order: list[int]) -> Path:
    """``source`` with its columns in ``order`` (indices into its rows) under ``header``."""
    _, rows = read_rows(source)
    lines = [header, *([r[i] for i in order] for r in rows)]
    target.write_text("".join(",".join(line) + "\n" for line in lines))
    return target


def test_a_csv_header_naming_every_feature_selects_them_by_name(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv))
    assert code == 0 and "note:" not in err, err
    expected = out
    accuracy = next(line for line in err.splitlines() if line.startswith("accuracy="))

    # reordered features, the label in the middle, an extra non-numeric column: selected by name
    moved = tmp_path / "moved.csv"
    _, rows = read_rows(labels_csv)
    moved.write_text("id,c,y,a,b\n" + "".join(f"row{i},{r[2]},{r[3]},{r[0]},{r[1]}\n"
                                               for i, r in enumerate(rows)))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(moved))
    assert code == 0, err
    assert out == expected and accuracy in err.splitlines()
    notes = [line for line in err.splitlines() if line.startswith("note:")]
    assert notes == [f"note: ignored 1 column(s) of {moved} that are not checkpoint {path}'s features or "
                     "label column: id"]
    # without the label column: the same predictions, no accuracy
    features = rewrite_columns(labels_csv, tmp_path / "features.csv", ["b", "c", "a"], [1, 2, 0])
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(features))
    assert (code, out) == (0, expected) and "accuracy=" not in err and "note:" not in err
    # --label-column still names the label; naming a feature is refused
    renamed = rewrite_columns(labels_csv, tmp_path / "renamed.csv", ["truth", "c", "b", "a"], [3, 2, 1, 0])
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(renamed), "--label-column", "truth")
    assert code == 0 and out == expected and accuracy in err.splitlines(), err
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(renamed), "--label-column", "b")
    assert err == f"error: --label-column b is one of the features of checkpoint {path}\n"
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(renamed), "--label-column", "1")
    assert err == f"error: --label-column 1 (column c) is one of the features of checkpoint {path}\n"


def test_a_csv_header_naming_some_features_is_refused(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    # feature a dropped: b, c and the label y would otherwise fill the model's three inputs
    dropped = rewrite_columns(labels_csv, tmp_path / "dropped.csv", ["b", "c", "y"], [1, 2, 3])
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(dropped))
    assert err == (f"error: {dropped}: the header does not name each of checkpoint {path}'s 3 features once "
                   "(missing a)\n")
    twice = rewrite_columns(labels_csv, tmp_path / "twice.csv", ["a", "b", "b", "y"], [0, 1, 2, 3])
    err = one_line_error(capsys, "predict", str(path), "--dataset", str(twice))
    assert err == (f"error: {twice}: the header does not name each of checkpoint {path}'s 3 features once "
                   "(missing c; repeated b)\n")


def test_a_csv_header_naming_no_feature_is_matched_by_position_with_a_note(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    _, expected, _ = cli(capsys, "predict", str(path), "--dataset", str(labels_csv))
    other = rewrite_columns(labels_csv, tmp_path / "other.csv", ["p", "q", "r", "s"], [0, 1, 2, 3])
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(other))
    assert (code, out) == (0, expected), err
    assert [line for line in err.splitlines() if line.startswith("note:")] == [
        f"note: matched {other}'s columns to the features by position: its header (p, q, r, s) names none "
        f"of checkpoint {path}'s features (a, b, c)"
    ]
    headerless = tmp_path / "headerless.csv"
    headerless.write_text("".join(line + "\n" for line in labels_csv.read_text().splitlines()[1:]))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(headerless), "--no-header")
    assert (code, out) == (0, expected) and "note:" not in err, err


# -------------------------------------------------------------- outputs that overwrite inputs


def test_an_output_naming_an_input_or_another_output_is_refused(capsys, tmp_path, labels_csv, monkeypatch):
    monkeypatch.chdir(tmp_path)
    data_csv = tmp_path / "data.csv"
    data_csv.write_bytes(labels_csv.read_bytes())
    model = tmp_path / "model.npz"
    train_and_save(capsys, model, "--dataset", "data.csv")
    kept = {p: p.read_bytes() for p in (data_csv, model)}
    (tmp_path / "link.npz").symlink_to(model)

    err = one_line_error(capsys, "train", "--dataset", "iris", "--save", "x", "--report-json", "./x")
    assert err == "error: --report-json ./x and --save x name the same file; give them different paths\n"
    assert not (tmp_path / "x").exists()
    err = one_line_error(capsys, "train", "--dataset", "data.csv", "--save", str(data_csv))
    assert err == (f"error: --save {data_csv} is the training data --dataset data.csv: writing it would "
                   "destroy that input; give another path\n")
    err = one_line_error(capsys, "train", "--dataset", "./data.csv", "--report-json", "data.csv")
    assert err.startswith("error: --report-json data.csv is the training data --dataset ./data.csv: ")
    err = one_line_error(capsys, "predict", "model.npz", "--dataset", "data.csv", "--output", "./data.csv")
    assert err == ("error: --output ./data.csv is the input --dataset data.csv: writing it would destroy "
                   "that input; give another path\n")
    err = one_line_error(capsys, "predict", "model.npz", "--dataset", "data.csv", "--output", "link.npz")
    assert err == ("error: --output link.npz is the checkpoint model.npz: writing it would destroy that "
                   "input; give another path\n")
    err = one_line_error(capsys, "predict", str(model), "--dataset", "iris", "--output", "model.npz")
    assert err.startswith("error: --output model.npz is the checkpoint ")
    assert {p: p.read_bytes() for p in kept} == kept


# ---------------------------------------------------------------------- non-finite outputs


def test_a_diverged_model_warns_when_saved_and_predicts_nothing(capsys, tmp_path, regression_csv):
    path = tmp_path / "diverged.npz"
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
                         "--lr", "1e30", "--save", str(path))
    assert code == 0 and out.splitlines()[-1] == f"saved: {path}"
    weights = checkpoint.load(path).weights
    bad, total = (sum(int(f(w)) for w in weights.values())
                  for f in (lambda w: np.count_nonzero(~np.isfinite(w)), np.size))
    assert bad > 0
    assert (f"warning: saving a model whose weights are not finite ({bad} of {total} values; the training "
            "diverged): torchlean predict will give its rows no prediction") in err.splitlines()

    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris")
    assert code == 0
    assert [row for row in csv.reader(out.splitlines())] == [["prediction"]] + [[""]] * 150
    lines = err.splitlines()
    assert ("warning: 150 of 150 rows have no prediction (an empty cell): their model outputs are not finite "
            f"because the checkpoint's weights are not finite ({bad} of {total} values; the training "
            "diverged)") in lines
    assert "accuracy=0.0000 (0/150; 150 rows without a prediction)" in lines

    reg = tmp_path / "reg.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(regression_csv), "--epochs", "1", "--hidden", "4",
                       "--lr", "1e30", "--save", str(reg))
    assert code == 0 and "warning: saving a model whose weights are not finite" in err
    code, out, err = cli(capsys, "predict", str(reg), "--dataset", str(regression_csv))
    assert code == 0 and out.splitlines() == ["prediction"] + ['""'] * 50
    assert "mse=nan (0/50 rows; 50 rows without a prediction excluded)" in err.splitlines()


@pytest.mark.parametrize("task", ["classification", "regression"])
def test_rows_whose_outputs_overflow_get_no_prediction(capsys, tmp_path, iris_checkpoint, regression_csv,
                                                       task):
    """Finite weights that overflow float32 on the rows with a large first feature: those rows
    (and only those) get an empty cell and are left out of accuracy (as wrong) or mse."""
    if task == "classification":
        source, argv = iris_checkpoint, ["--dataset", "iris"]
        raw_x, truth = load_iris(return_X_y=True)
    else:
        source = tmp_path / "reg.npz"
        assert main(["train", "--dataset", str(regression_csv), "--epochs", "1", "--hidden", "4",
                     "--save", str(source)]) == 0
        argv = ["--dataset", str(regression_csv)]
        raw_x, cells = csv_data(regression_csv)
        truth = np.array([float(c) for c in cells]).astype(np.float32).astype(np.float64)
    saved = checkpoint.load(source)
    weights = {name: np.array(value) for name, value in saved.weights.items()}
    weights["0.weight"][:, 0] = 3e38
    path = tmp_path / "overflow.npz"
    checkpoint.save(path, Checkpoint(**fields(saved, weights=weights)))
    capsys.readouterr()
    # the oracle: the MLP (linear, relu, linear, relu, linear) in numpy float32 arithmetic, where
    # inf and nan spread as in any summation order
    h = saved.standardise(raw_x)
    with np.errstate(over="ignore", invalid="ignore"):
        for layer in ("0", "2", "4"):
            h = h @ weights[f"{layer}.weight"].T + weights[f"{layer}.bias"]
            h = np.maximum(h, 0) if layer != "4" else h
    overflow = ~np.isfinite(h).all(axis=1)
    assert 0 < int(overflow.sum()) < len(h)

    code, out, err = cli(capsys, "predict", str(path), *argv)
    assert code == 0, err
    cells_out = [row[0] for row in csv.reader(out.splitlines()[1:])]
    empty = np.array([c == "" for c in cells_out])
    np.testing.assert_array_equal(empty, overflow)
    missing, rows = int(overflow.sum()), len(h)
    lines = err.splitlines()
    assert (f"warning: {missing} of {rows} rows have no prediction (an empty cell): their model outputs are "
            "not finite because the weights and inputs are finite, but the model's outputs overflow "
            "float32") in lines
    if task == "classification":
        names = list(load_iris().target_names)
        correct = sum(c == names[t] for c, t in zip(cells_out, truth, strict=True))
        summary = f"accuracy={correct / rows:.4f} ({correct}/{rows}; {missing} rows without a prediction)"
        assert summary in lines
    else:
        values = np.array([float(c) for c in cells_out if c])
        mse = np.mean((values - truth[~overflow]) ** 2)
        kept = rows - missing
        shown = f"{mse:.4f}" if abs(mse) < 1e9 else f"{mse:.6e}"  # review56 F7: exponent form from 1e9
        summary = f"mse={shown} ({kept}/{rows} rows; {missing} rows without a prediction excluded)"
        assert summary in lines


# ------------------------------------------------------------------------------------ --split


def test_split_test_predicts_the_rows_train_held_out(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    out = train_and_save(capsys, path, "--dataset", str(labels_csv))
    (test_accuracy,) = [line for line in out.splitlines() if line.startswith("test_accuracy=")]
    _, cells = csv_data(labels_csv)
    ids = np.array([{"3": 0, "5": 1, "7": 2}[c] for c in cells])
    # oracle: scikit-learn's split of the row numbers, made independently of torchlean
    train_rows, test_rows = train_test_split(np.arange(60), test_size=0.2, random_state=0, shuffle=True,
                                             stratify=ids)
    code, every, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv))
    assert code == 0, err
    whole = every.splitlines()[1:]
    for split, rows in (("test", np.sort(test_rows)), ("train", np.sort(train_rows))):
        code, out, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv), "--split", split)
        assert code == 0, err
        lines = out.splitlines()
        assert lines[0] == "row,prediction"
        assert lines[1:] == [f"{r},{whole[r]}" for r in rows]
        header = f"dataset={labels_csv} rows={len(rows)} split={split} profile=checked_cpu execution=eager"
        assert header in err.splitlines()
        correct = sum(whole[r] == cells[r] for r in rows)
        assert f"accuracy={correct / len(rows):.4f} ({correct}/{len(rows)})" in err.splitlines()
        assert "note:" not in err
    # torchlean train's test accuracy is the accuracy on the held-out rows
    correct = sum(whole[r] == cells[r] for r in test_rows)
    assert test_accuracy == f"test_accuracy={correct / len(test_rows):.4f}"


def test_split_of_a_shipped_dataset_and_of_regression_data_matches_train(capsys, tmp_path, regression_csv):
    path = tmp_path / "reg.npz"
    out = train_and_save(capsys, path, "--dataset", str(regression_csv))
    (test_mse,) = [line for line in out.splitlines() if line.startswith("test_mse=")]
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(regression_csv), "--split", "test")
    assert code == 0, err
    _, test_rows = train_test_split(np.arange(50), test_size=0.2, random_state=0, shuffle=True)
    assert [int(line.split(",")[0]) for line in out.splitlines()[1:]] == sorted(test_rows)
    assert test_mse.replace("test_", "") in err.splitlines()

    iris = tmp_path / "iris.npz"
    out = train_and_save(capsys, iris, "--dataset", "iris", "--seed", "5")
    (test_accuracy,) = [line for line in out.splitlines() if line.startswith("test_accuracy=")]
    code, out, err = cli(capsys, "predict", str(iris), "--dataset", "iris", "--split", "test")
    assert code == 0, err
    _, test_rows = train_test_split(np.arange(150), test_size=0.2, random_state=5, shuffle=True,
                                    stratify=load_iris().target)
    assert [int(line.split(",")[0]) for line in out.splitlines()[1:]] == sorted(test_rows)
    (accuracy,) = [line for line in err.splitlines() if line.startswith("accuracy=")]
    assert accuracy.split()[0] == test_accuracy.replace("test_", "")


_MEAN_DIFFERS = OTHER_TRAINING_ROWS


def _one_line_matches(pattern: str, text: str) -> bool:
    return any(re.fullmatch(pattern, line) for line in text.splitlines())


def test_split_of_other_data_notes_it_and_needs_the_labels_to_stratify(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    # a copy of the training data is the training data (it hashes as the run's did): no note
    copy = tmp_path / "copy.csv"
    copy.write_text(labels_csv.read_text())
    code, _, err = cli(capsys, "predict", str(path), "--dataset", str(copy), "--split", "test")
    assert code == 0 and "was trained on" not in err and "differ" not in err, err
    # the rows reordered: other data
    header, *rows = labels_csv.read_text().splitlines()
    copy.write_text("\n".join([header, *rows[::-1]]) + "\n")
    code, _, err = cli(capsys, "predict", str(path), "--dataset", str(copy), "--split", "test")
    assert code == 0, err
    assert (f"note: checkpoint {path} was trained on {labels_csv}; --split test takes the test rows of the "
            f"split torchlean train would make of {copy}, among which rows the model trained on may be, if "
            "these data hold any") in err.splitlines()
    # review43 F3: the training file itself reordered since: named so, not silently "held out"
    original = labels_csv.read_text()
    labels_csv.write_text(copy.read_text())
    try:
        code, _, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv), "--split", "test")
    finally:
        labels_csv.write_text(original)
    assert code == 0, err
    assert _one_line_matches(  # the rows reordered: another train split, other statistics (review188 F2)
        re.escape(f"note: the data of {labels_csv} differ from those checkpoint {path}'s run trained on "
                  "(their digest differs; ") + _MEAN_DIFFERS + re.escape(
            "): --split test takes the test rows of the split torchlean train would make of them now, which "
            "may include rows the model trained on"), err)
    features_only = tmp_path / "features.csv"
    lines = labels_csv.read_text().splitlines()
    features_only.write_text("".join(line.rsplit(",", 1)[0] + "\n" for line in lines))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(features_only), "--split", "train")
    assert (code, out) == (2, "")
    assert err == (f"error: --split train needs the label column of {features_only}: torchlean train "
                   "stratifies its split by class (name it with --label-column, or use --split all)\n")
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(labels_csv), "--split", "half")
    assert (code, out) == (2, "")
    assert "argument --split: invalid choice: 'half' (choose from" in err


def test_predict_takes_the_torch_thread_count(capsys, iris_checkpoint):
    before = torch.get_num_threads()
    predict = ("predict", str(iris_checkpoint), "--dataset", "iris")
    try:
        for threads in (3, 1):  # torch is running: set_num_threads is obeyed as asked
            code, _, err = cli(capsys, *predict, "--profile", "fast_cpu", "--torch-threads", str(threads))
            assert code == 0, err
            assert torch.get_num_threads() == threads
        code, out, err = cli(capsys, *predict, "--torch-threads", "0")
        assert (code, out) == (2, "")
        assert "argument --torch-threads: expected an integer in [1, 1024], got 0" in err
    finally:
        torch.set_num_threads(before)



# ------------------------------------------------------------------------- outputs that are pipes


def test_predict_writes_its_csv_into_a_pipe(capsys, iris_checkpoint):
    """``--output /dev/stdout`` or a shell's ``>(...)`` names a pipe through /dev/fd: it was refused
    ("No such file or directory": the resolved path is ``pipe:[N]``)."""
    read_end, write_end = os.pipe()
    try:
        path = f"/dev/fd/{write_end}"
        code, _, err = cli(capsys, "predict", str(iris_checkpoint), "--dataset", "iris", "--output", path)
        assert code == 0, err
        os.close(write_end)
        write_end = -1
        with os.fdopen(read_end, encoding="utf-8") as pipe:
            read_end = -1
            rows = list(csv.reader(pipe))
    finally:
        for fd in (read_end, write_end):
            if fd >= 0:
                os.close(fd)
    assert rows[0] == ["prediction"] and len(rows) == 151  # a header, then one row per sample


def test_an_output_that_is_stdout_itself_gets_no_report_mixed_in(iris_checkpoint, tmp_path):
    """``--output /dev/stdout`` (predict) and ``--report-json /dev/stdout`` (train): stdout carries
    only the CSV or the JSON, the report goes to stderr (it was printed into the same stream)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    predicted = subprocess.run(
        [sys.executable, "-m", "torchlean", "predict", str(iris_checkpoint), "--dataset", "iris",
         "--output", "/dev/stdout"],
        capture_output=True, text=True, check=True, env=env,
    )
    rows = list(csv.reader(predicted.stdout.splitlines()))
    assert rows[0] == ["prediction"] and len(rows) == 151
    assert "accuracy=" in predicted.stderr
    trained = subprocess.run(
        [sys.executable, "-m", "torchlean", "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
         "--report-json", "/dev/stdout"],
        capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    )
    assert json.loads(trained.stdout)["dataset"] == "iris"
    assert "test_accuracy=" in trained.stderr
    assert "wrote" not in predicted.stderr + trained.stderr  # no "wrote /dev/stdout": the output is there


def test_a_closed_stdout_is_a_one_line_error_and_save_over_stdout_keeps_the_report(tmp_path, iris_checkpoint):
    """Started with fd 1 closed (``>&-``), ``sys.stdout`` is None: print() drops every line
    silently, and predict's CSV write raised AttributeError (a traceback). Every command, whose
    report or CSV goes to stdout, now stops before any work with one line, exit status 2, and
    writes no file. ``--save`` naming the file stdout goes to: the report goes to stderr (it went
    into the file the checkpoint then replaced)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    command = [sys.executable, "-m", "torchlean", "train", "--dataset", "iris", "--epochs", "1",
               "--hidden", "4"]
    for argv in (
        [*command, "--report-json", str(tmp_path / "r.json")],
        [sys.executable, "-m", "torchlean", "predict", str(iris_checkpoint), "--dataset", "iris"],
        [sys.executable, "-m", "torchlean", "predict", str(iris_checkpoint), "--dataset", "iris", "--output",
         str(tmp_path / "p.csv")],
    ):
        closed = subprocess.run(
            argv, stderr=subprocess.PIPE, text=True, env=env, cwd=tmp_path, preexec_fn=lambda: os.close(1),
        )
        assert (closed.returncode, closed.stderr) == (
            2, "error: cannot write the output: standard output is closed\n"
        ), argv
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    target = tmp_path / "s.npz"
    with target.open("w") as stdout:
        saved = subprocess.run(
            [*command, "--save", str(target)], stdout=stdout, stderr=subprocess.PIPE, text=True, env=env,
            cwd=tmp_path,
        )
    assert saved.returncode == 0, saved.stderr
    assert "test_accuracy=" in saved.stderr
    assert checkpoint.load(target).dataset == "iris"


def test_a_dash_is_stdin_for_the_dataset_and_stdout_for_outputs(tmp_path, labels_csv):
    """The Unix convention: ``--dataset -`` reads the CSV from standard input, ``--report-json -``
    and ``--output -`` write to standard output (the report then on stderr)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    base = [sys.executable, "-m", "torchlean"]
    saved = tmp_path / "stdin.npz"
    trained = subprocess.run(
        [*base, "train", "--dataset", "-", "--epochs", "1", "--hidden", "4", "--report-json", "-",
         "--save", str(saved)],
        input=labels_csv.read_text(), capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    )
    record = json.loads(trained.stdout)
    assert record["dataset"] == "-" and "test_accuracy=" in trained.stderr  # as given (review59 F11)
    predicted = subprocess.run(
        [*base, "predict", str(saved), "--dataset", "-", "--output", "-"],
        input=labels_csv.read_text(), capture_output=True, text=True, check=True, env=env, cwd=tmp_path,
    )
    rows = list(csv.reader(predicted.stdout.splitlines()))
    assert rows[0] == ["prediction"] and len(rows) == len(labels_csv.read_text().splitlines())
    assert "accuracy=" in predicted.stderr
    # review63 F3: --split of standard input is checked against the run's data (read once, kept), as
    # train --resume checks it: these rows, reversed, are other data
    header, *lines = labels_csv.read_text().splitlines()
    split = subprocess.run(
        [*base, "predict", str(saved), "--dataset", "-", "--split", "test", "--output", "-"],
        input="\n".join([header, *lines[::-1]]) + "\n", capture_output=True, text=True, check=True, env=env,
        cwd=tmp_path,
    )
    assert _one_line_matches(  # the rows reordered: another train split, other statistics (review188 F2)
        re.escape(f"note: the data of standard input (-) differ from those checkpoint {saved}'s run trained "
                  "on (their digest differs; ") + _MEAN_DIFFERS + re.escape(
            "): --split test takes the test rows of the split torchlean train would make of them now, which "
            "may include rows the model trained on"), split.stderr)


def test_an_output_fifo_is_not_opened_by_the_check(tmp_path):
    """The output check only asks for write permission on a FIFO: opening it would block without
    a reader, and its close would end the data for a reader that is there (a hang, then)."""
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    done = threading.Event()

    def check() -> None:
        check_writable(fifo, "--output")
        done.set()

    threading.Thread(target=check, daemon=True).start()
    assert done.wait(timeout=30)
    fifo.chmod(0o444)
    if os.geteuid() != 0:  # root may write anything
        with pytest.raises(TorchLeanError, match=f"cannot write --output {fifo}: permission denied"):
            check_writable(fifo, "--output")


# ------------------------------------------------------------------------- where --save writes


def test_save_refuses_a_path_that_is_not_a_regular_file_before_training(capsys, tmp_path, iris_checkpoint):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--save", str(fifo))
    assert (code, out) == (2, "")
    assert err == (f"error: cannot write --save {fifo}: it exists and is not a regular file (a device or a "
                   "pipe would be replaced); give a file path\n")
    assert stat.S_ISFIFO(fifo.stat().st_mode)  # still the pipe
    with pytest.raises(CheckpointError, match="it exists and is not a regular file"):
        checkpoint.save(fifo, checkpoint.load(iris_checkpoint))
    assert stat.S_ISFIFO(fifo.stat().st_mode)


def test_save_to_a_directory_says_it_is_one_as_the_cli_does(capsys, tmp_path, iris_checkpoint):
    """review115 F6: Python's save("adir.npz", ...) said "it exists and is not a regular file (a
    device or a pipe would be replaced)" where the CLI says "it is a directory"; a link to a
    directory is one too. The directory is left as it was."""
    folder = tmp_path / "adir.npz"
    folder.mkdir()
    link = tmp_path / "link.npz"
    link.symlink_to(folder)
    saved = checkpoint.load(iris_checkpoint)
    for path in (folder, link, str(folder)):
        with pytest.raises(CheckpointError) as info:
            checkpoint.save(path, saved)
        assert str(info.value) == f"cannot write checkpoint {path}: it is a directory; give a file path"
    assert folder.is_dir() and list(folder.iterdir()) == []
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--save", str(folder))
    assert (code, out, err) == (2, "", f"error: cannot write --save {folder}: it is a directory\n")
    for end in ("/", "/.", "/.."):  # review119 F4: "newdir/" wrote the file newdir
        given = f"{tmp_path / 'newdir'}{end}"
        with pytest.raises(CheckpointError) as info:
            checkpoint.save(given, saved)
        assert str(info.value) == (f"cannot write checkpoint {given}: it names a folder (a final /, . or "
                                   "..); give a file path, as torchlean train --save takes it")
    assert sorted(p.name for p in tmp_path.iterdir()) == ["adir.npz", "link.npz"]


def test_save_follows_a_link_and_keeps_the_permissions_a_plain_write_gives(tmp_path, iris_checkpoint):
    saved = checkpoint.load(iris_checkpoint)
    old_mask = os.umask(0o022)
    try:
        fresh = tmp_path / "fresh.npz"
        checkpoint.save(fresh, saved)
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o644  # 0666 less the umask (not mkstemp's 0600)
        fresh.chmod(0o640)
        checkpoint.save(fresh, saved)
        assert stat.S_IMODE(fresh.stat().st_mode) == 0o640  # the replaced file's
        link = tmp_path / "link.npz"
        link.symlink_to("target.npz")  # dangling until saved through
        checkpoint.save(link, saved)
        assert link.is_symlink() and (tmp_path / "target.npz").is_file()
        np.testing.assert_array_equal(checkpoint.load(link).feature_mean, saved.feature_mean)
    finally:
        os.umask(old_mask)


def test_a_failed_run_leaves_no_folders_its_output_checks_created(capsys, tmp_path):
    missing = tmp_path / "missing.csv"
    outputs = ("--save", str(tmp_path / "a" / "b" / "m.npz"), "--report-json", str(tmp_path / "r" / "x.json"))
    code, _, err = cli(capsys, "train", "--dataset", str(missing), *outputs)
    assert code == 2 and "dataset file not found" in err
    assert sorted(p.name for p in tmp_path.iterdir()) == []
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "2", *outputs)
    assert code == 0, err
    assert (tmp_path / "a" / "b" / "m.npz").is_file() and (tmp_path / "r" / "x.json").is_file()


def test_a_diverged_classifier_scores_the_same_in_train_and_predict_split_test(capsys, tmp_path):
    """NaN outputs predict no class: train's test_accuracy counts them wrong, as predict does
    (numpy's argmax of a NaN row is 0, which once scored a third of iris as correct)."""
    path = tmp_path / "diverged.npz"
    out = train_and_save(capsys, path, "--dataset", "iris", "--optimizer", "sgd", "--lr", "1e30")
    assert "test_accuracy=0.0000" in out.splitlines()
    code, _, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--split", "test")
    assert code == 0, err
    assert "accuracy=0.0000 (0/30; 30 rows without a prediction)" in err.splitlines()


@pytest.mark.parametrize("header", ["a,a,c,y", "a,y,c,y"])
def test_a_csv_with_repeated_names_predicts_on_the_header_it_trained_on(capsys, tmp_path, labels_csv, header):
    """train accepts repeated header names; predict reads the same layout by position."""
    data_file = tmp_path / "repeated.csv"
    lines = labels_csv.read_text().splitlines()
    data_file.write_text("\n".join([header, *lines[1:]]) + "\n")
    path = tmp_path / "repeated.npz"
    out = train_and_save(capsys, path, "--dataset", str(data_file))
    (test_accuracy,) = [line for line in out.splitlines() if line.startswith("test_accuracy=")]
    code, _, err = cli(capsys, "predict", str(path), "--dataset", str(data_file), "--split", "test")
    assert code == 0, err
    (accuracy,) = [line for line in err.splitlines() if line.startswith("accuracy=")]
    assert accuracy.split()[0] == test_accuracy.replace("test_", "")
    # the same model on the fixture's own header (a,b,c,y) predicts the same classes by position
    code, by_position, err = cli(capsys, "predict", str(path), "--dataset", str(data_file))
    assert code == 0, err
    renamed = tmp_path / "renamed.csv"
    renamed.write_text("\n".join(["p,q,r,s", *lines[1:]]) + "\n")
    code, other, err = cli(capsys, "predict", str(path), "--dataset", str(renamed), "--label-column", "s")
    assert code == 0, err
    assert other == by_position


def test_split_refuses_a_seed_train_never_used_naming_the_checkpoint(capsys, tmp_path, iris_checkpoint):
    path = tmp_path / "big_seed.npz"
    # split_seed None: the split seed is seed, as in a file written before split_seed was recorded
    # no training state: its settings record the split of seed 0 (review115 F1)
    checkpoint.save(path, Checkpoint(**fields(checkpoint.load(iris_checkpoint), seed=2**40, split_seed=None,
                                              training=None)))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--split", "test")
    assert (code, out) == (2, "")
    assert err == (f"error: --split test: checkpoint {path} has seed 1099511627776, which no torchlean train "
                   "split used (its seeds are below 2**32); use --split all\n")
    code, _, err = cli(capsys, "predict", str(path), "--dataset", "iris")
    assert code == 0, err


def test_split_seed_round_trips_through_save_and_load(tmp_path, iris_checkpoint):
    """``split_seed`` is read back as saved, also where it differs from ``seed`` (review66 CK02: a
    load that dropped it, reading every file as split with ``seed``, passed this module)."""
    saved = checkpoint.load(iris_checkpoint)
    path = tmp_path / "split_seed.npz"
    checkpoint.save(path, Checkpoint(**fields(saved, seed=3, split_seed=7, training=None)))  # no settings'
    loaded = checkpoint.load(path)  # split (review115 F1)
    assert (loaded.seed, loaded.split_seed) == (3, 7)
    checkpoint.save(path, Checkpoint(**fields(saved, seed=3, split_seed=None, training=None)))
    assert checkpoint.load(path).split_seed == 3  # none recorded: the split used the trainer's seed


def test_a_semicolon_separated_file_gets_the_separator_hint(capsys, tmp_path, labels_csv):
    path = tmp_path / "labels.npz"
    train_and_save(capsys, path, "--dataset", str(labels_csv))
    semi = tmp_path / "semi.csv"
    semi.write_text(labels_csv.read_text().replace(",", ";"))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(semi))
    assert (code, out) == (2, "")
    assert err == (f"error: {semi}: read as 1 column, but checkpoint {path} expects 3 features; the file "
                   "seems to be separated by ';', not commas: pass --delimiter ';'\n")


def test_a_label_name_holding_a_newline_is_saved_as_itself(capsys, tmp_path, labels_csv):
    """Messages print such a name as a literal, but the checkpoint keeps the name itself, so
    predict finds the label column by name in a reordered file."""
    lines = labels_csv.read_text().splitlines()
    named = tmp_path / "named.csv"
    named.write_text("\n".join(['a,b,c,"lab\nel"', *lines[1:]]) + "\n")
    path = tmp_path / "named.npz"
    train_and_save(capsys, path, "--dataset", str(named), "--label-column", "lab\nel")
    assert checkpoint.load(path).label_column == "lab\nel"
    reordered = tmp_path / "reordered.csv"
    rows = [line.split(",") for line in lines[1:]]
    body = [f"{r[3]},{r[2]},{r[1]},{r[0]}" for r in rows]
    reordered.write_text("\n".join(['"lab\nel",c,b,a', *body]) + "\n")
    code, _, err = cli(capsys, "predict", str(path), "--dataset", str(reordered))
    assert code == 0, err
    assert any(line.startswith("accuracy=") for line in err.splitlines())


@pytest.mark.parametrize(
    ("path", "refusal"),
    [
        ("", "got ''"),
        ("-", "got '-' (standard input and output are not accepted here; a file named - is ./-)"),
        ("x/", "got 'x/' (it names a folder)"),
        ("x/.", "got 'x/.' (it names a folder)"),
        ("..", "got '..' (it names a folder)"),
    ],
)
def test_predict_refuses_an_empty_dash_or_folder_checkpoint_path(capsys, path, refusal):
    code, out, err = cli(capsys, "predict", path, "--dataset", "iris")
    assert (code, out) == (2, "")
    assert err == f"error: argument CHECKPOINT: expected a file path, {refusal}\n"


@pytest.mark.parametrize(
    "argv",
    [
        ["train", "--dataset", "iris", "--epochs", "1", "--report-json"],
        ["predict", "model.npz", "--dataset", "iris", "--output"],
        ["attention-check", "--quick", "--json"],
    ],
    ids=["train --report-json", "predict --output", "attention-check --json"],
)
@pytest.mark.parametrize("path", ["results/", "results/.", "results/..", ".", ".."])
def test_output_options_refuse_a_folder_path(capsys, tmp_path, monkeypatch, argv, path):
    """``results/`` and ``results/.`` name a folder: refused by name before any work, as ``--save``
    refuses them, rather than written as a file ``results`` (``Path`` drops the ``/`` and ``/.``)."""
    monkeypatch.chdir(tmp_path)
    err = one_line_error(capsys, *argv, path)
    assert err == f"error: argument {argv[-1]}: expected a file path, got {path!r} (it names a folder)\n"
    assert list(tmp_path.iterdir()) == []


def test_one_feature_column_is_singular(capsys, iris_checkpoint, tmp_path):
    one = tmp_path / "one.csv"
    one.write_text("x,label\n1.0,setosa\n2.0,versicolor\n")
    err = one_line_error(capsys, "predict", str(iris_checkpoint), "--dataset", str(one))
    assert f"{one} has 1 feature column (x; label column label), but checkpoint" in err
    assert "expects 4 features (" in err


def test_an_over_long_path_is_an_input_that_cannot_be_read_or_the_output_option_that_cannot_be_written(
    capsys, tmp_path, iris_checkpoint
):
    """A file name over the system's limit (ENAMETOOLONG, which ``Path.is_dir()``/``exists()``
    raise where they return False for a missing file): every command said ``cannot write the
    output``, inputs included. An input now cannot be read, an output names its option."""
    long = str(tmp_path / ("e" * 300))
    ckpt = str(iris_checkpoint)
    train = ["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4"]
    for argv, want in (
        (["predict", f"{long}.npz", "--dataset", "iris"], f"cannot read checkpoint {long}.npz"),
        (["predict", ckpt, "--dataset", f"{long}.csv"], f"{long}.csv: cannot read the file"),
        (["predict", ckpt, "--dataset", f"{long}.csv", "--output", str(tmp_path / "p.csv")],
         f"{long}.csv: cannot read the file"),
        (["predict", ckpt, "--dataset", "iris", "--output", f"{long}.csv"],
         f"cannot write --output {long}.csv"),
        (["predict", ckpt, "--dataset", "iris", "--output", f"{long}/p.csv"],
         f"cannot write --output {long}/p.csv"),
        ([*train[:2], f"{long}.csv"], f"{long}.csv: cannot read the file"),
        ([*train, "--report-json", f"{long}.json"], f"cannot write --report-json {long}.json"),
        ([*train, "--save", f"{long}.npz"], f"cannot write --save {long}.npz"),
        (["attention-check", "--quick", "--json", f"{long}.json"],
         f"cannot write --json {long}.json"),
    ):
        assert cli(capsys, *argv) == (2, "", f"error: {want}: File name too long\n"), argv
    name = "f" * 300  # no path separator, no .csv: neither a shipped dataset nor an existing file
    known = f"{' | '.join(data.DATASETS)}, or a path to a CSV file"
    assert cli(capsys, "predict", ckpt, "--dataset", name) == (
        2, "", f"error: unknown dataset {name} (known: {known})\n"
    )
    assert list(tmp_path.iterdir()) == []
    with pytest.raises(CheckpointError, match=r"^cannot read checkpoint .*e\.npz: File name too long$"):
        checkpoint.load(f"{long}.npz")


def test_a_file_name_that_is_not_utf8_prints_escaped_on_a_strict_stdout(tmp_path, labels_csv):
    """A file name holding the byte 0xfd (Python's ``\\udcfd``) with stdout encoded strictly
    (``PYTHONIOENCODING=utf-8``): the ``wrote``/``saved:`` lines, and the report's ``dataset=``,
    ``checkpoint=`` and ``trained_on=``, raised UnicodeEncodeError (a traceback, exit 1) after the
    files were written. They now print the byte as ``\\xfd`` (review197 F5: not Python's stand-in
    ``\\udcfd``), in the shell's ``$'...'`` quoting (review207 F8: apart from a name holding a
    backslash, an ``x``, ``f``, ``d``); under
    an ASCII stdout (``PYTHONIOENCODING=ascii``) a non-ASCII name prints as ``$'\\u00fc'`` (it was a
    one-line error after the checkpoint was saved, review17 diff F5)."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    base = [sys.executable, "-m", "torchlean"]
    odd = os.fsdecode(b"\xfd")
    data_in, saved, record, predictions = (tmp_path / f"{odd}.{ext}" for ext in ("csv", "npz", "json", "out"))
    data_in.write_bytes(labels_csv.read_bytes())
    shown = {path: f"$'{tmp_path}/\\xfd.{path.suffix[1:]}'" for path in (data_in, saved, record, predictions)}
    trained = subprocess.run(
        [*base, "train", "--dataset", str(data_in), "--epochs", "1", "--hidden", "4", "--save", str(saved),
         "--report-json", str(record)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert trained.returncode == 0, trained.stderr
    lines = trained.stdout.splitlines()
    # the key=value lines quote them as shlex reads them, Python's escapes inside (review63 F7)
    quoted = {path: shlex.quote(text[2:-1]) for path, text in shown.items()}
    assert lines[0].startswith(f"dataset={quoted[data_in]} train=48 test=12 ")
    assert lines[-2:] == [f"wrote {shown[record]}", f"saved: {shown[saved]}"]
    predicted = subprocess.run(
        [*base, "predict", str(saved), "--dataset", str(data_in), "--output", str(predictions)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert predicted.returncode == 0, predicted.stderr
    lines = predicted.stdout.splitlines()
    assert lines[0] == (f"checkpoint={quoted[saved]} model=mlp task=classification features=3 dtype=float32 "
                        f"trained_on={quoted[data_in]} trained_under=checked_cpu")
    assert lines[1] == f"dataset={quoted[data_in]} rows=60 profile=checked_cpu execution=eager"
    assert lines[-1] == f"wrote {shown[predictions]}"
    checked = subprocess.run(
        [*base, "attention-check", "--quick", "--no-progress", "--json", str(record)],
        capture_output=True, text=True, env=env, cwd=tmp_path,
    )
    assert checked.returncode == 0, checked.stderr
    n_cases = len(flash_check_cases(quick=True))
    assert checked.stdout.splitlines()[-2:] == [f"wrote {shown[record]}", f"verdict: PASS ({n_cases} cases)"]
    missing = subprocess.run(  # stderr always escapes (Python's backslashreplace), even when asked strict
        [*base, "predict", str(tmp_path / f"{odd}.gone"), "--dataset", "iris"],
        capture_output=True, text=True, env={**env, "PYTHONIOENCODING": "utf-8:strict"}, cwd=tmp_path,
    )
    assert (missing.returncode, missing.stderr) == (
        2, f"error: checkpoint file not found: $'{tmp_path}/\\xfd.gone'\n"
    )
    umlaut = tmp_path / "\u00fc.csv"
    umlaut.write_bytes(labels_csv.read_bytes())
    ascii_out = subprocess.run(
        [*base, "train", "--dataset", str(umlaut), "--epochs", "1", "--hidden", "4", "--save",
         str(tmp_path / "\u00e9.npz")],
        capture_output=True, text=True, env={**env, "PYTHONIOENCODING": "ascii"}, cwd=tmp_path,
    )
    assert (ascii_out.returncode, ascii_out.stderr) == (0, "")
    lines = ascii_out.stdout.splitlines()
    assert lines[0].startswith(f"dataset='{tmp_path}/\\xfc.csv' train=48 ")  # quoted: a backslash
    assert lines[-1] == f"saved: $'{tmp_path}/\\u00e9.npz'"
    assert (tmp_path / "\u00e9.npz").is_file()


def test_a_dash_dataset_with_stdin_closed_says_so(tmp_path, iris_checkpoint):
    """``--dataset -`` started with ``<&-``: /dev/stdin names nothing, and the message was
    ``dataset file not found: /dev/stdin``."""
    env = {**os.environ, "PYTHONIOENCODING": "utf-8"}
    base = [sys.executable, "-m", "torchlean"]
    for argv in (["train", "--dataset", "-"], ["predict", str(iris_checkpoint), "--dataset", "-"]):
        done = subprocess.run([*base, *argv], capture_output=True, text=True, env=env, cwd=tmp_path,
                              preexec_fn=lambda: os.close(0))
        assert (done.returncode, done.stdout, done.stderr) == (
            2, "", "error: standard input is closed (the dataset - reads the CSV from it)\n"
        ), argv


def test_predict_says_when_the_preferred_provider_was_refused(capsys, tmp_path):
    """The strict LibTorch profile's checked policy refuses the LibTorch bridge: predict's audit is
    followed by the same ``note:`` as train's (tests/backend/test_backend_explain.py)."""
    x = np.random.default_rng(3).standard_normal((40, 16))  # 4x4 "images" for the transformer
    images = tmp_path / "images.csv"
    rows = [",".join(f"{v:.5f}" for v in row) + f",{int(np.argmax(row[:2]))}" for row in x]
    images.write_text("\n".join([",".join(f"p{i}" for i in range(16)) + ",y", *rows]) + "\n")
    path = tmp_path / "t.npz"
    train_and_save(capsys, path, "--dataset", str(images), "--model", "transformer")
    strict = ("libtorch_forward_strict_cpu", ["scaled_dot_product_attention"])
    for profile, notes in (("checked_cpu", []), strict):
        code, out, err = cli(capsys, "predict", str(path), "--dataset", str(images), "--profile", profile,
                             "--output", str(tmp_path / "p.csv"))
        assert code == 0, err
        assert "  scaled_dot_product_attention: reference.attention provider=reference" in out
        noted = [line.split(":")[1].strip() for line in err.splitlines() if line.startswith("note:")]
        assert noted == notes, err
        if notes:
            assert "libtorch_forward_strict_cpu prefers provider libtorch, but libtorch.sdpa_forward" in err


def test_predict_writes_its_output_when_the_report_reader_leaves(tmp_path, iris_checkpoint):
    """``predict --output p.csv | head -0``: the report's reader goes away before the CSV is
    written; the CSV is still written, whole, and a note says so (review20 diff F3)."""
    from reader_gone import run_with_stdout_reader_gone

    output = tmp_path / "p.csv"
    argv = ("predict", str(iris_checkpoint), "--dataset", "iris", "--output", str(output))
    status, err = run_with_stdout_reader_gone(*argv)
    assert (status, err) == (
        0,
        f"note: the reader of standard output went away; the run went on to write {output}\n",
    )
    lines = output.read_text().splitlines()
    assert lines[0] == "prediction" and len(lines) == 151


# ------------------------------------------------------------------- the run's capsules (review108 F6)


def test_the_capsules_round_trip_through_save_load_pickle_and_deepcopy(tmp_path, iris_checkpoint):
    """A ``train --save`` checkpoint records the capsules of its run (report.audit_to_json rows, keys
    in their order) and their order word; save and load, pickle and deepcopy keep them; the rows are
    read-only."""
    import copy
    import pickle

    saved = checkpoint.load(iris_checkpoint)
    assert saved.capsules_order == "first-use" and saved.capsules is not None
    rows = saved.capsules_json()
    assert [row["capsule"] for row in rows] == [
        "reference.linear", "reference.relu", "reference.log_softmax", "reference.mul",
        "reference.reduce_sum"]
    assert all(list(row) == list(checkpoint.CAPSULE_KEYS) and row["device"] == "cpu" for row in rows)
    assert list(rows[0]["contracts"]) == ["shape", "layout", "value", "vjp"]
    with np.load(iris_checkpoint, allow_pickle=False) as archive:
        meta = json.loads(str(archive["metadata"]))
    assert meta["capsules"] == rows and meta["capsules_order"] == "first-use"
    copy_path = tmp_path / "copy.npz"
    checkpoint.save(copy_path, saved)
    again = checkpoint.load(copy_path)
    assert again.capsules_json() == rows and again.capsules_order == "first-use"
    for other in (pickle.loads(pickle.dumps(saved)), copy.deepcopy(saved)):
        assert other.capsules_json() == rows and other.capsules_order == "first-use"
    with pytest.raises(TypeError):
        saved.capsules[0]["trust"] = "trusted-external"  # type: ignore[index]
    with pytest.raises(TypeError):
        saved.capsules[0]["contracts"]["value"]["evidence"]["kind"] = "trustedBoundary"  # type: ignore[index]
    value = saved.capsules[0]["contracts"]["value"]
    assert isinstance(saved.capsules, tuple) and isinstance(value["provenance"], tuple)
    # a list of audit_to_json rows, as a Python caller has them, is taken and stored so
    built = Checkpoint(**fields(saved, capsules=rows))
    assert built.capsules_json() == rows and isinstance(built.capsules, tuple)


def edited_row(saved: Checkpoint, index: int, edit: Any) -> list[dict[str, Any]]:
    """The JSON rows of ``saved.capsules`` with row ``index`` changed in place by ``edit``."""
    rows = saved.capsules_json()
    assert rows is not None
    edit(rows[index])
    return rows


def _drop_trust_add_extra(row: dict[str, Any]) -> None:
    del row["trust"]
    row["extra"] = 1


def _claim_op(row: dict[str, Any]) -> None:
    row["contracts"]["value"]["claim"]["op"] = "relu"


KEYS = "op, capsule, provider, device, trust, vjp, reduction, contracts"


@pytest.mark.parametrize(("changes", "message"), [
    (lambda s: {"capsules": edited_row(s, 1, _drop_trust_add_extra)},
     f"capsules[1] must have the keys {KEYS} (report.audit_to_json's): missing 'trust'; unexpected 'extra'"),
    (lambda s: {"capsules": edited_row(s, 2, lambda row: row.update(trust="trusted"))},
     "capsules[2] trust must be one of checked | trusted-external, got 'trusted'"),
    (lambda s: {"capsules": edited_row(s, 0, lambda row: row.update(provider="Reference"))},
     "capsules[0] provider must be one of reference | torchlean | native-cuda | libtorch | aten | mps | "
     "webgpu | cublas | cudnn | cufft | xla | neuron | custom-chip | external, got 'Reference'"),
    (lambda s: {"capsules": edited_row(s, 0, lambda row: row.update(op=7))},
     f"capsules[0] op must be one of {' | '.join(op.label for op in BackendOp)}, got 7"),
    (lambda s: {"capsules": edited_row(s, 3, lambda row: row.update(device="cuda"))},
     "capsules[3] device must be profile checked_cpu's device 'cpu' (a run's capsules run on its profile's "
     "device), got 'cuda'"),
    (lambda s: {"capsules": edited_row(s, 4, lambda row: row.update(capsule=""))},
     "capsules[4] capsule must be a non-empty string (the capsule's name), got ''"),
    (lambda s: {"capsules": edited_row(s, 0, lambda row: row["contracts"].pop("vjp"))},
     "capsules[0] contracts must have the keys shape, layout, value, vjp (report.audit_to_json's): missing "
     "'vjp'"),
    (lambda s: {"capsules": edited_row(s, 0, _claim_op)},
     "capsules[0] contracts.value.claim.op must be the row's op 'linear', got 'relu'"),
    (lambda s: {"capsules": edited_row(s, 0, lambda row: row["contracts"]["shape"]["evidence"].update(
        kind="proved"))},
     "capsules[0] contracts.shape.evidence.kind must be one of runtimeGuard | testSuite | trustedBoundary | "
     "notApplicable, got 'proved'"),
    (lambda s: {"capsules": [*s.capsules_json(), s.capsules_json()[0]]},
     "capsules[5] repeats capsules[0] (op linear, capsule 'reference.linear'): a run lists each capsule it "
     "selected once"),
    (lambda s: {"capsules": []},
     "capsules must be a non-empty list of the run's capsules (report.audit_to_json of each) or None, got "
     "[]"),
    (lambda s: {"capsules": None},
     "capsules and capsules_order must be given together (the run's capsules and their order) or both be "
     "None, got capsules None and capsules_order 'first-use'"),
    (lambda s: {"capsules_order": None},
     "capsules and capsules_order must be given together (the run's capsules and their order) or both be "
     "None, got capsules given and capsules_order None"),
    (lambda s: {"capsules_order": "first use"},
     "capsules_order must be one of first-use | graph-plan (the order of the capsules list) or None, got "
     "'first use'"),
    (lambda s: {"capsules_order": "graph-plan"},
     "capsules_order 'graph-plan' is not the order of execution 'eager' ('first-use'; one of them was "
     "edited): a run's capsules are listed in its execution mode's order"),
    (lambda s: {"version": 1, "training": None, "environment": None, "torch_threads": None,
                "data_sha256": None},
     "a version 1 checkpoint has no capsules or capsules_order (version 2 does), got capsules given, "
     "capsules_order 'first-use'"),
])
def test_bad_capsules_are_refused_naming_the_row_key_and_value(iris_checkpoint, changes, message):
    saved = checkpoint.load(iris_checkpoint)
    with pytest.raises(CheckpointError) as caught:
        Checkpoint(**fields(saved, **changes(saved)))
    assert str(caught.value) == message


def test_load_refuses_edited_capsules_naming_the_file(tmp_path, iris_checkpoint, capsys):
    """A hand-edited (or hostile) file: the refusal names the file; a value of megabytes is cut in
    the message; a field of another JSON type is named as the metadata's other fields are."""
    def edit(**changes: Any) -> np.ndarray[Any, Any]:
        with np.load(iris_checkpoint, allow_pickle=False) as archive:
            meta = json.loads(str(archive["metadata"]))
        for name, change in changes.items():
            meta[name] = change(meta[name])
        return np.array(json.dumps(meta))

    def untrusted(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
        rows[1]["vjp"] = "x" * 1_000_000
        return rows

    path = rewrite(iris_checkpoint, tmp_path / "vjp.npz", metadata=edit(capsules=untrusted))
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    message = str(caught.value)
    assert message.startswith(f"{path}: capsules[1] vjp must be one of none | torchlean-tape | backend-vjp, "
                              "got 'xxxx")
    assert message.endswith("... (1000002 characters)") and len(message) < 500
    assert cli(capsys, "inspect", str(path)) == (2, "", f"error: {message}\n")
    path = rewrite(iris_checkpoint, tmp_path / "dict.npz", metadata=edit(capsules=lambda rows: rows[0]))
    with pytest.raises(CheckpointError, match=r"dict.npz: metadata field 'capsules' must be of type list or "
                                              r"null, got \{'op': 'linear'"):
        checkpoint.load(path)
    path = rewrite(iris_checkpoint, tmp_path / "order.npz", metadata=edit(capsules_order=lambda word: 1))
    refused = r"order.npz: metadata field 'capsules_order' must be of type str or null, got 1$"
    with pytest.raises(CheckpointError, match=refused):
        checkpoint.load(path)


def test_a_file_without_capsules_loads_them_as_none(tmp_path, iris_checkpoint):
    with np.load(iris_checkpoint, allow_pickle=False) as archive:
        meta = json.loads(str(archive["metadata"]))
    del meta["capsules"], meta["capsules_order"]  # as a file written before they were recorded
    old = rewrite(iris_checkpoint, tmp_path / "old.npz", metadata=np.array(json.dumps(meta)))
    loaded = checkpoint.load(old)
    assert (loaded.capsules, loaded.capsules_order, loaded.capsules_json()) == (None, None, None)
    again = tmp_path / "again.npz"
    checkpoint.save(again, loaded)  # and written back without them
    with np.load(again, allow_pickle=False) as archive:
        assert not {"capsules", "capsules_order"} & set(json.loads(str(archive["metadata"])))


@pytest.mark.parametrize(("dataset", "execution", "order"), [
    ("digits", "typed-graph", "graph-plan"), ("iris", "eager", "first-use"),
])
def test_train_save_records_the_capsules_of_its_report(capsys, tmp_path, dataset, execution, order):
    """The checkpoint's rows are the --report-json record's ``capsules``, in its order, and the
    audit lines' capsules."""
    saved, record = tmp_path / "m.npz", tmp_path / "r.json"
    code, out, err = cli(capsys, "train", "--dataset", dataset, "--epochs", "1", "--hidden", "4", "--dropout",
                         "0.1", "--execution", execution, "--save", str(saved), "--report-json", str(record))
    assert (code, err) == (0, ""), err
    written = json.loads(record.read_text())
    loaded = checkpoint.load(saved)
    assert loaded.capsules_json() == written["capsules"]
    assert loaded.capsules_order == written["capsules_order"] == order
    audit = [line for line in out.splitlines() if line.startswith("  ")]
    assert [line.split()[1] for line in audit] == [row["capsule"] for row in written["capsules"]]
    assert "bernoulli_mask" in [row["op"] for row in written["capsules"]]


def test_inspect_and_attention_check_write_their_records_when_the_report_reader_leaves(
    tmp_path, iris_checkpoint
):
    """review216 F1: ``inspect --report-json`` and ``attention-check --json`` into a pipe whose
    reader left exited 141, and whether the record was written depended on the report's size (the
    full attention sweep wrote none); they now write it and say so, as train and predict do."""
    import json

    from reader_gone import run_with_stdout_reader_gone

    record = tmp_path / "inspect.json"
    status, err = run_with_stdout_reader_gone("inspect", str(iris_checkpoint), "--report-json", str(record))
    gone = "note: the reader of standard output went away;"
    assert (status, err) == (0, f"{gone} inspect went on to write {record}\n")
    assert json.loads(record.read_text())["checkpoint"] == str(iris_checkpoint)
    table = tmp_path / "attention.json"
    argv = ("attention-check", "--quick", "--no-progress", "--json", str(table))
    status, err = run_with_stdout_reader_gone(*argv)
    assert (status, err) == (0, f"{gone} attention-check went on to write {table}\n")
    assert json.loads(table.read_text())["verdict"] == "PASS"
