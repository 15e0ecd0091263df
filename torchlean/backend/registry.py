"""Capsule modules, registry validation and the maintained catalog.

Source: the seed chapter ("Kernel Capsules"); anchor-backend.md §1.18, §2.5. Capsules are
collected in named :class:`CapsuleModule` s; the catalog is one flat list (module order, then
local order) and that order decides ``auto`` selection and ``prefer`` fallback. Devices are
filtered when a plan is made, not when a module is registered.

The maintained modules (Generation B) are ``attention``, ``native-cuda``, ``reference``; the
``libtorch`` and ``aten`` modules are opt-in. Provider data modules are imported lazily, because
they import :class:`CapsuleModule` from here: assembling the shipped catalog is the one place the
backend's core reaches into the provider packages (all inside ``torchlean.backend``, as the
layering test ``tests/backend/test_layering.py`` allows; review180 F3).
"""

from __future__ import annotations

import functools
import importlib
import re
import unicodedata
from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass

from torchlean.backend.capsule import KernelCapsule, first_claim_difference
from torchlean.backend.contracts import EvidenceKind
from torchlean.backend.errors import PlanningError
from torchlean.backend.fields import describe, iterable_argument, name_field, tuple_field
from torchlean.backend.vocabulary import BackendOp, Device, Provider

__all__ = [
    "CapsuleModule",
    "RegistryError",
    "aten_module",
    "built_in_claims_difference",
    "check_guards",
    "first_duplicate_capsule_name",
    "first_duplicate_module_name",
    "flatten",
    "libtorch_module",
    "maintained_modules",
    "module_validation_error",
    "resolve_guard",
    "validate_modules",
]


class RegistryError(PlanningError):
    """The capsule modules of a profile are invalid (duplicate module name or capsule identity)."""


@dataclass(frozen=True, slots=True)
class CapsuleModule:
    """A named contribution of capsules to the registry (order of ``capsules`` is kept).

    ``capsules`` may be given as a list (stored as a tuple).

    Raises:
        BackendTypeError: a name that is not a string; ``capsules`` not a tuple/list, or an entry
            that is not a :class:`KernelCapsule` (``CapsuleModule `{name}`.capsules[{i}] must be a
            KernelCapsule, got ...``). BackendValueError: an empty name.
    """

    name: str
    capsules: tuple[KernelCapsule, ...]

    def __post_init__(self) -> None:
        name_field(self, "name")
        tuple_field(self, "capsules", KernelCapsule, where=f"CapsuleModule `{self.name}`.capsules")


def flatten(modules: Iterable[CapsuleModule]) -> tuple[KernelCapsule, ...]:
    """The catalog: module capsule lists concatenated in module order."""
    return tuple(capsule for module in modules for capsule in module.capsules)


def first_duplicate_module_name(modules: Sequence[CapsuleModule]) -> str | None:
    """The first module (in order) whose name occurs more than once, e.g. ``a`` for ``[a, b, b, a]``."""
    counts = Counter(module.name for module in modules)
    return next((module.name for module in modules if counts[module.name] > 1), None)


def first_duplicate_capsule_name(capsules: Sequence[KernelCapsule]) -> str | None:
    """The name of the first capsule whose ``(name, op, provider, device)`` occurs more than once."""
    counts = Counter(capsule.identity for capsule in capsules)
    return next((capsule.name for capsule in capsules if counts[capsule.identity] > 1), None)


def module_validation_error(modules: Sequence[CapsuleModule]) -> str | None:
    """The original's ``validateModules`` as a value: ``None`` (ok) or the verbatim message.

    Module names are checked first, then capsule identities over the flattened catalog.
    """
    module_name = first_duplicate_module_name(modules)
    if module_name is not None:
        return f"duplicate backend capsule module `{module_name}`"
    capsule_name = first_duplicate_capsule_name(flatten(modules))
    if capsule_name is not None:
        return f"duplicate backend capsule identity `{capsule_name}`"
    return None


def validate_modules(modules: Iterable[CapsuleModule]) -> None:
    """Check module names and capsule identities (``modules``: any iterable of modules but a
    string, a generator included).

    Raises:
        BackendTypeError: ``modules must be an iterable of CapsuleModule, got None (NoneType)`` or
            ``modules[0] must be a CapsuleModule, got 1 (int)``.
        RegistryError: ``duplicate backend capsule module `{name}` `` or
            ``duplicate backend capsule identity `{name}` ``.
    """
    # names and identities only: their order does not matter, a set is fine (review169 F6)
    message = module_validation_error(iterable_argument(modules, CapsuleModule, "modules", None))
    if message is not None:
        raise RegistryError(message)


def resolve_guard(name: str) -> Callable[..., object]:
    """The callable a ``runtimeGuard`` evidence names: ``module.function`` (the module is imported).

    Source: DESIGN.md §1.3 ("a ``runtimeGuard`` names a guard function that exists").

    Raises:
        RegistryError: ``runtime guard `{name}` cannot be imported: ...``, ``runtime guard `{name}`
            does not exist: {module} has no `{function}` `` or ``runtime guard `{name}` is not a
            callable: {value} ({type})``.
    """
    module_name, _, attribute = name.rpartition(".")
    try:
        module = importlib.import_module(module_name)
    except (ImportError, ValueError) as error:
        raise RegistryError(f"runtime guard `{name}` cannot be imported: {error}") from None
    guard: object = getattr(module, attribute, None)
    if guard is None:
        raise RegistryError(f"runtime guard `{name}` does not exist: {module_name} has no `{attribute}`")
    if not callable(guard):
        raise RegistryError(f"runtime guard `{name}` is not a callable: {describe(guard)}")
    return guard


def check_guards(module: CapsuleModule) -> None:
    """Resolve every ``runtimeGuard`` evidence of ``module`` to a callable (imports guard modules),
    except of a capsule equal to a shipped one (a copy of the catalog: tests resolve the shipped
    guards, and importing the native guards would import torch into a ``checked_cpu`` run).

    Raises:
        RegistryError: ``capsule module `{module}`: capsule `{capsule}` {obligation} evidence: ...``
            with :func:`resolve_guard`'s reason, for the first guard that does not resolve.
    """
    for capsule in module.capsules:
        if _is_shipped(capsule):
            continue
        for obligation, descriptor in capsule.contracts():
            evidence = descriptor.evidence
            if evidence.kind is not EvidenceKind.RUNTIME_GUARD or evidence.name is None:
                continue
            try:
                resolve_guard(evidence.name)
            except RegistryError as error:
                raise RegistryError(
                    f"capsule module `{module.name}`: capsule `{capsule.name}` {obligation.label} "
                    f"evidence: {error}"
                ) from None


def check_names(module: CapsuleModule) -> None:
    """Refuse a capsule of ``module`` that takes a shipped capsule's name for another op, provider
    or device (beyond the original, whose identities are name, op, provider and device): reports,
    audits and ``explain`` lead with the name, so ``reference.reduce_sum`` running the ``aten``
    handler would read as the reference kernel. A copy with the shipped capsule's op, provider and
    device may keep the name (it runs that capsule's handler, under the claims rule). Names are
    compared as a reader would match them: Unicode NFKC, surrounding whitespace dropped, case
    folded (``" Reference.reduce_sum"`` is refused too); and a name that spells a shipped one once
    its accents and other marks are dropped, its Cyrillic and Greek letters drawn like Latin ones
    read as those and its other letters of another script inside words of Latin letters read as
    the shipped name's (``rеference.relu`` with a Cyrillic ``е``, ``aten.ехр`` in Cyrillic,
    ``référence.relu``; review152 F5, review154 M1, review156 M1) counts as that name. A word
    wholly in another script that does not read as Latin (``ядро.relu``, ``カーネル.relu``) is a
    name of its own; look-alikes of other kinds (ASCII ``re1u`` for ``relu``, two characters drawn
    as one) are not caught.

    Raises:
        RegistryError: ``capsule module `{module}`: capsule `{name}` ({provider}/{device}, op {op})
            takes the name of the shipped capsule for ...; give it a name of its own``, or
            ``... looks like the name of the shipped capsule `{shipped}` (U+0435 in place of e) ...``.
    """
    shipped = _built_in_triples_by_name()
    for capsule in module.capsules:
        shown = _shown_name(capsule.name)
        alike, differences = _look_alike(shown, shipped, capsule.name)
        triples = shipped.get(alike)
        if triples is None or (capsule.op, capsule.provider, capsule.device) in triples:
            continue
        owners = ", ".join(f"{p.label}/{d.label}, op {o.label}" for o, p, d in triples)
        what = (
            f"looks like the name of the shipped capsule `{alike}` ({differences}), which is the one "
            if differences
            else "takes the name of the shipped capsule "
        )
        raise RegistryError(
            f"capsule module `{module.name}`: capsule `{capsule.name}` ({capsule.provider.label}/"
            f"{capsule.device.label}, op {capsule.op.label}) {what}for {owners}; give it a name of its own"
        )


_DRAWN_LATIN = str.maketrans({
    # lower-case Cyrillic and Greek letters drawn like a Latin one (names are case folded first)
    "\u0430": "a", "\u0435": "e", "\u043e": "o", "\u0440": "p", "\u0441": "c", "\u0443": "y",
    "\u0445": "x", "\u0455": "s", "\u0456": "i", "\u0458": "j", "\u0501": "d", "\u04cf": "l",
    "\u04bb": "h", "\u051b": "q", "\u051d": "w", "\u0475": "v",
    "\u03b1": "a", "\u03b9": "i", "\u03ba": "k", "\u03bd": "v", "\u03bf": "o", "\u03c1": "p",
    "\u03c5": "u", "\u03c7": "x", "\u03f2": "c", "\u03f3": "j",
    # dots that NFKC leaves as they are, drawn like the separator "." (review211 F4)
    "\u00b7": ".", "\u0387": ".", "\u0589": ".", "\u06d4": ".", "\u0701": ".", "\u0702": ".",
    "\u16eb": ".", "\u2022": ".", "\u2027": ".", "\u2219": ".", "\u22c5": ".", "\u2e31": ".",
    "\u3002": ".", "\u30fb": ".", "\ua4f8": ".", "\uff61": ".", "\uff65": ".",
    # more of Unicode's confusables of "." and the middle dot (review213 F3)
    "\u0660": ".", "\u06f0": ".", "\u1427": ".", "\u2e33": ".", "\ua60e": ".", "\ua78f": ".",
    "\U00010101": ".", "\U00010a50": ".",
})
"""Letters of other scripts that read as a Latin letter, and dots that read as ``.``
(:func:`_look_alike`): a name written in them (``aten.ехр`` in Cyrillic, ``reference·relu`` with
a middle dot) passes for the Latin one (review156 M1, review211 F4)."""


def _look_alike(shown: str, shipped: Mapping[str, object], written: str = "") -> tuple[str, str]:
    """The shipped name ``shown`` is taken for (:func:`check_names`) and how it differs from it:
    ``shown`` itself and ``""`` when shipped or all ASCII; else the first shipped name that
    ``shown`` spells once decomposed with its marks dropped (an accent, a dot above: ``rélu``), its
    letters drawn like Latin ones read as those (:data:`_DRAWN_LATIN`: a Cyrillic ``е``, a whole
    word ``ехр``) and its other letters of another script inside a word of Latin letters read as
    the shipped name's, with the differences as ``U+0435 in place of e`` or ``U+0301 added``; else
    ``shown`` and ``""``. A word wholly in another script that does not read as Latin (``ядро``,
    ``カーネル``) is a name of its own. A difference names the character as ``written`` (the name
    before :func:`_shown_name` folded it) has it where the two align character for character
    (review218 F8: U+0387 GREEK ANO TELEIA was named as U+00B7, its NFKC form)."""
    if shown.isascii() or shown in shipped:
        return shown, ""
    decomposed = unicodedata.normalize("NFD", shown)
    marks = [char for char in decomposed if unicodedata.category(char) in ("Mn", "Me")]
    bare = "".join(char for char in decomposed if unicodedata.category(char) not in ("Mn", "Me"))
    read = bare.translate(_DRAWN_LATIN)
    mixed = [False] * len(bare)  # a letter of another script in a word with Latin letters
    for word in re.finditer(r"[^\W_]+", read):
        scripts = {_script(char) for char in word.group() if char.isalpha()}
        if "LATIN" in scripts and len(scripts) > 1:
            for at in range(word.start(), word.end()):
                mixed[at] = _script(read[at]) not in ("LATIN", "")
    for name in shipped:
        if len(name) != len(bare):
            continue
        pairs = [(at, ours, theirs) for at, (ours, theirs) in enumerate(zip(bare, name, strict=True))
                 if ours != theirs]
        if all(read[at] == theirs or mixed[at] for at, _, theirs in pairs) and (pairs or marks):
            origin, own_marks = _written_characters(written, bare)
            differences = [f"U+{ord(origin[at]):04X} in place of {theirs}" for at, _, theirs in pairs]
            added = list(marks)
            for at, _, _ in pairs:  # a precomposed letter named as written holds its marks (review228 F7)
                for mark in own_marks[at]:
                    if mark in added:
                        added.remove(mark)
            differences += [f"U+{ord(mark):04X} added" for mark in added]
            return name, ", ".join(differences)
    return shown, ""


def _written_characters(written: str, bare: str) -> tuple[str, list[tuple[str, ...]]]:
    """For each character of ``bare`` (``written`` folded by :func:`_shown_name`, decomposed, its
    marks dropped), the character of ``written`` it came from and the marks that character holds
    itself (``ё``: U+0308), where folding ``written`` one character at a time gives ``bare``
    again; else ``bare`` itself and no marks."""
    pairs: list[tuple[str, str, tuple[str, ...]]] = []
    for char in written.strip():
        parts = unicodedata.normalize("NFD", unicodedata.normalize("NFKC", char).casefold())
        own = tuple(part for part in parts if unicodedata.category(part) in ("Mn", "Me"))
        pairs += [(part, char, own) for part in parts if unicodedata.category(part) not in ("Mn", "Me")]
    if "".join(part for part, _, _ in pairs) != bare:
        return bare, [()] * len(bare)
    return "".join(char for _, char, _ in pairs), [own for _, _, own in pairs]


def _script(char: str) -> str:
    """The script a letter belongs to, as the first word of its Unicode name (``LATIN``,
    ``CYRILLIC``, ``GREEK``, ``KATAKANA``); ``""`` for a character without a name."""
    return unicodedata.name(char, "").split(" ", 1)[0]


@functools.cache
def _built_in_triples_by_name() -> dict[str, tuple[tuple[BackendOp, Provider, Device], ...]]:
    """The ``(op, provider, device)`` of each shipped capsule name, by :func:`_shown_name`
    (``libtorch.sdpa_forward`` has two: cpu and cuda)."""
    table: dict[str, list[tuple[BackendOp, Provider, Device]]] = {}
    for module in all_modules():
        for c in module.capsules:
            table.setdefault(_shown_name(c.name), []).append((c.op, c.provider, c.device))
    return {name: tuple(triples) for name, triples in table.items()}


def _shown_name(name: str) -> str:
    """``name`` as a reader would match it (:func:`check_names`)."""
    return unicodedata.normalize("NFKC", name).strip().casefold()


@functools.cache
def maintained_modules() -> tuple[CapsuleModule, ...]:
    """``attention``, ``native-cuda``, ``reference``, in this order (93 capsules)."""
    from torchlean.backend.providers import attention
    from torchlean.backend.providers.native_cuda import capsules as native_cuda
    from torchlean.backend.providers.reference import capsules as reference

    return (attention.MODULE, native_cuda.MODULE, reference.MODULE)


@functools.cache
def libtorch_module() -> CapsuleModule:
    """The opt-in ``libtorch`` module (``libtorch.sdpa_forward`` for cuda and for cpu)."""
    from torchlean.backend.providers.libtorch import capsules as libtorch

    return libtorch.MODULE


@functools.cache
def aten_module() -> CapsuleModule:
    """The opt-in ``aten`` module (torch CPU kernels, ``aten.<op>``; DESIGN.md §1.8)."""
    from torchlean.backend.providers.aten import capsules as aten

    return aten.MODULE


def all_modules() -> tuple[CapsuleModule, ...]:
    """Every module this build ships: the maintained ones, then the opt-in ``libtorch`` and ``aten``."""
    return (*maintained_modules(), libtorch_module(), aten_module())


@functools.cache
def _built_in_by_identity() -> dict[tuple[BackendOp, Provider, Device], KernelCapsule]:
    """Every shipped capsule by ``(op, provider, device)`` (one each: each is what one linked
    handler implements)."""
    return {(c.op, c.provider, c.device): c for m in all_modules() for c in m.capsules}


def has_built_in_handler(capsule: KernelCapsule) -> bool:
    """Whether a shipped capsule has ``capsule``'s op, provider and device: the triples this build
    links a handler for (``tests/runtime/test_session.py`` holds the two sets equal), so a session
    refuses a capsule without one ("no matching executable handler is linked")."""
    return (capsule.op, capsule.provider, capsule.device) in _built_in_by_identity()


def _is_shipped(capsule: KernelCapsule) -> bool:
    """Whether ``capsule`` is (or equals) the shipped capsule of its op, provider and device."""
    own = _built_in_by_identity().get((capsule.op, capsule.provider, capsule.device))
    return own is not None and (own is capsule or own == capsule)


def built_in_claims_difference(capsule: KernelCapsule) -> tuple[KernelCapsule, str] | None:
    """The shipped capsule of ``capsule``'s op, provider and device, and how ``capsule`` claims
    something about that code the shipped one does not
    (:func:`~torchlean.backend.capsule.first_claim_difference`); None when none is shipped for
    that triple or the claims agree. A capsule runs on the handler of its triple, so a difference
    means its record would describe code that does not run as it says."""
    own = _built_in_by_identity().get((capsule.op, capsule.provider, capsule.device))
    if own is None or own == capsule:
        return None
    difference = first_claim_difference(capsule, own)
    return None if difference is None else (own, difference)
