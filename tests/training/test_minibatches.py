"""``data.minibatches``: torch's ``DataLoader(TensorDataset(...))`` minibatches for a loop of one's
own, in ``Trainer.fit``'s order (a loop over them trains exactly as ``fit(shuffle=True)``)."""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import data, nn, optim
from torchlean.batches import BatchError
from torchlean.trainer import RunConfig, Trainer


@pytest.mark.parametrize("drop_last", [False, True])
def test_row_order_is_torchs_dataloader(drop_last):
    x, y = np.arange(22.0).reshape(11, 2), np.arange(11)
    ours = list(data.minibatches(x, y, batch_size=4, drop_last=drop_last))
    loader = torch.utils.data.DataLoader(
        torch.utils.data.TensorDataset(torch.tensor(x), torch.tensor(y)), batch_size=4, drop_last=drop_last
    )
    theirs = [(a.numpy(), b.numpy()) for a, b in loader]
    assert len(ours) == len(theirs) == (2 if drop_last else 3)
    for (xa, ya), (xb, yb) in zip(ours, theirs, strict=True):
        np.testing.assert_array_equal(xa, xb)
        np.testing.assert_array_equal(ya, yb)


def test_a_loop_over_them_trains_as_fit_with_shuffling():
    """Three epochs of shuffled minibatches of 5 (the last of 2) through Model.forward and
    Optimizer.step_ give Trainer.fit(shuffle=True)'s weights bit for bit."""
    layer = nn.sequential(nn.linear(3, 4), nn.tanh(), nn.linear(4, 2))
    rng = np.random.default_rng(0)
    x, labels = rng.standard_normal((12, 3)), rng.integers(0, 2, size=12)
    config = RunConfig(optim.sgd(0.1, 0.9), dtype="float64")
    trainer = Trainer(layer, objective="cross-entropy", config=config, seed=7)
    model = nn.build(layer, seed=7, dtype="float64")
    params = model.tensors()
    sgd = optim.sgd(0.1, 0.9).create(model.parameters)
    trainer.fit(x, labels, epochs=3, batch_size=5, shuffle=True)
    seen = []
    with tl.session(profile="checked_cpu"):
        for epoch in range(3):
            for xb, yb in data.minibatches(x, labels, batch_size=5, shuffle=True, seed=7, epoch=epoch):
                seen.append(yb.tolist())
                tl.cross_entropy(model(tl.tensor(xb), params, training=True), yb).backward()
                sgd.step_(params)
    model.load_tensors(params)
    for name, value in model.state().items():
        assert np.array_equal(value, trainer.model.state()[name]), name
    assert len(seen) == 9 and seen[0] != sorted(seen[0])  # shuffled
    assert [len(b) for b in seen[:3]] == [5, 5, 2]


def test_one_array_and_three_arrays():
    (only,) = list(data.minibatches(np.arange(3), batch_size=8))
    assert only[0].tolist() == [0, 1, 2]
    batches = list(data.minibatches(np.arange(4), np.arange(4) * 2, np.ones((4, 2)), batch_size=3))
    assert [len(b) for b in batches] == [3, 3] and batches[1][1].tolist() == [6]


@pytest.mark.parametrize(
    ("arrays", "kwargs", "message"),
    [
        ((), {}, "needs at least one array"),
        ((np.ones(3), np.ones(4)), {}, r"different lengths \[3, 4\]"),
        ((np.float64(1.0),), {}, "array 0 is a scalar"),
        ((np.ones(3),), {"batch_size": 0}, "batch_size must be an int >= 1, got 0"),
        ((np.ones(3),), {"batch_size": True}, "batch_size must be an int >= 1, got True"),
        ((np.ones(3),), {"epoch": -1}, "epoch must be an int >= 0, got -1"),
        ((np.ones(3),), {"seed": -1}, r"seed must be an int in \[0, 2\*\*64\), got -1"),
        ((np.ones(3),), {"shuffle": "yes"}, "shuffle must be a bool, got 'yes'"),
        ((np.ones(3),), {"drop_last": 1}, "drop_last must be a bool, got 1"),
        # review100 M2: every epoch got the same order when epoch= was left out
        ((np.ones(3),), {"shuffle": True}, r"minibatches\(shuffle=True\) needs epoch= \(the epoch's number"),
        ((np.ones(3),), {"shuffle": np.True_}, r"needs epoch="),
    ],
)
def test_refusals_come_before_the_first_minibatch(arrays, kwargs, message):
    with pytest.raises(BatchError, match=message):
        data.minibatches(*arrays, **kwargs)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"n": -3}, "n must be an int >= 0, got -3"),
        ({"n": 2.0}, "n must be an int >= 0, got 2.0"),
        ({"n": 2**64}, r"n must be an int in \[0, 2\*\*63\), got 18446744073709551616"),
        ({"seed": -1}, r"seed must be an int in \[0, 2\*\*64\), got -1"),
        ({"epoch": -1}, "epoch must be an int >= 0, got -1"),
        ({"shuffle": 1}, "shuffle must be a bool, got 1"),
    ],
)
def test_order_checks_its_settings_as_minibatches(kwargs, message):
    """review73 F5: the public ``order`` refused nothing (numpy's bare ValueError for a negative
    seed, an empty order for a negative n)."""
    from torchlean.batches import order

    settings = {"n": 5, "shuffle": True, "seed": 0, "epoch": 0, **kwargs}
    with pytest.raises(BatchError, match=message):
        order(**settings)


def test_order_is_numpys_permutation_by_hand():
    from torchlean.batches import order

    np.testing.assert_array_equal(order(6, shuffle=True, seed=3, epoch=2),
                                  np.random.default_rng([3, 2]).permutation(6))
    np.testing.assert_array_equal(order(4, shuffle=np.bool_(False), seed=0, epoch=0), [0, 1, 2, 3])
    assert order(0, shuffle=True, seed=0, epoch=0).shape == (0,)


def test_without_shuffle_epoch_is_not_needed_and_changes_nothing() -> None:
    x = np.arange(10)
    rows = [b.tolist() for (b,) in data.minibatches(x, batch_size=4)]
    assert rows == [[0, 1, 2, 3], [4, 5, 6, 7], [8, 9]]
    assert [b.tolist() for (b,) in data.minibatches(x, batch_size=4, epoch=3)] == rows
    assert [b.tolist() for (b,) in data.minibatches(x, batch_size=4, shuffle=False)] == rows
