"""Whether a value is a torch tensor, and why numpy cannot read one, for the modules below the
tensor layer (``spec``, ``ir``, the data split helpers) that take array data and must refuse such
a tensor in their own words (review239 F5: torch's ``RuntimeError`` or ``TypeError`` from
``.numpy()`` came through). Nothing here imports torch: no torch tensor exists before it is."""

from __future__ import annotations

import sys
from typing import Any

__all__ = ["is_torch_tensor", "torch_refusal"]


def is_torch_tensor(value: object) -> bool:
    """Whether ``value`` is a ``torch.Tensor`` (a subclass such as ``torch.nn.Parameter``
    included), without importing torch. A torch that another thread is still importing is in
    ``sys.modules`` before it has ``Tensor`` (review77 F1); no torch tensor exists yet then."""
    tensor_class = getattr(sys.modules.get("torch"), "Tensor", None)
    return isinstance(tensor_class, type) and isinstance(value, tensor_class)


def torch_refusal(name: str, t: Any) -> str | None:
    """Why the torch tensor ``t``, given as ``name``, cannot be read as a host numpy array (it
    requires grad, is on a meta or another device, or is not strided), else ``None`` (numpy may
    still refuse its dtype, bfloat16: the caller's ``np.asarray`` says so)."""
    try:
        shape: object = tuple(t.shape)
    except RuntimeError:  # a nested tensor has no single shape
        shape = "nested"
    if t.device.type == "meta":
        return f"{name} is a meta torch tensor (shape {shape}): it has no values (accepted: a numpy array)"
    layout = str(t.layout) != "torch.strided"
    why = ("requires grad" if t.requires_grad else f"is on {t.device}" if t.device.type != "cpu"
           else f"has layout {t.layout}" if layout else None)
    if why is None:
        return None
    return (f"{name} is a torch tensor (shape {shape}, dtype {t.dtype}) that {why}: pass t.detach().cpu()"
            f"{'.to_dense()' if layout else ''} (accepted: a numpy array or a CPU torch tensor that does "
            "not require grad)")
