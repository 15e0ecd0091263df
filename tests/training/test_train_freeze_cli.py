"""``torchlean train --freeze REGEX``: the run equals a ``Trainer`` with the frozen group
``optim.group(REGEX, frozen=True)`` (itself checked against torch in test_freeze.py); the header,
the record and the checkpoint's settings name it; ``--resume`` keeps it; refusals are one-line
errors (exit status 2)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import arrays, cli, metadata, ok

from torchlean import data, optim
from torchlean.models import build_model
from torchlean.trainer import Objective, RunConfig, Trainer

BASE = ("--dataset", "iris", "--hidden", "4", "--batch-size", "64", "--dtype", "float64", "--optimizer",
        "adamw", "--lr", "0.05", "--weight-decay", "0.3", "--max-grad-norm", "0.05", "--seed", "1")


def _trainer(groups: list[optim.ParamGroup]) -> tuple[Trainer[Any, Any], data.Dataset]:
    dataset = data.load("iris", seed=1, dtype="float64")
    layer, shape = build_model("mlp", dataset.n_features, dataset.n_classes, hidden=4)
    config = RunConfig(optim.adamw(0.05, weight_decay=0.3), dtype="float64", max_grad_norm=0.05,
                       param_groups=groups).with_profile("checked_cpu")
    trainer: Trainer[Any, Any] = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=1,
                                         input_shape=shape)
    return trainer, dataset


def test_freeze_reaches_the_trainer_and_is_named_in_the_header_record_and_checkpoint(capsys, tmp_path):
    """The CLI run (2 epochs) equals the Trainer with the frozen group: its losses, grad norms
    and saved weights; layer 0 keeps its initial weights; without --freeze the run differs."""
    record_path, saved = tmp_path / "run.json", tmp_path / "run.npz"
    lines = ok(capsys, *BASE, "--epochs", "2", "--freeze", r"^0\.", "--no-decay", "bias",
               "--report-json", str(record_path), "--save", str(saved))
    assert " no_decay='bias' freeze='^0\\\\.' epochs=2 " in lines[1]
    record = json.loads(record_path.read_text())
    assert record["freeze"] == {"pattern": r"^0\.", "parameters": ["0.weight", "0.bias"]}
    assert record["no_decay"] == {"pattern": "bias", "parameters": ["2.bias", "4.bias"]}  # 0.bias: frozen
    trainer, dataset = _trainer([optim.group(r"^0\.", frozen=True), optim.group("bias", weight_decay=0.0)])
    initial = trainer.model.state()
    losses, norms = [], []
    for _ in range(2):
        losses += trainer.fit(dataset.x_train, dataset.y_train, epochs=1, batch_size=64)
        norms.append(trainer.grad_norm)
    assert record["losses"] == losses and record["grad_norms"] == norms
    weights = {name[len("weights/"):]: value for name, value in arrays(saved).items()
               if name.startswith("weights/")}
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(weights[name], value, err_msg=name)
    np.testing.assert_array_equal(weights["0.weight"], initial["0.weight"])
    assert not np.array_equal(weights["2.weight"], initial["2.weight"])
    assert metadata(saved)["training"]["settings"]["freeze"] == r"^0\."
    assert not any(name.startswith(("optimizer/first.0", "optimizer/first.1")) for name in arrays(saved))
    plain = tmp_path / "plain.json"
    plain_lines = ok(capsys, *BASE, "--epochs", "2", "--no-decay", "bias", "--report-json", str(plain))
    unfrozen = json.loads(plain.read_text())
    assert unfrozen["freeze"] is None and "freeze" not in plain_lines[1]
    assert unfrozen["losses"] != losses


def test_a_frozen_run_resumes_bit_for_bit_and_keeps_its_freeze(capsys, tmp_path):
    whole, first, resumed = tmp_path / "whole.npz", tmp_path / "first.npz", tmp_path / "resumed.npz"
    argv = (*BASE, "--freeze", "^2")
    ok(capsys, *argv, "--epochs", "4", "--save", str(whole))
    ok(capsys, *argv, "--epochs", "2", "--save", str(first))
    ok(capsys, "--resume", str(first), "--epochs", "4", "--save", str(resumed))
    a, b = arrays(whole), arrays(resumed)
    assert sorted(a) == sorted(b) and "optimizer/first.2" not in a and "optimizer/first.0" in a
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], strict=True, err_msg=name)
    assert metadata(resumed)["training"]["settings"]["freeze"] == "^2"
    code, out, err = cli(capsys, "train", "--resume", str(first), "--epochs", "4", "--freeze", "^4")
    assert (code, out) == (2, "")
    assert err == (f"error: --resume {first} continues the run with the checkpoint's settings; --freeze ^4 "
                   "differs from the checkpoint's ^2 (leave out the option, or train a new run without "
                   "--resume)\n")
    code, _, err = cli(capsys, "train", "--resume", str(first), "--epochs", "4", "--freeze", "^2")
    assert code == 0, err  # the same value given again is no conflict


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--freeze", "xx"],
         "--freeze 'xx' matches no parameter of --model mlp (names: 0.weight, 0.bias, 2.weight, 2.bias, "
         "4.weight, 4.bias)"),
        (["--freeze", "."],
         "--freeze '.' matches every trainable parameter of --model mlp (0.weight, 0.bias, 2.weight, 2.bias, "
         "4.weight, 4.bias): nothing would train; freeze fewer"),
        (["--freeze", "weight|bias", "--model", "cnn", "--dataset", "digits"],
         "--freeze 'weight|bias' matches every trainable parameter of --model cnn ("),
        (["--freeze", "("],
         "argument --freeze: group pattern '(' is not a regular expression Python compiles (missing ), "
         "unterminated subpattern at position 0)"),
        (["--freeze", "^[02]", "--no-decay", "^4", "--optimizer", "adamw"],
         "--no-decay '^4' matches every trainable parameter that --freeze leaves training; for no weight "
         "decay at all give --weight-decay 0"),
        (["--freeze", "^0", "--no-decay", r"^0\.b", "--optimizer", "adamw"],  # review58 F2
         "--no-decay '^0\\\\.b' matches only parameters --freeze freezes (0.bias), so it exempts none: a "
         "frozen parameter takes no weight decay"),
    ],
    ids=["no-match", "everything", "everything-cnn", "bad-regex", "no-decay-everything-left",
         "no-decay-only-frozen"],
)
def test_bad_freezes_are_one_line_errors(capsys, argv, message):
    code, out, err = cli(capsys, "train", "--dataset", "iris", *argv)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: {message}") and err.count("\n") == 1, err


def test_the_record_of_a_run_without_freeze_says_null(capsys, tmp_path: Path):
    record_path = tmp_path / "run.json"
    ok(capsys, "--dataset", "iris", "--hidden", "4", "--epochs", "1", "--report-json", str(record_path))
    assert json.loads(record_path.read_text())["freeze"] is None
