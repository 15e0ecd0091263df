"""Parity of every native-cuda op (the ``native_cuda.*`` capsules' value and VJP evidence).

Every one of the 46 op labels is a parameter of the parity tests below, forward and backward, in
float32 (error <= 1e-5, the largest difference scaled by max(max|oracle|, 1)) and float64
(<= 1e-10) against float64 oracles: the reference
provider's numpy kernels, or torch CPU float64 with torch.autograd for ``fft_fno`` and
``selective_scan`` (which have no reference capsule). Cases and oracles live in
``torchlean.backend.providers.native_cuda.parity``.

* ``test_native_parity_cuda``: on a CUDA device (marked ``cuda``; skipped without one).
* ``test_native_parity_emulated``: the same sources compiled for the CPU, own kernels executed by
  the cooperative-thread CUDA emulator (csrc/emu) — runs on machines without a GPU.
* The rest run anywhere: provenance symbols, the guards, and the "no CUDA" error path.
"""

from __future__ import annotations

import json
import os
import re
import shutil
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from types import ModuleType

import numpy as np
import pytest
import torch

from torchlean.backend.errors import GuardError
from torchlean.backend.providers.native_cuda import capsules, extension, guards, kernels, parity

SUBJECT_PROVIDERS = ("native-cuda",)
"""The providers whose capsules this module tests (not those it uses as oracles): the
capsule evidence that names it must be of one of them (tests/backend/test_evidence_names.py)."""

ROOT = Path(__file__).resolve().parents[2]
CSRC = ROOT / "torchlean" / "backend" / "providers" / "native_cuda" / "csrc"

# The 46 native-cuda op labels, in catalog order (anchor-backend.md §4.3); every test below that
# takes ``op`` runs once per label.
OPS = [
    "matmul", "linear", "mse_loss", "relu", "gelu", "add", "sub", "mul", "scale", "abs", "sqrt",
    "clamp", "max", "min", "sigmoid", "tanh", "softplus", "exp", "sin", "cos", "log", "inv",
    "safe_log", "log_softmax", "softmax", "hard_masked_softmax", "reduce_sum", "reduce_mean",
    "reshape", "permute", "broadcast", "concat", "slice", "gather", "scatter_add", "rand_uniform",
    "bernoulli_mask", "layer_norm", "batch_norm", "conv", "conv_transpose", "max_pool",
    "smooth_max_pool", "avg_pool", "fft_fno", "selective_scan",
]  # fmt: skip
DTYPES = [torch.float32, torch.float64]
FORWARD_ONLY = {"rand_uniform", "bernoulli_mask"}
OWN_KERNELS = ["hard_masked_softmax", "smooth_max_pool", "selective_scan", "rand_uniform", "bernoulli_mask"]


def _assert_parity(op: str, dtype: torch.dtype, device: torch.device) -> None:
    results = [parity.run_case(case, dtype, device) for case in parity.cases_for([op])]
    assert results, f"no parity case for {op}"
    failures = [f"{r.case}: {'; '.join(r.problems)}" for r in results if not r.passed]
    assert not failures, "\n".join(failures)


# ------------------------------------------------------------------------------------- catalog


def test_parity_ops_are_the_native_cuda_catalog() -> None:
    assert OPS == list(parity.NATIVE_OPS) == [capsule.op.label for capsule in capsules.CAPSULES]
    assert len(OPS) == 46


@pytest.mark.parametrize("op", OPS)
def test_every_op_has_parity_cases(op: str) -> None:
    assert parity.cases_for([op])


def test_the_bernoulli_boundary_cases_sit_where_they_say() -> None:
    """The two cases test the strict ``keep_prob > u_i`` and that keep_prob stays float64: their
    inputs must sit on a draw, and one float64 ulp above a draw float32 rounds down (review24 pmut
    Q02: without the nudge the case passed and tested nothing). Oracle: the reference's draws."""
    from torchlean.backend.providers.reference import kernels as ref

    cases = {c.name: c for c in parity.CASES if c.op == "bernoulli_mask"}
    rng = np.random.default_rng(0)
    at = cases["keep-equals-a-draw"].make(rng).params
    above = cases["keep-one-float64-ulp-above"].make(rng).params
    draws = {k: at[k] for k in ("shape", "seed", "counter")}
    assert draws == {k: above[k] for k in ("shape", "seed", "counter")}
    u = ref.rand_uniform(**draws, dtype=np.float64)
    assert at["keep_prob"] in set(u.tolist())
    below = [x for x in u.tolist() if x < above["keep_prob"]]
    nearest = max(below)
    assert above["keep_prob"] == np.nextafter(nearest, 1.0)  # one float64 ulp above a draw
    assert np.float32(above["keep_prob"]) == np.float32(nearest)  # which float32 cannot tell apart


@pytest.mark.parametrize("op", OPS)
def test_native_symbols_exist_for_every_op(op: str) -> None:
    """Provenance ``.../native_cuda/csrc/native_ops.cu`` / ``<op>_forward`` is true: the symbol is
    defined there, bound in bindings.cpp and wrapped in kernels.py (with a backward for every
    differentiable op). That the stub types every bound name: :func:`test_stub_matches_the_bindings`
    (source) and ``test_stub_sync.py`` (stubtest against the compiled emulation build)."""
    source = (CSRC / "native_ops.cu").read_text()
    bindings = (CSRC / "bindings.cpp").read_text()
    names = [f"{op}_forward"] + ([] if op in FORWARD_ONLY else [f"{op}_backward"])
    for name in names:
        assert re.search(rf"^(Tensor|Grads) {name}\(", source, re.M), f"{name} not defined in native_ops.cu"
        assert re.search(rf"^  TL_DEF\({name}[,)]", bindings, re.M), f"{name} not bound"
        assert callable(getattr(kernels, name))
    if op in FORWARD_ONLY:
        assert not hasattr(kernels, f"{op}_backward")


def test_capsule_provenance_names_native_ops_cu() -> None:
    for capsule in capsules.CAPSULES:
        refs = capsule.value_contract.provenance
        assert [(r.path, r.symbol) for r in refs] == [
            ("torchlean/backend/providers/native_cuda/csrc/native_ops.cu", f"{capsule.op.label}_forward")
        ]


# ---------------------------------------------------------------------------------------- parity


@pytest.mark.cuda
@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_native_parity_cuda(op: str, dtype: torch.dtype, cuda_device: torch.device) -> None:
    _assert_parity(op, dtype, cuda_device)


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
@pytest.mark.parametrize("op", OPS)
def test_native_parity_emulated(op: str, dtype: torch.dtype, emulation: ModuleType) -> None:
    _assert_parity(op, dtype, torch.device("cpu"))


@pytest.mark.parametrize("op", OWN_KERNELS)
def test_own_kernels_do_not_depend_on_thread_order(op: str, emulation: ModuleType) -> None:
    """Runs every case of torchlean's own kernels under permuted emulated thread and block orders:
    a race (a result depending on scheduling) would change bits."""
    for case in parity.cases_for([op]):
        spec = case.make(np.random.default_rng(7))
        forward = getattr(kernels, f"{op}_forward")
        if op in FORWARD_ONLY:
            runs = []
            for seed in (0, 1, 2):
                emulation.emulation_set_schedule_seed(seed)
                runs.append(forward(**spec.params))
        else:
            inputs = [None if a is None else torch.from_numpy(np.ascontiguousarray(a)) for a in spec.arrays]
            runs = []
            for seed in (0, 1, 2):
                emulation.emulation_set_schedule_seed(seed)
                out = forward(*inputs, **spec.params)
                g = torch.ones_like(out)
                grads = getattr(kernels, f"{op}_backward")(g, *inputs, out=out, **spec.params)
                runs.append(torch.cat([out.flatten(), *(d.flatten() for d in grads if d is not None)]))
        for other in runs[1:]:
            # NaN equals only NaN and infinities stay themselves (nan_to_num would map them to
            # 0 and the largest finite value, hiding a race between those; review45 F1)
            assert torch.equal(runs[0].isnan(), other.isnan()), case.id
            assert torch.equal(runs[0].nan_to_num(0.0, 0.0, 0.0), other.nan_to_num(0.0, 0.0, 0.0)), case.id
            assert torch.equal(runs[0].isposinf(), other.isposinf()), case.id
            assert torch.equal(runs[0].isneginf(), other.isneginf()), case.id


def _work_items(case: parity.ParityCase) -> int:
    """The threads an element-block case launches, by hand: one per draw, per pool output (the
    forward; the backward has one per input, more), per (batch, state) scan channel."""
    spec = case.make(np.random.default_rng(0))
    if case.op in FORWARD_ONLY:
        return int(np.prod(spec.params["shape"]))
    x = spec.arrays[0] if case.op == "smooth_max_pool" else spec.arrays[3]
    assert x is not None
    if case.op == "selective_scan":
        return int(x.size)  # h0 (batch, state)
    n, c, *extents = x.shape
    k, stride, pad = spec.params["kernel_size"], spec.params["stride"], spec.params["padding"]
    return int(n * c * np.prod([(e + 2 * pad - k) // stride + 1 for e in extents]))


def test_element_block_cases_need_more_blocks_than_the_few() -> None:
    """review208 F1: each of the one-thread-per-item kernels has a case of several blocks of 256,
    more than :data:`parity.FEW_ELEMENT_BLOCKS` hold, so that under the limit each thread takes a
    turn of the grid-stride loop."""
    assert {case.op for case in parity.ELEMENT_BLOCK_CASES} == set(OWN_KERNELS) - {"hard_masked_softmax"}
    assert set(parity.ELEMENT_BLOCK_CASES) <= set(parity.CASES)
    for case in parity.ELEMENT_BLOCK_CASES:
        assert _work_items(case) > 256 * parity.FEW_ELEMENT_BLOCKS, case.id


@pytest.mark.parametrize("dtype", DTYPES, ids=["float32", "float64"])
def test_element_block_cases_pass_through_the_grid_stride_loops_emulated(
    dtype: torch.dtype, emulation: ModuleType
) -> None:
    """review208 F1: on 2 blocks (``parity.few_element_blocks``) the kernels' grid-stride loops
    cover the rest; a kernel without the loop passes on its default blocks and fails here (a
    selective_scan forward whose loop stepped past the end: forward errors 0.999 and 0.921)."""
    default = emulation.set_max_element_blocks(1)
    emulation.set_max_element_blocks(default)
    with parity.few_element_blocks():
        assert emulation.set_max_element_blocks(parity.FEW_ELEMENT_BLOCKS) == parity.FEW_ELEMENT_BLOCKS
        for case in parity.ELEMENT_BLOCK_CASES:
            result = parity.run_case(case, dtype, torch.device("cpu"))
            assert result.passed, (case.id, result.problems)
    assert emulation.set_max_element_blocks(default) == default  # restored on exit


@pytest.mark.parametrize("blocks", [0, -1, 65535 * 16 + 1])
def test_the_element_block_limit_refuses_a_count_out_of_range(blocks: int, emulation: ModuleType) -> None:
    with pytest.raises(ValueError, match=rf"blocks = {blocks} \(accepted: 1 to 1048560\)"):
        emulation.set_max_element_blocks(blocks)


# ---------------------------------------------------------------------------- boundary checks


def test_a_device_fault_is_recorded_against_the_case_that_caused_it(
    emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each case synchronises the device inside its own error handling: an asynchronous kernel
    fault (here a stand-in for CUDA's illegal address) becomes that case's failure, not an
    exception that escapes the sweep or lands on the next case."""

    def fault(device: torch.device) -> None:
        raise RuntimeError("CUDA error: an illegal memory access was encountered")

    monkeypatch.setattr(parity, "_synchronize", fault)
    result = parity.run_case(parity.cases_for(["relu"])[0], torch.float32, torch.device("cpu"))
    assert not result.passed
    assert result.problems == ("RuntimeError: CUDA error: an illegal memory access was encountered",)


def test_the_checked_error_is_floored_at_1_and_the_unfloored_relative_error_is_reported() -> None:
    """review112 F7: below 1 in magnitude the checked error is the absolute difference; the
    relative error beside it divides by max|oracle| alone (the difference itself where the oracle
    is all zeros); mismatched NaN, infinities or shapes make both inf, nothing to compare both 0."""
    want = np.array([0.1, -0.05, 0.0])
    got = torch.tensor(want + np.array([1e-6, 0.0, 0.0]))
    assert parity._errors(got, want) == pytest.approx((1e-6, 1e-5))
    big = np.array([4.0, -2.0])
    assert parity._errors(torch.tensor(big + np.array([0.0, 2e-6])), big) == pytest.approx((5e-7, 5e-7))
    assert parity._errors(torch.tensor([3e-7, 0.0]), np.zeros(2)) == pytest.approx((3e-7, 3e-7))
    assert parity._errors(torch.zeros(2), np.zeros(2)) == (0.0, 0.0)
    special = np.array([np.nan, np.inf, 0.25])
    assert parity._errors(torch.tensor([np.nan, np.inf, 0.5]), special) == (0.25, 1.0)
    assert parity._errors(torch.tensor([0.0, 1.0]), np.array([np.nan, 1.0])) == (np.inf, np.inf)
    assert parity._errors(torch.tensor([np.inf]), np.array([1.0])) == (np.inf, np.inf)
    assert parity._errors(torch.zeros(3), np.zeros(2)) == (np.inf, np.inf)
    assert parity._errors(torch.zeros(0), np.zeros(0)) == (0.0, 0.0)
    assert parity._errors(torch.tensor([np.nan]), np.array([np.nan])) == (0.0, 0.0)


def test_a_case_records_both_errors_and_checks_only_the_floored_one(
    emulation: ModuleType, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every key of ``errors`` has its unfloored relative error beside it, never smaller; the
    tolerance applies to ``errors`` alone (an unfloored error of 1 does not fail the case)."""
    case = parity.cases_for(["softmax"])[0]
    result = parity.run_case(case, torch.float32, torch.device("cpu"))
    assert result.passed and set(result.unfloored_relative_errors) == set(result.errors) == {"forward", "d0"}
    for name, value in result.errors.items():
        assert value <= result.unfloored_relative_errors[name]
    monkeypatch.setattr(parity, "_errors", lambda native, oracle: (0.0, 1.0))
    result = parity.run_case(case, torch.float32, torch.device("cpu"))
    assert result.passed and dict(result.unfloored_relative_errors) == {"forward": 1.0, "d0": 1.0}


def test_extension_boundary_refusal_becomes_guard_error(emulation: ModuleType) -> None:
    """A refusal of the C++ checks (the Python guards skipped) becomes a GuardError in ``_launch``;
    through ``kernels`` the Python guard refuses first (a C++ refusal crashed the process on the
    GPU machine lent for issue 7)."""
    refusal = r"^native_cuda\.matmul: torchlean_native_ext\.matmul_forward: "
    with pytest.raises(GuardError, match=refusal), kernels._launch("matmul"):
        emulation.matmul_forward(torch.ones(2, 3), torch.ones(4, 5))
    with pytest.raises(GuardError, match=r"^native_cuda\.matmul: contraction sizes differ") as refused:
        kernels.matmul_forward(torch.ones(2, 3), torch.ones(4, 5))
    assert "torchlean_native_ext" not in str(refused.value)


def test_extension_refuses_out_of_range_index_before_launch(emulation: ModuleType) -> None:
    index = torch.tensor([[0, 9, -1]])
    accepted = r"index value 9 is out of range \(accepted: values in \[0, 5\) along dimension 1\)"
    with pytest.raises(IndexError, match=rf"^torchlean_native_ext\.gather_forward: {accepted}"):
        emulation.gather_forward(torch.ones(1, 5), index, 1)
    with pytest.raises(IndexError, match=r"index value -2 is out of range"):
        emulation.scatter_add_forward(torch.ones(1, 5), torch.tensor([[-2, 1]]), torch.ones(1, 2), 1)
    with pytest.raises(GuardError, match=rf"^native_cuda\.gather: {accepted}"):  # Python, first
        kernels.gather_forward(torch.ones(1, 5), index, axis=1)


def test_extension_refuses_selective_scan_shapes_before_launch(emulation: ModuleType) -> None:
    """The C++ checks of selective_scan repeat the Python guards (review23 kmut C04-C06: with any of
    them removed the kernel read a, b or h0 out of bounds and no test noticed)."""
    x, h0 = torch.randn(2, 3, 4), torch.zeros(2, 4)
    ones = torch.ones(4)
    assert emulation.selective_scan_forward(ones, ones, x, h0, 0).shape == (2, 3, 4)
    prefix = "torchlean_native_ext.selective_scan_forward: "
    for (a, b, h), message in (
        ((ones, ones, torch.zeros(4)), "h0 has shape [4]; expected [2, 4]"),
        (
            (torch.ones(2), torch.ones(2), h0),
            "shared coefficients [2] must have one entry per state channel (4)",
        ),
        (
            (torch.ones(3, 4), torch.ones(3, 4), h0),
            "token-dependent coefficients have shape [3, 4]; expected x's shape [2, 3, 4] (or [4] for "
            "shared coefficients)",
        ),
        ((torch.ones(2, 3, 4), ones, h0), "b has shape [4] but a has shape [2, 3, 4]"),
    ):
        with pytest.raises(ValueError, match="^" + re.escape(prefix + message)):
            emulation.selective_scan_forward(a, b, x, h, 0)


_REFUSAL_CHILD = r"""
import json, torch
from torchlean.backend.providers.native_cuda import extension
ext = extension.load_host_emulation()
messages = {}
for name, call in {
    "torch": lambda: torch.empty(-1),
    "value": lambda: ext.relu_forward(torch.ones(3, 4).t()),
    "index": lambda: ext.gather_forward(torch.ones(1, 5), torch.tensor([[0, 9]]), 1),
    # past the checks: ATen's allocator fails (2**58 bytes: beyond any x86-64 address space)
    "aten": lambda: ext.rand_uniform_forward([2**55], 0, 0, "float64", 0, 0),
}.items():
    try:
        call()
    except Exception as error:
        messages[name] = [type(error).__name__, str(error)]
print(json.dumps(messages))
"""


def test_refusals_are_raised_inside_the_extension(emulation: ModuleType) -> None:
    """A refusal of the C++ checks becomes its Python exception in the bindings (``Refusing``), not
    through a ``c10::Error`` and torch's exception translation: with ``TORCH_SHOW_CPP_STACKTRACES=1``
    torch's translator appends the C++ stack to what it raises (the control, ``torch.empty(-1)``,
    shows it), and a refusal's message is the check's alone. An ATen error past the checks is
    raised in the bindings too, as the type torch's translation would give."""
    env = {**os.environ, "TORCH_SHOW_CPP_STACKTRACES": "1", "PYTHONPATH": str(ROOT)}
    done = subprocess.run(
        [sys.executable, "-c", _REFUSAL_CHILD],
        capture_output=True,
        text=True,
        env=env,
        timeout=600,
        check=False,
    )
    assert done.returncode == 0, done.stderr[-2000:]
    messages = json.loads(done.stdout.splitlines()[-1])
    kind, text = messages["torch"]
    assert kind == "RuntimeError"
    assert "Exception raised from" in text
    assert messages["value"] == [
        "ValueError",
        "torchlean_native_ext.relu_forward: x of shape [4, 3] is not contiguous (flat row-major buffers "
        "are required)",
    ]
    kind, text = messages["aten"]
    assert kind == "RuntimeError"
    assert "DefaultCPUAllocator: can't allocate memory" in text
    assert "Exception raised from" not in text and "CapturedTraceback" not in text
    assert messages["index"] == [
        "IndexError",
        "torchlean_native_ext.gather_forward: index value 9 is out of range (accepted: values in [0, 5) "
        "along dimension 1)",
    ]


def test_the_layout_guard_refuses_a_strided_operand_on_the_kernel_path(emulation: ModuleType) -> None:
    """The capsules' layout evidence, ``check_flat_row_major``, refuses through ``kernels`` with
    its own message before the C++ check (below) could."""
    refusal = r"^native_cuda\.relu: x of shape \[4, 3\] has strides \[1, 4\], not a flat row-major"
    with pytest.raises(GuardError, match=refusal):
        kernels.relu_forward(torch.ones(3, 4).t())


def test_extension_checks_repeat_the_python_guards(emulation: ModuleType) -> None:
    """Called directly, the C++ entry point refuses what the Python guard would have refused."""
    with pytest.raises(ValueError, match=r"is not contiguous"):
        emulation.relu_forward(torch.ones(3, 4).t())
    with pytest.raises(ValueError, match=r"has dtype Int; accepted: float32, float64"):
        emulation.exp_forward(torch.ones(3, dtype=torch.int32))
    with pytest.raises(ValueError, match=r"element count overflows int64"):
        emulation.rand_uniform_forward([1 << 40, 1 << 40], 0, 0, "float32", 0, 0)
    with pytest.raises(ValueError, match=r"beta = 0 must be finite and nonzero"):
        emulation.smooth_max_pool_forward(torch.ones(1, 1, 4), [2], [2], [0], 0.0, 0)


def _direct_checks(m: ModuleType) -> list[tuple[str, Callable[[], object], str]]:
    """C++ checks whose input the Python guards refuse first (review23 kmut-b C08-C18): without
    C09, C14 or C15 the kernels divide by zero or read past a buffer."""
    f32, f64 = torch.float32, torch.float64
    q, k, v = (torch.randn(2, n, w, dtype=f64) for n, w in ((3, 4), (5, 4), (5, 3)))
    x3 = torch.randn(3, 4, dtype=f64)

    def short_lse() -> object:
        out, lse = m.direct_attention_forward(q, k, v, None, [], None, 0)
        return m.direct_attention_backward(torch.ones_like(out), q, k, v, None, [], out, lse[:1], None, 0)

    pool = torch.ones(1, 1, 4)
    return [
        (
            "hard_masked_softmax_forward",
            lambda: m.hard_masked_softmax_forward(
                torch.randn(3, 4, 6, dtype=f64), torch.ones(2, 6, dtype=torch.bool), 0
            ),
            "mask has shape [2, 6] which is not a suffix of the scores' shape [3, 4, 6]",
        ),
        (
            "hard_masked_softmax_forward",
            lambda: m.hard_masked_softmax_forward(x3, torch.tensor(True), 0),
            "mask has rank 0 (shape []); accepted ranks 1..2",
        ),
        (
            "hard_masked_softmax_forward",
            lambda: m.hard_masked_softmax_forward(x3, torch.ones(3, 4, dtype=torch.uint8), 0),
            "mask has dtype Byte; accepted: bool (True = allowed; an additive bias is a separate operation)",
        ),
        (
            "smooth_max_pool_forward",
            lambda: m.smooth_max_pool_forward(pool, [2], [2], [0], 1e-50, 0),
            "beta = 1e-50 underflows to zero in float32",
        ),
        (
            "smooth_max_pool_forward",
            lambda: m.smooth_max_pool_forward(pool, [2], [2], [0], 1e39, 0),
            "beta = 1e+39 must be finite and nonzero in the input dtype",
        ),
        (
            "smooth_max_pool_forward",
            lambda: m.smooth_max_pool_forward(pool.to(f64), [2], [1], [2], 1.0, 0),
            "padding[0] = 2 exceeds half the kernel size 2",
        ),
        (
            "bernoulli_mask_forward",
            lambda: m.bernoulli_mask_forward([4], 1.5, 0, 0, "float32", 0, 0),
            "keep_prob = 1.5 must lie in [0, 1]",
        ),
        (
            "direct_attention_forward",
            lambda: m.direct_attention_forward(
                *(torch.ones(1, n, w, dtype=f64) for n, w in ((3, 4), (5, 4), (2, 3))), None, [], None, 0
            ),
            "q [1, 3, 4], k [1, 5, 4], v [1, 2, 3] are not (batch, n_q, d), (batch, n_k, d), "
            "(batch, n_k, d_v)",
        ),
        ("direct_attention_backward", short_lse, "lse has shape [1, 3]; expected [2, 3]"),
        (
            "selective_scan_forward",
            lambda: m.selective_scan_forward(
                torch.ones(4, dtype=f64), torch.ones(4, dtype=f64), torch.randn(2, 3, 4, dtype=f64),
                torch.zeros(2, 4, dtype=f32), 0,
            ),
            "h0 has dtype Float but x has dtype Double",
        ),
    ]  # fmt: skip


@pytest.mark.parametrize("index", range(10))
def test_extension_checks_behind_the_python_guards_refuse(emulation: ModuleType, index: int) -> None:
    entry, call, message = _direct_checks(emulation)[index]
    with pytest.raises(ValueError, match="^" + re.escape(f"torchlean_native_ext.{entry}: {message}") + "$"):
        call()


def test_extension_refuses_matmul_batches_that_do_not_broadcast(emulation: ModuleType) -> None:
    """The C++ check refuses what ``torch.matmul`` refuses, before ATen (the oracle: torch)."""
    a, b = torch.ones(2, 2, 3), torch.ones(3, 3, 4)
    with pytest.raises(RuntimeError):
        torch.matmul(a, b)
    with pytest.raises(
        ValueError,
        match=r"^torchlean_native_ext\.matmul_forward: batch axes of a \[2, 2, 3\] and b \[3, 3, 4\] "
        r"do not broadcast$",
    ):
        emulation.matmul_forward(a, b)


def _text(shape: tuple[int, ...]) -> str:
    return re.escape(str(list(shape)))


def _wrong(shape: tuple[int, ...]) -> torch.Tensor:
    return torch.ones(shape, dtype=torch.float64)


def _cotangent_cases() -> list[tuple[str, Callable[[ModuleType, torch.Tensor], object], tuple[int, ...]]]:
    """(op, a raw backward call taking g (also passed as out), the forward's shape by torch)."""
    f64 = torch.float64
    x3, w3 = torch.ones(1, 1, 5, dtype=f64), torch.ones(1, 1, 3, dtype=f64)
    return [
        (
            "matmul_backward",
            lambda m, g: m.matmul_backward(g, torch.ones(5, 3, dtype=f64), torch.ones(3, 7, dtype=f64), g),
            tuple(torch.matmul(torch.ones(5, 3), torch.ones(3, 7)).shape),
        ),
        (
            "matmul_backward",
            lambda m, g: m.matmul_backward(g, torch.ones(3, dtype=f64), torch.ones(2, 3, 4, dtype=f64), g),
            tuple(torch.matmul(torch.ones(3), torch.ones(2, 3, 4)).shape),
        ),
        (
            "permute_backward",
            lambda m, g: m.permute_backward(g, torch.ones(2, 3, 4, dtype=f64), g, [2, 0, 1]),
            tuple(torch.ones(2, 3, 4).permute(2, 0, 1).shape),
        ),
        (
            "concat_backward",
            lambda m, g: m.concat_backward(
                g, [torch.ones(2, 3, dtype=f64), torch.ones(4, 3, dtype=f64)], g, 0
            ),
            tuple(torch.cat([torch.ones(2, 3), torch.ones(4, 3)], 0).shape),
        ),
        (
            "conv_backward",
            lambda m, g: m.conv_backward(g, x3, w3, None, g, [1], [0], [1], 1),
            tuple(torch.nn.functional.conv1d(x3, w3).shape),
        ),
        (
            "conv_backward",  # an empty batch
            lambda m, g: m.conv_backward(g, x3[:0], w3, None, g, [2], [1], [1], 1),
            tuple(torch.nn.functional.conv1d(x3[:0], w3, stride=2, padding=1).shape),
        ),
        (
            "conv_transpose_backward",
            lambda m, g: m.conv_transpose_backward(g, x3, w3, None, g, [2], [0], [1], [1], 1),
            tuple(torch.nn.functional.conv_transpose1d(x3, w3, stride=2, output_padding=1).shape),
        ),
    ]


@pytest.mark.parametrize("variant", ["extra-last", "extra-lead", "swapped"])
def test_raw_backwards_refuse_a_cotangent_of_another_shape(emulation: ModuleType, variant: str) -> None:
    """Each raw backward compares g with the forward's shape (computed by torch here): matmul and
    the convolutions once left it to ATen's errors; concat (off the axis) and permute accepted it
    and returned gradients of the wrong shape."""
    for op, call, shape in _cotangent_cases():
        wrong = {
            "extra-last": (*shape[:-1], shape[-1] + 1),
            "extra-lead": (2, *shape),
            "swapped": tuple(reversed(shape)) if len(set(shape)) > 1 else (*shape, 1),
        }[variant]
        assert wrong != shape
        expected = rf"^torchlean_native_ext\.{op}: g has shape {_text(wrong)}; expected {_text(shape)}$"
        with pytest.raises(ValueError, match=expected):
            call(emulation, _wrong(wrong))
        grads = call(emulation, _wrong(shape))  # the right shape passes
        assert isinstance(grads, list) and grads


def test_concat_refuses_extents_whose_sum_overflows(emulation: ModuleType) -> None:
    """Four (0, 2**62) pieces along axis 1 sum to 2**64: torch.cat once returned a (0, 0) result
    here; the C++ check refuses it raw (forward and backward), the Python guard first through
    ``kernels``."""
    xs = [torch.empty(0, 2**62, dtype=torch.float64)] * 2
    with pytest.raises(ValueError, match=r"the extents along axis 1 add up to more than int64 can count"):
        emulation.concat_backward(_wrong((0, 1)), xs, _wrong((0, 1)), 1)
    with pytest.raises(
        GuardError,
        match=r"^native_cuda\.concat: the extents along axis 1 add up to 18446744073709551616, more than "
        r"int64 can count \(accepted: at most 9223372036854775807\)$",
    ):
        kernels.concat_forward(*[torch.empty(0, 2**62)] * 4, axis=1)
    assert kernels.concat_forward(*[torch.empty(0, 2**61)] * 3, axis=1).shape == (0, 3 * 2**61)


FLOAT32_MAX = 3.4028234663852886e38


@pytest.mark.parametrize(
    ("lo", "hi"),
    [
        (0.5, 1e300),
        (-1e300, 0.5),
        (0.5, FLOAT32_MAX + 2.0**102),  # rounds to FLOAT32_MAX
        (0.5, FLOAT32_MAX + 2.0**103),  # half an ulp above: the tie rounds to inf
        (-FLOAT32_MAX - 2.0**103, FLOAT32_MAX + 1e31),
        (0.1, 0.3),  # inside the range: rounded to float32 as the reference does
    ],
)
def test_clamp_bounds_beyond_float32_are_rounded_as_the_reference(
    emulation: ModuleType, lo: float, hi: float
) -> None:
    """``torch.clamp`` refuses a finite bound beyond float32's range for a float32 x; the reference
    (the oracle) rounds the bound to x's dtype, an overflow giving +-inf, and so does the native
    provider now, raw and through ``kernels``, forward and VJP."""
    from torchlean.backend.providers.reference import kernels as reference

    x = torch.tensor([float("inf"), -float("inf"), 1.0, 0.2, FLOAT32_MAX, -FLOAT32_MAX])
    expected = reference.clamp(x.numpy(), lo=lo, hi=hi)
    expected_vjp = reference.clamp_vjp(np.ones(6, np.float32), x.numpy(), out=expected, lo=lo, hi=hi)[0]
    out = kernels.clamp_forward(x, lo=lo, hi=hi)
    assert np.array_equal(out.numpy(), expected)
    assert np.array_equal(emulation.clamp_forward(x, lo, hi).numpy(), expected)
    (dx,) = kernels.clamp_backward(torch.ones(6), x, out=out, lo=lo, hi=hi)
    assert dx is not None and np.array_equal(dx.numpy(), expected_vjp)


@pytest.mark.parametrize(
    ("call", "message"),
    [
        (
            lambda m: m.broadcast_forward(torch.ones((), dtype=torch.float64), [1, 2**63 - 1]),
            r"broadcast_forward: target shape \[1, 9223372036854775807\] needs more than int64 bytes "
            r"\(8 per element\)",
        ),
        (
            lambda m: m.rand_uniform_forward([1, 2**62], 0, 0, "float32", 0, 0),
            r"rand_uniform_forward: shape \[1, 4611686018427387904\] needs more than int64 bytes",
        ),
        (
            lambda m: m.bernoulli_mask_forward([2**61], 0.5, 0, 0, "float64", 0, 0),
            r"bernoulli_mask_forward: shape \[2305843009213693952\] needs more than int64 bytes",
        ),
        (
            lambda m: m.reshape_forward(torch.ones(0), [0, 2**62, 2**62]),
            r"reshape_forward: target shape \[0, 4611686018427387904, 4611686018427387904\] has "
            r"strides beyond int64",
        ),
        (
            lambda m: m.conv_transpose_forward(
                torch.ones(1, 1, 3), torch.ones(1, 1, 2), None, [2**40], [0], [0], [1], 1
            ),
            r"conv_transpose_forward: stride\[0\] = 1099511627776 is too large "
            r"\(accepted: at most 2147483647 = 2\*\*31 - 1",
        ),
        (
            lambda m: m.max_pool_forward(torch.ones(1, 1, 4, 4), [2, 2], [2**62, 1], [0, 0], [1, 1]),
            r"max_pool_forward: stride\[0\] = 4611686018427387904 is too large",
        ),
        (
            lambda m: m.smooth_max_pool_forward(torch.ones(1, 1, 4), [2**31], [1], [0], 1.0, 0),
            r"smooth_max_pool_forward: kernel\[0\] = 2147483648 is too large",
        ),
        (
            lambda m: m.conv_forward(torch.ones(1, 1, 5), torch.ones(1, 1, 3), None, [1], [0], [2**62], 1),
            r"conv_forward: spatial axis 0 has a window span dilation \* \(kernel - 1\) \+ 1 beyond "
            r"int64 \(dilation 4611686018427387904, kernel 3\)",
        ),
        (
            lambda m: m.conv_forward(torch.ones(1, 1, 5), torch.ones(1, 1, 3), None, [1], [2**62], [1], 1),
            r"conv_forward: spatial axis 0 has a padded extent 5 \+ 2 \* 4611686018427387904 beyond int64",
        ),
        (
            lambda m: m.conv_transpose_forward(
                torch.ones(0, 1, 2**62), torch.ones(1, 1, 2), None, [2], [0], [0], [1], 1
            ),
            r"conv_transpose_forward: spatial axis 0 would have an output extent beyond int64",
        ),
        (  # an empty batch: no element, but 16 channels of 2**60 have strides beyond int64
            lambda m: m.conv_forward(torch.ones(0, 1, 2**60), torch.ones(16, 1, 1), None, [1], [0], [1], 1),
            r"conv_forward: the result \[0, 16, 1152921504606846976\] has strides beyond int64",
        ),
        (
            lambda m: m.conv_transpose_forward(
                torch.ones(0, 1, 2**40), torch.ones(1, 4, 1), None, [2**22], [0], [0], [1], 1
            ),
            r"conv_transpose_forward: the result \[0, 4, 4611686018423193601\] has strides beyond int64",
        ),
        (
            lambda m: m.concat_forward([torch.empty(0, 2**62)] * 4, 1),
            r"concat_forward: the extents along axis 1 add up to more than int64 can count",
        ),
    ],
)
def test_sizes_torch_cannot_hold_are_refused_by_the_checks(
    emulation: ModuleType, call: Callable[[ModuleType], object], message: str
) -> None:
    """Element counts that fit int64 but whose bytes or strides do not, window parameters above
    what ATen's pooling and transposed-convolution kernels hold (2**31 - 1, as
    ``reference.spatial_guards.window_parameter_limit``), and spans, padded extents and output
    extents beyond int64: refused by the checks (``ValueError``), not by torch's own errors."""
    with pytest.raises(ValueError, match=rf"^torchlean_native_ext\.{message}"):
        call(emulation)


def test_smooth_max_pool_is_stable_at_overflow_scale(emulation: ModuleType) -> None:
    x = torch.tensor([[[3.0e38, 3.0e38, -3.0e38, 1.0]]], dtype=torch.float32)
    out = kernels.smooth_max_pool_forward(x, beta=1.0, kernel_size=2)
    assert torch.isfinite(out).all()
    assert out[0, 0, 0].item() == pytest.approx(3.0e38, rel=1e-6)  # max + log(2): below float32 ulp
    assert out[0, 0, 1].item() == 1.0  # exp(-huge) underflows: exactly the max
    (dx,) = kernels.smooth_max_pool_backward(torch.ones_like(out), x, out=out, beta=1.0, kernel_size=2)
    assert dx is not None
    assert dx.tolist() == [[[0.5, 0.5, 0.0, 1.0]]]


@pytest.mark.parametrize("beta", [1.0, -1.0])
def test_smooth_max_pool_with_infinite_windows_is_the_formula(emulation: ModuleType, beta: float) -> None:
    """An infinite window max/min is replaced by 0 (as ``torch.logsumexp`` does): the value is
    ``+-inf`` as the formula gives, not ``inf - inf = NaN``; the gradient is torch's (NaN at the
    infinite winner, 0 elsewhere, also at a finite element whose ``exp(beta * v)`` overflows).
    Oracle: ``torch.logsumexp`` in float64 and its autograd."""
    inf, nan = float("inf"), float("nan")
    row = [inf, 0.0, -inf, -inf, -inf, 1.0, nan, 2.0, 800.0, inf, -800.0, -inf]
    x = torch.tensor([[row]], dtype=torch.float64)
    out = kernels.smooth_max_pool_forward(x, beta=beta, kernel_size=2)
    (dx,) = kernels.smooth_max_pool_backward(torch.ones_like(out), x, out=out, beta=beta, kernel_size=2)
    assert dx is not None
    tx = x.clone().requires_grad_(True)
    expected = torch.logsumexp(beta * tx.reshape(1, 1, 6, 2), dim=-1) / beta
    expected.sum().backward()
    assert tx.grad is not None
    torch.testing.assert_close(out, expected.detach(), equal_nan=True)
    torch.testing.assert_close(dx, tx.grad, equal_nan=True)


# ------------------------------------------------------------------------------------ guards (CPU)


@pytest.fixture
def no_build(monkeypatch: pytest.MonkeyPatch) -> None:
    """Fail the test if anything tries to build or load the extension."""

    def refuse(*_: object) -> ModuleType:
        raise AssertionError("the extension must not be built")

    monkeypatch.setattr(extension, "load_extension", refuse)
    monkeypatch.setattr(extension, "load_host_emulation", refuse)


def test_check_launch_refuses_tensors_off_the_cuda_device(
    no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    with pytest.raises(GuardError, match=r"native_cuda.relu: x is on device cpu \(accepted: cuda tensors\)"):
        guards.check_launch("relu", {"x": torch.ones(3)})
    monkeypatch.setattr(extension, "require_cuda", lambda: None)  # as on a machine with CUDA
    with pytest.raises(
        GuardError, match=r"native_cuda.matmul: a is on device cpu \(accepted: cuda tensors\)"
    ):
        kernels.matmul_forward(torch.ones(2, 2), torch.ones(2, 2))


@pytest.fixture
def cpu_is_the_device(monkeypatch: pytest.MonkeyPatch) -> None:
    """Let the guards accept CPU tensors as the emulation does (no build involved)."""
    monkeypatch.setattr(extension, "expected_device_type", lambda: "cpu")


def test_check_launch_refuses_bad_dtypes_ranks_and_shapes(no_build: None, cpu_is_the_device: None) -> None:
    x = torch.ones(2, 3)
    with pytest.raises(GuardError, match=r"x has dtype int32 \(accepted: float32, float64\)"):
        guards.check_launch("exp", {"x": x.to(torch.int32)})
    with pytest.raises(GuardError, match=r"b has dtype float64 but the other operands are float32"):
        guards.check_launch("add", {"a": x.float(), "b": x.double()})
    with pytest.raises(GuardError, match=r"mask has dtype float32 \(accepted: bool.*additive bias"):
        guards.check_launch("hard_masked_softmax", {"x": x, "mask": x}, masks=("mask",))
    with pytest.raises(GuardError, match=r"index has dtype int32 \(accepted: int64\)"):
        guards.check_launch("gather", {"x": x, "index": x.to(torch.int32)}, indices=("index",))
    with pytest.raises(GuardError, match=r"w has rank 3 .*accepted ranks 2..2"):
        guards.check_launch("linear", {"w": torch.ones(1, 2, 3)}, ranks={"w": (2, 2)})
    with pytest.raises(GuardError, match=r"g has shape \[2, 3\] but x has shape \[3\]"):
        guards.check_launch("relu", {"g": x, "x": torch.ones(3)}, same_shape=(("g", "x"),))
    with pytest.raises(GuardError, match=r"x is a list \(accepted: torch.Tensor\)"):
        guards.check_launch("relu", {"x": [1.0]})  # type: ignore[dict-item]


def test_check_launch_passes_and_reports_the_dtype(cpu_is_the_device: None) -> None:
    assert guards.check_launch("add", {"a": torch.ones(2), "b": torch.ones(2), "c": None}) == torch.float32


def test_check_flat_row_major_refuses_strided_buffers() -> None:
    guards.check_flat_row_major("relu", {"x": torch.ones(2, 3), "y": None})
    with pytest.raises(GuardError, match=r"x of shape \[3, 2\] has strides \[1, 3\], not a flat row-major"):
        guards.check_flat_row_major("relu", {"x": torch.ones(2, 3).t()})


def test_element_counts_are_overflow_checked() -> None:
    assert guards.check_element_count("reshape", "shape", [2, 3, 0]) == 0
    with pytest.raises(GuardError, match=r"more than int64 can count"):
        guards.check_element_count("reshape", "shape", [1 << 32, 1 << 32])
    with pytest.raises(GuardError, match=r"has extent -1 \(accepted: ints >= 0\)"):
        guards.check_element_count("reshape", "shape", [2, -1])


@pytest.mark.parametrize("source", ["rand_uniform", "bernoulli_mask"])
def test_the_random_sources_check_their_shape_before_anything_else(source: str) -> None:
    """Their shape guard (``check_element_count``, the capsules' shape evidence) refuses before
    the device is looked at, so it runs here without CUDA."""
    forward = getattr(kernels, f"{source}_forward")
    extra = {"keep_prob": 0.5} if source == "bernoulli_mask" else {}
    with pytest.raises(GuardError, match=rf"^native_cuda\.{source}: shape \[2, -1\] has extent -1"):
        forward(shape=[2, -1], seed=1, counter=0, **extra)
    with pytest.raises(GuardError, match=r"more than int64 can count"):
        forward(shape=[1 << 32, 1 << 32], seed=1, counter=0, **extra)
    capsule = next(c for c in capsules.CAPSULES if c.name == f"native_cuda.{source}")
    assert capsule.shape_contract.evidence.label.endswith("native_cuda.guards.check_element_count")


def test_zero_element_shapes_whose_other_extents_overflow_are_refused() -> None:
    """torch's rule: the product of the non-zero extents must fit, even when another extent is 0
    (``torch.empty(2**40, 2**40, 0)`` raises)."""
    assert guards.check_element_count("reshape", "shape", [1 << 31, 1 << 31, 0]) == 0
    with pytest.raises(
        GuardError,
        match=r"shape \[1099511627776, 1099511627776, 0\] has non-zero extents whose product "
        r"1208925819614629174706176 is more than int64 can count",
    ):
        guards.check_element_count("reshape", "shape", [1 << 40, 1 << 40, 0])
    with pytest.raises(RuntimeError):
        torch.empty(1 << 40, 1 << 40, 0)


def test_window_parameters_are_checked() -> None:
    assert guards.per_axis("conv", "stride", 2, 3, 1) == (2, 2, 2)
    assert guards.per_axis("conv", "padding", (0, 1), 2, 0) == (0, 1)
    with pytest.raises(GuardError, match=r"stride=\(1, 2\) \(accepted: an int or 3 ints\)"):
        guards.per_axis("conv", "stride", (1, 2), 3, 1)
    with pytest.raises(GuardError, match=r"stride=0 \(accepted: ints >= 1\)"):
        guards.per_axis("conv", "stride", 0, 2, 1)
    # numpy integers are integers, as the reference guards take them; bools and floats are not
    stride = guards.per_axis("max_pool", "stride", np.int64(2), 2, 1)
    assert stride == (2, 2) and all(type(s) is int for s in stride)
    assert guards.per_axis("conv", "padding", (np.int32(0), 1), 2, 0) == (0, 1)
    for bad in (True, (1, np.bool_(True)), 2.0, (1, np.float64(1.0))):
        with pytest.raises(GuardError, match=r"\(accepted: ints >= 1\)|\(accepted: an int or 2 ints\)"):
            guards.per_axis("conv", "stride", bad, 2, 1)
    with pytest.raises(GuardError, match=r"stride=np.int64\(0\) \(accepted: ints >= 1\)"):
        guards.per_axis("conv", "stride", np.int64(0), 2, 1)
    assert kernels._groups("conv", np.int64(2)) == 2 and type(kernels._groups("conv", np.int64(2))) is int
    with pytest.raises(GuardError, match=r"groups=np.int64\(0\) \(accepted: an int >= 1\)"):
        kernels._groups("conv", np.int64(0))
    # an integer too long for Python to print is described, not a ValueError from repr
    huge = r"<a (tuple|int) holding an integer of more than 4300 digits>"
    with pytest.raises(GuardError, match=rf"stride={huge} \(accepted: ints >= 1\)"):
        guards.per_axis("conv", "stride", (-(10**5000), 1), 2, 1)
    with pytest.raises(GuardError, match=rf"scale={huge} \(accepted: a finite number\)"):
        guards.check_finite("direct_attention", "scale", 10**5000)
    with pytest.raises(GuardError, match=r"beta=0 \(accepted: a finite nonzero number\)"):
        guards.check_finite("smooth_max_pool", "beta", 0, nonzero=True)
    with pytest.raises(GuardError, match=r"scale=nan"):
        guards.check_finite("direct_attention", "scale", float("nan"))


# --------------------------------------------------------------------------------- no CUDA here


LAUNCHES = {
    "relu": lambda: kernels.relu_forward(torch.ones(3)),
    "matmul": lambda: kernels.matmul_forward(torch.ones(2, 3), torch.ones(3, 2)),
    "hard_masked_softmax": lambda: kernels.hard_masked_softmax_forward(
        torch.ones(2, 3), torch.ones(2, 3) > 0
    ),
    "selective_scan": lambda: kernels.selective_scan_forward(
        torch.ones(4), torch.ones(4), torch.ones(3, 4), torch.ones(4)
    ),
    "rand_uniform": lambda: kernels.rand_uniform_forward(shape=[3], seed=1, counter=0),
    "scaled_dot_product_attention": lambda: kernels.direct_attention(
        torch.ones(1, 2, 3), torch.ones(1, 2, 3), torch.ones(1, 2, 3)
    ),
}


@pytest.mark.parametrize("op", list(LAUNCHES))
def test_cpu_build_of_torch_fails_before_launch_with_a_clear_message(
    op: str, no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(extension.NativeExtensionError, match=r"this torch build \(.*\) is not a CUDA build"):
        LAUNCHES[op]()


@pytest.mark.parametrize("op", list(LAUNCHES))
def test_cuda_build_without_device_fails_before_launch(
    op: str, no_build: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(extension.NativeExtensionError) as info:
        LAUNCHES[op]()
    assert (
        str(info.value) == "CUDA was requested and this is a CUDA build, but no usable CUDA device is visible"
    )


def test_loading_the_extension_without_cuda_fails_first(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", None)
    with pytest.raises(extension.NativeExtensionError, match=r"this torch build \(.*\) is not a CUDA build"):
        extension.load_extension()


def test_cuda_build_without_device_fails_with_the_original_message(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(torch.version, "cuda", "12.8")
    monkeypatch.setattr(torch.cuda, "is_available", lambda: False)
    with pytest.raises(extension.NativeExtensionError) as info:
        extension.load_extension()
    assert (
        str(info.value) == "CUDA was requested and this is a CUDA build, but no usable CUDA device is visible"
    )
    assert str(info.value) == extension.NO_DEVICE_MESSAGE


def test_missing_sources_are_reported(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    monkeypatch.setenv("TORCHLEAN_CSRC", str(tmp_path))
    with pytest.raises(
        extension.NativeExtensionError, match=r"the sources of torchlean_native_ext are not available"
    ):
        extension.sources_dir()


def test_missing_toolchain_is_reported(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CXX", "no-such-compiler-torchlean")
    monkeypatch.setattr(extension, "_loaded", {})
    with pytest.raises(
        extension.NativeToolchainError, match=r"needs a C\+\+ compiler .*`no-such-compiler-torchlean`"
    ):
        extension.load_host_emulation()


def test_missing_python_headers_are_a_missing_tool(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Without ``Python.h`` (no python3-dev) nothing is compiled: a ``NativeToolchainError`` that
    names the file, which the ``emulation`` fixture turns into a skip."""
    if shutil.which(os.environ.get("CXX", "c++")) is None or shutil.which("ninja") is None:
        pytest.skip("needs a C++ compiler and ninja (checked before the headers)")
    monkeypatch.setattr(extension.sysconfig, "get_paths", lambda: {"include": str(tmp_path)})
    monkeypatch.setattr(extension, "_loaded", {})
    with pytest.raises(extension.NativeToolchainError) as info:
        extension.load_host_emulation()
    assert str(info.value) == (
        f"building torchlean_native_ext needs the Python development headers: {tmp_path / 'Python.h'} "
        "does not exist (install your Python's headers, e.g. the python3-dev package)"
    )


def test_sources_that_do_not_compile_are_a_build_failure_not_a_missing_tool(
    monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    """A tree whose emulation source has a syntax error fails to build with a
    ``NativeExtensionError`` naming the compiler's error, and not its subclass
    ``NativeToolchainError``, the only one the ``emulation`` fixture turns into a skip."""
    if shutil.which(os.environ.get("CXX", "c++")) is None or shutil.which("ninja") is None:
        pytest.skip("needs a C++ compiler and ninja")
    csrc = tmp_path / "csrc"
    (csrc / "emu").mkdir(parents=True)
    for name in ("native_ops.cu", "native_ops.h", "kernels.cuh"):
        (csrc / name).write_text("// not compiled by the emulation build\n")
    (csrc / "bindings.cpp").write_text("int torchlean_test_compiles = 0;\n")
    (csrc / "emu" / "native_ops_emu.cpp").write_text("int torchlean_test_broken(  // no closing\n")
    monkeypatch.setenv("TORCHLEAN_CSRC", str(csrc))
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.setattr(extension, "_loaded", {})
    failed = r"building torchlean_native_ext_emu from .* failed"
    with pytest.raises(extension.NativeExtensionError, match=failed) as info:
        extension.load_host_emulation()
    assert not isinstance(info.value, extension.NativeToolchainError)


def test_each_checkout_builds_in_its_own_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """Builds of two source trees (checkouts) never share a directory; the same tree always maps
    to the same one, under ``$TORCH_EXTENSIONS_DIR`` when set."""
    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path / "ext"))
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST", raising=False)
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    first = extension.build_directory("torchlean_native_ext_emu", tmp_path / "a")
    assert first == extension.build_directory("torchlean_native_ext_emu", tmp_path / "b" / ".." / "a")
    assert first != extension.build_directory("torchlean_native_ext_emu", tmp_path / "b")
    assert first != extension.build_directory("torchlean_native_ext", tmp_path / "a")
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "9.0")  # another GPU architecture list: another build
    assert first != extension.build_directory("torchlean_native_ext_emu", tmp_path / "a")
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    assert first == extension.build_directory("torchlean_native_ext_emu", tmp_path / "a")
    # unset, torch builds for the visible GPUs: another GPU, another build
    monkeypatch.setattr(torch.cuda, "is_available", lambda: True)
    monkeypatch.setattr(torch.cuda, "device_count", lambda: 2)
    for capabilities, same in (({0: (9, 0), 1: (9, 0)}, False), ({0: (8, 0), 1: (9, 0)}, False)):
        monkeypatch.setattr(torch.cuda, "get_device_capability", lambda index, c=capabilities: c[index])
        assert (first == extension.build_directory("torchlean_native_ext_emu", tmp_path / "a")) is same
    mixed = extension.build_directory("torchlean_native_ext_emu", tmp_path / "a")
    monkeypatch.setenv("TORCH_CUDA_ARCH_LIST", "8.0;9.0")  # the list the visible GPUs give
    assert mixed == extension.build_directory("torchlean_native_ext_emu", tmp_path / "a")
    monkeypatch.delenv("TORCH_CUDA_ARCH_LIST")
    assert first.parent == tmp_path / "ext"
    assert re.fullmatch(r"torchlean_native_ext_emu-[0-9a-f]{12}", first.name)
    assert not first.exists()  # creates nothing


def test_the_build_uses_that_directory(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from torch.utils import cpp_extension

    monkeypatch.setenv("TORCH_EXTENSIONS_DIR", str(tmp_path))
    seen: dict[str, object] = {}

    def load(**kwargs: object) -> ModuleType:
        seen.update(kwargs)
        return ModuleType(str(kwargs["name"]))

    monkeypatch.setattr(cpp_extension, "load", load)
    module = extension._build("probe_name", ("bindings.cpp",), cuda=False)
    assert module.__name__ == "probe_name"
    expected = extension.build_directory("probe_name", extension.sources_dir())
    assert seen["build_directory"] == str(expected)
    assert expected.is_dir()


def test_stub_matches_the_bindings() -> None:
    """stubs/torchlean_native_ext.pyi types exactly what csrc/bindings.cpp binds, argument names
    and order included (read from the source, so it runs without a compiler; stubtest cannot see
    pybind11 parameters, see test_stub_sync.py)."""
    import ast

    bindings = (CSRC / "bindings.cpp").read_text()
    bound = {
        name: re.findall(r'py::arg\("(\w+)"\)', args)
        for name, args in re.findall(r'TL_DEF\((\w+)((?:,\s*py::arg\("\w+"\))*)\);', bindings)
    }
    tree = ast.parse((ROOT / "stubs" / "torchlean_native_ext.pyi").read_text())
    typed = {f.name: [a.arg for a in f.args.args] for f in tree.body if isinstance(f, ast.FunctionDef)}
    assert typed == bound
    # device_type, forwards, backwards, direct attention, its tile memory cap (review178 F2), the
    # element block limit (review208 F1)
    assert len(bound) == 1 + 46 + 44 + 2 + 1 + 1


def test_smooth_max_pool_backward_checks_out_as_every_entry_point_checks_its_operands(
    emulation: ModuleType,
) -> None:
    """review112 F6: the raw entry point took an ``out`` of any shape (it is never read; the Python
    wrapper refused it first); the C++ check now refuses it raw too."""
    x = torch.zeros(1, 1, 5, dtype=torch.float64)
    g = torch.ones(1, 1, 4, dtype=torch.float64)  # kernel 2, stride 1: 4 windows
    with pytest.raises(ValueError, match=r"^torchlean_native_ext\.smooth_max_pool_backward: out has shape "
                                         r"\[9\] but g has shape \[1, 1, 4\]$"):
        emulation.smooth_max_pool_backward(g, x, torch.zeros(9, dtype=torch.float64), [2], [1], [0], 1.0, 0)
    (dx,) = emulation.smooth_max_pool_backward(g, x, torch.zeros(1, 1, 4, dtype=torch.float64), [2], [1],
                                               [0], 1.0, 0)
    assert dx.shape == x.shape


def test_a_case_whose_inputs_cannot_be_made_is_a_failed_result_not_an_error() -> None:
    """review127 F4: ``run_case`` caught the native calls' errors only; one raised while making a
    case's inputs ended gpu_check's whole parity sweep. It is now that case's problem (no device
    or extension needed: the case fails before any kernel)."""

    def broken(rng: np.random.Generator) -> parity.Inputs:
        raise ValueError("cannot draw these inputs")

    result = parity.run_case(parity.ParityCase("relu", "broken", broken), torch.float32, torch.device("cpu"))
    assert not result.passed
    assert result.problems == ("ValueError: cannot draw these inputs",)
    assert (result.case, result.op) == ("relu/broken", "relu")
