"""The ``bench/`` scripts run end to end on tiny sizes (hidden ``--smoke``) and write records with
the agreed keys. Nothing here looks at speed: values are only checked to be positive and
consistent (min <= median <= max), never compared with a time."""

from __future__ import annotations

import json
import math
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType
from typing import Any

import numpy as np
import pytest

BENCH = Path(__file__).resolve().parents[2] / "bench"
# script -> extra smoke arguments
SCRIPTS = {
    "train_step": ["--models", "mlp"],
    "planning": ["--profiles", "checked_cpu"],
    "attention": [],
    "reduction": [],
    "dispatch": [],
}
# scripts whose every summary is of raw timings (dispatch also summarises differences of timings,
# which noise may make negative)
RAW_TIMINGS = {"train_step", "planning", "attention", "reduction"}
KEYS = ("name", "quick", "smoke", "commit", "machine", "versions", "threads", "backend")
Loader = Callable[[str], ModuleType]  # the bench_script fixture (tests/conftest.py)
ROOT = Path(__file__).resolve().parents[2]


def summaries(value: Any) -> list[dict[str, Any]]:
    """Every ``{median, min, max, repeats, ...}`` block (``_record.summary``) inside a record."""
    if isinstance(value, dict):
        found = [value] if {"median", "repeats"} <= value.keys() else []
        for item in value.values():
            found += summaries(item)
        return found
    if isinstance(value, list):
        return [s for item in value for s in summaries(item)]
    return []


@pytest.mark.parametrize("name", list(SCRIPTS))
def test_script_writes_record(bench_script: Loader, name: str, tmp_path: Path,
                              capsys: pytest.CaptureFixture[str]) -> None:
    assert (BENCH / f"{name}.py").is_file(), f"bench/{name}.py is missing"
    module = bench_script(name)
    assert module.main(["--smoke", "--out", str(tmp_path), *SCRIPTS[name]]) == 0
    record = json.loads((tmp_path / f"{name}.json").read_text())
    for key in KEYS:
        assert key in record, key
    assert record["name"] == name
    assert (record["quick"], record["smoke"]) == (False, True)  # a smoke record says so
    commit = subprocess.run(["git", "-C", str(BENCH.parent), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    assert record["commit"]["id"] == (commit or "unknown")  # the checkout measured
    assert record["machine"]["cpu_count"] >= 1
    assert set(record["versions"]) >= {"python", "numpy", "torch", "torchlean"}
    assert record["threads"]["torch_intra_op"] >= 1
    assert record["backend"]
    if name == "attention":  # the flag's value, not null (review41 F8)
        assert record["mask"] == "none"
        assert record["agreement"]["agrees"] is True  # review127 F7
        assert set(record["agreement"]["per_impl"]) == {"reference", "libtorch", "flash spec", "torch sdpa"}
    if name == "planning":  # its backend rows are planned, not run (review23 claims; pmut B01)
        assert record["backend_note"] == (
            "the capsules each accepted plan selects; this benchmark executes no kernel"
        )
    stats = summaries(record)
    assert stats
    for s in stats:
        assert s["repeats"] >= 1
        assert s["min"] <= s["median"] <= s["max"]
        assert math.isfinite(s["min"]) and math.isfinite(s["max"])
        if name in RAW_TIMINGS:
            assert s["min"] > 0
    table = (tmp_path / f"{name}.md").read_text()
    assert table.startswith(f"### {name}")
    assert table.rstrip() in capsys.readouterr().out


def test_train_step_reports_ratios_targets_and_backends(bench_script: Loader, tmp_path: Path) -> None:
    module = bench_script("train_step")
    module.main(["--smoke", "--out", str(tmp_path), "--models", "mlp"])
    record = json.loads((tmp_path / "train_step.json").read_text())
    (result,) = record["results"]
    configs = {c["config"]: c for c in result["configs"]}
    assert set(configs) == {"pytorch eager", "checked_cpu eager", "checked_cpu typed-graph",
                            "fast_cpu eager", "fast_cpu typed-graph"}
    assert configs["pytorch eager"]["ratio_to_pytorch"] == 1.0
    assert {t["limit"] for t in record["targets"]} == {1.2, 1.5, 8.0}
    for t in record["targets"]:  # each configuration's and PyTorch's median wall over CPU time
        assert len(t["wall_per_cpu"]) == 2 and min(t["wall_per_cpu"]) > 0
    assert "| CPU time vs pytorch |" in (tmp_path / "train_step.md").read_text()
    # the method (review127 F1): settle steps after each switch, timed but not counted
    plan = module.PLANS["mlp"][2]
    assert (result["settle_steps"], result["blocks_per_turn"], result["steps_per_block"]) == (
        plan.settle, plan.blocks, plan.block)
    assert result["steps_per_config"] == plan.warmup + plan.rounds * plan.turn
    # the agreement check beside the timings (review127 F7)
    check = result["loss_check"]
    assert check["agrees"] is True and check["steps"] == result["steps_per_config"]
    assert set(check["per_config"]) == set(configs) and check["max_rel_difference"] <= check["tolerance"]
    for label, config in configs.items():
        assert config["settle_ms_per_step"]["repeats"] == plan.rounds
        assert config["ms_per_step"]["repeats"] == plan.rounds * plan.blocks
        assert config["last_loss_rel_difference"] is not None
        assert config["ratio_to_pytorch"] > 0
        # the same initial weights and first batch: the first losses agree (float32 rounding)
        assert config["first_loss"] == pytest.approx(configs["pytorch eager"]["first_loss"], rel=1e-5)
        if label != "pytorch eager":
            providers = {row["provider"] for row in config["backend"]}
            assert providers <= {"reference", "aten"}
            assert ("aten" in providers) == label.startswith("fast_cpu")


def test_train_step_loss_check_flags_a_wrong_configuration(bench_script: Loader) -> None:
    """A configuration whose losses leave PyTorch's is flagged (a fast wrong answer shows)."""
    module = bench_script("train_step")
    losses = iter([2.0, 1.5, 1.0])
    good = module.Runner("pytorch eager", lambda i: [2.0, 1.5, 1.0][i], 3)
    bad = module.Runner("fast_cpu eager", lambda i: next(losses) * (1.01 if i == 2 else 1.0), 3)
    for runner in (good, bad):
        runner.steps(3)
    check = module.loss_check([good, bad])
    assert check["agrees"] is False and check["per_config"]["fast_cpu eager"] == pytest.approx(0.01)


def test_cells_never_round_onto_their_limit(bench_script: Loader) -> None:
    """review127 F8: ``1.50x | <= 1.5x MISSED`` (1.5006) read as a contradiction."""
    _record = bench_script("_record")
    assert _record.shown(1.5006, 1.5, 2) == "1.501"
    assert _record.shown(1.4996, 1.5, 2) == "1.4996"
    assert _record.shown(1.53, 1.5, 2) == "1.53"
    assert _record.shown(1.5, 1.5, 2) == "1.50"
    attention = bench_script("attention")
    reason = attention.skip_reason({"n": 8, "total_s": {"median": 0.1}}, 16, 2, 1.0)
    assert reason is not None and "1.2 s with warm-up and 2 repeats > budget 1 s" in reason


def test_attention_agreement_flags_a_wrong_implementation(bench_script: Loader) -> None:
    """review127 F7: every implementation's output and gradients against torch in float64."""
    module = bench_script("attention")

    class Wrong(module.FlashImpl):  # type: ignore[name-defined,misc]
        name = "wrong"

        def outputs(self, x: Any) -> Any:
            out, dq, dk, dv = super().outputs(x)
            return out, dq, dk, dv * 1.001

    right = module.agreement([module.FlashImpl(), module.TorchImpl()], 16, np.dtype(np.float32), "causal")
    assert right["agrees"] is True and set(right["per_impl"]) == {"flash spec", "torch sdpa"}
    wrong = module.agreement([module.TorchImpl(), Wrong()], 16, np.dtype(np.float64), "none")
    assert wrong["agrees"] is False and wrong["per_impl"]["wrong"]["gradients"] > wrong["tolerance"]
    assert wrong["per_impl"]["wrong"]["output"] <= wrong["tolerance"]


def test_run_summary_says_when_torchlean_came_from_elsewhere(
    bench_script: Loader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review127 F6: the record said ``measured_here: false``, the summary did not."""
    run = bench_script("run")
    # measured here: as a checkout's own torchlean (the tests may run against an installed one:
    # review167 F2)
    monkeypatch.setattr(run._record, "commit", lambda: {"id": "abc", "dirty": False,
                                                         "torchlean": str(BENCH.parent / "torchlean"),
                                                         "measured_here": True})
    here = run.summary(tmp_path, [], "python bench/run.py", 1)
    assert "not this checkout" not in here
    monkeypatch.setattr(run._record, "commit", lambda: {"id": "abc", "dirty": False,
                                                         "torchlean": "/elsewhere/torchlean",
                                                         "measured_here": False})
    text = run.summary(tmp_path, [], "python bench/run.py", 1)
    assert "torchlean imported from /elsewhere/torchlean, not this checkout" in text


def test_run_summary_combines_tables(bench_script: Loader, tmp_path: Path) -> None:
    run = bench_script("run")
    reduction = bench_script("reduction")
    reduction.main(["--smoke", "--out", str(tmp_path)])
    outcomes = [run.Outcome("reduction", "ok", 1.0), run.Outcome("dispatch", "skipped", 0.0, "missing"),
                run.Outcome("planning", "failed", 2.0, "exit status 1")]
    text = run.summary(tmp_path, outcomes, "python bench/run.py --smoke", 2)
    assert "### reduction" in text
    # the commit measured and the thread count, as the records hold them; the machine readable
    # (it was a dict's repr)
    commit = subprocess.run(["git", "-C", str(BENCH.parent), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    assert f"Commit: {commit or 'unknown'}" in text
    assert "Threads: 2 torch intra-op and BLAS thread(s) in each script" in text
    machine = next(line for line in text.splitlines() if line.startswith("Machine: "))
    assert "{" not in machine and f"{run._record.machine()['cpu_count']} CPUs" in machine
    assert "| dispatch | skipped (missing) |" in text
    assert "| planning | failed (exit status 1) |" in text
    assert "python bench/run.py --smoke" in text


@pytest.mark.parametrize(
    ("name", "argv", "message"),
    [
        ("reduction", ["--smoke", "--out", "{file}"], "results to {file}: it is a file, not a folder"),
        ("dispatch", ["--smoke", "--out", "{file}/sub"], "/sub: {file} is a file, not a folder"),
        # review143 F7: the folder was made before another option was refused
        ("dispatch", ["--smoke", "--out", "{dir}/new/sub", "--threads", "0"], "--threads: expected an"),
        ("dispatch", ["--smoke", "--profile", "nosuch"], "argument --profile: unknown profile nosuch"),
        ("attention", ["--smoke", "--case-budget", "nan"], "must be a finite number of seconds > 0"),
        ("attention", ["--smoke", "--case-budget", "-1"], "must be a finite number of seconds > 0"),
        ("train_step", ["--smoke", "--models", ""], "--models names no model (known: mlp | cnn)"),
        ("planning", ["--smoke", "--profiles", ","], "--profiles names no profile (known: checked_cpu"),
        # torch.set_num_threads overflowed after parsing (a traceback); the CLI's range
        ("dispatch", ["--smoke", "--threads", "99999999999"], "--threads: expected an integer in [1, 1024]"),
        ("reduction", ["--smoke", "--threads", "1025"], "--threads: expected an integer in [1, 1024]"),
        # flash_memory checked its path only when writing, after the whole measurement (a traceback)
        ("flash_memory", ["{file}/sub.json", "--sizes", "8,16"], "argument path: cannot write the record"),
        ("flash_memory", ["{dir}", "--sizes", "8,16"], "is a directory; give a file path such as"),
        # a slope through one distinct size: RankWarning eight times, meaningless slopes, exit 0
        ("flash_memory", ["{dir}/f.json", "--sizes", "128,128"],
         "argument --sizes: invalid sizes '128,128'; need at least two distinct positive sizes"),
        ("flash_memory", ["{dir}/f.json", "--sizes", "64"], "need at least two distinct positive sizes"),
        # review83 F3, F4: tracebacks (some after the measurement)
        ("csv_load", ["--cols", "0", "{dir}/c.json"], "argument --cols: must be >= 1, got 0"),
        ("csv_load", ["--rows", "2", "{dir}/c.json"],  # review105 F2: a traceback from the loader
         "argument --rows: expected comma-separated integers >= 10 (the split needs rows of both labels"),
        ("csv_load", ["--cols", "-1", "{dir}/c.json"], "argument --cols: must be >= 1, got -1"),
        ("csv_load", ["{dir}"], "is a directory; give a file path such as"),
        ("csv_load", ["{file}/c.json"], "argument path: cannot write the record"),
        ("exception_probe", ["{file}/x.json"], "argument out: cannot write the record"),
        ("first_call_exp", ["{dir}/f.json", "--runs", "0"], "argument --runs: must be >= 1, got 0"),
        ("first_call_exp", ["{dir}"], "is a directory; give a file path such as"),
        ("first_call_exp", ["{dir}/f.json", "--threads", "0"], "--threads: expected an integer in [1, 1024]"),
        ("planning", ["--smoke", "--profiles", "checked_cpu, nosuch"],
         "--profiles: unknown profile 'nosuch'"),
        ("planning", ["--smoke", "--profiles", "fast-cpu"],  # review127 F8: as dispatch.py --profile
         "(known: checked_cpu | checked_cuda | libtorch_forward_cuda"),
        ("planning", ["--smoke", "--profiles", "fast-cpu"], "; did you mean fast_cpu?"),
    ],
)
def test_bad_arguments_are_one_line_usage_errors(
    bench_script: Loader, name: str, argv: list[str], message: str, tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    blocker = tmp_path / "a-file"
    blocker.write_text("")
    module = bench_script(name)
    with pytest.raises(SystemExit) as info:
        module.main([arg.format(file=blocker, dir=tmp_path) for arg in argv])
    assert info.value.code == 2
    err = capsys.readouterr().err
    assert message.format(file=blocker, dir=tmp_path) in err and "Traceback" not in err
    assert not (tmp_path / "new").exists()


def test_flash_memory_makes_its_default_folder(
    bench_script: Loader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review57 F1: in a fresh clone (no bench/results/) the default path failed after the whole
    measurement."""
    module = bench_script("flash_memory")
    default = tmp_path / "results" / "flash_memory.json"
    monkeypatch.setattr(module, "DEFAULT_PATH", default)
    assert module.main(["--sizes", "16,32,64"]) == 0
    assert json.loads(default.read_text())["rows"]


@pytest.mark.parametrize("name", [*SCRIPTS, "run", "flash_memory", "first_call_exp"])
def test_help_describes_the_script_in_whole_sentences(
    bench_script: Loader, name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    """``--help`` gives the docstring's first paragraph (train_step's first line stopped at
    "... against")."""
    module = bench_script(name)
    with pytest.raises(SystemExit) as info:
        module.main(["--help"])
    assert info.value.code == 0
    doc = module.__doc__
    assert doc is not None
    first = " ".join(doc.strip().split("\n\n")[0].split())
    assert first.endswith(".")
    assert " ".join(capsys.readouterr().out.split()).find(first) > 0


def test_dispatch_on_a_cuda_profile_without_a_device_fails_cleanly(
    bench_script: Loader, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import torch

    if torch.cuda.is_available():
        pytest.skip("this machine has a CUDA device")
    module = bench_script("dispatch")
    assert module.main(["--smoke", "--profile", "checked_cuda", "--out", str(tmp_path)]) == 2
    assert capsys.readouterr().err.startswith("error: torch eager session: CUDA was requested")


def test_flash_memory_writes_its_record(bench_script: Loader, tmp_path: Path) -> None:
    """The separate memory study (not run by run.py) writes its record, beside the others by
    default, naming the seed, the dtype and the commit measured."""
    module = bench_script("flash_memory")
    assert module.DEFAULT_PATH == BENCH / "results" / "flash_memory.json"
    path = tmp_path / "fm.json"
    assert module.main([str(path), "--sizes", "64,128,256", "--seed", "3"]) == 0
    record = json.loads(path.read_text())
    assert (record["name"], record["seed"], record["dtype"], record["sizes"]) == (
        "flash_memory", 3, "float64", [64, 128, 256]
    )
    assert record["commit"]["id"] and record["machine"]["cpu_count"] >= 1 and record["rows"]
    assert record["threads"] and record["created"]  # the provenance of the other records


def test_flash_memory_measures_each_size_once_from_the_smallest(bench_script: Loader) -> None:
    """A size given twice is measured once (a zero increment made the marginal slope n/a), and
    the sizes run upward (``512,128`` gave a growth over "n x0.25" and no increments)."""
    module = bench_script("flash_memory")
    assert module._sizes("16,32,16,64") == [16, 32, 64]
    assert module._sizes("64,16,32") == [16, 32, 64]


def test_flash_memory_fits_no_increment_slope_through_one_point(bench_script: Loader) -> None:
    """review107 F1: two sizes give one increment, and a slope through one point is no slope
    (numpy's RankWarning and a made-up value); three sizes give it, by hand here: increments
    ``n^2`` at 2 and 4 have slope 2."""
    module = bench_script("flash_memory")
    assert module.marginal_slope([128, 256], [1000, 5000]) is None
    assert module.marginal_slope([1, 2, 4], [10, 14, 30]) == pytest.approx(2.0)


def test_attention_with_a_causal_mask_writes_its_own_record(bench_script: Loader, tmp_path: Path) -> None:
    """``--mask causal`` times the masked path (a separate record, so it does not replace the
    unmasked one) and gives the mask to each implementation."""
    module = bench_script("attention")
    assert module.main(["--smoke", "--out", str(tmp_path), "--mask", "causal"]) == 0
    record = json.loads((tmp_path / "attention_causal.json").read_text())
    assert not (tmp_path / "attention.json").exists()
    assert record["mask"] == "causal (n, n), upper-left aligned"
    assert (tmp_path / "attention_causal.md").read_text().startswith("### attention_causal: ")
    x = module.inputs(5, np.dtype(np.float64), "causal")
    assert x.mask is not None and x.mask.tolist() == [[j <= i for j in range(5)] for i in range(5)]
    assert module.inputs(5, np.dtype(np.float64)).mask is None


def test_attention_in_float64_writes_its_own_record(bench_script: Loader, tmp_path: Path) -> None:
    """A float64 run wrote ``attention.json`` and ``attention.md``, over the float32 record; its name
    now carries the dtype, after the mask's (float32, the default, is not named)."""
    module = bench_script("attention")
    assert module.main(["--smoke", "--out", str(tmp_path), "--dtype", "float64"]) == 0
    assert sorted(p.name for p in tmp_path.iterdir()) == ["attention_float64.json", "attention_float64.md"]
    record = json.loads((tmp_path / "attention_float64.json").read_text())
    assert (record["name"], record["dtype"]) == ("attention_float64", "float64")
    assert (tmp_path / "attention_float64.md").read_text().startswith("### attention_float64: ")
    names = [module.record_name(m, dtype) for m in ("none", "causal") for dtype in ("float32", "float64")]
    assert names == ["attention", "attention_float64", "attention_causal", "attention_causal_float64"]


def test_each_attention_implementation_is_given_the_mask(bench_script: Loader, monkeypatch: Any) -> None:
    """Each of the four timed calls receives the causal mask (spied at the function it calls)."""
    import torch

    from torchlean import functional

    module = bench_script("attention")
    seen: dict[str, Any] = {}

    def spy(name: str, real: Any, position: int, keyword: str) -> Any:
        def call(*args: Any, **kwargs: Any) -> Any:
            seen[name] = kwargs.get(keyword, args[position] if len(args) > position else None)
            return real(*args, **kwargs)

        return call

    monkeypatch.setattr(module.tlf, "scaled_dot_product_attention",
                        spy("session", functional.scaled_dot_product_attention, 3, "mask"))
    monkeypatch.setattr(module, "flash_attention_forward",
                        spy("flash forward", module.flash_attention_forward, 3, "mask"))
    monkeypatch.setattr(module, "flash_attention_backward",
                        spy("flash backward", module.flash_attention_backward, 6, "mask"))
    monkeypatch.setattr(torch.nn.functional, "scaled_dot_product_attention",
                        spy("torch", torch.nn.functional.scaled_dot_product_attention, 3, "attn_mask"))
    x = module.inputs(6, np.dtype(np.float64), "causal")
    for impl in (module.SessionImpl("reference", "checked_cpu"), module.FlashImpl(), module.TorchImpl()):
        impl.call(x)()
    assert set(seen) == {"session", "flash forward", "flash backward", "torch"}
    for name, mask in seen.items():
        as_array = mask.numpy() if hasattr(mask, "numpy") else np.asarray(mask)
        np.testing.assert_array_equal(as_array, x.mask, err_msg=name)


def test_names_are_stripped_and_deduplicated_as_run_only(bench_script: Loader) -> None:
    """review83 F3: ``--profiles checked_cpu,checked_cpu`` measured twice and then divided by
    zero (the growth of a size over itself); ``" fast_cpu"`` was an unknown profile."""
    _record = bench_script("_record")
    import argparse

    parser = argparse.ArgumentParser()
    known = ["checked_cpu", "fast_cpu"]
    chosen = _record.names(parser, "--profiles", " fast_cpu,checked_cpu , fast_cpu,", known, "profile")
    assert chosen == ["fast_cpu", "checked_cpu"]


def test_a_verdict_from_noisy_timings_says_so(bench_script: Loader) -> None:
    """review83 F8: a median whose IQR spans more than 1.5 times it still read "met"."""
    _record = bench_script("_record")
    steady = _record.summary([1.0, 1.1, 0.9, 1.0])
    noisy = _record.summary([0.8, 0.83, 27.9, 112.0, 120.0])  # IQR 0.83-112 around 27.9
    assert _record.verdict(_record.target(1.0, 2.0, "t", steady)) == "met"
    assert _record.verdict(_record.target(3.0, 2.0, "t", steady)) == "MISSED"
    entry = _record.target(1.0, 2.0, "t", steady, noisy)
    assert entry["reliable"] is False and entry["met"] is True
    assert _record.verdict(entry) == "met (noisy: IQR > 1.5x median)"


def test_a_verdict_from_timings_that_waited_for_a_cpu_says_so(bench_script: Loader) -> None:
    """In a loaded run the PyTorch step took 0.88 ms wall for 0.50 ms CPU time, every IQR small,
    and no verdict said noisy: a median wall time above 1.25x its CPU time, of the configuration
    or of the baseline, makes the verdict noisy too."""
    _record = bench_script("_record")
    config, config_cpu = _record.summary([0.55, 0.56, 0.57]), _record.summary([0.54, 0.55, 0.56])
    baseline, baseline_cpu = _record.summary([0.87, 0.88, 0.89]), _record.summary([0.49, 0.50, 0.51])
    loaded = _record.target(0.64, 1.2, "t", config, baseline, cpu=(config_cpu, baseline_cpu))
    assert loaded["met"] is True and loaded["reliable"] is False
    assert loaded["wall_per_cpu"] == pytest.approx([0.56 / 0.55, 1.76])
    assert _record.verdict(loaded) == "met (noisy: wall time 1.76x CPU time > 1.25x)"
    unloaded = _record.target(0.64, 1.2, "t", config, baseline, cpu=(config_cpu, baseline))
    assert unloaded["reliable"] is True and _record.verdict(unloaded) == "met"
    spread = _record.summary([0.8, 0.83, 27.9, 112.0, 120.0])
    both = _record.target(3.0, 2.0, "t", spread, baseline, cpu=(spread, baseline_cpu))
    assert _record.verdict(both) == "MISSED (noisy: IQR > 1.5x median; wall time 1.76x CPU time > 1.25x)"


def test_backend_rows_name_the_backward_owner_and_trust(bench_script: Loader) -> None:
    """review83 F6: the rows left out who owns each op's backward (the libtorch bridge's is
    TorchLean's tape rule) and the trust level."""
    _record = bench_script("_record")
    import numpy as np

    import torchlean as tl

    with tl.session("libtorch_forward_cpu") as session:
        q = tl.tensor(np.ones((1, 2, 2)))
        tl.scaled_dot_product_attention(q, q, q)
        rows = _record.backend_rows(session.selected)
    assert {"op": "scaled_dot_product_attention", "capsule": "libtorch.sdpa_forward",
            "provider": "libtorch", "reduction": "implementation-defined", "vjp": "torchlean-tape",
            "trust": "trusted-external"} in rows


def test_the_commit_says_where_the_measured_torchlean_was_imported_from(bench_script: Loader) -> None:
    """review83 F7: the commit was the bench checkout's whatever torchlean was measured."""
    import torchlean

    record = bench_script("_record").commit()
    assert record["torchlean"] == str(Path(torchlean.__file__).resolve().parent)
    # review227 F5: the checkout's own package only, not a copy elsewhere under it (an ignored .venv)
    assert record["measured_here"] is (Path(torchlean.__file__).resolve().parent == ROOT / "torchlean")


def test_a_nan_difference_disagrees(bench_script: Loader) -> None:
    """review227 F1: Python's max kept an earlier number beside a NaN, so a kernel returning NaN
    read "agrees" in train_step's and attention's checks."""
    _record = bench_script("_record")
    nan = float("nan")
    for values in ([0.0, nan], [nan, 0.0], [1e-9, 2e-9, nan, 1e-9]):
        worst = _record.worst(values)
        assert worst != worst and not worst <= 1e-4
    assert max([0.0, nan]) == 0.0  # the trap
    assert _record.worst([1e-9, 3e-9, 2e-9]) == 3e-9 and _record.worst([]) == 0.0


_ZERO_MATMUL = """
import sys
import numpy as np
import torchlean.backend.providers.reference.kernels as K
K.matmul = lambda a, b: np.zeros((a.shape[0], b.shape[1]), a.dtype)
sys.path.insert(0, sys.argv[1])
import reduction
raise SystemExit(reduction.main(["--smoke", "--out", sys.argv[2]]))
"""


def test_a_wrong_reference_product_makes_reduction_disagree(bench_script: Loader, tmp_path: Path) -> None:
    """review227 F4: reduction's check that the same product was computed could not fail."""
    _record = bench_script("_record")
    done = subprocess.run([sys.executable, "-c", _ZERO_MATMUL, str(BENCH), str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == _record.DISAGREES, done.stderr[-2000:]
    rows = json.loads((tmp_path / "reduction.json").read_text())["rows"]
    assert rows and all(row["agrees"] is False and row["max_rel_difference_to_numpy"] == 1.0 for row in rows)
    assert "1.0e+00 DISAGREES" in (tmp_path / "reduction.md").read_text()


def test_a_closed_pipe_ends_a_script_quietly_with_status_141(tmp_path: Path) -> None:
    """review83 F5: ``run.py | head`` ended in a BrokenPipeError traceback. The reader closes
    before the script writes (``true`` reads nothing); the script's status is 141."""
    import sys

    script = ROOT / "bench" / "reduction.py"
    done = subprocess.run(
        f"{sys.executable} {script} --smoke --out {tmp_path} | true; echo \"status ${{PIPESTATUS[0]}}\"",
        shell=True, capture_output=True, text=True, timeout=600, executable="/bin/bash",
    )
    assert "Traceback" not in done.stderr and "BrokenPipeError" not in done.stderr, done.stderr
    assert done.stdout.strip() == "status 141"


_TRIPLED_VJP = """
import sys
import torchlean.backend.providers.reference.kernels as K  # patched before any handler binds it
original = K.log_softmax_vjp
K.log_softmax_vjp = lambda g, x, *, out, axis=-1: tuple(
    None if t is None else 3.0 * t for t in original(g, x, out=out, axis=axis))
sys.path.insert(0, sys.argv[1])
import train_step
raise SystemExit(train_step.main(["--smoke", "--models", "mlp", "--out", sys.argv[2]]))
"""


def test_a_verdict_of_results_that_disagree_says_so_and_the_script_exits_disagrees(
    bench_script: Loader, tmp_path: Path
) -> None:
    """review143 F2: a failed agreement check left every verdict ``met`` and exit status 0. Here a
    reference VJP off by 3x (whose Adam losses agree: review143 F1), in a process of its own, is
    caught by the gradient check: its configurations' verdicts say DISAGREE, the script exits
    ``_record.DISAGREES`` after writing its record, and ``run.py`` shows its table with that
    status."""
    _record, run = bench_script("_record"), bench_script("run")
    steady = _record.summary([1.0, 1.0, 1.0])
    assert _record.verdict(_record.target(1.0, 2.0, "t", steady, agrees=False)) == (
        "met (its results DISAGREE with the reference's: see the agreement check)"
    )
    done = subprocess.run([sys.executable, "-c", _TRIPLED_VJP, str(BENCH), str(tmp_path)],
                          capture_output=True, text=True, check=False, cwd=ROOT)
    assert done.returncode == _record.DISAGREES, done.stderr[-2000:]
    record = json.loads((tmp_path / "train_step.json").read_text())
    (result,) = record["results"]
    assert result["loss_check"]["agrees"] is True  # Adam's losses do not show it
    gradients = result["gradient_check"]
    assert gradients["agrees"] is False
    assert gradients["per_config"]["checked_cpu eager"] == pytest.approx(2.0, rel=1e-3)  # 3x - 1x
    assert gradients["per_config"]["fast_cpu eager"] < gradients["tolerance"]  # aten's own VJP
    verdicts = {c["config"]: c["target"] for c in result["configs"] if c["target"] is not None}
    assert verdicts["checked_cpu eager"]["agrees"] is False and verdicts["fast_cpu eager"]["agrees"] is True
    outcome = run.Outcome("train_step", "DISAGREES", 1.0, "its agreement check failed: see its table")
    text = run.summary(tmp_path, [outcome], "python bench/run.py --smoke", 2)
    assert "| train_step | DISAGREES (its agreement check failed: see its table) |" in text
    assert "### train_step" in text


def test_dispatch_targets_take_the_wall_cpu_rule_of_the_calls_they_come_from(bench_script: Loader) -> None:
    """review143 F3: a dispatch run that waited for a CPU read as a clean MISSED. The overhead's
    targets now see the wall/CPU rule of the eager call and the kernel alone it is computed from;
    and its cells never round onto the limit (F4)."""
    _record = bench_script("_record")
    overhead = _record.summary([12.0, 12.0, 12.0])
    waited, cpu = _record.summary([20.0, 20.1, 20.2]), _record.summary([10.0, 10.1, 10.2])
    entry = _record.target(12.0, 10.0, "t", overhead, wall_cpu=[(waited, cpu), (cpu, cpu)])
    assert entry["reliable"] is False
    assert _record.verdict(entry) == "MISSED (noisy: wall time 1.99x CPU time > 1.25x)"
    assert _record.shown(10.004, 10.0, 2) == "10.004"


def test_run_removes_a_scripts_earlier_record_before_running_it(
    bench_script: Loader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """review143 F8: a script that failed left its previous record in the folder, beside a summary
    that said it failed."""
    run = bench_script("run")
    for suffix in (".json", ".md"):
        (tmp_path / f"reduction{suffix}").write_text("an older run's record")
    failing = subprocess.CompletedProcess(args=[], returncode=1)
    monkeypatch.setattr(run.subprocess, "run", lambda *args, **kwargs: failing)
    outcome = run.run_script("reduction", ["--smoke"], tmp_path)
    assert (outcome.status, outcome.detail) == ("failed", "exit status 1")
    assert not (tmp_path / "reduction.json").exists() and not (tmp_path / "reduction.md").exists()


def test_first_call_exp_writes_its_record_and_tells_an_inaccurate_first_call(
    bench_script: Loader, tmp_path: Path
) -> None:
    """The separate study of review153 M1 (not run by run.py): one fresh process per mode here;
    a run is inaccurate only when its first call is off by more than ten times its second."""
    module = bench_script("first_call_exp")
    assert module.DEFAULT_PATH == BENCH / "results" / "first_call_exp.json"
    path = tmp_path / "f.json"
    assert module.main([str(path), "--runs", "1"]) == 0
    record = json.loads(path.read_text())
    assert (record["name"], record["child_threads"], list(record["modes"])) == (
        "first_call_exp", 2, ["plain", "warmed"])
    for mode in record["modes"].values():
        assert mode["runs"] == 1 and mode["inaccurate"] in (0, 1)
        assert 0 <= mode["max_second_call_error"] < 1e-15  # the second call is accurate
    assert module.inaccurate({"first": 3.3e-9, "second": 0.0})
    assert not module.inaccurate({"first": 2e-16, "second": 0.0})
    assert not module.inaccurate({"first": 3e-15, "second": 1e-15})


def test_first_call_exp_records_a_failed_process_and_exits_1(
    bench_script: Loader, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """review154 L8: a child that failed ended the study with a traceback and lost its stderr."""
    module = bench_script("first_call_exp")
    monkeypatch.setattr(module, "CHILD", "import sys; sys.exit('boom: no torch here')")
    path = tmp_path / "f.json"
    assert module.main([str(path), "--runs", "1"]) == 1
    record = json.loads(path.read_text())
    assert record["modes"]["plain"] == {"runs": 0, "inaccurate": 0, "max_first_call_error": None,
                                        "max_second_call_error": None, "failed": ["boom: no torch here"]}
    err = capsys.readouterr().err
    assert "plain: a process failed: boom: no torch here" in err and "Traceback" not in err
