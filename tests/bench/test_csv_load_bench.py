"""bench/csv_load.py writes its record (tiny sizes: the numbers mean nothing; no speed is asserted)."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[2]


def test_csv_load_writes_its_record(bench_script: Callable[[str], ModuleType], tmp_path: Path) -> None:
    module = bench_script("csv_load")
    out = tmp_path / "sub" / "csv_load.json"
    assert module.main([str(out), "--rows", "20,40", "--cols", "3"]) == 0
    record = json.loads(out.read_text())
    assert record["name"] == "csv_load"
    rows = [(r["reader"], r["rows"], r["cols"]) for r in record["records"]]
    assert rows == [("torchlean", 20, 4), ("numpy", 20, 4), ("torchlean", 40, 4), ("numpy", 40, 4)]
    for r in record["records"]:
        assert r["seconds"] >= 0 and 0 < r["baseline_rss_mb"] <= r["peak_rss_mb"]
        # peak minus baseline; the three are each rounded to 0.1 MB from kB
        assert abs(r["read_rss_mb"] - (r["peak_rss_mb"] - r["baseline_rss_mb"])) <= 0.15 + 1e-9
        assert r["float64_mb"] == round(r["rows"] * 4 * 8 / 2**20, 1)
        assert r["shape"] == ([r["rows"], 3] if r["reader"] == "torchlean" else [r["rows"], 4])
    assert set(record["growth"]) == {"torchlean", "numpy"}
    assert "VmHWM" in record["memory"]


def test_csv_load_records_its_provenance(
    bench_script: Callable[[str], ModuleType], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The record had only python's and numpy's versions: no commit, machine, torch version or
    thread settings, which every other bench record has (``_record.provenance``). The reads are
    faked: only the record's keys are checked."""
    module = bench_script("csv_load")
    read = {"seconds": 1.0, "baseline_rss_mb": 1.0, "peak_rss_mb": 2.0, "read_rss_mb": 1.0}
    monkeypatch.setattr(module, "measure", lambda path, reader: {"reader": reader, **read})
    out = tmp_path / "c.json"
    assert module.main([str(out), "--rows", "10,20", "--cols", "1"]) == 0
    record = json.loads(out.read_text())
    commit = subprocess.run(["git", "-C", str(ROOT), "rev-parse", "HEAD"], capture_output=True,
                            text=True, check=False).stdout.strip()
    assert record["commit"]["id"] == (commit or "unknown") and "measured_here" in record["commit"]
    assert record["machine"]["cpu_count"] >= 1 and record["created"]
    assert set(record["versions"]) == {"python", "numpy", "torch", "torchlean"}
    assert record["threads"]["torch_intra_op"] >= 1 and "env" in record["threads"]
    assert len(record["records"]) == 4


def test_csv_load_measures_the_read_not_the_parent(
    bench_script: Callable[[str], ModuleType], tmp_path: Path
) -> None:
    """review87 F1: the child read ``ru_maxrss``, which a process started by fork and exec inherits
    from its parent, so while this process was larger than the child's peak every read grew by 0.
    Oracle: ``np.loadtxt``'s result, a ``rows x 11`` float64 array, is resident when the read
    ends, so the read grew the process by at least its size."""
    module = bench_script("csv_load")
    path = tmp_path / "r.csv"
    module.write_csv(path, 20000, 10)
    ballast = np.ones(2**25)  # 256 MB held here: the parent is far larger than the child
    result = module.measure(path, "numpy")
    assert result["shape"] == [20000, 11] and ballast[-1] == 1
    assert result["read_rss_mb"] >= 20000 * 11 * 8 / 2**20


def test_csv_load_writes_the_file_it_reads(bench_script: Callable[[str], ModuleType], tmp_path: Path) -> None:
    module = bench_script("csv_load")
    path = tmp_path / "t.csv"
    module.write_csv(path, 5, 3)
    lines = path.read_text().splitlines()
    assert lines[0] == "f0,f1,f2,y" and len(lines) == 6
    assert np.loadtxt(path, delimiter=",", skiprows=1).shape == (5, 4)


@pytest.mark.parametrize("rows", ["0", "a", "", "10,-1"])
def test_csv_load_refuses_bad_sizes(bench_script: Callable[[str], ModuleType], rows: str) -> None:
    module = bench_script("csv_load")
    with pytest.raises(SystemExit) as info:
        module.main(["--rows", rows])
    assert info.value.code == 2


def test_csv_load_reads_each_row_count_once_upward(bench_script: Callable[[str], ModuleType]) -> None:
    """review107 F6: ``--rows 20000,1000`` gave a rows ratio of 0.05 (the growth ran from the
    first size to the last), and a repeated count was read twice."""
    module = bench_script("csv_load")
    assert module._sizes("20000,1000,1000") == [1000, 20000]
