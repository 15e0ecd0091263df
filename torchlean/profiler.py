"""``torchlean.profiler``: the kernel profiler, :mod:`torchlean.autograd.profiler` itself.

``import torchlean.profiler`` and ``from torchlean.profiler import profile`` work as
``import torch.profiler`` does (review61 F5); the module this import yields *is*
``torchlean.autograd.profiler`` (one module, one profile state), as ``torchlean.profiler`` is after a
plain ``import torchlean``. ``import torchlean`` does not load it.
"""

import sys

from torchlean.autograd import profiler as _profiler
from torchlean.autograd.profiler import *  # noqa: F403 - the names type checkers see here

sys.modules[__name__] = _profiler
