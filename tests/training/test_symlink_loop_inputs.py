"""review128 F4: an input path that is a loop of symbolic links was refused as "file not found"
(``Path.exists()`` reads the loop as no file), although ``ls`` lists it; it is now refused with
the system's reason, as ``--save`` already was. A link to a missing file is still not found."""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from cli_runs import cli

from torchlean import checkpoint, data

_LOOP = "Too many levels of symbolic links"


@pytest.fixture
def folder(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]) -> Path:
    monkeypatch.chdir(tmp_path)
    Path("loop1").symlink_to("loop2")
    Path("loop2").symlink_to("loop1")
    Path("dangling.npz").symlink_to("gone.npz")
    train = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1"]
    assert cli(capsys, *train, "--save", "m.npz")[0] == 0
    return tmp_path


@pytest.mark.parametrize(("argv", "message"), [
    (["predict", "m.npz", "--dataset", "loop1"], f"loop1: cannot read the file: {_LOOP}"),
    (["predict", "loop1", "--dataset", "iris"], f"cannot read checkpoint loop1: {_LOOP}"),
    (["inspect", "m.npz", "--dataset", "./loop1"], f"./loop1: cannot read the file: {_LOOP}"),
    (["inspect", "loop1"], f"cannot read checkpoint loop1: {_LOOP}"),
    (["train", "--resume", "loop1"], f"cannot read checkpoint loop1: {_LOOP}"),
    (["train", "--dataset", "loop1", "--epochs", "1"], f"loop1: cannot read the file: {_LOOP}"),
    (["predict", "dangling.npz", "--dataset", "iris"], "checkpoint file not found: dangling.npz"),
])
def test_a_link_loop_is_named_as_such_on_the_command_line(
        capsys: pytest.CaptureFixture[str], folder: Path, argv: list[str], message: str) -> None:
    assert cli(capsys, *argv) == (2, "", f"error: {message}\n")


def test_a_link_loop_is_named_as_such_in_python(folder: Path) -> None:
    with pytest.raises(checkpoint.CheckpointError, match=f"^cannot read checkpoint loop1: {_LOOP}$"):
        checkpoint.load("loop1")
    with pytest.raises(data.DataError, match=f"^loop1: cannot read the file: {_LOOP}$"):
        data.load("loop1")
    named = re.escape(str(folder / "loop2"))
    with pytest.raises(data.DataError, match=f"^{named}: cannot read the file: {_LOOP}$"):
        data.load(folder / "loop2")
    with pytest.raises(data.DataError, match=r"^dataset file not found: gone\.csv$"):
        data.load("gone.csv")


@pytest.mark.parametrize("name", ["loop1", "self"])
def test_saving_through_a_link_loop_is_refused_and_the_links_stay(folder: Path, name: str) -> None:
    """review241 F10: a loop at the target's last component resolved to the link itself, which
    ``checkpoint.save`` replaced with a regular file (a loop in a parent folder was refused)."""
    Path("self").symlink_to("self")
    model = checkpoint.load("m.npz")
    with pytest.raises(checkpoint.CheckpointError, match=f"^cannot write checkpoint {name}: {_LOOP}$"):
        checkpoint.save(name, model)
    assert Path(name).is_symlink() and Path("loop2").is_symlink()


@pytest.mark.parametrize("option", ["--report-json", "--save"])
def test_a_command_writing_through_a_link_loop_is_refused_before_it_trains(
        capsys: pytest.CaptureFixture[str], folder: Path, option: str) -> None:
    """A regression pin (review242 F9): the command line refused this before review241 F10 (its
    probe opens the path, which fails with ELOOP); ``checkpoint.save`` did not (the test above)."""
    train = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1"]
    assert cli(capsys, *train, option, "loop1") == (2, "", f"error: cannot write {option} loop1: {_LOOP}\n")
    assert Path("loop1").is_symlink()
