"""The audit that ``train`` and ``predict`` end with: every capsule the run used, then a ``note:``
on stderr for each op where the profile's preferred provider was refused."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from torchlean.backend import report
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.profiles import BackendProfile
from torchlean.trainer import RECORD_ORDERS, ExecutionMode

__all__ = ["ORDERS", "OUTSIDE_GRAPH", "RECORD_ORDERS", "order_words", "print_capsules_used"]

ORDERS: dict[ExecutionMode, str] = {
    ExecutionMode.EAGER: "first-use order",
    ExecutionMode.TYPED_GRAPH: "graph plan order",
}
"""What the header says the order of ``selected`` (:attr:`Trainer.selected
<torchlean.trainer.Trainer.selected>`) is, per execution mode. Eager: the session's selections,
each when its op first ran. Typed graph: the distinct kernels of the accepted graph plans in the
graphs' node order (the order the forward runs them), then, when some ran, those of ops run
eagerly outside the graph (:data:`OUTSIDE_GRAPH` follows), such as a dropout mask's
``bernoulli_mask``, which is drawn before each step's graph runs and so is listed last, where eager
execution lists it where the dropout layer first ran."""

OUTSIDE_GRAPH = ", then ops run outside the graph"
"""Follows :data:`ORDERS`' typed-graph words when some listed kernel ran outside the graph."""

# RECORD_ORDERS (torchlean.trainer's, re-exported): the --report-json records' ``capsules_order``,
# the order of their ``capsules`` list as ORDERS words it; a checkpoint records the same word


def order_words(execution: ExecutionMode, outside_graph: int = 0) -> str:
    """The header's order words: :data:`ORDERS` of ``execution``, with :data:`OUTSIDE_GRAPH`
    under typed-graph execution when ``outside_graph`` (the count of listed kernels run outside
    the graph: :attr:`Trainer.selected_outside_graph
    <torchlean.trainer.Trainer.selected_outside_graph>`) is not 0 (review63 F7)."""
    words = ORDERS[execution]
    if execution is ExecutionMode.TYPED_GRAPH and outside_graph:
        words += OUTSIDE_GRAPH
    return words


def print_capsules_used(
    selected: Sequence[AcceptedKernel],
    profile: BackendProfile,
    out: TextIO,
    execution: ExecutionMode,
    outside_graph: int = 0,
) -> tuple[str, ...]:
    """``backend capsules used (N, <order>):`` (:func:`order_words` of ``execution`` and
    ``outside_graph``, the count of those run outside a typed graph) and one audit line per kernel
    on ``out``, then :meth:`BackendProfile.preference_notes` of their ops on stderr, each as
    ``note: ...``; returns those notes."""
    print(f"backend capsules used ({len(selected)}, {order_words(execution, outside_graph)}):", file=out)
    for kernel in selected:
        print(report.audit_line(kernel.audit()), file=out)
    out.flush()  # the notes follow the audit on a terminal
    notes = profile.preference_notes([kernel.capsule.op for kernel in selected])
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return notes
