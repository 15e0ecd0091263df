"""The error raised by the canonical IR (graph structure, shapes, evaluation).

Messages are the original's (anchor-runtime.md §4.3, anchor-backend.md §2.8) where one exists.
"""

from __future__ import annotations

from torchlean.backend.errors import TorchLeanError

__all__ = ["IRError"]


class IRError(TorchLeanError, ValueError):
    """An IR graph is ill-formed, ill-shaped, or cannot be evaluated (missing payload, bad input)."""
