"""The worked examples of the seed chapter and anchor-backend.md §6.1–§6.8 (Python renderings).

Expected texts are written out by hand from the original's formats; evidence names are this
repository's real ones (DESIGN.md §1.3).
"""

from __future__ import annotations

import dataclasses

import pytest
from backend_builders import make_capsule

from torchlean.backend import profiles, report
from torchlean.backend.acceptance import AcceptanceError, EvidenceRejected, accept
from torchlean.backend.capsule import contracts_aligned
from torchlean.backend.contracts import ContractClaim, ContractEvidence, tested
from torchlean.backend.errors import PlanningError, UnknownLabelError
from torchlean.backend.fields import BackendTypeError
from torchlean.backend.planner import plan_op
from torchlean.backend.policy import AssurancePolicy
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.registry import (
    CapsuleModule,
    RegistryError,
    libtorch_module,
    maintained_modules,
    module_validation_error,
    validate_modules,
)
from torchlean.backend.vocabulary import BackendOp, ContractObligation, Device, Provider, TrustLevel

B = BackendOp
CHECKED_CPU = profiles.get("checked_cpu")
CHECKED_CUDA = profiles.get("checked_cuda")
LIBTORCH_CUDA = profiles.get("libtorch_forward_cuda")
STRICT = profiles.get("libtorch_forward_strict")

REF_ATTENTION = next(c for c in reference.CAPSULES if c.name == "reference.attention")
REF_RELU = next(c for c in reference.CAPSULES if c.name == "reference.relu")


# 6.1 ---------------------------------------------------------------------------------------------


def test_maintained_profile_per_device() -> None:
    lines = []
    for device in (Device.CPU, Device.CUDA, Device.ROCM, Device.METAL, Device.TPU):
        profile = profiles.maintained_for_device(device)
        lines.append(f"{device.label}: {profile.name if profile else 'no maintained profile'}")
    assert lines == [
        "cpu: checked_cpu",
        "cuda: checked_cuda",
        "rocm: no maintained profile",
        "metal: no maintained profile",
        "tpu: no maintained profile",
    ]


# 6.2 ---------------------------------------------------------------------------------------------


def test_duplicate_module_is_refused() -> None:
    assert module_validation_error([libtorch_module(), libtorch_module()]) == (
        "duplicate backend capsule module `libtorch`"
    )
    with pytest.raises(RegistryError) as caught:
        validate_modules([libtorch_module(), libtorch_module()])
    assert str(caught.value) == "duplicate backend capsule module `libtorch`"


def test_maintained_modules_are_valid() -> None:
    assert module_validation_error(maintained_modules()) is None
    validate_modules(maintained_modules())
    validate_modules((*maintained_modules(), libtorch_module()))


def test_first_duplicate_module_name_scans_in_order() -> None:
    a, b = CapsuleModule("a", ()), CapsuleModule("b", ())
    assert module_validation_error([a, b, b, a]) == "duplicate backend capsule module `a`"


def test_duplicate_capsule_identity_is_refused_but_same_name_elsewhere_is_not() -> None:
    relu = make_capsule("x.relu", B.RELU)
    dup = [CapsuleModule("one", (relu,)), CapsuleModule("two", (relu,))]
    assert module_validation_error(dup) == "duplicate backend capsule identity `x.relu`"
    on_cuda = dataclasses.replace(relu, device=Device.CUDA)
    assert module_validation_error([CapsuleModule("one", (relu,)), CapsuleModule("two", (on_cuda,))]) is None


def test_planning_rejects_invalid_modules() -> None:
    with pytest.raises(RegistryError, match="duplicate backend capsule module `libtorch`"):
        CHECKED_CPU.with_capsule_modules([libtorch_module(), libtorch_module()]).plan_ops([B.RELU])


# 6.3 ---------------------------------------------------------------------------------------------


def _misfiled() -> object:
    shape = tested(
        ContractClaim.value_refinement(B.SCALED_DOT_PRODUCT_ATTENTION),
        "value test filed as shape evidence",
        "demo suite",
    )
    return dataclasses.replace(REF_ATTENTION, name="demo.misfiled", shape_contract=shape)


def test_misfiled_contract_is_not_aligned_and_not_planned() -> None:
    misfiled = _misfiled()
    assert isinstance(misfiled, type(REF_ATTENTION))
    assert (contracts_aligned(REF_ATTENTION), contracts_aligned(misfiled)) == (True, False)
    with pytest.raises(PlanningError) as caught:
        plan_op(CHECKED_CPU.policy, [misfiled], B.SCALED_DOT_PRODUCT_ATTENTION)
    assert (
        str(caught.value) == "no admissible kernel capsule for op scaled_dot_product_attention on device cpu"
    )


# 6.4 ---------------------------------------------------------------------------------------------


def test_cpu_plan_rows() -> None:
    plan = CHECKED_CPU.plan_ops([B.MATMUL, B.RELU])
    assert report.rows_lines(plan.audit()) == [
        "matmul -> reference.matmul",
        "  provider reference, trust checked",
        "  reduction fixed-left",
        "  value: covered by test suite tests/runtime/test_reference_values.py",
        "relu -> reference.relu",
        "  provider reference, trust checked",
        "  reduction n/a",
        "  value: covered by test suite tests/runtime/test_reference_values.py",
    ]


REF_GUARDS = "torchlean.backend.providers.reference.guards"
SDPA = "torchlean.backend.providers.libtorch.sdpa"

GOLDEN_CHECKED_CPU = "\n".join(
    [
        "profile=checked_cpu device=cpu assurance=checked vjp=torchlean-tape",
        "trusted external boundary: none",
        "  matmul: reference.matmul provider=reference trust=checked vjp=torchlean-tape reduction=fixed-left",
        f"    shape: shape safety for matmul; guarded at runtime by {REF_GUARDS}.check_matmul",
        "    layout: canonical-tensor layout compatibility for matmul; guarded at runtime by "
        f"{REF_GUARDS}.check_canonical_layout",
        "    value: matmul forward refines its TorchLean semantics; covered by test suite "
        "tests/runtime/test_reference_values.py",
        "    vjp: matmul torchlean-tape VJP refines its TorchLean semantics; covered by test suite "
        "tests/runtime/test_reference_gradients.py",
        "  relu: reference.relu provider=reference trust=checked vjp=torchlean-tape reduction=n/a",
        f"    shape: shape safety for relu; guarded at runtime by {REF_GUARDS}.check_relu",
        "    layout: canonical-tensor layout compatibility for relu; guarded at runtime by "
        f"{REF_GUARDS}.check_canonical_layout",
        "    value: relu forward refines its TorchLean semantics; covered by test suite "
        "tests/runtime/test_reference_values.py",
        "    vjp: relu torchlean-tape VJP refines its TorchLean semantics; covered by test suite "
        "tests/runtime/test_reference_gradients.py",
    ]
)

GOLDEN_LIBTORCH_CUDA = "\n".join(
    [
        "profile=libtorch_forward_cuda device=cuda assurance=external vjp=torchlean-tape",
        "trusted external boundary: scaled_dot_product_attention",
        "  scaled_dot_product_attention: libtorch.sdpa_forward provider=libtorch trust=trusted-external "
        "vjp=torchlean-tape reduction=implementation-defined",
        "    shape: shape safety for scaled_dot_product_attention; guarded at runtime by "
        f"{SDPA}.check_sdpa_inputs",
        "    layout: libtorch-cuda-view layout compatibility for scaled_dot_product_attention; "
        f"guarded at runtime by {SDPA}.check_libtorch_view",
        "    value: scaled_dot_product_attention forward refines its TorchLean semantics; "
        "trusted boundary: LibTorch/CUDA SDPA implementation",
        "    vjp: scaled_dot_product_attention torchlean-tape VJP refines its TorchLean semantics; "
        f"guarded at runtime by {SDPA}.require_torchlean_tape",
    ]
)


def test_golden_plan_report_checked_cpu() -> None:
    assert CHECKED_CPU.plan_report([B.MATMUL, B.RELU]) == GOLDEN_CHECKED_CPU


def test_golden_plan_report_libtorch_forward_cuda() -> None:
    text = LIBTORCH_CUDA.plan_report([B.SCALED_DOT_PRODUCT_ATTENTION])
    assert text == GOLDEN_LIBTORCH_CUDA
    assert "vjp=torchlean-tape" in text
    assert "scaled_dot_product_attention: libtorch.sdpa_forward" in text


def test_forward_only_descriptor_line() -> None:
    row = CHECKED_CPU.plan_ops([B.RAND_UNIFORM]).audit().kernels[0]
    assert (
        report.detailed_report_lines(row)[4]
        == "    vjp: rand_uniform has no VJP in this capsule; not applicable"
    )


# 6.5 ---------------------------------------------------------------------------------------------


def test_gaps_on_cpu_report_every_missing_op() -> None:
    with pytest.raises(PlanningError) as caught:
        CHECKED_CPU.plan_ops([B.SELECTIVE_SCAN, B.MATMUL, B.FFT_FNO, B.SELECTIVE_SCAN])
    assert caught.value.messages == [
        "no admissible kernel capsule for op selective_scan on device cpu",
        "no admissible kernel capsule for op fft_fno on device cpu",
    ]


# 6.6 ---------------------------------------------------------------------------------------------


def test_three_attention_profiles() -> None:
    """anchor-backend.md §6.6 (``bsPrefer``), the Lean ``#[name]`` printed ``[name]`` (DESIGN.md
    §1.2; review121 F4: the lines were Python list reprs, ``['name']``)."""
    lines = [
        report.selection_line(p.name, p.plan_ops([B.SCALED_DOT_PRODUCT_ATTENTION]).capsule_names)
        for p in (CHECKED_CUDA, LIBTORCH_CUDA, STRICT)
    ]
    assert lines == [
        "checked_cuda: [torchlean.composed_attention]",
        "libtorch_forward_cuda: [libtorch.sdpa_forward]",
        "libtorch_forward_strict: [native_cuda.direct_attention]",
    ]
    assert report.selection_line("p", (), ["no capsule"]) == "p: no capsule"
    assert report.selection_line("p", ()) == "p: []"
    for bad in (None, "abc", [1]):  # review126 F6: "abc" printed as [a, b, c]
        with pytest.raises(BackendTypeError, match=r"^report.selection_line: capsule_names"):
            report.selection_line("p", bad)  # type: ignore[arg-type]


def test_cpu_libtorch_profiles_mirror_the_cuda_ones() -> None:
    external = profiles.get("libtorch_forward_cpu")
    strict = profiles.get("libtorch_forward_strict_cpu")
    sdpa = [B.SCALED_DOT_PRODUCT_ATTENTION]
    assert external.plan_ops(sdpa).capsule_names == ("libtorch.sdpa_forward",)
    assert external.plan_ops(sdpa).kernels[0].capsule.device is Device.CPU
    assert strict.plan_ops(sdpa).capsule_names == ("reference.attention",)
    assert external.plan_ops([B.ADD, *sdpa, B.RELU]).capsule_names == (
        "reference.add",
        "libtorch.sdpa_forward",
        "reference.relu",
    )
    assert report.check_lines(external.plan_ops(sdpa).check_contracts(AssurancePolicy.CHECKED)) == [
        "checked: rejected libtorch.sdpa_forward value",
        "  trusted boundary: LibTorch/CPU SDPA implementation",
    ]


# 6.7 ---------------------------------------------------------------------------------------------


def test_evidence_check_under_two_policies() -> None:
    plan = LIBTORCH_CUDA.plan_ops([B.SCALED_DOT_PRODUCT_ATTENTION])
    lines = [
        line
        for policy in (AssurancePolicy.CHECKED, AssurancePolicy.EXTERNAL)
        for line in report.check_lines(plan.check_contracts(policy))
    ]
    assert lines == [
        "checked: rejected libtorch.sdpa_forward value",
        "  trusted boundary: LibTorch/CUDA SDPA implementation",
        "external: accepted",
    ]
    check = plan.check_contracts(AssurancePolicy.CHECKED)
    assert len(plan.audit().obligation_reports()) == 4
    assert [r.obligation for r in check.rejected] == [ContractObligation.VALUE]


# 6.8 ---------------------------------------------------------------------------------------------

PROFILE_OPS = [
    B.MATMUL,
    B.RELU,
    B.SOFTMAX,
    B.HARD_MASKED_SOFTMAX,
    B.LAYER_NORM,
    B.BATCH_NORM,
    B.CONV,
    B.CONV_TRANSPOSE,
    B.MAX_POOL,
    B.SMOOTH_MAX_POOL,
    B.AVG_POOL,
    B.MSE_LOSS,
    B.SCALED_DOT_PRODUCT_ATTENTION,
]

EXACT_OPS = [
    B.MATMUL, B.LINEAR, B.MSE_LOSS, B.ADD, B.SUB, B.MUL, B.SCALE, B.ABS, B.SQRT, B.CLAMP, B.MAX, B.MIN,
    B.RELU, B.GELU, B.SIGMOID, B.TANH, B.SOFTMAX, B.HARD_MASKED_SOFTMAX, B.SOFTPLUS, B.EXP, B.LOG, B.INV,
    B.SAFE_LOG, B.LOG_SOFTMAX, B.SIN, B.COS, B.REDUCE_SUM, B.REDUCE_MEAN, B.RAND_UNIFORM, B.BERNOULLI_MASK,
    B.RESHAPE, B.PERMUTE, B.BROADCAST, B.CONCAT, B.SLICE, B.GATHER, B.SCATTER_ADD, B.LAYER_NORM,
    B.BATCH_NORM, B.CONV, B.CONV_TRANSPOSE, B.MAX_POOL, B.SMOOTH_MAX_POOL, B.AVG_POOL,
]  # fmt: skip


def test_checked_cpu_profile_ops() -> None:
    plan = CHECKED_CPU.plan_ops(PROFILE_OPS)
    expected = [f"reference.{op.label}" for op in PROFILE_OPS[:-1]] + ["reference.attention"]
    assert list(plan.capsule_names) == expected
    assert not plan.has_trusted_external


def test_checked_cuda_profile_ops() -> None:
    plan = CHECKED_CUDA.plan_ops(PROFILE_OPS)
    expected = [f"native_cuda.{op.label}" for op in PROFILE_OPS[:-1]] + ["torchlean.composed_attention"]
    assert list(plan.capsule_names) == expected


def test_exact_ops() -> None:
    assert len(EXACT_OPS) == 44
    assert CHECKED_CPU.plan_ops(EXACT_OPS).capsule_names == tuple(f"reference.{op.label}" for op in EXACT_OPS)
    assert CHECKED_CUDA.plan_ops(EXACT_OPS).capsule_names == tuple(
        f"native_cuda.{op.label}" for op in EXACT_OPS
    )


def test_plan_reports_contain_selected_rows() -> None:
    cpu = CHECKED_CPU.plan_report(
        [B.ADD, B.RESHAPE, B.BATCH_NORM, B.SMOOTH_MAX_POOL, B.SCALED_DOT_PRODUCT_ATTENTION]
    )
    for fragment in (
        "add: reference.add",
        "reshape: reference.reshape",
        "batch_norm: reference.batch_norm",
        "smooth_max_pool: reference.smooth_max_pool",
        "scaled_dot_product_attention: reference.attention",
    ):
        assert fragment in cpu
    cuda = CHECKED_CUDA.plan_report([B.ADD, B.MAX_POOL, B.SCALED_DOT_PRODUCT_ATTENTION])
    for fragment in (
        "add: native_cuda.add",
        "max_pool: native_cuda.max_pool",
        "scaled_dot_product_attention: torchlean.composed_attention",
        "trusted external boundary: none",
    ):
        assert fragment in cuda


def test_libtorch_forward_cuda_facts() -> None:
    plan = LIBTORCH_CUDA.plan_ops([B.SCALED_DOT_PRODUCT_ATTENTION])
    assert plan.capsule_names == ("libtorch.sdpa_forward",)
    assert plan.has_trusted_external
    assert plan.trusted_external_ops == ("scaled_dot_product_attention",)
    assert not plan.check_contracts(AssurancePolicy.CHECKED).accepted
    assert plan.check_contracts(AssurancePolicy.EXTERNAL).accepted
    assert LIBTORCH_CUDA.plan_ops([B.ADD, B.SCALED_DOT_PRODUCT_ATTENTION, B.RELU]).capsule_names == (
        "native_cuda.add",
        "libtorch.sdpa_forward",
        "native_cuda.relu",
    )
    assert LIBTORCH_CUDA.plan_ops([B.SOFTMAX]).capsule_names == ("native_cuda.softmax",)


def test_replacement_module_replaces_and_prepended_module_wins() -> None:
    replacement = CapsuleModule("reference", (make_capsule("replacement.relu", B.RELU),))
    replaced = CHECKED_CPU.with_capsule_modules([replacement])
    assert [m.name for m in replaced.capsule_modules].count("reference") == 1
    assert [m.name for m in replaced.capsule_modules] == ["reference", "attention", "native-cuda"]
    assert replaced.plan_ops([B.RELU]).capsule_names == ("replacement.relu",)
    prepended = CHECKED_CPU.with_capsule_modules(
        [CapsuleModule("profile-test-replacement", replacement.capsules)]
    )
    assert prepended.capsule_modules[0].name == "profile-test-replacement"
    assert prepended.plan_ops([B.RELU, B.MATMUL]).capsule_names == ("replacement.relu", "reference.matmul")
    assert (prepended.name, prepended.policy, prepended.availability) == (
        CHECKED_CPU.name,
        CHECKED_CPU.policy,
        CHECKED_CPU.availability,
    )


def test_no_grad_profile_requests_vjp_none_and_accepts_forward_only() -> None:
    from torchlean.backend.vocabulary import VJPMode

    inference = CHECKED_CPU.with_vjp_mode(VJPMode.NONE)
    assert inference.policy.vjp_mode is VJPMode.NONE
    forward_only = make_capsule("fwd.relu", B.RELU, vjp_mode=VJPMode.NONE)
    module = CapsuleModule("fwd", (forward_only,))
    assert inference.with_capsule_modules([module]).plan_ops([B.RELU]).capsule_names == ("fwd.relu",)
    assert CHECKED_CPU.with_capsule_modules([module]).plan_ops([B.RELU]).capsule_names == ("reference.relu",)


def test_availability_facts() -> None:
    from torchlean.backend.availability import Availability
    from torchlean.backend.planner import plan_ops_available
    from torchlean.backend.policy import KernelPolicy, ProviderPreference

    external_relu = make_capsule("external.relu", B.RELU, provider=Provider.EXTERNAL, device=Device.EXTERNAL)
    assert not Availability.cpu().admits_capsule(external_relu)
    wide = Availability(
        (Device.CPU, Device.EXTERNAL), (Provider.REFERENCE, Provider.TORCHLEAN, Provider.EXTERNAL)
    )
    assert wide.admits_capsule(external_relu)
    policy = KernelPolicy(device=Device.EXTERNAL, provider=ProviderPreference.only(Provider.EXTERNAL))
    plan = plan_ops_available(policy, wide, [*reference.CAPSULES, external_relu], [B.RELU])
    assert plan.capsule_names == ("external.relu",)


def test_forward_disabled_misaligned_and_forward_only_capsules_are_not_planned_in_training() -> None:
    from torchlean.backend.vocabulary import VJPMode

    for bad in (
        make_capsule("bad.relu", B.RELU, forward=False),
        make_capsule("bad.relu", B.RELU, vjp_mode=VJPMode.NONE),
        dataclasses.replace(REF_RELU, name="bad.relu", shape_contract=REF_RELU.value_contract),
    ):
        with pytest.raises(PlanningError):
            plan_op(CHECKED_CPU.policy, [bad], B.RELU)
    inference = dataclasses.replace(CHECKED_CPU.policy, vjp_mode=VJPMode.NONE)
    assert plan_op(inference, [REF_RELU], B.RELU).capsule is REF_RELU


def _trusted_value_relu() -> object:
    evidence = ContractEvidence.trusted_boundary("profile-test external implementation")
    return dataclasses.replace(
        REF_RELU,
        name="reference.relu_trusted_value",
        value_contract=dataclasses.replace(REF_RELU.value_contract, evidence=evidence),
    )


def test_checked_label_with_trusted_value_evidence() -> None:
    capsule = _trusted_value_relu()
    assert isinstance(capsule, type(REF_RELU))
    assert capsule.trust_level is TrustLevel.CHECKED
    planned = plan_op(CHECKED_CPU.policy, [capsule], B.RELU)
    assert planned.capsule is capsule
    plan = CHECKED_CPU.with_capsule_modules([CapsuleModule("t", (capsule,))]).plan_ops([B.RELU])
    assert not plan.check_contracts(AssurancePolicy.CHECKED).accepted
    assert plan.check_contracts(AssurancePolicy.EXTERNAL).accepted
    with pytest.raises(AcceptanceError) as caught:
        accept(planned, CHECKED_CPU.policy)
    (failure,) = caught.value.failures
    assert isinstance(failure, EvidenceRejected)
    assert failure.report.obligation is ContractObligation.VALUE
    assert failure.message == (
        "reference.relu_trusted_value has rejected value evidence for relu: "
        "trusted boundary: profile-test external implementation"
    )
    external = dataclasses.replace(CHECKED_CPU.policy, assurance=AssurancePolicy.EXTERNAL)
    assert accept(planned, external).capsule is capsule


def test_profile_summaries_and_lookup() -> None:
    assert CHECKED_CPU.summary() == "profile=checked_cpu device=cpu assurance=checked vjp=torchlean-tape"
    assert CHECKED_CUDA.summary() == "profile=checked_cuda device=cuda assurance=checked vjp=torchlean-tape"
    assert profiles.names() == (
        "checked_cpu",
        "checked_cuda",
        "libtorch_forward_cuda",
        "libtorch_forward_strict",
        "libtorch_forward_cpu",
        "libtorch_forward_strict_cpu",
        "fast_cpu",
    )
    with pytest.raises(UnknownLabelError) as caught:
        profiles.get("checked_tpu")
    assert str(caught.value) == (
        "unknown profile checked_tpu (known: checked_cpu | checked_cuda | libtorch_forward_cuda | "
        "libtorch_forward_strict | libtorch_forward_cpu | libtorch_forward_strict_cpu | fast_cpu)"
    )  # the original's message: tpu is no typo of cpu (review200 F1)


def test_has_device_capsule_reads_the_unfiltered_registry() -> None:
    assert CHECKED_CPU.has_device_capsule()
    metal = dataclasses.replace(
        CHECKED_CPU, policy=dataclasses.replace(CHECKED_CPU.policy, device=Device.METAL)
    )
    assert not metal.has_device_capsule()
    metal_relu = make_capsule("metal.relu", B.RELU, device=Device.METAL)
    assert metal.with_capsule_modules([CapsuleModule("metal", (metal_relu,))]).has_device_capsule()
    cuda_request_cpu_build = dataclasses.replace(
        CHECKED_CPU, policy=dataclasses.replace(CHECKED_CPU.policy, device=Device.CUDA)
    )
    assert cuda_request_cpu_build.has_device_capsule()
    with pytest.raises(PlanningError, match="no admissible kernel capsule for op reshape on device cuda"):
        cuda_request_cpu_build.plan_ops([B.RESHAPE])
