"""review170 F1: a layer of your own whose ``ops.add``/``ops.mul`` broadcast (a ``(B, 3)``
activation plus a ``(3,)`` bias, times a ``(1,)`` parameter or a 0-d constant) trained eagerly
(functional ``add``/``mul`` broadcast) but the typed graph refused it (``IRError: add: shape
mismatch: [4, 3] vs [3]``). Both interpretations now broadcast such operands with
``ops.broadcast_to`` first, so they issue the same ops and give the same bits. Oracle for the
gradients: central finite differences in float64 (one SGD step at lr 1 moves each parameter by
minus its gradient)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from torchlean import optim
from torchlean.nn.layers import Layer, ParamSpec
from torchlean.trainer import RunConfig, Trainer

WIDTH = 3


@dataclass(frozen=True)
class Broadcasting(Layer):
    """``2 * s * (x W^T + b)`` with ``b (3,)``, ``s (1,)`` and the 2 a 0-d constant."""

    kind = "broadcasting"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (WIDTH,)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5), ParamSpec("b", (WIDTH,), "uniform", 0.5),
                ParamSpec("s", (1,), "uniform", 0.5))

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        h = ops.add(ops.linear(x, params[0], None), params[1])
        h = ops.mul(params[2], h)  # the broadcast operand first
        return ops.mul(h, ops.constant(np.array(2.0)))


def _trainer(execution: str, profile: str, lr: float = 0.1) -> Trainer[Any, Any]:
    return Trainer(Broadcasting(), input_shape=(WIDTH,), seed=3,
                   config=RunConfig(optim.sgd(lr), execution=execution, profile=profile, dtype="float64"))


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_broadcasting_ops_train_alike_in_both_modes(profile: str) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, WIDTH)), rng.standard_normal((4, WIDTH))
    runs = []
    for execution in ("eager", "typed-graph"):
        trainer = _trainer(execution, profile)
        losses = [trainer.step(x, y) for _ in range(3)]
        runs.append((losses, trainer.predict(np.ones((2, WIDTH))), trainer.model.state()))
    (eager_losses, eager_out, eager_state), (graph_losses, graph_out, graph_state) = runs
    assert eager_losses == graph_losses
    assert np.array_equal(eager_out, graph_out)
    assert all(np.array_equal(eager_state[name], graph_state[name]) for name in eager_state)


def test_the_broadcast_parameters_gradients_match_finite_differences() -> None:
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((4, WIDTH)), rng.standard_normal((4, WIDTH))
    trainer = _trainer("typed-graph", "checked_cpu", lr=1.0)
    before = {name: value.copy() for name, value in trainer.model.state().items()}
    trainer.step(x, y)
    after = trainer.model.state()

    def loss(state: dict[str, np.ndarray]) -> float:
        w, b, s = state["w"], state["b"], state["s"]
        out = 2.0 * s * (x @ w.T + b)
        return float(np.mean((out - y) ** 2))

    names = {name[-1:]: name for name in before}
    assert set(names) == {"w", "b", "s"}
    ordered = {key: before[names[key]] for key in ("w", "b", "s")}
    step = 1e-6
    for key, value in ordered.items():
        for index in np.ndindex(value.shape):
            up = {k: v.copy() for k, v in ordered.items()}
            down = {k: v.copy() for k, v in ordered.items()}
            up[key][index] += step
            down[key][index] -= step
            numeric = (loss(up) - loss(down)) / (2 * step)
            moved = before[names[key]][index] - after[names[key]][index]
            assert abs(moved - numeric) <= 1e-7 * max(1.0, abs(numeric)), (key, index, moved, numeric)


@dataclass(frozen=True)
class PlusOne(Layer):
    """``x W^T + 1.0``: a Python number, which eager's functional ``add`` takes (the typed graph
    has no node for it)."""

    kind = "plus_one"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (WIDTH,)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.mul(ops.add(ops.linear(x, params[0], None), 1.0), 2.0)


def test_a_number_operand_still_trains_eagerly() -> None:
    """review171 F4: broadcasting the operands asked a Python number for its shape (a bare
    AttributeError); eager leaves numbers and arrays to functional add and mul, as before."""
    trainer = Trainer(PlusOne(), input_shape=(WIDTH,), seed=3,
                      config=RunConfig(optim.sgd(0.1), execution="eager", dtype="float64"))
    x = np.ones((2, WIDTH))
    w = trainer.model.state()["w"].copy()
    assert np.allclose(trainer.predict(x), (x @ w.T + 1.0) * 2.0, rtol=1e-15, atol=0)
