"""review88 F1, F2: ``train --resume``, ``inspect --dataset`` and ``predict`` agree on what a
run's data are.

The data digest is taken over the standardised split, so the training rows in other units or
with an offset (which standardise alike), or a training row edited by less than the standardised
float32 value shows, hash as the run's data did. ``inspect`` and ``predict`` compare the
checkpoint's standardisation statistics too; ``train --resume`` now refuses such data, naming the
statistic and both values (it used to resume and record the new statistics). ``predict`` under
the default ``--split all`` says why its record's ``data_matches_training`` is false, as
``--split test`` does, and a header whose names differ from the checkpoint's is described without
saying which file was edited.

Oracles: the CSV files are written here from known rows; the train rows are scikit-learn's
``train_test_split`` (``test_size=0.2``, ``random_state=0``, stratified by the labels for
classification), whose float64 means numpy computes; the digests are
``torchlean.provenance.data_sha256`` over ``data.load`` of each file.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import numpy as np
import pytest
from cli_runs import arrays, cli
from sklearn.model_selection import train_test_split

from torchlean import data, provenance

LABELS = ("cat", "dog", "eel")


def _classification(path: Path, scale: float = 1.0, offset: float = 0.0) -> tuple[np.ndarray, np.ndarray]:
    """60 rows ``a,b,y`` of two normal features (``a`` times ``scale`` plus ``offset``) and labels
    cycling over :data:`LABELS`; the features as written and the labels."""
    rng = np.random.default_rng(2)
    x = rng.normal(size=(60, 2))
    x[:, 0] = x[:, 0] * scale + offset
    y = np.array([LABELS[i % 3] for i in range(60)])
    lines = ["a,b,y"] + [f"{r[0]!r},{r[1]!r},{label}" for r, label in zip(x.tolist(), y, strict=True)]
    path.write_text("\n".join(lines) + "\n")
    return x, y


def _regression_rows() -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(1)
    x = rng.normal(size=(200, 3))
    return x, 2 * x[:, 0] - x[:, 1] + 0.1 * rng.normal(size=200)


def _regression(path: Path, x: np.ndarray, y: np.ndarray, names: str = "a,b,c,y") -> None:
    lines = [names] + [",".join([*(repr(float(v)) for v in row), repr(float(t))])
                       for row, t in zip(x, y, strict=True)]
    path.write_text("\n".join(lines) + "\n")


def _train(capsys: pytest.CaptureFixture[str], dataset: Path, model: Path) -> None:
    code, _, err = cli(capsys, "train", "--dataset", str(dataset), "--epochs", "2", "--hidden", "8",
                       "--save", str(model))
    assert (code, err) == (0, ""), err


def _refused(capsys: pytest.CaptureFixture[str], model: Path, dataset: Path, tmp_path: Path) -> str:
    """``train --resume MODEL --dataset DATASET``, which must be refused with one ``error:`` line,
    leaving the checkpoint as it was and saving nothing; that line."""
    before = model.read_bytes()
    code, out, err = cli(capsys, "train", "--resume", str(model), "--dataset", str(dataset), "--epochs", "3",
                         "--save", str(tmp_path / "resumed.npz"))
    assert (code, out) == (2, "")
    assert err.count("\n") == 1 and err.startswith("error: "), err
    assert model.read_bytes() == before and not (tmp_path / "resumed.npz").exists()
    return err


def _statistics_error(model: Path, dataset: Path, difference: str) -> str:
    return (f"error: checkpoint {model}: the data of --dataset {dataset} are not those its run trained on: "
            f"their standardised values hash alike, but {difference} (the same rows in other units or with "
            "an offset): resumed, the model would go on standardising with other statistics than its first "
            "epochs did; resume with the data the run trained on, or train a new run on these data\n")


def _assert_statistics_error(err: str, model: Path, dataset: Path, found: float, recorded: float) -> None:
    """``err`` is :func:`_statistics_error` naming feature a's mean, ``found`` against the
    checkpoint's ``recorded``, each printed with 6 to 17 significant digits that tell them apart
    (review195 F5: 17 digits were printed where fewer do)."""
    pattern = re.escape(_statistics_error(model, dataset, "feature a's mean is @, the checkpoint's @"))
    match = re.fullmatch(pattern.replace("@", r"(?:about )?(-?[0-9.e+-]+)"), err)  # about: rounded
    assert match is not None, err
    shown = match.groups()
    assert shown[0] != shown[1]
    for text, value in zip(shown, (found, recorded), strict=True):
        digits = len(text.lstrip("-").split("e")[0].replace(".", "").lstrip("0"))
        assert 1 <= digits <= 17 and float(text) == pytest.approx(value, rel=10.0 ** (1 - digits)), text


def _inspect_says_no(capsys: pytest.CaptureFixture[str], model: Path, dataset: Path) -> None:
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(dataset))
    assert (code, out.splitlines()[-1]) == (0, "data_matches: no")
    assert "their means and scales (the features', or the target's) differ from the checkpoint's" in err


def test_resume_refuses_the_training_rows_in_other_units(capsys: pytest.CaptureFixture[str],
                                                        tmp_path: Path) -> None:
    x, y = _classification(tmp_path / "cls.csv")
    _classification(tmp_path / "units.csv", scale=100.0, offset=1e6)
    model = tmp_path / "m.npz"
    _train(capsys, tmp_path / "cls.csv", model)
    # the premise: the same digest, other statistics
    same = data.load(str(tmp_path / "cls.csv"), label_column="y")
    units = data.load(str(tmp_path / "units.csv"), label_column="y")
    assert provenance.data_sha256(units) == provenance.data_sha256(same)
    train_rows, _ = train_test_split(np.arange(60), test_size=0.2, random_state=0, stratify=y)
    recorded, found = float(arrays(model)["feature_mean"][0]), float(units.feature_mean[0])
    assert recorded == pytest.approx(float(np.mean(x[train_rows, 0])), rel=1e-12, abs=1e-15)
    assert found == pytest.approx(float(np.mean(x[train_rows, 0] * 100.0 + 1e6)), rel=1e-12)
    err = _refused(capsys, model, tmp_path / "units.csv", tmp_path)
    _assert_statistics_error(err, model, tmp_path / "units.csv", found, recorded)
    # inspect and predict say no of the same file, and all three say yes of the training file
    _inspect_says_no(capsys, model, tmp_path / "units.csv")
    code, out, err = cli(capsys, "train", "--resume", str(model), "--dataset", str(tmp_path / "cls.csv"),
                         "--epochs", "3", "--save", str(tmp_path / "resumed.npz"))
    assert (code, err) == (0, ""), err
    code, out, _ = cli(capsys, "inspect", str(model), "--dataset", str(tmp_path / "cls.csv"))
    assert (code, out.splitlines()[-1]) == (0, "data_matches: yes")


def test_data_the_digest_cannot_tell_apart_resume_unless_an_offset_moves_the_statistics(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review90 F2: the run's rows re-saved with 15 significant digits (Excel, pandas'
    float_format) and a training row edited by 1e-9 relative hash alike and have statistics a few
    ulps off; resume, inspect and predict accept them alike (the comparison's bound is float32's
    epsilon times the scale). An offset of 1e-4 on feature a also hashes alike, but moves its mean
    by 1e-4 of its scale: refused by resume, "no" for inspect."""
    x, y = _regression_rows()
    _regression(tmp_path / "base.csv", x, y)
    train_rows, _ = train_test_split(np.arange(200), test_size=0.2, random_state=0)
    edited = x.copy()
    edited[train_rows[0], 0] *= 1 + 1e-9
    _regression(tmp_path / "edited.csv", edited, y)
    rows = zip(x, y, strict=True)  # the features at 15 digits; the targets hash as read, so kept
    (tmp_path / "resaved.csv").write_text("a,b,c,y\n" + "".join(
        ",".join([*(f"{float(v):.15g}" for v in row), repr(float(t))]) + "\n" for row, t in rows))
    shifted = x.copy()
    shifted[:, 0] += 1e-4
    _regression(tmp_path / "offset.csv", shifted, y)
    model = tmp_path / "m.npz"
    _train(capsys, tmp_path / "base.csv", model)
    base = data.load(str(tmp_path / "base.csv"))
    recorded = float(arrays(model)["feature_mean"][0])
    assert recorded == pytest.approx(float(np.mean(x[train_rows, 0])), rel=1e-12)
    for name in ("edited.csv", "resaved.csv"):
        alike = data.load(str(tmp_path / name))
        assert provenance.data_sha256(alike) == provenance.data_sha256(base)  # the premise
        assert not np.array_equal(alike.feature_mean, base.feature_mean)  # a few ulps off
        code, _, err = cli(capsys, "train", "--resume", str(model), "--dataset", str(tmp_path / name),
                           "--epochs", "3", "--save", str(tmp_path / f"resumed-{name}.npz"))
        assert (code, err) == (0, ""), err
        code, out, _ = cli(capsys, "inspect", str(model), "--dataset", str(tmp_path / name))
        assert (code, out.splitlines()[-1]) == (0, "data_matches: yes")
    offset = data.load(str(tmp_path / "offset.csv"))
    assert provenance.data_sha256(offset) == provenance.data_sha256(base)  # the premise
    found = float(offset.feature_mean[0])
    assert found == pytest.approx(float(np.mean(shifted[train_rows, 0])), rel=1e-12)
    err = _refused(capsys, model, tmp_path / "offset.csv", tmp_path)
    _assert_statistics_error(err, model, tmp_path / "offset.csv", found, recorded)
    _inspect_says_no(capsys, model, tmp_path / "offset.csv")


_UNITS_NOTE = (
    "note: the data of {data} are not those checkpoint {model}'s run trained on (their standardised values "
    "hash alike, but their means and scales (the features', or the target's) differ from the checkpoint's: "
    "other units or an offset): the model standardises its inputs with the checkpoint's statistics, so its "
    "outputs on these data are not its outputs on the training data"
)


def _predict_all(capsys: pytest.CaptureFixture[str], model: Path, dataset: Path,
                 tmp_path: Path) -> tuple[str, dict[str, object]]:
    """``predict MODEL --dataset DATASET`` under the default ``--split all`` with a record; its
    stderr and record."""
    report = tmp_path / "r.json"
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(dataset), "--output",
                       str(tmp_path / "p.csv"), "--report-json", str(report))
    assert code == 0, err
    record: dict[str, object] = json.loads(report.read_text())
    assert record["split"] == "all"
    return err, record


def test_predict_all_says_why_data_in_other_units_do_not_match(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    _classification(tmp_path / "cls.csv")
    _classification(tmp_path / "units.csv", scale=100.0, offset=1e6)
    model = tmp_path / "m.npz"
    _train(capsys, tmp_path / "cls.csv", model)
    err, record = _predict_all(capsys, model, tmp_path / "units.csv", tmp_path)
    note = _UNITS_NOTE.format(data=tmp_path / "units.csv", model=model)
    assert record["data_matches_training"] is False
    assert record["data_sha256"] == record["trained_data_sha256"]
    assert err.splitlines() == [note] and record["notes"] == [note]
    # the training data themselves: true, and nothing to say
    err, record = _predict_all(capsys, model, tmp_path / "cls.csv", tmp_path)
    assert (record["data_matches_training"], record["notes"], err) == (True, [], "")


def test_a_header_with_swapped_names_is_described_neutrally(capsys: pytest.CaptureFixture[str],
                                                            tmp_path: Path) -> None:
    x, y = _regression_rows()
    _regression(tmp_path / "base.csv", x, y)
    _regression(tmp_path / "swapped.csv", x, y, names="b,a,c,y")  # the header edited, the data not
    _regression(tmp_path / "renamed.csv", x, y, names="alpha,b,c,y")
    model = tmp_path / "m.npz"
    _train(capsys, tmp_path / "base.csv", model)
    before = model.read_bytes()
    swapped = tmp_path / "swapped.csv"
    assert provenance.data_sha256(data.load(str(swapped))) == provenance.data_sha256(
        data.load(str(tmp_path / "base.csv")))  # the premise: the digest covers the values, not the header
    note = (f"note: the data of {swapped} hash as those checkpoint {model}'s run trained on, but they "
            "name feature 0 b, where the checkpoint names it a (the data's names or the checkpoint's were "
            "edited): predict names the predictions by the checkpoint's classes and takes a CSV file's "
            "columns by the checkpoint's feature names; if the data's names are the edited ones, name them "
            "as the checkpoint does")
    err, record = _predict_all(capsys, model, swapped, tmp_path)
    assert record["data_matches_training"] is False
    assert record["data_sha256"] == record["trained_data_sha256"]
    assert err.splitlines() == [note] and record["notes"] == [note]
    code, _, err = cli(capsys, "predict", str(model), "--dataset", str(swapped), "--split", "test",
                       "--output", str(tmp_path / "p.csv"))
    assert code == 0 and err.splitlines() == [note]
    for name, first in (("swapped.csv", "b"), ("renamed.csv", "alpha")):
        err = _refused(capsys, model, tmp_path / name, tmp_path)
        assert err == (f"error: checkpoint {model}: the data of --dataset {tmp_path / name} hash as those "
                       f"its run trained on, but they name feature 0 {first}, where the checkpoint names it "
                       "a (the data's names or the checkpoint's were edited): its model would go on under "
                       "other names; resume with data named as the checkpoint names them, or train a new run "
                       "on these data\n")
    assert model.read_bytes() == before


def test_predict_all_notes_a_reordered_class_list_once(capsys: pytest.CaptureFixture[str],
                                                       tmp_path: Path) -> None:
    """On the run's own data, a checkpoint whose classes were reordered by hand gets predict's note
    on the class order (review69 F4), not a second note on the same names for the record."""
    _classification(tmp_path / "cls.csv")
    model = tmp_path / "m.npz"
    _train(capsys, tmp_path / "cls.csv", model)
    with np.load(model, allow_pickle=False) as archive:
        stored = {name: archive[name] for name in archive.files}
    meta = json.loads(str(stored["metadata"]))
    assert meta["classes"] == sorted(LABELS)  # the oracle: sorted labels
    meta["classes"] = ["eel", "dog", "cat"]
    stored["metadata"] = np.array(json.dumps(meta))
    edited = tmp_path / "e.npz"
    with edited.open("wb") as handle:
        np.savez(handle, **stored)
    err, record = _predict_all(capsys, edited, tmp_path / "cls.csv", tmp_path)
    note = (f"note: checkpoint {edited} names its classes in another order than the data it trained on "
            f"({tmp_path / 'cls.csv'}): they name class 0 cat, where the checkpoint names it eel (the "
            "checkpoint was edited?): its predictions and accuracy follow the checkpoint's names")
    assert record["data_matches_training"] is False
    assert err.splitlines() == [note] and record["notes"] == [note]
