"""The canonical IR (``NN.IR``, anchor-runtime.md §4): op kinds, graphs, shapes, evaluation.

* :mod:`torchlean.ir.ops` — ``OpKind`` variants (frozen dataclasses with ``tag``, arity,
  ``backend_op`` and ``describe()``), ``WindowConfig``, ``ConvConfig``, ``HardMask``;
* :mod:`torchlean.ir.graph` — ``Node``, ``Graph`` and ``check_well_formed``;
* :mod:`torchlean.ir.infer` — shape inference and ``check_shapes``;
* :mod:`torchlean.ir.payloads` — const values and layer parameters keyed by node id;
* :mod:`torchlean.ir.builder` — ``GraphBuilder`` (inferred shapes, constants emitted at first use);
* :mod:`torchlean.ir.evaluate` — the forward evaluator on the reference kernels.
"""

from torchlean.ir import ops
from torchlean.ir.builder import BuiltGraph, GraphBuilder, Param
from torchlean.ir.errors import IRError
from torchlean.ir.evaluate import evaluate
from torchlean.ir.graph import Graph, Node
from torchlean.ir.infer import check_shapes, infer_node_shape, infer_shapes
from torchlean.ir.ops import ConvConfig, HardMask, OpKind, Shape, WindowConfig
from torchlean.ir.payloads import (
    BatchNormParams,
    BatchNormTrainParams,
    ConvParams,
    LayerNormParams,
    LinearParams,
    Payload,
    Payloads,
)

__all__ = [
    "BatchNormParams",
    "BatchNormTrainParams",
    "BuiltGraph",
    "ConvConfig",
    "ConvParams",
    "Graph",
    "GraphBuilder",
    "HardMask",
    "IRError",
    "LayerNormParams",
    "LinearParams",
    "Node",
    "OpKind",
    "Param",
    "Payload",
    "Payloads",
    "Shape",
    "WindowConfig",
    "check_shapes",
    "evaluate",
    "infer_node_shape",
    "infer_shapes",
    "ops",
]
