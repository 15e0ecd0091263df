"""The native extension's sources ship with the package, where the runtime looks for them (review60 F1).

``extension.sources_dir()`` (``$TORCHLEAN_CSRC`` unset) must hold exactly the files the other tests
compile and read (``CSRC`` below, as in ``test_nvcc_compile.py`` and ``test_native_parity.py``),
byte for byte, and be the directory that the capsules' provenance names relative to the directory
holding the imported ``torchlean`` package; and pyproject's package data must list every file of
it, so that a wheel or an sdist carries them all. Before, the runtime looked in ``<site-packages>/csrc``
while the tests read the repository's ``csrc``, and nothing shipped the sources.
"""

from __future__ import annotations

import shutil
import tomllib
import zipfile
from pathlib import Path

import pytest

import torchlean
from torchlean.backend.providers.native_cuda import capsules, extension

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "torchlean" / "backend" / "providers" / "native_cuda" / "csrc"
PACKAGE = "torchlean.backend.providers.native_cuda"


def _files(root: Path) -> dict[str, bytes]:
    """Every file under ``root`` (relative POSIX path -> bytes), caches excluded."""
    return {
        path.relative_to(root).as_posix(): path.read_bytes()
        for path in sorted(root.rglob("*"))
        if path.is_file() and "__pycache__" not in path.parts
    }


def test_the_runtime_finds_the_sources_the_tests_read(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("TORCHLEAN_CSRC", raising=False)
    found = extension.sources_dir()
    tested = _files(CSRC)
    assert {"native_ops.cu", "bindings.cpp", "emu/native_ops_emu.cpp"} <= set(tested)
    assert _files(found) == tested
    # the provenance path, read from the directory that holds the imported package
    site = Path(torchlean.__file__).resolve().parents[1]
    assert (site / capsules.SOURCE).parent == found.resolve()
    assert (site / capsules.SOURCE).is_file()


def test_the_override_is_used_when_set(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    copy = tmp_path / "elsewhere"
    shutil.copytree(CSRC, copy)
    monkeypatch.setenv("TORCHLEAN_CSRC", str(copy))
    assert extension.sources_dir() == copy
    monkeypatch.setenv("TORCHLEAN_CSRC", "")  # empty: as unset
    shipped = Path(torchlean.__file__).resolve().parent / "backend" / "providers" / "native_cuda" / "csrc"
    assert extension.sources_dir().resolve() == shipped


def test_a_package_without_its_sources_says_how_to_get_them(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("TORCHLEAN_CSRC", raising=False)
    monkeypatch.setattr(extension.importlib.resources, "files", lambda package: tmp_path)
    with pytest.raises(extension.NativeExtensionError) as info:
        extension.sources_dir()
    assert str(info.value) == (
        f"the sources of torchlean_native_ext are not available: {tmp_path / 'csrc' / 'native_ops.cu'} "
        "does not exist (the installed package lacks them: reinstall torchlean, or set TORCHLEAN_CSRC "
        "to a directory holding them, such as a checkout's torchlean/backend/providers/native_cuda/csrc)"
    )


def test_a_package_imported_from_a_zip_file_names_the_override(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    archive = tmp_path / "torchlean.zip"
    with zipfile.ZipFile(archive, "w") as handle:
        handle.writestr("native_cuda/csrc/native_ops.cu", "")
    monkeypatch.delenv("TORCHLEAN_CSRC", raising=False)
    monkeypatch.setattr(
        extension.importlib.resources, "files", lambda package: zipfile.Path(archive, "native_cuda/")
    )
    with pytest.raises(extension.NativeExtensionError, match=r"not on the file system .*set TORCHLEAN_CSRC"):
        extension.sources_dir()


def test_the_package_data_lists_every_source() -> None:
    """pyproject's ``[tool.setuptools.package-data]`` patterns for the native-cuda package match
    exactly the files of ``csrc`` (plain globs relative to the package directory, as setuptools
    expands them), so a new source file of another kind cannot be left out of the wheel."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())
    patterns = config["tool"]["setuptools"]["package-data"][PACKAGE]
    assert all("**" not in pattern and pattern.startswith("csrc/") for pattern in patterns), patterns
    packaged = {
        path.relative_to(CSRC).as_posix() for pattern in patterns for path in CSRC.parent.glob(pattern)
    }
    assert packaged == set(_files(CSRC))
    needed = (*extension._CUDA_SOURCES, *extension._EMULATION_SOURCES, "native_ops.h", "kernels.cuh")
    assert set(needed) <= packaged
