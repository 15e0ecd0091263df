"""Kernel time by capsule: ``with torchlean.profiler.profile() as prof: ...; print(prof.table())``.

The audit (``session.selected``, ``trainer.selected``) says which capsule computed each op; this
module says where the time went, per capsule: how many times its forward kernel and its VJP ran
inside the block, and for how long (``time.perf_counter``, seconds). It mirrors
``torch.profiler.profile(...).key_averages()``, keyed by the capsule instead of the ATen op.

What is timed: every kernel run through an accepted, bound capsule
(:func:`~torchlean.autograd.dispatch.execute_bound`: eager ops, typed-graph steps and the batch
norm running-statistics update), from the call of its bound executable to its return (the
linked implementation, with its guard, and the check that the executable and its accepted kernel
are the ones the gates minted, about 2 µs a call: review143 F5), and the VJP of every tape node
recorded inside the block when the backward pass runs it inside the same block (a block around
``backward()`` alone times no VJP: open it around the forward too). Not timed as kernels:
planning, acceptance and binding at an op's first use (with a provider's one-time set-up there:
importing torch, a second or so, for the first aten or LibTorch capsule of a process), operand
checks, the tape's gradient accumulation, the optimizer's update and everything else in Python; they are
the difference between :attr:`KernelProfile.wall_seconds` and
:attr:`KernelProfile.kernel_seconds`. A kernel that raises is not counted.

On ``cuda`` capsules the profiler synchronises the device before and after each kernel (so the
time is the kernel's, not its launch's), which serialises the stream while the block runs.

Profiles nest (each open one records the kernels run inside it) and are per thread and per
``contextvars`` context, as the gradient mode is. Profiling adds two clock reads and a dictionary
update per kernel; without an open profile, kernels pay one context-variable read.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from contextvars import ContextVar
from dataclasses import dataclass
from types import TracebackType

from torchlean._checks import checked_int
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.vocabulary import Device

__all__ = [
    "KernelProfile", "KernelTime", "ProfilerError", "ProfilerTypeError", "ProfilerValueError", "active",
    "profile", "synchronizer",
]


class ProfilerError(TorchLeanError, RuntimeError):
    """A profile used out of order: entered twice, or read while it is still open."""


class ProfilerTypeError(TorchLeanError, TypeError):
    """An argument of the wrong type (``synchronizer(3)``: review161 F9)."""


class ProfilerValueError(TorchLeanError, ValueError):
    """An argument of a profile's method out of its domain (``table(limit=0)``): a ``ValueError``,
    as it was before it was a torchlean error (review160 F7)."""


@dataclass(frozen=True, slots=True)
class KernelTime:
    """One capsule's time inside a profile.

    ``capsule``, ``op``, ``provider`` and ``device`` identify the capsule (as the audit does);
    ``forward_calls``/``forward_seconds`` count its forward kernel, ``vjp_calls``/``vjp_seconds``
    its VJP (seconds of wall-clock time, ``time.perf_counter``).
    """

    capsule: str
    op: str
    provider: str
    device: str
    forward_calls: int
    forward_seconds: float
    vjp_calls: int
    vjp_seconds: float

    @property
    def total_seconds(self) -> float:
        """``forward_seconds + vjp_seconds``."""
        return self.forward_seconds + self.vjp_seconds

    def to_json(self) -> dict[str, str | int | float]:
        """The record as a JSON object (the fields above and ``total_seconds``)."""
        return {
            "capsule": self.capsule,
            "op": self.op,
            "provider": self.provider,
            "device": self.device,
            "forward_calls": self.forward_calls,
            "forward_seconds": self.forward_seconds,
            "vjp_calls": self.vjp_calls,
            "vjp_seconds": self.vjp_seconds,
            "total_seconds": self.total_seconds,
        }


_Key = tuple[str, str, str, str]


class KernelProfile:
    """The context manager :func:`profile` returns; read it after the block.

    :attr:`kernels` lists one :class:`KernelTime` per capsule that ran, most time first;
    :attr:`wall_seconds` is the block's wall-clock time and :attr:`kernel_seconds` the sum of
    the kernels' times (forward and VJP). :meth:`table` renders them.

    Raises:
        ProfilerError: entering a profile twice; reading :attr:`kernels`, :attr:`wall_seconds`,
            :attr:`kernel_seconds` or :meth:`table` before the block has ended.
    """

    def __init__(self) -> None:
        self._times: dict[_Key, list[float]] = {}
        self._started: float | None = None
        self._wall: float | None = None
        self._open = False

    def __enter__(self) -> KernelProfile:
        if self._started is not None:
            raise ProfilerError(
                "a kernel profile can be entered once; open a new torchlean.profiler.profile()"
            )
        _ACTIVE.set((*_ACTIVE.get(), self))
        self._open = True
        self._started = time.perf_counter()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, error: BaseException | None, trace: TracebackType | None
    ) -> None:
        assert self._started is not None and self._open
        self._wall = time.perf_counter() - self._started
        # this profile leaves the open ones, whatever order the blocks end in (an ExitStack, or
        # hand-written enter/exit, may end an outer one first: review28 F8)
        _ACTIVE.set(tuple(profile for profile in _ACTIVE.get() if profile is not self))
        self._open = False

    @property
    def is_open(self) -> bool:
        """Whether the block is running (entered, not yet exited)."""
        return self._open

    def add(self, capsule: KernelCapsule, seconds: float, *, vjp: bool) -> None:
        """Count one forward kernel (or VJP, ``vjp=True``) of ``capsule`` taking ``seconds``."""
        key = (capsule.name, capsule.op.label, capsule.provider.label, capsule.device.label)
        entry = self._times.get(key)
        if entry is None:
            entry = self._times[key] = [0, 0.0, 0, 0.0]
        slot = 2 if vjp else 0
        entry[slot] += 1
        entry[slot + 1] += seconds

    def _closed(self, what: str) -> None:
        if self._wall is None:
            raise ProfilerError(f"read a kernel profile's {what} after its `with` block ends")

    @property
    def kernels(self) -> tuple[KernelTime, ...]:
        """One record per capsule that ran, most total time first (ties: by capsule name)."""
        self._closed("kernels")
        records = [
            KernelTime(name, op, provider, device, int(fc), fs, int(vc), vs)
            for (name, op, provider, device), (fc, fs, vc, vs) in self._times.items()
        ]
        return tuple(sorted(records, key=lambda r: (-r.total_seconds, r.capsule, r.device)))

    @property
    def wall_seconds(self) -> float:
        """The block's wall-clock time, seconds."""
        self._closed("wall_seconds")
        assert self._wall is not None
        return self._wall

    @property
    def kernel_seconds(self) -> float:
        """The time spent in the kernels counted, forward and VJP, seconds."""
        self._closed("kernel_seconds")
        return sum(r.total_seconds for r in self.kernels)

    def table(self, limit: int | None = None) -> str:
        """The records as an aligned text table, most time first, with each capsule's share of
        :attr:`kernel_seconds`; ``limit`` keeps the first rows (the rest summed in one line).

        Raises:
            ProfilerError: read before the block has ended.
            ProfilerValueError: ``limit`` not an integer >= 1 (a numpy integer is one) or ``None``.
        """
        if limit is not None:
            limit = checked_int(limit, "table: limit", 1, ProfilerValueError)
        records = self.kernels
        total = self.kernel_seconds
        shown, rest = (records, ()) if limit is None else (records[:limit], records[limit:])
        header = ("capsule", "device", "forward calls", "forward s", "vjp calls", "vjp s", "total s", "share")
        rows = [header]
        for r in shown:
            rows.append((
                r.capsule, r.device, str(r.forward_calls), f"{r.forward_seconds:.4f}", str(r.vjp_calls),
                f"{r.vjp_seconds:.4f}", f"{r.total_seconds:.4f}", _share(r.total_seconds, total),
            ))
        if rest:
            seconds = sum(r.total_seconds for r in rest)
            rows.append((f"({len(rest)} more capsules)", "", str(sum(r.forward_calls for r in rest)), "",
                         str(sum(r.vjp_calls for r in rest)), "", f"{seconds:.4f}", _share(seconds, total)))
        widths = [max(len(row[i]) for row in rows) for i in range(len(header))]
        lines = ["  ".join(_aligned(row, widths)) for row in rows]
        lines.append(
            f"kernels {total:.4f} s of {self.wall_seconds:.4f} s wall "
            f"({_share(total, self.wall_seconds)}; the rest: planning, checks, the tape, the optimizer, "
            "Python)"
        )
        return "\n".join(line.rstrip() for line in lines)


def _aligned(row: tuple[str, ...], widths: list[int]) -> list[str]:
    """The cells of a table row padded to ``widths``: the two name columns left, numbers right."""
    cells = enumerate(zip(row, widths, strict=True))
    return [cell.ljust(w) if i < 2 else cell.rjust(w) for i, (cell, w) in cells]


def _share(part: float, whole: float) -> str:
    return f"{100.0 * part / whole:.1f}%" if whole > 0 else "-"


_ACTIVE: ContextVar[tuple[KernelProfile, ...]] = ContextVar("torchlean_kernel_profiles", default=())


def profile() -> KernelProfile:
    """A kernel profile: ``with torchlean.profiler.profile() as prof:`` times every capsule's
    kernels run in the block (see the module docstring); read ``prof.kernels`` or
    ``prof.table()`` after it. Mirrors ``torch.profiler.profile`` with ``key_averages()`` keyed
    by capsule."""
    return KernelProfile()


def active() -> tuple[KernelProfile, ...]:
    """The profiles open in this context, outermost first (``()`` when none: the hot path's test)."""
    return _ACTIVE.get()


def synchronizer(capsule: KernelCapsule) -> Callable[[], None] | None:
    """What to call around a timed kernel of ``capsule`` so its time is the device's:
    ``torch.cuda.synchronize`` for a ``cuda`` capsule on a machine with a CUDA device, else
    ``None`` (the host emulation of the test suite runs ``cuda`` capsules on the CPU).

    Raises:
        ProfilerTypeError: ``capsule`` is not a :class:`KernelCapsule` (review160 F8).
    """
    if not isinstance(capsule, KernelCapsule):
        raise ProfilerTypeError(f"synchronizer needs a KernelCapsule, got {type(capsule).__name__}")
    if capsule.device is not Device.CUDA:
        return None
    import torch  # a cuda capsule ran: torch is loaded

    return torch.cuda.synchronize if torch.cuda.is_available() else None
