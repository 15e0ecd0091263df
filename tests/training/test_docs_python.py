"""The Python examples of docs/python.md and docs/saving-and-predicting.md run as written, and
do what the text says: the eager session records its capsules, the trainer's loss falls, and the
hand-written loop (an optimizer of ``torchlean.optim`` copied back under ``no_grad``) lowers the
cross-entropy from its start at about ``log 3`` for three classes and near-zero weights."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

import numpy as np
from _docs import python_blocks


def _python_blocks() -> list[str]:
    return python_blocks("Python")


def test_the_readme_python_section_has_its_five_examples() -> None:
    assert len(_python_blocks()) == 5


def test_the_session_and_trainer_example_runs(capsys: Any) -> None:
    np.random.seed(0)
    namespace: dict[str, Any] = {}
    exec(compile(_python_blocks()[0], "docs/python.md", "exec"), namespace)
    assert "['reference.matmul', 'reference.relu', 'reference.reduce_sum']" in capsys.readouterr().out
    losses = namespace["losses"]
    assert len(losses) == 5 and losses[-1] < losses[0]


def test_the_own_training_loop_example_lowers_the_loss() -> None:
    np.random.seed(0)
    namespace: dict[str, Any] = {}
    exec(compile("import numpy as np\nimport torchlean as tl\nfrom torchlean import optim\n"
                 + _python_blocks()[1], "docs/python.md", "exec"), namespace)
    w, b, x, labels = (namespace[k] for k in ("w", "b", "x", "labels"))
    logits = x.numpy() @ w.numpy().T + b.numpy()
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    final = -float(np.mean(log_p[np.arange(32), labels]))  # numpy oracle of the trained model's loss
    assert final < math.log(3) - 0.1
    assert w.grad is None and b.grad is None  # the loop resets them


def _eval_cross_entropy(state: dict[str, Any], x: Any, labels: Any) -> tuple[float, Any]:
    """A numpy oracle of the README's batch norm MLP in evaluation mode: its mean cross-entropy on
    ``x`` and its logits (float64 from the float32 state)."""
    s = {name: value.astype(np.float64) for name, value in state.items()}
    h = x.astype(np.float64) @ s["0.weight"].T + s["0.bias"]
    h = (h - s["1.running_mean"]) / np.sqrt(s["1.running_var"] + 1e-5) * s["1.weight"] + s["1.bias"]
    logits = np.maximum(h, 0.0) @ s["3.weight"].T + s["3.bias"]
    shifted = logits - logits.max(axis=1, keepdims=True)
    log_p = shifted - np.log(np.exp(shifted).sum(axis=1, keepdims=True))
    return -float(np.mean(log_p[np.arange(len(labels)), labels])), logits


def test_the_model_loop_example_trains_the_model_and_its_statistics() -> None:
    """The loop around a built model lowers the evaluation-mode cross-entropy (a numpy oracle of
    the model's forward program) below the untrained model's, moves the running statistics off
    their initial (0, 1), and its ``predicted`` is the oracle's argmax."""
    from torchlean import nn

    np.random.seed(0)
    namespace: dict[str, Any] = {}
    exec(compile("import numpy as np\nimport torchlean as tl\nfrom torchlean import nn, optim\n"
                 + _python_blocks()[2], "docs/python.md", "exec"), namespace)
    model, x, labels = namespace["model"], namespace["x"], namespace["labels"]
    untrained = nn.build(namespace["layer"], seed=0).state()
    before, _ = _eval_cross_entropy(untrained, x, labels)
    after, logits = _eval_cross_entropy(model.state(), x, labels)
    assert after < before - 0.05
    assert not np.allclose(model.state()["1.running_mean"], 0.0)
    assert not np.allclose(model.state()["1.running_var"], 1.0)
    np.testing.assert_array_equal(namespace["predicted"], logits.argmax(axis=1))


def test_the_profile_of_your_own_example_plans_explains_and_runs_on_aten(capsys: Any) -> None:
    """The ``aten_only`` profile plans matmul and relu to the aten capsules, explains that
    smooth_max_pool has no admissible capsule, and its session records what the comment says."""
    namespace: dict[str, Any] = {}
    source = "import numpy as np\nimport torchlean as tl\n" + _python_blocks()[4]
    exec(compile(source, "docs/python.md", "exec"), namespace)
    out = capsys.readouterr().out
    assert (
        "  matmul: aten.matmul provider=aten trust=checked vjp=torchlean-tape "
        "reduction=implementation-defined"
    ) in out
    assert "  relu: aten.relu provider=aten" in out
    assert "result: no admissible kernel capsule for op smooth_max_pool on device cpu" in out
    assert out.rstrip().endswith("['aten.matmul', 'aten.relu']")
    np.testing.assert_array_equal(namespace["y"].numpy(), np.full((2, 2), 3.0))


def _section_blocks(title: str) -> list[str]:
    return python_blocks(title)


def test_the_readme_saving_and_loading_blocks_round_trip(tmp_path: Path, monkeypatch: Any) -> None:
    """"Saving and predicting": the Python save block writes a checkpoint the load block reads as
    written, in the same empty folder (review57 F2: the load block read the CLI's models/iris.npz),
    and the loaded model predicts what the trainer predicts on the same standardised features, bit
    for bit; the block's own `labels` are class names."""
    from torchlean import checkpoint

    save, load = _section_blocks("Saving and predicting")
    monkeypatch.chdir(tmp_path)  # an empty directory: the save block needs none made for it
    namespace: dict[str, Any] = {}
    exec(compile(save, "docs/saving-and-predicting.md", "exec"), namespace)
    original, ds = namespace["trainer"], namespace["ds"]  # the load block rebinds `trainer`
    # the block's printed comment and the CLI transcript's test_accuracy (29 of 30 test rows)
    assert original.evaluate(ds.x_test, ds.y_test) == {"accuracy": 29 / 30}
    assert "{'accuracy': 0.9666666666666667}" in save
    exec(compile(load, "docs/saving-and-predicting.md", "exec"), namespace)
    saved = namespace["saved"]
    assert namespace["trainer"] is not original
    np.testing.assert_array_equal(
        namespace["logits"], original.predict(saved.standardise(namespace["load_iris"]().data))
    )
    np.testing.assert_array_equal(saved.build().predict(ds.x_test), original.predict(ds.x_test))
    assert set(namespace["labels"]) <= set(ds.class_names) and len(namespace["labels"]) == 150
    assert isinstance(saved, checkpoint.Checkpoint) and saved.execution == "eager"
    assert saved.profile == "checked_cpu" and "profile=checkpoint.profile_name(trainer.profile)," in save
    # the paragraph after the block: a profile of your own keeps the shipped name it came from,
    # and a checkpoint refuses it rather than record that name (review24 diff F1)
    import dataclasses

    import pytest

    from torchlean.backend.registry import CapsuleModule, maintained_modules

    relu = next(c for m in maintained_modules() for c in m.capsules if c.name == "reference.relu")
    mine = CapsuleModule("mylib", (dataclasses.replace(relu, name="mylib.relu"),))
    own = original.profile.with_capsule_modules([mine])
    assert own.name == "checked_cpu"
    refusal = r"^profile 'checked_cpu' is not a maintained profile as shipped"
    with pytest.raises(checkpoint.CheckpointError, match=refusal):
        checkpoint.profile_name(own)
    with pytest.raises(checkpoint.CheckpointError, match=refusal):
        dataclasses.replace(saved, profile=own)  # the object given to Checkpoint: the same check


def test_the_layer_of_your_own_example_trains_alike_in_both_modes() -> None:
    """"Layers of your own": the example trains under the typed graph, and eager gives its bits
    (the same seed, data and steps); the program's Python-operator form is refused by the graph
    with the ops method to use."""
    from torchlean.nn.lowering import LoweringTypeError
    from torchlean.trainer import RunConfig, Trainer

    namespace: dict[str, Any] = {}
    exec(compile(_python_blocks()[3], "docs/python.md", "exec"), namespace)
    graph = namespace["trainer"]
    eager = Trainer(namespace["ScaledResidual"](), input_shape=(4,),
                    config=RunConfig(namespace["optim"].sgd(0.1), execution="eager"))
    eager.step(np.ones((8, 4), np.float32), np.zeros((8, 4), np.float32))
    x = np.linspace(-1, 1, 8, dtype=np.float32).reshape(2, 4)
    assert np.array_equal(graph.predict(x), eager.predict(x))
    assert all(np.array_equal(graph.model.state()[k], v) for k, v in eager.model.state().items())

    class WithOperator(namespace["ScaledResidual"]):  # type: ignore[misc]
        def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
            return ops.linear(x, params[0], None) + x

    operator = Trainer(WithOperator(), input_shape=(4,), config=RunConfig(execution="typed-graph"))
    try:
        operator.predict(x)
    except LoweringTypeError as error:
        assert "write ops.add(a, b)" in str(error)
    else:
        raise AssertionError("the typed graph took h + x")
