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
