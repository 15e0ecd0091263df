"""Memory and Python-iteration bounds of the reference provider's random sources, sums and
contractions (review243 F7, F8, F9), with their bits pinned against formula oracles.

Memory is measured with tracemalloc (numpy reports its buffers to it), never with a clock;
iteration counts by counting calls. The block sizes are shrunk by monkeypatching so that the
inputs stay small while a full-size temporary would still exceed the bound many times over.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
from memory_trace import traced_peak
from numpy.testing import assert_array_equal
from splitmix_oracle import M64, splitmix64_int

from torchlean.backend.providers.reference import kernels as K

_MIB = 1 << 20

# ================================================================= F7: the seeded random sources


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("op", ["rand_uniform", "bernoulli_mask"])
def test_random_sources_peak_at_the_output_plus_one_block(
    op: str, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review243 F7: the draws were made as uint64 arrays of the full size (``arange``, then a new
    one per SplitMix64 step, then float64): about 6x a float32 output at the peak. They are now
    drawn into the preallocated output by blocks of ``SAMPLE_BLOCK`` indices (shrunk here to
    4096), so the peak is the output plus a few block-sized arrays."""
    monkeypatch.setattr(K, "SAMPLE_BLOCK", 4096, raising=False)
    shape = (64, 1 << 14)  # 1 Mi elements: 4 MiB of float32, 8 MiB of float64
    out_bytes = 64 * (1 << 14) * np.dtype(dtype).itemsize
    if op == "rand_uniform":
        out, peak = traced_peak(lambda: K.rand_uniform(shape=shape, seed=11, counter=3, dtype=dtype))
    else:
        out, peak = traced_peak(
            lambda: K.bernoulli_mask(shape=shape, keep_prob=0.25, seed=11, counter=3, dtype=dtype)
        )
    assert out.shape == shape and out.dtype == dtype
    assert peak < out_bytes + _MIB // 2, (peak, out_bytes)


def test_sample_nat_peaks_at_its_output_plus_one_block(monkeypatch: pytest.MonkeyPatch) -> None:
    """review243 F7: ``sample_nat`` fills its uint64 result block by block."""
    monkeypatch.setattr(K, "SAMPLE_BLOCK", 4096, raising=False)
    count = 1 << 20  # 8 MiB of uint64
    out, peak = traced_peak(lambda: K.sample_nat(12345, count))
    assert out.shape == (count,) and out.dtype == np.uint64
    assert peak < count * 8 + _MIB // 2, peak


@pytest.mark.parametrize("block", [1, 3, 4096, 1 << 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_random_sources_in_blocks_have_the_formulas_bits(
    block: int, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Blocks (of 1, of 3 so that the last one is short, and of one block for everything) give the
    formula's draws: ``sampleNat(keyOf(seed, counter), i) / 2**32`` rounded once to ``dtype``,
    with the key near 2**64 so that ``key + i`` wraps inside the output, and the mask
    ``keep_prob > u`` (strict) made of the same draws."""
    monkeypatch.setattr(K, "SAMPLE_BLOCK", block, raising=False)
    count = 37
    seed, counter = M64 - 40, 19  # seed + counter wraps past 2**64
    key = splitmix64_int((seed + counter) & M64)
    draws = [splitmix64_int((key + i) & M64) % (1 << 32) for i in range(count)]
    expected = (np.array(draws, dtype=np.float64) / 2**32).astype(dtype).reshape(1, count)
    got = K.rand_uniform(shape=(1, count), seed=seed, counter=counter, dtype=dtype)
    assert_array_equal(got.view(np.uint8), expected.view(np.uint8))
    keep = float(np.median(expected))
    mask = K.bernoulli_mask(shape=(1, count), keep_prob=keep, seed=seed, counter=counter, dtype=dtype)
    assert_array_equal(mask.view(np.uint8), (dtype(keep) > expected).astype(dtype).view(np.uint8))
    nats = K.sample_nat(key, count, 7)
    assert [int(v) for v in nats] == [splitmix64_int((key + i) & M64) % 7 for i in range(count)]
    for empty in [(0,), (3, 0)]:
        assert K.rand_uniform(shape=empty, seed=1, counter=2, dtype=dtype).shape == empty
    scalar = K.rand_uniform(shape=(), seed=seed, counter=counter, dtype=dtype)
    assert scalar.shape == () and scalar.tobytes() == expected[0, :1].tobytes()


def test_splitmix64_leaves_its_input_and_returns_a_fresh_array() -> None:
    """The in-place steps work on a copy: the caller's array is not mixed."""
    x = np.arange(5, dtype=np.uint64)
    out = K.splitmix64(x)
    assert_array_equal(x, np.arange(5, dtype=np.uint64))
    assert [int(v) for v in out] == [splitmix64_int(i) for i in range(5)]
    assert not np.shares_memory(out, x)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_session_random_ops_and_dropout_peak_near_their_outputs(
    profile: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review243 F7 through the public API: both CPU profiles run the reference sources (fast_cpu
    plans them to the reference capsules), so ``tl.rand_uniform`` and ``tl.bernoulli_mask`` peak at
    their output plus a block, and ``tl.dropout`` at its three graph arrays (the mask, ``x * mask``
    and the scaled result) plus a block; before, the draws alone took about 6x the output."""
    import torchlean as tl

    monkeypatch.setattr(K, "SAMPLE_BLOCK", 4096, raising=False)
    n = 1 << 20
    out_bytes = 4 * n
    with tl.session(profile=profile):
        x = tl.tensor(np.ones(n, np.float32))
        tl.dropout(tl.tensor(np.ones(3, np.float32)), 0.5, seed=0)  # warm the plans outside the trace
        _, peak = traced_peak(lambda: tl.rand_uniform((n,), seed=5))
        assert peak < out_bytes + _MIB, peak
        _, peak = traced_peak(lambda: tl.bernoulli_mask((n,), 0.5, seed=5))
        assert peak < out_bytes + _MIB, peak
        _, peak = traced_peak(lambda: tl.dropout(x, 0.5, seed=5))
        assert peak < 3 * out_bytes + _MIB, peak


# ====================================================== F8: contractions with a small result


class _RangeCounter:
    """A stand-in for ``range`` in ``_fold`` that adds up the iterations of every range made."""

    def __init__(self) -> None:
        self.iterations = 0

    def __call__(self, *args: int) -> range:
        made = range(*args)
        self.iterations += len(made)
        return made


def _contractions(n: int) -> dict[str, Callable[[], object]]:
    """Reference kernels whose contracted axis has ``n`` terms and whose result is tiny."""
    rng = np.random.default_rng(3)
    vec = rng.standard_normal(n).astype(np.float32)
    rows = rng.standard_normal((n, 1)).astype(np.float32)
    w = np.ones((1, 1), np.float32)
    g = rng.standard_normal((n, 1)).astype(np.float32)
    wide = rng.standard_normal((2, n)).astype(np.float32)
    q = rng.standard_normal((1, 1, 2)).astype(np.float32)
    k = rng.standard_normal((1, n, 2)).astype(np.float32)
    v = rng.standard_normal((1, n, 1)).astype(np.float32)
    mask = np.ones((1, n), dtype=bool)
    mask[0, ::3] = False
    return {
        "matmul (dot)": lambda: K.matmul(vec, vec),
        "matmul (2 x n @ n x 1)": lambda: K.matmul(wide, rows),
        "linear forward (n in-features)": lambda: K.linear(wide, np.ones((1, n), np.float32)),
        "linear_vjp dw (n rows)": lambda: K.linear_vjp(g, rows, w, None, out=K.linear(rows, w))[1],
        "attention weights @ v": lambda: K.scaled_dot_product_attention(q, k, v),
        "hard-masked attention weights @ v": lambda: K.scaled_dot_product_attention(q, k, v, mask),
    }


@pytest.mark.parametrize("name", list(_contractions(4)))
def test_small_contractions_fold_in_blocks_not_one_python_iteration_per_term(
    name: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review243 F8: ``fold_matmul`` (matmul, linear and its weight gradient, attention's
    ``weights @ v``) looped in Python once per term of the contracted axis: a dot product of two
    8 Mi-vectors took 10 s. A result of at most ``BLOCKED_STEP_TERMS`` entries is now folded in
    blocks of ``BLOCK_TERMS`` terms, so 50 000 terms take a handful of iterations."""
    from torchlean.backend.providers.reference import _fold

    n = 50_000
    call = _contractions(n)[name]
    counter = _RangeCounter()
    monkeypatch.setattr(_fold, "range", counter, raising=False)
    call()
    assert counter.iterations < 100, counter.iterations


@pytest.mark.parametrize("block_terms", [8, 24, 1 << 20])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fold_matmul_in_blocks_has_the_one_term_loops_bits(
    block_terms: int, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The blocked fold is the one-term loop's recurrence: same bits on values spanning many
    magnitudes (where another order would round differently), signed zeros and infinities, and
    NaNs of both signs. Which of two NaNs an addition keeps is numpy's choice and differs between
    its paths, so a result holding a NaN is recomputed by the loop: its bits are the loop's too."""
    from torchlean.backend.providers.reference import _fold

    monkeypatch.setattr(_fold, "BLOCK_TERMS", block_terms)
    rng = np.random.default_rng(21)
    neg_nan = np.copysign(np.nan, -1.0)
    for trial in range(60):
        batch = [(), (2,), (3, 1)][trial % 3]
        m, depth, n = 1 + trial % 2, [1, 5, 37, 200][trial % 4], 1 + trial % 3
        a = rng.standard_normal((*batch, m, depth)) * 10.0 ** rng.uniform(-8, 8, (*batch, m, depth))
        b = rng.standard_normal((depth, n)) * 10.0 ** rng.uniform(-8, 8, (depth, n))
        if trial % 5 == 1:
            a.reshape(-1)[rng.integers(0, a.size, 3)] = [np.nan, neg_nan, np.inf]
            b.reshape(-1)[rng.integers(0, b.size, 2)] = [neg_nan, -np.inf]
        if trial % 5 == 2:
            a[...] = -0.0
        a, b = a.astype(dtype), b.astype(dtype)
        allowed = rng.random(a.shape) < 0.7
        with np.errstate(all="ignore"):  # inf - inf, as the kernels' ieee wrapper allows
            _check_fold_matmul_bits(_fold, a, b, allowed)


def _check_fold_matmul_bits(_fold: Any, a: Any, b: Any, allowed: Any) -> None:
    """``fold_matmul``/``fold_matmul_where`` equal their one-term loops bit for bit."""
    got = _fold.fold_matmul(a, b)
    assert got.flags.c_contiguous and got.flags.owndata
    assert_array_equal(got.view(np.uint8), _fold._fold_matmul_loop(a, b).view(np.uint8))
    got = _fold.fold_matmul_where(a, b, allowed)
    expected = _fold._fold_matmul_where_loop(a, b, allowed)
    assert_array_equal(got.view(np.uint8), expected.view(np.uint8))


# ============================================================ F9: sums without an input-size copy


def _accumulated(x: Any, axes: tuple[int, ...]) -> Any:
    """The documented recurrence at once: ``np.add.accumulate`` over the reduced elements of each
    output position in row-major order, last slice (the form fold_sum_axes had before)."""
    kept = [ax for ax in range(x.ndim) if ax not in axes]
    moved = np.transpose(x, kept + sorted(axes)).reshape((*[x.shape[ax] for ax in kept], -1))
    return np.add.accumulate(moved, axis=-1)[..., -1].copy()


_SUM_CASES = [
    ((1024, 1024), (0, 1)),  # a full sum: one chunk row
    ((1024, 1024), (1,)),
    ((1024, 1024), (0,)),  # 1024 positions: chunks of 4 rows
    ((16, 256, 256), (0, 2)),  # reduced axes that do not merge into a view
    ((8, 1 << 17), (0,)),  # more positions than half a block: one in-place add per row
]


@pytest.mark.parametrize(("shape", "axes"), _SUM_CASES)
def test_fold_sum_axes_peaks_at_its_result_plus_about_two_blocks(
    shape: tuple[int, ...], axes: tuple[int, ...], monkeypatch: pytest.MonkeyPatch
) -> None:
    """review243 F9: ``fold_sum_axes`` (reduce_sum, reduce_mean, mse_loss, softmax, the norms...)
    took ``np.add.accumulate`` of the whole input (a temporary the size of the input, 4 MiB
    here, plus a transposed copy where the reduced axes did not merge). It now folds chunks of
    about ``SUM_BLOCK`` elements (shrunk here to 4096) into the running sums."""
    from torchlean.backend.providers.reference import _fold

    monkeypatch.setattr(_fold, "SUM_BLOCK", 4096, raising=False)
    x = np.random.default_rng(2).standard_normal(shape).astype(np.float32)
    total, peak = traced_peak(lambda: _fold.fold_sum_axes(x, axes))
    assert peak < total.nbytes + 3 * 4096 * 4 + 64 * 1024, (peak, total.nbytes)
    assert total.tobytes() == _accumulated(x, axes).tobytes()


@pytest.mark.parametrize("op", ["reduce_sum", "reduce_mean axis 1", "mse_loss"])
def test_reductions_do_not_allocate_a_copy_of_their_input(op: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """review243 F9 through the kernels: a sum of a 4 MiB input peaks at a few blocks; mse_loss
    at its one residual array (squared in place; it held the residual, its square and the
    accumulation: three input-sized arrays)."""
    from torchlean.backend.providers.reference import _fold

    monkeypatch.setattr(_fold, "SUM_BLOCK", 4096, raising=False)
    rng = np.random.default_rng(4)
    x = rng.standard_normal((1024, 1024)).astype(np.float32)
    y = rng.standard_normal((1024, 1024)).astype(np.float32)
    calls: dict[str, Callable[[], Any]] = {
        "reduce_sum": lambda: K.reduce_sum(x),
        "reduce_mean axis 1": lambda: K.reduce_mean(x, axis=1),
        "mse_loss": lambda: K.mse_loss(x, y),
    }
    result, peak = traced_peak(calls[op])
    allowed = x.nbytes if op == "mse_loss" else 0
    assert peak < allowed + result.nbytes + 3 * 4096 * 4 + 64 * 1024, peak
    if op == "mse_loss":
        expected = _accumulated((x - y) * (x - y), (0, 1)) / np.float32(x.size)
        assert result.tobytes() == np.asarray(expected, np.float32).tobytes()


@pytest.mark.parametrize("block", [2, 3, 7, 64])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_fold_sum_axes_in_chunks_has_the_recurrences_bits(
    block: int, dtype: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Chunked sums are the same recurrence as ``accumulate`` at once: the same bits on values
    spanning many magnitudes (where another order would round differently), on signed zeros,
    infinities and NaNs of both signs (a result holding a NaN is recomputed at once, since which
    of two NaNs an addition keeps differs between numpy's code paths), over transposed and
    reversed inputs and every subset of axes."""
    from torchlean.backend.providers.reference import _fold

    monkeypatch.setattr(_fold, "SUM_BLOCK", block, raising=False)
    rng = np.random.default_rng(block)
    specials = np.array([np.nan, np.copysign(np.nan, -1.0), np.inf, -np.inf, 0.0, -0.0])
    for trial in range(80):
        shape = tuple(int(v) for v in rng.choice([1, 2, 3, 5, 11], size=1 + trial % 3))
        x = rng.standard_normal(shape) * 10.0 ** rng.uniform(-9, 9, shape)
        if trial % 4 == 1:
            hit = rng.random(shape) < 0.15
            x[hit] = rng.choice(specials, int(hit.sum()))
        if trial % 4 == 2:
            x[...] = -0.0
        x = x.astype(dtype)
        if trial % 5 == 3 and x.ndim > 1:
            x = np.swapaxes(x, 0, -1)[..., ::-1]
        axes = tuple(sorted(int(a) for a in rng.permutation(x.ndim)[: 1 + trial % x.ndim]))
        with np.errstate(all="ignore"):
            got, expected = _fold.fold_sum_axes(x, axes), _accumulated(x, axes)
        assert got.flags.c_contiguous and not np.shares_memory(got, x)
        assert got.shape == expected.shape and got.tobytes() == expected.tobytes(), (shape, axes)
