"""The acceptance gate: the only way to obtain an executable-grade kernel or graph plan.

Source: the seed chapter ("Contract Checks"); anchor-backend.md §1.22, §2.12, §2.13, §2.14.
:func:`accept` re-checks a (possibly forged) :class:`PlannedKernel`: operation identity, forward
support, contract alignment, trust, provider preference, device, VJP mode and evidence. It does
not check availability. On success it mints a sealed :class:`AcceptedKernel`; otherwise it raises
:class:`AcceptanceError` carrying *every* failure in the original's order.
"""

from __future__ import annotations

import numbers
from abc import ABC, abstractmethod
from collections.abc import Callable
from dataclasses import InitVar, dataclass
from typing import TYPE_CHECKING, Annotated, Any, ClassVar, TypeAlias, TypeVar, final

from beartype import beartype
from beartype.vale import Is

from torchlean.backend.audit import KernelAudit, KernelPlanAudit, ObligationReport
from torchlean.backend.capsule import (
    KernelCapsule,
    allowed_by,
    contracts_aligned,
    matches_device,
    matches_preference,
    matches_vjp,
)
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.fields import BackendTypeError, describe
from torchlean.backend.graph import GraphKernelPlan, GroupedKernelPlan, to_coalesced_groups
from torchlean.backend.planner import PlannedKernel
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.sealed import (
    _GATE,
    Sealable,
    _GateToken,
    _mint,
    check_gate_token,
    is_minted,
    require_minted,
    sealed,
)
from torchlean.backend.vocabulary import BackendOp, Device, Provider, TrustLevel, VJPMode

if TYPE_CHECKING:
    import numpy as np

    _GroupIndex: TypeAlias = int | np.integer[Any]
    """A group index for mypy: a Python or numpy integer (``torchlean.tensor.IntLike``)."""
else:  # the backend imports no numpy (DESIGN.md §2): beartype checks numbers.Integral, which numpy's
    _GroupIndex = numbers.Integral  # integers are registered as (bools too: the function refuses them)

__all__ = [
    "AcceptanceError",
    "AcceptanceFailure",
    "Accepted",
    "AcceptedGraph",
    "AcceptedGraphKernelPlan",
    "AcceptedKernel",
    "ContractsMisaligned",
    "DeviceMismatch",
    "EvidenceRejected",
    "ForwardUnsupported",
    "GraphKernelPlanResult",
    "GroupIndexError",
    "OperationMismatch",
    "ProviderRejected",
    "TrustRejected",
    "VJPMismatch",
    "accept",
    "accept_graph_kernel_plan",
    "acceptable",
    "acceptance_failures",
    "accepted_kernel_of_group",
    "grouped_acceptance_failures",
]


class AcceptanceFailure(ABC):
    """One reason the gate refused a planned kernel; ``message`` is the original's verbatim text.

    ``kind`` is the original constructor name (``operationMismatch``, ..., ``evidenceRejected``).
    """

    __slots__ = ()
    kind: ClassVar[str]

    @property
    @abstractmethod
    def message(self) -> str:
        """The failure in one line, the original's wording (anchor-backend.md §1.22), as
        :class:`AcceptanceError` and the planning reports print it."""


@dataclass(frozen=True, slots=True)
class OperationMismatch(AcceptanceFailure):
    """The capsule implements another op than the one planned."""

    kind: ClassVar[str] = "operationMismatch"
    planned: BackendOp
    capsule: BackendOp

    @property
    def message(self) -> str:
        """``planned operation relu does not match capsule operation exp``."""
        return f"planned operation {self.planned.label} does not match capsule operation {self.capsule.label}"


@dataclass(frozen=True, slots=True)
class ForwardUnsupported(AcceptanceFailure):
    """The capsule has no forward implementation for the op (``supports_forward`` false)."""

    kind: ClassVar[str] = "forwardUnsupported"
    op: BackendOp
    capsule_name: str

    @property
    def message(self) -> str:
        """``<capsule> has no forward implementation for <op>``."""
        return f"{self.capsule_name} has no forward implementation for {self.op.label}"


@dataclass(frozen=True, slots=True)
class ContractsMisaligned(AcceptanceFailure):
    """A contract claim stands in the wrong obligation field, or names another op or VJP mode than
    the capsule (:func:`~torchlean.backend.capsule.contracts_aligned`)."""

    kind: ClassVar[str] = "contractsMisaligned"
    op: BackendOp
    capsule_name: str

    @property
    def message(self) -> str:
        """``<capsule> has misaligned contract claims for <op>``."""
        return f"{self.capsule_name} has misaligned contract claims for {self.op.label}"


@dataclass(frozen=True, slots=True)
class TrustRejected(AcceptanceFailure):
    """The policy does not accept the capsule's trust level (``trusted-external`` under ``checked``)."""

    kind: ClassVar[str] = "trustRejected"
    op: BackendOp
    capsule_name: str
    trust: TrustLevel

    @property
    def message(self) -> str:
        """``<capsule> uses rejected trust level trusted-external for <op>``."""
        return f"{self.capsule_name} uses rejected trust level {self.trust.label} for {self.op.label}"


@dataclass(frozen=True, slots=True)
class ProviderRejected(AcceptanceFailure):
    """The policy's provider preference excludes the capsule's provider."""

    kind: ClassVar[str] = "providerRejected"
    op: BackendOp
    capsule_name: str
    provider: Provider

    @property
    def message(self) -> str:
        """``<capsule> uses rejected provider aten for <op>``."""
        return f"{self.capsule_name} uses rejected provider {self.provider.label} for {self.op.label}"


@dataclass(frozen=True, slots=True)
class DeviceMismatch(AcceptanceFailure):
    """The capsule runs on another device than the one requested."""

    kind: ClassVar[str] = "deviceMismatch"
    op: BackendOp
    capsule_name: str
    requested: Device
    actual: Device

    @property
    def message(self) -> str:
        """``<capsule> targets cuda, not requested cpu, for <op>``."""
        return (
            f"{self.capsule_name} targets {self.actual.label}, not requested {self.requested.label}, "
            f"for {self.op.label}"
        )


@dataclass(frozen=True, slots=True)
class VJPMismatch(AcceptanceFailure):
    """The capsule offers another VJP mode than the policy requests."""

    kind: ClassVar[str] = "vjpMismatch"
    op: BackendOp
    capsule_name: str
    requested: VJPMode
    actual: VJPMode

    @property
    def message(self) -> str:
        """``<capsule> offers backend-vjp, not requested torchlean-tape, for <op>``."""
        return (
            f"{self.capsule_name} offers {self.actual.label}, not requested {self.requested.label}, "
            f"for {self.op.label}"
        )


@dataclass(frozen=True, slots=True)
class EvidenceRejected(AcceptanceFailure):
    """One obligation's evidence is not accepted by the policy (``report`` names it)."""

    kind: ClassVar[str] = "evidenceRejected"
    report: ObligationReport

    @property
    def message(self) -> str:
        """``<capsule> has rejected <obligation> evidence for <op>: <evidence>``."""
        report = self.report
        return (
            f"{report.capsule_name} has rejected {report.obligation.label} evidence for {report.op.label}: "
            f"{report.evidence.label}"
        )


class AcceptanceError(TorchLeanError):
    """The gate refused; ``failures`` lists every reason, ``str(error)`` one message per line."""

    def __init__(self, failures: tuple[AcceptanceFailure, ...]) -> None:
        self.failures = failures
        super().__init__("\n".join(failure.message for failure in failures))


class GroupIndexError(TorchLeanError, IndexError):
    """:func:`accepted_kernel_of_group` was asked for a group the plan does not have: a negative
    index (never wrapped), a bool or an index past the last group; also an ``IndexError``."""


def _require(name: str, value: object, cls: type[object]) -> None:
    """An argument of the gate's public functions has the documented type.

    Raises:
        BackendTypeError: ``accept: planned must be a PlannedKernel, got None (NoneType)``.
    """
    if not isinstance(value, cls):
        raise BackendTypeError(f"{name} must be a {cls.__name__}, got {describe(value)}")


def acceptance_failures(planned: PlannedKernel, policy: KernelPolicy) -> tuple[AcceptanceFailure, ...]:
    """Every failing part of the gate, in order: op identity, forward, alignment, trust,
    provider, device, VJP mode, then one ``evidenceRejected`` per rejected obligation
    (shape, layout, value, vjp).

    Raises:
        BackendTypeError: ``planned`` is not a :class:`PlannedKernel` or ``policy`` not a
            :class:`KernelPolicy` (e.g. the label ``"checked"``).
    """
    _require("acceptance: planned", planned, PlannedKernel)
    _require("acceptance: policy", policy, KernelPolicy)
    op, capsule = planned.op, planned.capsule
    name = capsule.name
    failures: list[AcceptanceFailure] = []
    if op is not capsule.op:
        failures.append(OperationMismatch(op, capsule.op))
    if not capsule.supports_forward:
        failures.append(ForwardUnsupported(op, name))
    if not contracts_aligned(capsule):
        failures.append(ContractsMisaligned(op, name))
    if not allowed_by(policy, capsule):
        failures.append(TrustRejected(op, name, capsule.trust_level))
    if not matches_preference(policy, capsule):
        failures.append(ProviderRejected(op, name, capsule.provider))
    if not matches_device(policy, capsule):
        failures.append(DeviceMismatch(op, name, policy.device, capsule.device))
    if not matches_vjp(policy, capsule):
        failures.append(VJPMismatch(op, name, policy.vjp_mode, capsule.vjp_mode))
    audit = KernelPlanAudit((planned.audit(),))
    failures.extend(EvidenceRejected(report) for report in audit.check_contracts(policy.assurance).rejected)
    return tuple(failures)


def acceptable(planned: PlannedKernel, policy: KernelPolicy) -> bool:
    """Op identity, admissibility and the evidence check all hold (no availability check)."""
    return not acceptance_failures(planned, policy)


@final
@sealed("torchlean.backend.acceptance.accept")
@dataclass(frozen=True, slots=True, eq=False)
class AcceptedKernel(Sealable):
    """A planned kernel that passed the full gate under ``policy``; only :func:`accept` makes one."""

    op: BackendOp
    capsule: KernelCapsule
    policy: KernelPolicy
    _gate: InitVar[_GateToken]

    def __post_init__(self, _gate: _GateToken) -> None:
        check_gate_token(type(self), _gate)

    def __repr__(self) -> str:
        op = getattr(self, "op", None)
        capsule = getattr(self, "capsule", None)
        if op is None or capsule is None:  # a forgery that never ran __init__
            return "AcceptedKernel(<unset>)"
        return f"AcceptedKernel({op.label}, {capsule.name})"

    def audit(self) -> KernelAudit:
        """The accepted kernel's audit row: its op and the capsule's contract labels.

        Raises:
            UnmintedError: this kernel was not minted by :func:`accept` or was changed since (a
                forgery's row would be the audit of an acceptance that never happened), as
                :func:`~torchlean.backend.binding.bind` refuses it.
        """
        require_minted(self, "AcceptedKernel.audit")
        return KernelAudit.of(self.op, self.capsule)


Accepted = Annotated[AcceptedKernel, Is[is_minted]]
"""Beartype hint refusing unminted instances, for a ``@beartype`` API of one's own (its refusal
is beartype's violation); torchlean's consumers call :func:`require_minted` instead."""


def accept(planned: PlannedKernel, policy: KernelPolicy) -> AcceptedKernel:
    """The gate: re-check ``planned`` under ``policy`` and mint an :class:`AcceptedKernel`.

    Source: the seed chapter ("Contract Checks"); anchor-backend.md §2.12 (the full acceptance
    gate), its failures and messages §3.1.

    Raises:
        AcceptanceError: with every :class:`AcceptanceFailure` (``.failures``).
        BackendTypeError: ``planned`` or ``policy`` of the wrong type (:func:`acceptance_failures`).
    """
    failures = acceptance_failures(planned, policy)
    if failures:
        raise AcceptanceError(failures)
    accepted = AcceptedKernel(planned.op, planned.capsule, policy, _gate=_GATE)
    _mint(accepted)
    return accepted


def grouped_acceptance_failures(
    grouped: GroupedKernelPlan, policy: KernelPolicy
) -> tuple[AcceptanceFailure, ...]:
    """Per-group failures concatenated in group order.

    :func:`acceptance_failures` is a pure function of ``(op, capsule, policy)``; it runs once per
    distinct ``(op, capsule object)`` pair and its (immutable) failures are repeated for every
    group with that pair.
    """
    verdicts = _per_group(grouped, lambda planned: acceptance_failures(planned, policy))
    return tuple(failure for found in verdicts for failure in found)


_V = TypeVar("_V")


def _per_group(grouped: GroupedKernelPlan, judge: Callable[[PlannedKernel], _V]) -> list[_V]:
    """``judge`` of each group's planned kernel, in group order, run once per distinct
    ``(op, capsule object)`` pair: groups planned with the same pair share its verdict."""
    verdicts: dict[tuple[BackendOp, int], _V] = {}
    per_group: list[_V] = []
    for group in grouped.groups:
        key = (group.op, id(group.capsule))  # ``grouped`` keeps every capsule alive meanwhile
        if key not in verdicts:
            verdicts[key] = judge(group.to_planned_kernel())
        per_group.append(verdicts[key])
    return per_group


@final
@sealed("torchlean.backend.acceptance.accept_graph_kernel_plan")
@dataclass(frozen=True, slots=True, eq=False)
class AcceptedGraphKernelPlan(Sealable):
    """A graph plan whose every group passed the gate; only :func:`accept_graph_kernel_plan` makes one.

    ``grouped_plan`` is always ``to_coalesced_groups(graph_plan)``; ``kernels`` holds one
    :class:`AcceptedKernel` per group (group order), minted by :func:`accept`, ready to bind;
    groups planned with the same op and capsule object share one kernel.
    """

    graph_plan: GraphKernelPlan
    grouped_plan: GroupedKernelPlan
    policy: KernelPolicy
    kernels: tuple[AcceptedKernel, ...]
    _gate: InitVar[_GateToken]

    def __post_init__(self, _gate: _GateToken) -> None:
        check_gate_token(type(self), _gate)

    def __repr__(self) -> str:
        if getattr(self, "grouped_plan", None) is None:  # a forgery that never ran __init__
            return "AcceptedGraphKernelPlan(<unset>)"
        return f"AcceptedGraphKernelPlan({list(self.capsule_names)})"

    @property
    def node_ids(self) -> tuple[int, ...]:
        """The graph node ids the plan covers, group by group."""
        return self.grouped_plan.node_ids

    @property
    def capsule_names(self) -> tuple[str, ...]:
        """One name per group."""
        return self.grouped_plan.capsule_names

    def audit(self) -> KernelPlanAudit:
        """One audit row per group, in group order.

        Raises:
            UnmintedError: this plan was not minted by :func:`accept_graph_kernel_plan` or was
                changed since.
        """
        require_minted(self, "AcceptedGraphKernelPlan.audit")
        return self.grouped_plan.to_kernel_plan().audit()


AcceptedGraph = Annotated[AcceptedGraphKernelPlan, Is[is_minted]]
"""Beartype hint refusing unminted graph plans, for a ``@beartype`` API of one's own; torchlean's
consumers call :func:`require_minted` instead."""


@dataclass(frozen=True, slots=True)
class GraphKernelPlanResult:
    """``accepted`` (``plan`` set, no failures) or rejected (``plan`` None, ``failures`` non-empty)."""

    grouped_plan: GroupedKernelPlan
    plan: AcceptedGraphKernelPlan | None
    failures: tuple[AcceptanceFailure, ...]

    @property
    def accepted(self) -> bool:
        """True when every group passed the gate (``plan`` is set)."""
        return self.plan is not None


def _accepted_or_failures(
    planned: PlannedKernel, policy: KernelPolicy
) -> AcceptedKernel | tuple[AcceptanceFailure, ...]:
    """:func:`accept`'s kernel, or the failures it raised."""
    try:
        return accept(planned, policy)
    except AcceptanceError as error:
        return error.failures


def accept_graph_kernel_plan(graph_plan: GraphKernelPlan, policy: KernelPolicy) -> GraphKernelPlanResult:
    """Group ``graph_plan`` and accept every group under ``policy``.

    Rejection is returned as a value (diagnostic), with every group's failures in group order
    (those of :func:`grouped_acceptance_failures`). The gate :func:`accept`, and so
    :func:`acceptance_failures`, runs once per distinct ``(op, capsule object)`` pair; groups
    planned with the same pair share its verdict: its failures, or one (immutable)
    :class:`AcceptedKernel`. So planning and acceptance grow with the graph, not with the number
    of gate runs. On rejection the kernels minted for passing pairs are dropped.
    """
    _require("acceptance: graph_plan", graph_plan, GraphKernelPlan)
    _require("acceptance: policy", policy, KernelPolicy)
    grouped = to_coalesced_groups(graph_plan)
    verdicts = _per_group(grouped, lambda planned: _accepted_or_failures(planned, policy))
    failures = tuple(
        failure for verdict in verdicts if not isinstance(verdict, AcceptedKernel) for failure in verdict
    )
    if failures:
        return GraphKernelPlanResult(grouped, None, failures)
    kernels = tuple(verdict for verdict in verdicts if isinstance(verdict, AcceptedKernel))
    plan = AcceptedGraphKernelPlan(graph_plan, grouped, policy, kernels, _gate=_GATE)
    _mint(plan)
    return GraphKernelPlanResult(grouped, plan, ())


@beartype
def accepted_kernel_of_group(plan: AcceptedGraphKernelPlan, group_index: _GroupIndex) -> AcceptedKernel:
    """The accepted kernel of group ``group_index`` of a genuine accepted graph plan; the index is
    a Python or numpy integer (any ``numbers.Integral``), as the library's other indices and axes.

    Raises:
        UnmintedError: ``plan`` was not minted by the gate or was changed since.
        GroupIndexError: (an ``IndexError``) ``group_index`` is not in ``[0, len(plan.kernels))``:
            negative indices are refused, not wrapped.
        BackendTypeError: (a ``TypeError``) ``group_index`` is a bool (refused, not read as 0/1);
            under ``python -O``, where beartype checks nothing, also a numpy bool or any other
            non-integer, which beartype otherwise refuses with its ``BeartypeCallHintParamViolation``.
    """
    require_minted(plan, "accepted_kernel_of_group")
    if isinstance(group_index, bool) or not isinstance(group_index, numbers.Integral):
        # numpy's bool too, named so (numpy 2: "bool", 1.x: "bool_"; the backend imports no numpy)
        flag = ": a bool is not read as 0/1" if type(group_index).__name__ in ("bool", "bool_") else ""
        raise BackendTypeError(
            "accepted_kernel_of_group: group_index must be an int (a Python or numpy integer), got "
            f"{describe(group_index)}{flag}"
        )
    index, count = int(group_index), len(plan.kernels)
    if not 0 <= index < count:
        raise GroupIndexError(
            f"accepted_kernel_of_group: group index {index} is out of range (accepted: an int in "
            f"[0, {count}), one per group of the plan; negative indices are not wrapped)"
        )
    return plan.kernels[index]
