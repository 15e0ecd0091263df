"""Zero-size inputs (a batch, sequence or feature axis of extent 0) behave as in torch.

Every op users reach through :mod:`torchlean.functional` (and the ``nn`` layers, run eagerly with
a batch of 0) is run on zero-size inputs under the three CPU profiles — ``checked_cpu`` (the
reference numpy kernels), ``fast_cpu`` (the ``aten`` torch kernels) and ``libtorch_forward_cpu``
(reference kernels, attention by the LibTorch SDPA bridge) — forward and backward through the
TorchLean tape.

Oracle: torch float64 on the same inputs (``torch.nn.functional`` / ``torch`` ops, gradients by
``torch.autograd``), as observed on torch 2.13 (not guessed): where torch returns a result, ours
has the same shape and values (an empty tensor; ``0`` for a sum over nothing, NaN for a mean over
nothing, the bias alone for a product with an empty contraction, zeros for an attention row
without keys) and every gradient has its input's shape and torch's values (zeros where an input
only met empty axes). Where torch raises, ours raises a ``GuardError`` naming the offending shape
and what is accepted (``REFUSALS``, each checked against torch raising too). ``KEPT_REFUSALS``
lists the calls torch answers but torchlean refuses, each with torch's behaviour as evidence: a
convolution input with 0 channels (torch returns 0 output channels instead of ``C_out``), and
operands torch accepts only because they are empty although the same call with that extent
made positive is refused by torch.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torchlean as tl
from torchlean import nn
from torchlean.backend.errors import GuardError
from torchlean.nn.eager import EagerOps

Array = np.ndarray[Any, Any]
PROFILES = ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"]
LONG = np.int64


@dataclass(frozen=True)
class Case:
    """One zero-size call: ``fn`` on torchlean tensors, ``ref`` on torch float64 tensors.

    ``inputs`` are float64 arrays (made from their shapes with a fixed seed) or fixed arrays
    (indices, masks); ``diff`` the positions differentiated in both libraries."""

    id: str
    fn: Callable[..., tl.Tensor]
    ref: Callable[..., torch.Tensor]
    inputs: Sequence[tuple[int, ...] | Array]
    diff: tuple[int, ...] = (0,)
    kwargs: dict[str, Any] = field(default_factory=dict)


def _torch_hard_masked_softmax(x: torch.Tensor, mask: torch.Tensor, axis: int = -1) -> torch.Tensor:
    mask = mask.expand_as(x)
    scores = torch.where(mask, x, torch.full_like(x, -torch.inf))
    any_allowed = mask.any(dim=axis, keepdim=True)
    safe = torch.where(any_allowed, scores, torch.zeros_like(x))
    return torch.where(mask & any_allowed, torch.softmax(safe, dim=axis), torch.zeros_like(x))


def _torch_smooth_max_pool(x: torch.Tensor, beta: float, k: int) -> torch.Tensor:
    """``log(sum(exp(beta * window))) / beta`` over k x k windows, stride k, no padding."""
    windows = x.unfold(2, k, k).unfold(3, k, k)  # (N, C, oh, ow, k, k)
    flat = windows.reshape(*windows.shape[:4], k * k)
    return torch.logsumexp(beta * flat, dim=-1) / beta


def _torch_sdpa(q: torch.Tensor, k: torch.Tensor, v: torch.Tensor) -> torch.Tensor:
    return TF.scaled_dot_product_attention(q, k, v)


def _idx(*shape: int) -> Array:
    return np.zeros(shape, dtype=LONG)


def _ones(*shape: int) -> Array:
    return np.ones(shape)


E = (0, 3)  # the zero-batch input most cases use
MASK_0 = np.ones((0, 4), dtype=bool)

CASES: list[Case] = [
    # ------------------------------------------------------------------- pointwise, batch of 0
    *[
        Case(f"{name}-batch0", getattr(tl, name), ref, [E])
        for name, ref in [
            ("relu", torch.relu),
            ("gelu", TF.gelu),
            ("sigmoid", torch.sigmoid),
            ("tanh", torch.tanh),
            ("softplus", TF.softplus),
            ("exp", torch.exp),
            ("log", torch.log),
            ("sin", torch.sin),
            ("cos", torch.cos),
            ("sqrt", torch.sqrt),
            ("abs", torch.abs),
            ("inv", torch.reciprocal),
            ("neg", torch.neg),
        ]
    ],
    Case("clamp-batch0", lambda x: tl.clamp(x, -0.5, 0.5), lambda x: torch.clamp(x, -0.5, 0.5), [E]),
    Case("scale-batch0", lambda x: tl.scale(x, 2.5), lambda x: x * 2.5, [E]),
    Case("safe_log-batch0", lambda x: tl.safe_log(x, 1e-3), lambda x: torch.log(TF.softplus(x) + 1e-3), [E]),
    Case("div-number-batch0", lambda x: x / 4.0, lambda x: x / 4.0, [E]),
    Case("rsub-number-batch0", lambda x: 1.5 - x, lambda x: 1.5 - x, [E]),
    *[
        Case(f"{name}-batch0-broadcast", getattr(tl, name), ref, [E, (3,)], (0, 1))
        for name, ref in [
            ("add", torch.add),
            ("sub", torch.sub),
            ("mul", torch.mul),
            ("div", torch.div),
            ("maximum", torch.maximum),
            ("minimum", torch.minimum),
        ]
    ],
    # a (2, 1) operand broadcast against a (0,) one: its gradient is a sum over 0 elements
    Case("add-broadcast-to-empty", tl.add, torch.add, [(2, 1), (0,)], (0, 1)),
    Case("mul-broadcast-to-empty", tl.mul, torch.mul, [(2, 1), (0,)], (0, 1)),
    # ------------------------------------------------------------------------ normalisations
    Case("softmax-batch0", lambda x: tl.softmax(x, -1), lambda x: torch.softmax(x, -1), [E]),
    Case("softmax-empty-axis", lambda x: tl.softmax(x, -1), lambda x: torch.softmax(x, -1), [(3, 0)]),
    Case("softmax-other-axis-empty", lambda x: tl.softmax(x, 0), lambda x: torch.softmax(x, 0), [(3, 0)]),
    Case("log_softmax-batch0", lambda x: tl.log_softmax(x, 1), lambda x: torch.log_softmax(x, 1), [E]),
    Case(
        "log_softmax-empty-axis", lambda x: tl.log_softmax(x, 1), lambda x: torch.log_softmax(x, 1), [(3, 0)]
    ),
    Case(
        "hard_masked_softmax-batch0",
        tl.hard_masked_softmax,
        _torch_hard_masked_softmax,
        [(0, 4), MASK_0],
    ),
    Case(
        "hard_masked_softmax-empty-axis",
        tl.hard_masked_softmax,
        _torch_hard_masked_softmax,
        [(3, 0), np.ones((1, 0), dtype=bool)],
    ),
    # ------------------------------------------------------------------------------ reductions
    Case("reduce_sum-all-empty", tl.reduce_sum, torch.sum, [E]),
    Case("reduce_sum-empty-axis", lambda x: tl.reduce_sum(x, 0), lambda x: torch.sum(x, 0), [E]),
    Case("reduce_sum-kept-axis", lambda x: tl.reduce_sum(x, 1), lambda x: torch.sum(x, 1), [E]),
    Case(
        "reduce_sum-keepdims",
        lambda x: tl.reduce_sum(x, 0, keepdims=True),
        lambda x: torch.sum(x, 0, keepdim=True),
        [E],
    ),
    Case("reduce_mean-all-empty", tl.reduce_mean, torch.mean, [E]),
    Case("reduce_mean-empty-axis", lambda x: tl.reduce_mean(x, 0), lambda x: torch.mean(x, 0), [E]),
    Case(
        "reduce_mean-tuple-axes",
        lambda x: tl.reduce_mean(x, (0, 2)),
        lambda x: torch.mean(x, (0, 2)),
        [(2, 3, 0)],
    ),
    Case("mse_loss-empty", tl.mse_loss, TF.mse_loss, [E, E], (0, 1)),
    Case(
        "cross_entropy-indices-batch0",
        lambda x, t: tl.cross_entropy(x, t),
        lambda x, t: TF.cross_entropy(x, t),
        [(0, 5), _idx(0)],
    ),
    Case(
        "cross_entropy-probabilities-batch0",
        lambda x, t: tl.cross_entropy(x, t),
        lambda x, t: TF.cross_entropy(x, t),
        [(0, 5), (0, 5)],
    ),
    Case(
        "cross_entropy-sequence0",
        lambda x, t: tl.cross_entropy(x, t, axis=1),
        lambda x, t: TF.cross_entropy(x, t),
        [(2, 5, 0), _idx(2, 0)],
    ),
    # ---------------------------------------------------------------------------- contractions
    Case("matmul-empty-contraction", tl.matmul, torch.matmul, [(2, 0), (0, 3)], (0, 1)),
    Case("matmul-vectors-empty", tl.matmul, torch.matmul, [(0,), (0,)], (0, 1)),
    Case("matmul-batch0", tl.matmul, torch.matmul, [(0, 2, 3), (3, 4)], (0, 1)),
    Case("matmul-rows0", tl.matmul, torch.matmul, [(0, 3), (3, 4)], (0, 1)),
    Case("matmul-cols0", tl.matmul, torch.matmul, [(2, 3), (3, 0)], (0, 1)),
    Case("linear-batch0", tl.linear, TF.linear, [(0, 4), (3, 4), (3,)], (0, 1, 2)),
    Case("linear-sequence0", tl.linear, TF.linear, [(2, 0, 4), (3, 4), (3,)], (0, 1, 2)),
    Case("linear-in0", tl.linear, TF.linear, [(2, 0), (3, 0), (3,)], (0, 1, 2)),
    Case("linear-out0", tl.linear, TF.linear, [(2, 4), (0, 4), (0,)], (0, 1, 2)),
    # ----------------------------------------------------------------------------------- views
    Case("reshape-empty", lambda x: tl.reshape(x, (3, 0)), lambda x: x.reshape(3, 0), [E]),
    Case("reshape-infer", lambda x: tl.reshape(x, (-1, 3)), lambda x: x.reshape(-1, 3), [(3, 0, 2)]),
    Case("permute-empty", lambda x: tl.permute(x, (1, 0)), lambda x: x.permute(1, 0), [E]),
    Case("transpose-empty", lambda x: tl.transpose(x, 0, 1), lambda x: x.transpose(0, 1), [E]),
    Case(
        "broadcast_to-empty-target",
        lambda x: tl.broadcast_to(x, (0, 3)),
        lambda x: x.broadcast_to(0, 3),
        [(1, 3)],
    ),
    Case(
        "broadcast_to-empty-input",
        lambda x: tl.broadcast_to(x, (2, 0, 3)),
        lambda x: x.broadcast_to(2, 0, 3),
        [E],
    ),
    Case(
        "concat-with-empty",
        lambda a, b: tl.concat([a, b], 0),
        lambda a, b: torch.cat([a, b], 0),
        [E, (2, 3)],
        (0, 1),
    ),
    Case(
        "concat-empty-along-other-axis",
        lambda a, b: tl.concat([a, b], 1),
        lambda a, b: torch.cat([a, b], 1),
        [(2, 0), (2, 3)],
        (0, 1),
    ),
    Case(
        "slice-empty-range",
        lambda x: tl.slice(x, (1, 0), (1, 4)),
        lambda x: x[1:1, 0:4],
        [(3, 4)],
    ),
    Case("getitem-empty-range", lambda x: x[2:2], lambda x: x[2:2], [(3, 4)]),
    Case("getitem-of-empty", lambda x: x[:, 1], lambda x: x[:, 1], [E]),
    Case(
        "gather-empty-index",
        lambda x, i: tl.gather(x, i, 1),
        lambda x, i: torch.gather(x, 1, i),
        [(3, 4), _idx(3, 0)],
    ),
    Case(
        "gather-batch0",
        lambda x, i: tl.gather(x, i, 1),
        lambda x, i: torch.gather(x, 1, i),
        [(0, 4), _idx(0, 2)],
    ),
    Case(
        "scatter_add-empty-index",
        lambda b, i, s: tl.scatter_add(b, i, s, 1),
        lambda b, i, s: torch.scatter_add(b, 1, i, s),
        [(3, 4), _idx(3, 0), (3, 0)],
        (0, 2),
    ),
    Case(
        "scatter_add-empty-index-and-src-rows",
        lambda b, i, s: tl.scatter_add(b, i, s, 0),
        lambda b, i, s: torch.scatter_add(b, 0, i, s),
        [(3, 4), _idx(0, 4), (0, 4)],
        (0, 2),
    ),
    Case(
        "scatter_add-batch0",
        lambda b, i, s: tl.scatter_add(b, i, s, 1),
        lambda b, i, s: torch.scatter_add(b, 1, i, s),
        [(0, 4), _idx(0, 2), (0, 2)],
        (0, 2),
    ),
    # ------------------------------------------------------------------------ layer/batch norm
    Case("layer_norm-batch0", tl.layer_norm, TF.layer_norm, [(0, 4), (4,), (4,)], (0, 1, 2), {"s": (4,)}),
    Case(
        "layer_norm-sequence0",
        tl.layer_norm,
        TF.layer_norm,
        [(2, 0, 4), (4,), (4,)],
        (0, 1, 2),
        {"s": (4,)},
    ),
    Case(
        "layer_norm-features0",
        tl.layer_norm,
        TF.layer_norm,
        [(2, 0), (0,), (0,)],
        (0, 1, 2),
        {"s": (0,)},
    ),
    Case(
        "layer_norm-two-axes-one-empty",
        lambda x: tl.layer_norm(x, normalized_ndim=2),
        lambda x: TF.layer_norm(x, (3, 0)),
        [(2, 3, 0)],
    ),
    Case(
        "batch_norm-train-batch0",
        lambda x, w, b: tl.batch_norm(x, weight=w, bias=b, training=True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        [(0, 3), (3,), (3,)],
        (0, 1, 2),
    ),
    Case(
        "batch_norm-train-batch0-spatial",
        lambda x, w, b: tl.batch_norm(x, weight=w, bias=b, training=True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        [(0, 3, 4), (3,), (3,)],
        (0, 1, 2),
    ),
    Case(
        "batch_norm-train-spatial0",
        lambda x, w, b: tl.batch_norm(x, weight=w, bias=b, training=True),
        lambda x, w, b: TF.batch_norm(x, None, None, w, b, training=True),
        [(2, 3, 0), (3,), (3,)],
        (0, 1, 2),
    ),
    Case(
        "batch_norm-eval-batch0",
        lambda x, w, b, m, v: tl.batch_norm(
            x, weight=w, bias=b, running_mean=m, running_var=v, training=False
        ),
        lambda x, w, b, m, v: TF.batch_norm(x, m, v, w, b, training=False),
        [(0, 3), (3,), (3,), (3,), _ones(3)],
        (0, 1, 2),
    ),
    Case(
        "batch_norm-train-channels0",
        lambda x: tl.batch_norm(x, training=True),
        lambda x: TF.batch_norm(x, None, None, training=True),
        [(2, 0, 3)],
    ),
    Case(
        "batch_norm-eval-channels0",
        lambda x, m, v: tl.batch_norm(x, running_mean=m, running_var=v, training=False),
        lambda x, m, v: TF.batch_norm(x, m, v, training=False),
        [(2, 0), (0,), (0,)],
    ),
    # ------------------------------------------------------------------------- convolutions
    Case("conv1d-batch0", tl.conv, TF.conv1d, [(0, 2, 5), (3, 2, 2), (3,)], (0, 1, 2)),
    Case(
        "conv2d-batch0-padded-strided-dilated",
        lambda x, w, b: tl.conv(x, w, b, stride=2, padding=1, dilation=2),
        lambda x, w, b: TF.conv2d(x, w, b, stride=2, padding=1, dilation=2),
        [(0, 2, 5, 5), (3, 2, 2, 2), (3,)],
        (0, 1, 2),
    ),
    Case(
        "conv2d-batch0-groups",
        lambda x, w: tl.conv(x, w, groups=2),
        lambda x, w: TF.conv2d(x, w, groups=2),
        [(0, 4, 4, 4), (6, 2, 2, 2)],
        (0, 1),
    ),
    Case("conv3d-batch0", tl.conv, TF.conv3d, [(0, 2, 3, 3, 3), (3, 2, 2, 2, 2), (3,)], (0, 1, 2)),
    Case(
        "conv1d-batch0-spatial0-padded",
        lambda x, w, b: tl.conv(x, w, b, padding=1),
        lambda x, w, b: TF.conv1d(x, w, b, padding=1),
        [(0, 2, 0), (3, 2, 1), (3,)],
        (0, 1, 2),
    ),
    Case(
        "conv_transpose1d-batch0",
        tl.conv_transpose,
        TF.conv_transpose1d,
        [(0, 2, 5), (2, 3, 2), (3,)],
        (0, 1, 2),
    ),
    Case(
        "conv_transpose2d-batch0-strided",
        lambda x, w, b: tl.conv_transpose(x, w, b, stride=2, output_padding=1),
        lambda x, w, b: TF.conv_transpose2d(x, w, b, stride=2, output_padding=1),
        [(0, 2, 3, 3), (2, 3, 2, 2), (3,)],
        (0, 1, 2),
    ),
    Case(
        "conv_transpose1d-batch0-spatial0",
        tl.conv_transpose,
        TF.conv_transpose1d,
        [(0, 2, 0), (2, 3, 2), (3,)],
        (0, 1, 2),
    ),
    # ------------------------------------------------------------------------------ pools
    *[
        Case(f"{name}{nd}d-batch0", lambda x, f=fn: f(x, 2), lambda x, r=ref: r(x, 2), [(0, 2, *[4] * nd)])
        for name, fn, refs in [
            ("max_pool", tl.max_pool, (TF.max_pool1d, TF.max_pool2d, TF.max_pool3d)),
            ("avg_pool", tl.avg_pool, (TF.avg_pool1d, TF.avg_pool2d, TF.avg_pool3d)),
        ]
        for nd, ref in zip((1, 2, 3), refs, strict=True)
    ],
    Case(
        "max_pool2d-batch0-padded-dilated",
        lambda x: tl.max_pool(x, 3, 2, 1, 2),
        lambda x: TF.max_pool2d(x, 3, 2, 1, 2),
        [(0, 2, 6, 6)],
    ),
    Case(
        "avg_pool2d-batch0-padded",
        lambda x: tl.avg_pool(x, 3, 2, 1),
        lambda x: TF.avg_pool2d(x, 3, 2, 1),
        [(0, 2, 5, 5)],
    ),
    Case(
        "smooth_max_pool2d-batch0",
        lambda x: tl.smooth_max_pool(x, 2, 1.5),
        lambda x: _torch_smooth_max_pool(x, 1.5, 2),
        [(0, 2, 4, 4)],
    ),
    # -------------------------------------------------------------------------- attention
    *[
        Case(f"attention-{name}", tl.scaled_dot_product_attention, _torch_sdpa, shapes, (0, 1, 2))
        for name, shapes in [
            ("queries0", [(2, 0, 4), (2, 3, 4), (2, 3, 5)]),
            ("keys0", [(2, 3, 4), (2, 0, 4), (2, 0, 5)]),
            ("head-dim0", [(2, 3, 0), (2, 3, 0), (2, 3, 5)]),
            ("value-dim0", [(2, 3, 4), (2, 3, 4), (2, 3, 0)]),
            ("batch0", [(0, 2, 3, 4), (0, 2, 3, 4), (0, 2, 3, 5)]),
            ("batch0-broadcast", [(0, 3, 4), (1, 3, 4), (1, 3, 5)]),
        ]
    ],
    Case(
        "attention-keys0-masked",
        tl.scaled_dot_product_attention,
        lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
        [(2, 3, 4), (2, 0, 4), (2, 0, 5), np.ones((3, 0), dtype=bool)],
        (0, 1, 2),
    ),
    Case(
        "attention-batch0-masked",
        tl.scaled_dot_product_attention,
        lambda q, k, v, m: TF.scaled_dot_product_attention(q, k, v, attn_mask=m),
        [(0, 3, 4), (0, 3, 4), (0, 3, 5), np.tril(np.ones((3, 3), dtype=bool))],
        (0, 1, 2),
    ),
    # ---------------------------------------------------------------- random sources, dropout
    Case("dropout-batch0", lambda x: tl.dropout(x, 0.5, seed=3), lambda x: TF.dropout(x, 0.5), [E]),
]


def _arrays(case: Case, dtype: type = np.float64) -> list[Array]:
    """The case's inputs: shapes become standard normal arrays; every float array is in ``dtype``
    (masks and indices stay as given)."""
    rng = np.random.default_rng(0)
    arrays = [rng.standard_normal(spec) if isinstance(spec, tuple) else spec for spec in case.inputs]
    return [a.astype(dtype) if a.dtype.kind == "f" else a for a in arrays]


def _call_ours(case: Case, args: list[tl.Tensor]) -> tl.Tensor:
    if "s" in case.kwargs:  # layer_norm: torchlean takes the normalised rank, torch the shape
        return case.fn(*args, normalized_ndim=len(case.kwargs["s"]))
    return case.fn(*args)


def _call_torch(case: Case, args: list[torch.Tensor]) -> torch.Tensor:
    if "s" in case.kwargs:
        x, *affine = args
        return case.ref(x, case.kwargs["s"], *affine)
    return case.ref(*args)


def _assert_same(got: Array, want: Array, what: str, dtype: type = np.float64) -> None:
    assert got.shape == want.shape, f"{what}: shape {got.shape}, torch {want.shape}"
    assert got.dtype == dtype, f"{what}: dtype {got.dtype}"
    tolerance = 1e-10 if dtype == np.float64 else 1e-5
    np.testing.assert_allclose(got, want, rtol=tolerance, atol=tolerance, equal_nan=True, err_msg=what)


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_value_and_gradient_match_torch(case: Case, profile: str) -> None:
    arrays = _arrays(case)
    ours = [tl.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    theirs = [torch.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    with tl.session(profile):
        out = _call_ours(case, ours)
        expected = _call_torch(case, theirs)
        _assert_same(out.numpy(), expected.detach().numpy(), "value")
        g = np.random.default_rng(1).standard_normal(out.shape)
        out.backward(g)
    expected.backward(torch.tensor(g))
    for i in case.diff:
        got, want = ours[i].grad, theirs[i].grad
        assert want is not None
        assert got is not None, f"input {i} received no gradient"
        _assert_same(got.numpy(), want.numpy(), f"gradient of input {i}")


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("case", CASES, ids=[c.id for c in CASES])
def test_float32_keeps_its_dtype_in_value_and_gradient(case: Case, profile: str) -> None:
    """The same calls in float32: results and gradients stay float32 (no promotion of an empty
    or NaN result), values as torch float64 of the same inputs to 1e-5."""
    arrays = _arrays(case, np.float32)
    ours = [tl.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(arrays)]
    wide = [a.astype(np.float64) if a.dtype == np.float32 else a for a in arrays]
    theirs = [torch.tensor(a, requires_grad=i in case.diff) for i, a in enumerate(wide)]
    with tl.session(profile):
        out = _call_ours(case, ours)
        g = np.random.default_rng(1).standard_normal(out.shape)
        out.backward(g.astype(np.float32))
    expected = _call_torch(case, theirs)
    expected.backward(torch.tensor(g))
    _assert_same(out.numpy(), expected.detach().numpy(), "value", np.float32)
    for i in case.diff:
        got, want = ours[i].grad, theirs[i].grad
        assert got is not None and want is not None
        _assert_same(got.numpy(), want.numpy(), f"gradient of input {i}", np.float32)


@pytest.mark.parametrize("profile", PROFILES)
def test_random_sources_of_empty_shape(profile: str) -> None:
    """``torch.rand(0, 3)``'s shape; the session counter still advances once per draw."""
    with tl.session(profile) as s:
        u = tl.rand_uniform((0, 3), seed=1, dtype=np.float64)
        m = tl.bernoulli_mask((2, 0), 0.5, seed=1, dtype=np.float64)
        assert s.next_random_counter() == 2
    assert u.shape == tuple(torch.rand(0, 3).shape) and u.dtype == np.float64
    assert m.shape == (2, 0)


# ------------------------------------------------------------------------------ nn, batch of 0


def _run_model(model: nn.Model, x: Array, profile: str) -> tuple[tl.Tensor, list[tl.Tensor]]:
    params = [tl.tensor(p, requires_grad=True) for p in model.parameters]
    with tl.session(profile):
        out = model.layer.forward(EagerOps(), params, tl.tensor(x), training=False)
        out.backward(np.ones(out.shape))
    return out, params


def _torch_params(model: nn.Model) -> list[torch.Tensor]:
    return [torch.tensor(p, requires_grad=True) for p in model.parameters]


def _torch_mlp(p: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    return TF.linear(torch.relu(TF.linear(x, p[0], p[1])), p[2], p[3])


def _torch_cnn(p: list[torch.Tensor], x: torch.Tensor) -> torch.Tensor:
    h = TF.max_pool2d(torch.relu(TF.conv2d(x, p[0], p[1], padding=1)), 2)
    h = TF.avg_pool2d(h, 2)
    return TF.linear(h.flatten(1), p[2], p[3])


def _torch_block(p: list[torch.Tensor], x: torch.Tensor, heads: int) -> torch.Tensor:
    batch, tokens, d = x.shape
    a = TF.layer_norm(x, (d,), p[0], p[1])

    def split(w: torch.Tensor) -> torch.Tensor:
        return TF.linear(a, w).reshape(batch, tokens, heads, d // heads).permute(0, 2, 1, 3)

    att = TF.scaled_dot_product_attention(split(p[2]), split(p[3]), split(p[4]), is_causal=True)
    h = x + TF.linear(att.permute(0, 2, 1, 3).reshape(batch, tokens, d), p[5])
    m = TF.linear(TF.gelu(TF.linear(TF.layer_norm(h, (d,), p[6], p[7]), p[8], p[9])), p[10], p[11])
    return h + m


MODELS: list[tuple[str, Callable[[], nn.Model], Callable[..., torch.Tensor], tuple[int, ...]]] = [
    (
        "mlp",
        lambda: nn.build(
            nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 3)), seed=0, dtype=np.float64
        ),
        _torch_mlp,
        (0, 4),
    ),
    (
        "cnn",
        lambda: nn.build(
            nn.sequential(
                nn.conv2d(1, 2, 3, padding=1),
                nn.relu(),
                nn.max_pool2d(2),
                nn.avg_pool2d(2),
                nn.flatten(),
                nn.linear(8, 3),
            ),
            input_shape=(1, 8, 8),
            seed=0,
            dtype=np.float64,
        ),
        _torch_cnn,
        (0, 1, 8, 8),
    ),
    (
        "transformer",
        lambda: nn.build(
            nn.sequential(
                nn.transformer_block(4, 2, mlp_hidden=8, causal=True), nn.mean_pool(0), nn.linear(4, 2)
            ),
            input_shape=(3, 4),
            seed=0,
            dtype=np.float64,
        ),
        lambda p, x: TF.linear(_torch_block(p, x, 2).mean(1), p[12], p[13]),
        (0, 3, 4),
    ),
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("name, make, ref, shape", MODELS, ids=[m[0] for m in MODELS])
def test_nn_layers_on_a_batch_of_zero(
    name: str,
    make: Callable[[], nn.Model],
    ref: Callable[..., torch.Tensor],
    shape: tuple[int, ...],
    profile: str,
) -> None:
    """An empty batch gives an empty output and zero parameter gradients, as torch."""
    model = make()
    x = np.zeros(shape)
    out, params = _run_model(model, x, profile)
    theirs = _torch_params(model)
    expected = ref(theirs, torch.tensor(x))
    expected.backward(torch.ones_like(expected))
    _assert_same(out.numpy(), expected.detach().numpy(), "value")
    for i, (mine, want) in enumerate(zip(params, theirs, strict=True)):
        assert want.grad is not None and mine.grad is not None
        _assert_same(mine.grad.numpy(), want.grad.numpy(), f"gradient of parameter {i}")


# ------------------------------------------------------------------------------------ refusals


def _z(*shape: int) -> tl.Tensor:
    return tl.tensor(np.zeros(shape), dtype=np.float64)


def _t(*shape: int) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.float64)


def _li(*shape: int) -> torch.Tensor:
    return torch.zeros(shape, dtype=torch.long)


@dataclass(frozen=True)
class Refusal:
    """A zero-size call torch refuses (``torch_call`` raises): ours raises a GuardError whose
    message contains ``message`` (the offending shape and what is accepted)."""

    id: str
    ours: Callable[[], object]
    message: str
    torch_call: Callable[[], object]


REFUSALS: list[Refusal] = [
    Refusal(
        "batch_norm-one-value-per-channel",
        lambda: tl.batch_norm(_z(1, 3), training=True),
        "batch_norm: batch statistics of x with shape (1, 3) have 1 value per channel (accepted: "
        "N * prod(spatial) >= 2 values per channel, or 0 for an empty batch",
        lambda: TF.batch_norm(_t(1, 3), None, None, training=True),
    ),
    Refusal(
        "batch_norm-channels0-with-weight",
        lambda: tl.batch_norm(_z(2, 0, 3), weight=_z(0), training=True),
        "batch_norm: x has shape (2, 0, 3) with 0 channels and an affine weight or bias (accepted: "
        "C >= 1, or C = 0 with weight and bias None",
        lambda: TF.batch_norm(_t(2, 0, 3), None, None, _t(0), None, training=True),
    ),
    Refusal(
        "batch_norm-channels0-with-bias-eval",
        lambda: tl.batch_norm(
            _z(2, 0), bias=_z(0), running_mean=_z(0), running_var=_z(0), training=False
        ),
        "batch_norm: x has shape (2, 0) with 0 channels and an affine weight or bias",
        lambda: TF.batch_norm(_t(2, 0), _t(0), _t(0), None, _t(0), training=False),
    ),
    Refusal(
        "conv-out-channels0",
        lambda: tl.conv(_z(2, 2, 5), _z(0, 2, 2)),
        "conv: w has shape (0, 2, 2) with an empty axis (accepted: every axis >= 1)",
        lambda: TF.conv1d(_t(2, 2, 5), _t(0, 2, 2)),
    ),
    Refusal(
        "conv-kernel0",
        lambda: tl.conv(_z(0, 2, 5), _z(3, 2, 0)),
        "conv: w has shape (3, 2, 0) with an empty axis (accepted: every axis >= 1)",
        lambda: TF.conv1d(_t(0, 2, 5), _t(3, 2, 0)),
    ),
    Refusal(
        "conv-spatial0-nonempty-batch",
        lambda: tl.conv(_z(2, 2, 0), _z(3, 2, 1), padding=1),
        "conv: x has shape (2, 2, 0) with an empty axis (accepted: C_in >= 1 and spatial extents >= 1 "
        "unless the batch N is 0, as PyTorch convolutions)",
        lambda: TF.conv1d(_t(2, 2, 0), _t(3, 2, 1), padding=1),
    ),
    Refusal(
        "conv-batch0-spatial0-kernel-too-large",
        lambda: tl.conv(_z(0, 2, 0), _z(3, 2, 1)),
        "conv: effective kernel size 1 (dilation*(kernel-1)+1) exceeds the padded input size 0",
        lambda: TF.conv1d(_t(0, 2, 0), _t(3, 2, 1)),
    ),
    Refusal(
        "conv_transpose-in-channels0",
        lambda: tl.conv_transpose(_z(2, 0, 5), _z(0, 3, 2)),
        "conv_transpose: x has shape (2, 0, 5) with an empty axis (accepted: C_in >= 1",
        lambda: TF.conv_transpose1d(_t(2, 0, 5), _t(0, 3, 2)),
    ),
    Refusal(
        "conv_transpose-out-channels0",
        lambda: tl.conv_transpose(_z(0, 2, 5), _z(2, 0, 2)),
        "conv_transpose: w has shape (2, 0, 2) with an empty axis (accepted: every axis >= 1)",
        lambda: TF.conv_transpose1d(_t(0, 2, 5), _t(2, 0, 2)),
    ),
    Refusal(
        "conv_transpose-spatial0-nonempty-batch",
        lambda: tl.conv_transpose(_z(2, 2, 0), _z(2, 3, 2)),
        "conv_transpose: x has shape (2, 2, 0) with an empty axis",
        lambda: TF.conv_transpose1d(_t(2, 2, 0), _t(2, 3, 2)),
    ),
    Refusal(
        "max_pool-channels0",
        lambda: tl.max_pool(_z(2, 0, 5, 5), 2),
        "max_pool: x has shape (2, 0, 5, 5) with an empty axis (accepted: C >= 1 and spatial extents "
        ">= 1; only the batch N may be 0, as PyTorch pools)",
        lambda: TF.max_pool2d(_t(2, 0, 5, 5), 2),
    ),
    Refusal(
        "max_pool-batch0-spatial0",
        lambda: tl.max_pool(_z(0, 2, 0), 1),
        "max_pool: x has shape (0, 2, 0) with an empty axis",
        lambda: TF.max_pool1d(_t(0, 2, 0), 1),
    ),
    Refusal(
        "avg_pool-spatial0",
        lambda: tl.avg_pool(_z(2, 2, 0, 5), 2),
        "avg_pool: x has shape (2, 2, 0, 5) with an empty axis",
        lambda: TF.avg_pool2d(_t(2, 2, 0, 5), 2),
    ),
    Refusal(
        "avg_pool-batch0-kernel-too-large",
        lambda: tl.avg_pool(_z(0, 2, 5), 6),
        "avg_pool: effective kernel size 6 (dilation*(kernel-1)+1) exceeds the padded input size 5",
        lambda: TF.avg_pool1d(_t(0, 2, 5), 6),
    ),
    Refusal(
        "smooth_max_pool-channels0",  # torch has no smooth max pool: its pools' rule
        lambda: tl.smooth_max_pool(_z(2, 0, 4, 4), 2, 1.0),
        "smooth_max_pool: x has shape (2, 0, 4, 4) with an empty axis",
        lambda: TF.max_pool2d(_t(2, 0, 4, 4), 2),
    ),
    Refusal(
        "reshape-infer-beside-zero",
        lambda: tl.reshape(_z(0, 3), (-1, 0)),
        "reshape: cannot infer the -1 extent of shape [-1, 0] for 0 elements (accepted: a -1 whose "
        "other extents have a nonzero product",
        lambda: _t(0, 3).reshape(-1, 0),
    ),
    Refusal(
        "gather-index-into-empty-axis",
        lambda: tl.gather(_z(3, 0), np.zeros((3, 1), dtype=LONG), 1),
        "gather: index value 0 is out of range for extent 0 along axis 1 (accepted: no index value: "
        "the axis is empty",
        lambda: torch.gather(_t(3, 0), 1, _li(3, 1)),
    ),
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("case", REFUSALS, ids=[c.id for c in REFUSALS])
def test_refusals_where_torch_refuses(case: Refusal, profile: str) -> None:
    with pytest.raises((RuntimeError, ValueError, IndexError)):
        case.torch_call()
    with tl.session(profile), pytest.raises(GuardError) as caught:
        case.ours()
    assert case.message in str(caught.value)


@dataclass(frozen=True)
class KeptRefusal:
    """A zero-size call torch answers but torchlean refuses, with torch's behaviour as evidence:
    ``torch_call`` returns, and either torch refuses ``torch_positive`` (the same call with the
    empty extent made positive: the answer comes from a check torch skips for empty tensors) or
    torch's answer has ``torch_shape``, which is not the op's documented result shape."""

    id: str
    ours: Callable[[], object]
    message: str
    torch_call: Callable[[], torch.Tensor]
    torch_positive: Callable[[], object] | None = None
    torch_shape: tuple[int, ...] | None = None


KEPT_REFUSALS: list[KeptRefusal] = [
    KeptRefusal(
        # torch returns (2, 0, 4): 0 output channels instead of C_out = 3, the bias dropped
        # (pytorch/pytorch#56998 is open); the mathematical result would be the bias, (2, 3, 4)
        "conv-in-channels0",
        lambda: tl.conv(_z(2, 0, 5), _z(3, 0, 2), _z(3)),
        "conv: x has shape (2, 0, 5) with 0 input channels (accepted: C_in >= 1; for C_in = 0 "
        "PyTorch returns 0 output channels instead of C_out, dropping the bias",
        lambda: TF.conv1d(_t(2, 0, 5), _t(3, 0, 2), torch.ones(3, dtype=torch.float64)),
        torch_shape=(2, 0, 4),  # not (N, C_out, L_out) = (2, 3, 4)
    ),
    KeptRefusal(
        "gather-empty-index-larger-extent",
        lambda: tl.gather(_z(3, 4), np.zeros((0, 7), dtype=LONG), 0),
        "gather: index (0, 7) does not fit input x (3, 4) (accepted: the same rank and index extents",
        lambda: torch.gather(_t(3, 4), 0, _li(0, 7)),
        torch_positive=lambda: torch.gather(_t(3, 4), 0, _li(1, 7)),
    ),
    KeptRefusal(
        "gather-empty-index-other-rank",
        lambda: tl.gather(_z(3, 4), np.zeros((0,), dtype=LONG), 1),
        "gather: index (0,) does not fit input x (3, 4)",
        lambda: torch.gather(_t(3, 4), 1, _li(0)),
        torch_positive=lambda: torch.gather(_t(3, 4), 1, _li(1)),
    ),
    KeptRefusal(
        "scatter_add-empty-index-larger-extent",
        lambda: tl.scatter_add(_z(3, 4), np.zeros((5, 0), dtype=LONG), _z(5, 0), 1),
        "scatter_add: index (5, 0) does not fit base (3, 4) and src (5, 0)",
        lambda: torch.scatter_add(_t(3, 4), 1, _li(5, 0), _t(5, 0)),
        torch_positive=lambda: torch.scatter_add(_t(3, 4), 1, _li(5, 1), _t(5, 1)),
    ),
    KeptRefusal(
        "concat-legacy-empty-vector",  # torch.cat skips a 1-D empty tensor (a legacy rule)
        lambda: tl.concat([_z(0), _z(2, 3)], 1),
        "concat: axis 1 is out of range for a rank-1 input",
        lambda: torch.cat([_t(0), _t(2, 3)], 1),
        torch_positive=lambda: torch.cat([_t(1), _t(2, 3)], 1),
    ),
    KeptRefusal(
        "batch_norm-empty-batch-weight-length",
        lambda: tl.batch_norm(_z(0, 3), weight=_z(5), training=True),
        "batch_norm: weight has shape (5,) (accepted: (3,))",
        lambda: TF.batch_norm(_t(0, 3), None, None, _t(5), None, training=True),
        torch_positive=lambda: TF.batch_norm(_t(2, 3), None, None, _t(5), None, training=True),
    ),
    KeptRefusal(
        "batch_norm-rank1-empty",
        lambda: tl.batch_norm(_z(0), training=True),
        "batch_norm: x has rank 1 with shape (0,) (accepted: rank >= 2, (N, C, *spatial))",
        lambda: TF.batch_norm(_t(0), None, None, training=True),
        torch_positive=lambda: TF.batch_norm(_t(2), None, None, training=True),
    ),
]


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("case", KEPT_REFUSALS, ids=[c.id for c in KEPT_REFUSALS])
def test_refusals_kept_where_torch_skips_its_checks(case: KeptRefusal, profile: str) -> None:
    answer = case.torch_call()
    if case.torch_positive is None:
        assert tuple(answer.shape) == case.torch_shape
    else:
        with pytest.raises((RuntimeError, ValueError, IndexError)):
            case.torch_positive()
    with tl.session(profile), pytest.raises(GuardError) as caught:
        case.ours()
    assert case.message in str(caught.value)


def test_batch_norm_running_stats_of_an_empty_batch_are_unchanged() -> None:
    """torch's training-mode batch norm leaves the running statistics as they were for an empty
    batch (there are no batch statistics); so does the reference update."""
    from torchlean.backend.providers.reference import spatial

    mean, var = np.array([1.0, 2.0, 3.0]), np.array([4.0, 5.0, 6.0])
    t_mean, t_var = torch.tensor(mean), torch.tensor(var)
    TF.batch_norm(_t(0, 3, 2), t_mean, t_var, training=True, momentum=0.5)
    new_mean, new_var = spatial.batch_norm_running_stats(np.zeros((0, 3, 2)), mean, var, momentum=0.5)
    np.testing.assert_array_equal(new_mean, t_mean.numpy())
    np.testing.assert_array_equal(new_var, t_var.numpy())
    assert new_mean is not mean and new_var is not var


@pytest.mark.parametrize("profile", PROFILES)
@pytest.mark.parametrize("smoothing", [0.0, 0.1])
@pytest.mark.parametrize(
    ("shape", "target"),
    [
        ((2, 0), np.zeros((2, 0))),  # probabilities over no class
        ((0,), np.zeros((0,))),
        ((2, 0, 3), np.zeros((2, 0, 3))),
        ((0, 0), np.zeros((0,), np.int64)),  # class ids, no sample and no class
        ((0, 3), np.zeros((0,), np.int64)),
    ],
)
def test_cross_entropy_over_no_class_is_nan_as_torch_s(
    profile: str, smoothing: float, shape: tuple[int, ...], target: np.ndarray
) -> None:
    """review199 F2/F3: probabilities over 0 classes gave 0.0 (torch: NaN, its sum over numel / C =
    0 / 0 positions), and label smoothing over 0 classes raised ZeroDivisionError. Oracle: torch's
    value; the gradient is the logits' empty shape."""
    oracle = TF.cross_entropy(torch.zeros(shape, dtype=torch.float64), torch.from_numpy(target),
                              label_smoothing=smoothing).item()
    assert np.isnan(oracle)
    for given in (target, tl.tensor(target)) if target.dtype.kind == "f" else (target,):
        with tl.session(profile=profile):
            logits = tl.tensor(np.zeros(shape), requires_grad=True)
            loss = tl.cross_entropy(logits, given, label_smoothing=smoothing)
            loss.backward()
        assert np.isnan(loss.numpy()) and loss.shape == ()
        assert logits.grad is not None and logits.grad.shape == shape
