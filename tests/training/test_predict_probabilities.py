"""``torchlean predict --probabilities``: one softmax column per class, computed by an accepted
capsule of the predicting profile.

Oracles, independent of torchlean's kernels: the model's forward pass rebuilt in torch float64
from the checkpoint's weights (linear, relu, linear, relu, linear) and ``torch.softmax`` in
float64 of its logits, and ``torch.softmax`` in float64 of the logits torchlean's Python API
computes (``Checkpoint.build().predict``); scikit-learn's ``train_test_split`` for the rows of
``--split test``; the CSV read back with the ``csv`` module.
"""

from __future__ import annotations

import csv
import io
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
from cli_runs import cli
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split

from torchlean import checkpoint
from torchlean import functional as F
from torchlean.autograd.grad_mode import no_grad
from torchlean.checkpoint import Checkpoint

AUDIT_SOFTMAX = (
    "  softmax: {provider}.softmax provider={provider} trust=checked vjp={vjp} reduction={order}"
)


@pytest.fixture(scope="module")
def iris32(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A float32 iris checkpoint (3 epochs, hidden 8)."""
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("prob") / "iris32.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "3", "--hidden", "8", "--save", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def iris64(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A float64 iris checkpoint (3 epochs, hidden 8)."""
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("prob") / "iris64.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "3", "--hidden", "8", "--dtype", "float64",
                 "--save", str(path)]) == 0
    return path


def read_csv(text: str) -> tuple[list[str], list[list[str]]]:
    rows = list(csv.reader(io.StringIO(text)))
    return rows[0], rows[1:]


def torch_forward(saved: Checkpoint, raw_x: np.ndarray[Any, Any]) -> torch.Tensor:
    """The mlp's logits in torch float64, from the checkpoint's weights and the features the
    checkpoint standardises (in its dtype, as the model sees them)."""
    h = torch.from_numpy(saved.standardise(raw_x).astype(np.float64))
    w = {name: torch.from_numpy(np.array(value, dtype=np.float64)) for name, value in saved.weights.items()}
    h = torch.relu(torch.nn.functional.linear(h, w["0.weight"], w["0.bias"]))
    h = torch.relu(torch.nn.functional.linear(h, w["2.weight"], w["2.bias"]))
    return torch.nn.functional.linear(h, w["4.weight"], w["4.bias"])


def probability_cells(header: list[str], rows: list[list[str]], first: int) -> np.ndarray[Any, Any]:
    """The probability columns (from column ``first``) as float64 values."""
    return np.array([[float(cell) for cell in row[first:]] for row in rows])


def reference_softmax(logits: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    """The softmax the checked_cpu profile computes (reference.softmax), in the logits' dtype."""
    import torchlean
    from torchlean.backend import profiles

    with torchlean.session(profiles.get("checked_cpu")), no_grad():
        return F.softmax(torchlean.Tensor(logits), axis=-1).numpy()


# ------------------------------------------------------------------------------- the values


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_probabilities_are_the_softmax_of_the_models_logits(capsys, tmp_path, iris32, iris64, dtype):
    path = iris32 if dtype == "float32" else iris64
    output = tmp_path / "p.csv"
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--probabilities",
                         "--output", str(output))
    assert (code, err) == (0, ""), err
    header, rows = read_csv(output.read_text())
    saved = checkpoint.load(path)
    assert header == ["prediction", "p_setosa", "p_versicolor", "p_virginica"]
    assert saved.classes == ("setosa", "versicolor", "virginica")  # the checkpoint's order
    assert len(rows) == 150
    p = probability_cells(header, rows, 1)

    # oracle 1: torch float64 forward pass from the checkpoint's weights, torch float64 softmax
    raw_x = load_iris().data
    expected = torch.softmax(torch_forward(saved, raw_x), dim=1).numpy()
    tolerance = 1e-6 if dtype == "float32" else 1e-13
    np.testing.assert_allclose(p, expected, rtol=0, atol=tolerance)
    # oracle 2: torch float64 softmax of the logits torchlean's Python API computes
    logits = saved.build().predict(saved.standardise(raw_x))
    assert logits.dtype == np.dtype(dtype)
    of_logits = torch.softmax(torch.from_numpy(logits.astype(np.float64)), dim=1).numpy()
    np.testing.assert_allclose(p, of_logits, rtol=0, atol=4e-7 if dtype == "float32" else 1e-15)

    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-6 if dtype == "float32" else 1e-14)
    assert [saved.classes[i] for i in p.argmax(axis=1)] == [row[0] for row in rows]
    assert [row[0] for row in rows] == [saved.classes[i] for i in logits.argmax(axis=1)]

    # the cells read back exactly to the values the profile's softmax capsule computes
    computed = reference_softmax(logits)
    np.testing.assert_array_equal(p.astype(dtype), computed, strict=True)
    cells = [cell for row in rows for cell in row[1:]]
    if dtype == "float64":  # Python's shortest round-trip form
        assert cells == [repr(float(v)) for v in computed.reshape(-1)]
    else:  # 9 significant digits
        assert cells == [f"{float(v):.9g}" for v in computed.reshape(-1)]
        digits = [cell.split("e")[0].replace(".", "").lstrip("0") for cell in cells]
        assert max(len(d) for d in digits) <= 9

    lines = out.splitlines()
    assert AUDIT_SOFTMAX.format(provider="reference", vjp="torchlean-tape", order="fixed-left") in lines
    assert lines[-1] == f"wrote {output}"


def test_without_the_option_the_csv_and_audit_are_unchanged(capsys, iris32):
    code, out, err = cli(capsys, "predict", str(iris32), "--dataset", "iris")
    assert code == 0
    header, rows = read_csv(out)
    assert header == ["prediction"] and len(rows) == 150
    assert "softmax" not in err


def test_fast_cpu_and_typed_graph_name_their_softmax_capsule(capsys, tmp_path, iris32):
    eager = tmp_path / "eager.csv"
    assert cli(capsys, "predict", str(iris32), "--dataset", "iris", "--probabilities", "--output",
               str(eager))[0] == 0
    _, reference = read_csv(eager.read_text())
    typed = tmp_path / "typed.csv"
    code, out, err = cli(capsys, "predict", str(iris32), "--dataset", "iris", "--probabilities",
                         "--execution", "typed-graph", "--output", str(typed))
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert AUDIT_SOFTMAX.format(provider="reference", vjp="torchlean-tape", order="fixed-left") in lines
    assert read_csv(typed.read_text())[1] == reference  # the same kernels: the same text
    fast = tmp_path / "fast.csv"
    code, out, err = cli(capsys, "predict", str(iris32), "--dataset", "iris", "--probabilities",
                         "--profile", "fast_cpu", "--output", str(fast))
    assert (code, err) == (0, "")
    lines = out.splitlines()  # ATen's _softmax_backward_data is its VJP (review134 F1)
    assert AUDIT_SOFTMAX.format(provider="aten", vjp="backend-vjp", order="implementation-defined") in lines
    header, rows = read_csv(fast.read_text())
    np.testing.assert_allclose(probability_cells(header, rows, 1), probability_cells(header, reference, 1),
                               rtol=0, atol=1e-6)


# ------------------------------------------------------------------- with the other options


def test_split_test_to_stdout_puts_the_row_column_first(iris32):
    done = subprocess.run(  # a process of its own: --output - is its standard output
        [sys.executable, "-m", "torchlean", "predict", str(iris32), "--dataset", "iris", "--split", "test",
         "--probabilities", "--output", "-"],
        capture_output=True, text=True, check=True, env={**os.environ, "PYTHONIOENCODING": "utf-8"},
    )
    err = done.stderr
    header, rows = read_csv(done.stdout)  # stdout holds only the CSV; the report is on stderr
    assert header == ["row", "prediction", "p_setosa", "p_versicolor", "p_virginica"]
    x, y = load_iris(return_X_y=True)
    _, test_rows = train_test_split(np.arange(150), test_size=0.2, random_state=0, shuffle=True, stratify=y)
    assert [int(row[0]) for row in rows] == sorted(test_rows)
    saved = checkpoint.load(iris32)
    expected = torch.softmax(torch_forward(saved, x[np.sort(test_rows)]), dim=1).numpy()
    np.testing.assert_allclose(probability_cells(header, rows, 2), expected, rtol=0, atol=1e-6)
    lines = err.splitlines()
    assert lines[1] == "dataset=iris rows=30 split=test profile=checked_cpu execution=eager"
    assert AUDIT_SOFTMAX.format(provider="reference", vjp="torchlean-tape", order="fixed-left") in lines


def test_ignore_labels_and_numeric_class_names(capsys, tmp_path):
    """Classes 3, 5, 7 give columns p_3, p_5, p_7; labels in another encoding are left unread."""
    rng = np.random.default_rng(1)
    x = rng.standard_normal((60, 3))
    y = np.array([3, 5, 7])[np.argmax(x, axis=1)]
    data_file = tmp_path / "labels.csv"
    data_file.write_text("a,b,c,y\n" + "".join(f"{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{c}\n"
                                               for r, c in zip(x, y, strict=True)))
    path = tmp_path / "labels.npz"
    assert cli(capsys, "train", "--dataset", str(data_file), "--epochs", "2", "--hidden", "8",
               "--save", str(path))[0] == 0
    recoded = tmp_path / "recoded.csv"
    recoded.write_text("a,b,c,y\n" + "".join(f"{r[0]:.6f},{r[1]:.6f},{r[2]:.6f},{'xyz'[c // 2 - 1]}\n"
                                             for r, c in zip(x, y, strict=True)))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", str(recoded), "--ignore-labels",
                         "--probabilities")
    assert code == 0, err
    header, rows = read_csv(out)
    assert header == ["prediction", "p_3", "p_5", "p_7"]
    saved = checkpoint.load(path)
    raw = np.array([[float(f"{v:.6f}") for v in r] for r in x])
    expected = torch.softmax(torch_forward(saved, raw), dim=1).numpy()
    np.testing.assert_allclose(probability_cells(header, rows, 1), expected, rtol=0, atol=1e-6)
    assert [row[0] for row in rows] == [saved.classes[i] for i in expected.argmax(axis=1)]
    assert f"note: --ignore-labels: {recoded}'s label column y is left out of the features" in err


def test_rows_without_a_prediction_have_empty_probabilities(capsys, tmp_path, iris32):
    """Weights that overflow float32 on some rows: those rows, and only those, get empty cells."""
    saved = checkpoint.load(iris32)
    weights = {name: np.array(value) for name, value in saved.weights.items()}
    weights["0.weight"][:, 0] = 3e38
    values = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    values["weights"] = weights
    path = tmp_path / "overflow.npz"
    checkpoint.save(path, Checkpoint(**values))
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--probabilities")
    assert code == 0
    header, rows = read_csv(out)
    empty = [row[0] == "" for row in rows]
    assert 0 < sum(empty) < 150
    assert all((row[1:] == ["", "", ""]) == gone for row, gone in zip(rows, empty, strict=True))
    kept = [row for row in rows if row[0]]
    p = probability_cells(header, kept, 1)
    np.testing.assert_allclose(p.sum(axis=1), 1.0, rtol=0, atol=1e-6)
    assert f"warning: {sum(empty)} of 150 rows have no prediction" in err


# ------------------------------------------------------------------------------ refusals


def test_a_regression_checkpoint_is_refused_naming_its_task(capsys, tmp_path):
    path = tmp_path / "diabetes.npz"
    assert cli(capsys, "train", "--dataset", "diabetes", "--epochs", "1", "--hidden", "4",
               "--save", str(path))[0] == 0
    output = tmp_path / "never.csv"
    code, out, err = cli(capsys, "predict", str(path), "--dataset", "diabetes", "--probabilities",
                         "--output", str(output))
    assert (code, out) == (2, "")
    assert err == (
        f"error: --probabilities applies to classification checkpoints, and checkpoint {path} is of task "
        "regression (its output is a target value, not class logits): leave out --probabilities\n"
    )
    assert not output.exists()


def test_help_describes_the_option(capsys):
    code, out, _ = cli(capsys, "predict", "--help")
    assert code == 0
    text = " ".join(out.split())
    assert "--probabilities classification checkpoints only: after prediction, one column per class, " \
           "p_<class name> in the checkpoint's class order" in text
