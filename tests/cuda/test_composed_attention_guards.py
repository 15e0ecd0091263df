"""The refusals of ``torchlean.composed_attention`` (``attention_kernels``): its guard
``check_composed_attention``, ``composed_attention_backward``'s check of g and
``composed_attention_vjp``'s check of out. Each names the offending operand, its value and what
is accepted, and comes as a ``GuardError`` before any arithmetic (a ``RuntimeError`` from inside
torch otherwise). Run on CPU tensors through the host emulation, as test_cuda_attention.py does.

Oracles: the docstrings (``GuardError`` naming the operand and the accepted shapes/dtypes; g "in
the forward's dtype" and contiguous; out "checked against the forward's shape"), and, for the
forward refusals and the shape of out, torch's own SDPA and autograd refusing the same calls.
torch's autograd casts a g of another dtype and takes any strides, so the docstring alone is the
oracle of those two.
"""

from __future__ import annotations

from collections.abc import Callable
from types import ModuleType

import pytest
import torch
import torch.nn.functional as F

from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers import attention_kernels

OP = r"^torchlean\.composed_attention: "


def _z(*shape: int, dtype: torch.dtype = torch.float64) -> torch.Tensor:
    return torch.zeros(shape, dtype=dtype)


def _saved() -> attention_kernels.ComposedAttentionSaved:
    """A float64 forward of q (2, 3, 4), k/v (2, 5, 4)."""
    return attention_kernels.composed_attention_forward(_z(2, 3, 4), _z(2, 5, 4), _z(2, 5, 4))[1]


MIXED_DTYPES = (_z(2, 3, 4), _z(2, 5, 4), _z(2, 5, 4, dtype=torch.float32))
KEY_COUNTS = (_z(2, 3, 4), _z(2, 6, 4), _z(2, 5, 4))
RANK5_MASK = (_z(2, 3, 4), _z(2, 5, 4), _z(2, 5, 4), torch.ones(1, 1, 1, 3, 5, dtype=torch.bool))
INT_MASK = (_z(2, 3, 4), _z(2, 5, 4), _z(2, 5, 4), torch.ones(3, 5, dtype=torch.int64))

FORWARD_REFUSALS: list[tuple[str, tuple[torch.Tensor, ...], type[GuardError], str]] = [
    (
        "v-of-another-dtype",
        MIXED_DTYPES,
        GuardError,
        OP + r"q, k, v have dtypes float64, float64, float32 \(accepted: one dtype\)$",
    ),
    (
        "k-and-v-key-counts-differ",
        KEY_COUNTS,
        GuardError,
        OP + r"q \[2, 3, 4\], k \[2, 6, 4\], v \[2, 5, 4\] are not \(\.\.\., n_q, d\), \(\.\.\., n_k, d\), "
        r"\(\.\.\., n_k, d_v\)$",
    ),
    (
        "mask-of-higher-rank-than-the-scores",
        RANK5_MASK,
        GuardError,
        OP + r"mask of shape \[1, 1, 1, 3, 5\] does not broadcast to \[2, 3, 5\]",
    ),
    (
        "integer-mask",
        INT_MASK,
        GuardTypeError,
        OP + r"mask has dtype int64 \(accepted: bool, True = allowed; an additive bias is a separate "
        r"operation\)$",
    ),
]


@pytest.mark.parametrize(
    ("operands", "error", "message"),
    [case[1:] for case in FORWARD_REFUSALS],
    ids=[case[0] for case in FORWARD_REFUSALS],
)
def test_the_guard_and_the_forward_refuse(
    operands: tuple[torch.Tensor, ...], error: type[GuardError], message: str, emulation: ModuleType
) -> None:
    with pytest.raises(error, match=message):
        attention_kernels.check_composed_attention(*operands)
    for forward in (attention_kernels.composed_attention_forward, attention_kernels.composed_attention):
        with pytest.raises(error, match=message):
            forward(*operands)


@pytest.mark.parametrize(
    "operands", [case[1] for case in FORWARD_REFUSALS], ids=[case[0] for case in FORWARD_REFUSALS]
)
def test_torch_sdpa_refuses_the_same_forward_calls(operands: tuple[torch.Tensor, ...]) -> None:
    """The oracle: mixed dtypes, k/v key counts that differ, a mask that would enlarge the scores
    and an integer mask are refused by torch's SDPA too."""
    q, k, v, *mask = operands
    with pytest.raises(RuntimeError):
        F.scaled_dot_product_attention(q, k, v, attn_mask=mask[0] if mask else None)


BACKWARD_REFUSALS: list[tuple[str, Callable[[], object], str]] = [
    (
        "g-of-another-dtype",
        lambda: attention_kernels.composed_attention_backward(_z(2, 3, 4, dtype=torch.float32), _saved()),
        OP + r"g has shape \[2, 3, 4\] and dtype float32 \(accepted: \[2, 3, 4\], float64\)$",
    ),
    (
        "g-not-contiguous",
        lambda: attention_kernels.composed_attention_backward(_z(2, 4, 3).transpose(1, 2), _saved()),
        OP + r"g of shape \[2, 3, 4\] has strides \[12, 1, 3\], not a flat row-major buffer "
        r"\(accepted: contiguous tensors\)$",
    ),
    (
        "out-of-another-shape",
        lambda: attention_kernels.composed_attention_vjp(
            _z(2, 3, 4), _z(2, 3, 4), _z(2, 5, 4), _z(2, 5, 4), out=_z(7)
        ),
        OP + r"out has shape \[7\] \(accepted: \[2, 3, 4\]\)$",
    ),
]


@pytest.mark.parametrize(
    ("call", "message"), [case[1:] for case in BACKWARD_REFUSALS], ids=[case[0] for case in BACKWARD_REFUSALS]
)
def test_the_backward_refuses(call: Callable[[], object], message: str, emulation: ModuleType) -> None:
    with pytest.raises(GuardError, match=message):
        call()


def test_torch_refuses_a_cotangent_of_another_shape_than_the_output() -> None:
    """The oracle of the out-shape refusal (an out of shape [7] stands for a g of that shape)."""
    q = _z(2, 3, 4).requires_grad_()
    out = F.scaled_dot_product_attention(q, _z(2, 5, 4), _z(2, 5, 4))
    with pytest.raises(RuntimeError, match="Mismatch in shape"):
        torch.autograd.grad(out, q, _z(7))


def test_the_same_calls_with_the_accepted_operands_run(emulation: ModuleType) -> None:
    """The refusals above are about the one operand each names: fixed, each call runs and agrees
    with torch's SDPA and autograd."""
    generator = torch.Generator().manual_seed(22)
    q, k, v = (
        torch.randn(shape, dtype=torch.float64, generator=generator)
        for shape in ((2, 3, 4), (2, 5, 4), (2, 5, 4))
    )
    mask = torch.rand(3, 5, generator=generator) < 0.7
    mask[:, 0] = True
    g = torch.randn(2, 3, 4, dtype=torch.float64, generator=generator)
    out, saved = attention_kernels.composed_attention_forward(q, k, v, mask)
    dq, dk, dv, _ = attention_kernels.composed_attention_backward(g, saved)
    tq, tk, tv = (t.clone().requires_grad_() for t in (q, k, v))
    want = F.scaled_dot_product_attention(tq, tk, tv, attn_mask=mask)
    torch.testing.assert_close(out, want, rtol=1e-10, atol=1e-10)
    for got, expected in zip((dq, dk, dv), torch.autograd.grad(want, (tq, tk, tv), g), strict=True):
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-10)
    vjp = attention_kernels.composed_attention_vjp(g, q, k, v, mask, out=out)
    for got, expected in zip(vjp[:3], (dq, dk, dv), strict=True):
        torch.testing.assert_close(got, expected, rtol=0, atol=0)
