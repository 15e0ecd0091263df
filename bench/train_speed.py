"""Training speed of ``checked_cpu`` (numpy left folds) against ``fast_cpu`` (torch CPU forwards).

For each model (the default digits ``mlp`` and the ``cnn`` of ``torchlean train``), each profile
(``checked_cpu``, ``fast_cpu``) and each execution mode (``eager``, ``typed-graph``) the script
trains from the same seed for a few epochs on scikit-learn's digits and records the wall-clock
seconds of every epoch, the final training loss, the test accuracy and the backend capsules that
computed the run (op, capsule name, provider, reduction policy). The first epoch includes
planning, acceptance and (typed graph) lowering, so the table reports the fastest of the later
epochs, both in wall-clock seconds and in CPU seconds of this process (``time.process_time``, far
less disturbed by other load on a shared machine), and the speed-up of ``fast_cpu`` over
``checked_cpu`` in CPU seconds for the same model and mode.

A second table times single kernels at the CNN's shapes (batch 32): the aten forward, the
reference forward and the reference VJP, which ``fast_cpu`` keeps as its backward (the tape
applies the reference rule at the saved inputs), so it shows where the remaining time goes.

torch's intra-op threads are set with ``--torch-threads`` (default 1: the kernels are small and a
shared CPU makes spinning OpenMP workers very slow; the value is recorded). It is a measurement,
not a test.

Usage: ``python bench/train_speed.py [PATH] [--epochs 4] [--models mlp,cnn] [--torch-threads 1]``;
PATH defaults to ``bench/results/train_speed.json``.
"""

from __future__ import annotations

import argparse
import functools
import json
import platform
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import numpy as np
import torch

from torchlean import data, optim
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.providers.aten import kernels as aten
from torchlean.backend.providers.reference import spatial
from torchlean.models import build_model
from torchlean.trainer import ExecutionMode, Objective, RunConfig, Trainer

DEFAULT_PATH = Path("bench/results/train_speed.json")
PROFILES = ("checked_cpu", "fast_cpu")
EXECUTIONS = ("eager", "typed-graph")


def capsule_rows(selected: list[AcceptedKernel]) -> list[dict[str, str]]:
    """The backend capsule report of a run: op, capsule name, provider and reduction policy."""
    return [
        {
            "op": k.capsule.op.label,
            "name": k.capsule.name,
            "provider": k.capsule.provider.label,
            "reduction": k.capsule.numerical_policy.reduction.label,
        }
        for k in selected
    ]


def train_run(
    model: str, profile: str, execution: str, epochs: int, batch_size: int, seed: int
) -> dict[str, Any]:
    """Train one configuration and return its record (seconds per epoch, loss, accuracy, capsules)."""
    dataset = data.load("digits", seed=seed, dtype="float32")
    layer, input_shape = build_model(model, dataset.n_features, dataset.n_classes, hidden=64)
    config = RunConfig(
        optimizer=optim.by_name("adam", 0.005), execution=ExecutionMode.parse(execution), dtype="float32"
    ).with_profile(profiles.get(profile))
    trainer: Trainer[Any, Any] = Trainer(
        layer, objective=Objective.CROSS_ENTROPY, config=config, seed=seed, input_shape=input_shape
    )
    trainer.open()
    seconds: list[float] = []
    cpu_seconds: list[float] = []
    losses: list[float] = []
    for _ in range(epochs):
        started, cpu_started = time.perf_counter(), time.process_time()
        (loss,) = trainer.fit(dataset.x_train, dataset.y_train, epochs=1, batch_size=batch_size)
        seconds.append(time.perf_counter() - started)
        cpu_seconds.append(time.process_time() - cpu_started)
        losses.append(loss)
    accuracy = trainer.evaluate(dataset.x_test, dataset.y_test)["accuracy"]
    later = slice(1, None) if epochs > 1 else slice(None)
    return {
        "model": model,
        "profile": profile,
        "execution": execution,
        "epochs": epochs,
        "batch_size": batch_size,
        "seconds_per_epoch": seconds,
        "cpu_seconds_per_epoch": cpu_seconds,
        "best_seconds_per_epoch": min(seconds[later]),
        "best_cpu_seconds_per_epoch": min(cpu_seconds[later]),
        "losses": losses,
        "final_loss": losses[-1],
        "test_accuracy": accuracy,
        "capsules": capsule_rows(trainer.selected),
    }


def best_seconds(call: Callable[[], object], repeats: int) -> float:
    """The fastest of ``repeats`` timed calls (after one warm-up call)."""
    call()
    times = []
    for _ in range(repeats):
        started = time.perf_counter()
        call()
        times.append(time.perf_counter() - started)
    return min(times)


def kernel_rows(repeats: int, seed: int) -> list[dict[str, Any]]:
    """Per-kernel seconds at the digits CNN's shapes: aten forward, reference forward and VJP."""
    rng = np.random.default_rng(seed)

    def f32(*shape: int) -> np.ndarray[Any, Any]:
        return rng.standard_normal(shape).astype(np.float32)

    rows = []
    cases: list[tuple[str, tuple[np.ndarray[Any, Any], ...], dict[str, Any]]] = [
        ("conv 1->16 8x8", (f32(32, 1, 8, 8), f32(16, 1, 3, 3), f32(16)), {"padding": 1}),
        ("conv 16->32 4x4", (f32(32, 16, 4, 4), f32(32, 16, 3, 3), f32(32)), {"padding": 1}),
        ("max_pool 2 16x8x8", (f32(32, 16, 8, 8),), {"kernel_size": 2}),
    ]
    for label, inputs, params in cases:
        op = label.split()[0]
        aten_fn: Callable[..., Any] = getattr(aten, op)
        ref_fn: Callable[..., Any] = getattr(spatial, op)
        vjp_fn: Callable[..., Any] = getattr(spatial, f"{op}_vjp")
        out = ref_fn(*inputs, **params)
        g = np.ones_like(out)
        rows.append(
            {
                "kernel": label,
                "aten_forward_s": best_seconds(functools.partial(aten_fn, *inputs, **params), repeats),
                "reference_forward_s": best_seconds(functools.partial(ref_fn, *inputs, **params), repeats),
                "reference_vjp_s": best_seconds(
                    functools.partial(vjp_fn, g, *inputs, out=out, **params), repeats
                ),
            }
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", type=Path, default=DEFAULT_PATH)
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--batch-size", type=int, default=32)
    parser.add_argument("--models", default="mlp,cnn")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--torch-threads", type=int, default=1)
    parser.add_argument("--kernel-repeats", type=int, default=5)
    args = parser.parse_args(argv)
    torch.set_num_threads(args.torch_threads)

    runs = [
        train_run(model, profile, execution, args.epochs, args.batch_size, args.seed)
        for model in args.models.split(",")
        for execution in EXECUTIONS
        for profile in PROFILES
    ]
    baseline = {
        (r["model"], r["execution"]): r["best_cpu_seconds_per_epoch"]
        for r in runs
        if r["profile"] == "checked_cpu"
    }
    for r in runs:
        r["speedup_vs_checked_cpu"] = baseline[(r["model"], r["execution"])] / r["best_cpu_seconds_per_epoch"]
    kernels = kernel_rows(args.kernel_repeats, args.seed)
    record = {
        "bench": "train_speed",
        "description": "wall and CPU seconds per epoch on digits (1437 samples), checked_cpu vs fast_cpu",
        "dataset": "digits",
        "optimizer": "adam(lr=0.005)",
        "dtype": "float32",
        "torch_threads": torch.get_num_threads(),
        "python": platform.python_version(),
        "numpy": np.__version__,
        "torch": torch.__version__,
        "machine": platform.machine(),
        "runs": runs,
        "kernels": kernels,
    }
    args.path.parent.mkdir(parents=True, exist_ok=True)
    args.path.write_text(json.dumps(record, indent=2) + "\n")

    header = (
        f"{'model':<5} {'execution':<11} {'profile':<11} {'wall s':>7} {'cpu s':>7} {'speedup':>7} "
        f"{'loss':>7} {'acc':>6}"
    )
    print(header)
    print("-" * len(header))
    for r in runs:
        print(
            f"{r['model']:<5} {r['execution']:<11} {r['profile']:<11} {r['best_seconds_per_epoch']:>7.3f} "
            f"{r['best_cpu_seconds_per_epoch']:>7.3f} {r['speedup_vs_checked_cpu']:>6.2f}x "
            f"{r['final_loss']:>7.4f} {r['test_accuracy']:>6.3f}"
        )
    print()
    print(f"{'kernel (batch 32)':<20} {'aten fwd':>10} {'ref fwd':>10} {'ref vjp':>10}")
    for row in kernels:
        print(
            f"{row['kernel']:<20} {row['aten_forward_s'] * 1e3:>8.2f}ms "
            f"{row['reference_forward_s'] * 1e3:>8.2f}ms {row['reference_vjp_s'] * 1e3:>8.2f}ms"
        )
    print(f"wrote {args.path}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
