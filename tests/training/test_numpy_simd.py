"""The environment block records numpy's SIMD level (review109 F1). numpy picks its ``exp``,
``log``, ``tanh`` and ``sin`` kernels by the CPU's SIMD level at run time, and they round
differently, so the ``reference`` kernels' bits (and ``checked_cpu`` runs) depend on it; a resume
under another level is noted as one under other software is. Oracles: ``np.show_runtime()``'s
printed ``simd_extensions``, and a subprocess with numpy's ``NPY_ENABLE_CPU_FEATURES``."""

from __future__ import annotations

import ast
import contextlib
import io
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli, ok
from test_environment_review64 import edited

from torchlean import checkpoint, provenance

SMALL = ("--dataset", "iris", "--hidden", "4", "--epochs", "1")


def software_note(path: Path, changed: str) -> str:
    """The ``--resume`` note on other software naming ``changed``."""
    return (f"note: the run in {path} was written under other software than this one runs under ({changed}), "
            "so the resumed run may not be bit for bit the uninterrupted one")


def _shown_by_numpy() -> str:
    """The baseline and found SIMD extensions as ``np.show_runtime()`` prints them."""
    printed = io.StringIO()
    with contextlib.redirect_stdout(printed):
        np.show_runtime()  # type: ignore[no-untyped-call]
    text = printed.getvalue()
    lists = [ast.literal_eval(re.search(rf"'{key}': (\[[^\]]*\])", text).group(1))  # type: ignore[union-attr]
             for key in ("baseline", "found")]
    return " ".join(lists[0] + lists[1])


def test_the_environment_records_numpys_simd_level_as_numpy_reports_it() -> None:
    assert provenance.numpy_simd() == _shown_by_numpy()
    block = provenance.environment(["x"])
    assert block["numpy_simd"] == _shown_by_numpy() and list(block).index("numpy_simd") == 4


def test_a_cpu_with_fewer_features_is_another_level() -> None:
    """numpy's own switch stands in for an older CPU: only the baseline and the first dispatch
    target left on (where numpy has dispatch targets at all)."""
    umath = pytest.importorskip("numpy._core._multiarray_umath")  # numpy 2's name

    baseline, dispatch = list(umath.__cpu_baseline__), list(umath.__cpu_dispatch__)
    on = [target for target in dispatch if umath.__cpu_features__.get(target)]
    if len(on) < 2:
        pytest.skip(f"this CPU runs numpy at one level ({on})")
    env = {**os.environ, "NPY_ENABLE_CPU_FEATURES": " ".join([*baseline, on[0]])}
    code = "from torchlean import provenance; print(provenance.numpy_simd())"
    older = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert older.stdout.strip() == " ".join([*baseline, on[0]]) != provenance.numpy_simd()


def test_a_resume_under_another_simd_level_is_noted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    saved = tmp_path / "m.npz"
    ok(capsys, *SMALL, "--save", str(saved))
    assert checkpoint.load(saved).environment["numpy_simd"] == provenance.numpy_simd()  # type: ignore[index]

    other = edited(saved, tmp_path / "o.npz", lambda env: env.update(numpy_simd="X86_V2"))
    code, _, err = cli(capsys, "train", "--resume", str(other), "--epochs", "2")
    assert code == 0
    assert software_note(other, f"numpy's SIMD level X86_V2 -> {provenance.numpy_simd()}, whose exp, log "
                         "and tanh kernels round otherwise") in err.splitlines()
    earlier = edited(saved, tmp_path / "e.npz", lambda env: env.pop("numpy_simd"))  # before it was recorded
    assert checkpoint.load(earlier).environment["numpy_simd"] is None  # type: ignore[index]
    code, _, err = cli(capsys, "train", "--resume", str(earlier), "--epochs", "2")
    assert code == 0 and "other software" not in err


# ------------------------------------------------------ torch's CPU capability (review109 F1 rest)


def test_the_environment_records_torchs_cpu_capability_for_profiles_with_torch_cpu_kernels() -> None:
    """torch picks its CPU kernels (``DEFAULT``, ``AVX2``, ``AVX512``) by the CPU as numpy does, so
    ``fast_cpu`` bits depend on it: recorded for a CPU profile with aten or LibTorch capsules,
    ``None`` for ``checked_cpu`` (no torch kernel) and without a profile. Oracles: torch's own
    report, and a subprocess under torch's ``ATEN_CPU_CAPABILITY`` switch."""
    import torch

    level = torch.backends.cpu.get_cpu_capability()
    for profile in ("fast_cpu", "libtorch_forward_cpu"):
        assert provenance.environment(["x"], profile)["torch_cpu_capability"] == level
    assert provenance.environment(["x"], "checked_cpu")["torch_cpu_capability"] is None
    assert provenance.environment(["x"])["torch_cpu_capability"] is None
    code = ("from torchlean import provenance as p; "
            "print(p.environment(['x'], 'fast_cpu')['torch_cpu_capability'])")
    env = {**os.environ, "ATEN_CPU_CAPABILITY": "default"}
    lower = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert lower.stdout.strip() == "DEFAULT"
    code = ("import sys; from torchlean import provenance as p; p.environment(['x'], 'checked_cpu'); "
            "print('torch' in sys.modules)")
    imported = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert imported.stdout.strip() == "False"  # checked_cpu's environment imports no torch


def test_a_resume_under_another_torch_cpu_capability_is_noted(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    import torch

    saved = tmp_path / "m.npz"
    ok(capsys, *SMALL, "--profile", "fast_cpu", "--save", str(saved))
    level = torch.backends.cpu.get_cpu_capability()
    assert checkpoint.load(saved).environment["torch_cpu_capability"] == level  # type: ignore[index]
    other_level = "AVX2" if level != "AVX2" else "DEFAULT"
    other = edited(saved, tmp_path / "o.npz", lambda env: env.update(torch_cpu_capability=other_level))
    code, _, err = cli(capsys, "train", "--resume", str(other), "--epochs", "2")
    assert code == 0
    assert software_note(other, f"torch's CPU capability {other_level} -> {level}, whose kernels round "
                         "otherwise") in err.splitlines()
    code, _, err = cli(capsys, "train", "--resume", str(saved), "--epochs", "2")
    assert code == 0 and "other software" not in err


def test_the_resume_note_escapes_what_the_checkpoint_recorded(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review113 F8: recorded values reached the terminal as written: an edited block's line break
    and escape sequence split the note and coloured the terminal; they are shown escaped, as
    ``inspect`` shows them."""
    saved = tmp_path / "m.npz"
    ok(capsys, *SMALL, "--save", str(saved))
    forged = edited(saved, tmp_path / "e.npz", lambda env: env.update(numpy_simd="X86_V2\n\x1b[31m"))
    code, _, err = cli(capsys, "train", "--resume", str(forged), "--epochs", "2")
    assert code == 0 and "\x1b" not in err
    assert f"(numpy's SIMD level X86_V2\\n\\x1b[31m -> {provenance.numpy_simd()}, whose" in err
