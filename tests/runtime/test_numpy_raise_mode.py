"""With ``np.seterr(all="raise")`` (a common way to hunt NaNs), plain tensor arithmetic and
casts that underflow gave numpy's own ``FloatingPointError`` ("underflow encountered in cast /
reciprocal") from outside the kernels, where the same overflow already gave ``inf`` (review109
F2). Oracle: torch float64/float32 on the same values."""

from __future__ import annotations

from collections.abc import Callable, Iterator

import numpy as np
import pytest
import torch

import torchlean as tl


@pytest.fixture(autouse=True)
def numpy_raises() -> Iterator[None]:
    before = np.seterr(all="raise")
    try:
        yield
    finally:
        np.seterr(**before)


ONES32 = np.ones(2, np.float32)
CASES: list[tuple[str, Callable[[], tl.Tensor], Callable[[], torch.Tensor]]] = [
    ("divide by a subnormal and a huge value",
     lambda: tl.tensor(np.array([1.0, 2.0])) / tl.tensor(np.array([1e-310, 1e308])),
     lambda: torch.tensor([1.0, 2.0], dtype=torch.float64)
     / torch.tensor([1e-310, 1e308], dtype=torch.float64)),
    ("a float32 tensor times a float64 array of tiny values",
     lambda: tl.tensor(ONES32) * np.array([1e-50, 1.0]),
     lambda: torch.tensor(ONES32) * torch.tensor([1e-50, 1.0], dtype=torch.float64).to(torch.float32)),
    ("a float32 tensor over a tiny scalar",
     lambda: tl.tensor(ONES32) / 1e-45,
     lambda: torch.tensor(ONES32) / 1e-45),
    ("a float32 tensor of a tiny value",
     lambda: tl.tensor([1e-50], dtype="float32"),
     lambda: torch.tensor([1e-50], dtype=torch.float32)),
    ("copy_ of a tiny float64 value into float32",
     lambda: tl.tensor(np.ones(1, np.float32)).copy_(np.array([1e-50])),
     lambda: torch.ones(1).copy_(torch.tensor([1e-50], dtype=torch.float64))),
]


@pytest.mark.parametrize(("what", "ours", "theirs"), CASES, ids=[case[0] for case in CASES])
def test_underflow_outside_the_kernels_runs_as_torch_does(
    what: str, ours: Callable[[], tl.Tensor], theirs: Callable[[], torch.Tensor]
) -> None:
    np.testing.assert_array_equal(ours().numpy(), theirs().numpy(), err_msg=what)
