"""torch tensors where a functional op takes a mask, index, ids or target, and inside the lists
``tl.tensor`` reads (review179 F2, F4): numpy read them and raised torch's bare errors. Oracles:
torch's own results on the same values, and the refusals a constant operand already had."""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import GuardTypeError, TorchLeanError
from torchlean.tensor import TensorError, TensorTypeError

LOGITS = np.array([[0.5, -1.0, 2.0], [1.5, 0.25, -0.75]])


def test_torch_target_probabilities_alone_or_in_a_list_give_torchs_loss() -> None:
    probs = torch.tensor([[0.25, 0.25, 0.5], [0.5, 0.25, 0.25]], dtype=torch.float64)
    theirs = torch.nn.functional.cross_entropy(torch.tensor(LOGITS), probs).item()
    for target in (probs, list(probs), [row.detach().clone().requires_grad_(False) for row in probs]):
        assert tl.cross_entropy(tl.tensor(LOGITS), target).item() == pytest.approx(theirs, rel=1e-15)


def test_int8_torch_ids_index_as_numpy_ids() -> None:
    ids = torch.tensor([2, 0], dtype=torch.int8)
    ours = tl.cross_entropy(tl.tensor(LOGITS), ids).item()
    theirs = torch.nn.functional.cross_entropy(torch.tensor(LOGITS), ids.long()).item()
    assert ours == pytest.approx(theirs, rel=1e-15)
    gathered = tl.gather(tl.tensor(LOGITS), torch.tensor([[2], [0]]), 1).numpy()
    np.testing.assert_array_equal(gathered, [[2.0], [1.5]])


CASES: dict[str, tuple[Callable[[], object], type[Exception], str]] = {
    "target requires grad": (
        lambda: tl.cross_entropy(tl.tensor(LOGITS), torch.full((2, 3), 1 / 3, dtype=torch.float64,
                                                                requires_grad=True)),
        TensorTypeError, r"^cross_entropy: target is a torch tensor that requires grad \(shape \(2, 3\)\)"),
    "meta ids": (
        lambda: tl.cross_entropy(tl.tensor(LOGITS), torch.zeros(2, dtype=torch.int64, device="meta")),
        TensorError, r"^cross_entropy: target: cannot copy a meta torch tensor"),
    "sparse ids": (
        lambda: tl.cross_entropy(tl.tensor(LOGITS), torch.tensor([0, 1]).to_sparse()),
        TensorError, r"^cross_entropy: target: cannot copy a sparse torch tensor"),
    "meta index": (
        lambda: tl.gather(tl.tensor(LOGITS), torch.zeros(2, 1, dtype=torch.int64, device="meta"), 1),
        TensorError, r"^gather: index: cannot copy a meta torch tensor"),
    "bfloat16 mask": (  # named as given, not widened (review181 F3)
        lambda: tl.hard_masked_softmax(tl.tensor(LOGITS), torch.ones(2, 3).bfloat16()),
        TensorError, r"^hard_masked_softmax: mask: unsupported tensor dtype torch\.bfloat16"),
    "bfloat16 ids": (
        lambda: tl.embedding(torch.tensor([0.0, 1.0]).bfloat16(), tl.tensor(np.eye(3))),
        TensorError, r"^embedding: ids: unsupported tensor dtype torch\.bfloat16"),
    "bfloat16 target": (  # as mse_loss's target and a constant operand
        lambda: tl.cross_entropy(tl.tensor(LOGITS), torch.full((2, 3), 0.25).bfloat16()),
        TensorError, r"^cross_entropy: target: unsupported tensor dtype torch\.bfloat16 .* converts it"),
    "float32 mask": (
        lambda: tl.hard_masked_softmax(tl.tensor(LOGITS), torch.ones(2, 3)),
        GuardTypeError, r"^hard_masked_softmax: mask has dtype float32; accepted: bool"),
    "list target requires grad": (  # review181 F2: lists went to numpy
        lambda: tl.cross_entropy(tl.tensor(LOGITS), [torch.full((3,), 1 / 3, dtype=torch.float64,
                                                                requires_grad=True)] * 2),
        TensorTypeError, r"^cross_entropy: target: element \[0\] is a torch tensor that requires grad"),
    "list target bfloat16": (
        lambda: tl.cross_entropy(tl.tensor(LOGITS), [[torch.tensor(0.25).bfloat16()] * 3] * 2),
        TensorError, r"^cross_entropy: target: element \[0\]\[0\]: unsupported tensor dtype torch\.bfloat16"),
    "constant list requires grad": (
        lambda: tl.tensor(LOGITS) + [torch.ones(3, dtype=torch.float64, requires_grad=True)] * 2,
        TensorTypeError, r"^a constant operand: element \[0\] is a torch tensor that requires grad"),
    "copy_ list meta": (
        lambda: tl.tensor(LOGITS).copy_([torch.ones(3, device="meta")] * 2),
        TensorError, r"^the source of copy_\(\): element \[0\]: cannot copy a meta torch tensor"),
    "list of bfloat16": (
        lambda: tl.tensor([torch.ones(2).bfloat16(), torch.ones(2).bfloat16()]),
        TensorError, r"^cannot create a tensor from data\[0\]: unsupported tensor dtype torch\.bfloat16"),
    "list holding meta": (
        lambda: tl.tensor([[torch.ones(2)], [torch.ones(2, device="meta")]]),
        TensorError, r"^cannot create a tensor from data\[1\]\[0\]: cannot copy a meta torch tensor"),
}


@pytest.mark.parametrize("case", CASES)
def test_torch_operands_numpy_cannot_read_are_refused_by_torchlean(case: str) -> None:
    call, error, message = CASES[case]
    with pytest.raises(error, match=message) as refused:
        call()
    assert isinstance(refused.value, TorchLeanError)


def test_a_list_of_torch_tensors_numpy_cannot_read_is_read_as_a_tensor_given_alone() -> None:
    grad = torch.tensor([1.0, 2.0], dtype=torch.float64, requires_grad=True)
    made = tl.tensor([grad, grad * 3])  # copied as data, as tl.tensor(grad) and torch.tensor([...])
    assert made.dtype == np.float64 and not made.requires_grad
    np.testing.assert_array_equal(made.numpy(), [[1.0, 2.0], [3.0, 6.0]])
    widened = tl.tensor([torch.tensor([1.5]).bfloat16()], dtype="float64")
    np.testing.assert_array_equal(widened.numpy(), [[1.5]])


def test_a_list_of_torch_tensors_reads_the_same_whatever_its_values() -> None:
    """review181 F1: the checks of NaN, inf and 2**63 values re-read the original list with numpy,
    so NaN in a requires-grad tensor, or inf in a bfloat16 one, raised torch's errors again."""
    nan = tl.tensor([torch.tensor([math.nan, 1.0], dtype=torch.float64, requires_grad=True)])
    np.testing.assert_array_equal(nan.numpy(), [[math.nan, 1.0]])
    inf = tl.tensor([torch.tensor([math.inf, 1.0]).bfloat16()], dtype="float32")
    np.testing.assert_array_equal(inf.numpy(), np.array([[math.inf, 1.0]], np.float32))
    with pytest.raises(TensorTypeError, match=r"is not numeric data"):
        tl.tensor([torch.tensor(1.0, requires_grad=True), "a"])


@pytest.mark.parametrize(
    ("data", "named"),
    [
        ([torch.tensor(1.0), "x"], "'x' of type str"),
        ([torch.tensor(1.0), None], "None of type NoneType"),
        ([[torch.tensor(1.0)], ["x"]], "'x' of type str"),
        ([np.array(2.0), None], "None of type NoneType"),
    ],
)
def test_a_refusal_names_the_element_that_is_not_a_number_beside_a_tensor(data: Any, named: str) -> None:
    """review185 F4: a 0-d tensor beside a string was named as the element that is not numeric
    data; torch refuses the string (``new(): invalid data type 'str'``)."""
    with pytest.raises(TensorTypeError, match=rf": its element {named} is not numeric data"):
        tl.tensor(data)


def test_a_zero_d_tensor_beside_an_integer_beyond_int64_is_read_as_torch_reads_it() -> None:
    """torch.tensor([torch.tensor(1.0), 2**70]) is float32 [1.0, 2**70 rounded]: the tensor was
    refused as not numeric data; an int64 tensor beside 2**70 is refused for the integer, as
    ``tl.tensor([3, 2**70])`` is."""
    expected = torch.tensor([torch.tensor(1.0), 2**70]).numpy()
    np.testing.assert_array_equal(tl.tensor([torch.tensor(1.0), 2**70]).numpy(), expected)
    with pytest.raises(TensorError, match=r"the integer 1180591620717411303424 does not fit the int64"):
        tl.tensor([torch.tensor(3), 2**70])
    with pytest.raises(TensorError, match=r"from data\[0\]: unsupported tensor dtype torch.bfloat16"):
        tl.tensor([torch.tensor(1.0).bfloat16(), None])


def test_a_float16_list_reads_without_an_overflow_warning() -> None:
    """review179 F4: the 2**63 test cast 2**63 to float16 (inf) and warned on every call."""
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        made: Any = tl.tensor([np.float16(1.5), np.float16(2.0)])
    np.testing.assert_array_equal(made.numpy(), np.array([1.5, 2.0], np.float32))
