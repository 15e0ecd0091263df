"""Whether a value is a torch tensor, and why numpy cannot read one, for the modules below the
tensor layer (``spec``, ``ir``, the data split helpers) that take array data and must refuse such
a tensor in their own words (review239 F5: torch's ``RuntimeError`` or ``TypeError`` from
``.numpy()`` came through). Nothing here imports torch: no torch tensor exists before it is."""

from __future__ import annotations

import sys
from collections import deque
from typing import Any

import numpy as np

__all__ = ["declared_shape", "is_torch_tensor", "numpy_readable", "torch_refusal", "unreadable_element"]

_ACCEPTED = "a numpy array or a CPU torch tensor that does not require grad"


def is_torch_tensor(value: object) -> bool:
    """Whether ``value`` is a ``torch.Tensor`` (a subclass such as ``torch.nn.Parameter``
    included), without importing torch. A torch that another thread is still importing is in
    ``sys.modules`` before it has ``Tensor`` (review77 F1); no torch tensor exists yet then."""
    tensor_class = getattr(sys.modules.get("torch"), "Tensor", None)
    return isinstance(tensor_class, type) and isinstance(value, tensor_class)


def declared_shape(value: object) -> tuple[int, ...] | None:
    """The shape of array data whose shape is free to read before it is copied (a numpy array, a
    torch tensor; a broadcast view may declare far more entries than memory holds), else None
    (lists, numbers, a torch tensor :func:`torch_refusal` refuses: a nested one has no one shape,
    and a sparse, meta or grad-requiring one is refused as such before any shape check)."""
    if isinstance(value, np.ndarray):
        shape: tuple[int, ...] = value.shape
        return shape
    if is_torch_tensor(value) and torch_refusal("", value) is None:  # a tensor numpy cannot read
        torch_value: Any = value  # (sparse, meta, requiring grad) keeps its own refusal first
        return tuple(int(extent) for extent in torch_value.shape)
    return None


def torch_refusal(name: str, t: Any) -> str | None:
    """Why the torch tensor ``t``, given as ``name``, cannot be read as a host numpy array (it
    requires grad, is on a meta or another device, or is not strided), else ``None`` (numpy may
    still refuse its dtype, bfloat16: the caller's ``np.asarray`` says so)."""
    try:
        shape: object = tuple(t.shape)
    except RuntimeError:  # a nested tensor has no single shape
        shape = "nested"
    if t.device.type == "meta":
        return f"{name} is a meta torch tensor (shape {shape}): it has no values (accepted: {_ACCEPTED})"
    layout = str(t.layout) != "torch.strided" or bool(getattr(t, "is_nested", False))
    kind = "nested" if getattr(t, "is_nested", False) else t.layout
    why = ("requires grad" if t.requires_grad else f"is on {t.device}" if t.device.type != "cpu"
           else f"has layout {kind}" if layout else None)
    if why is None:
        return None
    dense = (".to_padded_tensor(0.0)" if kind == "nested" else ".to_dense()") if layout else ""
    return (f"{name} is a torch tensor (shape {shape}, dtype {t.dtype}) that {why}: pass t.detach().cpu()"
            f"{dense} (accepted: {_ACCEPTED})")


def _foreign_dtype(t: Any) -> bool:
    """Whether torch tensor ``t`` has a floating dtype numpy has none of (bfloat16, float8)."""
    return bool(t.is_floating_point()) and str(t.dtype).removeprefix("torch.") not in (
        "float16", "float32", "float64"
    )


_MOST_VISITED = 100_000
"""The most list entries :func:`unreadable_element` looks at: numpy's refusal is immediate, and a
walk of every entry of a long (or deeply shared: ``[[...] * 10] * 10`` nested 9 deep is 10**9
numbers in a few hundred bytes) list would make the refusal slow (review242 F1)."""


def unreadable_element(value: object, name: str) -> str | None:
    """Why numpy cannot read a torch tensor held in the nested lists and tuples ``value`` (it
    requires grad, has no values, or has a dtype numpy lacks), naming its position as
    ``<name>: element [i][j]``, else None (also when none is found among the first
    :data:`_MOST_VISITED` entries, read level by level, so a tensor near the top is found first).
    Called once ``np.asarray(value)`` has failed, where numpy and torch name neither the element
    nor the way out (review241 F8)."""
    if not isinstance(value, list | tuple):
        return None
    pending: deque[tuple[list[Any] | tuple[Any, ...], tuple[int, ...]]] = deque([(value, ())])
    visited = 0
    while pending:
        container, path = pending.popleft()
        for index, item in enumerate(container):
            visited += 1
            if visited > _MOST_VISITED:
                return None
            if is_torch_tensor(item):
                where = f"{name}: element {''.join(f'[{i}]' for i in (*path, index))}"
                refusal = torch_refusal(where, item)
                if refusal is not None:
                    return refusal
                if _foreign_dtype(item):
                    return (f"{where} is a torch tensor of dtype {item.dtype}, which numpy has no dtype for: "
                            "pass t.double() (accepted: a numpy array or a CPU torch tensor of a dtype "
                            "numpy has)")
            elif isinstance(item, list | tuple) and len(path) < 63:  # numpy reads at most 64 levels
                pending.append((item, (*path, index)))
    return None


def numpy_readable(t: Any) -> Any:
    """The torch tensor ``t`` (one :func:`torch_refusal` accepts) in a dtype numpy reads: itself,
    or a float64 copy of a floating dtype numpy has none of (bfloat16, the float8 types), which
    holds each value exactly, as ``torchlean.tensor`` widens them (review240 F5)."""
    return t.double() if _foreign_dtype(t) else t
