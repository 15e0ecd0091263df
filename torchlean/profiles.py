"""``torchlean.profiles``: the backend profiles, :mod:`torchlean.backend.profiles` itself.

``import torchlean.profiles`` and ``from torchlean.profiles import get`` work as real imports
(review61 F5); the module this import yields *is* ``torchlean.backend.profiles`` (one registry of
profiles), as ``torchlean.profiles`` is after a plain ``import torchlean``. ``import torchlean``
does not load it.
"""

import sys

from torchlean.backend import profiles as _profiles
from torchlean.backend.profiles import *  # noqa: F403 - the names type checkers see here

sys.modules[__name__] = _profiles
