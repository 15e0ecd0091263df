"""Eager interpretation of :class:`~torchlean.nn.ops.Ops`: each call runs one accepted capsule.

Every method forwards to :mod:`torchlean.functional`, which plans the op under the current
session's profile, runs the acceptance gate, binds the capsule to its linked handler and records
a tape node (anchor-runtime.md §1.8).
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from torchlean import functional as F
from torchlean.tensor import Tensor

__all__ = ["EagerOps"]


class EagerOps:
    """:class:`~torchlean.nn.ops.Ops` over :class:`~torchlean.tensor.Tensor` values."""

    def shape(self, x: Tensor) -> tuple[int, ...]:
        return tuple(x.shape)

    def constant(self, value: npt.NDArray[np.floating]) -> Tensor:
        return Tensor(np.asarray(value))

    def reshape(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        return F.reshape(x, shape)

    def transpose(self, x: Tensor, axis1: int, axis2: int) -> Tensor:
        return F.transpose(x, axis1, axis2)

    def permute(self, x: Tensor, perm: Sequence[int]) -> Tensor:
        return F.permute(x, perm)

    def broadcast_to(self, x: Tensor, shape: Sequence[int]) -> Tensor:
        return F.broadcast_to(x, shape)

    def matmul(self, a: Tensor, b: Tensor) -> Tensor:
        return F.matmul(a, b)

    def linear(self, x: Tensor, weight: Tensor, bias: Tensor | None) -> Tensor:
        return F.linear(x, weight, bias)

    def add(self, a: Tensor, b: Tensor) -> Tensor:
        return F.add(a, b)

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        return F.mul(a, b)

    def scale(self, x: Tensor, factor: float) -> Tensor:
        return F.scale(x, factor)

    def relu(self, x: Tensor) -> Tensor:
        return F.relu(x)

    def gelu(self, x: Tensor) -> Tensor:
        return F.gelu(x)

    def tanh(self, x: Tensor) -> Tensor:
        return F.tanh(x)

    def sigmoid(self, x: Tensor) -> Tensor:
        return F.sigmoid(x)

    def softmax(self, x: Tensor, axis: int) -> Tensor:
        return F.softmax(x, axis)

    def log_softmax(self, x: Tensor, axis: int) -> Tensor:
        return F.log_softmax(x, axis)

    def reduce_sum(self, x: Tensor, axis: int) -> Tensor:
        return F.reduce_sum(x, axis)

    def reduce_mean(self, x: Tensor, axis: int) -> Tensor:
        return F.reduce_mean(x, axis)

    def sum(self, x: Tensor) -> Tensor:
        return F.reduce_sum(x, None)

    def mse_loss(self, prediction: Tensor, target: Tensor) -> Tensor:
        return F.mse_loss(prediction, target)

    def layer_norm(
        self, x: Tensor, weight: Tensor, bias: Tensor, *, normalized_ndim: int, eps: float
    ) -> Tensor:
        return F.layer_norm(x, weight, bias, normalized_ndim=normalized_ndim, eps=eps)

    def conv(
        self,
        x: Tensor,
        weight: Tensor,
        bias: Tensor | None,
        *,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> Tensor:
        return F.conv(x, weight, bias, stride=stride, padding=padding, dilation=dilation, groups=groups)

    def max_pool(
        self, x: Tensor, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> Tensor:
        return F.max_pool(x, kernel_size, stride=stride, padding=padding)

    def avg_pool(
        self, x: Tensor, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> Tensor:
        return F.avg_pool(x, kernel_size, stride=stride, padding=padding)

    def dropout(self, x: Tensor, p: float) -> Tensor:
        return F.dropout(x, p, training=True)

    def attention(self, q: Tensor, k: Tensor, v: Tensor, mask: npt.NDArray[np.bool_] | None) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, mask)
