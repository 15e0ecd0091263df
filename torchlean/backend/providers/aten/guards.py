"""The hand-over of the ``aten`` kernels' operands to torch.

Every forward and VJP in ``aten/kernels.py``, ``aten/pointwise.py`` and ``aten/spatial.py`` runs
its shape guard (the reference guard of the op, whose ``check_canonical_layout`` is the capsules'
layout ``runtimeGuard`` evidence: it refuses a non-canonical operand first) and then hands its
array operands to torch through :func:`check_aten_layout`, the only place where numpy storage
becomes torch tensors; its own refusals keep a direct call from handing torch other layouts. Source: the
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

_ACCEPTED = frozenset({np.dtype(np.float32), np.dtype(np.float64), np.dtype(np.bool_)})
_ACCEPTED_DATA = _ACCEPTED | {np.dtype(np.int64)}


def check_aten_layout(op: str, *arrays: Array, int64: bool = False) -> list[torch.Tensor]:
    """Refuse operands outside TorchLean's canonical CPU layout; wrap the others as torch tensors.

    Args:
        op: the op label (the error message starts with it).
        arrays: numpy arrays of dtype float32, float64 (data) or bool (masks), any shape and
            strides (an absent optional operand is not passed: kernels keep ``None`` themselves).
        int64: also accept int64 data (the shape ops, whose reference guards admit it; bool is
            always accepted, as masks and the shape ops' data).

    Returns:
        One CPU tensor per operand with the operand's shape, dtype and values, never recorded by
        torch autograd. A C-contiguous, aligned, writeable, native-byte-order array is shared
        zero-copy (``torch.from_numpy``); any other array is first copied into that layout.

    Raises:
        GuardError: an operand that is not a ``numpy.ndarray``, has another dtype, or is not in
            native byte order, naming the operand and the accepted layout.
    """
    import torch

    from_numpy = torch.from_numpy
    accepted = _ACCEPTED_DATA if int64 else _ACCEPTED
    kinds = "float32, float64, int64 or bool" if int64 else "float32, float64 or bool"
    tensors: list[torch.Tensor] = []
    for position, arr in enumerate(arrays):
        if not isinstance(arr, np.ndarray):
            raise GuardError(
                f"{op}: operand {position} must be a numpy.ndarray in TorchLean's canonical tensor layout; "
                f"got {type(arr).__name__} (accepted: numpy.ndarray of {kinds})"
            )
        if arr.dtype not in accepted:  # a byte-swapped dtype compares unequal to the native one
            raise GuardError(
                f"{op}: operand {position} has dtype {arr.dtype} (byte order {arr.dtype.byteorder!r}); "
                f"accepted: native-byte-order {kinds}"
            )
        if not arr.flags.carray:  # C-contiguous, aligned and writeable
            arr = np.array(arr, order="C", copy=True)
        tensors.append(from_numpy(arr))
    return tensors
