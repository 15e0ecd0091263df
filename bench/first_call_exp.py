"""How often a process's first threaded torch exp (or log) is inaccurate, with and without the
warm-up the aten and LibTorch CPU kernels run when a session binds them.

Each run is a fresh Python process on ``--threads`` torch intra-op threads (default 2: the fault
needs more than one) that starts torch's thread pool with a matmul, then, in mode ``warmed``
only, calls ``torchlean.backend.providers.linked.import_torch`` (the kernels' ``prepare``: one
single-threaded ``torch.exp`` of 64 float64 elements), and computes ``--op`` (``exp``, default,
or ``log``) twice over the same 131072 values in [0.1, 8] of ``--dtype`` (float64, default, or
float32), split across the threads. A run is ``inaccurate`` when its first call's largest error
against numpy in float64, relative to the largest value, exceeds ten times the second call's and
ten epsilons of the dtype: review153 M1 saw errors of about 3e-9 to 3e-8 relative in one
thread's share (torch 2.13.0+cpu, MKL VML), the second call exact. The modes take turns, run by
run, so a change of load affects both alike. The record gives, per mode, the runs, the
inaccurate ones, the largest first-call error and the runs whose process failed (with the last
line it wrote). It is a measurement, not a test: a fault this rare needs many processes (about
1.5 s each).

Usage: ``python3 bench/first_call_exp.py [PATH] [--runs 40] [--threads 2] [--op exp]
[--dtype float64]``; PATH defaults to ``bench/results/first_call_exp.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import _record
import numpy as np
from tqdm import tqdm

from torchlean.cli._threads import torch_threads

DEFAULT_PATH = Path(__file__).resolve().parent / "results" / "first_call_exp.json"
MODES = ("plain", "warmed")

CHILD = """
import json, sys
import numpy as np, torch
mode, threads, op, dtype = sys.argv[1], int(sys.argv[2]), sys.argv[3], sys.argv[4]
torch.set_num_threads(threads)
rng = np.random.default_rng(0)
a = torch.from_numpy(rng.standard_normal((2, 4, 128, 32)))
torch.matmul(a, a.mT).amax(-1)
if mode == "warmed":
    from torchlean.backend.providers.linked import import_torch
    import_torch()
x = rng.uniform(0.1, 8.0, (2, 4, 128, 128)).astype(dtype)
t = torch.from_numpy(x)
fn = getattr(torch, op)
first, second = fn(t).numpy(), fn(t).numpy()
exact = getattr(np, op)(x.astype(np.float64))
scale = float(np.abs(exact).max())
print(json.dumps({"first": float(np.abs(first - exact).max()) / scale,
                  "second": float(np.abs(second - exact).max()) / scale}))
"""


def one_run(mode: str, threads: int, op: str, dtype: str) -> dict[str, float] | str:
    """One fresh process's first- and second-call relative errors, or the last line a process
    that failed wrote (its exit status when it wrote nothing)."""
    try:
        done = subprocess.run([sys.executable, "-P", "-c", CHILD, mode, str(threads), op, dtype],
                              capture_output=True, text=True, timeout=300, check=False,
                              env=_record.child_environment())  # the torchlean recorded (review227 F2)
    except subprocess.TimeoutExpired:
        return "timed out after 300 s"
    if done.returncode != 0:
        lines = done.stderr.strip().splitlines()
        return lines[-1] if lines else f"exit status {done.returncode}"
    errors: dict[str, float] = json.loads(done.stdout)
    return errors


def inaccurate(errors: dict[str, float], dtype: str = "float64") -> bool:
    """Whether the first call's error is more than ten times the second's and ten epsilons."""
    return errors["first"] > 10 * max(errors["second"], float(np.finfo(dtype).eps))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=_record.description(__doc__, "first_call_exp"))
    parser.add_argument("path", nargs="?", type=_record.json_file("first_call_exp.json"),
                        default=str(DEFAULT_PATH), help="JSON output path")
    parser.add_argument("--runs", type=_record.positive_int, default=40,
                        help="fresh processes per mode (default 40)")
    parser.add_argument("--threads", type=torch_threads, default=2,
                        help="torch intra-op threads of each process (default 2)")
    parser.add_argument("--op", choices=("exp", "log"), default="exp", help="the function (default exp)")
    parser.add_argument("--dtype", choices=("float64", "float32"), default="float64",
                        help="the values' dtype (default float64)")
    args = parser.parse_args(argv)
    results: dict[str, list[dict[str, float]]] = {mode: [] for mode in MODES}
    failed: dict[str, list[str]] = {mode: [] for mode in MODES}
    for run in tqdm(range(args.runs), desc="runs", unit="run"):
        for mode in MODES[run % 2:] + MODES[: run % 2]:  # the modes take turns, first alternately
            outcome = one_run(mode, args.threads, args.op, args.dtype)
            if isinstance(outcome, str):
                failed[mode].append(outcome)
            else:
                results[mode].append(outcome)
    modes: dict[str, dict[str, Any]] = {
        mode: {
            "runs": len(errors),
            "inaccurate": sum(inaccurate(e, args.dtype) for e in errors),
            "max_first_call_error": max((e["first"] for e in errors), default=None),
            "max_second_call_error": max((e["second"] for e in errors), default=None),
            "failed": failed[mode],
        }
        for mode, errors in results.items()
    }
    record = {
        "name": "first_call_exp",
        "description": f"first threaded {args.dtype} torch.{args.op} of fresh processes, against numpy",
        "op": args.op,
        "dtype": args.dtype,
        "child_threads": args.threads,
        "modes": modes,
        **_record.provenance(),
    }
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(_record.table(
        ["mode", "runs", "inaccurate first calls", "largest first-call error (relative)", "failed"],
        [[mode, v["runs"], v["inaccurate"], _shown(v["max_first_call_error"]), len(v["failed"])]
         for mode, v in modes.items()],
    ))
    for mode, lines in failed.items():
        for line in dict.fromkeys(lines):
            print(f"{mode}: a process failed: {line}", file=sys.stderr)
    print(f"\nwrote {args.path}")
    return 1 if any(failed.values()) else 0


def _shown(value: float | None) -> str:
    return "n/a" if value is None else f"{value:.1e}"


if __name__ == "__main__":
    _record.run(main)
