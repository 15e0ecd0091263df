"""torchlean's own CUDA kernels and the bindings run clean under AddressSanitizer and UBSan.

The emulator executes the kernel sources on the CPU, so the host toolchain's sanitizers see every
global- and shared-memory access the kernels make: an out-of-bounds index that a GPU might
silently read past (or that would corrupt a neighbouring allocation) aborts the run here. The
parity cases run in a child process (``sanitized_parity.py``) because the sanitizer runtime must
be preloaded before Python starts. Skipped where gcc's libasan, a C++ compiler, ninja or the
Python headers are missing, or where the sanitizer runtime cannot run (a bare interpreter under it
fails); an instrumented build that runs and fails is a failure.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from torchlean.backend.providers.native_cuda import parity

HERE = Path(__file__).resolve().parent
UNAVAILABLE = 3  # sanitized_parity.py's exit status when a tool the instrumented build needs is missing
OWN_KERNEL_OPS = [
    "hard_masked_softmax", "smooth_max_pool", "selective_scan", "rand_uniform", "bernoulli_mask"
]  # fmt: skip


def _libasan() -> str:
    if shutil.which("gcc") is None or shutil.which("ninja") is None:
        pytest.skip("needs gcc and ninja")
    path = subprocess.run(
        ["gcc", "-print-file-name=libasan.so"], capture_output=True, text=True, check=False
    ).stdout.strip()
    if not os.path.isabs(path) or not os.path.exists(path):
        pytest.skip("gcc has no AddressSanitizer runtime (libasan.so)")
    return path


def _sanitizer_env() -> dict[str, str]:
    env = {
        **os.environ,
        "LD_PRELOAD": _libasan(),
        # Leaks of the interpreter are not ours; the emulator's fibers switch stacks, which
        # stack-use-after-return detection does not follow.
        "ASAN_OPTIONS": "detect_leaks=0:detect_stack_use_after_return=0",
        "UBSAN_OPTIONS": "halt_on_error=1:print_stacktrace=1",
        "PYTHONPATH": os.pathsep.join([str(HERE.parents[1]), os.environ.get("PYTHONPATH", "")]),
    }
    # the sanitizer runtime must work in this environment at all (some sandboxes refuse its
    # shadow-memory mappings): a bare interpreter under it must start and exit cleanly
    probe = subprocess.run(
        [sys.executable, "-c", "print('ok')"],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    if probe.returncode != 0 or probe.stdout.strip() != "ok":
        pytest.skip(f"the AddressSanitizer runtime does not run here: {probe.stderr.strip()[-300:]}")
    return env


def _run(ops: list[str], tmp_path: Path) -> subprocess.CompletedProcess[str]:
    done = subprocess.run(
        [sys.executable, str(HERE / "sanitized_parity.py"), *ops],
        capture_output=True, text=True, env=_sanitizer_env(), cwd=tmp_path, timeout=1800, check=False,
    )  # fmt: skip
    if done.returncode == UNAVAILABLE and done.stdout.startswith("sanitized build unavailable"):
        pytest.skip(done.stdout.strip())
    return done


def _sanitizer_reports(log: str) -> list[str]:
    markers = ("ERROR: AddressSanitizer", "runtime error:")
    return [line for line in log.splitlines() if any(marker in line for marker in markers)]


def test_own_kernels_and_attention_are_clean_under_sanitizers(tmp_path: Path) -> None:
    done = _run([*OWN_KERNEL_OPS, parity.ATTENTION], tmp_path)
    log = done.stdout + done.stderr
    assert not _sanitizer_reports(log), log[-8000:]
    assert done.returncode == 0, log[-8000:]
    own, attention = parity.cases_for(OWN_KERNEL_OPS), parity.cases_for([parity.ATTENTION])
    # two dtypes per case, each under its own schedule (attention on direct_attention: the composed
    # path is torch operators only, outside the instrumented build), plus the small-tile cases
    expected = 2 * (len(own) + len(attention)) + len(parity.SMALL_TILE_CASES)
    assert f"cases {expected} failed 0" in done.stdout, log[-8000:]


def test_the_child_reports_unknown_ops(tmp_path: Path) -> None:
    done = _run(["no_such_op"], tmp_path)
    assert done.returncode == 2
    assert "unknown ops ['no_such_op']" in done.stdout
