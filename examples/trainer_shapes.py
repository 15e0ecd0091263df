"""A shape-typed trainer: ``Trainer[Shape[4], Shape[1]]`` in both execution modes.

The trainer's type carries the per-sample input and output shapes; the execution mode is an
ordinary ``RunConfig`` field, so the eager and the typed-graph trainer have the same type
(anchor-runtime.md §3.1: ``bsTrainer .eager : Trainer [4] [1]``). A function that accepts only
``Trainer[Shape[4], Shape[1]]`` takes both, and mypy (``--strict`` with the plugin
``torchlean.mypy_plugin``) rejects a trainer of any other shape (examples/mypy/shapes_mismatch.py).
At run time, :func:`torchlean.shapes.check_dims` checks the data against the declared shapes.

Run: ``python examples/trainer_shapes.py``; type-check: ``python -m mypy examples/trainer_shapes.py``.
"""

from __future__ import annotations

from typing import Any, Literal, TypeAlias

import numpy as np
import numpy.typing as npt

from torchlean import nn, optim
from torchlean.shapes import Shape, check_dims
from torchlean.trainer import ExecutionMode, Objective, RunConfig, Trainer

Rows: TypeAlias = npt.NDArray[np.float32]

# A batch of rows of 4 features, and their targets; `Any` is the batch size, known at run time.
# These are evaluated subscripts, so the dimensions are spelled as Literal[...] here.
INPUT_BATCH = Shape[Any, Literal[4]]
TARGET_BATCH = Shape[Any, Literal[1]]


def four_to_one(execution: ExecutionMode) -> Trainer[Shape[4], Shape[1]]:
    """``linear 4 -> 8 -> relu -> linear 8 -> 1`` with MSE and Adam (lr 0.01), seed 0."""
    model = nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1))
    config = RunConfig(optimizer=optim.adam(lr=0.01), execution=execution)
    return Trainer(model, objective=Objective.MSE, config=config, seed=0)


def fit(trainer: Trainer[Shape[4], Shape[1]], x: Rows, y: Rows, *, epochs: int) -> list[float]:
    """Train on ``x`` ``(n, 4)`` and ``y`` ``(n, 1)`` after checking them against the shape types."""
    check_dims(INPUT_BATCH, x.shape, what="inputs")
    check_dims(TARGET_BATCH, y.shape, what="targets")
    return trainer.fit(x, y, epochs=epochs, batch_size=16)


def data(n: int, seed: int) -> tuple[Rows, Rows]:
    """``y = 0.8 relu(x0 + x1) - 0.4 relu(x3 - x2) + 0.2`` on standard normal rows."""
    x = np.random.default_rng(seed).standard_normal((n, 4)).astype(np.float32)
    y = 0.8 * np.maximum(x[:, 0] + x[:, 1], 0) - 0.4 * np.maximum(x[:, 3] - x[:, 2], 0) + 0.2
    return x, y.reshape(n, 1).astype(np.float32)


def main() -> None:
    x, y = data(128, seed=1)
    x_test, y_test = data(32, seed=2)
    eager = four_to_one(ExecutionMode.EAGER)
    graph = four_to_one(ExecutionMode.TYPED_GRAPH)
    eager_losses = fit(eager, x, y, epochs=5)
    graph_losses = fit(graph, x, y, epochs=5)
    print("epoch losses:", " ".join(f"{loss:.6f}" for loss in eager_losses))
    print("typed graph identical:", eager_losses == graph_losses)
    print(f"test_mse={eager.evaluate(x_test, y_test)['mse']:.6f}")


if __name__ == "__main__":
    main()
