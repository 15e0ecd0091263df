"""``torchlean train --delimiter D`` and ``torchlean predict --delimiter D``: CSV files separated
by ``;``, tabs or ``|`` (the Python side is tests/data/test_csv_delimiter.py). Each refusal is one
``error:`` line, exit status 2, no traceback.

Oracles: the same rows written comma-separated (by Python's ``csv.writer``): ``train --save``
writes the same checkpoint arrays bit for bit and the same epoch lines, ``predict`` the same
predictions; the uninterrupted run for a resumed one; messages written out by hand.
"""

from __future__ import annotations

import contextlib
import csv
import io
import json
import re
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import OTHER_TRAINING_ROWS, arrays, cli, metadata

from torchlean.cli import main
from torchlean.data import read_csv

N = 40
TRAIN = ("--epochs", "2", "--hidden", "8")
RULE = (
    "not a quote (\" or '), a line break, a digit, '.', '+', '-', 'e', 'E' or a blank other than tab, which "
    "would clash with quoting, rows or numbers"
)
ACCEPTED = (
    "expected one character such as , (the default), ';', '|' or tab (also written \\t, or a literal tab), "
    f"{RULE}, or whitespace (also written space: runs of spaces and tabs)"
)


def _rows() -> list[tuple[str, str, str]]:
    """``N`` rows of two features and a label that depends on the first; one label holds ``;``
    and ``|`` and one a tab, which ``csv.writer`` quotes where they are the delimiter."""
    labels = ("cat;|x", "dog\tz")
    return [
        (f"{(i * 37) % 41 / 10:g}", f"{(i * 11) % 13 / 4:g}", labels[(i * 37) % 41 > 20]) for i in range(N)
    ]


def _written(tmp_path: Path, delimiter: str, name: str) -> Path:
    buffer = io.StringIO()
    csv.writer(buffer, delimiter=delimiter, lineterminator="\n").writerows([("a", "b", "y"), *_rows()])
    path = tmp_path / name
    path.write_text(buffer.getvalue())
    return path


def _refused(capsys: pytest.CaptureFixture[str], message: str, *argv: str) -> None:
    code, out, err = cli(capsys, *argv)
    assert (code, out, err) == (2, "", f"error: {message}\n")


def _train(capsys: pytest.CaptureFixture[str], path: Path, save: Path, *argv: str) -> list[str]:
    """``torchlean train --dataset PATH --save SAVE``: its stdout lines, with the dataset and the
    checkpoint named as ``DATA`` and ``SAVE``; nothing on stderr."""
    code, out, err = cli(capsys, "train", "--dataset", str(path), *TRAIN, "--save", str(save), *argv)
    assert (code, err) == (0, ""), err
    return out.replace(str(path), "DATA").replace(str(save), "SAVE").splitlines()


def _bitwise_equal(got: Path, want: Path) -> None:
    """The checkpoints' arrays (weights, statistics, optimizer state) are equal bit for bit, and so
    is their metadata but the dataset path and the training settings (the delimiter's)."""
    a, b = arrays(got), arrays(want)
    assert a.keys() == b.keys()
    for name in a:
        assert (a[name].dtype, a[name].shape, a[name].tobytes()) == (b[name].dtype, b[name].shape,
                                                                     b[name].tobytes()), name
    meta_a, meta_b = metadata(got), metadata(want)
    for meta in (meta_a, meta_b):
        del meta["dataset"]
        del meta["environment"]  # the command line (review62)
        meta["training"]["settings"].pop("delimiter")
        meta["training"]["settings"].pop("dataset")
    assert meta_a == meta_b


@pytest.fixture(scope="module")
def comma_run(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path, list[str]]:
    """The comma-separated file, its checkpoint and its train lines (the oracle)."""
    folder = tmp_path_factory.mktemp("comma")
    path = _written(folder, ",", "comma.csv")
    save = folder / "comma.npz"
    out, err = io.StringIO(), io.StringIO()  # a module fixture has no capsys
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        assert main(["train", "--dataset", str(path), *TRAIN, "--save", str(save)]) == 0
    assert err.getvalue() == ""
    return path, save, out.getvalue().replace(str(path), "DATA").replace(str(save), "SAVE").splitlines()


# ------------------------------------------------------------------ the same weights, bit for bit


@pytest.mark.parametrize(
    ("delimiter", "spellings"),
    [(";", (";",)), ("\t", ("tab", "\\t", "\t")), ("|", ("|",))],
)
def test_a_file_trains_as_the_same_data_written_with_commas(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    comma_run: tuple[Path, Path, list[str]],
    delimiter: str,
    spellings: tuple[str, ...],
) -> None:
    _, comma_save, comma_lines = comma_run
    path = _written(tmp_path, delimiter, "other.csv")
    text = path.read_text()
    quoted = next(label for label in ("cat;|x", "dog\tz") if delimiter in label)
    assert "," not in text and f'"{quoted}"' in text  # csv.writer quotes the label holding the delimiter
    for spelling in spellings:
        save = tmp_path / f"{len(spelling)}.npz"
        lines = _train(capsys, path, save, "--delimiter", spelling)
        assert lines == comma_lines  # the header, every epoch's loss, the test metric, the capsules
        _bitwise_equal(save, comma_save)
        assert metadata(save)["training"]["settings"]["delimiter"] == delimiter
        assert metadata(save)["classes"] == ["cat;|x", "dog\tz"]  # quoted cells hold the delimiter
    assert metadata(comma_save)["training"]["settings"]["delimiter"] is None  # not given: ','
    code, _, err = cli(capsys, "train", "--dataset", str(path), *TRAIN, f"--delimiter={spellings[0]}")
    assert (code, err) == (0, "")


def test_predict_with_the_files_delimiter_equals_predict_on_the_comma_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, comma_run: tuple[Path, Path, list[str]]
) -> None:
    comma, comma_save, _ = comma_run
    semicolon = _written(tmp_path, ";", "semi.csv")
    _train(capsys, semicolon, tmp_path / "semi.npz", "--delimiter", ";")
    outs, errs = {}, {}
    for checkpoint in (comma_save, tmp_path / "semi.npz"):  # predict's --delimiter is the file's own
        for path, options in ((comma, ()), (semicolon, ("--delimiter", ";"))):
            code, out, err = cli(capsys, "predict", str(checkpoint), "--dataset", str(path), *options,
                                 "--probabilities", "--split", "test")
            assert code == 0, err
            outs[checkpoint.name, path.name] = out
            errs[checkpoint.name, path.name] = err.replace(str(path), "DATA").replace(str(checkpoint), "C")
    # the predictions and probabilities, to the last digit; written with the input's delimiter (F9)
    read = {key: list(csv.reader(io.StringIO(out), delimiter=";" if key[1] == "semi.csv" else ","))
            for key, out in outs.items()}
    assert len({repr(rows) for rows in read.values()}) == 1
    assert outs["semi.npz", "comma.csv"] == outs["comma.npz", "comma.csv"]
    assert outs["semi.npz", "semi.csv"] == outs["comma.npz", "semi.csv"]
    assert outs["comma.npz", "comma.csv"].splitlines()[0] == "row,prediction,p_cat;|x,p_dog\tz"
    out = outs["semi.npz", "semi.csv"]
    assert out.splitlines()[0] == 'row;prediction;"p_cat;|x";p_dog\tz' and len(out.splitlines()) == 9
    assert errs["semi.npz", "semi.csv"] == errs["comma.npz", "comma.csv"]  # the report, accuracy included
    assert "\naccuracy=" in errs["semi.npz", "semi.csv"]
    # without --delimiter the ';' file is one column, and the refusal names the option
    code, out, err = cli(capsys, "predict", str(comma_save), "--dataset", str(semicolon))
    assert (code, out) == (2, "")
    assert err == (
        f"error: {semicolon}: read as 1 column, but checkpoint {comma_save} expects 2 features; the file "
        "seems to be separated by ';', not commas: pass --delimiter ';'\n"
    )


# ------------------------------------------------------------------------------------- --resume


UNSAVED = "note: this run saves nothing (no --save): "
"""The note of a resumed run without --save, its only stderr line here."""


def test_resume_takes_the_checkpoints_delimiter_unless_given(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = _written(tmp_path, "\t", "data.tsv")
    whole, part, resumed = tmp_path / "whole.npz", tmp_path / "part.npz", tmp_path / "resumed.npz"
    run = ("--dataset", str(path), "--hidden", "8", "--delimiter", "tab")
    code, whole_out, err = cli(capsys, "train", *run, "--epochs", "3", "--save", str(whole))
    assert (code, err) == (0, "")
    code, _, err = cli(capsys, "train", *run, "--epochs", "2", "--save", str(part))
    assert (code, err) == (0, "")
    # no flag: the checkpoint's tab (the file would be one column with commas)
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "3", "--save", str(resumed))
    assert (code, err) == (0, "")
    want = [line.replace(str(whole), str(resumed)) for line in whole_out.splitlines()[4:]]
    assert out.splitlines()[3:] == want  # epoch 3 on
    a, b = arrays(whole), arrays(resumed)
    for name in a:
        assert a[name].tobytes() == b[name].tobytes(), name
    assert metadata(resumed)["training"]["settings"]["delimiter"] == "\t"
    # the same delimiter in another spelling is no conflict; another reads the file with it (review37
    # F7: no conflict of settings, the data decide), here as one column
    for spelling in ("\\t", "\t", "tab"):
        code, _, err = cli(capsys, "train", "--resume", str(part), "--epochs", "3", "--delimiter", spelling)
        assert code == 0 and err.startswith(UNSAVED) and err.count("\n") == 1
    for given, shown in ((";", "';'"), (",", "commas")):
        _refused(
            capsys,
            f"{path}: expected a label column and at least one feature column, got 1; the file seems to be "
            f"separated by tabs, not {shown}: pass --delimiter tab",
            "train", "--resume", str(part), "--epochs", "3", "--delimiter", given,
        )


def _edited(source: Path, target: Path, delimiter: Any) -> Path:
    """``source`` with its recorded ``delimiter`` setting replaced (``...``: removed, as in a
    checkpoint written before the option)."""
    with np.load(source, allow_pickle=False) as archive:
        entries = {name: archive[name] for name in archive.files}
    meta = json.loads(str(entries["metadata"]))
    if delimiter is ...:
        del meta["training"]["settings"]["delimiter"]
    else:
        meta["training"]["settings"]["delimiter"] = delimiter
    entries["metadata"] = np.array(json.dumps(meta))
    with target.open("wb") as handle:
        np.savez(handle, **entries)
    return target


def test_a_checkpoint_without_the_setting_means_the_comma(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, comma_run: tuple[Path, Path, list[str]]
) -> None:
    comma, _, _ = comma_run
    saved = tmp_path / "new.npz"
    run = ("--dataset", str(comma), "--hidden", "8")
    code, whole, err = cli(capsys, "train", *run, "--epochs", "3")
    assert (code, err) == (0, "")
    code, _, err = cli(capsys, "train", *run, "--epochs", "2", "--save", str(saved))
    old = _edited(saved, tmp_path / "old.npz", ...)
    assert "delimiter" not in metadata(old)["training"]["settings"]
    for options in ((), ("--delimiter", ",")):
        code, out, err = cli(capsys, "train", "--resume", str(old), "--epochs", "3", *options)
        assert code == 0 and err.startswith(UNSAVED) and err.count("\n") == 1
        assert out.splitlines()[3:] == whole.splitlines()[4:]
    for checkpoint in (old, saved):  # recorded as not given, or absent: the comma, which leaving it out gives
        _refused(
            capsys,
            f"{comma}: expected a label column and at least one feature column, got 1; the file seems to be "
            "separated by commas, not ';': leave out --delimiter, the default",
            "train", "--resume", str(checkpoint), "--epochs", "3", "--delimiter", ";",
        )


@pytest.mark.parametrize(
    ("recorded", "refusal"),
    [
        ("ab", f"'ab' is refused: {ACCEPTED}; got 'ab', which is 2 characters, not one"),
        (".", f"'.' is refused: {ACCEPTED}; got '.', which is written in numbers (a point, a sign or an "
              "exponent)"),
        ("", f"'' is refused: {ACCEPTED}; got '', which is empty"),
    ],
)
def test_a_hand_edited_delimiter_setting_is_refused_on_resume(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    comma_run: tuple[Path, Path, list[str]],
    recorded: object,
    refusal: str,
) -> None:
    _, comma_save, _ = comma_run
    edited = _edited(comma_save, tmp_path / "edited.npz", recorded)
    _refused(capsys, f"checkpoint {edited}: its setting --delimiter {refusal}",
             "train", "--resume", str(edited))


# ------------------------------------------------------------------------------- bad values


@pytest.mark.parametrize(
    ("value", "why"),
    [
        ("", "is empty"),
        (";;", "is 2 characters, not one"),
        ("tabs", "is 4 characters, not one"),
        ("\\s+", "is 3 characters, not one"),  # pandas' sep=r"\s+"
        ("WHITESPACE", "is 10 characters, not one"),
        ("TAB", "is 3 characters, not one"),
        ("\\n", "is 2 characters, not one"),
        ('"', "is a quote, which encloses cells"),
        ("'", "is a quote, which encloses cells"),
        ("\n", "is a line break, which ends rows"),
        ("\r", "is a line break, which ends rows"),
        ("5", "is a digit, which numbers are written with"),
        (".", "is written in numbers (a point, a sign or an exponent)"),
        ("+", "is written in numbers (a point, a sign or an exponent)"),
        ("-", "is written in numbers (a point, a sign or an exponent)"),
        ("e", "is written in numbers (a point, a sign or an exponent)"),
        ("E", "is written in numbers (a point, a sign or an exponent)"),
        (" ", "is a blank other than tab, which is stripped around cells"),
        ("\xa0", "is a blank other than tab, which is stripped around cells"),
    ],
)
@pytest.mark.parametrize("command", ["train", "predict"])
def test_a_bad_delimiter_is_one_line_naming_it_and_the_accepted_ones(
    capsys: pytest.CaptureFixture[str],
    comma_run: tuple[Path, Path, list[str]],
    command: str,
    value: str,
    why: str,
) -> None:
    comma, save, _ = comma_run
    before = (str(save),) if command == "predict" else ()
    code, out, err = cli(capsys, command, *before, "--dataset", str(comma), f"--delimiter={value}")
    assert (code, out) == (2, "")
    pointer = {  # a single space stays refused, pointing to the mode that reads blank-separated files
        " ": " (for cells separated by spaces, as numpy's savetxt and R's write.table write them: "
        "--delimiter whitespace)",
        # review40 F6: other spellings point to the accepted one
        "\\s+": " (pandas' sep=r'\\s+', runs of blanks, is --delimiter whitespace here)",
        "WHITESPACE": " (for runs of blanks pass --delimiter whitespace)",
        "TAB": " (for a tab pass --delimiter tab)",
    }.get(value, "")
    assert err.endswith(f"error: argument --delimiter: {ACCEPTED}; got {value!r}, which {why}{pointer}\n")
    assert "Traceback" not in err
    assert cli(capsys, command, *before, "--dataset", str(comma), "--delimiter", value)[2] == err  # one word


def test_a_shipped_dataset_refuses_the_delimiter(capsys: pytest.CaptureFixture[str],
                                                 comma_run: tuple[Path, Path, list[str]]) -> None:
    _, save, _ = comma_run
    message = "{} to CSV files only; iris is a shipped dataset"
    _refused(capsys, message.format("--delimiter applies"), "train", "--dataset", "iris", "--delimiter", ",")
    _refused(capsys, message.format("--header and --delimiter apply"),
             "train", "--dataset", "iris", "--header", "--delimiter", ";")
    _refused(capsys, message.format("--label-column, --task, --header and --delimiter apply"),
             "train", "--dataset", "iris", "--delimiter", "tab", "--header", "--task", "regression",
             "--label-column", "0")
    _refused(capsys, message.format("--delimiter applies"), "predict", str(save), "--dataset", "iris",
             "--delimiter", "|")


# ------------------------------------------------------------------------ messages on the CLI


def test_excels_separator_line_and_a_trailing_delimiter_under_the_delimiter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, comma_run: tuple[Path, Path, list[str]]
) -> None:
    _, comma_save, comma_lines = comma_run
    plain = _written(tmp_path, ";", "plain.csv").read_text()
    excel = tmp_path / "excel.csv"
    excel.write_text("sep=;\n" + plain.replace("\n", ";\n"))
    code, out, err = cli(capsys, "train", "--dataset", str(excel), *TRAIN, "--save", str(tmp_path / "e.npz"),
                         "--delimiter", ";")
    assert code == 0
    assert err == (
        f"note: {excel}: line 1 'sep=;' is Excel's separator line naming ';'; it was skipped\n"
        f"note: {excel}: the last column (3) has no name and is empty on every line (a trailing ';'?), so it "
        "is ignored\n"
    )
    lines = out.replace(str(excel), "DATA").replace(str(tmp_path / "e.npz"), "SAVE").splitlines()
    assert lines == comma_lines
    _bitwise_equal(tmp_path / "e.npz", comma_save)
    _refused(
        capsys,
        f"{excel}: line 1: Excel's separator line 'sep=;' says the file is separated by ';', not '|': pass "
        "--delimiter ';'",
        "train", "--dataset", str(excel), "--delimiter", "|",
    )


def test_a_decimal_comma_says_so(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    path = tmp_path / "prices.csv"
    path.write_text("a;b;y\n" + "".join(f"{i};{i % 3},5;{i % 2}\n" for i in range(N)))
    _refused(capsys,
             f"{path}: line 2, column b: not a number: '0,5' (decimal commas are not read: write 0.5)",
             "train", "--dataset", str(path), "--delimiter", ";")
    path.write_text("a;y\n" + "".join(f"{i};{i},{i % 3}\n" for i in range(N)))
    _refused(
        capsys,
        f"{path}: line 2, column y: not a number: '0,0' (decimal commas are not read: write 0.0): a quantity "
        "written with decimal commas? write its numbers with points (or, if the labels are class names, pass "
        "--task classification)",
        "train", "--dataset", str(path), "--delimiter", ";",
    )
    _refused(
        capsys,
        f"{path}: line 2, column y: not a number: '0,0' (decimal commas are not read: write 0.0)",
        "train", "--dataset", str(path), "--delimiter", ";", "--task", "regression",
    )


def test_a_row_of_another_length_names_the_delimiter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "short.csv"
    path.write_text("a;b;y\n" + "".join(f"{i};{i % 3};{i % 2}\n" for i in range(N)) + "1,5;0\n")
    _refused(capsys, f"{path}: line {N + 2} has 2 cells separated by ';', expected 3",
             "train", "--dataset", str(path), "--delimiter", ";")


@pytest.mark.parametrize("command", ["train", "predict"])
def test_help_documents_the_option(capsys: pytest.CaptureFixture[str], command: str) -> None:
    code, out, _ = cli(capsys, command, "--help")
    assert code == 0
    text = " ".join(out.split())
    assert (
        "--delimiter D CSV only: the character between cells (default: ,): ';' (as European spreadsheets "
        "export), tab (also written \\t, or a literal tab) for TSV files, '|', or another single character"
        " but a quote, a line break, a digit, '.', '+', '-', 'e', 'E' or a blank other than tab (quote ; "
        "and | in the shell: --delimiter ';'); or whitespace (also written space): cells separated by runs "
        "of spaces and tabs, blanks at the ends of a line ignored, as numpy's savetxt and R's write.table "
        "write them. Quoted cells may hold it. Decimal commas are not read: under ';' a cell 1,5 is refused "
        "(write 1.5)."
    ) in text
    if command == "predict":  # review37 F9: the predictions CSV is written with the input's delimiter
        assert (
            "The predictions CSV is written with it (a tab for whitespace, a cell holding a blank quoted; "
            "commas without --delimiter)"
        ) in text
        assert "separated by --delimiter (a tab for whitespace), commas by default;" in text
    else:  # review37 F7
        assert (
            "A setting of the run: --resume takes the checkpoint's unless given; another is accepted when "
            "the data it reads hash as the run's did (the same data saved with another separator)"
        ) in text


def test_predict_names_a_decimal_comma_label_of_a_regression(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    path = tmp_path / "reg.csv"
    path.write_text("a;b;y\n" + "".join(f"{i};{i % 3};{i * 0.75 + 0.5}\n" for i in range(N)))
    _train(capsys, path, tmp_path / "reg.npz", "--delimiter", ";")
    path.write_text("a;b;y\n1;2;3.5\n4;5;6,25\n")
    _refused(
        capsys,
        f"{path}: line 3, column y: not a number: '6,25' (decimal commas are not read: write 6.25); "
        "--ignore-labels predicts without reading the labels (no mse)",
        "predict", str(tmp_path / "reg.npz"), "--dataset", str(path), "--delimiter", ";",
    )


# ------------------------------------------------------------- review37: blanks, R, resume, output


def _blank_separated(tmp_path: Path, name: str = "blanks.txt") -> Path:
    """The rows of :func:`_rows` separated by runs of spaces and tabs (blanks leading and trailing
    some lines), a cell holding blanks or quotes double-quoted, as R's write.table quotes strings."""
    def cell(text: str) -> str:
        return f'"{text}"' if any(c in text for c in ' \t"') else text

    gaps = ("  ", "\t", " \t ", " ")
    lines = [
        ("  " if r % 3 == 0 else "") + gaps[r % 4].join(cell(c) for c in row) + (" \t" if r % 2 else "")
        for r, row in enumerate([("a", "b", "y"), *_rows()])
    ]
    path = tmp_path / name
    path.write_text("\n".join(lines) + "\n")
    return path


def test_a_blank_separated_file_trains_as_the_comma_file(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, comma_run: tuple[Path, Path, list[str]]
) -> None:
    _, comma_save, comma_lines = comma_run
    path = _blank_separated(tmp_path)
    assert '"dog\tz"' in path.read_text() and "\t" in path.read_text()
    for spelling in ("whitespace", "space"):
        save = tmp_path / f"{spelling}.npz"
        assert _train(capsys, path, save, "--delimiter", spelling) == comma_lines
        _bitwise_equal(save, comma_save)
        assert metadata(save)["training"]["settings"]["delimiter"] == "whitespace"
        assert metadata(save)["classes"] == ["cat;|x", "dog\tz"]
    # read with commas, the file is one column, and the refusal names the option
    _refused(
        capsys,
        f"{path}: expected a label column and at least one feature column, got 1; the file seems to be "
        "separated by blanks, not commas: pass --delimiter whitespace",
        "train", "--dataset", str(path), *TRAIN,
    )


def test_r_row_names_are_left_out_by_train_and_predict(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, comma_run: tuple[Path, Path, list[str]]
) -> None:
    """R's write.table(df, sep = "\\t"): quoted names, a header one cell shorter than the rows."""
    _, comma_save, comma_lines = comma_run
    path = tmp_path / "r.tsv"
    lines = ['"a"\t"b"\t"y"'] + [f'"{i + 1}"\t{a}\t{b}\t"{y}"' for i, (a, b, y) in enumerate(_rows())]
    path.write_text("\n".join(lines) + "\n")
    note = (
        f"note: {path}: the header has 3 cells and every data row 4, as R's write.table writes row names "
        "(pandas reads such a first column as its index), so the first cell of each row is a row name and is "
        "not used (write.table(..., row.names = FALSE) leaves it out)\n"
    )
    save = tmp_path / "r.npz"
    code, out, err = cli(capsys, "train", "--dataset", str(path), *TRAIN, "--save", str(save),
                         "--delimiter", "tab")
    assert (code, err) == (0, note)
    assert out.replace(str(path), "DATA").replace(str(save), "SAVE").splitlines() == comma_lines
    _bitwise_equal(save, comma_save)
    code, out, err = cli(capsys, "predict", str(comma_save), "--dataset", str(path), "--delimiter", "tab")
    assert code == 0 and err.startswith(note) and "\naccuracy=" in err
    code, want, _ = cli(capsys, "predict", str(comma_save), "--dataset", str(comma_run[0]))
    assert list(csv.reader(io.StringIO(out), delimiter="\t")) == list(csv.reader(io.StringIO(want)))


def test_resume_reads_the_runs_data_saved_with_another_delimiter(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review37 F7: a ';' run resumed on its data saved with commas (or blanks): the data hash as the
    run's did, so another --delimiter is accepted, and the checkpoint records the one used."""
    semicolon, comma = _written(tmp_path, ";", "s.csv"), _written(tmp_path, ",", "c.csv")
    whole, part, resumed = tmp_path / "whole.npz", tmp_path / "part.npz", tmp_path / "resumed.npz"
    run = ("--dataset", str(semicolon), "--hidden", "8", "--delimiter", ";")
    code, whole_out, err = cli(capsys, "train", *run, "--epochs", "3", "--save", str(whole))
    assert (code, err) == (0, "")
    code, _, err = cli(capsys, "train", *run, "--epochs", "2", "--save", str(part))
    assert (code, err) == (0, "")
    # without --delimiter, the run reads the comma file with the checkpoint's ';': the advice is to
    # pass --delimiter , (leaving it out, the review's "CLI: leave out --delimiter", reads with ';')
    _refused(
        capsys,
        f"{comma}: expected a label column and at least one feature column, got 1; the file seems to be "
        f"separated by commas, not ';': pass --delimiter , as --resume {part} reads the "
        "file with the checkpoint's --delimiter ';' when the option is left out; the data read must hash as "
        "the run's did",
        "train", "--resume", str(part), "--epochs", "3", "--dataset", str(comma),
    )
    want = [line.replace(str(whole), str(resumed)) for line in whole_out.splitlines()[4:]]
    for path, given, recorded in ((comma, ",", ","), (_blank_separated(tmp_path), "space", "whitespace")):
        code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "3", "--dataset", str(path),
                             "--delimiter", given, "--save", str(resumed))
        assert (code, err) == (0, "")
        assert out.splitlines()[3:] == want  # epoch 3 on, as the uninterrupted run
        a, b = arrays(whole), arrays(resumed)
        for name in a:
            assert a[name].tobytes() == b[name].tobytes(), name
        settings = metadata(resumed)["training"]["settings"]
        assert (settings["delimiter"], settings["dataset"]) == (recorded, str(path))
    # other data, saved with another delimiter: the data-changed refusal
    changed = tmp_path / "changed.csv"
    changed.write_text(comma.read_text().replace("\n0.1,", "\n0.2,", 1))
    assert changed.read_text() != comma.read_text()
    code, out, err = cli(capsys, "train", "--resume", str(part), "--epochs", "3", "--dataset", str(changed),
                         "--delimiter", ",")
    assert (code, out) == (2, "")
    assert re.fullmatch(  # review188 F2: how they differ (the values as this machine sums them)
        re.escape(f"error: the data of --dataset {changed} differ from those the run in {part} trained on (")
        + OTHER_TRAINING_ROWS
        + re.escape("): resume with the data it was trained on\n"), err), err


@pytest.mark.parametrize(
    ("options", "between"),
    [
        ((), ","), (("--delimiter", ";"), ";"), (("--delimiter", "|"), "|"),
        (("--delimiter", "whitespace"), "\t"),
    ],
)
def test_predict_writes_its_csv_with_the_inputs_delimiter(
    capsys: pytest.CaptureFixture[str],
    tmp_path: Path,
    comma_run: tuple[Path, Path, list[str]],
    options: tuple[str, ...],
    between: str,
) -> None:
    """review37 F9: --output (and stdout) separated as the input was read, a tab for whitespace,
    quoted by csv where a cell holds the separator; the cells those of the comma file's predictions."""
    comma, comma_save, _ = comma_run
    if not options:
        path = comma
    elif options[1] == "whitespace":
        path = _blank_separated(tmp_path)
    else:
        path = _written(tmp_path, between, "other.csv")
    argv = ("predict", str(comma_save), "--dataset", str(path), *options, "--probabilities")
    output = tmp_path / "p.csv"
    code, _, err = cli(capsys, *argv, "--output", str(output))
    assert code == 0, err
    code, stdout, _ = cli(capsys, *argv)
    assert code == 0 and stdout == output.read_text()
    code, want, _ = cli(capsys, "predict", str(comma_save), "--dataset", str(comma), "--probabilities")
    assert list(csv.reader(io.StringIO(stdout), delimiter=between)) == list(csv.reader(io.StringIO(want)))
    header = {
        ",": "prediction,p_cat;|x,p_dog\tz",
        ";": 'prediction;"p_cat;|x";p_dog\tz',
        "|": 'prediction|"p_cat;|x"|p_dog\tz',
        "\t": 'prediction\tp_cat;|x\t"p_dog\tz"',
    }
    assert stdout.splitlines()[0] == header[between]
    assert all(line.count(between) >= 2 for line in stdout.splitlines()[1:])


def test_predict_for_a_whitespace_input_quotes_cells_holding_blanks(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review40 F4: class names holding a space (R's "Iris setosa") are quoted in the predictions of
    a --delimiter whitespace input, so the file reads back whole both as a TSV (Python's csv with a
    tab) and with --delimiter whitespace; the cells are those of the comma file's predictions."""
    names = ("Iris setosa", 'say "hi" x', "dog\tz")
    rows = [(a, b, names[k % 3]) for k, (a, b, _) in enumerate(_rows())]
    comma = tmp_path / "comma.csv"
    with comma.open("w", newline="") as handle:
        csv.writer(handle, lineterminator="\n").writerows([("a", "b", "y"), *rows])
    blanks = tmp_path / "blanks.txt"  # R's write.table(df, row.names = FALSE), its quotes escaped
    blanks.write_text("".join(
        " ".join(f'"{c}"'.replace('"hi"', '\\"hi\\"') if not c[0].isdigit() else c for c in row) + "\n"
        for row in [("a", "b", "y"), *rows]
    ))
    save = tmp_path / "comma.npz"
    assert cli(capsys, "train", "--dataset", str(comma), *TRAIN, "--save", str(save))[0] == 0
    output = tmp_path / "p.tsv"
    code, _, err = cli(capsys, "predict", str(save), "--dataset", str(blanks), "--delimiter", "whitespace",
                       "--probabilities", "--output", str(output))
    assert code == 0, err
    text = output.read_text()
    lines = text.splitlines()
    assert lines[0] == 'prediction\t"p_Iris setosa"\t"p_dog\tz"\t"p_say ""hi"" x"'
    assert all(line.startswith(('"Iris setosa"\t', '"dog\tz"\t', '"say ""hi"" x"\t')) for line in lines[1:])
    code, want, _ = cli(capsys, "predict", str(save), "--dataset", str(comma), "--probabilities")
    expected = list(csv.reader(io.StringIO(want)))
    assert len(expected) == N + 1 and len(expected[0]) == 4
    assert list(csv.reader(io.StringIO(text), delimiter="\t")) == expected
    table = read_csv(output, delimiter="whitespace")
    assert [list(table.names), *table.rows] == expected


def test_train_errors_name_the_rows_split_at_a_blank(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """review40 F2, F3 on the command line: R's write.table(quote = FALSE) with blanks in a label,
    and a file separated by ', ' read with --delimiter whitespace."""
    path = tmp_path / "noquote.txt"
    body = "".join(f"{i % 5} {b} Iris {'xy'[i % 2]}\n" for i, (_, b, _) in enumerate(_rows()))
    path.write_text("a b y\n" + body)
    code, out, err = cli(capsys, "train", "--dataset", str(path), *TRAIN, "--delimiter", "whitespace")
    assert (code, out) == (2, "")
    assert err == (
        f"error: {path}: line 2 has 4 cells separated by blanks, expected 3 (every data row has 4 cells and "
        "the header 3: does a cell hold a blank without quotes, such as Iris setosa as R's write.table(..., "
        "quote = FALSE) writes it? quote such cells; its first column is not R's row names, which are "
        "distinct: it holds '0' on lines 2 and 7)\n"
    )
    path = tmp_path / "commasp.csv"
    path.write_text("a, b, c, y\n1, 2, 3, 0\n4, 5, 6, 1\n7, 8, 9, 0\n1, 2, 3, 1\n2, 3, 4, 0\n5, 6, 7, 1\n")
    _refused(
        capsys,
        f"{path}: line 2, column a,: not a number: '1,'; the file seems to be separated by commas, not "
        "blanks: leave out --delimiter, the default",
        "train", "--dataset", str(path), *TRAIN, "--delimiter", "whitespace",
    )
