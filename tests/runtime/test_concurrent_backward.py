"""Two threads backpropagating into one shared leaf lose no gradient update (review61 F1).

``Tensor._accumulate_grad`` read ``.grad``, then stored a copy (first gradient) or added in place
(``np.add(..., out=grad)``, which releases the GIL for large arrays): two threads reaching the same
leaf could both see ``None``, or both add into the values read before the other's add, and one
contribution was lost. Oracle: every contribution is 1 per entry (``d sum(w * x) / dw = x`` with
``x`` all ones), so after ``2 * N`` backward calls every entry is exactly ``2 * N``, as torch's
``AccumulateGrad`` (a per-variable mutex) gives for the same test.
"""

from __future__ import annotations

import sys
import threading
import time
from collections.abc import Callable, Iterator

import numpy as np
import pytest

import torchlean as tl
from torchlean.autograd import storage


@pytest.fixture
def fast_switching() -> Iterator[None]:
    """Switch threads as often as CPython allows, so that an unguarded window is hit."""
    before = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)
    try:
        yield
    finally:
        sys.setswitchinterval(before)


def _backward_from_two_threads(profile: str, w: tl.Tensor, x: tl.Tensor, per_thread: int) -> None:
    barrier = threading.Barrier(2)
    failures: list[BaseException] = []

    def work() -> None:
        try:
            with tl.session(profile):
                losses = [tl.reduce_sum(w * x) for _ in range(per_thread)]
                barrier.wait()
                for loss in losses:
                    loss.backward()
        except BaseException as error:  # pragma: no cover - reported below
            failures.append(error)

    threads = [threading.Thread(target=work) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert failures == []


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_large_leaf_shared_by_two_threads_gets_every_contribution(profile: str, fast_switching: None) -> None:
    """The reviewer's reproduction: 600 x 600 float64 (numpy's add releases the GIL), 30 backward
    calls per thread, three trials; without the lock most trials lost entries under checked_cpu."""
    n, per_thread = 600, 30
    w = tl.tensor(np.ones((n, n)), requires_grad=True)
    x = tl.tensor(np.ones((n, n)))
    for _ in range(3):
        w.grad = None
        _backward_from_two_threads(profile, w, x, per_thread)
        assert w.grad is not None
        got = w.grad.numpy()
        assert int((got != 2 * per_thread).sum()) == 0, (got.min(), got.max())


def _slowed(real: Callable[..., object], before: bool) -> Callable[..., object]:
    """``real`` with a pause inside its read-modify-write window (numpy's GIL release, widened)."""

    def slow(*args: object) -> object:
        if before:
            time.sleep(0.002)
            return real(*args)
        result = real(*args)
        time.sleep(0.002)
        return result

    return slow


def _racy_add_into(a: object, b: object) -> bool:
    """``a += b`` as read, pause, write: what an in-place add that drops the GIL does."""
    assert isinstance(a, np.ndarray) and isinstance(b, np.ndarray)
    total = a + b
    time.sleep(0.002)
    a[...] = total
    return True


def test_first_gradient_and_in_place_add_are_one_step_per_leaf(monkeypatch: pytest.MonkeyPatch) -> None:
    """Deterministic: the storage primitives pause inside the window (the first gradient's copy,
    the in-place add's read and write), so two unguarded threads always interleave there; with the
    lock each leaf's accumulation is one step and small arrays sum exactly too."""
    monkeypatch.setattr(storage, "copy_storage", _slowed(storage.copy_storage, before=False))
    monkeypatch.setattr(storage, "add_into", _racy_add_into)
    w = tl.tensor(np.ones((4, 4)), requires_grad=True)
    x = tl.tensor(np.ones((4, 4)))
    for per_thread in (1, 5):  # 1: both threads race for the first gradient (.grad is None)
        w.grad = None
        _backward_from_two_threads("checked_cpu", w, x, per_thread)
        assert w.grad is not None
        np.testing.assert_array_equal(w.grad.numpy(), np.full((4, 4), 2.0 * per_thread))


def _second_backward_during_first(
    first: Callable[[], None], second: Callable[[], None]
) -> list[BaseException]:
    """Run ``first`` in a thread, held inside its walk (the tape's ``_propagate`` waits), run
    ``second`` meanwhile in this thread, then let ``first`` finish; the exceptions of ``second``
    (and none of ``first``)."""
    from torchlean.autograd import tape

    walking, release = threading.Event(), threading.Event()
    propagate = tape._propagate
    calls = [0]

    def held(*args: object) -> object:
        calls[0] += 1
        if calls[0] == 1:
            walking.set()
            assert release.wait(10)
        return propagate(*args)  # type: ignore[arg-type]

    failures: list[BaseException] = []
    tape._propagate = held  # type: ignore[assignment]
    try:
        thread = threading.Thread(target=first)
        thread.start()
        assert walking.wait(10)
        try:
            second()
        except BaseException as error:
            failures.append(error)
        release.set()
        thread.join()
    finally:
        tape._propagate = propagate  # type: ignore[assignment]
    return failures


def test_two_threads_freeing_one_graph_do_not_both_walk_it() -> None:
    """review77 F2: two threads calling backward() on one loss (no retain_graph) both walked it:
    the gradient came out doubled, or one met nodes the other had freed ("the local rule of `mul`
    returned 2 cotangents for 0 inputs"). The second is now refused, naming the one that frees
    the graph (after it, the freed-graph error), and the leaf gets exactly one contribution
    (oracle: d sum(w * x)/dw = x)."""
    w = tl.tensor(np.ones(4), requires_grad=True)
    x = tl.tensor(np.arange(4.0))
    loss = tl.reduce_sum(w * x)
    failures = _second_backward_during_first(loss.backward, loss.backward)
    assert len(failures) == 1 and isinstance(failures[0], tl.AutogradError)
    assert "a backward() that frees the graph behind this tensor is running through it" in str(failures[0])
    assert w.grad is not None
    np.testing.assert_array_equal(w.grad.numpy(), [0.0, 1.0, 2.0, 3.0])


def test_walks_that_keep_the_graph_share_it_and_a_freeing_one_waits_for_them() -> None:
    """Two retain_graph walks at once both add their gradient (2 x), as two in a row do; a walk
    that would free the graph while one that keeps it runs is refused, naming the other."""
    w = tl.tensor(np.ones(3), requires_grad=True)
    x = tl.tensor(np.array([1.0, 2.0, 3.0]))
    loss = tl.reduce_sum(w * x)

    def keep() -> None:
        loss.backward(retain_graph=True)

    assert _second_backward_during_first(keep, keep) == []
    assert w.grad is not None
    np.testing.assert_array_equal(w.grad.numpy(), [2.0, 4.0, 6.0])
    failures = _second_backward_during_first(keep, loss.backward)
    assert len(failures) == 1 and "another backward() is running through the graph" in str(failures[0])
    loss.backward()  # after it, the freeing walk runs, and the graph is then freed
    np.testing.assert_array_equal(w.grad.numpy(), [4.0, 8.0, 12.0])
    with pytest.raises(tl.AutogradError, match="freed by an earlier backward"):
        loss.backward()
