"""Typed-graph training and prediction of models with dropout and batch norm, bit for bit eager's.

The oracle is eager execution (itself checked against torch in float64 by
tests/training/test_batch_norm_layer.py and against the seeded mask stream by
tests/training/test_trainer.py): with the same seed and data, a typed-graph trainer must give the
same losses, parameters, running statistics, predictions and metrics, compared with
``np.array_equal`` (``==`` on the loss lists). A training dropout's mask is a graph input drawn by
the session's ``bernoulli_mask`` in eager's order; a training batch norm is a ``batch_norm_train``
node whose running statistics the trainer updates eagerly from the graph's value of its input;
evaluation reads the running statistics' current values. The CLI's model families
(``torchlean.models``: mlp, cnn, transformer) use neither layer, so they are not repeated here.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest

from torchlean import nn, optim
from torchlean.autograd.session import Session
from torchlean.autograd.typed_graph import GraphProgram
from torchlean.backend import profiles
from torchlean.backend.errors import SessionError
from torchlean.functional import batch_norm as eager_batch_norm
from torchlean.ir import BatchNormParams, BatchNormTrainParams, IRError, LayerNormParams, evaluate
from torchlean.ir.builder import GraphBuilder
from torchlean.nn.layers import Layer, ParamSpec
from torchlean.nn.lowering import LoweringTypeError, RunningUpdate, lower_model
from torchlean.tensor import Tensor
from torchlean.trainer import RunConfig, Trainer, TrainerError

LayerFn = Callable[[], Layer]

# name -> (layer, per-sample input shape, outputs)
MODELS: dict[str, tuple[LayerFn, tuple[int, ...], int]] = {
    "mlp_dropout": (
        lambda: nn.sequential(
            nn.linear(4, 16),
            nn.relu(),
            nn.dropout(0.1),
            nn.linear(16, 16),
            nn.relu(),
            nn.dropout(0.5),
            nn.residual(nn.sequential(nn.linear(16, 16), nn.dropout(1.0))),  # p = 1: the body is zeros
            nn.linear(16, 3),
        ),
        (4,),
        3,
    ),
    "linear_bn1d_vector": (
        lambda: nn.sequential(nn.linear(4, 6), nn.batch_norm1d(6), nn.relu(), nn.linear(6, 3)),
        (4,),
        3,
    ),
    "conv1d_bn1d_sequence": (
        lambda: nn.sequential(
            nn.conv1d(2, 3, 3, padding=1), nn.batch_norm1d(3, momentum=0.3), nn.relu(), nn.flatten(),
            nn.linear(15, 3),
        ),
        (2, 5),
        3,
    ),
    "bn1d_on_samples_c_l": (  # batch norm first, on the (C, L) input itself, without affine
        lambda: nn.sequential(nn.batch_norm1d(3, affine=False), nn.flatten(), nn.linear(12, 3)),
        (3, 4),
        3,
    ),
    "conv_bn2d": (
        lambda: nn.sequential(
            nn.conv2d(2, 3, 3, padding=1), nn.batch_norm2d(3), nn.relu(), nn.max_pool2d(2), nn.flatten(),
            nn.linear(12, 3),
        ),
        (2, 4, 4),
        3,
    ),
    "dropout_and_bn": (
        lambda: nn.sequential(
            nn.linear(4, 8),
            nn.batch_norm1d(8, momentum=0.2),
            nn.relu(),
            nn.dropout(0.5),
            nn.linear(8, 8),
            nn.batch_norm1d(8, affine=False),
            nn.dropout(0.1),
            nn.linear(8, 3),
        ),
        (4,),
        3,
    ),
    "conv_bn2d_dropout": (
        lambda: nn.sequential(
            nn.conv2d(1, 2, 3, padding=1), nn.batch_norm2d(2), nn.relu(), nn.dropout(0.25), nn.flatten(),
            nn.linear(32, 3),
        ),
        (1, 4, 4),
        3,
    ),
}


def _data(shape: tuple[int, ...], outputs: int, n: int = 13, seed: int = 0) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    return rng.standard_normal((n, *shape)) * 2.0 + 0.5, rng.standard_normal((n, outputs))


def _trainer(name: str, mode: str, *, profile: str = "checked_cpu", dtype: str = "float32",
             objective: str = "mse", optimizer: optim.OptimizerConfig | None = None) -> Trainer:
    layer, shape, _ = MODELS[name]
    config = RunConfig(optimizer or optim.adam(0.02), execution=mode, profile=profile, dtype=dtype)
    return Trainer(layer(), objective=objective, config=config, seed=7, input_shape=shape)


def _assert_same_state(eager: Trainer, graph: Trainer) -> None:
    a, b = eager.model.state(), graph.model.state()
    assert list(a) == list(b)
    for key in a:
        assert a[key].dtype == b[key].dtype == eager.model.dtype, key
        assert np.array_equal(a[key], b[key]), key


def _pair(name: str, **kwargs: object) -> tuple[Trainer, Trainer]:
    return _trainer(name, "eager", **kwargs), _trainer(name, "typed-graph", **kwargs)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------ bit for bit


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(MODELS))
def test_shuffled_fit_over_epochs_equals_eager(name: str, dtype: str, profile: str) -> None:
    """Three shuffled epochs of 13 samples in minibatches of 5 (a last minibatch of 3, so two
    graphs per trainer): the same losses, weights, running statistics and predictions."""
    _, shape, outputs = MODELS[name]
    x, y = _data(shape, outputs)
    eager, graph = _pair(name, profile=profile, dtype=dtype)
    losses = [t.fit(x, y, epochs=3, batch_size=5, shuffle=True) for t in (eager, graph)]
    assert losses[0] == losses[1]
    assert all(np.isfinite(losses[0]))
    _assert_same_state(eager, graph)
    predictions = [t.predict(x) for t in (eager, graph)]
    assert predictions[0].dtype == predictions[1].dtype == np.dtype(dtype)
    assert np.array_equal(predictions[0], predictions[1])


def test_the_layers_really_act() -> None:
    """Not vacuous: the dropout masks change the losses (a model without the dropouts trains to
    other values), masks are redrawn each step, and the running statistics move off their
    initial zeros and ones."""
    _, shape, outputs = MODELS["dropout_and_bn"]
    x, y = _data(shape, outputs)
    graph = _trainer("dropout_and_bn", "typed-graph")
    losses = graph.fit(x, y, epochs=2, batch_size=5, shuffle=False)
    state = graph.model.state()
    for name in ("1.running_mean", "5.running_mean"):
        assert not np.any(state[name] == 0.0), name
    for name in ("1.running_var", "5.running_var"):
        assert not np.any(state[name] == 1.0), name
    no_dropout = nn.sequential(
        nn.linear(4, 8), nn.batch_norm1d(8, momentum=0.2), nn.relu(), nn.dropout(0.0), nn.linear(8, 8),
        nn.batch_norm1d(8, affine=False), nn.dropout(0.0), nn.linear(8, 3),
    )
    plain = Trainer(no_dropout, config=RunConfig(optim.adam(0.02), execution="typed-graph"), seed=7)
    assert plain.fit(x, y, epochs=2, batch_size=5, shuffle=False) != losses
    # the same minibatch twice from the same weights: a fresh mask each step gives another loss
    again = _trainer("mlp_dropout", "typed-graph", optimizer=optim.sgd(0.0))
    xb, yb = _data((4,), 3, n=6)
    assert again.step(xb, yb) != again.step(xb, yb)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_steps_on_several_batch_shapes_equal_eager(dtype: str) -> None:
    """``step`` on minibatches of 4, 2, 4, 3 and 2 samples (three cached graphs, revisited) under
    SGD with cross-entropy labels: loss by loss, then weights and statistics."""
    _, shape, outputs = MODELS["conv_bn2d_dropout"]
    x, _ = _data(shape, outputs, n=15)
    labels = np.arange(15) % outputs
    eager, graph = _pair("conv_bn2d_dropout", dtype=dtype, objective="cross-entropy",
                         optimizer=optim.sgd(0.1, momentum=0.9))
    start = 0
    for size in (4, 2, 4, 3, 2):
        xb, yb = x[start : start + size], labels[start : start + size]
        assert eager.step(xb, yb) == graph.step(xb, yb)
        start += size
    _assert_same_state(eager, graph)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_switching_between_fit_predict_and_evaluate_reads_fresh_statistics(profile: str) -> None:
    """fit, predict, evaluate, fit again, predict: each prediction from the cached evaluation
    graph must use the running statistics of that moment (a stale copy from the first lowering
    would repeat the first predictions)."""
    _, shape, outputs = MODELS["dropout_and_bn"]
    x, y = _data(shape, outputs)
    eager, graph = _pair("dropout_and_bn", profile=profile)
    seen = []
    for epochs in (1, 2, 1):
        assert eager.fit(x, y, epochs=epochs, batch_size=5) == graph.fit(x, y, epochs=epochs, batch_size=5)
        _assert_same_state(eager, graph)
        predictions = [t.predict(x, batch_size=5) for t in (eager, graph)]
        assert np.array_equal(predictions[0], predictions[1])
        assert eager.evaluate(x, y) == graph.evaluate(x, y)
        seen.append(predictions[1])
    assert not np.array_equal(seen[0], seen[1]) and not np.array_equal(seen[1], seen[2])


def test_prediction_after_load_state_uses_the_loaded_statistics() -> None:
    """Running statistics changed by ``model.load_state`` (no training in between) reach the
    cached typed-graph program's next prediction, as they reach eager's."""
    _, shape, outputs = MODELS["conv_bn2d"]
    x, _ = _data(shape, outputs)
    eager, graph = _pair("conv_bn2d")
    before = graph.predict(x)
    assert np.array_equal(before, eager.predict(x))
    state = graph.model.state()
    state["1.running_mean"] = np.array([0.5, -1.0, 2.0])
    state["1.running_var"] = np.array([4.0, 0.25, 9.0])
    for trainer in (eager, graph):
        trainer.model.load_state(state)
    after = [t.predict(x) for t in (eager, graph)]
    assert np.array_equal(after[0], after[1])
    assert not np.array_equal(after[1], before)


def test_a_layer_normalising_twice_with_one_set_of_statistics_equals_eager() -> None:
    """Two batch norms sharing their buffers: the second update starts from the first's pending
    value (as torch updates a module called twice), in both modes."""

    class Twice(Layer):
        def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
            return input_shape

        def param_specs(self):  # type: ignore[no-untyped-def]
            return (
                ParamSpec("weight", (3,), "ones"),
                ParamSpec("running_mean", (3,), "zeros", trainable=False),
                ParamSpec("running_var", (3,), "ones", trainable=False),
            )

        def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
            for _ in range(2):
                x = ops.batch_norm(x, params[0], None, params[1], params[2], training=training, eps=1e-5,
                                   momentum=0.25)
                x = ops.add(x, x)
            return x

    x, y = _data((3,), 3, n=8)
    trainers = [Trainer(Twice(), config=RunConfig(execution=mode), input_shape=(3,)) for mode in
                ("eager", "typed-graph")]
    assert trainers[0].fit(x, y, epochs=2, batch_size=4) == trainers[1].fit(x, y, epochs=2, batch_size=4)
    _assert_same_state(*trainers)
    assert np.array_equal(trainers[0].predict(x), trainers[1].predict(x))


def test_broadcast_to_with_minus_one_lowers_as_eager_runs_it() -> None:
    """``ops.reshape(x, (-1, 1, 3))`` infers and ``ops.broadcast_to(x, (-1, 2, 3))`` keeps the batch
    axis's size: eager passes them to ``functional``, and the lowering resolves them from the
    node's shape, as the IR takes only extents (it raised "reshape: expected a non-negative
    integer, got -1"); both modes train to the same bits."""

    class Spread(Layer):
        def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
            return (2, input_shape[0])

        def param_specs(self):  # type: ignore[no-untyped-def]
            return (ParamSpec("weight", (3, 3), "uniform"),)

        def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
            rows = ops.reshape(ops.linear(x, params[0], None), (-1, 1, 3))
            return ops.broadcast_to(rows, (-1, 2, 3))

    x, y = _data((3,), 6, n=8)
    y = y.reshape(8, 2, 3)
    trainers = [Trainer(Spread(), config=RunConfig(execution=mode), input_shape=(3,))
                for mode in ("eager", "typed-graph")]
    assert trainers[0].fit(x, y, epochs=2, batch_size=4) == trainers[1].fit(x, y, epochs=2, batch_size=4)
    _assert_same_state(*trainers)


@pytest.mark.parametrize(
    ("shape", "refusal"),
    [
        ((-1.0, 6), r"^reshape: shape\[0\] must be an integer; got -1\.0 of type float"),
        ((np.float64(-1), 6), r"^reshape: shape\[0\] must be an integer"),
        ((iter((4, 6)), None)),  # a generator of sizes, as eager takes it
    ],
    ids=["float", "numpy-float", "generator"],
)
def test_the_lowering_checks_a_reshape_shape_as_eager_does(shape: object, refusal: str | None) -> None:
    """review113 F3, F4: the lowering resolved a float ``-1.0`` (``-1.0 == -1``) and trained where
    eager refuses it, and its ``-1 in shape`` used up a generator; it now runs eager's integer
    check on the shape first, so both modes agree."""

    class Rows(Layer):
        def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
            return (6,)

        def param_specs(self):  # type: ignore[no-untyped-def]
            return (ParamSpec("weight", (6, 3), "uniform"),)

        def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
            sizes = tuple(shape) if isinstance(shape, tuple) else shape
            return ops.reshape(ops.linear(x, params[0], None), sizes)

    x, y = _data((3,), 6, n=4)
    for mode in ("eager", "typed-graph"):
        trainer = Trainer(Rows(), config=RunConfig(execution=mode), input_shape=(3,))
        if refusal is None:
            shape = iter((4, 6))  # a fresh generator for each mode
            assert len(trainer.fit(x, y, epochs=1, batch_size=4)) == 1
        else:
            with pytest.raises(TypeError, match=refusal):
                trainer.fit(x, y, epochs=1, batch_size=4)


# ------------------------------------------------------------------------------------ audit


def test_the_audit_lists_every_capsule_that_ran() -> None:
    """``trainer.selected`` of a typed-graph trainer holds the bernoulli_mask capsule (the masks),
    batch_norm (the graph's nodes) and the running-statistics update's capsules, the same set
    eager selects."""
    _, shape, outputs = MODELS["dropout_and_bn"]
    x, y = _data(shape, outputs)
    eager, graph = _pair("dropout_and_bn")
    for trainer in (eager, graph):
        trainer.fit(x, y, epochs=1, batch_size=5)
    names = {kernel.capsule.name for kernel in graph.selected}
    assert {
        "reference.bernoulli_mask",
        "reference.batch_norm",
        "reference.slice",
        "reference.sub",
        "reference.reduce_mean",
        "reference.reduce_sum",
        "reference.scale",
        "reference.add",
        "reference.reshape",
        "reference.mul",
        "reference.linear",
        "reference.relu",
        "reference.mse_loss",
    } <= names
    assert names == {kernel.capsule.name for kernel in eager.selected}
    assert len(names) == len(graph.selected)  # each capsule once


def test_fast_cpu_draws_masks_on_the_reference_capsule() -> None:
    """``fast_cpu`` has no aten bernoulli_mask: eager and the typed graph both draw on
    ``reference.bernoulli_mask`` and run batch norm on ``aten.batch_norm``."""
    _, shape, outputs = MODELS["conv_bn2d_dropout"]
    x, y = _data(shape, outputs)
    graph = _trainer("conv_bn2d_dropout", "typed-graph", profile="fast_cpu")
    graph.fit(x, y, epochs=1, batch_size=5)
    by_op = {kernel.op.label: kernel.capsule.name for kernel in graph.selected}
    assert by_op["bernoulli_mask"] == "reference.bernoulli_mask"
    assert by_op["batch_norm"] == "aten.batch_norm"


# --------------------------------------------------------------------------------- lowering


def test_lowering_records_batch_norm_nodes_updates_and_statistics() -> None:
    layer, shape, _ = MODELS["dropout_and_bn"]
    model = nn.build(layer(), input_shape=shape, seed=0)
    names = model.names
    trained = lower_model(model, (5, *shape), training=True)
    nodes = trained.built.graph.nodes
    bn = [n for n in nodes if n.kind.tag == "batch_norm_train"]
    assert [n.kind.describe() for n in bn] == ["batch_norm_train 1 8", "batch_norm_train 1 8"]
    assert not any(n.kind.tag == "batch_norm_eval" for n in nodes)
    first, second = trained.running_updates
    assert first == RunningUpdate(bn[0].parents[0], names.index("1.running_mean"),
                                  names.index("1.running_var"), 0.2)
    assert second == RunningUpdate(bn[1].parents[0], names.index("5.running_mean"),
                                   names.index("5.running_var"), 0.1)
    payload = trained.built.payloads[bn[1].id]
    assert isinstance(payload, BatchNormTrainParams) and payload.weight is None and payload.eps == 1e-5
    assert trained.payload_params[bn[0].id] == (names.index("1.weight"), names.index("1.bias"))
    assert trained.payload_params[bn[1].id] == (None, None)
    assert len(trained.dropout_masks) == 2 and trained.statistic_params == {}
    evaluation = lower_model(model, (5, *shape))
    eval_nodes = [n for n in evaluation.built.graph.nodes if n.kind.tag == "batch_norm_eval"]
    assert [evaluation.statistic_params[n.id] for n in eval_nodes] == [
        (names.index("1.running_mean"), names.index("1.running_var")),
        (names.index("5.running_mean"), names.index("5.running_var")),
    ]
    assert evaluation.running_updates == () and evaluation.dropout_masks == ()


def test_batch_norm_with_computed_statistics_is_refused_when_lowered() -> None:
    """The IR node carries its parameters as a payload: a computed running mean cannot be fed."""

    class Computed(Layer):
        def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
            return input_shape

        def param_specs(self):  # type: ignore[no-untyped-def]
            return (ParamSpec("shift", (2,), "zeros"), ParamSpec("var", (2,), "ones", trainable=False))

        def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
            mean = ops.add(params[0], params[0])
            out = ops.batch_norm(x, None, None, mean, params[1], training=training, eps=1e-5, momentum=0.1)
            return ops.add(out, params[0])

    trainer = Trainer(Computed(), config=RunConfig(execution="typed-graph"), input_shape=(2,))
    before = trainer.model.state()
    for run in (lambda: trainer.step(np.arange(6.0).reshape(3, 2), np.zeros((3, 2))),
                lambda: trainer.predict(np.ones((2, 2)))):
        with pytest.raises(LoweringTypeError, match="batch_norm: the running mean must be a model parameter"):
            run()
    assert all(np.array_equal(v, before[k]) for k, v in trainer.model.state().items())


def test_a_trainable_parameter_updated_as_a_buffer_is_refused_as_eagerly() -> None:
    class Odd(Layer):
        def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
            return input_shape

        def param_specs(self):  # type: ignore[no-untyped-def]
            return (
                ParamSpec("shift", (2,), "zeros"),
                ParamSpec("var", (2,), "ones", trainable=False),
                ParamSpec("weight", (2, 2), "ones"),
            )

        def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
            h = ops.linear(x, params[2], None)
            return ops.batch_norm(
                h, None, None, params[0], params[1], training=training, eps=1e-5, momentum=0.1
            )

    for mode in ("eager", "typed-graph"):
        trainer = Trainer(Odd(), config=RunConfig(execution=mode), input_shape=(2,))
        with pytest.raises(TrainerError, match="a layer updated the trainable parameter shift as a buffer"):
            trainer.step(np.arange(6.0).reshape(3, 2), np.zeros((3, 2)))
        assert np.array_equal(trainer.model.state()["shift"], np.zeros(2))


def test_one_sample_minibatches_are_still_refused_before_any_update() -> None:
    graph = _trainer("linear_bn1d_vector", "typed-graph")
    before = graph.model.state()
    with pytest.raises(TrainerError, match="needs at least 2 samples in every minibatch"):
        graph.fit(np.ones((5, 4)), np.ones((5, 3)), batch_size=2)  # a last minibatch of 1
    assert all(np.array_equal(v, before[k]) for k, v in graph.model.state().items())


# ----------------------------------------------------------------------------- the IR node


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_train_evaluates_as_the_eager_kernel(dtype: type) -> None:
    """``evaluate`` on a batch_norm_train node (channel axis 1) gives eager's reference bits; on
    channel axis 2 the transposed input's values, as torch computes them."""
    import torch

    rng = np.random.default_rng(3)
    x = (rng.standard_normal((4, 3, 5)) * 3 + 1).astype(dtype)
    w, b = rng.standard_normal(3).astype(dtype), rng.standard_normal(3).astype(dtype)
    builder = GraphBuilder()
    node = builder.batch_norm_train(builder.input(x.shape), 1, BatchNormTrainParams(w, b, 1e-3))
    built = builder.build()
    out = evaluate(built.graph, {0: x}, built.payloads)[node]
    with Session(profiles.get("checked_cpu")):
        expected = eager_batch_norm(
            Tensor(x), weight=Tensor(w), bias=Tensor(b), training=True, eps=1e-3
        ).numpy()
    assert out.dtype == dtype and np.array_equal(out, expected)
    moved = GraphBuilder()
    node = moved.batch_norm_train(moved.input((4, 5, 3)), -1, BatchNormTrainParams(None, None))
    built = moved.build()
    assert built.graph.nodes[node].kind.describe() == "batch_norm_train 2 3"
    got = evaluate(built.graph, {0: x.transpose(0, 2, 1)}, built.payloads)[node]
    oracle = torch.nn.functional.batch_norm(
        torch.tensor(x, dtype=torch.float64), None, None, training=True, eps=1e-5
    ).numpy().transpose(0, 2, 1)
    np.testing.assert_allclose(got, oracle, rtol=1e-5 if dtype == np.float32 else 1e-12, atol=1e-5)


def test_batch_norm_train_builder_refusals() -> None:
    builder = GraphBuilder()
    x = builder.input((4, 3))
    with pytest.raises(IRError, match=r"batch_norm_train: params must be a BatchNormTrainParams, got "):
        builder.batch_norm_train(x, 1, LayerNormParams())  # type: ignore[arg-type]
    with pytest.raises(IRError, match=r"weight \[4\] does not match the 3 channels at axis 1 of \[4, 3\]"):
        builder.batch_norm_train(x, 1, BatchNormTrainParams(np.ones(4)))
    with pytest.raises(IRError, match=r"batch_norm_train: axis 2 out of range for shape \[4, 3\]"):
        builder.batch_norm_train(x, 2, BatchNormTrainParams())
    with pytest.raises(IRError, match=r"batch_norm_train: axis -3 out of range"):
        builder.batch_norm_train(x, -3, BatchNormTrainParams())
    assert len(builder.build().graph.nodes) == 1  # nothing appended


def _program(builder: GraphBuilder, **kwargs: object) -> GraphProgram:
    built = builder.build()
    plan = profiles.get("checked_cpu").accept_graph(built.graph).plan
    assert plan is not None
    return GraphProgram(built.graph, built.payloads, plan, {}, {}, **kwargs)  # type: ignore[arg-type]


@pytest.mark.parametrize("kind", ["train", "eval"])
def test_the_executor_refuses_batch_norm_off_channel_axis_1(kind: str) -> None:
    builder = GraphBuilder()
    x = builder.input((2, 3, 4))
    if kind == "train":
        builder.batch_norm_train(x, 2, BatchNormTrainParams())
    else:
        builder.batch_norm_eval(x, 2, BatchNormParams(np.zeros(4), np.ones(4)))
    refusal = (
        rf"node 1 \(batch_norm_{kind} 2 4\) is not executable: the batch_norm kernel takes "
        r"\(N, C, \*spatial\) inputs \(accepted: channel_axis 1, got 2\)"
    )
    with pytest.raises(SessionError, match=refusal):
        _program(builder)


def test_the_executor_feeds_batch_norm_eval_statistics_from_params_or_payload() -> None:
    """With ``statistic_params`` the statistics come from the params given to each run; without,
    from the payload."""
    x = np.random.default_rng(1).standard_normal((3, 2, 2))
    builder = GraphBuilder()
    builder.batch_norm_eval(builder.input(x.shape), 1, BatchNormParams(np.zeros(2), np.ones(2)))
    mean, var = np.array([1.0, -2.0]), np.array([4.0, 0.25])
    with Session(profiles.get("checked_cpu")):
        fed = _program(builder, statistic_params={1: (0, 1)}).run([Tensor(x)], [Tensor(mean), Tensor(var)], 1)
        fixed = _program(builder).run([Tensor(x)], [], 1)
        expected = eager_batch_norm(
            Tensor(x), running_mean=Tensor(mean), running_var=Tensor(var), training=False
        ).numpy()
        initial = eager_batch_norm(
            Tensor(x), running_mean=Tensor(np.zeros(2)), running_var=Tensor(np.ones(2)), training=False
        ).numpy()
    assert np.array_equal(fed.numpy(), expected)
    assert np.array_equal(fixed.numpy(), initial)


def test_run_and_backward_keeping_refuses_other_node_ids() -> None:
    builder = GraphBuilder()
    x = builder.input((2, 3))
    builder.sum(builder.relu(x))
    program = _program(builder)
    inputs = [Tensor(np.ones((2, 3)), requires_grad=True)]
    with Session(profiles.get("checked_cpu")):
        for bad in (3, -1, "1"):
            with pytest.raises(SessionError, match=r"typed graph: keep must hold node ids in 0\.\.2"):
                program.run_and_backward_keeping(inputs, [], 2, [bad])  # type: ignore[list-item]
        loss, (kept,) = program.run_and_backward_keeping(inputs, [], 2, [1])
    assert float(loss.numpy()) == 6.0 and np.array_equal(kept.numpy(), np.ones((2, 3)))
    assert np.array_equal(inputs[0].grad.numpy(), np.ones((2, 3)))  # type: ignore[union-attr]


def test_the_graph_plan_report_shows_the_training_lowering() -> None:
    """What ``torchlean graph``'s report lines show for such a model's training graph: the mask
    is an ``input`` (no kernel), dropout is ``mul_elem`` and ``scale``, batch norm one
    ``batch_norm_train`` node on ``reference.batch_norm``."""
    from torchlean.backend import report

    model = nn.build(nn.sequential(nn.linear(4, 3), nn.batch_norm1d(3), nn.dropout(0.5)), seed=0)
    graph = lower_model(model, (2, 4), training=True).built.graph
    profile = profiles.get("checked_cpu")
    lines = report.graph_plan_lines(profile.plan_graph(graph))
    assert lines[0] == "nodes 11, planned 7"
    assert lines[-3:] == [
        "  7 batch_norm_train 1 3 -> reference.batch_norm",
        "  9 mul_elem -> reference.mul",
        "  10 scale 2.0 -> reference.scale",
    ]
    assert graph.nodes[8].kind.tag == "input"
    assert profile.accept_graph(graph).plan is not None


# ------------------------------------------------------------------------------- embeddings

EMBEDDING_MODELS: dict[str, tuple[LayerFn, int, int]] = {  # name -> (layer, tokens, vocabulary)
    "bag_of_embeddings": (lambda: nn.sequential(nn.embedding(9, 4), nn.mean_pool(0), nn.linear(4, 3)), 5, 9),
    "embedding_dropout_bn": (
        lambda: nn.sequential(
            nn.embedding(9, 4), nn.dropout(0.3), nn.flatten(), nn.linear(20, 6), nn.batch_norm1d(6),
            nn.relu(), nn.linear(6, 3),
        ),
        5,
        9,
    ),
    "embedding_padding": (  # padding_idx 2: training gathers from [table, detach table] (concat)
        lambda: nn.sequential(nn.embedding(9, 4, 2), nn.flatten(), nn.linear(20, 3)),
        5,
        9,
    ),
    "language_model": (  # per-position cross-entropy over the vocabulary, as examples/char_lm.py
        lambda: nn.sequential(
            nn.embedding(9, 8), nn.positional_embedding(5, 8), nn.transformer_block(8, 2, mlp_hidden=16),
            nn.linear(8, 9),
        ),
        5,
        9,
    ),
}


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("name", list(EMBEDDING_MODELS))
def test_embedding_models_train_and_predict_as_eagerly(name: str, dtype: str, profile: str) -> None:
    layer, tokens, vocabulary = EMBEDDING_MODELS[name]
    rng = np.random.default_rng(5)
    ids = rng.integers(0, vocabulary, size=(11, tokens))
    labels = rng.integers(0, vocabulary, size=(11, tokens)) if name == "language_model" else np.arange(11) % 3
    trainers = [
        Trainer(layer(), objective="cross-entropy", seed=2, input_shape=(tokens,),
                config=RunConfig(optim.adamw(0.01), execution=mode, profile=profile, dtype=dtype))
        for mode in ("eager", "typed-graph")
    ]
    losses = [t.fit(ids, labels, epochs=2, batch_size=4) for t in trainers]
    assert losses[0] == losses[1]
    _assert_same_state(*trainers)
    assert np.array_equal(trainers[0].predict(ids, batch_size=3), trainers[1].predict(ids, batch_size=3))
    assert trainers[0].evaluate(ids, labels) == trainers[1].evaluate(ids, labels)
    names = {kernel.capsule.name.split(".")[1] for kernel in trainers[1].selected}
    assert "gather" in names


_WITH_DROPOUT = {"mlp_dropout", "dropout_and_bn", "conv_bn2d_dropout", "embedding_dropout_bn"}
_WITH_BATCH_NORM = {name for name in MODELS if "bn" in name} | {"embedding_dropout_bn"}


@pytest.mark.parametrize("mode", ["eager", "typed-graph"])
@pytest.mark.parametrize("name", [*MODELS, *EMBEDDING_MODELS])
def test_fast_cpu_runs_every_op_on_aten_but_the_dropout_masks(name: str, mode: str) -> None:
    """review30 F1: a ``fast_cpu`` trainer (fit, predict, evaluate) lists an ``aten.*`` capsule for
    every op it ran but dropout's ``bernoulli_mask``: batch norm's running-statistics update
    (``aten.slice`` first) and embedding lookups (``aten.gather``) included, eagerly and as a
    typed graph; an embedding with a ``padding_idx`` adds ``aten.concat`` in training (the
    model ``embedding_padding``), no fallback."""
    if name in MODELS:
        layer, shape, outputs = MODELS[name]
        x, y = _data(shape, outputs)
        objective, batch_size = "mse", 5
    else:
        layer, tokens, vocabulary = EMBEDDING_MODELS[name]
        rng = np.random.default_rng(5)
        shape = (tokens,)
        x = rng.integers(0, vocabulary, size=(11, tokens))
        y = rng.integers(0, vocabulary, size=(11, tokens)) if name == "language_model" else np.arange(11) % 3
        objective, batch_size = "cross-entropy", 4
    config = RunConfig(optim.adam(0.02), execution=mode, profile="fast_cpu")
    trainer = Trainer(layer(), objective=objective, config=config, seed=7, input_shape=shape)
    trainer.fit(x, y, epochs=1, batch_size=batch_size)
    trainer.predict(x)
    trainer.evaluate(x, y)
    names = {kernel.capsule.name for kernel in trainer.selected}
    fallbacks = {n for n in names if not n.startswith("aten.")}
    assert fallbacks == ({"reference.bernoulli_mask"} if name in _WITH_DROPOUT else set()), names
    assert ("aten.slice" in names) == (name in _WITH_BATCH_NORM)
    assert ("aten.gather" in names) == (name in EMBEDDING_MODELS)
    assert ("aten.concat" in names) == (name == "embedding_padding")
    assert all(kernel.capsule.name == f"aten.{kernel.op.label}" for kernel in trainer.selected
               if kernel.op.label != "bernoulli_mask")


def test_embedding_lowering_gathers_by_an_index_input() -> None:
    from torchlean.nn.lowering import EmbeddingIndex

    model = nn.build(nn.sequential(nn.embedding(9, 4), nn.flatten()), input_shape=(5,), seed=0)
    lowered = lower_model(model, (3, 5), training=True)
    nodes = lowered.built.graph.nodes
    assert [n.kind.describe() for n in nodes] == [
        "input",
        "input",
        "const [9, 4]",
        "gather 0",
        "reshape [15, 4] [3, 5, 4]",
        "reshape [3, 5, 4] [3, 20]",
    ]
    assert lowered.embedding_indices == (EmbeddingIndex(1, 0, 4),)
    assert nodes[1].out_shape == (15, 4) and lowered.param_nodes == {2: 0}
    ids = np.arange(15).reshape(3, 5) % 9
    index = np.broadcast_to(ids.reshape(-1, 1), (15, 4)).astype(np.int64)
    out = evaluate(lowered.built.graph, {0: ids, 1: index}, lowered.built.payloads)[lowered.output]
    assert np.array_equal(out, model.parameters[0][ids].reshape(3, 20))  # the table's rows exactly


def test_embedding_ids_computed_in_the_graph_are_refused() -> None:
    class Shifted(Layer):
        def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
            return (*input_shape, 2)

        def param_specs(self):  # type: ignore[no-untyped-def]
            return (ParamSpec("table", (4, 2), "normal", 1.0),)

        def index_count(self):  # type: ignore[no-untyped-def]
            return 4

        def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
            return ops.embedding(ops.reshape(x, ops.shape(x)), params[0])

    model = nn.build(Shifted(), input_shape=(3,), seed=0)
    with pytest.raises(IRError, match=r"the ids must be an input of the graph .* got node 1 \(reshape"):
        lower_model(model, (2, 3))


def test_gather_node_shape_rule_and_executor() -> None:
    builder = GraphBuilder()
    x = builder.input((3, 4))
    with pytest.raises(IRError, match=r"gather: index \[2, 5\] does not fit input \[3, 4\] along axis 0"):
        builder.gather(x, builder.input((2, 5)), 0)
    with pytest.raises(IRError, match=r"gather: axis 2 out of range for shape \[3, 4\]"):
        builder.gather(x, builder.input((2, 4)), 2)
    builder = GraphBuilder()
    x = builder.input((3, 4))
    out = builder.gather(x, builder.input((2, 4)), -2)
    program = _program(builder)
    values = np.arange(12.0).reshape(3, 4)
    index = np.array([[2, 0, 1, 2], [0, 0, 2, 1]])
    with Session(profiles.get("checked_cpu")):
        got = program.run([Tensor(values), Tensor(index)], [], out)
    assert np.array_equal(got.numpy(), np.take_along_axis(values, index, axis=0))


def test_the_graph_cache_evicts_without_a_key_error_when_another_thread_did(monkeypatch) -> None:
    """review77 F4: two threads predicting on one typed-graph trainer could both evict the same
    least recently used program (``del cache[oldest]``): one got a KeyError. Simulated here: the
    oldest entry vanishes between the eviction's read and its delete."""
    import torchlean.trainer as trainer_module

    model = nn.sequential(nn.linear(4, 3))
    trainer = Trainer(model, objective="cross-entropy", config=RunConfig(execution="typed-graph"), seed=0)
    x = np.ones((12, 4))
    for n in range(1, trainer_module.GRAPH_CACHE_SIZE + 1):
        trainer.predict(x[:n])
    graphs = trainer._graphs

    class Racing(dict):  # the other thread evicts the oldest as this one reads it
        def __iter__(self):
            keys = list(super().__iter__())
            super().pop(keys[0])
            return iter(keys)

    trainer._graphs = Racing(graphs)
    expected = trainer_module.Trainer(model, objective="cross-entropy",
                                      config=RunConfig(execution="typed-graph"), seed=0).predict(x)
    np.testing.assert_array_equal(trainer.predict(x), expected)
    assert len(trainer._graphs) <= trainer_module.GRAPH_CACHE_SIZE
