"""Which step of raising a C++ exception out of a torch extension kills the process here?

On the one GPU machine seen (issue 7: NVIDIA H200, torch 2.11.0+cu130, Python 3.12.3, GCC 13.3,
Ubuntu 24.04) every ``c10::Error`` that ``torchlean_native_ext`` threw (``TORCH_CHECK_VALUE``)
killed the process with SIGSEGV, in its CUDA and host-emulation builds alike; on this project's
CPU machines the same code raises ``ValueError``. The extension now raises its refusals without a
``c10::Error`` and raises every exception as a Python one inside its bindings
(``csrc/native_ops.h``: ``Refusal``; ``csrc/bindings.cpp``: ``Refusing``). This script narrows
down the cause: it builds one small extension (``torch.utils.cpp_extension.load_inline`` with
plain ``m.def`` bindings, as the crashing build had; host code, the compiler and flags torch
chooses) and calls each of its functions in a child process of its own, so that each step can fail
alone:

=========================  ==========================================================  ========
case                       what the call does                                          expected
=========================  ==========================================================  ========
``torch error``            ``torch.empty(-1)``: torch's own C++ error (no build)        raises RuntimeError
``construct c10::Error``   constructs a ``c10::ValueError`` (it captures a backtrace)   returns
                           and returns its message, throwing nothing
``std caught in C++``      throws a ``std::runtime_error`` from a non-inlined function  returns
                           and catches it in C++
``c10 caught in C++``      the same with ``TORCH_CHECK_VALUE``'s error                   returns
``refusal raised here``    what the extension does now: a ``std::exception`` caught in   raises ValueError
                           the binding and raised as ``ValueError`` there
``std out``                ``std::invalid_argument`` left to pybind11's exception       raises ValueError
                           translation
``c10 out``                ``TORCH_CHECK_VALUE`` left to torch's translation (what the   raises ValueError
                           extension did when it crashed)
=========================  ==========================================================  ========

The ``reading`` of the record names the first step that crashed (cases in the order of the
table), else the first case that did not behave as expected. Where a case crashed and ``gdb`` (or
``cuda-gdb``) is on PATH, the first such case is run once more under it and the native backtrace
kept; then, unless it was the torch control, it is rerun on each build variant (:data:`VARIANTS`:
``-O0``, no control-flow protection, static libgcc, static libstdc++), and ``variant_reading`` says
which builds, if any, stop the crash.

Usage::

    python3 bench/exception_probe.py [OUT.json]   # default bench/results/exception_probe.json

Exit status: 0 every case behaved as expected, 1 otherwise, 2 the probe extension did not build.
``bench/gpu_check.py`` runs :func:`probe` when a refusal of its own crashed.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:  # this checkout's torchlean, installed or not (review231 F3)
    sys.path.insert(1, str(ROOT))
DEFAULT_OUT = ROOT / "bench" / "results" / "exception_probe.json"
MODULE_NAME = "torchlean_exception_probe"
CASE_TIMEOUT = 120.0
GDB_TIMEOUT = 120.0

CPP_SOURCE = r"""
#include <torch/extension.h>

#include <stdexcept>
#include <string>

namespace {
[[gnu::noinline]] void fail_c10(const std::string& what) { TORCH_CHECK_VALUE(false, what); }
[[gnu::noinline]] void fail_std(const std::string& what) { throw std::runtime_error(what); }
}  // namespace

std::string construct_c10_error() {
  c10::ValueError error({__func__, __FILE__, static_cast<uint32_t>(__LINE__)},
                        "constructed, not thrown");
  return error.what_without_backtrace();
}

std::string c10_caught_in_cpp() {
  try {
    fail_c10("thrown and caught in C++");
  } catch (const c10::Error& error) {
    return error.what_without_backtrace();
  }
  return "not thrown";
}

std::string std_caught_in_cpp() {
  try {
    fail_std("thrown and caught in C++");
  } catch (const std::exception& error) {
    return error.what();
  }
  return "not thrown";
}

void refusal_raised_here() {
  try {
    fail_std("raised as ValueError in the binding");
  } catch (const std::exception& error) {
    PyErr_SetString(PyExc_ValueError, error.what());
    throw pybind11::error_already_set();
  }
}

void std_out() { throw std::invalid_argument("std::invalid_argument left to pybind11"); }

void c10_out() { fail_c10("TORCH_CHECK_VALUE left to torch's translation"); }
"""

FUNCTIONS = (
    "construct_c10_error",
    "std_caught_in_cpp",
    "c10_caught_in_cpp",
    "refusal_raised_here",
    "std_out",
    "c10_out",
)

CASES: tuple[tuple[str, str, str], ...] = (
    ("torch error", "torch.empty(-1)", "raises RuntimeError"),
    ("construct c10::Error", "module.construct_c10_error()", "returns"),
    ("std caught in C++", "module.std_caught_in_cpp()", "returns"),
    ("c10 caught in C++", "module.c10_caught_in_cpp()", "returns"),
    ("refusal raised here", "module.refusal_raised_here()", "raises ValueError"),
    ("std out", "module.std_out()", "raises ValueError"),
    ("c10 out", "module.c10_out()", "raises ValueError"),
)
"""(case, the Python expression a child evaluates, the outcome expected)."""

CHILD = r"""
import importlib.util, json, sys
import torch
name, path, expression = sys.argv[1:4]
try:
    if path:
        spec = importlib.util.spec_from_file_location(name, path)
        module = importlib.util.module_from_spec(spec)
        spec.loader.exec_module(module)
except Exception as error:
    print("@@case " + json.dumps({"outcome": "not run", "message": f"loading {path}: {error}"[:300]}))
    sys.exit(0)
try:
    value = eval(expression)
    outcome, message = "returns", value if isinstance(value, str) else repr(value)
except Exception as error:
    outcome, message = f"raises {type(error).__name__}", str(error)
print("@@case " + json.dumps({"outcome": outcome, "message": message[:300]}), flush=True)
"""
CASE_MARK = "@@case "

READINGS: tuple[tuple[str, str], ...] = (
    (
        "torch error",
        "torch's own C++ errors crash too: the process's C++ runtime or unwinder, not the extension",
    ),
    ("construct c10::Error", "constructing a c10::Error crashes (it captures a backtrace with the unwinder)"),
    ("std caught in C++", "throwing any exception crashes, even one caught in the same library"),
    ("c10 caught in C++", "throwing a c10::Error crashes, even one caught in the same library"),
    ("refusal raised here", "raising from the binding through error_already_set crashes"),
    ("std out", "pybind11's translation of a standard exception thrown by an extension crashes"),
    ("c10 out", "torch's translation of a c10::Error thrown by an extension crashes"),
)
"""Each case and what its crash means, in the order the reading looks for the first crash."""

BASE_CFLAGS: tuple[str, ...] = ("-O2",)

VARIANTS: tuple[tuple[str, tuple[str, ...], tuple[str, ...]], ...] = (
    ("-O0", ("-O0",), ()),
    ("no CET", ("-fcf-protection=none",), ()),
    ("static libgcc", (), ("-static-libgcc",)),
    ("static libstdc++", (), ("-static-libstdc++", "-static-libgcc")),
)
"""Builds of the probe extension with other flags (name, compiler flags added after
:data:`BASE_CFLAGS`, linker flags): when a case crashes, it is rerun on each, so that the record
says which change to the build, if any, stops the crash (optimisation; the control-flow protection
Ubuntu's GCC turns on by default; the unwinder and C++ runtime linked into the library rather than
shared with torch)."""


def death(returncode: int) -> str:
    """How a child process ended, from its exit status: ``signal SIGSEGV`` (or ``signal 40`` for a
    signal without a name) when a signal killed it, else ``exit N``."""
    if returncode >= 0:
        return f"exit {returncode}"
    try:
        return f"signal {signal.Signals(-returncode).name}"
    except ValueError:
        return f"signal {-returncode}"


def _environment() -> dict[str, str]:
    return {
        **os.environ,
        "PYTHONPATH": os.pathsep.join(filter(None, (str(ROOT), os.environ.get("PYTHONPATH")))),
    }


def build(variant: int | None = None) -> Path:
    """Compile the probe extension (cached by torch across runs) and return its library's path:
    with :data:`BASE_CFLAGS`, or with the flags of ``VARIANTS[variant]`` added (a module of its
    own, ``torchlean_exception_probe_variant<variant>``; torch names its rebuilds ``_v1``, ...).

    The build directory is torchlean's (:func:`extension.build_directory`), built under
    :func:`extension.build_lock`, which clears the ``lock`` file a killed build leaves behind: a
    probe build cut off by an outer ``timeout`` no longer makes the next run wait for it forever
    (review74 F3).

    Raises:
        RuntimeError, OSError, ImportError: from ``torch.utils.cpp_extension.load_inline``.
    """
    from torch.utils import cpp_extension

    from torchlean.backend.providers.native_cuda import extension

    name, cflags = MODULE_NAME, BASE_CFLAGS
    ldflags: tuple[str, ...] = ()
    if variant is not None:
        _, extra_cflags, ldflags = VARIANTS[variant]
        name, cflags = f"{MODULE_NAME}_variant{variant}", BASE_CFLAGS + extra_cflags
    directory = extension.build_directory(name, Path(__file__))
    directory.mkdir(parents=True, exist_ok=True)
    with extension.build_lock(directory):
        module = cpp_extension.load_inline(  # type: ignore[no-untyped-call]  # torch leaves it unannotated
            name=name,
            cpp_sources=[CPP_SOURCE],
            functions=list(FUNCTIONS),
            extra_cflags=list(cflags),
            extra_ldflags=list(ldflags),
            with_pytorch_error_handling=False,  # plain m.def, as csrc/bindings.cpp had
            build_directory=str(directory),
            verbose=False,
        )
    return Path(str(module.__file__))


def _module_name(library: Path | None) -> str:
    """The module name a library was built under (its file name up to the first dot)."""
    return MODULE_NAME if library is None else library.name.split(".")[0]


def run_case(expression: str, library: Path | None, timeout: float = CASE_TIMEOUT) -> dict[str, Any]:
    """Evaluate ``expression`` (``module`` is the probe extension at ``library``) in a child
    process: ``{"outcome": "returns" | "raises <type>" | "crashed: <how>", "message": ...}``."""
    command = [sys.executable, "-P", "-c", CHILD, _module_name(library), str(library or ""), expression]
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=_environment(), timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return {"outcome": f"crashed: timed out after {timeout:g} s", "message": ""}
    for text in done.stdout.splitlines():
        if text.startswith(CASE_MARK):
            result: dict[str, Any] = json.loads(text.removeprefix(CASE_MARK))
            return result
    return {"outcome": f"crashed: {death(done.returncode)}", "message": "", "stderr": done.stderr[-1500:]}


def native_backtrace(expression: str, library: Path | None, timeout: float = GDB_TIMEOUT) -> str | None:
    """The last lines of ``gdb``'s (or ``cuda-gdb``'s) backtrace of ``expression`` run as in
    :func:`run_case`, or ``None`` when neither debugger is on PATH."""
    debugger = shutil.which("gdb") or shutil.which("cuda-gdb")
    if debugger is None:
        return None
    command = [
        debugger, "-q", "-batch", "-ex", "set pagination off", "-ex", "run", "-ex", "bt",
        "--args", sys.executable, "-P", "-c", CHILD, _module_name(library), str(library or ""), expression,
    ]  # fmt: skip
    try:
        done = subprocess.run(
            command, capture_output=True, text=True, env=_environment(), timeout=timeout, check=False
        )
    except subprocess.TimeoutExpired:
        return f"{Path(debugger).name} timed out after {timeout:g} s"
    lines = (done.stdout + done.stderr).splitlines()
    return "\n".join(lines[-60:])


def reading(outcomes: dict[str, str], built: bool = True) -> str:
    """What the outcomes (case -> outcome, as :func:`run_case` gives) say: the first case that
    crashed, in :data:`READINGS` order; else the first that did not behave as expected; else that
    every case did. ``built=False``: the probe extension did not build, so only the torch control
    ran."""
    expected = {case: outcome for case, _, outcome in CASES}
    meanings = dict(READINGS)
    crashed = [case for case, _ in READINGS if outcomes.get(case, "").startswith("crashed")]
    if crashed:
        case = crashed[0]
        return f"{case}: {meanings[case]} ({outcomes[case].removeprefix('crashed: ')})"
    prefix = "" if built else "the probe extension did not build; "
    for case, _ in READINGS:
        if case in outcomes and outcomes[case] != expected[case]:
            return f"{prefix}{case}: expected {expected[case]!r}, got {outcomes[case]!r} (nothing crashed)"
    if not built:
        return f"{prefix}only the torch control ran, as expected"
    return "nothing crashed: every case behaved as expected"


def probe(
    on_case: Callable[[dict[str, Any]], None] = lambda _: None,
    record: dict[str, Any] | None = None,
    deadline: float = math.inf,
) -> dict[str, Any]:
    """Build the probe extension, run every case of :data:`CASES` and read the outcomes; the case
    the reading names as crashed is rerun under a debugger when there is one. Each case dict
    (``case``, ``expected``, ``outcome``, ``message``, ``passed``) is passed to ``on_case`` as it
    finishes, already added to ``record`` (filled in place and returned; a new dict by default), so
    a caller can save what has been measured so far. Past ``deadline`` (``time.monotonic()``
    seconds) no further case or debugger run starts: they are listed under ``skipped``."""
    import torch

    record = {} if record is None else record
    record |= {
        "python": sys.version.split()[0],
        "platform": platform.platform(),
        "libc": " ".join(platform.libc_ver()),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "torch_built_with": [
            line.strip() for line in torch.__config__.show().splitlines() if line.strip().startswith("- GCC")
        ],
        "cxx": _compiler_version(),
        "environment": _settings(),
    }
    start = time.perf_counter()
    try:
        library: Path | None = build()
    except (RuntimeError, OSError, ImportError) as error:
        record["build_error"] = str(error)[-2000:]
        library = None
    record["build_seconds"] = round(time.perf_counter() - start, 1)
    record["libraries"] = _runtime_libraries()
    record["cases"] = []
    record["skipped"] = []
    for case, expression, expected in CASES:
        if library is None and "module." in expression:
            continue
        if time.monotonic() >= deadline:
            record["skipped"].append(case)
            continue
        row = {"case": case, "expected": expected, **run_case(expression, library)}
        row["passed"] = row["outcome"] == expected
        record["cases"].append(row)
        on_case(row)
    outcomes = {row["case"]: row["outcome"] for row in record["cases"]}
    record["reading"] = reading(outcomes, built=library is not None)
    crashed = next((row for row in record["cases"] if row["outcome"].startswith("crashed")), None)
    if crashed is not None:  # CASES and READINGS share the order: the case the reading names
        expression = next(e for c, e, _ in CASES if c == crashed["case"])
        if time.monotonic() >= deadline:
            record["skipped"].append("backtrace")
        else:
            text = native_backtrace(expression, library)
            record["backtrace"] = {"case": crashed["case"], "text": text or "no gdb or cuda-gdb on PATH"}
        if crashed["case"] != CASES[0][0]:  # the torch control builds nothing: no variant to try
            record["variants"] = []
            for row in variants(crashed["case"], deadline, record["skipped"]):
                record["variants"].append(row)
                on_case(row)
            record["variant_reading"] = variant_reading(crashed["case"], record["variants"])
    record["passed"] = (
        library is not None and not record["skipped"] and all(row["passed"] for row in record["cases"])
    )
    return record


def variants(case: str, deadline: float, skipped: list[str]) -> Iterator[dict[str, Any]]:
    """Rerun ``case`` on each build of :data:`VARIANTS`; yields one row per variant (as a case row,
    with ``variant``, its flags and ``build_seconds``; ``outcome`` "not built" and ``build_error``
    when it did not build). Past ``deadline`` the variants left are added to ``skipped``."""
    expression, expected = next((e, o) for c, e, o in CASES if c == case)
    for index, (name, cflags, ldflags) in enumerate(VARIANTS):
        if time.monotonic() >= deadline:
            skipped.append(f"variant {name}")
            continue
        row: dict[str, Any] = {
            "case": f"{case} [{name}]",
            "variant": name,
            "cflags": list(cflags),
            "ldflags": list(ldflags),
            "expected": expected,
        }
        start = time.perf_counter()
        try:
            library = build(index)
        except (RuntimeError, OSError, ImportError) as error:
            row |= {"outcome": "not built", "message": "", "build_error": str(error)[-1000:]}
        else:
            row |= run_case(expression, library)
        row["build_seconds"] = round(time.perf_counter() - start, 1)
        row["passed"] = row["outcome"] == expected
        yield row


def variant_reading(case: str, rows: list[dict[str, Any]]) -> str:
    """Which builds of :data:`VARIANTS` stop ``case`` crashing, from :func:`variants`' rows: those
    on which it ran without crashing (with the outcome where it is not the expected one), then
    those on which it still crashed; builds that did not build are left out."""
    crashed = [row["variant"] for row in rows if row["outcome"].startswith("crashed")]
    survived = [
        row["variant"] if row["passed"] else f"{row['variant']} ({row['outcome']})"
        for row in rows
        if row["outcome"] not in ("not built", "not run") and not row["outcome"].startswith("crashed")
    ]
    if survived:
        still = f"; it still crashes with: {', '.join(crashed)}" if crashed else ""
        return f"{case} does not crash when built with: {', '.join(survived)}{still}"
    if crashed:
        return f"{case} crashes with every build variant that ran ({', '.join(crashed)})"
    return f"no build variant of {case} ran to an outcome"


def _compiler_version() -> str:
    compiler = os.environ.get("CXX", "c++")
    try:
        done = subprocess.run(
            [compiler, "--version"], capture_output=True, text=True, timeout=30, check=False
        )
    except OSError as error:
        return f"{compiler}: {error}"
    return f"{compiler}: {(done.stdout.splitlines() or [''])[0]}"


def _settings() -> dict[str, str]:
    """The environment variables that change how torch builds or loads an extension or reports its
    errors (``TORCH_SHOW_CPP_STACKTRACES``, ``LD_PRELOAD``, compiler flags, ...); a name that looks
    like a credential (``TOKEN``, ``KEY``, ``SECRET``, ``PASSWORD``) is left out."""
    prefixes = (
        "TORCH_",
        "PYTORCH_",
        "LD_",
        "CUDA_",
        "CXX",
        "CC",
        "CFLAGS",
        "CPPFLAGS",
        "LDFLAGS",
        "MAX_JOBS",
    )
    secret = ("TOKEN", "KEY", "SECRET", "PASSWORD")
    return {
        name: value
        for name, value in sorted(os.environ.items())
        if name.startswith(prefixes) and not any(word in name.upper() for word in secret)
    }


def _runtime_libraries() -> list[str]:
    """The C/C++ runtime libraries this process has mapped (libstdc++, libgcc_s, libc, libunwind)."""
    try:
        maps = Path("/proc/self/maps").read_text()
    except OSError:
        return []
    names = ("libstdc++", "libgcc_s", "libc.so", "libc-", "libunwind")
    paths = {row.split()[-1] for row in maps.splitlines() if "/" in row and any(n in row for n in names)}
    return sorted(paths)


def line(row: dict[str, Any]) -> str:
    """One progress line of a case."""
    verdict = "ok" if row["passed"] else f"FAIL (expected {row['expected']})"
    return f"  {row['case']:<24} {row['outcome']:<28} {verdict}"


def _record_path(text: str) -> Path:
    """argparse ``type`` of the record path, checked before the build with the CLI's own check
    (not a folder or a device, its folder can be created and written; review83 F4: a traceback
    after the cases ran). Not ``_record``'s: ``gpu_check.py`` loads this script without ``bench/``
    on ``sys.path``."""
    from torchlean.backend.errors import TorchLeanError
    from torchlean.cli._output import check_writable, file_path

    try:
        check_writable(file_path(text), "the record", regular=True)
    except TorchLeanError as error:
        raise argparse.ArgumentTypeError(str(error)) from None
    return Path(text)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Build a small torch extension and find which step of raising a C++ exception "
        "kills the process (each case in a child process).",
    )
    parser.add_argument("out", nargs="?", type=_record_path, default=str(DEFAULT_OUT),
                        help=f"the JSON record to write (default: {DEFAULT_OUT.relative_to(ROOT)})")
    out: Path = parser.parse_args(argv).out
    print(f"building {MODULE_NAME} and running {len(CASES)} cases, each in a child process:", flush=True)
    record = probe(lambda row: print(line(row), flush=True))
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(record, indent=2) + "\n")
    if "build_error" in record:
        print(f"the probe extension did not build: {record['build_error'][-500:]}", file=sys.stderr)
    print(f"reading: {record['reading']}")
    if "variant_reading" in record:
        print(f"build variants: {record['variant_reading']}")
    if "backtrace" in record:
        print(f"native backtrace of {record['backtrace']['case']!r}:\n{record['backtrace']['text']}")
    print(f"wrote {out}")
    if "build_error" in record:
        return 2
    return 0 if record["passed"] else 1


if __name__ == "__main__":
    sys.exit(main())
