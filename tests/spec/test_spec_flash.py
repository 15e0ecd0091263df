"""Tiled (flash) attention spec: equal to standard attention for every tiling, and really tiled.

Oracles: the standard spec (itself checked against torch in test_spec_attention.py), torch SDPA
and ``torch.logsumexp`` in float64, mpmath at 50 digits, and a record of the shapes that reach
``exp`` (no score tile larger than block_q x block_k).
"""

from __future__ import annotations

from typing import Any

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from hypothesis import given, settings
from hypothesis import strategies as st

from torchlean import spec
from torchlean.spec import (
    FlashAttentionConfig,
    SpecTypeError,
    SpecValueError,
    _arith,
    as_mpf_array,
    causal_mask,
    flash_attention,
    flash_attention_backward,
    flash_attention_forward,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)


def relative_error(got: np.ndarray, want: np.ndarray, natural: float = 0.0) -> float:
    """Largest difference over the larger of ``max|want|`` and the input-implied ``natural`` size."""
    assert got.shape == want.shape
    assert np.all(np.isfinite(got)) and np.all(np.isfinite(want))
    scale = max(float(np.max(np.abs(want), initial=0.0)), natural) or 1.0
    return float(np.max(np.abs(got - want), initial=0.0)) / scale


def gradient_scales(p: dict[str, Any]) -> tuple[float, float, float]:
    """Sizes of dq, dk, dv implied by the inputs: ``s·|dO|·|v|·|k|``, ``s·|dO|·|v|·|q|``, ``|dO|``.

    dq and dk are sums of ``P_ij (dO_i·v_j - D_i)`` terms; when those cancel, the gradient is far
    smaller than its terms and two summation orders differ relative to it by more than rounding
    of the terms, so the error is measured against the terms' size.
    """
    d = p["q"].shape[-1]
    s = p["scale"] if p["scale"] is not None else 1 / np.sqrt(d)
    mq, mk, mv, mdo = (float(np.max(np.abs(p[name]))) for name in ("q", "k", "v", "d_out"))
    return s * mdo * mv * mk, s * mdo * mv * mq, mdo


@st.composite
def problems(draw: st.DrawFn) -> dict[str, Any]:
    n_q = draw(st.integers(1, 9))
    n_k = draw(st.integers(1, 9))
    d = draw(st.integers(1, 5))
    d_v = draw(st.integers(1, 4))
    batch = draw(st.sampled_from([(), (2,), (2, 3)]))
    seed = draw(st.integers(0, 2**32 - 1))
    rng = np.random.default_rng(seed)
    kind = draw(st.sampled_from(["none", "upper_left", "lower_right", "random", "random-batched"]))
    mask: np.ndarray | None
    if kind == "none":
        mask = None
    elif kind in ("upper_left", "lower_right"):
        mask = causal_mask(n_q, n_k, align=kind)
    else:
        mask = rng.random((*batch, n_q, n_k) if kind == "random-batched" else (n_q, n_k)) < 0.5
    scale = draw(st.one_of(st.none(), st.floats(0.05, 3.0)))
    return {
        "q": rng.standard_normal((*batch, n_q, d)) * 2,
        "k": rng.standard_normal((*batch, n_k, d)) * 2,
        "v": rng.standard_normal((*batch, n_k, d_v)),
        "d_out": rng.standard_normal((*batch, n_q, d_v)),
        "mask": mask,
        "scale": scale,
        "config": FlashAttentionConfig(draw(st.integers(0, 11)), draw(st.integers(0, 11))),
    }


@settings(max_examples=150, deadline=None)
@given(problems())
def test_flash_equals_standard_forward_and_backward(p: dict[str, Any]) -> None:
    q, k, v, mask, scale, config = p["q"], p["k"], p["v"], p["mask"], p["scale"], p["config"]
    out, lse = flash_attention_forward(q, k, v, mask, scale=scale, config=config)
    want_out = scaled_dot_product_attention(q, k, v, mask, scale=scale)
    assert relative_error(out, want_out, float(np.max(np.abs(v)))) <= 1e-12
    grads = flash_attention_backward(q, k, v, out, lse, p["d_out"], mask, scale=scale, config=config)
    want = scaled_dot_product_attention_backward(q, k, v, p["d_out"], mask, scale=scale)
    for g, w, natural in zip(grads, want, gradient_scales(p), strict=True):
        assert relative_error(g, w, natural) <= 1e-12
    np.testing.assert_array_equal(flash_attention(q, k, v, mask, scale=scale, config=config), out)


def test_logsumexp_matches_torch_and_is_minus_inf_on_blocked_rows() -> None:
    rng = np.random.default_rng(0)
    q, k, v = rng.standard_normal((2, 6, 3)), rng.standard_normal((2, 5, 3)), rng.standard_normal((2, 5, 2))
    mask = causal_mask(6, 5, align="lower_right")
    _, lse = flash_attention_forward(q, k, v, mask, config=FlashAttentionConfig(2, 2))
    scores = torch.from_numpy(q @ np.swapaxes(k, -1, -2) / np.sqrt(3))
    want = torch.logsumexp(scores.masked_fill(~torch.from_numpy(mask), float("-inf")), dim=-1).numpy()
    assert np.all(lse[:, 0] == -np.inf) and np.all(want[:, 0] == -np.inf)
    np.testing.assert_allclose(lse[:, 1:], want[:, 1:], rtol=1e-13)


def test_flash_matches_torch_sdpa_float64() -> None:
    rng = np.random.default_rng(1)
    q, k, v = (
        rng.standard_normal((2, 3, 7, 4)),
        rng.standard_normal((2, 3, 9, 4)),
        rng.standard_normal((2, 3, 9, 5)),
    )
    d_out = rng.standard_normal((2, 3, 7, 5))
    config = FlashAttentionConfig(3, 4)
    out, lse = flash_attention_forward(q, k, v, causal_mask(7, 9), config=config)
    tq, tk, tv = (torch.tensor(x, requires_grad=True) for x in (q, k, v))
    want = F.scaled_dot_product_attention(tq, tk, tv, is_causal=True)
    want.backward(torch.from_numpy(d_out))  # type: ignore[no-untyped-call]
    np.testing.assert_allclose(out, want.detach().numpy(), rtol=1e-10, atol=1e-10)
    grads = flash_attention_backward(q, k, v, out, lse, d_out, causal_mask(7, 9), config=config)
    for g, t in zip(grads, (tq, tk, tv), strict=True):
        assert t.grad is not None
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-10)


@pytest.mark.parametrize(("block_q", "block_k"), [(1, 1), (2, 3), (4, 4), (5, 7)])
def test_no_exp_call_sees_more_than_one_tile(
    monkeypatch: pytest.MonkeyPatch, block_q: int, block_k: int
) -> None:
    shapes: list[tuple[int, ...]] = []
    real_exp = _arith.exp

    def recording_exp(array: np.ndarray) -> np.ndarray:
        shapes.append(array.shape)
        return real_exp(array)

    monkeypatch.setattr(_arith, "exp", recording_exp)
    rng = np.random.default_rng(2)
    n_q, n_k = 13, 17
    q, k, v = rng.standard_normal((n_q, 4)), rng.standard_normal((n_k, 4)), rng.standard_normal((n_k, 3))
    config = FlashAttentionConfig(block_q, block_k)
    out, lse = flash_attention_forward(q, k, v, causal_mask(n_q, n_k), config=config)
    flash_attention_backward(q, k, v, out, lse, np.ones_like(out), causal_mask(n_q, n_k), config=config)
    assert all(s[-2] <= block_q and s[-1] <= block_k for s in shapes)
    n_tiles = -(-n_q // block_q) * -(-n_k // block_k)
    # forward: the score tile and the rescale factor per tile; backward: the score tile per tile
    assert len(shapes) == 3 * n_tiles
    assert max(s[-2] * s[-1] for s in shapes) == min(block_q, n_q) * min(block_k, n_k)


def test_tiles_larger_than_the_problem_and_zero_mean_one_tile() -> None:
    rng = np.random.default_rng(3)
    q, k, v = rng.standard_normal((4, 2)), rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    want = scaled_dot_product_attention(q, k, v)
    for config in (FlashAttentionConfig(), FlashAttentionConfig(100, 100), FlashAttentionConfig(0, 1)):
        assert relative_error(flash_attention(q, k, v, config=config), want) <= 1e-15


def test_blocked_rows_and_nan_at_blocked_positions() -> None:
    rng = np.random.default_rng(4)
    q, k, v = rng.standard_normal((5, 3)), rng.standard_normal((6, 3)), rng.standard_normal((6, 2))
    mask = rng.random((5, 6)) < 0.6
    mask[2] = False
    mask[:, 4] = False
    mask[[0, 1, 3, 4], 0] = True
    d_out = rng.standard_normal((5, 2))
    clean_out, _ = flash_attention_forward(q, k, v, mask, config=FlashAttentionConfig(2, 2))
    clean_grads = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
    q[2], k[4], v[4], d_out[2] = np.nan, np.inf, np.nan, np.nan
    config = FlashAttentionConfig(2, 2)
    out, lse = flash_attention_forward(q, k, v, mask, config=config)
    grads = flash_attention_backward(q, k, v, out, lse, d_out, mask, config=config)
    assert lse[2] == -np.inf and np.all(np.isfinite(np.delete(lse, 2)))
    assert np.all(out[2] == 0.0) and np.all(grads[0][2] == 0.0)
    assert np.all(grads[1][4] == 0.0) and np.all(grads[2][4] == 0.0)
    assert relative_error(out, clean_out) <= 1e-15
    for g, c in zip(grads, clean_grads, strict=True):
        assert relative_error(g, c) <= 1e-12


def test_no_keys_gives_zeros() -> None:
    q, k, v = np.ones((3, 2)), np.ones((0, 2)), np.ones((0, 4))
    out, lse = flash_attention_forward(q, k, v, config=FlashAttentionConfig(2, 2))
    assert out.shape == (3, 4) and np.all(out == 0.0) and np.all(lse == -np.inf)
    np.testing.assert_array_equal(scaled_dot_product_attention(q, k, v), out)
    dq, dk, dv = flash_attention_backward(q, k, v, out, lse, np.ones((3, 4)))
    assert np.all(dq == 0.0) and dk.shape == (0, 2) and dv.shape == (0, 4)


def test_float32_stays_float32() -> None:
    rng = np.random.default_rng(5)
    q, k, v = (rng.standard_normal((4, 3)).astype(np.float32) for _ in range(3))
    out, lse = flash_attention_forward(q, k, v, causal_mask(4), config=FlashAttentionConfig(3, 2))
    assert out.dtype == np.float32 and lse.dtype == np.float32
    np.testing.assert_allclose(
        out, scaled_dot_product_attention(q, k, v, causal_mask(4)), rtol=1e-5, atol=1e-6
    )
    grads = flash_attention_backward(q, k, v, out, lse, np.ones_like(out), causal_mask(4))
    assert all(g.dtype == np.float32 for g in grads)


def test_mpmath_flash_equals_standard_to_fifty_digits() -> None:
    rng = np.random.default_rng(6)
    arrays = [rng.standard_normal(shape) for shape in ((2, 3, 2), (2, 4, 2), (2, 4, 3), (2, 3, 3))]
    mask = causal_mask(3, 4, align="lower_right")
    config = FlashAttentionConfig(2, 3)
    with mpmath.workdps(50):
        q, k, v, d_out = (as_mpf_array(x) for x in arrays)
        out, lse = flash_attention_forward(q, k, v, mask, config=config)
        want = scaled_dot_product_attention(q, k, v, mask)
        assert out.dtype == object and isinstance(lse[0, 0], mpmath.mpf)
        assert max(abs(x) for x in (out - want).flat) < mpmath.mpf("1e-45")
        grads = flash_attention_backward(q, k, v, out, lse, d_out, mask, config=config)
        wants = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
        for g, w in zip(grads, wants, strict=True):
            assert max(abs(x) for x in (g - w).flat) < mpmath.mpf("1e-45")
    # the float64 result differs from the 50-digit one at float64 rounding, not at 1e-45
    float_out = flash_attention(arrays[0], arrays[1], arrays[2], mask, config=config)
    assert 0 < np.max(np.abs(float_out - out.astype(float))) < 1e-14


@pytest.mark.parametrize("size", [np.int64(2), np.int32(2), np.uint8(2)])
def test_config_accepts_numpy_integers_stored_as_int(size: np.integer) -> None:
    config = FlashAttentionConfig(block_q=size, block_k=size)  # type: ignore[arg-type]
    assert (config.block_q, config.block_k) == (2, 2)
    assert type(config.block_q) is int and type(config.block_k) is int
    assert config == FlashAttentionConfig(2, 2)
    q = np.arange(30, dtype=np.float64).reshape(5, 6) / 10
    np.testing.assert_array_equal(flash_attention(q, q, q, config=config),
                                  flash_attention(q, q, q, config=FlashAttentionConfig(2, 2)))


@pytest.mark.parametrize("value", [True, np.True_, 2.0, np.float64(2.0), "2", None])
def test_config_refuses_non_integer_block_sizes(value: object) -> None:
    with pytest.raises(SpecTypeError) as info:
        FlashAttentionConfig(block_q=value)  # type: ignore[arg-type]
    assert str(info.value) == f"block_q must be an int, got {value!r}"
    with pytest.raises(SpecValueError, match=r"^block_k must be >= 0 \(0 = one tile\), got -1$"):
        FlashAttentionConfig(block_k=np.int64(-1))  # type: ignore[arg-type]


def test_config_and_saved_statistic_errors() -> None:
    with pytest.raises(SpecValueError, match="block_q must be >= 0"):
        FlashAttentionConfig(-1, 2)
    with pytest.raises(SpecValueError, match="block_k must be >= 0"):
        FlashAttentionConfig(2, -3)
    with pytest.raises(SpecTypeError, match="block_k must be an int"):
        FlashAttentionConfig(2, 2.5)  # type: ignore[arg-type]
    config = FlashAttentionConfig(2, 2)
    with pytest.raises(AttributeError):
        config.block_q = 3  # type: ignore[misc]
    q = np.ones((3, 2))
    out, lse = flash_attention_forward(q, q, q)
    with pytest.raises(SpecValueError, match=r"lse must have shape \(3,\)"):
        flash_attention_backward(q, q, q, out, lse[:2], np.ones((3, 2)))
    with pytest.raises(SpecValueError, match=r"d_out must have shape \(3, 2\)"):
        flash_attention_backward(q, q, q, out, lse, np.ones((2, 2)))
    with pytest.raises(TypeError, match="additive score biases are a separate operation"):
        flash_attention(q, q, q, np.ones((3, 3)))


@pytest.mark.parametrize("scale", [float("nan"), float("inf"), -float("inf")])
def test_flash_refuses_a_non_finite_scale_forward_and_backward(scale: float) -> None:
    q = np.ones((3, 2))
    out, lse = flash_attention_forward(q, q, q)
    accepted = r"\(accepted: a finite real number, or None for 1/sqrt\(d\)\)$"
    message = rf"^scale = {scale} is not accepted {accepted}"
    with pytest.raises(SpecValueError, match=message):
        flash_attention_forward(q, q, q, scale=scale)
    with pytest.raises(SpecValueError, match=message):
        flash_attention(q, q, q, scale=scale, config=FlashAttentionConfig(1, 1))
    with pytest.raises(SpecValueError, match=message):
        flash_attention_backward(q, q, q, out, lse, np.ones((3, 2)), scale=scale)
    with pytest.raises(SpecTypeError, match=r"^scale must be a real number or None, got '1' of type str$"):
        flash_attention_forward(q, q, q, scale="1")


def test_flash_backward_propagates_nan_like_the_standard_backward() -> None:
    """A NaN in a query row makes that row's logsumexp NaN: the backward must treat it as a live
    row (NaN in the gradients it reaches, as the standard backward), not as a fully blocked one
    (``-inf``, zero gradients); the blocked row stays exactly zero."""
    rng = np.random.default_rng(5)
    q = rng.standard_normal((4, 3))
    q[1, 0] = np.nan
    mask = np.ones((4, 4), dtype=bool)
    mask[2] = False
    out, lse = spec.flash_attention_forward(q, q, q, mask)
    assert np.isnan(lse[1]) and lse[2] == -np.inf
    flash = spec.flash_attention_backward(q, q, q, out, lse, q, mask)
    standard = spec.scaled_dot_product_attention_backward(q, q, q, q, mask)
    for mine, expected in zip(flash, standard, strict=True):
        assert np.isnan(mine).any()
        np.testing.assert_array_equal(np.isnan(mine), np.isnan(expected))
        np.testing.assert_allclose(mine, expected, rtol=1e-12, atol=1e-12, equal_nan=True)


TILINGS = [FlashAttentionConfig(bq, bk) for bq, bk in ((0, 0), (1, 1), (0, 1), (1, 2), (2, 1))]


@pytest.mark.parametrize("config", TILINGS, ids=lambda c: f"{c.block_q}x{c.block_k}")
@pytest.mark.parametrize("mp", [False, True], ids=["float64", "mpmath"])
def test_a_tile_whose_allowed_scores_are_all_minus_inf_adds_nothing(
    config: FlashAttentionConfig, mp: bool
) -> None:
    # key 0 scores -inf (a -inf key); keys 1, 2 are finite: the row is a softmax over keys 1, 2,
    # whichever tile comes first. Oracle: standard attention and, by hand, softmax([1, 0.5]).
    q = np.array([[1.0], [2.0]])
    k = np.array([[-np.inf], [1.0], [0.5]])
    v = np.array([[7.0], [1.0], [3.0]])
    mask = np.array([[True, True, True], [True, True, False]])
    d_out = np.array([[1.0], [-2.0]])
    if mp:
        q, k, v, d_out = (as_mpf_array(a) for a in (q, k, v, d_out))
    out, lse = flash_attention_forward(q, k, v, mask, scale=1.0, config=config)
    standard = scaled_dot_product_attention(q, k, v, mask, scale=1.0)
    weights = np.exp([1.0, 0.5]) / np.exp([1.0, 0.5]).sum()
    np.testing.assert_allclose(out.astype(float), standard.astype(float), rtol=1e-15)
    np.testing.assert_allclose(float(out[0, 0]), weights @ [1.0, 3.0], rtol=1e-15)
    np.testing.assert_allclose(float(out[1, 0]), 1.0, rtol=1e-15)  # row 1 attends key 1 only
    np.testing.assert_allclose(float(lse[1]), 2.0, rtol=1e-15)
    # gradients: dq is NaN where -inf meets its zero weight (0 * -inf), as in the standard backward
    flash_grads = flash_attention_backward(q, k, v, out, lse, d_out, mask, scale=1.0, config=config)
    standard_grads = scaled_dot_product_attention_backward(q, k, v, d_out, mask, scale=1.0)
    for got, want in zip(flash_grads, standard_grads, strict=True):
        np.testing.assert_allclose(got.astype(float), want.astype(float), rtol=1e-13, atol=1e-15)


@pytest.mark.parametrize("config", TILINGS, ids=lambda c: f"{c.block_q}x{c.block_k}")
def test_overflowing_scores_from_finite_inputs_match_standard_attention(config: FlashAttentionConfig) -> None:
    # q·k0 = -1e400 overflows to -inf in float64: the reviewer's case, torch SDPA gives 2
    q, k, v = np.array([[1e200]]), np.array([[-1e200], [1.0]]), np.array([[1.0], [2.0]])
    out, lse = flash_attention_forward(q, k, v, scale=1.0, config=config)
    expected = F.scaled_dot_product_attention(*(torch.from_numpy(a) for a in (q, k, v)), scale=1.0)
    np.testing.assert_array_equal(out, expected.numpy())
    assert lse[0] == 1e200
    _, _, dv = flash_attention_backward(q, k, v, out=out, lse=lse, d_out=np.ones((1, 1)), scale=1.0,
                                        config=config)
    np.testing.assert_array_equal(dv, [[0.0], [1.0]])


@pytest.mark.parametrize("config", TILINGS, ids=lambda c: f"{c.block_q}x{c.block_k}")
def test_a_row_whose_allowed_scores_are_all_minus_inf_is_nan_as_in_standard_attention(
    config: FlashAttentionConfig,
) -> None:
    q, k, v = np.array([[1e200]]), np.array([[-1e200], [-1e200]]), np.array([[1.0], [2.0]])
    out, lse = flash_attention_forward(q, k, v, scale=1.0, config=config)
    assert np.isnan(scaled_dot_product_attention(q, k, v, scale=1.0)).all()
    assert np.isnan(out).all() and np.isnan(lse).all()  # NaN, not the blocked row's 0 and -inf
    grads = flash_attention_backward(q, k, v, out=out, lse=lse, d_out=np.ones((1, 1)), scale=1.0,
                                     config=config)
    assert all(np.isnan(g).all() for g in grads)


@pytest.mark.parametrize("block_k", [0, 1, 2])
def test_flash_forward_row_far_below_exp_range_matches_torch(block_k: int) -> None:
    """Scores all below -709 (``exp`` underflows to 0): the online softmax's first rescale is
    selected away, so the row is torch's finite value (review20 mut FL1: NaN without it)."""
    import torch

    from torchlean.spec.flash import FlashAttentionConfig, flash_attention_forward

    q, k, v = np.array([[1.0]]), np.array([[-1000.0], [-1001.0], [-1003.0]]), np.array([[1.0], [2.0], [3.0]])
    config = FlashAttentionConfig(block_q=1, block_k=block_k)
    out, lse = flash_attention_forward(q, k, v, scale=1.0, config=config)
    tq, tk, tv = (torch.tensor(a)[None] for a in (q, k, v))
    expected = torch.nn.functional.scaled_dot_product_attention(tq, tk, tv, scale=1.0)[0].numpy()
    np.testing.assert_allclose(out, expected, rtol=1e-13)
    np.testing.assert_allclose(lse, torch.logsumexp(torch.tensor(q @ k.T), -1).numpy(), rtol=1e-13)
