"""What ``torchlean train`` says of a classifier on imbalanced data (review68 F6): accuracy alone
hides a model that does no better than always predicting the most frequent class (0.9938 against
a 0.995 majority share), so the run also reports the balanced accuracy (the mean of the per-class
recalls, scikit-learn's ``balanced_accuracy_score``) and, on an imbalanced test split (its most
frequent class at least :data:`IMBALANCED_SHARE` of its rows), notes an accuracy that does not beat
that class's share."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np

from torchlean import data
from torchlean.trainer import Trainer

__all__ = ["IMBALANCED_SHARE", "Baseline", "balanced_accuracy", "baseline_note"]

IMBALANCED_SHARE = 0.75
"""A test split whose most frequent class holds this share of its rows or more (3 to 1 for two
classes) is imbalanced: there accuracy alone misleads."""

Baseline = tuple[int, float]
"""The test split's most frequent class (its id) and its share of the test rows."""


def balanced_accuracy(trainer: Trainer[Any, Any],
                      dataset: data.Dataset) -> tuple[float | None, Baseline | None]:
    """The balanced accuracy of ``trainer``'s predictions (the argmax of its outputs) on the test
    split, scikit-learn's ``balanced_accuracy_score`` (the mean recall over the classes present in
    the test rows; a class with no test row does not count), and the majority :data:`Baseline`;
    ``(None, None)`` for an empty test split.

    Source: scikit-learn's ``sklearn.metrics.balanced_accuracy_score`` (Brodersen et al. 2010).
    """
    from sklearn.metrics import balanced_accuracy_score

    labels = np.asarray(dataset.y_test).astype(np.int64)
    if labels.size == 0:
        return None, None
    predicted = np.asarray(trainer.predict(dataset.x_test)).argmax(axis=1)
    counts = np.bincount(labels)
    majority = int(np.argmax(counts))
    share = float(counts[majority] / labels.size)
    with warnings.catch_warnings():  # "y_pred contains classes not in y_true": such classes count
        warnings.simplefilter("ignore", UserWarning)  # for nothing, as the docstring says
        balanced = float(balanced_accuracy_score(labels, predicted))
    return balanced, (majority, share)


def baseline_note(accuracy: float, balanced: float | None, baseline: Baseline | None,
                  class_names: Sequence[str]) -> str:
    """A ``note:`` when the test split is imbalanced (``baseline``'s share at least
    :data:`IMBALANCED_SHARE`) and ``accuracy`` is not above that share: always predicting its
    majority class would score as well (the balanced accuracy tells them apart); else ``""``."""
    if baseline is None or balanced is None or baseline[1] < IMBALANCED_SHARE or accuracy > baseline[1]:
        return ""
    majority, share = baseline
    return (f"note: test_accuracy={accuracy:.4f} is not above {share:.4f}, the share of the test rows of "
            f"its most frequent class ({data.display_name(class_names[majority])}): always predicting that "
            "class would score as well; the balanced accuracy (the mean recall over the classes, "
            f"test_balanced_accuracy in --report-json) tells them apart: {balanced:.4f}")
