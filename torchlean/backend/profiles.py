"""Backend profiles: a name, a kernel policy, an availability declaration and capsule modules.

Source: the seed chapter ("Kernel Capsules", "Forward And Backward Ownership"); anchor-backend.md
§1.25, §2.6, §5 (Generation B) and DESIGN.md §1.8 (the two CPU LibTorch profiles and ``fast_cpu``,
which declares the ``aten`` provider available and prefers its torch CPU kernels).

===========================  ======  ================  ========  =========================
profile                      device  provider          assurance modules
===========================  ======  ================  ========  =========================
checked_cpu                  cpu     auto              checked   maintained
checked_cuda                 cuda    prefer torchlean  checked   maintained
libtorch_forward_cuda        cuda    prefer libtorch   external  maintained + libtorch
libtorch_forward_strict      cuda    prefer libtorch   checked   maintained + libtorch
libtorch_forward_cpu         cpu     prefer libtorch   external  maintained + libtorch
libtorch_forward_strict_cpu  cpu     prefer libtorch   checked   maintained + libtorch
fast_cpu                     cpu     prefer aten       checked   maintained + aten
===========================  ======  ================  ========  =========================

All use VJP mode ``torchlean-tape``.
"""

from __future__ import annotations

import contextlib
import dataclasses
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from torchlean.backend import report
from torchlean.backend.acceptance import GraphKernelPlanResult, accept_graph_kernel_plan, acceptance_failures
from torchlean.backend.availability import Availability
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.collector import collector_paused
from torchlean.backend.display import name_shown
from torchlean.backend.errors import PlanningError, UnknownLabelError
from torchlean.backend.fields import (
    BackendTypeError,
    describe,
    instance_field,
    iterable_argument,
    name_field,
    parse_member,
    tuple_field,
)
from torchlean.backend.graph import GraphKernelPlan, GraphLike, check_graph, checked_plan_graph
from torchlean.backend.planner import (
    CapsuleVerdict,
    KernelPlan,
    PlannedKernel,
    explain_op,
    plan_ops_available,
    policy_verdict,
    requested_op,
    requested_ops,
)
from torchlean.backend.policy import AssurancePolicy, KernelPolicy, PreferenceKind, ProviderPreference
from torchlean.backend.registry import (
    CapsuleModule,
    all_modules,
    aten_module,
    built_in_claims_difference,
    check_guards,
    check_names,
    flatten,
    has_built_in_handler,
    libtorch_module,
    maintained_modules,
    module_validation_error,
    validate_modules,
)
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode, did_you_mean

__all__ = [
    "CHECKED_CPU",
    "CHECKED_CUDA",
    "FAST_CPU",
    "LIBTORCH_FORWARD_CPU",
    "LIBTORCH_FORWARD_CUDA",
    "LIBTORCH_FORWARD_STRICT",
    "LIBTORCH_FORWARD_STRICT_CPU",
    "BackendProfile",
    "cpu_counterpart",
    "get",
    "maintained_for_device",
    "names",
    "near_profile",
    "profiles",
]


def _some(names: Sequence[str]) -> str:
    """The first two capsule names in sorted order, then how many more: ``libtorch.sdpa_forward``,
    ``aten.abs, aten.add and 12 more``."""
    ordered = sorted(names)
    more = f" and {len(ordered) - 2} more" if len(ordered) > 2 else ""
    return ", ".join(ordered[:2]) + more


@dataclass(frozen=True, slots=True)
class BackendProfile:
    """A named request for kernels: policy, declared availability and capsule modules.

    Ops may be given as :class:`BackendOp` members or op labels wherever a method takes them.

    Every ``runtimeGuard`` evidence of a module other than the shipped ones must name a
    callable (DESIGN.md §1.3), as in :meth:`with_capsule_modules`: its module is imported here, so
    a plan report never cites a guard that does not exist.

    Raises:
        BackendTypeError: a field of the wrong type (``capsule_modules`` must be a tuple or list of
            :class:`CapsuleModule`; a list is stored as a tuple). BackendValueError: an empty name.
        RegistryError: a runtime guard name that does not resolve to a callable
            (:func:`torchlean.backend.registry.check_guards`); a capsule named like a shipped one
            of another op, provider or device (:func:`torchlean.backend.registry.check_names`).
    """

    name: str
    policy: KernelPolicy
    availability: Availability
    capsule_modules: tuple[CapsuleModule, ...] = field(default_factory=maintained_modules)

    def __post_init__(self) -> None:
        name_field(self, "name")
        instance_field(self, "policy", KernelPolicy)
        instance_field(self, "availability", Availability)
        tuple_field(self, "capsule_modules", CapsuleModule)
        shipped = all_modules()
        for module in self.capsule_modules:
            if not any(module is known for known in shipped):  # those are checked by a test
                check_guards(module)  # skips capsules equal to shipped ones (a copied profile)
                check_names(module)

    def __repr__(self) -> str:
        """Short: the name, the policy's device, assurance and VJP mode, and the module names (the
        full catalog runs to hundreds of kilobytes)."""
        modules = ", ".join(module.name for module in self.capsule_modules)
        policy = self.policy
        return (
            f"BackendProfile(name={self.name!r}, device={policy.device.label}, "
            f"assurance={policy.assurance.label}, vjp={policy.vjp_mode.label}, modules=[{modules}])"
        )

    def registry(self) -> tuple[KernelCapsule, ...]:
        """The flattened catalog (unfiltered by availability)."""
        return flatten(self.capsule_modules)

    def with_capsule_modules(self, modules: Iterable[CapsuleModule]) -> BackendProfile:
        """New modules first (in the given order), then every old module whose name they do not reuse.

        A same-named module therefore replaces the old one and gains priority. Duplicates *within*
        ``modules`` are kept here and rejected when planning. Every ``runtimeGuard`` evidence of the
        new modules must name a callable (DESIGN.md §1.3): the guard's module is imported here.

        Raises:
            BackendTypeError: ``modules`` is a single module, a string, a set or a mapping (their
                order decides selection: review168 F1), a 0-d array or tensor, or not iterable, or
                an entry is not a :class:`CapsuleModule` (a module's own entries are checked when it
                is built).
            BackendValueError: more than :data:`~torchlean.backend.fields.MOST_ITEMS` modules
                (:func:`~torchlean.backend.fields.ordered_items`: a stride-0 view of 2**40 entries
                is refused by its length, review239 F2).
            RegistryError: a runtime guard name that does not resolve to a callable
                (:func:`torchlean.backend.registry.check_guards`); a capsule named like a shipped
                one of another op, provider or device (:func:`torchlean.backend.registry.check_names`).
        """
        accepted = "an iterable of CapsuleModule"
        if isinstance(modules, CapsuleModule):
            raise BackendTypeError(
                f"with_capsule_modules expects {accepted}, got the single module `{modules.name}`; "
                "write [module]"
            )
        if isinstance(modules, str) or not isinstance(modules, Iterable):
            raise BackendTypeError(f"with_capsule_modules expects {accepted}, got {describe(modules)}")
        new = iterable_argument(modules, CapsuleModule, "with_capsule_modules: modules")
        new_names = {module.name for module in new}
        kept = tuple(module for module in self.capsule_modules if module.name not in new_names)
        return dataclasses.replace(self, capsule_modules=new + kept)

    def with_vjp_mode(self, mode: VJPMode) -> BackendProfile:
        """The same profile requesting VJP mode ``mode`` (``none`` for no-grad sessions)."""
        return dataclasses.replace(self, policy=dataclasses.replace(self.policy, vjp_mode=mode))

    def plan_ops(self, ops: Iterable[BackendOp | str]) -> KernelPlan:
        """Parse the request, validate the modules, then plan ``ops`` over the available capsules.

        ``ops`` is a sequence of :class:`BackendOp` members or op labels (``["matmul", "relu"]``).
        A bare string is refused, not taken as one op: ``plan_ops("relu")`` raises and says to
        write ``['relu']`` (:func:`torchlean.backend.planner.requested_ops`).

        Raises:
            BackendTypeError: ``ops`` is a string, a single op or not iterable, or an entry is
                neither a member nor a string. UnknownLabelError: an unknown op label.
            RegistryError: a duplicate module name or capsule identity.
            PlanningError: one ``no admissible kernel capsule for op {op} on device {device}``
                message per missing op (``.messages``, the original's), and per missing op a note
                (``__notes__``, which a traceback shows) with its :meth:`explain`: each capsule's
                reason, as a session's refusal gives them (review134 F4).
        """
        requested = requested_ops(ops)
        validate_modules(self.capsule_modules)
        with self._missing_explained():
            return plan_ops_available(self.policy, self.availability, self.registry(), requested)

    @contextlib.contextmanager
    def _missing_explained(self) -> Iterator[None]:
        """A :class:`PlanningError` raised inside gets each missing op's :meth:`explain` as a
        note, and goes on."""
        try:
            yield
        except PlanningError as error:
            for op in error.missing_ops:
                error.add_note(self.explain(op))
            raise

    def explain_verdicts(self, op: BackendOp | str) -> tuple[CapsuleVerdict, ...]:
        """One verdict per capsule registered for ``op`` (a member or its label) in the whole catalog.

        Raises:
            UnknownLabelError, BackendTypeError: as :func:`torchlean.backend.planner.requested_op`.
        """
        return explain_op(self.policy, self.availability, self.registry(), requested_op(op))

    def preference_notes(self, ops: Iterable[BackendOp | str]) -> tuple[str, ...]:
        """One line per op of ``ops`` (first occurrence order) whose selected capsule is not of the
        provider this profile prefers although a capsule of that provider for the op, on the
        profile's device, is registered: it was refused (by the policy, or not available). For
        ``libtorch_forward_strict_cpu``, attention:
        ``scaled_dot_product_attention: libtorch_forward_strict_cpu prefers provider libtorch, but
        libtorch.sdpa_forward is refused (trust: trusted-external is rejected by assurance checked);
        reference.attention runs instead``. Empty for ``auto`` and ``only`` preferences (under
        ``only`` nothing else can run) and for ops no capsule is selected for.

        A fallback that the preference allows is not an error; this says it aloud (PyTorch SDPA's
        users ask for it: reference/peers.md §5).

        Raises:
            BackendTypeError: a bare string or a single op (``write ['relu']``), as
                :func:`~torchlean.backend.planner.requested_ops` (review108 F5: the letters were
                read as ops); else as :meth:`explain_verdicts`.
        """
        preference = self.policy.provider
        preferred = preference.provider
        if preference.kind is not PreferenceKind.PREFER or preferred is None:
            return ()
        notes: list[str] = []
        for op in dict.fromkeys(requested_ops(ops)):
            verdicts = self.explain_verdicts(op)
            chosen = next((item.capsule for item in verdicts if item.verdict.status == "selected"), None)
            if chosen is None or chosen.provider is preferred:
                continue
            refused = next(
                (
                    item
                    for item in verdicts
                    if item.capsule.provider is preferred
                    and item.capsule.device is self.policy.device
                    and item.verdict.status not in ("selected", "admissible")
                ),
                None,
            )
            if refused is not None:
                notes.append(
                    f"{op.label}: {self.name} prefers provider {preferred.label}, but "
                    f"{refused.capsule.name} is refused ({refused.verdict.text}); {chosen.name} runs instead"
                )
        return tuple(notes)

    def explain(self, op: BackendOp | str) -> str:
        """Why each registered capsule for ``op`` is (not) selected; a registry error comes first.
        Shipped capsules for ``op`` outside this profile's modules (``aten.*``, ``libtorch.*``) follow,
        each naming the profiles that include its module, then a note when a session would refuse
        the selected capsule before it runs: no handler of this build has its op, provider and
        device (:func:`~torchlean.backend.registry.has_built_in_handler`), or it claims what the
        handler it would run on does not
        (:func:`~torchlean.backend.registry.built_in_claims_difference`), or the acceptance gate
        refuses it under the profile's policy (evidence its assurance rejects); then the result line.

        Source: DESIGN.md §1.8 ("why not" diagnostics, beyond the original), over the admissibility
        rules of anchor-backend.md §2.2.

        Raises:
            UnknownLabelError: an unknown op label. BackendTypeError: ``op`` is neither a
                :class:`BackendOp` nor a string (e.g. ``None``).
        """
        op = requested_op(op)
        verdicts = self.explain_verdicts(op)
        lines = report.explain_lines(self.name, self.policy, op, verdicts)
        error = module_validation_error(self.capsule_modules)
        if error is not None:  # planning fails for every op: nothing is selected (review34 F3)
            lines = [
                line.removesuffix(": selected") + ": admissible, not selected (the registry is invalid)"
                if line.endswith(": selected") else line
                for line in lines
            ]
            lines.insert(1, f"  registry invalid: {error}")
            lines[-1] = f"result: nothing is selected for op {op.label}: {error} (planning fails for any op)"
        lines[-1:-1] = self._outside_lines(op)
        if error is None and (absent := self._absent_preference_line(op, verdicts)) is not None:
            lines.insert(-1, absent)
        selected = [item.capsule for item in verdicts if item.verdict.status == "selected"]
        refusals = [] if error is not None else [_session_refusal(c, self.policy) for c in selected]
        for note in filter(None, refusals):
            lines.insert(-1, f"  note: {note}")
        if error is None:
            lines[-1:-1] = self._inference_lines(op, selected)
        return "\n".join(lines)

    def _inference_lines(self, op: BackendOp, selected: Sequence[KernelCapsule]) -> list[str]:
        """When this profile asks for VJPs and its no-grad twin (what ``predict``, ``evaluate``
        and ``no_grad()`` plan under: :meth:`with_vjp_mode` ``none``) selects another capsule
        for ``op`` (a forward-only one of your own), a note naming it, and a note when a session
        would refuse that one before it runs (review211 F1: a forward-only capsule whose claims
        differ from its handler's let training run and refused the first ``predict``)."""
        chosen = self._inference_choice(op)
        if chosen is None or chosen.identity in {capsule.identity for capsule in selected}:
            return []
        lines = [
            f"  note: without gradients (predict, evaluate, no_grad()) {chosen.name} is selected for "
            f"{op.label} instead (it offers VJP mode {chosen.vjp_mode.label})"
        ]
        refusal = _session_refusal(chosen, self.with_vjp_mode(VJPMode.NONE).policy)
        if refusal is not None:
            lines.append(f"  note: {refusal}")
        return lines

    def _inference_choice(self, op: BackendOp) -> KernelCapsule | None:
        """The capsule the no-grad twin of this profile selects for ``op`` when this profile asks
        for VJPs; None when it asks for none, or nothing is selected."""
        if self.policy.vjp_mode is VJPMode.NONE:
            return None
        verdicts = self.with_vjp_mode(VJPMode.NONE).explain_verdicts(op)
        return next((item.capsule for item in verdicts if item.verdict.status == "selected"), None)

    def _absent_preference_line(self, op: BackendOp, verdicts: Sequence[CapsuleVerdict]) -> str | None:
        """Under a ``prefer`` preference, a note when the preferred provider has no capsule for
        ``op`` on this profile's device in its modules, so another provider's runs (review47 F4)."""
        preference = self.policy.provider
        preferred = preference.provider
        if preference.kind is not PreferenceKind.PREFER or preferred is None:
            return None
        if any(v.capsule.provider is preferred and v.capsule.device is self.policy.device for v in verdicts):
            return None
        chosen = next((v.capsule.name for v in verdicts if v.verdict.status == "selected"), None)
        fallback = f"{chosen} runs instead" if chosen is not None else "nothing else is admissible"
        shipped = any(
            c.op is op and c.provider is preferred and c.device is self.policy.device
            for module in all_modules()
            for c in module.capsules
        )
        where = " in this profile's capsule modules" if shipped else ""  # review49 F4
        return (
            f"  note: preferred provider {preferred.label} has no capsule for {op.label} on "
            f"{self.policy.device.label}{where}; {fallback}"
        )

    def _outside_lines(self, op: BackendOp) -> list[str]:
        """One line per shipped capsule for ``op`` that this profile's modules leave out (those of
        the opt-in ``aten`` and ``libtorch`` modules), naming the shipped profiles that select it
        for ``op`` (not every profile whose modules hold it: one of another device, or whose
        assurance refuses it, never selects it: review197 F2). A capsule is inside when one of the
        profile's capsules has its identity, whatever its module is called (a module of your own
        named ``aten`` hid every shipped ``aten`` capsule: review152 F4)."""
        inside = {capsule.identity for module in self.capsule_modules for capsule in module.capsules}
        lines: list[str] = []
        for module in all_modules():
            for capsule in module.capsules:
                if capsule.op is op and capsule.identity not in inside:
                    selecting = [p.name for p in _PROFILES.values()
                                 if module in p.capsule_modules and _selects(p, op, capsule)]
                    by = "no shipped profile selects it"
                    if selecting:
                        by = f"selected by: {', '.join(selecting)}"
                    lines.append(
                        f"  {capsule.name} ({capsule.provider.label}/{capsule.device.label}): not in this "
                        f"profile's capsule modules (module {module.name}; {by})"
                    )
        return lines

    def plan_report(self, ops: Iterable[BackendOp | str]) -> str:
        """Summary line, boundary line and five lines per planned op (anchor-backend.md §2.14); a
        planned capsule a session would refuse before it runs (the gate refuses it, no handler of
        this build, or claims its handler does not keep: :meth:`explain`'s notes), or whose op the
        no-grad twin plans on another capsule (``predict``, ``evaluate``: with why a session would
        refuse that one), gets a ``  note:`` line after its five.

        Raises:
            BackendTypeError, UnknownLabelError, RegistryError, PlanningError: as :meth:`plan_ops`.
        """
        plan = self.plan_ops(ops)
        notes = {  # by identity: two capsules may share a name (review141 F1)
            kernel.capsule.identity: note
            for kernel in plan.kernels
            if (note := _session_refusal(kernel.capsule, self.policy)) is not None
        }
        for kernel in plan.kernels:  # what predict and evaluate run instead (review211 F1)
            inference = self._inference_lines(kernel.op, [kernel.capsule])
            if inference:
                earlier = notes.get(kernel.capsule.identity)
                later = "; ".join(line.removeprefix("  note: ") for line in inference)
                notes[kernel.capsule.identity] = later if earlier is None else f"{earlier}; {later}"
        return report.plan_report(self.name, self.policy, plan, notes)

    def plan_graph(self, graph: GraphLike) -> GraphKernelPlan:
        """Validate modules, check the graph is well formed, plan one capsule per kernel node.
        Python's cyclic collector is paused while the nodes are planned
        (:mod:`torchlean.backend.collector`: its collections doubled the time at 100k nodes).

        Raises:
            BackendTypeError: ``graph`` does not follow the IR protocol (no ``nodes`` or no
                callable ``check_well_formed``).
            RegistryError: invalid modules. TorchLeanError: a malformed graph (the IR's message).
            PlanningError: missing ops, each with its :meth:`explain` as a note (as :meth:`plan_ops`).
        """
        check_graph(graph)
        validate_modules(self.capsule_modules)
        with collector_paused(), self._missing_explained():
            return checked_plan_graph(self.policy, self.availability, self.registry(), graph)

    def accept_graph(self, graph: GraphLike) -> GraphKernelPlanResult:
        """Plan ``graph`` and run the gate on its groups under this profile's policy.

        Acceptance failures are returned in the result; planning errors (and a ``graph`` that is not
        an IR graph) raise as in :meth:`plan_graph`. Python's cyclic collector is paused during
        the call (:mod:`torchlean.backend.collector`), as in :meth:`plan_graph`.

        Acceptance is of the kernels, as in the original: the graph's structure is checked
        (:meth:`~torchlean.ir.graph.Graph.check_well_formed`, declared dimensions naturals among
        it), not whether its declared shapes agree with its ops (``relu`` of ``[4]`` declared
        ``[5, 5]`` is accepted); :func:`torchlean.ir.infer.check_shapes` says that, and the typed
        graph's executor runs it before any kernel (review117 F6).
        """
        with collector_paused():
            return accept_graph_kernel_plan(self.plan_graph(graph), self.policy)

    def summary(self) -> str:
        """``profile={name} device={device} assurance={assurance} vjp={vjp}``."""
        return report.summary_line(self.name, self.policy)

    def has_device_capsule(self) -> bool:
        """Whether any capsule of the unfiltered catalog targets the policy's device."""
        return any(capsule.device is self.policy.device for capsule in self.registry())

    def selection_fault(self) -> str | None:
        """Why this profile can select no capsule for any op on its device, even for inference,
        or None: its registry is invalid (a repeated module name or capsule identity, which the
        original's ``validateModules`` refuses at every plan), its availability admits none of its
        capsules for that device, or its policy
        (assurance, provider preference; the VJP mode aside, which inference does not ask) refuses
        every one it admits. A session refuses such a profile when it opens (every op would fail
        at its first use with ``no admissible kernel capsule``). Pure; the catalog's own check
        (:meth:`has_device_capsule`) comes first.
        ``backend profile `strict` refuses every capsule its availability admits for device `cpu`
        (trust: trusted-external is rejected by assurance checked: libtorch.sdpa_forward)``.
        """
        invalid = module_validation_error(self.capsule_modules)
        if invalid is not None:
            return (
                f"backend profile `{self.name}`'s registry is invalid: {invalid} (planning under it fails "
                "for every op; module names, and each capsule's name, op, provider and device, must be "
                "unique across its modules)"
            )
        device = self.policy.device
        on_device = [capsule for capsule in self.registry() if capsule.device is device]
        if not on_device:
            return None  # has_device_capsule's refusal
        admitted = self.availability.filter_capsules(on_device)
        if not admitted:
            declared = self.availability
            return (
                f"backend profile `{self.name}`'s availability admits none of its capsules for device "
                f"`{device.label}` (declared devices: {_labels(declared.devices)}; providers: "
                f"{_labels(declared.providers)}; its capsules there are of providers "
                f"{_labels(dict.fromkeys(capsule.provider for capsule in on_device))})"
            )
        inference = dataclasses.replace(self.policy, vjp_mode=VJPMode.NONE)
        reasons: dict[str, list[str]] = {}
        for capsule in admitted:
            verdict = policy_verdict(inference, capsule)
            if verdict is None:
                return None
            reasons.setdefault(verdict.text, []).append(capsule.name)
        # review224 F2: each reason with the capsules it refuses
        shown = [f"{text}: {_some(names)}" for text, names in reasons.items()]
        more = f"; and {len(shown) - 3} more" if len(shown) > 3 else ""
        return (
            f"backend profile `{self.name}` refuses every capsule its availability admits for device "
            f"`{device.label}` ({'; '.join(shown[:3])}{more}){self._undeclared_preference(on_device)}"
        )

    def _undeclared_preference(self, on_device: Sequence[KernelCapsule]) -> str:
        """For :meth:`selection_fault`: when the preferred provider's capsules are among the
        profile's on its device but its availability does not declare that provider, a clause
        saying so (review211 F5: ``only aten`` over ``Availability.cpu()`` read as if no ``aten``
        capsule existed); else ""."""
        preferred = self.policy.provider.provider
        if preferred is None or preferred in self.availability.providers:
            return ""
        if not any(capsule.provider is preferred for capsule in on_device):
            return ""
        return (
            f"; its capsule modules hold {preferred.label} capsules for device `{self.policy.device.label}`, "
            f"but its availability does not declare provider {preferred.label} (declared: "
            f"{_labels(self.availability.providers)})"
        )


def _selects(profile: BackendProfile, op: BackendOp, capsule: KernelCapsule) -> bool:
    """Whether ``profile`` selects ``capsule`` (by identity) for ``op``."""
    return any(v.capsule.identity == capsule.identity and v.verdict.status == "selected"
               for v in profile.explain_verdicts(op))


def _labels(members: Iterable[Device] | Iterable[Provider]) -> str:
    return ", ".join(member.label for member in members) or "none"


def _with_libtorch() -> tuple[CapsuleModule, ...]:
    return (*maintained_modules(), libtorch_module())


_LIBTORCH_CPU_AVAILABILITY = Availability(
    devices=(Device.CPU,), providers=(Provider.REFERENCE, Provider.TORCHLEAN, Provider.LIBTORCH)
)

CHECKED_CPU = BackendProfile("checked_cpu", KernelPolicy(device=Device.CPU), Availability.cpu())
CHECKED_CUDA = BackendProfile(
    "checked_cuda",
    KernelPolicy(device=Device.CUDA, provider=ProviderPreference.prefer(Provider.TORCHLEAN)),
    Availability.cuda(),
)
LIBTORCH_FORWARD_CUDA = BackendProfile(
    "libtorch_forward_cuda",
    KernelPolicy(
        device=Device.CUDA,
        provider=ProviderPreference.prefer(Provider.LIBTORCH),
        assurance=AssurancePolicy.EXTERNAL,
    ),
    Availability.cuda(with_libtorch=True),
    _with_libtorch(),
)
LIBTORCH_FORWARD_STRICT = BackendProfile(
    "libtorch_forward_strict",
    KernelPolicy(device=Device.CUDA, provider=ProviderPreference.prefer(Provider.LIBTORCH)),
    Availability.cuda(with_libtorch=True),
    _with_libtorch(),
)
LIBTORCH_FORWARD_CPU = BackendProfile(
    "libtorch_forward_cpu",
    KernelPolicy(
        device=Device.CPU,
        provider=ProviderPreference.prefer(Provider.LIBTORCH),
        assurance=AssurancePolicy.EXTERNAL,
    ),
    _LIBTORCH_CPU_AVAILABILITY,
    _with_libtorch(),
)
LIBTORCH_FORWARD_STRICT_CPU = BackendProfile(
    "libtorch_forward_strict_cpu",
    KernelPolicy(device=Device.CPU, provider=ProviderPreference.prefer(Provider.LIBTORCH)),
    _LIBTORCH_CPU_AVAILABILITY,
    _with_libtorch(),
)

FAST_CPU = BackendProfile(
    "fast_cpu",
    KernelPolicy(device=Device.CPU, provider=ProviderPreference.prefer(Provider.ATEN)),
    Availability(devices=(Device.CPU,), providers=(Provider.REFERENCE, Provider.TORCHLEAN, Provider.ATEN)),
    (*maintained_modules(), aten_module()),
)

_PROFILES: dict[str, BackendProfile] = {
    profile.name: profile
    for profile in (
        CHECKED_CPU,
        CHECKED_CUDA,
        LIBTORCH_FORWARD_CUDA,
        LIBTORCH_FORWARD_STRICT,
        LIBTORCH_FORWARD_CPU,
        LIBTORCH_FORWARD_STRICT_CPU,
        FAST_CPU,
    )
}


def names() -> tuple[str, ...]:
    """The built-in profile names, in table order."""
    return tuple(_PROFILES)


def profiles() -> tuple[BackendProfile, ...]:
    """The built-in profiles, in table order (the order of :func:`names`)."""
    return tuple(_PROFILES.values())


def get(name: str) -> BackendProfile:
    """The built-in profile called ``name``.

    Source: anchor-backend.md §2.6 and §5 (the Generation B profiles); DESIGN.md §3.

    Raises:
        UnknownLabelError: ``unknown profile {name} (known: checked_cpu | checked_cuda | ...)``,
            with ``; did you mean checked_cpu?`` for ``checked-cpu``.
        BackendTypeError: ``name`` is not a string.
    """
    if not isinstance(name, str):
        known = " | ".join(_PROFILES)
        raise BackendTypeError(f"profile name must be a string ({known}), got {describe(name)}")
    try:
        return _PROFILES[name]
    except KeyError:
        known, near = " | ".join(_PROFILES), near_profile(name)
        raise UnknownLabelError(f"unknown profile {name_shown(name)} (known: {known}){near}") from None


def near_profile(name: str) -> str:
    """``; did you mean <profile>?`` for ``name``, a slip of a shipped profile's name or close to
    it (:func:`~torchlean.backend.vocabulary.did_you_mean` with ``close``, by the profile's device,
    not its name's), else ``""``: the suffix of an unknown-profile message. A name more than twice
    as long as the longest profile name is close to none (``difflib``'s ratio 0.75 needs a length
    within 5/3 of the other's) and is not compared, which would take a time quadratic in its length.

    Raises:
        BackendTypeError: ``name`` is not a string (review239 F8), naming it and its type.
    """
    if not isinstance(name, str):
        raise BackendTypeError(
            f"near_profile: name must be a string (a profile name as typed), got {describe(name)}"
        )
    if len(name) > 2 * max(len(known) for known in _PROFILES):
        return ""
    devices = {shipped: profile.policy.device.label for shipped, profile in _PROFILES.items()}
    return did_you_mean(name, names(), close=True, devices=devices)


def maintained_for_device(device: Device | str) -> BackendProfile | None:
    """``checked_cpu`` for cpu, ``checked_cuda`` for cuda, ``None`` for every other known device.

    ``device`` is a :class:`Device` or its label (``"cpu"``), parsed as everywhere in the backend
    API (:meth:`Device.parse`).

    Raises:
        UnknownLabelError: ``unknown device gpu (known targets: cpu | cuda | ...)``.
        BackendTypeError: ``device must be a Device or one of its labels (cpu | cuda | ...), got
            123 (int)``.
    """
    member = parse_member(Device, device, "device")
    return {Device.CPU: CHECKED_CPU, Device.CUDA: CHECKED_CUDA}.get(member)


_CPU_COUNTERPARTS: dict[str, BackendProfile] = {
    CHECKED_CUDA.name: CHECKED_CPU,
    LIBTORCH_FORWARD_CUDA.name: LIBTORCH_FORWARD_CPU,
    LIBTORCH_FORWARD_STRICT.name: LIBTORCH_FORWARD_STRICT_CPU,
}


def cpu_counterpart(name: str) -> BackendProfile | None:
    """The built-in ``cpu`` profile with the assurance policy and VJP mode of the built-in
    ``cuda`` profile ``name`` (what runs its model on the CPU): ``checked_cuda`` → ``checked_cpu``,
    ``libtorch_forward_cuda`` → ``libtorch_forward_cpu``, ``libtorch_forward_strict`` →
    ``libtorch_forward_strict_cpu``; ``None`` for a profile that already targets ``cpu``. The
    counterpart runs other kernels (``reference`` instead of ``torchlean``/``native-cuda`` ones),
    so its values may differ in the last bits.

    Raises:
        UnknownLabelError / BackendTypeError: ``name`` is no built-in profile name (:func:`get`).
    """
    profile = get(name)
    return _CPU_COUNTERPARTS.get(profile.name)


def _session_refusal(capsule: KernelCapsule, policy: KernelPolicy) -> str | None:
    """Why a session refuses ``capsule`` before its op runs although the planner selects it, in
    the session's order: the acceptance gate refuses it under ``policy`` (evidence the policy's
    assurance rejects, say a stricter :class:`~torchlean.backend.policy.AssurancePolicy` of your
    own: review108 F1), no handler of this build has its op, provider and device, or it claims
    what the handler it would run on does not; None for every shipped capsule under its profile."""
    op = capsule.op.label
    failures = acceptance_failures(PlannedKernel(capsule.op, capsule), policy)
    if failures:
        reasons = "; ".join(failure.message for failure in failures)
        return (
            f"the acceptance gate refuses {capsule.name} under this profile's policy ({reasons}); a "
            f"session refuses it before {op} runs"
        )
    if not has_built_in_handler(capsule):
        return (
            f"no handler of this build implements {op} for provider {capsule.provider.label} on "
            f"{capsule.device.label}, so {capsule.name} cannot run; a session refuses it before {op} runs"
        )
    if (mismatch := built_in_claims_difference(capsule)) is not None:
        return (
            f"{capsule.name} would run on the handler of {mismatch[0].name} but claims otherwise "
            f"({mismatch[1]}); a session refuses it before {op} runs"
        )
    return None
