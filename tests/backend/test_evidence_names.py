"""Evidence names are real (DESIGN.md §1.3): walk every capsule of every module.

* a ``testSuite`` names a test module of this repository that tests the op: pytest collects from
  it (in a subprocess, ``--collect-only``) a test item whose name or parameter id contains the op's
  label as a whole token sequence (tokens split at ``_``, ``-``, ``[``, ``]``, ...), and the match is
  not part of a longer op label (``log`` inside ``safe_log`` or ``log_softmax``, ``max`` inside
  ``max_pool``, ``conv`` inside ``conv_transpose`` do not count). ``missing`` does not test ``sin``
  and ``deterministic`` does not test ``min``. The item must also name the obligation: a word of
  :data:`OBLIGATION_WORDS` (``value``, ``forward``, ``parity`` for a value claim; ``vjp``,
  ``gradients``, ... for a VJP claim), so a suite of refusal tests is no evidence of values;
* a ``runtimeGuard`` names an importable dotted function that is on the capsule's own kernel path:
  the guard's code is reachable from the linked kernel the runtime binds to that capsule (forward,
  VJP, VJP guard), following calls through globals, module attributes, imports inside functions,
  closures and decorators, and attribute names a closure holds as strings (the native dispatcher's
  ``getattr(kernels, "relu_forward")``);
* a ``shape`` or ``layout`` ``runtimeGuard`` must be reachable from the linked *forward* alone: the
  claim is that the guard runs before the kernel, so a guard only the VJP calls (``check_cotangent``
  named as ``reference.matmul``'s shape guard, review66 F1) guards nothing on an inference or
  ``no_grad`` call. On every ``cpu`` capsule the guard is also seen to run (a ``sys.setprofile``
  spy) while :func:`~torchlean.autograd.dispatch.execute_bound` runs the accepted capsule under
  ``no_grad`` on a small valid input (the ``aten`` differential cases of
  ``tests/runtime/aten_cases.py`` and :data:`FORWARD_ONLY_CASES`);
* every provenance path exists and contains its symbol.

A failure names the capsule, the obligation and the missing name.
"""

from __future__ import annotations

import ast
import dis
import functools
import importlib
import importlib.util
import re
import subprocess
import sys
import types
from collections.abc import Callable, Iterable, Iterator
from functools import cache
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import torchlean as tl
from torchlean.autograd.dispatch import bind_linked, execute_bound, linked_kernels, select_linked
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel, accept, acceptance_failures
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.contracts import ContractDescriptor, EvidenceKind
from torchlean.backend.planner import PlannedKernel
from torchlean.backend.providers.linked import LinkedKernel
from torchlean.backend.registry import CapsuleModule, all_modules
from torchlean.backend.vocabulary import BackendOp, ContractObligation, Device

REPO = Path(__file__).resolve().parents[2]
MODULES: tuple[CapsuleModule, ...] = all_modules()
ENTRIES: list[tuple[CapsuleModule, KernelCapsule, ContractObligation, ContractDescriptor]] = [
    (module, capsule, obligation, descriptor)
    for module in MODULES
    for capsule in module.capsules
    for obligation, descriptor in capsule.contracts()
]
IDS = [f"{c.name}@{c.device.label}-{o.label}" for _, c, o, _ in ENTRIES]
SUITES = sorted(
    {d.evidence.name for *_, d in ENTRIES if d.evidence.kind is EvidenceKind.TEST_SUITE and d.evidence.name}
)
NOT_A_SUITE = "tests/data/test_data.py"
"""A test module of this repository that tests no op (the negative control of the suite rule)."""

# Known honesty defects of the shipped catalog, reported to the lead: the evidence names a guard that
# the capsule's kernel never calls. Strict: the entry fails the walk as soon as it is fixed.
KNOWN_UNCALLED_GUARDS: dict[str, str] = {}  # capsule@module-obligation -> why (none today)

# ----------------------------------------------------------------------------------- suites

_LABEL_TOKENS = {op.label: tuple(op.label.split("_")) for op in BackendOp}


def ops_named_in(text: str) -> frozenset[str]:
    """Op labels that occur in ``text`` as whole token sequences not inside a longer op label."""
    tokens = [token for token in re.split(r"[^0-9A-Za-z]+", text) if token]
    spans = [
        (start, start + len(label_tokens), label)
        for label, label_tokens in _LABEL_TOKENS.items()
        for start in range(len(tokens) - len(label_tokens) + 1)
        if tuple(tokens[start : start + len(label_tokens)]) == label_tokens
    ]
    return frozenset(
        label
        for start, stop, label in spans
        if not any(s <= start and stop <= e and e - s > stop - start for s, e, _ in spans)
    )


@cache
def _collected() -> dict[str, tuple[str, ...]]:
    """Test item ids (``test_name[params]``) pytest collects from each suite and the control."""
    paths = [*SUITES, NOT_A_SUITE]
    result = subprocess.run(
        [sys.executable, "-m", "pytest", "--collect-only", "-q", "-o", "addopts=", "-p", "no:cacheprovider",
         *paths],
        cwd=REPO, capture_output=True, text=True, check=False,
    )  # fmt: skip
    if result.returncode != 0:
        output = f"{result.stdout[-4000:]}\n{result.stderr[-4000:]}"
        pytest.fail(f"collecting the named test suites failed:\n{output}")
    items: dict[str, list[str]] = {path: [] for path in paths}
    for line in result.stdout.splitlines():
        path, sep, item = line.strip().partition("::")
        if sep and path in items:
            items[path].append(item)
    return {path: tuple(ids) for path, ids in items.items()}


OBLIGATION_WORDS: dict[ContractObligation, frozenset[str]] = {
    ContractObligation.VALUE: frozenset({"value", "values", "forward", "parity"}),
    ContractObligation.VJP: frozenset(
        {"vjp", "grad", "grads", "gradient", "gradients", "backward", "parity", "autograd"}
    ),
}
"""Words (whole tokens of a test item id) that make an item that names an op a test of that
obligation: a value test compares values (``test_relu_value_matches_torch``,
``test_native_parity_emulated[relu-float32]``, which checks both), a VJP test gradients
(``test_vjp_matches_torch_autograd_in_float64[relu]``); a refusal test
(``test_cpu_build_of_torch_fails_before_launch_with_a_clear_message[relu]``) is neither."""


def item_tests(item: str, label: str, obligation: ContractObligation | None = None) -> bool:
    """Whether the test item id ``item`` names ``label`` (:func:`ops_named_in`) and, for an
    obligation of :data:`OBLIGATION_WORDS`, holds one of its words as a token."""
    if label not in ops_named_in(item):
        return False
    words = OBLIGATION_WORDS.get(obligation) if obligation is not None else None
    return words is None or not words.isdisjoint(re.split(r"[^a-z0-9]+", item.lower()))


def suite_tests_op(suite: str, label: str, obligation: ContractObligation | None = None) -> bool:
    """Whether some test item collected from ``suite`` tests ``label`` (:func:`item_tests`)."""
    return any(item_tests(item, label, obligation) for item in _collected()[suite])


# ----------------------------------------------------------------------------------- guards


def _functions_of(value: object) -> list[types.FunctionType]:
    """The torchlean Python functions behind a value (unwrapping partials and bound methods)."""
    if isinstance(value, functools.partial):
        return _functions_of(value.func)
    if isinstance(value, types.MethodType):
        value = value.__func__
    if isinstance(value, types.FunctionType) and (value.__module__ or "").startswith("torchlean"):
        return [value]
    return []


def _cells(function: types.FunctionType) -> dict[str, object]:
    contents: dict[str, object] = {}
    for name, cell in zip(function.__code__.co_freevars, function.__closure__ or (), strict=True):
        try:
            contents[name] = cell.cell_contents
        except ValueError:  # an empty cell
            continue
    return contents


def _nested_codes(code: types.CodeType) -> Iterator[types.CodeType]:
    yield code
    for constant in code.co_consts:
        if isinstance(constant, types.CodeType):
            yield from _nested_codes(constant)


def _import(name: str) -> types.ModuleType | None:
    return importlib.import_module(name) if name.startswith("torchlean") else None


def _references(code: types.CodeType, namespace: dict[str, object], cells: dict[str, object]) -> list[object]:
    """What ``code`` loads: globals, closure variables, attributes of the modules it holds, imports."""
    found: list[object] = []
    held: object = None  # the value the previous instruction pushed, when it is known
    imported: types.ModuleType | None = None
    locals_: dict[str, object] = {}
    for instruction in dis.get_instructions(code):
        name, arg = instruction.opname, instruction.argval
        if name in ("LOAD_GLOBAL", "LOAD_NAME"):
            held = namespace.get(arg)
        elif name in ("LOAD_DEREF", "LOAD_CLOSURE"):
            held = cells.get(arg)
        elif name == "LOAD_FAST":
            held = locals_.get(arg)
        elif name in ("LOAD_ATTR", "LOAD_METHOD"):
            held = getattr(held, arg, None) if isinstance(held, types.ModuleType) else None
        elif name == "IMPORT_NAME":
            held = imported = _import(arg)
        elif name == "IMPORT_FROM":
            held = None
            if imported is not None:
                held = getattr(imported, arg, None) or _import(f"{imported.__name__}.{arg}")
        elif name in ("STORE_FAST", "STORE_NAME") and held is not None:
            locals_[arg] = held
            held = None
            continue
        else:
            held = None
        if held is not None:
            found.append(held)
    return found


def reachable_code(roots: Iterable[object]) -> frozenset[types.CodeType]:
    """Code objects of every torchlean function reachable from ``roots`` (see the module docstring).

    Strings held in closures (``_forward(op, "relu_forward")``) are resolved, after the walk, as
    attributes of every torchlean module the walk reached, until nothing new is found.
    """
    seen: set[types.FunctionType] = set()
    modules: set[types.ModuleType] = set()
    strings: set[str] = set()
    stack = [function for root in roots for function in _functions_of(root)]
    while stack:
        while stack:
            function = stack.pop()
            if function in seen:
                continue
            seen.add(function)
            cells = _cells(function)
            for value in cells.values():
                if isinstance(value, str):
                    strings.add(value)
                stack.extend(_functions_of(value))
            for code in _nested_codes(function.__code__):
                for value in _references(code, function.__globals__, cells):
                    if isinstance(value, types.ModuleType) and value.__name__.startswith("torchlean"):
                        modules.add(value)
                    stack.extend(_functions_of(value))
        for module in list(modules):
            for text in strings:
                stack.extend(f for f in _functions_of(getattr(module, text, None)) if f not in seen)
    return frozenset(function.__code__ for function in seen)


def linked_kernel(capsule: KernelCapsule) -> LinkedKernel:
    """The linked implementation the runtime binds to ``capsule`` (same op, provider, device)."""
    return select_linked(capsule.op, capsule, linked_kernels(capsule.op))


@cache
def _path_code(capsule: KernelCapsule) -> frozenset[types.CodeType]:
    kernel = linked_kernel(capsule)
    return reachable_code((kernel.forward, kernel.vjp, kernel.vjp_guard, kernel.vjp_needs))


def guard_on_path(guard: object, capsule: KernelCapsule) -> bool:
    """Whether ``guard`` (a function) is reachable from the linked kernel of ``capsule``."""
    return any(function.__code__ in _path_code(capsule) for function in _functions_of(guard))


FORWARD_OBLIGATIONS = frozenset({ContractObligation.SHAPE, ContractObligation.LAYOUT})
"""Obligations whose ``runtimeGuard`` must run on the forward call itself (not only in the VJP)."""


@cache
def _forward_code(capsule: KernelCapsule) -> frozenset[types.CodeType]:
    return reachable_code((linked_kernel(capsule).forward,))


def guard_on_forward_path(guard: object, capsule: KernelCapsule) -> bool:
    """Whether ``guard`` is reachable from the linked *forward* of ``capsule`` alone (no VJP)."""
    return any(function.__code__ in _forward_code(capsule) for function in _functions_of(guard))


def _resolve(dotted: str) -> object:
    module_name, _, function = dotted.rpartition(".")
    return getattr(importlib.import_module(module_name), function, None)


# ------------------------------------------------------------------------------------- walk


def test_every_module_is_walked() -> None:
    assert [m.name for m in MODULES] == ["attention", "native-cuda", "reference", "libtorch", "aten"]
    assert len(ENTRIES) == 4 * (95 + 40)


@cache
def suite_subjects(suite: str) -> tuple[str, ...]:
    """The provider labels a test module declares it tests (its module-level ``SUBJECT_PROVIDERS``
    tuple, read without importing it); ``()`` when it declares none."""
    tree = ast.parse((REPO / suite).read_text())
    for node in tree.body:
        if (isinstance(node, ast.Assign) and len(node.targets) == 1
                and isinstance(node.targets[0], ast.Name) and node.targets[0].id == "SUBJECT_PROVIDERS"):
            value = ast.literal_eval(node.value)
            assert isinstance(value, tuple) and all(isinstance(label, str) for label in value), suite
            return value
    return ()


def test_a_suite_that_uses_a_provider_as_its_oracle_is_no_evidence_of_it() -> None:
    """review148 F4: the aten differential suite names reference ops in its items (the reference
    is its oracle) and passed the name rule as evidence of the reference's values; its declared
    subject is aten. A module that declares nothing (the negative control) has no subject."""
    assert suite_tests_op("tests/runtime/test_aten_differential.py", "matmul", ContractObligation.VALUE)
    assert suite_subjects("tests/runtime/test_aten_differential.py") == ("aten",)
    assert suite_subjects("tests/runtime/test_reference_values.py") == ("reference",)
    assert suite_subjects(NOT_A_SUITE) == ()
    assert all(suite_subjects(suite) for suite in SUITES)


@pytest.mark.parametrize(
    ("module", "capsule", "obligation", "descriptor"),
    [
        pytest.param(*entry, marks=pytest.mark.xfail(strict=True, reason=KNOWN_UNCALLED_GUARDS[i]))
        if i in KNOWN_UNCALLED_GUARDS
        else entry
        for i, entry in zip(IDS, ENTRIES, strict=True)
    ],
    ids=IDS,
)
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
            assert suite_tests_op(evidence.name, capsule.op.label, obligation), (
                f"{where}: {evidence.name} has no {obligation.label} test of {capsule.op.label}"
            )
            subjects = suite_subjects(evidence.name)
            assert capsule.provider.label in subjects, (  # review148 F4: not a suite using it as oracle
                f"{where}: {evidence.name} tests the capsules of {' | '.join(subjects) or 'no provider'} "
                f"(its SUBJECT_PROVIDERS), not {capsule.provider.label}'s"
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
            assert guard_on_path(guard, capsule), (
                f"{where}: guard {evidence.name} is never called on the path of "
                f"{linked_kernel(capsule).label}"
            )
            if obligation in FORWARD_OBLIGATIONS:
                assert guard_on_forward_path(guard, capsule), (
                    f"{where}: guard {evidence.name} is reachable only from the VJP of "
                    f"{linked_kernel(capsule).label}, not from its forward: a {obligation.label} "
                    "guard must run before the forward kernel"
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


# ------------------------------------------------------- shape and layout guards run on a forward

FORWARD_GUARDS = [
    entry
    for entry in ENTRIES
    if entry[3].evidence.kind is EvidenceKind.RUNTIME_GUARD and entry[2] in FORWARD_OBLIGATIONS
]
CPU_FORWARD_GUARDS = [entry for entry in FORWARD_GUARDS if entry[1].device is Device.CPU]
CPU_FORWARD_IDS = [f"{c.name}@{c.device.label}-{o.label}" for _, c, o, _ in CPU_FORWARD_GUARDS]


def _aten_cases() -> types.ModuleType:
    """``tests/runtime/aten_cases.py`` (the aten differential cases), imported by its path."""
    if "aten_cases" not in sys.modules:
        spec = importlib.util.spec_from_file_location("aten_cases", REPO / "tests/runtime/aten_cases.py")
        assert spec is not None and spec.loader is not None
        module = importlib.util.module_from_spec(spec)
        sys.modules["aten_cases"] = module
        spec.loader.exec_module(module)
    return sys.modules["aten_cases"]


def _f32(rng: np.random.Generator, *shape: int) -> np.ndarray[Any, Any]:
    return rng.standard_normal(shape).astype(np.float32)


Case = tuple[tuple["np.ndarray[Any, Any] | None", ...], dict[str, Any]]
FORWARD_ONLY_CASES: dict[BackendOp, Callable[[np.random.Generator], Case]] = {
    BackendOp.HARD_MASKED_SOFTMAX: lambda r: (
        (_f32(r, 2, 4), np.array([[True, False, True, True], [False, False, False, False]])),
        {"axis": -1},
    ),
    BackendOp.SCATTER_ADD: lambda r: (
        (_f32(r, 4, 3), np.array([[0, 3, 1], [0, 0, 2]], dtype=np.int64), _f32(r, 2, 3)),
        {"axis": 0},
    ),
    BackendOp.RAND_UNIFORM: lambda r: (
        (),
        {"shape": (2, 3), "seed": 5, "counter": 0, "dtype": np.dtype("float32")},
    ),
    BackendOp.BERNOULLI_MASK: lambda r: (
        (),
        {"shape": (2, 3), "keep_prob": 0.5, "seed": 5, "counter": 0, "dtype": np.dtype("float32")},
    ),
    BackendOp.SMOOTH_MAX_POOL: lambda r: (
        (_f32(r, 2, 3, 9),),
        {"beta": 2.0, "kernel_size": 3, "stride": 2, "padding": 1},
    ),
}
"""Small valid float32 inputs for the ``cpu`` ops that ``aten_cases`` has no case of."""


def _forward_case(op: BackendOp) -> Case:
    rng = np.random.default_rng(66)
    if op in FORWARD_ONLY_CASES:
        return FORWARD_ONLY_CASES[op](rng)
    build = next(build for _, case_op, build in _aten_cases().CASES if case_op is op)
    inputs, params = build(rng, np.float32)
    return tuple(inputs), dict(params)


def _accepted(capsule: KernelCapsule) -> AcceptedKernel:
    """``capsule`` accepted under the first built-in profile whose policy accepts it."""
    planned = PlannedKernel(capsule.op, capsule)
    for name in profiles.names():
        policy = profiles.get(name).policy
        if not acceptance_failures(planned, policy):
            return accept(planned, policy)
    raise AssertionError(f"no built-in profile accepts {capsule.name} ({capsule.device.label})")


def codes_run_by_a_no_grad_forward(capsule: KernelCapsule) -> set[types.CodeType]:
    """Code objects of every Python function called while the dispatcher runs ``capsule`` (accepted
    and bound as a session binds it) under ``no_grad`` on :func:`_forward_case`'s inputs, the float
    ones marked ``requires_grad``: the forward call of an inference step, with no VJP run."""
    inputs, params = _forward_case(capsule.op)
    bound = bind_linked(_accepted(capsule), linked_kernel(capsule))
    tensors = [None if a is None else tl.tensor(a, requires_grad=a.dtype.kind == "f") for a in inputs]
    called: set[types.CodeType] = set()

    def spy(frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call":
            called.add(frame.f_code)

    previous = sys.getprofile()
    with tl.no_grad():
        sys.setprofile(spy)
        try:
            out = execute_bound(bound, tensors, params)
        finally:
            sys.setprofile(previous)
    assert out.grad_fn is None and not out.requires_grad, "a no_grad forward recorded a tape node"
    return called


def test_every_shape_and_layout_guard_is_walked() -> None:
    """270 shape/layout ``runtimeGuard`` entries (review66 F1): all are checked from the forward
    alone by :func:`test_evidence_name_is_real`; the 172 of ``cpu`` capsules are also run."""
    assert len(FORWARD_GUARDS) == 270
    assert len(CPU_FORWARD_GUARDS) == 172
    assert {c.device for _, c, _, _ in FORWARD_GUARDS if c.device is not Device.CPU} == {Device.CUDA}


@pytest.mark.parametrize(
    ("module", "capsule", "obligation", "descriptor"), CPU_FORWARD_GUARDS, ids=CPU_FORWARD_IDS
)
def test_shape_and_layout_guards_run_on_a_no_grad_forward(
    module: CapsuleModule,
    capsule: KernelCapsule,
    obligation: ContractObligation,
    descriptor: ContractDescriptor,
) -> None:
    """The guard named as shape or layout evidence is called by the forward of a ``no_grad`` call
    (review66 F1: ``check_cotangent``, which only the matmul VJP calls, passed as matmul's guard)."""
    name = descriptor.evidence.name
    assert name is not None
    guard = _resolve(name)
    assert callable(guard), f"{module.name}: guard {name} does not exist"
    called = codes_run_by_a_no_grad_forward(capsule)
    assert any(function.__code__ in called for function in _functions_of(guard)), (
        f"{module.name}: {capsule.name} ({capsule.device.label}) {obligation.label}: guard {name} "
        f"did not run on a no_grad forward call of {linked_kernel(capsule).label}"
    )


# ------------------------------------------------------------------------ the rules themselves


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("test_csv_missing_file", set()),  # "sin" inside "missing"
        ("test_split_is_deterministic_by_seed_and_a_partition", set()),  # "min" inside "deterministic"
        ("test_values[safe_log-float32]", {"safe_log"}),  # not "log"
        ("test_vjp[log_softmax-axis1]", {"log_softmax"}),  # neither "log" nor "softmax"
        ("test_smooth_max_pool_is_stable", {"smooth_max_pool"}),  # not "max_pool", not "max"
        ("test_conv_transpose_matches_torch[conv-1d]", {"conv_transpose", "conv"}),
        ("test_native_parity_emulated[min-float64]", {"min"}),
        ("test_native_parity_emulated[min-broadcast-float64]", {"min", "broadcast"}),
        ("test_relu_and_gelu", {"relu", "gelu"}),
        ("test_values[scaled_dot_product_attention]", {"scaled_dot_product_attention"}),
    ],
)
def test_ops_are_named_by_whole_token_sequences(text: str, expected: set[str]) -> None:
    assert ops_named_in(text) == expected


def _replaced_suite_rule(text: str, label: str) -> bool:
    """The rule this walk replaced: the label is a substring of a test name or quoted anywhere."""
    names = re.findall(r"^\s*def (test_\w+)", text, re.MULTILINE)
    quoted = re.search(rf"[\"']{re.escape(label)}[\"']", text)
    return any(label in name for name in names) or quoted is not None


@pytest.mark.parametrize("label", ["sin", "min"])
def test_a_module_that_tests_no_op_is_not_a_suite_of_it(label: str) -> None:
    """The reviewer's counterexamples: ``tests/data/test_data.py`` "tested" ``sin`` (in "missing")
    and ``min`` (in "deterministic") under the replaced rule."""
    assert _replaced_suite_rule((REPO / NOT_A_SUITE).read_text(), label)
    assert _collected()[NOT_A_SUITE], "the control module collects tests"
    assert not suite_tests_op(NOT_A_SUITE, label)


def test_a_module_that_tests_no_op_is_a_suite_of_none() -> None:
    assert [op.label for op in BackendOp if suite_tests_op(NOT_A_SUITE, op.label)] == []


@pytest.mark.parametrize(
    ("item", "value", "vjp"),
    [
        ("test_relu_value_matches_torch", True, False),
        ("test_vjp_matches_torch_autograd_in_float64[relu-float32]", False, True),
        ("test_forward_matches_reference[relu]", True, False),
        ("test_native_parity_emulated[relu-vector-float64]", True, True),
        ("test_relu_gradients_at_zero", False, True),
        ("test_cpu_build_of_torch_fails_before_launch_with_a_clear_message[relu]", False, False),
        ("test_relu_refuses_an_integer_input", False, False),
    ],
)
def test_only_value_and_vjp_tests_are_evidence_of_those_obligations(
    item: str, value: bool, vjp: bool
) -> None:
    """A refusal test names the op but checks no value or gradient: evidence of neither."""
    assert item_tests(item, "relu")
    assert not item_tests(item.replace("relu", "gelu"), "relu", ContractObligation.VALUE)
    assert item_tests(item, "relu", ContractObligation.VALUE) is value
    assert item_tests(item, "relu", ContractObligation.VJP) is vjp


def test_the_catalogs_suites_are_accepted_for_their_ops() -> None:
    assert suite_tests_op("tests/runtime/test_reference_values.py", "sin")
    assert suite_tests_op("tests/runtime/test_reference_gradients.py", "min")
    assert not suite_tests_op("tests/runtime/test_reference_spatial.py", "sin")


def _reference(op: BackendOp) -> KernelCapsule:
    return next(c for c in all_modules()[2].capsules if c.op is op)


def _replaced_guard_rule(function: str) -> bool:
    """The rule this walk replaced: the name appears in some module of the provider's package."""
    use = re.compile(rf"(?<!def )(?<![\"'`])\b{re.escape(function)}\b(?![\"'`])")
    package = REPO / "torchlean/backend/providers/reference"
    return any(use.search(path.read_text()) for path in package.glob("*.py"))


def test_a_guard_of_another_op_is_not_on_the_path() -> None:
    """The replaced rule accepted any guard named anywhere in the provider's code: ``check_sin`` as
    the shape guard of ``reference.relu``. Only the relu kernel's own call graph counts now (the
    seeded sources, which have no array input, check the layout of the array they produce)."""
    from torchlean.backend.providers.reference import guards

    assert _replaced_guard_rule("check_sin")
    relu = _reference(BackendOp.RELU)
    assert guard_on_path(guards.check_relu, relu)
    assert guard_on_path(guards.check_canonical_layout, relu)
    assert not guard_on_path(guards.check_sin, relu)
    assert not guard_on_path(guards.check_matmul, relu)
    assert guard_on_path(guards.check_sin, _reference(BackendOp.SIN))
    assert guard_on_path(guards.check_canonical_layout, _reference(BackendOp.RAND_UNIFORM))
    assert not guard_on_path(guards.check_softmax, _reference(BackendOp.RAND_UNIFORM))


def test_a_guard_is_followed_through_the_native_dispatch_by_name() -> None:
    """``native_cuda.relu`` runs ``getattr(kernels, "relu_forward")``: the walk reaches
    ``relu_forward`` and so ``check_launch``, but not a guard only other kernels call."""
    from torchlean.backend.providers.native_cuda import guards as native_guards
    from torchlean.backend.providers.native_cuda import kernels as native_kernels

    relu = next(c for c in all_modules()[1].capsules if c.op is BackendOp.RELU)
    assert native_kernels.relu_forward.__code__ in _path_code(relu)
    assert native_kernels.exp_forward.__code__ not in _path_code(relu)
    assert guard_on_path(native_guards.check_launch, relu)


def test_a_guard_only_the_vjp_calls_is_not_on_the_forward_path() -> None:
    """review66 F1 (mutants C05b, C06b): ``check_cotangent`` is on ``reference.matmul``'s path
    (its VJP calls it) but neither reachable from nor run by its forward, so it is no shape or
    layout evidence; the op's own guards are both."""
    from torchlean.backend.providers.reference import guards

    matmul = _reference(BackendOp.MATMUL)
    assert guard_on_path(guards.check_cotangent, matmul)
    assert not guard_on_forward_path(guards.check_cotangent, matmul)
    called = codes_run_by_a_no_grad_forward(matmul)
    assert guards.check_cotangent.__code__ not in called
    for guard in (guards.check_matmul, guards.check_canonical_layout):
        assert guard_on_forward_path(guard, matmul)
        assert guard.__code__ in called


def test_a_libtorch_vjp_guard_is_on_the_path() -> None:
    """``require_torchlean_tape`` is the linked kernel's VJP guard (the dispatcher runs it)."""
    from torchlean.backend.providers.libtorch import sdpa

    capsule = all_modules()[3].capsules[0]
    assert guard_on_path(sdpa.require_torchlean_tape, capsule)
    assert guard_on_path(sdpa.check_sdpa_inputs, capsule)
    assert not guard_on_path(_resolve("torchlean.backend.providers.reference.guards.check_relu"), capsule)
