"""The layout of :mod:`torchlean.functional`: a package of private single-job submodules behind one
public face. Every public op is defined in a submodule and re-exported as the same object; the
submodules load in a fresh interpreter in any order (no import cycle), import nothing above the
functional layer (no ``nn``, ``trainer``, ``cli``, ...), and no submodule name is also a name the
package exports (the import system sets ``torchlean.functional._x`` when ``_x`` loads, which would
replace such a name)."""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

import torchlean.functional as F

PACKAGE = Path(F.__file__).parent
SUBMODULES = sorted(p.stem for p in PACKAGE.glob("_*.py") if p.stem != "__init__")

# What the functional layer may import from torchlean: the layers below it, and its own submodules.
ALLOWED = (
    "torchlean._checks",
    "torchlean._limits",  # constants only (MAX_RANK)
    "torchlean._torch_host",  # declared_shape: a numpy array's or torch tensor's shape, read before a copy
    "torchlean.autograd",
    "torchlean.backend",
    "torchlean.tensor",
    "torchlean._tensor_",  # the tensor layer's private modules (torchlean._tensor_args, ...)
    "torchlean.functional",
)

# Private names other modules reach as ``functional._name`` (torchlean.tensor's methods).
REACHED = ("_constant_values", "_check_slice", "_index_tuple", "_int", "_ints")


def test_the_package_has_the_submodules_this_test_walks() -> None:
    assert len(SUBMODULES) >= 10 and "_params" in SUBMODULES and "_operands" in SUBMODULES


def test_every_public_op_is_a_submodules_function_reexported_as_itself() -> None:
    assert len(F.__all__) == len(set(F.__all__)) == 53
    for name in F.__all__:
        value = getattr(F, name)
        module = value.__module__
        assert module.startswith("torchlean.functional._"), (name, module)
        assert getattr(sys.modules[module], name) is value, name


def test_the_private_names_other_modules_reach_are_reexported() -> None:
    for name in REACHED:
        value = getattr(F, name)
        assert getattr(sys.modules[value.__module__], name) is value, name


def test_no_submodule_name_is_an_exported_name() -> None:
    exported = set(F.__all__) | set(REACHED) | {"Operand", "Axes", "IntOrTuple"}
    assert not exported & set(SUBMODULES)
    for name in exported:  # after every submodule has loaded, the names are still the functions
        assert not isinstance(getattr(F, name), type(sys)), name


@pytest.mark.parametrize("module", SUBMODULES)
def test_a_submodule_imports_nothing_above_the_functional_layer(module: str) -> None:
    tree = ast.parse((PACKAGE / f"{module}.py").read_text(encoding="utf-8"))
    imported = [
        node.module
        for node in ast.walk(tree)
        if isinstance(node, ast.ImportFrom) and node.module is not None
    ] + [alias.name for node in ast.walk(tree) if isinstance(node, ast.Import) for alias in node.names]
    upward = [m for m in imported if m.startswith("torchlean") and not m.startswith(ALLOWED)]
    assert upward == [], (module, upward)
    assert f"torchlean.functional.{module}" not in imported


def test_the_package_loads_in_a_fresh_interpreter_with_every_submodule() -> None:
    """``import torchlean.functional`` first thing in a new interpreter succeeds (a cycle among the
    submodules would fail here: the package body always runs before any submodule) and loads each
    submodule; ``import torchlean`` alone loads none (its names stay lazy)."""
    code = (
        "import sys, torchlean\n"
        "assert not [m for m in sys.modules if m.startswith('torchlean.functional')]\n"
        "import torchlean.functional\n"
        "print(' '.join(sorted(m for m in sys.modules if m.startswith('torchlean.functional.'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", code], check=True, capture_output=True, text=True)
    assert done.stdout.split() == [f"torchlean.functional.{m}" for m in SUBMODULES]
