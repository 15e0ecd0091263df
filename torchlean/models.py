"""Ready-made model families used by ``torchlean train`` (``mlp``, ``cnn``, ``transformer``).

* ``mlp``: ``linear(n, hidden) -> relu -> linear(hidden, hidden) -> relu -> linear(hidden, out)``
  (two hidden layers).
* ``cnn``: for square single-channel images (digits: 64 features = 1x8x8):
  ``conv2d(1, 16, 3, padding=1) -> relu -> max_pool2d(2) -> conv2d(16, 32, 3, padding=1) -> relu
  -> max_pool2d(2) -> flatten -> linear(32*(s/4)^2, hidden) -> relu -> linear(hidden, out)``.
* ``transformer``: each square image of side s becomes s tokens of s pixels (a row each),
  ``linear(s, 32) + learned positions -> transformer_block(32, heads=4, mlp_hidden=hidden) -> mean
  over tokens -> linear(32, out)`` (model width 32; ``hidden`` sizes the block's MLP, not
  :func:`torchlean.nn.transformer_block`'s default of 4 x the width).

``dropout=p`` (``torchlean train --dropout P``) with ``0 < p < 1`` inserts ``dropout(p)``
(:func:`torchlean.nn.dropout`, ``torch.nn.Dropout``: inverted dropout in training, the identity
in evaluation, so ``predict`` and the test metric run without it) where these families usually
take it:

* ``mlp``: after each hidden ``relu`` (``linear -> relu -> dropout -> linear -> relu -> dropout
  -> linear``);
* ``cnn``: after the classifier's hidden ``relu``, before the last ``linear`` (the convolutions
  keep none, as in the classic LeNet/AlexNet heads);
* ``transformer``: after the learned positions (GPT's embedding dropout) and after the mean over
  tokens, before the last ``linear`` (a classifier head's dropout); the block itself has none, as
  :func:`torchlean.nn.transformer_block` has none.

With ``p = 0`` (the default) the layer list is exactly the one above, so the parameter names
(``<position>.<name>``, :func:`torchlean.nn.sequential`) and the checkpoints of such models are
unchanged; with ``p > 0`` the dropout layers take positions of their own and the parameters after
them are numbered on (``mlp``: ``0.*``, ``3.*``, ``6.*``), as in ``torch.nn.Sequential``. Dropout
has no parameters, so the initial weights are the same for every ``p`` (they are drawn by
parameter index). ``p = 1`` is refused, though ``nn.dropout(1.0)`` is torch's (all zeros): every
layer before the last dropout would get zero gradients and never train, and the output would not
depend on the input in training.
"""

from __future__ import annotations

import math
import numbers

import numpy as np

from torchlean import nn
from torchlean._checks import checked_int
from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError
from torchlean.nn.layers import Layer, ShapeError
from torchlean.tensor import RealLike

__all__ = ["MODELS", "build_model", "checked_dropout"]

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


def checked_dropout(p: object) -> float:
    """``p`` as a float drop probability for :func:`build_model`: a real number (Python or numpy;
    bools and strings refused) in ``[0, 1)``; ``-0.0`` is taken as ``0.0``.

    Raises:
        ShapeError: ``dropout must be a real number in [0, 1), got 'a'``; ``... got 1.0 (p = 1
            drops every value: nothing before the dropout would train)``; NaN and infinities
            refused the same way.
    """
    if isinstance(p, bool | np.bool_) or not isinstance(p, numbers.Real):
        raise ShapeError(f"dropout must be a real number in [0, 1), got {p!r}")
    try:
        value = float(p)
    except OverflowError:  # an int beyond the float range
        value = math.inf
    if value == 1.0:
        raise ShapeError(
            "dropout must be a real number in [0, 1), got 1.0 (p = 1 drops every value: nothing before "
            "the dropout would train)"
        )
    if not 0.0 <= value < 1.0:  # NaN fails too
        raise ShapeError(f"dropout must be a real number in [0, 1), got {value!r}")
    return value + 0.0  # -0 is 0


def build_model(
    name: str, features: int, outputs: int, *, hidden: int = 64, dropout: RealLike = 0.0
) -> tuple[Layer, tuple[int, ...]]:
    """The model ``name`` for ``features`` inputs and ``outputs`` outputs, and its input shape.

    Returns ``(layer, (features,))``: every family takes flat per-sample rows ``(features,)``
    (``cnn`` and ``transformer`` reshape them to their square image inside the layer) and gives
    per-sample outputs ``(outputs,)``; the layer is a description without weights, instantiated
    by :func:`torchlean.nn.model.build` in float32 or float64. The layer recipes are the module
    docstring's (this project's, used by ``torchlean train --model``; ``hidden`` is the width of
    the hidden layers of ``mlp``, of ``cnn``'s classifier and of ``transformer``'s block MLP,
    whose model width is 32); ``dropout`` (a drop
    probability in ``[0, 1)``, ``torchlean train --dropout``) adds ``nn.dropout(dropout)`` layers
    where the module docstring says, none for 0.

    Raises:
        UnknownLabelError: ``name`` is not one of :data:`MODELS` (checked after the sizes).
        ShapeError: ``features``, ``outputs`` or ``hidden`` is not an int (Python or numpy; bools
            and floats refused, as the ``nn`` builders refuse them) >= 1, or the data do not fit
            the model family (``cnn``/``transformer``: ``features`` not a perfect square;
            ``cnn``: an image side below 4, i.e. ``features < 16``); ``dropout`` not a real number
            in ``[0, 1)`` (:func:`checked_dropout`).
    """
    features = checked_int(features, "features", 1, ShapeError)
    outputs = checked_int(outputs, "outputs", 1, ShapeError)
    hidden = checked_int(hidden, "hidden", 1, ShapeError)
    p = checked_dropout(dropout)
    drop: tuple[Layer, ...] = (nn.dropout(p),) if p > 0.0 else ()
    if name == "mlp":
        layer = nn.sequential(
            nn.linear(features, hidden),
            nn.relu(),
            *drop,
            nn.linear(hidden, hidden),
            nn.relu(),
            *drop,
            nn.linear(hidden, outputs),
        )
        return layer, (features,)
    if name == "cnn":
        side = _square_side(features, name)
        pooled = side // 4
        if pooled < 1:
            raise ShapeError(
                f"model cnn reads the features of a row as one square single-channel image of side >= 4; "
                f"{features} {'feature makes' if features == 1 else 'features make'} a {side}x{side} image "
                f"(accepted: {_squares(name)}; model mlp "
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
            *drop,
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
            *drop,
            nn.transformer_block(d_model, 4, mlp_hidden=hidden),
            nn.mean_pool(0),
            *drop,
            nn.linear(d_model, outputs),
        )
        return layer, (features,)
    raise UnknownLabelError(f"unknown model {name_shown(name)} (known: {' | '.join(MODELS)})")
