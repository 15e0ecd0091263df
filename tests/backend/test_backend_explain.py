"""``explain``: every registered capsule with the first condition it fails (DESIGN.md §1.8)."""

from __future__ import annotations

import dataclasses
import re

import pytest
from backend_builders import make_capsule, misaligned

from torchlean.autograd.session import Session
from torchlean.backend import profiles
from torchlean.backend.availability import Availability
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import SessionError
from torchlean.backend.planner import explain_op
from torchlean.backend.policy import AssurancePolicy, KernelPolicy, ProviderPreference
from torchlean.backend.registry import CapsuleModule, RegistryError, all_modules
from torchlean.backend.vocabulary import BackendOp, Device, Provider, TrustLevel, VJPMode

B = BackendOp


def test_first_failed_condition_for_each_capsule() -> None:
    catalog = [
        make_capsule("a.unavailable_provider", B.RELU, provider=Provider.XLA),
        make_capsule("b.unavailable_device", B.RELU, device=Device.TPU),
        make_capsule("c.no_forward", B.RELU, forward=False, trust=TrustLevel.TRUSTED_EXTERNAL),
        misaligned(make_capsule("d.misaligned", B.RELU, trust=TrustLevel.TRUSTED_EXTERNAL)),
        make_capsule("e.external", B.RELU, trust=TrustLevel.TRUSTED_EXTERNAL, device=Device.CUDA),
        make_capsule("f.other_provider", B.RELU, provider=Provider.TORCHLEAN, device=Device.CUDA),
        make_capsule("g.cuda", B.RELU, device=Device.CUDA),
        make_capsule("h.forward_only", B.RELU, vjp_mode=VJPMode.NONE),
        make_capsule("i.tape", B.RELU),
        make_capsule("j.tape_too", B.RELU),
        make_capsule("k.other_op", B.ADD),
    ]
    policy = KernelPolicy(
        device=Device.CPU,
        provider=ProviderPreference.only(Provider.REFERENCE),
        assurance=AssurancePolicy.CHECKED,
    )
    availability = Availability((Device.CPU, Device.CUDA), (Provider.REFERENCE, Provider.TORCHLEAN))
    verdicts = {v.capsule.name: v.verdict.text for v in explain_op(policy, availability, catalog, B.RELU)}
    assert verdicts == {
        "a.unavailable_provider": "availability: provider xla is not declared by the profile "
        "(declared: reference, torchlean)",
        "b.unavailable_device": "availability: device tpu is not declared by the profile "
        "(declared: cpu, cuda)",
        "c.no_forward": "forward support: the capsule has no forward implementation",
        "d.misaligned": "contract alignment: the shape field holds the claim `relu forward refines its "
        "TorchLean semantics`",
        "e.external": "trust: trusted-external is rejected by assurance checked",
        "f.other_provider": "provider preference: provider torchlean is excluded by only reference",
        "g.cuda": "device: targets cuda, not requested cpu",
        "h.forward_only": "VJP mode: offers none, not requested torchlean-tape",
        "i.tape": "selected",
        "j.tape_too": "admissible",
    }


def test_explain_text_for_a_gap_and_for_an_invalid_registry() -> None:
    cpu = profiles.get("checked_cpu")
    text = cpu.explain(B.SELECTIVE_SCAN).splitlines()
    assert text == [
        "explain selective_scan under profile=checked_cpu device=cpu assurance=checked vjp=torchlean-tape "
        "provider=auto",
        "  native_cuda.selective_scan (native-cuda/cuda): availability: device cuda is not declared by the "
        "profile (declared: cpu)",
        "result: no admissible kernel capsule for op selective_scan on device cpu",
    ]
    relu = make_capsule("x.relu", B.RELU)
    broken = cpu.with_capsule_modules([CapsuleModule("x", (relu,)), CapsuleModule("x", (relu,))])
    lines = broken.explain(B.RELU).splitlines()
    assert lines[1] == "  registry invalid: duplicate backend capsule module `x`"
    # review34 F3: nothing is selected under an invalid registry (every plan fails), so no line or
    # result says so; the capsule the policy admits first is named admissible, not selected
    assert lines[-1] == (
        "result: nothing is selected for op relu: duplicate backend capsule module `x` (planning fails "
        "for any op)"
    )
    assert not [line for line in lines if line.endswith(": selected")]
    assert "  x.relu (reference/cpu): admissible, not selected (the registry is invalid)" in lines
    with pytest.raises(RegistryError, match="duplicate backend capsule module `x`"):
        broken.plan_ops([B.RELU])
    with pytest.raises(SessionError, match=(
        r"^torch eager session: backend profile `checked_cpu`'s registry is invalid: duplicate backend "
        r"capsule module `x` \(planning under it fails for every op"
    )):
        Session(broken)


def test_no_registered_capsule() -> None:
    profile = dataclasses.replace(profiles.get("checked_cpu"), capsule_modules=())
    lines = profile.explain(B.RELU).splitlines()[1:]
    assert lines[0] == "  no capsule is registered for op relu"
    assert lines[-1] == "result: no admissible kernel capsule for op relu on device cpu"
    # the shipped capsules this profile leaves out are still named, with where to find them
    assert lines[1].startswith(
        "  native_cuda.relu (native-cuda/cuda): not in this profile's capsule modules (module native-cuda; "
        "selected by: checked_cuda, libtorch_forward_cuda, libtorch_forward_strict)"
    )
    assert [line.split()[0] for line in lines[1:-1]] == ["native_cuda.relu", "reference.relu", "aten.relu"]


def test_capsules_outside_the_profile_are_named_with_the_profiles_that_select_them() -> None:
    """``checked_cpu`` does not include the opt-in ``aten`` module: ``explain matmul`` still names
    ``aten.matmul`` and says which shipped profile selects it, before the result line; a profile
    whose modules hold a capsule of another device, or one its assurance refuses, is not named
    (review197 F2: "included by" named all four libtorch profiles for each sdpa capsule)."""
    lines = profiles.get("checked_cpu").explain(B.MATMUL).splitlines()
    assert lines[-2:] == [
        "  aten.matmul (aten/cpu): not in this profile's capsule modules "
        "(module aten; selected by: fast_cpu)",
        "result: matmul -> reference.matmul",
    ]
    names = [line.split()[0] for line in profiles.get("fast_cpu").explain(B.MATMUL).splitlines()[1:-1]]
    assert names == ["native_cuda.matmul", "reference.matmul", "aten.matmul"]  # nothing outside


def test_a_module_of_your_own_named_like_a_shipped_one_hides_none_of_its_capsules() -> None:
    """review152 F4: a module named ``aten`` holding only ``aten.relu`` hid ``aten.matmul``, which
    this profile leaves out; ``aten.relu`` itself is in the profile, so it is not listed outside."""
    aten = next(m for m in all_modules() if m.name == "aten")
    own = CapsuleModule("aten", [c for c in aten.capsules if c.op is B.RELU])
    profile = profiles.get("checked_cpu").with_capsule_modules([own])
    assert profile.explain(B.MATMUL).splitlines()[-2:] == [
        "  aten.matmul (aten/cpu): not in this profile's capsule modules "
        "(module aten; selected by: fast_cpu)",
        "result: matmul -> reference.matmul",
    ]
    assert "not in this profile's capsule modules" not in profile.explain(B.RELU).split("aten.relu")[-1]


STRICT_NOTE = (
    "scaled_dot_product_attention: {name} prefers provider libtorch, but libtorch.sdpa_forward is "
    "refused (trust: trusted-external is rejected by assurance checked); {chosen} runs instead"
)


def test_preference_notes_of_the_shipped_profiles() -> None:
    """Only the two strict profiles fall back from their preferred provider, for attention alone:
    their checked policy refuses the trusted-external LibTorch bridge (explain says the same)."""
    notes = {name: profiles.get(name).preference_notes(list(BackendOp)) for name in profiles.names()}
    assert notes == {
        "checked_cpu": (),
        "checked_cuda": (),
        "libtorch_forward_cuda": (),
        "libtorch_forward_strict": (
            STRICT_NOTE.format(name="libtorch_forward_strict", chosen="native_cuda.direct_attention"),
        ),
        "libtorch_forward_cpu": (),
        "libtorch_forward_strict_cpu": (
            STRICT_NOTE.format(name="libtorch_forward_strict_cpu", chosen="reference.attention"),
        ),
        "fast_cpu": (),  # its fallbacks to reference are ops without an aten capsule: nothing refused
    }
    strict = profiles.get("libtorch_forward_strict_cpu")
    explained = strict.explain("scaled_dot_product_attention")
    refusal = "libtorch.sdpa_forward (libtorch/cpu): trust: trusted-external is rejected by assurance checked"
    assert refusal in explained


def test_preference_notes_name_each_op_once_and_skip_unplannable_ops() -> None:
    strict = profiles.get("libtorch_forward_strict_cpu")
    attention = BackendOp.SCALED_DOT_PRODUCT_ATTENTION
    assert strict.preference_notes([attention, "relu", "selective_scan", attention.label]) == (
        STRICT_NOTE.format(name="libtorch_forward_strict_cpu", chosen="reference.attention"),
    )
    assert strict.preference_notes([]) == ()


def test_preference_notes_when_the_preferred_provider_is_not_available() -> None:
    fast = profiles.get("fast_cpu")
    hidden = dataclasses.replace(fast, availability=Availability((Device.CPU,), (Provider.REFERENCE,)))
    assert hidden.preference_notes(["relu", "smooth_max_pool"]) == (
        "relu: fast_cpu prefers provider aten, but aten.relu is refused (availability: provider aten is "
        "not declared by the profile (declared: reference)); reference.relu runs instead",
    )
    only = dataclasses.replace(
        fast, policy=dataclasses.replace(fast.policy, provider=ProviderPreference.only(Provider.ATEN))
    )
    assert only.preference_notes(["relu"]) == ()  # under only, nothing else could run


def test_no_preference_note_when_a_capsule_of_the_preferred_provider_is_selected() -> None:
    """fast_cpu prefers aten; a forward-only copy of aten.relu (another capsule of aten, refused
    under torchlean-tape) does not make a note: aten.relu, of the preferred provider, runs."""
    from torchlean.backend.contracts import vjp_unavailable
    from torchlean.backend.registry import aten_module

    relu = next(c for c in aten_module().capsules if c.op is BackendOp.RELU)
    copy = dataclasses.replace(
        relu,
        name="mylib.relu",
        vjp_mode=VJPMode.NONE,
        vjp_contract=vjp_unavailable(BackendOp.RELU, "Forward only."),
    )
    profile = profiles.get("fast_cpu").with_capsule_modules([CapsuleModule("mylib", (copy,))])
    assert profile.plan_ops(["relu"]).capsule_names == ("aten.relu",)
    assert profile.preference_notes(["relu"]) == ()


def test_explain_notes_no_claims_mismatch_for_a_capsule_that_is_not_selected() -> None:
    """A relabelled copy of aten.matmul in checked_cpu (aten is unavailable there, so the copy is
    never selected; reference.matmul runs): explain names no mismatch, as a session never runs it."""
    from torchlean.backend.contracts import NumericalPolicy, ReductionPolicy
    from torchlean.backend.registry import aten_module

    matmul = next(c for c in aten_module().capsules if c.op is BackendOp.MATMUL)
    relabelled = dataclasses.replace(
        matmul, name="mylib.matmul", numerical_policy=NumericalPolicy(ReductionPolicy.FIXED_LEFT)
    )
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (relabelled,))])
    text = profile.explain("matmul")
    assert "result: matmul -> reference.matmul" in text
    assert "note:" not in text and "claims otherwise" not in text, text


@pytest.mark.parametrize(
    ("profile", "op", "fallback"),
    [
        ("fast_cpu", "scatter_add", "reference.scatter_add"),
        ("fast_cpu", "hard_masked_softmax", "reference.hard_masked_softmax"),
        ("libtorch_forward_strict_cpu", "relu", "reference.relu"),
    ],
)
def test_explain_notes_a_preferred_provider_without_a_capsule_for_the_op(
    profile: str, op: str, fallback: str
) -> None:
    """Under ``prefer``, explain says when the preferred provider has no capsule at all for the op
    on the profile's device (review47 F4), before the result line."""
    lines = profiles.get(profile).explain(op).splitlines()
    preferred = profiles.get(profile).policy.provider.provider
    assert preferred is not None
    assert lines[-2:] == [
        f"  note: preferred provider {preferred.label} has no capsule for {op} on cpu; "
        f"{fallback} runs instead",
        f"result: {op} -> {fallback}",
    ]


@pytest.mark.parametrize(
    ("profile", "op"),
    [
        ("fast_cpu", "relu"),  # aten.relu is selected
        ("libtorch_forward_strict_cpu", "scaled_dot_product_attention"),  # libtorch's is refused, not absent
        ("checked_cpu", "scatter_add"),  # no preference
    ],
)
def test_no_absent_provider_note_where_the_preferred_provider_has_a_capsule(profile: str, op: str) -> None:
    assert "has no capsule for" not in profiles.get(profile).explain(op)


def test_the_absent_provider_note_says_when_the_capsule_is_outside_the_profiles_modules() -> None:
    """review49 F4: a custom profile that prefers aten without aten's module: aten.relu exists (the
    line above the note names it), so the note says it is absent from this profile's modules."""
    checked = profiles.get("checked_cpu")
    custom = profiles.BackendProfile(
        "prefer_aten_without_its_module",
        KernelPolicy(Device.CPU, ProviderPreference.prefer(Provider.ATEN), AssurancePolicy.CHECKED),
        Availability(devices=(Device.CPU,), providers=(Provider.REFERENCE, Provider.ATEN)),
        checked.capsule_modules,
    )
    lines = custom.explain("relu").splitlines()
    assert "  aten.relu (aten/cpu): not in this profile's capsule modules" in lines[-3]
    assert lines[-2] == (
        "  note: preferred provider aten has no capsule for relu on cpu in this profile's capsule "
        "modules; reference.relu runs instead"
    )


def test_a_planning_refusal_notes_each_missing_ops_explain() -> None:
    """review134 F4: ``plan_ops`` (and ``plan_graph``) refused with the original's message, which
    names only the op; each missing op's ``explain`` now follows as a note, naming the capsule
    and the rule that refused it, as a session's refusal does. The message itself is unchanged."""
    from torchlean.backend.errors import PlanningError
    from torchlean.backend.profiles import BackendProfile

    lt = profiles.get("libtorch_forward_cpu")
    policy = KernelPolicy(Device.CPU, ProviderPreference.only(Provider.LIBTORCH), AssurancePolicy.CHECKED)
    strict = BackendProfile("lab_only_libtorch", policy, lt.availability, lt.capsule_modules)
    with pytest.raises(PlanningError) as caught:
        strict.plan_ops(["scaled_dot_product_attention", "relu"])
    assert str(caught.value) == (
        "no admissible kernel capsule for op scaled_dot_product_attention on device cpu\n"
        "no admissible kernel capsule for op relu on device cpu"
    )
    notes = caught.value.__notes__
    assert notes == [strict.explain("scaled_dot_product_attention"), strict.explain("relu")]
    assert (
        "  libtorch.sdpa_forward (libtorch/cpu): trust: trusted-external is rejected by assurance checked"
        in notes[0].splitlines()
    )
    excluded = (
        "  reference.relu (reference/cpu): provider preference: "
        "provider reference is excluded by only libtorch"
    )
    assert excluded in notes[1].splitlines()


@dataclasses.dataclass(frozen=True, slots=True)
class _TrustsNothing(AssurancePolicy):
    """A narrowing assurance of a lab's own: no trust level is enough."""

    def accepts_trust(self, level: TrustLevel) -> bool:
        return False


def test_a_trust_refusal_by_an_assurance_of_your_own_names_its_rule() -> None:
    """review152 F6: ``checked is rejected by assurance checked`` read as a contradiction; the
    subclass's rule is named. The shipped policies' verdicts keep the original's words."""
    base = profiles.get("checked_cpu")
    profile = dataclasses.replace(base, name="nothing",
                                  policy=dataclasses.replace(base.policy, assurance=_TrustsNothing()))
    refused = "trust: checked is rejected by assurance checked (_TrustsNothing.accepts_trust)"
    assert f"  reference.relu (reference/cpu): {refused}" in profile.explain(B.RELU).splitlines()
    with pytest.raises(SessionError, match=re.escape(f"({refused}: reference.abs, reference.add and ")):
        Session(profile)
    strict = profiles.get("libtorch_forward_strict_cpu")
    base_rule = ("  libtorch.sdpa_forward (libtorch/cpu): trust: trusted-external is rejected by assurance "
                 "checked")
    assert base_rule in strict.explain(B.SCALED_DOT_PRODUCT_ATTENTION).splitlines()
    # a subclass that inherits the rule is not named as its author (review154 L3)
    inherits = dataclasses.replace(strict, policy=dataclasses.replace(strict.policy, assurance=_NoSuites()))
    assert base_rule in inherits.explain(B.SCALED_DOT_PRODUCT_ATTENTION).splitlines()


@dataclasses.dataclass(frozen=True, slots=True)
class _NoSuites(AssurancePolicy):
    """A narrowing assurance that refuses test-suite evidence and inherits the trust rule."""

    def accepts_evidence(self, evidence: object) -> bool:
        return False


def test_the_sdpa_capsules_outside_checked_cpu_name_only_the_profile_that_selects_each() -> None:
    """review197 F2: the CUDA capsule was said to be included by the two CPU libtorch profiles, and
    the CPU one by libtorch_forward_strict_cpu, whose checked assurance refuses it."""
    lines = profiles.get("checked_cpu").explain(B.SCALED_DOT_PRODUCT_ATTENTION).splitlines()
    outside = [line for line in lines if "not in this profile's capsule modules" in line]
    assert outside == [
        "  libtorch.sdpa_forward (libtorch/cuda): not in this profile's capsule modules (module libtorch; "
        "selected by: libtorch_forward_cuda)",
        "  libtorch.sdpa_forward (libtorch/cpu): not in this profile's capsule modules (module libtorch; "
        "selected by: libtorch_forward_cpu)",
        "  aten.scaled_dot_product_attention (aten/cpu): not in this profile's capsule modules (module aten; "
        "selected by: fast_cpu)",
    ]


def _forward_only_relu(name: str, summary: str | None = None) -> KernelCapsule:
    """A forward-only copy of reference.relu (VJP mode none), its value summary replaced by
    ``summary`` when given (a claim the reference handler does not keep)."""
    from torchlean.backend.contracts import vjp_unavailable

    relu = next(c for m in all_modules() for c in m.capsules if c.name == "reference.relu")
    copy = dataclasses.replace(
        relu, name=name, vjp_mode=VJPMode.NONE, vjp_contract=vjp_unavailable(BackendOp.RELU, "Forward only.")
    )
    if summary is not None:
        value = dataclasses.replace(copy.value_contract, summary=summary)
        copy = dataclasses.replace(copy, value_contract=value)
    return copy


def test_explain_and_plan_report_name_what_predict_selects_and_whether_a_session_refuses_it() -> None:
    """review211 F1: a forward-only capsule is selected only without gradients (predict,
    evaluate, no_grad()); explain and plan_report looked at the training policy alone, so one whose
    claims its handler does not keep got no note, training ran, and the first predict was refused."""
    import numpy as np

    import torchlean as tl

    wrong = _forward_only_relu("mylib.relu_fwd", "Faster ReLU.")
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (wrong,))])
    text = profile.explain("relu")
    selected = ("  note: without gradients (predict, evaluate, no_grad()) mylib.relu_fwd is selected for "
                "relu instead (it offers VJP mode none)")
    assert selected in text.splitlines()
    assert "  note: mylib.relu_fwd would run on the handler of reference.relu but claims otherwise (value " \
        "contract: 'Faster ReLU.'" in text
    assert text.splitlines()[-1] == "result: relu -> reference.relu"
    report = profile.plan_report(["relu"])
    assert "    note: without gradients (predict, evaluate, no_grad()) mylib.relu_fwd is selected" in report
    assert "a session refuses it before relu runs" in report
    with tl.session(profile), tl.no_grad(), pytest.raises(SessionError, match=r"mylib\.relu_fwd"):
        tl.relu(tl.tensor(np.ones(3)))
    # a forward-only capsule that keeps its handler's claims: named, not refused; predict runs it
    right = _forward_only_relu("mylib.relu_fwd")
    profile = profiles.get("checked_cpu").with_capsule_modules([CapsuleModule("mylib", (right,))])
    text = profile.explain("relu")
    assert selected in text.splitlines() and "claims otherwise" not in text
    with tl.session(profile) as session, tl.no_grad():
        tl.relu(tl.tensor(np.ones(3)))
    assert [kernel.capsule.name for kernel in session.selected] == ["mylib.relu_fwd"]


def test_shipped_profiles_select_the_same_capsules_without_gradients() -> None:
    """The no-grad note never appears for a shipped profile: each selects the same capsule for
    every op with and without gradients."""
    for name in profiles.names():
        profile = profiles.get(name)
        for op in BackendOp:
            assert "without gradients" not in profile.explain(op), (name, op)
