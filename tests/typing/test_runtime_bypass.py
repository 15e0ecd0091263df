"""The runtime half of sealed acceptance: every route mypy cannot see is refused when it is used.

mypy (with torchlean.mypy_plugin) reports construction, ``__new__``, copy and replace outside the
gates (tests/typing/test_mypy_examples.py). Values typed ``Any``, ``cast`` forgeries, pickled
payloads, ``getattr`` tricks and field mutation after minting are invisible to it; here each one
is shown to be refused by the mint check at the consuming API (``bind``, ``ExecutableKernel.run``,
``audit()``), an ``UnmintedError`` naming the gate, the same with or without ``python -O``, or by
``TypeError`` at the source (copy, pickle).

Source: DESIGN.md §1.4; reference/typing-notes.md §2.1 (the forgery table).
"""

from __future__ import annotations

import copy
import dataclasses
import importlib
import pickle
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace
from typing import Any, cast

import pytest
from beartype.roar import BeartypeCallHintViolation

from torchlean.backend import acceptance, profiles, sealed
from torchlean.backend.acceptance import AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.planner import PlannedKernel
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.vocabulary import BackendOp, Device


def capsule_name(capsule: KernelCapsule) -> str:
    return capsule.name


@pytest.fixture
def planned() -> PlannedKernel:
    return profiles.get("checked_cpu").plan_ops([BackendOp.RELU]).kernels[0]


@pytest.fixture
def policy() -> KernelPolicy:
    return profiles.get("checked_cpu").policy


@pytest.fixture
def kernel(planned: PlannedKernel, policy: KernelPolicy) -> AcceptedKernel:
    return accept(planned, policy)


@pytest.fixture
def handler(planned: PlannedKernel) -> KernelHandler[str]:
    capsule = planned.capsule
    return KernelHandler("relu-name", capsule.op, capsule.provider, capsule.device, capsule_name)


BIND_REFUSAL = (
    "bind: AcceptedKernel was not minted by its gate (torchlean.backend.acceptance.accept) "
    "or was changed since"
)
RUN_REFUSAL = (
    "ExecutableKernel.run: ExecutableKernel was not minted by its gate (torchlean.backend.binding.bind) "
    "or was changed since"
)


def refused_by_validator(
    error: pytest.ExceptionInfo[sealed.UnmintedError], expected: str = BIND_REFUSAL
) -> bool:
    """The refusal is the mint check's, word for word (not some unrelated type error)."""
    return str(error.value) == expected


def test_genuine_path_runs(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    """Control: the gate's own values pass every check (so the refusals below are meaningful)."""
    assert sealed.is_minted(kernel)
    assert bind(kernel, handler).run() == "reference.relu"


def test_any_typed_construction_is_refused(
    planned: PlannedKernel, policy: KernelPolicy, handler: KernelHandler[str]
) -> None:
    """Through an ``Any`` alias (even with the private gate token) the object builds, but is not minted."""
    anything: Any = AcceptedKernel
    forged = anything(planned.op, planned.capsule, policy, _gate=sealed._GATE)
    assert not sealed.is_minted(forged)
    with pytest.raises(sealed.UnmintedError) as error:
        bind(forged, handler)
    assert refused_by_validator(error)


def test_any_typed_construction_without_token_fails_at_once(
    planned: PlannedKernel, policy: KernelPolicy
) -> None:
    anything: Any = AcceptedKernel
    with pytest.raises(TypeError, match="_gate"):
        anything(planned.op, planned.capsule, policy)


def test_callable_variable_construction_is_refused(
    planned: PlannedKernel, policy: KernelPolicy, handler: KernelHandler[str]
) -> None:
    """A ``Callable[..., AcceptedKernel]`` variable hides the class from the plugin."""
    make: Callable[..., AcceptedKernel] = AcceptedKernel
    forged = make(planned.op, planned.capsule, policy, _gate=sealed._GATE)
    with pytest.raises(sealed.UnmintedError) as error:
        bind(forged, handler)
    assert refused_by_validator(error)


def _class_from_sys_modules() -> Any:
    return sys.modules["torchlean.backend.acceptance"].AcceptedKernel


def _class_from_import_module() -> Any:
    return importlib.import_module("torchlean.backend.acceptance").AcceptedKernel


def _class_from_vars() -> Any:
    return vars(acceptance)["AcceptedKernel"]


def _class_from_module_dict() -> Any:
    return acceptance.__dict__["AcceptedKernel"]


@pytest.mark.parametrize(
    "lookup",
    [_class_from_sys_modules, _class_from_import_module, _class_from_vars, _class_from_module_dict],
    ids=["sys.modules", "importlib.import_module", "vars(mod)", "mod.__dict__"],
)
def test_class_looked_up_through_the_module_is_refused_at_bind(
    lookup: Callable[[], Any], planned: PlannedKernel, policy: KernelPolicy, handler: KernelHandler[str]
) -> None:
    """README "What stays runtime-only": the class reached through ``sys.modules[...]``,
    ``importlib.import_module(...)``, ``vars(mod)[...]`` or ``mod.__dict__[...]`` is ``Any`` to mypy
    (tests/typing/test_mypy_examples.py); what it builds is not minted, and ``bind`` refuses it."""
    cls = lookup()
    assert cls is AcceptedKernel  # the real class: the refusal below is not about a look-alike
    forged = cls(planned.op, planned.capsule, policy, _gate=sealed._GATE)
    assert not sealed.is_minted(forged)
    with pytest.raises(sealed.UnmintedError) as error:
        bind(forged, handler)
    assert refused_by_validator(error)


def test_cast_forgery_is_refused(
    planned: PlannedKernel, policy: KernelPolicy, handler: KernelHandler[str]
) -> None:
    """A duck-typed stand-in ``cast`` to the sealed type has every field and no minting."""
    duck = cast(AcceptedKernel, SimpleNamespace(op=planned.op, capsule=planned.capsule, policy=policy))
    with pytest.raises(BeartypeCallHintViolation) as error:
        bind(duck, handler)
    assert "AcceptedKernel" in str(error.value)


def test_pickle_is_refused_at_the_source(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(kernel)
    with pytest.raises(TypeError, match="cannot be pickled"):
        pickle.dumps(bind(kernel, handler))


def test_object_new_through_getattr_is_refused(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    """``getattr(object, "__new__")`` is ``Any`` to mypy; filling the fields does not mint it."""
    new = getattr(object, "__new__")  # noqa: B009 - the point is that mypy sees Any here
    forged = new(AcceptedKernel)
    for field in dataclasses.fields(AcceptedKernel):
        object.__setattr__(forged, field.name, getattr(kernel, field.name))
    with pytest.raises(sealed.UnmintedError) as error:
        bind(forged, handler)
    assert refused_by_validator(error)


def test_object_new_through_super_is_refused(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    """``super(C, C).__new__`` is ``object.__new__``: the plugin reports it, and at run time the
    allocated value is never minted, whatever fields it is given."""
    forged = super(AcceptedKernel, AcceptedKernel).__new__(AcceptedKernel)  # type: ignore[torchlean-sealed]
    for field in dataclasses.fields(AcceptedKernel):
        object.__setattr__(forged, field.name, getattr(kernel, field.name))
    assert not sealed.is_minted(forged)
    with pytest.raises(sealed.UnmintedError) as error:
        bind(forged, handler)
    assert refused_by_validator(error)


def test_mutation_after_minting_is_refused(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    """Rebinding a field of a minted kernel (frozen dataclass bypassed) breaks its fingerprint."""
    widened = dataclasses.replace(kernel.policy, device=Device.CUDA)
    object.__setattr__(kernel, "policy", widened)
    assert not sealed.is_minted(kernel)
    with pytest.raises(sealed.UnmintedError) as error:
        bind(kernel, handler)
    assert refused_by_validator(error)


def test_reinit_after_minting_is_refused(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    """Re-running ``__init__`` (reached through ``Any``) rewrites the fields of a minted value."""
    widened = dataclasses.replace(kernel.policy, device=Device.CUDA)
    init: Any = AcceptedKernel.__init__
    init(kernel, kernel.op, kernel.capsule, widened, _gate=sealed._GATE)
    assert kernel.policy is widened
    with pytest.raises(sealed.UnmintedError) as error:
        bind(kernel, handler)
    assert refused_by_validator(error)


def test_mutation_of_executable_is_refused(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    executable = bind(kernel, handler)
    swapped = KernelHandler("other", handler.op, handler.provider, handler.device, lambda capsule: "swapped")
    object.__setattr__(executable, "handler", swapped)
    with pytest.raises(sealed.UnmintedError) as error:
        executable.run()
    assert refused_by_validator(error, RUN_REFUSAL)


def test_forged_executable_is_refused(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    anything: Any = ExecutableKernel
    forged = anything(kernel, handler, _gate=sealed._GATE)
    with pytest.raises(sealed.UnmintedError) as error:
        forged.run()
    assert refused_by_validator(error, RUN_REFUSAL)


@pytest.mark.parametrize("duplicate", [copy.copy, copy.deepcopy], ids=["copy", "deepcopy"])
def test_copies_through_any_are_refused_at_the_source(
    kernel: AcceptedKernel, handler: KernelHandler[str], duplicate: Callable[[Any], Any]
) -> None:
    with pytest.raises(TypeError, match="cannot be copied"):
        duplicate(kernel)
    with pytest.raises(TypeError, match="cannot be copied"):
        duplicate(bind(kernel, handler))


def test_dunder_replace_is_refused_at_the_source(kernel: AcceptedKernel, handler: KernelHandler[str]) -> None:
    """``copy.replace`` (Python 3.13+) calls ``type(x).__replace__(x, **changes)``; a dataclass's
    own ``__replace__`` would build an unminted copy. Called directly, so it runs on 3.11 too."""
    anything: Any = kernel
    message = (
        r"^AcceptedKernel cannot be copied; run its gate again \(torchlean\.backend\.acceptance\.accept\)$"
    )
    with pytest.raises(TypeError, match=message):
        anything.__replace__(_gate=sealed._GATE)
    with pytest.raises(TypeError, match=message):
        type(anything).__replace__(anything, policy=kernel.policy)
    with pytest.raises(TypeError, match=message):
        anything.__replace__()
    executable: Any = bind(kernel, handler)
    bound = r"^ExecutableKernel cannot be copied; run its gate again \(torchlean\.backend\.binding\.bind\)$"
    with pytest.raises(TypeError, match=bound):
        executable.__replace__()
    if sys.version_info >= (3, 13):
        with pytest.raises(TypeError, match=message):
            copy.replace(anything)


def test_replace_through_any_is_refused(kernel: AcceptedKernel) -> None:
    anything: Any = kernel
    with pytest.raises(ValueError, match="_gate"):
        dataclasses.replace(anything)


def test_private_mint_outside_a_gate_is_refused(planned: PlannedKernel, policy: KernelPolicy) -> None:
    """Even reaching the private helper does not help: it checks that its caller is a gate."""
    anything: Any = AcceptedKernel
    forged = anything(planned.op, planned.capsule, policy, _gate=sealed._GATE)
    with pytest.raises(TypeError, match="is not a gate of AcceptedKernel"):
        sealed._mint(forged)  # type: ignore[torchlean-sealed]  # deliberate: the plugin flags it too
    assert not sealed.is_minted(forged)


def test_subclassing_is_refused() -> None:
    base: Any = AcceptedKernel
    with pytest.raises(TypeError, match=r"^AcceptedKernel is sealed and cannot be subclassed$"):
        type("Sub", (base,), {})
    mixin = type("Mixin", (), {})
    with pytest.raises(TypeError, match=r"^AcceptedKernel is sealed and cannot be subclassed$"):
        type("Sub", (mixin, base), {})  # names the sealed class, not the first base


_OPTIMISED_PROBE = """
import numpy as np
import torchlean as tl
from torchlean.autograd.typed_graph import GraphProgram, node_kernels
from torchlean.backend import acceptance, profiles, sealed
from torchlean.backend.acceptance import AcceptedGraphKernelPlan, AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.report import accepted_graph_lines, audit_line
from torchlean.backend.vocabulary import BackendOp, Device, Provider
from torchlean.ir.builder import GraphBuilder

print("checks", sealed.BEARTYPE_CHECKS, __debug__)
profile = profiles.get("checked_cpu")
kernel = accept(profile.plan_ops([BackendOp.RELU]).kernels[0], profile.policy)
handler = KernelHandler("h", BackendOp.RELU, Provider.REFERENCE, Device.CPU, lambda c, x: ("ran", x))
print("genuine", bind(kernel, handler).run(1), audit_line(kernel.audit()).strip())

def attempt(name, action):
    try:
        print(name, "RAN", action())
    except sealed.UnmintedError as error:
        print(name, "refused", error)

forged = object.__new__(AcceptedKernel)
for field in ("op", "capsule", "policy"):
    object.__setattr__(forged, field, getattr(kernel, field))
attempt("bind", lambda: bind(forged, handler))
attempt("audit", lambda: audit_line(forged.audit()))
executable = bind(kernel, handler)
evil = KernelHandler("x", BackendOp.RELU, Provider.REFERENCE, Device.CPU, lambda c, x: ("evil", x))
object.__setattr__(executable, "handler", evil)
attempt("run", lambda: executable.run(1))
deleted = accept(profile.plan_ops([BackendOp.RELU]).kernels[0], profile.policy)
object.__delattr__(deleted, "policy")
attempt("deleted", lambda: bind(deleted, handler))
builder = GraphBuilder()
builder.relu(builder.input([4]))
graph = builder.build().graph
plan = profile.accept_graph(graph).plan
fake_plan = object.__new__(AcceptedGraphKernelPlan)
for field in ("graph_plan", "grouped_plan", "policy", "kernels"):
    object.__setattr__(fake_plan, field, getattr(plan, field))
attempt("node_kernels", lambda: node_kernels(fake_plan))
attempt("graph", lambda: GraphProgram(graph, {}, fake_plan, {}, {}))
attempt("report", lambda: accepted_graph_lines(fake_plan))
attempt("plan_audit", lambda: fake_plan.audit())
"""

_ACCEPT = "torchlean.backend.acceptance.accept"
_REFUSED = {
    "bind": f"bind: AcceptedKernel was not minted by its gate ({_ACCEPT}) or was changed since",
    "audit": f"AcceptedKernel.audit: AcceptedKernel was not minted by its gate ({_ACCEPT}) or was changed",
    "run": (
        "ExecutableKernel.run: ExecutableKernel was not minted by its gate (torchlean.backend.binding.bind) "
        "or was changed since"
    ),
    "deleted": f"bind: AcceptedKernel was not minted by its gate ({_ACCEPT}) or was changed since",
    "node_kernels": "node_kernels: AcceptedGraphKernelPlan was not minted by its gate",
    "graph": "node_kernels: AcceptedGraphKernelPlan was not minted by its gate",
    "report": "accepted_graph_lines: AcceptedGraphKernelPlan was not minted by its gate",
    "plan_audit": "AcceptedGraphKernelPlan.audit: AcceptedGraphKernelPlan was not minted by its gate",
}


@pytest.mark.parametrize("flag", ["", "-O", "-OO"], ids=["normal", "-O", "-OO"])
def test_every_mode_refuses_forgeries_with_one_class_and_one_text(flag: str, tmp_path: Path) -> None:
    """review48 F2: beartype refused with its own ``BeartypeCallHintParamViolation`` ("violates
    validator Is[is_minted]"), ``python -O`` with ``UnmintedError`` naming the gate. Now both give
    ``UnmintedError`` with the same text (beartype, the identity under ``-O``, checks plain types
    only). review48 F5: ``audit()`` (so ``report.audit_line`` of its row) refuses a forgery too."""
    done = subprocess.run(
        [sys.executable, *([flag] if flag else []), "-c", _OPTIMISED_PROBE],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    lines = done.stdout.splitlines()
    assert lines[0] == ("checks True True" if flag == "" else "checks False False")
    assert lines[1] == (
        "genuine ('ran', 1) relu: reference.relu provider=reference trust=checked vjp=torchlean-tape "
        "reduction=n/a"
    )
    refused = {line.split()[0]: line for line in lines[2:]}
    assert set(refused) == set(_REFUSED)
    for name, line in refused.items():
        assert line.startswith(f"{name} refused {_REFUSED[name]}"), line
        assert line.endswith(" or was changed since"), line


def test_normal_python_checks_with_beartype() -> None:
    assert sealed.BEARTYPE_CHECKS is True


_ONE_LINER_CACHED = """
import linecache
text = "import torchlean.backend\\n"
linecache.cache["<string>"] = (len(text), None, [text], "<string>")
import torchlean.backend.sealed as sealed
print("checks", sealed.BEARTYPE_CHECKS)
"""


def test_import_is_silent_when_linecache_holds_a_one_liner(tmp_path: Path) -> None:
    """review129 F6: Python 3.13 keeps ``python -c``'s text in ``linecache`` under ``<string>``,
    where beartype looked for the source of the import-time probe's lambda validator (evaluated
    from a string annotation, so its file is ``<string>``) and warned; under ``-W error`` the
    import failed. The 3.13 cache is recreated here on any Python; the probe's validator is a
    named function now."""
    done = subprocess.run(
        [sys.executable, "-W", "error", "-c", _ONE_LINER_CACHED],
        capture_output=True,
        text=True,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "checks True\n"
    assert done.stderr == ""
