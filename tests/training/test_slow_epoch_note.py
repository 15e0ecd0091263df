"""review68 F5: off a terminal (no progress bar), ``train`` says once when an epoch will take
more than a minute, from the second step's time (a fake clock here: no timed test), and suggests
``fast_cpu`` under ``checked_cpu``; a quick run and a run on a terminal say nothing."""

from __future__ import annotations

import itertools

import pytest
from cli_runs import cli

from torchlean.cli import _pace

TRAIN = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "2"]  # 120 rows: 4 steps of 32


def fake_clock(monkeypatch: pytest.MonkeyPatch, step_seconds: float) -> None:
    ticks = itertools.count()
    monkeypatch.setattr(_pace.time, "perf_counter", lambda: next(ticks) * step_seconds)


def test_a_slow_epoch_is_noted_once(capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake_clock(monkeypatch, 20.0)  # 20 s a step, 4 steps: 80 s an epoch
    code, out, err = cli(capsys, *TRAIN)
    assert code == 0 and out.count("\nepoch ") == 2
    assert err == ("note: a training step takes about 20 s, so an epoch of 4 steps takes about 80 s (no "
                   "progress bar: stderr is not a terminal); --profile fast_cpu runs on torch's kernels, "
                   "several times faster\n")
    fake_clock(monkeypatch, 3600.0)
    err = cli(capsys, *TRAIN, "--profile", "fast_cpu")[2]
    assert "so an epoch of 4 steps takes about 4.0 h (no progress bar: stderr is not a terminal)\n" in err
    assert "fast_cpu runs" not in err


def test_a_quick_epoch_says_nothing(capsys: pytest.CaptureFixture[str],
                                    monkeypatch: pytest.MonkeyPatch) -> None:
    fake_clock(monkeypatch, 15.0)  # 60 s an epoch: not more than the limit
    assert cli(capsys, *TRAIN)[2] == ""


@pytest.mark.parametrize(("seconds", "shown"), [
    (75, "75 s"), (119.4, "119 s"), (720, "12 min"), (11520, "3.2 h"),
])
def test_durations(seconds: float, shown: str) -> None:
    assert _pace._duration(seconds) == shown
