"""``torchlean graph``: the transcript of anchor-backend.md §6.9–6.11 (issue 4, item 3), rendered
without the ``NN.IR.OpKind.`` namespace and with Python list syntax (DESIGN.md §1.2)."""

from __future__ import annotations

import pytest

from torchlean._memory import byte_count, usable_memory
from torchlean.backend import profiles
from torchlean.cli import main

MLP_TRANSCRIPT = """\
nodes 18, planned 13
  1 reshape [4] [1, 4] -> reference.reshape
  3 transpose 0 1 -> reference.permute
  4 matmul -> reference.matmul
  6 broadcast_to [8] [1, 8] -> reference.broadcast
  7 add -> reference.add
  8 reshape [1, 8] [8] -> reference.reshape
  9 relu -> reference.relu
  10 reshape [8] [1, 8] -> reference.reshape
  12 transpose 0 1 -> reference.permute
  13 matmul -> reference.matmul
  15 broadcast_to [1] [1, 1] -> reference.broadcast
  16 add -> reference.add
  17 reshape [1, 1] [1] -> reference.reshape
kernels 13, groups 13
  [1] reshape
  [3] permute
  [4] matmul
  [6] broadcast
  [7] add
  [8] reshape
  [9] relu
  [10] reshape
  [12] permute
  [13] matmul
  [15] broadcast
  [16] add
  [17] reshape
accepted under checked
13 rows, distinct capsules:
  reference.reshape
  reference.permute
  reference.matmul
  reference.broadcast
  reference.add
  reference.relu
"""


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(["graph", *argv])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_mlp_transcript(capsys):
    assert run(capsys, "--profile", "checked_cpu", "--mlp", "4,8,1") == (0, MLP_TRANSCRIPT, "")


def test_defaults_are_the_seed_example(capsys):
    assert run(capsys) == (0, MLP_TRANSCRIPT, "")


def test_relu_chain_groups_into_one(capsys):
    code, out, err = run(capsys, "--relu-chain", "3")
    assert (code, err) == (0, "")
    lines = out.splitlines()
    assert lines[0] == "nodes 4, planned 3"
    assert lines[1:4] == [f"  {i} relu -> reference.relu" for i in (1, 2, 3)]
    assert lines[4:6] == ["kernels 3, groups 1", "  [1, 2, 3] relu reference.relu"]
    assert lines[6:] == ["accepted under checked", "1 rows, distinct capsules:", "  reference.relu"]


def test_group_lines_follow_the_mode_not_the_group_size_as_the_original(capsys):
    """review30 F6 read ``[1] reshape`` (no capsule) against ``[1, 2] relu reference.relu`` as a
    rule by group size: it is the original's two reports, ``bsGroups`` for the MLP (op only) and
    ``bsChain`` for the chain (op and capsule), kept verbatim with its ``1 rows`` (anchor-backend.md
    §3, §6.10–6.11); ``--help`` says so."""
    code, out, _ = run(capsys, "--relu-chain", "1")
    assert code == 0
    assert out.splitlines()[2:] == [
        "kernels 1, groups 1",
        "  [1] relu reference.relu",  # a group of one, with its capsule
        "accepted under checked",
        "1 rows, distinct capsules:",
        "  reference.relu",
    ]
    groups = MLP_TRANSCRIPT.split("kernels 13, groups 13\n")[1].split("accepted under")[0].splitlines()
    assert all(line.count(" ") == 3 and "." not in line for line in groups)  # "  [n] op": no capsule
    with pytest.raises(SystemExit) as caught:
        main(["graph", "--help"])
    assert caught.value.code == 0
    help_text = " ".join(capsys.readouterr().out.split())
    assert ("with --mlp a group prints as [ids] op (its capsule is on its nodes' plan lines), with "
            "--relu-chain as [ids] op capsule, whatever the group's size") in help_text
    assert "'N rows, distinct capsules:' for every N, 1 included" in help_text


def test_long_relu_chain_shows_progress_on_a_terminal(capsys, monkeypatch):
    """A chain of PROGRESS_FROM nodes or more shows a bar while it is built and says that it plans
    next, on stderr and only on a terminal; stdout is the same report (review20 user F11)."""
    import sys

    from torchlean.cli import graph

    monkeypatch.setattr(graph, "PROGRESS_FROM", 3)
    _, quiet_out, quiet_err = run(capsys, "--relu-chain", "3")  # not a terminal: nothing on stderr
    assert quiet_err == ""
    monkeypatch.setattr(sys.stderr, "isatty", lambda: True)
    code, out, err = run(capsys, "--relu-chain", "3")
    assert (code, out) == (0, quiet_out)
    assert err.startswith("\rbuilding relu chain:   0%") and "/3.00 [" in err  # the total, unit-scaled
    assert err.endswith("planning and accepting 4 nodes ...\n")
    cleared, after = err.rsplit("\r", 1)  # the finished bar is wiped before that line (pmut P06)
    assert after == "planning and accepting 4 nodes ...\n" and cleared.rsplit("\r", 1)[1].strip() == ""
    _, _, short_err = run(capsys, "--relu-chain", "2")  # below PROGRESS_FROM: no bar
    assert short_err == ""


def test_relu_chain_graph_passes_its_nodes_through_progress():
    from torchlean.cli.graph import relu_chain_graph

    seen: list[range] = []

    def record(nodes: range) -> range:
        seen.append(nodes)
        return nodes

    graph = relu_chain_graph(5, record)
    assert seen == [range(5)]
    assert len(graph.nodes) == 6


def test_deeper_mlp(capsys):
    code, out, _ = run(capsys, "--mlp", "3,5,5,2")
    assert code == 0
    # the input, three vector linear layers (8 nodes each: 6 planned, 2 const) and two relus
    assert out.splitlines()[0] == "nodes 27, planned 20"
    assert "kernels 20, groups 20" in out.splitlines()


def test_cuda_profile_plans_native_capsules(capsys):
    """Planning is pure: a CUDA profile plans (and accepts) without a GPU."""
    code, out, err = run(capsys, "--profile", "checked_cuda", "--mlp", "4,8,1")
    assert (code, err) == (0, "")
    assert "  4 matmul -> native_cuda.matmul" in out.splitlines()
    assert out.splitlines()[-6:] == [
        f"  native_cuda.{name}" for name in ("reshape", "permute", "matmul", "broadcast", "add", "relu")
    ]


WIDTHS = "error: argument --mlp:"


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["--mlp", "4,x,1"], f"{WIDTHS} expected comma-separated layer widths like 4,8,1, got '4,x,1'"),
        (["--mlp", "4"], f"{WIDTHS} expected at least two positive widths like 4,8,1, got '4'"),
        (["--mlp", "4,0,1"], f"{WIDTHS} expected at least two positive widths like 4,8,1, got '4,0,1'"),
        (["--mlp", ""], f"{WIDTHS} expected comma-separated layer widths like 4,8,1, got ''"),
        # spelled as CSV cells: not Python int()'s underscores or other scripts' digits
        (["--mlp", "1_0,3"], f"{WIDTHS} expected comma-separated layer widths like 4,8,1, got '1_0,3'"),
        (["--mlp", "4,\u0663"], f"{WIDTHS} expected comma-separated layer widths like 4,8,1, got '4,\u0663'"),
        (["--relu-chain", "0"], "error: argument --relu-chain: expected an integer in [1, 1000000], got 0"),
        (
            ["--relu-chain", "1000001"],
            "error: argument --relu-chain: expected an integer in [1, 1000000], got 1000001",
        ),
        (
            ["--mlp", "99999999999,99999999999"],  # refused before the build (review110 F4)
            "error: --mlp 99999999999,99999999999: the MLP would have 1e+22 parameters, its largest weight "
            "99999999999x99999999999; building them takes about 1.04e+05 EiB (float64 initial values and "
            f"a float32 copy), and this process may use {byte_count(usable_memory())} of memory: give "
            "smaller widths",
        ),
        (
            ["--relu-chain", "two"],
            "error: argument --relu-chain: expected an integer in [1, 1000000], got 'two'",
        ),
        (
            ["--mlp", "4,8,1", "--relu-chain", "2"],
            "error: argument --relu-chain: not allowed with argument --mlp",
        ),
        (
            ["--profile", "nope"],
            f"error: argument --profile: unknown profile nope (known: {' | '.join(profiles.names())})",
        ),
    ],
)
def test_bad_arguments_are_one_line_errors(capsys, argv, message):
    with pytest.raises(SystemExit) as caught:
        code = main(["graph", *argv])
        raise SystemExit(code)
    captured = capsys.readouterr()
    assert caught.value.code == 2
    assert captured.out == ""
    assert captured.err == message + "\n"


def test_an_mlp_too_large_for_memory_is_refused_before_allocating(capsys, monkeypatch):
    """review110 F4: ``--mlp 60000,60000`` ended in a bare out-of-memory line naming no option; the
    build's peak is now counted first (4*5+5 + 5*3+3 = 43 parameters, 12 bytes each: 516 bytes,
    here against a 500-byte limit, an oracle by hand), and nothing is built."""
    from torchlean.cli import graph

    monkeypatch.setattr(graph, "usable_memory", lambda: 500)
    monkeypatch.setattr(graph, "mlp_graph", lambda widths: pytest.fail("built"))
    assert main(["graph", "--mlp", "4,5,3"]) == 2
    out, err = capsys.readouterr()
    assert out == "" and err == (
        "error: --mlp 4,5,3: the MLP would have 43 parameters, its largest weight 5x4; building them takes "
        "about 516 B (float64 initial values and a float32 copy), and this process may use 500 B of memory: "
        "give smaller widths\n"
    )


def test_an_out_of_memory_error_names_the_mlp_widths(capsys, monkeypatch):
    from torchlean.cli import graph

    def fail(widths):
        raise MemoryError("Unable to allocate 26.8 GiB")

    monkeypatch.setattr(graph, "mlp_graph", fail)
    assert main(["graph", "--mlp", "4,8,1"]) == 2
    assert capsys.readouterr().err == (
        "error: out of memory (Unable to allocate 26.8 GiB); try smaller sizes (--mlp 4,8,1)\n"
    )
