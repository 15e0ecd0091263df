"""Differential check of the tiled (flash) attention spec against standard attention.

The original proves ``flashAttention = scaledDotProductAttention`` for a "flash" spec that ignores
its tiles (anchor-runtime.md §5.3). Here the flash spec runs the real online-softmax recurrence, so
the equality is shown by computation instead: over a sweep of shapes, masks, tile sizes and score
scales (the default ``1/sqrt(d)`` and explicit positive, negative and zero ones), the forward output
and the three gradients of :mod:`torchlean.spec.flash` are compared with those of
:mod:`torchlean.spec.attention`, and the row logsumexp that the flash forward saves for its backward
with a logsumexp of the allowed scaled scores that this module computes another way
(:func:`reference_logsumexp`), in float64 (worst error <= 1e-12 relative to the reference's
largest magnitude) and at 50 significant digits with mpmath (<= 1e-40). Agreement far below float64
rounding at 50 digits shows that the two algorithms agree algebraically (Dao et al. 2022, the
rescaling identity of the online softmax), not by float luck.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Sequence
from dataclasses import asdict, dataclass
from typing import Any

import mpmath
import numpy as np

from torchlean.spec import _arith
from torchlean.spec._arith import Array, BoolArray
from torchlean.spec.attention import scaled_dot_product_attention, scaled_dot_product_attention_backward
from torchlean.spec.errors import SpecValueError
from torchlean.spec.flash import FlashAttentionConfig, flash_attention_backward, flash_attention_forward
from torchlean.spec.masks import causal_mask

FLOAT64 = "float64"
MPMATH_50 = "mpmath-50"
MPMATH_DIGITS = 50
THRESHOLDS: dict[str, float] = {FLOAT64: 1e-12, MPMATH_50: 1e-40}

MASK_KINDS: tuple[str, ...] = (
    "none",
    "causal-upper-left",
    "causal-lower-right",
    "random",
    "blocked-rows",
    "nan-blocked",
    "minus-inf-key",
    "far-scores",
)

EXPLICIT_SCALES: tuple[float, ...] = (1.3, -1.7, 0.0)
"""The explicit ``scale`` values of the sweep, besides the default ``1/sqrt(d)`` (``None``)."""


@dataclass(frozen=True, slots=True)
class ShapeCase:
    """An attention problem size: leading axes of q, k, v and nQ, nK, d, dv."""

    label: str
    q_batch: tuple[int, ...]
    k_batch: tuple[int, ...]
    v_batch: tuple[int, ...]
    n_q: int
    n_k: int
    d: int
    d_v: int

    @property
    def batch(self) -> tuple[int, ...]:
        """The broadcast of the leading axes of q, k and v."""
        return tuple(np.broadcast_shapes(self.q_batch, self.k_batch, self.v_batch))

    def describe(self) -> str:
        """``nQxnKxdxdv``, prefixed by the leading axes of q/k/v when there are any."""
        core = f"{self.n_q}x{self.n_k}x{self.d}x{self.d_v}"
        if not (self.q_batch or self.k_batch or self.v_batch):
            return core
        lead = "/".join(",".join(map(str, b)) or "-" for b in (self.q_batch, self.k_batch, self.v_batch))
        return f"[{lead}] {core}"


@dataclass(frozen=True, slots=True)
class FlashCheckCase:
    """One comparison: a shape, a mask kind, tile sizes, a precision and a score scale.

    ``scale`` is passed as is to the flash and the standard functions: ``None`` is their default
    ``1/sqrt(d)`` (1 when ``d == 0``), a float an explicit scale (zero and negative included).
    """

    shape: ShapeCase
    mask: str
    config: FlashAttentionConfig
    precision: str
    seed: int
    scale: float | None = None

    @property
    def scale_label(self) -> str:
        """``default`` for ``1/sqrt(d)``, otherwise the explicit scale's ``repr`` (``-1.7``, ``0.0``)."""
        return "default" if self.scale is None else repr(float(self.scale))

    @property
    def applied_scale(self) -> float:
        """The scale the scores are multiplied by: the explicit one, or ``1/sqrt(d)`` (1 when
        ``d == 0``)."""
        if self.scale is not None:
            return float(self.scale)
        return 1 / math.sqrt(self.shape.d) if self.shape.d else 1.0

    @property
    def tiles(self) -> str:
        """Tile sizes as ``block_qxblock_k``, e.g. ``4x8``; ``0`` is one tile spanning the axis
        (:class:`~torchlean.spec.flash.FlashAttentionConfig`)."""
        return f"{self.config.block_q}x{self.config.block_k}"

    @property
    def name(self) -> str:
        """``precision/shape/mask/tiles/scale=LABEL``, the case's row label (:attr:`scale_label`)."""
        return f"{self.precision}/{self.shape.label}/{self.mask}/{self.tiles}/scale={self.scale_label}"


@dataclass(frozen=True, slots=True)
class FlashCheckRow:
    """Result of one case: worst relative errors of flash against standard attention.

    ``forward_error`` is :func:`scaled_error` of the output, ``backward_error`` the largest
    :func:`scaled_error` over dq, dk and dv: the largest difference divided by the larger of the
    reference's largest magnitude and the magnitude the inputs imply (:func:`natural_scales`).
    ``lse_error`` is :func:`scaled_error` of the logsumexp saved by
    :func:`~torchlean.spec.flash.flash_attention_forward` against :func:`reference_logsumexp`,
    relative to the larger of the reference's largest magnitude and the largest finite allowed
    score. A non-finite value in one result that the other does not hold identically counts as an
    infinite error (the ``minus-inf-key`` cases have NaN in dq, in both results alike).
    ``scale`` is the case's :attr:`FlashCheckCase.scale_label`; ``passed`` requires all three
    errors within ``threshold``.
    """

    case: str
    shape: str
    mask: str
    tiles: str
    scale: str
    precision: str
    forward_error: float
    backward_error: float
    lse_error: float
    threshold: float
    passed: bool


@dataclass(frozen=True, slots=True)
class FlashCheckReport:
    """All rows of a check; ``passed`` when there is at least one row and every row passed."""

    rows: tuple[FlashCheckRow, ...]

    @property
    def passed(self) -> bool:
        """True when there is at least one row and every row passed."""
        return bool(self.rows) and all(row.passed for row in self.rows)

    @property
    def failures(self) -> tuple[FlashCheckRow, ...]:
        """The rows that did not pass, in row order."""
        return tuple(row for row in self.rows if not row.passed)

    def worst(self, precision: str) -> tuple[float, float]:
        """(worst forward error, worst backward error) over the rows of ``precision``."""
        rows = [row for row in self.rows if row.precision == precision]
        return (
            max((row.forward_error for row in rows), default=0.0),
            max((row.backward_error for row in rows), default=0.0),
        )

    def worst_lse(self, precision: str) -> float:
        """The worst logsumexp error over the rows of ``precision`` (0.0 when there are none)."""
        return max((row.lse_error for row in self.rows if row.precision == precision), default=0.0)

    def verdict(self) -> str:
        """``verdict: PASS (N cases)``, ``verdict: FAIL (F of N cases failed)``, or ``verdict: FAIL
        (no cases were checked)`` for an empty report."""
        if self.passed:
            return f"verdict: PASS ({len(self.rows)} cases)"
        if not self.rows:
            return "verdict: FAIL (no cases were checked)"
        return f"verdict: FAIL ({len(self.failures)} of {len(self.rows)} cases failed)"

    def table(self) -> str:
        """An aligned text table, one line per case."""
        header = (
            *("case", "precision", "shape", "mask", "tiles", "scale"),
            *("forward", "backward", "lse", "limit", "result"),
        )
        lines = [
            (
                str(i),
                row.precision,
                row.shape,
                row.mask,
                row.tiles,
                row.scale,
                f"{row.forward_error:.3e}",
                f"{row.backward_error:.3e}",
                f"{row.lse_error:.3e}",
                f"{row.threshold:.0e}",
                "ok" if row.passed else "FAIL",
            )
            for i, row in enumerate(self.rows, start=1)
        ]
        widths = [max(len(cell) for cell in column) for column in zip(header, *lines, strict=True)]
        numeric = {0, 6, 7, 8, 9}

        def render(cells: Sequence[str]) -> str:
            return "  ".join(
                cell.rjust(width) if index in numeric else cell.ljust(width)
                for index, (cell, width) in enumerate(zip(cells, widths, strict=True))
            ).rstrip()

        return "\n".join([render(header), *(render(line) for line in lines)])

    def to_dict(self) -> dict[str, Any]:
        """A JSON-ready record: thresholds, per-precision worst errors (``forward``, ``backward``,
        ``lse``), ``passed``, ``verdict`` (``PASS`` or ``FAIL``, the word of :meth:`verdict`'s
        line), ``cases`` and ``failed`` (counts), and rows (the fields of :class:`FlashCheckRow`,
        with ``number``, the table's case column, from 1: review197 F9). An infinite error (a
        non-finite result) is ``None`` (JSON ``null``), so the record is strict JSON."""
        return {
            "thresholds": dict(THRESHOLDS),
            "worst": {
                precision: {
                    "forward": _finite_or_none(forward),
                    "backward": _finite_or_none(backward),
                    "lse": _finite_or_none(self.worst_lse(precision)),
                }
                for precision, (forward, backward) in ((p, self.worst(p)) for p in THRESHOLDS)
            },
            "passed": self.passed,
            "verdict": "PASS" if self.passed else "FAIL",
            "cases": len(self.rows),
            "failed": len(self.failures),
            "rows": [
                {"number": number, **{key: _finite_or_none(value) if isinstance(value, float) else value
                                      for key, value in asdict(row).items()}}
                for number, row in enumerate(self.rows, start=1)
            ],
        }


def _finite_or_none(value: float) -> float | None:
    return value if math.isfinite(value) else None


_FLOAT64_SHAPES: tuple[ShapeCase, ...] = (
    ShapeCase("single", (), (), (), 1, 1, 1, 1),
    ShapeCase("one-query", (), (), (), 1, 6, 3, 2),
    ShapeCase("one-key", (), (), (), 6, 1, 3, 2),
    ShapeCase("d1", (), (), (), 5, 5, 1, 1),
    ShapeCase("wide", (), (), (), 5, 8, 3, 4),
    ShapeCase("tall", (), (), (), 8, 5, 4, 3),
    ShapeCase("heads", (2, 3), (2, 3), (2, 3), 6, 6, 4, 4),
    ShapeCase("broadcast", (2, 1), (1, 3), (3,), 7, 9, 2, 3),
    ShapeCase("ragged", (), (), (), 13, 11, 8, 5),
    ShapeCase("long", (2,), (2,), (2,), 33, 47, 16, 8),
)
_FLOAT64_TILES: tuple[tuple[int, int], ...] = (
    (0, 0),
    (1, 1),
    (2, 2),
    (3, 3),
    (7, 7),
    (2, 3),
    (3, 7),
    (64, 64),
)
_QUICK_SHAPES = ("one-query", "d1", "tall", "broadcast", "ragged")
_QUICK_TILES: tuple[tuple[int, int], ...] = ((0, 0), (1, 1), (3, 7), (64, 64))

_MPMATH_SHAPES: tuple[ShapeCase, ...] = (
    ShapeCase("one-query", (), (), (), 1, 3, 2, 2),
    ShapeCase("tall", (), (), (), 4, 3, 2, 2),
    ShapeCase("heads", (2,), (2,), (2,), 3, 4, 2, 1),
    ShapeCase("broadcast", (2, 1), (1, 2), (2,), 3, 5, 3, 2),
)
_MPMATH_TILES: tuple[tuple[int, int], ...] = ((1, 1), (2, 3), (3, 2), (0, 0), (8, 8))


def _explicit_tiles(shape: ShapeCase, tiles: tuple[tuple[int, int], ...]) -> tuple[tuple[int, int], ...]:
    """The tile pairs for ``shape``'s explicit-scale cases: 1x1 dropped above 1000 scores."""
    return tuple(t for t in tiles if t != (1, 1) or shape.n_q * shape.n_k <= 1000)


def flash_check_cases(*, quick: bool = False, seed: int = 0) -> tuple[FlashCheckCase, ...]:
    """The sweep: every float64 shape × mask kind × tile pair and a small mpmath sweep, all at
    the default scale ``1/sqrt(d)``; then the explicit scales (:data:`EXPLICIT_SCALES`).

    Explicit scales, in float64: every shape × mask kind × explicit scale, with one tile pair per
    combination, taken in turn from the tile pairs (so each mask kind and scale meets many tile
    pairs over the shapes; 1x1 tiles are skipped on shapes of more than 1000 scores per batch
    entry, where they would cost more than the rest of the explicit sweep); in mpmath: every
    shape × mask kind with one explicit scale, taken in turn (each mask kind meets every scale
    over the four shapes), and one tile pair in turn. The default-scale cases come first and keep
    their seeds.

    ``quick`` keeps five float64 shapes and four tile pairs (still every mask kind, tiles 1, not
    dividing, and larger than n), takes one explicit scale per float64 shape × mask kind in turn
    (each mask kind still meets every scale), and keeps the whole mpmath sweep.
    """
    shapes = _FLOAT64_SHAPES if not quick else tuple(s for s in _FLOAT64_SHAPES if s.label in _QUICK_SHAPES)
    tiles = _QUICK_TILES if quick else _FLOAT64_TILES
    plan: list[tuple[ShapeCase, str, tuple[int, int], str, float | None]] = []
    plan += [(shape, mask, tile, FLOAT64, None) for shape in shapes for mask in MASK_KINDS for tile in tiles]
    plan += [
        (shape, mask, tile, MPMATH_50, None)
        for shape in _MPMATH_SHAPES
        for mask in MASK_KINDS
        for tile in _MPMATH_TILES
    ]
    n_scales = len(EXPLICIT_SCALES)
    for i, shape in enumerate(shapes):
        shape_tiles = _explicit_tiles(shape, tiles)
        for j, mask in enumerate(MASK_KINDS):
            scales = (EXPLICIT_SCALES[(i + j) % n_scales],) if quick else EXPLICIT_SCALES
            for n, scale in enumerate(scales):
                plan.append((shape, mask, shape_tiles[(i + j + n) % len(shape_tiles)], FLOAT64, scale))
    for i, shape in enumerate(_MPMATH_SHAPES):
        for j, mask in enumerate(MASK_KINDS):
            tile = _MPMATH_TILES[(i + j) % len(_MPMATH_TILES)]
            plan.append((shape, mask, tile, MPMATH_50, EXPLICIT_SCALES[(i + j) % n_scales]))
    return tuple(
        FlashCheckCase(shape, mask, FlashAttentionConfig(*tile), precision, seed + index, scale)
        for index, (shape, mask, tile, precision, scale) in enumerate(plan)
    )


@dataclass(frozen=True, slots=True)
class _Problem:
    q: Array
    k: Array
    v: Array
    d_out: Array
    mask: BoolArray | None


def _make_mask(kind: str, shape: ShapeCase, rng: np.random.Generator) -> BoolArray | None:
    n_q, n_k = shape.n_q, shape.n_k
    if kind == "none":
        return None
    if kind == "causal-upper-left":
        return causal_mask(n_q, n_k, align="upper_left")
    if kind == "causal-lower-right":
        return causal_mask(n_q, n_k, align="lower_right")
    full = (*shape.batch, n_q, n_k)
    mask = rng.random(full) < 0.6
    if kind in ("random", "far-scores") or n_q == 0 or n_k == 0:  # no row or key to block or poison
        return mask
    mask[..., 0, :] = False
    if kind == "blocked-rows":
        mask[..., n_q - 1, :] = False
        return mask
    if kind == "nan-blocked":
        mask[..., :, n_k - 1] = False
        return mask
    if kind == "minus-inf-key":
        mask[..., 0, :] = True  # row 0 attends every key, the -inf one included
        return mask
    raise SpecValueError(f"unknown mask kind {kind!r}; accepted: {', '.join(MASK_KINDS)}")


def _make_problem(case: FlashCheckCase) -> _Problem:
    shape = case.shape
    rng = np.random.default_rng(case.seed)
    q = rng.standard_normal((*shape.q_batch, shape.n_q, shape.d))
    k = rng.standard_normal((*shape.k_batch, shape.n_k, shape.d))
    v = rng.standard_normal((*shape.v_batch, shape.n_k, shape.d_v))
    d_out = rng.standard_normal((*shape.batch, shape.n_q, shape.d_v))
    mask = _make_mask(case.mask, shape, rng)
    if case.mask == "nan-blocked" and shape.n_q > 0 and shape.n_k > 0:
        # Query row 0 and key n_k - 1 are blocked everywhere: poison them and the cotangent of
        # the blocked row; none of it may reach the output or any gradient.
        q[..., 0, :] = np.nan
        k[..., shape.n_k - 1, :] = np.inf
        v[..., shape.n_k - 1, :] = np.nan
        d_out[..., 0, :] = np.nan
    if case.mask == "minus-inf-key" and shape.d > 0 and shape.n_k > 0:
        # Key j scores exactly -inf for every query (k_j = [-inf, 0, ...], q[..., 0] > 0; +inf
        # under a negative scale): an allowed score of -inf. Softmax gives it weight 0; dq is NaN
        # where that weight meets k_j's infinity (0 * -inf), in standard attention as in flash. j is
        # drawn per case, so over the sweep it falls in the first key tile (a tile whose allowed
        # scores may all be -inf, then rescaled from a -inf running maximum), in later ones and in
        # the last. Under scale 0 the score is 0 · -inf = NaN instead: an allowed NaN score, which
        # makes every row that may attend key j NaN (output, logsumexp, dq) in both algorithms.
        j = int(rng.integers(shape.n_k)) if shape.n_k > 0 else 0
        q[..., 0] = np.abs(q[..., 0]) + 0.5
        k[..., j, :] = 0.0
        k[..., j, 0] = np.inf if case.applied_scale < 0 else -np.inf
    if case.mask == "far-scores" and shape.d > 0:
        # Every score of every row lies near -1000 or lower (-1000 q0 plus a small q.k term),
        # far below -709, where exp underflows to 0 in float64: the
        # online softmax must rescale from its first tile's maximum without exp(-maximum), which
        # overflows (softmax is shift-invariant, so standard attention is unaffected). Under an
        # explicit scale k0 is shifted by -1000 / scale (towards +inf when the scale is negative),
        # so the scores lie there too; under scale 0 every score is 0.
        q[..., 0] = np.abs(q[..., 0]) + 1.0
        if case.scale is None:
            k[..., 0] -= 1000.0 * math.sqrt(shape.d)
        elif case.scale != 0:
            k[..., 0] -= 1000.0 / case.scale
    if case.precision == MPMATH_50:
        q, k, v, d_out = (_arith.as_mpf_array(x) for x in (q, k, v, d_out))
    return _Problem(q, k, v, d_out, mask)


def _finite_max_abs(array: Array) -> float:
    """Largest magnitude among the finite entries (0.0 when there are none)."""
    finite = _arith.isfinite(array)
    if not np.any(finite):
        return 0.0
    return float(np.max(np.abs(array[finite])))


def natural_scales(
    q: Array, k: Array, v: Array, d_out: Array, scale: float
) -> tuple[float, float, float, float]:
    """Magnitudes of out, dq, dk, dv implied by the inputs (finite entries only).

    ``out`` is a convex combination of rows of ``v``: ``max|v|``. ``dv`` sums probabilities times
    ``dO``: ``max|dO|``. ``dq = scale · sum_j P_ij (dO_i·v_j - D_i) k_j``: ``scale·max|dO|·max|v|·max|k|``,
    and symmetrically ``dk`` with ``max|q|``. Errors are measured against these so that a gradient
    that is small only through cancellation (``dO_i·v_j - D_i`` nearly 0) is not judged relative
    to its own cancelled size, where any two summation orders legitimately differ.
    """
    mq, mk, mv, mdo = (_finite_max_abs(x) for x in (q, k, v, d_out))
    return (mv, scale * mdo * mv * mk, scale * mdo * mv * mq, mdo)


def scaled_error(got: Array, reference: Array, natural_scale: float) -> float:
    """``max|got - reference| / max(max|reference|, natural_scale)`` over the finite entries
    (denominator 1 if both are 0).

    A shape mismatch gives ``inf``, and so does any non-finite entry that the other array does not
    hold identically at the same position (the same infinity, or NaN in both).
    """
    if got.shape != reference.shape:
        return float("inf")
    finite = _arith.isfinite(reference)
    same_pattern = np.array_equal(_arith.isfinite(got), finite)
    if not same_pattern or not _same_non_finite(got[~finite], reference[~finite]):
        return float("inf")
    got, reference = got[finite], reference[finite]
    if got.size == 0:
        return 0.0
    denominator = max(float(np.max(np.abs(reference))), natural_scale) or 1.0
    return float(np.max(np.abs(got - reference))) / denominator


def _leaked(*arrays: Array) -> bool:
    """Whether any of ``arrays`` holds a non-finite entry (float64 or mpmath object arrays)."""
    return any(not bool(np.all(_arith.isfinite(array))) for array in arrays)


def _same_non_finite(got: Array, reference: Array) -> bool:
    """Whether two 1-d arrays of non-finite values are identical: equal infinities or both NaN."""
    return all(
        (bool(mpmath.isnan(a)) and bool(mpmath.isnan(b))) or a == b
        for a, b in zip(got.tolist(), reference.tolist(), strict=True)
    )


def reference_logsumexp(
    q: Array, k: Array, mask: BoolArray | None, scale: float | None
) -> tuple[Array, float]:
    """Row logsumexp of the allowed scaled scores, computed independently of the flash spec.

    Args:
        q: (..., nQ, d), k: (..., nK, d), float64 or mpmath object arrays; leading axes broadcast.
        mask: None or a bool array broadcastable to (*batch, nQ, nK); True = may attend.
        scale: the score factor; None is ``1/sqrt(d)`` (1 when ``d == 0``), computed here.

    Returns:
        ``(lse, score_scale)``: ``lse`` of shape (*batch, nQ) (float64, or mpmath at the working
        precision) and the largest magnitude of the finite allowed scores (0.0 when there are
        none). In float64 the scores are ``einsum(q, k) · scale`` and each row is
        ``np.logaddexp.reduce`` over its allowed entries (a left fold of ``max(a, b) +
        log1p(exp(-|a - b|))``, no maximum taken first); for mpmath arrays each score is
        ``mpmath.fdot`` times the scale and each row ``log(fsum(exp(s)))`` directly, which does
        not overflow or underflow in mpmath's exponent range. A row with no allowed key is
        ``-inf``; a row whose allowed scores are all ``-inf`` is NaN (documented by
        :func:`~torchlean.spec.flash.flash_attention_forward`: the NaN carries the row's NaN
        output into the backward; ``torch.logsumexp`` gives ``-inf``), and so is a row with an
        allowed NaN score. A row with an allowed ``+inf`` score is ``+inf`` here (flash's is NaN);
        no case of the sweep has one (``minus-inf-key`` flips its infinity under a negative scale).
    """
    batch = np.broadcast_shapes(q.shape[:-2], k.shape[:-2])
    n_q, n_k, d = q.shape[-2], k.shape[-2], q.shape[-1]
    multiprecision = q.dtype == object
    if multiprecision:
        applied: Any = mpmath.mpf(1 if scale is None else scale)
        if scale is None and d:
            applied = 1 / mpmath.sqrt(d)
        q_full = np.broadcast_to(q, (*batch, n_q, d))
        k_full = np.broadcast_to(k, (*batch, n_k, d))
        scores = np.empty((*batch, n_q, n_k), dtype=object)
        for index in np.ndindex(*batch, n_q, n_k):
            *lead, i, j = index
            scores[index] = mpmath.fdot(q_full[(*lead, i)].tolist(), k_full[(*lead, j)].tolist()) * applied
    else:
        applied = (1 / math.sqrt(d) if d else 1.0) if scale is None else float(scale)
        with np.errstate(invalid="ignore", over="ignore"):
            scores = np.einsum("...id,...jd->...ij", q, k) * applied
        scores = np.broadcast_to(scores, (*batch, n_q, n_k))
    allowed = np.ones((*batch, n_q, n_k), dtype=bool) if mask is None else np.broadcast_to(mask, scores.shape)
    finite_allowed = allowed & _arith.isfinite(scores)
    score_scale = float(np.max(np.abs(scores[finite_allowed]))) if np.any(finite_allowed) else 0.0
    # rows with allowed keys whose allowed scores are all -inf: NaN, as documented (see above)
    all_minus_inf = np.any(allowed, axis=-1) & np.all(~allowed | (scores == -np.inf), axis=-1)
    if multiprecision:
        lse = np.empty((*batch, n_q), dtype=object)
        for row in np.ndindex(*batch, n_q):
            values = scores[row][allowed[row]].tolist()
            lse[row] = mpmath.log(mpmath.fsum(mpmath.exp(s) for s in values))  # log(0) = -inf: no key
        nan: Any = mpmath.mpf("nan")
    else:
        with np.errstate(invalid="ignore"):  # an allowed NaN score gives NaN, as it should
            lse = (
                np.logaddexp.reduce(np.where(allowed, scores, -np.inf), axis=-1)
                if n_k
                else np.full((*batch, n_q), -np.inf)
            )
        nan = np.nan
    lse[all_minus_inf] = nan
    return lse, score_scale


def run_flash_case(case: FlashCheckCase) -> FlashCheckRow:
    """Compare flash with standard attention, forward and backward, at the case's scale, and
    flash's saved logsumexp with :func:`reference_logsumexp`, on one case."""
    problem = _make_problem(case)
    out_scale, dq_scale, dk_scale, dv_scale = natural_scales(
        problem.q, problem.k, problem.v, problem.d_out, abs(case.applied_scale)
    )
    with mpmath.workdps(MPMATH_DIGITS):
        args = (problem.q, problem.k, problem.v)
        scale = case.scale
        reference = scaled_dot_product_attention(*args, problem.mask, scale=scale)
        reference_grads = scaled_dot_product_attention_backward(
            *args, problem.d_out, problem.mask, scale=scale
        )
        out, lse = flash_attention_forward(*args, problem.mask, scale=scale, config=case.config)
        grads = flash_attention_backward(
            *args, out, lse, problem.d_out, problem.mask, scale=scale, config=case.config
        )
        reference_lse, score_scale = reference_logsumexp(problem.q, problem.k, problem.mask, scale)
        forward_error = scaled_error(out, reference, out_scale)
        backward_error = max(
            scaled_error(got, want, natural)
            for got, want, natural in zip(grads, reference_grads, (dq_scale, dk_scale, dv_scale), strict=True)
        )
        lse_error = scaled_error(np.asarray(lse), reference_lse, score_scale)
        if case.mask == "nan-blocked":
            # the poison sits at blocked positions only, so every output and gradient is finite in
            # both algorithms; a leak both share would otherwise compare equal (review83 F2)
            if _leaked(out, reference):
                forward_error = float("inf")
            if _leaked(*grads, *reference_grads):
                backward_error = float("inf")
    threshold = THRESHOLDS[case.precision]
    return FlashCheckRow(
        case=case.name,
        shape=case.shape.describe(),
        mask=case.mask,
        tiles=case.tiles,
        scale=case.scale_label,
        precision=case.precision,
        forward_error=forward_error,
        backward_error=backward_error,
        lse_error=lse_error,
        threshold=threshold,
        passed=forward_error <= threshold and backward_error <= threshold and lse_error <= threshold,
    )


def check_flash_attention(
    cases: Sequence[FlashCheckCase] | None = None,
    *,
    quick: bool = False,
    seed: int = 0,
    progress: Callable[[Sequence[FlashCheckCase]], Iterable[FlashCheckCase]] | None = None,
) -> FlashCheckReport:
    """Run the flash-vs-standard sweep and return its report.

    Args:
        cases: the cases to run; default :func:`flash_check_cases` ``(quick=quick, seed=seed)``.
        quick: a smaller float64 sweep (see :func:`flash_check_cases`).
        seed: base seed of the random inputs (case ``i`` uses ``seed + i``).
        progress: optional wrapper of the case sequence (e.g. a tqdm progress bar).

    Returns:
        A :class:`FlashCheckReport` with one :class:`FlashCheckRow` per case. The thresholds are
        1e-12 in float64 and 1e-40 at 50 significant digits (mpmath).
    """
    selected = flash_check_cases(quick=quick, seed=seed) if cases is None else tuple(cases)
    iterable: Iterable[FlashCheckCase] = selected if progress is None else progress(selected)
    return FlashCheckReport(tuple(run_flash_case(case) for case in iterable))
