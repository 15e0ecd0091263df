"""The datasets shipped with scikit-learn (no network): :data:`DATASETS` and :func:`shipped`, a whole
dataset unsplit and unscaled, both re-exported by :mod:`torchlean.data` (whose
:func:`~torchlean.data.load` splits and standardises them).

Shipped datasets (scikit-learn ``load_*``): ``digits`` (default; 1797 x 64, 10 classes),
``iris`` (150 x 4, 3), ``breast_cancer`` (569 x 30, 2), ``wine`` (178 x 13, 3) — classification
with integer labels — and ``diabetes`` (442 x 10) — regression.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeAlias

import numpy as np
import numpy.typing as npt

from torchlean._labels import Task
from torchlean.backend.display import name_shown
from torchlean.backend.errors import UnknownLabelError

__all__ = ["DATASETS", "shipped"]

Array: TypeAlias = npt.NDArray[Any]

DATASETS: tuple[str, ...] = ("digits", "iris", "breast_cancer", "wine", "diabetes")
"""Names of the shipped datasets, in the order error messages list them."""


def _loaders() -> dict[str, tuple[Callable[[], Any], Task]]:
    from sklearn import datasets

    return {
        "digits": (datasets.load_digits, "classification"),
        "iris": (datasets.load_iris, "classification"),
        "breast_cancer": (datasets.load_breast_cancer, "classification"),
        "wine": (datasets.load_wine, "classification"),
        "diabetes": (datasets.load_diabetes, "regression"),
    }


def shipped(name: str) -> tuple[Array, Array, tuple[str, ...], tuple[str, ...], Task]:
    """The whole shipped dataset ``name``, unsplit and unscaled: features float64
    ``[n, n_features]``, labels (int64 class ids ``0 .. n_classes - 1``, or float64 targets),
    feature names, class names (``()`` for regression) and task.

    Raises:
        UnknownLabelError: ``name`` is not one of :data:`DATASETS`.
    """
    loaders = _loaders()
    if not isinstance(name, str) or name not in loaders:  # a list or an array: review239 F7
        raise UnknownLabelError(f"unknown dataset {name_shown(name)} (known: {' | '.join(DATASETS)})")
    loader, kind = loaders[name]
    bunch = loader()
    x = np.asarray(bunch.data, dtype=np.float64)
    features = tuple(str(f) for f in bunch.feature_names)
    if kind == "classification":
        return (
            x,
            np.asarray(bunch.target, dtype=np.int64),
            features,
            tuple(str(c) for c in bunch.target_names),
            kind,
        )
    return x, np.asarray(bunch.target, dtype=np.float64), features, (), kind
