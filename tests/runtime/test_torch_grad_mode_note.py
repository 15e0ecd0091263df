"""review138 F2: torch's ``torch.no_grad()`` does not switch torchlean's recording; the in-place
refusals a user meets inside it say so, and say nothing of it outside it."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import torchlean as tl

NOTE = (
    "(torch's grad mode is off here, as under torch.no_grad(): it switches torch's recording, not "
    "torchlean's)"
)


def _leaf() -> tl.Tensor:
    return tl.tensor(np.ones(3), requires_grad=True)


def _subtract(t: tl.Tensor) -> None:
    t -= 0.1


def _set_item(t: tl.Tensor) -> None:
    t[0] = 5.0


def _copy_from_tracked(t: tl.Tensor) -> None:
    t.detach().copy_(_leaf() * 2.0)


def _add_tracked_operand(t: tl.Tensor) -> None:
    plain = t.detach()
    plain += _leaf()


def _indexed_update(t: tl.Tensor) -> None:
    t[0] += 1.0


CASES: dict[str, Callable[[tl.Tensor], None]] = {
    "leaf -=": _subtract,
    "leaf t[0] = v": _set_item,
    "copy_ from a tracked tensor": _copy_from_tracked,
    "+= with a tracked operand": _add_tracked_operand,
    "t[0] += v on a leaf": _indexed_update,
}


@pytest.mark.parametrize("name", list(CASES))
def test_the_refusal_names_torchs_no_grad_only_when_it_is_open(name: str) -> None:
    write = CASES[name]
    with torch.no_grad():
        t = _leaf()
        assert t.requires_grad and tl.is_grad_enabled()  # torch's mode did not switch torchlean's
        with pytest.raises(tl.AutogradError, match=r"torchlean\.no_grad\(\)") as inside:
            write(t)
    assert NOTE in str(inside.value)
    with pytest.raises(tl.AutogradError, match=r"torchlean\.no_grad\(\)") as outside:
        write(_leaf())
    assert "torch.no_grad" not in str(outside.value)
    with tl.no_grad():  # the remedy the message names works
        t = _leaf()
        if name != "copy_ from a tracked tensor":
            write(t)
