"""review88 F7, F8: ``--resume``'s word on a ``--label-column`` name with blanks or none (quoted as
the data's messages quote names), and on a run that read standard input (``inspect`` calls it
``-``; a resume without ``--dataset`` says it reads standard input again, and refuses a terminal,
where it waited for typed rows in silence). Oracles: the messages as the README words names and
standard input, and a pseudo-terminal (``os.openpty``) as standard input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from cli_runs import cli, ok

SMALL = "a,b,label\n1,2,x\n3,4,y\n5,6,x\n7,8,y\n9,1,x\n2,3,y\n4,5,x\n6,7,y\n8,9,x\n1,1,y\n"


def _torchlean(*argv: str, **kwargs: object) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "torchlean", *argv], capture_output=True, text=True,
                          check=False, timeout=300, **kwargs)  # type: ignore[call-overload]


@pytest.mark.parametrize(("given", "shown"), [("", "''"), (" label", "' label'"), ("label ", "'label '")])
def test_a_label_column_name_with_blanks_or_none_is_quoted_under_resume(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, given: str, shown: str
) -> None:
    """It read ``--label-column  differs`` and ``--label-column  label differs from ... label``."""
    csv, part = tmp_path / "s.csv", tmp_path / "s.npz"
    csv.write_text(SMALL)
    ok(capsys, "--dataset", str(csv), "--epochs", "1", "--save", str(part))
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "2", "--label-column", given)
    assert (code, out) == (2, "")
    assert err == (
        f"error: --resume {part} continues the run with the checkpoint's settings; --label-column {shown} "
        "differs from the checkpoint's run's label column label (leave out the option, or train a new run "
        "without --resume)\n"
    )


def test_a_run_on_standard_input_is_resumed_from_standard_input_with_a_note(tmp_path: Path) -> None:
    part = tmp_path / "stdin.npz"
    done = _torchlean("train", "--dataset", "-", "--epochs", "1", "--save", str(part), input=SMALL)
    assert done.returncode == 0, done.stderr
    shown = _torchlean("inspect", str(part), "--report-json", "-")
    record = json.loads(shown.stdout)
    assert record["dataset"] == "-" and record["training"]["settings"]["dataset"] == "-"
    note = (f"note: checkpoint {part}'s run read its data from standard input (-): --resume reads standard "
            "input again (the data digest checks that they are the run's)\n")
    again = _torchlean("train", "--resume", str(part), "--epochs", "2", input=SMALL)
    assert again.returncode == 0 and again.stderr.startswith(note), again.stderr
    empty = _torchlean("train", "--resume", str(part), "--epochs", "2", stdin=subprocess.DEVNULL)
    assert empty.returncode == 2
    assert empty.stderr == note + "error: standard input (-): the file has no rows\n"


def test_resuming_a_standard_input_run_on_a_terminal_is_refused_not_left_waiting(tmp_path: Path) -> None:
    part = tmp_path / "stdin.npz"
    assert _torchlean("train", "--dataset", "-", "--epochs", "1", "--save", str(part),
                      input=SMALL).returncode == 0
    leader, follower = os.openpty()
    try:
        done = subprocess.run([sys.executable, "-m", "torchlean", "train", "--resume", str(part), "--epochs",
                               "2"], stdin=follower, capture_output=True, text=True, timeout=120, check=False)
    finally:
        os.close(leader)
        os.close(follower)
    assert (done.returncode, done.stdout) == (2, "")
    assert done.stderr == (
        f"error: checkpoint {part}'s run read its data from standard input (-), which --resume reads again "
        f"without --dataset, and standard input is a terminal here: pipe the run's data in (torchlean train "
        f"--resume {part} < FILE) or give --dataset FILE\n"
    )
