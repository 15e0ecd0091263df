"""What ``torchlean train`` says of a classifier on imbalanced data (review68 F6): accuracy alone
hides a model that does no better than always predicting the most frequent class (0.9938 against
a 0.995 majority share), so the run also reports the balanced accuracy (the mean of the per-class
recalls, scikit-learn's ``balanced_accuracy_score``) and, on an imbalanced test split (its most
frequent class at least :data:`IMBALANCED_SHARE` of its rows), notes an accuracy that does not beat
that class's share."""

from __future__ import annotations

import math
import warnings
from collections.abc import Sequence
from typing import Any

import numpy as np
import numpy.typing as npt

from torchlean import data

__all__ = ["IMBALANCED_SHARE", "Baseline", "baseline_note", "test_metrics"]

IMBALANCED_SHARE = 0.75
"""A test split whose most frequent class holds this share of its rows or more (3 to 1 for two
classes) is imbalanced: there accuracy alone misleads."""

Baseline = tuple[int, float]
"""The test split's most frequent class (its id) and its share of the test rows."""


def test_metrics(
    logits: npt.NDArray[Any], dataset: data.Dataset
) -> tuple[float, float | None, Baseline | None]:
    """The accuracy of a model's test-split outputs ``logits`` (``trainer.predict(x_test)``, one
    pass: review76 F4), their balanced accuracy and the majority :data:`Baseline`. A prediction is
    the argmax of a row's outputs; a row whose outputs are not all finite predicts no class and
    counts as wrong, as :meth:`Trainer.evaluate` counts it (whose accuracy this is, bit for bit:
    :meth:`Trainer.predict` runs the same 256-row chunks). The balanced accuracy is scikit-learn's
    ``balanced_accuracy_score`` (the mean recall over the classes present in the test rows; a class
    with no test row does not count). An empty test split gives ``(nan, None, None)``.

    Source: scikit-learn's ``sklearn.metrics.balanced_accuracy_score`` (Brodersen et al. 2010).
    """
    from sklearn.metrics import balanced_accuracy_score

    labels = np.asarray(dataset.y_test).astype(np.int64)
    if labels.size == 0:
        return math.nan, None, None
    predicted = np.where(np.isfinite(logits).all(axis=1), logits.argmax(axis=1), -1)
    accuracy = int(np.count_nonzero(predicted == labels)) / labels.size
    counts = np.bincount(labels)
    majority = int(np.argmax(counts))
    share = float(counts[majority] / labels.size)
    with warnings.catch_warnings():  # "y_pred contains classes not in y_true": such classes (and the
        warnings.simplefilter("ignore", UserWarning)  # -1 of a row without a class) count for nothing
        balanced = float(balanced_accuracy_score(labels, predicted))
    return accuracy, balanced, (majority, share)


def baseline_note(accuracy: float, balanced: float | None, baseline: Baseline | None,
                  class_names: Sequence[str]) -> str:
    """A ``note:`` when the test split is imbalanced (``baseline``'s share at least
    :data:`IMBALANCED_SHARE`) and ``accuracy`` is not above that share: always predicting its
    majority class would score as well (the balanced accuracy tells them apart; but not where the
    test rows hold that one class only, whose recall it is, which the note then says: review133
    F6); else ``""``."""
    if baseline is None or balanced is None or baseline[1] < IMBALANCED_SHARE or accuracy > baseline[1]:
        return ""
    majority, share = baseline
    name = data.display_name(class_names[majority])
    tells = (f"the test rows hold only class {name}, so they cannot tell the model from always predicting it"
             if share == 1.0 else "the balanced accuracy (the mean recall over the classes, "
             f"test_balanced_accuracy in --report-json) tells them apart: {balanced:.4f}")
    return (f"note: test_accuracy={accuracy:.4f} is not above {share:.4f}, the share of the test rows of "
            f"its most frequent class ({name}): always predicting that class would score as well; {tells}")
