"""Fixed-left reference matmul against BLAS: seconds for square n x n products, n = 64 .. 512.

Three implementations of ``a @ b`` on the same float32 / float64 operands (standard normal,
seed 0): ``reference`` is ``torchlean.backend.providers.reference.kernels.matmul`` (the kernel of
capsule ``reference.matmul``: every entry a left fold over the contracted axis, in the operands'
dtype), ``numpy`` is ``a @ b`` (numpy's BLAS) and ``torch`` is ``torch.matmul`` on tensors that
share the arrays' memory; ``reference_vjp`` is the reference kernel's backward,
``kernels.matmul_vjp`` (both operands' cotangents, each entry a left fold) for a standard normal
cotangent, timed so that a change to the reference contractions shows in its backward too
(review84: a blocked fold made it 10x slower and nothing timed it). Each time is the median of
repeated calls after one untimed call, on
``--threads`` threads (torch and BLAS alike). The record gives the ratio of the reference median
to each BLAS median and a check that the same products were computed (not an accuracy claim):
the largest difference of the reference result, and of its VJP's two cotangents, from numpy's
(``g @ b.T``, ``a.T @ g``), relative to the largest |entry|, within ``TOLERANCE`` per dtype (a
fold and BLAS round differently); a case off it has its table row say so, and the script exits
with ``_record.DISAGREES`` after writing its record (review227 F4: nothing read the difference).

Usage: ``python3 bench/reduction.py [--quick] [--out DIR] [--threads N]``.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import _record
import numpy as np
import numpy.typing as npt
import torch
from tqdm import tqdm

from torchlean.backend import profiles
from torchlean.backend.providers.reference import kernels
from torchlean.backend.vocabulary import BackendOp

NAME = "reduction"
SIZES = (64, 128, 256, 512)
DTYPES = ("float32", "float64")

Array = npt.NDArray[Any]

TOLERANCE = {"float32": 1e-4, "float64": 1e-12}
"""The largest relative difference from numpy's products the check accepts (a fold over up to 512
terms against BLAS's order: seen about 1e-6 in float32, 1e-15 in float64); a wrong product is far
off."""


def operands(n: int, dtype: str) -> tuple[Array, Array]:
    rng = np.random.default_rng(0)
    return (rng.standard_normal((n, n)).astype(dtype), rng.standard_normal((n, n)).astype(dtype))


def measure(n: int, dtype: str, repeats: int) -> dict[str, Any]:
    a, b = operands(n, dtype)
    ta, tb = torch.from_numpy(a), torch.from_numpy(b)
    out = kernels.matmul(a, b)
    g = np.random.default_rng(1).standard_normal(out.shape).astype(dtype)
    calls: dict[str, Callable[[], object]] = {
        "reference": lambda: kernels.matmul(a, b),
        "reference_vjp": lambda: kernels.matmul_vjp(g, a, b, out=out),
        "numpy": lambda: a @ b,
        "torch": lambda: torch.matmul(ta, tb),
    }
    times = {name: _record.summary(_record.time_calls(call, repeats)) for name, call in calls.items()}
    da, db = kernels.matmul_vjp(g, a, b, out=out)
    pairs = ((kernels.matmul(a, b), a @ b), (da, g @ b.T), (db, a.T @ g))
    difference = _record.worst(_relative(got, want) for got, want in pairs)  # a NaN disagrees
    return {
        "n": n,
        "dtype": dtype,
        "seconds": times,
        "ratio_to_numpy": times["reference"]["median"] / times["numpy"]["median"],
        "ratio_to_torch": times["reference"]["median"] / times["torch"]["median"],
        "max_rel_difference_to_numpy": difference,
        "tolerance": TOLERANCE[dtype],
        "agrees": bool(difference <= TOLERANCE[dtype]),
    }


def _relative(got: Array | None, want: Array) -> float:
    """``max|got - want| / max|want|`` in float64; NaN for a missing result."""
    if got is None:
        return float("nan")
    scale = float(np.max(np.abs(want.astype(np.float64))))
    difference = float(np.max(np.abs(got.astype(np.float64) - want.astype(np.float64))))
    return difference / scale if scale > 0 else difference


def markdown(rows: list[dict[str, Any]], threads: int) -> str:
    body = [
        (r["dtype"], r["n"],
         f"{r['seconds']['reference']['median'] * 1e3:.3f}",
         f"{r['seconds']['reference_vjp']['median'] * 1e3:.3f}",
         f"{r['seconds']['numpy']['median'] * 1e3:.4f}",
         f"{r['seconds']['torch']['median'] * 1e3:.4f}",
         f"{r['ratio_to_numpy']:.0f}x", f"{r['ratio_to_torch']:.0f}x",
         f"{r['max_rel_difference_to_numpy']:.1e} " + ("agrees" if r["agrees"] else "DISAGREES"))
        for r in rows
    ]
    return (f"### reduction: fixed-left reference matmul vs BLAS, n x n ({threads} thread(s); ms, median)\n\n"
            + _record.table(("dtype", "n", "reference ms", "reference VJP ms", "numpy @ ms",
                             "torch.matmul ms", "ref / numpy", "ref / torch", "product and VJP vs numpy"),
                            body))


def main(argv: list[str] | None = None) -> int:
    parser = _record.parser(_record.description(__doc__, NAME))
    args = parser.parse_args(argv)
    _record.set_threads(args.threads)
    sizes = (8, 16) if args.smoke else SIZES
    repeats = 1 if args.smoke else 5 if args.quick else 11
    cases = [(n, dtype) for dtype in DTYPES for n in sizes]
    progress = tqdm(cases, desc="cases", leave=False, file=sys.stderr, disable=None)
    rows = [measure(n, dtype, repeats) for n, dtype in progress]
    planned = profiles.get("checked_cpu").plan_ops([BackendOp.MATMUL]).kernels
    record = _record.base_record(NAME, args)
    record.update({
        "unit": "seconds",
        "kernel": "torchlean.backend.providers.reference.kernels.matmul (called directly)",
        "rows": rows,
        "backend": {
            "reference": [{**row, "profile": "checked_cpu"} for row in _record.backend_rows(planned)],
            "numpy": [{"op": "matmul", "capsule": "numpy.matmul (@)",
                       "provider": f"numpy {np.__version__} BLAS", "reduction": "implementation-defined"}],
            "torch": [{"op": "matmul", "capsule": "torch.matmul",
                       "provider": f"pytorch {torch.__version__} (cpu)",
                       "reduction": "implementation-defined"}],
        },
    })
    _record.write(args.out, record, markdown(rows, args.threads))
    return 0 if all(row["agrees"] for row in rows) else _record.DISAGREES


if __name__ == "__main__":
    _record.run(main)
