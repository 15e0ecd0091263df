"""``Trainer[In, Out]``: eager and typed-graph execution agree bit for bit; RunConfig device and
profile resolution with the messages of anchor-backend.md §3.1/§7; data validation; the epoch
schedule; predict/evaluate against independent computations."""

from __future__ import annotations

import copy
import pickle
import re

import numpy as np
import pytest
import torch

from torchlean import data, nn, optim
from torchlean.autograd.session import BANNER, Session
from torchlean.backend import profiles
from torchlean.backend.errors import SessionError, TorchLeanError, UnknownLabelError
from torchlean.backend.vocabulary import Device, Provider, VJPMode
from torchlean.models import build_model
from torchlean.nn.eager import EagerOps
from torchlean.optim import OptimizerError
from torchlean.tensor import Tensor
from torchlean.trainer import (
    ExecutionMode,
    Objective,
    RunConfig,
    Trainer,
    TrainerError,
    maintained_profile,
    session_seed,
)

EAGER, GRAPH = ExecutionMode.EAGER, ExecutionMode.TYPED_GRAPH


@pytest.fixture(scope="module")
def digits() -> data.Dataset:
    return data.load("digits", seed=0)


def make(layer, *, mode=EAGER, objective=Objective.MSE, optimizer=None, seed=0, input_shape=None, **config):
    run = RunConfig(optimizer=optimizer or optim.adam(0.01), execution=mode, **config)
    return Trainer(layer, objective=objective, config=run, seed=seed, input_shape=input_shape)


def train_both(layer_fn, x, y, *, objective, epochs=2, batch_size=16, input_shape=None, **kwargs):
    """Train the same model eagerly and from the typed graph; return both trainers and histories."""
    runs = []
    for mode in (EAGER, GRAPH):
        trainer = make(layer_fn(), mode=mode, objective=objective, input_shape=input_shape, **kwargs)
        history = trainer.fit(x, y, epochs=epochs, batch_size=batch_size)
        runs.append((trainer, history))
    return runs


def assert_bit_identical(runs):
    (eager, eager_losses), (graph, graph_losses) = runs
    assert eager_losses == graph_losses  # exact float equality, epoch by epoch
    assert len(eager.model.parameters) == len(graph.model.parameters)
    for a, b in zip(eager.model.parameters, graph.model.parameters, strict=True):
        assert np.array_equal(a, b)
    assert [k.capsule.name for k in eager.selected] == [k.capsule.name for k in graph.selected]


# ------------------------------------------------------------------- eager == typed graph


def test_mlp_mse_bit_identical():
    rng = np.random.default_rng(0)
    x = rng.standard_normal((50, 4)).astype(np.float32)
    y = (x @ np.array([0.5, -1.0, 0.25, 2.0]) + 0.1).astype(np.float32)
    runs = train_both(
        lambda: nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)),
        x,
        y,
        objective=Objective.MSE,
        epochs=3,
    )
    assert_bit_identical(runs)
    (eager, losses), (graph, _) = runs
    assert losses[-1] < losses[0]
    x_test = rng.standard_normal((7, 4)).astype(np.float32)
    assert np.array_equal(eager.predict(x_test), graph.predict(x_test))
    assert [k.capsule.name for k in eager.selected] == [
        "reference.linear",
        "reference.relu",
        "reference.mse_loss",
    ]


def test_mlp_cross_entropy_bit_identical_float64(digits):
    x, y = digits.x_train[:96].astype(np.float64), digits.y_train[:96]
    runs = train_both(
        lambda: nn.sequential(nn.linear(64, 16), nn.tanh(), nn.linear(16, 10)),
        x,
        y,
        objective=Objective.CROSS_ENTROPY,
        dtype="float64",
        batch_size=32,
    )
    assert_bit_identical(runs)
    assert runs[0][0].model.parameters[0].dtype == np.float64


def test_cnn_bit_identical(digits):
    x, y = digits.x_train[:48], digits.y_train[:48]
    runs = train_both(
        lambda: build_model("cnn", 64, 10, hidden=8)[0],
        x,
        y,
        input_shape=(64,),
        objective=Objective.CROSS_ENTROPY,
    )
    assert_bit_identical(runs)
    names = [k.capsule.name for k in runs[0][0].selected]
    assert names[:4] == ["reference.reshape", "reference.conv", "reference.relu", "reference.max_pool"]


@pytest.mark.parametrize("profile", ["checked_cpu", "libtorch_forward_cpu"])
def test_transformer_bit_identical(digits, profile):
    x, y = digits.x_train[:40], digits.y_train[:40]
    runs = train_both(
        lambda: build_model("transformer", 64, 10, hidden=16)[0],
        x,
        y,
        input_shape=(64,),
        objective=Objective.CROSS_ENTROPY,
        epochs=1,
        profile=profile,
    )
    assert_bit_identical(runs)
    attention = [k.capsule.name for k in runs[0][0].selected if k.op.label == "scaled_dot_product_attention"]
    assert attention == ["reference.attention" if profile == "checked_cpu" else "libtorch.sdpa_forward"]


@pytest.mark.parametrize("model", ["mlp", "cnn", "transformer"])
def test_checked_cpu_outputs_of_a_row_do_not_depend_on_its_batch(digits, model):
    # review159 F2 (README, "Where the bits of fast_cpu can differ"): under checked_cpu a row's
    # output is the same bits alone, in batches of any height, and at any position in its batch
    x = digits.x_test[:37]
    trainer = make(build_model(model, 64, 10, hidden=8)[0], objective=Objective.CROSS_ENTROPY,
                   input_shape=(64,), profile="checked_cpu")
    trainer.fit(digits.x_train[:32], digits.y_train[:32], epochs=1, batch_size=16)
    whole = trainer.predict(x)
    order = np.random.default_rng(2).permutation(x.shape[0])
    shuffled = np.empty_like(whole)
    shuffled[order] = trainer.predict(x[order], batch_size=5)
    alone = np.concatenate([trainer.predict(x[i : i + 1]) for i in range(x.shape[0])])
    assert np.array_equal(whole, trainer.predict(x, batch_size=1))
    assert np.array_equal(whole, shuffled)
    assert np.array_equal(whole, alone)


def test_capsules_in_first_use_order_all_reference():
    trainer = make(
        nn.sequential(nn.linear(3, 4), nn.sigmoid(), nn.linear(4, 2)), objective=Objective.CROSS_ENTROPY
    )
    trainer.fit(np.ones((4, 3)), np.array([0, 1, 1, 0]), epochs=1)
    selected = trainer.selected
    assert [k.capsule.name for k in selected] == [
        "reference.linear",
        "reference.sigmoid",
        "reference.log_softmax",
        "reference.mul",
        "reference.reduce_sum",
    ]
    for kernel in selected:
        c = kernel.capsule
        assert (c.provider.label, c.device.label, c.trust_level.label, c.vjp_mode.label) == (
            "reference",
            "cpu",
            "checked",
            "torchlean-tape",
        )


def test_typed_graph_runs_from_the_accepted_graph_plan(capsys):
    """Typed graph: the kernels come from ``accept_graph`` (the eager session selects nothing), and
    ``show_backend`` reports each graph kernel once."""
    trainer = make(nn.sequential(nn.linear(2, 3), nn.relu(), nn.linear(3, 1)), mode=GRAPH, show_backend=True)
    trainer.fit(np.ones((5, 2)), np.zeros(5), epochs=2, batch_size=2)  # batch shapes (2, 2) and (1, 2)
    assert trainer.open().selected == []
    names = [k.capsule.name for k in trainer.selected]
    assert names == ["reference.linear", "reference.relu", "reference.mse_loss"]
    out = capsys.readouterr().out.splitlines()
    assert out[0] == BANNER
    assert len(out) == 1 + 5 * 3
    assert out[1] == (
        "  linear: reference.linear provider=reference trust=checked vjp=torchlean-tape reduction=fixed-left"
    )


def test_dropout_model_trains_from_the_typed_graph_as_eagerly():
    """A training dropout's mask is a graph input drawn by the session's bernoulli_mask, in eager's
    order (tests/training/test_typed_graph_dropout_bn.py covers many more models)."""
    layer = nn.sequential(nn.linear(3, 8), nn.relu(), nn.dropout(0.5), nn.linear(8, 1))
    x, y = np.random.default_rng(2).standard_normal((6, 3)), np.ones(6)
    runs = [make(layer, mode=mode) for mode in (EAGER, GRAPH)]
    histories = [trainer.fit(x, y, epochs=2, batch_size=4) for trainer in runs]
    assert histories[0] == histories[1]
    assert all(np.array_equal(a, b) for a, b in zip(*(t.model.parameters for t in runs), strict=True))
    np.testing.assert_array_equal(runs[0].predict(x), runs[1].predict(x))


# ------------------------------------------------------------------------------ RunConfig


def test_run_config_defaults():
    config = RunConfig()
    assert config.optimizer == optim.sgd(lr=0.01)
    assert (config.execution, config.device, config.profile, config.show_backend, config.dtype) == (
        EAGER,
        Device.CPU,
        None,
        False,
        "float32",
    )
    assert config.resolve_profile().name == "checked_cpu"
    assert RunConfig(device=Device.CUDA).resolve_profile().name == "checked_cuda"
    assert maintained_profile(Device.CPU).name == "checked_cpu"


def test_with_device_without_maintained_profile():
    message = (
        "device `metal` has no maintained runtime profile; provide a backend profile with executable capsules"
    )
    with pytest.raises(TrainerError) as caught:
        RunConfig().with_device(Device.METAL)
    assert str(caught.value) == message
    with pytest.raises(TrainerError) as caught:
        RunConfig(device=Device.METAL).resolve_profile()
    assert str(caught.value) == message


def test_profile_override_must_target_the_requested_device():
    with pytest.raises(TrainerError) as caught:
        RunConfig(profile="checked_cuda").resolve_profile()
    assert str(caught.value) == (
        "backend profile `checked_cuda` targets `cuda`, but the runtime requested `cpu`"
    )
    # review34 F7: the way out, in a note (the message is the original's)
    assert caught.value.__notes__ == [
        "RunConfig(profile=...) keeps its device (cpu); RunConfig(...).with_profile('checked_cuda') sets "
        "both, or give device='cuda' too"
    ]
    with pytest.raises(TrainerError) as caught:
        RunConfig(device=Device.CUDA, profile=profiles.get("libtorch_forward_cpu")).resolve_profile()
    assert str(caught.value) == (
        "backend profile `libtorch_forward_cpu` targets `cpu`, but the runtime requested `cuda`"
    )


def test_with_profile_then_with_device_last_writer_wins():
    config = RunConfig().with_profile("checked_cuda")
    assert config.device is Device.CUDA
    assert config.resolve_profile().name == "checked_cuda"
    back = config.with_device(Device.CPU)
    assert (back.device, back.profile) == (Device.CPU, None)
    assert back.resolve_profile().name == "checked_cpu"
    assert RunConfig().with_profile("libtorch_forward_cpu").resolve_profile().name == "libtorch_forward_cpu"


def test_unknown_profile_and_labels():
    with pytest.raises(UnknownLabelError, match="unknown profile nope"):
        RunConfig(profile="nope").resolve_profile()
    with pytest.raises(UnknownLabelError) as caught:
        ExecutionMode.parse("graph")
    assert str(caught.value) == "unknown execution mode graph (known: eager | typed-graph)"
    assert ExecutionMode.parse("typed-graph") is GRAPH
    assert Objective.parse("cross-entropy") is Objective.CROSS_ENTROPY


def test_typed_graph_on_cuda_is_refused_when_the_session_opens():
    config = RunConfig(execution=GRAPH).with_device(Device.CUDA)  # building the config opens nothing
    trainer = Trainer(nn.linear(2, 1), config=config)
    with pytest.raises(TrainerError) as caught:
        trainer.open()
    assert str(caught.value) == "typed graph execution currently supports device `cpu`; requested `cuda`"


@pytest.mark.skipif(torch.cuda.is_available(), reason="needs a machine without CUDA")
def test_checked_cuda_without_cuda_fails_at_open():
    trainer = Trainer(nn.linear(2, 1), config=RunConfig().with_profile("checked_cuda"))
    with pytest.raises(SessionError) as caught:
        trainer.fit(np.ones((2, 2)), np.ones(2))
    message = str(caught.value)
    assert message.startswith("torch eager session: CUDA was requested")
    assert "\n" not in message


def test_run_config_accepts_labels():
    """``execution``/``device`` take the enums' labels, parsed by ``parse`` and stored as members."""
    config = RunConfig(execution="typed-graph", device="cuda")
    assert (config.execution, config.device) == (GRAPH, Device.CUDA)
    assert config == RunConfig(execution=GRAPH, device=Device.CUDA)
    assert RunConfig(execution="eager", device="cpu") == RunConfig()
    assert RunConfig().with_device("cuda").device is Device.CUDA
    assert RunConfig(profile="fast_cpu").resolve_profile().name == "fast_cpu"


def test_typed_graph_label_really_selects_the_typed_graph():
    """The label is not silently eager: with ids that never hold the padding row, eager looks an
    embedding with a padding_idx up by one gather, while the typed graph (fixed for every
    minibatch) gathers from concat [table, detach table]; and the typed graph refuses CUDA."""
    layer = nn.sequential(nn.embedding(5, 3, padding_idx=0), nn.flatten(), nn.linear(6, 1))
    x, y = np.array([[1, 2], [2, 4], [3, 3], [1, 4]]), np.ones(4)
    ops = {}
    for mode in ("eager", "typed-graph"):
        trainer = Trainer(layer, config=RunConfig(execution=mode), input_shape=(2,))
        trainer.fit(x, y)
        ops[mode] = {kernel.op.label for kernel in trainer.selected}
    assert "gather" in ops["eager"] and "concat" not in ops["eager"]
    assert "concat" in ops["typed-graph"]
    with pytest.raises(TrainerError) as caught:
        Trainer(nn.linear(2, 1), config=RunConfig(execution="typed-graph", device="cuda")).open()
    assert str(caught.value) == "typed graph execution currently supports device `cpu`; requested `cuda`"


DEVICES = "cpu | cuda | rocm | metal | wasm | tpu | trainium | custom | external"
RECORD = (
    "optimizer must be an optimizer record "
    "(optim.sgd(...) | optim.adam(...) | optim.adamw(...) | optim.rmsprop(...) | optim.adagrad(...))"
)
MODES = "execution must be one of the labels eager | typed-graph or a member of ExecutionMode"


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"execution": "bogus"}, "unknown execution mode bogus (known: eager | typed-graph)"),
        ({"execution": "Eager"},
         "unknown execution mode Eager (known: eager | typed-graph); did you mean eager?"),
        ({"device": "gpu"}, f"unknown device gpu (known targets: {DEVICES})"),
        ({"profile": "nope"}, "unknown profile nope (known: {profiles})"),
    ],
)
def test_run_config_unknown_labels(kwargs, message):
    with pytest.raises(TrainerError) as caught:
        RunConfig(**kwargs)
    assert isinstance(caught.value, UnknownLabelError)
    assert str(caught.value) == message.format(profiles=" | ".join(profiles.names()))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"execution": 1}, f"{MODES}, got 1"),
        ({"execution": None}, f"{MODES}, got None"),
        (
            {"device": Provider.REFERENCE},
            f"device must be one of the labels {DEVICES} or a member of Device, "
            "got <Provider.REFERENCE: 'reference'>",
        ),
        ({"optimizer": None}, f"{RECORD}, got None"),
        ({"optimizer": "adam"}, f"{RECORD}, got 'adam'"),
        ({"optimizer": optim.SGD}, f"{RECORD}, got {optim.SGD!r}"),
        ({"show_backend": 1}, "show_backend must be a bool, got 1"),
        ({"show_backend": "yes"}, "show_backend must be a bool, got 'yes'"),
        ({"show_backend": np.int64(1)}, "show_backend must be a bool, got np.int64(1)"),
        ({"dtype": "float16"}, "dtype must be float32 or float64, got float16"),
        ({"dtype": "floaty"}, "dtype must be float32 or float64, got floaty"),
        ({"dtype": np.float16}, "dtype must be float32 or float64, got float16"),
        ({"dtype": np.dtype("int32")}, "dtype must be float32 or float64, got int32"),
        (
            {"dtype": ">f8"},
            "dtype must be float32 or float64, got >f8 (big-endian; accepted: native byte order)",
        ),
        ({"dtype": torch.float16}, "dtype must be float32 or float64, got float16"),
        ({"dtype": None}, "dtype must be float32 or float64, got None"),
        ({"dtype": 5}, "dtype must be float32 or float64, got 5"),
        ({"profile": 3}, "profile must be a profile name ({profiles}), a BackendProfile or None, got 3"),
    ],
)
def test_run_config_fields_are_checked_when_built(kwargs, message):
    with pytest.raises(TrainerError) as caught:
        RunConfig(**kwargs)
    assert str(caught.value) == message.format(profiles=" | ".join(profiles.names()))


@pytest.mark.parametrize(
    ("dtype", "name"),
    [
        ("float32", "float32"),
        ("float64", "float64"),
        (np.float32, "float32"),
        (np.float64, "float64"),
        (np.dtype("float64"), "float64"),
        (np.dtype(np.float32), "float32"),
        ("f8", "float64"),
        (torch.float64, "float64"),
        (torch.float32, "float32"),
        (float, "float64"),
    ],
)
def test_run_config_dtype_accepts_what_numpy_resolves_to_a_float(dtype, name):
    """As ``tl.tensor``, ``nn.build`` and ``data.load``: any spelling ``np.dtype`` resolves to
    float32/float64 is accepted and stored as the canonical string; the model gets that dtype."""
    config = RunConfig(dtype=dtype)
    assert config.dtype == name and type(config.dtype) is str
    assert config.numpy_dtype() == np.dtype(name)
    assert config == RunConfig(dtype=name)
    assert Trainer(nn.linear(2, 1), config=config).model.dtype == np.dtype(name)


@pytest.mark.parametrize("flag", [np.True_, np.False_])
def test_run_config_show_backend_accepts_numpy_bools(flag):
    config = RunConfig(show_backend=flag)
    assert config.show_backend is bool(flag)
    assert config == RunConfig(show_backend=bool(flag))


def test_with_device_and_with_profile_check_their_argument():
    with pytest.raises(UnknownLabelError, match=r"^unknown device gpu \(known targets: cpu \| cuda"):
        RunConfig().with_device("gpu")
    with pytest.raises(TrainerError, match=r"^device `metal` has no maintained runtime profile"):
        RunConfig().with_device("metal")
    with pytest.raises(TrainerError, match=r"^with_profile needs a profile name or a BackendProfile"):
        RunConfig().with_profile(None)
    with pytest.raises(TrainerError, match=r"^profile must be a profile name .*, got 3$"):
        RunConfig().with_profile(3)


@pytest.mark.parametrize("seed", [-1, 2**64, np.int64(-1), True, np.True_, 1.5, "0"])
def test_trainer_seed_must_be_in_the_session_range(seed):
    with pytest.raises(TrainerError) as caught:
        Trainer(nn.linear(2, 1), seed=seed)
    assert str(caught.value) == f"seed must be an integer in [0, 2**64), got {seed!r}"


@pytest.mark.parametrize("seed", [2**32, 2**40, 2**64 - 1, np.uint64(2**64 - 1)])
def test_trainer_big_seeds_are_reproducible(seed):
    """Seeds up to ``2**64 - 1`` (as ``tl.session``) initialise as ``nn.build`` with that seed and
    shuffle by ``default_rng([seed, epoch])``: two trainers with the same seed train identically."""
    x, y = np.arange(24.0).reshape(12, 2) / 10, np.arange(12.0) / 10
    a, b = Trainer(nn.linear(2, 1), seed=seed), Trainer(nn.linear(2, 1), seed=int(seed))
    assert a.seed == int(seed) and type(a.seed) is int
    built = nn.build(nn.linear(2, 1), seed=int(seed))
    for got, want in zip(a.model.parameters, built.parameters, strict=True):
        np.testing.assert_array_equal(got, want)
    assert a.fit(x, y, epochs=2, batch_size=5) == b.fit(x, y, epochs=2, batch_size=5)
    order = np.random.default_rng([int(seed), 0]).permutation(12)
    first = next(xb for xb, _ in a.batches(x, y, 5, shuffle=True, epoch=0))
    np.testing.assert_array_equal(first, x[order[:5]])
    assert a.open().seed == session_seed(int(seed))


@pytest.mark.parametrize("seed", [None, -1, 1.5, "3", True, 2**64, [1, 2], np.float64(3.0)])
def test_session_seed_refuses_what_a_trainer_refuses(seed):
    """review220 F1: ``session_seed(None)`` drew a fresh seed from the operating system on every
    call (numpy's SeedSequence(None)); the others escaped as numpy errors or were hashed."""
    with pytest.raises(TrainerError) as info:
        session_seed(seed)
    assert str(info.value) == f"session_seed: seed must be an integer in [0, 2**64), got {seed!r}"
    with pytest.raises(TrainerError, match=r"^seed must be an integer in \[0, 2\*\*64\)"):
        Trainer(nn.linear(2, 1), seed=seed)
    assert session_seed(np.uint64(2**64 - 1)) == session_seed(2**64 - 1)


def test_consecutive_trainer_seeds_draw_unrelated_dropout_masks():
    """A session's seeds ``s`` and ``s + 1`` share one stream a draw apart (the original's keyOf);
    a trainer opens its session with ``session_seed(seed)``, a SeedSequence child of its seed, so
    trainer seeds 0 and 1 (a seed sweep) draw unrelated masks, and each replays its own."""
    seeds = [session_seed(s) for s in range(4)]
    assert len(set(seeds)) == 4 and all(0 <= s < 2**64 for s in seeds)
    assert seeds[0] == int(np.random.SeedSequence(0, spawn_key=(0x5E5510,)).generate_state(1, np.uint64)[0])
    assert min(abs(a - b) for a in seeds for b in seeds if a != b) > 2**32
    zero, one = (
        _session_masks(Trainer(nn.dropout(0.5), seed=s, input_shape=(16,)).open(), 4) for s in (0, 1)
    )
    assert not any(np.array_equal(one[k], zero[k + 1]) for k in range(3))
    assert not any(np.array_equal(one[k], zero[k]) for k in range(4))
    again = _session_masks(Trainer(nn.dropout(0.5), seed=0, input_shape=(16,)).open(), 4)
    assert all(np.array_equal(a, b) for a, b in zip(zero, again, strict=True))
    # the original's schedule, kept for a session opened directly: one draw apart
    direct = [_session_masks(Session(profiles.get("checked_cpu"), seed=s), 4) for s in (0, 1)]
    assert all(np.array_equal(direct[1][k], direct[0][k + 1]) for k in range(3))


def _session_masks(session: Session, steps: int) -> list[np.ndarray]:
    """The masks of ``steps`` dropout calls (p = 0.5, the session's seed) in ``session``."""
    from torchlean import functional as F

    with session:
        return [F.dropout(Tensor(np.ones((4, 16))), 0.5).numpy() != 0 for _ in range(steps)]


def test_trainer_seed_edges():
    """The top CLI seed works; a numpy seed trains exactly as the same int seed."""
    x, y = np.arange(12.0).reshape(6, 2) / 10, np.arange(6.0) / 10
    assert len(Trainer(nn.linear(2, 1), seed=2**32 - 1).fit(x, y, batch_size=2)) == 1
    a, b = Trainer(nn.linear(2, 1), seed=np.int64(5)), Trainer(nn.linear(2, 1), seed=5)
    assert a.fit(x, y, epochs=2, batch_size=2) == b.fit(x, y, epochs=2, batch_size=2)
    assert a.seed == 5 and type(a.seed) is int


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": "linear"}, "layer must be a Layer (e.g. nn.linear(4, 1)), got str 'linear'"),
        ({"config": "eager"}, "config must be a RunConfig or None, got 'eager'"),
        ({"objective": "hinge"}, "unknown objective hinge (known: mse | cross-entropy)"),
        (
            {"objective": 0},
            "objective must be one of the labels mse | cross-entropy or a member of Objective, got 0",
        ),
    ],
)
def test_trainer_arguments_are_checked(kwargs, message):
    layer = kwargs.pop("layer", nn.linear(2, 1))
    with pytest.raises(TrainerError) as caught:
        Trainer(layer, **kwargs)
    assert str(caught.value) == message


def test_objective_label_selects_the_objective():
    trainer = Trainer(nn.linear(2, 3), objective="cross-entropy")
    assert trainer.objective is Objective.CROSS_ENTROPY
    assert set(trainer.evaluate(np.ones((2, 2)), np.array([0, 2]))) == {"accuracy"}


def test_bad_dtype():
    with pytest.raises(TrainerError, match=r"^dtype must be float32 or float64, got float16$"):
        Trainer(nn.linear(2, 1), config=RunConfig(dtype="float16"))


def test_an_out_of_domain_optimizer_is_refused_before_a_trainer_exists():
    message = r"^optimizer: learning rate must be finite and nonnegative, got -1\.0$"
    with pytest.raises(OptimizerError, match=message):
        RunConfig(optimizer=optim.adam(lr=-1.0))
    with pytest.raises(OptimizerError, match="momentum must be finite"):
        optim.sgd(momentum=1.0)


# ---------------------------------------------------------------------------- data checks


def classifier() -> Trainer:
    return make(nn.linear(3, 4), objective=Objective.CROSS_ENTROPY)


LABELS = "cross-entropy labels must be integers in [0, 4)"


@pytest.mark.parametrize(
    ("y", "message"),
    [
        (np.array([0, 1, 4]), f"{LABELS}, got dtype int64 with range [0, 4]"),
        (np.array([-1, 1, 2]), f"{LABELS}, got dtype int64 with range [-1, 2]"),
        (np.array([0.0, 1.0, 2.0]),
         f"{LABELS}, got dtype float64 (integral values can be cast with .astype(np.int64))"),  # review106 L3
        (np.array([0.0, 1.5, 2.0]), f"{LABELS}, got dtype float64"),
        (np.zeros((3, 3)), "cross-entropy targets must be labels (n,) or one-hot (n, 4), got (3, 3)"),
        (np.array([0, 1]), "got 3 inputs but 2 targets"),
    ],
)
def test_label_validation(y, message):
    with pytest.raises(TrainerError) as caught:
        classifier().fit(np.zeros((3, 3)), y)
    assert str(caught.value) == message


def test_one_hot_targets_equal_integer_labels():
    x = np.random.default_rng(0).standard_normal((6, 3))
    labels = np.array([0, 1, 2, 3, 0, 1])
    a, b = classifier(), classifier()
    assert a.fit(x, labels, epochs=2, batch_size=4) == b.fit(x, np.eye(4)[labels], epochs=2, batch_size=4)


_ROWS_3 = "(n = 3, the inputs' rows; the model's output shape is (1,))"


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.zeros((3, 2)), np.zeros(3), "inputs must have shape (n, 3), got (3, 2)"),
        (np.zeros(3), np.zeros(1), "inputs must have shape (n, 3), got (3,)"),
        (np.zeros((3, 3)), np.zeros((3, 2)), f"targets must have shape (n, 1) or (n,) {_ROWS_3}, got (3, 2)"),
        (
            np.zeros((3, 3)),
            np.zeros((3, 1, 1)),
            f"targets must have shape (n, 1) or (n,) {_ROWS_3}, got (3, 1, 1)",
        ),
        (np.zeros((0, 3)), np.zeros(0), "no training samples; check the dataset and batch size"),
    ],
)
def test_regression_data_validation(x, y, message):
    with pytest.raises(TrainerError) as caught:
        make(nn.linear(3, 1)).fit(x, y)
    assert str(caught.value) == message


_NOT_DATA = (
    "(accepted: real numbers with one row per sample: a numpy array, a torchlean Tensor or nested lists)"
)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (lambda t, x: t.fit(x, None), "targets: None of type NoneType is not target data"),
        (lambda t, x: t.fit(None, np.zeros(3)), "inputs: None of type NoneType is not input data"),
        (lambda t, x: t.fit(x, "abc"), "targets: 'abc' of type str is not target data"),
        (lambda t, x: t.fit(x, {"y": 1}), "targets: {'y': 1} of type dict is not target data"),
        (
            lambda t, x: t.fit(x, np.zeros(3), validation=(x, None)),
            "validation data: targets: None of type NoneType is not target data",
        ),
        (lambda t, x: t.step(x, None), "targets: None of type NoneType is not target data"),
        (lambda t, x: t.evaluate(x, None), "targets: None of type NoneType is not target data"),
        (lambda t, x: t.evaluate(None, np.zeros(3)), "inputs: None of type NoneType is not input data"),
        (lambda t, x: t.predict(None), "inputs: None of type NoneType is not input data"),
    ],
    ids=[
        "fit-y", "fit-x", "fit-y-str", "fit-y-dict", "validation-y", "step-y", "evaluate-y", "evaluate-x",
        "predict",
    ],
)
def test_none_is_refused_as_not_data_not_by_its_shape(call, message):
    """review52 F14: ``fit(x, None)`` said "targets must have shape (n, 1) or (n,) ..., got ()"
    and ``predict(None)`` "inputs must be real numbers ..., got dtype object"."""
    with pytest.raises(TrainerError) as caught:
        call(make(nn.linear(3, 1)), np.zeros((3, 3)))
    assert str(caught.value) == f"{message} {_NOT_DATA}"


def test_mse_target_refusal_names_every_shape_fit_accepts():
    """review48 F9: for a ``(1,)`` output, fit takes ``(n, 1)`` and ``(n,)`` targets (a vector is
    read as a column), so the refusal names both; for a wider output only ``(n, *output_shape)``."""
    x = np.random.default_rng(0).standard_normal((8, 4))
    y = x @ np.array([1.0, -2.0, 0.5, 3.0])
    column, vector = make(nn.linear(4, 1)), make(nn.linear(4, 1))
    assert column.fit(x, y[:, None], epochs=2, batch_size=4) == vector.fit(x, y, epochs=2, batch_size=4)
    with pytest.raises(TrainerError) as caught:
        make(nn.linear(4, 1)).fit(x, np.zeros((8, 2)))
    assert str(caught.value) == (
        "targets must have shape (n, 1) or (n,) (n = 8, the inputs' rows; the model's output shape is (1,)), "
        "got (8, 2)"
    )
    with pytest.raises(TrainerError) as caught:
        make(nn.linear(4, 2)).fit(x, np.zeros((8, 3)))
    assert str(caught.value) == (
        "targets must have shape (n, 2) (n = 8, the inputs' rows; the model's output shape is (2,)), "
        "got (8, 3)"
    )
    with pytest.raises(TrainerError) as caught:
        make(nn.linear(4, 2)).fit(x, np.zeros(8))
    assert str(caught.value) == (
        "targets must have shape (n, 2) (n = 8, the inputs' rows; the model's output shape is (2,)), got (8,)"
    )


def test_class_ids_under_mse_get_a_hint_to_use_cross_entropy():
    """A classifier's integer labels with the default MSE objective (review17 user F7): the shape
    message names the objective that reads them; float targets of the wrong shape get none."""
    model = nn.linear(3, 3)
    with pytest.raises(TrainerError) as caught:
        make(model).fit(np.zeros((4, 3)), np.array([0, 1, 2, 1]))
    assert str(caught.value) == (
        "targets must have shape (n, 3) (n = 4, the inputs' rows; the model's output shape is (3,)), "
        "got (4,); class ids (n,) need objective='cross-entropy'"
    )
    with pytest.raises(TrainerError) as caught:
        make(model).fit(np.zeros((4, 3)), np.zeros(4))
    assert str(caught.value) == (
        "targets must have shape (n, 3) (n = 4, the inputs' rows; the model's output shape is (3,)), "
        "got (4,)"
    )
    assert make(model, objective=Objective.CROSS_ENTROPY).fit(np.zeros((4, 3)), np.array([0, 1, 2, 1]))


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"epochs": 0}, "epochs must be an int >= 1, got 0"),
        ({"epochs": 1.5}, "epochs must be an int >= 1, got 1.5"),
        ({"epochs": True}, "epochs must be an int >= 1, got True"),
        ({"epochs": "2"}, "epochs must be an int >= 1, got '2'"),
        ({"batch_size": 0}, "batch_size must be an int >= 1, got 0"),
        ({"batch_size": -4}, "batch_size must be an int >= 1, got -4"),
        ({"batch_size": 2.0}, "batch_size must be an int >= 1, got 2.0"),
        ({"shuffle": 1}, "shuffle must be a bool, got 1"),
    ],
)
def test_fit_counts_and_flags_are_checked(kwargs, message):
    with pytest.raises(TrainerError) as caught:
        make(nn.linear(3, 1)).fit(np.zeros((2, 3)), np.zeros(2), **kwargs)
    assert str(caught.value) == message


@pytest.mark.parametrize("flag", [np.True_, np.False_])
def test_fit_shuffle_accepts_numpy_bools(flag):
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((10, 3)), rng.standard_normal(10)
    got = make(nn.linear(3, 1)).fit(x, y, epochs=2, batch_size=3, shuffle=flag)
    want = make(nn.linear(3, 1)).fit(x, y, epochs=2, batch_size=3, shuffle=bool(flag))
    assert got == want
    other = make(nn.linear(3, 1)).fit(x, y, epochs=2, batch_size=3, shuffle=not flag)
    assert got != other


@pytest.mark.parametrize("shape", [np.array([4]), np.array([4], dtype=np.int32), (4,), [4]])
def test_trainer_input_shape_accepts_a_1d_integer_array(shape):
    layer = nn.sequential(nn.relu(), nn.linear(4, 1))
    trainer = Trainer(layer, input_shape=shape)
    assert trainer.model.input_shape == (4,) and type(trainer.model.input_shape[0]) is int
    assert len(trainer.fit(np.ones((3, 4)), np.ones(3))) == 1


def test_fit_accepts_numpy_integer_counts():
    steps = []
    trainer = make(nn.linear(3, 1))
    losses = trainer.fit(
        np.zeros((6, 3)),
        np.zeros(6),
        epochs=np.int64(2),
        batch_size=np.int32(2),
        on_batch=lambda epoch, loss: steps.append(epoch),
    )
    assert len(losses) == 2
    assert steps == [0, 0, 0, 1, 1, 1]  # two epochs of three steps


def test_cross_entropy_targets_of_per_position_outputs_name_both_forms():
    """(2, 3) logits per sample (a class per position; tests/training/test_per_position_targets.py
    trains them): labels (n, 2) or one-hot (n, 2, 3), nothing else."""
    trainer = Trainer(nn.linear(4, 3), objective=Objective.CROSS_ENTROPY, input_shape=(2, 4))
    x = np.zeros((5, 2, 4))
    for labels in (np.zeros(5, dtype=np.int64), np.zeros((5, 3), dtype=np.int64), np.zeros((5, 3, 3))):
        with pytest.raises(TrainerError) as caught:
            trainer.fit(x, labels)
        forms = "labels (n, 2) or one-hot (n, 2, 3)"
        assert str(caught.value) == f"cross-entropy targets must be {forms}, got {labels.shape}"


def test_trainer_errors_are_torchlean_errors():
    assert issubclass(TrainerError, TorchLeanError)


# ---------------------------------------------------------------------- schedule and step


def test_fit_continues_the_epoch_schedule():
    rng = np.random.default_rng(1)
    x, y = rng.standard_normal((20, 3)), rng.standard_normal(20)
    whole, split = make(nn.linear(3, 1)), make(nn.linear(3, 1))
    losses = whole.fit(x, y, epochs=3, batch_size=6)
    assert split.fit(x, y, epochs=1, batch_size=6) + split.fit(x, y, epochs=2, batch_size=6) == losses
    assert whole.epochs_done == split.epochs_done == 3
    for a, b in zip(whole.model.parameters, split.model.parameters, strict=True):
        assert np.array_equal(a, b)
    # epochs are shuffled by (seed, epoch): epoch 1 does not replay epoch 0's order
    batches = [
        [yb.ravel().tolist() for _, yb in whole.batches(x, y[:, None], 6, shuffle=True, epoch=e)]
        for e in (0, 1)
    ]
    assert batches[0] != batches[1]
    assert sorted(v for batch in batches[0] for v in batch) == sorted(y.tolist())


def test_sgd_step_matches_torch_float64():
    """One SGD step on a linear model with MSE equals torch's update in float64."""
    trainer = make(nn.linear(3, 2), optimizer=optim.sgd(lr=0.1), dtype="float64")
    w0, b0 = (p.copy() for p in trainer.model.parameters)
    rng = np.random.default_rng(2)
    x, y = rng.standard_normal((5, 3)), rng.standard_normal((5, 2))
    loss = trainer.step(x, y)
    w = torch.tensor(w0, requires_grad=True)
    b = torch.tensor(b0, requires_grad=True)
    expected = torch.nn.functional.mse_loss(torch.tensor(x) @ w.T + b, torch.tensor(y))
    expected.backward()
    assert loss == pytest.approx(expected.item(), rel=1e-13)
    np.testing.assert_allclose(trainer.model.parameters[0], (w - 0.1 * w.grad).detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(trainer.model.parameters[1], (b - 0.1 * b.grad).detach().numpy(), rtol=1e-13)


@pytest.mark.parametrize("mode", [EAGER, GRAPH])
@pytest.mark.parametrize("form", ["labels", "one-hot", "probabilities"])
def test_cross_entropy_step_matches_torch_float64(mode, form):
    """One SGD step with mean cross-entropy on a batch of 3 (``1/3`` is not exact in binary)
    equals ``F.cross_entropy`` and torch's update in float64, for every target form."""
    trainer = make(nn.linear(4, 3), mode=mode, objective=Objective.CROSS_ENTROPY,
                   optimizer=optim.sgd(lr=0.1), dtype="float64")
    w0, b0 = (p.copy() for p in trainer.model.parameters)
    rng = np.random.default_rng(5)
    x, labels = rng.standard_normal((3, 4)) * 3, np.array([2, 0, 2])
    soft = rng.dirichlet(np.ones(3), size=3)
    y = {"labels": labels, "one-hot": np.eye(3)[labels], "probabilities": soft}[form]
    loss = trainer.step(x, y)
    w = torch.tensor(w0, requires_grad=True)
    b = torch.tensor(b0, requires_grad=True)
    target = torch.tensor(labels) if form == "labels" else torch.tensor(y)
    expected = torch.nn.functional.cross_entropy(torch.tensor(x) @ w.T + b, target)
    expected.backward()
    assert loss == pytest.approx(expected.item(), rel=1e-13)
    np.testing.assert_allclose(trainer.model.parameters[0], (w - 0.1 * w.grad).detach().numpy(), rtol=1e-13)
    np.testing.assert_allclose(trainer.model.parameters[1], (b - 0.1 * b.grad).detach().numpy(), rtol=1e-13)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_cross_entropy_gradient_equals_the_scaled_sum_form_bit_for_bit(dtype):
    """The trainer's cross-entropy ``sum(log_softmax(z) * (-onehot/n))`` gives the logits exactly
    the gradient of ``scale(sum(log_softmax(z) * onehot), -1/n)`` (its docstring's claim); the loss
    values differ by rounding only."""
    from torchlean.trainer import _loss, _loss_operand

    rng = np.random.default_rng(6)
    z0 = rng.standard_normal((7, 5)).astype(dtype)
    labels = rng.integers(0, 5, size=7)
    onehot = np.eye(5, dtype=dtype)[labels]
    np.testing.assert_array_equal(  # int64 labels are made one-hot there: the same operand
        _loss_operand(Objective.CROSS_ENTROPY, labels, 5, np.dtype(dtype)),
        _loss_operand(Objective.CROSS_ENTROPY, onehot, 5, np.dtype(dtype)),
        strict=True,
    )
    ops = EagerOps()
    with Session("checked_cpu"):
        z_new = Tensor(z0, requires_grad=True)
        weights = Tensor(_loss_operand(Objective.CROSS_ENTROPY, labels, 5, np.dtype(dtype)))
        new = _loss(ops, Objective.CROSS_ENTROPY, z_new, weights)
        new.backward()
        z_old = Tensor(z0, requires_grad=True)
        old = ops.scale(ops.sum(ops.mul(ops.log_softmax(z_old, 1), Tensor(onehot))), -1.0 / 7)
        old.backward()
    assert z_new.grad is not None and z_old.grad is not None
    np.testing.assert_array_equal(z_new.grad.numpy(), z_old.grad.numpy(), strict=True)
    assert float(new.numpy()) == pytest.approx(float(old.numpy()), rel=4 * float(np.finfo(dtype).eps))


def test_epoch_loss_is_the_sample_weighted_mean_of_batch_losses():
    trainer = make(nn.linear(2, 1), optimizer=optim.sgd(lr=0.0))  # lr 0: parameters never move
    rng = np.random.default_rng(3)
    x, y = rng.standard_normal((7, 2)), rng.standard_normal(7)
    batch_losses: list[float] = []
    (epoch_loss,) = trainer.fit(
        x, y, epochs=1, batch_size=3, on_batch=lambda _epoch, loss: batch_losses.append(loss)
    )
    assert len(batch_losses) == 3
    assert epoch_loss == pytest.approx((3 * batch_losses[0] + 3 * batch_losses[1] + batch_losses[2]) / 7)
    w, b = trainer.model.parameters
    full = float(np.mean((x.astype(np.float32) @ w.T + b - y[:, None].astype(np.float32)) ** 2))
    assert epoch_loss == pytest.approx(full, rel=1e-5)


# ---------------------------------------------------------------------- predict, evaluate


def test_selected_before_any_run_is_empty_and_opens_no_session():
    """On a CUDA profile on a machine without CUDA, opening the session raises; reading which
    kernels ran before anything ran must not."""
    trainer = make(nn.sequential(nn.linear(3, 2)), device=Device.CUDA)
    assert trainer.selected == []
    assert copy.deepcopy(trainer).selected == []  # reading it did not make the trainer one that ran
    import torch

    if not torch.cuda.is_available():
        with pytest.raises(SessionError):  # the session itself still refuses, when it is opened
            trainer.open()


@pytest.mark.parametrize("mode", [EAGER, GRAPH])
def test_predict_and_evaluate(mode):
    trainer = make(nn.linear(2, 3), mode=mode, objective=Objective.CROSS_ENTROPY, dtype="float64")
    w = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    trainer.model.load_state({"weight": w, "bias": np.zeros(3)})
    x = np.array([[2.0, 0.0], [0.0, 3.0], [-1.0, -1.0], [1.0, 1.5]])
    np.testing.assert_array_equal(trainer.predict(x, batch_size=3), x @ w.T)
    assert trainer.predict(np.zeros((0, 2))).shape == (0, 3)
    labels = np.array([0, 1, 2, 0])  # the last one is wrong: argmax is class 1
    assert trainer.evaluate(x, labels) == {"accuracy": 0.75}
    assert trainer.evaluate(x, np.eye(3)[labels]) == {"accuracy": 0.75}
    with pytest.raises(TrainerError, match="got 4 inputs but 3 targets"):
        trainer.evaluate(x, labels[:3])
    with pytest.raises(TrainerError, match="batch_size must be an int >= 1, got 0"):
        trainer.predict(x, batch_size=0)


def test_evaluate_mse():
    trainer = make(nn.linear(1, 1), dtype="float64")
    trainer.model.load_state({"weight": [[2.0]], "bias": [1.0]})
    x = np.array([[0.0], [1.0], [2.0]])
    assert trainer.evaluate(x, np.array([1.0, 2.0, 5.0])) == {"mse": pytest.approx((0 + 1 + 0) / 3)}
    assert np.isnan(trainer.evaluate(np.zeros((0, 1)), np.zeros(0))["mse"])


def test_same_seed_same_training_different_seed_different():
    rng = np.random.default_rng(4)
    x, y = rng.standard_normal((12, 3)), rng.standard_normal(12)
    runs = [make(nn.linear(3, 1), seed=s).fit(x, y, epochs=2, batch_size=5) for s in (7, 7, 8)]
    assert runs[0] == runs[1] != runs[2]


REAL = "must be real numbers (accepted: bool, integer or float arrays), got dtype"


@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (np.full((8, 4), "a"), np.ones((8, 1)), f"inputs {REAL} <U1"),
        (np.ones((8, 4)) + 1j, np.ones((8, 1)), f"inputs {REAL} complex128"),
        (np.ones((8, 4)), np.full((8, 1), "b"), f"targets {REAL} <U1"),
        ([[1.0, 2.0, 3.0, 4.0], [1.0, 2.0]], np.ones((2, 1)), "inputs must be a rectangular array"),
    ],
)
def test_fit_refuses_data_that_is_not_real_numbers(x, y, message):
    trainer = Trainer(nn.sequential(nn.linear(4, 1)), objective=Objective.MSE)
    with pytest.raises(TrainerError) as caught:
        trainer.fit(x, y)
    assert str(caught.value).startswith(message)


def _poisoned(value: float, at: tuple[int, int]) -> np.ndarray:
    x = np.random.default_rng(5).standard_normal((10, 4))
    x[at] = value
    return x


NOT_FINITE = "training on them would make every parameter NaN (accepted: finite numbers)"
NOT_FINITE_ROW = "NaN or infinite value (the first in row"
F32_MAX = (
    "accepted: magnitude at most 3.4028235e+38, as numpy prints float32's largest value; use dtype float64"
)


@pytest.mark.parametrize("mode", [EAGER, GRAPH])
@pytest.mark.parametrize(
    ("x", "y", "message"),
    [
        (_poisoned(np.nan, (7, 2)), np.ones(10), f"inputs hold 1 {NOT_FINITE_ROW} 7); {NOT_FINITE}"),
        (_poisoned(-np.inf, (3, 0)), np.ones(10), f"inputs hold 1 {NOT_FINITE_ROW} 3); {NOT_FINITE}"),
        (
            np.ones((10, 4)),
            np.r_[np.ones(8), np.nan, np.inf],
            f"targets hold 2 NaN or infinite values (the first in row 8); {NOT_FINITE}",
        ),
        (
            _poisoned(1e39, (2, 1)) * np.r_[1, 1, 1, 1, 1, 1, 1, 1, 1, -1.0][:, None],
            np.ones(10),
            f"inputs hold 1 value beyond the float32 range (largest magnitude 1e+39; {F32_MAX})",
        ),
        (
            np.ones((10, 4)),
            np.full(10, -4e38),
            f"targets hold 10 values beyond the float32 range (largest magnitude 4e+38; {F32_MAX})",
        ),
    ],
)  # fmt: skip
def test_fit_refuses_data_it_cannot_train_on_before_any_step(mode, x, y, message):
    """NaN or infinite training data would make the loss and, after one step, every parameter NaN
    (torch trains on it silently); finite values beyond float32 would become inf in the cast.
    Refused by count and first row before any step: the model and epoch count are unchanged."""
    trainer = make(nn.linear(4, 1), mode=mode)
    before = trainer.model.state()
    with pytest.raises(TrainerError) as caught:
        trainer.fit(x, y, batch_size=2)
    assert str(caught.value) == message
    with pytest.raises(TrainerError):
        trainer.step(x, y)
    assert trainer.epochs_done == 0
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(value, before[name])


def test_float64_models_train_on_values_beyond_float32():
    x = np.ones((4, 2)) * np.array([1e39, 1.0])
    y = np.ones(4)
    trainer = make(nn.linear(2, 1), dtype="float64", optimizer=optim.sgd(0.0))
    assert trainer.fit(x, y, epochs=1)[0] >= 0.0


def test_the_largest_magnitude_is_shown_in_full_and_the_printed_limit_is_accepted():
    """3.4028235e38 (float32's largest value as numpy prints it) rounds to that value and is
    accepted; 3.40282357e38 rounds to inf and is shown as written, not shortened below the limit."""
    trainer = make(nn.linear(2, 1))
    out = trainer.predict([[3.4028235e38, 0.0]])
    assert out.shape == (1, 1) and np.isfinite(out).all()
    with pytest.raises(TrainerError) as caught:
        trainer.predict([[3.40282357e38, 0.0]])
    assert str(caught.value) == (
        f"inputs hold 1 value beyond the float32 range (largest magnitude 3.40282357e+38; {F32_MAX})"
    )


def test_predict_keeps_nan_inputs_and_refuses_values_beyond_the_dtype():
    """Prediction is not training: a NaN input row gives a NaN output row (as torch), and only
    the others are numbers; a finite value float32 cannot hold is refused as in fit."""
    trainer = make(nn.linear(2, 1))
    out = trainer.predict(np.array([[1.0, np.nan], [1.0, 2.0]]))
    assert np.isnan(out[0, 0]) and np.isfinite(out[1, 0])
    with pytest.raises(TrainerError, match=r"^inputs hold 1 value beyond the float32 range"):
        trainer.predict(np.array([[1.0, 1e39]]))


@pytest.mark.parametrize("mode", [EAGER, GRAPH])
@pytest.mark.parametrize("objective", [Objective.MSE, Objective.CROSS_ENTROPY])
def test_step_on_an_empty_minibatch_is_refused_before_any_update(mode, objective):
    """An empty minibatch has no mean loss (torch's is NaN, and an Adam step with it would fill the
    optimizer state with NaN; cross-entropy divided by zero rows): refused, nothing changes."""
    trainer = make(nn.linear(3, 2), mode=mode, objective=objective)
    before = trainer.model.state()
    y = np.zeros(0, dtype=np.int64) if objective is Objective.CROSS_ENTROPY else np.zeros((0, 2))
    empty = r"^step needs at least one sample; got an empty minibatch \(x of shape \(0, 3\)\)$"
    with pytest.raises(TrainerError, match=empty):
        trainer.step(np.zeros((0, 3)), y)
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(value, before[name])
    one = np.zeros(1, np.int64) if objective is Objective.CROSS_ENTROPY else np.zeros((1, 2))
    assert trainer.step(np.ones((1, 3)), one) >= 0.0  # a one-sample step still works


def test_fit_refuses_an_on_batch_that_is_not_callable_before_any_step():
    trainer = make(nn.linear(3, 1))
    before = trainer.model.state()
    refusal = r"^on_batch must be a callable on_batch\(epoch, loss\) or None, got 'x' of type str$"
    with pytest.raises(TrainerError, match=refusal):
        trainer.fit(np.ones((4, 3)), np.ones((4, 1)), on_batch="x")  # type: ignore[arg-type]
    assert trainer.epochs_done == 0
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(value, before[name])


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"hidden": "8"}, "hidden must be an int >= 1, got '8'"),
        ({"hidden": None}, "hidden must be an int >= 1, got None"),
        ({"hidden": True}, "hidden must be an int >= 1, got True"),
        ({"features": 64.0}, "features must be an int >= 1, got 64.0"),
        ({"features": True}, "features must be an int >= 1, got True"),
        ({"outputs": 0}, "outputs must be an int >= 1, got 0"),
        ({"hidden": 0}, "hidden must be an int >= 1, got 0"),
    ],
)
def test_build_model_refuses_sizes_that_are_not_ints(kwargs, message):
    args = {"features": 64, "outputs": 10, **kwargs}
    hidden = args.pop("hidden", 64)
    with pytest.raises(nn.layers.ShapeError, match=f"^{re.escape(message)}$"):
        build_model("cnn", args["features"], args["outputs"], hidden=hidden)
    layer, shape = build_model("cnn", np.int64(64), np.int64(10), hidden=np.int64(8))  # numpy ints are ints
    assert shape == (64,) and isinstance(layer, nn.layers.Layer)


def test_batches_checks_its_size_and_epoch():
    trainer = Trainer(nn.linear(4, 2))
    x, y = np.arange(12.0).reshape(3, 4), np.zeros((3, 2))
    for bad, name in ((0, "batch_size"), (-1, "batch_size"), (True, "batch_size")):
        with pytest.raises(TrainerError, match=f"{name} must be an int >= 1, got"):
            list(trainer.batches(x, y, bad, shuffle=False, epoch=0))
    with pytest.raises(TrainerError, match="epoch must be an int >= 0, got -1"):
        list(trainer.batches(x, y, 2, shuffle=True, epoch=-1))
    sizes = [len(xb) for xb, _ in trainer.batches(x, y, 2, shuffle=False, epoch=0)]
    assert sizes == [2, 1]


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize(
    "layer, described",
    [
        (nn.sequential(nn.mean_pool(0)), "sequential(mean_pool)"),
        (nn.residual(nn.sequential()), "residual(sequential())"),
    ],
)
def test_training_a_model_without_parameters_is_refused_but_predict_works(execution, layer, described):
    """fit and step on a model with nothing to train say so (they failed in the backward pass with
    an autograd error about the loss; torch's optimizers refuse an empty parameter list); predict
    still runs: mean over the token axis, by hand."""
    x = np.arange(30, dtype=np.float64).reshape(2, 5, 3)
    trainer = Trainer(layer, input_shape=(5, 3), config=RunConfig(execution=execution))
    message = re.escape(f"the model has no parameters to train ({described}); add a layer with weights")
    with pytest.raises(TrainerError, match=message):
        trainer.fit(x, np.zeros((2, 3)), epochs=1)
    with pytest.raises(TrainerError, match=message):
        trainer.step(x, np.zeros((2, 3)))
    assert trainer.epochs_done == 0
    if described.startswith("sequential"):
        np.testing.assert_allclose(trainer.predict(x), [[6.0, 7.0, 8.0], [21.0, 22.0, 23.0]])


# ------------------------------------------------------------------- copies (review17 F10)

NOT_COPIED = (
    r"^Trainer cannot be copied or pickled once it has run \(its session holds accepted kernels\); "
    r"keep the weights with state = trainer\.model\.state\(\) and restore them with "
    r"trainer\.model\.load_state\(state\), in this trainer or a new one$"
)


@pytest.mark.parametrize("mode", [EAGER, GRAPH], ids=["eager", "typed-graph"])
def test_a_trainer_that_has_run_refuses_copies_and_pickle_naming_model_state(mode):
    """Before this, deepcopy after fit failed deep inside: "AcceptedKernel cannot be copied" (eager)
    or "cannot pickle '_thread._local' object" (typed graph). A trainer that has not run still
    copies and pickles, and its copy trains as the original does (same seed, same data: the
    same losses and weights, bit for bit); the original is left untouched by the copy's fit."""
    rng = np.random.default_rng(0)
    x, y = rng.random((16, 4)), rng.random((16, 1))
    template = make(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), mode=mode)
    initial = [p.copy() for p in template.model.parameters]
    copies = [copy.deepcopy(template), pickle.loads(pickle.dumps(template))]
    histories = [c.fit(x, y, epochs=2) for c in copies]
    assert histories[0] == histories[1]
    for a, b in zip(copies[0].model.parameters, copies[1].model.parameters, strict=True):
        np.testing.assert_array_equal(a, b)
    for a, b in zip(initial, template.model.parameters, strict=True):
        np.testing.assert_array_equal(a, b)
    assert template.fit(x, y, epochs=2) == histories[0]
    trainer = template
    for duplicate in (copy.deepcopy, copy.copy, pickle.dumps):
        with pytest.raises(TypeError, match=NOT_COPIED):
            duplicate(trainer)
    rng = np.random.default_rng(1)
    # the way the message names keeps the best weights and restores them
    best = trainer.model.state()
    before = [p.copy() for p in trainer.model.parameters]
    trainer.fit(rng.random((16, 4)), rng.random((16, 1)), epochs=1)
    assert any(not np.array_equal(a, b) for a, b in zip(before, trainer.model.parameters, strict=True))
    trainer.model.load_state(best)
    assert all(np.array_equal(a, b) for a, b in zip(before, trainer.model.parameters, strict=True))


def test_a_built_model_given_as_the_layer_is_named_briefly():
    """``Trainer(trainer.model)`` printed every weight in its message (hundreds of lines); the
    repr is cut and the message says to pass the model's layer (review17 int64 review F6)."""
    built = make(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1))).model
    with pytest.raises(TrainerError) as caught:
        Trainer(built)
    message = str(caught.value)
    assert message.startswith("layer must be a Layer (e.g. nn.linear(4, 1)), got Model Model(layer=")
    assert message.endswith(
        "...; a built Model: pass model.layer, then copy its weights with load_state(model.state())"
    )
    assert len(message) < 260
    with pytest.raises(nn.ShapeError, match=r"^build: layer must be a Layer .*got Model Model\(layer="):
        nn.build(built)


@pytest.mark.parametrize(
    ("module", "named"),
    [(torch.nn.Linear(3, 1), "torch.nn.Linear"),
     (torch.nn.Sequential(torch.nn.Linear(3, 1), torch.nn.ReLU()), "torch.nn.Sequential")],
)
def test_a_torch_module_given_as_the_layer_is_named_once_with_the_way_over(module, named):
    """``Trainer(torch.nn.Linear(3, 1))`` said "got Linear Linear(in_features=3, ...)" (review39
    F5), and a Sequential's repr spans lines: the module is named by its type, with the route."""
    with pytest.raises(TrainerError) as caught:
        Trainer(module)
    assert str(caught.value) == (
        f"layer must be a Layer (e.g. nn.linear(4, 1)), got a {named}: describe the model with "
        "torchlean.nn layers, then load the torch module's weights into the built model: "
        "trainer.model.load_state(module.state_dict()) (a Model of nn.build(layer) has load_state too)"
    )


def test_typed_graph_programs_are_kept_for_the_last_batch_shapes_only():
    """A serving loop predicting on many batch lengths keeps at most GRAPH_CACHE_SIZE programs
    (each holds a lowered copy of the weights; memory grew with every new length), the most
    recently used; an evicted shape is lowered again and predicts as eager does, bit for bit."""
    from torchlean.trainer import GRAPH_CACHE_SIZE

    rng = np.random.default_rng(4)
    x = rng.standard_normal((20, 3))
    graph = make(nn.sequential(nn.linear(3, 5), nn.tanh(), nn.linear(5, 2)), mode=GRAPH)
    eager = make(nn.sequential(nn.linear(3, 5), nn.tanh(), nn.linear(5, 2)), mode=EAGER)
    for n in [*range(1, 13), 1, 12]:
        np.testing.assert_array_equal(graph.predict(x[:n]), eager.predict(x[:n]), strict=True)
        assert len(graph._graphs) <= GRAPH_CACHE_SIZE
    assert GRAPH_CACHE_SIZE == 8
    # the most recent first-use order: 12 was used last, 1 just before it (lowered again)
    assert [shape for shape, _ in graph._graphs] == [(n, 3) for n in (6, 7, 8, 9, 10, 11, 1, 12)]


def test_a_graph_cache_over_its_size_shrinks_back_at_the_next_insert():
    """review155 L3: two threads that both found room inserted both, leaving one program too many
    for good (one eviction per insert); the next insert now evicts down to the size. The race's
    outcome is set up directly: an extra entry copied in."""
    from torchlean.trainer import GRAPH_CACHE_SIZE

    x = np.random.default_rng(5).standard_normal((20, 3))
    graph = make(nn.sequential(nn.linear(3, 5), nn.tanh(), nn.linear(5, 2)), mode=GRAPH)
    for n in range(1, GRAPH_CACHE_SIZE + 1):
        graph.predict(x[:n])
    graph._graphs[((99, 3), False)] = next(iter(graph._graphs.values()))  # the race's extra entry
    assert len(graph._graphs) == GRAPH_CACHE_SIZE + 1
    graph.predict(x[:GRAPH_CACHE_SIZE + 1])
    assert len(graph._graphs) == GRAPH_CACHE_SIZE
    assert next(reversed(graph._graphs))[0] == (GRAPH_CACHE_SIZE + 1, 3)


def test_an_unplannable_model_is_a_session_error_in_both_execution_modes():
    """Under a profile that selects no capsule for the model's ops, eager execution refuses at
    the first op and typed-graph execution when it accepts the graph, both as a SessionError
    (typed graph raised the planner's PlanningError, which code catching SessionError missed)."""
    from torchlean.backend.availability import Availability
    from torchlean.backend.policy import AssurancePolicy, KernelPolicy, ProviderPreference
    from torchlean.backend.profiles import BackendProfile

    libtorch_only = BackendProfile(
        "libtorch_only",
        KernelPolicy(Device.CPU, ProviderPreference.only(Provider.LIBTORCH), AssurancePolicy.EXTERNAL),
        Availability(devices=(Device.CPU,), providers=(Provider.LIBTORCH,)),
        profiles.get("libtorch_forward_cpu").capsule_modules,
    )
    x, y = np.ones((4, 3)), np.array([0, 1, 0, 1])
    messages, notes = {}, {}
    for mode in (EAGER, GRAPH):
        trainer = make(nn.sequential(nn.linear(3, 2)), mode=mode, objective=Objective.CROSS_ENTROPY,
                       profile=libtorch_only)
        with pytest.raises(SessionError) as caught:
            trainer.predict(x) if mode is GRAPH else trainer.fit(x, y)
        messages[mode] = str(caught.value)
        notes[mode] = caught.value.__notes__
    missing = "no admissible kernel capsule for op linear on device cpu"
    assert messages[EAGER] == f"torch: kernel selection failed for `linear`: {missing}"
    assert messages[GRAPH] == f"typed graph rejected by profile libtorch_only: {missing}"
    # both say why each linear capsule was refused (the typed graph once per uncovered op: linear,
    # not log_softmax, mul or reduce_sum, which it never reaches in predict)
    explained = libtorch_only.explain("linear")
    assert "  reference.linear (reference/cpu): availability: provider reference is not declared" in explained
    # eager meets the refusal inside the model's forward, so a note also names the layer
    assert notes[EAGER][-2:] == [explained, "in the forward of linear(3, 2), layer 0 of a sequential"]
    # predict's graph is accepted under the no-grad policy, as eager predict's ops (review93 L1)
    assert notes[GRAPH] == [libtorch_only.with_vjp_mode(VJPMode.NONE).explain("linear")]


def test_a_typed_graph_notes_only_the_ops_no_capsule_covers() -> None:
    """Of linear and relu, a profile without a linear capsule is explained for linear alone
    (review24 diff F4: the test above has one op)."""
    from torchlean.backend.registry import CapsuleModule, maintained_modules

    reference = next(m for m in maintained_modules() if m.name == "reference")
    no_linear = profiles.get("checked_cpu").with_capsule_modules(
        [CapsuleModule("reference", tuple(c for c in reference.capsules if c.op.label != "linear"))]
    )
    trainer = make(nn.sequential(nn.linear(3, 2), nn.relu()), mode=GRAPH, objective=Objective.CROSS_ENTROPY,
                   profile=no_linear)
    with pytest.raises(SessionError) as caught:
        trainer.predict(np.ones((4, 3)))
    # predict's graph is accepted under the no-grad policy, as eager predict's ops are (review93 L1)
    assert caught.value.__notes__ == [no_linear.with_vjp_mode(VJPMode.NONE).explain("linear")]
    assert "vjp=none" in caught.value.__notes__[0].splitlines()[0]


def test_evaluate_counts_a_non_finite_row_as_wrong_even_when_its_argmax_is_the_label() -> None:
    """numpy's argmax of a NaN row is 0; with label 0 it still counts as wrong (review20 mut T3:
    only a checkpoint test caught this)."""
    trainer = Trainer(nn.linear(2, 3), objective=Objective.CROSS_ENTROPY,
                      config=RunConfig(optimizer=optim.adam(0.01), dtype="float64"))
    weight = np.array([[1.0, 0.0], [0.0, 1.0], [-1.0, -1.0]])
    trainer.model.load_state({"weight": weight, "bias": np.zeros(3)})
    assert trainer.evaluate(np.array([[2.0, 0.0], [np.nan, 0.0]]), np.array([0, 0])) == {"accuracy": 0.5}


def test_validation_accuracy_counts_a_non_finite_row_as_wrong_even_when_its_argmax_is_the_label() -> None:
    """review124 F1: the epoch's validation accuracy dropped the finiteness test that evaluate's
    keeps and no test noticed. Validation data must be finite, so the model makes the row
    infinite: float32 logits of the first row are [inf, 0, -inf] (1e30 * 1e30 overflows), whose
    argmax 0 is its label, yet it predicts nothing; the second row's [2, 0, -2] is right: 1/2."""
    trainer = Trainer(nn.linear(2, 3), objective=Objective.CROSS_ENTROPY,
                      config=RunConfig(optimizer=optim.sgd(0.0)))
    weight = np.array([[1e30, 0.0], [0.0, 1.0], [-1e30, -1.0]], dtype=np.float32)
    trainer.model.load_state({"weight": weight, "bias": np.zeros(3, dtype=np.float32)})
    x_val, y_val = np.array([[1e30, 0.0], [2e-30, 0.0]]), np.array([0, 0])
    # the second row by hand: logits [2, 0, -2] in float32, argmax 0 = its label
    assert trainer.evaluate(x_val, y_val) == {"accuracy": 0.5}
    trainer.fit(np.zeros((2, 2)), np.array([0, 1]), epochs=1, batch_size=2, validation=(x_val, y_val))
    assert trainer.history.val_accuracy == (0.5,)
    np.testing.assert_array_equal(trainer.model.state()["weight"], weight)  # lr 0: the same model


@pytest.mark.parametrize(
    "layer", [nn.linear(3, 1), nn.sequential(nn.linear(3, 4), nn.relu(), nn.linear(4, 1))]
)
def test_cross_entropy_over_one_class_is_refused(layer):
    """review214 F1: one logit (a port of BCEWithLogitsLoss's nn.Linear(h, 1)) trained nothing:
    log_softmax of one logit is 0, so the loss and its gradient were 0 at every step, and every
    prediction and one-hot target's argmax was class 0, so evaluate reported accuracy 1.0."""
    refusal = ("objective cross-entropy needs at least 2 classes on the output's last axis, and "
               f"{type(layer).__name__}'s output shape is (1,) (one class: the log-softmax of one logit is 0")
    with pytest.raises(TrainerError, match=re.escape(refusal)):
        Trainer(layer, objective="cross-entropy")
    assert Trainer(layer, objective="mse").model.output_shape == (1,)


@pytest.mark.parametrize("name", ["config", "objective", "label_smoothing", "seed"])
def test_the_settings_are_read_only(name):
    """review26_ls F4: a setting changed after construction bypassed its checks (and the session,
    optimizer and graphs already built from it); they are read-only properties now."""
    trainer = Trainer(nn.linear(2, 2), objective="cross-entropy", label_smoothing=0.1, seed=3)
    before = getattr(trainer, name)
    refusal = "Trainer.seed is fixed when the trainer is made" if name == "seed" else "has no setter"
    with pytest.raises(AttributeError, match=re.escape(refusal)):
        setattr(trainer, name, before)
    assert (trainer.seed, trainer.label_smoothing, trainer.objective) == (3, 0.1, Objective.CROSS_ENTROPY)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_fit_under_a_callers_no_grad_trains_as_without_it(execution):
    """review77 F5: under an ambient ``no_grad`` (which ``asyncio.to_thread`` carries into its
    worker) ``fit`` failed with "backward() on a tensor that does not require grad"; its steps now
    run with gradients on, the same bits as outside it, and the caller's mode is left as it was."""
    import asyncio

    import torchlean as tl

    rng = np.random.default_rng(0)
    x, y = rng.random((32, 4)), rng.random((32, 1))

    def trained() -> Trainer:
        layer = nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1))
        return Trainer(layer, config=RunConfig(optimizer=optim.adam(lr=0.01), execution=execution), seed=0)

    plain = trained()
    expected = plain.fit(x, y, epochs=2, batch_size=8)
    quiet = trained()
    with tl.no_grad():
        assert quiet.fit(x, y, epochs=2, batch_size=8) == expected
        assert not tl.is_grad_enabled()
    for name, value in plain.model.state().items():
        np.testing.assert_array_equal(quiet.model.state()[name], value)

    async def in_a_worker() -> list[float]:
        with tl.no_grad():
            return await asyncio.to_thread(lambda: trained().fit(x, y, epochs=2, batch_size=8))

    assert asyncio.run(in_a_worker()) == expected


def test_label_and_tuple_targets_are_told_the_way_forward() -> None:
    """review106 L3, L5: integral float labels got no .astype hint (embedding ids do); the
    (train, test) tuple of Dataset.standardised_targets() got numpy's "inhomogeneous shape"."""
    t = Trainer(nn.sequential(nn.linear(4, 3)), objective="cross-entropy")
    x = np.ones((4, 4))
    with pytest.raises(TrainerError) as caught:
        t.fit(x, np.array([0.0, 1.0, 2.0, 0.0]), epochs=1)
    assert str(caught.value) == ("cross-entropy labels must be integers in [0, 3), got dtype float64 "
                                 "(integral values can be cast with .astype(np.int64))")
    with pytest.raises(TrainerError) as caught:
        t.fit(x, np.array([0.5, 1.0, 2.0, 0.0]), epochs=1)
    assert str(caught.value) == "cross-entropy labels must be integers in [0, 3), got dtype float64"
    regression = Trainer(nn.sequential(nn.linear(4, 1)))
    with pytest.raises(TrainerError) as caught:
        regression.fit(x, (np.zeros(4), np.zeros(2)), epochs=1)
    assert str(caught.value) == (
        "targets must be one array with a row per sample, got a tuple of 2 arrays of lengths 4, 2 (as "
        "Dataset.standardised_targets() returns (train, test): pass one of them)")
    regression.fit(x, np.zeros(4), epochs=1)  # one of them trains


def test_a_trainer_shows_what_it_trains_and_how_far() -> None:
    """review106 L7: a notebook showed ``<torchlean.trainer.Trainer object at 0x...>``."""
    t = Trainer(nn.sequential(nn.linear(4, 3)), objective="cross-entropy")
    assert repr(t) == ("Trainer(objective='cross-entropy', profile='checked_cpu', execution='eager', "
                       "dtype='float32', parameters=15, epochs_done=0, steps_done=0)")
    t.fit(np.ones((4, 4)), np.zeros(4, np.int64), epochs=1, batch_size=2)
    assert repr(t).endswith("parameters=15, epochs_done=1, steps_done=2)")
    config = RunConfig(execution="typed-graph").with_profile("fast_cpu")
    fast = Trainer(nn.sequential(nn.linear(4, 1)), config=config)
    assert repr(fast).startswith("Trainer(objective='mse', profile='fast_cpu', execution='typed-graph', ")


def test_the_readme_recipe_for_a_predictions_provenance() -> None:
    """README (Auditing a run): a trainer's prediction rerun in its session with its weights has the
    kernels' lineage and predict's values; float64 data are given the model's dtype (review
    of the recipe: ``tl.tensor(x)`` of float64 data was refused by a float32 model)."""
    import torchlean as tl

    x = np.random.default_rng(0).standard_normal((8, 4))
    trainer = Trainer(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 3)), objective="cross-entropy")
    trainer.fit(x, np.arange(8) % 3, epochs=1)
    with trainer.open():
        out = trainer.model(tl.tensor(x, dtype=trainer.model.dtype), trainer.model.tensors())
    names = [k.capsule.name for k in out.lineage()]
    assert names == ["reference.linear", "reference.relu", "reference.linear"]
    np.testing.assert_array_equal(out.numpy(), trainer.predict(x))
