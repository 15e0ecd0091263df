"""Hostile checkpoint archives (review67 F1, F6, F7, F12, F13): ``checkpoint.load`` checks the
archive's entry names and each entry's ``.npy`` header against what the metadata describes before
it reads any entry's data, so a small file declaring huge arrays (a zip bomb) or carrying huge
extra entries is refused from the headers alone; the optimizer state is checked against the
model at load; duplicate entries and duplicate JSON keys are refused; names in messages are
literals and long lists are elided.

The files are crafted with ``zipfile`` and ``numpy.lib.format`` as the reviewer crafted them. No
test is timed: a spy on ``numpy.lib.format.read_array`` (what reads an entry's data) records the
entries whose data were read, and the refused ones must not be among them.
"""

from __future__ import annotations

import dataclasses
import io
import json
import math
import os
import re
import tracemalloc
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from torchlean import _labels, checkpoint
from torchlean.backend.errors import UnknownLabelError
from torchlean.checkpoint import Checkpoint, CheckpointError, TrainingState
from torchlean.cli import main

HUGE = 2**40  # a declared element count no test machine could hold (4 TiB of float32)


@pytest.fixture(scope="module")
def good(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("hostile") / "iris.npz"
    assert main(["train", "--dataset", "iris", "--epochs", "1", "--hidden", "4", "--save", str(path)]) == 0
    return path


@pytest.fixture
def reads(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """The archive members whose data ``numpy.lib.format.read_array`` reads, in order."""
    seen: list[str] = []
    original = np.lib.format.read_array

    def spy(stream: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(stream.name)
        return original(stream, *args, **kwargs)

    monkeypatch.setattr(np.lib.format, "read_array", spy)
    yield seen


def _header(shape: tuple[int, ...], descr: str = "<f4") -> bytes:
    """A ``.npy`` version 1.0 header declaring ``shape`` of ``descr``, as numpy writes it."""
    buffer = io.BytesIO()
    np.lib.format.write_array_header_1_0(buffer, {"descr": descr, "fortran_order": False, "shape": shape})
    return buffer.getvalue()


def _npy(value: np.ndarray[Any, Any]) -> bytes:
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, value, allow_pickle=False)
    return buffer.getvalue()


def _rewrite(
    good: Path,
    target: Path,
    replace: dict[str, bytes] | None = None,
    add: dict[str, bytes] | None = None,
    compression: int = zipfile.ZIP_STORED,
) -> Path:
    """A copy of ``good`` with members (full names, ``.npy`` included) replaced and added."""
    replace, add = replace or {}, add or {}
    with zipfile.ZipFile(good) as source, zipfile.ZipFile(target, "w", compression) as out:
        for info in source.infolist():
            out.writestr(info.filename, replace.get(info.filename, source.read(info)))
        for name, payload in add.items():
            out.writestr(name, payload)
    return target


def _arrays(good: Path) -> dict[str, np.ndarray[Any, Any]]:
    with np.load(good, allow_pickle=False) as archive:
        return {name: archive[name] for name in archive.files}


def _saved(target: Path, arrays: dict[str, np.ndarray[Any, Any]]) -> Path:
    with target.open("wb") as handle:
        np.savez(handle, **arrays)
    return target


def _meta(good: Path) -> dict[str, Any]:
    return json.loads(str(_arrays(good)["metadata"]))


# --------------------------------------------------------------- F1: headers before data


def test_a_huge_extra_entry_is_refused_by_its_name_reading_only_the_metadata(good, tmp_path, reads):
    # deflated: 64 MiB of zeros in about 64 KB, and an entry declaring 4 TiB with 16 bytes present
    inflating = _header((2**24,)) + bytes(4 * 2**24)
    path = _rewrite(
        good,
        tmp_path / "extra.npz",
        add={"junk.npy": inflating, "more.npy": _header((HUGE,)) + bytes(16)},
        compression=zipfile.ZIP_DEFLATED,
    )
    assert path.stat().st_size < 2**20
    with pytest.raises(CheckpointError, match=r"extra\.npz: unexpected archive entries: junk, more$"):
        checkpoint.load(path)
    assert reads == ["metadata.npy"]


@pytest.mark.parametrize(
    "entry",
    [
        "optimizer/second.5",
        "optimizer/first.0",
        "weights/0.weight",
        "last_weights/0.weight",
        "feature_mean",
        "validation/losses",
    ],
)
def test_an_entry_declaring_more_than_the_model_needs_is_refused_from_its_header(
    good, tmp_path, reads, entry
):
    meta = _meta(good)
    arrays = _arrays(good)
    if entry.startswith(("last_weights/", "validation/")):  # the flags announce these entries
        flag = "last_weights" if entry.startswith("last_weights/") else "validation"
        meta["training"][flag] = True
        done = meta["training"]["epochs_done"]
        arrays.update(
            {
                f"last_weights/{name[8:]}": value
                for name, value in arrays.items()
                if name.startswith("weights/")
            }
            if flag == "last_weights"
            else {"validation/losses": np.ones(done), "validation/metrics": np.ones(done)}
        )
        arrays["metadata"] = np.array(json.dumps(meta))
    base = _saved(tmp_path / "base.npz", arrays)
    descr = "<f8" if entry in ("feature_mean", "validation/losses") else "<f4"
    path = _rewrite(
        base, tmp_path / "bomb.npz", replace={f"{entry}.npy": _header((HUGE,), descr) + bytes(64)}
    )
    reads.clear()  # the reads of making the file
    with pytest.raises(CheckpointError, match=rf"bomb\.npz: .*\b{HUGE}\b"):
        checkpoint.load(path)
    assert reads == ["metadata.npy"]  # no entry's data: the header told


def test_the_messages_of_header_faults_name_the_entry_and_what_the_model_needs(good, tmp_path):
    weight = _arrays(good)["weights/0.weight"]  # the oracle: the parameter's shape as the file holds it
    huge = _header((HUGE,)) + bytes(64)
    cases = {
        "optimizer/second.0.npy": rf"training optimizer entry second\.0 has dtype float32, shape \[{HUGE}\], "
        rf"but parameter 0 \(0\.weight\) has dtype float32, shape \[{weight.shape[0]}, "
        rf"{weight.shape[1]}\]$",
        "weights/0.weight.npy": rf"weight 0\.weight has shape \[{HUGE}\], expected \[{weight.shape[0]}, "
        rf"{weight.shape[1]}\]$",
        "feature_scale.npy": rf"feature_scale must be a float64 array of shape \[4\], got dtype float32, "
        rf"shape \[{HUGE}\]$",
    }
    for member, message in cases.items():
        with pytest.raises(CheckpointError, match=message):
            checkpoint.load(_rewrite(good, tmp_path / "case.npz", replace={member: huge}))


def test_metadata_declaring_more_text_than_a_checkpoint_holds_is_refused_unread(good, tmp_path, reads):
    declared = 2**24 + 1  # characters: 4 bytes each in numpy's text dtype
    path = _rewrite(
        good, tmp_path / "meta.npz", replace={"metadata.npy": _header((), f"<U{declared}") + bytes(8)}
    )
    with pytest.raises(
        CheckpointError,
        match=rf"meta\.npz: the metadata entry declares {declared} characters, "
        rf"more than a checkpoint's metadata may hold \({2**24}\)$",
    ):
        checkpoint.load(path)
    assert reads == []


@pytest.mark.parametrize("version", [(1, 0), (2, 0)])
def test_a_header_declaring_a_huge_length_is_refused_before_it_is_read(good, tmp_path, version):
    # review158 F1: numpy reads and decodes a whole .npy header before applying its 10000-byte bound,
    # so a header of spaces deflated to a few KB made it allocate twice the declared length
    declared = 65_535 if version == (1, 0) else 8 * 2**20
    width = 2 if version == (1, 0) else 4
    bomb = b"\x93NUMPY" + bytes(version) + declared.to_bytes(width, "little") + b" " * declared
    path = _rewrite(good, tmp_path / "hdr.npz", replace={"metadata.npy": bomb},
                    compression=zipfile.ZIP_DEFLATED)
    assert path.stat().st_size < 64 * 2**10
    tracemalloc.start()
    try:
        with pytest.raises(CheckpointError) as caught:
            checkpoint.load(path)
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    assert str(caught.value) == (
        f"{path}: cannot read the .npz archive (entry 'metadata': its .npy declares a header of {declared} "
        "bytes (a plain array's takes under 200; accepted: at most 10000))"
    )
    if version == (2, 0):  # 8 MiB declared: the header was never read (the old code held it twice)
        assert peak < 2**20


def _with_unit(good: Path, target: Path, word: str, unit: int) -> Path:
    """``good`` with the first character of ``word`` in its metadata's UTF-32 text set to ``unit``
    (as review158 crafted it: numpy reads any 32-bit unit back into a str)."""
    arrays = _arrays(good)
    text = str(arrays["metadata"])
    units = np.frombuffer(np.array(text).tobytes(), np.uint32).copy()
    units[text.index(word)] = unit
    arrays["metadata"] = np.frombuffer(units.tobytes(), np.array(text).dtype).reshape(())
    return _saved(target, arrays)


@pytest.mark.parametrize("unit", [0x110000, 0xFFFFFFFF])
def test_metadata_code_units_beyond_unicode_are_refused(good, tmp_path, unit, capsys):
    # review158 F2: such a str made predict fail with a csv traceback, or write invalid UTF-8
    path = _with_unit(good, tmp_path / "cp.npz", "versicolor", unit)
    at = str(_arrays(good)["metadata"]).index("versicolor")
    message = (f"{path}: not a torchlean checkpoint: the metadata's character {at} is code unit {unit:#x}, "
               "beyond Unicode's last code point U+10FFFF")
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == message
    code = main(["predict", str(path), "--dataset", "iris", "--ignore-labels", "--output",
                 str(tmp_path / "p.csv")])
    assert (code, capsys.readouterr().err) == (2, f"error: {message}\n")


@pytest.mark.parametrize(
    ("name", "refused"),
    [
        ("\x1b]0;pwned\x07\x1b[2Jversicolor", "U+001B, a control character"),  # sets a title, clears
        ("vers\x9bicolor", "U+009B, a control character"),  # C1 CSI
        ("vers\u2028icolor", "U+2028, a line separator"),
        ("vers\ud800", "U+D800, a lone surrogate"),  # JSON's "\ud800": predict failed writing it
    ],
)
def test_class_names_predict_would_write_raw_are_refused(good, tmp_path, capsys, name, refused):
    # review158 F3/F4: such a class loaded, and predict wrote it raw to the terminal (escape sequences)
    # or failed as an output error ("cannot write the output") naming neither checkpoint nor class
    meta = _meta(good)
    meta["classes"][1] = name
    path = _saved(tmp_path / "c.npz", {**_arrays(good), "metadata": np.array(json.dumps(meta))})
    message = (f"{path}: class 1 {name!r} holds {refused}, which a class name read from CSV text cannot "
               "hold and predict would write raw (accepted: text whose only control characters are tab, "
               "line feed and carriage return)")
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == message
    code = main(["predict", str(path), "--dataset", "iris", "--ignore-labels"])
    out, err = capsys.readouterr()
    assert (code, err) == (2, f"error: {message}\n") and "\x1b" not in out
    saved = checkpoint.load(good)  # nor is such a checkpoint built or saved in Python
    with pytest.raises(CheckpointError, match=r"^class 1 .* holds " + re.escape(refused)):
        dataclasses.replace(saved, classes=("setosa", name, "virginica"))


def test_a_raw_surrogate_unit_in_a_class_name_is_refused(good, tmp_path):
    path = _with_unit(good, tmp_path / "s.npz", "versicolor", 0xD800)
    with pytest.raises(CheckpointError, match=r"class 1 '\\ud800ersicolor' holds U\+D800, a lone surrogate"):
        checkpoint.load(path)


def test_a_huge_class_name_is_cut_in_an_unknown_label_error(good, tmp_path, capsys):
    # review158 F5: a 5-million-character class made predict's error one line of 5 MB
    meta = _meta(good)
    meta["classes"][0] = "s" * 5_000_000
    path = _saved(tmp_path / "h.npz", {**_arrays(good), "metadata": np.array(json.dumps(meta))})
    assert main(["predict", str(path), "--dataset", "iris"]) == 2
    err = capsys.readouterr().err
    assert err.startswith("error: iris: row 1, column target: unknown class label 'setosa' (known: sss")
    assert err.endswith("s... (5000000 characters) | versicolor | virginica); --ignore-labels predicts "
                        "without reading the labels (no accuracy)\n") and len(err) < 1000


def test_a_long_list_of_class_names_is_cut_in_an_unknown_label_error():
    # review161 F2: 20000 names of 396 characters, each under the cut, made an 8 MB line
    classes = tuple(f"{i:06d}" + "c" * 390 for i in range(20_000))
    with pytest.raises(UnknownLabelError) as caught:
        _labels.class_ids("data.csv", "target", ["setosa"], classes, first_line=2)
    message = str(caught.value)
    start = "data.csv: line 2, column target: unknown class label 'setosa' (known: "
    assert message.startswith(f"{start}{classes[0]} | ")
    assert message.endswith(f"... ({len(' | '.join(classes))} characters))") and len(message) < 2500


def test_a_negative_second_moment_is_refused_at_load(good, tmp_path, capsys):
    # review158 F6: it loaded, and --resume trained into NaN with advice to lower --lr
    arrays = _arrays(good)
    second = -np.abs(arrays["optimizer/second.0"]) - 1
    arrays["optimizer/second.0"] = second
    path = _saved(tmp_path / "neg.npz", arrays)
    message = (f"{path}: training optimizer state entry second.0 holds {second.flat[0].item()!r} at index "
               f"[0, 0] ({second.size} of {second.size} entries negative), but adam's second buffer holds "
               "the second moment, a running mean of squared gradients, never negative: the state was "
               "altered")
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == message
    assert main(["train", "--resume", str(path), "--epochs", "2"]) == 2
    assert capsys.readouterr().err == f"error: {message}\n"


def test_inspect_lists_the_arrays_that_are_not_finite(good, tmp_path, capsys):
    # review158 F8: inspect said nothing of NaN weights, which predict then gave no prediction for
    arrays = _arrays(good)
    bias = arrays["weights/0.bias"].copy()
    bias[[0, 2]] = [np.nan, np.inf]
    second = arrays["optimizer/second.1"].copy()
    second.flat[0] = np.nan
    path = _saved(tmp_path / "nan.npz", {**arrays, "weights/0.bias": bias, "optimizer/second.1": second})
    record = tmp_path / "r.json"
    assert main(["inspect", str(path), "--report-json", str(record)]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert (f"not_finite: weights/0.bias (2 of {bias.size} values), optimizer/second.1 (1 of {second.size} "
            "values): the run diverged, or the file was edited; predict gives no prediction where they "
            "reach and --resume trains on from them") in lines
    # the optimizer state alone: predict does not read it (review161 F3)
    only = _saved(tmp_path / "opt.npz", {**arrays, "optimizer/second.1": second})
    assert main(["inspect", str(only)]) == 0
    assert (f"not_finite: optimizer/second.1 (1 of {second.size} values): the run diverged, or the file was "
            "edited; --resume trains on from them") in capsys.readouterr().out.splitlines()
    assert json.loads(record.read_text())["not_finite"] == [
        {"array": "weights/0.bias", "count": 2, "size": bias.size},
        {"array": "optimizer/second.1", "count": 1, "size": second.size},
    ]


@pytest.mark.parametrize(
    ("edit", "counts", "expected"),
    [
        ("batch_size", "took 4 steps", "1 epoch of 120 training rows in batches of 16 take 8 (8 an epoch)"),
        ("epochs_done", "took 4 steps", "2 epochs of 120 training rows in batches of 32 take 8 (4 an epoch)"),
        ("param_steps", "counts [4, 4, 1, 4, 4, 4] steps per parameter",
         "1 epoch of 120 training rows in batches of 32 take 4 (4 an epoch, per parameter "
         "[4, 4, 4, 4, 4, 4])"),
    ],
)
def test_resume_refuses_step_counts_its_epochs_do_not_take(good, tmp_path, capsys, edit, counts, expected):
    # review158 F7: an edited batch size or epochs done resumed into a run matching neither version
    meta, arrays = _meta(good), _arrays(good)
    assert (meta["training"]["settings"]["batch_size"], meta["training"]["epochs_done"]) == ("32", 1)
    assert arrays["optimizer/steps"] == 4  # the premise: ceil(120 / 32) steps in the one epoch
    if edit == "batch_size":
        meta["training"]["settings"]["batch_size"] = "16"
    elif edit == "epochs_done":
        meta["training"]["epochs_done"] = meta["training"]["epochs"] = 2
    else:
        arrays["optimizer/param_steps"] = np.array([4, 4, 1, 4, 4, 4])
    path = _saved(tmp_path / "edited.npz", {**arrays, "metadata": np.array(json.dumps(meta))})
    assert main(["train", "--resume", str(path), "--epochs", "3"]) == 2
    assert capsys.readouterr().err == (
        f"error: checkpoint {path}: its optimizer {counts}, but {expected}: its epochs done, batch size or "
        "optimizer state was edited, so the resumed run would be neither the saved run nor an uninterrupted "
        "one; train a new run\n"
    )


def test_class_names_with_tabs_and_line_breaks_still_load(good, tmp_path):
    # a quoted CSV cell holds them, and torchlean train reads such labels
    meta = _meta(good)
    meta["classes"][1] = "vers\ticolor\r\nB"
    path = _saved(tmp_path / "t.npz", {**_arrays(good), "metadata": np.array(json.dumps(meta))})
    assert checkpoint.load(path).classes[1] == "vers\ticolor\r\nB"


def test_class_names_beyond_the_basic_plane_still_load(good, tmp_path):
    meta = _meta(good)
    meta["classes"][1] = "vers\U0001F600 \u00e9"  # an emoji (a surrogate pair in JSON's escapes) and é
    path = _saved(tmp_path / "astral.npz", {**_arrays(good), "metadata": np.array(json.dumps(meta))})
    assert checkpoint.load(path).classes[1] == "vers\U0001F600 \u00e9"


def test_a_header_cut_inside_its_length_field_is_named_as_cut_short(good, tmp_path):
    # review161 F7: its message ended with the bound on a header's length, which did not apply
    path = _rewrite(good, tmp_path / "cut.npz", replace={"metadata.npy": b"\x93NUMPY\x01\x00\x05"})
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    assert str(caught.value) == (
        f"{path}: cannot read the .npz archive (entry 'metadata': its .npy ends inside its header's length "
        "field (the file is cut short))"
    )


def test_a_compressed_checkpoint_of_the_right_shapes_still_loads(good, tmp_path):
    plain = checkpoint.load(good)
    with zipfile.ZipFile(good) as source:
        members = {info.filename: source.read(info) for info in source.infolist()}
    path = tmp_path / "deflated.npz"
    with zipfile.ZipFile(path, "w", zipfile.ZIP_DEFLATED) as out:
        for name, payload in members.items():
            out.writestr(name, payload)
    loaded = checkpoint.load(path)
    assert loaded.training is not None and plain.training is not None
    for name, value in plain.weights.items():
        np.testing.assert_array_equal(loaded.weights[name], value, strict=True)
    assert sorted(loaded.training.optimizer) == sorted(plain.training.optimizer)


@pytest.mark.parametrize("member", ["weights/0.bias.npy", "metadata.npy", "evil.npy"])
def test_a_pickled_object_array_is_refused_from_its_header_without_unpickling(good, tmp_path, reads, member):
    # a payload that would append to this list if it were unpickled
    payload = np.array([Unpickled()], dtype=object)
    buffer = io.BytesIO()
    np.lib.format.write_array(buffer, payload, allow_pickle=True)
    replace = {member: buffer.getvalue()} if member != "evil.npy" else {}
    add = {member: buffer.getvalue()} if member == "evil.npy" else {}
    path = _rewrite(good, tmp_path / "pickled.npz", replace=replace, add=add)
    expected = (
        r"unexpected archive entries: evil$"
        if member == "evil.npy"
        else (rf"cannot read the \.npz archive \(entry '{member[:-4]}': its \.npy declares dtype object, "
              r"which only pickle reads \(Object arrays cannot be loaded when allow_pickle=False; accepted: "
              r"bool, integer, float and text arrays\)\)$")
    )
    with pytest.raises(CheckpointError, match=expected):
        checkpoint.load(path)
    assert UNPICKLED == []
    assert reads in ([], ["metadata.npy"])


UNPICKLED: list[str] = []


def _unpickled() -> None:
    UNPICKLED.append("unpickled")


class Unpickled:
    def __reduce__(self) -> tuple[Any, ...]:
        return (_unpickled, ())


# ------------------------------------------------------------ F12: the optimizer state at load


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (
            {"optimizer/first.0": np.zeros((3, 3), np.float32)},
            r"training optimizer entry first\.0 has dtype float32, shape \[3, 3\], but parameter 0 "
            r"\(0\.weight\) has dtype float32, shape \[4, 4\]",
        ),
        (
            {"optimizer/first.0": np.zeros((4, 4))},
            r"entry first\.0 has dtype float64, shape \[4, 4\], but parameter 0",
        ),
        (
            {"optimizer/first.6": np.zeros(3, np.float32), "optimizer/second.6": np.zeros(3, np.float32)},
            r"training optimizer entry (first|second)\.6 names parameter 6, but model mlp .* has 6 "
            r"parameters \(0 to 5\)",
        ),
        (
            {"optimizer/kind": np.array("evil")},
            r"training optimizer entry kind must name an optimizer "
            r"\(sgd \| adam \| adamw \| rmsprop \| adagrad\), got 'evil'",
        ),
        (
            {"optimizer/kind": np.array("x" * 100)},
            r"training optimizer entry kind must be a 0-d text array naming",
        ),
        (
            {"optimizer/kind": np.array(["adam"])},
            r"entry kind must be a 0-d text array .* got dtype <U4, shape \[1\]",
        ),
        ({"optimizer/steps": np.array(-5)}, r"training optimizer entry steps must be >= 0, got -5$"),
        (
            {"optimizer/steps": np.array(1.5)},
            r"entry steps must be a 0-d integer array .* got dtype float64, shape \[\]",
        ),
        (
            {"optimizer/param_steps": np.array([8, 8, -1, 8, 8, 8])},
            r"training optimizer entry param_steps must be >= 0, got \[8, 8, -1, 8, 8, 8\]$",
        ),
        (
            {"optimizer/param_steps": np.array([8, 8])},
            r"entry param_steps must hold one step count per parameter of model mlp .*: 6, got shape \[2\]$",
        ),
        (
            {"optimizer/lr": np.array(np.nan)},
            r"training optimizer entry lr must be a finite learning rate >= 0, got "
            r"(np\.float64\()?nan",
        ),
        (
            {"optimizer/lr": np.array(-0.1)},
            r"entry lr must be a finite learning rate >= 0, got (np\.float64\()?-0\.1",
        ),
        (
            {"optimizer/momentum.0": np.zeros(4, np.float32)},
            r"training optimizer entry momentum\.0 is not one of Optimizer\.state_dict\(\)'s \(kind, steps",
        ),
        (
            {"optimizer/kind": np.array("sgd"), "optimizer/third.0": np.zeros((4, 4), np.float32)},
            r"training optimizer state of kind 'sgd' has the entries third\.0, but a sgd optimizer keeps "
            r"no third buffer",
        ),
    ],
)
def test_load_checks_the_optimizer_state_against_the_model(good, tmp_path, change, message):
    arrays = _arrays(good)
    assert arrays["weights/0.weight"].shape == (4, 4)  # the oracle of the messages: --hidden 4, 4 features
    arrays.update(change)
    with pytest.raises(CheckpointError, match=message):
        checkpoint.load(_saved(tmp_path / "opt.npz", arrays))


@pytest.mark.parametrize(
    ("dropped", "message"),
    [
        ("optimizer/steps", r"the training optimizer state has no steps entry"),
        ("optimizer/param_steps", r"the training optimizer state has no param_steps entry"),
        ("optimizer/second.3", r"the training optimizer state has first\.3 but no second\.3"),
    ],
)
def test_load_refuses_an_optimizer_state_that_lacks_what_state_dict_writes(good, tmp_path, dropped, message):
    arrays = _arrays(good)
    del arrays[dropped]
    with pytest.raises(CheckpointError, match=message):
        checkpoint.load(_saved(tmp_path / "lacking.npz", arrays))


def test_an_optimizer_state_without_a_frozen_parameters_buffers_loads(good, tmp_path):
    arrays = _arrays(good)
    for kind in ("first", "second"):  # a frozen parameter keeps none (Optimizer.state_dict)
        del arrays[f"optimizer/{kind}.0"]
    saved = checkpoint.load(_saved(tmp_path / "frozen.npz", arrays))
    assert saved.training is not None and "first.0" not in saved.training.optimizer


def test_training_state_built_in_python_has_its_optimizer_entries_checked():
    base = {"epochs_done": 1, "epochs": 2, "settings": {}}
    with pytest.raises(CheckpointError, match=r"entry kind must name an optimizer .* got 'evil'"):
        TrainingState(**base, optimizer={"kind": np.array("evil")})
    with pytest.raises(CheckpointError, match=r"entry steps must be >= 0, got -1"):
        TrainingState(**base, optimizer={"steps": np.array(-1)})
    with pytest.raises(CheckpointError, match=r"entry 'x\\x1b\[2J' is not one of Optimizer.state_dict\(\)'s"):
        TrainingState(**base, optimizer={"x\x1b[2J": np.zeros(1)})
    assert (
        TrainingState(**base, optimizer={"kind": np.array("adam"), "steps": np.array(0)}).optimizer["steps"]
        == 0
    )


def test_a_checkpoint_built_in_python_has_its_optimizer_state_checked_against_the_model(good):
    saved = checkpoint.load(good)
    assert saved.training is not None
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    state = {name: getattr(saved.training, name) for name in TrainingState.__slots__}
    optimizer = {**saved.training.optimizer, "second.1": np.zeros(5, np.float32)}
    with pytest.raises(
        CheckpointError,
        match=r"entry second\.1 has dtype float32, shape \[5\], but parameter 1 "
        r"\(0\.bias\) has dtype float32, shape \[4\]",
    ):
        Checkpoint(**{**fields, "training": TrainingState(**{**state, "optimizer": optimizer})})


# ------------------------------------------------------------------ F13: duplicates


def test_a_duplicate_archive_entry_is_refused_naming_it(good, tmp_path, reads):
    with zipfile.ZipFile(good) as source:
        metadata = source.read("metadata.npy")
    path = tmp_path / "dup.npz"
    with pytest.warns(UserWarning, match="Duplicate name"):  # zipfile's own warning when writing one
        _rewrite(good, path, add={"metadata.npy": metadata})
    with pytest.raises(
        CheckpointError,
        match=r"dup\.npz: the archive holds more than one entry named metadata\.npy "
        r"\(a zip tool reading the first copy and torchlean, the last, would see different "
        r"checkpoints\)$",
    ):
        checkpoint.load(path)
    assert reads == []


@pytest.mark.parametrize(
    ("old", "new", "key"),
    [
        ('"model": "mlp"', '"model": "mlp", "model": "transformer"', "model"),
        (
            '"epochs_done": 1',
            '"epochs_done": 1, "epochs_done": 2',
            "epochs_done",
        ),  # inside the training object
        ('"settings": {', '"settings": {"lr": "0.5", ', "lr"),  # inside settings, which already has lr
    ],
)
def test_a_duplicate_json_key_in_the_metadata_is_refused_naming_it(good, tmp_path, old, new, key):
    arrays = _arrays(good)
    text = str(arrays["metadata"])
    assert old in text and ('"lr":' in text if key == "lr" else True)
    arrays["metadata"] = np.array(text.replace(old, new, 1))
    with pytest.raises(
        CheckpointError, match=rf"the metadata names the key '{key}' twice in one JSON object"
    ):
        checkpoint.load(_saved(tmp_path / "dupkey.npz", arrays))


# ------------------------------------------------------------ F6, F7: names shown, lists elided


def test_an_entry_name_with_control_characters_is_shown_as_one_escaped_line(good, tmp_path):
    name = "x\x1b[2J\nerror: fake"
    path = _rewrite(good, tmp_path / "evil.npz", add={f"{name}.npy": _npy(np.zeros(1))})
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(path)
    text = str(caught.value)
    assert text.endswith(r"evil.npz: unexpected archive entries: 'x\x1b[2J\nerror: fake'")
    assert "\n" not in text and "\x1b" not in text


def test_many_extra_entries_are_listed_elided(good, tmp_path):
    arrays = _arrays(good)
    arrays.update({f"x{i}": np.zeros(1) for i in range(2000)})
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(_saved(tmp_path / "many.npz", arrays))
    assert str(caught.value).endswith(
        "many.npz: unexpected archive entries: x0, x1, x2, ..., x1999 (2000 in all)"
    )
    assert len(str(caught.value)) < 200 + len(str(tmp_path))


def test_six_extra_entries_are_listed_in_full(good, tmp_path):
    arrays = _arrays(good)
    arrays.update({f"x{i}": np.zeros(1) for i in range(6)})
    with pytest.raises(CheckpointError, match=r"unexpected archive entries: x0, x1, x2, x3, x4, x5$"):
        checkpoint.load(_saved(tmp_path / "six.npz", arrays))


def test_a_huge_class_list_is_elided_in_the_error(good, tmp_path):
    arrays = _arrays(good)
    meta = json.loads(str(arrays["metadata"]))
    meta["classes"] = [f"class{i}" for i in range(100_000)]
    arrays["metadata"] = np.array(json.dumps(meta))
    with pytest.raises(CheckpointError) as caught:
        checkpoint.load(_saved(tmp_path / "classes.npz", arrays))
    assert str(caught.value).endswith(
        "a classifier needs one class per output unit (3), at least two; got classes ('class0', 'class1', "
        "'class2', ..., 'class99999') (100000 in all)"
    )
    # a short list is shown whole, as before
    saved = checkpoint.load(good)
    fields = {name: getattr(saved, name) for name in Checkpoint.__slots__}
    with pytest.raises(CheckpointError, match=r"got classes \('a', 'b'\)$"):
        Checkpoint(**{**fields, "classes": ("a", "b")})


def test_a_consistently_huge_checkpoint_is_refused_before_its_data(good, tmp_path, reads):
    """stop34's archive gap: metadata describing an MLP of hidden width 2**20 and entry headers
    that fit it (4 TiB of float32 in one hidden weight), each entry a few bytes on disk, as deflate
    packs zeros: refused for the machine's memory from the headers, nothing but the metadata read
    (it used to read, and inflate, every entry)."""
    from torchlean.models import build_model

    wide = 2**20
    meta = _meta(good)
    meta["hidden"] = wide
    meta["training"]["settings"]["hidden"] = wide
    layer, _ = build_model("mlp", meta["features"], meta["outputs"], hidden=wide)
    shapes = {spec.name: spec.shape for spec in layer.param_specs()}
    order = list(shapes)
    replace = {"metadata.npy": _npy(np.array(json.dumps(meta)))}
    with zipfile.ZipFile(good) as source:
        for info in source.infolist():
            kind, _, name = info.filename.removesuffix(".npy").partition("/")
            if kind in ("weights", "last_weights"):
                replace[info.filename] = _header(shapes[name]) + bytes(16)
            elif kind == "optimizer" and "." in name:
                replace[info.filename] = _header(shapes[order[int(name.split(".")[1])]]) + bytes(16)
    path = _rewrite(good, tmp_path / "huge.npz", replace=replace, compression=zipfile.ZIP_DEFLATED)
    declared = 0  # every array entry's header (the metadata is read already), by numpy's own reader
    with zipfile.ZipFile(path) as archive:
        for info in archive.infolist():
            if info.filename == "metadata.npy":
                continue
            with archive.open(info) as stream:
                version = np.lib.format.read_magic(stream)
                read_header = (np.lib.format.read_array_header_1_0 if version == (1, 0)
                               else np.lib.format.read_array_header_2_0)
                shape, _, dtype = read_header(stream)
                declared += dtype.itemsize * math.prod(shape)
    assert declared > 3 * 4 * wide * wide  # the weight, Adam's two moments: 4 TiB each
    reads.clear()  # _meta read the good checkpoint
    refusal = (
        rf"huge\.npz: its arrays declare {declared} bytes \([\d.]+ GiB\), more than the memory this "
        r"process may use \([\d.]+ GiB\): a checkpoint of that size cannot be loaded here$"
    )
    with pytest.raises(CheckpointError, match=refusal):
        checkpoint.load(path)
    assert reads == ["metadata.npy"]


def test_a_containers_memory_limit_bounds_what_loads(good, tmp_path, monkeypatch):
    """review78 F4: under docker's --memory or Slurm's --mem the process may use less than the
    machine has; the cgroup limit (a file stood in for here) bounds the checkpoint too, and "max"
    (no limit) leaves the machine's memory."""
    from torchlean import _memory

    limit = tmp_path / "memory.max"
    monkeypatch.setattr(_memory, "CGROUP_LIMITS", (str(limit),))
    limit.write_text("max\n")
    assert _memory.usable_memory() == os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES")
    checkpoint.load(good)
    limit.write_text("100\n")  # less than the good checkpoint's arrays (about 800 bytes)
    assert _memory.usable_memory() == 100
    with pytest.raises(CheckpointError, match=r"more than the memory this process may use \(0\.0 GiB\)"):
        checkpoint.load(good)


# ------------------------------------------------- review207 F1, F2, F5: damage numpy lets out raw


def _raw_npy(header: str, data: bytes) -> bytes:
    """A ``.npy`` 1.0 member whose header is ``header`` as written (not a numpy-written dict)."""
    text = header.encode("latin-1")
    return b"\x93NUMPY\x01\x00" + len(text).to_bytes(2, "little") + text + data


def _refused_everywhere(path: Path, reason: str, capsys: pytest.CaptureFixture[str]) -> None:
    """``checkpoint.load`` raises a CheckpointError with ``reason`` (a regex), and ``inspect`` and
    ``predict`` print it as one ``error:`` line with exit status 2, no traceback."""
    start = rf"^{re.escape(str(path))}: cannot read the \.npz archive \("
    with pytest.raises(CheckpointError, match=start + reason):
        checkpoint.load(path)
    capsys.readouterr()
    out = path.with_suffix(".csv")
    for argv in (["inspect", str(path)], ["predict", str(path), "--dataset", "iris", "--output", str(out)]):
        assert main(argv) == 2
        err = capsys.readouterr().err
        assert err.startswith("error: ") and err.count("\n") == 1 and "Traceback" not in err, err
        assert re.search(reason, err), err
    assert not out.exists()


BIAS = "weights/0.bias.npy"
BIAS_DATA = np.arange(4, dtype="<f4").tobytes()  # --hidden 4


@pytest.mark.parametrize(
    ("header", "error"),
    [
        # numpy retries a header that is no Python literal with its Python 2 tokenizer, which
        # raises tokenize.TokenError at an open bracket or IndentationError at ragged indentation
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), } (\n", "TokenError"),
        ("{'descr': '<f4', 'fortran_order': False, 'shape': (4,), }\n    1\n  2\n", "IndentationError"),
        # a b before a key makes it bytes, which numpy's sorted(d.keys()) cannot order (review210 F2)
        ("{'descr': '<f4',b'fortran_order': False, 'shape': (4,), }\n", "TypeError"),
    ],
    ids=["open-bracket", "ragged-indentation", "bytes-key"],
)
def test_a_header_the_python2_tokenizer_fails_on_is_refused_as_damage(good, tmp_path, capsys, header, error):
    path = _rewrite(good, tmp_path / "header.npz", replace={BIAS: _raw_npy(header, BIAS_DATA)})
    reason = rf"entry 'weights/0\.bias': its \.npy header cannot be parsed \({error}: "
    _refused_everywhere(path, reason, capsys)


def _damaged(good: Path, target: Path, compression: int, at: int) -> Path:
    """A copy of ``good`` compressed with ``compression`` whose first member's compressed data has
    byte ``at`` set to 0xFF (deflate: a block of the reserved type 3 at byte 0; LZMA: after
    zipfile's 4-byte properties header and the 5 property bytes, a range coder's first byte, which
    must be 0)."""
    _rewrite(good, target, compression=compression)
    with zipfile.ZipFile(target) as archive:
        info = archive.infolist()[0]
    raw = bytearray(target.read_bytes())
    start = info.header_offset
    name_length, extra_length = (int.from_bytes(raw[start + i : start + i + 2], "little") for i in (26, 28))
    raw[start + 30 + name_length + extra_length + at] = 0xFF
    target.write_bytes(bytes(raw))
    return target


@pytest.mark.parametrize(("compression", "at", "reason"), [
    (zipfile.ZIP_DEFLATED, 0, r"Error -3 while decompressing data: invalid block type"),
    (zipfile.ZIP_LZMA, 9, r"Corrupt input data"),
], ids=["deflate", "lzma"])
def test_damaged_compressed_data_is_refused_naming_the_entry(good, tmp_path, capsys, compression, at, reason):
    # review207 F2: zipfile lets zlib.error and LZMAError out of a damaged member (bzip2's are OSErrors)
    path = _damaged(good, tmp_path / "damaged.npz", compression, at)
    with zipfile.ZipFile(path) as archive:
        first = archive.infolist()[0].filename.removesuffix(".npy")
    entry = re.escape(repr(first))
    _refused_everywhere(path, rf"entry {entry}: its compressed data is damaged \({reason}\)", capsys)


def test_an_invalid_escape_in_a_header_warns_nothing(good, tmp_path, capsys):
    # review210 F2: ast.literal_eval warns of '\e' (a SyntaxWarning shown by default from 3.12);
    # the header, a descr numpy does not know, is refused as any other
    import warnings

    header = "{'descr': '<\\e4', 'fortran_order': False, 'shape': (4,), }\n"
    path = _rewrite(good, tmp_path / "escape.npz", replace={BIAS: _raw_npy(header, BIAS_DATA)})
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(CheckpointError, match=r"descr is not a valid dtype descriptor"):
            checkpoint.load(path)


def test_a_python2_style_header_loads_without_numpys_warning(good, tmp_path, capsys):
    # review207 F5: numpy reads '(4L,)' through its Python 2 fallback and warned on stderr, with
    # torchlean's source lines, about a file "created on Python 2"
    header = "{'descr': '<f4', 'fortran_order': False, 'shape': (4L,), }\n"
    path = _rewrite(good, tmp_path / "py2.npz", replace={BIAS: _raw_npy(header, BIAS_DATA)})
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        loaded = checkpoint.load(path)
    np.testing.assert_array_equal(loaded.weights["0.bias"], np.arange(4, dtype=np.float32), strict=True)
    assert main(["inspect", str(path)]) == 0
    assert capsys.readouterr().err == ""


def test_a_checkpoint_np_save_wrote_is_read_without_touching_the_warning_filters(good, monkeypatch):
    """review237 F1: every load entered ``warnings.catch_warnings`` (not thread-safe): two threads
    loading at once left its ``ignore`` filters, one of every ``SyntaxWarning``, for good. Headers
    as ``np.save`` writes them are read without it; a Python 2 style header still is quiet."""
    import threading
    import warnings

    from torchlean import _npz

    quiet = _npz._unusual_header_quiet
    plain: list[bool] = []

    def spy(is_plain: bool) -> object:  # review238 F4: a spy, not a patched stdlib function
        plain.append(is_plain)
        return quiet(is_plain)

    monkeypatch.setattr(_npz, "_unusual_header_quiet", spy)
    loaded = checkpoint.load(good)
    monkeypatch.undo()
    assert loaded.weights and plain and all(plain)  # every header read and its data: plain
    before = list(warnings.filters)
    threads = [threading.Thread(target=lambda: [checkpoint.load(good) for _ in range(10)]) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert warnings.filters == before
