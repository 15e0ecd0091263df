"""review144 F1: a layer of your own that passes a computed weight (and bias) to ``ops.linear``
ran eager's one ``linear`` kernel eagerly but the original's permute/matmul/broadcast/add lowering
in a typed graph: other capsules in the audit, and under ``fast_cpu`` on rank-3 inputs other
bits. The typed graph now lowers it to a ``linear_of`` node (weight and bias as parents), so both
modes run the same kernels and give the same bits; the IR node's shape rule and reference
evaluation are checked against torch."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest
import torch

from torchlean import nn, optim
from torchlean.ir import IRError
from torchlean.ir.builder import GraphBuilder
from torchlean.ir.evaluate import evaluate
from torchlean.nn.layers import Layer, ParamSpec
from torchlean.trainer import RunConfig, Trainer

WIDTH = 12


@dataclass(frozen=True)
class ScaledLinear(Layer):
    """``linear(x, 0.5 * W, 2 * b)``: a computed weight and bias."""

    kind = "scaled_linear"
    bias: bool = True

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (*shape[:-1], WIDTH)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        weight = ParamSpec("weight", (WIDTH, WIDTH), "uniform", 0.3)
        return (weight, ParamSpec("bias", (WIDTH,), "uniform", 0.3)) if self.bias else (weight,)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        bias = ops.scale(params[1], 2.0) if self.bias else None
        return ops.linear(x, ops.scale(params[0], 0.5), bias)


@pytest.mark.parametrize("profile", ["fast_cpu", "checked_cpu"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_a_computed_linear_weight_trains_with_eagers_kernels_and_bits(
    profile: str, bias: bool, dtype: str
) -> None:
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((20, 5, WIDTH)), rng.standard_normal((20, 3))
    trainers = [
        Trainer(nn.sequential(ScaledLinear(bias), nn.tanh(), nn.flatten(), nn.linear(5 * WIDTH, 3)),
                input_shape=(5, WIDTH), seed=2,
                config=RunConfig(optim.adam(0.01), execution=mode, profile=profile, dtype=dtype))
        for mode in ("eager", "typed-graph")
    ]
    losses = [t.fit(x, y, epochs=2, batch_size=8) for t in trainers]  # a partial last batch too
    eager, graph = trainers
    assert losses[0] == losses[1]
    for a, b in zip(eager.model.parameters, graph.model.parameters, strict=True):
        np.testing.assert_array_equal(a, b)
    names = [k.capsule.name for k in graph.selected]
    assert names == [k.capsule.name for k in eager.selected]
    assert not any(op in name for name in names for op in ("matmul", "permute", "broadcast", ".add"))


@pytest.mark.parametrize("bias", [True, False])
def test_the_linear_of_node_evaluates_as_torch(bias: bool) -> None:
    rng = np.random.default_rng(1)
    x, w, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((5, 4)), rng.standard_normal(5)
    builder = GraphBuilder()
    xi, wi = builder.input((2, 3, 4)), builder.input((5, 4))
    bi = builder.input((5,)) if bias else None
    out = builder.linear_of(xi, wi, bi)
    built = builder.build()
    assert built.graph.nodes[out].out_shape == (2, 3, 5)
    assert built.graph.nodes[out].kind.tag == "linear_of"
    feeds = [x, w, b] if bias else [x, w]
    got = evaluate(built.graph, dict(enumerate(feeds)), built.payloads, dtype=np.float64)[out]
    expected = torch.nn.functional.linear(*(torch.tensor(a) for a in feeds)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-14)


def test_linear_of_shapes_that_do_not_fit_are_refused() -> None:
    builder = GraphBuilder()
    x = builder.input((3, 4))
    with pytest.raises(IRError, match=r"^linear_of: weight \[5, 3\] and bias none do not fit input \[3, 4\]"):
        builder.linear_of(x, builder.input((5, 3)))
    with pytest.raises(IRError, match=r"^linear_of: weight \[5, 4\] and bias \[4\] do not fit input"):
        builder.linear_of(x, builder.input((5, 4)), builder.input((4,)))
