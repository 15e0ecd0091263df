"""review140 F1: ``tl.scaled_dot_product_attention(..., enable_gqa=True)`` is torch's grouped-query
attention (query head h attends with key/value head h // (Hq / Hkv)), values and gradients against
torch float64 under each CPU profile, with masks of each head layout and causal; its refusals are
torch's checks; ``enable_gqa=False`` is the plain call."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torchlean as tl
from torchlean.backend.errors import GuardError

PROFILES = ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"]
B, HQ, HKV, NQ, NK, D, DV = 2, 6, 2, 3, 5, 4, 3


def _data(seed: int = 0) -> tuple[np.ndarray[Any, Any], ...]:
    rng = np.random.default_rng(seed)
    return (rng.standard_normal((B, HQ, NQ, D)), rng.standard_normal((B, HKV, NK, D)),
            rng.standard_normal((B, HKV, NK, DV)), rng.standard_normal((B, HQ, NQ, DV)))


def _masks() -> dict[str, np.ndarray[Any, Any] | None]:
    rng = np.random.default_rng(1)
    padding = np.ones((B, 1, 1, NK), dtype=bool)
    padding[0, ..., 3:] = False
    per_head = rng.random((HQ, NQ, NK)) > 0.4
    per_head[2, 1] = False  # a fully blocked row of query head 2 (key/value head 0)
    return {"none": None, "key padding (B,1,1,nK)": padding, "per query head (Hq,nQ,nK)": per_head,
            "shared (nQ,nK)": rng.random((NQ, NK)) > 0.3}


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize(("mask_name", "causal"), [(name, False) for name in _masks()] + [("none", True)])
def test_grouped_query_attention_matches_torch_float64(profile: str, mask_name: str, causal: bool) -> None:
    mask = _masks()[mask_name]  # torch refuses a mask with is_causal (so does torchlean)
    q, k, v, g = _data()
    tq, tk, tv = (torch.tensor(a, requires_grad=True) for a in (q, k, v))
    tmask = None if mask is None else torch.tensor(mask)
    expected = TF.scaled_dot_product_attention(tq, tk, tv, attn_mask=tmask, is_causal=causal, enable_gqa=True)
    expected.backward(torch.tensor(g))
    with tl.session(profile):
        lq, lk, lv = (tl.tensor(a, requires_grad=True) for a in (q, k, v))
        out = tl.scaled_dot_product_attention(lq, lk, lv, mask, is_causal=causal, enable_gqa=True)
        assert out.shape == (B, HQ, NQ, DV)
        tl.reduce_sum(out * tl.tensor(g)).backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-13)
    for leaf, ref in ((lq, tq), (lk, tk), (lv, tv)):
        assert leaf.grad is not None and ref.grad is not None
        np.testing.assert_allclose(leaf.grad.numpy(), ref.grad.numpy(), rtol=1e-12, atol=1e-13)


def test_without_grouping_the_keyword_changes_nothing() -> None:
    q, k, v, _ = _data()
    k, v = np.repeat(k, HQ // HKV, axis=1), np.repeat(v, HQ // HKV, axis=1)
    plain = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v))
    off = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), enable_gqa=False)
    on = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), enable_gqa=True)
    np.testing.assert_array_equal(plain.numpy(), off.numpy())
    np.testing.assert_allclose(on.numpy(), plain.numpy(), rtol=1e-14, atol=1e-15)


def test_grouped_query_attention_refusals_name_the_shapes() -> None:
    q, k, v, _ = _data()
    t = tl.tensor
    with pytest.raises(GuardError, match=r"same number of heads .* q has 6, k 4, v 4"):
        tl.scaled_dot_product_attention(t(q), t(np.concatenate([k, k], 1)), t(np.concatenate([v, v], 1)),
                                        enable_gqa=True)
    with pytest.raises(GuardError, match=r"q has 6, k 2, v 3"):
        tl.scaled_dot_product_attention(t(q), t(k), t(np.concatenate([v, v[:, :1]], 1)), enable_gqa=True)
    with pytest.raises(GuardError, match=r"rank 3 or more, heads on axis -3; got q \(3, 4\)"):
        tl.scaled_dot_product_attention(t(q[0, 0]), t(k[0, 0]), t(v[0, 0]), enable_gqa=True)
    with pytest.raises(GuardError, match=r"mask's head axis \(-3\) must be 1 or q's 6; got mask \(2, 3, 5\)"):
        tl.scaled_dot_product_attention(t(q), t(k), t(v), np.ones((HKV, NQ, NK), bool), enable_gqa=True)
    with pytest.raises(tl.TensorTypeError, match=r"enable_gqa must be a bool .* got 1"):
        tl.scaled_dot_product_attention(t(q), t(k), t(v), enable_gqa=1)  # type: ignore[arg-type]
    # without the keyword, grouped shapes do not broadcast (as in torch), and the refusal names the
    # keyword (review223 F4)
    with pytest.raises(GuardError) as caught:
        tl.scaled_dot_product_attention(t(q), t(k), t(v))
    assert str(caught.value) == (
        f"scaled_dot_product_attention: q has 6 heads (axis -3) and k, v have 2, which do not broadcast (q "
        f"{q.shape}, k {k.shape}, v {v.shape}); for grouped-query attention, each k/v head serving a group "
        "of q's, pass enable_gqa=True (as torch's SDPA takes it)"
    )
    with pytest.raises(GuardError, match="not broadcastable"):  # heads that would not group
        tl.scaled_dot_product_attention(t(q), t(k[:, :1].repeat(4, 1)), t(v[:, :1].repeat(4, 1)))
    # review228 F4: no hint where grouping would meet another refusal (d differs)
    with pytest.raises(GuardError) as caught:
        tl.scaled_dot_product_attention(t(q), t(k[..., :-1]), t(v))
    assert "enable_gqa" not in str(caught.value) and "q's d = 4 and k's d = 3 differ" in str(caught.value)


@pytest.mark.parametrize(("change", "what"), [
    ("mask_rank", "the mask does not broadcast to the scores' shape (2, 6, 3, 5)"),
    ("mask_nk", "the mask does not broadcast to the scores' shape (2, 6, 3, 5)"),
    ("k_d", "q's d = 4 and k's d = 3 differ"),
    ("q_batch", "the batch axes before the head axis (-3) do not broadcast"),
])
def test_grouped_refusals_name_the_shapes_as_given(change: str, what: str) -> None:
    """review223 F3: the guard saw the operands with their head axis split, so its refusals named
    rank-5/6 shapes the caller never passed (q's batch (3, 2, 3), the group size among them)."""
    shapes = {"q": (2, 6, 3, 4), "k": (2, 2, 5, 4), "v": (2, 2, 5, 3)}
    mask = None
    if change == "mask_rank":
        mask = (1, 2, 6, 3, 5)
    elif change == "mask_nk":
        mask = (2, 6, 3, 4)
    elif change == "k_d":
        shapes["k"] = (2, 2, 5, 3)
    else:
        shapes["q"] = (3, 6, 3, 4)
    z = {name: tl.tensor(np.zeros(shape)) for name, shape in shapes.items()}
    with pytest.raises(GuardError) as caught:
        tl.scaled_dot_product_attention(z["q"], z["k"], z["v"], None if mask is None else np.ones(mask, bool),
                                        enable_gqa=True)
    given = f"q {shapes['q']}, k {shapes['k']}, v {shapes['v']}" + ("" if mask is None else f", mask {mask}")
    assert str(caught.value) == (
        f"scaled_dot_product_attention: with enable_gqa=True, {what} (given: {given}; accepted: q (..., Hq, "
        "nQ, d), k (..., Hkv, nK, d), v (..., Hkv, nK, dv), Hq a multiple of Hkv, a mask broadcastable to "
        "(..., Hq, nQ, nK))"
    )


def test_no_heads_at_all_gives_torchs_empty_result() -> None:
    """review145 F6: ``Hq == Hkv == 0`` was refused; torch returns an empty ``(B, 0, nQ, dv)``."""
    q, k, v = np.ones((B, 0, NQ, D)), np.ones((B, 0, NK, D)), np.ones((B, 0, NK, DV))
    expected = TF.scaled_dot_product_attention(*(torch.tensor(a) for a in (q, k, v)), enable_gqa=True)
    got = tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), enable_gqa=True)
    assert got.shape == tuple(expected.shape) == (B, 0, NQ, DV)
