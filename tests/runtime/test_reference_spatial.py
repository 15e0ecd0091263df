"""Values and VJPs of the seven channel-first ``reference`` kernels and their guards.

Ops: layer_norm, batch_norm, conv, conv_transpose, max_pool, smooth_max_pool, avg_pool
(``torchlean.backend.providers.reference.spatial``; guards in ``spatial_guards``).  Each test name
mentions its op label.  Oracles: PyTorch on the same inputs (``torch.nn.functional`` forward in
float64 to 1e-10 and float32 to 1e-5 relative to the output's magnitude; ``torch.autograd``
gradients in float64), central finite differences in float64, mpmath at 50 digits for the smooth
maximum at overflow scale, hand-computed values, and scalar Python left folds for the bitwise
fixed-left order.
"""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import assume, given, settings
from hypothesis import strategies as st
from memory_trace import traced_peak
from numpy.testing import assert_allclose, assert_array_equal

import torchlean as tl
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.reference import spatial as S

SUBJECT_PROVIDERS = ("reference",)
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

Array = np.ndarray[Any, Any]
Inputs = tuple[Array | None, ...]


@pytest.fixture(autouse=True, scope="module")
def _torch_single_thread() -> Iterator[None]:
    """torch's intra-op threads cost far more than these tiny oracle ops compute (and stall on a
    loaded machine); run the oracles single-threaded and restore the setting afterwards."""
    threads = torch.get_num_threads()
    torch.set_num_threads(1)
    yield
    torch.set_num_threads(threads)


# ------------------------------------------------------------------------------ op descriptions


def _per_axis(value: Any, nd: int) -> tuple[int, ...]:
    return (value,) * nd if isinstance(value, int) else tuple(value)


def _torch_conv(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, **p: Any) -> torch.Tensor:
    fn: Callable[..., torch.Tensor] = (F.conv1d, F.conv2d, F.conv3d)[x.dim() - 3]
    return fn(x, w, b, **p)


def _torch_conv_transpose(x: torch.Tensor, w: torch.Tensor, b: torch.Tensor | None, **p: Any) -> torch.Tensor:
    fn: Callable[..., torch.Tensor] = (F.conv_transpose1d, F.conv_transpose2d, F.conv_transpose3d)[
        x.dim() - 3
    ]
    return fn(x, w, b, **p)


def _torch_max_pool(x: torch.Tensor, **p: Any) -> torch.Tensor:
    fn: Callable[..., torch.Tensor] = (F.max_pool1d, F.max_pool2d, F.max_pool3d)[x.dim() - 3]
    return fn(x, **p)


def _torch_avg_pool(x: torch.Tensor, **p: Any) -> torch.Tensor:
    return (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[x.dim() - 3](x, **p, count_include_pad=True)


def _torch_avg_pool_padded(
    x: torch.Tensor, *, kernel_size: Any, stride: Any = None, padding: Any = 0
) -> torch.Tensor:
    """Zero padding made explicit, then an unpadded pool: the count_include_pad=True definition.
    (torch's avg_pool3d refuses unpadded inputs smaller than the kernel, which 1d/2d accept.)"""
    pads = [v for p in reversed(_per_axis(padding, x.dim() - 2)) for v in (p, p)]
    return (F.avg_pool1d, F.avg_pool2d, F.avg_pool3d)[x.dim() - 3](F.pad(x, pads), kernel_size, stride)


def _torch_smooth_max_pool(
    x: torch.Tensor, *, beta: float, kernel_size: Any, stride: Any = None, padding: Any = 0
) -> torch.Tensor:
    """(1/beta) * logsumexp(beta * window) by torch composition: pad with -inf*sign(beta), unfold."""
    nd = x.dim() - 2
    kernel = _per_axis(kernel_size, nd)
    step = kernel if stride is None else _per_axis(stride, nd)
    pads = [v for p in reversed(_per_axis(padding, nd)) for v in (p, p)]
    xp = F.pad(x, pads, value=-math.inf if beta > 0 else math.inf)
    for axis in range(nd):
        xp = xp.unfold(2 + axis, kernel[axis], step[axis])
    return torch.logsumexp(beta * xp.flatten(start_dim=2 + nd), dim=-1) / beta


def _torch_layer_norm(
    x: torch.Tensor,
    w: torch.Tensor | None,
    b: torch.Tensor | None,
    *,
    normalized_ndim: int,
    eps: float = 1e-5,
) -> torch.Tensor:
    return F.layer_norm(x, x.shape[x.dim() - normalized_ndim :], w, b, eps)


def _torch_batch_norm(
    x: torch.Tensor,
    w: torch.Tensor | None,
    b: torch.Tensor | None,
    rm: torch.Tensor | None,
    rv: torch.Tensor | None,
    *,
    training: bool,
    eps: float = 1e-5,
) -> torch.Tensor:
    return F.batch_norm(x, rm, rv, w, b, training=training, eps=eps)


@dataclass(frozen=True)
class Op:
    label: str
    forward: Callable[..., Array]
    vjp: Callable[..., tuple[Array | None, ...]]
    torch_forward: Callable[..., torch.Tensor]
    differentiable: tuple[int, ...]


CONV = Op("conv", S.conv, S.conv_vjp, _torch_conv, (0, 1, 2))
CONV_TRANSPOSE = Op(
    "conv_transpose", S.conv_transpose, S.conv_transpose_vjp, _torch_conv_transpose, (0, 1, 2)
)
MAX_POOL = Op("max_pool", S.max_pool, S.max_pool_vjp, _torch_max_pool, (0,))
AVG_POOL = Op("avg_pool", S.avg_pool, S.avg_pool_vjp, _torch_avg_pool, (0,))
AVG_POOL_PADDED = Op("avg_pool", S.avg_pool, S.avg_pool_vjp, _torch_avg_pool_padded, (0,))
SMOOTH_MAX_POOL = Op(
    "smooth_max_pool", S.smooth_max_pool, S.smooth_max_pool_vjp, _torch_smooth_max_pool, (0,)
)
LAYER_NORM = Op("layer_norm", S.layer_norm, S.layer_norm_vjp, _torch_layer_norm, (0, 1, 2))
BATCH_NORM = Op("batch_norm", S.batch_norm, S.batch_norm_vjp, _torch_batch_norm, (0, 1, 2))


@dataclass(frozen=True)
class Case:
    name: str
    inputs: Inputs
    params: Mapping[str, Any] = field(default_factory=dict)


def _normal(seed: int, *shape: int) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


def _distinct(seed: int, *shape: int) -> Array:
    """Values 0.05 apart in random order: no ties, so max pooling is differentiable everywhere."""
    count = math.prod(shape)
    return np.random.default_rng(seed).permutation(count).reshape(shape) * 0.05 - 0.025 * count


def _positive(seed: int, *shape: int) -> Array:
    return np.random.default_rng(seed).uniform(0.5, 2.0, shape)


CONV_CASES = [
    Case(
        "1d-stride-padding-dilation-groups",
        (_normal(1, 2, 4, 9), _normal(2, 6, 2, 3), _normal(3, 6)),
        {"stride": 2, "padding": 1, "dilation": 2, "groups": 2},
    ),
    Case(
        "2d-per-axis-groups",
        (_normal(4, 2, 4, 7, 6), _normal(5, 6, 2, 3, 2), _normal(6, 6)),
        {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 1), "groups": 2},
    ),
    Case("2d-depthwise", (_normal(7, 1, 3, 5, 5), _normal(8, 3, 1, 3, 3), None), {"padding": 1, "groups": 3}),
    Case(
        "3d-no-bias",
        (_normal(9, 1, 2, 4, 5, 3), _normal(10, 3, 2, 2, 3, 2), None),
        {"stride": (1, 2, 1), "padding": (0, 1, 1), "dilation": (1, 1, 2)},
    ),
    Case("one-element", (_normal(11, 1, 1, 1), _normal(12, 1, 1, 1), _normal(13, 1)), {}),
]

CONV_TRANSPOSE_CASES = [
    Case(
        "1d-stride-padding-output-padding-groups",
        (_normal(21, 2, 4, 5), _normal(22, 4, 3, 3), _normal(23, 6)),
        {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
    ),
    Case(
        "2d-per-axis-dilation-groups",
        (_normal(24, 2, 4, 5, 3), _normal(25, 4, 3, 3, 2), _normal(26, 6)),
        {"stride": (2, 3), "padding": (1, 0), "output_padding": (1, 2), "dilation": (2, 1), "groups": 2},
    ),
    Case(
        "3d-no-bias",
        (_normal(27, 1, 2, 3, 2, 3), _normal(28, 2, 2, 2, 2, 2), None),
        {"stride": (2, 1, 1), "padding": (1, 0, 0), "dilation": (1, 2, 1), "output_padding": (1, 1, 0)},
    ),
    Case("one-element", (_normal(29, 1, 1, 1), _normal(30, 1, 1, 1), _normal(31, 1)), {}),
]

MAX_POOL_CASES = [
    Case(
        "1d-stride-padding-dilation",
        (_distinct(41, 2, 3, 9),),
        {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2},
    ),
    Case(
        "2d-per-axis",
        (_distinct(42, 2, 3, 7, 8),),
        {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1), "dilation": (1, 2)},
    ),
    Case("3d-default-stride", (_distinct(43, 1, 2, 4, 3, 4),), {"kernel_size": 2, "padding": (1, 0, 1)}),
    Case("overlapping-windows", (_distinct(44, 1, 2, 6, 6),), {"kernel_size": 3, "stride": 1}),
    Case("one-element", (_distinct(45, 1, 1, 1),), {"kernel_size": 1}),
]

AVG_POOL_CASES = [
    Case("1d-stride-padding", (_normal(51, 2, 3, 9),), {"kernel_size": 3, "stride": 2, "padding": 1}),
    Case(
        "2d-per-axis",
        (_normal(52, 2, 3, 7, 8),),
        {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1)},
    ),
    Case("3d-default-stride", (_normal(53, 1, 2, 4, 3, 4),), {"kernel_size": 2, "padding": (1, 0, 1)}),
    Case("overlapping-windows", (_normal(54, 1, 2, 6, 6),), {"kernel_size": 3, "stride": 1}),
    Case("one-element", (_normal(55, 1, 1, 1),), {"kernel_size": 1}),
]

SMOOTH_MAX_POOL_CASES = [
    Case(
        "1d-positive-beta",
        (_normal(61, 2, 3, 9),),
        {"beta": 2.5, "kernel_size": 3, "stride": 2, "padding": 1},
    ),
    Case(
        "1d-negative-beta",
        (_normal(62, 2, 3, 9),),
        {"beta": -1.5, "kernel_size": 3, "stride": 2, "padding": 1},
    ),
    Case(
        "2d-per-axis",
        (_normal(63, 2, 3, 7, 8),),
        {"beta": 4.0, "kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 1)},
    ),
    Case(
        "3d-default-stride",
        (_normal(64, 1, 2, 4, 3, 4),),
        {"beta": -0.75, "kernel_size": 2, "padding": (1, 0, 1)},
    ),
    Case("one-element", (_normal(65, 1, 1, 1),), {"beta": 3.0, "kernel_size": 1}),
]

LAYER_NORM_CASES = [
    Case("rows-affine", (_normal(71, 3, 5), _normal(72, 5), _normal(73, 5)), {"normalized_ndim": 1}),
    Case(
        "two-trailing-axes",
        (_normal(74, 2, 3, 4), _normal(75, 3, 4), _normal(76, 3, 4)),
        {"normalized_ndim": 2, "eps": 1e-3},
    ),
    Case("all-axes-no-affine", (_normal(77, 6), None, None), {"normalized_ndim": 1}),
    Case("weight-only", (_normal(78, 2, 2, 3), _normal(79, 3), None), {"normalized_ndim": 1}),
    Case("one-element", (_normal(80, 1, 1), _normal(81, 1), _normal(82, 1)), {"normalized_ndim": 1}),
]

BATCH_NORM_CASES = [
    Case(
        "training-2d",
        (_normal(91, 4, 3), _normal(92, 3), _normal(93, 3), _normal(94, 3), _positive(95, 3)),
        {"training": True},
    ),
    Case(
        "training-1d-spatial",
        (_normal(96, 2, 3, 5), _normal(97, 3), _normal(98, 3), None, None),
        {"training": True, "eps": 1e-3},
    ),
    Case(
        "training-3d-spatial-no-affine",
        (_normal(99, 1, 2, 2, 3, 2), None, None, None, None),
        {"training": True},
    ),
    Case(
        "training-batch-1",
        (_normal(100, 1, 3, 4), _normal(101, 3), _normal(102, 3), None, None),
        {"training": True},
    ),
    Case(
        "eval-2d-spatial",
        (_normal(103, 2, 2, 3, 3), _normal(104, 2), _normal(105, 2), _normal(106, 2), _positive(107, 2)),
        {"training": False},
    ),
    Case(
        "eval-one-element",
        (_normal(108, 1, 1), _normal(109, 1), _normal(110, 1), _normal(111, 1), _positive(112, 1)),
        {"training": False},
    ),
]


def _ids(cases: Sequence[Case]) -> list[str]:
    return [case.name for case in cases]


# ------------------------------------------------------------------------------------ checks


def _cast(inputs: Inputs, dtype: Any) -> Inputs:
    return tuple(None if a is None else a.astype(dtype) for a in inputs)


def _torch_run(
    op: Op, inputs: Inputs, params: Mapping[str, Any]
) -> tuple[list[torch.Tensor | None], torch.Tensor]:
    tensors = [
        None if a is None else torch.tensor(a, requires_grad=i in op.differentiable)
        for i, a in enumerate(inputs)
    ]
    return tensors, op.torch_forward(*tensors, **params)


def _value_matches_torch(op: Op, case: Case, dtype: Any) -> None:
    inputs = _cast(case.inputs, dtype)
    ours = op.forward(*inputs, **case.params)
    with torch.no_grad():
        ref = _torch_run(op, inputs, case.params)[1].numpy()
    assert isinstance(ours, np.ndarray)
    assert ours.dtype == np.dtype(dtype)
    assert ours.shape == ref.shape
    if np.dtype(dtype) == np.float64:
        assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)
    else:
        assert_allclose(ours, ref, rtol=1e-5, atol=1e-5 * float(np.abs(ref).max()))


def _max_rel(ours: Array, ref: Array) -> float:
    """Max error relative to the reference's largest magnitude.  The magnitude is floored at 1e-3
    for gradients that are zero in theory, where the oracle holds rounding noise only."""
    return float(np.abs(ours - ref).max() / max(float(np.abs(ref).max()), 1e-3))


def _cotangent(shape: tuple[int, ...], seed: int = 7) -> Array:
    return np.random.default_rng(seed).standard_normal(shape)


def _vjp_matches_torch(op: Op, case: Case) -> None:
    out = op.forward(*case.inputs, **case.params)
    g = _cotangent(out.shape)
    tensors, ref = _torch_run(op, case.inputs, case.params)
    ref.backward(torch.from_numpy(g))  # type: ignore[no-untyped-call]
    grads = op.vjp(g, *case.inputs, out=out, **case.params)
    assert len(grads) == len(case.inputs)
    for i, (grad, tensor) in enumerate(zip(grads, tensors, strict=True)):
        if tensor is None or i not in op.differentiable:
            assert grad is None
            continue
        assert grad is not None and tensor.grad is not None
        assert grad.shape == tensor.shape and grad.dtype == np.float64
        assert _max_rel(grad, tensor.grad.numpy()) <= 1e-10, f"input {i}"


def _vjp_matches_finite_differences(op: Op, case: Case, step: float = 1e-6) -> None:
    out = op.forward(*case.inputs, **case.params)
    g = _cotangent(out.shape)
    grads = op.vjp(g, *case.inputs, out=out, **case.params)

    def loss(inputs: Inputs) -> float:
        return float(np.vdot(op.forward(*inputs, **case.params), g))

    for i in op.differentiable:
        base = case.inputs[i]
        if base is None:
            continue
        numeric = np.empty_like(base)
        for j in range(base.size):
            shifted = []
            for sign in (1.0, -1.0):
                moved = base.copy()
                moved.flat[j] += sign * step
                shifted.append(loss(tuple(moved if k == i else a for k, a in enumerate(case.inputs))))
            numeric.flat[j] = (shifted[0] - shifted[1]) / (2 * step)
        grad = grads[i]
        assert grad is not None
        assert _max_rel(grad, numeric) <= 1e-6, f"input {i}"


# ------------------------------------------------------------------------------------- conv


@pytest.mark.parametrize("case", CONV_CASES, ids=_ids(CONV_CASES))
def test_conv_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(CONV, case, np.float64)


@pytest.mark.parametrize("case", CONV_CASES, ids=_ids(CONV_CASES))
def test_conv_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(CONV, case, np.float32)


@pytest.mark.parametrize("case", CONV_CASES, ids=_ids(CONV_CASES))
def test_conv_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(CONV, case)


@pytest.mark.parametrize("case", CONV_CASES, ids=_ids(CONV_CASES))
def test_conv_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(CONV, case)


def test_conv_value_hand_computed() -> None:
    x = np.array([[[1.0, 2.0, 4.0, 8.0]]])
    w = np.array([[[1.0, 0.0, -1.0]]])
    assert_array_equal(S.conv(x, w, np.array([0.5])), [[[-2.5, -5.5]]])
    assert_array_equal(S.conv(x, w, padding=1), [[[-2.0, -3.0, -6.0, 4.0]]])


def _scalar_conv_left_fold(x: Array, w: Array, b: Array, stride: int, padding: int, dilation: int) -> Array:
    """Scalar 2-D convolution (groups=1): each output is ((t0 + t1) + ...) + b over (ci, kh, kw)."""
    n, c_in, h, wd = x.shape
    c_out, _, kh, kw = w.shape
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.empty((n, c_out, oh, ow), dtype=x.dtype)
    for b_, co, i, j in itertools.product(range(n), range(c_out), range(oh), range(ow)):
        acc = None
        for ci, p, q in itertools.product(range(c_in), range(kh), range(kw)):
            r, s = i * stride + p * dilation - padding, j * stride + q * dilation - padding
            value = x[b_, ci, r, s] if 0 <= r < h and 0 <= s < wd else x.dtype.type(0)
            term = value * w[co, ci, p, q]
            acc = term if acc is None else acc + term
        out[b_, co, i, j] = acc + b[co]
    return out


def test_conv_is_fixed_left_fold_bitwise_float32() -> None:
    x = _normal(120, 2, 3, 5, 4).astype(np.float32) * np.float32(1e3)
    w = _normal(121, 2, 3, 2, 3).astype(np.float32)
    b = _normal(122, 2).astype(np.float32)
    expected = _scalar_conv_left_fold(x, w, b, stride=2, padding=1, dilation=1)
    assert_array_equal(S.conv(x, w, b, stride=2, padding=1), expected)


def test_conv_left_fold_differs_from_other_orders_float32() -> None:
    # Three channels 1e8, 1, -1e8 under a 1x1 kernel of ones: ((1e8 + 1) - 1e8) = 0 in float32,
    # while summing the large terms first gives 1.
    x = np.array([[[1e8], [1.0], [-1e8]]], dtype=np.float32)
    w = np.ones((1, 3, 1), dtype=np.float32)
    values = x[0, :, 0]
    assert (values[0] + values[2]) + values[1] == np.float32(1.0)
    assert_array_equal(S.conv(x, w), [[[0.0]]])


# ------------------------------------------------------------------------------ conv_transpose


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=_ids(CONV_TRANSPOSE_CASES))
def test_conv_transpose_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(CONV_TRANSPOSE, case, np.float64)


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=_ids(CONV_TRANSPOSE_CASES))
def test_conv_transpose_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(CONV_TRANSPOSE, case, np.float32)


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=_ids(CONV_TRANSPOSE_CASES))
def test_conv_transpose_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(CONV_TRANSPOSE, case)


@pytest.mark.parametrize("case", CONV_TRANSPOSE_CASES, ids=_ids(CONV_TRANSPOSE_CASES))
def test_conv_transpose_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(CONV_TRANSPOSE, case)


def test_conv_transpose_is_fixed_left_fold_bitwise_float32() -> None:
    x = _normal(130, 1, 4, 3).astype(np.float32) * np.float32(1e3)
    w = _normal(131, 4, 2, 3).astype(np.float32)
    stride, padding, dilation = 2, 1, 2
    out = S.conv_transpose(x, w, stride=stride, padding=padding, dilation=dilation)
    expected = np.empty_like(out)
    for co, o in itertools.product(range(out.shape[1]), range(out.shape[2])):
        acc = None
        for ci, k in itertools.product(range(4), range(3)):
            num = o + padding - k * dilation
            if num % stride == 0 and 0 <= num // stride < 3:
                term = x[0, ci, num // stride] * w[ci, co, k]
                acc = term if acc is None else acc + term
        expected[0, co, o] = np.float32(0) if acc is None else acc
    assert_array_equal(out, expected)


# ------------------------------------------------------------------------------------ max_pool


@pytest.mark.parametrize("case", MAX_POOL_CASES, ids=_ids(MAX_POOL_CASES))
def test_max_pool_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(MAX_POOL, case, np.float64)


@pytest.mark.parametrize("case", MAX_POOL_CASES, ids=_ids(MAX_POOL_CASES))
def test_max_pool_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(MAX_POOL, case, np.float32)


@pytest.mark.parametrize("case", MAX_POOL_CASES, ids=_ids(MAX_POOL_CASES))
def test_max_pool_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(MAX_POOL, case)


@pytest.mark.parametrize("case", MAX_POOL_CASES, ids=_ids(MAX_POOL_CASES))
def test_max_pool_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(MAX_POOL, case)


INF = math.inf
NAN = math.nan


@pytest.mark.parametrize(
    ("values", "params", "expected_out", "expected_grad"),
    [
        # ties: the first maximum in window order takes the gradient (PyTorch CPU)
        (
            [1.0, 3.0, 3.0, 2.0, 3.0],
            {"kernel_size": 3, "stride": 1},
            [3.0, 3.0, 3.0],
            [0.0, 2.0, 1.0, 0.0, 0.0],
        ),
        # NaN propagates; the last NaN of the window is selected
        ([1.0, NAN, 3.0, NAN, 0.0], {"kernel_size": 5}, [NAN], [0.0, 0.0, 0.0, 1.0, 0.0]),
        # -inf inputs are real elements, padding never is
        (
            [-INF, -INF, 3.0],
            {"kernel_size": 2, "stride": 1, "padding": 1},
            [-INF, -INF, 3.0, 3.0],
            [2.0, 0.0, 2.0],
        ),
    ],
    ids=["ties-first-max", "nan", "minus-inf-inputs"],
)
def test_max_pool_selection_rule_matches_torch(
    values: list[float], params: dict[str, Any], expected_out: list[float], expected_grad: list[float]
) -> None:
    x = np.array([[values]])
    out = S.max_pool(x, **params)
    (dx,) = S.max_pool_vjp(np.ones_like(out), x, out=out, **params)
    assert_array_equal(out, [[expected_out]])
    assert_array_equal(dx, [[expected_grad]])
    xt = torch.tensor(x, requires_grad=True)
    ref = F.max_pool1d(xt, **params)
    ref.backward(torch.ones_like(ref))
    assert_array_equal(out, ref.detach().numpy())
    assert xt.grad is not None
    assert_array_equal(dx, xt.grad.numpy())


# ------------------------------------------------------------------------------------ avg_pool


@pytest.mark.parametrize("case", AVG_POOL_CASES, ids=_ids(AVG_POOL_CASES))
def test_avg_pool_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(AVG_POOL, case, np.float64)


@pytest.mark.parametrize("case", AVG_POOL_CASES, ids=_ids(AVG_POOL_CASES))
def test_avg_pool_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(AVG_POOL, case, np.float32)


@pytest.mark.parametrize("case", AVG_POOL_CASES, ids=_ids(AVG_POOL_CASES))
def test_avg_pool_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(AVG_POOL, case)


@pytest.mark.parametrize("case", AVG_POOL_CASES, ids=_ids(AVG_POOL_CASES))
def test_avg_pool_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(AVG_POOL, case)


def test_avg_pool_zero_padding_counts_in_divisor_hand_computed() -> None:
    x = np.array([[[1.0, 2.0, 3.0]]])
    out = S.avg_pool(x, kernel_size=2, stride=1, padding=1)
    assert_array_equal(out, [[[0.5, 1.5, 2.5, 1.5]]])
    (dx,) = S.avg_pool_vjp(np.ones_like(out), x, out=out, kernel_size=2, stride=1, padding=1)
    assert_array_equal(dx, [[[1.0, 1.0, 1.0]]])


def test_avg_pool_is_fixed_left_fold_float32() -> None:
    # window 1e8, 1, -1e8: the left fold gives (1e8 + 1) - 1e8 = 0 in float32, (1e8 - 1e8) + 1 gives 1;
    # the reversed fold also gives 0: test_avg_pool_value_is_a_row_major_left_fold_bitwise_float32
    # pins the order bit for bit
    x = np.array([[[1e8, 1.0, -1e8]]], dtype=np.float32)
    assert (x[0, 0, 0] + x[0, 0, 2]) + x[0, 0, 1] == np.float32(1.0)
    assert_array_equal(S.avg_pool(x, kernel_size=3), [[[0.0]]])


def _avg_pool_fold_oracle(
    x: Array, kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...], order: str = "row"
) -> Array:
    """avg_pool by scalar float32 folds: each window's values (zero padding included) added one at a
    time over the kernel offsets in row-major order (``order="row"``), in the reverse of that
    (``"reverse"``) or in column-major order (``"column"``), then divided by ``prod(kernel)``."""
    nd = len(kernel)
    xpad = np.pad(x, [(0, 0), (0, 0), *((p, p) for p in padding)])
    out_shape = tuple((xpad.shape[2 + d] - kernel[d]) // stride[d] + 1 for d in range(nd))
    offsets = list(itertools.product(*(range(k) for k in kernel)))
    if order == "reverse":
        offsets.reverse()
    elif order == "column":
        offsets = [k[::-1] for k in itertools.product(*(range(k) for k in kernel[::-1]))]
    count = np.float32(math.prod(kernel))
    out = np.empty((*x.shape[:2], *out_shape), dtype=np.float32)
    for n, c, *o in itertools.product(range(x.shape[0]), range(x.shape[1]), *(range(m) for m in out_shape)):
        terms = [xpad[(n, c, *(o[d] * stride[d] + k[d] for d in range(nd)))] for k in offsets]
        total = terms[0]
        for term in terms[1:]:
            total = total + term
        out[(n, c, *o)] = total / count
    return out


AVG_POOL_FOLD_CASES = [
    ((2, 2, 30), (3,), (3,), (0,)),
    ((2, 2, 9, 10), (2, 3), (1, 1), (1, 1)),
    ((1, 2, 5, 6, 5), (2, 3, 2), (1, 2, 1), (0, 1, 1)),
]


@pytest.mark.parametrize(
    ("shape", "kernel", "stride", "padding"), AVG_POOL_FOLD_CASES, ids=["1d", "2d-padded", "3d"]
)
def test_avg_pool_value_is_a_row_major_left_fold_bitwise_float32(
    shape: tuple[int, ...], kernel: tuple[int, ...], stride: tuple[int, ...], padding: tuple[int, ...]
) -> None:
    """The forward's ``fixed-left`` claim (review66 F4: the window sum in reverse kernel-offset order
    passed every other test): each window is a left fold over the kernel offsets in row-major order,
    divided by ``prod(kernel_size)``, bit for bit. The values span seven decades, so the reversed
    order (and for a 2-d or 3-d kernel the column-major order) gives other bits on this input."""
    rng = np.random.default_rng(64)
    x = (rng.standard_normal(shape) * 10.0 ** rng.integers(-3, 5, shape)).astype(np.float32)
    out = S.avg_pool(x, kernel_size=kernel, stride=stride, padding=padding)
    expected = _avg_pool_fold_oracle(x, kernel, stride, padding)
    assert out.dtype == np.float32 and out.shape == expected.shape
    assert_array_equal(out.view(np.uint32), expected.view(np.uint32))
    others = ["reverse"] + (["column"] if len(kernel) > 1 else [])
    for order in others:
        other = _avg_pool_fold_oracle(x, kernel, stride, padding, order)
        assert (other.view(np.uint32) != expected.view(np.uint32)).any(), f"{order} order gives the same bits"


# ----------------------------------------------------------------------------- smooth_max_pool


@pytest.mark.parametrize("case", SMOOTH_MAX_POOL_CASES, ids=_ids(SMOOTH_MAX_POOL_CASES))
def test_smooth_max_pool_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(SMOOTH_MAX_POOL, case, np.float64)


@pytest.mark.parametrize("case", SMOOTH_MAX_POOL_CASES, ids=_ids(SMOOTH_MAX_POOL_CASES))
def test_smooth_max_pool_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(SMOOTH_MAX_POOL, case, np.float32)


@pytest.mark.parametrize("case", SMOOTH_MAX_POOL_CASES, ids=_ids(SMOOTH_MAX_POOL_CASES))
def test_smooth_max_pool_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(SMOOTH_MAX_POOL, case)


@pytest.mark.parametrize("case", SMOOTH_MAX_POOL_CASES, ids=_ids(SMOOTH_MAX_POOL_CASES))
def test_smooth_max_pool_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(SMOOTH_MAX_POOL, case)


@pytest.mark.parametrize("beta", [10.0, -10.0, 50.0])
def test_smooth_max_pool_overflow_scale_matches_mpmath(beta: float) -> None:
    # beta * x reaches 5e5: exp(beta * x) overflows float64, the shifted computation must not.
    sign = 1.0 if beta > 0 else -1.0
    values = [sign * 1e4 + d for d in (0.0, 0.5, -1.25, -1.0, 2.0, 0.125, 0.0)]
    x = np.array([[values]])
    params: dict[str, Any] = {"beta": beta, "kernel_size": 3, "stride": 2, "padding": 1}
    out = S.smooth_max_pool(x, **params)
    (dx,) = S.smooth_max_pool_vjp(np.ones_like(out), x, out=out, **params)
    mpmath.mp.dps = 50
    padded = [None, *values, None]
    expected_out = []
    expected_dx = [mpmath.mpf(0)] * len(values)
    for start in range(0, len(padded) - 2, 2):
        window = [(i - 1, mpmath.mpf(padded[i])) for i in range(start, start + 3) if padded[i] is not None]
        total = mpmath.fsum(mpmath.exp(beta * v) for _, v in window)
        expected_out.append(mpmath.log(total) / beta)
        for i, v in window:
            expected_dx[i] += mpmath.exp(beta * v) / total
    assert np.all(np.isfinite(out)) and np.all(np.isfinite(dx))
    assert_allclose(out[0, 0], [float(v) for v in expected_out], rtol=1e-15, atol=0)
    assert_allclose(dx[0, 0], [float(v) for v in expected_dx], rtol=0, atol=1e-12)
    out32 = S.smooth_max_pool(x.astype(np.float32), **params)
    assert out32.dtype == np.float32
    assert_allclose(out32[0, 0], [float(v) for v in expected_out], rtol=1e-7, atol=0)


SMOOTH_INFINITE_ROWS = [  # windows of 2 (stride 2), one more of 3 with padding 1
    [math.inf, 0.0, -math.inf, -math.inf, -math.inf, 1.0, math.inf, math.inf],
    [-math.inf, math.inf, 2.0, -math.inf, math.nan, 0.0, math.inf, -math.inf],
    # finite elements whose exp(beta * v) overflows beside an infinite max or min (review17 F1)
    [800.0, math.inf, -800.0, -math.inf, math.inf, -800.0, 800.0, -math.inf],
]


@pytest.mark.parametrize("beta", [1.0, -1.0, 3.0])
@pytest.mark.parametrize("padding", [0, 1])
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
def test_smooth_max_pool_with_infinite_windows_matches_torch_logsumexp(
    beta: float, padding: int, dtype: type
) -> None:
    """A window holding ``+-inf`` has an infinite max or min: the value is the formula's
    ``log(sum(exp(beta * v))) / beta`` (``+-inf``, as ``torch.logsumexp`` gives), never the
    ``inf - inf = NaN`` of a naive shift; NaN still propagates. Gradients as torch autograd of
    the logsumexp composition (NaN where it gives NaN): 0 at a finite element beside the
    infinity even where its ``exp(beta * v)`` overflows (the weight was ``inf / inf = NaN``)."""
    x = np.array([SMOOTH_INFINITE_ROWS], dtype=dtype)
    params: dict[str, Any] = {"beta": beta, "kernel_size": 2 + padding, "stride": 2, "padding": padding}
    with np.errstate(all="raise"):  # the kernel keeps numpy quiet on these inputs
        out = S.smooth_max_pool(x, **params)
        g = np.ones_like(out)
        (dx,) = S.smooth_max_pool_vjp(g, x, out=out, **params)
    tx = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    expected = _torch_smooth_max_pool(tx, **params)
    expected.backward(torch.ones_like(expected))
    assert tx.grad is not None
    assert out.dtype == dtype and dx.dtype == dtype
    assert_allclose(out, expected.detach().numpy(), rtol=1e-6, atol=0)
    assert_allclose(dx, tx.grad.numpy(), rtol=1e-6, atol=1e-7)
    assert np.any(np.isinf(out)) and np.any(np.isfinite(out))  # the rows really exercise both


# ---------------------------------------------------------------------------------- layer_norm


@pytest.mark.parametrize("case", LAYER_NORM_CASES, ids=_ids(LAYER_NORM_CASES))
def test_layer_norm_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(LAYER_NORM, case, np.float64)


@pytest.mark.parametrize("case", LAYER_NORM_CASES, ids=_ids(LAYER_NORM_CASES))
def test_layer_norm_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(LAYER_NORM, case, np.float32)


@pytest.mark.parametrize("case", LAYER_NORM_CASES, ids=_ids(LAYER_NORM_CASES))
def test_layer_norm_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(LAYER_NORM, case)


@pytest.mark.parametrize("case", LAYER_NORM_CASES, ids=_ids(LAYER_NORM_CASES))
def test_layer_norm_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(LAYER_NORM, case)


def test_layer_norm_value_hand_computed() -> None:
    # mean 2.5, biased variance 1.25 over [1, 2, 3, 4]
    x = np.array([[1.0, 2.0, 3.0, 4.0]])
    expected = (x - 2.5) / math.sqrt(1.25 + 1e-5)
    assert_allclose(S.layer_norm(x), expected, rtol=1e-15, atol=1e-15)


def _overflowing_rows() -> Array:
    """float32 rows whose sum of squared deviations overflows float32 (``|x - mean|`` beyond
    ~1.8e19) while every deviation is finite, and one ordinary row."""
    x = _normal(31, 4, 6)
    x[0, 2] = 1e30
    x[1, :3] = (3e38, -3e38, 1e20)
    x[2] *= 1e25
    return x.astype(np.float32)


def test_layer_norm_where_the_variance_overflows_matches_torch_float64() -> None:
    """The float32 sum of squares overflows: the reference rescales by a power of two (it gave the
    bias and zero gradients: 1/sqrt(inf) = 0; torch float32 gives NaN). Oracle: torch float64 on
    the same float32 values, where nothing overflows."""
    x = _overflowing_rows()
    weight, bias = _normal(32, 6).astype(np.float32), _normal(33, 6).astype(np.float32)
    out = S.layer_norm(x, weight, bias)
    g = _cotangent(x.shape).astype(np.float32)
    dx, dweight, dbias = S.layer_norm_vjp(g, x, weight, bias, out=out)
    leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in (x, weight, bias)]
    want = F.layer_norm(leaves[0], (6,), leaves[1], leaves[2], eps=1e-5)
    want.backward(torch.from_numpy(g.astype(np.float64)))
    assert out.dtype == np.float32 and np.isfinite(out).all()
    assert_allclose(out, want.detach().numpy(), rtol=1e-5, atol=1e-5)
    for mine, grad in zip((dx, dweight, dbias), leaves, strict=True):
        assert grad.grad is not None and mine is not None
        scale = np.abs(grad.grad.numpy()).max(axis=-1, keepdims=True)
        assert_allclose(mine / scale, grad.grad.numpy() / scale, rtol=0, atol=1e-5)


def test_layer_norm_where_the_float64_variance_overflows_matches_mpmath() -> None:
    x = np.array([[1e300, -1.0, 2.5e299], [-1e200, 0.0, 1e200]])
    out = S.layer_norm(x, eps=1e-5)
    with mpmath.workdps(50):
        for row, got in zip(x, out, strict=True):
            values = [mpmath.mpf(float(v)) for v in row]
            mean = mpmath.fsum(values) / len(values)
            var = mpmath.fsum((v - mean) ** 2 for v in values) / len(values)
            want = [float((v - mean) / mpmath.sqrt(var + mpmath.mpf(1e-5))) for v in values]
            assert_allclose(got, want, rtol=1e-14, atol=1e-14)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("n", [3, 5, 7])  # not powers of two: n * v / n can round
def test_a_group_of_equal_values_normalises_to_zero_at_every_magnitude(dtype: Any, n: int) -> None:
    """Equal values have variance 0: the output is the bias, the input gradient
    ``(g*w - mean(g*w)) / sqrt(eps)`` and the weight gradient 0. The left-fold mean of equal
    values can be off by a rounding (``3 * v / 3 != v``), which made every deviation equal and
    nonzero: outputs up to ±1 from ~1e3 on in float32, and from 1.5e26 once the squares overflow.
    Oracles: by hand, torch float64 on a value whose float64 mean is exact (3.0)."""
    rng = np.random.default_rng(8 + n)
    top = math.log(float(np.finfo(dtype).max) / 8)
    values = np.exp(rng.uniform(math.log(1e3), top, 200)).astype(dtype)
    weight, bias = np.arange(2, 2 + n).astype(dtype), np.arange(5, 5 + n).astype(dtype)
    for value in values:
        x = np.full((2, n), value, dtype=dtype)
        assert_array_equal(S.layer_norm(x, weight, bias), np.broadcast_to(bias, (2, n)))
    g = rng.standard_normal((2, n)).astype(dtype)
    x = np.full((2, n), values[-1], dtype=dtype)
    out = S.layer_norm(x, weight, bias)
    dx, dweight, dbias = S.layer_norm_vjp(g, x, weight, bias, out=out)
    leaves = [
        torch.tensor(np.full((2, n), 3.0), requires_grad=True),
        torch.tensor(weight.astype(np.float64), requires_grad=True),
    ]
    want = F.layer_norm(leaves[0], (n,), leaves[1], torch.tensor(bias.astype(np.float64)), eps=1e-5)
    want.backward(torch.from_numpy(g.astype(np.float64)))
    tolerance = 1e-5 if dtype == np.float32 else 1e-12
    assert leaves[0].grad is not None and leaves[1].grad is not None
    assert_allclose(dx, leaves[0].grad.numpy(), rtol=tolerance, atol=tolerance)
    assert_array_equal(dweight, np.zeros(n))
    assert_allclose(dbias, g.astype(np.float64).sum(axis=0), rtol=tolerance)
    for value in values[:20]:
        batch = np.full((3, 2, n), value, dtype=dtype)
        assert_array_equal(S.batch_norm(batch, None, None, None, None, training=True), np.zeros((3, 2, n)))


def test_layer_norm_where_the_sum_itself_overflows_matches_torch_float64() -> None:
    """float32 rows whose left-fold sum overflows (``3e38 + 2e38``): the mean was inf and the row
    NaN; now normalised from the scaled row. Oracle: torch float64 on the same values."""
    x = np.array([[3e38, 2e38, 1e38, -5e37], [2e38, 2e38, 2e38, 2e38], [1.0, 2.0, 3.0, 4.0]], np.float32)
    g = _cotangent(x.shape).astype(np.float32)
    out = S.layer_norm(x)
    dx = S.layer_norm_vjp(g, x, out=out)[0]
    leaf = torch.tensor(x.astype(np.float64), requires_grad=True)
    want = F.layer_norm(leaf, (4,), eps=1e-5)
    want.backward(torch.from_numpy(g.astype(np.float64)))
    assert leaf.grad is not None and np.isfinite(out).all()
    assert_allclose(out, want.detach().numpy(), rtol=1e-5, atol=1e-6)
    scale = np.abs(leaf.grad.numpy()).max(axis=-1, keepdims=True)
    assert_allclose(dx / scale, leaf.grad.numpy() / scale, rtol=0, atol=1e-5)
    assert_array_equal(out[1], np.zeros(4))  # equal values


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_running_statistics_of_equal_values_are_exact(dtype: Any) -> None:
    """A channel of equal values updates the running mean with that value and the running
    variance with 0 (the left-fold mean was off by a rounding, the variance ~1e-11 in float32);
    torch agrees to its own rounding. Oracles: by hand, torch float64."""
    value = dtype(123456.789)
    x = np.full((3, 2, 5), value, dtype=dtype)
    mean, var = S.batch_norm_running_stats(x, np.zeros(2, dtype), np.ones(2, dtype), momentum=1.0)
    assert_array_equal(mean, np.full(2, value))
    assert_array_equal(var, np.zeros(2))
    tm, tv = torch.zeros(2, dtype=torch.float64), torch.ones(2, dtype=torch.float64)
    F.batch_norm(torch.tensor(x.astype(np.float64)), tm, tv, training=True, momentum=1.0)
    assert_allclose(mean, tm.numpy(), rtol=1e-7)
    assert_allclose(var, tv.numpy(), rtol=0, atol=1e-15)  # torch float64 itself gives ~2e-21 here


def test_batch_norm_where_the_variance_overflows_matches_torch_float64() -> None:
    x = _overflowing_rows().reshape(2, 2, 6).transpose(0, 2, 1).copy()  # channels of 12 values
    out = S.batch_norm(x, None, None, None, None, training=True)
    g = _cotangent(x.shape).astype(np.float32)
    dx = S.batch_norm_vjp(g, x, None, None, None, None, out=out, training=True)[0]
    leaf = torch.tensor(x, dtype=torch.float64, requires_grad=True)
    want = F.batch_norm(leaf, None, None, training=True, eps=1e-5)
    want.backward(torch.from_numpy(g.astype(np.float64)))
    assert leaf.grad is not None and np.isfinite(out).all()
    assert_allclose(out, want.detach().numpy(), rtol=1e-5, atol=1e-5)
    scale = np.abs(leaf.grad.numpy()).max(axis=(0, 2), keepdims=True)
    assert_allclose(dx / scale, leaf.grad.numpy() / scale, rtol=0, atol=1e-5)


# ---------------------------------------------------------------------------------- batch_norm


def test_eval_batch_norm_of_large_values_stays_finite_as_torchs() -> None:
    """review81 F1: eval mode normalised first and then multiplied by the weight, so ``xhat``
    overflowed (3e38 * rstd 2) and gave NaN (weight 0) or inf (weight 0.25) where the result is
    finite. Oracle: torch float64 on the same values, rounded to float32."""
    x = np.array([[3e38, 1.0], [1e38, -2.0]], np.float32)
    for first_weight in (0.0, 0.25):
        w = np.array([first_weight, 0.5], np.float32)
        b = np.array([-1.5, 0.25], np.float32)
        mean, var = np.zeros(2, np.float32), np.array([0.25, 1.0], np.float32)
        ours = S.batch_norm(x, w, b, mean, var, training=False)
        operands = (torch.tensor(a, dtype=torch.float64) for a in (x, mean, var, w, b))
        expected = F.batch_norm(*operands, training=False)
        assert np.isfinite(ours).all()
        assert_allclose(ours, expected.numpy().astype(np.float32), rtol=2e-7, atol=0)


@pytest.mark.parametrize("case", BATCH_NORM_CASES, ids=_ids(BATCH_NORM_CASES))
def test_batch_norm_value_matches_torch_float64(case: Case) -> None:
    _value_matches_torch(BATCH_NORM, case, np.float64)


@pytest.mark.parametrize("case", BATCH_NORM_CASES, ids=_ids(BATCH_NORM_CASES))
def test_batch_norm_value_matches_torch_float32(case: Case) -> None:
    _value_matches_torch(BATCH_NORM, case, np.float32)


@pytest.mark.parametrize("case", BATCH_NORM_CASES, ids=_ids(BATCH_NORM_CASES))
def test_batch_norm_vjp_matches_torch_autograd(case: Case) -> None:
    _vjp_matches_torch(BATCH_NORM, case)


@pytest.mark.parametrize("case", BATCH_NORM_CASES, ids=_ids(BATCH_NORM_CASES))
def test_batch_norm_vjp_matches_finite_differences(case: Case) -> None:
    _vjp_matches_finite_differences(BATCH_NORM, case)


@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize("momentum", [0.1, 0.0, 1.0, 0.37])
def test_batch_norm_running_stats_match_torch(dtype: Any, momentum: float) -> None:
    x = _normal(140, 3, 2, 4).astype(dtype)
    mean, var = _normal(141, 2).astype(dtype), _positive(142, 2).astype(dtype)
    new_mean, new_var = S.batch_norm_running_stats(x, mean, var, momentum=momentum)
    ref_mean, ref_var = torch.tensor(mean), torch.tensor(var)
    F.batch_norm(torch.tensor(x), ref_mean, ref_var, training=True, momentum=momentum)
    assert new_mean.dtype == new_var.dtype == np.dtype(dtype)
    tol = 1e-12 if dtype == np.float64 else 1e-6
    assert_allclose(new_mean, ref_mean.numpy(), rtol=tol, atol=tol)
    assert_allclose(new_var, ref_var.numpy(), rtol=tol, atol=tol)
    assert_array_equal(mean, _normal(141, 2).astype(dtype))  # inputs untouched


def test_batch_norm_running_stats_use_unbiased_variance_hand_computed() -> None:
    x = np.array([[[1.0]], [[3.0]]])  # one channel, values 1 and 3: mean 2, unbiased variance 2
    new_mean, new_var = S.batch_norm_running_stats(x, np.zeros(1), np.ones(1), momentum=0.5)
    assert_array_equal(new_mean, [1.0])
    assert_array_equal(new_var, [1.5])


# ------------------------------------------------------------------- VJP dtype and cotangent


@pytest.mark.parametrize(
    ("op", "case"),
    [
        (CONV, CONV_CASES[1]),
        (CONV_TRANSPOSE, CONV_TRANSPOSE_CASES[1]),
        (MAX_POOL, MAX_POOL_CASES[1]),
        (AVG_POOL, AVG_POOL_CASES[1]),
        (SMOOTH_MAX_POOL, SMOOTH_MAX_POOL_CASES[2]),
        (LAYER_NORM, LAYER_NORM_CASES[1]),
        (BATCH_NORM, BATCH_NORM_CASES[0]),
    ],
    ids=lambda value: value.label if isinstance(value, Op) else value.name,
)
def test_spatial_vjp_float32_stays_float32_and_checks_cotangent(op: Op, case: Case) -> None:
    inputs = _cast(case.inputs, np.float32)
    out = op.forward(*inputs, **case.params)
    grads = op.vjp(np.ones_like(out), *inputs, out=out, **case.params)
    for grad, x in zip(grads, inputs, strict=True):
        if grad is not None:
            assert x is not None and grad.dtype == np.float32 and grad.shape == x.shape
    with pytest.raises(GuardError, match=re.escape(f"{op.label}: cotangent has shape")):
        op.vjp(np.ones((*out.shape, 1), dtype=np.float32), *inputs, out=out, **case.params)
    with pytest.raises(GuardError, match="cotangent has shape"):
        op.vjp(np.ones_like(out, dtype=np.float64), *inputs, out=out, **case.params)


# ------------------------------------------------------------------- geometry property tests


@st.composite
def _window_axis(draw: st.DrawFn, *, pool: bool, dilated: bool) -> tuple[int, int, int, int, int]:
    """(input, kernel, stride, padding, dilation) of one spatial axis with a non-empty output."""
    kernel = draw(st.integers(1, 3))
    stride = draw(st.integers(1, 3))
    dilation = draw(st.integers(1, 2)) if dilated else 1
    padding = draw(st.integers(0, kernel // 2 if pool else 2))
    smallest = max(1, dilation * (kernel - 1) + 1 - 2 * padding)
    if pool:  # input >= dilation: no window of padding only (refused by the max_pool guard)
        smallest = max(smallest, dilation)
    return smallest + draw(st.integers(0, 3)), kernel, stride, padding, dilation


@settings(max_examples=30, deadline=None)
@given(
    nd=st.integers(1, 3),
    data=st.data(),
    groups=st.integers(1, 2),
    c_in=st.integers(1, 2),
    c_out=st.integers(1, 2),
    batch=st.integers(1, 2),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv_geometry_property_matches_torch(
    nd: int, data: st.DataObject, groups: int, c_in: int, c_out: int, batch: int, bias: bool, seed: int
) -> None:
    axes = [data.draw(_window_axis(pool=False, dilated=True)) for _ in range(nd)]
    size, kernel, stride, padding, dilation = (tuple(a[i] for a in axes) for i in range(5))
    x = _normal(seed, batch, c_in * groups, *size)
    w = _normal(seed + 1, c_out * groups, c_in, *kernel)
    b = _normal(seed + 2, c_out * groups) if bias else None
    case = Case(
        "property", (x, w, b), {"stride": stride, "padding": padding, "dilation": dilation, "groups": groups}
    )
    _value_matches_torch(CONV, case, np.float64)
    _vjp_matches_torch(CONV, case)


@settings(max_examples=30, deadline=None)
@given(
    nd=st.integers(1, 3),
    data=st.data(),
    groups=st.integers(1, 2),
    c_in=st.integers(1, 2),
    c_out=st.integers(1, 2),
    batch=st.integers(1, 2),
    bias=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_conv_transpose_geometry_property_matches_torch(
    nd: int, data: st.DataObject, groups: int, c_in: int, c_out: int, batch: int, bias: bool, seed: int
) -> None:
    axes = []
    for _ in range(nd):
        size, kernel, stride = (
            data.draw(st.integers(1, 3)),
            data.draw(st.integers(1, 3)),
            data.draw(st.integers(1, 3)),
        )
        dilation, padding = data.draw(st.integers(1, 2)), data.draw(st.integers(0, 2))
        extra = data.draw(st.integers(0, max(stride, dilation) - 1))
        assume((size - 1) * stride - 2 * padding + dilation * (kernel - 1) + extra + 1 >= 1)
        axes.append((size, kernel, stride, padding, dilation, extra))
    size_t, kernel_t, stride_t, padding_t, dilation_t, extra_t = (tuple(a[i] for a in axes) for i in range(6))
    x = _normal(seed, batch, c_in * groups, *size_t)
    w = _normal(seed + 1, c_in * groups, c_out, *kernel_t)
    b = _normal(seed + 2, c_out * groups) if bias else None
    params = {
        "stride": stride_t,
        "padding": padding_t,
        "output_padding": extra_t,
        "dilation": dilation_t,
        "groups": groups,
    }
    case = Case("property", (x, w, b), params)
    _value_matches_torch(CONV_TRANSPOSE, case, np.float64)
    _vjp_matches_torch(CONV_TRANSPOSE, case)


@settings(max_examples=30, deadline=None)
@given(
    nd=st.integers(1, 3),
    data=st.data(),
    default_stride=st.booleans(),
    seed=st.integers(0, 2**16),
    beta=st.sampled_from([0.5, 3.0, -2.0]),
)
def test_max_pool_avg_pool_smooth_max_pool_geometry_property_matches_torch(
    nd: int, data: st.DataObject, default_stride: bool, seed: int, beta: float
) -> None:
    axes = [data.draw(_window_axis(pool=True, dilated=False)) for _ in range(nd)]
    size, kernel, stride, padding, _ = (tuple(a[i] for a in axes) for i in range(5))
    x = _normal(seed, 2, 2, *size)
    params: dict[str, Any] = {
        "kernel_size": kernel,
        "stride": None if default_stride else stride,
        "padding": padding,
    }
    for op, extra in ((AVG_POOL_PADDED, {}), (SMOOTH_MAX_POOL, {"beta": beta})):
        case = Case("property", (x,), {**params, **extra})
        if op is AVG_POOL_PADDED and nd == 3 and any(n < k for n, k in zip(size, kernel, strict=True)):
            # torch's avg_pool3d rule, the guard's: an unpadded extent below the kernel is refused
            with pytest.raises(GuardError, match=r"smaller than kernel_size .*functional.avg_pool3d"):
                op.forward(*case.inputs, **case.params)
            continue
        _value_matches_torch(op, case, np.float64)
        _vjp_matches_torch(op, case)
    dilated = [data.draw(_window_axis(pool=True, dilated=True)) for _ in range(nd)]
    size, kernel, stride, padding, dilation = (tuple(a[i] for a in dilated) for i in range(5))
    case = Case(
        "property",
        (_normal(seed + 1, 1, 2, *size),),
        {"kernel_size": kernel, "stride": stride, "padding": padding, "dilation": dilation},
    )
    _value_matches_torch(MAX_POOL, case, np.float64)
    _vjp_matches_torch(MAX_POOL, case)


# ---------------------------------------------------------------------------------------- guards

X2 = _normal(150, 2, 4, 5, 5)
W2 = _normal(151, 6, 2, 3, 3)
XT = _normal(152, 1, 4, 3)
WT = _normal(153, 4, 2, 3)
XP = _normal(154, 1, 2, 5)
BIG = 2**31 - 1  # the largest window parameter the guards accept (MAX_WINDOW_PARAMETER)

GUARD_CASES: list[tuple[str, Callable[[], object], str]] = [
    # conv
    ("conv-rank", lambda: S.conv(X2[0, 0], W2), "conv: x has rank 2 with shape (5, 5)"),
    (
        "conv-rank-4d-spatial",
        lambda: S.conv(np.ones((1, 1, 2, 2, 2, 2)), np.ones((1, 1, 1, 1, 1, 1))),
        "(accepted: rank 3, 4 or 5, i.e. (N, C, *spatial) with 1 to 3 spatial axes)",
    ),
    (
        "conv-weight-rank",
        lambda: S.conv(X2, W2[0]),
        "conv: w has rank 3 with shape (2, 3, 3) (accepted: rank 4",
    ),
    (
        "conv-groups-c-in",
        lambda: S.conv(X2, W2, groups=3),
        "conv: groups=3 does not divide the input channels C_in=4 (accepted: a divisor of C_in)",
    ),
    (
        "conv-groups-c-out",
        lambda: S.conv(X2, W2[:5], groups=2),
        "conv: groups=2 does not divide the output channels C_out=5 (accepted: a divisor of C_out)",
    ),
    (
        "conv-groups-zero",
        lambda: S.conv(X2, W2, groups=0),
        "conv: groups=0 is out of range (accepted: groups >= 1)",
    ),
    (
        "conv-weight-channels",
        lambda: S.conv(X2, W2, groups=1),
        "conv: w.shape[1]=2 does not match C_in/groups=4",
    ),
    (
        "conv-stride-zero",
        lambda: S.conv(X2, W2, stride=0, groups=2),
        "conv: stride=0 is out of range (accepted: stride >= 1 on every spatial axis)",
    ),
    (
        "conv-stride-negative",
        lambda: S.conv(X2, W2, stride=(1, -2), groups=2),
        "conv: stride=(1, -2) is out of range (accepted: stride >= 1 on every spatial axis)",
    ),
    (
        "conv-stride-length",
        lambda: S.conv(X2, W2, stride=(1, 1, 1), groups=2),
        "conv: stride=(1, 1, 1) is not accepted "
        "(accepted: an int or a sequence of 2 ints, one per spatial axis)",
    ),
    ("conv-stride-bool", lambda: S.conv(X2, W2, stride=True, groups=2), "conv: stride=True is not accepted"),
    (
        "conv-stride-float",
        lambda: S.conv(X2, W2, stride=(1, 1.5), groups=2),  # type: ignore[arg-type]
        "conv: stride=(1, 1.5) has a non-integer entry (accepted: ints >= 1)",
    ),
    (
        "conv-padding-negative",
        lambda: S.conv(X2, W2, padding=-1, groups=2),
        "conv: padding=-1 is out of range (accepted: padding >= 0 on every spatial axis)",
    ),
    (
        "conv-dilation-zero",
        lambda: S.conv(X2, W2, dilation=0, groups=2),
        "conv: dilation=0 is out of range (accepted: dilation >= 1 on every spatial axis)",
    ),
    (
        "conv-kernel-too-large",
        lambda: S.conv(X2, W2, dilation=3, groups=2),
        "conv: effective kernel size 7 (dilation*(kernel-1)+1) exceeds the padded input size 5 (input 5 + "
        "2*padding 0) on spatial axis 0, so the output would be empty",
    ),
    (
        "conv-dtype-mismatch",
        lambda: S.conv(X2, W2.astype(np.float32), groups=2),
        "conv: w has dtype float32 but x has dtype float64 (accepted: every operand in x's dtype",
    ),
    (
        "conv-int-dtype",
        lambda: S.conv(X2.astype(np.int64), W2, groups=2),
        "conv: x has dtype int64; accepted: float32 or float64",
    ),
    ("conv-not-array", lambda: S.conv([[[1.0]]], W2), "conv: x must be a numpy.ndarray"),  # type: ignore[arg-type]
    (
        "conv-bias-shape",
        lambda: S.conv(X2, W2, np.ones(5), groups=2),
        "conv: b has shape (5,) (accepted: (6,))",
    ),
    (  # review148 F2: the right element count in another rank (torch refuses it too)
        "conv-bias-rank",
        lambda: S.conv(X2, W2, np.ones((6, 1)), groups=2),
        "conv: b has shape (6, 1) (accepted: (6,))",
    ),
    (  # torch refuses an empty spatial axis unless the batch is empty (an empty batch is accepted)
        "conv-empty",
        lambda: S.conv(np.ones((2, 4, 0, 5)), W2, padding=1, groups=2),
        "conv: x has shape (2, 4, 0, 5) with an empty axis (accepted: C_in >= 1 and spatial extents "
        ">= 1 unless the batch N is 0, as PyTorch convolutions)",
    ),
    (
        "conv-overflow",
        lambda: S.conv(X2, W2, padding=BIG, groups=2),  # 2 * 4 * (2**32 + 3)**2 padded elements
        f"overflows int64 (accepted: at most {2**63 - 1} elements)",
    ),
    # conv_transpose
    (
        "conv_transpose-weight-channels",
        lambda: S.conv_transpose(XT, WT[:3]),
        "conv_transpose: w.shape[0]=3 does not match the input channels C_in=4 "
        "(accepted: w of shape (C_in, C_out/groups, *kernel))",
    ),
    (
        "conv_transpose-groups",
        lambda: S.conv_transpose(XT, WT, groups=3),
        "conv_transpose: groups=3 does not divide the input channels C_in=4",
    ),
    (
        "conv_transpose-output-padding",
        lambda: S.conv_transpose(XT, WT, stride=2, output_padding=2),
        "conv_transpose: output_padding=2 is out of range for stride=2 and dilation=1 "
        "(accepted: output_padding < max(stride, dilation) on every axis)",
    ),
    (
        "conv_transpose-empty-output",
        lambda: S.conv_transpose(XT[:, :, :1], WT[:, :, :1], padding=1),
        "conv_transpose: output size -1 on spatial axis 0 is empty",
    ),
    (
        "conv_transpose-stride-zero",
        lambda: S.conv_transpose(XT, WT, stride=0),
        "conv_transpose: stride=0 is out of range (accepted: stride >= 1 on every spatial axis)",
    ),
    (
        "conv_transpose-overflow",
        # one input position, so no 32-bit span (review203 F2); the dilation makes each axis BIG
        lambda: S.conv_transpose(np.ones((1, 4, 1, 1, 1)), np.ones((4, 2, 3, 3, 3)), dilation=BIG // 2),
        f"conv_transpose: output shape (1, 2, {BIG}, {BIG}, {BIG}) has {2 * BIG ** 3} elements, "
        "which overflows int64",
    ),
    (
        "conv_transpose-dtype",
        lambda: S.conv_transpose(XT.astype(np.float32), WT),
        "conv_transpose: w has dtype float64 but x has dtype float32",
    ),
    # pools
    (
        "max_pool-padding-half-kernel",
        lambda: S.max_pool(XP, kernel_size=3, padding=2),
        "max_pool: padding=2 is more than half of kernel_size=3 "
        "(accepted: padding <= kernel_size // 2 on every spatial axis, as PyTorch pools)",
    ),
    (
        "max_pool-kernel-too-large",
        lambda: S.max_pool(XP, kernel_size=6),
        "max_pool: effective kernel size 6 (dilation*(kernel-1)+1) exceeds the padded input size 5",
    ),
    (
        "max_pool-padding-only-window",
        lambda: S.max_pool(np.ones((1, 1, 3)), kernel_size=2, stride=1, padding=1, dilation=4),
        "max_pool: window 0 on spatial axis 0 covers only padding (input size 3, kernel 2, dilation 4, "
        "padding 1) (accepted: geometries where every window reads an input element)",
    ),
    (
        "max_pool-dilation-zero",
        lambda: S.max_pool(XP, kernel_size=2, dilation=0),
        "max_pool: dilation=0 is out of range (accepted: dilation >= 1 on every spatial axis)",
    ),
    (
        "max_pool-stride-zero",
        lambda: S.max_pool(XP, kernel_size=2, stride=0),
        "max_pool: stride=0 is out of range",
    ),
    ("max_pool-rank", lambda: S.max_pool(XP[0], kernel_size=2), "max_pool: x has rank 2 with shape (2, 5)"),
    (
        "avg_pool-kernel-length",
        lambda: S.avg_pool(XP, kernel_size=(2, 2)),
        "avg_pool: kernel_size=(2, 2) is not accepted (accepted: an int or a sequence of 1 ints",
    ),
    (
        "avg_pool-kernel-zero",
        lambda: S.avg_pool(XP, kernel_size=0),
        "avg_pool: kernel_size=0 is out of range (accepted: kernel_size >= 1 on every spatial axis)",
    ),
    (
        "avg_pool-padding-negative",
        lambda: S.avg_pool(XP, kernel_size=2, padding=-1),
        "avg_pool: padding=-1 is out of range",
    ),
    (
        "avg_pool-overflow",
        lambda: S.avg_pool(np.ones((1, 3, 1, 1)), kernel_size=(BIG, BIG), padding=(BIG // 2, BIG // 2)),
        f"avg_pool: padded input shape (1, 3, {BIG}, {BIG}) has {3 * BIG**2} elements, which "
        "overflows int64",
    ),
    (
        "smooth_max_pool-beta-zero",
        lambda: S.smooth_max_pool(XP, beta=0.0, kernel_size=2),
        "smooth_max_pool: beta=0.0 is zero in float64 (accepted: a finite nonzero beta)",
    ),
    (
        "smooth_max_pool-beta-inf",
        lambda: S.smooth_max_pool(XP, beta=math.inf, kernel_size=2),
        "smooth_max_pool: beta=inf is not finite in float64 (accepted: a finite real number)",
    ),
    (
        "smooth_max_pool-beta-nan",
        lambda: S.smooth_max_pool(XP, beta=math.nan, kernel_size=2),
        "smooth_max_pool: beta=nan is not finite",
    ),
    (
        "smooth_max_pool-beta-underflows-float32",
        lambda: S.smooth_max_pool(XP.astype(np.float32), beta=1e-50, kernel_size=2),
        "smooth_max_pool: beta=1e-50 is zero in float32",
    ),
    (
        "smooth_max_pool-beta-overflows-float32",
        lambda: S.smooth_max_pool(XP.astype(np.float32), beta=1e50, kernel_size=2),
        "smooth_max_pool: beta=1e+50 is not finite in float32",
    ),
    (
        "smooth_max_pool-beta-bool",
        lambda: S.smooth_max_pool(XP, beta=True, kernel_size=2),
        "smooth_max_pool: beta must be a real number, got beta=True",
    ),
    (
        "smooth_max_pool-padding",
        lambda: S.smooth_max_pool(XP, beta=1.0, kernel_size=2, padding=2),
        "smooth_max_pool: padding=2 is more than half of kernel_size=2",
    ),
    # layer_norm
    (
        "layer_norm-normalized-ndim-zero",
        lambda: S.layer_norm(XP, normalized_ndim=0),
        "layer_norm: normalized_ndim=0 is out of range for x of shape (1, 2, 5) (accepted: an int in [1, 3])",
    ),
    (  # review236 F4: the accepted range was the empty [1, 0]
        "layer_norm-rank-0",
        lambda: S.layer_norm(np.array(2.0), normalized_ndim=1),
        "layer_norm: x has rank 0, shape () (accepted: rank >= 1; normalized_ndim counts x's trailing axes)",
    ),
    (
        "layer_norm-normalized-ndim-large",
        lambda: S.layer_norm(XP, normalized_ndim=4),
        "layer_norm: normalized_ndim=4 is out of range",
    ),
    (
        "layer_norm-weight-shape",
        lambda: S.layer_norm(XP, np.ones(4)),
        "layer_norm: weight has shape (4,) (accepted: (5,))",
    ),
    (  # review148 F2: the right element count in another rank
        "layer_norm-weight-rank",
        lambda: S.layer_norm(XP, np.ones((5, 1))),
        "layer_norm: weight has shape (5, 1) (accepted: (5,))",
    ),
    (
        "layer_norm-bias-dtype",
        lambda: S.layer_norm(XP, None, np.ones(5, dtype=np.float32)),
        "layer_norm: bias has dtype float32 but x has dtype float64",
    ),
    (
        "layer_norm-eps-negative",
        lambda: S.layer_norm(XP, eps=-1.0),
        "layer_norm: eps=-1.0 is negative (accepted: a finite eps >= 0)",
    ),
    ("layer_norm-eps-nan", lambda: S.layer_norm(XP, eps=math.nan), "layer_norm: eps=nan is not finite"),
    # batch_norm
    (
        "batch_norm-rank",
        lambda: S.batch_norm(np.ones(3), None, None, None, None, training=True),
        "batch_norm: x has rank 1 with shape (3,) (accepted: rank >= 2, (N, C, *spatial))",
    ),
    (
        "batch_norm-eval-needs-running-stats",
        lambda: S.batch_norm(XP, None, None, np.zeros(2), None, training=False),
        "batch_norm: eval mode (training=False) normalises with the running statistics, "
        "got running_mean=given, running_var=None (accepted: both given, of shape (2,))",
    ),
    (
        "batch_norm-one-value-per-channel",
        lambda: S.batch_norm(np.ones((1, 3)), None, None, None, None, training=True),
        "batch_norm: batch statistics of x with shape (1, 3) have 1 value per channel "
        "(accepted: N * prod(spatial) >= 2 values per channel, or 0 for an empty batch, as PyTorch "
        "in training)",
    ),
    (
        "batch_norm-training-not-bool",
        lambda: S.batch_norm(XP, None, None, None, None, training=1),  # type: ignore[arg-type]
        "batch_norm: training must be a bool, got training=1",
    ),
    (
        "batch_norm-weight-shape",
        lambda: S.batch_norm(XP, np.ones(3), None, None, None, training=True),
        "batch_norm: weight has shape (3,) (accepted: (2,))",
    ),
    (  # review148 F2: the right element count in another rank
        "batch_norm-weight-rank",
        lambda: S.batch_norm(XP, np.ones((1, 2)), None, None, None, training=True),
        "batch_norm: weight has shape (1, 2) (accepted: (2,))",
    ),
    (
        "batch_norm-running-mean-rank",
        lambda: S.batch_norm(XP, None, None, np.zeros((2, 1)), np.ones(2), training=False),
        "batch_norm: running_mean has shape (2, 1) (accepted: (2,))",
    ),
    (
        "batch_norm-running-dtype",
        lambda: S.batch_norm(XP, None, None, np.zeros(2, np.float32), np.ones(2), training=False),
        "batch_norm: running_mean has dtype float32 but x has dtype float64",
    ),
    (
        "batch_norm-eps-inf",
        lambda: S.batch_norm(XP, None, None, None, None, training=True, eps=math.inf),
        "batch_norm: eps=inf is not finite",
    ),
    (
        "batch_norm-eps-zero-training",
        lambda: S.batch_norm(XP, None, None, None, None, training=True, eps=0),
        "batch_norm: eps=0.0 is not positive in training (accepted: eps > 0 in training, as PyTorch",
    ),
    (
        "batch_norm-momentum-range",
        lambda: S.batch_norm_running_stats(XP, np.zeros(2), np.ones(2), momentum=1.5),
        "batch_norm: momentum=1.5 is out of range (accepted: 0 <= momentum <= 1)",
    ),
    (
        "batch_norm-running-stats-missing",
        lambda: S.batch_norm_running_stats(XP, np.zeros(2), None, momentum=0.1),  # type: ignore[arg-type]
        "batch_norm: the running-statistics update needs running_mean and running_var (accepted: arrays)",
    ),
    (
        "batch_norm-running-stats-one-value",
        lambda: S.batch_norm_running_stats(np.ones((1, 2)), np.zeros(2), np.ones(2)),
        "batch_norm: batch statistics of x with shape (1, 2) have 1 value per channel",
    ),
]


@pytest.mark.parametrize(("call", "message"), [c[1:] for c in GUARD_CASES], ids=[c[0] for c in GUARD_CASES])
def test_spatial_guard_refuses_with_message(call: Callable[[], object], message: str) -> None:
    """Each guard case id starts with the op label; the message names the value and the accepted range."""
    with pytest.raises(GuardError, match=re.escape(message)):
        call()


WRONG_KIND_CASES = {
    "conv-stride-bool", "conv-stride-float", "smooth_max_pool-beta-bool", "batch_norm-training-not-bool"
}


@pytest.mark.parametrize(("case_id", "call"), [c[:2] for c in GUARD_CASES], ids=[c[0] for c in GUARD_CASES])
def test_a_parameter_of_the_wrong_kind_is_also_a_type_error(case_id: str, call: Callable[[], object]) -> None:
    """A float or bool where an int (or real number, or flag) is meant raises ``GuardTypeError``
    (a GuardError and a TypeError, as ``TensorTypeError`` before dispatch); a value of the right
    kind out of range stays a plain GuardError (a ValueError)."""
    with pytest.raises(GuardError) as caught:
        call()
    assert isinstance(caught.value, TypeError) == (case_id in WRONG_KIND_CASES)
    assert isinstance(caught.value, GuardTypeError) == (case_id in WRONG_KIND_CASES)


def test_spatial_guards_cover_every_op_label() -> None:
    labels = {"layer_norm", "batch_norm", "conv", "conv_transpose", "max_pool", "smooth_max_pool", "avg_pool"}
    covered = {case_id.split("-")[0] for case_id, _, _ in GUARD_CASES}
    assert covered == labels


def test_sign_of_zero_conv_folds_from_the_first_term_conv_transpose_scatters_onto_plus_zero() -> None:
    """reference/_fold.py: a conv entry is a left fold from its first term, so two ``-0.0`` terms
    give ``-0.0``; conv_transpose (forward) and conv's input gradient scatter their terms onto a
    ``+0.0`` canvas, so the same terms give ``+0.0`` there, as in torch (hand-computed: the terms
    are ``1 * -0.0``)."""
    x = np.ones((1, 1, 3), np.float32)
    w = np.full((1, 1, 2), -0.0, np.float32)
    folded = S.conv(x, w, None)
    assert folded.shape == (1, 1, 2) and np.all(folded == 0) and np.all(np.signbit(folded))
    scattered = S.conv_transpose(x, w, None)
    assert scattered.shape == (1, 1, 4) and np.all(scattered == 0) and not np.any(np.signbit(scattered))
    expected = F.conv_transpose1d(torch.from_numpy(x), torch.from_numpy(w)).numpy()
    assert_array_equal(np.signbit(scattered), np.signbit(expected))
    g = np.ones((1, 1, 2), np.float32)
    dx = S.conv_vjp(g, x, w, None, out=folded)[0]
    assert dx is not None and np.all(dx == 0) and not np.any(np.signbit(dx))


def test_a_pool_window_of_one_axis_too_many_names_the_missing_batch_axis() -> None:
    """review109 F4: torch's ``F.max_pool2d(img, 2)`` on an unbatched ``(C, H, W)`` image; here
    the rank gives the spatial axes, so a 2-d window on a rank-3 input is refused with the way."""
    image = tl.tensor(np.arange(32.0).reshape(2, 4, 4))
    for pool in (tl.max_pool, tl.avg_pool):
        with pytest.raises(GuardError, match=re.escape(
            "an input of rank 3 is read as (N, C) and 1 spatial axis, with no unbatched form: for one "
            "unbatched sample, add a batch axis (x[None])"
        )):
            pool(image, (2, 2))
    batched = tl.max_pool(tl.tensor(np.arange(32.0).reshape(1, 2, 4, 4)), (2, 2))
    expected = F.max_pool2d(torch.arange(32.0, dtype=torch.float64).reshape(2, 4, 4), 2)  # torch, unbatched
    np.testing.assert_array_equal(batched.numpy()[0], expected.numpy())


def test_float32_batch_norm_far_from_zero_has_the_error_the_readme_states() -> None:
    """review109 F3: the left-fold mean's error, divided by the standard deviation, against torch
    float64 (the README's figures: 6.8e-5 for raw pixels, torch float32 1.3e-7)."""
    x = np.random.default_rng(5).uniform(0, 255, (256, 3, 32, 32)).astype(np.float32)
    oracle = F.batch_norm(torch.tensor(x, dtype=torch.float64), None, None, training=True).numpy()
    error = float(np.abs(S.batch_norm(x, None, None, None, None, training=True) - oracle).max())
    in_torch = F.batch_norm(torch.tensor(x), None, None, training=True).numpy()
    torch_error = float(np.abs(in_torch - oracle).max())  # its order depends on torch's kernel here
    assert 6.7e-5 < error < 6.9e-5 and torch_error < 1e-6  # the left fold: deterministic, IEEE adds


@pytest.mark.parametrize(
    ("op", "keywords", "out_extent"),
    [
        ("conv", {"stride": 2**23, "padding": 2**24}, 5),  # (3 + 2*2**24 - 2) // 2**23 + 1
        # (3 - 1)*2**24 - 2*(2**24 - 1) + 1*(2 - 1) + 0 + 1
        ("conv_transpose", {"stride": 2**24, "padding": 2**24 - 1}, 4),
    ],
)
def test_conv_and_conv_transpose_memory_does_not_grow_with_the_padding(
    op: str, keywords: dict[str, int], out_extent: int
) -> None:
    """The padded input (conv, its VJP) and the padded canvas (conv_transpose, its VJP) were built
    in full: a padding of 2**30 on a 3-element input took 16 GiB. A padding of about 2**24 here
    (128 MiB of float64 when built) stays under 1 MiB; the values are torch's (float64 forward and
    autograd)."""
    x, w = np.arange(1.0, 4.0).reshape(1, 1, 3), np.array([[[2.0, -1.0]]])
    xt, wt = torch.tensor(x, requires_grad=True), torch.tensor(w, requires_grad=True)
    want = (F.conv1d if op == "conv" else F.conv_transpose1d)(xt, wt, **keywords)
    assert want.shape == (1, 1, out_extent)
    g = np.arange(1.0, out_extent + 1).reshape(1, 1, out_extent)
    want_dx, want_dw = torch.autograd.grad(want, (xt, wt), torch.from_numpy(g))
    forward, vjp = getattr(S, op), getattr(S, f"{op}_vjp")
    got, peak = traced_peak(lambda: forward(x, w, **keywords))
    assert peak < 2**20
    assert_array_equal(got, want.detach().numpy())
    (dx, dw, _), peak = traced_peak(lambda: vjp(g, x, w, out=got, **keywords))
    assert peak < 2**20
    assert_array_equal(dx, want_dx.numpy())
    assert_array_equal(dw, want_dw.numpy())


@pytest.mark.parametrize(
    ("op", "keywords"),
    [("conv", {"padding": 2**40}), ("conv_transpose", {"dilation": 2**30 - 1})],
)
def test_an_empty_batch_whose_output_numpy_cannot_lay_out_is_a_guard_error(
    op: str, keywords: dict[str, int]
) -> None:
    """review242 F3: the element count of an empty batch is 0, which the int64 count passed, and then
    numpy's bare ``ValueError: array is too big`` came from the kernel; the native CUDA guard refuses
    such a shape, so both CPU providers now do too (torch returns an empty tensor)."""
    x, w = np.zeros((0, 1, 1, 1, 1)), np.ones((1, 1, 3, 3, 3))
    for profile in ("checked_cpu", "fast_cpu"):
        with tl.session(profile=profile), pytest.raises(GuardError) as caught:
            getattr(tl, op)(tl.tensor(x), tl.tensor(w), **keywords)
        assert re.match(
            rf"^{op}: output shape \(0, 1, (\d+), \1, \1\) of 8-byte elements spans \d+ bytes .* which "
            r"overflows int64 \(accepted: at most 9223372036854775807 bytes\)$",
            str(caught.value),
        ), str(caught.value)


@pytest.mark.parametrize(
    ("x_shape", "w_shape", "keywords"),
    [
        ((0, 2, 0), (2, 1, 3), {"stride": 2, "padding": 1, "dilation": 2, "groups": 2}),
        ((0, 2, 0), (2, 2, 1),
         {"stride": 2, "padding": 3, "output_padding": 25, "dilation": 32, "groups": 2}),
        ((0, 6, 0, 5), (6, 2, 1, 1),
         {"stride": (3, 2), "padding": (4, 3), "output_padding": (56, 0), "dilation": (64, 3), "groups": 3}),
    ],
)
def test_conv_transpose_of_an_empty_batch_with_empty_axes_is_torchs(
    x_shape: tuple[int, ...], w_shape: tuple[int, ...], keywords: dict[str, Any]
) -> None:
    """An empty batch whose spatial axes are empty too raised numpy's ``ValueError`` from the padded
    canvas's crop when the padding exceeded the output (found by review242); it now gives torch's
    shape, and torch's dw (zeros) and db (zeros) from float64 autograd."""
    rng = np.random.default_rng(0)
    x, w = np.zeros(x_shape), rng.standard_normal(w_shape)
    b = rng.standard_normal(w_shape[1] * keywords["groups"])
    out = S.conv_transpose(x, w, b, **keywords)
    fn = F.conv_transpose1d if len(x_shape) == 3 else F.conv_transpose2d
    xt, wt, bt = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    want = fn(xt, wt, bt, **keywords)
    assert out.shape == tuple(want.shape)
    g = np.zeros(out.shape)
    dx, dw, db = S.conv_transpose_vjp(g, x, w, b, out=out, **keywords)
    want_dx, want_dw, want_db = torch.autograd.grad(want, (xt, wt, bt), torch.from_numpy(g))
    assert dx.shape == x_shape
    assert_array_equal(dx, want_dx.numpy())
    assert_array_equal(dw, want_dw.numpy())
    assert_array_equal(db, want_db.numpy())


_TAP_VALUES = S._tap_values


@pytest.mark.parametrize("op", ["max_pool", "avg_pool", "smooth_max_pool"])
def test_a_pool_reads_only_the_kernel_offsets_that_reach_the_input(
    op: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review243 F1: a pool walked every kernel offset, those reading only padding included: a kernel
    of 2**20 with a padding of 2**19 over one element took seconds (2**20 numpy rounds; minutes and
    GBs for ``smooth_max_pool`` at 2**22) where torch is instant. One offset reaches the input, and
    only it is read, forward and VJP; the values are torch's (float64 forward and autograd; the
    smooth max over one element is the element)."""
    calls = []
    monkeypatch.setattr(S, "_tap_values", lambda *args, **kw: calls.append(1) or _TAP_VALUES(*args, **kw))
    k = 2**20
    x, g = np.array([[[-1.5]]]), np.array([[[2.0]]])
    extra: dict[str, Any] = {"beta": 3.0} if op == "smooth_max_pool" else {}
    keywords: dict[str, Any] = {"kernel_size": k, "padding": k // 2, **extra}
    out = getattr(S, op)(x, **keywords)
    (dx,) = getattr(S, f"{op}_vjp")(g, x, out=out, **keywords)
    assert len(calls) <= 2
    xt = torch.tensor(x, requires_grad=True)
    if op == "smooth_max_pool":
        want = xt * 1.0  # one element in every window: (1/beta) * log(exp(beta * x)) = x
    else:
        pool = F.max_pool1d if op == "max_pool" else F.avg_pool1d
        want = pool(xt, kernel_size=k, stride=k, padding=k // 2)
    (want_dx,) = torch.autograd.grad(want, (xt,), torch.from_numpy(g))
    assert_array_equal(out, want.detach().numpy())
    assert_array_equal(dx, want_dx.numpy())
