"""Text and JSON renderings of capsules, plans, audits, contract checks and graph plans.

Source: anchor-backend.md §2.14 (report lines, plan report, failure messages) and §3.3 (the docs'
print helpers ``bsRows``, ``bsCheck``, ``bsGraphPlan``, ``bsGroups``, ``bsAcceptGraph``,
``bsPrefer``). Lean-only renderings become Python ones (DESIGN.md §1.2): arrays print as
``[1, 2, 3]``, IR kinds as ``kind.describe()``, providers as their label.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from beartype import beartype

from torchlean.backend.acceptance import (
    AcceptedGraphKernelPlan,
    AcceptedKernel,
    GraphKernelPlanResult,
)
from torchlean.backend.audit import ContractCheck, KernelAudit, KernelPlanAudit
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractClaim, ContractDescriptor, ContractEvidence
from torchlean.backend.fields import BackendTypeError, describe, iterable_argument
from torchlean.backend.graph import GraphKernelPlan, GroupedKernelPlan
from torchlean.backend.planner import CapsuleVerdict, KernelPlan
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.sealed import require_minted
from torchlean.backend.vocabulary import BackendOp, ContractObligation, Device, Provider

__all__ = [
    "accepted_graph_lines",
    "audit_line",
    "audit_to_json",
    "boundary_line",
    "capsule_row_to_json",
    "capsule_table",
    "check_lines",
    "checked_kernel_to_json",
    "descriptor_line",
    "detailed_report_lines",
    "explain_lines",
    "graph_plan_lines",
    "graph_result_lines",
    "group_lines",
    "plan_report",
    "plan_to_json",
    "profile_to_json",
    "rows_lines",
    "selection_line",
    "summary_line",
    "verdict",
]

JSON = dict[str, Any]


def descriptor_line(obligation: ContractObligation, descriptor: ContractDescriptor) -> str:
    """``    value: matmul forward refines its TorchLean semantics; covered by test suite ...``."""
    return f"    {obligation.label}: {descriptor.claim.label}; {descriptor.evidence.label}"


def _require(value: object, cls: type[object], function: str, expected: str, hint: str = "") -> None:
    """Refuse anything but a ``cls`` as an argument of ``report.{function}`` (the public helpers
    read attributes of their arguments: an ``AttributeError`` from deep inside them named neither
    the function nor what it takes).

    Raises:
        BackendTypeError: ``report.{function} takes {expected}, got {value} ({type}){hint}``.
    """
    if not isinstance(value, cls):
        raise BackendTypeError(f"report.{function} takes {expected}, got {describe(value)}{hint}")


_POLICY = "a KernelPolicy as policy (profile.policy)"
_PLAN = "a KernelPlan as plan (what profile.plan_ops(ops) returns)"
_CHECK = "a ContractCheck as check (what audit.check_contracts(policy) returns)"
_PLAN_AUDIT = "a KernelPlanAudit as audit (what plan.audit() returns)"
_GRAPH_PLAN = "a GraphKernelPlan as plan (what profile.plan_graph(graph) returns)"


def _require_audit(row: object, function: str) -> None:
    """Refuse anything but a :class:`KernelAudit` as ``function``'s row, naming ``.audit()``.

    Raises:
        BackendTypeError: naming the function, the value and its type, and the way to an audit
            row; for an ``AcceptedKernel`` (``t.produced_by``), its ``.audit()``; for ``None``,
            that ``produced_by`` is ``None`` where no kernel computed the values.
    """
    if isinstance(row, KernelAudit):
        return
    if isinstance(row, AcceptedKernel):
        hint = "; an AcceptedKernel is not its audit row: call .audit() on it"
    elif row is None:
        hint = (
            "; a tensor's produced_by is None for data, gradients and parameters, and after a write "
            "from outside a kernel (copy_, an optimizer's update): there is no kernel to audit"
        )
    else:
        hint = ""
    expected = (
        f"a KernelAudit, the row AcceptedKernel.audit() returns (report.{function}(t.produced_by.audit()))"
    )
    _require(row, KernelAudit, function, expected, hint)


def audit_line(row: KernelAudit) -> str:
    """One line per kernel: ``  {op}: {capsule} provider={p} trust={t} vjp={v} reduction={r}``.

    Args:
        row: a :class:`~torchlean.backend.audit.KernelAudit`, the row ``kernel.audit()`` returns
            for an accepted kernel (``audit_line(t.produced_by.audit())``) and
            ``plan.audit().kernels`` holds for a plan. Only its type is checked: a row is plain
            data (not sealed, unlike the accepted kernel it is made from), so one built or changed
            by hand is printed as given; the line attests acceptance only for a row ``.audit()``
            made.

    Raises:
        BackendTypeError: ``row`` is not a ``KernelAudit`` (also a ``TypeError``): an
            ``AcceptedKernel`` (pass ``.audit()``), or ``None`` (``t.produced_by`` is ``None``
            for data, gradients, parameters and after an optimizer's update).
    """
    _require_audit(row, "audit_line")
    return (
        f"  {row.op.label}: {row.capsule_name} provider={row.provider.label} trust={row.trust_level.label} "
        f"vjp={row.vjp_mode.label} reduction={row.numerical_policy.reduction.label}"
    )


def detailed_report_lines(row: KernelAudit) -> list[str]:
    """The audit line, then shape, layout, value and vjp descriptor lines (5 lines).

    Args:
        row: a :class:`~torchlean.backend.audit.KernelAudit` (``kernel.audit()``), as for
            :func:`audit_line`: plain data, its type checked, not its origin.

    Raises:
        BackendTypeError: ``row`` is not a ``KernelAudit``, as :func:`audit_line` says.
    """
    _require_audit(row, "detailed_report_lines")
    return [audit_line(row)] + [descriptor_line(obligation, d) for obligation, d in row.contracts()]


def summary_line(name: str, policy: KernelPolicy) -> str:
    """``profile={name} device={device} assurance={assurance} vjp={vjp mode}``.

    Raises:
        BackendTypeError: ``policy`` is not a :class:`KernelPolicy` (``report.summary_line takes a
            KernelPolicy as policy (profile.policy), got None (NoneType)``).
    """
    _require(policy, KernelPolicy, "summary_line", _POLICY)
    return (
        f"profile={name} device={policy.device.label} assurance={policy.assurance.label} "
        f"vjp={policy.vjp_mode.label}"
    )


def boundary_line(audit: KernelPlanAudit) -> str:
    """``trusted external boundary: none`` or the comma-joined op names of trusted-external rows.

    Raises:
        BackendTypeError: ``audit`` is not a :class:`KernelPlanAudit` (``plan.audit()``).
    """
    _require(audit, KernelPlanAudit, "boundary_line", _PLAN_AUDIT)
    ops = audit.trusted_external_ops
    return f"trusted external boundary: {', '.join(ops) if ops else 'none'}"


def selection_line(name: str, capsule_names: Sequence[str], errors: Sequence[str] = ()) -> str:
    """``{name}: [{capsule names}]``, the docs' ``bsPrefer`` line (anchor-backend.md §3.3, §6.6,
    with the Lean array ``#[a, b]`` printed ``[a, b]``: DESIGN.md §1.2), e.g.
    ``checked_cuda: [torchlean.composed_attention]``. When planning failed, the original prints
    ``{name}: {error}``; here the capsules of the ops that did plan come first (when any), then
    each error, joined by ``; ``: ``checked_cpu: [reference.relu]; no admissible kernel capsule for
    op fft_fno on device cpu``.

    Raises:
        BackendTypeError: ``capsule_names`` or ``errors`` not an iterable of strings (a string
            itself included: review126 F6).
    """
    listed = "the line lists them in order"
    names = iterable_argument(capsule_names, str, "report.selection_line: capsule_names", listed)
    errors = iterable_argument(errors, str, "report.selection_line: errors", listed)
    parts = [f"[{', '.join(names)}]"] if names or not errors else []
    return f"{name}: {'; '.join([*parts, *errors])}"


def _is_identity(key: object) -> bool:
    """Whether ``key`` has the form of a ``KernelCapsule.identity``."""
    kinds = (str, BackendOp, Provider, Device)
    return (isinstance(key, tuple) and len(key) == len(kinds)
            and all(isinstance(part, kind) for part, kind in zip(key, kinds, strict=True)))


def plan_report(
    name: str,
    policy: KernelPolicy,
    plan: KernelPlan,
    notes: Mapping[tuple[str, BackendOp, Provider, Device], str] | None = None,
) -> str:
    """Summary, boundary line, then 5 lines per kernel; joined by newlines, no trailing newline.

    ``notes`` maps a capsule identity (``KernelCapsule.identity``: name, op, provider, device; a
    name alone may be two capsules') to a note printed as ``    note: {note}`` after that kernel's
    lines (:meth:`torchlean.backend.profiles.BackendProfile.plan_report` notes a capsule a session
    would refuse before it runs).

    Raises:
        BackendTypeError: ``policy`` is not a :class:`KernelPolicy` or ``plan`` not a
            :class:`KernelPlan`; ``notes`` not a mapping, or a key of it that is not a capsule
            identity (a name, as before the identities: review145 F4; labels for the enum members:
            review146 F5).
    """
    _require(policy, KernelPolicy, "plan_report", _POLICY)
    _require(plan, KernelPlan, "plan_report", _PLAN)
    if notes is not None and not isinstance(notes, Mapping):
        raise BackendTypeError(
            f"plan_report: notes must be a mapping of capsule identity to note or None, got {describe(notes)}"
        )
    for key in notes or {}:
        if not _is_identity(key):  # a key spelled with labels would never match (review146 F5)
            raise BackendTypeError(
                f"plan_report: notes are keyed by capsule identity (KernelCapsule.identity: name, op, "
                f"provider, device: a str, a BackendOp, a Provider, a Device), got the key {key!r}"
            )
    audit = plan.audit()
    lines = [summary_line(name, policy), boundary_line(audit)]
    for row in audit.kernels:
        lines.extend(detailed_report_lines(row))
        note = None if notes is None else notes.get((row.capsule_name, row.op, row.provider, row.device))
        if note is not None:
            lines.append(f"    note: {note}")
    return "\n".join(lines)


def rows_lines(audit: KernelPlanAudit) -> list[str]:
    """The docs' ``bsRows``: ``op -> capsule``, provider/trust, reduction, value evidence.

    Raises:
        BackendTypeError: ``audit`` is not a :class:`KernelPlanAudit` (``report.rows_lines takes a
            KernelPlanAudit as audit (what plan.audit() returns), got None (NoneType)``).
    """
    _require(audit, KernelPlanAudit, "rows_lines", _PLAN_AUDIT)
    lines: list[str] = []
    for row in audit.kernels:
        lines += [
            f"{row.op.label} -> {row.capsule_name}",
            f"  provider {row.provider.label}, trust {row.trust_level.label}",
            f"  reduction {row.numerical_policy.reduction.label}",
            f"  value: {row.value_contract.evidence.label}",
        ]
    return lines


def check_lines(check: ContractCheck) -> list[str]:
    """The docs' ``bsCheck``: per rejected obligation ``checked: rejected {capsule} {obligation}`` and
    ``  {evidence}``; or ``external: accepted``.

    Raises:
        BackendTypeError: ``check`` is not a :class:`ContractCheck` (``audit.check_contracts(policy)``).
    """
    _require(check, ContractCheck, "check_lines", _CHECK)
    label = check.policy.label
    if check.accepted:
        return [f"{label}: accepted"]
    lines: list[str] = []
    for report in check.rejected:
        lines += [
            f"{label}: rejected {report.capsule_name} {report.obligation.label}",
            f"  {report.evidence.label}",
        ]
    return lines


def explain_lines(
    name: str, policy: KernelPolicy, op: BackendOp, verdicts: Sequence[CapsuleVerdict]
) -> list[str]:
    """Header, one ``  {capsule} ({provider}/{device}): {verdict}`` line per registered capsule, result."""
    lines = [f"explain {op.label} under {summary_line(name, policy)} provider={policy.provider.label}"]
    if not verdicts:
        lines.append(f"  no capsule is registered for op {op.label}")
    for item in verdicts:
        capsule = item.capsule
        lines.append(
            f"  {capsule.name} ({capsule.provider.label}/{capsule.device.label}): {item.verdict.text}"
        )
    selected = [item.capsule.name for item in verdicts if item.verdict.status == "selected"]
    if selected:
        lines.append(f"result: {op.label} -> {selected[0]}")
    else:
        lines.append(
            f"result: no admissible kernel capsule for op {op.label} on device {policy.device.label}"
        )
    return lines


def graph_plan_lines(plan: GraphKernelPlan) -> list[str]:
    """The docs' ``bsGraphPlan``: ``nodes N, planned K`` then ``  {id} {kind} -> {capsule}``.

    Raises:
        BackendTypeError: ``plan`` is not a :class:`GraphKernelPlan` (``profile.plan_graph(graph)``).
    """
    _require(plan, GraphKernelPlan, "graph_plan_lines", _GRAPH_PLAN)
    lines = [f"nodes {plan.node_count}, planned {len(plan.kernels)}"]
    lines += [f"  {k.node_id} {k.kind.describe()} -> {k.capsule.name}" for k in plan.kernels]
    return lines


def group_lines(
    plan: GraphKernelPlan, grouped: GroupedKernelPlan, *, with_capsule: bool = False
) -> list[str]:
    """The docs' ``bsGroups`` / ``bsChain``: ``kernels K, groups G`` then ``  [ids] op [capsule]``.

    Raises:
        BackendTypeError: ``plan`` is not a :class:`GraphKernelPlan` or ``grouped`` not a
            :class:`GroupedKernelPlan` (``to_coalesced_groups(plan)``).
    """
    _require(plan, GraphKernelPlan, "group_lines", _GRAPH_PLAN)
    expected = "a GroupedKernelPlan as grouped (what to_coalesced_groups(plan) returns)"
    _require(grouped, GroupedKernelPlan, "group_lines", expected)
    lines = [f"kernels {len(plan.kernels)}, groups {len(grouped.groups)}"]
    for group in grouped.groups:
        suffix = f" {group.capsule.name}" if with_capsule else ""
        lines.append(f"  {list(group.node_ids)} {group.op.label}{suffix}")
    return lines


@beartype
def accepted_graph_lines(plan: AcceptedGraphKernelPlan) -> list[str]:
    """The docs' ``bsAcceptGraph`` for an accepted plan: policy, row count, distinct capsules.

    Raises:
        UnmintedError: ``plan`` was not minted by the gate or was changed since.
    """
    require_minted(plan, "accepted_graph_lines")
    names = plan.capsule_names
    distinct = list(dict.fromkeys(names))
    return [
        f"accepted under {plan.policy.assurance.label}",
        f"{len(names)} rows, distinct capsules:",
        *(f"  {name}" for name in distinct),
    ]


def graph_result_lines(result: GraphKernelPlanResult) -> list[str]:
    """Accepted lines, or ``rejected: {failure.message}`` per distinct failure, in order (the groups
    planned with one capsule share its verdict, so a 4-layer MLP printed each of ``linear``'s
    failures four times: review154 L2; ``result.failures`` keeps every group's)."""
    if result.plan is not None:
        return accepted_graph_lines(result.plan)
    return list(dict.fromkeys(f"rejected: {failure.message}" for failure in result.failures))


def capsule_table(entries: Iterable[tuple[str, KernelCapsule]]) -> list[str]:
    """An aligned table of ``(module name, capsule)`` entries: capsule, module, op, provider, device,
    trust, vjp, reduction and the kind of value evidence; one header line, one line per capsule."""
    header = ("capsule", "module", "op", "provider", "device", "trust", "vjp", "reduction", "value evidence")
    rows = [
        (
            c.name,
            module,
            c.op.label,
            c.provider.label,
            c.device.label,
            c.trust_level.label,
            c.vjp_mode.label,
            c.numerical_policy.reduction.label,
            c.value_contract.evidence.kind.label,
        )
        for module, c in entries
    ]
    widths = [max(len(row[i]) for row in [header, *rows]) for i in range(len(header))]
    return [
        "  ".join(cell.ljust(width) for cell, width in zip(row, widths, strict=True)).rstrip()
        for row in [header, *rows]
    ]


def capsule_row_to_json(module: str, capsule: KernelCapsule) -> JSON:
    """One row of :func:`capsule_table` as JSON-ready data (``torchlean capsules --format json``):
    ``capsule`` (its name), ``module``, ``op``, ``provider``, ``device``, ``trust``, ``vjp``,
    ``reduction`` (labels) and ``value_evidence`` (``kind``, whose label the table shows, ``name``
    and ``label``)."""
    return {
        "capsule": capsule.name,
        "module": module,
        "op": capsule.op.label,
        "provider": capsule.provider.label,
        "device": capsule.device.label,
        "trust": capsule.trust_level.label,
        "vjp": capsule.vjp_mode.label,
        "reduction": capsule.numerical_policy.reduction.label,
        "value_evidence": _evidence_to_json(capsule.value_contract.evidence),
    }


def _claim_to_json(claim: ContractClaim) -> JSON:
    data: JSON = {"kind": claim.kind.label, "op": claim.op.label, "label": claim.label}
    if claim.layout is not None:
        data["layout"] = claim.layout.label
    if claim.mode is not None:
        data["mode"] = claim.mode.label
    return data


def _evidence_to_json(evidence: ContractEvidence) -> JSON:
    return {"kind": evidence.kind.label, "name": evidence.name, "label": evidence.label}


def _descriptor_to_json(descriptor: ContractDescriptor) -> JSON:
    return {
        "claim": _claim_to_json(descriptor.claim),
        "summary": descriptor.summary,
        "evidence": _evidence_to_json(descriptor.evidence),
        "provenance": [
            {"path": ref.path, "symbol": ref.symbol, "build_target": ref.build_target}
            for ref in descriptor.provenance
        ],
    }


def audit_to_json(row: KernelAudit) -> JSON:
    """One audit row: op, capsule, provider, device, trust, vjp, reduction and the four contracts.

    Args:
        row: a :class:`~torchlean.backend.audit.KernelAudit` (``kernel.audit()``:
            ``audit_to_json(t.produced_by.audit())``), as for :func:`audit_line`: plain data, its
            type checked, not its origin.

    Raises:
        BackendTypeError: ``row`` is not a ``KernelAudit`` (also a ``TypeError``), as
            :func:`audit_line` says.
    """
    _require_audit(row, "audit_to_json")
    return {
        "op": row.op.label,
        "capsule": row.capsule_name,
        "provider": row.provider.label,
        "device": row.device.label,
        "trust": row.trust_level.label,
        "vjp": row.vjp_mode.label,
        "reduction": row.numerical_policy.reduction.label,
        "contracts": {o.label: _descriptor_to_json(d) for o, d in row.contracts()},
    }


def profile_to_json(name: str, policy: KernelPolicy) -> JSON:
    """The profile a report is made under: ``profile`` (its name), ``device``, ``provider`` (the
    preference), ``assurance`` and ``vjp`` (labels), the facts of :func:`summary_line` and the
    provider preference; the head of every backend command's JSON document.

    Raises:
        BackendTypeError: ``policy`` is not a :class:`KernelPolicy`, as :func:`summary_line` says.
    """
    _require(policy, KernelPolicy, "profile_to_json", _POLICY)
    return {
        "profile": name,
        "device": policy.device.label,
        "provider": policy.provider.label,
        "assurance": policy.assurance.label,
        "vjp": policy.vjp_mode.label,
    }


def plan_to_json(name: str, policy: KernelPolicy, plan: KernelPlan) -> JSON:
    """The facts of :func:`plan_report` as JSON-ready data.

    Raises:
        BackendTypeError: ``policy`` is not a :class:`KernelPolicy` or ``plan`` not a
            :class:`KernelPlan`, as :func:`plan_report` says.
    """
    _require(policy, KernelPolicy, "plan_to_json", _POLICY)
    _require(plan, KernelPlan, "plan_to_json", _PLAN)
    audit = plan.audit()
    return {
        **profile_to_json(name, policy),
        "trusted_external_ops": list(audit.trusted_external_ops),
        "kernels": [audit_to_json(row) for row in audit.kernels],
    }


def verdict(check: ContractCheck) -> str:
    """``accepted`` or ``rejected``: the word of :func:`check_lines` for ``check``.

    Raises:
        BackendTypeError: ``check`` is not a :class:`ContractCheck`, as :func:`check_lines` says.
    """
    _require(check, ContractCheck, "verdict", _CHECK)
    return _word(check.accepted)


def checked_kernel_to_json(row: KernelAudit, checks: Sequence[ContractCheck]) -> JSON:
    """One kernel of a contract check (``torchlean check --format json``): ``op``, ``capsule``,
    ``verdicts`` (per check's policy label, ``rejected`` when that check rejects one of the row's
    obligations, else ``accepted``) and ``contracts``: per obligation label (shape, layout, value,
    vjp) the descriptor as in :func:`audit_to_json` (claim, summary, evidence with its kind and
    name, provenance) and its own ``verdicts``.

    ``checks`` are the results of :meth:`~torchlean.backend.audit.KernelPlanAudit.check_contracts`
    over a plan holding ``row``: the verdicts are read from their ``rejected`` reports, as
    :func:`check_lines` prints them, not recomputed.

    ``row`` is plain data, its type checked, not its origin (:func:`audit_line`).

    Raises:
        BackendTypeError: ``row`` is not a :class:`~torchlean.backend.audit.KernelAudit`
            (``kernel.audit()``), as :func:`audit_line` says.
    """
    _require_audit(row, "checked_kernel_to_json")
    contracts: JSON = {}
    for (obligation, descriptor), report in zip(row.contracts(), row.obligation_reports(), strict=True):
        verdicts = {check.policy.label: _word(report not in check.rejected) for check in checks}
        contracts[obligation.label] = {**_descriptor_to_json(descriptor), "verdicts": verdicts}
    return {
        "op": row.op.label,
        "capsule": row.capsule_name,
        "verdicts": {
            check.policy.label: _word(all(r not in check.rejected for r in row.obligation_reports()))
            for check in checks
        },
        "contracts": contracts,
    }


def _word(accepted: bool) -> str:
    return "accepted" if accepted else "rejected"


