"""review115 F2 and F6: class labels and column names that are one text written two ways, equal
only in Unicode NFC form (``café`` with a composed accent, U+00E9, and ``cafe\\u0301`` with a
combining one), and a file that starts with two byte-order marks.

Oracles: the same file written in NFC throughout (``unicodedata.normalize``), whose load is the
reference for the merged classes (class ids, splits and digest bit for bit), and messages written
out by hand.
"""

from __future__ import annotations

import unicodedata
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli

from torchlean import data, provenance
from torchlean.data import DataError

COMPOSED = "caf\u00e9"
COMBINING = "cafe\u0301"


def _rows(labels: list[str]) -> str:
    rng = np.random.default_rng(5)
    values = rng.standard_normal((len(labels), 2))
    return "".join(
        f"{a + (2.0 if label == 'tea' else 0.0):.4f},{b:.4f},{label}\n"
        for (a, b), label in zip(values, labels, strict=True)
    )


def _labels(n: int = 60) -> list[str]:
    return [(COMPOSED, COMBINING, "tea")[i % 3] for i in range(n)]


def _write(path: Path, text: str) -> Path:
    path.write_bytes(text.encode("utf-8"))
    return path


def test_display_name_escapes_a_name_not_in_nfc_form() -> None:
    assert COMPOSED != COMBINING and unicodedata.normalize("NFC", COMBINING) == COMPOSED  # the premise
    assert data.display_name(COMPOSED) == COMPOSED
    assert data.display_name(COMBINING) == "'cafe\\u0301'"


def test_labels_equal_in_nfc_form_are_one_class_with_a_note(tmp_path: Path) -> None:
    mixed = _write(tmp_path / "mixed.csv", "a,b,y\n" + _rows(_labels()))
    written = [unicodedata.normalize("NFC", v) for v in _labels()]
    composed = _write(tmp_path / "nfc.csv", "a,b,y\n" + _rows(written))
    got, reference = data.load(str(mixed)), data.load(str(composed))
    assert got.class_names == (COMPOSED, "tea") == reference.class_names
    for name in ("x_train", "y_train", "x_test", "y_test"):
        assert np.array_equal(getattr(got, name), getattr(reference, name))
    assert provenance.data_sha256(got) == provenance.data_sha256(reference)
    assert (
        f"{mixed}: column y: the labels 'caf\u00e9' and 'cafe\\u0301' are one class, 'caf\u00e9' (the same "
        "text in Unicode NFC form, its accents composed or combining: such labels are compared in NFC form)"
    ) in got.notes
    assert not any("NFC" in note for note in reference.notes)


def test_labels_written_one_way_keep_their_spelling(tmp_path: Path) -> None:
    """A file that writes a label one way only (decomposed throughout, as macOS exports may) keeps
    that spelling as the class name, so its data digest and the class names a checkpoint of it
    recorded are those of before review115: no note."""
    labels = [COMBINING if v == COMPOSED else v for v in _labels()]
    got = data.load(str(_write(tmp_path / "nfd.csv", "a,b,y\n" + _rows(labels))))
    assert got.class_names == (COMBINING, "tea")
    assert not any("NFC" in note for note in got.notes)


def test_class_ids_compare_labels_in_nfc_form() -> None:
    ids = data.class_ids("f.csv", "y", [COMPOSED, COMBINING, " tea"], (COMBINING, "tea"))
    assert ids.tolist() == [0, 0, 1]
    # a checkpoint written before review115 F2 may hold both spellings as two classes: by text
    ids = data.class_ids("f.csv", "y", [COMPOSED, COMBINING], (COMPOSED, COMBINING, "tea"))
    assert ids.tolist() == [0, 1]
    with pytest.raises(data.UnknownLabelError) as info:
        data.class_ids("f.csv", "y", ["cafe"], (COMBINING, "tea"))
    assert str(info.value) == (
        "f.csv: line 1, column y: unknown class label 'cafe' (known: 'cafe\\u0301' | tea)"
    )


def test_label_column_names_compare_in_nfc_form(tmp_path: Path) -> None:
    labels = ["0", "1"] * 30
    path = _write(tmp_path / "h.csv", f"a,b,{COMBINING}\n" + _rows(labels))
    got = data.load(str(path), label_column=COMPOSED)
    assert got.label_name == COMBINING and got.feature_names == ("a", "b")
    twice = _write(tmp_path / "twice.csv", f"{COMPOSED},{COMBINING},y\n" + _rows(labels))
    with pytest.raises(DataError) as info:
        data.load(str(twice), label_column=COMPOSED)
    assert str(info.value) == (
        f"{twice}: label column 'caf\u00e9' is ambiguous: the header names columns 0, 1 'caf\u00e9', "
        "'cafe\\u0301' (one name in Unicode NFC form) (accepted: a name the header uses once, or a column "
        "index 0..2)"
    )
    assert (
        f"{twice}: columns 0 and 1 are named 'caf\u00e9' and 'cafe\\u0301', one name in Unicode NFC form "
        "(its accents composed or combining), which they print alike: a label column chosen by name and "
        "torchlean predict's header matching compare names in that form, so name them apart"
    ) in data.load(str(twice)).notes


def test_cli_merges_the_classes_and_predict_matches_names_in_nfc_form(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    mixed = _write(tmp_path / "mixed.csv", f"{COMBINING},b,y\n" + _rows(_labels()))
    model = tmp_path / "m.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(mixed), "--epochs", "2", "--hidden", "4",
                       "--save", str(model))
    assert code == 0, err
    assert "the labels 'caf\u00e9' and 'cafe\\u0301' are one class" in err
    composed = _write(tmp_path / "nfc.csv", f"y,{COMPOSED},b\n" + "".join(
        f"{label},{a},{b}\n" for a, b, label in (line.split(",") for line in _rows(_labels()).splitlines())
    ))
    code, out, err = cli(capsys, "predict", str(model), "--dataset", str(composed), "--probabilities")
    assert code == 0, err
    assert out.splitlines()[0] == f"prediction,p_{COMPOSED},p_tea"
    assert "missing" not in err


def test_a_second_byte_order_mark_is_dropped_with_a_note(tmp_path: Path) -> None:
    """review115 F6: a file saved with a BOM and re-saved with another starts with two; Python's
    utf-8-sig drops one, and the other was read into the first column's name (``'\\ufeffa'``),
    invisibly. It is dropped too, with a note, as predict reads it the same way."""
    body = "a,b,y\n" + _rows(["0", "1"] * 30)
    once = _write(tmp_path / "once.csv", "\ufeff" + body)
    twice = _write(tmp_path / "twice.csv", "\ufeff\ufeff" + body)
    thrice = _write(tmp_path / "thrice.csv", "\ufeff\ufeff\ufeff" + body)
    reference = data.load(str(once))
    for path, extra in ((twice, "the extra one was"), (thrice, "the extra 2 were")):
        got = data.load(str(path), label_column="y")
        assert got.feature_names == ("a", "b") == reference.feature_names
        assert np.array_equal(got.x_train, reference.x_train)
        count = 2 if path == twice else 3
        assert (
            f"{path}: line 1 starts with {count} byte-order marks (U+FEFF, bytes EF BB BF), as a file saved "
            f"with one and then re-saved or joined to another writes; {extra} dropped, not read as part of "
            "the first cell"
        ) in got.notes
    assert not any("byte-order" in note for note in reference.notes)
