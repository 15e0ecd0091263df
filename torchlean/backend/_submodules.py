"""A package's submodules as attributes on first use (PEP 562), so that a dotted path such as
``torchlean.backend.report.audit_line`` resolves after a plain ``import torchlean``.

Imports nothing heavy: the submodule named is imported when its attribute is first read.
"""

from __future__ import annotations

import importlib
import importlib.util
import pkgutil
import sys
from collections.abc import Callable
from types import ModuleType


def submodule(package: str, name: str) -> ModuleType:
    """The submodule ``<package>.<name>``, imported now; a package's module ``__getattr__``.

    Private names (``_``-prefixed) and dotted names are not served.

    Raises:
        AttributeError: ``name`` is not a public submodule of ``package`` (the message ``getattr``
            gives for any missing module attribute).
    """
    public = not name.startswith("_") and "." not in name
    if public and importlib.util.find_spec(f"{package}.{name}") is not None:
        return importlib.import_module(f"{package}.{name}")
    raise AttributeError(f"module {package!r} has no attribute {name!r}")


def public_submodules(package: str) -> list[str]:
    """The names of ``package``'s public submodules, loaded or not (found on its path, imported
    nothing), sorted."""
    spec = importlib.util.find_spec(package)
    locations = None if spec is None else spec.submodule_search_locations
    if not locations:
        return []
    return sorted(m.name for m in pkgutil.iter_modules(locations) if not m.name.startswith("_"))


def module_dir(package: str) -> Callable[[], list[str]]:
    """A module ``__dir__`` (PEP 562) for ``package``: its attributes and its public submodules,
    loaded or not, so tab completion and Python's "Did you mean" see the lazy ones (review58 F5).

    Use as ``__dir__ = module_dir(__name__)`` beside :func:`module_getattr`.
    """

    def __dir__() -> list[str]:
        return sorted(set(vars(sys.modules[package])) | set(public_submodules(package)))

    return __dir__


def module_getattr(package: str) -> Callable[[str], ModuleType]:
    """A module ``__getattr__`` (PEP 562) for ``package``: :func:`submodule` of ``package``.

    Use as ``__getattr__ = module_getattr(__name__)`` under ``if not TYPE_CHECKING:`` (mypy resolves
    submodules itself, and a visible module ``__getattr__`` would make every attribute ``Any``).
    """

    def __getattr__(name: str) -> ModuleType:
        return submodule(package, name)

    __getattr__.__doc__ = f"``{package}.<name>`` for a public submodule, imported on first use."
    return __getattr__
