"""``torchlean attention-check``: the tiled (flash) attention spec against standard attention.

Runs :func:`torchlean.spec.checker.check_flash_attention` with a progress bar on stderr (only when
stderr is a terminal), prints an aligned table (one line per case: precision, shape, mask, tiles,
scale, worst forward and backward relative errors, the error of the saved row logsumexp, limit,
result), the worst errors per precision, and
a final line ``verdict: PASS (N cases)`` (exit 0) or ``verdict: FAIL (F of N cases failed)`` (exit 1).
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable, Sequence
from pathlib import Path
from typing import Any

from tqdm import tqdm

from torchlean.cli._args import int_at_least
from torchlean.cli._completion import completed
from torchlean.cli._output import (
    check_writable,
    is_stdout,
    output_path,
    report_beside,
    shown_path,
    write_text_file,
)
from torchlean.cli._stdout import reader_may_leave
from torchlean.spec.checker import (
    THRESHOLDS,
    FlashCheckCase,
    FlashCheckReport,
    check_flash_attention,
    flash_check_cases,
)

_seed = int_at_least(0, "invalid seed {}; expected an integer >= 0")


def register(subparsers: Any) -> None:
    """Add the ``attention-check`` subcommand to the ``torchlean`` parser."""
    parser = subparsers.add_parser(
        "attention-check",
        help="compare the tiled (flash) attention spec with standard attention",
        description=(
            "Compare torchlean.spec.flash_attention (online softmax over tiles) with standard "
            "scaled dot-product attention, forward and backward, over shapes, boolean masks, "
            "tile sizes and scales, and its saved row logsumexp (the lse column) with a logsumexp "
            "of the allowed scaled scores computed independently, in float64 (limit 1e-12) and at "
            "50 significant digits with mpmath (limit 1e-40). The tiles column is block_q x "
            "block_k; 0 is one tile spanning the axis. The scale column is 'default' for "
            "1/sqrt(d), or an explicit scale (positive, negative or 0)."
        ),
    )
    parser.add_argument(
        "--quick", action="store_true", help="a smaller float64 sweep (the mpmath sweep is kept)"
    )
    parser.add_argument("--seed", type=_seed, default=0, help="base seed of the random inputs (default 0)")
    parser.add_argument("--json", metavar="PATH", type=output_path,
                        help="also write the report as JSON to PATH (- for stdout, the table then on stderr; "
                        "missing parent folders are created)")
    parser.add_argument("--no-progress", action="store_true",
                        help="do not show the progress bar (it is shown only when stderr is a terminal)")
    parser.set_defaults(func=run)


def _progress(enabled: bool) -> Any:
    def wrap(cases: Sequence[FlashCheckCase]) -> Iterable[FlashCheckCase]:
        # disable=None: tqdm draws only on a terminal (as ``torchlean train`` does)
        bar: Iterable[FlashCheckCase] = tqdm(
            cases, desc="attention-check", unit="case", file=sys.stderr, disable=None if enabled else True
        )
        return bar

    return wrap


def _write_json(path: Path, report: FlashCheckReport, *, quick: bool, seed: int) -> None:
    record = {"command": "attention-check", "quick": quick, "seed": seed, **report.to_dict()}
    write_text_file(path, json.dumps(record, indent=2, allow_nan=False) + "\n", "--json")


def run(args: argparse.Namespace) -> int:
    """Run the check, print the table and the verdict; 0 on PASS, 1 on FAIL. With ``--json``
    naming stdout (``/dev/stdout``), the table and verdict go to stderr."""
    json_on_stdout = is_stdout(args.json)  # before report_beside moves sys.stdout
    files = [shown_path(args.json)] if args.json is not None and not json_on_stdout else []
    # a reader of the table that goes away (| head -1) does not keep the record from being written
    # (review216 F1: the full sweep wrote none), as for train and predict
    with reader_may_leave(files, "attention-check"), report_beside(args.json):
        return completed(_run(args, json_on_stdout))  # outputs written (review128 F3)


def _run(args: argparse.Namespace, json_on_stdout: bool) -> int:
    if args.json is not None:
        check_writable(args.json, "--json")
    cases = flash_check_cases(quick=args.quick, seed=args.seed)
    report = check_flash_attention(cases, progress=_progress(not args.no_progress))
    print(report.table())
    print()
    for precision, limit in THRESHOLDS.items():
        forward, backward = report.worst(precision)
        print(
            f"worst {precision}: forward {forward:.3e}, backward {backward:.3e}, "
            f"lse {report.worst_lse(precision):.3e} (limit {limit:.0e})"
        )
    if args.json is not None:
        _write_json(args.json, report, quick=args.quick, seed=args.seed)
        if not json_on_stdout:  # as predict: stdout carries the record itself
            print(f"wrote {shown_path(args.json)}")
    status = completed(0 if report.passed else 1)  # every output written; the verdict is the last line
    print(report.verdict())
    return status
