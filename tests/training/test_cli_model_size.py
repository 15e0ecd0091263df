"""``--hidden`` too large for this machine is refused before any weight is allocated (review56
F4), naming the option, the parameter count, the largest weight and the memory. Oracle: the
MLP's sizes by hand and the machine's memory from ``os.sysconf``."""

from __future__ import annotations

import os

import pytest
from cli_runs import cli

from torchlean._memory import byte_count
from torchlean.cli import train as train_command


def test_an_mlp_too_large_for_the_memory_is_refused_naming_hidden(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    from torchlean import _memory

    monkeypatch.setattr(_memory, "CGROUP_LIMITS", ())  # the machine's memory alone, as read here
    memory = os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    hidden = 1_000_000
    parameters = (4 + 1) * hidden + (hidden + 1) * hidden + (hidden + 1) * 3  # iris: 4 features, 3 classes
    needed = parameters * (8 + 4 * (4 + 2))  # float64 draw; float32 weights, grads, Adam's 2, 2 copies
    assert needed > memory  # the premise: 32 TB
    code, out, err = cli(capsys, "train", "--dataset", "iris", "--hidden", str(hidden))
    assert (code, out) == (2, "")
    assert err == (
        f"error: --hidden {hidden}: --model mlp would have {parameters:.3g} parameters, its largest weight "
        f"2.weight {hidden}x{hidden} ({hidden * hidden:.3g} elements); training them needs about "
        f"{byte_count(needed)} (the float64 initial weights, then the weights, gradients, adam's "
        f"state and a step's copies in float32), and this process may use {byte_count(memory)} of "
        "memory: give a smaller --hidden (the default is 64)\n"
    )


@pytest.mark.parametrize(
    ("argv", "per_parameter"),
    [
        ((), 8 + 4 * (4 + 2)),  # adam float32: 32 bytes, as measured (review59 F2)
        (("--dtype", "float64"), 8 + 8 * (4 + 2)),
        (("--optimizer", "adam", "--amsgrad"), 8 + 4 * (4 + 3)),
        (("--optimizer", "sgd"), 8 + 4 * (4 + 2)),  # torchlean's SGD keeps two buffers too
        (("--optimizer", "rmsprop", "--centered"), 8 + 4 * (4 + 3)),
    ],
)
def test_a_model_that_fits_is_not_refused(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], argv: tuple[str, ...],
    per_parameter: int,
) -> None:
    # the boundary: the estimate exactly fitting is accepted, one byte less is refused
    parameters = (4 + 1) * 8 + (8 + 1) * 8 + (8 + 1) * 3  # 139
    monkeypatch.setattr(train_command, "usable_memory", lambda: per_parameter * parameters)
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--hidden", "8", "--epochs", "1", *argv)
    assert (code, err) == (0, "")
    monkeypatch.setattr(train_command, "usable_memory", lambda: per_parameter * parameters - 1)
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--hidden", "8", "--epochs", "1", *argv)
    assert code == 2 and err.startswith("error: --hidden 8: --model mlp would have 139 parameters, its ")
    assert f"training them needs about {byte_count(per_parameter * parameters)} " in err


@pytest.mark.parametrize(("count", "text"), [
    (0, "0 B"), (1023, "1023 B"), (1024, "1 KiB"), (8 * 10**12, "7.28 TiB"), (2**70, "1.02e+03 EiB"),
])
def test_bytes(count: int, text: str) -> None:
    assert byte_count(count) == text
