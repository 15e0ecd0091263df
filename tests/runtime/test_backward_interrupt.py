"""review230 F1, review231 F1/F5: a Ctrl-C while ``backward()`` marked the graph's nodes as
walked left part of it marked for good: every later ``backward()`` through it was refused, naming
another thread. A Ctrl-C during a backward now takes effect once it ends: the walk completes, its
gradients stored and its graph freed (or kept, with ``retain_graph``), and the KeyboardInterrupt is
raised then. The SIGINT is raised here from a trace hook inside the marking loop, as a timer
signal landing there would be; the gradient is torch's ``d(sum(2x))/dx = 2`` (by hand)."""

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
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))  # the walk completed first
    if retain:  # the graph was kept, and takes another walk
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 4.0))
    else:  # freed, as by a completed backward: the freed-graph refusal, not "another thread"
        with pytest.raises(tl.AutogradError, match="graph") as caught:
            y.backward()
        assert "another thread" not in str(caught.value)



def _raise_while_marking(frame: FrameType, event: str, arg: Any) -> Any:
    """A KeyboardInterrupt raised inside the marking loop by other means than SIGINT (a SIGALRM
    handler that raises it: review231 F1), which no deferral holds back."""
    if frame.f_code is tape._walking.__code__:
        visits = [0]

        def local(inner: FrameType, kind: str, _arg: Any) -> Any:
            if kind == "line" and "node._walks = " in _source_line(inner):
                visits[0] += 1
                if visits[0] == _MARKED_BEFORE:
                    sys.settrace(None)
                    raise KeyboardInterrupt
            return local
        return local
    return _raise_while_marking


@pytest.mark.parametrize("retain", [False, True])
def test_an_interrupt_raised_while_marking_unmarks_what_was_marked(retain: bool) -> None:
    x = tl.tensor(np.arange(4.0), requires_grad=True)
    h = x * 2.0
    for _ in range(200):
        h = h + 0.0
    y = tl.reduce_sum(h)
    sys.settrace(_raise_while_marking)
    try:
        with pytest.raises(KeyboardInterrupt):
            y.backward(retain_graph=retain)
    finally:
        sys.settrace(None)
    assert x.grad is None  # stopped before the walk
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))
