"""The flash-vs-standard checker and the ``torchlean attention-check`` command."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torchlean.backend.errors import TorchLeanError
from torchlean.cli import _Parser, main
from torchlean.cli import attention_check as cli
from torchlean.spec import checker
from torchlean.spec.checker import (
    FLOAT64,
    MASK_KINDS,
    MPMATH_50,
    FlashCheckReport,
    check_flash_attention,
    flash_check_cases,
    scaled_error,
)
from torchlean.spec.flash import flash_attention_backward, flash_attention_forward


@pytest.fixture(scope="module")
def full_report() -> FlashCheckReport:
    return check_flash_attention()


def test_full_sweep_passes_within_the_thresholds(full_report: FlashCheckReport) -> None:
    assert full_report.passed, full_report.failures[:5]
    assert full_report.verdict() == f"verdict: PASS ({len(full_report.rows)} cases)"
    fwd64, bwd64 = full_report.worst(FLOAT64)
    fwd_mp, bwd_mp = full_report.worst(MPMATH_50)
    assert fwd64 <= 1e-12 and bwd64 <= 1e-12
    assert fwd_mp <= 1e-40 and bwd_mp <= 1e-40
    # the 50-digit sweep really runs at 50 digits: its errors are far below float64 rounding
    assert max(fwd_mp, bwd_mp) < 1e-45


def test_sweep_covers_the_required_shapes_masks_and_tiles() -> None:
    cases = flash_check_cases()
    for precision in (FLOAT64, MPMATH_50):
        chosen = [c for c in cases if c.precision == precision]
        assert {c.mask for c in chosen} == set(MASK_KINDS)
        assert any(c.shape.n_q != c.shape.n_k for c in chosen)
        assert any(c.shape.n_q == 1 for c in chosen)
        assert any(c.shape.batch for c in chosen)
        assert any(c.config.block_q == 0 and c.config.block_k == 0 for c in chosen)
        assert any(c.config.block_q > c.shape.n_q and c.config.block_k > c.shape.n_k for c in chosen)
        assert any(c.shape.n_q % c.config.block_q != 0 for c in chosen if c.config.block_q)
    f64 = [c for c in cases if c.precision == FLOAT64]
    assert {b for c in f64 for b in (c.config.block_q, c.config.block_k)} >= {0, 1, 2, 3, 7}
    assert any(c.shape.d == 1 for c in f64)
    assert any(c.shape.n_k == 1 for c in f64)
    assert any(c.shape.q_batch != c.shape.k_batch for c in f64)  # broadcast leading axes
    assert len({c.name for c in cases}) == len(cases)
    quick = flash_check_cases(quick=True)
    assert set(quick) < set(cases) or len(quick) < len(cases)
    assert {c.mask for c in quick} == set(MASK_KINDS)


def test_checker_catches_a_wrong_forward(monkeypatch: pytest.MonkeyPatch) -> None:
    real = flash_attention_forward

    def off_by_a_little(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        out, lse = real(*args, **kwargs)
        return out * (1 + 1e-9), lse

    monkeypatch.setattr("torchlean.spec.checker.flash_attention_forward", off_by_a_little)
    cases = [c for c in flash_check_cases(quick=True) if c.mask in ("none", "random")]
    report = check_flash_attention(cases[::3])
    assert any(row.precision == MPMATH_50 for row in report.rows)
    assert all(not row.passed and row.forward_error > 1e-12 for row in report.rows)
    assert report.verdict().startswith("verdict: FAIL (")


def test_checker_catches_a_wrong_backward(monkeypatch: pytest.MonkeyPatch) -> None:
    real = flash_attention_backward

    def drop_last_key_gradient(*args: Any, **kwargs: Any) -> tuple[np.ndarray, ...]:
        dq, dk, dv = real(*args, **kwargs)
        dv = dv.copy()
        dv[..., -1, :] = dv[..., -1, :] * 0
        return dq, dk, dv

    monkeypatch.setattr("torchlean.spec.checker.flash_attention_backward", drop_last_key_gradient)
    cases = [c for c in flash_check_cases(quick=True) if c.mask == "none"][:6]
    report = check_flash_attention(cases)
    assert all(not row.passed and row.backward_error > 1e-3 for row in report.rows)


def test_scaled_error() -> None:
    want = np.array([1e-4, -2e-4])
    got = want + 1e-16
    assert scaled_error(got, want, 0.0) == pytest.approx(1e-16 / 2e-4, rel=1e-3, abs=0)
    assert scaled_error(got, want, 1.0) == pytest.approx(1e-16, rel=1e-3, abs=0)
    assert scaled_error(np.array([np.nan, 0.0]), want, 1.0) == float("inf")
    assert scaled_error(want[:1], want, 1.0) == float("inf")
    assert scaled_error(np.zeros(2), np.zeros(2), 0.0) == 0.0


def test_report_table_and_json(full_report: FlashCheckReport) -> None:
    table = full_report.table().splitlines()
    assert table[0].split() == [
        "case",
        "precision",
        "shape",
        "mask",
        "tiles",
        "forward",
        "backward",
        "limit",
        "result",
    ]
    assert len(table) == len(full_report.rows) + 1
    assert len({len(line) for line in table[1:] if line.endswith("ok")}) <= 2  # aligned columns
    record = json.loads(json.dumps(full_report.to_dict()))
    assert record["passed"] is True and len(record["rows"]) == len(full_report.rows)
    assert record["thresholds"] == {"float64": 1e-12, "mpmath-50": 1e-40}


# --- command line -------------------------------------------------------------------------------


def _parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="torchlean")
    cli.register(parser.add_subparsers(dest="command", parser_class=_Parser))
    return parser


def test_command_quick_prints_table_and_verdict_and_writes_json(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    path = tmp_path / "out" / "check.json"
    args = _parser().parse_args(["attention-check", "--quick", "--json", str(path)])
    assert args.func(args) == 0
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    n = len(flash_check_cases(quick=True))
    assert lines[0].split()[:3] == ["case", "precision", "shape"]
    assert lines[-1] == f"verdict: PASS ({n} cases)"
    assert any(line.startswith("worst mpmath-50: forward ") for line in lines)
    assert captured.err == ""  # stderr is not a terminal here: no progress bar (tqdm disable=None)
    record = json.loads(path.read_text())
    assert record["command"] == "attention-check" and record["quick"] is True
    assert record["verdict"] == lines[-1] and len(record["rows"]) == n


class _Terminal(io.StringIO):
    """A text stream that says it is a terminal (tqdm draws its bar only on one)."""

    def isatty(self) -> bool:
        return True


@pytest.mark.parametrize(("stream", "enabled", "drawn"), [
    (_Terminal, True, True),
    (_Terminal, False, False),  # --no-progress
    (io.StringIO, True, False),  # not a terminal: a log file, a pipe, CI
])
def test_progress_bar_only_on_a_terminal(
    monkeypatch: pytest.MonkeyPatch, stream: type[io.StringIO], enabled: bool, drawn: bool
) -> None:
    err = stream()
    monkeypatch.setattr(sys, "stderr", err)
    cases = flash_check_cases(quick=True)[:3]
    assert tuple(cli._progress(enabled)(cases)) == cases
    assert ("attention-check" in err.getvalue()) is drawn
    assert ("3/3" in err.getvalue()) is drawn


def test_empty_json_path_is_its_own_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as exit_info:
        main(["attention-check", "--quick", "--json", ""])
    assert exit_info.value.code == 2
    captured = capsys.readouterr()
    assert (captured.out, captured.err) == ("", "error: argument --json: expected a file path, got ''\n")


def test_command_through_main(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["attention-check", "--quick", "--no-progress"]) == 0
    captured = capsys.readouterr()
    assert captured.out.splitlines()[-1].startswith("verdict: PASS (")
    assert captured.err == ""


def test_command_fails_with_exit_one(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    real = checker.run_flash_case

    def failing(case: checker.FlashCheckCase) -> checker.FlashCheckRow:
        row = real(case)
        return dataclasses.replace(row, passed=False)

    monkeypatch.setattr(checker, "run_flash_case", failing)
    args = _parser().parse_args(["attention-check", "--quick", "--no-progress"])
    assert args.func(args) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-1].startswith("verdict: FAIL (") and "FAIL" in out[1]


def test_a_failing_case_with_a_non_finite_result_writes_strict_json(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    real = flash_attention_forward

    def nan_output(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        out, lse = real(*args, **kwargs)
        return np.full_like(out, np.nan), lse

    monkeypatch.setattr("torchlean.spec.checker.flash_attention_forward", nan_output)
    path = tmp_path / "check.json"
    cases = [c for c in flash_check_cases(quick=True) if c.precision != MPMATH_50][:3]
    monkeypatch.setattr(cli, "flash_check_cases", lambda **_: tuple(cases))
    args = _parser().parse_args(["attention-check", "--no-progress", "--json", str(path)])
    assert args.func(args) == 1
    capsys.readouterr()

    def refuse(constant: str) -> None:
        raise AssertionError(f"not strict JSON: {constant}")

    record = json.loads(path.read_text(), parse_constant=refuse)  # no Infinity / NaN tokens
    assert [row["forward_error"] for row in record["rows"]] == [None, None, None]
    assert record["worst"]["float64"]["forward"] is None and record["passed"] is False


def test_an_empty_report_fails_and_says_nothing_was_checked() -> None:
    report = check_flash_attention([])
    assert not report.passed
    assert report.verdict() == "verdict: FAIL (no cases were checked)"


def test_command_usage_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    with pytest.raises(SystemExit) as exit_info:
        _parser().parse_args(["attention-check", "--seed", "-3"])
    assert exit_info.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("error: ") and "invalid seed -3" in err and len(err.splitlines()) == 1
    blocker = tmp_path / "file"
    blocker.write_text("")
    args = _parser().parse_args(
        ["attention-check", "--quick", "--no-progress", "--json", str(blocker / "x.json")]
    )
    with pytest.raises(TorchLeanError, match="cannot write the JSON report") as info:
        args.func(args)
    assert f"{blocker} is a file, not a directory" in str(info.value)
    assert capsys.readouterr().out == ""  # refused before the check ran


def test_minus_inf_key_cases_hold_an_allowed_minus_inf_score_and_pass() -> None:
    cases = [c for c in flash_check_cases(quick=True) if c.mask == "minus-inf-key" and c.shape.d > 0]
    assert {c.precision for c in cases} == {"float64", MPMATH_50}
    positions = []
    for case in cases:
        problem = checker._make_problem(case)
        scores = np.asarray(problem.q @ np.swapaxes(problem.k, -1, -2), dtype=float)
        (minus_inf_keys,) = np.nonzero(np.all(scores == -np.inf, axis=tuple(range(scores.ndim - 1))))
        assert len(minus_inf_keys) == 1 and problem.mask is not None
        key = int(minus_inf_keys[0])
        assert problem.mask[..., 0, key].all()  # allowed for row 0
        tile = case.config.block_k or case.shape.n_k  # 0: one tile over every key
        positions.append((key, case.shape.n_k, tile))
    # over the quick sweep the -inf key falls in the first key tile, in a later one, and last
    assert any(key < block for key, _, block in positions)
    assert any(key >= block for key, _, block in positions)
    assert any(key == n - 1 and n > 1 for key, n, _ in positions)
    report = check_flash_attention(cases)
    assert report.passed


def test_far_scores_cases_put_every_score_below_exps_range_and_pass() -> None:
    """Every score below -709 underflows ``exp`` in float64: the online softmax's first rescale
    must not compute ``exp(-maximum)`` (review20 mut FL1 gave NaN there and the sweep passed)."""
    cases = [c for c in flash_check_cases(quick=True) if c.mask == "far-scores" and c.shape.d > 0]
    assert {c.precision for c in cases} == {"float64", MPMATH_50}
    for case in cases:
        problem = checker._make_problem(case)
        scores = np.asarray(problem.q @ np.swapaxes(problem.k, -1, -2), dtype=float) / np.sqrt(case.shape.d)
        assert scores.size and scores.max() < -990.0  # -1000 q0 (q0 >= 1) plus a small q.k term
        assert np.exp(scores).max() == 0.0  # the premise: all of them underflow
    report = check_flash_attention(cases)
    assert report.passed, report.table()


def test_scaled_error_compares_identical_non_finite_patterns_by_their_finite_entries() -> None:
    want = np.array([np.nan, -np.inf, 2.0])
    # 2 + 1e-15 is stored as 2 + 2 ulp = 2 + 8.88e-16, over the scale 2 (the earlier expected 5e-16
    # passed only under pytest.approx's default abs=1e-12)
    scaled = scaled_error(np.array([np.nan, -np.inf, 2.0 + 1e-15]), want, 0.0)
    assert scaled == 2 * np.spacing(2.0) / 2
    assert scaled_error(np.array([np.nan, np.inf, 2.0]), want, 0.0) == float("inf")  # other infinity
    assert scaled_error(np.array([0.0, -np.inf, 2.0]), want, 0.0) == float("inf")  # NaN lost
    assert scaled_error(np.array([np.nan, -np.inf, np.nan]), want, 0.0) == float("inf")  # NaN gained


def test_scaled_error_and_natural_scales_hand_values() -> None:
    """Relative comparisons without ``pytest.approx``'s default ``abs=1e-12``, which made the
    small expected values above unfalsifiable (review20 mut C3, C4)."""
    from torchlean.spec.checker import natural_scales, scaled_error

    want = np.array([1e-4, -2e-4])
    assert scaled_error(want + 1e-16, want, 0.0) == pytest.approx(1e-16 / 2e-4, rel=1e-3, abs=0)
    assert scaled_error(np.array([2.0]), np.array([1.0]), 0.5) == 1.0
    q, k, v, d_out = (np.full((1, 2), c) for c in (3.0, 5.0, 7.0, 11.0))
    assert natural_scales(q, k, v, d_out, 0.5) == (7.0, 0.5 * 11 * 7 * 5, 0.5 * 11 * 7 * 3, 11.0)
