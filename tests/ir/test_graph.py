"""Well-formedness of IR graphs: the verbatim messages of anchor-backend.md §2.8, one test each."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean.backend import profiles
from torchlean.backend.errors import TorchLeanError
from torchlean.ir import ops
from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node


def _relu_chain() -> Graph:
    return Graph(
        (
            Node(0, (), ops.Input(), (4,)),
            Node(1, (0,), ops.Relu(), (4,)),
            Node(2, (1,), ops.Relu(), (4,)),
            Node(3, (2,), ops.Relu(), (4,)),
        )
    )


def test_well_formed_graph_passes() -> None:
    _relu_chain().check_well_formed()


def test_ir_error_is_a_torchlean_error() -> None:
    assert issubclass(IRError, TorchLeanError)


def test_missing_node() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), None))  # type: ignore[arg-type]
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == "IR graph: internal error: missing node at index 1"


def test_id_discipline() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(7, (0,), ops.Relu(), (4,))))
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == "IR graph: id discipline violated at index 1: nodes[1].id = 7"


def test_bad_parent_count_range() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (0,), ops.Add(), (4,))))
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == (
        "IR graph: node 1: bad parent count for add: expected 2..2, got 1 "
        "(Node(id=1, kind=add, parents=[0], outShape=[4]))"
    )


def test_bad_parent_count_unbounded() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (0,), ops.Concat(0), (4,))))
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == (
        "IR graph: node 1: bad parent count for concat: expected at least 2, got 1 "
        "(Node(id=1, kind=concat 0, parents=[0], outShape=[4]))"
    )


def test_input_with_a_parent_is_refused() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (0,), ops.Const((4,)), (4,))))
    with pytest.raises(
        IRError, match=r"^IR graph: node 1: bad parent count for const: expected 0\.\.0, got 1 "
    ):
        graph.check_well_formed()


def test_parent_not_below() -> None:
    graph = Graph(
        (
            Node(0, (), ops.Input(), (4,)),
            Node(1, (0, 2), ops.Add(), (4,)),
            Node(2, (0,), ops.Relu(), (4,)),
        )
    )
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == (
        "IR graph: node 1: parent id 2 is not < 1 (Node(id=1, kind=add, parents=[0, 2], outShape=[4]))"
    )


def test_self_parent_is_refused() -> None:
    graph = Graph((Node(0, (0,), ops.Relu(), (4,)),))
    with pytest.raises(IRError, match=r"^IR graph: node 0: parent id 0 is not < 0 \("):
        graph.check_well_formed()


def test_negative_parent_id_has_its_own_message() -> None:
    # "-1 is not < 1" would be true arithmetic but a false diagnosis: the id is negative
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (-1,), ops.Relu(), (4,))))
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == (
        "IR graph: node 1: parent id -1 is negative (accepted: 0..0) "
        "(Node(id=1, kind=relu, parents=[-1], outShape=[4]))"
    )
    chain = Graph((*_relu_chain().nodes, Node(4, (3, -7), ops.Add(), (4,))))
    with pytest.raises(IRError, match=r"^IR graph: node 4: parent id -7 is negative \(accepted: 0\.\.3\) \("):
        chain.check_well_formed()
    first = Graph((Node(0, (-2,), ops.Relu(), (4,)),))
    with pytest.raises(IRError) as info:
        first.check_well_formed()
    assert str(info.value).startswith(
        "IR graph: node 0: parent id -2 is negative (accepted: none, node 0 has no earlier node) (Node(id=0, "
    )


def test_first_failure_wins() -> None:
    graph = Graph((Node(0, (1,), ops.Relu(), (4,)), Node(5, (), ops.Input(), (4,))))
    with pytest.raises(IRError, match=r"^IR graph: node 0: parent id 1 is not < 0"):
        graph.check_well_formed()


def test_node_lookup() -> None:
    graph = _relu_chain()
    assert graph.node(2).kind == ops.Relu()
    with pytest.raises(IRError) as info:
        graph.node(4)
    assert str(info.value) == "IR graph: node id out of bounds: 4"
    bad = Graph((Node(3, (), ops.Input(), (4,)),))
    with pytest.raises(IRError) as info:
        bad.node(0)
    assert str(info.value) == "IR graph: internal error: nodes[0].id = 3 (expected 0)"


def test_summary_rendering() -> None:
    node = Node(1, (0,), ops.Reshape((4,), (1, 4)), (1, 4))
    assert node.summary() == "Node(id=1, kind=reshape [4] [1, 4], parents=[0], outShape=[1, 4])"
    scalar = Node(3, (1, 2), ops.MseLoss(), ())
    assert scalar.summary() == "Node(id=3, kind=mse_loss, parents=[1, 2], outShape=[])"


def test_nodes_and_graphs_are_frozen() -> None:
    graph = _relu_chain()
    with pytest.raises(AttributeError):
        graph.nodes[0].id = 3  # type: ignore[misc]
    with pytest.raises(AttributeError):
        graph.nodes = ()  # type: ignore[misc]
    assert isinstance(graph.nodes, tuple)
    assert Node(0, [1], ops.Relu(), [4]).parents == (1,)  # type: ignore[arg-type]


# ------------------------------------------- malformed hand-built nodes (review 18, F4)

_KIND_ACCEPTED = "(accepted: an instance of an OpKind subclass of torchlean.ir.ops, e.g. Relu())"


@pytest.mark.parametrize(
    ("kind", "shown"),
    [
        ("relu", "'relu' (str)"),
        (ops.Relu, "<class 'torchlean.ir.ops.Relu'> (type)"),
        (None, "None (NoneType)"),
    ],
)
def test_kind_that_is_not_an_op_kind_instance(kind: object, shown: str) -> None:
    graph = Graph((Node(0, (), ops.Input(), (3,)), Node(1, (0,), kind, (3,))))  # type: ignore[arg-type]
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == f"IR graph: node 1: kind {shown} is not an OpKind instance {_KIND_ACCEPTED}"


@pytest.mark.parametrize(
    ("parent", "shown"),
    [
        (0.5, "0.5 (float)"),
        (0.0, "0.0 (float)"),
        ("0", "'0' (str)"),
        (True, "True (bool)"),
        (None, "None (NoneType)"),
    ],
)
def test_parent_id_that_is_not_an_integer(parent: object, shown: str) -> None:
    graph = Graph((Node(0, (), ops.Input(), (3,)), Node(1, (parent,), ops.Relu(), (3,))))  # type: ignore[arg-type]
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == (
        f"IR graph: node 1: parent id {shown} is not an integer (accepted: an int in 0..0) "
        f"(parents=({parent!r},), kind=relu)"
    )


def test_parent_id_of_node_zero_that_is_not_an_integer() -> None:
    graph = Graph((Node(0, (1.5,), ops.Relu(), (3,)),))  # type: ignore[arg-type]
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == (
        "IR graph: node 0: parent id 1.5 (float) is not an integer "
        "(accepted: none, node 0 has no earlier node) (parents=(1.5,), kind=relu)"
    )


def test_numpy_integer_ids_and_parents_are_integers() -> None:
    graph = Graph((Node(0, (), ops.Input(), (3,)), Node(np.int64(1), (np.int32(0),), ops.Relu(), (3,))))
    graph.check_well_formed()


def test_bool_node_id_breaks_id_discipline() -> None:
    graph = Graph((Node(0, (), ops.Input(), (3,)), Node(True, (0,), ops.Relu(), (3,))))
    with pytest.raises(IRError) as info:
        graph.check_well_formed()
    assert str(info.value) == "IR graph: id discipline violated at index 1: nodes[1].id = True"


@pytest.mark.parametrize(("dim", "fault"), [(-4, "-4 is negative"), (2.5, "2.5 is not an integer"),
                                            (True, "True is not an integer"), ("3", "'3' is not an integer")])
def test_a_declared_extent_that_is_not_a_natural_is_ill_formed(dim: object, fault: str) -> None:
    """review117 F6: ``accept_graph`` printed "accepted under checked" for a graph declaring
    ``[-4]`` or ``[2.5]``; the original's extents are naturals, so such a graph is ill-formed."""
    graph = Graph((Node(0, (), ops.Input(), (2, dim)), Node(1, (0,), ops.Relu(), (2, 3))))
    with pytest.raises(IRError, match=r"^IR graph: node 0: outShape extent ") as info:
        graph.check_well_formed()
    assert f"outShape extent {fault} (accepted: integers >= 0) (" in str(info.value)
    with pytest.raises(IRError, match=r"outShape extent "):
        profiles.get("checked_cpu").accept_graph(graph)
    Graph((Node(0, (), ops.Input(), (np.int64(2), 0)),)).check_well_formed()  # numpy ints and 0 are extents
