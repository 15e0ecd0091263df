"""Cases shared by the ``aten`` differential suites (``test_aten_differential.py`` for values,
``test_aten_gradients.py`` for VJPs): inputs and parameters in the reference kernel convention for
every ``aten`` op, the aten and reference kernels of each op, and the comparison helper."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from torchlean.backend.providers.aten import capsules as aten_capsules
from torchlean.backend.providers.aten import kernels as aten_kernels
from torchlean.backend.providers.aten import pointwise as aten_pointwise
from torchlean.backend.providers.aten import spatial as aten_spatial
from torchlean.backend.providers.reference import kernels as reference_kernels
from torchlean.backend.providers.reference import spatial as reference_spatial
from torchlean.backend.vocabulary import BackendOp

Array = np.ndarray[Any, Any]
Inputs = tuple[Array | None, ...]
Builder = Callable[[np.random.Generator, type], tuple[Inputs, dict[str, Any]]]

TOLERANCE: dict[type, float] = {np.float64: 1e-10, np.float32: 1e-5}
DTYPES = [np.float64, np.float32]
DTYPE_IDS = ["float64", "float32"]
MASK = np.array(
    [[True, False, True, True, False], [False, False, False, False, False], [True, True, True, False, True]]
)
SPATIAL = {"layer_norm", "batch_norm", "conv", "conv_transpose", "max_pool", "avg_pool"}


def normal(rng: np.random.Generator, dtype: type, *shape: int) -> Array:
    return np.array(rng.standard_normal(shape), dtype=dtype)


def positive(rng: np.random.Generator, dtype: type, *shape: int) -> Array:
    return np.array(np.abs(rng.standard_normal(shape)) + 0.25, dtype=dtype)


def away_from_zero(rng: np.random.Generator, dtype: type, *shape: int) -> Array:
    x = rng.standard_normal(shape)
    return np.array(np.sign(x) * (np.abs(x) + 0.5), dtype=dtype)


def _unary(make: Callable[..., Array], *shape: int, times: float = 1.0, **params: Any) -> Builder:
    return lambda r, t: ((np.array(make(r, t, *shape) * times, dtype=t),), dict(params))


def _binary(shape_a: tuple[int, ...], shape_b: tuple[int, ...]) -> Builder:
    return lambda r, t: ((normal(r, t, *shape_a), normal(r, t, *shape_b)), {})


def _gather(shape: tuple[int, ...], index_shape: tuple[int, ...], *, axis: int, repeats: bool) -> Builder:
    """A float ``x`` of ``shape`` and an int64 index of ``index_shape`` along ``axis``: uniform
    draws in ``[0, shape[axis])`` (repeated values likely) or, without ``repeats``, a permutation
    of ``range(index_shape[axis])`` along each line (no value twice: the VJP sums nothing)."""

    def build(r: np.random.Generator, t: type) -> tuple[Inputs, dict[str, Any]]:
        if repeats:
            index = r.integers(0, max(shape[axis], 1), size=index_shape, dtype=np.int64)
        else:
            index = np.argsort(r.random(index_shape), axis=axis).astype(np.int64)
        return (normal(r, t, *shape), index), {"axis": axis}

    return build


def _embedding_lookup(rows: int, width: int, ids: tuple[int, ...]) -> Builder:
    """``tl.embedding``'s gather: table ``(rows, width)``, index ``(len(ids), width)`` whose line
    ``i`` is ``ids[i]`` repeated (repeated ids: the table's gradient sums their cotangents)."""
    index = np.repeat(np.array(ids, dtype=np.int64)[:, None], width, axis=1)
    return lambda r, t: ((normal(r, t, rows, width), index.copy()), {"axis": 0})


def _concat(*shapes: tuple[int, ...], axis: int) -> Builder:
    """Float operands of ``shapes`` (one rank; equal extents off ``axis``) for ``concat``."""
    return lambda r, t: (tuple(normal(r, t, *shape) for shape in shapes), {"axis": axis})


def _concat_same(shape: tuple[int, ...], *, axis: int) -> Builder:
    """``concat([x, x])``: one array passed twice (each operand gets its own cotangent)."""

    def build(r: np.random.Generator, t: type) -> tuple[Inputs, dict[str, Any]]:
        x = normal(r, t, *shape)
        return (x, x), {"axis": axis}

    return build


_n = normal

# One row per case: (id, op label, builder). Builders give the kernel-convention inputs and params.
CASE_ROWS: list[tuple[str, str, Builder]] = [
    # ------------------------------------------------------------------------- contractions
    ("matmul-2d", "matmul", _binary((5, 7), (7, 3))),
    ("matmul-batch-broadcast", "matmul", _binary((2, 1, 4, 6), (3, 6, 5))),
    ("matmul-vector-matrix", "matmul", _binary((6,), (2, 6, 4))),
    ("matmul-matrix-vector", "matmul", _binary((3, 4, 6), (6,))),
    ("matmul-vector-vector", "matmul", _binary((6,), (6,))),
    ("matmul-empty-contraction", "matmul", _binary((2, 0), (0, 3))),
    ("linear-bias", "linear", lambda r, t: ((_n(r, t, 4, 3, 8), _n(r, t, 5, 8), _n(r, t, 5)), {})),
    ("linear-no-bias", "linear", lambda r, t: ((_n(r, t, 8), _n(r, t, 5, 8), None), {})),
    ("linear-no-rows", "linear", lambda r, t: ((_n(r, t, 0, 8), _n(r, t, 5, 8), _n(r, t, 5)), {})),
    ("mse_loss", "mse_loss", _binary((4, 6), (4, 6))),
    ("mse_loss-one-element", "mse_loss", _binary((1,), (1,))),
    # ---------------------------------------------------------------------------- pointwise
    ("relu", "relu", _unary(normal, 4, 6)),
    ("relu-zero-size", "relu", _unary(normal, 0, 3)),
    ("gelu", "gelu", _unary(normal, 4, 6, times=3.0)),
    ("add-broadcast", "add", _binary((3, 1, 4), (2, 4))),
    ("add-same-shape", "add", _binary((3, 4), (3, 4))),
    ("add-rank0", "add", _binary((), (2, 3))),
    ("sub-broadcast", "sub", _binary((2, 4), (3, 1, 4))),
    ("mul-broadcast", "mul", _binary((3, 1), (1, 5))),
    ("mul-one-element", "mul", _binary((1,), (1,))),
    ("scale", "scale", _unary(normal, 3, 5, factor=0.3)),
    ("abs", "abs", _unary(normal, 3, 5)),
    ("sqrt", "sqrt", _unary(positive, 3, 5)),
    ("clamp", "clamp", _unary(normal, 4, 5, lo=-0.5, hi=0.7)),
    ("clamp-infinite-bound", "clamp", _unary(normal, 4, 5, lo=-np.inf, hi=0.2)),
    ("max-broadcast", "max", _binary((3, 4), (4,))),
    ("min-broadcast", "min", _binary((2, 1, 3), (4, 3))),
    ("sigmoid", "sigmoid", _unary(normal, 3, 5, times=4.0)),
    ("tanh", "tanh", _unary(normal, 3, 5, times=2.0)),
    ("softplus", "softplus", _unary(normal, 3, 5, times=10.0)),
    ("exp", "exp", _unary(normal, 3, 5)),
    ("log", "log", _unary(positive, 3, 5)),
    ("sin", "sin", _unary(normal, 3, 5, times=3.0)),
    ("cos", "cos", _unary(normal, 3, 5, times=3.0)),
    ("inv", "inv", _unary(away_from_zero, 3, 5)),
    ("safe_log", "safe_log", _unary(normal, 3, 5, times=3.0, eps=1e-3)),
    # --------------------------------------------------------------- softmax normalisations
    ("log_softmax-axis1", "log_softmax", _unary(normal, 3, 4, 5, axis=1)),
    ("log_softmax-last", "log_softmax", _unary(normal, 6, 9, times=4.0, axis=-1)),
    ("softmax-last", "softmax", _unary(normal, 3, 7, axis=-1)),
    ("softmax-axis0", "softmax", _unary(normal, 2, 3, 4, axis=0)),
    ("softmax-empty-axis", "softmax", _unary(normal, 3, 0, axis=1)),
    ("softmax-rank0", "softmax", _unary(normal, axis=0)),
    # ---------------------------------------------------------------------------- reductions
    ("reduce_sum-all", "reduce_sum", _unary(normal, 3, 4, 5, axis=None)),
    ("reduce_sum-axes-keepdims", "reduce_sum", _unary(normal, 3, 4, 5, axis=(0, 2), keepdims=True)),
    ("reduce_sum-rank0", "reduce_sum", _unary(normal, axis=None)),
    ("reduce_sum-empty-axis", "reduce_sum", _unary(normal, 3, 0, axis=1)),
    ("reduce_mean-axis", "reduce_mean", _unary(normal, 3, 4, 5, axis=1)),
    ("reduce_mean-negative-axes", "reduce_mean", _unary(normal, 2, 3, 4, axis=(-1, 0), keepdims=False)),
    # --------------------------------------------------------------------------------- views
    ("reshape", "reshape", _unary(normal, 3, 4, shape=(2, -1))),
    ("reshape-zero-size", "reshape", _unary(normal, 0, 4, shape=(4, 0, 1))),
    ("permute", "permute", _unary(normal, 2, 3, 4, perm=(2, 0, 1))),
    ("permute-transpose", "permute", _unary(normal, 5, 3, perm=(1, 0))),
    ("permute-identity", "permute", _unary(normal, 2, 3, perm=(0, -1))),
    ("broadcast", "broadcast", _unary(normal, 3, 1, shape=(2, 3, 4))),
    ("broadcast-identity", "broadcast", _unary(normal, 2, 3, shape=(2, 3))),
    ("concat-several-axis0", "concat", _concat((2, 3), (4, 3), (1, 3), axis=0)),
    ("concat-negative-last-axis", "concat", _concat((2, 3, 1), (2, 3, 4), axis=-1)),
    ("concat-middle-axis", "concat", _concat((2, 1, 3), (2, 2, 3), (2, 3, 3), (2, 1, 3), axis=1)),
    ("concat-one-operand", "concat", _concat((3, 4), axis=1)),
    ("concat-zero-size-operands", "concat", _concat((0, 3), (2, 3), (0, 3), axis=0)),
    ("concat-all-zero-size", "concat", _concat((2, 0), (2, 0), axis=1)),
    ("concat-empty-off-axis", "concat", _concat((0, 2), (0, 3), axis=1)),
    ("concat-rank1", "concat", _concat((1,), (5,), axis=0)),
    ("concat-same-array-twice", "concat", _concat_same((3, 2), axis=0)),
    ("slice-steps", "slice", _unary(normal, 5, 4, 3, starts=(1, 0, 0), stops=(5, 4, 2), steps=(2, 3, 1))),
    ("slice-batch-norm-first", "slice", _unary(normal, 4, 3, 2, starts=(0, 0, 0), stops=(1, 3, 1))),
    ("slice-zero-size", "slice", _unary(normal, 3, 4, starts=(3, 2), stops=(3, 4))),
    ("slice-step-beyond-extent", "slice", _unary(normal, 2, 3, starts=(0, 0), stops=(2, 3), steps=(5, 1))),
    ("slice-rank0", "slice", _unary(normal, starts=(), stops=())),
    ("gather-repeated-rows", "gather", _gather((4, 3), (6, 3), axis=0, repeats=True)),
    ("gather-embedding-index", "gather", _embedding_lookup(5, 3, (2, 2, 0, 4, 2, 2))),
    ("gather-partial-last-axis", "gather", _gather((3, 4, 5), (2, 3, 7), axis=-1, repeats=True)),
    ("gather-permutation", "gather", _gather((4, 3), (4, 3), axis=0, repeats=False)),
    ("gather-one-element", "gather", _gather((1,), (1,), axis=0, repeats=False)),
    ("gather-empty-index", "gather", _gather((3, 2), (0, 2), axis=0, repeats=True)),
    ("gather-empty-axis", "gather", _gather((0, 2), (0, 2), axis=0, repeats=True)),
    # ------------------------------------------------------------------------ channel-first
    (
        "layer_norm-affine",
        "layer_norm",
        lambda r, t: ((_n(r, t, 4, 6), _n(r, t, 6), _n(r, t, 6)), {"normalized_ndim": 1, "eps": 1e-5}),
    ),
    (
        "layer_norm-2d-weight-only",
        "layer_norm",
        lambda r, t: ((_n(r, t, 2, 3, 4, 5), _n(r, t, 4, 5), None), {"normalized_ndim": 2, "eps": 1e-3}),
    ),
    (
        "batch_norm-train-affine",
        "batch_norm",
        lambda r, t: (
            (_n(r, t, 4, 3, 5), _n(r, t, 3), _n(r, t, 3), _n(r, t, 3), positive(r, t, 3)),
            {"training": True, "eps": 1e-5},
        ),
    ),
    (
        "batch_norm-train-rank2-no-affine",
        "batch_norm",
        lambda r, t: ((_n(r, t, 6, 2), None, None, None, None), {"training": True, "eps": 1e-3}),
    ),
    (
        "batch_norm-eval",
        "batch_norm",
        lambda r, t: (
            (_n(r, t, 2, 3, 4, 4), _n(r, t, 3), None, _n(r, t, 3), positive(r, t, 3)),
            {"training": False, "eps": 1e-5},
        ),
    ),
    (
        "conv-1d",
        "conv",
        lambda r, t: (
            (_n(r, t, 2, 3, 11), _n(r, t, 4, 3, 3), _n(r, t, 4)),
            {"stride": 2, "padding": 1, "dilation": 1, "groups": 1},
        ),
    ),
    (
        "conv-2d-groups-dilation",
        "conv",
        lambda r, t: (
            (_n(r, t, 2, 4, 7, 6), _n(r, t, 6, 2, 3, 2), None),
            {"stride": (1, 2), "padding": (1, 0), "dilation": (2, 1), "groups": 2},
        ),
    ),
    (
        "conv-3d",
        "conv",
        lambda r, t: (
            (_n(r, t, 1, 2, 5, 4, 4), _n(r, t, 3, 2, 2, 2, 2), _n(r, t, 3)),
            {"stride": 1, "padding": 1, "dilation": 1, "groups": 1},
        ),
    ),
    (
        "conv_transpose-1d",
        "conv_transpose",
        lambda r, t: (
            (_n(r, t, 2, 3, 5), _n(r, t, 3, 2, 3), _n(r, t, 2)),
            {"stride": 2, "padding": 1, "output_padding": 1, "dilation": 1, "groups": 1},
        ),
    ),
    (
        "conv_transpose-2d-groups-dilation",
        "conv_transpose",
        lambda r, t: (
            (_n(r, t, 1, 4, 4, 3), _n(r, t, 4, 3, 3, 2), None),
            {"stride": (2, 1), "padding": (1, 0), "output_padding": (1, 1), "dilation": (1, 2), "groups": 2},
        ),
    ),
    (
        "conv_transpose-3d",
        "conv_transpose",
        lambda r, t: (
            (_n(r, t, 1, 2, 3, 2, 3), _n(r, t, 2, 2, 2, 2, 2), _n(r, t, 2)),
            {"stride": 2, "padding": 0, "output_padding": 0, "dilation": 1, "groups": 1},
        ),
    ),
    (
        "max_pool-1d",
        "max_pool",
        lambda r, t: ((_n(r, t, 2, 3, 9),), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 1}),
    ),
    (
        "max_pool-2d-dilation",
        "max_pool",
        lambda r, t: (
            (_n(r, t, 2, 3, 7, 8),),
            {"kernel_size": (3, 2), "stride": (2, 2), "padding": (1, 1), "dilation": (1, 2)},
        ),
    ),
    (
        "max_pool-3d",
        "max_pool",
        lambda r, t: (
            (_n(r, t, 1, 2, 4, 5, 6),),
            {"kernel_size": 2, "stride": None, "padding": 0, "dilation": 1},
        ),
    ),
    (
        "avg_pool-1d",
        "avg_pool",
        lambda r, t: ((_n(r, t, 2, 3, 9),), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ),
    (
        "avg_pool-2d",
        "avg_pool",
        lambda r, t: ((_n(r, t, 2, 3, 6, 7),), {"kernel_size": (2, 3), "stride": 1, "padding": (1, 1)}),
    ),
    (
        "avg_pool-3d",
        "avg_pool",
        lambda r, t: ((_n(r, t, 1, 2, 4, 4, 6),), {"kernel_size": 2, "stride": None, "padding": 0}),
    ),
    # ---------------------------------------------------------------------------- attention
    (
        "scaled_dot_product_attention-unmasked",
        "scaled_dot_product_attention",
        lambda r, t: ((_n(r, t, 2, 3, 4), _n(r, t, 2, 5, 4), _n(r, t, 2, 5, 6), None), {}),
    ),
    (
        "scaled_dot_product_attention-masked",
        "scaled_dot_product_attention",
        lambda r, t: ((_n(r, t, 2, 3, 4), _n(r, t, 2, 5, 4), _n(r, t, 2, 5, 6), MASK), {"scale": 0.3}),
    ),
    (
        "scaled_dot_product_attention-broadcast",
        "scaled_dot_product_attention",
        lambda r, t: (
            (_n(r, t, 2, 1, 3, 4), _n(r, t, 1, 2, 5, 4), _n(r, t, 2, 2, 5, 3), MASK[None, None]),
            {},
        ),
    ),
    (
        "scaled_dot_product_attention-zero-width",
        "scaled_dot_product_attention",
        lambda r, t: ((_n(r, t, 2, 3, 0), _n(r, t, 2, 5, 0), _n(r, t, 2, 5, 4), MASK), {}),
    ),
]
CASES: list[tuple[str, BackendOp, Builder]] = [
    (case_id, BackendOp.parse(label), build) for case_id, label, build in CASE_ROWS
]
IDS = [case_id for case_id, _, _ in CASES]


def _module(op: BackendOp, pointwise: Any, spatial: Any, rest: Any) -> Any:
    path = aten_capsules.kernel_path(op)
    if path == aten_capsules.POINTWISE_PATH:
        return pointwise
    return spatial if path == aten_capsules.SPATIAL_PATH else rest


def aten_forward(op: BackendOp) -> Callable[..., Array]:
    forward: Callable[..., Array] = getattr(_module(op, aten_pointwise, aten_spatial, aten_kernels), op.label)
    return forward


def aten_vjp(op: BackendOp) -> Callable[..., tuple[Array | None, ...]]:
    vjp: Callable[..., tuple[Array | None, ...]] = getattr(
        _module(op, aten_pointwise, aten_spatial, aten_kernels), f"{op.label}_vjp"
    )
    return vjp


def reference_forward(op: BackendOp) -> Callable[..., Array]:
    module = reference_spatial if op.label in SPATIAL else reference_kernels
    forward: Callable[..., Array] = getattr(module, op.label)
    return forward


def reference_vjp(op: BackendOp) -> Callable[..., tuple[Array | None, ...]]:
    module = reference_spatial if op.label in SPATIAL else reference_kernels
    vjp: Callable[..., tuple[Array | None, ...]] = getattr(module, f"{op.label}_vjp")
    return vjp


def assert_close(actual: Array, expected: Array, tol: float, what: str) -> None:
    """Same shape and dtype, NaN at the same places, and max-norm agreement of the rest relative
    to the largest finite reference entry (exact where both are empty)."""
    assert actual.shape == expected.shape, f"{what}: shape {actual.shape} != {expected.shape}"
    assert actual.dtype == expected.dtype, f"{what}: dtype {actual.dtype} != {expected.dtype}"
    if expected.size == 0:
        return
    np.testing.assert_array_equal(np.isnan(actual), np.isnan(expected), err_msg=f"{what}: NaN positions")
    finite = np.isfinite(expected)
    np.testing.assert_array_equal(actual[~finite], expected[~finite], err_msg=f"{what}: non-finite entries")
    if not finite.any():
        return
    a, e = actual[finite].astype(np.float64), expected[finite].astype(np.float64)
    scale = max(float(np.max(np.abs(e))), np.finfo(expected.dtype).tiny)
    error = float(np.max(np.abs(a - e)))
    assert error <= tol * scale, f"{what}: max error {error:.3e} > {tol:.0e} * {scale:.3e}"
