"""IEEE float32 for torch's CUDA libraries during a launch: TF32 off in cuBLAS and cuDNN.

torch lets a process run float32 matmuls and convolutions in TF32 (10 mantissa bits, about 1e-3
relative error) on Ampere and later GPUs: ``torch.set_float32_matmul_precision("high")``,
``torch.backends.cuda.matmul.allow_tf32 = True`` (the legacy flags), or, from torch 2.9,
``torch.backends.cuda.matmul.fp32_precision = "tf32"`` (the API torch recommends). The capsules
whose value claims are IEEE float32 (``native_cuda.matmul``, ``linear``, ``conv``,
``conv_transpose``, ``fft_fno``, and ``torchlean.composed_attention``'s matmuls) run under
:func:`ieee_float32` whatever the process chose.

Where torch has the ``fp32_precision`` settings they are saved, set to ``"ieee"`` and restored;
reading the legacy ``allow_tf32`` flags after a user has set the new API raises ``RuntimeError``
in torch ("you have used mix of the legacy and new APIs", review112 F1). A torch without those
settings (an older release the ``torch>=2.8`` pin admits) gets its legacy flags saved and set.
The settings are process-global, as torch's are: another thread launching torch matmuls
meanwhile runs them under IEEE too.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import torch

__all__ = ["ieee_float32"]


@contextlib.contextmanager
def ieee_float32() -> Iterator[None]:
    """TF32 off in cuBLAS matmuls and cuDNN convolutions inside the block, the process's own
    settings restored on leaving it (also when the block raises). Takes no arguments and raises
    nothing of its own."""
    matmul = torch.backends.cuda.matmul
    conv: Any = getattr(torch.backends.cudnn, "conv", None)  # set up at run time: not in the stubs
    if hasattr(matmul, "fp32_precision") and hasattr(conv, "fp32_precision"):  # the newer API
        saved = (matmul.fp32_precision, conv.fp32_precision)
        matmul.fp32_precision = "ieee"
        conv.fp32_precision = "ieee"
        try:
            yield
        finally:
            matmul.fp32_precision, conv.fp32_precision = saved
        return
    legacy = (matmul.allow_tf32, torch.backends.cudnn.allow_tf32)
    matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    try:
        yield
    finally:
        matmul.allow_tf32, torch.backends.cudnn.allow_tf32 = legacy
