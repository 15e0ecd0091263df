"""Milliseconds per training step: torchlean (checked_cpu / fast_cpu, eager / typed-graph) against
the same model in plain PyTorch eager, interleaved in one process on the same thread count.

Models (digits: 64 features, 10 classes, batch 64, Adam lr 1e-3, mean cross-entropy):

* ``mlp``: ``linear(64, 128) -> relu -> linear(128, 10)``;
* ``cnn``: ``torchlean.models.build_model("cnn", 64, 10)`` (hidden 64): reshape 1x8x8, conv 1->16
  3x3 pad 1, relu, max-pool 2, conv 16->32 3x3 pad 1, relu, max-pool 2, flatten, linear 128->64,
  relu, linear 64->10. The PyTorch model is the same ``torch.nn.Sequential`` (``Unflatten`` in
  place of the reshape, so the parameter names match) started from torchlean's initial weights.

A torchlean step is ``Trainer.step(xb, yb)`` (labels -> one-hot, forward, tape backward, Adam,
loss read back as a float); a PyTorch step is ``zero_grad, forward, F.cross_entropy, backward,
Adam.step, loss.item()``. Every configuration first runs warm-up steps (planning, acceptance,
graph lowering, lazy imports: excluded), then the configurations of one model take turns:
each round runs one block of ``k`` steps of every configuration, and the time of a block over
``k`` is one sample. All configurations see the same sequence of digits batches. The record
holds the median and spread (quartiles, min, max, number of blocks) of wall and process-CPU ms per
step, the ratio of each median to PyTorch's, the issue-8 targets (MLP: fast_cpu typed-graph <=
1.2x, fast_cpu eager <= 1.5x, checked_cpu <= 8x) as met/missed (noisy when the configuration's
or PyTorch's blocks spread or waited for a CPU: ``_record.target``), the first-step loss of every
configuration (the same batch and weights, so they agree) and each torchlean configuration's
backend report (op, capsule, provider, reduction policy).

Usage: ``python3 bench/train_step.py [--quick] [--out DIR] [--threads N] [--models mlp,cnn]``.
"""

from __future__ import annotations

import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

import _record
import numpy as np
import numpy.typing as npt
import torch
import torch.nn.functional as F
from tqdm import tqdm

from torchlean import data, nn, optim
from torchlean.backend import profiles
from torchlean.models import build_model
from torchlean.nn.layers import Layer
from torchlean.trainer import ExecutionMode, Objective, RunConfig, Trainer

NAME = "train_step"
BATCH = 64
LR = 1e-3
TORCHLEAN_CONFIGS = (
    ("checked_cpu", "eager"),
    ("checked_cpu", "typed-graph"),
    ("fast_cpu", "eager"),
    ("fast_cpu", "typed-graph"),
)
PYTORCH = "pytorch eager"
PYTORCH_BACKEND = [{"op": "*", "capsule": "torch.nn + torch.optim.Adam + F.cross_entropy",
                    "provider": f"pytorch {torch.__version__} (cpu)", "reduction": "implementation-defined"}]
# (label, limit) per configuration, for the MLP only (issue 8, "Targets").
MLP_TARGETS = {
    "fast_cpu typed-graph": 1.2,
    "fast_cpu eager": 1.5,
    "checked_cpu eager": 8.0,
    "checked_cpu typed-graph": 8.0,
}

Array = npt.NDArray[Any]
Batch = tuple[Array, Array]


@dataclass(frozen=True, slots=True)
class Plan:
    """How many warm-up steps, rounds and steps per block one model gets."""

    warmup: int
    rounds: int
    block: int


PLANS = {
    # model: (full, quick, smoke)
    "mlp": (Plan(10, 150, 10), Plan(5, 60, 10), Plan(1, 2, 1)),
    "cnn": (Plan(5, 40, 5), Plan(2, 20, 3), Plan(1, 2, 1)),
}


def layer_of(model: str) -> tuple[Layer, tuple[int, ...]]:
    """The torchlean model description and its per-sample input shape."""
    if model == "mlp":
        return nn.sequential(nn.linear(64, 128), nn.relu(), nn.linear(128, 10)), (64,)
    return build_model("cnn", 64, 10, hidden=64)


def torch_module(model: str) -> torch.nn.Module:
    """The same architecture as :func:`layer_of` in ``torch.nn`` (same parameter names)."""
    if model == "mlp":
        return torch.nn.Sequential(torch.nn.Linear(64, 128), torch.nn.ReLU(), torch.nn.Linear(128, 10))
    return torch.nn.Sequential(
        torch.nn.Unflatten(1, (1, 8, 8)),
        torch.nn.Conv2d(1, 16, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Conv2d(16, 32, 3, padding=1),
        torch.nn.ReLU(),
        torch.nn.MaxPool2d(2),
        torch.nn.Flatten(),
        torch.nn.Linear(128, 64),
        torch.nn.ReLU(),
        torch.nn.Linear(64, 10),
    )


class Runner:
    """One configuration: ``step(i)`` trains on shared batch ``i``; a private cursor walks the
    ``count`` batches in order, so every configuration sees the same sequence."""

    def __init__(self, label: str, step: Callable[[int], float], count: int) -> None:
        self.label = label
        self._step = step
        self._count = count
        self._cursor = 0
        self.first_loss: float | None = None
        self.wall: list[float] = []
        self.cpu: list[float] = []

    def steps(self, count: int) -> None:
        for _ in range(count):
            loss = self._step(self._cursor % self._count)
            self._cursor += 1
            if self.first_loss is None:
                self.first_loss = loss

    def timed_block(self, count: int) -> None:
        wall, cpu = time.perf_counter(), time.process_time()
        self.steps(count)
        self.wall.append((time.perf_counter() - wall) / count * 1e3)
        self.cpu.append((time.process_time() - cpu) / count * 1e3)


def torchlean_runner(
    model: str, profile: str, execution: str, batches: Sequence[Batch]
) -> tuple[Runner, Trainer[Any, Any]]:
    layer, input_shape = layer_of(model)
    config = RunConfig(
        optimizer=optim.by_name("adam", LR), execution=ExecutionMode.parse(execution), dtype="float32"
    ).with_profile(profiles.get(profile))
    trainer: Trainer[Any, Any] = Trainer(
        layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=input_shape
    )
    trainer.open()

    def step(i: int) -> float:
        return trainer.step(*batches[i])

    return Runner(f"{profile} {execution}", step, len(batches)), trainer


def pytorch_runner(model: str, batches: Sequence[Batch]) -> Runner:
    layer, input_shape = layer_of(model)
    initial = nn.build(layer, input_shape=input_shape, seed=0, dtype=np.float32).state()
    module = torch_module(model)
    module.load_state_dict({name: torch.from_numpy(value) for name, value in initial.items()})
    optimizer = torch.optim.Adam(module.parameters(), lr=LR)
    tensors = [(torch.from_numpy(x), torch.from_numpy(y)) for x, y in batches]

    def step(i: int) -> float:
        xb, yb = tensors[i]
        optimizer.zero_grad()
        loss = F.cross_entropy(module(xb), yb)
        loss.backward()  # type: ignore[no-untyped-call]
        optimizer.step()
        return float(loss.item())

    return Runner(PYTORCH, step, len(batches))


def bench_model(model: str, plan: Plan, batches: Sequence[Batch]) -> dict[str, Any]:
    runners = [pytorch_runner(model, batches)]
    trainers: dict[str, Trainer[Any, Any]] = {}
    for profile, execution in TORCHLEAN_CONFIGS:
        runner, trainer = torchlean_runner(model, profile, execution, batches)
        runners.append(runner)
        trainers[runner.label] = trainer
    for runner in runners:
        runner.steps(plan.warmup)
    for _ in tqdm(range(plan.rounds), desc=f"{model} rounds", leave=False, file=sys.stderr, disable=None):
        for runner in runners:
            runner.timed_block(plan.block)
    baseline_wall = _record.summary(runners[0].wall)
    baseline = baseline_wall["median"]
    baseline_cpu = _record.summary(runners[0].cpu)
    configs = []
    for runner in runners:
        wall = _record.summary(runner.wall)
        cpu = _record.summary(runner.cpu)
        ratio = wall["median"] / baseline
        limit = MLP_TARGETS.get(runner.label) if model == "mlp" else None
        configs.append({
            "config": runner.label,
            "ms_per_step": wall,
            "cpu_ms_per_step": cpu,
            "ratio_to_pytorch": ratio,
            "cpu_ratio_to_pytorch": cpu["median"] / baseline_cpu["median"],
            "target": None if limit is None else _record.target(
                ratio, limit, f"{runner.label} <= {limit}x pytorch eager ({model})", wall, baseline_wall,
                cpu=(cpu, baseline_cpu)),
            "first_loss": runner.first_loss,
            "backend": _record.backend_rows(trainers[runner.label].selected)
            if runner.label in trainers else PYTORCH_BACKEND,
        })
    return {
        "model": model,
        "warmup_steps": plan.warmup,
        "rounds": plan.rounds,
        "steps_per_block": plan.block,
        "configs": configs,
    }


def digits_batches(count: int) -> list[Batch]:
    """``count`` batches of 64 consecutive training samples of digits (seed 0), float32 / int64."""
    dataset = data.load("digits", seed=0, dtype="float32")
    x = np.ascontiguousarray(dataset.x_train, dtype=np.float32)
    y = np.ascontiguousarray(dataset.y_train, dtype=np.int64)
    usable = (x.shape[0] // BATCH) * BATCH
    return [
        (x[s : s + BATCH].copy(), y[s : s + BATCH].copy())
        for s in (i * BATCH % usable for i in range(count))
    ]


def markdown(results: list[dict[str, Any]], threads: int) -> str:
    rows = []
    for result in results:
        for c in result["configs"]:
            s = c["ms_per_step"]
            rows.append((
                result["model"], c["config"], f"{s['median']:.3f}", f"{s['q1']:.3f}-{s['q3']:.3f}",
                f"{c['ratio_to_pytorch']:.2f}x", f"{c['cpu_ratio_to_pytorch']:.2f}x",
                "-" if c["target"] is None else f"<= {c['target']['limit']}x {_record.verdict(c['target'])}",
            ))
    head = (f"### train_step: ms per training step (digits, batch {BATCH}, Adam, cross-entropy; "
            f"{threads} thread(s); median of blocks, IQR)\n\n")
    return head + _record.table(
        ("model", "config", "ms/step", "IQR", "vs pytorch", "CPU time vs pytorch", "target"), rows)


def main(argv: list[str] | None = None) -> int:
    parser = _record.parser(_record.description(__doc__, NAME))
    parser.add_argument("--models", default="mlp,cnn", help="comma-separated subset of mlp,cnn")
    args = parser.parse_args(argv)
    models = _record.names(parser, "--models", args.models, list(PLANS), "model")
    level = 2 if args.smoke else 1 if args.quick else 0
    batches = digits_batches(8 if args.smoke else 22)
    _record.set_threads(args.threads)  # after the data load, which loads more native libraries
    results = [bench_model(model, PLANS[model][level], batches) for model in models]
    record = _record.base_record(NAME, args)
    record.update({
        "unit": "milliseconds per step (wall; cpu_ms_per_step: process CPU time)",
        "dataset": "digits (seed 0, float32)",
        "batch_size": BATCH,
        "optimizer": f"adam(lr={LR})",
        "loss": "mean cross-entropy",
        "results": results,
        "targets": [c["target"] for r in results for c in r["configs"] if c["target"] is not None],
        "backend": {
            f"{r['model']} {c['config']}": c["backend"] for r in results for c in r["configs"]
        },
    })
    _record.write(args.out, record, markdown(results, args.threads))
    return 0


if __name__ == "__main__":
    _record.run(main)
