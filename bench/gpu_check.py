"""GPU check of the native CUDA provider: build, parity of every native capsule, attention timings.

Usage (on a machine with a CUDA device; finishes in a few minutes, the extension build included)::

    python bench/gpu_check.py [OUT.json] [--sizes 1024,2048,...] [--heads 4] [--iterations 3]

1. Builds ``torchlean_native_ext`` from ``csrc/`` (``torch.utils.cpp_extension``) and records
   the build time.
2. Parity: every case of ``torchlean.backend.providers.native_cuda.parity`` — all 46 native-cuda
   ops, ``native_cuda.direct_attention`` and ``torchlean.composed_attention`` (including fully
   blocked rows and NaN/inf at blocked positions) — forward and backward in float32 (relative
   error <= 1e-5) and float64 (<= 1e-10) against float64 oracles. One failing case never stops
   the others.
3. End to end (eager sessions, float32, the same minibatches): a few SGD steps of the digits MLP
   under ``checked_cuda`` and of the digits transformer (its attention op) under ``checked_cuda``,
   ``libtorch_forward_cuda`` and ``libtorch_forward_strict``; records the capsules each session
   selected (the attention op must select ``torchlean.composed_attention``,
   ``libtorch.sdpa_forward`` and ``native_cuda.direct_attention`` respectively) and the loss
   parity with the same steps under ``checked_cpu`` (relative difference <= 1e-4).
4. Timing (CUDA events, median of a few iterations after a warm-up): the direct attention kernel
   against ``torch.nn.functional.scaled_dot_product_attention`` in float32 for
   n = 1k..16k and d = 64, 128, without a mask and with a boolean causal mask, forward and
   forward + backward, plus the relative difference of the two outputs.

Writes one JSON record (default ``bench/results/gpu_check.json``; rewritten after every phase so
a run cut off by a time limit keeps what it measured), prints a summary, and exits
with status 1 when any parity case or end-to-end run fails (2 when the extension cannot be built).
"""

from __future__ import annotations

import argparse
import json
import math
import platform
import statistics
import sys
import time
import traceback
from collections.abc import Callable
from importlib.util import find_spec as _find_spec
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

_MISSING = [name for name in ("beartype", "numpy", "torch", "tqdm", "sklearn") if _find_spec(name) is None]
if _MISSING:
    sys.exit(
        f"gpu_check: missing Python packages {_MISSING}; install them first (the H200 image lacks "
        "beartype: `pip download beartype --no-deps -d gpu_wheels` here, carry `gpu_wheels`, and run "
        "`pip install --no-index gpu_wheels/*.whl` there)"
    )

import torch  # noqa: E402
import torch.nn.functional as F  # noqa: E402

from torchlean.backend.providers.native_cuda import extension, kernels, parity  # noqa: E402

DEFAULT_OUT = ROOT / "bench" / "results" / "gpu_check.json"

E2E_TOLERANCE = 1e-4
E2E_RUNS: tuple[tuple[str, str, str | None], ...] = (
    ("mlp", "checked_cuda", None),
    ("transformer", "checked_cuda", "torchlean.composed_attention"),
    ("transformer", "libtorch_forward_cuda", "libtorch.sdpa_forward"),
    ("transformer", "libtorch_forward_strict", "native_cuda.direct_attention"),
)
"""(model, profile, the capsule its attention op must select)."""


def _machine() -> dict[str, Any]:
    props = torch.cuda.get_device_properties(torch.cuda.current_device())
    return {
        "python": platform.python_version(),
        "platform": platform.platform(),
        "torch": torch.__version__,
        "torch_cuda": torch.version.cuda,
        "device": props.name,
        "multiprocessors": props.multi_processor_count,
        "memory_gib": round(props.total_memory / 2**30, 1),
        "capability": f"{props.major}.{props.minor}",
    }


def _parity(device: torch.device) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    runs: list[tuple[parity.ParityCase, bool]] = [(case, False) for case in parity.CASES]
    runs += [(case, True) for case in parity.cases_for([parity.ATTENTION])]
    for case, composed in runs:
        for dtype in (torch.float32, torch.float64):
            start = time.perf_counter()
            result = parity.run_case(case, dtype, device, composed=composed)
            records.append(
                {
                    "case": result.case,
                    "op": result.op,
                    "capsule": _capsule_name(result.op, composed),
                    "dtype": result.dtype.removeprefix("torch."),
                    "errors": {k: (v if math.isfinite(v) else str(v)) for k, v in result.errors.items()},
                    "tolerance": result.tolerance,
                    "passed": result.passed,
                    "problems": list(result.problems),
                    "seconds": round(time.perf_counter() - start, 4),
                }
            )
    return records


def _capsule_name(op: str, composed: bool) -> str:
    if op == parity.ATTENTION:
        return "torchlean.composed_attention" if composed else "native_cuda.direct_attention"
    return f"native_cuda.{op}"


def _train_steps(model: str, profile: str, steps: int, batch: int) -> dict[str, Any]:
    """``steps`` SGD steps of the digits ``model`` under ``profile`` (float32, seed 0, contiguous
    minibatches of the training split): losses, selected capsules, seconds."""
    from torchlean import data, optim
    from torchlean.models import build_model
    from torchlean.trainer import Objective, RunConfig, Trainer

    digits = data.load("digits", seed=0)
    layer, shape = build_model(model, digits.n_features, digits.n_classes, hidden=64)
    config = RunConfig(optimizer=optim.sgd(0.05)).with_profile(profile)
    trainer = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=shape)
    start = time.perf_counter()
    losses = [
        trainer.step(digits.x_train[i * batch : (i + 1) * batch], digits.y_train[i * batch : (i + 1) * batch])
        for i in range(steps)
    ]
    seconds = time.perf_counter() - start
    selected = {k.op.label: k.capsule.name for k in trainer.selected}
    return {"losses": losses, "selected": selected, "seconds": round(seconds, 3)}


def _end_to_end(steps: int, batch: int) -> list[dict[str, Any]]:
    records: list[dict[str, Any]] = []
    cpu: dict[str, dict[str, Any]] = {}
    for model, profile, attention in E2E_RUNS:
        row: dict[str, Any] = {"model": model, "profile": profile, "steps": steps, "batch": batch}
        try:
            if model not in cpu:
                cpu[model] = _train_steps(model, "checked_cpu", steps, batch)
            run = _train_steps(model, profile, steps, batch)
            reference = cpu[model]["losses"]
            difference = max(
                abs(a - b) / max(abs(b), 1.0) for a, b in zip(run["losses"], reference, strict=True)
            )
            problems = []
            if not difference <= E2E_TOLERANCE:
                problems.append(f"loss differs from checked_cpu by {difference:.2e} > {E2E_TOLERANCE:g}")
            chosen = run["selected"].get(parity.ATTENTION)
            if attention is not None and chosen != attention:
                problems.append(f"attention selected {chosen}, expected {attention}")
            off_device = [name for name in run["selected"].values() if name.startswith("reference.")]
            if off_device:
                problems.append(f"CPU capsules selected: {off_device}")
            row.update(
                losses=run["losses"],
                checked_cpu_losses=reference,
                max_relative_difference=difference,
                tolerance=E2E_TOLERANCE,
                selected=run["selected"],
                attention_capsule=chosen,
                seconds=run["seconds"],
                checked_cpu_seconds=cpu[model]["seconds"],
                problems=problems,
                passed=not problems,
            )
        except Exception:  # one failing run must not stop the others
            row.update(passed=False, problems=[traceback.format_exc()])
        records.append(row)
        status = "ok" if row["passed"] else "FAIL " + "; ".join(row["problems"])
        print(
            f"  {model:<11} {profile:<24} attention={row.get('attention_capsule')} "
            f"diff={row.get('max_relative_difference', float('nan')):.1e} {status}",
            flush=True,
        )
    return records


def _time_ms(fn: Callable[[], object], iterations: int) -> float:
    fn()  # warm-up
    torch.cuda.synchronize()
    samples: list[float] = []
    for _ in range(iterations):
        start = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        stop = torch.cuda.Event(enable_timing=True)  # type: ignore[no-untyped-call]
        start.record()
        fn()
        stop.record()
        torch.cuda.synchronize()
        samples.append(start.elapsed_time(stop))
    return statistics.median(samples)


def _timings(
    sizes: list[int], widths: list[int], heads: int, iterations: int, device: torch.device
) -> list[dict[str, Any]]:
    rows: list[dict[str, Any]] = []
    generator = torch.Generator(device=device).manual_seed(0)
    for d in widths:
        for n in sizes:
            for masked in (False, True):
                row: dict[str, Any] = {"n": n, "d": d, "heads": heads, "mask": "causal" if masked else "none"}
                try:
                    q, k, v = (torch.randn(heads, n, d, device=device, generator=generator) for _ in range(3))
                    g = torch.randn(heads, n, d, device=device, generator=generator)
                    mask = torch.ones(n, n, dtype=torch.bool, device=device).tril() if masked else None

                    def direct_forward() -> object:
                        return kernels.direct_attention_forward(q, k, v, mask)  # noqa: B023

                    def direct_both() -> object:
                        out, lse = kernels.direct_attention_forward(q, k, v, mask)  # noqa: B023
                        return kernels.direct_attention_backward(g, q, k, v, mask, out=out, lse=lse)  # noqa: B023

                    # torch's fused SDPA kernels need 4-D (batch, heads, n, d) inputs; 3-D would
                    # time its unfused fallback
                    q4, k4, v4, g4 = (t.unsqueeze(0) for t in (q, k, v, g))

                    def sdpa_forward() -> object:
                        with torch.no_grad():
                            return F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask)  # noqa: B023

                    leaves = [t.detach().clone().requires_grad_(True) for t in (q4, k4, v4)]

                    def sdpa_both() -> object:
                        out = F.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], attn_mask=mask)  # noqa: B023
                        return torch.autograd.grad(out, leaves, g4)  # noqa: B023

                    row["direct_forward_ms"] = _time_ms(direct_forward, iterations)
                    row["sdpa_forward_ms"] = _time_ms(sdpa_forward, iterations)
                    row["direct_forward_backward_ms"] = _time_ms(direct_both, iterations)
                    row["sdpa_forward_backward_ms"] = _time_ms(sdpa_both, iterations)
                    ours = kernels.direct_attention_forward(q, k, v, mask)[0]
                    with torch.no_grad():
                        theirs = F.scaled_dot_product_attention(q4, k4, v4, attn_mask=mask)[0]
                    scale = max(theirs.abs().max().item(), 1.0)
                    row["relative_difference"] = (ours - theirs).abs().max().item() / scale
                    row["forward_ratio"] = row["direct_forward_ms"] / row["sdpa_forward_ms"]
                    row["forward_backward_ratio"] = (
                        row["direct_forward_backward_ms"] / row["sdpa_forward_backward_ms"]
                    )
                except Exception as error:  # one failing size must not stop the others
                    row["error"] = f"{type(error).__name__}: {error}"
                finally:
                    torch.cuda.empty_cache()
                rows.append(row)
                print(_timing_line(row), flush=True)
    return rows


def _timing_line(row: dict[str, Any]) -> str:
    head = f"  n={row['n']:>6} d={row['d']:>3} mask={row['mask']:<6}"
    if "error" in row:
        return f"{head} ERROR {row['error']}"
    return (
        f"{head} direct fwd {row['direct_forward_ms']:9.3f} ms  sdpa fwd {row['sdpa_forward_ms']:9.3f} ms  "
        f"fwd+bwd {row['direct_forward_backward_ms']:9.3f} / {row['sdpa_forward_backward_ms']:9.3f} ms  "
        f"diff {row['relative_difference']:.1e}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("out", nargs="?", default=str(DEFAULT_OUT), help="JSON record path")
    parser.add_argument("--sizes", default="1024,2048,4096,8192,16384")
    parser.add_argument("--widths", default="64,128")
    parser.add_argument("--heads", type=int, default=4, help="folded batch x heads of the timing inputs")
    parser.add_argument("--iterations", type=int, default=3)
    parser.add_argument("--e2e-steps", type=int, default=5, help="SGD steps of each end-to-end run")
    parser.add_argument("--e2e-batch", type=int, default=64, help="minibatch of the end-to-end runs")
    args = parser.parse_args(argv)
    record: dict[str, Any] = {"name": "gpu_check", "started": time.strftime("%Y-%m-%dT%H:%M:%S")}
    out_path = Path(args.out)
    out_path.parent.mkdir(parents=True, exist_ok=True)

    start = time.perf_counter()
    try:
        extension.load_extension()
    except extension.NativeExtensionError as error:
        record["build"] = {"ok": False, "error": str(error)}
        out_path.write_text(json.dumps(record, indent=2))
        print(f"build failed: {error}", file=sys.stderr)
        return 2
    record["build"] = {"ok": True, "seconds": round(time.perf_counter() - start, 1)}
    record["machine"] = _machine()
    device = torch.device("cuda", torch.cuda.current_device())
    print(f"built torchlean_native_ext in {record['build']['seconds']} s on {record['machine']['device']}")

    start = time.perf_counter()
    try:
        record["parity"] = _parity(device)
    except Exception:  # the sweep itself broke: record it, count as failure
        record["parity"] = [{"case": "sweep", "passed": False, "problems": [traceback.format_exc()]}]
    failed = [r for r in record["parity"] if not r["passed"]]
    record["parity_summary"] = {
        "cases": len(record["parity"]),
        "failed": len(failed),
        "ops": sorted({r["op"] for r in record["parity"] if "op" in r}),
        "seconds": round(time.perf_counter() - start, 1),
    }
    print(
        f"parity: {len(record['parity']) - len(failed)}/{len(record['parity'])} passed "
        f"({len(record['parity_summary']['ops'])} ops) in {record['parity_summary']['seconds']} s"
    )
    for r in failed:
        print(f"  FAIL {r['case']} [{r.get('dtype', '?')}]: {'; '.join(r['problems'])}")
    out_path.write_text(json.dumps(record, indent=2))  # keep each phase even if a later one is cut off

    print(f"end to end ({args.e2e_steps} steps, float32, loss parity with checked_cpu):")
    start = time.perf_counter()
    record["end_to_end"] = _end_to_end(args.e2e_steps, args.e2e_batch)
    e2e_failed = [r for r in record["end_to_end"] if not r["passed"]]
    record["end_to_end_summary"] = {
        "runs": len(record["end_to_end"]),
        "failed": len(e2e_failed),
        "seconds": round(time.perf_counter() - start, 1),
    }
    out_path.write_text(json.dumps(record, indent=2))

    print(f"attention timings (float32, {args.heads} heads, median of {args.iterations}):")
    record["timing"] = _timings(
        [int(s) for s in args.sizes.split(",")],
        [int(w) for w in args.widths.split(",")],
        args.heads,
        args.iterations,
        device,
    )
    record["finished"] = time.strftime("%Y-%m-%dT%H:%M:%S")
    out_path.write_text(json.dumps(record, indent=2))
    ok = not failed and not e2e_failed
    print(f"wrote {out_path}; {'all parity cases and end-to-end runs passed' if ok else 'FAILED'}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
