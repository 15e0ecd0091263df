"""Hard-masked scaled dot-product attention on torch tensors, forward and TorchLean VJP.

The one torch implementation of attention's masking rules (DESIGN.md §1.9, anchor-runtime.md
§5.1-5.2), shared by ``aten.scaled_dot_product_attention`` (CPU tensors over TorchLean's numpy
storage) and ``torchlean.composed_attention`` (CUDA tensors): scores ``q k^T * scale``, a row
softmax over the allowed entries, ``probs v``; the VJP from the saved probabilities.

Rules, for a bool ``allowed`` mask (True = the query may attend the key):

- blocked scores are *selected* away (``torch.where``), never added as -inf, so blocked weights
  are exactly 0 and a row with no allowed key (also an empty key set) is exactly 0, in value and
  in every gradient;
- query rows with no allowed key, and key/value rows that no query attends, are selected to 0
  before any product, as is the cotangent of a query row with no allowed key: NaN or infinity
  stored there reaches nothing (and the finite fast path stays open);
- a non-finite value in a key/value row that only *some* queries attend reaches those queries
  alone: each product by probabilities or score cotangents is a *selected* matmul
  (:func:`selected_matmul`), whose non-finite terms count only at allowed entries, as the
  specification's ``selected_matmul`` and ``native_cuda.direct_attention`` do.

Finiteness is decided once per :func:`attention_forward` (the selected values) and once per
:func:`attention_backward` (the selected cotangent, keys and queries): one host synchronisation
each, after which every product is a plain matmul when all are finite (a VJP that recomputes the
forward, as ``aten``'s does, pays both). Without a mask every product is a plain
``torch.matmul`` and NaN propagates as in PyTorch.

Preconditions (checked by the callers' guards, not here): q, k, v (and g) share one float32 or
float64 dtype and one device; the mask is bool.

Shapes: ``q (..., n_q, d)``, ``k (..., n_k, d)``, ``v (..., n_k, d_v)`` whose leading axes
broadcast (``torch.matmul`` rules); ``allowed`` None or bool broadcastable to
``(*batch, n_q, n_k)``. Results have the broadcast batch shape; callers sum gradients back to
their operands' shapes. Reductions run in torch's order (implementation-defined). torch autograd
is not used: everything runs under ``torch.no_grad``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

__all__ = [
    "AttentionTape",
    "all_finite",
    "attention_backward",
    "attention_forward",
    "default_scale",
    "hard_masked_softmax",
    "hard_masked_softmax_vjp",
    "selected_matmul",
]


@dataclass(frozen=True, slots=True)
class AttentionTape:
    """What :func:`attention_backward` needs from the forward: the selected operands (rows that
    take part in no allowed pair are exact zeros), the mask, the probabilities and the scale."""

    q: Tensor
    k: Tensor
    v: Tensor
    allowed: Tensor | None
    probs: Tensor  # (*batch, n_q, n_k), exactly 0 at blocked entries
    scale: float


def default_scale(d: int, scale: float | None) -> float:
    """``scale`` as a float, or the default ``1/sqrt(d)`` (1 when ``d == 0``), as torch SDPA."""
    if scale is not None:
        return float(scale)
    return 1.0 / math.sqrt(d) if d > 0 else 1.0


def all_finite(*tensors: Tensor) -> bool:
    """True when every element of every tensor is finite: one host synchronisation for all."""
    flags = [torch.isfinite(t).all() for t in tensors if t.numel() > 0]
    return not flags or bool(torch.stack(flags).all())


def _zero(like: Tensor) -> Tensor:
    return torch.zeros((), dtype=like.dtype, device=like.device)


def _select_rows(t: Tensor, keep: Tensor) -> Tensor:
    """Rows of ``t`` (last axis = features) where ``keep`` is False become exact zeros."""
    return torch.where(keep.unsqueeze(-1), t, _zero(t))


def hard_masked_softmax(scores: Tensor, allowed: Tensor | None) -> Tensor:
    """Row softmax over the last axis of ``scores`` restricted to ``allowed`` entries.

    Blocked entries are exactly 0, also in a row whose allowed scores hold NaN; a row with no
    allowed entry (or no entries) is zeros. Without a mask, ``torch.softmax``. The result has the
    broadcast shape of ``scores`` and ``allowed``.
    """
    if allowed is None:
        return torch.softmax(scores, dim=-1)
    zero = _zero(scores)
    if scores.shape[-1] == 0:
        return torch.where(allowed, scores, zero)
    row_any = allowed.any(dim=-1, keepdim=True)
    picked = torch.where(allowed, scores, zero)
    row_max = torch.where(allowed, scores, torch.full_like(zero, -math.inf)).amax(dim=-1, keepdim=True)
    row_max = torch.where(row_any, row_max, zero)
    numerators = torch.where(allowed, torch.exp(picked - row_max), zero)
    denominators = torch.where(row_any, numerators.sum(dim=-1, keepdim=True), torch.ones_like(zero))
    return torch.where(allowed, numerators / denominators, zero)  # 0 / nan at a blocked entry is 0


def hard_masked_softmax_vjp(d_probs: Tensor, probs: Tensor, allowed: Tensor | None) -> Tensor:
    """The score cotangent ``P * (dP - rowsum(P * dP))`` with the mask held constant: the sum
    runs over allowed entries only and blocked entries are exactly 0 (a non-finite ``dP`` there
    is selected away). Without a mask, torch's fused softmax backward (the same formula), on
    ``probs`` broadcast to ``d_probs``' batch shape (which is larger when the values carry batch
    axes the queries and keys lack)."""
    if allowed is None:
        shape = (*d_probs.shape[:-2], *probs.shape[-2:])  # d_probs' batch contains probs'
        probs = probs.expand(shape)
        fused: Tensor = torch.ops.aten._softmax_backward_data(d_probs, probs, -1, probs.dtype)
        return fused
    zero = _zero(probs)
    row_dot = torch.where(allowed, probs * d_probs, zero).sum(dim=-1, keepdim=True)
    return torch.where(allowed, probs * (d_probs - row_dot), zero)


def selected_matmul(a: Tensor, allowed: Tensor | None, b: Tensor, *, b_finite: bool) -> Tensor:
    """``out[..., i, c] = sum_j [allowed[..., i, j]] a[..., i, j] * b[..., j, c]`` for ``a`` that is
    exactly 0 wherever ``allowed`` is False: a matmul in which a non-finite ``b[..., j, c]`` reaches
    row ``i`` only if ``allowed[..., i, j]`` (a plain matmul would add ``0 * nan``).

    ``b_finite`` is the caller's knowledge that ``b`` is all finite (then, or without a mask, one
    ``torch.matmul``). Otherwise the finite entries of ``b`` go through one matmul and three more
    count, per output entry, the allowed terms that are NaN (``nan`` in b, or ``0 * inf``), ``+inf``
    and ``-inf`` (sign of a times sign of b); the IEEE sum of the finite part and those terms
    replaces the entries that have any (NaN, or an infinity, or NaN for ``inf - inf``). No host
    synchronisation. ``a (..., m, n)``, ``allowed`` broadcastable to ``a``, ``b (..., n, c)``.

    That sum is exact IEEE when ``a`` holds no infinity at an allowed entry (probabilities never
    do; a score cotangent only after float overflow): an infinite ``a`` meeting an infinite ``b``
    gives NaN here (the finite part multiplies ``inf`` by the 0 put in place of ``b``'s infinity)
    where IEEE gives an infinity.
    """
    if allowed is None or b_finite:
        return torch.matmul(a, b)
    zero = _zero(b)
    out = torch.matmul(a, torch.where(torch.isfinite(b), b, zero))
    mask = allowed.expand(a.shape)

    def count(rows: Tensor, cols: Tensor) -> Tensor:
        return torch.matmul(rows.to(b.dtype), cols.to(b.dtype))

    plus, minus = b == math.inf, b == -math.inf
    a_pos, a_neg = mask & (a > 0), mask & (a < 0)
    nans = count(mask, torch.isnan(b)) + count(mask & (a == 0), plus | minus)
    pos = count(a_pos, plus) + count(a_neg, minus)
    neg = count(a_pos, minus) + count(a_neg, plus)
    special = (
        torch.where(nans > 0, math.nan, zero)
        + torch.where(pos > 0, math.inf, zero)
        + torch.where(neg > 0, -math.inf, zero)
    )
    return torch.where((nans + pos + neg) > 0, out + special, out)


def attention_forward(
    q: Tensor, k: Tensor, v: Tensor, allowed: Tensor | None, scale: float
) -> tuple[Tensor, AttentionTape]:
    """``hard_masked_softmax(q k^T * scale) v``: the output ``(*batch, n_q, d_v)`` and the tape.

    Without a mask: ``torch.softmax`` and plain matmuls on the operands as given.
    """
    with torch.no_grad():
        if allowed is not None:
            q = _select_rows(q, allowed.any(dim=-1))
            key_used = allowed.any(dim=-2)
            k = _select_rows(k, key_used)
            v = _select_rows(v, key_used)
        probs = hard_masked_softmax(torch.matmul(q, k.mT) * scale, allowed)
        out = selected_matmul(probs, allowed, v, b_finite=allowed is None or all_finite(v))
    return out, AttentionTape(q, k, v, allowed, probs, scale)


def attention_backward(g: Tensor, tape: AttentionTape) -> tuple[Tensor, Tensor, Tensor]:
    """``(dq, dk, dv)`` in the broadcast batch shape from the cotangent ``g (*batch, n_q, d_v)``:
    ``dV = P^T g``, ``dP = g V^T``, ``dS = hard_masked_softmax_vjp(dP) * scale``, ``dQ = dS K``,
    ``dK = dS^T Q``. A query row with no allowed key takes no cotangent."""
    allowed, probs = tape.allowed, tape.probs
    with torch.no_grad():
        allowed_t = None
        finite = True
        if allowed is not None:
            g = _select_rows(g, allowed.any(dim=-1))
            allowed_t = allowed.mT
            finite = all_finite(g, tape.k, tape.q)
        dv = selected_matmul(probs.mT, allowed_t, g, b_finite=finite)
        ds = hard_masked_softmax_vjp(torch.matmul(g, tape.v.mT), probs, allowed) * tape.scale
        if allowed is not None:  # blocked entries stay exactly 0 (selected_matmul's contract) when
            ds = torch.where(allowed, ds, _zero(ds))  # the scale is inf in the dtype: 0 * inf
        dq = selected_matmul(ds, allowed, tape.k, b_finite=finite)
        dk = selected_matmul(ds.mT, allowed_t, tape.q, b_finite=finite)
    return dq, dk, dv
