"""review239 F7: string options compared with ``in`` before their type was checked, so an array
reached numpy's comparison ("The truth value of an array with more than one element is
ambiguous") and a list ``data.shipped``'s dict lookup ("unhashable type: 'list'"). Each is refused
as any unknown value, naming it and the accepted ones."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean import data, nn
from torchlean.backend.errors import UnknownLabelError
from torchlean.trainer import Trainer, TrainerError


def test_a_dataset_name_that_is_a_list_is_unknown() -> None:
    with pytest.raises(UnknownLabelError) as caught:
        data.shipped([])  # type: ignore[arg-type]
    assert str(caught.value) == "unknown dataset [] (known: digits | iris | breast_cancer | wine | diabetes)"


def test_a_task_that_is_an_array_is_unknown() -> None:
    with pytest.raises(UnknownLabelError, match=r"^unknown task array\(\['classification', 'x'\], dtype="):
        data.split_rows(np.zeros(10), np.array(["classification", "x"]), 0)  # type: ignore[arg-type]


def test_a_schedule_by_that_is_an_array_is_refused() -> None:
    trainer = Trainer(nn.linear(2, 1), input_shape=(2,))
    with pytest.raises(TrainerError) as caught:
        trainer.fit(np.zeros((4, 2)), np.zeros((4, 1)), lr_schedule=lambda t: 0.1,
                    schedule_by=np.array(["epoch", "step"]))  # type: ignore[arg-type]
    assert str(caught.value) == (
        "schedule_by must be 'epoch' or 'step', got array(['epoch', 'step'], dtype='<U5')"
    )


def test_labels_numpy_cannot_read_are_refused_by_name() -> None:
    """review239 F5: a torch tensor of labels that requires grad raised torch's RuntimeError."""
    import torch

    with pytest.raises(data.DataError) as caught:
        data.split_rows(torch.ones(10, requires_grad=True), "regression", 0)
    assert str(caught.value) == (
        "labels is a torch tensor (shape (10,), dtype torch.float32) that requires grad: pass "
        "t.detach().cpu() (accepted: a numpy array or a CPU torch tensor that does not require grad)"
    )
    train, test = data.split_rows(torch.arange(10.0), "regression", 0)
    assert sorted([*train, *test]) == list(range(10))


def test_labels_of_torch_dtypes_numpy_lacks_and_nested_labels() -> None:
    """review240 F5: bfloat16 labels, which the trainer reads widened, were refused by the split
    helpers; a nested tensor passed on torch's "Please file an issue" text."""
    import warnings

    import torch

    widened = data.split_rows(torch.arange(10, dtype=torch.bfloat16), "regression", 0)
    assert [list(part) for part in widened] == [list(part) for part in data.split_rows(np.arange(10.0),
                                                                                        "regression", 0)]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)  # torch's "nested tensors are a prototype"
        nested = torch.nested.nested_tensor([torch.ones(2), torch.ones(3)])
    with pytest.raises(data.DataError) as caught:
        data.split_rows(nested, "regression", 0)
    assert str(caught.value) == (
        "labels is a torch tensor (shape nested, dtype torch.float32) that has layout nested: pass "
        "t.detach().cpu().to_padded_tensor(0.0) (accepted: a numpy array or a CPU torch tensor that does "
        "not require grad)"
    )


def test_param_groups_and_concat_refuse_a_0d_array_and_a_huge_view_by_name() -> None:
    """review241 F3 (review239 F2/F4 sites left raw): a bare MemoryError, "iteration over a 0-d
    array"."""
    import torchlean as tl

    huge = np.broadcast_to(np.int64(1), (2**40,))
    shown_huge = "array([1, 1, 1, ..., 1, 1, 1], shape=(1099511627776,))"
    for value, shown in ((np.array(1), "array(1)"), (huge, shown_huge)):
        with pytest.raises(TrainerError) as caught:
            tl.RunConfig(param_groups=value)  # type: ignore[arg-type]
        told = "param_groups must be a sequence of optim.group(...) records, got "
        assert str(caught.value) == told + shown
    refusal = r"^concat: xs must be a sequence of Tensors; got array\(2\)"
    with pytest.raises(tl.TensorTypeError, match=refusal):
        tl.concat(np.array(2))  # type: ignore[arg-type]
