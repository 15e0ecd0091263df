"""The opt-in ``libtorch`` capsule module: ``libtorch.sdpa_forward`` for cuda and for cpu.

Source: anchor-backend.md §4.5 (the CUDA capsule, summaries verbatim) and DESIGN.md §1.7–§1.8
(the CPU capsule). The forward is ``torch.nn.functional.scaled_dot_product_attention`` with a
boolean mask under ``torch.no_grad()``; trust ``trusted-external`` because the value rests on a
named trusted boundary; VJP mode ``torchlean-tape``: TorchLean records the node and applies its own
backward. Evidence names are real: the guards live in ``libtorch/sdpa.py``. Data only: this
module imports no torch.
"""

from __future__ import annotations

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractClaim, NativeSymbolRef, NumericalPolicy, guarded, trusted
from torchlean.backend.registry import CapsuleModule
from torchlean.backend.vocabulary import (
    BackendOp,
    Device,
    Provider,
    ReductionPolicy,
    TensorLayout,
    TrustLevel,
    VJPMode,
)

__all__ = ["CAPSULES", "MODULE", "SDPA_FORWARD_CPU", "SDPA_FORWARD_CUDA"]

SDPA = "torchlean.backend.providers.libtorch.sdpa"
BRIDGE_CPU = NativeSymbolRef("torchlean/backend/providers/libtorch/sdpa.py", "scaled_dot_product_attention")
BRIDGE_CUDA = NativeSymbolRef("torchlean/backend/providers/libtorch/sdpa.py", "device_attention")

_OP = BackendOp.SCALED_DOT_PRODUCT_ATTENTION


def _sdpa_forward(
    device: Device, layout: TensorLayout, layout_summary: str, boundary: str, bridge: NativeSymbolRef
) -> KernelCapsule:
    return KernelCapsule(
        name="libtorch.sdpa_forward",
        op=_OP,
        provider=Provider.LIBTORCH,
        device=device,
        trust_level=TrustLevel.TRUSTED_EXTERNAL,
        supports_forward=True,
        vjp_mode=VJPMode.TORCHLEAN_TAPE,
        shape_contract=guarded(
            ContractClaim.shape_safety(_OP),
            "Q/K/V are checked with their leading (batch, head) axes unfolded, which broadcast to one batch "
            "shape; the optional boolean mask broadcasts to (*batch, nQ, nK).",
            f"{SDPA}.check_sdpa_inputs",
        ),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(_OP, layout),
            layout_summary,
            f"{SDPA}.check_libtorch_view",
            (bridge,),
        ),
        value_contract=trusted(
            ContractClaim.value_refinement(_OP),
            "LibTorch scaled_dot_product_attention forward (the external symbol trusted: "
            "torch.nn.functional.scaled_dot_product_attention, ATen's at::scaled_dot_product_attention, "
            "called by the bridge named in the layout provenance), with TorchLean's mask semantics "
            "applied around it by torch ops of the bridge (tested in tests/runtime/test_libtorch_sdpa.py): "
            "fully blocked rows are zero, and rows attending a non-finite key or value row, or whose scores "
            "may overflow, are recomputed with the reference's semantics (masked or not).",
            boundary,
        ),
        vjp_contract=guarded(
            ContractClaim.vjp_refinement(_OP, VJPMode.TORCHLEAN_TAPE),
            "TorchLean records the node and keeps the backward boundary inside TorchLean. The guard checks "
            "that ownership only; the gradients are TorchLean's attention VJP rule (the reference's on cpu, "
            "device_attention_vjp on cuda, whose softmax step without a mask is ATen's fused softmax "
            "backward, _softmax_backward_data, the same formula), tested in "
            "tests/runtime/test_libtorch_sdpa.py.",
            f"{SDPA}.require_torchlean_tape",
        ),
        numerical_policy=NumericalPolicy(ReductionPolicy.IMPLEMENTATION_DEFINED),
    )


SDPA_FORWARD_CUDA = _sdpa_forward(
    Device.CUDA,
    TensorLayout.LIBTORCH_CUDA_VIEW,
    "TorchLean CUDA tensors' torch storage is handed to LibTorch in place (contiguous, one device); the "
    "result is a fresh contiguous tensor on that device.",
    "LibTorch/CUDA SDPA implementation",
    BRIDGE_CUDA,
)

SDPA_FORWARD_CPU = _sdpa_forward(
    Device.CPU,
    TensorLayout.FLAT_ROW_MAJOR,
    "TorchLean CPU arrays are passed to LibTorch as contiguous row-major tensors.",
    "LibTorch/CPU SDPA implementation",
    BRIDGE_CPU,
)

CAPSULES: tuple[KernelCapsule, ...] = (SDPA_FORWARD_CUDA, SDPA_FORWARD_CPU)

MODULE = CapsuleModule("libtorch", CAPSULES)
