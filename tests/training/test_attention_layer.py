"""The multi-head attention layer and the transformer block (issue 5 item 3): values and gradients
against independent torch float64 implementations of the same layers with the same weights —
``torch.nn.functional.scaled_dot_product_attention`` composed with reshape + permute head splits,
``torch.nn.MultiheadAttention(bias=False)`` and ``torch.nn.TransformerEncoderLayer(norm_first=True)``
— under the reference (``reference.attention``) and LibTorch (``libtorch.sdpa_forward``) profiles."""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from torchlean import nn
from torchlean.autograd.grad_mode import no_grad
from torchlean.autograd.session import Session
from torchlean.nn.eager import EagerOps
from torchlean.tensor import Tensor

RTOL, ATOL = 1e-12, 1e-13
PROFILES = ["checked_cpu", "libtorch_forward_cpu"]


def t64(array: np.ndarray | torch.Tensor) -> torch.Tensor:
    """A float64 torch tensor (torch tensors pass through, keeping their autograd graph)."""
    if isinstance(array, torch.Tensor):
        return array
    return torch.tensor(np.asarray(array, dtype=np.float64))


def forward(model: nn.Model, x: np.ndarray, *, profile: str = "checked_cpu") -> np.ndarray:
    """The model's eager forward value on a batch ``x`` (evaluation mode, no gradients)."""
    params = [Tensor(p) for p in model.parameters]
    with Session(profile), no_grad():
        out = model.layer.forward(
            EagerOps(), params, Tensor(np.asarray(x, dtype=model.dtype)), training=False
        )
    return out.numpy()


def gradients(
    model: nn.Model, x: np.ndarray, cotangent: np.ndarray, *, profile: str
) -> tuple[list[np.ndarray], np.ndarray, list[str]]:
    """Gradients of ``sum(model(x) * cotangent)`` for every parameter and for ``x`` (torchlean
    tape), and the capsules the session selected."""
    params = [Tensor(p, requires_grad=True) for p in model.parameters]
    xt = Tensor(x, requires_grad=True)
    with Session(profile) as session:
        out = model.layer.forward(EagerOps(), params, xt, training=True)
        out.backward(Tensor(cotangent))
    assert all(p.grad is not None for p in params) and xt.grad is not None
    return [p.grad.numpy() for p in params], xt.grad.numpy(), [k.capsule.name for k in session.selected]


def randomize(model: nn.Model, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    model.load_state({name: rng.standard_normal(value.shape) for name, value in model.state().items()})


def causal_allowed(tokens: int) -> torch.Tensor:
    return torch.ones(tokens, tokens, dtype=torch.bool).tril()


def torch_mha(
    x: torch.Tensor, s: Mapping[str, np.ndarray | torch.Tensor], heads: int, *, causal: bool
) -> torch.Tensor:
    """Multi-head self-attention without biases: projections, head split by reshape + permute,
    torch SDPA per head, merge, output projection."""
    batch, tokens, d_model = x.shape

    def split(name: str) -> torch.Tensor:
        h = x @ t64(s[name]).T
        return h.reshape(batch, tokens, heads, d_model // heads).permute(0, 2, 1, 3)

    q, k, v = split("wq"), split("wk"), split("wv")
    mask = causal_allowed(tokens) if causal else None
    out = TF.scaled_dot_product_attention(q, k, v, attn_mask=mask)
    out = out.permute(0, 2, 1, 3).reshape(batch, tokens, d_model)
    return out @ t64(s["wo"]).T


@pytest.mark.parametrize("causal", [False, True])
@pytest.mark.parametrize("heads", [1, 2, 4])
def test_multi_head_attention_matches_torch_sdpa(causal, heads):
    model = nn.build(
        nn.multi_head_attention(8, heads, causal=causal), input_shape=(5, 8), seed=0, dtype=np.float64
    )
    assert list(model.state()) == ["wq", "wk", "wv", "wo"]
    x = np.random.default_rng(0).standard_normal((3, 5, 8))
    expected = torch_mha(t64(x), model.state(), heads, causal=causal)
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_matches_torch_module(causal):
    """The same layer against ``torch.nn.MultiheadAttention(bias=False)`` (whose boolean mask is
    inverted: True = blocked)."""
    model = nn.build(
        nn.multi_head_attention(6, 3, causal=causal), input_shape=(4, 6), seed=2, dtype=np.float64
    )
    s = model.state()
    mha = torch.nn.MultiheadAttention(6, 3, bias=False, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_weight.copy_(torch.cat([t64(s["wq"]), t64(s["wk"]), t64(s["wv"])]))
        mha.out_proj.weight.copy_(t64(s["wo"]))
        x = np.random.default_rng(3).standard_normal((2, 4, 6))
        blocked = torch.ones(4, 4, dtype=torch.bool).triu(1) if causal else None
        expected, _ = mha(t64(x), t64(x), t64(x), attn_mask=blocked, need_weights=False)
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=RTOL, atol=ATOL)


def test_attention_projections_are_initialised_as_the_docstring_says():
    """``U(-1/sqrt(d_model), 1/sqrt(d_model))`` each (review24 nn F5): within the bound, and with
    4096 draws each the extremes come within 1 % of it (a miss has probability below 1e-17)."""
    d = 64
    state = nn.build(nn.multi_head_attention(d, 4), input_shape=(3, d), seed=5, dtype=np.float64).state()
    assert sorted(state) == ["wk", "wo", "wq", "wv"]
    bound = 1 / np.sqrt(d)
    for w in state.values():
        assert w.shape == (d, d)
        assert np.abs(w).max() <= bound and np.abs(w).max() > 0.99 * bound
        assert abs(w.mean()) < 0.01 and abs(w.std() - bound / np.sqrt(3)) < 0.03 * bound  # ~7 sigma each


def test_causal_attention_ignores_future_tokens():
    model = nn.build(nn.multi_head_attention(4, 2, causal=True), input_shape=(5, 4), seed=0, dtype=np.float64)
    x = np.random.default_rng(0).standard_normal((1, 5, 4))
    changed = x.copy()
    changed[0, 3:] += 10.0
    np.testing.assert_array_equal(forward(model, x)[0, :3], forward(model, changed)[0, :3])


@pytest.mark.parametrize("causal", [False, True])
def test_transformer_block_matches_torch_encoder_layer(causal):
    """Pre-norm block = ``torch.nn.TransformerEncoderLayer(norm_first=True, activation="gelu")``
    with zero attention biases and dropout 0."""
    d, heads, hidden, tokens = 8, 2, 12, 5
    model = nn.build(
        nn.transformer_block(d, heads, mlp_hidden=hidden, causal=causal),
        input_shape=(tokens, d),
        seed=0,
        dtype=np.float64,
    )
    randomize(model)
    s = model.state()
    layer = torch.nn.TransformerEncoderLayer(
        d,
        heads,
        dim_feedforward=hidden,
        dropout=0.0,
        activation="gelu",
        batch_first=True,
        norm_first=True,
        dtype=torch.float64,
    )
    layer.train()  # keep torch off its fused inference fast path
    with torch.no_grad():
        attn = layer.self_attn
        attn.in_proj_weight.copy_(torch.cat([t64(s["attn.wq"]), t64(s["attn.wk"]), t64(s["attn.wv"])]))
        attn.in_proj_bias.zero_()
        attn.out_proj.weight.copy_(t64(s["attn.wo"]))
        attn.out_proj.bias.zero_()
        for ours, theirs in (("ln1", layer.norm1), ("ln2", layer.norm2)):
            theirs.weight.copy_(t64(s[f"{ours}.weight"]))
            theirs.bias.copy_(t64(s[f"{ours}.bias"]))
        for ours, theirs in (("fc1", layer.linear1), ("fc2", layer.linear2)):
            theirs.weight.copy_(t64(s[f"{ours}.weight"]))
            theirs.bias.copy_(t64(s[f"{ours}.bias"]))
        x = np.random.default_rng(1).standard_normal((3, tokens, d))
        mask = torch.ones(tokens, tokens, dtype=torch.bool).triu(1) if causal else None
        expected = layer(t64(x), src_mask=mask)
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=1e-11, atol=1e-12)


def test_attention_model_under_libtorch_profile_agrees_with_reference():
    """The attention core runs on ``libtorch.sdpa_forward`` under libtorch_forward_cpu; the model's
    values agree with the reference profile to float64 rounding."""
    layer = nn.sequential(nn.transformer_block(8, 2, causal=True), nn.mean_pool(0), nn.linear(8, 3))
    model = nn.build(layer, input_shape=(4, 8), seed=0, dtype=np.float64)
    x = np.random.default_rng(0).standard_normal((2, 4, 8))
    np.testing.assert_allclose(
        forward(model, x, profile="libtorch_forward_cpu"), forward(model, x), rtol=1e-12, atol=1e-13
    )


# ------------------------------------------------------------------------------- gradients


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("causal", [False, True])
def test_multi_head_attention_gradients_match_torch_autograd(profile, causal):
    heads, tokens, d = 2, 5, 6
    model = nn.build(
        nn.multi_head_attention(d, heads, causal=causal), input_shape=(tokens, d), seed=0, dtype=np.float64
    )
    rng = np.random.default_rng(4)
    x = rng.standard_normal((3, tokens, d))
    cotangent = rng.standard_normal((3, tokens, d))
    grads, dx, selected = gradients(model, x, cotangent, profile=profile)
    attention = "reference.attention" if profile == "checked_cpu" else "libtorch.sdpa_forward"
    assert attention in selected

    weights = {name: t64(v).requires_grad_() for name, v in model.state().items()}
    xt = t64(x).requires_grad_()
    out = torch_mha(xt, weights, heads, causal=causal)
    (out * t64(cotangent)).sum().backward()
    for name, grad in zip(weights, grads, strict=True):
        np.testing.assert_allclose(grad, weights[name].grad.numpy(), rtol=1e-11, atol=1e-12, err_msg=name)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("profile", PROFILES)
def test_transformer_block_gradients_match_torch_autograd(profile):
    d, heads, hidden, tokens = 4, 2, 6, 3
    model = nn.build(
        nn.transformer_block(d, heads, mlp_hidden=hidden, causal=True),
        input_shape=(tokens, d),
        seed=0,
        dtype=np.float64,
    )
    randomize(model, seed=5)
    rng = np.random.default_rng(6)
    x = rng.standard_normal((2, tokens, d))
    cotangent = rng.standard_normal((2, tokens, d))
    grads, dx, _ = gradients(model, x, cotangent, profile=profile)

    s = {name: t64(v).requires_grad_() for name, v in model.state().items()}
    xt = t64(x).requires_grad_()
    h = xt + torch_mha(
        TF.layer_norm(xt, (d,), s["ln1.weight"], s["ln1.bias"]),
        {k[5:]: v for k, v in s.items() if k.startswith("attn.")},
        heads,
        causal=True,
    )
    m = TF.layer_norm(h, (d,), s["ln2.weight"], s["ln2.bias"])
    out = h + TF.linear(TF.gelu(TF.linear(m, s["fc1.weight"], s["fc1.bias"])), s["fc2.weight"], s["fc2.bias"])
    (out * t64(cotangent)).sum().backward()
    for name, grad in zip(s, grads, strict=True):
        np.testing.assert_allclose(grad, s[name].grad.numpy(), rtol=1e-10, atol=1e-11, err_msg=name)
    np.testing.assert_allclose(dx, xt.grad.numpy(), rtol=1e-10, atol=1e-11)


def test_float32_attention_layer_close_to_float64_torch():
    model = nn.build(nn.multi_head_attention(8, 2, causal=True), input_shape=(6, 8), seed=0)
    x = np.random.default_rng(0).standard_normal((2, 6, 8)).astype(np.float32)
    out = forward(model, x)
    assert out.dtype == np.float32
    expected = torch_mha(t64(x), {k: v.astype(np.float64) for k, v in model.state().items()}, 2, causal=True)
    np.testing.assert_allclose(out, expected.numpy(), rtol=1e-5, atol=1e-6)


def test_attention_op_is_one_capsule_per_layer_call():
    """Projections are linear ops, head split/merge reshape/permute; the attention core is one op."""
    model = nn.build(nn.multi_head_attention(4, 2), input_shape=(3, 4), seed=0)
    with Session("checked_cpu") as session, no_grad():
        params = [Tensor(p) for p in model.parameters]
        model.layer.forward(EagerOps(), params, Tensor(np.zeros((1, 3, 4), np.float32)), training=False)
    assert [k.capsule.name for k in session.selected] == [
        "reference.linear",
        "reference.reshape",
        "reference.permute",
        "reference.attention",
    ]
