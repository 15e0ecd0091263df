"""review230 F1: a Ctrl-C while ``backward()`` marked the graph's nodes as walked left part of it
marked for good: every later ``backward()`` through it was refused, naming another thread. The
SIGINT is raised here from a trace hook at the marking loop's first line (as a timer signal landing
there would be), and the graph must take a backward afterwards, with the gradient torch's
``d(sum(2x))/dx = 2`` (by hand)."""

from __future__ import annotations

import signal
import sys
import threading
from types import FrameType
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean.autograd import tape

_MARKED_BEFORE = 50
"""The marking line's visit at which the SIGINT is raised: 49 nodes are marked by then."""


def _interrupt_while_marking(frame: FrameType, event: str, arg: Any) -> Any:
    if frame.f_code is tape._walking.__code__:
        visits = [0]

        def local(inner: FrameType, kind: str, _arg: Any) -> Any:
            if kind == "line" and "node._walks = " in _source_line(inner):
                visits[0] += 1
                if visits[0] == _MARKED_BEFORE:
                    sys.settrace(None)
                    signal.raise_signal(signal.SIGINT)  # handled at once, or held back by the fix
                    return None
            return local
        return local
    return _interrupt_while_marking


def _source_line(frame: FrameType) -> str:
    import linecache

    return linecache.getline(frame.f_code.co_filename, frame.f_lineno)


@pytest.mark.skipif(threading.current_thread() is not threading.main_thread(), reason="signals: main thread")
@pytest.mark.parametrize("retain", [False, True])
def test_a_ctrl_c_while_backward_marks_the_graph_leaves_it_usable(retain: bool) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    x = tl.tensor(np.arange(4.0), requires_grad=True)
    h = x * 2.0
    for _ in range(200):  # nodes enough that the signal lands inside the marking loop
        h = h + 0.0
    y = tl.reduce_sum(h)
    sys.settrace(_interrupt_while_marking)
    try:
        with pytest.raises(KeyboardInterrupt):
            y.backward(retain_graph=retain)
    finally:
        sys.settrace(None)
    assert x.grad is None  # interrupted before any gradient was added
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))

