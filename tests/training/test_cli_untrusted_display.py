"""review67 F2, F7, F11, F14 and review68 F2, F3, F6: what the CLI prints of strings that come
from an untrusted checkpoint, how long its report lines get, and its predictions CSV on a pipe.

Oracles: Python literals written out by hand (``'iris\\x1b[31m'``), ``str.isprintable`` (no
control character reaches the terminal), ``shlex.split``/``shlex.join`` (the header's pairs and
the argv line as before), the JSON record read back with ``json`` (it keeps every value whole),
the per-cell formatting the CSV used before it was vectorised, and ``numpy.float32`` round trips."""

from __future__ import annotations

import json
import math
import os
import shlex
import subprocess
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from cli_runs import cli, metadata, rewrite_metadata

from torchlean.backend.display import LINE_LIMIT
from torchlean.cli import inspect_command, predict


@pytest.fixture(scope="module")
def base(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """An iris checkpoint from ``torchlean train --save`` (1 epoch, hidden 4)."""
    from torchlean.cli import main

    path = tmp_path_factory.mktemp("ckpt") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


FORGED = "iris\ncapsule_table: same as this torchlean's for profile checked_cpu\ndata_matches: yes"


def setter(*keys: str, value: Any) -> Any:
    def edit(meta: dict[str, Any]) -> None:
        target = meta
        for key in keys[:-1]:
            target = target[key]
        target[keys[-1]] = value
    return edit


def inspect_lines(capsys: pytest.CaptureFixture[str], path: Path) -> list[str]:
    code, out, err = cli(capsys, "inspect", str(path))
    assert (code, err) == (0, ""), err
    return out.splitlines()


# ------------------------------------------------------------------------ inspect: hostile strings


@pytest.mark.parametrize(("keys", "value", "line"), [
    (("dataset",), FORGED,
     'dataset: "iris\\ncapsule_table: same as this torchlean\'s for profile checked_cpu\\n'
     'data_matches: yes"'),
    (("dataset",), "iris\x1b[31mRED\x1b[0m\x07", "dataset: 'iris\\x1b[31mRED\\x1b[0m\\x07'"),
    (("dataset",), "\ud800", "dataset: '\\ud800'"),
    (("dataset",), " iris", "dataset: ' iris'"),
    (("dataset",), "", "dataset: ''"),
    (("label_column",), "t\x1b[0m", "label_column: 't\\x1b[0m'"),
    # (class names holding an escape character or NUL are refused at load since review158 F4)
    (("classes",), ["=cmd|' /C calc'!A0", "\tclear", 'a\nb"c\u202e\rz'],
     "classes: =cmd|' /C calc'!A0 | '\\tclear' | 'a\\nb\"c\\u202e\\rz'"),
    (("feature_names",), ["a\x1b", "b\n", " c", ""], "feature_names: 'a\\x1b' | 'b\\n' | ' c' | ''"),
    (("training", "settings", "freeze"), "x\ny", "  setting freeze: 'x\\ny'"),
    (("training", "settings", "delimiter"), "\t", "  setting delimiter: '\\t'"),
    (("environment", "argv"), ["torchlean", "\x1b]0;pwned\x07\x1b[31m", "a b"],
     "environment.argv: torchlean '\\x1b]0;pwned\\x07\\x1b[31m' 'a b'"),
    (("environment", "cwd"), "/tmp/x\r\nenvironment.utc: forged",
     "environment.cwd: '/tmp/x\\r\\nenvironment.utc: forged'"),
    (("environment", "platform"), "Linux\u202e", "environment.platform: 'Linux\\u202e'"),
])
def test_inspect_shows_checkpoint_strings_as_messages_show_names(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path, keys: tuple[str, ...], value: Any,
    line: str,
) -> None:
    """review67 F2/F14: each value from the checkpoint on one line, as its Python literal when it
    holds a control or unprintable character, blanks at its ends, or nothing; the line count is
    the unedited checkpoint's; no line is forged; the JSON record holds the value exactly."""
    edited = rewrite_metadata(base, tmp_path / "edited.npz", setter(*keys, value=value))
    plain = inspect_lines(capsys, base)
    lines = inspect_lines(capsys, edited)
    assert line in lines
    assert len(lines) == len(plain)
    assert all(text.isprintable() for text in lines), [text for text in lines if not text.isprintable()]
    assert "data_matches: yes" not in lines
    assert [text.split(":")[0] for text in lines] == [text.split(":")[0] for text in plain]
    record = tmp_path / "r.json"
    assert cli(capsys, "inspect", str(edited), "--report-json", str(record))[0] == 0
    found: Any = json.loads(record.read_text())
    for key in keys:
        found = found[key]
    assert found == value


def test_inspect_keeps_plain_values_as_they_were(capsys: pytest.CaptureFixture[str], base: Path) -> None:
    """Ordinary names, paths and numbers print as before: names joined by `` | ``, argv by
    ``shlex.join``, each value as ``str``."""
    saved = metadata(base)
    lines = inspect_lines(capsys, base)
    environment = saved["environment"]
    for expected in (
        f"checkpoint: {base}",
        f"classes: {' | '.join(saved['classes'])}",
        f"feature_names: {' | '.join(saved['feature_names'])}",
        "dataset: iris",
        "label_column: target",
        "dropout: 0.0",
        "test_fraction: 0.2",
        "  setting lr: 0.005",
        "  setting momentum: not given",
        "  setting nesterov: no",
        f"environment.argv: {shlex.join(environment['argv'])}",
        f"environment.cwd: {environment['cwd']}",
        f"environment.platform: {environment['platform']}",
        "capsule_table: same as this torchlean's for profile checked_cpu",
    ):
        assert expected in lines, expected


def test_inspect_a_lone_surrogate_on_a_strict_utf8_stdout(base: Path, tmp_path: Path) -> None:
    """review67 F14: ``"\\ud800"`` as the dataset failed half-way (``error: cannot write the
    output: 'utf-8' codec can't encode ...``, exit 2, no JSON written); now the whole report
    prints, the value escaped, and ``--report-json`` is written with the value as JSON escapes it."""
    edited = rewrite_metadata(base, tmp_path / "s.npz", setter("dataset", value="\ud800"))
    record = tmp_path / "s.json"
    done = subprocess.run(
        [sys.executable, "-m", "torchlean", "inspect", str(edited), "--report-json", str(record)],
        capture_output=True, text=True, env={**os.environ, "PYTHONIOENCODING": "utf-8:strict"},
    )
    assert (done.returncode, done.stderr) == (0, ""), done.stderr
    assert "dataset: '\\ud800'" in done.stdout.splitlines()
    assert done.stdout.splitlines()[-1] == f"wrote {record}"
    assert '"dataset": "\\ud800"' in record.read_text()
    ascii_run = subprocess.run(  # an ASCII stdout: a printable non-ASCII name as Python escapes it
        [sys.executable, "-m", "torchlean", "inspect",
         str(rewrite_metadata(base, tmp_path / "e.npz", setter("dataset", value="caf\u00e9")))],
        capture_output=True, text=True, env={**os.environ, "PYTHONIOENCODING": "ascii"},
    )
    assert ascii_run.returncode == 0, ascii_run.stderr
    assert "dataset: caf\\xe9" in ascii_run.stdout.splitlines()


# ------------------------------------------------------------------------------ inspect: long values


def test_inspect_elides_long_values_and_the_json_keeps_them(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path
) -> None:
    """review67 F7 / review68 F6: a 1 M-character argv word and a 1000-character dataset are cut
    after LINE_LIMIT characters, naming their length; the record keeps them whole."""
    word = "x" * 1_000_000

    def edit(meta: dict[str, Any]) -> None:
        meta["environment"]["argv"] = ["torchlean", word, "--epochs", "2"]
        meta["dataset"] = "d" * 1000

    edited = rewrite_metadata(base, tmp_path / "long.npz", edit)
    lines = inspect_lines(capsys, edited)
    room = LINE_LIMIT - len("torchlean ")
    assert (f"environment.argv: torchlean {'x' * room}... (4 words, {1_000_000 + 9 + 8 + 1 + 3} characters; "
            "--report-json has them all)") in lines
    assert f"dataset: {'d' * LINE_LIMIT}... (1000 characters; --report-json has them all)" in lines
    assert max(map(len, lines)) < LINE_LIMIT + 100
    record = tmp_path / "long.json"
    assert cli(capsys, "inspect", str(edited), "--report-json", str(record))[0] == 0
    kept = json.loads(record.read_text())
    assert kept["environment"]["argv"][1] == word and kept["dataset"] == "d" * 1000


def test_inspect_elides_hundreds_of_names(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A checkpoint of 150 features and 30 classes: both lists as the first three, ``...`` and
    the last, with the count; the record lists them all."""
    rng = np.random.default_rng(0)
    features = [f"feature_number_{i:03d}" for i in range(150)]
    classes = [f"class_with_a_long_name_{i:02d}" for i in range(30)]
    rows = [",".join([*(f"{v:.4f}" for v in rng.standard_normal(150)), classes[i % 30]]) for i in range(90)]
    source = tmp_path / "wide.csv"
    source.write_text(",".join([*features, "label"]) + "\n" + "\n".join(rows) + "\n")
    saved = tmp_path / "wide.npz"
    code, _, err = cli(capsys, "train", "--dataset", str(source), "--epochs", "1", "--hidden", "2",
                       "--test-fraction", "0.34", "--save", str(saved))
    assert code == 0, err
    lines = inspect_lines(capsys, saved)
    assert ("classes: class_with_a_long_name_00 | class_with_a_long_name_01 | class_with_a_long_name_02 | "
            "... | class_with_a_long_name_29 (30 classes; --report-json has them all)") in lines
    assert ("feature_names: feature_number_000 | feature_number_001 | feature_number_002 | ... | "
            "feature_number_149 (150 feature names; --report-json has them all)") in lines
    record = tmp_path / "wide.json"
    assert cli(capsys, "inspect", str(saved), "--report-json", str(record))[0] == 0
    kept = json.loads(record.read_text())
    assert (kept["classes"], kept["feature_names"]) == (classes, features)


def test_names_within_the_limit_are_shown_whole() -> None:
    """The elision starts past LINE_LIMIT characters of the joined names, not before."""
    names = ["n" * 97, "m" * 97, "o" * 97, "p" * 100]  # 391 + 3 separators = LINE_LIMIT when 400
    joined = " | ".join(names)
    assert len(joined) == 400 == LINE_LIMIT
    assert inspect_command._names(names, "classes") == joined
    longer = [*names[:3], "p" * 101, "q"]
    assert inspect_command._names(longer, "classes") == (
        f"{'n' * 97} | {'m' * 97} | {'o' * 97} | ... | q (5 classes; --report-json has them all)"
    )
    assert inspect_command._names([], "classes") == "none"


# ------------------------------------------------------------------------------- predict's header


@pytest.mark.parametrize(("value", "word", "shown"), [
    (FORGED, FORGED.replace("\n", "\\n"), None),
    ("iris\x1b[31mRED\x1b[0m\x07", "iris\\x1b[31mRED\\x1b[0m\\x07", "'iris\\x1b[31mRED\\x1b[0m\\x07'"),
    ("\ud800", "\\ud800", "'\\ud800'"),
    ("my data.csv", "my data.csv", "'my data.csv'"),
    ("iris", "iris", "iris"),
])
def test_predict_header_escapes_the_checkpoints_dataset(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path, value: str, word: str, shown: str | None
) -> None:
    """review67 F2: ``trained_on=`` on one line, control characters as backslash escapes, still
    one shell word (the header splits into its pairs with ``shlex.split``)."""
    edited = rewrite_metadata(base, tmp_path / "p.npz", setter("dataset", value=value))
    code, out, err = cli(capsys, "predict", str(edited), "--dataset", "iris", "--output",
                         str(tmp_path / "p.csv"))
    assert code == 0, err
    header = out.splitlines()[0]
    assert header.isprintable()
    assert header == (f"checkpoint={edited} model=mlp task=classification features=4 dtype=float32 "
                      f"trained_on={shown or shlex.quote(word)} trained_under=checked_cpu")
    assert dict(pair.split("=", 1) for pair in shlex.split(header))["trained_on"] == word


def test_predict_header_cuts_a_long_dataset(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path
) -> None:
    """stop34's display gap: a crafted checkpoint's long dataset string is cut after LINE_LIMIT
    characters in ``trained_on=``, with its length; the header still splits into its pairs."""
    for value, shown in (
        ("d" * 100_000, "d" * (LINE_LIMIT - 23) + "... (100000 characters)"),
        ("\x00" * 5000, "\\x00" * 94 + "\\x... (20000 characters)"),  # review75 F5: cut once escaped
        ("d" * (LINE_LIMIT + 1), "d" * (LINE_LIMIT - 20) + "... (401 characters)"),  # no longer when cut
    ):
        edited = rewrite_metadata(base, tmp_path / "p.npz", setter("dataset", value=value))
        code, out, err = cli(capsys, "predict", str(edited), "--dataset", "iris", "--output",
                             str(tmp_path / "p.csv"))
        assert code == 0, err
        header = out.splitlines()[0]
        assert len(header) < LINE_LIMIT + len(str(edited)) + 150 and header.isprintable()
        pairs = dict(pair.split("=", 1) for pair in shlex.split(header))
        assert pairs["trained_on"] == shown and len(shown) == LINE_LIMIT
        assert pairs["trained_under"] == "checked_cpu"


# --------------------------------------------------------------------------------- resume settings


@pytest.mark.parametrize(("setting", "value", "optimizer", "message"), [
    ("lr", "nan", "adam",
     "its setting --lr 'nan' is refused: learning rate must be finite and nonnegative, got 'nan'"),
    ("weight_decay", "-1", "adam",
     "its setting --weight-decay '-1' is refused: weight decay must be finite and nonnegative, got '-1'"),
    ("momentum", "1.5", "sgd",
     "its setting --momentum '1.5' is refused: momentum must be finite and satisfy 0 <= momentum < 1, "
     "got '1.5'"),
])
def test_a_refused_optimizer_setting_of_a_checkpoint_names_the_checkpoint(
    capsys: pytest.CaptureFixture[str], base: Path, tmp_path: Path, setting: str, value: str, optimizer: str,
    message: str,
) -> None:
    """review67 F11: the user typed no ``--lr``: the refusal names the checkpoint's setting, as
    ``--batch-size '0'`` already was; typed on the command line, it is still the argument's."""
    def edit(meta: dict[str, Any]) -> None:
        meta["training"]["settings"][setting] = value
        meta["training"]["settings"]["optimizer"] = optimizer

    edited = rewrite_metadata(base, tmp_path / "bad.npz", edit)
    assert cli(capsys, "train", "--resume", str(edited), "--epochs", "3") == (
        2, "", f"error: checkpoint {edited}: {message}\n")
    flag = "--" + setting.replace("_", "-")
    code, out, err = cli(capsys, "train", "--resume", str(edited), "--epochs", "3", flag, value)
    assert (code, out) == (2, "") and err.startswith(f"error: argument {flag}: "), err


# ----------------------------------------------------------------------------- predict's CSV output


def _old_probability_text(value: np.floating[Any]) -> str:
    """The per-cell formatting the CSV used before review68 F2 (the oracle of the bytes)."""
    if not np.isfinite(value):
        return ""
    if value.dtype == np.float32:
        return f"{float(value):.9g}"
    return repr(float(value))


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_probability_cells_are_the_per_cell_formatting(dtype: type[np.floating[Any]]) -> None:
    """The vectorised cells equal the old per-cell ones on random values, extremes and
    non-finite cells, and float32 cells read back to the value."""
    rng = np.random.default_rng(7)
    values = rng.random((300, 7)).astype(dtype)
    values[:20] = rng.standard_normal((20, 7)).astype(dtype) * 10.0 ** rng.integers(-30, 30, (20, 7))
    info = np.finfo(dtype)
    values[20] = [0.0, -0.0, 1.0, info.tiny, info.smallest_subnormal, info.max, info.eps]
    values[21, 2], values[22, 0], values[22, 6], values[23] = np.nan, np.inf, -np.inf, np.nan
    finite = rng.random(300) > 0.1
    finite[21:24] = True
    cells = list(predict._probability_cells(values, finite))
    expected = [[_old_probability_text(v) for v in row] if ok else [""] * 7
                for row, ok in zip(values, finite, strict=True)]
    assert cells == expected
    assert cells[21][2] == cells[22][0] == cells[22][6] == "" and cells[23] == [""] * 7
    assert all(cells[i] == [""] * 7 for i in np.flatnonzero(~finite))
    for row, ok, text in zip(values, finite, cells, strict=True):
        for v, cell in zip(row, text, strict=True):
            if ok and math.isfinite(float(v)):
                assert dtype(float(cell)) == v


@pytest.fixture(scope="module")
def big_csv(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """30 000 rows of iris's four feature columns (by name), no label: a CSV of predictions
    with probabilities far larger than a pipe's buffer."""
    from sklearn.datasets import load_iris

    names = load_iris().feature_names
    rng = np.random.default_rng(3)
    path = tmp_path_factory.mktemp("big") / "big.csv"
    x = rng.uniform(0.5, 7.5, (30_000, 4))
    path.write_text(",".join(names) + "\n" + "\n".join(",".join(f"{v:.2f}" for v in row) for row in x) + "\n")
    return path


def _reader_leaves_after(argv: list[str], size: int) -> tuple[int, str, bytes]:
    """Run ``torchlean ARGV`` with stdout a pipe whose reader reads ``size`` bytes and then
    closes it (the command blocked on a write at that moment); the exit status, stderr and the
    bytes read."""
    child = subprocess.Popen([sys.executable, "-m", "torchlean", *argv], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE)
    assert child.stdout is not None and child.stderr is not None
    got = child.stdout.read(size)
    child.stdout.close()
    err = child.stderr.read().decode()
    return child.wait(timeout=300), err, got


def test_predict_csv_on_a_pipe_whose_reader_leaves_exits_141(base: Path, big_csv: Path,
                                                             tmp_path: Path) -> None:
    """review68 F3: the CSV cut off by a reader that goes away (``| head -c 100``) is exit status
    141 and no message, as the README's "Standard streams" says, not 0; so is the run that would
    also write ``--report-json`` (the CSV on stdout is the output: the record is not written)."""
    argv = ["predict", str(base), "--dataset", str(big_csv), "--probabilities"]
    whole = subprocess.run([sys.executable, "-m", "torchlean", *argv], capture_output=True)
    assert whole.returncode == 0 and len(whole.stdout) > 1_000_000
    status, err, got = _reader_leaves_after(argv, 100)
    assert status == 141, err
    assert got == whole.stdout[:100]
    assert "error" not in err and "Traceback" not in err and "accuracy" not in err
    record = tmp_path / "r.json"
    status, err, _ = _reader_leaves_after([*argv, "--report-json", str(record)], 100)
    assert status == 141 and "Traceback" not in err and "note:" not in err, err
    assert not record.exists()


def test_a_byte_that_is_not_utf8_is_shown_as_the_byte(capsys: pytest.CaptureFixture[str]) -> None:
    """review197 F5: a command-line word holding the byte 0xff (Python's surrogateescape gives
    ``'\\udcff'``) was shown as ``\\udcff``, a code point the user never typed; it is ``\\xff``. A
    lone surrogate that stands for no byte, and a typed backslash, keep Python's escapes."""
    from torchlean.backend.display import escaped, name_shown

    word = b"\xff\xfe".decode("utf-8", "surrogateescape")
    assert (name_shown(word), escaped(f"a{word}")) == ("'\\xff\\xfe'", "a\\xff\\xfe")
    assert (name_shown("\ud800"), escaped("\udc7f"), escaped("x\\udcff\n")) == (
        "'\\ud800'", "\\udc7f", "x\\udcff\\n")
    assert name_shown("\\" + word[0]) == "'\\\\\\xff'"
    code, _, err = cli(capsys, "plan", "--profile", word, "relu")
    assert code == 2 and err.startswith("error: argument --profile: unknown profile '\\xff\\xfe' (known: ")
