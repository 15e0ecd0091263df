"""``stubs/torchlean_native_ext.pyi`` agrees with the compiled extension, checked by ``mypy.stubtest``.

The CUDA build cannot be imported without a GPU, so stubtest runs against the host-emulation build
of the same ``csrc/bindings.cpp`` (``torchlean_native_ext_emu``, the session fixture
``emulation_module``; skipped without a C++ compiler, ninja or the Python headers). The stub is
copied into a temporary directory under the emulation module's name. The three names the
emulation build adds (:data:`EMULATION_ONLY`) are the only allowlist entries (stubtest also fails
when an entry goes unused).

What stubtest can check here: pybind11 functions carry no ``__text_signature__``, so
``inspect.signature`` fails on them and stubtest skips every parameter comparison. What it does
check for this module is the set of names: every ``def`` in the stub exists in the module
(``is not present at runtime``), every public name of the module is in the stub (``is not present
in stub``), and each stub function is a function at runtime. The argument names and their order
are checked against ``csrc/bindings.cpp`` by ``test_native_parity.test_stub_matches_the_bindings``;
argument types are checked by ``mypy --strict`` on the callers. ``torch`` is not followed
(``follow_imports = skip``): stubtest compares no types here, and analysing torch costs ~20 s.
``test_stubtest_reports_drift`` runs stubtest on altered copies of the stub, and also records that a
dropped parameter goes unnoticed (the limit above).
"""

from __future__ import annotations

import contextlib
import io
import sys
from pathlib import Path
from types import ModuleType

import pytest
from mypy import stubtest

from torchlean.backend.providers.native_cuda import extension

STUB = Path(__file__).resolve().parents[2] / "stubs" / "torchlean_native_ext.pyi"
EMULATION_ONLY = (
    "emulation_block_vote",
    "emulation_launch_with_shared_memory",
    "emulation_set_schedule_seed",
    "emulation_set_shared_memory_limit",
    "emulation_take_largest_shared_memory",
)


def _stubtest(
    stubs: dict[str, str], runtime: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> tuple[int, list[str]]:
    """Run stubtest once over ``stubs`` (module name -> stub text); every module name is served by
    ``runtime`` through ``sys.modules``. Returns the exit code and the concise error lines."""
    for name, text in stubs.items():
        (tmp_path / f"{name}.pyi").write_text(text)
        monkeypatch.setitem(sys.modules, name, runtime)
    config = tmp_path / "mypy.ini"
    config.write_text(f"[mypy]\nmypy_path = {tmp_path}\n\n[mypy-torch.*]\nfollow_imports = skip\n")
    allowlist = tmp_path / "allowlist.txt"
    allowlist.write_text("".join(f"{name}.{only}\n" for name in stubs for only in EMULATION_ONLY))
    args = [*stubs, "--concise", "--allowlist", str(allowlist), "--mypy-config-file", str(config)]
    output = io.StringIO()
    with contextlib.redirect_stdout(output):
        code = stubtest.test_stubs(stubtest.parse_options(args))
    return code, output.getvalue().splitlines()


def _altered(old: str, new: str) -> str:
    text = STUB.read_text()
    assert text.count(old) == 1, f"{old!r} must occur once in {STUB.name}"
    return text.replace(old, new)


def test_stub_matches_the_emulation_build(
    emulation_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    name = emulation_module.__name__
    assert name == extension.EMULATION_NAME
    assert all(callable(getattr(emulation_module, only)) for only in EMULATION_ONLY)
    code, lines = _stubtest({name: STUB.read_text()}, emulation_module, tmp_path, monkeypatch)
    assert (code, lines) == (0, [])


def test_stubtest_reports_drift(
    emulation_module: ModuleType, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """One stubtest run over three altered copies: a function dropped from the stub, a function
    renamed in the stub, and a parameter dropped (not seen: no runtime signatures)."""
    stubs = {
        "drift_dropped": _altered("def relu_forward(x: Tensor) -> Tensor: ...\n", ""),
        "drift_renamed": _altered("def matmul_forward(", "def matmul_fwd("),
        "drift_parameter": _altered(
            "def matmul_forward(a: Tensor, b: Tensor)", "def matmul_forward(a: Tensor)"
        ),
    }
    code, lines = _stubtest(stubs, emulation_module, tmp_path, monkeypatch)
    assert code == 1
    assert sorted(lines) == [
        "drift_dropped.relu_forward is not present in stub",
        "drift_renamed.matmul_forward is not present in stub",
        "drift_renamed.matmul_fwd is not present at runtime",
    ]
