"""Minibatches of numpy arrays for a training loop of one's own: torch's
``DataLoader(TensorDataset(*arrays), batch_size, shuffle, drop_last)``, in the order
``Trainer.fit`` takes them, so a loop over :func:`minibatches` sees the trainer's minibatches.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._checks import checked_int, is_int
from torchlean._tensor_data import host_array
from torchlean.backend.errors import TorchLeanError

__all__ = ["BatchError", "minibatches", "order"]


class BatchError(TorchLeanError, ValueError):
    """A bad minibatch setting or arrays of different lengths (the message names the value)."""


def order(n: int, *, shuffle: bool, seed: int, epoch: int) -> npt.NDArray[np.int64]:
    """The row order of epoch ``epoch``: ``np.random.default_rng([seed, epoch]).permutation(n)``
    with ``shuffle``, else ``0, 1, ..., n - 1`` (the order :meth:`Trainer.fit` uses with the
    trainer's ``seed``); an int64 array of shape ``(n,)``.

    Raises:
        BatchError: ``n`` not an int in ``[0, 2**63)``, ``epoch`` not an int >= 0, ``seed`` not an int in
            ``[0, 2**64)``, ``shuffle`` not a bool (numpy bools accepted), as :func:`minibatches`.
    """
    n = checked_int(n, "n", 0, BatchError)
    if n > 2**63 - 1:  # numpy's permutation and arange take int64 lengths (review75 F10)
        raise BatchError(f"n must be an int in [0, 2**63), got {n}")
    shuffle, seed, epoch = _checked_order(shuffle, seed, epoch)
    return _order(n, shuffle, seed, epoch)


def _checked_order(shuffle: object, seed: object, epoch: object) -> tuple[bool, int, int]:
    """``shuffle``, ``seed`` and ``epoch`` checked as :func:`order` documents, as Python values."""
    epoch = checked_int(epoch, "epoch", 0, BatchError)
    if not isinstance(shuffle, (bool, np.bool_)):
        raise BatchError(f"shuffle must be a bool, got {shuffle!r}")
    if not (is_int(seed) and 0 <= int(seed) < 2**64):
        raise BatchError(f"seed must be an int in [0, 2**64), got {seed!r}")
    return bool(shuffle), int(seed), epoch


def _order(n: int, shuffle: bool, seed: int, epoch: int) -> npt.NDArray[np.int64]:
    if shuffle:
        return np.random.default_rng([seed, epoch]).permutation(n)
    return np.arange(n)


def minibatches(
    *arrays: npt.ArrayLike,
    batch_size: int = 32,
    shuffle: bool = False,
    seed: int = 0,
    epoch: int | None = None,
    drop_last: bool = False,
) -> Iterator[tuple[npt.NDArray[Any], ...]]:
    """One epoch of minibatches: tuples ``(a[index], b[index], ...)`` of ``batch_size`` rows of
    each array (numpy copies along the first axis; the last minibatch may be smaller, and with
    ``drop_last`` it is left out), as torch's ``DataLoader(TensorDataset(*arrays), batch_size,
    shuffle, drop_last)`` yields them. With ``shuffle`` the rows come in the order
    ``np.random.default_rng([seed, epoch]).permutation(n)`` — ``Trainer.fit``'s order for the
    trainer's ``seed`` and epoch ``epoch`` — else in row order (torch's default, ``shuffle=False``).
    The order is a function of ``(seed, epoch)``, so ``shuffle=True`` needs ``epoch`` (0, 1, ...
    in a loop over epochs): a ``DataLoader`` reshuffles on every pass, and the same epoch number
    on every pass would give every epoch one order (review100 M2); without ``shuffle`` it is not
    needed. Every setting is checked before the first minibatch.

    Raises:
        BatchError: no arrays, arrays of different lengths or of rank 0, ragged nested lists, an
            object that is not array data (``None``, a dict, a generator: named by its type), a
            torch tensor that requires grad (pass ``t.detach()``) or has no dense values,
            ``batch_size`` not an int >= 1, ``shuffle`` without ``epoch``, ``epoch`` not an int
            >= 0, ``seed`` not an int in ``[0, 2**64)``, ``shuffle`` or ``drop_last`` not a bool
            (numpy bools accepted).
    """
    if epoch is None:
        if isinstance(shuffle, bool | np.bool_) and shuffle:
            raise BatchError(
                "minibatches(shuffle=True) needs epoch= (the epoch's number, 0, 1, ...): the order is a "
                "function of (seed, epoch), so one epoch number would give every epoch the same order, "
                "where torch's DataLoader reshuffles on each pass"
            )
        epoch = 0
    batch_size = checked_int(batch_size, "batch_size", 1, BatchError)
    shuffle, seed, epoch = _checked_order(shuffle, seed, epoch)
    if not isinstance(drop_last, (bool, np.bool_)):
        raise BatchError(f"drop_last must be a bool, got {drop_last!r}")
    if not arrays:
        raise BatchError("minibatches needs at least one array (as TensorDataset(*arrays))")
    values = [
        host_array(a, f"array {index}", BatchError, "array data (accepted: arrays with rows along a first "
                   "axis: a numpy array, a torchlean or torch tensor, or nested lists)")
        for index, a in enumerate(arrays)
    ]
    for index, value in enumerate(values):
        if value.ndim == 0:
            raise BatchError(f"array {index} is a scalar; minibatches take rows along a first axis")
    lengths = [value.shape[0] for value in values]
    if len(set(lengths)) > 1:
        raise BatchError(
            f"the arrays have different lengths {lengths} (accepted: one length, as TensorDataset)"
        )
    rows = _order(lengths[0], shuffle, seed, epoch)
    return _batches(values, batch_size, rows, bool(drop_last))


def _batches(
    values: list[npt.NDArray[Any]], batch_size: int, rows: npt.NDArray[np.int64], drop_last: bool
) -> Iterator[tuple[npt.NDArray[Any], ...]]:
    n = rows.shape[0]
    stop = n - n % batch_size if drop_last else n
    for start in range(0, stop, batch_size):
        index = rows[start : start + batch_size]
        yield tuple(value[index] for value in values)
