"""``torchlean train --dropout P``: dropout layers in the CLI's model families, end to end.

Oracles: the layer lists and parameter names written out by hand from the documented recipes
(:mod:`torchlean.models`); a :class:`~torchlean.trainer.Trainer` built by hand from ``nn``
layers (not through ``build_model``) on the split :func:`torchlean.data.load` makes, for the
losses and weights of a CLI run; the CLI's eager run for its typed-graph run; the model without
dropout layers holding the same weights, for ``predict`` (dropout in evaluation is the
identity); the uninterrupted run of the same command, for ``--resume``; a count by hand of the
masks drawn (one per dropout layer and step), for the saved random counter. Refusals are one-line
errors, exit status 2, no traceback.
"""

from __future__ import annotations

import csv
import json
import math
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import arrays, cli, metadata, ok
from sklearn.datasets import load_iris

from torchlean import checkpoint, data, nn, optim
from torchlean import functional as F
from torchlean.autograd.session import Session
from torchlean.backend.errors import SessionTypeError
from torchlean.checkpoint import Checkpoint, CheckpointError, TrainingState
from torchlean.cli import main
from torchlean.models import build_model
from torchlean.nn.layers import ShapeError
from torchlean.nn.model import build
from torchlean.trainer import Objective, RunConfig, Trainer, TrainerError

IRIS = ("--dataset", "iris", "--hidden", "8")
"""120 training rows: 4 minibatches of 32 an epoch."""






def record(path: Path) -> dict[str, Any]:
    return dict(json.loads(path.read_text()))


def assert_same_arrays(a: dict[str, np.ndarray[Any, Any]], b: dict[str, np.ndarray[Any, Any]]) -> None:
    assert sorted(a) == sorted(b)
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], strict=True, err_msg=name)


@pytest.fixture(scope="module")
def images(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """60 rows of 16 features (a 4x4 image for cnn and transformer) and a class 0, 1 or 2."""
    rng = np.random.default_rng(4)
    x = rng.standard_normal((60, 16))
    y = np.argmax(x[:, :3], axis=1)
    path = tmp_path_factory.mktemp("dropout") / "images.csv"
    header = ",".join(f"p{i}" for i in range(16)) + ",y\n"
    path.write_text(header + "".join(
        ",".join(f"{v:.4f}" for v in row) + f",{c}\n" for row, c in zip(x, y, strict=True)
    ))
    return path


# ----------------------------------------------------------------------------- the layers

# the recipes of the models module docstring, written out: (layer kinds, parameter names)
LAYERS = {
    ("mlp", False): (
        ["linear", "relu", "linear", "relu", "linear"],
        ["0.weight", "0.bias", "2.weight", "2.bias", "4.weight", "4.bias"],
    ),
    ("mlp", True): (
        ["linear", "relu", "dropout", "linear", "relu", "dropout", "linear"],
        ["0.weight", "0.bias", "3.weight", "3.bias", "6.weight", "6.bias"],
    ),
    ("cnn", False): (
        ["reshape", "conv2d", "relu", "max_pool2d", "conv2d", "relu", "max_pool2d", "flatten", "linear",
         "relu", "linear"],
        ["1.weight", "1.bias", "4.weight", "4.bias", "8.weight", "8.bias", "10.weight", "10.bias"],
    ),
    ("cnn", True): (
        ["reshape", "conv2d", "relu", "max_pool2d", "conv2d", "relu", "max_pool2d", "flatten", "linear",
         "relu", "dropout", "linear"],
        ["1.weight", "1.bias", "4.weight", "4.bias", "8.weight", "8.bias", "11.weight", "11.bias"],
    ),
    ("transformer", False): (
        ["reshape", "linear", "positional_embedding", "transformer_block", "mean_pool", "linear"],
        ["1.weight", "1.bias", "2.table", *(f"3.{name}" for name in (
            "ln1.weight", "ln1.bias", "attn.wq", "attn.wk", "attn.wv", "attn.wo", "ln2.weight", "ln2.bias",
            "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")), "5.weight", "5.bias"],
    ),
    ("transformer", True): (
        ["reshape", "linear", "positional_embedding", "dropout", "transformer_block", "mean_pool", "dropout",
         "linear"],
        ["1.weight", "1.bias", "2.table", *(f"4.{name}" for name in (
            "ln1.weight", "ln1.bias", "attn.wq", "attn.wk", "attn.wv", "attn.wo", "ln2.weight", "ln2.bias",
            "fc1.weight", "fc1.bias", "fc2.weight", "fc2.bias")), "7.weight", "7.bias"],
    ),
}


def kinds(layer: Any) -> list[str]:
    names = []
    for part in layer.layers:
        kind = getattr(part, "kind", None)
        names.append(part.describe().split("(")[0] if kind is None or kind == "activation" else kind)
    return names


@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_each_family_has_its_dropout_layers_and_none_at_zero(family):
    without, shape = build_model(family, 16, 3, hidden=8)
    zero, _ = build_model(family, 16, 3, hidden=8, dropout=0.0)
    assert zero == without  # exactly today's layers: the default and 0 alike
    assert kinds(without) == LAYERS[family, False][0]
    assert build(without, input_shape=shape).names == LAYERS[family, False][1]
    dropped, _ = build_model(family, 16, 3, hidden=8, dropout=0.25)
    assert kinds(dropped) == LAYERS[family, True][0]
    assert [part.p for part in dropped.layers if getattr(part, "kind", None) == "dropout"] == [0.25] * (
        LAYERS[family, True][0].count("dropout")
    )
    model = build(dropped, input_shape=shape, seed=5)
    assert model.names == LAYERS[family, True][1]
    # no parameters of its own: the same initial weights, position for position
    plain = build(without, input_shape=shape, seed=5)
    for a, b in zip(plain.parameters, model.parameters, strict=True):
        np.testing.assert_array_equal(a, b, strict=True)


@pytest.mark.parametrize(
    ("p", "message"),
    [
        (-0.1, r"^dropout must be a real number in \[0, 1\), got -0\.1$"),
        (1, r"^dropout must be a real number in \[0, 1\), got 1\.0 \(p = 1 drops every value: nothing"),
        (1.0, r"got 1\.0 \(p = 1 drops every value"),
        (math.nan, r"got nan$"),
        (math.inf, r"got inf$"),
        (10**400, r"got inf$"),
        (True, r"got True$"),
        ("0.5", r"got '0\.5'$"),
        (None, r"got None$"),
    ],
)
def test_build_model_refuses_a_drop_probability_outside_0_1(p, message):
    with pytest.raises(ShapeError, match=message):
        build_model("mlp", 4, 3, dropout=p)


def test_build_model_takes_numpy_reals_and_negative_zero():
    layer, _ = build_model("mlp", 4, 3, dropout=np.float32(0.25))
    assert [part.p for part in layer.layers if getattr(part, "kind", None) == "dropout"] == [0.25, 0.25]
    assert build_model("mlp", 4, 3, dropout=-0.0)[0] == build_model("mlp", 4, 3)[0]


# ------------------------------------------------------------------------------ training


def hand_trainer(p: float, execution: str = "eager") -> Trainer[Any, Any]:
    """The CLI's iris mlp (hidden 8) written out with ``nn`` layers, as torchlean train builds its
    trainer (adam, lr 0.005, seed 0, float32, checked_cpu)."""
    drop = (nn.dropout(p),) if p else ()
    layer = nn.sequential(
        nn.linear(4, 8), nn.relu(), *drop, nn.linear(8, 8), nn.relu(), *drop, nn.linear(8, 3)
    )
    config = RunConfig(optimizer=optim.adam(0.005), execution=execution, dtype="float32")
    config = config.with_profile("checked_cpu")
    return Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, seed=0, input_shape=(4,))


def test_a_dropout_run_equals_a_hand_built_trainer_and_differs_from_one_without(capsys, tmp_path):
    lines = ok(capsys, *IRIS, "--epochs", "3", "--dropout", "0.3", "--save", str(tmp_path / "d.npz"),
               "--report-json", str(tmp_path / "d.json"))
    ok(capsys, *IRIS, "--epochs", "3", "--save", str(tmp_path / "n.npz"),
       "--report-json", str(tmp_path / "n.json"))
    dropped, plain = record(tmp_path / "d.json"), record(tmp_path / "n.json")
    assert lines[0].startswith("dataset=iris ") and " model=mlp dropout=0.3 parameters=139" in lines[0]
    assert (dropped["dropout"], plain["dropout"]) == (0.3, 0.0)
    assert dropped["losses"] != plain["losses"]  # not vacuous: the masks change the run
    assert "bernoulli_mask" in [c["op"] for c in dropped["capsules"]]
    assert "bernoulli_mask" not in [c["op"] for c in plain["capsules"]]

    split = data.load("iris", seed=0)
    trainer = hand_trainer(0.3)
    losses = trainer.fit(split.x_train, split.y_train, epochs=3, batch_size=32)
    assert losses == dropped["losses"]
    saved = arrays(tmp_path / "d.npz")
    for name, value in zip(trainer.model.names, trainer.model.parameters, strict=True):
        np.testing.assert_array_equal(saved["weights/" + name], value, strict=True, err_msg=name)
    assert trainer.evaluate(split.x_test, split.y_test)["accuracy"] == dropped["test_accuracy"]
    # one mask per dropout layer and step: 3 epochs of 4 steps, 2 layers; evaluation draws none
    assert trainer.random_counter == 3 * 4 * 2
    assert metadata(tmp_path / "d.npz")["training"]["random_counter"] == 24
    assert metadata(tmp_path / "n.npz")["training"]["random_counter"] == 0
    assert hand_trainer(0.0).fit(split.x_train, split.y_train, epochs=3, batch_size=32) == plain["losses"]


@pytest.mark.parametrize("family", ["mlp", "cnn", "transformer"])
def test_typed_graph_equals_eager_bit_for_bit(capsys, tmp_path, images, family):
    runs = {}
    for execution in ("eager", "typed-graph"):
        path = tmp_path / f"{execution}.npz"
        ok(capsys, "--dataset", str(images), "--model", family, "--hidden", "8", "--epochs", "2", "--dropout",
           "0.3", "--execution", execution, "--save", str(path),
           "--report-json", str(tmp_path / f"{execution}.json"))
        runs[execution] = (arrays(path), record(tmp_path / f"{execution}.json"), metadata(path))
    (ea, er, em), (ga, gr, gm) = runs["eager"], runs["typed-graph"]
    assert_same_arrays(ea, ga)
    assert er["losses"] == gr["losses"] and er["test_accuracy"] == gr["test_accuracy"]
    assert em["training"]["random_counter"] == gm["training"]["random_counter"] > 0
    assert (em["dropout"], gm["dropout"]) == (0.3, 0.3)
    # not vacuous: each draws its masks (a run without dropout trains otherwise)
    for run in (er, gr):
        assert "bernoulli_mask" in [c["op"] for c in run["capsules"]]
    ok(capsys, "--dataset", str(images), "--model", family, "--hidden", "8", "--epochs", "2", "--execution",
       "typed-graph", "--report-json", str(tmp_path / "plain.json"))
    assert record(tmp_path / "plain.json")["losses"] != gr["losses"]


# ------------------------------------------------------------------------------- predict


def read_predictions(path: Path) -> list[str]:
    with path.open(newline="") as handle:
        rows = list(csv.reader(handle))
    assert rows[0] == ["prediction"]
    return [row[0] for row in rows[1:]]


def test_predict_runs_the_saved_model_without_dropout(capsys, tmp_path):
    saved_path = tmp_path / "d.npz"
    ok(capsys, *IRIS, "--epochs", "3", "--dropout", "0.5", "--save", str(saved_path))
    runs = []
    for name in ("a.csv", "b.csv"):
        code, out, err = cli(capsys, "predict", str(saved_path), "--dataset", "iris", "--output",
                             str(tmp_path / name))
        assert (code, err) == (0, ""), err
        first = out.splitlines()[0]
        assert first.startswith(f"checkpoint={saved_path} model=mlp dropout=0.5 task=classification ")
        assert "bernoulli_mask" not in out  # no mask drawn
        runs.append(read_predictions(tmp_path / name))
    assert runs[0] == runs[1]

    saved = checkpoint.load(saved_path)
    assert saved.dropout == 0.5
    x = saved.standardise(load_iris().data)  # every row, as predict --dataset iris
    # the trained model: the hand-built trainer's, which the CLI run equals (test above)
    split = data.load("iris", seed=0)
    trainer = hand_trainer(0.5)
    trainer.fit(split.x_train, split.y_train, epochs=3, batch_size=32)
    logits = trainer.predict(x)
    assert runs[0] == [saved.classes[i] for i in logits.argmax(axis=1)]
    np.testing.assert_array_equal(saved.build().predict(x), logits, strict=True)
    # dropout in evaluation is the identity: the model without dropout layers, same weights, same logits
    layer, shape = build_model("mlp", 4, 3, hidden=8)
    plain = build(layer, input_shape=shape)
    plain.load_state(dict(zip(plain.names, trainer.model.parameters, strict=True)))
    config = RunConfig(dtype="float32").with_profile("checked_cpu")
    without = Trainer(layer, objective=Objective.CROSS_ENTROPY, config=config, input_shape=shape)
    without.model.load_state(plain.state())
    np.testing.assert_array_equal(without.predict(x), logits, strict=True)
    # not vacuous: a training-mode forward draws masks and gives other outputs
    assert not np.array_equal(trainer.predict(x), _training_forward(trainer, x))


def _training_forward(trainer: Trainer[Any, Any], x: np.ndarray[Any, Any]) -> np.ndarray[Any, Any]:
    from torchlean.nn.eager import EagerOps
    from torchlean.tensor import Tensor

    session = trainer.open()
    params = [Tensor(p) for p in trainer.model.parameters]
    with session:
        out = trainer.model.layer.forward(EagerOps(), params, Tensor(x.astype(np.float32)), training=True)
    return np.asarray(out.numpy())


# -------------------------------------------------------------------------------- resume

RESUME_CASES = {
    "eager": (*IRIS, "--dropout", "0.3"),
    "typed-graph": (*IRIS, "--dropout", "0.3", "--execution", "typed-graph"),
    "eager-validation": (*IRIS, "--dropout", "0.3", "--val-fraction", "0.2"),
    "typed-graph-validation-early-stopping": (*IRIS, "--dropout", "0.3", "--execution", "typed-graph",
                                              "--val-fraction", "0.2", "--early-stopping", "9"),
    "transformer": ("--dataset", "digits", "--model", "transformer", "--hidden", "8", "--batch-size", "512",
                    "--dropout", "0.2"),
}


@pytest.mark.parametrize("argv", RESUME_CASES.values(), ids=RESUME_CASES.keys())
def test_a_dropout_run_saved_at_2_and_resumed_to_4_equals_the_4_epoch_run(capsys, tmp_path, argv):
    whole, first, resumed = tmp_path / "whole.npz", tmp_path / "first.npz", tmp_path / "resumed.npz"
    ok(capsys, *argv, "--epochs", "4", "--save", str(whole), "--report-json", str(tmp_path / "w.json"))
    ok(capsys, *argv, "--epochs", "2", "--save", str(first))
    lines = ok(capsys, "--resume", str(first), "--epochs", "4", "--save", str(resumed),
               "--report-json", str(tmp_path / "r.json"))
    assert " dropout=" in lines[0]
    assert_same_arrays(arrays(whole), arrays(resumed))
    w, r = record(tmp_path / "w.json"), record(tmp_path / "r.json")
    assert r["losses"] == w["losses"][2:] and len(r["losses"]) == 2
    assert r["test_accuracy"] == w["test_accuracy"] and r["validation"] == w["validation"]
    assert r["dropout"] == w["dropout"] > 0
    tw, tf, tr = (metadata(path)["training"] for path in (whole, first, resumed))
    assert tw == tr
    # one mask per dropout layer and step; validation draws none (iris: 120 rows, 96 trained on
    # with --val-fraction 0.2; digits: 1437)
    rows = {"iris": 96 if "--val-fraction" in argv else 120, "digits": 1437}[argv[1]]
    batch = int(argv[argv.index("--batch-size") + 1]) if "--batch-size" in argv else 32
    assert tf["random_counter"] == 2 * -(-rows // batch) * 2
    assert tw["random_counter"] == 2 * tf["random_counter"]


def test_a_resumed_run_takes_the_checkpoints_dropout_and_refuses_another(capsys, tmp_path):
    first = tmp_path / "first.npz"
    ok(capsys, *IRIS, "--epochs", "2", "--dropout", "0.3", "--save", str(first))
    code, out, err = cli(capsys, "train", "--resume", str(first), "--epochs", "3", "--dropout", "0.5")
    assert (code, out) == (2, "")
    assert err == (
        f"error: --resume {first} continues the run with the checkpoint's settings; --dropout 0.5 differs "
        "from the checkpoint's 0.3 (leave out the option, or train a new run without --resume)\n"
    )
    plain = tmp_path / "plain.npz"
    ok(capsys, *IRIS, "--epochs", "2", "--save", str(plain))
    code, out, err = cli(capsys, "train", "--resume", str(plain), "--epochs", "3", "--dropout", "0.3")
    assert code == 2 and "--dropout 0.3 differs from the checkpoint's 0.0" in err
    lines = ok(capsys, "--resume", str(first), "--epochs", "3", "--dropout", "0.30")  # the same value
    assert " model=mlp dropout=0.3 " in lines[0]


# ------------------------------------------------------------------------------ refusals


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("-0.1", "expected a number in [0, 1), got '-0.1'"),
        ("1", "expected a number in [0, 1), got '1' (p = 1 drops every value: nothing before the dropout "
              "would train)"),
        ("nan", "expected a number in [0, 1), got 'nan'"),
        ("inf", "expected a number in [0, 1), got 'inf'"),
        ("abc", "expected a number, got 'abc'"),
        ("0,5", "expected a number, got '0,5'"),
    ],
)
def test_a_bad_dropout_is_a_one_line_error(capsys, value, message):
    code, out, err = cli(capsys, "train", "--dropout", value)
    assert (code, out, err) == (2, "", f"error: argument --dropout: {message}\n")


def test_help_names_the_option(capsys):
    code, out, _ = cli(capsys, "train", "--help")
    assert code == 0
    assert "--dropout P" in out and "drop probability P in [0, 1)" in " ".join(out.split())


# ---------------------------------------------------------------------------- checkpoint


@pytest.fixture(scope="module")
def dropped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dropout") / "d.npz"
    assert main(["train", *IRIS, "--epochs", "1", "--dropout", "0.25", "--save", str(path)]) == 0
    return path


@pytest.fixture(scope="module")
def undropped(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("dropout") / "plain.npz"
    assert main(["train", *IRIS, "--epochs", "1", "--save", str(path)]) == 0
    return path


def fields(saved: Checkpoint, **changes: Any) -> dict[str, Any]:
    values = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    values.update(changes)
    return values


def rewrite(source: Path, target: Path, **meta: Any) -> Path:
    """``source`` with metadata fields changed (``None`` removes one; ``training`` a dict of its
    fields to change)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    values = json.loads(str(entries["metadata"]))
    for name, value in meta.items():
        if name == "training":
            values["training"].update(value)
        elif value is None:
            del values[name]
        else:
            values[name] = value
    entries["metadata"] = np.array(json.dumps(values))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_the_checkpoint_keeps_the_dropout_and_rebuilds_its_layers(dropped, undropped, tmp_path):
    saved = checkpoint.load(dropped)
    assert (saved.dropout, type(saved.dropout)) == (0.25, float)
    assert list(saved.weights) == LAYERS["mlp", True][1]
    assert [getattr(part, "kind", None) for part in saved.build().model.layer.layers].count("dropout") == 2
    copy = tmp_path / "copy.npz"
    checkpoint.save(copy, saved)
    assert checkpoint.load(copy).dropout == 0.25 and metadata(copy)["dropout"] == 0.25
    # numpy floats and ints in the record's spelling
    assert Checkpoint(**fields(saved, dropout=np.float64(0.25))).dropout == 0.25
    assert metadata(undropped)["dropout"] == 0.0 and checkpoint.load(undropped).dropout == 0.0
    plain = checkpoint.load(rewrite(undropped, tmp_path / "p.npz", dropout=0))  # a hand edit: an integral 0
    assert (plain.dropout, type(plain.dropout)) == (0.0, float)


@pytest.mark.parametrize(
    ("changes", "message"),
    [
        ({"dropout": 1.0}, r"^dropout must be a real number in \[0, 1\), got 1\.0 \(p = 1"),
        ({"dropout": -0.5}, r"^dropout must be a real number in \[0, 1\), got -0\.5$"),
        ({"dropout": True}, r"got True$"),
        ({"dropout": "0.25"}, r"got '0\.25'$"),
        ({"dropout": math.nan}, r"got nan$"),
        ({"version": 1, "training": None}, r"^a version 1 checkpoint has no dropout \(version 2 does\), got "
                                           r"dropout 0\.25$"),
    ],
)
def test_the_checkpoint_refuses_a_bad_dropout(dropped, changes, message):
    with pytest.raises(CheckpointError, match=message):
        Checkpoint(**fields(checkpoint.load(dropped), **changes))


def test_the_weights_of_another_layer_list_are_refused_naming_the_dropout(dropped):
    saved = checkpoint.load(dropped)
    refusal = (r"do not match model mlp \(features 4, outputs 3, hidden 8\): missing \['2.weight', "
               r"'2.bias', '4.weight', '4.bias'\], unexpected \['3.weight', ")
    with pytest.raises(CheckpointError, match=refusal):  # no training settings: the weights decide
        Checkpoint(**fields(saved, dropout=0.0, training=None))
    # with the run's settings, their dropout 0.25 disagrees first (review69 F2)
    with pytest.raises(CheckpointError, match=r"the checkpoint's dropout 0\.0 and its training settings' "
                                              r"dropout '0\.25' differ \(one of them was edited\)"):
        Checkpoint(**fields(saved, dropout=0.0))
    with pytest.raises(CheckpointError, match=r"hidden 8, dropout 0\.25\): missing \[\]"):
        Checkpoint(**fields(saved, weights={**saved.weights, "2.weight": saved.weights["3.weight"]}))


def test_load_names_a_bad_dropout_field(dropped, tmp_path):
    cases = [
        (rewrite(dropped, tmp_path / "none.npz", dropout=None),
         r"none.npz: metadata field 'dropout' is missing$"),
        (rewrite(dropped, tmp_path / "text.npz", dropout="0.25"),
         r"text.npz: metadata field 'dropout' must be a number, got '0.25'$"),
        (rewrite(dropped, tmp_path / "bool.npz", dropout=False),
         r"bool.npz: metadata field 'dropout' must be a number, got False$"),
        (rewrite(dropped, tmp_path / "one.npz", dropout=1),
         r"one.npz: dropout must be a real number in \[0, 1\), got 1\.0 \(p = 1"),
        (rewrite(dropped, tmp_path / "big.npz", dropout=10**400),
         r"big.npz: dropout must be a real number in \[0, 1\), got inf$"),
        (rewrite(dropped, tmp_path / "counter.npz", training={"random_counter": "8"}),
         r"counter.npz: training random_counter must be an int, got '8'$"),
        (rewrite(dropped, tmp_path / "negative.npz", training={"random_counter": -1}),
         r"negative.npz: training random_counter must be an int in \[0, 2\*\*64\), got -1$"),
    ]
    for path, message in cases:
        with pytest.raises(CheckpointError, match=message):
            checkpoint.load(path)


def test_a_version_1_file_loads_with_dropout_0(undropped, tmp_path):
    """A version 1 file (no ``dropout`` field, no training state) of a model without dropout: the
    format torchlean wrote before, as checkpoint.save writes it for version=1."""
    old = checkpoint.load(undropped)
    v1 = tmp_path / "v1.npz"
    version_1 = fields(old, training=None, version=1, environment=None, torch_threads=None, data_sha256=None,
                       capsules=None, capsules_order=None)
    checkpoint.save(v1, Checkpoint(**version_1))
    assert "dropout" not in metadata(v1) and metadata(v1)["version"] == 1
    loaded = checkpoint.load(v1)
    assert (loaded.dropout, loaded.version) == (0.0, 1)
    # a version 1 file may not carry one
    with pytest.raises(CheckpointError, match=r"unexpected metadata fields: 'dropout' \(version 1 writes: "):
        checkpoint.load(rewrite(v1, tmp_path / "v1d.npz", dropout=0.25))


@pytest.mark.parametrize(
    ("counter", "message"),
    [
        (-1, r"^training random_counter must be an int in \[0, 2\*\*64\), got -1$"),
        (2**64, r"got 18446744073709551616$"),
        (True, r"got True$"),
        (1.0, r"got 1\.0$"),
        ("3", r"got '3'$"),
    ],
)
def test_training_state_refuses_a_bad_random_counter(counter, message):
    with pytest.raises(CheckpointError, match=message):
        TrainingState(epochs_done=1, epochs=2, optimizer={}, settings={}, random_counter=counter)


def test_training_state_takes_a_numpy_counter_and_defaults_to_0():
    state = TrainingState(epochs_done=1, epochs=2, optimizer={}, settings={},
                          random_counter=np.uint64(2**64 - 1))
    assert (state.random_counter, type(state.random_counter)) == (2**64 - 1, int)
    assert TrainingState(epochs_done=1, epochs=2, optimizer={}, settings={}).random_counter == 0


# ------------------------------------------------------------------- the counter's API


def test_a_session_set_to_another_sessions_counter_draws_what_it_draws_next():
    first, second = Session(seed=7), Session(seed=7)
    with first:
        masks = [F.bernoulli_mask((50,), 0.5).numpy() for _ in range(3)]
    assert first.random_counter == 3
    second.random_counter = np.int64(2)
    with second:
        np.testing.assert_array_equal(F.bernoulli_mask((50,), 0.5).numpy(), masks[2], strict=True)
        assert not np.array_equal(masks[1], masks[2])  # not vacuous: draws differ
    assert second.random_counter == 3
    for bad in (-1, 2**64, True, 1.5, "2"):
        with pytest.raises(SessionTypeError, match=r"random_counter .* is not accepted \(accepted: an int"):
            second.random_counter = bad  # type: ignore[assignment]


def test_a_trainer_counter_set_before_its_session_opens_is_the_sessions():
    split = data.load("iris", seed=0)
    ran = hand_trainer(0.3)
    ran.fit(split.x_train, split.y_train, epochs=1, batch_size=32)
    assert ran.random_counter == 8
    follower = hand_trainer(0.3)
    assert follower.random_counter == 0
    follower.random_counter = ran.random_counter
    follower.model.load_state(ran.model.state())
    follower.optimizer.load_state_dict(ran.optimizer.state_dict())
    follower.epochs_done = 1
    assert follower.open().random_counter == 8
    expected = ran.fit(split.x_train, split.y_train, epochs=1, batch_size=32)
    assert follower.fit(split.x_train, split.y_train, epochs=1, batch_size=32) == expected
    assert follower.random_counter == ran.random_counter == 16
    follower.random_counter = 3  # an open session is set too
    assert follower.open().random_counter == 3
    for bad in (-1, 2**64, True, 1.5):
        with pytest.raises(TrainerError, match=r"random_counter must be an integer in \[0, 2\*\*64\), got"):
            follower.random_counter = bad  # type: ignore[assignment]
