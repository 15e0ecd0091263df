"""The opt-in ``aten`` provider: torch CPU forward kernels with TorchLean-owned backward passes."""
