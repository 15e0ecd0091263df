"""review230 F1, review231 F1, review232 F1/F2, review233 F1: an interrupt while ``backward()``
marked the graph's nodes as walked, or unmarked them, left part of the graph marked for good: every
later ``backward()`` through it was refused, naming another thread. A Ctrl-C (SIGINT) during a
backward now takes effect once it ends, the walk complete and its gradients stored; a
KeyboardInterrupt raised by other means (a SIGALRM handler) while marking puts the nodes back, and
one while unmarking completes the unmarking and keeps the walk's gradients. The SIGINT and the
KeyboardInterrupt are raised from a trace hook inside the loops, as a timer signal landing there
would be. The gradient is torch's ``d(sum(2x))/dx = 2`` (by hand)."""

from __future__ import annotations

import linecache
import signal
import sys
import threading
from collections.abc import Callable
from types import FrameType
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean.autograd import tape

pytestmark = pytest.mark.skipif(threading.current_thread() is not threading.main_thread(),
                                reason="signals: main thread")

_VISIT = 50
"""The visit of the line setting a node's walk count at which the interrupt comes: 49 nodes are
marked (or unmarked) by then."""


def _raise_sigint() -> None:
    signal.raise_signal(signal.SIGINT)  # handled at once, or held back by the fix


def _raise_keyboard_interrupt() -> None:
    raise KeyboardInterrupt  # as a SIGALRM handler raising it would, which nothing holds back


def _interrupting(function: str, interrupt: Callable[[], None]) -> Any:
    """A ``sys.settrace`` hook calling ``interrupt`` at the :data:`_VISIT`-th execution of the line
    setting ``node._walks`` inside ``function`` of torchlean/autograd/tape.py."""

    def hook(frame: FrameType, event: str, arg: Any) -> Any:
        if frame.f_code.co_name != function or frame.f_code.co_filename != tape.__file__:
            return hook
        visits = [0]

        def local(inner: FrameType, kind: str, _arg: Any) -> Any:
            line = linecache.getline(inner.f_code.co_filename, inner.f_lineno)
            if kind == "line" and "node._walks = " in line:
                visits[0] += 1
                if visits[0] == _VISIT:
                    sys.settrace(None)
                    interrupt()
                    return None
            return local
        return local

    return hook


def _chain() -> tuple[tl.Tensor, tl.Tensor]:
    """A leaf and the sum of a chain of 200 ops on it: nodes enough for the interrupt to land
    inside the loops."""
    x = tl.tensor(np.arange(4.0), requires_grad=True)
    h = x * 2.0
    for _ in range(200):
        h = h + 0.0
    return x, tl.reduce_sum(h)


def _interrupted_backward(y: tl.Tensor, retain: bool, hook: Any) -> None:
    sys.settrace(hook)
    try:
        with pytest.raises(KeyboardInterrupt):
            y.backward(retain_graph=retain)
    finally:
        sys.settrace(None)


def _completed_then(x: tl.Tensor, y: tl.Tensor, retain: bool) -> None:
    """The state of a walk that completed: its gradients stored, its graph kept (and walked
    again) or freed (the freed-graph refusal, not "another thread")."""
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))
    if retain:
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 4.0))
    else:
        with pytest.raises(tl.AutogradError, match="freed by an earlier backward"):
            y.backward()


@pytest.mark.parametrize("function", ["_walking", "unmark", "_propagate"])
@pytest.mark.parametrize("retain", [False, True])
def test_a_ctrl_c_during_backward_takes_effect_once_it_ends(retain: bool, function: str) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    x, y = _chain()
    hook = (_interrupting(function, _raise_sigint) if function != "_propagate"
            else _calling(tape._propagate, _raise_sigint))
    _interrupted_backward(y, retain, hook)
    _completed_then(x, y, retain)


@pytest.mark.parametrize("retain", [False, True])
def test_an_interrupt_raised_while_marking_puts_the_graph_back(retain: bool) -> None:
    x, y = _chain()
    _interrupted_backward(y, retain, _interrupting("_walking", _raise_keyboard_interrupt))
    assert x.grad is None  # stopped before the walk, the graph unmarked
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))


@pytest.mark.parametrize("retain", [False, True])
def test_an_interrupt_raised_while_unmarking_finishes_the_walk(retain: bool) -> None:
    x, y = _chain()
    _interrupted_backward(y, retain, _interrupting("unmark", _raise_keyboard_interrupt))
    _completed_then(x, y, retain)


def _calling(function: Any, interrupt: Callable[[], None]) -> Any:
    """A ``sys.settrace`` hook calling ``interrupt`` as ``function`` is entered."""

    def hook(frame: FrameType, event: str, arg: Any) -> Any:
        if event == "call" and frame.f_code is function.__code__:
            sys.settrace(None)
            interrupt()
            return None
        return hook

    return hook


def test_every_ctrl_c_held_back_reaches_the_handler_in_order() -> None:
    """review232 F2: two presses inside one held block reached a program's handler as one."""
    from torchlean._interrupts import DeferredSigint

    seen: list[int] = []
    previous = signal.signal(signal.SIGINT, lambda signum, frame: seen.append(len(seen)))
    try:
        with DeferredSigint():
            signal.raise_signal(signal.SIGINT)
            signal.raise_signal(signal.SIGINT)
            assert seen == []
        assert seen == [0, 1]
    finally:
        signal.signal(signal.SIGINT, previous)
