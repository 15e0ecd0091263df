"""review142 F2: the first use of one Trainer (or one Session) from two threads at once. Each made
its own session (and optimizer) and the last one won, dropping what ran in the other; a session
shared by threads listed a capsule twice. The window is widened here deterministically (a slow
session construction, a slow report), where it is microseconds in practice."""

from __future__ import annotations

import io
import threading
import time
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn
from torchlean import trainer as trainer_module
from torchlean.autograd import session as session_module
from torchlean.trainer import Trainer


def _together(*calls: Any) -> list[Any]:
    barrier = threading.Barrier(len(calls))
    results: list[Any] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        results[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    return results


def test_two_threads_opening_one_trainer_share_one_session(monkeypatch: pytest.MonkeyPatch) -> None:
    made: list[object] = []
    original = trainer_module.Session

    def slow_session(*args: Any, **kwargs: Any) -> Any:
        made.append(None)
        time.sleep(0.3)  # the other thread reaches open() meanwhile
        return original(*args, **kwargs)

    monkeypatch.setattr(trainer_module, "Session", slow_session)
    t = Trainer(nn.sequential(nn.linear(3, 2)), objective="mse", seed=0)
    first, second = _together(t.open, t.open)
    assert len(made) == 1 and first is second is t.open()


def test_threads_sharing_a_session_record_and_report_a_capsule_once(monkeypatch: pytest.MonkeyPatch) -> None:
    original = session_module.Session.report

    def slow_report(self: Any, accepted: Any) -> None:
        time.sleep(0.2)  # the other thread records meanwhile
        original(self, accepted)

    monkeypatch.setattr(session_module.Session, "report", slow_report)
    stream = io.StringIO()
    with tl.session("checked_cpu", show_backend=True, stream=stream) as shared:
        x = tl.tensor(np.array([-1.0, 2.0]))

        def relu() -> Any:
            with shared:
                return tl.relu(x).numpy()

        for out in _together(relu, relu, relu):
            np.testing.assert_array_equal(out, [0.0, 2.0])
    assert [k.capsule.name for k in shared.selected] == ["reference.relu"]
    assert stream.getvalue().count("  relu: reference.relu") == 1
