"""Linked kernels of the ``aten`` provider: every ``aten.*`` capsule's implementation.

One :class:`~torchlean.backend.providers.linked.LinkedKernel` per aten op, named
``TorchLean ATen CPU``, identity ``(op, aten, cpu)``, in the order of ``aten.capsules.ATEN_OPS``.
The forward is ``<op>`` and the local VJP ``<op>_vjp`` of ``aten/kernels.py``, ``aten/pointwise.py``
or ``aten/spatial.py``: TorchLean's own backward rule (the reference's), evaluated with torch CPU
kernels at the saved inputs and output; torch autograd never records anything. Importing this
module does not import torch (the kernels import it when first called). Source: DESIGN.md §1.8
(fast CPU provider) and the seed chapter ("Forward And Backward Ownership": the VJP stays with
the TorchLean tape).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from types import ModuleType

from torchlean.backend.providers.aten import kernels, pointwise, spatial
from torchlean.backend.providers.aten.capsules import ATEN_OPS, KERNELS_PATH, POINTWISE_PATH, kernel_path
from torchlean.backend.providers.linked import Array, LinkedKernel, convention_kernel, import_torch
from torchlean.backend.vocabulary import BackendOp, Device, Provider

__all__ = ["HANDLER_NAME", "LINKED_KERNELS"]

HANDLER_NAME = "TorchLean ATen CPU"

_MODULES: dict[str, ModuleType] = {KERNELS_PATH: kernels, POINTWISE_PATH: pointwise}


def _linked(op: BackendOp) -> LinkedKernel:
    module = _MODULES.get(kernel_path(op), spatial)
    forward: Callable[..., Array] = getattr(module, op.label)
    vjp: Callable[..., Sequence[Array | None]] = getattr(module, f"{op.label}_vjp")
    return convention_kernel(HANDLER_NAME, op, Provider.ATEN, Device.CPU, forward, vjp, prepare=import_torch)


LINKED_KERNELS: tuple[LinkedKernel, ...] = tuple(_linked(op) for op in ATEN_OPS)
"""The 40 aten kernels, in the order of ``aten.capsules.ATEN_OPS``."""
