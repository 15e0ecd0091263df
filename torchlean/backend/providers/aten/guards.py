"""The layout guard of the ``aten`` kernels (the capsules' layout ``runtimeGuard`` evidence).

Every kernel in :mod:`torchlean.backend.providers.aten.kernels` runs its shape guard (a reference
guard with identical semantics) and then hands its array operands to torch through
:func:`check_aten_layout`, the only place where numpy storage becomes torch tensors. Source: the
``canonical-tensor`` layout obligation (anchor-backend.md §1.10) and ``torch.from_numpy``'s rules
(native byte order, element-aligned strides).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from torchlean.backend.errors import GuardError

if TYPE_CHECKING:
    import torch

__all__ = ["check_aten_layout"]

Array = npt.NDArray[Any]

_ACCEPTED = (np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_))


def check_aten_layout(op: str, *arrays: Array | None) -> list[torch.Tensor | None]:
    """Refuse operands outside TorchLean's canonical CPU layout; wrap the others as torch tensors.

    Args:
        op: the op label (the error message starts with it).
        arrays: numpy arrays of dtype float32, float64 (data) or bool (masks), any shape and
            strides, or ``None`` for an absent optional operand (kept as ``None``).

    Returns:
        One CPU tensor per operand with the operand's shape, dtype and values, never recorded by
        torch autograd. A C-contiguous, aligned, writeable, native-byte-order array is shared
        zero-copy (``torch.from_numpy``); any other array is first copied into that layout.

    Raises:
        GuardError: an operand that is not a ``numpy.ndarray``, has another dtype, or is not in
            native byte order, naming the operand and the accepted layout.
    """
    import torch

    tensors: list[torch.Tensor | None] = []
    for position, arr in enumerate(arrays):
        if arr is None:
            tensors.append(None)
            continue
        if not isinstance(arr, np.ndarray):
            raise GuardError(
                f"{op}: operand {position} must be a numpy.ndarray in TorchLean's canonical tensor layout; "
                f"got {type(arr).__name__} (accepted: numpy.ndarray of float32, float64 or bool)"
            )
        if arr.dtype not in _ACCEPTED or not arr.dtype.isnative:
            raise GuardError(
                f"{op}: operand {position} has dtype {arr.dtype} (byte order {arr.dtype.byteorder!r}); "
                "accepted: native-byte-order float32, float64 or bool"
            )
        if not (arr.flags.c_contiguous and arr.flags.aligned and arr.flags.writeable):
            arr = np.array(arr, order="C", copy=True)
        tensors.append(torch.from_numpy(arr))
    return tensors
