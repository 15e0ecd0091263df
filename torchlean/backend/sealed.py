"""Sealed classes: values that only their gate functions may create.

Source: DESIGN.md §1.4; typing-notes.md §0 and §2. ``AcceptedKernel``, ``AcceptedGraphKernelPlan``
and ``ExecutableKernel`` carry, in the original, a proof that the acceptance gate succeeded. In
Python the same guarantee is layered:

* statically, each class is ``@final`` and decorated ``@sealed("<fully.qualified.gate>")``; the
  mypy plugin ``torchlean.mypy_plugin`` reads that decorator syntactically and reports
  construction, ``copy``, ``replace`` or ``__new__`` outside the named gate;
* at construction, a private gate token is a required ``InitVar``: leaving it out is a mypy
  ``call-arg`` error and, with a wrong value, a ``TypeError`` at runtime;
* at runtime, the gate calls :func:`_mint`, which records the object's identity and a fingerprint
  of its fields (the identity of each field value). Every consuming API (``bind``,
  ``ExecutableKernel.run``, ``audit()``, the graph executor and report) calls
  :func:`require_minted`, so a forged (``object.__new__``), copied, unpickled or mutated
  (``object.__setattr__``) instance is refused with an :class:`UnmintedError` that names the gate,
  before any kernel runs; the same class and text with or without ``python -O``. Their ``@beartype``
  checks the plain types of the arguments (and nothing under ``python -O``, where its decorator is
  the identity; :data:`BEARTYPE_CHECKS` records which). ``Annotated[X, Is[is_minted]]``
  (``acceptance.Accepted``, ...) remains for a beartype-checked API of one's own;
* ``copy.copy``, ``copy.deepcopy``, ``copy.replace`` (``__replace__``, Python 3.13+) and
  ``pickle`` raise ``TypeError`` at the source, and subclassing raises ``TypeError`` (through
  ``__init_subclass__``, which a second base that does not call ``super().__init_subclass__``
  skips: review211 F3; such a subclass's instances are never minted, so every consumer refuses
  them, and the mypy plugin reports the subclass).

``sealed`` and ``Sealable`` are exported for torchlean's own sealed classes and for the plugin,
which reads the decorator: a class of your own sealed with them needs the private ``_GATE`` and
``_mint``, which the plugin reports in any module outside torchlean (review157 F5), and the
runtime names a gate by its module's ``__name__`` (``__main__.make`` when run as a script). Sealing
your own classes is not supported.

Honest limit (typing-notes.md §2.1): code in the same process can still reach the private
helpers, and the fingerprint covers a sealed value's own fields by identity, not the records they
point to (a capsule, policy or handler, or a shipped catalog capsule, rebound with
``object.__setattr__`` is not noticed); this stops accidents and casual misuse, not a hostile
caller.
"""

from __future__ import annotations

import dataclasses
import operator
import sys
import weakref
from collections.abc import Callable
from typing import Annotated, Any, Final, NoReturn, TypeVar

from beartype import beartype
from beartype.roar import BeartypeCallHintViolation
from beartype.vale import Is

from torchlean.backend.errors import TorchLeanError

__all__ = [
    "BEARTYPE_CHECKS",
    "GATES_ATTRIBUTE",
    "Sealable",
    "UnmintedError",
    "is_minted",
    "require_minted",
    "sealed",
    "sealed_gates",
]

GATES_ATTRIBUTE = "__sealed_gates__"

_C = TypeVar("_C", bound=type)


class _GateToken:
    """The private token gates pass as ``_gate``; its one instance is :data:`_GATE`."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "<torchlean sealed gate token>"


_GATE = _GateToken()


class Sealable:
    """Base of every sealed class: it supplies the ``__weakref__`` slot that :func:`_mint` needs.

    Not ``@dataclass(weakref_slot=True)``: CPython 3.12.3 silently drops that slot from classes with
    a ``Generic[...]`` base (gh-118033, fixed in 3.12.4), which made every ``bind`` fail there.
    """

    __slots__ = ("__weakref__",)


# id(obj) -> (weak reference to obj, field values at minting, their ids)
_MINTED: dict[int, tuple[weakref.ref[Any], tuple[Any, ...], tuple[int, ...]]] = {}
_FIELD_GETTERS: dict[type, Callable[[Any], tuple[Any, ...]]] = {}


def _refuse_copy(self: object, *args: object) -> NoReturn:
    raise TypeError(f"{type(self).__name__} cannot be copied; run its gate again ({_gates_text(type(self))})")


def _refuse_replace(self: object, /, **changes: object) -> NoReturn:
    """``__replace__`` (``copy.replace``, Python 3.13+) builds a changed copy outside the gate."""
    raise TypeError(f"{type(self).__name__} cannot be copied; run its gate again ({_gates_text(type(self))})")


def _refuse_pickle(self: object, *args: object) -> NoReturn:
    raise TypeError(
        f"{type(self).__name__} cannot be pickled; accepted values cannot cross process boundaries, "
        f"run its gate again ({_gates_text(type(self))})"
    )


def _refuse_subclass(cls: type, /, **kwargs: object) -> None:
    sealed_base = next(base for base in cls.__mro__[1:] if sealed_gates(base))  # this hook's owner
    raise TypeError(f"{sealed_base.__name__} is sealed and cannot be subclassed")


def _gates_text(cls: type) -> str:
    return ", ".join(sorted(sealed_gates(cls)))


def sealed_gates(cls: type) -> frozenset[str]:
    """The fully-qualified gate function names recorded by :func:`sealed` (empty if unsealed)."""
    gates: frozenset[str] = getattr(cls, GATES_ATTRIBUTE, frozenset())
    return gates


def _field_getter(names: tuple[str, ...]) -> Callable[[Any], tuple[Any, ...]]:
    if len(names) == 1:
        single = operator.attrgetter(names[0])
        return lambda obj: (single(obj),)
    getter: Callable[[Any], tuple[Any, ...]] = operator.attrgetter(*names)
    return getter


def sealed(*gates: str) -> Callable[[_C], _C]:
    """Class decorator: only the functions named in ``gates`` may create instances.

    Apply it above ``@dataclass(frozen=True, slots=True, eq=False)`` and below ``@final``, on a
    class derived from :class:`Sealable`; write it literally as ``@sealed("package.module.gate")``
    (the mypy plugin reads the decorator call syntactically). The class must declare
    ``_gate: InitVar[_GateToken]`` and call :func:`check_gate_token` from ``__post_init__``.

    Raises:
        TypeError: if no gate is named, the class is not a dataclass, it does not derive from
            :class:`Sealable`, or it is sealed already (a second, stacked ``@sealed``).
    """
    if not gates:
        raise TypeError("sealed() needs at least one gate function name")

    def decorate(cls: _C) -> _C:
        if not dataclasses.is_dataclass(cls):
            raise TypeError(f"sealed class {cls.__name__} must be a dataclass")
        if not issubclass(cls, Sealable):
            raise TypeError(
                f"sealed class {cls.__name__} must derive from Sealable (its __weakref__ slot; "
                "dataclass weakref_slot=True loses the slot under CPython 3.12.3)"
            )
        if GATES_ATTRIBUTE in vars(cls):
            raise TypeError(
                f"sealed class {cls.__name__} is sealed twice (gates {_gates_text(cls)} and "
                f"{', '.join(sorted(gates))}): name all its gate functions in one @sealed(...)"
            )
        names = tuple(field.name for field in dataclasses.fields(cls))
        _FIELD_GETTERS[cls] = _field_getter(names)
        setattr(cls, GATES_ATTRIBUTE, frozenset(gates))
        for name, refusal in (
            ("__copy__", _refuse_copy),
            ("__deepcopy__", _refuse_copy),
            ("__replace__", _refuse_replace),
            ("__reduce_ex__", _refuse_pickle),
            ("__reduce__", _refuse_pickle),
        ):
            setattr(cls, name, refusal)
        setattr(cls, "__init_subclass__", classmethod(_refuse_subclass))  # noqa: B010
        return cls

    return decorate


def check_gate_token(cls: type, token: object) -> None:
    """Called from a sealed class's ``__post_init__``.

    Raises:
        TypeError: unless ``token`` is the private gate token.
    """
    if token is not _GATE:
        raise TypeError(f"{cls.__name__} can only be created by {_gates_text(cls)}")


def _forget(key: int, ref: weakref.ref[Any]) -> None:
    entry = _MINTED.get(key)
    if entry is not None and entry[0] is ref:
        del _MINTED[key]


def _mint(obj: object) -> None:
    """Record ``obj`` as genuine: its identity and the identity of each field value.

    Only the gate functions named by the class's :func:`sealed` decorator may call this.

    Raises:
        TypeError: if ``obj``'s class is not sealed or the caller is not one of its gates.
    """
    cls = type(obj)
    getter = _FIELD_GETTERS.get(cls)
    if getter is None:
        raise TypeError(f"{cls.__name__} is not a sealed class")
    frame = sys._getframe(1)
    caller = f"{frame.f_globals.get('__name__')}.{frame.f_code.co_qualname}"
    if caller not in sealed_gates(cls):
        raise TypeError(f"{caller} is not a gate of {cls.__name__} (gates: {_gates_text(cls)})")
    key = id(obj)
    ref = weakref.ref(obj, lambda dead: _forget(key, dead))
    values = getter(obj)
    _MINTED[key] = (ref, values, tuple(map(id, values)))


def is_minted(obj: object) -> bool:
    """Whether ``obj`` was minted by its gate and no field has been rebound or deleted since.

    :func:`require_minted`'s check, run by every consumer of a sealed value, and the validator of
    the exported ``Annotated[X, Is[is_minted]]`` hints (about 0.5 µs a call).
    """
    entry = _MINTED.get(id(obj))
    if entry is None or entry[0]() is not obj:
        return False
    getter = _FIELD_GETTERS.get(type(obj))
    if getter is None:
        return False
    try:
        values = getter(obj)
    except AttributeError:  # a field deleted with object.__delattr__
        return False
    return tuple(map(id, values)) == entry[2]


class UnmintedError(TorchLeanError, TypeError):
    """A sealed value its gate did not mint, or one changed since, reached an API that needs a
    genuine one (``bind``, ``ExecutableKernel.run``, ``audit()``, ...), optimised Python or not."""


def _positive(value: int) -> bool:
    return value > 0


def _beartype_checks() -> bool:
    """Whether ``@beartype`` validates ``Is[...]`` hints in this interpreter (False under -O).

    The validator is a named function, not a lambda: beartype looks a lambda's source up in
    ``linecache`` for its repr, and Python 3.13 caches ``python -c``'s text under ``<string>``, so
    importing torchlean from a ``-c`` one-liner warned (``BeartypeValeLambdaWarning``; an error
    under ``-W error``: review129 F6)."""

    @beartype
    def probe(value: Annotated[int, Is[_positive]]) -> int:
        return value

    try:
        probe(0)
    except BeartypeCallHintViolation:
        return True
    return False


BEARTYPE_CHECKS: Final[bool] = _beartype_checks()
"""True when ``@beartype`` checks hints here (Python not optimised): the plain argument types of
the consuming APIs; their mint checks (:func:`require_minted`) run either way."""


def require_minted(obj: object, where: str, check: Callable[[object], bool] = is_minted) -> None:
    """Refuse ``obj`` unless ``check(obj)`` (default :func:`is_minted`) holds; the one refusal of
    every consuming API, the same with or without ``python -O``.

    Raises:
        UnmintedError: ``<where>: <Class> was not minted by its gate (<gates>) or was changed since``.
    """
    if not check(obj):
        cls = type(obj)
        gates = _gates_text(cls) if sealed_gates(cls) else "not a sealed value"
        raise UnmintedError(
            f"{where}: {cls.__name__} was not minted by its gate ({gates}) or was changed since"
        )
