"""The errors of :mod:`torchlean.checkpoint` (defined here so that the modules checking a
checkpoint's parts raise them too; imported from :mod:`torchlean.checkpoint`)."""

from __future__ import annotations

from torchlean.backend.errors import TorchLeanError

__all__ = ["CheckpointError", "FeatureValueError"]


class CheckpointError(TorchLeanError, ValueError):
    """A checkpoint could not be written or read, or its contents are inconsistent (the message
    names the file and what is wrong)."""

    __module__ = "torchlean.checkpoint"  # where users import it from, and tracebacks name it


class FeatureValueError(CheckpointError):
    """A feature value :meth:`Checkpoint.standardise <torchlean.checkpoint.Checkpoint.standardise>`
    refuses: ``x[row, feature] (feature NAME): DETAIL``, with the 0-based ``row`` and ``feature``
    (numpy's indices) and the ``detail`` as attributes, so a caller reading a file can name the
    cell its own way (``torchlean predict``: the CSV line and column)."""

    __module__ = "torchlean.checkpoint"

    def __init__(self, row: int, feature: int, name: str, detail: str) -> None:
        super().__init__(f"x[{row}, {feature}] (feature {name}): {detail}")
        self.row = row
        self.feature = feature
        self.detail = detail
