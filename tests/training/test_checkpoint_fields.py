"""Checkpoint fields, the predict CLI's layouts and notes: the gaps review21's mutation testing
found (each test failed on its mutant). Oracles: the documented rules and messages."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean import checkpoint as _ckpt
from torchlean.checkpoint import Checkpoint, CheckpointError


@pytest.fixture(scope="module")
def _iris(tmp_path_factory):
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("r21") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def _diabetes(tmp_path_factory):
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("r21") / "diabetes.npz"
    assert (
        main(["train", "--dataset", "diabetes", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    )
    return path


def _fields(saved, **changes):
    values = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    values.update(changes)
    return values


def test_a_newer_format_is_named_as_such_before_its_fields_are_read(_iris, tmp_path):
    # review21 mut CK2; oracle: load's documented Raises ("an unsupported version"): a version-3 file that
    # also writes a field version 2 does not know is refused for its version, not for the field
    import json
    import zipfile

    src = zipfile.ZipFile(_iris)
    arrays = {name[:-4]: np.load(src.open(name)) for name in src.namelist()}
    meta = json.loads(str(arrays["metadata"][()]))
    meta["version"] = 3
    meta["calibration"] = "platt"  # a field of the imagined version 3
    arrays["metadata"] = np.array(json.dumps(meta))
    path = tmp_path / "v3.npz"
    np.savez(path, **arrays)
    with pytest.raises(CheckpointError, match=r"unsupported checkpoint version 3 \(supported: 1, 2\)"):
        _ckpt.load(path)


def test_sizes_must_be_at_least_one(_iris):
    # review21 mut CK3; oracle: Checkpoint's documented field rule (``hidden``, ``features``, ``outputs``:
    # ints >= 1)
    with pytest.raises(CheckpointError, match=r"^hidden must be an int >= 1, got 0$"):
        Checkpoint(**_fields(_ckpt.load(_iris), hidden=0))


def test_a_classifier_has_at_least_two_classes(_iris):
    # review21 mut CK4; oracle: the documented rule (classification: ``outputs`` class logits, two or more)
    saved = _ckpt.load(_iris)
    with pytest.raises(
        CheckpointError, match=r"a classifier needs one class per output unit \(1\), at least two"
    ):
        Checkpoint(**_fields(saved, outputs=1, classes=("only",), weights={}))


def test_a_regression_target_scale_of_zero_is_refused(_diabetes):
    # review21 mut CK5; oracle: the documented rule (target_scale > 0)
    with pytest.raises(CheckpointError, match=r"target_scale must be > 0, got 0.0"):
        Checkpoint(**_fields(_ckpt.load(_diabetes), target_scale=0.0))


def test_numpy_float_target_statistics_are_stored_as_floats(_diabetes, tmp_path):
    # review179 minor: np.float32(0.5) was refused ("must be a finite float") where dropout takes it
    saved = _ckpt.load(_diabetes)
    made = Checkpoint(**_fields(saved, target_mean=np.float32(0.5), target_scale=np.float64(2.0)))
    assert (type(made.target_mean), made.target_mean) == (float, 0.5)
    assert (type(made.target_scale), made.target_scale) == (float, 2.0)
    _ckpt.save(tmp_path / "again.npz", made)
    assert _ckpt.load(tmp_path / "again.npz").target_mean == 0.5
    with pytest.raises(CheckpointError, match=r"target_mean must be a finite float for regression, got nan"):
        Checkpoint(**_fields(saved, target_mean=np.float32("nan")))


@pytest.mark.parametrize("shape", [(4,), (2, 3, 4)])
def test_standardise_takes_rows_of_features_only(_iris, shape):
    # review21 mut CK10; oracle: standardise's documented Raises (an array that is not [rows, features])
    saved = _ckpt.load(_iris)
    assert saved.features == 4
    with pytest.raises(CheckpointError, match=r"the model takes 4 features per row, got an array of shape"):
        saved.standardise(np.zeros(shape))


def _write_repeated(tmp_path):
    rng = np.random.default_rng(0)
    rows = ["a,a,c,y"] + [
        f"{a:.3f},{b:.3f},{c:.3f},{i % 2}" for i, (a, b, c) in enumerate(rng.random((40, 3)))
    ]
    (tmp_path / "rep.csv").write_text("\n".join(rows) + "\n")
    rows = ["a,a,c"] + [f"{a:.3f},{b:.3f},{c:.3f}" for a, b, c in rng.random((5, 3))]
    (tmp_path / "rep_nolabel.csv").write_text("\n".join(rows) + "\n")


def test_a_header_that_is_the_trained_features_is_read_by_position_even_with_repeated_names(tmp_path, capsys):
    # review21 mut PR1; oracle: predict's documented rule ("Such a file is read by position even when names
    # repeat
    # (a,a,c,y)"), here without the label column: one prediction per row
    from torchlean.cli import main

    _write_repeated(tmp_path)
    assert (
        main(
            [
                "train",
                "--dataset",
                str(tmp_path / "rep.csv"),
                "--epochs",
                "1",
                "--save",
                str(tmp_path / "rep.npz"),
            ]
        )
        == 0
    )
    capsys.readouterr()
    assert main(["predict", str(tmp_path / "rep.npz"), "--dataset", str(tmp_path / "rep_nolabel.csv")]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (
        lines[0] == "prediction" and len(lines[1:6]) == 5 and all(cell in ("0", "1") for cell in lines[1:6])
    )


def test_a_seed_of_2_to_the_32_has_no_train_split(_iris, tmp_path, capsys):
    # review21 mut PR2; oracle: the documented refusal (train's seeds are below 2**32, so 2**32 itself made
    # no split)
    from torchlean.cli import main

    path = tmp_path / "seed.npz"
    # split with seed; no training state, whose settings record the split of seed 0 (review115 F1)
    _ckpt.save(path, Checkpoint(**_fields(_ckpt.load(_iris), seed=2**32, split_seed=None, training=None)))
    assert main(["predict", str(path), "--dataset", "iris", "--split", "test"]) == 2
    assert "which no torchlean train split used (its seeds are below 2**32)" in capsys.readouterr().err


def test_no_other_data_note_when_predicting_on_the_shipped_dataset_trained_on(_iris, capsys):
    # review21 mut PR4; oracle: the documented note appears only when --dataset is not the data trained on
    from torchlean.cli import main

    assert main(["predict", str(_iris), "--dataset", "iris", "--split", "test"]) == 0
    assert "was trained on" not in capsys.readouterr().err


@pytest.mark.parametrize("value", ["checked_cpu", None])
def test_profile_name_of_something_that_is_no_profile_is_a_checkpoint_error(value: object) -> None:
    """review73 F6: a profile's name (what ``Checkpoint(profile=...)`` takes) or None raised a bare
    AttributeError; a shipped profile gives its name."""
    from torchlean import profiles

    with pytest.raises(CheckpointError, match=f"profile_name takes a BackendProfile .*got {value!r}"):
        _ckpt.profile_name(value)  # type: ignore[arg-type]
    assert _ckpt.profile_name(profiles.get("fast_cpu")) == "fast_cpu"


def test_a_checkpoint_pickles_and_deep_copies_with_its_training_state(tmp_path) -> None:
    """review77 F6: ``pickle.dumps`` and ``copy.deepcopy`` of a checkpoint raised "cannot pickle
    'mappingproxy' object" (a spawn worker could not be handed one). Rebuilt from its fields and
    checked again; oracle: every array and field of the original."""
    import copy
    import pickle

    from torchlean.cli import main

    path = tmp_path / "m.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    saved = _ckpt.load(path)
    assert saved.training is not None
    for other in (pickle.loads(pickle.dumps(saved)), copy.deepcopy(saved)):
        assert other.training is not None and other is not saved
        for name, value in saved.weights.items():
            np.testing.assert_array_equal(other.weights[name], value, strict=True)
        for name, value in saved.training.optimizer.items():
            np.testing.assert_array_equal(other.training.optimizer[name], value, strict=True)
        assert dict(other.training.settings) == dict(saved.training.settings)
        assert (other.dataset, other.classes, other.environment) == (saved.dataset, saved.classes,
                                                                     saved.environment)
        with pytest.raises(TypeError):
            other.weights["0.bias"] = np.zeros(4)  # still read-only
