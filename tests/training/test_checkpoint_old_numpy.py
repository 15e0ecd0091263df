"""Checkpoints and numpy < 2.1 (review60 F2).

``np.savez`` has an ``allow_pickle`` keyword only from numpy 2.1 on; before, every keyword is an
archive entry, so ``save``'s former ``allow_pickle=False`` was written as an entry named
``allow_pickle`` that ``load`` refused. ``save`` now passes only arrays (never an object array,
the one kind ``np.savez`` pickles), and ``load`` ignores a 0-d bool ``allow_pickle`` entry in the
files already written so. The archives of numpy < 2.1 are built here by hand (``zipfile`` and
``np.lib.format``), since the installed numpy would take the keyword.
"""

from __future__ import annotations

import io
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torchlean import checkpoint
from torchlean.checkpoint import Checkpoint, CheckpointError
from torchlean.cli import main


@pytest.fixture(scope="module")
def iris_checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris checkpoint from ``torchlean train --save`` (1 epoch, hidden 4)."""
    path = tmp_path_factory.mktemp("ckpt") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


def with_entry(source: Path, target: Path, value: np.ndarray[Any, Any]) -> Path:
    """A copy of the archive ``source`` with an ``allow_pickle`` entry holding ``value`` first, as
    numpy 1.26-2.0 wrote ``np.savez(handle, allow_pickle=False, **arrays)``."""
    data = io.BytesIO()
    np.lib.format.write_array(data, value, allow_pickle=False)
    with zipfile.ZipFile(source) as old, zipfile.ZipFile(target, "w") as new:
        new.writestr("allow_pickle.npy", data.getvalue())
        for member in old.infolist():
            new.writestr(member, old.read(member))
    return target


def assert_same(a: Checkpoint, b: Checkpoint) -> None:
    for name in Checkpoint.__slots__:
        x, y = getattr(a, name), getattr(b, name)
        if isinstance(x, np.ndarray):
            np.testing.assert_array_equal(x, y, strict=True)
        elif name == "weights":
            assert list(x) == list(y)
            for key in x:
                np.testing.assert_array_equal(x[key], y[key], strict=True)
        elif name == "training":
            assert (x.epochs_done, x.random_counter, dict(x.settings)) == (
                y.epochs_done, y.random_counter, dict(y.settings)
            )
            assert list(x.optimizer) == list(y.optimizer)
        else:
            assert x == y, name


def test_save_passes_np_savez_arrays_only(
    tmp_path: Path, iris_checkpoint: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every keyword ``save`` gives ``np.savez`` is an entry of the written archive (as numpy < 2.1
    reads keywords), and every one is a plain array."""
    passed: list[str] = []
    real = np.savez

    def savez(file: Any, *args: Any, **kwds: Any) -> None:
        passed.extend(kwds)
        assert not args
        assert all(isinstance(value, np.ndarray) and value.dtype.kind != "O" for value in kwds.values())
        real(file, **kwds)

    monkeypatch.setattr(np, "savez", savez)
    copy = tmp_path / "copy.npz"
    checkpoint.save(copy, checkpoint.load(iris_checkpoint))
    with zipfile.ZipFile(copy) as archive:
        written = [name.removesuffix(".npy") for name in archive.namelist()]
    assert "allow_pickle" not in passed
    assert passed == written
    assert passed[0] == "metadata" and any(name.startswith("weights/") for name in passed)


@pytest.mark.parametrize("value", [np.array(False), np.array(True)], ids=["False", "True"])
def test_a_file_written_under_numpy_before_2_1_loads(
    tmp_path: Path, iris_checkpoint: Path, value: np.ndarray[Any, Any], capsys: pytest.CaptureFixture[str]
) -> None:
    old = with_entry(iris_checkpoint, tmp_path / "old.npz", value)
    with np.load(old) as archive:
        assert archive.files[0] == "allow_pickle"  # what numpy 1.26 wrote
    assert_same(checkpoint.load(old), checkpoint.load(iris_checkpoint))
    assert main(["predict", str(iris_checkpoint), "--dataset", "iris"]) == 0
    expected = capsys.readouterr().out
    assert main(["predict", str(old), "--dataset", "iris"]) == 0
    assert capsys.readouterr().out == expected
    # and written back without it
    again = tmp_path / "again.npz"
    checkpoint.save(again, checkpoint.load(old))
    with np.load(again) as archive:
        assert "allow_pickle" not in archive.files


@pytest.mark.parametrize(
    "value",
    [np.array([False]), np.array(0), np.array("False"), np.zeros((1, 1), dtype=bool)],
    ids=["1-d bool", "0-d int", "0-d text", "2-d bool"],
)
def test_another_allow_pickle_entry_is_still_refused(
    tmp_path: Path, iris_checkpoint: Path, value: np.ndarray[Any, Any]
) -> None:
    odd = with_entry(iris_checkpoint, tmp_path / "odd.npz", value)
    with pytest.raises(CheckpointError, match=r"odd\.npz: unexpected archive entries: allow_pickle$"):
        checkpoint.load(odd)


def test_save_refuses_an_array_np_savez_would_pickle(tmp_path: Path, iris_checkpoint: Path) -> None:
    """Unreachable through :class:`Checkpoint`'s own checks: an object array set behind them."""
    loaded = checkpoint.load(iris_checkpoint)
    features = loaded.features
    object.__setattr__(loaded, "feature_scale", np.array([1.0] * features, dtype=object))
    target = tmp_path / "never.npz"
    with pytest.raises(CheckpointError) as info:
        checkpoint.save(target, loaded)
    assert str(info.value) == (
        f"cannot write checkpoint {target}: entry 'feature_scale' is object, not a bool, integer, "
        "float or text array (np.savez would pickle it)"
    )
    assert list(tmp_path.iterdir()) == []
