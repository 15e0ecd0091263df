"""``padding_idx`` of ``tl.embedding`` and ``nn.embedding``: torch.nn.Embedding's padding row.

Oracles: ``torch.nn.functional.embedding(..., padding_idx=)`` and ``torch.nn.Embedding`` in
float64 (values, gradients with repeated padding ids, training from the same weights under SGD,
Adam and the decaying optimizers), numpy indexing, and torch's own normalisation of a negative
``padding_idx``.
"""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.autograd.grad_mode import set_grad_enabled
from torchlean.backend.errors import GuardError
from torchlean.nn import ShapeError
from torchlean.nn.layers import Embedding, ParamSpec
from torchlean.tensor import TensorTypeError
from torchlean.trainer import RunConfig, Trainer

V, D, TOKENS, CLASSES = 7, 3, 4, 2


def _ids_with_padding(shape: tuple[int, ...], pad: int, seed: int) -> np.ndarray:
    """Random ids over ``[0, V)`` where about half the positions hold ``pad`` (repeated)."""
    rng = np.random.default_rng(seed)
    ids = rng.integers(0, V, size=shape)
    ids[rng.random(shape) < 0.5] = pad
    return ids


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [0, 4, -1, -V])
@pytest.mark.parametrize("shape", [(), (9,), (3, 5), (2, 0, 3)])
def test_lookup_and_gradient_match_torch(shape, padding_idx, dtype, profile):
    """Values are the table's rows, the padding row included (not zeroed); the gradient of every
    other row sums its positions' upstream gradients as without padding; the padding row's is zero,
    even where the upstream gradient at a padding position is NaN (torch never reads it)."""
    pad = padding_idx % V
    ids = _ids_with_padding(shape, pad, seed=1)
    rng = np.random.default_rng(2)
    table = rng.standard_normal((V, D)).astype(dtype)
    upstream = rng.standard_normal((*shape, D)).astype(dtype)
    upstream[ids == pad] = np.nan
    weight = tl.tensor(table, requires_grad=True)
    with tl.session(profile=profile):
        out = tl.embedding(ids, weight, padding_idx=padding_idx)
        tl.reduce_sum(tl.mul(out, tl.tensor(upstream))).backward()
    theirs = torch.tensor(table, dtype=torch.float64, requires_grad=True)
    expected = torch.nn.functional.embedding(torch.tensor(ids), theirs, padding_idx=padding_idx)
    expected.backward(torch.tensor(upstream, dtype=torch.float64))
    assert out.shape == (*shape, D) and out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), table[ids])
    np.testing.assert_array_equal(out.numpy(), expected.detach().numpy().astype(dtype))
    assert weight.grad is not None and theirs.grad is not None
    grad = weight.grad.numpy()
    np.testing.assert_array_equal(grad[pad], 0.0)
    assert np.isfinite(grad).all()
    if dtype == "float64":  # the same additions in the same order as torch's dense backward
        np.testing.assert_array_equal(grad, theirs.grad.numpy())
    else:
        np.testing.assert_allclose(grad, theirs.grad.numpy(), rtol=1e-6, atol=1e-6)


def test_padding_row_holds_its_current_value_and_sends_no_gradient_by_hand():
    table = np.arange(8.0).reshape(4, 2)
    weight = tl.tensor(table, requires_grad=True)
    out = tl.embedding([[1, 2, 1], [2, 0, 2]], weight, padding_idx=2)
    tl.reduce_sum(out).backward()
    np.testing.assert_array_equal(out.numpy()[0], [[2.0, 3.0], [4.0, 5.0], [2.0, 3.0]])
    assert weight.grad is not None
    np.testing.assert_array_equal(weight.grad.numpy(), [[1.0, 1.0], [2.0, 2.0], [0.0, 0.0], [0.0, 0.0]])


def test_only_padding_ids_give_a_zero_gradient_not_none():
    """torch: every id is padding_idx -> weight.grad is a zero table (so weight decay applies)."""
    weight = tl.tensor(np.ones((3, 2)), requires_grad=True)
    tl.reduce_sum(tl.embedding([1, 1, 1], weight, padding_idx=1)).backward()
    assert weight.grad is not None
    np.testing.assert_array_equal(weight.grad.numpy(), np.zeros((3, 2)))


def test_the_split_lookup_is_recorded_only_when_a_padding_id_sends_gradient():
    """With a padding id and a gradient to record: gather, concat, reshape capsules; with no
    padding id in the batch, under no_grad, or for a weight without grad: the plain lookup."""

    def names(ids: list[int], *, requires_grad: bool = True, grad: bool = True) -> list[str]:
        weight = tl.tensor(np.ones((4, 2)), requires_grad=requires_grad)
        with tl.session() as session, set_grad_enabled(grad):
            tl.embedding(ids, weight, padding_idx=3)
            return [kernel.capsule.name for kernel in session.selected]

    plain = ["reference.gather", "reference.reshape"]
    assert names([0, 3, 1]) == ["reference.gather", "reference.concat", "reference.reshape"]
    assert names([0, 2, 1]) == plain
    assert names([0, 3, 1], grad=False) == plain
    assert names([0, 3, 1], requires_grad=False) == plain


def test_functional_padding_idx_leaves_values_unchanged_without_gradient():
    table = np.random.default_rng(0).standard_normal((5, 4))
    ids = np.array([[4, 0, 4], [1, 4, 2]])
    with tl.no_grad():
        out = tl.embedding(ids, tl.tensor(table), padding_idx=-1)
    np.testing.assert_array_equal(out.numpy(), table[ids])


@pytest.mark.parametrize(
    ("padding_idx", "error", "message"),
    [
        (True, TensorTypeError, r"padding_idx must be None or an integer, got True of type bool"),
        (np.True_, TensorTypeError, r"padding_idx must be None or an integer, got np\.True_ of type bool"),
        (
            2.0,
            TensorTypeError,
            r"padding_idx must be None or an integer, got 2\.0 of type float "
            r"\(accepted: None or an int in \[-5, 5\)",
        ),
        ("1", TensorTypeError, r"padding_idx must be None or an integer, got '1' of type str"),
        (
            5,
            GuardError,
            r"padding_idx 5 is out of range for 5 embeddings \(accepted: None or an int in \[-5, 5\), "
            r"a negative one counting from the end\)\Z",
        ),
        (-6, GuardError, r"padding_idx -6 is out of range for 5 embeddings"),
        (2**70, GuardError, r"padding_idx 1180591620717411303424 is out of range"),
    ],
)
def test_functional_refuses_bad_padding_idx(padding_idx, error, message):
    weight = tl.tensor(np.zeros((5, 2)), requires_grad=True)
    with pytest.raises(error, match=r"embedding: " + message):
        tl.embedding([0, 1], weight, padding_idx=padding_idx)


def test_an_empty_table_takes_no_padding_idx():
    message = r"padding_idx 0 is out of range for 0 embeddings \(accepted: None, as the table has no rows\)"
    with pytest.raises(GuardError, match=message):
        tl.embedding(np.zeros(0, dtype=np.int64), tl.tensor(np.zeros((0, 2))), padding_idx=0)


@pytest.mark.parametrize("padding_idx", [0, 3, 9, -1, -4, -10, np.int64(-2), np.int32(5)])
def test_layer_normalises_padding_idx_as_torch(padding_idx):
    layer = nn.embedding(10, 4, padding_idx=padding_idx)
    expected = torch.nn.Embedding(10, 4, padding_idx=int(padding_idx)).padding_idx
    assert layer.padding_idx == expected and type(layer.padding_idx) is int
    assert layer.describe() == f"embedding(10, 4, padding_idx={expected})"
    assert layer == nn.embedding(10, 4, expected) == Embedding(10, 4, padding_idx)


def test_positional_padding_idx_and_describe():
    assert nn.embedding(10, 4, 0) == nn.embedding(10, 4, padding_idx=0)
    assert nn.embedding(10, 4, 0) != nn.embedding(10, 4)
    assert nn.embedding(10, 4).padding_idx is None
    assert nn.embedding(10, 4).describe() == "embedding(10, 4)"
    model = nn.build(nn.sequential(nn.embedding(10, 4, -1), nn.flatten()), input_shape=(3,), seed=0)
    assert "embedding(10, 4, padding_idx=9)" in model.describe()


@pytest.mark.parametrize(
    ("padding_idx", "message"),
    [
        (True, r"padding_idx must be None or an integer, got True of type bool"),
        (False, r"padding_idx must be None or an integer, got False of type bool"),
        (
            0.0,
            r"padding_idx must be None or an integer, got 0\.0 of type float \(accepted: None or an int in "
            r"\[-6, 6\), a negative one counting from the end; floats are not truncated and bools are "
            r"refused\)\Z",
        ),
        ("0", r"padding_idx must be None or an integer, got '0' of type str"),
        (6, r"padding_idx 6 is out of range for 6 embeddings \(accepted: None or an int in \[-6, 6\)"),
        (-7, r"padding_idx -7 is out of range for 6 embeddings"),
    ],
)
def test_layer_refuses_bad_padding_idx(padding_idx, message):
    with pytest.raises(ShapeError, match=r"embedding: " + message):
        nn.embedding(6, 2, padding_idx)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_initial_padding_row_is_zero_and_the_other_rows_are_drawn_as_without_it(dtype):
    with_pad = nn.build(nn.embedding(50, 8, padding_idx=-3), input_shape=(2,), seed=7, dtype=dtype)
    without = nn.build(nn.embedding(50, 8), input_shape=(2,), seed=7, dtype=dtype)
    table, reference = with_pad.state()["weight"], without.state()["weight"]
    assert table.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(table[47], np.zeros(8))
    assert not np.any(reference[47] == 0.0)
    np.testing.assert_array_equal(np.delete(table, 47, axis=0), np.delete(reference, 47, axis=0))


def test_param_spec_zero_row_is_checked():
    spec = ParamSpec("w", (3, 2), "ones", zero_row=np.int64(1))
    assert spec.zero_row == 1 and type(spec.zero_row) is int
    values = spec.initial(np.random.default_rng(0), np.dtype(np.float64))
    np.testing.assert_array_equal(values, [[1, 1], [0, 0], [1, 1]])
    assert spec.prefixed("0").zero_row == 1
    for bad in (3, -1, True, 1.0):
        with pytest.raises(ShapeError, match=r"parameter w: zero_row must be None or an int in \[0, 3\)"):
            ParamSpec("w", (3, 2), "normal", 1.0, zero_row=bad)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("padding_idx", [0, 5, -1])
def test_typed_graph_trains_a_padding_row_bit_for_bit_as_eagerly(padding_idx, dtype, profile):
    """Typed-graph training with a padding_idx (a gather from [table, detach table]) gives eager's
    losses, weights, predictions and metric exactly; some minibatches hold the padding id (eager
    splits the lookup), others do not (eager's plain gather). The padding row starts nonzero and
    Adam (no decay) must leave it exactly as it is in both."""
    rng = np.random.default_rng(7)
    pad = padding_idx % V
    ids = rng.integers(0, V, size=(12, TOKENS))
    ids[ids == pad] = (pad + 1) % V
    ids[:5, 1] = pad  # the first five samples hold the padding id, the others never do
    labels = rng.integers(0, CLASSES, size=12)
    trainers = [
        Trainer(_layer(padding_idx), objective="cross-entropy", seed=3, input_shape=(TOKENS,),
                config=RunConfig(optim.adam(0.05), execution=mode, dtype=dtype, profile=profile))
        for mode in ("eager", "typed-graph")
    ]
    for trainer in trainers:
        state = trainer.model.state()
        state["0.weight"][pad] = [0.5, -1.5, 2.0]
        trainer.model.load_state(state)
    before = trainers[0].model.state()["0.weight"]
    losses = [trainer.fit(ids, labels, epochs=3, batch_size=5) for trainer in trainers]
    assert losses[0] == losses[1]
    eager, graph = (trainer.model.state() for trainer in trainers)
    assert eager.keys() == graph.keys()
    for name in eager:
        np.testing.assert_array_equal(graph[name], eager[name])
    np.testing.assert_array_equal(graph["0.weight"][pad], np.array([0.5, -1.5, 2.0], dtype=dtype))
    moved = np.any(graph["0.weight"] != before, axis=1)
    assert moved.tolist() == [row != pad for row in range(V)]  # every other row was looked up and trained
    np.testing.assert_array_equal(trainers[1].predict(ids), trainers[0].predict(ids))
    assert trainers[1].evaluate(ids, labels) == trainers[0].evaluate(ids, labels)


@pytest.mark.parametrize("mode", ["eager", "typed-graph"])
def test_fast_cpu_runs_a_padding_lookup_on_aten_concat_included(mode):
    """Under ``fast_cpu`` a padding_idx embedding runs every op on aten (fit, predict, evaluate):
    its gathers on ``aten.gather`` and training's ``concat`` (eager: the kept rows and the
    detached padding rows; typed graph: the table and its detached copy) on ``aten.concat``; no
    op falls back to reference (README, Profiles: only dropout's masks do)."""
    rng = np.random.default_rng(8)
    ids = rng.integers(0, V, size=(10, TOKENS))
    ids[:4, 0] = 2  # some minibatches hold the padding id
    labels = rng.integers(0, CLASSES, size=10)
    trainer = Trainer(_layer(2), objective="cross-entropy", seed=3, input_shape=(TOKENS,),
                      config=RunConfig(optim.adam(0.05), execution=mode, profile="fast_cpu"))
    trainer.fit(ids, labels, epochs=1, batch_size=5)
    trainer.predict(ids)
    trainer.evaluate(ids, labels)
    by_op = {kernel.op.label: kernel.capsule.name for kernel in trainer.selected}
    assert by_op["gather"] == "aten.gather"
    assert by_op["concat"] == "aten.concat"
    assert all(name == f"aten.{label}" for label, name in by_op.items()), by_op


def test_typed_graph_padding_lookup_gathers_from_the_table_and_its_detached_copy():
    """The training lowering: concat [table, detach table], an index sending the padding ids to
    row id + V, values the table's rows exactly (numpy indexing); evaluation lowers the plain
    gather."""
    from torchlean.ir import evaluate
    from torchlean.nn.lowering import EmbeddingIndex, lower_model

    model = nn.build(nn.sequential(nn.embedding(V, D, -2), nn.flatten()), input_shape=(TOKENS,), seed=0)
    lowered = lower_model(model, (2, TOKENS), training=True)
    nodes = lowered.built.graph.nodes
    assert [n.kind.describe() for n in nodes] == [
        "input",
        "input",
        "const [7, 3]",
        "detach",
        "concat 0",
        "gather 0",
        "reshape [8, 3] [2, 4, 3]",
        "reshape [2, 4, 3] [2, 12]",
    ]
    index = lowered.embedding_indices[0]
    assert index == EmbeddingIndex(1, 0, D, (V - 2, V))
    ids = np.array([[5, 0, 5, 6], [1, 5, 2, 3]])
    rows = index.rows(ids)
    assert rows.dtype == np.int64 and rows.shape == (8, D) and rows.flags.c_contiguous
    np.testing.assert_array_equal(rows[:, 0], [12, 0, 12, 6, 1, 12, 2, 3])
    table = model.parameters[0]
    out = evaluate(lowered.built.graph, {0: ids, 1: rows}, lowered.built.payloads)[lowered.output]
    np.testing.assert_array_equal(out, table[ids].reshape(2, TOKENS * D))
    predicting = lower_model(model, (2, TOKENS), training=False)
    assert "concat 0" not in [n.kind.describe() for n in predicting.built.graph.nodes]
    assert predicting.embedding_indices[0].padding is None


# ------------------------------------------------------------------------------------ training


class _TorchModel(torch.nn.Module):
    def __init__(self, padding_idx: int) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(V, D, padding_idx=padding_idx)
        self.out = torch.nn.Linear(TOKENS * D, CLASSES)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(ids).flatten(1))


_Ours = Callable[[], optim.OptimizerConfig]
_Theirs = Callable[[list[torch.Tensor]], torch.optim.Optimizer]
_OPTIMIZERS: dict[str, tuple[_Ours, _Theirs, bool]] = {
    # name: (torchlean config, torch optimizer, whether the padding row stays as it is)
    "sgd": (lambda: optim.sgd(0.2), lambda p: torch.optim.SGD(p, lr=0.2), True),
    "sgd-momentum": (lambda: optim.sgd(0.2, 0.9), lambda p: torch.optim.SGD(p, lr=0.2, momentum=0.9), True),
    "adam": (lambda: optim.adam(0.05), lambda p: torch.optim.Adam(p, lr=0.05), True),
    "sgd-weight-decay": (
        lambda: optim.sgd(0.2, 0.9, weight_decay=0.1),
        lambda p: torch.optim.SGD(p, lr=0.2, momentum=0.9, weight_decay=0.1),
        False,
    ),
    "adam-weight-decay": (
        lambda: optim.adam(0.05, weight_decay=0.1),
        lambda p: torch.optim.Adam(p, lr=0.05, weight_decay=0.1),
        False,
    ),
    "adamw": (lambda: optim.adamw(0.05), lambda p: torch.optim.AdamW(p, lr=0.05), False),
}


def _layer(padding_idx: int) -> nn.Layer:
    return nn.sequential(nn.embedding(V, D, padding_idx), nn.flatten(), nn.linear(TOKENS * D, CLASSES))


def _start(
    state: dict[str, np.ndarray], pad: int, padding_idx: int
) -> tuple[dict[str, np.ndarray], _TorchModel]:
    """The built state with a nonzero padding row (so that a decay or a leaked gradient would move
    it), and a torch model holding the same values."""
    assert np.all(state["0.weight"][pad] == 0.0)  # as built
    state = dict(state)
    state["0.weight"] = state["0.weight"].copy()
    state["0.weight"][pad] = [0.5, -1.5, 2.0]
    module = _TorchModel(padding_idx).double()
    module.load_state_dict(
        {
            "embed.weight": torch.tensor(state["0.weight"]),
            "out.weight": torch.tensor(state["2.weight"]),
            "out.bias": torch.tensor(state["2.bias"]),
        }
    )
    return state, module


def _batches() -> list[tuple[np.ndarray, np.ndarray]]:
    rng = np.random.default_rng(11)
    return [
        (_ids_with_padding((6, TOKENS), 5, seed=20 + i), rng.integers(0, CLASSES, size=6)) for i in range(4)
    ]


def _check(ours: dict[str, np.ndarray], module: _TorchModel, pad: int, unchanged: bool) -> None:
    theirs = {"0.weight": module.embed.weight, "2.weight": module.out.weight, "2.bias": module.out.bias}
    for name, value in theirs.items():
        np.testing.assert_allclose(ours[name], value.detach().numpy(), rtol=1e-12, atol=1e-12)
    if unchanged:
        np.testing.assert_array_equal(ours["0.weight"][pad], [0.5, -1.5, 2.0])
        np.testing.assert_array_equal(module.embed.weight[pad].detach().numpy(), [0.5, -1.5, 2.0])
    else:  # torch's decay moves the padding row: so does ours (checked equal above)
        assert not np.array_equal(ours["0.weight"][pad], [0.5, -1.5, 2.0])


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize("padding_idx", [5, 5 - V])
@pytest.mark.parametrize("name", list(_OPTIMIZERS))
def test_trainer_matches_torch_float64(name, padding_idx, execution):
    """Trainer.step with a padding row that starts nonzero: losses and every parameter within 1e-12
    of torch after each step; the padding row exactly unchanged under SGD and Adam, decayed as
    torch's under weight decay and AdamW; eagerly and as a typed graph."""
    config_of, torch_of, unchanged = _OPTIMIZERS[name]
    config = RunConfig(optimizer=config_of(), dtype="float64", execution=execution)
    layer = _layer(padding_idx)
    trainer = Trainer(layer, objective="cross-entropy", config=config, seed=3, input_shape=(TOKENS,))
    state, module = _start(trainer.model.state(), 5, padding_idx)
    trainer.model.load_state(state)
    opt = torch_of(list(module.parameters()))
    for ids, labels in _batches():
        loss = trainer.step(ids, labels)
        opt.zero_grad()
        expected = torch.nn.functional.cross_entropy(module(torch.tensor(ids)), torch.tensor(labels))
        expected.backward()
        opt.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12, abs=0)
        _check(trainer.model.state(), module, 5, unchanged)
    ids = _batches()[0][0]
    with torch.no_grad():
        logits = module(torch.tensor(ids)).numpy()
    np.testing.assert_allclose(trainer.predict(ids), logits, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize("padding_idx", [5, 5 - V])
@pytest.mark.parametrize("name", ["sgd", "adam", "adamw"])
def test_model_forward_loop_matches_torch_float64(name, padding_idx):
    """Model.forward + Optimizer.step_ in a loop of one's own, as the Trainer test."""
    config_of, torch_of, unchanged = _OPTIMIZERS[name]
    model = nn.build(_layer(padding_idx), input_shape=(TOKENS,), seed=4, dtype="float64")
    state, module = _start(model.state(), 5, padding_idx)
    model.load_state(state)
    params = model.tensors()
    ours = config_of().create(model.parameters)
    opt = torch_of(list(module.parameters()))
    with tl.session():
        for ids, labels in _batches():
            loss = tl.cross_entropy(model(tl.tensor(ids), params, training=True), labels)
            loss.backward()
            embed_grad = params[0].grad
            assert embed_grad is not None
            np.testing.assert_array_equal(embed_grad.numpy()[5], 0.0)
            ours.step_(params)
            opt.zero_grad()
            expected = torch.nn.functional.cross_entropy(module(torch.tensor(ids)), torch.tensor(labels))
            expected.backward()
            opt.step()
            assert float(loss.numpy()) == pytest.approx(expected.item(), rel=1e-12, abs=0)
            model.load_tensors(params)
            _check(model.state(), module, 5, unchanged)
