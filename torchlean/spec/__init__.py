"""Reference specifications of attention: masks, hard-masked softmax, standard and tiled attention.

Pure numpy and generic over the element type: floating arrays compute in their dtype, object
arrays of ``mpmath.mpf`` at mpmath's working precision (see :mod:`torchlean.spec._arith`).
``check_flash_attention`` compares the tiled (flash) algorithm with the standard one.
"""

from torchlean.spec._arith import as_mpf_array
from torchlean.spec.attention import scaled_dot_product_attention, scaled_dot_product_attention_backward
from torchlean.spec.checker import FlashCheckReport, FlashCheckRow, check_flash_attention
from torchlean.spec.errors import SpecTypeError, SpecValueError
from torchlean.spec.flash import (
    FlashAttentionConfig,
    flash_attention,
    flash_attention_backward,
    flash_attention_forward,
)
from torchlean.spec.masks import causal_mask, hard_masked_softmax

__all__ = [
    "FlashAttentionConfig",
    "FlashCheckReport",
    "FlashCheckRow",
    "SpecTypeError",
    "SpecValueError",
    "as_mpf_array",
    "causal_mask",
    "check_flash_attention",
    "flash_attention",
    "flash_attention_backward",
    "flash_attention_forward",
    "hard_masked_softmax",
    "scaled_dot_product_attention",
    "scaled_dot_product_attention_backward",
]
