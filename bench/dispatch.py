"""Per-op overhead of an eager call on a tiny tensor, and what it is made of, in microseconds.

An eager op (``torchlean.relu(x)`` on a (2, 2) float32 tensor) runs, after its first use in a
session, through :func:`torchlean.autograd.session.run_op`: the session lookup (current session,
cached :class:`~torchlean.autograd.dispatch.BoundKernel` for ``(op, grad mode)``), the operand
and device checks, ``ExecutableKernel.run`` with its mint check (the executable kernel and its
accepted kernel minted and unchanged; ``require_minted``, behind beartype's type check), the
linked kernel, the result tensor and, when an input requires a gradient, the tape node. The script times

* ``kernel``: the linked forward alone (``linked.forward(capsule, arrays, params)``: guard +
  numpy kernel), the floor no dispatcher can remove;
* ``eager_no_grad`` / ``eager_grad``: the whole call inside ``no_grad()`` / with an input that
  requires a gradient (tape record included); ``overhead_*`` is that minus ``kernel`` (and minus
  entering and leaving the ``no_grad()`` block, timed alone), computed per round, the target of
  issue 8 (<= 10 µs per op after first use). The four are timed round-robin;
* the parts, each timed alone on the same objects: ``session_lookup`` (current session and its
  cache), ``beartype_validator`` (``ExecutableKernel.run`` minus a direct ``handler.execute``: the
  mint check and beartype's type check; the key predates the mint check's move out of beartype),
  ``operand_check`` (the host fast path of the operand/device checks), ``result_tensor``
  (``Tensor._make``), ``tape_record`` (saved arrays + ``Node``), and ``bind`` (what binding a
  fresh handler costs; the session binds once per op, so it is not on the hot path);
* ``first_use``: the first call of the op in a fresh session (plan + acceptance gate + bind +
  run).

Each timing is the median over ``repeats`` batches of ``inner`` calls (per call), with the spread.
Usage: ``python3 bench/dispatch.py [--quick] [--out DIR] [--profile checked_cpu]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable
from typing import Any

import _record
import numpy as np

import torchlean as tl
from torchlean.autograd import dispatch
from torchlean.autograd.session import current_session
from torchlean.autograd.tape import Node, SavedArray, VersionCounter
from torchlean.backend import profiles
from torchlean.backend.binding import KernelHandler, bind
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.backend.vocabulary import BackendOp
from torchlean.tensor import Tensor

NAME = "dispatch"
OVERHEAD_LIMIT_US = 10.0
OP = BackendOp.RELU


def interleaved_us(
    calls: dict[str, Callable[[], object]], inner: int, repeats: int,
    cpu: dict[str, list[float]] | None = None,
) -> dict[str, list[float]]:
    """Per-call µs samples of every call, timed round-robin (one batch of ``inner`` calls of each
    per round, ``repeats`` rounds), so load changes on a shared machine hit all of them alike;
    with ``cpu``, the process-CPU µs per call of the same batches go there (review143 F3: a wall
    time that waited for a CPU reads as slow and steady)."""
    for call in calls.values():
        for _ in range(inner):
            call()
    samples: dict[str, list[float]] = {key: [] for key in calls}
    for _ in range(repeats):
        for key, call in calls.items():
            started, started_cpu = time.perf_counter(), time.process_time()
            for _ in range(inner):
                call()
            samples[key].append((time.perf_counter() - started) / inner * 1e6)
            if cpu is not None:
                cpu.setdefault(key, []).append((time.process_time() - started_cpu) / inner * 1e6)
    return samples


def per_call_us(call: Callable[[], object], inner: int, repeats: int) -> dict[str, float | int]:
    """Median (and spread) over ``repeats`` batches of ``inner`` calls, in µs per call."""
    return _record.summary(interleaved_us({"call": call}, inner, repeats)["call"])


def differences(a: list[float], b: list[float]) -> dict[str, float | int]:
    """Summary of the per-round differences ``a - b`` (same rounds)."""
    return _record.summary([x - y for x, y in zip(a, b, strict=True)])


def first_use_us(profile: str, x: Tensor, repeats: int) -> dict[str, float | int]:
    """The first call of the op in a fresh session (plan, gate, bind, run), in µs."""
    samples = []
    for _ in range(repeats):
        with tl.session(profile):
            started = time.perf_counter()
            tl.relu(x)
            samples.append((time.perf_counter() - started) * 1e6)
    return _record.summary(samples)


def measure(profile: str, inner: int, repeats: int) -> tuple[dict[str, Any], list[Any]]:
    """Every timing of the module docstring under ``profile``; also the selected kernels."""
    x = tl.tensor(np.ones((2, 2), np.float32))
    xg = tl.tensor(np.ones((2, 2), np.float32), requires_grad=True)
    t: dict[str, Any] = {}
    with tl.session(profile) as session:
        bound = session.resolve(OP)
        accepted, linked = bound.accepted, bound.linked
        capsule = accepted.capsule
        arrays = (x._data,)
        params: dict[str, Any] = {}
        handler: KernelHandler[Any] = KernelHandler(
            linked.name, linked.op, linked.provider, linked.device, linked.forward
        )
        executable = bind(accepted, handler)
        out = linked.forward(capsule, arrays, params)

        def no_grad_call() -> None:
            with tl.no_grad():
                tl.relu(x)

        def no_grad_context() -> None:
            with tl.no_grad():
                pass

        cpu: dict[str, list[float]] = {}
        main = interleaved_us(
            {
                "kernel": lambda: linked.forward(capsule, arrays, params),
                "eager_no_grad": no_grad_call,
                "no_grad_context": no_grad_context,
                "eager_grad": lambda: tl.relu(xg),
            },
            inner,
            repeats,
            cpu,
        )
        t["cpu_us"] = {key: _record.summary(samples) for key, samples in cpu.items()}
        for key, samples in main.items():
            t[key] = _record.summary(samples)
        # the no_grad() context manager is the caller's, entered once per block, not per op
        no_grad_op = [a - c for a, c in zip(main["eager_no_grad"], main["no_grad_context"], strict=True)]
        t["overhead_no_grad"] = differences(no_grad_op, main["kernel"])
        t["overhead_grad"] = differences(main["eager_grad"], main["kernel"])
        t["session_lookup"] = per_call_us(
            lambda: current_session()._resolved.get((OP, True)), inner, repeats
        )
        run = per_call_us(lambda: executable.run(arrays, params), inner, repeats)
        direct = per_call_us(lambda: handler.execute(capsule, arrays, params), inner, repeats)
        t["beartype_validator"] = {"median": run["median"] - direct["median"], "run": run, "direct": direct}
        t["operand_check"] = per_call_us(lambda: dispatch._host_storages(OP, (x,)), inner, repeats)
        t["result_tensor"] = per_call_us(lambda: Tensor._make(out, False, None, None), inner, repeats)

        def record() -> Node:
            counter = VersionCounter()
            saved = (SavedArray(xg._data, xg._version),)
            return Node(OP.label, (xg,), saved, SavedArray(out, counter), lambda g, ins, o: (g,))

        t["tape_record"] = per_call_us(record, inner, repeats)
        t["bind"] = per_call_us(lambda: bind(accepted, handler), inner, repeats)
        selected = session.selected
    t["first_use"] = first_use_us(profile, x, max(3, repeats))
    return t, selected


def main(argv: list[str] | None = None) -> int:
    parser = _record.parser(_record.description(__doc__, "dispatch"))
    parser.add_argument("--profile", default="checked_cpu", help="backend profile (default checked_cpu)")
    args = parser.parse_args(argv)
    try:
        profiles.get(args.profile)
    except UnknownLabelError as exc:
        parser.error(f"argument --profile: {exc}")
    _record.set_threads(args.threads)
    inner, repeats = (200, 3) if args.smoke else (2_000, 7) if args.quick else (10_000, 15)
    try:
        timings, selected = measure(args.profile, inner, repeats)
    except TorchLeanError as exc:  # e.g. a CUDA profile on a machine without a CUDA device
        print(f"error: {exc}", file=sys.stderr)
        return 2
    # the wall/CPU rule on the timed calls an overhead is computed from (the eager call and the
    # kernel alone): a process that waited for a CPU is noisy, not a clean MISSED (review143 F3)
    cpus = timings["cpu_us"]

    def pairs(call: str) -> list[tuple[dict[str, Any], dict[str, Any]]]:
        return [(timings[key], cpus[key]) for key in (call, "kernel")]

    targets = [
        _record.target(timings["overhead_no_grad"]["median"], OVERHEAD_LIMIT_US,
                       "eager dispatch overhead, no grad (µs per op after first use)",
                       timings["overhead_no_grad"], wall_cpu=pairs("eager_no_grad")),
        _record.target(timings["overhead_grad"]["median"], OVERHEAD_LIMIT_US,
                       "eager dispatch overhead with tape record (µs per op after first use)",
                       timings["overhead_grad"], wall_cpu=pairs("eager_grad")),
    ]
    record = _record.base_record(NAME, args)
    record.update({
        "op": OP.label,
        "profile": args.profile,
        "input": {"shape": [2, 2], "dtype": "float32"},
        "unit": "microseconds per call",
        "inner_calls": inner,
        "timings_us": timings,
        "targets": targets,
        "backend": _record.backend_rows(selected),
    })

    def median(key: str) -> str:
        value = timings[key]
        return f"{value['median'] if isinstance(value, dict) else value:.2f}"

    rows = [
        ("kernel alone (guard + kernel)", median("kernel"), ""),
        ("eager call inside `with no_grad()` (per call)", median("eager_no_grad"), ""),
        ("  entering + leaving `no_grad()` (excluded below)", median("no_grad_context"), ""),
        ("eager call, tape record", median("eager_grad"), ""),
        ("overhead, no grad", _record.shown(timings["overhead_no_grad"]["median"], OVERHEAD_LIMIT_US, 2),
         _record.verdict(targets[0])),
        ("overhead, tape record", _record.shown(timings["overhead_grad"]["median"], OVERHEAD_LIMIT_US, 2),
         _record.verdict(targets[1])),
        ("  session lookup", median("session_lookup"), ""),
        ("  operand/device check (host fast path)", median("operand_check"), ""),
        ("  mint check (ExecutableKernel.run)", median("beartype_validator"), ""),
        ("  result tensor", median("result_tensor"), ""),
        ("  tape record (saved arrays + node)", median("tape_record"), ""),
        ("bind (once per op and session, not per call)", median("bind"), ""),
        ("first use (plan + gate + bind + run)", median("first_use"), ""),
    ]
    markdown = (
        f"### dispatch: `{OP.label}` on a (2, 2) float32 tensor, profile `{args.profile}` (µs per call)\n\n"
        + _record.table(("part", "µs", f"target <= {OVERHEAD_LIMIT_US:g} µs"), rows)
    )
    _record.write(args.out, record, markdown)
    return 0


if __name__ == "__main__":
    _record.run(main)
