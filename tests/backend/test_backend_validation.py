"""Records refuse ill-typed or dishonest fields where they are built; API calls refuse bad arguments
with torchlean errors (never an ``AttributeError`` from deep inside planning).

Oracles: the messages are written out by hand from the rule "name the field or argument, the value
and the accepted ones" (DESIGN.md §4); label parsing is checked against the enum members; the
dishonest-evidence example is the reviewer's (a trusted boundary whose kind was given as the string
``"trustedBoundary"`` used to pass the checked policy and run in a ``checked_cpu`` session).
"""

from __future__ import annotations

import dataclasses
import re
import subprocess
import sys
from collections.abc import Callable

import pytest
from backend_builders import make_capsule, mlp_graph
from hypothesis import given, settings
from hypothesis import strategies as st

import torchlean as tl
from torchlean.backend import planner, profiles
from torchlean.backend.audit import KernelPlanAudit
from torchlean.backend.capsule import KernelCapsule, admissible, choose_capsule, contracts_aligned
from torchlean.backend.contracts import (
    ClaimKind,
    ContractClaim,
    ContractDescriptor,
    ContractEvidence,
    EvidenceKind,
    NativeSymbolRef,
    NumericalPolicy,
    guarded,
)
from torchlean.backend.errors import PlanningError, SessionError, TorchLeanError, UnknownLabelError
from torchlean.backend.fields import BackendTypeError, BackendValueError, describe
from torchlean.backend.policy import AssurancePolicy, KernelPolicy, PreferenceKind, ProviderPreference
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.registry import (
    CapsuleModule,
    RegistryError,
    all_modules,
    maintained_modules,
    validate_modules,
)
from torchlean.backend.vocabulary import (
    BackendOp,
    Device,
    LabelledEnum,
    Provider,
    ReductionPolicy,
    TensorLayout,
    TrustLevel,
    VJPMode,
)

B = BackendOp
CHECKED_CPU = profiles.get("checked_cpu")
POLICY = CHECKED_CPU.policy
RELU = next(c for c in reference.CAPSULES if c.op is B.RELU)
OPS = " | ".join(BackendOp.labels())
EVIDENCE_KINDS = "runtimeGuard | testSuite | trustedBoundary | notApplicable"
GUARDS = "torchlean.backend.providers.reference.guards"
DEVICES = "cpu | cuda | rocm | metal | wasm | tpu | trainium | custom | external"
NON_EMPTY_NAME = "ContractEvidence.name must be a non-empty string"
DOTTED = "ContractEvidence.name: a runtimeGuard names a dotted Python function (module.function)"
MODULES_EXPECTED = "with_capsule_modules expects an iterable of CapsuleModule"
OPS_EXPECTED = "ops must be a sequence of ops (BackendOp members or op labels)"
SHAPE_CLAIM = ContractClaim.shape_safety(B.RELU)
SUITE = ContractEvidence.test_suite("tests/runtime/test_reference_values.py")


def _value(evidence: ContractEvidence) -> KernelCapsule:
    """``reference.relu`` renamed ``foreign.relu`` with ``evidence`` behind its value claim."""
    descriptor = ContractDescriptor(ContractClaim.value_refinement(B.RELU), "Foreign relu.", evidence)
    return dataclasses.replace(RELU, name="foreign.relu", value_contract=descriptor)


def _foreign_profile(evidence: ContractEvidence) -> profiles.BackendProfile:
    return CHECKED_CPU.with_capsule_modules([CapsuleModule("foreign", (_value(evidence),))])


def test_error_classes_are_torchlean_errors_of_the_builtin_flavour() -> None:
    assert issubclass(BackendTypeError, TorchLeanError) and issubclass(BackendTypeError, TypeError)
    assert issubclass(BackendValueError, TorchLeanError) and issubclass(BackendValueError, ValueError)


# ------------------------------------------------------------------- 1. the reviewer's dishonest kind


def test_an_evidence_kind_given_as_its_label_is_that_kind() -> None:
    evidence = ContractEvidence("trustedBoundary", "some foreign library")  # type: ignore[arg-type]
    assert evidence.kind is EvidenceKind.TRUSTED_BOUNDARY
    assert evidence == ContractEvidence.trusted_boundary("some foreign library")
    assert evidence.label == "trusted boundary: some foreign library"


def test_a_labelled_trusted_boundary_is_rejected_under_checked_and_accepted_under_external() -> None:
    profile = _foreign_profile(ContractEvidence("trustedBoundary", "some foreign library"))  # type: ignore[arg-type]
    plan = profile.plan_ops([B.RELU])
    assert plan.capsule_names == ("foreign.relu",)
    rejected = plan.check_contracts(AssurancePolicy.CHECKED).rejected
    assert [(r.capsule_name, r.obligation.label, r.evidence.label) for r in rejected] == [
        ("foreign.relu", "value", "trusted boundary: some foreign library")
    ]
    assert plan.check_contracts(AssurancePolicy.EXTERNAL).accepted
    line = "    value: relu forward refines its TorchLean semantics; trusted boundary: some foreign library"
    assert line in profile.plan_report([B.RELU]).splitlines()


def test_a_labelled_trusted_boundary_does_not_run_in_a_checked_session() -> None:
    profile = _foreign_profile(ContractEvidence("trustedBoundary", "some foreign library"))  # type: ignore[arg-type]
    with tl.session(profile), pytest.raises(SessionError) as info:
        tl.relu(tl.tensor([1.0, -1.0]))
    assert str(info.value) == (
        "torch: kernel selection failed for `relu`: backend profile checked_cpu rejected `relu`: "
        "foreign.relu has rejected value evidence for relu: trusted boundary: some foreign library"
    )


@pytest.mark.parametrize("kind", list(EvidenceKind))
def test_accepts_evidence_per_kind(kind: EvidenceKind) -> None:
    evidence = ContractEvidence(kind, None if kind is EvidenceKind.NOT_APPLICABLE else f"{GUARDS}.check_relu")
    assert AssurancePolicy.EXTERNAL.accepts_evidence(evidence)
    assert AssurancePolicy.CHECKED.accepts_evidence(evidence) is (kind is not EvidenceKind.TRUSTED_BOUNDARY)


@pytest.mark.parametrize("kind", ["runtimeGuard", "proved", None], ids=["label-string", "unknown", "none"])
def test_accepts_evidence_fails_closed_on_a_forged_kind(kind: object) -> None:
    """``ContractEvidence`` validates its kind, but a record forged past ``__init__`` (as the sealed
    types' forgery tests build them) can hold anything: neither policy accepts a kind that is not
    one of the four members, not even a member's label (review66 S15: the final ``return False``
    of ``accepts_evidence`` is reachable this way, and ``return True`` there passed every test)."""
    forged = object.__new__(ContractEvidence)
    object.__setattr__(forged, "kind", kind)
    object.__setattr__(forged, "name", f"{GUARDS}.check_relu")
    assert AssurancePolicy.EXTERNAL.accepts_evidence(forged) is False
    assert AssurancePolicy.CHECKED.accepts_evidence(forged) is False


def test_accepts_evidence_refuses_what_is_not_evidence() -> None:
    with pytest.raises(BackendTypeError) as info:
        AssurancePolicy.CHECKED.accepts_evidence("trustedBoundary")  # type: ignore[arg-type]
    assert str(info.value) == "evidence must be a ContractEvidence, got 'trustedBoundary' (str)"


# ------------------------------------------------------------------------------- evidence fields


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (
            lambda: ContractEvidence("trusted", "x"),  # type: ignore[arg-type]
            BackendValueError,
            f"ContractEvidence.kind: unknown evidence kind trusted (known: {EVIDENCE_KINDS})",
        ),
        (
            lambda: ContractEvidence(3, "x"),  # type: ignore[arg-type]
            BackendTypeError,
            f"ContractEvidence.kind must be an EvidenceKind or one of its labels ({EVIDENCE_KINDS}), "
            "got 3 (int)",
        ),
        (
            lambda: ContractEvidence.test_suite(3),  # type: ignore[arg-type]
            BackendTypeError,
            f"{NON_EMPTY_NAME}, got 3 (int)",
        ),
        (lambda: ContractEvidence.test_suite(""), BackendValueError, f"{NON_EMPTY_NAME}, got ''"),
        (lambda: ContractEvidence.trusted_boundary("  "), BackendValueError, f"{NON_EMPTY_NAME}, got '  '"),
        (
            lambda: ContractEvidence.runtime_guard("shape guard"),
            BackendValueError,
            f"{DOTTED}, got 'shape guard'",
        ),
        (
            lambda: ContractEvidence.runtime_guard("check_relu"),
            BackendValueError,
            f"{DOTTED}, got 'check_relu'",
        ),
        (
            lambda: ContractEvidence.test_suite(None),  # type: ignore[arg-type]
            BackendTypeError,
            "testSuite evidence needs a name exactly when it is applicable",
        ),
        (
            lambda: ContractEvidence(EvidenceKind.NOT_APPLICABLE, "x"),
            BackendTypeError,
            "notApplicable evidence needs a name exactly when it is applicable",
        ),
    ],
    ids=["unknown-kind", "int-kind", "int-suite", "empty-suite", "blank-reason", "spaced-guard", "bare-guard",
         "suite-without-name", "not-applicable-with-name"],
)  # fmt: skip
def test_evidence_fields_are_checked(build: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        build()  # type: ignore[operator]
    assert str(info.value) == message


def test_a_guard_name_that_is_no_callable_is_refused_when_the_module_is_registered() -> None:
    assert ContractEvidence.runtime_guard("numpy.pi").name == "numpy.pi"  # a dotted name: a legal record
    shape = guarded(ContractClaim.shape_safety(B.RELU), "Shapes.", "numpy.pi")
    capsule = dataclasses.replace(RELU, name="pi.relu", shape_contract=shape)
    with pytest.raises(RegistryError) as info:
        CHECKED_CPU.with_capsule_modules([CapsuleModule("pi", (capsule,))])
    assert str(info.value) == (
        "capsule module `pi`: capsule `pi.relu` shape evidence: runtime guard `numpy.pi` is not a callable: "
        "3.141592653589793 (float)"
    )


@pytest.mark.parametrize(
    ("guard", "reason"),
    [
        ("no_such_package_xyz.check", "runtime guard `no_such_package_xyz.check` cannot be imported: "
                                      "No module named 'no_such_package_xyz'"),
        (f"{GUARDS}.check_nothing", f"runtime guard `{GUARDS}.check_nothing` does not exist: {GUARDS} has no "
                                    "`check_nothing`"),
    ],
)  # fmt: skip
@pytest.mark.parametrize("route", ["with_capsule_modules", "BackendProfile"])
def test_a_guard_name_that_does_not_resolve_is_refused(guard: str, reason: str, route: str) -> None:
    capsule = dataclasses.replace(
        RELU, name="x.relu", layout_contract=guarded(RELU.layout_contract.claim, "Layout.", guard)
    )
    module = CapsuleModule("x", (capsule,))
    with pytest.raises(RegistryError) as info:
        if route == "with_capsule_modules":
            CHECKED_CPU.with_capsule_modules([module])
        else:  # a profile built directly: its plan report would cite the guard
            modules = (module, *maintained_modules())
            profiles.BackendProfile("mine", CHECKED_CPU.policy, CHECKED_CPU.availability, modules)
    assert str(info.value) == f"capsule module `x`: capsule `x.relu` layout evidence: {reason}"


def test_a_copied_shipped_profile_checks_no_shipped_guard_and_imports_no_torch() -> None:
    """A deep-copied or unpickled ``checked_cpu`` holds copies of the shipped modules: building
    profiles from it (every session does) must not resolve their guards again, which imported
    the native guards and torch into a numpy-only run."""
    code = (
        "import copy, pickle, sys\n"
        "import numpy as np\n"
        "import torchlean as tl\n"
        "from torchlean.backend import profiles\n"
        "for profile in (copy.deepcopy(profiles.get('checked_cpu')),\n"
        "                pickle.loads(pickle.dumps(profiles.get('checked_cpu')))):\n"
        "    with tl.session(profile):\n"
        "        tl.relu(tl.tensor(np.ones(3)))\n"
        "print('torch' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=False)
    assert (done.returncode, done.stdout) == (0, "False\n"), done.stderr


def test_every_shipped_module_registers() -> None:
    profile = CHECKED_CPU.with_capsule_modules(all_modules())
    names = [m.name for m in profile.capsule_modules]
    assert names == ["attention", "native-cuda", "reference", "libtorch", "aten"]


# ---------------------------------------------------------------------------- claims, descriptors


def test_claim_fields_take_members_or_labels() -> None:
    claim = ContractClaim("layoutCompatibility", "relu", layout="canonical-tensor")  # type: ignore[arg-type]
    assert claim == ContractClaim.layout_compatibility(B.RELU, TensorLayout.CANONICAL_TENSOR)
    assert ContractClaim("vjpRefinement", "relu", mode="torchlean-tape") == (  # type: ignore[arg-type]
        ContractClaim.vjp_refinement(B.RELU, VJPMode.TORCHLEAN_TAPE)
    )


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: ContractClaim(ClaimKind.SHAPE_SAFETY, "rleu"), BackendValueError,  # type: ignore[arg-type]
         f"ContractClaim.op: unknown op rleu (known: {OPS}); did you mean relu?"),
        (lambda: ContractClaim(ClaimKind.SHAPE_SAFETY, None), BackendTypeError,  # type: ignore[arg-type]
         f"ContractClaim.op must be a BackendOp or one of its labels ({OPS}), got None (NoneType)"),
        (lambda: ContractClaim(ClaimKind.VALUE_REFINEMENT, B.RELU, layout=3), BackendTypeError,  # type: ignore[arg-type]
         "ContractClaim.layout must be a TensorLayout or one of its labels (canonical-tensor | "
         "flat-row-major | libtorch-cuda-view) or None, got 3 (int)"),
        (lambda: ContractClaim(ClaimKind.VALUE_REFINEMENT, B.RELU, layout=TensorLayout.FLAT_ROW_MAJOR),
         BackendTypeError, "a valueRefinement claim carries a layout only for layout compatibility"),
        (lambda: ContractDescriptor("shape", "s", ContractEvidence.test_suite("t.py")), BackendTypeError,  # type: ignore[arg-type]
         "ContractDescriptor.claim must be a ContractClaim, got 'shape' (str)"),
        (lambda: ContractDescriptor(SHAPE_CLAIM, "", SUITE), BackendValueError,
         "ContractDescriptor.summary must be a non-empty string, got ''"),
        (lambda: ContractDescriptor(SHAPE_CLAIM, "s", "tests/x.py"), BackendTypeError,  # type: ignore[arg-type]
         "ContractDescriptor.evidence must be a ContractEvidence, got 'tests/x.py' (str)"),
        (lambda: ContractDescriptor(SHAPE_CLAIM, "s", SUITE, ("csrc/native_ops.cu",)), BackendTypeError,  # type: ignore[arg-type]
         "ContractDescriptor.provenance[0] must be a NativeSymbolRef, got 'csrc/native_ops.cu' (str)"),
        (lambda: NativeSymbolRef("", "relu_forward"), BackendValueError,
         "NativeSymbolRef.path must be a non-empty string, got ''"),
        (lambda: NativeSymbolRef("csrc/native_ops.cu", 3), BackendTypeError,  # type: ignore[arg-type]
         "NativeSymbolRef.symbol must be a non-empty string, got 3 (int)"),
        (lambda: NumericalPolicy("left"), BackendValueError,  # type: ignore[arg-type]
         "NumericalPolicy.reduction: unknown reduction policy left (known: fixed-left | "
         "implementation-defined | n/a)"),
    ],
    ids=["claim-op-label", "claim-op-none", "claim-layout-int", "claim-layout-misplaced", "descriptor-claim",
         "descriptor-summary", "descriptor-evidence", "descriptor-provenance", "symbol-path", "symbol-int",
         "reduction-label"],
)  # fmt: skip
def test_claim_and_descriptor_fields_are_checked(build: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        build()  # type: ignore[operator]
    assert str(info.value) == message


def test_provenance_list_and_reduction_label_are_normalised() -> None:
    ref = NativeSymbolRef("csrc/native_ops.cu", "relu_forward")
    descriptor = ContractDescriptor(SHAPE_CLAIM, "s", SUITE, [ref])  # type: ignore[arg-type]
    assert descriptor.provenance == (ref,)
    assert NumericalPolicy("fixed-left") == NumericalPolicy(ReductionPolicy.FIXED_LEFT)  # type: ignore[arg-type]


# --------------------------------------------------------------------------------------- capsules


def test_every_enum_field_of_every_shipped_capsule_may_be_given_as_its_label() -> None:
    for module in all_modules():
        for capsule in module.capsules:
            relabelled = dataclasses.replace(
                capsule,
                op=capsule.op.label,  # type: ignore[arg-type]
                provider=capsule.provider.label,  # type: ignore[arg-type]
                device=capsule.device.label,  # type: ignore[arg-type]
                trust_level=capsule.trust_level.label,  # type: ignore[arg-type]
                vjp_mode=capsule.vjp_mode.label,  # type: ignore[arg-type]
            )
            assert relabelled == capsule
            assert relabelled.op is capsule.op and relabelled.device is capsule.device


def test_a_capsule_built_with_an_op_label_plans() -> None:
    relu = dataclasses.replace(RELU, name="label.relu", op="relu")  # type: ignore[arg-type]
    plan = CHECKED_CPU.with_capsule_modules([CapsuleModule("label", (relu,))]).plan_ops(["relu"])
    assert plan.capsule_names == ("label.relu",)
    assert plan.kernels[0].capsule.op is B.RELU


@pytest.mark.parametrize(
    ("changes", "error", "message"),
    [
        ({"name": ""}, BackendValueError, "KernelCapsule.name must be a non-empty string, got ''"),
        ({"name": None}, BackendTypeError,
         "KernelCapsule.name must be a non-empty string, got None (NoneType)"),
        ({"op": "rleu"}, BackendValueError,
         f"KernelCapsule.op: unknown op rleu (known: {OPS}); did you mean relu?"),
        ({"op": 3}, BackendTypeError,
         f"KernelCapsule.op must be a BackendOp or one of its labels ({OPS}), got 3 (int)"),
        ({"device": "gpu"}, BackendValueError,
         f"KernelCapsule.device: unknown device gpu (known targets: {DEVICES})"),
        ({"provider": Device.CPU}, BackendTypeError,
         "KernelCapsule.provider must be a Provider or one of its labels (reference | torchlean | "
         "native-cuda | libtorch | aten | mps | webgpu | cublas | cudnn | cufft | xla | neuron | custom-chip "
         "| external), got <Device.CPU: 'cpu'> (Device)"),
        ({"trust_level": True}, BackendTypeError,
         "KernelCapsule.trust_level must be a TrustLevel or one of its labels (checked | trusted-external), "
         "got True (bool)"),
        ({"supports_forward": 1}, BackendTypeError,
         "KernelCapsule.supports_forward must be True or False, got 1 (int)"),
        ({"vjp_mode": "tape"}, BackendValueError,
         "KernelCapsule.vjp_mode: unknown vjp mode tape (known: none | torchlean-tape | backend-vjp)"),
        ({"shape_contract": "guarded"}, BackendTypeError,
         "KernelCapsule.shape_contract must be a ContractDescriptor, got 'guarded' (str)"),
        ({"numerical_policy": ReductionPolicy.FIXED_LEFT}, BackendTypeError,
         "KernelCapsule.numerical_policy must be a NumericalPolicy, got "
         "<ReductionPolicy.FIXED_LEFT: 'fixed-left'> (ReductionPolicy)"),
    ],
    ids=lambda v: v if isinstance(v, str) and len(v) < 20 else None,
)  # fmt: skip
def test_capsule_fields_are_checked(changes: dict[str, object], error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        dataclasses.replace(RELU, **changes)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_a_module_entry_that_is_no_capsule_is_refused() -> None:
    with pytest.raises(BackendTypeError) as info:
        CapsuleModule("custom", (RELU, "reference.relu"))  # type: ignore[arg-type]
    assert str(info.value) == (
        "CapsuleModule `custom`.capsules[1] must be a KernelCapsule, got 'reference.relu' (str)"
    )
    with pytest.raises(BackendTypeError) as info:
        CapsuleModule("custom", "reference.relu")  # type: ignore[arg-type]
    assert str(info.value) == (
        "CapsuleModule `custom`.capsules must be a tuple or list of KernelCapsule, got 'reference.relu' (str)"
    )
    with pytest.raises(BackendValueError, match=r"^CapsuleModule.name must be a non-empty string, got ''$"):
        CapsuleModule("", ())
    assert CapsuleModule("custom", [RELU]).capsules == (RELU,)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        (CapsuleModule("one", (RELU,)), f"{MODULES_EXPECTED}, got the single module `one`; write [module]"),
        ("reference", f"{MODULES_EXPECTED}, got 'reference' (str)"),
        (None, f"{MODULES_EXPECTED}, got None (NoneType)"),
        (["reference"], "with_capsule_modules: modules[0] must be a CapsuleModule, got 'reference' (str)"),
        ([RELU], "with_capsule_modules: modules[0] must be a CapsuleModule, got "
                 + repr(RELU)[:77] + "... (KernelCapsule)"),
    ],
    ids=["single-module", "string", "none", "string-entry", "capsule-entry"],
)  # fmt: skip
def test_with_capsule_modules_refuses_what_is_not_a_module_list(modules: object, message: str) -> None:
    with pytest.raises(BackendTypeError) as info:
        CHECKED_CPU.with_capsule_modules(modules)  # type: ignore[arg-type]
    assert str(info.value) == message


@pytest.mark.parametrize(
    ("modules", "message"),
    [
        (None, "modules must be an iterable of CapsuleModule, got None (NoneType)"),
        ("reference", "modules must be an iterable of CapsuleModule, got 'reference' (str)"),
        ([1], "modules[0] must be a CapsuleModule, got 1 (int)"),
    ],
    ids=["none", "string", "int-entry"],
)
def test_validate_modules_refuses_what_is_not_a_module_list(modules: object, message: str) -> None:
    """review121 F3: ``validate_modules(None)`` gave ``TypeError: 'NoneType' object is not
    iterable`` and ``validate_modules([1])`` an ``AttributeError`` on ``.name``."""
    with pytest.raises(BackendTypeError) as info:
        validate_modules(modules)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_validate_modules_takes_any_iterable_of_modules() -> None:
    validate_modules(iter(maintained_modules()))  # a generator is read once, then checked
    with pytest.raises(RegistryError, match=r"^duplicate backend capsule module `reference`$"):
        validate_modules(module for module in (*maintained_modules(), maintained_modules()[-1]))


# --------------------------------------------------------------------------------------- policies
# --------------------------------------------------------------------------------------- policies


def test_policy_fields_take_labels() -> None:
    policy = KernelPolicy(device="cuda", assurance="external", vjp_mode="none")  # type: ignore[arg-type]
    assert policy == KernelPolicy(Device.CUDA, assurance=AssurancePolicy.EXTERNAL, vjp_mode=VJPMode.NONE)
    assert ProviderPreference("prefer", "libtorch") == ProviderPreference.prefer(Provider.LIBTORCH)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("build", "error", "message"),
    [
        (lambda: KernelPolicy(device=None), BackendTypeError,  # type: ignore[arg-type]
         f"KernelPolicy.device must be a Device or one of its labels ({DEVICES}), got None (NoneType)"),
        (lambda: KernelPolicy(assurance="strict"), BackendValueError,  # type: ignore[arg-type]
         "KernelPolicy.assurance: unknown assurance policy strict (known: checked | external)"),
        (lambda: KernelPolicy(provider="auto"), BackendTypeError,  # type: ignore[arg-type]
         "KernelPolicy.provider must be a ProviderPreference (ProviderPreference.auto(), .prefer(provider) "
         "or .only(provider), e.g. .prefer('aten')), got 'auto' (str)"),
        (lambda: KernelPolicy(assurance=True), BackendTypeError,  # type: ignore[arg-type]
         "KernelPolicy.assurance must be an AssurancePolicy (or its label: checked | external), "
         "got True (bool)"),
        (lambda: AssurancePolicy(allow_trusted_external="yes"), BackendTypeError,  # type: ignore[arg-type]
         "AssurancePolicy.allow_trusted_external must be True or False, got 'yes' (str)"),
        (lambda: ProviderPreference(PreferenceKind.AUTO, Provider.ATEN), BackendTypeError,
         "ProviderPreference: auto names no provider, got aten (write ProviderPreference.prefer('aten') "
         "or .only('aten') to ask for it)"),
    ],
    ids=[
        "device-none", "assurance-label", "provider-str", "assurance-bool", "allow-str", "auto-with-provider"
    ],
)  # fmt: skip
def test_policy_fields_are_checked(build: object, error: type[Exception], message: str) -> None:
    with pytest.raises(error) as info:
        build()  # type: ignore[operator]
    assert str(info.value) == message


# ------------------------------------------------------------------------------ 2. the Python API


def test_plan_ops_takes_op_labels() -> None:
    assert CHECKED_CPU.plan_ops(["matmul", "relu"]) == CHECKED_CPU.plan_ops([B.MATMUL, B.RELU])
    assert CHECKED_CPU.plan_ops(("matmul", B.RELU)).capsule_names == ("reference.matmul", "reference.relu")
    assert CHECKED_CPU.plan_report(["relu"]) == CHECKED_CPU.plan_report([B.RELU])


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ("relu", f"{OPS_EXPECTED}, got the string 'relu'; write ['relu']"),
        (B.RELU, f"{OPS_EXPECTED}, got the single op relu; write [BackendOp.RELU]"),
        (3, f"{OPS_EXPECTED}, got 3 (int)"),
        (["relu", None], f"ops[1] must be a BackendOp or one of its labels ({OPS}), got None (NoneType)"),
    ],
    ids=["string", "single-op", "int", "none-entry"],
)  # fmt: skip
def test_plan_ops_and_plan_report_refuse_what_is_not_an_op_sequence(ops: object, message: str) -> None:
    for call in (CHECKED_CPU.plan_ops, CHECKED_CPU.plan_report):
        with pytest.raises(BackendTypeError) as info:
            call(ops)  # type: ignore[arg-type]
        assert str(info.value) == message


def test_an_unknown_op_label_is_an_unknown_label() -> None:
    for call in (lambda: CHECKED_CPU.plan_ops(["relu", "rleu"]), lambda: CHECKED_CPU.explain("rleu")):
        with pytest.raises(UnknownLabelError) as info:
            call()
        assert str(info.value) == f"unknown op rleu (known: {OPS}); did you mean relu?"
    with pytest.raises(UnknownLabelError) as info:
        CHECKED_CPU.explain("bogus")
    assert str(info.value) == f"unknown op bogus (known: {OPS})"  # the original's message alone


def test_explain_takes_a_label_and_refuses_none() -> None:
    assert CHECKED_CPU.explain("relu") == CHECKED_CPU.explain(B.RELU)
    assert CHECKED_CPU.explain_verdicts("relu") == CHECKED_CPU.explain_verdicts(B.RELU)
    with pytest.raises(BackendTypeError) as info:
        CHECKED_CPU.explain(None)  # type: ignore[arg-type]
    assert str(info.value) == f"op must be a BackendOp or one of its labels ({OPS}), got None (NoneType)"


def test_check_contracts_takes_a_policy_label() -> None:
    plan = profiles.get("libtorch_forward_cpu").plan_ops([B.SCALED_DOT_PRODUCT_ATTENTION])
    audit = plan.audit()
    assert audit.check_contracts("checked") == audit.check_contracts(AssurancePolicy.CHECKED)
    assert not audit.check_contracts("checked").accepted
    assert plan.check_contracts("external") == plan.check_contracts(AssurancePolicy.EXTERNAL)
    assert plan.check_contracts("external").accepted
    with pytest.raises(UnknownLabelError) as unknown:
        audit.check_contracts("strict")
    assert str(unknown.value) == "unknown assurance policy strict (known: checked | external)"
    with pytest.raises(BackendTypeError) as info:
        audit.check_contracts(None)  # type: ignore[arg-type]
    assert str(info.value) == (
        "policy must be an AssurancePolicy or its label (checked | external), got None (NoneType)"
    )


@pytest.mark.parametrize("graph", ["mlp", None, [1, 2]])
def test_graph_calls_refuse_what_is_not_a_graph(graph: object) -> None:
    for call in (CHECKED_CPU.plan_graph, CHECKED_CPU.accept_graph):
        with pytest.raises(BackendTypeError) as info:
            call(graph)  # type: ignore[arg-type]
        assert str(info.value) == (
            "graph must be an IR graph (an object with .nodes and .check_well_formed(), e.g. a torchlean.ir "
            f"Graph), got {graph!r} ({type(graph).__name__})"
        )
    assert len(CHECKED_CPU.plan_graph(mlp_graph()).kernels) == 13  # 18 nodes less 1 input and 4 consts


def test_long_values_are_shortened_in_messages() -> None:
    assert describe("x" * 100) == "'" + "x" * 76 + "... (str)"
    assert describe(None) == "None (NoneType)"


def test_profiles_get_refuses_a_non_string() -> None:
    with pytest.raises(BackendTypeError) as info:
        profiles.get(None)  # type: ignore[arg-type]
    known = " | ".join(profiles.names())
    assert str(info.value) == f"profile name must be a string ({known}), got None (NoneType)"


def test_module_level_planner_functions_take_labels() -> None:
    registry = CHECKED_CPU.registry()
    policy = CHECKED_CPU.policy
    assert planner.plan_op(policy, registry, "relu") == planner.plan_op(policy, registry, B.RELU)
    assert planner.plan_ops(policy, registry, ["relu"]) == planner.plan_ops(policy, registry, [B.RELU])
    assert choose_capsule(policy, "relu", registry) is choose_capsule(policy, B.RELU, registry)
    assert choose_capsule(policy, "relu", iter(registry)) is RELU  # any iterable, a generator too
    with pytest.raises(BackendTypeError):
        planner.plan_ops(policy, registry, "relu")


@pytest.mark.parametrize(
    ("arguments", "message"),
    [
        ((None, "relu", [RELU]), "policy must be a KernelPolicy, got None (NoneType)"),
        ((POLICY, "relu", None),
         "capsules must be an ordered iterable of KernelCapsule, got None (NoneType)"),
        ((POLICY, "relu", "relu"), "capsules must be an ordered iterable of KernelCapsule, got 'relu' (str)"),
        ((POLICY, "relu", [RELU, 1]), "capsules[1] must be a KernelCapsule, got 1 (int)"),
        ((POLICY, None, [RELU]), f"op must be a BackendOp or one of its labels ({OPS}), got None (NoneType)"),
    ],
    ids=["policy-none", "capsules-none", "capsules-string", "capsules-int-entry", "op-none"],
)  # fmt: skip
def test_choose_capsule_refuses_ill_typed_arguments(arguments: tuple[object, ...], message: str) -> None:
    """review121 F3: ``choose_capsule`` gave a bare ``TypeError`` (capsules ``None``) or an
    ``AttributeError`` (policy ``None``, an entry ``1``); it checks its arguments as ``plan_op``
    does (op, then policy, then capsules)."""
    with pytest.raises(BackendTypeError) as info:
        choose_capsule(*arguments)  # type: ignore[arg-type]
    assert str(info.value) == message


def test_admissible_and_contracts_aligned_refuse_what_is_not_a_policy_or_capsule() -> None:
    """review121 F3: ``admissible(None, capsule)`` and ``contracts_aligned(None)`` raised an
    ``AttributeError`` from inside the conditions."""
    policy = CHECKED_CPU.policy
    assert admissible(policy, RELU) and contracts_aligned(RELU) and RELU.contracts_aligned
    for call, message in (
        (lambda: admissible(None, RELU), "policy must be a KernelPolicy, got None (NoneType)"),  # type: ignore[arg-type]
        (lambda: admissible(policy, None), "capsule must be a KernelCapsule, got None (NoneType)"),  # type: ignore[arg-type]
        (lambda: admissible(policy, "reference.relu"),  # type: ignore[arg-type]
         "capsule must be a KernelCapsule, got 'reference.relu' (str)"),
        (lambda: contracts_aligned(None), "capsule must be a KernelCapsule, got None (NoneType)"),  # type: ignore[arg-type]
    ):
        with pytest.raises(BackendTypeError) as info:
            call()
        assert str(info.value) == message


def test_a_plan_audit_refuses_rows_that_are_not_audit_rows() -> None:
    """review121 F3: ``KernelPlanAudit([1])`` was built, and its ``check_contracts`` then raised an
    ``AttributeError``; its rows are checked as ``KernelPlan`` checks its kernels."""
    rows = CHECKED_CPU.plan_ops(["relu"]).audit().kernels
    assert KernelPlanAudit(list(rows)).kernels == rows  # a list is stored as a tuple
    with pytest.raises(BackendTypeError) as info:
        KernelPlanAudit([1])  # type: ignore[list-item]
    assert str(info.value) == "KernelPlanAudit.kernels[0] must be a KernelAudit, got 1 (int)"
    with pytest.raises(BackendTypeError) as info:
        KernelPlanAudit(None)  # type: ignore[arg-type]
    assert str(info.value) == (
        "KernelPlanAudit.kernels must be a tuple or list of KernelAudit, got None (NoneType)"
    )


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.sampled_from(list(BackendOp)), st.booleans()), max_size=6))
def test_labels_and_members_plan_alike(request: list[tuple[BackendOp, bool]]) -> None:
    """Any mixture of members and labels plans (or fails) exactly as the members do."""
    members = [op for op, _ in request]
    mixed = [op.label if as_label else op for op, as_label in request]
    try:
        expected = CHECKED_CPU.plan_ops(members)
    except PlanningError as error:
        with pytest.raises(PlanningError) as info:
            CHECKED_CPU.plan_ops(mixed)
        assert info.value.messages == error.messages
        # the ops no capsule covers, once each in request order, and exactly those: each fails on
        # its own, every other op plans on its own
        assert list(error.missing_ops) == list(dict.fromkeys(op for op in members if not _plans(op)))
    else:
        assert CHECKED_CPU.plan_ops(mixed) == expected


def _plans(op: BackendOp) -> bool:
    available = CHECKED_CPU.availability.filter_capsules(CHECKED_CPU.registry())
    try:
        planner.plan_op(CHECKED_CPU.policy, available, op)
    except PlanningError as error:
        assert error.missing_ops == (op,)
        return False
    return True


def test_a_graph_plan_and_a_registry_error_name_their_missing_ops() -> None:
    """``PlanningError.missing_ops``: the graph planner's distinct missing ops; none for an
    invalid registry (its message is the registry's, not an op's)."""
    from torchlean.backend.errors import PlanningError as Error
    from torchlean.backend.registry import RegistryError

    graph = mlp_graph()
    reference = next(m for m in maintained_modules() if m.name == "reference")
    kept = tuple(c for c in reference.capsules if c.op.label not in ("matmul", "add"))
    profile = CHECKED_CPU.with_capsule_modules([CapsuleModule("reference", kept)])
    with pytest.raises(Error) as info:
        profile.plan_graph(graph)
    assert [op.label for op in info.value.missing_ops] == ["matmul", "add"]
    assert len(info.value.messages) == 2
    twice = CHECKED_CPU.with_capsule_modules([CapsuleModule("m", ()), CapsuleModule("m", ())])
    with pytest.raises(RegistryError) as registry:
        twice.plan_ops(["relu"])
    assert registry.value.missing_ops == ()


def test_builder_capsules_still_register() -> None:
    capsule = make_capsule("built.relu", B.RELU)
    profile = CHECKED_CPU.with_capsule_modules([CapsuleModule("b", (capsule,))])
    assert profile.plan_ops(["relu"]).capsule_names == ("built.relu",)
    assert re.fullmatch(r"backend_builders\.check_shape", capsule.shape_contract.evidence.name or "")


def test_an_unknown_label_in_a_record_is_also_an_unknown_label_error() -> None:
    """Code that catches UnknownLabelError (the CLI does) catches a record's unknown label too."""
    from torchlean.backend.errors import UnknownLabelError
    from torchlean.backend.fields import BackendLabelError
    from torchlean.backend.policy import KernelPolicy

    with pytest.raises(UnknownLabelError) as caught:
        KernelPolicy(device="gpu")  # type: ignore[arg-type]
    assert isinstance(caught.value, BackendLabelError) and isinstance(caught.value, BackendValueError)
    assert "unknown device gpu" in str(caught.value)


def test_profile_repr_is_short_and_names_the_policy() -> None:
    from torchlean.backend import profiles

    shown = repr(profiles.get("checked_cuda"))
    assert shown == (
        "BackendProfile(name='checked_cuda', device=cuda, assurance=checked, vjp=torchlean-tape, "
        "modules=[attention, native-cuda, reference])"
    )


def test_planned_kernel_repr_names_the_op_and_capsule() -> None:
    """As ``AcceptedKernel``'s; the dataclass repr printed the whole capsule (about 3 KB)."""
    from torchlean.backend import profiles

    (planned,) = profiles.get("checked_cpu").plan_ops(["matmul"]).kernels
    assert repr(planned) == "PlannedKernel(matmul, reference.matmul)"


def test_availability_takes_members_or_labels_and_refuses_anything_else() -> None:
    """``Availability(devices=("cpu",), providers=("reference",))`` was stored unparsed: planning
    then found no capsule for relu on cpu and ``explain`` raised an ``AttributeError`` (review17
    audit D2). Labels are parsed as every other record parses them; a lone string, an unknown
    label or a non-label item is refused naming the field."""
    from torchlean.backend.availability import Availability
    from torchlean.backend.fields import BackendLabelError
    from torchlean.backend.profiles import BackendProfile

    labelled = Availability(devices=["cpu"], providers=("reference", "torchlean"))
    assert labelled == Availability.cpu()
    profile = BackendProfile("labels", KernelPolicy(), labelled, profiles.get("checked_cpu").capsule_modules)
    assert [p.capsule.name for p in profile.plan_ops(["relu"]).kernels] == ["reference.relu"]
    assert "reference.relu" in profile.explain("relu")
    with pytest.raises(BackendTypeError) as lone:
        Availability(devices="cpu")  # type: ignore[arg-type]
    assert str(lone.value) == (
        "Availability.devices must be a tuple or list of Device members or labels, got 'cpu' (str)"
    )
    with pytest.raises(BackendLabelError, match=r"^Availability\.devices\[1\]: unknown device gpu \(known"):
        Availability(devices=("cpu", "gpu"))  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError, match=r"^Availability\.providers\[0\] must be a Provider or one"):
        Availability(providers=(1,))  # type: ignore[arg-type]


def test_a_layout_claim_needs_its_layout():
    # review21 mut C2; oracle: ContractClaim's documented Raises ("a layout/mode on a claim kind without
    # one"),
    # and the message the symmetric check gives
    from torchlean.backend.contracts import ClaimKind, ContractClaim
    from torchlean.backend.fields import BackendTypeError
    from torchlean.backend.vocabulary import BackendOp

    with pytest.raises(BackendTypeError, match="carries a layout only for layout compatibility"):
        ContractClaim(ClaimKind.LAYOUT_COMPATIBILITY, BackendOp.RELU)


@pytest.mark.parametrize("kind", ["prefer", "only"])
def test_prefer_and_only_need_a_provider(kind):
    # review21 mut PO3; oracle: ProviderPreference's documented Raises ("none with prefer/only")
    from torchlean.backend.fields import BackendTypeError
    from torchlean.backend.policy import PreferenceKind, ProviderPreference

    # review168 F3: the kind, the value given and the accepted providers are named
    with pytest.raises(BackendTypeError, match=rf"^ProviderPreference: {kind} needs a provider, got None "
                       r"\(known providers: reference \| torchlean \| "):
        ProviderPreference(PreferenceKind.parse(kind))
    with pytest.raises(BackendTypeError, match=rf"^ProviderPreference: {kind} needs a provider, got None"):
        getattr(ProviderPreference, kind)(None)


def test_describe_keeps_an_80_character_repr_whole_and_shortens_81() -> None:
    eighty, eighty_one = "x" * 78, "x" * 79  # reprs of 80 and 81 characters (with the quotes)
    assert describe(eighty) == f"'{eighty}' (str)"
    assert describe(eighty_one) == "'" + "x" * 76 + "... (str)"


@pytest.mark.parametrize(
    ("parse", "label", "message"),
    [
        (BackendOp.parse, "RELU", rf"^unknown op RELU \(known: {re.escape(OPS)}\); did you mean relu\?$"),
        (
            TrustLevel.parse,
            "Checked",
            r"^unknown trust level Checked \(known: checked \| trusted-external\); did you mean checked\?$",
        ),
        (Device.parse, "CPU", rf"^unknown device CPU \(known targets: {re.escape(DEVICES)}\)$"),
        (Provider.parse, "cuda-graphs", r"^unknown provider cuda-graphs \(known: reference \| "),
        (Provider.parse, "ATEN", r"^unknown provider ATEN \(known: "),
        (VJPMode.parse, "NONE", r"^unknown vjp mode NONE \(known: "),
    ],
    ids=["op", "trust-level", "device", "provider", "provider-in-capitals", "vjp-mode"],
)
def test_labels_parse_case_sensitively_and_name_their_vocabulary(
    parse: Callable[[str], object], label: str, message: str
) -> None:
    """LabelledEnum.parse: "the member whose label is exactly label (case-sensitive)"; the refusal
    names the label of another case (review197 F3)."""
    with pytest.raises(UnknownLabelError, match=message):
        parse(label)


ENUMS = [BackendOp, Device, Provider, TrustLevel, VJPMode, TensorLayout, ReductionPolicy]
DEVICE_EXPECTED = f"device must be a Device or one of its labels ({DEVICES}), got"
TRUST_EXPECTED = "trust level must be a TrustLevel or one of its labels (checked | trusted-external), got"
TRUST_MEMBER = repr(TrustLevel.CHECKED)  # <TrustLevel.CHECKED: 'checked'>
ASSURANCE_EXPECTED = "assurance policy must be an AssurancePolicy or its label (checked | external), got"


@pytest.mark.parametrize("enum", ENUMS)
def test_parse_returns_a_member_of_its_own_enum(enum: type[LabelledEnum]) -> None:
    """review121 F3: ``Device.parse(Device.CPU)`` said ``unknown device <Device.CPU: 'cpu'>``,
    calling a valid member unknown; a member of that very enum is now returned as it is."""
    for member in enum:
        assert enum.parse(member) is member
        assert enum.parse(member.label) is member


@pytest.mark.parametrize(
    ("parse", "value", "message"),
    [
        (Device.parse, None, f"{DEVICE_EXPECTED} None (NoneType)"),
        (Device.parse, Provider.REFERENCE, f"{DEVICE_EXPECTED} <Provider.REFERENCE: 'reference'> (Provider)"),
        (BackendOp.parse, 3, f"op must be a BackendOp or one of its labels ({OPS}), got 3 (int)"),
        (TrustLevel.parse, b"checked", f"{TRUST_EXPECTED} b'checked' (bytes)"),
        (AssurancePolicy.parse, None, f"{ASSURANCE_EXPECTED} None (NoneType)"),
        (AssurancePolicy.parse, TrustLevel.CHECKED, f"{ASSURANCE_EXPECTED} {TRUST_MEMBER} (TrustLevel)"),
    ],
    ids=["device-none", "device-of-provider", "op-int", "trust-bytes", "assurance-none", "assurance-trust"],
)  # fmt: skip
def test_parse_refuses_what_is_neither_a_label_nor_a_member_naming_its_type(
    parse: Callable[[object], object], value: object, message: str
) -> None:
    """review121 F3: a non-string was refused as ``unknown device None`` (an ``UnknownLabelError``);
    it is a ``BackendTypeError`` saying what was given and what is accepted, as ``parse_member``
    and ``AssurancePolicy.coerce`` say it."""
    with pytest.raises(BackendTypeError) as info:
        parse(value)
    assert str(info.value) == message


def test_assurance_policy_parse_returns_a_policy_as_it_is() -> None:
    assert AssurancePolicy.parse(AssurancePolicy.CHECKED) is AssurancePolicy.CHECKED
    assert AssurancePolicy.parse(AssurancePolicy.EXTERNAL) is AssurancePolicy.EXTERNAL
    assert AssurancePolicy.parse("external") is AssurancePolicy.EXTERNAL


def test_availability_cuda_refuses_a_with_libtorch_that_is_not_a_bool() -> None:
    """review121 F3: ``Availability.cuda("false")`` added libtorch (a non-empty string is truthy);
    the flag is refused as ``AssurancePolicy(1)`` refuses its own."""
    from torchlean.backend.availability import Availability

    assert Provider.LIBTORCH in Availability.cuda(True).providers
    assert Provider.LIBTORCH not in Availability.cuda().providers
    for value, shown in (("false", "'false' (str)"), (1, "1 (int)"), (None, "None (NoneType)")):
        with pytest.raises(BackendTypeError) as info:
            Availability.cuda(value)  # type: ignore[arg-type]
        assert str(info.value) == f"Availability.cuda: with_libtorch must be True or False, got {shown}"


def test_maintained_for_device_parses_labels_like_the_rest_of_the_backend_api() -> None:
    """review46 F4: a label gave ``None`` ("no maintained profile") instead of being parsed or
    refused; ``get(123)``'s BackendTypeError is the model for a non-label."""
    assert profiles.maintained_for_device("cpu") is profiles.maintained_for_device(Device.CPU) is CHECKED_CPU
    assert profiles.maintained_for_device("cuda") is profiles.get("checked_cuda")
    assert profiles.maintained_for_device("tpu") is None  # a known target without a maintained profile
    known = re.escape(DEVICES)
    with pytest.raises(UnknownLabelError, match=rf"^unknown device gpu \(known targets: {known}\)$"):
        profiles.maintained_for_device("gpu")
    for value, shown in ((123, "123 (int)"), (None, "None (NoneType)"), (True, "True (bool)")):
        with pytest.raises(
            BackendTypeError,
            match=rf"^device must be a Device or one of its labels \({known}\), got {re.escape(shown)}$",
        ):
            profiles.maintained_for_device(value)  # type: ignore[arg-type]


def test_a_cuda_ordinal_is_refused_by_device_parse_with_where_it_is_accepted() -> None:
    """review46 F5: ``Device`` names the kind of target; ``cuda:1`` keeps the original's refusal
    text and adds where an ordinal is accepted. Other unknown labels keep the original's text only."""
    known = re.escape(DEVICES)
    for parse in (Device.parse, profiles.maintained_for_device):
        with pytest.raises(UnknownLabelError) as caught:
            parse("cuda:1")
        assert str(caught.value) == (  # the original's text, then the note
            f"unknown device cuda:1 (known targets: {DEVICES}); a Device names the kind of target only "
            "(cuda:1 is target cuda, Device.CUDA); a device string with an ordinal is accepted by "
            "Tensor.to, torchlean.tensor(device=...) and the command line's --device"
        )
    for label in ("cpu:0", "cuda:x", "cuda:", "cuda:-1"):
        with pytest.raises(UnknownLabelError, match=rf"^unknown device {label} \(known targets: {known}\)$"):
            Device.parse(label)
    with pytest.raises(UnknownLabelError, match=r"is accepted by Tensor\.to"):
        tl.RunConfig(device="cuda:1")
    try:  # the spelling the note names is one Tensor.to takes (here CUDA may be missing or single)
        tl.tensor([1.0]).to("cuda:1")
    except tl.DeviceError as error:
        assert "unknown tensor device" not in str(error) and "cuda:1" in str(error)
    with pytest.raises(tl.DeviceError, match="unknown tensor device 'cuda:x'"):
        tl.tensor([1.0]).to("cuda:x")


def test_an_op_label_in_another_case_is_not_planned() -> None:
    with pytest.raises(UnknownLabelError, match=r"^unknown op RELU "):
        CHECKED_CPU.plan_ops(["RELU"])
    assert CHECKED_CPU.plan_ops(["relu"]).capsule_names == ("reference.relu",)


def test_a_vocabulary_member_prints_as_its_label() -> None:
    assert str(BackendOp.SCALED_DOT_PRODUCT_ATTENTION) == "scaled_dot_product_attention"
    assert f"{Device.CUDA}" == "cuda" and f"{TrustLevel.TRUSTED_EXTERNAL}" == "trusted-external"
    for vocabulary in (BackendOp, Device, Provider, TrustLevel, VJPMode, TensorLayout, ReductionPolicy):
        for member in vocabulary:
            assert str(member) == f"{member}" == member.label == member.value


def test_a_capsule_may_not_take_a_shipped_capsules_name_for_other_code() -> None:
    """Reports lead with the capsule's name: a copy of ``aten.reduce_sum`` renamed
    ``reference.reduce_sum`` would read as the reference kernel while running aten's (review24
    audit F8). A copy keeping its own op, provider and device may keep the name; a new name is
    always free."""
    fast = profiles.get("fast_cpu")
    aten_sum = next(c for m in all_modules() for c in m.capsules if c.name == "aten.reduce_sum")
    impostor = dataclasses.replace(aten_sum, name="reference.reduce_sum")
    refusal = (
        "capsule module `mylib`: capsule `reference.reduce_sum` (aten/cpu, op reduce_sum) takes the "
        "name of the shipped capsule for reference/cpu, op reduce_sum; give it a name of its own"
    )
    with pytest.raises(RegistryError, match=f"^{re.escape(refusal)}$"):
        fast.with_capsule_modules([CapsuleModule("mylib", (impostor,))])
    with pytest.raises(RegistryError, match=re.escape("takes the name of the shipped capsule for")):
        profiles.BackendProfile("p", fast.policy, fast.availability, (CapsuleModule("mylib", (impostor,)),))
    with pytest.raises(BackendValueError, match=r"must be printable .* with U\+0009$"):  # review108 F4
        dataclasses.replace(aten_sum, name="reference.reduce_sum\t")
    for shown_alike in (" reference.reduce_sum", "Reference.Reduce_Sum"):  # diff F3
        alike = dataclasses.replace(aten_sum, name=shown_alike)
        refusal = re.escape(f"capsule `{shown_alike}` (aten/cpu, op reduce_sum) takes the name")
        with pytest.raises(RegistryError, match=refusal):
            fast.with_capsule_modules([CapsuleModule("mylib", (alike,))])
    # review152 F5: a look-alike letter of another script in place of a shipped name's letter
    for alike, shown in (("r\u0435ference.reduce_sum", "U+0435 in place of e"),  # Cyrillic е
                         ("reference.reduce_\u0455um", "U+0455 in place of s")):  # Cyrillic ѕ
        refusal = (f"capsule `{alike}` (aten/cpu, op reduce_sum) looks like the name of the shipped capsule "
                   f"`reference.reduce_sum` ({shown}), which is the one for reference/cpu, op reduce_sum; ")
        with pytest.raises(RegistryError, match=re.escape(refusal)):
            fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=alike),))])
    # review211 F4: a dot that NFKC leaves as it is, in place of the separator; review218 F8: one
    # NFKC folds (U+0387 to U+00B7) and a Cyrillic letter beside a fullwidth one NFKC folds to ASCII
    # are named as written
    for dot in ("\u00b7", "\u2027", "\u30fb", "\u2219", "\u0660", "\ua60e", "\u0387"):
        alike = f"reference{dot}reduce_sum"
        refusal = (f"capsule `{alike}` (aten/cpu, op reduce_sum) looks like the name of the shipped capsule "
                   f"`reference.reduce_sum` (U+{ord(dot):04X} in place of .), which is the one for ")
        with pytest.raises(RegistryError, match=re.escape(refusal)):
            fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=alike),))])
    # review228 F7: a precomposed look-alike (Cyrillic ё) is named alone, its diaeresis not again
    yo = "r\u0451ference.reduce_sum"
    refusal = (f"capsule `{yo}` (aten/cpu, op reduce_sum) looks like the name of the shipped capsule "
               "`reference.reduce_sum` (U+0451 in place of e), which is the one for ")
    with pytest.raises(RegistryError, match=re.escape(refusal)):
        fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=yo),))])
    wide = "\uff52\u0435ference.reduce_sum"  # fullwidth r (NFKC: r), then a Cyrillic е
    refusal = (f"capsule `{wide}` (aten/cpu, op reduce_sum) looks like the name of the shipped capsule "
               "`reference.reduce_sum` (U+0435 in place of e), which is the one for ")
    with pytest.raises(RegistryError, match=re.escape(refusal)):
        fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=wide),))])
    refusal = ("capsule `reference.reduce_sum\u0334` (aten/cpu, op reduce_sum) looks like the name of the "
               "shipped capsule `reference.reduce_sum` (U+0334 added)")  # review154 M1
    with pytest.raises(RegistryError, match=re.escape(refusal)):
        fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(
            aten_sum, name="reference.reduce_sum\u0334"),))])
    # its own triple's name; a new one; words wholly in another script that do not read as Latin are
    # names of their own (review154 M1: ``カーネル.relu`` was taken for ``aten.relu``)
    # review156 M1: a word wholly in Cyrillic letters drawn like Latin ones; accents (composed or not)
    for alike, shown in (("aten.\u0435\u0445\u0440", "U+0435 in place of e, U+0445 in place of x, "
                          "U+0440 in place of p"),
                         ("r\u00e9f\u00e9rence.reduce_sum", "U+0301 added, U+0301 added")):
        with pytest.raises(RegistryError, match=re.escape(f"capsule `{alike}` (aten/cpu, op reduce_sum) "
                                                          f"looks like the name of the shipped capsule")):
            fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=alike),))])
        with pytest.raises(RegistryError, match=re.escape(f"({shown}), which is the one for ")):
            fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=alike),))])
    for free in ("aten.r\u0435duce_sum", "mylib.r\u0435duce_sum", "\u30ab\u30fc\u30cd\u30eb.reduce_sum",
                 "\u044f\u0434\u0440\u043e.reduce_sum", "\u03b1\u03b2\u03b3\u03b4.reduce_sum",
                 "caf\u00e9.reduce_sum", "\u6211\u7684\u6838\u5fc3.exp"):
        fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(aten_sum, name=free),))])
    # a name shipped for two devices (libtorch.sdpa_forward: cpu and cuda) is free on either, not
    # on a third
    sdpa = next(c for m in all_modules() for c in m.capsules if c.name == "libtorch.sdpa_forward")
    for device in (Device.CPU, Device.CUDA):
        fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(sdpa, device=device),))])
    with pytest.raises(RegistryError, match=re.escape("for libtorch/cuda, op scaled_dot_product_attention, "
                                                      "libtorch/cpu, op scaled_dot_product_attention;")):
        fast.with_capsule_modules([CapsuleModule("mylib", (dataclasses.replace(sdpa, device=Device.METAL),))])
    renamed = dataclasses.replace(aten_sum, name="mylib.reduce_sum")
    fast.with_capsule_modules([CapsuleModule("own", (renamed,))])


@pytest.mark.parametrize("name", ["a\nb", "aten\u200b.matmul", "mine\x1b[2J", "tab\there", "\u2028x"])
def test_names_that_reports_print_are_printable(name: str) -> None:
    """review108 F4: a capsule named ``"...\\n  relu: reference.relu provider=reference ..."``
    printed forged lines in ``audit_line`` and ``plan_report``, and a zero-width space passed the
    shipped-name check; capsule, module, profile and evidence names must now be printable."""
    matmul = next(c for m in all_modules() for c in m.capsules if c.name == "reference.matmul")
    code = f"U+{ord(next(c for c in name if not c.isprintable())):04X}"
    with pytest.raises(BackendValueError, match=re.escape(code)):
        dataclasses.replace(matmul, name=name)
    with pytest.raises(BackendValueError, match=re.escape(code)):
        CapsuleModule(name, (matmul,))
    fast = profiles.get("fast_cpu")
    with pytest.raises(BackendValueError, match=re.escape(code)):
        dataclasses.replace(fast, name=name)
    with pytest.raises(BackendValueError, match=re.escape(code)):
        ContractEvidence.test_suite(name)
    assert dataclasses.replace(matmul, name="мой.matmul").name == "мой.matmul"  # printable: any script


def test_a_label_with_hyphen_and_underscore_swapped_gets_the_label_it_means(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """review123 F6: ``objective="cross_entropy"`` (the function is ``cross_entropy``, the label
    ``cross-entropy``) was refused naming only the known labels; the one meant is named too, as
    for another case or a typing slip (review197 F3). A label near none keeps the original's
    message alone."""
    from torchlean.trainer import Objective

    meant = r"\(known: mse \| cross-entropy\); did you mean cross-entropy\?$"
    with pytest.raises(UnknownLabelError, match=meant):
        Objective.parse("cross_entropy")
    with pytest.raises(UnknownLabelError, match=r"; did you mean log_softmax\?$"):
        BackendOp.parse("log-softmax")
    with pytest.raises(UnknownLabelError, match=r"; did you mean native-cuda\?$"):
        Provider.parse("native_cuda")
    for label in ("Log_Softmax", "LOG-SOFTMAX", "log_sotfmax", "log_softmaxx"):  # case, a slip
        with pytest.raises(UnknownLabelError, match=r"; did you mean log_softmax\?$"):
            BackendOp.parse(label)
    # review200 F1: torch's names of other ops are no typos of these (sign is not sin)
    with pytest.raises(UnknownLabelError, match=r"; did you mean softmax\?$"):
        BackendOp.parse("ssoftmax")  # a doubled first letter is a slip too, but for torch's rrelu
    for label in ("bogus", "x", "", "log_softmax_", "sign", "tan", "elu", "log1p", "rsqrt", "relux", "rrelu"):
        with pytest.raises(UnknownLabelError) as caught:
            BackendOp.parse(label)
        assert "did you mean" not in str(caught.value)
    with pytest.raises(UnknownLabelError, match=r"; did you mean checked_cpu\?$"):
        profiles.get("checkd_cpu")  # profile names take a close spelling too, on the same device
    for name in ("fastcpu", "fast_cp", "checked_cpus"):  # typos of the device word (review201 F3)
        with pytest.raises(UnknownLabelError, match=r"; did you mean (fast|checked)_cpu\?$"):
            profiles.get(name)
    with pytest.raises(UnknownLabelError, match=r"; did you mean libtorch_forward_strict\?$"):
        profiles.get("libtorch_forward_strict_cuda")  # a CUDA profile by its device (review203 F7)
    for name in ("fast_cuda", "checked_tpu", "fast_gpu"):  # another device named
        with pytest.raises(UnknownLabelError) as caught:
            profiles.get(name)
        assert "did you mean" not in str(caught.value)
    # review126 F5: profile names, and select's own message for a word that is neither
    with pytest.raises(UnknownLabelError, match=r"; did you mean checked_cpu\?$"):
        profiles.get("checked-cpu")
    from torchlean.cli import main

    for word, hint in (("log-softmax", "; did you mean log_softmax?\n"), ("checked-cpu", "; did you mean "
                       "checked_cpu?\n"), ("bogus", "scaled_dot_product_attention)\n")):
        assert main(["select", "--profiles", "fast_cpu", word, "relu"]) == 2
        err = capsys.readouterr().err
        assert err.startswith(f"error: unknown profile {word} (known: ") and err.endswith(hint)


# ------------------------------------------------ review168: unordered containers where order matters


def _lab(name: str) -> CapsuleModule:
    return CapsuleModule(name, (dataclasses.replace(RELU, name=f"{name}.relu"),))


def test_with_capsule_modules_refuses_a_set_whose_order_would_pick_the_capsule() -> None:
    """review168 F1: a set of two modules holding a relu each selected one or the other by
    PYTHONHASHSEED (catalog order decides auto selection). A list keeps its order; a set is
    refused with the way to write one."""
    first, second = _lab("lab_a"), _lab("lab_b")
    for modules in ({first, second}, frozenset({first})):
        with pytest.raises(BackendTypeError, match=(
            rf"^with_capsule_modules: modules must be an ordered iterable of CapsuleModule, got a "
            rf"{type(modules).__name__} of {len(modules)} \(their order decides which capsule is selected, "
            r"and a set's order changes from one process to the next\); write a list in the order you want$"
        )):
            CHECKED_CPU.with_capsule_modules(modules)
    listed = CHECKED_CPU.with_capsule_modules([second, first])
    assert listed.plan_ops(["relu"]).capsule_names == ("lab_b.relu",)
    generated = CHECKED_CPU.with_capsule_modules(m for m in [first])  # a generator keeps its order
    assert generated.plan_ops(["relu"]).capsule_names == ("lab_a.relu",)


def test_a_registry_given_as_a_set_is_refused() -> None:
    with pytest.raises(BackendTypeError, match=r"^capsules must be an ordered iterable of KernelCapsule, "
                       r"got a set of 1 \(their order decides"):
        choose_capsule(POLICY, "relu", {RELU})


@pytest.mark.parametrize(
    ("ops", "message"),
    [
        ({"relu", "exp"}, "got a set of 2 (a plan keeps the ops' order, and a set's order changes from one "
         "process to the next); write a list in the order you want"),
        (frozenset({"relu"}), "got a frozenset of 1 (a plan keeps the ops' order"),
        ({"relu": 1}, "got a mapping of 1 (dict), which would be read by its keys; write a list of them"),
    ],
    ids=["set", "frozenset", "dict"],
)
def test_plan_ops_refuses_a_set_or_a_mapping_of_ops(ops: object, message: str) -> None:
    """review168 F2: a set of ops was planned in hash order (plan_report, audit rows and
    check_contracts reports changed with PYTHONHASHSEED), a dict by its keys without a word."""
    with pytest.raises(BackendTypeError) as info:
        CHECKED_CPU.plan_ops(ops)  # type: ignore[arg-type]
    assert str(info.value).startswith(f"{OPS_EXPECTED}, {message}")
    keys = {"relu": 1, "exp": 2}.keys()  # a dict's keys view: insertion order, accepted
    assert CHECKED_CPU.plan_ops(keys).capsule_names == ("reference.relu", "reference.exp")


def test_validate_modules_takes_a_set() -> None:
    """review169 F6: it checks names and identities, whose order does not matter; a set was
    refused with "their order decides which capsule is selected"."""
    validate_modules(set(CHECKED_CPU.capsule_modules))
    with pytest.raises(RegistryError, match="duplicate backend capsule identity"):
        twin = CapsuleModule("lab_b", (dataclasses.replace(RELU, name="lab_a.relu"),))
        validate_modules({_lab("lab_a"), twin})
