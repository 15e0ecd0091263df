"""Kernel policies: provider preference, assurance, and the full per-profile request.

Source: the seed chapter ("Forward And Backward Ownership", "Contract Checks");
anchor-backend.md §1.5, §1.7, §1.8. One :class:`AssurancePolicy` governs both selection (by the
capsule's trust *label*) and the evidence check (by evidence *kind*), so a profile cannot select
under one policy and check under another.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import ClassVar

from torchlean.backend.contracts import ContractEvidence, EvidenceKind
from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError
from torchlean.backend.fields import (
    BackendTypeError,
    BackendValueError,
    bool_field,
    describe,
    enum_field,
    instance_field,
)
from torchlean.backend.vocabulary import Device, LabelledEnum, Provider, TrustLevel, VJPMode

__all__ = ["AssurancePolicy", "KernelPolicy", "PreferenceKind", "ProviderPreference"]


class PreferenceKind(LabelledEnum):
    """``auto``: catalog order; ``prefer``: a request with fallback; ``only``: a filter."""

    AUTO = "auto"
    PREFER = "prefer"
    ONLY = "only"

    @classmethod
    def kind(cls) -> str:
        return "provider preference"


@dataclass(frozen=True, slots=True)
class ProviderPreference:
    """Which provider a policy asks for. Build with :meth:`auto`, :meth:`prefer` or :meth:`only`.

    Raises:
        BackendTypeError: a kind or provider that is neither a member nor its label, a provider
            with ``auto`` or none with ``prefer``/``only``. BackendValueError: an unknown label.
    """

    kind: PreferenceKind
    provider: Provider | None = None

    def __post_init__(self) -> None:
        enum_field(self, "kind", PreferenceKind)
        enum_field(self, "provider", Provider, optional=True)
        # the value given and the accepted ones (review168 F3)
        if self.provider is None and self.kind is not PreferenceKind.AUTO:
            raise BackendTypeError(
                f"ProviderPreference: {self.kind.label} needs a provider, got None (known providers: "
                f"{' | '.join(Provider.labels())})"
            )
        if self.provider is not None and self.kind is PreferenceKind.AUTO:
            label = self.provider.label
            raise BackendTypeError(
                f"ProviderPreference: auto names no provider, got {label} (write "
                f"ProviderPreference.prefer({label!r}) or .only({label!r}) to ask for it)"
            )

    @classmethod
    def auto(cls) -> ProviderPreference:
        return cls(PreferenceKind.AUTO)

    @classmethod
    def prefer(cls, provider: Provider) -> ProviderPreference:
        return cls(PreferenceKind.PREFER, provider)

    @classmethod
    def only(cls, provider: Provider) -> ProviderPreference:
        return cls(PreferenceKind.ONLY, provider)

    @property
    def label(self) -> str:
        """``auto``, ``prefer libtorch`` or ``only reference``."""
        if self.provider is None:
            return self.kind.label
        return f"{self.kind.label} {self.provider.label}"

    def admits(self, provider: Provider) -> bool:
        """The planner-side filter: only ``only(p)`` excludes providers other than ``p``."""
        return self.kind is not PreferenceKind.ONLY or self.provider is provider


@dataclass(frozen=True, slots=True)
class AssurancePolicy:
    """Whether trusted-external capsules and trusted-boundary evidence are acceptable.

    ``AssurancePolicy.CHECKED`` (the default) admits runtime guards, test suites and
    not-applicable evidence; ``AssurancePolicy.EXTERNAL`` also admits trusted boundaries.
    """

    allow_trusted_external: bool = False

    CHECKED: ClassVar[AssurancePolicy]
    EXTERNAL: ClassVar[AssurancePolicy]

    def __post_init__(self) -> None:
        bool_field(self, "allow_trusted_external")

    @property
    def label(self) -> str:
        return "external" if self.allow_trusted_external else "checked"

    def accepts_trust(self, level: TrustLevel) -> bool:
        """Selection filter on the capsule's trust label."""
        return level is TrustLevel.CHECKED or self.allow_trusted_external

    def accepts_evidence(self, evidence: ContractEvidence) -> bool:
        """Evidence filter: guards, test suites and not-applicable pass; a trusted boundary needs
        ``allow_trusted_external``. Fails closed: only the four known kinds are ever accepted.

        Raises:
            BackendTypeError: ``evidence`` is not a :class:`ContractEvidence`.
        """
        if not isinstance(evidence, ContractEvidence):
            raise BackendTypeError(f"evidence must be a ContractEvidence, got {describe(evidence)}")
        match evidence.kind:
            case EvidenceKind.RUNTIME_GUARD | EvidenceKind.TEST_SUITE | EvidenceKind.NOT_APPLICABLE:
                return True
            case EvidenceKind.TRUSTED_BOUNDARY:
                return self.allow_trusted_external
        return False

    @classmethod
    def parse(cls, label: str | AssurancePolicy) -> AssurancePolicy:
        """``checked`` or ``external``; an ``AssurancePolicy`` is returned as it is.

        Raises:
            UnknownLabelError: for any other label, naming both accepted labels.
            BackendTypeError: neither a string nor an ``AssurancePolicy``, as :meth:`coerce` says
                (``assurance policy must be an AssurancePolicy or its label (checked | external),
                got None (NoneType)``).
        """
        if not isinstance(label, str):
            return cls.coerce(label)
        for policy in (cls.CHECKED, cls.EXTERNAL):
            if policy.label == label:
                return policy
        raise UnknownLabelError(f"unknown assurance policy {name_shown(label)} (known: checked | external)")

    @classmethod
    def coerce(cls, value: object, what: str = "assurance policy") -> AssurancePolicy:
        """``value`` itself, or the policy its label names (API arguments).

        Raises:
            UnknownLabelError: an unknown label (:meth:`parse`'s message).
            BackendTypeError: ``{what} must be an AssurancePolicy or its label (checked | external),
                got {value} ({type})``.
        """
        if isinstance(value, AssurancePolicy):
            return value
        if isinstance(value, str):
            return cls.parse(value)
        raise BackendTypeError(
            f"{what} must be an AssurancePolicy or its label (checked | external), got {describe(value)}"
        )


AssurancePolicy.CHECKED = AssurancePolicy(allow_trusted_external=False)
AssurancePolicy.EXTERNAL = AssurancePolicy(allow_trusted_external=True)


def _check_assurance_label(assurance: AssurancePolicy) -> None:
    """Refuse an assurance policy (a subclass's) that admits a trusted-external capsule or a
    trusted-boundary evidence while its label says ``checked``: every record, summary and audit
    line reports the label, so a looser one would call a run on a trusted boundary checked
    (review141 F2). A stricter subclass passes. The probe is a sample; the planner
    (:func:`~torchlean.backend.capsule.allowed_by`) and the gate
    (:func:`~torchlean.backend.audit.rejected_reports`) hold the label as a ceiling exactly.

    Raises:
        BackendValueError: naming the policy and what it admits; a subclass that overrides
            ``label``; one whose ``accepts_trust``/``accepts_evidence`` raises on the probe.
    """
    kind = type(assurance).__name__
    if type(assurance).label is not AssurancePolicy.label:
        raise BackendValueError(
            f"KernelPolicy.assurance: {kind} overrides label, which every record reports; the label "
            "is allow_trusted_external's (checked | external) and a subclass may only narrow what it "
            "admits (review145 F3)"
        )
    if assurance.allow_trusted_external:
        return
    admits = []
    try:
        if assurance.accepts_trust(TrustLevel.TRUSTED_EXTERNAL):
            admits.append("trusted-external capsules (accepts_trust)")
        if assurance.accepts_evidence(ContractEvidence.trusted_boundary("a boundary")):
            admits.append("trusted-boundary evidence (accepts_evidence)")
    except Exception as error:  # a subclass's own check failed: name it, as a policy error
        raise BackendValueError(
            f"KernelPolicy.assurance: {kind}.accepts_trust/accepts_evidence raised "
            f"{type(error).__name__}: {error} when asked about a trusted-external capsule or a "
            "trusted-boundary evidence (a checked policy answers False)"
        ) from error
    if admits:
        raise BackendValueError(
            f"KernelPolicy.assurance: {kind} is labelled checked "
            f"(allow_trusted_external=False) but admits {' and '.join(admits)}; a checked policy admits "
            "neither: set allow_trusted_external=True, whose label external says so"
        )


@dataclass(frozen=True, slots=True)
class KernelPolicy:
    """The full request a profile makes of every capsule (anchor-backend.md §1.8).

    ``vjp_mode`` is the *policy* mode: ``none`` for inference (no-grad), ``torchlean-tape`` for
    training with either kind of capsule VJP, ``backend-vjp`` to require backend-kernel VJPs.
    ``device``, ``vjp_mode`` and ``assurance`` also take their labels (stored as the member/policy).

    Raises:
        BackendTypeError: a field of the wrong type. BackendValueError: an unknown label.
    """

    device: Device = Device.CPU
    provider: ProviderPreference = field(default_factory=ProviderPreference.auto)
    assurance: AssurancePolicy = field(default_factory=lambda: AssurancePolicy.CHECKED)
    vjp_mode: VJPMode = VJPMode.TORCHLEAN_TAPE

    def __post_init__(self) -> None:
        enum_field(self, "device", Device)
        build = "ProviderPreference.auto(), .prefer(provider) or .only(provider), e.g. .prefer('aten')"
        instance_field(self, "provider", ProviderPreference, build)
        if isinstance(self.assurance, str):
            try:
                object.__setattr__(self, "assurance", AssurancePolicy.parse(self.assurance))
            except UnknownLabelError as error:
                raise BackendValueError(f"KernelPolicy.assurance: {error}") from None
        instance_field(self, "assurance", AssurancePolicy, "or its label: checked | external")
        _check_assurance_label(self.assurance)
        enum_field(self, "vjp_mode", VJPMode)
