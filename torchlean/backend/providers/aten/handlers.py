"""Linked kernels of the ``aten`` provider: every ``aten.*`` capsule's implementation.

One :class:`~torchlean.backend.providers.linked.LinkedKernel` per aten op, named
``TorchLean ATen CPU``, identity ``(op, aten, cpu)``. The forward is the torch CPU kernel of
:mod:`torchlean.backend.providers.aten.kernels`; the local VJP is TorchLean's own rule, the
reference ``<op>_vjp`` (:mod:`~torchlean.backend.providers.reference.kernels` or ``.spatial``)
evaluated at the saved inputs and the saved aten output, so the backward of an ``aten`` capsule is
exactly the reference backward (left folds, its guards) and torch autograd never records anything.
Source: DESIGN.md §1.8 (fast CPU provider) and the seed chapter ("Forward And Backward
Ownership": the forward is delegated, the VJP stays with the TorchLean tape).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torchlean.backend.providers.aten import kernels
from torchlean.backend.providers.linked import Array, LinkedKernel, convention_kernel
from torchlean.backend.providers.reference import kernels as reference
from torchlean.backend.providers.reference import spatial
from torchlean.backend.vocabulary import BackendOp, Device, Provider

__all__ = ["HANDLER_NAME", "LINKED_KERNELS"]

HANDLER_NAME = "TorchLean ATen CPU"

_Forward = Callable[..., Array]
_VJP = Callable[..., Sequence["Array | None"]]


def _linked(op: BackendOp, forward: _Forward, vjp: _VJP) -> LinkedKernel:
    return convention_kernel(HANDLER_NAME, op, Provider.ATEN, Device.CPU, forward, vjp)


_OP = BackendOp
_TABLE: tuple[tuple[BackendOp, _Forward, _VJP], ...] = (
    (_OP.MATMUL, kernels.matmul, reference.matmul_vjp),
    (_OP.LINEAR, kernels.linear, reference.linear_vjp),
    (_OP.MSE_LOSS, kernels.mse_loss, reference.mse_loss_vjp),
    (_OP.LOG_SOFTMAX, kernels.log_softmax, reference.log_softmax_vjp),
    (_OP.SOFTMAX, kernels.softmax, reference.softmax_vjp),
    (_OP.REDUCE_SUM, kernels.reduce_sum, reference.reduce_sum_vjp),
    (_OP.REDUCE_MEAN, kernels.reduce_mean, reference.reduce_mean_vjp),
    (_OP.LAYER_NORM, kernels.layer_norm, spatial.layer_norm_vjp),
    (_OP.CONV, kernels.conv, spatial.conv_vjp),
    (_OP.CONV_TRANSPOSE, kernels.conv_transpose, spatial.conv_transpose_vjp),
    (_OP.MAX_POOL, kernels.max_pool, spatial.max_pool_vjp),
    (_OP.AVG_POOL, kernels.avg_pool, spatial.avg_pool_vjp),
    (
        _OP.SCALED_DOT_PRODUCT_ATTENTION,
        kernels.scaled_dot_product_attention,
        reference.scaled_dot_product_attention_vjp,
    ),
)

LINKED_KERNELS: tuple[LinkedKernel, ...] = tuple(_linked(op, fwd, vjp) for op, fwd, vjp in _TABLE)
"""The 13 aten kernels, in the order of ``aten.capsules.ATEN_OPS``."""
