"""review243 F5: ``embedding`` range-checks the ids a zero-strided view stores, not every position
it declares (``np.broadcast_to(np.int64(0), (2**33,))`` was scanned in full before the output's
allocation failed); the refusal, the values and the recorded ops are as before."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest

import torchlean as tl
import torchlean.functional._embedding as embedding_module
from torchlean.backend.errors import GuardError

WEIGHT = np.arange(12, dtype=np.float32).reshape(4, 3)


@pytest.fixture
def scanned(monkeypatch: pytest.MonkeyPatch) -> list[int]:
    sizes: list[int] = []
    scan = embedding_module.id_outside

    def counted(ids: Any, count: int) -> Any:
        sizes.append(int(ids.size))
        return scan(ids, count)

    monkeypatch.setattr(embedding_module, "id_outside", counted)
    return sizes


def test_an_out_of_range_id_of_a_broadcast_view_is_found_by_one_read(scanned: list[int]) -> None:
    ids = np.broadcast_to(np.int64(7), (2**24,))
    with pytest.raises(GuardError, match=r"^embedding: id 7 is out of range for 4 embeddings \(accepted"):
        tl.embedding(ids, tl.tensor(WEIGHT))
    assert scanned == [1]


@pytest.mark.parametrize("ids", [
    np.broadcast_to(np.int64(2), (64, 3)),
    np.broadcast_to(np.array([0, 3, 1], dtype=np.int32), (5, 3)),
    np.broadcast_to(np.array([[1], [2]], dtype=np.uint8), (2, 6)),
    np.array([[3, 0], [1, 1]]),
    np.zeros((0, 2), dtype=np.int64),
])
def test_views_give_the_rows_of_their_ids(ids: np.ndarray, scanned: list[int]) -> None:
    out = tl.embedding(ids, tl.tensor(WEIGHT)).numpy()
    assert out.dtype == np.float32 and out.shape == (*ids.shape, 3)
    assert np.array_equal(out, WEIGHT[ids])
    stored = 1 if ids.size else 0
    for axis, stride in enumerate(ids.strides):
        stored *= 1 if stride == 0 else ids.shape[axis]
    assert scanned == ([stored] if ids.size else [0])


def test_a_broadcast_view_with_padding_keeps_the_gradient_rules() -> None:
    weight = tl.tensor(WEIGHT.astype(np.float64), requires_grad=True)
    ids = np.broadcast_to(np.array([0, 2, 2]), (4, 3))
    out = tl.embedding(ids, weight, padding_idx=2)
    assert np.array_equal(out.numpy(), WEIGHT.astype(np.float64)[ids])
    out.sum().backward()
    grad = weight.grad.numpy()
    assert np.array_equal(grad[:, 0], [4.0, 0.0, 0.0, 0.0]) and np.array_equal(grad[2], [0.0, 0.0, 0.0])
