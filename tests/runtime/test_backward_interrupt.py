"""review230 F1, review231 F1, review232 F1: an interrupt while ``backward()`` marked the graph's
nodes as walked, or unmarked them, left part of the graph marked for good: every later
``backward()`` through it was refused, naming another thread. A SIGINT raised inside the marking
loop (from a trace hook, as a timer signal landing there would be) takes effect once the nodes are
all marked, and the caller unmarks them; a KeyboardInterrupt raised there by other means (a
SIGALRM handler) puts them back; one raised while they are unmarked completes the unmarking. The
gradient is torch's ``d(sum(2x))/dx = 2`` (by hand)."""

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
    assert x.grad is None  # stopped before the walk, the graph unmarked
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))



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


def _raise_while_unmarking(frame: FrameType, event: str, arg: Any) -> Any:
    """A KeyboardInterrupt raised by other means than SIGINT inside the unmarking loop of a walk
    that completed (review232 F1)."""
    if frame.f_code.co_name == "unmark" and frame.f_code.co_filename == tape.__file__:
        visits = [0]

        def local(inner: FrameType, kind: str, _arg: Any) -> Any:
            if kind == "line" and "node._walks = " in _source_line(inner):
                visits[0] += 1
                if visits[0] == _MARKED_BEFORE:
                    sys.settrace(None)
                    raise KeyboardInterrupt
            return local
        return local
    return _raise_while_unmarking


@pytest.mark.parametrize("retain", [False, True])
def test_an_interrupt_raised_while_unmarking_finishes_the_walk(retain: bool) -> None:
    x = tl.tensor(np.arange(4.0), requires_grad=True)
    h = x * 2.0
    for _ in range(200):
        h = h + 0.0
    y = tl.reduce_sum(h)
    sys.settrace(_raise_while_unmarking)
    try:
        with pytest.raises(KeyboardInterrupt):
            y.backward(retain_graph=retain)
    finally:
        sys.settrace(None)
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))  # the completed walk's gradients
    if retain:  # kept, and walked again
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 4.0))
    else:  # freed, as a completed backward frees it: not "another thread"
        with pytest.raises(tl.AutogradError, match="freed by an earlier backward"):
            y.backward()
