"""The report functions that take one audit row refuse anything else with a ``TypeError`` naming
``.audit()`` (review62 F7: ``audit_line(y.produced_by)`` gave ``AttributeError: 'AcceptedKernel'
object has no attribute 'capsule_name'``, and ``audit_line(None)`` an ``AttributeError`` on
``'NoneType'``, although ``produced_by`` is None after an optimizer's update). The plan, check and
graph helpers refuse what they do not take in the same way (review121 F3).

Oracles: hand-written lines and messages; the accepted input still gives the rows it gave.
"""

from __future__ import annotations

import inspect
import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from _docs import documentation
from backend_builders import relu_chain

import torchlean as tl
from torchlean.backend import profiles, report
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.fields import BackendTypeError


def _relu_kernel() -> Any:
    with tl.session("checked_cpu"):
        return tl.relu(tl.tensor(np.ones(3))).produced_by


def _checked(row: Any) -> Any:
    return report.checked_kernel_to_json(row, ())


FUNCTIONS: dict[str, Callable[[Any], Any]] = {
    "audit_line": report.audit_line,
    "detailed_report_lines": report.detailed_report_lines,
    "audit_to_json": report.audit_to_json,
    "checked_kernel_to_json": _checked,
}


def test_the_audit_row_of_an_accepted_kernel_is_rendered_as_before() -> None:
    row = _relu_kernel().audit()
    assert report.audit_line(row) == (
        "  relu: reference.relu provider=reference trust=checked vjp=torchlean-tape reduction=n/a"
    )
    assert report.detailed_report_lines(row)[0] == report.audit_line(row)
    assert len(report.detailed_report_lines(row)) == 5
    data = report.audit_to_json(row)
    assert (data["op"], data["capsule"], data["provider"], data["reduction"]) == (
        "relu", "reference.relu", "reference", "n/a"
    )
    assert _checked(row)["capsule"] == "reference.relu"


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_an_accepted_kernel_is_refused_naming_audit(name: str) -> None:
    kernel = _relu_kernel()
    with pytest.raises(BackendTypeError) as info:
        FUNCTIONS[name](kernel)
    assert str(info.value) == (
        f"report.{name} takes a KernelAudit, the row AcceptedKernel.audit() returns "
        f"(report.{name}(t.produced_by.audit())), got AcceptedKernel(relu, reference.relu) (AcceptedKernel); "
        "an AcceptedKernel is not its audit row: call .audit() on it"
    )
    assert isinstance(info.value, TypeError) and isinstance(info.value, TorchLeanError)


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_none_is_refused_saying_that_produced_by_may_be_none(name: str) -> None:
    with tl.session("checked_cpu"):
        t = tl.exp(tl.tensor(np.ones(2)))
    with tl.no_grad():
        t.copy_(tl.tensor(np.zeros(2)))  # an optimizer's update writes this way: no kernel's values
    assert t.produced_by is None
    with pytest.raises(TypeError) as info:
        FUNCTIONS[name](t.produced_by)
    assert str(info.value) == (
        f"report.{name} takes a KernelAudit, the row AcceptedKernel.audit() returns "
        f"(report.{name}(t.produced_by.audit())), got None (NoneType); a tensor's produced_by is None "
        "for data, gradients and parameters, and after a write from outside a kernel (copy_, an "
        "optimizer's update): there is no kernel to audit"
    )


@pytest.mark.parametrize("name", list(FUNCTIONS))
@pytest.mark.parametrize("value", ["relu", 3, {"op": "relu"}])
def test_other_values_are_refused_naming_value_and_type(name: str, value: object) -> None:
    shown = re.escape(f"{value!r} ({type(value).__name__})")
    with pytest.raises(BackendTypeError, match=rf"^report\.{name} takes a KernelAudit, .*, got {shown}$"):
        FUNCTIONS[name](value)


def test_a_plan_audit_is_refused_too() -> None:
    """The whole plan's audit is not one row (``plan.audit().kernels`` holds the rows)."""
    plan_audit = profiles.get("checked_cpu").plan_ops(["relu"]).audit()
    with pytest.raises(BackendTypeError, match=r"got KernelPlanAudit\("):
        report.audit_line(plan_audit)
    assert report.audit_line(plan_audit.kernels[0]).startswith("  relu: reference.relu ")


@pytest.mark.parametrize("name", list(FUNCTIONS))
def test_the_docstrings_state_the_input_and_the_error(name: str) -> None:
    doc = inspect.getdoc(getattr(report, name)) or ""
    assert "KernelAudit" in doc and ".audit()" in doc and "Raises:" in doc and "BackendTypeError" in doc


def test_an_audit_row_is_plain_data_and_the_documents_say_so() -> None:
    """review63 F6: a row changed by hand is printed as given (the report checks its type, not its
    origin), and the KernelAudit and report docstrings and the README say that only the sealed
    types are checked."""
    import dataclasses

    from torchlean.backend.audit import KernelAudit

    row = _relu_kernel().audit()
    forged = dataclasses.replace(row, capsule_name="evil.kernel")
    assert report.audit_line(forged).startswith("  relu: evil.kernel provider=reference ")
    assert "plain data, not sealed" in " ".join((KernelAudit.__doc__ or "").lower().split())
    for function in (report.audit_line, report.detailed_report_lines, report.audit_to_json,
                     report.checked_kernel_to_json):
        assert "plain data" in " ".join((function.__doc__ or "").split()), function.__name__
    readme = " ".join(documentation().split())
    assert "Only those three types are sealed: the audit row that `.audit()` makes" in readme


def _graph_plans() -> tuple[Any, Any]:
    plan = profiles.get("checked_cpu").accept_graph(relu_chain(2)).plan
    assert plan is not None
    return plan.graph_plan, plan.grouped_plan


PLAN_AUDIT = "a KernelPlanAudit as audit (what plan.audit() returns)"
GRAPH_PLAN = "a GraphKernelPlan as plan (what profile.plan_graph(graph) returns)"
GROUPED = "a GroupedKernelPlan as grouped (what to_coalesced_groups(plan) returns)"
POLICY = "a KernelPolicy as policy (profile.policy)"


@pytest.mark.parametrize(
    ("name", "call", "expected"),
    [
        ("rows_lines", lambda value: report.rows_lines(value), PLAN_AUDIT),
        ("boundary_line", lambda value: report.boundary_line(value), PLAN_AUDIT),
        ("check_lines", lambda value: report.check_lines(value),
         "a ContractCheck as check (what audit.check_contracts(policy) returns)"),
        ("summary_line", lambda value: report.summary_line("checked_cpu", value), POLICY),
        ("plan_report", lambda value: report.plan_report("checked_cpu", value, None), POLICY),
        ("plan_report", lambda value: report.plan_report(
            "checked_cpu", profiles.get("checked_cpu").policy, value
        ), "a KernelPlan as plan (what profile.plan_ops(ops) returns)"),
        ("graph_plan_lines", lambda value: report.graph_plan_lines(value), GRAPH_PLAN),
        ("group_lines", lambda value: report.group_lines(value, _graph_plans()[1]), GRAPH_PLAN),
        ("group_lines", lambda value: report.group_lines(_graph_plans()[0], value), GROUPED),
        ("verdict", lambda value: report.verdict(value),
         "a ContractCheck as check (what audit.check_contracts(policy) returns)"),
        ("profile_to_json", lambda value: report.profile_to_json("checked_cpu", value), POLICY),
        ("plan_to_json", lambda value: report.plan_to_json("checked_cpu", value, None), POLICY),
        ("plan_to_json", lambda value: report.plan_to_json(
            "checked_cpu", profiles.get("checked_cpu").policy, value
        ), "a KernelPlan as plan (what profile.plan_ops(ops) returns)"),
    ],
    ids=["rows_lines", "boundary_line", "check_lines", "summary_line", "plan_report-policy",
         "plan_report-plan", "graph_plan_lines", "group_lines-plan", "group_lines-grouped", "verdict",
         "profile_to_json", "plan_to_json-policy", "plan_to_json-plan"],
)  # fmt: skip
@pytest.mark.parametrize("value", [None, "relu"])
def test_the_plan_and_graph_helpers_refuse_what_they_do_not_take(
    name: str, call: Callable[[Any], Any], expected: str, value: object
) -> None:
    """review121 F3 (review180 F10: verdict, profile_to_json, plan_to_json): ``rows_lines(None)``,
    ``check_lines(None)``, ``summary_line('x', None)``,
    ``boundary_line(None)``, ``graph_plan_lines(None)`` and ``group_lines(None, None)`` raised an
    ``AttributeError`` from inside; each names the function, the argument, what it takes and the
    value, as ``audit_line`` does."""
    with pytest.raises(BackendTypeError) as info:
        call(value)
    assert str(info.value) == f"report.{name} takes {expected}, got {value!r} ({type(value).__name__})"


def test_the_plan_and_graph_helpers_render_what_they_take_as_before() -> None:
    profile = profiles.get("checked_cpu")
    plan = profile.plan_ops(["relu"])
    audit = plan.audit()
    assert report.rows_lines(audit)[0] == "relu -> reference.relu"
    assert report.boundary_line(audit) == "trusted external boundary: none"
    assert report.check_lines(audit.check_contracts("checked")) == ["checked: accepted"]
    assert report.verdict(audit.check_contracts("checked")) == "accepted"
    assert report.profile_to_json("checked_cpu", profile.policy)["device"] == "cpu"
    planned = report.plan_to_json("checked_cpu", profile.policy, plan)
    assert planned["kernels"][0]["capsule"] == "reference.relu"
    assert report.summary_line("checked_cpu", profile.policy).startswith("profile=checked_cpu device=cpu ")
    assert report.plan_report("checked_cpu", profile.policy, plan).splitlines()[1] == (
        "trusted external boundary: none"
    )
    graph_plan, grouped = _graph_plans()
    assert report.graph_plan_lines(graph_plan)[0] == "nodes 3, planned 2"
    assert report.group_lines(graph_plan, grouped) == ["kernels 2, groups 1", "  [1, 2] relu"]
