"""The errors of loading a dataset: :class:`DataError` and :class:`EmptySplitError`, raised by the
CSV reader (:mod:`torchlean._csv`), the cell, label and split modules and :mod:`torchlean.data`,
which re-exports both."""

from __future__ import annotations

from torchlean.backend.errors import TorchLeanError

__all__ = [
    "FLOAT64_HOLDS", "FLOAT64_NEITHER", "FLOAT64_PARTLY", "DataError", "DataMemoryError", "EmptySplitError",
]

FLOAT64_HOLDS = "dtype float64 (CLI: --dtype float64) holds it, or "
"""The start of the way forward of a feature value that standardises beyond a float32 load's
range but, like every such value of the data, not beyond float64's (:func:`torchlean.data.load`;
``correct or remove the row`` follows); :data:`FLOAT64_NEITHER` and :data:`FLOAT64_PARTLY` start
the others. A command that loads with a checkpoint's dtype replaces each with that dtype
(:mod:`torchlean.cli._resume`; review95 M2, L4, review97 L4, review98 L1)."""

FLOAT64_NEITHER = "float64 cannot hold it either: "
"""The start of the way forward where float64 cannot hold the value."""

FLOAT64_PARTLY = "float64 holds it but not every such value of these data: "
"""The start of the way forward where float64 holds the value but not another one of the data."""


class DataError(TorchLeanError, ValueError):
    """A dataset could not be loaded or split (missing file, bad cell, bad parameter).

    ``feature_column`` is the name of the column whose cell was refused as a feature (a CSV
    file's), else ``None``."""

    __module__ = "torchlean.data"  # its public home, as tracebacks and reprs name it
    feature_column: str | None = None


class DataMemoryError(DataError, MemoryError):
    """Loading a CSV file ran out of memory (:func:`torchlean.data.load_csv`): the message names the
    file and its size, so the out-of-memory error of a command is not taken for the model's
    (review103 F2). Also a ``MemoryError``, as what it wraps."""

    __module__ = "torchlean.data"


class EmptySplitError(DataError):
    """A train/test split that would leave the train or the test split without a sample
    (:func:`torchlean.data.split_rows`): ``samples`` rows, ``test_fraction`` as given and
    ``test_rows``, the ``ceil(test_fraction * samples)`` rows the test split would take, as
    attributes, so a caller can name its own option and the fractions it accepts (``torchlean train
    --test-fraction``)."""

    __module__ = "torchlean.data"

    def __init__(self, message: str, *, samples: int, test_fraction: float, test_rows: int) -> None:
        super().__init__(message)
        self.samples = samples
        self.test_fraction = test_fraction
        self.test_rows = test_rows


class ClassSplitError(DataError):
    """A validation split (:func:`torchlean.data.validation_rows`) that cannot hold every class of
    the train split in both of its parts: too few samples of a class, or parts too small. For a
    task inferred from many whole-number labels, :func:`torchlean.data.load` adds that
    ``task='regression'`` exists (review90 F5; only to these refusals: review91 F3)."""

    __module__ = "torchlean.data"
