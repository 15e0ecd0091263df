"""Parameter payloads of IR nodes, kept outside the graph and keyed by node id (anchor-runtime §4.3).

* ``const`` node → its value (a numpy array with ``value_shape``'s element count; stored values
  are reshaped row-major to ``value_shape``);
* ``linear`` node → :class:`LinearParams` (W ``[out, in]``, b ``[out]`` or None);
* ``conv`` node → :class:`ConvParams` (W ``[out_channels, in_channels // groups, *kernel]``,
  b ``[out_channels]`` or None);
* ``batch_norm_eval`` node → :class:`BatchNormParams` (running mean/var, optional affine, eps);
* ``batch_norm_train`` node → :class:`BatchNormTrainParams` (optional affine, eps);
* ``layernorm`` node → optional :class:`LayerNormParams` (absent: no affine, eps ``1e-5``).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

__all__ = [
    "Array",
    "BatchNormParams",
    "BatchNormTrainParams",
    "ConvParams",
    "LayerNormParams",
    "LinearParams",
    "Payload",
    "Payloads",
    "as_array",
]

Array: TypeAlias = npt.NDArray[Any]
"""A numpy array (float32 or float64 for values; bool for masks)."""


@dataclass(frozen=True, slots=True, eq=False)
class LinearParams:
    """Parameters of a ``linear`` node: ``y = x W^T + b`` (``torch.nn.functional.linear``)."""

    weight: Array
    bias: Array | None


@dataclass(frozen=True, slots=True, eq=False)
class ConvParams:
    """Parameters of a ``conv`` node (``torch.nn.functional.conv*d``)."""

    weight: Array
    bias: Array | None


@dataclass(frozen=True, slots=True, eq=False)
class BatchNormParams:
    """Running statistics and affine parameters of a ``batch_norm_eval`` node, each ``[channels]``."""

    mean: Array
    var: Array
    weight: Array | None = None
    bias: Array | None = None
    eps: float = 1e-5


@dataclass(frozen=True, slots=True, eq=False)
class BatchNormTrainParams:
    """Affine parameters (each ``[channels]``, or absent) and epsilon of a ``batch_norm_train``
    node; it normalises with the batch's statistics, so it holds no running statistics."""

    weight: Array | None = None
    bias: Array | None = None
    eps: float = 1e-5


@dataclass(frozen=True, slots=True, eq=False)
class LayerNormParams:
    """Affine parameters (shape of the normalised suffix) and epsilon of a ``layernorm`` node."""

    weight: Array | None = None
    bias: Array | None = None
    eps: float = 1e-5


Payload: TypeAlias = (
    Array | LinearParams | ConvParams | BatchNormParams | BatchNormTrainParams | LayerNormParams
)
Payloads: TypeAlias = Mapping[int, Payload]


def as_array(value: npt.ArrayLike) -> Array:
    """A read-only copy of ``value`` as a numpy array (payloads must not change under a graph)."""
    array = np.array(value, copy=True)
    array.setflags(write=False)
    return array
