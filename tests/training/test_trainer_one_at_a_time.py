"""review237 F3: ``fit`` on one trainer from two threads at once ran the same epochs twice and left
``epochs_done`` counting half of them; a ``fit`` called from its own ``on_batch`` set it back. A
trainer now runs one ``fit`` or ``step`` at a time and refuses another, naming the one that runs
and where; nothing waits, so no hold can hang a later call (a hold left by an interrupt is taken
over).

Oracle: the counts a sequential run gives (epochs and steps counted by hand)."""

from __future__ import annotations

import copy
import pickle
import sys
import threading

import numpy as np
import pytest

from torchlean import nn
from torchlean.trainer import Trainer, TrainerError

X = np.random.default_rng(0).standard_normal((32, 4))
Y = X[:, :1].copy()


def _trainer() -> Trainer:
    return Trainer(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), input_shape=(4,))


def test_fit_and_step_called_from_on_batch_are_refused_and_evaluate_runs():
    trainer = _trainer()
    refusals: list[str] = []
    evaluated: list[float] = []

    def on_batch(epoch: int, loss: float) -> None:
        evaluated.append(trainer.evaluate(X, Y)["mse"])
        for call in (lambda: trainer.fit(X, Y), lambda: trainer.step(X[:4], Y[:4])):
            with pytest.raises(TrainerError) as caught:
                call()
            refusals.append(str(caught.value))

    trainer.fit(X, Y, epochs=2, batch_size=16, on_batch=on_batch)
    assert (trainer.epochs_done, trainer.steps_done) == (2, 4)  # 2 epochs of 2 minibatches, nothing more
    assert len(evaluated) == 4 and len(refusals) == 8
    assert refusals[0] == (
        "fit was called while this trainer's fit runs, from within it (its on_batch or lr_schedule); a "
        "trainer runs one fit or step at a time: call fit after fit returns (evaluate and predict may be "
        "called from on_batch)"
    )
    assert refusals[1].startswith("step was called while this trainer's fit runs, from within it")
    trainer.fit(X, Y, epochs=1, batch_size=16)  # free again once it returned
    assert trainer.epochs_done == 3


def test_a_fit_in_another_thread_is_named_and_the_counts_stay_a_sequential_runs():
    trainer = _trainer()
    inside, tried = threading.Event(), threading.Event()

    def on_batch(epoch: int, loss: float) -> None:
        inside.set()
        assert tried.wait(30)

    worker = threading.Thread(
        target=lambda: trainer.fit(X, Y, epochs=1, batch_size=16, on_batch=on_batch), name="trainer-worker"
    )
    worker.start()
    try:
        assert inside.wait(60)
        with pytest.raises(TrainerError) as caught:
            trainer.fit(X, Y, epochs=1)
    finally:
        tried.set()
        worker.join(60)
    assert str(caught.value) == (
        "fit was called while this trainer's fit runs in thread 'trainer-worker'; a trainer runs one fit or "
        "step at a time (two at once would train the same epochs and mix their updates): call fit after it "
        "returns, or train another Trainer"
    )
    assert (trainer.epochs_done, trainer.steps_done) == (1, 2)


def test_a_hold_left_behind_is_taken_over_not_obeyed():
    """An interrupt landing between taking the hold and the call's ``try`` leaves it taken by a
    call that is gone (as a thread that ended holding it): the next call takes it over."""
    trainer = _trainer()

    def taken_and_left() -> None:
        holder, busy = trainer._exclusive.acquire("fit", sys._getframe())
        assert holder is not None and busy is None

    taken_and_left()
    trainer.fit(X, Y, epochs=1, batch_size=16)
    worker = threading.Thread(target=taken_and_left)
    worker.start()
    worker.join()
    trainer.step(X[:4], Y[:4])
    assert (trainer.epochs_done, trainer.steps_done) == (1, 3)


def test_copies_of_an_unrun_trainer_are_free():
    trainer = _trainer()
    for twin in (copy.deepcopy(trainer), copy.copy(trainer), pickle.loads(pickle.dumps(trainer))):
        assert twin._exclusive is not trainer._exclusive
        twin.fit(X, Y, epochs=1, batch_size=16)
        assert twin.epochs_done == 1


def test_a_step_keeps_nothing_alive_after_it_returns():
    """review238 F1: the hold kept its call's frame, a reference cycle that kept every minibatch
    (and fit's training set) alive until the cyclic collector ran; with it disabled, for good."""
    import gc
    import weakref

    class Batch(np.ndarray):
        pass

    trainer = _trainer()
    trainer.open()
    gc.collect()
    gc.disable()
    try:
        xb = X[:8].copy().view(Batch)
        alive = weakref.ref(xb)
        trainer.step(xb, Y[:8])
        del xb
        assert alive() is None
        xs = X.copy().view(Batch)
        alive = weakref.ref(xs)
        trainer.fit(xs, Y, epochs=1, batch_size=16)
        del xs
        assert alive() is None
    finally:
        gc.enable()


def test_a_thread_that_judged_a_released_hold_left_behind_does_not_take_over_the_next_one(monkeypatch):
    """review238 F2: a thread that found one fit's hold, and was switched out before judging it,
    judged it left behind once that fit had returned, and removed the hold of the fit that came
    next, which then ran unprotected beside that thread's steps."""
    from torchlean import _exclusive

    trainer = _trainer()
    trainer.open()
    first_inside, judging, second_inside, done = (threading.Event() for _ in range(4))
    running = _exclusive._Holder.running

    def switched_out_while_judging(holder: _exclusive._Holder) -> bool:
        if threading.current_thread().name == "stepper" and not judging.is_set():
            judging.set()
            assert second_inside.wait(30)  # as a thread switch here may let the next fit start
        return running(holder)

    monkeypatch.setattr(_exclusive._Holder, "running", switched_out_while_judging)

    def fits() -> None:
        trainer.fit(X, Y, epochs=1, batch_size=32, on_batch=lambda *_: (first_inside.set(), judging.wait(30)))
        trainer.fit(X, Y, epochs=1, batch_size=32, on_batch=lambda *_: (second_inside.set(), done.wait(30)))

    outcomes: list[str] = []

    def steps() -> None:
        assert first_inside.wait(30)
        for _ in range(2):
            try:
                trainer.step(X[:8], Y[:8])
                outcomes.append("ran")
            except TrainerError as error:
                outcomes.append(str(error).split(";")[0])
        done.set()

    threads = [threading.Thread(target=fits, name="fitter"), threading.Thread(target=steps, name="stepper")]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert outcomes == ["step was called while this trainer's fit runs in thread 'fitter'"] * 2
    assert (trainer.epochs_done, trainer.steps_done) == (2, 2)


def test_a_trainer_pickled_without_a_hold_trains(tmp_path):
    """review238 F7: an unrun trainer pickled before fit and step held one had no ``_exclusive``."""
    trainer = _trainer()
    state = trainer.__getstate__()
    del state["_exclusive"]
    old = Trainer.__new__(Trainer)
    old.__setstate__(state)
    old.fit(X, Y, epochs=1, batch_size=16)
    assert old.epochs_done == 1


def test_an_interrupt_inside_a_release_does_not_leave_the_trainer_refusing():
    """review240 F1: a KeyboardInterrupt between closing a hold's succession and freeing it left a
    closed hold that refused every later fit and step, naming a call that was not running. The
    release now runs to its end (the interrupt still propagates)."""
    trainer = _trainer()
    trainer.open()
    from torchlean import _exclusive

    code = _exclusive.Exclusive.release.__code__.co_consts
    free = next(c for c in code if getattr(c, "co_name", "") == "free")
    fired: list[int] = []

    def trace(frame, event, arg):  # type: ignore[no-untyped-def]
        if frame.f_code is free:
            def local(frame, event, arg):  # type: ignore[no-untyped-def]
                if event == "line" and not fired and frame.f_lineno > free.co_firstlineno + 1:
                    fired.append(frame.f_lineno)
                    raise KeyboardInterrupt
                return local
            return local
        return None

    sys.settrace(trace)
    try:
        with pytest.raises(KeyboardInterrupt):
            trainer.step(X[:8], Y[:8])
    finally:
        sys.settrace(None)
    assert fired  # the interrupt landed inside the release
    assert not trainer._exclusive._slot  # freed all the same
    trainer.step(X[:8], Y[:8])
    trainer.fit(X, Y, epochs=1, batch_size=16)
    assert (trainer.epochs_done, trainer.steps_done) == (1, 4)


def test_a_takeover_left_behind_before_it_stored_its_hold_is_taken_over_in_turn():
    """review240 F1: a call that won the takeover of a hold left behind, and was interrupted before
    storing its own, left a chain every later call refused; the chain is followed."""
    trainer = _trainer()

    def left_behind() -> object:
        holder, _ = trainer._exclusive.acquire("fit", sys._getframe())
        return holder

    stale = left_behind()
    winner = _exclusive_holder("step")  # won stale's succession, then was interrupted
    assert stale.succession.setdefault("next", winner) is winner
    trainer.step(X[:8], Y[:8])
    assert trainer.steps_done == 1 and not trainer._exclusive._slot


def _exclusive_holder(what: str) -> object:
    from torchlean import _exclusive

    return _exclusive._Holder(what, sys._getframe())  # its frame ends when this returns
