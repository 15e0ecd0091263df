"""The ``attention`` capsule module: CUDA attention capsules, native direct kernel first.

Source: anchor-backend.md §4.4 (Generation B) and the seed chapter ("Forward And Backward
Ownership"). Summaries are the original's verbatim; evidence names are real (DESIGN.md §1.3):

1. ``native_cuda.direct_attention``: the fused native kernel (``direct_attention_forward`` in
   ``native_cuda/csrc/native_ops.cu``), backend VJP, guards of the native extension.
2. ``torchlean.composed_attention``: TorchLean's composition (batched matmul, hard-masked softmax,
   batched matmul) on CUDA with a TorchLean-tape VJP, guarded by ``attention_kernels``.

Both are checked and implementation-defined. This module is data only.
"""

from __future__ import annotations

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractClaim, NativeSymbolRef, NumericalPolicy, guarded, tested
from torchlean.backend.providers.native_cuda.capsules import (
    CHECK_FLAT_ROW_MAJOR,
    CHECK_LAUNCH,
    EXTENSION,
    SOURCE,
)
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

__all__ = ["CAPSULES", "COMPOSED_ATTENTION", "DIRECT_ATTENTION", "MODULE"]

ATTENTION_SUITE = "tests/cuda/test_cuda_attention.py"
ATTENTION_KERNELS = "torchlean.backend.providers.attention_kernels"

_OP = BackendOp.SCALED_DOT_PRODUCT_ATTENTION

DIRECT_ATTENTION = KernelCapsule(
    name="native_cuda.direct_attention",
    op=_OP,
    provider=Provider.NATIVE_CUDA,
    device=Device.CUDA,
    trust_level=TrustLevel.CHECKED,
    supports_forward=True,
    vjp_mode=VJPMode.BACKEND_VJP,
    shape_contract=guarded(
        ContractClaim.shape_safety(_OP),
        "Q/K/V use a folded (batch, head, n, headDim) layout; the optional mask broadcasts over the folded "
        "batch-head axis.",
        CHECK_LAUNCH,
    ),
    layout_contract=guarded(
        ContractClaim.layout_compatibility(_OP, TensorLayout.FLAT_ROW_MAJOR),
        "Flat row-major buffers; the folded batch-head axis is the kernel batch axis.",
        CHECK_FLAT_ROW_MAJOR,
    ),
    value_contract=tested(
        ContractClaim.value_refinement(_OP),
        "Direct CUDA fused attention with hard-mask zero-numerator semantics.",
        ATTENTION_SUITE,
        (NativeSymbolRef(SOURCE, "direct_attention_forward", EXTENSION),),
    ),
    vjp_contract=tested(
        ContractClaim.vjp_refinement(_OP, VJPMode.BACKEND_VJP),
        "CUDA VJP kernels return dQ, dK, and dV for the fused operator.",
        ATTENTION_SUITE,
    ),
    numerical_policy=NumericalPolicy(ReductionPolicy.IMPLEMENTATION_DEFINED),
)

COMPOSED_ATTENTION = KernelCapsule(
    name="torchlean.composed_attention",
    op=_OP,
    provider=Provider.TORCHLEAN,
    device=Device.CUDA,
    trust_level=TrustLevel.CHECKED,
    supports_forward=True,
    vjp_mode=VJPMode.TORCHLEAN_TAPE,
    shape_contract=guarded(
        ContractClaim.shape_safety(_OP),
        "Q/K/V have logical shape (batch, heads, n, headDim), with batch optional; the runtime folds "
        "(batch, heads) for BMM and broadcasts the mask over that folded axis.",
        f"{ATTENTION_KERNELS}.check_composed_attention",
    ),
    layout_contract=guarded(
        ContractClaim.layout_compatibility(_OP, TensorLayout.FLAT_ROW_MAJOR),
        "Flat row-major buffers; the folded (batch, head) axis is the BMM batch axis.",
        f"{ATTENTION_KERNELS}.check_cuda_layout",
    ),
    value_contract=tested(
        ContractClaim.value_refinement(_OP),
        "Composed bmm, hard-masked row softmax, and bmm.",
        ATTENTION_SUITE,
    ),
    vjp_contract=tested(
        ContractClaim.vjp_refinement(_OP, VJPMode.TORCHLEAN_TAPE),
        "TorchLean tape VJP: one hand-written rule that recomputes the composed expression's probabilities, "
        "summing shared weight gradients over the leading batch; without a mask, its softmax step is "
        "ATen's fused softmax backward, _softmax_backward_data, the same formula.",
        ATTENTION_SUITE,
    ),
    numerical_policy=NumericalPolicy(ReductionPolicy.IMPLEMENTATION_DEFINED),
)

CAPSULES: tuple[KernelCapsule, ...] = (DIRECT_ATTENTION, COMPOSED_ATTENTION)

MODULE = CapsuleModule("attention", CAPSULES)
