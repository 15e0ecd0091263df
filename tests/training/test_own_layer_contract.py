"""A layer of your own under both interpretations of ``Ops`` (review173): what eager and the typed
graph used to compute or refuse differently, and the checks ``build`` and ``ParamSpec`` now make.
Oracles: the eager run (bit for bit), hand values, and the documented refusals."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from torchlean import optim
from torchlean.backend.errors import GuardError
from torchlean.nn.layers import Layer, ParamSpec, ShapeError
from torchlean.nn.lowering import LoweringTypeError
from torchlean.tensor import TensorTypeError
from torchlean.trainer import RunConfig, Trainer, TrainerError

WIDTH = 3


def _trainer(layer: Layer, execution: str, **config: Any) -> Trainer[Any, Any]:
    return Trainer(layer, input_shape=(WIDTH,), seed=3,
                   config=RunConfig(optim.sgd(0.1), execution=execution, dtype="float64", **config))


@dataclass(frozen=True)
class Skip(Layer):
    """``linear(x) + x`` written with the Python operator."""

    kind = "skip"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.linear(x, params[0], None) + x


def test_a_python_operator_on_a_graph_value_is_refused_not_computed_on_node_ids() -> None:
    """review173 F1: graph values were bare node ids, so ``h + x`` added the ids and named another
    node: the typed graph silently trained the model without its residual. Eager Tensors take +."""
    x = np.arange(6.0).reshape(2, WIDTH)
    eager = _trainer(Skip(), "eager")
    w = eager.model.state()["w"]
    assert np.allclose(eager.predict(x), x @ w.T + x, rtol=1e-15, atol=0)
    graph = _trainer(Skip(), "typed-graph")
    with pytest.raises(LoweringTypeError, match=r"uses the operator \+ on a graph value \(node \d+\): "
                       r"under typed-graph execution values are graph nodes, so write ops\.add\(a, b\)"):
        graph.predict(x)


@dataclass(frozen=True)
class Misuse(Layer):
    """A forward using a handle as a Python value: ``use`` picks how."""

    kind = "misuse"
    use: str = "bool"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        h = ops.linear(x, params[0], None)
        if self.use == "bool":
            return ops.add(h, x) if x else h  # node 0 was false: the residual silently dropped
        if self.use == "max":
            return max(h, x)
        if self.use == "ne":
            return h if h != x else x
        if self.use == "number-left":
            return 0.5 * h
        if self.use == "param":
            return ops.linear(x, params[0] * 2.0, None)
        if self.use == "np-sum":
            return ops.mul(h, np.sum(params[0]))  # handed back the parameter itself (review175 F1)
        if self.use == "np-max":
            return ops.mul(h, np.max(ops.relu(h)))
        if self.use == "np-float-left":
            return np.float64(2.0) * h
        if self.use == "reshape":
            return h.reshape(-1)
        if self.use == "dropout-number":
            return ops.add(h, ops.dropout(0.5, 0.0))  # checked though nothing is dropped (review175 F2)
        return ops.add(h, x[0])


@pytest.mark.parametrize(("use", "what"), [
    ("bool", "its truth value"), ("max", "a comparison"), ("ne", "!="), ("number-left", "the operator \\*"),
    ("param", "the operator \\* on a graph value \\(parameter w\\)"), ("index", "indexing"),
    ("np-sum", "numpy's sum"), ("np-max", "numpy's (amax|max)"), ("np-float-left", "numpy's multiply"),
])
def test_a_handle_takes_part_in_no_python_operation(use: str, what: str) -> None:
    """review174 F1: the int handle still compared, tested true or false (``if x`` on node 0, the
    input, dropped a residual), multiplied a number on its left into another id, and a parameter
    handle gave a bare TypeError. Each refuses, naming what was used and the ops method."""
    with pytest.raises(LoweringTypeError, match=f"a layer's forward uses {what}"):
        _trainer(Misuse(use), "typed-graph").predict(np.ones((2, WIDTH)))


@dataclass(frozen=True)
class Plus(Layer):
    """``linear(x) + operand``, an operand of the user's choosing."""

    kind = "plus"
    operand: Any = 1.0

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.add(ops.linear(x, params[0], None), self.operand)


@pytest.mark.parametrize("operand", [1.0, 1, np.ones(WIDTH)], ids=["float", "int", "array"])
def test_a_number_or_array_where_a_graph_value_goes_is_refused_with_the_remedy(operand: object) -> None:
    """review173 F5: ``ops.add(h, 1.0)`` gave "unknown node reference 1.0", and an int 1 was read
    as node 1 of the graph. Eager's functional add takes them."""
    x = np.ones((2, WIDTH))
    _trainer(Plus(operand), "eager").predict(x)
    with pytest.raises(LoweringTypeError, match=r"a layer's ops call got .* where a graph value goes .*"
                       r"ops\.constant\(np\.asarray\(value, dtype=the model's dtype\)\)"):
        _trainer(Plus(operand), "typed-graph").predict(x)


@dataclass(frozen=True)
class PadLast(Layer):
    """An embedding with ``padding_idx`` given by the layer: -1 is the last row, as torch's."""

    kind = "pad_last"
    padding_idx: Any = -1

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (*shape, WIDTH)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("e", (5, WIDTH), "normal", 1.0),)

    def index_count(self) -> int:
        return 5

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.embedding(x, params[0], padding_idx=self.padding_idx)


def test_a_negative_padding_idx_keeps_the_last_row_in_both_modes() -> None:
    """review173 F2: the graph compared the ids with -1, matched none, and trained the padding
    row, which eager (as torch) never changes."""
    ids = np.array([[4, 1], [4, 0]])
    target = np.ones((2, 2, WIDTH))
    tables = []
    for execution in ("eager", "typed-graph"):
        trainer = Trainer(PadLast(), input_shape=(2,), seed=3,
                          config=RunConfig(optim.sgd(0.5), execution=execution, dtype="float64"))
        before = trainer.model.state()["e"].copy()
        trainer.step(ids, target)
        table = trainer.model.state()["e"]
        assert np.array_equal(table[4], before[4]) and not np.array_equal(table[1], before[1])
        tables.append(table)
    assert np.array_equal(*tables)


@pytest.mark.parametrize(
    ("padding", "error"), [(5, GuardError), (1.0, TensorTypeError), (True, TensorTypeError)]
)
def test_a_padding_idx_eager_refuses_the_graph_refuses_alike(padding: object, error: type[Exception]) -> None:
    ids = np.array([[4, 1]])
    for execution in ("eager", "typed-graph"):
        trainer = Trainer(PadLast(padding), input_shape=(2,), seed=3,
                          config=RunConfig(optim.sgd(0.5), execution=execution, dtype="float64"))
        with pytest.raises(error, match="padding_idx"):
            trainer.step(ids, np.ones((1, 2, WIDTH)))


@dataclass(frozen=True)
class Drops(Layer):
    """``dropout(p1) -> linear -> dropout(p2)``, dropout called whatever ``training`` says."""

    kind = "drops"
    first: Any = 0.0
    second: Any = 0.5

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        h = ops.linear(ops.dropout(x, self.first), params[0], None)
        return ops.dropout(h, self.second)


@pytest.mark.parametrize(("first", "second"), [(0.0, 0.5), (np.float32(0.3), 0.0)], ids=["p0", "np-float32"])
def test_dropout_draws_alike_in_both_modes(first: object, second: object) -> None:
    """review173 F3: the graph drew a mask for p == 0 (its counter ran ahead, later masks
    differed) and kept a np.float32 p's float32 rounding of 1 - p, which eager removes."""
    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((4, WIDTH)), rng.standard_normal((4, WIDTH))
    runs = []
    for execution in ("eager", "typed-graph"):
        trainer = _trainer(Drops(first, second), execution)
        losses = [trainer.step(x, y) for _ in range(2)]
        runs.append((losses, trainer.random_counter, trainer.model.state()["w"]))
    (eager_losses, eager_counter, eager_w), (graph_losses, graph_counter, graph_w) = runs
    assert eager_losses == graph_losses and eager_counter == graph_counter
    assert np.array_equal(eager_w, graph_w)


def test_dropout_in_an_evaluation_forward_is_the_identity_in_both_modes() -> None:
    """review173 F4: a layer calling ops.dropout without checking ``training`` dropped at random in
    eager predict (two predictions differed, each advancing the random counter) and failed in the
    typed graph ("expected 2 inputs, got 1"). Dropout is the identity in evaluation, as torch's."""
    x = np.ones((2, WIDTH))
    outputs = []
    for execution in ("eager", "typed-graph"):
        trainer = _trainer(Drops(0.5, 0.5), execution)
        w = trainer.model.state()["w"]
        first, second = trainer.predict(x), trainer.predict(x)
        assert np.array_equal(first, second) and trainer.random_counter == 0
        assert np.allclose(first, x @ w.T, rtol=1e-15, atol=0)
        outputs.append(first)
    assert np.array_equal(*outputs)


@dataclass(frozen=True)
class Twice(Layer):
    """Two parameters named alike, as a container that forgot ParamSpec.prefixed."""

    kind = "twice"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        spec = ParamSpec("w", (WIDTH, WIDTH), "uniform", 0.5)
        return (spec, spec)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.linear(ops.linear(x, params[0], None), params[1], None)


def test_repeated_parameter_names_are_refused_at_build() -> None:
    """review173 F6: the state kept one entry per name, so load_state(state()) failed."""
    with pytest.raises(ShapeError, match=r"^build: Twice\.param_specs repeats the parameter name w \(the "
                       r"model's state is keyed by name\): .*ParamSpec\.prefixed"):
        _trainer(Twice(), "eager")


def test_a_list_shape_is_a_tuple_and_bad_specs_are_refused() -> None:
    """review173 F7: a list shape trained, then every comparison with the value's shape refused
    ("shape [3, 3], expected [3, 3]"); negative, int or float shapes and negative, NaN or string
    bounds gave raw numpy errors or all-NaN weights."""
    assert ParamSpec("w", [3, 3], "uniform", 0.5).shape == (3, 3)
    assert ParamSpec("s", (), "ones").shape == ()
    assert ParamSpec("e", np.array([0, 2]), "zeros").shape == (0, 2)  # type: ignore[arg-type]
    for shape in ((3, -3), 3, (3.0,), (True,)):
        with pytest.raises(ShapeError, match=r"^parameter w: shape must be a tuple or list of ints >= 0"):
            ParamSpec("w", shape, "uniform", 0.5)  # type: ignore[arg-type]
    for bound in (-0.5, float("nan"), float("inf")):
        with pytest.raises(ShapeError, match=r"^parameter w: bound must be a finite number >= 0"):
            ParamSpec("w", (3,), "uniform", bound)
    with pytest.raises(ShapeError, match=r"^parameter w: bound must be a real number, got '0\.5'"):
        ParamSpec("w", (3,), "uniform", "0.5")  # type: ignore[arg-type]
    for name in ("", None):
        with pytest.raises(ShapeError, match=r"^ParamSpec: name must be a non-empty string"):
            ParamSpec(name, (3,), "zeros")  # type: ignore[arg-type]


@dataclass(frozen=True)
class Shaped(Layer):
    """A layer whose output_shape returns what it is given."""

    kind = "shaped"
    shape: Any = ()

    def output_shape(self, shape: tuple[int, ...]) -> Any:
        return self.shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("w", (WIDTH,), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.reduce_sum(ops.mul(x, params[0]), 1)


def test_output_shape_is_checked_and_a_scalar_output_trains_with_mse() -> None:
    """review173 F8: ``()`` failed step/fit with a raw IndexError; ``(1.0,)`` trained eagerly and
    the typed graph refused it without naming the layer."""
    x, y = np.ones((4, WIDTH)), np.zeros(4)
    losses = [_trainer(Shaped(()), execution).step(x, y) for execution in ("eager", "typed-graph")]
    assert losses[0] == losses[1] > 0
    with pytest.raises(ShapeError, match=r"^build: Shaped\.output_shape must return a tuple of ints >= 0"):
        _trainer(Shaped((1.0,)), "eager")
    with pytest.raises(TrainerError, match=r"^objective cross-entropy needs class logits .* Shaped's output "
                       r"shape is \(\)"):
        Trainer(Shaped(()), input_shape=(WIDTH,), objective="cross-entropy")


@dataclass(frozen=True)
class Normalised(Layer):
    """``layer_norm`` over ``ndim`` trailing axes of a ``(B, 2, 3)`` input."""

    kind = "normalised"
    ndim: int = 4

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("g", (3,), "ones"), ParamSpec("b", (3,), "zeros"))

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.layer_norm(x, params[0], params[1], normalized_ndim=self.ndim, eps=1e-5)


def test_a_layer_norm_past_the_rank_is_refused_in_both_modes() -> None:
    """review173 F5: the graph computed axis = rank - ndim = -1 and normalised the last axis, where
    eager refuses it."""
    for execution in ("eager", "typed-graph"):
        trainer = Trainer(Normalised(), input_shape=(2, 3), seed=3,
                          config=RunConfig(optim.sgd(0.1), execution=execution, dtype="float64"))
        with pytest.raises(GuardError, match=r"normalized_ndim=4 is out of range for x of shape \(2, 2, 3\) "
                           r"\(accepted: an int in \[1, 3\]\)"):
            trainer.predict(np.ones((2, 2, 3)))


@dataclass(frozen=True)
class Gain(Layer):
    """``s * x`` with a 0-d parameter ``s`` (ParamSpec shape ``()``)."""

    kind = "gain"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return shape

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("s", (), "ones"),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.mul(x, params[0])


def test_a_scalar_parameter_trains_in_both_modes() -> None:
    """review174 F2: the trainer's leaf tensors came from np.ascontiguousarray, which makes a 0-d
    array (1,), so the first step refused the parameter's shape. Oracle: by hand, one SGD step at
    lr 0.1 of mean((s*x - y)^2) from s = 1: s -= 0.1 * mean(2 (s x - y) x)."""
    x, y = np.full((2, WIDTH), 2.0), np.zeros((2, WIDTH))
    for execution in ("eager", "typed-graph"):
        trainer = _trainer(Gain(), execution)
        trainer.step(x, y)
        assert trainer.model.state()["s"].shape == ()
        assert float(trainer.model.state()["s"]) == pytest.approx(1.0 - 0.1 * 8.0, rel=1e-15)


@pytest.mark.parametrize("ndim", [1.0, True, None])
def test_a_layer_norm_ndim_that_is_no_integer_is_a_type_error_in_both_modes(ndim: object) -> None:
    """review174 F3: the graph reported 1.0, True or None as out of range (a GuardError), eager as
    no integer (a TensorTypeError, also a TypeError)."""
    for execution in ("eager", "typed-graph"):
        trainer = Trainer(Normalised(ndim), input_shape=(2, 3), seed=3,  # type: ignore[arg-type]
                          config=RunConfig(optim.sgd(0.1), execution=execution, dtype="float64"))
        with pytest.raises(TensorTypeError, match=r"^layer_norm: normalized_ndim must be an integer; got "):
            trainer.predict(np.ones((2, 2, 3)))


@dataclass(frozen=True)
class Forms(Layer):
    """A conv and a pool with int window arguments (torch's form), a Fraction scale and a reduction
    over one axis, on a ``(C=1, 4, 4)`` sample."""

    kind = "forms"
    axis: Any = 1

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (2, 2) if self.axis == 1 else (2, 2, 2)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return (ParamSpec("k", (2, 1, 3, 3), "uniform", 0.5),)

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        from fractions import Fraction

        h = ops.conv(x, params[0], None, stride=1, padding=1, dilation=1, groups=1)  # (B, 2, 4, 4)
        h = ops.max_pool(h, kernel_size=2, stride=2, padding=0)  # (B, 2, 2, 2)
        h = ops.scale(h, Fraction(1, 3))
        return ops.reduce_sum(h, self.axis) if self.axis == 1 else ops.reduce_mean(h, self.axis)


def test_int_windows_and_a_fraction_factor_lower_as_eager_reads_them() -> None:
    """review173 F5: the graph refused int stride/padding/dilation/kernel_size (torch's form, which
    eager takes) and a Fraction scale factor; they now lower to eager's bits."""
    x = np.linspace(-1, 1, 32).reshape(2, 1, 4, 4)
    outputs = []
    for execution in ("eager", "typed-graph"):
        trainer = Trainer(Forms(), input_shape=(1, 4, 4), seed=3,
                          config=RunConfig(optim.sgd(0.1), execution=execution, dtype="float64"))
        outputs.append(trainer.predict(x))
    assert np.array_equal(*outputs)


@pytest.mark.parametrize("axis", [(1, 2), None])
def test_a_reduction_over_several_axes_is_refused_by_the_graph_with_the_way_to_write_it(axis: object) -> None:
    refusal = r"^ops\.reduce_mean takes one integer axis .* reduce one axis per ops\.reduce_mean call"
    with pytest.raises(LoweringTypeError, match=refusal):
        Trainer(Forms(axis), input_shape=(1, 4, 4), seed=3,
                config=RunConfig(optim.sgd(0.1), execution="typed-graph", dtype="float64")
                ).predict(np.ones((1, 1, 4, 4)))


def test_a_tensor_attribute_on_a_graph_value_names_the_ops_method() -> None:
    """review175 F3: ``h.reshape(-1)`` (an eager Tensor method) gave a bare AttributeError; it is
    still an AttributeError (hasattr answers False) naming ops.reshape."""
    with pytest.raises(AttributeError, match=r"reads \.reshape of a graph value \(node \d+\): .* write "
                       r"ops\.reshape\(x, shape\)"):
        _trainer(Misuse("reshape"), "typed-graph").predict(np.ones((2, WIDTH)))


def test_dropout_checks_its_operand_where_it_drops_nothing() -> None:
    """review175 F2: in evaluation (and at p == 0) ops.dropout returned its operand unchecked, so a
    number passed where eager refuses it."""
    with pytest.raises(LoweringTypeError, match=r"a layer's ops call got 0\.5 \(float\) where a graph value"):
        _trainer(Misuse("dropout-number"), "typed-graph").predict(np.ones((2, WIDTH)))


@dataclass(frozen=True)
class Pooled(Layer):
    """A max pool with ``stride=None`` (the kernel size, as torch's) on a ``(C=1, 4, 4)`` sample."""

    kind = "pooled"

    def output_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        return (1, 2, 2)

    def param_specs(self) -> tuple[ParamSpec, ...]:
        return ()

    def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
        return ops.max_pool(x, kernel_size=2, stride=None, padding=0)


def test_a_pool_stride_of_none_is_the_kernel_size_in_both_modes() -> None:
    """review176 F1: eager (and torch) read stride=None as the kernel size; the graph refused it."""
    x = np.arange(32.0).reshape(2, 1, 4, 4)
    configs = [RunConfig(execution=execution, dtype="float64") for execution in ("eager", "typed-graph")]
    outputs = [Trainer(Pooled(), input_shape=(1, 4, 4), config=config).predict(x) for config in configs]
    assert np.array_equal(*outputs)
    assert np.array_equal(outputs[0][0, 0], [[5.0, 7.0], [13.0, 15.0]])


@pytest.mark.parametrize(("expression", "what"), [
    (lambda h: math.floor(h), "math\\.floor\\(\\)"),
    (lambda h: 2.0 ** h, "the operator \\*\\* \\(a power with a graph value as its exponent\\)"),
    (lambda h: h.ndim, "reads \\.ndim .* write ops\\.shape\\(x\\)"),
    (lambda h: h.dtype, "reads \\.dtype .* take the model's dtype, which every graph value has"),
])
def test_refusals_name_what_was_used(expression: Any, what: str) -> None:
    """review176 F3: math.floor was reported as round(), 2.0 ** h pointed at ops.mul(x, x)."""
    from torchlean.nn.handles import Node

    with pytest.raises((LoweringTypeError, AttributeError), match=what):
        expression(Node(3))


def test_shape_on_a_graph_value_is_an_attribute_refusal_so_hasattr_answers() -> None:
    """``hasattr(h, "shape")`` (a duck-typing probe) raised the ``.shape`` refusal, a TypeError, where
    every other Tensor attribute's refusal is an AttributeError, which hasattr answers False to."""
    from torchlean.nn.handles import Node

    assert not hasattr(Node(3), "shape")
    refusal = r"reads \.shape of a graph value \(node 3\): .* write ops\.shape\(x\)"
    with pytest.raises(AttributeError, match=refusal):
        Node(3).shape  # noqa: B018


def test_a_bool_reduction_axis_is_not_called_several_axes() -> None:
    from torchlean.nn.lowering import _one_axis

    with pytest.raises(LoweringTypeError) as refused:
        _one_axis("reduce_sum", True)
    assert "one axis per" not in str(refused.value) and "got True (bool)" in str(refused.value)


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_a_failing_forward_inside_a_sequential_names_the_layer(execution: str) -> None:
    """review173 F9: a refusal from a layer's forward did not say which layer of the model it came
    from; a sequential now adds a note (kept by the error's type and message) naming it."""
    from torchlean import nn

    model = nn.sequential(nn.linear(WIDTH, WIDTH), Misuse("dropout-number"))
    with pytest.raises((LoweringTypeError, TensorTypeError)) as refused:
        _trainer(model, execution).predict(np.ones((2, WIDTH)))
    assert "in the forward of misuse, layer 1 of a sequential" in getattr(refused.value, "__notes__", [])
