"""Eager interpretation of :class:`~torchlean.nn.ops.Ops`: each call runs one accepted capsule.

Every method forwards to :mod:`torchlean.functional`, which plans the op under the current
session's profile, runs the acceptance gate, binds the capsule to its linked handler and records
a tape node (anchor-runtime.md §1.8).
"""

from __future__ import annotations

import math
from collections.abc import Sequence

import numpy as np
import numpy.typing as npt

from torchlean import functional as F
from torchlean.autograd.grad_mode import no_grad
from torchlean.backend.vocabulary import BackendOp
from torchlean.nn.ops import broadcast_operands
from torchlean.tensor import Tensor

__all__ = ["RUNNING_STATISTICS_OPS", "EagerOps"]

RUNNING_STATISTICS_OPS: tuple[BackendOp, ...] = (
    BackendOp.SLICE, BackendOp.SUB, BackendOp.REDUCE_MEAN, BackendOp.ADD, BackendOp.RESHAPE,
    BackendOp.MUL, BackendOp.REDUCE_SUM, BackendOp.SCALE,
)
"""The ops :meth:`EagerOps.update_running_statistics` runs (without gradient), in first-use
order: the typed-graph trainer has them selected and accepted before a graph with batch norm
runs (review93 M1)."""


class EagerOps:
    """:class:`~torchlean.nn.ops.Ops` over :class:`~torchlean.tensor.Tensor` values.

    ``buffer_updates`` lists, in call order, ``(buffer, next value)`` for each buffer a training
    forward program changed (batch norm's running statistics): the buffer is the tensor the
    program received, the value a new tensor computed without gradient. A buffer updated twice
    in one program (a layer normalising two inputs with the same statistics) is updated from its
    pending value, as torch updates a module called twice, so its last entry is its next value.
    Applying them is the caller's job (:class:`~torchlean.trainer.Trainer` does, after the
    optimizer step).
    """

    def __init__(self, *, training: bool = True) -> None:
        self.buffer_updates: list[tuple[Tensor, Tensor]] = []
        self.training = training  # a training forward: dropout drops (the identity otherwise)

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
        return F.add(*self._broadcast(a, b))

    def mul(self, a: Tensor, b: Tensor) -> Tensor:
        return F.mul(*self._broadcast(a, b))

    def _broadcast(self, a: Tensor, b: Tensor) -> tuple[Tensor, Tensor]:
        """Two Tensors broadcast as the graph recording does (:func:`broadcast_operands`); a number
        or an array, which only eager's functional ops take, left to them (review171 F4)."""
        both = isinstance(a, Tensor) and isinstance(b, Tensor)
        return broadcast_operands(self, a, b) if both else (a, b)

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

    def softplus(self, x: Tensor) -> Tensor:
        return F.softplus(x)

    def embedding(self, ids: Tensor, weight: Tensor, padding_idx: int | None = None) -> Tensor:
        return F.embedding(ids, weight, padding_idx)

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
        return F.dropout(x, p, training=self.training)

    def batch_norm(
        self,
        x: Tensor,
        weight: Tensor | None,
        bias: Tensor | None,
        running_mean: Tensor,
        running_var: Tensor,
        *,
        training: bool,
        eps: float,
        momentum: float,
    ) -> Tensor:
        """:func:`torchlean.functional.batch_norm`; in training it normalises with the batch's
        statistics and appends the running statistics' next values to :attr:`buffer_updates`,
        computed without gradient by capsules of their own (``slice``, ``sub``, ``reduce_mean``,
        ``add``, ``reshape``, ``mul``, ``reduce_sum``, ``scale``) as torch updates them:
        ``(1 - momentum) * running + momentum * batch``, with the batch mean and the unbiased
        batch variance (divisor ``n - 1``, ``n`` the values per channel). With ``k`` each
        channel's first value, ``d = x - k``, ``c = d - mean(d)``: the mean is
        ``(k + mean(d)) + mean(c)`` (the last term corrects the rounding of ``mean(d)``, which an
        outlying first value makes large) and the variance ``sum(c**2) / (n - 1)``. So a channel
        of equal values gets exactly its value and variance 0, whatever their magnitude (torch's
        float64 kernel does not always: a batch variance of 7.0e7 for 21 values of
        ``-0.7 * 1e20``), and values far from 0 keep their spread's precision. An empty batch
        leaves them as they are (as torch)."""
        if not training:
            return F.batch_norm(
                x, weight=weight, bias=bias, running_mean=running_mean, running_var=running_var,
                training=False, eps=eps,
            )
        out = F.batch_norm(x, weight=weight, bias=bias, training=True, eps=eps)  # refuses n == 1 per channel
        self.update_running_statistics(x, running_mean, running_var, momentum=momentum)
        return out

    def update_running_statistics(
        self, x: Tensor, running_mean: Tensor, running_var: Tensor, *, momentum: float
    ) -> None:
        """Append the next values of ``running_mean`` and ``running_var`` ``(C,)`` after a
        training-mode batch norm of ``x (N, C, *spatial)`` to :attr:`buffer_updates`, computed
        without gradient as :meth:`batch_norm` describes (nothing for an empty batch). The
        typed-graph trainer calls it on the graph's value of a ``batch_norm_train`` node's input,
        after the step, so both execution modes run the same capsules on the same values."""
        axes = (0, *range(2, x.ndim))
        count = math.prod(x.shape[axis] for axis in axes)
        if count == 0:
            return
        with no_grad():
            first = F.slice(x, [0] * x.ndim, [1 if axis in axes else x.shape[axis] for axis in range(x.ndim)])
            shifted = F.sub(x, first)
            shifted_mean = F.reduce_mean(shifted, axes, keepdims=True)
            centred = F.sub(shifted, shifted_mean)
            correction = F.reduce_mean(centred, axes, keepdims=True)  # shifted_mean's rounding error
            mean = F.add(F.add(first, shifted_mean), correction)
            mean = F.reshape(mean, tuple(running_mean.shape))
            variance = F.scale(F.reduce_sum(F.mul(centred, centred), axes), 1.0 / (count - 1))
            for buffer, value in zip((running_mean, running_var), (mean, variance), strict=True):
                current = self._pending(buffer)
                self.buffer_updates.append(
                    (buffer, F.add(F.scale(current, 1.0 - momentum), F.scale(value, momentum)))
                )

    def _pending(self, buffer: Tensor) -> Tensor:
        """``buffer``'s latest value in :attr:`buffer_updates`, or the buffer itself."""
        return next((value for old, value in reversed(self.buffer_updates) if old is buffer), buffer)

    def attention(self, q: Tensor, k: Tensor, v: Tensor, mask: npt.NDArray[np.bool_] | None) -> Tensor:
        return F.scaled_dot_product_attention(q, k, v, mask)
