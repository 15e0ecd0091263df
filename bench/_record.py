"""Shared helpers of the ``bench/`` scripts: the common command line, thread settings, timing
statistics, the environment block, the backend report, markdown tables and the record writer.

Every script that ``run.py`` runs writes ``DIR/<name>.json`` (one record) and ``DIR/<name>.md`` (a
short table, also printed; ``flash_memory.py``, a separate memory study, writes its own record). A
record always holds ``name``, ``machine``, ``versions``, ``threads`` and ``backend``
plus the script's own measurements; medians come with their spread (quartiles, min, max and the
number of repeats). Nothing here asserts a speed: these are measurements, not tests.
"""

from __future__ import annotations

import argparse
import ctypes
import gc
import json
import os
import platform
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterable, Sequence
from pathlib import Path
from typing import Any, NoReturn

import numpy as np
import torch

ROOT = Path(__file__).resolve().parents[1]
"""This checkout, put first on ``sys.path`` (after ``bench/``) before torchlean is imported, so
that a script measures the checkout it belongs to, installed or not, as ``gpu_check.py`` does
(review227 F6: without an install the scripts stopped with a traceback, and with one elsewhere
they measured that one)."""
if str(ROOT) not in sys.path:
    sys.path.insert(1, str(ROOT))

from torchlean.backend.errors import TorchLeanError  # noqa: E402  (after ROOT is on sys.path)
from torchlean.backend.vocabulary import did_you_mean  # noqa: E402
from torchlean.cli._args import int_at_least  # noqa: E402
from torchlean.cli._output import check_writable, file_path  # noqa: E402
from torchlean.cli._threads import MAX_TORCH_THREADS, torch_threads  # noqa: E402

DEFAULT_OUT = Path(__file__).resolve().parent / "results"
THREAD_ENV_VARS = ("OMP_NUM_THREADS", "MKL_NUM_THREADS", "OPENBLAS_NUM_THREADS")


def description(docstring: str | None, fallback: str) -> str:
    """A script's ``--help`` description: the first paragraph of its module docstring, its lines
    joined (a first line alone may stop mid-sentence), else ``fallback``."""
    if not docstring:
        return fallback
    return " ".join(docstring.strip().split("\n\n")[0].split())


def parser(description: str) -> argparse.ArgumentParser:
    """The common command line: ``--quick``, ``--out DIR``, ``--threads N`` and the hidden
    ``--smoke`` (tiny sizes, for ``tests/bench``; its numbers mean nothing)."""
    p = argparse.ArgumentParser(description=description)
    p.add_argument("--quick", action="store_true",
                   help="fewer repeats or steps, and in some scripts fewer sizes (all scripts < 5 min)")
    p.add_argument("--out", type=out_dir, default=DEFAULT_OUT,
                   help=f"output directory (default {DEFAULT_OUT})")
    p.add_argument("--threads", type=torch_threads, default=1,
                   help=f"torch intra-op threads and BLAS threads, 1 to {MAX_TORCH_THREADS} (default 1)")
    p.add_argument("--smoke", action="store_true", help=argparse.SUPPRESS)
    return p


def positive_seconds(text: str) -> float:
    """A finite number of seconds > 0 (an argparse type)."""
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid number {text!r}") from None
    if not (value > 0 and value != float("inf")):
        raise argparse.ArgumentTypeError(f"must be a finite number of seconds > 0, got {text}")
    return value


def out_dir(text: str) -> Path:
    """``--out``: a directory that exists and can be written, or that can be created (its nearest
    existing parent is a writable directory), checked before any measurement runs (an argparse
    type: a bad path is a one-line usage error). Nothing is created here: :func:`write` makes the
    folder, so a run refused for another option leaves none behind (review143 F7).
    """
    path = Path(text)
    if path.exists() and not path.is_dir():
        raise argparse.ArgumentTypeError(f"cannot write results to {text}: it is a file, not a folder")
    existing = path
    while not existing.exists() and existing != existing.parent:
        existing = existing.parent
    if not existing.is_dir():
        raise argparse.ArgumentTypeError(
            f"cannot write results to {text}: {existing} is a file, not a folder"
        )
    try:  # a probe file in that folder, removed at once (root passes os.access even on /proc)
        tempfile.TemporaryFile(dir=existing).close()
    except OSError as exc:
        raise argparse.ArgumentTypeError(f"cannot write results to {text}: {exc.strerror or exc}") from None
    return path


positive_int = int_at_least(1, "must be >= 1, got {}", not_int="invalid int {}")
"""An integer >= 1 (an argparse type)."""


def set_threads(n: int) -> None:
    """Use ``n`` torch intra-op threads and (when ``threadpoolctl`` is installed) ``n`` BLAS/OpenMP
    threads in numpy's libraries, so every implementation runs on the same thread count."""
    torch.set_num_threads(n)
    try:
        from threadpoolctl import threadpool_limits  # type: ignore[import-untyped]
    except ImportError:
        return
    threadpool_limits(n)


def threads() -> dict[str, Any]:
    """Thread settings in effect: torch intra-op/interop threads, the environment variables that
    size thread pools, and numpy's native thread pools (``threadpoolctl``, when installed)."""
    record: dict[str, Any] = {
        "torch_intra_op": torch.get_num_threads(),
        "torch_interop": torch.get_num_interop_threads(),
        "env": {name: os.environ.get(name) for name in THREAD_ENV_VARS},
    }
    try:
        from threadpoolctl import threadpool_info
    except ImportError:
        record["native_pools"] = "threadpoolctl not installed"
    else:
        record["native_pools"] = [
            {"library": pool.get("prefix"), "api": pool.get("internal_api"),
             "num_threads": pool.get("num_threads")}
            for pool in threadpool_info()
        ]
    return record


def machine() -> dict[str, Any]:
    """Platform, processor and CPU count of this machine."""
    return {
        "platform": platform.platform(),
        "machine": platform.machine(),
        "processor": platform.processor() or _cpu_model(),
        "cpu_count": os.cpu_count(),
    }


def _cpu_model() -> str:
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return "unknown"


def versions() -> dict[str, str]:
    """Versions of python, numpy, torch and torchlean (``torchlean.__version__``: the installed
    distribution's version, ``0+unknown`` when none is installed; the record's ``commit`` says
    which folder was imported)."""
    import torchlean

    return {
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "torchlean": torchlean.__version__,
    }


def worst(values: Iterable[float]) -> float:
    """The largest of ``values`` (differences from a reference), NaN when any of them is NaN: a
    NaN result disagrees, where Python's ``max`` keeps an earlier number (``max(0.0, nan)`` is 0.0;
    review227 F1: a kernel returning NaN read "agrees")."""
    listed = [float(value) for value in values]
    if any(value != value for value in listed):
        return float("nan")
    return max(listed, default=0.0)


def child_environment() -> dict[str, str]:
    """The environment of a child Python a script measures in: ``PYTHONPATH`` led by the folder
    torchlean was imported from here, so the child imports the library the record names (review227
    F2); start it with ``-P`` too, or ``python -c`` puts the working directory first
    (review231 F2)."""
    import torchlean

    imported = str(Path(torchlean.__file__).resolve().parents[1])
    path = os.pathsep.join(filter(None, (imported, os.environ.get("PYTHONPATH"))))
    return {**os.environ, "PYTHONPATH": path}


def summary(samples: Sequence[float]) -> dict[str, float | int]:
    """Median, quartiles, IQR, min and max of ``samples`` and how many there are.

    Raises:
        ValueError: no samples.
    """
    if not samples:
        raise ValueError("summary of no samples")
    values = sorted(float(s) for s in samples)
    if len(values) >= 2:
        q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    else:
        q1 = q3 = values[0]
    return {
        "median": statistics.median(values),
        "q1": q1,
        "q3": q3,
        "iqr": q3 - q1,
        "min": values[0],
        "max": values[-1],
        "repeats": len(values),
    }


def time_calls(
    call: Callable[[], object], repeats: int, *, warmup: int = 1, collect: bool = False
) -> list[float]:
    """Wall seconds of ``repeats`` calls of ``call`` after ``warmup`` untimed calls. With
    ``collect``, a full garbage collection runs (untimed) before each timed call, so no call pays
    for garbage left by the previous one (the collector stays enabled during the call)."""
    for _ in range(warmup):
        call()
    samples = []
    for _ in range(repeats):
        if collect:
            gc.collect()
        started = time.perf_counter()
        call()
        samples.append(time.perf_counter() - started)
    return samples


def backend_rows(selected: Iterable[Any]) -> list[dict[str, str]]:
    """Op, capsule name, provider, reduction policy, VJP mode (who owns the backward:
    ``torchlean-tape``, ``backend-vjp``) and trust level of each accepted kernel, once each: what
    ran for ``Trainer.selected`` and ``Session.selected``; what the plan would run for
    ``AcceptedGraphKernelPlan.kernels`` (the planning benchmark executes no kernel)."""
    rows: list[dict[str, str]] = []
    seen: set[str] = set()
    for kernel in selected:
        capsule = kernel.capsule
        if capsule.name in seen:
            continue
        seen.add(capsule.name)
        rows.append({
            "op": capsule.op.label,
            "capsule": capsule.name,
            "provider": capsule.provider.label,
            "reduction": capsule.numerical_policy.reduction.label,
            "vjp": capsule.vjp_mode.label,
            "trust": capsule.trust_level.label,
        })
    return rows


DISAGREES = 3
"""The exit status of a script whose agreement check failed (its results off the reference's),
after it wrote its record: ``run.py`` reports it, and its verdicts say so (review143 F2)."""

NOISY_IQR = 1.5
"""A timing whose interquartile range exceeds this multiple of its median is too noisy for a
verdict: its target says ``"reliable": false`` and its table cell ``(noisy)`` (review83 F8: a
PyTorch step of median 27.9 ms with IQR 0.83-112 ms still read "met")."""

NOISY_WALL_CPU = 1.25
"""A timing whose median wall time exceeds this multiple of its median process-CPU time is too
noisy for a verdict as well: the process waited (for a CPU another job held) in a steady way that
the IQR does not show (in a loaded run the PyTorch step took 0.88 ms wall for 0.50 ms CPU time and
no verdict said noisy). On one thread an unloaded run spends nearly all its wall time on the CPU
(about 1.0x); CPU time counts every thread, so with several threads the rule sees less load."""


def target(
    value: float, limit: float, description: str, *timings: dict[str, Any],
    cpu: Sequence[dict[str, Any]] = (),
    wall_cpu: Sequence[tuple[dict[str, Any], dict[str, Any]]] = (),
    agrees: bool = True,
) -> dict[str, Any]:
    """A target ``value <= limit``: the value, the limit, whether it was met, and whether the
    :func:`summary` ``timings`` it was computed from were steady enough to say so (each IQR at
    most :data:`NOISY_IQR` times its median) and unloaded: each median wall time at most
    :data:`NOISY_WALL_CPU` times its median CPU time (``wall_per_cpu``), for ``cpu``, the
    process-CPU summaries of the same timings in the same order, and for ``wall_cpu``, more
    (wall, CPU) pairs of the timed calls the value was derived from. ``noisy`` says why not.
    ``agrees`` False (the script's agreement check found its results off the reference's) is
    kept in the entry: :func:`verdict` says so beside met/MISSED (review143 F2).

    Raises:
        ValueError: ``cpu`` is given for some of the timings only.
    """
    if cpu and len(cpu) != len(timings):
        raise ValueError(f"target: {len(cpu)} CPU-time summaries for {len(timings)} timings")
    noisy = []
    if not all(t["iqr"] <= NOISY_IQR * t["median"] for t in timings):
        noisy.append(f"IQR > {NOISY_IQR}x median")
    pairs = [*zip(timings, cpu, strict=False), *wall_cpu]
    wall_per_cpu = [t["median"] / c["median"] if c["median"] > 0 else float("inf") for t, c in pairs]
    if wall_per_cpu and max(wall_per_cpu) > NOISY_WALL_CPU:
        noisy.append(f"wall time {max(wall_per_cpu):.2f}x CPU time > {NOISY_WALL_CPU}x")
    entry = {"target": description, "value": value, "limit": limit, "met": bool(value <= limit),
             "reliable": not noisy, "agrees": bool(agrees)}
    if pairs:
        entry["wall_per_cpu"] = wall_per_cpu
    if noisy:
        entry["noisy"] = noisy
    return entry


def shown(value: float, limit: float, digits: int) -> str:
    """``value`` with ``digits`` decimals, or more (up to 6) while it would round to ``limit``
    without being it, so a cell never reads ``1.50x | <= 1.5x MISSED`` (review127 F8)."""
    while digits < 6 and value != limit and round(value, digits) == round(limit, digits):
        digits += 1
    return f"{value:.{digits}f}"


def verdict(entry: dict[str, Any] | None) -> str:
    """``met`` / ``MISSED`` / ``-`` for a table cell, with ``(noisy: why)`` after a verdict whose
    timings were not steady (:data:`NOISY_IQR`) or waited for a CPU (:data:`NOISY_WALL_CPU`)."""
    if entry is None:
        return "-"
    word = "met" if entry["met"] else "MISSED"
    if not entry.get("agrees", True):
        word += " (its results DISAGREE with the reference's: see the agreement check)"
    if entry.get("reliable", True):
        return word
    return f"{word} (noisy: {'; '.join(entry.get('noisy', [f'IQR > {NOISY_IQR}x median']))})"


def names(
    parser: argparse.ArgumentParser, option: str, text: str, known: Sequence[str], what: str
) -> list[str]:
    """The comma-separated names of ``option``: blanks stripped, each once, in the order given
    (as ``run.py --only``); an unknown name or none is a one-line usage error naming the known
    ones (and, for a known one with ``-`` and ``_`` swapped, ``did you mean``, as
    ``dispatch.py --profile`` says: review127 F8)."""
    chosen = list(dict.fromkeys(name.strip() for name in text.split(",") if name.strip()))
    unknown = [name for name in chosen if name not in known]
    if unknown:
        near = did_you_mean(unknown[0], known)
        parser.error(f"{option}: unknown {what} {unknown[0]!r} (known: {' | '.join(known)}){near}")
    if not chosen:
        parser.error(f"{option} names no {what} (known: {' | '.join(known)})")
    return chosen


def json_file(example: str) -> Callable[[str], Path]:
    """An argparse type for a JSON output file, checked before anything is measured with the
    CLI's own check (``torchlean.cli._output.check_writable``: the folder can be created and
    written, the path is not a folder or a device; it leaves nothing behind); a folder is a
    one-line usage error naming ``example`` inside it, not a traceback after the measurement."""

    def checked(text: str) -> Path:
        path = Path(text)
        if path.is_dir():
            raise argparse.ArgumentTypeError(
                f"{text} is a directory; give a file path such as {path / example}"
            )
        try:
            check_writable(file_path(text), "the record", regular=True)
        except TorchLeanError as error:
            raise argparse.ArgumentTypeError(str(error)) from None
        return path

    return checked


def run(main: Callable[[], int]) -> NoReturn:
    """``sys.exit(main())``, ending quietly with status 141 (128 + SIGPIPE, as a shell reports a
    writer killed by it) when the reader of standard output goes away (``run.py | head``), the
    way Python's documentation recommends, instead of a ``BrokenPipeError`` traceback."""
    try:
        status = main()
        if sys.stdout is not None:  # None when the script was started with standard output closed
            sys.stdout.flush()
    except BrokenPipeError:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())  # the interpreter's final flush writes nowhere
        sys.exit(141)
    sys.exit(status)


def table(headers: Sequence[str], rows: Iterable[Sequence[object]]) -> str:
    """A GitHub markdown table."""
    lines = ["| " + " | ".join(headers) + " |", "|" + "|".join("---" for _ in headers) + "|"]
    lines.extend("| " + " | ".join(str(cell) for cell in row) + " |" for row in rows)
    return "\n".join(lines)


def base_record(name: str, args: argparse.Namespace) -> dict[str, Any]:
    """The keys every record of a :func:`parser` script starts with: ``name``, ``quick`` and
    ``smoke`` (the run's sizes: a smoke record's numbers mean nothing), then :func:`provenance`."""
    return {"name": name, "quick": bool(args.quick), "smoke": bool(args.smoke), **provenance()}


def provenance() -> dict[str, Any]:
    """Where and on what a record was measured: ``created``, ``commit`` (the checkout measured),
    ``machine``, ``versions``, ``threads``."""
    return {
        "created": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
        "commit": commit(),
        "machine": machine(),
        "versions": versions(),
        "threads": threads(),
    }


def commit() -> dict[str, Any]:
    """The git commit of this checkout, whether it has uncommitted changes (``{"id": "unknown"}``
    outside a git checkout or without git), the folder torchlean was imported from
    (``torchlean``) and whether that is this checkout's (``measured_here``): when it is not (an
    installed wheel, another worktree on ``PYTHONPATH``), the commit is the bench scripts' and not
    that of the library measured (review83 F7)."""
    import torchlean

    root = Path(__file__).resolve().parents[1]
    library = Path(torchlean.__file__).resolve().parent
    # the checkout's own package only (review227 F5: a copy in an ignored .venv under it counted)
    where = {"torchlean": str(library), "measured_here": library == root / "torchlean"}
    try:
        head = subprocess.run(["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True,
                              text=True, timeout=30, check=True).stdout.strip()
        status = subprocess.run(["git", "-C", str(root), "status", "--porcelain", "--untracked-files=no"],
                                capture_output=True, text=True, timeout=30, check=True).stdout
    except (OSError, subprocess.SubprocessError):
        return {"id": "unknown", **where}
    return {"id": head, "dirty": bool(status.strip()), **where}


def write(out: Path, record: dict[str, Any], markdown: str) -> Path:
    """Write ``out/<name>.json`` and ``out/<name>.md`` (the markdown is also printed);
    returns the JSON path."""
    out.mkdir(parents=True, exist_ok=True)
    name = record["name"]
    path = out / f"{name}.json"
    path.write_text(json.dumps(record, indent=2, default=_json_default) + "\n", encoding="utf-8")
    (out / f"{name}.md").write_text(markdown.rstrip() + "\n", encoding="utf-8")
    print(markdown.rstrip())
    print(f"\nwrote {path}")
    return path


def _json_default(value: object) -> object:
    if isinstance(value, np.generic):
        return value.item()
    if isinstance(value, Path):
        return str(value)
    raise TypeError(f"not JSON serialisable: {type(value).__name__}")


# ------------------------------------------------------------------------------ peak memory

MEMORY_METHOD = (
    "peak resident set size during the call minus the resident set size just before it (Linux "
    "/proc/self/status VmHWM after resetting it by writing 5 to /proc/self/clear_refs, minus "
    "VmRSS); glibc's mmap threshold is fixed at 64 KiB (mallopt) so buffers freed before the call "
    "leave the resident set and every allocation of numpy and torch is seen (set only after all "
    "timings, as it slows allocations; 32 MiB afterwards); inputs are allocated before the call; "
    "page granularity (4 KiB)"
)
_M_MMAP_THRESHOLD = -3
_MMAP_THRESHOLD_BYTES = 64 * 1024
# glibc's largest dynamic threshold on 64-bit (DEFAULT_MMAP_THRESHOLD_MAX), set again on exit
_MMAP_THRESHOLD_AFTER = 32 * 1024 * 1024


class PeakRSS:
    """Peak extra resident memory of calls (see :data:`MEMORY_METHOD`), as a context manager::

        with PeakRSS() as peak:
            extra_bytes = peak.measure(call)

    Entering fixes glibc's mmap threshold at 64 KiB; leaving sets it to 32 MiB (the largest value
    glibc's own dynamic threshold reaches), since glibc cannot return to its dynamic threshold.
    ``available`` is False (with ``reason``) off Linux/glibc, and :meth:`measure` then returns
    None.
    """

    def __init__(self) -> None:
        self.available = False
        self.reason = ""
        self._libc: Any = None

    def __enter__(self) -> PeakRSS:
        try:
            libc = ctypes.CDLL("libc.so.6")
            if libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_BYTES) != 1:
                raise OSError("mallopt(M_MMAP_THRESHOLD) refused")
            self._libc = libc
            with open("/proc/self/clear_refs", "w") as handle:
                handle.write("5")
            self._status()
        except (OSError, AttributeError, KeyError) as exc:
            self.reason = f"peak RSS not measurable here: {exc}"
            return self
        self.available = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._libc is not None:
            self._libc.mallopt(_M_MMAP_THRESHOLD, _MMAP_THRESHOLD_AFTER)
        self.available = False

    @staticmethod
    def _status() -> dict[str, int]:
        values: dict[str, int] = {}
        with open("/proc/self/status") as handle:
            for line in handle:
                if line.startswith(("VmRSS:", "VmHWM:")):
                    key, rest = line.split(":", 1)
                    values[key] = int(rest.split()[0]) * 1024
        return {"rss": values["VmRSS"], "hwm": values["VmHWM"]}

    def measure(self, call: Callable[[], object]) -> int | None:
        """Peak extra resident bytes while ``call`` runs (None when unavailable)."""
        if not self.available:
            return None
        gc.collect()
        self._libc.malloc_trim(0)
        before = self._status()["rss"]
        with open("/proc/self/clear_refs", "w") as handle:
            handle.write("5")
        call()
        return max(self._status()["hwm"] - before, 0)
