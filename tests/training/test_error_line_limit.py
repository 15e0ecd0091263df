"""review229 F2: a refusal naming a very long value (a name of 100 000 characters read from a crafted
checkpoint, or typed) was printed as one ``error:`` line of that length, flooding a terminal or log;
a line over ``ERROR_LINE_LIMIT`` characters is cut in the middle, keeping its start and its end
(where the accepted values are named)."""

from __future__ import annotations

import pytest
from cli_runs import cli

from torchlean.cli import ERROR_LINE_LIMIT

KNOWN = "(known: digits | iris | breast_cancer | wine | diabetes, or a path to a CSV file)"


def test_a_long_refusal_is_cut_in_the_middle_naming_the_count(capsys: pytest.CaptureFixture[str]) -> None:
    name = "x" * 100_000
    code, out, err = cli(capsys, "train", "--dataset", name)
    line = f"unknown dataset {name} {KNOWN}"
    assert (code, out) == (2, "")
    assert err == f"error: {line[:1400]} ... ({len(line) - 1800} characters left out) ... {line[-400:]}\n"
    assert len(err) < ERROR_LINE_LIMIT + 100 and err.rstrip().endswith(KNOWN)


def test_a_refusal_at_the_limit_is_printed_whole(capsys: pytest.CaptureFixture[str]) -> None:
    name = "y" * (ERROR_LINE_LIMIT - len(f"unknown dataset  {KNOWN}"))
    assert cli(capsys, "train", "--dataset", name) == (2, "", f"error: unknown dataset {name} {KNOWN}\n")
