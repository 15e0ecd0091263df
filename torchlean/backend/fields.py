"""Validation of the capsule system's record fields and API arguments.

Source: DESIGN.md §1.3 (evidence names are real; a capsule never claims more than is true) and
§4 (errors name the offending value and the accepted ones). The frozen records of the backend
(:class:`~torchlean.backend.contracts.ContractEvidence`, ``ContractClaim``, ``ContractDescriptor``,
``NativeSymbolRef``, ``NumericalPolicy``, :class:`~torchlean.backend.capsule.KernelCapsule`,
``CapsuleModule``, the policies and profiles) check every field in ``__post_init__`` with the
helpers below, so an ill-typed or dishonest record is refused where it is built, not when a
planner or report later trips over it. An enum field takes its member or the member's label
(parsed with ``Enum.parse`` and stored as the member); names and paths are non-empty strings.

This module depends only on :mod:`torchlean.backend.errors` and :mod:`~torchlean.backend.vocabulary`.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Mapping, Sized
from typing import TypeVar

from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.backend.vocabulary import LabelledEnum

__all__ = [
    "BackendLabelError",
    "BackendTypeError",
    "BackendValueError",
    "bool_field",
    "describe",
    "enum_field",
    "instance_argument",
    "instance_field",
    "iterable_argument",
    "name_field",
    "parse_member",
    "text_field",
    "tuple_field",
]

E = TypeVar("E", bound=LabelledEnum)
T = TypeVar("T")

_SHOWN = 80


class BackendTypeError(TorchLeanError, TypeError):
    """A backend record field or API argument has the wrong type.

    The message names the field or argument, the value (and its type) and what is accepted.
    """


class BackendValueError(TorchLeanError, ValueError):
    """A backend record field has the right type but a refused value: an unknown label, an empty
    name, a runtime guard name that is not a dotted Python name."""


class BackendLabelError(BackendValueError, UnknownLabelError):
    """An unknown label in a backend record field: a :class:`BackendValueError` that code catching
    :class:`UnknownLabelError` (as the CLI does) also catches."""


def describe(value: object) -> str:
    """``repr(value)`` on one line (numpy's line breaks and their indent read as one space) and
    shortened to 80 characters, followed by its type, e.g. ``'relu' (str)``."""
    shown = re.sub(r"\n\s*", " ", repr(value))
    if len(shown) > _SHOWN:
        shown = shown[: _SHOWN - 3] + "..."
    return f"{shown} ({type(value).__name__})"


def _accepted(cls: type[LabelledEnum]) -> str:
    return f"{_a(cls.__name__)} or one of its labels ({' | '.join(cls.labels())})"


def parse_member(cls: type[E], value: object, what: str) -> E:
    """``value`` as a member of ``cls``: the member itself or its label (API arguments).

    Raises:
        UnknownLabelError: a string that is no label of ``cls`` (``cls.parse``'s message).
        BackendTypeError: ``{what} must be a {cls} or one of its labels (...), got {value} ({type})``.
    """
    if isinstance(value, cls):
        return value
    if isinstance(value, str):
        return cls.parse(value)
    raise BackendTypeError(f"{what} must be {_accepted(cls)}, got {describe(value)}")


def _field(record: object, name: str) -> str:
    return f"{type(record).__name__}.{name}"


def enum_field(record: object, name: str, cls: type[LabelledEnum], *, optional: bool = False) -> None:
    """Check ``record.name`` is a member of ``cls`` (or ``None`` when ``optional``); a label is parsed
    and stored as its member.

    Raises:
        BackendTypeError: neither a member nor a string.
        BackendLabelError: a string that is no label of ``cls`` (a ``BackendValueError`` and an
            ``UnknownLabelError``).
    """
    value = getattr(record, name)
    if (optional and value is None) or isinstance(value, cls):
        return
    where = _field(record, name)
    if isinstance(value, str):
        try:
            member = cls.parse(value)
        except UnknownLabelError as error:
            raise BackendLabelError(f"{where}: {error}") from None
        object.__setattr__(record, name, member)
        return
    accepted = _accepted(cls) + (" or None" if optional else "")
    raise BackendTypeError(f"{where} must be {accepted}, got {describe(value)}")


def enum_tuple_field(record: object, name: str, cls: type[LabelledEnum]) -> None:
    """Check ``record.name`` is a tuple (a list is converted) of members of ``cls``; labels are
    parsed and stored as their members.

    Raises:
        BackendTypeError: not a tuple or list (a lone string or member included), or an item that
            is neither a member nor a string (by index).
        BackendLabelError: an item that is no label of ``cls`` (``Availability.devices[0]:
            unknown device gpu (known: ...)``).
    """
    value = getattr(record, name)
    where = _field(record, name)
    if not isinstance(value, tuple | list):
        raise BackendTypeError(
            f"{where} must be a tuple or list of {cls.__name__} members or labels, got {describe(value)}"
        )
    members = []
    for index, item in enumerate(value):
        try:
            members.append(parse_member(cls, item, f"{where}[{index}]"))
        except UnknownLabelError as error:
            raise BackendLabelError(f"{where}[{index}]: {error}") from None
    object.__setattr__(record, name, tuple(members))


def text_field(record: object, name: str, *, optional: bool = False) -> None:
    """Check ``record.name`` is a non-empty, non-blank string (or ``None`` when ``optional``).

    Raises:
        BackendTypeError: not a string. BackendValueError: empty or blank.
    """
    value = getattr(record, name)
    if optional and value is None:
        return
    where = _field(record, name)
    accepted = "a non-empty string" + (" or None" if optional else "")
    if not isinstance(value, str):
        raise BackendTypeError(f"{where} must be {accepted}, got {describe(value)}")
    if not value.strip():
        raise BackendValueError(f"{where} must be {accepted}, got {value!r}")


def name_field(record: object, name: str) -> None:
    """:func:`text_field`, and every character printable (``str.isprintable``): no line break,
    tab, zero-width or other control or format character, which would forge or hide lines and
    names in the reports that print it (review108 F4).

    Raises:
        BackendTypeError: not a string. BackendValueError: empty, blank, or holding a character that
            is not printable (named by its code point).
    """
    text_field(record, name)
    value: str = getattr(record, name)
    bad = next((c for c in value if not c.isprintable()), None)
    if bad is not None:
        raise BackendValueError(
            f"{_field(record, name)} must be printable (no line break, tab, zero-width or other control "
            f"or format character), got {value!r} with U+{ord(bad):04X}"
        )


def _a(noun: str) -> str:
    """``noun`` with its indefinite article (``an AssurancePolicy``, ``a KernelPolicy``)."""
    return f"{'an' if noun[:1] in 'AEIOUaeiou' else 'a'} {noun}"


def instance_field(record: object, name: str, cls: type[object], accepted: str | None = None) -> None:
    """Check ``record.name`` is an instance of ``cls``; ``accepted`` says how to build one.

    Raises:
        BackendTypeError: ``{Record}.{name} must be a {cls}[ ({accepted})], got {value} ({type})``.
    """
    value = getattr(record, name)
    if not isinstance(value, cls):
        how = "" if accepted is None else f" ({accepted})"
        expected = f"{_a(cls.__name__)}{how}"
        raise BackendTypeError(f"{_field(record, name)} must be {expected}, got {describe(value)}")


def instance_argument(value: object, cls: type[T], what: str) -> T:
    """``value`` when it is a ``cls`` (an API argument: a policy, a capsule, a plan).

    Raises:
        BackendTypeError: ``{what} must be a {cls}, got {value} ({type})``
            (``policy must be a KernelPolicy, got None (NoneType)``).
    """
    if not isinstance(value, cls):
        raise BackendTypeError(f"{what} must be {_a(cls.__name__)}, got {describe(value)}")
    return value


def unordered_refusal(value: object, what: str, accepted: str, why: str) -> str | None:
    """The refusal of ``value`` when it is a set (or frozenset) or a mapping given where the order of
    the items matters (``why``): a set's iteration order changes with ``PYTHONHASHSEED``, so what
    is planned from it would change from one process to the next (review168 F1, F2); a mapping
    would be read by its keys without a word. None for any other value (a dict's keys view, whose
    order is the insertion order, passes)."""
    if isinstance(value, Mapping):
        return (f"{what} must be {accepted}, got a mapping of {len(value)} ({type(value).__name__}), which "
                "would be read by its keys; write a list of them")
    if isinstance(value, set | frozenset):
        return (f"{what} must be {accepted}, got a {type(value).__name__} of {len(value)} ({why}, and a "
                "set's order changes from one process to the next); write a list in the order you want")
    return None


MOST_ITEMS = 2**24
"""The most entries :func:`ordered_items` reads from one list argument (ops to plan, capsule
modules, a command line's words): far more than any such list holds, and few enough that a
stride-0 numpy view of 2**40 entries (8 bytes of memory) or an endless generator is refused at
once (review239 F2) rather than iterated for hours or copied into a ``MemoryError``."""


def ordered_items(
    value: object, what: str, accepted: str, why: str | None, limit: int = MOST_ITEMS
) -> tuple[object, ...]:
    """The entries of ``value``, an ordered iterable argument (a list, a tuple, a 1-d array, a
    generator), as a tuple of at most ``limit``, unchecked: each caller checks their type. ``what``
    names the argument (``with_capsule_modules: modules``), ``accepted`` what it takes (``an ordered
    iterable of CapsuleModule``), ``why`` why the order matters (None: it does not, and a set is
    taken).

    Raises:
        BackendTypeError: a string or bytes, a 0-d numpy array or torch tensor (review239 F4:
            numpy's and torch's ``iteration over a 0-d array``), another value that is not iterable,
            or a set or a mapping (:func:`unordered_refusal`, unless ``why`` is None), naming
            ``what``, the value and its type.
        BackendValueError: more than ``limit`` entries, by ``len()`` where the value has one (read
            before any entry: an array's is free), else once ``limit + 1`` have been read.
    """
    zero_d = getattr(value, "ndim", 1) == 0  # numpy and torch: Iterable, but iter() raises
    if isinstance(value, str | bytes) or zero_d or not isinstance(value, Iterable):
        why_not = " (a 0-d array or tensor holds one value, not a sequence)" if zero_d else ""
        raise BackendTypeError(f"{what} must be {accepted}, got {describe(value)}{why_not}")
    unordered = None if why is None else unordered_refusal(value, what, accepted, why)
    if unordered is not None:
        raise BackendTypeError(unordered)

    def too_many(count: str) -> BackendValueError:
        return BackendValueError(
            f"{what} must have at most {limit} entries, got {count}: {describe(value)} (accepted: {accepted})"
        )

    if isinstance(value, Sized):
        try:
            count = len(value)
        except Exception:  # a __len__ that raises: the bounded read below still stops in time
            count = None
        if isinstance(count, int) and count > limit:
            raise too_many(str(count))
    items = tuple(itertools.islice(value, limit + 1))
    if len(items) > limit:
        raise too_many("more")
    return items


def iterable_argument(
    value: object, cls: type[T], what: str, why: str | None = "their order decides which capsule is selected"
) -> tuple[T, ...]:
    """``value`` (any iterable but a string or bytes, a generator included) as a tuple whose items
    are all ``cls`` instances (an API argument: a registry of capsules, a list of modules), read by
    :func:`ordered_items` (at most :data:`MOST_ITEMS`).

    Raises:
        BackendTypeError: a string, bytes, a 0-d array or a non-iterable (``registry must be an
            ordered iterable of KernelCapsule, got None (NoneType)``; ``an iterable`` where ``why``
            is None), a set or a mapping (``why`` their order matters: :func:`unordered_refusal`;
            ``why`` None: order does not matter), or the first item that is not a ``cls``
            (``registry[0] must be a KernelCapsule, got 1 (int)``).
        BackendValueError: more than :data:`MOST_ITEMS` items (a stride-0 view of 2**40).
    """
    accepted = f"an iterable of {cls.__name__}" if why is None else f"an ordered iterable of {cls.__name__}"
    items = ordered_items(value, what, accepted, why)
    checked: list[T] = []
    for index, item in enumerate(items):
        if not isinstance(item, cls):
            raise BackendTypeError(f"{what}[{index}] must be {_a(cls.__name__)}, got {describe(item)}")
        checked.append(item)
    return tuple(checked)


def bool_field(record: object, name: str) -> None:
    """Check ``record.name`` is ``True`` or ``False`` (not 0/1, not a string).

    Raises:
        BackendTypeError: any other value.
    """
    value = getattr(record, name)
    if not isinstance(value, bool):
        raise BackendTypeError(f"{_field(record, name)} must be True or False, got {describe(value)}")


def tuple_field(record: object, name: str, cls: type[object], *, where: str | None = None) -> None:
    """Check ``record.name`` is a tuple (a list is converted) whose items are all ``cls`` instances.

    ``where`` replaces ``{Record}.{name}`` in messages (e.g. to name the record).

    Raises:
        BackendTypeError: not a tuple/list, or the first item that is not a ``cls`` (by index).
    """
    value = getattr(record, name)
    label = where or _field(record, name)
    if not isinstance(value, tuple | list):
        raise BackendTypeError(f"{label} must be a tuple or list of {cls.__name__}, got {describe(value)}")
    for index, item in enumerate(value):
        if not isinstance(item, cls):
            raise BackendTypeError(f"{label}[{index}] must be {_a(cls.__name__)}, got {describe(item)}")
    if isinstance(value, list):
        object.__setattr__(record, name, tuple(value))
