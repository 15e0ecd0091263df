"""The opt-in ``aten`` capsule module: torch CPU forwards for the contraction-heavy ops.

Source: DESIGN.md §1.3, §1.6, §1.8 ("a fast CPU provider (`aten`: torch CPU kernels;
implementation-defined reduction; checked, value evidence = a differential test suite against
`reference`)"). Thirteen capsules ``aten.<op>`` for the ops where a torch CPU kernel (BLAS, oneDNN,
vectorised reductions) is a clear speed win over the reference left folds and whose semantics are
exactly the reference ones: matmul, linear, conv, conv_transpose, max_pool, avg_pool, softmax,
log_softmax, layer_norm, reduce_sum, reduce_mean, mse_loss, scaled_dot_product_attention.
Pointwise, view and selection ops are not registered: numpy already runs them vectorised, so a
torch round trip buys nothing, and the planner falls back to ``reference.*`` for them.

Every capsule: provider ``aten``, device ``cpu``, trust ``checked``, VJP mode ``torchlean-tape``,
reduction ``implementation-defined`` (torch does not promise a summation order). Evidence names
are real (what runs on the kernel path of ``aten/kernels.py``):

* shape: the reference guard with identical semantics, ``reference.guards.check_<op>`` or
  ``reference.spatial_guards.check_<op>`` for the five spatial ops;
* layout: ``aten.guards.check_aten_layout`` (canonical numpy arrays handed to torch);
* value: the differential suite ``tests/runtime/test_aten_differential.py`` (aten vs reference);
* vjp: the backward is the reference VJP evaluated at the saved inputs; the same suite compares
  gradients through the tape under ``fast_cpu`` and ``checked_cpu``.

Data only: this module imports neither numpy nor torch.
"""

from __future__ import annotations

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractClaim, NativeSymbolRef, NumericalPolicy, guarded, tested
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

__all__ = ["ATEN_OPS", "CAPSULES", "DIFFERENTIAL_SUITE", "MODULE"]

GUARDS = "torchlean.backend.providers.reference.guards"
SPATIAL_GUARDS = "torchlean.backend.providers.reference.spatial_guards"
LAYOUT_GUARD = "torchlean.backend.providers.aten.guards.check_aten_layout"
KERNELS_PATH = "torchlean/backend/providers/aten/kernels.py"
DIFFERENTIAL_SUITE = "tests/runtime/test_aten_differential.py"

_B = BackendOp
_SPATIAL = frozenset({_B.LAYER_NORM, _B.CONV, _B.CONV_TRANSPOSE, _B.MAX_POOL, _B.AVG_POOL})

ATEN_OPS: tuple[BackendOp, ...] = (
    _B.MATMUL,
    _B.LINEAR,
    _B.MSE_LOSS,
    _B.LOG_SOFTMAX,
    _B.SOFTMAX,
    _B.REDUCE_SUM,
    _B.REDUCE_MEAN,
    _B.LAYER_NORM,
    _B.CONV,
    _B.CONV_TRANSPOSE,
    _B.MAX_POOL,
    _B.AVG_POOL,
    _B.SCALED_DOT_PRODUCT_ATTENTION,
)
"""The ops the ``aten`` provider implements, in reference catalog order."""

_VALUE: dict[BackendOp, str] = {
    _B.MATMUL: "torch.matmul in the operands' dtype agrees with the reference matrix product.",
    _B.LINEAR: "torch.nn.functional.linear agrees with the reference matmul plus bias contract.",
    _B.MSE_LOSS: "torch.nn.functional.mse_loss (mean) agrees with the reference mean squared residual.",
    _B.LOG_SOFTMAX: "torch.log_softmax agrees with the reference stable row/axis normalization.",
    _B.SOFTMAX: "torch.softmax agrees with the reference row/axis normalization.",
    _B.REDUCE_SUM: "torch.sum agrees with the reference explicit reduction contract.",
    _B.REDUCE_MEAN: "torch.mean agrees with the reference explicit reduction contract.",
    _B.LAYER_NORM: "torch.nn.functional.layer_norm agrees with the reference per-row normalization.",
    _B.CONV: "torch.nn.functional.conv1d/2d/3d agrees with the reference channel-first convolution.",
    _B.CONV_TRANSPOSE: (
        "torch.nn.functional.conv_transpose1d/2d/3d agrees with the reference channel-first transpose "
        "convolution."
    ),
    _B.MAX_POOL: "torch.nn.functional.max_pool1d/2d/3d agrees with the reference channel-first window max.",
    _B.AVG_POOL: (
        "torch.nn.functional.avg_pool1d/2d/3d (count_include_pad) agrees with the reference window mean."
    ),
    _B.SCALED_DOT_PRODUCT_ATTENTION: (
        "Composed torch attention keeps hard-mask zero-numerator semantics: blocked entries are selected "
        "away and fully blocked rows are zero."
    ),
}


def _capsule(op: BackendOp) -> KernelCapsule:
    guard_module = SPATIAL_GUARDS if op in _SPATIAL else GUARDS
    return KernelCapsule(
        name=f"aten.{op.label}",
        op=op,
        provider=Provider.ATEN,
        device=Device.CPU,
        trust_level=TrustLevel.CHECKED,
        supports_forward=True,
        vjp_mode=VJPMode.TORCHLEAN_TAPE,
        shape_contract=guarded(
            ContractClaim.shape_safety(op),
            "Shapes are checked by the reference guard before torch is called.",
            f"{guard_module}.check_{op.label}",
        ),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(op, TensorLayout.CANONICAL_TENSOR),
            "Canonical TorchLean CPU arrays are handed to torch as contiguous tensors and copied back.",
            LAYOUT_GUARD,
        ),
        value_contract=tested(
            ContractClaim.value_refinement(op),
            _VALUE[op],
            DIFFERENTIAL_SUITE,
            (NativeSymbolRef(KERNELS_PATH, f"def {op.label}("),),
        ),
        vjp_contract=tested(
            ContractClaim.vjp_refinement(op, VJPMode.TORCHLEAN_TAPE),
            f"TorchLean tape applies the reference `{op.label}` VJP at the saved inputs.",
            DIFFERENTIAL_SUITE,
        ),
        numerical_policy=NumericalPolicy(ReductionPolicy.IMPLEMENTATION_DEFINED),
    )


CAPSULES: tuple[KernelCapsule, ...] = tuple(_capsule(op) for op in ATEN_OPS)

MODULE = CapsuleModule("aten", CAPSULES)
