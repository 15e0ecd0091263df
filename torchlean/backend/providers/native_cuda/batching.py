"""Broadcast batch axes of the CUDA attention capsules (``native_cuda.direct_attention`` and
``torchlean.composed_attention``).

Q ``(..., n_q, d)``, K ``(..., n_k, d)`` and V ``(..., n_k, d_v)`` may have different leading
(batch, head) axes as long as they broadcast to one batch shape (numpy/PyTorch rules, as
``reference.attention`` and ``torch.nn.functional.scaled_dot_product_attention`` accept). The
kernels need one folded batch axis, so each operand is materialised (a contiguous copy on its
device) to the batch shape before the launch, and each gradient is summed back to its operand's
shape afterwards — the expand-and-sum of the LibTorch bridge's device VJP
(:func:`torchlean.backend.providers.libtorch.sdpa.device_attention_vjp`). The sums run on the
device (``torch.sum``), so their order is implementation-defined, as both capsules declare.
"""

from __future__ import annotations

from collections.abc import Sequence

import torch
from torch import Tensor

__all__ = ["broadcast_batch", "expand_to_batch", "sum_to_shape"]


def broadcast_batch(leads: Sequence[Sequence[int]]) -> tuple[int, ...] | None:
    """The broadcast of the leading-axis shapes ``leads`` (trailing axes aligned, extents equal or
    1; numpy/PyTorch rules), or None when they do not broadcast; the caller raises its own
    ``GuardError``."""
    rank = max((len(lead) for lead in leads), default=0)
    result: list[int] = []
    for axis in range(-rank, 0):
        extents = {int(lead[axis]) for lead in leads if len(lead) >= -axis} - {1}
        if len(extents) > 1:
            return None
        result.append(extents.pop() if extents else 1)
    return tuple(result)


def expand_to_batch(t: Tensor, batch: tuple[int, ...]) -> Tensor:
    """``t`` ``(..., n, d)`` as a contiguous ``(*batch, n, d)`` tensor on its device; ``t`` itself
    when it already has that shape (the callers pass contiguous operands)."""
    target = (*batch, *t.shape[-2:])
    if tuple(t.shape) == target:
        return t
    return torch.broadcast_to(t, target).contiguous()


def sum_to_shape(grad: Tensor, shape: tuple[int, ...]) -> Tensor:
    """``grad`` (the gradient of an operand broadcast to ``grad.shape``) summed back to
    ``shape``: over the extra leading axes and over every axis where ``shape`` has extent 1 and
    ``grad`` does not. Returns a contiguous tensor of ``shape``; ``grad`` itself when no axis is
    summed."""
    extra = grad.dim() - len(shape)
    if extra:
        grad = grad.sum(dim=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(dim=axes, keepdim=True)
    return grad.contiguous()
