"""examples/trainer_shapes.py: mypy (strict, with the torchlean plugin) accepts the shape-typed
``Trainer[Shape[4], Shape[1]]`` program, rejects the same program with a mismatched shape, and the
program runs (issue 4: "mypy (strict) accepts a correct Trainer[Shape[4], Shape[1]] program").

mypy runs through ``mypy.api.run`` with a fresh cache; numpy and torch are skipped (their stubs
take most of a cold run and the shape check does not need them), as in tests/typing/.
"""

from __future__ import annotations

import contextlib
import io
import runpy
from pathlib import Path

import pytest
from mypy import api

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "examples" / "trainer_shapes.py"

CONFIG = """\
[mypy]
strict = True
plugins = {plugin}
mypy_path = {stubs}:{repo}
follow_imports = silent
warn_unused_configs = False

[mypy-numpy.*,torch.*,sklearn.*,mpmath.*,tqdm.*,torchlean_native_ext.*]
follow_imports = skip
ignore_missing_imports = True
"""


@pytest.fixture(scope="module")
def mypy_run(tmp_path_factory: pytest.TempPathFactory):
    workdir = tmp_path_factory.mktemp("mypy-trainer")
    config = workdir / "mypy.ini"
    config.write_text(
        CONFIG.format(plugin=REPO / "torchlean" / "mypy_plugin.py", stubs=REPO / "stubs", repo=REPO)
    )

    def run(*files: Path) -> tuple[str, int]:
        stdout, stderr, status = api.run(
            [
                "--config-file",
                str(config),
                "--cache-dir",
                str(workdir / "cache"),
                "--no-pretty",
                "--no-error-summary",
                "--hide-error-context",
                *map(str, files),
            ]
        )
        assert stderr == ""
        return stdout, status

    return run, workdir


def test_mypy_accepts_the_example_and_rejects_a_mismatched_shape(mypy_run):
    run, workdir = mypy_run
    wrong = workdir / "trainer_shapes_wrong.py"
    source = EXAMPLE.read_text()
    mismatched = source.replace(
        "def four_to_one(execution: ExecutionMode) -> Trainer[Shape[4], Shape[1]]:",
        "def four_to_one(execution: ExecutionMode) -> Trainer[Shape[3], Shape[1]]:",
    )
    assert mismatched != source
    wrong.write_text(mismatched)
    stdout, status = run(EXAMPLE, wrong)
    expected = (
        'has incompatible type "Trainer[Shape[Literal[3]], Shape[Literal[1]]]"; '
        'expected "Trainer[Shape[Literal[4]], Shape[Literal[1]]]"  [arg-type]'
    )
    lines = stdout.splitlines()
    assert status == 1
    # only the altered copy is reported: both fit(...) calls receive the wrong trainer type
    assert [line.split(":")[0] for line in lines] == [str(wrong)] * 2
    assert all(expected in line for line in lines)


def test_the_example_runs():
    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        runpy.run_path(str(EXAMPLE), run_name="__main__")
    lines = out.getvalue().splitlines()
    assert lines[0].startswith("epoch losses: ")
    losses = [float(v) for v in lines[0].split(": ")[1].split()]
    assert len(losses) == 5 and losses[-1] < losses[0]
    assert lines[1] == "typed graph identical: True"
    assert lines[2].startswith("test_mse=")
