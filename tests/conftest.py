"""Fixtures shared by every test directory.

``bench_script``: loads a script of ``bench/`` as a module (``bench_script("gpu_check")``), with
``bench/`` on sys.path for the test's duration (the scripts import their helper ``_record``) and
the module registered in ``sys.modules`` (dataclasses look their module up).
"""

from __future__ import annotations

import importlib.util
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

BENCH = Path(__file__).resolve().parents[1] / "bench"


@pytest.fixture
def bench_script(monkeypatch: pytest.MonkeyPatch) -> Callable[[str], ModuleType]:
    def load(name: str) -> ModuleType:
        monkeypatch.syspath_prepend(str(BENCH))
        spec = importlib.util.spec_from_file_location(f"bench_{name}", BENCH / f"{name}.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        monkeypatch.setitem(sys.modules, spec.name, module)
        spec.loader.exec_module(module)
        return module

    return load
