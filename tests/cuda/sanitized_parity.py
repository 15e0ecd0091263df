"""Run native parity cases on the sanitizer-instrumented host-emulation build.

Usage: ``python tests/cuda/sanitized_parity.py [OP ...]`` (default: every op) in a process that
preloads the sanitizer runtime, as ``test_emulation_sanitizers.py`` starts it::

    LD_PRELOAD=$(gcc -print-file-name=libasan.so) ASAN_OPTIONS=detect_leaks=0 \\
        python tests/cuda/sanitized_parity.py hard_masked_softmax

The script hides CUDA devices from itself before torch is imported: on a GPU machine CUDA's
initialisation under ASan threw, and ASan, loaded before libstdc++, aborted on the throw.

Builds ``csrc/`` for the CPU with ``-fsanitize=address,undefined`` (so an out-of-bounds read or
write of device or shared memory, or undefined arithmetic, in a kernel or a binding aborts the
process with the sanitizer's report), then runs each parity case of the given ops in float32
under one emulated thread schedule and in float64 under another (attention also its ``SMALL_TILE_CASES`` on an
emulated device with less shared memory, which take the smaller tiles). Attention runs on
``native_cuda.direct_attention`` only: ``torchlean.composed_attention`` is torch operators
alone, which the instrumented build does not contain, so the sanitizers see none of it (its
parity is ``test_cuda_attention.py``'s).
Prints one line per failed case (with the result of running it once more, which tells a
transient fault from a deterministic one) and ``cases <n> failed <k>``; exits 1 when a case fails or the
instrumented build fails, 2 for unknown ops, 3 when a tool the build needs (a C++ compiler,
``ninja``, the Python headers) is missing on this machine.
"""

from __future__ import annotations

import os
import sys

os.environ["CUDA_VISIBLE_DEVICES"] = ""  # host emulation only (see above); before torch starts

import torch

from torchlean.backend.providers.native_cuda import extension, parity

UNAVAILABLE = 3
"""Exit status when a tool the instrumented build needs is missing here."""
SCHEDULED_DTYPES = ((0, torch.float32), (7, torch.float64))
"""The emulated thread schedule (its seed) each dtype's cases run under."""


def main(ops: list[str]) -> int:
    unknown = sorted(set(ops) - {*parity.NATIVE_OPS, parity.ATTENTION})
    if unknown:
        print(f"unknown ops {unknown} (accepted: {[*parity.NATIVE_OPS, parity.ATTENTION]})")
        return 2
    cases = parity.cases_for(ops or [*parity.NATIVE_OPS, parity.ATTENTION])
    failed = total = 0
    try:
        extension.load_host_emulation(extension.SANITIZERS)
    except extension.NativeToolchainError as error:
        print(f"sanitized build unavailable: {error}")
        return UNAVAILABLE
    except extension.NativeExtensionError as error:
        print(f"FAILED the sanitized build: {error}")
        return 1
    with extension.host_emulation(extension.SANITIZERS) as module:
        # each dtype's instantiation of every kernel once, under its own thread schedule: the
        # sanitizers look for out-of-bounds and undefined accesses, whose indices the kernels compute
        # from thread and block ids, not from the order threads run in (an access that moved with
        # the order would be a race, which test_native_parity.py's and test_cuda_attention.py's
        # three-schedule runs look for bit for bit); two schedules per dtype took twice the time
        for seed, dtype in SCHEDULED_DTYPES:
            module.emulation_set_schedule_seed(seed)
            for case in cases:
                result = parity.run_case(case, dtype, torch.device("cpu"))
                total += 1
                if not result.passed:
                    failed += 1
                    again = parity.run_case(case, dtype, torch.device("cpu"))
                    rerun = "passed" if again.passed else "; ".join(again.problems)
                    print(
                        f"FAILED {result.case} {result.dtype}: {'; '.join(result.problems)} "
                        f"(errors {result.errors}; run again: {rerun}, errors {again.errors})"
                    )
        if parity.ATTENTION in {case.op for case in cases}:
            # the smaller attention tiles, as a GPU with less shared memory per block takes them
            module.emulation_set_shared_memory_limit(parity.SMALL_TILE_SHARED_MEMORY)
            try:
                for case, dtype in parity.SMALL_TILE_CASES:
                    result = parity.run_case(case, dtype, torch.device("cpu"))
                    total += 1
                    if not result.passed:
                        failed += 1
                        print(
                            f"FAILED {result.case} {result.dtype} (small tiles): {'; '.join(result.problems)}"
                        )
            finally:
                module.emulation_set_shared_memory_limit(0)
    print(f"cases {total} failed {failed}")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
