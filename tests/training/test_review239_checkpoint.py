"""review239 F11: ``checkpoint.save`` and ``provenance.file_sha256`` name a path with a NUL byte or
an over-long name, and why, with their own errors (a bare ``ValueError``/``OSError`` before);
F6/F7: ``Checkpoint``'s ``dtype``, ``task`` and ``capsules_order`` refuse an array, a tensor or a
number before comparing it (numpy's ``truth value ... is ambiguous`` and torch's dtype
``ValueError`` before; a 0-d string array was even stored as the task)."""

from __future__ import annotations

import dataclasses
import errno
from pathlib import Path

import numpy as np
import pytest
import torch

from torchlean import checkpoint, provenance
from torchlean._atomic import replace_file
from torchlean.backend.errors import TorchLeanError
from torchlean.checkpoint import Checkpoint, CheckpointError
from torchlean.cli import main

NUL = "the path holds a NUL byte, which no file name can"


@pytest.fixture(scope="module")
def saved(tmp_path_factory: pytest.TempPathFactory) -> Checkpoint:
    """An iris checkpoint from ``torchlean train --save`` (1 epoch, hidden 4), loaded."""
    path = tmp_path_factory.mktemp("ckpt") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return checkpoint.load(path)


def test_save_names_a_path_with_a_nul_byte(saved: Checkpoint, tmp_path: Path) -> None:
    given = f"{tmp_path}/a\0b.npz"
    for path in (given, Path(given)):
        with pytest.raises(CheckpointError) as info:
            checkpoint.save(path, saved)
        assert str(info.value) == f"cannot write checkpoint $'{tmp_path}/a\\x00b.npz': {NUL}"
    assert list(tmp_path.iterdir()) == []


def test_save_names_an_over_long_name_and_path(saved: Checkpoint, tmp_path: Path) -> None:
    name = f"{tmp_path}/{'x' * 300}.npz"
    with pytest.raises(CheckpointError) as info:
        checkpoint.save(name, saved)
    assert str(info.value) == f"cannot write checkpoint {name}: File name too long"
    deep = f"{tmp_path}/{'d/' * 3000}x.npz"
    with pytest.raises(CheckpointError) as info:
        checkpoint.save(deep, saved)
    assert str(info.value) == f"cannot write checkpoint {deep}: File name too long"
    assert list(tmp_path.iterdir()) == []


def test_save_shows_a_path_that_would_split_the_line_as_load_does(
    saved: Checkpoint, tmp_path: Path
) -> None:
    with pytest.raises(CheckpointError) as info:
        checkpoint.save(f"{tmp_path}/a\nb/x.npz", saved)
    shown = f"$'{tmp_path}/a\\nb/x.npz'"
    assert str(info.value) == f"cannot write checkpoint {shown}: No such file or directory"


def test_save_still_writes_a_name_the_file_system_takes(saved: Checkpoint, tmp_path: Path) -> None:
    path = tmp_path / ("y" * 251 + ".npz")  # 255 bytes: the temporary file's name is cut to fit
    digest = checkpoint.save(path, saved)
    assert digest == provenance.file_sha256(path)


def test_replace_file_raises_an_os_error_for_a_nul_byte(tmp_path: Path) -> None:
    with pytest.raises(OSError) as info:
        replace_file(tmp_path / "a\0b", lambda handle: None)
    assert (info.value.errno, info.value.strerror) == (errno.EINVAL, NUL)
    assert list(tmp_path.iterdir()) == []


def test_file_sha256_names_a_path_with_a_nul_byte(tmp_path: Path) -> None:
    for path in (f"{tmp_path}/a\0b", Path(f"{tmp_path}/a\0b")):
        with pytest.raises(TorchLeanError) as info:
            provenance.file_sha256(path)
        assert str(info.value) == f"cannot read $'{tmp_path}/a\\x00b' to digest it: {NUL}"


ACCEPTED_DTYPE = "(accepted: 'float32' or 'float64', or a numpy dtype or scalar type naming one)"


@pytest.mark.parametrize(("value", "shown"), [
    (torch.zeros(1), "tensor([0.]) of type Tensor"),
    (np.array(["float32", "x"]), "array(['float32', 'x'], dtype='<U7') of type ndarray"),
    (np.array("float32"), "array('float32', dtype='<U7') of type ndarray"),
    (np.float32(1.0), "np.float32(1.0) of type float32"),  # a value, not a dtype: was read as float32
    (torch.float32, "torch.float32 of type dtype"),
])
def test_checkpoint_dtype_is_type_checked_first(saved: Checkpoint, value: object, shown: str) -> None:
    with pytest.raises(CheckpointError) as info:
        dataclasses.replace(saved, dtype=value)
    assert str(info.value) == f"dtype must be float32 or float64, got {shown} {ACCEPTED_DTYPE}"


def test_checkpoint_dtype_still_takes_numpy_spellings(saved: Checkpoint) -> None:
    for spelling in (np.float32, np.dtype("float32"), "float32"):
        assert dataclasses.replace(saved, dtype=spelling).dtype == "float32"


@pytest.mark.parametrize(("value", "shown"), [
    (np.array(["classification", "x"]), "array(['classification', 'x'], dtype='<U14') of type ndarray"),
    (np.array("classification"), "array('classification', dtype='<U14') of type ndarray"),  # was stored
    (np.broadcast_to(np.str_("a"), (2**40,)),  # one line (numpy's line break folded), cut at 60 characters
     "array(['a', 'a', 'a', ..., 'a', 'a', 'a'], shape=(1099511... of type ndarray"),
    (None, "None of type NoneType"),
])
def test_checkpoint_task_is_type_checked_first(saved: Checkpoint, value: object, shown: str) -> None:
    with pytest.raises(CheckpointError) as info:
        dataclasses.replace(saved, task=value)
    assert str(info.value) == f"task must be classification or regression (a string), got {shown}"


@pytest.mark.parametrize(("value", "shown"), [
    (np.array(["first-use", "graph-plan"]),
     "array(['first-use', 'graph-plan'], dtype='<U10') of type ndarray"),
    (np.zeros(3), "array([0., 0., 0.]) of type ndarray"),
    (np.array("first-use"), "array('first-use', dtype='<U9') of type ndarray"),
])
def test_checkpoint_capsules_order_is_type_checked_first(
    saved: Checkpoint, value: object, shown: str
) -> None:
    assert saved.capsules is not None  # a run's checkpoint records its capsules
    with pytest.raises(CheckpointError) as info:
        dataclasses.replace(saved, capsules_order=value)
    accepted = "capsules_order must be one of first-use | graph-plan (a string) or None"
    assert str(info.value) == f"{accepted}, got {shown}"


def test_a_path_object_returning_bytes_is_refused_by_save_and_load(
    saved: Checkpoint, tmp_path: Path
) -> None:
    """review241 F10: save took it, load raised Path's bare TypeError."""
    import os

    class BytesPath(os.PathLike[bytes]):
        def __fspath__(self) -> bytes:
            return os.fsencode(tmp_path / "m.npz")

    refusal = (
        "a checkpoint path must be a str or an os.PathLike returning str, got a BytesPath returning bytes"
    )
    for call in (lambda: checkpoint.load(BytesPath()), lambda: checkpoint.save(BytesPath(), saved)):
        with pytest.raises(CheckpointError) as caught:
            call()  # type: ignore[arg-type]
        assert str(caught.value) == refusal
    assert not (tmp_path / "m.npz").exists()
