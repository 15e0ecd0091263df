"""Ctrl-C after a command's outputs are written (review128 F3): a finished, saved run was
reported as ``error: interrupted`` (exit 130) when the Ctrl-C landed while the command's context
managers closed, and during the interpreter's shutdown it printed a ``KeyboardInterrupt``
traceback from an ``atexit`` handler or killed the process by SIGINT. The interrupt is simulated
where it lands (no timing): right after the command marks its status final, and from an
``atexit`` handler."""

from __future__ import annotations

import signal
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

import torchlean.cli as cli
from torchlean.cli import _completion, attention_check, inspect_command, predict, train


def _interrupt_after(monkeypatch: pytest.MonkeyPatch, module: object) -> None:
    """``module.completed`` marks the status, then a Ctrl-C lands at once."""

    def completed_then_ctrl_c(status: int) -> int:
        _completion.completed(status)
        raise KeyboardInterrupt

    monkeypatch.setattr(module, "completed", completed_then_ctrl_c)


@pytest.fixture(scope="module")
def checkpoint(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("run") / "iris.npz"
    assert cli.main(["train", "--dataset", "iris", "--epochs", "1", "--save", str(path)]) == 0
    return path


@pytest.mark.parametrize("report", [False, True], ids=["output", "output+report"])
def test_predict_finished_then_ctrl_c_keeps_status_0_and_the_files(
    report: bool, checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    capsys.readouterr()
    _interrupt_after(monkeypatch, predict)
    output, record = tmp_path / "p.csv", tmp_path / "p.json"
    argv = ["predict", str(checkpoint), "--dataset", "iris", "--output", str(output)]
    assert cli.main(argv + (["--report-json", str(record)] if report else [])) == 0
    assert "error: interrupted" not in capsys.readouterr().err
    assert len(output.read_text().splitlines()) == 151  # the header and one row per iris sample
    assert record.exists() is report


def test_train_saved_then_ctrl_c_keeps_status_0_and_the_checkpoint(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """review131 F5: the case review128 F3 reported, a Ctrl-C after ``saved:`` (the stopping-signal
    handlers of ``--save`` are gone while ``train`` leaves its context managers)."""
    _interrupt_after(monkeypatch, train)
    saved = tmp_path / "r.npz"
    assert cli.main(["train", "--dataset", "iris", "--epochs", "1", "--save", str(saved)]) == 0
    out, err = capsys.readouterr()
    assert "error: interrupted" not in err
    assert out.splitlines()[-1] == f"saved: {saved}"
    assert saved.stat().st_size > 0


def test_train_report_written_then_ctrl_c_keeps_status_0(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Without --save no handler takes Ctrl-C: the report written is the mark."""
    calls: list[int] = []

    def completed_then_ctrl_c(status: int) -> int:
        _completion.completed(status)
        calls.append(status)
        if len(calls) == 1:  # the mark after the report, before its wrote line
            raise KeyboardInterrupt
        return status

    monkeypatch.setattr(train, "completed", completed_then_ctrl_c)
    record = tmp_path / "r.json"
    assert cli.main(["train", "--dataset", "iris", "--epochs", "1", "--report-json", str(record)]) == 0
    out, err = capsys.readouterr()
    assert "error: interrupted" not in err
    assert f"wrote {record}" not in out  # marked once the file was written, before its wrote line
    assert record.stat().st_size > 0 and calls == [0]


def test_inspect_finished_then_ctrl_c_keeps_status_0(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    capsys.readouterr()
    _interrupt_after(monkeypatch, inspect_command)
    record = tmp_path / "i.json"
    assert cli.main(["inspect", str(checkpoint), "--report-json", str(record)]) == 0
    assert "error: interrupted" not in capsys.readouterr().err
    assert record.stat().st_size > 0


def test_attention_check_finished_then_ctrl_c_keeps_its_verdict_status(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    _interrupt_after(monkeypatch, attention_check)
    record = tmp_path / "a.json"
    status = cli.main(["attention-check", "--quick", "--no-progress", "--json", str(record)])
    assert status == 0  # PASS
    assert "error: interrupted" not in capsys.readouterr().err
    assert record.stat().st_size > 0


def test_ctrl_c_before_completion_is_still_interrupted(
    checkpoint: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The mark of an earlier call does not carry over: a Ctrl-C before this call's outputs are
    written is ``error: interrupted``, exit 130."""
    capsys.readouterr()

    def interrupted(*_: object, **__: object) -> None:
        raise KeyboardInterrupt

    _completion.completed(0)  # as an earlier in-process command left it
    monkeypatch.setattr(predict, "_write", interrupted)
    argv = ["predict", str(checkpoint), "--dataset", "iris", "--output", str(tmp_path / "p.csv")]
    assert cli.main(argv) == 130
    assert capsys.readouterr().err.endswith("error: interrupted\n")


@pytest.fixture
def stopping_signals_restored() -> Iterator[None]:
    """console_main ignores SIGINT, SIGTERM and SIGHUP after main for the interpreter's shutdown:
    put this process's handlers back, for the tests that deliver those signals later."""
    numbers = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)
    previous = {number: signal.getsignal(number) for number in numbers}
    try:
        yield
    finally:
        for number, handler in previous.items():
            signal.signal(number, handler)


def test_console_main_ignores_sigint_after_main(
    monkeypatch: pytest.MonkeyPatch, stopping_signals_restored: None
) -> None:
    monkeypatch.setattr(cli, "main", lambda: 3)
    assert cli.console_main() == 3
    assert signal.getsignal(signal.SIGINT) is signal.SIG_IGN


def test_console_main_ignores_sigterm_and_sighup_after_main_unless_handled(
    monkeypatch: pytest.MonkeyPatch, stopping_signals_restored: None
) -> None:
    """review139 F1: after ``main`` SIGTERM and SIGHUP are ignored where they have their default
    action; a handler the program installed is left as it is."""
    numbers = (signal.SIGTERM, signal.SIGHUP)
    monkeypatch.setattr(cli, "main", lambda: 0)

    def own(number: int, frame: object) -> None:
        return None

    for number in numbers:
        signal.signal(number, signal.SIG_DFL)
    assert cli.console_main() == 0
    assert [signal.getsignal(number) for number in numbers] == [signal.SIG_IGN] * 2
    signal.signal(signal.SIGTERM, own)
    signal.signal(signal.SIGHUP, signal.SIG_DFL)
    assert cli.console_main() == 0
    assert signal.getsignal(signal.SIGTERM) is own
    assert signal.getsignal(signal.SIGHUP) is signal.SIG_IGN


def test_console_main_interrupted_before_main_handles_it(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], stopping_signals_restored: None
) -> None:
    def stopped() -> int:
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "main", stopped)
    assert cli.console_main() == 130
    assert capsys.readouterr().err == "error: interrupted\n"


_SHUTDOWN = """
import atexit, os, signal, sys
atexit.register(lambda: os.kill(os.getpid(), signal.SIGINT))  # a Ctrl-C during the shutdown
sys.argv = ["torchlean", "capsules"]
from torchlean.cli import console_main
raise SystemExit(console_main())
"""


@pytest.mark.parametrize("name", ["SIGINT", "SIGTERM", "SIGHUP"])
def test_a_stopping_signal_during_the_interpreter_shutdown_is_ignored(tmp_path: Path, name: str) -> None:
    """The signal lands from an ``atexit`` handler, after ``main`` returned: exit status 0, no
    message (SIGTERM and SIGHUP ended the process with 143 and 129: review139 F1)."""
    script = _SHUTDOWN.replace("signal.SIGINT", f"signal.{name}")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path,
                          check=False)
    assert (done.returncode, done.stderr) == (0, "")
    assert "reference.relu" in done.stdout


def test_python_m_torchlean_and_the_console_script_run_console_main() -> None:
    import tomllib

    import torchlean.__main__ as entry

    pyproject = Path(__file__).resolve().parents[2] / "pyproject.toml"
    scripts = tomllib.loads(pyproject.read_text())["project"]["scripts"]
    assert scripts == {"torchlean": "torchlean.cli:console_main"}
    assert entry.console_main is cli.console_main
