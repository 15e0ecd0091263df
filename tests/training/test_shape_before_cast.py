"""review243 F4/F5: the Trainer and Model.load_state refuse data by its declared shape (feature
shape, row count, the ids' shape) before casting it to the model dtype or range-scanning ids.

The data are zero-strided numpy views declaring a million rows over a few bytes: the old code cast
them in full (16 MiB and more, seen by tracemalloc) before the same refusal; the messages are
pinned as they were.
"""

from __future__ import annotations

import tracemalloc
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchlean.trainer as trainer_module
from torchlean import nn
from torchlean.nn.model import StateError
from torchlean.trainer import Objective, Trainer, TrainerError

ROWS = 2**22
BOUND = 4 << 20  # bytes: a cast of any of these views takes 32 MiB or more


def _peak(call: Callable[[], Any], error: type[Exception], match: str) -> int:
    tracemalloc.start()
    try:
        with pytest.raises(error, match=match):
            call()
        return tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()


def _linear() -> Trainer:
    return Trainer(nn.sequential(nn.linear(3, 1)), objective=Objective.MSE)


def _view(*shape: int, dtype: type = np.float64) -> np.ndarray:
    return np.broadcast_to(dtype(0), shape)


@pytest.mark.parametrize("method", ["predict", "fit", "evaluate", "step"])
def test_inputs_of_another_feature_shape_are_refused_before_the_cast(method: str) -> None:
    trainer = _linear()
    x, y = _view(ROWS, 4), _view(ROWS, 1)
    calls: dict[str, Callable[[], Any]] = {
        "predict": lambda: trainer.predict(x),
        "fit": lambda: trainer.fit(x, y, epochs=1),
        "evaluate": lambda: trainer.evaluate(x, y),
        "step": lambda: trainer.step(x, y),
    }
    match = rf"^inputs must have shape \(n, 3\), got \({ROWS}, 4\)$"
    assert _peak(calls[method], TrainerError, match) < BOUND


@pytest.mark.parametrize("method", ["fit", "evaluate", "step"])
def test_inputs_with_another_row_count_than_the_targets_are_refused_before_the_cast(method: str) -> None:
    trainer = _linear()
    x, y = _view(ROWS, 3), np.zeros((4, 1))
    calls: dict[str, Callable[[], Any]] = {
        "fit": lambda: trainer.fit(x, y, epochs=1),
        "evaluate": lambda: trainer.evaluate(x, y),
        "step": lambda: trainer.step(x, y),
    }
    assert _peak(calls[method], TrainerError, rf"^got {ROWS} inputs but 4 targets$") < BOUND


def test_targets_of_another_shape_are_refused_before_the_inputs_are_cast() -> None:
    trainer = _linear()
    x, y = _view(ROWS, 3), _view(ROWS, 2)
    match = rf"^targets must have shape \(n, 1\) or \(n,\) \(n = {ROWS}, the inputs' rows"
    assert _peak(lambda: trainer.fit(x, y, epochs=1), TrainerError, match) < BOUND


def test_the_overflow_refusal_is_unchanged_and_comes_after_the_shape_refusal() -> None:
    trainer = _linear()
    x = np.array([[1.0, 2e39, -3e39], [np.inf, 0.0, 1.0]])
    with pytest.raises(TrainerError, match=(
        r"^inputs hold 2 values beyond the float32 range \(largest magnitude 3e\+39; accepted: magnitude "
        r"at most 3\.4028235e\+38, as numpy prints float32's largest value; use dtype float64\)$"
    )):
        trainer.predict(x)
    with pytest.raises(TrainerError, match=r"^inputs must have shape \(n, 3\), got \(1, 4\)$"):
        trainer.predict(np.array([[1e39, 0.0, 0.0, 0.0]]))
    with pytest.raises(TrainerError, match=r"^inputs hold 1 value beyond the float32 range"):
        trainer.fit(np.array([[1e39, 0.0, 0.0]]), np.zeros((1, 1)), epochs=1)
    with pytest.raises(TrainerError, match=r"^inputs must be real numbers \(accepted: bool, integer"):
        trainer.predict(np.array([["a", "b", "c", "d"]]))
    with pytest.raises(TrainerError, match=r"^inputs hold 1 NaN or infinite value \(the first in row 1\)"):
        trainer.fit(np.array([[0.0, 0.0, 0.0], [np.inf, 0.0, 0.0]]), np.zeros((2, 1)), epochs=1)
    out = trainer.predict(np.array([[np.inf, 1.0, 2.0]]))  # an infinity as given is no overflow
    assert out.dtype == np.float32 and out.shape == (1, 1)


def _ids_trainer() -> Trainer:
    model = nn.sequential(nn.embedding(4, 3), nn.flatten(), nn.linear(6, 1))
    return Trainer(model, objective=Objective.MSE, input_shape=(2,))


def test_ids_of_another_shape_are_refused_before_the_range_scan(monkeypatch: pytest.MonkeyPatch) -> None:
    trainer = _ids_trainer()
    scans: list[int] = []
    scan = trainer_module.id_outside

    def counted(array: Any, count: int) -> Any:
        scans.append(array.size)
        return scan(array, count)

    monkeypatch.setattr(trainer_module, "id_outside", counted)
    match = rf"^inputs must have shape \(n, 2\), got \({ROWS}, 5\)$"
    ids = _view(ROWS, 5, dtype=np.int64)
    assert _peak(lambda: trainer.predict(ids), TrainerError, match) < BOUND
    assert scans == []
    with pytest.raises(TrainerError, match=r"^inputs hold the id 4, out of range for the model's"):
        trainer.predict(np.array([[0, 4]]))
    assert scans == [2]
    with pytest.raises(TrainerError, match=r"^inputs must be ids, integers in \[0, 4\), for this model"):
        trainer.predict(np.zeros((1, 5)))
    assert trainer.predict(np.array([[0, 3]], dtype=np.int32)).shape == (1, 1)


def test_load_state_refuses_an_entry_by_its_shape_before_the_cast() -> None:
    model = nn.build(nn.sequential(nn.linear(3, 1)), seed=0)
    state = {"0.weight": _view(ROWS, 3), "0.bias": np.zeros(1)}
    match = rf"^state entry 0\.weight has shape \[{ROWS}, 3\], expected \[1, 3\]$"
    assert _peak(lambda: model.load_state(state), StateError, match) < BOUND
    before = model.state()["0.weight"].copy()
    for entry in ([[1.0, 2.0]], torch.zeros(2, 2), torch.zeros(1, 2, dtype=torch.bfloat16)):
        rows = np.shape(entry)[0]
        with pytest.raises(StateError, match=rf"^state entry 0\.weight has shape \[{rows}, 2\], expected"):
            model.load_state({"0.weight": entry, "0.bias": np.zeros(1)})
    for complex_entry in (np.zeros((5, 5), complex), torch.zeros(5, 5, dtype=torch.complex64)):
        with pytest.raises(StateError, match=r"^state entry 0\.weight has dtype complex"):  # first, as before
            model.load_state({"0.weight": complex_entry, "0.bias": np.zeros(1)})
    with pytest.raises(StateError, match=r"^state entry 0\.weight is a torch tensor on the meta device"):
        model.load_state({"0.weight": torch.zeros(5, 5, device="meta"), "0.bias": np.zeros(1)})
    with pytest.raises(StateError, match=r"^state entry 0\.weight holds 1 finite values beyond the float32"):
        model.load_state({"0.weight": np.array([[1e39, 0.0, 0.0]]), "0.bias": np.zeros(1)})
    assert np.array_equal(model.state()["0.weight"], before)
    model.load_state({"0.weight": [[1.0, 2.0, 3.0]], "0.bias": torch.ones(1, dtype=torch.bfloat16)})
    assert np.array_equal(model.state()["0.weight"], [[1.0, 2.0, 3.0]])
    assert model.state()["0.bias"].dtype == np.float32
