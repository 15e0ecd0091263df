"""examples/char_lm.py: a short run of the character-level language model trains (the loss falls
well below the uniform guess's log(V)), its weight-decay group is what the example says, and the
greedy continuation stays in the alphabet."""

from __future__ import annotations

import importlib.util
import math
import sys
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

EXAMPLE = Path(__file__).resolve().parents[2] / "examples" / "char_lm.py"


@pytest.fixture(scope="module")
def char_lm() -> ModuleType:
    spec = importlib.util.spec_from_file_location("char_lm", EXAMPLE)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["char_lm"] = module
    spec.loader.exec_module(module)
    return module


def test_the_corpus_is_the_zen_of_python(char_lm, capsys):
    text = char_lm.corpus()
    assert text.startswith("The Zen of Python, by Tim Peters") and "Readability counts." in text
    assert capsys.readouterr().out == ""  # importing `this` printed nothing


def test_windows_are_next_character_targets(char_lm):
    x, y = char_lm.windows(np.arange(10), 4)
    assert x.shape == y.shape == (6, 4)
    np.testing.assert_array_equal(y, x + 1)


@pytest.fixture(scope="module")
def short_run(char_lm):
    return char_lm.train(40, "checked_cpu", chunk=13)


def test_a_short_run_trains(char_lm, short_run):
    trainer, alphabet, losses = short_run
    assert [(first, last) for first, last, _ in losses] == [(1, 13), (14, 26), (27, 39), (40, 52)]
    assert trainer.steps_done == 52  # two epochs of 26 windows of 32
    uniform = math.log(len(alphabet))
    assert losses[0][2] < uniform and losses[-1][2] < 0.7 * uniform and losses[-1][2] < losses[0][2]
    exempt = [name for name, member in zip(trainer.model.names, trainer._create_optimizer().membership,
                                           strict=True) if member == 0]
    assert {"0.weight", "1.table", "2.ln1.weight", "2.fc1.bias", "4.weight", "5.bias"} <= set(exempt)
    assert not {"5.weight", "2.attn.wq", "3.fc2.weight"} & set(exempt)
    text = char_lm.complete(trainer, alphabet, "Beautiful is ", 10)
    assert text.startswith("Beautiful is ") and len(text) == 23 and set(text) <= set(alphabet)


def test_the_typed_graph_trains_the_same_bits(char_lm, short_run):
    """The language model (embedding, causal attention, GELU, layer norm, per-position
    cross-entropy, AdamW with a no-decay group, clipping, warmup-cosine by step) as one accepted
    graph: the losses and every weight equal eager execution's."""
    eager, _, eager_losses = short_run
    graph, _, graph_losses = char_lm.train(40, "checked_cpu", chunk=13, execution="typed-graph")
    assert graph.config.execution.label == "typed-graph"
    assert graph_losses == eager_losses
    for name, value in eager.model.state().items():
        np.testing.assert_array_equal(graph.model.state()[name], value, strict=True, err_msg=name)


@pytest.mark.parametrize(("profile", "said"), [
    ("bogus", "unknown profile bogus (known: checked_cpu | "),
    ("checked_cuda", "CUDA was requested"),
])
def test_a_profile_it_cannot_run_is_a_one_line_error(char_lm, capsys, profile, said):
    """review221 F1: an unknown profile, or CUDA on this CPU-only torch, ended in a traceback."""
    with pytest.raises(SystemExit) as exited:
        char_lm.main(["--steps", "1", "--profile", profile])
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert ": error: " in err and said in err and err.count("\n") == 1, err  # prog: sys.argv[0]
