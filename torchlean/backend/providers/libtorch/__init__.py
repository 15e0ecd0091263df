"""The `libtorch` provider package (capsule data in `capsules.py`; imports no numpy or torch)."""

from typing import TYPE_CHECKING as _TYPE_CHECKING

if not _TYPE_CHECKING:  # mypy resolves submodules itself; at run time each loads on first use

    from torchlean.backend._submodules import submodule as _submodule

    def __getattr__(name: str) -> object:
        """A public submodule of this package, imported on first use (PEP 562)."""
        return _submodule(__name__, name)
