"""review220 F2: a layer of one's own whose ``param_specs`` returns one spec bare, plain tuples, a
dict or ``None`` in a list failed deep in ``build`` or a container with Python's own
``TypeError``/``AttributeError``, naming no layer; now a ``ShapeError`` naming the layer's class and
what it returned, at top level and inside ``nn.sequential`` and ``nn.residual`` alike."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np
import pytest

from torchlean import nn
from torchlean.nn.layers import Layer, ParamSpec, ShapeError
from torchlean.trainer import Trainer

RETURNS: list[tuple[Any, str]] = [
    (ParamSpec("g", (2,), "ones"),
     "ParamSpec(name='g', shape=(2,), init='ones', bound=0.0, trainable=True, zero_row=None) (ParamSpec)"),
    ((("g", (2,), "ones"),), "a tuple holding ('g', (2,), 'ones') (tuple)"),
    ({"g": (2,)}, "{'g': (2,)} (dict)"),
    ([None], "a list holding None (NoneType)"),
    (None, "None (NoneType)"),
]


def _layer(returned: Any) -> Layer:
    @dataclass(frozen=True)
    class Scale(Layer):
        kind = "scale"

        def output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
            return input_shape

        def param_specs(self) -> Any:
            return returned

        def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
            return ops.mul(x, params[0])

    return Scale()


@pytest.mark.parametrize(("returned", "shown"), RETURNS)
@pytest.mark.parametrize("where", ["alone", "sequential", "residual"])
def test_param_specs_that_are_not_a_tuple_of_specs_are_named(returned: Any, shown: str, where: str) -> None:
    own = _layer(returned)
    layers = {"alone": own, "sequential": nn.sequential(nn.linear(2, 2), own), "residual": nn.residual(own)}
    layer = layers[where]
    x = np.ones((4, 2), np.float32)
    with pytest.raises(ShapeError) as info:
        Trainer(layer, input_shape=(2,)).fit(x, x, epochs=1)
    assert str(info.value) == (
        "Scale.param_specs must return a tuple of ParamSpec (one spec as (spec,); none as ()), got " + shown
    )


@pytest.mark.parametrize("returned", [(ParamSpec("g", (2,), "ones"),), [ParamSpec("g", (2,), "ones")]])
def test_a_tuple_or_list_of_specs_builds(returned: Any) -> None:
    model = nn.build(nn.sequential(nn.linear(2, 2), _layer(returned)), input_shape=(2,))
    assert [spec.name for spec in model.specs] == ["0.weight", "0.bias", "1.g"]
    np.testing.assert_array_equal(model.parameters[-1], np.ones(2, np.float32))


def test_param_specs_as_a_class_attribute_is_named() -> None:
    """review226 F3: ``param_specs = (...)`` on the class gave ``'tuple' object is not callable``."""

    @dataclass(frozen=True)
    class Held(Layer):
        kind = "held"
        param_specs = (ParamSpec("g", (2,), "ones"),)  # type: ignore[assignment]

        def output_shape(self, input_shape: tuple[int, ...]) -> tuple[int, ...]:
            return input_shape

        def forward(self, ops: Any, params: Any, x: Any, *, training: bool) -> Any:
            return ops.mul(x, params[0])

    for layer in (Held(), nn.sequential(nn.linear(2, 2), Held())):
        with pytest.raises(ShapeError) as info:
            nn.build(layer, input_shape=(2,))
        assert str(info.value).startswith("Held.param_specs must be a method returning a tuple of ParamSpec, "
                                          "got (ParamSpec(name='g'")
        assert str(info.value).endswith("(tuple): write def param_specs(self): return (...)")
