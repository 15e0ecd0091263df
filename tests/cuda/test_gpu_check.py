"""``bench/gpu_check.py`` runs as far as a machine without a GPU allows, so that the script a GPU
session gets (a few minutes of device time) has already executed here:

* without CUDA it stops at the build with exit status 2 and a JSON record naming the reason;
* its parity sweep and its end-to-end training runs execute on the host emulation (the same
  sources, CPU storage standing in for CUDA storage), records checked key by key;
* its timing lines format every row kind.
CUDA events and the device timings themselves need a GPU and run only there.
"""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch

from torchlean.backend.providers.native_cuda import parity

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"
KEYS = {"case", "op", "capsule", "dtype", "errors", "tolerance", "passed", "problems", "seconds"}


@pytest.fixture
def gpu_check(monkeypatch: pytest.MonkeyPatch) -> ModuleType:
    spec = importlib.util.spec_from_file_location("bench_gpu_check", SCRIPT)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, module)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_without_cuda_the_build_step_fails_with_a_record(gpu_check: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == 2
    record = json.loads(out.read_text())
    assert record["name"] == "gpu_check"
    assert record["build"]["ok"] is False
    assert "CUDA was requested" in record["build"]["error"]
    assert "parity" not in record


def test_parity_sweep_records_every_case_on_the_emulation(
    gpu_check: ModuleType, emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = ("relu", "hard_masked_softmax", "selective_scan", parity.ATTENTION)
    cases = parity.cases_for(chosen)
    monkeypatch.setattr(parity, "CASES", cases)
    records: list[dict[str, Any]] = gpu_check._parity(torch.device("cpu"))
    attention_cases = [case for case in cases if case.op == parity.ATTENTION]
    assert len(records) == 2 * (len(cases) + len(attention_cases))
    assert {r["op"] for r in records} == set(chosen)
    for r in records:
        assert set(r) == KEYS
        assert r["passed"], r
        assert r["dtype"] in ("float32", "float64")
        assert all(isinstance(v, float) and v <= r["tolerance"] for v in r["errors"].values())
    capsules = {r["capsule"] for r in records if r["op"] == parity.ATTENTION}
    assert capsules == {"native_cuda.direct_attention", "torchlean.composed_attention"}
    assert {r["capsule"] for r in records if r["op"] == "relu"} == {"native_cuda.relu"}


def test_end_to_end_runs_select_the_expected_capsules_on_the_emulation(
    gpu_check: ModuleType, emulated_cuda: None
) -> None:
    rows: list[dict[str, Any]] = gpu_check._end_to_end(steps=2, batch=8)
    assert [(r["model"], r["profile"]) for r in rows] == [(m, p) for m, p, _ in gpu_check.E2E_RUNS]
    for row, (_, _, attention) in zip(rows, gpu_check.E2E_RUNS, strict=True):
        assert row["passed"], row["problems"]
        assert row["attention_capsule"] == attention
        assert len(row["losses"]) == len(row["checked_cpu_losses"]) == 2
        assert row["max_relative_difference"] <= gpu_check.E2E_TOLERANCE
        assert not any(name.startswith("reference.") for name in row["selected"].values())


def test_timing_lines_format_results_and_errors(gpu_check: ModuleType) -> None:
    row = {
        "n": 1024, "d": 64, "mask": "causal", "direct_forward_ms": 1.5, "sdpa_forward_ms": 0.5,
        "direct_forward_backward_ms": 4.0, "sdpa_forward_backward_ms": 2.0, "relative_difference": 3e-7,
    }  # fmt: skip
    line = gpu_check._timing_line(row)
    assert "n=  1024 d= 64 mask=causal" in line and "1.500 ms" in line and "diff 3.0e-07" in line
    failed = gpu_check._timing_line({"n": 16384, "d": 128, "mask": "none", "error": "OutOfMemoryError: x"})
    assert failed.endswith("ERROR OutOfMemoryError: x")
