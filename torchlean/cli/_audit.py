"""The audit that ``train`` and ``predict`` end with: every capsule the run used, then a ``note:``
on stderr for each op where the profile's preferred provider was refused."""

from __future__ import annotations

import sys
from collections.abc import Sequence
from typing import TextIO

from torchlean.backend import report
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.profiles import BackendProfile

__all__ = ["print_capsules_used"]


def print_capsules_used(
    selected: Sequence[AcceptedKernel], profile: BackendProfile, out: TextIO
) -> tuple[str, ...]:
    """``backend capsules used (N, first-use order):`` and one audit line per kernel on ``out``,
    then :meth:`BackendProfile.preference_notes` of their ops on stderr, each as ``note: ...``;
    returns those notes."""
    print(f"backend capsules used ({len(selected)}, first-use order):", file=out)
    for kernel in selected:
        print(report.audit_line(kernel.audit()), file=out)
    out.flush()  # the notes follow the audit on a terminal
    notes = profile.preference_notes([kernel.capsule.op for kernel in selected])
    for note in notes:
        print(f"note: {note}", file=sys.stderr)
    return notes
