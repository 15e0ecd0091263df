"""Hypothesis properties of selection and acceptance over random catalogs and policies.

The oracle below restates anchor-backend.md §2.1–§2.3 and §2.12 directly from capsule fields,
independently of ``torchlean.backend.capsule``.
"""

from __future__ import annotations

import dataclasses

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean.backend.acceptance import AcceptanceError, accept, acceptance_failures
from torchlean.backend.capsule import KernelCapsule, choose_capsule
from torchlean.backend.contracts import (
    ClaimKind,
    ContractClaim,
    ContractDescriptor,
    ContractEvidence,
    EvidenceKind,
    NumericalPolicy,
)
from torchlean.backend.errors import PlanningError
from torchlean.backend.planner import PlannedKernel, plan_ops
from torchlean.backend.policy import AssurancePolicy, KernelPolicy, PreferenceKind, ProviderPreference
from torchlean.backend.vocabulary import (
    BackendOp,
    ContractObligation,
    Device,
    Provider,
    ReductionPolicy,
    TensorLayout,
    TrustLevel,
    VJPMode,
)

OPS = [BackendOp.RELU, BackendOp.MATMUL, BackendOp.RAND_UNIFORM]
PROVIDERS = [Provider.REFERENCE, Provider.TORCHLEAN, Provider.NATIVE_CUDA, Provider.LIBTORCH]
DEVICES = [Device.CPU, Device.CUDA]

ops = st.sampled_from(OPS)
modes = st.sampled_from(list(VJPMode))
evidence = st.one_of(
    st.builds(ContractEvidence.runtime_guard, st.sampled_from(["guards.g1", "guards.g2"])),
    st.builds(ContractEvidence.test_suite, st.sampled_from(["s1", "s2"])),
    st.builds(ContractEvidence.trusted_boundary, st.just("vendor")),
    st.just(ContractEvidence.not_applicable()),
)


@st.composite
def claims(draw: st.DrawFn, op: BackendOp, mode: VJPMode, obligation: ContractObligation) -> ContractClaim:
    """Mostly the aligned claim for the field; sometimes any claim (possibly misfiled)."""
    if draw(st.integers(0, 3)) == 0:
        claim_op = draw(st.sampled_from([op, *OPS]))
        kind = draw(st.sampled_from(list(ClaimKind)))
        if kind is ClaimKind.LAYOUT_COMPATIBILITY:
            return ContractClaim.layout_compatibility(claim_op, draw(st.sampled_from(list(TensorLayout))))
        if kind is ClaimKind.VJP_REFINEMENT:
            return ContractClaim.vjp_refinement(claim_op, draw(modes))
        return ContractClaim(kind, claim_op)
    match obligation:
        case ContractObligation.SHAPE:
            return ContractClaim.shape_safety(op)
        case ContractObligation.LAYOUT:
            return ContractClaim.layout_compatibility(op, TensorLayout.CANONICAL_TENSOR)
        case ContractObligation.VALUE:
            return ContractClaim.value_refinement(op)
        case ContractObligation.VJP:
            if mode is VJPMode.NONE:
                return ContractClaim.vjp_unavailable(op)
            return ContractClaim.vjp_refinement(op, mode)


@st.composite
def capsules(draw: st.DrawFn) -> KernelCapsule:
    op = draw(ops)
    mode = draw(modes)
    descriptors = [
        ContractDescriptor(draw(claims(op, mode, obligation)), "summary", draw(evidence))
        for obligation in ContractObligation
    ]
    return KernelCapsule(
        name=f"c{draw(st.integers(0, 99))}",
        op=op,
        provider=draw(st.sampled_from(PROVIDERS)),
        device=draw(st.sampled_from(DEVICES)),
        trust_level=draw(st.sampled_from(list(TrustLevel))),
        supports_forward=draw(st.booleans()),
        vjp_mode=mode,
        shape_contract=descriptors[0],
        layout_contract=descriptors[1],
        value_contract=descriptors[2],
        vjp_contract=descriptors[3],
        numerical_policy=NumericalPolicy(draw(st.sampled_from(list(ReductionPolicy)))),
    )


preferences = st.one_of(
    st.just(ProviderPreference.auto()),
    st.builds(ProviderPreference.prefer, st.sampled_from(PROVIDERS)),
    st.builds(ProviderPreference.only, st.sampled_from(PROVIDERS)),
)
policies = st.builds(
    KernelPolicy,
    device=st.sampled_from(DEVICES),
    provider=preferences,
    assurance=st.sampled_from([AssurancePolicy.CHECKED, AssurancePolicy.EXTERNAL]),
    vjp_mode=modes,
)
catalogs = st.lists(capsules(), max_size=12)


# --- independent oracle ------------------------------------------------------------------------------


def oracle_aligned(c: KernelCapsule) -> bool:
    def ok(obligation: ContractObligation, claim: ContractClaim) -> bool:
        if claim.op is not c.op:
            return False
        if obligation is ContractObligation.SHAPE:
            return claim.kind is ClaimKind.SHAPE_SAFETY
        if obligation is ContractObligation.LAYOUT:
            return claim.kind is ClaimKind.LAYOUT_COMPATIBILITY
        if obligation is ContractObligation.VALUE:
            return claim.kind is ClaimKind.VALUE_REFINEMENT
        if claim.kind is ClaimKind.VJP_REFINEMENT:
            return claim.mode is c.vjp_mode and c.vjp_mode is not VJPMode.NONE
        return claim.kind is ClaimKind.VJP_UNAVAILABLE and c.vjp_mode is VJPMode.NONE

    fields = [c.shape_contract, c.layout_contract, c.value_contract, c.vjp_contract]
    return all(ok(o, d.claim) for o, d in zip(ContractObligation, fields, strict=True))


def oracle_conjuncts(policy: KernelPolicy, c: KernelCapsule) -> dict[str, bool]:
    if policy.vjp_mode is VJPMode.NONE or c.op in (BackendOp.RAND_UNIFORM, BackendOp.BERNOULLI_MASK):
        vjp_ok = True
    elif policy.vjp_mode is VJPMode.TORCHLEAN_TAPE:
        vjp_ok = c.vjp_mode is not VJPMode.NONE
    else:
        vjp_ok = c.vjp_mode is VJPMode.BACKEND_VJP
    return {
        "forward": c.supports_forward,
        "aligned": oracle_aligned(c),
        "trust": c.trust_level is TrustLevel.CHECKED or policy.assurance.allow_trusted_external,
        "provider": policy.provider.kind is not PreferenceKind.ONLY or policy.provider.provider is c.provider,
        "device": policy.device is c.device,
        "vjp": vjp_ok,
    }


def oracle_admissible(policy: KernelPolicy, c: KernelCapsule) -> bool:
    return all(oracle_conjuncts(policy, c).values())


def oracle_evidence_ok(policy: KernelPolicy, c: KernelCapsule) -> bool:
    kinds = [d.evidence.kind for d in (c.shape_contract, c.layout_contract, c.value_contract, c.vjp_contract)]
    return policy.assurance.allow_trusted_external or EvidenceKind.TRUSTED_BOUNDARY not in kinds


# --- properties ----------------------------------------------------------------------------------------


@settings(max_examples=150, deadline=None)
@given(policies, ops, catalogs)
def test_planner_never_returns_an_inadmissible_capsule(
    policy: KernelPolicy, op: BackendOp, catalog: list[KernelCapsule]
) -> None:
    chosen = choose_capsule(policy, op, catalog)
    eligible = [c for c in catalog if c.op is op and oracle_admissible(policy, c)]
    if chosen is None:
        assert eligible == []
        return
    assert any(chosen is c for c in catalog)
    assert chosen.op is op
    assert oracle_admissible(policy, chosen)
    if policy.provider.kind is PreferenceKind.PREFER:
        preferred = [c for c in eligible if c.provider is policy.provider.provider]
        assert chosen is (preferred[0] if preferred else eligible[0])
    else:
        assert chosen is eligible[0]


@settings(max_examples=150, deadline=None)
@given(policies, st.sampled_from(PROVIDERS), ops, catalogs)
def test_preference_never_overrides_trust_device_or_vjp(
    policy: KernelPolicy, provider: Provider, op: BackendOp, catalog: list[KernelCapsule]
) -> None:
    auto = dataclasses.replace(policy, provider=ProviderPreference.auto())
    prefer = dataclasses.replace(policy, provider=ProviderPreference.prefer(provider))
    chosen_auto = choose_capsule(auto, op, catalog)
    chosen_prefer = choose_capsule(prefer, op, catalog)
    # a preference chooses among the same eligible capsules: it can neither create nor remove a choice
    assert (chosen_auto is None) == (chosen_prefer is None)
    if chosen_prefer is not None:
        conjuncts = oracle_conjuncts(prefer, chosen_prefer)
        assert conjuncts["trust"] and conjuncts["device"] and conjuncts["vjp"]
        eligible_preferred = [
            c for c in catalog if c.op is op and c.provider is provider and oracle_admissible(auto, c)
        ]
        assert (chosen_prefer.provider is provider) == bool(eligible_preferred)


@settings(max_examples=250, deadline=None)
@given(policies, ops, capsules())
def test_accept_succeeds_exactly_when_all_conjuncts_and_evidence_hold(
    policy: KernelPolicy, op: BackendOp, capsule: KernelCapsule
) -> None:
    expected = op is capsule.op and oracle_admissible(policy, capsule) and oracle_evidence_ok(policy, capsule)
    planned = PlannedKernel(op, capsule)
    if expected:
        accepted = accept(planned, policy)
        assert (accepted.op, accepted.capsule, accepted.policy) == (op, capsule, policy)
    else:
        with pytest.raises(AcceptanceError) as caught:
            accept(planned, policy)
        assert caught.value.failures == acceptance_failures(planned, policy)
        conjuncts = oracle_conjuncts(policy, capsule)
        expected_kinds = [
            kind
            for kind, failed in (
                ("operationMismatch", op is not capsule.op),
                ("forwardUnsupported", not conjuncts["forward"]),
                ("contractsMisaligned", not conjuncts["aligned"]),
                ("trustRejected", not conjuncts["trust"]),
                ("providerRejected", not conjuncts["provider"]),
                ("deviceMismatch", not conjuncts["device"]),
                ("vjpMismatch", not conjuncts["vjp"]),
            )
            if failed
        ]
        if not policy.assurance.allow_trusted_external:
            descriptors = (
                capsule.shape_contract,
                capsule.layout_contract,
                capsule.value_contract,
                capsule.vjp_contract,
            )
            expected_kinds += [
                "evidenceRejected" for d in descriptors if d.evidence.kind is EvidenceKind.TRUSTED_BOUNDARY
            ]
        assert [f.kind for f in caught.value.failures] == expected_kinds


@settings(max_examples=100, deadline=None)
@given(policies, st.lists(ops, max_size=6), catalogs)
def test_plan_ops_reports_exactly_the_missing_ops(
    policy: KernelPolicy, requested: list[BackendOp], catalog: list[KernelCapsule]
) -> None:
    missing = list(dict.fromkeys(op for op in requested if choose_capsule(policy, op, catalog) is None))
    if missing:
        with pytest.raises(PlanningError) as caught:
            plan_ops(policy, catalog, requested)
        assert caught.value.messages == [
            f"no admissible kernel capsule for op {op.label} on device {policy.device.label}"
            for op in missing
        ]
    else:
        plan = plan_ops(policy, catalog, requested)
        assert [k.op for k in plan.kernels] == requested
        assert all(oracle_admissible(policy, k.capsule) and k.capsule.op is k.op for k in plan.kernels)
