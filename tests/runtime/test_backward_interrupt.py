"""review230 F1, review231 F1, review232 F1: an interrupt while ``backward()`` marked the graph's
nodes as walked, or unmarked them, left part of the graph marked for good: every later
``backward()`` through it was refused, naming another thread. A SIGINT raised inside the marking
loop (from a trace hook, as a timer signal landing there would be) takes effect once the nodes are
all marked, and the caller unmarks them; a KeyboardInterrupt raised there by other means (a
SIGALRM handler) puts them back; one raised while they are unmarked completes the unmarking, and
the walk's gradients are kept. The gradient is torch's ``d(sum(2x))/dx = 2`` (by hand)."""

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


@pytest.mark.parametrize("interrupt", [_raise_sigint, _raise_keyboard_interrupt], ids=["sigint", "raised"])
@pytest.mark.parametrize("retain", [False, True])
def test_an_interrupt_while_marking_leaves_the_graph_usable(
    retain: bool, interrupt: Callable[[], None]
) -> None:
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    x, y = _chain()
    _interrupted_backward(y, retain, _interrupting("_walking", interrupt))
    assert x.grad is None  # stopped before the walk, the graph unmarked
    y.backward()
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))


@pytest.mark.parametrize("retain", [False, True])
def test_an_interrupt_while_unmarking_finishes_the_walk(retain: bool) -> None:
    x, y = _chain()
    _interrupted_backward(y, retain, _interrupting("unmark", _raise_keyboard_interrupt))
    np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 2.0))  # the completed walk's gradients
    if retain:  # kept, and walked again
        y.backward()
        np.testing.assert_array_equal(x.grad.numpy(), np.full(4, 4.0))
    else:  # freed, as a completed backward frees it: not "another thread"
        with pytest.raises(tl.AutogradError, match="freed by an earlier backward"):
            y.backward()
