"""Multi-head attention and a pre-norm transformer block built from :class:`Ops`.

The attention core is one ``scaled_dot_product_attention`` operation (so the planner selects a
capsule for it: ``reference.attention`` on checked_cpu, ``aten.scaled_dot_product_attention`` on
fast_cpu, ``libtorch.sdpa_forward`` under libtorch_forward_cpu); projections, head split and merge
are ordinary matmul/reshape/permute operations. Masks are boolean (True = may attend);
``causal=True`` uses the upper-left causal mask of the seed chapter (query i attends to keys j <=
i). Projections have no biases, as in the original's multi-head specification (anchor-runtime.md
§5.1).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from torchlean.nn.layers import (
    Layer,
    LayerNorm,
    Linear,
    ParamSpec,
    Shape,
    ShapeError,
    checked_bool,
    checked_int,
)
from torchlean.nn.ops import Ops, T

__all__ = ["MultiHeadAttention", "TransformerBlock"]


def _causal(n: int) -> np.ndarray:
    return np.tril(np.ones((n, n), dtype=np.bool_))


def _checked_heads(kind: str, d_model: object, heads: object) -> tuple[int, int]:
    """``(d_model, heads)`` as ints >= 1 with ``heads`` dividing ``d_model``."""
    width = checked_int(d_model, f"{kind}: d_model", 1)
    count = checked_int(heads, f"{kind}: heads", 1)
    if width % count:
        raise ShapeError(f"{kind}: heads={count} must divide d_model={width}")
    return width, count


def _token_samples(kind: str, d_model: int, input_shape: Shape) -> Shape:
    """``input_shape`` when it is ``(tokens, d_model)`` (the layer's output shape too), else a
    :class:`ShapeError` naming the layer the user wrote (``kind``)."""
    if len(input_shape) != 2 or input_shape[1] != d_model:
        raise ShapeError(f"{kind} expects (tokens, {d_model}) samples, got {list(input_shape)}")
    return input_shape


@dataclass(frozen=True, slots=True)
class MultiHeadAttention(Layer):
    """Self-attention over ``(tokens, d_model)`` samples with ``heads`` heads of ``d_model/heads``.

    Raises:
        ShapeError: ``d_model`` or ``heads`` not an int >= 1, ``heads`` not dividing ``d_model``
            (refused here, as ``torch.nn.MultiheadAttention`` refuses at construction:
            ``multi_head_attention: heads=3 must divide d_model=8``), or ``causal`` neither a
            ``bool`` nor a ``numpy.bool_`` (stored as ``bool``).
    """

    d_model: int
    heads: int
    causal: bool = False
    kind = "multi_head_attention"

    def __post_init__(self) -> None:
        width, count = _checked_heads(self.kind, self.d_model, self.heads)
        object.__setattr__(self, "d_model", width)
        object.__setattr__(self, "heads", count)
        object.__setattr__(self, "causal", checked_bool(self.causal, "multi_head_attention: causal"))

    def output_shape(self, input_shape: Shape) -> Shape:
        return _token_samples(self.kind, self.d_model, input_shape)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        bound = 1.0 / math.sqrt(self.d_model)
        shape = (self.d_model, self.d_model)
        return tuple(ParamSpec(name, shape, "uniform", bound) for name in ("wq", "wk", "wv", "wo"))

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        batch, tokens, _ = ops.shape(x)
        head_dim = self.d_model // self.heads

        def heads_first(w: T) -> T:
            h = ops.linear(x, w, None)
            h = ops.reshape(h, (batch, tokens, self.heads, head_dim))
            return ops.permute(h, (0, 2, 1, 3))

        q, k, v = (heads_first(w) for w in params[:3])
        mask = _causal(tokens) if self.causal else None
        out = ops.attention(q, k, v, mask)
        out = ops.reshape(ops.permute(out, (0, 2, 1, 3)), (batch, tokens, self.d_model))
        return ops.linear(out, params[3], None)

    def describe(self) -> str:
        return f"multi_head_attention({self.d_model}, heads={self.heads}, causal={self.causal})"


@dataclass(frozen=True, slots=True)
class TransformerBlock(Layer):
    """Pre-norm block: ``x + attn(ln1(x))`` then ``h + mlp(ln2(h))`` with a GELU MLP.

    Raises:
        ShapeError: ``d_model``, ``heads`` or ``mlp_hidden`` not an int >= 1, ``heads`` not
            dividing ``d_model``, or ``causal`` neither a ``bool`` nor a ``numpy.bool_`` (stored as
            ``bool``).
    """

    d_model: int
    heads: int
    mlp_hidden: int
    causal: bool = False
    kind = "transformer_block"

    def __post_init__(self) -> None:
        width, count = _checked_heads(self.kind, self.d_model, self.heads)
        object.__setattr__(self, "d_model", width)
        object.__setattr__(self, "heads", count)
        object.__setattr__(self, "mlp_hidden", checked_int(self.mlp_hidden, f"{self.kind}: mlp_hidden", 1))
        object.__setattr__(self, "causal", checked_bool(self.causal, "transformer_block: causal"))

    def _parts(self) -> tuple[LayerNorm, MultiHeadAttention, LayerNorm, Linear, Linear]:
        return (
            LayerNorm((self.d_model,)),
            MultiHeadAttention(self.d_model, self.heads, self.causal),
            LayerNorm((self.d_model,)),
            Linear(self.d_model, self.mlp_hidden),
            Linear(self.mlp_hidden, self.d_model),
        )

    def output_shape(self, input_shape: Shape) -> Shape:
        return _token_samples(self.kind, self.d_model, input_shape)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        specs: list[ParamSpec] = []
        for name, part in zip(("ln1", "attn", "ln2", "fc1", "fc2"), self._parts(), strict=True):
            specs.extend(s.prefixed(name) for s in part.param_specs())
        return tuple(specs)

    def forward(self, ops: Ops[T], params: Sequence[T], x: T, *, training: bool) -> T:
        ln1, attn, ln2, fc1, fc2 = self._parts()
        h = ops.add(x, attn.forward(ops, params[2:6], ln1.forward(ops, params[0:2], x, training=training),
                                    training=training))
        m = ln2.forward(ops, params[6:8], h, training=training)
        m = fc2.forward(ops, params[10:12], ops.gelu(fc1.forward(ops, params[8:10], m, training=training)),
                        training=training)
        return ops.add(h, m)

    def describe(self) -> str:
        """``transformer_block(32, heads=4, mlp=64)``, with ``, causal=True`` for a causal block
        (review73 F10)."""
        causal = ", causal=True" if self.causal else ""
        return f"transformer_block({self.d_model}, heads={self.heads}, mlp={self.mlp_hidden}{causal})"
