"""review142 F1: a process forked while another thread holds one of the tape's locks (a ``.grad``
being added into, a backward pass registering its walk) got the lock copied held and hung in its
first ``backward()``. The fork now waits for each lock, and the child gets a new, free one.

The other thread holds the lock for a fixed time (as an add into a large ``.grad`` does, numpy
having released the GIL); the fork starts while it is held; the child must finish a backward."""

from __future__ import annotations

import importlib
import multiprocessing
import sys
import threading
import time

import numpy as np
import pytest

import torchlean as tl

pytestmark = pytest.mark.skipif(
    sys.platform == "win32" or "fork" not in multiprocessing.get_all_start_methods(), reason="needs fork"
)

LOCKS = {"tensor._GRAD_LOCK": ("torchlean.tensor", "_GRAD_LOCK"),
         "tape._WALKS": ("torchlean.autograd.tape", "_WALKS")}


def _backward_on_two_threads() -> list[object]:
    """A backward on this (the child's only) thread, then one on a new thread: a lock the child
    got held would let the first through (re-entrant, same owner) and keep the second waiting."""
    results: list[object] = []

    def backward() -> None:
        v = tl.tensor(np.ones(3), requires_grad=True)
        tl.reduce_sum(v * 3.0).backward()
        assert v.grad is not None
        results.append(v.grad.numpy().tolist())

    backward()
    worker = threading.Thread(target=backward, daemon=True)
    worker.start()
    worker.join(10)
    results.append("worker hung" if worker.is_alive() else "worker done")
    return results


def _child(queue: multiprocessing.Queue[object]) -> None:
    queue.put(_backward_on_two_threads())


@pytest.mark.parametrize("which", list(LOCKS))
def test_a_child_forked_while_a_thread_holds_the_lock_gets_it_free(which: str) -> None:
    module, name = LOCKS[which]
    lock = getattr(importlib.import_module(module), name)
    taken = threading.Event()

    def hold() -> None:
        with lock:
            taken.set()
            time.sleep(0.5)

    holder = threading.Thread(target=hold)
    holder.start()
    assert taken.wait(10)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    child = context.Process(target=_child, args=(queue,))
    child.start()  # waits for the lock: the child is forked with it free
    child.join(30)
    holder.join()
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"the forked child hung in backward() ({which} copied held)")
    assert child.exitcode == 0
    assert queue.get(timeout=5) == [[3.0, 3.0, 3.0], [3.0, 3.0, 3.0], "worker done"]


@pytest.mark.parametrize("which", list(LOCKS))
def test_the_thread_holding_the_lock_may_fork(which: str) -> None:
    """review145 F1: a fork from inside the locked region (a signal handler that runs during the
    accumulation) waited for the lock its own thread held, for good. The child never leaves the
    parent's ``with`` block (a ``multiprocessing`` child runs its target and exits where it was
    forked); its copy of the lock would stay held by its main thread, and another thread of the
    child would wait for it for ever (review146 F1): the child gets a new, free lock."""
    module, name = LOCKS[which]
    lock = getattr(importlib.import_module(module), name)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    result: list[int | None] = []

    def fork_inside() -> None:
        with lock:
            child = context.Process(target=_child, args=(queue,))
            child.start()
            child.join(30)
            if child.is_alive():
                child.kill()
                child.join()
            result.append(child.exitcode)

    forker = threading.Thread(target=fork_inside, daemon=True)
    forker.start()
    forker.join(60)
    assert not forker.is_alive(), f"the fork waited for {which}, which its own thread held"
    assert result == [0]
    assert queue.get(timeout=5) == [[3.0, 3.0, 3.0], [3.0, 3.0, 3.0], "worker done"]
    with lock:  # the parent's copy is free again
        pass
