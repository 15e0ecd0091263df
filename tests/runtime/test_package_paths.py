"""Every dotted path the README (and DESIGN.md §3) prints resolves after a plain ``import
torchlean``, whatever was imported before (review46 F3: ``torchlean.trainer.session_seed(0)`` was an
AttributeError unless something had imported ``torchlean.trainer`` first), and ``import torchlean``
itself still loads no submodule (PEP 562)."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

import torchlean
from torchlean.backend._submodules import submodule

README = Path(__file__).resolve().parents[2] / "README.md"

# DESIGN.md lives outside the repository; its dotted paths (other than the names below), copied.
DESIGN_PATHS = (
    "torchlean.backend.accept",
    "torchlean.backend.profiles.get",
    "torchlean.ir",
    "torchlean.spec.causal_mask",
    "torchlean.spec.flash_attention",
    "torchlean.spec.hard_masked_softmax",
    "torchlean.spec.scaled_dot_product_attention",
    "torchlean.spec.scaled_dot_product_attention_backward",
)
# Printed, but not attribute paths: a capsule name (``torchlean select`` prints it) and the name of
# the mypy plugin in ``[tool.mypy] plugins`` (a separate import that needs mypy).
NOT_PATHS = {"torchlean.composed_attention", "torchlean.mypy_plugin"}

SUBMODULES = ("autograd", "backend", "checkpoint", "ir", "models", "shapes", "trainer", "validation")


def _printed_paths() -> list[str]:
    found = set(re.findall(r"torchlean(?:\.[A-Za-z_][A-Za-z0-9_]*)+", README.read_text(encoding="utf-8")))
    return sorted((found | set(DESIGN_PATHS)) - NOT_PATHS)


_RESOLVE = """
import json, sys
import torchlean
loaded = sorted(m for m in sys.modules if m.startswith("torchlean"))
numpy = "numpy" in sys.modules
failures = []
for path in sys.argv[1:]:
    obj = torchlean
    try:
        for part in path.split(".")[1:]:
            obj = getattr(obj, part)
    except AttributeError as error:
        failures.append(f"{path}: {error}")
print(json.dumps({"loaded": loaded, "numpy": numpy, "failures": failures}))
"""


def _resolve_in_fresh_interpreter(paths: list[str]) -> dict[str, object]:
    done = subprocess.run(
        [sys.executable, "-c", _RESOLVE, *paths], capture_output=True, text=True, check=True
    )
    result: dict[str, object] = json.loads(done.stdout)
    return result


def test_the_readme_prints_the_paths_this_test_expects() -> None:
    """The extraction finds the paths of review46 F3 (so an empty or broken regex cannot pass)."""
    paths = _printed_paths()
    for path in (
        "torchlean.trainer.session_seed",
        "torchlean.validation",
        "torchlean.checkpoint.load",
        "torchlean.models.build_model",
        "torchlean.backend.report.audit_to_json",
        "torchlean.shapes.check_dims",
        "torchlean.backend.providers.reference.guards.check_matmul",
    ):
        assert path in paths, path


def test_each_printed_dotted_path_resolves_after_a_plain_import() -> None:
    """One fresh interpreter per second-level name (``torchlean.backend``, ``torchlean.trainer``,
    ...), so one path's imports cannot make another's work; the longest path first within it."""
    groups: dict[str, list[str]] = {}
    for path in _printed_paths():
        groups.setdefault(".".join(path.split(".")[:3]), []).append(path)
    failures = []
    for paths in groups.values():
        result = _resolve_in_fresh_interpreter(sorted(paths, key=lambda p: -p.count(".")))
        assert result["loaded"] == ["torchlean"] and result["numpy"] is False, result
        failures += result["failures"]  # type: ignore[operator]
    assert failures == []


def test_import_torchlean_stays_light_and_dir_lists_the_submodules() -> None:
    result = _resolve_in_fresh_interpreter([])
    assert result == {"loaded": ["torchlean"], "numpy": False, "failures": []}
    names = dir(torchlean)
    for name in SUBMODULES:
        assert name in names and name in torchlean.__all__, name
    # a submodule and a public name of the same spelling: the function ``tensor`` stays the function
    assert callable(torchlean.tensor) and torchlean.trainer.__name__ == "torchlean.trainer"
    assert torchlean.Trainer is torchlean.trainer.Trainer


def test_a_missing_name_is_still_an_attribute_error() -> None:
    for owner, name in (
        (torchlean, "no_such_module"),
        (torchlean.backend, "no_such_module"),
        (torchlean.backend.providers, "reference.guards"),
    ):
        assert not hasattr(owner, name), name
    for name in ("_templates", "reference.guards", "no_such_module"):  # private, dotted, missing
        try:
            submodule("torchlean.backend.providers", name)
        except AttributeError as error:
            assert str(error) == f"module 'torchlean.backend.providers' has no attribute {name!r}"
        else:
            raise AssertionError(f"{name} was served")
    with pytest.raises(AttributeError, match=r"^module 'torchlean.backend' has no attribute 'no_such_"):
        getattr(torchlean.backend, "no_such_module")  # noqa: B009
