"""Linked kernels: the executable implementations a build actually contains.

A capsule is a *contract*; a :class:`LinkedKernel` is the code that can honour it: one forward
(and, for differentiable ops, one local VJP) for one ``(op, provider, device)``. The eager runtime
turns a linked kernel into a :class:`~torchlean.backend.binding.KernelHandler` for each call and
binds it to the accepted capsule (anchor-backend.md §7, ``executeSelected``); a handler whose
op, provider or device differs from the capsule's is refused by ``bind`` before any provider code
runs. Provider packages export their linked kernels as a module-level ``LINKED_KERNELS`` tuple
(``reference/handlers.py``, ``aten/handlers.py``, ``libtorch/sdpa.py``, ``native_cuda/handlers.py``,
``attention_handlers.py``).

Calling convention (shared with the reference kernels, brief "Reference kernel convention"):
``forward(capsule, inputs, params)`` receives one array (or ``None`` for an absent optional input)
per input position and the op's keyword parameters — an array is the input tensor's storage, a
numpy array for a ``cpu`` kernel and a contiguous torch tensor on the device for a ``cuda`` kernel
(:mod:`torchlean.autograd.storage`), and the result is storage of the same kind; ``vjp(capsule, g,
inputs, out, params)`` returns one cotangent per input position (``None`` where the input is not
differentiable), each already reduced to its input's shape and dtype. ``vjp_guard(capsule,
policy)`` runs before the forward on every call when present (the LibTorch bridge's
``require_torchlean_tape``). ``prepare()`` runs whenever a session binds the kernel to its
accepted capsule, before any call (cheap after the first): a provider's one-time set-up
(:func:`import_torch` for the aten and LibTorch kernels), so that it happens with planning and
acceptance and is not counted as the first call's kernel time by
:mod:`torchlean.autograd.profiler`.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.policy import KernelPolicy
from torchlean.backend.vocabulary import BackendOp, Device, Provider

if TYPE_CHECKING:
    import numpy as np
    import numpy.typing as npt
    import torch

    Array = npt.NDArray[np.generic] | torch.Tensor
else:
    Array = Any

__all__ = ["Array", "ForwardFn", "LinkedKernel", "VJPFn", "VJPGuard", "VJPNeedsFn", "convention_kernel"]

ForwardFn = Callable[[KernelCapsule, tuple["Array | None", ...], Mapping[str, Any]], "Array"]
VJPFn = Callable[
    [KernelCapsule, "Array", tuple["Array | None", ...], "Array", Mapping[str, Any]],
    Sequence["Array | None"],
]
VJPGuard = Callable[[KernelCapsule, KernelPolicy], None]
VJPNeedsFn = Callable[
    [KernelCapsule, "Array", tuple["Array | None", ...], "Array", Mapping[str, Any], tuple[bool, ...]],
    Sequence["Array | None"],
]
"""A VJP that is told which inputs need a cotangent (``torch.autograd.Function``'s
``needs_input_grad``) and returns ``None`` for the others instead of computing them."""


@dataclass(frozen=True, slots=True)
class LinkedKernel:
    """One linked implementation: ``name`` (as listed in "available handlers"), its identity
    ``(op, provider, device)``, the forward, the local VJP (``None``: forward only) and an
    optional guard on the session's VJP request, and an optional one-time set-up run at binding
    (``prepare``, see the module docstring)."""

    name: str
    op: BackendOp
    provider: Provider
    device: Device
    forward: ForwardFn
    vjp: VJPFn | None = None
    vjp_guard: VJPGuard | None = None
    vjp_needs: VJPNeedsFn | None = None
    prepare: Callable[[], None] | None = None

    @property
    def label(self) -> str:
        """``name (provider/device)``, the rendering of the "available handlers" list."""
        return f"{self.name} ({self.provider.label}/{self.device.label})"


@functools.cache
def import_torch() -> None:
    """Import torch (seconds on a first import), the ``prepare`` of kernels that call it, and once
    per process finish the lazy set-up of torch's vectorised math in this one thread: one
    ``torch.exp`` of 64 float64 elements (below torch's parallel grain, so not split across
    threads).

    Without it, torch 2.13's CPU build (MKL VML) with more than one intra-op thread sometimes
    computed a process's first large float64 ``exp``, split across threads, wrongly in one
    thread's share (about 3e-9 of the largest value; the second call exact): review153 M1;
    ``bench/first_call_exp.py --runs 60`` on two threads counted 6 of 60 fresh processes without
    it and 0 of 60 with it (2026-12-05, this project's 2-core machine).
    """
    import torch

    torch.exp(torch.ones(64, dtype=torch.float64))


def convention_kernel(
    name: str,
    op: BackendOp,
    provider: Provider,
    device: Device,
    forward: Callable[..., Array],
    vjp: Callable[..., Sequence[Array | None]] | None,
    *,
    prepare: Callable[[], None] | None = None,
) -> LinkedKernel:
    """A linked kernel over functions of the reference kernel convention (team brief).

    ``forward(*inputs, **params)`` returns the output array; ``vjp(g, *inputs, out=out, **params)``
    returns one cotangent per input (``None`` for a non-differentiable input). ``vjp=None`` links a
    forward-only kernel. A ``vjp`` with a ``needs_input_grad`` keyword (one bool per input) also
    becomes the linked kernel's ``vjp_needs``: the tape passes which inputs need a cotangent and
    the rule skips the others (returning ``None`` there). ``prepare`` is the kernel's one-time
    set-up (:class:`LinkedKernel`).
    """

    def run_forward(
        capsule: KernelCapsule, inputs: tuple[Array | None, ...], params: Mapping[str, Any]
    ) -> Array:
        return forward(*inputs, **params)

    if vjp is None:
        return LinkedKernel(name, op, provider, device, run_forward, None, prepare=prepare)
    local_vjp = vjp
    skips = "needs_input_grad" in inspect.signature(vjp).parameters

    def run_vjp(
        capsule: KernelCapsule,
        g: Array,
        inputs: tuple[Array | None, ...],
        out: Array,
        params: Mapping[str, Any],
    ) -> Sequence[Array | None]:
        return local_vjp(g, *inputs, out=out, **params)

    def run_vjp_needs(
        capsule: KernelCapsule,
        g: Array,
        inputs: tuple[Array | None, ...],
        out: Array,
        params: Mapping[str, Any],
        needs: tuple[bool, ...],
    ) -> Sequence[Array | None]:
        return local_vjp(g, *inputs, out=out, needs_input_grad=needs, **params)

    return LinkedKernel(
        name, op, provider, device, run_forward, run_vjp, vjp_needs=run_vjp_needs if skips else None,
        prepare=prepare,
    )
