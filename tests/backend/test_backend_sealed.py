"""Sealed values: every forging route is refused at its source or by beartype at the consumer.

DESIGN.md §1.4, typing-notes.md §0/§2: ``AcceptedKernel``, ``AcceptedGraphKernelPlan`` and
``ExecutableKernel`` are made only by ``accept``, ``accept_graph_kernel_plan`` and ``bind``.
"""

from __future__ import annotations

import copy
import dataclasses
import pickle
from collections.abc import Callable
from typing import Any

import pytest
from backend_builders import relu_chain
from beartype.roar import BeartypeCallHintViolation

from torchlean.backend import profiles, report
from torchlean.backend.acceptance import (
    AcceptedGraphKernelPlan,
    AcceptedKernel,
    accept,
    accepted_kernel_of_group,
)
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.planner import PlannedKernel
from torchlean.backend.providers.reference import capsules as reference
from torchlean.backend.sealed import (
    GATES_ATTRIBUTE,
    Sealable,
    UnmintedError,
    _mint,
    is_minted,
    sealed,
    sealed_gates,
)
from torchlean.backend.vocabulary import BackendOp, Device, Provider

# The one refusal of an unminted value, with or without python -O: ``<where>: <Class> was not minted
# by its gate (<gates>) or was changed since`` (review48 F2).
UNMINTED = r"^[\w.]+: \w+ was not minted by its gate \(torchlean\.backend\.[\w., ]+\) or was changed since$"


CHECKED_CPU = profiles.get("checked_cpu")
REF_RELU = next(c for c in reference.CAPSULES if c.name == "reference.relu")
REF_ADD = next(c for c in reference.CAPSULES if c.name == "reference.add")


def _execute(capsule: KernelCapsule) -> str:
    return capsule.name


HANDLER = KernelHandler("TorchLean reference CPU", BackendOp.RELU, Provider.REFERENCE, Device.CPU, _execute)


def _accepted() -> AcceptedKernel:
    return accept(PlannedKernel(BackendOp.RELU, REF_RELU), CHECKED_CPU.policy)


def _accepted_graph() -> AcceptedGraphKernelPlan:
    result = CHECKED_CPU.accept_graph(relu_chain(2))
    assert result.plan is not None
    return result.plan


def _forge(cls: type[Any], **fields: object) -> Any:
    fake = object.__new__(cls)
    for name, value in fields.items():
        object.__setattr__(fake, name, value)
    return fake


def test_gates_are_recorded_for_the_mypy_plugin() -> None:
    assert sealed_gates(AcceptedKernel) == {"torchlean.backend.acceptance.accept"}
    assert sealed_gates(AcceptedGraphKernelPlan) == {"torchlean.backend.acceptance.accept_graph_kernel_plan"}
    assert sealed_gates(ExecutableKernel) == {"torchlean.backend.binding.bind"}
    assert getattr(AcceptedKernel, GATES_ATTRIBUTE) == sealed_gates(AcceptedKernel)


@pytest.mark.parametrize("cls", [AcceptedKernel, AcceptedGraphKernelPlan, ExecutableKernel])
def test_sealed_classes_take_their_weakref_slot_from_sealable(cls: type[Any]) -> None:
    # dataclass(weakref_slot=True) loses the slot on a Generic subclass under CPython 3.12.3
    # (gh-118033): ExecutableKernel could not be minted there, so no op could run.
    assert issubclass(cls, Sealable)
    assert getattr(cls, "__weakref__") is vars(Sealable)["__weakref__"]  # noqa: B009


def test_sealed_refuses_a_class_not_derived_from_sealable() -> None:
    @dataclasses.dataclass(frozen=True, slots=True)
    class NoWeakref:
        value: int

    @dataclasses.dataclass(frozen=True, slots=True, weakref_slot=True)
    class OwnSlot:  # weak references work here, but not on every CPython for a Generic base
        value: int

    for cls in (NoWeakref, OwnSlot):
        with pytest.raises(TypeError, match=rf"sealed class {cls.__name__} must derive from Sealable"):
            sealed("tests.gate")(cls)


def test_sealed_refuses_a_second_stacked_decorator() -> None:
    # each decorator would overwrite the gate list, and the mypy plugin keeps another one
    @dataclasses.dataclass(frozen=True, slots=True, eq=False)
    class Token(Sealable):
        value: int

    sealed("tests.make_one")(Token)
    with pytest.raises(
        TypeError,
        match=r"^sealed class Token is sealed twice \(gates tests\.make_one and tests\.make_two\): "
        r"name all its gate functions in one @sealed\(\.\.\.\)$",
    ):
        sealed("tests.make_two")(Token)
    assert sealed_gates(Token) == {"tests.make_one"}


def test_genuine_values_are_minted_and_consumable() -> None:
    accepted = _accepted()
    assert is_minted(accepted)
    executable = bind(accepted, HANDLER)
    assert is_minted(executable)
    assert executable.run() == "reference.relu"
    plan = _accepted_graph()
    assert is_minted(plan)
    assert accepted_kernel_of_group(plan, 0).capsule is REF_RELU
    assert report.accepted_graph_lines(plan)[0] == "accepted under checked"


def test_equal_values_are_distinct_identities() -> None:
    first, second = _accepted(), _accepted()
    assert first != second
    assert first == first
    assert is_minted(first) and is_minted(second)


# direct construction --------------------------------------------------------------------------------


def test_direct_construction_without_token_fails() -> None:
    with pytest.raises(TypeError):
        AcceptedKernel(BackendOp.RELU, REF_RELU, CHECKED_CPU.policy)  # type: ignore[call-arg, torchlean-sealed]
    with pytest.raises(TypeError, match=r"can only be created by torchlean\.backend\.acceptance\.accept"):
        AcceptedKernel(BackendOp.RELU, REF_RELU, CHECKED_CPU.policy, _gate=None)  # type: ignore[arg-type, torchlean-sealed]


def test_mint_outside_the_gate_fails() -> None:
    accepted = _accepted()
    with pytest.raises(TypeError, match="is not a gate of AcceptedKernel"):
        _mint(accepted)  # type: ignore[torchlean-sealed]


# object.__new__ ---------------------------------------------------------------------------------------


def test_object_new_forgery_is_refused_by_every_consumer() -> None:
    fake = _forge(AcceptedKernel, op=BackendOp.RELU, capsule=REF_RELU, policy=CHECKED_CPU.policy)
    assert not is_minted(fake)
    with pytest.raises(UnmintedError, match=UNMINTED):
        bind(fake, HANDLER)
    fake_exec = _forge(ExecutableKernel, accepted=_accepted(), handler=HANDLER)
    with pytest.raises(UnmintedError, match=UNMINTED):
        fake_exec.run()
    genuine = _accepted_graph()
    fake_plan = _forge(
        AcceptedGraphKernelPlan,
        graph_plan=genuine.graph_plan,
        grouped_plan=genuine.grouped_plan,
        policy=genuine.policy,
        kernels=genuine.kernels,
    )
    with pytest.raises(UnmintedError, match=UNMINTED):
        accepted_kernel_of_group(fake_plan, 0)
    with pytest.raises(UnmintedError, match=UNMINTED):
        report.accepted_graph_lines(fake_plan)


# copy / deepcopy / pickle -------------------------------------------------------------------------------


COPIERS: list[Callable[[Any], Any]] = [copy.copy, copy.deepcopy, pickle.dumps]


@pytest.mark.parametrize("copier", COPIERS, ids=["copy", "deepcopy", "pickle"])
@pytest.mark.parametrize("make", ["accepted", "graph", "executable"])
def test_copy_and_pickle_raise_at_the_source(copier: Callable[[Any], Any], make: str) -> None:
    value: object
    if make == "accepted":
        value = _accepted()
    elif make == "graph":
        value = _accepted_graph()
    else:
        value = bind(_accepted(), HANDLER)
    with pytest.raises(TypeError, match="cannot be"):
        copier(value)


def test_pickle_protocols_all_raise() -> None:
    accepted = _accepted()
    for protocol in range(pickle.HIGHEST_PROTOCOL + 1):
        with pytest.raises(TypeError):
            pickle.dumps(accepted, protocol=protocol)


# dataclasses.replace ---------------------------------------------------------------------------------------


def test_replace_without_token_fails_and_with_token_is_not_minted() -> None:
    accepted = _accepted()
    with pytest.raises(ValueError, match="InitVar '_gate' must be specified"):
        dataclasses.replace(accepted, capsule=REF_ADD)  # type: ignore[call-arg, torchlean-sealed]
    from torchlean.backend.sealed import _GATE

    swapped = dataclasses.replace(accepted, capsule=REF_ADD, _gate=_GATE)  # type: ignore[torchlean-sealed]
    assert not is_minted(swapped)
    with pytest.raises(UnmintedError, match=UNMINTED):
        bind(swapped, HANDLER)


# mutation after minting ---------------------------------------------------------------------------------


def test_mutation_after_minting_is_refused() -> None:
    accepted = _accepted()
    with pytest.raises(dataclasses.FrozenInstanceError):
        accepted.capsule = REF_ADD  # type: ignore[misc]
    object.__setattr__(accepted, "capsule", REF_ADD)
    assert not is_minted(accepted)
    with pytest.raises(UnmintedError, match=UNMINTED):
        bind(accepted, HANDLER)


def test_a_field_deleted_after_minting_is_unminted_not_an_attribute_error() -> None:
    """``object.__delattr__`` on a field: the documented violation (beartype, or UnmintedError
    under -O), not an AttributeError from inside the validator."""
    accepted = _accepted()
    object.__delattr__(accepted, "policy")
    assert not is_minted(accepted)
    with pytest.raises(UnmintedError, match=UNMINTED):
        bind(accepted, HANDLER)


def test_rebinding_to_an_equal_value_is_also_refused() -> None:
    accepted = _accepted()
    object.__setattr__(accepted, "capsule", dataclasses.replace(REF_RELU))
    assert not is_minted(accepted)


def test_mutating_the_accepted_kernel_of_an_executable_is_refused() -> None:
    accepted = _accepted()
    executable = bind(accepted, HANDLER)
    object.__setattr__(accepted, "policy", dataclasses.replace(CHECKED_CPU.policy, device=Device.CUDA))
    with pytest.raises(UnmintedError, match=UNMINTED):
        executable.run()


def test_mutating_an_executable_is_refused() -> None:
    executable = bind(_accepted(), HANDLER)
    other = KernelHandler("other", BackendOp.RELU, Provider.REFERENCE, Device.CPU, lambda c: "other")
    object.__setattr__(executable, "handler", other)
    with pytest.raises(UnmintedError, match=UNMINTED):
        executable.run()


def test_mutating_an_accepted_graph_plan_is_refused() -> None:
    plan = _accepted_graph()
    object.__setattr__(plan, "kernels", ())
    with pytest.raises(UnmintedError, match=UNMINTED):
        report.accepted_graph_lines(plan)


# subclassing ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("cls", [AcceptedKernel, AcceptedGraphKernelPlan, ExecutableKernel])
def test_subclassing_raises(cls: type[Any]) -> None:
    with pytest.raises(TypeError, match="is sealed"):
        type("Sub", (cls,), {})


def test_duck_typed_object_is_refused() -> None:
    class Duck:
        op = BackendOp.RELU
        capsule = REF_RELU
        policy = CHECKED_CPU.policy

    # not an AcceptedKernel at all: beartype's type check on ``bind`` (a wrong type, not a forgery)
    hint = r"not instance of <class \"torchlean\.backend\.acceptance\.AcceptedKernel\">"
    with pytest.raises(BeartypeCallHintViolation, match=hint):
        bind(Duck(), HANDLER)  # type: ignore[arg-type]


def test_the_beartype_hints_refuse_forgeries_in_an_api_of_ones_own() -> None:
    """``Accepted``, ``AcceptedGraph`` and ``Executable`` (DESIGN.md §1.4's ``Is[...]`` validators,
    offered for a ``@beartype`` API of one's own; review180 F5: nothing exercised them): a minted
    value passes, a forgery of the same class is beartype's violation."""
    from beartype import beartype

    from torchlean.backend.acceptance import Accepted, AcceptedGraph
    from torchlean.backend.binding import Executable

    @beartype
    def takes_accepted(kernel: Accepted) -> str:
        return kernel.op.label

    @beartype
    def takes_graph(plan: AcceptedGraph) -> int:
        return len(plan.kernels)

    @beartype
    def takes_executable(kernel: Executable) -> str:
        return kernel.op.label

    accepted, graph = _accepted(), _accepted_graph()
    assert takes_accepted(accepted) == "relu"
    assert takes_graph(graph) == len(graph.kernels)
    assert takes_executable(bind(accepted, HANDLER)) == "relu"
    forged_kernel = _forge(AcceptedKernel, op=accepted.op, capsule=accepted.capsule)
    forged_graph = _forge(AcceptedGraphKernelPlan, **{f.name: getattr(graph, f.name)
                                                      for f in dataclasses.fields(graph)})
    forged_executable = _forge(ExecutableKernel, accepted=accepted, handler=HANDLER)
    for call, forged in ((takes_accepted, forged_kernel), (takes_graph, forged_graph),
                         (takes_executable, forged_executable)):
        with pytest.raises(BeartypeCallHintViolation):
            call(forged)
