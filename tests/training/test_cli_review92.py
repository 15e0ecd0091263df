"""review92 F9: a file whose label column moved (the run took the last column, ``y``; the file
puts ``y`` first) was refused by resume as "the file or its split changed", and inspect said
only "their digest differs". Both now name the moved label column; resume's way out,
``--label-column y``, continues the run bit for bit (the oracle: the same resume on the file as
the run read it)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import cli, ok

from torchlean import checkpoint, data


def _files(tmp_path: Path) -> tuple[Path, Path]:
    """``c.csv`` (a,b,c,y; y the class) and ``moved.csv``, the same rows as y,a,b,c."""
    rng = np.random.default_rng(0)
    x = rng.normal(size=(60, 3)).tolist()
    y = [int(r[0] + r[1] > 0) for r in x]
    run, moved = tmp_path / "c.csv", tmp_path / "moved.csv"
    pairs = list(zip(x, y, strict=True))
    run.write_text("a,b,c,y\n" + "".join(f"{r[0]!r},{r[1]!r},{r[2]!r},{t}\n" for r, t in pairs))
    moved.write_text("y,a,b,c\n" + "".join(f"{t},{r[0]!r},{r[1]!r},{r[2]!r}\n" for r, t in pairs))
    return run, moved


def test_resume_and_inspect_name_a_moved_label_column(capsys: pytest.CaptureFixture[str],
                                                      tmp_path: Path) -> None:
    run, moved = _files(tmp_path)
    part = tmp_path / "c.npz"
    ok(capsys, "--dataset", str(run), "--epochs", "1", "--save", str(part))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(moved), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"error: the data of --dataset {moved} differ from those the run in {part} trained on (the run's "
        "label column y is a feature column of these data, and c was read as the label: if the columns were "
        "moved, pass --label-column y): resume with the data it was trained on"
    )
    code, out, err = cli(capsys, "inspect", str(part), "--dataset", str(moved))
    assert code == 0 and out.splitlines()[-1] == "data_matches: no"
    assert err.splitlines()[-1] == (  # review95 M3: read by name, they are the run's data
        f"note: the data of {moved} are not those checkpoint {part}'s run trained on: their label column "
        "y is not in the column the run read the label from (the last column); read by name, they are the "
        "run's data"
    )
    taken = ok(capsys, "--resume", str(part), "--dataset", str(moved), "--label-column", "y", "--epochs", "2")
    oracle = ok(capsys, "--resume", str(part), "--dataset", str(run), "--epochs", "2")
    assert [line for line in taken if "loss=" in line] == [line for line in oracle if "loss=" in line]
    assert any(line.startswith("epoch   2/2") for line in taken)


def test_other_changed_data_keep_the_plain_refusal(capsys: pytest.CaptureFixture[str],
                                                   tmp_path: Path) -> None:
    """The clause is only for a label column among the features: a changed row is "the file or
    its split changed", as before."""
    run, _ = _files(tmp_path)
    part = tmp_path / "c.npz"
    ok(capsys, "--dataset", str(run), "--epochs", "1", "--save", str(part))
    lines = run.read_text().splitlines()
    lines[1] = "9.0," + lines[1].split(",", 1)[1]
    run.write_text("\n".join(lines) + "\n")
    code, _, err = cli(capsys, "train", "--resume", str(part), "--epochs", "2")
    assert code == 2
    assert err.splitlines()[-1].endswith(
        "(the file or its split changed): resume with the data it was trained on")


def _tiny_feature_files(tmp_path: Path) -> tuple[Path, Path, Path]:
    """``base.csv``: 50 rows ``a,b,y`` with ``a`` of order 1e-30 (so its deviation is about
    1e-30); ``f32.csv``: a test row's ``a`` set to 1e30, which standardises to about 1e60 (beyond
    float32, within float64); ``both.csv``: another test row's ``a`` set to 1e280 too (beyond
    float64). The test rows are those ``data.split_rows`` picks (seed 0, fraction 0.2)."""
    rng = np.random.default_rng(0)
    rows = [[repr(rng.normal() * 1e-30), repr(rng.normal()), str(i % 2)] for i in range(50)]
    _, test = data.split_rows(np.arange(50) % 2, "classification", 0, 0.2, source="t")
    files = []
    for name, edits in (("base", {}), ("f32", {0: "1e30"}), ("both", {0: "1e30", 1: "1e280"})):
        edited = [row[:] for row in rows]
        for k, value in edits.items():
            edited[test[k]][0] = value
        path = tmp_path / f"{name}.csv"
        path.write_text("a,b,y\n" + "".join(",".join(row) + "\n" for row in edited))
        files.append(path)
    return files[0], files[1], files[2]


def test_the_float64_way_forward_is_named_only_where_it_can_be_taken(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review95 M2: resume (which refuses another --dtype), inspect and predict (which take none)
    named --dtype float64; L4: a file with a second value float64 cannot hold either was told
    --dtype float64, then refused again under it."""
    base, f32, both = _tiny_feature_files(tmp_path)
    code, out, err = cli(capsys, "train", "--dataset", str(f32), "--epochs", "1")
    assert (code, out) == (2, "")
    assert err.endswith("; --dtype float64 holds it, or correct or remove the row)\n"), err
    ok(capsys, "--dataset", str(f32), "--epochs", "1", "--dtype", "float64")  # it does
    code, out, err = cli(capsys, "train", "--dataset", str(both), "--epochs", "1")
    assert (code, out) == (2, "")
    assert err.endswith("; float64 holds it but not every such value of these data: correct or remove the "
                        "2 rows holding such values)\n"), err
    part = tmp_path / "base.npz"
    ok(capsys, "--dataset", str(base), "--epochs", "1", "--save", str(part))
    way = "; the checkpoint's dtype is float32: correct or remove the row)"
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(f32), "--epochs", "2")
    assert (code, out) == (2, "") and err.rstrip().endswith(way), err
    code, out, err = cli(capsys, "inspect", str(part), "--dataset", str(f32))
    assert code == 0 and f"{way}), so whether they are its data is unknown" in err, err
    code, out, err = cli(capsys, "predict", str(part), "--dataset", str(f32), "--split", "test",
                         "--output", str(tmp_path / "p.csv"))
    assert f"{way}), so whether they are its data is unknown" in err and "--dtype" not in err, err
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(both), "--epochs", "2")
    assert (code, out) == (2, "") and err.rstrip().endswith(  # review97 L4: no float64 either
        "; the checkpoint's dtype is float32: correct or remove the 2 rows holding such values)"), err
    beyond = tmp_path / "beyond.csv"  # review98 L1: a value float64 cannot hold, under the checkpoint
    beyond.write_text(both.read_text().replace("1e30,", "0.0,"))
    code, out, err = cli(capsys, "inspect", str(part), "--dataset", str(beyond))
    assert "; the checkpoint's dtype is float32: correct or remove the row)), so" in err, err
    assert "cannot hold it either" not in err


def _labelled_files(tmp_path: Path, labels: list[str], name: str = "y") -> tuple[Path, Path]:
    """``last.csv`` (a,b,c,NAME) and ``first.csv`` (NAME,a,b,c), the same 60 rows, ``labels``
    drawn per row."""
    rng = np.random.default_rng(3)
    x = rng.standard_normal((60, 3)).tolist()
    y = [labels[int(k)] for k in rng.integers(0, len(labels), 60)]
    last, first = tmp_path / "last.csv", tmp_path / "first.csv"
    pairs = list(zip(x, y, strict=True))
    last.write_text(f"a,b,c,{name}\n" + "".join(f"{r[0]!r},{r[1]!r},{r[2]!r},{t}\n" for r, t in pairs))
    first.write_text(f"{name},a,b,c\n" + "".join(f"{t},{r[0]!r},{r[1]!r},{r[2]!r}\n" for r, t in pairs))
    return last, first


@pytest.mark.parametrize("labels", [["0", "1", "2"], ["setosa", "versicolor", "virginica"]])
def test_predict_on_the_runs_data_with_the_label_column_moved(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, labels: list[str]
) -> None:
    """review95 M3: predict --split test said "c was read as the label ... may include rows the
    model trained on", though it read y by name and predicted exactly the run's test rows (the
    oracle: the same command on the file as the run read it). M4: class names moved first got no
    --label-column hint from resume; with it, the run goes on as on the run's own file."""
    last, first = _labelled_files(tmp_path, labels)
    part = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(last), "--epochs", "1", "--save", str(part))
    outputs = []
    for path in (last, first):
        out_csv = tmp_path / f"{path.stem}.out.csv"
        code, out, err = cli(capsys, "predict", str(part), "--dataset", str(path), "--split", "test",
                             "--output", str(out_csv))
        assert code == 0, err
        outputs.append((out_csv.read_text(), [line for line in out.splitlines() if "accuracy" in line]))
    assert outputs[0] == outputs[1]
    assert err.splitlines()[0] == (
        f"note: the data of {first} are not those checkpoint {part}'s run trained on as they were: their "
        "label column y is not in the column the run read the label from (the last column); read by name, "
        "they are the run's data, as predict reads them (train --resume, which reads the label where the run "
        "did, names --label-column)")
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(first), "--epochs", "2")
    assert (code, out) == (2, "")
    assert "if the columns were moved, pass --label-column y" in err.splitlines()[-1], err
    taken = ok(capsys, "--resume", str(part), "--dataset", str(first), "--label-column", "y", "--epochs", "2")
    oracle = ok(capsys, "--resume", str(part), "--dataset", str(last), "--epochs", "2")
    assert [line for line in taken if "loss=" in line] == [line for line in oracle if "loss=" in line]


def test_resume_gives_no_moved_label_advice_for_a_bad_label_cell(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review226 F1: the advice review221 F2 added for a moved label column mixing numbers and
    names (tests/training/test_train_resume.py) was given to a bad label cell in a file laid out as
    the run's too."""
    last, first = _labelled_files(tmp_path, ["9", "cat", "dog"])
    part = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(last), "--task", "classification", "--epochs", "1", "--save", str(part))
    # review228 F1: the moved column read from standard input, whose header is not read again, is
    # told so too (the refusal names the column it refused as a feature)
    import subprocess
    import sys

    argv = [sys.executable, "-m", "torchlean", "train", "--resume", str(part), "--dataset", "-",
            "--epochs", "2"]
    done = subprocess.run(argv, input=first.read_text(), capture_output=True, text=True, timeout=600,
                          check=False)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr.endswith(
        "(--resume m.npz reads the file as the run read its data, the label in the last column, and the "
        "run's label column y is a feature column here: if the columns were moved, pass --label-column y; "
        "else resume with the data it was trained on, laid out as they were)\n".replace("m.npz", str(part))
    ), done.stderr
    lines = last.read_text().splitlines()
    lines[3] = lines[3].rsplit(",", 1)[0] + ","
    blank = tmp_path / "blank.csv"
    blank.write_text("\n".join(lines) + "\n")
    for extra in ((), ("--label-column", "y")):
        code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(blank), "--epochs", "2",
                             *extra)
        assert (code, out) == (2, "")
        assert err == (f"error: {blank}: line 4, column y: not a class label: '' (accepted: a number or a "
                       "non-blank name)\n"), err


def test_a_label_column_named_with_a_leading_dash_is_hinted_with_equals(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review95 L7: "pass --label-column -y" fails when pasted (argparse takes -y for an option)."""
    last, first = _labelled_files(tmp_path, ["0", "1"], name="-y")
    part = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(last), "--epochs", "1", "--save", str(part))
    code, _, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(first), "--epochs", "2")
    assert code == 2 and "if the columns were moved, pass --label-column=-y)" in err, err
    ok(capsys, "--resume", str(part), "--dataset", str(first), "--label-column=-y", "--epochs", "2")


def test_a_torch_profile_without_torch_is_one_error_line(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """review96 L4: with torch missing (a --no-deps install), --profile fast_cpu ended in a
    ModuleNotFoundError traceback (review98 L2: the message named a checked_cpu way out that
    resume refuses; it names the install). Here ``import torch`` fails so from the CLI's own import."""
    import builtins
    import importlib.util

    real_import = builtins.__import__

    def no_torch(name: str, *args: Any, **kwargs: Any) -> Any:
        if name == "torch":
            raise ModuleNotFoundError("No module named 'torch'", name="torch")
        return real_import(name, *args, **kwargs)

    part = tmp_path / "d.npz"
    ok(capsys, "--epochs", "1", "--save", str(part))  # checked_cpu, before torch goes
    monkeypatch.setattr(builtins, "__import__", no_torch)
    real_find_spec = importlib.util.find_spec
    monkeypatch.setattr(importlib.util, "find_spec",
                        lambda name, *args: None if name == "torch" else real_find_spec(name, *args))
    message = ("error: this command needs torch, which is not installed (torchlean depends on it: pip "
               "install torch)\n")
    # review97 M1: every command and profile that imports torch, one line; review98 L3: a profile
    # with torch kernels the model does not use (libtorch_forward_cpu's MLP) is not refused for them
    for argv in (("train", "--profile", "fast_cpu", "--epochs", "1"),
                 ("train", "--profile", "checked_cuda", "--epochs", "1"),
                 ("predict", str(part), "--dataset", "digits", "--profile", "fast_cpu", "--output",
                  str(tmp_path / "p.csv"))):
        code, out, err = cli(capsys, *argv)
        assert (code, err) == (2, message), err
        assert "loss=" not in out  # refused before any epoch
    code, out, err = cli(capsys, "train", "--profile", "libtorch_forward_cpu", "--epochs", "1")
    assert code == 0 and "test_accuracy=" in out, err
    assert "torch_threads=" not in out  # review99 L3: no torch ran, as its record says (null)


def test_moved_label_data_report_their_own_digest_and_reordered_columns_too(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review97 M2: inspect's dataset_sha256 and predict's data_sha256 gave the run's recorded digest
    for a moved-label file, though defined as the digest of the data loaded as the run loaded them
    (the oracle: that load's digest, computed here); null for class names that cannot be loaded so.
    L3: moved label and reordered feature columns together were "may include rows the model
    trained on", though predict reads both by name."""
    from torchlean.cli import _resume

    for labels in (["0", "1", "2"], ["setosa", "versicolor", "virginica"]):
        last, first = _labelled_files(tmp_path, labels)
        part = tmp_path / "m.npz"
        ok(capsys, "--dataset", str(last), "--epochs", "1", "--save", str(part))
        recorded = checkpoint.load(part).data_sha256
        try:
            expected = _resume.data_digest(data.load(str(first), task="classification"))
        except data.DataError:  # class names in the last column's place: not loadable so
            expected = None
        assert expected != recorded
        report = tmp_path / "i.json"
        code, _, _ = cli(capsys, "inspect", str(part), "--dataset", str(first), "--report-json", str(report))
        record = json.loads(report.read_text())
        assert code == 0 and (record["dataset_sha256"], record["data_matches"]) == (expected, False)
        assert record["data_difference"].startswith("their label column y is not in the column")
        # review98 M1: why they could not be loaded as the run loaded them, where they cannot
        assert (record["dataset_error"] is None) == (expected is not None), record["dataset_error"]
        code, _, _ = cli(capsys, "predict", str(part), "--dataset", str(first), "--split", "test", "--output",
                         str(tmp_path / "p.csv"), "--report-json", str(report))
        record = json.loads(report.read_text())
        assert code == 0 and (record["data_sha256"], record["data_matches_training"]) == (expected, False)
    rows = [line.split(",") for line in first.read_text().splitlines()]
    both = tmp_path / "both.csv"  # y,b,a,c: label moved and a, b swapped
    both.write_text("".join(",".join([r[0], r[2], r[1], r[3]]) + "\n" for r in rows))
    code, _, err = cli(capsys, "predict", str(part), "--dataset", str(both), "--split", "test", "--output",
                       str(tmp_path / "both.out.csv"))
    assert code == 0 and (tmp_path / "both.out.csv").read_text() == (tmp_path / "p.csv").read_text()
    assert err.splitlines()[0].endswith(
        "their label column y is not in the column the run read the label from (the last column), and their "
        "feature columns are the run's in another order; read by name, they are the run's data, as predict "
        "reads them (train --resume, which reads the label where the run did, names --label-column)"), err


def _moved_and_reordered(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, labels: list[str]
) -> tuple[Path, Path, Path]:
    """A checkpoint trained on ``a,b,c,y`` (:func:`_labelled_files`), the same data as
    ``y,a,b,c`` and as ``y,b,a,c``."""
    last, first = _labelled_files(tmp_path, labels)
    part = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(last), "--epochs", "1", "--save", str(part))
    rows = [line.split(",") for line in first.read_text().splitlines()]
    both = tmp_path / "both.csv"
    both.write_text("".join(",".join([r[0], r[2], r[1], r[3]]) + "\n" for r in rows))
    return part, first, both


def test_resume_names_a_moved_label_and_reordered_features_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review98 L5: on y,b,a,c resume said pass --label-column y, and only once that was given
    that the feature columns were in another order; one refusal now says both, and following it
    (y,a,b,c with --label-column y) resumes."""
    part, first, both = _moved_and_reordered(capsys, tmp_path, ["0", "1", "2"])
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(both), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith(
        "(the run's label column y is a feature column of these data, and c was read as the label: if the "
        "columns were moved, pass --label-column y and put the feature columns in the run's order (a, b, c): "
        "read so, they are the run's in another order): resume with the data it was trained on"), err
    code, _, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(both), "--label-column", "y",
                       "--epochs", "2")
    assert code == 2 and "feature columns in another order" in err, err  # the premise: both were needed
    ok(capsys, "--resume", str(part), "--dataset", str(first), "--label-column", "y", "--epochs", "2")
    # the label moved alone: no word of the order
    code, _, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(first), "--epochs", "2")
    assert code == 2 and "pass --label-column y): resume with" in err, err


@pytest.mark.parametrize("command", ["train", "predict"])
def test_header_and_no_header_together_are_refused(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                   command: str) -> None:
    """review103 F7: argparse took the last of the two, and the refusal that followed could advise
    passing --header, which had been given; the same one twice is taken."""
    csv = tmp_path / "d.csv"
    csv.write_text("a,b,y\n" + "".join(f"{i},{i * 2},{i % 2}\n" for i in range(20)))
    model = str(tmp_path / "m.npz")
    first = ("--dataset", str(csv)) if command == "train" else (model, "--dataset", str(csv))
    if command == "predict":
        ok(capsys, "--dataset", str(csv), "--epochs", "1", "--hidden", "4", "--save", str(tmp_path / "m.npz"))
    for flags in (("--header", "--no-header"), ("--no-header", "--header")):
        code, out, err = cli(capsys, command, *first, *flags)
        assert (code, out) == (2, "")
        assert err.endswith("error: --header and --no-header contradict each other: give one\n"), err
    epochs = ("--epochs", "1") if command == "train" else ()
    code, _, err = cli(capsys, command, *first, "--header", "--header", *epochs)
    assert code == 0, err


def test_class_names_moved_and_reordered_are_told_both_fixes_at_once(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review104 M2: with class names, the moved label fails at load (a name in a feature column)
    before the data are compared, and the reordered features took a second refusal."""
    part, first, both = _moved_and_reordered(capsys, tmp_path, ["setosa", "versicolor", "virginica"])
    code, out, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(both), "--epochs", "2")
    assert (code, out) == (2, "")
    assert ("is a feature column here: if the columns were moved, pass --label-column y and put the feature "
            "columns in the run's order (a, b, c): read so, they are the run's in another order; else resume "
            "with the data it was trained on, laid out as they were)") in err, err
    code, _, err = cli(capsys, "train", "--resume", str(part), "--dataset", str(first), "--epochs", "2")
    assert code == 2 and "pass --label-column y; else resume" in err, err  # moved alone: no order
    ok(capsys, "--resume", str(part), "--dataset", str(first), "--label-column", "y", "--epochs", "2")
