"""Standard attention spec (forward and backward) against independent oracles.

Oracles: the "Modern Models" values of anchor-runtime.md §5.4 (hand-printed and PyTorch float64),
``torch.nn.functional.scaled_dot_product_attention`` + ``torch.autograd`` in float64 (1e-10) and
float32 (1e-5), central finite differences in float64, and mpmath at 50 digits.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable
from fractions import Fraction

import mpmath
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from torch.nn.attention.bias import causal_lower_right

from torchlean.spec import (
    FlashAttentionConfig,
    SpecTypeError,
    SpecValueError,
    _arith,
    as_mpf_array,
    causal_mask,
    flash_attention,
    scaled_dot_product_attention,
    scaled_dot_product_attention_backward,
)

Q = np.array([[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]])
V = np.array([[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]])


def close64(got: np.ndarray, want: object) -> None:
    """float64 agreement with torch: 1e-10 (issue 5, "Done when")."""
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-10, atol=1e-10)


def close32(got: np.ndarray, want: object) -> None:
    """float32 agreement with torch: 1e-5."""
    np.testing.assert_allclose(got, np.asarray(want), rtol=1e-5, atol=1e-5)


def fmt(x: np.ndarray) -> list[list[str]]:
    return [[f"{v:.6f}" for v in row] for row in x]


def torch_sdpa(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    d_out: np.ndarray | None = None,
    *,
    attn_mask: np.ndarray | torch.Tensor | None = None,
    is_causal: bool = False,
    scale: float | None = None,
) -> tuple[np.ndarray, tuple[np.ndarray, ...] | None]:
    tq, tk, tv = (torch.tensor(x, requires_grad=d_out is not None) for x in (q, k, v))
    mask = torch.from_numpy(attn_mask) if isinstance(attn_mask, np.ndarray) else attn_mask
    out = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask, is_causal=is_causal, scale=scale)
    if d_out is None:
        return out.detach().numpy(), None
    out.backward(torch.from_numpy(d_out))  # type: ignore[no-untyped-call]
    grads = tuple(t.grad.numpy() for t in (tq, tk, tv))  # type: ignore[union-attr]
    return out.detach().numpy(), grads


# --- "Modern Models" (anchor-runtime.md §5.4) ----------------------------------------------------

TORCH_CAUSAL = [[1.0, 2.0], [2.3395230986533138, 3.3395230986533138], [3.5104695304536615, 4.510469530453662]]
TORCH_PLAIN = [[3.0, 4.0], [3.4066725560787154, 4.406672556078716], [3.5104695304536615, 4.510469530453662]]


def test_modern_models_causal_and_unmasked() -> None:
    causal = scaled_dot_product_attention(Q, Q, V, causal_mask(3))
    plain = scaled_dot_product_attention(Q, Q, V)
    assert fmt(causal) == [["1.000000", "2.000000"], ["2.339523", "3.339523"], ["3.510470", "4.510470"]]
    assert fmt(plain) == [["3.000000", "4.000000"], ["3.406673", "4.406673"], ["3.510470", "4.510470"]]
    np.testing.assert_allclose(causal, TORCH_CAUSAL, rtol=1e-14)
    np.testing.assert_allclose(plain, TORCH_PLAIN, rtol=1e-14)
    close64(causal, torch_sdpa(Q, Q, V, is_causal=True)[0])
    close64(plain, torch_sdpa(Q, Q, V)[0])


def test_modern_models_prefix_causality() -> None:
    q4 = np.vstack([Q, [0.5, 2.0]])
    v4 = np.vstack([V, [7.0, 8.0]])
    out = scaled_dot_product_attention(q4, q4, v4, causal_mask(4))
    assert fmt(out) == [
        ["1.000000", "2.000000"],
        ["2.339523", "3.339523"],
        ["3.510470", "4.510470"],
        ["5.837654", "6.837654"],
    ]
    np.testing.assert_array_equal(out[:3], scaled_dot_product_attention(Q, Q, V, causal_mask(3)))
    close64(out, torch_sdpa(q4, q4, v4, is_causal=True)[0])


def test_modern_models_key_value_permutation() -> None:
    k_rev, v_rev = Q[::-1].copy(), V[::-1].copy()
    plain = scaled_dot_product_attention(Q, k_rev, v_rev)
    np.testing.assert_allclose(plain, scaled_dot_product_attention(Q, Q, V), rtol=1e-14)
    assert fmt(plain) == fmt(np.array(TORCH_PLAIN))
    causal = scaled_dot_product_attention(Q, k_rev, v_rev, causal_mask(3))
    assert fmt(causal) == [["5.000000", "6.000000"], ["4.000000", "5.000000"], ["3.510470", "4.510470"]]
    close64(causal, torch_sdpa(Q, k_rev, v_rev, is_causal=True)[0])
    close64(plain, torch_sdpa(Q, k_rev, v_rev)[0])


# --- randomised comparison with torch SDPA + autograd (float64) ----------------------------------

CASES = [
    # (q shape, k shape, v shape)
    ((5, 3), (5, 3), (5, 2)),
    ((4, 7, 8), (4, 9, 8), (4, 9, 5)),
    ((2, 3, 6, 4), (2, 3, 6, 4), (2, 3, 6, 4)),
    ((2, 1, 5, 3), (1, 3, 7, 3), (1, 3, 7, 4)),  # leading axes broadcast
    ((1, 1, 3), (2, 4, 3), (2, 4, 1)),  # one query, d_v = 1
    ((3, 9, 1), (3, 4, 1), (3, 4, 2)),  # d = 1, nQ > nK
]


def _inputs(seed: int, shapes: tuple[tuple[int, ...], ...]) -> tuple[np.ndarray, ...]:
    rng = np.random.default_rng(seed)
    return tuple(rng.standard_normal(shape) for shape in shapes)


def _out_shape(q: np.ndarray, k: np.ndarray, v: np.ndarray) -> tuple[int, ...]:
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
    return (*batch, q.shape[-2], v.shape[-1])


def _check_against_torch(
    q: np.ndarray,
    k: np.ndarray,
    v: np.ndarray,
    mask: np.ndarray | None,
    torch_mask: np.ndarray | torch.Tensor | None,
    is_causal: bool,
) -> None:
    d_out = np.random.default_rng(99).standard_normal(_out_shape(q, k, v))
    want, want_grads = torch_sdpa(q, k, v, d_out, attn_mask=torch_mask, is_causal=is_causal)
    got = scaled_dot_product_attention(q, k, v, mask)
    grads = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
    close64(got, want)
    assert want_grads is not None
    for g, w, x in zip(grads, want_grads, (q, k, v), strict=True):
        assert g.shape == x.shape
        close64(g, w)


@pytest.mark.parametrize("shapes", CASES)
@pytest.mark.parametrize("mask_kind", ["none", "upper_left", "lower_right", "random"])
def test_forward_and_backward_match_torch_float64(
    shapes: tuple[tuple[int, ...], ...], mask_kind: str
) -> None:
    q, k, v = _inputs(len(shapes[0]) * 7 + shapes[0][-2], shapes)
    n_q, n_k = q.shape[-2], k.shape[-2]
    if mask_kind == "none":
        _check_against_torch(q, k, v, None, None, False)
    elif mask_kind == "upper_left":
        _check_against_torch(q, k, v, causal_mask(n_q, n_k), None, True)
    elif mask_kind == "lower_right":
        if n_q > n_k:  # the top rows see no key: torch gets only the live rows
            _check_live_rows_against_torch(q, k, v, causal_mask(n_q, n_k, align="lower_right"))
            return
        _check_against_torch(
            q, k, v, causal_mask(n_q, n_k, align="lower_right"), causal_lower_right(n_q, n_k), False
        )
    else:
        rng = np.random.default_rng(5)
        batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2], v.shape[:-2])
        mask = rng.random((*batch[-1:], n_q, n_k)) < 0.7  # broadcasts over the other leading axes
        mask[..., np.arange(n_q), rng.integers(0, n_k, n_q)] = True  # every row keeps one key
        _check_against_torch(q, k, v, mask, mask, False)


def _rows_with_keys(mask: np.ndarray) -> np.ndarray:
    return np.asarray(mask.any(axis=-1))


def _check_live_rows_against_torch(q: np.ndarray, k: np.ndarray, v: np.ndarray, mask: np.ndarray) -> None:
    """Spec on the full problem against torch on the rows that have a key (2-D ``mask``).

    torch never sees a fully blocked row, so its convention for them cannot matter; the spec must
    give those rows zero output and zero dq, and they must contribute nothing to dk and dv.
    """
    live = _rows_with_keys(mask)
    d_out = np.random.default_rng(2).standard_normal(_out_shape(q, k, v))
    out = scaled_dot_product_attention(q, k, v, mask)
    dq, dk, dv = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
    assert np.all(out[..., ~live, :] == 0.0) and np.all(dq[..., ~live, :] == 0.0)
    want, want_grads = torch_sdpa(q[..., live, :], k, v, d_out[..., live, :], attn_mask=mask[live])
    assert want_grads is not None
    close64(out[..., live, :], want)
    close64(dq[..., live, :], want_grads[0])
    close64(dk, want_grads[1])
    close64(dv, want_grads[2])


@pytest.mark.parametrize("align", ["lower_right", "random"])
def test_fully_blocked_rows_are_zero_with_zero_gradients(align: str) -> None:
    q, k, v = _inputs(3, ((2, 7, 4), (2, 4, 4), (2, 4, 3)))
    if align == "lower_right":
        mask = causal_mask(7, 4, align="lower_right")  # top three rows see no key
    else:
        mask = np.random.default_rng(1).random((7, 4)) < 0.6
        mask[[0, 4]] = False
        mask[[1, 2, 3, 5, 6], 0] = True
    assert not _rows_with_keys(mask).all()
    _check_live_rows_against_torch(q, k, v, mask)


def test_torch_lower_right_with_blocked_rows_agrees_where_defined() -> None:
    q, k, v = _inputs(4, ((7, 3), (4, 3), (4, 2)))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        bias = causal_lower_right(7, 4)
    want, _ = torch_sdpa(q, k, v, attn_mask=bias)
    got = scaled_dot_product_attention(q, k, v, causal_mask(7, 4, align="lower_right"))
    close64(got[3:], want[3:])
    assert np.all(got[:3] == 0.0)


def test_nan_and_inf_at_blocked_positions_stay_out_of_values_and_gradients() -> None:
    q, k, v = _inputs(8, ((2, 5, 3), (2, 6, 3), (2, 6, 4)))
    mask = np.random.default_rng(3).random((5, 6)) < 0.7
    mask[:, 5] = False  # key 5 blocked for every query
    mask[1] = False  # query 1 sees nothing
    mask[[0, 2, 3, 4], 0] = True
    d_out = np.random.default_rng(4).standard_normal((2, 5, 4))
    clean = scaled_dot_product_attention(q, k, v, mask)
    clean_grads = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
    qp, kp, vp, dp = q.copy(), k.copy(), v.copy(), d_out.copy()
    kp[:, 5] = np.nan
    vp[:, 5] = np.inf
    qp[:, 1] = np.nan
    dp[:, 1] = np.nan
    poisoned = scaled_dot_product_attention(qp, kp, vp, mask)
    grads = scaled_dot_product_attention_backward(qp, kp, vp, dp, mask)
    # the poisoned run takes the selected (per-key) summation, the clean one a matmul: same
    # values up to the order of the additions
    assert np.all(np.isfinite(poisoned)) and all(np.all(np.isfinite(g)) for g in grads)
    np.testing.assert_allclose(poisoned, clean, rtol=1e-14, atol=1e-15)
    assert np.all(grads[0][:, 1] == 0.0)  # dq of the blocked row
    assert np.all(grads[1][:, 5] == 0.0) and np.all(grads[2][:, 5] == 0.0)  # dk, dv of the blocked key
    for g, c in zip(grads, clean_grads, strict=True):
        np.testing.assert_allclose(g, c, rtol=1e-14, atol=1e-15)


def test_float32_computes_in_float32_and_matches_torch() -> None:
    q, k, v = (x.astype(np.float32) for x in _inputs(11, ((2, 6, 4), (2, 8, 4), (2, 8, 3))))
    mask = causal_mask(6, 8, align="lower_right")
    d_out = np.random.default_rng(1).standard_normal((2, 6, 3)).astype(np.float32)
    out = scaled_dot_product_attention(q, k, v, mask)
    grads = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
    assert out.dtype == np.float32 and all(g.dtype == np.float32 for g in grads)
    want, want_grads = torch_sdpa(q, k, v, d_out, attn_mask=mask)
    assert want_grads is not None
    close32(out, want)
    for g, w in zip(grads, want_grads, strict=True):
        close32(g, w)


def test_explicit_scale_matches_torch() -> None:
    q, k, v = _inputs(12, ((4, 3), (5, 3), (5, 2)))
    d_out = np.ones((4, 2))
    want, want_grads = torch_sdpa(q, k, v, d_out, scale=0.3)
    close64(scaled_dot_product_attention(q, k, v, scale=0.3), want)
    assert want_grads is not None
    for g, w in zip(
        scaled_dot_product_attention_backward(q, k, v, d_out, scale=0.3), want_grads, strict=True
    ):
        close64(g, w)


def test_zero_width_features_use_scale_one_and_average_values() -> None:
    q, k = np.zeros((3, 0)), np.zeros((4, 0))
    v = np.arange(8.0).reshape(4, 2)
    np.testing.assert_allclose(scaled_dot_product_attention(q, k, v), np.tile(v.mean(axis=0), (3, 1)))
    causal = scaled_dot_product_attention(q, k, v, causal_mask(3, 4))
    np.testing.assert_allclose(causal, [v[:1].mean(axis=0), v[:2].mean(axis=0), v[:3].mean(axis=0)])


# --- finite differences -------------------------------------------------------------------------


def _central_difference(f: Callable[[np.ndarray], float], x: np.ndarray, h: float = 1e-6) -> np.ndarray:
    grad = np.zeros_like(x)
    for index in np.ndindex(x.shape):
        step = np.zeros_like(x)
        step[index] = h
        grad[index] = (f(x + step) - f(x - step)) / (2 * h)
    return grad


@pytest.mark.parametrize("mask_kind", ["none", "lower_right_blocked_rows", "random"])
def test_backward_matches_central_differences(mask_kind: str) -> None:
    q, k, v = _inputs(21, ((2, 4, 3), (1, 5, 3), (2, 5, 2)))
    mask: np.ndarray | None
    if mask_kind == "none":
        mask = None
    elif mask_kind == "random":
        mask = np.random.default_rng(6).random((2, 4, 5)) < 0.5
    else:
        mask = causal_mask(4, 5, align="lower_right")
        mask[0] = False
    d_out = np.random.default_rng(7).standard_normal((2, 4, 2))

    def loss(qq: np.ndarray, kk: np.ndarray, vv: np.ndarray) -> float:
        return float(np.sum(d_out * scaled_dot_product_attention(qq, kk, vv, mask)))

    dq, dk, dv = scaled_dot_product_attention_backward(q, k, v, d_out, mask)
    np.testing.assert_allclose(dq, _central_difference(lambda x: loss(x, k, v), q), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dk, _central_difference(lambda x: loss(q, x, v), k), rtol=1e-6, atol=1e-8)
    np.testing.assert_allclose(dv, _central_difference(lambda x: loss(q, k, x), v), rtol=1e-6, atol=1e-8)


# --- mpmath path --------------------------------------------------------------------------------


def test_mpmath_path_agrees_with_float64_and_is_more_precise() -> None:
    q, k, v = _inputs(31, ((3, 2), (4, 2), (4, 2)))
    mask = causal_mask(3, 4, align="lower_right")
    d_out = np.ones((3, 2))
    with mpmath.workdps(50):
        args = (as_mpf_array(q), as_mpf_array(k), as_mpf_array(v))
        out = scaled_dot_product_attention(*args, mask)
        grads = scaled_dot_product_attention_backward(*args, as_mpf_array(d_out), mask)
        assert out.dtype == object and isinstance(out[0, 0], mpmath.mpf)
        # a value the float path cannot hold exactly: row 0 by hand at 50 digits
        s = [args[0][0, 0] * args[1][j, 0] + args[0][0, 1] * args[1][j, 1] for j in range(2)]
        w = [mpmath.exp(x / mpmath.sqrt(2)) for x in s]
        row0 = [(w[0] * args[2][0, c] + w[1] * args[2][1, c]) / (w[0] + w[1]) for c in range(2)]
        assert max(abs(out[0, c] - row0[c]) for c in range(2)) < mpmath.mpf("1e-48")
    np.testing.assert_allclose(out.astype(float), scaled_dot_product_attention(q, k, v, mask), rtol=1e-13)
    for g, f in zip(grads, scaled_dot_product_attention_backward(q, k, v, d_out, mask), strict=True):
        np.testing.assert_allclose(g.astype(float), f, rtol=1e-12, atol=1e-14)


# --- errors -------------------------------------------------------------------------------------


def test_input_errors() -> None:
    q, k, v = _inputs(41, ((3, 2), (4, 2), (4, 2)))
    with pytest.raises(SpecValueError, match="q must have rank >= 2"):
        scaled_dot_product_attention(q[0], k, v)
    with pytest.raises(SpecValueError, match="share the feature size d"):
        scaled_dot_product_attention(q, k[:, :1], v)
    with pytest.raises(SpecValueError, match="share the key count nK"):
        scaled_dot_product_attention(q, k, v[:3])
    with pytest.raises(SpecValueError, match="leading axes"):
        scaled_dot_product_attention(np.zeros((2, 3, 2)), np.zeros((3, 4, 2)), np.zeros((3, 4, 2)))
    with pytest.raises(SpecValueError, match=r"mask of shape \(2, 2\) does not broadcast"):
        scaled_dot_product_attention(q, k, v, np.ones((2, 2), dtype=bool))
    with pytest.raises(TypeError, match="additive score biases are a separate operation"):
        scaled_dot_product_attention(q, k, v, np.zeros((3, 4)))
    with pytest.raises(SpecTypeError, match="k has dtype int64"):
        scaled_dot_product_attention(q, np.ones((4, 2), dtype=np.int64), v)
    with pytest.raises(SpecValueError, match=r"d_out must have the output shape \(3, 2\)"):
        scaled_dot_product_attention_backward(q, k, v, np.ones((2, 2)))


def test_a_mask_may_not_enlarge_the_scores_as_pytorch() -> None:
    """A mask with leading axes q, k and v lack would add batch entries: torch's SDPA refuses it
    (its output keeps q's batch), and so do the spec (standard, tiled, backward) and the providers."""
    q, k, v = _inputs(43, ((3, 4, 2), (3, 5, 2), (3, 5, 2)))
    mask = np.ones((2, 3, 4, 5), dtype=bool)
    with pytest.raises(RuntimeError, match="doesn't match the broadcast shape"):
        F.scaled_dot_product_attention(
            *(torch.from_numpy(a) for a in (q, k, v)), attn_mask=torch.from_numpy(mask)
        )
    message = r"mask of shape \(2, 3, 4, 5\) does not broadcast to the score shape \(3, 4, 5\)"
    calls: list[Callable[[], object]] = [
        lambda: scaled_dot_product_attention(q, k, v, mask),
        lambda: flash_attention(q, k, v, mask),
        lambda: scaled_dot_product_attention_backward(q, k, v, np.ones((3, 4, 2)), mask),
    ]
    for call in calls:
        with pytest.raises(SpecValueError, match=message):
            call()
    # a mask of the scores' own rank, or one broadcast up to them, is accepted
    shapes = [(3, 4, 5), (1, 4, 5), (4, 5), (1, 1, 5)]
    for shape in shapes:
        small = np.ones(shape, dtype=bool)
        np.testing.assert_allclose(
            scaled_dot_product_attention(q, k, v, small), scaled_dot_product_attention(q, k, v)
        )


ACCEPTED_SCALE = r"\(accepted: a finite real number, or None for 1/sqrt\(d\)\)$"


@pytest.mark.parametrize(
    ("scale", "shown"),
    [
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (-float("inf"), "-inf"),
        (np.float64("nan"), "nan"),
        (np.float32("inf"), "inf"),
        (mpmath.mpf("nan"), "nan"),
    ],
)
def test_non_finite_scale_is_refused_forward_and_backward(scale: object, shown: str) -> None:
    # torch returns NaN for these (checked below); the spec, being the oracle, refuses them
    q, k, v = _inputs(43, ((3, 2), (4, 2), (4, 2)))
    message = rf"^scale = {shown} is not accepted " + ACCEPTED_SCALE
    with pytest.raises(SpecValueError, match=message):
        scaled_dot_product_attention(q, k, v, scale=scale)
    with pytest.raises(SpecValueError, match=message):
        scaled_dot_product_attention_backward(q, k, v, np.ones((3, 2)), scale=scale)
    mq, mk, mv = (as_mpf_array(a) for a in (q, k, v))
    with pytest.raises(SpecValueError, match=message):
        scaled_dot_product_attention(mq, mk, mv, scale=scale)
    assert np.isnan(torch_sdpa(q, k, v, np.ones((3, 2)), scale=float(scale))[0]).all()


def test_scale_of_the_wrong_kind_or_beyond_the_dtype_is_refused() -> None:
    q, k, v = _inputs(44, ((3, 2), (4, 2), (4, 2)))
    wrong_kinds = (
        ("0.5", "'0.5' of type str"),
        (True, "True of type bool"),
        ([0.5], r"\[0.5\] of type list"),
    )
    for bad, shown in wrong_kinds:
        with pytest.raises(SpecTypeError, match=rf"^scale must be a real number or None, got {shown}$"):
            scaled_dot_product_attention(q, k, v, scale=bad)
    q32, k32, v32 = (a.astype(np.float32) for a in (q, k, v))
    with pytest.raises(SpecValueError, match=r"^scale = 1e\+300 overflows the working dtype float32 "):
        scaled_dot_product_attention(q32, k32, v32, scale=1e300)
    with pytest.raises(SpecValueError, match=rf"^scale = {2**200} overflows the working dtype float32 "):
        scaled_dot_product_attention(q32, k32, v32, scale=2**200)
    with pytest.raises(SpecValueError, match=r"^scale = an integer of about 401 digits overflows the "):
        scaled_dot_product_attention(q, k, v, scale=10**400)  # named by its size, not its 401 digits
    # finite values of every real kind are still accepted, and equal to the float scale
    want = scaled_dot_product_attention(q, k, v, scale=0.5)
    for ok in (np.float32(0.5), np.float64(0.5), mpmath.mpf("0.5")):
        np.testing.assert_array_equal(scaled_dot_product_attention(q, k, v, scale=ok), want)
    # an integer scale beyond float64 is fine at mpmath precision (scores are then huge but finite)
    mq, mk, mv = (as_mpf_array(a) for a in (q, k, v))
    assert _all_finite_mpf(scaled_dot_product_attention(mq, mk, mv, scale=2**2000))


def _all_finite_mpf(array: np.ndarray) -> bool:
    return all(mpmath.isfinite(x) for x in array.ravel())


def test_longdouble_lifts_exactly_to_the_mpmath_path() -> None:
    """``as_mpf_array`` converts float data exactly: a longdouble too (mpmath refuses its scalars),
    keeping the bits float64 would drop; NaN and infinities convert as floats'. An mpmath operand
    may then meet a longdouble one."""
    if np.finfo(np.longdouble).nmant <= 52:
        pytest.skip("longdouble is float64 on this platform")
    tiny = np.longdouble(2) ** -62
    values = np.array([1 + tiny, np.nan, -np.inf, -3.5], dtype=np.longdouble)
    with mpmath.workdps(50):
        lifted = as_mpf_array(values)
        assert lifted[0] == 1 + mpmath.mpf(2) ** -62 and lifted[0] != 1
        assert mpmath.isnan(lifted[1]) and lifted[2] == mpmath.mpf("-inf") and lifted[3] == -3.5
        q = np.array([[1.0, 0.0]], dtype=np.longdouble)
        out = scaled_dot_product_attention(as_mpf_array(q), q, q.astype(np.longdouble))
        assert out.dtype == object and out[0, 0] == 1


@pytest.mark.parametrize("scale", [np.float16(0.5), np.float32(0.5), np.int32(2), np.int64(2), np.uint8(2)])
def test_a_numpy_scalar_scale_works_on_the_mpmath_path(scale: object) -> None:
    """review125 F1: mpmath refuses numpy scalars but np.float64 (a bare TypeError, not a
    SpecTypeError); each is now the exact number it holds, as on the float path: the result
    equals that of the Python scale, at 50 digits, for sdpa and the flash spec."""
    q, k, v = _inputs(46, ((3, 2), (4, 2), (4, 5)))
    plain = float(scale) if isinstance(scale, np.floating) else int(scale)  # type: ignore[call-overload]
    with mpmath.workdps(50):
        mq, mk, mv = (as_mpf_array(a) for a in (q, k, v))
        want = scaled_dot_product_attention(mq, mk, mv, scale=plain)
        assert (scaled_dot_product_attention(mq, mk, mv, scale=scale) == want).all()
        tiled = flash_attention(mq, mk, mv, scale=scale, config=FlashAttentionConfig(1, 2))
        assert (tiled == flash_attention(mq, mk, mv, scale=plain, config=FlashAttentionConfig(1, 2))).all()
        close = [abs(a - b) < mpmath.mpf(10) ** -45 for a, b in zip(tiled.ravel(), want.ravel(), strict=True)]
        assert all(close)


def test_a_fraction_of_numpy_integers_is_exact_on_the_mpmath_path() -> None:
    """review126 F3: a Fraction keeps numpy integer parts, which mpmath refuses (a bare TypeError)."""
    q, k, v = _inputs(47, ((3, 2), (4, 2), (4, 5)))
    with mpmath.workdps(50):
        mq, mk, mv = (as_mpf_array(a) for a in (q, k, v))
        parts = Fraction(np.int64(1), np.int64(3))
        assert isinstance(parts.numerator, np.integer)
        want = scaled_dot_product_attention(mq, mk, mv, scale=Fraction(1, 3))
        assert (scaled_dot_product_attention(mq, mk, mv, scale=parts) == want).all()


def test_a_fraction_scale_is_exact_on_the_mpmath_path() -> None:
    """mpmath refuses a Fraction (a bare TypeError before); it becomes numerator / denominator at
    the working precision, so 1/3 is exact to 50 digits, and agrees with the float path."""
    from fractions import Fraction

    q, k, v = _inputs(45, ((3, 2), (4, 2), (4, 2)))
    floats = scaled_dot_product_attention(q, k, v, scale=Fraction(1, 3))
    np.testing.assert_allclose(floats, scaled_dot_product_attention(q, k, v, scale=1 / 3), rtol=1e-15)
    with mpmath.workdps(50):
        mq, mk, mv = (as_mpf_array(a) for a in (q, k, v))
        exact = scaled_dot_product_attention(mq, mk, mv, scale=Fraction(1, 3))
        third = scaled_dot_product_attention(mq, mk, mv, scale=mpmath.mpf(1) / 3)
        assert all(a == b for a, b in zip(exact.flat, third.flat, strict=True))
    np.testing.assert_allclose(exact.astype(float), floats, rtol=1e-14)


# A key that wins by a margin of 1 in q k^T, times a scale of about 1e400, takes all the weight:
# the output is that key's value row (by hand: softmax of [1e400, 0] is [1, 0]).
HUGE_Q = np.array([[1.0, 0.0]])
HUGE_K = np.array([[1.0, 0.0], [0.0, 1.0]])
HUGE_V = np.array([[1.0, 2.0], [3.0, 4.0]])


def test_a_fraction_scale_beyond_the_float_range_overflows_or_is_exact_on_the_mpmath_path() -> None:
    """A Fraction is finite at any size: beyond float64 it is refused as overflowing the working
    dtype (a bare OverflowError from ``float`` before), named by its size; on the mpmath path it
    is accepted, as the integer 10**400 is."""
    big = Fraction(10**400, 3)
    overflow = r"^scale = a fraction of about 401 digits over 1 digits overflows the working dtype "
    for dtype in (np.float64, np.float32):
        q, k, v = (a.astype(dtype) for a in (HUGE_Q, HUGE_K, HUGE_V))
        with pytest.raises(SpecValueError, match=overflow + np.dtype(dtype).name + " " + ACCEPTED_SCALE):
            scaled_dot_product_attention(q, k, v, scale=big)
        with pytest.raises(SpecValueError, match=overflow + np.dtype(dtype).name + " "):
            scaled_dot_product_attention_backward(q, k, v, np.ones((1, 2), dtype), scale=big)
    mq, mk, mv = (as_mpf_array(a) for a in (HUGE_Q, HUGE_K, HUGE_V))
    out = scaled_dot_product_attention(mq, mk, mv, scale=big)
    assert out.dtype == object and [float(x) for x in out[0]] == [1.0, 2.0]
    as_int = scaled_dot_product_attention(mq, mk, mv, scale=10**400)
    assert all(a == b for a, b in zip(out.flat, as_int.flat, strict=True))


def test_a_longdouble_scale_beyond_float64_is_finite() -> None:
    """np.longdouble('1e400') is a finite longdouble (80-bit x87 here): accepted on the
    longdouble and mpmath paths (it was refused as ``scale = inf``, judged through float), and
    refused on float64 as overflowing it, showing its own value."""
    if np.finfo(np.longdouble).maxexp <= np.finfo(np.float64).maxexp:
        pytest.skip("longdouble has float64's range on this platform")
    big = np.longdouble("1e400")
    assert np.isfinite(big)
    q, k, v = (a.astype(np.longdouble) for a in (HUGE_Q, HUGE_K, HUGE_V))
    out = scaled_dot_product_attention(q, k, v, scale=big)
    assert out.dtype == np.longdouble and out.tolist() == [[1.0, 2.0]]
    mq, mk, mv = (as_mpf_array(a) for a in (HUGE_Q, HUGE_K, HUGE_V))
    out = scaled_dot_product_attention(mq, mk, mv, scale=big)
    assert out.dtype == object and [float(x) for x in out[0]] == [1.0, 2.0]
    with pytest.raises(
        SpecValueError,
        match=r"^scale = np\.longdouble\('1e\+400'\) overflows the working dtype float64 " + ACCEPTED_SCALE,
    ):
        scaled_dot_product_attention(HUGE_Q, HUGE_K, HUGE_V, scale=big)


def test_complex_operands_are_refused_naming_their_dtype() -> None:
    q, k, v = _inputs(46, ((3, 2), (4, 2), (4, 2)))
    with pytest.raises(SpecTypeError, match=r"^q has dtype complex128; accepted: a floating dtype"):
        scaled_dot_product_attention(q.astype(complex), k, v)


def test_mixed_float_operands_compute_in_numpys_result_type() -> None:
    """The module docstring: floating inputs compute in their common dtype (numpy.result_type):
    a float32 q with float64 k/v computes in float64, agreeing with torch in float64 on the
    exactly widened q."""
    q, k, v = _inputs(47, ((3, 5), (4, 5), (4, 3)))
    d_out = np.random.default_rng(47).normal(size=(3, 3))
    q32 = q.astype(np.float32)
    for args in ((q32, k, v), (k[:3].astype(np.float32), q32, v[:3])):
        assert scaled_dot_product_attention(*args).dtype == np.result_type(*(a.dtype for a in args))
    out = scaled_dot_product_attention(q32, k, v)
    assert out.dtype == np.float64
    want, _ = torch_sdpa(q32.astype(np.float64), k, v, d_out)
    close64(out, want)


@pytest.mark.parametrize("d", [2, 3, 5, 7, 10, 17, 64, 100])
def test_the_default_float32_scale_is_one_over_sqrt_d_rounded_once(d: int) -> None:
    """Mirrors torch's SDPA (aten ``sdp::calculate_scale``: ``1 / sqrt(d)`` in double, then the
    kernel's float) and the reference provider (``q.dtype.type(1.0 / math.sqrt(d))``): the
    correctly rounded float32 of 1/sqrt(d), checked at 40 digits. ``np.float32(1) /
    np.sqrt(np.float32(d))`` is 1 ulp off it for d = 7 and 17."""
    got = _arith.inverse_sqrt(d, np.dtype(np.float32))
    assert got.dtype == np.float32 and got == np.float32(1.0 / math.sqrt(d))
    with mpmath.workdps(40):
        exact = 1 / mpmath.sqrt(d)
        ulp = float(np.spacing(got))
        assert abs(mpmath.mpf(float(got)) - exact) <= ulp / 2
    if np.finfo(np.longdouble).nmant > 52:  # longdouble keeps its own precision, not float64's
        wide = _arith.inverse_sqrt(d, np.dtype(np.longdouble))
        assert wide == np.longdouble(1) / np.sqrt(np.longdouble(d))
        top, bottom = wide.as_integer_ratio()
        with mpmath.workdps(40):  # a few longdouble ulps (2**-63), far inside float64's 2**-53
            assert abs(mpmath.mpf(top) / bottom - exact) <= mpmath.mpf(2) ** -61 * exact


def test_leading_axes_that_do_not_broadcast_are_refused_saying_what_is_accepted() -> None:
    """review102 L4: the refusal named the shapes only."""
    from torchlean.spec import SpecValueError, scaled_dot_product_attention

    q, k, v = np.zeros((2, 3, 4, 5)), np.zeros((2, 2, 6, 5)), np.zeros((2, 2, 6, 7))
    with pytest.raises(SpecValueError) as caught:
        scaled_dot_product_attention(q, k, v)
    assert str(caught.value) == (
        "leading axes of q (2, 3, 4, 5), k (2, 2, 6, 5), v (2, 2, 6, 7) do not broadcast (accepted: leading "
        "axes that agree on each trailing axis or have extent 1 there, numpy's broadcasting)")
