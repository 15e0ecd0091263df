"""Graph planning, grouping and graph acceptance over a test-only IR-protocol graph.

Expected outputs: the seed chapter's "Graph Kernel Planning" transcripts and anchor-backend.md
§6.8–§6.11, rendered the Python way (``reshape [4] [1, 4]``, ``[1, 2, 3]``).
"""

from __future__ import annotations

import dataclasses

import pytest
from backend_builders import FakeGraph, FakeKind, FakeNode, make_capsule, mlp_graph, relu_chain

from torchlean.backend import profiles, report
from torchlean.backend.acceptance import accept_graph_kernel_plan
from torchlean.backend.contracts import ContractEvidence, EvidenceKind
from torchlean.backend.errors import PlanningError, TorchLeanError
from torchlean.backend.fields import BackendTypeError
from torchlean.backend.graph import (
    GraphKernelPlan,
    PlannedNodeKernel,
    checked_plan_graph,
    plan_graph,
    to_coalesced_groups,
)
from torchlean.backend.policy import AssurancePolicy
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.registry import CapsuleModule
from torchlean.backend.vocabulary import BackendOp, Device, ReductionPolicy, TrustLevel

CHECKED_CPU = profiles.get("checked_cpu")
REF_RELU = next(c for c in reference.CAPSULES if c.name == "reference.relu")
RELU_KIND = FakeKind("relu", BackendOp.RELU)


def test_mlp_graph_plan() -> None:
    plan = CHECKED_CPU.plan_graph(mlp_graph())
    assert report.graph_plan_lines(plan) == [
        "nodes 18, planned 13",
        "  1 reshape [4] [1, 4] -> reference.reshape",
        "  3 transpose 0 1 -> reference.permute",
        "  4 matmul -> reference.matmul",
        "  6 broadcast_to [8] [1, 8] -> reference.broadcast",
        "  7 add -> reference.add",
        "  8 reshape [1, 8] [8] -> reference.reshape",
        "  9 relu -> reference.relu",
        "  10 reshape [8] [1, 8] -> reference.reshape",
        "  12 transpose 0 1 -> reference.permute",
        "  13 matmul -> reference.matmul",
        "  15 broadcast_to [1] [1, 1] -> reference.broadcast",
        "  16 add -> reference.add",
        "  17 reshape [1, 1] [1] -> reference.reshape",
    ]
    missing = sorted(set(range(18)) - set(plan.node_ids))
    assert missing == [0, 2, 5, 11, 14]


def test_mlp_groups() -> None:
    plan = CHECKED_CPU.plan_graph(mlp_graph())
    assert report.group_lines(plan, to_coalesced_groups(plan)) == [
        "kernels 13, groups 13",
        "  [1] reshape",
        "  [3] permute",
        "  [4] matmul",
        "  [6] broadcast",
        "  [7] add",
        "  [8] reshape",
        "  [9] relu",
        "  [10] reshape",
        "  [12] permute",
        "  [13] matmul",
        "  [15] broadcast",
        "  [16] add",
        "  [17] reshape",
    ]


def test_relu_chain_forms_one_group() -> None:
    plan = CHECKED_CPU.plan_graph(relu_chain(3))
    assert report.group_lines(plan, to_coalesced_groups(plan), with_capsule=True) == [
        "kernels 3, groups 1",
        "  [1, 2, 3] relu reference.relu",
    ]


def test_mlp_graph_is_accepted() -> None:
    result = CHECKED_CPU.accept_graph(mlp_graph())
    assert result.accepted
    assert report.graph_result_lines(result) == [
        "accepted under checked",
        "13 rows, distinct capsules:",
        "  reference.reshape",
        "  reference.permute",
        "  reference.matmul",
        "  reference.broadcast",
        "  reference.add",
        "  reference.relu",
    ]


def test_two_relu_graph_acceptance_facts() -> None:
    result = CHECKED_CPU.accept_graph(relu_chain(2))
    assert result.plan is not None
    assert result.plan.capsule_names == ("reference.relu",)
    assert result.plan.node_ids == (1, 2)
    audit = result.plan.audit()
    assert len(audit.kernels) == 1
    assert not audit.has_trusted_external
    assert [k.capsule for k in result.plan.kernels] == [REF_RELU]


def test_cuda_profile_selects_native_capsules_for_the_same_graph() -> None:
    plan = profiles.get("checked_cuda").plan_graph(mlp_graph())
    assert set(plan.capsule_names) == {
        "native_cuda.reshape",
        "native_cuda.permute",
        "native_cuda.matmul",
        "native_cuda.broadcast",
        "native_cuda.add",
        "native_cuda.relu",
    }


def test_cuda_request_on_cpu_build_is_rejected() -> None:
    cuda_request = dataclasses.replace(
        CHECKED_CPU, policy=dataclasses.replace(CHECKED_CPU.policy, device=Device.CUDA)
    )
    with pytest.raises(PlanningError) as caught:
        cuda_request.plan_graph(mlp_graph())
    assert caught.value.messages == [
        f"no admissible kernel capsule for op {op} on device cuda"
        for op in ("reshape", "permute", "matmul", "broadcast", "add", "relu")
    ]


def test_well_formedness_is_checked_before_planning() -> None:
    bad_id = FakeGraph((FakeNode(0, (), FakeKind("input", None), (4,)), FakeNode(5, (0,), RELU_KIND, (4,))))
    with pytest.raises(
        TorchLeanError, match=r"IR graph: id discipline violated at index 1: nodes\[1\]\.id = 5"
    ):
        CHECKED_CPU.plan_graph(bad_id)
    # a graph that would also fail planning reports the well-formedness error first
    forward_ref = FakeGraph((FakeNode(0, (1,), FakeKind("fft", BackendOp.FFT_FNO), (4,)),))
    with pytest.raises(TorchLeanError, match="IR graph: node 0: parent id 1 is not < 0") as caught:
        CHECKED_CPU.plan_graph(forward_ref)
    assert not isinstance(caught.value, PlanningError)


def _two_relu_plan(second: object) -> GraphKernelPlan:
    assert isinstance(second, type(REF_RELU))
    return GraphKernelPlan(
        3,
        (
            PlannedNodeKernel(1, RELU_KIND, BackendOp.RELU, REF_RELU),
            PlannedNodeKernel(2, RELU_KIND, BackendOp.RELU, second),
        ),
    )


def _variants() -> dict[str, object]:
    trusted_value = dataclasses.replace(
        REF_RELU.value_contract, evidence=ContractEvidence.trusted_boundary("elsewhere")
    )
    return {
        "trust": dataclasses.replace(REF_RELU, trust_level=TrustLevel.TRUSTED_EXTERNAL),
        "evidence": dataclasses.replace(REF_RELU, value_contract=trusted_value),
        "alignment": dataclasses.replace(REF_RELU, shape_contract=REF_RELU.value_contract),
        "forward": dataclasses.replace(REF_RELU, supports_forward=False),
        "reduction": dataclasses.replace(
            REF_RELU,
            numerical_policy=dataclasses.replace(
                REF_RELU.numerical_policy, reduction=ReductionPolicy.FIXED_LEFT
            ),
        ),
    }


@pytest.mark.parametrize("difference", ["trust", "evidence", "alignment", "forward", "reduction"])
def test_differing_capsules_form_two_groups(difference: str) -> None:
    second = _variants()[difference]
    plan = _two_relu_plan(second)
    grouped = to_coalesced_groups(plan)
    assert len(grouped.groups) == 2
    assert grouped.node_ids == (1, 2)
    result = accept_graph_kernel_plan(plan, CHECKED_CPU.policy)
    if difference == "reduction":
        assert result.accepted
        assert result.plan is not None and result.plan.capsule_names == ("reference.relu", "reference.relu")
    else:
        assert not result.accepted
        assert result.plan is None
        assert result.failures
        assert all(
            report_line.startswith("rejected: reference.relu ")
            for report_line in report.graph_result_lines(result)
        )


def test_identical_capsule_objects_and_equal_copies_group_together() -> None:
    plan = _two_relu_plan(dataclasses.replace(REF_RELU))
    assert len(to_coalesced_groups(plan).groups) == 1


def test_grouping_is_over_planned_kernels_not_raw_nodes() -> None:
    # relu(1), const(2), relu(3): the const needs no kernel, so the two relus are adjacent kernels
    graph = FakeGraph(
        (
            FakeNode(0, (), FakeKind("input", None), (4,)),
            FakeNode(1, (0,), RELU_KIND, (4,)),
            FakeNode(2, (), FakeKind("const", None, "[4]"), (4,)),
            FakeNode(3, (1,), RELU_KIND, (4,)),
        )
    )
    plan = CHECKED_CPU.plan_graph(graph)
    assert [g.node_ids for g in to_coalesced_groups(plan).groups] == [(1, 3)]


def test_graph_plan_with_prepended_module() -> None:
    replacement = make_capsule("replacement.relu", BackendOp.RELU)
    profile = CHECKED_CPU.with_capsule_modules([CapsuleModule("extra", (replacement,))])
    assert profile.plan_graph(relu_chain(2)).capsule_names == ("replacement.relu", "replacement.relu")


def test_graph_records_and_grouping_refuse_what_is_not_a_graph_plan() -> None:
    """review121 F3: ``GraphKernelPlan(3, [1])`` was built silently and ``to_coalesced_groups(None)``
    raised an ``AttributeError``; the plan's kernels are checked as ``KernelPlan`` checks its own."""
    plan = CHECKED_CPU.plan_graph(relu_chain(2))
    assert GraphKernelPlan(plan.node_count, list(plan.kernels)) == plan  # a list is stored as a tuple
    with pytest.raises(BackendTypeError) as info:
        GraphKernelPlan(3, [1])  # type: ignore[list-item]
    assert str(info.value) == "GraphKernelPlan.kernels[0] must be a PlannedNodeKernel, got 1 (int)"
    for count in ("x", -1, 2.0, True):  # review126 F6: "x" printed "nodes x, planned 0"
        with pytest.raises(BackendTypeError, match=r"^GraphKernelPlan.node_count must be an integer >= 0"):
            GraphKernelPlan(count, [])  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError) as info:
        to_coalesced_groups(None)  # type: ignore[arg-type]
    assert str(info.value) == "plan must be a GraphKernelPlan, got None (NoneType)"
    with pytest.raises(BackendTypeError, match=r"^plan must be a GraphKernelPlan, got KernelPlan\("):
        to_coalesced_groups(plan.to_kernel_plan())  # type: ignore[arg-type]


def test_module_level_plan_graph_checks_its_arguments_once() -> None:
    """The planner's checks at ``plan_graph``'s entry (it chooses with the unchecked chooser, once
    per distinct op): a policy, availability or registry of the wrong type, and a node kind whose
    ``backend_op`` is not a ``BackendOp``, are named, not an ``AttributeError``."""
    availability, registry = CHECKED_CPU.availability, CHECKED_CPU.registry()
    assert plan_graph(CHECKED_CPU.policy, availability, registry, relu_chain(2)).capsule_names == (
        "reference.relu",
        "reference.relu",
    )
    for arguments, message in (
        ((None, availability, registry), "policy must be a KernelPolicy, got None (NoneType)"),
        ((CHECKED_CPU.policy, None, registry), "availability must be an Availability, got None (NoneType)"),
        ((CHECKED_CPU.policy, availability, [1]), "registry[0] must be a KernelCapsule, got 1 (int)"),
    ):
        with pytest.raises(BackendTypeError) as info:
            plan_graph(*arguments, relu_chain(2))  # type: ignore[arg-type]
        assert str(info.value) == message
    input_node = FakeNode(0, (), FakeKind("input", None), (4,))
    labelled = FakeGraph((input_node, FakeNode(1, (0,), FakeKind("relu", "relu"), (4,))))  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError) as info:
        plan_graph(CHECKED_CPU.policy, availability, registry, labelled)
    assert str(info.value) == "graph.nodes[1]: kind.backend_op must be a BackendOp or None, got 'relu' (str)"
    # review126 F4: an unhashable backend_op, a node that is no node, a graph that is no graph
    unhashable = FakeGraph((input_node, FakeNode(1, (0,), FakeKind("relu", ["relu"]), (4,))))  # type: ignore[arg-type]
    refusal = r"^graph.nodes\[1\]: kind.backend_op must be a BackendOp or None, got \['relu'\] \(list\)$"
    with pytest.raises(BackendTypeError, match=refusal):
        plan_graph(CHECKED_CPU.policy, availability, registry, unhashable)
    with pytest.raises(BackendTypeError, match=r"^graph.nodes\[1\] must be an IR node \(with .id and "
                       r".kind.backend_op\), got 1 \(int\)$"):
        plan_graph(CHECKED_CPU.policy, availability, registry, FakeGraph((input_node, 1)))  # type: ignore[arg-type]
    for graph in (None, 5):
        with pytest.raises(BackendTypeError, match=r"^graph must be an IR graph \(an object with .nodes"):
            plan_graph(CHECKED_CPU.policy, availability, registry, graph)  # type: ignore[arg-type]
        with pytest.raises(BackendTypeError, match=r"^graph must be an IR graph"):
            checked_plan_graph(CHECKED_CPU.policy, availability, registry, graph)  # type: ignore[arg-type]


def test_a_rejected_graph_reports_each_distinct_failure_once() -> None:
    """review154 L2: every group planned with a refused capsule shares its verdict, so the MLP's
    two matmul groups (and two add groups, ...) printed each failure once per group;
    ``result.failures`` still holds every group's."""
    policy = dataclasses.replace(CHECKED_CPU.policy, assurance=_NoTestSuites())
    result = dataclasses.replace(CHECKED_CPU, policy=policy).accept_graph(mlp_graph())
    lines = report.graph_result_lines(result)
    assert lines == [f"rejected: {m}" for m in dict.fromkeys(f.message for f in result.failures)]
    assert lines and len(lines) < len(result.failures)
    assert sum("reference.matmul" in line for line in lines) == 2  # its value and VJP evidence


@dataclasses.dataclass(frozen=True, slots=True)
class _NoTestSuites(AssurancePolicy):
    """A narrowing assurance: checked, but no test suite counts as evidence."""

    def accepts_evidence(self, evidence: ContractEvidence) -> bool:
        suite = evidence.kind is EvidenceKind.TEST_SUITE
        return AssurancePolicy.accepts_evidence(self, evidence) and not suite
