"""The kernel-capsule system: vocabulary, contracts, registry, planner, audit, acceptance gate.

Depends on nothing else in torchlean and imports neither numpy nor torch (DESIGN.md §2).
Start from :func:`torchlean.backend.profiles.get`; :func:`accept` is the acceptance gate.
"""

from torchlean.backend.acceptance import AcceptanceError, AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind

__all__ = ["AcceptanceError", "AcceptedKernel", "ExecutableKernel", "KernelHandler", "accept", "bind"]
