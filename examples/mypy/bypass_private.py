"""Calling the private minting helper from user code: each marked line is a mypy error.

``cast`` itself is invisible to mypy (it is caught at run time by beartype), but registering the
forgery with ``_mint`` is reported.
"""

from typing import cast

from torchlean.backend import sealed
from torchlean.backend.acceptance import AcceptedKernel
from torchlean.backend.sealed import _mint

forged = cast(AcceptedKernel, object())
_mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]
sealed._mint(forged)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: module bypass_private)  [torchlean-sealed]


def launder(value: object) -> AcceptedKernel:
    _mint(value)  # E: "torchlean.backend.sealed._mint" is private to torchlean: sealed values come only from their gates (caller: bypass_private.launder)  [torchlean-sealed]
    return cast(AcceptedKernel, value)
