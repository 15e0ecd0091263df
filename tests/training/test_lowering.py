"""Lowering models to the canonical IR (anchor-runtime.md §4.2; anchor-backend.md §6.9–6.11):
the 18-node listing of the ``4 -> 8 -> 1`` vector MLP, its graph plan, and agreement of the
lowered graph with eager execution."""

from __future__ import annotations

import re
from dataclasses import dataclass

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean import nn
from torchlean.autograd.grad_mode import no_grad
from torchlean.autograd.session import Session
from torchlean.autograd.typed_graph import GraphProgram
from torchlean.backend import profiles
from torchlean.backend.errors import TorchLeanError
from torchlean.backend.graph import to_coalesced_groups
from torchlean.ir.evaluate import evaluate
from torchlean.ir.ops import Const
from torchlean.nn.eager import EagerOps
from torchlean.nn.layers import ShapeError
from torchlean.nn.lowering import LoweringTypeError, lower_model
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


def test_training_dropout_lowers_to_a_mask_input_mul_and_scale():
    """A training dropout's mask is an input node the caller feeds (the IR's bernoulli_mask keys
    its draw by node index, not by eager's session counter); evaluation lowers nothing."""
    from torchlean.nn.lowering import DropoutMask

    model = nn.build(nn.sequential(nn.linear(3, 3), nn.dropout(0.25), nn.dropout(1.0)), seed=0)
    lowered = lower_model(model, (2, 3), training=True)
    nodes = lowered.built.graph.nodes
    first, second = lowered.dropout_masks
    assert first == DropoutMask(first.node, (2, 3), 0.75)
    assert second == DropoutMask(second.node, (2, 3), 0.0)
    assert lowered.inputs == (0, first.node, second.node)
    assert all(nodes[m.node].kind.tag == "input" for m in (first, second))
    tags = [n.kind.tag for n in nodes[first.node :]]
    assert tags == ["input", "mul_elem", "scale", "input", "mul_elem"]  # p = 1: no scale, as eager
    assert nodes[first.node + 2].kind.describe() == f"scale {1 / 0.75!r}"
    assert not any(n.kind.tag in ("bernoulli_mask", "rand_uniform") for n in nodes)
    # evaluation mode: dropout is the identity and lowers to nothing
    evaluation = lower_model(model, (2, 3))
    assert [n.kind.tag for n in evaluation.built.graph.nodes][-1] == "add"
    assert evaluation.dropout_masks == () and evaluation.inputs == (0,)


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


def test_fused_lowering_gives_a_computed_weight_a_linear_of_node():
    """A weight that is not a model parameter (here a transposed one, as a tied layer would use)
    cannot be a ``linear`` payload: the fused lowering gives it a ``linear_of`` node, weight and
    bias as parents, which runs eager's one ``linear`` kernel (it fell back to the original's
    matmul/transpose, other kernels than eager's: review144 F1)."""
    from torchlean.nn.lowering import GraphOps

    model = nn.build(nn.sequential(nn.linear(4, 4)), seed=0, dtype=np.float64)
    ops = GraphOps(fuse_linear=True)
    x_ref = ops.input((2, 4))
    weight, bias = ops.params(model)
    out = ops.linear(x_ref, ops.transpose(weight, 0, 1), bias)
    lowered = ops.lowered(out)
    kinds = [node.kind.tag for node in lowered.built.graph.nodes]
    assert kinds == ["input", "const", "transpose", "const", "linear_of"]
    x = np.random.default_rng(0).standard_normal((2, 4))
    values = evaluate(lowered.built.graph, {0: x}, lowered.built.payloads, dtype=np.float64)
    w, b = model.parameters
    np.testing.assert_allclose(values[lowered.output], x @ w + b, rtol=1e-12)


# ------------------------------------------------------------------ accepted input shapes


def _run_lowered(model: nn.Model, x: np.ndarray) -> np.ndarray:
    """Lower ``model`` for ``x.shape`` and run it through the accepted plan (typed-graph executor)."""
    lowered = lower_model(model, x.shape)
    plan = profiles.get("checked_cpu").accept_graph(lowered.built.graph).plan
    assert plan is not None
    program = GraphProgram(lowered.built.graph, lowered.built.payloads, plan, lowered.param_nodes,
                           lowered.payload_params)
    with Session("checked_cpu"), no_grad():
        return program.run([Tensor(x)], [Tensor(p) for p in model.parameters], lowered.output).numpy()


def test_a_mean_pool_model_refuses_an_unbatched_sample_and_is_right_batched():
    """The reviewer's case: ``mean_pool(0)`` reduces the axis after the batch axis, so an
    unbatched (4, 4) sample used to be averaged over the wrong axis, silently. It is refused now;
    the batched lowering agrees with torch float64."""
    layer = nn.sequential(nn.mean_pool(0), nn.linear(4, 2))
    model = nn.build(layer, input_shape=(4, 4), seed=0, dtype=np.float64)
    with pytest.raises(
        ShapeError,
        match=r"^lower_model: input shape \(4, 4\) is one sample without a batch axis, which this model "
        r"cannot be lowered on: mean_pool treats axis 0 as the batch axis; accepted: \(batch, 4, 4\) "
        r"with batch an int >= 1$",
    ):
        lower_model(model, (4, 4))
    x = np.arange(32.0).reshape(2, 4, 4)
    w, b = (torch.from_numpy(p) for p in model.parameters)
    expected = torch.nn.functional.linear(torch.from_numpy(x).mean(dim=1), w, b).numpy()
    np.testing.assert_allclose(_run_lowered(model, x), expected, rtol=1e-12, atol=1e-12)


@pytest.mark.parametrize(
    ("layer", "sample", "culprit"),
    [
        (nn.sequential(nn.reshape(3, 4), nn.linear(4, 2)), (12,), r"reshape\(\[3, 4\]\)"),
        (nn.sequential(nn.linear(4, 6), nn.flatten()), (2, 4), "flatten"),
        (nn.sequential(nn.conv2d(1, 2, 3, padding=1), nn.relu()), (1, 6, 6),
         r"conv2d\(1, 2, \[3, 3\], padding=\[1, 1\]\)"),
        (nn.sequential(nn.linear(4, 4), nn.max_pool2d(2)), (1, 4, 4), r"max_pool2d\(\[2, 2\]\)"),
        (nn.residual(nn.multi_head_attention(4, 2)), (3, 4), "multi_head_attention"),
        (nn.transformer_block(4, 2), (3, 4), "transformer_block"),
    ],
)
def test_layers_that_treat_axis_0_as_the_batch_axis_refuse_an_unbatched_sample(layer, sample, culprit):
    """These used to fail with IRErrors about numel or matmul mismatches (or compute wrong values)."""
    model = nn.build(layer, input_shape=sample, seed=0)
    refusal = rf"without a batch axis, which this model cannot be lowered on: {culprit}"
    with pytest.raises(ShapeError, match=refusal):
        lower_model(model, sample)
    lowered = lower_model(model, (2, *sample))  # the batched form lowers
    assert lowered.built.graph.nodes[lowered.inputs[0]].out_shape == (2, *sample)


def _torch_forward(x: torch.Tensor, p: list[torch.Tensor]) -> torch.Tensor:
    """torch float64 oracle of UNBATCHED_LAYER on one sample (torch's functions take any rank)."""
    f = torch.nn.functional
    h = x + p[0]
    h = f.gelu(f.linear(h, p[1], p[2]))
    h = f.layer_norm(h, (6,), p[3], p[4], 1e-5)
    h = h + torch.tanh(f.linear(h, p[5], p[6]))
    return torch.sigmoid(f.linear(h, p[7], p[8]))


UNBATCHED_LAYER = nn.sequential(
    nn.positional_embedding(3, 4),
    nn.linear(4, 6),
    nn.gelu(),
    nn.layer_norm(6),
    nn.residual(nn.sequential(nn.linear(6, 6), nn.tanh())),
    nn.dropout(0.3),
    nn.linear(6, 2),
    nn.sigmoid(),
)


def test_linear_activation_norm_and_embedding_models_lower_unbatched_to_the_torch_values():
    model = nn.build(UNBATCHED_LAYER, input_shape=(3, 4), seed=4, dtype=np.float64)
    # positional_embedding's table starts within +-0.1 and layer_norm's affine at ones/zeros:
    # make every parameter matter
    rng = np.random.default_rng(5)
    model.parameters = [p + rng.standard_normal(p.shape) * 0.5 for p in model.parameters]
    p = [torch.from_numpy(a) for a in model.parameters]
    x = rng.standard_normal((3, 4))
    expected = _torch_forward(torch.from_numpy(x), p).numpy()
    out = _run_lowered(model, x)
    assert out.shape == (3, 2)
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-12)
    batch = rng.standard_normal((2, 3, 4))
    np.testing.assert_allclose(
        _run_lowered(model, batch), _torch_forward(torch.from_numpy(batch), p).numpy(), rtol=1e-12, atol=1e-12
    )
    # the vector MLP of the seed chapter: unbatched [4] -> 18 nodes, the torch values
    mlp = mlp_model(dtype=np.float64)
    v = rng.standard_normal(4)
    w1, b1, w2, b2 = (torch.from_numpy(a) for a in mlp.parameters)
    f = torch.nn.functional
    mlp_expected = f.linear(torch.relu(f.linear(torch.from_numpy(v), w1, b1)), w2, b2).numpy()
    np.testing.assert_allclose(_run_lowered(mlp, v), mlp_expected, rtol=1e-12, atol=1e-12)


def test_a_batch_of_samples_of_another_shape_is_refused():
    model = nn.build(nn.sequential(nn.linear(3, 2)), input_shape=(2, 3), seed=0)
    for shape in [(5, 3, 2), (5, 2, 4), (2, 3, 2, 4), (3,), (-1, 2, 3)]:
        with pytest.raises(
            ShapeError,
            match=rf"^lower_model: input shape {re.escape(str(shape))} does not fit the model's per-sample "
            r"input shape \(2, 3\); accepted: \(batch, 2, 3\) with batch an int >= 1, \(2, 3\) "
            r"\(one sample without a batch axis\), or \(2, 3\) behind any leading axes \(this model works on "
            r"the trailing axes alone\)$",
        ):
            lower_model(model, shape)
    cnn = nn.build(nn.conv2d(1, 1, 2), input_shape=(1, 3, 3), seed=0)
    with pytest.raises(
        ShapeError,
        match=r"input shape \(4, 3, 3, 1\) does not fit .* accepted: \(batch, 1, 3, 3\) with batch an int "
        r">= 1 \(a batch axis is required: conv2d\(1, 1, \[2, 2\]\) treats axis 0 as the batch axis\)$",
    ):
        lower_model(cnn, (4, 3, 3, 1))


@pytest.mark.parametrize(
    "shape", [None, 4, "54", (5.0, 4), (True, 4), (5, np.bool_(True)), np.ones((2, 2), int)]
)
def test_an_input_shape_that_is_not_a_tuple_of_ints_is_refused(shape):
    model = mlp_model()
    with pytest.raises(ShapeError, match=r"^lower_model: input shape .* accepted: \(batch, 4\) with batch"):
        lower_model(model, shape)


def test_accepted_input_shape_forms():
    model = mlp_model()
    for shape in [[3, 4], np.array([3, 4]), torch.Size([3, 4]), (np.int64(3), np.int32(4))]:
        graph = lower_model(model, shape).built.graph
        assert graph.nodes[0].out_shape == (3, 4)
        assert all(type(d) is int for d in graph.nodes[0].out_shape)


@settings(max_examples=60, deadline=None)
@given(
    st.lists(st.integers(0, 4), min_size=1, max_size=4),
    st.sampled_from(["linear", "flatten"]),
)
def test_lower_model_accepts_exactly_batch_times_sample_and_the_unbatched_sample_where_correct(shape, body):
    sample = (2, 3)
    layer = nn.linear(3, 2) if body == "linear" else nn.flatten()
    model = nn.build(layer, input_shape=sample, seed=0)
    batched = len(shape) == 3 and tuple(shape[1:]) == sample and shape[0] >= 1
    trailing = len(shape) >= 2 and tuple(shape[-2:]) == sample and body == "linear"  # any leading axes
    if batched or trailing:
        lowered = lower_model(model, shape)
        prefix = tuple(shape[:-2])
        assert lowered.built.graph.nodes[lowered.output].out_shape == (*prefix, *model.output_shape)
    else:
        with pytest.raises(ShapeError, match=r"^lower_model: input shape "):
            lower_model(model, shape)


@pytest.mark.parametrize("shape", [(2, 5, 4), (3, 2, 5, 4), (0, 4), (0, 5, 4)])
def test_a_per_token_model_lowers_behind_any_leading_axes(shape):
    """A model of layers that work on the trailing axes alone (linear, activations, layer_norm)
    is lowered for ``(batch, tokens, features)`` or a batch of 0, as before the shape check was
    added; values against torch float64 applied to the last axis (layer_norm included: torch
    accepts an empty batch there)."""
    layers = [nn.linear(4, 8), nn.gelu(), nn.layer_norm(8), nn.linear(8, 3)]
    model = nn.build(nn.sequential(*layers), input_shape=(4,), seed=0, dtype=np.float64)
    x = np.random.default_rng(7).standard_normal(shape)
    params = [torch.from_numpy(p) for p in model.parameters]
    hidden = torch.nn.functional.gelu(torch.nn.functional.linear(torch.from_numpy(x), params[0], params[1]))
    hidden = torch.nn.functional.layer_norm(hidden, (8,), params[2], params[3])
    expected = torch.nn.functional.linear(hidden, params[-2], params[-1]).numpy()
    np.testing.assert_allclose(_run_lowered(model, x), expected, rtol=1e-12, atol=1e-12)


def test_a_layer_that_is_not_built_is_refused():
    for value in (nn.linear(4, 2), "mlp", None):
        with pytest.raises(LoweringTypeError, match=r"^lower_model: model must be a built Model \(nn\.build"):
            lower_model(value, (4,))
    error = LoweringTypeError("x")
    assert isinstance(error, TorchLeanError) and isinstance(error, TypeError)


# ---------------------------------------------------------- computed payload parameters


@dataclass(frozen=True, slots=True)
class _ScaledWeight(nn.Layer):
    """A custom layer passing a computed weight (``2 * W``) or bias to conv / layer_norm."""

    op: str
    computed: str
    kind = "scaled_weight"

    def output_shape(self, input_shape):
        return input_shape if self.op == "layer_norm" else (1, input_shape[1] - 1, input_shape[2] - 1)

    def param_specs(self):
        if self.op == "layer_norm":
            return (nn.ParamSpec("weight", (3,), "ones"), nn.ParamSpec("bias", (3,), "zeros"))
        weight = nn.ParamSpec("weight", (1, 1, 2, 2), "uniform", 0.5)
        return (weight, nn.ParamSpec("bias", (1,), "uniform", 0.5))

    def forward(self, ops, params, x, *, training):
        w, b = params
        if self.computed == "weight":
            w = ops.scale(w, 2.0)
        else:
            b = ops.scale(b, 2.0)
        if self.op == "layer_norm":
            return ops.layer_norm(x, w, b, normalized_ndim=1, eps=1e-5)
        return ops.conv(x, w, b, stride=(1, 1), padding=(0, 0), dilation=(1, 1), groups=1)


@pytest.mark.parametrize("op", ["conv", "layer_norm"])
@pytest.mark.parametrize("computed", ["weight", "bias"])
def test_a_computed_conv_or_layer_norm_weight_is_refused_by_name(op, computed):
    """These used to raise a bare TypeError; eager execution of the same layer still works."""
    sample = (3,) if op == "layer_norm" else (1, 3, 3)
    model = nn.build(_ScaledWeight(op, computed), input_shape=sample, seed=0, dtype=np.float64)
    ir_op = "layernorm" if op == "layer_norm" else "conv"
    with pytest.raises(
        LoweringTypeError,
        match=rf"^{ir_op}: the {computed} must be a model parameter \(an entry of the `params` a layer's "
        r"forward receives, passed unchanged\), got the computed graph node \d+; .*"
        r"accepted: a model parameter",
    ):
        lower_model(model, (2, *sample))
    assert eager(model, np.ones((2, *sample))).shape == (2, *model.output_shape)


def test_layer_norm_over_two_axes_lowers_to_the_torch_value() -> None:
    """The IR layer norm's first axis is ``rank - normalized_ndim`` (review20 mut W1: every other
    lowering test normalises one axis)."""
    from torchlean.nn.lowering import lower_model

    model = nn.build(nn.sequential(nn.layer_norm((3, 4))), input_shape=(3, 4), seed=0, dtype=np.float64)
    x = np.random.default_rng(0).standard_normal((2, 3, 4))
    lowered = lower_model(model, x.shape)
    out = evaluate(lowered.built.graph, {0: x}, lowered.built.payloads, dtype=np.float64)[lowered.output]
    expected = torch.nn.functional.layer_norm(torch.tensor(x), (3, 4)).numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-12, atol=1e-14)


def test_lower_model_refuses_an_empty_batch_for_a_model_that_needs_one() -> None:
    """``(batch, *sample)`` needs batch >= 1 when a layer reads axis 0 as the batch (review20 mut W2)."""
    from torchlean.nn.lowering import lower_model

    layers = nn.sequential(nn.conv2d(1, 2, 3), nn.flatten(), nn.linear(8, 3))
    model = nn.build(layers, input_shape=(1, 4, 4), seed=0)
    with pytest.raises(ShapeError, match="with batch an int >= 1"):
        lower_model(model, (0, 1, 4, 4))
