"""review243 F6: a static mask given to the IR builder as a boolean array was read entry by entry
into ``HardMask`` before its shape was compared with the scores' (a 64 MiB mask of the wrong shape
took 10 s and 1 GB to be refused; a view declaring 2**38 entries ended in a bare MemoryError)."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean.ir import GraphBuilder, HardMask, IRError, evaluate


def test_a_mask_of_the_wrong_shape_is_refused_before_its_entries_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    read: list[object] = []
    original = HardMask.from_array
    monkeypatch.setattr(HardMask, "from_array", classmethod(lambda cls, m: read.append(m) or original(m)))
    b = GraphBuilder()
    x = b.input((2, 3))
    for mask, shown in [
        (np.broadcast_to(np.True_, (2**38, 2, 3)), "[274877906944, 2, 3]"),
        (np.ones((4, 3), bool), "[4, 3]"),
    ]:
        with pytest.raises(IRError) as info:
            b.hard_masked_softmax(x, mask)
        assert str(info.value) == f"hard_masked_softmax: mask shape {shown} does not broadcast to [2, 3]"
    assert read == []


def test_a_mask_read_from_an_array_keeps_its_entries_and_its_values() -> None:
    """Control: the faster reading (``tolist``) gives the same Python bools, equality and values."""
    mask = np.array([[True, False, True], [False, False, True]])
    hard = HardMask.from_array(mask)
    assert hard == HardMask((2, 3), (True, False, True, False, False, True))
    assert hard.allowed == (True, False, True, False, False, True)
    assert all(type(a) is bool for a in hard.allowed)
    assert HardMask((2,), (np.True_, False)).allowed == (True, False)
    np.testing.assert_array_equal(hard.to_array(), mask)
    with pytest.raises(IRError, match=r"^hard mask: allowed entries must be booleans$"):
        HardMask((2,), (True, 1))  # type: ignore[arg-type]
    b = GraphBuilder()
    x = b.input((2, 3))
    node = b.hard_masked_softmax(x, mask)
    built = b.build()
    scores = np.array([[0.0, 5.0, 0.0], [1.0, 2.0, 3.0]], np.float32)
    out = evaluate(built.graph, {x: scores}, built.payloads)[node]
    np.testing.assert_allclose(out, [[0.5, 0.0, 0.5], [0.0, 0.0, 1.0]], rtol=1e-6)
