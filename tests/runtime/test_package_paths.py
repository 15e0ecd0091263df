"""Every dotted path the README (and DESIGN.md §3) prints resolves after a plain ``import
torchlean``, whatever was imported before (review46 F3: ``torchlean.trainer.session_seed(0)`` was an
AttributeError unless something had imported ``torchlean.trainer`` first), and ``import torchlean``
itself still loads no submodule (PEP 562)."""

from __future__ import annotations

import builtins
import inspect
import json
import re
import subprocess
import sys
from importlib import metadata
from pathlib import Path

import numpy as np
import pytest
from _docs import documentation

import torchlean
from torchlean.backend._submodules import submodule

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
    found = set(re.findall(r"torchlean(?:\.[A-Za-z_][A-Za-z0-9_]*)+", documentation()))
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


def _public_module_paths() -> list[str]:
    """Every module and package of torchlean whose dotted path has no ``_``-prefixed part."""
    root = Path(torchlean.__file__).parent
    paths = []
    for file in root.rglob("*.py"):
        parts = ("torchlean", *file.relative_to(root).with_suffix("").parts)
        parts = parts[:-1] if parts[-1] == "__init__" else parts
        if not any(part.startswith("_") for part in parts):
            paths.append(".".join(parts))
    return sorted(set(paths) - NOT_PATHS)


def test_every_public_submodule_resolves_as_an_attribute_after_a_plain_import() -> None:
    """``torchlean.batches``, ``torchlean.lr_schedules``, ``torchlean.backend.providers.aten.norms``,
    ...: not only the paths the README prints (mread 12: the root kept its own hand-made list)."""
    paths = _public_module_paths()
    assert {"torchlean.batches", "torchlean.backend.providers.aten", "torchlean.nn"} <= set(paths)
    result = _resolve_in_fresh_interpreter(sorted(paths, key=lambda p: -p.count(".")))
    assert result["failures"] == [], result


def test_dir_lists_every_public_submodule_loaded_or_not() -> None:
    """review58 F5: ``dir()`` left out lazy submodules, so tab completion and Python's "Did you
    mean" missed them. In a fresh interpreter: dir() imports none of them."""
    code = (
        "import sys, torchlean\n"
        "names = set(dir(torchlean)) | {'backend.' + n for n in dir(torchlean.backend)}\n"
        "names |= {'cli.' + n for n in dir(torchlean.cli)}\n"
        "print(sorted(n for n in ('batches', 'lr_schedules', 'cli', 'backend.report', 'backend.providers',"
        " 'cli.train') if n in names), 'torchlean.batches' in sys.modules)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split("\n")[0] == (
        "['backend.providers', 'backend.report', 'batches', 'cli', 'cli.train', 'lr_schedules'] False"
    )
    misspelt = subprocess.run(
        [sys.executable, "-c", "import torchlean; torchlean.batchs"], capture_output=True, text=True
    )
    assert "Did you mean: 'batches'?" in misspelt.stderr


def test_help_and_getmembers_work_without_mypy() -> None:
    """review167 F1: dir(torchlean) listed mypy_plugin, whose lookup imports mypy (a development
    tool): help(torchlean) printed only "No module named 'mypy'" and inspect.getmembers raised.
    mypy is hidden here as in an install without it (None in sys.modules makes its import fail)."""
    code = (
        "import sys\nsys.modules['mypy'] = None\n"
        "import inspect, pydoc, torchlean\n"
        "text = pydoc.render_doc(torchlean, renderer=pydoc.plaintext)\n"
        "names = [name for name, _ in inspect.getmembers(torchlean)]\n"
        "print('trainer' in names, 'mypy_plugin' in names, 'PACKAGE CONTENTS' in text)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.split("\n")[0] == "True False True"


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


# Errors named in the docstrings of the package's public functions that are Python's own classes.
BUILTIN_ERRORS = {name for name in dir(builtins) if name.endswith("Error")}


def test_the_errors_the_ops_tensor_and_session_docstrings_name_are_top_level_names() -> None:
    """review46 F5: ``GuardError`` (most functional ``Raises:`` sections) and ``GuardTypeError``
    were reachable only as ``torchlean.backend.errors.GuardError``. Every torchlean error class that
    the docstring of a functional op, of ``Tensor`` or of ``Session`` (and their public methods)
    names is now ``torchlean.<Name>``, the very class raised."""
    documented = [getattr(torchlean, name) for name in torchlean.functional.__all__]
    for cls in (torchlean.Tensor, torchlean.Session):
        documented += [cls, *(getattr(cls, name) for name in dir(cls) if not name.startswith("_"))]
    named: set[str] = set()
    for obj in documented:
        named |= set(re.findall(r"\b([A-Z][A-Za-z]*Error)\b", inspect.getdoc(obj) or ""))
    assert {"GuardError", "GuardTypeError", "TensorTypeError", "SessionError", "DeviceError"} <= named
    for error in sorted(named - BUILTIN_ERRORS):
        assert error in torchlean.__all__, error
        assert issubclass(getattr(torchlean, error), torchlean.TorchLeanError), error
    with pytest.raises(torchlean.GuardError, match=r"^exp: input x has dtype int64"):
        torchlean.exp(torchlean.tensor(np.array([1, 2])))


def test_the_other_caught_errors_are_exported_as_the_classes_raised() -> None:
    from torchlean import batches, trainer
    from torchlean.backend import errors

    for owner, names in (
        (errors, ("GuardError", "GuardTypeError", "PlanningError", "SessionError", "SessionTypeError")),
        (errors, ("UnknownLabelError",)),
        (batches, ("BatchError",)),
        (trainer, ("TrainerError", "TrainerLabelError")),
    ):
        for name in names:
            assert getattr(torchlean, name) is getattr(owner, name), name
    assert torchlean.data.BatchError is torchlean.BatchError  # data.minibatches raises it
    with pytest.raises(torchlean.BatchError, match="batch_size"):
        torchlean.data.minibatches(np.ones((4, 2)), batch_size=0)
    with pytest.raises(torchlean.TrainerLabelError, match=r"^unknown device gpu "):
        torchlean.RunConfig(device="gpu")


def test_version_is_the_installed_distributions_and_the_cli_prints_the_same() -> None:
    """``torchlean.__version__`` is read from the distribution metadata on first use (nothing else
    is imported); ``torchlean --version`` prints ``torchlean <version> (numpy ..., torch ...)``."""
    code = (
        "import sys, torchlean; v = torchlean.__version__; "
        "loaded = sorted(m for m in sys.modules if m.startswith('torchlean')); "
        "print(v, '__version__' in dir(torchlean), loaded)"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout.split(" ", 1) == [metadata.version("torchlean"), "True ['torchlean']\n"]
    cli = subprocess.run(
        [sys.executable, "-m", "torchlean", "--version"], capture_output=True, text=True, check=True
    )
    assert cli.stdout.split()[:2] == ["torchlean", torchlean.__version__]
    assert re.fullmatch(r"[0-9]+(\.[0-9]+)*\S*", torchlean.__version__)


def test_version_of_an_uninstalled_tree_is_below_every_release(monkeypatch: pytest.MonkeyPatch) -> None:
    def missing(name: str) -> str:
        raise metadata.PackageNotFoundError(name)

    monkeypatch.setattr(metadata, "version", missing)
    assert torchlean._version() == "0+unknown"


@pytest.mark.parametrize(
    ("statement", "alias", "target"),
    [
        ("import torchlean.profiler as m", "profiler", "torchlean.autograd.profiler"),
        ("from torchlean.profiler import profile as p; import torchlean.profiler as m", "profiler",
         "torchlean.autograd.profiler"),
        ("import torchlean.profiles as m", "profiles", "torchlean.backend.profiles"),
        ("from torchlean.profiles import get as p; import torchlean.profiles as m", "profiles",
         "torchlean.backend.profiles"),
    ],
)
def test_the_aliased_modules_import_as_statements(statement: str, alias: str, target: str) -> None:
    """review61 F5: ``import torchlean.profiler`` was a ModuleNotFoundError (it was only an attribute
    alias). In a fresh interpreter, the import statement gives the aliased module itself (one module,
    so one profiler state or profile registry), the same object as the attribute, before or after
    ``import torchlean`` reads it; a plain ``import torchlean`` still loads neither."""
    code = (
        f"import sys\n{statement}\nimport torchlean, importlib\n"
        f"target = importlib.import_module({target!r})\n"
        f"print(m is target, torchlean.{alias} is target, sys.modules['torchlean.{alias}'] is target)\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert done.stdout == "True True True\n"
    light = _resolve_in_fresh_interpreter([])
    assert light["loaded"] == ["torchlean"]


def test_the_errors_the_backend_entry_points_name_are_backend_names() -> None:
    """review73 F9: ``bind``, ``ExecutableKernel.run`` and ``AcceptedKernel.audit`` name
    ``UnmintedError`` and ``BindingError`` in their ``Raises:``; each such error is
    ``torchlean.backend.<Name>``, the very class raised."""
    import torchlean.backend as backend

    named: set[str] = set()
    for obj in (backend.bind, backend.ExecutableKernel.run, backend.AcceptedKernel.audit, backend.accept):
        named |= set(re.findall(r"\b([A-Z][A-Za-z]*Error)\b", inspect.getdoc(obj) or ""))
    assert {"UnmintedError", "BindingError"} <= named
    for error in sorted(named - BUILTIN_ERRORS):
        assert error in backend.__all__, error
        assert issubclass(getattr(backend, error), torchlean.TorchLeanError), error
    forged = backend.AcceptedKernel.__new__(backend.AcceptedKernel)
    with pytest.raises(backend.UnmintedError, match="was not minted by its gate"):
        forged.audit()


@pytest.mark.parametrize(("name", "hint"), [
    ("inference_mode", "tl.no_grad()"),
    ("stack", "tl.concat(["),
    ("cat", "tl.concat(tensors, axis)"),
    ("zeros", "tl.tensor(np.zeros(...), dtype=...)"),
    ("manual_seed", "tl.session(seed=...)"),
    # review231 F6 (the rest)
    ("int64", 'dtype="int64"'),
    ("argmax", "np.argmax(t.numpy(), axis=...)"),
    ("where", "a * m + b * (1 - m)"),
    ("max", "tl.maximum(a, b) elementwise"),
    ("flatten", "t.flatten(...)"),
    ("set_default_dtype", 'RunConfig(dtype="float64")'),
    ("as_tensor", "tl.tensor(data) (a copy"),  # review240 F6
    ("empty", "tl.tensor(np.empty(...), dtype=...)"),
])
def test_torchs_top_level_names_say_what_torchlean_spells(name: str, hint: str) -> None:
    """review230 F5: ``tl.inference_mode`` (ported ``torch.inference_mode()``) was Python's bare
    AttributeError."""
    import torchlean

    with pytest.raises(AttributeError) as caught:
        getattr(torchlean, name)
    assert str(caught.value).startswith(f"module 'torchlean' has no attribute {name!r}; ")
    assert hint in str(caught.value) and not hasattr(torchlean, name)
    with pytest.raises(AttributeError, match=r"^module 'torchlean' has no attribute 'no_such_name'$"):
        torchlean.no_such_name  # type: ignore[attr-defined]  # noqa: B018


def test_the_spellings_the_hints_give_run() -> None:
    """The hints' alternatives, run: each gives torch's result (float64 oracle)."""
    import numpy as np
    import torch

    import torchlean as tl

    x = np.array([[1.0, -3.0, 2.0], [0.5, 4.0, -1.0]])
    t, theirs = tl.tensor(x, requires_grad=True), torch.tensor(x)
    assert tl.tensor([1, 0], dtype="int64").dtype == np.int64
    assert tl.tensor([True, False], dtype="bool").dtype == np.bool_
    np.testing.assert_array_equal(np.argmax(t.numpy(), axis=1), torch.argmax(theirs, 1).numpy())
    np.testing.assert_array_equal(np.argmin(t.numpy(), axis=1), torch.argmin(theirs, 1).numpy())
    m = np.array([[1.0, 0.0, 1.0], [0.0, 1.0, 0.0]])
    blend = (t * m + tl.tensor(-x) * (1 - m)).numpy()
    np.testing.assert_array_equal(blend, torch.where(torch.tensor(m) > 0, theirs, -theirs).numpy())
    np.testing.assert_array_equal(np.max(t.numpy(), axis=1), torch.amax(theirs, 1).numpy())
    assert t.flatten().shape == (6,) and t.unsqueeze(0).shape == (1, 2, 3)
    np.testing.assert_array_equal(t.square().numpy(), (theirs * theirs).numpy())
    np.testing.assert_array_equal(t.clip(0.0, 1.0).numpy(), torch.clip(theirs, 0.0, 1.0).numpy())
    assert isinstance(t, tl.Tensor) and torch.is_tensor(theirs)
