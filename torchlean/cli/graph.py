"""``torchlean graph``: lower a model to the canonical IR, plan it, group it and accept it.

``torchlean graph --profile checked_cpu --mlp 4,8,1`` prints the graph plan of the seed
chapter's "Graph Kernel Planning" section (``nodes 18, planned 13`` ...), the groups and the
acceptance result. ``--relu-chain N`` plans a hand-written chain ``input -> relu x N`` instead.
The lines are the original's, verbatim (:data:`GROUPS_NOTE`): an ``--mlp`` group line carries no
capsule, a ``--relu-chain`` one does, and one accepted row is ``1 rows``.
"""

from __future__ import annotations

import argparse
import itertools
import sys
from collections.abc import Callable, Iterable
from typing import Any

from tqdm import tqdm

from torchlean import nn
from torchlean._checks import DECIMAL_INTEGER
from torchlean._memory import byte_count, usable_memory
from torchlean.backend import profiles, report
from torchlean.backend.errors import TorchLeanError, UnknownLabelError
from torchlean.backend.graph import to_coalesced_groups
from torchlean.backend.profiles import BackendProfile
from torchlean.cli._args import int_at_least
from torchlean.ir.builder import GraphBuilder
from torchlean.ir.graph import Graph
from torchlean.nn.lowering import lower_model

__all__ = ["GROUPS_NOTE", "MAX_CHAIN", "PROGRESS_FROM", "register", "run"]

MAX_CHAIN = 1_000_000
"""The longest ``--relu-chain`` (its report prints a line per node; 100k nodes plan in ~0.2 s)."""


def _widths(text: str) -> list[int]:
    parts = text.split(",")
    if not all(DECIMAL_INTEGER.fullmatch(part.strip()) for part in parts):  # as CSV cells: not 1_0
        raise argparse.ArgumentTypeError(f"expected comma-separated layer widths like 4,8,1, got {text!r}")
    widths = [int(part) for part in parts]
    if len(widths) < 2 or min(widths) < 1:
        raise argparse.ArgumentTypeError(f"expected at least two positive widths like 4,8,1, got {text!r}")
    return widths


_chain = int_at_least(1, f"expected an integer in [1, {MAX_CHAIN}], got {{}}", below=MAX_CHAIN + 1)


GROUPS_NOTE = (
    "The lines are the original's reports, verbatim: with --mlp a group prints as [ids] op (its "
    "capsule is on its nodes' plan lines), with --relu-chain as [ids] op capsule, whatever the "
    "group's size; the acceptance counts 'N rows, distinct capsules:' for every N, 1 included."
)
"""The ``graph --help`` epilog: why an ``--mlp`` group line has no capsule and ``1 rows`` is
plural (anchor-backend.md §3 and §6.10–6.11: ``bsGroups``/``bsChain``, ``bsAcceptGraph``;
DESIGN.md §1.2 keeps library strings verbatim)."""


def register(subparsers: Any) -> None:
    """Add the ``graph`` subcommand to ``subparsers``."""
    parser = subparsers.add_parser(
        "graph",
        help="plan, group and accept a model's canonical IR graph",
        description="Lower a model to the canonical IR and show its kernel plan, groups and acceptance.",
        epilog=GROUPS_NOTE,
    )
    parser.add_argument("--profile", default="checked_cpu", type=_profile,
                        help=f"{' | '.join(profiles.names())} (default: checked_cpu)")
    shape = parser.add_mutually_exclusive_group()
    shape.add_argument("--mlp", type=_widths, default=None, metavar="W0,W1,...",
                       help="an MLP with these layer widths and relu between layers (default: 4,8,1); "
                            "its weights are built, about 12 bytes a parameter while it is lowered, "
                            "though the plan depends on the widths only (30000,30000,1 takes 10 GB)")
    shape.add_argument("--relu-chain", type=_chain, default=None, metavar="N",
                       help="a chain input -> relu x N over shape [4]")
    parser.set_defaults(func=run)


def mlp_graph(widths: list[int]) -> Graph:
    """The vector MLP ``linear -> relu -> ... -> linear`` lowered on a ``[widths[0]]`` input."""
    layers: list[nn.Layer] = []
    for index, (a, b) in enumerate(itertools.pairwise(widths)):
        if index:
            layers.append(nn.relu())
        layers.append(nn.linear(a, b))
    model = nn.build(nn.sequential(*layers), seed=0)
    return lower_model(model, (widths[0],)).built.graph


def relu_chain_graph(n: int, progress: Callable[[range], Iterable[int]] = iter) -> Graph:
    """The hand-written chain ``input [4] -> relu x n`` of anchor-backend.md §6.10.

    ``progress`` wraps the ``range(n)`` of relu nodes added (e.g. a tqdm progress bar); building
    a million nodes takes several seconds.
    """
    builder = GraphBuilder()
    x = builder.input([4])
    for _ in progress(range(n)):
        x = builder.relu(x)
    return builder.build().graph


PROGRESS_FROM = 100_000
"""The shortest ``--relu-chain`` whose build shows a progress bar (on a terminal, as ``train``)."""


def _chain_progress(nodes: range) -> Iterable[int]:
    # disable=None: tqdm draws only when stderr is a terminal
    bar: Iterable[int] = tqdm(nodes, desc="building relu chain", unit="node", unit_scale=True,
                              leave=False, file=sys.stderr, disable=None)
    return bar


def _profile(name: str) -> BackendProfile:
    """An argparse ``type`` for ``--profile``: the profile of that name, as the other backend
    commands read it (``error: argument --profile: unknown profile nope (known: ...)``).

    Raises:
        argparse.ArgumentTypeError: the :class:`UnknownLabelError` message of an unknown name.
    """
    try:
        return profiles.get(name)
    except UnknownLabelError as error:
        raise argparse.ArgumentTypeError(str(error)) from None


def _check_mlp_memory(widths: list[int]) -> None:
    """Refuse, before any allocation, an ``--mlp`` whose weights exceed the memory this process
    may use while the lowering builds the model: 12 bytes a parameter at the peak, the seed-0
    float64 initial values and their float32 copy (review110 F4: ``--mlp 60000,60000`` ended in a
    bare out-of-memory line naming no option, and widths just below the machine's memory were
    allocated for real; review113 F6: counting the float64 values alone admitted widths whose
    build peaks at 1.5 times that).

    Raises:
        TorchLeanError: naming ``--mlp``, the parameter count, the largest weight and the memory.
    """
    memory = usable_memory()
    sizes = [a * b + b for a, b in itertools.pairwise(widths)]
    needed = 12 * sum(sizes)
    if memory is None or needed <= memory:
        return
    a, b = max(itertools.pairwise(widths), key=lambda pair: pair[0] * pair[1])
    raise TorchLeanError(
        f"--mlp {','.join(map(str, widths))}: the MLP would have {sum(sizes):.3g} parameters, its largest "
        f"weight {b}x{a}; building them takes about {byte_count(needed)} (float64 initial values and a "
        f"float32 copy), and this process may use "
        f"{byte_count(memory)} of memory: give smaller widths"
    )


def run(args: argparse.Namespace) -> int:
    """Execute ``torchlean graph``; returns 0 when the plan is accepted, 1 otherwise."""
    profile: BackendProfile = args.profile
    chain = args.relu_chain is not None
    if chain:
        long_chain = args.relu_chain >= PROGRESS_FROM
        graph = relu_chain_graph(args.relu_chain, _chain_progress if long_chain else iter)
        if long_chain and sys.stderr.isatty():
            print(f"planning and accepting {args.relu_chain + 1} nodes ...", file=sys.stderr, flush=True)
    else:
        widths = args.mlp or [4, 8, 1]
        _check_mlp_memory(widths)
        graph = mlp_graph(widths)
    plan = profile.plan_graph(graph)
    for line in report.graph_plan_lines(plan):
        print(line)
    for line in report.group_lines(plan, to_coalesced_groups(plan), with_capsule=chain):
        print(line)
    result = profile.accept_graph(graph)
    for line in report.graph_result_lines(result):
        print(line)
    return 0 if result.plan is not None else 1
