"""TorchLean's own autograd: the tape, gradient mode, dispatch of accepted kernels, eager sessions.

Depends on ``torchlean.backend`` and its providers (DESIGN.md §2); never on ``torch.autograd``.
"""

from torchlean.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from torchlean.autograd.tape import AutogradError

__all__ = ["AutogradError", "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]
