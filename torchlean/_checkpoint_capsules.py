"""The capsule rows a checkpoint records (:attr:`Checkpoint.capsules
<torchlean.checkpoint.Checkpoint.capsules>`): each row checked key by key against
:func:`torchlean.backend.report.audit_to_json`'s form and the backend vocabulary, and kept
read-only."""

from __future__ import annotations

from collections.abc import Mapping
from types import MappingProxyType
from typing import Any

from torchlean._checkpoint_errors import CheckpointError
from torchlean.backend.contracts import ClaimKind, EvidenceKind
from torchlean.backend.vocabulary import (
    BackendOp,
    ContractObligation,
    Device,
    LabelledEnum,
    Provider,
    ReductionPolicy,
    TensorLayout,
    TrustLevel,
    VJPMode,
)

__all__ = ["CAPSULE_KEYS", "CAPSULE_LABELS", "capsule_rows", "json_ready", "value_shown"]

CAPSULE_KEYS = ("op", "capsule", "provider", "device", "trust", "vjp", "reduction", "contracts")
"""The keys of each row of :attr:`Checkpoint.capsules`, in their order: those of
:func:`torchlean.backend.report.audit_to_json`'s rows."""

CAPSULE_LABELS: Mapping[str, type[LabelledEnum]] = MappingProxyType({
    "op": BackendOp, "provider": Provider, "device": Device, "trust": TrustLevel, "vjp": VJPMode,
    "reduction": ReductionPolicy,
})
"""The label keys of a :attr:`Checkpoint.capsules` row and the vocabulary
(:mod:`torchlean.backend.vocabulary`) whose ``.labels()`` each takes."""

_SHOWN_CHARS = 200
"""The most characters of a value's literal a capsule row's error message shows."""


def value_shown(value: object) -> str:
    """``repr(value)`` for a message, cut after :data:`_SHOWN_CHARS` characters with its length (a
    hostile file's value may hold megabytes)."""
    return _cut(repr(value))


def json_ready(value: Any) -> Any:
    """``value`` with mappings as dicts and tuples and lists as lists, recursively (JSON's)."""
    if isinstance(value, Mapping):
        return {key: json_ready(item) for key, item in value.items()}
    if isinstance(value, tuple | list):
        return [json_ready(item) for item in value]
    return value


class _RowFault(Exception):
    """What is wrong with one capsule row: the key path inside it and the fault."""

    def __init__(self, where: str, fault: str) -> None:
        super().__init__(f"{where} {fault}" if where else fault)


def _keyed(
    value: object, where: str, keys: tuple[str, ...], optional: tuple[str, ...] = ()
) -> dict[str, Any]:
    """``value``, a mapping with string keys: all of ``keys`` and none but those and
    ``optional``, as a dict in that order (``keys`` then ``optional``).

    Raises:
        _RowFault: not a mapping, or other keys (naming those missing and unexpected).
    """
    accepted = ", ".join([*keys, *(f"{key} (optional)" for key in optional)])
    if not isinstance(value, Mapping):
        raise _RowFault(where, f"must be a mapping with the keys {accepted}, got {value_shown(value)}")
    missing = [key for key in keys if key not in value]
    unexpected = [key for key in value if key not in keys and key not in optional]
    if missing or unexpected:
        faults = "; ".join(f"{what} {', '.join(map(value_shown, found))}" for what, found in (
            ("missing", missing), ("unexpected", unexpected)) if found)
        raise _RowFault(where, f"must have the keys {accepted} (report.audit_to_json's): {_cut(faults)}")
    return {key: value[key] for key in (*keys, *optional) if key in value}


def _cut(text: str) -> str:
    """``text`` cut after :data:`_SHOWN_CHARS` characters, with its length."""
    return text if len(text) <= _SHOWN_CHARS else f"{text[:_SHOWN_CHARS]}... ({len(text)} characters)"


def _label(value: object, where: str, vocabulary: type[LabelledEnum]) -> str:
    """``value``, a label of ``vocabulary``.

    Raises:
        _RowFault: another value, naming the accepted labels.
    """
    if not isinstance(value, str) or value not in vocabulary.labels():
        raise _RowFault(where, f"must be one of {' | '.join(vocabulary.labels())}, got {value_shown(value)}")
    return value


def _text_or_none(value: object, where: str, optional: bool = False) -> str | None:
    """``value``, a string (or, when ``optional``, ``None``).

    Raises:
        _RowFault: another value.
    """
    if isinstance(value, str) or (optional and value is None):
        return value
    accepted = "a string or None" if optional else "a string"
    raise _RowFault(where, f"must be {accepted}, got {value_shown(value)}")


def _descriptor(value: object, where: str, op: str) -> Mapping[str, Any]:
    """One contract descriptor of a capsule row, as :func:`torchlean.backend.report.audit_to_json`
    writes it, read-only with its keys in that order (see :class:`Checkpoint`).

    Raises:
        _RowFault: naming the key path, the value and what is accepted.
    """
    descriptor = _keyed(value, where, ("claim", "summary", "evidence", "provenance"))
    claim = _keyed(descriptor["claim"], f"{where}.claim", ("kind", "op", "label"), ("layout", "mode"))
    _label(claim["kind"], f"{where}.claim.kind", ClaimKind)
    if claim["op"] != op:  # a capsule's claims are about its op (KernelCapsule refuses another)
        raise _RowFault(f"{where}.claim.op", f"must be the row's op {op!r}, got {value_shown(claim['op'])}")
    _text_or_none(claim["label"], f"{where}.claim.label")
    for key, vocabulary in (("layout", TensorLayout), ("mode", VJPMode)):
        if key in claim:
            _label(claim[key], f"{where}.claim.{key}", vocabulary)
    _text_or_none(descriptor["summary"], f"{where}.summary")
    evidence = _keyed(descriptor["evidence"], f"{where}.evidence", ("kind", "name", "label"))
    _label(evidence["kind"], f"{where}.evidence.kind", EvidenceKind)
    _text_or_none(evidence["name"], f"{where}.evidence.name", optional=True)
    _text_or_none(evidence["label"], f"{where}.evidence.label")
    found = descriptor["provenance"]
    if not isinstance(found, list | tuple):
        raise _RowFault(
            f"{where}.provenance", f"must be a list of symbol references, got {value_shown(found)}"
        )
    references = []
    for index, item in enumerate(found):
        at = f"{where}.provenance[{index}]"
        reference = _keyed(item, at, ("path", "symbol", "build_target"))
        _text_or_none(reference["path"], f"{at}.path")
        _text_or_none(reference["symbol"], f"{at}.symbol")
        _text_or_none(reference["build_target"], f"{at}.build_target", optional=True)
        references.append(MappingProxyType(reference))
    return MappingProxyType({
        "claim": MappingProxyType(claim), "summary": descriptor["summary"],
        "evidence": MappingProxyType(evidence), "provenance": tuple(references),
    })


def _capsule_row(value: object, device: str, profile: str) -> Mapping[str, Any]:
    """One row of :attr:`Checkpoint.capsules`, read-only with its keys in their order.

    Raises:
        _RowFault: naming the key path inside the row, the value and what is accepted.
    """
    row = _keyed(value, "", CAPSULE_KEYS)
    for key, vocabulary in CAPSULE_LABELS.items():
        _label(row[key], key, vocabulary)
    if not isinstance(row["capsule"], str) or not row["capsule"]:
        raise _RowFault(
            "capsule", f"must be a non-empty string (the capsule's name), got {value_shown(row['capsule'])}"
        )
    if row["device"] != device:
        raise _RowFault(
            "device", f"must be profile {profile}'s device {device!r} (a run's capsules run on its profile's "
            f"device), got {row['device']!r}"
        )
    obligations = tuple(ContractObligation.labels())
    contracts = _keyed(row["contracts"], "contracts", obligations)
    row["contracts"] = MappingProxyType({
        obligation: _descriptor(contracts[obligation], f"contracts.{obligation}", row["op"])
        for obligation in obligations
    })
    return MappingProxyType(row)


def capsule_rows(rows: object, profile: str, device: str) -> tuple[Mapping[str, Any], ...]:
    """``rows`` (a checkpoint's ``capsules``) as a tuple of read-only rows; see :class:`Checkpoint`.

    Raises:
        CheckpointError: not a non-empty list or tuple; a row :func:`_capsule_row` finds fault
            with (``capsules[2] trust must be one of checked | trusted-external, got 'x'``); a row
            of the op and capsule name of an earlier one.
    """
    if not isinstance(rows, list | tuple) or not rows:
        raise CheckpointError(
            "capsules must be a non-empty list of the run's capsules (report.audit_to_json of each) or None, "
            f"got {value_shown(rows)}"
        )
    checked = []
    seen: dict[tuple[str, str], int] = {}
    for index, row in enumerate(rows):
        try:
            checked.append(_capsule_row(row, device, profile))
        except _RowFault as fault:
            raise CheckpointError(f"capsules[{index}] {fault}") from None
        key = (checked[-1]["op"], checked[-1]["capsule"])
        if key in seen:
            raise CheckpointError(
                f"capsules[{index}] repeats capsules[{seen[key]}] (op {key[0]}, capsule "
                f"{value_shown(key[1])}): a run lists each capsule it selected once"
            )
        seen[key] = index
    return tuple(checked)
