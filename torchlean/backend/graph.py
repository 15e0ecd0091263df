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
from torchlean.backend.capsule import KernelCapsule, choose_capsule
from torchlean.backend.errors import PlanningError
from torchlean.backend.planner import KernelPlan, PlannedKernel, missing_op_message
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
    """Planned nodes in graph order; nodes needing no kernel are absent."""

    node_count: int
    kernels: tuple[PlannedNodeKernel, ...]

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
        return self.op is kernel.op and self.capsule == kernel.capsule


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


def to_coalesced_groups(plan: GraphKernelPlan) -> GroupedKernelPlan:
    """Left fold: append each kernel to the last group when it can, else start a new group."""
    groups: list[KernelGroup] = []
    for kernel in plan.kernels:
        if groups and groups[-1].can_append(kernel):
            last = groups[-1]
            groups[-1] = KernelGroup((*last.node_ids, kernel.node_id), last.op, last.capsule)
        else:
            groups.append(KernelGroup((kernel.node_id,), kernel.op, kernel.capsule))
    return GroupedKernelPlan(tuple(groups))


def plan_graph(
    policy: KernelPolicy, availability: Availability, registry: Sequence[KernelCapsule], graph: GraphLike
) -> GraphKernelPlan:
    """Plan one capsule per node that needs a kernel, in graph order.

    Raises:
        PlanningError: one ``no admissible kernel capsule ...`` message per distinct missing op.
    """
    available = availability.filter_capsules(registry)
    kernels: list[PlannedNodeKernel] = []
    missing: list[BackendOp] = []
    for node in graph.nodes:
        op = node.kind.backend_op
        if op is None:
            continue
        capsule = choose_capsule(policy, op, available)
        if capsule is None:
            if op not in missing:
                missing.append(op)
        else:
            kernels.append(PlannedNodeKernel(node.id, node.kind, op, capsule))
    if missing:
        raise PlanningError([missing_op_message(policy, op) for op in missing])
    return GraphKernelPlan(len(graph.nodes), tuple(kernels))


def checked_plan_graph(
    policy: KernelPolicy, availability: Availability, registry: Sequence[KernelCapsule], graph: GraphLike
) -> GraphKernelPlan:
    """``graph.check_well_formed()`` first (its ``TorchLeanError`` propagates), then :func:`plan_graph`."""
    graph.check_well_formed()
    return plan_graph(policy, availability, registry, graph)
