"""Evidence names are real (DESIGN.md §1.3): walk every capsule of every module.

* a ``testSuite`` names a test module of this repository that mentions the op's label;
* a ``runtimeGuard`` names an importable dotted function that exists;
* every provenance path exists and contains its symbol.

A failure names the capsule, the obligation and the missing name.
"""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractDescriptor, EvidenceKind
from torchlean.backend.registry import CapsuleModule, libtorch_module, maintained_modules
from torchlean.backend.vocabulary import ContractObligation

REPO = Path(__file__).resolve().parents[2]
MODULES: tuple[CapsuleModule, ...] = (*maintained_modules(), libtorch_module())
ENTRIES: list[tuple[CapsuleModule, KernelCapsule, ContractObligation, ContractDescriptor]] = [
    (module, capsule, obligation, descriptor)
    for module in MODULES
    for capsule in module.capsules
    for obligation, descriptor in capsule.contracts()
]
IDS = [f"{c.name}@{c.device.label}-{o.label}" for _, c, o, _ in ENTRIES]


def test_every_module_is_walked() -> None:
    assert [m.name for m in MODULES] == ["attention", "native-cuda", "reference", "libtorch"]
    assert len(ENTRIES) == 4 * 95


@pytest.mark.parametrize(("module", "capsule", "obligation", "descriptor"), ENTRIES, ids=IDS)
def test_evidence_name_is_real(
    module: CapsuleModule,
    capsule: KernelCapsule,
    obligation: ContractObligation,
    descriptor: ContractDescriptor,
) -> None:
    evidence = descriptor.evidence
    where = f"{module.name}: {capsule.name} ({capsule.device.label}) {obligation.label}"
    match evidence.kind:
        case EvidenceKind.TEST_SUITE:
            assert evidence.name is not None
            path = REPO / evidence.name
            assert path.is_file(), f"{where}: test suite {evidence.name} does not exist"
            assert path.name.startswith("test_") and path.suffix == ".py", (
                f"{where}: {evidence.name} is not a test module"
            )
            assert capsule.op.label in path.read_text(), (
                f"{where}: {evidence.name} never mentions {capsule.op.label}"
            )
        case EvidenceKind.RUNTIME_GUARD:
            assert evidence.name is not None
            module_name, _, function = evidence.name.rpartition(".")
            try:
                guard_module = importlib.import_module(module_name)
            except ImportError as error:
                pytest.fail(f"{where}: guard module {module_name} cannot be imported: {error}")
            guard = getattr(guard_module, function, None)
            assert callable(guard), f"{where}: guard {evidence.name} does not exist"
        case EvidenceKind.TRUSTED_BOUNDARY:
            assert evidence.name, f"{where}: a trusted boundary must name its reason"
        case EvidenceKind.NOT_APPLICABLE:
            assert obligation is ContractObligation.VJP, (
                f"{where}: only a forward-only VJP may be not applicable"
            )
    for ref in descriptor.provenance:
        path = REPO / ref.path
        assert path.is_file(), f"{where}: provenance file {ref.path} does not exist"
        assert ref.symbol in path.read_text(), f"{where}: {ref.path} does not contain {ref.symbol}"
