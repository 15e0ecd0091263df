"""What the README says about threads, pickled leaves and the tape's memory (review61 F3, F8).

The README's Python section: sessions and gradient mode are per thread (a thread started inside
``with tl.session(...)`` / ``no_grad()`` runs under the default ``checked_cpu`` session with
gradients on, as torch's thread-local grad mode), and a pickled leaf keeps its ``.grad`` (torch's
drops it). Its Performance section: four linear + relu layers keep 8 activations behind the loss
(torch: 4, what its backward formulas read); measured here on a 400 x 100 batch (the count does
not depend on the size; the README's 2000 x 500 is the reviewer's). Oracles: torch 2.13 for the
pickle difference and the saved-tensor count (``saved_tensors_hooks``); ``tracemalloc`` for the
bytes.
"""

from __future__ import annotations

import gc
import pickle
import tracemalloc
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest
import torch

import torchlean as tl


def test_a_thread_started_inside_a_session_and_no_grad_runs_the_default_ones() -> None:
    def probe(_: int) -> tuple[str, bool, str]:
        kernel = tl.relu(tl.tensor(np.ones(2))).produced_by
        assert kernel is not None
        return tl.current_session().profile.name, tl.is_grad_enabled(), kernel.capsule.name

    with tl.session("fast_cpu"), tl.no_grad(), ThreadPoolExecutor(1) as pool:
        assert list(pool.map(probe, [0])) == [("checked_cpu", True, "reference.relu")]
        assert tl.current_session().profile.name == "fast_cpu" and not tl.is_grad_enabled()


def test_a_pickled_leaf_keeps_its_grad_unlike_torch() -> None:
    w = tl.tensor(np.array([1.0, 2.0, 3.0]), requires_grad=True)
    tl.reduce_sum(w * 2.0).backward()
    back = pickle.loads(pickle.dumps(w))
    assert back.grad is not None and back.grad is not w.grad
    np.testing.assert_array_equal(back.grad.numpy(), [2.0, 2.0, 2.0])
    t = torch.tensor([1.0, 2.0, 3.0], requires_grad=True)
    (t * 2.0).sum().backward()
    assert pickle.loads(pickle.dumps(t)).grad is None


N, D = 400, 100
ACTIVATION = N * D * 8  # bytes of one float64 activation


def _mlp_saved_activations(profile: str) -> int:
    """Distinct N x D float64 buffers the tape nodes behind the loss keep, the batch excluded."""
    with tl.session(profile):
        weights = [tl.tensor(np.eye(D) * 0.5, requires_grad=True) for _ in range(4)]
        x = tl.tensor(np.ones((N, D)))
        h = x
        for w in weights:
            h = tl.relu(tl.linear(h, w))
        loss = tl.reduce_sum(h)
        seen: set[int] = set()
        stack = [loss._node]
        buffers: set[int] = set()
        while stack:
            node = stack.pop()
            if node is None or id(node) in seen:
                continue
            seen.add(id(node))
            for saved in (*node._saved, node._out):
                if saved is not None and saved.array.nbytes == ACTIVATION:
                    buffers.add(np.asarray(saved.array).__array_interface__["data"][0])
            stack += [p._node for p in node.parents if p is not None]
        buffers.discard(x.numpy().__array_interface__["data"][0])
        return len(buffers)


def test_torch_keeps_four_activations_of_the_same_mlp() -> None:
    saved: set[int] = set()
    x = torch.ones(N, D, dtype=torch.float64)

    def pack(t: torch.Tensor) -> torch.Tensor:
        if t.numel() == N * D and t.untyped_storage().data_ptr() != x.untyped_storage().data_ptr():
            saved.add(t.untyped_storage().data_ptr())
        return t

    weights = [(torch.eye(D, dtype=torch.float64) * 0.5).requires_grad_() for _ in range(4)]
    with torch.autograd.graph.saved_tensors_hooks(pack, lambda t: t):
        h = x
        for w in weights:
            h = torch.relu(torch.nn.functional.linear(h, w))
        h.sum()
    assert len(saved) == 4


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_the_tape_keeps_every_input_and_output_eight_activations(profile: str) -> None:
    assert _mlp_saved_activations(profile) == 8


def test_tracemalloc_sees_the_eight_activations_and_no_grad_keeps_none() -> None:
    with tl.session("checked_cpu"):
        weights = [tl.tensor(np.eye(D) * 0.5, requires_grad=True) for _ in range(4)]
        x = tl.tensor(np.ones((N, D)))

        def forward() -> tl.Tensor:
            h = x
            for w in weights:
                h = tl.relu(tl.linear(h, w))
            return tl.reduce_sum(h)

        forward().backward()  # capsules selected before measuring
        gc.collect()
        tracemalloc.start()
        try:
            base = tracemalloc.get_traced_memory()[0]
            loss = forward()
            gc.collect()
            held = tracemalloc.get_traced_memory()[0] - base
            assert 8 * ACTIVATION <= held < 8.5 * ACTIVATION
            loss.backward()
            del loss
            gc.collect()
            # freed; the .grad arrays exist since the first backward and are added to in place
            assert tracemalloc.get_traced_memory()[0] - base < ACTIVATION / 2
            with tl.no_grad():
                kept = forward()
            gc.collect()
            assert tracemalloc.get_traced_memory()[0] - base < ACTIVATION / 2  # nothing recorded
            del kept
        finally:
            tracemalloc.stop()
