"""The header of ``train``'s and ``predict``'s audit lines says the order they are in, under each
execution (review62 F8: "backend capsules used (N, first-use order)" was printed under typed-graph
execution too, where a dropout mask's ``bernoulli_mask`` is listed last although the eager run,
which draws it where the dropout layer runs, lists it third).

Oracles: the eager run's list (first-use order, the session's), and the rule the header states
for typed graph, checked by hand: the graph's kernels in forward order (the eager list without
the op run outside the graph), then ``bernoulli_mask``.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from _docs import documentation
from cli_runs import cli

from torchlean.cli import _audit
from torchlean.trainer import ExecutionMode

HEADER = re.compile(r"^backend capsules used \((\d+), (.+)\):$")
AUDIT = re.compile(r"^  (\w+): ")
TYPED = "graph plan order, then ops run outside the graph"


def capsule_report(text: str) -> tuple[str, list[str]]:
    """The header's order words and the ops of the audit lines under it (checking the count)."""
    lines = text.splitlines()
    (at,) = [i for i, line in enumerate(lines) if HEADER.match(line)]
    match = HEADER.match(lines[at])
    assert match is not None
    ops = []
    for line in lines[at + 1 :]:
        op = AUDIT.match(line)
        if op is None:
            break
        ops.append(op.group(1))
    assert int(match.group(1)) == len(ops)
    return match.group(2), ops


def test_typed_graph_header_names_its_order_and_the_mask_comes_last(
    capsys: pytest.CaptureFixture[str],
) -> None:
    runs = {}
    for execution in ("eager", "typed-graph"):
        code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
                             "--dropout", "0.2", "--execution", execution)
        assert (code, err) == (0, ""), err
        runs[execution] = capsule_report(out)
    (eager_order, eager), (graph_order, graph) = runs["eager"], runs["typed-graph"]
    # by hand: the mask is drawn where the first dropout layer runs, after linear and relu
    assert eager_order == "first-use order"
    assert eager[:4] == ["linear", "relu", "bernoulli_mask", "mul"]
    assert graph_order == TYPED
    assert graph == [op for op in eager if op != "bernoulli_mask"] + ["bernoulli_mask"]


def test_predict_names_the_order_of_the_execution_it_runs(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "tg.npz"
    code, _, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
                       "--execution", "typed-graph", "--save", str(path))
    assert code == 0, err
    for argv, order, words in (((), "graph-plan", "graph plan order"),
                               (("--execution", "eager"), "first-use", "first-use order")):
        record = tmp_path / "p.json"
        code, out, err = cli(capsys, "predict", str(path), "--dataset", "iris",
                             "--output", str(tmp_path / "p.csv"), "--report-json", str(record), *argv)
        assert code == 0, err
        # no op ran outside the graph: the header does not say that some did (review63 F7)
        assert capsule_report(out) == (words, ["linear", "relu"])
        assert json.loads(record.read_text())["capsules_order"] == order


def test_the_records_name_the_order_of_their_capsules(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review63 F7: ``capsules_order`` names the order of ``capsules`` (only ``execution`` implied
    it), and the typed-graph header adds ``then ops run outside the graph`` only when some did."""
    for execution, dropout, order, words in (
        ("eager", "0.2", "first-use", "first-use order"),
        ("typed-graph", "0.2", "graph-plan", TYPED),
        ("typed-graph", "0", "graph-plan", "graph plan order"),
    ):
        record = tmp_path / f"{execution}{dropout}.json"
        code, out, err = cli(capsys, "train", "--dataset", "iris", "--epochs", "1", "--hidden", "4",
                             "--dropout", dropout, "--execution", execution, "--report-json", str(record))
        assert (code, err) == (0, ""), err
        words_printed, ops = capsule_report(out)
        saved = json.loads(record.read_text())
        assert (words_printed, saved["capsules_order"]) == (words, order)
        assert [c["op"] for c in saved["capsules"]] == ops  # the record's list is the printed one
        assert ("bernoulli_mask" in ops) is (dropout != "0")


def test_every_execution_mode_has_its_order_words() -> None:
    assert set(_audit.ORDERS) == set(ExecutionMode)
    assert _audit.ORDERS[ExecutionMode.EAGER] == "first-use order"
    assert set(_audit.RECORD_ORDERS) == set(ExecutionMode)


def test_the_readme_states_both_orders() -> None:
    readme = documentation()
    assert "first-use order" in readme
    # the header as the README quotes it (wrapped over two lines of prose)
    assert " ".join(f"backend capsules used (7, {TYPED}):".split()) in " ".join(readme.split())
