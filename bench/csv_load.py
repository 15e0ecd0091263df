"""Memory and time of reading a CSV file with ``torchlean.data.load``, against ``np.loadtxt``.

For each size (rows x columns: that many feature columns of random floats written as ``%.6g``,
then an integer class label, under a header ``f0,...,y``) the file is written once, then each
reader runs in a fresh Python process, which reports its peak resident memory (``ru_maxrss``)
before and after the read (imports done first, scikit-learn's included, so the difference is the
read's) and the seconds the read took:

* ``torchlean``: ``torchlean.data.load(path)`` (the reader, the label column, the split and the
  scaling, as ``torchlean train`` loads its data);
* ``numpy``: ``np.loadtxt(path, delimiter=",", skiprows=1)`` (features and label as one float64
  array), the reference.

The record gives, per size and reader, ``peak_rss_mb`` (the whole process), ``read_rss_mb`` (its
growth during the read), ``float64_mb`` (the size of the ``rows x (columns + 1)`` float64 array),
``seconds`` and ``file_mb``, and per reader the ratio of ``seconds`` from the smallest to the
largest row count (linear time: about the ratio of the row counts). It is a measurement, not a
test; numbers from a loaded machine vary.

Usage: ``python bench/csv_load.py [PATH] [--rows 12500,25000,50000] [--cols 200]``; PATH defaults
to ``bench/results/csv_load.json``.
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

DEFAULT_PATH = Path(__file__).resolve().parent / "results" / "csv_load.json"

_CHILD = r"""
import json, resource, sys, time
import numpy as np
import sklearn.model_selection, sklearn.preprocessing
from torchlean import data
path, reader = sys.argv[1], sys.argv[2]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
start = time.perf_counter()
if reader == "torchlean":
    ds = data.load(path)
    shape = [len(ds.y_train) + len(ds.y_test), ds.x_train.shape[1]]
else:
    array = np.loadtxt(path, delimiter=",", skiprows=1)
    shape = list(array.shape)
seconds = time.perf_counter() - start
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(json.dumps({"seconds": seconds, "rss_before_kb": before, "rss_after_kb": after, "shape": shape}))
"""


def _sizes(text: str) -> list[int]:
    try:
        sizes = [int(part) for part in text.split(",")]
    except ValueError:
        sizes = []
    if not sizes or any(size < 1 for size in sizes):  # an empty list: not integers
        raise argparse.ArgumentTypeError(f"expected comma-separated positive integers, got {text!r}")
    return sizes


def write_csv(path: Path, rows: int, cols: int, seed: int = 0) -> None:
    """A ``rows x cols`` file of random floats (``%.6g``) and a 0/1 label, under ``f0,...,y``."""
    rng = np.random.default_rng(seed)
    with path.open("w") as handle:
        handle.write(",".join([*(f"f{i}" for i in range(cols)), "y"]) + "\n")
        for start in range(0, rows, 2048):
            block = rng.standard_normal((min(2048, rows - start), cols))
            labels = rng.integers(0, 2, size=len(block))
            handle.writelines(
                ",".join(f"{v:.6g}" for v in row) + f",{label}\n"
                for row, label in zip(block, labels, strict=True)
            )


def measure(path: Path, reader: str) -> dict[str, Any]:
    """One read of ``path`` by ``reader`` (``torchlean`` or ``numpy``) in a fresh process."""
    done = subprocess.run(
        [sys.executable, "-c", _CHILD, str(path), reader], capture_output=True, text=True, check=False
    )
    if done.returncode != 0:
        raise SystemExit(f"the {reader} read of {path} failed:\n{done.stderr}")
    result: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return {
        "reader": reader,
        "seconds": round(result["seconds"], 3),
        "peak_rss_mb": round(result["rss_after_kb"] / 1024, 1),
        "read_rss_mb": round((result["rss_after_kb"] - result["rss_before_kb"]) / 1024, 1),
        "shape": result["shape"],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
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
                    f"float64 {record['float64_mb']:7.1f} MB  peak RSS {record['peak_rss_mb']:8.1f} MB  "
                    f"read {record['read_rss_mb']:8.1f} MB  {record['seconds']:7.2f} s"
                )
    growth = {}
    for reader in readers:
        mine = [r for r in records if r["reader"] == reader]
        if len(mine) > 1 and mine[0]["seconds"] > 0:
            growth[reader] = {
                "rows_ratio": mine[-1]["rows"] / mine[0]["rows"],
                "seconds_ratio": round(mine[-1]["seconds"] / mine[0]["seconds"], 2),
            }
    out = {"name": "csv_load", "python": sys.version.split()[0], "numpy": np.__version__,
           "records": records, "growth": growth}
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(out, indent=2) + "\n")
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    _record.run(main)
