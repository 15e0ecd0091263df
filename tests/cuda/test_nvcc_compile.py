"""Every CUDA source in ``csrc/`` compiles with ``nvcc -c`` against the installed torch headers.

Runs wherever ``nvcc`` is on PATH (no GPU needed; skipped otherwise). Flags: the oldest C++
standard the installed torch headers accept (``-std=c++17``, as ``torch.utils.cpp_extension``
passed up to torch 2.11, the GPU machine's; ``-std=c++20`` where ``ATen/ATen.h`` requires it, as
from torch 2.14), the defines and ``--expt-relaxed-constexpr`` that ``torch.utils.cpp_extension``
passes to nvcc, torch's include paths and ``csrc``. Besides succeeding, the compile must not warn
about our own files (warnings from torch's headers are theirs).
"""

from __future__ import annotations

import shutil
import subprocess
from pathlib import Path

import pytest
from torch.utils import cpp_extension

CSRC = Path(__file__).resolve().parents[2] / "csrc"
SOURCES = sorted(CSRC.rglob("*.cu"))


def cpp_standard() -> str:
    """``c++20`` when the installed torch's ``ATen/ATen.h`` refuses an older standard, else
    ``c++17``."""
    for root in cpp_extension.include_paths():
        header = Path(root) / "ATen" / "ATen.h"
        if header.is_file():
            return "c++20" if "C++20 or later" in header.read_text() else "c++17"
    raise AssertionError(f"ATen/ATen.h is in none of {cpp_extension.include_paths()}")


def test_there_are_cuda_sources() -> None:
    assert [p.relative_to(CSRC).as_posix() for p in SOURCES] == ["native_ops.cu"]


@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc is not on PATH")
@pytest.mark.parametrize("source", SOURCES, ids=[p.name for p in SOURCES])
def test_nvcc_compiles(source: Path, tmp_path: Path) -> None:
    includes = [f"-I{path}" for path in (*cpp_extension.include_paths(), str(CSRC))]
    command = [
        "nvcc",
        "-c",
        f"-std={cpp_standard()}",
        *cpp_extension.COMMON_NVCC_FLAGS,
        *includes,
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
    assert (tmp_path / f"{source.stem}.o").stat().st_size > 0
