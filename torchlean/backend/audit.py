"""Audit rows, obligation reports and the evidence (contract) check.

Source: the seed chapter ("Contract Checks"); anchor-backend.md §1.21, §1.22, §2.9, §2.11.
The contract check reads the *evidence* of each obligation, not the capsule's trust label: a
capsule labelled ``checked`` whose value rests on a trusted boundary is rejected under
``checked`` and accepted under ``external``. Accepting says nothing about numerical correctness.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import (
    ContractClaim,
    ContractDescriptor,
    ContractEvidence,
    EvidenceKind,
    NumericalPolicy,
)
from torchlean.backend.fields import BackendTypeError, describe, tuple_field
from torchlean.backend.policy import AssurancePolicy
from torchlean.backend.vocabulary import (
    BackendOp,
    ContractObligation,
    Device,
    Provider,
    TrustLevel,
    VJPMode,
)

__all__ = ["ContractCheck", "KernelAudit", "KernelPlanAudit", "ObligationReport", "check_contracts"]


@dataclass(frozen=True, slots=True)
class ObligationReport:
    """One obligation of one audited kernel with the evidence behind it."""

    op: BackendOp
    capsule_name: str
    obligation: ContractObligation
    claim: ContractClaim
    evidence: ContractEvidence


@dataclass(frozen=True, slots=True)
class KernelAudit:
    """One audit row: the planned op (not the capsule's!) and the capsule's contract fields.

    Plain data, not sealed: ``.audit()`` of an accepted kernel or plan (the sealed types) makes it
    from what they carry, but any code can build one (:meth:`of`, the constructor) or change one
    (``dataclasses.replace``, ``object.__setattr__``), and the report functions
    (:mod:`torchlean.backend.report`) print whatever row they are given. A row attests acceptance
    only as made by ``.audit()``; only the sealed types are checked against their gates
    (review63 F6)."""

    op: BackendOp
    capsule_name: str
    provider: Provider
    device: Device
    trust_level: TrustLevel
    vjp_mode: VJPMode
    shape_contract: ContractDescriptor
    layout_contract: ContractDescriptor
    value_contract: ContractDescriptor
    vjp_contract: ContractDescriptor
    numerical_policy: NumericalPolicy

    @classmethod
    def of(cls, op: BackendOp, capsule: KernelCapsule) -> KernelAudit:
        """The row for ``capsule`` planned for ``op`` (a forged plan keeps its planned op)."""
        return cls(
            op=op,
            capsule_name=capsule.name,
            provider=capsule.provider,
            device=capsule.device,
            trust_level=capsule.trust_level,
            vjp_mode=capsule.vjp_mode,
            shape_contract=capsule.shape_contract,
            layout_contract=capsule.layout_contract,
            value_contract=capsule.value_contract,
            vjp_contract=capsule.vjp_contract,
            numerical_policy=capsule.numerical_policy,
        )

    def contracts(self) -> tuple[tuple[ContractObligation, ContractDescriptor], ...]:
        """Shape, layout, value, vjp: the fixed order used everywhere."""
        return (
            (ContractObligation.SHAPE, self.shape_contract),
            (ContractObligation.LAYOUT, self.layout_contract),
            (ContractObligation.VALUE, self.value_contract),
            (ContractObligation.VJP, self.vjp_contract),
        )

    def obligation_reports(self) -> tuple[ObligationReport, ...]:
        """Four reports, one per obligation."""
        return tuple(
            ObligationReport(self.op, self.capsule_name, obligation, descriptor.claim, descriptor.evidence)
            for obligation, descriptor in self.contracts()
        )


@dataclass(frozen=True, slots=True)
class ContractCheck:
    """Result of the evidence check: accepted when ``rejected`` is empty."""

    policy: AssurancePolicy
    rejected: tuple[ObligationReport, ...]

    @property
    def accepted(self) -> bool:
        """True when no obligation was rejected under ``policy``."""
        return not self.rejected


@dataclass(frozen=True, slots=True)
class KernelPlanAudit:
    """One :class:`KernelAudit` per planned kernel, plan order.

    Raises:
        BackendTypeError: ``kernels`` not a tuple/list of :class:`KernelAudit` (a list is stored
            as a tuple).
    """

    kernels: tuple[KernelAudit, ...]

    def __post_init__(self) -> None:
        tuple_field(self, "kernels", KernelAudit)

    @property
    def capsule_names(self) -> tuple[str, ...]:
        """The capsule name of each row, in plan order."""
        return tuple(row.capsule_name for row in self.kernels)

    @property
    def trusted_external_ops(self) -> tuple[str, ...]:
        """Op names of rows labelled ``trusted-external`` (order and duplicates kept).

        An empty tuple means no capsule *labelled* trusted-external, not "no foreign code ran".
        """
        return tuple(row.op.label for row in self.kernels if row.trust_level is TrustLevel.TRUSTED_EXTERNAL)

    @property
    def has_trusted_external(self) -> bool:
        """Whether :attr:`trusted_external_ops` is non-empty."""
        return bool(self.trusted_external_ops)

    def obligation_reports(self) -> tuple[ObligationReport, ...]:
        """Kernel order, then shape, layout, value, vjp."""
        return tuple(report for row in self.kernels for report in row.obligation_reports())

    def check_contracts(self, policy: AssurancePolicy | str) -> ContractCheck:
        """:func:`check_contracts` of this audit (``policy`` may be ``"checked"`` or ``"external"``)."""
        return check_contracts(policy, self)


def rejected_reports(
    policy: AssurancePolicy, reports: Iterable[ObligationReport]
) -> tuple[ObligationReport, ...]:
    """The reports whose evidence ``policy`` does not accept. A trusted-boundary evidence is
    rejected without ``allow_trusted_external`` whatever a subclass's ``accepts_evidence`` says:
    the label (``checked``) is a ceiling a subclass may only narrow (review145 F3)."""
    return tuple(
        report for report in reports
        if not policy.accepts_evidence(report.evidence)
        or (report.evidence.kind is EvidenceKind.TRUSTED_BOUNDARY and not policy.allow_trusted_external)
    )


def check_contracts(policy: AssurancePolicy | str, audit: KernelPlanAudit) -> ContractCheck:
    """Classify every obligation of ``audit`` under ``policy`` (reads evidence, not labels, as the
    original's ``checkContracts``: a capsule labelled trusted-external with test-suite evidence is
    accepted under ``checked`` here, while the gate, :func:`torchlean.backend.acceptance.acceptable`,
    refuses it for its label; review93 L2).

    ``policy`` is an :class:`AssurancePolicy` or its label (``checked`` / ``external``).

    Raises:
        UnknownLabelError: an unknown policy label.
        BackendTypeError: a policy that is neither, or an ``audit`` that is no :class:`KernelPlanAudit`.
    """
    assurance = AssurancePolicy.coerce(policy, "policy")
    if not isinstance(audit, KernelPlanAudit):
        raise BackendTypeError(f"audit must be a KernelPlanAudit, got {describe(audit)}")
    return ContractCheck(assurance, rejected_reports(assurance, audit.obligation_reports()))
