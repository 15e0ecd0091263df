"""Backend commands: ``capsules``, ``plan``, ``check``, ``select`` and ``explain``.

All of them are pure planning: they work on a machine without CUDA (DESIGN.md §3).

* ``torchlean capsules [--profile NAME] [--device D] [--format report|json]``: the catalog as an
  aligned table (or its rows as JSON), or only the capsules a profile can select (available and
  admissible under its policy); a profile that selects none gets a ``note:`` on stderr saying why
  (no capsule for the device, the device or the providers not declared, or the policy) and naming
  ``torchlean explain``.
* ``torchlean plan --profile NAME [--device D] [--format report|rows|json] OP...``: the plan report
  (anchor-backend.md §2.14), the docs' rows format, or the same facts as JSON. A failed plan
  prints one ``no admissible kernel capsule ...`` line per missing op on stderr, then per missing
  op ``note: torchlean explain --profile NAME [--device D] OP says why``, exit status 1
  (with ``--format json`` also the success document on stdout for the ops that plan on their
  own, its ``kernels`` listing those, with ``"planned": false`` and ``"errors": [...]``; a planned
  document carries ``"planned": true``).
* ``torchlean check --profile NAME [--device D] [--format report|json] OP...``: the contract check
  of the profile's plan under the ``checked`` and ``external`` assurance policies (the seed
  chapter's ``bsCheck``), or the same facts per op and obligation as JSON; exit status 0 once the
  plan exists, whatever the verdicts; a failed plan as for ``plan`` (with ``--format json`` also a
  document, ``"planned": false``, whose ops that plan on their own are checked).
* ``torchlean select --profiles NAME... OP... [--format report|json]``: which capsules each profile
  selects; a profile that cannot plan the ops gets on its line the capsules of the ops that plan
  on their own, then its refusals, and, per missing op, the ``explain`` note on stderr.
* ``torchlean explain --profile NAME [--device D] OP``: every registered capsule for the op with the
  first admissibility condition it fails, or ``selected`` / ``admissible``; then the shipped
  capsules for the op that the profile's modules leave out, with the profiles that include them.

``--format`` parses wherever it stands among a command's words (``select --profiles fast_cpu
--format json relu``); the default ``report`` is the text output, ``json`` one JSON document on
stdout with the same facts, the exit status and stderr lines unchanged.

An unknown op, profile or device is a one-line ``error: ...`` naming the accepted values, exit 2.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import sys
from collections.abc import Callable, Sequence
from typing import Any, TypeVar

from torchlean._checks import CUDA_DEVICE
from torchlean.backend import profiles, report
from torchlean.backend.capsule import KernelCapsule, admissible
from torchlean.backend.display import name_shown
from torchlean.backend.errors import PlanningError, UnknownLabelError
from torchlean.backend.planner import KernelPlan
from torchlean.backend.policy import AssurancePolicy
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.registry import all_modules
from torchlean.backend.vocabulary import BackendOp, Device, did_you_mean

__all__ = ["register"]

_T = TypeVar("_T")


def _parsing(parse: Callable[[str], _T]) -> Callable[[str], _T]:
    """An argparse ``type=`` that reports :class:`UnknownLabelError` messages verbatim."""

    def convert(text: str) -> _T:
        try:
            return parse(text)
        except UnknownLabelError as error:
            raise argparse.ArgumentTypeError(str(error)) from None

    convert.__name__ = getattr(parse, "__name__", "value")
    return convert


_op = _parsing(BackendOp.parse)


def _device_target(text: str) -> Device:
    """A device target label, or ``cuda:N`` (as ``torchlean.tensor`` spells a CUDA device) for the
    ``cuda`` target: planning is per device kind, so the index selects nothing here.

    Raises:
        UnknownLabelError: an unknown target (``unknown device gpu (known targets: cpu | cuda |
            ...)``).
    """
    return Device.CUDA if CUDA_DEVICE.fullmatch(text) else Device.parse(text)


_device = _parsing(_device_target)
_profile = _parsing(profiles.get)
_KNOWN = {"OP": " | ".join(BackendOp.labels()), "--profile": " | ".join(profiles.names())}


def _with_device(profile: BackendProfile, device: Device | None) -> BackendProfile:
    """The profile requesting ``device`` (availability unchanged), or the profile itself."""
    if device is None or device is profile.policy.device:
        return profile
    return dataclasses.replace(profile, policy=dataclasses.replace(profile.policy, device=device))


def _explain_command(profile: BackendProfile, device: Device | None, op: str) -> str:
    """The ``torchlean explain`` command line for ``op`` under ``profile`` (``--device`` when the
    command was given one)."""
    option = "" if device is None else f" --device {device.label}"
    return f"torchlean explain --profile {profile.name}{option} {op}"


def _print_planning_failure(error: PlanningError, profile: BackendProfile, device: Device | None) -> int:
    """Print each message of ``error`` on stderr, then for each of its missing ops a ``note:``
    naming the ``explain`` command that says why; returns 1."""
    for message in error.messages:
        print(message, file=sys.stderr)
    _print_explain_notes(error, profile, device)
    return 1


def _print_explain_notes(error: PlanningError, profile: BackendProfile, device: Device | None) -> None:
    """For each op no capsule was found for (``error.missing_ops``), once in the order of first
    appearance (a repeated op is one message: review216 F2), a ``note:`` on stderr naming the
    ``explain`` command that says why."""
    for op in dict.fromkeys(error.missing_ops):
        print(f"note: {_explain_command(profile, device, op.label)} says why", file=sys.stderr)


def _empty_selection_note(profile: BackendProfile, device: Device | None) -> str:
    """Why ``profile`` (requesting ``device``) can select no capsule at all, and where to look:
    no capsule for the device, else :meth:`~torchlean.backend.profiles.BackendProfile.selection_fault`
    (availability, assurance, provider preference), else the VJP mode the profile asks."""
    target = profile.policy.device
    if not profile.has_device_capsule():
        why = f"no capsule of profile {profile.name}'s modules targets device {target.label}"
    else:
        why = profile.selection_fault() or (
            f"backend profile `{profile.name}` asks VJP mode {profile.policy.vjp_mode.label}, which none "
            f"of the capsules it admits for device `{target.label}` offers"
        )
    return f"note: {why} ({_explain_command(profile, device, 'OP')} says why, per op)"


def _cmd_capsules(args: argparse.Namespace) -> int:
    entries: list[tuple[str, KernelCapsule]] = [(m.name, c) for m in all_modules() for c in m.capsules]
    title = "catalog"
    if args.profile is not None:
        profile = _with_device(args.profile, args.device)
        entries = [
            (m.name, c)
            for m in profile.capsule_modules
            for c in m.capsules
            if profile.availability.admits_capsule(c) and admissible(profile.policy, c)
        ]
        # admissible, not all selected: a preference picks one per op (review197 F1)
        title = f"admissible under {profile.summary()} provider={profile.policy.provider.label}"
    elif args.device is not None:
        entries = [(name, c) for name, c in entries if c.device is args.device]
        title = f"catalog for device {args.device.label}"
    if args.format == "json":
        head: dict[str, Any] = dict.fromkeys(("profile", "device", "provider", "assurance", "vjp"))
        if args.profile is not None:
            head = report.profile_to_json(profile.name, profile.policy)
        elif args.device is not None:
            head["device"] = args.device.label
        rows = [report.capsule_row_to_json(name, capsule) for name, capsule in entries]
        print(json.dumps({**head, "capsules": rows}, indent=2))
    else:
        print(f"{title}: {len(entries)} capsules")
        for line in report.capsule_table(entries):
            print(line)
    if args.profile is not None and not entries:
        sys.stdout.flush()  # the note follows the empty table on a terminal
        print(_empty_selection_note(profile, args.device), file=sys.stderr)
    return 0


def _require_ops(command: str, ops: Sequence[BackendOp]) -> None:
    """Refuse an empty op list of ``select`` (whose ops may also follow ``--profiles``), naming the
    known ops."""
    if not ops:
        raise UnknownLabelError(f"{command} needs at least one op (known: {' | '.join(BackendOp.labels())})")


def _cmd_plan(args: argparse.Namespace) -> int:
    profile = _with_device(args.profile, args.device)
    try:
        plan = profile.plan_ops(args.ops)
    except PlanningError as error:
        if args.format == "json":  # a JSON reader still gets a document: what planned, what failed
            partial = profile.plan_ops(_plannable_ops(error, args.ops))
            failed = {
                **report.plan_to_json(profile.name, profile.policy, partial),
                "planned": False,
                "errors": list(error.messages),
            }
            print(json.dumps(failed, indent=2))
        return _print_planning_failure(error, profile, args.device)
    if args.format == "rows":
        print("\n".join(report.rows_lines(plan.audit())))
    elif args.format == "json":
        document = {**report.plan_to_json(profile.name, profile.policy, plan), "planned": True}
        print(json.dumps(document, indent=2))
    else:
        print(report.plan_report(profile.name, profile.policy, plan))
    _print_preference_notes(profile, args.ops)
    return 0


def _print_preference_notes(profile: BackendProfile, ops: Sequence[BackendOp]) -> None:
    """The ``note:`` lines ``train`` and ``predict`` print on a preferred provider's refused
    capsules (:meth:`BackendProfile.preference_notes`), on stderr after the report: where a user
    checks a profile before a run (review224 F4)."""
    sys.stdout.flush()  # the notes follow the report on a terminal
    for note in profile.preference_notes(ops):
        print(f"note: {note}", file=sys.stderr)


def _plannable_ops(error: PlanningError, ops: Sequence[BackendOp]) -> list[BackendOp]:
    """The ops of a failed plan that plan on their own (not among ``error.missing_ops``), in
    request order."""
    return [op for op in ops if op not in error.missing_ops]


_CHECK_POLICIES = (AssurancePolicy.CHECKED, AssurancePolicy.EXTERNAL)
"""The assurance policies ``torchlean check`` checks a plan under, in the order it reports them."""


def _cmd_check(args: argparse.Namespace) -> int:
    profile = _with_device(args.profile, args.device)
    try:
        plan = profile.plan_ops(args.ops)
    except PlanningError as error:
        if args.format == "json":  # as plan: what planned is still checked, what failed is named
            partial = profile.plan_ops(_plannable_ops(error, args.ops))
            print(json.dumps(_check_document(profile, args.ops, partial, error), indent=2))
        return _print_planning_failure(error, profile, args.device)
    if args.format == "json":
        print(json.dumps(_check_document(profile, args.ops, plan, None), indent=2))
    else:
        for policy in _CHECK_POLICIES:
            print("\n".join(report.check_lines(plan.check_contracts(policy))))
    return 0


def _check_document(
    profile: BackendProfile, ops: Sequence[BackendOp], plan: KernelPlan, error: PlanningError | None
) -> dict[str, Any]:
    """``torchlean check --format json``: the profile (:func:`~torchlean.backend.report.profile_to_json`),
    ``planned``, then ``verdicts`` (per policy of :data:`_CHECK_POLICIES`, the word its text line
    says) or, for a failed plan, ``errors`` (its messages, as ``plan --format json``), then ``ops``:
    per requested op, in request order, its kernel's checks
    (:func:`~torchlean.backend.report.checked_kernel_to_json`) or, for an op no capsule is found
    for, ``capsule`` null and its ``error``. ``plan`` holds the kernels of the ops not in
    ``error.missing_ops``, in request order."""
    checks = [plan.check_contracts(policy) for policy in _CHECK_POLICIES]
    failures = {} if error is None else _missing_op_messages(error)
    kernels = iter(plan.audit().kernels)
    rows = [
        _unplanned_row(op, failures[op])
        if op in failures
        else report.checked_kernel_to_json(next(kernels), checks)
        for op in ops
    ]
    document = {**report.profile_to_json(profile.name, profile.policy), "planned": error is None}
    if error is None:
        document["verdicts"] = {check.policy.label: report.verdict(check) for check in checks}
    else:
        document["errors"] = list(error.messages)
    return {**document, "ops": rows}


def _missing_op_messages(error: PlanningError) -> dict[BackendOp, str]:
    """Each op of ``error.missing_ops`` with its ``no admissible kernel capsule ...`` message (the
    planner gives one message per missing op, in the same order)."""
    return dict(zip(error.missing_ops, error.messages, strict=True))


def _unplanned_row(op: BackendOp, message: str) -> dict[str, Any]:
    """The JSON row of an op no capsule is found for: ``op``, ``capsule`` null, ``error``."""
    return {"op": op.label, "capsule": None, "error": message}


def _split_profiles_and_ops(tokens: Sequence[str]) -> tuple[list[BackendProfile], list[BackendOp]]:
    """The words of every ``--profiles`` (``--profiles a b op1 op2 --profiles c``): each is a
    profile name or an op label (the two sets are disjoint), in any order; each kept once, in the
    order first given."""
    op_labels = set(BackendOp.labels())
    names, ops = [], []
    for token in dict.fromkeys(tokens):
        if token in op_labels:
            ops.append(BackendOp.parse(token))
        elif token in profiles.names():
            names.append(token)
        else:
            # an op's slip, else a profile's, closely matched too (review224 F1), as plan's --profile
            near = did_you_mean(token, op_labels) or profiles.near_profile(token)
            raise UnknownLabelError(
                f"unknown profile {name_shown(token)} (known: {' | '.join(profiles.names())}); "
                f"nor is it an op (known: {' | '.join(BackendOp.labels())}){near}"
            )
    return [profiles.get(name) for name in names], ops


def _cmd_select(args: argparse.Namespace) -> int:
    selected, ops = _split_profiles_and_ops(args.profiles)
    ops = list(dict.fromkeys([*args.ops, *ops]))  # ops before --profiles come first
    if not selected:
        raise UnknownLabelError(f"select needs at least one profile (known: {' | '.join(profiles.names())})")
    _require_ops("select", ops)
    status = 0
    documents: list[dict[str, Any]] = []
    for profile in selected:
        try:
            names = profile.plan_ops(ops).capsule_names
        except PlanningError as error:
            partial = profile.plan_ops(_plannable_ops(error, ops)).capsule_names
            if args.format == "json":
                documents.append(_selection_document(profile, ops, partial, error))
            else:
                print(report.selection_line(profile.name, partial, error.messages))
                sys.stdout.flush()  # the notes follow their line on a terminal
            _print_explain_notes(error, profile, None)
            _print_preference_notes(profile, _plannable_ops(error, ops))  # review228 F5: of those planned
            status = 1
        else:
            if args.format == "json":
                documents.append(_selection_document(profile, ops, names, None))
            else:
                print(report.selection_line(profile.name, names))
            _print_preference_notes(profile, ops)
    if args.format == "json":
        print(json.dumps({"profiles": documents}, indent=2))
    return status


def _selection_document(
    profile: BackendProfile, ops: Sequence[BackendOp], names: Sequence[str], error: PlanningError | None
) -> dict[str, Any]:
    """One profile of ``torchlean select --format json``: the profile
    (:func:`~torchlean.backend.report.profile_to_json`), ``planned`` and ``ops``: per op (each
    once, in request order) its ``capsule`` name, or ``capsule`` null and the ``error`` that says
    why. ``names`` are the capsules of the ops not in ``error.missing_ops``, in request order."""
    failures = {} if error is None else _missing_op_messages(error)
    selected = iter(names)
    rows = [
        _unplanned_row(op, failures[op]) if op in failures else {"op": op.label, "capsule": next(selected)}
        for op in ops
    ]
    return {**report.profile_to_json(profile.name, profile.policy), "planned": error is None, "ops": rows}


def _cmd_explain(args: argparse.Namespace) -> int:
    profile = _with_device(args.profile, args.device)
    print(profile.explain(args.op))
    selected = any(item.verdict.status == "selected" for item in profile.explain_verdicts(args.op))
    return 0 if selected else 1  # as plan, check and select when the op cannot be planned


def _explain_extras(args: argparse.Namespace, extras: list[str]) -> str | None:
    """The refusal of ``torchlean explain`` given more than one op (``explain --profile P relu
    matmul``): explain takes one op; the message gives a shell loop that explains each in turn and
    the ``plan`` command that plans them together. ``None`` (argparse's generic ``unrecognized
    arguments``) when an extra word looks like an option."""
    if any(word.startswith("-") for word in extras):
        return None
    for word in extras:  # an unknown op is the mistake to name first (review32 F4)
        try:
            _op(word)
        except argparse.ArgumentTypeError as error:
            return f"argument OP: {error}"
    ops = " ".join([args.op.label, *extras])
    each = _explain_command(args.profile, args.device, '"$op"')
    loop = f"for op in {ops}; do {each}; done"
    device = "" if args.device is None else f" --device {args.device.label}"
    return (
        f"explain takes one op, got {1 + len(extras)} ({ops}); explain each in turn, e.g. {loop} "
        f"(torchlean plan --profile {args.profile.name}{device} {ops} plans them together)"
    )


def _add_profile(parser: argparse.ArgumentParser, *, required: bool = True) -> None:
    parser.add_argument(
        "--profile",
        type=_profile,
        required=required,
        metavar="NAME",
        help=f"backend profile: {' | '.join(profiles.names())}",
    )
    parser.add_argument(
        "--device",
        type=_device,
        metavar="DEVICE",
        help="request this device target instead of the profile's (availability unchanged): cpu, cuda "
        "(cuda:N names the same target), or another target of the vocabulary",
    )


def _add_format(parser: Any, formats: tuple[str, ...] = ("report", "json")) -> None:
    """Add ``--format`` (default ``report``, the text output) to a command's ``parser`` (a
    :class:`torchlean.cli._Parser`); the parser reads it wherever it stands among the command's
    words (``select --profiles fast_cpu --format json relu``: ``options_first``)."""
    parser.add_argument(
        "--format",
        choices=formats,
        default="report",
        help=f"output format: {' | '.join(formats)} (default: report, the text lines; json: one JSON "
        "document on stdout, the same facts)",
    )
    parser.options_first = ("--format",)


def register(subparsers: Any) -> None:
    """Add ``capsules``, ``plan``, ``check``, ``select`` and ``explain`` to the ``torchlean`` parser."""
    capsules = subparsers.add_parser(
        "capsules",
        help="list the capsule catalog, or the capsules a profile admits",
        description="Print the capsule catalog (all modules, opt-in libtorch and aten included) "
        "as an aligned table; with "
        "--profile, only the capsules that profile declares available and admits under its policy.",
    )
    _add_profile(capsules, required=False)
    _add_format(capsules)
    capsules.set_defaults(func=_cmd_capsules)

    plan = subparsers.add_parser(
        "plan",
        help="plan ops under a profile and print the report",
        description="Select one capsule per op under a profile and print the plan report, the rows "
        "format or JSON. A failed plan prints one line per missing op on stderr and exits with status 1.",
    )
    _add_profile(plan)
    plan.known = _KNOWN
    _add_format(plan, ("report", "rows", "json"))
    plan.add_argument("ops", nargs="+", type=_op, metavar="OP", help="backend ops, e.g. matmul relu")
    plan.set_defaults(func=_cmd_plan)

    check = subparsers.add_parser(
        "check",
        help="contract check of a plan under checked and external assurance",
        description="Plan the ops under the profile, then check every selected capsule's obligations "
        "under the checked and the external assurance policy (the evidence is read, not the trust "
        "label): prints `<policy>: accepted` or each rejected obligation with its evidence.",
    )
    _add_profile(check)
    check.known = _KNOWN
    _add_format(check)
    check.add_argument("ops", nargs="+", type=_op, metavar="OP", help="backend ops")
    check.set_defaults(func=_cmd_check)

    select = subparsers.add_parser(
        "select",
        help="which capsule each profile selects for the ops",
        description="For each profile, print the capsules it selects for the ops (or why planning fails). "
        "Profile names and ops may follow --profiles in any order; --profiles may be repeated.",
    )
    select.known = {"--profiles": _KNOWN["--profile"]}
    select.add_argument(
        "--profiles",
        nargs="+",
        action="extend",
        required=True,
        metavar="NAME",
        help=f"profiles (and ops): {' | '.join(profiles.names())}",
    )
    _add_format(select)
    select.add_argument(
        "ops", nargs="*", type=_op, metavar="OP", help="backend ops (may follow the profiles)"
    )
    select.set_defaults(func=_cmd_select)

    explain = subparsers.add_parser(
        "explain",
        help="why each registered capsule for an op is (not) selected",
        description="List every registered capsule for the op with the first condition it fails "
        "(availability, forward support, contract alignment, trust, provider preference, device, VJP mode), "
        "or selected / admissible; then the shipped capsules for the op outside the profile's modules "
        "(opt-in aten, libtorch) with the profiles that include them. Exits with status 1 when no "
        "capsule is selected, as plan.",
    )
    _add_profile(explain)
    explain.known = _KNOWN
    explain.add_argument("op", type=_op, metavar="OP",
                         help="one backend op (for several, run explain once per op)")
    explain.set_defaults(func=_cmd_explain, refuse_extras=_explain_extras)
