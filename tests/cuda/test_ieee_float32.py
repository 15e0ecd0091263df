"""``ieee_float32`` (native_cuda/float32.py) keeps the IEEE float32 capsules off TF32 whatever the
process chose, through torch's legacy flags or its ``fp32_precision`` API, and leaves the
process's choice as it found it (review112 F1: the old guard read the legacy ``allow_tf32``
flags, which raises in torch once the new API was used, so every native matmul, linear, conv and
FFT failed). ``torchlean.composed_attention`` runs its matmuls under it too (review112 F5).

torch's flags are settable on a CPU build, so this runs everywhere. Oracles: what torch's cuBLAS
and cuDNN convolution code read (the new API's resolved ``fp32_precision`` of ``cuda.matmul`` and
``cudnn.conv``), and every reading of the flags torch offers, legacy ones included, taken before
and after the guard in a fresh process per setup (the flags are process-wide)."""

from __future__ import annotations

import json
import subprocess
import sys
from collections.abc import Callable
from types import ModuleType
from typing import Any

import pytest
import torch

from torchlean.backend.providers import attention_kernels

MATMUL = torch.backends.cuda.matmul
CONV: Any = getattr(torch.backends.cudnn, "conv", None)
pytestmark = pytest.mark.skipif(not hasattr(MATMUL, "fp32_precision"), reason="no fp32_precision")

SETUPS = {
    "default": "",
    "legacy-flags": "M.allow_tf32 = True; torch.backends.cudnn.allow_tf32 = True",
    "set_float32_matmul_precision": "torch.set_float32_matmul_precision('high')",
    "new-api": "M.fp32_precision = 'tf32'; C.fp32_precision = 'tf32'",
    "new-api-global": "torch.backends.fp32_precision = 'tf32'",
    "new-api-ieee": "M.fp32_precision = 'ieee'",
}
SCRIPT = """
import json, sys, torch
from torchlean.backend.providers.native_cuda.float32 import ieee_float32
M, C = torch.backends.cuda.matmul, torch.backends.cudnn.conv
READS = ("torch._C._get_cublas_allow_tf32()", "torch._C._get_cudnn_allow_tf32()", "M.fp32_precision",
         "C.fp32_precision", "torch.backends.fp32_precision", "torch.get_float32_matmul_precision()")
def read():
    out = []
    for expression in READS:
        try:
            out.append(repr(eval(expression)))
        except RuntimeError as error:
            out.append("raises: " + str(error)[:60])
    return out
exec(sys.argv[1])
before = read()
with ieee_float32():
    inside = (M.fp32_precision, C.fp32_precision)
after = read()
try:
    with ieee_float32():
        raise KeyError("x")
except KeyError:
    pass
print(json.dumps({"before": before, "inside": inside, "after": after, "after_error": read()}))
"""


@pytest.mark.parametrize("setup", list(SETUPS))
def test_tf32_is_off_inside_and_every_reading_of_the_flags_comes_back(setup: str) -> None:
    run = subprocess.run([sys.executable, "-c", SCRIPT, SETUPS[setup]], capture_output=True, text=True,
                         check=True)
    seen = json.loads(run.stdout)
    assert seen["inside"] == ["ieee", "ieee"]  # what cuBLAS and cuDNN convolutions read
    assert seen["after"] == seen["before"] == seen["after_error"]


def test_the_old_guard_could_not_read_the_legacy_flag_after_the_new_api() -> None:
    """torch refuses the legacy read the old guard began with, once the new API set TF32."""
    code = ("import torch; torch.backends.cuda.matmul.fp32_precision = 'tf32'; "
            "torch.backends.cuda.matmul.allow_tf32")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert run.returncode != 0 and "mix of the legacy and new APIs" in run.stderr


def test_composed_attention_multiplies_under_ieee(
    emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The composed capsule's forward and backward matmuls run with TF32 off (its float32 claims
    are IEEE, as the native capsules' are), and the process's settings come back after."""
    seen: list[tuple[str, str, str]] = []
    before = (MATMUL.fp32_precision, CONV.fp32_precision)

    def spy(name: str, real: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            seen.append((name, MATMUL.fp32_precision, CONV.fp32_precision))
            return real(*args, **kwargs)
        return run

    for name in ("attention_forward", "attention_backward"):
        monkeypatch.setattr(attention_kernels, name, spy(name, getattr(attention_kernels, name)))
    q = torch.randn(2, 3, 4)
    k, v = torch.randn(2, 5, 4), torch.randn(2, 5, 4)
    out, saved = attention_kernels.composed_attention_forward(q, k, v)
    attention_kernels.composed_attention_backward(torch.ones_like(out), saved)
    assert seen == [("attention_forward", "ieee", "ieee"), ("attention_backward", "ieee", "ieee")]
    assert (MATMUL.fp32_precision, CONV.fp32_precision) == before
