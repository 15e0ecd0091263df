"""Whether a node's payload fits the node (:mod:`torchlean.ir.payloads`): the kind of payload its
kind takes, with the shapes its declared shapes imply.

The graph's shape check (:func:`torchlean.ir.infer.check_shapes`) sees the declared shapes only; a
payload given beside a graph built by hand (``Graph(nodes)`` and a dict) is checked here, by both
evaluators of a graph (:func:`torchlean.ir.evaluate` and the typed-graph executor), before any
kernel runs. Before, a ``linear`` declared ``[2, 4]`` ran with a ``[5, 3]`` weight and a ``const``
of ``value_shape`` ``(6, 1)`` with a flat ``(6,)`` array broadcast its sum to ``(6, 6)``, with no
error (review212 F1).
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

import numpy as np

from torchlean._checks import is_builtin_or_numpy_int
from torchlean.ir.graph import Graph, Node
from torchlean.ir.ops import BatchNormEval, BatchNormTrain, Const, Conv, LayerNorm, Linear, render_shape
from torchlean.ir.payloads import (
    BatchNormParams,
    BatchNormTrainParams,
    ConvParams,
    LayerNormParams,
    LinearParams,
)

__all__ = ["PAYLOAD_KINDS", "payload_fault", "stray_keys", "stray_keys_fault"]

PAYLOAD_KINDS = (Const, Linear, Conv, BatchNormEval, BatchNormTrain, LayerNorm)
"""The node kinds that take a payload."""


def stray_keys_fault(graph: Graph, payloads: Mapping[Any, object]) -> str | None:
    """Why ``payloads`` is keyed at what is not a node taking a payload (a payload there would be
    ignored: a layer norm's affine keyed at the node before it ran without it, review213 F2), else
    None."""
    takers = [node.id for node in graph.nodes if isinstance(node.kind, PAYLOAD_KINDS)]
    stray = stray_keys(payloads, takers)
    if not stray:
        return None
    kinds = ", ".join(cls.tag for cls in PAYLOAD_KINDS)
    return (
        f"payloads has keys that are not nodes taking a payload: {stray} (nodes taking one: "
        f"{render_shape(takers)}; kinds {kinds})"
    )


def stray_keys(mapping: Mapping[Any, object], ids: Sequence[int]) -> str:
    """The keys of ``mapping`` that are not integers among ``ids`` as ``[k, ...]``, or ``""``."""
    known = set(ids)
    stray = [k for k in mapping if not is_builtin_or_numpy_int(k) or k not in known]
    if not stray:
        return ""
    return "[" + ", ".join(repr(k) if not is_builtin_or_numpy_int(k) else str(k) for k in stray) + "]"


def payload_fault(node: Node, payload: object, x: tuple[int, ...]) -> str | None:
    """Why ``payload`` does not fit ``node``, whose (first) input has shape ``x`` (``()`` for a node
    without inputs), else None (also for kinds that take no payload). Accepted:

    * ``const``: a numpy array of ``value_shape``'s element count (read row-major into it);
    * ``linear``: :class:`LinearParams`, weight ``[out, x[-1]]`` with ``out`` the node's last
      declared extent, bias ``[out]`` or None;
    * ``conv``: :class:`ConvParams`, weight ``config.weight_shape``, bias ``[out_channels]`` or None;
    * ``batch_norm_eval``: :class:`BatchNormParams`, mean, var (and weight, bias when given)
      ``[channels]``; ``batch_norm_train``: :class:`BatchNormTrainParams`, weight and bias
      ``[channels]`` or None;
    * ``layernorm``: :class:`LayerNormParams` or None, weight and bias ``x[axis:]`` or None.

    A missing payload is a fault for ``const``, ``linear``, ``conv`` and the batch norms. The
    message names the payload's shapes and the ones accepted, not the node (the caller adds it).
    """
    kind = node.kind
    parent = tuple(x)
    match kind:
        case Const(value_shape=shape):
            if payload is None:
                return "has no payload (accepted: a numpy array)"
            if not isinstance(payload, np.ndarray):
                return f"payload must be a numpy array, got {type(payload).__name__}"
            if payload.size != math.prod(shape):
                return (f"payload of shape {list(payload.shape)} holds {payload.size} values (accepted: "
                        f"{math.prod(shape)}, value_shape {list(shape)}, read row-major)")
            return None
        case Linear():
            return _arrays(payload, LinearParams, {
                "weight": (node.out_shape[-1:] + parent[-1:], True),
                "bias": (node.out_shape[-1:], False),
            })
        case Conv(config=config):
            return _arrays(payload, ConvParams, {
                "weight": (tuple(config.weight_shape), True),
                "bias": ((config.out_channels,), False),
            })
        case BatchNormEval(channel_axis=axis):
            channels = (parent[axis],)
            return _arrays(payload, BatchNormParams, {
                "mean": (channels, True), "var": (channels, True),
                "weight": (channels, False), "bias": (channels, False),
            })
        case BatchNormTrain(channel_axis=axis):
            channels = (parent[axis],)
            return _arrays(payload, BatchNormTrainParams, {
                "weight": (channels, False), "bias": (channels, False),
            })
        case LayerNorm(axis=axis):
            if payload is None:
                return None
            if not isinstance(payload, LayerNormParams):
                return f"payload must be a LayerNormParams or none, got {type(payload).__name__}"
            suffix = tuple(parent[axis:])
            return _arrays(payload, LayerNormParams, {"weight": (suffix, False), "bias": (suffix, False)})
    return None


def _arrays(payload: object, cls: type, fields: dict[str, tuple[tuple[int, ...], bool]]) -> str | None:
    """Whether ``payload`` is a ``cls`` whose array fields have the given shapes (a field marked
    required must be present; the others may be None)."""
    if payload is None:
        return f"has no payload (accepted: a {cls.__name__})"
    if not isinstance(payload, cls):
        return f"payload must be a {cls.__name__}, got {type(payload).__name__}"
    for name, (shape, required) in fields.items():
        value: Any = getattr(payload, name)
        if value is None:
            if required:
                return f"its {cls.__name__}.{name} is None (accepted: an array of shape {list(shape)})"
            continue
        # review213 F7: "has shape list"; review218 F6: a matrix's * is a matrix product (an
        # np.memmap, weights read with mmap_mode, computes as an array: review219 F2)
        if not isinstance(value, np.ndarray) or isinstance(value, np.matrix):
            subclass = "; np.asarray of it" if isinstance(value, np.ndarray) else ""
            return (f"its {cls.__name__}.{name} must be a numpy array, got {type(value).__name__} "
                    f"(accepted: an array of shape {list(shape)}{subclass})")
        if value.shape != shape:
            return f"its {cls.__name__}.{name} has shape {list(value.shape)} (accepted: {list(shape)})"
    return None
