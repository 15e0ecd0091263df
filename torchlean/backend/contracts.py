"""Capsule contracts: claims, evidence, descriptors, provenance, numerical policy.

Source: the seed chapter, "Capsule Contracts And Evidence"; anchor-backend.md §1.9–§1.15.
Each capsule carries four obligations (shape, layout, value, VJP). Each is a
:class:`ContractDescriptor`: a structured :class:`ContractClaim`, a one-line summary, the
:class:`ContractEvidence` behind the claim, and optional provenance (files and native symbols that
identify the implementation; provenance is *not* evidence). There is deliberately no "proved"
evidence kind.
"""

from __future__ import annotations

from dataclasses import dataclass

from torchlean.backend.fields import (
    BackendTypeError,
    BackendValueError,
    enum_field,
    instance_field,
    name_field,
    text_field,
    tuple_field,
)
from torchlean.backend.vocabulary import (
    BackendOp,
    ContractObligation,
    LabelledEnum,
    ReductionPolicy,
    TensorLayout,
    VJPMode,
)

__all__ = [
    "ClaimKind",
    "ContractClaim",
    "ContractDescriptor",
    "ContractEvidence",
    "ContractObligation",
    "EvidenceKind",
    "NativeSymbolRef",
    "NumericalPolicy",
    "ReductionPolicy",
    "TensorLayout",
    "guarded",
    "is_dotted_name",
    "tested",
    "trusted",
    "vjp_unavailable",
]


class ClaimKind(LabelledEnum):
    """The five claim constructors of the original (anchor-backend.md §1.12)."""

    SHAPE_SAFETY = "shapeSafety"
    LAYOUT_COMPATIBILITY = "layoutCompatibility"
    VALUE_REFINEMENT = "valueRefinement"
    VJP_REFINEMENT = "vjpRefinement"
    VJP_UNAVAILABLE = "vjpUnavailable"

    @classmethod
    def kind(cls) -> str:
        return "claim kind"


@dataclass(frozen=True, slots=True)
class ContractClaim:
    """What an obligation asserts about an op.

    Build claims with the class methods; ``layout`` is set only for layout claims and ``mode`` only
    for VJP-refinement claims. ``label`` is the original's verbatim rendering. Each enum field takes
    its member or the member's label (stored as the member).

    Raises:
        BackendTypeError: a field of the wrong type, or a layout/mode on a claim kind without one.
        BackendValueError: an unknown label.
    """

    kind: ClaimKind
    op: BackendOp
    layout: TensorLayout | None = None
    mode: VJPMode | None = None

    def __post_init__(self) -> None:
        enum_field(self, "kind", ClaimKind)
        enum_field(self, "op", BackendOp)
        enum_field(self, "layout", TensorLayout, optional=True)
        enum_field(self, "mode", VJPMode, optional=True)
        if (self.layout is not None) != (self.kind is ClaimKind.LAYOUT_COMPATIBILITY):
            kind = self.kind.label
            raise BackendTypeError(f"a {kind} claim carries a layout only for layout compatibility")
        if (self.mode is not None) != (self.kind is ClaimKind.VJP_REFINEMENT):
            kind = self.kind.label
            raise BackendTypeError(f"a {kind} claim carries a VJP mode only for VJP refinement")

    @classmethod
    def shape_safety(cls, op: BackendOp) -> ContractClaim:
        return cls(ClaimKind.SHAPE_SAFETY, op)

    @classmethod
    def layout_compatibility(cls, op: BackendOp, layout: TensorLayout) -> ContractClaim:
        return cls(ClaimKind.LAYOUT_COMPATIBILITY, op, layout=layout)

    @classmethod
    def value_refinement(cls, op: BackendOp) -> ContractClaim:
        return cls(ClaimKind.VALUE_REFINEMENT, op)

    @classmethod
    def vjp_refinement(cls, op: BackendOp, mode: VJPMode) -> ContractClaim:
        return cls(ClaimKind.VJP_REFINEMENT, op, mode=mode)

    @classmethod
    def vjp_unavailable(cls, op: BackendOp) -> ContractClaim:
        return cls(ClaimKind.VJP_UNAVAILABLE, op)

    @property
    def label(self) -> str:
        """Verbatim claim text, e.g. ``canonical-tensor layout compatibility for relu``."""
        op = self.op.label
        match self.kind:
            case ClaimKind.SHAPE_SAFETY:
                return f"shape safety for {op}"
            case ClaimKind.LAYOUT_COMPATIBILITY:
                assert self.layout is not None
                return f"{self.layout.label} layout compatibility for {op}"
            case ClaimKind.VALUE_REFINEMENT:
                return f"{op} forward refines its TorchLean semantics"
            case ClaimKind.VJP_REFINEMENT:
                assert self.mode is not None
                return f"{op} {self.mode.label} VJP refines its TorchLean semantics"
            case ClaimKind.VJP_UNAVAILABLE:
                return f"{op} has no VJP in this capsule"


class EvidenceKind(LabelledEnum):
    """The four evidence classes (seed chapter); there is no "proved" kind."""

    RUNTIME_GUARD = "runtimeGuard"
    TEST_SUITE = "testSuite"
    TRUSTED_BOUNDARY = "trustedBoundary"
    NOT_APPLICABLE = "notApplicable"

    @classmethod
    def kind(cls) -> str:
        return "evidence kind"


@dataclass(frozen=True, slots=True)
class ContractEvidence:
    """What stands behind a claim.

    ``name`` is the guard's dotted function name (runtime guard, e.g.
    ``torchlean.backend.providers.reference.guards.check_relu``), the test module path (test suite)
    or the reason (trusted boundary); it is ``None`` exactly for ``not applicable``. ``kind`` takes
    an :class:`EvidenceKind` or its label (``"trustedBoundary"`` is stored as
    ``EvidenceKind.TRUSTED_BOUNDARY``, so a policy judges it as the trusted boundary it is).
    Whether a guard name resolves to a callable is checked when a profile is built with the
    module (:class:`torchlean.backend.profiles.BackendProfile`, also through
    ``with_capsule_modules``), for capsules other than the shipped ones: the guard's module is
    imported then.

    Raises:
        BackendTypeError: a kind that is no evidence kind, a name that is not a string, a name on
            ``notApplicable`` or none on another kind.
        BackendValueError: an unknown kind label, an empty name, a runtime guard name that is not a
            dotted Python name ``module.function``.
    """

    kind: EvidenceKind
    name: str | None = None

    def __post_init__(self) -> None:
        enum_field(self, "kind", EvidenceKind)
        if (self.name is None) != (self.kind is EvidenceKind.NOT_APPLICABLE):
            raise BackendTypeError(f"{self.kind.label} evidence needs a name exactly when it is applicable")
        if self.name is not None:
            name_field(self, "name")
        if self.kind is EvidenceKind.RUNTIME_GUARD and not is_dotted_name(self.name):
            raise BackendValueError(
                f"ContractEvidence.name: a runtimeGuard names a dotted Python function "
                f"(module.function), got {self.name!r}"
            )

    @classmethod
    def runtime_guard(cls, name: str) -> ContractEvidence:
        return cls(EvidenceKind.RUNTIME_GUARD, name)

    @classmethod
    def test_suite(cls, name: str) -> ContractEvidence:
        return cls(EvidenceKind.TEST_SUITE, name)

    @classmethod
    def trusted_boundary(cls, reason: str) -> ContractEvidence:
        return cls(EvidenceKind.TRUSTED_BOUNDARY, reason)

    @classmethod
    def not_applicable(cls) -> ContractEvidence:
        return cls(EvidenceKind.NOT_APPLICABLE)

    @property
    def label(self) -> str:
        """Verbatim evidence text, e.g. ``covered by test suite tests/runtime/test_reference_values.py``."""
        match self.kind:
            case EvidenceKind.RUNTIME_GUARD:
                return f"guarded at runtime by {self.name}"
            case EvidenceKind.TEST_SUITE:
                return f"covered by test suite {self.name}"
            case EvidenceKind.TRUSTED_BOUNDARY:
                return f"trusted boundary: {self.name}"
            case EvidenceKind.NOT_APPLICABLE:
                return "not applicable"


@dataclass(frozen=True, slots=True)
class NativeSymbolRef:
    """Provenance: a source file of this repository and a symbol defined in it.

    ``path`` is relative to the directory that holds the ``torchlean`` package (the repository
    root of a checkout, ``site-packages`` of an install; the shipped catalog names only files
    shipped with the package); ``build_target`` names the extension module built from it, if any.
    Provenance identifies an implementation; it is not evidence of correctness.

    Raises:
        BackendTypeError / BackendValueError: a field that is not a non-empty string
            (``build_target`` may be ``None``).
    """

    path: str
    symbol: str
    build_target: str | None = None

    def __post_init__(self) -> None:
        text_field(self, "path")
        text_field(self, "symbol")
        text_field(self, "build_target", optional=True)


@dataclass(frozen=True, slots=True)
class ContractDescriptor:
    """One obligation of a capsule: claim, reader summary, evidence, provenance.

    ``provenance`` may be given as a list (stored as a tuple).

    Raises:
        BackendTypeError: a claim, evidence or provenance entry of the wrong type, a summary that
            is not a string. BackendValueError: an empty summary.
    """

    claim: ContractClaim
    summary: str
    evidence: ContractEvidence
    provenance: tuple[NativeSymbolRef, ...] = ()

    def __post_init__(self) -> None:
        instance_field(self, "claim", ContractClaim)
        text_field(self, "summary")
        instance_field(self, "evidence", ContractEvidence)
        tuple_field(self, "provenance", NativeSymbolRef)


@dataclass(frozen=True, slots=True)
class NumericalPolicy:
    """The numerical commitments a capsule records: only the reduction order.

    Rounding mode, subnormals and FMA contraction are not recorded (seed chapter). ``reduction``
    takes a :class:`ReductionPolicy` or its label (``fixed-left``, ``implementation-defined``, ``n/a``).

    Raises:
        BackendTypeError / BackendValueError: any other value.
    """

    reduction: ReductionPolicy

    def __post_init__(self) -> None:
        enum_field(self, "reduction", ReductionPolicy)


def is_dotted_name(name: str | None) -> bool:
    """Whether ``name`` reads ``module.function``: two or more Python identifiers joined by dots."""
    if name is None:
        return False
    parts = name.split(".")
    return len(parts) >= 2 and all(part.isidentifier() for part in parts)


def guarded(
    claim: ContractClaim, summary: str, guard: str, provenance: tuple[NativeSymbolRef, ...] = ()
) -> ContractDescriptor:
    """A descriptor whose evidence is the runtime guard ``guard`` (a dotted function name)."""
    return ContractDescriptor(claim, summary, ContractEvidence.runtime_guard(guard), provenance)


def tested(
    claim: ContractClaim, summary: str, suite: str, provenance: tuple[NativeSymbolRef, ...] = ()
) -> ContractDescriptor:
    """A descriptor whose evidence is the test suite ``suite`` (a test module path)."""
    return ContractDescriptor(claim, summary, ContractEvidence.test_suite(suite), provenance)


# ``tested`` starts with "test": tell pytest it is not a test when a test module imports it.
tested.__test__ = False  # type: ignore[attr-defined]


def trusted(
    claim: ContractClaim, summary: str, reason: str, provenance: tuple[NativeSymbolRef, ...] = ()
) -> ContractDescriptor:
    """A descriptor resting on a trusted boundary named by ``reason``."""
    return ContractDescriptor(claim, summary, ContractEvidence.trusted_boundary(reason), provenance)


def vjp_unavailable(
    op: BackendOp, summary: str, provenance: tuple[NativeSymbolRef, ...] = ()
) -> ContractDescriptor:
    """The VJP descriptor of a forward-only capsule: claim ``vjpUnavailable``, not applicable."""
    return ContractDescriptor(
        ContractClaim.vjp_unavailable(op), summary, ContractEvidence.not_applicable(), provenance
    )


def obligation_order() -> tuple[ContractObligation, ...]:
    """The fixed order used everywhere: shape, layout, value, vjp."""
    return (
        ContractObligation.SHAPE,
        ContractObligation.LAYOUT,
        ContractObligation.VALUE,
        ContractObligation.VJP,
    )
