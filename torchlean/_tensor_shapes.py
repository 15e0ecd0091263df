"""The result shapes of :class:`torchlean.tensor.Tensor`'s torch shape methods.

``flatten``, ``unsqueeze``, ``squeeze`` and ``expand`` each run one op (``reshape`` or
``broadcast``) to the shape computed here from the tensor's shape and torch's arguments, with
torch's range for each dim (:func:`torchlean._tensor_args._dim`, never wrapped). The rules and
errors are in the docstrings of the Tensor methods, which call these functions.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import TYPE_CHECKING

from torchlean._tensor_args import _dim
from torchlean._tensor_errors import _preview
from torchlean.backend.errors import GuardError

if TYPE_CHECKING:
    from torchlean.tensor import IntLike


def flattened_shape(shape: tuple[int, ...], start_dim: object, end_dim: object) -> tuple[int, ...]:
    """The shape of :meth:`Tensor.flatten <torchlean.tensor.Tensor.flatten>` for an input of
    ``shape``: axes ``start_dim`` to ``end_dim`` merged (``(1,)`` for rank 0)."""
    start = _dim("flatten", "start_dim", start_dim, len(shape), max(len(shape), 1))
    end = _dim("flatten", "end_dim", end_dim, len(shape), max(len(shape), 1))
    if start > end:
        raise GuardError(
            f"flatten: start_dim {start_dim} comes after end_dim {end_dim} for a rank-"
            f"{len(shape)} input (accepted: start_dim <= end_dim once negative dims count from "
            "the end)"
        )
    if not shape:
        return (1,)
    return (*shape[:start], math.prod(shape[start : end + 1]), *shape[end + 1 :])


def unsqueezed_shape(shape: tuple[int, ...], dim: object) -> tuple[int, ...]:
    """The shape of :meth:`Tensor.unsqueeze <torchlean.tensor.Tensor.unsqueeze>` for an input of
    ``shape``: a 1 inserted at ``dim``."""
    at = _dim("unsqueeze", "dim", dim, len(shape), len(shape) + 1)
    return (*shape[:at], 1, *shape[at:])


def squeezed_shape(shape: tuple[int, ...], dim: IntLike | Sequence[IntLike] | None) -> tuple[int, ...]:
    """The shape of :meth:`Tensor.squeeze <torchlean.tensor.Tensor.squeeze>` for an input of
    ``shape``: the named axes (every one for ``None``) of extent 1 removed."""
    extent = max(len(shape), 1)
    if dim is None:
        axes = set(range(len(shape)))
    elif isinstance(dim, Sequence) and not isinstance(dim, str | bytes):
        axes = set()
        for i, d in enumerate(dim):
            axis = _dim("squeeze", f"dim[{i}]", d, len(shape), extent)
            if axis in axes:
                raise GuardError(
                    f"squeeze: dim {_preview(dim)} names axis {axis} more than once for a rank-"
                    f"{len(shape)} input (accepted: distinct axes)"
                )
            axes.add(axis)
    else:
        axes = {_dim("squeeze", "dim", dim, len(shape), extent)}
    return tuple(n for i, n in enumerate(shape) if not (i in axes and n == 1))


def expanded_shape(shape: tuple[int, ...], sizes: Sequence[int], op: str = "expand") -> list[int]:
    """The shape of :meth:`Tensor.expand <torchlean.tensor.Tensor.expand>` for an input of
    ``shape``: ``sizes`` (integers already) with each ``-1`` replaced by its axis's extent; the
    broadcast rule itself is the op's."""
    target = list(sizes)
    new = len(target) - len(shape)
    if new < 0:
        counted = f"{len(target)} size{'' if len(target) == 1 else 's'} {tuple(target)}"
        raise GuardError(
            f"{op}: {counted} for a rank-{len(shape)} input of shape {shape} (accepted: at "
            f"least {len(shape)} sizes, one per axis and any new ones in front)"
        )
    for i, size in enumerate(target):
        if size == -1:
            if i < new:
                raise GuardError(
                    f"{op}: size -1 at position {i} of {tuple(target)} is a new leading axis "
                    f"for the input of shape {shape}, which has no size to keep (accepted: -1 "
                    "only for an existing axis)"
                )
            target[i] = shape[i - new]
    return target
