"""The package's layering (DESIGN.md §2: no import runs upward), checked over every module's
imports, those inside functions and under ``TYPE_CHECKING`` included (review180 F2: only
``torchlean.functional`` was checked).

The layers, lowest first, as the code has them:

1. ``backend`` (providers included): the capsule system, importing nothing else of torchlean and
   loading neither numpy nor torch;
2. helpers (``_checks``, ``_csv``, ``profiles``, ``provenance``, ...: every unit not named below),
   importing only the backend and one another;
3. ``spec`` and ``ir``;
4. the runtime: ``tensor`` with its ``_tensor_*`` helpers, ``autograd`` and ``functional``, one
   layer whose cycle (a Tensor's operators call the functional ops; autograd records Tensors) runs
   through imports inside functions;
5. ``nn``, ``optim``, ``lr_schedules``, ``batches``, ``profiler``;
6. ``trainer``, ``validation``, ``models``, ``data``; then ``checkpoint`` with its ``_checkpoint_*``
   helpers; then ``cli``.

Oracle: the import statements themselves (``ast``), resolved to the unit they name.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

PACKAGE = Path(__file__).resolve().parents[2] / "torchlean"

RUNTIME = {"tensor", "_tensor_args", "_tensor_data", "_tensor_errors", "_tensor_hints", "_tensor_shapes",
           "_tensor_writes", "autograd", "functional"}
MODELS = {"nn", "optim", "lr_schedules", "batches", "profiler"}
CHECKPOINT = {"checkpoint", "_checkpoint_capsules", "_checkpoint_errors", "_checkpoint_model"}
APPLICATION = {"trainer", "validation", "models", "data", "cli", "__main__"} | CHECKPOINT

LOWER = {"backend", "spec", "ir"} | RUNTIME | MODELS | APPLICATION


def _helper_units() -> frozenset[str]:
    """Every other unit (``_checks``, ``_csv``, ``profiles``, ``provenance``, ...): helpers, which
    import only the backend and one another. A new module lands here until it is placed above."""
    units = {path.relative_to(PACKAGE).parts[0].removesuffix(".py") for path in PACKAGE.rglob("*.py")}
    return frozenset(units - LOWER - {"__init__"})


HELPERS = _helper_units()

FORBIDDEN: dict[frozenset[str], set[str]] = {
    HELPERS: {"spec", "ir"} | RUNTIME | MODELS | APPLICATION,
    frozenset({"spec", "ir"}): RUNTIME | MODELS | APPLICATION,
    frozenset(RUNTIME): MODELS | APPLICATION,
    frozenset(MODELS): APPLICATION,
    frozenset({"trainer", "validation", "models", "data"}): CHECKPOINT | {"cli", "__main__"},
    frozenset(CHECKPOINT): {"cli", "__main__"},
}
"""Units and what none of them may import (a unit: the name under ``torchlean.``)."""


def _modules() -> list[tuple[str, Path]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        parts = path.relative_to(PACKAGE.parent).with_suffix("").parts
        name = ".".join(parts[:-1] if parts[-1] == "__init__" else parts)
        found.append((name, path))
    return found


def _imported(path: Path) -> set[str]:
    """The torchlean modules ``path`` imports anywhere in its body (``from torchlean import x``
    read as ``torchlean.x``)."""
    names: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Import):
            names |= {alias.name for alias in node.names}
        elif isinstance(node, ast.ImportFrom):
            assert node.level == 0, f"{path}: a relative import"
            if node.module == "torchlean":
                names |= {f"torchlean.{alias.name}" for alias in node.names}
            elif node.module is not None:
                names.add(node.module)
    return {name for name in names if name.startswith("torchlean.")}


def _unit(module: str) -> str:
    return module.split(".")[1]


MODULES = _modules()


def test_the_scan_sees_the_whole_package() -> None:
    units = {_unit(name) for name, _ in MODULES if name != "torchlean"}
    assert {"backend", "tensor", "autograd", "functional", "nn", "trainer", "checkpoint", "cli"} <= units
    assert {"_checks", "_csv", "profiles", "provenance", "shapes"} <= HELPERS  # review181 F4
    assert len(MODULES) > 150


@pytest.mark.parametrize(("module", "path"), MODULES, ids=[name for name, _ in MODULES])
def test_no_import_runs_upward(module: str, path: Path) -> None:
    imported = _imported(path)
    if module.startswith("torchlean.backend"):
        outside = sorted(m for m in imported if not m.startswith("torchlean.backend"))
        assert outside == [], f"{module} imports {outside} (backend imports nothing else of torchlean)"
        return
    unit = _unit(module) if module != "torchlean" else None
    for units, forbidden in FORBIDDEN.items():
        if unit in units:
            upward = sorted(m for m in imported if _unit(m) in forbidden)
            assert upward == [], f"{module} imports {upward}, a layer above it"


def test_the_backend_loads_without_numpy_or_torch() -> None:
    """DESIGN.md §2: the backend (planner, profiles and every provider's capsule table) stays
    importable without the numeric runtime."""
    code = (
        "import sys\n"
        "from torchlean.backend import planner, profiles, registry\n"
        "registry.all_modules()\n"
        "for name in profiles.names(): profiles.get(name).plan_ops(['linear', 'relu'])\n"
        "print(sorted(m for m in ('numpy', 'torch') if m in sys.modules))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True,
                          cwd=PACKAGE.parent)
    assert done.stdout.strip() == "[]"
