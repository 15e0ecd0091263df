"""TorchLean's own reverse-mode tape (DESIGN.md §1.5; anchor-runtime.md §1.1–1.3).

Every differentiable op executed while gradients are enabled appends one :class:`Node`: the op
name, one parent slot per input position (``None`` where the input does not require a gradient;
duplicates are meaningful, ``x * x`` has the same parent twice), the arrays the local VJP reads
(inputs and output, each with the version it had when it was saved), and the local rule.
A node's sequence number is drawn from a global counter when it is recorded, so a node is always
numbered after every node it depends on; processing the reachable nodes in decreasing sequence
number is the original's reverse loop over the tape (``size-1`` down to ``0``), restricted to the
nodes behind the output. The traversal is a loop, never recursion, so depth is bounded by memory
only (a 100 000-node chain is tested).

Gradient accumulation (anchor-runtime.md §1.2): one cotangent slot per reached node; the first
contribution is stored, later ones are added elementwise (``e + g``). A tensor read by ``k`` ops
(or ``k`` times by one, as ``x * x``) so receives a left fold of its ``k`` contributions in the
order the traversal reaches its consumers: decreasing sequence number (the typed-graph schedule's
reverse order, the same order), and input position order within one node. The order is fixed, so
a backward repeats bit for bit, but from three contributions on it is a float sum whose order
matters (float32 contributions ``1e8``, ``1``, ``-1e8`` sum to 0, not 1). This accumulation is
the tape's, under every profile, outside any kernel capsule. Arrays are tensor storage
(:mod:`torchlean.autograd.storage`): numpy arrays for CPU tensors, torch tensors for CUDA tensors,
where ``e + g`` is a torch op on the device; a contribution must have its parent's shape, dtype
and device. Contributions for parents that do not require a gradient are dropped. Leaves (tensors
with ``requires_grad=True`` and no node) receive the sum of their contributions (the same fold)
added to ``.grad`` once the traversal ends, as ``torch.Tensor.backward`` accumulates.

After ``backward`` the traversed nodes are freed (their saved arrays and parents are released)
unless ``retain_graph=True``; reaching a freed node raises :class:`AutogradError`. Saved arrays
carry the version of their tensor's :class:`VersionCounter`; an in-place write bumps the counter,
and a backward that needs an array whose version changed is refused (as PyTorch refuses). The
check is conservative: every saved input and the output are checked, whether or not the local rule
reads their values.
"""

from __future__ import annotations

import itertools
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING

import numpy as np

from torchlean._fork_locks import renew_in_forked_children
from torchlean._interrupts import DeferredSigint
from torchlean.autograd.storage import Storage, device_of, numpy_dtype
from torchlean.autograd.storage import add as add_storage
from torchlean.backend.errors import TorchLeanError

if TYPE_CHECKING:
    from torchlean.tensor import Tensor

__all__ = [
    "AutogradError",
    "LocalRule",
    "Node",
    "SavedArray",
    "VersionCounter",
    "run_backward",
]

Array = Storage
"""A saved array or cotangent: numpy on the CPU, a torch tensor on a CUDA device."""

LocalRule = Callable[[Array, tuple[Array | None, ...], Array], Sequence[Array | None]]
"""``rule(g, inputs, out) -> one cotangent per input`` (``None`` for non-differentiable inputs).

``g`` has the output's shape; each returned cotangent has its input's shape and dtype.
"""

_SEQUENCE = itertools.count()


class AutogradError(TorchLeanError):
    """The tape cannot produce the requested gradient (freed graph, in-place mutation, bad seed)."""


class VersionCounter:
    """A tensor storage's in-place write counter, shared by every tensor that views that storage."""

    __slots__ = ("value",)

    def __init__(self) -> None:
        self.value = 0

    def bump(self) -> None:
        """Record one in-place write."""
        self.value += 1

    def __reduce__(self) -> tuple[Callable[[int], VersionCounter], tuple[int]]:
        """``pickle`` at every protocol (0 and 1 refuse a slotted class without this; review77 F9)."""
        return _counter_at, (self.value,)


def _counter_at(value: int) -> VersionCounter:
    """A :class:`VersionCounter` at ``value`` (what an unpickled one is rebuilt with)."""
    counter = VersionCounter()
    counter.value = value
    return counter


class SavedArray:
    """An array kept for a local VJP together with its storage's version when it was saved."""

    __slots__ = ("array", "counter", "version")

    def __init__(self, array: Array, counter: VersionCounter) -> None:
        self.array = array
        self.counter = counter
        self.version = counter.value

    def unpack(self, node_name: str, what: str) -> Array:
        """Return the array, refusing if its storage was written in place since it was saved.

        Raises:
            AutogradError: naming the op, the saved operand and both versions.
        """
        if self.counter.value != self.version:
            raise AutogradError(
                f"autograd: the {what} saved by `{node_name}` for backward was modified in place "
                f"(now at version {self.counter.value}, saved at version {self.version}); backward "
                "is refused: the tape checks every input and output an op saved, whether or not its "
                "local rule reads it (torch checks only what its formula saved, and may accept this); "
                "call backward() before the in-place change, or run the forward again after it"
            )
        return self.array


class Node:
    """One recorded op: name, parents (per input position), saved arrays and the local rule."""

    __slots__ = (
        "_freed", "_input_names", "_out", "_rule", "_saved", "_walks", "dtype", "name", "parents", "seq",
        "shape",
    )

    def __init__(
        self,
        name: str,
        parents: tuple[Tensor | None, ...],
        saved: tuple[SavedArray | None, ...],
        out: SavedArray,
        rule: LocalRule,
        input_names: tuple[str, ...] = (),
    ) -> None:
        """``input_names``: what the refusal of an input modified in place calls each input
        position after its number (``input 3 (running_mean ...)``); ``()`` for numbers alone."""
        self.name = name
        self._input_names = input_names
        self.seq = next(_SEQUENCE)
        self.parents: tuple[Tensor | None, ...] = parents
        self.shape: tuple[int, ...] = tuple(out.array.shape)
        self.dtype: np.dtype[np.generic] = numpy_dtype(out.array)
        self._saved: tuple[SavedArray | None, ...] = saved
        self._out: SavedArray | None = out
        self._rule: LocalRule | None = rule
        self._freed = False
        self._walks = 0  # backward passes running through it: -1 one that frees it (see _walking)

    @property
    def freed(self) -> bool:
        """True once a backward without ``retain_graph`` released this node."""
        return self._freed

    def output_written(self) -> bool:
        """True when the output's storage was written in place since the op recorded it (the
        version check :meth:`apply` makes on the output; False once freed, as nothing is kept)."""
        out = self._out
        return out is not None and out.counter.value != out.version

    def _raise_freed(self) -> None:
        raise AutogradError(
            f"autograd: the graph behind this tensor was freed by an earlier backward() (node "
            f"`{self.name}`); pass retain_graph=True to the first backward() to traverse it twice"
        )

    def apply(self, g: Array) -> Sequence[Array | None]:
        """Evaluate the local rule at cotangent ``g`` after checking every saved version.

        Raises:
            AutogradError: the node was freed, or a saved array was modified in place.
        """
        rule, out = self._rule, self._out
        if rule is None or out is None:
            self._raise_freed()
            raise AssertionError("unreachable")
        # the version checks of SavedArray.unpack, inline: its message (and the f-string naming
        # the input) is built only for an array that was modified in place
        inputs: list[Array | None] = []
        for saved in self._saved:
            if saved is None:
                inputs.append(None)
            elif saved.counter.value == saved.version:
                inputs.append(saved.array)
            else:
                inputs.append(saved.unpack(self.name, self._input_label(len(inputs))))
        output = out.array if out.counter.value == out.version else out.unpack(self.name, "output")
        return rule(g, tuple(inputs), output)

    def _input_label(self, position: int) -> str:
        """``input <position>``, with its name where the op gave one (review236 F3)."""
        names = self._input_names
        return f"input {position} ({names[position]})" if position < len(names) else f"input {position}"

    def free(self) -> None:
        """Release saved arrays, the rule and the parent edges."""
        self._freed = True
        self._rule = None
        self._out = None
        self._saved = ()
        self.parents = ()


def _collect(root: Node) -> list[Node]:
    """Every node reachable from ``root`` (iterative DFS), in decreasing sequence number."""
    seen: set[int] = {id(root)}
    stack = [root]
    found: list[Node] = []
    while stack:
        node = stack.pop()
        if node.freed:
            node._raise_freed()
        found.append(node)
        for parent in node.parents:
            if parent is None:
                continue
            pnode = parent._node
            if pnode is not None and id(pnode) not in seen:
                seen.add(id(pnode))
                stack.append(pnode)
    found.sort(key=lambda n: n.seq, reverse=True)
    return found


def _check_contribution(node: Node, parent: Tensor, contribution: Array) -> None:
    held = parent._data
    if (
        type(contribution) is np.ndarray
        and type(held) is np.ndarray
        and contribution.shape == held.shape
        and contribution.dtype == held.dtype
    ):
        return  # host storage of the parent's shape and dtype: the common case, checked cheaply
    if contribution.shape != parent.shape:
        raise AutogradError(
            "autograd: gradient contribution has wrong shape for parent "
            f"(`{node.name}` gave {tuple(contribution.shape)}, the parent has {parent.shape})"
        )
    if numpy_dtype(contribution) != parent.dtype:
        raise AutogradError(
            "autograd: gradient contribution has wrong dtype for parent "
            f"(`{node.name}` gave {numpy_dtype(contribution)}, the parent has {parent.dtype})"
        )
    if device_of(contribution) != parent.device:
        raise AutogradError(
            "autograd: gradient contribution is on the wrong device for parent "
            f"(`{node.name}` gave one on {device_of(contribution)}, the parent is on {parent.device})"
        )


_WALKS = threading.RLock()
"""Guards :attr:`Node._walks`: which backward passes run through which nodes (review77 F2). A fork
waits for it, and the child gets a new, free one (:mod:`torchlean._fork_locks`); re-entrant, so
that the thread holding it may fork (from a signal handler) without waiting for itself (review142
F1, review145 F1, review146 F1)."""
renew_in_forked_children(__name__, "_WALKS")


def _walking(nodes: Sequence[Node], retain_graph: bool) -> None:
    """Register a backward pass through ``nodes``: one that frees them (not ``retain_graph``)
    must be the only one there, one that keeps them may share them with others that keep them.
    Two threads calling ``backward()`` on one graph both walked it (the freeing one releasing
    nodes under the other, or both adding their gradients: a doubled ``.grad``); the second now
    gets an error naming the walk that frees the graph, as a second ``backward()`` after the first
    gets the freed-graph error (torch: "Trying to backward through the graph a second time").
    The nodes are marked all or none: an exception while marking (a signal handler that raises)
    puts every node back as it was (review231 F1).

    Raises:
        AutogradError: a node is freed, being freed, or (for a freeing pass) walked by another.
    """
    with _WALKS:
        for node in nodes:
            if node._freed:
                node._raise_freed()
            if node._walks < 0:
                raise AutogradError(
                    f"autograd: a backward() that frees the graph behind this tensor is running through it "
                    f"(node `{node.name}`, in another thread); pass retain_graph=True to that one to "
                    "traverse the graph again"
                )
            if not retain_graph and node._walks > 0:
                raise AutogradError(
                    f"autograd: another backward() is running through the graph behind this tensor "
                    f"(node `{node.name}`, in another thread); a backward() without retain_graph frees "
                    "it, so it must come after the others"
                )
        before = [node._walks for node in nodes]
        try:
            for node, walks in zip(nodes, before, strict=True):
                node._walks = -1 if not retain_graph else walks + 1
        except BaseException:
            for node, walks in zip(nodes, before, strict=True):
                node._walks = walks
            raise


def _walked(nodes: Sequence[Node], retain_graph: bool, completed: bool) -> None:
    """Unregister a pass of :func:`_walking`; a freeing pass that completed frees the nodes. The
    new counts are worked out first and then set, again in full if an exception (a signal
    handler that raises) cuts the setting short."""
    with _WALKS:
        after = [0 if not retain_graph else node._walks - 1 for node in nodes]

        def unmark() -> None:
            for node, walks in zip(nodes, after, strict=True):
                if not retain_graph and completed:
                    node.free()
                node._walks = walks

        try:
            unmark()
        except BaseException:
            unmark()
            raise


def run_backward(
    root: Node, seed: Array, *, retain_graph: bool = False, order: Sequence[Node] | None = None
) -> None:
    """Propagate ``seed`` (the cotangent of ``root``'s output) to every reachable leaf's ``.grad``.

    A Ctrl-C (SIGINT, in the main thread) during the backward takes effect once it ends, its graph
    marked, walked, unmarked (freed, without ``retain_graph``) and its gradients stored, as torch's
    backward, which runs in C++, acts on it then: an interrupt in the middle left nodes marked for
    good, or a freed graph without its gradients (review230 F1, review231 F1/F5, review233 F1).
    Each press is handed on then, in order (:class:`~torchlean._interrupts.DeferredSigint`), so
    ``torchlean train``'s "Ctrl-C again stops at once" holds for two presses inside one backward
    (review232 F2).

    Args:
        root: the node that produced the tensor ``backward`` was called on.
        seed: cotangent with exactly the output's shape and dtype.
        retain_graph: keep the traversed nodes for another backward.
        order: a precomputed traversal (the typed-graph schedule's kernel nodes in reverse
            schedule order): it must list every node reachable from ``root``, each after every
            node that depends on it; nodes it lists that ``root`` does not reach get no cotangent
            and are skipped (and freed). ``None``: collect the reachable nodes by a DFS and sort
            them by decreasing sequence number.

    Raises:
        AutogradError: ``autograd: seed gradient shape mismatch for output`` (verbatim, original
            §1.2), a freed node, an in-place-modified saved array, or a contribution whose shape
            or dtype differs from its parent's.
    """
    if seed.shape != root.shape:
        raise AutogradError(
            f"autograd: seed gradient shape mismatch for output (seed {tuple(seed.shape)}, output "
            f"{root.shape})"
        )
    with DeferredSigint():  # the collection of the nodes too (review234 F2)
        nodes = _collect(root) if order is None else order
        _walking(nodes, retain_graph)
        completed = False
        leaves: dict[int, tuple[Tensor, Array]] = {}
        try:
            leaves = _propagate(root, seed, nodes)
            completed = True
        finally:
            try:
                _walked(nodes, retain_graph, completed)
            finally:
                if completed:
                    for leaf, total in leaves.values():
                        leaf._accumulate_grad(total)


def _propagate(root: Node, seed: Array, nodes: Sequence[Node]) -> dict[int, tuple[Tensor, Array]]:
    """The cotangents of :func:`run_backward`'s walk through ``nodes``: each reached leaf (by
    ``id``) with the sum of its contributions."""
    slots: dict[Node, Array] = {root: seed}
    leaves: dict[int, tuple[Tensor, Array]] = {}
    for node in nodes:
        g = slots.pop(node, None)
        if g is None:
            continue
        contributions = node.apply(g)
        if len(contributions) != len(node.parents):
            raise AutogradError(
                f"autograd: the local rule of `{node.name}` returned {len(contributions)} cotangents "
                f"for {len(node.parents)} inputs"
            )
        for parent, c in zip(node.parents, contributions, strict=True):
            if parent is None or c is None or not parent._requires_grad:
                continue
            _check_contribution(node, parent, c)
            pnode = parent._node
            if pnode is None:
                held = leaves.get(id(parent))
                leaves[id(parent)] = (parent, c if held is None else add_storage(held[1], c))
            else:
                prev = slots.get(pnode)
                slots[pnode] = c if prev is None else add_storage(prev, c)
    return leaves
