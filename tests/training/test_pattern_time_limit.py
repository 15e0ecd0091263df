"""review67 F5: a ``--freeze``/``--no-decay`` pattern that backtracks exponentially (nested
repetition) is refused after a time limit instead of hanging ``train``, naming the checkpoint when
``--resume`` read it from one; ordinary patterns and the previous SIGALRM handler are untouched."""

from __future__ import annotations

import json
import re
import signal
import threading
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli

from torchlean import optim
from torchlean.backend.errors import TorchLeanError
from torchlean.cli import _patterns

EXPLOSIVE = r"(?:(?:(?:(?:.*)*)*)*)*Z"  # never matches a name without Z, after exponential backtracking
NAMES = ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"]


def test_an_explosive_pattern_is_refused_and_the_previous_handler_restored() -> None:
    def mine(_signum: int, _frame: object) -> None:
        raise AssertionError("the previous handler must not run")

    previous = signal.signal(signal.SIGALRM, mine)
    try:
        with pytest.raises(TorchLeanError) as caught:
            _patterns.check_matches_quickly(optim.group(EXPLOSIVE, frozen=True), "--freeze", NAMES,
                                            seconds=0.2)
        assert str(caught.value) == (
            f"--freeze {EXPLOSIVE!r}: matching it against the 6 parameter names of the model took more than "
            "0.2 s (nested repetition, as in '(a*)*', backtracks exponentially in Python's re): give a "
            "simpler pattern")
        assert signal.getsignal(signal.SIGALRM) is mine
        assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)  # the timer is off
    finally:
        signal.signal(signal.SIGALRM, previous)


def test_ordinary_patterns_pass() -> None:
    for pattern in (r"^0\.", "bias$", re.compile("weight")):
        _patterns.check_matches_quickly(optim.group(pattern, frozen=True), "--freeze", NAMES, seconds=0.2)
    _patterns.check_matches_quickly(None, "--freeze", NAMES)
    # a function selects by itself: nothing to time
    _patterns.check_matches_quickly(optim.group(lambda name, shape: True, frozen=True), "--freeze", NAMES)


def test_outside_the_main_thread_no_timer_is_set() -> None:
    done: list[bool] = []
    thread = threading.Thread(target=lambda: done.append(
        _patterns.check_matches_quickly(optim.group("bias$", frozen=True), "--freeze", NAMES) is None))
    thread.start()
    thread.join(timeout=30)
    assert done == [True]


def test_train_refuses_it_typed_and_from_a_checkpoint(capsys: pytest.CaptureFixture[str], tmp_path: Path,
                                                      monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(_patterns, "PATTERN_SECONDS", 0.2)
    train = ["train", "--dataset", "iris", "--hidden", "4", "--epochs", "1"]
    code, out, err = cli(capsys, *train, "--freeze", EXPLOSIVE)
    assert (code, out) == (2, "")
    assert err.startswith(f"error: --freeze {EXPLOSIVE!r}: matching it against the 6 ")
    # a checkpoint whose stored --no-decay pattern was edited into an explosive one
    saved = tmp_path / "m.npz"
    assert cli(capsys, *train, "--optimizer", "adamw", "--no-decay", "bias", "--save", str(saved))[0] == 0
    with np.load(saved, allow_pickle=False) as archive:
        arrays = {name: archive[name] for name in archive.files}
    meta = json.loads(str(arrays["metadata"]))
    meta["training"]["settings"]["no_decay"] = EXPLOSIVE
    arrays["metadata"] = np.array(json.dumps(meta))
    edited = tmp_path / "edited.npz"
    with edited.open("wb") as handle:
        np.savez(handle, **arrays)
    code, out, err = cli(capsys, "train", "--resume", str(edited), "--epochs", "2")
    assert (code, out) == (2, "")
    assert err.startswith(f"error: checkpoint {edited}'s setting --no-decay {EXPLOSIVE!r}: matching it ")


def test_the_hosts_alarm_is_set_again_after_the_check() -> None:
    """review76 F6: a timer the host program had set was cancelled by the check's own; it is set
    again, less the time the check took (oracle: ``signal.getitimer`` read before and after)."""
    group = optim.group(r"^0\.", frozen=True)
    previous = signal.signal(signal.SIGALRM, lambda *_: None)
    try:
        signal.setitimer(signal.ITIMER_REAL, 30.0, 5.0)
        _patterns.check_matches_quickly(group, "--freeze", [f"{i}.weight" for i in range(50)])
        delay, interval = signal.getitimer(signal.ITIMER_REAL)
        assert 25.0 < delay <= 30.0 and interval == 5.0
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0.0)
        signal.signal(signal.SIGALRM, previous)
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
    _patterns.check_matches_quickly(group, "--freeze", ["0.weight"])  # no host timer: none set after
    assert signal.getitimer(signal.ITIMER_REAL) == (0.0, 0.0)
