"""Shared fixtures of the native CUDA tests.

``emulation``: the host-emulation build of ``torchlean_native_ext`` (csrc/ compiled for the CPU,
own kernels run by the cooperative-thread emulator), built once per session; skipped, with the
reason, where no C++ compiler or ninja is available. ``cuda_device``: the first CUDA device;
skipped without one (tests using it are also marked ``cuda``).
"""

from __future__ import annotations

from collections.abc import Iterator
from types import ModuleType

import pytest
import torch

from torchlean.backend.providers.native_cuda import extension


@pytest.fixture(scope="session")
def emulation_module() -> ModuleType:
    try:
        return extension.load_host_emulation()
    except extension.NativeExtensionError as error:
        pytest.skip(f"host emulation build unavailable: {error}")


@pytest.fixture
def emulation(emulation_module: ModuleType) -> Iterator[ModuleType]:
    with extension.host_emulation() as module:
        module.emulation_set_schedule_seed(0)
        yield module
        module.emulation_set_schedule_seed(0)


@pytest.fixture(scope="session")
def cuda_device() -> torch.device:
    if not torch.cuda.is_available():
        pytest.skip("needs a CUDA device")
    extension.load_extension()
    return torch.device("cuda", torch.cuda.current_device())
