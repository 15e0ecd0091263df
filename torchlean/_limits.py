"""Limits shared by the command line and the checkpoint reader, so a count a checkpoint records
is held to the range its option takes."""

from __future__ import annotations

__all__ = ["MAX_TORCH_THREADS"]

MAX_TORCH_THREADS = 1024
"""The most intra-op threads ``--torch-threads`` (and ``$OMP_NUM_THREADS``) may ask for, and a
checkpoint's ``torch_threads`` may record (review229 F1: 2**31 crashed ``--resume`` in torch,
5000 ran silently). ``torch.set_num_threads`` takes any C ``int`` up to 2**31 - 1 and libgomp's
``OMP_NUM_THREADS`` parser any unsigned long below 2**64 - 1, but neither can run that many: on
the 2-core project machine an op under 30000 threads stopped with ``libgomp: Thread creation
failed`` and under 2**31 - 1 with ``libgomp: Out of memory allocating 463856469096 bytes``, while
4096 ran. 1024 is well above the useful count on any CPU these models meet."""
