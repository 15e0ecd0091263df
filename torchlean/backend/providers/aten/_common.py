"""Helpers shared by the ``aten`` kernels: torch results back to numpy, broadcast reductions.

Every function here works on CPU tensors that never require a gradient (operands come from
``torch.from_numpy`` in :func:`~torchlean.backend.providers.aten.guards.check_aten_layout`), so
torch autograd records nothing. torch is imported inside the functions: the CPU path of a session
that never selects an ``aten`` capsule does not import it.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from torchlean.backend.providers.aten import guards as aten_guards
from torchlean.backend.providers.reference.guards import check_cotangent

if TYPE_CHECKING:
    import torch

__all__ = ["Array", "check_vjp", "host", "optional", "reduce_to", "scalar_in"]

Array = npt.NDArray[Any]


def host(result: torch.Tensor) -> Array:
    """``result`` as a C-contiguous numpy array, no copy.

    The array shares ``result``'s storage (``Tensor.numpy``): a tensor torch just allocated, or,
    for the view ops only, a view of an input. A non-contiguous result (none of the kernels
    produces one; the check is cheap) is copied into C order, the layout of TorchLean CPU storage.
    """
    out: Array = result.numpy()
    if out.flags.c_contiguous:
        return out
    return np.ascontiguousarray(out)


def reduce_to(t: torch.Tensor, shape: Sequence[int]) -> torch.Tensor:
    """Sum a broadcast cotangent ``t`` back to ``shape`` (the VJP of a numpy-rule broadcast).

    ``shape`` broadcasts to ``t.shape``: leading axes that ``shape`` lacks and axes where it has
    extent 1 but ``t`` does not are summed with ``torch.sum`` (order implementation-defined).
    Returns ``t`` itself when nothing is summed (the caller copies if it needs a fresh tensor),
    else a fresh tensor of exactly ``shape``.
    """
    import torch

    lead = t.dim() - len(shape)
    dims = list(range(lead))
    dims += [lead + i for i, s in enumerate(shape) if s == 1 and t.shape[lead + i] != 1]
    if not dims:
        return t
    return torch.sum(t, dim=dims, keepdim=True).reshape(tuple(shape))


def check_vjp(op: str, g: object, out: object, shape: Sequence[int], dtype: np.dtype[Any]) -> None:
    """The reference VJP checks: cotangent ``g`` and saved output ``out`` are numpy arrays of the
    output's ``shape`` and ``dtype`` (:func:`~torchlean.backend.providers.reference.guards.check_cotangent`).

    Raises:
        GuardError: the reference's message, naming the op, the array and the expected layout.
    """
    check_cotangent(op, g, shape, dtype)
    check_cotangent(op, out, shape, dtype, name="saved output out")


def optional(op: str, x: Array | None) -> torch.Tensor | None:
    """An optional operand (bias, affine weight, running statistic) through the layout guard;
    ``None`` stays ``None``."""
    return None if x is None else aten_guards.check_aten_layout(op, x)[0]


_FLOAT32_MAX = float(np.finfo(np.float32).max)


def scalar_in(value: float, dtype: np.dtype[Any]) -> float:
    """``value`` rounded to ``dtype`` (float32 or float64) as the Python float torch receives, so
    torch's own cast of the scalar is exact: the reference's ``x.dtype.type(value)``. A float32
    overflow gives +-inf (silently, as the reference's IEEE mode)."""
    if dtype == np.float64:
        return float(value)
    if -_FLOAT32_MAX <= value <= _FLOAT32_MAX:
        return float(np.float32(value))
    with np.errstate(over="ignore"):
        return float(np.float32(value))
