"""The eager session: selection, recording, show_backend, failure modes, reuse by a graph executor,
and a 3-layer MLP trained for 50 SGD steps against the same model in torch.

Oracles: the original's verbatim messages (anchor-backend.md §3.1, §7), the backend's own report
lines, torch float32 for the MLP losses, hand-derived gradients.
"""

from __future__ import annotations

import dataclasses
import io
import re
import threading
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.autograd import session as session_module
from torchlean.autograd.dispatch import bind_linked, execute_bound, linked_kernels, select_linked
from torchlean.backend import profiles, report
from torchlean.backend.acceptance import AcceptedKernel, accept
from torchlean.backend.availability import Availability
from torchlean.backend.capsule import KernelCapsule, first_claim_difference
from torchlean.backend.contracts import ContractClaim, NativeSymbolRef, trusted, vjp_unavailable
from torchlean.backend.errors import SessionError, SessionTypeError, UnknownLabelError
from torchlean.backend.fields import BackendTypeError
from torchlean.backend.planner import PlannedKernel
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.profiles import BackendProfile
from torchlean.backend.providers.reference import capsules as reference_capsules
from torchlean.backend.registry import CapsuleModule, all_modules
from torchlean.backend.sealed import UnmintedError
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode
from torchlean.trainer import TrainerError

# The one refusal of an unminted value, with or without python -O: ``<where>: <Class> was not minted
# by its gate (<gates>) or was changed since`` (review48 F2).
UNMINTED = r"^[\w.]+: \w+ was not minted by its gate \(torchlean\.backend\.[\w., ]+\) or was changed since$"


def _reference(op: BackendOp) -> KernelCapsule:
    return next(c for c in reference_capsules.CAPSULES if c.op is op)


def _with_relu(capsule: KernelCapsule) -> BackendProfile:
    return profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("custom", (capsule,))])


# ------------------------------------------------------------------------------ selection & records


def test_selected_lists_accepted_kernels_in_first_use_order_once_each() -> None:
    x = tl.tensor([1.0, -2.0], requires_grad=True)
    with tl.session() as s:
        y = tl.relu(x + x)
        z = tl.relu(y * y) + y
        tl.reduce_sum(z).backward()
    assert [k.capsule.name for k in s.selected] == [
        "reference.add",
        "reference.relu",
        "reference.mul",
        "reference.reduce_sum",
    ]
    assert all(isinstance(k, AcceptedKernel) for k in s.selected)
    assert [k.op for k in s.selected] == [BackendOp.ADD, BackendOp.RELU, BackendOp.MUL, BackendOp.REDUCE_SUM]
    assert s.selected is not s.selected  # a copy each time


def test_each_op_is_planned_once_per_gradient_mode(monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[tuple[str, str]] = []
    original = BackendProfile.plan_ops

    def counting(self: BackendProfile, ops: Any) -> Any:
        ops = list(ops)
        calls.extend((op.label, self.policy.vjp_mode.label) for op in ops)
        return original(self, ops)

    monkeypatch.setattr(BackendProfile, "plan_ops", counting)
    x = tl.tensor([1.0])
    with tl.session() as s:
        for _ in range(5):
            tl.exp(x)
        with tl.no_grad():
            for _ in range(3):
                tl.exp(x)
    assert calls == [("exp", "torchlean-tape"), ("exp", "none")]
    assert [k.capsule.name for k in s.selected] == ["reference.exp"]


def test_no_grad_plans_under_vjp_mode_none() -> None:
    with tl.session() as s, tl.no_grad():
        tl.sin(tl.tensor([0.5]))
        assert s.effective_profile().policy.vjp_mode is VJPMode.NONE
    assert s.selected[0].policy.vjp_mode is VJPMode.NONE
    assert s.effective_profile().policy.vjp_mode is VJPMode.TORCHLEAN_TAPE


def test_show_backend_prints_banner_on_open_and_five_lines_at_first_use() -> None:
    out = io.StringIO()
    with tl.session(show_backend=True, stream=out) as s:
        assert out.getvalue() == "[TorchLean] backend capsules used:\n"
        a = tl.tensor([1.0])
        tl.add(a, a)
        tl.add(a, a)
    lines = out.getvalue().splitlines()
    assert lines[1] == (
        "  add: reference.add provider=reference trust=checked vjp=torchlean-tape reduction=fixed-left"
    )
    assert lines[1:] == report.detailed_report_lines(s.selected[0].audit())
    assert len(lines) == 6


def test_show_backend_prints_to_stdout_by_default(capsys: pytest.CaptureFixture[str]) -> None:
    with tl.session(show_backend=True):
        pass
    assert capsys.readouterr().out == "[TorchLean] backend capsules used:\n"


def test_ops_outside_a_session_use_the_default_checked_cpu_session() -> None:
    default = session_module.default_session()
    assert tl.current_session() is default
    assert default.profile.name == "checked_cpu"
    tl.cos(tl.tensor([0.0]))
    assert "reference.cos" in [k.capsule.name for k in default.selected]


def test_sessions_nest_and_restore() -> None:
    with tl.session() as outer:
        with tl.session("libtorch_forward_strict_cpu") as inner:
            assert tl.current_session() is inner
            tl.tanh(tl.tensor([0.1]))
        assert tl.current_session() is outer
        assert outer.selected == []
    assert [k.capsule.name for k in inner.selected] == ["reference.tanh"]


def test_random_counters_are_per_session() -> None:
    with tl.session() as a:
        tl.rand_uniform((2,))
        with tl.session() as b:
            tl.bernoulli_mask((2,), 0.5)
        tl.rand_uniform((2,))
    assert (a.random_counter, b.random_counter) == (2, 1)


def test_unknown_profile_name_is_refused() -> None:
    with pytest.raises(UnknownLabelError, match="unknown profile nope"):
        tl.session("nope")


# ------------------------------------------------------------------------------------ failure modes


def test_selected_capsule_without_linked_handler_fails_verbatim() -> None:
    custom = dataclasses.replace(_reference(BackendOp.RELU), name="custom.relu", provider=Provider.TORCHLEAN)
    with tl.session(_with_relu(custom)) as s, pytest.raises(SessionError) as info:
        tl.relu(tl.tensor([1.0]))
    assert str(info.value) == (
        "torch: `relu` selected capsule `custom.relu` (torchlean/cpu), but no matching executable handler is "
        "linked; available handlers: TorchLean reference CPU (reference/cpu), TorchLean ATen CPU "
        "(aten/cpu), TorchLean native CUDA (native-cuda/cuda)"
    )
    assert s.selected == []  # review55 F1: nothing of it ran, so the audit does not list it
    # explain and plan_report say so before any session: the capsule is selected, nothing can run it
    note = (
        "note: no handler of this build implements relu for provider torchlean on cpu, so custom.relu "
        "cannot run; a session refuses it before relu runs"
    )
    planned = _with_relu(custom).plan_report(["exp", "relu"]).splitlines()
    assert planned[-6].startswith("  relu: custom.relu ") and planned[-1] == f"    {note}"
    assert sum("note:" in line for line in planned) == 1  # exp's reference capsule runs
    explained = _with_relu(custom).explain("relu").splitlines()
    assert "  custom.relu (torchlean/cpu): selected" in explained
    assert explained[-2:] == [
        "  note: no handler of this build implements relu for provider torchlean on cpu, so custom.relu "
        "cannot run; a session refuses it before relu runs",
        "result: relu -> custom.relu",
    ]


def test_the_shipped_capsules_and_the_linked_handlers_have_the_same_triples() -> None:
    """``registry.has_built_in_handler`` (explain's no-handler note) reads the shipped capsules'
    (op, provider, device) triples as the ones a handler is linked for."""
    shipped = {(c.op, c.provider, c.device) for m in all_modules() for c in m.capsules}
    linked = {(k.op, k.provider, k.device) for op in BackendOp for k in linked_kernels(op)}
    assert shipped == linked
    assert len(shipped) == 135


def test_no_shipped_profile_plans_a_capsule_a_session_would_refuse() -> None:
    """plan_report's refusal note (review55 F2) never fires for a shipped profile's plans."""
    planned = 0
    for name in profiles.names():
        profile = profiles.get(name)
        ops = [op for op in BackendOp if any(c.op is op for c in profile.registry())]
        for op in ops:
            try:
                text = profile.plan_report([op])
            except tl.PlanningError:
                continue
            planned += 1
            assert "note:" not in text, (name, op)
    assert planned > 100


def _forward_only_relu() -> KernelCapsule:
    relu = _reference(BackendOp.RELU)
    return dataclasses.replace(
        relu,
        name="forward_only.relu",
        vjp_mode=VJPMode.NONE,
        vjp_contract=vjp_unavailable(BackendOp.RELU, "No VJP is registered for this capsule."),
    )


GUARD_CALLS: list[str] = []


def count_guard_call(*args: Any, **kwargs: Any) -> None:
    """A runtime guard that records each call (never called: its capsule is refused first)."""
    GUARD_CALLS.append("called")


def test_plan_report_notes_belong_to_one_capsule_identity_not_its_name() -> None:
    """review141 F1: two capsules may share a name (the identity is name, op, provider, device);
    the note of the one no handler runs printed under the other as well."""
    runs = dataclasses.replace(_reference(BackendOp.RELU), name="my.x")
    stranded = dataclasses.replace(_reference(BackendOp.MATMUL), name="my.x", provider=Provider.TORCHLEAN)
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mine", (runs, stranded))])
    lines = profile.plan_report(["relu", "matmul"]).splitlines()
    notes = [i for i, line in enumerate(lines) if line.startswith("    note: ")]
    assert [lines[i] for i in notes] == [
        "    note: no handler of this build implements matmul for provider torchlean on cpu, so my.x cannot "
        "run; a session refuses it before matmul runs"
    ]
    assert lines[notes[0] - 5].startswith("  matmul: my.x provider=torchlean")
    with tl.session(profile):
        np.testing.assert_array_equal(tl.relu(tl.tensor(np.array([-1.0, 2.0]))).numpy(), [0.0, 2.0])
    plan = profile.plan_ops(["relu"])
    with pytest.raises(BackendTypeError, match=r"notes are keyed by capsule identity .* got the key 'my\.x'"):
        report.plan_report("mine", profile.policy, plan, notes={"my.x": "dropped before"})  # review145 F4
    # review146 F5: an identity spelled with labels never matched either; a list is no mapping
    labels = ("my.x", "relu", "reference", "cpu")
    with pytest.raises(BackendTypeError, match=r"got the key \('my\.x', 'relu', 'reference', 'cpu'\)"):
        report.plan_report("mine", profile.policy, plan, notes={labels: "dropped before"})
    listed: Any = [(runs.identity, "a note")]
    with pytest.raises(BackendTypeError, match=r"notes must be a mapping of capsule identity to note"):
        report.plan_report("mine", profile.policy, plan, notes=listed)
    kept = report.plan_report("mine", profile.policy, plan, notes={runs.identity: "kept"})
    assert kept.endswith("    note: kept")


def test_explain_names_an_empty_declared_list_none() -> None:
    """review141 F4: ``(declared: )``, where a session's message says ``none``."""
    empty = dataclasses.replace(profiles.get("checked_cpu"), name="empty_prov",
                                availability=Availability(devices=(Device.CPU,), providers=()))
    assert ("reference.relu (reference/cpu): availability: provider reference is not declared by the "
            "profile (declared: none)") in empty.explain("relu")


def test_a_capsule_claiming_another_guard_than_its_handler_runs_is_refused_before_launch() -> None:
    """A downstream capsule runs on the built-in handler of its (op, provider, device); one that
    names a guard that handler never calls would be a false record (review17 D1: the record said
    the guard ran; it was called 0 times and the reference matmul computed the value)."""
    ref = _reference(BackendOp.MATMUL)
    evidence = dataclasses.replace(ref.shape_contract.evidence, name=f"{__name__}.count_guard_call")
    claimed = dataclasses.replace(
        ref, name="mylib.matmul", shape_contract=dataclasses.replace(ref.shape_contract, evidence=evidence)
    )
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (claimed,))])
    GUARD_CALLS.clear()
    with tl.session(profile) as session, pytest.raises(SessionError) as info:
        tl.tensor(np.ones((2, 3))) @ tl.tensor(np.ones((3, 2)))
    assert session.selected == []  # review55 F1: the audit listed mylib.matmul and its false claim
    assert profile.plan_report(["matmul"]).splitlines()[-1] == (
        f"    note: mylib.matmul would run on the handler of reference.matmul but claims otherwise (shape "
        f"contract: shape safety for matmul; guarded at runtime by {__name__}.count_guard_call (the "
        "handler's capsule reference.matmul: shape safety for matmul; guarded at runtime by "
        "torchlean.backend.providers.reference.guards.check_matmul)); a session refuses it before matmul runs"
    )
    assert str(info.value) == (
        "torch: `matmul` selected capsule `mylib.matmul` (reference/cpu), whose claims are not those "
        "of the code it would run: handler `TorchLean reference CPU` implements capsule "
        "`reference.matmul`; shape contract: shape safety for matmul; guarded at runtime by "
        f"{__name__}.count_guard_call (the handler's capsule reference.matmul: shape safety for "
        "matmul; guarded at runtime by torchlean.backend.providers.reference.guards.check_matmul). "
        "A capsule run on a linked handler may rename that handler's capsule, make it forward-only "
        "or lower its trust to trusted-external, not change what it claims"
    )
    assert GUARD_CALLS == []


def test_a_relabelled_reduction_order_is_refused_and_a_renamed_copy_runs() -> None:
    """``aten.matmul`` relabelled fixed-left would record a left fold for torch's matmul; refused.
    A copy that only renames the
    capsule runs on that handler and is recorded under its name, with torch's product (oracle:
    numpy matmul in float64)."""
    from torchlean.backend.contracts import NumericalPolicy, ReductionPolicy
    from torchlean.backend.registry import aten_module

    aten = next(c for c in aten_module().capsules if c.op is BackendOp.MATMUL)
    availability = Availability(devices=(Device.CPU,), providers=(Provider.REFERENCE, Provider.ATEN))

    def profile_with(capsule: KernelCapsule) -> BackendProfile:
        extended = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (capsule,))])
        return dataclasses.replace(extended, name="mine", availability=availability)

    a, b = np.arange(6.0).reshape(2, 3), np.arange(6.0).reshape(3, 2) / 7
    for name in ("mylib.fixed_left_matmul", "aten.matmul"):  # keeping the shipped name changes nothing
        relabelled = dataclasses.replace(
            aten, name=name, numerical_policy=NumericalPolicy(ReductionPolicy.FIXED_LEFT)
        )
        with tl.session(profile_with(relabelled)), pytest.raises(SessionError) as info:
            tl.tensor(a) @ tl.tensor(b)
        assert str(info.value).endswith(
            "handler `TorchLean ATen CPU` implements capsule `aten.matmul`; numerical policy: reduction "
            "fixed-left (the handler's capsule aten.matmul: reduction implementation-defined). A capsule "
            "run on a linked handler may rename that handler's capsule, make it forward-only or lower "
            "its trust to trusted-external, not change what it claims"
        ), name
    renamed = dataclasses.replace(aten, name="mylib.matmul")
    with tl.session(profile_with(renamed)) as s:
        out = tl.tensor(a) @ tl.tensor(b)
    np.testing.assert_allclose(out.numpy(), a @ b, rtol=1e-15)
    assert [k.capsule.name for k in s.selected] == ["mylib.matmul"]


def test_a_capsule_may_claim_less_but_a_forward_only_one_may_not_name_vjp_evidence() -> None:
    """Claiming less runs: forward-only with notApplicable VJP evidence, or trusted-external where
    the handler's capsule is checked (under a policy that admits it). A forward-only capsule whose
    vjpUnavailable contract names a guard is refused (review17 diff F1: it ran and was recorded).
    Oracle: relu by hand."""
    from torchlean.backend.contracts import ContractDescriptor, ContractEvidence
    from torchlean.backend.vocabulary import TrustLevel

    relu = _reference(BackendOp.RELU)
    x = np.array([-1.0, 2.0])
    external = dataclasses.replace(relu, name="mylib.relu", trust_level=TrustLevel.TRUSTED_EXTERNAL)
    lenient = dataclasses.replace(profiles.get("libtorch_forward_cpu"), name="lenient")
    for capsule, profile in ((_forward_only_relu(), profiles.get("checked_cpu")), (external, lenient)):
        extended = profile.with_capsule_modules([CapsuleModule("mylib", (capsule,))])
        with tl.no_grad(), tl.session(extended) as s:
            out = tl.relu(tl.tensor(x))
        np.testing.assert_array_equal(out.numpy(), [0.0, 2.0])
        assert [k.capsule.name for k in s.selected] == [capsule.name]
    guarded_vjp = ContractDescriptor(
        vjp_unavailable(BackendOp.RELU, "unused").claim,
        "relu's missing VJP is checked by a guard",
        ContractEvidence.runtime_guard("torchlean.backend.providers.reference.guards.check_matmul"),
    )
    claimed = dataclasses.replace(_forward_only_relu(), vjp_contract=guarded_vjp)
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (claimed,))])
    with tl.no_grad(), tl.session(profile), pytest.raises(SessionError) as info:
        tl.relu(tl.tensor(x))
    assert (
        "implements capsule `reference.relu`; vjp contract: relu has no VJP in this capsule; guarded at "
        "runtime by "
        "torchlean.backend.providers.reference.guards.check_matmul (a forward-only capsule's VJP "
        "contract has notApplicable evidence: no backward code runs)"
    ) in str(info.value)
    symbol = NativeSymbolRef("torchlean/backend/providers/reference/kernels.py", "def relu_vjp(")
    traced = dataclasses.replace(
        _forward_only_relu(), vjp_contract=vjp_unavailable(BackendOp.RELU, "No VJP here.", (symbol,))
    )
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (traced,))])
    with tl.no_grad(), tl.session(profile), pytest.raises(SessionError) as info:
        tl.relu(tl.tensor(x))
    assert (
        f"implements capsule `reference.relu`; vjp contract: provenance ({symbol!r},) (a forward-only "
        "capsule's VJP contract names no provenance: no backward code runs)"
    ) in str(info.value)


def test_a_forward_only_copy_words_its_missing_vjp_freely_whether_or_not_the_handler_has_one() -> None:
    """One rule for every forward-only copy: notApplicable evidence, no provenance, its own words
    (the copy of an already forward-only shipped capsule had to match its summary verbatim)."""
    shipped = _reference(BackendOp.RAND_UNIFORM)
    assert shipped.vjp_mode is VJPMode.NONE
    reworded = dataclasses.replace(
        shipped,
        name="mylib.rand_uniform",
        vjp_contract=vjp_unavailable(BackendOp.RAND_UNIFORM, "Random draws have no VJP; see mylib docs."),
    )
    assert first_claim_difference(reworded, shipped) is None
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (reworded,))])
    with tl.session(profile, seed=3) as s:
        draw = tl.rand_uniform([4])
    with tl.session("checked_cpu", seed=3):
        np.testing.assert_array_equal(draw.numpy(), tl.rand_uniform([4]).numpy())
    assert [k.capsule.name for k in s.selected] == ["mylib.rand_uniform"]


def test_explain_notes_a_selected_capsule_a_session_would_refuse() -> None:
    """explain, the tool that says why, names the mismatch the session refuses (review17 diff F2);
    a shipped profile has no such note."""
    from torchlean.backend.contracts import NumericalPolicy, ReductionPolicy
    from torchlean.backend.registry import aten_module

    aten = next(c for c in aten_module().capsules if c.op is BackendOp.MATMUL)
    relabelled = dataclasses.replace(
        aten, name="mylib.matmul", numerical_policy=NumericalPolicy(ReductionPolicy.FIXED_LEFT)
    )
    profile = profiles.get("fast_cpu").with_capsule_modules([CapsuleModule("mylib", (relabelled,))])
    lines = profile.explain("matmul").splitlines()
    assert lines[-2:] == [
        "  note: mylib.matmul would run on the handler of aten.matmul but claims otherwise (numerical "
        "policy: reduction fixed-left (the handler's capsule aten.matmul: reduction "
        "implementation-defined)); a session refuses it before matmul runs",
        "result: matmul -> mylib.matmul",
    ]
    for name in profiles.names():
        assert "claims otherwise" not in profiles.get(name).explain("matmul")


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_a_trainer_refuses_a_capsule_whose_claims_its_handler_does_not_meet(execution: str) -> None:
    """The trainer binds through the same selection in both execution modes: a ``linear`` capsule
    naming another guard is refused before any update (the weights stay the seeded ones)."""
    from torchlean import nn
    from torchlean.trainer import RunConfig, Trainer

    ref = _reference(BackendOp.LINEAR)
    evidence = dataclasses.replace(ref.shape_contract.evidence, name=f"{__name__}.count_guard_call")
    claimed = dataclasses.replace(
        ref, name="mylib.linear", shape_contract=dataclasses.replace(ref.shape_contract, evidence=evidence)
    )
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (claimed,))])
    trainer = Trainer(nn.linear(4, 3), config=RunConfig(execution=execution).with_profile(profile))
    before = [p.copy() for p in trainer.model.parameters]
    GUARD_CALLS.clear()
    refused = r"selected capsule `mylib\.linear` \(reference/cpu\), whose claims"
    with pytest.raises(SessionError, match=refused):
        trainer.fit(np.ones((8, 4)), np.ones((8, 3)), epochs=1)
    assert GUARD_CALLS == []
    for old, new in zip(before, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(old, new)


def test_forward_only_capsule_is_refused_in_training() -> None:
    profile = profiles.get("checked_cpu").with_capsule_modules(
        [CapsuleModule("reference", (_forward_only_relu(),))]
    )
    with tl.session(profile), pytest.raises(SessionError) as info:
        tl.relu(tl.tensor([1.0], requires_grad=True))
    assert str(info.value) == (
        "torch: kernel selection failed for `relu`: no admissible kernel capsule for op relu on device cpu"
    )
    # the original's message names neither the profile nor where to look: a note does
    assert info.value.__notes__ == [
        # a profile of your own (its name is a shipped one's): no CLI way (it said "--profile NAME")
        "under profile checked_cpu; profile.explain('relu') says why each capsule was not admissible or is "
        "refused",
        profile.explain("relu"),
    ]
    # ... and the reasons themselves, so a traceback says why without another call
    assert "  forward_only.relu (reference/cpu): VJP mode: offers none, not requested torchlean-tape" in (
        info.value.__notes__[1].splitlines()
    )


def test_a_linked_kernel_without_a_vjp_is_refused_before_it_runs_when_a_gradient_is_needed() -> None:
    """Bound by hand (``bind_linked``) to a capsule that claims the tape VJP, code linked without a
    VJP must not run under a gradient: a SessionError naming the kernel, before its forward
    (without the refusal: an assert, or under ``python -O`` a forward and then a failed backward)."""
    from torchlean.backend.providers.linked import convention_kernel
    from torchlean.backend.providers.reference import kernels as reference_kernels

    relu = _reference(BackendOp.RELU)
    accepted = accept(PlannedKernel(BackendOp.RELU, relu), profiles.get("checked_cpu").policy)
    calls: list[int] = []

    def forward(x: np.ndarray) -> np.ndarray:
        calls.append(1)
        return reference_kernels.relu(x)

    code = convention_kernel(
        "mylib relu (no vjp)", BackendOp.RELU, Provider.REFERENCE, Device.CPU, forward, None
    )
    bound = bind_linked(accepted, code)
    with tl.session("checked_cpu"):
        with pytest.raises(SessionError) as info:
            execute_bound(bound, [tl.tensor(np.array([-1.0, 2.0]), requires_grad=True)], {})
        assert calls == []
        assert str(info.value) == (
            "torch: `relu` selected capsule `reference.relu`, whose linked kernel `mylib relu (no vjp)` has "
            "no VJP, but an input requires a gradient"
        )
        with tl.no_grad():  # no gradient needed: the forward serves
            out = execute_bound(bound, [tl.tensor(np.array([-1.0, 2.0]), requires_grad=True)], {})
    np.testing.assert_array_equal(out.numpy(), [0.0, 2.0])
    assert calls == [1]


@pytest.mark.parametrize("execution", ["session", "eager", "typed-graph"])
def test_a_forward_only_capsule_never_owns_a_gradient(execution: str) -> None:
    """A profile whose policy asks for no VJP admits forward-only capsules also with gradients on;
    their record says no backward exists, so a gradient through them would come from the handler's
    VJP behind the record's back (review18 core F1: the trainer trained on it). Refused before the
    kernel runs, in a session and in both trainer modes; under no_grad the capsule serves."""
    from torchlean import nn
    from torchlean.trainer import RunConfig, Trainer

    linear = _reference(BackendOp.LINEAR)
    forward_only = dataclasses.replace(
        linear, name="mylib.linear", vjp_mode=VJPMode.NONE,
        vjp_contract=vjp_unavailable(BackendOp.LINEAR, "No VJP is registered for this capsule."),
    )
    profile = (
        profiles.get("checked_cpu")
        .with_capsule_modules([CapsuleModule("mylib", (forward_only,))])
        .with_vjp_mode(VJPMode.NONE)
    )
    refused = (
        r"^torch: `linear` selected the forward-only capsule `mylib\.linear` \(vjp none\) under a policy of "
        r"VJP mode none \(inference: no backward\), but an input requires a gradient; run it under "
        r"torchlean.no_grad\(\), or with a profile whose VJP mode owns a backward \(torchlean-tape or "
        r"backend-vjp\)(\ntyped graph: at node \d+ \(linear\))?$"
    )  # pytest matches the notes too: the typed graph names its node
    x, w, b = np.ones((2, 4)), np.full((3, 4), 0.5), np.zeros(3)
    if execution == "session":
        with tl.session(profile) as session:
            with tl.no_grad():  # inference: served by the forward-only capsule
                out = tl.linear(tl.tensor(x), tl.tensor(w, requires_grad=True), tl.tensor(b))
            np.testing.assert_array_equal(out.numpy(), np.full((2, 3), 2.0))
            with pytest.raises(SessionError, match=refused):
                tl.linear(tl.tensor(x), tl.tensor(w, requires_grad=True), tl.tensor(b))
            assert [k.capsule.name for k in session.selected] == ["mylib.linear"]
        return
    trainer = Trainer(nn.linear(4, 3), config=RunConfig(execution=execution).with_profile(profile))
    before = [p.copy() for p in trainer.model.parameters]
    inference_only = r"^fit trains with gradients, but profile `checked_cpu` has a policy of VJP mode none"
    with pytest.raises(TrainerError, match=inference_only):
        trainer.fit(np.ones((8, 4)), np.ones((8, 3)), epochs=1)
    for old, new in zip(before, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(old, new)
    # inference is what the profile is for: predict runs on the forward-only capsule
    expected = x @ before[0].astype(np.float64).T + before[1]
    np.testing.assert_allclose(trainer.predict(x), expected, rtol=1e-6)
    assert [k.capsule.name for k in trainer.selected] == ["mylib.linear"]


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_an_inference_policy_records_no_gradient_through_shipped_capsules(execution: str) -> None:
    """review34 F2: a profile whose policy asks for VJP mode none (inference) admits the shipped
    tape-VJP capsules too; recording a gradient under it was allowed, so the audit said
    ``vjp_mode none`` for kernels whose backward ran. Refused before the kernel runs; under
    ``no_grad`` and in the trainer's predict the capsules serve; fit refuses up front."""
    from torchlean import nn
    from torchlean.trainer import RunConfig, Trainer

    inference = profiles.get("checked_cpu").with_vjp_mode(VJPMode.NONE)
    x, w = np.array([[1.0, -2.0, 3.0]]), np.ones((3, 3))
    refused = (
        r"^torch: `matmul` selected capsule `reference\.matmul` \(vjp torchlean-tape\) under a policy of VJP "
        r"mode none \(inference: no backward\), but an input requires a gradient; run it under "
        r"torchlean.no_grad\(\)"
    )
    with tl.session(inference):
        with pytest.raises(SessionError, match=refused):
            tl.tensor(x, requires_grad=True) @ tl.tensor(w)
        with tl.no_grad():
            served = tl.tensor(x, requires_grad=True) @ tl.tensor(w)
            np.testing.assert_array_equal(served.numpy(), [[2.0] * 3])
        plain = tl.tensor(x) @ tl.tensor(w)  # nothing requires a gradient: no tape node
        assert plain.grad_fn is None and plain.produced_by is not None
        assert plain.produced_by.policy.vjp_mode is VJPMode.NONE
    trainer = Trainer(nn.linear(3, 2), config=RunConfig(execution=execution).with_profile(inference))
    inference_only = r"^fit trains with gradients, but profile `checked_cpu` has a policy of VJP mode none"
    with pytest.raises(TrainerError, match=inference_only):
        trainer.fit(np.ones((4, 3)), np.ones((4, 2)), epochs=1)
    stepping = r"^step trains with gradients, but profile `checked_cpu` has a policy"
    with pytest.raises(TrainerError, match=stepping):
        trainer.step(np.ones((4, 3)), np.ones((4, 2)))  # review36 F7: step is training too
    weight, bias = trainer.model.parameters
    np.testing.assert_allclose(trainer.predict(x), x @ weight.T + bias, rtol=1e-6)


def test_forward_only_capsule_serves_inference() -> None:
    profile = profiles.get("checked_cpu").with_capsule_modules(
        [CapsuleModule("reference", (_forward_only_relu(),))]
    )
    with tl.session(profile) as s:
        with tl.no_grad():
            out = tl.relu(tl.tensor([-1.0, 2.0]))
        np.testing.assert_array_equal(out.numpy(), [0.0, 2.0])
        assert s.selected[0].capsule.name == "forward_only.relu"


def test_random_sources_plan_forward_only_capsules_in_training() -> None:
    with tl.session() as s:
        tl.bernoulli_mask((3,), 0.5)
        tl.rand_uniform((3,))
    assert [(k.capsule.name, k.capsule.vjp_mode, k.policy.vjp_mode) for k in s.selected] == [
        ("reference.bernoulli_mask", VJPMode.NONE, VJPMode.TORCHLEAN_TAPE),
        ("reference.rand_uniform", VJPMode.NONE, VJPMode.TORCHLEAN_TAPE),
    ]


def test_gate_rejection_after_planning_is_reported() -> None:
    relu = _reference(BackendOp.RELU)
    external_value = dataclasses.replace(
        relu,
        name="boundary.relu",
        value_contract=trusted(
            ContractClaim.value_refinement(BackendOp.RELU), "An outside ReLU.", "outside ReLU"
        ),
    )
    with tl.session(_with_relu(external_value)), pytest.raises(SessionError) as info:
        tl.relu(tl.tensor([1.0]))
    assert str(info.value) == (
        "torch: kernel selection failed for `relu`: backend profile checked_cpu rejected `relu`: "
        "boundary.relu has rejected value evidence for relu: trusted boundary: outside ReLU"
    )


def test_device_without_linked_runtime_fails_when_the_session_opens() -> None:
    metal_relu = dataclasses.replace(_reference(BackendOp.RELU), name="metal.relu", device=Device.METAL)
    profile = BackendProfile(
        "metal_profile",
        KernelPolicy(device=Device.METAL),
        Availability(devices=(Device.METAL,)),
        (CapsuleModule("metal", (metal_relu,)),),
    )
    with pytest.raises(SessionError) as info:
        tl.session(profile)
    assert str(info.value) == "torch eager session: device `metal` has no linked TorchLean execution runtime"


def test_profile_without_capsule_for_its_device_fails_when_the_session_opens() -> None:
    profile = dataclasses.replace(
        profiles.get("checked_cpu"), name="rocm_profile", policy=KernelPolicy(device=Device.ROCM)
    )
    with pytest.raises(SessionError) as info:
        tl.session(profile)
    assert (
        str(info.value)
        == "torch eager session: backend profile `rocm_profile` has no capsule for device `rocm`"
    )


def test_cuda_profile_on_a_cuda_build_without_device(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.4")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(SessionError) as info:
        tl.session("checked_cuda")
    assert str(info.value) == (
        "torch eager session: CUDA was requested and this is a CUDA build, "
        "but no usable CUDA device is visible"
    )


def test_cuda_profile_on_a_cpu_only_build(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(
        SessionError,
        match=r"^torch eager session: CUDA was requested, but this torch build .* is not a CUDA build",
    ):
        tl.session("checked_cuda")


# ------------------------------------------------------------------------- reuse by a graph executor


def _bind_as_the_graph_executor_does(accepted: AcceptedKernel) -> Any:
    """The typed-graph schedule's route: the linked kernel of the capsule, bound once."""
    return bind_linked(accepted, select_linked(accepted.op, accepted.capsule, linked_kernels(accepted.op)))


def test_an_accepted_kernel_bound_outside_a_session_runs_and_records_its_node() -> None:
    profile = profiles.get("checked_cpu")
    accepted = accept(PlannedKernel(BackendOp.MUL, _reference(BackendOp.MUL)), profile.policy)
    a = tl.tensor([1.0, 2.0], requires_grad=True)
    b = tl.tensor([3.0, 4.0])
    out = execute_bound(_bind_as_the_graph_executor_does(accepted), (a, b), {})
    assert out.grad_fn == "mul"
    out.backward(np.ones(2))
    assert a.grad is not None
    np.testing.assert_array_equal(a.grad.numpy(), [3.0, 4.0])


def test_binding_refuses_a_forged_accepted_kernel() -> None:
    forged = object.__new__(AcceptedKernel)  # type: ignore[torchlean-sealed]  # the forgery under test
    for name, value in (
        ("op", BackendOp.MUL),
        ("capsule", _reference(BackendOp.MUL)),
        ("policy", KernelPolicy()),
    ):
        object.__setattr__(forged, name, value)
    with pytest.raises(UnmintedError, match=UNMINTED):
        _bind_as_the_graph_executor_does(forged)


def test_a_bound_kernel_whose_fields_disagree_is_refused() -> None:
    """``execute_bound`` runs ``executable`` but takes the record, VJP and device rules from the
    other fields: a hand-built BoundKernel pairing matmul with the mul kernel's VJP gave wrong
    gradients recorded as reference.matmul (review18 core F3). Each disagreement is named."""
    policy = profiles.get("checked_cpu").policy
    matmul = accept(PlannedKernel(BackendOp.MATMUL, _reference(BackendOp.MATMUL)), policy)
    good = _bind_as_the_graph_executor_does(matmul)
    mul_kernel = select_linked(BackendOp.MUL, _reference(BackendOp.MUL), linked_kernels(BackendOp.MUL))
    mul = accept(PlannedKernel(BackendOp.MUL, _reference(BackendOp.MUL)), policy)
    other = _bind_as_the_graph_executor_does(mul)
    for fields, problem in (
        ({"linked": mul_kernel}, "executable's handler is not linked kernel TorchLean reference CPU's "),
        ({"differentiable": False}, "differentiable=False, but op matmul says True"),
        ({"host": False}, "host=False for a capsule on cpu"),
        ({"executable": other.executable}, "executable was bound to another accepted kernel"),
    ):
        refusal = rf"^torch: inconsistent BoundKernel for `matmul`: .*{problem}"
        with pytest.raises(SessionError, match=refusal):
            dataclasses.replace(good, **fields)
    assert dataclasses.replace(good).executable is good.executable  # a consistent one builds


def test_bind_linked_applies_the_claims_rule_as_select_linked_does() -> None:
    """``accept`` then ``bind_linked`` (both public) minted an executable for an aten capsule
    claiming a left fold the aten handler does not do (review18 core F4)."""
    from torchlean.backend.contracts import NumericalPolicy, ReductionPolicy
    from torchlean.backend.providers.aten import capsules as aten_capsules

    aten = next(c for c in aten_capsules.CAPSULES if c.op is BackendOp.MATMUL)
    claimed = dataclasses.replace(
        aten, name="mylib.matmul", numerical_policy=NumericalPolicy(ReductionPolicy.FIXED_LEFT)
    )
    accepted = accept(PlannedKernel(BackendOp.MATMUL, claimed), profiles.get("fast_cpu").policy)
    kernel = next(k for k in linked_kernels(BackendOp.MATMUL) if k.provider is Provider.ATEN)
    with pytest.raises(SessionError, match=r"selected capsule `mylib\.matmul` \(aten/cpu\), whose claims"):
        bind_linked(accepted, kernel)


# ------------------------------------------------------------------------------------ MLP training


def _mlp_layers(rng: np.random.Generator) -> list[tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]]:
    sizes = [(4, 8), (8, 6), (6, 1)]
    return [
        (
            (rng.standard_normal((o, i)) / np.sqrt(i)).astype(np.float32),
            (rng.standard_normal(o) * 0.1).astype(np.float32),
        )
        for i, o in sizes
    ]


def test_three_layer_mlp_trains_50_sgd_steps_on_recorded_reference_capsules() -> None:
    rng = np.random.default_rng(2026)
    batch, lr, steps = 16, 0.05, 50
    x_flat = rng.standard_normal(batch * 4).astype(np.float32)
    target = np.sin(x_flat.reshape(batch, 4)[:, :1] * 2.0).astype(np.float32)
    init = _mlp_layers(rng)

    params = [(tl.tensor(w, requires_grad=True), tl.tensor(b, requires_grad=True)) for w, b in init]
    t_params = [(torch.tensor(w, requires_grad=True), torch.tensor(b, requires_grad=True)) for w, b in init]
    x_tl, y_tl = tl.tensor(x_flat), tl.tensor(target)
    x_t, y_t = torch.tensor(x_flat), torch.tensor(target)

    losses, t_losses = [], []
    with tl.session() as s:
        for _ in range(steps):
            h = tl.reshape(x_tl, (batch, 4))
            for i, (w, b) in enumerate(params):
                h = tl.add(tl.matmul(h, tl.permute(w, (1, 0))), tl.broadcast_to(b, (batch, w.shape[0])))
                if i < len(params) - 1:
                    h = tl.relu(h)
            loss = tl.mse_loss(h, y_tl)
            loss.backward()
            losses.append(loss.item())
            with tl.no_grad():
                for w, b in params:
                    for p in (w, b):
                        assert p.grad is not None
                        p.copy_(p.numpy() - np.float32(lr) * p.grad.numpy())
                        p.grad = None

            th = x_t.reshape(batch, 4)
            for i, (w, b) in enumerate(t_params):
                th = th @ w.T + b
                if i < len(t_params) - 1:
                    th = torch.relu(th)
            t_loss = torch.nn.functional.mse_loss(th, y_t)
            t_loss.backward()
            t_losses.append(t_loss.item())
            with torch.no_grad():
                for w, b in t_params:
                    for p in (w, b):
                        assert p.grad is not None
                        p -= lr * p.grad
                        p.grad = None

    assert [k.capsule.name for k in s.selected] == [
        "reference.reshape",
        "reference.permute",
        "reference.matmul",
        "reference.broadcast",
        "reference.add",
        "reference.relu",
        "reference.mse_loss",
    ]
    assert all(k.capsule.provider is Provider.REFERENCE for k in s.selected)
    np.testing.assert_allclose(losses, t_losses, rtol=1e-5, atol=1e-7)
    assert losses[-1] < 0.5 * losses[0]


def test_exiting_sessions_out_of_order_is_refused() -> None:
    """Manual ``__exit__`` calls out of order would leave a closed session current."""
    outer, inner = tl.session("checked_cpu"), tl.session("fast_cpu")
    outer.__enter__()
    inner.__enter__()
    with pytest.raises(SessionError, match="not the innermost active one"):
        outer.__exit__(None, None, None)
    assert tl.current_session() is inner
    inner.__exit__(None, None, None)
    outer.__exit__(None, None, None)
    assert tl.current_session() is not outer and tl.current_session() is not inner
    already = r"not active in this thread or asyncio task \(never entered here, or already exited"
    with pytest.raises(SessionError, match=already):
        outer.__exit__(None, None, None)  # already exited (review61 F7: not "not the innermost")


def test_the_same_session_may_be_nested() -> None:
    s = tl.session("checked_cpu")
    with s, s:
        assert tl.current_session() is s
    assert tl.current_session() is not s


@pytest.mark.parametrize("seed", [-1, 2**64, 1.5, True, "3", None])
def test_session_seed_is_checked_when_opened(seed: object) -> None:
    accepted = r"is not accepted \(accepted: an integer in \[0, 2\*\*64 - 1\]\)"
    with pytest.raises(SessionTypeError, match=rf"seed .* {accepted}"):
        tl.session("checked_cpu", seed=seed)  # type: ignore[arg-type]


def test_session_show_backend_must_be_a_bool() -> None:
    with pytest.raises(SessionTypeError, match="show_backend must be a bool, got 'yes'"):
        tl.session("checked_cpu", show_backend="yes")  # type: ignore[arg-type]
    assert tl.session("checked_cpu", seed=np.uint64(2**64 - 1)).seed == 2**64 - 1


def test_session_show_backend_takes_a_numpy_bool() -> None:
    assert tl.session("checked_cpu", show_backend=np.False_).show_backend is False


def test_a_sessions_profile_and_seed_are_fixed_once_it_has_accepted_kernels() -> None:
    """review152 F1: assigning ``profile`` left the kernels accepted under the old one running (and
    no-grad ops accepted under it) while the session, trainers and checkpoints named the new one."""
    s = tl.session("libtorch_forward_cpu", seed=3)
    q = tl.tensor(np.random.default_rng(0).random((1, 2, 3, 4)))
    with s:
        tl.scaled_dot_product_attention(q, q, q)
        with pytest.raises(AttributeError, match=r"^Session\.profile is fixed when the session opens .*"
                           r"so 'checked_cpu' was not assigned; open a new session instead: "
                           r"torchlean\.session\('checked_cpu'\)$"):
            s.profile = profiles.get("checked_cpu")  # type: ignore[assignment]
        with pytest.raises(AttributeError, match=r"so 'mine' was not assigned; .*<your BackendProfile>"):
            s.profile = dataclasses.replace(profiles.get("checked_cpu"), name="mine")  # type: ignore[assignment]
        seed_refusal = r"^Session\.seed is fixed .* so 4 was not assigned; .*seed=4\) "
        with pytest.raises(AttributeError, match=seed_refusal + r"\(to move along this session's random "
                           r"stream, set its random_counter\)$"):
            s.seed = 4  # type: ignore[assignment]
        # a changed copy keeps its shipped name; a bad seed is not echoed (review154 L4)
        with pytest.raises(AttributeError, match=r"so .checked_cpu. was not .*<your BackendProfile>\)$"):
            s.profile = profiles.get("checked_cpu").with_vjp_mode("none")  # type: ignore[assignment]
        with pytest.raises(AttributeError, match=re.escape("seed=<an integer in [0, 2**64)>) (to move")):
            s.seed = 2**70  # type: ignore[assignment]
        after = tl.scaled_dot_product_attention(q, q, q)
    assert (s.profile.name, s.seed) == ("libtorch_forward_cpu", 3)
    assert after.produced_by is not None and after.produced_by.capsule.name == "libtorch.sdpa_forward"
    s.show_backend = False  # printing is not part of the record: it stays a setting


def test_a_profile_that_can_select_nothing_is_refused_when_the_session_opens() -> None:
    """Beyond the original's session check (a capsule for the device): an availability that admits
    none of the profile's capsules there, or a policy that refuses every one it admits (an ``only``
    preference for a provider it admits none of; trust), is refused before any op runs, naming the
    contradiction (review24 audit F7, diff F2); before, every op failed at its first use with
    ``no admissible kernel capsule``."""
    from torchlean.backend.policy import ProviderPreference

    base = profiles.get("checked_cpu")
    only = dataclasses.replace(base.policy, provider=ProviderPreference.only(Provider.ATEN))
    only_aten = dataclasses.replace(base, name="only_aten", policy=only)
    no_provider = dataclasses.replace(base, name="no_provider", availability=Availability((Device.CPU,), ()))
    strict = profiles.get("libtorch_forward_strict_cpu")
    # its one libtorch capsule is trusted-external, which assurance checked refuses (review24 diff F2)
    libtorch_policy = dataclasses.replace(strict.policy, provider=ProviderPreference.only("libtorch"))
    only_libtorch = dataclasses.replace(strict, name="only_libtorch", policy=libtorch_policy)
    # review211 F5: the aten capsules are among its modules, but its availability leaves them out
    undeclared = dataclasses.replace(only_aten, name="undeclared",
                                     capsule_modules=profiles.get("fast_cpu").capsule_modules)
    opened = []
    for profile, reason in (
        (only_aten, "backend profile `only_aten` refuses every capsule its availability admits for device "
                    "`cpu` (provider preference: provider reference is excluded by only aten: reference.abs, "
                    "reference.add and 43 more)"),
        (undeclared, "backend profile `undeclared` refuses every capsule its availability admits for device "
                     "`cpu` (provider preference: provider reference is excluded by only aten: "
                     "reference.abs, reference.add and 43 more); its capsule modules hold aten capsules for "
                     "device `cpu`, but its availability does not declare provider aten (declared: "
                     "reference, torchlean)"),
        (only_libtorch, "backend profile `only_libtorch` refuses every capsule its availability admits for "
                        "device `cpu` (provider preference: provider reference is excluded by only libtorch: "
                        "reference.abs, reference.add and 43 more; trust: trusted-external is rejected by "
                        "assurance checked: libtorch.sdpa_forward)"),
        (no_provider, "backend profile `no_provider`'s availability admits none of its capsules for device "
                      "`cpu` (declared devices: cpu; providers: none; its capsules there are of providers "
                      "reference)"),
    ):
        assert profile.selection_fault() == reason
        with pytest.raises(SessionError) as info, tl.session(profile):
            opened.append(profile.name)
        pointer = "; profile.explain(op) names each capsule of an op and why it is refused"  # review224 F2
        assert str(info.value) == f"torch eager session: {reason}{pointer}"
    assert opened == []
    # a profile that can select for inference only (backend-vjp on cpu: no cpu capsule offers
    # one) opens: under no_grad its ops run
    backend_vjp = dataclasses.replace(base, policy=dataclasses.replace(base.policy, vjp_mode="backend-vjp"))
    assert backend_vjp.selection_fault() is None
    with tl.session(backend_vjp), tl.no_grad():
        assert tl.relu(tl.tensor([-1.0, 2.0])).numpy().tolist() == [0.0, 2.0]
    # the same preference with aten's module admitted selects aten capsules: no fault
    with_aten = dataclasses.replace(profiles.get("fast_cpu"), policy=only)
    assert with_aten.selection_fault() is None
    with tl.session(with_aten) as s:
        tl.relu(tl.tensor([1.0]))
    assert [k.capsule.name for k in s.selected] == ["aten.relu"]


@pytest.mark.parametrize("how", ["pickle", "deepcopy", "copy"])
def test_a_session_refuses_pickle_and_copies_saying_to_open_one_in_the_worker(how: str) -> None:
    """review61 F6: it failed with ``cannot pickle '_thread._local' object``."""
    import copy
    import pickle

    fresh = tl.session("fast_cpu", seed=7)
    used = tl.session("checked_cpu")
    with used:
        tl.relu(tl.tensor(np.ones(2)))
    refuse = {"pickle": pickle.dumps, "deepcopy": copy.deepcopy, "copy": copy.copy}[how]
    for s, opened in (
        (fresh, "torchlean.session('fast_cpu', seed=7)"),
        (used, "torchlean.session('checked_cpu', seed=0)"),
    ):
        with pytest.raises(TypeError) as caught:
            refuse(s)
        message = str(caught.value)
        assert message.startswith("Session cannot be copied or pickled: ") and "_thread" not in message
        assert "cannot cross process boundaries" in message
        assert f"open a session in the worker: {opened}" in message


def test_exiting_a_session_never_entered_says_so() -> None:
    """review61 F7: the message said "not the innermost active one" for a session never entered."""
    s = tl.session("checked_cpu")
    never = (r"not active in this thread or asyncio task \(never entered here, or already exited; sessions "
             r"are per thread and task")
    with pytest.raises(SessionError, match=never):
        s.__exit__(None, None, None)
    errors: list[str] = []
    with s:  # entered in this thread, exited in another: refused there, still current here

        def other() -> None:
            try:
                s.__exit__(None, None, None)
            except SessionError as error:
                errors.append(str(error))

        thread = threading.Thread(target=other)
        thread.start()
        thread.join()
        assert tl.current_session() is s
    assert len(errors) == 1 and "not active in this thread or asyncio task" in errors[0]


def test_no_grad_exit_without_enter_in_this_thread_is_a_clear_error() -> None:
    """review61 F7: ``IndexError: pop from empty list`` (torch's no_grad: ``AttributeError: prev``)."""
    message = (r"^no_grad\(\) \(a GradMode\): __exit__ without a matching __enter__ in this thread or "
               r"asyncio task \(never entered, already exited, or entered in another thread or task: a grad "
               r"mode is per thread and task\); use a `with no_grad\(\):` block$")
    with pytest.raises(RuntimeError, match=message):
        tl.no_grad().__exit__(None, None, None)
    with pytest.raises(RuntimeError, match=r"^enable_grad\(\) \(a GradMode\): __exit__ without"):
        tl.enable_grad().__exit__(None, None, None)
    ng = tl.no_grad()
    ng.__enter__()
    errors: list[BaseException] = []

    def other() -> None:
        try:
            ng.__exit__(None, None, None)
        except RuntimeError as error:
            errors.append(error)

    thread = threading.Thread(target=other)
    thread.start()
    thread.join()
    assert len(errors) == 1 and re.match(message, str(errors[0]))
    assert not tl.is_grad_enabled()  # this thread's entry is untouched
    ng.__exit__(None, None, None)
    assert tl.is_grad_enabled()
    with pytest.raises(RuntimeError, match="without a matching __enter__"):
        ng.__exit__(None, None, None)  # already exited


def test_no_grad_exit_in_another_asyncio_task_is_a_clear_error() -> None:
    """An entry made in one task and exited in another: the task that entered it left its entry
    open in its own context (the creator never entered it); a task created inside the block
    inherits the creator's entry, whose token belongs to the creator's context."""
    import asyncio

    ng = tl.no_grad()

    async def enter() -> None:
        ng.__enter__()

    async def exit_here() -> str:
        try:
            ng.__exit__(None, None, None)
        except RuntimeError as error:
            return str(error)
        return "no error"

    async def main() -> tuple[str, str, bool]:
        await asyncio.create_task(enter())  # a task runs in a copy of the context
        entered_elsewhere = await exit_here()
        with ng:
            inherited = await asyncio.create_task(exit_here())
            still_off = not tl.is_grad_enabled()
        return entered_elsewhere, inherited, still_off

    entered_elsewhere, inherited, still_off = asyncio.run(main())
    assert re.match(r"^no_grad\(\) \(a GradMode\): __exit__ without a matching __enter__ in this thread or "
                    r"asyncio task \(never entered, already exited, or entered in another thread or task",
                    entered_elsewhere)
    assert re.match(r"^no_grad\(\) \(a GradMode\): __exit__ in another asyncio task or context than its "
                    r"__enter__", inherited)
    assert still_off
    assert tl.is_grad_enabled()


def test_one_session_and_one_grad_mode_object_serve_overlapping_asyncio_tasks() -> None:
    """review77 F3: one ``Session`` (or ``no_grad()``) object entered by two tasks whose blocks
    overlap failed at the first exit (a per-thread record of entries, undone in the wrong task).
    Each task now undoes its own entry, and each finds what it had before entering."""
    import asyncio

    shared, ng = tl.session("fast_cpu"), tl.no_grad()
    seen: dict[str, object] = {}

    async def worker(name: str, inside: asyncio.Event, leave: asyncio.Event) -> None:
        before = tl.current_session()
        with shared, ng:
            seen[f"{name} inside"] = (tl.current_session() is shared, tl.is_grad_enabled())
            inside.set()
            await leave.wait()
        seen[f"{name} after"] = (tl.current_session() is before, tl.is_grad_enabled())

    async def main() -> None:
        a_in, a_leave, b_in, b_leave = (asyncio.Event() for _ in range(4))
        a = asyncio.create_task(worker("a", a_in, a_leave))
        await a_in.wait()
        b = asyncio.create_task(worker("b", b_in, b_leave))
        await b_in.wait()
        a_leave.set()  # a entered first and leaves first, while b is still inside
        await a
        b_leave.set()
        await b

    asyncio.run(main())
    assert seen == {
        "a inside": (True, False), "b inside": (True, False),
        "a after": (True, True), "b after": (True, True),
    }
    assert tl.current_session() is not shared and tl.is_grad_enabled()


def test_a_capsule_the_gate_refuses_is_noted_by_explain_and_plan_report_as_the_session_refuses_it() -> None:
    """review108 F1: under a stricter ``AssurancePolicy`` of your own (the README's way to make
    stricter demands), the planner selects ``aten.relu`` and the gate refuses its test-suite
    evidence; explain said "selected" with no note, plan_report no note, and the session's note
    sent the user to explain. Now both say what the session does, with the gate's reasons."""
    import dataclasses

    from torchlean.backend.contracts import ContractEvidence, EvidenceKind
    from torchlean.backend.policy import AssurancePolicy

    @dataclasses.dataclass(frozen=True, slots=True)
    class NoAtenSuites(AssurancePolicy):
        def accepts_evidence(self, evidence: ContractEvidence) -> bool:
            if evidence.kind is EvidenceKind.TEST_SUITE and "aten" in str(evidence.name):
                return False
            return AssurancePolicy.accepts_evidence(self, evidence)

    fast = profiles.get("fast_cpu")
    strict = dataclasses.replace(
        fast, name="strict_fast", policy=dataclasses.replace(fast.policy, assurance=NoAtenSuites())
    )
    note = (
        "note: the acceptance gate refuses aten.relu under this profile's policy (aten.relu has rejected "
        "value evidence for relu: covered by test suite tests/runtime/test_aten_differential.py; "
        "aten.relu has rejected vjp evidence for relu: covered by test suite "
        "tests/runtime/test_aten_gradients.py); a session refuses it before relu runs"
    )
    assert strict.explain("relu").splitlines()[-2:] == [f"  {note}", "result: relu -> aten.relu"]
    assert strict.plan_report(["relu"]).splitlines()[-1] == f"    {note}"
    with tl.session(strict), pytest.raises(SessionError) as info:
        tl.relu(tl.tensor([1.0]))
    assert "aten.relu has rejected value evidence for relu" in str(info.value)
    assert info.value.__notes__[0] == (
        "under profile strict_fast; profile.explain('relu') says why each capsule was not admissible or is "
        "refused"
    )
    for shipped in profiles.profiles():  # a shipped profile's capsules pass its gate: no such note
        assert "acceptance gate refuses" not in shipped.plan_report(["relu", "matmul", "softmax"])


def test_an_assurance_subclass_looser_than_its_checked_label_is_refused() -> None:
    """review141 F2: a subclass admitting trusted-external capsules or trusted-boundary evidence
    under the label ``checked`` made every record call a run on a trusted boundary checked."""
    from torchlean.backend.contracts import ContractEvidence
    from torchlean.backend.fields import BackendValueError
    from torchlean.backend.policy import AssurancePolicy
    from torchlean.backend.vocabulary import TrustLevel

    @dataclasses.dataclass(frozen=True, slots=True)
    class LaxTrust(AssurancePolicy):
        def accepts_trust(self, level: TrustLevel) -> bool:
            return True

    @dataclasses.dataclass(frozen=True, slots=True)
    class LaxEvidence(AssurancePolicy):
        def accepts_evidence(self, evidence: ContractEvidence) -> bool:
            return True

    base = profiles.get("libtorch_forward_cpu").policy
    for lax, admits in ((LaxTrust(), "trusted-external capsules (accepts_trust)"),
                        (LaxEvidence(), "trusted-boundary evidence (accepts_evidence)")):
        with pytest.raises(BackendValueError, match=(
            rf"^KernelPolicy\.assurance: {type(lax).__name__} is labelled checked \(allow_trusted_external="
            rf"False\) but admits {re.escape(admits)}; a checked policy admits neither")):
            dataclasses.replace(base, assurance=lax)
    # the label that says so is accepted, and so is a looser subclass labelled external
    external = dataclasses.replace(base, assurance=LaxTrust(allow_trusted_external=True))
    assert external.assurance.label == "external"


def test_the_checked_label_is_a_ceiling_no_assurance_subclass_lifts() -> None:
    """review145 F3: the probe was a sample: a subclass that overrides ``label``, that admits
    boundary evidence except the probe's, or that raises in its checks got through. ``label`` may
    not be overridden, a raising check is a policy error, and the planner and the gate refuse
    trusted-external capsules and trusted-boundary evidence without ``allow_trusted_external``
    whatever the subclass answers."""
    from torchlean.backend.audit import rejected_reports
    from torchlean.backend.capsule import allowed_by
    from torchlean.backend.contracts import ContractEvidence, EvidenceKind
    from torchlean.backend.fields import BackendValueError
    from torchlean.backend.policy import AssurancePolicy
    from torchlean.backend.vocabulary import TrustLevel

    @dataclasses.dataclass(frozen=True, slots=True)
    class Relabel(AssurancePolicy):
        @property
        def label(self) -> str:
            return "checked"

    @dataclasses.dataclass(frozen=True, slots=True)
    class Raises(AssurancePolicy):
        def accepts_trust(self, level: TrustLevel) -> bool:
            raise NotImplementedError("no external here")

    @dataclasses.dataclass(frozen=True, slots=True)
    class DodgesTheProbe(AssurancePolicy):
        def accepts_evidence(self, evidence: ContractEvidence) -> bool:
            dodged = evidence.kind is EvidenceKind.TRUSTED_BOUNDARY and "a boundary" not in str(evidence.name)
            return dodged or AssurancePolicy.accepts_evidence(self, evidence)

    base = profiles.get("libtorch_forward_cpu").policy
    with pytest.raises(BackendValueError, match=r"^KernelPolicy\.assurance: Relabel overrides label"):
        dataclasses.replace(base, assurance=Relabel(allow_trusted_external=True))
    with pytest.raises(BackendValueError, match=r"Raises\.accepts_trust/accepts_evidence raised "
                                                r"NotImplementedError: no external here"):
        dataclasses.replace(base, assurance=Raises())
    dodging = dataclasses.replace(base, assurance=DodgesTheProbe())  # passes the probe
    planned = profiles.get("libtorch_forward_cpu").plan_ops(["scaled_dot_product_attention"])
    sdpa = next(k.capsule for k in planned.kernels)
    assert sdpa.trust_level is TrustLevel.TRUSTED_EXTERNAL
    assert not allowed_by(dodging, sdpa)
    boundary = [r for r in report_rows(sdpa) if r.evidence.kind is EvidenceKind.TRUSTED_BOUNDARY]
    assert boundary and rejected_reports(dodging.assurance, boundary) == tuple(boundary)
    assert dodging.assurance.accepts_evidence(boundary[0].evidence)  # what the subclass says


def report_rows(capsule: KernelCapsule) -> tuple[Any, ...]:
    from torchlean.backend.audit import KernelAudit

    return KernelAudit.of(capsule.op, capsule).obligation_reports()


def test_the_session_note_names_the_cli_way_for_a_shipped_profile_only() -> None:
    from torchlean.autograd.session import _explain_cli
    from torchlean.backend.vocabulary import BackendOp

    assert _explain_cli(profiles.get("fast_cpu"), BackendOp.RELU) == (
        " (CLI: torchlean explain --profile fast_cpu relu)"
    )
    import dataclasses

    assert _explain_cli(dataclasses.replace(profiles.get("fast_cpu"), name="mine"), BackendOp.RELU) == ""
