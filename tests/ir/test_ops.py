"""OpKind facts: tags, arities, BackendOp mapping (anchor-backend.md §2.7) and describe() renderings."""

from __future__ import annotations

import numpy as np
import pytest

from torchlean.backend.vocabulary import BackendOp
from torchlean.ir import ops
from torchlean.ir.errors import IRError

WINDOW = ops.WindowConfig.make(2)
CONV = ops.ConvConfig(1, 4, (3, 3), padding=(1, 1), channel_axis=1)
MASK = ops.HardMask.from_array(np.array([[True, False], [True, True]]))

# (kind, tag, (min, max), backend op) — every kind of the E2/E3 set plus the torchlean extensions.
TABLE: list[tuple[ops.OpKind, str, tuple[int, int | None], BackendOp | None]] = [
    (ops.Input(), "input", (0, 0), None),
    (ops.Const((2, 3)), "const", (0, 0), None),
    (ops.Detach(), "detach", (1, 1), None),
    (ops.RandUniform(3), "rand_uniform", (0, 0), BackendOp.RAND_UNIFORM),
    (ops.BernoulliMask(3), "bernoulli_mask", (1, 1), BackendOp.BERNOULLI_MASK),
    (ops.Add(), "add", (2, 2), BackendOp.ADD),
    (ops.Sub(), "sub", (2, 2), BackendOp.SUB),
    (ops.MulElem(), "mul_elem", (2, 2), BackendOp.MUL),
    (ops.MaxElem(), "max_elem", (2, 2), BackendOp.MAX),
    (ops.MinElem(), "min_elem", (2, 2), BackendOp.MIN),
    (ops.Abs(), "abs", (1, 1), BackendOp.ABS),
    (ops.Sqrt(), "sqrt", (1, 1), BackendOp.SQRT),
    (ops.Inv(), "inv", (1, 1), BackendOp.INV),
    (ops.Relu(), "relu", (1, 1), BackendOp.RELU),
    (ops.Tanh(), "tanh", (1, 1), BackendOp.TANH),
    (ops.Sigmoid(), "sigmoid", (1, 1), BackendOp.SIGMOID),
    (ops.Softplus(), "softplus", (1, 1), BackendOp.SOFTPLUS),
    (ops.SafeLog(), "safe_log", (2, 2), BackendOp.SAFE_LOG),
    (ops.Exp(), "exp", (1, 1), BackendOp.EXP),
    (ops.Log(), "log", (1, 1), BackendOp.LOG),
    (ops.Sin(), "sin", (1, 1), BackendOp.SIN),
    (ops.Cos(), "cos", (1, 1), BackendOp.COS),
    (ops.MseLoss(), "mse_loss", (2, 2), BackendOp.MSE_LOSS),
    (ops.Matmul(), "matmul", (2, 2), BackendOp.MATMUL),
    (ops.Linear(), "linear", (1, 1), BackendOp.LINEAR),
    (ops.Conv(CONV), "conv", (1, 1), BackendOp.CONV),
    (ops.MaxPool(WINDOW), "max_pool", (1, 1), BackendOp.MAX_POOL),
    (ops.AvgPool(WINDOW), "avg_pool", (1, 1), BackendOp.AVG_POOL),
    (ops.BroadcastTo((8,), (1, 8)), "broadcast_to", (1, 1), BackendOp.BROADCAST),
    (ops.ReduceSum(0), "reduce_sum", (1, 1), BackendOp.REDUCE_SUM),
    (ops.ReduceMean(0), "reduce_mean", (1, 1), BackendOp.REDUCE_MEAN),
    (ops.Sum(), "sum", (1, 1), BackendOp.REDUCE_SUM),
    (ops.Softmax(1), "softmax", (1, 1), BackendOp.SOFTMAX),
    (ops.HardMaskedSoftmax(MASK), "hard_masked_softmax", (1, 1), BackendOp.HARD_MASKED_SOFTMAX),
    (ops.LayerNorm(1), "layernorm", (1, 1), BackendOp.LAYER_NORM),
    (ops.Reshape((4,), (1, 4)), "reshape", (1, 1), BackendOp.RESHAPE),
    (ops.Flatten((2, 2)), "flatten", (1, 1), BackendOp.RESHAPE),
    (ops.Concat(0), "concat", (2, None), BackendOp.CONCAT),
    (ops.Transpose(0, 1), "transpose", (1, 1), BackendOp.PERMUTE),
    (ops.Permute((1, 0)), "permute", (1, 1), BackendOp.PERMUTE),
    (ops.BatchNormEval(1, 4), "batch_norm_eval", (1, 1), BackendOp.BATCH_NORM),
    # torchlean extensions
    (ops.Gelu(), "gelu", (1, 1), BackendOp.GELU),
    (ops.LogSoftmax(1), "log_softmax", (1, 1), BackendOp.LOG_SOFTMAX),
    (ops.Scale(0.5), "scale", (1, 1), BackendOp.SCALE),
    (
        ops.ScaledDotProductAttention(),
        "scaled_dot_product_attention",
        (3, 3),
        BackendOp.SCALED_DOT_PRODUCT_ATTENTION,
    ),
    (ops.BatchNormTrain(1, 4), "batch_norm_train", (1, 1), BackendOp.BATCH_NORM),
    (ops.Gather(0), "gather", (2, 2), BackendOp.GATHER),
    (ops.LinearOf(), "linear_of", (2, 3), BackendOp.LINEAR),
]
EXTENSIONS = {
    "gelu", "log_softmax", "scale", "scaled_dot_product_attention", "batch_norm_train", "gather", "linear_of"
}


@pytest.mark.parametrize(("kind", "tag", "arity", "op"), TABLE, ids=[row[1] for row in TABLE])
def test_kind_facts(kind: ops.OpKind, tag: str, arity: tuple[int, int | None], op: BackendOp | None) -> None:
    assert kind.tag == tag
    assert kind.arity == arity
    assert kind.backend_op is op
    assert kind.extension is (tag in EXTENSIONS)


def test_table_covers_every_kind() -> None:
    kinds = {cls for cls in vars(ops).values() if isinstance(cls, type) and issubclass(cls, ops.OpKind)}
    kinds.discard(ops.OpKind)
    assert kinds == {type(row[0]) for row in TABLE}
    assert len(TABLE) == 41 + len(EXTENSIONS)


@pytest.mark.parametrize(
    ("kind", "text"),
    [
        (ops.Reshape((4,), (1, 4)), "reshape [4] [1, 4]"),
        (ops.Reshape((1, 1), (1,)), "reshape [1, 1] [1]"),
        (ops.Transpose(0, 1), "transpose 0 1"),
        (ops.Matmul(), "matmul"),
        (ops.BroadcastTo((8,), (1, 8)), "broadcast_to [8] [1, 8]"),
        (ops.Relu(), "relu"),
        (ops.Input(), "input"),
        (ops.Const((8, 4)), "const [8, 4]"),
        (ops.Const(()), "const []"),
        (ops.Permute((2, 0, 1)), "permute [2, 0, 1]"),
        (ops.RandUniform(7), "rand_uniform 7"),
        (ops.BatchNormEval(1, 16), "batch_norm_eval 1 16"),
        (ops.BatchNormTrain(1, 16), "batch_norm_train 1 16"),
        (ops.Gather(1), "gather 1"),
        (ops.Softmax(2), "softmax 2"),
        (ops.Flatten((2, 3)), "flatten [2, 3]"),
        (ops.Concat(1), "concat 1"),
        (ops.MulElem(), "mul_elem"),
        (ops.Scale(0.25), "scale 0.25"),
        (ops.MaxPool(WINDOW), "max_pool {kernel=[2, 2], stride=[2, 2], padding=[0, 0]}"),
        (ops.HardMaskedSoftmax(MASK), "hard_masked_softmax {shape=[2, 2], allowed=[1, 0, 1, 1]}"),
        (
            ops.Conv(CONV),
            "conv {in_channels=1, out_channels=4, kernel=[3, 3], stride=[1, 1], padding=[1, 1], "
            "dilation=[1, 1], padding_after=[1, 1], groups=1, channel_axis=1}",
        ),
        (
            ops.ScaledDotProductAttention(causal="lower_right"),
            "scaled_dot_product_attention {mask=none, causal=lower_right, scale=none}",
        ),
    ],
)
def test_describe(kind: ops.OpKind, text: str) -> None:
    assert kind.describe() == text
    assert str(kind) == text


def test_kinds_compare_by_class_and_parameters() -> None:
    assert ops.Transpose(0, 1) == ops.Transpose(0, 1)
    assert ops.Transpose(0, 1) != ops.Transpose(1, 0)
    add: ops.OpKind = ops.Add()
    assert add != ops.Sub()
    assert hash(ops.Reshape([4], [1, 4])) == hash(ops.Reshape((4,), (1, 4)))  # type: ignore[arg-type]
    with pytest.raises(AttributeError):
        ops.Transpose(0, 1).axis1 = 2  # type: ignore[misc]


@pytest.mark.parametrize(
    ("build", "message"),
    [
        (lambda: ops.Transpose(-1, 0), "transpose axis: expected a non-negative integer, got -1"),
        (
            lambda: ops.Reshape((4,), "ab"),  # type: ignore[arg-type]
            "reshape: expected a sequence of non-negative integers, got 'ab'",
        ),
        (lambda: ops.RandUniform(True), "rand_uniform seed: expected a non-negative integer, got True"),
        (lambda: ops.Scale("x"), "scale: expected a real factor, got 'x'"),  # type: ignore[arg-type]
        (
            lambda: ops.WindowConfig((2, 2), (0, 1), (0, 0)),
            "window config: kernel and stride must be positive",
        ),
        (
            lambda: ops.WindowConfig((2, 2), (1,), (0, 0)),
            "window config: kernel, stride and padding need one",
        ),
        (lambda: ops.ConvConfig(3, 4, (3,), groups=2), "conv config: groups=2 must be positive and divide"),
        (
            lambda: ops.HardMask((2, 2), (True,)),
            r"hard mask: 1 entries do not fill shape \[2, 2\] \(4 elements\)",
        ),
        (
            lambda: ops.HardMask.from_array(np.ones((2, 2))),
            "hard mask: expected a boolean array, got dtype float64",
        ),
        (
            lambda: ops.ScaledDotProductAttention(causal="upper"),
            "scaled_dot_product_attention: unknown causal alignment 'upper' "
            r"\(accepted: upper_left \| lower_right\)",
        ),
    ],
)
def test_bad_parameters(build: object, message: str) -> None:
    with pytest.raises(IRError, match=message):
        build()  # type: ignore[operator]


def test_conv_config_defaults() -> None:
    config = ops.ConvConfig(2, 4, (3, 3), padding=(1, 2))
    assert config.stride == (1, 1)
    assert config.dilation == (1, 1)
    assert config.padding_after == (1, 2)
    assert config.weight_shape == (4, 2, 3, 3)
    assert ops.ConvConfig(4, 4, (3,), groups=2).weight_shape == (4, 2, 3)


def test_hard_mask_round_trip() -> None:
    array = np.array([[True, False, True], [False, False, True]])
    mask = ops.HardMask.from_array(array)
    assert mask.shape == (2, 3)
    assert np.array_equal(mask.to_array(), array)


# ------------------------------- refused up front with the kernels' wording (review 18, F7)

_PAD = "(accepted: padding <= kernel // 2 on every spatial axis, as PyTorch pools)"


@pytest.mark.parametrize(
    ("kernel", "padding", "message"),
    [
        ((2, 2), (2, 2), f"window config: padding=[2, 2] is more than half of kernel=[2, 2] {_PAD}"),
        ((3, 2), (1, 2), f"window config: padding=[1, 2] is more than half of kernel=[3, 2] {_PAD}"),
        ((1,), (1,), f"window config: padding=[1] is more than half of kernel=[1] {_PAD}"),
    ],
)
def test_window_padding_over_half_the_kernel_is_refused(
    kernel: tuple[int, ...], padding: tuple[int, ...], message: str
) -> None:
    with pytest.raises(IRError) as info:
        ops.WindowConfig(kernel, kernel, padding)
    assert str(info.value) == message


def test_window_padding_of_half_the_kernel_is_accepted_as_torch() -> None:
    torch = pytest.importorskip("torch")
    x = torch.zeros(1, 1, 5, 5)
    for kernel, padding in (((2, 2), (1, 1)), ((3, 2), (1, 0)), ((5, 3), (2, 1))):
        window = ops.WindowConfig(kernel, (1, 1), padding)
        assert window.padding == padding
        torch.nn.functional.max_pool2d(x, kernel, 1, padding)  # torch accepts the same
    with pytest.raises(RuntimeError, match="pad should be at most half"):
        torch.nn.functional.max_pool2d(x, (2, 2), 1, (2, 2))


@pytest.mark.parametrize(
    ("factor", "shown"),
    [
        (float("nan"), "nan"),
        (float("inf"), "inf"),
        (-float("inf"), "-inf"),
        (np.float32("nan"), "nan"),
        (10**400, "inf"),
    ],
)
def test_scale_refuses_a_factor_that_is_not_finite(factor: float, shown: str) -> None:
    with pytest.raises(IRError) as info:
        ops.Scale(factor)
    assert str(info.value) == f"scale: factor = {shown} is not accepted (accepted: a finite real number)"


def test_scale_refusal_is_the_kernels_wording() -> None:
    from torchlean.backend.errors import GuardError
    from torchlean.backend.providers.reference import kernels

    with pytest.raises(GuardError) as kernel:
        kernels.scale(np.ones(2), factor=float("nan"))
    with pytest.raises(IRError) as ir:
        ops.Scale(float("nan"))
    assert str(ir.value) == str(kernel.value)
    assert ops.Scale(np.int64(3)).factor == 3.0


def test_attention_refuses_a_scale_that_is_not_finite() -> None:
    with pytest.raises(IRError) as info:
        ops.ScaledDotProductAttention(scale=float("inf"))
    assert str(info.value) == (
        "scaled_dot_product_attention: scale = inf is not accepted (accepted: a finite real number)"
    )


def test_attention_takes_a_numpy_integer_scale_as_scale_does() -> None:
    assert ops.ScaledDotProductAttention(scale=np.int64(2)).scale == 2.0
    assert type(ops.ScaledDotProductAttention(scale=np.int64(2)).scale) is float
    with pytest.raises(IRError, match=r"^scaled_dot_product_attention: expected a real scale, got np.True_$"):
        ops.ScaledDotProductAttention(scale=np.True_)  # type: ignore[arg-type]


def test_conv_config_refuses_out_channels_that_groups_does_not_divide() -> None:
    """As ``torch.nn.Conv1d(2, 3, 1, groups=2)`` (review20 mut I2: only the in_channels half was tested)."""
    import torch

    from torchlean.ir.errors import IRError
    from torchlean.ir.ops import ConvConfig

    with pytest.raises(ValueError, match="out_channels must be divisible by groups"):
        torch.nn.Conv1d(2, 3, 1, groups=2)
    with pytest.raises(IRError, match="divide in_channels=2 and out_channels=3"):
        ConvConfig(2, 3, (1,), groups=2)
