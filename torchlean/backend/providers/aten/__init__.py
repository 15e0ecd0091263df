"""The opt-in ``aten`` provider: torch CPU kernels for the forwards and for TorchLean's own backward
rules (DESIGN.md §1.8)."""
