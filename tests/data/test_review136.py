"""review136: ``validation_rows`` refuses a bad seed as ``split_rows`` does (F1: scikit-learn's
own error, or 1.5 read as 1), and a ``pathlib.Path`` names a file even when it spells a shipped
dataset's name (F3: ``load(Path("iris"))`` loaded the shipped iris over the file ``iris``)."""

from __future__ import annotations

import os
from pathlib import Path

import numpy as np
import pytest

from torchlean import data

Y = np.array([0, 1] * 10, dtype=np.int64)


@pytest.mark.parametrize("seed", [-1, 2**32, 1.5, True, "0", None])
@pytest.mark.parametrize("task", ["classification", "regression"])
def test_validation_rows_refuses_a_bad_seed_as_split_rows_does(seed: object, task: str) -> None:
    message = r"^seed must be an integer in \[0, 2\*\*32\) .*, got "
    with pytest.raises(data.DataError, match=message):
        data.split_rows(Y, task, seed)  # type: ignore[arg-type]
    with pytest.raises(data.DataError, match=message):
        data.validation_rows(Y, task, seed, 0.2)  # type: ignore[arg-type]


def test_validation_rows_takes_a_numpy_integer_seed() -> None:
    a = data.validation_rows(Y, "classification", np.int64(3), 0.2)
    b = data.validation_rows(Y, "classification", 3, 0.2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_a_path_object_names_a_file_even_when_it_spells_a_dataset(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    rows = "\n".join(f"{i},{i % 3},{'ab'[i % 2]}" for i in range(20))
    Path("iris").write_text(f"f1,f2,label\n{rows}\n")
    from_file = data.load(Path("iris"))
    assert from_file.x_train.shape[1] == 2  # the file's two features, not iris's four
    assert from_file.x_train.shape[0] + from_file.x_test.shape[0] == 20
    assert data.load("iris").x_train.shape == (120, 4)  # a string names the shipped dataset
    assert data.locate(Path("iris")) == ("iris", False)
    os.remove("iris")
    with pytest.raises(data.DataError, match=r"^dataset file not found: iris"):
        data.load(Path("iris"))
