"""The ``reference`` capsule module: 45 portable CPU capsules (numpy kernels, fixed-left folds).

Source: anchor-backend.md §4.1 (reference template) and §4.2 (catalog order and texts). Value, VJP
and layout summaries are the original's verbatim; the shape summaries are reworded, as the
original's ("Shapes are checked in Lean before entering the portable runtime path") would be false
here: a guard checks them before the kernel runs. Evidence names are real (DESIGN.md §1.3): shape
guards are ``reference.guards.check_<op>`` (``reference.spatial_guards.check_<op>`` for the seven
spatial ops), the layout guard is ``reference.guards.check_canonical_layout``, and test suites are
test modules of this repository. This module is data only: it imports no numpy.
"""

from __future__ import annotations

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractClaim, NumericalPolicy, guarded, tested, vjp_unavailable
from torchlean.backend.providers._templates import VariantTemplate
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

__all__ = ["CAPSULES", "MODULE"]

GUARDS = "torchlean.backend.providers.reference.guards"
SPATIAL_GUARDS = "torchlean.backend.providers.reference.spatial_guards"
VALUE_SUITE = "tests/runtime/test_reference_values.py"
GRADIENT_SUITE = "tests/runtime/test_reference_gradients.py"
SPATIAL_SUITE = "tests/runtime/test_reference_spatial.py"
ATTENTION_SUITE = "tests/runtime/test_reference_attention.py"

SPATIAL_OPS = frozenset(
    {
        BackendOp.LAYER_NORM,
        BackendOp.BATCH_NORM,
        BackendOp.CONV,
        BackendOp.CONV_TRANSPOSE,
        BackendOp.MAX_POOL,
        BackendOp.SMOOTH_MAX_POOL,
        BackendOp.AVG_POOL,
    }
)

FIXED_LEFT = ReductionPolicy.FIXED_LEFT
NO_REDUCTION = ReductionPolicy.NOT_APPLICABLE
TAPE_VJP = "TorchLean tape supplies the VJP."


def _capsule(
    op: BackendOp,
    value_summary: str,
    vjp_summary: str,
    reduction: ReductionPolicy,
    *,
    forward_only: bool = False,
) -> KernelCapsule:
    """The reference template (anchor-backend.md §4.1) with real evidence names."""
    spatial = op in SPATIAL_OPS
    shape_guard = f"{SPATIAL_GUARDS if spatial else GUARDS}.check_{op.label}"
    mode = VJPMode.NONE if forward_only else VJPMode.TORCHLEAN_TAPE
    vjp = (
        vjp_unavailable(op, vjp_summary)
        if forward_only
        else tested(
            ContractClaim.vjp_refinement(op, mode), vjp_summary, SPATIAL_SUITE if spatial else GRADIENT_SUITE
        )
    )
    return KernelCapsule(
        name=f"reference.{op.label}",
        op=op,
        provider=Provider.REFERENCE,
        device=Device.CPU,
        trust_level=TrustLevel.CHECKED,
        supports_forward=True,
        vjp_mode=mode,
        shape_contract=guarded(
            ContractClaim.shape_safety(op),
            "Shapes are checked by the op's guard before the portable kernel runs.",
            shape_guard,
        ),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(op, TensorLayout.CANONICAL_TENSOR),
            "Portable paths use TorchLean's canonical tensor representation.",
            f"{GUARDS}.check_canonical_layout",
        ),
        value_contract=tested(
            ContractClaim.value_refinement(op), value_summary, SPATIAL_SUITE if spatial else VALUE_SUITE
        ),
        vjp_contract=vjp,
        numerical_policy=NumericalPolicy(reduction),
    )


_VARIANTS = VariantTemplate(
    build=_capsule,
    subject="Reference",
    pointwise_vjp="TorchLean tape supplies the `{op}` VJP where differentiable.",
    adjoint_vjp="TorchLean tape supplies the `{op}` adjoint where differentiable.",
    conv_pool_vjp="TorchLean tape supplies the `{op}` VJP where differentiable.",
    accumulating=FIXED_LEFT,
)


def _attention() -> KernelCapsule:
    op = BackendOp.SCALED_DOT_PRODUCT_ATTENTION
    return KernelCapsule(
        name="reference.attention",
        op=op,
        provider=Provider.REFERENCE,
        device=Device.CPU,
        trust_level=TrustLevel.CHECKED,
        supports_forward=True,
        vjp_mode=VJPMode.TORCHLEAN_TAPE,
        shape_contract=guarded(
            ContractClaim.shape_safety(op),
            "Q/K/V and mask shapes are checked by the kernel guard before the kernel runs.",
            f"{GUARDS}.check_{op.label}",
        ),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(op, TensorLayout.CANONICAL_TENSOR),
            "Reference attention uses TorchLean tensor semantics rather than a foreign layout.",
            f"{GUARDS}.check_canonical_layout",
        ),
        value_contract=tested(
            ContractClaim.value_refinement(op),
            "Composed reference attention uses hard-mask zero-numerator semantics.",
            ATTENTION_SUITE,
        ),
        vjp_contract=tested(
            ContractClaim.vjp_refinement(op, VJPMode.TORCHLEAN_TAPE),
            "TorchLean tape supplies the composed VJP.",
            ATTENTION_SUITE,
        ),
        numerical_policy=NumericalPolicy(FIXED_LEFT),
    )


_B = BackendOp
_BROADCASTING = frozenset({_B.ADD, _B.SUB, _B.MUL, _B.MAX, _B.MIN})
"""The binary pointwise ops: operands broadcast, so their VJPs sum over the broadcast axes."""

CAPSULES: tuple[KernelCapsule, ...] = (
    _capsule(
        _B.MATMUL, "Portable matmul follows the spec-level matrix product contract.", TAPE_VJP, FIXED_LEFT
    ),
    _capsule(
        _B.LINEAR, "Reference linear follows the matvec/matmul plus bias contract.", TAPE_VJP, FIXED_LEFT
    ),
    _capsule(_B.MSE_LOSS, "Reference MSE follows the mean squared residual contract.", TAPE_VJP, FIXED_LEFT),
    _capsule(_B.RELU, "Reference ReLU follows pointwise tensor semantics.", TAPE_VJP, NO_REDUCTION),
    _capsule(
        _B.GELU,
        "Reference GELU is the exact erf form x * Phi(x) (torch's approximate='none'), not the tanh "
        "approximation.",
        TAPE_VJP,
        NO_REDUCTION,
    ),
    *(
        _VARIANTS.pointwise(op, vjp_sums=op in _BROADCASTING)
        for op in (
            _B.ADD,
            _B.SUB,
            _B.MUL,
            _B.SCALE,
            _B.ABS,
            _B.SQRT,
            _B.CLAMP,
            _B.MAX,
            _B.MIN,
            _B.SIGMOID,
            _B.TANH,
            _B.SOFTPLUS,
            _B.EXP,
            _B.LOG,
            _B.SIN,
            _B.COS,
            _B.INV,
            _B.SAFE_LOG,
        )
    ),
    _capsule(
        _B.LOG_SOFTMAX,
        "Reference log-softmax follows the stable row/axis normalization contract.",
        TAPE_VJP,
        FIXED_LEFT,
    ),
    _capsule(
        _B.SOFTMAX, "Reference softmax follows the row/axis normalization contract.", TAPE_VJP, FIXED_LEFT
    ),
    _capsule(
        _B.HARD_MASKED_SOFTMAX,
        "Reference hard-masked softmax normalizes over allowed coordinates and returns zero for fully "
        "blocked rows.",
        "TorchLean tape supplies the masked-softmax VJP with the mask treated as constant.",
        FIXED_LEFT,
    ),
    _VARIANTS.reduction(_B.REDUCE_SUM),
    _VARIANTS.reduction(_B.REDUCE_MEAN),
    *(
        _VARIANTS.view(op, vjp_sums=op in (_B.BROADCAST, _B.GATHER))
        for op in (_B.RESHAPE, _B.PERMUTE, _B.BROADCAST, _B.CONCAT, _B.SLICE, _B.GATHER)
    ),
    _capsule(
        _B.SCATTER_ADD,
        "Indexed source values accumulate into the base tensor, including repeated indices.",
        "The VJP gathers output gradients at the source indices and preserves the base gradient.",
        FIXED_LEFT,
    ),
    _VARIANTS.forward_only(
        _B.RAND_UNIFORM,
        "Reference deterministic random-uniform tensors follow the seeded spec/runtime contract.",
    ),
    _VARIANTS.forward_only(
        _B.BERNOULLI_MASK, "Reference deterministic Bernoulli masks follow the seeded spec/runtime contract."
    ),
    _capsule(
        _B.LAYER_NORM, "Reference LayerNorm follows the per-row normalization contract.", TAPE_VJP, FIXED_LEFT
    ),
    _capsule(
        _B.BATCH_NORM,
        "Reference BatchNorm follows the channel-first normalization contract.",
        TAPE_VJP,
        FIXED_LEFT,
    ),
    _capsule(
        _B.CONV, "Reference convolution follows the generic channel-first contract.", TAPE_VJP, FIXED_LEFT
    ),
    _capsule(
        _B.CONV_TRANSPOSE,
        "Reference transpose convolution follows the generic channel-first contract.",
        TAPE_VJP,
        FIXED_LEFT,
    ),
    _VARIANTS.selection(_B.MAX_POOL),
    _capsule(
        _B.SMOOTH_MAX_POOL,
        "Reference smooth max pooling uses stable max/min-shifted window weights.",
        TAPE_VJP,
        FIXED_LEFT,
    ),
    _capsule(
        _B.AVG_POOL,
        "Reference average-pooling follows the channel-first window contract.",
        TAPE_VJP,
        FIXED_LEFT,
    ),
    _attention(),
)

MODULE = CapsuleModule("reference", CAPSULES)
