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
torch call, and only query rows that *attend* such a key are recomputed by torch on the raw
inputs (their result is legitimately non-finite).

The three guards are the evidence the ``libtorch`` capsules name; all are called on this path:
:func:`check_sdpa_inputs` (shape), :func:`check_libtorch_view` (layout) and
:func:`require_torchlean_tape` (VJP ownership; the eager dispatcher calls it before the forward).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

import numpy as np
import numpy.typing as npt

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.errors import GuardError
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.providers.linked import LinkedKernel
from torchlean.backend.vocabulary import BackendOp, Device, Provider, VJPMode

if TYPE_CHECKING:
    import torch

__all__ = [
    "LINKED_KERNELS",
    "check_libtorch_view",
    "check_sdpa_inputs",
    "default_scale",
    "require_torchlean_tape",
    "scaled_dot_product_attention",
]

Array = npt.NDArray[Any]

_INT64_MAX = 2**63 - 1
_FLOATS = (np.dtype(np.float32), np.dtype(np.float64))


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


def check_sdpa_inputs(
    q: Array, k: Array, v: Array, mask: Array | None, *, scale: float | None = None
) -> None:
    """Shape guard of ``libtorch.sdpa_forward``: Q ``(..., nQ, d)``, K ``(..., nK, d)``,
    V ``(..., nK, dv)`` with equal leading (batch/head) axes and one float dtype (float32 or
    float64); the optional mask is boolean and broadcasts to ``(..., nQ, nK)``; the scale, when
    given, is finite; every element count fits int64.

    Raises:
        GuardError: naming the offending operand and the accepted form.
    """
    for name, x in (("Q", q), ("K", k), ("V", v)):
        if not isinstance(x, np.ndarray) or x.ndim < 2:
            raise GuardError(
                f"LibTorch SDPA: {name} must be an array of rank >= 2 (..., n, d); got {_describe(x)}"
            )
        if x.dtype not in _FLOATS:
            raise GuardError(f"LibTorch SDPA: {name} dtype {x.dtype} is not float32 or float64")
        _elements(name, x.shape)
    if not (q.dtype == k.dtype == v.dtype):
        raise GuardError(f"LibTorch SDPA: Q, K, V dtypes differ ({q.dtype}, {k.dtype}, {v.dtype})")
    if not (q.shape[:-2] == k.shape[:-2] == v.shape[:-2]):
        raise GuardError(
            f"LibTorch SDPA: Q, K, V leading axes differ ({q.shape[:-2]}, {k.shape[:-2]}, {v.shape[:-2]})"
        )
    if q.shape[-1] != k.shape[-1]:
        raise GuardError(f"LibTorch SDPA: Q feature width {q.shape[-1]} differs from K's {k.shape[-1]}")
    if k.shape[-2] != v.shape[-2]:
        raise GuardError(f"LibTorch SDPA: K has {k.shape[-2]} keys but V has {v.shape[-2]}")
    if mask is not None:
        if not isinstance(mask, np.ndarray) or mask.dtype != np.bool_:
            raise GuardError(
                f"LibTorch SDPA: the mask must be a boolean array (True = attend); got {_describe(mask)} "
                "(a float 0/1 array is an additive bias, not a mask)"
            )
        target = (*q.shape[:-1], k.shape[-2])
        try:
            broadcast = np.broadcast_shapes(mask.shape, target)
        except ValueError:
            broadcast = None
        if broadcast != target:
            raise GuardError(f"LibTorch SDPA: mask shape {mask.shape} does not broadcast to {target}")
        _elements("mask", target)
    if scale is not None and not math.isfinite(scale):
        raise GuardError(f"LibTorch SDPA: scale must be finite; got {scale}")


def _describe(x: object) -> str:
    if isinstance(x, np.ndarray):
        return f"array of shape {x.shape} and dtype {x.dtype}"
    return type(x).__name__


def check_libtorch_view(arrays: Sequence[Array], device: str = "cpu") -> list[torch.Tensor]:
    """Layout guard: wrap C-contiguous, aligned, native-byte-order arrays as torch tensors.

    On ``cpu`` the tensors are zero-copy views of the numpy storage (``torch.from_numpy``); on
    ``cuda`` they are copies on the device. Results are never autograd tensors.

    Raises:
        GuardError: an array that is not C-contiguous, not aligned, or not in native byte order.
    """
    import torch

    views: list[torch.Tensor] = []
    for i, arr in enumerate(arrays):
        if not (arr.flags.c_contiguous and arr.flags.aligned and arr.dtype.isnative):
            raise GuardError(
                f"LibTorch SDPA: operand {i} is not a C-contiguous, aligned, native-byte-order array "
                f"(contiguous={arr.flags.c_contiguous}, aligned={arr.flags.aligned}, "
                f"native={arr.dtype.isnative})"
            )
        view = torch.from_numpy(arr if arr.flags.writeable else arr.copy())
        views.append(view if device == "cpu" else view.to(device))
    return views


def require_torchlean_tape(capsule: KernelCapsule, policy: KernelPolicy) -> None:
    """VJP guard: the bridge's backward belongs to TorchLean's tape.

    Refuses when the capsule does not declare ``torchlean-tape`` or when the session requests
    ``backend-vjp`` (LibTorch autograd never owns this backward).

    Raises:
        GuardError: naming the capsule and the requested/declared VJP modes.
    """
    if capsule.vjp_mode is not VJPMode.TORCHLEAN_TAPE:
        raise GuardError(
            f"capsule `{capsule.name}` declares VJP mode {capsule.vjp_mode.label}; the LibTorch SDPA "
            f"bridge needs {VJPMode.TORCHLEAN_TAPE.label}"
        )
    if policy.vjp_mode is VJPMode.BACKEND_VJP:
        raise GuardError(
            f"capsule `{capsule.name}`: backend profile requires vjpMode=torchLeanTape, but the session "
            f"requests {VJPMode.BACKEND_VJP.label}"
        )


def _finite_rows(x: Array) -> Array:
    """``(..., n)`` boolean: whether row ``j`` of ``x`` (``(..., n, d)``) is all finite."""
    rows: Array = np.logical_and.reduce(np.isfinite(x), axis=-1)
    return rows


def _torch_sdpa(q: Array, k: Array, v: Array, mask: Array | None, scale: float, device: str) -> Array:
    import torch

    views = check_libtorch_view([q, k, v] if mask is None else [q, k, v, mask], device)
    with torch.no_grad():
        out = torch.nn.functional.scaled_dot_product_attention(
            views[0],
            views[1],
            views[2],
            attn_mask=None if mask is None else views[3],
            dropout_p=0.0,
            is_causal=False,
            scale=scale,
        )
    host: Array = out.detach().cpu().numpy()
    return np.ascontiguousarray(host, dtype=q.dtype)


def scaled_dot_product_attention(
    q: Array,
    k: Array,
    v: Array,
    mask: Array | None = None,
    *,
    scale: float | None = None,
    device: str = "cpu",
) -> Array:
    """Attention output ``(..., nQ, dv)`` computed by torch SDPA with TorchLean mask semantics.

    Args:
        q, k, v: ``(..., nQ, d)``, ``(..., nK, d)``, ``(..., nK, dv)``; float32 or float64.
        mask: optional boolean, broadcastable to ``(..., nQ, nK)``; True = attend.
        scale: score scale; default ``1/sqrt(d)`` (1 when ``d == 0``).
        device: ``"cpu"`` or ``"cuda"`` (where torch runs; the result is a host array).

    Raises:
        GuardError: from :func:`check_sdpa_inputs` or :func:`check_libtorch_view`.
    """
    check_sdpa_inputs(q, k, v, mask, scale=scale)
    s = default_scale(q.shape[-1]) if scale is None else float(scale)
    if mask is None:
        return _torch_sdpa(q, k, v, None, s, device)
    full_mask = np.ascontiguousarray(np.broadcast_to(mask, (*q.shape[:-1], k.shape[-2])))
    finite_keys = _finite_rows(k) & _finite_rows(v)  # (..., nK)
    if np.logical_and.reduce(finite_keys, axis=None):
        out = _torch_sdpa(q, k, v, full_mask, s, device)
    else:
        clean = finite_keys[..., None]
        out = _torch_sdpa(
            q,
            np.ascontiguousarray(np.where(clean, k, k.dtype.type(0))),
            np.ascontiguousarray(np.where(clean, v, v.dtype.type(0))),
            full_mask,
            s,
            device,
        )
        tainted = np.logical_or.reduce(full_mask & ~finite_keys[..., None, :], axis=-1)  # (..., nQ)
        if np.logical_or.reduce(tainted, axis=None):
            raw = _torch_sdpa(q, k, v, full_mask, s, device)
            out = np.where(tainted[..., None], raw, out)
    blocked_rows = ~np.logical_or.reduce(full_mask, axis=-1)  # (..., nQ)
    return np.ascontiguousarray(np.where(blocked_rows[..., None], out.dtype.type(0), out))


def _operands(inputs: tuple[Array | None, ...]) -> tuple[Array, Array, Array, Array | None]:
    """``(q, k, v, mask)`` from the dispatcher's input positions (mask optional)."""
    q, k, v = inputs[0], inputs[1], inputs[2]
    if q is None or k is None or v is None:
        raise GuardError("LibTorch SDPA: Q, K and V are required")
    return q, k, v, inputs[3] if len(inputs) > 3 else None


def _linked(device: Device) -> LinkedKernel:
    def forward(capsule: KernelCapsule, inputs: tuple[Array | None, ...], params: Mapping[str, Any]) -> Array:
        q, k, v, mask = _operands(inputs)
        return scaled_dot_product_attention(q, k, v, mask, scale=params.get("scale"), device=device.label)

    def vjp(
        capsule: KernelCapsule,
        g: Array,
        inputs: tuple[Array | None, ...],
        out: Array,
        params: Mapping[str, Any],
    ) -> Sequence[Array | None]:
        from torchlean.backend.providers.reference import kernels

        q, k, v, mask = _operands(inputs)
        return kernels.scaled_dot_product_attention_vjp(g, q, k, v, mask, out=out, scale=params.get("scale"))

    return LinkedKernel(
        name=f"LibTorch {device.label.upper()} SDPA bridge",
        op=BackendOp.SCALED_DOT_PRODUCT_ATTENTION,
        provider=Provider.LIBTORCH,
        device=device,
        forward=forward,
        vjp=vjp,
        vjp_guard=require_torchlean_tape,
    )


LINKED_KERNELS: tuple[LinkedKernel, ...] = (_linked(Device.CPU), _linked(Device.CUDA))
"""The bridge linked for ``cpu`` and for ``cuda`` (torch runs on the device; storage is host)."""
