"""Model builders: ``nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1))``.

Builders return immutable layer descriptions; :func:`build` (or the trainer) instantiates them
with seeded parameters. Per-sample shapes only; forward programs receive batched values.

Arguments are checked when the description is built, not when it is first used: each layer
record's ``__post_init__`` checks and normalises its fields (the builders here only construct the
record and supply defaults). Sizes must be ints (Python or numpy integers; bools are refused)
>= 1, flags must be bools (``bool`` or ``numpy.bool_``, stored as ``bool``; ints are refused),
and every refusal is a :class:`ShapeError` naming the builder, the argument and the offending
value, e.g.
``linear: in_features must be an int >= 1, got 2.5``.

Shapes below are per sample (the batch axis is added in front when the model runs). Whether a
layer fits the shape it receives is checked by :meth:`Layer.output_shape`, i.e. when the model
is built (:func:`build`, or the trainer): a misfit is a :class:`ShapeError` naming the layer and
the shape (``linear(7, 1) expects inputs whose last axis is 7, got shape [8]``). Parameters are
created in the dtype given to :func:`build` (float32 or float64).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING as _TYPE_CHECKING
from typing import TypeVar, cast, overload

from torchlean._checks import is_int, plain_float
from torchlean.nn.attention import MultiHeadAttention, TransformerBlock
from torchlean.nn.layers import (
    Activation,
    AvgPool1d,
    AvgPool2d,
    BatchNorm,
    Conv1d,
    Conv2d,
    Dropout,
    Embedding,
    Flatten,
    Identity,
    Layer,
    LayerNorm,
    LeakyReLU,
    Linear,
    MaxPool1d,
    MaxPool2d,
    MeanPool,
    ParamSpec,
    PositionalEmbedding,
    Reshape,
    Residual,
    Sequential,
    Shape,
    ShapeError,
)
from torchlean.nn.model import ArchitectureError, Model, ModelInputError, StateError, build
from torchlean.tensor import RealLike


def _axes(value: int | Sequence[int]) -> tuple[int, ...]:
    """A window argument as the records take it (they check and normalise it when built)."""
    return cast(tuple[int, ...], value)


PoolT = TypeVar("PoolT", MaxPool1d, AvgPool1d, MaxPool2d, AvgPool2d)


def _pool(
    record: type[PoolT], kernel_size: int | Sequence[int], stride: int | Sequence[int] | None,
    padding: int | Sequence[int],
) -> PoolT:
    """A pooling record; ``stride`` defaults to ``kernel_size`` (as torch)."""
    kernel = _axes(kernel_size)
    return record(kernel, kernel if stride is None else _axes(stride), _axes(padding))

__all__ = [
    "ArchitectureError",
    "Layer",
    "Model",
    "ModelInputError",
    "ParamSpec",
    "ShapeError",
    "StateError",
    "avg_pool1d",
    "avg_pool2d",
    "batch_norm1d",
    "batch_norm2d",
    "build",
    "conv1d",
    "conv2d",
    "dropout",
    "embedding",
    "flatten",
    "gelu",
    "identity",
    "layer_norm",
    "leaky_relu",
    "linear",
    "max_pool1d",
    "max_pool2d",
    "mean_pool",
    "multi_head_attention",
    "positional_embedding",
    "relu",
    "reshape",
    "residual",
    "sequential",
    "sigmoid",
    "silu",
    "softplus",
    "tanh",
    "transformer_block",
]


def linear(in_features: int, out_features: int, bias: bool = True) -> Linear:
    """Fully connected layer, weight ``[out, in]``, bias ``[out]`` (``torch.nn.Linear``, and its
    ``U(-1/sqrt(in), 1/sqrt(in))`` initialisation); samples ``(..., in)`` -> ``(..., out)``.

    Raises:
        ShapeError: a size that is not an int >= 1, or a non-bool ``bias``; at build, a sample
            whose last axis is not ``in_features``.
    """
    return Linear(in_features, out_features, bias)


def relu() -> Activation:
    """``max(x, 0)`` elementwise (``torch.nn.ReLU``); shape preserving."""
    return Activation("relu")


def gelu() -> Activation:
    """GELU, exact erf form (``torch.nn.GELU()`` default); shape preserving."""
    return Activation("gelu")


def tanh() -> Activation:
    """Hyperbolic tangent elementwise (``torch.nn.Tanh``); shape preserving."""
    return Activation("tanh")


def sigmoid() -> Activation:
    """Logistic sigmoid elementwise (``torch.nn.Sigmoid``); shape preserving."""
    return Activation("sigmoid")


def silu() -> Activation:
    """``x * sigmoid(x)`` elementwise (``torch.nn.SiLU``, also called swish), recorded as the ops
    ``sigmoid`` and ``mul`` (its gradient is the product rule over them); shape preserving."""
    return Activation("silu")


def softplus() -> Activation:
    """``log(1 + exp(x))`` elementwise (``torch.nn.Softplus()`` with its default ``beta=1``; no
    ``threshold``: :func:`torchlean.functional.softplus` says where that differs); shape
    preserving."""
    return Activation("softplus")


def leaky_relu(negative_slope: RealLike = 0.01) -> LeakyReLU:
    """``x`` for ``x > 0``, else ``negative_slope * x`` (``torch.nn.LeakyReLU``); shape
    preserving. The gradient at exactly ``x == 0`` is 0, where torch's is ``negative_slope``
    (:class:`~torchlean.nn.layers.LeakyReLU`).

    Raises:
        ShapeError: ``negative_slope`` not a finite real number.
    """
    return LeakyReLU(plain_float(negative_slope))


def identity() -> Identity:
    """The input unchanged (``torch.nn.Identity``); records no op."""
    return Identity()


def dropout(p: RealLike = 0.5) -> Dropout:
    """Inverted dropout with drop probability ``p`` (``torch.nn.Dropout``, whose default 0.5 this
    keeps): identity in evaluation,
    ``x * mask / (1 - p)`` with a seeded mask in training (zeros for ``p == 1``, as torch); in a
    typed graph the mask is a graph input drawn by the session as eager draws it (the same
    bits). Shape preserving.

    Raises:
        ShapeError: ``p`` is not a real number (bools and strings are refused) or not in ``[0, 1]``.
    """
    return Dropout(plain_float(p))


def layer_norm(normalized_shape: int | Sequence[int], eps: RealLike = 1e-5) -> LayerNorm:
    """Layer normalisation over the trailing ``normalized_shape`` axes with a learned weight (ones)
    and bias (zeros), each of shape ``normalized_shape``, ``torch.nn.LayerNorm(normalized_shape,
    eps)``. Shape preserving.

    Raises:
        ShapeError: ``normalized_shape`` is not an int >= 1 or a non-empty tuple/list of them, or
            ``eps`` is not a finite real number >= 0 (0 as torch); at build, a sample whose
            trailing axes are not ``normalized_shape``.
    """
    return LayerNorm(cast(Shape, normalized_shape), plain_float(eps))


def batch_norm1d(
    num_features: int, eps: RealLike = 1e-5, momentum: RealLike = 0.1, affine: bool = True
) -> BatchNorm:
    """Batch normalisation of ``(C,)`` or ``(C, L)`` samples over the batch (and length) axes,
    ``torch.nn.BatchNorm1d(num_features, eps, momentum, affine)``: a weight (ones) and bias (zeros)
    ``(C,)`` when ``affine``, and the buffers ``running_mean`` (zeros) and ``running_var`` (ones)
    ``(C,)``. Training normalises with the batch mean and biased variance and updates the running
    statistics (``(1 - momentum) * running + momentum * batch``, unbiased batch variance);
    evaluation (``predict``) normalises with them. Eager and typed-graph execution give the same
    bits (the typed graph runs the same running-statistics update after each step). Shape
    preserving.

    Raises:
        ShapeError: ``num_features`` not an int >= 1, ``eps`` not a finite real > 0, ``momentum``
            not a real in ``[0, 1]`` (torch's ``None`` is not offered), ``affine`` not a bool; at
            build, a sample that is not ``(num_features,)`` or ``(num_features, L)``, or an
            ``eps`` the model dtype rounds to 0 or to infinity.
        GuardError: training on one value per channel (a batch of one ``(C,)`` sample), which
            torch refuses too (``Trainer.fit`` and ``step`` refuse it up front with
            ``TrainerError``).
    """
    return BatchNorm(num_features, 1, plain_float(eps), plain_float(momentum), affine)


def batch_norm2d(
    num_features: int, eps: RealLike = 1e-5, momentum: RealLike = 0.1, affine: bool = True
) -> BatchNorm:
    """Batch normalisation of ``(C, H, W)`` samples over the batch and spatial axes,
    ``torch.nn.BatchNorm2d(num_features, eps, momentum, affine)``; parameters, buffers, training
    and evaluation as :func:`batch_norm1d`.

    Raises:
        ShapeError: as :func:`batch_norm1d`; at build, a sample that is not
            ``(num_features, H, W)``.
        GuardError: training on one value per channel (a batch of one ``(C, 1, 1)`` sample; as
            :func:`batch_norm1d`).
    """
    return BatchNorm(num_features, 2, plain_float(eps), plain_float(momentum), affine)


def conv1d(
    in_channels: int,
    out_channels: int,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    bias: bool = True,
) -> Conv1d:
    """1-d convolution over ``(C, L)`` samples (``torch.nn.Conv1d``); ``kernel_size``, ``stride``,
    ``padding`` and ``dilation`` are an int or a one-int tuple/list. Samples ``(C_in, L)`` ->
    ``(C_out, L_out)`` with torch's ``(L + 2*padding - dilation*(kernel-1) - 1) // stride + 1``;
    weight ``(C_out, C_in/groups, k)``, bias ``(C_out,)``, both ``U(-1/sqrt(fan_in),
    1/sqrt(fan_in))`` as torch. Records ``conv`` (one spatial axis).

    Raises:
        ShapeError: as :func:`conv2d`; at build, a sample that is not ``(in_channels, L)`` or
            shorter than the dilated kernel after padding.
    """
    windows = (_axes(kernel_size), _axes(stride), _axes(padding), _axes(dilation))
    return Conv1d(in_channels, out_channels, *windows, groups, bias)


def conv2d(
    in_channels: int,
    out_channels: int,
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] = 1,
    padding: int | Sequence[int] = 0,
    dilation: int | Sequence[int] = 1,
    groups: int = 1,
    bias: bool = True,
) -> Conv2d:
    """2-d convolution over ``(C, H, W)`` samples (``torch.nn.Conv2d``); ``kernel_size``,
    ``stride``, ``padding`` and ``dilation`` are an int or a pair (tuple/list) of ints. Samples
    ``(C_in, H, W)`` -> ``(C_out, H_out, W_out)`` with torch's ``(size + 2*padding -
    dilation*(kernel-1) - 1) // stride + 1``; weight ``(C_out, C_in/groups, kh, kw)``, bias
    ``(C_out,)``, both ``U(-1/sqrt(fan_in), 1/sqrt(fan_in))`` as torch.

    Raises:
        ShapeError: channels or groups not an int >= 1, kernel/stride/dilation not >= 1, padding
            not >= 0, ``groups`` not dividing both channel counts, or a non-bool ``bias`` (checked
            in argument order); at build, a sample that is not ``(in_channels, H, W)`` or smaller
            than the dilated kernel after padding.
    """
    return Conv2d(
        in_channels,
        out_channels,
        _axes(kernel_size),
        _axes(stride),
        _axes(padding),
        _axes(dilation),
        groups,
        bias,
    )


def max_pool1d(
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> MaxPool1d:
    """1-d max pooling of ``(C, L)`` samples; ``stride`` defaults to ``kernel_size``
    (``torch.nn.MaxPool1d``, floor mode): ``(C, L)`` -> ``(C, (L + 2*padding - kernel) // stride +
    1)``; window arguments an int or a one-int tuple/list.

    Raises:
        ShapeError: as :func:`max_pool2d`, for ``(C, L)`` samples.
    """
    return _pool(MaxPool1d, kernel_size, stride, padding)


def avg_pool1d(
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> AvgPool1d:
    """1-d average pooling of ``(C, L)`` samples, zero padding counted in the divisor
    (``torch.nn.AvgPool1d``); shapes and the stride default as :func:`max_pool1d`.

    Raises:
        ShapeError: as :func:`max_pool2d`, for ``(C, L)`` samples.
    """
    return _pool(AvgPool1d, kernel_size, stride, padding)


def max_pool2d(
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> MaxPool2d:
    """2-d max pooling; ``stride`` defaults to ``kernel_size`` (``torch.nn.MaxPool2d``, floor mode).
    Samples ``(C, H, W)`` -> ``(C, H_out, W_out)``, ``(size + 2*padding - kernel) // stride + 1``.

    Raises:
        ShapeError: kernel or stride not an int >= 1 or a pair of them; padding not >= 0; at
            build (not here), a padding above half the kernel, a sample that is not ``(C, H, W)``
            or a window larger than the padded sample.
    """
    return _pool(MaxPool2d, kernel_size, stride, padding)


def avg_pool2d(
    kernel_size: int | Sequence[int],
    stride: int | Sequence[int] | None = None,
    padding: int | Sequence[int] = 0,
) -> AvgPool2d:
    """2-d average pooling, zero padding counted in the divisor (``torch.nn.AvgPool2d``); shapes
    and the stride default as :func:`max_pool2d`.

    Raises:
        ShapeError: kernel or stride not an int >= 1 or a pair of them; padding not >= 0; at
            build, as :func:`max_pool2d`.
    """
    return _pool(AvgPool2d, kernel_size, stride, padding)


def flatten() -> Flatten:
    """Flatten each sample to a vector (``torch.nn.Flatten``): ``(C, H, W)`` -> ``(C*H*W,)``."""
    return Flatten()


@overload
def reshape(shape: Sequence[int], /) -> Reshape: ...


@overload
def reshape(*shape: int) -> Reshape: ...


def reshape(*shape: int | Sequence[int]) -> Reshape:
    """Reshape each sample to ``shape`` (same element count; the batch axis is kept).

    As ``torch.Tensor.reshape`` and ``torch.nn.Unflatten``, the per-sample shape is given either
    as separate ints (``reshape(1, 4, 4)``) or as one tuple/list (``reshape((1, 4, 4))``). Every
    dimension must be explicit: ``-1`` inference is not supported.

    Raises:
        ShapeError: no dimension, a dimension that is not an int >= 1 (including ``-1``), or a
            tuple/list mixed with other arguments; at build, a sample with another element count.
    """
    dims = shape[0] if len(shape) == 1 and isinstance(shape[0], (tuple, list)) else shape
    return Reshape(cast(Shape, dims))


def mean_pool(axis: int = 0) -> MeanPool:
    """Mean over per-sample ``axis`` (0 = the token axis of ``(tokens, features)`` samples), as
    ``x.mean(dim=axis + 1)`` over the batch in torch; the sample loses that axis.

    Raises:
        ShapeError: ``axis`` is not an int >= 0; at build, an axis out of range for the sample.
    """
    return MeanPool(axis)


def embedding(num_embeddings: int, embedding_dim: int, padding_idx: int | None = None) -> Embedding:
    """A table of ``num_embeddings`` learned vectors of size ``embedding_dim`` looked up by integer
    ids (``torch.nn.Embedding``, N(0, 1) initialisation, ``padding_idx`` positionally too, as
    torch's: ``nn.embedding(10, 4, 0)``): samples of ids ``(tokens,)`` give ``(tokens,
    embedding_dim)``. A model starting with it takes integer inputs (ids in ``[0,
    num_embeddings)``); it runs eagerly and in the typed graph (a ``gather`` node; training with a
    ``padding_idx`` gathers from the table and its detached copy, with eager's bits).

    ``padding_idx`` (torch.nn.Embedding's ``padding_idx``), an int in ``[-num_embeddings,
    num_embeddings)`` (negative: counted from the end, stored as the row it names), makes that
    row start as zeros and get a zero gradient; ids equal to it still look up its current value
    (:class:`~torchlean.nn.layers.Embedding`).

    Raises:
        ShapeError: a size that is not an int >= 1; a ``padding_idx`` that is not ``None`` or an
            int in ``[-num_embeddings, num_embeddings)`` (bools and floats refused), naming it and
            the range.
    """
    return Embedding(num_embeddings, embedding_dim, padding_idx)


def positional_embedding(tokens: int, d_model: int) -> PositionalEmbedding:
    """A learned position table ``table`` of shape ``(tokens, d_model)``, drawn from
    ``U(-0.1, 0.1)``, added to ``(tokens, d_model)`` samples (shape preserving).

    Raises:
        ShapeError: a size that is not an int >= 1; at build, a sample that is not
            ``(tokens, d_model)``.
    """
    return PositionalEmbedding(tokens, d_model)


def sequential(*layers: Layer) -> Sequential:
    """``layers`` applied in order (``torch.nn.Sequential``); parameters are named
    ``<position>.<name>``, e.g. ``0.weight``.

    With no layers it is the identity. A layer is a description, not a module holding weights:
    one layer object given twice (``sequential(shared, relu(), shared)``) gets two independent
    parameter sets, ``0.*`` and ``2.*`` (torch would tie them). Tied weights are one custom layer
    whose forward program uses its parameter twice.

    Raises:
        ShapeError: an argument that is not a :class:`Layer` (naming its 0-based position and type);
            at build, the first layer that does not fit the shape it receives.
    """
    return Sequential(tuple(layers))


def residual(body: Layer) -> Residual:
    """``x + body(x)`` (the body must preserve the shape); parameters are named ``body.<name>``.

    Raises:
        ShapeError: ``body`` is not a :class:`Layer`; at build, a body that changes the shape.
    """
    return Residual(body)


def multi_head_attention(d_model: int, heads: int, *, causal: bool = False) -> MultiHeadAttention:
    """Self-attention over ``(tokens, d_model)`` samples (shape preserving); bias-free projections
    ``wq``, ``wk``, ``wv``, ``wo`` of shape ``(d_model, d_model)`` (applied as ``linear``,
    ``x @ w.T``), each initialised ``U(-1/sqrt(d_model), 1/sqrt(d_model))``; ``causal=True`` lets
    token i attend to tokens j <= i. See :mod:`torchlean.nn.attention` (anchor-runtime.md §5.1).
    PyTorch's ``nn.MultiheadAttention(batch_first=True)`` computes the same with its biases at
    zero and ``in_proj_weight`` the concatenation ``[wq; wk; wv]`` (``out_proj.weight`` = ``wo``);
    it initialises that packed weight Xavier-uniform (bound ``sqrt(6 / (4 d_model))``).

    Raises:
        ShapeError: ``d_model`` or ``heads`` not an int >= 1, ``heads`` not dividing
            ``d_model``, or a non-bool ``causal``; at build, a sample that is not
            ``(tokens, d_model)``.
    """
    return MultiHeadAttention(d_model, heads, causal)


def transformer_block(
    d_model: int, heads: int, *, mlp_hidden: int | None = None, causal: bool = False
) -> TransformerBlock:
    """Pre-norm transformer block (attention + GELU MLP, layer norms, residuals); ``mlp_hidden``
    defaults to ``4 * d_model``. Samples ``(tokens, d_model)``, shape preserving. PyTorch's
    equivalent is ``nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=mlp_hidden,
    dropout=0.0, activation="gelu", norm_first=True, batch_first=True)`` with its attention biases
    at zero (``src_mask=torch.triu(torch.ones(n, n, dtype=torch.bool), 1)`` for ``causal``); its
    defaults differ (post-norm, ReLU, dropout 0.1). Its ``state_dict()`` maps to this block's
    state as: ``norm1.weight``/``norm1.bias`` to ``ln1.weight``/``ln1.bias``,
    ``self_attn.in_proj_weight`` rows ``[0:d)``, ``[d:2d)``, ``[2d:3d)`` to ``attn.wq``,
    ``attn.wk``, ``attn.wv``, ``self_attn.out_proj.weight`` to ``attn.wo``, ``norm2.*`` to
    ``ln2.*``, ``linear1.*`` to ``fc1.*`` and ``linear2.*`` to ``fc2.*``; ``self_attn.in_proj_bias``
    and ``self_attn.out_proj.bias`` have no counterpart (the block equals torch's only where they
    are zero).

    Raises:
        ShapeError: ``d_model``, ``heads`` or ``mlp_hidden`` not an int >= 1, ``heads`` not
            dividing ``d_model``, or a non-bool ``causal``; at build, as
            :func:`multi_head_attention`.
    """
    if mlp_hidden is not None:
        return TransformerBlock(d_model, heads, mlp_hidden, causal)
    # the default width needs an int d_model; any other d_model is refused by TransformerBlock first
    return TransformerBlock(d_model, heads, 4 * int(d_model) if is_int(d_model) else d_model, causal)


if not _TYPE_CHECKING:  # mypy resolves submodules itself; at run time each loads on first use
    from torchlean.backend._submodules import module_dir as _module_dir
    from torchlean.backend._submodules import module_getattr as _module_getattr

    __getattr__ = _module_getattr(__name__)
    __dir__ = _module_dir(__name__)
