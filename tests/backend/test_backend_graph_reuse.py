"""Graph planning and acceptance reuse work per distinct op / (op, capsule) pair; results are unchanged.

``plan_graph`` selects once per distinct op, ``to_coalesced_groups`` folds runs in linear time and
``accept_graph_kernel_plan`` runs the gate once per distinct (op, capsule object) pair. The oracles
below are the definitions written out node by node and group by group (``choose_capsule`` for
every node, the left fold through ``KernelGroup.can_append`` rebuilding each tuple,
``acceptance_failures`` for every group), so any difference in content, order, identity of the
chosen capsules or messages fails.
"""

from __future__ import annotations

import dataclasses
from typing import Any

import pytest
from backend_builders import FakeGraph, FakeKind, FakeNode, make_capsule, misaligned, mlp_graph, relu_chain
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean.backend import acceptance as acceptance_module
from torchlean.backend import profiles, report
from torchlean.backend.acceptance import (
    AcceptanceFailure,
    accept_graph_kernel_plan,
    acceptance_failures,
    accepted_kernel_of_group,
    grouped_acceptance_failures,
)
from torchlean.backend.binding import KernelHandler, bind
from torchlean.backend.capsule import KernelCapsule, choose_capsule
from torchlean.backend.contracts import ContractEvidence
from torchlean.backend.errors import PlanningError
from torchlean.backend.graph import (
    GraphKernelPlan,
    GraphLike,
    GroupedKernelPlan,
    KernelGroup,
    PlannedNodeKernel,
    plan_graph,
    to_coalesced_groups,
)
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.sealed import UnmintedError, is_minted
from torchlean.backend.vocabulary import BackendOp, Device, Provider

# The one refusal of an unminted value, with or without python -O: ``<where>: <Class> was not minted
# by its gate (<gates>) or was changed since`` (review48 F2).
UNMINTED = r"^[\w.]+: \w+ was not minted by its gate \(torchlean\.backend\.[\w., ]+\) or was changed since$"


CHECKED_CPU = profiles.get("checked_cpu")
REF_RELU = next(c for c in reference.CAPSULES if c.name == "reference.relu")
REF_ADD = next(c for c in reference.CAPSULES if c.name == "reference.add")
PLANNING_PROFILES = [
    "checked_cpu",
    "fast_cpu",
    "libtorch_forward_cpu",
    "checked_cuda",
    "libtorch_forward_cuda",
]


# --- oracles: the node-by-node and group-by-group definitions ---------------------------------------


def oracle_plan(profile: BackendProfile, graph: GraphLike) -> GraphKernelPlan:
    available = profile.availability.filter_capsules(profile.registry())
    kernels: list[PlannedNodeKernel] = []
    missing: list[BackendOp] = []
    for node in graph.nodes:
        op = node.kind.backend_op
        if op is None:
            continue
        capsule = choose_capsule(profile.policy, op, available)
        if capsule is None:
            if op not in missing:
                missing.append(op)
            continue
        kernels.append(PlannedNodeKernel(node.id, node.kind, op, capsule))
    if missing:
        raise PlanningError(
            [
                f"no admissible kernel capsule for op {op.label} on device {profile.policy.device.label}"
                for op in missing
            ]
        )
    return GraphKernelPlan(len(graph.nodes), tuple(kernels))


def oracle_groups(plan: GraphKernelPlan) -> GroupedKernelPlan:
    groups: list[KernelGroup] = []
    for kernel in plan.kernels:
        if groups and groups[-1].can_append(kernel):
            last = groups[-1]
            groups[-1] = KernelGroup((*last.node_ids, kernel.node_id), last.op, last.capsule)
        else:
            groups.append(KernelGroup((kernel.node_id,), kernel.op, kernel.capsule))
    return GroupedKernelPlan(tuple(groups))


def oracle_failures(grouped: GroupedKernelPlan, profile: BackendProfile) -> tuple[AcceptanceFailure, ...]:
    return tuple(
        failure
        for group in grouped.groups
        for failure in acceptance_failures(group.to_planned_kernel(), profile.policy)
    )


def same_capsule_objects(a: tuple[KernelCapsule, ...], b: tuple[KernelCapsule, ...]) -> bool:
    return len(a) == len(b) and all(x is y for x, y in zip(a, b, strict=True))


def check_graph_against_oracles(profile: BackendProfile, graph: GraphLike) -> None:
    try:
        expected = oracle_plan(profile, graph)
    except PlanningError as error:
        with pytest.raises(PlanningError) as caught:
            plan_graph(profile.policy, profile.availability, profile.registry(), graph)
        assert caught.value.messages == error.messages
        return
    plan = plan_graph(profile.policy, profile.availability, profile.registry(), graph)
    assert plan == expected
    assert same_capsule_objects(
        tuple(k.capsule for k in plan.kernels), tuple(k.capsule for k in expected.kernels)
    )
    check_plan_against_oracles(profile, plan)


def check_plan_against_oracles(profile: BackendProfile, plan: GraphKernelPlan) -> None:
    grouped = to_coalesced_groups(plan)
    expected_groups = oracle_groups(plan)
    assert grouped == expected_groups
    assert same_capsule_objects(
        tuple(g.capsule for g in grouped.groups), tuple(g.capsule for g in expected_groups.groups)
    )
    expected_failures = oracle_failures(grouped, profile)
    assert grouped_acceptance_failures(grouped, profile.policy) == expected_failures
    result = accept_graph_kernel_plan(plan, profile.policy)
    assert result.grouped_plan == expected_groups
    assert result.failures == expected_failures
    assert [f.message for f in result.failures] == [f.message for f in expected_failures]
    if expected_failures:
        assert result.plan is None
        return
    accepted = result.plan
    assert accepted is not None and is_minted(accepted)
    assert accepted.graph_plan is plan and accepted.grouped_plan == expected_groups
    assert len(accepted.kernels) == len(expected_groups.groups)
    for group, kernel in zip(expected_groups.groups, accepted.kernels, strict=True):
        assert is_minted(kernel)
        assert kernel.op is group.op and kernel.capsule is group.capsule and kernel.policy == profile.policy


# --- real lowered graphs ----------------------------------------------------------------------------


def lowered_graphs() -> dict[str, GraphLike]:
    from torchlean import nn
    from torchlean.models import build_model
    from torchlean.nn.lowering import lower_model
    from torchlean.nn.model import build

    graphs: dict[str, GraphLike] = {"fake_mlp": mlp_graph(), "relu_chain": relu_chain(40)}
    layers = [layer for _ in range(6) for layer in (nn.linear(8, 8), nn.relu())]
    graphs["linear_relu_x6"] = lower_model(
        build(nn.sequential(*layers), input_shape=(8,), seed=0), (4, 8)
    ).built.graph
    for name in ("mlp", "cnn", "transformer"):
        layer, shape = build_model(name, 64, 10, hidden=16)
        graphs[name] = lower_model(build(layer, input_shape=shape, seed=0), (2, *shape)).built.graph
    return graphs


GRAPHS = lowered_graphs()


@pytest.mark.parametrize("profile_name", PLANNING_PROFILES)
@pytest.mark.parametrize("graph_name", sorted(GRAPHS))
def test_graph_planning_and_acceptance_match_the_per_node_definitions(
    profile_name: str, graph_name: str
) -> None:
    check_graph_against_oracles(profiles.get(profile_name), GRAPHS[graph_name])


def test_cuda_request_on_a_cpu_profile_reports_each_missing_op_once() -> None:
    cuda_request = dataclasses.replace(
        CHECKED_CPU, policy=dataclasses.replace(CHECKED_CPU.policy, device=Device.CUDA)
    )
    check_graph_against_oracles(cuda_request, GRAPHS["linear_relu_x6"])
    with pytest.raises(PlanningError) as caught:
        cuda_request.accept_graph(GRAPHS["linear_relu_x6"])
    assert caught.value.messages == [
        f"no admissible kernel capsule for op {op} on device cuda"
        for op in ("permute", "matmul", "broadcast", "add", "relu")
    ]


def test_groups_with_the_same_capsule_share_one_minted_kernel() -> None:
    result = CHECKED_CPU.accept_graph(GRAPHS["linear_relu_x6"])
    plan = result.plan
    assert plan is not None
    relu_groups = [i for i, group in enumerate(plan.grouped_plan.groups) if group.op is BackendOp.RELU]
    assert len(relu_groups) == 6
    shared = plan.kernels[relu_groups[0]]
    assert all(plan.kernels[i] is shared for i in relu_groups)
    assert len({id(kernel) for kernel in plan.kernels}) == len(set(plan.capsule_names)) == 5
    assert report.graph_result_lines(result)[:2] == ["accepted under checked", "30 rows, distinct capsules:"]


def _count_gate_runs(monkeypatch: pytest.MonkeyPatch) -> list[tuple[BackendOp, str]]:
    """Record every run of the module-level ``acceptance_failures`` (which ``accept`` calls)."""
    seen: list[tuple[BackendOp, str]] = []
    original = acceptance_module.acceptance_failures

    def spy(planned: Any, policy: Any) -> tuple[AcceptanceFailure, ...]:
        seen.append((planned.op, planned.capsule.name))
        return original(planned, policy)

    monkeypatch.setattr(acceptance_module, "acceptance_failures", spy)
    return seen


def test_acceptance_runs_the_gate_once_per_distinct_pair(monkeypatch: pytest.MonkeyPatch) -> None:
    """The documented cost model: one gate run per distinct (op, capsule) pair, accepted or not."""
    graph = GRAPHS["linear_relu_x6"]
    plan = CHECKED_CPU.plan_graph(graph)
    pairs = list(dict.fromkeys((g.op, g.capsule.name) for g in to_coalesced_groups(plan).groups))
    assert len(pairs) == 5 and len(to_coalesced_groups(plan).groups) == 30
    runs = _count_gate_runs(monkeypatch)
    result = accept_graph_kernel_plan(plan, CHECKED_CPU.policy)
    assert result.accepted
    assert runs == pairs  # once each, in first-use order
    runs.clear()
    rejected = accept_graph_kernel_plan(plan, dataclasses.replace(CHECKED_CPU.policy, device=Device.CUDA))
    assert not rejected.accepted and len(rejected.failures) == 30  # one device mismatch per group
    assert runs == pairs


def test_mutating_a_shared_kernel_is_refused_for_every_group_using_it() -> None:
    plan = CHECKED_CPU.accept_graph(GRAPHS["linear_relu_x6"]).plan
    assert plan is not None
    relu_groups = [i for i, group in enumerate(plan.grouped_plan.groups) if group.op is BackendOp.RELU]
    shared = accepted_kernel_of_group(plan, relu_groups[0])
    object.__setattr__(shared, "capsule", dataclasses.replace(REF_RELU))
    handler = KernelHandler(
        "TorchLean reference CPU", BackendOp.RELU, Provider.REFERENCE, Device.CPU, lambda c: c.name
    )
    for index in relu_groups:
        kernel = accepted_kernel_of_group(plan, index)  # the plan itself is intact
        assert not is_minted(kernel)
        with pytest.raises(UnmintedError, match=UNMINTED):
            bind(kernel, handler)


@pytest.mark.parametrize("field", ["graph_plan", "grouped_plan"])
def test_rebinding_a_large_plan_field_to_an_equal_value_is_refused(field: str) -> None:
    plan = CHECKED_CPU.accept_graph(relu_chain(3000)).plan
    assert plan is not None and is_minted(plan)
    value = getattr(plan, field)
    object.__setattr__(plan, field, dataclasses.replace(value))
    assert not is_minted(plan)
    with pytest.raises(UnmintedError, match=UNMINTED):
        report.accepted_graph_lines(plan)


def test_a_long_run_forms_one_group_in_order() -> None:
    plan = CHECKED_CPU.plan_graph(relu_chain(5000))
    grouped = to_coalesced_groups(plan)
    assert len(grouped.groups) == 1
    assert grouped.groups[0].node_ids == tuple(range(1, 5001))
    assert grouped.groups[0].capsule is REF_RELU


# --- generated graphs and plans ---------------------------------------------------------------------

KINDS = [
    FakeKind("input", None),
    FakeKind("const", None, "[4]"),
    FakeKind("relu", BackendOp.RELU),
    FakeKind("add", BackendOp.ADD),
    FakeKind("matmul", BackendOp.MATMUL),
    FakeKind("fft", BackendOp.FFT_FNO),  # no CPU capsule serves it
]


@st.composite
def fake_graphs(draw: st.DrawFn) -> FakeGraph:
    kinds = draw(st.lists(st.sampled_from(KINDS), max_size=40))
    return FakeGraph(tuple(FakeNode(i, (), kind, (4,)) for i, kind in enumerate(kinds)))


@settings(max_examples=150, deadline=None)
@given(fake_graphs(), st.sampled_from(PLANNING_PROFILES))
def test_generated_graphs_match_the_per_node_definitions(graph: FakeGraph, profile_name: str) -> None:
    check_graph_against_oracles(profiles.get(profile_name), graph)


TRUSTED_VALUE = dataclasses.replace(
    REF_RELU.value_contract, evidence=ContractEvidence.trusted_boundary("elsewhere")
)
# (planned op, capsule): catalog objects, an equal copy, rejected evidence, misalignment, a forged pairing
PAIRS = [
    (BackendOp.RELU, REF_RELU),
    (BackendOp.RELU, dataclasses.replace(REF_RELU)),
    (BackendOp.RELU, dataclasses.replace(REF_RELU, value_contract=TRUSTED_VALUE)),
    (BackendOp.RELU, misaligned(REF_RELU)),
    (BackendOp.RELU, make_capsule("other.relu", BackendOp.RELU, forward=False)),
    (BackendOp.ADD, REF_ADD),
    (BackendOp.ADD, REF_RELU),
]


@settings(max_examples=150, deadline=None)
@given(
    st.lists(st.sampled_from(range(len(PAIRS))), max_size=30),
    st.sampled_from(["checked_cpu", "libtorch_forward_cpu"]),
)
def test_generated_plans_group_and_accept_as_defined(choices: list[int], profile_name: str) -> None:
    kernels = tuple(
        PlannedNodeKernel(node_id, FakeKind(PAIRS[c][0].label, PAIRS[c][0]), PAIRS[c][0], PAIRS[c][1])
        for node_id, c in enumerate(choices, start=1)
    )
    check_plan_against_oracles(profiles.get(profile_name), GraphKernelPlan(len(kernels) + 1, kernels))
