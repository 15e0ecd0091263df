"""mypy over examples/mypy/: every reported line must match an expected-error marker, and back.

Each example line that mypy must reject carries its expected output as a trailing marker
``# E: <message>  [<code>]`` (an error) or ``# N: <message>`` (a note); one line may carry several.
mypy runs once over all examples through ``mypy.api.run`` (strict, with the torchlean plugin,
cache under a temporary directory); a missing or an extra line fails. A second run over a
deliberately altered copy shows that the comparison reports both kinds of difference.

Source: issue 6; reference/typing-notes.md §4 (batched ``mypy.api.run`` test set-up).
"""

from __future__ import annotations

import contextlib
import io
import os
import re
import runpy
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from _docs import documentation, python_blocks
from mypy import api

REPO = Path(__file__).resolve().parents[2]
EXAMPLES = REPO / "examples" / "mypy"
PLUGIN = REPO / "torchlean" / "mypy_plugin.py"

MARKER = re.compile(r"\s#\s([EN]):\s")
REPORT = re.compile(r"^(?P<path>.+?):(?P<line>\d+): (?P<severity>error|note): (?P<message>.*)$")
SEVERITY = {"E": "error", "N": "note"}

# Strict, with the plugin; numpy/torch are skipped (their stubs take most of a cold run and no
# example needs them); errors inside torchlean itself are not this test's business.
CONFIG = """\
[mypy]
strict = True
plugins = {plugin}
mypy_path = {stubs}:{repo}
follow_imports = silent
warn_unused_configs = False

[mypy-numpy.*,torch.*,sklearn.*,mpmath.*,tqdm.*,torchlean_native_ext.*]
follow_imports = skip
ignore_missing_imports = True
"""


@dataclass(frozen=True, order=True, slots=True)
class Report:
    """One line of mypy output (or one expected by a marker)."""

    path: str
    line: int
    severity: str
    message: str

    def render(self) -> str:
        return f"{self.path}:{self.line}: {self.severity}: {self.message}"


def expected_reports(files: list[Path]) -> set[Report]:
    """The reports that the markers of ``files`` ask for."""
    expected: set[Report] = set()
    for path in files:
        for number, text in enumerate(path.read_text().splitlines(), start=1):
            parts = MARKER.split(text)
            # parts = [code, kind, message, kind, message, ...]
            for kind, message in zip(parts[1::2], parts[2::2], strict=True):
                expected.add(Report(str(path), number, SEVERITY[kind], message.rstrip()))
    return expected


def run_mypy(
    files: list[Path],
    workdir: Path,
    *,
    plugins: str = str(PLUGIN),
    extra: str = "",
    cache: str | None = None,
    follow_torch: bool = False,
) -> tuple[set[Report], list[str]]:
    """Run mypy once over ``files``; return the parsed reports and any unparsable output lines
    (and a line for an exit status that is neither 0 nor 1: a crash).

    ``plugins`` replaces the plugin list (comma-separated), ``extra`` adds lines to the
    ``[mypy]`` section of the configuration and ``cache`` replaces the cache directory;
    ``follow_torch`` reads torch's own types, as a user's configuration does (slower)."""
    config = workdir / "mypy.ini"
    text = CONFIG.format(plugin=plugins, stubs=REPO / "stubs", repo=REPO)
    if follow_torch:
        text = text.replace("torch.*,", "", 1)
    config.write_text(text.replace("[mypy]\n", f"[mypy]\n{extra}", 1))
    stdout, stderr, status = api.run(
        [
            "--config-file",
            str(config),
            "--cache-dir",
            str(workdir / "cache") if cache is None else cache,
            "--no-pretty",
            "--no-error-summary",
            "--show-absolute-path",
            "--hide-error-context",
            *map(str, files),
        ]
    )
    reports: set[Report] = set()
    stray = [line for line in stderr.splitlines() if line.strip()]
    if status not in (0, 1):  # 2: mypy crashed (an INTERNAL ERROR goes to the real stderr, not here)
        stray.append(f"mypy exited with status {status} (a crash: INTERNAL ERROR)")
    for line in stdout.splitlines():
        match = REPORT.match(line)
        if match is None:
            stray.append(line)
            continue
        reports.add(Report(match["path"], int(match["line"]), match["severity"], match["message"].rstrip()))
    return reports, stray


def compare(expected: set[Report], actual: set[Report], stray: list[str]) -> list[str]:
    """Every difference between markers and mypy output, one line each (empty when equal)."""
    return (
        [f"missing (marked, not reported): {r.render()}" for r in sorted(expected - actual)]
        + [f"unexpected (reported, not marked): {r.render()}" for r in sorted(actual - expected)]
        + [f"unparsable mypy output: {line}" for line in stray]
    )


@pytest.fixture(scope="module")
def workdir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("mypy-examples")


def example_files() -> list[Path]:
    return sorted(EXAMPLES.glob("*.py"))


def test_examples_match_their_markers(workdir: Path) -> None:
    files = example_files()
    assert files, f"no examples in {EXAMPLES}"
    expected = expected_reports(files)
    actual, stray = run_mypy(files, workdir)
    assert compare(expected, actual, stray) == []


def test_examples_cover_every_route() -> None:
    """Each bypass route of issue 6 appears in at least one marker; one program is clean."""
    markers = [r.message for r in expected_reports(example_files())]
    routes = [
        "Construction of sealed type",
        "object.__new__() of sealed type",
        "AcceptedKernel.__new__() of sealed type",
        "AcceptedKernel.__init__() of sealed type",
        "copy.copy() of sealed type",
        "copy.deepcopy() of sealed type",
        "dataclasses.replace() of sealed type",
        '"torchlean.backend.sealed._mint" is private to torchlean',
        '"torchlean.backend.sealed._GATE" is private to torchlean',
        '"torchlean.backend.sealed._MINTED" is private to torchlean',
        '"torchlean.backend.sealed._GateToken" is private to torchlean',
        "Invalid Shape dimension",
        'Type "Trainer" leaves In and Out as Any',
        'Type "Trainer[Shape[3]]" leaves Out as Any',
    ]
    for route in routes:
        assert any(route in m for m in markers), route
    for name in ("AcceptedKernel", "AcceptedGraphKernelPlan", "ExecutableKernel"):
        assert any(f'sealed type "{name}"' in m for m in markers), name
    assert any('expected "Trainer[Shape[Literal[3]], Shape[Literal[1]]]"' in m for m in markers)
    clean = EXAMPLES / "correct_program.py"
    assert clean.exists() and not expected_reports([clean])


PRIVATE = '"torchlean.backend.sealed.{name}" is private to torchlean'


@pytest.mark.parametrize(
    ("code", "expected"),
    [
        (
            "super(AcceptedKernel, AcceptedKernel).__new__(AcceptedKernel)",
            'object.__new__() of sealed type "AcceptedKernel"',
        ),
        ("sealed_module._mint(forged)", PRIVATE.format(name="_mint")),
        ("mint(forged)", PRIVATE.format(name="_mint")),
        ("_MINTED[id(forged)] = ", PRIVATE.format(name="_MINTED")),
        ("sealed._MINTED.update(", PRIVATE.format(name="_MINTED")),
        ("sealed_module._FIELD_GETTERS.clear()", PRIVATE.format(name="_FIELD_GETTERS")),
        ("id(forged) in _MINTED", PRIVATE.format(name="_MINTED")),
        ("for key in _MINTED:", PRIVATE.format(name="_MINTED")),
        ("del sealed._MINTED[key]", PRIVATE.format(name="_MINTED")),
        ("_mint(_GATE)", PRIVATE.format(name="_GATE")),
        (
            "AcceptedKernel(planned.op, planned.capsule, profile.policy, _gate=_GATE)",
            PRIVATE.format(name="_GATE"),
        ),
        # review101 F1: module-level aliases of __init__ / __new__, with the private token passed
        ("init(kernel, kernel.op", 'AcceptedKernel.__init__() of sealed type "AcceptedKernel"'),
        ("init(kernel, kernel.op", PRIVATE.format(name="_GATE")),
        ("init_again(kernel", 'AcceptedKernel.__init__() of sealed type "AcceptedKernel"'),
        ("declared_init(kernel", 'AcceptedKernel.__init__() of sealed type "AcceptedKernel"'),
        ("reinit_kernel(kernel.op", 'AcceptedKernel.__init__() of sealed type "AcceptedKernel"'),
        ("class_init(kernel", 'AcceptedKernel.__init__() of sealed type "AcceptedKernel"'),
        ("\nnew(AcceptedKernel)", 'AcceptedKernel.__new__() of sealed type "AcceptedKernel"'),
        ("object_new(AcceptedKernel)", 'object.__new__() of sealed type "AcceptedKernel"'),
        ("object_new(ExecutableKernel)", 'object.__new__() of sealed type "ExecutableKernel"'),
        ("sealable_new(AcceptedKernel)", 'Sealable.__new__() of sealed type "AcceptedKernel"'),
        # review101 F2: object.__new__ of a union of class objects
        ("return object.__new__(cls)", 'object.__new__() of sealed type "AcceptedKernel"'),
        # review101 F4, F5: the registry written through dict's bases, or through a bound-method alias
        ("MutableMapping.__setitem__(_MINTED", PRIVATE.format(name="_MINTED")),
        ("MutableMapping.update(sealed._MINTED", PRIVATE.format(name="_MINTED")),
        ("MutableMapping.setdefault(_MINTED", PRIVATE.format(name="_MINTED")),
        ("MutableMapping.clear(_MINTED)", PRIVATE.format(name="_MINTED")),
        ("Mapping.get(sealed_module._FIELD_GETTERS", PRIVATE.format(name="_FIELD_GETTERS")),
        ("clear_registry()", PRIVATE.format(name="_MINTED")),
        ("write_registry(id(forged)", PRIVATE.format(name="_MINTED")),
    ],
)
def test_private_uses_and_super_new_are_marked(code: str, expected: str) -> None:
    """The routes a reviewer found unreported now carry markers (and test_examples_match_their_markers
    shows mypy prints them). A ``code`` that starts with a newline must start the line."""
    lines = [
        text
        for path in example_files()
        for text in path.read_text().splitlines()
        if code in text or (code.startswith("\n") and text.startswith(code[1:]))
    ]
    assert lines, code
    for text in lines:
        messages = MARKER.split(text)[2::2]
        assert any(expected in message for message in messages), text


def test_imports_of_private_names_are_not_reported() -> None:
    """mypy has no plugin hook for import statements (nor for a bare name): the examples import the
    private names on unmarked lines, so an error there would fail the marker comparison. If a mypy
    release reports them, this documents what changed."""
    imports = [
        text
        for path in example_files()
        for text in path.read_text().splitlines()
        if text.startswith("from torchlean.backend.sealed import _") or text == "token = _GATE"
    ]
    assert len(imports) == 4
    assert not any(MARKER.search(text) for text in imports)


def test_package_modules_using_private_helpers_are_clean(workdir: Path) -> None:
    """Inside torchlean the gates call ``_mint`` and pass ``_GATE``: no torchlean-sealed error there."""
    backend = REPO / "torchlean" / "backend"
    files = [backend / "sealed.py", backend / "acceptance.py", backend / "binding.py"]
    own = workdir / "package"
    own.mkdir()
    actual, stray = run_mypy(files, own)
    assert stray == []
    assert [r.render() for r in actual if "[torchlean-sealed]" in r.message] == []
    assert sum("_mint(" in path.read_text() for path in files) >= 2  # the check above saw real uses


USER_SEALED = """\
from dataclasses import InitVar, dataclass
from typing import final

from torchlean.backend.sealed import Sealable, sealed


@final
@sealed("user_sealed.make_one"){second}
@dataclass(frozen=True, slots=True, eq=False)
class Token(Sealable):
    value: int
    _gate: InitVar[object]
"""


@pytest.mark.parametrize("stacked", [False, True])
def test_stacked_sealed_decorators_are_reported_once(workdir: Path, stacked: bool) -> None:
    """Two stacked ``@sealed`` would keep two gate lists (the runtime refuses the second one,
    tests/backend/test_backend_sealed.py): the plugin reports them, once, at the first; a single
    ``@sealed`` on a user class is clean (the control)."""
    own = workdir / f"user_sealed_{stacked}"
    own.mkdir()
    path = own / "user_sealed.py"
    path.write_text(USER_SEALED.format(second='\n@sealed("user_sealed.make_two")' if stacked else ""))
    actual, stray = run_mypy([path], own)
    assert stray == []
    expected = (
        {
            Report(
                str(path),
                8,
                "error",
                '"Token" has 2 @sealed decorators: name all its gate functions in one @sealed(...)'
                "  [torchlean-sealed]",
            )
        }
        if stacked
        else set()
    )
    assert actual == expected


def test_altered_copy_reports_every_difference(workdir: Path) -> None:
    """Unmarking a bypass, adding an unmarked bypass, and marking a clean line are all caught."""
    source = EXAMPLES / "bypass_copy.py"
    altered_dir = workdir / "altered"
    altered_dir.mkdir()
    altered = altered_dir / source.name
    shutil.copyfile(source, altered)
    lines = altered.read_text().splitlines()
    marked = [i for i, text in enumerate(lines) if MARKER.search(text) and not text.startswith(" ")]
    assert len(marked) >= 2, "bypass_copy.py needs two module-level marked lines"
    unmarked_at, hollowed_at = marked[0], marked[1]
    bypass_code = MARKER.split(lines[unmarked_at])[0]
    kept_marker = lines[hollowed_at][len(MARKER.split(lines[hollowed_at])[0]) :]
    lines[unmarked_at] = bypass_code  # the error stays, its marker is gone
    lines[hollowed_at] = "pass" + kept_marker  # the marker stays, the bypass is gone
    lines.append(bypass_code)  # a new bypass without a marker
    altered.write_text("\n".join(lines) + "\n")

    original_expected = expected_reports([source])
    moved = {Report(str(altered), r.line, r.severity, r.message) for r in original_expected}
    actual, stray = run_mypy([altered], workdir)
    differences = compare(expected_reports([altered]), actual, stray)

    unmarked = sorted(r for r in moved if r.line == unmarked_at + 1)
    hollowed = sorted(r for r in moved if r.line == hollowed_at + 1)
    appended = [Report(r.path, len(lines), r.severity, r.message) for r in unmarked]
    assert unmarked and hollowed
    assert differences == (
        [f"missing (marked, not reported): {r.render()}" for r in hollowed]
        + [f"unexpected (reported, not marked): {r.render()}" for r in sorted(unmarked + appended)]
    )


TRAINER_ARGUMENTS = """\
from typing import Any

from torchlean.shapes import Shape
from torchlean.trainer import Trainer


def bare(trainer: Trainer) -> None: ...
def one(trainer: Trainer[Shape[3]]) -> None: ...
def both(trainer: Trainer[Shape[4], Shape[3]]) -> None: ...
def opted_out(trainer: Trainer[Any, Any]) -> None: ...
"""

TRAINER_MESSAGE = (
    '{line}: error: Type "{written}" leaves {missing} as Any, so shapes are not checked: write '
    "Trainer[In, Out] (per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to "
    "opt out explicitly  [torchlean-trainer]"
)
BARE = TRAINER_MESSAGE.format(line=7, written="Trainer", missing="In and Out")
ONE = TRAINER_MESSAGE.format(line=8, written="Trainer[Shape[3]]", missing="Out")


@pytest.mark.parametrize(
    ("name", "extra", "expected"),
    [
        ("strict", "", [BARE, ONE]),
        # a bare generic is mypy's business only under disallow_any_generics; one argument of two
        # would be mypy's own wrong-count error without the defaults, so it is reported always
        ("no_any_generics", "disallow_any_generics = False\n", [ONE]),
        # a sub-code of type-arg: disabling mypy's code disables the plugin's too
        ("type_arg_disabled", "disable_error_code = type-arg\n", []),
        ("trainer_disabled", "disable_error_code = torchlean-trainer\n", []),
    ],
)
def test_trainer_with_fewer_than_two_type_arguments(
    workdir: Path, name: str, extra: str, expected: list[str]
) -> None:
    """README "Shapes": ``Trainer`` and ``Trainer[Shape[3]]`` would silently be ``Any`` (PEP 696
    defaults); ``Trainer[In, Out]`` with both written, ``Any`` included, is clean."""
    folder = workdir / f"trainer_{name}"
    folder.mkdir()
    source = folder / "trainer_args.py"
    source.write_text(TRAINER_ARGUMENTS)
    actual, stray = run_mypy([source], folder, extra=extra)
    assert stray == []
    assert [f"{r.line}: {r.severity}: {r.message}" for r in sorted(actual)] == expected


def test_trainer_arguments_ignored_by_type_arg(workdir: Path) -> None:
    """``# type: ignore[type-arg]`` covers the sub-code (strict's warn_unused_ignores then names the
    narrower code); ``# type: ignore[torchlean-trainer]`` is exact."""
    folder = workdir / "trainer_ignores"
    folder.mkdir()
    source = folder / "trainer_ignores.py"
    lines = TRAINER_ARGUMENTS.splitlines()
    lines[6] += "  # type: ignore[type-arg]"
    lines[7] += "  # type: ignore[torchlean-trainer]"
    source.write_text("\n".join(lines) + "\n")
    actual, stray = run_mypy([source], folder)
    assert stray == []
    assert [f"{r.line}: {r.severity}: {r.message}" for r in sorted(actual)] == [
        '7: error: Unused "type: ignore" comment, use narrower [torchlean-trainer] instead of '
        "[type-arg] code  [unused-ignore]"
    ]


README_QUOTED = """\
from torchlean.shapes import Shape
from torchlean.trainer import Trainer

bare_shape: Shape


def bare(trainer: Trainer) -> None: ...
def one(trainer: Trainer[Shape[3]]) -> None: ...
"""


def test_readme_quotes_the_trainer_hint_and_the_bare_shape_message(workdir: Path) -> None:
    """README "Shapes" quotes mypy's output word for word: the ``torchlean-trainer`` hint, whose
    example uses the per-sample convention of the README's and examples' ``Trainer[In, Out]``
    (review101 F3), and mypy's own message for a bare ``Shape`` (review101 F9)."""
    folder = workdir / "readme_quoted"
    folder.mkdir()
    source = folder / "readme_quoted.py"
    source.write_text(README_QUOTED)
    actual, stray = run_mypy([source], folder)
    assert stray == []
    messages = [r.message for r in sorted(actual)]
    assert messages == [
        'Missing type arguments for generic type "Shape[()]"  [type-arg]',
        'Type "Trainer" leaves In and Out as Any, so shapes are not checked: write Trainer[In, Out] '
        "(per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out "
        "explicitly  [torchlean-trainer]",
        'Type "Trainer[Shape[3]]" leaves Out as Any, so shapes are not checked: write Trainer[In, Out] '
        "(per-sample shapes, e.g. Trainer[Shape[4], Shape[3]]), or Trainer[Any, Any] to opt out "
        "explicitly  [torchlean-trainer]",
    ]
    readme = documentation()
    for message in messages:
        assert f"error: {message}" in readme, message
    assert "Shape[Any, 4], Shape[Any, 3]]` is a different type" in readme  # the convention, said once


MODULE_LOOKUPS = """\
import importlib
import sys

from torchlean.backend import acceptance, profiles
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.sealed import _GATE
from torchlean.backend.vocabulary import BackendOp

profile = profiles.get("checked_cpu")
planned = profile.plan_ops([BackendOp.RELU]).kernels[0]
args = (planned.op, planned.capsule, profile.policy)
reveal_type(sys.modules["torchlean.backend.acceptance"].AcceptedKernel)
reveal_type(importlib.import_module("torchlean.backend.acceptance").AcceptedKernel)
reveal_type(vars(acceptance)["AcceptedKernel"])
reveal_type(acceptance.__dict__["AcceptedKernel"])
sys.modules["torchlean.backend.acceptance"].AcceptedKernel(*args, _gate=_GATE)
importlib.import_module("torchlean.backend.acceptance").AcceptedKernel(*args, _gate=_GATE)
vars(acceptance)["AcceptedKernel"](*args, _gate=_GATE)
acceptance.__dict__["AcceptedKernel"](*args, _gate=_GATE)
AcceptedKernel(planned.op, planned.capsule, profile.policy, _gate=_GATE)  # type: ignore
"""


@pytest.mark.parametrize("ignore_without_code", [False, True])
def test_module_lookups_are_any_and_bare_ignores(workdir: Path, ignore_without_code: bool) -> None:
    """README "What stays runtime-only": a class looked up through ``sys.modules``,
    ``importlib.import_module``, ``vars(mod)`` or ``mod.__dict__`` is ``Any``, so nothing is reported
    (tests/typing/test_runtime_bypass.py shows ``bind`` refusing what it builds). README "Enable
    the plugin": a bare ``# type: ignore`` silences torchlean-sealed unless ``ignore-without-code``
    is enabled, which then names the code to write."""
    folder = workdir / f"lookups_{ignore_without_code}"
    folder.mkdir()
    source = folder / "lookups.py"
    source.write_text(MODULE_LOOKUPS)
    extra = "enable_error_code = ignore-without-code\n" if ignore_without_code else ""
    actual, stray = run_mypy([source], folder, extra=extra)
    assert stray == []
    bare_ignore = (
        '20: error: "type: ignore" comment without error code (consider "type: ignore[torchlean-sealed]" '
        'instead)  [ignore-without-code]'
    )
    assert [f"{r.line}: {r.severity}: {r.message}" for r in sorted(actual)] == [
        f'{line}: note: Revealed type is "Any"' for line in (12, 13, 14, 15)
    ] + ([bare_ignore] if ignore_without_code else [])


CROSS_MODULE = {
    "helpers.py": "import copy\n\nshallow = copy.copy\n",
    "app.py": (
        "from helpers import shallow\n"
        "from torchlean.backend import profiles\n"
        "from torchlean.backend.acceptance import accept\n"
        "from torchlean.backend.vocabulary import BackendOp\n"
        "profile = profiles.get('checked_cpu')\n"
        "kernel = accept(profile.plan_ops([BackendOp.RELU]).kernels[0], profile.policy)\n"
        "shallow(kernel)\n"
        "unrelated = {value}\n"
    ),
}


def test_cross_module_alias_needs_a_fresh_cache(workdir: Path) -> None:
    """README: an alias imported from another module is followed only while mypy analyses that
    module in the run; after an unrelated edit a persisted cache loses the report, while
    ``--cache-dir=/dev/null`` (no cache, as README advises for CI) reports it every time."""
    folder = workdir / "cross_module"
    folder.mkdir()
    helpers, app = folder / "helpers.py", folder / "app.py"
    helpers.write_text(CROSS_MODULE["helpers.py"])

    def copy_reports(value: int, cache: str | None) -> list[int]:
        app.write_text(CROSS_MODULE["app.py"].format(value=value))
        actual, stray = run_mypy([app, helpers], folder, cache=cache)
        assert stray == []
        return [r.line for r in actual if r.message.startswith("copy.copy() of sealed type")]

    assert copy_reports(1, None) == [7]  # cold cache: helpers analysed in this run
    assert copy_reports(2, None) == []  # app edited, helpers read from the cache: not followed
    assert copy_reports(3, "/dev/null") == [7]
    assert copy_reports(4, "/dev/null") == [7]


TORCH_SPELLINGS = """\
import numpy as np
import torch

import torchlean as tl

x = tl.tensor(np.ones((2, 3)))
x.to(torch.device("cpu"))
x.to(torch.float64)
x.to(np.float32)
x.to(dtype=torch.float64)
"""


def test_tensor_to_refuses_a_dtype_where_mypy_follows_torch(workdir: Path) -> None:
    """review129 F3: ``Tensor.to`` takes a device, ``str | torch.device``, as the run time does
    (``tensor_methods.py`` shows the other refused spellings, under this test's configuration,
    which skips torch and so reads ``torch.device`` as ``Any``); a dtype, torch's or numpy's, is
    reported where it is written. The run time refuses each (tests/runtime/test_tensor.py)."""
    folder = workdir / "torch_spellings"
    folder.mkdir()
    source = folder / "torch_spellings.py"
    source.write_text(TORCH_SPELLINGS)
    actual, stray = run_mypy([source], folder, follow_torch=True)
    assert stray == []
    assert [f"{r.line}: {r.message}" for r in sorted(actual)] == [
        '8: Argument 1 to "to" of "Tensor" has incompatible type "dtype"; expected "str | device"'
        "  [arg-type]",
        '9: Argument 1 to "to" of "Tensor" has incompatible type "type[floating[Any]]"; expected '
        '"str | device"  [arg-type]',
        '10: Argument "dtype" to "to" of "Tensor" has incompatible type "dtype"; expected "None"  [arg-type]',
        '10: Missing positional argument "device" in call to "to" of "Tensor"  [call-arg]',
    ]


def test_correct_program_runs() -> None:
    """The clean example is a real program, not just something mypy accepts."""
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLES / "correct_program.py"), run_name="__main__")
    assert out.getvalue() == "reference.relu\n"


def test_plugin_imports_neither_torch_nor_numpy() -> None:
    """mypy loads the plugin (and so the torchlean package) in its own process: keep that light."""
    code = (
        "import sys, torchlean.mypy_plugin; print(sorted(m for m in ('torch', 'numpy') if m in sys.modules))"
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=env, capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "[]"


OTHER_PLUGIN = """\
from mypy.plugin import MethodContext, Plugin
from mypy.types import Type


def hook(ctx: MethodContext) -> Type:
    ctx.api.fail("otherplug saw Thing.__new__", ctx.context)
    return ctx.default_return_type


class Other(Plugin):
    def get_method_hook(self, fullname: str):  # type: ignore[no-untyped-def]
        return hook if fullname == "thing_lib.Thing.__new__" else None


def plugin(version: str) -> type[Plugin]:
    return Other
"""

CHAINED_SOURCES = {
    "thing_lib.py": "class Thing:\n    pass\n",
    "thing_use.py": (
        "from thing_lib import Thing\n"
        "from torchlean.backend.acceptance import AcceptedKernel\n"
        "Thing.__new__(Thing)\n"
        "object.__new__(AcceptedKernel)\n"
    ),
    "replace313.py": (
        "from torchlean.backend import profiles\n"
        "from torchlean.backend.acceptance import AcceptedKernel, accept\n"
        "from torchlean.backend.sealed import _GATE\n"
        "from torchlean.backend.vocabulary import BackendOp\n"
        "profile = profiles.get('checked_cpu')\n"
        "kernel = accept(profile.plan_ops([BackendOp.RELU]).kernels[0], profile.policy)\n"
        "kernel.__replace__(policy=profile.policy, _gate=_GATE)\n"
        "type(kernel).__replace__(kernel)\n"
        "AcceptedKernel.__replace__(kernel)\n"
    ),
    "replace313_alias.py": (
        "from torchlean.backend import profiles\n"
        "from torchlean.backend.acceptance import AcceptedKernel, accept\n"
        "from torchlean.backend.vocabulary import BackendOp\n"
        "profile = profiles.get('checked_cpu')\n"
        "kernel = accept(profile.plan_ops([BackendOp.RELU]).kernels[0], profile.policy)\n"
        "replace = kernel.__replace__\n"
        "replace(policy=profile.policy)\n"
        "class_replace = AcceptedKernel.__replace__\n"
        "class_replace(kernel)\n"
    ),
    "replace313_typevar.py": (
        "from typing import TypeVar\n"
        "from torchlean.backend.acceptance import AcceptedKernel\n"
        "K = TypeVar('K', bound=AcceptedKernel)\n"
        "def changed(value: K) -> AcceptedKernel:\n"
        "    return value.__replace__(policy=value.policy)\n"
    ),
}


@pytest.fixture(scope="module")
def chained_run(tmp_path_factory: pytest.TempPathFactory) -> dict[str, list[str]]:
    """One mypy run for Python 3.13 with torchlean's plugin listed *before* another plugin that
    hooks ``thing_lib.Thing.__new__``; reports by file name, ``line: severity: message``."""
    workdir = tmp_path_factory.mktemp("mypy-chained")
    other = workdir / "otherplug.py"
    other.write_text(OTHER_PLUGIN)
    files = []
    for name, source in CHAINED_SOURCES.items():
        files.append(workdir / name)
        files[-1].write_text(source)
    actual, stray = run_mypy(files, workdir, plugins=f"{PLUGIN}, {other}", extra="python_version = 3.13\n")
    assert stray == []
    by_file: dict[str, list[str]] = {}
    for report in sorted(actual):
        line = f"{report.line}: {report.severity}: {report.message}"
        by_file.setdefault(Path(report.path).name, []).append(line)
    return by_file


def test_a_later_plugin_still_sees_other_classes_new(chained_run: dict[str, list[str]]) -> None:
    """torchlean hooks ``__new__`` only of ``object``, ``Sealable`` and the sealed classes; mypy's
    plugin chain takes the first hook it finds, so hooking every ``X.__new__`` hid later plugins'."""
    assert chained_run["thing_use.py"] == [
        "3: error: otherplug saw Thing.__new__  [misc]",
        '4: error: object.__new__() of sealed type "AcceptedKernel" outside its gate (allowed only in: '
        "torchlean.backend.acceptance.accept; caller: module thing_use)  [torchlean-sealed]",
    ]


def test_dunder_replace_is_reported_for_python_313(chained_run: dict[str, list[str]]) -> None:
    """mypy's dataclass plugin gives sealed dataclasses ``__replace__`` when checking for 3.13+."""
    route = (
        '{line}: error: AcceptedKernel.__replace__() of sealed type "AcceptedKernel" outside its gate '
        "(allowed only in: torchlean.backend.acceptance.accept; caller: module replace313)  "
        "[torchlean-sealed]"
    )
    gate = (
        '7: error: "torchlean.backend.sealed._GATE" is private to torchlean: sealed values come only from '
        "their gates (caller: module replace313)  [torchlean-sealed]"
    )
    missing_gate = (
        '{line}: error: Missing named argument "_gate" for "__replace__" of "AcceptedKernel"  [call-arg]'
    )
    assert chained_run["replace313.py"] == [
        gate,
        route.format(line=7),
        route.format(line=8),
        missing_gate.format(line=8),
        route.format(line=9),
        missing_gate.format(line=9),
    ]


def test_dunder_replace_through_a_module_level_alias_is_reported(chained_run: dict[str, list[str]]) -> None:
    """review101 F1: a module-level alias of ``__replace__``, bound to a sealed value or taken from the
    class, is reported as the call it stands for."""
    route = (
        '{line}: error: AcceptedKernel.__replace__() of sealed type "AcceptedKernel" outside its gate '
        "(allowed only in: torchlean.backend.acceptance.accept; caller: module replace313_alias)  "
        "[torchlean-sealed]"
    )
    sealed = [line for line in chained_run["replace313_alias.py"] if line.endswith("[torchlean-sealed]")]
    assert sealed == [route.format(line=7), route.format(line=9)]


def test_dunder_replace_through_a_bounded_type_variable_is_reported(
    chained_run: dict[str, list[str]],
) -> None:
    """review189 F2: a receiver typed by a TypeVar bounded by a sealed class has no method full name
    (mypy names the callee ``__replace__ of AcceptedKernel``); it was not reported."""
    assert chained_run["replace313_typevar.py"] == [
        '5: error: AcceptedKernel.__replace__() of sealed type "AcceptedKernel" outside its gate (allowed '
        "only in: torchlean.backend.acceptance.accept; caller: replace313_typevar.changed)  "
        "[torchlean-sealed]",
        '5: error: Missing named argument "_gate" for "__replace__" of "AcceptedKernel"  [call-arg]',
    ]


FREE_NEW = """\
from typing import Any


def shared_new(*args: Any) -> Any:
    return object.__new__(args[0])


class Registry:
    __new__ = shared_new  # type: ignore[assignment]


class Plugins:
    registry: Registry


plugins = Plugins()
new = plugins.registry.__new__
new()
"""


def test_an_alias_of_a_new_defined_outside_a_class_is_checked_without_a_crash(workdir: Path) -> None:
    """review189 F1: the alias's ``__new__`` is a function defined outside a class, whose owner mypy
    records as a placeholder class that raises when read: mypy stopped with an INTERNAL ERROR, in
    any module (torchlean not imported)."""
    assert _strict_mypy_errors(workdir, "free_new", FREE_NEW) == []


def _readme_python_block(index: int, title: str = "Python") -> str:
    """The documentation's code block number ``index`` of section ``title`` (as
    test_docs_python.py reads them)."""
    return python_blocks(title)[index]


def _strict_mypy_errors(workdir: Path, name: str, source_text: str) -> list[str]:
    """mypy's errors (strict, with the plugin) for ``source_text`` checked as ``name``.py."""
    folder = workdir / name
    folder.mkdir()
    source = folder / f"{name}.py"
    source.write_text(source_text)
    actual, stray = run_mypy([source], folder)
    assert stray == []
    return [r.render() for r in sorted(actual)]


def test_readme_training_loop_passes_strict_mypy_with_the_plugin(workdir: Path) -> None:
    """docs/python.md's "A loop of your own" block (with the imports
    tests/training/test_docs_python.py prepends) is clean under strict mypy with the plugin."""
    loop = _readme_python_block(1)
    assert "loss.backward()" in loop
    prelude = "import numpy as np\nimport torchlean as tl\nfrom torchlean import optim\n\n"
    assert _strict_mypy_errors(workdir, "readme_loop", prelude + loop) == []


def test_readme_model_loop_passes_strict_mypy_with_the_plugin(workdir: Path) -> None:
    """docs/python.md's loop around a built model (with the imports test_docs_python.py prepends)
    is clean under strict mypy with the plugin."""
    loop = _readme_python_block(2)
    assert "model.load_tensors(params)" in loop
    prelude = "import numpy as np\nimport torchlean as tl\nfrom torchlean import nn, optim\n\n"
    assert _strict_mypy_errors(workdir, "readme_model_loop", prelude + loop) == []


def test_readme_profile_of_your_own_passes_strict_mypy_with_the_plugin(workdir: Path) -> None:
    """docs/python.md's "Profiles of your own" block (with the imports test_docs_python.py
    prepends) is clean under strict mypy with the plugin: it spells devices, providers and the
    assurance as members."""
    block = _readme_python_block(4)
    assert "BackendProfile(" in block
    prelude = "import numpy as np\nimport torchlean as tl\n\n"
    assert _strict_mypy_errors(workdir, "readme_profile", prelude + block) == []


def test_readme_saving_block_passes_strict_mypy_with_the_plugin(workdir: Path) -> None:
    """The README's "Saving and predicting" save block is clean under strict mypy with the plugin:
    the checkpoint takes the profile's name (``checkpoint.profile_name``, which refuses a profile
    of your own) and the execution mode's label (it passed the objects, which run but are not the
    declared ``str``). The load block calls numpy methods, which this
    harness types as unknown (numpy is skipped here for speed)."""
    save = _readme_python_block(0, "Saving and predicting")
    assert "checkpoint.save(" in save
    assert _strict_mypy_errors(workdir, "readme_saving", save) == []


@pytest.mark.parametrize(
    ("version", "refused"), [("1.20.2", True), ("1.15.0+dev.abc", True), ("2.0.0", False)]
)
def test_the_plugin_refuses_mypy_1_naming_the_version_it_needs(version: str, refused: bool) -> None:
    """review80 F2: mypy 1.x loaded the plugin and then stopped with an INTERNAL ERROR at the first
    sealed route, blaming mypy. Importing the plugin under an older mypy now raises the ImportError
    that mypy prints as one line at the config's ``plugins`` entry (mypy/build.py's
    'Error importing plugin'). The version is patched in a fresh interpreter."""
    code = (
        "import mypy.version\n"
        f"mypy.version.__version__ = {version!r}\n"
        "try:\n"
        "    import torchlean.mypy_plugin\n"
        "except ImportError as error:\n"
        "    print('refused:', error)\n"
        "else:\n"
        "    print('loaded')\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=120
    )
    if refused:
        assert done.stdout == (
            f"refused: torchlean's mypy plugin needs mypy >= 2.0; this is mypy {version} "
            "(pip install 'mypy>=2.0')\n"
        )
    else:
        assert done.stdout == "loaded\n"


def test_a_dimension_beyond_int64_is_refused_where_mypy_keeps_the_int() -> None:
    """review157 F4, review161 F8: mypy 2.0 keeps ``2**63`` as an int literal (2.4, which the tests
    pin, reads it as having no value), so the marker test cannot see the fix: call the helpers."""
    from mypy.types import RawExpressionType

    from torchlean import mypy_plugin

    failed: list[str] = []
    for value in (2**63, 2**64 + 5):
        kept = RawExpressionType(value, "builtins.int")
        assert mypy_plugin._raw_dimension(kept, None, failed.append, None) is None  # type: ignore[arg-type]
    held = "(not an int literal mypy holds: a float, a complex, an int beyond 2**63 - 1 or an expression)"
    assert failed == [held, held]  # (a dimension mypy holds becomes a Literal: the marker test's Shape[4])
