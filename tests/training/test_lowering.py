"""Lowering models to the canonical IR (anchor-runtime.md §4.2; anchor-backend.md §6.9–6.11):
the 18-node listing of the ``4 -> 8 -> 1`` vector MLP, its graph plan, and agreement of the
lowered graph with eager execution."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean import nn
from torchlean.autograd.grad_mode import no_grad
from torchlean.autograd.session import Session
from torchlean.backend import profiles
from torchlean.backend.graph import to_coalesced_groups
from torchlean.ir.errors import IRError
from torchlean.ir.evaluate import evaluate
from torchlean.ir.ops import Const
from torchlean.nn.eager import EagerOps
from torchlean.nn.lowering import lower_model
from torchlean.tensor import Tensor

# anchor-runtime.md §4.2: (id, kind as describe() renders it, parents, out shape)
MLP_LISTING = [
    (0, "input", (), (4,)),
    (1, "reshape [4] [1, 4]", (0,), (1, 4)),
    (2, "const [8, 4]", (), (8, 4)),
    (3, "transpose 0 1", (2,), (4, 8)),
    (4, "matmul", (1, 3), (1, 8)),
    (5, "const [8]", (), (8,)),
    (6, "broadcast_to [8] [1, 8]", (5,), (1, 8)),
    (7, "add", (4, 6), (1, 8)),
    (8, "reshape [1, 8] [8]", (7,), (8,)),
    (9, "relu", (8,), (8,)),
    (10, "reshape [8] [1, 8]", (9,), (1, 8)),
    (11, "const [1, 8]", (), (1, 8)),
    (12, "transpose 0 1", (11,), (8, 1)),
    (13, "matmul", (10, 12), (1, 1)),
    (14, "const [1]", (), (1,)),
    (15, "broadcast_to [1] [1, 1]", (14,), (1, 1)),
    (16, "add", (13, 15), (1, 1)),
    (17, "reshape [1, 1] [1]", (16,), (1,)),
]

PLANNED = [
    (1, "reshape [4] [1, 4]", "reference.reshape"),
    (3, "transpose 0 1", "reference.permute"),
    (4, "matmul", "reference.matmul"),
    (6, "broadcast_to [8] [1, 8]", "reference.broadcast"),
    (7, "add", "reference.add"),
    (8, "reshape [1, 8] [8]", "reference.reshape"),
    (9, "relu", "reference.relu"),
    (10, "reshape [8] [1, 8]", "reference.reshape"),
    (12, "transpose 0 1", "reference.permute"),
    (13, "matmul", "reference.matmul"),
    (15, "broadcast_to [1] [1, 1]", "reference.broadcast"),
    (16, "add", "reference.add"),
    (17, "reshape [1, 1] [1]", "reference.reshape"),
]


def mlp_model(seed: int = 0, dtype: type = np.float32) -> nn.Model:
    return nn.build(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), seed=seed, dtype=dtype)


def test_vector_mlp_lowers_to_the_18_node_listing():
    model = mlp_model()
    lowered = lower_model(model, (4,))
    graph = lowered.built.graph
    graph.check_well_formed()
    listing = [(n.id, n.kind.describe(), n.parents, n.out_shape) for n in graph.nodes]
    assert listing == MLP_LISTING
    assert lowered.inputs == (0,)
    assert lowered.output == 17
    # constants are emitted lazily at first use and hold the model parameters in state order
    assert lowered.param_nodes == {2: 0, 5: 1, 11: 2, 14: 3}
    assert lowered.payload_params == {}
    for node_id, index in lowered.param_nodes.items():
        assert isinstance(graph.nodes[node_id].kind, Const)
        np.testing.assert_array_equal(lowered.built.payloads[node_id], model.parameters[index])


def test_vector_mlp_graph_plan_under_checked_cpu():
    graph = lower_model(mlp_model(), (4,)).built.graph
    plan = profiles.get("checked_cpu").plan_graph(graph)
    assert plan.node_count == 18
    assert plan.node_ids == (1, 3, 4, 6, 7, 8, 9, 10, 12, 13, 15, 16, 17)
    rows = [(k.node_id, k.kind.describe(), k.capsule.name) for k in plan.kernels]
    assert rows == PLANNED
    groups = to_coalesced_groups(plan)
    assert [g.node_ids for g in groups.groups] == [(i,) for i in plan.node_ids]
    result = profiles.get("checked_cpu").accept_graph(graph)
    assert result.plan is not None and result.failures == ()
    names = list(dict.fromkeys(k.capsule.name for k in result.plan.kernels))
    assert names == [
        "reference.reshape",
        "reference.permute",
        "reference.matmul",
        "reference.broadcast",
        "reference.add",
        "reference.relu",
    ]


def test_lowering_does_not_depend_on_parameter_values():
    a = lower_model(mlp_model(seed=0), (4,)).built.graph
    b = lower_model(mlp_model(seed=5), (4,)).built.graph
    assert a == b


def test_batched_lowering_has_no_vector_reshapes():
    graph = lower_model(mlp_model(), (3, 4)).built.graph
    kinds = [n.kind.describe() for n in graph.nodes]
    assert kinds == [
        "input",
        "const [8, 4]",
        "transpose 0 1",
        "matmul",
        "const [8]",
        "broadcast_to [8] [3, 8]",
        "add",
        "relu",
        "const [1, 8]",
        "transpose 0 1",
        "matmul",
        "const [1]",
        "broadcast_to [1] [3, 1]",
        "add",
    ]
    assert graph.nodes[-1].out_shape == (3, 1)


def eager(model: nn.Model, x: np.ndarray) -> np.ndarray:
    with Session("checked_cpu"), no_grad():
        params = [Tensor(p) for p in model.parameters]
        return model.layer.forward(EagerOps(), params, Tensor(x), training=False).numpy()


MODELS = {
    "mlp": (nn.sequential(nn.linear(6, 5), nn.gelu(), nn.linear(5, 3)), (6,)),
    "cnn": (
        nn.sequential(
            nn.conv2d(1, 3, 3, padding=1),
            nn.relu(),
            nn.max_pool2d(2),
            nn.conv2d(3, 2, 2, groups=1),
            nn.avg_pool2d(1),
            nn.flatten(),
            nn.linear(2 * 2 * 2, 3),
        ),
        (1, 6, 6),
    ),
    "transformer": (
        nn.sequential(
            nn.linear(4, 8),
            nn.positional_embedding(5, 8),
            nn.transformer_block(8, 2, causal=True),
            nn.layer_norm(8),
            nn.mean_pool(0),
            nn.linear(8, 3),
        ),
        (5, 4),
    ),
}


@pytest.mark.parametrize("name", list(MODELS))
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_lowered_graph_evaluates_to_the_eager_bits(name, dtype):
    """The IR evaluator runs the same reference kernels: bit-identical to eager execution."""
    layer, sample = MODELS[name]
    model = nn.build(layer, input_shape=sample, seed=1, dtype=dtype)
    x = np.random.default_rng(0).standard_normal((3, *sample)).astype(dtype)
    lowered = lower_model(model, x.shape)
    values = evaluate(lowered.built.graph, {0: x}, lowered.built.payloads, dtype=dtype)
    out = values[lowered.output]
    assert out.dtype == dtype
    np.testing.assert_array_equal(out, eager(model, x))


def test_conv_and_layer_norm_parameters_are_payloads():
    layer, sample = MODELS["cnn"]
    model = nn.build(layer, input_shape=sample, seed=0)
    lowered = lower_model(model, (2, *sample))
    kinds = {n.id: n.kind.tag for n in lowered.built.graph.nodes}
    conv_nodes = [i for i, tag in kinds.items() if tag == "conv"]
    assert [lowered.payload_params[i] for i in conv_nodes] == [(0, 1), (2, 3)]
    # the final linear layer's weight and bias are const nodes
    assert sorted(lowered.param_nodes.values()) == [4, 5]


def test_dropout_is_refused_when_lowering_for_training():
    model = nn.build(nn.sequential(nn.linear(3, 3), nn.dropout(0.25)), seed=0)
    with pytest.raises(IRError, match="dropout is not lowered to the typed graph"):
        lower_model(model, (2, 3), training=True)
    # evaluation mode: dropout is the identity and lowers to nothing
    graph = lower_model(model, (2, 3)).built.graph
    assert [n.kind.tag for n in graph.nodes][-1] == "add"


def test_fused_lowering_gives_one_linear_node_per_layer_and_agrees_with_eager():
    """The trainer's typed graph lowers ``ops.linear`` to one IR ``linear`` node whose payload
    comes from the model parameters; its value equals eager's (``F.linear``) bit for bit, and
    the unfused default still gives the original's 18-node listing."""
    from torchlean.nn.lowering import GraphOps

    model = nn.build(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), seed=3, dtype=np.float64)
    ops = GraphOps(fuse_linear=True)
    x_ref = ops.input((4,))
    out = model.layer.forward(ops, list(ops.params(model)), x_ref, training=False)
    lowered = ops.lowered(out)
    kinds = [node.kind.describe() for node in lowered.built.graph.nodes]
    assert kinds == ["input", "linear", "relu", "linear"]
    assert lowered.payload_params == {1: (0, 1), 3: (2, 3)}
    x = np.random.default_rng(0).standard_normal(4)
    values = evaluate(lowered.built.graph, {0: x}, lowered.built.payloads, dtype=np.float64)
    graph_out = values[lowered.output]
    params = [Tensor(p) for p in model.parameters]
    with Session("checked_cpu"), no_grad():
        eager = model.layer.forward(EagerOps(), params, Tensor(x), training=False)
    assert np.array_equal(np.asarray(graph_out), eager.numpy())
    w1, b1, w2, b2 = model.parameters
    np.testing.assert_allclose(eager.numpy(), np.maximum(w1 @ x + b1, 0) @ w2.T + b2, rtol=1e-12)
    assert len(lower_model(model, (4,)).built.graph.nodes) == 18


def test_fused_lowering_keeps_a_computed_weight_in_the_original_form():
    """A weight that is not a model parameter (here a transposed one, as a tied layer would use)
    cannot be a ``linear`` payload: the fused lowering falls back to matmul/transpose."""
    from torchlean.nn.lowering import GraphOps

    model = nn.build(nn.sequential(nn.linear(4, 4)), seed=0, dtype=np.float64)
    ops = GraphOps(fuse_linear=True)
    x_ref = ops.input((2, 4))
    weight, bias = ops.params(model)
    out = ops.linear(x_ref, ops.transpose(weight, 0, 1), bias)
    lowered = ops.lowered(out)
    kinds = [node.kind.tag for node in lowered.built.graph.nodes]
    assert "linear" not in kinds and kinds.count("matmul") == 1
    x = np.random.default_rng(0).standard_normal((2, 4))
    values = evaluate(lowered.built.graph, {0: x}, lowered.built.payloads, dtype=np.float64)
    w, b = model.parameters
    np.testing.assert_allclose(values[lowered.output], x @ w + b, rtol=1e-12)
