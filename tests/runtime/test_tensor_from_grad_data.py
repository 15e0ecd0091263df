"""review220 F5: ``tl.tensor`` of data that requires grad, as its docstring now states: a tensor
given alone (torchlean's or torch's), or torch tensors in a list, are copied detached (as
``torch.tensor(t)`` copies them); a list holding a torchlean tensor that requires grad is refused
by numpy's conversion, naming ``detach``. Oracle: the values, by hand, and torch's own copy."""

from __future__ import annotations

import warnings

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.tensor import TensorError


def test_a_tensor_alone_is_copied_detached_as_torch_copies_it() -> None:
    a = tl.tensor(np.float64(1.5), requires_grad=True)
    b = a * 2.0
    copied = tl.tensor(b)
    assert not copied.requires_grad and copied.numpy() == 3.0
    t = torch.tensor(1.5, dtype=torch.float64, requires_grad=True) * 2
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch warns that it copies the tensor
        theirs = torch.tensor(t)
    ours = tl.tensor(t)
    assert not theirs.requires_grad and not ours.requires_grad and ours.numpy() == theirs.item() == 3.0
    assert not tl.tensor([t, t]).requires_grad and tl.tensor([t, t]).numpy().tolist() == [3.0, 3.0]


def test_a_list_holding_a_torchlean_tensor_that_requires_grad_is_refused() -> None:
    a = tl.tensor(np.float64(1.5), requires_grad=True)
    with pytest.raises(TensorError) as caught:  # review230 F2: worded as tl.tensor's, not numpy's
        tl.tensor([a, a * 2.0])
    assert str(caught.value) == (
        "cannot create a tensor from list data holding a torchlean tensor that requires grad: the new tensor "
        "would drop its tape history (accepted: its .detach(), or, to keep the history, a tensor built with "
        "torchlean ops such as tl.concat and tl.reshape)"
    )
    assert tl.tensor([a.detach(), (a * 2.0).detach()]).numpy().tolist() == [1.5, 3.0]


def test_writes_and_operands_of_such_lists_are_refused_in_their_own_words() -> None:
    """review231 F9: item assignment, copy_ and constant operands gave numpy's conversion refusal
    ("np.asarray, np.dot, ...", "as torch refuses too")."""
    a = tl.tensor(np.float64(1.5), requires_grad=True)
    t = tl.tensor(np.zeros(2))
    for call, role in ((lambda: t.__setitem__(slice(None), [a, a * 2.0]), "the value of an item assignment"),
                       (lambda: t.copy_([a, a * 2.0]), "the source of copy_()"),
                       (lambda: tl.add(t, [a, a]), "a constant operand")):
        with pytest.raises(TensorError) as caught:
            call()
        assert str(caught.value) == (
            f"cannot use a list holding a torchlean tensor that requires grad as {role}: its tape history "
            "would be dropped (accepted: its .detach(), or the tensor itself, built with torchlean ops such "
            "as tl.concat and tl.reshape)"
        )
    np.testing.assert_array_equal(t.numpy(), np.zeros(2))  # nothing written
