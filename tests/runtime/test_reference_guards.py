"""Runtime guards of the reference kernels (the capsules' ``runtimeGuard`` evidence).

Checks that (1) every non-spatial reference op label has a guard ``check_<label>`` and a kernel
(plus ``<label>_vjp`` when differentiable); (2) each kernel and VJP calls its guard before
computing, and ``check_canonical_layout`` once per array input; (3) each refusal raises
:class:`GuardError` with a message naming the offending value and what is accepted.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np
import pytest
import torch

import torchlean as tl
from torchlean.backend.errors import GuardError, TorchLeanError
from torchlean.backend.providers.reference import guards
from torchlean.backend.providers.reference import kernels as K
from torchlean.backend.vocabulary import BackendOp

Array = np.ndarray[Any, Any]

SPATIAL = {"layer_norm", "batch_norm", "conv", "conv_transpose", "max_pool", "smooth_max_pool", "avg_pool"}
NO_REFERENCE = {"fft_fno", "selective_scan"}
LABELS = [op.label for op in BackendOp if op.label not in SPATIAL | NO_REFERENCE]


def _x(*shape: int) -> Array:
    return np.arange(float(np.prod(shape))).reshape(shape) / 7 + 0.5


IDX = np.array([[0, 1], [1, 0]], dtype=np.int64)
MASK = np.array([[True, False, True], [False, False, True]])

# label -> (positional inputs, params, number of array inputs)
SAMPLES: dict[str, tuple[tuple[Any, ...], dict[str, Any]]] = {
    "add": ((_x(2, 3), _x(3)), {}),
    "sub": ((_x(2, 3), _x(3)), {}),
    "mul": ((_x(2, 3), _x(3)), {}),
    "scale": ((_x(2, 3),), {"factor": 2.0}),
    "abs": ((_x(2, 3),), {}),
    "sqrt": ((_x(2, 3),), {}),
    "clamp": ((_x(2, 3),), {"lo": 0.0, "hi": 1.0}),
    "max": ((_x(2, 3), _x(3)), {}),
    "min": ((_x(2, 3), _x(3)), {}),
    "relu": ((_x(2, 3),), {}),
    "gelu": ((_x(2, 3),), {}),
    "sigmoid": ((_x(2, 3),), {}),
    "tanh": ((_x(2, 3),), {}),
    "softplus": ((_x(2, 3),), {}),
    "exp": ((_x(2, 3),), {}),
    "log": ((_x(2, 3),), {}),
    "sin": ((_x(2, 3),), {}),
    "cos": ((_x(2, 3),), {}),
    "inv": ((_x(2, 3),), {}),
    "safe_log": ((_x(2, 3),), {"eps": 1e-6}),
    "log_softmax": ((_x(2, 3),), {"axis": -1}),
    "softmax": ((_x(2, 3),), {"axis": 0}),
    "hard_masked_softmax": ((_x(2, 3), MASK), {"axis": -1}),
    "reduce_sum": ((_x(2, 3),), {"axis": 1, "keepdims": False}),
    "reduce_mean": ((_x(2, 3),), {"axis": None, "keepdims": True}),
    "reshape": ((_x(2, 3),), {"shape": (3, 2)}),
    "permute": ((_x(2, 3),), {"perm": (1, 0)}),
    "broadcast": ((_x(3),), {"shape": (2, 3)}),
    "concat": ((_x(2, 3), _x(1, 3)), {"axis": 0}),
    "slice": ((_x(2, 3),), {"starts": (0, 1), "stops": (2, 3)}),
    "gather": ((_x(2, 3), IDX), {"axis": 1}),
    "scatter_add": ((_x(2, 3), IDX, _x(2, 2)), {"axis": 1}),
    "matmul": ((_x(2, 3), _x(3, 4)), {}),
    "linear": ((_x(2, 3), _x(4, 3), _x(4)), {}),
    "mse_loss": ((_x(2, 3), _x(2, 3) * 2), {}),
    "rand_uniform": ((), {"shape": (2, 3), "seed": 1, "counter": 0}),
    "bernoulli_mask": ((), {"shape": (2, 3), "keep_prob": 0.5, "seed": 1, "counter": 0}),
    "scaled_dot_product_attention": ((_x(2, 3), _x(3, 3), _x(3, 2), MASK), {}),
}


class _GuardCalled(Exception):
    pass


def test_reference_guards_and_kernels_exist_for_every_non_spatial_reference_op() -> None:
    assert set(SAMPLES) == set(LABELS)
    assert len(LABELS) == 38
    for label in LABELS:
        assert callable(getattr(guards, f"check_{label}")), label
        assert callable(getattr(K, label)), label
        differentiable = BackendOp.parse(label).requires_vjp
        assert hasattr(K, f"{label}_vjp") == differentiable, label
    assert callable(guards.check_canonical_layout)


@pytest.mark.parametrize("label", LABELS)
def test_reference_kernel_calls_its_guard_first(label: str, monkeypatch: pytest.MonkeyPatch) -> None:
    args, params = SAMPLES[label]

    def spy(*_a: Any, **_k: Any) -> Any:
        raise _GuardCalled(label)

    monkeypatch.setattr(guards, f"check_{label}", spy)
    with pytest.raises(_GuardCalled):
        getattr(K, label)(*args, **params)
    vjp = getattr(K, f"{label}_vjp", None)
    if vjp is not None:
        monkeypatch.undo()
        out = getattr(K, label)(*args, **params)
        monkeypatch.setattr(guards, f"check_{label}", spy)
        with pytest.raises(_GuardCalled):
            vjp(np.ones_like(out), *args, out=out, **params)


@pytest.mark.parametrize("label", LABELS)
def test_reference_kernel_checks_canonical_layout_of_every_array_input(
    label: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    args, params = SAMPLES[label]
    seen: list[str] = []
    original = guards.check_canonical_layout

    def spy(x: object, *, op: str, name: str, role: guards.Role = "float") -> Array:
        assert op == label
        seen.append(name)
        return original(x, op=op, name=name, role=role)

    monkeypatch.setattr(guards, "check_canonical_layout", spy)
    getattr(K, label)(*args, **params)
    if label in ("rand_uniform", "bernoulli_mask"):  # sources: the array they produce
        assert seen == ["out"]
    else:
        assert len(seen) == sum(isinstance(a, np.ndarray) for a in args)


def _refused(fn: Callable[[], object], *fragments: str) -> str:
    with pytest.raises(GuardError) as info:
        fn()
    message = str(info.value)
    assert isinstance(info.value, TorchLeanError)
    for fragment in fragments:
        assert fragment in message, message
    return message


# ------------------------------------------------------------------------------- canonical layout


def test_check_canonical_layout_refuses_non_arrays_and_other_dtypes() -> None:
    _refused(lambda: K.add([1.0], np.ones(1)), "add: operand a must be a numpy.ndarray", "got list")
    _refused(
        lambda: K.exp(np.ones(2, dtype=np.int32)),
        "exp: input x has dtype int32",
        "accepted: float32 or float64",
    )
    _refused(lambda: K.exp(np.ones(2, dtype=np.float16)), "dtype float16", "accepted: float32 or float64")
    _refused(lambda: K.relu(np.float64(1.0)), "relu: input x must be a numpy.ndarray", "got float64")
    _refused(
        lambda: K.gather(np.ones((2, 2)), IDX.astype(np.int32), axis=0),
        "gather: index has dtype int32",
        "accepted: int64",
    )


@pytest.mark.parametrize("label", ["add", "sub", "mul", "max", "min", "matmul", "mse_loss"])
def test_binary_guards_refuse_dtype_mismatch_without_promotion(label: str) -> None:
    a, b = np.ones((2, 2)), np.ones((2, 2), dtype=np.float32)
    _refused(lambda: getattr(K, label)(a, b), f"{label}: ", "dtype float32", "do not promote")


@pytest.mark.parametrize(
    "label",
    ["abs", "sqrt", "relu", "gelu", "sigmoid", "tanh", "softplus", "exp", "log", "sin", "cos", "inv"],
)
def test_unary_guards_refuse_integer_input(label: str) -> None:
    _refused(lambda: getattr(K, label)(np.ones(3, dtype=np.int64)), f"{label}: input x has dtype int64")


# ------------------------------------------------------------------------------------ broadcasting


@pytest.mark.parametrize("label", ["add", "sub", "mul", "max", "min"])
def test_check_add_family_refuses_non_broadcastable_shapes(label: str) -> None:
    _refused(
        lambda: getattr(K, label)(np.ones((2, 3)), np.ones(4)),
        f"{label}: shapes are not broadcastable: a (2, 3), b (4,)",
        "accepted: shapes that agree",
    )


def test_check_add_refuses_element_counts_that_overflow_int64() -> None:
    tall = np.broadcast_to(np.zeros((1, 1)), (2**40, 1))
    wide = np.broadcast_to(np.zeros((1, 1)), (1, 2**40))
    _refused(lambda: K.add(tall, wide), "add: broadcast result shape", "overflows int64", str(2**80))


def test_check_cotangent_refuses_wrong_cotangent_shape() -> None:
    a = np.ones((2, 3))
    _refused(lambda: K.add_vjp(np.ones((3, 2)), a, a, out=a + a), "add: cotangent has shape (3, 2)", "(2, 3)")
    _refused(
        lambda: K.exp_vjp(np.ones(2, dtype=np.float32), np.ones(2), out=np.ones(2)),
        "exp: cotangent has shape (2,) and dtype float32",
    )


def test_the_reference_only_vjps_refuse_a_bad_saved_output() -> None:
    """review149 F3: the aten comparison (test_aten_gradients.py) covers the ops both CPU providers
    have; ``hard_masked_softmax`` and ``scatter_add`` are the reference's alone. A wrong saved
    output broadcast into the masked softmax's gradient without the check."""
    x = np.array([[0.5, -1.0, 2.0], [1.0, 1.0, 1.0]])
    mask = np.array([[True, False, True], [True, True, True]])
    out = K.hard_masked_softmax(x, mask)
    base, index, src = np.zeros((2, 3)), np.array([[0, 2, 2], [1, 1, 0]]), np.ones((2, 3))
    scattered = K.scatter_add(base, index, src, axis=1)
    for bad in (np.full((1, 1), 5.0), out.astype(np.float32), np.zeros((2, 3, 1))):
        shown = (f"saved output out has shape {bad.shape} and dtype {bad.dtype}; accepted: the output's "
                 "shape (2, 3)")
        _refused(lambda bad=bad: K.hard_masked_softmax_vjp(np.ones_like(out), x, mask, out=bad),
                 f"hard_masked_softmax: {shown}")
        _refused(lambda bad=bad: K.scatter_add_vjp(np.ones((2, 3)), base, index, src, out=bad, axis=1),
                 f"scatter_add: {shown}")
    assert K.scatter_add_vjp(np.ones((2, 3)), base, index, src, out=scattered, axis=1)[1] is None


# ------------------------------------------------------------------------------- scalar parameters


def test_check_scale_refuses_non_finite_or_non_real_factor() -> None:
    _refused(lambda: K.scale(np.ones(2), factor=float("nan")), "scale: factor = nan", "finite real")
    _refused(lambda: K.scale(np.ones(2), factor=True), "scale: factor must be a real number", "bool")


def test_check_clamp_refuses_inverted_or_nan_bounds() -> None:
    _refused(
        lambda: K.clamp(np.ones(2), lo=2.0, hi=1.0), "clamp: lo = 2.0 is greater than hi = 1.0", "lo <= hi"
    )
    _refused(lambda: K.clamp(np.ones(2), lo=float("nan"), hi=1.0), "clamp: lo = nan", "not NaN")


def test_check_safe_log_refuses_non_positive_eps() -> None:
    for eps in (0.0, -0.0, -1e-3):  # refused as given, before any rounding (review24 pmut G01)
        message = _refused(lambda eps=eps: K.safe_log(np.ones(2), eps=eps))
        assert message == f"safe_log: eps = {eps!r} is not accepted (accepted: a finite eps > 0)"


# -------------------------------------------------------------------------------------------- axes


def test_check_softmax_and_check_log_softmax_refuse_bad_axes() -> None:
    _refused(
        lambda: K.softmax(np.ones((2, 3)), axis=2),
        "softmax: axis 2 is out of range for a rank-2 input",
        "[-2, 1]",
    )
    _refused(lambda: K.log_softmax(np.ones(3), axis=-2), "log_softmax: axis -2 is out of range")
    _refused(lambda: K.softmax(np.array(1.0), axis=1), "softmax: axis 1 is out of range")
    _refused(lambda: K.softmax(np.ones(3), axis=0.0), "softmax: axis must be an integer", "0.0")  # type: ignore[arg-type]


def test_check_hard_masked_softmax_refuses_float_masks_as_additive_biases() -> None:
    message = _refused(
        lambda: K.hard_masked_softmax(np.ones((2, 3)), MASK.astype(np.float32)),
        "hard_masked_softmax: mask has dtype float32; accepted: bool",
        "additive bias, not a mask",
    )
    assert "True = allowed" in message


def test_check_hard_masked_softmax_refuses_masks_that_do_not_broadcast_to_the_scores() -> None:
    _refused(
        lambda: K.hard_masked_softmax(np.ones((2, 3)), np.ones((4, 2, 3), dtype=bool)),
        "hard_masked_softmax: mask (4, 2, 3) does not broadcast to the scores' shape (2, 3)",
    )
    _refused(lambda: K.hard_masked_softmax(np.ones((2, 3)), np.ones(2, dtype=bool)), "not broadcastable")


@pytest.mark.parametrize("label", ["reduce_sum", "reduce_mean"])
def test_check_reduce_sum_and_reduce_mean_refuse_bad_axes(label: str) -> None:
    kernel = getattr(K, label)
    x = np.ones((2, 3))
    _refused(lambda: kernel(x, axis=2), f"{label}: axis 2 is out of range for a rank-2 input")
    _refused(lambda: kernel(x, axis=(0, -2)), f"{label}: axis (0, -2) repeats an axis", "distinct")
    _refused(lambda: kernel(x, axis=()), f"{label}: axis () is ambiguous", "None for all axes")
    _refused(lambda: kernel(x, axis=0, keepdims=1), f"{label}: keepdims must be a bool")


def test_check_mse_loss_refuses_broadcasting() -> None:
    _refused(
        lambda: K.mse_loss(np.ones((2, 3)), np.ones(3)),
        "mse_loss: prediction (2, 3) and target (3,) differ",
        "does not broadcast",
    )


# ------------------------------------------------------------------------------------------- views


def test_check_reshape_refuses_bad_shapes() -> None:
    x = np.ones((2, 3))
    _refused(
        lambda: K.reshape(x, shape=(4, 2)), "reshape: shape [4, 2] has 8 elements but input x (2, 3) has 6"
    )
    _refused(
        lambda: K.reshape(x, shape=(-1, -1)), "reshape: shape [-1, -1] is not accepted", "at most one -1"
    )
    _refused(lambda: K.reshape(x, shape=(-1, 4)), "reshape: cannot infer the -1 extent of shape [-1, 4]")
    _refused(lambda: K.reshape(x, shape=(2, -3)), "reshape: shape [2, -3] is not accepted")


def test_check_permute_refuses_non_permutations() -> None:
    _refused(lambda: K.permute(np.ones((2, 3)), perm=(0, 0)), "permute: perm [0, 0] is not a permutation")
    _refused(lambda: K.permute(np.ones((2, 3)), perm=(0, 2)), "permute: perm entry 2 is out of range")


def test_check_broadcast_refuses_incompatible_targets_and_overflow() -> None:
    _refused(
        lambda: K.broadcast(np.ones((2, 3)), shape=(3, 3)),
        "broadcast: input x (2, 3) cannot be broadcast to (3, 3)",
    )
    _refused(lambda: K.broadcast(np.ones((2, 3)), shape=(3,)), "cannot be broadcast to (3,)")
    _refused(lambda: K.broadcast(np.ones(1), shape=(2**32, 2**32)), "broadcast: shape", "overflows int64")
    _refused(lambda: K.broadcast(np.ones(1), shape=(-1,)), "broadcast: shape [-1] has a negative extent")


def test_check_concat_refuses_mismatched_inputs() -> None:
    _refused(lambda: K.concat(axis=0), "concat: no inputs")
    _refused(
        lambda: K.concat(np.ones((2, 3)), np.ones((2, 4)), axis=0),
        "concat: input 1 (2, 4) does not match input 0 (2, 3) outside axis 0",
    )
    _refused(lambda: K.concat(np.ones((2, 3)), np.ones(3), axis=0), "concat: input 1 (3,) does not match")
    _refused(
        lambda: K.concat(np.ones(3), np.ones(3, dtype=np.float32), axis=0),
        "concat: input 1 has dtype float32",
    )


def test_check_slice_refuses_out_of_range_bounds_and_steps() -> None:
    x = np.ones((2, 3))
    _refused(
        lambda: K.slice(x, starts=(0, 1), stops=(2, 4)),
        "slice: axis 1: start 1, stop 4 out of range for extent 3",
    )
    _refused(lambda: K.slice(x, starts=(1, 0), stops=(0, 3)), "slice: axis 0: start 1, stop 0")
    _refused(
        lambda: K.slice(x, starts=(0, 0), stops=(2, 3), steps=(1, 0)), "slice: axis 1: step 0", "step >= 1"
    )
    _refused(
        lambda: K.slice(x, starts=(0,), stops=(2, 3)), "slice: starts (0,) must give one integer per axis"
    )


def test_check_gather_refuses_out_of_range_indices_and_bad_shapes() -> None:
    x = np.ones((2, 3))
    _refused(
        lambda: K.gather(x, np.array([[0, 3]], dtype=np.int64), axis=1),
        "gather: index value 3 is out of range for extent 3 along axis 1",
        "0 <= index < 3",
    )
    _refused(
        lambda: K.gather(x, np.array([[-1]], dtype=np.int64), axis=1),
        "gather: index value -1 is out of range",
    )
    _refused(
        lambda: K.gather(x, np.zeros((3, 1), dtype=np.int64), axis=1),
        "gather: index (3, 1) does not fit input x (2, 3)",
    )
    _refused(lambda: K.gather(x, np.zeros(2, dtype=np.int64), axis=0), "gather: index (2,) does not fit")
    _refused(lambda: K.gather(x, IDX, axis=-3), "gather: axis -3 is out of range")


def test_check_scatter_add_refuses_out_of_range_indices_and_bad_shapes() -> None:
    base = np.zeros((2, 3))
    _refused(
        lambda: K.scatter_add(base, np.array([[5]], dtype=np.int64), np.ones((1, 1)), axis=1),
        "scatter_add: index value 5 is out of range for extent 3 along axis 1",
    )
    _refused(
        lambda: K.scatter_add(base, np.zeros((1, 2), dtype=np.int64), np.ones((1, 1)), axis=1),
        "scatter_add: index (1, 2) does not fit base (2, 3) and src (1, 1)",
    )
    _refused(
        lambda: K.scatter_add(base, IDX, np.ones((2, 2), dtype=np.float32), axis=1),
        "scatter_add: src has dtype float32 but base has dtype float64",
    )


def test_gather_and_scatter_add_refuse_0_d_operands_saying_how_to_run_them() -> None:
    """review153 L1, review154 L6: torch reads a 0-d operand as one element along dim 0 or -1;
    the refusal names each 0-d operand and the shape of torch's result, and the reshaped call it
    names gives torch's values (torch float64 is the oracle)."""
    how = ("0-d (accepted: operands of rank >= 1; torch reads a 0-d operand as one element along dim 0 "
           "or -1: reshape each 0-d operand to (1,) for the same values; torch's result has ")
    x1, x0 = np.array([5.0, 6.0]), np.array(5.0)
    i1, i0, zero = np.array([1], dtype=np.int64), np.array(1, np.int64), np.array(0, np.int64)
    for axis in (0, -1):
        _refused(lambda axis=axis: K.gather(x0, zero, axis=axis), f"gather: input x and index are {how}the")
        _refused(lambda axis=axis: K.gather(x1, i0, axis=axis), f"gather: index is {how}the index's shape)")
        _refused(lambda axis=axis: K.gather(x0, i1 - 1, axis=axis), f"gather: input x is {how}the index's")
        _refused(lambda axis=axis: K.scatter_add(x1, i0, np.array(1.0), axis=axis),
                 f"scatter_add: index and src are {how}base's shape)")
        _refused(lambda axis=axis: K.scatter_add(x0, zero, np.array(1.0), axis=axis),
                 f"scatter_add: base, index and src are {how}base's shape)")
    t = torch.tensor([5.0, 6.0], dtype=torch.float64)
    assert K.gather(x1, i1, axis=0).reshape(()) == t.gather(0, torch.tensor(1)).item() == 6.0
    one = torch.tensor(1.0, dtype=torch.float64)
    scattered = K.scatter_add(x1, i1, np.array([1.0]), axis=0)
    np.testing.assert_array_equal(scattered, t.scatter_add(0, torch.tensor(1), one).numpy())


# ------------------------------------------------------------------------------------ contractions


def test_check_matmul_refuses_mismatched_contractions_and_rank_zero() -> None:
    _refused(
        lambda: K.matmul(np.ones((2, 3)), np.ones((4, 2))),
        "matmul: contracted extents differ: a (2, 3) has 3, b (4, 2) has 4",
    )
    _refused(lambda: K.matmul(np.ones(3), np.ones(4)), "matmul: contracted extents differ")
    _refused(lambda: K.matmul(np.array(1.0), np.ones(3)), "matmul: operands a () and b (3,): rank-0")
    _refused(
        lambda: K.matmul(np.ones((2, 2, 3)), np.ones((3, 3, 1))),
        "matmul: shapes are not broadcastable: a batch (2,), b batch (3,)",
    )


def test_check_linear_refuses_bad_weight_and_bias() -> None:
    _refused(
        lambda: K.linear(np.ones((2, 3)), np.ones((4, 2))),
        "linear: input x (2, 3) and weight w (4, 2) do not fit",
    )
    _refused(lambda: K.linear(np.ones(3), np.ones(3)), "linear: input x (3,) and weight w (3,) do not fit")
    _refused(
        lambda: K.linear(np.ones((2, 3)), np.ones((4, 3)), np.ones(3)),
        "linear: bias b (3,) does not match weight w (4, 3)",
        "accepted: b (4,) or None",
    )
    for bias in (np.arange(4.0).reshape(4, 1), np.arange(4.0).reshape(1, 4)):  # review148 F2: 4 values
        _refused(
            lambda bias=bias: K.linear(np.ones((4, 3)), np.ones((4, 3)), bias),
            f"linear: bias b {bias.shape} does not match weight w (4, 3)",
            "accepted: b (4,) or None",
        )


def test_check_scaled_dot_product_attention_refuses_bad_inputs() -> None:
    q, k, v = np.ones((2, 3)), np.ones((4, 3)), np.ones((4, 5))
    op = "scaled_dot_product_attention: "
    _refused(lambda: K.scaled_dot_product_attention(np.ones(3), k, v), op + "query q (3,)", "rank below 2")
    _refused(
        lambda: K.scaled_dot_product_attention(q, np.ones((4, 2)), v), op + "query q (2, 3), key k (4, 2)"
    )
    _refused(lambda: K.scaled_dot_product_attention(q, k, np.ones((3, 5))), "value v (3, 5) do not fit")
    _refused(
        lambda: K.scaled_dot_product_attention(q, k, v, np.ones((2, 4))),
        op + "mask has dtype float64; accepted: bool",
        "additive bias, not a mask",
    )
    _refused(
        lambda: K.scaled_dot_product_attention(q, k, v, np.ones((3, 2, 4), dtype=bool)),
        op + "mask (3, 2, 4) does not broadcast to the scores' shape (2, 4)",
    )
    _refused(lambda: K.scaled_dot_product_attention(q, k, v, scale=float("inf")), op + "scale = inf")
    _refused(
        lambda: K.scaled_dot_product_attention(np.ones((2, 2, 3)), np.ones((3, 4, 3)), np.ones((4, 5))),
        op + "shapes are not broadcastable: q batch (2,), k batch (3,), v batch ()",
    )


# ---------------------------------------------------------------------------------- random sources


@pytest.mark.parametrize("label", ["rand_uniform", "bernoulli_mask"])
def test_check_rand_uniform_and_check_bernoulli_mask_refuse_bad_parameters(label: str) -> None:
    kernel = getattr(K, label)
    extra = {"keep_prob": 0.5} if label == "bernoulli_mask" else {}
    _refused(lambda: kernel(shape=(2,), seed=-1, counter=0, **extra), f"{label}: seed = -1 is negative")
    _refused(lambda: kernel(shape=(2,), seed=0, counter=1.5, **extra), f"{label}: counter must be an integer")
    _refused(
        lambda: kernel(shape=(2,), seed=0, counter=0, dtype=np.int32, **extra),
        f"{label}: dtype <class 'numpy.int32'> is not accepted",
        "float32 or float64",
    )
    _refused(lambda: kernel(shape=(2,), seed=0, counter=0, dtype=None, **extra), f"{label}: dtype None")
    _refused(
        lambda: kernel(shape=(2, -1), seed=0, counter=0, **extra),
        f"{label}: shape [2, -1] has a negative extent",
    )
    _refused(
        lambda: kernel(shape=(2**40, 2**40), seed=0, counter=0, **extra),
        f"{label}: shape (1099511627776, 1099511627776) has {2**80} elements, which overflows int64",
    )


def test_check_bernoulli_mask_refuses_keep_prob_outside_unit_interval() -> None:
    for bad in (1.5, -0.1):
        _refused(
            lambda bad=bad: K.bernoulli_mask(shape=(2,), keep_prob=bad, seed=0, counter=0),
            f"bernoulli_mask: keep_prob = {bad!r} is outside [0, 1]",
        )
    _refused(
        lambda: K.bernoulli_mask(shape=(2,), keep_prob=float("nan"), seed=0, counter=0),
        "bernoulli_mask: keep_prob = nan",
    )


def test_guard_messages_start_with_the_op_label() -> None:
    message = _refused(lambda: K.log(np.ones(2, dtype=np.int8)), "log: ")
    assert re.match(r"^log: input x has dtype int8", message)


@pytest.mark.parametrize(
    ("w_dtype", "b_dtype", "named"),
    [(np.float32, np.float64, "weight w"), (np.float64, np.float32, "bias b")],
)
def test_linear_names_the_operand_whose_dtype_differs_also_when_only_the_bias_does(
    w_dtype: type, b_dtype: type, named: str
) -> None:
    """The guard's same-dtype fast path must still compare the bias when the weight matches x."""
    x, w, b = np.ones((2, 3)), np.ones((4, 3), dtype=w_dtype), np.ones(4, dtype=b_dtype)
    with pytest.raises(GuardError) as info:
        guards.check_linear(x, w, b)
    assert str(info.value) == (
        f"linear: {named} has dtype float32 but input x has dtype float64; torchlean kernels do not "
        "promote dtypes, whatever the provider (accepted: operands of one dtype)"
    )


@pytest.mark.parametrize(
    ("k_shape", "v_shape", "which"),
    [
        ((2, 5, 4), (2, 5, 6), "q's d = 3 and k's d = 4 differ"),
        ((2, 5, 3), (2, 4, 6), "k's nK = 5 and v's nK = 4 differ"),
    ],
)
def test_attention_shapes_that_do_not_fit_name_the_axis(
    k_shape: tuple[int, ...], v_shape: tuple[int, ...], which: str
) -> None:
    """review193 F2: the refusal showed the three shapes without saying which axis disagrees."""
    q = tl.tensor(np.ones((2, 3, 3)))
    with pytest.raises(GuardError, match=re.escape(f"do not fit: {which} (accepted: q (..., nQ, d)")):
        tl.scaled_dot_product_attention(q, tl.tensor(np.ones(k_shape)), tl.tensor(np.ones(v_shape)))
