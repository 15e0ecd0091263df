"""The acceptance gate, its eight failure kinds and their verbatim messages, and binding."""

from __future__ import annotations

import dataclasses

import pytest
from backend_builders import make_capsule, misaligned

from torchlean.backend import profiles
from torchlean.backend.acceptance import (
    AcceptanceError,
    ContractsMisaligned,
    DeviceMismatch,
    EvidenceRejected,
    ForwardUnsupported,
    OperationMismatch,
    ProviderRejected,
    TrustRejected,
    VJPMismatch,
    accept,
    accept_graph_kernel_plan,
    acceptable,
    acceptance_failures,
)
from torchlean.backend.audit import ObligationReport
from torchlean.backend.binding import KernelHandler, bind, validate_eager_request
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractClaim, ContractEvidence
from torchlean.backend.errors import BindingError, TorchLeanError, UnknownLabelError
from torchlean.backend.fields import BackendLabelError, BackendTypeError, BackendValueError
from torchlean.backend.planner import PlannedKernel
from torchlean.backend.policy import AssurancePolicy, KernelPolicy, ProviderPreference
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.vocabulary import (
    BackendOp,
    ContractObligation,
    Device,
    Provider,
    TrustLevel,
    VJPMode,
)

B = BackendOp
CPU_POLICY = profiles.get("checked_cpu").policy
REF_RELU = next(c for c in reference.CAPSULES if c.name == "reference.relu")
NAME = "KernelHandler.name must be"


def test_every_failure_message_is_verbatim() -> None:
    report = ObligationReport(
        B.RELU,
        "reference.relu",
        ContractObligation.VALUE,
        ContractClaim.value_refinement(B.RELU),
        ContractEvidence.trusted_boundary("an external library"),
    )
    failures = [
        OperationMismatch(B.SIGMOID, B.RELU),
        ForwardUnsupported(B.RELU, "x.relu"),
        ContractsMisaligned(B.RELU, "x.relu"),
        TrustRejected(B.RELU, "x.relu", TrustLevel.TRUSTED_EXTERNAL),
        ProviderRejected(B.RELU, "x.relu", Provider.NATIVE_CUDA),
        DeviceMismatch(B.RELU, "x.relu", Device.CPU, Device.CUDA),
        VJPMismatch(B.RELU, "x.relu", VJPMode.BACKEND_VJP, VJPMode.TORCHLEAN_TAPE),
        EvidenceRejected(report),
    ]
    assert [f.kind for f in failures] == [
        "operationMismatch",
        "forwardUnsupported",
        "contractsMisaligned",
        "trustRejected",
        "providerRejected",
        "deviceMismatch",
        "vjpMismatch",
        "evidenceRejected",
    ]
    assert [f.message for f in failures] == [
        "planned operation sigmoid does not match capsule operation relu",
        "x.relu has no forward implementation for relu",
        "x.relu has misaligned contract claims for relu",
        "x.relu uses rejected trust level trusted-external for relu",
        "x.relu uses rejected provider native-cuda for relu",
        "x.relu targets cuda, not requested cpu, for relu",
        "x.relu offers torchlean-tape, not requested backend-vjp, for relu",
        "reference.relu has rejected value evidence for relu: trusted boundary: an external library",
    ]


def test_accept_a_genuine_plan() -> None:
    planned = profiles.get("checked_cpu").plan_ops([B.RELU]).kernels[0]
    accepted = accept(planned, CPU_POLICY)
    assert (accepted.op, accepted.capsule, accepted.policy) == (B.RELU, REF_RELU, CPU_POLICY)
    assert repr(accepted) == "AcceptedKernel(relu, reference.relu)"
    assert acceptable(planned, CPU_POLICY)


def test_forged_operation_is_refused() -> None:
    with pytest.raises(AcceptanceError) as caught:
        accept(PlannedKernel(B.SIGMOID, REF_RELU), CPU_POLICY)
    assert caught.value.failures == (OperationMismatch(B.SIGMOID, B.RELU),)
    assert isinstance(caught.value, TorchLeanError)
    assert str(caught.value) == "planned operation sigmoid does not match capsule operation relu"


def test_forged_trust_is_refused() -> None:
    relabelled = dataclasses.replace(REF_RELU, trust_level=TrustLevel.TRUSTED_EXTERNAL)
    failures = acceptance_failures(PlannedKernel(B.RELU, relabelled), CPU_POLICY)
    assert failures == (TrustRejected(B.RELU, "reference.relu", TrustLevel.TRUSTED_EXTERNAL),)


def test_all_failures_are_collected_in_order() -> None:
    capsule = misaligned(
        make_capsule(
            "x.relu",
            B.RELU,
            provider=Provider.NATIVE_CUDA,
            device=Device.CUDA,
            trust=TrustLevel.TRUSTED_EXTERNAL,
            forward=False,
            vjp_mode=VJPMode.NONE,
            value_evidence=ContractEvidence.trusted_boundary("vendor"),
        )
    )
    policy = KernelPolicy(provider=ProviderPreference.only(Provider.REFERENCE))
    failures = acceptance_failures(PlannedKernel(B.ADD, capsule), policy)
    assert [f.kind for f in failures] == [
        "operationMismatch",
        "forwardUnsupported",
        "contractsMisaligned",
        "trustRejected",
        "providerRejected",
        "deviceMismatch",
        "vjpMismatch",
        "evidenceRejected",
        "evidenceRejected",
    ]
    obligations = [f.report.obligation for f in failures if isinstance(f, EvidenceRejected)]
    # the misaligned capsule carries its trusted value descriptor in both the shape and value fields
    assert obligations == [ContractObligation.SHAPE, ContractObligation.VALUE]


def test_acceptance_does_not_check_availability() -> None:
    # the native-cuda capsule is not declared by a CPU availability, yet accept only checks the policy
    native = next(c for c in profiles.get("checked_cuda").registry() if c.name == "native_cuda.relu")
    policy = KernelPolicy(device=Device.CUDA)
    assert accept(PlannedKernel(B.RELU, native), policy).capsule is native


def _execute(capsule: KernelCapsule) -> str:
    return f"ran {capsule.name}"


def test_bind_and_run_the_matching_handler() -> None:
    accepted = accept(PlannedKernel(B.RELU, REF_RELU), CPU_POLICY)
    handler = KernelHandler("TorchLean reference CPU", B.RELU, Provider.REFERENCE, Device.CPU, _execute)
    assert handler.matches_capsule(REF_RELU)
    executable = bind(accepted, handler)
    assert executable.run() == "ran reference.relu"
    assert executable.capsule is REF_RELU
    assert executable.accepted is accepted


@pytest.mark.parametrize(
    ("handler", "message", "fragment"),
    [
        (
            KernelHandler("h", B.ADD, Provider.REFERENCE, Device.CPU, _execute),
            "handler `h` implements `add`, but capsule `reference.relu` implements `relu`",
            "implements `add`",
        ),
        (
            KernelHandler("h", B.RELU, Provider.TORCHLEAN, Device.CPU, _execute),
            "handler `h` uses provider `torchlean`, but capsule `reference.relu` selects `reference`",
            "uses provider",
        ),
        (
            KernelHandler("h", B.RELU, Provider.REFERENCE, Device.CUDA, _execute),
            "handler `h` targets `cuda`, but capsule `reference.relu` targets `cpu`",
            "targets `cuda`",
        ),
    ],
)
def test_bind_refuses_mismatching_handlers(handler: KernelHandler[str], message: str, fragment: str) -> None:
    accepted = accept(PlannedKernel(B.RELU, REF_RELU), CPU_POLICY)
    with pytest.raises(BindingError) as caught:
        bind(accepted, handler)
    assert str(caught.value) == message
    assert fragment in str(caught.value)


def test_bind_refuses_a_non_handler_without_its_decorator() -> None:
    """review161 F9: under ``python -O`` (beartype checks nothing) a non-handler raised a raw
    AttributeError; bind's own check names it, as accept names its arguments."""
    import subprocess
    import sys

    from torchlean.backend.binding import bind as checked_bind
    from torchlean.backend.fields import BackendTypeError

    accepted = accept(PlannedKernel(B.RELU, REF_RELU), CPU_POLICY)
    undecorated = checked_bind.__wrapped__  # what python -O runs
    with pytest.raises(BackendTypeError, match=r"^bind: handler must be a KernelHandler, got 'x' \(str\)$"):
        undecorated(accepted, "x")
    script = ("from torchlean.backend import profiles\nfrom torchlean.backend.acceptance import accept\n"
              "from torchlean.backend.binding import bind\n"
              "from torchlean.backend.vocabulary import BackendOp\n"
              "p = profiles.get('checked_cpu')\n"
              "a = accept(p.plan_ops([BackendOp.RELU]).kernels[0], p.policy)\n"
              "try:\n    bind(a, 'x')\nexcept Exception as e:\n    print(type(e).__name__, e)\n")
    done = subprocess.run([sys.executable, "-O", "-c", script], capture_output=True, text=True, check=True)
    assert done.stdout == "BackendTypeError bind: handler must be a KernelHandler, got 'x' (str)\n"


def test_bind_checks_op_before_provider_before_device() -> None:
    accepted = accept(PlannedKernel(B.RELU, REF_RELU), CPU_POLICY)
    everything_wrong = KernelHandler("h", B.ADD, Provider.TORCHLEAN, Device.CUDA, _execute)
    with pytest.raises(BindingError, match="implements `add`"):
        bind(accepted, everything_wrong)
    provider_and_device = KernelHandler("h", B.RELU, Provider.TORCHLEAN, Device.CUDA, _execute)
    with pytest.raises(BindingError, match="uses provider"):
        bind(accepted, provider_and_device)


def test_validate_eager_request() -> None:
    validate_eager_request(REF_RELU, B.RELU, Device.CPU)
    with pytest.raises(BindingError) as caught:
        validate_eager_request(REF_RELU, B.ADD, Device.CUDA)
    assert str(caught.value) == "capsule `reference.relu` implements `relu`, not `add`"
    with pytest.raises(BindingError) as caught:
        validate_eager_request(REF_RELU, B.RELU, Device.CUDA)
    assert str(caught.value) == "capsule `reference.relu` targets `cpu`, not `cuda`"


def test_a_handler_built_with_labels_matches_binds_and_runs() -> None:
    """review121 F2: a handler's op, provider and device given as labels were stored unparsed: the
    handler matched no capsule and ``bind`` crashed with an ``AttributeError`` building its own
    message. They are parsed as every other backend record parses them."""
    labelled = KernelHandler("h", "relu", "reference", "cpu", _execute)  # type: ignore[arg-type]
    assert (labelled.op, labelled.provider, labelled.device) == (B.RELU, Provider.REFERENCE, Device.CPU)
    assert labelled == KernelHandler("h", B.RELU, Provider.REFERENCE, Device.CPU, _execute)
    assert labelled.matches_capsule(REF_RELU)
    accepted = accept(PlannedKernel(B.RELU, REF_RELU), CPU_POLICY)
    assert bind(accepted, labelled).run() == "ran reference.relu"
    wrong_device = KernelHandler("h", "relu", "reference", "cuda", _execute)  # type: ignore[arg-type]
    with pytest.raises(BindingError) as caught:  # the verbatim message, not an AttributeError
        bind(accepted, wrong_device)
    assert str(caught.value) == "handler `h` targets `cuda`, but capsule `reference.relu` targets `cpu`"


@pytest.mark.parametrize(
    ("fields", "error", "message"),
    [
        (
            ("h", "gpu", "reference", "cpu", _execute),
            BackendLabelError,
            f"KernelHandler.op: unknown op gpu (known: {' | '.join(BackendOp.labels())})",
        ),
        (
            ("h", B.RELU, Device.CPU, Device.CPU, _execute),
            BackendTypeError,
            "KernelHandler.provider must be a Provider or one of its labels "
            f"({' | '.join(Provider.labels())}), got <Device.CPU: 'cpu'> (Device)",
        ),
        (
            ("h", B.RELU, Provider.REFERENCE, "gpu", _execute),
            BackendLabelError,
            "KernelHandler.device: unknown device gpu (known targets: ",
        ),
        (
            ("h", B.RELU, Provider.REFERENCE, Device.CPU, None),
            BackendTypeError,
            "KernelHandler.execute must be a callable (execute(capsule, *args)), got None (NoneType)",
        ),
        (("", B.RELU, Provider.REFERENCE, Device.CPU, _execute), BackendValueError, f"{NAME} a non-empty"),
        (("a\nb", B.RELU, Provider.REFERENCE, Device.CPU, _execute), BackendValueError, f"{NAME} printable"),
        ((None, B.RELU, Provider.REFERENCE, Device.CPU, _execute), BackendTypeError, f"{NAME} a non-empty"),
    ],
    ids=["unknown-op", "provider-of-another-enum", "unknown-device", "execute-none", "empty-name",
         "newline-name", "name-none"],
)
def test_a_handler_with_a_bad_field_is_refused_where_it_is_built(
    fields: tuple[object, ...], error: type[Exception], message: str
) -> None:
    """review121 F2: ``KernelHandler('h', 'gpu', ...)`` and ``KernelHandler(..., None)`` were built
    without complaint; each field is checked as ``KernelCapsule`` checks its own."""
    with pytest.raises(error) as caught:
        KernelHandler(*fields)  # type: ignore[arg-type]
    assert str(caught.value).startswith(message)
    if error is BackendLabelError:
        assert isinstance(caught.value, UnknownLabelError)


def test_validate_eager_request_takes_labels_and_refuses_what_is_not_a_capsule() -> None:
    """review121 F2: right labels crashed with ``AttributeError: 'str' object has no attribute
    'label'``; they now pass, wrong labels give the verbatim refusal, an unknown label is an
    unknown label, and a capsule argument that is no capsule is named."""
    validate_eager_request(REF_RELU, "relu", "cpu")  # type: ignore[arg-type]
    with pytest.raises(BindingError) as caught:
        validate_eager_request(REF_RELU, "add", "cuda")  # type: ignore[arg-type]
    assert str(caught.value) == "capsule `reference.relu` implements `relu`, not `add`"
    with pytest.raises(BindingError) as caught:
        validate_eager_request(REF_RELU, B.RELU, "cuda")  # type: ignore[arg-type]
    assert str(caught.value) == "capsule `reference.relu` targets `cpu`, not `cuda`"
    with pytest.raises(UnknownLabelError, match=r"^unknown device gpu \(known targets: "):
        validate_eager_request(REF_RELU, "relu", "gpu")  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError) as refused:
        validate_eager_request(None, "relu", "cpu")  # type: ignore[arg-type]
    assert str(refused.value) == "capsule must be a KernelCapsule, got None (NoneType)"
    with pytest.raises(BackendTypeError, match=r"^device must be a Device or one of its labels \("):
        validate_eager_request(REF_RELU, B.RELU, Provider.REFERENCE)  # type: ignore[arg-type]


def test_external_policy_accepts_the_libtorch_forward() -> None:
    profile = profiles.get("libtorch_forward_cuda")
    planned = profile.plan_ops([B.SCALED_DOT_PRODUCT_ATTENTION]).kernels[0]
    assert accept(planned, profile.policy).capsule.name == "libtorch.sdpa_forward"
    strict_policy = dataclasses.replace(profile.policy, assurance=AssurancePolicy.CHECKED)
    with pytest.raises(AcceptanceError) as caught:
        accept(planned, strict_policy)
    assert [f.kind for f in caught.value.failures] == ["trustRejected", "evidenceRejected"]


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda pk, pol: accept(None, pol),
            "acceptance: planned must be a PlannedKernel, got None (NoneType)",
        ),
        (
            lambda pk, pol: accept(pk, "checked"),
            "acceptance: policy must be a KernelPolicy, got 'checked' (str)",
        ),
        (
            lambda pk, pol: acceptance_failures(pk.capsule, pol),
            "acceptance: planned must be a PlannedKernel, got KernelCapsule(",
        ),
        (
            lambda pk, pol: accept_graph_kernel_plan([pk], pol),
            "acceptance: graph_plan must be a GraphKernelPlan, got [PlannedKernel(",
        ),
    ],
    ids=["planned-None", "policy-label", "capsule-for-planned", "list-for-graph"],
)
def test_gate_arguments_of_the_wrong_type_are_backend_type_errors(call: object, message: str) -> None:
    """The gate's public functions name the argument, the value and the type accepted (was an
    AttributeError from deep inside the gate)."""
    profile = profiles.get("checked_cpu")
    planned = profile.plan_ops([BackendOp.RELU]).kernels[0]
    with pytest.raises(BackendTypeError) as caught:
        call(planned, profile.policy)  # type: ignore[operator]
    assert str(caught.value).startswith(message)
    assert isinstance(caught.value, TorchLeanError) and isinstance(caught.value, TypeError)


def test_a_forged_plan_keeps_its_planned_op_in_the_audit() -> None:
    """A PlannedKernel pairing relu with reference.add audits as relu (the planned op), not add."""
    from torchlean.backend.planner import KernelPlan

    add = next(c for c in profiles.CHECKED_CPU.registry() if c.name == "reference.add")
    audit = KernelPlan((PlannedKernel(BackendOp.RELU, add),)).audit()
    assert audit.kernels[0].op is BackendOp.RELU
    assert {report.op for report in audit.obligation_reports()} == {BackendOp.RELU}


def test_trusted_external_ops_keep_order_and_duplicates() -> None:
    plan = profiles.LIBTORCH_FORWARD_CPU.plan_ops(
        ["scaled_dot_product_attention", "relu", "scaled_dot_product_attention"]
    )
    assert plan.capsule_names == ("libtorch.sdpa_forward", "reference.relu", "libtorch.sdpa_forward")
    attention = "scaled_dot_product_attention"
    assert plan.audit().trusted_external_ops == (attention, attention)


def test_check_contracts_refuses_a_plan_in_place_of_its_audit() -> None:
    from torchlean.backend import audit

    plan = profiles.CHECKED_CPU.plan_ops(["relu"])
    with pytest.raises(BackendTypeError, match=r"^audit must be a KernelPlanAudit, got KernelPlan\("):
        audit.check_contracts("checked", plan)  # type: ignore[arg-type]
    assert audit.check_contracts("checked", plan.audit()).accepted
