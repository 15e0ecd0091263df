"""``--resume`` with ``--task``/``--label-column`` (review56 F5): a value that resolves to the run's
own task or label column is taken, as a repeated ``--lr`` is, whether the run gave it or inferred
it; another is refused naming both. Oracle: the uninterrupted run's test metric and weights."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from cli_runs import arrays, cli, ok


@pytest.fixture
def animals(tmp_path: Path) -> Path:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((80, 3))
    labels = np.array(["cat", "dog"])[(x[:, 0] + x[:, 1] > 0).astype(int)]
    path = tmp_path / "animals.csv"
    path.write_text("a,b,c,label\n" + "".join(
        f"{a:.5f},{b:.5f},{c:.5f},{label}\n" for (a, b, c), label in zip(x, labels, strict=True)))
    return path


RUN = ("--epochs", "2", "--hidden", "4")


@pytest.mark.parametrize("repeated", [
    ("--task", "classification"), ("--label-column", "label"), ("--label-column", "-1"),
    ("--label-column", "3"), ("--lr", "0.005"),
])
def test_a_repeated_value_of_the_run_is_taken(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, animals: Path, repeated: tuple[str, str]
) -> None:
    whole, part, resumed = tmp_path / "whole.npz", tmp_path / "part.npz", tmp_path / "resumed.npz"
    full = ok(capsys, "--dataset", str(animals), *RUN, "--epochs", "3", "--save", str(whole))
    ok(capsys, "--dataset", str(animals), *RUN, "--epochs", "1", "--save", str(part))
    lines = ok(capsys, "--resume", str(part), "--epochs", "3", *repeated, "--save", str(resumed))
    test = [line for line in lines if line.startswith("test_accuracy=")]
    assert test == [line for line in full if line.startswith("test_accuracy=")]
    saved, expected = arrays(resumed), arrays(whole)
    weights = [name for name in expected if name.startswith("weights/")]
    assert len(weights) == 6 and all(np.array_equal(saved[name], expected[name]) for name in weights)


@pytest.mark.parametrize(("given", "refusal"), [
    (("--task", "regression"), "--task regression differs from the checkpoint's run's task classification"),
    (("--label-column", "a"), "--label-column a differs from the checkpoint's run's label column label"),
])
def test_another_value_is_refused_naming_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, animals: Path, given: tuple[str, str], refusal: str
) -> None:
    part = tmp_path / "part.npz"
    ok(capsys, "--dataset", str(animals), *RUN, "--epochs", "1", "--save", str(part))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "3", *given)
    assert (code, out) == (2, "")
    assert err == (
        f"error: --resume {part} continues the run with the checkpoint's settings; {refusal} (leave out the "
        "option, or train a new run without --resume)\n"
    )


def test_an_index_of_another_column_is_refused_naming_both(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    # every column holds two whole-number values, so index 0 loads as well and the columns differ
    path = tmp_path / "ints.csv"
    rng = np.random.default_rng(4)
    path.write_text("a,b,y\n" + "".join(f"{i % 2},{v:.4f},{(i // 2) % 2}\n"
                                        for i, v in enumerate(rng.standard_normal(60))))
    part = tmp_path / "part.npz"
    ok(capsys, "--dataset", str(path), *RUN, "--epochs", "1", "--save", str(part))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "3", "--label-column", "0")
    assert (code, out) == (2, "")
    assert err == (
        f"error: --resume {part} continues the run with the checkpoint's settings; --label-column 0 reads "
        "label column a, and the checkpoint's run had label column y (leave out the option, give the run's "
        "value, or train a new run without --resume)\n"
    )
