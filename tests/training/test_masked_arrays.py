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


def test_a_structured_masked_array_gets_the_dtype_refusal() -> None:
    """review135 F1: ``np.genfromtxt(..., names=True, usemask=True)`` gives a structured masked
    array, whose mask has fields: counting it raised numpy's UFuncTypeError at every entry point.
    Its fields are not one array of numbers: the dtype refusal says so, as without a mask."""
    import io

    m = np.genfromtxt(io.StringIO("a,b\n1.0,2.0\n3.0,\n"), delimiter=",", names=True, usemask=True)
    with pytest.raises(TrainerError, match=r"^inputs must be real numbers .* got dtype \[\('a', '<f8'\)"):
        Trainer(nn.linear(2, 3), objective="cross-entropy").predict(m)
    with pytest.raises(TensorError, match=r"is not numeric data"):
        tl.tensor(m)


def test_masked_rows_in_a_list_and_masked_operands_are_refused() -> None:
    """review135 F2: the rows of a masked array in a list (``list(m)``), ``np.ma.masked`` in a
    list, and masked operands, targets and written values reached the kernels with their hidden
    values."""
    rows = list(MASKED_X)
    with pytest.raises(TrainerError, match=r"^inputs: element 3: a masked array with 1 masked entry "
                                           r"\(the first at index \(2,\)\)"):
        _trainer().fit(rows, Y)
    with pytest.raises(TensorError, match=r"^cannot create a tensor from element 1: np\.ma\.masked"):
        tl.tensor([1.0, np.ma.masked, 3.0])
    with pytest.raises(TensorError, match=r"^cannot create a tensor from a masked array with a masked "
                                          r"value: torchlean reads no missing values"):
        tl.tensor(np.ma.masked_array(3.0, mask=True))
    hidden = np.ma.masked_array([1.0, 1e6], mask=[False, True])
    t = tl.tensor(np.zeros(2))
    with pytest.raises(TensorError, match=r"^a constant operand: a masked array with 1 masked entry"):
        _ = t + hidden
    with pytest.raises(TensorError, match=r"^a constant operand: a masked array"):
        tl.mse_loss(t, hidden)
    with pytest.raises(TensorError, match=r"^cross_entropy: target: a masked array"):
        tl.cross_entropy(tl.tensor(np.zeros((2, 3))), np.ma.masked_array([0, 1], mask=[False, True]))
    with pytest.raises(TensorError, match=r"^the value of an item assignment: a masked array"):
        t[...] = hidden
    np.testing.assert_array_equal(t.numpy(), [0.0, 0.0])  # nothing was written
    np.testing.assert_array_equal((t + np.ma.masked_array([1.0, 2.0])).numpy(), [1.0, 2.0])
