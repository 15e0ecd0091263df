"""How often a process's first threaded torch exp is inaccurate, with and without the warm-up the
aten and LibTorch CPU kernels run when a session binds them.

Each run is a fresh Python process on ``--threads`` torch intra-op threads (default 2: the fault
needs more than one) that starts torch's thread pool with a matmul, then, in mode ``warmed``
only, calls ``torchlean.backend.providers.linked.import_torch`` (the kernels' ``prepare``: one
single-threaded ``torch.exp`` of 64 float64 elements), and computes ``torch.exp`` twice over
the same 131072 float64 values in [0.1, 8] (split across the threads). A run is ``inaccurate``
when its first call's largest error against ``numpy.exp``, relative to the largest value, exceeds
ten times the second call's (and ten float64 epsilons): review153 M1 saw errors of about 3e-8
relative in one thread's share of about one process in eleven on this project's 2-core machines
(torch 2.13.0+cpu, MKL VML), the second call exact. The record gives, per mode, the runs, the
inaccurate ones and the largest first-call error. It is a measurement, not a test: a fault this
rare needs many processes (about 1.5 s each).

Usage: ``python3 bench/first_call_exp.py [PATH] [--runs 40] [--threads 2]``; PATH defaults to
``bench/results/first_call_exp.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import _record
from tqdm import tqdm

from torchlean.cli._threads import torch_threads

DEFAULT_PATH = Path(__file__).resolve().parent / "results" / "first_call_exp.json"
MODES = ("plain", "warmed")

CHILD = """
import json, sys
import numpy as np, torch
mode, threads = sys.argv[1], int(sys.argv[2])
torch.set_num_threads(threads)
rng = np.random.default_rng(0)
a = torch.from_numpy(rng.standard_normal((2, 4, 128, 32)))
torch.matmul(a, a.mT).amax(-1)
if mode == "warmed":
    from torchlean.backend.providers.linked import import_torch
    import_torch()
x = rng.uniform(0.1, 8.0, (2, 4, 128, 128))
t = torch.from_numpy(x)
first, second = torch.exp(t).numpy(), torch.exp(t).numpy()
exact = np.exp(x)
scale = float(np.abs(exact).max())
print(json.dumps({"first": float(np.abs(first - exact).max()) / scale,
                  "second": float(np.abs(second - exact).max()) / scale}))
"""


def one_run(mode: str, threads: int) -> dict[str, float]:
    """One fresh process's first- and second-call relative errors."""
    done = subprocess.run([sys.executable, "-c", CHILD, mode, str(threads)], capture_output=True,
                          text=True, timeout=300, check=True)
    errors: dict[str, float] = json.loads(done.stdout)
    return errors


def inaccurate(errors: dict[str, float]) -> bool:
    """Whether the first call's error is more than ten times the second's (and ten epsilons)."""
    return errors["first"] > 10 * max(errors["second"], 2.220446049250313e-16)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=_record.description(__doc__, "first_call_exp"))
    parser.add_argument("path", nargs="?", type=_record.json_file("first_call_exp.json"),
                        default=str(DEFAULT_PATH), help="JSON output path")
    parser.add_argument("--runs", type=_record.positive_int, default=40,
                        help="fresh processes per mode (default 40)")
    parser.add_argument("--threads", type=torch_threads, default=2,
                        help="torch intra-op threads of each process (default 2)")
    args = parser.parse_args(argv)
    modes: dict[str, dict[str, Any]] = {}
    for mode in MODES:
        errors = [one_run(mode, args.threads) for _ in tqdm(range(args.runs), desc=mode, unit="process")]
        modes[mode] = {
            "runs": len(errors),
            "inaccurate": sum(inaccurate(e) for e in errors),
            "max_first_call_error": max(e["first"] for e in errors),
            "max_second_call_error": max(e["second"] for e in errors),
        }
    record = {
        "name": "first_call_exp",
        "description": "first threaded float64 torch.exp of fresh processes, against numpy.exp",
        "child_threads": args.threads,
        "modes": modes,
        **_record.provenance(),
    }
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    print(_record.table(
        ["mode", "runs", "inaccurate first calls", "largest first-call error (relative)"],
        [[m, v["runs"], v["inaccurate"], f"{v['max_first_call_error']:.1e}"] for m, v in modes.items()],
    ))
    print(f"\nwrote {args.path}")
    return 0


if __name__ == "__main__":
    _record.run(main)
