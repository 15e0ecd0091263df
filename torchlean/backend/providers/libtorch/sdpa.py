"""The LibTorch SDPA forward bridge (``libtorch.sdpa_forward``) and its guards.

Source: anchor-runtime.md §6.3; the seed chapter ("Forward And Backward Ownership"); DESIGN.md §1.7
and §1.8 (a CPU variant). The forward value is computed by
``torch.nn.functional.scaled_dot_product_attention`` under ``torch.no_grad()`` with a **boolean**
mask (True = the key may be attended), dropout 0, ``is_causal=False`` and an explicit scale
(``1/sqrt(d)``, or 1 when ``d == 0``). Torch's autograd never records it: the eager session
records a TorchLean tape node that keeps Q, K, V and the mask, and the backward is TorchLean's own
rule, the reference attention VJP, which recomputes the probabilities from those saved inputs
(:func:`torchlean.backend.providers.reference.kernels.scaled_dot_product_attention_vjp`). Scale
and mask convention are the ones the forward ran with.

Mask semantics are TorchLean's (DESIGN.md §1.9): a fully blocked query row is forced to a zero
output (whatever torch returns there), and a NaN or infinity in a key or value row that a query
does not attend never reaches that query's output: non-finite key/value rows are zeroed before the
torch call, and only query rows that *attend* such a key are recomputed by torch, each on the keys
and values it attends as they are and the ones it blocks zeroed (its result is legitimately
non-finite).

The three guards are the evidence the ``libtorch`` capsules name; all are called on this path:
:func:`check_sdpa_inputs` (shape), :func:`check_libtorch_view` (layout) and
:func:`require_torchlean_tape` (VJP ownership; the eager dispatcher calls it before the forward).

Storage: the CPU bridge receives numpy arrays (wrapped zero-copy for torch); the CUDA bridge
receives the CUDA tensors' own torch storage (used in place, the ``from_blob`` view of
anchor-runtime.md §6.3) and returns a fresh contiguous CUDA tensor. The CUDA bridge's TorchLean
backward is the composed attention VJP on the device
(:func:`torchlean.backend.providers.attention_kernels.composed_attention_vjp`: it recomputes the
probabilities from the saved Q, K, V and mask and applies the hard-masked softmax and matmul VJPs,
"the same composed path as ``torchlean.composed_attention``", anchor-runtime.md §6.3).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.providers.linked import Array as Storage
from torchlean.backend.providers.linked import LinkedKernel, import_torch
from torchlean.backend.providers.reference.guards import check_scaled_dot_product_attention
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode

if TYPE_CHECKING:
    import torch

__all__ = [
    "LINKED_KERNELS",
    "check_libtorch_view",
    "check_sdpa_inputs",
    "default_scale",
    "device_attention",
    "device_attention_vjp",
    "require_torchlean_tape",
    "scaled_dot_product_attention",
]

Array = npt.NDArray[Any]
if TYPE_CHECKING:
    Buffer = npt.NDArray[Any] | torch.Tensor
    """An operand: a numpy array (CPU bridge) or a torch tensor on the device (CUDA bridge)."""
else:
    Buffer = Any

_INT64_MAX = 2**63 - 1
_FLOAT_NAMES = ("float32", "float64")


def default_scale(d: int) -> float:
    """``1/sqrt(d)``, and 1 when ``d == 0`` (anchor-runtime.md §5.1 ``attentionScaleDenom``)."""
    return 1.0 / math.sqrt(d) if d > 0 else 1.0


def _elements(name: str, shape: Sequence[int]) -> int:
    count = 1
    for extent in shape:
        count *= int(extent)
    if count > _INT64_MAX:
        raise GuardError(
            f"LibTorch SDPA: {name} element count {count} overflows int64 (shape {tuple(shape)})"
        )
    return count


def _is_buffer(x: object) -> bool:
    if isinstance(x, np.ndarray):
        return True
    import torch

    return isinstance(x, torch.Tensor)


def _shape(x: Buffer) -> tuple[int, ...]:
    return tuple(int(e) for e in x.shape)


def _dtype_name(x: Buffer) -> str:
    return str(x.dtype).removeprefix("torch.")


def check_sdpa_inputs(
    q: Buffer, k: Buffer, v: Buffer, mask: Buffer | None, *, scale: float | None = None
) -> tuple[int, ...]:
    """Shape guard of ``libtorch.sdpa_forward``: Q ``(..., nQ, d)``, K ``(..., nK, d)``,
    V ``(..., nK, dv)`` of one float dtype (float32 or float64) whose leading (batch/head) axes
    broadcast to one batch shape (numpy/PyTorch rules, as ``reference.attention`` and
    ``torch.nn.functional.scaled_dot_product_attention`` accept); the optional mask is boolean and
    broadcasts to ``(*batch, nQ, nK)``; the scale, when given, is finite; every element count,
    of the operands broadcast to the batch shape included, fits int64. Operands are numpy arrays
    (CPU bridge) or torch tensors (CUDA bridge). Returns the batch shape.

    Numpy operands (the CPU bridge) are checked by ``reference.attention``'s guard
    (:func:`~torchlean.backend.providers.reference.guards.check_scaled_dot_product_attention`), so
    a call refused under ``checked_cpu`` is refused here in the same words; torch tensors (the
    CUDA bridge) by the bridge's own checks. Then, for both, the element counts of what the bridge
    materialises.

    Raises:
        GuardError: naming the offending operand and the accepted form; a mask that is not a
            boolean array raises its subclass ``GuardTypeError`` (also a ``TypeError``).
    """
    if all(x is None or isinstance(x, np.ndarray) for x in (q, k, v, mask)):
        check_scaled_dot_product_attention(q, k, v, mask, scale=scale)
    else:
        _check_tensor_operands(q, k, v, mask, scale)
    qs, ks, vs = _shape(q), _shape(k), _shape(v)
    batch = tuple(int(e) for e in np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2]))
    for name, shape in (("Q", qs), ("K", ks), ("V", vs)):  # what the bridge materialises
        _elements(f"{name} broadcast to the batch shape", (*batch, *shape[-2:]))
    _elements("output", (*batch, qs[-2], vs[-1]))
    if mask is not None:
        _elements("mask", (*batch, qs[-2], ks[-2]))
    return batch


def _check_tensor_operands(q: Buffer, k: Buffer, v: Buffer, mask: Buffer | None, scale: float | None) -> None:
    """The checks of :func:`check_sdpa_inputs` for torch tensors (the CUDA bridge), which
    ``reference.attention``'s numpy guard cannot take, in the bridge's own words."""
    for name, x in (("Q", q), ("K", k), ("V", v)):
        if not _is_buffer(x) or x.ndim < 2:
            raise GuardError(
                f"LibTorch SDPA: {name} must be an array of rank >= 2 (..., n, d); got {_describe(x)}"
            )
        if _dtype_name(x) not in _FLOAT_NAMES:
            raise GuardError(f"LibTorch SDPA: {name} dtype {_dtype_name(x)} is not float32 or float64")
        _elements(name, _shape(x))
    dtypes = (_dtype_name(q), _dtype_name(k), _dtype_name(v))
    if len(set(dtypes)) != 1:
        raise GuardError(f"LibTorch SDPA: Q, K, V dtypes differ ({', '.join(dtypes)})")
    qs, ks, vs = _shape(q), _shape(k), _shape(v)
    try:
        batch = tuple(int(e) for e in np.broadcast_shapes(qs[:-2], ks[:-2], vs[:-2]))
    except ValueError:
        raise GuardError(
            f"LibTorch SDPA: Q, K, V leading axes {qs[:-2]}, {ks[:-2]}, {vs[:-2]} do not broadcast to "
            "one batch shape (accepted: leading axes that agree or have extent 1, numpy/PyTorch "
            "broadcasting)"
        ) from None
    if qs[-1] != ks[-1]:
        raise GuardError(f"LibTorch SDPA: Q feature width {qs[-1]} differs from K's {ks[-1]}")
    if ks[-2] != vs[-2]:
        raise GuardError(f"LibTorch SDPA: K has {ks[-2]} keys but V has {vs[-2]}")
    if mask is not None:
        if not _is_buffer(mask) or _dtype_name(mask) != "bool":
            floating = _is_buffer(mask) and "float" in _dtype_name(mask)
            raise GuardTypeError(
                f"LibTorch SDPA: the mask must be a boolean array (True = attend); got {_describe(mask)}"
                + (" (a float array is an additive bias, not a mask: convert torch's additive mask, 0 = "
                   "attend and -inf = blocked, with mask == 0, and a 0/1 keep-mask with mask == 1)"
                   if floating else "")
            )
        target = (*batch, qs[-2], ks[-2])
        try:
            broadcast = np.broadcast_shapes(_shape(mask), target)
        except ValueError:
            broadcast = None
        if broadcast != target:
            raise GuardError(f"LibTorch SDPA: mask shape {_shape(mask)} does not broadcast to {target}")
    if scale is not None and not math.isfinite(scale):
        raise GuardError(f"LibTorch SDPA: scale must be finite; got {scale}")


def _expand(x: Array, batch: tuple[int, ...]) -> Array:
    """``x`` ``(..., n, d)`` materialised (C-contiguous) to ``(*batch, n, d)``; unchanged when it
    already has that shape."""
    target = (*batch, *x.shape[-2:])
    if x.shape == target:
        return x
    return np.ascontiguousarray(np.broadcast_to(x, target))


def _expand_device(x: torch.Tensor, batch: tuple[int, ...]) -> torch.Tensor:
    """:func:`_expand` for a torch tensor (a contiguous copy on its device)."""
    import torch

    target = (*batch, *x.shape[-2:])
    if tuple(x.shape) == target:
        return x
    return torch.broadcast_to(x, target).contiguous()


def _sum_to_device(grad: torch.Tensor, shape: tuple[int, ...]) -> torch.Tensor:
    """``grad`` (a broadcast result) summed back to ``shape``: over the extra leading axes and
    over every axis where ``shape`` has extent 1 and ``grad`` does not."""
    extra = grad.dim() - len(shape)
    if extra:
        grad = grad.sum(dim=tuple(range(extra)))
    axes = tuple(i for i, n in enumerate(shape) if n == 1 and grad.shape[i] != 1)
    if axes:
        grad = grad.sum(dim=axes, keepdim=True)
    return grad.contiguous()


def _describe(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    if _is_buffer(x):
        t: Any = x
        return f"tensor of shape {_shape(t)} and dtype {_dtype_name(t)} on {t.device}"
    return type(x).__name__


def check_libtorch_view(arrays: Sequence[Buffer], device: str = "cpu") -> list[torch.Tensor]:
    """Layout guard: wrap C-contiguous, aligned, native-byte-order arrays as torch tensors.

    numpy arrays: on ``cpu`` the tensors are zero-copy views of the numpy storage
    (``torch.from_numpy``); on ``cuda`` they are copies on the device. torch tensors (the storage
    of CUDA tensors) are used as they are, and must be contiguous, on one device of kind
    ``device`` and not autograd tensors. Results are never autograd tensors.

    Raises:
        GuardError: an array that is not C-contiguous, not aligned, or not in native byte order; a
            tensor that is not contiguous, on another device, or requires grad; numpy arrays and
            tensors mixed.
    """
    import torch

    tensors = [a for a in arrays if isinstance(a, torch.Tensor)]
    if tensors:
        return _check_device_views(arrays, device)
    views: list[torch.Tensor] = []
    for i, arr in enumerate(arrays):
        assert isinstance(arr, np.ndarray)
        if not (arr.flags.c_contiguous and arr.flags.aligned and arr.dtype.isnative):
            raise GuardError(
                f"LibTorch SDPA: operand {i} is not a C-contiguous, aligned, native-byte-order array "
                f"(contiguous={arr.flags.c_contiguous}, aligned={arr.flags.aligned}, "
                f"native={arr.dtype.isnative})"
            )
        view = torch.from_numpy(arr if arr.flags.writeable else arr.copy())
        views.append(view if device == "cpu" else view.to(device))
    return views


def _check_device_views(arrays: Sequence[Buffer], device: str) -> list[torch.Tensor]:
    import torch

    views: list[torch.Tensor] = []
    for i, arr in enumerate(arrays):
        if not isinstance(arr, torch.Tensor):
            raise GuardError(
                f"LibTorch SDPA: operand {i} is a {type(arr).__name__} among torch tensors "
                "(accepted: one kind of storage per call)"
            )
        views.append(arr)
    for i, arr in enumerate(views):
        if arr.device.type != device or arr.device != views[0].device:
            raise GuardError(
                f"LibTorch SDPA: operand {i} is on {arr.device} (accepted: the {device} device of "
                f"operand 0, {views[0].device})"
            )
        if not arr.is_contiguous() or arr.requires_grad:
            raise GuardError(
                f"LibTorch SDPA: operand {i} is not a contiguous, non-autograd tensor "
                f"(contiguous={arr.is_contiguous()}, requires_grad={arr.requires_grad})"
            )
    return views


def require_torchlean_tape(capsule: KernelCapsule, policy: KernelPolicy) -> None:
    """VJP guard: the bridge's backward belongs to TorchLean's tape.

    Refuses when the capsule does not declare ``torchlean-tape`` or when the session requests
    ``backend-vjp`` (LibTorch autograd never owns this backward). A forward-only copy of the
    bridge (VJP mode ``none``, which the claims rule allows) passes in an inference session (policy
    VJP mode ``none``), where no backward is owed; it is refused in any other (review121 F1: it was
    planned, accepted and then refused at every call, even under ``no_grad``).

    Raises:
        GuardError: naming the capsule and the requested/declared VJP modes.
    """
    forward_only = capsule.vjp_mode is VJPMode.NONE and policy.vjp_mode is VJPMode.NONE
    if capsule.vjp_mode is not VJPMode.TORCHLEAN_TAPE and not forward_only:
        raise GuardError(
            f"capsule `{capsule.name}` declares VJP mode {capsule.vjp_mode.label}; the LibTorch SDPA "
            f"bridge needs {VJPMode.TORCHLEAN_TAPE.label}"
        )
    if policy.vjp_mode is VJPMode.BACKEND_VJP:
        raise GuardError(
            f"capsule `{capsule.name}`: backend profile requires vjpMode=torchLeanTape, but the session "
            f"requests {VJPMode.BACKEND_VJP.label}"
        )


_REPAIR_CHUNK = 1 << 22
"""The most elements of one per-row key (or value) block the tainted-row recomputation builds
at once (16 MiB in float32): its rows are processed in chunks of at most this many."""


def _torch_sdpa(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float
) -> torch.Tensor:
    """``torch.nn.functional.scaled_dot_product_attention`` under ``no_grad`` with a boolean
    ``mask``, dropout 0, ``is_causal=False`` and the explicit ``scale`` (the bridge's one torch
    call)."""
    import torch

    with torch.no_grad():
        return torch.nn.functional.scaled_dot_product_attention(
            q, k, v, attn_mask=mask, dropout_p=0.0, is_causal=False, scale=scale
        )


def _recompute_tainted(
    out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    full_mask: torch.Tensor,
    tainted: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """``out`` with every ``tainted`` query row (one that attends a non-finite key or value row,
    or whose scores may overflow) recomputed by torch ops with the reference's semantics: scores
    ``(q k^T) * scale``, the blocked ones *selected away* (never added to), softmax over the
    allowed ones (NaN when they are all -inf, as ``torch.softmax`` and ``reference.attention``
    give; torch SDPA would give 0, masked or not), weights times the allowed value rows. So a non-finite or
    overflowing *blocked* score cannot turn the row into ``inf + (-inf) = NaN``. Rows go in
    chunks of at most :data:`_REPAIR_CHUNK` key (or value) elements.

    Shapes: q ``(*batch, nQ, d)``, k ``(*batch, nK, d)``, v ``(*batch, nK, dv)``, full_mask
    ``(*batch, nQ, nK)``, tainted ``(*batch, nQ)`` (rows attending at least one key), out
    ``(*batch, nQ, dv)`` (a fresh tensor is returned).
    """
    import torch

    n_q, n_k = q.shape[-2], k.shape[-2]
    batch = math.prod(q.shape[:-2])  # explicit: a -1 cannot be inferred when d or dv is 0
    flat_q = q.reshape(batch, n_q, q.shape[-1])
    flat_k = k.reshape(batch, n_k, k.shape[-1])
    flat_v = v.reshape(batch, n_k, v.shape[-1])
    flat_mask = full_mask.reshape(batch, n_q, n_k)
    repaired = out.reshape(batch, n_q, out.shape[-1]).clone()
    rows = torch.nonzero(tainted.reshape(-1)).reshape(-1)
    chunk = max(1, _REPAIR_CHUNK // max(1, n_k * max(k.shape[-1], v.shape[-1])))
    zero = torch.zeros((), dtype=q.dtype, device=q.device)
    for start in range(0, int(rows.shape[0]), chunk):
        row = rows[start : start + chunk]
        b, i = row // n_q, row % n_q
        attend = flat_mask[b, i].unsqueeze(-2)  # (T, 1, nK)
        values = torch.where(attend.transpose(-1, -2), flat_v[b], zero)  # blocked rows selected away
        rows_out = _explicit_attention(flat_q[b, i].unsqueeze(-2), flat_k[b], values, attend, scale)
        repaired[b, i] = rows_out.squeeze(-2)
    return repaired.reshape(out.shape)


def _explicit_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, allowed: torch.Tensor, scale: float
) -> torch.Tensor:
    """The reference's attention by torch ops: scores ``(q k^T) * scale``, the blocked ones
    selected away (never added to), softmax over the allowed ones (NaN when they are all -inf),
    times ``v``, whose rows at blocked keys must be finite (their weight is exactly 0). Shapes:
    q ``(..., nQ, d)``, k ``(..., nK, d)`` with ``nK >= 1``, v ``(..., nK, dv)``, allowed
    broadcastable to ``(..., nQ, nK)``; returns ``(..., nQ, dv)``."""
    import torch

    zero = torch.zeros((), dtype=q.dtype, device=q.device)
    neg_inf = torch.full((), -math.inf, dtype=q.dtype, device=q.device)
    scores = torch.matmul(q, k.transpose(-1, -2)) * scale
    top = torch.where(allowed, scores, neg_inf).amax(dim=-1, keepdim=True)
    weights = torch.where(allowed, torch.exp(torch.where(allowed, scores, top) - top), zero)
    return torch.matmul(weights / weights.sum(dim=-1, keepdim=True), v)


def _recompute_risky(
    out: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    full_mask: torch.Tensor | None,
    risky: torch.Tensor,
    scale: float,
) -> torch.Tensor:
    """``out`` with the ``risky`` query rows taken from :func:`_explicit_attention`, computed in one
    batched pass over only the batch entries that hold such a row (a NaN or a huge value in one
    head does not recompute every head). Shapes: q ``(*batch, nQ, d)``, k ``(*batch, nK, d)``, v
    ``(*batch, nK, dv)`` with every key row attended finite, full_mask ``(*batch, nQ, nK)`` or
    None (every key allowed), risky ``(*batch, nQ)``, out ``(*batch, nQ, dv)``; returns a new
    tensor of out's shape."""
    import torch

    n_q, n_k = q.shape[-2], k.shape[-2]
    batch = math.prod(q.shape[:-2])  # explicit: a -1 cannot be inferred when d or dv is 0
    flat_risky = risky.reshape(batch, n_q)
    entries = torch.nonzero(flat_risky.any(dim=-1)).reshape(-1)
    if full_mask is None:
        allowed = torch.ones((1, 1), dtype=torch.bool, device=q.device)
    else:
        allowed = full_mask.reshape(batch, n_q, n_k)[entries]
    explicit = _explicit_attention(
        q.reshape(batch, n_q, q.shape[-1])[entries],
        k.reshape(batch, n_k, k.shape[-1])[entries],
        v.reshape(batch, n_k, v.shape[-1])[entries],
        allowed,
        scale,
    )
    repaired = out.reshape(batch, n_q, out.shape[-1]).clone()
    repaired[entries] = torch.where(flat_risky[entries].unsqueeze(-1), explicit, repaired[entries])
    return repaired.reshape(out.shape)


def _scores_may_overflow(q: torch.Tensor, k: torch.Tensor, scale: float) -> torch.Tensor | None:
    """``None`` when no score ``q k^T * scale`` can overflow — ``d * max|q| * max|k|`` and
    ``max(max|q|, max|k|)`` times ``max(|scale|, 1)`` below a quarter of the dtype's largest value,
    from one min/max pass over each tensor (ordinary inputs stop here) — else ``(*batch, nQ)``
    bool, True for the query rows whose scores (or the products torch may form on the way,
    ``q * sqrt(scale)``) might not be finite, by the float64 bound ``sum_t |q_t| max_j |k_jt|``
    times ``max(|scale|, 1)``; also True where ``q`` is not finite, for every row of a batch
    entry whose keys are not all finite (the bound is then NaN or infinite), and for every row
    when ``scale`` rounds to ±inf in the dtype (``1e39`` in float32: the reference's scores are
    then inf or NaN where torch, scaling q and k by ``sqrt(scale)``, may stay finite). Shapes: q
    ``(*batch, nQ, d)``, k ``(*batch, nK, d)``."""
    import torch

    if q.numel() == 0 or k.numel() == 0:  # no score, or every score is an empty sum (0)
        return None
    if not math.isfinite(float(torch.tensor(scale, dtype=q.dtype))):  # inf in the dtype: every row
        return torch.ones(q.shape[:-1], dtype=torch.bool, device=q.device)
    limit = torch.finfo(q.dtype).max / 4
    factor = max(abs(scale), 1.0)
    (q_low, q_high), (k_low, k_high) = torch.aminmax(q), torch.aminmax(k)
    q_top, k_top = max(-float(q_low), float(q_high)), max(-float(k_low), float(k_high))  # NaN: fails below
    if q_top * k_top * q.shape[-1] * factor < limit and max(q_top, k_top) * factor < limit:
        return None
    q_abs, k_abs = q.abs().to(torch.float64), k.abs().to(torch.float64)
    k_max = k_abs.amax(dim=-2, keepdim=True)  # (*batch, 1, d)
    bound = (q_abs * k_max).sum(dim=-1) * factor  # (*batch, nQ)
    largest = torch.maximum(q_abs.amax(dim=-1), k_max.amax(dim=-1)) * factor
    return ~((bound < limit) & (largest < limit))


def _masked_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor | None, scale: float
) -> torch.Tensor:
    """TorchLean mask semantics around torch SDPA, for contiguous tensors of one batch shape
    (both bridges): a fully blocked query row is zero (whatever torch returns there), a NaN or
    infinity in a key or value row reaches only the query rows that attend it, and a score that
    overflows at a blocked position never reaches the output. Non-finite key and value rows, and
    those of keys that no query of their batch entry attends, are zeroed for the one batched torch
    call (so a large finite value at a key blocked for every query neither sends rows through
    the recomputation nor changes a bit of the output). Rows whose scores may overflow
    (:func:`_scores_may_overflow`: one min/max pass, so ordinary inputs take only the torch call)
    are recomputed with the reference's semantics: in one batched pass when every key and value
    is finite or there is no mask (:func:`_explicit_attention`), else row by row together with
    the rows that attend a non-finite key or value (:func:`_recompute_tainted`). So the forward
    agrees with the reference (and with the bridge's backward, the reference rule) where torch
    SDPA, which scales q and k before their product, would overflow or not where the reference
    does not or does. Returns a fresh contiguous tensor."""
    import torch

    if mask is None:
        if k.shape[-2] == 0:  # no key: every row is fully blocked, zero (torch may give NaN for a NaN q)
            return torch.zeros((*q.shape[:-1], v.shape[-1]), dtype=q.dtype, device=q.device)
        out = _torch_sdpa(q, k, v, None, scale)
        risky = _scores_may_overflow(q, k, scale)
        if risky is not None and bool(risky.any()):  # every key allowed: the same batched pass
            out = _recompute_risky(out, q, k, v, None, risky, scale)
        return out.contiguous()
    zero = torch.zeros((), dtype=q.dtype, device=q.device)
    full_mask = torch.broadcast_to(mask, (*q.shape[:-1], k.shape[-2])).contiguous()
    finite_keys = torch.isfinite(k).all(dim=-1) & torch.isfinite(v).all(dim=-1)  # (..., nK)
    attended = full_mask.any(dim=-2)  # (..., nK): keys some query of the batch entry attends
    blocked_rows = ~full_mask.any(dim=-1)  # (..., nQ)
    if bool((finite_keys & attended).all()):
        out = _torch_sdpa(q, k, v, full_mask, scale)
        risky = _scores_may_overflow(q, k, scale)
        if risky is not None:
            risky = risky & ~blocked_rows
            if bool(risky.any()):  # finite keys and values: one batched pass, its rows taken where needed
                out = _recompute_risky(out, q, k, v, full_mask, risky, scale)
    else:  # a key no query attends is zeroed too: its values reach no output, nor the bound (review102 L5)
        clean = (finite_keys & attended).unsqueeze(-1)
        clean_k = torch.where(clean, k, zero).contiguous()
        clean_v = torch.where(clean, v, zero).contiguous()
        out = _torch_sdpa(q, clean_k, clean_v, full_mask, scale)
        tainted = (full_mask & ~finite_keys.unsqueeze(-2)).any(dim=-1)  # (..., nQ)
        risky = _scores_may_overflow(q, clean_k, scale)
        if risky is not None:
            tainted = tainted | (risky & ~blocked_rows)
        if bool(tainted.any()):
            out = _recompute_tainted(out, q, k, v, full_mask, tainted, scale)
    return torch.where(blocked_rows.unsqueeze(-1), zero, out).contiguous()


def scaled_dot_product_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Array | None = None,
    *,
    scale: float | None = None,
    device: str = "cpu",
) -> Array:
    """Attention output ``(*batch, nQ, dv)`` computed by torch SDPA with TorchLean mask semantics.

    Args:
        q, k, v: ``(..., nQ, d)``, ``(..., nK, d)``, ``(..., nK, dv)``; float32 or float64; the
            leading axes broadcast to ``batch`` and are materialised to it before torch runs.
        mask: optional boolean, broadcastable to ``(*batch, nQ, nK)``; True = attend.
        scale: score scale; default ``1/sqrt(d)`` (1 when ``d == 0``).
        device: ``"cpu"`` or ``"cuda"`` (where torch runs; the result is a host array).

    Raises:
        GuardError: from :func:`check_sdpa_inputs` or :func:`check_libtorch_view`.

    :func:`device_attention` is the same function on torch tensors already on a device.
    """
    batch = check_sdpa_inputs(q, k, v, mask, scale=scale)
    s = default_scale(q.shape[-1]) if scale is None else float(scale)
    arrays = [_expand(q, batch), _expand(k, batch), _expand(v, batch)]
    if mask is not None:
        arrays.append(np.ascontiguousarray(np.broadcast_to(mask, (*batch, q.shape[-2], k.shape[-2]))))
    views = check_libtorch_view(arrays, device)
    out = _masked_attention(views[0], views[1], views[2], views[3] if mask is not None else None, s)
    host: Array = out.cpu().numpy()
    return np.ascontiguousarray(host, dtype=q.dtype)


def device_attention(
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    scale: float | None = None,
) -> torch.Tensor:
    """:func:`scaled_dot_product_attention` on torch tensors that stay on their device (the CUDA
    bridge): same shapes, guards and TorchLean mask semantics (fully blocked rows are zero; a
    non-finite key/value row reaches only the queries that attend it). Returns a fresh contiguous
    tensor on the inputs' device.

    Raises:
        GuardError: from :func:`check_sdpa_inputs` or :func:`check_libtorch_view`.
    """
    batch = check_sdpa_inputs(q, k, v, mask, scale=scale)
    s = default_scale(q.shape[-1]) if scale is None else float(scale)
    q, k, v = _expand_device(q, batch), _expand_device(k, batch), _expand_device(v, batch)
    views = check_libtorch_view([q, k, v] if mask is None else [q, k, v, mask], q.device.type)
    return _masked_attention(views[0], views[1], views[2], views[3] if mask is not None else None, s)


def device_attention_vjp(
    g: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None = None,
    *,
    out: torch.Tensor,
    scale: float | None = None,
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, None]:
    """TorchLean's backward of the CUDA bridge: the composed attention VJP on the device
    (:func:`~torchlean.backend.providers.attention_kernels.composed_attention_vjp`), which
    recomputes the probabilities from the saved inputs with the forward's scale and mask. Q, K, V
    are broadcast to their common batch shape first (as the forward did), and each gradient is
    summed back to its input's shape; leading axes other than ``(heads,)`` or ``(batch, heads)`` are
    folded into one and unfolded again.

    Raises:
        GuardError: from the composed attention guards.
    """
    from torchlean.backend.providers import attention_kernels

    shapes = (tuple(q.shape), tuple(k.shape), tuple(v.shape))
    lead = tuple(int(e) for e in np.broadcast_shapes(shapes[0][:-2], shapes[1][:-2], shapes[2][:-2]))
    q, k, v = _expand_device(q, lead), _expand_device(k, lead), _expand_device(v, lead)
    if len(lead) in (1, 2):
        dq, dk, dv, _ = attention_kernels.composed_attention_vjp(g, q, k, v, mask, out=out, scale=scale)
    else:
        dq, dk, dv = _folded_vjp(g, q, k, v, mask, out, scale, lead)
    return (
        _sum_to_device(dq, shapes[0]),
        _sum_to_device(dk, shapes[1]),
        _sum_to_device(dv, shapes[2]),
        None,
    )


def _folded_vjp(
    g: torch.Tensor,
    q: torch.Tensor,
    k: torch.Tensor,
    v: torch.Tensor,
    mask: torch.Tensor | None,
    out: torch.Tensor,
    scale: float | None,
    lead: tuple[int, ...],
) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    """The composed VJP for operands of one batch shape ``lead`` other than ``(heads,)`` or
    ``(batch, heads)``: the leading axes are folded into one and unfolded again."""
    from torchlean.backend.providers import attention_kernels

    folded = math.prod(lead)

    def fold(t: torch.Tensor) -> torch.Tensor:
        return t.reshape(folded, *t.shape[-2:])

    folded_mask = mask
    if mask is not None and mask.dim() > 2:
        if math.prod(mask.shape[:-2]) == 1:
            folded_mask = mask.reshape(mask.shape[-2:])
        else:
            import torch

            folded_mask = fold(torch.broadcast_to(mask, (*lead, q.shape[-2], k.shape[-2])))
    dq, dk, dv, _ = attention_kernels.composed_attention_vjp(
        fold(g), fold(q), fold(k), fold(v), folded_mask, out=fold(out), scale=scale
    )
    return dq.reshape(q.shape), dk.reshape(k.shape), dv.reshape(v.shape)


def _operands(inputs: tuple[Any, ...]) -> tuple[Any, Any, Any, Any]:
    """``(q, k, v, mask)`` from the dispatcher's input positions (mask optional)."""
    q, k, v = inputs[0], inputs[1], inputs[2]
    if q is None or k is None or v is None:
        raise GuardError("LibTorch SDPA: Q, K and V are required")
    return q, k, v, inputs[3] if len(inputs) > 3 else None


def _linked(device: Device) -> LinkedKernel:
    """The bridge for ``device``: numpy storage on ``cpu``, the device's torch storage on ``cuda``."""

    def forward(
        capsule: KernelCapsule, inputs: tuple[Storage | None, ...], params: Mapping[str, Any]
    ) -> Storage:
        q, k, v, mask = _operands(inputs)
        if device is Device.CPU:
            return scaled_dot_product_attention(q, k, v, mask, scale=params.get("scale"))
        return device_attention(q, k, v, mask, scale=params.get("scale"))

    def vjp(
        capsule: KernelCapsule,
        g: Storage,
        inputs: tuple[Storage | None, ...],
        out: Storage,
        params: Mapping[str, Any],
    ) -> Sequence[Storage | None]:
        from torchlean.backend.providers.reference import kernels

        q, k, v, mask = _operands(inputs)
        scale = params.get("scale")
        if isinstance(g, np.ndarray) and isinstance(out, np.ndarray):
            return kernels.scaled_dot_product_attention_vjp(g, q, k, v, mask, out=out, scale=scale)
        if isinstance(g, np.ndarray) or isinstance(out, np.ndarray):
            raise GuardError("LibTorch SDPA: the cotangent and the output must be the same kind of storage")
        return device_attention_vjp(g, q, k, v, mask, out=out, scale=scale)

    return LinkedKernel(
        name=f"LibTorch {device.label.upper()} SDPA bridge",
        op=BackendOp.SCALED_DOT_PRODUCT_ATTENTION,
        provider=Provider.LIBTORCH,
        device=device,
        forward=forward,
        vjp=vjp,
        vjp_guard=require_torchlean_tape,
        prepare=import_torch,
    )


LINKED_KERNELS: tuple[LinkedKernel, ...] = (_linked(Device.CPU), _linked(Device.CUDA))
"""The bridge linked for ``cpu`` (numpy storage) and for ``cuda`` (CUDA torch storage)."""
