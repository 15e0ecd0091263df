"""review132 F10: a layer whose forward disagrees with its declared output_shape is refused with a
ShapeError naming the layer and both shapes, in predict, evaluate and fit, eager and typed graph."""

from dataclasses import dataclass

import numpy as np
import pytest

from torchlean import nn
from torchlean.nn import Layer
from torchlean.nn.layers import ShapeError
from torchlean.trainer import RunConfig, Trainer


@dataclass(frozen=True)
class Head(Layer):
    kind = "head"

    def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
        return (2,)

    def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
        return x  # really 3 wide


X = np.random.default_rng(0).random((10, 4))
Y = np.arange(10) % 2


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_mismatched_forward_refused(execution: str) -> None:
    t = Trainer(nn.sequential(nn.linear(4, 3), Head()), objective="cross-entropy",
                config=RunConfig(execution=execution))
    shapes = r"produced outputs of shape \(10, 3\), but its output_shape gives \(10, 2\)"
    for call in (lambda: t.predict(X), lambda: t.evaluate(X, Y), lambda: t.fit(X, Y, batch_size=10)):
        with pytest.raises(ShapeError, match=r"^head, layer 1 of a sequential, " + shapes):
            call()
    alone = Trainer(Head(), objective="cross-entropy", input_shape=(3,),
                    config=RunConfig(execution=execution))
    with pytest.raises(ShapeError, match=r"^head produced outputs of shape \(10, 3\), but its output_shape "):
        alone.predict(X[:, :3])


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
def test_a_mismatched_layer_inside_a_sequential_is_named_not_the_next_one(execution: str) -> None:
    """review214 F2: inside a sequential, the next layer refused the shape (a GuardError deep in
    the guards, or an IRError) and its note named that layer; the sequential now checks each layer
    of one's own against its output_shape and names it."""
    t = Trainer(nn.sequential(nn.linear(4, 3), Head(), nn.linear(2, 2)), objective="cross-entropy",
                config=RunConfig(execution=execution))
    refusal = (r"^head, layer 1 of a sequential, produced outputs of shape \(10, 3\), but its "
               r"output_shape gives \(10, 2\) for inputs of shape \(10, 3\)")
    with pytest.raises(ShapeError, match=refusal):
        t.fit(X, Y, batch_size=10)


@dataclass(frozen=True)
class NoValue(Layer):
    """A layer of one's own whose forward returns no value: None (a forgotten return) or a pair."""

    pair: bool = False
    kind = "no_value"

    def output_shape(self, input_shape):  # type: ignore[no-untyped-def]
        return input_shape

    def forward(self, ops, params, x, *, training):  # type: ignore[no-untyped-def]
        y = ops.relu(x)
        return (y, y) if self.pair else None


@pytest.mark.parametrize("execution", ["eager", "typed-graph"])
@pytest.mark.parametrize(("pair", "returned"), [(False, "None"), (True, "a tuple")])
def test_a_layer_inside_a_sequential_that_returns_no_value_is_named(
    execution: str, pair: bool, returned: str
) -> None:
    """review218 F3, review219 F1: the new check's ops.shape of None or of a tuple was a bare
    AttributeError (eager) or a LoweringTypeError (typed graph) naming no layer."""
    t = Trainer(nn.sequential(nn.linear(4, 3), NoValue(pair), nn.linear(3, 2)), objective="cross-entropy",
                config=RunConfig(execution=execution))
    refusal = rf"^no_value, layer 1 of a sequential, returned {returned} from its forward"
    with pytest.raises(ShapeError, match=refusal):
        t.fit(X, Y, batch_size=10)
