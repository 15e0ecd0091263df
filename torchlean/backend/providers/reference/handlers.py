"""Linked kernels of the ``reference`` provider: every ``reference.*`` capsule's implementation.

One :class:`~torchlean.backend.providers.linked.LinkedKernel` per reference op (45: the catalog
minus ``fft_fno`` and ``selective_scan``), named ``TorchLean reference CPU`` as in the original's
``executeReferenceOrNativeCuda`` (anchor-backend.md §7), identity ``(op, reference, cpu)``. The
forward calls ``<op>(*inputs, **params)`` and the VJP ``<op>_vjp(g, *inputs, out=out, **params)``
of ``kernels.py`` (or ``spatial.py`` for the seven spatial ops), following the team's reference
kernel convention; each kernel calls its guard first. The two seeded random sources are forward
only.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from torchlean.backend.providers.linked import Array, LinkedKernel, convention_kernel
from torchlean.backend.providers.reference import kernels, spatial
from torchlean.backend.vocabulary import BackendOp, Device, Provider

__all__ = ["HANDLER_NAME", "LINKED_KERNELS"]

HANDLER_NAME = "TorchLean reference CPU"

_Forward = Callable[..., Array]
_VJP = Callable[..., Sequence["Array | None"]]


def _linked(op: BackendOp, forward: _Forward, vjp: _VJP | None) -> LinkedKernel:
    return convention_kernel(HANDLER_NAME, op, Provider.REFERENCE, Device.CPU, forward, vjp)


_OP = BackendOp
_TABLE: tuple[tuple[BackendOp, _Forward, _VJP | None], ...] = (
    (_OP.RAND_UNIFORM, kernels.rand_uniform, None),
    (_OP.BERNOULLI_MASK, kernels.bernoulli_mask, None),
    (_OP.ADD, kernels.add, kernels.add_vjp),
    (_OP.SUB, kernels.sub, kernels.sub_vjp),
    (_OP.MUL, kernels.mul, kernels.mul_vjp),
    (_OP.SCALE, kernels.scale, kernels.scale_vjp),
    (_OP.ABS, kernels.abs, kernels.abs_vjp),
    (_OP.SQRT, kernels.sqrt, kernels.sqrt_vjp),
    (_OP.CLAMP, kernels.clamp, kernels.clamp_vjp),
    (_OP.MAX, kernels.max, kernels.max_vjp),
    (_OP.MIN, kernels.min, kernels.min_vjp),
    (_OP.RELU, kernels.relu, kernels.relu_vjp),
    (_OP.GELU, kernels.gelu, kernels.gelu_vjp),
    (_OP.SIGMOID, kernels.sigmoid, kernels.sigmoid_vjp),
    (_OP.TANH, kernels.tanh, kernels.tanh_vjp),
    (_OP.SOFTPLUS, kernels.softplus, kernels.softplus_vjp),
    (_OP.EXP, kernels.exp, kernels.exp_vjp),
    (_OP.LOG, kernels.log, kernels.log_vjp),
    (_OP.SIN, kernels.sin, kernels.sin_vjp),
    (_OP.COS, kernels.cos, kernels.cos_vjp),
    (_OP.INV, kernels.inv, kernels.inv_vjp),
    (_OP.SAFE_LOG, kernels.safe_log, kernels.safe_log_vjp),
    (_OP.LOG_SOFTMAX, kernels.log_softmax, kernels.log_softmax_vjp),
    (_OP.SOFTMAX, kernels.softmax, kernels.softmax_vjp),
    (_OP.HARD_MASKED_SOFTMAX, kernels.hard_masked_softmax, kernels.hard_masked_softmax_vjp),
    (_OP.REDUCE_SUM, kernels.reduce_sum, kernels.reduce_sum_vjp),
    (_OP.REDUCE_MEAN, kernels.reduce_mean, kernels.reduce_mean_vjp),
    (_OP.RESHAPE, kernels.reshape, kernels.reshape_vjp),
    (_OP.PERMUTE, kernels.permute, kernels.permute_vjp),
    (_OP.BROADCAST, kernels.broadcast, kernels.broadcast_vjp),
    (_OP.CONCAT, kernels.concat, kernels.concat_vjp),
    (_OP.SLICE, kernels.slice, kernels.slice_vjp),
    (_OP.GATHER, kernels.gather, kernels.gather_vjp),
    (_OP.SCATTER_ADD, kernels.scatter_add, kernels.scatter_add_vjp),
    (_OP.MATMUL, kernels.matmul, kernels.matmul_vjp),
    (_OP.LINEAR, kernels.linear, kernels.linear_vjp),
    (_OP.MSE_LOSS, kernels.mse_loss, kernels.mse_loss_vjp),
    (_OP.LAYER_NORM, spatial.layer_norm, spatial.layer_norm_vjp),
    (_OP.BATCH_NORM, spatial.batch_norm, spatial.batch_norm_vjp),
    (_OP.CONV, spatial.conv, spatial.conv_vjp),
    (_OP.CONV_TRANSPOSE, spatial.conv_transpose, spatial.conv_transpose_vjp),
    (_OP.MAX_POOL, spatial.max_pool, spatial.max_pool_vjp),
    (_OP.SMOOTH_MAX_POOL, spatial.smooth_max_pool, spatial.smooth_max_pool_vjp),
    (_OP.AVG_POOL, spatial.avg_pool, spatial.avg_pool_vjp),
    (
        _OP.SCALED_DOT_PRODUCT_ATTENTION,
        kernels.scaled_dot_product_attention,
        kernels.scaled_dot_product_attention_vjp,
    ),
)

LINKED_KERNELS: tuple[LinkedKernel, ...] = tuple(_linked(op, fwd, vjp) for op, fwd, vjp in _TABLE)
