"""Peak extra memory of the tiled (flash) attention spec against the standard spec.

For each sequence length n (nQ = nK = n, fixed head width and fixed tiles) and each mask kind
(none, causal), the inputs are allocated first, then ``tracemalloc`` records the peak of the memory
allocated *during* one call (numpy reports its array buffers to tracemalloc). Forward and backward
are measured separately:

* standard: ``scaled_dot_product_attention`` / ``scaled_dot_product_attention_backward`` hold
  n × n scores and weights, so their peak grows quadratically;
* flash: ``flash_attention_forward`` / ``flash_attention_backward`` only hold block_q × block_k
  tiles plus O(n · d) outputs and row statistics, so their peak grows linearly (Dao et al. 2022).

The script prints a table, the log-log slope of peak memory against n (about 2 for standard, about
1 for flash), the growth ratio from the smallest to the largest n, and writes a JSON record.
It is a measurement, not a test.

Usage: ``python3 bench/flash_memory.py [PATH] [--sizes 128,256,...] [--block 64] [--d 32]``;
PATH defaults to ``bench/results/flash_memory.json``.
"""

from __future__ import annotations

import argparse
import itertools
import json
import sys
import tracemalloc
from collections.abc import Callable
from typing import Any

import _record
import numpy as np

from torchlean.cli._args import int_at_least
from torchlean.spec import (
    FlashAttentionConfig,
    causal_mask,
    flash_attention_backward,
    flash_attention_forward,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)

DEFAULT_PATH = _record.DEFAULT_OUT / "flash_memory.json"  # beside the other records, from any directory


def peak_extra_bytes(call: Callable[[], object]) -> int:
    """Peak bytes allocated while ``call`` runs, above what was allocated before it started."""
    tracemalloc.start()
    try:
        before, _ = tracemalloc.get_traced_memory()
        tracemalloc.reset_peak()
        call()
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    return peak - before


def slope(sizes: list[int], values: list[int]) -> float:
    """Least-squares slope of log(value) against log(size)."""
    fit = np.polyfit(np.log(np.asarray(sizes, dtype=float)), np.log(np.asarray(values, dtype=float)), 1)
    return float(fit[0])


def marginal_slope(sizes: list[int], values: list[int]) -> float | None:
    """Slope of log(increase of value) against log(size) over consecutive sizes.

    A constant overhead (tile buffers, interpreter) hides the growth order in :func:`slope` at
    small n; the increments remove it: ``a + b n`` gives 1, ``a + b n + c n^2`` tends to 2.
    None with fewer than three sizes (two increments are the fewest a slope is fitted through:
    ``128,256`` fitted one point, review107 F1) or when some increment is not positive
    (measurement noise).
    """
    increments = [after - before for before, after in itertools.pairwise(values)]
    if len(increments) < 2 or min(increments) <= 0:
        return None
    return slope(sizes[1:], increments)


def measure(n: int, d: int, mask_kind: str, config: FlashAttentionConfig, seed: int) -> dict[str, Any]:
    """One row: peak extra bytes of the four calls at sequence length ``n``."""
    rng = np.random.default_rng(seed)
    q, k, v, d_out = (rng.standard_normal((n, d)) for _ in range(4))
    mask = causal_mask(n) if mask_kind == "causal" else None
    out, lse = flash_attention_forward(q, k, v, mask, config=config)
    return {
        "n": n,
        "mask": mask_kind,
        "standard_forward": peak_extra_bytes(lambda: scaled_dot_product_attention(q, k, v, mask)),
        "flash_forward": peak_extra_bytes(lambda: flash_attention_forward(q, k, v, mask, config=config)),
        "standard_backward": peak_extra_bytes(
            lambda: scaled_dot_product_attention_backward(q, k, v, d_out, mask)
        ),
        "flash_backward": peak_extra_bytes(
            lambda: flash_attention_backward(q, k, v, out, lse, d_out, mask, config=config)
        ),
    }


def _fmt(value: float | None, spec: str) -> str:
    return "n/a" if value is None else format(value, spec)


def _sizes(text: str) -> list[int]:
    """``--sizes``: comma-separated positive integers, each kept once, in increasing order (the
    growth and the increments run from the smallest size to the largest; ``512,128`` gave a
    growth over "n x0.25" and no increments); at least two distinct ones, as a slope needs
    (``128,128`` fitted a line through one point: numpy's ``RankWarning`` eight times and
    meaningless slopes)."""
    try:
        sizes = [int(part) for part in text.split(",") if part]
    except ValueError:
        raise argparse.ArgumentTypeError(f"invalid sizes {text!r}; expected e.g. 128,256,512") from None
    distinct = sorted(set(sizes))
    if len(distinct) < 2 or min(distinct) < 1:
        raise argparse.ArgumentTypeError(
            f"invalid sizes {text!r}; need at least two distinct positive sizes, e.g. 128,256,512"
        )
    return distinct


_natural = int_at_least(0, "expected an integer >= 0, got {}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=_record.description(__doc__, "flash_memory"))
    # a str default goes through _output_path too (argparse converts string defaults): the folder is
    # made before anything is measured (bench/results/ is not in a fresh clone)
    default = str(DEFAULT_PATH)
    parser.add_argument("path", nargs="?", type=_record.json_file("flash.json"), default=default,
                        help="JSON output path")
    parser.add_argument("--sizes", type=_sizes, default=[128, 256, 512, 1024, 2048],
                        help="sequence lengths n, at least two distinct (default 128,256,512,1024,2048)")
    positive = _record.positive_int
    parser.add_argument("--block", type=positive, default=64, help="block_q = block_k (default 64)")
    parser.add_argument("--d", type=positive, default=32, help="head width d = dv (default 32)")
    parser.add_argument("--seed", type=_natural, default=0)
    args = parser.parse_args(argv)
    config = FlashAttentionConfig(args.block, args.block)
    metrics = ("standard_forward", "flash_forward", "standard_backward", "flash_backward")
    rows: list[dict[str, Any]] = []
    fits: dict[str, dict[str, float | None]] = {}
    for mask_kind in ("none", "causal"):
        kind_rows = [measure(n, args.d, mask_kind, config, args.seed) for n in args.sizes]
        rows.extend(kind_rows)
        fits[mask_kind] = {}
        print(f"mask={mask_kind}  d={args.d}  tiles={args.block}x{args.block}  (peak extra MiB)")
        print(f"{'n':>6}" + "".join(f"{name:>20}" for name in metrics))
        for row in kind_rows:
            print(f"{row['n']:>6}" + "".join(f"{row[name] / 2**20:>20.3f}" for name in metrics))
        for name in metrics:
            values = [row[name] for row in kind_rows]
            fits[mask_kind][f"{name}_slope"] = slope(args.sizes, values)
            fits[mask_kind][f"{name}_marginal_slope"] = marginal_slope(args.sizes, values)
            fits[mask_kind][f"{name}_growth"] = values[-1] / values[0]
        size_ratio = args.sizes[-1] / args.sizes[0]
        print(
            f"log-log slope vs n of the peak and of its increments (1 = linear, 2 = quadratic);"
            f" growth over n x{size_ratio:g}:\n"
            + "\n".join(
                f"  {name:<18} slope {_fmt(fits[mask_kind][name + '_slope'], '.2f')}"
                f"  increments {_fmt(fits[mask_kind][name + '_marginal_slope'], '.2f')}"
                f"  growth x{_fmt(fits[mask_kind][name + '_growth'], '.1f')}"
                for name in metrics
            )
        )
        print()
    record = {
        "name": "flash_memory",
        "description": "peak extra bytes (tracemalloc) of one call, inputs excluded",
        "d": args.d,
        "block_q": args.block,
        "block_k": args.block,
        "sizes": args.sizes,
        "seed": args.seed,
        "dtype": "float64",
        "rows": rows,
        "fits": fits,
        **_record.provenance(),
    }
    try:
        args.path.parent.mkdir(parents=True, exist_ok=True)  # the check made and removed it
        args.path.write_text(json.dumps(record, indent=2) + "\n", encoding="utf-8")
    except OSError as exc:
        print(f"error: cannot write {args.path}: {exc.strerror or exc}", file=sys.stderr)
        return 1
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    _record.run(main)
