"""The audit that ``train`` and ``predict`` end with: every capsule the run used, then a ``note:``
on stderr for each op where the profile's preferred provider was refused."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from torchlean.backend import report
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.profiles import BackendProfile
from torchlean.trainer import ExecutionMode

__all__ = ["ORDERS", "print_capsules_used"]

ORDERS: dict[ExecutionMode, str] = {
    ExecutionMode.EAGER: "first-use order",
    ExecutionMode.TYPED_GRAPH: "graph plan order, then ops run outside the graph",
}
"""What the header says the order of ``selected`` (:attr:`Trainer.selected
<torchlean.trainer.Trainer.selected>`) is, per execution mode. Eager: the session's selections,
each when its op first ran. Typed graph: the distinct kernels of the accepted graph plans in the
graphs' node order (the order the forward runs them), then those of ops run eagerly outside the
graph, such as a dropout mask's ``bernoulli_mask``, which is drawn before each step's graph runs
and so is listed last, where eager execution lists it where the dropout layer first ran."""


def print_capsules_used(
    selected: Sequence[AcceptedKernel], profile: BackendProfile, out: TextIO, execution: ExecutionMode
) -> tuple[str, ...]:
    """``backend capsules used (N, <order>):`` (:data:`ORDERS` of ``execution``) and one audit line
    per kernel on ``out``, then :meth:`BackendProfile.preference_notes` of their ops on stderr,
    each as ``note: ...``; returns those notes."""
    print(f"backend capsules used ({len(selected)}, {ORDERS[execution]}):", file=out)
    for kernel in selected:
        print(report.audit_line(kernel.audit()), file=out)
    out.flush()  # the notes follow the audit on a terminal
    notes = profile.preference_notes([kernel.capsule.op for kernel in selected])
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return notes
