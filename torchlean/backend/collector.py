"""Python's cyclic garbage collector paused around whole-graph planning.

Planning a lowered graph allocates several objects per node (plan entries, groups, audit
records) that all survive the call; each allocation burst triggers the generational collector,
whose full collections traverse every live object, so at 100k nodes the collections cost as much
as the planning itself (``bench/planning.py``, checked_cpu: 0.30 s with the collector, 0.16 s
paused, and growth per 10x nodes of about 20x instead of 10x). Reference counting frees objects
during the pause as always; a reference cycle the call leaves behind, if any, waits for the first
collection after it.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["collector_paused"]


@contextmanager
def collector_paused() -> Iterator[None]:
    """Disable the cyclic collector for the block and enable it again after (also on an
    exception) when it was enabled before; nested uses leave it to the outermost. Process-wide,
    as ``gc.disable`` is: another thread's allocations trigger no collection meanwhile."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()
