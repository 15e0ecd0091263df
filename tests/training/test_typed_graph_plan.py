"""The typed-graph executor only runs plans the gate minted, and only for their own graph."""

from __future__ import annotations

import itertools
import re

import pytest

from torchlean import nn
from torchlean.autograd.typed_graph import GraphProgram, node_kernels
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedGraphKernelPlan
from torchlean.backend.errors import SessionError
from torchlean.backend.sealed import UnmintedError
from torchlean.ir.builder import GraphBuilder
from torchlean.nn.lowering import lower_model

# The one refusal of an unminted value, with or without python -O: ``<where>: <Class> was not minted
# by its gate (<gates>) or was changed since`` (review48 F2).
UNMINTED = r"^[\w.]+: \w+ was not minted by its gate \(torchlean\.backend\.[\w., ]+\) or was changed since$"


def _lowered(widths: tuple[int, ...]):
    layers: list[nn.Layer] = [nn.linear(widths[0], widths[1])]
    for a, b in itertools.pairwise(widths[1:]):
        layers += [nn.relu(), nn.linear(a, b)]
    return lower_model(nn.build(nn.sequential(*layers), seed=0), (widths[0],))


def test_forged_plan_is_refused_before_anything_runs() -> None:
    forged = object.__new__(AcceptedGraphKernelPlan)
    with pytest.raises(UnmintedError, match=UNMINTED):
        node_kernels(forged)
    low = _lowered((4, 8, 1))
    with pytest.raises(UnmintedError, match=UNMINTED):
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


def _accepted_program(built):
    plan = profiles.get("checked_cpu").accept_graph(built.graph).plan
    assert plan is not None
    return GraphProgram(built.graph, built.payloads, plan, {}, {})


@pytest.mark.parametrize(
    ("config", "shape", "got"),
    [
        # asymmetric padding: the kernel pads symmetrically, so the value would not have the
        # declared [1, 1, 6, 5] (it ran and returned [1, 1, 4, 4] before)
        ({"padding": (0, 0), "padding_after": (2, 1), "channel_axis": 1}, [1, 1, 6, 6],
         "channel_axis 1, padding [0, 0], padding_after [2, 1]"),
        ({"padding": (1, 1), "channel_axis": 0}, [1, 6, 6],
         "channel_axis 0, padding [1, 1], padding_after [1, 1]"),
    ],
)
def test_conv_layouts_the_kernel_does_not_take_are_refused_at_construction(config, shape, got) -> None:
    import numpy as np

    from torchlean.ir import ConvConfig

    builder = GraphBuilder()
    weight = np.ones((1, 1, 3, 3))
    builder.sum(builder.conv(builder.input(shape), ConvConfig(1, 1, (3, 3), **config), weight))
    _assert_not_executable(
        builder,
        "conv",
        rf"the conv kernel takes \(N, C, \*spatial\) inputs with symmetric padding \(accepted: "
        rf"channel_axis 1 and padding_after = padding, got {re.escape(got)}\)",
    )


@pytest.mark.parametrize("kind", ["max_pool", "avg_pool"])
@pytest.mark.parametrize("shape", [[3, 6, 6], [2, 2, 3, 6, 6]])
def test_pools_over_other_than_batched_channel_first_inputs_are_refused(kind, shape) -> None:
    from torchlean.ir import WindowConfig

    builder = GraphBuilder()
    getattr(builder, kind)(builder.input(shape), WindowConfig((2, 2), (2, 2), (0, 0)))
    _assert_not_executable(
        builder,
        kind,
        rf"the pooling kernels take \(N, C, \*spatial\) inputs \(accepted: rank 4 for 2 spatial axes, "
        rf"got shape {re.escape(str(shape))}\)",
    )


def _assert_not_executable(builder: GraphBuilder, kind: str, why: str) -> None:
    """``GraphProgram`` refuses node 1 (of ``kind``) at construction, saying ``why``."""
    with pytest.raises(
        SessionError,
        match=rf"^typed graph: node 1 \({kind} .*\) is not executable: {why}; torchlean.ir.evaluate runs it$",
    ):
        _accepted_program(builder.build())


def test_a_graph_declaring_a_shape_its_node_does_not_produce_is_refused() -> None:
    from torchlean.ir.errors import IRError
    from torchlean.ir.graph import Graph, Node

    graph = _chain("relu")
    nodes = list(graph.nodes)
    nodes[1] = Node(1, nodes[1].parents, nodes[1].kind, (5,))  # relu of a [4] declared [5]
    wrong = Graph(tuple(nodes))
    plan = profiles.get("checked_cpu").accept_graph(wrong).plan
    assert plan is not None  # planning looks at kinds only
    with pytest.raises(IRError, match=r"node 1: outShape mismatch: inferred=\[4\], declared=\[5\]"):
        GraphProgram(wrong, {}, plan, {}, {})


def test_a_kernel_refusal_names_the_graph_node() -> None:
    """A guard's refusal while running (a float64 const added to a float32 input) carries the
    node it came from as a note, as ``evaluate`` prefixes ``node i (kind)``."""
    import numpy as np

    import torchlean as tl
    from torchlean.backend.errors import GuardError
    from torchlean.tensor import Tensor

    builder = GraphBuilder()
    x = builder.input([3])
    builder.add(x, builder.const(np.ones(3, dtype=np.float64)))
    program = _accepted_program(builder.build())
    refused = pytest.raises(GuardError, match="operand b has dtype float64")
    with tl.session(profile="checked_cpu"), refused as caught:
        program.run([Tensor(np.ones(3, dtype=np.float32))], [], 2)
    assert caught.value.__notes__ == ["typed graph: at node 2 (add)"]
