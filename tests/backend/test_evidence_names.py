"""Evidence names are real (DESIGN.md §1.3): walk every capsule of every module.

* a ``testSuite`` names a test module of this repository with a test of the op: a test function
  whose name contains the op's label, or the label as a string literal (a test parameter);
* a ``runtimeGuard`` names an importable dotted function that exists and that the capsule's own
  provider code calls (so the guard really runs on that provider's kernel path);
* every provenance path exists and contains its symbol.

A failure names the capsule, the obligation and the missing name.
"""

from __future__ import annotations

import importlib
import re
from functools import cache
from pathlib import Path

import pytest

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractDescriptor, EvidenceKind
from torchlean.backend.registry import CapsuleModule, all_modules
from torchlean.backend.vocabulary import ContractObligation

REPO = Path(__file__).resolve().parents[2]
MODULES: tuple[CapsuleModule, ...] = all_modules()
ENTRIES: list[tuple[CapsuleModule, KernelCapsule, ContractObligation, ContractDescriptor]] = [
    (module, capsule, obligation, descriptor)
    for module in MODULES
    for capsule in module.capsules
    for obligation, descriptor in capsule.contracts()
]
IDS = [f"{c.name}@{c.device.label}-{o.label}" for _, c, o, _ in ENTRIES]


@cache
def _package_sources() -> dict[str, str]:
    return {str(p.relative_to(REPO)): p.read_text() for p in (REPO / "torchlean").rglob("*.py")}


def _tests_op(text: str, label: str) -> bool:
    names = re.findall(r"^\s*def (test_\w+)", text, re.MULTILINE)
    quoted = re.search(rf"[\"']{re.escape(label)}[\"']", text)
    return any(label in name for name in names) or quoted is not None


# Where each provider's kernels live: a guard must run inside its capsule's own provider code.
PROVIDER_CODE = {
    "reference": "torchlean/backend/providers/reference/",
    "aten": "torchlean/backend/providers/aten/",
    "native-cuda": "torchlean/backend/providers/native_cuda/",
    "torchlean": "torchlean/backend/providers/attention_kernels.py",
    "libtorch": "torchlean/backend/providers/libtorch/",
}


def _is_used(function: str, provider: str) -> bool:
    """Called (``check(...)``) or passed as a value (``vjp_guard=check``) in the provider's code."""
    use = re.compile(rf"(?<!def )(?<![\"'`])\b{re.escape(function)}\b(?![\"'`])")
    where = PROVIDER_CODE[provider]
    return any(use.search(text) for path, text in _package_sources().items() if path.startswith(where))


def test_every_module_is_walked() -> None:
    assert [m.name for m in MODULES] == ["attention", "native-cuda", "reference", "libtorch", "aten"]
    assert len(ENTRIES) == 4 * (95 + 37)


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
            assert _tests_op(path.read_text(), capsule.op.label), (
                f"{where}: {evidence.name} has no test of {capsule.op.label}"
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
            assert _is_used(function, capsule.provider.label), (
                f"{where}: guard {evidence.name} is never called by {capsule.provider.label} code"
            )
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
