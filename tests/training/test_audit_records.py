"""review62: what the run records and the checkpoint say to an auditor. The digests are checked
against hashlib over the bytes the README documents (not against the code that computes them),
the split seed against scikit-learn's ``train_test_split``, the environment against
``importlib.metadata`` and ``platform``; then old checkpoints (their new fields stripped), hand
edits (F6) and bad input to ``torchlean inspect``."""

from __future__ import annotations

import datetime
import hashlib
import json
import platform
from importlib import metadata as dist
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import cli, metadata, ok, rewrite_metadata
from sklearn.datasets import load_iris
from sklearn.model_selection import train_test_split

from torchlean import checkpoint, data, models, optim, provenance
from torchlean.backend.errors import TorchLeanError
from torchlean.checkpoint import Checkpoint, CheckpointError
from torchlean.trainer import Objective, RunConfig, Trainer

SMALL = ("--dataset", "iris", "--hidden", "8", "--epochs", "2")


def documented_digest(parts: list[np.ndarray[Any, Any]], class_names: tuple[str, ...]) -> str:
    """The README's definition of ``data_sha256``, written out with hashlib."""
    digest = hashlib.sha256()
    for a in parts:
        a = np.ascontiguousarray(a)
        digest.update(f"{a.dtype.str}{a.shape};".encode("ascii"))
        digest.update(a.tobytes(order="C"))
    digest.update(repr(class_names).encode("utf-8"))
    return digest.hexdigest()


@pytest.fixture(scope="module")
def run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """``torchlean train`` on iris with --save and --report-json: the checkpoint, the record, argv."""
    from torchlean.cli import main

    folder = tmp_path_factory.mktemp("run")
    saved, record = folder / "m.npz", folder / "run.json"
    argv = ["train", *SMALL, "--save", str(saved), "--report-json", str(record)]
    assert main(argv) == 0
    return saved, record, argv


# ------------------------------------------------------------------------------- digests


@pytest.mark.parametrize(("name", "options"), [
    ("iris", {"seed": 3}),
    ("iris", {"seed": 1, "val_fraction": 0.25, "test_fraction": 0.3}),
    ("diabetes", {"dtype": "float64"}),
])
def test_data_sha256_is_the_documented_digest(name: str, options: dict[str, Any]) -> None:
    ds = data.load(name, **options)
    parts = [ds.x_train, ds.y_train, ds.x_test, ds.y_test]
    if ds.x_val is not None and ds.y_val is not None:
        parts += [ds.x_val, ds.y_val]
    assert provenance.data_sha256(ds) == documented_digest(parts, ds.class_names)
    # not vacuous: another split seed gives other bytes and another digest
    other = data.load(name, **{**options, "seed": options.get("seed", 0) + 1})
    assert provenance.data_sha256(other) != provenance.data_sha256(ds)


def test_data_sha256_refuses_what_is_not_a_dataset() -> None:
    with pytest.raises(TorchLeanError, match=r"data_sha256 takes a torchlean.data.Dataset .*got dict"):
        provenance.data_sha256({"x_train": 1})


def test_the_capsule_table_digest_is_that_of_the_capsules_command(capsys: pytest.CaptureFixture[str]) -> None:
    digests = {}
    for profile in ("checked_cpu", "fast_cpu"):
        code, out, err = cli(capsys, "capsules", "--profile", profile, "--format", "json")
        assert (code, err) == (0, "")
        canonical = json.dumps(json.loads(out), sort_keys=True, separators=(",", ":")).encode("utf-8")
        digests[profile] = hashlib.sha256(canonical).hexdigest()
        assert provenance.capsule_table_sha256(profile) == digests[profile]
    assert digests["checked_cpu"] != digests["fast_cpu"]
    # the same name selecting another capsule is detected: a profile with a module of its own
    import dataclasses

    from torchlean.backend import profiles
    from torchlean.backend.registry import CapsuleModule, maintained_modules

    relu = next(c for m in maintained_modules() for c in m.capsules if c.name == "reference.relu")
    own = profiles.get("checked_cpu").with_capsule_modules(
        [CapsuleModule("mylib", (dataclasses.replace(relu, name="mylib.relu"),))]
    )
    assert own.name == "checked_cpu" and provenance.capsule_table_sha256(own) != digests["checked_cpu"]
    with pytest.raises(TorchLeanError, match=r"unknown profile"):
        provenance.capsule_table_sha256("nope")


def test_weights_and_file_digests(run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    saved = checkpoint.load(run[0])
    oracle = hashlib.sha256()
    for name, value in saved.weights.items():
        oracle.update(name.encode() + b"\n" + f"{value.dtype.str}{value.shape};".encode() + value.tobytes())
    assert provenance.weights_sha256(saved.weights) == oracle.hexdigest()
    assert provenance.file_sha256(run[0]) == hashlib.sha256(run[0].read_bytes()).hexdigest()
    with pytest.raises(TorchLeanError, match=r"cannot read .*missing.npz to digest it"):
        provenance.file_sha256(tmp_path / "missing.npz")
    with pytest.raises(TorchLeanError, match=r"weights_sha256 takes a mapping of names to numpy arrays"):
        provenance.weights_sha256({"a": [1.0]})  # type: ignore[dict-item]


def test_the_environment_block() -> None:
    before = datetime.datetime.now(datetime.UTC).replace(microsecond=0)
    block = provenance.environment(["torchlean", "train", "--dataset", "x y.csv"], "fast_cpu")
    after = datetime.datetime.now(datetime.UTC)
    assert tuple(block) == provenance.ENVIRONMENT_KEYS
    assert block["torchlean"] == dist.version("torchlean") and block["numpy"] == dist.version("numpy")
    assert block["torch"] == dist.version("torch") and block["scikit_learn"] == dist.version("scikit-learn")
    assert (block["python"], block["platform"]) == (platform.python_version(), platform.platform())
    assert block["argv"] == ["torchlean", "train", "--dataset", "x y.csv"]
    stamp = datetime.datetime.strptime(block["utc"], "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=datetime.UTC)
    assert before <= stamp <= after
    assert (block["profile"], block["capsule_table_sha256"]) == (
        "fast_cpu", provenance.capsule_table_sha256("fast_cpu"))
    assert provenance.environment([])["capsule_table_sha256"] is None
    with pytest.raises(TorchLeanError, match=r"argv must be a sequence of strings, got 'train'"):
        provenance.environment("train")
    with pytest.raises(TorchLeanError, match=r"argv must be a sequence of strings"):
        provenance.environment(["train", 3])  # type: ignore[list-item]


# ------------------------------------------------------------------------------- train (F1)


def test_train_records_environment_and_data_digest(run: tuple[Path, Path, list[str]]) -> None:
    saved_path, record_path, argv = run
    record = json.loads(record_path.read_text())
    meta = metadata(saved_path)
    ds = data.load("iris")
    oracle = documented_digest([ds.x_train, ds.y_train, ds.x_test, ds.y_test], ds.class_names)
    assert record["data_sha256"] == oracle == meta["training"]["settings"]["data_sha256"]
    environment = record["environment"]
    assert environment == meta["environment"]  # one block, in the record and the checkpoint
    assert environment["argv"] == ["torchlean", *argv] and environment["profile"] == "checked_cpu"
    assert environment["capsule_table_sha256"] == provenance.capsule_table_sha256("checked_cpu")
    assert record["checkpoint_sha256"] == hashlib.sha256(saved_path.read_bytes()).hexdigest()
    # review159 F6: the weights' digest, inspect's, by the oracle of test_weights_and_file_digests
    oracle_weights = hashlib.sha256()
    for name, value in checkpoint.load(saved_path).weights.items():
        header = f"{value.dtype.str}{value.shape};".encode()
        oracle_weights.update(name.encode() + b"\n" + header + value.tobytes())
    assert record["weights_sha256"] == oracle_weights.hexdigest()
    assert meta["split_seed"] == meta["seed"] == 0
    loaded = checkpoint.load(saved_path)
    assert loaded.environment is not None and loaded.environment["argv"] == ("torchlean", *argv)


# ------------------------------------------------------------------------------- threads (F2)


def test_torch_threads_in_header_checkpoint_and_the_resume_note(capsys: pytest.CaptureFixture[str],
                                                                tmp_path: Path,
                                                                monkeypatch: pytest.MonkeyPatch) -> None:
    first = tmp_path / "first.npz"
    lines = ok(capsys, *SMALL, "--profile", "fast_cpu", "--torch-threads", "1", "--save", str(first))
    assert lines[1].endswith(" seed=0 torch_threads=1")
    assert metadata(first)["torch_threads"] == 1 == checkpoint.load(first).torch_threads
    # the same count: no note (ok() asserts an empty stderr)
    ok(capsys, "--resume", str(first), "--epochs", "3", "--torch-threads", "1", "--save",
       str(tmp_path / "a.npz"))
    # another count, given or from $OMP_NUM_THREADS: a note, and the run goes on
    note = (f"note: the run in {first} ran torch on 1 thread and this one runs it on 2 (--torch-threads, "
            "else $OMP_NUM_THREADS): profile fast_cpu's aten/libtorch capsules reduce in an "
            "implementation-defined order, which may depend on the thread count, so the resumed run may no "
            "longer be bit for bit the uninterrupted one (--torch-threads 1 keeps it)")
    code, out, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3", "--torch-threads", "2",
                         "--save", str(tmp_path / "b.npz"))
    assert code == 0 and err.splitlines() == [note]
    assert out.splitlines()[1].endswith(" torch_threads=2")
    assert metadata(tmp_path / "b.npz")["torch_threads"] == 2
    monkeypatch.setenv("OMP_NUM_THREADS", "2")
    code, _, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3", "--save",
                       str(tmp_path / "c.npz"))
    assert code == 0 and err.splitlines() == [note]
    monkeypatch.delenv("OMP_NUM_THREADS")
    # checked_cpu (reference capsules only) prints no count, and notes only that the option does
    # nothing there (review188 F6), not a change of count on resume
    plain = tmp_path / "plain.npz"
    code, out, err = cli(capsys, "train", *SMALL, "--torch-threads", "1", "--save", str(plain))
    assert code == 0 and err.splitlines() == [_unused_threads(1)], err
    assert "torch_threads" not in out.splitlines()[1]
    code, _, err = cli(capsys, "train", "--resume", str(plain), "--epochs", "3", "--torch-threads", "2",
                       "--save", str(plain))
    assert code == 0 and err.splitlines() == [_unused_threads(2)], err


def _unused_threads(count: int) -> str:
    return (f"note: --torch-threads {count} has no effect: profile checked_cpu runs no torch kernels (the "
            "option sets torch's thread count, which a profile with aten or libtorch capsules uses, e.g. "
            "fast_cpu)")


# ------------------------------------------------------------------------------- predict (F4)


def test_predict_records_the_data_comparison_and_its_notes(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    iris = load_iris()
    lines = ["a,b,c,d,target", *(",".join([*map(str, x), str(y)]) for x, y in zip(iris.data, iris.target,
                                                                              strict=True))]
    csv = tmp_path / "iris.csv"
    csv.write_text("\n".join(lines) + "\n")
    saved = tmp_path / "m.npz"
    ok(capsys, "--dataset", str(csv), "--hidden", "8", "--epochs", "1", "--save", str(saved))
    trained = metadata(saved)["training"]["settings"]["data_sha256"]

    def predict(path: Path, *more: str) -> tuple[dict[str, Any], str]:
        report = tmp_path / "p.json"
        code, _, err = cli(capsys, "predict", str(saved), "--dataset", str(path), "--output",
                           str(tmp_path / "p.csv"), "--report-json", str(report), *more)
        assert code == 0, err
        return json.loads(report.read_text()), err

    record, err = predict(csv, "--split", "test")
    assert (record["data_sha256"], record["trained_data_sha256"], record["data_matches_training"]) == (
        trained, trained, True)
    assert record["notes"] == [] and err == ""
    assert record["checkpoint_sha256"] == hashlib.sha256(saved.read_bytes()).hexdigest()
    assert record["environment"]["argv"][:2] == ["torchlean", "predict"] and "torch_threads" in record
    # one byte changed: the digest differs, the note is on stderr and in the record
    lines[1] = lines[1].replace("5.1", "5.2", 1)
    edited = tmp_path / "edited.csv"
    edited.write_text("\n".join(lines) + "\n")
    loaded = data.load(str(edited), label_column="target")  # the run's settings: seed 0, test fraction 0.2
    oracle = documented_digest([loaded.x_train, loaded.y_train, loaded.x_test, loaded.y_test],
                               loaded.class_names)
    for split in ("test", "all"):
        record, err = predict(edited, "--split", split)
        assert (record["data_sha256"], record["trained_data_sha256"], record["data_matches_training"]) == (
            oracle, trained, False)
        assert record["notes"] == [line for line in err.splitlines() if line.startswith("note: ")]
    assert len(predict(edited, "--split", "test")[0]["notes"]) == 1
    # a checkpoint built in Python records no digest: unknown (null), not false; the digest of the
    # data loaded as the checkpoint describes them is still given (review64 F7): here the run's
    python_built = tmp_path / "py.npz"
    old = checkpoint.load(saved)
    fields = {name: getattr(old, name) for name in Checkpoint.__slots__}
    checkpoint.save(python_built, Checkpoint(**{**fields, "training": None, "data_sha256": None}))
    report = tmp_path / "py.json"
    code, _, err = cli(capsys, "predict", str(python_built), "--dataset", str(csv), "--output",
                       str(tmp_path / "p.csv"), "--report-json", str(report))
    assert code == 0, err
    record = json.loads(report.read_text())
    assert (record["data_sha256"], record["trained_data_sha256"], record["data_matches_training"]) == (
        trained, None, None)
    # review65 F8: one built in Python with data_sha256= records it; predict then compares
    assert old.data_sha256 == trained  # a train --save checkpoint's: its training settings'
    checkpoint.save(python_built, Checkpoint(**{**fields, "training": None}))
    assert checkpoint.load(python_built).data_sha256 == trained
    for source, matches in ((csv, True), (edited, False)):
        code, _, err = cli(capsys, "predict", str(python_built), "--dataset", str(source), "--output",
                           str(tmp_path / "p.csv"), "--report-json", str(report))
        assert code == 0, err
        record = json.loads(report.read_text())
        assert (record["trained_data_sha256"], record["data_matches_training"]) == (trained, matches)


# ------------------------------------------------------------------------------- split seed (F3)


def test_a_python_checkpoint_records_the_split_seed_predict_splits_with(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    ds = data.load("iris", seed=5)
    assert (ds.seed, ds.test_fraction, ds.val_fraction) == (5, 0.2, None)
    layer, input_shape = models.build_model("mlp", ds.n_features, ds.n_classes, hidden=8)
    trainer = Trainer(layer, objective=Objective.CROSS_ENTROPY, input_shape=input_shape,
                      config=RunConfig(optimizer=optim.adam(lr=0.005)))
    trainer.fit(ds.x_train, ds.y_train, epochs=1)
    assert trainer.seed == 0
    common = dict(model="mlp", hidden=8, features=4, outputs=3, dtype="float32", task="classification",
                  feature_mean=ds.feature_mean, feature_scale=ds.feature_scale, target_mean=None,
                  target_scale=None, classes=ds.class_names, dataset="iris", label_column="target",
                  feature_names=ds.feature_names, profile="checked_cpu", execution="eager",
                  seed=trainer.seed, weights=trainer.model.state())
    y = load_iris().target
    rows = np.arange(150)

    def test_rows(path: Path) -> list[int]:
        code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris", "--split", "test")
        assert code == 0, err
        return [int(line.split(",")[0]) for line in out.splitlines()[1:]]

    recorded = tmp_path / "s5.npz"
    checkpoint.save(recorded, Checkpoint(**common, split_seed=ds.seed, test_fraction=ds.test_fraction))
    assert checkpoint.load(recorded).split_seed == 5 and metadata(recorded)["split_seed"] == 5
    seed5 = sorted(train_test_split(rows, test_size=0.2, random_state=5, stratify=y)[1].tolist())
    assert test_rows(recorded) == seed5
    # without split_seed: the trainer's seed, the meaning of a file written before it (seed 0's split)
    unrecorded = tmp_path / "s0.npz"
    checkpoint.save(unrecorded, Checkpoint(**common))
    seed0 = sorted(train_test_split(rows, test_size=0.2, random_state=0, stratify=y)[1].tolist())
    assert checkpoint.load(unrecorded).split_seed == 0 and test_rows(unrecorded) == seed0 != seed5


@pytest.mark.parametrize(("changes", "message"), [
    ({"split_seed": -1}, r"split_seed must be an int in \[0, 2\*\*32\) .*got -1"),
    ({"split_seed": 2**32}, r"split_seed must be an int in \[0, 2\*\*32\) .*got 4294967296"),
    ({"split_seed": True}, r"split_seed must be an int .*got True"),
    ({"split_seed": 1.0}, r"split_seed must be an int .*got 1.0"),
    ({"torch_threads": 0},
     r"torch_threads must be an int in \[1, 1024\] \(--torch-threads's range\) or None, got 0"),
    ({"torch_threads": "2"}, r"torch_threads must be an int in \[1, 1024\] .* got '2'"),
    # review229 F1: a count torch cannot take crashed --resume; one it can, beyond the option's, ran
    ({"torch_threads": 2**31}, r"torch_threads must be an int in \[1, 1024\] .* got 2147483648"),
    ({"torch_threads": 1025}, r"torch_threads must be an int in \[1, 1024\] .* got 1025"),
    ({"environment": ["a"]}, r"environment must be a mapping .*got list"),
    ({"environment": {1: "a"}}, r"environment names must be strings, got 1"),
    ({"environment": {**provenance.environment(["torchlean"]), "argv": [1]}},
     r"environment: 'argv' must be a list of strings, got \(1,\)"),
    ({"data_sha256": "ABC"}, r"data_sha256 must be 64 lowercase hex digits .*got 'ABC'"),
    ({"data_sha256": "0" * 64}, r"data_sha256 '0{64}' and the training settings' data_sha256 '[0-9a-f]{64}' "
     r"differ \(one of them was edited\)"),
    ({"version": 1, "training": None, "data_sha256": None, "split_seed": 3},
     r"a version 1 checkpoint has no split_seed, torch_threads, torch_threads_segments, environment or "
     r"data_sha256 .*split_seed 3 \(seed 0\)"),
    ({"version": 1, "training": None, "data_sha256": None, "torch_threads": 1},
     r"a version 1 checkpoint has no split_seed"),
    ({"version": 1, "training": None}, r"a version 1 checkpoint has no .*data_sha256 '[0-9a-f]{64}'"),
])
def test_checkpoint_refuses_bad_provenance_fields(run: tuple[Path, Path, list[str]], changes: dict[str, Any],
                                                   message: str) -> None:
    saved = checkpoint.load(run[0])
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    with pytest.raises(CheckpointError, match=message):
        Checkpoint(**{**fields, "environment": None, **changes})


def test_a_version_1_checkpoint_still_round_trips(run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    saved = checkpoint.load(run[0])
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    v1 = tmp_path / "v1.npz"
    checkpoint.save(v1, Checkpoint(**{**fields, "version": 1, "training": None, "environment": None,
                                      "torch_threads": None, "data_sha256": None, "capsules": None,
                                      "capsules_order": None}))
    assert not {"split_seed", "torch_threads", "environment", "data_sha256", "capsules"} & set(metadata(v1))
    loaded = checkpoint.load(v1)
    assert (loaded.split_seed, loaded.torch_threads, loaded.environment, loaded.data_sha256) == (
        0, None, None, None)


def test_a_train_checkpoint_keeps_its_data_digest_in_its_training_settings_only(
        run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    """review65 F8: the digest is written once: in the training settings of a ``train --save``
    file, as a metadata field of one built in Python without training state."""
    saved = checkpoint.load(run[0])
    assert saved.training is not None and saved.data_sha256 == saved.training.settings["data_sha256"]
    assert "data_sha256" not in metadata(run[0])
    python_built = tmp_path / "py.npz"
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    checkpoint.save(python_built, Checkpoint(**{**fields, "training": None}))
    assert metadata(python_built)["data_sha256"] == saved.data_sha256
    assert checkpoint.load(python_built).data_sha256 == saved.data_sha256


# ------------------------------------------------------------------------------- old checkpoints


def test_a_checkpoint_without_the_new_fields_loads_predicts_and_resumes(capsys: pytest.CaptureFixture[str],
                                                                        tmp_path: Path) -> None:
    """A release before review62 wrote no split_seed, torch_threads or environment: such a file
    (made by removing them) loads with split_seed = seed, predicts the same split and resumes bit
    for bit, with no thread note (its count is unknown)."""
    new, whole = tmp_path / "new.npz", tmp_path / "whole.npz"
    ok(capsys, *SMALL, "--seed", "7", "--profile", "fast_cpu", "--save", str(new))
    ok(capsys, "--dataset", "iris", "--hidden", "8", "--epochs", "3", "--seed", "7", "--profile", "fast_cpu",
       "--save", str(whole))

    def strip(meta: dict[str, Any]) -> None:
        for name in ("split_seed", "torch_threads", "environment"):
            del meta[name]

    old = rewrite_metadata(new, tmp_path / "old.npz", strip)
    loaded = checkpoint.load(old)
    assert (loaded.seed, loaded.split_seed, loaded.torch_threads, loaded.environment) == (7, 7, None, None)
    outs = [cli(capsys, "predict", str(path), "--dataset", "iris", "--split", "test")[1]
            for path in (new, old)]
    assert outs[0] == outs[1] and len(outs[0].splitlines()) == 31
    resumed = tmp_path / "resumed.npz"
    ok(capsys, "--resume", str(old), "--epochs", "3", "--torch-threads", "2", "--save", str(resumed))
    with np.load(whole) as a, np.load(resumed) as b:
        for name in a.files:
            if name.startswith("weights/"):
                np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    code, out, err = cli(capsys, "inspect", str(old))
    assert code == 0 and err == ""
    assert "environment: unknown (written before torchlean recorded it, or built in Python without it)" in out
    assert "capsule_table: unknown (no digest recorded)" in out.splitlines()


# ------------------------------------------------------------------------------- F6


@pytest.mark.parametrize(("field", "value", "kept"), [
    ("profile", "fast_cpu", "checked_cpu"), ("execution", "typed-graph", "eager"),
])
def test_disagreeing_copies_of_profile_or_execution_are_refused(capsys: pytest.CaptureFixture[str],
                                                                run: tuple[Path, Path, list[str]],
                                                                tmp_path: Path, field: str, value: str,
                                                                kept: str) -> None:
    def top(meta: dict[str, Any]) -> None:
        meta[field] = value

    def settings(meta: dict[str, Any]) -> None:
        meta["training"]["settings"][field] = value

    for name, edit, mine, theirs in (("top", top, value, kept), ("settings", settings, kept, value)):
        path = rewrite_metadata(run[0], tmp_path / f"{name}.npz", edit)
        refusal = (f"{path}: the checkpoint's {field} {mine!r} and its training settings' {field} {theirs!r} "
                   f"differ (one of them was edited): a checkpoint records one {field}, which predict and "
                   "--resume both run under")
        with pytest.raises(CheckpointError) as caught:
            checkpoint.load(path)
        assert str(caught.value) == refusal
        for argv in (["predict", str(path), "--dataset", "iris"],
                     ["train", "--resume", str(path), "--epochs", "3"], ["inspect", str(path)]):
            assert cli(capsys, *argv) == (2, "", f"error: {refusal}\n")


# ------------------------------------------------------------------------------- inspect


def test_inspect_prints_and_records_what_the_checkpoint_says(capsys: pytest.CaptureFixture[str],
                                                             run: tuple[Path, Path, list[str]],
                                                             tmp_path: Path) -> None:
    saved_path, record_path, _ = run
    train_record = json.loads(record_path.read_text())
    report = tmp_path / "i.json"
    code, out, err = cli(capsys, "inspect", str(saved_path), "--dataset", "iris", "--report-json",
                         str(report))
    assert (code, err) == (0, "")
    record = json.loads(report.read_text())
    lines = out.splitlines()
    sha = hashlib.sha256(saved_path.read_bytes()).hexdigest()
    assert lines[:2] == [f"checkpoint: {saved_path}", f"checkpoint_sha256: {sha}"]
    for line in ("split_seed: 0", "test_fraction: 0.2", "profile: checked_cpu",
                 f"data_sha256: {train_record['data_sha256']}", "data_matches: yes",
                 "capsule_table: same as this torchlean's for profile checked_cpu",
                 f"environment.utc: {train_record['environment']['utc']}",
                 "training: 2 of 2 epochs done, random_counter 0, validation history no"):
        assert line in lines
    assert lines[-1] == f"wrote {report}"
    assert (record["checkpoint_sha256"], record["data_matches"], record["environment"]) == (
        sha, True, train_record["environment"])
    assert record["weights_sha256"] == provenance.weights_sha256(checkpoint.load(saved_path).weights)
    # other data: no; a capsule table recorded otherwise: differs
    assert "data_matches: no" in cli(capsys, "inspect", str(saved_path), "--dataset", "wine")[1].splitlines()

    def other_table(meta: dict[str, Any]) -> None:
        meta["environment"]["capsule_table_sha256"] = "0" * 64

    changed = rewrite_metadata(saved_path, tmp_path / "table.npz", other_table)
    out = cli(capsys, "inspect", str(changed))[1]
    assert ("capsule_table: differs from this torchlean's for profile checked_cpu "
            f"({provenance.capsule_table_sha256('checked_cpu')}): the profile may select other capsules now"
            ) in out.splitlines()


def audit_line(row: dict[str, Any]) -> str:
    """``report.audit_line``'s text for a JSON audit row (the oracle of inspect's capsule lines)."""
    return (f"  {row['op']}: {row['capsule']} provider={row['provider']} trust={row['trust']} "
            f"vjp={row['vjp']} reduction={row['reduction']}")


def inspected(capsys: pytest.CaptureFixture[str], path: Path,
              tmp_path: Path) -> tuple[list[str], dict[str, Any]]:
    """``torchlean inspect PATH --report-json``: its lines (but the ``wrote`` line) and its record."""
    report = tmp_path / "inspect.json"
    code, out, err = cli(capsys, "inspect", str(path), "--report-json", str(report))
    assert (code, err) == (0, ""), err
    return out.splitlines()[:-1], json.loads(report.read_text())


def test_inspect_prints_the_recorded_capsules_and_that_this_torchlean_holds_them(
        capsys: pytest.CaptureFixture[str], run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    """review108 F6: the capsules of the run (train --report-json's), their order, one audit line each,
    and whether this torchlean's table for the profile holds them with the same labels."""
    saved_path, record_path, _ = run
    capsules = json.loads(record_path.read_text())["capsules"]
    lines, record = inspected(capsys, saved_path, tmp_path)
    at = lines.index(f"capsules: {len(capsules)} (first-use order)")
    assert lines[at - 1].startswith("capsule_table: ")
    assert lines[at + 1: at + 1 + len(capsules)] == [audit_line(row) for row in capsules]
    assert lines[at + 1 + len(capsules)] == "capsules_match: same as this torchlean's for profile checked_cpu"
    assert (record["capsules_order"], record["capsules"]) == ("first-use", capsules)
    assert (record["capsules_match"], record["capsules_differences"]) == (True, [])


def test_inspect_says_which_recorded_capsule_differs_from_this_torchleans(
        capsys: pytest.CaptureFixture[str], run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    """A recorded label edited to another valid label (written through checkpoint.save), a capsule
    this torchlean's table does not hold (its name escaped as inspect escapes texts): differs, naming
    each; more than three differences are counted."""
    saved = checkpoint.load(run[0])
    rows = saved.capsules_json()
    assert rows is not None and rows[0]["capsule"] == "reference.linear" and rows[0]["trust"] == "checked"
    rows[0]["trust"] = "trusted-external"
    rows[1]["capsule"] = "reference.relu\n"
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    edited = tmp_path / "edited.npz"
    checkpoint.save(edited, Checkpoint(**{**fields, "capsules": rows}))
    lines, record = inspected(capsys, edited, tmp_path)
    relu = "  relu: 'reference.relu\\n' provider=reference trust=checked vjp=torchlean-tape reduction=n/a"
    assert relu in lines
    assert ("capsules_match: differs from this torchlean's for profile checked_cpu (reference.linear "
            "(linear): trust trusted-external, now checked; 'reference.relu\\n' (relu): not in its table)"
            ) in lines
    assert record["capsules_match"] is False
    assert record["capsules_differences"] == [
        {"op": "linear", "capsule": "reference.linear", "segment": None, "now": {"trust": "checked"}},
        {"op": "relu", "capsule": "reference.relu\n", "segment": None, "now": None},
    ]
    for row in rows[2:]:
        row["reduction"] = "implementation-defined" if row["reduction"] != "implementation-defined" else "n/a"
    checkpoint.save(edited, Checkpoint(**{**fields, "capsules": rows}))
    lines, record = inspected(capsys, edited, tmp_path)
    match = next(line for line in lines if line.startswith("capsules_match: "))
    assert match.endswith("; ... (5 capsules differ; --report-json has them all))")
    assert len(record["capsules_differences"]) == 5


def test_inspect_of_a_checkpoint_without_capsules_says_unknown(
        capsys: pytest.CaptureFixture[str], run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    def strip(meta: dict[str, Any]) -> None:
        del meta["capsules"], meta["capsules_order"]

    old = rewrite_metadata(run[0], tmp_path / "old.npz", strip)
    lines, record = inspected(capsys, old, tmp_path)
    assert ("capsules: unknown (written before torchlean recorded them, or built in Python without them)"
            in lines)
    assert "capsules_match: unknown (no capsules recorded)" in lines
    keys = ("capsules_order", "capsules", "capsules_match", "capsules_differences")
    assert [record[key] for key in keys] == [None, None, None, None]


def test_inspect_refuses_bad_input_with_one_line(capsys: pytest.CaptureFixture[str],
                                                 run: tuple[Path, Path, list[str]], tmp_path: Path) -> None:
    text = tmp_path / "notes.txt"
    text.write_text("not a checkpoint\n")
    for argv, refusal in (
        ([str(tmp_path / "missing.npz")], f"checkpoint file not found: {tmp_path / 'missing.npz'}"),
        ([str(text)], f"{text}: not a numpy .npz archive (not a zip file)"),
        ([str(tmp_path)], f"checkpoint {tmp_path} is a directory, not a file"),
        ([str(run[0]), "--report-json", str(run[0])],
         f"--report-json {run[0]} is the checkpoint {run[0]}: writing it would destroy that input; give "
         "another path"),
        ([str(run[0]), "--dataset", "nosuch"],
         "unknown dataset nosuch (known: digits | iris | breast_cancer | wine | diabetes, or a path to a CSV "
         "file)"),
    ):
        code, out, err = cli(capsys, "inspect", *argv)
        assert (code, out, err) == (2, "", f"error: {refusal}\n")
    code, out, err = cli(capsys, "inspect")
    assert code == 2 and out == "" and len(err.splitlines()) <= 2 and "CHECKPOINT" in err
