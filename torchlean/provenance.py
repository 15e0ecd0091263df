"""What produced a result, for an auditor: the software, the command, the data and the capsule
table behind a run (``torchlean train``'s and ``predict``'s ``--report-json``, and a checkpoint's
metadata, all carry the same :func:`environment` block).

Four digests, each a SHA-256 (hex) that a user can recompute from what this docstring says:

- :func:`data_sha256`: the split data a run trains, validates and tests on (a
  :class:`torchlean.data.Dataset`), the digest ``torchlean train --save`` records in a checkpoint
  (``training.settings["data_sha256"]``) and ``--resume`` and ``predict --split`` compare;
- :func:`capsule_table_sha256`: the capsules a profile can select, so that a later torchlean whose
  profile of the same name selects other capsules is detectable;
- :func:`source_sha256`: this torchlean's own files (its code and the native extension's
  sources), so that two builds of one version number are told apart;
- :func:`weights_sha256`: a checkpoint's weights; :func:`file_sha256`: a file's bytes
  (``sha256sum``'s), the ``checkpoint_sha256`` of the records.

Nothing here runs git or another process: the torchlean version is the installed distribution's.
"""

from __future__ import annotations

import datetime
import functools
import hashlib
import json
import os
import platform
import sys
from collections.abc import Mapping, Sequence
from importlib import metadata
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean._atomic import NUL_IN_PATH
from torchlean._checks import shown_briefly
from torchlean.backend import profiles, report
from torchlean.backend.capsule import admissible
from torchlean.backend.display import path_shown
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.fields import BackendTypeError, describe, ordered_items
from torchlean.backend.vocabulary import Device, Provider

__all__ = [
    "DISTRIBUTIONS",
    "ENVIRONMENT_KEYS",
    "LATER_KEYS",
    "capsule_table",
    "capsule_table_sha256",
    "data_sha256",
    "environment",
    "environment_fault",
    "file_sha256",
    "is_sha256",
    "numpy_simd",
    "runs_torch",
    "runs_torch_on_cpu",
    "source_fault",
    "source_sha256",
    "source_sha256_or_none",
    "torch_cpu_capability",
    "weights_sha256",
]

DISTRIBUTIONS = (("torchlean", "torchlean"), ("numpy", "numpy"), ("torch", "torch"),
                 ("scikit_learn", "scikit-learn"))
"""The :func:`environment` keys holding an installed distribution's version, and the distribution."""

ENVIRONMENT_KEYS = (
    "torchlean", "torchlean_source_sha256", "python", "numpy", "numpy_simd", "torch",
    "torch_cpu_capability", "scikit_learn", "platform", "argv", "cwd", "utc", "profile",
    "capsule_table_sha256",
)
"""The keys of :func:`environment`'s block, in its order."""

LATER_KEYS = ("torchlean_source_sha256", "numpy_simd", "torch_cpu_capability")
"""The keys of :data:`ENVIRONMENT_KEYS` that a block written by an earlier torchlean lacks: a
checkpoint that holds all the others reads each as ``None`` (unknown)."""

_OPTIONAL_STRINGS = frozenset({"torchlean", "torchlean_source_sha256", "numpy", "numpy_simd", "torch",
                               "torch_cpu_capability", "scikit_learn", "cwd", "profile",
                               "capsule_table_sha256"})
"""The keys whose value :func:`environment` writes as a string or ``None``; ``python``,
``platform`` and ``utc`` are always strings, ``argv`` a list of strings."""

_UTC_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def _version(distribution: str) -> str | None:
    """The installed version of ``distribution`` (its metadata: nothing is imported), else None."""
    try:
        return metadata.version(distribution)
    except metadata.PackageNotFoundError:
        return None


_PACKAGE = Path(__file__).resolve().parent
"""The directory of the ``torchlean`` package this module belongs to."""

_SKIPPED_DIRECTORIES = frozenset({"__pycache__"})
_SKIPPED_SUFFIXES = frozenset({".pyc", ".pyo"})


def _source_files(root: Path) -> list[tuple[bytes, Path]]:
    """The files under ``root`` that :func:`source_sha256` reads, as (POSIX path relative to
    ``root`` as the file system's bytes, path), sorted by those bytes."""
    found = [
        (os.fsencode(path.relative_to(root).as_posix()), path)
        for path in root.rglob("*")
        if path.is_file() and path.suffix not in _SKIPPED_SUFFIXES
        and not _SKIPPED_DIRECTORIES.intersection(path.relative_to(root).parts)
    ]
    return sorted(found, key=lambda item: item[0])


@functools.cache
def source_sha256() -> str:
    """SHA-256 (hex) of this torchlean's package files, the ``torchlean_source_sha256`` of
    :func:`environment`: every file under the ``torchlean`` package directory (its ``.py``
    modules, ``py.typed`` and the native extension's C++/CUDA sources), but ``__pycache__``
    folders and ``.pyc``/``.pyo`` files, in the order of their paths relative to that directory
    (POSIX, ``/``-separated, as the file system's bytes, UTF-8 for UTF-8 names, compared as
    bytes); for each, that path, a NUL byte, the file's size in bytes as decimal ASCII, a NUL
    byte, then its bytes. The version number is
    ``0.1.0`` for every build so far; this digest tells two builds (or a checkout edited since)
    apart. An editable install digests the checkout's files. Computed once per process (about
    2.6 MB read).

    Raises:
        TorchLeanError: a package file cannot be read (naming it and the system's reason);
            :func:`environment` then records ``None`` (see :func:`source_fault`).
    """
    digest = hashlib.sha256()
    try:
        files = _source_files(_PACKAGE)
    except OSError as error:  # a folder that cannot be listed
        raise TorchLeanError(f"cannot list {_PACKAGE} to digest torchlean's source: {error}") from None
    for relative, path in files:
        try:
            content = path.read_bytes()
        except OSError as error:
            reason = error.strerror or error
            raise TorchLeanError(f"cannot read {path} to digest torchlean's source: {reason}") from None
        digest.update(relative + b"\0" + str(len(content)).encode("ascii") + b"\0")
        digest.update(content)
    return digest.hexdigest()


def source_sha256_or_none() -> str | None:
    """:func:`source_sha256`, or ``None`` where a package file cannot be read (:func:`source_fault`
    says which): the value the records carry as ``torchlean_source_sha256``."""
    try:
        return source_sha256()
    except TorchLeanError:
        return None


def source_fault() -> str | None:
    """Why :func:`source_sha256` cannot be computed here (its error's message), else ``None``: a
    command checks it before it trains, so that a package file it cannot read is a ``note:`` at
    the start, and the run's records then say ``null``, rather than a failure after the run
    (review104 H1)."""
    try:
        source_sha256()
    except TorchLeanError as error:
        return str(error)
    return None


def capsule_table(profile: str | profiles.BackendProfile) -> dict[str, Any]:
    """The capsules ``profile`` (a shipped profile's name, or a profile) can select, as ``torchlean
    capsules --profile NAME --format json`` prints them: the profile's ``profile``, ``device``,
    ``provider``, ``assurance`` and ``vjp`` labels and ``capsules``, one row per capsule its modules
    hold that its availability admits and its policy admits (``capsule``, ``module``, ``op``,
    ``provider``, ``device``, ``trust``, ``vjp``, ``reduction``, ``value_evidence``), in the
    modules' order.

    Raises:
        UnknownLabelError: an unknown profile name (naming the shipped ones).
        BackendTypeError: ``profile`` is neither a string nor a profile.
    """
    chosen = profiles.get(profile) if not isinstance(profile, profiles.BackendProfile) else profile
    rows = [
        report.capsule_row_to_json(module.name, capsule)
        for module in chosen.capsule_modules
        for capsule in module.capsules
        if chosen.availability.admits_capsule(capsule) and admissible(chosen.policy, capsule)
    ]
    return {**report.profile_to_json(chosen.name, chosen.policy), "capsules": rows}


def capsule_table_sha256(profile: str | profiles.BackendProfile) -> str:
    """SHA-256 (hex) of :func:`capsule_table` written as canonical JSON: ``json.dumps(table,
    sort_keys=True, separators=(",", ":"))`` (ASCII, non-ASCII escaped), encoded as UTF-8. The
    same bytes come from ``torchlean capsules --profile NAME --format json`` parsed and dumped so.
    A capsule added, removed, renamed or relabelled (provider, trust, VJP mode, reduction, value
    evidence), or a policy changed, changes it; the order of the modules does too.

    Raises:
        UnknownLabelError, BackendTypeError: as :func:`capsule_table`.
    """
    text = json.dumps(capsule_table(profile), sort_keys=True, separators=(",", ":"))
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _array_update(digest: Any, array: npt.NDArray[Any]) -> None:
    contiguous = np.ascontiguousarray(array)
    digest.update(f"{contiguous.dtype.str}{contiguous.shape};".encode())
    digest.update(contiguous.tobytes())


def data_sha256(dataset: Any) -> str:
    """SHA-256 (hex) of the split data of ``dataset`` (a :class:`torchlean.data.Dataset`, as
    :func:`torchlean.data.load` returns it: standardised features in the run's dtype, int64 class
    ids, or a regression's targets as read, float64 and not standardised), the digest
    ``torchlean train`` records as ``data_sha256``. It is computed over, in this order, for
    each of ``x_train``, ``y_train``, ``x_test``, ``y_test`` and then, when present (a
    ``val_fraction``), ``x_val``, ``y_val``: the ASCII text ``f"{a.dtype.str}{a.shape};"``
    (``<f4(120, 4);``) followed by the array's bytes in C order; then the UTF-8 text of
    ``repr(dataset.class_names)``, the repr of a tuple (``('setosa', 'versicolor', 'virginica')``;
    ``()`` for regression). Data read with the same settings (seed, test fraction, validation
    fraction, dtype, label column) hash alike whatever the file's path or delimiter.

    torchlean 0.1.0 before review86 F1 kept a regression's targets in the run's dtype, so a
    checkpoint it wrote records the digest of the targets rounded to that dtype (``<f4``):
    ``torchlean inspect --dataset``, ``predict`` and ``train --resume`` still recognise it.

    Raises:
        TorchLeanError: ``dataset`` lacks those fields (not a ``Dataset``), naming its type.
    """
    names = ("x_train", "y_train", "x_test", "y_test", "x_val", "y_val", "class_names")
    if not all(hasattr(dataset, name) for name in names):
        raise TorchLeanError(
            f"data_sha256 takes a torchlean.data.Dataset (data.load's result), got {type(dataset).__name__}"
        )
    digest = hashlib.sha256()
    parts = (dataset.x_train, dataset.y_train, dataset.x_test, dataset.y_test, dataset.x_val, dataset.y_val)
    for array in (part for part in parts if part is not None):
        _array_update(digest, array)
    digest.update(repr(dataset.class_names).encode())
    return digest.hexdigest()


def file_sha256(path: str | os.PathLike[str]) -> str:
    """SHA-256 (hex) of the bytes of the file at ``path``: what ``sha256sum PATH`` prints.

    Raises:
        TorchLeanError: ``path`` not a ``str`` or ``os.PathLike``; the file cannot be read (naming
            it, as :func:`~torchlean.backend.display.path_shown` shows it, and the system's reason:
            ``cannot read $'a\\x00b' to digest it: the path holds a NUL byte, which no file name
            can``, ``... File name too long``).
    """
    if not isinstance(path, str | os.PathLike):
        got = f"{shown_briefly(path)} of type {type(path).__name__}"
        raise TorchLeanError(f"file_sha256: a path must be a str or os.PathLike, got {got}")
    digest = hashlib.sha256()
    try:
        with open(path, "rb") as handle:
            for block in iter(lambda: handle.read(1 << 20), b""):
                digest.update(block)
    except (OSError, ValueError) as error:  # ValueError: a NUL byte in the path (review239 F11)
        reason = NUL_IN_PATH if isinstance(error, ValueError) else error.strerror or error
        shown = path_shown(os.fsdecode(os.fspath(path)))
        raise TorchLeanError(f"cannot read {shown} to digest it: {reason}") from None
    return digest.hexdigest()


def weights_sha256(weights: Mapping[str, npt.NDArray[Any]]) -> str:
    """SHA-256 (hex) of ``weights`` (parameter name to array, as a checkpoint's ``weights``): for
    each entry in the mapping's order, the UTF-8 name and a newline, then ``f"{a.dtype.str}{a.shape};"``
    and the array's bytes in C order (as :func:`data_sha256` hashes an array).

    Raises:
        TorchLeanError: ``weights`` is not a mapping of strings to numpy arrays.
    """
    if not isinstance(weights, Mapping) or not all(
        isinstance(name, str) and isinstance(value, np.ndarray) for name, value in weights.items()
    ):
        raise TorchLeanError(f"weights_sha256 takes a mapping of names to numpy arrays, got {weights!r:.80}")
    digest = hashlib.sha256()
    for name, value in weights.items():
        digest.update(name.encode("utf-8") + b"\n")
        _array_update(digest, value)
    return digest.hexdigest()


def numpy_simd() -> str | None:
    """The SIMD code paths numpy runs its ufuncs on here: its baseline targets, then the dispatch
    targets this CPU offers (and ``NPY_ENABLE_CPU_FEATURES``/``NPY_DISABLE_CPU_FEATURES`` leave
    on), space-joined, as ``np.show_runtime()`` reports them: ``X86_V2 X86_V3 X86_V4 AVX512_ICL``.
    numpy picks an ``exp``, ``log``, ``tanh`` or ``sin`` kernel by this level, and the kernels round
    differently, so the ``reference`` kernels' bits depend on it (review109 F1); ``None`` where
    numpy does not say (its ``_multiarray_umath`` module lacks the attributes)."""
    module = sys.modules.get("numpy._core._multiarray_umath")  # numpy 2's name
    module = module or sys.modules.get("numpy.core._multiarray_umath")  # numpy 1's
    baseline = getattr(module, "__cpu_baseline__", None)
    dispatch = getattr(module, "__cpu_dispatch__", None)
    features = getattr(module, "__cpu_features__", None)
    if not isinstance(baseline, list) or not isinstance(dispatch, list) or not isinstance(features, dict):
        return None
    return " ".join([*baseline, *(target for target in dispatch if features.get(target))])


def _profile_argument(profile: object, function: str) -> profiles.BackendProfile:
    """``profile``, a profile or a shipped profile's name (as :func:`capsule_table` takes it), as
    a profile.

    Raises:
        BackendTypeError: neither (review239 F8: ``None`` or a bool raised a bare
            ``AttributeError``), naming ``function``, the value, its type and what is accepted.
        UnknownLabelError: an unknown profile name (naming the shipped ones).
    """
    if isinstance(profile, profiles.BackendProfile):
        return profile
    if not isinstance(profile, str):
        raise BackendTypeError(
            f"{function}: profile must be a BackendProfile or a shipped profile's name "
            f"({' | '.join(profiles.names())}), got {describe(profile)}"
        )
    return profiles.get(profile)


def runs_torch(profile: profiles.BackendProfile | str) -> bool:
    """Whether ``profile`` (a profile, or a shipped profile's name) has aten or LibTorch capsules
    on its device: torch kernels, whose reductions are implementation-defined, so their bits may
    depend on torch's thread count (and on the CPU, on its kernel level:
    :func:`torch_cpu_capability`).

    Raises:
        BackendTypeError: ``profile`` is neither a profile nor a string; UnknownLabelError: an
            unknown profile name.
    """
    chosen = _profile_argument(profile, "runs_torch")
    device = chosen.policy.device
    return any(
        capsule.provider in (Provider.ATEN, Provider.LIBTORCH) and capsule.device is device
        for capsule in chosen.registry()
    )


def runs_torch_on_cpu(profile: profiles.BackendProfile | str) -> bool:
    """Whether ``profile`` (a profile, or a shipped profile's name) runs torch kernels
    (:func:`runs_torch`) on the CPU: the profiles whose records hold :func:`torch_cpu_capability`
    (null by design for every other one).

    Raises:
        BackendTypeError, UnknownLabelError: as :func:`runs_torch`.
    """
    chosen = _profile_argument(profile, "runs_torch_on_cpu")
    return chosen.policy.device is Device.CPU and runs_torch(chosen)


def torch_cpu_capability(profile: profiles.BackendProfile | str | None) -> str | None:
    """torch's CPU kernel level (``torch.backends.cpu.get_cpu_capability()``: ``DEFAULT``,
    ``AVX2``, ``AVX512``; torch picks it from the CPU and ``ATEN_CPU_CAPABILITY``) when
    ``profile`` (a profile, or a shipped profile's name) runs torch kernels (:func:`runs_torch`) on
    the CPU, whose bits depend on it as the ``reference`` kernels' depend on :func:`numpy_simd`;
    ``None`` for another profile (torch is then not imported), for none, or where torch is not
    installed.

    Raises:
        BackendTypeError, UnknownLabelError: as :func:`runs_torch`, for a ``profile`` other than
            ``None``.
    """
    if profile is None:
        return None
    if not runs_torch_on_cpu(_profile_argument(profile, "torch_cpu_capability")):
        return None
    try:
        import torch
    except ImportError:
        return None
    return str(torch.backends.cpu.get_cpu_capability())


def environment(
    argv: Sequence[str] | None = None, profile: str | profiles.BackendProfile | None = None
) -> dict[str, Any]:
    """The block that says what software ran a command, and how, in this order
    (:data:`ENVIRONMENT_KEYS`): ``torchlean`` (the installed distribution's version),
    ``torchlean_source_sha256`` (:func:`source_sha256`: which build of that version; ``None`` when
    a package file cannot be read, :func:`source_fault`), ``python``
    (``platform.python_version()``), ``numpy``, ``numpy_simd`` (:func:`numpy_simd`: the SIMD level
    numpy's ufuncs run at, on which the ``reference`` kernels' bits depend), ``torch`` (the
    installed distribution's version, as for ``numpy``), ``torch_cpu_capability``
    (:func:`torch_cpu_capability`: torch's CPU kernel level when the profile runs torch kernels on
    the CPU, else ``None``; only then is torch imported) and ``scikit_learn`` (the ``numpy``,
    ``torch`` and ``scikit_learn`` versions are those the installed distributions' metadata give,
    ``torch 2.13.0+cpu`` with its build tag; ``None`` for one not installed; nothing is imported for
    them, as for ``torchlean``), ``platform`` (``platform.platform()``), ``argv`` (the command
    line: ``argv`` as given, a list of strings, else ``sys.argv``), ``cwd`` (the working
    directory, which relative paths in ``argv`` are relative to), ``utc`` (the time now, UTC,
    ``2025-01-31T12:00:00Z``), ``profile`` (the name of ``profile``, or ``None``) and
    ``capsule_table_sha256`` (:func:`capsule_table_sha256` of ``profile``, or ``None``).

    Raises:
        BackendTypeError (a :class:`TorchLeanError` and a ``TypeError``): ``argv`` is not a sequence
            of strings: a string, a 0-d array, a set or a mapping (whose order is not the command
            line's), a value that is not iterable, or an entry that is not a string (review239 F4,
            F8), naming ``argv`` (or the entry, ``argv[1] = 3 (int)``), the value and its type.
        BackendValueError: ``argv`` has more than 2**24 words (read by ``len()``
            where it has one: a stride-0 view of 2**40 entries is refused at once, review239 F2).
        UnknownLabelError, BackendTypeError: as :func:`capsule_table` for ``profile``.
    """
    command = _argv_words(sys.argv if argv is None else argv)
    versions = {key: _version(distribution) for key, distribution in DISTRIBUTIONS}
    try:
        cwd: str | None = os.getcwd()
    except OSError:  # the working directory was removed
        cwd = None
    chosen = None if profile is None else (
        profiles.get(profile) if not isinstance(profile, profiles.BackendProfile) else profile
    )
    block = {
        "torchlean": versions["torchlean"],
        "torchlean_source_sha256": source_sha256_or_none(),
        "python": platform.python_version(),
        "numpy": versions["numpy"],
        "numpy_simd": numpy_simd(),
        "torch": versions["torch"],
        "torch_cpu_capability": torch_cpu_capability(chosen),
        "scikit_learn": versions["scikit_learn"],
        "platform": platform.platform(),
        "argv": command,
        "cwd": cwd,
        "utc": datetime.datetime.now(datetime.UTC).strftime(_UTC_FORMAT),
        "profile": None if chosen is None else chosen.name,
        "capsule_table_sha256": None if chosen is None else capsule_table_sha256(chosen),
    }
    assert tuple(block) == ENVIRONMENT_KEYS
    return block


_ARGV_WORDS = 2**24
"""The most words :func:`environment` records as ``argv``: a checkpoint's metadata, which
holds the block, is read up to 2**24 characters, and each word takes more than one there."""


def _argv_words(argv: object) -> list[str]:
    """``argv`` (:func:`environment`'s) as the list of strings the block records.

    Raises:
        BackendTypeError, BackendValueError: as :func:`environment` says.
    """
    accepted = "a sequence of strings"  # the command line's words; None is sys.argv
    words = ordered_items(argv, "environment: argv", accepted, "a command line's words are in order",
                          _ARGV_WORDS)
    for index, word in enumerate(words):
        if not isinstance(word, str):
            got = f"argv[{index}] = {describe(word)}"
            raise BackendTypeError(f"environment: argv must be {accepted}, got {got}")
    return [str(word) for word in words]  # a numpy str_ as a plain one


def is_sha256(value: object) -> bool:
    """Whether ``value`` is a SHA-256 as this module's digests write it: 64 lowercase hex digits."""
    return isinstance(value, str) and len(value) == 64 and all(c in "0123456789abcdef" for c in value)


def _value_fault(key: str, value: object) -> str | None:
    """How ``value`` is not of the type :func:`environment` writes for ``key``, else ``None``."""
    if key == "argv":
        if isinstance(value, list | tuple) and all(isinstance(word, str) for word in value):
            return None
        return f"'argv' must be a list of strings, got {_shown(value)}"
    if isinstance(value, str) or (value is None and key in _OPTIONAL_STRINGS):
        return None
    return f"{key!r} must be a string{' or None' if key in _OPTIONAL_STRINGS else ''}, got {_shown(value)}"


def _shown(value: object) -> str:
    """A recorded value as a fault names it: its repr, cut to 200 characters (an edited block's
    value may hold megabytes)."""
    return shown_briefly(value, 200)


def environment_fault(block: Mapping[str, Any]) -> str | None:
    """The first way ``block``, a mapping with the keys :data:`ENVIRONMENT_KEYS` (a checkpoint's,
    read back), differs from what :func:`environment` writes, else ``None``: not a mapping, a
    missing key (review239 F8: these raised ``TypeError`` and ``KeyError``), a value not of its
    key's type (``argv`` a list or tuple of strings; ``python``, ``platform`` and ``utc`` strings;
    the others strings or ``None``), a ``utc`` not in the form ``2025-01-31T12:00:00Z``, a
    ``capsule_table_sha256`` or ``torchlean_source_sha256`` that is not 64 lowercase hex digits
    (``None`` is taken for both: a checkpoint written before torchlean recorded its source's
    digest reads it as ``None``), or a ``profile`` and
    ``capsule_table_sha256`` of which only one is ``None`` (:func:`environment` writes both or
    neither: a digest without its profile names no table, review65 F5). Keys beyond
    :data:`ENVIRONMENT_KEYS` are not looked at (a checkpoint refuses them itself). Raises nothing.
    """
    if not isinstance(block, Mapping):
        return (f"the environment block must be a mapping with the keys of provenance.environment(), "
                f"got {shown_briefly(block)} of type {type(block).__name__}")
    missing = [key for key in ENVIRONMENT_KEYS if key not in block]
    if missing:
        return (f"the environment block lacks the key{'s' if len(missing) > 1 else ''} "
                f"{', '.join(map(repr, missing))} (accepted: a mapping with the keys "
                f"{', '.join(ENVIRONMENT_KEYS)})")
    for key in ENVIRONMENT_KEYS:
        fault = _value_fault(key, block[key])
        if fault is not None:
            return fault
    try:
        datetime.datetime.strptime(block["utc"], _UTC_FORMAT)
    except ValueError:
        return f"'utc' must be a UTC time such as '2025-01-31T12:00:00Z', got {_shown(block['utc'])}"
    for key in ("torchlean_source_sha256", "capsule_table_sha256"):
        if block[key] is not None and not is_sha256(block[key]):
            return f"{key!r} must be 64 lowercase hex digits (a SHA-256) or None, got {_shown(block[key])}"
    digest, profile = block["capsule_table_sha256"], block["profile"]
    if (digest is None) != (profile is None):
        return (f"'profile' and 'capsule_table_sha256' are both None or both given "
                f"(provenance.environment(profile=...) writes both), got profile {profile!r} and "
                f"capsule_table_sha256 {digest!r}")
    return None
