"""Shared fixtures of the native CUDA tests.

``emulation``: the host-emulation build of ``torchlean_native_ext`` (csrc/ compiled for the CPU,
own kernels run by the cooperative-thread emulator), built once per session; skipped, with the
reason, only where a C++ compiler, ninja or the Python headers are missing (a build that fails is
an error of every test that uses it, so broken sources cannot pass as skips). ``emulated_cuda``:
CUDA sessions on that build (the test seam documented in ``dispatch.check_devices``).
``cuda_device``: the first CUDA device; skipped without one (tests using it are also marked
``cuda``).
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
import torch

from torchlean.backend.providers.native_cuda import extension


@pytest.fixture(scope="session")
def emulation_module() -> ModuleType:
    try:
        return extension.load_host_emulation()
    except extension.NativeToolchainError as error:  # a build that ran and failed is a failure
        pytest.skip(f"host emulation build unavailable: {error}")


@pytest.fixture
def emulation(emulation_module: ModuleType) -> Iterator[ModuleType]:
    with extension.host_emulation() as module:
        module.emulation_set_schedule_seed(0)
        yield module
        module.emulation_set_schedule_seed(0)


@pytest.fixture
def emulated_cuda(emulation: ModuleType, monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    """CUDA sessions on the host emulation: the session probe passes (as on a machine with CUDA)
    and a tensor placed on ``cuda`` gets CPU torch storage, what the emulation build computes on."""
    tensor_module = importlib.import_module("torchlean.tensor")
    monkeypatch.setattr(extension, "require_cuda", lambda: None)
    monkeypatch.setattr(tensor_module, "resolve_device", lambda d: "cpu" if str(d) == "cpu" else "cuda:0")
    monkeypatch.setattr(tensor_module, "_upload", lambda a, d: torch.from_numpy(np.array(a, copy=True)))
    yield


@pytest.fixture(scope="session")
def cuda_device() -> torch.device:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    extension.load_extension()
    return torch.device("cuda", torch.cuda.current_device())
