"""The Generation-B catalog as data: counts, order, verbatim summaries, policies (anchor-backend.md §4)."""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from pathlib import Path

from torchlean.backend.contracts import EvidenceKind
from torchlean.backend.providers import attention
from torchlean.backend.providers.libtorch import capsules as libtorch
from torchlean.backend.providers.native_cuda import capsules as native_cuda
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.registry import flatten, libtorch_module, maintained_modules
from torchlean.backend.vocabulary import (
    BackendOp,
    Device,
    Provider,
    ReductionPolicy,
    TensorLayout,
    TrustLevel,
    VJPMode,
)

REFERENCE_ORDER = [
    "matmul",
    "linear",
    "mse_loss",
    "relu",
    "gelu",
    "add",
    "sub",
    "mul",
    "scale",
    "abs",
    "sqrt",
    "clamp",
    "max",
    "min",
    "sigmoid",
    "tanh",
    "softplus",
    "exp",
    "log",
    "sin",
    "cos",
    "inv",
    "safe_log",
    "log_softmax",
    "softmax",
    "hard_masked_softmax",
    "reduce_sum",
    "reduce_mean",
    "reshape",
    "permute",
    "broadcast",
    "concat",
    "slice",
    "gather",
    "scatter_add",
    "rand_uniform",
    "bernoulli_mask",
    "layer_norm",
    "batch_norm",
    "conv",
    "conv_transpose",
    "max_pool",
    "smooth_max_pool",
    "avg_pool",
    "attention",
]

NATIVE_ORDER = [
    "matmul",
    "linear",
    "mse_loss",
    "relu",
    "gelu",
    "add",
    "sub",
    "mul",
    "scale",
    "abs",
    "sqrt",
    "clamp",
    "max",
    "min",
    "sigmoid",
    "tanh",
    "softplus",
    "exp",
    "sin",
    "cos",
    "log",
    "inv",
    "safe_log",
    "log_softmax",
    "softmax",
    "hard_masked_softmax",
    "reduce_sum",
    "reduce_mean",
    "reshape",
    "permute",
    "broadcast",
    "concat",
    "slice",
    "gather",
    "scatter_add",
    "rand_uniform",
    "bernoulli_mask",
    "layer_norm",
    "batch_norm",
    "conv",
    "conv_transpose",
    "max_pool",
    "smooth_max_pool",
    "avg_pool",
    "fft_fno",
    "selective_scan",
]

# the binary pointwise ops, broadcast and gather: their VJPs sum (over broadcast axes, or the
# cotangents of repeated indices); the original labels them n/a
VJP_SUMMING = {"add", "sub", "mul", "max", "min", "broadcast", "gather"}

FIXED_LEFT_REFERENCE = VJP_SUMMING | set(
    [
        "matmul",
        "linear",
        "mse_loss",
        "log_softmax",
        "softmax",
        "hard_masked_softmax",
        "reduce_sum",
        "reduce_mean",
        "scatter_add",
        "layer_norm",
        "batch_norm",
        "conv",
        "conv_transpose",
        "max_pool",
        "smooth_max_pool",
        "avg_pool",
        "attention",
    ]
)


def test_module_order_and_counts() -> None:
    modules = maintained_modules()
    assert [m.name for m in modules] == ["attention", "native-cuda", "reference"]
    assert [len(m.capsules) for m in modules] == [2, 46, 45]
    assert len(flatten(modules)) == 93
    assert libtorch_module().name == "libtorch"
    assert [(c.name, c.device) for c in libtorch_module().capsules] == [
        ("libtorch.sdpa_forward", Device.CUDA),
        ("libtorch.sdpa_forward", Device.CPU),
    ]
    assert [c.name for c in attention.CAPSULES] == [
        "native_cuda.direct_attention",
        "torchlean.composed_attention",
    ]


def test_reference_catalog() -> None:
    assert [c.name for c in reference.CAPSULES] == [f"reference.{name}" for name in REFERENCE_ORDER]
    for capsule in reference.CAPSULES:
        assert (capsule.provider, capsule.device, capsule.trust_level) == (
            Provider.REFERENCE,
            Device.CPU,
            TrustLevel.CHECKED,
        )
        assert capsule.contracts_aligned
        assert capsule.layout_contract.claim.layout is TensorLayout.CANONICAL_TENSOR
        short = capsule.name.removeprefix("reference.")
        expected = (
            ReductionPolicy.FIXED_LEFT if short in FIXED_LEFT_REFERENCE else ReductionPolicy.NOT_APPLICABLE
        )
        assert capsule.numerical_policy.reduction is expected, capsule.name
        forward_only = capsule.op in (BackendOp.RAND_UNIFORM, BackendOp.BERNOULLI_MASK)
        assert capsule.vjp_mode is (VJPMode.NONE if forward_only else VJPMode.TORCHLEAN_TAPE)


def test_native_catalog() -> None:
    assert [c.name for c in native_cuda.CAPSULES] == [f"native_cuda.{name}" for name in NATIVE_ORDER]
    for capsule in native_cuda.CAPSULES:
        assert (capsule.provider, capsule.device, capsule.trust_level) == (
            Provider.NATIVE_CUDA,
            Device.CUDA,
            TrustLevel.CHECKED,
        )
        assert capsule.contracts_aligned
        forward_only = capsule.op in (BackendOp.RAND_UNIFORM, BackendOp.BERNOULLI_MASK)
        assert capsule.vjp_mode is (VJPMode.NONE if forward_only else VJPMode.BACKEND_VJP)
        assert capsule.layout_contract.claim.layout is TensorLayout.FLAT_ROW_MAJOR
        (symbol,) = capsule.value_contract.provenance
        assert (symbol.path, symbol.symbol) == (
            "torchlean/backend/providers/native_cuda/csrc/native_ops.cu",
            f"{capsule.op.label}_forward",
        )
        assert capsule.numerical_policy.reduction is not ReductionPolicy.FIXED_LEFT
        if capsule.op.label in VJP_SUMMING:  # at::sum_to_size / scatter_add (atomics) in the VJP
            assert capsule.numerical_policy.reduction is ReductionPolicy.IMPLEMENTATION_DEFINED, capsule.name


def test_verbatim_template_texts() -> None:
    by_name = {c.name: c for c in (*reference.CAPSULES, *native_cuda.CAPSULES)}
    assert (
        by_name["reference.add"].value_contract.summary
        == "Reference `add` follows the pointwise tensor contract."
    )
    assert (
        by_name["reference.add"].vjp_contract.summary
        == "TorchLean tape supplies the `add` VJP where differentiable."
    )
    assert by_name["reference.reduce_sum"].value_contract.summary == (
        "Reference `reduce_sum` follows the explicit reduction shape contract."
    )
    assert by_name["reference.gather"].vjp_contract.summary == (
        "TorchLean tape supplies the `gather` adjoint where differentiable."
    )
    assert by_name["reference.max_pool"].value_contract.summary == (
        "Reference `max_pool` follows the channel-first runtime contract."
    )
    assert by_name["reference.rand_uniform"].vjp_contract.summary == (
        "Reference `rand_uniform` is a forward-only capsule with no registered VJP."
    )
    assert by_name["reference.rand_uniform"].vjp_contract.evidence.kind is EvidenceKind.NOT_APPLICABLE
    assert by_name["reference.matmul"].shape_contract.summary == (
        "Shapes are checked by the op's guard before the portable kernel runs."
    )
    assert by_name["native_cuda.max_pool"].vjp_contract.summary == (
        "Native CUDA `max_pool` VJP is checked against the reference VJP by the native parity suite."
    )
    # what computes the op: ATen from the extension's C++, except torchlean's own five kernels
    assert by_name["native_cuda.add"].value_contract.summary == (
        "Native CUDA `add` follows the pointwise tensor contract. ATen computes it, called from the "
        "extension's C++."
    )
    summaries = {c.op.label: c.value_contract.summary for c in native_cuda.CAPSULES}
    own = {label for label, text in summaries.items() if not text.endswith(native_cuda.ATEN_NOTE)}
    # the ops whose entry points launch a kernel of csrc/kernels.cuh (attention is no native_cuda.* op)
    csrc = Path(__file__).parents[2] / "torchlean" / "backend" / "providers" / "native_cuda" / "csrc"
    source = (csrc / "native_ops.cu").read_text()
    launched = set(re.findall(r"&tl::([a-z_]+?)(?:_forward|_backward)?_kernel\b", source))
    assert own == {label for label in launched if not label.startswith("attention")}
    assert by_name["native_cuda.sqrt"].vjp_contract.summary == (
        "Native CUDA `sqrt` VJP is checked against the reference VJP by the native parity suite."
    )
    assert by_name["native_cuda.hard_masked_softmax"].value_contract.summary == (
        "The kernel normalizes over allowed entries and writes zeros at blocked coordinates. "
        "A fully blocked row returns zeros."
    )


def test_attention_and_libtorch_capsules() -> None:
    direct, composed = attention.CAPSULES
    assert (direct.provider, direct.vjp_mode) == (Provider.NATIVE_CUDA, VJPMode.BACKEND_VJP)
    assert (composed.provider, composed.vjp_mode) == (Provider.TORCHLEAN, VJPMode.TORCHLEAN_TAPE)
    assert direct.value_contract.provenance[0].symbol == "direct_attention_forward"
    for capsule in libtorch.CAPSULES:
        assert capsule.trust_level is TrustLevel.TRUSTED_EXTERNAL
        assert capsule.vjp_mode is VJPMode.TORCHLEAN_TAPE
        assert capsule.value_contract.evidence.kind is EvidenceKind.TRUSTED_BOUNDARY
        assert capsule.contracts_aligned
    assert libtorch.SDPA_FORWARD_CUDA.value_contract.evidence.name == "LibTorch/CUDA SDPA implementation"
    assert libtorch.SDPA_FORWARD_CPU.value_contract.evidence.name == "LibTorch/CPU SDPA implementation"
    assert libtorch.SDPA_FORWARD_CUDA.layout_contract.claim.layout is TensorLayout.LIBTORCH_CUDA_VIEW


def test_no_capsule_claims_fixed_left_outside_reference() -> None:
    others = (*attention.CAPSULES, *native_cuda.CAPSULES, *libtorch.CAPSULES)
    assert all(c.numerical_policy.reduction is not ReductionPolicy.FIXED_LEFT for c in others)


def test_backend_and_capsule_data_import_neither_numpy_nor_torch() -> None:
    # The top-level package (runtime) may import numpy; load backend modules without running it.
    code = (
        "import importlib.util, sys, types\n"
        "spec = importlib.util.find_spec('torchlean')\n"
        "package = types.ModuleType('torchlean')\n"
        "package.__path__ = list(spec.submodule_search_locations)\n"
        "sys.modules['torchlean'] = package\n"
        "import torchlean.backend.profiles, torchlean.backend.report, torchlean.backend.binding\n"
        "from torchlean.backend.vocabulary import BackendOp\n"
        "from torchlean.backend.registry import libtorch_module, maintained_modules\n"
        "maintained_modules(), libtorch_module()\n"
        "torchlean.backend.profiles.get('libtorch_forward_cpu').plan_report([BackendOp.SCALED_DOT_PRODUCT_ATTENTION])\n"
        "print(','.join(sorted(m for m in ('numpy', 'torch') if m in sys.modules)))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.strip() == ""


# By hand, from the aten module docstring: the unary pointwise ops, reshape, permute, concat and
# slice reduce nothing; every other aten op sums in its forward or VJP (the binary pointwise ops max/min
# too: their VJP sums the cotangent over broadcast axes; gather's VJP adds repeated indices).
ATEN_NO_REDUCTION = {
    "relu", "gelu", "scale", "abs", "sqrt", "clamp", "sigmoid", "tanh", "softplus", "exp", "log",
    "sin", "cos", "inv", "safe_log", "reshape", "permute", "concat", "slice",
}  # fmt: skip

# The aten VJPs that are ATen's own backward kernel, each with the kernel its VJP function calls.
ATEN_OWN_BACKWARD = {
    "relu": ("pointwise", "threshold_backward"),
    "log_softmax": ("kernels", "_log_softmax_backward_data"),
    "softmax": ("kernels", "_softmax_backward_data"),
    "layer_norm": ("spatial", "native_layer_norm_backward"),
    "batch_norm": ("spatial", "_batch_norm_backward"),
    "conv": ("spatial", "convolution_backward"),
    "conv_transpose": ("spatial", "convolution_backward"),
    "max_pool": ("spatial", "_pool2d_with_indices_backward"),
    "avg_pool": ("spatial", "avg_pool2d_backward"),
}


def test_aten_reduction_claims_follow_what_each_op_sums() -> None:
    from torchlean.backend.providers.aten import capsules as aten

    assert len(aten.CAPSULES) == 40
    for capsule in aten.CAPSULES:
        sums = capsule.op.label not in ATEN_NO_REDUCTION
        want = ReductionPolicy.IMPLEMENTATION_DEFINED if sums else ReductionPolicy.NOT_APPLICABLE
        assert capsule.numerical_policy.reduction is want, capsule.name
        order = "reduction order implementation-defined" if sums else "no reduction"
        first, _, caveat = capsule.vjp_contract.summary.partition(". ")  # a caveat may follow (layer_norm)
        assert first.removesuffix(".").endswith(f"; {order}"), capsule.name
        assert not caveat or capsule.op.label == "layer_norm", capsule.name


def test_aten_vjp_summaries_name_atens_own_backward_kernel_where_it_runs() -> None:
    import inspect

    from torchlean.backend.providers.aten import capsules as aten
    from torchlean.backend.providers.aten import kernels, pointwise, spatial
    from torchlean.backend.vocabulary import VJPMode

    sources = {"kernels": kernels, "pointwise": pointwise, "spatial": spatial}
    for capsule in aten.CAPSULES:
        label = capsule.op.label
        own = f"ATen's own `{label}` backward kernel computes the local VJP ("
        rule = f"TorchLean tape applies the reference `{label}` VJP rule, evaluated with torch CPU kernels ("
        if label in ATEN_OWN_BACKWARD:  # a backend kernel computes the local VJP (review134 F1)
            assert capsule.vjp_contract.summary.startswith(own), capsule.name
            assert capsule.vjp_mode is VJPMode.BACKEND_VJP, capsule.name
            module, called = ATEN_OWN_BACKWARD[label]
            assert called in inspect.getsource(getattr(sources[module], f"{label}_vjp")), label
        else:
            assert capsule.vjp_contract.summary.startswith(rule), capsule.name
            assert capsule.vjp_mode is VJPMode.TORCHLEAN_TAPE, capsule.name


def test_same_identity_and_is_trusted_external_follow_the_anchor() -> None:
    """anchor-backend.md: ``sameIdentity`` compares only ``(name, op, provider, device)``;
    ``isTrustedExternal(c)`` is ``c.trustLevel == trustedExternal``."""
    relu = next(c for c in reference.CAPSULES if c.op is BackendOp.RELU)
    relabelled = dataclasses.replace(relu, trust_level=TrustLevel.TRUSTED_EXTERNAL, supports_forward=False)
    assert relu.same_identity(relabelled) and relabelled != relu
    assert not relu.same_identity(dataclasses.replace(relu, name="reference.relu_v2"))
    assert not relu.same_identity(dataclasses.replace(relu, device=Device.CUDA))
    assert not relu.same_identity(dataclasses.replace(relu, provider=Provider.ATEN))
    every = (*reference.CAPSULES, *native_cuda.CAPSULES, *attention.CAPSULES, *libtorch.CAPSULES)
    external = [c for c in every if c.is_trusted_external]
    assert external and all(c.trust_level is TrustLevel.TRUSTED_EXTERNAL for c in external)
    assert [c.name for c in external] == [c.name for c in libtorch.CAPSULES]
    assert not relu.is_trusted_external and relabelled.is_trusted_external
