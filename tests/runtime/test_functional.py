"""Every user-facing op, end to end through the session and the TorchLean tape, against torch.

Oracle: ``torch`` (``torch.autograd`` for gradients) on the same inputs. For each case the
TorchLean result is computed by ``torchlean.functional`` in the default ``checked_cpu`` session,
then ``Tensor.backward(g)`` with a random cotangent ``g`` propagates through the tape; torch does
the same with ``torch.autograd``. Float64: forward to 1e-10 and gradients to 1e-6 relative
(infinity norm); float32 forward to 1e-5 relative against torch float64 of the same values.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torchlean as tl
from torchlean.backend.errors import GuardError
from torchlean.tensor import TensorTypeError

Array = np.ndarray[Any, Any]


@dataclass(frozen=True)
class Case:
    id: str
    fn: Callable[..., tl.Tensor]
    ref: Callable[..., torch.Tensor]
    make: Callable[[np.random.Generator], Sequence[Array]]
    diff: tuple[int, ...] = (0,)
    kwargs: dict[str, Any] = field(default_factory=dict)


def _n(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape)


def _away(rng: np.random.Generator, *shape: int, margin: float = 0.2) -> Array:
    """Normal values pushed at least ``margin`` away from 0 (kinks and poles stay out of reach)."""
    x = rng.standard_normal(shape)
    return np.where(x >= 0, x + margin, x - margin)


def _pos(rng: np.random.Generator, *shape: int) -> Array:
    return rng.uniform(0.3, 2.0, shape)


def _distinct(rng: np.random.Generator, *shape: int) -> Array:
    """A random permutation of well-separated values (no ties for max/min selections)."""
    count = int(np.prod(shape))
    return (rng.permutation(count).astype(np.float64) * 0.37 - count * 0.1).reshape(shape)


def _torch_hard_masked_softmax(x: torch.Tensor, mask: torch.Tensor, axis: int = -1) -> torch.Tensor:
    mask = mask.expand_as(x)
    scores = torch.where(mask, x, torch.full_like(x, -torch.inf))
    any_allowed = mask.any(dim=axis, keepdim=True)
    safe = torch.where(any_allowed, scores, torch.zeros_like(x))
    return torch.where(mask & any_allowed, torch.softmax(safe, dim=axis), torch.zeros_like(x))


def _torch_smooth_max_pool(x: torch.Tensor, beta: float, k: int, s: int, p: int) -> torch.Tensor:
    fill = -torch.inf if beta > 0 else torch.inf
    padded = TF.pad(x, (p, p, p, p), value=fill)
    windows = padded.unfold(2, k, s).unfold(3, k, s)  # (N, C, oh, ow, k, k)
    flat = windows.reshape(*windows.shape[:4], k * k)
    return torch.logsumexp(beta * flat, dim=-1) / beta


def _index(rng: np.random.Generator, shape: tuple[int, ...], high: int) -> Array:
    return rng.integers(0, high, size=shape).astype(np.int64)


_BLOCKED_MASK = np.array([[True, False, True, True], [False, False, False, False], [True, True, False, True]])

CASES: list[Case] = [
    # ----------------------------------------------------------------- binary, broadcasting, reuse
    Case("add_broadcast", tl.add, torch.add, lambda r: [_n(r, 3, 1, 4), _n(r, 5, 4)], (0, 1)),
    Case("add_reused", lambda x: x + x, lambda x: x + x, lambda r: [_n(r, 2, 3)]),
    Case("sub_broadcast", tl.sub, torch.sub, lambda r: [_n(r, 4, 1), _n(r, 1, 3)], (0, 1)),
    Case("mul_broadcast", tl.mul, torch.mul, lambda r: [_n(r, 2, 3, 4), _n(r, 4)], (0, 1)),
    Case("mul_reused", lambda x: x * x, lambda x: x * x, lambda r: [_n(r, 5)]),
    Case("div_broadcast", tl.div, torch.div, lambda r: [_n(r, 3, 4), _away(r, 4)], (0, 1)),
    Case("div_scalar", lambda x: x / 3.0, lambda x: x / 3.0, lambda r: [_n(r, 3, 2)]),
    Case("rdiv_scalar", lambda x: 2.0 / x, lambda x: 2.0 / x, lambda r: [_away(r, 3, 2)]),
    Case("rsub_scalar", lambda x: 1.5 - x, lambda x: 1.5 - x, lambda r: [_n(r, 4)]),
    Case("radd_scalar", lambda x: 0.25 + x, lambda x: 0.25 + x, lambda r: [_n(r, 4)]),
    Case("neg", lambda x: -x, lambda x: -x, lambda r: [_n(r, 2, 2)]),
    Case("scale", lambda x: tl.scale(x, -1.75), lambda x: x * -1.75, lambda r: [_n(r, 3)]),
    Case("mul_scalar", lambda x: 3.0 * x, lambda x: 3.0 * x, lambda r: [_n(r, 3)]),
    Case(
        "maximum", tl.maximum, torch.maximum, lambda r: [_distinct(r, 3, 4), _distinct(r, 4) + 0.05], (0, 1)
    ),
    Case(
        "minimum",
        tl.minimum,
        torch.minimum,
        lambda r: [_distinct(r, 3, 4), _distinct(r, 3, 1) + 0.05],
        (0, 1),
    ),
    # ------------------------------------------------------------------------------------ unary
    Case("relu", tl.relu, torch.relu, lambda r: [_away(r, 3, 4)]),
    Case("gelu", tl.gelu, TF.gelu, lambda r: [_n(r, 3, 4)]),
    Case("sigmoid", tl.sigmoid, torch.sigmoid, lambda r: [_n(r, 3, 4)]),
    Case("tanh", tl.tanh, torch.tanh, lambda r: [_n(r, 3, 4)]),
    Case("softplus", tl.softplus, TF.softplus, lambda r: [_n(r, 3, 4) * 3]),
    Case("exp", tl.exp, torch.exp, lambda r: [_n(r, 3, 4)]),
    Case("log", tl.log, torch.log, lambda r: [_pos(r, 3, 4)]),
    Case("sin", tl.sin, torch.sin, lambda r: [_n(r, 3, 4)]),
    Case("cos", tl.cos, torch.cos, lambda r: [_n(r, 3, 4)]),
    Case("sqrt", tl.sqrt, torch.sqrt, lambda r: [_pos(r, 3, 4)]),
    Case("abs", tl.abs, torch.abs, lambda r: [_away(r, 3, 4)]),
    Case("inv", tl.inv, torch.reciprocal, lambda r: [_away(r, 3, 4)]),
    Case(
        "clamp",
        lambda x: tl.clamp(x, -0.5, 0.7),
        lambda x: torch.clamp(x, -0.5, 0.7),
        lambda r: [_distinct(r, 4, 5) * 0.2 + 0.013],
    ),
    Case(
        "clamp_lo_only",
        lambda x: tl.clamp(x, lo=0.1),
        lambda x: torch.clamp(x, min=0.1),
        lambda r: [_distinct(r, 6) * 0.3 + 0.017],
    ),
    Case(
        "safe_log",
        lambda x: tl.safe_log(x, 1e-3),
        lambda x: torch.log(TF.softplus(x) + 1e-3),
        lambda r: [_n(r, 3, 4) * 4],
    ),
    # ----------------------------------------------------------------------------- softmaxes
    Case("softmax_last", tl.softmax, lambda x: torch.softmax(x, -1), lambda r: [_n(r, 3, 5)]),
    Case(
        "softmax_axis0", lambda x: tl.softmax(x, 0), lambda x: torch.softmax(x, 0), lambda r: [_n(r, 4, 2, 3)]
    ),
    Case(
        "log_softmax",
        lambda x: tl.log_softmax(x, 1),
        lambda x: torch.log_softmax(x, 1),
        lambda r: [_n(r, 2, 6)],
    ),
    Case(
        "hard_masked_softmax_blocked_row",
        tl.hard_masked_softmax,
        _torch_hard_masked_softmax,
        lambda r: [_n(r, 2, 3, 4), _BLOCKED_MASK],
    ),
    Case(
        "hard_masked_softmax_broadcast_mask",
        tl.hard_masked_softmax,
        _torch_hard_masked_softmax,
        lambda r: [_n(r, 2, 3, 4), np.array([True, False, True, True])],
    ),
    # ----------------------------------------------------------------------------- reductions
    Case("reduce_sum_all", tl.reduce_sum, torch.sum, lambda r: [_n(r, 3, 4)]),
    Case(
        "reduce_sum_axis",
        lambda x: tl.reduce_sum(x, 1),
        lambda x: torch.sum(x, 1),
        lambda r: [_n(r, 3, 4, 2)],
    ),
    Case(
        "reduce_sum_axes_keep",
        lambda x: tl.reduce_sum(x, (0, 2), keepdims=True),
        lambda x: torch.sum(x, (0, 2), keepdim=True),
        lambda r: [_n(r, 3, 4, 2)],
    ),
    Case("reduce_mean_all", tl.reduce_mean, torch.mean, lambda r: [_n(r, 3, 4)]),
    Case(
        "reduce_mean_axis_keep",
        lambda x: tl.reduce_mean(x, -1, keepdims=True),
        lambda x: torch.mean(x, -1, keepdim=True),
        lambda r: [_n(r, 3, 4)],
    ),
    # ----------------------------------------------------------------------------------- views
    Case("reshape", lambda x: tl.reshape(x, (4, -1)), lambda x: x.reshape(4, -1), lambda r: [_n(r, 2, 3, 4)]),
    Case(
        "permute",
        lambda x: tl.permute(x, (2, 0, 1)),
        lambda x: x.permute(2, 0, 1),
        lambda r: [_n(r, 2, 3, 4)],
    ),
    Case(
        "transpose", lambda x: tl.transpose(x, 0, 2), lambda x: x.transpose(0, 2), lambda r: [_n(r, 2, 3, 4)]
    ),
    Case(
        "broadcast_to",
        lambda x: tl.broadcast_to(x, (2, 3, 4)),
        lambda x: x.broadcast_to(2, 3, 4),
        lambda r: [_n(r, 3, 1)],
    ),
    Case(  # -1 keeps an existing axis's size, as torch.broadcast_to takes it
        "broadcast_to_minus_one",
        lambda x: tl.broadcast_to(x, (2, -1, 4)),
        lambda x: torch.broadcast_to(x, (2, -1, 4)),
        lambda r: [_n(r, 3, 1)],
    ),
    Case(
        "concat_reused",
        lambda a, b: tl.concat([a, b, a], axis=1),
        lambda a, b: torch.cat([a, b, a], 1),
        lambda r: [_n(r, 2, 3), _n(r, 2, 1)],
        (0, 1),
    ),
    Case(
        "slice",
        lambda x: tl.slice(x, (1, 0), (3, 5), (1, 2)),
        lambda x: x[1:3, 0:5:2],
        lambda r: [_n(r, 4, 5)],
    ),
    Case(
        "getitem_mixed",
        lambda x: x[1, ::2, None, 1:],
        lambda x: x[1, ::2, None, 1:],
        lambda r: [_n(r, 3, 5, 4)],
    ),
    Case("getitem_ellipsis", lambda x: x[..., -1], lambda x: x[..., -1], lambda r: [_n(r, 2, 3, 4)]),
    Case(
        "gather_repeated",
        lambda x, i: tl.gather(x, i, 1),
        lambda x, i: torch.gather(x, 1, i),
        lambda r: [_n(r, 3, 4), np.array([[0, 0, 3], [1, 2, 1], [3, 3, 3]])],
    ),
    Case(
        "scatter_add_repeated",
        lambda b, i, s: tl.scatter_add(b, i, s, 0),
        lambda b, i, s: torch.scatter_add(b, 0, i, s),
        lambda r: [_n(r, 3, 4), np.array([[0, 1, 2, 0], [0, 1, 0, 2]]), _n(r, 2, 4)],
        (0, 2),
    ),
    # ---------------------------------------------------------------------------- contractions
    Case("matmul_2d", tl.matmul, torch.matmul, lambda r: [_n(r, 3, 4), _n(r, 4, 5)], (0, 1)),
    Case(
        "matmul_batched_broadcast",
        tl.matmul,
        torch.matmul,
        lambda r: [_n(r, 2, 1, 3, 4), _n(r, 5, 4, 2)],
        (0, 1),
    ),
    Case("matmul_vec_mat", tl.matmul, torch.matmul, lambda r: [_n(r, 4), _n(r, 4, 3)], (0, 1)),
    Case("matmul_mat_vec", lambda a, b: a @ b, lambda a, b: a @ b, lambda r: [_n(r, 3, 4), _n(r, 4)], (0, 1)),
    Case("matmul_dot", tl.matmul, torch.matmul, lambda r: [_n(r, 4), _n(r, 4)], (0, 1)),
    Case("matmul_reused", lambda x: x @ x, lambda x: x @ x, lambda r: [_n(r, 3, 3)]),
    Case("linear_bias", tl.linear, TF.linear, lambda r: [_n(r, 2, 3, 4), _n(r, 5, 4), _n(r, 5)], (0, 1, 2)),
    Case("linear_no_bias", tl.linear, TF.linear, lambda r: [_n(r, 3, 4), _n(r, 2, 4)], (0, 1)),
    # ---------------------------------------------------------------------------------- losses
    Case("mse_loss", tl.mse_loss, TF.mse_loss, lambda r: [_n(r, 3, 4), _n(r, 3, 4)], (0, 1)),
    Case(
        "cross_entropy_indices",
        tl.cross_entropy,
        TF.cross_entropy,
        lambda r: [_n(r, 5, 4), np.array([0, 3, 3, 1, 2])],
    ),
    Case(
        "cross_entropy_class_axis1",
        lambda x, t: tl.cross_entropy(x, t, axis=1),
        TF.cross_entropy,
        lambda r: [_n(r, 2, 4, 3), np.array([[0, 1, 3], [2, 2, 0]])],
    ),
    Case(
        "cross_entropy_probs",
        tl.cross_entropy,
        TF.cross_entropy,
        lambda r: [_n(r, 3, 4), np.abs(_n(r, 3, 4)) / 4],
        (0, 1),
    ),
    # label smoothing spreads s over all C classes, as torch does (review66 K23: s / (C - 1) passed
    # this module before; only test_label_smoothing.py caught it)
    Case(
        "cross_entropy_indices_label_smoothing",
        lambda x, t: tl.cross_entropy(x, t, label_smoothing=0.3),
        lambda x, t: TF.cross_entropy(x, t, label_smoothing=0.3),
        lambda r: [_n(r, 5, 4), np.array([0, 3, 3, 1, 2])],
    ),
    Case(
        "cross_entropy_probs_label_smoothing",
        lambda x, t: tl.cross_entropy(x, t, label_smoothing=0.3),
        lambda x, t: TF.cross_entropy(x, t, label_smoothing=0.3),
        lambda r: [_n(r, 3, 4), np.abs(_n(r, 3, 4)) / 4],
        (0, 1),
    ),
    # ---------------------------------------------------------------------- normalisation layers
    Case(
        "layer_norm_affine",
        lambda x, w, b: tl.layer_norm(x, w, b),
        lambda x, w, b: TF.layer_norm(x, (5,), w, b),
        lambda r: [_n(r, 3, 5), _n(r, 5), _n(r, 5)],
        (0, 1, 2),
    ),
    Case(
        "layer_norm_2d_plain",
        lambda x: tl.layer_norm(x, normalized_ndim=2, eps=1e-3),
        lambda x: TF.layer_norm(x, (3, 4), eps=1e-3),
        lambda r: [_n(r, 2, 3, 4)],
    ),
    Case(
        "batch_norm_training",
        lambda x, w, b: tl.batch_norm(x, weight=w, bias=b, training=True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        lambda r: [_n(r, 4, 3, 5), _n(r, 3), _n(r, 3)],
        (0, 1, 2),
    ),
    Case(
        "batch_norm_eval",
        lambda x, w, b, m, v: tl.batch_norm(
            x, weight=w, bias=b, running_mean=m, running_var=v, training=False
        ),
        lambda x, w, b, m, v: TF.batch_norm(x, m, v, w, b, training=False),
        lambda r: [_n(r, 2, 3, 2, 2), _n(r, 3), _n(r, 3), _n(r, 3), _pos(r, 3)],
        (0, 1, 2),
    ),
    # ---------------------------------------------------------------------------- convolutions
    Case(
        "conv1d_stride_pad_dilation",
        lambda x, w, b: tl.conv(x, w, b, stride=2, padding=1, dilation=2),
        lambda x, w, b: TF.conv1d(x, w, b, stride=2, padding=1, dilation=2),
        lambda r: [_n(r, 2, 3, 11), _n(r, 4, 3, 3), _n(r, 4)],
        (0, 1, 2),
    ),
    Case(
        "conv2d_groups",
        lambda x, w, b: tl.conv(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
        lambda x, w, b: TF.conv2d(x, w, b, stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=2),
        lambda r: [_n(r, 2, 4, 6, 7), _n(r, 6, 2, 3, 2), _n(r, 6)],
        (0, 1, 2),
    ),
    Case(
        "conv3d_no_bias",
        lambda x, w: tl.conv(x, w, padding=1),
        lambda x, w: TF.conv3d(x, w, padding=1),
        lambda r: [_n(r, 1, 2, 3, 4, 3), _n(r, 2, 2, 2, 2, 2)],
        (0, 1),
    ),
    Case(
        "conv_transpose1d",
        lambda x, w, b: tl.conv_transpose(x, w, b, stride=2, padding=1, output_padding=1),
        lambda x, w, b: TF.conv_transpose1d(x, w, b, stride=2, padding=1, output_padding=1),
        lambda r: [_n(r, 2, 3, 5), _n(r, 3, 2, 3), _n(r, 2)],
        (0, 1, 2),
    ),
    Case(
        "conv_transpose2d_groups_dilation",
        lambda x, w, b: tl.conv_transpose(x, w, b, stride=2, padding=1, dilation=2, groups=2),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2, padding=1, dilation=2, groups=2),
        lambda r: [_n(r, 1, 4, 3, 4), _n(r, 4, 3, 2, 3), _n(r, 6)],
        (0, 1, 2),
    ),
    Case(
        "max_pool1d",
        lambda x: tl.max_pool(x, 3, stride=2, padding=1, dilation=2),
        lambda x: TF.max_pool1d(x, 3, stride=2, padding=1, dilation=2),
        lambda r: [_distinct(r, 2, 2, 11)],
    ),
    Case(
        "max_pool2d",
        lambda x: tl.max_pool(x, (2, 3), stride=(2, 1), padding=(1, 1)),
        lambda x: TF.max_pool2d(x, (2, 3), stride=(2, 1), padding=(1, 1)),
        lambda r: [_distinct(r, 2, 3, 5, 6)],
    ),
    Case(
        "avg_pool2d",
        lambda x: tl.avg_pool(x, 3, stride=2, padding=1),
        lambda x: TF.avg_pool2d(x, 3, stride=2, padding=1),
        lambda r: [_n(r, 2, 3, 7, 6)],
    ),
    Case(
        "avg_pool1d", lambda x: tl.avg_pool(x, 2), lambda x: TF.avg_pool1d(x, 2), lambda r: [_n(r, 2, 3, 7)]
    ),
    Case(
        "smooth_max_pool2d",
        lambda x: tl.smooth_max_pool(x, 3, 2.0, stride=2, padding=1),
        lambda x: _torch_smooth_max_pool(x, 2.0, 3, 2, 1),
        lambda r: [_n(r, 2, 2, 6, 7)],
    ),
    Case(
        "smooth_max_pool2d_negative_beta",
        lambda x: tl.smooth_max_pool(x, 2, -1.5),
        lambda x: _torch_smooth_max_pool(x, -1.5, 2, 2, 0),
        lambda r: [_n(r, 1, 2, 4, 6)],
    ),
    # ------------------------------------------------------------------------------- attention
    Case(
        "attention_blocked_row",
        tl.scaled_dot_product_attention,
        lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
        lambda r: [_n(r, 2, 3, 5), _n(r, 2, 4, 5), _n(r, 2, 4, 6), _BLOCKED_MASK],
        (0, 1, 2),
    ),
    Case(
        "attention_unmasked_scale",
        lambda q, k, v: tl.scaled_dot_product_attention(q, k, v, scale=0.3),
        lambda q, k, v: TF.scaled_dot_product_attention(q, k, v, scale=0.3),
        lambda r: [_n(r, 2, 2, 3, 4), _n(r, 2, 2, 5, 4), _n(r, 2, 2, 5, 3)],
        (0, 1, 2),
    ),
]


def _inputs(case: Case, dtype: np.dtype[Any], seed: int = 0) -> list[Array]:
    rng = np.random.default_rng(seed)
    return [a.astype(dtype) if np.asarray(a).dtype.kind == "f" else np.asarray(a) for a in case.make(rng)]


def _rel(a: Array, b: Array) -> float:
    a = np.asarray(a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a.shape, b.shape)
    if a.size == 0:
        return 0.0
    scale = max(float(np.max(np.abs(b))), 1e-300)
    return float(np.max(np.abs(a - b))) / scale


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_and_tape_gradient_match_torch_float64(case: Case) -> None:
    arrays = _inputs(case, np.dtype(np.float64))
    tl_in = [tl.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    t_in = [torch.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    out = case.fn(*tl_in)
    expected = case.ref(*t_in)
    assert out.shape == tuple(expected.shape)
    assert out.dtype == np.float64
    assert _rel(out.numpy(), expected.detach().numpy()) <= 1e-10
    g = np.random.default_rng(1).standard_normal(out.shape)
    out.backward(g)
    expected.backward(torch.tensor(g))
    for i in case.diff:
        got = tl_in[i].grad
        assert got is not None, f"input {i} received no gradient"
        want = t_in[i].grad
        assert want is not None
        assert _rel(got.numpy(), want.numpy()) <= 1e-6, f"input {i}"
    for i, t in enumerate(tl_in):
        if i not in case.diff:
            assert t.grad is None


@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_forward_float32_matches_torch(case: Case) -> None:
    arrays = _inputs(case, np.dtype(np.float32))
    out = case.fn(*[tl.tensor(a) for a in arrays])
    assert out.dtype == np.float32
    expected = case.ref(*[torch.tensor(a.astype(np.float64) if a.dtype == np.float32 else a) for a in arrays])
    assert _rel(out.numpy(), expected.numpy()) <= 1e-5


def test_attention_fully_blocked_row_gives_zero_output_and_zero_gradients() -> None:
    rng = np.random.default_rng(3)
    q = tl.tensor(_n(rng, 3, 4), requires_grad=True, dtype=np.float64)
    k = tl.tensor(_n(rng, 4, 4), requires_grad=True, dtype=np.float64)
    v = tl.tensor(_n(rng, 4, 2), requires_grad=True, dtype=np.float64)
    out = tl.scaled_dot_product_attention(q, k, v, _BLOCKED_MASK)
    assert np.all(out.numpy()[1] == 0.0)
    out.backward(np.ones(out.shape))
    assert q.grad is not None
    assert np.all(q.grad.numpy()[1] == 0.0)


def test_attention_takes_torchs_positional_order() -> None:
    """torch's fifth positional slot is ``dropout_p``, its sixth ``is_causal`` (review102 L1): a
    ported ``sdpa(q, k, v, mask, 0.0)`` must not run as ``scale=0`` (uniform attention,
    ``v.mean``), a nonzero probability is refused (the weights are never dropped), and
    ``is_causal=True`` is torch's upper-left causal mask. Oracle: torch in float64, values and
    gradients."""
    rng = np.random.default_rng(7)
    q, k, v = (tl.tensor(_n(rng, *shape), dtype=np.float64) for shape in ((3, 4), (5, 4), (5, 2)))
    default = tl.scaled_dot_product_attention(q, k, v).numpy()
    np.testing.assert_array_equal(tl.scaled_dot_product_attention(q, k, v, None, 0.0).numpy(), default)
    out = tl.scaled_dot_product_attention(q, k, v, None, scale=0.0)
    np.testing.assert_allclose(out.numpy(), np.broadcast_to(v.numpy().mean(axis=0), (3, 2)), rtol=1e-15)
    for p in (0.1, 1.0, float("nan")):
        with pytest.raises(tl.TensorTypeError) as caught:
            tl.scaled_dot_product_attention(q, k, v, None, p)
        assert str(caught.value) == (f"scaled_dot_product_attention: dropout_p={p!r} is refused: torchlean's "
                                     "attention never drops its weights (accepted: 0.0, torch's default)")
    with pytest.raises(tl.TensorTypeError, match="dropout_p must be a real number"):
        tl.scaled_dot_product_attention(q, k, v, None, "0")  # type: ignore[arg-type]
    for n_q, n_k in ((3, 5), (5, 3), (4, 4), (1, 1)):
        arrays = [_n(rng, 2, n, d) for n, d in ((n_q, 4), (n_k, 4), (n_k, 3))]
        ours = [tl.tensor(a, dtype=np.float64, requires_grad=True) for a in arrays]
        theirs = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
        for causal in (True, False):
            got = tl.scaled_dot_product_attention(*ours, None, 0.0, causal)
            want = torch.nn.functional.scaled_dot_product_attention(*theirs, None, 0.0, causal)
            np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-14)
            cotangent = _n(rng, 2, n_q, 3)
            got.backward(cotangent)
            want.backward(torch.tensor(cotangent))
            for mine, torchs in zip(ours, theirs, strict=True):
                assert mine.grad is not None and torchs.grad is not None
                np.testing.assert_allclose(mine.grad.numpy(), torchs.grad.numpy(), rtol=1e-10, atol=1e-13)
                mine.grad, torchs.grad = None, None
    refusal = r"is_causal must be a bool \(torch's default False\), got 1$"
    with pytest.raises(tl.TensorTypeError, match=refusal):
        tl.scaled_dot_product_attention(q, k, v, is_causal=1)  # type: ignore[arg-type]
    for given in ({"mask": np.ones((3, 5), bool)}, {"attn_mask": np.ones((3, 5), bool)}):
        with pytest.raises(tl.TensorTypeError, match="got a mask and is_causal=True"):
            tl.scaled_dot_product_attention(q, k, v, is_causal=True, **given)
    with pytest.raises(GuardError, match="rank below 2"):  # review104 M1: an IndexError before
        tl.scaled_dot_product_attention(tl.tensor(np.ones(4)), k, v, is_causal=True)
    for name, args in (("q", (q.numpy(), k, v)), ("k", (q, [1.0], v))):  # is_causal reads their shapes
        refusal = f"^scaled_dot_product_attention: {name} must be a torchlean Tensor"
        with pytest.raises(tl.TensorTypeError, match=refusal):
            tl.scaled_dot_product_attention(*args, is_causal=True)  # type: ignore[arg-type]


def test_hard_masked_softmax_nan_at_blocked_position_does_not_leak() -> None:
    scores = np.array([[1.0, np.nan, 3.0], [np.inf, -np.inf, np.nan]])
    mask = np.array([[True, False, True], [False, False, False]])
    x = tl.tensor(scores, requires_grad=True, dtype=np.float64)
    out = tl.hard_masked_softmax(x, mask)
    e = np.exp(np.array([1.0, 3.0]) - 3.0)
    np.testing.assert_allclose(out.numpy()[0], [e[0] / e.sum(), 0.0, e[1] / e.sum()], rtol=1e-15)
    assert np.all(out.numpy()[1] == 0.0)
    out.backward(np.ones((2, 3)))
    assert x.grad is not None
    assert np.all(np.isfinite(x.grad.numpy()))
    assert x.grad.numpy()[0, 1] == 0.0 and np.all(x.grad.numpy()[1] == 0.0)


def test_dropout_saves_the_realised_mask_for_backward() -> None:
    x = tl.tensor(np.arange(1.0, 201.0), requires_grad=True, dtype=np.float64)
    with tl.session() as s:
        y = tl.dropout(x, 0.25, seed=7)
        assert [k.op.label for k in s.selected] == ["bernoulli_mask", "mul", "scale"]
    kept = y.numpy() != 0.0
    assert 0 < kept.sum() < 200
    np.testing.assert_array_equal(y.numpy()[kept], x.numpy()[kept] * (1.0 / 0.75))  # scale by 1/(1-p)
    y.backward(np.ones(200))
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), np.where(kept, 1.0 / 0.75, 0.0))


def test_dropout_identity_outside_training_and_p_one_zeroes() -> None:
    x = tl.tensor([1.0, 2.0, 3.0], requires_grad=True)
    assert tl.dropout(x, 0.5, training=False) is x
    assert tl.dropout(x, 0.0) is x
    assert np.all(tl.dropout(x, 1.0).numpy() == 0.0)
    with pytest.raises(tl.TensorError, match="outside"):
        tl.dropout(x, 1.5)


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_dropout_of_a_numpy_float_p_is_that_of_its_value(dtype: type[np.floating[Any]]) -> None:
    """review129 F2: ``p`` is typed ``RealLike`` and read as a float. It was used as given, so for
    ``np.float32(1/3)`` ``1 / (1 - p)`` was rounded to float32 (1.5000001 where the value's is
    1.50000002, 1.5 in float32), changing every kept value, and ``1 - p`` the mask's threshold."""
    x = tl.tensor(np.ones(1000), dtype=dtype)
    p = np.float32(1 / 3)
    results = []
    for given in (p, float(p)):
        with tl.session(seed=1):
            results.append(tl.dropout(x, given, seed=5).numpy())
    np.testing.assert_array_equal(results[0], results[1])
    kept = results[1][results[1] != 0.0]
    assert kept.size > 0 and np.all(kept == dtype(1.0 / (1.0 - float(p))))


def test_rand_uniform_draws_advance_the_session_counter() -> None:
    with tl.session(seed=11) as s:
        a = tl.rand_uniform((3, 4))
        b = tl.rand_uniform((3, 4))
        assert s.random_counter == 2
        assert not a.requires_grad
        assert np.all((a.numpy() >= 0.0) & (a.numpy() <= 1.0))
        assert not np.array_equal(a.numpy(), b.numpy())
    with tl.session(seed=11):
        again = tl.rand_uniform((3, 4))
    np.testing.assert_array_equal(again.numpy(), a.numpy())


def test_broadcast_to_refuses_minus_one_for_a_new_axis_as_torch_does() -> None:
    with pytest.raises(RuntimeError, match=r"\(-1\) isn't allowed in a leading, non-existing dimension 0"):
        torch.broadcast_to(torch.ones(3), (-1, 3))
    with pytest.raises(tl.GuardError, match=r"^broadcast_to: size -1 at position 0 of \(-1, 3\) is a new"):
        tl.broadcast_to(tl.tensor([1.0, 2.0, 3.0]), (-1, 3))
    with pytest.raises(tl.GuardError, match=r"^broadcast: shape \[2, -2\] has a negative extent"):
        tl.broadcast_to(tl.tensor([1.0, 2.0, 3.0]), (2, -2))


def test_guard_errors_surface_through_functional() -> None:
    a = tl.tensor(np.ones((2, 3), dtype=np.float32))
    with pytest.raises(GuardError, match="matmul"):
        tl.matmul(a, a)
    with pytest.raises(GuardError, match="dtype"):
        tl.add(a, tl.tensor(np.ones(3), dtype="float64"))
    with pytest.raises(GuardError, match="mask"):
        tl.hard_masked_softmax(a, np.ones((2, 3), dtype=np.float32))


def test_getitem_takes_a_0d_int64_tensor_as_an_integer_as_torch_does() -> None:
    """``x[torch.tensor(1)]`` is ``x[1]`` in torch; torchlean refused the 0-d int64 Tensor as an
    index array. Values and the gradient against torch float64."""
    values = np.arange(12.0).reshape(3, 4)
    x, px = tl.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    out = x[tl.tensor(1), tl.tensor(-1)]
    expected = px[torch.tensor(1), torch.tensor(-1)]
    assert out.shape == () and out.item() == expected.item() == 7.0
    rows, prows = x[tl.tensor(-1)], px[torch.tensor(-1)]
    np.testing.assert_array_equal(rows.numpy(), prows.detach().numpy())
    (out * 2.0 + rows.sum()).backward()
    (expected * 2.0 + prows.sum()).backward()
    assert x.grad is not None and px.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), px.grad.numpy())


class _Index:
    """An object with ``__index__`` (as a library's integer type has), not an int."""

    def __init__(self, value: int) -> None:
        self.value = value

    def __index__(self) -> int:
        return self.value


@pytest.mark.parametrize(
    "make",
    [
        lambda: (np.array(1), np.array(-1)),
        lambda: (np.array(2, np.int32), np.array(0, np.uint16)),
        lambda: (torch.tensor(1), torch.tensor(-2, dtype=torch.int32)),
        lambda: (_Index(1), _Index(-1)),
        lambda: (_Index(2), np.array(3)),
    ],
    ids=["numpy-int64", "numpy-int32-uint16", "torch-int", "__index__", "mixed"],
)
def test_getitem_takes_0d_integer_arrays_and_index_objects_as_integers_as_torch_does(make: Any) -> None:
    """review111 F4: ``x[np.array(1)]`` and an object with ``__index__`` were refused by getitem
    (item assignment took them); torch reads each as an integer. Values and the gradient against
    torch float64 with the same index objects."""
    values = np.arange(12.0).reshape(3, 4)
    x, px = tl.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
    first, second = make()
    out, expected = x[first, second], px[first, second]
    rows, prows = x[first], px[first]
    assert out.shape == tuple(expected.shape) == () and out.item() == expected.item()
    np.testing.assert_array_equal(rows.numpy(), prows.detach().numpy())
    (out * 3.0 + rows.sum()).backward()
    (expected * 3.0 + prows.sum()).backward()
    assert x.grad is not None and px.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), px.grad.numpy())


@pytest.mark.parametrize(
    "mask",
    [
        np.arange(12.0).reshape(3, 4) % 3 == 1,
        tl.tensor(np.arange(12.0).reshape(3, 4) > 6.5),
        torch.tensor(np.arange(12.0).reshape(3, 4) < 2.0),
        (np.arange(12).reshape(3, 4) % 2).astype(np.uint8),  # torch reads uint8 as a mask (review113 F2)
        torch.tensor(np.arange(12).reshape(3, 4) % 5 == 0, dtype=torch.uint8),
    ],
    ids=["numpy", "torchlean", "torch", "numpy-uint8", "torch-uint8"],
)
def test_getitem_refuses_a_mask_naming_the_gather_that_reads_it(mask: Any) -> None:
    """review111 F4: the refusal said "use torchlean.gather for index arrays" with no way from a
    mask to a gather; now it names tl.gather with np.flatnonzero, whose result is torch's
    ``x[mask]``, and item assignment, which takes the mask."""
    values = np.arange(12.0).reshape(3, 4)
    x = tl.tensor(values)
    with pytest.raises(tl.TensorError) as info:
        x[mask]
    message = str(info.value)
    assert message.startswith("unsupported index: a mask (bool or uint8) of shape (3, 4) of type ")
    assert "reading t[...] takes basic indices only" in message
    assert "torch's x[mask] is tl.gather(x.reshape(-1), np.flatnonzero(mask), 0)" in message
    assert "item assignment x[mask] = v takes a bool mask itself (a uint8 one converted" in message
    host = mask.numpy() if isinstance(mask, tl.Tensor | torch.Tensor) else mask
    read = tl.gather(x.reshape(-1), np.flatnonzero(host), 0)
    expected = torch.tensor(values)[torch.tensor(host != 0)]  # uint8 read as this mask (deprecated)
    np.testing.assert_array_equal(read.numpy(), expected.numpy())
    written = tl.tensor(values)
    if host.dtype == np.uint8:  # torch refuses a uint8 mask in a write; numpy would take positions
        with pytest.raises(RuntimeError, match="masked_fill_ only supports boolean masks"):
            torch.tensor(values)[torch.tensor(host)] = -1.0
        with pytest.raises(tl.TensorError, match=r"it holds uint8 index data, which numpy takes as"):
            written[mask] = -1.0
        return
    written[mask] = -1.0
    reference = torch.tensor(values)
    reference[torch.tensor(host)] = -1.0
    np.testing.assert_array_equal(written.numpy(), reference.numpy())


@pytest.mark.parametrize("shape", [(5,), (5, 3), (5, 2, 3)], ids=str)
def test_getitem_refuses_an_index_array_naming_the_gather_that_reads_it(shape: tuple[int, ...]) -> None:
    """review111 F4: the gather the message names for ``x[idx]`` (x's shape filled in) gives
    torch's ``x[idx]``."""
    values = np.arange(float(np.prod(shape))).reshape(shape)
    x, given = tl.tensor(values), np.array([4, 0, -3, 2])
    with pytest.raises(tl.TensorError) as info:
        x[given]
    message = str(info.value)
    assert message.startswith("unsupported index: an integer index array of shape (4,) of type numpy.ndarray")
    named = message.split("x[idx] for a 1-d idx is ", 1)[1].split(" (a negative entry", 1)[0]
    assert "a negative entry, which torch counts from the end, as idx % x.shape[0]" in message  # review113
    idx = given % x.shape[0]
    read = eval(named, {"tl": tl, "np": np, "x": x, "idx": idx})
    np.testing.assert_array_equal(read.numpy(), torch.tensor(values)[torch.tensor(given)].numpy())


@pytest.mark.parametrize(
    ("index", "message"),
    [
        ((0, 0, 0), "too many indices"),
        (5, "out of range"),
        (slice(None, None, -1), "negative or zero slice steps"),
        (slice(None, None, 0), "negative or zero slice steps"),  # was Python's ValueError
        ((0, slice(1, 2, 0)), "negative or zero slice steps"),
        (np.array([0, 1]), "unsupported index"),
        (
            tl.tensor([1]),
            r"unsupported index: an integer index array of shape \(1,\) .*\(also a 0-d integer array "
            r"or tensor.*torchlean.gather",
        ),
        (tl.tensor(1.0), "unsupported index"),  # torch: "must be long, int, byte or bool tensors"
        (np.array(1, np.uint8), "unsupported index"),  # torch: a 0-d uint8 is a mask, not 1
        (np.array(1.0), "unsupported index"),
        (True, "unsupported index True of type bool"),
        (tl.tensor(5), "index 5 is out of range for axis 0 with extent 2"),
        ((Ellipsis, Ellipsis), "single ellipsis"),
    ],
)
def test_getitem_refuses_unsupported_indices(index: object, message: str) -> None:
    x = tl.tensor(np.ones((2, 3)))
    with pytest.raises(tl.TensorError, match=message):
        x[index]


@pytest.mark.parametrize(
    ("index", "shown"),
    [
        (slice(0.0, 2.0), "0.0 of type float as the start of slice(0.0, 2.0, None)"),
        ((0, slice(None, 2.5)), "2.5 of type float as the stop of slice(None, 2.5, None)"),
        (slice(None, None, 1.0), "1.0 of type float as the step of slice(None, None, 1.0)"),
        (slice(True, 2), "True of type bool as the start of slice(True, 2, None)"),
        (slice("0", 2), "'0' of type str as the start of slice('0', 2, None)"),
    ],
)
def test_getitem_refuses_slice_bounds_that_are_not_integers(index: Any, shown: str) -> None:
    """review50 F7: Python's ``TypeError`` from ``slice.indices`` came through; now the
    documented ``TensorTypeError`` (still a ``TypeError``, as torch raises), naming the bound."""
    x = tl.tensor(np.ones((2, 3)))
    with pytest.raises(TensorTypeError) as info:
        x[index]
    assert isinstance(info.value, TypeError)
    assert str(info.value).startswith(f"slice bounds must be integers or None; got {shown} (index ")
    assert str(info.value).endswith(
        "; accepted: Python or numpy integers, 0-d integer arrays or tensors, objects with __index__, None)"
    )
    if "bool" not in shown:  # torch refuses them too; it reads a bool bound as 0 or 1, which the
        with pytest.raises(TypeError):  # module's rule for integer parameters refuses
            torch.ones(2, 3)[index]


def test_getitem_zero_step_is_a_tensor_error_and_still_a_value_error() -> None:
    """review50 F7: torch raises ``ValueError: slice step cannot be zero``; torchlean's
    ``TensorError`` is a ``ValueError`` too, so torch code catching it still does."""
    x = tl.tensor(np.ones((2, 3)))
    with pytest.raises(tl.TensorError) as info:
        tl.getitem(x, slice(None, None, 0))
    assert isinstance(info.value, ValueError)
    assert str(info.value) == (
        "negative or zero slice steps are not supported (index slice(None, None, 0); accepted: a step "
        "of at least 1, or None)"
    )
    assert x[::1].shape == x[np.int64(0) : np.int64(2) : np.int64(1)].shape == (2, 3)


@pytest.mark.parametrize(
    ("x", "kind"),
    [
        (None, "NoneType"),
        ("ab", "str"),
        ([1.0, 2.0], "list"),
        (3, "int"),
        (2.0, "float"),
        (True, "bool"),
        (np.float64(2.0), "float64"),
        (np.ones((4, 3)), "ndarray"),
    ],
)
def test_getitem_refuses_a_first_argument_that_is_not_a_tensor(x: object, kind: str) -> None:
    """review50 F6: ``tl.getitem(None, 0)`` raised ``AttributeError`` (reading ``x.ndim``), a numpy
    scalar "too many indices", an array a message naming ``slice``; now getitem's own refusal."""
    with pytest.raises(TensorTypeError) as info:
        tl.getitem(x, 0)  # type: ignore[arg-type]
    assert str(info.value).startswith(
        f"getitem: input 0 must be a torchlean Tensor; got {kind} (accepted: a torchlean Tensor; "
    )


def test_getitem_whole_selection_records_a_slice() -> None:
    """Review 6 #8: ``x[:]`` and ``x[...]`` returned ``x`` itself; now a new tensor, recorded as
    a ``slice`` like any other index (tests/runtime/test_no_views.py has the write semantics)."""
    x = tl.tensor(np.ones((2, 3)))
    with tl.session() as s:
        assert x[:] is not x
        assert x[...] is not x
        assert [k.capsule.name for k in s.selected] == ["reference.slice"]


def test_cross_entropy_refuses_misfit_targets() -> None:
    logits = tl.tensor(np.zeros((3, 4)))
    with pytest.raises(tl.TensorError, match="class indices"):
        tl.cross_entropy(logits, np.array([0, 1]))
    with pytest.raises(tl.TensorError, match="probabilities"):
        tl.cross_entropy(logits, np.zeros((3, 5)))
    with pytest.raises(tl.TensorError, match="neither"):
        tl.cross_entropy(logits, np.array([True, False, True]))


def test_the_package_namespace_is_its_public_names() -> None:
    """``dir(torchlean)`` lists ``__all__`` (loaded or not), the public submodules (loaded or not:
    review58 F5) and dunders, not the package's own imports (``sys``, ``importlib``, ``Any`` were
    attributes)."""
    names = dir(tl)
    assert set(tl.__all__) <= set(names)
    others = [n for n in names if not n.startswith("__") and n not in tl.__all__]
    # the submodules outside __all__ (not mypy_plugin, which needs mypy: review167 F1)
    assert others == ["batches", "cli", "lr_schedules", "provenance"]
    for stray in ("sys", "importlib", "types", "Any", "TYPE_CHECKING", "annotations"):
        assert not hasattr(tl, stray), stray
    assert callable(tl.tensor) and tl.nn.__name__ == "torchlean.nn"


def test_dropout_refuses_an_array_for_x_and_its_masks_follow_the_session_counter() -> None:
    """``x`` must be a Tensor, as for every op (an array became a constant in training and was
    returned unchanged in evaluation); one ``seed`` draws a new mask per call in a session (the
    random counter advances) and a new session replays the masks."""
    for training in (True, False):
        with pytest.raises(tl.TensorTypeError, match="dropout: x must be a torchlean Tensor; got ndarray"):
            tl.dropout(np.ones(3), 0.5, training=training)  # type: ignore[arg-type]
    masks = []
    for _ in range(2):
        with tl.session("checked_cpu"):
            x = tl.tensor(np.ones(64))
            masks.append([tl.dropout(x, 0.5, seed=3).numpy() for _ in range(2)])
    (first, second), (replay, replay_second) = masks
    assert not np.array_equal(first, second)
    np.testing.assert_array_equal(first, replay)
    np.testing.assert_array_equal(second, replay_second)
    assert set(np.unique(first)) <= {0.0, 2.0}


def test_eval_batch_norm_with_zero_eps_and_zero_variance_is_the_quotient_the_docstring_names() -> None:
    """review236 F5: eval with ``eps=0`` and a zero running variance is ``(x - mean) / 0``: ``±inf``
    where x differs from the mean, NaN where it equals it (torch's fused kernel gives NaN or
    ``-inf`` instead, as the docstring says)."""
    x = np.array([[1.0, -2.0], [0.5, 0.5]])
    mean, var = np.array([0.0, 0.5]), np.zeros(2)
    got = tl.batch_norm(tl.tensor(x), running_mean=tl.tensor(mean), running_var=tl.tensor(var),
                        training=False, eps=0.0).numpy()
    np.testing.assert_array_equal(got, [[np.inf, -np.inf], [np.inf, np.nan]])
    theirs = TF.batch_norm(torch.tensor(x), torch.tensor(mean), torch.tensor(var), training=False, eps=0.0)
    assert np.isnan(theirs.numpy()[0, 0])  # the difference the docstring names


@pytest.mark.parametrize("training", [False, True])
@pytest.mark.parametrize("stat", ["running_mean", "running_var"])
def test_batch_norm_refuses_running_statistics_that_require_grad(training: bool, stat: str) -> None:
    """The running statistics are not differentiated; one that requires grad is refused while
    gradients are recorded, as torch refuses it (its ``.grad`` silently stayed None, so a
    "learnable" statistic trained nothing). Under ``no_grad`` it is an ordinary input; detached,
    the eval output is torch's (float64 oracle)."""
    r = np.random.default_rng(4)
    x_np, mean_np, var_np = r.normal(size=(2, 3)), r.normal(size=3), r.uniform(0.5, 2.0, size=3)
    stats = {
        "running_mean": tl.tensor(mean_np, requires_grad=stat == "running_mean"),
        "running_var": tl.tensor(var_np, requires_grad=stat == "running_var"),
    }
    x = tl.tensor(x_np, requires_grad=True)
    with pytest.raises(tl.AutogradError, match=rf"^batch_norm: {stat} requires grad, but batch_norm is not "):
        tl.batch_norm(
            x, running_mean=stats["running_mean"], running_var=stats["running_var"], training=training
        )
    with torch.no_grad():
        t_mean = torch.tensor(mean_np, requires_grad=stat == "running_mean")
        t_var = torch.tensor(var_np, requires_grad=stat == "running_var")
    with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument '{stat}'"):
        TF.batch_norm(torch.tensor(x_np, requires_grad=True), t_mean, t_var, training=training)
    expected = TF.batch_norm(torch.tensor(x_np), torch.tensor(mean_np), torch.tensor(var_np), training=False)
    with tl.no_grad():
        got = tl.batch_norm(
            x, running_mean=stats["running_mean"], running_var=stats["running_var"], training=False
        )
    np.testing.assert_allclose(got.numpy(), expected.numpy(), rtol=1e-12)
    detached = tl.batch_norm(
        x,
        running_mean=stats["running_mean"].detach(),
        running_var=stats["running_var"].detach(),
        training=False,
    )
    np.testing.assert_allclose(detached.numpy(), expected.numpy(), rtol=1e-12)
    assert detached.requires_grad


def test_a_torch_tensor_operand_is_a_constant_and_refused_when_it_requires_grad() -> None:
    """A torch tensor beside a torchlean Tensor is data, as a numpy array is (values copied, cast
    to the tensor's dtype; oracle: the same numbers as a numpy constant); one that requires grad
    is refused by torchlean, naming the fix (torch's bare ``Can't call numpy()`` came out before,
    from either side of the operator and from mse_loss)."""
    x = tl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    w = torch.full((2, 3), 0.1, dtype=torch.float32, requires_grad=True)
    refused = "cannot use a torch tensor that requires grad (shape (2, 3)) as a constant operand"
    for call in (lambda: x * w, lambda: w * x, lambda: tl.add(x, w), lambda: tl.mse_loss(x, w)):
        with pytest.raises(tl.TensorTypeError, match=re.escape(refused)):
            call()
    got = x * w.detach()
    expected = x * np.full((2, 3), 0.1, dtype=np.float32)
    assert got.dtype == np.float64 and got.requires_grad
    np.testing.assert_array_equal(got.numpy(), expected.numpy())
    np.testing.assert_array_equal((w.detach() + x).numpy(), (np.float32(0.1) + x).numpy())
    with pytest.raises(tl.TensorError, match=r"unsupported tensor dtype torch\.bfloat16"):
        x + torch.ones(3, dtype=torch.bfloat16)


def test_neighbouring_seeds_draw_the_same_stream_one_call_apart_as_documented() -> None:
    """``keyOf(seed, counter) = splitmix64(seed + counter)`` (anchor-runtime.md §1.6): seed 1's
    first draw is seed 0's second, as the rand_uniform and dropout docstrings warn; seeds 2**32
    apart do not meet within a session's first draws."""
    with tl.session("checked_cpu"):
        zero = [tl.rand_uniform((16,), seed=0).numpy() for _ in range(3)]
    with tl.session("checked_cpu"):
        one = [tl.rand_uniform((16,), seed=1).numpy() for _ in range(2)]
    with tl.session("checked_cpu"):
        far = [tl.rand_uniform((16,), seed=2**32).numpy() for _ in range(3)]
    np.testing.assert_array_equal(one[0], zero[1])
    np.testing.assert_array_equal(one[1], zero[2])
    assert not any(np.array_equal(a, b) for a in zero for b in far)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_an_int64_label_tensor_is_sliced_reshaped_and_stacked_but_not_computed_with(profile: str) -> None:
    """Shape ops move int64 data (``labels[:2]`` failed inside ``slice``; review17 ops, review16
    api F5): the values are torch's, and cross-entropy on the sliced labels equals torch's in
    float64. Arithmetic on int64 stays refused (no catalog op computes on it)."""
    labels_np = np.array([2, 0, 1, 1, 0])
    logits_np = np.random.default_rng(5).normal(size=(5, 3))
    with tl.session(profile):
        labels = tl.tensor(labels_np)
        assert labels[:2].numpy().tolist() == [2, 0] and int(labels[-1]) == 0
        assert labels[::2].numpy().tolist() == labels_np[::2].tolist()
        assert labels.reshape(5, 1).T.numpy().tolist() == [labels_np.tolist()]
        assert tl.concat([labels, labels[:1]]).numpy().tolist() == [2, 0, 1, 1, 0, 2]
        assert tl.broadcast_to(labels[:1], (3,)).numpy().tolist() == [2, 2, 2]
        mask = tl.tensor(labels_np > 0)  # a mask moves the same way
        assert mask[1:3].numpy().tolist() == [False, True] and mask.reshape(1, 5).T.shape == (5, 1)
        logits = tl.tensor(logits_np, requires_grad=True)
        loss = tl.cross_entropy(logits[:3], labels[:3])
        loss.backward()
        with pytest.raises(GuardError, match=r"^mul: operand a has dtype int64; accepted: float32 or"):
            labels * 2
    t_logits = torch.tensor(logits_np, requires_grad=True)
    expected = TF.cross_entropy(t_logits[:3], torch.tensor(labels_np[:3]))
    expected.backward()
    np.testing.assert_allclose(float(loss), expected.item(), rtol=1e-12)
    assert logits.grad is not None and t_logits.grad is not None
    np.testing.assert_allclose(logits.grad.numpy(), t_logits.grad.numpy(), rtol=1e-12, atol=1e-15)


@pytest.mark.parametrize("index", [3, (0, 3), (Ellipsis, 3)])
def test_getitem_index_equal_to_the_extent_is_refused(index: Any) -> None:
    """``-extent <= i < extent``, as numpy and torch (IndexError at i == extent); the refusal test
    above uses an index past the extent, not at it (review20 mut F3: ``<=`` returned ``x[0]``)."""
    a = np.arange(9.0).reshape(3, 3)
    with pytest.raises(IndexError):
        a[index]
    with pytest.raises(tl.TensorError, match="index 3 is out of range for axis"):
        tl.tensor(a)[index]


@pytest.mark.parametrize("axis", [-1, -2])
def test_concat_negative_axis_gradient_matches_torch(axis: int) -> None:
    """The VJP slices along ``axis % ndim`` (review20 mut K20: a negative axis raised)."""
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((2, 3))
    w = rng.standard_normal((4, 3) if axis == -2 else (2, 6))
    ta, tb = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
    tl.reduce_sum(tl.concat([ta, tb], axis=axis) * tl.tensor(w)).backward()
    xa, xb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    (torch.cat([xa, xb], dim=axis) * torch.tensor(w)).sum().backward()
    assert ta.grad is not None and tb.grad is not None and xa.grad is not None and xb.grad is not None
    np.testing.assert_array_equal(ta.grad.numpy(), xa.grad.numpy())
    np.testing.assert_array_equal(tb.grad.numpy(), xb.grad.numpy())


def test_conv_transpose_with_an_empty_output_is_refused_as_torch() -> None:
    """Output size ``(2 - 1) * 1 - 2 * 1 + 0 + 1 = 0`` is refused, as torch refuses it
    (review20 mut SG10)."""
    x, w = np.ones((1, 1, 2)), np.ones((1, 1, 1))
    with pytest.raises(RuntimeError, match="Output size is too small"):
        TF.conv_transpose1d(torch.tensor(x), torch.tensor(w), padding=1)
    with pytest.raises(GuardError, match=r"output size 0 on spatial axis 0 .*accepted: output size >= 1"):
        tl.conv_transpose(tl.tensor(x), tl.tensor(w), padding=1)


def test_safe_log_eps_zero_names_the_domain_not_a_rounding() -> None:
    """eps = 0 is outside the domain as given; it does not "round to 0" (review20 mut G11)."""
    message = r"^safe_log: eps = 0.0 is not accepted \(accepted: a finite eps > 0\)$"
    with pytest.raises(GuardError, match=message):
        tl.safe_log(tl.tensor(np.zeros(2)), eps=0.0)


class _Two:
    """An object with ``__index__``, as torch and numpy take one for an integer."""

    def __index__(self) -> int:
        return 2


@pytest.mark.parametrize("bound", [np.array(2), np.array(2, np.int32), np.array(2, np.uint8), "tl", "torch",
                                   "torch-uint8", _Two()],
                         ids=["int64-array", "int32-array", "uint8-array", "tl-tensor", "torch-tensor",
                              "torch-uint8", "__index__"])
def test_slice_bounds_take_what_an_integer_index_takes(bound: Any) -> None:
    """review202 F2: ``t[np.array(2)]`` was taken and ``t[np.array(2):]`` refused; a slice bound
    takes what an integer index takes, as torch and numpy do. Oracle: torch's slicing and item
    assignment with the same bound."""
    named = {"tl": tl.tensor(np.array(2)), "torch": torch.tensor(2),
             "torch-uint8": torch.tensor(2, dtype=torch.uint8)}
    value = named.get(bound, bound) if isinstance(bound, str) else bound  # a bound is no mask: uint8 too
    oracle = torch.arange(6.0, dtype=torch.float64)
    t = tl.tensor(np.arange(6.0))
    for index in (slice(value, None), slice(None, value), slice(None, None, value), slice(0, 5, value)):
        torch_index = slice(*(2 if part is value else part for part in (index.start, index.stop, index.step)))
        assert t[index].tolist() == oracle[torch_index].tolist()
    written, expected = tl.tensor(np.arange(6.0)), oracle.clone()
    written[value:] = 9.0
    expected[2:] = 9.0
    assert written.tolist() == expected.tolist()
