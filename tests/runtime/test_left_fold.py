"""The reference kernels really are ``fixed-left`` (DESIGN.md §1.6).

Each test builds inputs on which numpy's own ``np.sum`` (pairwise summation in blocks of up to
128, eight interleaved accumulators inside a block) or ``@`` (BLAS) give *different bits* from a
left fold, and shows that the kernel equals an explicit Python left fold
``((x0 + x1) + x2) + ...`` in the same dtype, bit for bit.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from hypothesis.extra import numpy as hnp
from numpy.testing import assert_array_equal

from torchlean.backend.providers.reference import kernels as K
from torchlean.backend.providers.reference._fold import fold_sum, fold_sum_axes

Array = np.ndarray[Any, Any]


def _left_fold(values: Any, dtype: Any) -> Any:
    """Explicit left fold with numpy scalars of ``dtype`` (each addition rounded to ``dtype``)."""
    items = [np.dtype(dtype).type(v) for v in np.asarray(values).ravel()]
    if not items:
        return np.dtype(dtype).type(0)
    acc = items[0]
    for item in items[1:]:
        acc = acc + item
    return acc


def _cancelling_row(n: int) -> Array:
    row = np.zeros(n, dtype=np.float32)
    row[:4] = [1e8, 1.0, -1e8, 1.0]
    return row


def test_reduce_sum_left_fold_differs_from_numpy_pairwise_sum() -> None:
    for n in (16, 300):  # 16 > 8 starts the unrolled accumulators, 300 > 128 splits into blocks
        row = _cancelling_row(n)
        assert _left_fold(row, np.float32) == np.float32(1.0)
        assert np.sum(row) != np.float32(1.0)  # numpy: (1e8 + 1) and (-1e8 + 1) in separate lanes
        assert K.reduce_sum(row) == np.float32(1.0)
        assert K.reduce_mean(row) == np.float32(1.0) / np.float32(n)


def test_reduce_sum_left_fold_bitwise_on_long_random_rows() -> None:
    x = np.random.default_rng(0).standard_normal((20, 1000)).astype(np.float32) * 1000
    ours = K.reduce_sum(x, axis=1)
    expected = np.array([_left_fold(row, np.float32) for row in x])
    assert_array_equal(ours, expected)
    assert (ours != np.sum(x, axis=1)).any()


def test_reduce_sum_multi_axis_folds_in_row_major_order_of_reduced_elements() -> None:
    x = np.random.default_rng(1).standard_normal((3, 40, 5)).astype(np.float32) * 100
    ours = K.reduce_sum(x, axis=(2, 0))
    expected = np.array([_left_fold(x[:, j, :], np.float32) for j in range(40)])
    assert_array_equal(ours, expected)


def test_mse_loss_left_fold_differs_from_numpy_mean() -> None:
    big = np.ones(300, dtype=np.float32)
    big[0] = np.float32(1e4)  # squares: 1e8 then 299 ones, each absorbed by the running sum
    zero = np.zeros(300, dtype=np.float32)
    assert K.mse_loss(big, zero) == np.float32(1e8) / np.float32(300)
    assert np.mean(big * big) != K.mse_loss(big, zero)
    x = np.random.default_rng(2).standard_normal(2000).astype(np.float32) * 100
    y = np.random.default_rng(3).standard_normal(2000).astype(np.float32)
    r = x - y
    assert K.mse_loss(x, y) == _left_fold(r * r, np.float32) / np.float32(2000)
    assert K.mse_loss(x, y) != np.mean(r * r)


def test_softmax_and_log_softmax_denominators_are_left_folds() -> None:
    x = np.random.default_rng(4).standard_normal((6, 600)).astype(np.float32) * 3
    shifted = x - x.max(axis=1, keepdims=True)
    num = np.exp(shifted)
    den = np.array([_left_fold(row, np.float32) for row in num])[:, None]
    assert_array_equal(K.softmax(x, axis=1), num / den)
    assert (den[:, 0] != np.sum(num, axis=1)).any()
    assert_array_equal(K.log_softmax(x, axis=1), shifted - np.log(den))


def test_hard_masked_softmax_denominator_is_a_left_fold() -> None:
    rng = np.random.default_rng(5)
    x = rng.standard_normal((4, 500)).astype(np.float32)
    mask = rng.random((4, 500)) > 0.2
    allowed_max = np.where(mask, x, -np.inf).max(axis=1, keepdims=True)
    num = np.where(mask, np.exp(x - allowed_max), np.float32(0))
    den = np.array([_left_fold(row, np.float32) for row in num])[:, None]
    assert_array_equal(K.hard_masked_softmax(x, mask), num / den)


def test_matmul_left_fold_differs_from_blas() -> None:
    a = _cancelling_row(64)[None, :]
    b = np.ones((64, 1), dtype=np.float32)
    assert K.matmul(a, b)[0, 0] == np.float32(1.0)
    assert (a @ b)[0, 0] != np.float32(1.0)
    rng = np.random.default_rng(6)
    a = rng.standard_normal((8, 1000)).astype(np.float32)
    b = rng.standard_normal((1000, 8)).astype(np.float32)
    ours = K.matmul(a, b)
    expected = np.array([[_left_fold(a[i] * b[:, j], np.float32) for j in range(8)] for i in range(8)])
    assert_array_equal(ours, expected)
    assert (ours != a @ b).any()


def test_matmul_vjp_contractions_are_left_folds() -> None:
    rng = np.random.default_rng(7)
    a = rng.standard_normal((3, 200)).astype(np.float32)
    b = rng.standard_normal((200, 300)).astype(np.float32)
    out = K.matmul(a, b)
    g = rng.standard_normal(out.shape).astype(np.float32)
    da, db = K.matmul_vjp(g, a, b, out=out)
    assert da is not None and db is not None
    expected_da = np.array([[_left_fold(g[i] * b[k], np.float32) for k in range(200)] for i in range(3)])
    assert_array_equal(da, expected_da)
    assert (da != g @ b.T).any()


def test_matmul_vjp_over_a_broadcast_batch_is_one_left_fold_as_linear_and_reduce_sum() -> None:
    """review79 F2: ``b`` shared by a batch of 3: ``db`` is one left fold over ``(batch, row)`` in
    row-major order, the bits of ``linear``'s dW and ``reduce_sum`` on the same terms (it was a
    fold per batch item, then a fold of those: -16521388 where the others give -16521389). A
    partly broadcast batch ``(2, 3)`` against ``(1, 3)`` folds over ``(axis 0, row)`` for each
    kept index of axis 1; oracle: scalar left folds."""
    a = np.array([[-78686168.0, -44227.953125, -0.5497769117355347],
                  [94.01235961914062, 62698632.0, 1039939.4375],
                  [-1530236.125, -65.88624572753906, 637.6239013671875]], np.float32)[..., None]
    g = np.ones((3, 3, 1), np.float32)
    b = np.ones((1, 1), np.float32)
    _, db = K.matmul_vjp(g, a, b, out=K.matmul(a, b))
    _, dw, _ = K.linear_vjp(g.reshape(9, 1), a.reshape(9, 1), b, None, out=K.linear(a.reshape(9, 1), b))
    assert db is not None and dw is not None
    assert db[0, 0] == dw[0, 0] == K.reduce_sum(a)[()] == _left_fold(a, np.float32) == np.float32(-16521389.0)
    nested = _left_fold([_left_fold(a[i], np.float32) for i in range(3)], np.float32)
    assert nested != db[0, 0]  # the control: folding each batch item first gives other bits

    rng = np.random.default_rng(8)
    a = (rng.standard_normal((2, 3, 4, 5)) * 10.0 ** rng.uniform(-3, 3, (2, 3, 4, 5))).astype(np.float32)
    b = rng.standard_normal((1, 3, 5, 2)).astype(np.float32)
    out = K.matmul(a, b)
    g = rng.standard_normal(out.shape).astype(np.float32)
    da, db = K.matmul_vjp(g, a, b, out=out)
    assert da is not None and db is not None and db.shape == (1, 3, 5, 2)
    expected = np.array([[[[_left_fold([a[i, h, m, k] * g[i, h, m, n] for i in range(2) for m in range(4)],
                                       np.float32) for n in range(2)] for k in range(5)] for h in range(3)]])
    assert_array_equal(db, expected)
    expected_da = np.array([[[[_left_fold(g[i, h, m] * b[0, h, k], np.float32) for k in range(5)]
                              for m in range(4)] for h in range(3)] for i in range(2)])
    assert_array_equal(da, expected_da)


def test_linear_left_fold_then_bias() -> None:
    rng = np.random.default_rng(8)
    x = rng.standard_normal((4, 700)).astype(np.float32)
    w = rng.standard_normal((3, 700)).astype(np.float32)
    bias = rng.standard_normal(3).astype(np.float32)
    ours = K.linear(x, w, bias)
    expected = np.array([[_left_fold(x[r] * w[o], np.float32) + bias[o] for o in range(3)] for r in range(4)])
    assert_array_equal(ours, expected)
    assert (ours != x @ w.T + bias).any()


def test_add_vjp_broadcast_reduction_is_a_left_fold() -> None:
    g = np.zeros((300, 1), dtype=np.float32)
    g[:4, 0] = [1e8, 1.0, -1e8, 1.0]
    a = np.zeros((300, 1), dtype=np.float32)
    b = np.zeros((1,), dtype=np.float32)
    _, db = K.add_vjp(g, a, b, out=a + b)
    assert db is not None
    assert db[0] == np.float32(1.0)
    assert np.sum(g) != np.float32(1.0)


@pytest.mark.parametrize("op", ["sub", "mul", "max", "min"])
def test_binary_vjp_broadcast_reductions_are_left_folds(op: str) -> None:
    # the operand b broadcasts along 300 rows; its cotangent is the fold of those rows' terms
    g = np.zeros((300, 1), dtype=np.float32)
    g[:4, 0] = [1e8, 1.0, -1e8, 1.0]
    a = np.full((300, 1), 2.0 if op == "min" else -2.0, dtype=np.float32)  # b wins max/min
    b = np.ones((1,), dtype=np.float32)
    vjp = getattr(K, f"{op}_vjp")
    _, db = vjp(g, a, b, out=getattr(K, op)(a, b))
    terms = {"sub": -g, "mul": g * a, "max": g, "min": g}[op]
    assert db is not None
    assert db[0] == _left_fold(terms, np.float32)
    assert np.sum(terms) != db[0]  # numpy's pairwise order gives other bits here


def test_broadcast_vjp_is_a_left_fold() -> None:
    g = np.zeros((300, 2), dtype=np.float32)
    g[:4, 1] = [1e8, 1.0, -1e8, 1.0]
    x = np.zeros((1, 2), dtype=np.float32)
    (dx,) = K.broadcast_vjp(g, x, out=K.broadcast(x, shape=(300, 2)), shape=(300, 2))
    assert dx is not None
    assert_array_equal(dx, np.array([[0.0, 1.0]], dtype=np.float32))
    assert np.sum(g[:, 1]) != np.float32(1.0)


def test_scatter_add_repeated_indices_accumulate_in_index_order() -> None:
    base = np.zeros(2, dtype=np.float32)
    src = np.array([1e8, 1.0, -1e8, 1.0, 5.0], dtype=np.float32)
    index = np.array([0, 0, 0, 0, 1], dtype=np.int64)
    out = K.scatter_add(base, index, src, axis=0)
    assert out[0] == np.float32(1.0)  # ((0 + 1e8) + 1) - 1e8 + 1 in float32
    assert (np.float32(1e8) + np.float32(1.0)) + (np.float32(-1e8) + np.float32(1.0)) != out[0]
    x = np.zeros(2, dtype=np.float32)
    dx, _ = K.gather_vjp(src, x, index, out=K.gather(x, index, axis=0), axis=0)
    assert dx is not None and dx[0] == np.float32(1.0)


@settings(max_examples=80, deadline=None)
@given(
    hnp.arrays(
        np.float32,
        hnp.array_shapes(min_dims=1, max_dims=3, min_side=0, max_side=40),
        elements=st.floats(-1e6, 1e6, width=32),
    ),
    st.data(),
)
def test_reduce_sum_fold_sum_equals_python_left_fold_property(x: Array, data: st.DataObject) -> None:
    axis = data.draw(st.integers(0, x.ndim - 1))
    ours = fold_sum(x, axis)
    moved = np.moveaxis(x, axis, -1)
    expected = np.array(
        [_left_fold(moved[idx], np.float32) for idx in np.ndindex(*moved.shape[:-1])], dtype=np.float32
    ).reshape(moved.shape[:-1])
    assert ours.dtype == np.float32
    assert_array_equal(ours, expected)
    assert_array_equal(fold_sum_axes(x, ()), x)


@pytest.mark.parametrize("block_terms", [42, 42 * 8, 42 * 11, 1 << 20])
@pytest.mark.parametrize("masked", [False, True])
def test_fold_matmul_to_in_blocks_has_the_one_term_loops_bits(
    block_terms: int, masked: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review82 F7: the merged (batch, contracted) axis is folded in blocks by ``np.add.accumulate``
    over ``[sum, terms...]``. Oracle: the one-term loop (``_fold_matmul_loop``/``_where_loop`` on the
    same merged operands, which the scalar-fold tests pin), bit for bit: 42 terms per step of the
    15-term axis, so blocks of 8 (two blocks), 11 and all 15, and the one-term loop itself under
    8; with NaN at blocked positions and a fully blocked row."""
    from torchlean.backend.providers.reference import _fold

    monkeypatch.setattr(_fold, "BLOCK_TERMS", block_terms)
    rng = np.random.default_rng(9)
    a = (rng.standard_normal((5, 7, 2, 3)) * 10.0 ** rng.uniform(-4, 4, (5, 7, 2, 3))).astype(np.float32)
    b = rng.standard_normal((1, 7, 3, 3)).astype(np.float32)
    allowed = rng.random((5, 7, 2, 3)) > 0.3 if masked else None
    if allowed is not None:
        allowed[0, :, 1, :] = False
        a = np.where(allowed, a, np.float32(np.nan))
    got = _fold.fold_matmul_to((1, 7, 2, 3), a, b, allowed)
    left = np.transpose(a, (1, 2, 0, 3)).reshape(7, 2, 15)  # (kept, M, batch * K)
    right = np.transpose(np.broadcast_to(b, (5, 7, 3, 3)), (1, 0, 2, 3)).reshape(7, 15, 3)
    if allowed is None:  # the one-term loops (fold_matmul itself folds small results in blocks)
        expected = _fold._fold_matmul_loop(left, right)
    else:
        merged = np.transpose(allowed, (1, 2, 0, 3)).reshape(7, 2, 15)
        expected = _fold._fold_matmul_where_loop(left, right, merged)
    assert_array_equal(got.view(np.uint32), expected.reshape(1, 7, 2, 3).view(np.uint32))
