"""Model builders: ``nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1))``.

Builders return immutable layer descriptions; :func:`build` (or the trainer) instantiates them
with seeded parameters. Per-sample shapes only; forward programs receive batched values.
"""

from __future__ import annotations

from collections.abc import Sequence

from torchlean.nn.attention import MultiHeadAttention, TransformerBlock
from torchlean.nn.layers import (
    Activation,
    AvgPool2d,
    Conv2d,
    Dropout,
    Flatten,
    Layer,
    LayerNorm,
    Linear,
    MaxPool2d,
    MeanPool,
    ParamSpec,
    PositionalEmbedding,
    Reshape,
    Residual,
    Sequential,
    ShapeError,
    pair,
)
from torchlean.nn.model import Model, StateError, build

__all__ = [
    "Layer",
    "Model",
    "ParamSpec",
    "ShapeError",
    "StateError",
    "avg_pool2d",
    "build",
    "conv2d",
    "dropout",
    "flatten",
    "gelu",
    "layer_norm",
    "linear",
    "max_pool2d",
    "mean_pool",
    "multi_head_attention",
    "positional_embedding",
    "relu",
    "reshape",
    "residual",
    "sequential",
    "sigmoid",
    "tanh",
    "transformer_block",
]


def linear(in_features: int, out_features: int, *, bias: bool = True) -> Linear:
    """Fully connected layer, weight ``[out, in]``, bias ``[out]`` (``torch.nn.Linear``)."""
    if in_features < 1 or out_features < 1:
        raise ShapeError(f"linear sizes must be positive, got ({in_features}, {out_features})")
    return Linear(in_features, out_features, bias)


def relu() -> Activation:
    """``max(x, 0)`` elementwise (``torch.nn.ReLU``); shape preserving."""
    return Activation("relu")


def gelu() -> Activation:
    """GELU, exact erf form (``torch.nn.GELU()`` default)."""
    return Activation("gelu")


def tanh() -> Activation:
    """Hyperbolic tangent elementwise (``torch.nn.Tanh``)."""
    return Activation("tanh")


def sigmoid() -> Activation:
    """Logistic sigmoid elementwise (``torch.nn.Sigmoid``)."""
    return Activation("sigmoid")


def dropout(p: float) -> Dropout:
    """Inverted dropout with drop probability ``p`` (``torch.nn.Dropout``): identity in evaluation,
    ``x * mask / (1 - p)`` with a seeded mask in eager training; not lowered to typed graphs.

    Raises:
        ShapeError: unless ``0 <= p < 1``.
    """
    return Dropout(float(p))


def layer_norm(normalized_shape: int | Sequence[int], *, eps: float = 1e-5) -> LayerNorm:
    """Layer normalisation over the trailing ``normalized_shape`` axes with a learned weight (ones)
    and bias (zeros), ``torch.nn.LayerNorm(normalized_shape, eps)``.

    Raises:
        ShapeError: an empty or non-positive ``normalized_shape``.
    """
    shape = (normalized_shape,) if isinstance(normalized_shape, int) else tuple(normalized_shape)
    if not shape or any(d < 1 for d in shape):
        raise ShapeError(f"layer_norm shape must be non-empty and positive, got {list(shape)}")
    return LayerNorm(shape, eps)


def conv2d(
    in_channels: int,
    out_channels: int,
    kernel_size: int | Sequence[int],
    *,
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    bias: bool = True,
) -> Conv2d:
    """2-d convolution over ``(C, H, W)`` samples (``torch.nn.Conv2d``)."""
    if in_channels < 1 or out_channels < 1 or groups < 1:
        raise ShapeError(
            "conv2d channels and groups must be positive, got "
            f"({in_channels}, {out_channels}, groups={groups})"
        )
    return Conv2d(
        in_channels,
        out_channels,
        pair(kernel_size, "kernel_size", minimum=1),
        pair(stride, "stride", minimum=1),
        pair(padding, "padding", minimum=0),
        pair(dilation, "dilation", minimum=1),
        groups,
        bias,
    )


def max_pool2d(
    kernel_size: int | Sequence[int],
    *,
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> MaxPool2d:
    """2-d max pooling; ``stride`` defaults to ``kernel_size`` (``torch.nn.MaxPool2d``)."""
    k = pair(kernel_size, "kernel_size", minimum=1)
    return MaxPool2d(k, pair(stride, "stride", minimum=1) if stride is not None else k,
                     pair(padding, "padding", minimum=0))


def avg_pool2d(
    kernel_size: int | Sequence[int],
    *,
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> AvgPool2d:
    """2-d average pooling, zero padding counted in the divisor (``torch.nn.AvgPool2d``)."""
    k = pair(kernel_size, "kernel_size", minimum=1)
    return AvgPool2d(k, pair(stride, "stride", minimum=1) if stride is not None else k,
                     pair(padding, "padding", minimum=0))


def flatten() -> Flatten:
    """Flatten each sample to a vector (``torch.nn.Flatten``): ``(C, H, W)`` -> ``(C*H*W,)``."""
    return Flatten()


def reshape(*shape: int) -> Reshape:
    """Reshape each sample to ``shape`` (same element count; the batch axis is kept).

    Raises:
        ShapeError: a non-positive dimension.
    """
    if any(d < 1 for d in shape):
        raise ShapeError(f"reshape dimensions must be positive, got {list(shape)}")
    return Reshape(tuple(shape))


def mean_pool(axis: int = 0) -> MeanPool:
    """Mean over per-sample ``axis`` (0 = the token axis of ``(tokens, features)`` samples)."""
    return MeanPool(axis)


def positional_embedding(tokens: int, d_model: int) -> PositionalEmbedding:
    """A learned position table added to ``(tokens, d_model)`` samples."""
    if tokens < 1 or d_model < 1:
        raise ShapeError(f"positional_embedding sizes must be positive, got ({tokens}, {d_model})")
    return PositionalEmbedding(tokens, d_model)


def sequential(*layers: Layer) -> Sequential:
    """``layers`` applied in order (``torch.nn.Sequential``); parameters are named
    ``<position>.<name>``, e.g. ``0.weight``."""
    return Sequential(tuple(layers))


def residual(body: Layer) -> Residual:
    """``x + body(x)`` (the body must preserve the shape)."""
    return Residual(body)


def multi_head_attention(d_model: int, heads: int, *, causal: bool = False) -> MultiHeadAttention:
    """Self-attention over ``(tokens, d_model)`` samples; see :mod:`torchlean.nn.attention`."""
    return MultiHeadAttention(d_model, heads, causal)


def transformer_block(
    d_model: int, heads: int, *, mlp_hidden: int | None = None, causal: bool = False
) -> TransformerBlock:
    """Pre-norm transformer block (attention + GELU MLP, layer norms, residuals)."""
    return TransformerBlock(d_model, heads, mlp_hidden if mlp_hidden is not None else 4 * d_model, causal)
