"""The opt-in ``aten`` capsule module: torch CPU kernels for every op the trainer and ``nn`` use.

Source: DESIGN.md §1.3, §1.6, §1.8 ("a fast CPU provider (`aten`: torch CPU kernels;
implementation-defined reduction; checked, value evidence = a differential test suite against
`reference`)"). Forty capsules ``aten.<op>``, in reference catalog order: the
contractions (matmul, linear, mse_loss), the twenty pointwise ops, the softmax normalisations,
the reductions, the views reshape/permute/broadcast, concat (``tl.concat``; the training lookup
of an embedding with a ``padding_idx``), slice (batch norm's running statistics) and gather
(embedding lookups), layer and batch norm, convolution and transpose convolution, max and
average pooling, and attention. The reference ops without an aten capsule (hard_masked_softmax,
scatter_add, the two seeded random sources, smooth_max_pool) plan to ``reference.*`` under
``fast_cpu``; of them the trainer and ``nn`` use only dropout's ``bernoulli_mask``.

Every capsule: provider ``aten``, device ``cpu``, trust ``checked``; VJP mode ``backend-vjp`` for the
nine ops whose VJP is ATen's own backward kernel (relu's ``threshold_backward``, softmax and
log_softmax, layer and batch norm, the convolutions and the pools: the seed chapter's "local VJP
computed by a backend kernel", review134 F1), ``torchlean-tape`` for the rest, whose VJP is the
reference rule written in torch ops (a ``torchlean-tape`` policy, every profile's, admits both);
reduction ``implementation-defined`` (torch promises no summation order) wherever the forward or
the VJP sums (the contractions, normalisations, reductions, pools, attention, and the binary
pointwise ops and ``broadcast``, whose VJPs sum over broadcast axes, and ``gather``, whose VJP adds
the cotangents of repeated indices with torch's ``scatter_add_``), ``n/a`` for the unary pointwise
ops, ``reshape``, ``permute``, ``concat`` and ``slice``, which reduce nothing (as the reference
capsules).
Evidence names are real (what runs on the kernel path of ``aten/kernels.py``, ``aten/pointwise.py``,
``aten/spatial.py``):

* shape: the reference guard, ``reference.guards.check_<op>`` or
  ``reference.spatial_guards.check_<op>`` for the six channel-first ops, called first by both the
  forward and the VJP;
* layout: ``reference.guards.check_canonical_layout``, which the reference guard runs on every
  operand (the cotangent too) before ``aten.guards.check_aten_layout`` hands the canonical numpy
  arrays to torch zero-copy (its own refusals only back it up: they cannot fire after it);
* value: the differential suite ``tests/runtime/test_aten_differential.py`` (aten forward against
  the reference forward), provenance the forward ``def <op>(``;
* vjp: the gradient suite ``tests/runtime/test_aten_gradients.py`` (aten VJP against the reference
  VJP and torch autograd, tape gradients under ``fast_cpu`` against ``checked_cpu``), provenance
  the VJP ``def <op>_vjp(``. A ``torchlean-tape`` backward is TorchLean's rule (the reference's)
  evaluated with torch kernels, a ``backend-vjp`` one ATen's backward kernel (whose rounding may
  differ: layer norm's caveat); the tape drives both, and torch autograd never records.

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

__all__ = ["ATEN_OPS", "CAPSULES", "DIFFERENTIAL_SUITE", "GRADIENT_SUITE", "MODULE", "kernel_path"]

GUARDS = "torchlean.backend.providers.reference.guards"
SPATIAL_GUARDS = "torchlean.backend.providers.reference.spatial_guards"
LAYOUT_GUARD = f"{GUARDS}.check_canonical_layout"
"""The guard that refuses a non-canonical operand on every aten path: each forward and VJP runs
the op's reference guard, which checks every operand's layout (``check_cotangent`` included)
before :func:`~torchlean.backend.providers.aten.guards.check_aten_layout` converts it."""
KERNELS_PATH = "torchlean/backend/providers/aten/kernels.py"
POINTWISE_PATH = "torchlean/backend/providers/aten/pointwise.py"
SPATIAL_PATH = "torchlean/backend/providers/aten/spatial.py"
DIFFERENTIAL_SUITE = "tests/runtime/test_aten_differential.py"
GRADIENT_SUITE = "tests/runtime/test_aten_gradients.py"

_B = BackendOp
_SPATIAL = frozenset({_B.LAYER_NORM, _B.BATCH_NORM, _B.CONV, _B.CONV_TRANSPOSE, _B.MAX_POOL, _B.AVG_POOL})
_POINTWISE = frozenset(
    {
        _B.RELU,
        _B.GELU,
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
    }
)

_NO_REDUCTION = (_POINTWISE - {_B.ADD, _B.SUB, _B.MUL, _B.MAX, _B.MIN}) | {
    _B.RESHAPE,
    _B.PERMUTE,
    _B.CONCAT,
    _B.SLICE,
}
"""Ops whose aten forward and VJP reduce nothing (elementwise on one tensor, or views; concat's
VJP copies each input's slice of the cotangent, slice's writes each cotangent entry to a distinct
position): their reduction policy is ``n/a``, as the
reference capsules'. The binary pointwise ops and ``broadcast`` sum cotangents over broadcast axes
with ``torch.sum`` in the VJP; ``gather``'s VJP adds repeated indices' cotangents (``scatter_add_``)."""

ATEN_OPS: tuple[BackendOp, ...] = (
    _B.MATMUL,
    _B.LINEAR,
    _B.MSE_LOSS,
    _B.RELU,
    _B.GELU,
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
    _B.LOG_SOFTMAX,
    _B.SOFTMAX,
    _B.REDUCE_SUM,
    _B.REDUCE_MEAN,
    _B.RESHAPE,
    _B.PERMUTE,
    _B.BROADCAST,
    _B.CONCAT,
    _B.SLICE,
    _B.GATHER,
    _B.LAYER_NORM,
    _B.BATCH_NORM,
    _B.CONV,
    _B.CONV_TRANSPOSE,
    _B.MAX_POOL,
    _B.AVG_POOL,
    _B.SCALED_DOT_PRODUCT_ATTENTION,
)
"""The ops the ``aten`` provider implements, in reference catalog order."""

_BINARY = "with numpy/PyTorch broadcasting agrees with the reference elementwise result."
_OVERFLOW = (
    "where the sum or the sum of squared deviations overflows although every value is finite "
    "(float32 [0, 2e19, 2e19, 0] or [3e38, 3e38]) torch gives zeros or NaN, where the reference "
    "rescales by a power of two."
)

_VALUE: dict[BackendOp, str] = {
    _B.MATMUL: "torch.matmul in the operands' dtype agrees with the reference matrix product.",
    _B.LINEAR: "torch.nn.functional.linear agrees with the reference matmul plus bias contract.",
    _B.MSE_LOSS: "torch.nn.functional.mse_loss (mean) agrees with the reference mean squared residual.",
    _B.RELU: "torch.relu agrees with the reference pointwise max(x, 0); NaN stays NaN.",
    _B.GELU: "Exact GELU x * erfc(-x/sqrt 2)/2 by torch.special.erfc agrees with the reference (not tanh).",
    _B.ADD: f"torch.add {_BINARY}",
    _B.SUB: f"torch.sub {_BINARY}",
    _B.MUL: f"torch.mul {_BINARY}",
    _B.SCALE: "torch.mul by the factor rounded to the input dtype agrees with the reference scaling.",
    _B.ABS: "torch.abs agrees with the reference absolute value.",
    _B.SQRT: "torch.sqrt agrees with the reference square root.",
    _B.CLAMP: "torch.clamp with bounds rounded to the input dtype agrees with the reference clamp.",
    _B.MAX: f"torch.maximum {_BINARY}",
    _B.MIN: f"torch.minimum {_BINARY}",
    _B.SIGMOID: "torch.sigmoid agrees with the reference logistic function.",
    _B.TANH: "torch.tanh agrees with the reference hyperbolic tangent.",
    _B.SOFTPLUS: "max(x, 0) + log1p(exp(-|x|)) by torch kernels agrees with the reference softplus.",
    _B.EXP: "torch.exp agrees with the reference exponential.",
    _B.LOG: "torch.log agrees with the reference natural logarithm.",
    _B.SIN: "torch.sin agrees with the reference sine.",
    _B.COS: "torch.cos agrees with the reference cosine.",
    _B.INV: "torch.reciprocal agrees with the reference 1 / x.",
    _B.SAFE_LOG: "log(softplus(x) + eps) by torch kernels agrees with the reference safe_log.",
    _B.LOG_SOFTMAX: "torch.log_softmax agrees with the reference stable row/axis normalization.",
    _B.SOFTMAX: "torch.softmax agrees with the reference row/axis normalization.",
    _B.REDUCE_SUM: "torch.sum agrees with the reference explicit reduction contract.",
    _B.REDUCE_MEAN: "torch.mean agrees with the reference explicit reduction contract.",
    _B.RESHAPE: "torch.reshape, copied to a fresh tensor, equals the reference reshape.",
    _B.PERMUTE: "torch.permute made contiguous equals the reference axis permutation.",
    _B.BROADCAST: "torch.broadcast_to made contiguous equals the reference materialised broadcast.",
    _B.CONCAT: "torch.cat equals the reference concatenation bit for bit (a copy, no arithmetic).",
    _B.SLICE: "torch basic slicing, copied to a fresh tensor, equals the reference slice bit for bit.",
    _B.GATHER: "torch.gather equals the reference gather bit for bit (a selection, no arithmetic).",
    _B.LAYER_NORM: (
        "torch.nn.functional.layer_norm agrees with the reference per-row normalization where the "
        f"row's statistics are finite in the dtype; {_OVERFLOW}"
    ),
    _B.BATCH_NORM: (
        "torch.batch_norm, the ATen op of torch.nn.functional.batch_norm (running statistics never "
        "updated), agrees with the reference channel-first normalization up to torch's rounding of "
        "the batch mean, which is divided by sqrt(var + eps): on a (near-)constant channel of large "
        "values it shows (float32 100 x 12345.678: 0.73 on one torch thread, -0.83 on two, where the "
        "reference gives 0: the value depends on the thread count), and where the "
        f"statistics are finite in the dtype; {_OVERFLOW}"
    ),
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

_VJP_KERNELS: dict[BackendOp, str] = {
    _B.MATMUL: "torch.matmul for g @ b^T and a^T @ g, torch.sum over broadcast batch axes",
    _B.LINEAR: "torch.matmul and torch.sum over the leading rows",
    _B.MSE_LOSS: "torch elementwise kernels",
    _B.RELU: "aten threshold_backward, the reference's selection rule",
    _B.LOG_SOFTMAX: "torch._log_softmax_backward_data",
    _B.SOFTMAX: "torch._softmax_backward_data",
    _B.REDUCE_SUM: "a torch broadcast of the cotangent",
    _B.REDUCE_MEAN: "a torch division and broadcast of the cotangent",
    _B.RESHAPE: "a torch reshape of the cotangent",
    _B.PERMUTE: "the inverse torch permutation of the cotangent",
    _B.BROADCAST: "torch.sum over the broadcast axes",
    _B.CONCAT: "each input's slice of the cotangent by Tensor.narrow, as torch's cat backward, copied",
    _B.SLICE: "the cotangent copied into torch zeros at the sliced positions",
    _B.GATHER: "Tensor.scatter_add_ of the cotangent into torch zeros, as torch's gather_backward",
    _B.LAYER_NORM: "aten native_layer_norm_backward",
    _B.BATCH_NORM: "aten native_batch_norm_backward",
    _B.CONV: "aten convolution_backward",
    _B.CONV_TRANSPOSE: "aten convolution_backward (transposed)",
    _B.MAX_POOL: "aten max_pool2d/3d_with_indices_backward",
    _B.AVG_POOL: "aten avg_pool2d/3d_backward",
    _B.SCALED_DOT_PRODUCT_ATTENTION: (
        "torch.matmul and masked torch selections; without a mask, the composition's softmax step is "
        "ATen's fused softmax backward, _softmax_backward_data, the same formula"
    ),
}


_VJP_CAVEATS: dict[BackendOp, str] = {
    _B.LAYER_NORM: (
        " It recomputes torch's rounding of the row mean, which shows on a (near-)constant row of large "
        "values (float32 1 x 100 of 12345.678, cotangent 0..99: weight-gradient entries up to 5.16 and an "
        "input gradient 3.7 % off, where the reference gives 0 and the exact input gradient)."
    ),
}
"""What an ATen backward kernel computes differently from the reference rule, told in its VJP
summary as the value summaries tell theirs (review108 F2; the README lists the same cases)."""


_ATEN_BACKWARD = frozenset({
    _B.RELU, _B.LOG_SOFTMAX, _B.SOFTMAX, _B.LAYER_NORM, _B.BATCH_NORM,
    _B.CONV, _B.CONV_TRANSPOSE, _B.MAX_POOL, _B.AVG_POOL,
})
"""The ops whose aten VJP is ATen's backward kernel, not the reference rule written in torch ops:
their capsules are ``backend-vjp``."""


def kernel_path(op: BackendOp) -> str:
    """The repository path of the module holding ``op``'s aten forward and VJP."""
    if op in _POINTWISE:
        return POINTWISE_PATH
    return SPATIAL_PATH if op in _SPATIAL else KERNELS_PATH


def _reduction(op: BackendOp) -> ReductionPolicy:
    return ReductionPolicy.NOT_APPLICABLE if op in _NO_REDUCTION else ReductionPolicy.IMPLEMENTATION_DEFINED


def _vjp_summary(op: BackendOp) -> str:
    if op in _NO_REDUCTION:
        inside, order = _VJP_KERNELS.get(op, "torch elementwise kernels"), "no reduction"
    else:
        inside = _VJP_KERNELS.get(op, "torch elementwise kernels, torch.sum over broadcast axes")
        order = "reduction order implementation-defined"
    if op in _ATEN_BACKWARD:
        return (
            f"ATen's own `{op.label}` backward kernel computes the local VJP ({inside}), called from "
            f"the TorchLean tape; {order}.{_VJP_CAVEATS.get(op, '')}"
        )
    return (
        f"TorchLean tape applies the reference `{op.label}` VJP rule, evaluated with torch CPU kernels "
        f"({inside}); {order}."
    )


def _vjp_mode(op: BackendOp) -> VJPMode:
    return VJPMode.BACKEND_VJP if op in _ATEN_BACKWARD else VJPMode.TORCHLEAN_TAPE


def _capsule(op: BackendOp) -> KernelCapsule:
    guard_module = SPATIAL_GUARDS if op in _SPATIAL else GUARDS
    path = kernel_path(op)
    return KernelCapsule(
        name=f"aten.{op.label}",
        op=op,
        provider=Provider.ATEN,
        device=Device.CPU,
        trust_level=TrustLevel.CHECKED,
        supports_forward=True,
        vjp_mode=_vjp_mode(op),
        shape_contract=guarded(
            ContractClaim.shape_safety(op),
            "Shapes are checked by the reference guard before torch is called.",
            f"{guard_module}.check_{op.label}",
        ),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(op, TensorLayout.CANONICAL_TENSOR),
            "Canonical TorchLean CPU arrays are shared with torch without a copy and results come back "
            "without a copy.",
            LAYOUT_GUARD,
        ),
        value_contract=tested(
            ContractClaim.value_refinement(op),
            _VALUE[op],
            DIFFERENTIAL_SUITE,
            (NativeSymbolRef(path, f"def {op.label}("),),
        ),
        vjp_contract=tested(
            ContractClaim.vjp_refinement(op, _vjp_mode(op)),
            _vjp_summary(op),
            GRADIENT_SUITE,
            (NativeSymbolRef(path, f"def {op.label}_vjp("),),
        ),
        numerical_policy=NumericalPolicy(_reduction(op)),
    )


CAPSULES: tuple[KernelCapsule, ...] = tuple(_capsule(op) for op in ATEN_OPS)

MODULE = CapsuleModule("aten", CAPSULES)
