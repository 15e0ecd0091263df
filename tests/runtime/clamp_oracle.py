"""torch.clamp's gradient at its bounds, by torch version (shared by the clamp VJP suites).

torchlean's clamp VJPs (reference, aten, native-cuda) pass ``g`` through where
``lo <= x <= hi`` (bounds inclusive) and give 0 elsewhere, NaN included: torch.clamp's rule up to
torch 2.13. torch 2.14 gives 0 at a bound (``test_clamp_oracle_is_torchs_rule_by_version``)."""

from __future__ import annotations

import torch

TORCH_VERSION = tuple(int(part) for part in torch.__version__.split("+")[0].split(".")[:2])
TORCH_CLAMP_ZERO_AT_BOUNDS = TORCH_VERSION >= (2, 14)
"""Whether the installed torch.clamp's gradient is 0 at a bound (torch 2.14 on), not ``g``."""


def clamp_inclusive(t: torch.Tensor, lo: float, hi: float) -> torch.Tensor:
    """``torch.clamp(t, lo, hi)`` whose autograd gradient is ``g`` where ``lo <= t <= hi`` and 0
    elsewhere (a ``torch.where`` of the comparisons, no clamp backward): the oracle of the clamp
    VJP tests on every torch version."""
    inside = torch.logical_and(t >= lo, t <= hi)
    return torch.where(inside, t, t.detach().clamp(lo, hi))
