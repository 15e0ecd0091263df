"""Tensor storage: a numpy array on the host, a torch tensor on a CUDA device.

A :class:`~torchlean.tensor.Tensor` holds exactly one of the two (DESIGN.md §2, ``tensor.py``):

* ``cpu`` — a C-contiguous numpy array (the reference, ``aten`` and CPU LibTorch providers read it
  without copying);
* ``cuda:N`` — a contiguous ``torch.Tensor`` on CUDA device ``N`` (the native CUDA, composed
  attention and CUDA LibTorch providers launch on it without copying).

A torch tensor on the CPU is not a tensor's storage in normal use (the one exception is the test
seam of ``dispatch.check_devices``: under the native extension's host emulation, CPU torch storage
stands in for CUDA storage). The helpers here let the tape and the dispatcher treat both kinds
alike (dtype as a numpy dtype, device as a string, accumulation with ``+``) and keep a value's
kind and device when they create one (:func:`like`). torch is imported only when a torch storage
is actually met, so the CPU path never imports it.
"""

from __future__ import annotations

import contextlib
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

if TYPE_CHECKING:
    import torch

    Storage = npt.NDArray[Any] | torch.Tensor
else:
    Storage = Any

__all__ = [
    "HOST",
    "Storage",
    "add",
    "add_into",
    "copy_storage",
    "device_of",
    "device_scope",
    "device_type",
    "host_tensor",
    "like",
    "numpy_dtype",
    "reciprocal_overflows",
    "reciprocal_subnormal",
    "to_host",
]

HOST = "cpu"
"""The device string of numpy storage."""

_NUMPY_DTYPES: dict[Any, np.dtype[Any]] = {}


def numpy_dtype(data: Storage) -> np.dtype[Any]:
    """The storage's dtype as a numpy dtype (``torch.float32`` → ``float32``)."""
    if isinstance(data, np.ndarray):
        return data.dtype
    found = _NUMPY_DTYPES.get(data.dtype)
    if found is None:
        found = np.dtype(str(data.dtype).removeprefix("torch."))
        _NUMPY_DTYPES[data.dtype] = found
    return found


def device_of(data: Storage) -> str:
    """``"cpu"`` for numpy storage, else the torch device as ``"cuda:N"``."""
    if isinstance(data, np.ndarray):
        return HOST
    return str(data.device)


def device_type(device: str) -> str:
    """The device kind of a device string: ``"cuda:1"`` → ``"cuda"``."""
    return device.partition(":")[0]


def device_scope(device: str) -> contextlib.AbstractContextManager[object]:
    """A scope in which ``device`` (``"cuda:N"``) is torch's current CUDA device, so that an op
    with no input to take a device from (a seeded source: ``bernoulli_mask``, ``rand_uniform``,
    whose CUDA kernels draw on the current device) makes its output there (review112 F2); a scope
    that changes nothing for ``"cpu"``.

    Raises:
        RuntimeError: torch's own, on entering, for a CUDA device this process cannot use.
    """
    if device_type(device) != "cuda":
        return contextlib.nullcontext()
    import torch

    return torch.cuda.device(int(device.partition(":")[2] or 0))


def to_host(data: Storage) -> npt.NDArray[Any]:
    """The values as a numpy array: numpy storage itself (no copy), torch storage copied to the
    host (always a copy, never a view of the torch tensor)."""
    if isinstance(data, np.ndarray):
        return data
    host: npt.NDArray[Any] = data.detach().to("cpu", copy=True).numpy()
    return host


def reciprocal_overflows(data: Storage) -> npt.NDArray[np.bool_]:
    """A host bool array of ``data``'s shape: True at the nonzero entries whose reciprocal
    overflows their floating dtype (the subnormals below ``1 / finfo.max``); all False for
    integer storage. For torch storage the test runs on its device and only the mask is copied."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind != "f":
            return np.zeros(data.shape, dtype=np.bool_)
        # screen first (one comparison; ordinary divisors stop here), then the exact test
        candidates: npt.NDArray[np.bool_] = np.abs(data) < 2 / float(np.finfo(data.dtype).max)
        if not candidates.any():
            return candidates
        with np.errstate(divide="ignore", over="ignore", under="ignore"):
            mask: npt.NDArray[np.bool_] = np.isinf(np.reciprocal(data)) & (data != 0)
        return mask
    import torch

    if not data.dtype.is_floating_point:
        return np.zeros(tuple(data.shape), dtype=np.bool_)
    return to_host(torch.isinf(torch.reciprocal(data)) & (data != 0))


def reciprocal_subnormal(data: Storage) -> npt.NDArray[np.bool_]:
    """A host bool array of ``data``'s shape: True at the finite entries whose reciprocal is
    subnormal in their floating dtype (``|v| > 1 / finfo.tiny``: above ``2**126`` in float32,
    ``2**1022`` in float64), so it keeps fewer significant bits; all False for integer storage.
    For torch storage the test runs on its device and only the mask is copied."""
    if isinstance(data, np.ndarray):
        if data.dtype.kind != "f":
            return np.zeros(data.shape, dtype=np.bool_)
        bound = 1 / float(np.finfo(data.dtype).tiny)  # a power of two: exact in the dtype
        mask: npt.NDArray[np.bool_] = np.abs(data) > bound  # one pass; NaN compares False
        if mask.any():
            mask &= np.isfinite(data)  # inf's reciprocal is 0, not subnormal
        return mask
    import torch

    if not data.dtype.is_floating_point:
        return np.zeros(tuple(data.shape), dtype=np.bool_)
    bound = 1 / float(torch.finfo(data.dtype).tiny)
    return to_host(torch.isfinite(data) & (data.abs() > bound))


def host_tensor(array: npt.NDArray[Any]) -> torch.Tensor:
    """A CPU torch tensor with ``array``'s values and shape (0-d stays 0-d): a view of a
    C-contiguous writeable array, else of a contiguous copy."""
    import torch

    if not (array.flags.c_contiguous and array.flags.writeable):
        array = np.array(array, order="C", copy=True)
    return torch.from_numpy(array)


def like(array: npt.NDArray[Any], storage: Storage) -> Storage:
    """``array`` as storage of the same kind and device as ``storage``: the array itself next to
    numpy storage, a copy on the torch tensor's device next to torch storage."""
    if isinstance(storage, np.ndarray):
        return array
    return host_tensor(array).to(storage.device, copy=True)


def copy_storage(data: Storage) -> Storage:
    """A fresh contiguous copy on the same device."""
    if isinstance(data, np.ndarray):
        return np.array(data, copy=True, order="C")
    import torch

    return data.clone(memory_format=torch.contiguous_format)


def add(a: Storage, b: Storage) -> Storage:
    """``a + b`` elementwise, as storage of the same kind (the tape's and ``.grad``'s accumulation).

    numpy returns a scalar, not an array, for the sum of two 0-d arrays; that scalar is turned back
    into a 0-d array so that a 0-d gradient stays storage.
    """
    with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # inf / nan as torch, no warning
        total = a + b
    return np.asarray(total) if isinstance(total, np.generic) else total


def add_into(a: Storage, b: Storage) -> bool:
    """``a += b`` elementwise in ``a``'s storage (``.grad``'s accumulation after the first, as
    torch's ``AccumulateGrad``); ``b`` is storage of the same kind, shape and dtype. Returns False,
    writing nothing, when ``a`` is read-only numpy storage."""
    if isinstance(a, np.ndarray):
        if not a.flags.writeable:
            return False
        with np.errstate(over="ignore", under="ignore", invalid="ignore"):  # inf / nan as torch, no warning
            np.add(a, b, out=a)
        return True
    import torch

    assert isinstance(b, torch.Tensor), "add_into: torch storage takes torch storage"
    a.add_(b)
    return True
