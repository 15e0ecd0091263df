"""Seconds to plan, audit and accept lowered MLP graphs of about 1k, 10k and 100k nodes.

The model is ``L`` blocks of ``linear(8, 8) -> relu`` lowered for an input of shape (4, 8) by
``torchlean.nn.lowering.lower_model`` (7 nodes per block plus the input: L = 143, 1428, 14286
give 1002, 9997 and 100003 nodes). For every size and profile three timings are taken, each the
median of repeated calls on the same lowered graph:

* ``plan``: ``profile.plan_graph(graph)`` (module validation, well-formedness, one capsule per
  kernel node);
* ``audit_accept``: ``accept_graph_kernel_plan(plan, profile.policy)`` on a fresh plan (coalesced
  groups, the contract audit of every distinct (op, capsule) and the acceptance gate);
* ``total``: ``profile.accept_graph(graph)``, the whole path the trainer uses (plan + audit +
  accept), which the targets refer to.

Lowering (building the graph) is timed separately and not counted. Targets (issue 8): total <=
1 s at 100k nodes, and growth per 10x nodes <= 11x; since the node counts are not exactly 10x
apart the growth is normalised to 10x as ``(t2 / t1) ** (log 10 / log(n2 / n1))`` (the raw ratio
is recorded too).

Usage: ``python3 bench/planning.py [--quick] [--out DIR] [--profiles checked_cpu,fast_cpu]``.
"""

from __future__ import annotations

import gc
import itertools
import math
import sys
import time
from typing import Any

import _record
import numpy as np
from tqdm import tqdm

from torchlean import nn
from torchlean.backend import profiles
from torchlean.backend.acceptance import accept_graph_kernel_plan
from torchlean.nn.lowering import lower_model

NAME = "planning"
INPUT_SHAPE = (4, 8)
TOTAL_LIMIT_S = 1.0
GROWTH_LIMIT = 11.0
# target nodes -> blocks of linear(8, 8) + relu (7 nodes each, plus the input node)
SIZES = {1_000: 143, 10_000: 1_428, 100_000: 14_286}


def lowered_graph(blocks: int) -> tuple[Any, float]:
    """The lowered graph of ``blocks`` x (linear(8, 8), relu) and the seconds lowering took."""
    layers = []
    for _ in range(blocks):
        layers += [nn.linear(8, 8), nn.relu()]
    model = nn.build(nn.sequential(*layers), seed=0, dtype=np.float32)
    started = time.perf_counter()
    lowered = lower_model(model, INPUT_SHAPE)
    return lowered.built.graph, time.perf_counter() - started


def repeats_for(target_nodes: int, quick: bool, smoke: bool) -> int:
    if smoke:
        return 1
    # small graphs take milliseconds: many repeats keep their medians (the denominators of the
    # growth ratios) from deciding the growth target on noise
    table = {1_000: 31, 10_000: 11, 100_000: 5} if quick else {1_000: 51, 10_000: 21, 100_000: 9}
    return table.get(target_nodes, 5)


def measure(profile_name: str, graph: Any, repeats: int) -> dict[str, Any]:
    profile = profiles.get(profile_name)
    plan_s = _record.time_calls(lambda: profile.plan_graph(graph), repeats, warmup=0, collect=True)
    accept_s = []
    for _ in range(repeats):
        plan = profile.plan_graph(graph)
        gc.collect()
        started = time.perf_counter()
        accept_graph_kernel_plan(plan, profile.policy)
        accept_s.append(time.perf_counter() - started)
    total_s, total_cpu_s = [], []
    result = None
    for _ in range(repeats):
        gc.collect()
        started, started_cpu = time.perf_counter(), time.process_time()
        result = profile.accept_graph(graph)
        total_s.append(time.perf_counter() - started)
        total_cpu_s.append(time.process_time() - started_cpu)
    assert result is not None
    if result.plan is None:
        reasons = "; ".join(f.message for f in result.failures)
        raise SystemExit(f"error: profile {profile_name} rejected the graph: {reasons}")
    return {
        "profile": profile_name,
        "plan_s": _record.summary(plan_s),
        "audit_accept_s": _record.summary(accept_s),
        "total_s": _record.summary(total_s),
        "total_cpu_s": _record.summary(total_cpu_s),  # for the wall/CPU rule (review143 F3)
        "groups": len(result.plan.kernels),
        "backend": _record.backend_rows(result.plan.kernels),
    }


def growth(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Growth of the median total between consecutive sizes, raw and normalised to 10x nodes."""
    out = []
    for small, large in itertools.pairwise(rows):
        ratio = large["total_s"]["median"] / small["total_s"]["median"]
        nodes = large["nodes"] / small["nodes"]
        per_10x = ratio ** (math.log(10) / math.log(nodes))
        out.append({
            "from_nodes": small["nodes"],
            "to_nodes": large["nodes"],
            "node_ratio": nodes,
            "time_ratio": ratio,
            "growth_per_10x": per_10x,
            "target": _record.target(per_10x, GROWTH_LIMIT, f"growth per 10x nodes <= {GROWTH_LIMIT}x",
                                     small["total_s"], large["total_s"],
                                     cpu=(small["total_cpu_s"], large["total_cpu_s"])),
        })
    return out


def markdown(record: dict[str, Any]) -> str:
    rows = []
    for r in record["rows"]:
        total = r["total_s"]
        big = r["target_nodes"] == 100_000
        rows.append((
            r["profile"], r["nodes"], f"{r['lowering_s']:.3f}", f"{r['plan_s']['median']:.4f}",
            f"{r['audit_accept_s']['median']:.4f}", f"{total['median']:.4f}",
            f"{total['min']:.4f}-{total['max']:.4f} (n={total['repeats']})",
            f"<= {TOTAL_LIMIT_S} s {_record.verdict(r['target'])}" if big else "-",
        ))
    grow = [
        (g["profile"], f"{g['from_nodes']} -> {g['to_nodes']}", f"{g['time_ratio']:.2f}x",
         f"{_record.shown(g['growth_per_10x'], GROWTH_LIMIT, 2)}x",
         f"<= {GROWTH_LIMIT}x {_record.verdict(g['target'])}")
        for g in record["growth"]
    ]
    return (
        "### planning: plan + audit + accept of lowered MLP graphs (seconds, median; min-max)\n\n"
        + _record.table(("profile", "nodes", "lowering s", "plan s", "audit+accept s", "total s",
                         "spread", "target"), rows)
        + "\n\n" + _record.table(("profile", "nodes", "time ratio", "per 10x", "target"), grow)
    )


def main(argv: list[str] | None = None) -> int:
    parser = _record.parser(_record.description(__doc__, NAME))
    parser.add_argument("--profiles", default="checked_cpu,fast_cpu", help="comma-separated profiles")
    args = parser.parse_args(argv)
    names = _record.names(parser, "--profiles", args.profiles, profiles.names(), "profile")
    _record.set_threads(args.threads)
    sizes = {100: 14, 1_000: 143} if args.smoke else SIZES
    rows: list[dict[str, Any]] = []
    for target_nodes, blocks in tqdm(sizes.items(), desc="sizes", leave=False, file=sys.stderr, disable=None):
        graph, lowering_s = lowered_graph(blocks)
        repeats = repeats_for(target_nodes, args.quick, args.smoke)
        for name in names:
            row = {"target_nodes": target_nodes, "blocks": blocks, "nodes": len(graph.nodes),
                   "lowering_s": lowering_s, **measure(name, graph, repeats)}
            row["target"] = (
                _record.target(row["total_s"]["median"], TOTAL_LIMIT_S, f"100k nodes <= {TOTAL_LIMIT_S} s",
                               row["total_s"], cpu=(row["total_cpu_s"],))
                if target_nodes == 100_000 else None
            )
            rows.append(row)
        del graph
    growth_rows = [
        {"profile": name, **g}
        for name in names
        for g in growth([r for r in rows if r["profile"] == name])
    ]
    record = _record.base_record(NAME, args)
    record.update({
        "unit": "seconds",
        "model": "blocks of linear(8, 8) + relu, input (4, 8), lowered by torchlean.nn.lowering.lower_model",
        "timed": {
            "plan": "profile.plan_graph(graph)",
            "audit_accept": "accept_graph_kernel_plan(profile.plan_graph(graph), profile.policy)",
            "total": "profile.accept_graph(graph)",
        },
        "gc": "a full collection before each timed call; plan_graph and accept_graph pause the collector "
              "themselves (torchlean.backend.collector), audit_accept runs with it enabled",
        "rows": rows,
        "growth": growth_rows,
        "targets": [r["target"] for r in rows if r["target"] is not None]
        + [g["target"] for g in growth_rows],
        "backend": {f"{r['profile']} {r['nodes']} nodes": r["backend"] for r in rows},
        "backend_note": "the capsules each accepted plan selects; this benchmark executes no kernel",
    })
    _record.write(args.out, record, markdown(record))
    return 0


if __name__ == "__main__":
    _record.run(main)
