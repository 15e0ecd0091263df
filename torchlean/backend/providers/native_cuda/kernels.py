"""Python entry points of the native-cuda kernels (``torchlean_native_ext``, ``csrc/native_ops.cu``).

One ``<op>_forward`` per native-cuda op, and for each differentiable op one
``<op>_backward(g, *inputs, out, **params)`` returning one cotangent per input (``None`` for masks,
indices and absent optional inputs), already reduced to that input's shape: the convention of the
reference kernels (``<op>`` / ``<op>_vjp``), with the same parameter names. Storage is torch
tensors on a CUDA device, float32 or float64 (one dtype per call), contiguous; results are fresh
contiguous tensors that alias no input.

Every function first calls :func:`.guards.check_launch` and :func:`.guards.check_flat_row_major`
(the capsules' shape and layout evidence) and the rules of :mod:`.operand_guards` that tie its
operands together (window geometry, channel counts, statistics shapes, index values, axes,
contraction sizes, cotangent shapes, head widths), then the extension, which repeats its own
checks. In the test suites and a review's fuzzing of these wrappers, one refusal is made in C++
only: a direct attention whose tiles do not fit the device's shared memory (it needs the device's
limit).

Zero-size inputs (an axis of extent 0) follow torch, as the CPU profiles do
(``tests/runtime/test_zero_size.py``): an empty result of torch's shape where torch answers (NaN
for the mean of nothing, zeros for a sum over nothing, e.g. the gradient of a parameter that met
an empty batch), a GuardError naming the shape where torch refuses (pools and convolutions over 0
channels, empty convolution weights, ...). Empty work returns before any launch: CUDA refuses a
grid with an empty dimension, and the host emulation does too.

Raises (every function):
    NativeExtensionError: not a CUDA build of torch, no usable CUDA device (checked first, with
        the messages of :mod:`.extension`), no toolchain, failed build; all before any launch.
    GuardError: refused arguments (from the guards; from the extension's boundary checks only for
        the shared-memory limit of direct attention, or when a guard misses a case).
    NativeKernelError: the extension failed while running.

Own kernels (``csrc/kernels.cuh``): ``hard_masked_softmax``, ``smooth_max_pool``,
``selective_scan``, ``rand_uniform``, ``bernoulli_mask`` and ``direct_attention``; the other ops
compose ATen calls (cuBLAS/cuDNN/cuFFT), so their reduction order is implementation-defined.
``conv``, ``conv_transpose``, ``matmul``, ``linear`` and ``fft_fno`` run with TF32 disabled so that
float32 means IEEE float32.
"""

from __future__ import annotations

import contextlib
import math
import numbers
import weakref
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

import torch
from torch import Tensor

from torchlean.backend.errors import GuardError, GuardTypeError
from torchlean.backend.providers.native_cuda import extension, guards
from torchlean.backend.providers.native_cuda import operand_guards as relations
from torchlean.backend.providers.native_cuda.batching import broadcast_batch, expand_to_batch, sum_to_shape
from torchlean.backend.providers.native_cuda.float32 import ieee_float32
from torchlean.backend.providers.reference.guards import safe_log_eps_fault
from torchlean.backend.providers.reference.spatial_guards import shown_value, training_eps_fault

if TYPE_CHECKING:
    import torchlean_native_ext as _native
else:

    class _ActiveBuild:
        """Forwards attribute access to the build selected for this context (CUDA or emulation)."""

        def __getattr__(self, name: str) -> Any:
            return getattr(extension.active_module(), name)

    _native = _ActiveBuild()

__all__ = [
    "Grads",
    "abs_backward",
    "abs_forward",
    "add_backward",
    "add_forward",
    "avg_pool_backward",
    "avg_pool_forward",
    "batch_norm_backward",
    "batch_norm_forward",
    "bernoulli_mask_forward",
    "broadcast_backward",
    "broadcast_forward",
    "clamp_backward",
    "clamp_forward",
    "concat_backward",
    "concat_forward",
    "conv_backward",
    "conv_forward",
    "conv_transpose_backward",
    "conv_transpose_forward",
    "cos_backward",
    "cos_forward",
    "direct_attention",
    "direct_attention_backward",
    "direct_attention_forward",
    "direct_attention_vjp",
    "exp_backward",
    "exp_forward",
    "fft_fno_backward",
    "fft_fno_forward",
    "gather_backward",
    "gather_forward",
    "gelu_backward",
    "gelu_forward",
    "hard_masked_softmax_backward",
    "hard_masked_softmax_forward",
    "inv_backward",
    "inv_forward",
    "layer_norm_backward",
    "layer_norm_forward",
    "linear_backward",
    "linear_forward",
    "log_backward",
    "log_forward",
    "log_softmax_backward",
    "log_softmax_forward",
    "matmul_backward",
    "matmul_forward",
    "max_backward",
    "max_forward",
    "max_pool_backward",
    "max_pool_forward",
    "min_backward",
    "min_forward",
    "mse_loss_backward",
    "mse_loss_forward",
    "mul_backward",
    "mul_forward",
    "permute_backward",
    "permute_forward",
    "rand_uniform_forward",
    "reduce_mean_backward",
    "reduce_mean_forward",
    "reduce_sum_backward",
    "reduce_sum_forward",
    "relu_backward",
    "relu_forward",
    "reshape_backward",
    "reshape_forward",
    "safe_log_backward",
    "safe_log_forward",
    "scale_backward",
    "scale_forward",
    "scatter_add_backward",
    "scatter_add_forward",
    "selective_scan_backward",
    "selective_scan_forward",
    "sigmoid_backward",
    "sigmoid_forward",
    "sin_backward",
    "sin_forward",
    "slice_backward",
    "slice_forward",
    "smooth_max_pool_backward",
    "smooth_max_pool_forward",
    "softmax_backward",
    "softmax_forward",
    "softplus_backward",
    "softplus_forward",
    "sqrt_backward",
    "sqrt_forward",
    "sub_backward",
    "sub_forward",
    "tanh_backward",
    "tanh_forward",
]

Grads = tuple[Tensor | None, ...]
Axis = int | Sequence[int] | None
IntOrTuple = int | Sequence[int]

_MAX_RANK = 16


# ------------------------------------------------------------------------------------ plumbing


def _check(op: str, tensors: guards.Operands, **rules: Any) -> torch.dtype | None:
    """CUDA availability first (the documented messages), then the shape and layout guards."""
    if extension.expected_device_type() == "cuda":
        extension.require_cuda()
    dtype = guards.check_launch(op, tensors, **rules)
    guards.check_flat_row_major(op, tensors)
    return dtype


@contextlib.contextmanager
def _launch(op: str) -> Iterator[None]:
    """Translate the extension's exceptions: argument refusals (ValueError, IndexError, TypeError)
    become GuardError, anything else NativeKernelError, except ``torch.OutOfMemoryError`` (a
    ``RuntimeError``), which passes through so that the dispatcher reports it as the
    ``KernelMemoryError`` every provider raises for a failed allocation. A GuardError of a
    parameter check inside the block passes through as raised (its message already names the op)."""
    try:
        yield
    except GuardError:
        raise
    except (ValueError, IndexError, TypeError) as error:
        raise GuardError(f"native_cuda.{op}: {error}") from error
    except torch.OutOfMemoryError:
        raise
    except RuntimeError as error:
        raise extension.NativeKernelError(f"native_cuda.{op}: {error}") from error


def _grads(values: list[Tensor | None]) -> Grads:
    return tuple(values)


def _stream(t: Tensor) -> int:
    return extension.stream_handle(t.device.index or 0)


def _unary_rules() -> dict[str, Any]:
    return {"same_shape": (("g", "x"), ("out", "x"))}


# ----------------------------------------------------------------------------------- matmul & co


def matmul_forward(a: Tensor, b: Tensor) -> Tensor:
    """``torch.matmul``: a ``(..., m, k)``, b ``(..., k, n)`` (batch axes broadcast; 1-D operands
    promoted and squeezed as torch does), ranks 1..8."""
    _check("matmul", {"a": a, "b": b}, ranks={"a": (1, 8), "b": (1, 8)})
    relations.check_contraction(a, b)
    with _launch("matmul"), ieee_float32():
        return _native.matmul_forward(a, b)


def matmul_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """``(g @ b^T, a^T @ g)`` summed back to the shapes of a and b."""
    _check(
        "matmul",
        {"g": g, "a": a, "b": b, "out": out},
        ranks={"a": (1, 8), "b": (1, 8)},
        same_shape=(("g", "out"),),
    )
    relations.check_cotangent("matmul", g, relations.check_contraction(a, b))
    with _launch("matmul"), ieee_float32():
        return _grads(_native.matmul_backward(g, a, b, out))


def linear_forward(x: Tensor, w: Tensor, b: Tensor | None = None) -> Tensor:
    """``x @ w^T + b`` (``torch.nn.functional.linear``): x ``(..., in)``, w ``(out, in)``, b
    ``(out,)`` or None; returns ``(..., out)``."""
    _check("linear", {"x": x, "w": w, "b": b}, ranks={"x": (1, 8), "w": (2, 2), "b": (1, 1)})
    with _launch("linear"), ieee_float32():
        return _native.linear_forward(x, w, b)


def linear_backward(g: Tensor, x: Tensor, w: Tensor, b: Tensor | None = None, *, out: Tensor) -> Grads:
    """``(g @ w, g^T @ x, sum of g over rows)``; None for an absent bias."""
    _check(
        "linear",
        {"g": g, "x": x, "w": w, "b": b, "out": out},
        ranks={"x": (1, 8), "w": (2, 2), "b": (1, 1)},
        same_shape=(("g", "out"),),
    )
    with _launch("linear"), ieee_float32():
        return _grads(_native.linear_backward(g, x, w, b, out))


def mse_loss_forward(a: Tensor, b: Tensor) -> Tensor:
    """Mean of ``(a - b)**2`` over all elements (a and b of one shape), a rank-0 tensor; NaN for
    empty inputs (a mean over nothing, as ``torch.nn.functional.mse_loss`` and the reference
    kernel)."""
    _check("mse_loss", {"a": a, "b": b}, same_shape=(("a", "b"),))
    with _launch("mse_loss"):
        return _native.mse_loss_forward(a, b)


def mse_loss_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """``(2 g (a - b) / n, -2 g (a - b) / n)`` for the rank-0 cotangent g."""
    _check(
        "mse_loss",
        {"g": g, "a": a, "b": b, "out": out},
        ranks={"g": (0, 0), "out": (0, 0)},
        same_shape=(("a", "b"),),
    )
    with _launch("mse_loss"):
        return _grads(_native.mse_loss_backward(g, a, b, out))


# -------------------------------------------------------------------------------------- pointwise


def relu_forward(x: Tensor) -> Tensor:
    """``max(x, 0)`` elementwise."""
    _check("relu", {"x": x})
    with _launch("relu"):
        return _native.relu_forward(x)


def relu_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """0 where ``out <= 0``, else ``g`` (torch's ``threshold_backward`` on the result: ``g`` at a
    NaN input; selected, so a non-finite g at x <= 0 stays out)."""
    _check("relu", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("relu"):
        return _grads(_native.relu_backward(g, x, out))


def _gelu_mode(approximate: str) -> str:
    if approximate not in ("none", "tanh"):
        raise GuardError(f"native_cuda.gelu: approximate={approximate!r} (accepted: 'none', 'tanh')")
    return approximate


def gelu_forward(x: Tensor, *, approximate: str = "none") -> Tensor:
    """GELU, ``torch.nn.functional.gelu``: exact ``x * Phi(x)`` by default, with
    ``Phi(x) = erfc(-x / sqrt 2) / 2`` as ``reference.gelu`` (ATen's ``gelu`` cancels to -0.0 below
    about x = -8), or ATen's tanh approximation with ``approximate="tanh"``."""
    _check("gelu", {"x": x})
    with _launch("gelu"):
        return _native.gelu_forward(x, _gelu_mode(approximate))


def gelu_backward(g: Tensor, x: Tensor, *, out: Tensor, approximate: str = "none") -> Grads:
    """``g * gelu'(x)`` for the same ``approximate`` as the forward."""
    _check("gelu", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("gelu"):
        return _grads(_native.gelu_backward(g, x, out, _gelu_mode(approximate)))


def _binary_rules() -> dict[str, Any]:
    return {"same_shape": (("g", "out"),)}


def add_forward(a: Tensor, b: Tensor) -> Tensor:
    """``a + b`` with torch broadcasting."""
    _check("add", {"a": a, "b": b})
    with _launch("add"):
        return _native.add_forward(a, b)


def add_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """``(g, g)`` summed back to the shapes of a and b."""
    _check("add", {"g": g, "a": a, "b": b, "out": out}, **_binary_rules())
    with _launch("add"):
        return _grads(_native.add_backward(g, a, b, out))


def sub_forward(a: Tensor, b: Tensor) -> Tensor:
    """``a - b`` with torch broadcasting."""
    _check("sub", {"a": a, "b": b})
    with _launch("sub"):
        return _native.sub_forward(a, b)


def sub_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """``(g, -g)`` summed back to the shapes of a and b."""
    _check("sub", {"g": g, "a": a, "b": b, "out": out}, **_binary_rules())
    with _launch("sub"):
        return _grads(_native.sub_backward(g, a, b, out))


def mul_forward(a: Tensor, b: Tensor) -> Tensor:
    """``a * b`` with torch broadcasting."""
    _check("mul", {"a": a, "b": b})
    with _launch("mul"):
        return _native.mul_forward(a, b)


def mul_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """``(g b, g a)`` summed back to the shapes of a and b."""
    _check("mul", {"g": g, "a": a, "b": b, "out": out}, **_binary_rules())
    with _launch("mul"):
        return _grads(_native.mul_backward(g, a, b, out))


def max_forward(a: Tensor, b: Tensor) -> Tensor:
    """``torch.maximum(a, b)`` (NaN propagates)."""
    _check("max", {"a": a, "b": b})
    with _launch("max"):
        return _native.max_forward(a, b)


def max_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """g to the larger input; ties split g evenly, a NaN comparison gives g to both (PyTorch's
    rule); summed back to each shape."""
    _check("max", {"g": g, "a": a, "b": b, "out": out}, **_binary_rules())
    with _launch("max"):
        return _grads(_native.max_backward(g, a, b, out))


def min_forward(a: Tensor, b: Tensor) -> Tensor:
    """``torch.minimum(a, b)`` (NaN propagates)."""
    _check("min", {"a": a, "b": b})
    with _launch("min"):
        return _native.min_forward(a, b)


def min_backward(g: Tensor, a: Tensor, b: Tensor, *, out: Tensor) -> Grads:
    """g to the smaller input; ties split g evenly, a NaN comparison gives g to both (PyTorch's
    rule); summed back to each shape."""
    _check("min", {"g": g, "a": a, "b": b, "out": out}, **_binary_rules())
    with _launch("min"):
        return _grads(_native.min_backward(g, a, b, out))


def scale_forward(x: Tensor, *, factor: float) -> Tensor:
    """``x * factor`` for a finite scalar factor."""
    _check("scale", {"x": x})
    value = guards.check_finite("scale", "factor", factor)
    with _launch("scale"):
        return _native.scale_forward(x, value)


def scale_backward(g: Tensor, x: Tensor, *, out: Tensor, factor: float) -> Grads:
    """``(g * factor,)``."""
    _check("scale", {"g": g, "x": x, "out": out}, **_unary_rules())
    value = guards.check_finite("scale", "factor", factor)
    with _launch("scale"):
        return _grads(_native.scale_backward(g, x, out, value))


def _bounds(lo: float, hi: float) -> tuple[float, float]:
    if (
        any(isinstance(v, bool) or not isinstance(v, int | float) or math.isnan(v) for v in (lo, hi))
        or lo > hi
    ):
        raise GuardError(f"native_cuda.clamp: lo={lo!r}, hi={hi!r} (accepted: numbers, not NaN, lo <= hi)")
    return float(lo), float(hi)


def clamp_forward(x: Tensor, *, lo: float, hi: float) -> Tensor:
    """``min(max(x, lo), hi)`` (``torch.clamp``), ``lo <= hi``; infinite bounds allowed."""
    _check("clamp", {"x": x})
    low, high = _bounds(lo, hi)
    with _launch("clamp"):
        return _native.clamp_forward(x, low, high)


def clamp_backward(g: Tensor, x: Tensor, *, out: Tensor, lo: float, hi: float) -> Grads:
    """``g`` where ``lo <= x <= hi``, else 0 (PyTorch's rule)."""
    _check("clamp", {"g": g, "x": x, "out": out}, **_unary_rules())
    low, high = _bounds(lo, hi)
    with _launch("clamp"):
        return _grads(_native.clamp_backward(g, x, out, low, high))


def abs_forward(x: Tensor) -> Tensor:
    """``|x|``."""
    _check("abs", {"x": x})
    with _launch("abs"):
        return _native.abs_forward(x)


def abs_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g * sign(x)`` with torch's ``sign`` (0 at x = 0 and at NaN x, as torch's abs backward)."""
    _check("abs", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("abs"):
        return _grads(_native.abs_backward(g, x, out))


def sqrt_forward(x: Tensor) -> Tensor:
    """``sqrt(x)`` (NaN below 0)."""
    _check("sqrt", {"x": x})
    with _launch("sqrt"):
        return _native.sqrt_forward(x)


def sqrt_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g / (2 sqrt(x))``."""
    _check("sqrt", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("sqrt"):
        return _grads(_native.sqrt_backward(g, x, out))


def sigmoid_forward(x: Tensor) -> Tensor:
    """``1 / (1 + exp(-x))``."""
    _check("sigmoid", {"x": x})
    with _launch("sigmoid"):
        return _native.sigmoid_forward(x)


def sigmoid_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g * e / (1 + e)**2``, ``e = exp(-|x|)``: the reference's rule, from ``x`` (review166 F1)."""
    _check("sigmoid", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("sigmoid"):
        return _grads(_native.sigmoid_backward(g, x, out))


def tanh_forward(x: Tensor) -> Tensor:
    """``tanh(x)``."""
    _check("tanh", {"x": x})
    with _launch("tanh"):
        return _native.tanh_forward(x)


def tanh_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g * 4e / (1 + e)**2``, ``e = exp(-2|x|)``: the reference's rule, from ``x`` (review166 F1)."""
    _check("tanh", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("tanh"):
        return _grads(_native.tanh_backward(g, x, out))


def softplus_forward(x: Tensor) -> Tensor:
    """``log(1 + exp(x))`` computed as ``max(x, 0) + log1p(exp(-|x|))`` (no threshold)."""
    _check("softplus", {"x": x})
    with _launch("softplus"):
        return _native.softplus_forward(x)


def softplus_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g * sigmoid(x)``."""
    _check("softplus", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("softplus"):
        return _grads(_native.softplus_backward(g, x, out))


def exp_forward(x: Tensor) -> Tensor:
    """``exp(x)``."""
    _check("exp", {"x": x})
    with _launch("exp"):
        return _native.exp_forward(x)


def exp_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g * out``."""
    _check("exp", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("exp"):
        return _grads(_native.exp_backward(g, x, out))


def sin_forward(x: Tensor) -> Tensor:
    """``sin(x)``."""
    _check("sin", {"x": x})
    with _launch("sin"):
        return _native.sin_forward(x)


def sin_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g * cos(x)``."""
    _check("sin", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("sin"):
        return _grads(_native.sin_backward(g, x, out))


def cos_forward(x: Tensor) -> Tensor:
    """``cos(x)``."""
    _check("cos", {"x": x})
    with _launch("cos"):
        return _native.cos_forward(x)


def cos_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``-g * sin(x)``."""
    _check("cos", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("cos"):
        return _grads(_native.cos_backward(g, x, out))


def log_forward(x: Tensor) -> Tensor:
    """``log(x)`` (-inf at 0, NaN below)."""
    _check("log", {"x": x})
    with _launch("log"):
        return _native.log_forward(x)


def log_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``g / x``."""
    _check("log", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("log"):
        return _grads(_native.log_backward(g, x, out))


def inv_forward(x: Tensor) -> Tensor:
    """``1 / x``."""
    _check("inv", {"x": x})
    with _launch("inv"):
        return _native.inv_forward(x)


def inv_backward(g: Tensor, x: Tensor, *, out: Tensor) -> Grads:
    """``-g * (out * out)`` (torch's grouping: ``0 * inf`` is NaN where ``out**2`` overflows)."""
    _check("inv", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("inv"):
        return _grads(_native.inv_backward(g, x, out))


def _require_real_eps(op: str, eps: object) -> None:
    """A bool or a non-number eps is a ``GuardTypeError`` in the reference guards' words."""
    if isinstance(eps, bool) or not isinstance(eps, numbers.Real):
        raise GuardTypeError(
            f"native_cuda.{op}: eps must be a real number; got {eps!r} of type {type(eps).__name__}"
        )


def _eps(eps: float, x: Tensor) -> float:
    """``safe_log``'s eps as the reference guard (``check_safe_log``) accepts it: finite, > 0,
    and positive and finite once rounded to x's dtype (``1e-50`` is 0 in float32, where the
    result would be ``-inf`` once ``softplus(x)`` underflows); a bool or a non-number is a
    ``GuardTypeError`` in the reference's words."""
    _require_real_eps("safe_log", eps)
    value = guards.check_finite("safe_log", "eps", eps)
    fault = safe_log_eps_fault(value, guards.dtype_name(x.dtype))  # x: float32 or float64 (_check)
    if fault is not None:
        raise GuardError(f"native_cuda.safe_log: {fault}")
    return value


def safe_log_forward(x: Tensor, *, eps: float) -> Tensor:
    """``log(softplus(x) + eps)`` (anchor-runtime.md §4.3), eps finite and > 0 in x's dtype."""
    _check("safe_log", {"x": x})
    with _launch("safe_log"):
        return _native.safe_log_forward(x, _eps(eps, x))


def safe_log_backward(g: Tensor, x: Tensor, *, out: Tensor, eps: float) -> Grads:
    """``g * sigmoid(x) / (softplus(x) + eps)``."""
    _check("safe_log", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("safe_log"):
        return _grads(_native.safe_log_backward(g, x, out, _eps(eps, x)))


# ------------------------------------------------------------------------------- softmax family


def _axis(op: str, axis: int, rank: int) -> int:
    if isinstance(axis, bool) or not isinstance(axis, int) or not -max(rank, 1) <= axis < max(rank, 1):
        raise GuardError(
            f"native_cuda.{op}: axis={axis!r} for rank {rank} (accepted: {-max(rank, 1)}..{max(rank, 1) - 1})"
        )
    return axis


def log_softmax_forward(x: Tensor, *, axis: int = -1) -> Tensor:
    """``x - logsumexp(x, axis)`` (max-shifted, ``torch.log_softmax``)."""
    _check("log_softmax", {"x": x})
    with _launch("log_softmax"):
        return _native.log_softmax_forward(x, _axis("log_softmax", axis, x.dim()))


def log_softmax_backward(g: Tensor, x: Tensor, *, out: Tensor, axis: int = -1) -> Grads:
    """``g - exp(out) * sum(g, axis)``."""
    _check("log_softmax", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("log_softmax"):
        return _grads(_native.log_softmax_backward(g, x, out, _axis("log_softmax", axis, x.dim())))


def softmax_forward(x: Tensor, *, axis: int = -1) -> Tensor:
    """``exp(x - max) / sum`` along ``axis`` (``torch.softmax``)."""
    _check("softmax", {"x": x})
    with _launch("softmax"):
        return _native.softmax_forward(x, _axis("softmax", axis, x.dim()))


def softmax_backward(g: Tensor, x: Tensor, *, out: Tensor, axis: int = -1) -> Grads:
    """``out * (g - sum(g * out, axis))``."""
    _check("softmax", {"g": g, "x": x, "out": out}, **_unary_rules())
    with _launch("softmax"):
        return _grads(_native.softmax_backward(g, x, out, _axis("softmax", axis, x.dim())))


def _softmax_layout(x: Tensor, mask: Tensor, axis: int) -> tuple[Tensor, Tensor, int]:
    """Scores with the softmax axis last (a contiguous copy when it moves) and a mask whose shape
    is a suffix of the scores' shape (the kernel repeats it over the leading axes)."""
    _check("hard_masked_softmax", {"x": x, "mask": mask}, masks=("mask",), ranks={"x": (1, _MAX_RANK)})
    ax = _axis("hard_masked_softmax", axis, x.dim()) % x.dim()
    _require_broadcast("hard_masked_softmax", "mask", tuple(mask.shape), tuple(x.shape))
    if ax == x.dim() - 1:
        trimmed = mask.reshape(tuple(mask.shape)[_leading_ones(mask) :])
        if tuple(trimmed.shape) == tuple(x.shape)[x.dim() - trimmed.dim() :] and trimmed.dim() > 0:
            return x, trimmed.contiguous(), ax
        return x, torch.broadcast_to(mask, x.shape).contiguous(), ax
    moved = torch.broadcast_to(mask, x.shape).movedim(ax, -1).contiguous()
    return x.movedim(ax, -1).contiguous(), moved, ax


def _require_broadcast(op: str, name: str, shape: tuple[int, ...], target: tuple[int, ...]) -> None:
    """``shape`` broadcasts to ``target`` (trailing axes aligned, extents equal or 1)."""
    fits = len(shape) <= len(target) and all(
        s in (1, t) for s, t in zip(reversed(shape), reversed(target), strict=False)
    )
    if not fits:
        raise GuardError(
            f"native_cuda.{op}: {name} of shape {list(shape)} does not broadcast to {list(target)}"
        )


def _leading_ones(t: Tensor) -> int:
    count = 0
    for extent in t.shape:
        if extent != 1:
            break
        count += 1
    return min(count, max(t.dim() - 1, 0))


def hard_masked_softmax_forward(x: Tensor, mask: Tensor, *, axis: int = -1) -> Tensor:
    """Hard-masked softmax along ``axis`` (anchor-runtime.md §5.2, own kernel): allowed entries get
    ``exp(x - max_allowed) / sum_allowed``, blocked entries exactly 0, a fully blocked row zeros;
    blocked values are never read, so NaN/inf there cannot leak. mask bool (True = allowed),
    broadcastable to x's shape."""
    scores, allowed, ax = _softmax_layout(x, mask, axis)
    with _launch("hard_masked_softmax"):
        y = _native.hard_masked_softmax_forward(scores, allowed, _stream(x))
    return y if ax == x.dim() - 1 else y.movedim(-1, ax).contiguous()


def hard_masked_softmax_backward(g: Tensor, x: Tensor, mask: Tensor, *, out: Tensor, axis: int = -1) -> Grads:
    """``(out * (g - sum_allowed(g * out)), None)`` along ``axis``: blocked coordinates receive
    exactly 0 (selected, so a non-finite g there cannot leak); the mask gets None."""
    _check("hard_masked_softmax", {"g": g, "x": x, "out": out}, **_unary_rules())
    scores, allowed, ax = _softmax_layout(x, mask, axis)
    moved = ax != x.dim() - 1
    g_last = g.movedim(ax, -1).contiguous() if moved else g
    out_last = out.movedim(ax, -1).contiguous() if moved else out
    with _launch("hard_masked_softmax"):
        dx = _native.hard_masked_softmax_backward(g_last, scores, allowed, out_last, _stream(x))[0]
    if dx is None:
        raise extension.NativeKernelError("native_cuda.hard_masked_softmax: the extension returned no dx")
    return (dx.movedim(-1, ax).contiguous() if moved else dx, None)


# ------------------------------------------------------------------------------------ reductions


def _dims(op: str, axis: Axis) -> list[int]:
    if axis is None:
        return []
    items = [axis] if isinstance(axis, int) else list(axis)
    if not items or any(isinstance(a, bool) or not isinstance(a, int) for a in items):
        raise GuardError(
            f"native_cuda.{op}: axis={axis!r} (accepted: None, an int, or a non-empty sequence of ints)"
        )
    return items


def reduce_sum_forward(x: Tensor, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Sum over ``axis`` (None: every axis), keeping extent-1 axes when ``keepdims``."""
    _check("reduce_sum", {"x": x})
    with _launch("reduce_sum"):
        return _native.reduce_sum_forward(x, _dims("reduce_sum", axis), bool(keepdims))


def reduce_sum_backward(
    g: Tensor, x: Tensor, *, out: Tensor, axis: Axis = None, keepdims: bool = False
) -> Grads:
    """``(g broadcast back over the reduced axes,)``."""
    _check("reduce_sum", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    with _launch("reduce_sum"):
        return _grads(_native.reduce_sum_backward(g, x, out, _dims("reduce_sum", axis), bool(keepdims)))


def reduce_mean_forward(x: Tensor, *, axis: Axis = None, keepdims: bool = False) -> Tensor:
    """Mean over ``axis`` (None: every axis), keeping extent-1 axes when ``keepdims``."""
    _check("reduce_mean", {"x": x})
    with _launch("reduce_mean"):
        return _native.reduce_mean_forward(x, _dims("reduce_mean", axis), bool(keepdims))


def reduce_mean_backward(
    g: Tensor, x: Tensor, *, out: Tensor, axis: Axis = None, keepdims: bool = False
) -> Grads:
    """``(g broadcast back over the reduced axes / count,)``."""
    _check("reduce_mean", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    with _launch("reduce_mean"):
        return _grads(_native.reduce_mean_backward(g, x, out, _dims("reduce_mean", axis), bool(keepdims)))


# ----------------------------------------------------------------------------------------- views


def _shape(op: str, shape: Sequence[int]) -> list[int]:
    dims = list(shape)
    guards.check_element_count(op, "shape", dims)
    return dims


def _reshape_target(x: Tensor, shape: Sequence[int]) -> list[int]:
    """``shape`` with its ``-1`` (at most one) inferred from x's element count, as
    ``torch.reshape`` and the reference guard: refused beside a 0 extent, where any value would do
    (torch: "the unspecified dimension size -1 can be any value and is ambiguous")."""
    dims = list(shape)
    if dims.count(-1) > 1 or any(isinstance(d, bool) or not isinstance(d, int) or d < -1 for d in dims):
        raise GuardError(
            f"native_cuda.reshape: shape {dims} is not accepted (accepted: ints >= 0 and at most one "
            "-1 to infer)"
        )
    if -1 in dims:
        known = math.prod(d for d in dims if d != -1)
        if known == 0 or x.numel() % known:
            raise GuardError(
                f"native_cuda.reshape: cannot infer the -1 extent of shape {dims} for {x.numel()} "
                "elements (accepted: a -1 whose other extents have a nonzero product dividing the "
                "element count; beside a 0 extent it could be any value, as torch.reshape refuses)"
            )
        dims[dims.index(-1)] = x.numel() // known
    return _shape("reshape", dims)


def reshape_forward(x: Tensor, *, shape: Sequence[int]) -> Tensor:
    """x's elements in row-major order with shape ``shape`` (same element count; one ``-1``
    inferred, as ``torch.reshape``)."""
    _check("reshape", {"x": x})
    with _launch("reshape"):
        return _native.reshape_forward(x, _reshape_target(x, shape))


def reshape_backward(g: Tensor, x: Tensor, *, out: Tensor, shape: Sequence[int]) -> Grads:
    """``(g reshaped to x's shape,)``."""
    _check("reshape", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    with _launch("reshape"):
        return _grads(_native.reshape_backward(g, x, out, _reshape_target(x, shape)))


def _permutation(perm: Sequence[int], rank: int) -> list[int]:
    """``perm`` with negative axes counted from the end (``torch.permute`` and the reference guard
    ``check_permute``), checked to hold each of ``0..rank-1`` exactly once.

    Raises:
        GuardError: an entry outside ``[-rank, rank)``, or not a permutation; its subclass
            ``GuardTypeError`` for a non-integer entry. The message names ``perm`` and the
            accepted values.
    """
    given = list(perm)
    if any(isinstance(a, bool) or not isinstance(a, numbers.Integral) for a in given):
        raise GuardTypeError(f"native_cuda.permute: perm {given!r} holds a non-integer (accepted: integers)")
    entries = [int(a) for a in given]
    for a in entries:
        if not -rank <= a < rank:
            accepted = f"an integer in [{-rank}, {rank - 1}]" if rank > 0 else "none: the input has rank 0"
            raise GuardError(
                f"native_cuda.permute: perm entry {a} of {entries} is out of range for a rank-{rank} "
                f"input (accepted: {accepted})"
            )
    axes = [a % rank for a in entries]
    if sorted(axes) != list(range(rank)):
        raise GuardError(
            f"native_cuda.permute: perm {entries} is not a permutation of the {rank} axes of x "
            f"(accepted: each of 0..{rank - 1} exactly once, negative axes counted from the end)"
        )
    return axes


def permute_forward(x: Tensor, *, perm: Sequence[int]) -> Tensor:
    """``x.permute(perm)`` as a contiguous buffer; negative axes count from the end, as
    ``torch.permute`` and the reference. Raises ``GuardError`` when ``perm`` is not a
    permutation of x's axes."""
    _check("permute", {"x": x})
    axes = _permutation(perm, x.dim())
    with _launch("permute"):
        return _native.permute_forward(x, axes)


def permute_backward(g: Tensor, x: Tensor, *, out: Tensor, perm: Sequence[int]) -> Grads:
    """``(g permuted by the inverse permutation,)``; ``perm`` as in :func:`permute_forward`."""
    _check("permute", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    axes = _permutation(perm, x.dim())
    with _launch("permute"):
        return _grads(_native.permute_backward(g, x, out, axes))


def broadcast_forward(x: Tensor, *, shape: Sequence[int]) -> Tensor:
    """x broadcast to ``shape`` (torch rules, trailing axes aligned), materialised."""
    _check("broadcast", {"x": x})
    with _launch("broadcast"):
        return _native.broadcast_forward(x, _shape("broadcast", shape))


def broadcast_backward(g: Tensor, x: Tensor, *, out: Tensor, shape: Sequence[int]) -> Grads:
    """``(g summed over the broadcast axes back to x's shape,)``."""
    _check("broadcast", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    with _launch("broadcast"):
        return _grads(_native.broadcast_backward(g, x, out, _shape("broadcast", shape)))


def _named(xs: Sequence[Tensor]) -> dict[str, Tensor | None]:
    return {f"xs[{i}]": x for i, x in enumerate(xs)}


def _concat_ranks(xs: Sequence[Tensor]) -> dict[str, tuple[int, int]]:
    return {name: (1, _MAX_RANK) for name in _named(xs)}


def concat_forward(*xs: Tensor, axis: int = 0) -> Tensor:
    """``torch.cat(xs, axis)``: one dtype, equal shapes outside ``axis``, at least one tensor."""
    if not xs:
        raise GuardError("native_cuda.concat: no tensors (accepted: at least one)")
    _check("concat", _named(xs), ranks=_concat_ranks(xs))
    relations.check_concat_shapes(xs, axis)
    with _launch("concat"):
        return _native.concat_forward(list(xs), axis)


def concat_backward(g: Tensor, *xs: Tensor, out: Tensor, axis: int = 0) -> Grads:
    """g split along ``axis`` into pieces of the inputs' extents."""
    if not xs:
        raise GuardError("native_cuda.concat: no tensors (accepted: at least one)")
    _check("concat", {"g": g, "out": out, **_named(xs)}, ranks=_concat_ranks(xs), same_shape=(("g", "out"),))
    dim = relations.check_concat_shapes(xs, axis)
    shape = [int(d) for d in xs[0].shape]
    shape[dim] = sum(int(x.shape[dim]) for x in xs)
    relations.check_cotangent("concat", g, shape)
    with _launch("concat"):
        return _grads(_native.concat_backward(g, list(xs), out, axis))


def _slice_bounds(
    x: Tensor, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int] | None
) -> tuple[list[int], list[int], list[int]]:
    steps_list = [1] * x.dim() if steps is None else list(steps)
    return list(starts), list(stops), steps_list


def slice_forward(
    x: Tensor, *, starts: Sequence[int], stops: Sequence[int], steps: Sequence[int] | None = None
) -> Tensor:
    """``x[start0:stop0:step0, ...]``, one bound per axis, ``0 <= start <= stop <= extent``,
    ``step >= 1`` (steps None: all 1)."""
    _check("slice", {"x": x})
    with _launch("slice"):
        return _native.slice_forward(x, *_slice_bounds(x, starts, stops, steps))


def slice_backward(
    g: Tensor,
    x: Tensor,
    *,
    out: Tensor,
    starts: Sequence[int],
    stops: Sequence[int],
    steps: Sequence[int] | None = None,
) -> Grads:
    """``(zeros of x's shape with g at the sliced positions,)``."""
    _check("slice", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    with _launch("slice"):
        return _grads(_native.slice_backward(g, x, out, *_slice_bounds(x, starts, stops, steps)))


def gather_forward(x: Tensor, index: Tensor, *, axis: int) -> Tensor:
    """``torch.gather(x, axis, index)``: index int64 of x's rank; out has index's shape. Every
    index is checked to lie in ``[0, x.shape[axis])`` on the host before the launch."""
    _check("gather", {"x": x, "index": index}, indices=("index",), ranks={"x": (1, _MAX_RANK)})
    relations.check_gather_index(x, index, axis)
    with _launch("gather"):
        return _native.gather_forward(x, index, axis)


def gather_backward(g: Tensor, x: Tensor, index: Tensor, *, out: Tensor, axis: int) -> Grads:
    """``(zeros_like(x).scatter_add(axis, index, g), None)``."""
    _check(
        "gather",
        {"g": g, "x": x, "index": index, "out": out},
        indices=("index",),
        ranks={"x": (1, _MAX_RANK)},
        same_shape=(("g", "out"),),
    )
    relations.check_gather_index(x, index, axis, backward=True)
    relations.check_cotangent("gather", g, index.shape)
    with _launch("gather"):
        return _grads(_native.gather_backward(g, x, index, out, axis))


def scatter_add_forward(base: Tensor, index: Tensor, src: Tensor, *, axis: int) -> Tensor:
    """``torch.scatter_add(base, axis, index, src)`` (repeated indices accumulate, in an
    implementation-defined order)."""
    _check(
        "scatter_add",
        {"base": base, "index": index, "src": src},
        indices=("index",),
        ranks={"base": (1, _MAX_RANK)},
    )
    relations.check_scatter_index(base, index, src, axis)
    with _launch("scatter_add"):
        return _native.scatter_add_forward(base, index, src, axis)


def scatter_add_backward(
    g: Tensor, base: Tensor, index: Tensor, src: Tensor, *, out: Tensor, axis: int
) -> Grads:
    """``(g, None, g gathered at index (0 where src extends beyond index))``."""
    _check(
        "scatter_add",
        {"g": g, "base": base, "index": index, "src": src, "out": out},
        indices=("index",),
        ranks={"base": (1, _MAX_RANK)},
        same_shape=(("g", "base"),),
    )
    relations.check_scatter_index(base, index, src, axis)
    with _launch("scatter_add"):
        return _grads(_native.scatter_add_backward(g, base, index, src, out, axis))


# ------------------------------------------------------------------------------- seeded sources


def _u64(op: str, name: str, value: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or not 0 <= value < (1 << 64):
        raise GuardError(f"native_cuda.{op}: {name}={value!r} (accepted: an int in 0..2**64-1)")
    return value


def _source_target(op: str, dtype: torch.dtype, device: torch.device | int | None) -> tuple[str, int]:
    if dtype not in guards.FLOAT_DTYPES:
        raise GuardError(f"native_cuda.{op}: dtype={dtype!r} (accepted: torch.float32, torch.float64)")
    if extension.expected_device_type() == "cpu":
        return guards.dtype_name(dtype), 0
    extension.require_cuda()  # review112 F3: an explicit device skipped the documented refusal
    if device is None:
        return guards.dtype_name(dtype), torch.cuda.current_device()
    resolved = torch.device("cuda", device) if isinstance(device, int) else torch.device(device)
    if resolved.type != "cuda":
        raise GuardError(f"native_cuda.{op}: device={device!r} (accepted: a cuda device)")
    index = resolved.index if resolved.index is not None else torch.cuda.current_device()
    if not 0 <= index < torch.cuda.device_count():
        raise GuardError(
            f"native_cuda.{op}: device={device!r} names no CUDA device here (accepted: cuda:0 to "
            f"cuda:{torch.cuda.device_count() - 1})"
        )
    return guards.dtype_name(dtype), index


def rand_uniform_forward(
    *,
    shape: Sequence[int],
    seed: int,
    counter: int,
    dtype: torch.dtype = torch.float32,
    device: torch.device | int | None = None,
) -> Tensor:
    """Seeded uniform tensor (anchor-runtime.md §1.6, own kernel): element ``i`` (row-major) is
    ``(splitmix64(keyOf(seed, counter) + i) mod 2**32) / 2**32`` rounded once to ``dtype``, with
    ``keyOf(seed, counter) = splitmix64(seed + counter)`` mod 2**64 — the reference provider's
    schedule. Forward only; device None = the current CUDA device.

    Raises:
        NativeExtensionError: outside host emulation, when CUDA is not usable here (checked before
            the device is resolved, whichever device is named).
        GuardError: a dtype other than float32/float64; a device that is not a CUDA device of
            this machine; a bad shape, seed or counter.
    """
    dims = _shape("rand_uniform", shape)
    name, index = _source_target("rand_uniform", dtype, device)
    seed64, counter64 = _u64("rand_uniform", "seed", seed), _u64("rand_uniform", "counter", counter)
    stream = extension.stream_handle(index)
    with _launch("rand_uniform"):
        out: Tensor = _native.rand_uniform_forward(dims, seed64, counter64, name, index, stream)
    guards.check_flat_row_major("rand_uniform", {"out": out})  # a source: its produced layout
    return out


def bernoulli_mask_forward(
    *,
    shape: Sequence[int],
    keep_prob: float,
    seed: int,
    counter: int,
    dtype: torch.dtype = torch.float32,
    device: torch.device | int | None = None,
) -> Tensor:
    """Seeded keep mask: element ``i`` is 1 if ``keep_prob > u_i`` (strict, both in ``dtype``) else
    0, ``u_i`` the :func:`rand_uniform_forward` draw of the same key. Forward only.

    Raises:
        NativeExtensionError, GuardError: as :func:`rand_uniform_forward`; GuardError also for a
            ``keep_prob`` outside ``[0, 1]``.
    """
    dims = _shape("bernoulli_mask", shape)
    keep = guards.check_finite("bernoulli_mask", "keep_prob", keep_prob)
    if not 0.0 <= keep <= 1.0:
        raise GuardError(
            f"native_cuda.bernoulli_mask: keep_prob={keep_prob!r} (accepted: 0 <= keep_prob <= 1)"
        )
    name, index = _source_target("bernoulli_mask", dtype, device)
    seed64, counter64 = _u64("bernoulli_mask", "seed", seed), _u64("bernoulli_mask", "counter", counter)
    stream = extension.stream_handle(index)
    with _launch("bernoulli_mask"):
        out: Tensor = _native.bernoulli_mask_forward(dims, keep, seed64, counter64, name, index, stream)
    guards.check_flat_row_major("bernoulli_mask", {"out": out})  # a source: its produced layout
    return out


# ---------------------------------------------------------------------------- normalisation layers


def _normalized_shape(x: Tensor, normalized_ndim: int) -> list[int]:
    if (
        isinstance(normalized_ndim, bool)
        or not isinstance(normalized_ndim, int)
        or not 1 <= normalized_ndim <= x.dim()
    ):
        raise GuardError(
            f"native_cuda.layer_norm: normalized_ndim={normalized_ndim!r} for rank {x.dim()} "
            f"(accepted: 1..{x.dim()})"
        )
    return list(x.shape[x.dim() - normalized_ndim :])


def layer_norm_forward(
    x: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    *,
    normalized_ndim: int = 1,
    eps: float = 1e-5,
) -> Tensor:
    """Layer normalisation over the trailing ``normalized_ndim`` axes
    (``torch.nn.functional.layer_norm``: biased variance, ``1/sqrt(var + eps)``); weight and bias
    None or of shape ``x.shape[-normalized_ndim:]``."""
    _check("layer_norm", {"x": x, "weight": weight, "bias": bias})
    with _launch("layer_norm"):
        return _native.layer_norm_forward(
            x, weight, bias, _normalized_shape(x, normalized_ndim), _norm_eps("layer_norm", eps, x.dtype)
        )


def layer_norm_backward(
    g: Tensor,
    x: Tensor,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    *,
    out: Tensor,
    normalized_ndim: int = 1,
    eps: float = 1e-5,
) -> Grads:
    """``(dx, dweight, dbias)``; None for an absent weight or bias."""
    _check("layer_norm", {"g": g, "x": x, "weight": weight, "bias": bias, "out": out}, **_unary_rules())
    with _launch("layer_norm"):
        return _grads(
            _native.layer_norm_backward(
                g,
                x,
                weight,
                bias,
                out,
                _normalized_shape(x, normalized_ndim),
                _norm_eps("layer_norm", eps, x.dtype),
            )
        )


def _no_affine_without_channels(x: Tensor, weight: Tensor | None, bias: Tensor | None) -> None:
    """C = 0 only without weight and bias (torch raises there; the reference guard refuses too)."""
    if x.dim() >= 2 and x.shape[1] == 0 and (weight is not None or bias is not None):
        raise GuardError(
            f"native_cuda.batch_norm: x has shape {list(x.shape)} with 0 channels and an affine weight "
            "or bias (accepted: C >= 1, or C = 0 with weight and bias None, as PyTorch)"
        )


def _norm_eps(op: str, eps: float, dtype: torch.dtype, *, training: bool = False) -> float:
    """``eps`` of ``op`` (``layer_norm``, ``batch_norm``) as the reference guards
    (``spatial_guards.check_layer_norm``/``check_batch_norm``) accept it: a real number (not a
    bool), ``>= 0`` as given and finite once rounded to x's dtype (0 is accepted, as torch's
    functional forms and the reference), and ``> 0`` in x's dtype for batch normalisation in
    training (``spatial_guards.training_eps_fault``, PyTorch's rule). Returns the rounded value, the eps the
    reference kernel adds to the variance.

    Raises:
        GuardError: eps not finite in x's dtype, negative, or not positive in training; its
            subclass ``GuardTypeError`` for a non-real eps.
    """
    _require_real_eps(op, eps)
    try:
        rounded = float(torch.tensor(float(eps), dtype=torch.float64).to(dtype))
    except OverflowError:  # an integer beyond float64
        rounded = math.inf
    if not math.isfinite(rounded):
        raise GuardError(
            f"native_cuda.{op}: eps={eps!r} is not finite in {guards.dtype_name(dtype)} "
            "(accepted: a finite real number >= 0)"
        )
    if float(eps) < 0.0:  # as given, as the reference guard and PyTorch
        raise GuardError(f"native_cuda.{op}: eps={eps!r} is negative (accepted: a finite eps >= 0)")
    faulty = training and rounded <= 0.0  # the dtype's name is formatted for a refusal only (review156)
    fault = training_eps_fault(float(eps), rounded, guards.dtype_name(dtype)) if faulty else None
    if fault is not None:
        raise GuardError(f"native_cuda.{op}: {fault}")
    return rounded


def _batch_stats(
    training: bool, running_mean: Tensor | None, running_var: Tensor | None
) -> tuple[Tensor | None, Tensor | None]:
    if training:
        return None, None  # batch statistics; the running statistics are not read
    if running_mean is None or running_var is None:
        raise GuardError("native_cuda.batch_norm: training=False needs running_mean and running_var")
    return running_mean, running_var


def batch_norm_forward(
    x: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    *,
    training: bool,
    eps: float = 1e-5,
) -> Tensor:
    """Batch normalisation over axis 1 of x ``(N, C, *spatial)`` (``torch.nn.functional.batch_norm``):
    training uses the batch mean and biased variance and leaves the running statistics alone;
    evaluation uses running_mean and running_var. Parameters ``(C,)`` or None; eps finite and
    ``>= 0`` in x's dtype, ``> 0`` in training (:func:`_norm_eps`, the reference guard's rule)."""
    _check(
        "batch_norm",
        {"x": x, "weight": weight, "bias": bias, "running_mean": running_mean, "running_var": running_var},
        ranks={"x": (2, _MAX_RANK)},
    )
    _no_affine_without_channels(x, weight, bias)
    mean, var = _batch_stats(training, running_mean, running_var)
    relations.check_batch_norm_operands(
        x, {"weight": weight, "bias": bias, "running_mean": mean, "running_var": var}, training=training
    )
    with _launch("batch_norm"):
        eps_value = _norm_eps("batch_norm", eps, x.dtype, training=training)
        return _native.batch_norm_forward(x, weight, bias, mean, var, eps_value)


def batch_norm_backward(
    g: Tensor,
    x: Tensor,
    weight: Tensor | None,
    bias: Tensor | None,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    *,
    out: Tensor,
    training: bool,
    eps: float = 1e-5,
) -> Grads:
    """``(dx, dweight, dbias, None, None)``; in training dx includes the paths through the batch
    statistics."""
    _check(
        "batch_norm",
        {
            "g": g,
            "x": x,
            "weight": weight,
            "bias": bias,
            "running_mean": running_mean,
            "running_var": running_var,
            "out": out,
        },
        ranks={"x": (2, _MAX_RANK)},
        **_unary_rules(),
    )
    _no_affine_without_channels(x, weight, bias)
    mean, var = _batch_stats(training, running_mean, running_var)
    relations.check_batch_norm_operands(
        x, {"weight": weight, "bias": bias, "running_mean": mean, "running_var": var}, training=training
    )
    with _launch("batch_norm"):
        return _grads(
            _native.batch_norm_backward(
                g, x, weight, bias, mean, var, out, _norm_eps("batch_norm", eps, x.dtype, training=training)
            )
        )


# ----------------------------------------------------------------------------------- convolution


def _spatial(op: str, w: Tensor) -> int:
    if not 3 <= w.dim() <= 5:
        raise GuardError(
            f"native_cuda.{op}: weight has rank {w.dim()} (accepted: 3..5, i.e. 1..3 spatial axes)"
        )
    return w.dim() - 2


def _conv_operands(op: str, x: Tensor, w: Tensor) -> int:
    """The number of spatial axes of the weight, after the zero-size rules of x and w (PyTorch's
    convolution rules, as ``reference.spatial_guards.check_conv``)."""
    n = _spatial(op, w)
    guards.check_channel_first(op, x, convolution=True)
    guards.check_no_empty_axis(op, "w", w)
    return n


def _groups(op: str, groups: int) -> int:
    if isinstance(groups, bool) or not isinstance(groups, numbers.Integral) or groups < 1:
        raise GuardError(f"native_cuda.{op}: groups={shown_value(groups)} (accepted: an int >= 1)")
    return int(groups)


def _conv_args(
    x: Tensor,
    w: Tensor,
    b: Tensor | None,
    stride: IntOrTuple,
    padding: IntOrTuple,
    dilation: IntOrTuple,
    groups: int,
) -> tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...]], list[int]]:
    """Stride, padding and dilation per spatial axis, and the output shape, after the operand,
    channel and window rules."""
    n = _conv_operands("conv", x, w)
    args = (
        guards.per_axis("conv", "stride", stride, n, 1),
        guards.per_axis("conv", "padding", padding, n, 0),
        guards.per_axis("conv", "dilation", dilation, n, 1),
    )
    return args, relations.check_conv_operands(x, w, b, *args, _groups("conv", groups))


def conv_forward(
    x: Tensor,
    w: Tensor,
    b: Tensor | None = None,
    *,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    """N-d convolution (``torch.nn.functional.conv1d/2d/3d``): x ``(N, C_in, *spatial)``, w
    ``(C_out, C_in/groups, *kernel)``, b ``(C_out,)`` or None; zero padding; returns
    ``(N, C_out, *out)``."""
    _check("conv", {"x": x, "w": w, "b": b})
    args, _ = _conv_args(x, w, b, stride, padding, dilation, groups)
    with _launch("conv"), ieee_float32():
        return _native.conv_forward(x, w, b, *args, _groups("conv", groups))


def conv_backward(
    g: Tensor,
    x: Tensor,
    w: Tensor,
    b: Tensor | None = None,
    *,
    out: Tensor,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Grads:
    """``(dx, dw, db)``; None for an absent bias."""
    _check("conv", {"g": g, "x": x, "w": w, "b": b, "out": out}, same_shape=(("g", "out"),))
    args, shape = _conv_args(x, w, b, stride, padding, dilation, groups)
    relations.check_cotangent("conv", g, shape)
    with _launch("conv"), ieee_float32():
        return _grads(_native.conv_backward(g, x, w, b, out, *args, _groups("conv", groups)))


def _transpose_args(
    x: Tensor,
    w: Tensor,
    b: Tensor | None,
    stride: IntOrTuple,
    padding: IntOrTuple,
    output_padding: IntOrTuple,
    dilation: IntOrTuple,
    groups: int,
) -> tuple[tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]], list[int]]:
    """Stride, padding, output_padding and dilation per spatial axis, and the output shape."""
    op = "conv_transpose"
    n = _conv_operands(op, x, w)
    args = (
        guards.per_axis(op, "stride", stride, n, 1),
        guards.per_axis(op, "padding", padding, n, 0),
        guards.per_axis(op, "output_padding", output_padding, n, 0),
        guards.per_axis(op, "dilation", dilation, n, 1),
    )
    shape = relations.check_conv_operands(
        x, w, b, args[0], args[1], args[3], _groups(op, groups), output_padding=args[2]
    )
    return args, shape


def conv_transpose_forward(
    x: Tensor,
    w: Tensor,
    b: Tensor | None = None,
    *,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Tensor:
    """N-d transpose convolution (``torch.nn.functional.conv_transpose1d/2d/3d``): x
    ``(N, C_in, *spatial)``, w ``(C_in, C_out/groups, *kernel)``, b ``(C_out,)`` or None."""
    _check("conv_transpose", {"x": x, "w": w, "b": b})
    args, _ = _transpose_args(x, w, b, stride, padding, output_padding, dilation, groups)
    with _launch("conv_transpose"), ieee_float32():
        return _native.conv_transpose_forward(x, w, b, *args, _groups("conv_transpose", groups))


def conv_transpose_backward(
    g: Tensor,
    x: Tensor,
    w: Tensor,
    b: Tensor | None = None,
    *,
    out: Tensor,
    stride: IntOrTuple = 1,
    padding: IntOrTuple = 0,
    output_padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
    groups: int = 1,
) -> Grads:
    """``(dx, dw, db)``; None for an absent bias."""
    _check("conv_transpose", {"g": g, "x": x, "w": w, "b": b, "out": out}, same_shape=(("g", "out"),))
    args, shape = _transpose_args(x, w, b, stride, padding, output_padding, dilation, groups)
    relations.check_cotangent("conv_transpose", g, shape)
    with _launch("conv_transpose"), ieee_float32():
        return _grads(
            _native.conv_transpose_backward(g, x, w, b, out, *args, _groups("conv_transpose", groups))
        )


# --------------------------------------------------------------------------------------- pooling


def _window(
    op: str,
    x: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None,
    padding: IntOrTuple,
    dilation: IntOrTuple = 1,
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    """Kernel, stride, padding and dilation per spatial axis of a pool over x ``(N, C, *spatial)``
    (PyTorch's pool rules; the 3-d average pool's input must hold the kernel unpadded), and the
    output shape."""
    if not 3 <= x.dim() <= 5:
        raise GuardError(
            f"native_cuda.{op}: x has rank {x.dim()} (accepted: (N, C, *spatial) with 1..3 spatial axes)"
        )
    guards.check_channel_first(op, x, convolution=False)
    n = x.dim() - 2
    kernel = guards.per_axis(op, "kernel_size", kernel_size, n, 1)
    steps = kernel if stride is None else guards.per_axis(op, "stride", stride, n, 1)
    pads = guards.per_axis(op, "padding", padding, n, 0)
    if any(p > k // 2 for p, k in zip(pads, kernel, strict=True)):
        raise GuardError(
            f"native_cuda.{op}: padding={padding!r} is more than half of kernel_size={kernel_size!r} "
            "(accepted: padding <= kernel_size // 2 on every spatial axis, as PyTorch pools)"
        )
    dil = guards.per_axis(op, "dilation", dilation, n, 1)
    spatial = relations.check_window(
        op, x, kernel, steps, pads, dil, pool=True, unpadded_input=op == "avg_pool" and n == 3
    )
    shape = [*(int(d) for d in x.shape[:2]), *spatial]
    return list(kernel), list(steps), list(pads), list(dil), shape


def max_pool_forward(
    x: Tensor,
    *,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Tensor:
    """N-d max pooling (``torch.nn.functional.max_pool1d/2d/3d``, floor mode): x ``(N, C, *spatial)``;
    stride defaults to kernel_size; padding is never selected; NaN propagates."""
    _check("max_pool", {"x": x})
    kernel, steps, pads, dil, _ = _window("max_pool", x, kernel_size, stride, padding, dilation)
    with _launch("max_pool"):
        return _native.max_pool_forward(x, kernel, steps, pads, dil)


def max_pool_backward(
    g: Tensor,
    x: Tensor,
    *,
    out: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
    dilation: IntOrTuple = 1,
) -> Grads:
    """``(dx,)``: each g entry routed to the element its window selected."""
    _check("max_pool", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    kernel, steps, pads, dil, shape = _window("max_pool", x, kernel_size, stride, padding, dilation)
    relations.check_cotangent("max_pool", g, shape)
    with _launch("max_pool"):
        return _grads(_native.max_pool_backward(g, x, out, kernel, steps, pads, dil))


def avg_pool_forward(
    x: Tensor, *, kernel_size: IntOrTuple, stride: IntOrTuple | None = None, padding: IntOrTuple = 0
) -> Tensor:
    """N-d average pooling with zero padding counted in the divisor (``count_include_pad=True``,
    anchor-runtime.md §4.3): x ``(N, C, *spatial)``; stride defaults to kernel_size."""
    _check("avg_pool", {"x": x})
    kernel, steps, pads, _, _ = _window("avg_pool", x, kernel_size, stride, padding)
    with _launch("avg_pool"):
        return _native.avg_pool_forward(x, kernel, steps, pads)


def avg_pool_backward(
    g: Tensor,
    x: Tensor,
    *,
    out: Tensor,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Grads:
    """``(dx,)``: ``g / prod(kernel_size)`` spread over each window."""
    _check("avg_pool", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    kernel, steps, pads, _, shape = _window("avg_pool", x, kernel_size, stride, padding)
    relations.check_cotangent("avg_pool", g, shape)
    with _launch("avg_pool"):
        return _grads(_native.avg_pool_backward(g, x, out, kernel, steps, pads))


def _beta(x: Tensor, beta: float) -> float:
    value = guards.check_finite("smooth_max_pool", "beta", beta, nonzero=True)
    if x.dtype == torch.float32 and (
        float(torch.tensor(value, dtype=torch.float32)) == 0.0
        or not math.isfinite(float(torch.tensor(value, dtype=torch.float32)))
    ):
        raise GuardError(f"native_cuda.smooth_max_pool: beta={beta!r} is not finite and nonzero in float32")
    return value


def smooth_max_pool_forward(
    x: Tensor,
    *,
    beta: float,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Tensor:
    """Smooth max pooling (own kernel): ``(1/beta) log sum exp(beta v)`` over each window's input
    cells (padding left out), computed as ``pivot + log(sum exp(beta (v - pivot))) / beta`` with
    the window max (beta > 0) or min (beta < 0) as pivot, so overflow-scale inputs stay finite.
    x ``(N, C, *spatial)``; beta finite and nonzero in x's dtype; stride defaults to kernel_size."""
    _check("smooth_max_pool", {"x": x})
    kernel, steps, pads, _, _ = _window("smooth_max_pool", x, kernel_size, stride, padding)
    value = _beta(x, beta)
    with _launch("smooth_max_pool"):
        return _native.smooth_max_pool_forward(x, kernel, steps, pads, value, _stream(x))


def smooth_max_pool_backward(
    g: Tensor,
    x: Tensor,
    *,
    out: Tensor,
    beta: float,
    kernel_size: IntOrTuple,
    stride: IntOrTuple | None = None,
    padding: IntOrTuple = 0,
) -> Grads:
    """``(dx,)``: g spread over each window with weights ``softmax(beta * window)``, from the
    recomputed window pivot and sum (one thread per input element, no atomics)."""
    _check("smooth_max_pool", {"g": g, "x": x, "out": out}, same_shape=(("g", "out"),))
    kernel, steps, pads, _, shape = _window("smooth_max_pool", x, kernel_size, stride, padding)
    relations.check_cotangent("smooth_max_pool", g, shape)
    value = _beta(x, beta)
    with _launch("smooth_max_pool"):
        return _grads(_native.smooth_max_pool_backward(g, x, out, kernel, steps, pads, value, _stream(x)))


# ------------------------------------------------------------------------- spectral and sequence


def fft_fno_forward(x: Tensor, weight_real: Tensor, weight_imag: Tensor) -> Tensor:
    """1-D FNO spectral convolution over the packed real FFT (anchor-runtime.md §8.3): x
    ``(B, C_in, n)``, weights ``(modes, C_in, C_out)`` with ``1 <= modes <= n/2 + 1``;
    ``irfft(Y, n)`` with ``Y[b, o, m] = sum_i rfft(x)[b, i, m] (W_re + i W_im)[m, i, o]`` for
    ``m < modes`` and 0 above. Returns ``(B, C_out, n)``."""
    _check(
        "fft_fno",
        {"x": x, "weight_real": weight_real, "weight_imag": weight_imag},
        ranks={"x": (3, 3), "weight_real": (3, 3)},
        same_shape=(("weight_real", "weight_imag"),),
    )
    relations.check_fft_fno_operands(x, weight_real)
    with _launch("fft_fno"), ieee_float32():
        return _native.fft_fno_forward(x, weight_real, weight_imag)


def fft_fno_backward(g: Tensor, x: Tensor, weight_real: Tensor, weight_imag: Tensor, *, out: Tensor) -> Grads:
    """``(dx, dweight_real, dweight_imag)`` through the half-spectrum adjoints
    ``irfft^T g = (w/n) rfft(g)`` and ``rfft^T G = n irfft(G / w)`` (w = 1 at DC and Nyquist, else 2;
    the DC/Nyquist imaginary parts do not affect the inverse and get zero gradient)."""
    _check(
        "fft_fno",
        {"g": g, "x": x, "weight_real": weight_real, "weight_imag": weight_imag, "out": out},
        ranks={"x": (3, 3), "weight_real": (3, 3)},
        same_shape=(("weight_real", "weight_imag"), ("g", "out")),
    )
    relations.check_fft_fno_operands(x, weight_real)
    relations.check_cotangent("fft_fno", g, (x.shape[0], weight_real.shape[2], x.shape[2]))
    with _launch("fft_fno"), ieee_float32():
        return _grads(_native.fft_fno_backward(g, x, weight_real, weight_imag, out))


def selective_scan_forward(a: Tensor, b: Tensor, x: Tensor, h0: Tensor) -> Tensor:
    """Diagonal selective scan (anchor-runtime.md §8.2, own kernel): ``h_t = A(_t) * h_{t-1} +
    B(_t) * x_t`` for x ``(..., L, S)``, h0 ``(..., S)``, and A, B both ``(S,)`` (shared over time
    and batch) or both of x's shape (token-dependent). Returns every state, x's shape (h0 not
    included)."""
    _check(
        "selective_scan",
        {"a": a, "b": b, "x": x, "h0": h0},
        ranks={"x": (2, _MAX_RANK)},
        same_shape=(("a", "b"),),
    )
    relations.check_selective_scan_operands(a, x, h0)
    with _launch("selective_scan"):
        return _native.selective_scan_forward(a, b, x, h0, _stream(x))


def selective_scan_backward(g: Tensor, a: Tensor, b: Tensor, x: Tensor, h0: Tensor, *, out: Tensor) -> Grads:
    """``(dA, dB, dx, dh0)`` by the reverse recurrence ``total_t = g_t + carry``,
    ``dA_t = total_t h_{t-1}``, ``dB_t = total_t x_t``, ``dx_t = total_t B_t``,
    ``carry = total_t A_t``, ``dh0 = carry``; shared coefficients accumulate over time and batch."""
    _check(
        "selective_scan",
        {"g": g, "a": a, "b": b, "x": x, "h0": h0, "out": out},
        ranks={"x": (2, _MAX_RANK)},
        same_shape=(("a", "b"), ("g", "x"), ("out", "x")),
    )
    relations.check_selective_scan_operands(a, x, h0)
    with _launch("selective_scan"):
        return _grads(_native.selective_scan_backward(g, a, b, x, h0, out, _stream(x)))


# ------------------------------------------------------------------------ direct attention (own)


MaskLayout = tuple[int, int, int, int, int, int, int]
"""How the kernel reads a mask (``tl::AttentionShape`` in ``csrc/kernels.cuh``): batch entry ``b``
of the folded batch axis starts at ``sum_t ((b // div_t) % mod_t) * stride_t`` over two runs
``(div_t, mod_t, stride_t)``, its query row ``i`` at ``i * row_stride``; keys are contiguous."""

_NO_MASK_LAYOUT: MaskLayout = (1, 1, 0, 1, 1, 0, 0)


def _mask_layout(mask: Tensor, lead: tuple[int, ...], nq: int, nk: int) -> tuple[Tensor, MaskLayout]:
    """The mask as the kernel reads it without copying it per (batch, head): ``mask`` (bool,
    broadcastable to ``(*lead, nq, nk)``) contiguous at its own size, and its layout.

    The batch axes along which the mask varies (its extent equals the batch extent > 1) form
    runs of consecutive axes (axes of batch extent 1 continue a run; those the mask broadcasts
    over end it); a run's batch index is ``(b // div) % mod`` with ``div`` the batch extents after
    the run and ``mod`` its own, and its stride that of its last axis in the contiguous mask. A
    key-padding mask ``(B, 1, 1, n_k)`` over heads ``(B, H)`` is one run and row stride 0: ``B *
    n_k`` bytes, where materialising it was ``B * H * n_q * n_k``. A mask over the keys' axis
    broadcast (extent 1) is expanded along the keys only; a mask varying along three or more
    separated runs (rare) is materialised to the whole batch, one run."""
    rank = len(lead) + 2
    view = mask.reshape((1,) * (rank - mask.dim()) + tuple(mask.shape))
    if view.shape[-1] != nk:
        view = view.expand(*view.shape[:-1], nk)
    view = view.contiguous()
    if math.prod(lead) == 0 or nq == 0 or nk == 0:  # nothing is read (a run over an empty axis has mod 0)
        return view, _NO_MASK_LAYOUT
    runs: list[tuple[int, int, int]] = []
    axis = 0
    while axis < len(lead):
        if lead[axis] == 1 or view.shape[axis] == 1:
            axis += 1
            continue
        extent = 1
        last = axis
        while axis < len(lead) and (lead[axis] == 1 or view.shape[axis] == lead[axis]):
            extent *= lead[axis]
            if lead[axis] > 1:
                last = axis
            axis += 1
        runs.append((math.prod(lead[last + 1 :]), extent, view.stride(last)))
    row_stride = nk if view.shape[-2] == nq and nq > 1 else 0
    if len(runs) > 2:
        batch = math.prod(lead)
        view = torch.broadcast_to(view, (*lead, *view.shape[-2:])).reshape(batch, *view.shape[-2:])
        view = view.contiguous()
        runs = [(1, batch, view.stride(0))]
    runs += [(1, 1, 0)] * (2 - len(runs))
    (div0, mod0, stride0), (div1, mod1, stride1) = runs
    return view, (div0, mod0, stride0, div1, mod1, stride1, row_stride)


def _fold_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None
) -> tuple[Tensor, Tensor, Tensor, Tensor | None, MaskLayout, tuple[int, ...]]:
    """Broadcast the leading axes of q, k, v to one batch shape (torch SDPA's rule), materialise
    each operand to it (contiguous) and fold it into the kernel's batch axis; the mask keeps its
    own size, read through its layout (:func:`_mask_layout`). Returns the folded operands, the
    mask and its layout, and the batch shape."""
    _check(
        "direct_attention",
        {"q": q, "k": k, "v": v},
        ranks={"q": (2, _MAX_RANK), "k": (2, _MAX_RANK), "v": (2, _MAX_RANK)},
    )
    if mask is not None:
        guards.check_launch(
            "direct_attention", {"q": q, "mask": mask}, masks=("mask",), ranks={"mask": (0, _MAX_RANK)}
        )
    nq, d = q.shape[-2], q.shape[-1]
    nk, dv = v.shape[-2], v.shape[-1]
    relations.check_attention_widths(int(d), int(dv))  # before any operand is materialised
    if k.shape[-2] != nk or k.shape[-1] != d:
        raise GuardError(
            f"native_cuda.direct_attention: k {list(k.shape)} must be (..., n_k, d) with "
            f"n_k = {nk} (v) and d = {d} (q)"
        )
    lead = broadcast_batch((q.shape[:-2], k.shape[:-2], v.shape[:-2]))
    if lead is None:
        raise GuardError(
            f"native_cuda.direct_attention: the leading (batch, head) axes of q {list(q.shape)}, "
            f"k {list(k.shape)}, v {list(v.shape)} do not broadcast to one batch shape (accepted: "
            "leading axes that agree or have extent 1, as torch SDPA broadcasts)"
        )
    tails = [("q", (nq, d)), ("k", (nk, d)), ("v", (nk, dv)), ("out", (nq, dv))]
    if mask is not None:
        tails.append(("mask", (nq, nk)))
    for name, tail in tails:
        guards.check_element_count("direct_attention", f"{name} broadcast to", (*lead, *tail))
    batch = math.prod(lead)
    folded_mask: Tensor | None = None
    layout = _NO_MASK_LAYOUT
    if mask is not None:
        _require_broadcast("direct_attention", "mask", tuple(mask.shape), (*lead, nq, nk))
        folded_mask, layout = _mask_layout(mask, lead, nq, nk)
    return (
        expand_to_batch(q, lead).reshape(batch, nq, d),
        expand_to_batch(k, lead).reshape(batch, nk, d),
        expand_to_batch(v, lead).reshape(batch, nk, dv),
        folded_mask,
        layout,
        lead,
    )


def _scale(scale: float | None) -> float | None:
    return None if scale is None else guards.check_finite("direct_attention", "scale", scale)


def direct_attention_forward(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, scale: float | None = None
) -> tuple[Tensor, Tensor]:
    """Fused attention (own kernel, tiled FlashAttention-2 style with an online softmax; the score
    matrix is never materialised) with hard-mask zero-numerator semantics: blocked scores are
    selected away (never read, so a score that overflows there changes nothing), a fully blocked
    row gives zeros, and a row whose allowed scores are all -inf (a -inf key, or finite inputs
    whose scores overflow to -inf) gives NaN, as the reference and ``torch.softmax`` of an all
    -inf row (0 / 0); a row with only some allowed scores -inf gives them weight 0.

    q ``(..., n_q, d)``, k ``(..., n_k, d)``, v ``(..., n_k, d_v)`` whose leading axes broadcast
    to one batch shape ``batch`` (torch SDPA's rule; each operand is materialised to it, contiguous,
    and folded into the kernel's batch axis), ``d, d_v <= 256``; mask bool broadcastable to
    ``(*batch, n_q, n_k)`` (True = allowed; read at its own size, never copied per batch entry:
    a key-padding mask ``(B, 1, 1, n_k)`` stays ``B * n_k`` bytes) or None; scale finite, default
    ``1/sqrt(d)`` (1 when d = 0). Returns ``(out (*batch, n_q, d_v), lse (*batch, n_q))`` with lse
    the row logsumexp of the scaled allowed scores (-inf on fully blocked rows, NaN on rows whose
    allowed scores are all -inf, so that their gradients are NaN as the reference's), saved for
    the backward.

    Tiles: each kernel (this forward, and the backward's two) takes 32 query rows (keys) per
    block, or 8 where the device's shared memory per block cannot hold the larger tile (on a
    227 KiB H100/H200 only the float64 backward with ``d + d_v > 452`` needs it; smaller GPUs
    sooner), and skips every tile of 32 keys (queries) in which the mask allows no pair (a causal
    mask: about half of them); such a tile adds nothing to any result. Raises ``GuardError``
    (before any launch) when even the smaller tile of the *backward* does not fit, so that a
    forward is never accepted whose backward cannot run; the message names the bytes needed and
    allowed and the largest ``d + d_v`` that fits.
    """
    fq, fk, fv, fmask, layout, lead = _fold_attention(q, k, v, mask)
    with _launch("direct_attention"):
        out, lse = _native.direct_attention_forward(fq, fk, fv, fmask, layout, _scale(scale), _stream(q))
    return out.reshape(*lead, q.shape[-2], v.shape[-1]), lse.reshape(*lead, q.shape[-2])


def direct_attention_backward(
    g: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    out: Tensor,
    lse: Tensor,
    scale: float | None = None,
) -> Grads:
    """``(dq, dk, dv, None)`` from the saved row logsumexp (FlashAttention-2 backward: dQ per query
    tile, dK/dV per key tile, deterministic): ``p = exp(scale q.k - lse)`` on allowed entries,
    ``ds = p (g.v - g.out)``, ``dq = scale ds k``, ``dk = scale ds^T q``, ``dv = p^T g``. Blocked
    entries contribute exactly 0 and a fully blocked row's (even non-finite) cotangent is never
    read; a NaN lse (a row whose allowed scores are all -inf) makes that row's p NaN, so NaN
    reaches dq of the row and dk, dv of the keys it may attend, as in the reference. g, out
    ``(*batch, n_q, d_v)`` and lse ``(*batch, n_q)`` are over the broadcast batch shape; each
    gradient is summed back to its operand's shape over the broadcast axes (on the
    device, in an implementation-defined order)."""
    fq, fk, fv, fmask, layout, lead = _fold_attention(q, k, v, mask)
    nq, dv = q.shape[-2], v.shape[-1]
    _check("direct_attention", {"g": g, "out": out, "lse": lse, "q": q}, same_shape=(("g", "out"),))
    if tuple(g.shape) != (*lead, nq, dv) or tuple(lse.shape) != (*lead, nq):
        raise GuardError(
            f"native_cuda.direct_attention: g {list(g.shape)} and lse {list(lse.shape)} must be "
            f"{[*lead, nq, dv]} and {[*lead, nq]}"
        )
    batch = math.prod(lead)
    with _launch("direct_attention"):
        grads = _native.direct_attention_backward(
            g.reshape(batch, nq, dv),
            fq,
            fk,
            fv,
            fmask,
            layout,
            out.reshape(batch, nq, dv),
            lse.reshape(batch, nq),
            _scale(scale),
            _stream(q),
        )
    dq, dk, dvv = grads[0], grads[1], grads[2]
    if dq is None or dk is None or dvv is None:
        raise extension.NativeKernelError("native_cuda.direct_attention: the extension returned no gradient")
    return (
        sum_to_shape(dq.reshape(*lead, nq, q.shape[-1]), tuple(q.shape)),
        sum_to_shape(dk.reshape(*lead, *k.shape[-2:]), tuple(k.shape)),
        sum_to_shape(dvv.reshape(*lead, *v.shape[-2:]), tuple(v.shape)),
        None,
    )


@dataclass(frozen=True, slots=True)
class _Saved:
    """A forward's row logsumexp with what produced it: weak references to its operands (a
    reference to the operand's own object, so a new tensor with equal values does not match),
    their version counters (an in-place update invalidates the entry) and the scale."""

    lse: Tensor
    operands: tuple[weakref.ref[Tensor] | None, ...]
    versions: tuple[int | None, ...]
    scale: float | None

    def produced(self, operands: tuple[Tensor | None, ...], scale: float | None) -> bool:
        """Whether ``operands`` (q, k, v, mask, out) are the very objects, unchanged since, that
        the forward read and wrote, with the same ``scale``."""
        if scale != self.scale or len(operands) != len(self.operands):
            return False
        for tensor, ref, version in zip(operands, self.operands, self.versions, strict=True):
            if tensor is None or ref is None:
                if tensor is not None or ref is not None:
                    return False
            elif ref() is not tensor or tensor._version != version:
                return False
        return True


def _identity(
    operands: tuple[Tensor | None, ...],
) -> tuple[tuple[weakref.ref[Tensor] | None, ...], tuple[int | None, ...]]:
    refs = tuple(None if t is None else weakref.ref(t) for t in operands)
    versions = tuple(None if t is None else t._version for t in operands)
    return refs, versions


class _RowStatistics:
    """The logsumexp saved by :func:`direct_attention` for each live output tensor, together with
    the identity of the inputs it belongs to: a VJP asked about the same ``out`` but other inputs
    (another ``q``, a changed mask or scale, an operand updated in place) must not reuse it."""

    def __init__(self) -> None:
        self._saved: dict[int, _Saved] = {}

    def save(
        self,
        out: Tensor,
        lse: Tensor,
        inputs: tuple[Tensor, Tensor, Tensor, Tensor | None],
        scale: float | None,
    ) -> None:
        key = id(out)
        refs, versions = _identity((*inputs, out))
        self._saved[key] = _Saved(lse, refs, versions, scale)
        weakref.finalize(out, self._saved.pop, key, None)

    def get(
        self, out: Tensor, inputs: tuple[Tensor, Tensor, Tensor, Tensor | None], scale: float | None
    ) -> Tensor | None:
        """The saved logsumexp when ``out`` came from :func:`direct_attention` on exactly these
        ``inputs`` (q, k, v, mask: the same objects, not updated since) and ``scale``; else None."""
        saved = self._saved.get(id(out))
        if saved is None or not saved.produced((*inputs, out), scale):
            return None
        return saved.lse


_row_statistics = _RowStatistics()


def direct_attention(
    q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, scale: float | None = None
) -> Tensor:
    """:func:`direct_attention_forward` in the reference convention (returns only the output); the
    row logsumexp stays attached to the returned tensor, with the identity of q, k, v, mask and
    scale, for :func:`direct_attention_vjp`."""
    out, lse = direct_attention_forward(q, k, v, mask, scale=scale)
    _row_statistics.save(out, lse, (q, k, v, mask), scale)
    return out


def saved_logsumexp(
    out: Tensor, q: Tensor, k: Tensor, v: Tensor, mask: Tensor | None = None, *, scale: float | None = None
) -> Tensor | None:
    """The row logsumexp ``(*batch, n_q)`` that :func:`direct_attention` saved with ``out`` for
    these very ``q``, ``k``, ``v``, ``mask`` objects (unchanged since) and ``scale`` — the tensor
    :func:`direct_attention_vjp` reads — or None when ``out`` did not come from there with them."""
    return _row_statistics.get(out, (q, k, v, mask), scale)


def direct_attention_vjp(
    g: Tensor,
    q: Tensor,
    k: Tensor,
    v: Tensor,
    mask: Tensor | None = None,
    *,
    out: Tensor,
    scale: float | None = None,
) -> Grads:
    """:func:`direct_attention_backward` in the reference convention: uses the logsumexp saved
    with ``out`` by :func:`direct_attention` when ``out`` came from there with these very ``q``,
    ``k``, ``v``, ``mask`` objects (unchanged since: same version counters) and this ``scale``;
    otherwise recomputes it by running the forward kernel on the given inputs."""
    lse = saved_logsumexp(out, q, k, v, mask, scale=scale)
    if lse is None:
        lse = direct_attention_forward(q, k, v, mask, scale=scale)[1]
    return direct_attention_backward(g, q, k, v, mask, out=out, lse=lse, scale=scale)
