"""Train/test and validation splits of a dataset's rows: :func:`split_rows`,
:func:`validation_rows`, and the notes on a split, :func:`split_note` and
:func:`class_coverage_note`
(re-exported by :mod:`torchlean.data`, whose :func:`~torchlean.data.load` splits with them, then
standardises the features), and the default :data:`TEST_FRACTION`.

The train/test split is scikit-learn's ``train_test_split`` with the seed, stratified by class for
classification whenever every class has at least two samples and both splits can hold every class;
the validation part is ``train_test_split`` of the train split's rows with the same seed, stratified
by class for classification.
"""

from __future__ import annotations

import math
import numbers
from collections.abc import Sequence
from typing import Any, TypeAlias, cast

import numpy as np
import numpy.typing as npt

from torchlean._checks import is_builtin_or_numpy_int, shown, shown_briefly
from torchlean._data_errors import ClassSplitError, DataError, EmptySplitError
from torchlean._labels import Task, refuse_unknown_task
from torchlean._torch_host import is_torch_tensor, numpy_readable, torch_refusal
from torchlean.backend.display import name_shown

__all__ = ["TEST_FRACTION", "class_coverage_note", "split_note", "split_rows", "validation_rows"]

Array: TypeAlias = npt.NDArray[Any]

TEST_FRACTION = 0.2
"""The default test fraction of :func:`torchlean.data.load`'s train/test split (``torchlean train
--test-fraction``'s default, and the one a checkpoint written before that option means)."""


def split_rows(
    y: Array, task: Task, seed: int, test_fraction: float = TEST_FRACTION, *, source: str = "the data"
) -> tuple[Array, Array]:
    """The train and test row indices (int64, each in the order of the split) of :func:`torchlean.data.load`'s
    split of ``n = len(y)`` samples: scikit-learn's ``train_test_split`` with ``random_state=seed``,
    shuffled, ``ceil(test_fraction * n)`` test rows, stratified by class for classification when
    every class of ``y`` (int64 class ids) has at least two samples and each split can hold a
    sample of every class (else not stratified: :func:`split_note` says why). ``torchlean predict
    --split`` repeats the split of ``torchlean train``
    (same rows in the same order, same seed) with it.

    Raises:
        UnknownLabelError: a task other than classification or regression.
        DataError: labels that are not ``[n]`` class ids (classification) or real numbers;
            ``seed`` not an integer in ``[0, 2**32)``; ``test_fraction`` not a real number in
            ``(0, 1)``; :class:`EmptySplitError` (a DataError): a split of ``source`` leaving no
            train or test sample.
    """
    from sklearn.model_selection import train_test_split

    y = _checked_labels(y, task)
    _check_seed(seed)
    _check_fraction(test_fraction, "test_fraction")
    n = len(y)
    n_test = math.ceil(float(test_fraction) * n)
    if n_test < 1 or n - n_test < 1:
        raise EmptySplitError(
            f"{source}: a test fraction of {test_fraction} of {n} samples leaves an empty split",
            samples=n, test_fraction=float(test_fraction), test_rows=n_test,
        )
    stratify = y if task == "classification" and _unstratified_reason(y, n_test) is None else None
    train, test = train_test_split(
        np.arange(n, dtype=np.int64), test_size=float(test_fraction), random_state=int(seed), shuffle=True,
        stratify=stratify,
    )
    return np.asarray(train, dtype=np.int64), np.asarray(test, dtype=np.int64)


def _checked_labels(y: object, task: object) -> Array:
    """``y`` as the array the split functions take: one label per sample (``[n]``), int64 class
    ids >= 0 for classification, real numbers for regression (review136 F2: numpy's TypeErrors,
    or an unknown task silently split unstratified).

    Raises:
        UnknownLabelError: an unknown task, as :func:`torchlean.data.load` refuses it.
        DataError: naming the shape or dtype given and what is accepted.
    """
    refuse_unknown_task(task)
    if is_torch_tensor(y):  # one that requires grad or has no values: by name (review239 F5)
        refusal = torch_refusal("labels", y)
        if refusal is not None:
            raise DataError(refusal)
        y = numpy_readable(y)  # bfloat16 targets, as the trainer reads them
    try:
        labels = np.asarray(y)
    except ValueError as error:
        raise DataError(f"labels must be a one-dimensional array [n]: {error}") from None
    except (TypeError, RuntimeError) as error:  # bfloat16; a list holding such tensors
        raise DataError(f"labels: numpy cannot read {shown_briefly(y)}: {error}") from None
    if labels.ndim != 1:
        raise DataError(f"labels must be a one-dimensional array [n], got shape {labels.shape}")
    if task == "classification":
        if labels.dtype.kind not in "iu" or (labels.size and labels.min() < 0):
            raise DataError(
                f"classification labels must be class ids, integers >= 0 (as Dataset.y_train holds "
                f"them), got dtype {labels.dtype}"
                + (f" with minimum {labels.min()}" if labels.dtype.kind in "iu" else "")
            )
    elif labels.dtype.kind not in "iuf":
        raise DataError(f"regression targets must be real numbers, got dtype {labels.dtype}")
    return labels


def _check_seed(seed: object) -> None:
    """Refuse a split seed that is not an integer in ``[0, 2**32)``.

    Raises:
        DataError: ``seed must be an integer in [0, 2**32) (...), got -1``.
    """
    if not is_builtin_or_numpy_int(seed) or not 0 <= int(seed) < 2**32:
        raise DataError(
            f"seed must be an integer in [0, 2**32) (scikit-learn's train_test_split seeds a numpy "
            f"RandomState), got {shown(seed)}"
        )


def _check_fraction(fraction: object, what: str) -> None:
    """Refuse a ``test_fraction`` or ``val_fraction`` that is not a real number in ``(0, 1)``.

    Raises:
        DataError: ``test_fraction must be a real number (int or float) in (0, 1), got 'a'``;
            ``val_fraction must be in (0, 1), got 1.5``.
    """
    if isinstance(fraction, bool | np.bool_) or not isinstance(fraction, numbers.Real):
        raise DataError(f"{what} must be a real number (int or float) in (0, 1), got {shown(fraction)}")
    if not 0 < cast(float, fraction) < 1:  # an int of 400 digits too, which float() refuses
        raise DataError(f"{what} must be in (0, 1), got {shown(fraction)}")


def validation_rows(
    y_train: Array,
    task: Task,
    seed: int,
    val_fraction: float,
    *,
    source: str = "the data",
    classes: Sequence[str] = (),
) -> tuple[Array, Array]:
    """The positions (int64, into the train split, each in the order of the split) of the part
    trained on and of the validation part that :func:`torchlean.data.load`'s ``val_fraction`` holds out of the
    train split whose labels are ``y_train`` (int64 class ids for classification):
    scikit-learn's ``train_test_split(np.arange(n), test_size=val_fraction, random_state=seed,
    shuffle=True, stratify=y_train)`` (``stratify=None`` for regression), so
    ``ceil(val_fraction * n)`` validation rows. A classification split must leave every class of
    the train split at least one sample in each part (the validation loss and accuracy then
    cover every class the model is trained on); ``classes`` name the class ids in messages.

    Raises:
        UnknownLabelError, DataError: labels or a task that :func:`split_rows` refuses;
            ``seed`` not an integer in ``[0, 2**32)`` (as :func:`split_rows`; review136 F1);
            ``val_fraction`` not a real number in ``(0, 1)``; a part left empty.
        ClassSplitError: for classification, a class with fewer than 2 train-split samples, a
            part too small to hold one sample of each class, or a class the stratified split
            leaves out of a part (scikit-learn allots each class a whole number of samples, so a
            rare class can get none of a small part): each names ``source``, the class and what
            is accepted.
    """
    from sklearn.model_selection import train_test_split

    y_train = _checked_labels(y_train, task)
    _check_seed(seed)
    _check_fraction(val_fraction, "val_fraction")
    n = len(y_train)
    n_val = math.ceil(float(val_fraction) * n)
    parts = f"{n_val} validation and {n - n_val} to train on"
    if n_val < 1 or n - n_val < 1:
        raise DataError(
            f"{source}: a validation fraction of {val_fraction} of the {n} train-split samples leaves an "
            f"empty part ({parts}; accepted: a fraction that leaves at least one sample in each)"
        )
    stratify = None
    if task == "classification":
        present, counts = np.unique(y_train, return_counts=True)

        def name(class_id: object) -> str:
            index = int(class_id)  # type: ignore[call-overload]
            return repr(classes[index]) if index < len(classes) else str(index)

        if counts.min() < 2:
            rare = present[counts < 2]
            raise ClassSplitError(
                f"{source}: class {name(rare[0])} has 1 sample in the train split, but a validation split "
                "needs 2 of each class, one to train on and one to validate (accepted: at least 2 samples "
                "of every class in the train split; add samples or drop the validation split)"
            )
        if min(n_val, n - n_val) < len(present):
            raise ClassSplitError(
                f"{source}: a validation fraction of {val_fraction} of the {n} train-split samples gives "
                f"{parts}, too few for one sample of each of the {len(present)} classes in both parts "
                "(accepted: a fraction that leaves each part at least one sample of every class)"
            )
        stratify = y_train
    fit, val = train_test_split(
        np.arange(n, dtype=np.int64), test_size=float(val_fraction), random_state=int(seed), shuffle=True,
        stratify=stratify,
    )
    fit, val = np.asarray(fit, dtype=np.int64), np.asarray(val, dtype=np.int64)
    if stratify is not None:
        for part, rows in (("validation part", val), ("part trained on", fit)):
            missing = np.setdiff1d(present, y_train[rows])
            if missing.size:
                count = int(counts[np.searchsorted(present, missing[0])])
                raise ClassSplitError(
                    f"{source}: the stratified validation split (fraction {val_fraction}, seed {seed}) "
                    f"leaves class {name(missing[0])} ({count} train-split samples) no sample in the {part} "
                    "(accepted: a split with every class in both parts; try a larger fraction or another "
                    "seed)"
                )
    return fit, val


def _unstratified_reason(y: Array, n_test: int) -> str | None:
    """Why class ids ``y`` (int64) cannot be split with ``n_test`` test rows stratified by class,
    or None: a class with fewer than two samples, or a split too small to hold every class. The
    classes are the ids present (review222 F1: ``np.bincount`` counted an id with no row, below the
    largest, as a class of 0 samples, so data lacking one of a checkpoint's classes were split
    unstratified, unlike ``torchlean train``'s split of them)."""
    _, counts = np.unique(y, return_counts=True)
    if counts.min() < 2:
        few = int((counts < 2).sum())
        return f"{few} of {len(counts)} classes {'has' if few == 1 else 'have'} fewer than 2 samples"
    n_train = len(y) - n_test
    if min(n_test, n_train) < len(counts):
        return f"a split of {n_train} train and {n_test} test rows cannot hold each of {len(counts)} classes"
    return None


def split_note(y: Array, task: Task, test_fraction: float = TEST_FRACTION) -> str:
    """The note ``torchlean train`` prints when its split of labels ``y`` (int64 class ids for
    classification) is not stratified by class (see :func:`split_rows`), else ``""``.

    Raises:
        UnknownLabelError, DataError: labels, task or ``test_fraction`` that :func:`split_rows`
            refuses.
    """
    y = _checked_labels(y, task)
    _check_fraction(test_fraction, "test_fraction")
    if task != "classification":
        return ""
    reason = _unstratified_reason(y, math.ceil(float(test_fraction) * len(y)))
    if reason is None:
        return ""
    return (
        f"the train/test split is not stratified by class: {reason} (a stratified split needs 2 samples of "
        "each class and room for each class in both splits); some classes may be missing from a split"
    )


def class_coverage_note(y: Array, test_rows: Array, kind: Task, classes: tuple[str, ...]) -> str:
    """The note on a classification split of class ids ``y`` (int64, ``[n]``) whose ``test_rows``
    leave a class without a train row (its rows all tested: a rare class under a test fraction
    above 0.5, or a class of one sample in an unstratified split), of which a model trained on
    the split has no example (review222 F2/F3), or without a test
    row (a class too rare for its share of the test rows to round to one: 2 samples in 200 rows
    with 20% tested), which the test metric does not measure (review56 F6): naming such classes
    (by ``classes``, the class names; at most five of each, then how many more) and their sample
    counts; else ``""`` (regression too). ``torchlean train`` prints it, and ``predict --split
    test`` repeats it. ``test_rows`` are row indices or a boolean mask.

    Raises:
        DataError: class ids that :func:`split_rows` refuses; ``test_rows`` that are not distinct
            row indices in ``[0, n)`` nor a boolean mask of ``n`` rows.
    """
    if kind != "classification":
        return ""
    ids = _checked_labels(y, kind)  # review228 F9: class ids >= 0, as the split functions take them
    rows = np.asarray(test_rows)
    if rows.size == 0:  # [] is float64 to numpy
        rows = rows.astype(np.int64)
    n = len(ids)
    if rows.dtype == np.bool_:
        fits = rows.shape == (n,)
    else:  # review231 F8: each row once, in range (a negative index wrapped, a repeat counted twice)
        fits = rows.dtype.kind in "iu" and rows.ndim == 1 and (rows.size == 0 or (
            int(rows.min()) >= 0 and int(rows.max()) < n and np.unique(rows).size == rows.size))
    if not fits:
        raise DataError(
            f"test_rows must be distinct row indices in [0, {n}) or a boolean mask of {n} rows, got "
            f"{rows.dtype} of shape {rows.shape}"
        )
    # counted by class present (review225 F4: np.bincount sized an array by the largest id), and
    # test_rows used as given: indices, or a boolean mask
    count = {int(c): int(n) for c, n in zip(*np.unique(ids, return_counts=True), strict=True)}
    tested = {int(c): int(n) for c, n in zip(*np.unique(ids[rows], return_counts=True), strict=True)}
    untrained = [c for c in count if tested.get(c, 0) == count[c]]
    untested = [c for c in count if c not in tested]
    clauses = []
    if untrained:
        them, its = ("them", "their") if len(untrained) > 1 else ("it", "its")
        # review225 F1: a model of another split (predict --split on other data) may know the
        # class, and an untrained one may still predict it, by chance
        clauses.append(f"leaves {_classes_named(untrained, count, classes)} without a train row, so a model "
                       f"trained on this split has no example of {them} ({its} test rows are right only by "
                       f"chance; a smaller test fraction or more samples of {them} would give {them} one)")
    if untested:
        them = "them" if len(untested) > 1 else "it"
        clauses.append(f"leaves {_classes_named(untested, count, classes)} without a test row, so the "
                       f"test metric does not measure {them} (more samples would)")
    return "" if not clauses else "the train/test split " + "; it ".join(clauses)


_NAMED_CLASSES = 5
"""How many classes :func:`class_coverage_note` names in one clause before it counts the rest."""


def _classes_named(ids: list[int], counts: dict[int, int], classes: tuple[str, ...]) -> str:
    """``class a (2 samples)`` or ``classes a (2 samples), b (1 sample)`` for class ids ``ids``
    (the first five, then ``and N more``), named by ``classes`` (an id beyond them by number)."""
    def one(i: int) -> str:
        name = name_shown(classes[i]) if i < len(classes) else str(i)
        return f"{name} ({counts[i]} sample{'s' if counts[i] > 1 else ''})"

    named = ", ".join(one(i) for i in ids[:_NAMED_CLASSES])
    more = len(ids) - _NAMED_CLASSES
    return f"class{'es' if len(ids) > 1 else ''} {named}" + (f" and {more} more" if more > 0 else "")
