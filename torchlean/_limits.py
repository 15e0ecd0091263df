"""Limits shared across modules: the command line and the checkpoint reader (a count a
checkpoint records is held to the range its option takes), and numpy's most axes."""

from __future__ import annotations

__all__ = ["MAX_RANK", "MAX_TORCH_THREADS"]

MAX_TORCH_THREADS = 1024
"""The most intra-op threads ``--torch-threads`` (and ``$OMP_NUM_THREADS``) may ask for, and a
checkpoint's ``torch_threads`` may record (review229 F1: 2**31 crashed ``--resume`` in torch,
5000 ran silently). ``torch.set_num_threads`` takes any C ``int`` up to 2**31 - 1 and libgomp's
``OMP_NUM_THREADS`` parser any unsigned long below 2**64 - 1, but neither can run that many: on
the 2-core project machine an op under 30000 threads stopped with ``libgomp: Thread creation
failed`` and under 2**31 - 1 with ``libgomp: Out of memory allocating 463856469096 bytes``, while
4096 ran. 1024 is well above the useful count on any CPU these models meet."""

MAX_RANK = 64
"""The most axes a numpy array has (numpy 2's ``NPY_MAXDIMS``: ``np.zeros((1,) * 65)`` raises
"maximum supported dimension for an ndarray is currently 64"), so the longest shape,
permutation or axis list an op can take; a longer one is refused before it is read (review239
F2: a stride-0 view of shape ``(2**40,)`` passed as a shape was iterated for minutes)."""
