"""Forward evaluator: every op against torch float64 (or an independent hand computation)."""

from __future__ import annotations

from collections.abc import Callable

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torchlean.ir import ops
from torchlean.ir.builder import GraphBuilder
from torchlean.ir.errors import IRError
from torchlean.ir.evaluate import LOG_DOMAIN_MESSAGE, evaluate
from torchlean.ir.graph import Graph, Node
from torchlean.ir.payloads import BatchNormParams, ConvParams, LayerNormParams, LinearParams

from .test_builder import build_mlp

RNG = np.random.default_rng(20260)


def _t(a: np.ndarray) -> torch.Tensor:
    return torch.from_numpy(np.ascontiguousarray(a))


def _run_unary(build: Callable[[GraphBuilder, int], int], x: np.ndarray) -> np.ndarray:
    b = GraphBuilder()
    node = build(b, b.input(x.shape))
    built = b.build()
    return evaluate(built.graph, {0: x}, built.payloads)[node]


def _close(ours: np.ndarray, theirs: torch.Tensor, rtol: float = 1e-12, atol: float = 1e-13) -> None:
    expected = theirs.detach().numpy()
    assert ours.dtype == np.float64
    assert ours.shape == expected.shape
    np.testing.assert_allclose(ours, expected, rtol=rtol, atol=atol)


def test_mlp_graph_matches_torch_and_hand_values() -> None:
    params = [RNG.standard_normal(s) for s in [(8, 4), (8,), (1, 8), (1,)]]
    built = build_mlp(params)
    x = RNG.standard_normal(4)
    values = evaluate(built.graph, {0: x}, built.payloads)
    assert len(values) == 18
    w1, b1, w2, b2 = (_t(p) for p in params)
    expected = F.linear(F.relu(F.linear(_t(x), w1, b1)), w2, b2)
    _close(values[17], expected)
    _close(values[9], F.relu(F.linear(_t(x), w1, b1)))
    # hand-computed: identity-like weights
    hand = build_mlp([np.eye(8, 4), np.full(8, -1.0), np.ones((1, 8)), np.array([0.5])])
    out = evaluate(hand.graph, {0: np.array([3.0, 0.5, 2.0, -4.0])}, hand.payloads)[17]
    assert out.tolist() == [(2.0 + 0.0 + 1.0 + 0.0) + 0.5]


UNARY: list[tuple[str, Callable[[GraphBuilder, int], int], Callable[[torch.Tensor], torch.Tensor], bool]] = [
    ("abs", lambda b, x: b.abs(x), torch.abs, False),
    ("sqrt", lambda b, x: b.sqrt(x), torch.sqrt, True),
    ("inv", lambda b, x: b.inv(x), torch.reciprocal, False),
    ("relu", lambda b, x: b.relu(x), F.relu, False),
    ("tanh", lambda b, x: b.tanh(x), torch.tanh, False),
    ("sigmoid", lambda b, x: b.sigmoid(x), torch.sigmoid, False),
    ("exp", lambda b, x: b.exp(x), torch.exp, False),
    ("log", lambda b, x: b.log(x), torch.log, True),
    ("sin", lambda b, x: b.sin(x), torch.sin, False),
    ("cos", lambda b, x: b.cos(x), torch.cos, False),
    ("softplus", lambda b, x: b.softplus(x), F.softplus, False),
    ("gelu", lambda b, x: b.gelu(x), F.gelu, False),
    ("detach", lambda b, x: b.detach(x), lambda t: t, False),
    ("scale", lambda b, x: b.scale(x, -0.75), lambda t: t * -0.75, False),
    ("permute", lambda b, x: b.permute(x, [2, 0, 1]), lambda t: t.permute(2, 0, 1), False),
    ("transpose", lambda b, x: b.transpose(x, 0, 2), lambda t: t.transpose(0, 2), False),
    ("reshape", lambda b, x: b.reshape(x, [6, 4]), lambda t: t.reshape(6, 4), False),
    ("flatten", lambda b, x: b.flatten(x), lambda t: t.flatten(), False),
    (
        "broadcast_to",
        lambda b, x: b.broadcast_to(x, [5, 2, 3, 4]),
        lambda t: t.broadcast_to(5, 2, 3, 4),
        False,
    ),
    ("reduce_sum", lambda b, x: b.reduce_sum(x, 1), lambda t: t.sum(1), False),
    ("reduce_mean", lambda b, x: b.reduce_mean(x, 2), lambda t: t.mean(2), False),
    ("sum", lambda b, x: b.sum(x), lambda t: t.sum(), False),
    ("softmax", lambda b, x: b.softmax(x, 1), lambda t: torch.softmax(t, 1), False),
    ("log_softmax", lambda b, x: b.log_softmax(x, 2), lambda t: torch.log_softmax(t, 2), False),
    ("layernorm", lambda b, x: b.layernorm(x, 1), lambda t: F.layer_norm(t, (3, 4)), False),
]


@pytest.mark.parametrize(("name", "build", "reference", "positive"), UNARY, ids=[u[0] for u in UNARY])
def test_unary_and_view_ops_match_torch(
    name: str,
    build: Callable[[GraphBuilder, int], int],
    reference: Callable[[torch.Tensor], torch.Tensor],
    positive: bool,
) -> None:
    x = RNG.standard_normal((2, 3, 4))
    if positive:
        x = np.abs(x) + 0.1
    _close(_run_unary(build, x), reference(_t(x)))


@pytest.mark.parametrize("mean", [False, True], ids=["reduce_sum", "reduce_mean"])
def test_reducing_axis_0_of_a_scalar_returns_the_scalar_as_torch(mean: bool) -> None:
    x = np.array(-2.5)
    b = GraphBuilder()
    node = (b.reduce_mean if mean else b.reduce_sum)(b.input(()), 0)
    out = evaluate(b.build().graph, {0: x})[node]
    want = _t(x).mean(0) if mean else _t(x).sum(0)
    assert out.shape == tuple(want.shape) == ()
    _close(out, want)


BINARY: list[tuple[str, Callable[[GraphBuilder, int, int], int], Callable[..., torch.Tensor]]] = [
    ("add", lambda b, x, y: b.add(x, y), torch.add),
    ("sub", lambda b, x, y: b.sub(x, y), torch.sub),
    ("mul_elem", lambda b, x, y: b.mul_elem(x, y), torch.mul),
    ("max_elem", lambda b, x, y: b.max_elem(x, y), torch.maximum),
    ("min_elem", lambda b, x, y: b.min_elem(x, y), torch.minimum),
    ("mse_loss", lambda b, x, y: b.mse_loss(x, y), F.mse_loss),
    ("concat", lambda b, x, y: b.concat([x, y, x], 1), lambda s, t: torch.cat([s, t, s], 1)),
]


@pytest.mark.parametrize(("name", "build", "reference"), BINARY, ids=[u[0] for u in BINARY])
def test_binary_ops_match_torch(
    name: str, build: Callable[[GraphBuilder, int, int], int], reference: Callable[..., torch.Tensor]
) -> None:
    x, y = RNG.standard_normal((2, 3, 5)), RNG.standard_normal((2, 3, 5))
    b = GraphBuilder()
    node = build(b, b.input(x.shape), b.input(y.shape))
    out = evaluate(b.build().graph, {0: x, 1: y})[node]
    _close(out, reference(_t(x), _t(y)))


def test_safe_log_matches_its_definition() -> None:
    x = RNG.standard_normal((3, 4)) * 5
    b = GraphBuilder()
    node = b.safe_log(b.input(x.shape), b.const(np.array(1e-6)))
    built = b.build()
    _close(evaluate(built.graph, {0: x}, built.payloads)[node], torch.log(F.softplus(_t(x)) + 1e-6))


@pytest.mark.parametrize(
    ("a_shape", "b_shape"),
    [((3, 4), (4, 5)), ((2, 3, 4), (4,)), ((4,), (2, 4, 3)), ((2, 1, 3, 4), (5, 4, 2))],
)
def test_matmul_matches_torch(a_shape: tuple[int, ...], b_shape: tuple[int, ...]) -> None:
    a, c = RNG.standard_normal(a_shape), RNG.standard_normal(b_shape)
    b = GraphBuilder()
    node = b.matmul(b.input(a_shape), b.input(b_shape))
    _close(evaluate(b.build().graph, {0: a, 1: c})[node], torch.matmul(_t(a), _t(c)))


def test_linear_keeps_leading_axes() -> None:
    x, w, bias = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((5, 4)), RNG.standard_normal(5)
    b = GraphBuilder()
    node = b.linear(b.input(x.shape), w, bias)
    no_bias = b.linear(0, w)
    built = b.build()
    values = evaluate(built.graph, {0: x}, built.payloads)
    _close(values[node], F.linear(_t(x), _t(w), _t(bias)))
    _close(values[no_bias], F.linear(_t(x), _t(w)))


@pytest.mark.parametrize(
    ("in_shape", "config", "torch_padding"),
    [
        ((2, 4, 7, 6), ops.ConvConfig(4, 6, (3, 2), (2, 1), (1, 0), (1, 2), groups=2, channel_axis=1), None),
        ((3, 9), ops.ConvConfig(3, 2, (3,), padding=(2,), channel_axis=0), None),
        (
            (1, 2, 5, 5),
            ops.ConvConfig(2, 3, (3, 3), padding=(0, 1), padding_after=(2, 0), channel_axis=1),
            (1, 0, 0, 2),
        ),
    ],
)
def test_conv_matches_torch(
    in_shape: tuple[int, ...], config: ops.ConvConfig, torch_padding: tuple[int, ...] | None
) -> None:
    x = RNG.standard_normal(in_shape)
    w, bias = RNG.standard_normal(config.weight_shape), RNG.standard_normal(config.out_channels)
    b = GraphBuilder()
    node = b.conv(b.input(in_shape), config, w, bias)
    built = b.build()
    ours = evaluate(built.graph, {0: x}, built.payloads)[node]
    conv = (F.conv1d, F.conv2d, F.conv3d)[config.spatial_rank - 1]
    tx = _t(x) if config.channel_axis == 1 else _t(x)[None]
    if torch_padding is not None:  # asymmetric: F.pad takes (last before, last after, ...)
        tx = F.pad(tx, torch_padding)
        padding: tuple[int, ...] = (0,) * config.spatial_rank
    else:
        padding = config.padding
    expected = conv(tx, _t(w), _t(bias), config.stride, padding, config.dilation, config.groups)
    _close(ours, expected if config.channel_axis == 1 else expected[0])


def test_pools_match_torch() -> None:
    x = RNG.standard_normal((2, 3, 7, 6))
    window = ops.WindowConfig((3, 2), (2, 2), (1, 1))
    b = GraphBuilder()
    inp = b.input(x.shape)
    mx, av = b.max_pool(inp, window), b.avg_pool(inp, window)
    unbatched = b.avg_pool(b.input((3, 7, 6)), ops.WindowConfig.make(2))
    values = evaluate(b.build().graph, {0: x, 3: x[0]})
    _close(values[mx], F.max_pool2d(_t(x), (3, 2), (2, 2), (1, 1)))
    _close(values[av], F.avg_pool2d(_t(x), (3, 2), (2, 2), (1, 1), count_include_pad=True))
    _close(values[unbatched], F.avg_pool2d(_t(x[0]), 2))


@pytest.mark.parametrize("channel_axis", [0, 1, 2])
def test_batch_norm_eval_matches_torch(channel_axis: int) -> None:
    shape = (2, 3, 4)
    x = RNG.standard_normal(shape)
    c = shape[channel_axis]
    mean, var, weight, bias = (
        RNG.standard_normal(c),
        RNG.random(c) + 0.5,
        RNG.standard_normal(c),
        RNG.standard_normal(c),
    )
    params = BatchNormParams(mean, var, weight, bias, 1e-3)
    b = GraphBuilder()
    node = b.batch_norm_eval(b.input(shape), channel_axis, params)
    built = b.build()
    moved = torch.movedim(_t(x), channel_axis, 1)
    expected = F.batch_norm(moved, _t(mean), _t(var), _t(weight), _t(bias), False, 0.1, 1e-3)
    _close(evaluate(built.graph, {0: x}, built.payloads)[node], torch.movedim(expected, 1, channel_axis))


def test_layernorm_with_affine_payload() -> None:
    x = RNG.standard_normal((2, 3, 4))
    weight, bias = RNG.standard_normal((3, 4)), RNG.standard_normal((3, 4))
    b = GraphBuilder()
    node = b.layernorm(b.input(x.shape), 1, LayerNormParams(weight, bias, 1e-3))
    built = b.build()
    expected = F.layer_norm(_t(x), (3, 4), _t(weight), _t(bias), 1e-3)
    _close(evaluate(built.graph, {0: x}, built.payloads)[node], expected)


def test_hard_masked_softmax_blocks_exactly() -> None:
    x = RNG.standard_normal((2, 3, 4))
    mask = np.array([[True, False, True, True], [False, False, False, False], [True, True, True, False]])
    x[:, 1, 0] = np.nan  # blocked everywhere: must not leak
    out = _run_unary(lambda b, i: b.hard_masked_softmax(i, mask), x)
    assert np.all(out[:, ~mask] == 0.0)
    assert np.all(out[:, 1, :] == 0.0)
    expected = torch.softmax(_t(x).masked_fill(~_t(mask), float("-inf")), -1)
    keep = np.asarray(mask.any(axis=1))
    _close(out[:, keep], expected[:, _t(keep)])


@pytest.mark.parametrize("causal", [None, "upper_left", "lower_right"])
def test_attention_matches_torch(causal: str | None) -> None:
    q, k, v = RNG.standard_normal((2, 3, 4)), RNG.standard_normal((2, 5, 4)), RNG.standard_normal((2, 5, 6))
    mask: np.ndarray = RNG.random((3, 5)) > 0.3
    mask[:, 4] = True  # no fully blocked row, so torch is finite
    b = GraphBuilder()
    node = b.attention(
        b.input(q.shape), b.input(k.shape), b.input(v.shape), mask=mask, causal=causal, scale=0.4
    )
    out = evaluate(b.build().graph, {0: q, 1: k, 2: v})[node]
    allowed = mask.copy()
    if causal == "upper_left":
        allowed &= np.tril(np.ones((3, 5), dtype=bool))
    elif causal == "lower_right":
        allowed &= np.tril(np.ones((3, 5), dtype=bool), k=2)
    blocked_rows = np.asarray(~allowed.any(axis=1))
    expected = F.scaled_dot_product_attention(
        _t(q), _t(k), _t(v), attn_mask=_t(allowed | blocked_rows[:, None]), scale=0.4
    )
    expected[:, _t(blocked_rows)] = 0.0  # fully masked rows are zeros (DESIGN §1.9)
    _close(out, expected)


def _splitmix64(x: int) -> int:
    m = (1 << 64) - 1
    z = (x + 0x9E3779B97F4A7C15) & m
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & m
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & m
    return z ^ (z >> 31)


def test_random_sources_use_the_node_index() -> None:
    b = GraphBuilder()
    keep = b.const(np.array(0.5))
    u = b.rand_uniform(7, [2, 3])
    mask = b.bernoulli_mask(7, keep, [2, 3])
    built = b.build()
    values = evaluate(built.graph, {}, built.payloads, dtype=np.float64)
    for node, value in ((u, values[u]), (mask, values[mask])):
        key = _splitmix64(7 + node)  # keyOf(seed, node index)
        draws = np.array([(_splitmix64((key + i) % 2**64) % 2**32) / 2**32 for i in range(6)]).reshape(2, 3)
        expected = draws if node == u else (draws < 0.5).astype(np.float64)
        assert np.array_equal(value, expected)
    again = evaluate(built.graph, {}, built.payloads, dtype=np.float64)
    assert np.array_equal(again[u], values[u])


# ------------------------------------------------------------------------------------------ errors


def test_log_domain_error() -> None:
    for bad in (np.array([1.0, 0.0]), np.array([2.0, np.nan]), np.array([-1.0, 3.0])):
        with pytest.raises(IRError) as info:
            _run_unary(lambda b, x: b.log(x), bad)
        assert str(info.value) == LOG_DOMAIN_MESSAGE
    assert LOG_DOMAIN_MESSAGE == (
        "IR eval: log: input contains values <= 0 (or NaN); use `safe_log`, which is log(softplus(x) + eps)"
    )


def test_payload_errors() -> None:
    graph = Graph((Node(0, (), ops.Const((2, 2)), (2, 2)),))
    with pytest.raises(IRError, match=r"^IR eval: missing const payload for node 0$"):
        evaluate(graph, {})
    with pytest.raises(IRError, match=r"^IR eval: const 0: flat length mismatch: have 3, expected 4$"):
        evaluate(graph, {}, {0: np.zeros(3)})
    flat = evaluate(graph, {}, {0: np.arange(4.0)})[0]
    assert flat.tolist() == [[0.0, 1.0], [2.0, 3.0]]
    linear = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (0,), ops.Linear(), (2,))))
    with pytest.raises(IRError, match=r"^IR eval: missing linear payload for node 1$"):
        evaluate(linear, {0: np.zeros(4)})
    with pytest.raises(
        IRError, match=r"^IR eval: node 1 \(linear\): payload must be a LinearParams, got ndarray$"
    ):
        evaluate(linear, {0: np.zeros(4)}, {1: np.zeros(3)})
    out = evaluate(linear, {0: np.ones(4)}, {1: LinearParams(np.ones((2, 4)), None)})[1]
    assert out.tolist() == [4.0, 4.0]


def test_input_errors() -> None:
    graph = Graph((Node(0, (), ops.Input(), (2,)),))
    with pytest.raises(IRError, match=r"^IR eval: missing input value for node 0$"):
        evaluate(graph, {})
    with pytest.raises(IRError, match=r"^IR eval: input 0: shape mismatch: expected \[2\], got \[3\]$"):
        evaluate(graph, {0: np.zeros(3)})
    with pytest.raises(
        IRError,
        match=r"^IR eval: input 0: expected a float32, float64, int64 or bool array, got dtype int32$",
    ):
        evaluate(graph, {0: np.zeros(2, dtype=np.int32)})


def test_kernel_guard_refusals_name_the_node() -> None:
    b = GraphBuilder()
    b.add(b.input((2,)), b.const(np.ones(2, dtype=np.float64)))
    built = b.build()
    with pytest.raises(IRError) as info:
        evaluate(built.graph, {0: np.zeros(2, dtype=np.float32)}, built.payloads)
    assert str(info.value).startswith(
        "IR eval: node 2 (add): add: operand b has dtype float64 but operand a has dtype float32"
    )


def test_evaluation_checks_shapes_first() -> None:
    graph = Graph((Node(0, (), ops.Input(), (2,)), Node(1, (0,), ops.Relu(), (3,))))
    with pytest.raises(
        IRError, match=r"^IR graph: node 1: outShape mismatch: inferred=\[2\], declared=\[3\]"
    ):
        evaluate(graph, {0: np.zeros(2)})


def test_float32_stays_float32() -> None:
    params = [RNG.standard_normal(s).astype(np.float32) for s in [(8, 4), (8,), (1, 8), (1,)]]
    built = build_mlp(params)
    values = evaluate(built.graph, {0: RNG.standard_normal(4).astype(np.float32)}, built.payloads)
    assert all(v.dtype == np.float32 for v in values)


# --------------------------------------------------- int64 and bool inputs (review 18, F6)


@pytest.mark.parametrize("dtype", [np.int64, np.bool_])
def test_int64_and_bool_inputs_move_through_the_shape_ops(dtype: type) -> None:
    x = (np.arange(6).reshape(2, 3) % 4).astype(dtype)
    b = GraphBuilder()
    i = b.input([2, 3])
    reshaped = b.reshape(i, [3, 2])
    permuted = b.permute(i, [1, 0])
    transposed = b.transpose(i, 0, 1)
    broadcast = b.broadcast_to(b.reshape(i, [1, 2, 3]), [2, 2, 3])
    joined = b.concat([i, i], 1)
    flat = b.flatten(i)
    detached = b.detach(i)
    built = b.build()
    out = evaluate(built.graph, {i: x}, built.payloads)
    expected = {
        reshaped: x.reshape(3, 2),
        permuted: x.T,
        transposed: x.T,
        broadcast: np.broadcast_to(x, (2, 2, 3)),
        joined: np.concatenate([x, x], axis=1),
        flat: x.ravel(),
        detached: x,
    }
    for node, want in expected.items():
        assert out[node].dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out[node], want)


@pytest.mark.parametrize(("dtype", "name"), [(np.int64, "int64"), (np.bool_, "bool")])
def test_kernels_that_compute_refuse_int64_and_bool_by_node(dtype: type, name: str) -> None:
    for build, label, message in (
        (lambda b, x: b.relu(x), "relu", f"relu: input x has dtype {name}; accepted: float32 or float64"),
        (lambda b, x: b.log(x), "log", f"log: input x has dtype {name}; accepted: float32 or float64"),
    ):
        b = GraphBuilder()
        build(b, b.input([2]))
        with pytest.raises(IRError) as info:
            evaluate(b.build().graph, {0: np.array([-1, 0]).astype(dtype)})
        assert str(info.value) == f"IR eval: node 1 ({label}): {message}"


def test_float_log_domain_error_is_unchanged_and_lists_become_arrays() -> None:
    b = GraphBuilder()
    b.log(b.input([2]))
    graph = b.build().graph
    with pytest.raises(IRError) as info:
        evaluate(graph, {0: [1.0, -2.0]})
    assert str(info.value) == LOG_DOMAIN_MESSAGE
    with pytest.raises(IRError) as info:
        evaluate(graph, {0: [1, -2]})  # a list of ints is an int64 array: the kernel's dtype refusal
    assert (
        str(info.value) == "IR eval: node 1 (log): log: input x has dtype int64; accepted: float32 or float64"
    )
    assert evaluate(graph, {0: [1.0, 4.0]})[1].tolist() == [0.0, float(np.log(4.0))]


# -------------------------------------------------------- argument handling (review 18, F10)


def _relu_graph() -> Graph:
    b = GraphBuilder()
    b.relu(b.input([2]))
    b.rand_uniform(0, [2])
    return b.build().graph


def test_a_graph_that_is_not_a_graph_is_refused() -> None:
    with pytest.raises(IRError) as info:
        evaluate(list(_relu_graph().nodes), {0: np.ones(2)})  # type: ignore[arg-type]
    assert str(info.value).startswith(
        "evaluate: graph must be a torchlean.ir Graph (from GraphBuilder.build().graph or Graph(nodes)), "
        "got [Node(id=0, "
    )
    assert str(info.value).endswith(" (list)")


def test_inputs_as_a_list_is_refused() -> None:
    with pytest.raises(IRError) as info:
        evaluate(_relu_graph(), [np.ones(2)])  # type: ignore[arg-type]
    assert str(info.value) == (
        "IR eval: inputs must be a mapping from input node id to array (input ids: [0]), got list"
    )
    with pytest.raises(IRError) as info:  # review225 F6: one line, not the array's repr
        evaluate(_relu_graph(), np.ones((4, 2)))  # type: ignore[arg-type]
    assert str(info.value) == (
        "IR eval: inputs must be a mapping from input node id to array (input ids: [0]), got an array of "
        "shape [4, 2] (pass {0: array})"
    )


@pytest.mark.parametrize(
    ("inputs", "stray"),
    [
        ({0: np.ones(2), 1: np.zeros(2), 7: np.ones(2)}, "[1, 7]"),
        ({0: np.ones(2), "0": np.ones(2)}, "['0']"),
        ({True: np.ones(2)}, "[True]"),
        ({0.0: np.ones(2)}, "[0.0]"),
    ],
)
def test_keys_that_are_not_input_ids_are_refused(inputs: dict[object, object], stray: str) -> None:
    with pytest.raises(IRError) as info:
        evaluate(_relu_graph(), inputs)  # type: ignore[arg-type]
    assert (
        str(info.value) == f"IR eval: inputs has keys that are not input node ids: {stray} (input ids: [0])"
    )


def test_numpy_integer_input_keys_are_accepted() -> None:
    out = evaluate(_relu_graph(), {np.int64(0): np.array([-1.0, 2.0])})  # type: ignore[dict-item]
    assert out[1].tolist() == [0.0, 2.0]


@pytest.mark.parametrize("dtype", ["bogus", 5])
def test_draw_dtype_that_is_not_a_dtype_is_refused(dtype: object) -> None:
    with pytest.raises(IRError) as info:
        evaluate(_relu_graph(), {0: np.ones(2)}, dtype=dtype)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"IR eval: dtype {dtype!r} is not a numpy dtype (accepted: float32 or float64, the dtype of "
        "rand_uniform draws, as a numpy dtype or type, its name, or a torch dtype)"
    )


@pytest.mark.parametrize(("dtype", "name"), [(np.int64, "int64"), (np.float16, "float16")])
def test_draw_dtype_outside_float32_and_float64_is_refused_where_it_draws(dtype: type, name: str) -> None:
    with pytest.raises(IRError) as info:
        evaluate(_relu_graph(), {0: np.ones(2)}, dtype=dtype)
    assert str(info.value) == (
        f"IR eval: node 2 (rand_uniform 0): rand_uniform: dtype dtype('{name}') is not accepted "
        "(accepted: float32 or float64)"
    )
    # without a rand_uniform node the draw dtype is unused: dtype=x.dtype works for int64 data
    b = GraphBuilder()
    b.reshape(b.input([2, 2]), [4])
    x = np.arange(4, dtype=np.int64).reshape(2, 2)
    assert evaluate(b.build().graph, {0: x}, dtype=x.dtype)[1].tolist() == [0, 1, 2, 3]


def test_draw_dtype_float64_draws_float64() -> None:
    assert evaluate(_relu_graph(), {0: np.ones(2)}, dtype="float64")[2].dtype == np.float64


def test_payload_of_the_wrong_type_is_refused_at_every_payload_taking_node() -> None:
    x = np.arange(6.0).reshape(1, 3, 2)
    b = GraphBuilder()
    i = b.input([1, 3, 2])
    ln = b.layernorm(i, 2)
    bn = b.batch_norm_eval(i, 1, BatchNormParams(np.zeros(3), np.ones(3)))
    lin = b.linear(i, np.ones((4, 2)))
    conv = b.conv(i, ops.ConvConfig(3, 1, (1,), channel_axis=1), np.ones((1, 3, 1)))
    const = b.const(np.ones(2))
    built = b.build()
    wrong = LinearParams(np.ones((2, 2)), None)
    for node, label, accepted in (
        (ln, "layernorm 2", "a LayerNormParams or none"),
        (bn, "batch_norm_eval 1 3", "a BatchNormParams"),
        (lin, "linear", "a LinearParams"),
        (conv, None, "a ConvParams"),
        (const, "const [2]", "a numpy array"),
    ):
        payloads = dict(built.payloads)
        payloads[node] = wrong if node != lin else ConvParams(np.ones((4, 2)), None)
        with pytest.raises(IRError) as info:
            evaluate(built.graph, {i: x}, payloads)
        got = "ConvParams" if node == lin else "LinearParams"
        shown = label or built.graph.nodes[node].kind.describe()
        assert str(info.value) == f"IR eval: node {node} ({shown}): payload must be {accepted}, got {got}"
    # and a layernorm without a payload is still the no-affine layer norm (torch's, eps 1e-5)
    out = evaluate(built.graph, {i: x}, built.payloads)[ln]
    expected = F.layer_norm(_t(x), (2,), eps=1e-5)
    _close(out, expected)


def _layernorm_graph() -> Graph:
    b = GraphBuilder()
    b.layernorm(b.relu(b.input([2, 3])), 1)
    return b.build().graph


@pytest.mark.parametrize(
    ("payloads", "stray"),
    [
        ({1: LinearParams(np.ones((3, 3)), None)}, "[1]"),  # the relu node: would be ignored
        ({0: LayerNormParams(), 9: LayerNormParams()}, "[0, 9]"),
        ({"2": LayerNormParams()}, "['2']"),
    ],
)
def test_payloads_keyed_at_nodes_taking_none_are_refused(payloads: dict[object, object], stray: str) -> None:
    with pytest.raises(IRError) as info:
        evaluate(_layernorm_graph(), {0: np.ones((2, 3))}, payloads)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"IR eval: payloads has keys that are not nodes taking a payload: {stray} (nodes taking one: "
        "[2]; kinds const, linear, conv, batch_norm_eval, batch_norm_train, layernorm)"
    )


@pytest.mark.parametrize("payloads", [[LayerNormParams(np.ones((3, 4)), None)], (LayerNormParams(),)])
def test_payloads_as_a_list_is_refused(payloads: object) -> None:
    """review219 F6: named by its type, on one line, as the executor names it."""
    with pytest.raises(IRError) as info:
        evaluate(_layernorm_graph(), {0: np.ones((2, 3))}, payloads)  # type: ignore[arg-type]
    assert str(info.value) == (
        f"IR eval: payloads must be a mapping from node id to payload, got {type(payloads).__name__}"
    )


def test_a_layernorm_payload_at_its_node_is_used() -> None:
    x = np.arange(6.0).reshape(2, 3) - 2.0
    weight, bias = np.array([1.0, 2.0, 3.0]), np.array([0.5, 0.0, -0.5])
    out = evaluate(_layernorm_graph(), {0: x}, {np.int64(2): LayerNormParams(weight, bias, 1e-3)})  # type: ignore[dict-item]
    expected = F.layer_norm(
        torch.relu(torch.from_numpy(x)), (3,), torch.from_numpy(weight), torch.from_numpy(bias), 1e-3
    )
    np.testing.assert_allclose(out[2], expected.numpy(), rtol=1e-12, atol=1e-12)
