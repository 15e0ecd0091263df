"""Attention forward + backward: seconds and peak memory for n = 256 .. 4096, d = 64, one head.

Implementations (q, k, v of shape (n, 64), the same values and the same output cotangent for
all; float32 unless ``--dtype float64``; no mask unless ``--mask causal`` (a boolean ``(n, n)``
causal mask, upper-left aligned, given to every implementation, torch's as ``attn_mask``: a
masked call takes another path in torchlean's kernels, which select the allowed entries);
default scale 1/sqrt(d)):

* ``reference``: a torchlean eager session under ``checked_cpu``:
  ``F.scaled_dot_product_attention`` then ``out.backward(gradient=d_out)`` (capsule
  ``reference.attention``, fixed-left folds, numpy);
* ``libtorch``: the same calls under ``libtorch_forward_cpu`` (forward through the libtorch SDPA
  bridge, backward by torchlean's tape rule);
* ``flash spec``: ``torchlean.spec.flash_attention_forward`` / ``flash_attention_backward`` with
  64 x 64 tiles (numpy, products through ``@``);
* ``torch sdpa``: ``torch.nn.functional.scaled_dot_product_attention`` with autograd
  (``out.backward(d_out)``).

Times are wall seconds (median and spread of repeats after one untimed call), forward and
backward separately and together. Peak memory is that of one forward + backward call measured by
:data:`_record.MEMORY_METHOD` (resident-set high-water mark, which sees numpy and torch allocations
alike; tracemalloc would miss torch's); the two torchlean session implementations copy q, k, v, the
cotangent and the mask into tensors inside the measured call (``tl.tensor`` copies), which their
peak includes and the torch and flash-spec calls do not pay (review227 F7). A case whose forward +
backward time, extrapolated quadratically in n from the previous size, would exceed
``--case-budget`` seconds over its repeats, is skipped and recorded with the reason. Memory is
measured after all timings (one more call per case). So that a fast wrong answer shows,
``agreement`` compares, untimed at the smallest size, every implementation's output and q, k, v
gradients with torch SDPA's autograd in float64 on the same values (largest difference over max(max
|reference|, 1); the tolerance is 1e-5 in float32, 1e-12 in float64; a NaN disagrees). Two of those
comparisons check less than the others: ``torch sdpa`` under ``--dtype float64`` is the reference
itself, and ``libtorch``'s forward is torch's SDPA (its gradients, the reference fold, are checked
as the others).

Usage: ``python3 bench/attention.py [--quick] [--out DIR] [--dtype float32] [--mask none|causal]
[--case-budget S]``; the record is ``attention.json`` for float32 without a mask; a mask and a
dtype other than float32 are added to its name (``attention_causal.json``,
``attention_float64.json``, ``attention_causal_float64.json``), so one run does not replace
another's record.
"""

from __future__ import annotations

import abc
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import _record
import numpy as np
import numpy.typing as npt
import torch
from tqdm import tqdm

import torchlean as tl
from torchlean import functional as tlf
from torchlean.spec import FlashAttentionConfig, flash_attention_backward, flash_attention_forward
from torchlean.spec.masks import causal_mask

NAME = "attention"
D = 64
BLOCK = 64
SIZES = (256, 512, 1024, 2048, 4096)
QUICK_SIZES = (256, 512, 1024, 2048)
SMOKE_SIZES = (16, 32)
DEFAULT_DTYPE = "float32"

Array = npt.NDArray[Any]
# output, dq, dk, dv
Outputs = tuple[Array, Array, Array, Array]
# one forward + backward: returns (forward seconds, backward seconds)
Call = Callable[[], tuple[float, float]]


@dataclass(frozen=True, slots=True)
class Inputs:
    q: Array
    k: Array
    v: Array
    d_out: Array
    mask: Array | None  # boolean (n, n), True = allowed


class Impl(abc.ABC):
    """One implementation: builds the call for given inputs and reports what ran."""

    name = ""

    @abc.abstractmethod
    def call(self, x: Inputs) -> Call:
        """One forward + backward on ``x`` returning (forward seconds, backward seconds)."""

    @abc.abstractmethod
    def backend(self) -> list[dict[str, str]]:
        """What ran: op, capsule, provider, reduction policy."""

    @abc.abstractmethod
    def outputs(self, x: Inputs) -> Outputs:
        """The output and the gradients of q, k, v of one forward + backward on ``x`` (untimed:
        the agreement check)."""


class SessionImpl(Impl):
    """torchlean eager attention under a profile (``checked_cpu`` or ``libtorch_forward_cpu``)."""

    def __init__(self, name: str, profile: str) -> None:
        self.name = name
        self.session = tl.session(profile)

    def call(self, x: Inputs) -> Call:
        def run() -> tuple[float, float]:
            with self.session:
                q, k, v = (tl.tensor(a, requires_grad=True) for a in (x.q, x.k, x.v))
                d_out = tl.tensor(x.d_out)
                mask = None if x.mask is None else tl.tensor(x.mask)
                started = time.perf_counter()
                out = tlf.scaled_dot_product_attention(q, k, v, mask)
                middle = time.perf_counter()
                out.backward(gradient=d_out)
                return middle - started, time.perf_counter() - middle

        return run

    def outputs(self, x: Inputs) -> Outputs:
        with self.session:
            q, k, v = (tl.tensor(a, requires_grad=True) for a in (x.q, x.k, x.v))
            mask = None if x.mask is None else tl.tensor(x.mask)
            out = tlf.scaled_dot_product_attention(q, k, v, mask)
            out.backward(gradient=tl.tensor(x.d_out))
            grads = []
            for t in (q, k, v):
                assert t.grad is not None
                grads.append(np.array(t.grad.numpy()))
            return np.array(out.numpy()), grads[0], grads[1], grads[2]

    def backend(self) -> list[dict[str, str]]:
        rows = _record.backend_rows(self.session.selected)
        for row in rows:
            row["profile"] = self.session.profile.name
        return rows


class FlashImpl(Impl):
    name = "flash spec"
    config = FlashAttentionConfig(BLOCK, BLOCK)

    def call(self, x: Inputs) -> Call:
        def run() -> tuple[float, float]:
            started = time.perf_counter()
            out, lse = flash_attention_forward(x.q, x.k, x.v, x.mask, config=self.config)
            middle = time.perf_counter()
            flash_attention_backward(x.q, x.k, x.v, out, lse, x.d_out, x.mask, config=self.config)
            return middle - started, time.perf_counter() - middle

        return run

    def outputs(self, x: Inputs) -> Outputs:
        out, lse = flash_attention_forward(x.q, x.k, x.v, x.mask, config=self.config)
        dq, dk, dv = flash_attention_backward(x.q, x.k, x.v, out, lse, x.d_out, x.mask, config=self.config)
        return out, dq, dk, dv

    def backend(self) -> list[dict[str, str]]:
        return [{
            "op": "scaled_dot_product_attention",
            "capsule": f"torchlean.spec.flash_attention_forward/backward (tiles {BLOCK}x{BLOCK})",
            "provider": "spec (numpy; tile products through @, i.e. BLAS)",
            "reduction": "implementation-defined",
        }]


class TorchImpl(Impl):
    name = "torch sdpa"

    def call(self, x: Inputs) -> Call:
        def run() -> tuple[float, float]:
            q, k, v = (torch.from_numpy(a).requires_grad_(True) for a in (x.q, x.k, x.v))
            d_out = torch.from_numpy(x.d_out)
            mask = None if x.mask is None else torch.from_numpy(x.mask)
            started = time.perf_counter()
            out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
            middle = time.perf_counter()
            out.backward(d_out)  # type: ignore[no-untyped-call]
            return middle - started, time.perf_counter() - middle

        return run

    def outputs(self, x: Inputs) -> Outputs:
        return torch_outputs(x)

    def backend(self) -> list[dict[str, str]]:
        return [{
            "op": "scaled_dot_product_attention",
            "capsule": "torch.nn.functional.scaled_dot_product_attention + autograd",
            "provider": f"pytorch {torch.__version__} (cpu)",
            "reduction": "implementation-defined",
        }]


def torch_outputs(x: Inputs) -> Outputs:
    """torch SDPA with autograd on ``x`` in its own dtype (in float64: the check's reference)."""
    q, k, v = (torch.from_numpy(a).requires_grad_(True) for a in (x.q, x.k, x.v))
    mask = None if x.mask is None else torch.from_numpy(x.mask)
    out = torch.nn.functional.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out.backward(torch.from_numpy(x.d_out))  # type: ignore[no-untyped-call]
    grads = []
    for t in (q, k, v):
        assert t.grad is not None
        grads.append(t.grad.numpy())
    return out.detach().numpy(), grads[0], grads[1], grads[2]


# largest scaled difference to the float64 reference the agreement check accepts, per dtype (seen
# at n = 256: at most 1e-6 in float32, 2e-15 in float64)
AGREEMENT_TOLERANCE = {"float32": 1e-5, "float64": 1e-12}


def agreement(impls: list[Impl], n: int, dtype: np.dtype[Any], mask: str) -> dict[str, Any]:
    """Every implementation's output and q, k, v gradients at ``n`` against torch SDPA's in float64
    on the same values (the inputs rounded to ``dtype``, then widened): per implementation the
    largest absolute difference of the output and of the gradients, each over max(max |reference|, 1)
    (as gpu_check's parity), and whether all are within :data:`AGREEMENT_TOLERANCE`."""
    x = inputs(n, dtype, mask)
    wide = Inputs(*(a.astype(np.float64) for a in (x.q, x.k, x.v, x.d_out)), x.mask)
    reference = torch_outputs(wide)

    def error(got: Array, want: Array) -> float:
        return float(np.max(np.abs(got.astype(np.float64) - want)) / max(float(np.max(np.abs(want))), 1.0))

    tolerance = AGREEMENT_TOLERANCE[dtype.name]
    per_impl = {}
    for impl in impls:
        got = impl.outputs(x)
        per_impl[impl.name] = {
            "output": error(got[0], reference[0]),
            "gradients": _record.worst(error(g, r) for g, r in zip(got[1:], reference[1:], strict=True)),
        }
    worst = _record.worst(value for e in per_impl.values() for value in e.values())  # a NaN disagrees
    return {
        "n": n,
        "reference": "torch.nn.functional.scaled_dot_product_attention + autograd in float64",
        "measure": "max |difference| / max(max |reference|, 1), output and the largest over dq, dk, dv",
        "per_impl": per_impl,
        "max_error": worst,
        "tolerance": tolerance,
        "agrees": bool(worst <= tolerance),
    }


def inputs(n: int, dtype: np.dtype[Any], mask: str = "none", seed: int = 0) -> Inputs:
    rng = np.random.default_rng(seed)
    q, k, v, g = (rng.standard_normal((n, D)).astype(dtype) for _ in range(4))
    return Inputs(q, k, v, g, causal_mask(n) if mask == "causal" else None)


def record_name(mask: str, dtype: str) -> str:
    """The record's name (``<name>.json``, ``<name>.md``): ``attention``, then ``_<mask>`` unless
    ``none`` and ``_<dtype>`` unless float32 (a float64 run wrote ``attention.json`` too, over the
    float32 one)."""
    return "_".join([NAME, *([mask] if mask != "none" else []), *([dtype] if dtype != DEFAULT_DTYPE else [])])


def skip_reason(previous: dict[str, Any] | None, n: int, repeats: int, budget: float) -> str | None:
    """Why the case at ``n`` is skipped (quadratic extrapolation from the previous size), or None."""
    if previous is None or "total_s" not in previous:
        return None
    scale = (n / previous["n"]) ** 2
    seconds = previous["total_s"]["median"] * scale
    if seconds * (repeats + 1) > budget:
        return (f"estimated {seconds:.1f} s per forward+backward (n={previous['n']} x{scale:g}), "
                f"{_record.shown(seconds * (repeats + 1), budget, 1)} s with warm-up and {repeats} repeats "
                f"> budget {budget:g} s")
    return None


def measure(impl: Impl, x: Inputs, repeats: int) -> dict[str, Any]:
    call = impl.call(x)
    call()  # warm-up: lazy imports, planning, first-use caches
    forward, backward, total = [], [], []
    for _ in range(repeats):
        f, b = call()
        forward.append(f)
        backward.append(b)
        total.append(f + b)
    return {
        "forward_s": _record.summary(forward),
        "backward_s": _record.summary(backward),
        "total_s": _record.summary(total),
    }


def markdown(record: dict[str, Any]) -> str:
    rows = []
    for r in record["rows"]:
        if "skipped" in r:
            rows.append((r["n"], r["impl"], "skipped", r["skipped"], "", ""))
            continue
        t = r["total_s"]
        mib = "n/a" if r["peak_bytes"] is None else f"{r['peak_bytes'] / 2**20:.1f}"
        rows.append((r["n"], r["impl"], f"{t['median'] * 1e3:.2f}",
                     f"{t['min'] * 1e3:.2f}-{t['max'] * 1e3:.2f} (n={t['repeats']})",
                     f"{r['forward_s']['median'] * 1e3:.2f} / {r['backward_s']['median'] * 1e3:.2f}", mib))
    check = record["agreement"]
    errors = ", ".join(f"{name} {e['output']:.1e} / {e['gradients']:.1e}"
                       for name, e in check["per_impl"].items())
    return (
        f"### {record['name']}: forward+backward, d={D}, one head, {record['dtype']}, "
        f"{'no' if record['mask'] == 'none' else record['mask']} mask "
        "(ms, median; min-max; peak extra RSS MiB)\n\n"
        + _record.table(("n", "implementation", "fwd+bwd ms", "spread", "fwd / bwd ms", "peak MiB"), rows)
        + f"\n\nAgreement at n = {check['n']} with torch SDPA in float64 (output / gradients, scaled "
        f"difference; tolerance {check['tolerance']:g}): {errors}: "
        + ("agrees" if check["agrees"] else "DISAGREES")
    )


def main(argv: list[str] | None = None) -> int:
    parser = _record.parser(_record.description(__doc__, NAME))
    parser.add_argument("--dtype", choices=("float32", "float64"), default=DEFAULT_DTYPE)
    parser.add_argument("--mask", choices=("none", "causal"), default="none",
                        help="attention mask given to every implementation (default none)")
    parser.add_argument("--case-budget", type=_record.positive_seconds, default=None,
                        help="seconds one (implementation, n) case may take (default 120; quick 30)")
    args = parser.parse_args(argv)
    _record.set_threads(args.threads)
    dtype = np.dtype(args.dtype)
    sizes = SMOKE_SIZES if args.smoke else QUICK_SIZES if args.quick else SIZES
    repeats = 1 if args.smoke else 3 if args.quick else 5
    budget = args.case_budget if args.case_budget is not None else 30.0 if args.quick else 120.0
    impls: list[Impl] = [
        SessionImpl("reference", "checked_cpu"),
        SessionImpl("libtorch", "libtorch_forward_cpu"),
        FlashImpl(),
        TorchImpl(),
    ]
    rows: list[dict[str, Any]] = []
    last: dict[str, dict[str, Any]] = {}
    for n in tqdm(sizes, desc="n", leave=False, file=sys.stderr, disable=None):
        x = inputs(n, dtype, args.mask)
        for impl in impls:
            reason = skip_reason(last.get(impl.name), n, repeats, budget)
            row: dict[str, Any] = {"n": n, "impl": impl.name}
            if reason is None:
                row.update(measure(impl, x, repeats))
                last[impl.name] = row
            else:
                row["skipped"] = reason
            rows.append(row)
    check = agreement(impls, sizes[0], dtype, args.mask)  # untimed, after the timings
    # Memory after all timings: PeakRSS fixes glibc's mmap threshold, which slows small allocations.
    by_name = {impl.name: impl for impl in impls}
    with _record.PeakRSS() as peak:
        for row in tqdm(rows, desc="peak memory", leave=False, file=sys.stderr, disable=None):
            if "skipped" not in row:
                call = by_name[row["impl"]].call(inputs(row["n"], dtype, args.mask))
                row["peak_bytes"] = peak.measure(call)
        memory_method = _record.MEMORY_METHOD if peak.available else peak.reason
    record = _record.base_record(record_name(args.mask, args.dtype), args)
    record.update({
        "unit": "seconds (forward_s, backward_s, total_s); bytes (peak_bytes)",
        "d": D,
        "heads": 1,
        "dtype": args.dtype,
        "mask": "none" if args.mask == "none" else f"{args.mask} (n, n), upper-left aligned",
        "flash_tiles": [BLOCK, BLOCK],
        "case_budget_s": budget,
        "memory_method": memory_method,
        "rows": rows,
        "agreement": check,
        "skipped": [{"n": r["n"], "impl": r["impl"], "reason": r["skipped"]} for r in rows if "skipped" in r],
        "backend": {impl.name: impl.backend() for impl in impls},
    })
    _record.write(args.out, record, markdown(record))
    return 0 if check["agrees"] else _record.DISAGREES


if __name__ == "__main__":
    _record.run(main)
