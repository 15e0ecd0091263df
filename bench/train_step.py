"""Milliseconds per training step: torchlean (checked_cpu / fast_cpu, eager / typed-graph) against
the same model in plain PyTorch eager, in one process on the same thread count, each configuration
timed in a steady state of its own.

Models (digits: 64 features, 10 classes, batch 64, Adam lr 1e-3, mean cross-entropy):

* ``mlp``: ``linear(64, 128) -> relu -> linear(128, 10)``;
* ``cnn``: ``torchlean.models.build_model("cnn", 64, 10)`` (hidden 64): reshape 1x8x8, conv 1->16
  3x3 pad 1, relu, max-pool 2, conv 16->32 3x3 pad 1, relu, max-pool 2, flatten, linear 128->64,
  relu, linear 64->10. The PyTorch model is the same ``torch.nn.Sequential`` (``Unflatten`` in
  place of the reshape, so the parameter names match) started from torchlean's initial weights.

A torchlean step is ``Trainer.step(xb, yb)`` (labels -> one-hot, forward, tape backward, Adam,
loss read back as a float); a PyTorch step is ``zero_grad, forward, F.cross_entropy, backward,
Adam.step, loss.item()``. Every configuration first runs warm-up steps (planning, acceptance,
graph lowering, lazy imports: excluded). Then the configurations of one model take turns, so that
load on a shared machine hits them alike: in each round every configuration runs one turn, the
order rotated by one configuration each round. A turn is ``settle`` steps, timed but not counted
(the first steps after a switch run with the caches another configuration left; in 10-step turns
that cost pulled every ratio towards 1: review127 F1), then ``blocks`` blocks of ``block`` steps;
the time of a block over ``block`` is one sample, so a ratio is what a continuous training loop
of each configuration sees. All configurations see the same sequence of digits batches.

The record holds the method (warm-up, rounds, settle steps, blocks per turn, steps per block, the
order), the median and spread (quartiles, min, max, number of blocks) of wall and process-CPU ms
per step, the same of the settle steps (``settle_ms_per_step``: what a switch costs), the ratio of
each median to PyTorch's, the issue-8 targets (MLP: fast_cpu typed-graph <= 1.2x, fast_cpu eager
<= 1.5x, checked_cpu <= 8x) as met/missed (noisy when the configuration's or PyTorch's blocks
spread or waited for a CPU: ``_record.target``), each torchlean configuration's backend report
(op, capsule, provider, reduction policy) and an agreement check, so a fast wrong answer shows:
``loss_check`` compares every configuration's losses over its first ``CHECK_STEPS`` steps (the
same weights and batches) with PyTorch's, as the largest relative difference, against
``LOSS_TOLERANCE``, and ``gradient_check`` each configuration's first gradient (one plain SGD step
from the shared initial weights, which Adam's losses cannot show off by a constant factor) against
``GRAD_TOLERANCE``; a configuration that disagrees has its verdict say so, and the script exits
with ``_record.DISAGREES`` after writing its record. Those steps are warm-up and settle steps,
never timed, so ``last_loss_check`` compares each configuration's loss at its last step, after its
timed blocks, with PyTorch's too, loosely (``LAST_LOSS_TOLERANCE``: float32 rounding makes
trajectories drift apart over many steps, checked_cpu's CNN about 5e-4 after 200). A NaN
difference disagrees.

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


# the losses of each configuration's first steps (warm-up first) compared with PyTorch's
CHECK_STEPS = 20
# largest relative difference to PyTorch's loss the check accepts over those steps (seen: 2.3e-7
# for the MLP, 1.3e-5 for the CNN after 60 steps); a wrong forward or update is far off
LOSS_TOLERANCE = 1e-4
# Adam is nearly blind to a constant factor on the gradient (a VJP off by 3x trained the same
# losses: review143 F1), so each configuration's first gradient is checked too, as the change of
# one plain SGD step from the shared initial weights, against PyTorch's (relative to its largest
# entry, per parameter). The step is large so that the float32 subtraction w1 - w0 loses little of
# it (review145 F9: at rate 0.1 the CNN's floor was 1.3e-5); a gradient off by a constant factor
# is off by that factor minus one
GRAD_CHECK_LR = 10.0
GRAD_TOLERANCE = 1e-4
# the first steps are warm-up and settle steps, never timed, so the loss of each configuration's
# last step (after its timed blocks) is checked too, loosely: float32 trajectories drift apart over
# many steps (checked_cpu's CNN about 5e-4 after 200), and a wrong steady state is far off
# (review227 F3: a configuration that stopped working after its 40th step read "met")
LAST_LOSS_TOLERANCE = 1e-2


@dataclass(frozen=True, slots=True)
class Plan:
    """One model's method: warm-up steps, rounds, and per turn the ``settle`` steps after the
    switch (timed, not counted) and ``blocks`` counted blocks of ``block`` steps."""

    warmup: int
    rounds: int
    settle: int
    block: int
    blocks: int

    @property
    def turn(self) -> int:
        """Steps of one configuration per round."""
        return self.settle + self.block * self.blocks


PLANS = {
    # model: (full, quick, smoke)
    "mlp": (Plan(20, 6, 50, 25, 8), Plan(5, 4, 30, 20, 5), Plan(1, 2, 1, 1, 1)),
    "cnn": (Plan(5, 6, 2, 5, 6), Plan(2, 3, 1, 3, 6), Plan(1, 2, 1, 1, 1)),
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
        self.losses: list[float] = []  # of the first CHECK_STEPS steps
        self.last_loss: float | None = None
        self.wall: list[float] = []
        self.cpu: list[float] = []
        self.settle_wall: list[float] = []

    @property
    def first_loss(self) -> float | None:
        return self.losses[0] if self.losses else None

    @property
    def steps_run(self) -> int:
        return self._cursor

    def steps(self, count: int) -> None:
        for _ in range(count):
            loss = self._step(self._cursor % self._count)
            self._cursor += 1
            if len(self.losses) < CHECK_STEPS:
                self.losses.append(loss)
            self.last_loss = loss

    def timed_block(self, count: int, samples: list[float] | None = None) -> None:
        """``count`` steps; their wall and CPU ms per step are one sample each (the wall time
        only, into ``samples``, when given: the settle steps)."""
        wall, cpu = time.perf_counter(), time.process_time()
        self.steps(count)
        wall_ms = (time.perf_counter() - wall) / count * 1e3
        if samples is not None:
            samples.append(wall_ms)
            return
        self.wall.append(wall_ms)
        self.cpu.append((time.process_time() - cpu) / count * 1e3)

    def turn(self, plan: Plan) -> None:
        """One turn: the settle steps (timed, not counted), then the counted blocks."""
        if plan.settle:
            self.timed_block(plan.settle, self.settle_wall)
        for _ in range(plan.blocks):
            self.timed_block(plan.block)


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
    for r in tqdm(range(plan.rounds), desc=f"{model} rounds", leave=False, file=sys.stderr, disable=None):
        for i in range(len(runners)):
            runners[(r + i) % len(runners)].turn(plan)
    baseline_wall = _record.summary(runners[0].wall)
    baseline = baseline_wall["median"]
    baseline_cpu = _record.summary(runners[0].cpu)
    check = loss_check(runners)
    gradients = gradient_check(model, batches[0])
    last = last_loss_check(runners)
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
                cpu=(cpu, baseline_cpu),
                agrees=check["per_config"][runner.label] <= LOSS_TOLERANCE
                and gradients["per_config"][runner.label] <= GRAD_TOLERANCE
                and last["per_config"][runner.label] <= LAST_LOSS_TOLERANCE),
            "settle_ms_per_step": _record.summary(runner.settle_wall) if runner.settle_wall else None,
            "first_loss": runner.first_loss,
            "loss_rel_difference": check["per_config"][runner.label],
            "gradient_rel_difference": gradients["per_config"][runner.label],
            "last_loss": runner.last_loss,
            "last_loss_rel_difference": last["per_config"][runner.label],
            "backend": _record.backend_rows(trainers[runner.label].selected)
            if runner.label in trainers else PYTORCH_BACKEND,
        })
    return {
        "model": model,
        "warmup_steps": plan.warmup,
        "rounds": plan.rounds,
        "settle_steps": plan.settle,
        "blocks_per_turn": plan.blocks,
        "steps_per_block": plan.block,
        "steps_per_turn": plan.turn,
        "order": "every configuration one turn per round, the order rotated by one each round",
        "steps_per_config": runners[0].steps_run,
        "loss_check": check,
        "gradient_check": gradients,
        "last_loss_check": last,
        "configs": configs,
    }


def rel_difference(value: float | None, reference: float | None) -> float | None:
    """``|value - reference| / |reference|`` (None when either is missing)."""
    if value is None or reference is None:
        return None
    return abs(value - reference) / abs(reference) if reference else abs(value)


def loss_check(runners: Sequence[Runner]) -> dict[str, Any]:
    """Every configuration's losses over its first steps against the first runner's (PyTorch's):
    the largest relative difference per configuration and over all, and whether it is within
    :data:`LOSS_TOLERANCE`."""
    baseline = runners[0].losses
    per_config = {  # _record.worst: a NaN loss disagrees (review227 F1)
        runner.label: _record.worst(rel_difference(a, b) or 0.0 for a, b in zip(runner.losses, baseline,
                                                                                 strict=True))
        for runner in runners
    }
    worst = _record.worst(per_config.values())
    return {
        "steps": len(baseline),
        "against": runners[0].label,
        "per_config": per_config,
        "max_rel_difference": worst,
        "tolerance": LOSS_TOLERANCE,
        "agrees": bool(worst <= LOSS_TOLERANCE),
    }


def last_loss_check(runners: Sequence[Runner]) -> dict[str, Any]:
    """Every configuration's loss at its last step, after its timed blocks, against PyTorch's
    (the first runner's), relative, within :data:`LAST_LOSS_TOLERANCE`; a missing or NaN loss
    disagrees."""
    reference = runners[0].last_loss
    per_config = {}
    for runner in runners:
        difference = rel_difference(runner.last_loss, reference)
        per_config[runner.label] = float("nan") if difference is None else difference
    worst = _record.worst(per_config.values())
    return {
        "against": runners[0].label,
        "per_config": per_config,
        "max_rel_difference": worst,
        "tolerance": LAST_LOSS_TOLERANCE,
        "agrees": bool(worst <= LAST_LOSS_TOLERANCE),
    }


def gradient_check(model: str, batch: Batch) -> dict[str, Any]:
    """Every configuration's first gradient against PyTorch's: one plain SGD step (rate
    :data:`GRAD_CHECK_LR`) on ``batch`` from the shared initial weights, in fresh trainers and a
    fresh PyTorch model, and per configuration the largest over the parameters of
    ``max|Δw - Δw_pytorch| / max|Δw_pytorch|`` (Δw = -rate × gradient), against
    :data:`GRAD_TOLERANCE`; for a parameter PyTorch's step leaves exactly unchanged (no
    relative scale), ``max|Δw|`` itself, the weight change in the parameter's units, against the
    same tolerance (:func:`_relative`)."""
    layer, input_shape = layer_of(model)
    initial = nn.build(layer, input_shape=input_shape, seed=0, dtype=np.float32).state()
    module = torch_module(model)
    module.load_state_dict({name: torch.from_numpy(value) for name, value in initial.items()})
    sgd = torch.optim.SGD(module.parameters(), lr=GRAD_CHECK_LR)
    xb, yb = batch
    F.cross_entropy(module(torch.from_numpy(xb)), torch.from_numpy(yb)).backward()  # type: ignore[no-untyped-call]
    sgd.step()
    reference = {name: value.detach().numpy() - initial[name] for name, value in module.state_dict().items()}
    per_config = {PYTORCH: 0.0}
    for profile, execution in TORCHLEAN_CONFIGS:
        config = RunConfig(
            optimizer=optim.by_name("sgd", GRAD_CHECK_LR), execution=ExecutionMode.parse(execution),
            dtype="float32",
        ).with_profile(profiles.get(profile))
        trainer: Trainer[Any, Any] = Trainer(
            layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=input_shape
        )
        trainer.step(xb, yb)
        after = trainer.model.state()
        per_config[f"{profile} {execution}"] = _record.worst(
            _relative(after[name] - initial[name], change) for name, change in reference.items()
        )
    worst = _record.worst(per_config.values())
    return {
        "method": f"one SGD step (lr {GRAD_CHECK_LR}) from the shared initial weights on the first batch",
        "against": PYTORCH,
        "per_config": per_config,
        "max_rel_difference": worst,
        "tolerance": GRAD_TOLERANCE,
        "agrees": bool(worst <= GRAD_TOLERANCE),
    }


def _relative(got: npt.NDArray[Any], expected: npt.NDArray[Any]) -> float:
    """``max|got - expected| / max|expected|``; the absolute difference where ``expected`` is all
    zero (a parameter the first step does not move)."""
    scale = float(np.abs(expected).max(initial=0.0))
    difference = float(np.abs(got.astype(np.float64) - expected).max(initial=0.0))
    return difference / scale if scale > 0 else difference


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
    notes = []
    for result in results:
        for c in result["configs"]:
            s = c["ms_per_step"]
            settle = c["settle_ms_per_step"]
            target = c["target"]
            ratio = (f"{c['ratio_to_pytorch']:.2f}" if target is None
                     else _record.shown(c["ratio_to_pytorch"], target["limit"], 2))
            rows.append((
                result["model"], c["config"], f"{s['median']:.3f}", f"{s['q1']:.3f}-{s['q3']:.3f}",
                "-" if settle is None else f"{settle['median']:.3f}",
                f"{ratio}x", f"{c['cpu_ratio_to_pytorch']:.2f}x",
                "-" if target is None else f"<= {target['limit']}x {_record.verdict(target)}",
                f"{c['loss_rel_difference']:.1e}", f"{c['gradient_rel_difference']:.1e}",
            ))
        check, gradients, last = result["loss_check"], result["gradient_check"], result["last_loss_check"]
        notes.append(
            f"{result['model']}: every configuration's loss over its first {check['steps']} steps within "
            f"{check['max_rel_difference']:.1e} of PyTorch's (relative; tolerance {check['tolerance']:g}): "
            + ("agrees" if check["agrees"] else "DISAGREES")
            + f"; its first gradient (one SGD step) within {gradients['max_rel_difference']:.1e} of "
            f"PyTorch's (tolerance {gradients['tolerance']:g}): "
            + ("agrees" if gradients["agrees"] else "DISAGREES")
            + f"; its last loss, after the timed steps, within {last['max_rel_difference']:.1e} "
            f"(tolerance {last['tolerance']:g}): " + ("agrees" if last["agrees"] else "DISAGREES")
            + f"; per configuration {result['steps_per_config']} steps: {result['warmup_steps']} warm-up, "
            f"{result['rounds']} rounds of {result['settle_steps']} settle steps (not counted) + "
            f"{result['blocks_per_turn']} blocks of {result['steps_per_block']}, order rotated each round."
        )
    head = (f"### train_step: ms per training step (digits, batch {BATCH}, Adam, cross-entropy; "
            f"{threads} thread(s); median of blocks, IQR; after switch: the settle steps of each turn)\n\n")
    return head + _record.table(
        ("model", "config", "ms/step", "IQR", "after switch ms", "vs pytorch", "CPU time vs pytorch",
         "target", "loss vs pytorch", "gradient vs pytorch"), rows
    ) + "\n\n" + "\n".join(f"- {n}" for n in notes)


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
    kinds = ("loss_check", "gradient_check", "last_loss_check")
    checks = [r[kind] for r in results for kind in kinds]
    return 0 if all(check["agrees"] for check in checks) else _record.DISAGREES


if __name__ == "__main__":
    _record.run(main)
