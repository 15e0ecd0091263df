"""Masked ``reference.attention`` really is ``fixed-left`` (DESIGN.md §1.6), forward and VJP.

With a boolean mask, ``scaled_dot_product_attention`` and its VJP run every contraction that
touches the mask (forward ``W·V``; ``dq``, ``dk``, ``dv``) through ``_fold.fold_matmul_where``,
whose docstring pins the order: :func:`fold_matmul`'s left fold over the contracted axis
(``((a[m,0]*b[0,n] + a[m,1]*b[1,n]) + ...)``, each product rounded, no fused multiply-add, the
sum starting from its first term) in which a term at a blocked ``(m, k)`` pair is replaced by
``+0.0``.  The kernels' docstrings (``kernels.scaled_dot_product_attention`` and ``_vjp``) name
the contractions: ``out = W v`` (fold over keys), ``dW = g v^T`` (fold over value features),
``dS = hard-masked-softmax-VJP(dW) * scale`` (``w * (dW - sum(dW * w))``, the row sum a left
fold over allowed keys), ``dq = dS k`` (fold over keys), ``dk = dS^T q`` and ``dv = W^T g``
(folds over queries).

The oracle below is a scalar float32 Python loop over that definition; it uses no torchlean
helper.  Each test also shows that folding the pinned contraction in reverse order gives other
bits on the same input, so a kernel that changed the order would fail.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Collection
from typing import Any

import numpy as np
from fold_oracle import F32, Array, bits, fold
from numpy.testing import assert_array_equal

from torchlean.backend.providers.reference import kernels as K


def _contract(
    shape: tuple[int, int], depth: int, term: Callable[[int, int, int], Any], reverse: bool
) -> Array:
    """``out[r, c] = fold(term(r, c, 0), ..., term(r, c, depth - 1))`` as a float32 array."""
    out = np.empty(shape, dtype=F32)
    for r in range(shape[0]):
        for c in range(shape[1]):
            out[r, c] = fold([term(r, c, t) for t in range(depth)], reverse)
    return out


def _oracle(
    q: Array, k: Array, v: Array, allowed: Array, g: Array, reverse: Collection[str] = ()
) -> dict[str, Array]:
    """Masked attention and its VJP for 2-D float32 ``q (nQ, d)``, ``k (nK, d)``, ``v (nK, dv)``,
    ``allowed (nQ, nK)`` and cotangent ``g (nQ, dv)``, from scalar loops.

    ``reverse`` names the masked contractions (``out``, ``dq``, ``dk``, ``dv``) to fold in reverse
    order instead of the documented increasing order; it exists to show that the order matters.
    """
    n_q, d = q.shape
    n_k, d_v = v.shape
    zero = F32(0)
    factor = F32(1.0 / math.sqrt(d))  # the kernel's default scale, rounded to float32

    def masked(i: int, j: int, value: Any) -> Any:
        return value if allowed[i, j] else zero

    scores = _contract((n_q, n_k), d, lambda i, j, t: q[i, t] * k[j, t], False) * factor
    w = np.zeros((n_q, n_k), dtype=F32)
    for i in range(n_q):
        keys = [j for j in range(n_k) if allowed[i, j]]
        if not keys:
            continue  # a fully blocked row has zero weights
        top = max(scores[i, j] for j in keys)
        num = [np.exp(scores[i, j] - top) if allowed[i, j] else zero for j in range(n_k)]
        den = fold(num)
        for j in keys:
            w[i, j] = num[j] / den

    out = _contract((n_q, d_v), n_k, lambda i, n, j: masked(i, j, w[i, j] * v[j, n]), "out" in reverse)
    d_w = _contract((n_q, n_k), d_v, lambda i, j, n: g[i, n] * v[j, n], False)
    d_s = np.zeros((n_q, n_k), dtype=F32)
    for i in range(n_q):
        dot = fold([masked(i, j, d_w[i, j] * w[i, j]) for j in range(n_k)])
        for j in range(n_k):
            d_s[i, j] = masked(i, j, w[i, j] * (d_w[i, j] - dot)) * factor
    dq = _contract((n_q, d), n_k, lambda i, t, j: masked(i, j, d_s[i, j] * k[j, t]), "dq" in reverse)
    dk = _contract((n_k, d), n_q, lambda j, t, i: masked(i, j, d_s[i, j] * q[i, t]), "dk" in reverse)
    dv = _contract((n_k, d_v), n_q, lambda j, n, i: masked(i, j, w[i, j] * g[i, n]), "dv" in reverse)
    return {"out": out, "dq": dq, "dk": dk, "dv": dv, "w": w, "d_s": d_s}


def _inputs(seed: int) -> tuple[Array, Array, Array, Array, Array]:
    """40 queries and 40 keys with mixed-magnitude values and cotangents (1e-2 to 1e2), about 75 %
    of the pairs allowed, one fully blocked query row and one key that no query may attend."""
    rng = np.random.default_rng(seed)
    n_q, n_k, d, d_v = 40, 40, 8, 8
    q = rng.standard_normal((n_q, d)).astype(F32)
    k = rng.standard_normal((n_k, d)).astype(F32)
    v = (rng.standard_normal((n_k, d_v)) * 10.0 ** rng.uniform(-2, 2, (n_k, d_v))).astype(F32)
    g = (rng.standard_normal((n_q, d_v)) * 10.0 ** rng.uniform(-2, 2, (n_q, d_v))).astype(F32)
    allowed = rng.random((n_q, n_k)) > 0.25
    allowed[3, :] = False
    allowed[:, 7] = False
    return q, k, v, allowed, g


def test_masked_attention_forward_is_a_left_fold_over_keys_bitwise_float32() -> None:
    """Pins ``out[i, n] = fold_j (allowed[i, j] ? W[i, j] * v[j, n] : +0.0)`` in increasing key
    order (``fold_matmul_where``; ``kernels.scaled_dot_product_attention``'s docstring)."""
    q, k, v, allowed, g = _inputs(0)
    out = K.scaled_dot_product_attention(q, k, v, allowed)
    expected = _oracle(q, k, v, allowed, g)["out"]
    assert out.dtype == F32
    assert_array_equal(bits(out), bits(expected), err_msg="out")
    assert not out[3].any()  # the fully blocked row
    reversed_keys = _oracle(q, k, v, allowed, g, reverse={"out"})["out"]
    assert (bits(reversed_keys) != bits(expected)).any()


def test_masked_attention_vjp_contractions_are_left_folds_bitwise_float32() -> None:
    """Pins ``dq`` (fold over keys) and ``dk``, ``dv`` (folds over queries), each in increasing
    order with blocked pairs selected away (``fold_matmul_where``;
    ``kernels.scaled_dot_product_attention_vjp``'s docstring), and the unmasked ``dW = g v^T``
    and masked ``dS`` row sum they are built from."""
    q, k, v, allowed, g = _inputs(1)
    out = K.scaled_dot_product_attention(q, k, v, allowed)
    dq, dk, dv, dmask = K.scaled_dot_product_attention_vjp(g, q, k, v, allowed, out=out)
    assert dmask is None
    expected = _oracle(q, k, v, allowed, g)
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        assert got is not None and got.dtype == F32, name
        assert_array_equal(bits(got), bits(expected[name]), err_msg=name)
    assert dq is not None and not dq[3].any()  # the fully blocked query gets no gradient
    assert dk is not None and dv is not None and not dk[7].any() and not dv[7].any()
    for name in ("dq", "dk", "dv"):
        other = _oracle(q, k, v, allowed, g, reverse={name})[name]
        assert (bits(other) != bits(expected[name])).any(), name


def test_masked_attention_folds_in_key_and_query_order_hand_computed() -> None:
    """Hand-computed: q = 0 gives equal scores, so each of the 4 allowed keys gets weight 0.25
    exactly; the fifth key is blocked and holds NaN.  Values ``1e8, 1, -1e8, 1`` along keys give
    ``((2.5e7 + 0.25) - 2.5e7) + 0.25 = 0.25`` in float32, the reverse order gives 0, and so does
    pairing ``(2.5e7 + 0.25) + (-2.5e7 + 0.25)``.  The same holds for ``dv``, a fold over the 4
    queries of ``W[i, j] * g[i, n]``."""
    column = np.array([1e8, 1.0, -1e8, 1.0], dtype=F32)
    quarter = [F32(0.25) * value for value in column]
    assert fold(quarter) == F32(0.25)
    assert fold(quarter, reverse=True) == F32(0.0)
    assert (quarter[0] + quarter[1]) + (quarter[2] + quarter[3]) == F32(0.0)

    q = np.zeros((4, 2), dtype=F32)
    k = np.ones((5, 2), dtype=F32)
    v = np.zeros((5, 1), dtype=F32)
    v[:4, 0] = column
    v[4, 0] = np.nan
    allowed = np.array([True, True, True, True, False])[None, :].repeat(4, axis=0)
    out = K.scaled_dot_product_attention(q, k, v, allowed)
    assert_array_equal(out, np.full((4, 1), 0.25, dtype=F32))

    g = column[:, None].copy()
    _, _, dv, _ = K.scaled_dot_product_attention_vjp(g, q, k, v, allowed, out=out)
    assert dv is not None
    assert_array_equal(dv, np.array([[0.25]] * 4 + [[0.0]], dtype=F32))


def test_unmasked_attention_vjp_is_a_left_fold_bitwise_float32() -> None:
    """``mask=None`` runs ``fold_matmul`` rather than ``fold_matmul_where``: pinned by the same
    scalar oracle with every pair allowed (review20 mut K30: an extra rounding of dk passed)."""
    q, k, v, allowed, g = _inputs(1)
    out = K.scaled_dot_product_attention(q, k, v)
    dq, dk, dv = K.scaled_dot_product_attention_vjp(g, q, k, v, out=out)[:3]
    expected = _oracle(q, k, v, np.ones_like(allowed), g)
    assert_array_equal(bits(out), bits(expected["out"]))
    for name, got in (("dq", dq), ("dk", dk), ("dv", dv)):
        assert got is not None
        assert_array_equal(bits(got), bits(expected[name]), err_msg=name)


def test_keys_and_values_shared_across_heads_fold_heads_and_queries_as_one_left_fold() -> None:
    """review79 F2: with K and V shared by 3 heads (multi-query attention), ``dk`` and ``dv`` sum
    over heads and queries. They are one left fold over ``(head, query)`` in row-major order, the
    order ``sum_to_shape`` and ``linear`` take (it was a fold per head, then a fold over heads,
    which gave other bits). Masked and unmasked, against the scalar oracle; the per-head-first
    order gives other bits on these inputs (control)."""
    heads = [_inputs(seed) for seed in (2, 3, 4)]
    _, k, v, _, _ = heads[0]
    q = np.stack([head[0] for head in heads])
    g = np.stack([head[4] for head in heads])
    for masked in (True, False):
        allowed = np.stack([head[3] for head in heads]) if masked else np.ones((3, 40, 40), dtype=bool)
        per_head = [_oracle(q[h], k, v, allowed[h], g[h]) for h in range(3)]
        out = K.scaled_dot_product_attention(q, k[None], v[None], allowed if masked else None)
        _, dk, dv, _ = K.scaled_dot_product_attention_vjp(
            g, q, k[None], v[None], allowed if masked else None, out=out
        )
        for name, got in (("dk", dk), ("dv", dv)):
            left = q if name == "dk" else g
            weights = [o["d_s"] if name == "dk" else o["w"] for o in per_head]
            expected = np.empty((1, 40, 8), dtype=F32)
            nested = np.empty((1, 40, 8), dtype=F32)
            for j in range(40):
                for c in range(8):
                    terms = [
                        [weights[h][i, j] * left[h, i, c] if allowed[h, i, j] else F32(0) for i in range(40)]
                        for h in range(3)
                    ]
                    expected[0, j, c] = fold([term for row in terms for term in row])
                    nested[0, j, c] = fold([fold(row) for row in terms])
            assert got is not None
            assert_array_equal(bits(got), bits(expected), err_msg=f"{name} masked={masked}")
            assert (bits(nested) != bits(expected)).any(), name
