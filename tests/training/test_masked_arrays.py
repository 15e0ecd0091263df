"""review133 F3: a numpy masked array marks missing values (``np.genfromtxt(usemask=True)``), but
``np.asarray`` hands over the hidden values under its mask: ``fit`` trained on them without a word.
A masked array with a masked entry is now refused wherever data enter (naming the first entry);
one with nothing masked is read as its values."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean import data, nn
from torchlean.batches import BatchError
from torchlean.tensor import TensorError
from torchlean.trainer import Trainer, TrainerError

X = np.random.default_rng(0).random((20, 4))
Y = np.arange(20) % 3
MASK = np.zeros((20, 4), dtype=bool)
MASK[3, 2] = MASK[7, 0] = True
HIDDEN = np.where(MASK, 1e6, X)  # a placeholder under the mask, far from the data
MASKED_X = np.ma.masked_array(HIDDEN, mask=MASK)
MASKED_Y = np.ma.masked_array(Y, mask=Y == 2)


def _trainer() -> Trainer[Any, Any]:
    return Trainer(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 3)), objective="cross-entropy")


CALLS: dict[str, Callable[[Trainer[Any, Any]], object]] = {
    "fit-x": lambda t: t.fit(MASKED_X, Y),
    "fit-y": lambda t: t.fit(X, MASKED_Y),
    "fit-validation": lambda t: t.fit(X, Y, validation=(MASKED_X, Y)),
    "step": lambda t: t.step(MASKED_X, Y),
    "predict": lambda t: t.predict(MASKED_X),
    "evaluate": lambda t: t.evaluate(X, MASKED_Y),
}


@pytest.mark.parametrize("call", CALLS)
def test_a_masked_entry_is_refused_naming_the_first(call: str) -> None:
    t = _trainer()
    with pytest.raises(TrainerError) as caught:
        CALLS[call](t)
    message = str(caught.value)
    if call.endswith("-y") or call == "evaluate":
        assert "targets: a masked array with 6 masked entries (the first at index (2,))" in message
    else:
        assert "a masked array with 2 masked entries (the first at index (3, 2))" in message
    assert "m.filled(value)" in message
    assert t.selected == []  # refused before anything ran


def test_elsewhere_too() -> None:
    with pytest.raises(TensorError, match=r"^cannot create a tensor from a masked array with 2 masked"):
        tl.tensor(MASKED_X)
    with pytest.raises(BatchError, match=r"masked array with 2 masked entries"):
        list(data.minibatches(MASKED_X, batch_size=4))


def test_a_masked_array_with_nothing_masked_is_its_values() -> None:
    plain, masked = _trainer(), _trainer()
    unmasked = np.ma.masked_array(X, mask=np.zeros_like(MASK))
    assert masked.fit(unmasked, np.ma.masked_array(Y)) == plain.fit(X, Y)
    np.testing.assert_array_equal(masked.predict(unmasked), plain.predict(X))
    np.testing.assert_array_equal(tl.tensor(np.ma.masked_array(X)).numpy(), X)
