"""The kernel capsule record, contract alignment, admissibility and selection.

Source: the seed chapter ("Kernel Capsules", "Capsule Contracts And Evidence",
"Forward And Backward Ownership"); anchor-backend.md §1.16, §2.1–§2.3.

A :class:`KernelCapsule` describes an implementation contract before any handler is called.
The planner may select it only when it is *admissible* under a :class:`KernelPolicy`: it supports
the forward pass, its four claims sit in their own fields (alignment), the policy accepts its trust
label, the provider preference allows it, the device matches and its VJP mode fits the policy.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchlean.backend.contracts import (
    ClaimKind,
    ContractClaim,
    ContractDescriptor,
    EvidenceKind,
    NumericalPolicy,
    obligation_order,
)
from torchlean.backend.fields import (
    bool_field,
    enum_field,
    instance_argument,
    instance_field,
    iterable_argument,
    name_field,
    parse_member,
)
from torchlean.backend.policy import KernelPolicy, PreferenceKind
from torchlean.backend.vocabulary import (
    BackendOp,
    ContractObligation,
    Device,
    LabelledEnum,
    Provider,
    TrustLevel,
    VJPMode,
)

__all__ = [
    "CLAIMS_RULE",
    "Condition",
    "KernelCapsule",
    "admissible",
    "allowed_by",
    "choose_capsule",
    "contracts_aligned",
    "first_claim_difference",
    "first_failed_condition",
    "matches_device",
    "matches_obligation",
    "matches_preference",
    "matches_vjp",
]


@dataclass(frozen=True, slots=True)
class KernelCapsule:
    """One registered implementation of a :class:`BackendOp` and its contracts.

    Equality is full structural equality over every field (summaries and provenance included);
    :meth:`same_identity` compares only ``(name, op, provider, device)``. Every field is checked
    when the record is built: ``name`` a non-empty string; ``op``, ``provider``, ``device``,
    ``trust_level`` and ``vjp_mode`` a member or its label (stored as the member);
    ``supports_forward`` a bool; the four contracts :class:`ContractDescriptor` s; the numerical
    policy a :class:`NumericalPolicy`. Contract *alignment* is not checked here: a misaligned
    capsule is a legal record that planning never selects (admissibility, anchor-backend.md §2.1).

    Raises:
        BackendTypeError: a field of the wrong type (the message names the field and the value).
        BackendValueError: an unknown label or an empty name.
    """

    name: str
    op: BackendOp
    provider: Provider
    device: Device
    trust_level: TrustLevel
    supports_forward: bool
    vjp_mode: VJPMode
    shape_contract: ContractDescriptor
    layout_contract: ContractDescriptor
    value_contract: ContractDescriptor
    vjp_contract: ContractDescriptor
    numerical_policy: NumericalPolicy

    def __post_init__(self) -> None:
        name_field(self, "name")
        enum_field(self, "op", BackendOp)
        enum_field(self, "provider", Provider)
        enum_field(self, "device", Device)
        enum_field(self, "trust_level", TrustLevel)
        bool_field(self, "supports_forward")
        enum_field(self, "vjp_mode", VJPMode)
        for name in ("shape_contract", "layout_contract", "value_contract", "vjp_contract"):
            instance_field(self, name, ContractDescriptor)
        instance_field(self, "numerical_policy", NumericalPolicy)

    @property
    def identity(self) -> tuple[str, BackendOp, Provider, Device]:
        return (self.name, self.op, self.provider, self.device)

    def same_identity(self, other: KernelCapsule) -> bool:
        return self.identity == other.identity

    @property
    def is_trusted_external(self) -> bool:
        return self.trust_level is TrustLevel.TRUSTED_EXTERNAL

    def contracts(self) -> tuple[tuple[ContractObligation, ContractDescriptor], ...]:
        """The four descriptors in the fixed order shape, layout, value, vjp."""
        descriptors = (self.shape_contract, self.layout_contract, self.value_contract, self.vjp_contract)
        return tuple(zip(obligation_order(), descriptors, strict=True))

    @property
    def contracts_aligned(self) -> bool:
        """Whether each claim belongs in its field (see :func:`contracts_aligned`)."""
        return _aligned(self)


_CLAIM_FIELDS = (
    "trust_level",
    "supports_forward",
    "vjp_mode",
    "shape_contract",
    "layout_contract",
    "value_contract",
    "vjp_contract",
    "numerical_policy",
)
"""The fields of a capsule that describe the code behind it (all but its identity)."""


def _claim_text(value: object) -> str:
    """A claim field as reports print it: a contract's claim and evidence, a policy's reduction,
    a member's label."""
    if isinstance(value, ContractDescriptor):
        return f"{value.claim.label}; {value.evidence.label}"
    if isinstance(value, NumericalPolicy):
        return f"reduction {value.reduction.label}"
    if isinstance(value, LabelledEnum):
        return value.label
    return repr(value)


CLAIMS_RULE = (
    "A capsule run on a linked handler may rename that handler's capsule, make it forward-only or "
    "lower its trust to trusted-external, not change what it claims"
)
"""What a downstream capsule may change of the shipped capsule whose handler it runs on."""


def first_claim_difference(capsule: KernelCapsule, own: KernelCapsule) -> str | None:
    """How ``capsule`` claims something about the code ``own`` describes that ``own`` does not
    claim, or None when its claims are ``own``'s.

    ``own`` is the built-in capsule of a linked handler; ``capsule`` one selected to run on that
    handler (same op, provider and device). It may claim less (:data:`CLAIMS_RULE`): have another
    name, be forward-only (VJP mode ``none``; its ``vjpUnavailable`` contract then has
    ``notApplicable`` evidence and no provenance, as every shipped forward-only capsule's, its
    summary in its own words, whether or not ``own`` has a VJP) or be ``trusted-external`` where
    ``own`` is ``checked``. Any other field that differs — a contract's claim, summary, evidence
    or provenance, the reduction order — would be a record of code that did not run. Returns e.g.
    ``numerical policy: reduction fixed-left (the handler's capsule aten.matmul: reduction
    implementation-defined)``.
    """
    forward_only = capsule.vjp_mode is VJPMode.NONE
    for field in _CLAIM_FIELDS:
        mine, theirs = getattr(capsule, field), getattr(own, field)
        if forward_only and field == "vjp_mode":
            continue
        if forward_only and field == "vjp_contract":
            if mine.evidence.kind is not EvidenceKind.NOT_APPLICABLE:
                return (
                    f"vjp contract: {_claim_text(mine)} (a forward-only capsule's VJP contract has "
                    "notApplicable evidence: no backward code runs)"
                )
            if mine.provenance:
                return (
                    f"vjp contract: provenance {mine.provenance} (a forward-only capsule's VJP "
                    "contract names no provenance: no backward code runs)"
                )
            continue
        if field == "trust_level" and mine is TrustLevel.TRUSTED_EXTERNAL:
            continue
        if mine == theirs:
            continue
        shown, own_shown = _claim_text(mine), _claim_text(theirs)
        if shown == own_shown and isinstance(mine, ContractDescriptor):
            shown, own_shown = repr(mine.summary), repr(theirs.summary)
            if shown == own_shown:
                shown, own_shown = f"provenance {mine.provenance}", f"provenance {theirs.provenance}"
        what = field.replace("_", " ")
        return f"{what}: {shown} (the handler's capsule {own.name}: {own_shown})"
    return None


def matches_obligation(
    op: BackendOp, vjp_mode: VJPMode, obligation: ContractObligation, claim: ContractClaim
) -> bool:
    """Whether ``claim`` may stand in the ``obligation`` field of a capsule for ``op``.

    A VJP refinement must name exactly the capsule's VJP mode (never ``none``); a forward-only
    capsule (VJP mode ``none``) must carry ``vjpUnavailable``. Any other pairing, e.g. a value
    claim in the shape field, is misaligned.
    """
    if claim.op is not op:
        return False
    match obligation, claim.kind:
        case ContractObligation.SHAPE, ClaimKind.SHAPE_SAFETY:
            return True
        case ContractObligation.LAYOUT, ClaimKind.LAYOUT_COMPATIBILITY:
            return True
        case ContractObligation.VALUE, ClaimKind.VALUE_REFINEMENT:
            return True
        case ContractObligation.VJP, ClaimKind.VJP_REFINEMENT:
            return claim.mode is vjp_mode and vjp_mode is not VJPMode.NONE
        case ContractObligation.VJP, ClaimKind.VJP_UNAVAILABLE:
            return vjp_mode is VJPMode.NONE
        case _:
            return False


def contracts_aligned(capsule: KernelCapsule) -> bool:
    """All four claims match their obligation, op and VJP mode (anchor-backend.md §2.1).

    Raises:
        BackendTypeError: ``capsule must be a KernelCapsule, got None (NoneType)``.
    """
    return _aligned(instance_argument(capsule, KernelCapsule, "capsule"))


def _aligned(capsule: KernelCapsule) -> bool:
    """:func:`contracts_aligned` of a capsule already checked (planning asks once per capsule)."""
    return all(
        matches_obligation(capsule.op, capsule.vjp_mode, obligation, descriptor.claim)
        for obligation, descriptor in capsule.contracts()
    )


def allowed_by(policy: KernelPolicy, capsule: KernelCapsule) -> bool:
    """Trust filter on the capsule's *label* (its evidence is not looked at here). The policy's
    label is a ceiling: a trusted-external capsule needs ``allow_trusted_external`` whatever an
    assurance subclass's ``accepts_trust`` says (a subclass may only narrow; review145 F3)."""
    if capsule.trust_level is TrustLevel.TRUSTED_EXTERNAL and not policy.assurance.allow_trusted_external:
        return False
    return policy.assurance.accepts_trust(capsule.trust_level)


def matches_preference(policy: KernelPolicy, capsule: KernelCapsule) -> bool:
    """``auto`` and ``prefer`` admit every provider; ``only(p)`` admits ``p`` alone."""
    return policy.provider.admits(capsule.provider)


def matches_device(policy: KernelPolicy, capsule: KernelCapsule) -> bool:
    """Whether the capsule runs on the policy's device (the original's device filter: a ``cuda``
    policy never selects a ``cpu`` capsule, nor the reverse)."""
    return policy.device is capsule.device


def matches_vjp(policy: KernelPolicy, capsule: KernelCapsule) -> bool:
    """Whether the capsule's VJP mode fits the policy's.

    Inference (policy ``none``) and the seeded random sources accept any capsule; a
    ``torchlean-tape`` policy accepts tape or backend VJPs; ``backend-vjp`` requires a backend VJP.
    """
    if policy.vjp_mode is VJPMode.NONE or not capsule.op.requires_vjp:
        return True
    if policy.vjp_mode is VJPMode.TORCHLEAN_TAPE:
        return capsule.vjp_mode in (VJPMode.TORCHLEAN_TAPE, VJPMode.BACKEND_VJP)
    return capsule.vjp_mode is VJPMode.BACKEND_VJP


class Condition(LabelledEnum):
    """The admissibility conjuncts in the order :func:`admissible` evaluates them."""

    FORWARD = "forward support"
    ALIGNMENT = "contract alignment"
    TRUST = "trust"
    PROVIDER = "provider preference"
    DEVICE = "device"
    VJP = "VJP mode"

    @classmethod
    def kind(cls) -> str:
        return "admissibility condition"


def first_failed_condition(policy: KernelPolicy, capsule: KernelCapsule) -> Condition | None:
    """The first admissibility conjunct ``capsule`` fails under ``policy``, or ``None``."""
    checks = (
        (Condition.FORWARD, capsule.supports_forward),
        (Condition.ALIGNMENT, _aligned(capsule)),
        (Condition.TRUST, allowed_by(policy, capsule)),
        (Condition.PROVIDER, matches_preference(policy, capsule)),
        (Condition.DEVICE, matches_device(policy, capsule)),
        (Condition.VJP, matches_vjp(policy, capsule)),
    )
    for condition, holds in checks:
        if not holds:
            return condition
    return None


def admissible(policy: KernelPolicy, capsule: KernelCapsule) -> bool:
    """Forward support, alignment, trust, preference, device and VJP mode all hold.

    Operation identity is not part of admissibility; :func:`choose_capsule` adds it.

    Raises:
        BackendTypeError: ``policy must be a KernelPolicy, got None (NoneType)`` or
            ``capsule must be a KernelCapsule, got ...``.
    """
    policy = instance_argument(policy, KernelPolicy, "policy")
    return first_failed_condition(policy, instance_argument(capsule, KernelCapsule, "capsule")) is None


def choose_capsule(
    policy: KernelPolicy, op: BackendOp | str, capsules: Iterable[KernelCapsule]
) -> KernelCapsule | None:
    """Select the capsule for ``op`` from ``capsules`` (catalog order), or ``None``.

    ``prefer(p)``: the first eligible capsule of provider ``p``, else the first eligible capsule of
    any provider. ``auto`` / ``only(p)``: the first eligible capsule. A preference is a request: it
    never overrides trust, device or VJP-mode filters (seed chapter, three attention profiles).
    ``op`` may be an op label; ``capsules`` any iterable of capsules but a string (a generator
    included). The arguments are checked in the order op, policy, capsules, as
    :func:`~torchlean.backend.planner.plan_op` checks its own.

    Raises:
        UnknownLabelError: an unknown op label. BackendTypeError: ``op`` is neither a
            :class:`BackendOp` nor a string; ``policy must be a KernelPolicy, got None
            (NoneType)``; ``capsules must be an iterable of KernelCapsule, got None (NoneType)``
            or ``capsules[0] must be a KernelCapsule, got 1 (int)``.
    """
    op = parse_member(BackendOp, op, "op")
    policy = instance_argument(policy, KernelPolicy, "policy")
    return _choose_capsule(policy, op, iterable_argument(capsules, KernelCapsule, "capsules"))


def _choose_capsule(
    policy: KernelPolicy, op: BackendOp, capsules: Iterable[KernelCapsule]
) -> KernelCapsule | None:
    """:func:`choose_capsule` on arguments already checked: the planner checks its policy and
    registry once per planning call, then calls this once per op."""
    eligible = [c for c in capsules if c.op is op and first_failed_condition(policy, c) is None]
    if policy.provider.kind is PreferenceKind.PREFER:
        for capsule in eligible:
            if capsule.provider is policy.provider.provider:
                return capsule
    return eligible[0] if eligible else None
