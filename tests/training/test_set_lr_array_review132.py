"""review132 F6: an array rate given to set_lr or returned by a schedule gets the float() hint,
not the records' hint on torch's Optimizer(params, lr) order."""

import numpy as np
import pytest

from torchlean import nn, optim
from torchlean.optim import OptimizerError
from torchlean.trainer import RunConfig, Trainer, TrainerError


def test_set_lr_array_names_float() -> None:
    opt = optim.adam(0.1).create([np.zeros(2)])
    hint = r"got array\(\[0\.05\]\): pass it as a number, float\(lr\.item\(\)\)$"
    with pytest.raises(OptimizerError, match=hint):
        opt.set_lr(np.array([0.05]))
    assert opt.config.lr == 0.1


def test_schedule_array_names_float() -> None:
    t = Trainer(nn.linear(4, 3), objective="cross-entropy", config=RunConfig(optim.adam(0.1)))
    with pytest.raises((OptimizerError, TrainerError), match=r"float\(lr\.item\(\)\)") as caught:
        t.fit(np.ones((4, 4)), np.zeros(4, int), lr_schedule=lambda e: np.array([0.05]))
    assert "Optimizer(params, lr)" not in str(caught.value)


def test_record_keeps_params_hint() -> None:
    with pytest.raises(OptimizerError, match=r"Optimizer\(params, lr\)"):
        optim.adam(np.zeros(3))  # type: ignore[arg-type]
