"""GraphBuilder: the 4 -> 8 -> 1 MLP lowering of anchor-runtime.md §4.2 (18 nodes, lazy constants)."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean.ir import ops
from torchlean.ir.builder import BuiltGraph, GraphBuilder, Param
from torchlean.ir.errors import IRError
from torchlean.ir.evaluate import evaluate
from torchlean.ir.infer import check_shapes
from torchlean.ir.payloads import LayerNormParams, LinearParams

# The table of anchor-runtime.md §4.2: (id, kind, out shape).
MLP_TABLE = [
    (0, "input", (4,)),
    (1, "reshape [4] [1, 4]", (1, 4)),
    (2, "const [8, 4]", (8, 4)),
    (3, "transpose 0 1", (4, 8)),
    (4, "matmul", (1, 8)),
    (5, "const [8]", (8,)),
    (6, "broadcast_to [8] [1, 8]", (1, 8)),
    (7, "add", (1, 8)),
    (8, "reshape [1, 8] [8]", (8,)),
    (9, "relu", (8,)),
    (10, "reshape [8] [1, 8]", (1, 8)),
    (11, "const [1, 8]", (1, 8)),
    (12, "transpose 0 1", (8, 1)),
    (13, "matmul", (1, 1)),
    (14, "const [1]", (1,)),
    (15, "broadcast_to [1] [1, 1]", (1, 1)),
    (16, "add", (1, 1)),
    (17, "reshape [1, 1] [1]", (1,)),
]


def _vector_linear(b: GraphBuilder, x: int, w: Param, bias: Param) -> int:
    """The original's lowering of a vector ``nn.linear`` (anchor-runtime.md §4.2)."""
    (n,) = b.shape(x)
    m = w.shape[0]
    h = b.reshape(x, [1, n])
    h = b.matmul(h, b.transpose(w, 0, 1))
    h = b.add(h, b.broadcast_to(bias, [1, m]))
    return b.reshape(h, [m])


def build_mlp(params: list[np.ndarray]) -> BuiltGraph:
    b = GraphBuilder()
    x = b.input([4])
    w1, b1, w2, b2 = (b.param(p) for p in params)
    h = b.relu(_vector_linear(b, x, w1, b1))
    _vector_linear(b, h, w2, b2)
    return b.build()


def _params() -> list[np.ndarray]:
    rng = np.random.default_rng(0)
    return [rng.standard_normal(s) for s in [(8, 4), (8,), (1, 8), (1,)]]


def test_mlp_lowering_matches_the_original_table() -> None:
    built = build_mlp(_params())
    rows = [(n.id, n.kind.describe(), n.out_shape) for n in built.graph.nodes]
    assert rows == MLP_TABLE
    assert len(built.graph) == 18
    check_shapes(built.graph)
    assert built.output == 17


def test_mlp_parents_and_planned_ids() -> None:
    graph = build_mlp(_params()).graph
    assert [n.parents for n in graph.nodes][:8] == [(), (0,), (), (2,), (1, 3), (), (5,), (4, 6)]
    planned = [n.id for n in graph.nodes if n.kind.backend_op is not None]
    assert planned == [1, 3, 4, 6, 7, 8, 9, 10, 12, 13, 15, 16, 17]
    assert graph.input_ids() == (0,)


def test_constants_are_payloads_keyed_by_node_id() -> None:
    params = _params()
    built = build_mlp(params)
    assert sorted(built.payloads) == [2, 5, 11, 14]
    for node_id, value in zip([2, 5, 11, 14], params, strict=True):
        stored = built.payloads[node_id]
        assert isinstance(stored, np.ndarray)
        assert np.array_equal(stored, value)
        assert not stored.flags.writeable
    params[0][0, 0] = 123.0  # the builder copied the value
    assert built.payloads[2][0, 0] != 123.0  # type: ignore[index]


def test_param_is_emitted_once_at_first_use() -> None:
    b = GraphBuilder()
    x = b.input([3])
    w = b.param(np.ones(3), name="w")
    assert len(b.build().graph) == 1  # nothing emitted yet
    y = b.mul_elem(x, w)
    z = b.mul_elem(y, w)
    graph = b.build().graph
    assert [n.kind.describe() for n in graph.nodes] == ["input", "const [3]", "mul_elem", "mul_elem"]
    assert graph.nodes[z].parents == (y, 1)


def test_param_of_another_builder_is_refused() -> None:
    other = GraphBuilder().param(np.ones(3), name="w")
    b = GraphBuilder()
    x = b.input([3])
    with pytest.raises(IRError, match=r"^builder: parameter w was declared to another builder$"):
        b.add(x, other)
    with pytest.raises(IRError, match=r"^builder: unknown node reference 5 \(nodes 0\.\.0\)$"):
        b.relu(5)


def test_builder_reports_shape_errors_at_once() -> None:
    b = GraphBuilder()
    x = b.input([2])
    y = b.input([3])
    with pytest.raises(IRError, match=r"^add: shape mismatch: \[2\] vs \[3\]$"):
        b.add(x, y)
    with pytest.raises(IRError, match=r"^reshape: numel mismatch: 2 vs 4$"):
        b.reshape(x, [2, 2])
    assert len(b.build().graph) == 2  # failed ops append nothing


def test_builder_ops_and_payloads() -> None:
    b = GraphBuilder()
    x = b.input([2, 1, 6, 6])
    conv = b.conv(
        x, ops.ConvConfig(1, 3, (3, 3), padding=(1, 1), channel_axis=1), np.zeros((3, 1, 3, 3)), np.zeros(3)
    )
    pooled = b.max_pool(conv, ops.WindowConfig.make(2))
    flat = b.reshape(pooled, [2, 27])
    logits = b.linear(flat, np.zeros((10, 27)), np.zeros(10))
    assert b.shape(logits) == (2, 10)
    probs = b.log_softmax(logits, 1)
    assert b.shape(b.sum(probs)) == ()
    built = b.build()
    assert isinstance(built.payloads[logits], LinearParams)
    check_shapes(built.graph)
    with pytest.raises(IRError, match=r"^linear: weight \[10, 5\] and bias none do not fit input \[2, 27\]$"):
        b.linear(flat, np.zeros((10, 5)))
    with pytest.raises(IRError, match=r"^conv: weight \[3, 2, 3, 3\] and bias none do not fit"):
        b.conv(x, ops.ConvConfig(1, 3, (3, 3), channel_axis=1), np.zeros((3, 2, 3, 3)))


def test_attention_and_masks() -> None:
    b = GraphBuilder()
    q = b.input([2, 3, 4])
    k = b.input([2, 5, 4])
    v = b.input([2, 5, 6])
    out = b.attention(q, k, v, mask=np.ones((3, 5), dtype=bool), causal="lower_right")
    assert b.shape(out) == (2, 3, 6)
    scores = b.input([3, 5])
    masked = b.hard_masked_softmax(scores, np.eye(3, 5, dtype=bool))
    assert b.build().graph.nodes[masked].kind.describe().startswith("hard_masked_softmax {shape=[3, 5]")


@pytest.mark.parametrize(
    ("dims", "bad"),
    [([-2], "-2"), ([2.5, 4], "2.5"), (["2", 4], "'2'"), ([True, 3], "True"),
     ([3, np.bool_(True)], r"np\.True_"), ([None], "None"), ([np.float64(2.0)], r"np\.float64\(2\.0\)")],
)
def test_input_refuses_extents_that_are_not_non_negative_ints(dims: list[object], bad: str) -> None:
    """Declared input extents are checked as every op's shape arguments are (``broadcast_to``):
    nothing is appended, so no ill-shaped graph reaches ``check_well_formed``/``accept_graph``."""
    b = GraphBuilder()
    with pytest.raises(IRError, match=rf"^input: expected a non-negative integer, got {bad}$"):
        b.input(dims)  # type: ignore[arg-type]
    with pytest.raises(IRError, match=rf"^rand_uniform: expected a non-negative integer, got {bad}$"):
        b.rand_uniform(0, dims)  # type: ignore[arg-type]
    assert len(b.build().graph) == 0
    with pytest.raises(IRError, match=r"^broadcast_to: expected a non-negative integer, got -1$"):
        b.broadcast_to(b.input([1]), [-1])  # the wording the input check mirrors


@pytest.mark.parametrize("shape", ["23", 4, None, b"\x02"])
def test_input_refuses_a_shape_that_is_not_a_sequence(shape: object) -> None:
    with pytest.raises(IRError, match=r"^input: expected a sequence of non-negative integers, got "):
        GraphBuilder().input(shape)  # type: ignore[arg-type]


def test_input_accepts_python_and_numpy_ints_and_zero_extents() -> None:
    b = GraphBuilder()
    x = b.input((np.int64(2), np.int32(0), 3))
    y = b.input(np.array([4, 1]))
    graph = b.build().graph
    assert graph.nodes[x].out_shape == (2, 0, 3)
    assert all(type(d) is int for d in graph.nodes[x].out_shape)
    assert graph.nodes[y].out_shape == (4, 1)
    check_shapes(graph)


@pytest.mark.parametrize(
    ("method", "negative", "positive"),
    [
        ("reduce_sum", (-1,), (2,)),
        ("reduce_mean", (-3,), (0,)),
        ("softmax", (-2,), (1,)),
        ("log_softmax", (-1,), (2,)),
        ("transpose", (-1, -3), (2, 0)),
        ("permute", ((-1, 0, -2),), ((2, 0, 1),)),
    ],
)
def test_negative_axes_count_from_the_end_as_in_torch(
    method: str, negative: tuple[object, ...], positive: tuple[object, ...]
) -> None:
    built = []
    for args in (negative, positive):
        b = GraphBuilder()
        x = b.input([2, 3, 4])
        getattr(b, method)(x, *args)
        built.append(b.build().graph.nodes)
    assert built[0] == built[1]  # the IR stores the non-negative axis, as the original


def test_negative_concat_axis_and_out_of_range_negative_axes() -> None:
    b = GraphBuilder()
    x = b.input([2, 3])
    assert b.shape(b.concat([x, x], -1)) == (2, 6)
    out_of_range = r"^reduce_sum: axis -3 out of range for shape \[2, 3\] \(accepted: -2\.\.1\)$"
    with pytest.raises(IRError, match=out_of_range):
        b.reduce_sum(x, -3)
    scalar = b.input([])
    with pytest.raises(IRError, match=r"^transpose: axis -1 out of range for shape \[\] \(accepted: none: a"):
        b.transpose(scalar, -1, 0)
    with pytest.raises(
        IRError, match=r"^softmax: axis -2 out of range for shape \[\] \(accepted: -1\.\.0\)$"
    ):
        b.softmax(scalar, -2)
    with pytest.raises(IRError, match=r"^reduce_sum axis: expected a non-negative integer, got True$"):
        b.reduce_sum(x, True)


# ---------------------------------------------------------------- review 18: F2, F7, F8, F9


def test_layernorm_with_bad_params_appends_nothing() -> None:
    b = GraphBuilder()
    x = b.input([2, 3])
    deferred = b.param(np.ones((2, 3)), name="x2")
    before = b.build().graph
    with pytest.raises(IRError) as info:
        b.layernorm(x, 1, LayerNormParams(np.ones(5), None))
    assert str(info.value) == "layernorm: weight [5] does not match the normalised shape [3]"
    with pytest.raises(IRError) as info:
        b.layernorm(deferred, -1, LayerNormParams(None, np.ones((2, 3))))
    assert str(info.value) == "layernorm: bias [2, 3] does not match the normalised shape [3]"
    with pytest.raises(IRError) as info:
        b.layernorm(x, 1, LinearParams(np.ones((3, 3)), None))  # type: ignore[arg-type]
    assert str(info.value).startswith(
        "layernorm: params must be a LayerNormParams or None, got LinearParams("
    )
    assert str(info.value).endswith(" (LinearParams)")
    built = b.build()
    assert built.graph == before  # no layernorm node, and the deferred parameter was not emitted
    assert dict(built.payloads) == {}


def test_batch_norm_eval_refuses_params_of_another_type() -> None:
    b = GraphBuilder()
    x = b.input([2, 3])
    with pytest.raises(IRError) as info:
        b.batch_norm_eval(x, 1, LayerNormParams())  # type: ignore[arg-type]
    assert str(info.value) == (
        "batch_norm_eval: params must be a BatchNormParams, got "
        "LayerNormParams(weight=None, bias=None, eps=1e-05) (LayerNormParams)"
    )
    assert len(b.build().graph) == 1


def test_layernorm_negative_axis_counts_from_the_end() -> None:
    torch = pytest.importorskip("torch")
    rng = np.random.default_rng(18)
    x = rng.standard_normal((2, 3, 4))
    w, bias = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    for axis in (-2, 1):
        b = GraphBuilder()
        node = b.layernorm(b.input(x.shape), axis, LayerNormParams(w, bias))
        built = b.build()
        assert built.graph.nodes[node].kind == ops.LayerNorm(1)
        out = evaluate(built.graph, {0: x}, built.payloads)[node]
        expected = torch.nn.functional.layer_norm(
            torch.from_numpy(x), (3, 4), torch.from_numpy(w), torch.from_numpy(bias), 1e-5
        )
        np.testing.assert_allclose(out, expected.numpy(), rtol=1e-12, atol=1e-12)
    b = GraphBuilder()
    x_id = b.input([2, 3])
    with pytest.raises(IRError) as info:
        b.layernorm(x_id, -3)
    assert str(info.value) == "layernorm: axis -3 out of range for shape [2, 3] (accepted: -2..1)"
    with pytest.raises(IRError) as info:
        b.layernorm(x_id, 2)
    assert str(info.value) == "layernorm: axis 2 out of range for shape [2, 3]"
    assert len(b.build().graph) == 1


@pytest.mark.parametrize("axis", [0, -1])
def test_softmax_and_reductions_of_a_scalar_as_torch(axis: int) -> None:
    torch = pytest.importorskip("torch")
    t = torch.tensor(3.0, dtype=torch.float64)
    cases = [
        ("softmax", torch.softmax(t, axis)),
        ("log_softmax", torch.log_softmax(t, axis)),
        ("reduce_sum", t.sum(axis)),
        ("reduce_mean", t.mean(axis)),
    ]
    for method, expected in cases:
        b = GraphBuilder()
        node = getattr(b, method)(b.input([]), axis)
        assert b.build().graph.nodes[node].out_shape == ()
        out = evaluate(b.build().graph, {0: np.array(3.0)})[node]
        assert out.shape == () and float(out) == float(expected), method
    b = GraphBuilder()
    with pytest.raises(IRError) as info:
        b.softmax(b.input([]), -2)
    assert str(info.value) == "softmax: axis -2 out of range for shape [] (accepted: -1..0)"


def test_numpy_integer_node_references_are_node_ids() -> None:
    b = GraphBuilder()
    x = b.input([2])
    y = b.add(np.int64(x), np.int32(x))
    z = b.relu(np.uint8(y))
    graph = b.build().graph
    assert graph.nodes[y].parents == (0, 0) and graph.nodes[z].parents == (1,)
    assert all(type(p) is int for n in graph.nodes for p in n.parents)
    with pytest.raises(IRError) as info:
        b.relu(np.int64(7))
    assert str(info.value) == "builder: unknown node reference np.int64(7) (nodes 0..2)"
    with pytest.raises(IRError) as info:
        b.relu(np.bool_(True))  # type: ignore[arg-type]
    assert str(info.value) == "builder: unknown node reference np.True_ (nodes 0..2)"


def test_empty_builder_has_no_nodes_yet() -> None:
    with pytest.raises(IRError) as info:
        GraphBuilder().relu(5)
    assert str(info.value) == "builder: unknown node reference 5 (no nodes yet)"
    with pytest.raises(IRError) as info:
        GraphBuilder().relu(0)
    assert str(info.value) == "builder: unknown node reference 0 (no nodes yet)"


_NOT_REAL = "(accepted: a bool, int or float array, or numbers numpy turns into one)"


@pytest.mark.parametrize(
    ("value", "dtype"),
    [(["a"], "<U1"), (object(), "object"), ([1 + 2j], "complex128"), (b"x", "|S1")],
)
def test_const_and_param_refuse_data_that_is_not_real(value: object, dtype: str) -> None:
    b = GraphBuilder()
    b.input([2])
    with pytest.raises(IRError) as info:
        b.const(value)  # type: ignore[arg-type]
    assert (
        str(info.value)
        == f"const: expected bool, integer or floating-point data, got dtype {dtype} {_NOT_REAL}"
    )
    with pytest.raises(IRError) as info:
        b.param(value)  # type: ignore[arg-type]
    assert (
        str(info.value)
        == f"param: expected bool, integer or floating-point data, got dtype {dtype} {_NOT_REAL}"
    )
    assert len(b.build().graph) == 1


def test_const_of_bool_int_and_float_data_evaluates_to_it() -> None:
    b = GraphBuilder()
    values = [np.array([True, False]), np.array([[1, 2]], dtype=np.int64), [0.5, 1.5], 3]
    ids = [b.const(v) for v in values]
    built = b.build()
    out = evaluate(built.graph, {}, built.payloads)
    for node, value in zip(ids, values, strict=True):
        expected = np.asarray(value)
        assert out[node].dtype == expected.dtype
        np.testing.assert_array_equal(out[node], expected)


def test_a_linear_bias_of_the_wrong_length_is_refused_when_built():
    # review21 mut BU4; oracle: the builder's documented linear rule (W [out, in] and b [out]) and its message
    from torchlean.ir import IRError
    from torchlean.ir.builder import GraphBuilder

    b = GraphBuilder()
    x = b.input((2, 4))
    with pytest.raises(IRError, match=r"linear: weight \[3, 4\] and bias \[2\] do not fit input \[2, 4\]"):
        b.linear(x, np.ones((3, 4)), np.ones(2))
    assert len(b.build().graph.nodes) == 1


def test_batch_norm_statistics_must_be_vectors():
    # review21 mut BU7; oracle: batch_norm_eval's documented Raises ("mean, var, weight and bias must be
    # vectors of one length")
    from torchlean.ir import IRError
    from torchlean.ir.builder import GraphBuilder
    from torchlean.ir.payloads import BatchNormParams

    b = GraphBuilder()
    x = b.input((2, 3, 5))
    message = "batch_norm_eval: mean, var, weight and bias must be vectors of one length"
    with pytest.raises(IRError, match=message):
        b.batch_norm_eval(x, 1, BatchNormParams(np.zeros((3, 1)), None))
