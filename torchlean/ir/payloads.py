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

from torchlean._checks import shown_briefly
from torchlean._torch_host import is_torch_tensor, numpy_readable, torch_refusal, unreadable_element
from torchlean.ir.errors import IRError

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
    "read_array",
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


_ACCEPTED = "a numpy array, nested lists of numbers, or a torch tensor that does not require grad"


def read_array(value: object, what: str) -> Array:
    """``np.asarray(value)`` for data the IR takes (a constant, a layer's parameters, an input
    value), refusing with :class:`IRError` naming ``what`` what numpy would refuse with its bare
    errors (review239 F5, F9): ragged nested sequences, a torch tensor that requires grad (as
    ``torchlean.tensor`` refuses one), lives on a meta or another device or is not strided
    (:func:`torchlean._torch_host.torch_refusal`), and data numpy cannot read (a bfloat16 tensor,
    a list holding a tensor that requires grad).

    Raises:
        IRError: ``<what>: [[1.0, 2.0], [3.0]] is not a rectangular array: setting an array element
            with a sequence. ... (accepted: ...)``; ``<what> is a torch tensor (shape (2,), dtype
            torch.float32) that requires grad: pass t.detach().cpu() (accepted: ...)``;
            ``<what>: numpy cannot read [tensor(...)]: <numpy's or torch's reason> (accepted: ...)``.
    """
    if is_torch_tensor(value):
        refusal = torch_refusal(what, value)
        if refusal is not None:
            raise IRError(refusal)
        value = numpy_readable(value)
    try:
        return np.asarray(value)
    except ValueError as error:  # ragged, or nested deeper than numpy's 64 dimensions
        raise IRError(
            f"{what}: {shown_briefly(value)} is not a rectangular array: {error} (accepted: {_ACCEPTED})"
        ) from None
    except (TypeError, RuntimeError) as error:  # torch tensors numpy cannot read in a list
        raise IRError(
            unreadable_element(value, what)
            or f"{what}: numpy cannot read {shown_briefly(value)}: {error} (accepted: {_ACCEPTED})"
        ) from None


def as_array(value: object, what: str = "payload") -> Array:
    """A read-only copy of ``value`` as a numpy array (payloads must not change under a graph),
    read by :func:`read_array`.

    Raises:
        IRError: as :func:`read_array`; ``<what>: cannot copy an array of shape [1099511627776]
            of dtype int64: not enough memory`` when the copy cannot be allocated (a broadcast
            view declares a shape it holds no memory for).
    """
    array = read_array(value, what)
    try:
        copied = np.array(array, copy=True)
    except MemoryError:
        raise IRError(
            f"{what}: cannot copy an array of shape {list(array.shape)} of dtype {array.dtype}: not enough "
            "memory (accepted: data that fits in memory)"
        ) from None
    copied.setflags(write=False)
    return copied
