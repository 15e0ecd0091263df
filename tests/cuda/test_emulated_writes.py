"""In-place writes into device storage: the torch-storage branch of ``copy_``, ``zero_``, item
assignment and ``-=`` (torchlean/_tensor_writes.py), which stages the values on the host and
copies them into the torch storage. Through the host emulation's seam (``emulated_cuda``: a tensor
placed on ``cuda`` holds CPU torch storage), so the branch runs on every machine.

Oracles: the same write into a host (numpy) tensor and into a torch tensor; hand values.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl


def _device(values: object, dtype: str) -> tl.Tensor:
    t = tl.tensor(values, dtype=dtype, device="cuda")
    assert isinstance(t._data, torch.Tensor)  # the seam's device storage
    return t


@pytest.mark.parametrize(
    "src",
    [np.array([1.5, -2.0, 3.25]), [[1.0], [2.0]], 4.0, np.array(True), "tensor"],
    ids=["row", "column-list", "number", "bool", "tensor"],
)
def test_copy_into_device_storage_writes_what_torch_and_a_host_copy_write(
    emulated_cuda: None, src: object
) -> None:
    source = tl.tensor([[0.5, 1.5, 2.5]], dtype="float64") if isinstance(src, str) else src
    device, host = _device(np.zeros((2, 3)), "float32"), tl.tensor(np.zeros((2, 3)), dtype="float32")
    assert device.copy_(source) is device  # type: ignore[arg-type]
    host.copy_(source)  # type: ignore[arg-type]
    as_torch = torch.tensor(np.asarray(source.numpy() if isinstance(source, tl.Tensor) else source))
    expected = torch.zeros(2, 3).copy_(as_torch).tolist()
    assert device.tolist() == host.tolist() == expected
    assert isinstance(device._data, torch.Tensor) and device._version.value == 1


def test_copy_refusals_leave_device_storage_unchanged(emulated_cuda: None) -> None:
    floats, ints = _device(np.full((2, 3), 7.0), "float32"), _device([1, 2, 3], "int64")
    with pytest.raises(tl.TensorError, match=r"^copy_\(\): a source of shape \(1, 1, 3\) does not broadcast"):
        floats.copy_(np.ones((1, 1, 3)))
    with pytest.raises(tl.TensorError, match=r"^copy_\(\): float64 values are not written into an int64"):
        ints.copy_(1.5)
    with pytest.raises(tl.TensorError, match=r"^the integer 9223372036854775808 \(19 digits\) does not fit"):
        ints.copy_(np.array([2**63, 1, 1], dtype=np.uint64))
    assert floats.tolist() == [[7.0] * 3] * 2 and ints.tolist() == [1, 2, 3]
    assert floats._version.value == ints._version.value == 0


def test_item_assignment_and_zero_into_device_storage(emulated_cuda: None) -> None:
    t, reference = _device([[1, 2, 3], [4, 5, 6]], "int64"), torch.tensor([[1, 2, 3], [4, 5, 6]])
    t[0, 1:] = [2.7, -2.7]  # truncated toward zero, as torch does
    reference[0, 1:] = torch.tensor([2.7, -2.7], dtype=torch.float64)
    assert t.tolist() == reference.tolist() == [[1, 2, -2], [4, 5, 6]] and t._version.value == 1
    with pytest.raises(tl.TensorError, match=r"^value nan does not fit the int64 tensor dtype"):
        t[1] = float("nan")
    with pytest.raises(tl.TensorError, match=r"^cannot assign to index 5 of a tensor of shape \(2, 3\)"):
        t[5] = 1
    assert t.tolist() == [[1, 2, -2], [4, 5, 6]] and t._version.value == 1
    assert t.zero_() is t and t.tolist() == [[0, 0, 0], [0, 0, 0]] and t._version.value == 2
    assert isinstance(t._data, torch.Tensor)


def test_an_in_place_update_of_device_storage_reaches_every_name(emulated_cuda: None) -> None:
    with tl.session("checked_cuda"):
        w = _device([1.0, -2.0], "float64")
        w.requires_grad = True
        alias = w
        with tl.no_grad():
            w -= _device([0.5, 0.25], "float64")
    assert alias is w and w.tolist() == [0.5, -2.25] and isinstance(w._data, torch.Tensor)
    assert w._version.value == 1 and w.requires_grad
