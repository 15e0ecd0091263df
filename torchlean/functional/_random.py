"""Seeded random sources (``rand_uniform``, ``bernoulli_mask``, drawn from the seed and the
session's random counter) and ``dropout``, which applies a ``bernoulli_mask``."""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from torchlean._checks import is_int
from torchlean.autograd import storage
from torchlean.autograd.session import current_session, run_op
from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.vocabulary import BackendOp
from torchlean.functional._arithmetic import mul, scale
from torchlean.functional._operands import _require_tensor
from torchlean.functional._params import _int, _ints, _real
from torchlean.tensor import (
    DEFAULT_DTYPE,
    BoolLike,
    DTypeLike,
    IntLike,
    RealLike,
    Tensor,
    TensorError,
    TensorTypeError,
    _flag,
    _preview,
    resolve_dtype,
)

_SEED_LIMIT = 2**64


def _seed(fn: str, seed: object, session_seed: object) -> int:
    """The seed of a random op (``session_seed`` when ``seed`` is None): an integer below
    ``2**64``, since ``keyOf`` takes it as an unsigned 64-bit number and a larger one would
    silently wrap onto a smaller seed; a negative one is refused here too (the kernel guard's
    wording, naming ``fn``).

    Raises:
        TensorTypeError: a non-integer seed.
        GuardError: ``rand_uniform: seed = 18446744073709551621 is out of range (accepted: integers
            in [0, 2**64 - 1]) ...``; ``dropout: seed = -1 is negative (accepted: integers >= 0)``.
    """
    name = "session seed" if seed is None else "seed"
    value = _int(fn, name, session_seed if seed is None else seed)
    if value < 0:
        raise GuardError(f"{fn}: {name} = {value} is negative (accepted: integers >= 0)")
    if value >= _SEED_LIMIT:
        raise GuardError(
            f"{fn}: {name} = {value} is out of range (accepted: integers in [0, 2**64 - 1]; a larger "
            "seed would wrap modulo 2**64 onto another seed's stream)"
        )
    return value


def rand_uniform(
    shape: Sequence[IntLike], seed: IntLike | None = None, dtype: DTypeLike = DEFAULT_DTYPE
) -> Tensor:
    """Uniform values on the grid ``u / 2**32`` from ``keyOf(seed, counter)``, where ``counter`` is
    the session's random counter (advanced once per call; anchor-runtime.md §1.6). ``seed``
    defaults to the session's seed. Never requires grad; records ``rand_uniform``.

    Returns a tensor of ``shape`` in ``dtype`` (float32 or float64; ``None`` is the default
    float32, as torch's default dtype) with values in ``[0, 1]``: the
    exact ``u / 2**32`` rounded once to ``dtype``, so float32 can round a draw within ``2**-25``
    of 1 up to exactly 1. The same session seed replays the same stream in a new session.

    Seeds are not mixed before the counter is added (``keyOf(seed, counter) = splitmix64(seed +
    counter)``, the original's schedule, so streams match it): seed ``s + 1`` draws at counter ``k``
    what seed ``s`` draws at ``k + 1``. For independent streams (runs, layers) use seeds far apart,
    e.g. multiples of ``2**32``, not ``0, 1, 2``.

    Raises:
        GuardError: a tensor dtype other than float32/float64 (int64, bool), a negative extent,
            or a seed outside ``[0, 2**64 - 1]``.
        TensorError: a dtype torchlean tensors do not hold (``float16``, ``complex64``, an
            unknown name: :func:`~torchlean.tensor.resolve_dtype`).
        TensorTypeError: a non-integer extent or seed.
    """
    session = current_session()
    params = {
        "shape": _ints("rand_uniform", "shape", shape),
        "seed": _seed("rand_uniform", seed, session.seed),
        "dtype": resolve_dtype(DEFAULT_DTYPE if dtype is None else dtype),  # None: torch's default
    }
    params["counter"] = session.next_random_counter()
    return run_op(BackendOp.RAND_UNIFORM, (), params)


def bernoulli_mask(
    shape: Sequence[IntLike],
    keep_prob: RealLike,
    seed: IntLike | None = None,
    dtype: DTypeLike = DEFAULT_DTYPE,
) -> Tensor:
    """A 0/1 mask, 1 where ``keep_prob > u / 2**32`` (strict), from ``keyOf(seed, counter)`` with
    the session's random counter (advanced once per call). Never requires grad; records
    ``bernoulli_mask``. Returns a tensor of ``shape`` in ``dtype`` (float32 or float64; ``None``
    the default float32) holding
    0 and 1; ``u`` is the :func:`rand_uniform` draw of the same key (so neighbouring seeds overlap
    one draw apart, as there).

    Raises:
        GuardError: ``keep_prob`` outside ``[0, 1]`` or NaN, a tensor dtype other than
            float32/float64 (int64, bool), a negative extent, or a seed outside ``[0, 2**64 - 1]``.
        TensorError: a dtype torchlean tensors do not hold (``float16``, ``complex64``, an
            unknown name: :func:`~torchlean.tensor.resolve_dtype`); a ``keep_prob`` beyond the
            float64 range (``10**400``: review160 F4).
        TensorTypeError: a non-integer extent or seed; a ``keep_prob`` that is not a real number.
    """
    session = current_session()
    params = {
        "shape": _ints("bernoulli_mask", "shape", shape),
        "keep_prob": _real("bernoulli_mask", "keep_prob", keep_prob),
        "seed": _seed("bernoulli_mask", seed, session.seed),
        "dtype": resolve_dtype(DEFAULT_DTYPE if dtype is None else dtype),  # None: torch's default
    }
    params["counter"] = session.next_random_counter()
    return run_op(BackendOp.BERNOULLI_MASK, (), params)


def dropout(x: Tensor, p: RealLike, training: BoolLike = True, seed: IntLike | None = None) -> Tensor:
    """Inverted dropout (``torch.nn.functional.dropout`` semantics, TorchLean's seeded mask): in
    training, ``x * mask / (1 - p)`` with ``mask = bernoulli_mask(x.shape, 1 - p)``; the realised
    mask is saved by the ``mul`` node for the backward. Identity when not training or ``p == 0``.
    Records ``bernoulli_mask``, ``mul``, ``scale`` (``p == 1``: ``bernoulli_mask``, ``mul``).
    Returns x's shape and dtype (``x`` itself when it is the identity); the mask is drawn in x's
    dtype, on x's device (``cuda:1`` too, whatever torch's current CUDA device), with ``seed``
    (default: the session's seed), as :func:`bernoulli_mask`: from the seed and the session's
    random counter, which every draw advances, so two calls with one ``seed`` in a session give
    different masks, and a new session with the same seeds replays them.
    Seeds ``s`` and ``s + 1`` give the same masks one draw apart (see :func:`rand_uniform`): give
    two dropout layers or two runs seeds far apart.

    Raises:
        TensorError: ``p`` outside ``[0, 1]`` (NaN included).
        TensorTypeError: ``x`` is not a Tensor; a ``p`` that is not a real number; a ``training``
            that is not a bool; a ``seed`` that is not an integer or None (checked in eval too; a
            bool there, as torch's 4th argument ``inplace``, gets a message saying so).
        GuardError: a seed outside ``[0, 2**64 - 1]`` (checked in eval too); in training with
            ``0 < p``, an x whose dtype is not float32/float64 (a ``GuardTypeError``, also a
            ``TypeError``).
    """
    x = _require_tensor("dropout", "x", x)
    if seed is not None and not is_int(seed):
        hint = (
            " (torch's dropout(input, p, training, inplace) takes inplace 4th; torchlean's 4th "
            "argument is seed, and there is no in-place dropout: drop that argument)"
            if isinstance(seed, bool | np.bool_)
            else ""
        )
        raise TensorTypeError(
            f"dropout: seed must be an integer or None; got {_preview(seed)} of type "
            f"{type(seed).__name__}{hint}"
        )
    if seed is not None:
        _seed("dropout", seed, None)  # refuses negatives and 2**64 and beyond, naming dropout
    prob = _real("dropout", "p", p)  # a float: a np.float32 p must not round 1 - p to float32
    if not 0.0 <= prob <= 1.0:
        raise TensorError(f"dropout probability p={p!r} is outside [0, 1]")
    if not _flag("dropout: training", training) or prob == 0.0:
        return x
    if x.dtype not in (np.float32, np.float64):  # review109 F5: "bernoulli_mask: dtype dtype('int64')"
        # a GuardError, as every op's dtype refusal and as documented (review160 F3); a TypeError too,
        # as the TensorTypeError it was (review161 F9)
        raise GuardTypeError(
            f"dropout: input x has dtype {x.dtype}; accepted: float32 or float64 (the mask is drawn in x's "
            "dtype and the kept values are scaled by 1 / (1 - p)): give x a float dtype"
        )
    with storage.device_scope(x.device):  # the mask is drawn on x's device, not the current one
        mask = bernoulli_mask(x.shape, 1.0 - prob, seed=None if seed is None else int(seed), dtype=x.dtype)
    kept = mul(x, mask)
    return kept if prob == 1.0 else scale(kept, 1.0 / (1.0 - prob))
