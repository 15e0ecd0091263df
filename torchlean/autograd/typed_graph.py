"""Typed-graph execution from an :class:`AcceptedGraphKernelPlan` (DESIGN.md §1.8).

The original plans graphs only diagnostically; here the accepted plan is what runs. A model
(with its loss) is lowered once to the canonical IR, planned and accepted by
``profile.accept_graph``. :class:`GraphProgram` then precomputes the whole forward schedule once
per accepted plan: one step per node in node order, each with its value slot, where each operand
comes from (an earlier slot, a model parameter, a constant), the kernel parameters, and — for
planned nodes — the :class:`AcceptedKernel` of its group bound once to its linked kernel
(:func:`~torchlean.autograd.dispatch.bind_linked`). Each execution only walks the schedule and
calls :func:`~torchlean.autograd.dispatch.execute_bound` (operand and device checks, the beartype
validator of the minted kernels, the kernel, the tape node), the path eager execution takes.
``input``/``const``/``detach`` nodes need no kernel. Because the kernels, their parameters and
their order are those of eager execution, eager and typed-graph runs give bit-identical values;
the backward pass is the tape over the nodes the schedule recorded, traversed by
:meth:`GraphProgram.run_and_backward` in the precomputed reverse schedule order (no search of the
graph behind the loss), with the same local rules and accumulation as ``Tensor.backward``.

Batch norm runs as eager runs it: ``batch_norm_train`` with the batch's statistics (the running
statistics' update is the caller's, on the value :meth:`GraphProgram.run_and_backward_keeping`
returns for its input), ``batch_norm_eval`` with running statistics fed from the parameters given
to each run (``statistic_params``). A training dropout's mask is an ordinary input the caller
draws (:mod:`torchlean.nn.lowering`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from beartype import beartype

from torchlean._checks import is_builtin_or_numpy_int
from torchlean.autograd import storage
from torchlean.autograd.dispatch import BoundKernel, bind_linked, execute_bound, linked_kernels, select_linked
from torchlean.autograd.tape import AutogradError, run_backward
from torchlean.backend.acceptance import AcceptedGraphKernelPlan, AcceptedKernel, GraphKernelPlanResult
from torchlean.backend.errors import SessionError, TorchLeanError
from torchlean.backend.sealed import require_minted
from torchlean.backend.vocabulary import LabelledEnum
from torchlean.ir.graph import Graph, Node
from torchlean.ir.infer import check_shapes
from torchlean.ir.ops import (
    AvgPool,
    BatchNormEval,
    BatchNormTrain,
    BroadcastTo,
    Concat,
    Const,
    Conv,
    Detach,
    Gather,
    Input,
    LayerNorm,
    Linear,
    LinearOf,
    LogSoftmax,
    MaxPool,
    Permute,
    ReduceMean,
    ReduceSum,
    Reshape,
    Scale,
    ScaledDotProductAttention,
    Softmax,
    Sum,
    Transpose,
)
from torchlean.ir.payload_check import payload_fault, stray_keys_fault
from torchlean.ir.payloads import (
    BatchNormParams,
    BatchNormTrainParams,
    ConvParams,
    LayerNormParams,
    LinearParams,
    Payloads,
)
from torchlean.spec.masks import causal_mask
from torchlean.tensor import Tensor

__all__ = ["GraphProgram", "Operand", "Source", "Step", "StepKind", "node_kernels"]

# Kinds whose kernel takes only its graph parents and no parameters.
_PLAIN = frozenset(
    {
        "add",
        "sub",
        "mul_elem",
        "max_elem",
        "min_elem",
        "abs",
        "sqrt",
        "inv",
        "relu",
        "gelu",
        "tanh",
        "sigmoid",
        "exp",
        "log",
        "sin",
        "cos",
        "softplus",
        "matmul",
        "mse_loss",
    }
)

# Every kind the executor runs, for its refusal message: the plain kinds, the kinds that need no
# kernel (``GraphProgram._step``) and those ``GraphProgram._call`` matches by class.
_EXECUTABLE = _PLAIN | {
    kind.tag
    for kind in (
        Input, Const, Detach, Reshape, Transpose, Permute, BroadcastTo, Scale, Softmax, LogSoftmax,
        ReduceSum, ReduceMean, Sum, LayerNorm, Linear, Conv, MaxPool, AvgPool, ScaledDotProductAttention,
        BatchNormEval, BatchNormTrain, Gather, Concat, LinearOf,
    )
}


@beartype
def node_kernels(plan: AcceptedGraphKernelPlan) -> dict[int, AcceptedKernel]:
    """The accepted kernel that runs each planned node (its group's kernel).

    Raises:
        UnmintedError: ``plan`` was not minted by the gate or was changed since.
    """
    require_minted(plan, "node_kernels")
    table: dict[int, AcceptedKernel] = {}
    for group, kernel in zip(plan.grouped_plan.groups, plan.kernels, strict=True):
        for node_id in group.node_ids:
            table[node_id] = kernel
    return table


def _swap(rank: int, a: int, b: int) -> tuple[int, ...]:
    """The permutation swapping axes ``a`` and ``b`` (both in ``[0, rank)``: IR shape inference
    refuses other transpose axes before a program is built)."""
    perm = list(range(rank))
    perm[a], perm[b] = perm[b], perm[a]
    return tuple(perm)


class StepKind(LabelledEnum):
    """What one schedule step does."""

    INPUT = "input"
    PARAM = "param"
    CONST = "const"
    DETACH = "detach"
    KERNEL = "kernel"


class Source(LabelledEnum):
    """Where a kernel operand comes from; resolved once, when the schedule is built."""

    SLOT = "slot"  # the value of an earlier node: ``values[key]``
    PARAM = "param"  # model parameter ``params[key]``
    FIXED = "fixed"  # a fixed array, wrapped in a fresh Tensor each run
    ABSENT = "absent"  # an absent optional input: ``None``


Operand = tuple[Source, int, np.ndarray[Any, Any] | None]
"""One kernel operand: ``(source, key, fixed)``; ``key`` is the node id (``SLOT``) or the
parameter index (``PARAM``), else 0; ``fixed`` is the array of a ``FIXED`` operand, else ``None``."""

_NO_OPERAND: Operand = (Source.ABSENT, 0, None)


@dataclass(frozen=True, slots=True)
class Step:
    """One node of the precomputed schedule: what it does, where its value or operands come from,
    its kernel parameters and (kernel steps) its bound accepted kernel.

    Each field below ``kind`` is set for the kinds it names and ``None`` (or empty) otherwise:
    ``input_position`` (``INPUT``: the position in ``inputs``), ``param_index`` (``PARAM``: the
    index in ``params``), ``parent`` (``DETACH``: the node id of the detached value), ``const``
    (``CONST``: the array, wrapped in a fresh Tensor each run), ``operands``, ``params`` and
    ``bound`` (``KERNEL``).
    """

    node_id: int
    kind: StepKind
    input_position: int | None = None
    param_index: int | None = None
    parent: int | None = None
    const: np.ndarray[Any, Any] | None = None
    operands: tuple[Operand, ...] = ()
    params: Mapping[str, Any] | None = None
    bound: BoundKernel | None = None


class GraphProgram:
    """A lowered graph bound to its accepted plan; :meth:`run` executes it once.

    The constructor precomputes the schedule (:attr:`steps`): every planned node's accepted
    kernel is bound to its linked implementation here, once, and every node's operand sources and
    kernel parameters are resolved from the graph's static shapes.

    Args:
        graph: the canonical IR graph; it is shape-checked here (``check_shapes``), so each node's
            declared shape is the one its kernel produces.
        payloads: const values and layer parameters by node id, each checked against its node
            (:func:`~torchlean.ir.payload_check.payload_fault`; a const's array is read row-major
            into its ``value_shape``, as :func:`torchlean.ir.evaluate` reads it); :attr:`fixed_payloads` keeps
            only those of the nodes not fed from the model's parameters once the schedule is built
            (so it is not the graph's whole payload store: review146 F7).
        plan: the plan ``profile.accept_graph(graph)`` accepted for this graph.
        param_nodes: ``const`` node id → index of the model parameter it holds.
        payload_params: payload node id → (weight index, bias index) of its parameters.
        statistic_params: ``batch_norm_eval`` node id → (running mean index, running variance
            index): the model parameters (buffers) fed as its statistics at each run, in place of
            the payload's copies (``None``: none; a node without an entry uses its payload's).

    Raises:
        beartype.roar.BeartypeCallHintViolation: ``plan`` was not minted by the gate.
        IRError: the graph is not well formed or declares a shape its node does not produce.
        SessionError: a payload that does not fit its node (``typed graph: node 1 (linear): its
            LinearParams.weight has shape [5, 3] (accepted: [4, 3])``), or is missing.
        SessionError: ``plan`` does not cover exactly this graph's kernel nodes, was made for a
            graph of another size, runs another op at one of them, a node has no accepted kernel or
            no linked implementation, or a node is not executable here: a kind the executor does
            not run (``flatten``, ``rand_uniform``, ...), a conv or batch norm whose
            channel axis is not 1, a conv whose padding is asymmetric, a pool over inputs other
            than ``(N, C, *spatial)`` (the kernels' layouts; :func:`torchlean.ir.evaluate` runs
            these).
    """

    def __init__(
        self,
        graph: Graph,
        payloads: Payloads,
        plan: AcceptedGraphKernelPlan,
        param_nodes: Mapping[int, int],
        payload_params: Mapping[int, tuple[int | None, int | None]],
        statistic_params: Mapping[int, tuple[int, int]] | None = None,
    ) -> None:
        if not isinstance(plan, AcceptedGraphKernelPlan):  # review212 F4: said what beartype saw
            if plan is None:
                got = "None: the .plan of profile.accept_graph(graph) is None when acceptance failed (see "
                got += "the result's .failures)"
            elif isinstance(plan, GraphKernelPlanResult):
                got = "a GraphKernelPlanResult: pass its .plan (None when acceptance failed: see its "
                got += ".failures)"
            else:
                got = f"{type(plan).__name__}: pass profile.accept_graph(graph).plan"
            raise SessionError(
                f"typed graph: expected the AcceptedGraphKernelPlan of an accepted graph, got {got}"
            )
        self.kernels = node_kernels(plan)
        check_shapes(graph)
        kernel_nodes = tuple(n.id for n in graph.nodes if n.kind.backend_op is not None)
        if tuple(plan.node_ids) != kernel_nodes:
            raise SessionError(
                f"typed graph: the accepted plan covers nodes {list(plan.node_ids)}, but the graph's "
                f"kernel nodes are {list(kernel_nodes)}"
            )
        if plan.graph_plan.node_count != len(graph.nodes):
            raise SessionError(
                f"typed graph: the accepted plan was made for a graph of {plan.graph_plan.node_count} "
                f"nodes, but this graph has {len(graph.nodes)}"
            )
        for node in graph.nodes:
            op = node.kind.backend_op
            if op is not None and self.kernels[node.id].op is not op:
                raise SessionError(
                    f"typed graph: node {node.id} is `{op.label}`, but the accepted plan runs "
                    f"`{self.kernels[node.id].capsule.name}` (`{self.kernels[node.id].op.label}`) there; "
                    "accept this graph's own plan"
                )
        if not isinstance(payloads, Mapping):  # review218 F6: a list was read as its keys
            raise SessionError(
                "typed graph: payloads must be a mapping from node id to payload, got "
                f"{type(payloads).__name__}"
            )
        stray = stray_keys_fault(graph, payloads)
        if stray is not None:  # review213 F2: ignored (a layer norm's affine at another node dropped)
            raise SessionError(f"typed graph: {stray}")
        for node in graph.nodes:  # review212 F1/F2: a payload that does not fit ran, or raised KeyError
            if isinstance(node.kind, Const) and node.id in param_nodes:
                continue  # a model parameter, checked against the lowered shape at each run
            x = graph.nodes[node.parents[0]].out_shape if node.parents else ()
            fault = payload_fault(node, payloads.get(node.id), x)
            if fault is not None:
                raise SessionError(f"typed graph: node {node.id} ({node.kind.describe()}): {fault}")
        self.graph = graph
        self.fixed_payloads = payloads  # all of them until the schedule is built (below)
        self.plan = plan
        self.param_nodes = dict(param_nodes)
        self.payload_params = dict(payload_params)
        self.statistic_params = dict(statistic_params or {})
        self.input_ids = tuple(n.id for n in graph.nodes if isinstance(n.kind, Input))
        self.input_shapes = tuple(graph.nodes[i].out_shape for i in self.input_ids)
        self.param_shapes = _param_shapes(
            graph, payloads, self.param_nodes, self.payload_params, self.statistic_params
        )
        self.param_count = max(self.param_shapes, default=-1) + 1
        self._param_checks = tuple(sorted(self.param_shapes.items()))
        bound: dict[int, BoundKernel] = {}
        for kernel in plan.kernels:
            if id(kernel) not in bound:
                linked = select_linked(kernel.op, kernel.capsule, linked_kernels(kernel.op))
                bound[id(kernel)] = bind_linked(kernel, linked)
        bound_of_node = {node_id: bound[id(kernel)] for node_id, kernel in self.kernels.items()}
        self.steps: tuple[Step, ...] = tuple(
            self._step(node, bound_of_node.get(node.id)) for node in graph.nodes
        )
        self._backward_slots: tuple[int, ...] = tuple(
            step.node_id for step in reversed(self.steps) if step.kind is StepKind.KERNEL
        )
        # the steps hold every array they run with; the payloads of nodes fed from the model's
        # parameters are copies of the weights that no run reads (review144 F2: a trainer's
        # cached programs each held one), so only the others are kept
        fed = self.param_nodes.keys() | self.payload_params.keys() | self.statistic_params.keys()
        self.fixed_payloads = {node: payload for node, payload in payloads.items() if node not in fed}

    def run_and_backward(self, inputs: Sequence[Tensor], params: Sequence[Tensor], output: int) -> Tensor:
        """Execute the schedule up to node ``output`` (a scalar loss), then backpropagate from it
        in the precomputed reverse schedule order (no graph search); return the loss. When an
        input or parameter tensor has a history of its own (it is not a leaf), the tape searches
        the graph behind the loss instead, so gradients reach through that history too.

        Gradients accumulate into ``.grad`` of the ``params`` that require them, exactly as
        ``run(...).backward()`` does.

        Raises:
            SessionError: as :meth:`run`.
            AutogradError: the loss is not a scalar, or requires no gradient.
        """
        values = self._execute(inputs, params, output)
        return self._backward(values, inputs, params, output)

    def run_and_backward_keeping(
        self, inputs: Sequence[Tensor], params: Sequence[Tensor], output: int, keep: Sequence[int]
    ) -> tuple[Tensor, tuple[Tensor, ...]]:
        """:meth:`run_and_backward`, and the values of the nodes ``keep`` (node ids up to
        ``output``) as the forward pass computed them, in ``keep``'s order: the trainer reads the
        input of each ``batch_norm_train`` node to update its running statistics.

        Raises:
            SessionError: as :meth:`run`; a ``keep`` entry that is not a node id in
                ``0..output``.
            AutogradError: as :meth:`run_and_backward`.
        """
        self._check_call(inputs, params, output)
        for node_id in keep:
            if not is_builtin_or_numpy_int(node_id) or not 0 <= node_id <= output:
                raise SessionError(
                    f"typed graph: keep must hold node ids in 0..{output} (the output's), got {node_id!r}"
                )
        values = self._execute(inputs, params, output)
        kept = []
        for node_id in keep:
            value = values[node_id]
            assert value is not None
            kept.append(value)
        return self._backward(values, inputs, params, output), tuple(kept)

    def _backward(
        self, values: list[Tensor | None], inputs: Sequence[Tensor], params: Sequence[Tensor], output: int
    ) -> Tensor:
        """Backpropagate from ``values[output]`` as :meth:`run_and_backward` describes."""
        loss = values[output]
        assert loss is not None
        node = loss._node
        if node is None or loss.shape != ():
            why = (f"is not a scalar (shape {loss.shape})" if loss.shape != ()
                   else "requires no gradient: it depends on no parameter or input that requires one")
            raise AutogradError(  # review212 F5: a scalar that needs no gradient was "not a scalar"
                f"typed graph: node {output} {why}"
            )
        seed = storage.like(np.ones((), dtype=loss.dtype), loss._data)
        if any(t._node is not None for t in (*inputs, *params)):
            # a fed tensor carries its own history: the schedule does not cover those nodes, so
            # the tape searches the whole graph behind the loss instead
            run_backward(node, seed)
            return loss
        order = []
        for slot in self._backward_slots:
            if slot <= output:
                value = values[slot]
                if value is not None and value._node is not None:
                    order.append(value._node)
        run_backward(node, seed, order=order)
        return loss

    def run(self, inputs: Sequence[Tensor], params: Sequence[Tensor], output: int) -> Tensor:
        """Execute every step up to node ``output`` and return its value.

        ``inputs`` are the values of the ``input`` nodes in node order, each of its node's
        declared shape; ``params`` the current model parameters (leaf tensors when training), each
        of the shape the graph was lowered with; ``output`` a node id in ``0..len(graph) - 1``.

        Raises:
            SessionError: wrong number of inputs; an input whose shape differs from its node's
                declared shape (``typed graph: input 0 (node 0) has shape (2, 4), but the graph
                declares (3, 4); ...``); fewer parameters than the graph reads, or one of another
                shape; ``output`` not a node id of the graph.
        """
        result = self._execute(inputs, params, output)[output]
        assert result is not None
        return result

    def _execute(
        self, inputs: Sequence[Tensor], params: Sequence[Tensor], output: int
    ) -> list[Tensor | None]:
        self._check_call(inputs, params, output)
        values: list[Tensor | None] = [None] * (output + 1)
        # the enum members as locals: an Enum class attribute lookup costs about 0.05 µs, and the
        # loop compares a few per step and operand
        kernel_kind, from_slot, from_param = StepKind.KERNEL, Source.SLOT, Source.PARAM
        for step in self.steps[: output + 1]:
            kind = step.kind
            if kind is kernel_kind:
                assert step.bound is not None and step.params is not None
                operands: list[Tensor | None] = []
                for source, key, fixed in step.operands:
                    if source is from_slot:
                        operands.append(values[key])
                    elif source is from_param:
                        operands.append(params[key])
                    elif source is Source.FIXED:
                        operands.append(Tensor(np.array(fixed)))
                    else:
                        operands.append(None)
                try:
                    values[step.node_id] = execute_bound(step.bound, operands, step.params)
                except TorchLeanError as error:  # a guard's refusal: say which node of the graph
                    node = self.graph.nodes[step.node_id]
                    error.add_note(f"typed graph: at node {node.id} ({node.kind.describe()})")
                    raise
            elif kind is StepKind.PARAM:
                assert step.param_index is not None
                values[step.node_id] = params[step.param_index]
            elif kind is StepKind.INPUT:
                assert step.input_position is not None
                values[step.node_id] = inputs[step.input_position]
            elif kind is StepKind.DETACH:
                assert step.parent is not None
                parent = values[step.parent]
                assert parent is not None
                values[step.node_id] = parent.detach()
            else:
                assert step.const is not None
                values[step.node_id] = Tensor(np.array(step.const))
        return values

    def _check_call(self, inputs: Sequence[Tensor], params: Sequence[Tensor], output: int) -> None:
        """Refuse a call that does not fit the graph: one tuple comparison per input and per
        parameter the graph reads (the graph's static shapes are what the schedule was built
        for; the Trainer caches one program per batch shape, so its own calls always fit)."""
        if len(inputs) != len(self.input_shapes):
            raise SessionError(f"typed graph: expected {len(self.input_shapes)} inputs, got {len(inputs)}")
        for position, (tensor, declared) in enumerate(zip(inputs, self.input_shapes, strict=True)):
            if tensor.shape != declared:
                raise SessionError(
                    f"typed graph: input {position} (node {self.input_ids[position]}) has shape "
                    f"{tensor.shape}, but the graph declares {declared}; lower and accept a graph for "
                    "this shape"
                )
        if len(params) < self.param_count:
            raise SessionError(
                f"typed graph: expected at least {self.param_count} parameters (the graph reads model "
                f"parameters 0..{self.param_count - 1}), got {len(params)}"
            )
        for index, declared in self._param_checks:
            if params[index].shape != declared:
                raise SessionError(
                    f"typed graph: parameter {index} has shape {params[index].shape}, but the graph "
                    f"was lowered with shape {declared}"
                )
        if not is_builtin_or_numpy_int(output) or not 0 <= output < len(self.steps):
            raise SessionError(
                f"typed graph: output must be a node id in 0..{len(self.steps) - 1} (an int), got {output!r}"
            )

    # ------------------------------------------------------------------------------ schedule

    def _step(self, node: Node, bound: BoundKernel | None) -> Step:
        """The schedule step of ``node``; ``bound`` is its group's bound kernel (planned nodes)."""
        kind = node.kind
        if isinstance(kind, Input):
            return Step(node.id, StepKind.INPUT, input_position=self.input_ids.index(node.id))
        if isinstance(kind, Const):
            if node.id in self.param_nodes:
                return Step(node.id, StepKind.PARAM, param_index=self.param_nodes[node.id])
            const = self.fixed_payloads[node.id]
            if not isinstance(const, np.ndarray):  # payload_fault refused it in __init__
                raise SessionError(f"typed graph: const node {node.id} has no array payload")
            # read row-major into value_shape, as torchlean.ir.evaluate reads it (review212 F1)
            # (np.asarray: an np.matrix keeps two axes through reshape: review213 F7)
            return Step(node.id, StepKind.CONST, const=np.asarray(const).reshape(kind.value_shape))
        if isinstance(kind, Detach):
            return Step(node.id, StepKind.DETACH, parent=node.parents[0])
        if bound is None:
            raise SessionError(f"typed graph: node {node.id} ({kind.describe()}) has no accepted kernel")
        operands, kernel_params = self._call(node)
        return Step(node.id, StepKind.KERNEL, operands=tuple(operands), params=kernel_params, bound=bound)

    def _weights(self, node: Node) -> tuple[Operand, Operand]:
        weight, bias = self.payload_params.get(node.id, (None, None))
        payload = self.fixed_payloads.get(node.id)
        return (
            _param_or_fixed(weight, getattr(payload, "weight", None)),
            _param_or_fixed(bias, getattr(payload, "bias", None)),
        )

    def _call(self, node: Node) -> tuple[list[Operand], dict[str, Any]]:
        """Operand sources and kernel parameters of one node, exactly as :mod:`torchlean.functional`
        passes them (shapes are the graph's static shapes)."""
        kind = node.kind
        parents: list[Operand] = [(Source.SLOT, p, None) for p in node.parents]
        shapes = [self.graph.nodes[p].out_shape for p in node.parents]
        x = parents[0] if parents else _NO_OPERAND
        ndim = len(shapes[0]) if shapes else 0
        match kind:
            case Reshape(out_shape=out_shape):
                return [x], {"shape": tuple(out_shape)}
            case Transpose(axis1=axis1, axis2=axis2):
                return [x], {"perm": _swap(max(ndim, 1), axis1, axis2)}
            case Permute(perm=perm):
                return [x], {"perm": tuple(perm)}
            case BroadcastTo(to_shape=to_shape):
                return [x], {"shape": tuple(to_shape)}
            case Scale(factor=factor):
                return [x], {"factor": float(factor)}
            case Softmax(axis=axis) | LogSoftmax(axis=axis):
                return [x], {"axis": int(axis)}
            case Gather(axis=axis) | Concat(axis=axis):
                return parents, {"axis": int(axis)}
            case ReduceSum(axis=axis) | ReduceMean(axis=axis):
                return [x], {"axis": int(axis), "keepdims": False}
            case Sum():
                return [x], {"axis": None, "keepdims": False}
            case LayerNorm(axis=axis):
                payload = self.fixed_payloads.get(node.id)
                eps = payload.eps if isinstance(payload, LayerNormParams) else 1e-5
                w, b = self._weights(node)
                return [x, w, b], {"normalized_ndim": ndim - axis, "eps": float(eps)}
            case BatchNormEval(channel_axis=axis) | BatchNormTrain(channel_axis=axis) if axis != 1:
                raise SessionError(
                    f"typed graph: node {node.id} ({kind.describe()}) is not executable: the batch_norm "
                    f"kernel takes (N, C, *spatial) inputs (accepted: channel_axis 1, got {axis}); "
                    "torchlean.ir.evaluate runs it"
                )
            case BatchNormTrain():
                trained = self.fixed_payloads.get(node.id)
                if not isinstance(trained, BatchNormTrainParams):
                    raise SessionError(f"typed graph: batch_norm_train node {node.id} has no payload")
                w, b = self._weights(node)
                # as functional.batch_norm(x, weight=weight, bias=bias, training=True, eps=eps) passes them
                return [x, w, b, _NO_OPERAND, _NO_OPERAND], {"training": True, "eps": float(trained.eps)}
            case BatchNormEval():
                running = self.fixed_payloads.get(node.id)
                if not isinstance(running, BatchNormParams):
                    raise SessionError(f"typed graph: batch_norm_eval node {node.id} has no payload")
                w, b = self._weights(node)
                mean_index, var_index = self.statistic_params.get(node.id, (None, None))
                mean = _param_or_fixed(mean_index, running.mean)
                var = _param_or_fixed(var_index, running.var)
                return [x, w, b, mean, var], {"training": False, "eps": float(running.eps)}
            case LinearOf():  # weight and bias are parents, as F.linear(x, w, b) passes them
                return [*parents, _NO_OPERAND][:3], {}
            case Linear():
                if not isinstance(self.fixed_payloads.get(node.id), LinearParams):
                    raise SessionError(f"typed graph: linear node {node.id} has no weight payload")
                w, b = self._weights(node)
                return [x, w, b], {}
            case Conv(config=config):
                if not isinstance(self.fixed_payloads.get(node.id), ConvParams):
                    raise SessionError(f"typed graph: conv node {node.id} has no weight payload")
                if config.channel_axis != 1 or config.padding_after != config.padding:
                    raise SessionError(
                        f"typed graph: node {node.id} ({kind.describe()}) is not executable: the conv "
                        f"kernel takes (N, C, *spatial) inputs with symmetric padding (accepted: "
                        f"channel_axis 1 and padding_after = padding, got channel_axis "
                        f"{config.channel_axis}, padding {list(config.padding)}, padding_after "
                        f"{list(config.padding_after)}); "
                        "torchlean.ir.evaluate runs it"
                    )
                w, b = self._weights(node)
                return [x, w, b], {
                    "stride": tuple(config.stride),
                    "padding": tuple(config.padding),
                    "dilation": tuple(config.dilation),
                    "groups": int(config.groups),
                }
            case MaxPool(config=config) | AvgPool(config=config) if ndim != len(config.kernel) + 2:
                raise SessionError(
                    f"typed graph: node {node.id} ({kind.describe()}) is not executable: the pooling "
                    f"kernels take (N, C, *spatial) inputs (accepted: rank {len(config.kernel) + 2} for "
                    f"{len(config.kernel)} spatial axes, got shape {list(shapes[0])}); "
                    "torchlean.ir.evaluate runs it"
                )
            case MaxPool(config=config):
                return [x], {
                    "kernel_size": tuple(config.kernel),
                    "stride": tuple(config.stride),
                    "padding": tuple(config.padding),
                    "dilation": 1,
                }
            case AvgPool(config=config):
                return [x], {
                    "kernel_size": tuple(config.kernel),
                    "stride": tuple(config.stride),
                    "padding": tuple(config.padding),
                }
            case ScaledDotProductAttention(mask=hard, causal=causal, scale=scale):
                mask = None if hard is None else hard.to_array()
                if causal is not None:
                    aligned = causal_mask(shapes[0][-2], shapes[1][-2], align=causal)
                    mask = aligned if mask is None else np.logical_and(mask, aligned)
                return [*parents, _NO_OPERAND if mask is None else (Source.FIXED, 0, mask)], (
                    {} if scale is None else {"scale": float(scale)}
                )
        if kind.tag in _PLAIN:
            return parents, {}
        raise SessionError(
            f"typed graph: node {node.id} ({kind.describe()}) is not supported by the typed-graph executor "
            f"(accepted kinds: {', '.join(sorted(_EXECUTABLE))}); torchlean.ir.evaluate runs it"
        )


def _param_shapes(
    graph: Graph,
    payloads: Payloads,
    param_nodes: Mapping[int, int],
    payload_params: Mapping[int, tuple[int | None, int | None]],
    statistic_params: Mapping[int, tuple[int, int]],
) -> dict[int, tuple[int, ...]]:
    """The shape the graph was lowered with for each model parameter it reads: a ``const``
    node's declared shape, or the shape of the payload array a conv/linear/layernorm/batch norm
    parameter (or a ``batch_norm_eval`` running statistic) replaces."""
    shapes: dict[int, tuple[int, ...]] = {}
    for node_id, index in param_nodes.items():
        shapes[index] = graph.nodes[node_id].out_shape
    for node_id, indices in payload_params.items():
        payload = payloads.get(node_id)
        for param, name in zip(indices, ("weight", "bias"), strict=True):
            value = getattr(payload, name, None)
            if param is not None and value is not None:
                shapes[param] = tuple(int(d) for d in np.shape(value))
    for node_id, (mean, var) in statistic_params.items():
        payload = payloads.get(node_id)
        for param, name in ((mean, "mean"), (var, "var")):
            value = getattr(payload, name, None)
            if value is not None:
                shapes[param] = tuple(int(d) for d in np.shape(value))
    return shapes


def _param_or_fixed(index: int | None, fixed: np.ndarray[Any, Any] | None) -> Operand:
    """A model parameter when the lowering recorded one, else the payload's fixed array (if any)."""
    if index is not None:
        return (Source.PARAM, index, None)
    return _NO_OPERAND if fixed is None else (Source.FIXED, 0, fixed)
