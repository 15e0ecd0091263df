"""A tensor's lineage: the accepted kernels of the recorded ops behind it, read off the tape.

:attr:`Tensor.produced_by <torchlean.tensor.Tensor.produced_by>` names the kernel of the *last*
op only. :func:`lineage` walks the tape behind a tensor (the nodes that ``backward()`` would
traverse) and returns the :class:`~torchlean.backend.acceptance.AcceptedKernel` of each recorded
op, in recording order. It reads only what the tape already holds (each node's parent tensors,
whose ``produced_by`` is the kernel that recorded the node), so recording an op costs nothing
more; the price is that it sees exactly what the tape sees, no more:

* an op records a node only when gradients are enabled, the op is differentiable and one of
  its inputs requires a gradient. Ops run under ``no_grad()``, or on inputs none of which
  requires a gradient, leave no node, and the walk stops there. For a tensor without a node
  the result is ``(t.produced_by,)``, or ``()`` when that is ``None`` (data, a gradient, a
  parameter, values written by an optimizer);
* a node keeps an edge only to the inputs that require a gradient: an input that does not (a
  dropout mask, a target, a constant, an activation computed under ``no_grad()``) is not
  followed, so the kernels that computed it are not listed. The two seeded random sources
  (``rand_uniform``, ``bernoulli_mask``) are forward-only: they never record a node, so they
  appear only as the result of ``lineage()`` on their own output;
* a leaf reached on the walk (a tensor that requires a gradient and has no node, such as
  ``t.detach().requires_grad_()``) ends it; its ``produced_by`` is not listed (``detach()`` cuts
  the history, as in torch);
* the kernels are forward kernels. ``t.backward()`` runs the VJP of each of them (the capsule's
  VJP mode says who wrote it) and sums contributions in the tape, outside any capsule; a
  gradient (``x.grad``) has no node and no ``produced_by``, so its lineage is ``()``.

torch's counterpart is walking ``t.grad_fn.next_functions``; torchlean's ``grad_fn`` is the
recorded op's name, a string, so this function is the way to walk the graph.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from torchlean.autograd.tape import AutogradError, Node
from torchlean.backend.acceptance import AcceptedKernel

if TYPE_CHECKING:
    from torchlean.tensor import Tensor

__all__ = ["lineage"]


def lineage(t: Tensor) -> tuple[AcceptedKernel, ...]:
    """The accepted kernels of the recorded ops that ``t``'s values depend on, in recording order.

    One entry per recorded op reached from ``t`` through the tape, each op once (``x * x`` and a
    value read by two ops are walked once), ordered by when the op ran, so ``t``'s own op is
    last; a kernel that ran several ops (two ``relu`` layers) appears once per op
    (``list(dict.fromkeys(lineage(t)))`` keeps the distinct ones). Eager and typed-graph
    execution record the same nodes, so both give the same lineage. Without a tape node the
    result is ``(t.produced_by,)`` or ``()``; the module docstring lists what the tape does not
    hold (ops run without a tape, inputs that do not require a gradient, the forward-only random
    ops, leaves). torch has no counterpart returning kernels (``grad_fn.next_functions`` walks
    backward nodes).

    Args:
        t: a :class:`~torchlean.tensor.Tensor` of any shape, dtype and device.

    Returns:
        A tuple of :class:`~torchlean.backend.acceptance.AcceptedKernel`; ``lineage(t)[-1] is
        t.produced_by`` whenever ``t`` has a node.

    Raises:
        TensorTypeError: ``t`` is not a torchlean Tensor (also a ``TypeError``).
        AutogradError: a ``backward()`` without ``retain_graph=True`` freed the graph behind ``t``
            (call ``lineage()`` before it, or pass ``retain_graph=True``); or a tensor on the walk
            was written in place (under ``no_grad()``) after its op recorded it, so its values
            are no longer that kernel's (``backward()`` refuses that graph too).
    """
    from torchlean.tensor import Tensor, TensorTypeError, operand_type

    if not isinstance(t, Tensor):
        raise TensorTypeError(
            f"lineage: expected a torchlean Tensor, got {operand_type(t)} (accepted: a torchlean Tensor; "
            "an op's result, data, a parameter)"
        )
    root = t._node
    if root is None:
        kernel = t.produced_by
        return () if kernel is None else (kernel,)
    found: list[tuple[int, AcceptedKernel]] = []
    seen: set[int] = {id(root)}
    stack: list[tuple[Tensor, Node]] = [(t, root)]
    while stack:
        tensor, node = stack.pop()
        found.append((node.seq, _kernel_of(tensor, node)))
        for parent in node.parents:
            if parent is None:
                continue
            pnode = parent._node
            if pnode is not None and id(pnode) not in seen:
                seen.add(id(pnode))
                stack.append((parent, pnode))
    found.sort(key=lambda entry: entry[0])
    return tuple(kernel for _, kernel in found)


def _kernel_of(tensor: Tensor, node: Node) -> AcceptedKernel:
    """The kernel that recorded ``node``: ``tensor``'s (the node's output) ``produced_by``, when
    the graph is still there and the output's storage is as the op left it.

    Raises:
        AutogradError: the node was freed, or its output was written in place since.
    """
    if node.freed:
        raise AutogradError(
            f"lineage: the graph behind this tensor was freed by an earlier backward() (node "
            f"`{node.name}`); call lineage() before backward(), or pass retain_graph=True to it"
        )
    kernel = tensor.produced_by
    if node.output_written() or kernel is None:
        raise AutogradError(
            f"lineage: the output of `{node.name}` was written in place after the op recorded it, so "
            "its values are no longer that kernel's and the tape cannot say which kernels computed "
            "them (backward() through it is refused too); read produced_by for the current values"
        )
    return kernel
