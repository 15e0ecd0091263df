"""Planning: one admissible capsule per requested op, and "why not" diagnostics.

Source: the seed chapter ("Kernel Selection Plans"); anchor-backend.md §1.20, §2.4. Planning is a
pure function of a policy, a catalog and an op list. A missing implementation is reported before
any kernel launches; unlike the original (which stops at the first), a failed plan reports every
missing op, one message each (DESIGN.md §1.8).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass

from torchlean.backend.audit import ContractCheck, KernelAudit, KernelPlanAudit
from torchlean.backend.availability import Availability
from torchlean.backend.capsule import (
    Condition,
    KernelCapsule,
    _choose_capsule,
    first_failed_condition,
    matches_obligation,
)
from torchlean.backend.errors import PlanningError
from torchlean.backend.fields import (
    BackendTypeError,
    enum_field,
    instance_argument,
    instance_field,
    iterable_argument,
    ordered_items,
    parse_member,
    tuple_field,
)
from torchlean.backend.policy import AssurancePolicy, KernelPolicy
from torchlean.backend.vocabulary import BackendOp

__all__ = [
    "CapsuleVerdict",
    "KernelPlan",
    "PlannedKernel",
    "Verdict",
    "explain_op",
    "missing_op_message",
    "plan_op",
    "plan_ops",
    "plan_ops_available",
    "requested_op",
    "requested_ops",
]

@dataclass(frozen=True, slots=True)
class PlannedKernel:
    """A diagnostic record pairing an op with a capsule.

    Anyone can build one (including a forged pairing); only :func:`torchlean.backend.acceptance.accept`
    turns it into something executable, after re-checking everything. ``op`` takes a member or its
    label.

    Raises:
        BackendTypeError: an op or capsule of the wrong type. BackendValueError: an unknown op label.
    """

    op: BackendOp
    capsule: KernelCapsule

    def __post_init__(self) -> None:
        enum_field(self, "op", BackendOp)
        instance_field(self, "capsule", KernelCapsule)

    def __repr__(self) -> str:
        """``PlannedKernel(matmul, reference.matmul)``, as ``AcceptedKernel``'s (the dataclass repr
        printed the whole capsule, about 3 KB); :meth:`audit` gives the labels."""
        return f"PlannedKernel({self.op.label}, {self.capsule.name})"

    def audit(self) -> KernelAudit:
        """This kernel's audit row: the planned op and the capsule's contract labels."""
        return KernelAudit.of(self.op, self.capsule)


@dataclass(frozen=True, slots=True)
class KernelPlan:
    """Planned kernels in the order of the requested ops (duplicates allowed).

    Raises:
        BackendTypeError: ``kernels`` not a tuple/list of :class:`PlannedKernel` (a list is stored
            as a tuple).
    """

    kernels: tuple[PlannedKernel, ...]

    def __post_init__(self) -> None:
        tuple_field(self, "kernels", PlannedKernel)

    @property
    def capsule_names(self) -> tuple[str, ...]:
        """The selected capsules' names, one per planned kernel, in plan order."""
        return tuple(kernel.capsule.name for kernel in self.kernels)

    def audit(self) -> KernelPlanAudit:
        """One audit row per planned kernel, in plan order (:class:`KernelPlanAudit`)."""
        return KernelPlanAudit(tuple(kernel.audit() for kernel in self.kernels))

    @property
    def has_trusted_external(self) -> bool:
        """Whether a selected capsule is labelled ``trusted-external`` (see
        :attr:`KernelPlanAudit.trusted_external_ops`)."""
        return self.audit().has_trusted_external

    @property
    def trusted_external_ops(self) -> tuple[str, ...]:
        """The labels of the ops whose selected capsule is ``trusted-external``, in plan order."""
        return self.audit().trusted_external_ops

    def check_contracts(self, policy: AssurancePolicy | str) -> ContractCheck:
        """The evidence check of :func:`torchlean.backend.audit.check_contracts` (``policy`` may be
        ``"checked"`` or ``"external"``)."""
        return self.audit().check_contracts(policy)


_OPS_ACCEPTED = "a sequence of ops (BackendOp members or op labels)"


def requested_op(op: object, what: str = "op") -> BackendOp:
    """A requested op as a :class:`BackendOp`: the member itself or its label (``"relu"``).

    Raises:
        UnknownLabelError: ``unknown op {label} (known: rand_uniform | ...)``.
        BackendTypeError: ``{what} must be a BackendOp or one of its labels (...), got {value} ({type})``.
    """
    return parse_member(BackendOp, op, what)


def requested_ops(ops: object) -> tuple[BackendOp, ...]:
    """The ops of a planning request, in order, each parsed by :func:`requested_op` (``ops[i]``).

    A bare string or a single op is refused, not iterated and not wrapped: ``plan_ops("relu")`` is
    a common slip for ``plan_ops(["relu"])``, and iterating it would plan the letters.

    Raises:
        BackendTypeError: a string, a single op, a set, a mapping (review168 F2), a 0-d array or
            tensor or another non-iterable ``ops`` (:func:`ordered_items`); an entry of the wrong
            type.
        BackendValueError: more than :data:`MOST_ITEMS` ops (a stride-0 view of 2**40 entries is
            refused by its length at once, review239 F2).
        UnknownLabelError: an entry that is an unknown op label.
    """
    if isinstance(ops, BackendOp):
        raise BackendTypeError(
            f"ops must be {_OPS_ACCEPTED}, got the single op {ops.label}; write [BackendOp.{ops.name}]"
        )
    if isinstance(ops, str):
        raise BackendTypeError(f"ops must be {_OPS_ACCEPTED}, got the string {ops!r}; write [{ops!r}]")
    items = ordered_items(ops, "ops", _OPS_ACCEPTED, "a plan keeps the ops' order")
    return tuple(requested_op(op, f"ops[{index}]") for index, op in enumerate(items))


def missing_op_message(policy: KernelPolicy, op: BackendOp) -> str:
    """``no admissible kernel capsule for op {op} on device {device}`` (verbatim)."""
    return f"no admissible kernel capsule for op {op.label} on device {policy.device.label}"


def _checked_policy(policy: object) -> KernelPolicy:
    """``policy`` when it is a :class:`KernelPolicy` (checked once per planning call).

    Raises:
        BackendTypeError: ``policy must be a KernelPolicy, got None (NoneType)``.
    """
    return instance_argument(policy, KernelPolicy, "policy")


def _checked_registry(registry: object) -> tuple[KernelCapsule, ...]:
    """``registry`` (any iterable of capsules, a generator included) as a tuple, each entry
    checked once per planning call rather than once per planned op.

    Raises:
        BackendTypeError: ``registry`` is a string or not iterable
            (``registry must be an iterable of KernelCapsule, got None (NoneType)``), or an entry
            is not a capsule (``registry[0] must be a KernelCapsule, got 1 (int)``).
    """
    return iterable_argument(registry, KernelCapsule, "registry")


def plan_op(policy: KernelPolicy, registry: Iterable[KernelCapsule], op: BackendOp | str) -> PlannedKernel:
    """Choose the capsule for ``op`` (a member or an op label).

    Source: the seed chapter ("Kernel Selection Plans"); anchor-backend.md §2.2-§2.3 (admissibility,
    ``chooseCapsuleFor?``), the message §3.1.

    Raises:
        PlanningError: ``no admissible kernel capsule for op {op} on device {device}``.
        UnknownLabelError, BackendTypeError: as :func:`requested_op`; BackendTypeError also for a
            ``policy`` or ``registry`` of the wrong type (:func:`_checked_policy`,
            :func:`_checked_registry`).
    """
    op = requested_op(op)
    policy = _checked_policy(policy)
    capsule = _choose_capsule(policy, op, _checked_registry(registry))
    if capsule is None:
        raise PlanningError(missing_op_message(policy, op), (op,))
    return PlannedKernel(op, capsule)


def plan_ops(
    policy: KernelPolicy, registry: Iterable[KernelCapsule], ops: Iterable[BackendOp | str]
) -> KernelPlan:
    """Plan every op in order (members or op labels; see :func:`requested_ops`).

    Source: anchor-backend.md §2.4 (planning a list of ops); every missing op is reported, where
    the original stops at the first (DESIGN.md §1.8).

    Raises:
        PlanningError: one message per distinct missing op (request order), in ``.messages``.
        UnknownLabelError, BackendTypeError: as :func:`requested_ops`, before anything is planned;
            BackendTypeError also for a ``policy`` or ``registry`` of the wrong type
            (:func:`_checked_policy`, :func:`_checked_registry`), before anything is planned.
    """
    requested = requested_ops(ops)
    return _plan_checked(_checked_policy(policy), _checked_registry(registry), requested)


def _plan_checked(
    policy: KernelPolicy, registry: tuple[KernelCapsule, ...], requested: tuple[BackendOp, ...]
) -> KernelPlan:
    """:func:`plan_ops` on arguments already checked."""
    kernels: list[PlannedKernel] = []
    missing: list[BackendOp] = []
    for op in requested:
        capsule = _choose_capsule(policy, op, registry)
        if capsule is None:
            if op not in missing:
                missing.append(op)
        else:
            kernels.append(PlannedKernel(op, capsule))
    if missing:
        raise PlanningError([missing_op_message(policy, op) for op in missing], missing)
    return KernelPlan(tuple(kernels))


def plan_ops_available(
    policy: KernelPolicy,
    availability: Availability,
    registry: Sequence[KernelCapsule],
    ops: Iterable[BackendOp | str],
) -> KernelPlan:
    """:func:`plan_ops` over the capsules ``availability`` admits.

    Raises:
        As :func:`plan_ops`; BackendTypeError also for an ``availability`` that is not an
        :class:`Availability`.
    """
    requested = requested_ops(ops)
    policy = _checked_policy(policy)
    capsules = _checked_availability(availability).filter_capsules(_checked_registry(registry))
    return _plan_checked(policy, capsules, requested)


def _checked_availability(availability: object) -> Availability:
    """``availability`` when it is an :class:`Availability`.

    Raises:
        BackendTypeError: ``availability must be an Availability, got None (NoneType)``.
    """
    return instance_argument(availability, Availability, "availability")


@dataclass(frozen=True, slots=True)
class Verdict:
    """Why one capsule was or was not chosen.

    ``status`` is ``selected``, ``admissible``, ``availability`` or the label of the first failed
    :class:`Condition`; ``detail`` explains it in words ("" for selected/admissible).
    """

    status: str
    detail: str = ""

    @property
    def text(self) -> str:
        """``"status: detail"``, or the bare status when there is no detail (as ``explain``
        prints it)."""
        return f"{self.status}: {self.detail}" if self.detail else self.status


@dataclass(frozen=True, slots=True)
class CapsuleVerdict:
    """One row of an explanation: a registered capsule of the op and its :class:`Verdict`."""

    capsule: KernelCapsule
    verdict: Verdict


def _joined(labels: Iterable[str]) -> str:
    """``a, b``, or ``none`` for no labels (as a session's message says it; review141 F4)."""
    return ", ".join(labels) or "none"


def _availability_verdict(availability: Availability, capsule: KernelCapsule) -> Verdict | None:
    if capsule.device not in availability.devices:
        declared = _joined(device.label for device in availability.devices)
        return Verdict(
            "availability",
            f"device {capsule.device.label} is not declared by the profile (declared: {declared})",
        )
    if capsule.provider not in availability.providers:
        declared = _joined(provider.label for provider in availability.providers)
        return Verdict(
            "availability",
            f"provider {capsule.provider.label} is not declared by the profile (declared: {declared})",
        )
    return None


def _misaligned_field(capsule: KernelCapsule) -> str:
    for obligation, descriptor in capsule.contracts():
        if not matches_obligation(capsule.op, capsule.vjp_mode, obligation, descriptor.claim):
            return f"the {obligation.label} field holds the claim `{descriptor.claim.label}`"
    raise AssertionError("capsule is aligned")


def _condition_verdict(policy: KernelPolicy, capsule: KernelCapsule, condition: Condition) -> Verdict:
    match condition:
        case Condition.FORWARD:
            detail = "the capsule has no forward implementation"
        case Condition.ALIGNMENT:
            detail = _misaligned_field(capsule)
        case Condition.TRUST:
            detail = f"{capsule.trust_level.label} is rejected by assurance {policy.assurance.label}"
            rule = type(policy.assurance).accepts_trust
            if rule is not AssurancePolicy.accepts_trust:  # whose rule refused it (review152 F6)
                detail += f" ({rule.__qualname__})"
        case Condition.PROVIDER:
            detail = f"provider {capsule.provider.label} is excluded by {policy.provider.label}"
        case Condition.DEVICE:
            detail = f"targets {capsule.device.label}, not requested {policy.device.label}"
        case Condition.VJP:
            detail = f"offers {capsule.vjp_mode.label}, not requested {policy.vjp_mode.label}"
    return Verdict(condition.label, detail)


def policy_verdict(policy: KernelPolicy, capsule: KernelCapsule) -> Verdict | None:
    """The verdict of the first admissibility condition ``capsule`` fails under ``policy`` (as
    ``explain`` words it: ``trust: trusted-external is rejected by assurance checked``), or
    ``None`` when it is admissible. Availability is not considered."""
    condition = first_failed_condition(policy, capsule)
    return None if condition is None else _condition_verdict(policy, capsule, condition)


def explain_op(
    policy: KernelPolicy, availability: Availability, registry: Sequence[KernelCapsule], op: BackendOp | str
) -> tuple[CapsuleVerdict, ...]:
    """One verdict per capsule registered for ``op`` (whole catalog, catalog order).

    Each verdict is the first condition the capsule fails among availability, forward support,
    contract alignment, trust, provider preference, device and VJP mode; or ``selected`` for the
    capsule :func:`plan_op` would choose, ``admissible`` for others that pass.

    Raises:
        UnknownLabelError, BackendTypeError: as :func:`requested_op`; BackendTypeError also for a
            ``policy``, ``availability`` or ``registry`` of the wrong type.
    """
    op = requested_op(op)
    policy = _checked_policy(policy)
    registry = _checked_registry(registry)
    chosen = _choose_capsule(policy, op, _checked_availability(availability).filter_capsules(registry))
    verdicts: list[CapsuleVerdict] = []
    for capsule in registry:
        if capsule.op is not op:
            continue
        verdict = _availability_verdict(availability, capsule) or policy_verdict(policy, capsule)
        if verdict is None:
            verdict = Verdict("selected") if capsule is chosen else Verdict("admissible")
        verdicts.append(CapsuleVerdict(capsule, verdict))
    return tuple(verdicts)
