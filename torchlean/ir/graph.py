"""Nodes and graphs of the canonical IR (``NN.IR.Node`` / ``NN.IR.Graph``, anchor-runtime.md §4.3).

A graph is a tuple of nodes in topological order: node ``i`` has ``id == i`` and every parent id
is smaller than its own. Structure only: constant values and layer parameters live in a payload
store keyed by node id (:mod:`torchlean.ir.payloads`); shapes are checked by
:func:`torchlean.ir.infer.check_shapes`.

This is the IR/graph protocol ``torchlean.backend.graph`` plans over: ``graph.nodes``,
``graph.check_well_formed()``, ``node.id``, ``node.parents``, ``node.kind`` (with ``backend_op`` and
``describe()``) and ``node.out_shape``.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from torchlean._checks import is_builtin_or_numpy_int
from torchlean.backend.fields import describe
from torchlean.ir.errors import IRError
from torchlean.ir.ops import OpKind, Shape, render_shape

__all__ = ["Graph", "Node", "require_graph"]


@dataclass(frozen=True, slots=True)
class Node:
    """One IR node: ``id``, parent ids (data dependencies), operation ``kind``, declared out shape."""

    id: int
    parents: tuple[int, ...]
    kind: OpKind
    out_shape: Shape

    def __post_init__(self) -> None:
        object.__setattr__(self, "parents", tuple(self.parents))
        object.__setattr__(self, "out_shape", tuple(self.out_shape))

    def summary(self) -> str:
        """``Node(id=1, kind=reshape [4] [1, 4], parents=[0], outShape=[1, 4])`` (anchor-backend §2.8)."""
        return (
            f"Node(id={self.id}, kind={self.kind.describe()}, parents={render_shape(self.parents)}, "
            f"outShape={render_shape(self.out_shape)})"
        )

    def arity_error(self) -> str | None:
        """The original's ``arityError`` text when the parent count is outside the kind's arity."""
        got = len(self.parents)
        lo, hi = self.kind.arity
        if hi is None:
            if got >= lo:
                return None
            return f"bad parent count for {self.kind.tag}: expected at least {lo}, got {got}"
        if lo <= got <= hi:
            return None
        return f"bad parent count for {self.kind.tag}: expected {lo}..{hi}, got {got}"


@dataclass(frozen=True, slots=True)
class Graph:
    """An IR graph: ``nodes[i]`` is the node with id ``i``, parents before children.

    Construction does not validate (so ill-formed graphs can be diagnosed); call
    :meth:`check_well_formed`, or :func:`torchlean.ir.infer.check_shapes` for shapes as well.
    """

    nodes: tuple[Node, ...]

    def __post_init__(self) -> None:
        object.__setattr__(self, "nodes", tuple(self.nodes))

    def __len__(self) -> int:
        return len(self.nodes)

    def __iter__(self) -> Iterator[Node]:
        return iter(self.nodes)

    def check_well_formed(self) -> None:
        """Check id discipline, arity and topological order, node by node; first failure wins.

        Raises:
            IRError: with the verbatim messages of anchor-backend.md §2.8:
              ``IR graph: internal error: missing node at index i`` (an entry that is not a Node),
              ``IR graph: id discipline violated at index i: nodes[i].id = j``,
              ``IR graph: node i: bad parent count for TAG: expected a..b, got n (Node(...))``
              (``expected at least a`` for ``concat``),
              ``IR graph: node i: parent id p is not < i (Node(...))``; a negative parent id
              (impossible in the original, whose ids are naturals) gives
              ``IR graph: node i: parent id p is negative (accepted: 0..i-1) (Node(...))``
              (``accepted: none, node 0 has no earlier node`` for node 0). torchlean's own, checked
              before arity and order: a kind that is not an :class:`OpKind` instance (a string, the
              class itself) gives ``IR graph: node i: kind 'relu' (str) is not an OpKind instance
              (accepted: an instance of an OpKind subclass of torchlean.ir.ops, e.g. Relu())``; a
              parent id that is not a Python or numpy integer (a bool, float or string) gives
              ``IR graph: node i: parent id 0.5 (float) is not an integer (accepted: an int in
              0..i-1) (parents=(0.5,), kind=relu)``; an id that is not an integer gives the id
              discipline message (``nodes[1].id = True``); checked after each node's parents (so node 0's
              bad extent is named before node 1's bad parent), a declared ``out_shape``
              extent that is not a Python or numpy integer >= 0 (the original's extents are
              naturals, so acceptance must not pass such a graph: review117 F6) gives ``IR graph:
              node i: outShape extent -4 is negative (accepted: integers >= 0) (Node(...))`` or
              ``IR graph: node i: outShape extent 2.5 is not an integer (accepted: integers >= 0)
              (outShape=(2.5,), kind=input)``. Whether the declared shapes agree with the ops is
              :func:`~torchlean.ir.infer.check_shapes`' to say, not this structural check's (nor
              planning's).
        """
        for index, node in enumerate(self.nodes):
            if not isinstance(node, Node):
                raise IRError(f"IR graph: internal error: missing node at index {index}")
            if not is_builtin_or_numpy_int(node.id) or node.id != index:
                shown = node.id if is_builtin_or_numpy_int(node.id) else repr(node.id)
                raise IRError(
                    f"IR graph: id discipline violated at index {index}: nodes[{index}].id = {shown}"
                )
            if not isinstance(node.kind, OpKind):
                raise IRError(
                    f"IR graph: node {index}: kind {describe(node.kind)} is not an OpKind instance "
                    "(accepted: an instance of an OpKind subclass of torchlean.ir.ops, e.g. Relu())"
                )
            for parent in node.parents:
                if not is_builtin_or_numpy_int(parent):
                    accepted = f"an int in 0..{index - 1}" if index else "none, node 0 has no earlier node"
                    raise IRError(
                        f"IR graph: node {index}: parent id {describe(parent)} is not an integer "
                        f"(accepted: {accepted}) (parents={node.parents!r}, kind={node.kind.describe()})"
                    )
            arity = node.arity_error()
            if arity is not None:
                raise IRError(f"IR graph: node {index}: {arity} ({node.summary()})")
            for parent in node.parents:
                if parent < 0:
                    accepted = f"0..{node.id - 1}" if node.id > 0 else "none, node 0 has no earlier node"
                    raise IRError(
                        f"IR graph: node {index}: parent id {parent} is negative "
                        f"(accepted: {accepted}) ({node.summary()})"
                    )
                if parent >= node.id:
                    raise IRError(
                        f"IR graph: node {index}: parent id {parent} is not < {node.id} ({node.summary()})"
                    )
            _check_declared_extents(index, node)

    def node(self, node_id: int) -> Node:
        """The node with id ``node_id``.

        Raises:
            IRError: ``IR graph: node id out of bounds: i``, or
              ``IR graph: internal error: nodes[i].id = j (expected i)``.
        """
        if not 0 <= node_id < len(self.nodes):
            raise IRError(f"IR graph: node id out of bounds: {node_id}")
        node = self.nodes[node_id]
        if node.id != node_id:
            raise IRError(f"IR graph: internal error: nodes[{node_id}].id = {node.id} (expected {node_id})")
        return node

    def input_ids(self) -> tuple[int, ...]:
        """Ids of the ``input`` nodes, in graph order."""
        return tuple(n.id for n in self.nodes if n.kind.tag == "input")

    def listing(self) -> list[str]:
        """One line per node: ``3 transpose 0 1 <- [2] : [4, 8]`` (id, kind, parents, out shape)."""
        return [
            f"{n.id} {n.kind.describe()} <- {render_shape(n.parents)} : {render_shape(n.out_shape)}"
            for n in self.nodes
        ]


def require_graph(graph: object, where: str) -> Graph:
    """``graph`` itself when it is a :class:`Graph`.

    Raises:
        IRError: ``<where>: graph must be a torchlean.ir Graph (from GraphBuilder.build().graph or
            Graph(nodes)), got [...] (list)``.
    """
    if not isinstance(graph, Graph):
        raise IRError(
            f"{where}: graph must be a torchlean.ir Graph (from GraphBuilder.build().graph or "
            f"Graph(nodes)), got {describe(graph)}"
        )
    return graph


def _check_declared_extents(index: int, node: Node) -> None:
    """Refuse a declared ``out_shape`` with an extent that is not an integer >= 0 (see
    :meth:`Graph.check_well_formed`). ``input``/``rand_uniform`` (and part of
    ``bernoulli_mask``/``linear``) take their shape from the declaration, so without this a
    negative extent would pass shape checking as well."""
    for extent in node.out_shape:
        if not is_builtin_or_numpy_int(extent):
            raise IRError(
                f"IR graph: node {index}: outShape extent {extent!r} is not an integer "
                f"(accepted: integers >= 0) (outShape={node.out_shape!r}, kind={node.kind.describe()})"
            )
        if extent < 0:
            raise IRError(
                f"IR graph: node {index}: outShape extent {extent} is negative "
                f"(accepted: integers >= 0) ({node.summary()})"
            )
