"""Calls ported from torch with torch's positional order (review50 F2, F3, F8, F11): each either
means what it means in torch (``conv_transpose``, against torch float64) or is refused with a
torchlean error that names torchlean's spelling (``batch_norm``, ``layer_norm``, ``dropout``,
``optim.adam``), never run with the arguments in the wrong places; ``session(stream=...)`` is
checked when the session is built."""

from __future__ import annotations

import inspect
import io
import math
import sys
from pathlib import Path
from typing import Any

import numpy as np
import pytest
import torch
import torch.nn.functional as TF

import torchlean as tl
from torchlean import optim
from torchlean.optim import OptimizerError
from torchlean.tensor import TensorTypeError


def _rng() -> np.random.Generator:
    return np.random.default_rng(50)


# ---------------------------------------------------------------------------------- batch_norm (F2)


def test_batch_norm_in_torchs_order_is_refused_naming_both_orders() -> None:
    """review50 F2: torch's ``F.batch_norm(input, running_mean, running_var)`` ran here in
    training with the running mean as the scale and the running variance as the shift."""
    x = tl.tensor(_rng().standard_normal((4, 3)))
    mean, var = tl.tensor(np.full(3, 0.5)), tl.tensor(np.full(3, 2.0))
    for args in ((mean, var), (mean,), (mean, var, None, None, False)):
        with pytest.raises(tl.TensorTypeError) as caught:
            tl.batch_norm(x, *args)  # type: ignore[misc]
        message = str(caught.value)
        assert message.startswith(f"batch_norm: got {1 + len(args)} positional arguments (accepted: 1, x); ")
        assert "torch.nn.functional.batch_norm(input, running_mean, running_var, weight=None" in message
        assert "tl.batch_norm(x, running_mean=..., running_var=..., weight=..., bias=..., " in message
        assert "training defaults to True here" in message
        assert isinstance(caught.value, TypeError)  # a TypeError, as Python's own refusal would be


def test_batch_norm_keywords_match_torch_float64_and_training_defaults_to_true() -> None:
    rng = _rng()
    x_np = rng.standard_normal((5, 3, 2))
    w_np, b_np = rng.standard_normal(3), rng.standard_normal(3)
    mean_np, var_np = rng.standard_normal(3), rng.uniform(0.5, 2.0, 3)
    x, w, b = tl.tensor(x_np), tl.tensor(w_np), tl.tensor(b_np)
    mean, var = tl.tensor(mean_np), tl.tensor(var_np)
    t = torch.tensor
    got = tl.batch_norm(x, running_mean=mean, running_var=var, weight=w, bias=b, training=False, eps=1e-3)
    want = TF.batch_norm(t(x_np), t(mean_np), t(var_np), t(w_np), t(b_np), False, 0.1, 1e-3)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-14)
    default = tl.batch_norm(x, weight=w, bias=b)  # training=True by default, unlike torch
    want_train = TF.batch_norm(t(x_np), None, None, t(w_np), t(b_np), training=True)
    np.testing.assert_allclose(default.numpy(), want_train.numpy(), rtol=1e-12, atol=1e-14)
    assert not np.allclose(default.numpy(), want.numpy())  # the two modes differ on this input


@pytest.mark.parametrize("name", ["weight", "bias", "running_mean", "running_var"])
def test_batch_norm_names_the_keyword_given_a_numpy_array(name: str) -> None:
    """review220 F4: a port passing numpy arrays got ``batch_norm: input 3 must be a torchlean
    Tensor`` from the op's positions, which a keyword-only call does not have."""
    x = tl.tensor(np.ones((4, 3)))
    given: dict[str, object] = {"running_mean": tl.tensor(np.zeros(3)), "running_var": tl.tensor(np.ones(3))}
    given[name] = np.ones(3)
    with pytest.raises(TensorTypeError) as caught:
        tl.batch_norm(x, **given, training=False)  # type: ignore[arg-type]
    assert str(caught.value) == (
        f"batch_norm: {name} must be a torchlean Tensor or None; got ndarray (accepted: a torchlean Tensor "
        "of shape (C,) in x's dtype, or None; convert data with torchlean.tensor(...))"
    )


def test_batch_norm_signature_is_keyword_only_after_x() -> None:
    """Every parameter after x is keyword-only; the one var-positional, ``*refused: *tuple[()]``,
    admits no argument for type checkers (examples/mypy/torch_argument_orders.py shows mypy's
    ``Too many positional arguments``) and only collects a torch-order call's arguments to refuse
    them at run time."""
    params = list(inspect.signature(tl.batch_norm).parameters.values())
    assert [p.name for p in params] == [
        "x", "refused", "weight", "bias", "running_mean", "running_var", "training", "eps"
    ]
    assert params[0].kind is inspect.Parameter.POSITIONAL_OR_KEYWORD
    assert params[1].kind is inspect.Parameter.VAR_POSITIONAL and params[1].annotation == "*tuple[()]"
    assert all(p.kind is inspect.Parameter.KEYWORD_ONLY for p in params[2:])
    assert params[6].default is True
    doc = tl.batch_norm.__doc__ or ""
    assert "keyword-only" in doc and "defaults to **True** (torch:" in doc


# ------------------------------------------------------------------------------ conv_transpose (F3)


@pytest.mark.parametrize(
    ("spatial", "groups", "dilation"),
    [((5, 5), 2, 1), ((5, 5), 1, 2), ((5, 5), 2, 2), ((6,), 4, 3), ((3, 4, 3), 2, (1, 2, 1))],
)
def test_conv_transpose_positional_torch_order_matches_torch_float64(
    spatial: tuple[int, ...], groups: int, dilation: Any
) -> None:
    """review50 F3: ``(..., output_padding, groups, dilation)`` as torch's; values and gradients."""
    rng = _rng()
    c_in = 4
    kernel = (3,) * len(spatial)
    x_np = rng.standard_normal((2, c_in, *spatial))
    w_np = rng.standard_normal((c_in, 6 // groups if 6 % groups == 0 else 1, *kernel))
    c_out = w_np.shape[1] * groups
    b_np = rng.standard_normal(c_out)
    torch_fn = {1: TF.conv_transpose1d, 2: TF.conv_transpose2d, 3: TF.conv_transpose3d}[len(spatial)]
    tx, tw, tb = (torch.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    want = torch_fn(tx, tw, tb, 2, 1, 1, groups, dilation)
    want.backward(torch.ones_like(want))
    x, w, b = (tl.tensor(a, requires_grad=True) for a in (x_np, w_np, b_np))
    got = tl.conv_transpose(x, w, b, 2, 1, 1, groups, dilation)
    assert got.shape == tuple(want.shape)
    np.testing.assert_allclose(got.numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
    tl.reduce_sum(got).backward()
    for leaf, t in ((x, tx), (w, tw), (b, tb)):
        assert leaf.grad is not None and t.grad is not None
        np.testing.assert_allclose(leaf.grad.numpy(), t.grad.numpy(), rtol=1e-12, atol=1e-12)


def test_conv_transpose_review_case_has_torchs_shape() -> None:
    """The review's call: torch gives ``(1, 2, 7, 7)``; with dilation and groups exchanged it
    was ``(1, 1, 9, 9)``."""
    rng = _rng()
    x_np, w_np = rng.random((1, 4, 5, 5)), rng.random((4, 1, 3, 3))
    got = tl.conv_transpose(tl.tensor(x_np), tl.tensor(w_np), None, 1, 0, 0, 2, 1)
    want = TF.conv_transpose2d(torch.tensor(x_np), torch.tensor(w_np), None, 1, 0, 0, 2, 1)
    assert got.shape == tuple(want.shape) == (1, 2, 7, 7)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)
    names = list(inspect.signature(tl.conv_transpose).parameters)
    assert names[-2:] == ["groups", "dilation"]


# ------------------------------------------------------------------------------- session stream (F8)


@pytest.mark.parametrize(
    ("stream", "shown"),
    [
        ("x", "'x' of type str"),
        (3, "3 of type int"),
        (io.StringIO, "<class '_io.StringIO'> of type type"),
        (io.BytesIO(), "of type BytesIO"),
        (sys.stdout.buffer if hasattr(sys.stdout, "buffer") else io.BytesIO(), "of type "),
        (object(), "of type object"),
    ],
)
def test_session_refuses_a_stream_it_cannot_print_to_when_built(stream: object, shown: str) -> None:
    """review50 F8: the AttributeError came when the block exited, after the ops had run."""
    with pytest.raises(tl.SessionTypeError, match=r"^torch eager session: stream ") as caught:
        tl.session(stream=stream, show_backend=True)  # type: ignore[arg-type]
    message = str(caught.value)
    assert shown in message
    accepted = "(accepted: a text stream with .write, or None for sys.stdout"
    if isinstance(stream, io.BufferedIOBase | io.RawIOBase):  # review53 F10: say it is binary
        assert message.endswith(f"is a binary stream {accepted}; wrap it as io.TextIOWrapper(stream))")
    else:
        assert message.endswith(f"is not accepted {accepted})")
    assert isinstance(caught.value, TypeError)
    with pytest.raises(tl.SessionTypeError, match="stream"):  # without show_backend too
        tl.Session(stream=stream)  # type: ignore[arg-type]


def _closed_string_io() -> io.StringIO:
    out = io.StringIO()
    out.close()
    return out


@pytest.mark.parametrize("show_backend", [True, False])
def test_session_refuses_a_closed_or_read_only_text_stream_when_built(
    tmp_path: Path, show_backend: bool
) -> None:
    """review52 F12: these passed the check (they have .write), then ``print`` raised a raw
    ``ValueError: I/O operation on closed file`` or ``io.UnsupportedOperation: not writable``
    inside the session, naming no argument (and only with show_backend)."""
    path = tmp_path / "report.txt"
    path.write_text("")
    closed_file = path.open("w")
    closed_file.close()
    with path.open() as read_only:
        cases = [
            (_closed_string_io(), "of type StringIO is closed"),
            (closed_file, "of type TextIOWrapper is closed"),
            (read_only, "of type TextIOWrapper is not writable (writable() is False: opened for reading?)"),
        ]
        for stream, fault in cases:
            with pytest.raises((ValueError, io.UnsupportedOperation)):
                print("x", file=stream)  # what the session's report would meet
            with pytest.raises(tl.SessionError, match=r"^torch eager session: stream ") as caught:
                tl.session(stream=stream, show_backend=show_backend)
            assert str(caught.value).endswith(
                f"{fault} (accepted: an open, writable text stream, or None for sys.stdout)"
            )
            assert not isinstance(caught.value, TypeError)  # a fault of the value, not of its type


def test_a_stream_closed_while_the_session_is_open_is_named_at_the_next_report_line() -> None:
    """review53 F10: the next selection's report line raised print's bare ValueError."""
    out = io.StringIO()
    with tl.session(stream=out, show_backend=True) as session:
        tl.relu(tl.tensor(np.ones(2)))
        assert "relu" in out.getvalue()
        out.close()
        with pytest.raises(tl.SessionError) as caught:
            tl.exp(tl.tensor(np.ones(2)))
        # review58 F1: the unreported capsule is not recorded, so a retry raises again
        assert [k.capsule.name for k in session.selected] == ["reference.relu"]
        with pytest.raises(tl.SessionError, match="cannot print the backend report"):
            tl.exp(tl.tensor(np.ones(2)))
    assert str(caught.value).startswith("torch eager session: cannot print the backend report to stream ")
    assert "ValueError: I/O operation on closed file; was it closed while the session was open?" in str(
        caught.value
    )


def test_session_prints_to_a_writable_file(tmp_path: Path) -> None:
    path = tmp_path / "report.txt"
    with path.open("w") as out, tl.session(stream=out, show_backend=True):
        tl.relu(tl.tensor(np.ones(2)))
    assert "reference.relu" in path.read_text()


def test_session_prints_to_a_text_stream_and_to_stdout_for_none(capsys: pytest.CaptureFixture[str]) -> None:
    out = io.StringIO()
    with tl.session(stream=out, show_backend=True):
        tl.relu(tl.tensor(np.ones(2)))
    assert "reference.relu" in out.getvalue()
    with tl.session(stream=None, show_backend=True):
        tl.relu(tl.tensor(np.ones(2)))
    assert "reference.relu" in capsys.readouterr().out


# ----------------------------------------------------------------------- torch's spellings (F11)


@pytest.mark.parametrize("make", [optim.adam, optim.adamw])
@pytest.mark.parametrize(
    ("pair", "hint"),
    [
        ((0.9, 0.999), "betas=(0.9, 0.999)"),
        ([0.8, 0.9], "betas=(0.8, 0.9)"),
        ((0.9,), "betas=(b1, b2)"),
        (np.array([0.9, 0.999]), "betas=(0.9, 0.999)"),  # review52 F13
        (np.array([0.9, 0.99, 0.5]), "betas=(b1, b2)"),
        ((1.0, 0.999), "betas=(b1, b2)"),  # review53 F7: not echoed where betas= refuses it
        (("0.9", "0.999"), "betas=(b1, b2)"),
        ((True, 0.999), "betas=(b1, b2)"),
        ((0.9, float("nan")), "betas=(b1, b2)"),
    ],
    ids=["tuple", "list", "one", "numpy", "numpy-three", "beta1-1", "strings", "bool", "nan"],
)
def test_adam_with_torchs_betas_in_beta1s_place_names_betas(make: Any, pair: Any, hint: str) -> None:
    """torch's ``Adam(params, lr, betas)``, ported without params: the pair lands in beta1."""
    with pytest.raises(OptimizerError) as caught:
        make(1e-3, pair)
    message = str(caught.value)
    assert message.startswith(f"optimizer: beta1 must be a real number (int or float), got {pair!r}: ")
    assert "torch's Adam(params, lr, betas) order" in message
    assert f"pass {hint} (or beta1=, beta2=) by keyword" in message
    assert make(1e-3, betas=(0.8, 0.9)) == make(1e-3, 0.8, 0.9)  # the spelling the message names


def test_dropout_seed_messages_name_dropout_and_torchs_inplace() -> None:
    x = tl.tensor(np.ones((2, 3)))
    for training in (True, False):  # checked in eval too, where the seed is not used
        for inplace in (False, True, np.bool_(False)):
            with pytest.raises(tl.TensorTypeError) as caught:
                tl.dropout(x, 0.5, training, inplace)  # type: ignore[arg-type]
            message = str(caught.value)
            assert message.startswith(f"dropout: seed must be an integer or None; got {inplace!r} of type ")
            assert "torch's dropout(input, p, training, inplace) takes inplace 4th" in message
    only_seed = r"^dropout: seed must be an integer or None; got 1\.5 of type float$"  # no inplace hint
    with pytest.raises(tl.TensorTypeError, match=only_seed):
        tl.dropout(x, 0.5, True, 1.5)  # type: ignore[arg-type]
    for bad, why in ((-1, r"is negative \(accepted: integers >= 0\)"), (2**64, r"is out of range")):
        with pytest.raises(tl.GuardError, match=rf"^dropout: seed = {bad} {why}"):
            tl.dropout(x, 0.5, False, bad)
    with tl.session(seed=7):
        default = tl.dropout(x, 0.5, True, np.int64(7)).numpy()
    with tl.session(seed=7):
        assert np.array_equal(tl.dropout(x, 0.5, True, None).numpy(), default)  # same seed, same mask
    with tl.session():
        assert np.array_equal(tl.dropout(x, 0.5, True, 2**64 - 1).numpy().shape, (2, 3))


@pytest.mark.parametrize(("shape", "count"), [((3,), 1), ([2, 3], 2), (torch.Size([3]), 1), (3, 1)])
def test_layer_norm_with_torchs_normalized_shape_names_normalized_ndim(shape: Any, count: int) -> None:
    x_np = _rng().standard_normal((4, 2, 3))
    x = tl.tensor(x_np)
    with pytest.raises(tl.TensorTypeError) as caught:
        tl.layer_norm(x, shape)
    message = str(caught.value)
    assert message.startswith("layer_norm: weight must be a torchlean Tensor or None; got ")
    assert "torch's normalized_shape" in message
    assert message.endswith(f"as normalized_ndim= (here normalized_ndim={count})")
    got = tl.layer_norm(x, normalized_ndim=count)  # the spelling the message names
    want = TF.layer_norm(torch.tensor(x_np), x_np.shape[3 - count:])
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-12, atol=1e-12)


def test_layer_norm_other_non_tensors_keep_the_dispatchers_message() -> None:
    x = tl.tensor(np.ones((2, 3)))
    for weight in ("w", [0.5, 1.0, 2.0], (1.5,), True):
        with pytest.raises(tl.TensorTypeError, match=r"^layer_norm: input 1 must be a torchlean Tensor"):
            tl.layer_norm(x, weight)  # type: ignore[arg-type]


# ------------------------------------------------------------------------ conv keywords (review52 F11)


@pytest.mark.parametrize("transpose", [False, True])
def test_conv_takes_torchs_weight_and_bias_keywords(transpose: bool) -> None:
    """review52 F11: ``F.conv2d(x, w, bias=b, padding=1)`` and ``weight=`` port as written: values
    and gradients against torch float64."""
    rng = _rng()
    x = rng.standard_normal((2, 4, 5, 5))
    w = rng.standard_normal((4, 3, 3, 3) if transpose else (3, 4, 3, 3))
    b = rng.standard_normal(3)
    ours = tl.conv_transpose if transpose else tl.conv
    theirs = TF.conv_transpose2d if transpose else TF.conv2d
    tx, tw, tb = (tl.tensor(a, requires_grad=True) for a in (x, w, b))
    px, pw, pb = (torch.tensor(a, requires_grad=True) for a in (x, w, b))
    out = ours(tx, weight=tw, bias=tb, padding=1)
    expected = theirs(px, weight=pw, bias=pb, padding=1)
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=1e-12, atol=1e-12)
    cotangent = rng.standard_normal(expected.shape)
    out.backward(cotangent)
    expected.backward(torch.tensor(cotangent))
    for ours_grad, torch_grad in ((tx.grad, px.grad), (tw.grad, pw.grad), (tb.grad, pb.grad)):
        assert ours_grad is not None and torch_grad is not None
        np.testing.assert_allclose(ours_grad.numpy(), torch_grad.numpy(), rtol=1e-11, atol=1e-11)


def test_batch_norm_refuses_running_statistics_in_training() -> None:
    """review52 F15: torch's training call updates the running statistics in place; here they
    were ignored silently, so a ported module stopped tracking them. They are refused now."""
    x = tl.tensor(_rng().standard_normal((4, 3)))
    mean, var = tl.tensor(np.zeros(3)), tl.tensor(np.ones(3))
    for stats in ({"running_mean": mean}, {"running_var": var}, {"running_mean": mean, "running_var": var}):
        refusal = r"^batch_norm: running_mean/running_var are neither read nor"
        with pytest.raises(tl.GuardError, match=refusal):
            tl.batch_norm(x, training=True, **stats)
        with pytest.raises(tl.GuardError, match=refusal):  # mread 2: a numpy bool as well
            tl.batch_norm(x, training=np.True_, **stats)  # type: ignore[arg-type]
    torch_mean = torch.zeros(3, dtype=torch.float64)
    TF.batch_norm(torch.tensor(x.numpy()), torch_mean, torch.ones(3, dtype=torch.float64), training=True)
    assert torch_mean.abs().max() > 0  # what torch does with them: an update
    assert tl.batch_norm(x, running_mean=mean, running_var=var, training=False).shape == (4, 3)


def test_clamp_takes_torchs_min_and_max_keywords() -> None:
    """review48 F8, review53 F9: ``torch.clamp(x, min=..., max=...)`` ports as written (float64
    values and gradients against torch); a bound given twice is refused naming both spellings."""
    values = np.array([-2.0, -0.5, 0.25, 3.0])
    cotangent = np.array([1.0, 2.0, 3.0, 4.0])
    for kwargs in ({"min": -1.0}, {"max": 1.0}, {"min": -1.0, "max": 1.0}):
        x, px = tl.tensor(values, requires_grad=True), torch.tensor(values, requires_grad=True)
        out, expected = tl.clamp(x, **kwargs), torch.clamp(px, **kwargs)
        np.testing.assert_array_equal(out.numpy(), expected.detach().numpy())
        out.backward(cotangent)
        expected.backward(torch.tensor(cotangent))
        assert x.grad is not None and px.grad is not None
        np.testing.assert_array_equal(x.grad.numpy(), px.grad.numpy())
    with pytest.raises(tl.TensorTypeError, match=r"^clamp: lo=0\.0 and min=1\.0 are one bound given twice"):
        tl.clamp(tl.tensor(values), 0.0, min=1.0)
    with pytest.raises(tl.TensorTypeError, match=r"^clamp: hi=2\.0 and max=1\.0 are one bound given twice"):
        tl.clamp(tl.tensor(values), hi=2.0, max=1.0)


def test_clamp_without_a_bound_is_refused_as_torch_refuses_it() -> None:
    """``tl.clamp(x)`` ran as the identity where ``torch.clamp(x)`` raises "At least one of 'min'
    or 'max' must not be None"; both spellings now refuse it, naming the accepted calls."""
    values = np.array([-2.0, 0.5])
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        torch.clamp(torch.tensor(values))
    for call in (lambda: tl.clamp(tl.tensor(values)), lambda: tl.clamp(tl.tensor(values), None, max=None)):
        with pytest.raises(tl.TensorTypeError, match=r"^clamp: at least one bound must be given.*\(x, lo\)"):
            call()


_X = np.random.default_rng(11).standard_normal((3, 4))
_INDEX = np.array([[0, 3], [1, 0], [2, 2]])
# (torchlean call with torch's keywords, the torch call on float64): review81 F5, these raised
# "got an unexpected keyword argument 'dim'".
_TORCH_KEYWORDS: list[tuple[str, Any, Any]] = [
    ("softmax", lambda t: tl.softmax(t, dim=0), lambda x: torch.softmax(x, dim=0)),
    ("log_softmax", lambda t: tl.log_softmax(t, dim=0), lambda x: torch.log_softmax(x, dim=0)),
    (
        "logsumexp",
        lambda t: tl.logsumexp(t, dim=1, keepdim=True),
        lambda x: torch.logsumexp(x, dim=1, keepdim=True),
    ),
    (
        "reduce_sum",
        lambda t: tl.reduce_sum(t, dim=(0, 1), keepdim=True),
        lambda x: x.sum(dim=(0, 1), keepdim=True),
    ),
    ("reduce_mean", lambda t: tl.reduce_mean(t, dim=0), lambda x: x.mean(dim=0)),
    ("concat", lambda t: tl.concat([t, t], dim=1), lambda x: torch.cat([x, x], dim=1)),
    (
        "gather",
        lambda t: tl.gather(t, dim=1, index=_INDEX),
        lambda x: torch.gather(x, dim=1, index=torch.tensor(_INDEX)),
    ),
    (
        "scatter_add",
        lambda t: tl.scatter_add(t, dim=1, index=_INDEX, src=t),
        lambda x: torch.scatter_add(x, dim=1, index=torch.tensor(_INDEX), src=x),
    ),
]


@pytest.mark.parametrize(("name", "ours", "theirs"), _TORCH_KEYWORDS, ids=[c[0] for c in _TORCH_KEYWORDS])
def test_functional_ops_take_torchs_dim_and_keepdim_keywords(name: str, ours: Any, theirs: Any) -> None:
    got = ours(tl.tensor(_X)).numpy()
    expected = theirs(torch.tensor(_X)).numpy()
    assert got.shape == expected.shape
    np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)


def test_both_spellings_or_no_required_axis_are_refused_naming_them() -> None:
    t = tl.tensor(_X)
    both = r"^softmax: got both dim=1 and axis=0; they are one argument \(torch's and numpy's spelling\)"
    with pytest.raises(tl.TensorTypeError, match=both):
        tl.softmax(t, 0, dim=1)
    with pytest.raises(tl.TensorTypeError, match=r"^reduce_sum: got both keepdim=True and keepdims=False"):
        tl.reduce_sum(t, None, False, keepdim=True)
    for call, name in ((lambda: tl.logsumexp(t), "logsumexp"), (lambda: tl.gather(t, _INDEX), "gather")):
        missing = rf"^{name}: missing its axis argument \(give axis=, or torch's dim=\)$"
        with pytest.raises(tl.TensorTypeError, match=missing):
            call()
    # the defaults are unchanged: softmax and log_softmax over the last axis, concat over the first
    np.testing.assert_array_equal(tl.softmax(t).numpy(), tl.softmax(t, -1).numpy())
    assert tl.concat([t, t]).shape == (6, 4)


def test_hard_masked_softmax_takes_torchs_dim_keyword() -> None:
    """``hard_masked_softmax(x, mask, dim=0)`` is softmax along axis 0 over the allowed entries: torch
    float64's softmax of the scores with the blocked ones set to -inf (every column keeps one)."""
    mask = np.arange(_X.size).reshape(_X.shape) % 3 != 1
    assert mask.any(axis=0).all()
    expected = torch.softmax(torch.tensor(_X).masked_fill(~torch.tensor(mask), -math.inf), dim=0).numpy()
    with tl.session():
        t = tl.tensor(_X)
        got = tl.hard_masked_softmax(t, mask, dim=0).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=0)
        np.testing.assert_array_equal(tl.hard_masked_softmax(t, mask, dim=0).numpy(),
                                      tl.hard_masked_softmax(t, mask, 0).numpy())
        with pytest.raises(tl.TensorTypeError, match=r"^hard_masked_softmax: got both dim=0 and axis=1"):
            tl.hard_masked_softmax(t, mask, 1, dim=0)


def test_cross_entropy_with_torchs_positional_weight_says_weights_are_not_supported() -> None:
    """review81 F5: torch's ``cross_entropy(input, target, weight)`` got "axis must be an integer"."""
    logits = tl.tensor(np.zeros((2, 3)))
    for weight in (tl.tensor(np.ones(3)), np.ones(3), [1.0, 1.0, 1.0], torch.ones(3)):
        message = (r"^cross_entropy: the third argument is axis, the class axis \(an integer\), not torch's "
                   r"weight; got .*: per-class weights are not supported")
        with pytest.raises(tl.TensorTypeError, match=message):
            tl.cross_entropy(logits, [0, 1], weight)


def test_cross_entropy_weight_refusal_spells_torchs_weighted_mean() -> None:
    """review89 F2: the hint's weighted mean, run, is torch's ``weight=`` result, which divides by the
    sum of the samples' weights (here not N), and its losses have ids's shape (no (N, N) broadcast)."""
    rng = np.random.default_rng(0)
    x, ids, w = rng.standard_normal((5, 3)), rng.integers(0, 3, 5), np.array([1.0, 2.0, 0.5])
    with tl.session():
        logits = tl.tensor(x)
        with pytest.raises(tl.TensorTypeError) as caught:
            tl.cross_entropy(logits, ids, w)
        assert ("torch's weighted mean is tl.reduce_sum(losses * w[ids]) / w[ids].sum(), divided by the "
                "sum of the samples' weights, not their count") in str(caught.value)
        assert "tl.reshape(-tl.gather(tl.log_softmax(logits, axis), ids[:, None], axis), ids.shape)" in str(
            caught.value)
        losses = tl.reshape(-tl.gather(tl.log_softmax(logits, 1), ids[:, None], 1), ids.shape)
        weighted = tl.reduce_sum(losses * w[ids]) / w[ids].sum()
    expected = torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(ids), weight=torch.tensor(w))
    assert w[ids].sum() != len(ids)
    assert float(weighted.numpy()) == pytest.approx(expected.item(), rel=1e-14)


def test_cross_entropy_weight_keyword_is_refused_like_the_positional_weight() -> None:
    """review89 F6: ``weight=w`` was a plain "unexpected keyword argument"; ``weight=None``, torch's
    default, is accepted."""
    x, ids = np.random.default_rng(1).standard_normal((4, 3)), np.array([0, 2, 1, 2])
    with tl.session():
        logits = tl.tensor(x)
        with pytest.raises(tl.TensorTypeError) as caught:
            tl.cross_entropy(logits, ids, weight=np.ones(3))  # type: ignore[arg-type]
        assert str(caught.value).startswith(
            "cross_entropy: weight=array([1., 1., 1.]) is refused: per-class weights are not supported; "
            "torch's weighted mean is tl.reduce_sum(losses * w[ids]) / w[ids].sum()")
        got = float(tl.cross_entropy(logits, ids, weight=None).numpy())
    assert got == pytest.approx(torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(ids)).item(),
                                rel=1e-14)


@pytest.mark.parametrize("reduction", ["sum", "none", None])
def test_mse_loss_reduction_other_than_mean_is_refused_with_its_spelling(reduction: object) -> None:
    """review89 F6: ``mse_loss(p, y, reduction=...)`` was a plain TypeError, 'mean' included. The
    refusal's spelling, run, equals torch's reduction='none' and 'sum'; 'mean' is accepted."""
    rng = np.random.default_rng(2)
    p, y = rng.standard_normal((3, 2)), rng.standard_normal((3, 2))
    with tl.session():
        prediction, target = tl.tensor(p), tl.tensor(y)
        with pytest.raises(tl.TensorError) as caught:
            tl.mse_loss(prediction, target, reduction=reduction)  # type: ignore[arg-type]
        assert str(caught.value) == (
            f"mse_loss: reduction={reduction!r} is not supported (accepted: 'mean', torch's default, which "
            "mse_loss returns); torch's reduction='none', the squared errors, is (prediction - target) * "
            "(prediction - target); reduction='sum' is tl.reduce_sum of them")
        mean = float(tl.mse_loss(prediction, target, reduction="mean").numpy())
        none = ((prediction - target) * (prediction - target)).numpy()
        total = float(tl.reduce_sum((prediction - target) * (prediction - target)).numpy())
    tp, ty = torch.tensor(p), torch.tensor(y)
    assert mean == pytest.approx(torch.nn.functional.mse_loss(tp, ty).item(), rel=1e-14)
    expected_none = torch.nn.functional.mse_loss(tp, ty, reduction="none").numpy()
    np.testing.assert_allclose(none, expected_none, rtol=1e-14)
    assert total == pytest.approx(torch.nn.functional.mse_loss(tp, ty, reduction="sum").item(), rel=1e-14)


def test_cross_entropy_hints_with_label_smoothing_spell_torchs_smoothed_losses() -> None:
    """review90 F3, F4: with label_smoothing the reduction hint spelled the unsmoothed losses (torch's
    reduction='none' differed, and its two 'sum' spellings disagreed), and the weight hint's w[ids]
    failed for a Tensor weight. The spellings, run, are torch's float64 results."""
    rng = np.random.default_rng(5)
    x, ids, w = rng.standard_normal((6, 4)), rng.integers(0, 4, 6), np.array([1.0, 2.0, 0.5, 3.0])
    probs = rng.dirichlet(np.ones(4), 6)
    s, classes = 0.1, 4
    t = torch.tensor(x)
    with tl.session():
        logits = tl.tensor(x)
        with pytest.raises(tl.TensorError) as caught:
            tl.cross_entropy(logits, ids, label_smoothing=s, reduction="none")
        assert ("; with label_smoothing=0.1, torch's per-sample losses are (1 - 0.1) times those plus "
                "0.1 / C times -tl.reduce_sum(tl.log_softmax(logits, axis), axis) for class ids"
                ) in str(caught.value)
        lp = tl.log_softmax(logits, 1)
        plain = tl.reshape(-tl.gather(lp, ids[:, None], 1), ids.shape)
        smoothed = plain * (1 - s) + (-tl.reduce_sum(lp, 1)) * (s / classes)
        soft = probs * (1 - s) + s / classes
        smoothed_probs = -tl.reduce_sum(soft * lp, 1)
        mean = float(tl.cross_entropy(logits, ids, label_smoothing=s).numpy())
        with pytest.raises(tl.TensorTypeError) as weighted:
            tl.cross_entropy(logits, ids, label_smoothing=s, weight=tl.tensor(w))  # type: ignore[arg-type]
        assert "w the class weights as a numpy array (w.numpy() of a Tensor)" in str(weighted.value)
        assert ("with label_smoothing=0.1, torch's for class ids is (1 - 0.1) times the weighted mean "
                "plus 0.1 / C times tl.reduce_sum(-tl.log_softmax(logits, 1) * w) / w[ids].sum()"
                ) in str(weighted.value)
        # review236 F2: for probabilities the smoothed target goes into their weighted formula
        assert ("for class probabilities torch's is the mean over the N samples of -tl.reduce_sum(probs * "
                "w * tl.log_softmax(logits, 1), 1)") in str(weighted.value)
        assert ("and for class probabilities the formula for them with probs * (1 - 0.1) + 0.1 / C in "
                "place of probs") in str(weighted.value)
        weights = tl.tensor(w).numpy()  # the hint's w.numpy() of a Tensor
        weighted_mean = (tl.reduce_sum(plain * weights[ids]) / weights[ids].sum()) * (1 - s) + (
            tl.reduce_sum(-lp * weights) / weights[ids].sum()) * (s / classes)
        weighted_probs = tl.reduce_mean(-tl.reduce_sum(soft * weights * lp, 1))
    ce = torch.nn.functional.cross_entropy
    none = ce(t, torch.tensor(ids), label_smoothing=s, reduction="none")
    np.testing.assert_allclose(smoothed.numpy(), none.numpy(), rtol=1e-13, atol=0)
    none_probs = ce(t, torch.tensor(probs), label_smoothing=s, reduction="none")
    np.testing.assert_allclose(smoothed_probs.numpy(), none_probs.numpy(), rtol=1e-13, atol=0)
    total = float(ce(t, torch.tensor(ids), label_smoothing=s, reduction="sum"))
    assert float(tl.reduce_sum(smoothed).numpy()) == pytest.approx(total, rel=1e-13)
    assert mean * len(ids) == pytest.approx(total, rel=1e-13)  # the hint's other 'sum' spelling agrees
    expected = ce(t, torch.tensor(ids), weight=torch.tensor(w), label_smoothing=s)
    assert float(weighted_mean.numpy()) == pytest.approx(float(expected), rel=1e-13)
    expected_probs = ce(t, torch.tensor(probs), weight=torch.tensor(w), label_smoothing=s)
    assert float(weighted_probs.numpy()) == pytest.approx(float(expected_probs), rel=1e-13)


def test_cross_entropy_takes_torchs_ignore_index_where_it_changes_nothing() -> None:
    """review90 F9: ``ignore_index=`` was a plain "unexpected keyword argument". An ignore_index no
    target equals gives torch's result (with it); a target equal to it is refused, not ignored."""
    rng = np.random.default_rng(6)
    x, ids = rng.standard_normal((5, 4)), np.array([0, 1, 3, 1, 0])
    ce = torch.nn.functional.cross_entropy
    with tl.session():
        logits = tl.tensor(x)
        for ignore in (-100, 2, np.int64(7)):
            got = float(tl.cross_entropy(logits, ids, ignore_index=ignore).numpy())
            expected = float(ce(torch.tensor(x), torch.tensor(ids), ignore_index=int(ignore)))
            assert got == pytest.approx(expected, rel=1e-14)
        with pytest.raises(tl.GuardError) as caught:
            tl.cross_entropy(logits, ids, ignore_index=0)
        assert str(caught.value) == (
            "cross_entropy: 2 targets equal ignore_index=0, which torch leaves out of the loss and torchlean "
            "does not support (accepted: an ignore_index no target equals, which changes nothing, as in "
            "torch): leave those samples out of the logits and the target")
        for bad in (True, 1.0, "0"):
            with pytest.raises(tl.TensorTypeError, match=r"^cross_entropy: ignore_index must be an integer"):
                tl.cross_entropy(logits, ids, ignore_index=bad)  # type: ignore[arg-type]


def test_sdpa_takes_torchs_attn_mask_keyword() -> None:
    """review90 F9: torch's ``attn_mask=`` keyword was a plain TypeError, so a float additive mask
    never reached the conversion hint. It is ``mask``: a boolean one gives torch's result."""
    rng = np.random.default_rng(7)
    q, k, v = (rng.standard_normal((2, 3, 4)) for _ in range(3))
    keep = np.tril(np.ones((3, 3), dtype=bool))
    expected = torch.nn.functional.scaled_dot_product_attention(
        *(torch.tensor(a) for a in (q, k, v)), attn_mask=torch.tensor(keep)).numpy()
    with tl.session():
        tq, tk, tv = tl.tensor(q), tl.tensor(k), tl.tensor(v)
        got = tl.scaled_dot_product_attention(tq, tk, tv, attn_mask=keep).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-13, atol=1e-15)
        with pytest.raises(tl.GuardTypeError, match="with mask == 0"):
            tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v),
                                            attn_mask=np.where(keep, 0.0, -np.inf))
        with pytest.raises(tl.TensorTypeError, match="got both mask and attn_mask"):
            tl.scaled_dot_product_attention(tl.tensor(q), tl.tensor(k), tl.tensor(v), keep, attn_mask=keep)


def test_cross_entropy_ignore_index_padding_and_probability_targets() -> None:
    """review91 F5-F7: a -1 padding target with ignore_index=-1 was refused naming -100; an
    ignore_index >= 0 with probabilities was accepted where torch refuses it; the weight hint
    spelled the class-id form for probabilities (torch divides by N there). Run against torch."""
    rng = np.random.default_rng(8)
    x, probs, w = rng.standard_normal((5, 4)), rng.dirichlet(np.ones(4), 5), np.array([1.0, 2.0, 0.5, 3.0])
    ce = torch.nn.functional.cross_entropy
    with tl.session():
        logits = tl.tensor(x)
        with pytest.raises(tl.GuardError) as padded:
            tl.cross_entropy(logits, np.array([0, 1, 2, -1, 1]), ignore_index=-1)
        assert str(padded.value).startswith("cross_entropy: 1 target equals ignore_index=-1, which torch")
        with pytest.raises(tl.GuardError, match=r"^cross_entropy: 2 targets equal ignore_index=-100, which"):
            tl.cross_entropy(logits, np.array([0, -100, 2, -100, 1]))
        with pytest.raises(tl.GuardError, match=r"value -7 is out of range .* to ignore_index=-1: leave"):
            tl.cross_entropy(logits, np.array([0, 1, 2, -7, 1]), ignore_index=-1)
        with pytest.raises(RuntimeError, match="ignore_index is not supported for floating point target"):
            ce(torch.tensor(x), torch.tensor(probs), ignore_index=1)  # the premise: torch refuses it
        with pytest.raises(tl.TensorError, match=r"^cross_entropy: ignore_index=1 applies to class-id"):
            tl.cross_entropy(logits, probs, ignore_index=1)
        got = float(tl.cross_entropy(logits, probs, ignore_index=-1).numpy())
        expected = float(ce(torch.tensor(x), torch.tensor(probs), ignore_index=-1))
        assert got == pytest.approx(expected, rel=1e-14)
        with pytest.raises(tl.TensorTypeError) as weighted:
            tl.cross_entropy(logits, probs, weight=w)  # type: ignore[arg-type]
        assert ("for class probabilities torch's is the mean over the N samples of "
                "-tl.reduce_sum(probs * w * tl.log_softmax(logits, 1), 1)") in str(weighted.value)
        spelled = float(tl.reduce_mean(-tl.reduce_sum(probs * w * tl.log_softmax(logits, 1), 1)).numpy())
    assert spelled == pytest.approx(float(ce(torch.tensor(x), torch.tensor(probs), weight=torch.tensor(w))),
                                    rel=1e-14)


def test_cross_entropy_ignore_index_int64_bounds_and_0d_forms() -> None:
    """review92 F7: an ignore_index beyond int64 was accepted where torch refuses it ("Overflow
    when unpacking long long"); a 0-d tensor, which torch takes, got no hint. The bounds
    themselves are torch's too."""
    rng = np.random.default_rng(9)
    x, ids = rng.standard_normal((3, 4)), np.array([0, 1, 3])
    ce = torch.nn.functional.cross_entropy
    with tl.session():
        logits = tl.tensor(x)
        for bound in (2**63 - 1, -(2**63)):
            got = float(tl.cross_entropy(logits, ids, ignore_index=bound).numpy())
            assert got == pytest.approx(float(ce(torch.tensor(x), torch.tensor(ids), ignore_index=bound)),
                                        rel=1e-14)
        for beyond in (2**63, -(2**63) - 1, 2**70):
            with pytest.raises((RuntimeError, ValueError), match="Overflow"):
                ce(torch.tensor(x), torch.tensor(ids), ignore_index=beyond)  # the premise: torch refuses it
            with pytest.raises(tl.TensorTypeError) as caught:
                tl.cross_entropy(logits, ids, ignore_index=beyond)
            assert str(caught.value) == (
                f"cross_entropy: ignore_index={beyond} is beyond int64, as torch's is (accepted: an "
                "integer in [-9223372036854775808, 9223372036854775807], torch's default -100)")
        # review97 L5: torch also takes a one-element integer tensor of any rank (its __index__)
        for one in (torch.tensor(-1), np.array(-1), torch.tensor([-1]), torch.tensor([[-1]])):
            with pytest.raises(tl.TensorTypeError) as caught:
                tl.cross_entropy(logits, ids, ignore_index=one)  # type: ignore[arg-type]
            assert str(caught.value).endswith(": pass it as a number, int(ignore_index)")
            assert float(ce(torch.tensor(x), torch.tensor(ids), ignore_index=one)) == pytest.approx(  # type: ignore[arg-type]
                float(tl.cross_entropy(logits, ids, ignore_index=-1).numpy()), rel=1e-14)
        # a 1-d array is no number; review95 L5: int() would change a float or bool one silently
        for other in (np.array([-1]), np.array(2.7), torch.tensor(2.5), np.array(True), torch.tensor(True),
                      torch.tensor([True]), torch.tensor([1.0]), torch.tensor([1, 2])):
            with pytest.raises(tl.TensorTypeError) as caught:
                tl.cross_entropy(logits, ids, ignore_index=other)  # type: ignore[arg-type]
            assert not str(caught.value).endswith("int(ignore_index)"), other


def test_an_integer_one_hot_target_is_told_to_be_floating_or_indices() -> None:
    """review100 L4: an int64 one-hot target got only "class indices of shape (2, 3) do not fit";
    torch says "Expected floating point type for target with class probabilities". Oracle: torch
    on the float one-hot target and on the indices, which both ways forward give."""
    rng = np.random.default_rng(4)
    x, ids = rng.standard_normal((2, 3)), np.array([0, 2])
    one_hot = np.eye(3, dtype=np.int64)[ids]
    with pytest.raises(RuntimeError, match="Expected floating point type for target"):
        torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(one_hot))  # the premise
    want = float(torch.nn.functional.cross_entropy(torch.tensor(x), torch.tensor(ids)))
    with tl.session():
        logits = tl.tensor(x)
        with pytest.raises(tl.TensorError) as caught:
            tl.cross_entropy(logits, one_hot)
        assert str(caught.value).endswith(
            "; an integer target of the logits' shape reads as class indices: one-hot or other class "
            "probabilities are floating, as in torch (pass target.astype(np.float64), or the class indices, "
            "np.argmax(target, axis=1))")
        with pytest.raises(tl.TensorError) as caught:  # review104 M5: a Tensor has no astype
            tl.cross_entropy(logits, tl.tensor(one_hot))
        assert str(caught.value).endswith(
            "(pass tl.tensor(target.numpy().astype(np.float64)), or the class indices, "
            "np.argmax(target.numpy(), axis=1))")
        with pytest.raises(tl.TensorError) as caught:  # a bool one-hot target
            tl.cross_entropy(logits, one_hot.astype(bool))
        assert str(caught.value) == (
            "cross_entropy: target dtype bool is neither integer indices nor float probabilities (a one-hot "
            "target: pass target.astype(np.float64), or the class indices, np.argmax(target, axis=1))")
        for forward in (tl.tensor(one_hot.astype(np.float64)), np.argmax(one_hot, axis=1),
                        np.argmax(tl.tensor(one_hot).numpy(), axis=1)):
            assert float(tl.cross_entropy(logits, forward).numpy()) == pytest.approx(want, rel=1e-14)
        for forward in (one_hot.astype(np.float64), one_hot.argmax(axis=1)):
            assert float(tl.cross_entropy(logits, forward).numpy()) == pytest.approx(want, rel=1e-14)
        with pytest.raises(tl.TensorError) as caught:  # another shape: no one-hot reading
            tl.cross_entropy(logits, np.zeros((3,), np.int64))
        assert "one-hot" not in str(caught.value)


def test_a_bool_index_is_told_which_integer_dtypes_are_taken() -> None:
    """review100 L4: "accepted: int64", though int32 or uint8 index data is taken (made int64)."""
    x = tl.tensor(np.arange(6.0).reshape(2, 3))
    picked = tl.gather(x, np.array([[2], [0]], dtype=np.uint8), 1).numpy()
    np.testing.assert_array_equal(picked, [[2.0], [3.0]])
    with pytest.raises(tl.GuardError) as caught:
        tl.gather(x, np.array([[True], [False]]), 1)
    assert str(caught.value) == ("gather: index has dtype bool; accepted: int64 (index data of another "
                                 "integer dtype, such as int32 or uint8, becomes int64)")


def test_torchs_keywords_without_a_torchlean_meaning_are_refused_naming_the_way() -> None:
    """review100 L1: layer_norm(normalized_shape=), backward(create_graph=, inputs=) were Python's
    bare "unexpected keyword argument"; the defaults are taken, as torch's."""
    x = tl.tensor(np.arange(6.0).reshape(2, 3), requires_grad=True)
    for shape, count in (((3,), 1), (3, 1), ([2, 3], 2)):
        with pytest.raises(tl.TensorTypeError) as caught:
            tl.layer_norm(x, normalized_shape=shape)
        assert str(caught.value).endswith(f"takes the number of trailing axes to normalise: pass "
                                          f"normalized_ndim={count}"), caught.value
    want = torch.nn.functional.layer_norm(torch.tensor(x.numpy()), (3,))
    got = tl.layer_norm(x, normalized_ndim=1).numpy()
    np.testing.assert_allclose(got, want.numpy(), rtol=1e-12, atol=1e-12)
    loss = tl.reduce_sum(x * x)
    refusal = r"^backward\(\): create_graph=True is refused: the tape records"
    with pytest.raises(tl.TensorTypeError, match=refusal):
        loss.backward(None, False, True)
    with pytest.raises(tl.TensorTypeError, match=r"^backward\(\): inputs=\[Tensor"):
        loss.backward(inputs=[x])
    loss.backward(None, None, False, None)  # torch's defaults spelt out (review104 L2: None was refused)
    assert x.grad is not None
    np.testing.assert_array_equal(x.grad.numpy(), 2 * x.numpy())
    cases = (
        ((), "normalized_ndim=, a count of at least 1 (torch refuses an empty shape too)"),
        (np.array([3]), "normalized_ndim=1"),
        (object(), "normalized_ndim=, a count of trailing axes"),
    )
    for shape, instead in cases:
        with pytest.raises(tl.TensorTypeError) as caught:
            tl.layer_norm(x, normalized_shape=shape)
        assert str(caught.value).endswith(f"pass {instead}"), caught.value


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
@pytest.mark.parametrize("shape", [(2, 3, 4), (1, 2, 3, 4), (1, 1, 2, 2, 2)])
def test_softmax_without_an_axis_is_refused_where_torchs_implicit_dim_is_not_the_last(
    name: str, shape: tuple[int, ...]
) -> None:
    """review138 F1: torch's ``F.softmax(x)`` without ``dim`` takes dim 0 (rank 3) or dim 1 (rank
    4 and up); a last-axis default would silently mean something else, so it is refused there.
    For rank 0 to 2 the implicit torch dim is the last axis, and the default holds (checked against
    torch's own implicit choice, warning and all)."""
    fn = getattr(tl, name)
    x = np.arange(float(np.prod(shape))).reshape(shape) / 10
    torch_dim = 0 if len(shape) == 3 else 1
    expected = (rf"^{name}: give the axis for a rank-{len(shape)} input "
                rf".*F\.{name}\(x\) without dim would take dim={torch_dim} here")
    with pytest.raises(tl.TensorTypeError, match=expected):
        fn(tl.tensor(x))
    with pytest.raises(tl.TensorTypeError, match=expected):  # torch's explicit dim=None (review145 F11)
        fn(tl.tensor(x), dim=None)
    np.testing.assert_allclose(fn(tl.tensor(x), dim=torch_dim).numpy(),
                               getattr(torch, name)(torch.tensor(x), dim=torch_dim).numpy(), rtol=1e-13)
    for low in (x.reshape(-1)[:5], x.reshape(-1)[:6].reshape(2, 3), np.array(0.3)):
        with pytest.warns(UserWarning, match="Implicit dimension choice"):
            implicit = getattr(torch.nn.functional, name)(torch.tensor(low))
        np.testing.assert_allclose(fn(tl.tensor(low)).numpy(), implicit.numpy(), rtol=1e-13, atol=0)
        np.testing.assert_array_equal(fn(tl.tensor(low), dim=None).numpy(), fn(tl.tensor(low)).numpy())


@pytest.mark.parametrize("method", ["sum", "mean"])
def test_a_reduction_dtype_is_refused_naming_the_conversion(method: str) -> None:
    """review138 F5: torch's ``t.sum(dtype=torch.float64)`` got Python's bare ``unexpected keyword
    argument``; now a TensorTypeError naming the conversion, which gives torch's float64 value."""
    x = np.array([0.1, 0.2, 0.3], dtype=np.float32)
    t = tl.tensor(x)
    with pytest.raises(tl.TensorTypeError, match=rf"^Tensor\.{method}\(dtype=torch\.float64\): torchlean "
                                                 r"reduces in the tensor's own dtype \(float32\) and never "
                                                 rf"promotes .*dtype='float64'\)\.{method}\(\)"):
        getattr(t, method)(dtype=torch.float64)
    # the tensor's own dtype, in any spelling, is torch's no-op (review145 F5)
    for own in (torch.float32, np.float32, "float32"):
        np.testing.assert_array_equal(getattr(t, method)(dtype=own).numpy(), getattr(t, method)().numpy())
    with pytest.raises(tl.TensorTypeError, match=r"\(accepted: dtype=None or float32\)$"):
        getattr(t, method)(dtype=torch.int64)  # no conversion named: an int64 sum is refused too
    converted = getattr(tl.tensor(t.numpy(), dtype="float64"), method)()
    assert float(converted.numpy()) == float(getattr(torch.tensor(x), method)(dtype=torch.float64))
    np.testing.assert_array_equal(getattr(t, method)(dtype=None).numpy(), getattr(t, method)().numpy())


@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_axis_none_is_refused_and_the_methods_require_dim(name: str) -> None:
    """review146 F3: ``axis=None`` (numpy's and scipy's softmax over every entry) gave the last
    axis's softmax silently, and ``Tensor.softmax(None)`` ran where torch refuses it. torch's
    ``dim=None`` stays its implicit choice (the last axis for rank 2)."""
    x = np.array([[0.0, 1.0, 2.0], [3.0, 2.5, 2.7]])
    fn = getattr(tl, name)
    for call in (lambda: fn(tl.tensor(x), axis=None), lambda: fn(tl.tensor(x), None)):
        with pytest.raises(tl.TensorTypeError, match=rf"^{name}: axis must be an integer; got None \(not a "
                                                     rf"{name} over every entry.*reshape\(-1\)"):
            call()
    with pytest.raises(tl.TensorTypeError, match=rf"^Tensor\.{name}: dim must be an integer; got None"):
        getattr(tl.tensor(x), name)(None)
    with pytest.raises(TypeError, match="must be int, not NoneType"):
        getattr(torch.tensor(x), name)(None)  # the behaviour mirrored
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        implicit = getattr(torch.nn.functional, name)(torch.tensor(x), dim=None)
    np.testing.assert_allclose(fn(tl.tensor(x), dim=None).numpy(), implicit.numpy(), rtol=1e-13, atol=0)


def test_a_reduction_dtype_numpy_would_read_loosely_is_refused() -> None:
    """review146 F4: an unresolvable spelling fell back to numpy's ``==``, so ``dtype="float"``
    (refused elsewhere as ambiguous: torch reads float32) passed on a float64 tensor as float64,
    and ``None`` compared equal to float64 (``np.dtype(None)``). An integer tensor's refusal no
    longer offers its own dtype, whose sum is refused anyway."""
    t = tl.tensor(np.array([0.5, 0.25]))
    for spelling in ("float", "nonsense", object):
        with pytest.raises(tl.TensorTypeError, match=r"^Tensor\.sum\(dtype=.*\) \(unsupported tensor dtype"):
            t.sum(dtype=spelling)
    for own in ("float64", "double", np.float64, torch.float64, None):
        assert float(t.sum(dtype=own).numpy()) == 0.75
    accepted = r"\(accepted: dtype=None, on a float tensor\); convert first"
    with pytest.raises(tl.TensorTypeError, match=accepted):
        tl.tensor(np.array([1, 2])).mean(dtype="float64")


def test_hard_masked_softmax_names_its_argument_x() -> None:
    """review223 F6: the refusal of an integer tensor called it "scores", which no argument is."""
    from torchlean.backend.errors import GuardError

    with pytest.raises(GuardError) as caught:
        tl.hard_masked_softmax(tl.tensor(np.ones((2, 3), np.int64)), np.ones((2, 3), bool))
    assert str(caught.value) == "hard_masked_softmax: scores x has dtype int64; accepted: float32 or float64"
