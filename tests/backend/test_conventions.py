"""DESIGN.md §4's conventions, checked over the package's source (review180 F7, F8; review181 F7):
enums are ``LabelledEnum`` s (UPPER_CASE members with a ``.label``), and dataclasses are frozen
records with slots unless they hold state, each such class named here with its reason.

Oracle: the class definitions themselves (``ast``)."""

from __future__ import annotations

import ast
import enum
import importlib
import inspect
import pkgutil
from pathlib import Path

import torchlean
from torchlean.backend.vocabulary import LabelledEnum

PACKAGE = Path(__file__).resolve().parents[2] / "torchlean"

STATEFUL = {
    "EpochPace": "a step watcher: the time of the last step and the steps seen",
    "GraphOps": "a graph builder: appends nodes as a forward program runs",
    "Model": "its parameters are replaced by each optimizer step",
    "Optimizer": "its moment buffers and step counts move with each step",
    "_GraphStep": "one flag, recorded, set once per cached step program",
}
"""The mutable dataclasses and why each holds state (each still takes ``slots=True``)."""

NOT_LABELLED = {"_Unset": "a one-member sentinel for an argument not given"}


def _classes() -> list[tuple[str, ast.ClassDef]]:
    found = []
    for path in sorted(PACKAGE.rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, ast.ClassDef):
                found.append((str(path.relative_to(PACKAGE.parent)), node))
    return found


def _name(node: ast.expr) -> str:
    target = node.func if isinstance(node, ast.Call) else node
    if isinstance(target, ast.Name):
        return target.id
    return target.attr if isinstance(target, ast.Attribute) else ""


ENUM_BASES = {"Enum", "IntEnum", "StrEnum", "Flag", "IntFlag", "ReprEnum"}


def test_enum_is_imported_under_its_own_names() -> None:
    """The scan below knows the enum bases by name: an alias (``from enum import Enum as E``)
    would hide one from it (review186 F8)."""
    aliased = [f"{path.relative_to(PACKAGE.parent)}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
               for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
               if (isinstance(node, ast.ImportFrom) and node.module == "enum"
               and any(alias.asname not in (None, alias.name) for alias in node.names))
               or (isinstance(node, ast.Import) and any(a.name == "enum" and a.asname for a in node.names))]
    assert aliased == []


def test_every_enum_is_a_labelled_enum() -> None:
    plain = [f"{path}:{node.lineno} {node.name}" for path, node in _classes()
             if any(_name(base) in ENUM_BASES for base in node.bases)
             and node.name not in NOT_LABELLED and node.name != "LabelledEnum"]
    assert plain == []
    # the functional API (Enum("Color", "RED GREEN")) makes a class no ClassDef shows (review185 F6)
    calls = [f"{path}:{node.lineno}" for path in sorted(PACKAGE.rglob("*.py"))
             for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
             if isinstance(node, ast.Call) and _name(node) in ENUM_BASES]
    assert calls == []


def test_every_enum_class_the_modules_define_is_a_labelled_enum() -> None:
    """The same rule over the imported classes, which no spelling of the base escapes (an alias by
    assignment, ``_E = enum.Enum``, hides a base from the scan above: review187 F4)."""
    modules = [importlib.import_module(info.name)
               for info in pkgutil.walk_packages(torchlean.__path__, "torchlean.")]
    enums = {f"{cls.__module__}.{cls.__qualname__}": cls for module in modules
             for _, cls in inspect.getmembers(module, inspect.isclass)
             if issubclass(cls, enum.Enum) and cls.__module__.startswith("torchlean.")}
    assert len(enums) > 10  # the scan found the package's enums
    plain = sorted(name for name, cls in enums.items()
                   if not issubclass(cls, LabelledEnum) and cls is not LabelledEnum
                   and cls.__name__ not in NOT_LABELLED)
    assert plain == []


def test_dataclasses_are_frozen_with_slots_or_named_as_stateful() -> None:
    found = []
    for path, node in _classes():
        for decorator in node.decorator_list:
            if _name(decorator) == "dataclass":
                keywords = ({k.arg: getattr(k.value, "value", None) for k in decorator.keywords}
                            if isinstance(decorator, ast.Call) else {})
                found.append((path, node.name, bool(keywords.get("frozen")), bool(keywords.get("slots"))))
    assert len(found) > 100
    assert sorted(f"{path} {name}" for path, name, _, slots in found if not slots) == []
    assert sorted(name for _, name, frozen, _ in found if not frozen) == sorted(STATEFUL)
