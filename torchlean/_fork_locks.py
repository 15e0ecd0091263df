"""Module-level locks that a ``fork`` leaves usable in the child.

A fork copies a lock as it is at that moment. A lock that another thread held is copied held, and
nothing in the child will ever release it (review142 F1: the child hung in its first
``backward()``). A lock that the forking thread itself held (a signal handler that forks inside the
locked region) is copied held by a frame that may never resume: a ``multiprocessing`` "fork"
child runs its target and exits from inside the handler (review146 F1: the child's other threads
then waited for ever). :func:`renew_in_forked_children` registers hooks that make the fork wait
until no other thread holds the lock, and give the child a new, free lock under the same name.
A locked block the forking thread was inside at the fork ends in the child on the old lock object,
which nothing else uses: until it ends, a thread the child starts is not kept out of that block's
region by the new lock (review149 F5; a child forked from a signal handler normally runs its work
and exits before).
"""

from __future__ import annotations

import os
import sys
import threading


def renew_in_forked_children(module: str, name: str) -> None:
    """Register ``os.register_at_fork`` hooks for the re-entrant lock bound to ``name`` in the
    already imported ``module``: before a fork the forking thread acquires it (waiting for any
    other thread that holds it; re-entrant, so a thread that holds it does not wait for itself),
    the parent releases it after, and the child binds ``name`` to a new ``threading.RLock()``.
    Code must therefore read the lock through the module global at each use (``with _LOCK:``),
    never keep a reference to it. Does nothing where the platform has no fork (Windows).

    Raises:
        KeyError: ``module`` is not imported.
    """
    if not hasattr(os, "register_at_fork"):
        return
    namespace = vars(sys.modules[module])

    def renew() -> None:
        namespace[name] = threading.RLock()

    os.register_at_fork(
        before=lambda: namespace[name].acquire(),
        after_in_parent=lambda: namespace[name].release(),
        after_in_child=renew,
    )
