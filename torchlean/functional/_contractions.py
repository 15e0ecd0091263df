"""Contractions: ``matmul`` and ``linear``, each a left fold over the contracted axis under
``checked_cpu``."""

from __future__ import annotations

from torchlean.autograd.session import run_op
from torchlean.backend.vocabulary import BackendOp
from torchlean.tensor import Tensor


def matmul(a: Tensor, b: Tensor) -> Tensor:
    """``torch.matmul`` (1-D promotion, broadcast batch axes), left fold over the contracted axis;
    records ``matmul``. a ``(..., n, k)`` @ b ``(..., k, m)`` gives ``(broadcast(...), n, m)``; a
    1-D operand's promoted axis is dropped from the result (1-D @ 1-D is rank 0). float32 or
    float64 operands of one dtype, the result in it.

    Raises:
        GuardError: a rank-0 operand, contracted extents that differ, or batch axes that do not
            broadcast; an int64 or bool operand, or operands of two dtypes (no promotion).
    """
    return run_op(BackendOp.MATMUL, (a, b), {})


def linear(x: Tensor, weight: Tensor, bias: Tensor | None = None) -> Tensor:
    """``x @ weight.T + bias`` with x ``(..., in)``, weight ``(out, in)``, bias ``(out,)``
    (``torch.nn.functional.linear``); records ``linear``. Returns ``(..., out)`` in the
    operands' dtype (float32 or float64, one for all).

    Raises:
        GuardError: x of rank 0, a weight that is not ``(out, in)`` for x's ``in``, or a bias that
            is not ``(out,)``; an int64 or bool operand, or operands of two dtypes (no promotion).
    """
    return run_op(BackendOp.LINEAR, (x, weight, bias), {})
