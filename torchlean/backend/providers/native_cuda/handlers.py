"""Linked kernels of the ``native-cuda`` provider: every native CUDA capsule's implementation.

One :class:`~torchlean.backend.providers.linked.LinkedKernel` per capsule of the ``native-cuda``
module (46, catalog order) plus ``native_cuda.direct_attention`` of the ``attention`` module, all
named ``TorchLean native CUDA`` as in the original's ``executeReferenceOrNativeCuda``
(anchor-backend.md §7), identity ``(op, native-cuda, cuda)``. Source: DESIGN.md §1.7; the kernels
are :mod:`torchlean.backend.providers.native_cuda.kernels`.

Calling convention: the inputs are the CUDA tensors' torch storage (contiguous, on one device;
the dispatcher checks the device first). The forward calls ``kernels.<op>_forward(*inputs,
**params)`` and, for the 44 differentiable ops, the VJP ``kernels.<op>_backward(g, *inputs,
out=out, **params)`` — the reference kernels' convention and parameter names, so the session
passes the same ``params`` to every provider. The VJP mode is ``backend-vjp``: the backward kernel
computes the local VJP, and TorchLean's tape still records the node and applies that VJP as the
node's rule (accumulation, version checks and traversal stay TorchLean's). Direct attention runs
:func:`~.kernels.direct_attention` (the row logsumexp stays attached to the output) and its VJP
:func:`~.kernels.direct_attention_vjp` (the native backward from that logsumexp).

The two seeded sources are forward only; their ``dtype`` parameter arrives as a numpy dtype and is
passed to the kernel as the torch dtype, and they draw on the current CUDA device (``dropout``
makes its input's device the current one for its mask: ``storage.device_scope``).

``kernels`` (and so torch) is imported on the first native call, never when this module is
linked, so CPU-only use of torchlean does not import torch. Inside
:func:`~.extension.host_emulation` the same linked kernels run the host-emulation build on CPU
torch tensors (the test suite's seam on machines without a GPU; sessions never select it).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from types import ModuleType
from typing import Any

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.providers.linked import Array, ForwardFn, LinkedKernel, VJPFn
from torchlean.backend.providers.native_cuda.capsules import CAPSULES
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode

__all__ = ["HANDLER_NAME", "LINKED_KERNELS", "SOURCE_OPS"]

HANDLER_NAME = "TorchLean native CUDA"

SOURCE_OPS: frozenset[BackendOp] = frozenset({BackendOp.RAND_UNIFORM, BackendOp.BERNOULLI_MASK})
"""The seeded random sources (forward only; no tensor inputs)."""


def _kernels() -> ModuleType:
    from torchlean.backend.providers.native_cuda import kernels

    return kernels


def _source_params(params: Mapping[str, Any]) -> dict[str, Any]:
    """The session's parameters of a seeded source with ``dtype`` as a torch dtype."""
    import numpy as np
    import torch

    resolved = dict(params)
    if "dtype" in resolved:
        resolved["dtype"] = getattr(torch, np.dtype(resolved["dtype"]).name)
    return resolved


def _forward(op: BackendOp, name: str) -> ForwardFn:
    def run_forward(
        capsule: KernelCapsule, inputs: tuple[Array | None, ...], params: Mapping[str, Any]
    ) -> Array:
        forward: Callable[..., Array] = getattr(_kernels(), name)
        if op in SOURCE_OPS:
            return forward(**_source_params(params))
        return forward(*inputs, **params)

    return run_forward


def _vjp(name: str) -> VJPFn:
    def run_vjp(
        capsule: KernelCapsule,
        g: Array,
        inputs: tuple[Array | None, ...],
        out: Array,
        params: Mapping[str, Any],
    ) -> Sequence[Array | None]:
        backward: Callable[..., Sequence[Array | None]] = getattr(_kernels(), name)
        return backward(g, *inputs, out=out, **params)

    return run_vjp


def _linked(op: BackendOp, forward_name: str, backward_name: str | None) -> LinkedKernel:
    vjp = None if backward_name is None else _vjp(backward_name)
    return LinkedKernel(HANDLER_NAME, op, Provider.NATIVE_CUDA, Device.CUDA, _forward(op, forward_name), vjp)


def _capsule_kernel(capsule: KernelCapsule) -> LinkedKernel:
    label = capsule.op.label
    differentiable = capsule.vjp_mode is VJPMode.BACKEND_VJP
    return _linked(capsule.op, f"{label}_forward", f"{label}_backward" if differentiable else None)


LINKED_KERNELS: tuple[LinkedKernel, ...] = (
    *(_capsule_kernel(capsule) for capsule in CAPSULES),
    _linked(BackendOp.SCALED_DOT_PRODUCT_ATTENTION, "direct_attention", "direct_attention_vjp"),
)
"""The 46 native-cuda kernels in catalog order, then ``native_cuda.direct_attention``."""
