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


def test_table_columns_refuses_a_name_naming_the_index_lookup(tmp_path: Path) -> None:
    """F5: ``Table.columns("y")`` was a bare ``TypeError`` from list indexing."""
    path = tmp_path / "b.csv"
    path.write_text("x1,x2,y\n1,2,a\n3,4,b\n")
    table = data.read_csv(path)
    with pytest.raises(data.DataError, match=r"^label must be a column index or None, got 'y' of type str "
                                             r"\(table\.column\('y'\) gives the index"):
        table.columns("y")  # type: ignore[arg-type]
    for bad in (2.0, True):
        with pytest.raises(data.DataError, match=r"^label must be a column index or None, got "):
            table.columns(bad)  # type: ignore[arg-type]
    x, labels = table.columns(np.int64(table.column("y")))  # type: ignore[arg-type]
    assert labels == ["a", "b"] and x.tolist() == [[1.0, 2.0], [3.0, 4.0]]


def test_the_nul_byte_advice_gives_the_python_spelling_too(tmp_path: Path) -> None:
    """F6: the advice named only the command line's ``--delimiter tab``."""
    path = tmp_path / "nul.csv"
    path.write_text("a,y\n1,0\n2\x00,1\n3,0\n4,1\n")
    with pytest.raises(data.DataError, match=r"then pass delimiter='\\t' \(CLI: --delimiter tab\)\)"):
        data.load(path)


@pytest.mark.parametrize(
    ("call", "refusal"),
    [
        (lambda: data.split_rows(np.array(list("abababab")), "classification", 0),
         r"^classification labels must be class ids, integers >= 0 .* got dtype <U1$"),
        (lambda: data.split_note(np.array(list("abababab")), "classification", 0.2),
         r"^classification labels must be class ids"),
        (lambda: data.split_rows(np.array([-1, 0, 1, 0]), "classification", 0),
         r"got dtype int64 with minimum -1$"),
        (lambda: data.split_rows(np.zeros((10, 2)), "regression", 0),
         r"^labels must be a one-dimensional array \[n\], got shape \(10, 2\)$"),
        (lambda: data.split_rows(np.array(["1.5", "2"] * 5), "regression", 0),
         r"^regression targets must be real"),
        (lambda: data.split_note(Y, "classification", 1.5), r"^test_fraction must be in \(0, 1\), got 1\.5$"),
    ],
    ids=["str-labels", "note-str-labels", "negative-id", "2-d", "str-targets", "note-fraction"],
)
def test_the_split_helpers_refuse_what_they_cannot_split(call: object, refusal: str) -> None:
    """F2: numpy's TypeErrors for string labels, an unknown task split silently unstratified,
    2-D labels accepted, split_note's fraction unchecked."""
    with pytest.raises(data.DataError, match=refusal):
        call()  # type: ignore[operator]


def test_validation_rows_takes_a_list_of_class_ids() -> None:
    """F2: a plain list reached numpy's ``only integer scalar arrays`` TypeError."""
    a = data.validation_rows([0, 1] * 10, "classification", 0, 0.2)
    b = data.validation_rows(Y, "classification", 0, 0.2)
    assert all(np.array_equal(x, y) for x, y in zip(a, b, strict=True))


def test_the_split_helpers_refuse_an_unknown_task_as_load_does() -> None:
    """F2: an unknown task gave a silently unstratified split; now load(task=...)'s refusal."""
    from torchlean.backend.errors import UnknownLabelError

    known = r"^unknown task clf \(known: classification \| regression\)$"
    for call in (lambda: data.split_rows(Y, "clf", 0), lambda: data.validation_rows(Y, "clf", 0, 0.2),  # type: ignore[arg-type]
                 lambda: data.split_note(Y, "clf")):  # type: ignore[arg-type]
        with pytest.raises(UnknownLabelError, match=known):
            call()
