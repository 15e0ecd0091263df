"""``torchlean inspect --dataset`` and the data digest of predict and inspect (review64 F1, F2, F6,
F7): the data file is never overwritten, data that cannot be read are an error or ``unknown`` (never
``no``), ``--delimiter``, ``--format``'s hint, and the digest of a checkpoint that records none."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from cli_runs import cli
from sklearn.datasets import load_iris

from torchlean import checkpoint, data, provenance
from torchlean.checkpoint import Checkpoint


def iris_text(delimiter: str) -> str:
    """The iris data as a CSV file with a header, its cells separated by ``delimiter``."""
    iris = load_iris()
    rows = [delimiter.join(["a", "b", "c", "d", "target"])]
    rows += [delimiter.join([*map(repr, map(float, x)), str(int(y))]) for x, y in zip(iris.data, iris.target,
                                                                                        strict=True)]
    return "\n".join(rows) + "\n"


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, Path]:
    """A checkpoint trained on iris.csv (commas), that file, and the same data separated by ';'."""
    from torchlean.cli import main

    folder = tmp_path_factory.mktemp("r64")
    comma, semi = folder / "iris.csv", folder / "iris_semi.csv"
    comma.write_text(iris_text(","))
    semi.write_text(iris_text(";"))
    saved = folder / "m.npz"
    argv = ["train", "--dataset", str(comma), "--hidden", "8", "--epochs", "1", "--save", str(saved)]
    assert main(argv) == 0
    return saved, comma, semi


def test_report_json_naming_the_dataset_file_is_refused(capsys: pytest.CaptureFixture[str],
                                                        trained: tuple[Path, Path, Path]) -> None:
    saved, comma, _ = trained
    before = comma.read_bytes()
    code, out, err = cli(capsys, "inspect", str(saved), "--dataset", str(comma), "--report-json", str(comma))
    assert (code, out) == (2, "")
    assert err == (f"error: --report-json {comma} is the input --dataset {comma}: writing it would destroy "
                   "that input; give another path\n")
    assert comma.read_bytes() == before


def test_a_missing_or_folder_dataset_is_an_error(capsys: pytest.CaptureFixture[str],
                                                 trained: tuple[Path, Path, Path], tmp_path: Path) -> None:
    saved = trained[0]
    missing = tmp_path / "nope.csv"
    for given, refusal in ((missing, f"dataset file not found: {missing}"),
                           (tmp_path, f"dataset path is a directory, not a CSV file: {tmp_path}")):
        code, out, err = cli(capsys, "inspect", str(saved), "--dataset", str(given))
        assert (code, out, err) == (2, "", f"error: {refusal}\n")
        # predict gives the same line
        assert cli(capsys, "predict", str(saved), "--dataset", str(given))[2] == f"error: {refusal}\n"


def test_data_that_cannot_be_loaded_are_unknown_with_the_reason(capsys: pytest.CaptureFixture[str],
                                                                trained: tuple[Path, Path, Path],
                                                                tmp_path: Path) -> None:
    saved, comma, semi = trained
    recorded = checkpoint.load(saved).training
    assert recorded is not None
    report = tmp_path / "i.json"
    for given in (semi, saved):  # another delimiter than the run's; a checkpoint given as data
        code, out, err = cli(capsys, "inspect", str(saved), "--dataset", str(given), "--report-json",
                             str(report))
        assert code == 0
        lines = out.splitlines()
        assert lines[-3:-1] == [f"dataset_sha256: unknown ({given})", "data_matches: unknown"]
        assert "data_matches: no" not in lines
        record = json.loads(report.read_text())
        assert (record["dataset_sha256"], record["data_matches"]) == (None, None)
        reason = record["dataset_error"]
        assert isinstance(reason, str) and reason.startswith(f"{given}: ")
        assert err == (f"note: {given} could not be loaded as checkpoint {saved}'s run loaded its data "
                       f"({reason}), so whether they are its data is unknown\n")
    assert cli(capsys, "inspect", str(saved), "--dataset", str(semi), "--report-json", str(report))[0] == 0
    assert "pass --delimiter ';'" in json.loads(report.read_text())["dataset_error"]
    # --delimiter reads it, as predict's does: the digest is the run's
    code, out, err = cli(capsys, "inspect", str(saved), "--dataset", str(semi), "--delimiter", ";")
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [f"dataset_sha256: {recorded.settings['data_sha256']} ({semi})",
                                     "data_matches: yes"]
    # the comma file still matches; a shipped dataset with another digest is "no"
    for given, verdict in ((str(comma), "yes"), ("wine", "no")):
        assert cli(capsys, "inspect", str(saved), "--dataset", given)[1].splitlines()[-1] == (
            f"data_matches: {verdict}")
    # --delimiter is for a CSV file
    for argv, refusal in (
        (["--dataset", "iris", "--delimiter", ";"],
         "--delimiter applies to CSV files only; iris is a shipped dataset"),
        (["--delimiter", ";"], "--delimiter applies to the --dataset file: give --dataset PATH too"),
    ):
        assert cli(capsys, "inspect", str(saved), *argv) == (2, "", f"error: {refusal}\n")


def test_format_points_to_report_json(capsys: pytest.CaptureFixture[str],
                                      trained: tuple[Path, Path, Path]) -> None:
    code, out, err = cli(capsys, "inspect", str(trained[0]), "--format", "json")
    assert (code, out) == (2, "")
    assert err == ("error: unrecognized arguments: --format json (torchlean inspect has no --format: "
                   "--report-json PATH, or - for standard output, writes its record as JSON; torchlean "
                   "inspect --help lists the accepted options)\n")


def test_report_json_on_stdout_prints_no_wrote_line(trained: tuple[Path, Path, Path]) -> None:
    argv = [sys.executable, "-m", "torchlean", "inspect", str(trained[0]), "--report-json", "-"]
    done = subprocess.run(argv, capture_output=True, text=True, check=False)
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["checkpoint"] == str(trained[0])
    assert done.stderr.splitlines()[-2].startswith("weights_sha256: ")
    assert done.stderr.splitlines()[-1] == "not_finite: none (every weight and optimizer value is finite)"
    # no "wrote PATH" line (the source line may say "another build ... wrote it" while files change)
    assert not [line for line in done.stderr.splitlines() if line.startswith("wrote ")], done.stderr


def test_the_digest_of_a_checkpoint_that_records_none(capsys: pytest.CaptureFixture[str],
                                                      trained: tuple[Path, Path, Path],
                                                      tmp_path: Path) -> None:
    """A checkpoint built in Python (no training state, so no recorded digest): predict and inspect
    still give the digest of the data loaded as the checkpoint describes them, and no verdict."""
    saved, comma, _ = trained
    old = checkpoint.load(saved)
    fields: dict[str, Any] = {name: getattr(old, name) for name in Checkpoint.__slots__}
    built = tmp_path / "py.npz"
    checkpoint.save(built, Checkpoint(**{**fields, "training": None, "data_sha256": None, "split_seed": 5,
                                         "test_fraction": 0.3}))
    # the oracle: data.load with the checkpoint's split seed and test fraction
    loaded = data.load(str(comma), label_column="target", seed=5, test_fraction=0.3)
    oracle = provenance.data_sha256(loaded)
    assert oracle != old.training.settings["data_sha256"]  # type: ignore[union-attr]
    report = tmp_path / "p.json"
    code, _, err = cli(capsys, "predict", str(built), "--dataset", str(comma), "--split", "test", "--output",
                       str(tmp_path / "p.csv"), "--report-json", str(report))
    assert code == 0, err
    record = json.loads(report.read_text())
    assert (record["data_sha256"], record["trained_data_sha256"], record["data_matches_training"]) == (
        oracle, None, None)
    code, out, err = cli(capsys, "inspect", str(built), "--dataset", str(comma))
    assert (code, err) == (0, "")
    assert out.splitlines()[-2:] == [f"dataset_sha256: {oracle} ({comma})", "data_matches: unknown"]
    # a shipped dataset too (label column and task its own)
    iris = provenance.data_sha256(data.load("iris", seed=5, test_fraction=0.3))
    assert cli(capsys, "inspect", str(built), "--dataset", "iris")[1].splitlines()[-2] == (
        f"dataset_sha256: {iris} (iris)")
