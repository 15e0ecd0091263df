"""Run every benchmark script and combine their tables into ``DIR/summary.md``.

Each script runs in its own process (a failure or a crash does not stop the others, and thread
and allocator settings do not leak between them) with the same ``--quick``, ``--out`` and
``--threads``; each writes ``DIR/<name>.json`` and ``DIR/<name>.md``. The exit status is 1 when
any script failed or its agreement check disagreed with the reference.

Usage: ``python3 bench/run.py [--quick] [--out DIR] [--threads N] [--only train_step,planning]``
(``--quick`` finishes in under 5 minutes on a 2-core machine).
"""

from __future__ import annotations

import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

import _record

BENCH = Path(__file__).resolve().parent
SCRIPTS = ("train_step", "dispatch", "planning", "attention", "reduction")


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one script ended: ``ok``, ``DISAGREES`` (its record written, its agreement check failed:
    :data:`_record.DISAGREES`) or ``failed`` (with its exit status)."""

    name: str
    status: str
    seconds: float
    detail: str = ""


def run_script(name: str, flags: list[str], out: Path) -> Outcome:
    """Run ``bench/<name>.py`` with ``flags`` in a fresh interpreter, output streamed through,
    after removing its record of an earlier run from ``out``, so that a script that fails leaves
    no older record beside the new summary (review143 F8)."""
    for suffix in (".json", ".md"):
        (out / f"{name}{suffix}").unlink(missing_ok=True)
    path = BENCH / f"{name}.py"
    print(f"== {name}: {' '.join([path.name, *flags])}", flush=True)
    started = time.perf_counter()
    code = subprocess.run([sys.executable, str(path), *flags], check=False).returncode
    seconds = time.perf_counter() - started
    if code == _record.DISAGREES:  # its record is written: the table shows the disagreement
        return Outcome(name, "DISAGREES", seconds, "its agreement check failed: see its table")
    if code != 0:
        return Outcome(name, "failed", seconds, f"exit status {code}")
    return Outcome(name, "ok", seconds)


def summary(out: Path, outcomes: list[Outcome], command: str, threads: int) -> str:
    """The combined markdown: the command, the commit measured (and, when torchlean was imported
    from elsewhere than this checkout, that folder: review127 F6), machine, versions and thread
    count, each script's status and time, then each table."""
    commit = _record.commit()
    machine = _record.machine()
    versions = ", ".join(f"{name} {version}" for name, version in _record.versions().items())
    parts = [
        "# torchlean benchmarks",
        "",
        f"Command: `{command}`  ",
        f"Date: {time.strftime('%Y-%m-%d %H:%M:%S %z')}  ",
        f"Commit: {commit['id']}{' with uncommitted changes' if commit.get('dirty') else ''}  ",
        *([] if commit["measured_here"] else [
            f"**torchlean imported from {commit['torchlean']}, not this checkout** (`measured_here: false`): "
            "the commit above is the bench scripts', not the library's measured  "]),
        f"Machine: {machine['processor']}, {machine['cpu_count']} CPUs, {machine['platform']}  ",
        f"Versions: {versions}  ",
        f"Threads: {threads} torch intra-op and BLAS thread(s) in each script (its record's `threads`)",
        "",
        _record.table(("script", "status", "seconds"),
                      ((o.name, o.status + (f" ({o.detail})" if o.detail else ""), f"{o.seconds:.1f}")
                       for o in outcomes)),
    ]
    for outcome in outcomes:
        table = out / f"{outcome.name}.md"
        if outcome.status in ("ok", "DISAGREES") and table.exists():
            parts += ["", table.read_text(encoding="utf-8").rstrip()]
    return "\n".join(parts) + "\n"


def main(argv: list[str] | None = None) -> int:
    parser = _record.parser(_record.description(__doc__, "run"))
    parser.add_argument("--only", default=",".join(SCRIPTS), help="comma-separated subset of scripts")
    args = parser.parse_args(argv)
    names = list(dict.fromkeys(n.strip() for n in args.only.split(",") if n.strip()))  # each once
    unknown = [n for n in names if n not in SCRIPTS]
    if unknown:
        parser.error(f"unknown script {unknown[0]} (known: {' | '.join(SCRIPTS)})")
    if not names:
        parser.error(f"--only names no script (known: {' | '.join(SCRIPTS)})")
    flags = ["--out", str(args.out), "--threads", str(args.threads)]
    flags += ["--quick"] if args.quick else []
    flags += ["--smoke"] if args.smoke else []
    started = time.perf_counter()
    outcomes = [run_script(name, flags, args.out) for name in names]
    command = " ".join(["python bench/run.py", *(argv if argv is not None else sys.argv[1:])])
    text = summary(args.out, outcomes, command, args.threads)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "summary.md").write_text(text, encoding="utf-8")
    print()
    print(text)
    print(f"wrote {args.out / 'summary.md'} ({time.perf_counter() - started:.0f} s)")
    failed = [o for o in outcomes if o.status != "ok"]
    for outcome in failed:
        print(f"error: {outcome.name} {outcome.status.lower()} ({outcome.detail})", file=sys.stderr)
    return 1 if failed else 0


if __name__ == "__main__":
    _record.run(main)
