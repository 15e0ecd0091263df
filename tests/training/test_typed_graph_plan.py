"""The typed-graph executor only runs plans the gate minted, and only for their own graph."""

from __future__ import annotations

import itertools

import pytest
from beartype.roar import BeartypeCallHintViolation

from torchlean import nn
from torchlean.autograd.typed_graph import GraphProgram, node_kernels
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedGraphKernelPlan
from torchlean.backend.errors import SessionError
from torchlean.ir.builder import GraphBuilder
from torchlean.nn.lowering import lower_model


def _lowered(widths: tuple[int, ...]):
    layers: list[nn.Layer] = [nn.linear(widths[0], widths[1])]
    for a, b in itertools.pairwise(widths[1:]):
        layers += [nn.relu(), nn.linear(a, b)]
    return lower_model(nn.build(nn.sequential(*layers), seed=0), (widths[0],))


def test_forged_plan_is_refused_before_anything_runs() -> None:
    forged = object.__new__(AcceptedGraphKernelPlan)
    with pytest.raises(BeartypeCallHintViolation):
        node_kernels(forged)
    low = _lowered((4, 8, 1))
    with pytest.raises(BeartypeCallHintViolation):
        GraphProgram(low.built.graph, low.built.payloads, forged, low.param_nodes, low.payload_params)


def test_plan_of_another_graph_is_refused() -> None:
    small, large = _lowered((4, 1)), _lowered((4, 8, 1))
    plan = profiles.get("checked_cpu").accept_graph(small.built.graph).plan
    assert plan is not None
    with pytest.raises(SessionError, match="the accepted plan covers nodes \\[1, 3, 4, 6, 7, 8\\]"):
        GraphProgram(large.built.graph, large.built.payloads, plan, large.param_nodes, large.payload_params)


def _chain(kind: str, extra: int = 0):
    builder = GraphBuilder()
    x = builder.input([4])
    for _ in range(2):
        x = getattr(builder, kind)(x)
    for _ in range(extra):
        builder.input([4])  # a node without a kernel: same kernel nodes, another graph size
    return builder.build().graph


def test_plan_of_a_graph_with_the_same_nodes_but_other_ops_is_refused() -> None:
    """A relu chain's plan on a tanh chain (same node ids) must not run tanh nodes on relu."""
    plan = profiles.get("checked_cpu").accept_graph(_chain("relu")).plan
    assert plan is not None
    with pytest.raises(
        SessionError, match=r"node 1 is `tanh`, but the accepted plan runs `reference.relu` \(`relu`\)"
    ):
        GraphProgram(_chain("tanh"), {}, plan, {}, {})
    with pytest.raises(SessionError, match=r"made for a graph of 3 nodes, but this graph has 4"):
        GraphProgram(_chain("relu", extra=1), {}, plan, {}, {})
    GraphProgram(_chain("relu"), {}, plan, {}, {})  # its own graph binds


def test_each_planned_node_runs_on_its_groups_kernel() -> None:
    low = _lowered((4, 8, 1))
    plan = profiles.get("checked_cpu").accept_graph(low.built.graph).plan
    assert plan is not None
    table = node_kernels(plan)
    assert sorted(table) == [1, 3, 4, 6, 7, 8, 9, 10, 12, 13, 15, 16, 17]
    assert {node: k.capsule.name for node, k in table.items()}[9] == "reference.relu"
