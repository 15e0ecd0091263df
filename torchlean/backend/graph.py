"""Graph kernel planning and grouping over IR graphs.

Source: the seed chapter ("Graph Kernel Planning"); anchor-backend.md §1.23, §1.24, §2.7, §2.8,
§2.13. The graph is any object following the IR protocol below (``torchlean.ir`` implements it):
this module imports nothing from the IR. Nodes whose ``kind.backend_op`` is ``None`` (input,
const, detach) need no kernel. Grouping coalesces *adjacent planned kernels* (after those nodes
are dropped) served by a structurally identical capsule; it does not fuse or launch anything.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

from torchlean.backend.availability import Availability
from torchlean.backend.capsule import KernelCapsule, _choose_capsule
from torchlean.backend.errors import PlanningError
from torchlean.backend.fields import BackendTypeError, describe, instance_argument, tuple_field
from torchlean.backend.planner import (
    KernelPlan,
    PlannedKernel,
    _checked_availability,
    _checked_policy,
    _checked_registry,
    missing_op_message,
)
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.vocabulary import BackendOp

__all__ = [
    "GraphKernelPlan",
    "GraphLike",
    "GroupedKernelPlan",
    "KernelGroup",
    "NodeLike",
    "OpKindLike",
    "PlannedNodeKernel",
    "check_graph",
    "checked_plan_graph",
    "plan_graph",
    "to_coalesced_groups",
]


class OpKindLike(Protocol):
    """An IR node kind: its backend op (``None`` for input/const/detach) and a rendering."""

    @property
    def backend_op(self) -> BackendOp | None: ...

    def describe(self) -> str: ...


class NodeLike(Protocol):
    @property
    def id(self) -> int: ...

    @property
    def parents(self) -> tuple[int, ...]: ...

    @property
    def kind(self) -> OpKindLike: ...

    @property
    def out_shape(self) -> tuple[int, ...]: ...


class GraphLike(Protocol):
    """``nodes[i].id == i``; ``check_well_formed`` raises ``TorchLeanError`` (anchor-backend.md §2.8)."""

    @property
    def nodes(self) -> Sequence[NodeLike]: ...

    def check_well_formed(self) -> None: ...


@dataclass(frozen=True, slots=True)
class PlannedNodeKernel:
    """The capsule chosen for one graph node."""

    node_id: int
    kind: OpKindLike
    op: BackendOp
    capsule: KernelCapsule

    def to_planned_kernel(self) -> PlannedKernel:
        return PlannedKernel(self.op, self.capsule)


@dataclass(frozen=True, slots=True)
class GraphKernelPlan:
    """Planned nodes in graph order; nodes needing no kernel are absent.

    Raises:
        BackendTypeError: ``node_count`` not an integer >= 0 (review126 F6), ``kernels`` not a
            tuple/list of :class:`PlannedNodeKernel` (a list is stored as a tuple).
    """

    node_count: int
    kernels: tuple[PlannedNodeKernel, ...]

    def __post_init__(self) -> None:
        if type(self.node_count) is not int or self.node_count < 0:
            raise BackendTypeError(
                f"GraphKernelPlan.node_count must be an integer >= 0, got {describe(self.node_count)}"
            )
        tuple_field(self, "kernels", PlannedNodeKernel)

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(kernel.node_id for kernel in self.kernels)

    @property
    def capsule_names(self) -> tuple[str, ...]:
        return tuple(kernel.capsule.name for kernel in self.kernels)

    def to_kernel_plan(self) -> KernelPlan:
        return KernelPlan(tuple(kernel.to_planned_kernel() for kernel in self.kernels))


@dataclass(frozen=True, slots=True)
class KernelGroup:
    """Adjacent planned nodes sharing one op and one (structurally equal) capsule."""

    node_ids: tuple[int, ...]
    op: BackendOp
    capsule: KernelCapsule

    def to_planned_kernel(self) -> PlannedKernel:
        return PlannedKernel(self.op, self.capsule)

    def can_append(self, kernel: PlannedNodeKernel) -> bool:
        """Same op and full structural capsule equality (trust, evidence, policy... all count)."""
        return self.op is kernel.op and _same_capsule(self.capsule, kernel.capsule)


@dataclass(frozen=True, slots=True)
class GroupedKernelPlan:
    groups: tuple[KernelGroup, ...]

    @property
    def node_ids(self) -> tuple[int, ...]:
        return tuple(node_id for group in self.groups for node_id in group.node_ids)

    @property
    def capsule_names(self) -> tuple[str, ...]:
        """One name per group."""
        return tuple(group.capsule.name for group in self.groups)

    def to_kernel_plan(self) -> KernelPlan:
        return KernelPlan(tuple(group.to_planned_kernel() for group in self.groups))


def _same_capsule(a: KernelCapsule, b: KernelCapsule) -> bool:
    """Structural equality, answered by identity first (the planner hands out catalog objects)."""
    return a is b or a == b


def to_coalesced_groups(plan: GraphKernelPlan) -> GroupedKernelPlan:
    """Left fold: append each kernel to the last group when it can, else start a new group.

    Equivalent to folding with :meth:`KernelGroup.can_append` (a kernel joins the run when its op
    is the run's and its capsule equals the run's first capsule); each run's node ids are
    collected in a list and frozen once, so a run of ``k`` kernels costs ``O(k)``, not ``O(k^2)``.

    Raises:
        BackendTypeError: ``plan must be a GraphKernelPlan, got None (NoneType)``.
    """
    plan = instance_argument(plan, GraphKernelPlan, "plan")
    groups: list[KernelGroup] = []
    run: list[int] = []
    head: PlannedNodeKernel | None = None
    for kernel in plan.kernels:
        if head is not None and kernel.op is head.op and _same_capsule(head.capsule, kernel.capsule):
            run.append(kernel.node_id)
            continue
        if head is not None:
            groups.append(KernelGroup(tuple(run), head.op, head.capsule))
        head, run = kernel, [kernel.node_id]
    if head is not None:
        groups.append(KernelGroup(tuple(run), head.op, head.capsule))
    return GroupedKernelPlan(tuple(groups))


def check_graph(graph: object) -> None:
    """Refuse an object that does not follow :class:`GraphLike`.

    Raises:
        BackendTypeError: ``graph must be an IR graph (an object with .nodes and
            .check_well_formed(), e.g. a torchlean.ir Graph), got None (NoneType)``.
    """
    if not hasattr(graph, "nodes") or not callable(getattr(graph, "check_well_formed", None)):
        raise BackendTypeError(
            "graph must be an IR graph (an object with .nodes and .check_well_formed(), e.g. a "
            f"torchlean.ir Graph), got {describe(graph)}"
        )


def plan_graph(
    policy: KernelPolicy, availability: Availability, registry: Sequence[KernelCapsule], graph: GraphLike
) -> GraphKernelPlan:
    """Plan one capsule per node that needs a kernel, in graph order.

    Selection is a pure function of ``(policy, op, available capsules)``, so it runs once per
    distinct op and every node of that op gets the same capsule object (as node-by-node
    :func:`~torchlean.backend.capsule.choose_capsule` calls would return).

    Raises:
        PlanningError: one ``no admissible kernel capsule ...`` message per distinct missing op.
        BackendTypeError: a ``policy``, ``availability`` or ``registry`` of the wrong type, as
            :func:`~torchlean.backend.planner.plan_ops_available` says (checked once per call); a
            ``graph`` that is not an IR graph (:func:`check_graph`), a node without ``.kind`` or
            ``.kind.backend_op``, or whose ``backend_op`` is neither a :class:`BackendOp` nor
            ``None`` (named by its index in ``graph.nodes``).
    """
    policy = _checked_policy(policy)
    available = _checked_availability(availability).filter_capsules(_checked_registry(registry))
    check_graph(graph)
    chosen: dict[BackendOp, KernelCapsule | None] = {}
    kernels: list[PlannedNodeKernel] = []
    missing: list[BackendOp] = []
    for index, node in enumerate(graph.nodes):
        try:
            kind = node.kind
            op = kind.backend_op
        except AttributeError:
            raise BackendTypeError(
                f"graph.nodes[{index}] must be an IR node (with .id and .kind.backend_op), "
                f"got {describe(node)}"
            ) from None
        if op is None:
            continue
        try:
            capsule = chosen[op]
        except (KeyError, TypeError):  # a new op (checked once, as the chooser checks nothing), or unhashable
            if not isinstance(op, BackendOp):
                raise BackendTypeError(
                    f"graph.nodes[{index}]: kind.backend_op must be a BackendOp or None, got {describe(op)}"
                ) from None
            capsule = chosen[op] = _choose_capsule(policy, op, available)
        if capsule is None:
            if op not in missing:
                missing.append(op)
        else:
            kernels.append(PlannedNodeKernel(node.id, kind, op, capsule))
    if missing:
        raise PlanningError([missing_op_message(policy, op) for op in missing], missing)
    return GraphKernelPlan(len(graph.nodes), tuple(kernels))


def checked_plan_graph(
    policy: KernelPolicy, availability: Availability, registry: Sequence[KernelCapsule], graph: GraphLike
) -> GraphKernelPlan:
    """``graph.check_well_formed()`` first (its ``TorchLeanError`` propagates), then :func:`plan_graph`.

    Raises:
        BackendTypeError: as :func:`plan_graph`, a ``graph`` that is not an IR graph first.
    """
    check_graph(graph)
    graph.check_well_formed()
    return plan_graph(policy, availability, registry, graph)
