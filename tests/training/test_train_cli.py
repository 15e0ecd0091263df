"""``torchlean train`` (issue 4 item 7, issue 5 item 4): output lines, the JSON record, the capsule
report per profile, and one-line errors for bad arguments. The two full default runs (digits,
10 epochs, eager and typed graph) are marked slow but run by default."""

from __future__ import annotations

import argparse
import contextlib
import io
import json
import math
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import torch
from cli_runs import cli, repeated_names_note
from reader_gone import run_with_stdout_reader_gone

from torchlean.backend import profiles
from torchlean.cli import _threads, main

EPOCH_LINE = re.compile(r"^epoch +(\d+)/(\d+)  loss=(\d+\.\d{6})$")
AUDIT_LINE = re.compile(
    r"^  (?P<op>\w+): (?P<name>[\w.]+) provider=(?P<provider>[\w-]+) trust=(?P<trust>[\w-]+) "
    r"vjp=(?P<vjp>[\w-]+) reduction=(?P<reduction>[\w/-]+)$"
)
CAPSULE_KEYS = {"op", "capsule", "provider", "device", "trust", "vjp", "reduction", "contracts"}


def train(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Run ``torchlean train ARGV`` in-process; argparse's own exits count as return codes."""
    try:
        code = main(["train", *argv])
    except SystemExit as exit_:
        code = int(exit_.code or 0)
    captured = capsys.readouterr()
    return code, captured.out, captured.err


@pytest.fixture(scope="module")
def images_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 samples of 16 features (4x4 "images") with a header and a string label column first."""
    rng = np.random.default_rng(0)
    x = rng.standard_normal((60, 16))
    y = np.array(["left", "right", "up"])[np.argmax(x[:, :3], axis=1)]
    path = tmp_path_factory.mktemp("csv") / "images.csv"
    lines = ["label," + ",".join(f"p{i}" for i in range(16))]
    lines += [f"{label}," + ",".join(f"{v:.6f}" for v in row) for label, row in zip(y, x, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return path


def parse(out: str) -> dict[str, object]:
    """Split the standard output of a run into its parts."""
    lines = out.splitlines()
    epochs = [EPOCH_LINE.match(line) for line in lines]
    header = lines.index(next(line for line in lines if line.startswith("backend capsules used (")))
    audits = []
    for line in lines[header + 1 :]:
        match = AUDIT_LINE.match(line)
        if match is None:
            break
        audits.append(match.groupdict())
    return {
        "lines": lines,
        "losses": [float(m.group(3)) for m in epochs if m],
        "capsule_header": lines[header],
        "audits": audits,
    }


# ---------------------------------------------------------------------------- a full record


def test_iris_run_prints_lines_and_writes_the_record(capsys, tmp_path):
    record_path = tmp_path / "out" / "run.json"
    code, out, err = train(
        capsys, "--dataset", "iris", "--epochs", "2", "--hidden", "8", "--report-json", str(record_path)
    )
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0].startswith("dataset=iris train=120 test=30 features=4 task=classification model=mlp ")
    assert lines[1] == (
        "profile=checked_cpu execution=eager optimizer=optim.adam(lr=0.005, beta1=0.9, beta2=0.999, "
        "eps=1e-08, weight_decay=0.0, amsgrad=False) epochs=2 batch_size=32 seed=0"
    )
    assert [EPOCH_LINE.match(line).group(1, 2) for line in lines[2:4]] == [("1", "2"), ("2", "2")]
    assert re.fullmatch(r"test_accuracy=\d\.\d{4}", lines[4])
    parts = parse(out)
    assert parts["capsule_header"] == f"backend capsules used ({len(parts['audits'])}, first-use order):"
    assert lines[-1] == f"wrote {record_path}"

    record = json.loads(record_path.read_text())
    assert set(record) == {
        "dataset",
        "task",
        "train",
        "val",
        "test",
        "features",
        "parameters",
        "classes",
        "label_column",
        "delimiter",
        "header",
        "model",
        "hidden",
        "dropout",
        "profile",
        "device",
        "assurance",
        "execution",
        "dtype",
        "optimizer",
        "lr_schedule",
        "max_grad_value",
        "max_grad_norm",
        "grad_norms",
        "label_smoothing",
        "no_decay",
        "freeze",
        "batch_size",
        "seed",
        "test_fraction",
        "epochs",
        "torch_threads",
        "torch_threads_segments",
        "data_sha256",
        "environment",
        "losses",
        "validation",
        "kernel_times",
        "test_accuracy",
        "test_balanced_accuracy",
        "test_rows_without_prediction",
        "seconds",
        "capsules_order",
        "capsules",
        "earlier_capsules",
        "preference_notes",
    }
    assert record["earlier_capsules"] is None  # a run never resumed
    assert record["preference_notes"] == []  # checked_cpu prefers no provider
    assert (record["dataset"], record["model"], record["profile"], record["execution"]) == (
        "iris",
        "mlp",
        "checked_cpu",
        "eager",
    )
    assert (record["seed"], record["epochs"], record["test_fraction"]) == (0, 2, 0.2)
    # the settings that reproduce the run, as the header line prints them
    assert (record["hidden"], record["device"], record["assurance"], record["dtype"]) == (
        8,
        "cpu",
        "checked",
        "float32",
    )
    assert f"optimizer={record['optimizer']} " in lines[1]
    assert record["lr_schedule"] == "constant"  # not shown in the header line
    assert record["max_grad_norm"] is None and "max_grad_norm" not in lines[1]
    assert record["max_grad_value"] is None and "max_grad_value" not in lines[1]
    assert record["grad_norms"] is None and record["label_smoothing"] == 0.0 and record["no_decay"] is None
    assert record["freeze"] is None and "freeze" not in lines[1]
    assert record["dropout"] == 0.0 and "dropout" not in lines[0]  # no --dropout
    assert record["validation"] is None  # no --val-fraction
    assert record["kernel_times"] is None and "kernel times" not in out  # no --kernel-times
    assert f"batch_size={record['batch_size']} " in lines[1]
    assert record["torch_threads"] == int(os.environ.get("OMP_NUM_THREADS") or 1)
    assert [round(loss, 6) for loss in record["losses"]] == parts["losses"]
    assert all(isinstance(loss, float) for loss in record["losses"])
    assert f"test_accuracy={record['test_accuracy']:.4f}" == lines[4]
    assert isinstance(record["seconds"], float) and record["seconds"] > 0.0  # a duration, not a speed check
    assert [c["capsule"] for c in record["capsules"]] == [a["name"] for a in parts["audits"]]
    assert [c["capsule"] for c in record["capsules"]] == [
        "reference.linear",
        "reference.relu",
        "reference.log_softmax",
        "reference.mul",
        "reference.reduce_sum",
    ]
    for capsule, audit in zip(record["capsules"], parts["audits"], strict=True):
        assert set(capsule) == CAPSULE_KEYS
        fields = ("op", "capsule", "provider", "trust", "vjp", "reduction")
        assert dict(zip(("op", "name", "provider", "trust", "vjp", "reduction"),
                        (capsule[k] for k in fields), strict=True)) == audit
        assert capsule["device"] == "cpu"
        # the schema of `torchlean plan --format json` (report.audit_to_json): structured evidence
        contracts = capsule["contracts"]
        assert list(contracts) == ["shape", "layout", "value", "vjp"]
        for contract in contracts.values():
            assert capsule["op"] in contract["claim"]["label"]
            assert set(contract["evidence"]) == {"kind", "name", "label"}
        shape, value = contracts["shape"]["evidence"], contracts["value"]["evidence"]
        assert shape["kind"] == "runtimeGuard"
        assert shape["name"].startswith("torchlean.backend.providers.reference.guards.check_")
        assert value["kind"] == "testSuite" and value["name"].startswith("tests/runtime/")
    assert {c["capsule"]: c["reduction"] for c in record["capsules"]}["reference.linear"] == "fixed-left"


def test_diabetes_prints_test_mse(capsys, tmp_path):
    record_path = tmp_path / "run.json"
    code, out, err = train(
        capsys, "--dataset", "diabetes", "--epochs", "1", "--report-json", str(record_path)
    )
    assert (code, err) == (0, "")
    assert "task=regression" in out.splitlines()[0]
    # the loss is on the standardised target, test_mse in the target's units: the line says so
    assert re.fullmatch(r"epoch +1/1  loss\(standardised y\)=\d+\.\d{6}", out.splitlines()[2])
    assert not any(EPOCH_LINE.match(line) for line in out.splitlines())
    (line,) = [line for line in out.splitlines() if line.startswith("test_")]
    assert re.fullmatch(r"test_mse=\d+\.\d{4}", line)
    record = json.loads(record_path.read_text())
    assert "test_accuracy" not in record and record["test_mse"] > 0
    assert f"test_mse={record['test_mse']:.4f}" == line
    # the target's variance (~5900 in its units) bounds a sane one-epoch fit from above
    assert record["test_mse"] < 3e4
    assert [c["capsule"] for c in record["capsules"]][-1] == "reference.mse_loss"


REFERENCE_ATTENTION = (
    "  scaled_dot_product_attention: reference.attention provider=reference trust=checked "
    "vjp=torchlean-tape reduction=fixed-left"
)


@pytest.mark.parametrize(
    ("profile", "attention", "note"),
    [
        ("checked_cpu", REFERENCE_ATTENTION, ""),
        (
            "libtorch_forward_cpu",
            "  scaled_dot_product_attention: libtorch.sdpa_forward provider=libtorch "
            "trust=trusted-external vjp=torchlean-tape reduction=implementation-defined",
            "",
        ),
        (  # prefers LibTorch, whose trusted-external capsule its checked policy refuses: said aloud
            "libtorch_forward_strict_cpu",
            REFERENCE_ATTENTION,
            "note: scaled_dot_product_attention: libtorch_forward_strict_cpu prefers provider libtorch, "
            "but libtorch.sdpa_forward is refused (trust: trusted-external is rejected by assurance "
            "checked); reference.attention runs instead\n",
        ),
    ],
)
def test_transformer_report_names_the_attention_capsule(
    capsys, tmp_path, images_csv, profile, attention, note
):
    code, out, err = train(
        capsys,
        "--dataset",
        str(images_csv),
        "--label-column",
        "label",
        "--model",
        "transformer",
        "--epochs",
        "1",
        "--hidden",
        "8",
        "--profile",
        profile,
        "--report-json",
        str(tmp_path / "run.json"),
    )
    assert (code, err) == (0, note)
    record = json.loads((tmp_path / "run.json").read_text())
    assert record["preference_notes"] == ([note.removeprefix("note: ").rstrip("\n")] if note else [])
    assert f"profile={profile} execution=eager" in out
    assert attention in out.splitlines()
    audits = parse(out)["audits"]
    assert sum(a["op"] == "scaled_dot_product_attention" for a in audits) == 1
    assert {a["provider"] for a in audits if a["op"] != "scaled_dot_product_attention"} == {"reference"}


def test_cnn_and_typed_graph_on_csv_agree(capsys, images_csv):
    runs = {}
    for execution in ("eager", "typed-graph"):
        code, out, err = train(
            capsys,
            "--dataset",
            str(images_csv),
            "--label-column",
            "0",
            "--model",
            "cnn",
            "--epochs",
            "2",
            "--hidden",
            "8",
            "--execution",
            execution,
            "--dtype",
            "float64",
        )
        assert (code, err) == (0, "")
        runs[execution] = out.splitlines()[2:]
    # epoch losses, accuracy and capsules, line for line; the capsule header names each mode's order
    assert without_capsule_header(runs["eager"], "eager") == without_capsule_header(
        runs["typed-graph"], "typed-graph"
    )


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_kernel_times_count_every_training_kernel(capsys, tmp_path, execution):
    """--kernel-times: per capsule, one forward and one VJP per layer use and minibatch (iris: 120
    training rows in minibatches of 32, 4 per epoch; the MLP has three linear layers and two
    relus; the loss is log_softmax, mul, reduce_sum), in the table and the record."""
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", "iris", "--epochs", "3", "--hidden", "8", "--kernel-times",
                           "--execution", execution, "--report-json", str(record_path))
    assert (code, err) == (0, "")
    steps = 3 * 4
    expected = {"reference.linear": 3 * steps, "reference.relu": 2 * steps, "reference.log_softmax": steps,
                "reference.mul": steps, "reference.reduce_sum": steps}
    times = json.loads(record_path.read_text())["kernel_times"]
    assert {k["capsule"]: (k["forward_calls"], k["vjp_calls"]) for k in times["kernels"]} == {
        name: (calls, calls) for name, calls in expected.items()
    }
    assert 0.0 < times["kernel_seconds"] <= times["wall_seconds"]
    assert times["kernel_seconds"] == pytest.approx(sum(k["total_seconds"] for k in times["kernels"]))
    lines = out.splitlines()
    start = lines.index("kernel times of the training epochs (5 capsules, most time first):")
    table = lines[start + 1 : start + 8]
    assert table[0].split()[:4] == ["capsule", "device", "forward", "calls"]
    rows = {row.split()[0]: int(row.split()[2]) for row in table[1:6]}
    assert rows == expected
    assert table[6].startswith("  kernels ") and "s wall" in table[6]
    assert lines[-1] == f"wrote {record_path}"


def test_show_backend_prints_each_capsule_report(capsys):
    code, out, _ = train(capsys, "--dataset", "iris", "--epochs", "1", "--show-backend")
    assert code == 0
    lines = out.splitlines()
    # the two header lines, then the banner directly above the capsule reports it introduces
    assert lines[0].startswith("dataset=iris ") and lines[1].startswith("profile=checked_cpu ")
    assert lines[2] == "[TorchLean] backend capsules used:"
    assert lines[3] == (
        "  linear: reference.linear provider=reference trust=checked vjp=torchlean-tape reduction=fixed-left"
    )
    assert lines.count("[TorchLean] backend capsules used:") == 1
    assert (
        "    vjp: relu torchlean-tape VJP refines its TorchLean semantics; covered by test suite "
        "tests/runtime/test_reference_gradients.py" in lines
    )


# ------------------------------------------------------------------------------ bad input

MISSING = "/nonexistent/data.csv"
THREADS_REFUSAL = "error: argument --torch-threads: expected an integer in [1, 1024], got"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--dataset", "nope"],
            "error: unknown dataset nope (known: digits | iris | breast_cancer | wine | diabetes, "
            "or a path to a CSV file)",
        ),
        (["--model", "rnn"], "error: unknown model rnn (known: mlp | cnn | transformer)"),
        (["--profile", "fastest"], "error: unknown profile fastest (known: {profiles})"),
        (
            ["--optimizer", "lbfgs"],
            "error: unknown optimizer lbfgs (known: sgd | adam | adamw | rmsprop | adagrad)",
        ),
        (["--execution", "graph"], "error: unknown execution mode graph (known: eager | typed-graph)"),
        (["--lr", "-1"], "error: argument --lr: learning rate must be finite and nonnegative, got '-1'"),
        (["--lr", "nan"], "error: argument --lr: learning rate must be finite and nonnegative, got 'nan'"),
        (
            ["--lr", "1e39"],
            "error: argument --lr: learning rate must be finite and nonnegative after conversion to "
            "binary32, got '1e39' (inf in binary32)",
        ),
        (["--lr", "fast"], "error: argument --lr: expected a number, got 'fast'"),
        (["--epochs", "0"], "error: argument --epochs: expected a positive integer, got 0"),
        (["--batch-size", "-3"], "error: argument --batch-size: expected a positive integer, got -3"),
        (["--hidden", "x"], "error: argument --hidden: expected a positive integer, got 'x'"),
        (["--dataset", MISSING], f"error: dataset file not found: {MISSING}"),
        (["--dtype", "float16"], "error: argument --dtype: expected float32 or float64, got 'float16'"),
        (
            ["--model", "cnn", "--dataset", "iris"],
            "error: model cnn reads the features of a row as one square single-channel image of side "
            ">= 4; 4 features make a 2x2 image (accepted: 16, 25, 36, 49, ...; model mlp takes any number)",
        ),
        (
            ["--model", "cnn", "--dataset", "wine"],
            "error: model cnn reads the features of a row as one square single-channel image (side s: "
            "s*s features); 13 features is not a square (accepted: 16, 25, 36, 49, ...; model mlp takes "
            "any number)",
        ),
        (
            ["--model", "transformer", "--dataset", "breast_cancer"],
            "error: model transformer reads the features of a row as one square single-channel image "
            "(side s: s*s features); 30 features is not a square (accepted: 1, 4, 9, 16, ...; model mlp "
            "takes any number)",
        ),
        (
            ["--epochs"],
            "error: argument --epochs: expected one argument",  # given last: no value (review197 F4)
        ),
        (
            ["--lr", "-inf"],
            "error: argument --lr: expected one argument (write --lr=VALUE for a value that starts "
            "with '-')",
        ),
        (
            ["--seed", "1.5"],
            "error: argument --seed: expected an integer in [0, 2**32) (the data split's scikit-learn "
            "train_test_split seeds a numpy RandomState, which takes no larger seed), got '1.5'",
        ),
        (
            ["--seed", "-1"],
            "error: argument --seed: expected an integer in [0, 2**32) (the data split's scikit-learn "
            "train_test_split seeds a numpy RandomState, which takes no larger seed), got -1",
        ),
        (
            ["--seed", "4294967296"],
            "error: argument --seed: expected an integer in [0, 2**32) (the data split's scikit-learn "
            "train_test_split seeds a numpy RandomState, which takes no larger seed), got 4294967296",
        ),
        (
            ["--torch-threads", "100000000000000000000"],
            "error: argument --torch-threads: expected an integer in [1, 1024], got 100000000000000000000",
        ),
        (["--torch-threads", "1025"], f"{THREADS_REFUSAL} 1025"),
        (["--torch-threads", "0"], f"{THREADS_REFUSAL} 0"),
        (["--torch-threads", "2.0"], f"{THREADS_REFUSAL} '2.0'"),
        # numbers are spelled as CSV cells are: not Python's underscores or other scripts' digits
        (["--epochs", "1_0"], "error: argument --epochs: expected a positive integer, got '1_0'"),
        (["--epochs", "\u0661"], "error: argument --epochs: expected a positive integer, got '\u0661'"),
        (
            ["--seed", "\uff11"],
            "error: argument --seed: expected an integer in [0, 2**32) (the data split's scikit-learn "
            "train_test_split seeds a numpy RandomState, which takes no larger seed), got '\uff11'",
        ),
        (["--lr", "1_0"], "error: argument --lr: expected a number, got '1_0'"),
        (["--lr", "\u0661e-3"], "error: argument --lr: expected a number, got '\u0661e-3'"),
        (["--lr", "0x10"], "error: argument --lr: expected a number, got '0x10'"),
        (
            ["--dataset", ""],
            "error: dataset name is empty (accepted: a shipped dataset name (digits | iris | breast_cancer | "
            "wine | diabetes) or a path to a CSV file)",
        ),
        (
            ["--no-such-flag"],
            "error: unrecognized arguments: --no-such-flag (torchlean train --help lists the accepted ones)",
        ),
        # an empty or blank value is shown as its literal, so that it cannot read as a missing word
        (["--model", ""], "error: unknown model '' (known: mlp | cnn | transformer)"),
        (["--model", " mlp"], "error: unknown model ' mlp' (known: mlp | cnn | transformer)"),
        (["--profile", ""], "error: unknown profile '' (known: {profiles})"),
        (["--dtype", ""], "error: argument --dtype: expected float32 or float64, got ''"),
        (["--save", ""], "error: argument --save: expected a file path, got ''"),
        (
            ["--save", "models/"],
            "error: argument --save: expected a file path, got 'models/' (it names a folder)",
        ),
        (
            ["--save", "-"],
            "error: argument --save: expected a file path, got '-' (standard input and output are not "
            "accepted here; a file named - is ./-)",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    code, out, err = train(capsys, *argv)
    assert code == 2
    assert err == message.format(profiles=" | ".join(profiles.names())) + "\n"
    assert "Traceback" not in out + err


def _flags(command: str) -> list[argparse.Action]:
    """The options of ``torchlean COMMAND`` that take no value (store_true, --header/--no-header,
    --help)."""
    from torchlean.cli import build_parser

    parser = build_parser()
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction)).choices[command]
    return [action for action in sub._actions if action.option_strings and action.nargs == 0]


@pytest.mark.parametrize("command", ["train", "predict"])
def test_a_flag_given_a_value_says_it_takes_none(capsys, command):
    """review28 F10: ``--kernel-times=yes`` was argparse's "ignored explicit argument 'yes'"; every
    flag of train and predict now says that a flag takes no value and how to write it."""
    flags = _flags(command)
    assert {"--show-backend", "--header"} <= {name for action in flags for name in action.option_strings}
    for action in flags:
        for name in action.option_strings:
            code, out, err = cli(capsys, command, f"{name}=yes")
            shown = "/".join(action.option_strings)
            assert (code, out) == (2, ""), name
            assert err == (f"error: argument {shown}: a flag takes no value, got 'yes' (write "
                           f"{' or '.join(action.option_strings)} alone, without =VALUE)\n")
    assert cli(capsys, "train", "--kernel=")[2] == (  # a prefix, an empty value
        "error: argument --kernel-times: a flag takes no value, got '' (write --kernel-times alone, without "
        "=VALUE)\n"
    )


def test_bad_csv_label_column(capsys, images_csv):
    code, _, err = train(capsys, "--dataset", str(images_csv), "--label-column", "colour")
    assert code == 2
    assert err.startswith(f"error: unknown label column colour in {images_csv} (known: label | p0 | p1 |")
    assert err.count("\n") == 1
    code, _, err = train(capsys, "--dataset", str(images_csv), "--label-column", "17")
    assert (code, err) == (
        2,
        f"error: unknown label column 17 in {images_csv} (known: indices 0..16 or -17..-1)\n",
    )


def _numeric_header_csv(tmp_path: Path, first: str, name: str = "numhdr.csv") -> Path:
    """``first`` then 50 data rows of two features and a 0/1 label (the reviewer's file)."""
    path = tmp_path / name
    rows = [first] + [f"{i * 0.1:.1f},{i * 0.2:.1f},{i % 2}" for i in range(50)]
    path.write_text("\n".join(rows) + "\n")
    return path


def test_numeric_header_is_not_counted_as_data(capsys, tmp_path):
    path = _numeric_header_csv(tmp_path, "0,1,2")
    code, out, err = train(capsys, "--dataset", str(path), "--label-column", "2", "--epochs", "1",
                           "--hidden", "4")
    assert code == 0
    assert out.splitlines()[0].startswith(f"dataset={path} train=40 test=10 features=2 ")
    assert err == (
        f"note: {path}: first row 0,1,2 is all numbers equal to the column positions, so it was read "
        "as a header (as pandas to_csv writes one); pass --no-header to read it as data\n"
    )
    # --no-header: the first row is a sample (51 rows, 3 classes) and no header note; its label 2
    # is a class of one sample, so the split cannot be stratified, which a note says
    code, out, err = train(capsys, "--dataset", str(path), "--label-column", "2", "--epochs", "1",
                           "--hidden", "4", "--no-header")
    assert (code, err) == (0, "note: the train/test split is not stratified by class: 1 of 3 classes has "
                           "fewer than 2 samples (a stratified split needs 2 samples of each class and room "
                           "for each class in both splits); some classes may be missing from a split; the "
                           "train/test split leaves class 2 (1 sample) without a test row, so the test "
                           "metric does not measure it (more samples would)\n")
    assert out.splitlines()[0].startswith(f"dataset={path} train=40 test=11 features=2 ")


def test_header_flag_reads_an_all_numbers_first_row_as_names(capsys, tmp_path):
    path = _numeric_header_csv(tmp_path, "10,20,30")
    code, out, err = train(capsys, "--dataset", str(path), "--label-column", "30", "--header",
                           "--epochs", "1", "--hidden", "4")
    # review59 F13: taken as names, with a note that the row is all numbers (a data row would be lost)
    assert (code, err) == (0, f"note: {path}: first row 10,20,30 was read as a header though its cells are "
                           "all numbers, so they name the columns and the row is not read as data; pass "
                           "--no-header if it is a data row\n")
    assert out.splitlines()[0].startswith(f"dataset={path} train=40 test=10 features=2 ")
    code, out, err = train(capsys, "--dataset", str(path), "--epochs", "1", "--hidden", "4")
    assert code == 0
    assert err.startswith(f"note: {path}: first row 10,20,30 is all numbers, so it was read as data")
    assert out.splitlines()[0].startswith(f"dataset={path} train=40 test=11 features=2 ")


def test_an_ambiguous_label_column_name_is_a_one_line_error(capsys, tmp_path):
    path = _numeric_header_csv(tmp_path, "a,a,y", "dup.csv")
    code, out, err = train(capsys, "--dataset", str(path), "--label-column", "a")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: label column 'a' is ambiguous: the header names columns 0, 1 'a' "
        "(accepted: a name the header uses once, or a column index 0..2)\n"
    )


@pytest.mark.parametrize("first", ["x,x,x,y", ",,,y"])
@pytest.mark.parametrize("label", [[], ["--label-column", "y"], ["--label-column", "3"]])
def test_repeated_or_blank_feature_names_train(capsys, tmp_path, first, label):
    """As pandas reads such files: nothing is ambiguous when the label is the last column, a name
    used once or an index, so the run trains as with unique names."""
    path = tmp_path / "dup.csv"
    rows = [first] + [f"{i * 0.1:.1f},{i * 0.2:.1f},{i % 7},{i % 2}" for i in range(50)]
    path.write_text("\n".join(rows) + "\n")
    code, out, err = train(capsys, "--dataset", str(path), *label, "--epochs", "1", "--hidden", "4")
    # blank names train, with a note that such a column is often an index (review37 F1)
    note = repeated_names_note(path, 0, 1, "x") if first == "x,x,x,y" else (
        f"note: {path}: columns 0, 1, 2 have no name of its own (blank, or pandas' 'Unnamed: N') and are "
        "used as features: if one is an index an earlier to_csv wrote, remove it (row numbers can give the "
        "label away)\n"
    )
    assert (code, err) == (0, note)
    assert out.splitlines()[0].startswith(f"dataset={path} train=40 test=10 features=3 task=classification ")


def test_dataset_directory_and_empty_report_path_errors(capsys, tmp_path):
    code, _, err = train(capsys, "--dataset", str(tmp_path))
    assert (code, err) == (2, f"error: dataset path is a directory, not a CSV file: {tmp_path}\n")
    code, _, err = train(capsys, "--dataset", "iris", "--report-json", "")
    assert (code, err) == (2, "error: argument --report-json: expected a file path, got ''\n")
    code, _, err = train(capsys, "--dataset", "iris", "--no-header")
    assert (code, err) == (2, "error: --no-header applies to CSV files only; iris is a shipped dataset\n")
    options = ("--header", "--task", "regression", "--label-column", "0")
    code, _, err = train(capsys, "--dataset", "iris", *options)
    assert (code, err) == (
        2,
        "error: --label-column, --task and --header apply to CSV files only; iris is a shipped dataset\n",
    )


def test_report_json_creates_missing_parent_folders(capsys, tmp_path):
    code, out, _ = train(capsys, "--help")
    assert code == 0
    help_text = " ".join(out.split())
    assert "missing parent folders are created" in help_text
    assert "An invalid OMP_NUM_THREADS (abc, 0, -3) is ignored with a one-line warning" in help_text
    assert "--header, --no-header" in help_text
    record_path = tmp_path / "new" / "deeper" / "run.json"
    code, out, _ = train(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4",
                         "--report-json", str(record_path))
    assert code == 0 and out.splitlines()[-1] == f"wrote {record_path}"
    assert json.loads(record_path.read_text())["dataset"] == "iris"


def test_a_failed_run_leaves_no_empty_report_behind(capsys, tmp_path):
    """The path is probed before training (so a bad one fails first), but a file the probe created
    is removed: a run that fails later leaves nothing, and an existing report is left untouched."""
    record_path, missing = tmp_path / "run.json", str(tmp_path / "missing.csv")
    code, out, err = train(capsys, "--dataset", missing, "--report-json", str(record_path))
    assert code == 2 and out == "" and err.startswith("error: ")
    assert not record_path.exists()
    record_path.write_text('{"kept": true}\n')
    code, _, _ = train(capsys, "--dataset", missing, "--report-json", str(record_path))
    assert code == 2 and record_path.read_text() == '{"kept": true}\n'


@pytest.mark.parametrize(
    "value",
    ["abc", "0", "-3", "", "2.5", "4,2", "1025", "100000000000000000000", "9" * 5000],
    ids=["abc", "0", "-3", "empty", "2.5", "4,2", "1025", "1e20", "5000-nines"],
)
def test_invalid_omp_num_threads_is_ignored_with_a_warning(capsys, monkeypatch, value):
    monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert _threads.env_threads() == 1
    assert capsys.readouterr().err == (
        f"warning: ignoring OMP_NUM_THREADS={value!r} (accepted: an integer in [1, 1024]); "
        "torch, where the run uses it, gets 1 thread (choose with --torch-threads N)\n"
    )


def test_huge_omp_num_threads_gets_our_warning_and_not_libgomps():
    """A value beyond libgomp's parser (>= 2**64 - 1) takes the same path as ``abc``: torchlean's
    warning, and OMP_NUM_THREADS=1 set before torch (and libgomp) starts, so libgomp's ``Invalid
    value for environment variable OMP_NUM_THREADS`` is not printed. fast_cpu imports torch."""
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
         "--profile", "fast_cpu"],
        capture_output=True,
        text=True,
        timeout=300,
        env={**os.environ, "OMP_NUM_THREADS": "100000000000000000000"},
    )
    assert done.returncode == 0
    assert done.stderr == (
        "warning: ignoring OMP_NUM_THREADS='100000000000000000000' (accepted: an integer in [1, 1024]); "
        "torch, where the run uses it, gets 1 thread (choose with --torch-threads N)\n"
    )


def test_seed_and_torch_threads_accept_their_bounds():
    from torchlean.cli import train as train_cli

    assert train_cli.MAX_TORCH_THREADS == 1024
    assert [_threads.torch_threads(text) for text in ("1", " 1024 ", "+8")] == [1, 1024, 8]
    with pytest.raises(argparse.ArgumentTypeError, match="got '1_0'"):  # as a CSV cell, not int()
        _threads.torch_threads("1_0")
    assert [train_cli._seed(text) for text in ("0", "4294967295")] == [0, 2**32 - 1]


def test_blank_label_cell_is_a_one_line_error(capsys, tmp_path):
    path = tmp_path / "b.csv"
    path.write_text("a,b,y\n1,2,\n3,4,1\n5,6,0\n7,8,1\n")
    code, out, err = train(capsys, "--dataset", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: line 2, column y: not a class label: '' (accepted: a number or a non-blank name)\n"
    )


@pytest.mark.parametrize(
    ("value", "threads"), [("3", 3), (" 2 ", 2), (None, 1), ("1024", 1024), ("0000000004", 4)]
)
def test_valid_or_unset_omp_num_threads_is_used_silently(capsys, monkeypatch, value, threads):
    if value is None:
        monkeypatch.delenv("OMP_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OMP_NUM_THREADS", value)
    assert _threads.env_threads() == threads
    assert capsys.readouterr().err == ""


def test_invalid_omp_num_threads_warns_once_in_a_run(capsys, monkeypatch):
    before = torch.get_num_threads()
    monkeypatch.setenv("OMP_NUM_THREADS", "abc")
    try:
        code, out, err = train(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4")
    finally:
        torch.set_num_threads(before)
    assert code == 0 and "Traceback" not in out + err
    assert err == (
        "warning: ignoring OMP_NUM_THREADS='abc' (accepted: an integer in [1, 1024]); "
        "torch, where the run uses it, gets 1 thread (choose with --torch-threads N)\n"
    )


def test_unwritable_report_path(capsys, tmp_path):
    blocker = tmp_path / "file"
    blocker.write_text("")
    code, _, err = train(
        capsys, "--dataset", "iris", "--epochs", "1", "--report-json", str(blocker / "r.json")
    )
    assert code == 2
    assert err.startswith(f"error: cannot write --report-json {blocker / 'r.json'}: ")
    assert err.count("\n") == 1


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_checked_cuda_without_cuda_is_a_clear_error(capsys):
    code, out, err = train(capsys, "--profile", "checked_cuda", "--dataset", "iris", "--epochs", "1")
    assert code == 2
    assert err.startswith("error: torch eager session: CUDA was requested")
    assert err.count("\n") == 1 and "Traceback" not in out + err


def test_console_entry_point_error_has_no_traceback():
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "train", "--model", "rnn"],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 2
    assert done.stderr == "error: unknown model rnn (known: mlp | cnn | transformer)\n"


# ----------------------------------------------------------------------- the main job (slow)


CAPSULE_ORDERS = {
    "eager": "first-use order",
    "typed-graph": "graph plan order",  # then ops run outside the graph: none here (review63 F7)
}
"""What the capsule header says the order of the listed capsules is, per execution (review62 F8:
typed graph lists the graph's kernels first and a dropout mask's bernoulli_mask last)."""


def without_capsule_header(lines: list[str], execution: str) -> list[str]:
    """``lines`` without the ``backend capsules used (N, ORDER):`` header, after checking that it
    counts the audit lines that follow and names ``execution``'s order."""
    at = next(i for i, line in enumerate(lines) if line.startswith("backend capsules used ("))
    count = len(parse("\n".join(lines))["audits"])
    assert lines[at] == f"backend capsules used ({count}, {CAPSULE_ORDERS[execution]}):"
    return lines[:at] + lines[at + 1 :]


def run_default(tmp: Path, *argv: str) -> tuple[dict[str, object], list[str]]:
    """``torchlean train ARGV`` with every other default; the JSON record and the output lines."""
    record_path = tmp / "run.json"
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        code = main(["train", *argv, "--report-json", str(record_path)])
    assert (code, err.getvalue()) == (0, "")
    return json.loads(record_path.read_text()), out.getvalue().splitlines()


@pytest.fixture(scope="module")
def default_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[dict[str, object], list[str]]:
    """``torchlean train`` with every default (digits, MLP, checked_cpu, eager, 10 epochs)."""
    return run_default(tmp_path_factory.mktemp("default"))


@pytest.mark.slow
def test_default_run_reaches_95_percent(default_run):
    record, lines = default_run
    assert (record["dataset"], record["model"], record["profile"], record["execution"], record["epochs"]) == (
        "digits",
        "mlp",
        "checked_cpu",
        "eager",
        10,
    )
    assert record["test_accuracy"] >= 0.95
    assert len(record["losses"]) == 10 and record["losses"][-1] < record["losses"][0]
    assert lines[0].startswith(
        "dataset=digits train=1437 test=360 features=64 task=classification model=mlp "
    )


@pytest.mark.slow
def test_default_run_typed_graph_gives_the_identical_losses(default_run, tmp_path):
    record, lines = run_default(tmp_path, "--execution", "typed-graph")
    eager_record, eager_lines = default_run
    assert record["execution"] == "typed-graph"
    assert record["test_accuracy"] >= 0.95
    assert record["losses"] == eager_record["losses"]  # identical floats, not merely close
    assert record["capsules"] == eager_record["capsules"]
    # epoch lines, accuracy and capsule report agree line for line (the profile line names the mode,
    # the capsule header its order)
    assert without_capsule_header(lines[2:-1], "typed-graph") == without_capsule_header(
        eager_lines[2:-1], "eager"
    )


def test_torch_threads_flag_sets_torch_and_is_recorded(capsys, tmp_path):
    import torch

    before = torch.get_num_threads()
    record_path = tmp_path / "run.json"
    try:
        code, _, err = train(
            capsys, "--dataset", "iris", "--epochs", "1", "--profile", "fast_cpu", "--torch-threads", "1",
            "--report-json", str(record_path),
        )
        assert (code, err) == (0, "")
        assert torch.get_num_threads() == 1
        assert json.loads(record_path.read_text())["torch_threads"] == 1
    finally:
        torch.set_num_threads(before)


# ------------------------------------------------------------- data a model cannot train on


def _csv(tmp_path: Path, text: str, name: str = "t.csv") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


HUGE_CSV = "a,b,y\n{v},1,0\n3,2,1\n{v},3,0\n4,4,1\n{v},5,0\n-1,6,1\n"


@pytest.mark.parametrize("value", ["1e200", "1e308"])
def test_targets_whose_statistics_overflow_float64_are_refused_before_training(capsys, tmp_path, value):
    """A target is read and standardised in float64 (review86 F1): one whose train-split standard
    deviation overflows float64 (its square, 1e400 or more, does) is refused, as such a feature is."""
    path = _csv(tmp_path, f"a,y\n1,{value}\n2,0.5\n3,1.5\n4,2.5\n5,3.5\n")
    code, out, err = train(capsys, "--dataset", str(path), "--epochs", "2")
    assert (code, out) == (2, "")
    mean = f"{float(value) / 4:.6g}"  # seed 0's train split: lines 2, 3, 5, 6 (value, 0.5, 2.5, 3.5)
    true = float(value) * float(np.std([1.0, 0.5 / float(value), 2.5 / float(value), 3.5 / float(value)]))
    limit = math.sqrt(np.finfo(np.float64).max / 4)
    assert err == (
        f"error: {path}: label column y: standardising it overflows float64: the train split's mean is "
        f"{mean} and its standard deviation {true:.6g}, whose squared deviations from the mean sum beyond "
        f"float64's range (accepted: values whose running sum over the train rows stays finite in float64, "
        f"and squared deviations whose sum does too: a standard deviation below {limit:.6g} for 4 train "
        "rows; rescale the column)\n"
    )

def test_float64_values_whose_standardisation_overflows_are_refused_by_column(capsys, tmp_path):
    path = _csv(tmp_path, HUGE_CSV.format(v="1e308"))
    code, out, err = train(
        capsys, "--dataset", str(path), "--task", "regression", "--epochs", "2", "--dtype", "float64"
    )
    assert (code, out) == (2, "")
    assert err.startswith(  # train rows (lines 2, 3, 5, 6): 1e308, 3, 1e308, -1, whose mean is 5e307
        f"error: {path}: feature column a: standardising it overflows float64: the train split's values' "
        "running sum goes beyond float64's range (their mean is 5e+307 and their standard deviation 5e+307) "
    )
    limit = math.sqrt(np.finfo(np.float64).max / 4)
    assert err.endswith("(accepted: values whose running sum over the train rows stays finite in float64, "
                        f"and squared deviations whose sum does too: a standard deviation below {limit:.6g} "
                        "for 4 train rows; rescale the column)\n")
    assert err.count("\n") == 1


def test_regression_targets_beyond_float32_train_under_float32(capsys, tmp_path):
    """review86 F1: a 1e39 target (beyond float32) is standardised in float64, as a 1e39 feature is,
    so a float32 run trains on it; its saved statistics are the float64 mean and deviation of the
    train rows (seed 0's train split is lines 2, 3, 5 and 6: ``train_test_split(range(5),
    test_size=0.2, random_state=0)`` keeps rows 0, 1, 3, 4)."""
    path = _csv(tmp_path, "a,y\n1,0.5\n2,1e39\n3,1.5\n4,2.5\n5,3.5\n")
    model = tmp_path / "m.npz"
    code, out, err = train(capsys, "--dataset", str(path), "--epochs", "2", "--save", str(model))
    assert (code, err) == (0, ""), err
    train_targets = np.array([0.5, 1e39, 2.5, 3.5])
    with np.load(model, allow_pickle=False) as archive:
        mean, scale = archive["target_statistics"].tolist()
    expected = (float(np.mean(train_targets)), float(np.std(train_targets)))
    assert (mean, scale) == pytest.approx(expected, rel=1e-15)
    (line,) = [line for line in out.splitlines() if line.startswith("test_mse=")]
    assert np.isfinite(float(line.removeprefix("test_mse=")))
    # predict reads the labels as training did, and scores them (it refused 1e39 under float32)
    code, out, err = cli(capsys, "predict", str(model), "--dataset", str(path), "--split", "test")
    assert code == 0, err
    assert out.splitlines()[0] == "row,prediction" and "mse=" in err  # the report goes to stderr here


def test_float32_targets_far_from_their_mean_standardise_without_overflow(capsys, tmp_path):
    """Seed 1 puts 3e38 and seven -3e38 in the train split: the mean is -2.25e38, and
    3e38 - (-2.25e38) = 5.25e38 overflows float32 (standardising in the features' dtype gives inf);
    in float64 it is sqrt(7) standard deviations (by hand: std = sqrt((5.25**2 + 7 * 0.75**2) / 8)e38)."""
    from torchlean import data

    rows = "".join(f"{i},{'3e38' if i == 0 else '-3e38'}\n" for i in range(10))
    path = _csv(tmp_path, "a,y\n" + rows)
    assert sorted(data.load(path, task="regression", seed=1).y_train.tolist())[-2:] == [
        np.float32(-3e38), np.float32(3e38)
    ]
    record_path = tmp_path / "r.json"
    code, _, err = train(
        capsys, "--dataset", str(path), "--task", "regression", "--epochs", "1", "--hidden", "4",
        "--report-json", str(record_path), "--seed", "1",
    )
    assert (code, err) == (0, "")
    assert all(np.isfinite(json.loads(record_path.read_text())["losses"]))


@pytest.mark.parametrize(
    ("text", "hint"),
    [
        ("a;b;y\n1;2;0\n3;4;1\n", "';', not commas: pass --delimiter ';'"),
        ("a\tb\ty\n1\t2\t0\n3\t4\t1\n", "tabs, not commas: pass --delimiter tab"),
    ],
)
def test_a_tab_or_semicolon_file_gets_a_separator_hint(capsys, tmp_path, text, hint):
    path = _csv(tmp_path, text)
    code, out, err = train(capsys, "--dataset", str(path))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: expected a label column and at least one feature column, got 1; the file seems to "
        f"be separated by {hint}\n"
    )


def test_a_single_class_csv_is_refused(capsys, tmp_path):
    path = _csv(tmp_path, "a,b,y\n1,2,0\n3,4,0\n5,6,0\n7,8,0\n9,1,0\n")
    code, out, err = train(capsys, "--dataset", str(path), "--epochs", "1")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: label column y: all 5 labels are '0', a single class "
        "(accepted: at least two classes for classification); if it is a quantity, pass --task regression\n"
    )


def test_an_empty_split_names_the_csv_path(capsys, tmp_path):
    path = _csv(tmp_path, "a,y\n1,0.5\n", "one.csv")
    code, out, err = train(capsys, "--dataset", str(path))
    assert (code, out) == (2, "")
    assert err == (f"error: {path}: a test fraction of 0.2 of 1 samples leaves an empty split: a single row "
                   "cannot be split into train and test rows, whatever --test-fraction (accepted: data of at "
                   "least 2 rows)\n")


# ----------------------------------------------------------------------- a diverging run


@pytest.mark.parametrize(("options", "warned"), [
    (("--dataset", "iris", "--epochs", "2", "--lr", "50", "--momentum", "0.9", "--val-fraction", "0.2"),
     "warning: the validation loss is not finite (nan) at epoch 2; lower --lr (now 50)"),
    (("--dataset", "iris", "--epochs", "4", "--batch-size", "120", "--lr", "100", "--momentum", "0.9"), None),
    (("--dataset", "diabetes", "--epochs", "3", "--batch-size", "353", "--lr", "6", "--momentum", "0.9"),
     None),
], ids=["val-loss-nan", "outputs-overflow", "regression-overflow"])
def test_a_score_from_a_diverged_model_is_told_why(capsys, options, warned):
    """review184 F1: with every epoch's mean training loss finite (a step's loss is taken before its
    update), a run printed test_accuracy=0.0000 or test_mse=inf from a diverged model and said
    nothing; the test pass now says how many test rows have no prediction and why, as predict."""
    code, _, err = train(capsys, *options, "--optimizer", "sgd")
    assert code == 0
    lines = err.splitlines()
    if warned is not None:
        assert lines[0].startswith(warned)
    assert re.fullmatch(r"warning: \d+ of \d+ test rows have no prediction: their model outputs are not "
                        r"finite because the weights and inputs are finite, but the model's outputs "
                        r"overflow float32", lines[-1])


def test_weights_that_are_not_finite_after_an_epoch_warn_though_its_loss_was_finite(capsys, monkeypatch):
    """review184 F1: the update that breaks the weights shows in no loss of its epoch."""
    from torchlean.cli import train as train_module

    real = train_module._divergence

    def weights_broken(loss, held_out, trainer):
        state = trainer.model.state()
        name = next(iter(state))
        trainer.model.load_state({**state, name: np.full_like(state[name], np.nan)})
        return real(loss, held_out, trainer)

    monkeypatch.setattr(train_module, "_divergence", weights_broken)
    code, _, err = train(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--weight-decay",
                           "0.01")
    assert code == 0
    assert err.splitlines()[0] == (
        "warning: the weights are not finite after the epoch's last update (16 of 55 values) at epoch 1; "
        "lower --lr (now 0.005) or --weight-decay (now 0.01) or try another --optimizer (now adam); "
        "--stop-on-non-finite stops a run at its first step that is not finite"
    )


@pytest.mark.parametrize(("dataset", "result"), [("iris", "test_accuracy="), ("diabetes", "test_mse=nan")])
def test_a_non_finite_loss_warns_once_and_the_run_completes(capsys, tmp_path, dataset, result):
    record_path = tmp_path / "run.json"
    code, out, err = train(
        capsys, "--dataset", dataset, "--lr", "1e30", "--optimizer", "sgd", "--epochs", "2", "--hidden", "4",
        "--report-json", str(record_path),
    )
    assert code == 0
    rows, weights = (30, 55) if dataset == "iris" else (89, 69)
    assert err == (
        "warning: the training loss is not finite (nan) at epoch 1; lower --lr (now 1e+30) or try another "
        "--optimizer (now sgd); --stop-on-non-finite stops a run at its first step that is not finite\n"
        f"warning: {rows} of {rows} test rows have no prediction: their model outputs are not finite because "
        f"the weights are not finite ({weights} of {weights} values; the training diverged)\n"
    )
    lines = out.splitlines()
    assert [line.split("=")[-1] for line in lines[2:4]] == ["nan", "nan"]
    assert lines[4].startswith(result)
    assert lines[5].startswith("backend capsules used (")
    assert out.splitlines()[-1] == f"wrote {record_path}"
    record = json.loads(record_path.read_text(), parse_constant=pytest.fail)  # standard JSON: no NaN token
    assert record["losses"] == [None, None]
    assert record["test_rows_without_prediction"] == rows  # review186 F5: the warning's count
    if dataset == "diabetes":
        assert record["test_mse"] is None


# ------------------------------------------------------------------------- torch threads


def _subprocess_train(tmp_path: Path, env: dict[str, str], *argv: str) -> tuple[dict[str, object], str]:
    record_path = tmp_path / "run.json"
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
         "--report-json", str(record_path), *argv],
        capture_output=True, text=True, timeout=300, env={**os.environ, **env},
    )
    assert done.returncode == 0, done.stderr
    return json.loads(record_path.read_text()), done.stderr


def test_torch_threads_is_null_when_torch_never_ran(tmp_path):
    """checked_cpu runs on numpy kernels: a fresh process never imports torch."""
    record, err = _subprocess_train(tmp_path, {}, "--torch-threads", "4")
    assert record["torch_threads"] is None
    assert err == UNUSED_THREADS.replace("--torch-threads 3", "--torch-threads 4") + "\n"  # review188 F6


def test_torch_threads_are_obeyed_beyond_the_cpu_count(tmp_path):
    """Ask one thread more than the CPUs. A fresh torch started with OMP_NUM_THREADS=N caps it at
    the CPU count (the probe shows it on the 2-core project machine); the run obeys the flag once
    torch is imported (torch.set_num_threads), and reports what torch ran with."""
    asked = min((os.cpu_count() or 1) + 1, 1024)
    probe = subprocess.run(
        [sys.executable, "-c", "import torch; print(torch.get_num_threads())"],
        capture_output=True, text=True, timeout=300, env={**os.environ, "OMP_NUM_THREADS": str(asked)},
    )
    assert int(probe.stdout) <= asked
    record, err = _subprocess_train(tmp_path, {}, "--profile", "fast_cpu", "--torch-threads", str(asked))
    assert record["torch_threads"] == asked
    assert err == ""


def test_a_csv_named_like_a_shipped_dataset_is_reported_by_its_path(capsys, tmp_path):
    path = tmp_path / "iris.csv"
    path.write_text("a,b,y\n" + "".join(f"{i * 0.1:.1f},{i % 5},{i % 2}\n" for i in range(40)))
    record_path = tmp_path / "run.json"
    code, out, err = train(capsys, "--dataset", str(path), "--epochs", "1", "--hidden", "2",
                           "--report-json", str(record_path))
    assert code == 0, err
    assert out.splitlines()[0].startswith(f"dataset={path} train=32 test=8 ")
    assert json.loads(record_path.read_text())["dataset"] == str(path)  # not "iris", the shipped one


def test_a_shipped_dataset_name_that_is_also_a_file_here_gets_a_note(capsys, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    (tmp_path / "iris").write_text("a,y\n1,0\n2,1\n")
    code, out, err = train(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4")
    assert code == 0
    assert out.startswith("dataset=iris train=120 test=30 ")  # the shipped one
    assert err == ("note: --dataset iris is the shipped dataset; for the file iris here, give "
                   "--dataset ./iris\n")
    (tmp_path / "iris").unlink()
    code, _, err = train(capsys, "--dataset", "iris", "--epochs", "1", "--hidden", "4")
    assert (code, err) == (0, "")


def _train_into_a_reader_that_leaves(*argv: str) -> tuple[int, str]:
    return run_with_stdout_reader_gone("train", "--dataset", "iris", "--epochs", "3", "--hidden", "4", *argv)


def test_a_reader_that_leaves_does_not_cost_the_saved_model(tmp_path):
    """``train --save m.npz | head -1`` writes m.npz and the record (review20 user F7: an epoch
    line killed the run before --save), and says so on stderr; the checkpoint is whole."""
    from torchlean import checkpoint

    saved, record = tmp_path / "m.npz", tmp_path / "run.json"
    status, err = _train_into_a_reader_that_leaves("--save", str(saved), "--report-json", str(record))
    assert (status, err) == (
        0,
        f"note: the reader of standard output went away; the run went on to write {saved} and {record}\n",
    )
    assert checkpoint.load(saved).hidden == 4
    assert json.loads(record.read_text())["checkpoint"] == str(saved)


@pytest.mark.parametrize("argv", [(), ("--report-json", "-")])
def test_a_reader_that_leaves_stops_a_run_without_files(argv):
    """Nothing to keep: the run stops quietly at the first write that fails, exit status 141
    (128 + SIGPIPE, what a shell reports for a command killed by it), also when that write is
    the JSON record on stdout (it said "cannot write --report-json /dev/stdout: Broken pipe")."""
    status, err = _train_into_a_reader_that_leaves(*argv)
    assert status == 141
    if argv:  # the human report went to stderr, the JSON to stdout
        assert err.splitlines()[0].startswith("dataset=iris ")
        assert not [line for line in err.splitlines() if line.startswith(("error:", "note:"))], err
    else:
        assert err == ""


def test_attention_check_json_to_a_reader_that_leaves_exits_141_quietly():
    status, err = run_with_stdout_reader_gone("attention-check", "--quick", "--no-progress", "--json", "-")
    assert status == 141
    assert not [line for line in err.splitlines() if line.startswith("error:")], err


def test_a_missing_training_file_is_not_called_an_input_that_would_be_destroyed(tmp_path, capsys):
    # review21 mut O6; oracle: check_distinct's documented rule (an output naming an *existing* input file)
    from torchlean.cli import main

    missing = tmp_path / "nope.csv"
    assert main(["train", "--dataset", str(missing), "--save", str(missing)]) == 2
    err = capsys.readouterr().err
    assert "would destroy" not in err and "nope.csv" in err


UNUSED_THREADS = (
    "note: --torch-threads 3 has no effect: profile checked_cpu runs no torch kernels (the option sets "
    "torch's thread count, which a profile with aten or libtorch capsules uses, e.g. fast_cpu)"
)


def test_torch_threads_under_a_profile_without_torch_kernels_is_noted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review188 F6: ``--torch-threads`` under checked_cpu changed nothing, without a word (the
    header leaves out ``torch_threads=`` there); under fast_cpu it is used, and no note is given."""
    saved = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--torch-threads", "3",
                       "--save", str(saved))
    assert code == 0 and UNUSED_THREADS in err.splitlines(), err
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--torch-threads", "3",
                         "--profile", "fast_cpu")
    assert code == 0 and "--torch-threads" not in err and " torch_threads=3" in out, err
    code, _, err = cli(capsys, "predict", str(saved), "--dataset", "iris", "--torch-threads", "3",
                       "--output", str(tmp_path / "p.csv"))
    assert code == 0 and UNUSED_THREADS in err.splitlines(), err
    code, _, err = cli(capsys, "predict", str(saved), "--dataset", "iris", "--torch-threads", "3",
                       "--profile", "fast_cpu", "--output", str(tmp_path / "p.csv"))
    assert code == 0 and "--torch-threads" not in err, err
