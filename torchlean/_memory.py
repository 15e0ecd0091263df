"""The memory this process may use: what the checks that refuse work too large for it compare
against (``torchlean train``'s model-size check, :func:`torchlean.checkpoint.load`'s check of the
arrays a checkpoint declares), before anything is allocated."""

from __future__ import annotations

import os

__all__ = ["byte_count", "usable_memory"]

CGROUP_LIMITS = ("/sys/fs/cgroup/memory.max", "/sys/fs/cgroup/memory/memory.limit_in_bytes")
"""A container's memory limit (cgroup v2, then v1): docker's ``--memory``, Slurm's ``--mem``."""


def usable_memory() -> int | None:
    """The memory this process may use, in bytes: the machine's physical memory (``sysconf``), or
    a container's cgroup limit when smaller (review78 F4: a check against the machine alone let a
    container's out-of-memory killer end the process instead); None where neither is known."""
    try:
        known = [int(os.sysconf("SC_PAGE_SIZE")) * int(os.sysconf("SC_PHYS_PAGES"))]
    except (AttributeError, ValueError, OSError):  # no sysconf (Windows), or the name unknown
        known = []
    for path in CGROUP_LIMITS:
        try:
            with open(path, encoding="ascii") as limit:
                text = limit.read().strip()
        except OSError:
            continue
        if text.isdigit():  # "max" where no limit is set
            known.append(int(text))
    return min(known) if known else None


def byte_count(count: int) -> str:
    """``count`` bytes in binary units, as the memory refusals name sizes: ``7.28 TiB``,
    ``126 GiB``, ``512 B``."""
    value, unit = float(count), "B"
    for unit in ("B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"):
        if value < 1024 or unit == "EiB":
            break
        value /= 1024
    return f"{value:.3g} {unit}" if unit != "B" else f"{count} B"
