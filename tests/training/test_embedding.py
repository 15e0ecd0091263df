"""``tl.embedding`` and ``nn.embedding``: integer ids looking up rows of a learned table.

Oracles: ``torch.nn.functional.embedding``/``torch.nn.Embedding`` in float64 (values, the summed
gradient of repeated ids, training from the same weights), numpy indexing, and hand-made
refusals.
"""

from __future__ import annotations

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean import nn, optim
from torchlean.backend.errors import GuardError
from torchlean.nn import ShapeError
from torchlean.tensor import TensorError
from torchlean.trainer import RunConfig, Trainer, TrainerError


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(), (1,), (7,), (3, 4), (2, 0, 3)])
def test_lookup_and_gradient_match_torch(shape, dtype):
    """Values are the table's rows exactly; the weight gradient sums the upstream gradient of every
    position holding an id (ids repeat here), as torch's dense backward."""
    rng = np.random.default_rng(3)
    table = rng.standard_normal((5, 3)).astype(dtype)
    ids = rng.integers(0, 5, size=shape)
    upstream = rng.standard_normal((*shape, 3)).astype(dtype)
    weight = tl.tensor(table, requires_grad=True)
    out = tl.embedding(ids, weight)
    tl.reduce_sum(tl.mul(out, tl.tensor(upstream))).backward()
    theirs = torch.tensor(table, dtype=torch.float64, requires_grad=True)
    expected = torch.nn.functional.embedding(torch.tensor(ids), theirs)
    (expected * torch.tensor(upstream, dtype=torch.float64)).sum().backward()
    assert out.shape == (*shape, 3) and out.dtype == np.dtype(dtype)
    np.testing.assert_array_equal(out.numpy(), table[ids])
    assert weight.grad is not None and theirs.grad is not None
    rtol = 1e-6 if dtype == "float32" else 1e-15
    np.testing.assert_allclose(weight.grad.numpy(), theirs.grad.numpy(), rtol=rtol, atol=rtol)
    unused = np.setdiff1d(np.arange(5), ids)
    np.testing.assert_array_equal(weight.grad.numpy()[unused], 0.0)


def test_repeated_ids_sum_by_hand_and_record_gather_then_reshape():
    weight = tl.tensor(np.arange(6.0).reshape(3, 2), requires_grad=True)
    with tl.session() as session:
        out = tl.embedding(tl.tensor(np.array([[2, 0], [2, 2]])), weight)
        tl.reduce_sum(out).backward()
        names = [kernel.capsule.name for kernel in session.selected]
    np.testing.assert_array_equal(out.numpy(), [[[4.0, 5.0], [0.0, 1.0]], [[4.0, 5.0], [4.0, 5.0]]])
    assert weight.grad is not None
    np.testing.assert_array_equal(weight.grad.numpy(), [[1.0, 1.0], [0.0, 0.0], [3.0, 3.0]])
    assert names[:2] == ["reference.gather", "reference.reshape"]


def test_bad_ids_and_tables_are_refused():
    weight = tl.tensor(np.zeros((5, 2)))
    with pytest.raises(
        GuardError, match=r"embedding: id 5 is out of range for 5 embeddings \(accepted: ids in \[0, 5\)\)"
    ):
        tl.embedding(np.array([0, 5, 1]), weight)
    with pytest.raises(GuardError, match="embedding: id -1 is out of range"):
        tl.embedding([[-1, 4]], weight)
    with pytest.raises(GuardError, match=r"embedding: ids have dtype float64 \(accepted: integers"):
        tl.embedding(np.array([1.0]), weight)
    with pytest.raises(GuardError, match="ids have dtype bool"):
        tl.embedding(np.array([True]), weight)
    with pytest.raises(
        GuardError,
        match=r"weight must be a 2-d float32 or float64 table \(num_embeddings, embedding_dim\), "
        r"got shape \[5\] and dtype float64",
    ):
        tl.embedding([0], tl.tensor(np.zeros(5)))
    with pytest.raises(TensorError, match="embedding: ids"):
        tl.embedding([[1, 2], [3]], weight)
    with pytest.raises(TypeError):
        tl.embedding([0], np.zeros((5, 2)))  # type: ignore[arg-type]
    with pytest.raises(GuardError, match="id 18446744073709551615 is out of range"):
        tl.embedding(np.array([2**64 - 1], dtype=np.uint64), weight)


def _classifier() -> nn.Layer:
    return nn.sequential(nn.embedding(9, 4), nn.mean_pool(0), nn.linear(4, 3))


class _TorchClassifier(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.embed = torch.nn.Embedding(9, 4)
        self.out = torch.nn.Linear(4, 3)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        return self.out(self.embed(ids).mean(dim=1))


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_trainer_matches_torch_float64(profile):
    """Three Adam steps of a bag-of-embeddings classifier from the same weights: the losses and
    every parameter after each within 1e-12, then predictions and accuracy."""
    config = RunConfig(optimizer=optim.adam(lr=0.1), dtype="float64", profile=profile)
    trainer = Trainer(_classifier(), objective="cross-entropy", config=config, seed=2, input_shape=(6,))
    module = _TorchClassifier().double()
    state = trainer.model.state()
    module.load_state_dict(
        {
            "embed.weight": torch.tensor(state["0.weight"]),
            "out.weight": torch.tensor(state["2.weight"]),
            "out.bias": torch.tensor(state["2.bias"]),
        }
    )
    adam = torch.optim.Adam(module.parameters(), lr=0.1)
    rng = np.random.default_rng(5)
    for _ in range(3):
        ids, labels = rng.integers(0, 9, size=(8, 6)), rng.integers(0, 3, size=8)
        loss = trainer.step(ids, labels)
        adam.zero_grad()
        expected = torch.nn.functional.cross_entropy(module(torch.tensor(ids)), torch.tensor(labels))
        expected.backward()
        adam.step()
        assert loss == pytest.approx(expected.item(), rel=1e-12, abs=0)
        ours = trainer.model.state()
        for name, theirs in (("0.weight", module.embed.weight), ("2.weight", module.out.weight)):
            np.testing.assert_allclose(ours[name], theirs.detach().numpy(), rtol=1e-12, atol=1e-14)
    ids = rng.integers(0, 9, size=(5, 6))
    with torch.no_grad():
        logits = module(torch.tensor(ids)).numpy()
    np.testing.assert_allclose(trainer.predict(ids), logits, rtol=1e-12, atol=1e-14)
    labels = rng.integers(0, 3, size=5)
    assert trainer.evaluate(ids, labels) == {"accuracy": float(np.mean(logits.argmax(axis=1) == labels))}


def test_trainer_refuses_ids_it_cannot_look_up_before_any_update():
    trainer = Trainer(_classifier(), objective="cross-entropy", input_shape=(6,), seed=0)
    before = trainer.model.state()
    labels = np.zeros(2, dtype=np.int64)
    cases = [
        (np.zeros((2, 6)), r"inputs must be ids, integers in \[0, 9\), for this model .* got dtype float64"),
        (np.zeros((2, 6), dtype=bool), "got dtype bool"),
        (
            np.full((2, 6), 9),
            r"inputs hold the id 9, out of range for the model's first layer \(accepted: ids in \[0, 9\)\)",
        ),
        (np.full((2, 6), -3), "inputs hold the id -3"),
        (np.zeros((2, 5), dtype=np.int64), r"inputs must have shape \(n, 6\)"),
    ]
    for ids, message in cases:
        with pytest.raises(TrainerError, match=message):
            trainer.fit(ids, labels)
        with pytest.raises(TrainerError, match=message):
            trainer.predict(ids)
    for name, value in trainer.model.state().items():
        np.testing.assert_array_equal(value, before[name])


def test_typed_graph_trains_embedding_models_as_eagerly():
    """The lookup lowers to gather + reshape with an int64 row index input (more cases:
    tests/training/test_typed_graph_dropout_bn.py)."""
    ids = np.random.default_rng(4).integers(0, 9, size=(8, 6))
    labels = np.arange(8) % 3
    runs = []
    for mode in ("eager", "typed-graph"):
        trainer = Trainer(_classifier(), objective="cross-entropy", config=RunConfig(execution=mode),
                          input_shape=(6,), seed=0)
        runs.append((trainer, trainer.fit(ids, labels, epochs=2, batch_size=3)))
    (eager, eager_losses), (graph, graph_losses) = runs
    assert eager_losses == graph_losses
    for name, value in eager.model.state().items():
        np.testing.assert_array_equal(value, graph.model.state()[name])
    np.testing.assert_array_equal(eager.predict(ids), graph.predict(ids))


def test_own_loop_language_model_matches_torch_float64():
    """A bigram language model (embedding, linear over the vocabulary) trained with
    Model.forward and cross_entropy over the last axis, against torch with SGD."""
    model = nn.build(
        nn.sequential(nn.embedding(7, 5), nn.linear(5, 7)), input_shape=(4,), seed=1, dtype="float64"
    )
    table, weight, bias = (torch.tensor(v, requires_grad=True) for v in model.state().values())
    torch_sgd = torch.optim.SGD([table, weight, bias], lr=0.3)
    params = model.tensors()
    sgd = optim.sgd(0.3).create([p.numpy() for p in params])
    rng = np.random.default_rng(1)
    with tl.session():
        for _ in range(3):
            tokens = rng.integers(0, 7, size=(3, 5))
            inputs, targets = tokens[:, :-1], tokens[:, 1:]
            loss = tl.cross_entropy(model.forward(tl.tensor(inputs), params, training=True), targets, axis=-1)
            loss.backward()
            torch_sgd.zero_grad()
            logits = torch.nn.functional.embedding(torch.tensor(inputs), table) @ weight.T + bias
            expected = torch.nn.functional.cross_entropy(
                logits.reshape(-1, 7), torch.tensor(targets).reshape(-1)
            )
            expected.backward()
            torch_sgd.step()
            assert float(loss.numpy()) == pytest.approx(expected.item(), rel=1e-12)
            new = sgd.step([p.numpy() for p in params], [p.grad.numpy() for p in params])  # type: ignore[union-attr]
            with tl.no_grad():
                for p, value in zip(params, new, strict=True):
                    p.copy_(value)
                    p.grad = None
    model.load_tensors(params)
    for ours, theirs in zip(model.state().values(), (table, weight, bias), strict=True):
        np.testing.assert_allclose(ours, theirs.detach().numpy(), rtol=1e-12, atol=1e-14)


def test_model_forward_takes_int64_ids_only():
    model = nn.build(_classifier(), input_shape=(6,), seed=0)
    out = model.forward(tl.tensor(np.zeros((2, 6), dtype=np.int64)))
    assert out.shape == (2, 3) and out.dtype == np.float32
    with pytest.raises(ShapeError, match=r"dtype float32, expected shape \(b, 6\) and dtype int64 \(ids"):
        model.forward(tl.tensor(np.zeros((2, 6)), dtype="float32"))
    with pytest.raises(GuardError, match="embedding: id 9 is out of range for 9 embeddings"):
        model.forward(tl.tensor(np.full((1, 6), 9)))


def test_initialisation_is_standard_normal_and_seeded():
    """torch.nn.Embedding draws N(0, 1): 20000 values have mean within 0.03 and standard deviation
    within 0.03 of it (about 4 standard errors), in the model dtype; the same seed gives the same
    table."""
    model = nn.build(nn.embedding(1000, 20), input_shape=(1,), seed=4)
    table = model.state()["weight"]
    assert table.dtype == np.float32 and table.shape == (1000, 20)
    assert abs(float(table.mean())) < 0.03 and abs(float(table.std()) - 1.0) < 0.03
    np.testing.assert_array_equal(
        nn.build(nn.embedding(1000, 20), input_shape=(1,), seed=4).state()["weight"], table
    )
    assert nn.embedding(1000, 20).describe() == "embedding(1000, 20)"
    assert model.describe() == "embedding(1000, 20): [1] -> [1, 20], 20000 parameters"


@pytest.mark.parametrize("args", [(0, 3), (3, 0), (2.5, 3), (True, 3), ("4", 3)])
def test_bad_sizes_are_refused(args):
    with pytest.raises(ShapeError, match=r"embedding: (num_embeddings|embedding_dim)"):
        nn.embedding(*args)


@pytest.mark.parametrize(
    "layers",
    [
        lambda: (nn.linear(3, 3), nn.embedding(5, 2)),
        lambda: (nn.identity(), nn.embedding(5, 2)),
        lambda: (nn.embedding(5, 2), nn.embedding(5, 2)),
    ],
)
def test_an_embedding_after_another_layer_is_refused_at_build(layers):
    """torchlean's ids reach the first layer only (torch would run identity -> embedding)."""
    with pytest.raises(ShapeError, match=r"sequential: embedding\(5, 2\) at position 1 looks up integer ids"):
        nn.build(nn.sequential(*layers()), input_shape=(3,), seed=0)


def test_a_float_id_refusal_names_the_first_layer_rule():
    with pytest.raises(GuardError, match="an embedding must be the first layer"):
        tl.embedding(np.array([0.5]), tl.tensor(np.zeros((2, 2))))


def test_an_embedding_in_a_residual_body_is_refused_at_build():
    with pytest.raises(ShapeError, match=r"residual: its body embedding\(5, 1\) looks up integer ids"):
        nn.build(nn.residual(nn.embedding(5, 1)), input_shape=(3,), seed=0)


def test_an_integer_table_is_refused_as_embeddings_weight():
    with pytest.raises(
        GuardError, match=r"embedding: weight must be a 2-d float32 or float64 table .* dtype int64"
    ):
        tl.embedding([0], tl.tensor(np.ones((3, 2), dtype=np.int64)))


def test_the_most_negative_id_is_named_first():
    from torchlean import _checks

    assert _checks.id_outside(np.array([7, -2, 9, -1]), 5) == -2
    assert _checks.id_outside(np.array([7, 2, 9]), 5) == 9
    assert _checks.id_outside(np.array([0, 4]), 5) is None
    with pytest.raises(GuardError, match="id -2 is out of range"):
        tl.embedding(np.array([9, -2]), tl.tensor(np.ones((5, 2))))


def test_normal_init_uses_its_bound_as_standard_deviation():
    from torchlean.nn.layers import ParamSpec

    values = ParamSpec("w", (20000,), "normal", 0.02).initial(np.random.default_rng(0), np.dtype(np.float64))
    assert values.std() == pytest.approx(0.02, rel=0.03) and abs(values.mean()) < 0.001
