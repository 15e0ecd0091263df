"""review142 F1: a process forked while another thread holds one of the tape's locks (a ``.grad``
being added into, a backward pass registering its walk) got the lock copied held and hung in its
first ``backward()``. The fork now waits for each lock, and the child gets it free.

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


def _child(queue: multiprocessing.Queue[object], module: str, name: str) -> None:
    lock = getattr(importlib.import_module(module), name)
    held = not lock.acquire(blocking=False)  # another thread's hold, copied, would refuse
    if not held:
        lock.release()
    v = tl.tensor(np.ones(3), requires_grad=True)
    tl.reduce_sum(v * 3.0).backward()
    assert v.grad is not None
    queue.put((held, v.grad.numpy().tolist()))


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
    child = context.Process(target=_child, args=(queue, module, name))
    child.start()  # waits for the lock: the child is forked with it free
    child.join(30)
    holder.join()
    if child.is_alive():
        child.kill()
        child.join()
        pytest.fail(f"the forked child hung in backward() ({which} copied held)")
    assert child.exitcode == 0
    assert queue.get(timeout=5) == (False, [3.0, 3.0, 3.0])


@pytest.mark.parametrize("which", list(LOCKS))
def test_the_thread_holding_the_lock_may_fork(which: str) -> None:
    """review145 F1: a fork from inside the locked region (a signal handler that runs during the
    accumulation) waited for the lock its own thread held, for good. The child's first backward
    runs (the child's copy, held by its only thread as the parent's was, is let go when the
    parent's ``with`` block would have ended)."""
    module, name = LOCKS[which]
    lock = getattr(importlib.import_module(module), name)
    context = multiprocessing.get_context("fork")
    queue = context.Queue()
    result: list[int | None] = []

    def fork_inside() -> None:
        with lock:
            child = context.Process(target=_child_outside_the_lock, args=(queue, module, name))
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
    assert queue.get(timeout=5) == [3.0, 3.0, 3.0]
    with lock:  # the parent's copy is free again
        pass


def _child_outside_the_lock(queue: multiprocessing.Queue[object], module: str, name: str) -> None:
    """The child of a fork made inside ``with lock``: it leaves that block, as the forking
    thread would, then runs a backward."""
    getattr(importlib.import_module(module), name).release()
    v = tl.tensor(np.ones(3), requires_grad=True)
    tl.reduce_sum(v * 3.0).backward()
    assert v.grad is not None
    queue.put(v.grad.numpy().tolist())
