"""The command line's advice to run a profile of another device than the CPU with eager
execution, as typed-graph execution runs on the CPU only: offered as a way to run here only when
this machine can run that device (review151 L1: on a machine without CUDA, the advice led to the
next refusal)."""

from __future__ import annotations

from torchlean.autograd.session import validate_for_execution
from torchlean.backend.errors import SessionError
from torchlean.backend.profiles import BackendProfile

__all__ = ["eager_alternative"]


def eager_alternative(profile: BackendProfile, spelled: str) -> str:
    """``; or --execution eager with {spelled}, where {device} runs`` when a session of
    ``profile`` can open here (:func:`~torchlean.autograd.session.validate_for_execution`), else
    ``; or, on a machine where {device} runs (this one cannot), --execution eager with {spelled}``;
    ``spelled`` names the profile as the caller's message does (``--profile checked_cuda``)."""
    device = profile.policy.device.label
    try:
        validate_for_execution(profile)
    except SessionError:
        return f"; or, on a machine where {device} runs (this one cannot), --execution eager with {spelled}"
    return f"; or --execution eager with {spelled}, where {device} runs"
