"""Kernel profiles (torchlean.profiler): which capsule ran how many times, forward and VJP.

Oracles: hand counts of the kernels a small program runs (one forward per op call, one VJP per
tape node that backward reaches), the session's own record of selected capsules, and the clock's
bounds (every counted second lies inside the block). No test asserts a duration.
"""

from __future__ import annotations

import json

import numpy as np
import pytest

import torchlean as tl
from torchlean import nn, optim
from torchlean.autograd import profiler
from torchlean.backend.errors import GuardError, TorchLeanError
from torchlean.trainer import ExecutionMode, Objective, RunConfig, Trainer


def _calls(prof: profiler.KernelProfile) -> dict[str, tuple[int, int]]:
    return {k.capsule: (k.forward_calls, k.vjp_calls) for k in prof.kernels}


def _program(x: tl.Tensor, w: tl.Tensor) -> tl.Tensor:
    """relu(x @ w) * x summed: matmul, relu, mul, reduce_sum, one call each."""
    return tl.reduce_sum(tl.relu(tl.matmul(x, w)) * x)


def test_counts_one_forward_per_call_and_one_vjp_per_node_reached() -> None:
    x = tl.tensor(np.arange(6.0).reshape(2, 3) - 2.0)
    w = tl.tensor(np.eye(3) * 0.5, requires_grad=True)
    with tl.session(), profiler.profile() as prof:
        _program(x, w).backward()
        _program(x, w)  # a second forward without backward: forward calls only
    assert _calls(prof) == {
        "reference.matmul": (2, 1),
        "reference.relu": (2, 1),
        "reference.mul": (2, 1),
        "reference.reduce_sum": (2, 1),
    }
    assert {(k.op, k.provider, k.device) for k in prof.kernels} == {
        ("matmul", "reference", "cpu"), ("relu", "reference", "cpu"), ("mul", "reference", "cpu"),
        ("reduce_sum", "reference", "cpu"),
    }
    assert w.grad is not None


def test_no_vjp_is_recorded_without_gradients() -> None:
    x = tl.tensor(np.array([[1.0, -2.0]]))
    w = tl.tensor(np.array([[1.0], [3.0]]), requires_grad=True)
    with profiler.profile() as prof, tl.no_grad():
        tl.reduce_sum(tl.relu(tl.matmul(x, w)))
    assert _calls(prof) == {
        "reference.matmul": (1, 0), "reference.relu": (1, 0), "reference.reduce_sum": (1, 0)
    }


def test_vjps_count_only_inside_the_block_that_recorded_their_nodes() -> None:
    x = tl.tensor(np.array([[1.0, -2.0, 0.5]]))
    w = tl.tensor(np.ones((3, 3)), requires_grad=True)
    with profiler.profile() as forward_only:
        loss = _program(x, w)
    with profiler.profile() as backward_only:
        loss.backward()  # nodes recorded before this block: their VJPs are not this block's
    assert _calls(forward_only) == {
        "reference.matmul": (1, 0), "reference.relu": (1, 0), "reference.mul": (1, 0),
        "reference.reduce_sum": (1, 0),
    }
    assert backward_only.kernels == ()
    assert backward_only.kernel_seconds == 0.0


def test_nested_profiles_each_count_what_ran_inside_them() -> None:
    x = tl.tensor(np.array([[2.0, -1.0]]))
    w = tl.tensor(np.array([[1.0, 0.0], [0.0, 1.0]]), requires_grad=True)
    with profiler.profile() as outer:
        tl.relu(x)
        with profiler.profile() as inner:
            loss = tl.reduce_sum(tl.matmul(x, w))
        loss.backward()  # the inner profile is closed: the outer one alone times the VJPs
    assert _calls(inner) == {"reference.matmul": (1, 0), "reference.reduce_sum": (1, 0)}
    assert _calls(outer) == {
        "reference.relu": (1, 0), "reference.matmul": (1, 1), "reference.reduce_sum": (1, 1)
    }
    assert profiler.active() == ()


def test_a_profile_ended_out_of_order_stops_counting() -> None:
    """review28 F8: ending the outer profile first (an ExitStack, hand-written enter/exit) leaves
    the inner one open and the outer one closed for good."""
    outer, inner = profiler.profile(), profiler.profile()
    outer.__enter__()
    inner.__enter__()
    outer.__exit__(None, None, None)
    tl.relu(tl.tensor(np.ones(3)))
    inner.__exit__(None, None, None)
    assert profiler.active() == ()
    tl.relu(tl.tensor(np.ones(3)))
    assert outer.kernels == ()
    assert _calls(inner) == {"reference.relu": (1, 0)}


def test_seconds_lie_inside_the_block_and_sum_to_kernel_seconds() -> None:
    rng = np.random.default_rng(0)
    x = tl.tensor(rng.standard_normal((64, 32)))
    w = tl.tensor(rng.standard_normal((32, 32)), requires_grad=True)
    with profiler.profile() as prof:
        for _ in range(5):
            _program(x, w).backward()
    records = prof.kernels
    assert all(k.forward_seconds >= 0.0 and k.vjp_seconds >= 0.0 for k in records)
    assert prof.kernel_seconds == pytest.approx(sum(k.forward_seconds + k.vjp_seconds for k in records))
    assert 0.0 < prof.kernel_seconds <= prof.wall_seconds
    totals = [k.total_seconds for k in records]
    assert totals == sorted(totals, reverse=True)


def test_a_kernel_that_raises_is_not_counted() -> None:
    table = tl.tensor(np.ones((3, 2)))
    with tl.session() as s, profiler.profile() as prof:
        with pytest.raises(GuardError):
            tl.gather(table, np.array([[0, 7]]), axis=0)  # index 7 is out of range: the kernel guard raises
        tl.relu(table)
    assert "reference.gather" in [k.capsule.name for k in s.selected]
    assert _calls(prof) == {"reference.relu": (1, 0)}


def _trainer(execution: ExecutionMode) -> Trainer[object, object]:
    layer = nn.sequential(nn.linear(4, 8), nn.tanh(), nn.linear(8, 3))
    config = RunConfig(optimizer=optim.sgd(lr=0.1), execution=execution)
    return Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0)


def test_eager_and_typed_graph_steps_run_the_same_kernels() -> None:
    rng = np.random.default_rng(1)
    x = rng.standard_normal((10, 4))
    y = rng.integers(0, 3, 10)
    counts = {}
    for execution in (ExecutionMode.EAGER, ExecutionMode.TYPED_GRAPH):
        trainer = _trainer(execution)
        trainer.step(x, y)  # planning and acceptance happen here, outside the profile
        with profiler.profile() as prof:
            trainer.step(x, y)
            trainer.step(x, y)
        counts[execution] = _calls(prof)
    assert counts[ExecutionMode.EAGER] == counts[ExecutionMode.TYPED_GRAPH]
    calls = counts[ExecutionMode.EAGER]
    assert calls["reference.linear"] == (4, 4)  # two layers, two steps, each with its VJP
    assert calls["reference.tanh"] == (2, 2)


def test_fit_counts_every_minibatch() -> None:
    rng = np.random.default_rng(2)
    x = rng.standard_normal((25, 4))
    y = rng.integers(0, 3, 25)
    trainer = _trainer(ExecutionMode.EAGER)
    with profiler.profile() as prof:
        trainer.fit(x, y, epochs=2, batch_size=10)  # 3 minibatches per epoch
    assert _calls(prof)["reference.tanh"] == (6, 6)
    assert _calls(prof)["reference.linear"] == (12, 12)


def test_reading_an_open_profile_or_entering_twice_is_refused() -> None:
    prof = profiler.profile()
    with prof:
        with pytest.raises(profiler.ProfilerError, match="after its `with` block ends"):
            _ = prof.kernels
        with pytest.raises(profiler.ProfilerError, match="after its `with` block ends"):
            prof.table()
    with pytest.raises(profiler.ProfilerError, match="entered once"), prof:
        pass
    assert isinstance(profiler.ProfilerError("x"), TorchLeanError)


def test_table_and_json() -> None:
    x = tl.tensor(np.array([[1.0, -2.0, 0.5]]))
    w = tl.tensor(np.ones((3, 3)), requires_grad=True)
    with profiler.profile() as prof:
        _program(x, w).backward()
    lines = prof.table().splitlines()
    header = "capsule  device  forward calls  forward s  vjp calls  vjp s  total s  share"
    assert " ".join(lines[0].split()) == " ".join(header.split())
    assert sorted(line.split()[0] for line in lines[1:5]) == [
        "reference.matmul", "reference.mul", "reference.reduce_sum", "reference.relu"
    ]
    assert lines[-1].startswith("kernels ") and " s wall (" in lines[-1]
    short = prof.table(limit=1).splitlines()
    assert len(short) == 4 and short[2].startswith("(3 more capsules)")
    assert short[2].split()[3:5] == ["3", "3"]  # the three capsules' forward and VJP calls
    shares = [float(line.split()[-1].rstrip("%")) for line in lines[1:5]]
    assert sum(shares) == pytest.approx(100.0, abs=0.3)
    for bad in (0, -1, 1.5, True, "2", np.int64(0)):  # a torchlean ValueError since review160 F7
        with pytest.raises(profiler.ProfilerValueError, match=r"table: limit must be an int >= 1, got "):
            prof.table(limit=bad)  # type: ignore[arg-type]
    assert issubclass(profiler.ProfilerValueError, ValueError)
    assert prof.table(limit=np.int64(1)) == prof.table(limit=1)  # numpy integers, as everywhere
    with pytest.raises(profiler.ProfilerTypeError, match=r"^synchronizer needs a KernelCapsule, got int$"):
        profiler.synchronizer(3)  # type: ignore[arg-type]
    record = json.loads(json.dumps([k.to_json() for k in prof.kernels]))
    assert {r["capsule"] for r in record} == {
        "reference.matmul", "reference.mul", "reference.reduce_sum", "reference.relu"
    }
    assert all(r["total_seconds"] == pytest.approx(r["forward_seconds"] + r["vjp_seconds"]) for r in record)


def test_the_module_is_reachable_from_the_package() -> None:
    assert tl.profiler is profiler
    assert tl.profiler.profile is profiler.profile


_IMPORT_PROBE = """
import sys
import numpy as np
import torchlean as tl
from torchlean.autograd import dispatch, profiler

assert "torch" not in sys.modules
loaded = []
timed = dispatch._timed

def spy(call, *args, **kwargs):
    loaded.append("torch" in sys.modules)  # when the clock starts
    return timed(call, *args, **kwargs)

dispatch._timed = spy
with tl.session(sys.argv[1]), profiler.profile() as prof:
    q = tl.tensor(np.ones((1, 2, 3)))
    tl.scaled_dot_product_attention(q, q, q)
    tl.relu(q)
print(loaded, sorted(k.capsule for k in prof.kernels), "torch" in sys.modules)
"""


@pytest.mark.parametrize(
    ("profile", "capsules", "imported"),
    [
        ("fast_cpu", "['aten.relu', 'aten.scaled_dot_product_attention']", True),
        ("libtorch_forward_cpu", "['libtorch.sdpa_forward', 'reference.relu']", True),
        ("checked_cpu", "['reference.attention', 'reference.relu']", False),
    ],
)
def test_importing_torch_is_binding_not_kernel_time(profile: str, capsules: str, imported: bool) -> None:
    """review34 F1: torch was imported inside the first aten or LibTorch kernel call, so its import
    (about a second) was that kernel's time in the profile, ``--kernel-times`` and the JSON record.
    In a fresh interpreter, torch is loaded before every timed call (at binding, the kernels'
    ``prepare``); checked_cpu never loads it."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _IMPORT_PROBE, profile], capture_output=True, text=True,
                         check=True)
    assert run.stdout.split("] ", 1)[0] + "]" == f"[{', '.join([str(imported)] * 2)}]"
    assert run.stdout.strip().endswith(f"{capsules} {imported}")


_EPOCHS_PROBE = """
import sys
from torchlean.autograd import profiler
from torchlean.cli import main

opened = profiler.profile

def spy():
    print("torch loaded when the epochs' profile opens:", "torch" in sys.modules)
    return opened()

profiler.profile = spy
sys.exit(main(["train", "--dataset", "iris", "--epochs", "1", "--kernel-times", "--profile", sys.argv[1]]))
"""


@pytest.mark.parametrize(("profile", "loaded"), [("fast_cpu", True), ("libtorch_forward_cpu", True),
                                                 ("checked_cpu", False)])
def test_train_imports_torch_before_its_timed_epochs(profile: str, loaded: bool) -> None:
    """review36 F8: the epochs' wall time that ``--kernel-times`` reports held torch's import
    (about a second) under fast_cpu, so the kernels' share read 0.3 %; torch is imported before
    the epochs when the profile has aten or LibTorch capsules, and never under checked_cpu."""
    import subprocess
    import sys

    run = subprocess.run([sys.executable, "-c", _EPOCHS_PROBE, profile], capture_output=True, text=True,
                         check=True)
    assert f"torch loaded when the epochs' profile opens: {loaded}" in run.stdout.splitlines()
