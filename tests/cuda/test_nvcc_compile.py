"""Every CUDA source in ``torchlean/backend/providers/native_cuda/csrc/`` compiles with ``nvcc -c``
against the installed torch headers.

Runs wherever ``nvcc`` is on PATH (no GPU needed; skipped otherwise), once per C++ standard that
``torch.utils.cpp_extension`` builds with: ``-std=c++17`` (torch 2.11, the GPU machine's; skipped
where the installed torch's ``ATen/ATen.h`` requires C++20, as from torch 2.14) and ``-std=c++20``
(torch 2.13 on). Other flags: the defines and ``--expt-relaxed-constexpr`` that
``torch.utils.cpp_extension`` passes to nvcc, torch's include paths and ``csrc``, and the code of
the GPU the device checks run on (sm_90, an H200; nvcc's default would be sm_75) with ptxas's
resource report. Besides succeeding, the compile must not warn about our own files (warnings from
torch's headers are theirs), and no kernel may spill registers to local memory (the tiled
attention kernels are sized to fit 256 threads' registers).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from torch.utils import cpp_extension

CSRC = Path(__file__).resolve().parents[2] / "torchlean/backend/providers/native_cuda/csrc"
SOURCES = sorted(CSRC.rglob("*.cu"))
SPILL_FREE = re.compile(r"\b0 bytes spill stores, 0 bytes spill loads")


def headers_need_cpp20() -> bool:
    """Whether the installed torch's ``ATen/ATen.h`` refuses a standard older than C++20 (its
    ``#error C++20 or later compatible compiler is required``)."""
    for root in cpp_extension.include_paths():
        header = Path(root) / "ATen" / "ATen.h"
        if header.is_file():
            return "C++20 or later" in header.read_text()
    raise AssertionError(f"ATen/ATen.h is in none of {cpp_extension.include_paths()}")


def test_there_are_cuda_sources() -> None:
    assert [p.relative_to(CSRC).as_posix() for p in SOURCES] == ["native_ops.cu"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("standard", ["c++17", "c++20"])
@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_nvcc_compiles(source: Path, standard: str, tmp_path: Path) -> None:
    if standard == "c++17" and headers_need_cpp20():
        pytest.skip("this torch's headers need C++20")
    includes = [f"-I{path}" for path in (*cpp_extension.include_paths(), str(CSRC))]
    if not any(Path(path, "c10/cuda/impl/cuda_cmake_macros.h").is_file()
               for path in cpp_extension.include_paths()):
        # a CPU build of torch ships c10/cuda's headers without the header its CMake generates
        # (export macros for Windows DLLs only); c10 has this switch for builds without it
        includes.append("-DC10_CUDA_NO_CMAKE_CONFIGURE_FILE")
    command = [
        "nvcc",
        "-c",
        f"-std={standard}",
        *cpp_extension.COMMON_NVCC_FLAGS,
        *includes,
        "-gencode=arch=compute_90,code=sm_90",
        "-Xptxas=-v",
        "-Xcompiler",
        "-Wall",
        str(source),
        "-o",
        str(tmp_path / f"{source.stem}.o"),
    ]
    done = subprocess.run(command, capture_output=True, text=True, timeout=900, check=False)
    log = done.stdout + done.stderr
    assert done.returncode == 0, log[-8000:]
    ours = [line for line in log.splitlines() if "warning" in line and str(CSRC) in line]
    assert not ours, "\n".join(ours)
    usage = [line for line in log.splitlines() if "spill stores" in line]
    assert usage, log[-4000:]  # ptxas reported each kernel's resources
    spills = [line.strip() for line in usage if not SPILL_FREE.search(line)]
    assert not spills, "\n".join(spills)
    assert (tmp_path / f"{source.stem}.o").stat().st_size > 0
