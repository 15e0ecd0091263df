"""The ``native-cuda`` capsule module: 46 CUDA capsules of the native extension (Generation B).

Source: anchor-backend.md §4.1 (native CUDA template) and §4.3 (catalog order and texts). Value
summaries are the original's, with what computes the op added where ATen does (every op but the
five of :data:`OWN_KERNELS`); VJP summaries name the suite that checks them; evidence names are
real (DESIGN.md §1.3): the shape guard
``native_cuda.guards.check_launch`` (``check_element_count`` of the requested shape for the two
random sources, which have no tensor operands), the layout guard ``native_cuda.guards.check_flat_row_major``,
the parity suite ``tests/cuda/test_native_parity.py``, and value provenance
:data:`SOURCE` (``native_cuda/csrc/native_ops.cu``) / ``<op>_forward`` built into
``torchlean_native_ext``. Capsules exist and plan on every machine; execution needs CUDA. This
module is data only.
"""

from __future__ import annotations

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import (
    ContractClaim,
    NativeSymbolRef,
    NumericalPolicy,
    guarded,
    tested,
    vjp_unavailable,
)
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

__all__ = [
    "ATEN_NOTE",
    "CAPSULES",
    "CHECK_ELEMENT_COUNT",
    "CHECK_FLAT_ROW_MAJOR",
    "CHECK_LAUNCH",
    "EXTENSION",
    "MODULE",
    "OWN_KERNELS",
    "SOURCE",
]

CHECK_LAUNCH = "torchlean.backend.providers.native_cuda.guards.check_launch"
CHECK_ELEMENT_COUNT = "torchlean.backend.providers.native_cuda.guards.check_element_count"
SOURCES = frozenset({BackendOp.RAND_UNIFORM, BackendOp.BERNOULLI_MASK})
"""The ops without tensor operands: their shape guard is the output shape's element count."""
CHECK_FLAT_ROW_MAJOR = "torchlean.backend.providers.native_cuda.guards.check_flat_row_major"
PARITY_SUITE = "tests/cuda/test_native_parity.py"
SOURCE = "torchlean/backend/providers/native_cuda/csrc/native_ops.cu"
"""Value provenance: the file of every ``<op>_forward``, relative to the directory that holds the
``torchlean`` package (the repository root of a checkout, ``site-packages`` of an install)."""
EXTENSION = "torchlean_native_ext"

OWN_KERNELS = frozenset({
    BackendOp.HARD_MASKED_SOFTMAX,
    BackendOp.SMOOTH_MAX_POOL,
    BackendOp.SELECTIVE_SCAN,
    BackendOp.RAND_UNIFORM,
    BackendOp.BERNOULLI_MASK,
})
"""The ops whose forward and backward are torchlean's own CUDA kernels (``csrc/kernels.cuh``); the
other ``<op>_forward`` entry points call ATen (and through it cuBLAS, cuDNN, cuFFT) from the
extension's C++."""

ATEN_NOTE = " ATen computes it, called from the extension's C++."
"""Appended to the value summary of every capsule outside :data:`OWN_KERNELS`."""

IMPL_DEFINED = ReductionPolicy.IMPLEMENTATION_DEFINED
NO_REDUCTION = ReductionPolicy.NOT_APPLICABLE


def _capsule(
    op: BackendOp,
    value_summary: str,
    vjp_summary: str,
    reduction: ReductionPolicy,
    *,
    forward_only: bool = False,
) -> KernelCapsule:
    """The native CUDA template (anchor-backend.md §4.1) with real evidence names."""
    mode = VJPMode.NONE if forward_only else VJPMode.BACKEND_VJP
    vjp = (
        vjp_unavailable(op, vjp_summary)
        if forward_only
        else tested(ContractClaim.vjp_refinement(op, mode), vjp_summary, PARITY_SUITE)
    )
    return KernelCapsule(
        name=f"native_cuda.{op.label}",
        op=op,
        provider=Provider.NATIVE_CUDA,
        device=Device.CUDA,
        trust_level=TrustLevel.CHECKED,
        supports_forward=True,
        vjp_mode=mode,
        shape_contract=guarded(
            ContractClaim.shape_safety(op),
            "Ranks, sizes, dtypes and overflow-checked element counts are checked before launch.",
            CHECK_ELEMENT_COUNT if op in SOURCES else CHECK_LAUNCH,
        ),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(op, TensorLayout.FLAT_ROW_MAJOR),
            "CUDA tensors are contiguous row-major float32 or float64 buffers on one device.",
            CHECK_FLAT_ROW_MAJOR,
        ),
        value_contract=tested(
            ContractClaim.value_refinement(op),
            value_summary if op in OWN_KERNELS else value_summary + ATEN_NOTE,
            PARITY_SUITE,
            (NativeSymbolRef(SOURCE, f"{op.label}_forward", EXTENSION),),
        ),
        vjp_contract=vjp,
        numerical_policy=NumericalPolicy(reduction),
    )


_VARIANTS = VariantTemplate(
    build=_capsule,
    subject="Native CUDA",
    pointwise_vjp="Native CUDA `{op}` VJP is checked against the reference VJP by the native parity suite.",
    adjoint_vjp="Native CUDA `{op}` adjoint is checked against the reference VJP by the native parity suite.",
    conv_pool_vjp="Native CUDA `{op}` VJP is checked against the reference VJP by the native parity suite.",
    accumulating=IMPL_DEFINED,
)


_B = BackendOp
_BROADCASTING = frozenset({_B.ADD, _B.SUB, _B.MUL, _B.MAX, _B.MIN})
"""The binary pointwise ops: operands broadcast, so their VJPs sum over the broadcast axes."""

CAPSULES: tuple[KernelCapsule, ...] = (
    _capsule(
        _B.MATMUL,
        "Matrix products agree with the row-major runtime contract.",
        "Backward products are checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.LINEAR,
        "Linear layer kernels follow the matvec/matmul plus bias contract.",
        "Linear VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.MSE_LOSS,
        "MSE loss follows the mean squared residual contract.",
        "MSE VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.RELU,
        "ReLU forward follows the pointwise activation contract.",
        "ReLU VJP is checked against the reference VJP by the native parity suite.",
        NO_REDUCTION,
    ),
    _capsule(
        _B.GELU,
        "GELU forward is the exact erf form x * Phi(x) by default (torch's approximate='none'), "
        "ATen's tanh approximation with approximate='tanh'.",
        "GELU VJP is checked against the reference VJP by the native parity suite.",
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
            _B.SIN,
            _B.COS,
            _B.LOG,
            _B.INV,
            _B.SAFE_LOG,
        )
    ),
    _capsule(
        _B.LOG_SOFTMAX,
        "Log-softmax kernels follow the stable row/axis normalization contract.",
        "Log-softmax VJPs are checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.SOFTMAX,
        "Softmax kernels follow the row/axis normalization contract.",
        "Softmax VJPs are checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.HARD_MASKED_SOFTMAX,
        "The kernel normalizes over allowed entries and writes zeros at blocked coordinates. "
        "A fully blocked row returns zeros.",
        "The local VJP uses the softmax Jacobian evaluated at the masked output; "
        "blocked coordinates therefore receive zero gradient.",
        IMPL_DEFINED,
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
        IMPL_DEFINED,
    ),
    _VARIANTS.forward_only(
        _B.RAND_UNIFORM,
        "Native CUDA deterministic random-uniform buffers follow the seeded runtime contract.",
    ),
    _VARIANTS.forward_only(
        _B.BERNOULLI_MASK, "Native CUDA deterministic Bernoulli masks follow the seeded runtime contract."
    ),
    _capsule(
        _B.LAYER_NORM,
        "LayerNorm follows the per-row normalization contract.",
        "LayerNorm VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.BATCH_NORM,
        "BatchNorm follows the channel-first normalization contract.",
        "BatchNorm VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.CONV,
        "Convolution follows the generic channel-first runtime contract.",
        "Convolution VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.CONV_TRANSPOSE,
        "Transpose convolution follows the generic channel-first runtime contract.",
        "Transpose-convolution VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _VARIANTS.selection(_B.MAX_POOL),
    _capsule(
        _B.SMOOTH_MAX_POOL,
        "Smooth max pooling uses finite nonzero beta and stable max/min-shifted window weights.",
        "Forward and VJP stability are checked against the reference runtime at overflow-scale inputs.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.AVG_POOL,
        "Average-pooling follows the channel-first window contract.",
        "Average-pooling VJP is checked against the reference VJP by the native parity suite.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.FFT_FNO,
        "Packed rFFT/irFFT and spectral convolution follow the documented half-spectrum contract.",
        "Packed transforms use the real-linear half-spectrum adjoints; spectral convolution propagates "
        "gradients to its input and both weight components.",
        IMPL_DEFINED,
    ),
    _capsule(
        _B.SELECTIVE_SCAN,
        "Shared and token-dependent coefficients follow the diagonal recurrence contract.",
        "Reverse recurrence differentiates coefficients, inputs, and the initial state; shared coefficient "
        "cotangents are accumulated across time.",
        IMPL_DEFINED,
    ),
)

MODULE = CapsuleModule("native-cuda", CAPSULES)
