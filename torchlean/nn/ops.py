"""The operation interface model layers are written against.

A layer's forward program is written once against :class:`Ops` and runs under two
interpretations (the original's tagless-final ``Ops`` class, anchor-runtime.md §1.7):

* eager (:class:`torchlean.nn.eager.EagerOps`): every call dispatches one accepted kernel capsule
  through the session and records a tape node;
* graph recording (:class:`torchlean.nn.lowering.GraphOps`): every call appends a canonical IR
  node, so the same program lowers to the graph that typed-graph execution plans, accepts and
  runs.

Because both interpretations issue the same operations in the same order with the same
parameters, eager and typed-graph training compute bit-identical values.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol, TypeVar

import numpy as np
import numpy.typing as npt

__all__ = ["Ops", "T", "broadcast_operands"]

T = TypeVar("T")


class Ops(Protocol[T]):
    """Operations available to layer programs; ``T`` is the interpretation's value handle."""

    def shape(self, x: T) -> tuple[int, ...]:
        """Shape of ``x`` (with its batch axis when it has one)."""

    def constant(self, value: npt.NDArray[np.floating]) -> T:
        """A non-trainable constant (no gradient)."""

    def reshape(self, x: T, shape: Sequence[int]) -> T: ...

    def transpose(self, x: T, axis1: int, axis2: int) -> T: ...

    def permute(self, x: T, perm: Sequence[int]) -> T: ...

    def broadcast_to(self, x: T, shape: Sequence[int]) -> T: ...

    def matmul(self, a: T, b: T) -> T: ...

    def linear(self, x: T, weight: T, bias: T | None) -> T:
        """``x @ weight^T + bias`` over the last axis (``torch.nn.functional.linear``); ``x`` of rank
        >= 1, ``weight (out, in)`` and ``bias (out,)`` (or no bias); the typed graph fuses it into one
        ``linear`` node when both are model parameters."""

    def add(self, a: T, b: T) -> T:
        """``a + b``; operands of two shapes that broadcast (numpy's rules) are first broadcast to
        their common shape with :meth:`broadcast_to` (:func:`broadcast_operands`), in both
        interpretations alike."""

    def mul(self, a: T, b: T) -> T:
        """``a * b`` elementwise, broadcast as :meth:`add`."""

    def scale(self, x: T, factor: float) -> T: ...

    def relu(self, x: T) -> T: ...

    def gelu(self, x: T) -> T: ...

    def tanh(self, x: T) -> T: ...

    def sigmoid(self, x: T) -> T: ...

    def softplus(self, x: T) -> T: ...

    def embedding(self, ids: T, weight: T, padding_idx: int | None = None) -> T: ...

    def softmax(self, x: T, axis: int) -> T: ...

    def log_softmax(self, x: T, axis: int) -> T: ...

    def reduce_sum(self, x: T, axis: int) -> T: ...

    def reduce_mean(self, x: T, axis: int) -> T: ...

    def sum(self, x: T) -> T:
        """Sum of every element (a scalar)."""

    def mse_loss(self, prediction: T, target: T) -> T: ...

    def layer_norm(self, x: T, weight: T, bias: T, *, normalized_ndim: int, eps: float) -> T: ...

    def conv(
        self,
        x: T,
        weight: T,
        bias: T | None,
        *,
        stride: tuple[int, ...],
        padding: tuple[int, ...],
        dilation: tuple[int, ...],
        groups: int,
    ) -> T: ...

    def max_pool(
        self, x: T, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> T: ...

    def avg_pool(
        self, x: T, *, kernel_size: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
    ) -> T: ...

    def dropout(self, x: T, p: float) -> T:
        """Inverted dropout with keep probability ``1 - p`` in a training program, ``x`` itself in
        an evaluation program or for ``p == 0``, in both interpretations (torch's
        ``dropout(training=False)``; review173 F3, F4). The program's mode is the interpretation's:
        the trainer and ``Model.forward`` build theirs for the forward they run (``predict``,
        ``evaluate`` and ``model.forward(training=False)`` are evaluation programs); an
        ``EagerOps()`` built by hand drops unless built with ``training=False`` (as torch's
        ``F.dropout`` defaults to training), a ``GraphOps()`` lowers an evaluation program unless
        built with ``training=True``."""

    def batch_norm(
        self,
        x: T,
        weight: T | None,
        bias: T | None,
        running_mean: T,
        running_var: T,
        *,
        training: bool,
        eps: float,
        momentum: float,
    ) -> T:
        """Batch normalisation over axis 1 of ``x (N, C, *spatial)`` (``torch.nn.BatchNorm1d/2d``);
        ``weight``, ``bias`` (or neither) and the running statistics ``(C,)``. In training, the
        batch's statistics normalise and the interpretation records the running statistics'
        next values, ``(1 - momentum) * running + momentum * batch`` with the batch's unbiased
        variance (torch's update); in evaluation the running statistics normalise."""

    def attention(self, q: T, k: T, v: T, mask: npt.NDArray[np.bool_] | None) -> T:
        """Scaled dot-product attention with a static boolean mask (True = may attend)."""


def broadcast_operands(ops: Ops[T], a: T, b: T) -> tuple[T, T]:
    """``a`` and ``b`` broadcast to their common shape (numpy's rules) by ``ops.broadcast_to``,
    each only where its shape differs from it, so that eager and graph recording issue the same
    ``broadcast`` ops before an ``add`` or ``mul`` (review170 F1: eager's ``add`` broadcast by
    itself, the typed graph's refused ``(B, 3) + (3,)`` with an IR shape mismatch). Operands whose
    shapes do not broadcast are returned as they are: the op itself refuses them."""
    first, second = ops.shape(a), ops.shape(b)
    if first == second:
        return a, b
    try:
        common = np.broadcast_shapes(first, second)
    except ValueError:
        return a, b
    return (
        a if first == common else ops.broadcast_to(a, common),
        b if second == common else ops.broadcast_to(b, common),
    )
