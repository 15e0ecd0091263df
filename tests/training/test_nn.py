"""Model builders: shapes, seeded initialisation, state round trips, error messages, and forward
values against an independent torch float64 implementation of the same layers with the same
weights (``torch.nn.functional`` and ``torch.nn`` modules; anchor-runtime.md §4.1)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from fractions import Fraction
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

from torchlean import nn
from torchlean.autograd.grad_mode import no_grad
from torchlean.autograd.session import Session
from torchlean.nn.attention import MultiHeadAttention, TransformerBlock
from torchlean.nn.eager import EagerOps
from torchlean.nn.layers import (
    Activation,
    Conv2d,
    Dropout,
    Layer,
    Linear,
    MaxPool2d,
    ParamSpec,
    Reshape,
    Sequential,
    ShapeError,
)
from torchlean.nn.model import StateError
from torchlean.tensor import Tensor


def forward(model: nn.Model, x: np.ndarray, *, profile: str = "checked_cpu") -> np.ndarray:
    """The model's eager forward value on a batch ``x`` (evaluation mode, no gradients)."""
    params = [Tensor(p) for p in model.parameters]
    with Session(profile), no_grad():
        value = Tensor(np.asarray(x, dtype=model.dtype))
        out = model.layer.forward(EagerOps(), params, value, training=False)
    return out.numpy()


def t64(array: np.ndarray) -> torch.Tensor:
    return torch.tensor(np.asarray(array, dtype=np.float64))


def randomize(model: nn.Model, seed: int = 1) -> None:
    """Replace every parameter (including layer-norm ones/zeros) by standard normal values."""
    rng = np.random.default_rng(seed)
    model.load_state({name: rng.standard_normal(value.shape) for name, value in model.state().items()})


# ----------------------------------------------------------------------------------- shapes


def test_mlp_shapes_and_state_order():
    model = nn.build(nn.sequential(nn.linear(4, 8), nn.relu(), nn.linear(8, 1)), seed=0)
    assert model.input_shape == (4,)
    assert model.output_shape == (1,)
    assert [(name, value.shape) for name, value in model.state().items()] == [
        ("0.weight", (8, 4)),
        ("0.bias", (8,)),
        ("2.weight", (1, 8)),
        ("2.bias", (1,)),
    ]
    assert all(value.dtype == np.float32 for value in model.parameters)
    assert model.describe() == "sequential(linear(4, 8), relu, linear(8, 1)): [4] -> [1], 49 parameters"


def test_cnn_shapes():
    layer = nn.sequential(
        nn.conv2d(1, 4, 3, padding=1),
        nn.relu(),
        nn.max_pool2d(2),
        nn.conv2d(4, 6, (3, 2), stride=(1, 2)),
        nn.avg_pool2d(2, stride=1),
        nn.flatten(),
        nn.linear(6 * 1 * 1, 3),
    )
    model = nn.build(layer, input_shape=(1, 8, 8), seed=0)
    # conv 1->4 pad 1: 8x8; pool 2: 4x4; conv (3,2) stride (1,2): 2x2; avg 2 stride 1: 1x1
    assert model.output_shape == (3,)
    assert model.state()["3.weight"].shape == (6, 4, 3, 2)
    assert forward(model, np.zeros((5, 1, 8, 8))).shape == (5, 3)


def test_attention_model_shapes():
    layer = nn.sequential(
        nn.linear(8, 16),
        nn.positional_embedding(8, 16),
        nn.transformer_block(16, 4, mlp_hidden=24),
        nn.mean_pool(0),
        nn.linear(16, 10),
    )
    model = nn.build(layer, input_shape=(8, 8), seed=0)
    assert model.output_shape == (10,)
    names = list(model.state())
    assert names[2:] == [
        "1.table",
        "2.ln1.weight",
        "2.ln1.bias",
        "2.attn.wq",
        "2.attn.wk",
        "2.attn.wv",
        "2.attn.wo",
        "2.ln2.weight",
        "2.ln2.bias",
        "2.fc1.weight",
        "2.fc1.bias",
        "2.fc2.weight",
        "2.fc2.bias",
        "4.weight",
        "4.bias",
    ]
    assert model.state()["2.fc1.weight"].shape == (24, 16)
    assert forward(model, np.zeros((2, 8, 8))).shape == (2, 10)


def test_reshape_and_mean_pool_shapes():
    model = nn.build(nn.sequential(nn.reshape(2, 3), nn.mean_pool(1)), input_shape=(6,))
    assert model.output_shape == (2,)
    x = np.arange(12, dtype=np.float32).reshape(2, 6)
    np.testing.assert_array_equal(forward(model, x), x.reshape(2, 2, 3).mean(axis=2))


# ------------------------------------------------------------------------------ seeded init


def _mlp() -> nn.Layer:
    return nn.sequential(nn.linear(5, 7), nn.relu(), nn.linear(7, 2))


def test_same_seed_same_weights_different_seed_different():
    a = nn.build(_mlp(), seed=3).state()
    b = nn.build(_mlp(), seed=3).state()
    c = nn.build(_mlp(), seed=4).state()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name])
        assert not np.array_equal(a[name], c[name]), name


def test_init_bounds_follow_torch_defaults():
    """U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for linear and conv, ones/zeros for layer norm."""
    model = nn.build(
        nn.sequential(nn.conv2d(2, 3, 3), nn.flatten(), nn.linear(12, 50), nn.layer_norm(50)),
        input_shape=(2, 4, 4),
        seed=0,
    )
    state = model.state()
    for name, fan_in in (("0.weight", 18), ("0.bias", 18), ("2.weight", 12), ("2.bias", 12)):
        bound = 1.0 / np.sqrt(fan_in)
        assert np.abs(state[name]).max() <= bound, name
        assert np.abs(state[name]).max() > 0.5 * bound, name
    np.testing.assert_array_equal(state["3.weight"], np.ones(50, dtype=np.float32))
    np.testing.assert_array_equal(state["3.bias"], np.zeros(50, dtype=np.float32))


def test_float64_build():
    model = nn.build(_mlp(), seed=0, dtype=np.float64)
    assert all(p.dtype == np.float64 for p in model.parameters)
    # the same draws as float32, rounded
    f32 = nn.build(_mlp(), seed=0).state()
    for name, value in model.state().items():
        np.testing.assert_array_equal(value.astype(np.float32), f32[name])


def test_build_reads_torch_dtypes_as_tl_tensor_does() -> None:
    assert nn.build(_mlp(), dtype=torch.float64).dtype == np.float64  # type: ignore[arg-type]
    assert nn.build(_mlp(), dtype=torch.float32).dtype == np.float32  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("dtype", "shown"),
    [
        (np.float16, "float16"),
        ("bogus", "bogus"),
        (None, "None"),
        (">f8", r">f8 \(big-endian; accepted: native byte order\)"),
        (5, "5"),
        (torch.bfloat16, r"torch\.bfloat16"),
    ],
)
def test_bad_dtype(dtype: object, shown: str) -> None:
    """Unreadable spellings and None (numpy would read it as float64) are refused like float16."""
    with pytest.raises(ShapeError, match=rf"^model dtype must be float32 or float64, got {shown}$"):
        nn.build(_mlp(), dtype=dtype)  # type: ignore[arg-type]


# ------------------------------------------------------------------------------------ state


def test_state_round_trip_and_copy_semantics():
    model = nn.build(_mlp(), seed=0)
    other = nn.build(_mlp(), seed=9)
    state = model.state()
    state["0.weight"][...] = 123.0  # a copy: the model is unchanged
    assert not np.any(model.state()["0.weight"] == 123.0)
    other.load_state(model.state())
    for name, value in model.state().items():
        np.testing.assert_array_equal(other.state()[name], value)
    x = np.random.default_rng(0).standard_normal((3, 5))
    np.testing.assert_array_equal(forward(other, x), forward(model, x))


def test_load_state_casts_to_model_dtype():
    model = nn.build(_mlp(), seed=0)
    model.load_state({name: value.astype(np.float64) for name, value in model.state().items()})
    assert all(p.dtype == np.float32 for p in model.parameters)


def test_load_state_casts_object_arrays_of_real_numbers():
    """Object arrays (pandas ``to_numpy()`` of mixed frames, Fractions, Decimals) cast as numpy
    casts them, as ``torch.tensor`` reads them; the values are the exact reals rounded."""
    from decimal import Decimal
    from fractions import Fraction

    model = nn.build(_mlp(), seed=0)
    state = model.state()
    model.load_state({name: value.astype(object) for name, value in state.items()})
    for name, value in model.state().items():
        np.testing.assert_array_equal(value, state[name])
    size = state["2.bias"].size
    exact = [Fraction(1, 3), Decimal("0.1")] * (size // 2) + [Fraction(-7, 2)] * (size % 2)
    model.load_state({**state, "2.bias": np.array(exact, dtype=object)})
    np.testing.assert_array_equal(model.state()["2.bias"], np.array([float(v) for v in exact], np.float32))


def test_load_state_refuses_finite_values_beyond_the_model_dtype():
    """A finite 1e39 would become inf in a float32 model (numpy's cast, with a RuntimeWarning only):
    refused as the trainer refuses such data; NaN and infinities load as they are (torch's
    load_state_dict copies them too)."""
    model = nn.build(_mlp(), seed=0)
    state = model.state()
    before = model.state()
    shape = state["0.weight"].shape
    size = state["0.weight"].size
    huge = np.full(shape, 1e39)
    huge[0, 0] = -3e39
    with pytest.raises(
        StateError,
        match=rf"^state entry 0.weight holds {size} finite values beyond the float32 range \(largest "
        r"magnitude 3e\+39; accepted: magnitude at most 3.4028235e\+38; build the model in float64\)$",
    ):
        model.load_state({**state, "0.weight": huge})
    for name, value in model.state().items():  # unchanged
        np.testing.assert_array_equal(value, before[name])
    special = np.array([np.nan, np.inf, -np.inf] + [0.5] * (size - 3)).reshape(shape)
    model.load_state({**state, "0.weight": special})
    np.testing.assert_array_equal(model.state()["0.weight"], special.astype(np.float32))
    wide = nn.build(_mlp(), seed=0, dtype=np.float64)
    wide.load_state({**wide.state(), "0.weight": huge})
    np.testing.assert_array_equal(wide.state()["0.weight"], huge)
    # beyond float64 too: judged on the values themselves, not on a float64 copy (already inf)
    from decimal import Decimal

    for beyond, shown in ((Decimal("1e400"), "1E+400"), (np.longdouble("1e4000"), "1e+4000")):
        entry = np.full(shape, beyond, dtype=object if isinstance(beyond, Decimal) else np.longdouble)
        for target, hint in ((model, "; build the model in float64"), (wide, "")):
            with pytest.raises(StateError, match=rf"holds {size} finite values beyond the {target.dtype} "
                               rf"range \(largest magnitude {re.escape(shown)}; accepted: magnitude at most "
                               rf"{re.escape(str(np.finfo(target.dtype).max))}{re.escape(hint)}\)$"):
                target.load_state({**target.state(), "0.weight": entry})
    for special in (Decimal("NaN"), Decimal("-Infinity"), float("inf"), np.float32("-inf")):  # loaded as is
        wide.load_state({**wide.state(), "0.weight": np.full(shape, special, dtype=object)})
        assert not np.isfinite(wide.state()["0.weight"]).any()


def test_load_state_refuses_tensors_that_require_grad_by_name():
    """torch's ``named_parameters()`` (parameters require grad) and a torchlean tensor that requires
    grad are refused as a StateError naming the fix, before any parameter changes; torch's
    ``state_dict()`` (detached) loads."""
    torch = pytest.importorskip("torch")
    from torchlean.tensor import Tensor

    layer = torch.nn.Linear(3, 2)
    model = nn.build(nn.linear(3, 2), seed=0)
    before = model.state()
    for state, kind in (
        (dict(layer.named_parameters()), "Parameter"),
        ({"weight": Tensor(before["weight"], requires_grad=True), "bias": before["bias"]}, "Tensor"),
    ):
        with pytest.raises(
            StateError,
            match=rf"^state entry weight is a {kind} that requires grad \(accepted: arrays of its values, "
            r"e.g. its .detach\(\), or torch's state_dict\(\) entries\)$",
        ):
            model.load_state(state)
        np.testing.assert_array_equal(model.state()["weight"], before["weight"])
    model.load_state(layer.state_dict())
    np.testing.assert_array_equal(model.state()["weight"], layer.weight.detach().numpy())


def test_state_error_messages():
    model = nn.build(_mlp(), seed=0)
    state = model.state()
    missing = {k: v for k, v in state.items() if k != "2.bias"}
    with pytest.raises(
        StateError, match=r"^state does not match the model: missing \['2.bias'\], unexpected \[\]$"
    ):
        model.load_state(missing)
    with pytest.raises(
        StateError, match=r"^state does not match the model: missing \[\], unexpected \['extra'\]$"
    ):
        model.load_state({**state, "extra": np.zeros(1)})
    with pytest.raises(StateError, match=r"^state entry 0.weight has shape \[5, 7\], expected \[7, 5\]$"):
        model.load_state({**state, "0.weight": np.zeros((5, 7))})
    with pytest.raises(StateError, match=r"^state entry 2.bias has dtype <U1 \(accepted: real numbers"):
        model.load_state({**state, "2.bias": np.array(["a"])})
    with pytest.raises(StateError, match=r"^state entry 2.bias has dtype complex128 \(accepted: real"):
        model.load_state({**state, "2.bias": np.array([1j])})
    size = state["2.bias"].size
    for held, shown in (
        (None, "None of type NoneType"),
        (1j, "1j of type complex"),
        ("0.5", "'0.5' of type str"),  # numpy would parse it as a number
        (b"0.5", "b'0.5' of type bytes"),
    ):
        pattern = rf"^state entry 2.bias has dtype object .*: it holds {re.escape(shown)}$"
        with pytest.raises(StateError, match=pattern):
            model.load_state({**state, "2.bias": np.array([held] * size, dtype=object)})
    with pytest.raises(StateError, match=r"^state entry 2.bias has dtype object .*too large"):
        model.load_state({**state, "2.bias": np.array([Fraction(10**400)] * size, dtype=object)})
    with pytest.raises(StateError, match=r"^state entry 0.weight is not a rectangular array: "):
        model.load_state({**state, "0.weight": [[1.0, 2.0], [3.0]]})
    with pytest.raises(StateError, match=r"^state must be a mapping of parameter names .* got NoneType$"):
        model.load_state(None)  # type: ignore[arg-type]
    # a failed load leaves the parameters untouched
    for name, value in model.state().items():
        np.testing.assert_array_equal(value, state[name])


# ------------------------------------------------------------------------------ shape errors


@pytest.mark.parametrize(
    ("layer", "input_shape", "message"),
    [
        (
            nn.sequential(nn.linear(4, 8), nn.linear(3, 1)),
            None,
            "linear(3, 1) expects inputs whose last axis is 3, got shape [8]",
        ),
        (nn.conv2d(3, 4, 3), (1, 8, 8), "conv2d expects (C=3, H, W) samples, got shape [1, 8, 8]"),
        (
            nn.conv2d(1, 4, 5),
            (1, 3, 3),
            "conv2d kernel [5, 5] (dilation [1, 1]) does not fit input [1, 3, 3] with padding [0, 0]",
        ),
        (nn.max_pool2d(3), (1, 2, 2), "max_pool2d kernel [3, 3] does not fit [1, 2, 2]"),
        (nn.avg_pool2d(2), (4, 4), "avg_pool2d expects (C, H, W) samples, got shape [4, 4]"),
        (
            nn.max_pool2d(2, padding=2),
            (1, 8, 8),
            "max_pool2d: padding [2, 2] must be at most half of kernel [2, 2]",
        ),
        (nn.layer_norm(5), (4,), "layer_norm([5]) does not fit input shape [4]"),
        (nn.reshape(2, 2), (5,), "reshape: cannot view [5] as [2, 2]"),
        (nn.mean_pool(1), (4,), "mean_pool axis 1 is out of range for shape [4]"),
        (
            nn.positional_embedding(4, 8),
            (5, 8),
            "positional_embedding(4, 8) does not fit samples [5, 8]",
        ),
        (
            nn.multi_head_attention(8, 2),
            (4, 6),
            "multi_head_attention expects (tokens, 8) samples, got [4, 6]",
        ),
        (  # named as written, not as the attention inside it (review17 F7)
            nn.transformer_block(8, 2),
            (5, 6),
            "transformer_block expects (tokens, 8) samples, got [5, 6]",
        ),
        (nn.transformer_block(8, 2), (5,), "transformer_block expects (tokens, 8) samples, got [5]"),
        (
            nn.residual(nn.linear(4, 3)),
            (4,),
            "residual body maps [4] to [3]; a residual needs equal shapes",
        ),
        (
            nn.sequential(nn.relu()),
            None,
            "cannot infer the input shape of sequential(relu); pass input_shape=",
        ),
    ],
)
def test_shape_error_messages(layer, input_shape, message):
    with pytest.raises(ShapeError) as caught:
        nn.build(layer, input_shape=input_shape)
    assert str(caught.value) == message


@pytest.mark.parametrize("layer", [
    nn.sequential(nn.identity(), nn.linear(3, 2)),
    nn.sequential(nn.sequential(), nn.linear(3, 2)),
    nn.sequential(nn.sequential(nn.relu(), nn.dropout(0.1)), nn.layer_norm(3), nn.linear(3, 2)),
], ids=["identity", "empty-sequential", "shape-keeping"])
def test_the_input_shape_is_inferred_through_layers_that_keep_it(layer: Any) -> None:
    """review182 F1: only a linear layer reached first gave the input shape."""
    assert nn.build(layer).input_shape == (3,)
    from torchlean.trainer import Trainer

    assert Trainer(layer, objective="mse").predict(np.ones((4, 3))).shape == (4, 2)


@dataclass(frozen=True)
class _BiasOnly(Linear):
    """A Linear subclass whose parameters are its own: param_count must count them."""

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("bias", (self.out_features,), "uniform", 0.5),)


class _PerInstance(Layer):
    """A layer given its parameter specs per instance (review186 F7: counted as none, an IndexError)."""

    kind = "per-instance"

    def __init__(self, specs: tuple[ParamSpec, ...]) -> None:
        self.param_specs = lambda: specs  # type: ignore[method-assign]

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.mul(x, params[0])


@pytest.mark.parametrize("layer", [
    _PerInstance((ParamSpec("s", (3,), "uniform", 0.5),)),
    nn.sequential(_PerInstance((ParamSpec("s", (3,), "uniform", 0.5),)), nn.linear(3, 2)),
    nn.linear(3, 2), nn.linear(3, 2, bias=False), nn.relu(), nn.dropout(0.1), nn.layer_norm(3),
    nn.sequential(nn.linear(3, 4), nn.relu(), nn.sequential(nn.linear(4, 2, bias=False))),
    nn.sequential(), nn.residual(nn.linear(3, 3)), nn.conv2d(1, 2, 3), nn.embedding(5, 3),
    nn.transformer_block(8, 2), _BiasOnly(3, 2), nn.sequential(_BiasOnly(3, 2), nn.linear(2, 1)),
])
def test_param_count_is_the_number_of_param_specs(layer: Layer) -> None:
    """review183 F1: a sequential's forward counted each child's parameters by building its specs
    on every call; param_count says it without them, and agrees with them."""
    assert layer.param_count() == len(layer.param_specs())


class _TwoAxes(Layer):
    """A layer of one's own written for ``(C, L)`` samples: its output_shape unpacks two axes."""

    kind = "two-axes"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        channels, length = shape  # a bare ValueError on a guessed (3,)
        return (channels, length)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return ()

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return x


@pytest.mark.parametrize("layer", [
    nn.sequential(nn.flatten(), nn.linear(3, 2)), nn.sequential(nn.relu()),
    nn.sequential(_TwoAxes(), nn.linear(3, 2)),  # review185 F3: its ValueError escaped the probe
], ids=["flatten", "no-linear", "own-layer-raising"])
def test_no_input_shape_is_guessed_where_layers_before_the_linear_change_it(layer: Any) -> None:
    with pytest.raises(ShapeError, match=r"cannot infer the input shape of .*; pass input_shape="):
        nn.build(layer)


INT1 = "must be an int >= 1, got"
DIMS = "must be a non-empty tuple or list of ints >= 1, got"
PAIR1 = "must be an int >= 1 or a pair of them, got"
PAIR0 = "must be an int >= 0 or a pair of them, got"
LAYER = "must be a Layer (e.g. nn.relu()), got"
NORM = "layer_norm: normalized_shape must be an int >= 1 or a non-empty tuple or list of ints >= 1, got"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: nn.linear(0, 3), f"linear: in_features {INT1} 0"),
        (lambda: nn.linear(3, -2), f"linear: out_features {INT1} -2"),
        (lambda: nn.linear(2.5, 3), f"linear: in_features {INT1} 2.5"),
        (lambda: nn.linear(True, 3), f"linear: in_features {INT1} True"),
        (lambda: nn.linear(2, "3"), f"linear: out_features {INT1} '3'"),
        (lambda: nn.linear(2, 3, bias=1), "linear: bias must be a bool, got 1"),
        (lambda: nn.conv2d(0, 2, 3), f"conv2d: in_channels {INT1} 0"),
        (lambda: nn.conv2d(1, 0, 3), f"conv2d: out_channels {INT1} 0"),
        (lambda: nn.conv2d(1.0, 2, 3), f"conv2d: in_channels {INT1} 1.0"),
        (lambda: nn.conv2d(1, 2, 3, groups=False), f"conv2d: groups {INT1} False"),
        (lambda: nn.conv2d(1, 2, 0), f"conv2d: kernel_size {PAIR1} 0"),
        (lambda: nn.conv2d(1, 2, 2.5), f"conv2d: kernel_size {PAIR1} 2.5"),
        (lambda: nn.conv2d(1, 2, (3, True)),
         f"conv2d: kernel_size {PAIR1} (3, True)"),
        (lambda: nn.conv2d(1, 2, 3, stride=0), f"conv2d: stride {PAIR1} 0"),
        (lambda: nn.conv2d(1, 2, 3, dilation=[1, 0]),
         f"conv2d: dilation {PAIR1} [1, 0]"),
        (lambda: nn.conv2d(1, 2, 3, padding="1"), f"conv2d: padding {PAIR0} '1'"),
        (lambda: nn.conv2d(1, 2, 3, bias=None), "conv2d: bias must be a bool, got None"),
        (
            lambda: nn.max_pool2d((2, 2, 2)),
            f"max_pool2d: kernel_size {PAIR1} (2, 2, 2)",
        ),
        (lambda: nn.max_pool2d(True), f"max_pool2d: kernel_size {PAIR1} True"),
        (lambda: nn.max_pool2d(2, stride=1.5),
         f"max_pool2d: stride {PAIR1} 1.5"),
        (lambda: nn.avg_pool2d(2, padding=-1), f"avg_pool2d: padding {PAIR0} -1"),
        (lambda: nn.dropout(1.5), "dropout: p must satisfy 0 <= p <= 1, got 1.5"),
        (lambda: nn.dropout(-0.1), "dropout: p must satisfy 0 <= p <= 1, got -0.1"),
        (lambda: nn.dropout(float("nan")), "dropout: p must satisfy 0 <= p <= 1, got nan"),
        (lambda: nn.dropout(True), "dropout: p must be a real number, got True"),
        (lambda: nn.dropout("0.5"), "dropout: p must be a real number, got '0.5'"),
        (lambda: nn.layer_norm(0), f"{NORM} 0"),
        (lambda: nn.layer_norm(()), f"{NORM} ()"),
        (lambda: nn.layer_norm(2.5), f"{NORM} 2.5"),
        (lambda: nn.layer_norm([4, False]), f"{NORM} [4, False]"),
        (lambda: nn.layer_norm(4, eps=-1e-5), "layer_norm: eps must be finite and >= 0, got -1e-05"),
        (lambda: nn.layer_norm(4, eps=float("inf")), "layer_norm: eps must be finite and >= 0, got inf"),
        (lambda: nn.layer_norm(4, eps=True), "layer_norm: eps must be a real number, got True"),
        (lambda: nn.reshape(-1, 4), f"reshape: shape {DIMS} (-1, 4)"),
        (lambda: nn.reshape((4, 0)), f"reshape: shape {DIMS} (4, 0)"),
        (lambda: nn.reshape(), f"reshape: shape {DIMS} ()"),
        (lambda: nn.reshape((1, 4), 4), f"reshape: shape {DIMS} ((1, 4), 4)"),
        (lambda: nn.reshape(2.0, 8), f"reshape: shape {DIMS} (2.0, 8)"),
        (lambda: nn.positional_embedding(0, 4), f"positional_embedding: tokens {INT1} 0"),
        (lambda: nn.positional_embedding(4, True), f"positional_embedding: d_model {INT1} True"),
        (lambda: nn.mean_pool(-1), "mean_pool: axis must be an int >= 0, got -1"),
        (lambda: nn.mean_pool(0.0), "mean_pool: axis must be an int >= 0, got 0.0"),
        (lambda: nn.multi_head_attention(8.0, 2), f"multi_head_attention: d_model {INT1} 8.0"),
        (lambda: nn.multi_head_attention(8, 0), f"multi_head_attention: heads {INT1} 0"),
        (
            lambda: nn.multi_head_attention(8, 2, causal=1),
            "multi_head_attention: causal must be a bool, got 1",
        ),
        (lambda: nn.transformer_block(8, 2, mlp_hidden=0), f"transformer_block: mlp_hidden {INT1} 0"),
        # torch.nn.Conv2d and torch.nn.MultiheadAttention refuse these at construction too
        (
            lambda: nn.conv2d(2, 3, 1, groups=2),
            "conv2d: groups=2 must divide in_channels=2 and out_channels=3",
        ),
        (lambda: nn.multi_head_attention(8, 3), "multi_head_attention: heads=3 must divide d_model=8"),
        (lambda: nn.transformer_block(6, 4), "transformer_block: heads=4 must divide d_model=6"),
        (lambda: nn.transformer_block(True, 1), f"transformer_block: d_model {INT1} True"),
        (
            lambda: nn.sequential(nn.linear(4, 3), "relu"),
            f"sequential: item 1 {LAYER} str 'relu'",
        ),
        (lambda: nn.sequential(None), f"sequential: item 0 {LAYER} NoneType None"),
        pytest.param(  # the message holds an address: a fixed id keeps collection deterministic (xdist)
            lambda: nn.residual(nn.relu),
            f"residual: body must be a Layer (e.g. nn.linear(4, 4)), got function {nn.relu!r}",
            id="residual-body-is-a-function",
        ),
    ],
)
def test_builder_argument_errors(make, message):
    with pytest.raises(ShapeError) as caught:
        make()
    assert str(caught.value) == message


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: Linear(2.5, 3), f"linear: in_features {INT1} 2.5"),
        (
            lambda: Activation("swish"),
            "unknown activation 'swish' (known: relu | gelu | tanh | sigmoid | silu | softplus)",
        ),
        (lambda: Conv2d(1, 2, (3, 3), groups=0), f"conv2d: groups {INT1} 0"),
        (lambda: MaxPool2d((2, 2), (0, 1)), f"max_pool2d: stride {PAIR1} (0, 1)"),
        (lambda: Reshape((4, -1)), f"reshape: shape {DIMS} (4, -1)"),
        (lambda: Sequential((nn.relu(), 3)), f"sequential: item 1 {LAYER} int 3"),
        (lambda: Dropout("0.1"), "dropout: p must be a real number, got '0.1'"),
        (lambda: MultiHeadAttention(0, 2), f"multi_head_attention: d_model {INT1} 0"),
        (lambda: MultiHeadAttention(8, 2.0), f"multi_head_attention: heads {INT1} 2.0"),
        (lambda: TransformerBlock(8, True, 16), f"transformer_block: heads {INT1} True"),
        (lambda: TransformerBlock(8, 2, 0), f"transformer_block: mlp_hidden {INT1} 0"),
    ],
)
def test_layer_records_check_their_fields_too(make, message):
    """Building a record directly (without the ``nn`` builder) is checked the same way."""
    with pytest.raises(ShapeError) as caught:
        make()
    assert str(caught.value) == message


def test_builders_and_records_refuse_the_first_bad_argument_in_field_order():
    """Several bad arguments: the builder and the record it constructs name the same (first) one."""
    for make in (lambda: nn.conv2d(1, 2, 0, groups=0), lambda: Conv2d(1, 2, 0, groups=0)):
        with pytest.raises(ShapeError) as caught:
            make()
        assert str(caught.value) == f"conv2d: kernel_size {PAIR1} 0"
    with pytest.raises(ShapeError) as caught:
        nn.transformer_block(None, 2)  # the default mlp_hidden is not computed from a bad d_model
    assert str(caught.value) == f"transformer_block: d_model {INT1} None"


def test_numpy_integers_are_sizes_and_are_stored_as_int():
    """As ``torch.nn.Linear(np.int64(3), 2)``: numpy integers are accepted, stored as ``int``."""
    layer = nn.linear(np.int64(3), np.int32(2))
    assert (layer.in_features, layer.out_features) == (3, 2)
    assert type(layer.in_features) is int and type(layer.out_features) is int
    conv = nn.conv2d(np.int64(1), 2, (np.int64(3), 3), padding=np.int8(1))
    assert (conv.kernel_size, conv.padding) == ((3, 3), (1, 1))
    assert all(type(v) is int for v in (*conv.kernel_size, *conv.padding))
    assert nn.dropout(np.float32(0.25)).p == 0.25 and type(nn.dropout(np.float32(0.25)).p) is float
    assert nn.layer_norm(np.int64(4)).normalized_shape == (4,)


@pytest.mark.parametrize("spelling", [(1, 4, 4), [1, 4, 4]])
def test_reshape_accepts_a_tuple_or_list_like_torch(spelling):
    """``nn.reshape((1, 4, 4))`` and ``nn.reshape([1, 4, 4])`` mean ``nn.reshape(1, 4, 4)``, as
    ``torch.Tensor.reshape`` accepts both spellings; the values agree with torch's reshape."""
    assert nn.reshape(spelling) == nn.reshape(1, 4, 4)
    model = nn.build(nn.reshape(spelling), input_shape=(16,), dtype=np.float64)
    x = np.arange(32, dtype=np.float64).reshape(2, 16)
    np.testing.assert_array_equal(forward(model, x), torch.tensor(x).reshape((2, *spelling)).numpy())


@pytest.mark.parametrize("seed", [-1, 2**64, np.int64(-1), True, np.True_, 1.5, "0", None])
def test_build_seed_must_be_in_the_session_range(seed):
    with pytest.raises(ShapeError) as caught:
        nn.build(nn.linear(2, 1), seed=seed)
    assert str(caught.value) == f"seed must be an integer in [0, 2**64), got {seed!r}"


@pytest.mark.parametrize("seed", [2**32 - 1, 2**32, 2**40, 2**64 - 1, np.uint64(2**64 - 1)])
def test_build_seed_edges_and_numpy_seeds(seed):
    """Seeds up to ``2**64 - 1`` (the session's range) are accepted and reproducible: the weights
    are ``U(-1/sqrt(in), 1/sqrt(in))`` draws of ``default_rng([seed, index])``."""
    top = nn.build(nn.linear(2, 1), seed=seed, dtype=np.float64)
    bound = 1 / np.sqrt(2)
    expected = np.random.default_rng([int(seed), 0]).uniform(-bound, bound, size=(1, 2))
    np.testing.assert_array_equal(top.parameters[0], expected)
    again = nn.build(nn.linear(2, 1), seed=int(seed), dtype=np.float64)
    for x, y in zip(top.parameters, again.parameters, strict=True):
        np.testing.assert_array_equal(x, y)
    zero = nn.build(nn.linear(2, 1), seed=0, dtype=np.float64)
    assert not np.array_equal(top.parameters[0], zero.parameters[0])


def test_numpy_integer_seed_gives_the_int_seeds_weights():
    a = nn.build(nn.linear(2, 1), seed=np.int64(7))
    b = nn.build(nn.linear(2, 1), seed=7)
    for x, y in zip(a.parameters, b.parameters, strict=True):
        np.testing.assert_array_equal(x, y)


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"layer": "linear"}, "build: layer must be a Layer (e.g. nn.linear(4, 1)), got str 'linear'"),
        ({"input_shape": 4}, f"build: input_shape {DIMS} 4"),
        ({"input_shape": (4, 0)}, f"build: input_shape {DIMS} (4, 0)"),
        ({"input_shape": [4.0]}, f"build: input_shape {DIMS} [4.0]"),
        ({"input_shape": np.array([4.0])}, f"build: input_shape {DIMS} {np.array([4.0])!r}"),
        ({"input_shape": np.array([[4]])}, f"build: input_shape {DIMS} {np.array([[4]])!r}"),
        ({"input_shape": np.array([True])}, f"build: input_shape {DIMS} {np.array([True])!r}"),
        ({"input_shape": np.array([4, 0])}, f"build: input_shape {DIMS} {np.array([4, 0])!r}"),
        ({"input_shape": np.array([], dtype=np.int64)},
         f"build: input_shape {DIMS} {np.array([], dtype=np.int64)!r}"),
    ],
)
def test_build_arguments(kwargs, message):
    layer = kwargs.pop("layer", nn.relu())
    with pytest.raises(ShapeError) as caught:
        nn.build(layer, **kwargs)
    assert str(caught.value) == message


@pytest.mark.parametrize("shape", [np.array([2, 3]), np.array([2, 3], dtype=np.uint8), torch.Size([2, 3])])
def test_build_input_shape_accepts_a_1d_integer_array_like_a_tuple(shape):
    model = nn.build(nn.sequential(nn.relu(), nn.linear(3, 1)), input_shape=shape, seed=0)
    assert model.input_shape == (2, 3) and all(type(d) is int for d in model.input_shape)
    assert model.output_shape == (2, 1)
    assert nn.layer_norm(np.array([3])).normalized_shape == (3,)


@pytest.mark.parametrize("flag", [np.True_, np.False_])
def test_numpy_bool_flags_are_stored_as_bool(flag):
    """As tensor flags: ``numpy.bool_`` means the same as ``bool`` (ints stay refused, above)."""
    expected = bool(flag)
    layers = [
        (nn.linear(4, 2, bias=flag), "bias"),
        (Linear(4, 2, flag), "bias"),
        (nn.conv2d(1, 2, 3, bias=flag), "bias"),
        (Conv2d(1, 2, (3, 3), bias=flag), "bias"),
        (nn.multi_head_attention(8, 2, causal=flag), "causal"),
        (MultiHeadAttention(8, 2, flag), "causal"),
        (nn.transformer_block(8, 2, causal=flag), "causal"),
        (TransformerBlock(8, 2, 16, flag), "causal"),
    ]
    for layer, name in layers:
        value = getattr(layer, name)
        assert value is expected, (layer, value)
    names = [s.name for s in nn.linear(4, 2, bias=flag).param_specs()]
    assert names == (["weight", "bias"] if flag else ["weight"])
    assert nn.linear(4, 2, bias=flag) == nn.linear(4, 2, bias=expected)
    described = nn.multi_head_attention(8, 2, causal=flag).describe()
    assert described == f"multi_head_attention(8, heads=2, causal={expected})"


@pytest.mark.parametrize(
    ("make", "message"),
    [
        (lambda: MultiHeadAttention(8, 2, 1), "multi_head_attention: causal must be a bool, got 1"),
        (lambda: TransformerBlock(8, 2, 16, "yes"), "transformer_block: causal must be a bool, got 'yes'"),
        (lambda: Linear(2, 3, 0), "linear: bias must be a bool, got 0"),
    ],
)
def test_attention_records_check_their_flag_too(make, message):
    with pytest.raises(ShapeError) as caught:
        make()
    assert str(caught.value) == message


# --------------------------------------------------------------------- residual, positions


def test_residual_relu_matches_the_original_example():
    """``x + relu x = [-1, 4]`` at ``[-1, 2]`` (anchor-runtime.md §4.1)."""
    model = nn.build(nn.residual(nn.relu()), input_shape=(2,))
    np.testing.assert_array_equal(forward(model, np.array([[-1.0, 2.0]])), [[-1.0, 4.0]])


def test_residual_with_parameters():
    model = nn.build(nn.residual(nn.linear(3, 3)), seed=0, dtype=np.float64, input_shape=(3,))
    assert list(model.state()) == ["body.weight", "body.bias"]
    x = np.random.default_rng(0).standard_normal((4, 3))
    w, b = model.state()["body.weight"], model.state()["body.bias"]
    expected = t64(x) + TF.linear(t64(x), t64(w), t64(b))
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=1e-13, atol=1e-15)


def test_positional_embedding_adds_the_table_per_sample():
    model = nn.build(nn.positional_embedding(3, 2), input_shape=(3, 2), seed=0, dtype=np.float64)
    table = model.state()["table"]
    assert table.shape == (3, 2) and np.abs(table).max() <= 0.1
    x = np.random.default_rng(1).standard_normal((4, 3, 2))
    np.testing.assert_array_equal(forward(model, x), x + table[None])


# ------------------------------------------------------------------- values vs torch float64

RTOL, ATOL = 1e-12, 1e-13


def test_linear_and_activations_match_torch():
    layer = nn.sequential(
        nn.linear(5, 6), nn.gelu(), nn.linear(6, 6), nn.tanh(), nn.linear(6, 4), nn.sigmoid(), nn.linear(4, 3)
    )
    model = nn.build(layer, seed=0, dtype=np.float64)
    s = model.state()
    x = np.random.default_rng(0).standard_normal((7, 5))
    h = TF.gelu(TF.linear(t64(x), t64(s["0.weight"]), t64(s["0.bias"])))
    h = torch.tanh(TF.linear(h, t64(s["2.weight"]), t64(s["2.bias"])))
    h = torch.sigmoid(TF.linear(h, t64(s["4.weight"]), t64(s["4.bias"])))
    h = TF.linear(h, t64(s["6.weight"]), t64(s["6.bias"]))
    np.testing.assert_allclose(forward(model, x), h.numpy(), rtol=RTOL, atol=ATOL)


def test_linear_without_bias_and_unbatched_vector():
    model = nn.build(nn.linear(4, 2, bias=False), seed=0, dtype=np.float64)
    assert list(model.state()) == ["weight"]
    x = np.random.default_rng(0).standard_normal(4)
    expected = TF.linear(t64(x), t64(model.state()["weight"]))
    # an unbatched vector lowers as reshape [4] -> [1, 4] ... reshape back (anchor-runtime.md §4.2)
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=RTOL, atol=ATOL)


@pytest.mark.parametrize(
    "conv_kwargs",
    [
        {},
        {"padding": 1},
        {"stride": 2, "padding": (1, 0)},
        {"dilation": 2, "padding": 2},
        {"groups": 2, "padding": 1},
    ],
    ids=["plain", "pad", "stride", "dilation", "groups"],
)
def test_conv_and_pool_match_torch(conv_kwargs):
    layer = nn.sequential(
        nn.conv2d(2, 4, 3, **conv_kwargs),
        nn.relu(),
        nn.max_pool2d(2, stride=1, padding=1),
        nn.avg_pool2d((2, 1), padding=(1, 0)),
    )
    model = nn.build(layer, input_shape=(2, 7, 7), seed=0, dtype=np.float64)
    s = model.state()
    x = np.random.default_rng(0).standard_normal((3, 2, 7, 7))
    h = TF.conv2d(t64(x), t64(s["0.weight"]), t64(s["0.bias"]), **conv_kwargs)
    h = TF.max_pool2d(TF.relu(h), 2, stride=1, padding=1)
    h = TF.avg_pool2d(h, (2, 1), padding=(1, 0), count_include_pad=True)
    out = forward(model, x)
    assert out.shape == (3, *model.output_shape) == tuple(h.shape)
    np.testing.assert_allclose(out, h.numpy(), rtol=RTOL, atol=ATOL)


def test_layer_norm_matches_torch():
    model = nn.build(nn.layer_norm((3, 4), eps=1e-3), input_shape=(2, 3, 4), dtype=np.float64)
    randomize(model)
    s = model.state()
    x = np.random.default_rng(0).standard_normal((5, 2, 3, 4)) * 3 + 1
    expected = TF.layer_norm(t64(x), (3, 4), t64(s["weight"]), t64(s["bias"]), eps=1e-3)
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=RTOL, atol=ATOL)


def test_dropout_is_identity_in_evaluation():
    model = nn.build(nn.sequential(nn.linear(3, 3), nn.dropout(0.5)), seed=0)
    x = np.ones((2, 3), dtype=np.float32)
    no_dropout = nn.build(nn.linear(3, 3), seed=0)
    np.testing.assert_array_equal(forward(model, x), forward(no_dropout, x))


def test_dropout_of_one_drops_everything_in_training_as_torch():
    """``p == 1`` as ``torch.nn.Dropout(1.0)``: zeros in training (and zero gradients), the
    identity in evaluation; the functional form accepted it already."""
    model = nn.build(nn.sequential(nn.linear(3, 3), nn.dropout(1.0)), seed=0)
    x = np.ones((2, 3), dtype=np.float32)
    params = [Tensor(p, requires_grad=True) for p in model.parameters]
    with Session("checked_cpu"):
        out = model.layer.forward(EagerOps(), params, Tensor(x), training=True)
        out.backward(Tensor(np.ones((2, 3), dtype=np.float32)))
    np.testing.assert_array_equal(out.numpy(), np.zeros((2, 3)))
    for param in params:
        assert param.grad is not None
        np.testing.assert_array_equal(param.grad.numpy(), np.zeros(param.shape))
    torch_out = torch.nn.Dropout(1.0).train()(torch.ones(2, 3))
    np.testing.assert_array_equal(torch_out.numpy(), np.zeros((2, 3)))
    no_dropout = nn.build(nn.linear(3, 3), seed=0)
    np.testing.assert_array_equal(forward(model, x), forward(no_dropout, x))


def test_layer_norm_with_eps_zero_matches_torch():
    model = nn.build(nn.layer_norm(4, eps=0.0), input_shape=(4,), seed=0, dtype=np.float64)
    randomize(model)
    x = np.random.default_rng(3).standard_normal((5, 4))
    s = model.state()
    expected = TF.layer_norm(t64(x), (4,), t64(s["weight"]), t64(s["bias"]), eps=0.0)
    np.testing.assert_allclose(forward(model, x), expected.numpy(), rtol=RTOL, atol=ATOL)


def test_a_parameter_spec_refuses_an_unknown_initialiser():
    """An unknown ``init`` drew U(-0, 0), zeros, silently."""
    message = r"parameter w: init 'gauss' is unknown \(accepted: uniform \| normal \| zeros \| ones\)"
    with pytest.raises(ShapeError, match=message):
        ParamSpec("w", (2,), "gauss")  # type: ignore[arg-type]
    spec = ParamSpec("w", (2, 3), "uniform", bound=0.5)
    drawn = spec.initial(np.random.default_rng(0), np.dtype(np.float64))
    assert drawn.shape == (2, 3) and np.all(np.abs(drawn) <= 0.5) and np.unique(drawn).size == 6


def test_grouped_conv_init_bound_uses_the_per_group_fan_in() -> None:
    """torch's default bound is ``1/sqrt(in_channels/groups * kh * kw)`` (review20 mut L2: only
    ``groups=1`` was tested)."""
    weight, bias = nn.conv2d(4, 4, 3, groups=2).param_specs()
    fan_in = torch.nn.init._calculate_fan_in_and_fan_out(torch.nn.Conv2d(4, 4, 3, groups=2).weight)[0]
    assert fan_in == 18
    assert weight.bound == bias.bound == pytest.approx(1 / np.sqrt(fan_in), rel=1e-15, abs=0)


def test_builders_take_torchs_positional_arguments():
    """A torch constructor call ports as it is: the positional form builds the keyword form's
    record, and torch reads the same arguments the same way."""
    assert nn.linear(4, 2, False) == nn.linear(4, 2, bias=False)
    assert torch.nn.Linear(4, 2, False).bias is None
    conv = nn.conv2d(3, 8, 3, 2, 1, 1, 1, False)
    assert conv == nn.conv2d(3, 8, 3, stride=2, padding=1, dilation=1, groups=1, bias=False)
    theirs = torch.nn.Conv2d(3, 8, 3, 2, 1, 1, 1, False)
    assert (theirs.stride, theirs.padding, theirs.bias) == ((2, 2), (1, 1), None)
    assert nn.conv1d(2, 4, 3, 2, 1) == nn.conv1d(2, 4, 3, stride=2, padding=1)
    assert nn.max_pool2d(2, 1, 1) == nn.max_pool2d(2, stride=1, padding=1)
    assert nn.avg_pool1d(3, 2) == nn.avg_pool1d(3, stride=2)
    keywords = nn.batch_norm1d(16, eps=1e-3, momentum=0.05, affine=False)
    assert nn.batch_norm1d(16, 1e-3, 0.05, False) == keywords
    theirs_bn = torch.nn.BatchNorm1d(16, 1e-3, 0.05, False)
    assert (theirs_bn.eps, theirs_bn.momentum, theirs_bn.affine) == (1e-3, 0.05, False)
    assert nn.layer_norm(4, 1e-6) == nn.layer_norm(4, eps=1e-6)
    assert nn.dropout().p == torch.nn.Dropout().p == 0.5


def test_load_state_reads_torch_tensors_on_any_device_and_names_meta_tensors() -> None:
    """review54 F4: a torch tensor off the host reached ``np.asarray`` (torch's own TypeError, "can't
    convert meta/cuda device type tensor to numpy"); tensors are copied to the host first, and a
    meta tensor, which holds no values, is a StateError naming the entry."""
    model = nn.build(nn.sequential(nn.linear(2, 1)), seed=0)
    meta = {"0.weight": torch.ones(1, 2, device="meta"), "0.bias": torch.ones(1, device="meta")}
    with pytest.raises(nn.StateError, match=r"^state entry 0\.weight is a torch tensor on the meta device"):
        model.load_state(meta)
    torch_model = torch.nn.Linear(2, 1).double()
    model.load_state({f"0.{k}": v for k, v in torch_model.state_dict().items()})
    np.testing.assert_array_equal(model.parameters[0], torch_model.weight.detach().numpy().astype(np.float32))


def test_a_torch_modules_attribute_names_get_the_positional_naming_hint() -> None:
    """review54 F7: loading a named torch module's state_dict listed the keys but not the one
    thing to do: torchlean names parameters by layer position."""
    model = nn.build(nn.sequential(nn.linear(2, 3), nn.relu(), nn.linear(3, 1)), seed=0)

    class Named(torch.nn.Module):
        def __init__(self) -> None:
            super().__init__()
            self.fc1, self.fc2 = torch.nn.Linear(2, 3), torch.nn.Linear(3, 1)

    with pytest.raises(nn.StateError) as info:
        model.load_state(Named().state_dict())
    assert str(info.value).endswith(
        "; torchlean names parameters by their layer's position in a sequential model and the layer's "
        "own names (the missing names), not by torch's attribute names such as 'fc1.weight': rename "
        "the entries"
    )
    renamed = dict(zip(model.state(), Named().state_dict().values(), strict=True))
    model.load_state(renamed)  # the rename the hint asks for loads


def test_torch_attention_biases_are_named_as_having_no_counterpart() -> None:
    """review223 F2: torch's MultiheadAttention has biases by default; once the weights were split
    as the hint says, the refusal was a bare "unexpected ['in_proj_bias', 'out_proj.bias']", and
    strict=False then computed another function (oracle: torch's layer with and without them)."""
    d, heads = 8, 2
    model = nn.build(nn.multi_head_attention(d, heads), input_shape=(5, d), dtype=np.float64, seed=0)
    mha = torch.nn.MultiheadAttention(d, heads, batch_first=True, dtype=torch.float64)
    with torch.no_grad():
        mha.in_proj_bias.uniform_(-1.0, 1.0)
        mha.out_proj.bias.uniform_(-1.0, 1.0)
    state = {key: value.detach().numpy() for key, value in mha.state_dict().items()}
    packed = state.pop("in_proj_weight")
    state.update(wq=packed[:d], wk=packed[d:2 * d], wv=packed[2 * d:], wo=state.pop("out_proj.weight"))
    with pytest.raises(nn.StateError) as info:
        model.load_state(state)
    assert str(info.value) == (
        "state does not match the model: missing [], unexpected ['in_proj_bias', 'out_proj.bias']; "
        "torchlean's attention projections have no biases, so 'in_proj_bias', 'out_proj.bias' have no "
        "counterpart: the model computes torch's layer only where they are zero (strict=False drops them, "
        "and with nonzero ones the model then computes another function)"
    )
    model.load_state(state, strict=False)
    x = np.random.default_rng(1).standard_normal((3, 5, d))
    with_biases, _ = mha(*(torch.tensor(x),) * 3, need_weights=False)
    with torch.no_grad():
        mha.in_proj_bias.zero_()
        mha.out_proj.bias.zero_()
    without, _ = mha(*(torch.tensor(x),) * 3, need_weights=False)
    got = model(Tensor(x)).numpy()
    np.testing.assert_allclose(got, without.detach().numpy(), rtol=1e-12, atol=1e-13)
    assert np.abs(got - with_biases.detach().numpy()).max() > 0.1  # the function the note warns of


def test_a_torch_multihead_attention_state_gets_the_in_proj_split_hint() -> None:
    """review140 F4: torch's packed ``in_proj_weight`` cannot load by renaming; the refusal says how
    to split it, and the split it names loads and computes torch's layer."""
    d, heads = 8, 2
    model = nn.build(nn.multi_head_attention(d, heads), input_shape=(5, d), dtype=np.float64, seed=0)
    mha = torch.nn.MultiheadAttention(d, heads, bias=False, batch_first=True, dtype=torch.float64)
    with pytest.raises(nn.StateError) as info:
        model.load_state(mha.state_dict())
    assert str(info.value).endswith(
        "; torch's 'in_proj_weight' packs the query, key and value projections: split its rows [0:d], "
        "[d:2d], [2d:3d] into wq, wk, wv (out_proj.weight is wo; the builders of nn.multi_head_attention "
        "and nn.transformer_block give the whole mapping)"
    )
    packed = mha.in_proj_weight.detach().numpy()
    split = {"wq": packed[:d], "wk": packed[d:2 * d], "wv": packed[2 * d:],
             "wo": mha.out_proj.weight.detach().numpy()}
    model.load_state({name: split[name] for name in model.state()})
    x = np.random.default_rng(0).standard_normal((3, 5, d))
    expected, _ = mha(*(torch.tensor(x),) * 3, need_weights=False)
    got = model(Tensor(x)).numpy()
    np.testing.assert_allclose(got, expected.detach().numpy(), rtol=1e-12, atol=1e-13)
