"""Forward values of the ``reference`` kernels (non-spatial ops).

Oracles: PyTorch on the same inputs (float64 to 1e-10, float32 to 1e-5 relative), hand-computed
numbers and the golden outputs of anchor-runtime.md §5.2, and a pure-Python-int SplitMix64 with
published test vectors for the seeded random sources.  Each test name mentions its op label.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_allclose, assert_array_equal
from splitmix_oracle import M64, splitmix64_int

from torchlean.backend.errors import GuardError
from torchlean.backend.providers.reference import kernels as K

SUBJECT_PROVIDERS = ("reference",)
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

Array = np.ndarray[Any, Any]
DTYPES = [np.float64, np.float32]


def _rng(seed: int) -> np.random.Generator:
    return np.random.default_rng(seed)


def _close(ours: Array, ref: Array, dtype: Any) -> None:
    assert isinstance(ours, np.ndarray)
    assert ours.dtype == np.dtype(dtype)
    assert ours.shape == ref.shape
    if np.dtype(dtype) == np.float64:
        assert_allclose(ours, ref, rtol=1e-10, atol=1e-10)
    else:
        assert_allclose(ours, ref, rtol=1e-5, atol=1e-6)


def _vs_torch(
    kernel: Callable[..., Array],
    reference: Callable[..., torch.Tensor],
    arrays: list[Array],
    dtype: Any,
    **params: Any,
) -> Array:
    """Run the kernel and torch on the same inputs (float arrays cast to ``dtype``)."""
    cast = [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]
    ours = kernel(*cast, **params)
    ref = reference(*[torch.from_numpy(np.array(a, copy=True)) for a in cast]).numpy()
    _close(ours, ref, dtype)
    return ours


# ---------------------------------------------------------------------------- binary pointwise

BROADCAST_PAIRS = [((3, 4), (3, 4)), ((3, 1, 4), (2, 4)), ((), (2, 3)), ((1,), (0, 1))]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("sa", "sb"), BROADCAST_PAIRS)
def test_add_value_matches_torch_with_broadcasting(
    dtype: Any, sa: tuple[int, ...], sb: tuple[int, ...]
) -> None:
    r = _rng(1)
    _vs_torch(K.add, torch.add, [r.standard_normal(sa), r.standard_normal(sb)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("sa", "sb"), BROADCAST_PAIRS)
def test_sub_value_matches_torch_with_broadcasting(
    dtype: Any, sa: tuple[int, ...], sb: tuple[int, ...]
) -> None:
    r = _rng(2)
    _vs_torch(K.sub, torch.sub, [r.standard_normal(sa), r.standard_normal(sb)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("sa", "sb"), BROADCAST_PAIRS)
def test_mul_value_matches_torch_with_broadcasting(
    dtype: Any, sa: tuple[int, ...], sb: tuple[int, ...]
) -> None:
    r = _rng(3)
    _vs_torch(K.mul, torch.mul, [r.standard_normal(sa), r.standard_normal(sb)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_max_value_matches_torch_maximum_with_ties_and_nan(dtype: Any) -> None:
    a = np.array([[1.0, 2.0, np.nan], [-1.0, 0.0, 5.0]])
    b = np.array([3.0, 2.0, 1.0])
    _vs_torch(K.max, torch.maximum, [a, b], dtype)
    r = _rng(4)
    _vs_torch(K.max, torch.maximum, [r.standard_normal((2, 3, 1)), r.standard_normal((4,))], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_min_value_matches_torch_minimum_with_ties_and_nan(dtype: Any) -> None:
    a = np.array([[1.0, 2.0, np.nan], [-1.0, 0.0, 5.0]])
    b = np.array([3.0, 2.0, 1.0])
    _vs_torch(K.min, torch.minimum, [a, b], dtype)
    r = _rng(5)
    _vs_torch(K.min, torch.minimum, [r.standard_normal((2, 3, 1)), r.standard_normal((4,))], dtype)


# ----------------------------------------------------------------------------- unary pointwise

_X = np.array([[-3.5, -1.0, -0.25, 0.0], [0.25, 1.0, 2.5, 30.0]])
_POS = np.array([[1e-3, 0.5, 1.0], [2.0, 7.5, 123.0]])


@pytest.mark.parametrize("dtype", DTYPES)
def test_scale_value_matches_torch_mul_by_scalar(dtype: Any) -> None:
    _vs_torch(lambda x: K.scale(x, factor=-0.3), lambda t: torch.mul(t, -0.3), [_X], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_value_matches_torch(dtype: Any) -> None:
    x = np.append(_X.ravel(), np.nan)
    _vs_torch(lambda a: K.clamp(a, lo=-1.0, hi=2.5), lambda t: torch.clamp(t, -1.0, 2.5), [x], dtype)
    _vs_torch(lambda a: K.clamp(a, lo=-np.inf, hi=0.0), lambda t: torch.clamp(t, max=0.0), [x], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, 7, 64])  # torch's scalar and vectorised paths
def test_relu_and_clamp_keep_the_sign_of_zero_as_torch(dtype: Any, size: int) -> None:
    """``relu(-0.0)`` and ``clamp(-0.0, lo=0)`` are ``-0.0`` in torch on every path (x itself
    unless it is below the bound); the reference returned ``+0.0``."""
    zeros = np.tile([-0.0, 0.0], size).astype(dtype)
    t = torch.from_numpy(zeros)
    cases = [
        (K.relu(zeros), torch.relu(t)),
        (K.clamp(zeros, lo=0.0, hi=1.0), torch.clamp(t, 0.0, 1.0)),
        (K.clamp(zeros, lo=-1.0, hi=-0.0), torch.clamp(t, -1.0, -0.0)),
        (K.clamp(zeros, lo=0.0, hi=0.0), torch.clamp(t, 0.0, 0.0)),
    ]
    for got, want in cases:
        assert_array_equal(got, want.numpy())
        assert_array_equal(np.signbit(got), np.signbit(want.numpy()))
    assert np.signbit(K.relu(zeros)).tolist() == [True, False] * size  # by hand


UNARY: list[tuple[str, Callable[..., Array], Callable[..., torch.Tensor], Array]] = [
    ("abs", K.abs, torch.abs, _X),
    ("sqrt", K.sqrt, torch.sqrt, np.append(_POS.ravel(), 0.0)),
    ("relu", K.relu, torch.relu, _X),
    ("gelu", K.gelu, F.gelu, _X),
    ("sigmoid", K.sigmoid, torch.sigmoid, np.append(_X.ravel(), [-800.0, 800.0])),
    ("tanh", K.tanh, torch.tanh, _X),
    ("softplus", K.softplus, F.softplus, np.append(_X.ravel(), [-800.0, 800.0, 20.5])),
    ("exp", K.exp, torch.exp, _X[:, :3]),
    ("log", K.log, torch.log, _POS),
    ("sin", K.sin, torch.sin, _X),
    ("cos", K.cos, torch.cos, _X),
    ("inv", K.inv, torch.reciprocal, _POS),
]


def _unary(label: str, dtype: Any) -> None:
    (_, kernel, reference, x) = next(entry for entry in UNARY if entry[0] == label)
    _vs_torch(kernel, reference, [x], dtype)
    r = _rng(len(label))
    sample = (
        np.abs(r.standard_normal((3, 5))) + 0.1
        if label in ("sqrt", "log", "inv")
        else r.standard_normal((3, 5))
    )
    _vs_torch(kernel, reference, [sample], dtype)
    _vs_torch(kernel, reference, [sample[:0]], dtype)  # zero-size
    _vs_torch(kernel, reference, [np.array(sample[0, 0])], dtype)  # one element, rank 0


@pytest.mark.parametrize("dtype", DTYPES)
def test_abs_value_matches_torch(dtype: Any) -> None:
    _unary("abs", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sqrt_value_matches_torch(dtype: Any) -> None:
    _unary("sqrt", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_relu_value_matches_torch(dtype: Any) -> None:
    _unary("relu", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_gelu_value_matches_torch_exact_erf_gelu(dtype: Any) -> None:
    _unary("gelu", dtype)


def test_gelu_value_matches_mpmath_erf_definition() -> None:
    import mpmath

    mpmath.mp.dps = 40
    xs = np.array([-6.0, -2.0, -0.5, 1e-8, 0.3, 1.7, 4.0])
    expected = [float(mpmath.mpf(x) * (1 + mpmath.erf(mpmath.mpf(x) / mpmath.sqrt(2))) / 2) for x in xs]
    assert_allclose(K.gelu(xs), expected, rtol=1e-13, atol=1e-300)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sigmoid_value_matches_torch_and_is_stable(dtype: Any) -> None:
    _unary("sigmoid", dtype)
    assert_array_equal(K.sigmoid(np.array([-1e4, 1e4], dtype=dtype)), np.array([0.0, 1.0], dtype=dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_tanh_value_matches_torch(dtype: Any) -> None:
    _unary("tanh", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softplus_value_matches_torch_and_is_stable(dtype: Any) -> None:
    _unary("softplus", dtype)
    big = np.array([1e4], dtype=dtype)
    assert_array_equal(K.softplus(big), big)


@pytest.mark.parametrize("dtype", DTYPES)
def test_exp_value_matches_torch(dtype: Any) -> None:
    _unary("exp", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_log_value_matches_torch(dtype: Any) -> None:
    _unary("log", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sin_value_matches_torch(dtype: Any) -> None:
    _unary("sin", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_cos_value_matches_torch(dtype: Any) -> None:
    _unary("cos", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_inv_value_matches_torch_reciprocal(dtype: Any) -> None:
    _unary("inv", dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_safe_log_value_matches_torch_log_softplus_plus_eps(dtype: Any) -> None:
    x = np.append(_X.ravel(), [-50.0, -800.0])
    _vs_torch(lambda a: K.safe_log(a, eps=1e-6), lambda t: torch.log(F.softplus(t) + 1e-6), [x], dtype)
    assert np.isfinite(K.safe_log(np.array([-1e4], dtype=dtype), eps=1e-6)).all()


# ------------------------------------------------------------------------------------- softmax


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, 1, -1])
def test_softmax_value_matches_torch(dtype: Any, axis: int) -> None:
    x = _rng(6).standard_normal((3, 4, 5)) * 4
    _vs_torch(lambda a: K.softmax(a, axis=axis), lambda t: torch.softmax(t, axis), [x], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_softmax_value_edge_shapes_one_element_zero_size_and_large_scores(dtype: Any) -> None:
    assert_array_equal(K.softmax(np.array(3.0, dtype=dtype)), np.array(1.0, dtype=dtype))
    assert K.softmax(np.zeros((2, 0), dtype=dtype), axis=1).shape == (2, 0)
    assert K.softmax(np.zeros((0, 3), dtype=dtype), axis=1).shape == (0, 3)
    big = np.array([1000.0, 1000.0, -1000.0], dtype=dtype)
    assert_allclose(K.softmax(big), [0.5, 0.5, 0.0], atol=0)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("axis", [0, -1])
def test_log_softmax_value_matches_torch(dtype: Any, axis: int) -> None:
    x = _rng(7).standard_normal((4, 6)) * 30
    _vs_torch(lambda a: K.log_softmax(a, axis=axis), lambda t: torch.log_softmax(t, axis), [x], dtype)
    assert_array_equal(K.log_softmax(np.array(2.0, dtype=dtype)), np.array(0.0, dtype=dtype))


def _torch_hard_masked(t: torch.Tensor, m: torch.Tensor, axis: int) -> torch.Tensor:
    masked = torch.where(m, t, torch.tensor(float("-inf"), dtype=t.dtype))
    return torch.nan_to_num(torch.softmax(masked, axis), nan=0.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hard_masked_softmax_value_matches_torch_masked_fill(dtype: Any) -> None:
    r = _rng(8)
    x = r.standard_normal((2, 3, 5)) * 3
    mask = r.random((3, 5)) > 0.4
    mask[1] = False  # a fully blocked row
    ours = K.hard_masked_softmax(x.astype(dtype), mask)
    ref = _torch_hard_masked(torch.from_numpy(x.astype(dtype)), torch.from_numpy(mask), -1).numpy()
    _close(ours, ref, dtype)
    assert_array_equal(ours[:, 1], 0.0)
    assert_array_equal(ours[:, ~mask], 0.0)
    columns = r.random((4, 3)) > 0.5
    columns[:, 2] = False
    y = r.standard_normal((4, 3)).astype(dtype)
    ref0 = _torch_hard_masked(torch.from_numpy(y), torch.from_numpy(columns), 0).numpy()
    _close(K.hard_masked_softmax(y, columns, axis=0), ref0, dtype)


def test_hard_masked_softmax_value_golden_examples_of_the_guide() -> None:
    scores = np.array([[1.0, 2.0, 3.0], [0.5, 0.0, -0.5], [2.0, 2.0, 2.0]])
    causal = np.tril(np.ones((3, 3), dtype=bool))
    expected = [[1.0, 0.0, 0.0], [0.622459, 0.377541, 0.0], [0.333333, 0.333333, 0.333333]]
    assert_allclose(K.hard_masked_softmax(scores, causal), expected, atol=5e-7)
    assert_array_equal(K.hard_masked_softmax(scores, np.zeros((3, 3), dtype=bool)), np.zeros((3, 3)))
    sentinel = np.array([-5000.0, -1000.0])
    assert_array_equal(K.hard_masked_softmax(sentinel, np.array([True, False])), [1.0, 0.0])
    rows = np.array([[1.0, 2.0, 3.0], [1.0, 2.0, 3.0]])
    masks = np.array([[True, True, False], [False, False, False]])
    assert_allclose(
        K.hard_masked_softmax(rows, masks), [[0.268941, 0.731059, 0.0], [0.0, 0.0, 0.0]], atol=5e-7
    )
    assert_array_equal(K.hard_masked_softmax(np.array(4.0), np.array(True)), 1.0)
    assert_array_equal(K.hard_masked_softmax(np.array(4.0), np.array(False)), 0.0)


@pytest.mark.parametrize("dtype", DTYPES)
def test_hard_masked_softmax_value_nan_and_inf_at_blocked_positions_do_not_leak(dtype: Any) -> None:
    x = np.array([[1.0, np.nan, 2.0, np.inf], [np.nan, -np.inf, np.inf, np.nan]], dtype=dtype)
    mask = np.array([[True, False, True, False], [False, False, False, False]])
    out = K.hard_masked_softmax(x, mask)
    clean = K.hard_masked_softmax(np.where(mask, x, 0).astype(dtype), mask)
    assert_array_equal(out, clean)
    assert np.isfinite(out).all()
    assert_array_equal(out[1], 0.0)


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(np.float64, hnp.array_shapes(min_dims=2, max_dims=3, max_side=6), elements=st.floats(-50, 50)),
    st.data(),
)
def test_hard_masked_softmax_value_property_exact_zeros_and_unit_rows(x: Array, data: st.DataObject) -> None:
    mask = data.draw(hnp.arrays(np.bool_, x.shape))
    out = K.hard_masked_softmax(x, mask)
    assert (out[~mask] == 0.0).all()
    sums = out.sum(axis=-1)
    any_allowed = mask.any(axis=-1)
    assert_allclose(sums[any_allowed], 1.0, rtol=1e-12)
    assert (sums[~any_allowed] == 0.0).all()


@settings(max_examples=60, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=1, max_side=7),
        elements=st.floats(-80, 80, width=32),
    ),
)
def test_softmax_value_property_rows_sum_to_one(x: Array) -> None:
    out = K.softmax(x, axis=-1)
    assert out.dtype == np.float32
    assert ((out >= 0) & (out <= 1)).all()
    assert_allclose(out.astype(np.float64).sum(axis=-1), 1.0, rtol=1e-5)


# ---------------------------------------------------------------------------------- reductions


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    ("axis", "keepdims"), [(None, False), (0, False), (-1, True), ((0, 2), False), ((2, 0), True)]
)
def test_reduce_sum_value_matches_torch(dtype: Any, axis: Any, keepdims: bool) -> None:
    x = _rng(9).standard_normal((3, 4, 5))
    dim = tuple(range(3)) if axis is None else axis
    _vs_torch(
        lambda a: K.reduce_sum(a, axis=axis, keepdims=keepdims),
        lambda t: torch.sum(t, dim=dim, keepdim=keepdims),
        [x],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("axis", "keepdims"), [(None, False), (1, False), ((0, 1), True)])
def test_reduce_mean_value_matches_torch(dtype: Any, axis: Any, keepdims: bool) -> None:
    x = _rng(10).standard_normal((3, 4, 5))
    dim = tuple(range(3)) if axis is None else axis
    _vs_torch(
        lambda a: K.reduce_mean(a, axis=axis, keepdims=keepdims),
        lambda t: torch.mean(t, dim=dim, keepdim=keepdims),
        [x],
        dtype,
    )


def test_reduce_sum_and_reduce_mean_value_zero_size_and_one_element() -> None:
    empty = np.zeros((0, 3))
    assert_array_equal(K.reduce_sum(empty, axis=0), np.zeros(3))
    assert np.isnan(K.reduce_mean(empty, axis=0)).all()  # torch.mean over nothing is NaN
    assert K.reduce_sum(empty, axis=1).shape == (0,)
    one = np.array([[2.5]])
    assert_array_equal(K.reduce_sum(one), np.array(2.5))
    assert_array_equal(K.reduce_mean(one, axis=1, keepdims=True), one)
    scalar = np.array(1.25)
    assert_array_equal(K.reduce_sum(scalar), scalar)


@pytest.mark.parametrize("dtype", DTYPES)
def test_mse_loss_value_matches_torch(dtype: Any) -> None:
    r = _rng(11)
    out = _vs_torch(K.mse_loss, F.mse_loss, [r.standard_normal((4, 3)), r.standard_normal((4, 3))], dtype)
    assert out.shape == ()
    assert_array_equal(K.mse_loss(np.array([1.0, 2.0]), np.array([0.0, 4.0])), np.array(2.5))
    assert np.isnan(K.mse_loss(np.zeros(0, dtype=dtype), np.zeros(0, dtype=dtype)))


# --------------------------------------------------------------------------------------- views


@pytest.mark.parametrize("dtype", DTYPES)
def test_reshape_value_matches_torch_and_never_aliases(dtype: Any) -> None:
    x = _rng(12).standard_normal((2, 6)).astype(dtype)
    _vs_torch(lambda a: K.reshape(a, shape=(3, -1)), lambda t: t.reshape(3, -1), [x], dtype)
    out = K.reshape(x, shape=(12,))
    assert not np.shares_memory(out, x)
    assert K.reshape(np.zeros((0, 4), dtype=dtype), shape=(2, 0, 3)).shape == (2, 0, 3)


@pytest.mark.parametrize("dtype", DTYPES)
def test_permute_value_matches_torch(dtype: Any) -> None:
    x = _rng(13).standard_normal((2, 3, 4))
    out = _vs_torch(lambda a: K.permute(a, perm=(2, 0, -2)), lambda t: t.permute(2, 0, 1), [x], dtype)
    assert out.flags.c_contiguous


@pytest.mark.parametrize("dtype", DTYPES)
def test_broadcast_value_matches_torch_broadcast_to(dtype: Any) -> None:
    x = _rng(14).standard_normal((3, 1))
    _vs_torch(
        lambda a: K.broadcast(a, shape=(2, 3, 4)), lambda t: torch.broadcast_to(t, (2, 3, 4)), [x], dtype
    )
    assert K.broadcast(np.ones((1,), dtype=dtype), shape=(0,)).shape == (0,)


@pytest.mark.parametrize("dtype", DTYPES)
def test_concat_value_matches_torch_cat(dtype: Any) -> None:
    r = _rng(15)
    parts = [r.standard_normal((2, n, 3)) for n in (1, 0, 4)]
    _vs_torch(lambda *a: K.concat(*a, axis=1), lambda *t: torch.cat(t, dim=1), parts, dtype)
    _vs_torch(lambda a: K.concat(a, axis=-1), lambda t: torch.cat([t], dim=-1), parts[:1], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_slice_value_matches_torch_slicing(dtype: Any) -> None:
    x = _rng(16).standard_normal((5, 6))
    _vs_torch(
        lambda a: K.slice(a, starts=(1, 0), stops=(5, 6), steps=(2, 3)), lambda t: t[1:5:2, 0:6:3], [x], dtype
    )
    assert K.slice(x.astype(dtype), starts=(2, 2), stops=(2, 6)).shape == (0, 4)


def test_shape_ops_move_int64_data_exactly_as_torch() -> None:
    """reshape, permute, broadcast, concat and slice take int64 data (a label tensor sliced or
    stacked) and bool data (a mask), which move without arithmetic: equal to torch's results
    element for element, values near 2**62 included (a float round trip would change them);
    other dtypes stay refused (the shape ops' data role: float32, float64, int64 or bool)."""
    r = _rng(31)
    x = r.integers(-(2**62), 2**62, size=(2, 3, 4), dtype=np.int64)
    t = torch.from_numpy(x.copy())
    cases = [
        (K.reshape(x, shape=(4, -1)), t.reshape(4, -1)),
        (K.permute(x, perm=(2, 0, 1)), t.permute(2, 0, 1)),
        (K.broadcast(x[:, :1], shape=(5, 2, 3, 4)), torch.broadcast_to(t[:, :1], (5, 2, 3, 4))),
        (K.concat(x, x[:, :0], x[:, 1:], axis=1), torch.cat([t, t[:, :0], t[:, 1:]], dim=1)),
        (K.slice(x, starts=(0, 1, 0), stops=(2, 3, 4), steps=(1, 1, 3)), t[0:2, 1:3, 0:4:3]),
    ]
    for ours, ref in cases:
        assert ours.dtype == np.int64 and ours.flags.c_contiguous
        assert_array_equal(ours, ref.numpy())
    mask = x > 0  # a boolean mask moves the same way
    moved = K.permute(K.reshape(mask, shape=(4, -1)), perm=(1, 0))
    assert_array_equal(moved, (t > 0).reshape(4, -1).T.numpy())
    assert K.slice(mask, starts=(1, 0, 0), stops=(2, 3, 4)).dtype == np.bool_
    for bad in (x.astype(np.int32), np.ones(3, dtype=np.float16)):
        refused = f"reshape: input x has dtype {bad.dtype}; accepted: float32, float64, int64 or bool"
        with pytest.raises(GuardError, match=refused):
            K.reshape(bad, shape=(-1,))


@pytest.mark.parametrize("dtype", DTYPES)
def test_gather_value_matches_torch_gather(dtype: Any) -> None:
    r = _rng(17)
    x = r.standard_normal((3, 5, 4))
    index = r.integers(0, 5, size=(2, 7, 3)).astype(np.int64)
    _vs_torch(lambda a, i: K.gather(a, i, axis=1), lambda t, i: torch.gather(t, 1, i), [x, index], dtype)
    index0 = r.integers(0, 3, size=(3, 5, 4)).astype(np.int64)
    _vs_torch(lambda a, i: K.gather(a, i, axis=-3), lambda t, i: torch.gather(t, 0, i), [x, index0], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_scatter_add_value_matches_torch_with_repeated_indices(dtype: Any) -> None:
    r = _rng(18)
    base = r.standard_normal((3, 4))
    index = np.array([[0, 0, 3, 0, 1], [2, 2, 2, 1, 0]], dtype=np.int64)
    src = r.standard_normal((2, 6))
    _vs_torch(
        lambda b, i, s: K.scatter_add(b, i, s, axis=1),
        lambda b, i, s: torch.scatter_add(b, 1, i, s),
        [base, index, src],
        dtype,
    )
    index0 = np.array([[2, 0, 2, 2], [2, 1, 0, 2]], dtype=np.int64)
    _vs_torch(
        lambda b, i, s: K.scatter_add(b, i, s, axis=0),
        lambda b, i, s: torch.scatter_add(b, 0, i, s),
        [base, index0, r.standard_normal((2, 4))],
        dtype,
    )


def test_scatter_add_value_hand_computed_accumulation() -> None:
    base = np.array([10.0, 20.0, 30.0])
    index = np.array([2, 0, 2, 2], dtype=np.int64)
    src = np.array([1.0, 2.0, 3.0, 4.0])
    assert_array_equal(K.scatter_add(base, index, src, axis=0), [12.0, 20.0, 38.0])
    assert_array_equal(base, [10.0, 20.0, 30.0])  # base is not modified


# -------------------------------------------------------------------------------- contractions

MATMUL_SHAPES = [
    ((4,), (4,)),
    ((4,), (4, 3)),
    ((2, 4), (4,)),
    ((2, 4), (4, 3)),
    ((2, 1, 3, 4), (5, 4, 2)),
    ((3,), (2, 3, 5)),
    ((2, 3, 0), (0, 4)),
    ((1, 1), (1, 1)),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(("sa", "sb"), MATMUL_SHAPES)
def test_matmul_value_matches_torch_matmul(dtype: Any, sa: tuple[int, ...], sb: tuple[int, ...]) -> None:
    r = _rng(19)
    _vs_torch(K.matmul, torch.matmul, [r.standard_normal(sa), r.standard_normal(sb)], dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("x_shape", [(5,), (3, 5), (2, 3, 5), (0, 5)])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("features", [(5, 4), (0, 4), (5, 0)], ids=["5to4", "0to4", "5to0"])
def test_linear_value_matches_torch_linear(
    dtype: Any, x_shape: tuple[int, ...], bias: bool, features: tuple[int, int]
) -> None:
    """Zero input features give the bias alone (an empty left fold is +0); zero outputs an empty
    result."""
    r = _rng(20)
    n_in, n_out = features
    x = r.standard_normal((*x_shape[:-1], n_in))
    w, b = r.standard_normal((n_out, n_in)), r.standard_normal(n_out)
    if bias:
        _vs_torch(K.linear, F.linear, [x, w, b], dtype)
    else:
        _vs_torch(K.linear, F.linear, [x, w], dtype)


# ------------------------------------------------------------------------------ random sources


def test_rand_uniform_value_splitmix64_published_vectors() -> None:
    # SplitMix64 reference outputs (Vigna's splitmix64.c; state 1234567, and state 0).
    golden = 0x9E3779B97F4A7C15
    inputs = np.array([1234567, (1234567 + golden) & M64, 0], dtype=np.uint64)
    assert [int(v) for v in K.splitmix64(inputs)] == [
        6457827717110365317,
        3203168211198807973,
        0xE220A8397B1DCDAF,
    ]


@pytest.mark.parametrize("dtype", DTYPES)
def test_rand_uniform_value_matches_python_int_schedule(dtype: Any) -> None:
    seed, counter, shape = 2026, 7, (3, 4)
    key = splitmix64_int((seed + counter) & M64)
    assert K.key_of(seed, counter) == key
    expected = [(splitmix64_int((key + i) & M64) % (1 << 32)) / 2**32 for i in range(12)]
    out = K.rand_uniform(shape=shape, seed=seed, counter=counter, dtype=dtype)
    assert out.dtype == np.dtype(dtype) and out.shape == shape
    assert_array_equal(out, np.array(expected, dtype=np.float64).astype(dtype).reshape(shape))
    assert_array_equal(out, K.rand_uniform(shape=shape, seed=seed, counter=counter, dtype=dtype))
    assert not np.array_equal(out, K.rand_uniform(shape=shape, seed=seed, counter=counter + 1, dtype=dtype))
    assert ((out >= 0) & (out <= 1)).all()


def test_rand_uniform_value_large_seed_wraps_mod_2_64_and_empty_shape() -> None:
    big = (1 << 64) + 5
    assert_array_equal(
        K.rand_uniform(shape=(4,), seed=big, counter=0), K.rand_uniform(shape=(4,), seed=5, counter=0)
    )
    assert K.rand_uniform(shape=(0, 3), seed=1, counter=0).shape == (0, 3)
    assert K.rand_uniform(shape=(), seed=1, counter=0, dtype=np.float64).shape == ()


@pytest.mark.parametrize("dtype", DTYPES)
def test_bernoulli_mask_value_matches_python_int_schedule(dtype: Any) -> None:
    seed, counter, keep = 11, 3, 0.3
    key = splitmix64_int((seed + counter) & M64)
    draws = np.array([(splitmix64_int((key + i) & M64) % (1 << 32)) / 2**32 for i in range(200)]).astype(
        dtype
    )
    expected = (np.asarray(keep, dtype=dtype) > draws).astype(dtype)
    out = K.bernoulli_mask(shape=(10, 20), keep_prob=keep, seed=seed, counter=counter, dtype=dtype)
    assert out.dtype == np.dtype(dtype)
    assert_array_equal(out.ravel(), expected)
    assert set(np.unique(out)) <= {0.0, 1.0}
    assert_array_equal(K.bernoulli_mask(shape=(50,), keep_prob=0.0, seed=1, counter=0, dtype=dtype), 0.0)
    assert_array_equal(K.bernoulli_mask(shape=(50,), keep_prob=1.0, seed=1, counter=0, dtype=np.float64), 1.0)


def test_bernoulli_mask_keeps_only_draws_strictly_below_keep_prob() -> None:
    """Keep iff ``keep_prob > u`` (strict): a keep_prob equal to a draw drops that element
    (review20 mut K27: ``>=`` passed)."""
    u = K.rand_uniform(shape=(8,), seed=5, counter=2, dtype=np.float64)
    m = K.bernoulli_mask(shape=(8,), keep_prob=float(u[3]), seed=5, counter=2, dtype=np.float64)
    assert_array_equal(m, (u < u[3]).astype(np.float64))
    assert m[3] == 0.0
