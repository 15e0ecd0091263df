"""review132 F5: rmsprop's torch spelling ``alpha=`` is named as written in refusals and echoes."""

import numpy as np
import pytest

from torchlean import optim
from torchlean.optim import OptimizerError


def test_constructor_names_alpha() -> None:
    with pytest.raises(OptimizerError, match=r"alpha must be .*0 <= alpha < 1, got 1.5 \(torch's RMSprop"):
        optim.rmsprop(0.01, alpha=1.5)


def test_group_names_alpha_and_echoes_it() -> None:
    with pytest.raises(OptimizerError, match=r"alpha must be .*got 1.5 .*in optim.group\('a', alpha=1.5\)"):
        optim.rmsprop(0.01).create([np.zeros(3)], names=["a"], groups=[optim.group("a", alpha=1.5)])
    g = optim.group("a", alpha=0.9)
    assert g.describe() == "optim.group('a', alpha=0.9)"
    assert g == optim.group("a", decay=0.9)


def test_decay_still_named_decay() -> None:
    with pytest.raises(OptimizerError, match=r"decay must be .*got 1.5$"):
        optim.rmsprop(0.01, decay=1.5)
    opt = optim.rmsprop(0.01).create([np.zeros(3)], names=["a"], groups=[optim.group("a", alpha=0.5)])
    assert opt.config_of(0).decay == 0.5
