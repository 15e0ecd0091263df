"""Linked kernel of ``torchlean.composed_attention``, the attention module's composed CUDA capsule.

Identity ``(scaled_dot_product_attention, torchlean, cuda)``, named ``TorchLean composed CUDA
attention``. Source: anchor-backend.md §4.4, anchor-runtime.md §6.1 and DESIGN.md §1.7. The
forward is :func:`~torchlean.backend.providers.attention_kernels.composed_attention` (batched
matmul, hard-masked row softmax, batched matmul on the CUDA tensors' torch storage; it runs the
capsule's guards ``check_composed_attention`` and ``check_cuda_layout`` first). The VJP mode is
``torchlean-tape``: the node's rule is TorchLean's composed VJP,
:func:`~torchlean.backend.providers.attention_kernels.composed_attention_vjp`, which recomputes
the probabilities from the saved Q, K, V and mask (the forward keeps nothing but the output, so
no ``(n_q, n_k)`` buffer outlives a call) and applies the softmax and matmul VJPs on the device.

``attention_kernels`` (and so torch) is imported on first use only.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import GuardError
from torchlean.backend.providers.linked import Array, LinkedKernel
from torchlean.backend.vocabulary import BackendOp, Device, Provider

if TYPE_CHECKING:
    import torch

__all__ = ["HANDLER_NAME", "LINKED_KERNELS"]

HANDLER_NAME = "TorchLean composed CUDA attention"


def _tensor(x: Array | None, what: str) -> torch.Tensor:
    import torch

    if not isinstance(x, torch.Tensor):
        raise GuardError(
            f"torchlean.composed_attention: {what} is a {type(x).__name__} (accepted: the torch storage "
            "of a CUDA tensor)"
        )
    return x


def _operands(
    inputs: tuple[Array | None, ...],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None]:
    """``(q, k, v, mask)`` from the dispatcher's input positions (mask optional)."""
    mask = inputs[3] if len(inputs) > 3 else None
    return (
        _tensor(inputs[0], "q"),
        _tensor(inputs[1], "k"),
        _tensor(inputs[2], "v"),
        None if mask is None else _tensor(mask, "mask"),
    )


def _forward(capsule: KernelCapsule, inputs: tuple[Array | None, ...], params: Mapping[str, Any]) -> Array:
    from torchlean.backend.providers import attention_kernels

    q, k, v, mask = _operands(inputs)
    return attention_kernels.composed_attention(q, k, v, mask, scale=params.get("scale"))


def _vjp(
    capsule: KernelCapsule,
    g: Array,
    inputs: tuple[Array | None, ...],
    out: Array,
    params: Mapping[str, Any],
) -> Sequence[Array | None]:
    from torchlean.backend.providers import attention_kernels

    q, k, v, mask = _operands(inputs)
    return attention_kernels.composed_attention_vjp(
        _tensor(g, "g"), q, k, v, mask, out=_tensor(out, "out"), scale=params.get("scale")
    )


LINKED_KERNELS: tuple[LinkedKernel, ...] = (
    LinkedKernel(
        HANDLER_NAME,
        BackendOp.SCALED_DOT_PRODUCT_ATTENTION,
        Provider.TORCHLEAN,
        Device.CUDA,
        _forward,
        _vjp,
    ),
)
