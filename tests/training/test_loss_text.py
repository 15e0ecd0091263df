"""review68 F4: a loss below 1e-4 keeps its significant digits on the epoch lines (exponent form,
as ``val_mse=`` has), while ordinary losses keep the original's 6 decimals."""

from __future__ import annotations

import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli

from torchlean.cli._output import loss_text


@pytest.mark.parametrize(("value", "shown"), [
    (1.041123, "1.041123"), (0.000100, "0.000100"), (8.3829164e-06, "8.382916e-06"),
    (-5e-05, "-5.000000e-05"), (0.0, "0.000000"), (math.inf, "inf"), (math.nan, "nan"),
    (123456.5, "123456.500000"),
])
def test_loss_text(value: float, shown: str) -> None:
    assert loss_text(value) == shown


def test_a_well_fitting_regression_prints_its_digits(capsys: pytest.CaptureFixture[str],
                                                     tmp_path: Path) -> None:
    """y = a + b exactly: the standardised loss falls below 1e-4; each printed loss reads back as
    the record's within its 7 significant digits."""
    rng = np.random.default_rng(0)
    x = rng.uniform(0, 1, (4000, 2))
    path = tmp_path / "sum.csv"
    np.savetxt(path, np.c_[x, x.sum(1)], delimiter=",", header="a,b,y", comments="", fmt="%.17g")
    report = tmp_path / "r.json"
    code, out, _ = cli(capsys, "train", "--dataset", str(path), "--epochs", "8", "--dtype", "float64",
                       "--hidden", "16", "--val-fraction", "0.1", "--report-json", str(report))
    assert code == 0
    record = json.loads(report.read_text())
    printed = [float(v) for v in re.findall(r"  loss\(standardised y\)=(\S+)", out)]
    val = [float(v) for v in re.findall(r"  val_loss\(standardised y\)=(\S+)", out)]
    exact = record["losses"] + record["validation"]["losses"]
    assert len(printed) == len(val) == 8 and min(exact) < 1e-4  # the case the finding is about
    for shown, value in zip(printed + val, exact, strict=True):
        # 6 decimals from 1e-4 up, else 7 significant digits: within half a unit of the last one
        assert abs(shown - value) <= (5e-7 if value >= 1e-4 else 5e-7 * value) * (1 + 1e-9)
