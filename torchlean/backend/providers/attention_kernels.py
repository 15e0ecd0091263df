"""``torchlean.composed_attention``: TorchLean's attention composition on CUDA tensors.

The attention module's second capsule (anchor-backend.md §4.4): batched matmul, a hard-masked row
softmax, batched matmul, with TorchLean's own VJP (``torchlean-tape``). The capsule names
:func:`check_composed_attention` (shape obligation) and :func:`check_cuda_layout` (layout
obligation) as its runtime guards; both run before any arithmetic.

Semantics (anchor-runtime.md §5.1-5.2) are those of
:mod:`~torchlean.backend.providers.masked_attention`, the torch attention core this capsule shares
with ``aten.scaled_dot_product_attention``: scores ``q k^T * scale`` (default ``1/sqrt(d)``, 1
when d = 0); the hard-masked softmax *selects* blocked entries away (``torch.where``, never an
added -inf), so blocked entries weigh exactly 0 and a fully blocked row (also an empty key set)
is zeros; NaN or infinity stored where no allowed pair reads it reaches neither the output nor
any gradient, and a non-finite value in a key/value row that only *some* queries attend reaches
those queries alone (selected matmuls, as the specification's ``selected_matmul`` and
``native_cuda.direct_attention``). Finiteness is decided once per forward and once per backward.

The leading (batch, head) axes of q, k and v broadcast like torch SDPA's: each operand is
materialised (contiguous, on its device) to the common batch shape before the batched matmuls,
and the VJP sums each gradient back to its operand's shape (:mod:`.native_cuda.batching`; the
order of those sums is implementation-defined, as the capsule declares).

:func:`composed_attention_forward` returns the probabilities (:class:`ComposedAttentionSaved`) so
that :func:`composed_attention_backward` need not recompute ``q k^T`` or the softmax; the
capsule's VJP (:func:`composed_attention_vjp`) keeps nothing from the forward and recomputes them.
``torch.autograd`` is not used. Under
:func:`.native_cuda.extension.host_emulation` the same functions accept CPU tensors (the test
suite's path on machines without a GPU).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import torch
from torch import Tensor

from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.masked_attention import (
    AttentionTape,
    attention_backward,
    attention_forward,
    default_scale,
)
from torchlean.backend.providers.native_cuda import extension
from torchlean.backend.providers.native_cuda.batching import broadcast_batch, expand_to_batch, sum_to_shape
from torchlean.backend.providers.native_cuda.float32 import ieee_float32
from torchlean.backend.providers.native_cuda.guards import FLOAT_DTYPES, dtype_name, is_finite_real
from torchlean.backend.providers.reference.spatial_guards import shown_value

__all__ = [
    "ComposedAttentionSaved",
    "check_composed_attention",
    "check_cuda_layout",
    "composed_attention",
    "composed_attention_backward",
    "composed_attention_forward",
    "composed_attention_vjp",
]

_OP = "torchlean.composed_attention"


def _fail(message: str) -> GuardError:
    return GuardError(f"{_OP}: {message}")


@dataclass(frozen=True, slots=True)
class AttentionDims:
    """Logical dimensions: the broadcast leading axes ``(batch, heads)`` or ``(heads,)``, their
    folded count, the sizes, and the operands' own shapes (the VJP sums back to them)."""

    lead: tuple[int, ...]
    folded: int
    n_q: int
    n_k: int
    d: int
    d_v: int
    q_shape: tuple[int, ...]
    k_shape: tuple[int, ...]
    v_shape: tuple[int, ...]


def check_cuda_layout(q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None) -> None:
    """Layout guard: q, k, v (and the mask) are torch tensors on one CUDA device (the CPU under
    host emulation) and contiguous row-major buffers, whose folded ``(batch, head)`` axis is
    the batched-matmul batch axis.

    Raises:
        GuardError: naming the operand and the accepted layout.
    """
    _require_layout({"q": q, "k": k, "v": v, "mask": mask})


def _require_layout(tensors: dict[str, Tensor | None]) -> None:
    expected = extension.expected_device_type()
    device: torch.device | None = None
    first = ""
    for name, tensor in tensors.items():
        if tensor is None:
            continue
        if not isinstance(tensor, torch.Tensor):
            raise _fail(f"{name} is a {type(tensor).__name__} (accepted: torch.Tensor)")
        if tensor.device.type != expected:
            raise _fail(f"{name} is on device {tensor.device} (accepted: {expected} tensors)")
        if device is None:
            device, first = tensor.device, name
        elif tensor.device != device:
            raise _fail(f"{name} is on {tensor.device} but {first} is on {device}")
        if not tensor.is_contiguous():
            raise _fail(
                f"{name} of shape {list(tensor.shape)} has strides {list(tensor.stride())}, not a "
                "flat row-major buffer (accepted: contiguous tensors)"
            )


def check_composed_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, scale: float | None = None
) -> AttentionDims:
    """Shape guard: q ``(..., n_q, d)``, k ``(..., n_k, d)``, v ``(..., n_k, d_v)``, each of rank 3
    or 4, whose leading axes ``(batch, heads)`` or ``(heads,)`` broadcast to one batch shape
    (numpy/PyTorch rules, as ``reference.attention`` and torch SDPA accept), one float32/float64
    dtype; mask None or bool broadcastable to ``(*batch, n_q, n_k)``; scale None or finite.
    Returns the dimensions with ``lead`` = the broadcast batch shape.

    Raises:
        GuardError: naming the operand and the accepted shapes (all three shapes when the leading
            axes do not broadcast); a non-bool mask raises its subclass ``GuardTypeError`` (also a
            ``TypeError``).
    """
    for name, tensor in (("q", q), ("k", k), ("v", v)):
        if tensor.dim() not in (3, 4):
            raise _fail(
                f"{name} has shape {list(tensor.shape)} (accepted: (batch, heads, n, d) or (heads, n, d))"
            )
        if tensor.dtype not in FLOAT_DTYPES:
            raise _fail(f"{name} has dtype {dtype_name(tensor.dtype)} (accepted: float32, float64)")
    if not q.dtype == k.dtype == v.dtype:
        raise _fail(
            f"q, k, v have dtypes {dtype_name(q.dtype)}, {dtype_name(k.dtype)}, {dtype_name(v.dtype)} "
            "(accepted: one dtype)"
        )
    n_q, d = q.shape[-2], q.shape[-1]
    n_k, d_v = v.shape[-2], v.shape[-1]
    if k.shape[-2:] != (n_k, d):
        raise _fail(
            f"q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} are not (..., n_q, d), "
            "(..., n_k, d), (..., n_k, d_v)"
        )
    lead = broadcast_batch((q.shape[:-2], k.shape[:-2], v.shape[:-2]))
    if lead is None:
        raise _fail(
            f"the leading (batch, head) axes of q {list(q.shape)}, k {list(k.shape)}, v {list(v.shape)} "
            "do not broadcast to one batch shape (accepted: leading axes that agree or have extent 1, "
            "as torch SDPA broadcasts)"
        )
    if mask is not None:
        if mask.dtype != torch.bool:
            raise GuardTypeError(
                f"{_OP}: mask has dtype {dtype_name(mask.dtype)} (accepted: bool, True = allowed; an "
                "additive bias is a separate operation)"
            )
        target = (*lead, n_q, n_k)
        shape = tuple(mask.shape)
        fits = len(shape) <= len(target) and all(
            s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False)
        )
        if not fits:
            raise _fail(f"mask of shape {list(shape)} does not broadcast to {list(target)}")
    if scale is not None and not is_finite_real(scale):
        raise _fail(f"scale={shown_value(scale)} (accepted: a finite number)")
    return AttentionDims(
        lead, math.prod(lead), n_q, n_k, d, d_v, tuple(q.shape), tuple(k.shape), tuple(v.shape)
    )


@dataclass(frozen=True, slots=True)
class ComposedAttentionSaved:
    """What the backward needs: the tape of the folded ``(batch * heads, n, d)`` operands
    (:class:`~torchlean.backend.providers.masked_attention.AttentionTape`, mask ``(1 | folded,
    n_q, n_k)``) and the logical dimensions."""

    tape: AttentionTape
    dims: AttentionDims


def _fold_mask(mask: Tensor | None, dims: AttentionDims) -> Tensor | None:
    if mask is None:
        return None
    if math.prod(mask.shape[:-2]) == 1:
        return torch.broadcast_to(mask, (*([1] * max(mask.dim() - 2, 0)), dims.n_q, dims.n_k)).reshape(
            1, dims.n_q, dims.n_k
        )
    return torch.broadcast_to(mask, (*dims.lead, dims.n_q, dims.n_k)).reshape(dims.folded, dims.n_q, dims.n_k)


def composed_attention_forward(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, scale: float | None = None
) -> tuple[Tensor, ComposedAttentionSaved]:
    """``bmm(hard_masked_softmax(bmm(q, k^T) * scale), v)``; returns the output
    ``(*batch, n_q, d_v)`` (``batch`` the broadcast of the leading axes; each operand is
    materialised to it, contiguous, before the matmuls) and what the backward needs. The
    arithmetic and the masking rules are those of
    :func:`~torchlean.backend.providers.masked_attention.attention_forward`; its matmuls run in
    IEEE float32 (TF32 off: :func:`~torchlean.backend.providers.native_cuda.float32.ieee_float32`).

    Raises:
        NativeExtensionError: outside host emulation, when CUDA is not usable here (checked first).
        GuardError: from :func:`check_composed_attention` or :func:`check_cuda_layout`.
    """
    if extension.expected_device_type() == "cuda":
        extension.require_cuda()
    dims = check_composed_attention(q, k, v, mask, scale=scale)
    check_cuda_layout(q, k, v, mask)
    q3 = expand_to_batch(q, dims.lead).reshape(dims.folded, dims.n_q, dims.d)
    k3 = expand_to_batch(k, dims.lead).reshape(dims.folded, dims.n_k, dims.d)
    v3 = expand_to_batch(v, dims.lead).reshape(dims.folded, dims.n_k, dims.d_v)
    with ieee_float32():  # the capsule's float32 claims are IEEE, whatever TF32 the process set
        out, tape = attention_forward(q3, k3, v3, _fold_mask(mask, dims), default_scale(dims.d, scale))
    return out.reshape(*dims.lead, dims.n_q, dims.d_v), ComposedAttentionSaved(tape, dims)


def composed_attention_backward(
    g: Tensor, saved: ComposedAttentionSaved
) -> tuple[Tensor, Tensor, Tensor, None]:
    """``(dq, dk, dv, None)`` from the saved probabilities P
    (:func:`~torchlean.backend.providers.masked_attention.attention_backward`: ``dV = P^T g``,
    ``dP = g V^T``, ``dS = P (dP - rowsum(P dP)) * scale`` at allowed entries, exactly 0
    elsewhere, ``dQ = dS K``, ``dK = dS^T Q``), each summed back to its operand's shape over the
    broadcast leading axes. Rows with no allowed key take no cotangent (a non-finite g there is
    selected away).

    Raises:
        GuardError: g is not ``(*batch, n_q, d_v)`` in the forward's dtype, or not on its device or
            not contiguous.
    """
    dims, probs = saved.dims, saved.tape.probs
    want = (*dims.lead, dims.n_q, dims.d_v)
    if tuple(g.shape) != want or g.dtype != probs.dtype:
        raise _fail(
            f"g has shape {list(g.shape)} and dtype {dtype_name(g.dtype)} (accepted: {list(want)}, "
            f"{dtype_name(probs.dtype)})"
        )
    _require_layout({"g": g, "probs": probs})
    with ieee_float32():
        dq, dk, dv = attention_backward(g.reshape(dims.folded, dims.n_q, dims.d_v), saved.tape)
    with torch.no_grad():
        return (
            sum_to_shape(dq.reshape(*dims.lead, dims.n_q, dims.d), dims.q_shape),
            sum_to_shape(dk.reshape(*dims.lead, dims.n_k, dims.d), dims.k_shape),
            sum_to_shape(dv.reshape(*dims.lead, dims.n_k, dims.d_v), dims.v_shape),
            None,
        )


def composed_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, scale: float | None = None
) -> Tensor:
    """:func:`composed_attention_forward` in the reference convention (the output only)."""
    return composed_attention_forward(q, k, v, mask, scale=scale)[0]


def composed_attention_vjp(
    g: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    out: Tensor,
    scale: float | None = None,
) -> tuple[Tensor, Tensor, Tensor, None]:
    """The VJP in the reference convention ``(g, q, k, v, mask, out, scale)``: recomputes the
    probabilities (as the LibTorch bridge's TorchLean backward does, anchor-runtime.md §6.3), then
    :func:`composed_attention_backward`. ``out`` is checked against the forward's shape."""
    result, saved = composed_attention_forward(q, k, v, mask, scale=scale)
    if out.shape != result.shape:
        raise _fail(f"out has shape {list(out.shape)} (accepted: {list(result.shape)})")
    return composed_attention_backward(g, saved)
