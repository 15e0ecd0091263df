"""``bench/exception_probe.py``: each case runs in a child whose death is recorded, the reading
names the first step that crashed, and on this machine (where nothing crashes) every case behaves
as expected."""

from __future__ import annotations

import json
import shutil
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "bench" / "exception_probe.py"


@pytest.fixture
def probe(bench_script: Callable[[str], ModuleType]) -> ModuleType:
    return bench_script("exception_probe")


def _expected(probe: ModuleType) -> dict[str, str]:
    return {case: outcome for case, _, outcome in probe.CASES}


def test_a_child_killed_by_a_signal_is_a_crash(probe: ModuleType) -> None:
    result = probe.run_case("__import__('os').kill(__import__('os').getpid(), 11)", None)
    assert result["outcome"] == "crashed: signal SIGSEGV"
    result = probe.run_case("__import__('os')._exit(7)", None)
    assert result["outcome"] == "crashed: exit 7"
    result = probe.run_case("__import__('time').sleep(30)", None, timeout=1)
    assert result["outcome"] == "crashed: timed out after 1 s"


def test_a_case_that_returns_or_raises_is_recorded_as_such(probe: ModuleType) -> None:
    assert probe.run_case("'x' * 3", None) == {"outcome": "returns", "message": "xxx"}
    assert probe.run_case("torch.empty(-1)", None)["outcome"] == "raises RuntimeError"
    assert probe.run_case("int('y')", None)["outcome"] == "raises ValueError"


def test_the_reading_names_the_first_step_that_crashed(probe: ModuleType) -> None:
    fine = _expected(probe)
    assert [case for case, _, _ in probe.CASES] == [case for case, _ in probe.READINGS]
    assert probe.reading(fine) == "nothing crashed: every case behaved as expected"
    # the old failure: only the c10::Error that leaves the extension crashes
    assert probe.reading({**fine, "c10 out": "crashed: signal SIGSEGV"}) == (
        "c10 out: torch's translation of a c10::Error thrown by an extension crashes (signal SIGSEGV)"
    )
    # a crash at construction explains every later crash
    later = {case: "crashed: signal SIGSEGV" for case in fine if case != "torch error"}
    assert probe.reading({**fine, **later}).startswith(
        "construct c10::Error: constructing a c10::Error crashes"
    )
    assert probe.reading({**fine, "torch error": "crashed: signal SIGABRT"}).startswith(
        "torch error: torch's own C++ errors crash too"
    )
    assert probe.reading({**fine, "std caught in C++": "crashed: signal SIGSEGV"}).startswith(
        "std caught in C++: throwing any exception crashes"
    )
    # a case that misbehaves without crashing does not hide a later crash
    assert probe.reading({**fine, "std out": "raises TypeError", "c10 out": "crashed: exit 1"}).startswith(
        "c10 out: torch's translation"
    )
    assert probe.reading({**fine, "std out": "raises TypeError"}) == (
        "std out: expected 'raises ValueError', got 'raises TypeError' (nothing crashed)"
    )


def test_the_reading_says_when_the_probe_did_not_build(probe: ModuleType) -> None:
    control = {"torch error": "raises RuntimeError"}
    assert probe.reading(control, built=False) == (
        "the probe extension did not build; only the torch control ran, as expected"
    )
    assert probe.reading({"torch error": "crashed: signal SIGSEGV"}, built=False).startswith(
        "torch error: torch's own C++ errors crash too"
    )


def test_a_library_that_does_not_load_is_not_a_crash(probe: ModuleType, tmp_path: Path) -> None:
    library = tmp_path / "broken.so"
    library.write_bytes(b"not a library")
    result = probe.run_case("module.c10_out()", library)
    assert result["outcome"] == "not run"
    assert str(library) in result["message"]


def test_every_case_behaves_as_expected_here(probe: ModuleType, tmp_path: Path) -> None:
    """The probe's expectations hold on a healthy stack (this machine): it builds its extension,
    nothing crashes, and the record says so."""
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("needs a C++ compiler and ninja")
    out = tmp_path / "probe.json"
    assert probe.main([str(out)]) == 0
    record = json.loads(out.read_text())
    assert record["passed"] is True
    assert [row["case"] for row in record["cases"]] == [case for case, _, _ in probe.CASES]
    assert all(row["outcome"] == row["expected"] for row in record["cases"])
    assert record["reading"] == "nothing crashed: every case behaved as expected"
    assert "backtrace" not in record and "variants" not in record
    assert any("libstdc++" in path for path in record["libraries"])
    messages = {row["case"]: row["message"] for row in record["cases"]}
    assert messages["construct c10::Error"] == "constructed, not thrown"
    assert messages["c10 caught in C++"] == "thrown and caught in C++"
    assert messages["c10 out"] == "TORCH_CHECK_VALUE left to torch's translation"


def test_past_the_deadline_nothing_more_starts(probe: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_build(variant: int | None = None) -> Path:
        raise OSError("no compiler")

    monkeypatch.setattr(probe, "build", no_build)
    monkeypatch.setenv("TORCH_SHOW_CPP_STACKTRACES", "1")
    monkeypatch.setenv("LD_PRELOAD", "")
    monkeypatch.setenv("HOME_OF_SOMETHING_ELSE", "x")
    monkeypatch.setenv("TORCH_HUB_TOKEN", "not to be recorded")
    record = probe.probe(deadline=0.0)
    assert record["cases"] == [] and record["skipped"] == ["torch error"]
    # the settings that change how errors are reported are kept with the record, others are not
    assert record["environment"]["TORCH_SHOW_CPP_STACKTRACES"] == "1"
    assert record["environment"]["LD_PRELOAD"] == ""
    assert "HOME_OF_SOMETHING_ELSE" not in record["environment"]
    assert "TORCH_HUB_TOKEN" not in record["environment"]
    assert record["build_error"] == "no compiler"
    assert record["passed"] is False


def test_a_crash_without_a_debugger_says_so(probe: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    def no_build(variant: int | None = None) -> Path:
        raise OSError("no compiler")

    monkeypatch.setattr(probe, "build", no_build)
    kill = "__import__('os').kill(__import__('os').getpid(), 11)"
    monkeypatch.setattr(probe, "CASES", (("torch error", kill, "raises RuntimeError"),))
    monkeypatch.setattr(probe.shutil, "which", lambda name: None)
    seen: list[dict[str, object]] = []
    record = probe.probe(seen.append)
    assert seen == record["cases"] and record["cases"][0]["outcome"] == "crashed: signal SIGSEGV"
    assert record["reading"].startswith("torch error: torch's own C++ errors crash too")
    assert record["backtrace"] == {"case": "torch error", "text": "no gdb or cuda-gdb on PATH"}


def test_a_crashed_case_is_rerun_on_each_build_variant(
    probe: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The first crashed case runs again on every build of VARIANTS; the record says which builds
    stop the crash, and the probe still fails (the default build crashed)."""
    built: list[int | None] = []

    def fake_build(variant: int | None = None) -> Path:
        built.append(variant)
        if variant == 0:
            raise RuntimeError("Error building extension 'torchlean_exception_probe_v0'")
        suffix = "" if variant is None else f"_variant{variant}"
        return Path(f"/nowhere/{probe.MODULE_NAME}{suffix}.so")

    def fake_run_case(expression: str, library: Path | None) -> dict[str, str]:
        name = probe._module_name(library)
        if expression == "module.c10_out()" and name != f"{probe.MODULE_NAME}_variant2":
            return {"outcome": "crashed: signal SIGSEGV", "message": ""}
        return {"outcome": dict((e, o) for _, e, o in probe.CASES)[expression], "message": name}

    monkeypatch.setattr(probe, "build", fake_build)
    monkeypatch.setattr(probe, "run_case", fake_run_case)
    monkeypatch.setattr(probe.shutil, "which", lambda name: None)
    seen: list[dict[str, object]] = []
    record = probe.probe(seen.append)
    assert built == [None, 0, 1, 2, 3]
    assert record["reading"].startswith("c10 out: torch's translation of a c10::Error")
    rows = {row["variant"]: row for row in record["variants"]}
    assert list(rows) == [name for name, _, _ in probe.VARIANTS]
    assert rows["-O0"]["outcome"] == "not built" and "Error building" in rows["-O0"]["build_error"]
    assert rows["no CET"]["outcome"] == "crashed: signal SIGSEGV" and not rows["no CET"]["passed"]
    assert rows["static libgcc"]["outcome"] == "raises ValueError" and rows["static libgcc"]["passed"]
    assert rows["static libgcc"]["ldflags"] == ["-static-libgcc"]
    assert rows["static libgcc"]["message"] == f"{probe.MODULE_NAME}_variant2"
    assert rows["static libgcc"]["case"] == "c10 out [static libgcc]"
    assert record["variant_reading"] == (
        "c10 out does not crash when built with: static libgcc; "
        "it still crashes with: no CET, static libstdc++"
    )
    assert seen == record["cases"] + record["variants"]
    assert record["passed"] is False


def test_the_variant_reading(probe: ModuleType) -> None:
    def row(variant: str, outcome: str, passed: bool) -> dict[str, object]:
        return {"variant": variant, "outcome": outcome, "passed": passed}

    crashed = [row("-O0", "crashed: exit 1", False), row("no CET", "not built", False)]
    reading = probe.variant_reading
    assert reading("std out", crashed) == "std out crashes with every build variant that ran (-O0)"
    assert reading("std out", crashed[1:]) == "no build variant of std out ran to an outcome"
    assert reading("std out", []) == "no build variant of std out ran to an outcome"
    # a build on which the case ran to another outcome stopped the crash all the same
    other = [*crashed, row("static libgcc", "raises RuntimeError", False)]
    assert reading("std out", other) == (
        "std out does not crash when built with: static libgcc (raises RuntimeError); "
        "it still crashes with: -O0"
    )
    assert (
        reading("std out", other[1:])
        == "std out does not crash when built with: static libgcc (raises RuntimeError)"
    )
    fine = [
        *crashed,
        row("static libgcc", "raises ValueError", True),
        row("static libstdc++", "raises ValueError", True),
    ]
    assert reading("std out", fine) == (
        "std out does not crash when built with: static libgcc, static libstdc++; it still crashes with: -O0"
    )


def test_past_the_deadline_no_variant_is_built(probe: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(probe, "build", lambda variant=None: pytest.fail("built"))
    skipped: list[str] = []
    assert list(probe.variants("c10 out", 0.0, skipped)) == []
    assert skipped == [f"variant {name}" for name, _, _ in probe.VARIANTS]


def test_a_build_variant_builds_and_behaves_here(probe: ModuleType) -> None:
    """One variant built for real (the unwinder linked into the library): its module loads under its
    own name and raises as expected on this machine."""
    if shutil.which("ninja") is None or shutil.which("c++") is None:
        pytest.skip("needs a C++ compiler and ninja")
    index = [name for name, _, _ in probe.VARIANTS].index("static libgcc")
    library = probe.build(index)
    assert library.name.startswith(f"{probe.MODULE_NAME}_variant{index}.")
    result = probe.run_case("module.c10_out()", library)
    assert result == {
        "outcome": "raises ValueError",
        "message": "TORCH_CHECK_VALUE left to torch's translation",
    }


@pytest.mark.parametrize(("argv", "status"), [(["--help"], 0), (["a.json", "b.json"], 2), (["--out"], 2)])
def test_options_are_parsed_before_anything_is_built(
    probe: ModuleType, monkeypatch: pytest.MonkeyPatch, argv: list[str], status: int
) -> None:
    """``--help`` prints usage and a bad argument is refused, before the build (review24 docs F7:
    ``--help`` was taken as the output path after a build)."""
    monkeypatch.setattr(probe, "probe", lambda *args, **kwargs: pytest.fail("built"))
    with pytest.raises(SystemExit) as exited:
        probe.main(argv)
    assert exited.value.code == status
