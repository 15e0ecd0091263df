"""A Ctrl-C during an optimizer update leaves weights and optimizer state of one run (review61 F2).

``Trainer._update`` let the optimizer advance ``steps``, ``param_steps`` and the moments, and
stored the new weights only afterwards; ``Optimizer.step_`` did the same before its ``copy_`` loop.
A ``KeyboardInterrupt`` in between left a state that matched no run. Now the update is computed
first and stored with SIGINT held back (:mod:`torchlean._interrupts`).

The tests send a real SIGINT (``signal.raise_signal``, Python's own handler turns it into
``KeyboardInterrupt``; ``how="sigint"``), or raise ``KeyboardInterrupt`` directly (the reviewer's
reproduction, as a ``SIGALRM`` handler that raises it would; ``how="raise"``), from a
``sys.settrace`` hook at the ``n``-th line executed in the trainer, optimizer and interrupt modules
during one step, for every ``n``, and compare the result with an oracle: uninterrupted runs of 0, 1,
2, ... steps (weights and ``state_dict()``, bit for bit).
"""

from __future__ import annotations

import contextvars
import gc
import signal
import sys
import threading
from collections.abc import Callable, Iterator
from types import FrameType
from typing import Any

import numpy as np
import pytest

import torchlean as tl
import torchlean._interrupts as interrupts_module
import torchlean.optim._records as records_module
import torchlean.trainer as trainer_module
from torchlean import nn, optim
from torchlean._interrupts import DeferredSigint
from torchlean.trainer import ExecutionMode, Objective, RunConfig, Trainer

TRACED = {trainer_module.__file__, records_module.__file__, interrupts_module.__file__}

rng = np.random.default_rng(0)
X, Y = rng.random((8, 4)), rng.random((8, 2))


@pytest.fixture(autouse=True)
def python_sigint_handler() -> Iterator[None]:
    """Python's default SIGINT handler (raises KeyboardInterrupt), whatever the runner installed,
    and no garbage-collector callbacks: a SIGINT handled inside one (hypothesis installs one to
    time collections) raises its KeyboardInterrupt there, where Python reports it as unraisable
    and drops it, so the interrupt the test sent would vanish."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    callbacks = list(gc.callbacks)
    gc.callbacks.clear()
    try:
        yield
    finally:
        gc.callbacks[:] = callbacks
        signal.signal(signal.SIGINT, before)
        sys.settrace(None)


def _interrupt_at_line(n: int | None, counter: list[int], how: str) -> Callable[..., Any]:
    """A global trace function counting line events in :data:`TRACED` frames; the ``n``-th sends
    SIGINT to this process or raises KeyboardInterrupt there (``None``: only count)."""

    def local(frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        if event == "line":
            counter[0] += 1
            if counter[0] == n:
                if how == "raise":
                    raise KeyboardInterrupt
                signal.raise_signal(signal.SIGINT)
        return local

    def trace(frame: FrameType, event: str, arg: object) -> Callable[..., Any] | None:
        return local if frame.f_code.co_filename in TRACED else None

    return trace


def _interrupted(n: int | None, run: Callable[[], None], how: str = "sigint") -> tuple[bool, int]:
    """Run ``run`` interrupted at traced line ``n``; whether a KeyboardInterrupt came, and
    the number of traced lines. A SIGINT sent at the last lines may be handled just after
    ``run`` returns: it is caught here too."""
    counter = [0]
    interrupted = False
    # in a copy of the context: an interrupt landing where a `with` block exits (the session's,
    # no_grad's) skips that __exit__, as it would in any `with` block; the copy keeps such a
    # leaked session or grad mode away from this test and the next ones
    context = contextvars.copy_context()
    try:
        sys.settrace(_interrupt_at_line(n, counter, how))
        try:
            context.run(run)
        finally:
            sys.settrace(None)
        _ = [0 for _ in range(3)]  # a loop and a call: a pending signal is handled by now
    except KeyboardInterrupt:
        interrupted = True
    return interrupted, counter[0]


def _same_state(a: dict[str, np.ndarray[Any, Any]], b: dict[str, np.ndarray[Any, Any]]) -> bool:
    return a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def _trainer(execution: ExecutionMode, optimizer: optim.OptimizerConfig) -> Trainer[Any, Any]:
    layer = nn.sequential(nn.linear(4, 6), nn.relu(), nn.linear(6, 2))
    config = RunConfig(optimizer=optimizer, execution=execution, dtype="float64")
    return Trainer(layer, objective=Objective.MSE, seed=0, config=config)


@pytest.mark.parametrize("execution", [ExecutionMode.EAGER, ExecutionMode.TYPED_GRAPH])
@pytest.mark.parametrize(
    ("optimizer", "how"),
    [
        (optim.adam(lr=0.01, amsgrad=True), "sigint"),
        (optim.adam(lr=0.01, amsgrad=True), "raise"),
        (optim.sgd(lr=0.1, momentum=0.9), "sigint"),
    ],
    ids=["adam-sigint", "adam-raise", "sgd-sigint"],
)
def test_ctrl_c_at_any_line_of_a_trainer_step_leaves_a_state_of_steps_done_steps(
    execution: ExecutionMode, optimizer: optim.OptimizerConfig, how: str
) -> None:
    oracle: list[tuple[dict[str, Any], dict[str, Any]]] = []
    reference = _trainer(execution, optimizer)
    for _ in range(4):
        oracle.append((reference.model.state(), reference.optimizer.state_dict()))
        reference.fit(X, Y, epochs=1, batch_size=8, shuffle=False)

    def second_step(trainer: Trainer[Any, Any]) -> Callable[[], None]:
        return lambda: trainer.fit(X, Y, epochs=1, batch_size=8, shuffle=False)

    counting = _trainer(execution, optimizer)
    counting.fit(X, Y, epochs=1, batch_size=8, shuffle=False)
    _, lines = _interrupted(None, second_step(counting))
    assert lines > 50  # the hook sees the step (trainer, optimizer and update rule lines)
    outcomes = set()
    for n in range(1, lines + 1):
        trainer = _trainer(execution, optimizer)
        trainer.fit(X, Y, epochs=1, batch_size=8, shuffle=False)
        interrupted, _ = _interrupted(n, second_step(trainer), how)
        done = trainer.steps_done
        assert interrupted and done in (1, 2), (n, interrupted, done)
        weights, state = oracle[done]
        assert _same_state(trainer.model.state(), weights), (n, done)
        assert _same_state(trainer.optimizer.state_dict(), state), (n, done)
        outcomes.add(done)
        trainer.fit(X, Y, epochs=1, batch_size=8, shuffle=False)  # resumes the same run
        assert _same_state(trainer.model.state(), oracle[done + 1][0]), n
    assert outcomes == {1, 2}  # the sweep interrupted before and after the store


@pytest.mark.parametrize("how", ["sigint", "raise"])
def test_ctrl_c_at_any_line_of_step_underscore_leaves_tensors_and_state_of_one_run(how: str) -> None:
    """A loop of your own: ``optimizer.step_(params)`` after ``backward()``."""
    start = [rng.random((3, 4)), rng.random((4,))]
    x = tl.tensor(rng.random((5, 3)))

    def make() -> tuple[list[tl.Tensor], optim.Optimizer]:
        params = [tl.tensor(p.copy(), requires_grad=True) for p in start]
        return params, optim.adam(lr=0.05).create([p.numpy() for p in params])

    def backward(params: list[tl.Tensor]) -> None:
        tl.reduce_sum(tl.tanh(tl.linear(x, tl.transpose(params[0], 0, 1), params[1]))).backward()

    oracle = []
    params, opt = make()
    for _ in range(3):
        oracle.append(([p.numpy().copy() for p in params], opt.state_dict()))
        backward(params)
        opt.step_(params)

    params, opt = make()
    backward(params)
    _, lines = _interrupted(None, lambda: opt.step_(params))
    assert lines > 20
    outcomes = set()
    for n in range(1, lines + 1):
        params, opt = make()
        backward(params)
        interrupted, _ = _interrupted(n, lambda: opt.step_(params), how)  # noqa: B023 - called at once
        assert interrupted and opt.steps in (0, 1), (n, opt.steps)
        weights, state = oracle[opt.steps]
        assert all(np.array_equal(p.numpy(), w) for p, w in zip(params, weights, strict=True)), n
        assert _same_state(opt.state_dict(), state), n
        assert all(p.grad is None for p in params) == (opt.steps == 1), n  # reset with the step
        outcomes.add(opt.steps)
    assert outcomes == {0, 1}
    assert tl.is_grad_enabled()  # nothing leaked to this context


def test_DeferredSigint_hands_a_ctrl_c_to_the_previous_handler_after_the_block() -> None:
    order: list[str] = []
    with pytest.raises(KeyboardInterrupt), DeferredSigint():
        signal.raise_signal(signal.SIGINT)
        _ = [0 for _ in range(3)]  # the handler has run by now: held back
        order.append("body finished")
    assert order == ["body finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler

    seen: list[int] = []
    signal.signal(signal.SIGINT, lambda signum, frame: seen.append(signum))
    with DeferredSigint():
        signal.raise_signal(signal.SIGINT)
        _ = [0 for _ in range(3)]
        assert seen == []
    assert seen == [signal.SIGINT]  # the program's own handler, once, after the block
    with DeferredSigint():  # nothing arrives: nothing is called
        pass
    assert seen == [signal.SIGINT]


def test_DeferredSigint_is_nested_and_leaves_handlers_it_cannot_defer_alone() -> None:
    order: list[str] = []
    with pytest.raises(KeyboardInterrupt), DeferredSigint():
        with DeferredSigint():
            signal.raise_signal(signal.SIGINT)
            _ = [0 for _ in range(3)]
            order.append("inner body")
        _ = [0 for _ in range(3)]  # still held back by the outer block
        order.append("outer body")
    assert order == ["inner body", "outer body"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    with DeferredSigint():
        assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN
    seen: list[object] = []

    def in_thread() -> None:
        with DeferredSigint():
            seen.append(signal.getsignal(signal.SIGINT))

    signal.signal(signal.SIGINT, signal.default_int_handler)
    thread = threading.Thread(target=in_thread)
    thread.start()
    thread.join()
    assert seen == [signal.default_int_handler]  # another thread: nothing installed


@pytest.mark.parametrize("execution", [ExecutionMode.EAGER, ExecutionMode.TYPED_GRAPH])
def test_ctrl_c_leaves_the_random_counter_of_steps_done_steps(execution: ExecutionMode) -> None:
    """review70 F1: the dropout masks a step drew before its update was stored are not counted,
    so ``random_counter`` is that of ``steps_done`` steps (two dropout layers: two draws a step),
    and a resume from the interrupted state continues the uninterrupted run bit for bit."""

    def dropped() -> Trainer[Any, Any]:
        layer = nn.sequential(nn.linear(4, 6), nn.relu(), nn.dropout(0.3), nn.linear(6, 6), nn.relu(),
                              nn.dropout(0.3), nn.linear(6, 2))
        config = RunConfig(optimizer=optim.adam(lr=0.01), execution=execution, dtype="float64")
        return Trainer(layer, objective=Objective.MSE, seed=0, config=config)

    reference = dropped()
    reference.fit(X, Y, epochs=3, batch_size=8, shuffle=False)
    assert reference.random_counter == 6
    counting = dropped()
    counting.fit(X, Y, epochs=1, batch_size=8, shuffle=False)
    _, lines = _interrupted(None, lambda: counting.fit(X, Y, epochs=1, batch_size=8, shuffle=False))
    ahead = 0
    for n in range(1, lines + 1):
        trainer = dropped()
        trainer.fit(X, Y, epochs=1, batch_size=8, shuffle=False)
        interrupted, _ = _interrupted(n, lambda t=trainer: t.fit(X, Y, epochs=1, batch_size=8, shuffle=False))
        assert interrupted and trainer.random_counter == 2 * trainer.steps_done, (n, trainer.steps_done)
        ahead += trainer.steps_done == 1
        # resume: a new trainer with the interrupted state runs the remaining steps
        resumed = dropped()
        resumed.model.load_state(trainer.model.state())
        resumed.optimizer.load_state_dict(trainer.optimizer.state_dict())
        resumed.random_counter = trainer.random_counter
        resumed.epochs_done = trainer.steps_done
        resumed.fit(X, Y, epochs=3 - trainer.steps_done, batch_size=8, shuffle=False)
        assert _same_state(resumed.model.state(), reference.model.state()), n
    assert ahead > 0  # some interrupts landed before the store (where the counter ran ahead)


@pytest.mark.parametrize("execution", [ExecutionMode.EAGER, ExecutionMode.TYPED_GRAPH])
def test_ctrl_c_after_an_epochs_last_store_counts_that_epoch(execution: ExecutionMode) -> None:
    """review71 F2: a Ctrl-C held back through the last update of an epoch lands just after its
    store, before ``fit`` counted the epoch; ``epochs_done`` now counts every epoch whose updates
    are all stored (two minibatches an epoch here: ``epochs_done == steps_done // 2`` wherever the
    interrupt lands), so a resume from ``epochs_done`` (shuffled: each epoch its own order) goes on
    with the uninterrupted run, bit for bit, instead of training an epoch twice."""
    optimizer = optim.adam(lr=0.01)
    reference = _trainer(execution, optimizer)
    reference.fit(X, Y, epochs=3, batch_size=4)
    counting = _trainer(execution, optimizer)
    counting.fit(X, Y, epochs=1, batch_size=4)
    _, lines = _interrupted(None, lambda: counting.fit(X, Y, epochs=1, batch_size=4))
    outcomes = set()
    for n in range(1, lines + 1):
        trainer = _trainer(execution, optimizer)
        trainer.fit(X, Y, epochs=1, batch_size=4)
        interrupted, _ = _interrupted(n, lambda t=trainer: t.fit(X, Y, epochs=1, batch_size=4))
        assert interrupted and trainer.epochs_done == trainer.steps_done // 2, (n, trainer.steps_done)
        outcomes.add(trainer.steps_done)
        resumed = _trainer(execution, optimizer)
        resumed.model.load_state(trainer.model.state())
        resumed.optimizer.load_state_dict(trainer.optimizer.state_dict())
        resumed.epochs_done = trainer.epochs_done
        if trainer.steps_done % 2 == 0:  # whole epochs stored: the rest of the run from the next one
            resumed.fit(X, Y, epochs=3 - resumed.epochs_done, batch_size=4)
            assert _same_state(resumed.model.state(), reference.model.state()), n
    assert outcomes == {2, 3, 4}  # before the epoch's first store, between, after its last


def test_on_batch_raising_on_an_epochs_last_minibatch_counts_that_epoch() -> None:
    """review71 F2: every update of the epoch is stored when ``on_batch`` raises on its last
    minibatch: the epoch is done (not on the first minibatch: it is not)."""

    def raise_at(step: int) -> Callable[[int, float], None]:
        calls = [0]

        def on_batch(epoch: int, loss: float) -> None:
            calls[0] += 1
            if calls[0] == step:
                raise RuntimeError("callback failed")

        return on_batch

    for step, epochs in [(1, 0), (2, 1), (3, 1), (4, 2)]:
        trainer = _trainer(ExecutionMode.EAGER, optim.sgd(lr=0.1))
        with pytest.raises(RuntimeError, match="callback failed"):
            trainer.fit(X, Y, epochs=3, batch_size=4, on_batch=raise_at(step))
        assert (trainer.steps_done, trainer.epochs_done) == (step, epochs)


def test_DeferredSigint_does_not_go_through_signals_enum_wrappers(monkeypatch: pytest.MonkeyPatch) -> None:
    """review105 F1: ``signal.signal`` and ``signal.getsignal`` look each handler up in
    ``signal.Handlers``, a failing ``enum`` lookup for every Python callable, which cost some
    30 µs an optimizer update in a training loop; the hold calls the C functions under them."""

    def refused(*args: object) -> None:
        raise AssertionError(f"the enum-converting wrapper was called with {args}")

    monkeypatch.setattr(signal, "signal", refused)
    monkeypatch.setattr(signal, "getsignal", refused)
    order: list[str] = []
    with pytest.raises(KeyboardInterrupt), DeferredSigint():
        signal.raise_signal(signal.SIGINT)
        _ = [0 for _ in range(3)]  # held back
        order.append("body finished")
    monkeypatch.undo()
    assert order == ["body finished"]
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler


@pytest.mark.parametrize(
    "record",
    [
        optim.sgd(0.1),
        optim.sgd(0.1, momentum=0.9, dampening=0.1, weight_decay=0.01),
        optim.sgd(0.1, momentum=0.9, nesterov=True),
        optim.adam(0.01, weight_decay=0.01),
        optim.adam(0.01, beta1=0.3, amsgrad=True),
        optim.adamw(0.01, amsgrad=True),
        optim.rmsprop(0.01),
        optim.rmsprop(0.01, centered=True, momentum=0.9, weight_decay=0.01),
        optim.adagrad(0.1, lr_decay=0.01, weight_decay=0.01, initial_accumulator_value=0.1),
    ],
    ids=repr,
)
@pytest.mark.parametrize("shape", [(3, 2), ()], ids=str)
def test_update_rules_change_none_of_their_arguments(
    record: optim.OptimizerConfig, shape: tuple[int, ...]
) -> None:
    """The stored state is not copied before a step: each update rule returns its new buffers as new
    arrays and writes into none of its arguments (read-only here, so a write raises), so a step
    interrupted before its store leaves the state it started from."""
    local = np.random.default_rng(3)

    def frozen(value: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
        value = np.array(value, dtype=np.float32)
        value.setflags(write=False)
        return value

    param, grad = frozen(local.standard_normal(shape)), frozen(local.standard_normal(shape))
    m, v = frozen(local.random(shape)), frozen(local.random(shape))
    third = frozen(local.random(shape)) if record.has_third() else None
    before = [a.copy() for a in (param, grad, m, v) + (() if third is None else (third,))]
    for step in (1, 2):
        with np.errstate(all="ignore"):  # as Optimizer.step calls it (centered: v < avg**2 here)
            new_param, *buffers = record.update(step, param, grad, m, v, third)  # 0-d: a scalar
        assert np.asarray(new_param).dtype == np.float32 and np.shape(new_param) == shape
        assert buffers[2] is None if third is None else isinstance(buffers[2], np.ndarray)
        assert all(isinstance(a, np.ndarray) and a.dtype == np.float32 and a.shape == shape
                   for a in buffers if a is not None)
        after = (param, grad, m, v) + (() if third is None else (third,))
        assert all(a.tobytes() == b.tobytes() for a, b in zip(after, before, strict=True))
