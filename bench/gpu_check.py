"""GPU check of the native CUDA provider: build, parity of every native capsule, attention timings.

Usage (on a machine with a CUDA device; finishes in a few minutes, the extension build included)::

    python3 bench/gpu_check.py [OUT.json] [--sizes 1024,2048,...] [--heads 4] [--iterations 3]
                              [--max-seconds S]

0. Pre-checks, before anything is built: the Python packages (beartype, numpy, torch; ninja is
   checked as a program, and scikit-learn only decides whether step 3 runs), a CUDA build of torch with a
   visible device, ``ninja`` on PATH and ``nvcc`` (``CUDA_HOME``, else PATH — what
   ``torch.utils.cpp_extension`` uses) whose major version equals ``torch.version.cuda``'s. Each
   failure is one line on stderr and its own exit status (below).
1. Builds ``torchlean_native_ext`` from ``torchlean/backend/providers/native_cuda/csrc/``
   (``torch.utils.cpp_extension``) and records the build time.
2. Parity: every case of ``torchlean.backend.providers.native_cuda.parity`` — all 46 native-cuda
   ops, ``native_cuda.direct_attention`` and ``torchlean.composed_attention`` (including fully
   blocked rows, NaN/inf at blocked positions, head widths 64, 128 and 256, and zero-size inputs:
   an empty batch, feature, key or time axis, where a launch on an empty grid would fail) —
   forward and backward in float32 (error <= 1e-5) and float64 (<= 1e-10) against float64
   oracles, one progress line each. The checked error (``errors``) is the largest difference
   scaled by ``max(max|oracle|, 1)``: relative where the oracle reaches 1 in magnitude, absolute
   below; the relative error without that floor, ``max|diff| / max|oracle|`` (``max|diff|`` where
   the oracle is all zeros), is recorded beside it (``unfloored_relative_errors``) and not checked
   (review112 F7; the record's ``error_measures`` says the same). One failing case never stops
   the others; each case ends with a device synchronisation, so an asynchronous fault is
   attributed to the case that caused it. A failing case (without a device fault) runs once
   more on the same inputs, recorded under ``rerun``: a failure that does not repeat points at a
   race or uninitialised memory. The case fails either way. Then every attention case, and the
   wide-head ``parity.SMALL_TILE_CASES``, on direct attention's smallest tiles
   (``parity.smallest_tiles``; their rows carry ``tiles``), the kernels a card with less shared
   memory per block runs (sm_86/sm_89: 99 KiB, a T4: 64 KiB), which an H100/H200 never picks;
   then ``parity.ELEMENT_BLOCK_CASES`` (several blocks of the one-thread-per-item kernels:
   ``rand_uniform``, ``bernoulli_mask``, ``smooth_max_pool``, ``selective_scan``) on 2 blocks
   (``parity.few_element_blocks``; their rows carry ``element_blocks``), through the grid-stride
   loops a launch reaches by itself only beyond 268 million items (review208 F1).
3. End to end (eager sessions, float32, the same minibatches): a few SGD steps of the digits MLP
   under ``checked_cuda`` and of the digits transformer (its attention op) under ``checked_cuda``,
   ``libtorch_forward_cuda`` and ``libtorch_forward_strict``; records the capsules each session
   selected (the attention op must select ``torchlean.composed_attention``,
   ``libtorch.sdpa_forward`` and ``native_cuda.direct_attention`` respectively) and the loss
   parity with the same steps under ``checked_cpu`` (``max_relative_difference`` <= 1e-4, each
   loss's difference scaled by ``max(|checked_cpu loss|, 1)``). Without
   scikit-learn (the digits data) this step is recorded under ``not_run`` and skipped.
4. Timing (CUDA events, median of a few iterations after a warm-up): the direct attention kernel
   against ``torch.nn.functional.scaled_dot_product_attention`` in float32 for
   n = 1k..16k and d = 64, 128, without a mask and with a boolean causal mask, forward and
   forward + backward. The SDPA baseline (``sdpa_baseline``, ``sdpa_forward_ms``,
   ``sdpa_forward_backward_ms``, and the ``forward_ratio`` and ``forward_backward_ratio`` of the
   direct kernel's time to it) is SDPA without a mask for the unmasked rows and SDPA with
   ``is_causal=True`` for the causal rows: torch's causal path skips the blocked tiles, as the
   direct kernel does. The causal rows also time SDPA given the same materialised boolean mask as
   the direct kernel (``sdpa_bool_mask_forward_ms``, ``sdpa_bool_mask_forward_backward_ms``),
   which in float32 takes torch's slower masked path (review112 F4). A row fails when the direct
   forward differs from SDPA's with the same mask (for causal rows the boolean one) by more than
   1e-5 (``scaled_difference``, scaled as parity's errors; ``unfloored_relative_difference``
   beside it), or when its backward at that n differs from SDPA's float32 gradients (``is_causal``
   for causal rows) by more than ``timing_gradient_bound`` (1e-3, loose: both are float32;
   ``gradient_difference_from_sdpa_float32``).
   Then one gradient check per d at n = 1024 (no mask and causal): dq, dk, dv of the direct
   kernel (float32) against SDPA's autograd in float64 (``errors`` <= 1e-5, scaled as parity's;
   ``unfloored_relative_errors`` beside them), with SDPA's own float32 gradients recorded beside
   them (``sdpa_float32_errors``, ``difference_from_sdpa_float32``, both scaled the same way).
5. Refusals, in a child process (a crash there is recorded, not fatal): raw extension entry points
   given a non-contiguous, an int32 and a shape-mismatched operand and a cotangent of the wrong
   shape must raise a Python ``ValueError`` (the C++ checks' ``TL_CHECK_VALUE``, raised by the
   bindings), a raw gather with an out-of-range index ``IndexError`` (``TL_CHECK_INDEX``), and the
   same gather through ``kernels`` (the session path, refused by the Python guards before C++) a
   ``GuardError``, and an allocation of 128 TiB inside ATen, raw and through ``kernels``,
   ``torch.OutOfMemoryError`` (a c10 error raised through the extension, the path that killed the
   process on an earlier GPU run; review137 F2), never abort the process; each call is a row,
   and the call a crash interrupted is named with the signal. When the child died in a call,
   ``bench/exception_probe.py`` runs (``refusal_diagnosis`` in the record): which step of raising
   a C++ exception from an extension kills the process there, with a native backtrace when
   ``gdb`` or ``cuda-gdb`` is on PATH. The refusals run right after parity, before steps 3 and 4
   (the child needs about 20 s and gets at most 120 s, or what is left of ``--max-seconds`` when
   that is less, but at least 60 s), so that a hang or a fault in the long phases cannot drop
   them; their diagnosis, which builds small extensions and may use what is left of
   ``--max-seconds``, runs last, so that it cannot starve the timings (review74 F2).

The JSON record (default ``bench/results/gpu_check.json``) says first which code ran (``code``: the
folder torchlean was imported from, its source's SHA-256 as ``train --report-json`` records it, the
git commit when the folder is a checkout, numpy's version; review127 F5). It is rewritten,
atomically, after the build, after every parity case, end-to-end run and timing row, so a crash, a
hang or a time limit leaves everything measured so far on disk (``in_progress`` says which phase was
running and how many of its rows had finished; the progress lines, flushed as each step starts, name
the step). After a device fault that leaves the CUDA context unusable (an illegal address is
sticky), no further device work runs in this process (``aborted`` names the phase and the step that
caused it, and the phases that then do not start are under ``not_run``); the refusals still run, in
their child process with a context of its own. A phase that raises (a bug of this script, an error
outside a row) is recorded under ``phase_errors`` and fails the check; the next phase runs.
``--max-seconds`` skips the steps that would start after that many seconds (recorded under
``skipped``, with each phase not started); a step still running 120 s past it prints every thread's
Python stack on stderr (and again every 120 s), so that a hang killed by an outer ``timeout`` says
where it was. Keep S at least about 130 s under that outer limit (``timeout 600``: S <= 470), or
the kill comes before the stacks print (review127 F8).

Exit status: 0 all passed (a phase under ``not_run``, the end to end without scikit-learn, is named
on the last line but does not fail the check); 1 a parity case, end-to-end run, timing check or
refusal failed, a phase raised, a device fault aborted the run, or steps were skipped; 2 a bad
argument (checked first), no CUDA device or the build failed; 3 missing Python packages; 4 no
``ninja``; 5 no usable ``nvcc``; 6 ``nvcc``'s CUDA major version differs from torch's.
"""

from __future__ import annotations

import argparse
import contextlib
import faulthandler
import json
import math
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import time
import traceback
from collections.abc import Callable
from importlib.util import find_spec as _find_spec
from importlib.util import module_from_spec, spec_from_file_location
from pathlib import Path
from types import ModuleType
from typing import Any, NoReturn

EXIT_FAILED = 1
EXIT_BUILD = 2
EXIT_PACKAGES = 3
EXIT_NO_NINJA = 4
EXIT_NO_NVCC = 5
EXIT_CUDA_MISMATCH = 6

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_MISSING = [name for name in ("beartype", "numpy", "torch") if _find_spec(name) is None]
if _MISSING:
    _WHEELS = " ".join([*(name for name in _MISSING if name != "torch"), "ninja"])  # review74 F7
    print(
        f"gpu_check: missing Python packages {_MISSING}; install them first (on a machine without "
        f"a package index: `pip download --no-deps -d gpu_wheels {_WHEELS}` elsewhere, carry "
        "`gpu_wheels`, and run `pip install --no-index --no-deps gpu_wheels/*.whl` there"
        f"{'; torch needs a CUDA build of its own' if 'torch' in _MISSING else ''})",
        file=sys.stderr,
    )
    sys.exit(EXIT_PACKAGES)
HAS_SKLEARN = _find_spec("sklearn") is not None
"""The end-to-end phase trains on scikit-learn's bundled digits; without it that phase is
recorded as not run (``not_run``) and the other phases run."""

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torchlean.backend.errors import TorchLeanError  # noqa: E402
from torchlean.backend.providers.native_cuda import extension, kernels, parity  # noqa: E402
from torchlean.cli._args import int_at_least  # noqa: E402
from torchlean.cli._output import check_writable, file_path  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "results" / "gpu_check.json"


def _sibling(name: str) -> ModuleType:
    """The script ``bench/<name>.py`` as a module (without putting ``bench/`` on sys.path)."""
    spec = spec_from_file_location(f"bench_{name}", Path(__file__).with_name(f"{name}.py"))
    assert spec is not None and spec.loader is not None
    module = module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


exception_probe = _sibling("exception_probe")

E2E_TOLERANCE = 1e-4
E2E_RUNS: tuple[tuple[str, str, str | None], ...] = (
    ("mlp", "checked_cuda", None),
    ("transformer", "checked_cuda", "torchlean.composed_attention"),
    ("transformer", "libtorch_forward_cuda", "libtorch.sdpa_forward"),
    ("transformer", "libtorch_forward_strict", "native_cuda.direct_attention"),
)
"""(model, profile, the capsule its attention op must select)."""

FORWARD_TOLERANCE = 1e-5
"""Largest difference of the direct kernel's float32 forward from torch SDPA's, scaled by
``max(max|SDPA|, 1)`` (a timing row's ``scaled_difference``)."""
GRADIENT_TOLERANCE = parity.TOLERANCE[torch.float32]
"""Largest error of the direct kernel's float32 gradients against SDPA float64 autograd, scaled
by ``max(max|oracle|, 1)`` as parity's errors."""
ERROR_MEASURES = {
    "errors, scaled_difference, sdpa_float32_errors, difference_from_sdpa_float32, "
    "gradient_difference_from_sdpa_float32": (
        "max|ours - ref| / max(max|ref|, 1), ref the float64 oracle (for scaled_difference torch "
        "SDPA's forward, for difference_from_sdpa_float32 and a timing row's "
        "gradient_difference_from_sdpa_float32 SDPA's float32 gradients): relative where ref "
        "reaches 1 in magnitude, absolute below; the one checked against the tolerance (a timing "
        "row's gradients against timing_gradient_bound)"
    ),
    "unfloored_relative_errors, unfloored_relative_difference": (
        "max|ours - ref| / max|ref| (max|ours - ref| where ref is all zeros); reported, not checked"
    ),
    "max_relative_difference": (
        "max over the losses of |loss - checked_cpu loss| / max(|checked_cpu loss|, 1)"
    ),
}
"""The record's ``error_measures``: what each error field of its rows measures (review112 F7)."""
GRADIENT_N = 1024
TIMING_GRADIENT_BOUND = 100 * GRADIENT_TOLERANCE
"""A timing row's bound on dq, dk, dv against SDPA's float32 gradients at that n (review178 F3: the
backward's large grids were timed, never compared). Both are float32, so the bound is loose: it
catches a wrong tile, index or grid (differences of order 1), not rounding."""
SDPA_UNMASKED = "scaled_dot_product_attention(q, k, v)"
SDPA_CAUSAL = "scaled_dot_product_attention(q, k, v, is_causal=True)"
"""``sdpa_baseline`` of a timing row: the SDPA call its ``sdpa_*_ms`` and ratios are measured
against (a causal row's call with the materialised boolean mask is ``sdpa_bool_mask_*_ms``)."""


class DeviceFault(Exception):
    """The CUDA context is unusable after an error (e.g. a sticky illegal address)."""

    def __init__(self, phase: str, where: str, error: str) -> None:
        super().__init__(f"{phase} {where}: {error}")
        self.phase = phase
        self.where = where
        self.error = error


class _OutOfTime(Exception):
    """``--max-seconds`` was reached before the named step."""


class Budget:
    """``--max-seconds``: whether a step may still start (0 = no limit)."""

    def __init__(self, seconds: float) -> None:
        self.deadline = time.monotonic() + seconds if seconds > 0 else math.inf

    def exhausted(self) -> bool:
        return time.monotonic() >= self.deadline


class Recorder:
    """The JSON record, rewritten atomically (a temporary file renamed over it) on every save."""

    def __init__(self, path: Path, record: dict[str, Any]) -> None:
        self.path = path
        self.record = record
        path.parent.mkdir(parents=True, exist_ok=True)

    def save(self) -> None:
        """Write strict JSON: a non-finite float (a timing difference or a loss of a failed run)
        is written as its text, ``"nan"`` or ``"inf"`` (a bare ``NaN`` token is not JSON)."""
        partial = self.path.with_name(self.path.name + ".partial")
        partial.write_text(json.dumps(_strict_json(self.record), indent=1, default=str, allow_nan=False))
        os.replace(partial, self.path)

    def running(self, step: str | None) -> None:
        """Record (and save) the step about to run, so a hang shows where it happened."""
        if step is None:
            self.record.pop("in_progress", None)
        else:
            self.record["in_progress"] = step
        self.save()

    def skip(self, what: str) -> None:
        self.record.setdefault("skipped", []).append(what)
        print(f"  skipped ({what}): --max-seconds reached", flush=True)


def _device_fault(device: torch.device) -> str | None:
    """None when ``device`` still runs work, else the error that a fresh launch raises (a sticky
    fault makes every later CUDA call fail)."""
    if device.type != "cuda":
        return None
    try:
        torch.cuda.synchronize(device)
        probe = torch.ones(4, device=device) * 2.0
        if float(probe.sum().item()) != 8.0:
            return "a probe kernel computed a wrong value"
        return None
    except Exception as error:  # whatever CUDA raises is the answer
        return f"{type(error).__name__}: {error}"


# ------------------------------------------------------------------------------------ pre-checks


def _nvcc_path() -> Path | None:
    """The nvcc that ``torch.utils.cpp_extension`` builds with (``CUDA_HOME``/``CUDA_PATH``, else
    the one on PATH, else ``/usr/local/cuda``)."""
    from torch.utils import cpp_extension

    home = cpp_extension.CUDA_HOME
    if home is not None and (Path(home) / "bin" / "nvcc").is_file():
        return Path(home) / "bin" / "nvcc"
    found = shutil.which("nvcc")
    return Path(found) if found is not None else None


def toolchain(torch_cuda: str | None) -> tuple[dict[str, Any], tuple[int, str] | None]:
    """What the build needs besides torch: ``ninja`` on PATH and an ``nvcc`` whose CUDA major
    version equals torch's (``torch.utils.cpp_extension`` refuses to build across major versions).
    Returns what was found and, when something is missing, ``(exit status, one-line message)``."""
    info: dict[str, Any] = {
        "torch_cuda": torch_cuda,
        "CUDA_HOME": os.environ.get("CUDA_HOME"),
        # unset: torch builds for the visible devices' architectures; a list multiplies device code
        "TORCH_CUDA_ARCH_LIST": os.environ.get("TORCH_CUDA_ARCH_LIST"),
    }
    ninja = shutil.which("ninja")
    info["ninja"] = ninja
    if ninja is None:
        return info, (
            EXIT_NO_NINJA,
            "gpu_check: `ninja` is not on PATH; torch.utils.cpp_extension builds with it (pip install ninja)",
        )
    nvcc = _nvcc_path()
    info["nvcc"] = None if nvcc is None else str(nvcc)
    if nvcc is None:
        return info, (
            EXIT_NO_NVCC,
            f"gpu_check: nvcc not found (CUDA_HOME={os.environ.get('CUDA_HOME')!r}, none on PATH); "
            "install the CUDA toolkit or set CUDA_HOME",
        )
    try:
        done = subprocess.run(
            [str(nvcc), "--version"], capture_output=True, text=True, timeout=60, check=False
        )
        found = re.search(r"release (\d+)\.(\d+)", done.stdout)
    except (OSError, subprocess.SubprocessError) as error:
        return info, (EXIT_NO_NVCC, f"gpu_check: cannot run {nvcc} --version: {error}")
    if found is None:
        tail = (done.stdout + done.stderr).strip()[-200:]
        return info, (EXIT_NO_NVCC, f"gpu_check: {nvcc} --version printed no CUDA release: {tail!r}")
    info["nvcc_version"] = f"{found.group(1)}.{found.group(2)}"
    torch_major = (torch_cuda or "").split(".")[0]
    if found.group(1) != torch_major:
        return info, (
            EXIT_CUDA_MISMATCH,
            f"gpu_check: nvcc {info['nvcc_version']} ({nvcc}) does not match torch's CUDA {torch_cuda} "
            f"(torch {torch.__version__}); put a CUDA {torch_major} nvcc first on PATH or set CUDA_HOME",
        )
    dropped = _architectures_before_turing(info["TORCH_CUDA_ARCH_LIST"] or "")
    if dropped and int(found.group(1)) >= 13:  # checked here, not a minute into the build
        return info, (
            EXIT_NO_NVCC,
            f"gpu_check: TORCH_CUDA_ARCH_LIST={info['TORCH_CUDA_ARCH_LIST']!r} lists {', '.join(dropped)}, "
            f"which nvcc {info['nvcc_version']} cannot build for (CUDA 13 dropped sm_50 to sm_72; accepted: "
            "7.5 or later, or unset the variable to build for the visible GPU)",
        )
    return info, None


# torch's names of GPU generations older than Turing (sm_75)
_PRE_TURING_NAMES = frozenset(
    {"kepler", "kepler+tesla", "maxwell", "maxwell+tegra", "pascal", "volta", "volta+tegra"}
)


def _architectures_before_turing(listed: str) -> list[str]:
    """The entries of a ``TORCH_CUDA_ARCH_LIST`` (``"8.0;9.0+PTX"``, spaces also separate; torch's
    generation names too) older than compute capability 7.5."""
    old = []
    for entry in re.split(r"[;\s]+", listed.strip()):
        number = re.fullmatch(r"(\d+)\.(\d+)(\+PTX)?", entry)
        numbered = number is not None and (int(number.group(1)), int(number.group(2))) < (7, 5)
        if numbered or entry.lower() in _PRE_TURING_NAMES:
            old.append(entry)
    return old


def _device() -> torch.device:
    return torch.device("cuda", torch.cuda.current_device())


def _code() -> dict[str, Any]:
    """Which code ran (review127 F5: a one-shot run on a lent machine, reported against specific
    changes): the folder torchlean was imported from, the SHA-256 of its source
    (:func:`torchlean.provenance.source_sha256_or_none`, as ``train --report-json`` records it),
    the git commit of that folder's checkout when git and a ``.git`` are there (else ``None``: a
    copied working tree), numpy's version."""
    import numpy

    import torchlean
    from torchlean.provenance import source_sha256_or_none

    root = Path(torchlean.__file__).resolve().parents[1]
    try:
        commit: str | None = subprocess.run(
            ["git", "-C", str(root), "rev-parse", "HEAD"], capture_output=True, text=True, timeout=30,
            check=True,
        ).stdout.strip()
    except (OSError, subprocess.SubprocessError):
        commit = None
    return {
        "torchlean": str(root / "torchlean"),
        "torchlean_source_sha256": source_sha256_or_none(),
        "commit": commit,
        "numpy": numpy.__version__,
    }


def _machine() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": props.name,
        "multiprocessors": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "capability": f"{props.major}.{props.minor}",
        "shared_memory_per_block_optin": getattr(props, "shared_memory_per_block_optin", None),
    }


# ---------------------------------------------------------------------------------------- parity


def _finite_or_text(value: float) -> float | str:
    return value if math.isfinite(value) else str(value)


def _strict_json(value: Any) -> Any:
    """``value`` with every non-finite float, at any depth, replaced by its text."""
    if isinstance(value, float):
        return _finite_or_text(value)
    if isinstance(value, dict):
        return {key: _strict_json(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_strict_json(item) for item in value]
    return value


_SMALLEST_TILES = "smallest-tiles"
_FEW_ELEMENT_BLOCKS = "few-element-blocks"
_SETTINGS: dict[str, Callable[[], contextlib.AbstractContextManager[None]]] = {
    _SMALLEST_TILES: parity.smallest_tiles,
    _FEW_ELEMENT_BLOCKS: parity.few_element_blocks,
}
"""The extension settings a parity run may be made under (none: ``""``)."""


def _parity_runs() -> list[tuple[parity.ParityCase, bool, torch.dtype, str]]:
    """Every parity run in sweep order: ``(case, composed, dtype, setting)``. Each case runs in
    float32 and float64 (attention cases of rank 3 or 4 also on the composed capsule); then every
    attention case again on direct attention's smallest tiles (setting ``smallest-tiles``:
    :func:`~parity.smallest_tiles`), in both dtypes, and :data:`~parity.SMALL_TILE_CASES` in their
    dtypes, so the kernels a device with less shared memory runs, which an H100/H200 never picks,
    run on the GPU too (review178 F2, review185 F1); then :data:`~parity.ELEMENT_BLOCK_CASES` in
    both dtypes on 2 blocks (``few-element-blocks``: :func:`~parity.few_element_blocks`), through
    the kernels' grid-stride loops (review208 F1)."""
    both = (torch.float32, torch.float64)
    attention = parity.cases_for([parity.ATTENTION])
    runs = [(case, False, dtype, "") for case in parity.CASES for dtype in both]
    runs += [(case, True, dtype, "") for case in attention if case.composed for dtype in both]
    runs += [(case, False, dtype, _SMALLEST_TILES) for case in attention for dtype in both]
    runs += [(case, False, dtype, _SMALLEST_TILES) for case, dtype in parity.SMALL_TILE_CASES]
    element = [case for case in parity.CASES if case in parity.ELEMENT_BLOCK_CASES]
    runs += [(case, False, dtype, _FEW_ELEMENT_BLOCKS) for case in element for dtype in both]
    return runs


def _run_case(case: parity.ParityCase, dtype: torch.dtype, device: torch.device, composed: bool,
              setting: str) -> parity.CaseResult:
    with _SETTINGS[setting]() if setting else contextlib.nullcontext():
        return parity.run_case(case, dtype, device, composed=composed)


def _parity(
    device: torch.device,
    on_case: Callable[[dict[str, Any]], None] = lambda _: None,
    budget: Budget | None = None,
) -> list[dict[str, Any]]:
    """Every parity run of :func:`_parity_runs` (each case in float32 and float64, attention cases
    of rank 3 or 4 also on the composed capsule, then the attention cases on the smallest tiles,
    whose rows carry ``tiles``, and the element-block cases on 2 blocks, whose rows carry
    ``element_blocks``); ``on_case`` gets each record as soon as it exists.
    Raises :class:`DeviceFault` (after passing the faulting case's record) when a failed case left
    the device unusable."""
    records: list[dict[str, Any]] = []
    for case, composed, dtype, setting in _parity_runs():
        prefix = "composed:" if composed else f"{setting}:" if setting else ""
        label = f"{prefix}{case.id} [{str(dtype).removeprefix('torch.')}]"
        if budget is not None and budget.exhausted():
            raise _OutOfTime(f"parity from {label}")
        print(f"  {label:<70}", end="", flush=True)  # a hang leaves the case's name on screen
        start = time.perf_counter()
        result = _run_case(case, dtype, device, composed, setting)
        row = {
            "case": result.case,
            "op": result.op,
            "capsule": _capsule_name(result.op, composed),
            "dtype": result.dtype.removeprefix("torch."),
            "errors": {k: _finite_or_text(v) for k, v in result.errors.items()},
            "unfloored_relative_errors": {
                k: _finite_or_text(v) for k, v in result.unfloored_relative_errors.items()
            },
            "tolerance": result.tolerance,
            "passed": result.passed,
            "problems": list(result.problems),
            "seconds": round(time.perf_counter() - start, 4),
        }
        if setting == _SMALLEST_TILES:
            row["tiles"] = "smallest"
        elif setting == _FEW_ELEMENT_BLOCKS:
            row["element_blocks"] = parity.FEW_ELEMENT_BLOCKS
        fault = None if result.passed else _device_fault(device)
        verdict = "ok" if result.passed else "FAIL"
        if not result.passed and fault is None:
            # the same inputs once more: a failure that does not repeat points at a race or
            # at uninitialised memory rather than at the arithmetic (the case still fails)
            again = _run_case(case, dtype, device, composed, setting)
            fault = _device_fault(device)
            row["rerun"] = {
                "passed": again.passed,
                "errors": {k: _finite_or_text(v) for k, v in again.errors.items()},
                "unfloored_relative_errors": {
                    k: _finite_or_text(v) for k, v in again.unfloored_relative_errors.items()
                },
                "problems": list(again.problems),
            }
            verdict += f" (run again: {'ok' if again.passed else 'FAIL'})"
        records.append(row)
        on_case(row)
        worst = max(result.errors.values(), default=0.0)
        worst_relative = max(result.unfloored_relative_errors.values(), default=0.0)
        # the checked error is scaled by max(max|oracle|, 1), the relative one is not floored
        print(f" max err {worst:.1e} (unfloored rel {worst_relative:.1e}) {verdict}", flush=True)
        if fault is not None:
            raise DeviceFault("parity", label, fault)
    return records


def _capsule_name(op: str, composed: bool) -> str:
    if op == parity.ATTENTION:
        return "torchlean.composed_attention" if composed else "native_cuda.direct_attention"
    return f"native_cuda.{op}"


# ---------------------------------------------------------------------------------- end to end


def _train_steps(model: str, profile: str, steps: int, batch: int) -> dict[str, Any]:
    """``steps`` SGD steps of the digits ``model`` under ``profile`` (float32, seed 0, contiguous
    minibatches of the training split): losses, selected capsules, seconds."""
    from torchlean import data, optim
    from torchlean.models import build_model
    from torchlean.trainer import Objective, RunConfig, Trainer

    digits = data.load("digits", seed=0)
    layer, shape = build_model(model, digits.n_features, digits.n_classes, hidden=64)
    config = RunConfig(optimizer=optim.sgd(0.05)).with_profile(profile)
    trainer = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=shape)
    start = time.perf_counter()
    losses = [
        trainer.step(digits.x_train[i * batch : (i + 1) * batch], digits.y_train[i * batch : (i + 1) * batch])
        for i in range(steps)
    ]
    seconds = time.perf_counter() - start
    selected = {k.op.label: k.capsule.name for k in trainer.selected}
    return {"losses": losses, "selected": selected, "seconds": round(seconds, 3)}


def _end_to_end(
    steps: int,
    batch: int,
    on_run: Callable[[dict[str, Any]], None] = lambda _: None,
    device: torch.device | None = None,
    budget: Budget | None = None,
) -> list[dict[str, Any]]:
    """The :data:`E2E_RUNS`; ``on_run`` gets each row as soon as it exists. Raises
    :class:`DeviceFault` when a failed run left ``device`` unusable."""
    records: list[dict[str, Any]] = []
    cpu: dict[str, dict[str, Any]] = {}
    for model, profile, attention in E2E_RUNS:
        if budget is not None and budget.exhausted():
            raise _OutOfTime(f"end to end from {model} {profile}")
        row: dict[str, Any] = {"model": model, "profile": profile, "steps": steps, "batch": batch}
        try:
            if model not in cpu:
                cpu[model] = _train_steps(model, "checked_cpu", steps, batch)
            run = _train_steps(model, profile, steps, batch)
            reference = cpu[model]["losses"]
            difference = max(
                abs(a - b) / max(abs(b), 1.0) for a, b in zip(run["losses"], reference, strict=True)
            )
            problems = []
            if not difference <= E2E_TOLERANCE:
                problems.append(f"loss differs from checked_cpu by {difference:.2e} > {E2E_TOLERANCE:g}")
            chosen = run["selected"].get(parity.ATTENTION)
            if attention is not None and chosen != attention:
                problems.append(f"attention selected {chosen}, expected {attention}")
            off_device = [name for name in run["selected"].values() if name.startswith("reference.")]
            if off_device:
                problems.append(f"CPU capsules selected: {off_device}")
            row.update(
                losses=run["losses"],
                checked_cpu_losses=reference,
                max_relative_difference=difference,
                tolerance=E2E_TOLERANCE,
                selected=run["selected"],
                attention_capsule=chosen,
                seconds=run["seconds"],
                checked_cpu_seconds=cpu[model]["seconds"],
                problems=problems,
                passed=not problems,
            )
        except Exception:  # one failing run must not stop the others
            row.update(passed=False, problems=[traceback.format_exc()])
        records.append(row)
        on_run(row)
        status = "ok" if row["passed"] else "FAIL " + "; ".join(row["problems"])
        print(
            f"  {model:<11} {profile:<24} attention={row.get('attention_capsule')} "
            f"diff={row.get('max_relative_difference', float('nan')):.1e} {status}",
            flush=True,
        )
        if not row["passed"] and device is not None:
            fault = _device_fault(device)
            if fault is not None:
                raise DeviceFault("end_to_end", f"{model} {profile}", fault)
    return records


# -------------------------------------------------------------------------------------- refusals

REFUSAL_PROBE = r"""
import contextlib, json, sys
import torch
from torchlean.backend.providers.native_cuda import extension, kernels

device = sys.argv[1]
emulated = device == "cpu"
ext = extension.load_host_emulation() if emulated else extension.load_extension()


def report(item):
    print("@@refusal " + json.dumps(item), flush=True)


def ones(*shape, **kw):
    return torch.ones(*shape, device=device, **kw)


# an allocation no device holds (2**45 float32, 128 TiB) fails inside ATen's allocator: a c10
# error raised through the extension (a CUDA out-of-memory error; the CPU allocator's plain
# c10::Error under the emulation), the path that killed the process on an earlier GPU run
index = 0 if emulated else torch.cuda.current_device()
out_of_memory = "RuntimeError" if emulated else "OutOfMemoryError"


def attention_backward_with_short_lse():
    # a lse of fewer rows than the batch: without the check the dQ kernel reads past it
    q, k, v = (ones(2, n, w, dtype=torch.float64) for n, w in ((3, 4), (5, 4), (5, 3)))
    out, lse = ext.direct_attention_forward(q, k, v, None, [], None, 0)
    return ext.direct_attention_backward(torch.ones_like(out), q, k, v, None, [], out, lse[:1], None, 0)


calls = {
    "relu_forward(non-contiguous x)": (lambda: ext.relu_forward(ones(3, 4).t()), "ValueError"),
    "exp_forward(int32 x)": (lambda: ext.exp_forward(ones(3, dtype=torch.int32)), "ValueError"),
    "rand_uniform_forward(count beyond int64)": (
        lambda: ext.rand_uniform_forward([1 << 40, 1 << 40], 0, 0, "float32", 0, 0), "ValueError"
    ),
    "rand_uniform_forward(bytes beyond int64)": (
        lambda: ext.rand_uniform_forward([1, 1 << 62], 0, 0, "float32", 0, 0), "ValueError"
    ),
    "matmul_forward(contraction sizes differ)": (
        lambda: ext.matmul_forward(ones(2, 3), ones(4, 5)), "ValueError"
    ),
    "matmul_backward(g of another shape)": (
        lambda: ext.matmul_backward(ones(2, 5), ones(2, 3), ones(3, 4), ones(2, 5)), "ValueError"
    ),
    "direct_attention_forward(v with fewer keys than k)": (
        lambda: ext.direct_attention_forward(
            ones(1, 3, 4, dtype=torch.float64), ones(1, 5, 4, dtype=torch.float64),
            ones(1, 2, 3, dtype=torch.float64), None, [], None, 0,
        ),
        "ValueError",
    ),
    "direct_attention_backward(lse of another shape)": (attention_backward_with_short_lse, "ValueError"),
    "gather_forward(index value out of range)": (
        lambda: ext.gather_forward(ones(1, 5), torch.tensor([[0, 9]], device=device), 1), "IndexError"
    ),
    "session path: gather index out of range": (
        lambda: kernels.gather_forward(ones(1, 5), torch.tensor([[0, 9]], device=device), axis=1),
        "GuardError",
    ),
    "rand_uniform_forward(128 TiB)": (
        lambda: ext.rand_uniform_forward([1 << 45], 0, 0, "float32", index, extension.stream_handle(index)),
        out_of_memory,
    ),
    "session path: rand_uniform of 128 TiB": (
        lambda: kernels.rand_uniform_forward(shape=[1 << 45], seed=0, counter=0, dtype=torch.float32,
                                             device=device),
        "NativeKernelError" if emulated else "OutOfMemoryError",
    ),
}
report({"calls": {name: expected for name, (_, expected) in calls.items()}})
for name, (call, _) in calls.items():
    report({"start": name})
    with extension.host_emulation() if emulated else contextlib.nullcontext():
        try:
            call()
            row = {"call": name, "raised": None}
        except Exception as error:
            row = {"call": name, "raised": type(error).__name__, "message": str(error)[:300]}
    report(row)
"""
"""Run as ``python -c REFUSAL_PROBE DEVICE``. Its protocol lines start with ``@@refusal`` (other
output is ignored): the calls with the exception each must raise, then one ``{"start": call}``
before each call and one result row after it, so a call that kills the process is the last one
started. Raw extension calls must raise ``ValueError`` (``TL_CHECK_VALUE``) or ``IndexError``
(``TL_CHECK_INDEX``); a call through
``kernels`` (the session path) must raise ``GuardError``; the 128 TiB allocations
``torch.OutOfMemoryError`` on CUDA (under the emulation, the CPU allocator's ``RuntimeError``, which
``kernels`` raises as ``NativeKernelError``)."""

REFUSAL_MARK = "@@refusal "
REFUSAL_TIMEOUT = 120.0
REFUSAL_MINIMUM = 60.0
# seconds past --max-seconds after which a still-running step prints its stacks (and every
# as many seconds again)
HANG_REPORT_AFTER = 120.0


def _text(output: str | bytes | None) -> str:
    return output.decode(errors="replace") if isinstance(output, bytes) else output or ""


def _refusals(
    device_type: str,
    on_row: Callable[[dict[str, Any]], None] = lambda _: None,
    timeout: float = REFUSAL_TIMEOUT,
) -> list[dict[str, Any]]:
    """The :data:`REFUSAL_PROBE` rows of a child process on ``device_type`` (``"cuda"``, or
    ``"cpu"`` for the host emulation). A call passes when it raised its expected exception. When
    the child dies (a signal, an exit status, or ``timeout`` seconds) the call it was running is a
    failed row naming how, and every call it never reached a failed row too; a child that dies
    before naming its calls gives one failed row."""
    env = {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }
    command = [sys.executable, "-P", "-c", REFUSAL_PROBE, device_type]  # -P: ROOT, not the cwd, first
    try:
        done = subprocess.run(command, capture_output=True, text=True, env=env, timeout=timeout, check=False)
        stdout, stderr = done.stdout, done.stderr
        death = None if done.returncode == 0 else exception_probe.death(done.returncode)
    except subprocess.TimeoutExpired as expired:
        stdout, stderr = _text(expired.stdout), _text(expired.stderr)
        death = f"timed out after {timeout:g} s"
    rows: list[dict[str, Any]] = []

    def add(row: dict[str, Any]) -> None:
        rows.append(row)
        on_row(row)

    expected: dict[str, str] = {}
    started: str | None = None
    for line in stdout.splitlines():
        if not line.startswith(REFUSAL_MARK):
            continue
        item = json.loads(line.removeprefix(REFUSAL_MARK))
        if "calls" in item:
            expected = item["calls"]
        elif "start" in item:
            started = item["start"]
        else:
            started = None
            item["expected"] = expected.get(item["call"])
            item["passed"] = item["raised"] == item["expected"]
            add(item)
    reported = {row["call"] for row in rows}
    failure: dict[str, Any] = {"raised": None, "passed": False, "stderr": stderr[-2000:]}
    if not expected:
        add({"call": "(the probe did not start)", "crashed": death or "no calls reported", **failure})
        return rows
    for name in expected:
        if name not in reported:
            why = (death or "no result reported") if name == started else "not reached"
            add({"call": name, "expected": expected[name], "crashed": why, **failure})
    if death is not None and started is None:  # between calls or after the last one
        add({"call": "(outside any call)", "crashed": death, **failure})
    return rows


def _refusal_phase(recorder: Recorder, device_type: str, budget: Budget) -> list[dict[str, Any]]:
    """The refusal rows of :func:`_refusals` into the record (``refusals``, ``refusals_summary``);
    returns the failed rows (when the child died in a call, :func:`main` runs
    :func:`_diagnose_refusal_crash` after the other phases)."""
    record = recorder.record
    print("refusals of the C++ checks (child process; each must raise, not crash):", flush=True)
    start = time.perf_counter()
    record["refusals"] = []
    recorder.running("refusals")
    append_refusal = _appender(recorder, "refusals", "refusals")

    def refusal(row: dict[str, Any]) -> None:
        print(_refusal_line(row), flush=True)
        append_refusal(row)

    _refusals(device_type, refusal, _refusal_timeout(budget))
    return _summarise(recorder, "refusals", "calls", start)


def _refusal_timeout(budget: Budget) -> float:
    """How long the refusal child may run: :data:`REFUSAL_TIMEOUT`, or what is left of
    ``--max-seconds`` when that is less (but at least :data:`REFUSAL_MINIMUM` s, what a child
    needs to import torch and load the cached build)."""
    return min(REFUSAL_TIMEOUT, max(REFUSAL_MINIMUM, budget.deadline - time.monotonic()))


def _died_in_a_call(rows: list[dict[str, Any]]) -> bool:
    """Whether the refusal child died (or hung) inside one of its calls: not merely before its
    first call, between calls or after the last one."""
    return any(
        row.get("crashed", "not reached") != "not reached" and not row["call"].startswith("(") for row in rows
    )


def _diagnose_refusal_crash(recorder: Recorder, budget: Budget) -> None:
    """Run ``bench/exception_probe.py`` (its own small extension, each case in a child process)
    into the record's ``refusal_diagnosis``, saved after every case; its reading is printed.
    Informational (the refusal rows already failed the check); it starts nothing past
    ``--max-seconds`` (the cases left are listed as skipped), and an error of the probe itself is
    recorded, not raised."""
    print("a refusal did not return (its child process died or hung in the call); probing which "
          "step of raising a C++ exception fails:", flush=True)  # fmt: skip
    diagnosis: dict[str, Any] = {}
    recorder.record["refusal_diagnosis"] = diagnosis
    if budget.exhausted():
        diagnosis["skipped"] = "out of time (--max-seconds)"
        recorder.save()
        print("  skipped: out of time (--max-seconds)", flush=True)
        return
    recorder.running("refusal diagnosis")

    def on_case(row: dict[str, Any]) -> None:
        print(exception_probe.line(row), flush=True)
        recorder.save()

    try:
        exception_probe.probe(on_case, diagnosis, deadline=budget.deadline)
    except Exception:
        diagnosis["error"] = traceback.format_exc()
        print(f"  the probe failed: {diagnosis['error'].strip().splitlines()[-1]}", flush=True)
    recorder.save()
    if "reading" in diagnosis:
        print(f"  reading: {diagnosis['reading']}", flush=True)
    if "variant_reading" in diagnosis:
        print(f"  build variants: {diagnosis['variant_reading']}", flush=True)
    if "backtrace" in diagnosis:
        print(f"  native backtrace of {diagnosis['backtrace']['case']!r}: see refusal_diagnosis", flush=True)


def _refusal_line(row: dict[str, Any]) -> str:
    if "crashed" in row:
        return f"  {row['call']:<45} FAIL: {row['crashed']}"
    verdict = "ok" if row["passed"] else f"FAIL (expected {row['expected']})"
    return f"  {row['call']:<45} raised {row['raised']} {verdict}"


# -------------------------------------------------------------------------------------- timing


def _time_ms(fn: Callable[[], object], iterations: int) -> float:
    fn()  # warm-up
    torch.cuda.synchronize()
    samples: list[float] = []
    for _ in range(iterations):
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        stop = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop))
    return statistics.median(samples)


def _errors(ours: torch.Tensor, theirs: torch.Tensor) -> tuple[float, float]:
    """``(checked, unfloored)`` in float64: ``max|ours - theirs| / max(max|theirs|, 1)`` (parity's
    checked error) and ``max|ours - theirs| / max|theirs|`` (the relative error, reported;
    ``max|ours - theirs|`` itself where ``theirs`` is all zeros). A NaN anywhere makes both NaN,
    which fails the check."""
    a, b = ours.detach().double(), theirs.detach().double()
    difference = float((a - b).abs().max().item())
    largest = float(b.abs().max().item())
    return difference / max(largest, 1.0), difference / largest if largest > 0.0 else difference


def _causal(n: int, device: torch.device) -> torch.Tensor:
    return torch.ones(n, n, dtype=torch.bool, device=device).tril()


def _sdpa_calls(
    q4: torch.Tensor,
    k4: torch.Tensor,
    v4: torch.Tensor,
    g4: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    causal: bool,
) -> tuple[Callable[[], object], Callable[[], object]]:
    """The SDPA forward (no autograd) and forward + backward that a timing row times, with
    ``attn_mask=mask`` and ``is_causal=causal``."""

    def forward() -> object:
        with torch.no_grad():
            return F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask, is_causal=causal)

    leaves = [t.detach().clone().requires_grad_(True) for t in (q4, k4, v4)]

    def both() -> object:
        out = F.scaled_dot_product_attention(
            leaves[0], leaves[1], leaves[2], attn_mask=mask, is_causal=causal
        )
        return torch.autograd.grad(out, leaves, g4)

    return forward, both


def _timing_row(
    n: int,
    d: int,
    masked: bool,
    heads: int,
    iterations: int,
    device: torch.device,
    generator: torch.Generator,
) -> dict[str, Any]:
    row: dict[str, Any] = {"n": n, "d": d, "heads": heads, "mask": "causal" if masked else "none"}
    q, k, v = (torch.randn(heads, n, d, device=device, generator=generator) for _ in range(3))
    g = torch.randn(heads, n, d, device=device, generator=generator)
    mask = _causal(n, device) if masked else None

    def direct_forward() -> object:
        return kernels.direct_attention_forward(q, k, v, mask)

    def direct_both() -> object:
        out, lse = kernels.direct_attention_forward(q, k, v, mask)
        return kernels.direct_attention_backward(g, q, k, v, mask, out=out, lse=lse)

    # torch's fused SDPA kernels need 4-D (batch, heads, n, d) inputs; 3-D would time its
    # unfused fallback
    q4, k4, v4, g4 = (t.unsqueeze(0) for t in (q, k, v, g))
    # the baseline is torch's own causal path (its kernels skip the blocked tiles, as the direct
    # kernel's tile vote does); the materialised boolean mask, timed beside it, sends float32 to
    # the memory-efficient kernel's masked path, which reads an n x n bias for every tile and
    # skips nothing (review112 F4)
    sdpa_forward, sdpa_both = _sdpa_calls(q4, k4, v4, g4, None, causal=masked)
    row["sdpa_baseline"] = SDPA_CAUSAL if masked else SDPA_UNMASKED

    row["direct_forward_ms"] = _time_ms(direct_forward, iterations)
    row["sdpa_forward_ms"] = _time_ms(sdpa_forward, iterations)
    row["direct_forward_backward_ms"] = _time_ms(direct_both, iterations)
    row["sdpa_forward_backward_ms"] = _time_ms(sdpa_both, iterations)
    if masked:
        bool_forward, bool_both = _sdpa_calls(q4, k4, v4, g4, mask, causal=False)
        row["sdpa_bool_mask_forward_ms"] = _time_ms(bool_forward, iterations)
        row["sdpa_bool_mask_forward_backward_ms"] = _time_ms(bool_both, iterations)
    # the forward check compares with SDPA given the same (boolean) mask the direct kernel gets
    ours = kernels.direct_attention_forward(q, k, v, mask)[0]
    with torch.no_grad():
        theirs = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask)[0]
    row["scaled_difference"], row["unfloored_relative_difference"] = _errors(ours, theirs)
    row["tolerance"] = FORWARD_TOLERANCE
    row["forward_ratio"] = row["direct_forward_ms"] / row["sdpa_forward_ms"]
    row["forward_backward_ratio"] = row["direct_forward_backward_ms"] / row["sdpa_forward_backward_ms"]
    problems = []
    if not row["scaled_difference"] <= FORWARD_TOLERANCE:
        problems.append(
            f"forward differs from torch SDPA by {row['scaled_difference']:.2e} > {FORWARD_TOLERANCE:g}"
        )
    row["timing_gradient_bound"] = TIMING_GRADIENT_BOUND
    try:  # an error here (memory at n = 16k, say) keeps the timings above (review181 F8)
        differences = _gradient_differences(q, k, v, g, mask, masked)
    except Exception as error:
        row["error"] = f"gradient comparison: {type(error).__name__}: {error}"
    else:
        row["gradient_difference_from_sdpa_float32"] = differences
        problems += [
            f"{name} differs from torch SDPA's float32 gradient by {value:.2e} > {TIMING_GRADIENT_BOUND:g}"
            for name, value in differences.items()
            if not value <= TIMING_GRADIENT_BOUND
        ]
    if problems:
        row["problems"] = problems
    return row


def _gradient_differences(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, g: torch.Tensor, mask: torch.Tensor | None,
    causal: bool,
) -> dict[str, float]:
    """dq, dk, dv of the direct kernel against SDPA's float32 gradients (``is_causal`` for a causal
    row: no n x n matrix), scaled as :func:`_errors`; NaN for a gradient the backward did not give."""
    out, lse = kernels.direct_attention_forward(q, k, v, mask)
    mine = kernels.direct_attention_backward(g, q, k, v, mask, out=out, lse=lse)[:3]
    theirs = _sdpa_gradients(q, k, v, g, None, causal=causal)
    return {
        name: _errors(ours, their)[0] if ours is not None else math.nan
        for name, ours, their in zip(("dq", "dk", "dv"), mine, theirs, strict=True)
    }


def _sdpa_gradients(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    g: torch.Tensor,
    mask: torch.Tensor | None,
    *,
    causal: bool = False,
) -> tuple[torch.Tensor, ...]:
    leaves = [t.unsqueeze(0).detach().clone().requires_grad_(True) for t in (q, k, v)]
    out = F.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], attn_mask=mask, is_causal=causal)
    return tuple(grad[0] for grad in torch.autograd.grad(out, leaves, g.unsqueeze(0)))


def _gradient_row(
    n: int, d: int, masked: bool, heads: int, device: torch.device, generator: torch.Generator
) -> dict[str, Any]:
    """dq, dk, dv of the direct kernel (float32) against SDPA autograd on the same values in
    float64 (the oracle) and in float32 (recorded for comparison)."""
    row: dict[str, Any] = {
        "n": n,
        "d": d,
        "heads": heads,
        "mask": "causal" if masked else "none",
        "check": "gradient",
    }
    q, k, v, g = (torch.randn(heads, n, d, device=device, generator=generator) for _ in range(4))
    mask = _causal(n, device) if masked else None
    out, lse = kernels.direct_attention_forward(q, k, v, mask)
    ours = kernels.direct_attention_backward(g, q, k, v, mask, out=out, lse=lse)[:3]
    q64, k64, v64, g64 = (t.double() for t in (q, k, v, g))
    oracle = _sdpa_gradients(q64, k64, v64, g64, mask)
    sdpa32 = _sdpa_gradients(q, k, v, g, mask)
    names = ("dq", "dk", "dv")
    against_oracle = {
        name: _errors(mine, want)
        for name, mine, want in zip(names, ours, oracle, strict=True)
        if mine is not None
    }
    row["errors"] = {name: checked for name, (checked, _) in against_oracle.items()}
    row["unfloored_relative_errors"] = {name: unfloored for name, (_, unfloored) in against_oracle.items()}
    row["sdpa_float32_errors"] = {
        name: _errors(s, want)[0] for name, s, want in zip(names, sdpa32, oracle, strict=True)
    }
    row["difference_from_sdpa_float32"] = {
        name: _errors(mine, s)[0]
        for name, mine, s in zip(names, ours, sdpa32, strict=True)
        if mine is not None
    }
    row["tolerance"] = GRADIENT_TOLERANCE
    problems = [
        f"{name} error {value:.2e} > {GRADIENT_TOLERANCE:g} (vs SDPA float64 autograd)"
        for name, value in row["errors"].items()
        if not value <= GRADIENT_TOLERANCE
    ]
    if len(row["errors"]) != 3:
        problems.append("the backward returned no gradient for some operand")
    if problems:
        row["problems"] = problems
    return row


def _timings(
    sizes: list[int],
    widths: list[int],
    heads: int,
    iterations: int,
    device: torch.device,
    on_row: Callable[[dict[str, Any]], None] = lambda _: None,
    budget: Budget | None = None,
    gradient_n: int = GRADIENT_N,
) -> list[dict[str, Any]]:
    """Timing rows for every (d, n, mask), then the gradient checks at ``n = gradient_n``;
    ``on_row`` gets each row as soon as it exists. A row that raises records the error;
    :class:`DeviceFault` when that left the device unusable."""
    rows: list[dict[str, Any]] = []
    generator = torch.Generator(device=device).manual_seed(0)
    steps: list[tuple[str, int, int, bool]] = [
        ("timing", n, d, masked) for d in widths for n in sizes for masked in (False, True)
    ]
    steps += [("gradient", gradient_n, d, masked) for d in widths for masked in (False, True)]
    for kind, n, d, masked in steps:
        if budget is not None and budget.exhausted():
            raise _OutOfTime(f"{kind} from n={n} d={d} mask={'causal' if masked else 'none'}")
        try:
            if kind == "timing":
                row = _timing_row(n, d, masked, heads, iterations, device, generator)
            else:
                row = _gradient_row(n, d, masked, heads, device, generator)
        except Exception as error:  # one failing size must not stop the others
            row = {"n": n, "d": d, "heads": heads, "mask": "causal" if masked else "none"}
            if kind == "gradient":
                row["check"] = "gradient"
            row["error"] = f"{type(error).__name__}: {error}"
        finally:
            _release_cached_memory(device)
        row["passed"] = "error" not in row and not row.get("problems")
        rows.append(row)
        on_row(row)
        print(_timing_line(row), flush=True)
        if "error" in row:
            fault = _device_fault(device)
            if fault is not None:
                raise DeviceFault("timing", f"{kind} n={n} d={d} mask={row['mask']}", fault)
    return rows


def _release_cached_memory(device: torch.device) -> None:
    """``torch.cuda.empty_cache()`` between timing rows; after a sticky fault it raises (the
    allocator's ``cudaFree`` returns the fault, review74 F1), which must not hide the row's own
    error: :func:`_device_fault` names the fault right after."""
    if device.type != "cuda":
        return
    with contextlib.suppress(Exception):  # the row's error and the device check say what happened
        torch.cuda.empty_cache()


def _timing_line(row: dict[str, Any]) -> str:
    head = f"  n={row['n']:>6} d={row['d']:>3} mask={row['mask']:<6}"
    if "error" in row and "direct_forward_ms" not in row:  # the row raised before its timings
        return f"{head} ERROR {row['error']}"
    problems = "; ".join(row.get("problems", []))
    failed = "" if row.get("passed", True) else "  FAIL " + problems
    if "error" in row:  # timings kept, the gradient comparison raised (review185 F8)
        failed = ("  FAIL " + problems if problems else "") + f"  ERROR {row['error']}"
    if row.get("check") == "gradient":
        errors = " ".join(f"{name} {value:.1e}" for name, value in row["errors"].items())
        return f"{head} gradients vs SDPA float64: {errors}{failed}"
    bool_mask = ""
    if "sdpa_bool_mask_forward_ms" in row:
        bool_mask = (
            f"  sdpa bool mask fwd {row['sdpa_bool_mask_forward_ms']:9.3f} / "
            f"fwd+bwd {row['sdpa_bool_mask_forward_backward_ms']:9.3f} ms"
        )
    return (
        f"{head} direct fwd {row['direct_forward_ms']:9.3f} ms  sdpa fwd {row['sdpa_forward_ms']:9.3f} ms  "
        f"fwd+bwd {row['direct_forward_backward_ms']:9.3f} / {row['sdpa_forward_backward_ms']:9.3f} ms"
        f"{bool_mask}  diff {row['scaled_difference']:.1e}{failed}"
    )


# ---------------------------------------------------------------------------------------- main


_positive = int_at_least(1, "expected a positive integer, got {}")


def _positive_list(text: str) -> str:
    """argparse ``type`` of ``--sizes``/``--widths``: comma-separated positive integers (kept as
    the text; :func:`main` splits it)."""
    for part in text.split(","):
        _positive(part)
    return text


def _seconds(text: str) -> float:
    """argparse ``type`` of ``--max-seconds``: a finite number >= 0."""
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not (math.isfinite(value) and value >= 0):
        raise argparse.ArgumentTypeError(f"expected a number of seconds >= 0 (0: no limit), got {text!r}")
    return value


def _record_path(text: str) -> str:
    """argparse ``type`` of the record path: a file path (``file_path``: not empty, ``-`` or a
    folder) that can be written and replaced atomically (not a directory or a device)."""
    try:
        check_writable(file_path(text), "the record", regular=True)
    except TorchLeanError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return text


class _Parser(argparse.ArgumentParser):
    """An argument parser whose refusals are one line: ``gpu_check.py: error: ...`` (exit 2)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: error: {message}\n")


def _parse(argv: list[str] | None) -> argparse.Namespace:
    """The arguments, all checked before the device and toolchain checks (one line and exit 2 on
    a bad one)."""
    parser = _Parser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument(
        "out", nargs="?", type=_record_path, default=str(DEFAULT_OUT), help="JSON record path"
    )
    parser.add_argument("--sizes", type=_positive_list, default="1024,2048,4096,8192,16384",
                        help="sequence lengths n of the attention timings (comma-separated)")
    parser.add_argument("--widths", type=_positive_list, default="64,128",
                        help="head widths d of the attention timings (comma-separated)")
    parser.add_argument(
        "--heads", type=_positive, default=4, help="folded batch x heads of the timing inputs"
    )
    parser.add_argument("--iterations", type=_positive, default=3,
                        help="timed runs per row after a warm-up (the median is recorded)")
    parser.add_argument("--e2e-steps", type=_positive, default=5, help="SGD steps of each end-to-end run")
    parser.add_argument("--e2e-batch", type=_positive, default=64, help="minibatch of the end-to-end runs")
    parser.add_argument(
        "--max-seconds",
        type=_seconds,
        default=0.0,
        help="start no step after this many seconds (0: no limit); keep it ~130 s under an outer "
        "timeout, so a hang prints its stacks (at S + 120 s) before the kill",
    )
    return parser.parse_args(argv)


def _build(recorder: Recorder) -> int | None:
    """Pre-checks and the build; None when the extension is loaded, else the exit status."""
    record = recorder.record
    try:
        extension.require_cuda()
    except extension.NativeExtensionError as error:
        record["build"] = {"ok": False, "error": str(error)}
        recorder.save()
        print(f"gpu_check: {error}", file=sys.stderr)
        return EXIT_BUILD
    record["toolchain"], problem = toolchain(torch.version.cuda)
    if problem is not None:
        status, message = problem
        record["build"] = {"ok": False, "error": message, "exit_status": status}
        recorder.save()
        print(message, file=sys.stderr)
        return status
    recorder.running("build")
    start = time.perf_counter()
    try:
        extension.load_extension()
    except extension.NativeExtensionError as error:
        record["build"] = {"ok": False, "error": str(error), "seconds": round(time.perf_counter() - start, 1)}
        recorder.running(None)
        print(f"build failed: {error}", file=sys.stderr)
        return EXIT_BUILD
    record["build"] = {"ok": True, "seconds": round(time.perf_counter() - start, 1)}
    record["machine"] = _machine()
    recorder.running(None)
    print(
        f"built torchlean_native_ext in {record['build']['seconds']} s on {record['machine']['device']}",
        flush=True,
    )
    return None


def _summarise(recorder: Recorder, key: str, count: str, start: float, **extra: Any) -> list[dict[str, Any]]:
    """Save ``record[key + "_summary"]`` (``count``: the number of rows, ``failed``, ``extra``,
    ``seconds`` since ``start``) and return the failed rows of ``record[key]``."""
    rows = recorder.record[key]
    failed = [r for r in rows if not r["passed"]]
    recorder.record[f"{key}_summary"] = {
        count: len(rows),
        "failed": len(failed),
        **extra,
        "seconds": round(time.perf_counter() - start, 1),
    }
    recorder.save()
    return failed


def _appender(recorder: Recorder, key: str, phase: str) -> Callable[[dict[str, Any]], None]:
    """A callback that appends a finished row to ``record[key]`` and saves the record."""
    rows: list[dict[str, Any]] = recorder.record.setdefault(key, [])

    def append(row: dict[str, Any]) -> None:
        rows.append(row)
        recorder.record["in_progress"] = f"{phase}: {len(rows)} rows done, the next one running"
        recorder.save()

    return append


def _parity_phase(recorder: Recorder, device: torch.device, budget: Budget) -> list[dict[str, Any]]:
    """Step 2 into ``parity`` and ``parity_summary``; returns the failed rows. An error of the
    sweep itself is a failed row; :class:`DeviceFault` and :class:`_OutOfTime` pass through (the
    rows so far summarised)."""
    record = recorder.record
    start = time.perf_counter()
    record["parity"] = []
    recorder.running("parity")
    try:
        _parity(device, _appender(recorder, "parity", "parity"), budget)
    except (DeviceFault, _OutOfTime):
        raise
    except Exception:  # the sweep itself broke: record it, count as failure, say what never ran
        not_run = len(_parity_runs()) - len(record["parity"])  # review127 F4
        record["parity"].append({"case": "sweep", "passed": False, "not_run": not_run,
                                 "problems": [f"{not_run} cases not run after: {traceback.format_exc()}"]})
    finally:
        ops = sorted({r["op"] for r in record["parity"] if "op" in r})
        failed = _summarise(recorder, "parity", "cases", start, ops=ops)
        print(
            f"parity: {len(record['parity']) - len(failed)}/{len(record['parity'])} passed "
            f"({len(ops)} ops) in {record['parity_summary']['seconds']} s"
        )
        for r in failed:
            tiles = " on the smallest tiles" if r.get("tiles") == "smallest" else ""  # review186 F6
            if "element_blocks" in r:
                tiles = f" on {r['element_blocks']} element blocks"
            print(f"  FAIL {r['case']} [{r.get('dtype', '?')}]{tiles}: {'; '.join(r['problems'])}")
    return failed


def _end_to_end_phase(
    recorder: Recorder, args: argparse.Namespace, device: torch.device, budget: Budget
) -> list[dict[str, Any]]:
    """Step 3 into ``end_to_end`` and its summary (``not_run`` without scikit-learn); returns
    the failed runs."""
    record = recorder.record
    if not HAS_SKLEARN:
        why = "scikit-learn is not installed (it provides the digits data)"
        record.setdefault("not_run", {})["end_to_end"] = why
        recorder.save()
        print(f"end to end: not run ({why})", flush=True)
        return []
    print(f"end to end ({args.e2e_steps} steps, float32, loss parity with checked_cpu):", flush=True)
    start = time.perf_counter()
    record["end_to_end"] = []
    recorder.running("end to end")
    try:
        append = _appender(recorder, "end_to_end", "end to end")
        _end_to_end(args.e2e_steps, args.e2e_batch, append, device, budget)
    finally:
        failed = _summarise(recorder, "end_to_end", "runs", start)
    return failed


def _timing_phase(
    recorder: Recorder, args: argparse.Namespace, device: torch.device, budget: Budget
) -> list[dict[str, Any]]:
    """Step 4 into ``timing``; returns the failed rows."""
    record = recorder.record
    print(f"attention timings (float32, {args.heads} heads, median of {args.iterations}):", flush=True)
    record["timing"] = []
    recorder.running("timing")
    try:
        _timings(
            [int(s) for s in args.sizes.split(",")],
            [int(w) for w in args.widths.split(",")],
            args.heads,
            args.iterations,
            device,
            _appender(recorder, "timing", "timing"),
            budget,
        )
    finally:
        failed = [r for r in record["timing"] if not r["passed"]]
    return failed


def _failed_rows(record: dict[str, Any], key: str) -> list[dict[str, Any]]:
    """The failed rows of ``record[key]`` (a phase that a fault or ``--max-seconds`` cut short:
    the last line counts what it ran, not "not run")."""
    return [row for row in record.get(key, []) if not row["passed"]]


def _phase_error(recorder: Recorder, phase: str) -> None:
    """Record the exception being handled as ``phase``'s error (``phase_errors``, which fails the
    check) and print its last line."""
    recorder.record.setdefault("phase_errors", {})[phase] = traceback.format_exc()
    recorder.running(None)
    print(f"{phase}: ERROR {traceback.format_exc().strip().splitlines()[-1]}", flush=True)


def _stopped_by(recorder: Recorder, error: DeviceFault | _OutOfTime) -> str:
    """Record why no further device work runs in this process (``aborted``, or a ``skipped``
    entry) and return it in words, for the phases that then do not start."""
    if isinstance(error, DeviceFault):
        recorder.record["aborted"] = {"phase": error.phase, "step": error.where, "error": error.error}
        recorder.save()
        print(f"ABORTED: the device is unusable after {error.phase} {error.where}: {error.error}", flush=True)
        return f"the device is unusable after {error.phase} {error.where}"
    recorder.skip(str(error))
    return "out of time (--max-seconds)"


def main(argv: list[str] | None = None) -> int:
    """Steps 0-5 of the module docstring, in the order build, parity, refusals, end to end,
    timing, then a refusal crash's diagnosis: the refusal child (about 20 s, a process and CUDA
    context of its own) runs before the long phases, so that a hang or a fault there cannot drop
    it, and the diagnosis (small extension builds) last, so that it cannot starve the timings
    (review74 F2). A phase that raises records its error (``phase_errors``) and the next phase
    runs; after a device fault or past ``--max-seconds`` the phases not started are listed
    (``not_run``, ``skipped``), so the last line never counts them as passed (review74 F5)."""
    args = _parse(argv)
    budget = Budget(args.max_seconds)
    recorder = Recorder(
        Path(args.out),
        {
            "name": "gpu_check",
            "started": time.strftime("%Y-%m-%dT%H:%M:%S"),
            "argv": sys.argv[1:] if argv is None else list(argv),
            "error_measures": ERROR_MEASURES,
            "code": _code(),
        },
    )
    record = recorder.record
    recorder.save()
    status = _build(recorder)
    if status is not None:
        return status
    device = _device()
    failed: dict[str, list[dict[str, Any]]] = {}
    stopped: str | None = None  # why no further device work runs in this process
    try:
        failed["parity"] = _parity_phase(recorder, device, budget)
    except (DeviceFault, _OutOfTime) as error:
        stopped = _stopped_by(recorder, error)
        failed["parity"] = _failed_rows(record, "parity")  # the cases run before it
    if budget.exhausted():  # a child process with a CUDA context of its own: after a fault too
        recorder.skip("refusals")
    else:
        try:
            failed["refusals"] = _refusal_phase(recorder, device.type, budget)
        except Exception:  # the phase itself broke (review75 F2): recorded, and the next one runs
            _phase_error(recorder, "refusals")
    for phase, run in (("end to end", _end_to_end_phase), ("timing", _timing_phase)):
        if stopped is not None:
            if "aborted" in record:
                record.setdefault("not_run", {})[phase.replace(" ", "_")] = stopped
            else:
                recorder.skip(f"{phase} (not started)")
            continue
        try:
            failed[phase] = run(recorder, args, device, budget)
        except (DeviceFault, _OutOfTime) as error:
            stopped = _stopped_by(recorder, error)
            failed[phase] = _failed_rows(record, phase.replace(" ", "_"))  # the rows run before it
        except Exception:  # the phase itself broke: recorded, and the next one runs
            _phase_error(recorder, phase)
    if _died_in_a_call(failed.get("refusals", [])):
        _diagnose_refusal_crash(recorder, budget)
    record.pop("in_progress", None)
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    ok = not (any(failed.values()) or {"aborted", "skipped", "phase_errors"} & record.keys())
    record["passed"] = ok
    recorder.save()
    errors = record.get("phase_errors", {})
    counts = ", ".join(
        f"{phase} {len(failed[phase]) if phase in failed else 'raised' if phase in errors else 'not run'}"
        for phase in ("parity", "refusals", "end to end", "timing")  # the order they run in (review75 F3)
    )
    not_run = "".join(f"; not run: {phase} ({why})" for phase, why in record.get("not_run", {}).items())
    print(f"wrote {recorder.path}; {'all checks passed' if ok else 'FAILED'} (failed: {counts}){not_run}")
    return 0 if ok else EXIT_FAILED


def _report_hangs(argv: list[str]) -> None:
    """In the script's process only (not in a caller of :func:`main`): with ``--max-seconds``, a
    step still running :data:`HANG_REPORT_AFTER` s past it (a kernel, the build) prints every
    thread's stack on stderr, again every as many seconds, from faulthandler's own thread."""
    limit = _parse(argv).max_seconds
    if limit > 0:
        faulthandler.dump_traceback_later(limit + HANG_REPORT_AFTER, repeat=True)


if __name__ == "__main__":
    _report_hangs(sys.argv[1:])
    sys.exit(main())
