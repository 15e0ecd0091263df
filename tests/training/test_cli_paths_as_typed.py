"""Every path the command line names is printed as typed (review63 F2): ``CHECKPOINT``,
``--resume``, ``--save``, ``--output`` and ``--report-json`` as ``--dataset`` already was, in
messages, header lines, ``wrote``/``saved:`` lines and the JSON records; above all ``./-`` (a file
named ``-``) is never ``-`` (standard input or output).

Oracles: the text given on the command line, and the files found on disk afterwards.
"""

from __future__ import annotations

import json
import os
from pathlib import Path

import numpy as np
import pytest
from cli_runs import cli

from torchlean.cli._output import GivenPath, file_path, given_path, output_path

RUN = ("--epochs", "1", "--hidden", "4")


@pytest.fixture
def here(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """``tmp_path`` as the working folder, holding ``reg.csv`` (header ``a,b,c,y``, a float target)."""
    monkeypatch.chdir(tmp_path)
    x = np.random.default_rng(0).standard_normal((40, 3))
    y = x @ [1.0, 2.0, 3.0] + 0.5
    rows = zip(x, y, strict=True)
    (tmp_path / "reg.csv").write_text("a,b,c,y\n" + "".join(f"{a:.6f},{b:.6f},{c:.6f},{t:.6f}\n"
                                                            for (a, b, c), t in rows))
    return tmp_path


def _ok(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[str, str]:
    code, out, err = cli(capsys, *argv)
    assert code == 0, err
    return out, err


def _refused(capsys: pytest.CaptureFixture[str], *argv: str) -> str:
    code, out, err = cli(capsys, *argv)
    assert (code, out) == (2, "") and err.startswith("error: ") and err.count("\n") == 1, err
    return err.removeprefix("error: ").rstrip("\n")


def test_predict_names_each_path_as_typed(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    _ok(capsys, "train", "--dataset", "reg.csv", *RUN, "--save", "m.npz")
    (here / "sub").mkdir()  # sub/.. is resolved by the operating system
    out, _ = _ok(capsys, "predict", "./m.npz", "--dataset", "./reg.csv", "--output", "./sub/../p.csv",
                 "--report-json", "./sub/../r.json")
    lines = out.splitlines()
    assert lines[0].startswith("checkpoint=./m.npz model=mlp ")
    assert lines[1].startswith("dataset=./reg.csv rows=40 ")
    assert lines[-2:] == ["wrote ./sub/../p.csv", "wrote ./sub/../r.json"]
    record = json.loads((here / "r.json").read_text())
    assert (record["checkpoint"], record["dataset"], record["output"]) == (
        "./m.npz", "./reg.csv", "./sub/../p.csv"
    )
    assert _refused(capsys, "predict", "./nope.npz", "--dataset", "reg.csv") == (
        "checkpoint file not found: ./nope.npz"
    )


def test_a_file_named_dash_is_dot_slash_dash_everywhere(
    capsys: pytest.CaptureFixture[str], here: Path
) -> None:
    _ok(capsys, "train", "--dataset", "reg.csv", *RUN, "--save", "m.npz")
    out, _ = _ok(capsys, "predict", "m.npz", "--dataset", "reg.csv", "--output", "./-")
    assert out.splitlines()[-1] == "wrote ./-" and (here / "-").read_text().startswith("prediction\n")
    (here / "-").unlink()
    out, _ = _ok(capsys, "train", "--dataset", "reg.csv", *RUN, "--report-json", "./-")
    assert out.splitlines()[-1] == "wrote ./-"
    assert json.loads((here / "-").read_text())["dataset"] == "reg.csv"
    (here / "-").unlink()
    (here / "-").write_bytes((here / "m.npz").read_bytes())  # a checkpoint in a file named -
    out, _ = _ok(capsys, "predict", "./-", "--dataset", "reg.csv", "--output", "p.csv")
    assert out.splitlines()[0].startswith("checkpoint=./- model=mlp ")
    (here / "-").write_text((here / "reg.csv").read_text())  # the data in a file named -
    assert _refused(capsys, "predict", "m.npz", "--dataset", "./-", "--output", "./-") == (
        "--output ./- is the input --dataset ./-: writing it would destroy that input; give another path"
    )


def test_resume_and_save_are_named_as_typed(capsys: pytest.CaptureFixture[str], here: Path) -> None:
    _ok(capsys, "train", "--dataset", "reg.csv", *RUN, "--save", "m.npz")
    (here / "dir with space").mkdir()
    out, _ = _ok(capsys, "train", "--resume", "./m.npz", "--epochs", "2", "--save",
                 "./dir with space/../m s.npz", "--report-json", "./r.json")
    lines = out.splitlines()
    assert any(line.startswith("resumed_from=./m.npz epochs_before=1 ") for line in lines)
    assert lines[-2:] == ["wrote ./r.json", "saved: ./dir with space/../m s.npz"]
    assert json.loads((here / "r.json").read_text())["checkpoint"] == "./dir with space/../m s.npz"
    assert (here / "m s.npz").is_file()


def test_the_swapped_arguments_hint_keeps_both_spellings(
    capsys: pytest.CaptureFixture[str], here: Path
) -> None:
    _ok(capsys, "train", "--dataset", "reg.csv", *RUN, "--save", "m.npz")
    (here / "dir with space").mkdir()
    (here / "dir with space" / "my data.csv").write_text((here / "reg.csv").read_text())
    message = _refused(capsys, "predict", "./dir with space/my data.csv", "--dataset", "./m.npz")
    assert message.startswith("./dir with space/my data.csv: ")
    assert "--dataset ./m.npz is a checkpoint" in message
    assert message.endswith("(torchlean predict ./m.npz --dataset './dir with space/my data.csv')")


def test_given_path_prints_as_typed_and_compares_as_a_path(here: Path) -> None:
    for text in ("./-", "./m.npz", "a//b.csv", "./sub/../x"):
        for path in (given_path(text), file_path(text), output_path(text)):
            assert isinstance(path, GivenPath)
            assert (str(path), os.fspath(path), f"{path}") == (text, text, text)
            assert path == Path(text) and Path(text) == path and hash(path) == hash(Path(text))
            assert path.name == Path(text).name and str(path.parent) == str(Path(text).parent)
    assert str(Path("./-")) == "-"  # the premise: a plain Path drops the ./
    (here / "-").write_text("x")
    assert given_path("./-").read_text() == "x" and given_path("./-").exists()
    assert output_path("-") == Path("/dev/stdout") and not isinstance(output_path("-"), GivenPath)


def test_a_path_with_blanks_is_quoted_in_the_key_value_header_lines(
    capsys: pytest.CaptureFixture[str], here: Path
) -> None:
    """review63 F7: ``dataset=dir with space/my data.csv`` could not be split into its pairs."""
    import shlex

    (here / "dir with space").mkdir()
    (here / "dir with space" / "my data.csv").write_text((here / "reg.csv").read_text())
    data_csv = "./dir with space/my data.csv"
    out, _ = _ok(capsys, "train", "--dataset", data_csv, *RUN, "--save", "m s.npz")
    pairs = dict(word.split("=", 1) for word in shlex.split(out.splitlines()[0]))
    assert pairs["dataset"] == data_csv and pairs["train"] == "32"
    out, _ = _ok(capsys, "predict", "m s.npz", "--dataset", data_csv, "--output", "p.csv")
    first, second = (dict(word.split("=", 1) for word in shlex.split(line)) for line in out.splitlines()[:2])
    assert (first["checkpoint"], first["trained_on"], second["dataset"]) == ("m s.npz", data_csv, data_csv)
    assert out.splitlines()[0].startswith("checkpoint='m s.npz' model=mlp ")
    out, _ = _ok(capsys, "train", "--resume", "m s.npz", "--epochs", "2", "--save", "m s.npz")
    resumed = next(line for line in out.splitlines() if line.startswith("resumed_from="))
    assert dict(word.split("=", 1) for word in shlex.split(resumed))["resumed_from"] == "m s.npz"
    # a path without blanks or quotes stays as typed, unquoted
    out, _ = _ok(capsys, "predict", "./m s.npz", "--dataset", "reg.csv", "--output", "p.csv")
    assert out.splitlines()[1].startswith("dataset=reg.csv rows=40 ")


def test_a_recorded_path_an_ascii_locale_cannot_encode(tmp_path: Path) -> None:
    """review163 F1: under an ASCII file-system encoding, predict of a checkpoint whose data path
    was non-ASCII failed as "cannot write the output" (os.path.samefile's UnicodeEncodeError), and
    --resume said the data file was not found."""
    import subprocess
    import sys

    rows = "".join(f"{i % 5},{(i * 3) % 7},{'xy'[i % 2]}\n" for i in range(40))
    (tmp_path / "d_\u00e9.csv").write_text("a,b,y\n" + rows, encoding="utf-8")
    (tmp_path / "plain.csv").write_text("a,b,y\n" + rows, encoding="utf-8")
    run = lambda *argv, **env: subprocess.run(  # noqa: E731
        [sys.executable, "-m", "torchlean", *argv], cwd=tmp_path, capture_output=True, text=True,
        env={**os.environ, **env}, check=False,
    )
    trained = run("train", "--dataset", "d_\u00e9.csv", "--epochs", "1", "--save", "u.npz")
    assert trained.returncode == 0, trained.stderr
    ascii_locale = {"LC_ALL": "POSIX", "PYTHONUTF8": "0", "PYTHONIOENCODING": "utf-8"}
    predicted = run("predict", "u.npz", "--dataset", "plain.csv", "--output", "p.csv", **ascii_locale)
    assert predicted.returncode == 0, predicted.stderr
    assert (tmp_path / "p.csv").read_text().count("\n") == 41
    resumed = run("train", "--resume", "u.npz", "--epochs", "2", **ascii_locale)
    assert resumed.returncode == 2
    assert resumed.stderr.splitlines()[-1] == (
        "error: d_\u00e9.csv: its name cannot be written in this locale's file-system encoding (ascii), so "
        "no such file can be opened here; run in a UTF-8 locale (PYTHONUTF8=1)"
    )


def test_predictions_a_strict_stdout_encoding_cannot_write_name_the_way_out(tmp_path: Path) -> None:
    """review163 F8: the codec's message alone, without saying how to get the predictions."""
    import subprocess
    import sys

    labels = ("s\u00e9", "x")
    rows = "".join(f"{i % 5},{(i * 3) % 7},{labels[i % 2]}\n" for i in range(40))
    (tmp_path / "d.csv").write_text("a,b,y\n" + rows, encoding="utf-8")
    argv = [sys.executable, "-m", "torchlean", "train", "--dataset", "d.csv", "--epochs", "1", "--save",
            "m.npz"]
    trained = subprocess.run(argv, cwd=tmp_path, capture_output=True, text=True, check=False)
    assert trained.returncode == 0, trained.stderr
    done = subprocess.run([sys.executable, "-m", "torchlean", "predict", "m.npz", "--dataset", "d.csv"],
                          cwd=tmp_path, capture_output=True, text=True, check=False,
                          env={**os.environ, "PYTHONIOENCODING": "ascii"})
    assert done.returncode == 2
    last = done.stderr.splitlines()[-1]
    assert last.startswith("error: cannot write the output: 'ascii' codec can't encode character '\\xe9'")
    assert last.endswith("(standard output's encoding is ascii; a file is written as UTF-8: predict --output "
                         "FILE, or set PYTHONIOENCODING=utf-8)")


def test_a_tilde_the_shell_left_unexpanded_is_refused_unless_such_a_folder_is_here(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """review163 F5: --save=~/m.npz (no expansion after =) made a folder named ~ in the cwd."""
    from torchlean.cli import main

    monkeypatch.chdir(tmp_path)
    for argv, option, path in (
        (["train", "--dataset", "iris", "--epochs", "1", "--save=~/m.npz"], "--save", "~/m.npz"),
        (["train", "--dataset=~/iris.csv"], "--dataset", "~/iris.csv"),
        (["predict", "m.npz", "--dataset", "iris", "--output=~/p.csv"], "--output", "~/p.csv"),
    ):
        with pytest.raises(SystemExit) as done:
            main(argv)
        assert done.value.code == 2
        assert capsys.readouterr().err.splitlines()[-1] == (
            f"error: argument {option}: expected a file path, got {path!r}: the shell did not expand ~ (it "
            "expands it only at the start of a word: not after = or in quotes), and nothing named ~ is here; "
            f"write $HOME{path[1:]}, or ./{path} for a name ~ here"
        )
    with pytest.raises(SystemExit):  # another user's home (review164 F3)
        main(["train", "--dataset", "iris", "--save=~root/m.npz"])
    assert capsys.readouterr().err.splitlines()[-1] == (
        "error: argument --save: expected a file path, got '~root/m.npz': the shell did not expand ~root (it "
        "expands it only at the start of a word: not after = or in quotes), and nothing named ~root is here; "
        "write ~root unquoted at the start of a word (where user root exists), or ./~root/m.npz for a name "
        "~root here"
    )
    assert list(tmp_path.iterdir()) == []
    (tmp_path / "~").mkdir()  # a folder of that name, given on purpose: used
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save=~/m.npz"]) == 0
    assert (tmp_path / "~" / "m.npz").is_file()
