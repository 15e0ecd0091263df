"""Memory and time of reading a CSV file with ``torchlean.data.load``, against ``np.loadtxt``.

For each size (rows x columns: that many feature columns of random floats written as ``%.6g``,
then an integer class label, under a header ``f0,...,y``) the file is written once, then each
reader runs in a fresh Python process (``python -c``) that measures itself:

* ``torchlean``: ``torchlean.data.load(path)`` (the reader, the label column, the split and the
  scaling, as ``torchlean train`` loads its data);
* ``numpy``: ``np.loadtxt(path, delimiter=",", skiprows=1)`` (features and label as one float64
  array), the reference.

What the memory numbers mean: resident memory (RSS) of the reading process, from its own
``/proc/self/status`` (Linux only). After its imports (numpy, scikit-learn, torchlean and what
they import) and a ``gc.collect()``, the process takes ``VmRSS`` as its baseline and resets its
high-water mark ``VmHWM`` to that (writing ``5`` to ``/proc/self/clear_refs``); after the read,
``VmHWM`` is its peak. ``read_rss_mb`` is peak minus baseline: how far the read (and what
``data.load`` does after it) grew the process at its highest, every allocation counted (numpy
buffers, Python objects, the allocator's slack), not only the Python heap that ``tracemalloc``
sees. ``ru_maxrss`` is not used: a process started by fork and exec inherits its parent's
high-water mark in it, so a read peaking below the parent's size (this script imports torch)
showed 0 (review87 F1). Where the high-water mark cannot be reset, the record says
``"hwm_reset": false`` and the peak also covers the imports' transient memory.

The record gives, per size and reader, ``baseline_rss_mb`` (after the imports),
``peak_rss_mb`` (the process's peak, imports included), ``read_rss_mb`` (peak minus baseline),
``float64_mb`` (the size of the ``rows x (columns + 1)`` float64 array), ``seconds`` and
``file_mb``, and per reader the ratio of ``seconds`` from the smallest to the largest row count
(linear time: about the ratio of the row counts), with the provenance of every bench record
(``created``, ``commit``, ``machine``, ``versions``, ``threads``). It is a measurement, not a
test; numbers from a loaded machine vary.

Usage: ``python3 bench/csv_load.py [PATH] [--rows 12500,25000,50000] [--cols 200]``; PATH
defaults to ``bench/results/csv_load.json``.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

import _record
import numpy as np

DEFAULT_PATH = _record.DEFAULT_OUT / "csv_load.json"
MEMORY_NOTE = (
    "RSS of a fresh process per read, from its own /proc/self/status: baseline_rss_mb is VmRSS after "
    "its imports, when VmHWM is reset (hwm_reset); peak_rss_mb is VmHWM after the read; read_rss_mb "
    "is peak minus baseline, the read's growth of the process at its highest"
)

_CHILD = r"""
import gc, json, re, sys, time
import numpy as np
import sklearn.model_selection, sklearn.preprocessing
from torchlean import data

def status_kb(key):
    with open("/proc/self/status") as handle:
        return int(re.search(key + r":\s+(\d+) kB", handle.read()).group(1))

path, reader = sys.argv[1], sys.argv[2]
gc.collect()
try:
    with open("/proc/self/clear_refs", "w") as handle:
        handle.write("5")
    reset = True
except OSError:
    reset = False
baseline = status_kb("VmRSS")
start = time.perf_counter()
if reader == "torchlean":
    ds = data.load(path)
    shape = [len(ds.y_train) + len(ds.y_test), ds.x_train.shape[1]]
else:
    array = np.loadtxt(path, delimiter=",", skiprows=1)
    shape = list(array.shape)
seconds = time.perf_counter() - start
peak = status_kb("VmHWM")
print(json.dumps({"seconds": seconds, "baseline_kb": baseline, "peak_kb": peak,
                  "hwm_reset": reset, "shape": shape}))
"""


MIN_ROWS = 10
"""The fewest rows the loader's stratified split takes from these files (both labels in its
train and test parts: review105 F2, ``--rows 2`` was a traceback)."""


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(size < MIN_ROWS for size in sizes):  # an empty list: not integers
        raise argparse.ArgumentTypeError(
            f"expected comma-separated integers >= {MIN_ROWS} (the split needs rows of both labels in "
            f"its train and test parts), got {text!r}"
        )
    return sorted(set(sizes))  # each once, upward: the growth runs from the fewest rows to the most


def write_csv(path: Path, rows: int, cols: int, seed: int = 0) -> None:
    """A ``rows x cols`` file of random floats (``%.6g``) and a 0/1 label, alternating so that both
    labels are in every part of a split, under ``f0,...,y``."""
    rng = np.random.default_rng(seed)
    with path.open("w") as handle:
        handle.write(",".join([*(f"f{i}" for i in range(cols)), "y"]) + "\n")
        for start in range(0, rows, 2048):
            block = rng.standard_normal((min(2048, rows - start), cols))
            labels = (np.arange(start, start + len(block)) + rng.integers(0, 2)) % 2  # both labels
            handle.writelines(
                ",".join(f"{v:.6g}" for v in row) + f",{label}\n"
                for row, label in zip(block, labels, strict=True)
            )


def measure(path: Path, reader: str) -> dict[str, Any]:
    """One read of ``path`` by ``reader`` (``torchlean`` or ``numpy``) in a fresh process, which
    reports its RSS after its imports and its peak RSS (module docstring)."""
    if not Path("/proc/self/status").is_file():
        raise SystemExit("bench/csv_load.py measures memory from /proc/self/status, which this "
                         f"system ({sys.platform}) does not have; run it on Linux")
    done = subprocess.run(  # the child imports the torchlean the record names (review227 F2)
        [sys.executable, "-P", "-c", _CHILD, str(path), reader], capture_output=True, text=True, check=False,
        env=_record.child_environment(),
    )
    if done.returncode != 0:
        raise SystemExit(f"the {reader} read of {path} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "reader": reader,
        "seconds": round(result["seconds"], 3),
        "baseline_rss_mb": round(result["baseline_kb"] / 1024, 1),
        "peak_rss_mb": round(result["peak_kb"] / 1024, 1),
        "read_rss_mb": round((result["peak_kb"] - result["baseline_kb"]) / 1024, 1),
        "hwm_reset": result["hwm_reset"],
        "shape": result["shape"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=_record.description(__doc__, "csv_load"))
    parser.add_argument("path", nargs="?", type=_record.json_file("csv_load.json"),
                        default=str(DEFAULT_PATH), help=f"default {DEFAULT_PATH}")
    parser.add_argument("--rows", type=_sizes, default=[12500, 25000, 50000], help="row counts")
    parser.add_argument("--cols", type=_record.positive_int, default=200,
                        help="feature columns (default 200)")
    parser.add_argument("--readers", default="torchlean,numpy", help="torchlean,numpy or one of them")
    args = parser.parse_args(argv)
    readers = _record.names(parser, "--readers", args.readers, ["torchlean", "numpy"], "reader")
    records: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory() as folder:
        for rows in args.rows:
            path = Path(folder) / f"r{rows}_c{args.cols}.csv"
            write_csv(path, rows, args.cols)
            for reader in readers:
                record = {
                    "rows": rows, "cols": args.cols + 1, "file_mb": round(path.stat().st_size / 2**20, 1),
                    "float64_mb": round(rows * (args.cols + 1) * 8 / 2**20, 1), **measure(path, reader),
                }
                records.append(record)
                print(
                    f"{reader:9s} {rows:>8d} x {args.cols + 1:<5d} file {record['file_mb']:7.1f} MB  "
                    f"float64 {record['float64_mb']:7.1f} MB  "
                    f"RSS after imports {record['baseline_rss_mb']:7.1f} MB  "
                    f"peak {record['peak_rss_mb']:7.1f} MB  read {record['read_rss_mb']:7.1f} MB  "
                    f"{record['seconds']:7.2f} s"
                )
    growth = {}
    for reader in readers:
        mine = [r for r in records if r["reader"] == reader]
        if len(mine) > 1 and mine[0]["seconds"] > 0:
            growth[reader] = {
                "rows_ratio": mine[-1]["rows"] / mine[0]["rows"],
                "seconds_ratio": round(mine[-1]["seconds"] / mine[0]["seconds"], 2),
            }
    # threads: this process's settings; the readers set none and inherit its environment
    out = {"name": "csv_load", **_record.provenance(), "memory": MEMORY_NOTE, "records": records,
           "growth": growth}
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    _record.run(main)
