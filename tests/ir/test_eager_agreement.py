"""The IR evaluator agrees bit for bit with eager execution on the reference provider (float32)."""

from __future__ import annotations

import numpy as np

import torchlean as tl
from torchlean.ir import ops
from torchlean.ir.builder import GraphBuilder
from torchlean.ir.evaluate import evaluate

from .test_builder import build_mlp

RNG = np.random.default_rng(7)


def _f32(*shape: int) -> np.ndarray:
    return RNG.standard_normal(shape).astype(np.float32)


def test_mlp_graph_equals_eager_bitwise() -> None:
    params = [_f32(8, 4), _f32(8), _f32(1, 8), _f32(1)]
    x = _f32(4)
    built = build_mlp(params)
    graph_out = evaluate(built.graph, {0: x}, built.payloads)[17]
    with tl.session(profile="checked_cpu"):
        w1, b1, w2, b2 = (tl.tensor(p) for p in params)
        h = tl.reshape(tl.tensor(x), (1, 4))
        h = tl.add(tl.matmul(h, tl.transpose(w1, 0, 1)), tl.broadcast_to(b1, (1, 8)))
        h = tl.relu(tl.reshape(h, (8,)))
        h = tl.reshape(h, (1, 8))
        h = tl.add(tl.matmul(h, tl.transpose(w2, 0, 1)), tl.broadcast_to(b2, (1, 1)))
        eager = tl.reshape(h, (1,)).numpy()
    assert graph_out.dtype == eager.dtype == np.float32
    assert graph_out.tobytes() == eager.tobytes()


def test_cnn_graph_equals_eager_bitwise() -> None:
    x, w, bias = _f32(3, 1, 8, 8), _f32(4, 1, 3, 3), _f32(4)
    fc_w, fc_b = _f32(10, 100), _f32(10)
    onehot = np.eye(10, dtype=np.float32)[[1, 4, 7]]
    b = GraphBuilder()
    inp = b.input(x.shape)
    h = b.conv(inp, ops.ConvConfig(1, 4, (3, 3), padding=(1, 1), channel_axis=1), w, bias)
    h = b.max_pool(b.relu(h), ops.WindowConfig.make(2))
    h = b.avg_pool(h, ops.WindowConfig.make(2, 1, 1))
    logits = b.linear(b.reshape(h, [3, 100]), fc_w, fc_b)
    picked = b.reduce_sum(b.mul_elem(b.input(onehot.shape), b.log_softmax(logits, 1)), 1)
    loss = b.scale(b.reduce_mean(picked, 0), -1.0)
    built = b.build()
    graph_loss = evaluate(built.graph, {0: x, built.graph.input_ids()[1]: onehot}, built.payloads)[loss]
    with tl.session(profile="checked_cpu"):
        t = tl.conv(tl.tensor(x), tl.tensor(w), tl.tensor(bias), padding=1)
        t = tl.max_pool(tl.relu(t), 2)
        t = tl.avg_pool(t, 2, 1, 1)
        out = tl.linear(tl.reshape(t, (3, 100)), tl.tensor(fc_w), tl.tensor(fc_b))
        eager = tl.cross_entropy(out, onehot, axis=1).numpy()
    assert graph_loss.shape == eager.shape == ()
    assert graph_loss.tobytes() == eager.tobytes()
