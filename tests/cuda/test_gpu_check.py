"""``bench/gpu_check.py`` runs as far as a machine without a GPU allows, so that the script a GPU
session gets (a few minutes of device time) has already executed here:

* without CUDA it stops at the build with exit status 2 and a JSON record naming the reason;
  a missing ``ninja``, a missing ``nvcc`` or one of another CUDA major version than torch's stops
  it before the build, with one line and its own exit status;
* its parity sweep and its end-to-end training runs execute on the host emulation (the same
  sources, CPU storage standing in for CUDA storage), records checked key by key;
* ``main`` as on a GPU machine (pre-checks passed, the emulation build standing in for the CUDA
  build): the record is on disk after the build and after every parity case, so a run cut off
  mid-sweep keeps what it did; a device fault after a case stops all further device work and
  names that case;
* its timing rows (host timers standing in for CUDA events) are handed out as they finish, fail
  when the forward leaves the tolerance, and include the gradient checks; a causal row's SDPA
  baseline is ``is_causal=True``, with the boolean-mask SDPA timed beside it;
* its timing lines format every row kind.
The device timings themselves need a GPU and run only there.
"""

from __future__ import annotations

import dataclasses
import json
import math
import re
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest
import torch
from torch.utils import cpp_extension

from torchlean.backend.providers.native_cuda import extension, kernels, parity

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "gpu_check.py"
KEYS = {
    "case", "op", "capsule", "dtype", "errors", "unfloored_relative_errors", "tolerance", "passed",
    "problems", "seconds",
}  # fmt: skip


@pytest.fixture
def gpu_check(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("gpu_check")


@pytest.mark.skipif(torch.cuda.is_available(), reason="checks the no-CUDA path")
def test_without_cuda_the_build_step_fails_with_a_record(gpu_check: ModuleType, tmp_path: Path) -> None:
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == 2
    record = json.loads(out.read_text())
    assert record["name"] == "gpu_check"
    assert record["build"]["ok"] is False
    assert "CUDA was requested" in record["build"]["error"]
    assert "parity" not in record
    # review127 F5: which code ran, from the start (a failed build too)
    from torchlean.provenance import source_sha256_or_none

    code = record["code"]
    assert code["torchlean_source_sha256"] == source_sha256_or_none()
    assert code["torchlean"].endswith("torchlean") and code["numpy"] == np.__version__


def test_parity_sweep_records_every_case_on_the_emulation(
    gpu_check: ModuleType, emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    chosen = ("relu", "hard_masked_softmax", "selective_scan", parity.ATTENTION)
    cases = parity.cases_for(chosen)
    monkeypatch.setattr(parity, "CASES", cases)
    records: list[dict[str, Any]] = gpu_check._parity(torch.device("cpu"))
    composed = [case for case in cases if case.op == parity.ATTENTION and case.composed]
    # review178 F2, review185 F1: every attention case again on the smallest tiles, in both dtypes,
    # then the wide-head small-tile cases in their own
    attention = [case for case in cases if case.op == parity.ATTENTION]
    smallest = [(case.id, dtype) for case in attention for dtype in ("float32", "float64")]
    smallest += [(case.id, str(dtype).removeprefix("torch.")) for case, dtype in parity.SMALL_TILE_CASES]
    # review208 F1: then the chosen ops' multi-block cases on 2 blocks, in both dtypes
    few = [(case.id, dtype) for case in cases if case in parity.ELEMENT_BLOCK_CASES
           for dtype in ("float32", "float64")]
    assert {case for case, _ in few} == {f"selective_scan/{kind}-many-blocks" for kind in ("shared", "token")}
    assert len(records) == 2 * (len(cases) + len(composed)) + len(smallest) + len(few)
    assert [(r["case"], r["dtype"], r.pop("element_blocks")) for r in records[-len(few):]] == [
        (case, dtype, 2) for case, dtype in few
    ]
    records = records[:-len(few)]
    assert [(r["case"], r["dtype"], r.pop("tiles")) for r in records[-len(smallest):]] == [
        (case, dtype, "smallest") for case, dtype in smallest
    ]
    assert not any("tiles" in r or "element_blocks" in r for r in records)
    direct_only = {case.id for case in cases if not case.composed}
    assert direct_only and direct_only <= {r["case"] for r in records}  # on direct attention alone
    assert not {f"composed:{case}" for case in direct_only} & {r["case"] for r in records}
    assert {r["op"] for r in records} == set(chosen)
    for r in records:
        assert set(r) == KEYS
        assert r["passed"], r
        assert r["dtype"] in ("float32", "float64")
        assert all(isinstance(v, float) and v <= r["tolerance"] for v in r["errors"].values())
        # the unfloored relative error (review112 F7) is beside each error, never below it
        assert set(r["unfloored_relative_errors"]) == set(r["errors"])
        assert all(r["errors"][k] <= v for k, v in r["unfloored_relative_errors"].items())
    capsules = {r["capsule"] for r in records if r["op"] == parity.ATTENTION}
    assert capsules == {"native_cuda.direct_attention", "torchlean.composed_attention"}
    assert {r["capsule"] for r in records if r["op"] == "relu"} == {"native_cuda.relu"}


def test_end_to_end_runs_select_the_expected_capsules_on_the_emulation(
    gpu_check: ModuleType, emulated_cuda: None
) -> None:
    pytest.importorskip("sklearn", reason="the digits data (a GPU image may lack scikit-learn)")
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
        "direct_forward_backward_ms": 4.0, "sdpa_forward_backward_ms": 2.0, "scaled_difference": 3e-7,
    }  # fmt: skip
    line = gpu_check._timing_line(row)
    assert "n=  1024 d= 64 mask=causal" in line and "1.500 ms" in line and "diff 3.0e-07" in line
    assert "bool mask" not in line
    row |= {"sdpa_bool_mask_forward_ms": 0.75, "sdpa_bool_mask_forward_backward_ms": 3.25}
    line = gpu_check._timing_line(row)
    assert "sdpa bool mask fwd     0.750 / fwd+bwd     3.250 ms  diff 3.0e-07" in line
    failed = gpu_check._timing_line({"n": 16384, "d": 128, "mask": "none", "error": "OutOfMemoryError: x"})
    assert failed.endswith("ERROR OutOfMemoryError: x")
    # review185 F8: a row whose gradient comparison raised keeps its timings on its line
    kept = gpu_check._timing_line(row | {"passed": False, "error": "gradient comparison: RuntimeError: y"})
    assert kept.endswith("diff 3.0e-07  ERROR gradient comparison: RuntimeError: y") and "1.500 ms" in kept


def test_timing_lines_mark_failed_rows_and_format_gradient_checks(gpu_check: ModuleType) -> None:
    row = {
        "n": 1024, "d": 64, "mask": "none", "direct_forward_ms": 1.5, "sdpa_forward_ms": 0.5,
        "direct_forward_backward_ms": 4.0, "sdpa_forward_backward_ms": 2.0, "scaled_difference": 3e-4,
        "passed": False, "problems": ["forward differs from torch SDPA by 3.00e-04 > 1e-05"],
    }  # fmt: skip
    assert gpu_check._timing_line(row).endswith(
        "diff 3.0e-04  FAIL forward differs from torch SDPA by 3.00e-04 > 1e-05"
    )
    gradient = {
        "n": 1024, "d": 128, "mask": "causal", "check": "gradient", "passed": True,
        "errors": {"dq": 1e-7, "dk": 2e-7, "dv": 3e-7},
    }  # fmt: skip
    assert gpu_check._timing_line(gradient).endswith(
        "gradients vs SDPA float64: dq 1.0e-07 dk 2.0e-07 dv 3.0e-07"
    )


# ------------------------------------------------------------------------------------ pre-checks


def _fake_nvcc(root: Path, release: str) -> Path:
    nvcc = root / "bin" / "nvcc"
    nvcc.parent.mkdir(parents=True)
    nvcc.write_text(f"#!/bin/sh\necho 'Cuda compilation tools, release {release}, V{release}.1'\n")
    nvcc.chmod(0o755)
    return nvcc


@pytest.fixture
def cuda_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """As on a machine with a CUDA 13.0 build of torch and a device, where building is not allowed
    to start in these tests."""

    def no_build() -> ModuleType:
        raise AssertionError("the build started despite a failed pre-check")

    monkeypatch.setattr(extension, "require_cuda", lambda: None)
    monkeypatch.setattr(torch.version, "cuda", "13.0")
    monkeypatch.setattr(extension, "load_extension", no_build)


@pytest.mark.parametrize(
    ("missing", "status", "message"),
    [
        ("ninja", 4, "gpu_check: `ninja` is not on PATH; torch.utils.cpp_extension builds with it"),
        ("nvcc", 5, "gpu_check: nvcc not found"),
        ("nvcc-12", 6, "gpu_check: nvcc 12.4 ("),
    ],
)
def test_a_missing_toolchain_stops_before_the_build(
    gpu_check: ModuleType,
    cuda_build: None,
    missing: str,
    status: int,
    message: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    if missing != "ninja" and shutil.which("ninja") is None:
        pytest.skip("needs ninja on PATH (checked before nvcc)")
    which = shutil.which
    hidden = {"ninja": "ninja", "nvcc": "nvcc"}.get(missing)
    monkeypatch.setattr(
        shutil, "which", lambda name, *a, **k: None if name == hidden else which(name, *a, **k)
    )
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", None)
    if missing == "nvcc-12":
        _fake_nvcc(tmp_path / "cuda", "12.4")
        monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path / "cuda"))
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == status
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and err.startswith(message), err
    record = json.loads(out.read_text())
    assert record["build"] == {"ok": False, "error": err.strip(), "exit_status": status}
    if missing == "nvcc-12":
        assert "does not match torch's CUDA 13.0" in err and record["toolchain"]["nvcc_version"] == "12.4"


def test_a_matching_toolchain_passes_the_pre_check(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    if shutil.which("ninja") is None:
        pytest.skip("needs ninja on PATH")
    nvcc = _fake_nvcc(tmp_path / "cuda", "13.0")
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path / "cuda"))
    info, problem = gpu_check.toolchain("13.0")
    assert problem is None
    assert info["nvcc"] == str(nvcc) and info["nvcc_version"] == "13.0"


@pytest.mark.parametrize(
    ("listed", "dropped"),
    [
        ("7.0;8.0;9.0", "7.0"),
        ("6.1 9.0+PTX", "6.1"),
        ("Volta;Hopper", "Volta"),
        ("5.2+PTX;7.2", "5.2+PTX, 7.2"),
        ("Maxwell+Tegra;Volta+Tegra;Ampere+Tegra", "Maxwell+Tegra, Volta+Tegra"),
    ],
)
def test_an_architecture_list_nvcc_13_cannot_build_stops_before_the_build(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path, listed: str, dropped: str
) -> None:
    """CUDA 13's nvcc dropped sm_50 to sm_72: such an exported list failed the build a minute in,
    after every pre-check had passed."""
    if shutil.which("ninja") is None:
        pytest.skip("needs ninja on PATH")
    _fake_nvcc(tmp_path / "cuda", "13.0")
    monkeypatch.setattr(cpp_extension, "CUDA_HOME", str(tmp_path / "cuda"))
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", listed)
    assert gpu_check.toolchain("13.0")[1] == (
        5,
        f"gpu_check: TORCH_CUDA_ARCH_LIST={listed!r} lists {dropped}, which nvcc 13.0 cannot build for "
        "(CUDA 13 dropped sm_50 to sm_72; accepted: 7.5 or later, or unset the variable to build for the "
        "visible GPU)",
    )
    for accepted in ("7.5;8.0;9.0+PTX", "9.0", "Turing Hopper", ""):
        monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", accepted)
        assert gpu_check.toolchain("13.0")[1] is None


# ------------------------------------------------------------------------ main, as on a GPU machine


@pytest.fixture
def gpu_machine(
    gpu_check: ModuleType, emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> Iterator[None]:
    """``main`` with the pre-checks passed and the emulation build as "the" build: kernels run on
    the CPU, which stands in for the CUDA device. Parity is cut down to the relu and exp cases."""
    monkeypatch.setattr(extension, "require_cuda", lambda: None)
    monkeypatch.setattr(gpu_check, "toolchain", lambda torch_cuda: ({"nvcc": "nvcc"}, None))
    monkeypatch.setattr(extension, "load_extension", lambda: emulation)
    monkeypatch.setattr(gpu_check, "_device", lambda: torch.device("cpu"))
    monkeypatch.setattr(gpu_check, "_machine", lambda: {"device": "host emulation"})
    monkeypatch.setattr(parity, "CASES", parity.cases_for(["relu", "exp"]))
    yield


Wrapper = Callable[[parity.ParityCase, torch.dtype, Callable[[], parity.CaseResult]], parity.CaseResult]


def _wrap_run_case(monkeypatch: pytest.MonkeyPatch, wrapper: Wrapper) -> None:
    """Route every ``parity.run_case`` call through ``wrapper(case, dtype, run)``, where ``run()``
    runs the real case."""
    run_case = parity.run_case

    def wrapped(
        case: parity.ParityCase,
        dtype: torch.dtype,
        device: torch.device,
        seed: int = 0,
        *,
        composed: bool = False,
    ) -> parity.CaseResult:
        return wrapper(case, dtype, lambda: run_case(case, dtype, device, seed, composed=composed))

    monkeypatch.setattr(parity, "run_case", wrapped)


def test_the_record_is_saved_after_the_build_and_after_every_parity_case(
    gpu_check: ModuleType, gpu_machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """The run is cut off (KeyboardInterrupt, as a kill would) in the fourth parity case: the
    file then holds the build with its time and the three cases before."""
    out = tmp_path / "record.json"
    saved_before: list[dict[str, Any]] = []

    def cut_off(
        case: parity.ParityCase, dtype: torch.dtype, run: Callable[[], parity.CaseResult]
    ) -> parity.CaseResult:
        saved_before.append(json.loads(out.read_text()))
        if len(saved_before) == 4:
            raise KeyboardInterrupt
        return run()

    _wrap_run_case(monkeypatch, cut_off)
    with pytest.raises(KeyboardInterrupt):
        gpu_check.main([str(out)])
    assert [len(r["parity"]) for r in saved_before] == [0, 1, 2, 3]
    record = json.loads(out.read_text())
    assert record["build"]["ok"] is True and isinstance(record["build"]["seconds"], float)
    assert record["machine"] == {"device": "host emulation"}
    assert record["error_measures"] == gpu_check.ERROR_MEASURES
    assert [(r["case"], r["dtype"]) for r in record["parity"]] == [
        ("relu/vector", "float32"), ("relu/vector", "float64"), ("relu/tensor", "float32"),
    ]  # fmt: skip
    assert all(r["passed"] for r in record["parity"])
    assert record["in_progress"] == "parity: 3 rows done, the next one running"


def test_a_failing_case_runs_again_and_the_record_says_whether_it_repeats(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """relu/vector float32 fails on its first run only (as a race would), exp/vector float64 on
    every run: both fail the sweep, each row holds its rerun, and no other case runs twice."""
    calls: list[tuple[str, torch.dtype]] = []
    wrong = "forward error 3e-05 > 1e-05"

    def failing(
        case: parity.ParityCase, dtype: torch.dtype, run: Callable[[], parity.CaseResult]
    ) -> parity.CaseResult:
        calls.append((case.id, dtype))
        result = run()
        once = (case.id, dtype) == ("relu/vector", torch.float32) and calls.count(calls[-1]) == 1
        always = (case.id, dtype) == ("exp/vector", torch.float64)
        return dataclasses.replace(result, problems=(wrong,)) if once or always else result

    _wrap_run_case(monkeypatch, failing)
    records = gpu_check._parity(torch.device("cpu"))
    by_case = {(r["case"], r["dtype"], r.get("tiles"), r.get("element_blocks")): r for r in records}
    smallest = 2 * len(parity.cases_for([parity.ATTENTION])) + len(parity.SMALL_TILE_CASES)
    few = 2 * len(set(parity.CASES) & set(parity.ELEMENT_BLOCK_CASES))
    assert len(by_case) == len(records) == 2 * len(parity.CASES) + smallest + few  # each run once
    transient = by_case[("relu/vector", "float32", None, None)]
    persistent = by_case[("exp/vector", "float64", None, None)]
    assert (transient["passed"], transient["problems"]) == (False, [wrong])
    assert transient["rerun"]["passed"] is True and transient["rerun"]["problems"] == []
    assert (persistent["passed"], persistent["rerun"]["passed"]) == (False, False)
    assert persistent["rerun"]["problems"] == [wrong]
    assert set(persistent["rerun"]["errors"]) == {"forward", "d0"}
    assert set(persistent["rerun"]["unfloored_relative_errors"]) == {"forward", "d0"}
    assert [r for r in records if "rerun" in r] == [transient, persistent]
    assert len(calls) == len(records) + 2
    printed = capsys.readouterr().out
    assert "FAIL (run again: ok)" in printed and "FAIL (run again: FAIL)" in printed
    assert re.search(r"max err \d\.\de-\d\d \(unfloored rel \d\.\de-\d\d\) ok", printed)


def test_a_device_fault_stops_all_further_device_work_and_names_its_case(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    fault = "AcceleratorError: CUDA error: an illegal memory access was encountered"

    def faulting(
        case: parity.ParityCase, dtype: torch.dtype, run: Callable[[], parity.CaseResult]
    ) -> parity.CaseResult:
        result = run()
        if case.id == "exp/vector" and dtype == torch.float64:
            return dataclasses.replace(result, problems=(fault,))
        return result

    def not_after_a_fault(*args: object, **kwargs: object) -> list[dict[str, Any]]:
        raise AssertionError("device work after a sticky fault")

    def refusals_in_a_child(
        device_type: str, on_row: Callable[[dict[str, Any]], None], timeout: float
    ) -> list[dict[str, Any]]:
        row = {"call": "relu_forward(strided)", "raised": "ValueError", "passed": True}
        on_row(row)
        return [row]

    _wrap_run_case(monkeypatch, faulting)
    monkeypatch.setattr(gpu_check, "_device_fault", lambda device: fault)
    monkeypatch.setattr(gpu_check, "_end_to_end", not_after_a_fault)
    monkeypatch.setattr(gpu_check, "_timings", not_after_a_fault)
    monkeypatch.setattr(gpu_check, "_refusals", refusals_in_a_child)
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == 1
    record = json.loads(out.read_text())
    assert record["aborted"] == {"phase": "parity", "step": "exp/vector [float64]", "error": fault}
    before = [case.id for case in parity.CASES].index("exp/vector")  # the relu cases, two dtypes each
    assert len(record["parity"]) == 2 * before + 2 and record["parity"][-1]["case"] == "exp/vector"
    assert record["parity_summary"]["failed"] == 1
    assert "end_to_end" not in record and "timing" not in record and "in_progress" not in record
    # the refusals run in a child process, whose CUDA context the fault here does not reach
    assert [r["call"] for r in record["refusals"]] == ["relu_forward(strided)"]
    assert record["passed"] is False
    printed = capsys.readouterr().out
    assert "exp/vector [float64]" in printed and "FAIL" in printed
    assert "ABORTED: the device is unusable after parity exp/vector [float64]" in printed
    # the cases parity ran before the fault are counted; the phases it kept from starting are not run
    assert "FAILED (failed: parity 1, refusals 0, end to end not run, timing not run)" in printed


def test_max_seconds_skips_what_would_start_too_late(
    gpu_check: ModuleType, gpu_machine: None, tmp_path: Path
) -> None:
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out), "--max-seconds", "1e-9"]) == 1
    record = json.loads(out.read_text())
    assert record["skipped"] == [
        "parity from relu/vector [float32]", "refusals", "end to end (not started)", "timing (not started)"
    ]
    assert "refusals" not in record
    assert record["parity"] == [] and record["passed"] is False


# -------------------------------------------------------------------------------------- timing


class _HostEvent:
    """Stands in for ``torch.cuda.Event`` on the CPU (host clock)."""

    def __init__(self, enable_timing: bool = False) -> None:
        self.at = 0.0

    def record(self) -> None:
        self.at = time.perf_counter()

    def elapsed_time(self, other: _HostEvent) -> float:
        return (other.at - self.at) * 1e3


@pytest.fixture
def host_timers(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.cuda, "Event", _HostEvent)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: None)


def test_timing_rows_arrive_as_they_finish_and_check_the_attention(
    gpu_check: ModuleType, emulation: ModuleType, host_timers: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each row reaches the callback when done (the record is saved there); the forward must stay
    within 1e-5 of torch SDPA, the gradients within 1e-5 of SDPA's float64 autograd. A forward off
    by 1e-3 fails its row."""
    arrived: list[dict[str, Any]] = []
    rows = gpu_check._timings([33], [64], 1, 1, torch.device("cpu"), arrived.append, gradient_n=20)
    assert arrived == rows
    assert [(r["n"], r["mask"], r.get("check")) for r in rows] == [
        (33, "none", None), (33, "causal", None), (20, "none", "gradient"), (20, "causal", "gradient"),
    ]  # fmt: skip
    assert all(r["passed"] for r in rows), rows
    assert all(r["scaled_difference"] <= 1e-5 for r in rows[:2])
    assert all(r["scaled_difference"] <= r["unfloored_relative_difference"] for r in rows[:2])
    plain, causal = rows[:2]
    assert plain["sdpa_baseline"] == "scaled_dot_product_attention(q, k, v)"
    assert causal["sdpa_baseline"] == "scaled_dot_product_attention(q, k, v, is_causal=True)"
    assert not {"sdpa_bool_mask_forward_ms", "sdpa_bool_mask_forward_backward_ms"} & plain.keys()
    assert causal["sdpa_bool_mask_forward_ms"] > 0 and causal["sdpa_bool_mask_forward_backward_ms"] > 0
    for r in (plain, causal):  # review178 F3: the backward at the timed n, against SDPA float32
        assert set(r["gradient_difference_from_sdpa_float32"]) == {"dq", "dk", "dv"}
        assert max(r["gradient_difference_from_sdpa_float32"].values()) <= 1e-5
        assert r["timing_gradient_bound"] == 1e-3
        assert r["forward_ratio"] == r["direct_forward_ms"] / r["sdpa_forward_ms"]
        assert r["forward_backward_ratio"] == r["direct_forward_backward_ms"] / r["sdpa_forward_backward_ms"]
    for r in rows[2:]:
        assert set(r["errors"]) == {"dq", "dk", "dv"} and max(r["errors"].values()) <= 1e-5
        assert set(r["unfloored_relative_errors"]) == {"dq", "dk", "dv"}
        assert all(r["errors"][k] <= v for k, v in r["unfloored_relative_errors"].items())
    # every error field the record's error_measures describes is one the rows carry
    described = {name for names in gpu_check.ERROR_MEASURES for name in names.split(", ")}
    assert described - {"max_relative_difference"} <= {key for r in rows for key in r}

    forward = kernels.direct_attention_forward

    def off(*args: Any, **kwargs: Any) -> tuple[torch.Tensor, torch.Tensor]:
        out, lse = forward(*args, **kwargs)
        return out + 1e-3, lse

    monkeypatch.setattr(kernels, "direct_attention_forward", off)
    (bad,) = gpu_check._timings([33], [64], 1, 1, torch.device("cpu"), gradient_n=20)[:1]
    assert bad["passed"] is False
    assert bad["scaled_difference"] > 1e-4
    # the wrong output also reaches the backward's row sums (delta = rowsum(dO * O)): dq moves
    assert bad["problems"][0] == f"forward differs from torch SDPA by {bad['scaled_difference']:.2e} > 1e-05"
    assert len(bad["problems"]) == 2
    assert bad["problems"][1].startswith("dq differs from torch SDPA's float32 gradient by ")

    backward = kernels.direct_attention_backward

    def off_backward(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        dq, dk, dv, *rest = backward(*args, **kwargs)
        return (dq, dk, dv + 1e-2, *rest)

    monkeypatch.setattr(kernels, "direct_attention_forward", forward)
    monkeypatch.setattr(kernels, "direct_attention_backward", off_backward)
    (bad,) = gpu_check._timings([33], [64], 1, 1, torch.device("cpu"), gradient_n=20)[:1]
    assert bad["scaled_difference"] <= 1e-5  # the forward is right, the backward at this n is not
    dv = bad["gradient_difference_from_sdpa_float32"]["dv"]
    assert dv > 1e-3  # 1e-2 over max(max|dv|, 1)
    assert bad["passed"] is False
    assert bad["problems"] == [f"dv differs from torch SDPA's float32 gradient by {dv:.2e} > 0.001"]

    def failing_gradients(*args: Any, **kwargs: Any) -> tuple[Any, ...]:
        raise RuntimeError("out of memory")

    monkeypatch.setattr(kernels, "direct_attention_backward", backward)
    monkeypatch.setattr(gpu_check, "_sdpa_gradients", failing_gradients)  # the comparison alone
    (kept,) = gpu_check._timings([33], [64], 1, 1, torch.device("cpu"), gradient_n=20)[:1]
    # review181 F8: the row keeps its timings and says what failed
    assert kept["error"] == "gradient comparison: RuntimeError: out of memory" and kept["passed"] is False
    assert kept["direct_forward_ms"] > 0 and kept["sdpa_forward_backward_ms"] > 0


def test_timing_errors_are_floored_at_1_with_the_unfloored_relative_error_beside(
    gpu_check: ModuleType,
) -> None:
    """review112 F7: ``_errors`` gives the checked difference (scaled by max(max|theirs|, 1), an
    absolute difference below 1) and the unfloored relative one (the difference itself where
    ``theirs`` is all zeros); a NaN makes both NaN, which fails ``not value <= tolerance``."""
    small = torch.tensor([0.1, -0.05], dtype=torch.float64)
    assert gpu_check._errors(small + torch.tensor([1e-6, 0.0]), small) == pytest.approx((1e-6, 1e-5))
    big = torch.tensor([4.0, -2.0], dtype=torch.float64)
    assert gpu_check._errors(big + 2e-6, big) == pytest.approx((5e-7, 5e-7))
    assert gpu_check._errors(torch.tensor([3e-7]), torch.zeros(1)) == pytest.approx((3e-7, 3e-7))
    assert all(math.isnan(e) for e in gpu_check._errors(torch.tensor([math.nan, 0.0]), small))
    assert all(math.isnan(e) for e in gpu_check._errors(small, torch.tensor([math.nan, 0.0])))


def test_causal_rows_time_sdpa_is_causal_as_the_baseline_and_the_bool_mask_beside_it(
    gpu_check: ModuleType, emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Which call each ``*_ms`` field times (review112 F4): a causal row's ``sdpa_*_ms`` and ratios
    are SDPA with ``is_causal=True``, its ``sdpa_bool_mask_*_ms`` SDPA with the boolean mask the
    direct kernel gets, every one through ``_time_ms`` (the synchronised CUDA-event timer); the
    forward check still compares with the boolean-mask SDPA (an is_causal result made wrong here
    does not fail the row)."""
    seen: list[str] = []
    sdpa = torch.nn.functional.scaled_dot_product_attention

    def logged_sdpa(*args: Any, attn_mask: Any = None, is_causal: bool = False, **kwargs: Any) -> Any:
        assert attn_mask is None or not is_causal
        how = "is_causal" if is_causal else "no_mask" if attn_mask is None else "bool_mask"
        assert attn_mask is None or attn_mask.dtype == torch.bool
        seen.append(f"sdpa {how} {'grad' if torch.is_grad_enabled() else 'no_grad'}")
        out = sdpa(*args, attn_mask=attn_mask, is_causal=is_causal, **kwargs)
        return out + 1.0 if is_causal else out

    def logged(name: str, call: Callable[..., Any]) -> Callable[..., Any]:
        def run(*args: Any, **kwargs: Any) -> Any:
            seen.append(name)
            return call(*args, **kwargs)

        return run

    timed: dict[str, float] = {}

    def fake_time_ms(fn: Callable[[], object], iterations: int) -> float:
        seen.clear()
        fn()
        label = " + ".join(seen)
        seen.clear()
        assert label not in timed
        timed[label] = float(len(timed) + 1)
        return timed[label]

    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention", logged_sdpa)
    for name in ("forward", "backward"):
        call = getattr(kernels, f"direct_attention_{name}")
        monkeypatch.setattr(kernels, f"direct_attention_{name}", logged(f"direct {name}", call))
    monkeypatch.setattr(gpu_check, "_time_ms", fake_time_ms)
    generator = torch.Generator().manual_seed(0)
    causal = gpu_check._timing_row(33, 64, True, 1, 1, torch.device("cpu"), generator)
    assert timed == {
        "direct forward": 1.0, "sdpa is_causal no_grad": 2.0, "direct forward + direct backward": 3.0,
        "sdpa is_causal grad": 4.0, "sdpa bool_mask no_grad": 5.0, "sdpa bool_mask grad": 6.0,
    }  # fmt: skip
    # the forward check after the timings, then the backward's against SDPA is_causal's gradients
    assert seen == ["direct forward", "sdpa bool_mask no_grad", "direct forward", "direct backward",
                    "sdpa is_causal grad"]
    assert causal["direct_forward_ms"] == 1.0 and causal["direct_forward_backward_ms"] == 3.0
    assert causal["sdpa_forward_ms"] == 2.0 and causal["sdpa_forward_backward_ms"] == 4.0
    assert causal["sdpa_bool_mask_forward_ms"] == 5.0 and causal["sdpa_bool_mask_forward_backward_ms"] == 6.0
    assert causal["forward_ratio"] == 1.0 / 2.0 and causal["forward_backward_ratio"] == 3.0 / 4.0
    assert causal["scaled_difference"] <= 1e-5 and "problems" not in causal

    timed.clear()
    plain = gpu_check._timing_row(33, 64, False, 1, 1, torch.device("cpu"), generator)
    assert list(timed) == [
        "direct forward", "sdpa no_mask no_grad", "direct forward + direct backward", "sdpa no_mask grad"
    ]  # fmt: skip
    assert plain["sdpa_forward_ms"] == 2.0 and plain["sdpa_forward_backward_ms"] == 4.0
    assert "sdpa_bool_mask_forward_ms" not in plain


def test_time_ms_synchronises_after_the_warm_up_and_after_each_timed_call(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    events: list[str] = []

    class Event(_HostEvent):
        def record(self) -> None:
            events.append("record")
            super().record()

    monkeypatch.setattr(torch.cuda, "Event", Event)
    monkeypatch.setattr(torch.cuda, "synchronize", lambda *args: events.append("sync"))
    gpu_check._time_ms(lambda: events.append("call"), 2)
    timed = ["record", "call", "record", "sync"]
    assert events == ["call", "sync", *timed, *timed]


# ------------------------------------------------------------------------------------ refusals

CALLS = (
    "relu_forward(non-contiguous x)",
    "exp_forward(int32 x)",
    "rand_uniform_forward(count beyond int64)",
    "rand_uniform_forward(bytes beyond int64)",
    "matmul_forward(contraction sizes differ)",
    "matmul_backward(g of another shape)",
    "direct_attention_forward(v with fewer keys than k)",
    "direct_attention_backward(lse of another shape)",
    "gather_forward(index value out of range)",
    "session path: gather index out of range",
    "rand_uniform_forward(128 TiB)",
    "session path: rand_uniform of 128 TiB",
)


def test_refusal_probe_raises_on_the_emulation(gpu_check: ModuleType, emulation: ModuleType) -> None:
    """The probe's calls, in a child process on the emulation build: the raw calls raise ValueError
    with the C++ check's message, the call through ``kernels`` a GuardError; the process survives
    each to report the next."""
    rows = gpu_check._refusals("cpu")
    assert [r["call"] for r in rows] == list(CALLS)
    assert [r["raised"] for r in rows] == ["ValueError"] * 8 + [
        "IndexError", "GuardError", "RuntimeError", "NativeKernelError"
    ]
    assert all(r["passed"] for r in rows)
    assert "x of shape [4, 3] is not contiguous" in rows[0]["message"]
    assert "has dtype Int; accepted: float32, float64" in rows[1]["message"]
    assert "element count overflows int64 for shape [1099511627776, 1099511627776]" in rows[2]["message"]
    assert "shape [1, 4611686018427387904] needs more than int64 bytes (4 per element)" in rows[3]["message"]
    assert "contraction sizes differ" in rows[4]["message"]
    assert "matmul_backward: g has shape [2, 5]; expected [2, 4]" in rows[5]["message"]
    assert "v [1, 2, 3] are not (batch, n_q, d), (batch, n_k, d), (batch, n_k, d_v)" in rows[6]["message"]
    assert "direct_attention_backward: lse has shape [1, 3]; expected [2, 3]" in rows[7]["message"]
    assert rows[8]["message"].startswith("torchlean_native_ext.gather_forward: index value 9 is out of range")
    assert rows[9]["message"].startswith("native_cuda.gather: index value 9 is out of range")
    # an error of ATen's allocator (a c10::Error) comes through the extension as a Python exception
    assert "can't allocate memory: you tried to allocate 140737488355328 bytes" in rows[10]["message"]
    assert rows[11]["message"].startswith("native_cuda.rand_uniform: ")
    assert gpu_check._refusal_line(rows[0]) == f"  {CALLS[0]:<45} raised ValueError ok"


def _probe(*lines: str) -> str:
    """A stand-in probe: ``lines`` of Python after three calls a, b, c expecting ValueError."""
    head = (
        "import json, os, signal, sys, time\n"
        "def report(item): print('@@refusal ' + json.dumps(item), flush=True)\n"
        "report({'calls': {'a': 'ValueError', 'b': 'ValueError', 'c': 'ValueError'}})\n"
    )
    return head + "".join(line + "\n" for line in lines)


def _done(name: str, raised: str | None = "ValueError") -> str:
    return f"report({{'start': {name!r}}}); report({{'call': {name!r}, 'raised': {raised!r}}})"


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        pytest.param(  # as seen on the lent H200 image: SIGSEGV inside a call
            (_done("a"), "report({'start': 'b'})", "os.kill(os.getpid(), signal.SIGSEGV)"),
            [("a", True, None), ("b", False, "signal SIGSEGV"), ("c", False, "not reached")],
            id="crash-in-a-call",
        ),
        pytest.param(  # torch may print warnings on stdout: not protocol lines
            ("print('UserWarning: something', flush=True)", _done("a"), _done("b", None), _done("c")),
            [("a", True, None), ("b", False, None), ("c", True, None)],
            id="other-output-and-a-call-that-does-not-raise",
        ),
        pytest.param(
            (_done("a"), _done("b"), _done("c"), "os.kill(os.getpid(), signal.SIGSEGV)"),
            [
                ("a", True, None),
                ("b", True, None),
                ("c", True, None),
                ("(outside any call)", False, "signal SIGSEGV"),
            ],
            id="crash-after-the-last-call",
        ),
        pytest.param(
            (_done("a"), "sys.exit(0)"),
            [("a", True, None), ("b", False, "not reached"), ("c", False, "not reached")],
            id="clean-exit-before-every-call-reported",
        ),
        pytest.param(
            (_done("a"), "report({'start': 'b'})", "os.kill(os.getpid(), 40)"),
            [("a", True, None), ("b", False, "signal 40"), ("c", False, "not reached")],
            id="a-signal-without-a-name",
        ),
    ],
)
def test_a_dying_or_wrong_probe_fails_the_calls_it_did_not_finish(
    gpu_check: ModuleType,
    monkeypatch: pytest.MonkeyPatch,
    lines: tuple[str, ...],
    expected: list[tuple[str, bool, str | None]],
) -> None:
    monkeypatch.setattr(gpu_check, "REFUSAL_PROBE", _probe(*lines))
    seen: list[dict[str, Any]] = []
    rows = gpu_check._refusals("cpu", seen.append)
    assert seen == rows
    assert [(r["call"], r["passed"], r.get("crashed")) for r in rows] == expected


def test_a_probe_that_never_names_its_calls_or_hangs_fails(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(gpu_check, "REFUSAL_PROBE", "import sys; sys.exit(3)")
    (row,) = gpu_check._refusals("cpu")
    assert (row["call"], row["passed"], row["crashed"]) == ("(the probe did not start)", False, "exit 3")
    assert gpu_check._refusal_line(row) == f"  {'(the probe did not start)':<45} FAIL: exit 3"
    monkeypatch.setattr(gpu_check, "REFUSAL_PROBE", _probe("report({'start': 'a'})", "time.sleep(60)"))
    rows = gpu_check._refusals("cpu", timeout=2)
    assert [(r["call"], r["crashed"]) for r in rows] == [
        ("a", "timed out after 2 s"), ("b", "not reached"), ("c", "not reached"),
    ]  # fmt: skip


def test_main_records_the_refusals_and_counts_them(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The refusal phase inside ``main`` (end to end and timings stubbed out: tested above)."""
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: [])
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: [])
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == 0
    record = json.loads(out.read_text())
    assert [r["passed"] for r in record["refusals"]] == [True] * len(CALLS)
    assert record["refusals_summary"]["calls"] == len(CALLS) and record["refusals_summary"]["failed"] == 0
    assert record["passed"] is True
    printed = capsys.readouterr().out
    assert "refusals of the C++ checks (child process; each must raise, not crash):" in printed
    assert "all checks passed (failed: parity 0, refusals 0, end to end 0, timing 0)" in printed


def test_the_refusals_run_before_the_long_phases_and_the_child_keeps_to_the_time_left(
    gpu_check: ModuleType, gpu_machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """review74 F2: the refusal child (about 20 s) runs right after parity, so that a hang in the
    end-to-end or timing phases cannot drop it; a crash's diagnosis (small extension builds, which
    may use the rest of ``--max-seconds``) runs last, so that it cannot starve the timings."""
    phases: list[str] = []
    monkeypatch.setattr(gpu_check, "HAS_SKLEARN", True)  # the end-to-end phase is stubbed out
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: phases.append("end to end") or [])
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: phases.append("timing") or [])

    def refusals(device_type: str, on_row: Callable[[dict[str, Any]], None], timeout: float) -> list[Any]:
        phases.append(f"refusals within {timeout:g} s")
        return []

    monkeypatch.setattr(gpu_check, "_refusals", refusals)
    assert gpu_check.main([str(tmp_path / "record.json")]) == 0
    assert phases == [f"refusals within {gpu_check.REFUSAL_TIMEOUT:g} s", "end to end", "timing"]
    later = gpu_check.Budget(100.0)
    assert 99.0 < gpu_check._refusal_timeout(later) <= 100.0
    assert gpu_check._refusal_timeout(gpu_check.Budget(1e-9)) == gpu_check.REFUSAL_MINIMUM == 60.0
    assert gpu_check._refusal_timeout(gpu_check.Budget(0)) == gpu_check.REFUSAL_TIMEOUT  # no limit


def test_without_scikit_learn_the_end_to_end_phase_is_recorded_as_not_run(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """The digits data come from scikit-learn; a GPU image without it still runs parity, timing
    and refusals, and the record and the last line say what did not run."""
    monkeypatch.setattr(gpu_check, "HAS_SKLEARN", False)
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: pytest.fail("trained without sklearn"))
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: [])
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == 0
    record = json.loads(out.read_text())
    why = "scikit-learn is not installed (it provides the digits data)"
    assert record["not_run"] == {"end_to_end": why}
    assert "end_to_end" not in record and record["parity_summary"]["failed"] == 0
    assert record["refusals_summary"]["failed"] == 0 and record["passed"] is True
    printed = capsys.readouterr().out
    assert f"end to end: not run ({why})" in printed
    assert printed.rstrip().endswith(f"timing 0); not run: end_to_end ({why})")


def test_a_crashed_refusal_runs_the_exception_probe(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """When a refusal kills the child, ``bench/exception_probe.py`` runs and its record and reading
    are kept, saved after each case (the probe itself: tests/bench/test_exception_probe.py); the
    check still fails."""
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: [])
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: [])
    monkeypatch.setattr(
        gpu_check,
        "REFUSAL_PROBE",
        _probe(_done("a"), "report({'start': 'b'})", "os.kill(os.getpid(), signal.SIGSEGV)"),
    )
    out = tmp_path / "record.json"
    row = {
        "case": "c10 out",
        "expected": "raises ValueError",
        "outcome": "crashed: signal SIGSEGV",
        "passed": False,
    }
    saved: list[dict[str, Any]] = []

    def fake_probe(
        on_case: Callable[[dict[str, Any]], None], record: dict[str, Any], deadline: float
    ) -> dict[str, Any]:
        record["cases"] = [row]
        on_case(row)
        saved.append(json.loads(out.read_text())["refusal_diagnosis"])  # on disk after the case
        record |= {
            "reading": "c10 out: the reading",
            "variant_reading": "c10 out: the variants",
            "passed": False,
        }
        return record

    monkeypatch.setattr(gpu_check.exception_probe, "probe", fake_probe)
    assert gpu_check.main([str(out)]) == gpu_check.EXIT_FAILED
    record = json.loads(out.read_text())
    assert saved == [{"cases": [row]}]
    assert record["refusal_diagnosis"] == {
        "cases": [row],
        "reading": "c10 out: the reading",
        "variant_reading": "c10 out: the variants",
        "passed": False,
    }
    assert record["passed"] is False
    printed = capsys.readouterr().out
    assert "a refusal did not return (its child process died or hung in the call); probing which" in printed
    assert (
        "  c10 out                  crashed: signal SIGSEGV      FAIL (expected raises ValueError)" in printed
    )
    assert "  reading: c10 out: the reading" in printed
    assert "  build variants: c10 out: the variants" in printed
    assert "refusals 2," in printed


def test_the_diagnosis_keeps_to_the_time_limit_and_records_its_own_failure(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    recorder = gpu_check.Recorder(tmp_path / "r.json", {})
    monkeypatch.setattr(gpu_check.exception_probe, "probe", lambda *args, **kwargs: pytest.fail("probed"))
    gpu_check._diagnose_refusal_crash(recorder, gpu_check.Budget(1e-9))
    assert json.loads((tmp_path / "r.json").read_text())["refusal_diagnosis"] == {
        "skipped": "out of time (--max-seconds)"
    }

    def broken(*args: object, **kwargs: object) -> None:
        raise OSError("no space left on device")

    monkeypatch.setattr(gpu_check.exception_probe, "probe", broken)
    gpu_check._diagnose_refusal_crash(recorder, gpu_check.Budget(0))
    diagnosis = json.loads((tmp_path / "r.json").read_text())["refusal_diagnosis"]
    assert diagnosis["error"].strip().endswith("OSError: no space left on device")


def test_no_probe_when_the_refusals_pass_or_only_raise_the_wrong_thing(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
) -> None:
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: [])
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: [])
    monkeypatch.setattr(gpu_check, "REFUSAL_PROBE", _probe(_done("a"), _done("b", "TypeError"), _done("c")))
    monkeypatch.setattr(gpu_check.exception_probe, "probe", lambda *args, **kwargs: pytest.fail("probed"))
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == gpu_check.EXIT_FAILED
    assert "refusal_diagnosis" not in json.loads(out.read_text())


def test_no_probe_when_the_child_dies_before_its_first_call(
    gpu_check: ModuleType, gpu_machine: None, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A child that dies before any call (an import or build failure) says nothing about raising
    from the extension: the refusal row fails, and no probe runs."""
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: [])
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: [])
    monkeypatch.setattr(gpu_check, "REFUSAL_PROBE", "import sys; sys.exit(3)")
    monkeypatch.setattr(gpu_check.exception_probe, "probe", lambda *args, **kwargs: pytest.fail("probed"))
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == gpu_check.EXIT_FAILED
    record = json.loads(out.read_text())
    assert [r["call"] for r in record["refusals"]] == ["(the probe did not start)"]
    assert "refusal_diagnosis" not in record


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["--max-seconds", "-5"],
            "argument --max-seconds: expected a number of seconds >= 0 (0: no limit), got '-5'",
        ),
        (
            ["--max-seconds", "inf"],
            "argument --max-seconds: expected a number of seconds >= 0 (0: no limit), got 'inf'",
        ),
        (["--sizes", "abc"], "argument --sizes: expected a positive integer, got 'abc'"),
        (["--sizes", "1024,0"], "argument --sizes: expected a positive integer, got 0"),
        (["--widths", "64,"], "argument --widths: expected a positive integer, got ''"),
        (["--heads", "0"], "argument --heads: expected a positive integer, got 0"),
        (["--e2e-batch", "x"], "argument --e2e-batch: expected a positive integer, got 'x'"),
    ],
)
def test_bad_arguments_are_refused_before_the_device_check(
    gpu_check: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path, argv: list[str], message: str
) -> None:
    with pytest.raises(SystemExit) as stopped:
        gpu_check.main([str(tmp_path / "record.json"), *argv])
    assert stopped.value.code == 2
    err = capsys.readouterr().err
    assert len(err.splitlines()) == 1 and err.endswith(f": error: {message}\n")


def test_a_record_path_that_cannot_be_written_is_refused_first(
    gpu_check: ModuleType, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    for out, reason in ((str(tmp_path), "it is a directory"), ("", "expected a file path, got ''")):
        with pytest.raises(SystemExit) as stopped:
            gpu_check.main([out])
        assert stopped.value.code == 2
        err = capsys.readouterr().err
        assert len(err.splitlines()) == 1 and reason in err
    assert list(tmp_path.iterdir()) == []  # no stray .partial file


def test_the_record_is_strict_json_with_non_finite_values_as_text(
    gpu_check: ModuleType, tmp_path: Path
) -> None:
    """A NaN timing difference or loss (a failed run) is written as ``"nan"``: a bare ``NaN`` token
    is not JSON, and jq and most readers other than Python's refuse the file."""
    path = tmp_path / "r.json"
    record = {
        "timings": [{"scaled_difference": float("nan")}],
        "losses": (1.5, float("inf"), -float("inf")),
    }
    gpu_check.Recorder(path, record).save()
    text = path.read_text()
    assert "NaN" not in text and "Infinity" not in text
    loaded = json.loads(text, parse_constant=lambda token: pytest.fail(f"non-JSON token {token}"))
    assert loaded == {"timings": [{"scaled_difference": "nan"}], "losses": [1.5, "inf", "-inf"]}


def test_the_script_reports_a_hang_past_the_time_limit(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Run as a script with ``--max-seconds S``, faulthandler prints the stacks from S + 120 s on
    (a hung kernel blocks the main thread, so only its own thread can say where); without a
    limit, nothing is armed."""
    armed: list[tuple[float, bool]] = []
    monkeypatch.setattr(
        gpu_check.faulthandler, "dump_traceback_later", lambda after, repeat: armed.append((after, repeat))
    )
    gpu_check._report_hangs(["out.json"])
    assert armed == []
    gpu_check._report_hangs(["out.json", "--max-seconds", "300"])
    assert armed == [(420.0, True)]


def test_a_fault_in_a_timing_row_whose_cleanup_raises_is_recorded_and_the_refusals_ran(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """review74 F1: after a sticky fault ``torch.cuda.empty_cache()`` raises too (the allocator's
    ``cudaFree`` returns the fault); it ran in the timing loop's ``finally`` and its error escaped
    ``main``: no row, no ``aborted``, no ``finished``. Now the row keeps its error, the device
    check names the fault, and the refusals (run before the timings) are in the record."""
    fault = "AcceleratorError: CUDA error: an illegal memory access was encountered"
    monkeypatch.setattr(gpu_check, "_device", lambda: torch.device("cuda", 0))  # the cleanup path runs
    monkeypatch.setattr(gpu_check, "_parity", lambda *args: None)
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: [])

    def row(*args: Any) -> dict[str, Any]:
        raise RuntimeError(fault)

    def empty_cache() -> None:
        raise RuntimeError(f"{fault} (from cudaFree)")

    def refusals(device_type: str, on_row: Callable[[dict[str, Any]], None], timeout: float) -> list[Any]:
        on_row({"call": "relu_forward(strided)", "raised": "ValueError", "passed": True})
        return []

    monkeypatch.setattr(gpu_check, "_timing_row", row)
    monkeypatch.setattr(gpu_check.torch.cuda, "empty_cache", empty_cache)
    host_generator = torch.Generator
    monkeypatch.setattr(gpu_check.torch, "Generator", lambda device=None: host_generator())
    monkeypatch.setattr(gpu_check, "_device_fault", lambda device: fault)
    monkeypatch.setattr(gpu_check, "_refusals", refusals)
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out), "--sizes", "1024", "--widths", "64"]) == gpu_check.EXIT_FAILED
    record = json.loads(out.read_text())
    assert [r["error"] for r in record["timing"]] == [f"RuntimeError: {fault}"]
    assert record["aborted"] == {"phase": "timing", "step": "timing n=1024 d=64 mask=none", "error": fault}
    assert [r["call"] for r in record["refusals"]] == ["relu_forward(strided)"]
    assert "finished" in record and record["passed"] is False
    assert "ABORTED: the device is unusable after timing" in capsys.readouterr().out


def test_a_phase_that_raises_is_recorded_and_the_next_phase_runs(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """review74 F5: an error outside a row (here the end-to-end phase's own) is kept under
    ``phase_errors`` and fails the check; the timings still run, and the last line names it."""
    ran: list[str] = []
    monkeypatch.setattr(gpu_check, "HAS_SKLEARN", True)

    def broken(*args: Any) -> list[Any]:
        raise KeyError("digits")

    monkeypatch.setattr(gpu_check, "_end_to_end", broken)
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: ran.append("timing") or [])
    monkeypatch.setattr(gpu_check, "_refusals", lambda *args: [])
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == gpu_check.EXIT_FAILED
    record = json.loads(out.read_text())
    assert ran == ["timing"] and record["passed"] is False
    assert record["phase_errors"]["end to end"].rstrip().endswith("KeyError: 'digits'")
    printed = capsys.readouterr().out
    assert "end to end: ERROR KeyError: 'digits'" in printed
    assert "FAILED (failed: parity 0, refusals 0, end to end raised, timing 0)" in printed


def test_missing_packages_exit_3_with_a_recipe_naming_them(tmp_path: Path) -> None:
    """review74 F7: the recipe downloads the missing packages (numpy here, which torch's wheels do
    not bring), not only beartype and ninja. ``sys.modules["numpy"] = None`` makes
    ``importlib.util.find_spec("numpy")`` answer None, as on a machine without it."""
    import subprocess
    import sys

    code = (
        "import runpy, sys\n"
        "sys.modules['numpy'] = None\n"
        f"sys.argv = ['gpu_check.py', {str(tmp_path / 'r.json')!r}]\n"
        f"runpy.run_path({str(SCRIPT)!r}, run_name='__main__')\n"
    )
    command = [sys.executable, "-c", code]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, check=False)
    assert done.returncode == 3, done.stderr
    assert "gpu_check: missing Python packages ['numpy']" in done.stderr
    assert "`pip download --no-deps -d gpu_wheels numpy ninja`" in done.stderr


def test_a_refusal_phase_that_raises_is_recorded_and_the_long_phases_still_run(
    gpu_check: ModuleType,
    gpu_machine: None,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """review75 F2: the refusals run before the long phases; an error of their phase itself (a
    truncated line of a dying child, say) escaped ``main`` and cost both."""
    ran: list[str] = []
    monkeypatch.setattr(gpu_check, "HAS_SKLEARN", True)
    monkeypatch.setattr(gpu_check, "_end_to_end", lambda *args: ran.append("end to end") or [])
    monkeypatch.setattr(gpu_check, "_timings", lambda *args: ran.append("timing") or [])

    def broken(*args: Any) -> list[Any]:
        return [json.loads('{"ca')]  # a child's last line cut off

    monkeypatch.setattr(gpu_check, "_refusals", broken)
    out = tmp_path / "record.json"
    assert gpu_check.main([str(out)]) == gpu_check.EXIT_FAILED
    record = json.loads(out.read_text())
    assert ran == ["end to end", "timing"] and record["passed"] is False and "finished" in record
    assert "JSONDecodeError" in record["phase_errors"]["refusals"] and "in_progress" not in record
    assert "FAILED (failed: parity 0, refusals raised, end to end 0, timing 0)" in capsys.readouterr().out


def test_the_parity_phase_names_the_smallest_tiles_in_its_fail_lines(
    gpu_check: ModuleType, monkeypatch: pytest.MonkeyPatch, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """review187 F5: a case failing on the smallest tiles only (as a tile-boundary bug would) is
    told apart from the same case failing on the default tiles in the summary's FAIL lines."""
    rows = [
        {"case": "attention/causal", "dtype": "float32", "passed": False, "problems": ["d q 3e-05"],
         "tiles": "smallest"},
        {"case": "attention/causal", "dtype": "float64", "passed": False, "problems": ["forward nan"]},
        {"case": "relu/vector", "dtype": "float32", "passed": True, "problems": []},
        {"case": "selective_scan/token-many-blocks", "dtype": "float64", "passed": False,
         "problems": ["forward 0.5"], "element_blocks": 2},
    ]

    def sweep(device: torch.device, append: Callable[[dict[str, Any]], None], budget: Any) -> None:
        for row in rows:
            append(row)

    monkeypatch.setattr(gpu_check, "_parity", sweep)
    recorder = gpu_check.Recorder(tmp_path / "record.json", {})
    failed = gpu_check._parity_phase(recorder, torch.device("cpu"), gpu_check.Budget(0))
    assert failed == [rows[0], rows[1], rows[3]]
    printed = capsys.readouterr().out.splitlines()
    assert "  FAIL selective_scan/token-many-blocks [float64] on 2 element blocks: forward 0.5" in printed
    assert "  FAIL attention/causal [float32] on the smallest tiles: d q 3e-05" in printed
    assert "  FAIL attention/causal [float64]: forward nan" in printed
    assert json.loads((tmp_path / "record.json").read_text())["parity_summary"]["failed"] == 3
