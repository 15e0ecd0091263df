"""torch's intra-op thread count for the CLI commands that run torch kernels (``train``,
``predict``): the ``--torch-threads`` argument type, the ``$OMP_NUM_THREADS`` fallback, and
keeping torch at the chosen count once it has been imported lazily."""

from __future__ import annotations

import os
import re
import sys
from typing import Any

from torchlean._limits import MAX_TORCH_THREADS
from torchlean.cli._args import int_at_least

__all__ = [
    "MAX_TORCH_THREADS",
    "env_threads",
    "environment_threads",
    "obey_torch_threads",
    "set_torch_threads",
    "torch_threads",
    "torch_threads_in_use",
    "unused_threads_note",
]

torch_threads = int_at_least(
    1, f"expected an integer in [1, {MAX_TORCH_THREADS}], got {{}}", below=MAX_TORCH_THREADS + 1
)
"""The ``--torch-threads N`` argument type: an integer in ``[1, MAX_TORCH_THREADS]``."""


def env_threads() -> int:
    """``$OMP_NUM_THREADS`` when it is an integer in ``[1, MAX_TORCH_THREADS]`` (surrounding
    blanks allowed), else 1.

    An invalid value (``abc``, ``0``, ``-3``, empty) is ignored with a one-line ``warning:`` on
    stderr, as torch (``Invalid OMP_NUM_THREADS variable value``) and libgomp (``Invalid value for
    environment variable OMP_NUM_THREADS``) ignore it; torchlean also ignores, with the same
    warning, values above :data:`MAX_TORCH_THREADS`, which torch and libgomp would accept up to
    their own limits. The caller then sets ``OMP_NUM_THREADS=1`` before torch (and its libgomp)
    starts, so libgomp does not also complain about a value beyond its own parser (2**64 - 1 and
    up).
    """
    env = os.environ.get("OMP_NUM_THREADS")
    if env is None:
        return 1
    given = environment_threads()
    if given is not None:
        return given
    print(
        f"warning: ignoring OMP_NUM_THREADS={env!r} (accepted: an integer in [1, {MAX_TORCH_THREADS}]); "
        "torch, where the run uses it, gets 1 thread (choose with --torch-threads N)",
        file=sys.stderr,
    )
    return 1


def environment_threads() -> int | None:
    """The count ``$OMP_NUM_THREADS`` gives when it is set to one :func:`env_threads` takes, else
    None (unset, or ignored as invalid); nothing is printed."""
    env = os.environ.get("OMP_NUM_THREADS")
    if env is not None and re.fullmatch(r"\s*0*[0-9]{1,9}\s*", env) and 1 <= int(env) <= MAX_TORCH_THREADS:
        return int(env)
    return None


def set_torch_threads(requested: int | None) -> int:
    """Fix torch's intra-op thread count for this run and return it: ``requested``, else
    ``$OMP_NUM_THREADS`` (see :func:`env_threads`), else 1. Before torch is imported (a
    ``checked_cpu`` run never imports it) this only sets ``OMP_NUM_THREADS``, which torch reads
    when it starts, so a run that does not need torch does not pay for importing it.

    Measured on the 2-core project machine under load: ``torchlean train --profile fast_cpu``
    took 3.4 s with one thread and 43 s with torch's default of two (workers spinning between
    the digits model's small ops).
    """
    threads = requested if requested is not None else env_threads()
    torch = _imported_torch()
    if torch is not None:
        torch.set_num_threads(threads)
    else:
        os.environ["OMP_NUM_THREADS"] = str(threads)
    return threads


def _imported_torch() -> Any:
    """torch when it is imported and has its thread functions, else None: a torch that another
    thread of the process is still importing is in ``sys.modules`` before them (review77 F1)."""
    torch = sys.modules.get("torch")
    return torch if hasattr(torch, "get_num_threads") and hasattr(torch, "set_num_threads") else None


def obey_torch_threads(threads: int) -> None:
    """Once torch has been imported (lazily, by the first op that needs it), give it exactly
    ``threads`` intra-op threads: torch started with ``OMP_NUM_THREADS`` set caps that value at the
    CPU count (on the 2-core project machine ``OMP_NUM_THREADS=4`` gives ``get_num_threads() ==
    2``), while ``torch.set_num_threads`` on a running torch is obeyed as asked. Called after each
    step; a dictionary lookup and a comparison once torch agrees."""
    torch = _imported_torch()
    if torch is not None and torch.get_num_threads() != threads:
        torch.set_num_threads(threads)


def torch_threads_in_use() -> int | None:
    """The intra-op thread count torch ran with, or ``None`` when torch was never imported (a
    ``checked_cpu`` run does not import it)."""
    torch = _imported_torch()
    return None if torch is None else int(torch.get_num_threads())


def unused_threads_note(given: int | None, profile_name: str, runs_torch: bool) -> str:
    """A ``note:`` line (else "") for a ``--torch-threads`` ``given`` to a command whose profile
    ``profile_name`` runs no torch kernels (``runs_torch`` false), so that the option changes
    nothing there (review188 F6: it was ignored without a word, as ``--lr 0`` is not)."""
    if given is None or runs_torch:
        return ""
    return (f"note: --torch-threads {given} has no effect: profile {profile_name} runs no torch kernels "
            "(the option sets torch's thread count, which a profile with aten or libtorch capsules uses, "
            "e.g. fast_cpu)\n")
