"""The CUDA attention capsules: ``native_cuda.direct_attention`` and ``torchlean.composed_attention``.

Both are checked forward and backward against the reference provider's float64 attention
(``reference.attention``) on every attention case of
``torchlean.backend.providers.native_cuda.parity`` — unmasked, per-head masks, fully blocked rows
with NaN/inf at blocked positions (query, key, value and cotangent), NaN/inf in a key or value
row that one query attends and another blocks, head widths above 128 —
in float32 (error <= 1e-5, the largest difference scaled by max(max|oracle|, 1)) and float64
(<= 1e-10):

* on a CUDA device (``cuda`` marker; skipped without one);
* on the CPU through the host-emulation build, whose emulator runs the tiled kernels themselves.

Hand-computed values (anchor-runtime.md §5.2 and §5.4) pin the semantics; the guards and the
layout checks run anywhere.
"""

from __future__ import annotations

import math
from collections.abc import Iterator
from types import ModuleType

import numpy as np
import pytest
import torch
import torch.nn.functional as F

from torchlean.backend.errors import GuardError
from torchlean.backend.providers import attention_kernels
from torchlean.backend.providers.native_cuda import extension, kernels, parity

SUBJECT_PROVIDERS = ("native-cuda", "torchlean")
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

DTYPES = [torch.float32, torch.float64]
CASES = parity.cases_for([parity.ATTENTION])
IMPLEMENTATIONS = ["native_cuda.direct_attention", "torchlean.composed_attention"]
RUNS = [
    (case, name) for name in IMPLEMENTATIONS for case in CASES if case.composed or name == IMPLEMENTATIONS[0]
]
RUN_IDS = [f"{case.name}-{name}" for case, name in RUNS]


def _assert_case(
    case: parity.ParityCase, dtype: torch.dtype, device: torch.device, implementation: str
) -> None:
    composed = implementation == IMPLEMENTATIONS[1]
    result = parity.run_case(case, dtype, device, composed=composed)
    if not result.passed:
        # the same inputs again: tells a transient fault from a deterministic one (composed:masked-heads
        # in float32 failed twice right after an emulation build, cause unknown, and not in the
        # 47 runs of this file after a fresh build since)
        again = parity.run_case(case, dtype, device, composed=composed)
        rerun = "passed" if again.passed else "; ".join(again.problems)
        raise AssertionError(
            f"{'; '.join(result.problems)} (errors {result.errors}; torch threads "
            f"{torch.get_num_threads()}; the same case run again: {rerun}, errors {again.errors})"
        )


def test_every_scaled_dot_product_attention_case_is_named() -> None:
    assert parity.ATTENTION == "scaled_dot_product_attention"
    assert [case.name for case in CASES] == [
        "unmasked",
        "masked-heads",
        "broadcast-mask-runs",
        "blocked-rows-nan",
        "partly-blocked-nan-k",
        "partly-blocked-nan-v",
        "partly-blocked-inf-v",
        "minus-inf-keys",
        "causal-blocked-tiles",
        "far-scores",
        "falling-tile-maximum",
        "tile-corners",
        "wide-heads",
        "head-64",
        "head-128",
        "widest-heads",
        "no-keys",
        "empty-batch",
    ]


def test_the_timed_head_widths_have_masked_parity_cases() -> None:
    """bench/gpu_check.py times d = 64 and 128: both have cases with d = d_v, a batch axis,
    n_q != n_k over partial tiles, and a fully blocked query row (forward and backward)."""
    for name, width in (("head-64", 64), ("head-128", 128)):
        (case,) = [case for case in CASES if case.name == name]
        spec = case.make(np.random.default_rng(0))
        q, k, v, mask = spec.arrays
        assert q is not None and k is not None and v is not None and mask is not None
        assert (q.shape, k.shape, v.shape, mask.shape) == (
            (2, 45, width),
            (2, 77, width),
            (2, 77, width),
            (2, 45, 77),
        )
        assert spec.backward and not mask[:, 0].any()


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize(("case", "implementation"), RUNS, ids=RUN_IDS)
def test_scaled_dot_product_attention_parity_cuda(
    case: parity.ParityCase, dtype: torch.dtype, implementation: str, cuda_device: torch.device
) -> None:
    _assert_case(case, dtype, cuda_device, implementation)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize(("case", "implementation"), RUNS, ids=RUN_IDS)
def test_scaled_dot_product_attention_parity_emulated(
    case: parity.ParityCase, dtype: torch.dtype, implementation: str, emulation: ModuleType
) -> None:
    _assert_case(case, dtype, torch.device("cpu"), implementation)


def test_the_parity_harness_fails_a_direct_attention_that_saved_no_logsumexp(
    emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """gpu_check's sweep is the only check on a GPU: a saved logsumexp that cannot be found is a
    failed case there, not a skipped comparison (review24 pmut A02)."""
    case = next(case for case in CASES if case.name == "unmasked")
    assert parity.run_case(case, torch.float64, torch.device("cpu")).passed
    monkeypatch.setattr(kernels, "saved_logsumexp", lambda *args, **kwargs: None)
    result = parity.run_case(case, torch.float64, torch.device("cpu"))
    assert result.problems == ("direct_attention saved no logsumexp with its output",)
    assert "lse" not in result.errors


# ------------------------------------------------------------------------- hand-computed values

Q = [[1.0, 0.0], [0.0, 1.0], [1.0, 1.0]]
V = [[1.0, 2.0], [3.0, 4.0], [5.0, 6.0]]
CAUSAL = [[True, False, False], [True, True, False], [True, True, True]]


@pytest.mark.parametrize("implementation", IMPLEMENTATIONS)
def test_scaled_dot_product_attention_modern_models_example(
    implementation: str, emulation: ModuleType
) -> None:
    """anchor-runtime.md §5.4: Q = K, d = 2 (scale 1/sqrt 2), causal and unmasked, against the
    PyTorch float64 values quoted there."""
    q = torch.tensor(Q, dtype=torch.float64).unsqueeze(0)
    v = torch.tensor(V, dtype=torch.float64).unsqueeze(0)
    attend = (
        kernels.direct_attention
        if implementation == IMPLEMENTATIONS[0]
        else attention_kernels.composed_attention
    )
    causal = attend(q, q.clone(), v, torch.tensor(CAUSAL))
    plain = attend(q, q.clone(), v)
    want_causal = [
        [1.0, 2.0],
        [2.3395230986533138, 3.3395230986533138],
        [3.5104695304536615, 4.510469530453662],
    ]
    want_plain = [
        [3.0, 4.0],
        [3.4066725560787154, 4.406672556078716],
        [3.5104695304536615, 4.510469530453662],
    ]
    np.testing.assert_allclose(causal[0].numpy(), want_causal, rtol=1e-14)
    np.testing.assert_allclose(plain[0].numpy(), want_plain, rtol=1e-14)


def test_fully_blocked_row_is_zero_with_minus_infinite_logsumexp(emulation: ModuleType) -> None:
    """GPU chapter example (anchor-runtime.md §5.2): weights over keys [1, 2, 3] with the second row
    fully blocked; with one-hot values the output rows are the weights."""
    q = torch.zeros(1, 2, 1, dtype=torch.float64)
    k = torch.zeros(1, 3, 1, dtype=torch.float64)
    v = torch.eye(3, dtype=torch.float64).unsqueeze(0)
    scores = torch.tensor([1.0, 2.0, 3.0], dtype=torch.float64)
    # scores enter through q . k with scale 1: q = 1, k = the scores
    q[..., 0] = 1.0
    k[0, :, 0] = scores
    mask = torch.tensor([[True, True, False], [False, False, False]])
    out, lse = kernels.direct_attention_forward(q, k, v, mask, scale=1.0)
    np.testing.assert_allclose(
        out[0].numpy(), [[0.2689414213699951, 0.7310585786300049, 0.0], [0.0, 0.0, 0.0]], rtol=1e-15
    )
    assert lse[0, 1].item() == -math.inf
    assert lse[0, 0].item() == pytest.approx(math.log(math.e + math.e**2), rel=1e-15)
    g = torch.ones_like(out)
    g[0, 1] = math.nan  # the blocked row's cotangent is never read
    dq, dk, dv, dmask = kernels.direct_attention_backward(g, q, k, v, mask, out=out, lse=lse, scale=1.0)
    assert dmask is None
    assert dq is not None and dk is not None and dv is not None
    assert torch.isfinite(dq).all() and torch.isfinite(dk).all() and torch.isfinite(dv).all()
    assert dq[0, 1].item() == 0.0
    assert dk[0, 2].item() == 0.0 and dv[0, 2].tolist() == [0.0, 0.0, 0.0]


@pytest.mark.parametrize("implementation", ["direct", "composed"])
def test_nan_in_a_key_blocked_for_one_query_only_reaches_the_others(
    implementation: str, emulation: ModuleType
) -> None:
    """Key 1 is blocked for query 0 and allowed for queries 1 and 2. NaN in its value row makes
    queries 1 and 2 NaN and leaves query 0 exactly the softmax over keys 0, 2, 3 (hand formula
    below); NaN in its key row leaves query 0's output and dQ row finite and equal to the same
    computation without key 1."""
    r = np.random.default_rng(0)
    q, k, v = (torch.tensor(r.standard_normal((1, n, 2))) for n in (3, 4, 4))
    mask = torch.ones(3, 4, dtype=torch.bool)
    mask[0, 1] = False
    keep = [0, 2, 3]
    scores = (q[0, 0] @ k[0, keep].T) / math.sqrt(2)
    weights = torch.softmax(scores, dim=0)
    want_row0 = weights @ v[0, keep]
    forward, backward = (
        (kernels.direct_attention, kernels.direct_attention_vjp)
        if implementation == "direct"
        else (attention_kernels.composed_attention, attention_kernels.composed_attention_vjp)
    )
    poisoned_v = v.clone()
    poisoned_v[0, 1] = math.nan
    out = forward(q, k, poisoned_v, mask)
    np.testing.assert_allclose(out[0, 0].numpy(), want_row0.numpy(), rtol=1e-13)
    assert torch.isnan(out[0, 1:]).all()
    poisoned_k = k.clone()
    poisoned_k[0, 1] = math.nan
    out = forward(q, poisoned_k, v, mask)
    np.testing.assert_allclose(out[0, 0].numpy(), want_row0.numpy(), rtol=1e-13)
    g = torch.zeros_like(out)
    g[0, 0] = torch.tensor([1.0, -2.0])
    dq = backward(g, q, poisoned_k, v, mask, out=out)[0]
    # query 0 alone carries a cotangent: its dQ is the 3-key attention's, by torch autograd
    q0 = q[0, 0].clone().requires_grad_(True)
    row = torch.softmax((q0 @ k[0, keep].T) / math.sqrt(2), dim=0) @ v[0, keep]
    (want_dq0,) = torch.autograd.grad(row, q0, g[0, 0])
    np.testing.assert_allclose(dq[0, 0].numpy(), want_dq0.numpy(), rtol=1e-12)
    assert torch.isfinite(dq[0, 0]).all()


def test_zero_width_heads_and_empty_key_sets(emulation: ModuleType) -> None:
    """d = 0: scale 1 and every score 0, so each row averages its allowed values; no keys at all:
    every row is blocked and zero."""
    q = torch.zeros(1, 2, 0)
    k = torch.zeros(1, 3, 0)
    v = torch.tensor([[[1.0], [2.0], [6.0]]])
    out = kernels.direct_attention(q, k, v, torch.tensor([[True, True, True], [True, False, True]]))
    assert out[0, :, 0].tolist() == [3.0, 3.5]
    empty, lse = kernels.direct_attention_forward(
        torch.ones(2, 4, 3), torch.ones(2, 0, 3), torch.ones(2, 0, 5)
    )
    assert empty.shape == (2, 4, 5) and not empty.any()
    assert (lse == -math.inf).all()


def test_composed_attention_with_an_empty_key_set_is_zero_everywhere(emulation: ModuleType) -> None:
    """n_k = 0, with and without a mask: every query row has no key, so the output and dq are
    zeros (the masked softmax once raised torch's IndexError from ``amax`` over no keys)."""
    q = torch.ones(2, 3, 4, dtype=torch.float64)
    k, v = torch.ones(2, 0, 4, dtype=torch.float64), torch.ones(2, 0, 5, dtype=torch.float64)
    for mask in (None, torch.ones(3, 0, dtype=torch.bool)):
        out, saved = attention_kernels.composed_attention_forward(q, k, v, mask)
        assert out.shape == (2, 3, 5) and not out.any()
        dq, dk, dv, dmask = attention_kernels.composed_attention_backward(torch.ones_like(out), saved)
        assert dq.shape == q.shape and not dq.any() and dmask is None
        assert dk.shape == k.shape and dv.shape == v.shape


def test_vjp_without_saved_statistics_recomputes_them(emulation: ModuleType) -> None:
    spec = CASES[1].make(np.random.default_rng(3))
    q, k, v, mask = (torch.from_numpy(np.ascontiguousarray(a)) for a in spec.arrays if a is not None)
    out = kernels.direct_attention(q, k, v, mask)
    g = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(0))
    saved = kernels.direct_attention_vjp(g, q, k, v, mask, out=out)
    recomputed = kernels.direct_attention_vjp(g, q, k, v, mask, out=out.clone())
    for a, b in zip(saved[:3], recomputed[:3], strict=True):
        assert a is not None and b is not None
        assert torch.equal(a, b)


def test_direct_and_composed_agree(emulation: ModuleType) -> None:
    spec = CASES[1].make(np.random.default_rng(5))
    q, k, v, mask = (torch.from_numpy(np.ascontiguousarray(a)) for a in spec.arrays if a is not None)
    direct = kernels.direct_attention(q, k, v, mask)
    composed, saved = attention_kernels.composed_attention_forward(q, k, v, mask)
    torch.testing.assert_close(direct, composed, rtol=1e-12, atol=1e-12)
    g = torch.randn(direct.shape, dtype=direct.dtype, generator=torch.Generator().manual_seed(1))
    for a, b in zip(
        kernels.direct_attention_vjp(g, q, k, v, mask, out=direct)[:3],
        attention_kernels.composed_attention_backward(g, saved)[:3],
        strict=True,
    ):
        assert a is not None and b is not None
        torch.testing.assert_close(a, b, rtol=1e-11, atol=1e-12)


@pytest.mark.parametrize("name", ["blocked-rows-nan", "head-64"])
def test_attention_kernels_do_not_depend_on_thread_order(emulation: ModuleType, name: str) -> None:
    """Permuted emulated thread and block orders give identical bits (no race in the tiles).
    ``head-64`` has several key tiles, so a missing barrier before a shared tile is reused shows
    here (``blocked-rows-nan`` has one)."""
    (case,) = [case for case in CASES if case.name == name]
    spec = case.make(np.random.default_rng(11))
    q, k, v, mask = (
        torch.from_numpy(np.ascontiguousarray(a)).float() if a.dtype == np.float64 else torch.from_numpy(a)
        for a in spec.arrays
        if a is not None
    )
    results = []
    for seed in (0, 5, 9):
        emulation.emulation_set_schedule_seed(seed)
        out, lse = kernels.direct_attention_forward(q, k, v, mask)
        grads = kernels.direct_attention_backward(torch.ones_like(out), q, k, v, mask, out=out, lse=lse)
        results.append(
            torch.cat([out.flatten(), lse.flatten(), *(d.flatten() for d in grads if d is not None)])
        )
    for other in results[1:]:
        assert torch.equal(results[0], other)


# --------------------------------------------------------- tiles that fit the device's shared memory


@pytest.fixture
def smaller_device(emulation: ModuleType) -> Iterator[ModuleType]:
    """The emulation as a GPU with 99 KiB of shared memory per block (launches above it fail)."""
    emulation.emulation_set_shared_memory_limit(parity.SMALL_TILE_SHARED_MEMORY)
    yield emulation
    emulation.emulation_set_shared_memory_limit(0)


def test_the_emulator_refuses_shared_memory_beyond_48_kib_without_an_opt_in(emulation: ModuleType) -> None:
    """As a GPU: a launch may use 48 KiB of dynamic shared memory; above that only after
    ``cudaFuncSetAttribute`` raised the kernel's limit (``tl::allow_dynamic_smem``), and never above
    the device's opt-in limit. The float32 d = 128 forward needs 49280 bytes, so its parity cases
    pass only because the kernel opts in."""
    emulation.emulation_launch_with_shared_memory(48 * 1024, 0)
    with pytest.raises(RuntimeError, match=r"invalid argument: the launch requests 49153 bytes .* opted"):
        emulation.emulation_launch_with_shared_memory(48 * 1024 + 1, 0)
    emulation.emulation_launch_with_shared_memory(49280, 49280)
    with pytest.raises(RuntimeError, match=r"requests 49281 bytes .* \(49280 bytes\)"):
        emulation.emulation_launch_with_shared_memory(49281, 49280)
    with pytest.raises(RuntimeError, match=r"cannot reserve 232449 bytes of shared memory"):
        emulation.emulation_launch_with_shared_memory(1024, 227 * 1024 + 1)


@pytest.mark.parametrize("seed", [0, 3])
def test_the_emulated_block_vote_is_an_or_over_threads_that_have_not_exited(
    emulation: ModuleType, seed: int
) -> None:
    """``__syncthreads_or``, the attention kernels' tile vote, as on a GPU: 1 for every thread when
    any live thread votes nonzero, else 0; a thread that exited (its slot still holding 1 from a
    shuffle) and the previous block's votes do not count."""
    emulation.emulation_set_schedule_seed(seed)
    threads, live = 128, 64
    block0 = [0] * threads
    block0[37] = 1  # one live thread votes 1
    block1 = [0] * threads  # no live thread does; block 0's slots hold 1s
    block2 = [0] * live + [1] * (threads - live)  # only exiting threads would
    results = emulation.emulation_block_vote(block0 + block1 + block2, live, 3)
    want = ([1] * live + [-1] * (threads - live)) + ([0] * live + [-1] * (threads - live)) * 2
    assert results == want
    everyone = emulation.emulation_block_vote([0] * 31 + [1] + [0] * 32, 64, 1)
    assert everyone == [1] * 64
    # threads meeting the vote at __syncthreads: undefined on a GPU, reported by the emulator
    divergent = r"divergent block barriers .*: 32 threads at __syncthreads_or, 32 at __syncthreads"
    with pytest.raises(RuntimeError, match=divergent):
        emulation.emulation_block_vote([0] * 64, 32, 1, True)


def _torch_float64_attention(
    q: torch.Tensor, k: torch.Tensor, v: torch.Tensor, mask: torch.Tensor, g: torch.Tensor
) -> tuple[torch.Tensor, ...]:
    """Output and (dq, dk, dv) from torch's float64 SDPA (math path) and autograd: the oracle of
    rows with at least one allowed key."""
    leaves = [t.detach().clone().requires_grad_(True) for t in (q, k, v)]
    out = F.scaled_dot_product_attention(leaves[0], leaves[1], leaves[2], attn_mask=mask)
    return (out.detach(), *torch.autograd.grad(out, leaves, g))


def _assert_matches_torch(d: int, dv: int, dtype: torch.dtype, seed: int) -> None:
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 7, d, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 37, d, generator=generator, dtype=torch.float64)
    v = torch.randn(2, 37, dv, generator=generator, dtype=torch.float64)
    g = torch.randn(2, 7, dv, generator=generator, dtype=torch.float64)
    mask = torch.rand(2, 7, 37, generator=generator) < 0.6
    mask[..., 0] = True  # every row attends somewhere: the oracle needs no blocked-row rule
    q, k, v, g = (t.to(dtype).to(torch.float64) for t in (q, k, v, g))  # the tested dtype's values
    want = _torch_float64_attention(q, k, v, mask, g)
    out, lse = kernels.direct_attention_forward(q.to(dtype), k.to(dtype), v.to(dtype), mask)
    grads = kernels.direct_attention_backward(
        g.to(dtype), q.to(dtype), k.to(dtype), v.to(dtype), mask, out=out, lse=lse
    )
    tolerance = parity.TOLERANCE[dtype]
    for got, expected in zip((out, *grads[:3]), want, strict=True):
        assert got is not None
        error = (got.double() - expected).abs().max().item() / max(expected.abs().max().item(), 1.0)
        assert error <= tolerance


@pytest.mark.parametrize("mask_shape", [(37,), ()], ids=["key-mask", "scalar-mask"])
def test_direct_attention_takes_a_key_mask_and_a_scalar_mask(
    emulation: ModuleType, mask_shape: tuple[int, ...]
) -> None:
    """A mask of rank 1 ``(n_k,)`` (or rank 0) broadcasts to the scores as every other provider
    takes it; the oracle is torch's float64 SDPA with the same mask (which torch 2.13 accepts for
    these rank-3 operands; for rank-4 ones it raises IndexError)."""
    generator = torch.Generator().manual_seed(5)
    q, k, v, g = (torch.randn(*s, generator=generator, dtype=torch.float64) for s in
                  ((2, 7, 4), (2, 37, 4), (2, 37, 3), (2, 7, 3)))  # fmt: skip
    mask = torch.rand(mask_shape, generator=generator) < 0.6
    mask.reshape(-1)[0] = True  # every query row has an allowed key
    want = _torch_float64_attention(q, k, v, mask, g)
    out, lse = kernels.direct_attention_forward(q, k, v, mask)
    grads = kernels.direct_attention_backward(g, q, k, v, mask, out=out, lse=lse)
    for got, expected in zip((out, *grads[:3]), want, strict=True):
        assert got is not None
        torch.testing.assert_close(got, expected, rtol=1e-10, atol=1e-12)


def test_widest_float64_heads_run_the_backward_on_a_227_kib_device(emulation: ModuleType) -> None:
    """d = d_v = 256 in float64: the default tile's backward needs 263168 bytes of shared memory,
    more than an H100/H200 (the emulation's default) allows; the smaller tile runs it."""
    _assert_matches_torch(256, 256, torch.float64, seed=21)


@pytest.mark.parametrize(
    ("case", "dtype"), parity.SMALL_TILE_CASES, ids=[case.name for case, _ in parity.SMALL_TILE_CASES]
)
def test_a_smaller_device_runs_the_small_tile_cases(
    case: parity.ParityCase, dtype: torch.dtype, smaller_device: ModuleType
) -> None:
    """On 99 KiB per block these cases' default tiles do not fit (the emulator refuses such a
    launch, as a GPU does): they pass on the smaller tile."""
    _assert_case(case, dtype, torch.device("cpu"), IMPLEMENTATIONS[0])


def test_the_forward_refuses_heads_whose_backward_cannot_fit(smaller_device: ModuleType) -> None:
    """On 99 KiB per block the float64 backward's smallest tile needs (40 (d + d_v) + 128) * 8
    bytes: d + d_v = 313 fits (101184 bytes) and runs forward and backward; 314 (101504 bytes) is
    refused by the forward, before any launch, with the numbers."""
    _assert_matches_torch(157, 156, torch.float64, seed=22)
    q = torch.ones(1, 3, 157, dtype=torch.float64)
    with pytest.raises(
        GuardError,
        match=r"head widths d = 157, d_v = 157 in float64 need 101504 bytes of shared memory per "
        r"block for the backward \(smallest tile, 8 rows\); this device allows 101376; the largest "
        r"d \+ d_v that fits is 313",
    ):
        kernels.direct_attention(q, q, q)
    kernels.direct_attention(q.float(), q.float(), q.float())  # float32 fits


SMALLEST_TILE_CASES = ("unmasked", "causal-blocked-tiles", "minus-inf-keys", "widest-heads")


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["float32", "float64"])
@pytest.mark.parametrize("name", SMALLEST_TILE_CASES)
def test_the_smallest_tiles_run_where_the_default_ones_fit(name: str, dtype: torch.dtype,
                                                            emulation: ModuleType) -> None:
    """review178 F2, review185 F1: an H100/H200 never picks the smallest tiles, so
    bench/gpu_check.py runs every attention case on them under ``parity.smallest_tiles``. Here the
    emulation keeps its 227 KiB: the cases pass on the smallest tiles, whose launches request less
    shared memory than the default tiles' (what the emulator saw launched)."""
    (case,) = [c for c in parity.cases_for([parity.ATTENTION]) if c.name == name]
    emulation.emulation_take_largest_shared_memory()
    _assert_case(case, dtype, torch.device("cpu"), IMPLEMENTATIONS[0])
    default = emulation.emulation_take_largest_shared_memory()
    with parity.smallest_tiles():
        _assert_case(case, dtype, torch.device("cpu"), IMPLEMENTATIONS[0])
    smallest = emulation.emulation_take_largest_shared_memory()
    assert 0 < smallest < default
    assert emulation.set_attention_smallest_tiles(False) is False  # restored on exit


# ------------------------------------------------------- the saved logsumexp belongs to its inputs


def _attention_inputs(seed: int) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor]:
    generator = torch.Generator().manual_seed(seed)
    q = torch.randn(2, 6, 8, generator=generator, dtype=torch.float64)
    k = torch.randn(2, 9, 8, generator=generator, dtype=torch.float64)
    v = torch.randn(2, 9, 5, generator=generator, dtype=torch.float64)
    mask = torch.rand(2, 6, 9, generator=generator) < 0.7
    mask[:, 0] = False  # a fully blocked row
    return q, k, v, mask


def test_vjp_recomputes_the_logsumexp_for_other_inputs(emulation: ModuleType) -> None:
    """``out`` came from (q, k, v, mask, scale); a VJP asked with other inputs (or after an
    in-place update) must equal the VJP that recomputes the statistics (``out.clone()`` has none
    saved), not reuse the stale logsumexp."""
    q, k, v, mask = _attention_inputs(7)
    out = kernels.direct_attention(q, k, v, mask)
    g = torch.randn(out.shape, dtype=out.dtype, generator=torch.Generator().manual_seed(2))
    other_mask = mask.clone()
    other_mask[..., 1, :] = ~other_mask[..., 1, :]
    variants: list[
        tuple[tuple[torch.Tensor, torch.Tensor, torch.Tensor, torch.Tensor | None], float | None]
    ] = [
        ((2 * q, k, v, mask), None),
        ((q, 3 * k, v, mask), None),
        ((q, k, v, other_mask), None),
        ((q, k, v, None), None),
        ((q, k, v, mask), 0.25),
    ]
    for inputs, scale in variants:
        stale = kernels.direct_attention_vjp(g, *inputs, out=out, scale=scale)
        fresh = kernels.direct_attention_vjp(g, *inputs, out=out.clone(), scale=scale)
        for a, b in zip(stale[:3], fresh[:3], strict=True):
            assert a is not None and b is not None
            assert torch.equal(a, b)
    q.mul_(2.0)  # the very object the forward read, changed in place
    stale = kernels.direct_attention_vjp(g, q, k, v, mask, out=out)
    fresh = kernels.direct_attention_vjp(g, q, k, v, mask, out=out.clone())
    assert stale[0] is not None and fresh[0] is not None
    assert torch.equal(stale[0], fresh[0])


def test_vjp_reuses_the_logsumexp_for_the_same_inputs(
    emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    q, k, v, mask = _attention_inputs(8)
    out = kernels.direct_attention(q, k, v, mask, scale=0.7)
    forward = kernels.direct_attention_forward
    calls: list[int] = []

    def counted(*args: object, **kwargs: object) -> tuple[torch.Tensor, torch.Tensor]:
        calls.append(1)
        return forward(*args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(kernels, "direct_attention_forward", counted)
    g = torch.ones_like(out)
    kernels.direct_attention_vjp(g, q, k, v, mask, out=out, scale=0.7)
    assert calls == []
    kernels.direct_attention_vjp(g, q, k, v, mask, out=out)  # another scale
    assert calls == [1]


# ------------------------------------------------------------------------------ guards (anywhere)


def test_composed_attention_runs_its_shape_guard(emulation: ModuleType) -> None:
    """The capsule's shape evidence on its own path: without ``check_composed_attention`` an
    infinite scale would give NaN rows silently."""
    q = torch.ones(2, 3, 4, dtype=torch.float64)
    with pytest.raises(GuardError, match=r"^torchlean\.composed_attention: scale=inf \(accepted: a finite"):
        attention_kernels.composed_attention_forward(q, q, q, scale=math.inf)
    with pytest.raises(GuardError, match=r"^torchlean\.composed_attention: q has shape \[3, 4\]"):
        attention_kernels.composed_attention_forward(q[0], q, q)


def test_composed_attention_shape_guard() -> None:
    q = torch.ones(2, 3, 4)
    with pytest.raises(
        GuardError, match=r"q has shape \[3, 4\] \(accepted: \(batch, heads, n, d\) or \(heads, n, d\)\)"
    ):
        attention_kernels.check_composed_attention(torch.ones(3, 4), q, q)
    with pytest.raises(GuardError, match=r"are not \(\.\.\., n_q, d\), \(\.\.\., n_k, d\)"):
        attention_kernels.check_composed_attention(q, torch.ones(2, 3, 5), q)
    with pytest.raises(
        GuardError, match=r"mask has dtype float32 \(accepted: bool, True = allowed; an additive bias"
    ):
        attention_kernels.check_composed_attention(q, q, q, torch.ones(3, 3))
    with pytest.raises(GuardError, match=r"mask of shape \[2, 3\] does not broadcast to \[2, 3, 3\]"):
        attention_kernels.check_composed_attention(q, q, q, torch.ones(2, 3, dtype=torch.bool))
    for scale in (math.inf, math.nan, True, "0.5", 10**400, 10**5000):  # the capsule's own name
        with pytest.raises(GuardError, match=r"^torchlean\.composed_attention: scale=.* \(accepted: a fin"):
            attention_kernels.check_composed_attention(q, q, q, scale=scale)  # type: ignore[arg-type]
    dims = attention_kernels.check_composed_attention(
        torch.ones(2, 5, 3, 4),
        torch.ones(2, 5, 6, 4),
        torch.ones(2, 5, 6, 7),
        torch.ones(3, 6, dtype=torch.bool),
    )
    assert (dims.lead, dims.folded, dims.n_q, dims.n_k, dims.d, dims.d_v) == ((2, 5), 10, 3, 6, 4, 7)


def test_composed_attention_layout_guard(monkeypatch: pytest.MonkeyPatch) -> None:
    q = torch.ones(2, 3, 4)
    with pytest.raises(GuardError, match=r"q is on device cpu \(accepted: cuda tensors\)"):
        attention_kernels.check_cuda_layout(q, q, q)
    monkeypatch.setattr(extension, "require_cuda", lambda: None)  # as on a machine with CUDA
    with pytest.raises(GuardError, match=r"q is on device cpu \(accepted: cuda tensors\)"):
        attention_kernels.composed_attention(q, q, q)


def test_composed_attention_without_cuda_fails_before_any_arithmetic(monkeypatch: pytest.MonkeyPatch) -> None:
    q = torch.ones(2, 3, 4)
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(extension.NativeExtensionError, match=r"is not a CUDA build"):
        attention_kernels.composed_attention(q, q, q)


def test_composed_attention_layout_guard_refuses_strided_buffers(emulation: ModuleType) -> None:
    q = torch.ones(2, 3, 4)
    with pytest.raises(GuardError, match=r"k of shape \[2, 3, 4\] has strides .* not a flat row-major"):
        attention_kernels.check_cuda_layout(q, torch.ones(2, 4, 3).transpose(1, 2), q)


def test_direct_attention_guards(emulation: ModuleType) -> None:
    q = torch.ones(2, 3, 4)
    with pytest.raises(
        GuardError,
        match=r"leading \(batch, head\) axes of q \[2, 3, 4\], k \[3, 3, 4\], v \[3, 3, 4\] do not "
        r"broadcast to one batch shape",
    ):
        kernels.direct_attention(q, torch.ones(3, 3, 4), torch.ones(3, 3, 4))
    with pytest.raises(GuardError, match=r"mask has dtype float32 \(accepted: bool"):
        kernels.direct_attention(q, q, q, torch.ones(3, 3))
    with pytest.raises(GuardError, match=r"head widths d = 300, d_v = 4 exceed the kernel limit 256"):
        kernels.direct_attention(torch.ones(1, 2, 300), torch.ones(1, 2, 300), torch.ones(1, 2, 4))


def test_zero_element_inputs_with_huge_broadcast_batches_are_refused(emulation: ModuleType) -> None:
    """No element anywhere, but the broadcast batch (2**40, 2**40) times the non-zero extents
    overflows int64: torch itself cannot materialise the broadcast, so the guard refuses it."""
    q = torch.empty(2**40, 1, 0, 4, dtype=torch.float64)
    kv = torch.empty(1, 2**40, 0, 4, dtype=torch.float64)
    with pytest.raises(
        GuardError,
        match=r"q broadcast to \[1099511627776, 1099511627776, 0, 4\] has non-zero extents whose "
        r"product 4835703278458516698824704 is more than int64 can count",
    ):
        kernels.direct_attention_forward(q, kv, kv)


def test_direct_attention_needs_cuda_outside_emulation(monkeypatch: pytest.MonkeyPatch) -> None:
    q = torch.ones(1, 2, 3)
    monkeypatch.setattr(extension, "require_cuda", lambda: None)  # as on a machine with CUDA
    with pytest.raises(
        GuardError, match=r"native_cuda.direct_attention: q is on device cpu \(accepted: cuda"
    ):
        kernels.direct_attention(q, q, q)
    assert extension.expected_device_type() == "cuda"
