"""Ready-made model families used by ``torchlean train`` (``mlp``, ``cnn``, ``transformer``).

* ``mlp``: ``linear(n, hidden) -> relu -> linear(hidden, hidden) -> relu -> linear(hidden, out)``
  (two hidden layers).
* ``cnn``: for square single-channel images (digits: 64 features = 1x8x8):
  ``conv2d(1, 16, 3, padding=1) -> relu -> max_pool2d(2) -> conv2d(16, 32, 3, padding=1) -> relu
  -> max_pool2d(2) -> flatten -> linear(32*(s/4)^2, hidden) -> relu -> linear(hidden, out)``.
* ``transformer``: each square image of side s becomes s tokens of s pixels (a row each),
  ``linear(s, d) + learned positions -> transformer_block(d, heads) -> mean over tokens ->
  linear(d, out)``.
"""

from __future__ import annotations

import math

from torchlean import nn
from torchlean._checks import checked_int
from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError
from torchlean.nn.layers import Layer, ShapeError

__all__ = ["MODELS", "build_model"]

MODELS = ("mlp", "cnn", "transformer")


def _square_side(features: int, model: str) -> int:
    side = math.isqrt(features)
    if side * side != features:
        raise ShapeError(
            f"model {model} reads the features of a row as one square single-channel image (side s: "
            f"s*s features); {features} features is not a square (accepted: {_squares(model)}; "
            "model mlp takes any number)"
        )
    return side


def _squares(model: str) -> str:
    """The feature counts ``model`` takes, as its refusals name them."""
    first = 4 if model == "cnn" else 1
    return ", ".join(str(side * side) for side in range(first, first + 4)) + ", ..."


def build_model(name: str, features: int, outputs: int, *, hidden: int = 64) -> tuple[Layer, tuple[int, ...]]:
    """The model ``name`` for ``features`` inputs and ``outputs`` outputs, and its input shape.

    Returns ``(layer, (features,))``: every family takes flat per-sample rows ``(features,)``
    (``cnn`` and ``transformer`` reshape them to their square image inside the layer) and gives
    per-sample outputs ``(outputs,)``; the layer is a description without weights, instantiated
    by :func:`torchlean.nn.model.build` in float32 or float64. The layer recipes are the module
    docstring's (this project's, used by ``torchlean train --model``).

    Raises:
        UnknownLabelError: ``name`` is not one of :data:`MODELS` (checked after the sizes).
        ShapeError: ``features``, ``outputs`` or ``hidden`` is not an int (Python or numpy; bools
            and floats refused, as the ``nn`` builders refuse them) >= 1, or the data do not fit
            the model family (``cnn``/``transformer``: ``features`` not a perfect square;
            ``cnn``: an image side below 4, i.e. ``features < 16``).
    """
    features = checked_int(features, "features", 1, ShapeError)
    outputs = checked_int(outputs, "outputs", 1, ShapeError)
    hidden = checked_int(hidden, "hidden", 1, ShapeError)
    if name == "mlp":
        layer = nn.sequential(
            nn.linear(features, hidden),
            nn.relu(),
            nn.linear(hidden, hidden),
            nn.relu(),
            nn.linear(hidden, outputs),
        )
        return layer, (features,)
    if name == "cnn":
        side = _square_side(features, name)
        pooled = side // 4
        if pooled < 1:
            raise ShapeError(
                f"model cnn reads the features of a row as one square single-channel image of side >= 4; "
                f"{features} features is a {side}x{side} image (accepted: {_squares(name)}; model mlp "
                "takes any number)"
            )
        layer = nn.sequential(
            nn.reshape(1, side, side),
            nn.conv2d(1, 16, 3, padding=1),
            nn.relu(),
            nn.max_pool2d(2),
            nn.conv2d(16, 32, 3, padding=1),
            nn.relu(),
            nn.max_pool2d(2),
            nn.flatten(),
            nn.linear(32 * pooled * pooled, hidden),
            nn.relu(),
            nn.linear(hidden, outputs),
        )
        return layer, (features,)
    if name == "transformer":
        side = _square_side(features, name)
        d_model = 32
        layer = nn.sequential(
            nn.reshape(side, side),
            nn.linear(side, d_model),
            nn.positional_embedding(side, d_model),
            nn.transformer_block(d_model, 4, mlp_hidden=hidden),
            nn.mean_pool(0),
            nn.linear(d_model, outputs),
        )
        return layer, (features,)
    raise UnknownLabelError(f"unknown model {name_shown(name)} (known: {' | '.join(MODELS)})")
