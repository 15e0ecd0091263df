"""TorchLean's own autograd: the tape, gradient mode, dispatch of accepted kernels, eager sessions.

Depends on ``torchlean.backend`` and its providers (DESIGN.md §2), ``spec`` and ``ir``, and on
``torchlean.tensor``, the Tensor it records: tensor, autograd and functional are one layer, whose
cycle runs through imports inside functions; nothing here imports ``nn``, ``optim`` or above
(``tests/backend/test_layering.py``). Never on ``torch.autograd``.
"""

from torchlean.autograd.grad_mode import enable_grad, is_grad_enabled, no_grad, set_grad_enabled
from torchlean.autograd.tape import AutogradError

__all__ = ["AutogradError", "enable_grad", "is_grad_enabled", "no_grad", "set_grad_enabled"]


from typing import TYPE_CHECKING as _TYPE_CHECKING

if not _TYPE_CHECKING:  # mypy resolves submodules itself; at run time each loads on first use
    from torchlean.backend._submodules import module_dir as _module_dir
    from torchlean.backend._submodules import module_getattr as _module_getattr

    __getattr__ = _module_getattr(__name__)
    __dir__ = _module_dir(__name__)
