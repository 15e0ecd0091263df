"""review133 F1: ``train --resume`` from another directory whose file of the recorded relative
name fails to load. Oracles: the messages as the review and ``check_data``'s directories word them,
and the same file's refusal read without another directory."""

from __future__ import annotations

from pathlib import Path

import pytest
from cli_runs import cli, ok

SMALL = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n4,5,x\n6,7,y\n8,9,x\n1,1,y\n"
"""Two number features and a text label in the last column (review86's s.csv)."""


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    """The one-line error of ``torchlean ARGV``, which must be refused (exit 2, nothing on stdout)."""
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, ""), err
    assert err.startswith("error: ") and err.endswith("\n") and err.count("\n") == 1, err
    return err[len("error: "):-1]


# ------------------------------------------------------------------------------------------- F1


@pytest.mark.parametrize("local", [
    "a,b,label\n1,2,x\n",  # one row, one class
    "",  # no rows
    "a,b,label\n1,2,x\n3,4,y\n",  # the split leaves the train rows one class
    "a\n1\n2\n",  # no label column beside the features
])
def test_a_local_file_of_the_recorded_name_that_fails_to_load_names_both_directories(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch, local: str
) -> None:
    run, here = tmp_path / "d", tmp_path / "here"
    run.mkdir()
    here.mkdir()
    (run / "cls.csv").write_text(SMALL)
    monkeypatch.chdir(run)
    ok(capsys, "--dataset", "cls.csv", "--epochs", "1", "--save", str(tmp_path / "m.npz"))
    monkeypatch.chdir(here)
    (here / "cls.csv").write_text(local)
    # the oracle: the same file's refusal where no other directory is involved (--dataset given)
    plain = _refused(capsys, "train", "--resume", "../m.npz", "--epochs", "2", "--dataset", "cls.csv")
    assert "directory" not in plain
    assert _refused(capsys, "train", "--resume", "../m.npz", "--epochs", "2") == (
        f"the recorded dataset path cls.csv (read in this directory, {here}; its run read it in its working "
        f"directory {run}, where a file of that name is: to resume with it, give --dataset "
        f"{run / 'cls.csv'}) is refused: {plain}"
    )
    # the run's file gone too: the run's directory is still named, without the --dataset to give
    (run / "cls.csv").unlink()
    assert _refused(capsys, "train", "--resume", "../m.npz", "--epochs", "2") == (
        f"the recorded dataset path cls.csv (read in this directory, {here}; its run read it in its working "
        f"directory {run}) is refused: {plain}"
    )
    # in the run's own directory, the file's own refusal alone
    (run / "cls.csv").write_text(local)
    monkeypatch.chdir(run)
    assert _refused(capsys, "train", "--resume", str(tmp_path / "m.npz"), "--epochs", "2") == plain
