"""The flash-vs-standard checker and the ``torchlean attention-check`` command."""

from __future__ import annotations

import argparse
import dataclasses
import io
import json
import sys
from pathlib import Path
from typing import Any

import mpmath
import numpy as np
import pytest

from torchlean.backend.errors import TorchLeanError
from torchlean.cli import _Parser, main
from torchlean.cli import attention_check as cli
from torchlean.spec import _arith, checker
from torchlean.spec.checker import (
    EXPLICIT_SCALES,
    FLOAT64,
    MASK_KINDS,
    MPMATH_50,
    FlashCheckReport,
    check_flash_attention,
    flash_check_cases,
    reference_logsumexp,
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
    lse64, lse_mp = full_report.worst_lse(FLOAT64), full_report.worst_lse(MPMATH_50)
    assert lse64 <= 1e-12 and lse_mp < 1e-45
    # the lse comparison is not vacuous: most rows compare finite logsumexps that differ in the
    # last bits (float64: fold order; mpmath: 50-digit rounding), none is skipped as non-finite
    assert sum(row.lse_error > 0 for row in full_report.rows) > len(full_report.rows) // 2
    assert {row.scale for row in full_report.rows} == {"default", "1.3", "-1.7", "0.0"}


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
    assert len({c.name for c in quick}) == len(quick)
    assert EXPLICIT_SCALES == (1.3, -1.7, 0.0)  # positive non-default, negative, zero
    for sweep in (cases, quick):
        for precision in (FLOAT64, MPMATH_50):
            chosen = [c for c in sweep if c.precision == precision]
            # every mask kind meets the default scale and every explicit scale, over several shapes
            for mask in MASK_KINDS:
                assert {c.scale for c in chosen if c.mask == mask} == {None, *EXPLICIT_SCALES}
            for scale in EXPLICIT_SCALES:
                assert len({c.shape.label for c in chosen if c.scale == scale}) >= 3
                assert len({c.tiles for c in chosen if c.scale == scale}) >= 3
    # the default-scale cases come first and keep the seeds (so the inputs) they had before scales
    default = [c for c in cases if c.scale is None]
    assert cases[: len(default)] == tuple(default) and [c.seed for c in default] == list(range(len(default)))
    f64_explicit = [c for c in cases if c.precision == FLOAT64 and c.scale is not None]
    assert len(f64_explicit) == len(checker._FLOAT64_SHAPES) * len(MASK_KINDS) * len(EXPLICIT_SCALES)
    by_name = {c.name: c for c in cases}
    assert by_name["float64/wide/random/2x3/scale=default"].scale is None
    assert cases[-1].name.endswith(f"/scale={cases[-1].scale!r}")


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


def test_checker_catches_a_leak_both_algorithms_share(monkeypatch: pytest.MonkeyPatch) -> None:
    """review83 F2: NaN at the same place in both results compared equal, so poison from blocked
    positions reaching both algorithms' outputs or gradients passed. In ``nan-blocked`` cases every
    result must be finite: a shared leak into the output, or into dv, fails that column only."""
    from torchlean.spec import scaled_dot_product_attention, scaled_dot_product_attention_backward

    def leaking(real: Any, index: int | None) -> Any:
        def leaky(*args: Any, **kwargs: Any) -> Any:
            result = real(*args, **kwargs)
            parts = [np.array(part, copy=True) for part in (result if index is not None else (result,))]
            target = parts[index if index is not None else 0]
            if target.size:
                target.reshape(-1)[-1] = np.nan
            return tuple(parts) if index is not None else parts[0]

        return leaky

    cases = [c for c in flash_check_cases(quick=True) if c.mask == "nan-blocked" and c.precision == "float64"]
    cases = cases[:4]
    assert cases and all(row.passed for row in check_flash_attention(cases).rows)  # unpatched
    with monkeypatch.context() as patch:
        patch.setattr(checker, "flash_attention_backward", leaking(flash_attention_backward, 2))
        patch.setattr(checker, "scaled_dot_product_attention_backward",
                      leaking(scaled_dot_product_attention_backward, 2))
        rows = check_flash_attention(cases).rows
        assert all(not row.passed and row.backward_error == float("inf") for row in rows)
        assert all(row.forward_error <= row.threshold for row in rows)
    with monkeypatch.context() as patch:
        real_forward = flash_attention_forward

        def flash_leaky(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
            out, lse = real_forward(*args, **kwargs)
            out = np.array(out, copy=True)
            if out.size:
                out.reshape(-1)[-1] = np.nan
            return out, lse

        patch.setattr(checker, "flash_attention_forward", flash_leaky)
        patch.setattr(checker, "scaled_dot_product_attention", leaking(scaled_dot_product_attention, None))
        rows = check_flash_attention(cases).rows
        assert all(not row.passed and row.forward_error == float("inf") for row in rows)


def _with_lse(change: Any) -> Any:
    """A flash forward whose saved logsumexp is ``change(lse)``; the output is left as is."""
    real = flash_attention_forward

    def forward(*args: Any, **kwargs: Any) -> tuple[np.ndarray, np.ndarray]:
        out, lse = real(*args, **kwargs)
        return out, change(np.asarray(lse))

    return forward


def test_checker_catches_a_wrong_logsumexp(monkeypatch: pytest.MonkeyPatch) -> None:
    """lse + 1e-6, at every scale and precision: the lse column fails on every row."""
    monkeypatch.setattr("torchlean.spec.checker.flash_attention_forward", _with_lse(lambda lse: lse + 1e-6))
    cases = [c for c in flash_check_cases(quick=True) if c.mask in ("none", "random", "far-scores")][::2]
    # a case whose random mask blocks every row saves only -inf, which + 1e-6 leaves as is
    cases = [c for c in cases if np.isfinite(_reference_lse(c).astype(float)).any()]
    assert len(cases) > 60
    report = check_flash_attention(cases)
    assert {row.precision for row in report.rows} == {FLOAT64, MPMATH_50}
    assert {row.scale for row in report.rows} == {"default", "1.3", "-1.7", "0.0"}
    for row in report.rows:
        assert not row.passed and row.lse_error > row.threshold, row
        assert row.forward_error <= row.threshold  # the output itself is right
    # relative to the largest of |lse| and |score| (far-scores: about 1000, others a few units)
    assert max(row.lse_error for row in report.rows) > 1e-7


def test_only_the_lse_check_catches_a_blocked_row_saved_as_zero(monkeypatch: pytest.MonkeyPatch) -> None:
    """A row with no allowed key must save -inf. Saving 0 there changes nothing the backward
    reads (the row's probabilities are selected away), so forward and backward still agree with
    standard attention: only the independent logsumexp sees it."""
    monkeypatch.setattr(
        "torchlean.spec.checker.flash_attention_forward",
        # a zero of the working type: an object array also holding a float is refused (review239 F16)
        _with_lse(lambda lse: np.where(lse == -np.inf, _arith.zero(lse.dtype), lse)),
    )
    cases = [c for c in flash_check_cases(quick=True) if c.mask in ("blocked-rows", "nan-blocked")]
    report = check_flash_attention(cases)
    assert {row.scale for row in report.rows} == {"default", "1.3", "-1.7", "0.0"}
    for row in report.rows:
        assert row.forward_error <= row.threshold and row.backward_error <= row.threshold, row
        assert row.lse_error == float("inf") and not row.passed, row


def _reference_lse(case: checker.FlashCheckCase) -> np.ndarray:
    problem = checker._make_problem(case)
    with mpmath.workdps(50):
        return reference_logsumexp(problem.q, problem.k, problem.mask, case.scale)[0]


def _drop_scale(function: Any) -> Any:
    def without_scale(*args: Any, **kwargs: Any) -> Any:
        kwargs.pop("scale", None)
        return function(*args, **kwargs)

    return without_scale


def test_checker_catches_a_flash_that_ignores_the_scale(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("flash_attention_forward", "flash_attention_backward"):
        monkeypatch.setattr(checker, name, _drop_scale(getattr(checker, name)))
    cases = [c for c in flash_check_cases(quick=True) if c.mask in ("none", "causal-lower-right")]
    report = check_flash_attention(cases)
    explicit = [row for row in report.rows if row.scale != "default"]
    assert {row.scale for row in explicit} == {"1.3", "-1.7", "0.0"}
    for row in explicit:
        assert not row.passed and row.forward_error > 1e-3 and row.lse_error > 1e-3, row
    assert all(row.passed for row in report.rows if row.scale == "default")


def test_the_logsumexp_check_catches_a_scale_dropped_on_both_sides(monkeypatch: pytest.MonkeyPatch) -> None:
    """If the checker lost the scale for flash and standard attention alike, the two would still
    agree; the logsumexp is computed from the case's scale independently, so it fails."""
    for name in (
        "flash_attention_forward",
        "flash_attention_backward",
        "scaled_dot_product_attention",
        "scaled_dot_product_attention_backward",
    ):
        monkeypatch.setattr(checker, name, _drop_scale(getattr(checker, name)))
    cases = [c for c in flash_check_cases(quick=True) if c.mask in ("none", "random")]
    report = check_flash_attention(cases)
    explicit = [row for row in report.rows if row.scale != "default"]
    assert {row.precision for row in explicit} == {FLOAT64, MPMATH_50}
    for row in explicit:
        assert row.forward_error <= row.threshold and row.backward_error <= row.threshold, row
        assert not row.passed and row.lse_error > 1e-3, row
    assert all(row.passed for row in report.rows if row.scale == "default")


def test_reference_logsumexp_hand_values_and_torch() -> None:
    torch = pytest.importorskip("torch")
    q = np.array([[1.0, 0.0], [0.0, 1.0], [2.0, -1.0], [0.5, 0.5]])
    k = np.array([[1.0, 0.0], [0.0, 2.0], [-np.inf, 0.0]])
    mask = np.array([
        [True, True, False],  # finite scores only
        [False, False, False],  # no allowed key: -inf
        [False, False, True],  # only the -inf score (2 · -inf): NaN, flash's documented value
        [True, False, True],  # a finite score and a -inf one: the -inf one weighs nothing
    ])
    for scale in (0.5, -1.7, None):
        applied = 1 / np.sqrt(2) if scale is None else scale
        lse, score_scale = reference_logsumexp(q, k, mask, scale)
        with np.errstate(invalid="ignore"):
            scores = torch.tensor(q @ k.T * applied, dtype=torch.float64)
        want = torch.logsumexp(scores.masked_fill(~torch.tensor(mask), -torch.inf), dim=-1).numpy()
        assert lse.shape == (4,) and lse.dtype == np.float64
        assert lse[0] == pytest.approx(want[0], rel=1e-15, abs=0)
        assert lse[0] == pytest.approx(np.log(np.exp(applied) + np.exp(0.0)), rel=1e-15, abs=0)
        assert lse[1] == -np.inf
        if scale is not None and scale < 0:  # -1.7 · -inf = +inf: an allowed +inf score
            assert lse[2] == lse[3] == np.inf
        else:
            assert np.isnan(lse[2])
            assert lse[3] == pytest.approx(want[3], rel=1e-15, abs=0) and lse[3] == 0.5 * applied
        assert score_scale == abs(applied)  # largest finite allowed |score|: q0 . k0 = 1
        with mpmath.workdps(50):
            mp_lse, mp_scale = reference_logsumexp(
                _arith.as_mpf_array(q), _arith.as_mpf_array(k), mask, scale
            )
            assert mp_lse[1] == mpmath.mpf("-inf")
            assert mp_lse[2] == mpmath.inf if scale is not None and scale < 0 else mpmath.isnan(mp_lse[2])
            exact = mpmath.log(mpmath.exp(mpmath.mpf(scale) if scale is not None else 1 / mpmath.sqrt(2)) + 1)
            assert abs(mp_lse[0] - exact) < mpmath.mpf(10) ** -48
            assert abs(float(mp_lse[0]) - lse[0]) <= 4e-16 * abs(lse[0])
            assert abs(mp_scale - score_scale) <= 2e-16 * score_scale  # 1/sqrt(2): 1 ulp apart
    assert (reference_logsumexp(q, k[:2], None, 0.0)[0] == np.log(2.0)).all()  # scores all 0
    assert np.isnan(reference_logsumexp(q, k, None, 0.0)[0][:3]).all()  # 0 · -inf: an allowed NaN
    empty = reference_logsumexp(q, k[:0], None, None)[0]
    assert empty.shape == (4,) and (empty == -np.inf).all()


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
        "scale",
        "forward",
        "backward",
        "lse",
        "limit",
        "result",
    ]
    assert len(table) == len(full_report.rows) + 1
    assert len({len(line) for line in table[1:] if line.endswith("ok")}) <= 2  # aligned columns
    for line, row in zip(table[1:], full_report.rows, strict=True):
        cells = line.split()
        assert cells[-6:] == [
            row.scale,
            f"{row.forward_error:.3e}",
            f"{row.backward_error:.3e}",
            f"{row.lse_error:.3e}",
            "1e-12" if row.precision == FLOAT64 else "1e-40",
            "ok",
        ]
    record = json.loads(json.dumps(full_report.to_dict()))
    assert record["passed"] is True and len(record["rows"]) == len(full_report.rows)
    assert record["thresholds"] == {"float64": 1e-12, "mpmath-50": 1e-40}
    assert list(record["rows"][0]) == [
        "number", "case", "shape", "mask", "tiles", "scale", "precision",
        "forward_error", "backward_error", "lse_error", "threshold", "passed",
    ]
    for precision in (FLOAT64, MPMATH_50):
        forward, backward = full_report.worst(precision)
        assert record["worst"][precision] == {
            "forward": forward, "backward": backward, "lse": full_report.worst_lse(precision)
        }
    assert {row["scale"] for row in record["rows"]} == {"default", "1.3", "-1.7", "0.0"}
    assert all(row["case"].endswith(f"/scale={row['scale']}") for row in record["rows"])


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
    worst = [line for line in lines if line.startswith("worst ")]
    assert [line.split(",")[2].split()[0] for line in worst] == ["lse", "lse"]
    assert lines[0].split()[5:9] == ["scale", "forward", "backward", "lse"]
    assert captured.err == ""  # stderr is not a terminal here: no progress bar (tqdm disable=None)
    record = json.loads(path.read_text())
    assert record["command"] == "attention-check" and record["quick"] is True
    # the verdict's word and counts (review197 F9: the text line was the value); rows numbered as the
    # table's case column
    assert (record["verdict"], record["cases"], record["failed"]) == ("PASS", n, 0)
    assert len(record["rows"]) == n
    assert [row["number"] for row in record["rows"]] == [int(line.split()[0]) for line in lines[1 : n + 1]]
    assert set(record["worst"]["float64"]) == {"forward", "backward", "lse"}
    assert all(isinstance(row["lse_error"], float) and row["scale"] for row in record["rows"])


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
    with pytest.raises(TorchLeanError, match="cannot write --json ") as info:
        args.func(args)
    assert f"{blocker} is a file, not a directory" in str(info.value)
    assert capsys.readouterr().out == ""  # refused before the check ran


def _scores(case: checker.FlashCheckCase) -> np.ndarray:
    """The case's scaled scores, in float64."""
    problem = checker._make_problem(case)
    with np.errstate(invalid="ignore"):
        return np.asarray(problem.q @ np.swapaxes(problem.k, -1, -2), dtype=float) * case.applied_scale


def test_minus_inf_key_cases_hold_an_allowed_minus_inf_score_and_pass() -> None:
    cases = [c for c in flash_check_cases(quick=True) if c.mask == "minus-inf-key" and c.shape.d > 0]
    assert {c.precision for c in cases} == {"float64", MPMATH_50}
    positions = []
    for case in (c for c in cases if c.scale != 0.0):  # a negative scale included (k_j holds +inf)
        problem = checker._make_problem(case)
        scores = _scores(case)
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
    assert any(c.scale is not None and c.scale < 0 for c in cases)
    report = check_flash_attention(cases)
    assert report.passed


def test_minus_inf_key_under_scale_zero_is_an_allowed_nan_score_and_passes() -> None:
    """0 · -inf: row 0 holds an allowed NaN score; output, logsumexp and dq of row 0 are NaN in
    both algorithms and in the independent logsumexp, and the cases pass."""
    cases = [c for c in flash_check_cases(quick=True) if c.mask == "minus-inf-key" and c.scale == 0.0]
    assert {c.precision for c in cases} == {"float64", MPMATH_50}
    for case in cases:
        problem = checker._make_problem(case)
        scores = _scores(case)
        assert problem.mask is not None and np.isnan(scores[..., 0, :]).any()
        nan_rows = np.any(problem.mask & np.isnan(scores), axis=-1)  # row 0 and others allowing key j
        assert nan_rows[..., 0].all()
        lse = np.asarray(_reference_lse(case), dtype=float)
        assert np.array_equal(np.isnan(lse), nan_rows)
    report = check_flash_attention(cases)
    assert report.passed, report.table()


def test_far_scores_cases_put_every_score_below_exps_range_and_pass() -> None:
    """Every score below -709 underflows ``exp`` in float64: the online softmax's first rescale
    must not compute ``exp(-maximum)`` (review20 mut FL1 gave NaN there and the sweep passed)."""
    cases = [c for c in flash_check_cases(quick=True) if c.mask == "far-scores" and c.shape.d > 0]
    assert {c.precision for c in cases} == {"float64", MPMATH_50}
    assert {c.scale for c in cases} == {None, *EXPLICIT_SCALES}
    for case in (c for c in cases if c.scale is None):
        scores = _scores(case)
        assert scores.size and scores.max() < -990.0  # -1000 q0 (q0 >= 1) plus a small q.k term
        assert np.exp(scores).max() == 0.0  # the premise: all of them underflow
    for case in (c for c in cases if c.scale):  # k0 shifted by -1000/scale, a negative one too
        scores = _scores(case)  # -1000 q0 plus scale times a small q.k term
        assert scores.size and scores.max() < -900.0 and np.exp(scores).max() == 0.0
    for case in (c for c in cases if c.scale == 0.0):
        assert (_scores(case) == 0.0).all()  # scale 0 has no far scores: every score is 0
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


@pytest.mark.parametrize("mask", checker.MASK_KINDS)
def test_cases_without_queries_or_keys_build_and_pass(mask: str) -> None:
    """review84 F8: the case builder indexed row 0 or key n_k - 1 to block or poison them and
    raised IndexError for a shape with no query or no key (blocked-rows, nan-blocked,
    minus-inf-key). Oracle: empty results agree trivially, and the row passes."""
    base = flash_check_cases(quick=True)[0]
    for n_q, n_k in ((0, 3), (3, 0), (0, 0)):
        shape = dataclasses.replace(base.shape, n_q=n_q, n_k=n_k)
        row = checker.run_flash_case(dataclasses.replace(base, shape=shape, mask=mask))
        assert row.passed, (mask, n_q, n_k)
