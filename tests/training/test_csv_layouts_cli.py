"""``torchlean train`` and ``torchlean predict`` on CSV layouts that spreadsheets, pandas and numpy
write (the Python side is tests/data/test_csv_layouts.py): each refusal is one ``error:`` line,
exit status 2, no traceback; each column or line left out is a ``note:`` on stderr and really not
used.

Oracles: the same data written without the extra column or line: ``train --save`` writes the same
weights and statistics bit for bit (so the dropped column never reached the model), and
``predict`` writes the same predictions; messages written out by hand.
"""

from __future__ import annotations

import dataclasses
from pathlib import Path

import numpy as np
import pytest
from cli_runs import arrays, cli, metadata

from torchlean import checkpoint, data
from torchlean.cli import _resume

N = 40
TRAIN = ("--epochs", "2", "--hidden", "8")


def _rows() -> list[tuple[str, str, str]]:
    """``N`` rows of two features and a cat/dog label that depends on the first."""
    return [(f"{(i * 37) % 41 / 10:g}", f"{(i * 11) % 13 / 4:g}", "cat" if (i * 37) % 41 > 20 else "dog")
            for i in range(N)]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path


def _clean(tmp_path: Path) -> Path:
    return _write(tmp_path, "clean.csv", "a,b,y\n" + "".join(",".join(row) + "\n" for row in _rows()))


def _refused(capsys: pytest.CaptureFixture[str], message: str, *argv: str) -> None:
    code, out, err = cli(capsys, *argv)
    assert (code, out, err) == (2, "", f"error: {message}\n")
    assert "Traceback" not in err


def _train(capsys: pytest.CaptureFixture[str], path: Path, save: Path, *argv: str) -> tuple[list[str], str]:
    """``torchlean train --dataset PATH --save SAVE``: its stdout lines and stderr."""
    code, out, err = cli(capsys, "train", "--dataset", str(path), *TRAIN, "--save", str(save), *argv)
    assert code == 0, err
    return out.splitlines(), err


def _same_checkpoint(got: Path, want: Path) -> None:
    a, b = arrays(got), arrays(want)
    assert a.keys() == b.keys()
    for name in a:
        np.testing.assert_array_equal(a[name], b[name], err_msg=name)
    meta_a, meta_b = metadata(got), metadata(want)
    for field in ("features", "feature_names", "label_column", "classes", "task"):
        assert meta_a[field] == meta_b[field], field


def _predict(capsys: pytest.CaptureFixture[str], checkpoint: Path, path: Path, *argv: str) -> tuple[str, str]:
    code, out, err = cli(capsys, "predict", str(checkpoint), "--dataset", str(path), *argv)
    assert code == 0, err
    return out, err


# ----------------------------------------------------------------------------------------- F1


def test_a_target_with_missing_values_is_an_error_not_classes(capsys: pytest.CaptureFixture[str],
                                                              tmp_path: Path) -> None:
    rows = [f"{i},{i * 0.75 + 0.5}" for i in range(N)]
    rows[3], rows[9] = "3,NA", "9,?"
    path = _write(tmp_path, "target.csv", "a,y\n" + "\n".join(rows) + "\n")
    _refused(
        capsys,
        f"{path}: line 5, column y: not a number: 'NA', but {N - 2} of the {N} labels are numbers: torchlean "
        "reads no missing values (remove such rows) (the numbers are not all whole: a quantity, whose rows "
        "without one cannot be trained on)",
        "train", "--dataset", str(path), *TRAIN,
    )
    _refused(capsys, f"{path}: line 5, column y: not a number: 'NA' (a missing value? torchlean reads none: "
             "remove such rows)", "train", "--dataset", str(path), *TRAIN, "--task", "regression")
    lines, _ = _train(capsys, path, tmp_path / "names.npz", "--task", "classification")
    assert "task=classification" in lines[0]
    assert len(metadata(tmp_path / "names.npz")["classes"]) == N


def test_predict_with_a_regression_checkpoint_refuses_a_missing_target(capsys: pytest.CaptureFixture[str],
                                                                       tmp_path: Path) -> None:
    """predict takes the task from the checkpoint; a missing target is refused by line, and
    --ignore-labels predicts anyway."""
    rows = [f"{i},{i * 0.75 + 0.5}" for i in range(N)]
    clean = _write(tmp_path, "clean.csv", "a,y\n" + "\n".join(rows) + "\n")
    _train(capsys, clean, tmp_path / "r.npz")
    rows[3] = "3,NA"
    path = _write(tmp_path, "target.csv", "a,y\n" + "\n".join(rows) + "\n")
    _refused(capsys, f"{path}: line 5, column y: not a number: 'NA' (a missing value? torchlean reads none: "
             "remove such rows); --ignore-labels predicts without "
             "reading the labels (no mse)", "predict", str(tmp_path / "r.npz"), "--dataset", str(path))
    out, _ = _predict(capsys, tmp_path / "r.npz", path, "--ignore-labels")
    assert out == _predict(capsys, tmp_path / "r.npz", clean)[0]


# ----------------------------------------------------------------------------------------- F2


def test_a_trailing_comma_is_ignored_by_train_and_predict(capsys: pytest.CaptureFixture[str],
                                                          tmp_path: Path) -> None:
    path = _write(tmp_path, "trailing.csv", "a,b,y,\n" + "".join(",".join(row) + ",\n" for row in _rows()))
    note = (f"note: {path}: the last column (3) has no name and is empty on every line (a trailing "
            "comma?), so it is ignored\n")
    lines, err = _train(capsys, path, tmp_path / "t.npz")
    assert err == note
    assert lines[0].startswith(f"dataset={path} train=32 test=8 features=2 task=classification ")
    _train(capsys, _clean(tmp_path), tmp_path / "c.npz")
    _same_checkpoint(tmp_path / "t.npz", tmp_path / "c.npz")
    out, err = _predict(capsys, tmp_path / "t.npz", path)
    assert err.startswith(note) and "accuracy=" in err
    assert out == _predict(capsys, tmp_path / "t.npz", _clean(tmp_path))[0]


# ----------------------------------------------------------------------------------------- F3


def test_pandas_index_is_not_a_feature_in_train_or_predict(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    body = "".join(f"{i},{','.join(row)}\n" for i, row in enumerate(_rows()))
    path = _write(tmp_path, "indexed.csv", ",a,b,y\n" + body)
    note = (f"note: {path}: column 0 has no name and holds the row numbers 0..{N - 1} in order, as pandas' "
            "to_csv writes its index, so it is not used as a feature (to_csv(index=False) leaves it out; a "
            "name in its header cell makes it a feature)\n")
    lines, err = _train(capsys, path, tmp_path / "i.npz")
    assert err == note
    assert lines[0].startswith(f"dataset={path} train=32 test=8 features=2 task=classification ")
    assert metadata(tmp_path / "i.npz")["feature_names"] == ["a", "b"]
    clean = _clean(tmp_path)
    _train(capsys, clean, tmp_path / "c.npz")
    _same_checkpoint(tmp_path / "i.npz", tmp_path / "c.npz")
    # the checkpoint predicts on the file it trained on without complaint, and as on the clean file
    out, err = _predict(capsys, tmp_path / "i.npz", path)
    assert err.startswith(note) and err.count("note:") == 1 and "accuracy=" in err
    expected = _predict(capsys, tmp_path / "i.npz", clean)[0]
    assert out == expected
    # a checkpoint trained on the clean file predicts on the indexed one, with or without labels
    out, err = _predict(capsys, tmp_path / "c.npz", path)
    assert out == expected and err.startswith(note) and err.count("note:") == 1
    features = _write(tmp_path, "features.csv", ",a,b\n" + "".join(
        f"{i},{a},{b}\n" for i, (a, b, _) in enumerate(_rows())))
    out, err = _predict(capsys, tmp_path / "c.npz", features)
    assert out == expected and "accuracy=" not in err
    # matched by position (the header names no feature): the index column is not counted either
    other = _write(tmp_path, "other.csv", ",p,q\n" + "".join(
        f"{i},{a},{b}\n" for i, (a, b, _) in enumerate(_rows())))
    out, err = _predict(capsys, tmp_path / "c.npz", other)
    assert out == expected and "accuracy=" not in err
    assert err.startswith(note.replace(str(path), str(other)) + f"note: matched {other}'s columns to the "
                          "features by position: its header ('', p, q) names none of checkpoint ")
    # repeated names: read by position as training read them (by name they would be ambiguous)
    repeated = _write(tmp_path, "repeated.csv", ",x,x,y\n" + body)
    _train(capsys, repeated, tmp_path / "r.npz")
    assert metadata(tmp_path / "r.npz")["feature_names"] == ["x", "x"]
    out, err = _predict(capsys, tmp_path / "r.npz", repeated)
    assert out == expected and err.startswith(note.replace(str(path), str(repeated)))
    assert err.count("note:") == 1
    # indices count the index column: 3 is y
    out, err = _predict(capsys, tmp_path / "c.npz", path, "--label-column", "3")
    assert out == expected and "accuracy=" in err
    _train(capsys, path, tmp_path / "i3.npz", "--label-column", "3")
    _same_checkpoint(tmp_path / "i3.npz", tmp_path / "c.npz")


# ----------------------------------------------------------------------------------------- F4


def test_comment_and_separator_lines(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    body = "".join(",".join(row) + "\n" for row in _rows())
    comment = _write(tmp_path, "comment.csv", "# a,b,y\n" + body)
    _refused(
        capsys,
        f"{comment}: line 1 starts with '#', a comment line: comment lines are not supported (accepted: a "
        "header row or a data row first; remove the comment lines, or rename a first column whose name "
        "starts with '#'; numpy's savetxt writes its header as a comment unless given comments='')",
        "train", "--dataset", str(comment), *TRAIN,
    )
    semicolon = _write(tmp_path, "semi.csv", "sep=;\na;b;y\n" + body.replace(",", ";"))
    _refused(
        capsys,
        f"{semicolon}: line 1: Excel's separator line 'sep=;' says the file is separated by ';', not commas: "
        "pass --delimiter ';'",
        "train", "--dataset", str(semicolon), *TRAIN,
    )
    excel = _write(tmp_path, "excel.csv", "sep=,\na,b,y\n" + body)
    note = f"note: {excel}: line 1 'sep=,' is Excel's separator line naming a comma; it was skipped\n"
    lines, err = _train(capsys, excel, tmp_path / "e.npz")
    assert err == note and " features=2 " in lines[0]
    _train(capsys, _clean(tmp_path), tmp_path / "c.npz")
    _same_checkpoint(tmp_path / "e.npz", tmp_path / "c.npz")
    out, err = _predict(capsys, tmp_path / "e.npz", excel)
    assert err.startswith(note) and out == _predict(capsys, tmp_path / "e.npz", _clean(tmp_path))[0]
    _refused(
        capsys,
        f"{comment}: line 1 starts with '#', a comment line: comment lines are not supported (accepted: a "
        "header row or a data row first; remove the comment lines, or rename a first column whose name "
        "starts with '#'; numpy's savetxt writes its header as a comment unless given comments='')",
        "predict", str(tmp_path / "e.npz"), "--dataset", str(comment),
    )


def test_a_text_column_that_is_not_the_label_gets_a_hint(capsys: pytest.CaptureFixture[str],
                                                         tmp_path: Path) -> None:
    path = _write(tmp_path, "first.csv", "y,a,b\n" + "".join(f"{y},{a},{b}\n" for a, b, y in _rows()))
    _refused(capsys, f"{path}: line 2, column y: not a number: 'dog' (feature columns must be numbers: if y "
             "is categorical, one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass "
             "--label-column y)",
             "train", "--dataset", str(path), *TRAIN)
    lines, err = _train(capsys, path, tmp_path / "y.npz", "--label-column", "y")
    assert err == "" and " features=2 " in lines[0]


# ----------------------------------------------------------------------------------------- F7


def test_a_label_column_number_that_names_a_column_says_so(capsys: pytest.CaptureFixture[str],
                                                           tmp_path: Path) -> None:
    rows = "".join(f"{a},{i % 3},{b},{i % 2}\n" for i, (a, b, _) in enumerate(_rows()))
    path = _write(tmp_path, "named.csv", "a,3,b,y\n" + rows)
    note = (f"note: {path}: label column '3' is a column name and a column index: it was read as the name "
            "(column 1), not as index 3 (column y); names come first: for that index pass --label-column -1 "
            "or --label-column y\n")
    _, err = _train(capsys, path, tmp_path / "3.npz", "--label-column", "3")
    assert err == note
    saved = metadata(tmp_path / "3.npz")
    assert (saved["label_column"], saved["feature_names"]) == ("3", ["a", "b", "y"])
    assert saved["classes"] == ["0", "1", "2"]
    for index in ("-1", "y"):
        _, err = _train(capsys, path, tmp_path / "y.npz", "--label-column", index)
        assert err == "" and metadata(tmp_path / "y.npz")["label_column"] == "y"
    # predict resolves --label-column the same way, and says so
    out, err = _predict(capsys, tmp_path / "3.npz", path, "--label-column", "3")
    assert err.startswith(note) and "accuracy=" in err
    assert out == _predict(capsys, tmp_path / "3.npz", path)[0]


def test_the_label_column_name_note_comes_with_the_load_error_it_explains(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review216 F4: with class names in y, --label-column 3 (meant as y's index) read column '3'
    as the label and refused y as a feature, and the note that '3' was read as a name was dropped
    with the load; the refusal carries it now, and following it trains."""
    rows = "".join(f"{a},{i % 3},{b},{'uv'[i % 2]}\n" for i, (a, b, _) in enumerate(_rows()))
    path = _write(tmp_path, "named.csv", "a,3,b,y\n" + rows)
    code, out, err = cli(capsys, "train", "--dataset", str(path), "--label-column", "3", *TRAIN)
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: line 2, column y: not a number: 'u' (feature columns must be numbers: if y is "
        "categorical, one-hot encode it, e.g. with pandas.get_dummies; if it is the label, pass "
        f"--label-column y) (note: {path}: label column '3' is a column name and a column index: it was read "
        "as the name "
        "(column 1), not as index 3 (column y); names come first: for that index pass --label-column -1 or "
        "--label-column y)\n"
    )
    with pytest.raises(data.DataError, match=r"for that index pass label_column=3 as an int \(CLI: "):
        data.load(path, label_column="3")
    assert _train(capsys, path, tmp_path / "y.npz", "--label-column", "-1")[1] == ""


def test_predict_reads_the_header_as_the_run_did(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """review42 F1: predict guessed the header again, so on the training file itself a run trained
    with ``--header`` over an all-numbers header refused the header's '5' as a class (or predicted it
    as a sample), and one trained with ``--no-header`` lost its first row. It now reads the first
    row as the run did, says so, and its own flags choose otherwise. Oracle: the row counts, and
    the predictions of the same rows read from the other layout with its flag given."""
    body = "".join(f"{a},{b},{0 if y == 'cat' else 1}\n" for a, b, y in _rows())
    numbered = _write(tmp_path, "numbered.csv", "1,2,3\n" + body)
    headless = _write(tmp_path, "headless.csv", body)
    for path, flag, other, other_flag in ((numbered, "--header", headless, "--no-header"),
                                          (headless, "--no-header", numbered, "--header")):
        save = tmp_path / f"{path.stem}.npz"
        _train(capsys, path, save, flag)
        code, out, err = cli(capsys, "predict", str(save), "--dataset", str(path))
        assert code == 0, err
        if flag == "--header":  # one note: the row of numbers read as names, as the run read it (review63 F7)
            assert err.startswith(
                f"note: {path}: first row 1,2,3 was read as a header though its cells are all numbers, so "
                "they name the columns and the row is not read as data; pass --no-header if it is a data row "
                f"(read so as checkpoint {save}'s run read its data: --header)\n"
            )
        else:
            assert err.startswith(f"note: the first row is read as data, as checkpoint {save}'s run read its "
                                  "data (--no-header): pass --header if it names the columns\n")
        assert f"rows={N} " in err and out.count("\n") == N + 1  # the report on stderr, predictions on stdout
        want, got = tmp_path / "want.csv", tmp_path / "got.csv"
        assert cli(capsys, "predict", str(save), "--dataset", str(other), other_flag,
                   "--output", str(want))[0] == 0
        assert cli(capsys, "predict", str(save), "--dataset", str(path), "--output", str(got))[0] == 0
        assert got.read_text() == want.read_text()
    # predict's own flag: the headless file's first row read as a header, one row fewer
    code, out, err = cli(capsys, "predict", str(tmp_path / "headless.npz"), "--dataset", str(headless),
                         "--header")
    assert code == 0 and f"rows={N - 1} " in err and "run read its data" not in err
    # review44 F3: an all-numbers header under the inherited --no-header is refused saying so (it
    # said only --ignore-labels, which then predicted the header as a sample)
    code, out, err = cli(capsys, "predict", str(tmp_path / "headless.npz"), "--dataset", str(numbered))
    assert (code, out) == (2, "")
    assert err.splitlines()[-1].endswith(
        f"; line 1 is read as data, as checkpoint {tmp_path / 'headless.npz'}'s run read its data "
        "(--no-header): pass --header if it names the columns"
    )


def test_an_inherited_no_header_refusal_says_how_to_read_a_header(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review43 F6: a run trained with --no-header makes predict read line 1 as data; a file with a
    header is then refused at its first cell, and the refusal says why and which flag reads it."""
    body = "".join(f"{a},{b},{y}\n" for a, b, y in _rows())
    headless = _write(tmp_path, "headless.csv", body)
    save = tmp_path / "headless.npz"
    _train(capsys, headless, save, "--no-header")
    headed = _clean(tmp_path)
    code, out, err = cli(capsys, "predict", str(save), "--dataset", str(headed))
    assert (code, out) == (2, "")
    assert err.splitlines()[-1] == (
        f"error: {headed}: line 1, column column_0: not a number: 'a'; line 1 is read as data, as checkpoint "
        f"{save}'s run read its data (--no-header): pass --header if it names the columns"
    )
    code, out, err = cli(capsys, "predict", str(save), "--dataset", str(headed), "--header")
    assert code == 0, err


@pytest.mark.parametrize("ignore", [False, True])
def test_a_column_named_as_the_label_column_is_the_label_in_a_file_a_feature_short(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, ignore: bool
) -> None:
    """review188 F1: a file of other features whose columns number the model's features, the last
    named as the checkpoint's label column, read that column as a feature ("not a number: 'cat' ...
    pass --label-column y"), with --ignore-labels too; it is the label column, and the file a
    feature short."""
    _train(capsys, _clean(tmp_path), tmp_path / "c.npz")
    other = _write(tmp_path, "other.csv", "q,y\n" + "".join(f"{a},{y}\n" for a, _, y in _rows()))
    _refused(
        capsys,
        f"{other} has 1 feature column (q; label column y), but checkpoint {tmp_path / 'c.npz'} expects 2 "
        "features (a, b)",
        "predict", str(tmp_path / "c.npz"), "--dataset", str(other), *(["--ignore-labels"] if ignore else []),
    )


def test_resume_and_inspect_say_how_other_data_differ(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review188 F2: data whose digest is not the run's were "other data" and no more ("the file or
    its split changed", "their digest differs"): the first difference the checkpoint can tell is
    named, the feature names before the statistics."""
    model = tmp_path / "c.npz"
    _train(capsys, _clean(tmp_path), model)
    other = _write(tmp_path, "other.csv", "q,y\n" + "".join(f"{a},{y}\n" for a, _, y in _rows()))
    _refused(
        capsys,
        f"the data of --dataset {other} differ from those the run in {model} trained on (they have 1 feature "
        "name (q), the checkpoint 2 (a, b)): resume with the data it was trained on",
        "train", "--resume", str(model), "--epochs", "3", "--dataset", str(other),
    )
    code, out, err = cli(capsys, "inspect", str(model), "--dataset", str(other))
    assert code == 0 and out.endswith("data_matches: no\n"), err
    assert err == (f"note: the data of {other} are not those checkpoint {model}'s run trained on: their "
                   "digest differs; they have 1 feature name (q), the checkpoint 2 (a, b)\n")
    # the same columns, one value changed: the statistic that moved (values exact in binary here)
    rows = _rows()
    rows[0] = ("40.5", *rows[0][1:])
    edited = _write(tmp_path, "edited.csv", "a,b,y\n" + "".join(",".join(row) + "\n" for row in rows))
    code, _, err = cli(capsys, "train", "--resume", str(model), "--epochs", "3", "--dataset", str(edited))
    assert code == 2, err
    assert "(the file or its split changed; over the training rows, feature a's mean is " in err, err


def test_a_headerless_features_only_file_has_no_label_for_a_run_whose_label_was_column_0(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review192 F1: the rule above took a headerless run's label ``column_0`` from a headerless
    file of the features only, whose ``column_0`` is its first feature, and refused the file."""
    rows = _rows()
    train = _write(tmp_path, "train.csv", "".join(f"{int(y == 'cat')},{a},{b}\n" for a, b, y in rows))
    features = _write(tmp_path, "features.csv", "".join(f"{a},{b}\n" for a, b, _ in rows))
    model = tmp_path / "m.npz"
    _train(capsys, train, model, "--no-header", "--label-column", "0")
    out, err = _predict(capsys, model, features)
    assert len(out.splitlines()) == N + 1 and "accuracy=" not in err, err
    out_labels, err_labels = _predict(capsys, model, train)  # the file it trained on: labels read
    assert "accuracy=" in err_labels
    assert out_labels == out  # the same rows, the same predictions


def test_a_wide_file_missing_a_middle_column_names_it(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review192 F4: with more names than a message lists, both lists read ``f0, f1, f2, ..., f9``;
    the first name that differs is named."""
    names = [f"f{i}" for i in range(10)]
    body = [[f"{(i * 7 + j) % 11 / 4:g}" for j in range(10)] + ["cat" if i % 2 else "dog"] for i in range(N)]
    rows = "".join(",".join(r) + "\n" for r in body)
    wide = _write(tmp_path, "wide.csv", ",".join([*names, "y"]) + "\n" + rows)
    kept = [j for j in range(11) if j != 4]
    cut = _write(tmp_path, "cut.csv", ",".join([*names, "y"][j] for j in kept) + "\n"
                 + "".join(",".join(r[j] for j in kept) + "\n" for r in body))
    model = tmp_path / "w.npz"
    _train(capsys, wide, model)
    _refused(
        capsys,
        f"the data of --dataset {cut} differ from those the run in {model} trained on (they have 9 feature "
        "names (f0, f1, f2, ..., f9), the checkpoint 10 (f0, f1, f2, ..., f9); the checkpoint's feature f4 "
        "is not among theirs): resume with the data it was trained on",
        "train", "--resume", str(model), "--epochs", "3", "--dataset", str(cut),
    )


def test_other_data_of_another_width_are_named_so_without_feature_names(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review194 F2: a checkpoint without feature names (one built in Python) and data of another
    width were told apart by a training-rows statistic ("they have 1 feature means"), blaming rows."""
    model = tmp_path / "c.npz"
    _train(capsys, _clean(tmp_path), model)
    bare = dataclasses.replace(checkpoint.load(model), feature_names=())
    other = _write(tmp_path, "other.csv", "q,y\n" + "".join(f"{a},{y}\n" for a, _, y in _rows()))
    assert _resume.digest_difference(data.load(str(other)), bare) == "they have 1 feature, the checkpoint 2"


def test_a_column_removed_and_another_added_is_named_by_name(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review195 F3: name lists of one length were compared by position, so a column removed and
    another added read as a rename of the next column ("they name feature 1 c, where the checkpoint
    names it b"); the name the data lack is named."""
    model = tmp_path / "abc.npz"
    rows = [(f"{i % 5}", f"{i % 3}", f"{i % 7}", f"{i % 4}", "cat" if i % 2 else "dog") for i in range(N)]
    abc = "a,b,c,y\n" + "".join(f"{a},{b},{c},{y}\n" for a, b, c, _, y in rows)
    _train(capsys, _write(tmp_path, "abc.csv", abc), model)
    other = _write(tmp_path, "acz.csv", "a,c,z,y\n" + "".join(f"{a},{c},{z},{y}\n" for a, _, c, z, y in rows))
    _refused(
        capsys,
        f"the data of --dataset {other} differ from those the run in {model} trained on (the checkpoint's "
        "feature b is not among theirs): resume with the data it was trained on",
        "train", "--resume", str(model), "--epochs", "3", "--dataset", str(other),
    )


@pytest.mark.parametrize(
    ("ours", "theirs", "expected"),
    [
        # a true rename, in place: by position (review195 F3)
        ("a g c", "a b c", "they name feature 1 g, where the checkpoint names it b"),
        # one removed, another added: the one the data lack, by name
        ("a c z", "a b c", "the checkpoint's feature b is not among theirs"),
        ("a b c z", "a b c", "they have 4 feature names (a, b, c, z), the checkpoint 3 (a, b, c)"),
        # the same names in another order: by position
        ("a c b", "a b c", "they name feature 1 c, where the checkpoint names it b"),
        # a name repeated on one side only (review195 F4)
        ("a b b", "a a b", "their feature b is repeated"),
        ("a b", "a b b", "they have 2 feature names (a, b), the checkpoint 3 (a, b, b)"),
        ("f0 f1 f2 f3 f4 f5 f6 f4", "f0 f1 f2 f3 f4 f5 f6",
         "they have 8 feature names (f0, f1, f2, ..., f4), the checkpoint 7 (f0, f1, f2, ..., f6); their "
         "feature f4 is repeated"),
        ("f0 f1 f2 f3 f4 f5 f6", "f0 f1 f2 f3 f4 f5 f6 f6",
         "they have 7 feature names (f0, f1, f2, ..., f6), the checkpoint 8 (f0, f1, f2, ..., f6); the "
         "checkpoint's feature f6 is repeated"),
    ],
)
def test_first_name_difference(ours: str, theirs: str, expected: str) -> None:
    """Each case of ``first_name_difference``, written out by hand."""
    assert _resume.first_name_difference("feature", ours.split(), theirs.split()) == expected


def test_numeric_class_names_are_quoted() -> None:
    """review195 F5: "they name class 0 1" left unclear which number is the position and which the
    name; a name that reads as a number is quoted."""
    assert (_resume.first_name_difference("class", ["1", "2", "3"], ["0", "1", "2"])
            == "the checkpoint's class '0' is not among theirs")
    assert (_resume.first_name_difference("class", ["7", "1"], ["0", "1"])
            == "they name class 0 '7', where the checkpoint names it '0'")
    # review200 F11: the lists of the same message quote them too
    ours, theirs = [str(i) for i in range(1, 9)], [str(i) for i in range(7)]
    assert _resume.first_name_difference("class", ours, theirs) == (
        "they have 8 class names ('1', '2', '3', ..., '8'), the checkpoint 7 ('0', '1', '2', ..., '6'); the "
        "checkpoint's class '0' is not among theirs"
    )


@pytest.mark.parametrize(
    ("found", "kept", "expected"),
    [
        (1.0625, 4.0, ("1.0625", "4.0")),  # exact in 6 digits: as repr prints them
        (1.5905104166666666, 1.5112916666666667, ("1.59051", "1.51129")),
        (1.0000001, 1.0000002, ("1.0000001", "1.0000002")),  # 8 digits tell them apart
        (0.30000000000000004, 0.3, ("0.30000000000000004", "0.3")),  # only 17 do
        (float("nan"), 1.0, ("nan", "1.0")),
        # review200 F2: a rounding boundary between close values; the printed difference is faithful
        (1.0000005, 1.00000049999, ("1.0000005", "1.00000049999")),
        (123456789.5, 123456789.25, ("123456789.5", "123456789.2")),
        (1000014.2238531684, 0.1422385316854777, ("about 1000014", "0.1422385")),  # the README's example
        (9.9999996, 9.999999, ("9.9999996", "9.999999")),
        (10.0000004, 9.9, ("about 10", "9.9")),  # a rounded whole number does not read as exact
    ],
)
def test_statistics_print_with_the_digits_that_tell_them_apart(
    found: float, kept: float, expected: tuple[str, str]
) -> None:
    """review195 F5: a differing mean printed with 17 digits where 6 tell it from the checkpoint's."""
    assert _resume._told_apart(found, kept) == expected
