"""review144 F2: every cached typed-graph program held a full copy of the model's weights (its
lowering's payloads), which no run reads: the executor feeds the current parameters. A program
now keeps only the payloads of nodes not fed from the model, so a new batch shape costs no copy
of the weights; the bits stay eager's (the typed-graph tests)."""

from __future__ import annotations

import gc
import tracemalloc
from typing import Any

import numpy as np

from torchlean import nn, optim
from torchlean.trainer import RunConfig, Trainer


def _nbytes(value: Any) -> int:
    if isinstance(value, np.ndarray):
        return value.nbytes
    fields = getattr(value, "__dataclass_fields__", None)
    return sum(_nbytes(getattr(value, name)) for name in fields) if fields else 0


def test_cached_programs_hold_no_copy_of_the_weights() -> None:
    layer = nn.sequential(nn.linear(64, 256), nn.relu(), nn.layer_norm(256), nn.linear(256, 10))
    trainer = Trainer(layer, objective="cross-entropy", seed=0,
                      config=RunConfig(optim.adam(0.01), execution="typed-graph", dtype="float64"))
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((40, 64)), rng.integers(0, 10, 40)
    trainer.fit(x, y, epochs=1, batch_size=16)  # shapes 16 and 8
    weights = sum(p.nbytes for p in trainer.model.parameters)
    programs = [step.program for step in trainer._graphs.values()]
    held = [sum(_nbytes(p) for p in program.fixed_payloads.values()) for program in programs]
    assert len(held) == 2 and max(held) < weights / 100, (held, weights)

    gc.collect()
    tracemalloc.start()
    try:
        before = tracemalloc.get_traced_memory()[0]
        for rows in range(1, 6):  # five new programs
            trainer.predict(x[:rows])
        gc.collect()
        grown = tracemalloc.get_traced_memory()[0] - before
    finally:
        tracemalloc.stop()
    assert grown < weights, (grown, weights)  # five copies of the weights were about 5x
