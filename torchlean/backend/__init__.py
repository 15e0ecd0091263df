"""The kernel-capsule system: vocabulary, contracts, registry, planner, audit, acceptance gate.

Depends on nothing else in torchlean and imports neither numpy nor torch (DESIGN.md §2).
Start from :func:`torchlean.backend.profiles.get`; :func:`accept` is the acceptance gate. The
submodules not imported here (``profiles``, ``report``, ``registry``, ``providers``, ...) load on
first attribute use, so ``torchlean.backend.report.audit_line`` works after ``import torchlean``.
"""

from torchlean.backend.acceptance import AcceptanceError, AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.errors import BindingError
from torchlean.backend.fields import BackendTypeError
from torchlean.backend.sealed import UnmintedError

__all__ = [
    "AcceptanceError",
    "AcceptedKernel",
    "BackendTypeError",
    "BindingError",
    "ExecutableKernel",
    "KernelHandler",
    "UnmintedError",
    "accept",
    "bind",
]

from typing import TYPE_CHECKING as _TYPE_CHECKING

if not _TYPE_CHECKING:  # mypy resolves submodules itself; at run time each loads on first use
    from torchlean.backend._submodules import module_dir as _module_dir
    from torchlean.backend._submodules import module_getattr as _module_getattr

    __getattr__ = _module_getattr(__name__)
    __dir__ = _module_dir(__name__)
