"""Shape inference and checking (anchor-runtime.md §4.3): messages, and shapes against torch."""

from __future__ import annotations

import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean.ir import ops
from torchlean.ir.errors import IRError
from torchlean.ir.graph import Graph, Node
from torchlean.ir.infer import (
    broadcast_shapes,
    check_shapes,
    infer_node_shape,
    infer_shapes,
    matmul_out_shape,
)


def _infer(kind: ops.OpKind, *parents: tuple[int, ...], declared: tuple[int, ...] = ()) -> tuple[int, ...]:
    return infer_node_shape(Node(len(parents), tuple(range(len(parents))), kind, declared), parents)


def test_declared_shape_mismatch_message() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (0,), ops.Reshape((4,), (1, 4)), (4, 1))))
    with pytest.raises(IRError) as info:
        check_shapes(graph)
    assert str(info.value) == (
        "IR graph: node 1: outShape mismatch: inferred=[1, 4], declared=[4, 1] "
        "(Node(id=1, kind=reshape [4] [1, 4], parents=[0], outShape=[4, 1]))"
    )


def test_check_shapes_checks_well_formedness_first() -> None:
    graph = Graph((Node(0, (), ops.Input(), (4,)), Node(1, (0,), ops.Add(), (4,))))
    with pytest.raises(IRError, match=r"^IR graph: node 1: bad parent count for add"):
        check_shapes(graph)


def test_negative_declared_extent_is_refused() -> None:
    graph = Graph((Node(0, (), ops.Input(), (-4,)),))
    with pytest.raises(IRError) as info:  # ill-formed: the original's extents are naturals (review117 F6)
        graph.check_well_formed()
    assert str(info.value) == (
        "IR graph: node 0: outShape extent -4 is negative (accepted: integers >= 0) "
        "(Node(id=0, kind=input, parents=[], outShape=[-4]))"
    )
    with pytest.raises(IRError) as info:
        check_shapes(graph)
    assert str(info.value) == (
        "IR graph: node 0: outShape extent -4 is negative (accepted: integers >= 0) "
        "(Node(id=0, kind=input, parents=[], outShape=[-4]))"
    )
    later = Graph(
        (
            Node(0, (), ops.Input(), (2, 3)),
            Node(1, (), ops.RandUniform(5), (3, -1)),
            Node(2, (0, 1), ops.Matmul(), (2, -1)),
        )
    )
    with pytest.raises(IRError, match=r"^IR graph: node 1: outShape extent -1 is negative \("):
        infer_shapes(later)


def test_non_integer_declared_extent_is_refused() -> None:
    graph = Graph((Node(0, (), ops.Input(), (2.5,)),))  # type: ignore[arg-type]
    with pytest.raises(IRError) as info:
        check_shapes(graph)
    assert str(info.value) == (
        "IR graph: node 0: outShape extent 2.5 is not an integer (accepted: integers >= 0) "
        "(outShape=(2.5,), kind=input)"
    )
    for flag in (True, False):
        with pytest.raises(IRError, match=rf"^IR graph: node 0: outShape extent {flag} is not an integer "):
            check_shapes(Graph((Node(0, (), ops.Input(), (flag,)),)))
    # numpy integers and zero extents are extents
    assert infer_shapes(Graph((Node(0, (), ops.Input(), (np.int64(3), 0)),))) == [(3, 0)]


def test_inference_uses_inferred_parent_shapes() -> None:
    graph = Graph(
        (
            Node(0, (), ops.Input(), (2, 3)),
            Node(1, (0,), ops.Transpose(0, 1), (3, 2)),
            Node(2, (1,), ops.Relu(), (3, 2)),
        )
    )
    assert infer_shapes(graph) == [(2, 3), (3, 2), (3, 2)]


@pytest.mark.parametrize(
    ("kind", "parents", "message"),
    [
        (ops.Add(), [(2,), (3,)], "add: shape mismatch: [2] vs [3]"),
        (ops.Sub(), [(2, 1), (2,)], "sub: shape mismatch: [2, 1] vs [2]"),
        (ops.MulElem(), [(2,), (3,)], "mul_elem: shape mismatch: [2] vs [3]"),
        (ops.MaxElem(), [(2,), ()], "max_elem: shape mismatch: [2] vs []"),
        (ops.MinElem(), [(1,), (3,)], "min_elem: shape mismatch: [1] vs [3]"),
        (ops.Reshape((4,), (3, 2)), [(4,)], "reshape: numel mismatch: 4 vs 6"),
        (ops.Reshape((4,), (2, 2)), [(2, 2)], "reshape: parent shape mismatch: expected [4], got [2, 2]"),
        (ops.Flatten((4,)), [(2, 2)], "flatten: parent shape mismatch: expected [4], got [2, 2]"),
        (ops.BroadcastTo((8,), (1, 8)), [(4,)], "broadcast_to: parent shape mismatch: expected [8], got [4]"),
        (ops.BroadcastTo((3,), (2, 4)), [(3,)], "broadcast_to: invalid broadcast from [3] to [2, 4]"),
        (ops.BroadcastTo((2, 3), (3,)), [(2, 3)], "broadcast_to: invalid broadcast from [2, 3] to [3]"),
        (ops.Permute((0, 0)), [(2, 3)], "permute: invalid permutation [0, 0] for shape [2, 3]"),
        (ops.Permute((1, 0, 2)), [(2, 3)], "permute: invalid permutation [1, 0, 2] for shape [2, 3]"),
        (ops.Transpose(0, 2), [(2, 3)], "transpose: axes 0 and 2 out of range for shape [2, 3]"),
        (ops.ReduceSum(2), [(2, 3)], "reduce_sum: axis 2 out of range for shape [2, 3]"),
        (ops.ReduceMean(1), [()], "reduce_mean: axis 1 out of range for shape []"),
        (ops.Softmax(1), [(3,)], "softmax: axis 1 out of range for shape [3]"),
        (ops.LayerNorm(2), [(2, 3)], "layernorm: axis 2 out of range for shape [2, 3]"),
        (ops.Matmul(), [(1, 4), (8, 4)], "matmul: inner dimension mismatch: [1, 4] vs [8, 4]"),
        (ops.Matmul(), [(), (4,)], "matmul: expected operands of rank >= 1, got [] and [4]"),
        (
            ops.Matmul(),
            [(2, 1, 3), (3, 3, 4)],
            "matmul: batch dimensions do not broadcast: [2, 1, 3] vs [3, 3, 4]",
        ),
        (ops.MseLoss(), [(2,), (3,)], "mse_loss: yhat/target shape mismatch: [2] vs [3]"),
        (ops.SafeLog(), [(2,), (1,)], "safe_log: expected scalar epsilon parent, got [1]"),
        (ops.Concat(0), [(2, 3), (2, 4)], "concat: shapes differ outside axis 0: [2, 3] vs [2, 4]"),
        (ops.Concat(2), [(2, 3), (2, 3)], "concat: axis 2 out of range for shape [2, 3]"),
        (ops.BatchNormEval(0, 3), [(4, 2)], "batch_norm_eval: expected 3 channels at axis 0, got [4, 2]"),
        (
            ops.MaxPool(ops.WindowConfig.make(3)),
            [(1, 2, 2)],
            "max_pool: window [3, 3] does not fit input [1, 2, 2]",
        ),
        (ops.AvgPool(ops.WindowConfig.make(2)), [(4, 4)], r"avg_pool: expected an input of rank >= 3"),
        (
            ops.Conv(ops.ConvConfig(3, 4, (3, 3), channel_axis=1)),
            [(1, 2, 5, 5)],
            "conv: input [1, 2, 5, 5] has 2 channels at axis 1, expected 3",
        ),
        (
            ops.Conv(ops.ConvConfig(3, 4, (3, 3), channel_axis=1)),
            [(3, 5, 5)],
            "conv: input [3, 5, 5] does not have channel axis 1 followed by 2 spatial axes",
        ),
        (
            ops.HardMaskedSoftmax(ops.HardMask((3,), (True, True, False))),
            [(2, 4)],
            "hard_masked_softmax: mask shape [3] does not broadcast to [2, 4]",
        ),
        (
            ops.ScaledDotProductAttention(),
            [(2, 3, 4), (2, 5, 4), (2, 6, 7)],
            "scaled_dot_product_attention: q [.., nQ, d], k [.., nK, d], v [.., nK, dv] mismatch",
        ),
        (
            ops.ScaledDotProductAttention(),
            [(2, 3, 4), (1, 5, 4), (1, 5, 7)],
            "scaled_dot_product_attention: leading dimensions differ",
        ),
    ],
)
def test_node_local_messages(kind: ops.OpKind, parents: list[tuple[int, ...]], message: str) -> None:
    with pytest.raises(IRError) as info:
        _infer(kind, *parents)
    assert str(info.value).startswith(message)


def test_parameter_only_shapes() -> None:
    assert _infer(ops.Input(), declared=(3, 2)) == (3, 2)
    assert _infer(ops.Const((8, 4)), declared=(1,)) == (8, 4)
    assert _infer(ops.RandUniform(1), declared=(5,)) == (5,)
    assert _infer(ops.BernoulliMask(1), (), declared=(5,)) == (5,)
    with pytest.raises(IRError, match=r"^bernoulli_mask: expected scalar keepProb parent, got \[1\]$"):
        _infer(ops.BernoulliMask(1), (1,), declared=(5,))


def test_linear_contract() -> None:
    assert _infer(ops.Linear(), (2, 3, 4), declared=(2, 3, 8)) == (2, 3, 8)
    with pytest.raises(IRError) as info:
        _infer(ops.Linear(), (2, 4), declared=(3, 8))
    assert str(info.value) == "linear: leading dimensions must be preserved: input=[2, 4], outShape=[3, 8]"
    with pytest.raises(IRError, match=r"^linear: expected rank>=1 input/output"):
        _infer(ops.Linear(), (), declared=(3,))


def test_arity_checked_by_inference() -> None:
    with pytest.raises(IRError, match=r"^bad parent count for matmul: expected 2\.\.2, got 1$"):
        _infer(ops.Matmul(), (2, 2))


def test_shape_rules() -> None:
    assert _infer(ops.Sum(), (2, 3)) == ()
    assert _infer(ops.ReduceSum(1), (2, 3, 4)) == (2, 4)
    assert _infer(ops.ReduceSum(0), ()) == _infer(ops.ReduceMean(0), ()) == ()  # torch.tensor(3.).sum(0)
    assert _infer(ops.Flatten((2, 3)), (2, 3)) == (6,)
    assert _infer(ops.Permute((2, 0, 1)), (2, 3, 4)) == (4, 2, 3)
    assert _infer(ops.Transpose(0, 2), (2, 3, 4)) == (4, 3, 2)
    assert _infer(ops.Concat(1), (2, 3), (2, 1), (2, 4)) == (2, 8)
    assert _infer(ops.MseLoss(), (2, 3), (2, 3)) == ()
    assert _infer(ops.SafeLog(), (2, 3), ()) == (2, 3)
    assert _infer(ops.BroadcastTo((8,), (1, 8)), (8,)) == (1, 8)
    assert _infer(ops.ScaledDotProductAttention(), (2, 3, 4), (2, 5, 4), (2, 5, 7)) == (2, 3, 7)
    mask = ops.HardMask.from_array(np.tril(np.ones((3, 5), dtype=bool)))
    assert _infer(ops.ScaledDotProductAttention(mask=mask), (2, 3, 4), (2, 5, 4), (2, 5, 7)) == (2, 3, 7)


def test_broadcast_shapes_matches_numpy() -> None:
    for a, b in [((3, 1), (4,)), ((1,), ()), ((2, 3), (3,)), ((5, 1, 4), (3, 1))]:
        assert broadcast_shapes(a, b) == np.broadcast_shapes(a, b)
    assert broadcast_shapes((2,), (3,)) is None


dims = st.integers(min_value=1, max_value=4)


@settings(max_examples=200, deadline=None)
@given(
    batch_a=st.lists(dims, max_size=2),
    batch_b=st.lists(dims, max_size=2),
    m=dims,
    k=dims,
    k2=dims,
    n=dims,
    vec_a=st.booleans(),
    vec_b=st.booleans(),
)
def test_matmul_shape_agrees_with_torch(
    batch_a: list[int], batch_b: list[int], m: int, k: int, k2: int, n: int, vec_a: bool, vec_b: bool
) -> None:
    a = (k,) if vec_a else (*batch_a, m, k)
    b = (k2,) if vec_b else (*batch_b, k2, n)
    try:
        expected: tuple[int, ...] | None = tuple(torch.matmul(torch.zeros(a), torch.zeros(b)).shape)
    except RuntimeError:
        expected = None
    if expected is None:
        with pytest.raises(IRError, match=r"^matmul: "):
            matmul_out_shape(a, b)
    else:
        assert matmul_out_shape(a, b) == expected


@settings(max_examples=60, deadline=None)
@given(
    size=st.lists(st.integers(min_value=1, max_value=9), min_size=1, max_size=3),
    kernel=st.integers(min_value=1, max_value=4),
    stride=st.integers(min_value=1, max_value=3),
    padding=st.integers(min_value=0, max_value=2),
    dilation=st.integers(min_value=1, max_value=2),
    groups=st.sampled_from([1, 2]),
)
def test_conv_and_pool_shapes_agree_with_torch(
    size: list[int], kernel: int, stride: int, padding: int, dilation: int, groups: int
) -> None:
    rank = len(size)
    conv_fn = (torch.nn.functional.conv1d, torch.nn.functional.conv2d, torch.nn.functional.conv3d)[rank - 1]
    x = torch.zeros((1, 2, *size))
    w = torch.zeros((4, 2 // groups, *([kernel] * rank)))
    config = ops.ConvConfig(
        2,
        4,
        (kernel,) * rank,
        (stride,) * rank,
        (padding,) * rank,
        (dilation,) * rank,
        groups=groups,
        channel_axis=1,
    )
    try:
        expected: tuple[int, ...] | None = tuple(
            conv_fn(x, w, stride=stride, padding=padding, dilation=dilation, groups=groups).shape
        )
    except RuntimeError:
        expected = None
    if expected is None:
        with pytest.raises(IRError, match=r"^conv: kernel"):
            _infer(ops.Conv(config), (1, 2, *size))
    else:
        assert _infer(ops.Conv(config), (1, 2, *size)) == expected
    # torch's avg_pool3d compares the unpadded input with the kernel (a torch quirk); 1-D/2-D only.
    if padding <= kernel // 2 and rank <= 2:
        pool_fn = (torch.nn.functional.avg_pool1d, torch.nn.functional.avg_pool2d)
        window = ops.WindowConfig((kernel,) * rank, (stride,) * rank, (padding,) * rank)
        try:
            pooled: tuple[int, ...] | None = tuple(pool_fn[rank - 1](x, kernel, stride, padding).shape)
        except RuntimeError:
            pooled = None
        if pooled is None:
            with pytest.raises(IRError, match=r"^avg_pool: window"):
                _infer(ops.AvgPool(window), (1, 2, *size))
        else:
            assert _infer(ops.AvgPool(window), (1, 2, *size)) == pooled


@pytest.mark.parametrize("check", [check_shapes, infer_shapes])
def test_a_graph_that_is_not_a_graph_is_refused(check: object) -> None:
    nodes = [Node(0, (), ops.Input(), (3,))]
    name = check.__name__  # type: ignore[attr-defined]
    with pytest.raises(IRError) as info:
        check(nodes)  # type: ignore[operator]
    assert str(info.value) == (
        f"{name}: graph must be a torchlean.ir Graph (from GraphBuilder.build().graph or Graph(nodes)), "
        "got [Node(id=0, parents=(), kind=Input(), out_shape=(3,))] (list)"
    )


def test_softmax_of_a_scalar_over_axis_0_as_torch() -> None:
    # torch.softmax(torch.tensor(3.), 0) has shape []; axis 1 is out of range there too.
    assert tuple(torch.softmax(torch.tensor(3.0), 0).shape) == ()
    assert infer_node_shape(Node(1, (0,), ops.Softmax(0), ()), [()]) == ()
    assert infer_node_shape(Node(1, (0,), ops.LogSoftmax(0), ()), [()]) == ()
    with pytest.raises(IRError, match=r"^softmax: axis 1 out of range for shape \[\]$"):
        infer_node_shape(Node(1, (0,), ops.Softmax(1), ()), [()])
    with pytest.raises(IRError, match=r"^layernorm: axis 0 out of range for shape \[\]$"):
        infer_node_shape(Node(1, (0,), ops.LayerNorm(0), ()), [()])
