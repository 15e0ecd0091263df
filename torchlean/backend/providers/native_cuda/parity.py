"""Parity cases of the native kernels: every native-cuda op (and ``native_cuda.direct_attention``)
on seeded inputs, forward and backward, against float64 oracles.

Oracles, all independent of the extension:

* the reference provider's numpy kernels (``reference.kernels`` / ``reference.spatial``) run in
  float64 — parity with them is the capsules' value and VJP claim;
* for ``fft_fno`` and ``selective_scan``, which have no reference capsule, the same maths written
  with torch on the CPU in float64 (the real DFT of ``fft_fno`` as cosine/sine matrix products,
  no FFT library) and differentiated by ``torch.autograd``.

Inputs are drawn in float64, rounded to the tested dtype, and the oracle runs on the rounded
values, so an error measures only the kernel's arithmetic. The error of a result, the one
checked, is ``max|native - oracle| / max(max|oracle|, 1)``: a relative error where the oracle's
largest magnitude is at least 1 and an absolute one below that (review112 F7). A result passes
below :data:`TOLERANCE` for its dtype (float32 ``1e-5``, float64 ``1e-10``), NaN positions must be
the oracle's; the seeded sources must match bit for bit. The relative error without that floor,
``max|native - oracle| / max|oracle|`` (``max|native - oracle|`` itself where the oracle is all
zeros), is reported beside it (:attr:`CaseResult.unfloored_relative_errors`) and not checked.
Direct attention's saved row logsumexp is compared too (with one written in numpy: -inf on fully
blocked rows, NaN on all -inf rows).

Cases include fully blocked rows and NaN/inf at blocked positions for ``hard_masked_softmax``
and attention, also in the cotangent (the native results must then also be finite and equal the
oracle's), NaN/±inf at allowed ``hard_masked_softmax`` entries (NaN weights on that row, exact
zeros at its blocked entries), rows whose allowed scores are all -inf for
``hard_masked_softmax`` and attention (NaN there, as the reference; finite where only some are,
also when a key tile of -inf scores comes first), attention rows whose scores all lie below
float32's ``exp`` range or fall by more than that range from one key tile to the next, masks
whose only allowed pair in a tile sits at its corner (the tile-skipping votes), NaN/±inf/±0
inputs of ``relu``, ``abs``, ``inv``, ``max`` and ``min`` (torch autograd's gradient rules,
which the reference follows), ``smooth_max_pool`` windows whose maximum is infinite (as
``torch.logsumexp``), and attention at the head widths that ``bench/gpu_check.py``
times (d = d_v = 64 and 128) and at the widest (256, whose float64 backward runs on the smaller
tile), and zero-size inputs (an empty batch, feature, key or time axis: torch's results —
empty, the bias alone, NaN for a mean over nothing, zeros for a query without keys — and, on a
GPU, no kernel launched on an empty grid, which CUDA refuses). On CUDA each case ends with a
device synchronisation inside its error handling, so an asynchronous kernel fault is recorded
against the case that caused it.

Used by ``tests/cuda/test_native_parity.py`` and ``tests/cuda/test_cuda_attention.py`` (on CUDA,
and on the CPU through :func:`.extension.host_emulation`) and by ``bench/gpu_check.py``.
"""

from __future__ import annotations

import contextlib
import math
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import numpy.typing as npt
import torch

from torchlean.backend.providers import attention_kernels
from torchlean.backend.providers.native_cuda import extension, kernels
from torchlean.backend.providers.native_cuda.capsules import MODULE as NATIVE_MODULE
from torchlean.backend.providers.reference import kernels as ref
from torchlean.backend.providers.reference import spatial as ref_spatial

__all__ = [
    "ATTENTION",
    "ATTENTION_KEY_TILE",
    "CASES",
    "ELEMENT_BLOCK_CASES",
    "FEW_ELEMENT_BLOCKS",
    "NATIVE_OPS",
    "SMALL_TILE_CASES",
    "SMALL_TILE_SHARED_MEMORY",
    "TOLERANCE",
    "CaseResult",
    "ParityCase",
    "few_element_blocks",
    "run_case",
    "smallest_tiles",
]

Array = npt.NDArray[Any]

NATIVE_OPS: tuple[str, ...] = tuple(capsule.op.label for capsule in NATIVE_MODULE.capsules)
"""Every native-cuda capsule's op, in catalog order."""
"""The 46 op labels of the native-cuda module, in catalog order (anchor-backend.md §4.3)."""

ATTENTION = "scaled_dot_product_attention"
"""The op of ``native_cuda.direct_attention`` (attention module)."""

TOLERANCE: Mapping[torch.dtype, float] = {torch.float32: 1e-5, torch.float64: 1e-10}

_SPATIAL = {"layer_norm", "batch_norm", "conv", "conv_transpose", "max_pool", "smooth_max_pool", "avg_pool"}
_SOURCES = {"rand_uniform", "bernoulli_mask"}


@dataclass(frozen=True, slots=True)
class Inputs:
    """One case's float64 inputs (None for an absent optional input), parameters and whether the
    backward is checked."""

    arrays: tuple[Array | None, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    backward: bool = True
    finite: bool = False  # the results must be finite (non-finite values sit at blocked positions)


@dataclass(frozen=True, slots=True)
class ParityCase:
    """A named case of one op: ``make(rng)`` draws its inputs. ``composed``: an attention case
    that ``torchlean.composed_attention`` takes too (it accepts ``(batch, heads, n, d)`` or
    ``(heads, n, d)`` operands; ``native_cuda.direct_attention`` any number of batch axes)."""

    op: str
    name: str
    make: Callable[[np.random.Generator], Inputs]
    composed: bool = True

    @property
    def id(self) -> str:
        return f"{self.op}/{self.name}"


@dataclass(frozen=True, slots=True)
class CaseResult:
    """Errors of one case in one dtype: ``errors`` maps ``forward``, ``d<i>`` (cotangent of
    input i) and, for ``native_cuda.direct_attention``, ``lse`` (the row logsumexp its forward
    saves for the backward) to the checked error, the largest difference scaled by
    ``max(max|oracle|, 1)``; ``unfloored_relative_errors`` maps the same keys to the largest
    difference over ``max|oracle|`` (reported, not checked; see :func:`_errors`); ``problems``
    lists failures in words."""

    case: str
    op: str
    dtype: str
    errors: Mapping[str, float]
    tolerance: float
    problems: tuple[str, ...]
    unfloored_relative_errors: Mapping[str, float] = field(default_factory=dict)

    @property
    def passed(self) -> bool:
        return not self.problems


# ----------------------------------------------------------------------------------------- oracles


def _torch_fft_fno(x: torch.Tensor, wr: torch.Tensor, wi: torch.Tensor) -> torch.Tensor:
    """The FNO spectral convolution with the real DFT written out as products with cosine and sine
    matrices (no FFT library: independent of the cuFFT/MKL code the kernel calls, and defined for
    an empty batch or channel axis, which ATen's FFT plans refuse)."""
    n = x.shape[-1]
    modes = wr.shape[0]
    # bin m, sample t: angle 2 pi (m t mod n) / n, reduced exactly in integers
    bins = torch.arange(modes, dtype=torch.int64)
    samples = torch.arange(n, dtype=torch.int64)
    angle = (torch.outer(bins, samples) % n).to(torch.float64) * (2.0 * math.pi / n)
    cos, sin = torch.cos(angle), torch.sin(angle)
    sin[0] = 0.0  # DC (and Nyquist below) have no imaginary part: irfft ignores it
    weight = torch.full((modes,), 2.0, dtype=torch.float64)  # each bin stands for itself and its mirror
    weight[0] = 1.0
    if n % 2 == 0 and modes == n // 2 + 1:
        sin[-1] = 0.0
        weight[-1] = 1.0
    xr, xi = x @ cos.T, -(x @ sin.T)  # rfft(x)[..., :modes]
    yr = torch.einsum("bim,mio->bom", xr, wr) - torch.einsum("bim,mio->bom", xi, wi)
    yi = torch.einsum("bim,mio->bom", xr, wi) + torch.einsum("bim,mio->bom", xi, wr)
    # irfft of the half spectrum that is zero above ``modes``
    return ((yr * weight) @ cos - (yi * weight) @ sin) / n


def _torch_selective_scan(
    a: torch.Tensor, b: torch.Tensor, x: torch.Tensor, h0: torch.Tensor
) -> torch.Tensor:
    token = a.shape == x.shape
    h = h0
    states = []
    for t in range(x.shape[-2]):
        at = a[..., t, :] if token else a
        bt = b[..., t, :] if token else b
        h = at * h + bt * x[..., t, :]
        states.append(h)
    if not states:
        return 0.0 * x  # no time step: x's empty shape, still differentiable (zero cotangents)
    return torch.stack(states, dim=-2)


_TORCH_ORACLES: dict[str, Callable[..., torch.Tensor]] = {
    "fft_fno": _torch_fft_fno,
    "selective_scan": _torch_selective_scan,
}


def _oracle(
    op: str, arrays: tuple[Array | None, ...], params: Mapping[str, Any], g: Array | None
) -> tuple[Array, tuple[Array | None, ...] | None]:
    """Forward value and (when ``g`` is given) cotangents, in float64."""
    if op in _TORCH_ORACLES:
        leaves = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays if a is not None]
        out_t = _TORCH_ORACLES[op](*leaves)
        out = out_t.detach().numpy()
        if g is None:
            return out, None
        grads = torch.autograd.grad(
            out_t, leaves, torch.tensor(g, dtype=torch.float64), allow_unused=True, materialize_grads=True
        )
        return out, tuple(d.numpy() for d in grads)
    if op == ATTENTION:
        forward: Callable[..., Any] = ref.scaled_dot_product_attention
        vjp: Callable[..., Any] | None = ref.scaled_dot_product_attention_vjp
    else:
        module: Any = ref_spatial if op in _SPATIAL else ref
        forward = getattr(module, op)
        vjp = getattr(module, f"{op}_vjp", None)
    if op in _SOURCES:
        return np.asarray(forward(**params)), None
    out = np.asarray(forward(*arrays, **params))
    if g is None or vjp is None:
        return out, None
    return out, tuple(vjp(g, *arrays, out=out, **params))


def _attention_logsumexp(arrays: tuple[Array | None, ...], params: Mapping[str, Any]) -> Array:
    """The row logsumexp of the scaled allowed scores, written directly in numpy float64: -inf
    on a row without an allowed key, NaN on a row whose allowed scores are all -inf (or where one
    is NaN); values at blocked pairs are selected away before they are read."""
    q, k, _, mask = arrays
    assert q is not None and k is not None
    d = q.shape[-1]
    scale = params.get("scale")
    scale = (1.0 / math.sqrt(d) if d > 0 else 1.0) if scale is None else float(scale)
    with np.errstate(invalid="ignore", over="ignore", divide="ignore"):
        raw = np.matmul(q, np.swapaxes(k, -1, -2)) * scale
        allowed = np.ones(raw.shape, dtype=bool) if mask is None else np.broadcast_to(mask, raw.shape)
        scores = np.where(allowed, raw, -np.inf)
        if scores.shape[-1] == 0:
            return np.full(scores.shape[:-1], -np.inf)
        top = np.max(scores, axis=-1, keepdims=True)
        shifted = np.where(allowed, np.exp(scores - top), 0.0)
        lse = top[..., 0] + np.log(np.sum(shifted, axis=-1))
    lse = np.where(np.isneginf(top[..., 0]), np.nan, lse)
    result: Array = np.where(allowed.any(axis=-1), lse, -np.inf)
    return result


# ---------------------------------------------------------------------------------------- running


def _to_torch(a: Array | None, dtype: torch.dtype, device: torch.device) -> torch.Tensor | None:
    if a is None:
        return None
    if a.dtype == np.bool_ or a.dtype == np.int64:
        return torch.from_numpy(np.ascontiguousarray(a)).to(device)
    return torch.tensor(a, dtype=dtype, device=device)


def _rounded(a: Array | None, dtype: torch.dtype) -> Array | None:
    if a is None or a.dtype == np.bool_ or a.dtype == np.int64:
        return a
    return torch.tensor(a, dtype=dtype).to(torch.float64).numpy()


def _errors(native: torch.Tensor, oracle: Array) -> tuple[float, float]:
    """``(checked, unfloored)``: the largest difference over the entries where both are finite
    (NaN where the oracle has NaN and equal infinities count as agreeing) divided by
    ``max(max|oracle|, 1)`` (the checked error), and by
    ``max|oracle|`` over those entries (the relative error; where that is 0 the largest
    difference itself, which is then the checked error too). Both are inf when the shapes, the
    NaN positions or the infinities differ, and 0 when there is nothing to compare."""
    got = native.detach().to("cpu", torch.float64).numpy()
    if got.shape != oracle.shape:
        return math.inf, math.inf
    if got.size == 0:
        return 0.0, 0.0
    same_nan = np.isnan(got) == np.isnan(oracle)
    if not same_nan.all():
        return math.inf, math.inf
    finite = ~np.isnan(oracle)
    both_inf = np.isinf(oracle) & (got == oracle)
    usable = finite & ~both_inf
    if (np.isinf(got[usable]) | np.isinf(oracle[usable])).any():
        return math.inf, math.inf
    if not usable.any():
        return 0.0, 0.0
    difference = float(np.max(np.abs(got[usable] - oracle[usable])))
    largest = float(np.max(np.abs(oracle[usable])))
    return difference / max(largest, 1.0), difference / largest if largest > 0.0 else difference


def _native_calls(op: str, composed: bool) -> tuple[Callable[..., Any], Callable[..., Any] | None]:
    if op == ATTENTION and composed:
        return attention_kernels.composed_attention, attention_kernels.composed_attention_vjp
    if op == ATTENTION:
        return kernels.direct_attention, kernels.direct_attention_vjp
    return getattr(kernels, f"{op}_forward"), getattr(kernels, f"{op}_backward", None)


def run_case(
    case: ParityCase, dtype: torch.dtype, device: torch.device, seed: int = 0, *, composed: bool = False
) -> CaseResult:
    """Run ``case`` natively in ``dtype`` on ``device`` and compare with its float64 oracle;
    ``composed`` runs an attention case on ``torchlean.composed_attention`` instead of
    ``native_cuda.direct_attention``.

    Errors raised while the case runs (making its inputs, the native calls, the oracle) are
    recorded as problems, not raised, so that one failing case does not stop a sweep (review127
    F4: an error making the inputs ended it).
    """
    rng = np.random.default_rng([seed, *case.id.encode()])
    label = f"composed:{case.id}" if composed else case.id
    tolerance = TOLERANCE[dtype]
    errors: dict[str, float] = {}
    unfloored: dict[str, float] = {}
    problems: list[str] = []

    def compare(name: str, native: torch.Tensor, oracle: Array) -> None:
        errors[name], unfloored[name] = _errors(native, oracle)

    try:
        spec = case.make(rng)
        rounded = tuple(_rounded(a, dtype) for a in spec.arrays)
        forward, backward = _native_calls(case.op, composed)
        if case.op in _SOURCES:
            out_n = forward(**spec.params, dtype=dtype, device=device)
            _synchronize(device)
            numpy_dtype = np.float32 if dtype == torch.float32 else np.float64
            out_o, _ = _oracle(case.op, (), {**spec.params, "dtype": numpy_dtype}, None)
            out_o = out_o.astype(np.float64)
            compare("forward", out_n, out_o)
            if errors["forward"] != 0.0:
                problems.append(f"forward differs from the reference draw (error {errors['forward']:.3g})")
            return CaseResult(label, case.op, str(dtype), errors, 0.0, tuple(problems), unfloored)
        natives = [_to_torch(a, dtype, device) for a in rounded]
        out_n = forward(*natives, **spec.params)
        g64 = None
        if spec.backward and backward is not None:
            g64 = _rounded(rng.standard_normal(tuple(out_n.shape)), dtype)
            if spec.finite and case.op in (ATTENTION, "hard_masked_softmax"):
                g64 = _poison_blocked_cotangent(case.op, g64, spec)
        out_o, grads_o = _oracle(case.op, rounded, spec.params, g64)
        compare("forward", out_n, out_o)
        if case.op == ATTENTION and not composed:
            # the row logsumexp the backward reads (blocked rows -inf, all -inf rows NaN)
            q_n, k_n, v_n, mask_n = natives
            assert q_n is not None and k_n is not None and v_n is not None
            lse_n = kernels.saved_logsumexp(out_n, q_n, k_n, v_n, mask_n, **spec.params)
            if lse_n is None:
                problems.append("direct_attention saved no logsumexp with its output")
            else:
                compare("lse", lse_n, _attention_logsumexp(rounded, spec.params))
        if spec.finite and not bool(torch.isfinite(out_n).all()):
            problems.append("forward has non-finite values (a blocked position leaked)")
        if g64 is not None and backward is not None and grads_o is not None:
            g_n = _to_torch(g64, dtype, device)
            grads_n = backward(g_n, *natives, out=out_n, **spec.params)
            for i, (dn, do) in enumerate(zip(grads_n, grads_o, strict=True)):
                if (dn is None) != (do is None):
                    problems.append(
                        f"d{i}: native gives {'None' if dn is None else 'a tensor'}, the oracle the other"
                    )
                    continue
                if dn is None or do is None:
                    continue
                compare(f"d{i}", dn, np.asarray(do))
                if spec.finite and not bool(torch.isfinite(dn).all()):
                    problems.append(f"d{i} has non-finite values (a blocked position leaked)")
        # a device fault of this case's kernels (an illegal address is sticky: every later CUDA
        # call fails too) surfaces here, attributed to this case rather than the next one
        _synchronize(device)
    except Exception as error:  # one failing op must not stop the sweep
        problems.append(f"{type(error).__name__}: {error}")
    for name, value in errors.items():
        if not value <= tolerance:
            problems.append(f"{name} error {value:.3g} > {tolerance:g}")
    return CaseResult(label, case.op, str(dtype), errors, tolerance, tuple(problems), unfloored)


def _synchronize(device: torch.device) -> None:
    if device.type == "cuda":
        torch.cuda.synchronize(device)


def _poison_blocked_cotangent(op: str, g: Array | None, spec: Inputs) -> Array | None:
    """Put NaN into the cotangent where it must be selected away: at every blocked entry of
    ``hard_masked_softmax`` (also in rows with allowed entries, whose gradient reads the row's
    allowed entries only), and on the fully blocked query rows of attention."""
    if g is None:
        return None
    mask = spec.arrays[3] if op == ATTENTION else spec.arrays[1]
    if mask is None:
        return g
    poisoned = g.copy()
    if op == ATTENTION:
        full = np.broadcast_to(mask, (*g.shape[:-1], mask.shape[-1]))
        poisoned[~full.any(axis=-1)] = np.nan
    else:
        poisoned[~np.broadcast_to(mask, g.shape)] = np.nan
    return poisoned


# ------------------------------------------------------------------------------------------ cases


def _normal(rng: np.random.Generator, *shape: int) -> Array:
    return rng.standard_normal(shape)


def _positive(rng: np.random.Generator, *shape: int) -> Array:
    return rng.uniform(0.5, 2.0, shape)


def _away_from_zero(rng: np.random.Generator, *shape: int) -> Array:
    signs: Array = rng.choice([-1.0, 1.0], shape)
    return rng.uniform(0.3, 2.0, shape) * signs


def _unary(op: str, draw: Callable[..., Array] = _normal, **params: Any) -> list[ParityCase]:
    return [
        ParityCase(op, "vector", lambda r: Inputs((draw(r, 37),), params)),
        ParityCase(op, "tensor", lambda r: Inputs((draw(r, 3, 4, 5),), params)),
    ]


def _binary(op: str) -> list[ParityCase]:
    return [
        ParityCase(op, "same-shape", lambda r: Inputs((_normal(r, 4, 6), _normal(r, 4, 6)))),
        ParityCase(op, "broadcast", lambda r: Inputs((_normal(r, 2, 3, 5), _normal(r, 3, 1)))),
    ]


def _masked_scores(r: np.random.Generator) -> Inputs:
    x = _normal(r, 2, 5, 9) * 3.0
    mask = r.random((2, 5, 9)) < 0.6
    mask[0, 1] = False  # a fully blocked row
    mask[1, 3, 0] = True
    x[~mask] = np.nan  # never read
    x[0, 2][~mask[0, 2]] = np.inf
    return Inputs((x, mask), finite=True)


def _masked_non_finite(r: np.random.Generator) -> Inputs:
    """Rows of 70 scores (several per lane of the one-warp-per-row kernel) whose ALLOWED entries
    hold NaN or ±inf: the allowed weights of such a row are NaN (the row's sum is NaN) and its
    blocked weights exactly 0, as the reference and ``torchlean.spec``."""
    x = _normal(r, 6, 70) * 3.0
    mask = r.random((6, 70)) < 0.6
    mask[:, 3] = mask[:, 35] = True  # columns 3 and 35 share a lane
    x[0, 3] = np.nan  # an allowed NaN read before a finite entry of its lane
    x[1, 10] = np.inf
    x[2][mask[2]] = -np.inf  # every allowed entry -inf
    x[3, 3] = x[3, 35] = -np.inf  # weight 0 beside finite entries
    mask[4] = False
    x[4] = np.nan  # a fully blocked row
    x[5][~mask[5]] = np.inf  # non-finite at blocked entries only: a finite row
    return Inputs((x, mask))


def _masked_minus_inf_rows(r: np.random.Generator) -> Inputs:
    """Rows of 33 scores (lane 0 of the one-warp-per-row kernel reads columns 0 and 32) whose
    allowed entries are all -inf: NaN at every allowed entry, exactly 0 at the blocked ones, as
    the reference (softmax's 0 / 0); beside rows where only some allowed entries are -inf (weight
    exactly 0 there, the rest an ordinary softmax) and a fully blocked row (zeros)."""
    x = _normal(r, 6, 33) * 3.0
    mask = r.random((6, 33)) < 0.6
    mask[:, 0] = mask[:, 32] = True
    x[0][mask[0]] = -np.inf  # every allowed entry -inf, spread over all lanes
    x[1] = -np.inf
    mask[1] = False
    mask[1, 32] = True  # a single allowed entry, -inf, in lane 0's second column
    x[2, 0] = -np.inf  # lane 0: -inf read before its finite column 32
    x[3][mask[3] & (np.arange(33) < 32)] = -np.inf  # only column 32 finite among the allowed
    mask[4] = False
    x[4] = -np.inf  # a fully blocked row of -inf
    x[5][~mask[5]] = np.inf  # +inf at blocked entries only: a finite row
    return Inputs((x, mask))


def _special_values(r: np.random.Generator, *shape: int) -> Array:
    """Entries from NaN, ±inf, ±0 and a few finite values, in random order."""
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0, 0.25])
    return r.choice(values, shape)


def _special_pairs(r: np.random.Generator) -> Inputs:
    """Every pair of special values (ties, NaN and infinite comparisons) for max/min."""
    values = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1.5, -2.0])
    a, b = np.meshgrid(values, values)
    return Inputs((a.copy(), b.copy()))


def _attention(
    batch: tuple[int, ...],
    nq: int,
    nk: int,
    d: int,
    dv: int,
    *,
    masked: bool,
    poison: bool = False,
    partial: tuple[str, float] | None = None,
    scale: float | None = None,
) -> Callable[[np.random.Generator], Inputs]:
    """``poison``: a fully blocked query row and a key no query attends hold NaN/inf (results
    finite). ``partial=(operand, value)``: the last key's row of ``"k"`` or ``"v"`` holds ``value``
    and that key is blocked for query 1 but allowed for query 2, so the value must reach query 2's
    results (non-finite there, as in the oracle) and never query 1's."""

    def make(r: np.random.Generator) -> Inputs:
        q = _normal(r, *batch, nq, d)
        k = _normal(r, *batch, nk, d)
        v = _normal(r, *batch, nk, dv)
        mask: Array | None = None
        if masked:
            mask = r.random((*batch, nq, nk)) < 0.7
            mask[..., 0, :] = False  # a fully blocked query row
            if poison:
                mask[..., :, nk - 1] = False  # a key no query may attend
                k[..., nk - 1, :] = np.nan
                v[..., nk - 1, :] = np.inf
                q[..., 0, :] = np.nan  # the fully blocked row's query
            if partial is not None:
                operand, value = partial
                mask[..., 1, 0] = True
                mask[..., 1, nk - 1] = False
                mask[..., 2, nk - 1] = True
                (k if operand == "k" else v)[..., nk - 1, :] = value
        params = {} if scale is None else {"scale": scale}
        return Inputs((q, k, v, mask), params, finite=poison)

    return make


def _broadcast_mask_runs(r: np.random.Generator) -> Inputs:
    """A mask ``(2, 1, 2, 1, 6)`` over heads ``(2, 3, 2)``: the kernels read it at its own size
    through a layout of two runs of batch axes (the middle axis broadcast between them) and a
    query axis of stride 0, forward and backward."""
    batch = (2, 3, 2)
    q, k, v = _normal(r, *batch, 5, 4), _normal(r, *batch, 6, 4), _normal(r, *batch, 6, 2)
    mask = r.random((2, 1, 2, 1, 6)) < 0.6
    mask[0, 0, 1, 0, :] = False  # every query row of heads (0, *, 1) fully blocked
    return Inputs((q, k, v, mask))


ATTENTION_KEY_TILE = 32
"""Keys per tile of the direct attention kernel's online softmax (``kAttnBc`` in
``csrc/kernels.cuh``)."""


def _causal_blocked_tiles(r: np.random.Generator) -> Inputs:
    """Causal attention over 100 queries and keys (four tiles of each), with whole tiles of
    blocked pairs, which the direct kernel skips: the upper-right tiles of the causal mask, the
    last keys (90..99), which no query may attend and which hold NaN (k) and inf (v), and the last
    queries (96..99), fully blocked, whose q holds NaN. Results are finite."""
    batch, n, d, dv = 2, 100, 16, 8
    q = _normal(r, batch, n, d)
    k = _normal(r, batch, n, d)
    v = _normal(r, batch, n, dv)
    mask = np.tril(np.ones((n, n), dtype=bool))
    mask[:, 90:] = False
    mask[96:, :] = False
    k[:, 90:, :] = np.nan
    v[:, 90:, :] = np.inf
    q[:, 96:, :] = np.nan
    return Inputs((q, k, v, np.broadcast_to(mask, (batch, n, n)).copy()), finite=True)


def _minus_inf_keys(r: np.random.Generator) -> Inputs:
    """Attention over 70 keys (three key tiles) whose first tile holds only -inf keys
    ``k_j = [-inf, 0, ...]`` (``q[..., 0] > 0``, so their scores are exactly -inf):

    * query 0 is fully blocked: zeros, zero gradients;
    * query 1 may attend -inf keys only: its allowed scores are all -inf, so its output (and its
      logsumexp) is NaN and NaN reaches dq of the row and dk, dv of the keys it attends, as in the
      reference (softmax's 0 / 0; torch SDPA gives 0 there, not TorchLean's convention);
    * query 2 attends -inf keys of the first tile and finite keys of later tiles: an ordinary
      result (the all -inf tile, seen first, adds only products ``0 * v``); its dq is NaN only
      where the weight 0 of a -inf key meets that key's -inf (``0 * -inf``, as the reference);
    * query 3 attends finite keys only;
    * query 4 attends key 7, a -inf key of the first tile whose value row is inf, and finite keys
      of later tiles: the weight 0 of key 7 still multiplies its value, so the output is NaN, as
      the reference's ``0 * inf`` (review178 F1: the direct kernel skipped that tile, seen first,
      and gave a finite row); no other query attends key 7;
    * query 5 a random mask.
    """
    batch, nq, nk, d, dv = 2, 6, 70, 4, 3
    q = _normal(r, batch, nq, d)
    q[..., 0] = np.abs(q[..., 0]) + 0.5
    k = _normal(r, batch, nk, d)
    v = _normal(r, batch, nk, dv)
    k[:, :ATTENTION_KEY_TILE, :] = 0.0
    k[:, :ATTENTION_KEY_TILE, 0] = -np.inf
    mask = r.random((batch, nq, nk)) < 0.5
    minus_inf = np.arange(nk) < ATTENTION_KEY_TILE
    mask[:, 0, :] = False
    mask[:, 1, :] = minus_inf & mask[:, 1, :]
    mask[:, 1, 3] = True
    mask[:, 2, 5] = mask[:, 2, 40] = True
    mask[:, 3, :] = ~minus_inf & mask[:, 3, :]
    mask[:, 3, 50] = True
    v[:, 7, :] = np.inf
    mask[:, :, 7] = False
    mask[:, 4, 7] = mask[:, 4, 45] = True
    return Inputs((q, k, v, mask))


def _far_scores(r: np.random.Generator) -> Inputs:
    """Every score between -123 and -117, below float32's ``exp`` range (``exp(117)`` overflows,
    ``exp(-117)`` is below the normal range): an online softmax must rescale from its first key
    tile's maximum without ``exp(-maximum)``. The scores are exact integers in float32 (q, k hold
    -1, 0, 1 but ``q[..., 0] = -120``, ``k[..., 0] = 1``, scale 1), so the error measures the
    kernel, not the rounding of the scores; 70 keys span three key tiles; a random mask with a
    fully blocked row. (The shift sits in q: in k it would make ``dq[..., 0] = -120 * sum_j dS_ij``,
    a sum that is 0 in exact arithmetic and whose float32 rounding alone exceeds the tolerance.)"""
    batch, nq, nk, d, dv = 2, 9, 70, 4, 3
    q = r.integers(-1, 2, (batch, nq, d)).astype(np.float64)
    k = r.integers(-1, 2, (batch, nk, d)).astype(np.float64)
    q[..., 0] = -120.0
    k[..., 0] = 1.0
    v = _normal(r, batch, nk, dv)
    mask = r.random((batch, nq, nk)) < 0.6
    mask[:, 0, :] = False
    return Inputs((q, k, v, mask), {"scale": 1.0})


def _falling_tile_maximum(r: np.random.Generator) -> Inputs:
    """Scores between -3 and 3 in the first key tile and between -123 and -117 in the second: the
    online softmax's running maximum must stay the first tile's (a maximum taken over the current
    tile alone would rescale by ``exp(120)``, which overflows float32). The scores are exact
    integers (q, k hold -1, 0, 1 but ``q[..., 0] = 1``, ``k[..., 0]`` 0 in the first tile and -120
    in the second, scale 1), so the error measures the kernel; every row but the fully blocked
    row 0 attends keys of both tiles. (With ``k[..., 0] = +-60`` instead, ``dq[..., 0]`` would be
    60 times a sum of ``dS`` that is 0 in exact arithmetic, and its float32 rounding alone would
    exceed the tolerance.)"""
    batch, nq, nk, d, dv = 2, 5, 64, 4, 3
    q = r.integers(-1, 2, (batch, nq, d)).astype(np.float64)
    k = r.integers(-1, 2, (batch, nk, d)).astype(np.float64)
    q[..., 0] = 1.0
    k[:, :ATTENTION_KEY_TILE, 0] = 0.0
    k[:, ATTENTION_KEY_TILE:, 0] = -120.0
    v = _normal(r, batch, nk, dv)
    mask = r.random((batch, nq, nk)) < 0.8
    mask[:, :, 0] = mask[:, :, ATTENTION_KEY_TILE + 8] = True
    mask[:, 0, :] = False
    return Inputs((q, k, v, mask), {"scale": 1.0})


def _tile_corners(r: np.random.Generator) -> Inputs:
    """Key tiles (and query tiles, of 32 rows on the default tile) whose only allowed pair sits at
    a corner, which a tile-skipping vote must not miss: batch entry 0 allows, in the first 32 x 32
    tile, only its last pair (31, 31); entry 1 allows, for every query, keys 0..4 and key 32, the
    first key of the second key tile and its only allowed one. Elsewhere random masks; query rows
    32.. of entry 0 attend at random, rows without an allowed key are zero."""
    batch, n, d, dv = 2, 40, 8, 5
    q = _normal(r, batch, n, d)
    k = _normal(r, batch, n, d)
    v = _normal(r, batch, n, dv)
    mask = r.random((batch, n, n)) < 0.7
    tile = ATTENTION_KEY_TILE
    mask[0, :tile, :tile] = False
    mask[0, tile - 1, tile - 1] = True
    mask[1] = False
    mask[1, :, :5] = True
    mask[1, :, tile] = True
    return Inputs((q, k, v, mask))


def _causal_small_tile(r: np.random.Generator) -> Inputs:
    """Causal attention with d = d_v = 128 over 45 queries and keys: on the smaller tile (8 rows)
    the dK/dV pass's key tiles 1..5 have allowed queries only from their first key on, so its
    vote over (32 queries x 8 keys) must not be taken over (8 x 32)."""
    batch, n, d = 2, 45, 128
    mask = np.broadcast_to(np.tril(np.ones((n, n), dtype=bool)), (batch, n, n)).copy()
    return Inputs((_normal(r, batch, n, d), _normal(r, batch, n, d), _normal(r, batch, n, d), mask))


def _infinite_windows(_: np.random.Generator, *shape: int) -> Array:
    """Fixed pairs (no draw): an infinite winner, both infinite, a NaN, an overflowing exp, and a
    NaN beside an infinity or a NaN (NaN gradients at every cell of the window, as the reference
    and ``torch.logsumexp``; a pivot taken by a comparison that skips NaN gives 0 there)."""
    inf, nan = np.inf, np.nan
    row = np.array([
        inf, 0.0, -inf, -inf, -inf, 1.0, nan, 2.0, 800.0, inf, -800.0, -inf,
        nan, inf, inf, nan, nan, -inf, -inf, nan, nan, nan,
    ])  # fmt: skip
    return row.reshape(shape)


def _bernoulli_at_a_draw(*, nudge: bool) -> Inputs:
    """``keep_prob`` at one of the draws ``u_i`` (no rng: the draws are the key's). Equal to
    ``u_5``: element 5 is dropped in both dtypes (``keep_prob > u_i`` is strict). With ``nudge``,
    one float64 ulp above a draw that float32 rounds down: kept in float64, where ``keep_prob``
    must stay float64; dropped in float32, where both round to the same value."""
    shape, seed, counter = (64,), 123, 4
    params = {"shape": shape, "seed": seed, "counter": counter}
    u = ref.rand_uniform(shape=shape, seed=seed, counter=counter, dtype=np.float64)
    if not nudge:
        return Inputs((), {**params, "keep_prob": float(u[5])}, False)
    i = next(i for i in range(u.size) if float(np.float32(u[i])) < float(u[i]))
    return Inputs((), {**params, "keep_prob": float(np.nextafter(u[i], 1.0))}, False)


def _window_case(
    op: str, name: str, shape: tuple[int, ...], draw: Callable[..., Array] = _normal, **params: Any
) -> ParityCase:
    return ParityCase(op, name, lambda r: Inputs((draw(r, *shape),), params))


def _index(r: np.random.Generator, shape: tuple[int, ...], extent: int) -> Array:
    return r.integers(0, extent, shape).astype(np.int64)


def _clamp_input(r: np.random.Generator, *shape: int) -> Array:
    x = _normal(r, *shape)
    return np.where(np.abs(np.abs(x) - 0.5) < 1e-3, x + 0.01, x)  # nothing at the bounds


def _distinct_pair(r: np.random.Generator) -> Inputs:
    a = _normal(r, 4, 6)
    b = a + r.choice([-1.0, 1.0], a.shape) * r.uniform(0.01, 1.0, a.shape)  # no ties
    return Inputs((a, b))


def _scan(
    token: bool, batch: int = 2, steps: int = 7, state: int = 5
) -> Callable[[np.random.Generator], Inputs]:
    def make(r: np.random.Generator) -> Inputs:
        x = _normal(r, batch, steps, state)
        shape = x.shape if token else (state,)
        a = r.uniform(-0.95, 0.95, shape)
        b = _normal(r, *shape)
        return Inputs((a, b, x, _normal(r, batch, state)))

    return make


ELEMENT_BLOCK_CASES: tuple[ParityCase, ...] = (
    ParityCase(
        "rand_uniform",
        "many-blocks",
        lambda r: Inputs((), {"shape": (3, 1000), "seed": 77, "counter": 3}, False),
    ),
    ParityCase(
        "bernoulli_mask",
        "many-blocks",
        lambda r: Inputs((), {"shape": (4097,), "keep_prob": 0.6, "seed": 19, "counter": 5}, False),
    ),
    _window_case(
        "smooth_max_pool", "many-blocks", (2, 3, 40, 41), beta=2.0, kernel_size=3, stride=2, padding=1
    ),
    ParityCase("selective_scan", "shared-many-blocks", _scan(False, batch=3, steps=6, state=300)),
    ParityCase("selective_scan", "token-many-blocks", _scan(True, batch=3, steps=6, state=300)),
)
"""Cases of the kernels that run one thread per work item in blocks of 256 (the extension's
``element_blocks``) over several blocks: 3000 draws, 4097 draws, 2520 pool outputs and 9840 inputs,
900 scan channels (review208 F1: every other case of these ops fits one block, where a kernel that
ignored its block index would pass). :func:`few_element_blocks` runs them on 2 blocks, through the
kernels' grid-stride loops."""

CASES: tuple[ParityCase, ...] = (
    ParityCase("matmul", "2d", lambda r: Inputs((_normal(r, 5, 7), _normal(r, 7, 3)))),
    ParityCase(
        "matmul", "batched-broadcast", lambda r: Inputs((_normal(r, 2, 1, 4, 6), _normal(r, 3, 6, 5)))
    ),
    ParityCase("matmul", "vector-matrix", lambda r: Inputs((_normal(r, 6), _normal(r, 2, 6, 3)))),
    ParityCase("linear", "bias", lambda r: Inputs((_normal(r, 2, 3, 6), _normal(r, 4, 6), _normal(r, 4)))),
    ParityCase("linear", "no-bias", lambda r: Inputs((_normal(r, 5, 6), _normal(r, 4, 6), None))),
    ParityCase(
        "linear", "no-features", lambda r: Inputs((_normal(r, 3, 0), _normal(r, 4, 0), _normal(r, 4)))
    ),
    ParityCase("mse_loss", "matrix", lambda r: Inputs((_normal(r, 4, 5), _normal(r, 4, 5)))),
    ParityCase("mse_loss", "empty", lambda r: Inputs((_normal(r, 0, 5), _normal(r, 0, 5)))),
    *_unary("relu", _away_from_zero),
    ParityCase("relu", "special-values", lambda r: Inputs((_special_values(r, 40),))),
    *_unary("gelu"),
    *_binary("add"),
    *_binary("sub"),
    *_binary("mul"),
    *_unary("scale", factor=-1.75),
    *_unary("abs", _away_from_zero),
    ParityCase("abs", "special-values", lambda r: Inputs((_special_values(r, 40),))),
    *_unary("sqrt", _positive),
    ParityCase("clamp", "bounds", lambda r: Inputs((_clamp_input(r, 5, 7),), {"lo": -0.5, "hi": 0.5})),
    ParityCase("max", "no-ties", _distinct_pair),
    ParityCase("max", "broadcast", lambda r: Inputs((_normal(r, 3, 4), _normal(r, 4) + 0.001))),
    ParityCase("min", "no-ties", _distinct_pair),
    ParityCase("max", "special-values", _special_pairs),
    ParityCase("min", "special-values", _special_pairs),
    *_unary("sigmoid"),
    *_unary("tanh"),
    ParityCase("softplus", "wide", lambda r: Inputs((r.uniform(-30.0, 30.0, (6, 7)),))),
    *_unary("exp"),
    *_unary("sin"),
    *_unary("cos"),
    *_unary("log", _positive),
    *_unary("inv", _away_from_zero),
    ParityCase("inv", "special-values", lambda r: Inputs((_special_values(r, 40),))),
    *_unary("safe_log", eps=1e-3),
    ParityCase("log_softmax", "last", lambda r: Inputs((_normal(r, 3, 4, 7) * 4.0,), {"axis": -1})),
    ParityCase("log_softmax", "middle", lambda r: Inputs((_normal(r, 3, 4, 7) * 4.0,), {"axis": 1})),
    ParityCase("softmax", "last", lambda r: Inputs((_normal(r, 3, 4, 7) * 4.0,), {"axis": -1})),
    ParityCase("softmax", "first", lambda r: Inputs((_normal(r, 3, 4, 7) * 4.0,), {"axis": 0})),
    ParityCase("hard_masked_softmax", "blocked-rows-nan", _masked_scores),
    ParityCase("hard_masked_softmax", "allowed-non-finite", _masked_non_finite),
    ParityCase("hard_masked_softmax", "minus-inf-rows", _masked_minus_inf_rows),
    ParityCase(
        "hard_masked_softmax",
        "shared-mask",
        lambda r: Inputs((_normal(r, 3, 4, 40), r.random((4, 40)) < 0.5)),
    ),
    ParityCase(
        "hard_masked_softmax",
        "empty-batch",
        lambda r: Inputs((_normal(r, 0, 5), np.ones((0, 5), dtype=bool))),
    ),
    ParityCase(
        "hard_masked_softmax",
        "axis-0",
        lambda r: Inputs((_normal(r, 6, 3), r.random((6, 3)) < 0.6), {"axis": 0}),
    ),
    ParityCase("reduce_sum", "all", lambda r: Inputs((_normal(r, 3, 4, 5),))),
    ParityCase(
        "reduce_sum",
        "axes-keepdims",
        lambda r: Inputs((_normal(r, 3, 4, 5),), {"axis": (0, 2), "keepdims": True}),
    ),
    ParityCase("reduce_mean", "all", lambda r: Inputs((_normal(r, 3, 4, 5),))),
    ParityCase("reduce_mean", "axis", lambda r: Inputs((_normal(r, 3, 4, 5),), {"axis": 1})),
    ParityCase("reshape", "split", lambda r: Inputs((_normal(r, 4, 6),), {"shape": (2, 3, 4)})),
    ParityCase("permute", "3d", lambda r: Inputs((_normal(r, 2, 3, 4),), {"perm": (2, 0, 1)})),
    ParityCase("broadcast", "expand", lambda r: Inputs((_normal(r, 3, 1),), {"shape": (2, 3, 4)})),
    ParityCase(
        "concat",
        "axis-1",
        lambda r: Inputs((_normal(r, 2, 3), _normal(r, 2, 1), _normal(r, 2, 4)), {"axis": 1}),
    ),
    ParityCase(
        "slice",
        "strided",
        lambda r: Inputs((_normal(r, 5, 8),), {"starts": (1, 0), "stops": (5, 7), "steps": (2, 3)}),
    ),
    ParityCase("gather", "axis-1", lambda r: Inputs((_normal(r, 3, 5), _index(r, (3, 4), 5)), {"axis": 1})),
    ParityCase(
        "scatter_add",
        "repeats",
        lambda r: Inputs((_normal(r, 4, 3), _index(r, (6, 3), 4), _normal(r, 7, 3)), {"axis": 0}),
    ),
    ParityCase(
        "rand_uniform", "seeded", lambda r: Inputs((), {"shape": (3, 70), "seed": 2026, "counter": 7}, False)
    ),
    ParityCase(
        "rand_uniform",
        "large-seed",
        lambda r: Inputs((), {"shape": (129,), "seed": (1 << 64) - 5, "counter": 9}, False),
    ),
    ParityCase(
        "rand_uniform", "empty", lambda r: Inputs((), {"shape": (0, 3), "seed": 5, "counter": 1}, False)
    ),
    ParityCase(
        "bernoulli_mask",
        "seeded",
        lambda r: Inputs((), {"shape": (4, 50), "keep_prob": 0.3, "seed": 11, "counter": 2}, False),
    ),
    ParityCase("bernoulli_mask", "keep-equals-a-draw", lambda r: _bernoulli_at_a_draw(nudge=False)),
    ParityCase("bernoulli_mask", "keep-one-float64-ulp-above", lambda r: _bernoulli_at_a_draw(nudge=True)),
    ParityCase(
        "layer_norm",
        "affine",
        lambda r: Inputs((_normal(r, 3, 4, 6), _normal(r, 4, 6), _normal(r, 4, 6)), {"normalized_ndim": 2}),
    ),
    ParityCase("layer_norm", "plain", lambda r: Inputs((_normal(r, 5, 8), None, None), {"eps": 1e-3})),
    ParityCase(
        "layer_norm", "empty-batch", lambda r: Inputs((_normal(r, 0, 6), _normal(r, 6), _normal(r, 6)))
    ),
    ParityCase(
        "batch_norm",
        "training",
        lambda r: Inputs((_normal(r, 4, 3, 5), _normal(r, 3), _normal(r, 3), None, None), {"training": True}),
    ),
    ParityCase(
        "batch_norm",
        "eval",
        lambda r: Inputs(
            (_normal(r, 4, 3, 2, 2), _normal(r, 3), _normal(r, 3), _normal(r, 3), _positive(r, 3)),
            {"training": False},
        ),
    ),
    ParityCase(
        "batch_norm",
        "empty-batch",
        lambda r: Inputs((_normal(r, 0, 3, 5), _normal(r, 3), _normal(r, 3), None, None), {"training": True}),
    ),
    ParityCase(
        "conv",
        "2d-stride-pad-dilation",
        lambda r: Inputs(
            (_normal(r, 2, 4, 7, 6), _normal(r, 6, 2, 3, 2), _normal(r, 6)),
            {"stride": (2, 1), "padding": (1, 0), "dilation": (1, 2), "groups": 2},
        ),
    ),
    ParityCase(
        "conv", "1d", lambda r: Inputs((_normal(r, 2, 3, 11), _normal(r, 4, 3, 3), None), {"padding": 1})
    ),
    ParityCase(
        "conv", "3d", lambda r: Inputs((_normal(r, 1, 2, 4, 4, 4), _normal(r, 3, 2, 2, 2, 2), _normal(r, 3)))
    ),
    ParityCase(
        "conv_transpose",
        "2d",
        lambda r: Inputs(
            (_normal(r, 2, 4, 4, 5), _normal(r, 4, 3, 3, 2), _normal(r, 6)),
            {"stride": 2, "padding": 1, "output_padding": 1, "groups": 2},
        ),
    ),
    ParityCase("conv_transpose", "1d", lambda r: Inputs((_normal(r, 1, 2, 6), _normal(r, 2, 3, 4), None))),
    _window_case("max_pool", "2d", (2, 3, 7, 6), kernel_size=3, stride=2, padding=1),
    _window_case("max_pool", "1d-dilated", (2, 2, 11), kernel_size=2, dilation=2),
    _window_case("max_pool", "3d", (1, 2, 4, 5, 4), kernel_size=2),
    _window_case(
        "smooth_max_pool", "2d-positive", (2, 3, 6, 7), beta=2.5, kernel_size=3, stride=2, padding=1
    ),
    _window_case("smooth_max_pool", "1d-negative", (2, 2, 9), beta=-1.5, kernel_size=3, stride=1),
    _window_case("smooth_max_pool", "empty-batch", (0, 2, 6, 6), beta=1.5, kernel_size=2),
    ParityCase(
        "smooth_max_pool",
        "overflow-scale",
        lambda r: Inputs((_normal(r, 1, 2, 6, 6) * 1e30,), {"beta": 1.0, "kernel_size": 2}),
    ),
    # windows whose maximum (beta > 0) or minimum (beta < 0) is infinite, a NaN, and a finite
    # element whose exp(beta * v) overflows: +-inf as the formula (not inf - inf), NaN gradients at
    # an infinite winner (the reference follows torch.logsumexp)
    _window_case("smooth_max_pool", "infinite-max", (1, 1, 22), _infinite_windows, beta=1.0, kernel_size=2),
    _window_case("smooth_max_pool", "infinite-min", (1, 1, 22), _infinite_windows, beta=-1.0, kernel_size=2),
    _window_case("avg_pool", "2d", (2, 3, 7, 6), kernel_size=3, stride=2, padding=1),
    _window_case("avg_pool", "1d", (2, 2, 9), kernel_size=2),
    ParityCase(
        "fft_fno", "even", lambda r: Inputs((_normal(r, 2, 3, 16), _normal(r, 5, 3, 4), _normal(r, 5, 3, 4)))
    ),
    ParityCase(
        "fft_fno",
        "odd-all-modes",
        lambda r: Inputs((_normal(r, 1, 2, 9), _normal(r, 5, 2, 3), _normal(r, 5, 2, 3))),
    ),
    ParityCase(
        "fft_fno",
        "empty-batch",
        lambda r: Inputs((_normal(r, 0, 3, 16), _normal(r, 5, 3, 4), _normal(r, 5, 3, 4))),
    ),
    ParityCase("selective_scan", "shared", _scan(False)),
    ParityCase("selective_scan", "token", _scan(True)),
    # a second shared-coefficient case (a longer sum of shared dA per channel): the shared backward
    # was pinned by one case only (review23 kmut-b S14, a float accumulator in the float64 kernel)
    ParityCase("selective_scan", "shared-long", _scan(False, batch=3, steps=96)),
    ParityCase("selective_scan", "shared-empty-batch", _scan(False, batch=0)),
    ParityCase("selective_scan", "token-no-steps", _scan(True, steps=0)),
    ParityCase(ATTENTION, "unmasked", _attention((2,), 19, 23, 8, 5, masked=False)),
    ParityCase(ATTENTION, "masked-heads", _attention((2, 2), 33, 40, 16, 16, masked=True)),
    ParityCase(ATTENTION, "broadcast-mask-runs", _broadcast_mask_runs, composed=False),
    ParityCase(ATTENTION, "blocked-rows-nan", _attention((2,), 9, 12, 4, 3, masked=True, poison=True)),
    ParityCase(
        ATTENTION, "partly-blocked-nan-k", _attention((2,), 6, 7, 4, 3, masked=True, partial=("k", np.nan))
    ),
    ParityCase(
        ATTENTION, "partly-blocked-nan-v", _attention((2,), 6, 7, 4, 3, masked=True, partial=("v", np.nan))
    ),
    ParityCase(
        ATTENTION, "partly-blocked-inf-v", _attention((2,), 6, 7, 4, 3, masked=True, partial=("v", np.inf))
    ),
    # rows whose allowed scores are all -inf (NaN) beside rows with some -inf scores (finite)
    ParityCase(ATTENTION, "minus-inf-keys", _minus_inf_keys),
    ParityCase(ATTENTION, "causal-blocked-tiles", _causal_blocked_tiles),
    ParityCase(ATTENTION, "far-scores", _far_scores),
    ParityCase(ATTENTION, "falling-tile-maximum", _falling_tile_maximum),
    ParityCase(ATTENTION, "tile-corners", _tile_corners),
    ParityCase(ATTENTION, "wide-heads", _attention((1,), 5, 70, 130, 70, masked=True, scale=0.3)),
    # the head widths bench/gpu_check.py times, n_q != n_k, partial tiles, a fully blocked row
    ParityCase(ATTENTION, "head-64", _attention((2,), 45, 77, 64, 64, masked=True)),
    ParityCase(ATTENTION, "head-128", _attention((2,), 45, 77, 128, 128, masked=True)),
    # the widest heads: the float64 backward needs the smaller tile even on a 227 KiB device
    ParityCase(ATTENTION, "widest-heads", _attention((1,), 9, 40, 256, 256, masked=True)),
    ParityCase(ATTENTION, "no-keys", _attention((2,), 3, 0, 4, 5, masked=True)),
    ParityCase(ATTENTION, "empty-batch", _attention((0, 2), 5, 6, 4, 3, masked=False)),
    *ELEMENT_BLOCK_CASES,
)
"""Every case; each of :data:`NATIVE_OPS` and :data:`ATTENTION` has at least one."""


SMALL_TILE_SHARED_MEMORY = 99 * 1024
"""Dynamic shared memory per block (bytes) of an sm_86/sm_89 GPU (RTX 30xx/40xx, A10, L4): on a
device (or an emulation) with this limit, :data:`SMALL_TILE_CASES` run on the smaller tile."""

SMALL_TILE_CASES: tuple[tuple[ParityCase, torch.dtype], ...] = (
    # the backward's default tile needs 132096 bytes, its smaller one 82944
    (
        ParityCase(ATTENTION, "small-tile-backward", _attention((2,), 45, 77, 128, 128, masked=True)),
        torch.float64,
    ),
    # float32: the backward needs 131584 bytes on the default tile, 82432 on the smaller one
    (
        ParityCase(ATTENTION, "small-tile-backward-f32", _attention((1,), 9, 40, 256, 256, masked=True)),
        torch.float32,
    ),
    # d + d_v = 313, the widest float64 heads that fit 99 KiB: both passes take the smaller tile
    (ParityCase(ATTENTION, "small-tile-both", _attention((2,), 9, 37, 157, 156, masked=True)), torch.float64),
    # float64 d = 128 takes the smaller tile in the backward: its key tiles' votes over a causal mask
    (ParityCase(ATTENTION, "small-tile-causal", _causal_small_tile), torch.float64),
)
"""Attention cases (with their dtype) whose passes need the smaller tile on a device with
:data:`SMALL_TILE_SHARED_MEMORY` per block; ``tests/cuda`` runs them on the emulation set to that
limit (also under the sanitizers)."""


@contextlib.contextmanager
def smallest_tiles() -> Iterator[None]:
    """Within the block, direct attention runs on its smallest tiles wherever they fit (the
    extension's ``set_attention_smallest_tiles``, process-wide, on the build kernels launch on:
    :func:`~torchlean.backend.providers.native_cuda.extension.active_module`), as a device with
    less shared memory per block (:data:`SMALL_TILE_SHARED_MEMORY`, a T4's 64 KiB) would: a GPU
    with room for the default tiles never picks them itself (review178 F2, review185 F1). The
    previous setting is restored on exit. Not for concurrent use from several threads.

    Raises:
        NativeExtensionError: the extension cannot be loaded.
    """
    with _switched("set_attention_smallest_tiles", True):
        yield


FEW_ELEMENT_BLOCKS = 2
"""The block limit :func:`few_element_blocks` sets."""


@contextlib.contextmanager
def few_element_blocks() -> Iterator[None]:
    """Within the block, the kernels that run one thread per work item launch at most
    :data:`FEW_ELEMENT_BLOCKS` blocks (the extension's ``set_max_element_blocks``, process-wide, on
    the build kernels launch on), so that their grid-stride loops, which a launch reaches by itself
    only beyond 268 million work items, cover the rest of :data:`ELEMENT_BLOCK_CASES` (review208
    F1). The previous limit is restored on exit. Not for concurrent use from several threads.

    Raises:
        NativeExtensionError: the extension cannot be loaded.
    """
    with _switched("set_max_element_blocks", FEW_ELEMENT_BLOCKS):
        yield


@contextlib.contextmanager
def _switched(setter: str, value: object) -> Iterator[None]:
    """Within the block, the extension's process-wide setting ``setter`` (a function of the build
    kernels launch on that sets it and returns the previous value) holds ``value``; the previous
    value is restored on exit."""
    setting = getattr(extension.active_module(), setter)
    previous = setting(value)
    try:
        yield
    finally:
        setting(previous)


def cases_for(ops: Sequence[str]) -> tuple[ParityCase, ...]:
    """The cases of the given op labels, in :data:`CASES` order."""
    wanted = set(ops)
    return tuple(case for case in CASES if case.op in wanted)
