"""Test-only builders: hand-made capsules, handlers and a tiny IR-protocol graph.

The fake graph follows the protocol of ``torchlean.backend.graph`` (``nodes``,
``check_well_formed``; nodes with ``id``, ``parents``, ``kind``, ``out_shape``; kinds with
``backend_op`` and ``describe``) so graph planning is tested without ``torchlean.ir``.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import (
    ContractClaim,
    ContractDescriptor,
    ContractEvidence,
    NumericalPolicy,
    guarded,
    tested,
    vjp_unavailable,
)
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.vocabulary import (
    BackendOp,
    Device,
    Provider,
    ReductionPolicy,
    TensorLayout,
    TrustLevel,
    VJPMode,
)

SHAPE_GUARD = "backend_builders.check_shape"
LAYOUT_GUARD = "backend_builders.check_layout"


def check_shape(*operands: object, **params: object) -> None:
    """Test-only shape guard named by :func:`make_capsule` (a real, importable callable)."""


def check_layout(*operands: object, **params: object) -> None:
    """Test-only layout guard named by :func:`make_capsule`."""


def make_capsule(
    name: str,
    op: BackendOp,
    *,
    provider: Provider = Provider.REFERENCE,
    device: Device = Device.CPU,
    trust: TrustLevel = TrustLevel.CHECKED,
    forward: bool = True,
    vjp_mode: VJPMode = VJPMode.TORCHLEAN_TAPE,
    value_evidence: ContractEvidence | None = None,
    reduction: ReductionPolicy = ReductionPolicy.NOT_APPLICABLE,
) -> KernelCapsule:
    """An aligned capsule whose evidence is guards and tests unless ``value_evidence`` says otherwise."""
    vjp = (
        vjp_unavailable(op, "no VJP")
        if vjp_mode is VJPMode.NONE
        else tested(ContractClaim.vjp_refinement(op, vjp_mode), "vjp", "vjp suite")
    )
    value = ContractDescriptor(
        ContractClaim.value_refinement(op),
        "value",
        value_evidence or ContractEvidence.test_suite("value suite"),
    )
    return KernelCapsule(
        name=name,
        op=op,
        provider=provider,
        device=device,
        trust_level=trust,
        supports_forward=forward,
        vjp_mode=vjp_mode,
        shape_contract=guarded(ContractClaim.shape_safety(op), "shape", SHAPE_GUARD),
        layout_contract=guarded(
            ContractClaim.layout_compatibility(op, TensorLayout.CANONICAL_TENSOR), "layout", LAYOUT_GUARD
        ),
        value_contract=value,
        vjp_contract=vjp,
        numerical_policy=NumericalPolicy(reduction),
    )


def misaligned(capsule: KernelCapsule) -> KernelCapsule:
    """``capsule`` with its value descriptor filed in the shape field."""
    return dataclasses.replace(capsule, shape_contract=capsule.value_contract)


@dataclass(frozen=True)
class FakeKind:
    """An IR kind: ``tag`` plus rendered arguments; ``backend_op`` None for input/const/detach."""

    tag: str
    backend_op: BackendOp | None
    args: str = ""

    def describe(self) -> str:
        return f"{self.tag} {self.args}" if self.args else self.tag


@dataclass(frozen=True)
class FakeNode:
    id: int
    parents: tuple[int, ...]
    kind: FakeKind
    out_shape: tuple[int, ...]

    @property
    def summary(self) -> str:
        return (
            f"Node(id={self.id}, kind={self.kind.describe()}, parents={list(self.parents)}, "
            f"outShape={list(self.out_shape)})"
        )


@dataclass(frozen=True)
class FakeGraph:
    """Checks only the id discipline and parent ordering (messages of anchor-backend.md §2.8)."""

    nodes: tuple[FakeNode, ...]

    def check_well_formed(self) -> None:
        for i, node in enumerate(self.nodes):
            if node.id != i:
                raise TorchLeanError(
                    f"IR graph: id discipline violated at index {i}: nodes[{i}].id = {node.id}"
                )
            for parent in node.parents:
                if parent >= node.id:
                    raise TorchLeanError(
                        f"IR graph: node {i}: parent id {parent} is not < {node.id} ({node.summary})"
                    )


INPUT = FakeKind("input", None)


def const(shape: str) -> FakeKind:
    return FakeKind("const", None, shape)


def mlp_graph() -> FakeGraph:
    """``Sequential[linear 4->8, relu, linear 8->1]`` lowered as in the seed chapter (18 nodes)."""
    b = BackendOp
    spec: list[tuple[tuple[int, ...], FakeKind, tuple[int, ...]]] = [
        ((), INPUT, (4,)),
        ((0,), FakeKind("reshape", b.RESHAPE, "[4] [1, 4]"), (1, 4)),
        ((), const("[8, 4]"), (8, 4)),
        ((2,), FakeKind("transpose", b.PERMUTE, "0 1"), (4, 8)),
        ((1, 3), FakeKind("matmul", b.MATMUL), (1, 8)),
        ((), const("[8]"), (8,)),
        ((5,), FakeKind("broadcast_to", b.BROADCAST, "[8] [1, 8]"), (1, 8)),
        ((4, 6), FakeKind("add", b.ADD), (1, 8)),
        ((7,), FakeKind("reshape", b.RESHAPE, "[1, 8] [8]"), (8,)),
        ((8,), FakeKind("relu", b.RELU), (8,)),
        ((9,), FakeKind("reshape", b.RESHAPE, "[8] [1, 8]"), (1, 8)),
        ((), const("[1, 8]"), (1, 8)),
        ((11,), FakeKind("transpose", b.PERMUTE, "0 1"), (8, 1)),
        ((10, 12), FakeKind("matmul", b.MATMUL), (1, 1)),
        ((), const("[1]"), (1,)),
        ((14,), FakeKind("broadcast_to", b.BROADCAST, "[1] [1, 1]"), (1, 1)),
        ((13, 15), FakeKind("add", b.ADD), (1, 1)),
        ((16,), FakeKind("reshape", b.RESHAPE, "[1, 1] [1]"), (1,)),
    ]
    return FakeGraph(
        tuple(FakeNode(i, parents, kind, shape) for i, (parents, kind, shape) in enumerate(spec))
    )


def relu_chain(length: int) -> FakeGraph:
    """``input(0) -> relu(1) -> ... -> relu(length)``, all of shape [4]."""
    nodes = [FakeNode(0, (), INPUT, (4,))]
    nodes += [FakeNode(i, (i - 1,), FakeKind("relu", BackendOp.RELU), (4,)) for i in range(1, length + 1)]
    return FakeGraph(tuple(nodes))
