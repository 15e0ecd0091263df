"""The opt-in ``aten`` provider: torch CPU kernels for the forwards and for TorchLean's own backward
rules (DESIGN.md §1.8)."""

from typing import TYPE_CHECKING as _TYPE_CHECKING

if not _TYPE_CHECKING:  # mypy resolves submodules itself; at run time each loads on first use
    from torchlean.backend._submodules import module_dir as _module_dir
    from torchlean.backend._submodules import module_getattr as _module_getattr

    __getattr__ = _module_getattr(__name__)
    __dir__ = _module_dir(__name__)
