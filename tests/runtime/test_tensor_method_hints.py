"""``Tensor.add/sub/mul/div/square`` against torch float64 (values and gradients), ``pow`` refused
as ``**`` is, and the hints an absent torch attribute (``t.argmax``, ``t.float()``) gets
(review27_user F4); unknown attributes stay plain ``AttributeError``s, so copying and pickling
are unaffected."""

from __future__ import annotations

import copy
import pickle

import numpy as np
import pytest
import torch

import torchlean as tl

CASES = [
    ("add", lambda a, b: a.add(b)),
    ("sub", lambda a, b: a.sub(b)),
    ("mul", lambda a, b: a.mul(b)),
    ("div", lambda a, b: a.div(b)),
    ("square", lambda a, b: a.square() + b),
    ("add-number", lambda a, b: a.add(0.5) * b),
]


@pytest.mark.parametrize(("name", "call"), CASES, ids=[c[0] for c in CASES])
def test_arithmetic_methods_match_torch(name, call):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((3, 4)), rng.uniform(0.5, 2.0, (3, 4))
    cot = rng.standard_normal((3, 4))
    with tl.session(profile="checked_cpu"):
        ta, tb = tl.tensor(a, requires_grad=True), tl.tensor(b, requires_grad=True)
        out = call(ta, tb)
        (out * tl.tensor(cot)).sum().backward()
    pa, pb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    expected = call(pa, pb)
    (expected * torch.tensor(cot)).sum().backward()
    np.testing.assert_allclose(out.numpy(), expected.detach().numpy(), rtol=2e-16 * 4, atol=0)
    assert ta.grad is not None and tb.grad is not None
    np.testing.assert_allclose(ta.grad.numpy(), pa.grad.numpy(), rtol=1e-15, atol=1e-16)
    np.testing.assert_allclose(tb.grad.numpy(), pb.grad.numpy(), rtol=1e-15, atol=1e-16)


def test_pow_is_refused_as_the_operator_is():
    x = tl.tensor(np.ones(2))
    with pytest.raises(tl.TensorTypeError, match=r"not an op of the backend catalog.*t \* t for t \*\* 2"):
        x.pow(2)


@pytest.mark.parametrize(
    ("name", "hint"),
    [
        ("argmax", r"np\.argmax\(t\.numpy\(\), axis\)"),
        ("max", r"no max reduction.*np\.max\(t\.numpy\(\), axis\)"),
        ("float", r"torchlean\.tensor\(t\.numpy\(\), dtype='float32'\)"),
        ("double", r"dtype='float64'"),
        ("norm", r"\(t \* t\)\.sum\(\)\.sqrt\(\)"),
        ("mT", r"t\.transpose\(-2, -1\)"),
    ],
)
def test_absent_torch_attributes_get_a_hint(name, hint):
    x = tl.tensor(np.ones((2, 2)))
    with pytest.raises(AttributeError, match=rf"^'Tensor' object has no attribute '{name}': .*{hint}"):
        getattr(x, name)


def test_the_hinted_spellings_work():
    x = tl.tensor(np.array([[3.0, 4.0]]))
    assert float((x * x).sum().sqrt()) == 5.0
    assert x.transpose(-2, -1).shape == (2, 1)


def test_other_attributes_stay_plain_and_copies_work():
    x = tl.tensor(np.arange(3.0))
    with pytest.raises(AttributeError, match=r"^'Tensor' object has no attribute 'nonsense'$"):
        _ = x.nonsense
    assert not hasattr(x, "__array_interface__")
    assert np.array_equal(copy.deepcopy(x).numpy(), x.numpy())
    assert np.array_equal(pickle.loads(pickle.dumps(x)).numpy(), x.numpy())


# ------------------------------------------------ every hint names code that runs (review30 F2)

MASK = np.array([[True, False, True], [False, False, True]])
SLICES = "[t[i:i + size] for i in range(0, len(t), size)]"


def _namespace() -> dict[str, object]:
    """The names the hints' code uses: ``t`` and ``other`` positive float64 (2, 3) tensors (so
    ``log``/``sqrt`` stay real), ``mask``/``condition`` numpy bool arrays of their shape, ..."""
    rng = np.random.default_rng(0)
    return {
        "np": np, "torchlean": tl,
        "t": tl.tensor(rng.uniform(0.5, 2.0, (2, 3))), "other": tl.tensor(rng.uniform(0.5, 2.0, (2, 3))),
        "axis": 1, "dim": 1, "value": 0.5, "k": 2, "n": 3, "size": 1, "chunks": 2, "shape": (2, 2),
        "data": [[1.0, 2.0]], "lo": 0.7, "hi": 1.5, "mask": MASK, "condition": MASK,
        "index": np.array([1, 0, 1]),
    }  # fmt: skip


def _in_place_arithmetic(op: str) -> list[str]:
    return [f"t {op}= other", f"t = t {op} other"]


def _in_place_method(call: str) -> list[str]:
    return [f"t = t.{call}", f"t.copy_(t.{call})"]


def _dtype_copy(dtype: str) -> list[str]:
    return [f"torchlean.tensor(t.numpy(), dtype={dtype!r})"]


# name -> (setup run first, not in the message; the code the message names, run in this order)
HINTED: dict[str, tuple[str, list[str]]] = {
    "max": ("", ["np.max(t.numpy(), axis)"]),
    "min": ("", ["np.min(t.numpy(), axis)"]),
    "amax": ("", ["np.amax(t.numpy(), axis)"]),
    "amin": ("", ["np.amin(t.numpy(), axis)"]),
    "argmax": ("", ["np.argmax(t.numpy(), axis)"]),
    "argmin": ("", ["np.argmin(t.numpy(), axis)"]),
    "argsort": ("", ["np.argsort(t.numpy(), axis)"]),
    "sort": ("", ["np.sort(t.numpy(), axis)"]),
    "topk": ("", ["np.argsort(-t.numpy(), axis=-1)[..., :k]"]),
    "norm": ("", ["(t * t).sum().sqrt()"]),
    "var": ("", ["((t - t.mean(dim, keepdim=True)).square()).sum(dim) / (n - 1)"]),
    "std": ("", ["(((t - t.mean(dim, keepdim=True)).square()).sum(dim) / (n - 1)).sqrt()"]),
    "prod": ("", ["np.prod(t.numpy(), axis)", "t.log().sum(dim).exp()"]),
    "cumsum": ("", [
        "t @ torchlean.tensor(np.triu(np.ones((t.shape[-1], t.shape[-1]))), dtype=t.dtype)",
        "np.cumsum(t.numpy(), axis)",
    ]),
    **{name: ("", [f"np.{name}(t.numpy())"]) for name in ("all", "any", "isnan", "isinf", "isfinite")},
    **{
        name: ("", [f"t.numpy() {symbol} other.numpy()"])
        for name, symbol in (
            ("eq", "=="), ("ne", "!="), ("lt", "<"), ("le", "<="), ("gt", ">"), ("ge", ">=")
        )
    },
    **{
        name: ("", [f"torchlean.tensor(np.{name}(t.numpy()))"])
        for name in ("floor", "ceil", "round", "trunc", "sign")
    },
    **{
        name: ("other = other.numpy()",  # the message says other.numpy() for a Tensor other
               [f"torchlean.tensor(np.{name}(t.numpy(), other))"])
        for name in ("floor_divide", "remainder", "fmod")
    },
    **{
        name: ("t = torchlean.tensor(mask); other = torchlean.tensor(~mask)",
               [f"torchlean.tensor(np.{name}(t.numpy(), np.asarray(other)))"])
        for name in ("logical_and", "logical_or", "logical_xor", "bitwise_and", "bitwise_or", "bitwise_xor")
    },
    "logical_not": ("", ["torchlean.tensor(np.logical_not(t.numpy()))"]),
    "maximum": ("", ["torchlean.maximum(t, other)"]),
    "minimum": ("", ["torchlean.minimum(t, other)"]),
    "log1p": ("", ["(1 + t).log()", "torchlean.softplus(t.log())"]),
    "rsqrt": ("", ["t.sqrt().reciprocal()"]),
    "tan": ("", ["t.sin() / t.cos()"]),
    "mm": ("other = torchlean.tensor(np.ones((3, 4)))", ["t @ other", "t.matmul(other)"]),
    "bmm": ("t = torchlean.tensor(np.ones((2, 2, 3))); other = torchlean.tensor(np.ones((2, 3, 4)))",
            ["t @ other", "t.matmul(other)"]),
    "mT": ("", ["t.transpose(-2, -1)"]),
    "view_as": ("", ["t.reshape_as(other)", "t.reshape(other.shape)"]),
    "where": ("", ["keep = torchlean.tensor(condition, dtype=t.dtype)", "t * keep + other * (1 - keep)"]),
    "masked_fill": ("", [
        "torchlean.hard_masked_softmax(t, ~mask, dim)",
        "keep = torchlean.tensor(~mask, dtype=t.dtype)",
        "t * keep + value * (1 - keep)",
    ]),
    "index_select": ("", [
        "t.gather(1, np.broadcast_to(index, (t.shape[0], len(index))))", "torchlean.embedding(index, t)",
    ]),
    "unbind": ("", ["list(t)", "[t[:, i] for i in range(t.shape[1])]"]),
    "split": ("", [SLICES]),
    "chunk": ("", ["size = -(-len(t) // chunks)", SLICES]),
    "repeat": ("", ["torchlean.concat([t] * n, axis)"]),
    "float": ("", _dtype_copy("float32")),
    "double": ("", _dtype_copy("float64")),
    "half": ("", _dtype_copy("float32")),
    "long": ("", _dtype_copy("int64")),
    "int": ("", _dtype_copy("int64")),
    "bool": ("", _dtype_copy("bool")),
    "type_as": ("", ["torchlean.tensor(t.numpy(), dtype=other.dtype)"]),
    "cpu": ("", ["t.to('cpu')"]),
    "cuda": ("", ["t.to('cuda')"]),
    "is_cuda": ("", ["t.device.startswith('cuda')"]),
    "is_floating_point": ("", ["t.dtype.kind == 'f'"]),
    "is_contiguous": ("", ["t.contiguous() is t"]),
    "data": ("", ["t.detach()"]),
    "detach_": ("", ["t = t.detach()"]),
    "retain_grad": ("leaf = torchlean.tensor(np.ones(3), requires_grad=True); t = leaf * 2; "
                    "f = lambda h: (h * h).sum()",
                    ["h = t.detach().requires_grad_()", "loss = f(h)", "loss.backward()",
                     "t.backward(h.grad)"]),
    "register_hook": ("leaf = torchlean.tensor(np.ones(3), requires_grad=True); t = leaf * 2; "
                      "f = lambda h: (h * h).sum()",
                      ["h = t.detach().requires_grad_()", "loss = f(h)", "loss.backward()",
                       "t.backward(h.grad)"]),
    "new_zeros": ("", ["torchlean.tensor(np.zeros(shape), dtype=t.dtype, device=t.device)"]),
    "new_ones": ("", ["torchlean.tensor(np.ones(shape), dtype=t.dtype, device=t.device)"]),
    "new_full": ("", ["torchlean.tensor(np.full(shape, value), dtype=t.dtype, device=t.device)"]),
    "new_tensor": ("", ["torchlean.tensor(data, dtype=t.dtype, device=t.device)"]),
    "add_": ("", _in_place_arithmetic("+")),
    "sub_": ("", _in_place_arithmetic("-")),
    "mul_": ("", _in_place_arithmetic("*")),
    "div_": ("", _in_place_arithmetic("/")),
    **{
        f"{name}_": ("", _in_place_method(f"{name}()"))
        for name in (
            "relu", "exp", "log", "sqrt", "abs", "neg", "tanh", "sigmoid", "sin", "cos", "reciprocal"
        )
    },
    "clamp_": ("", _in_place_method("clamp(lo, hi)")),
    "clip_": ("", _in_place_method("clamp(lo, hi)")),
    "scatter_add_": ("index = np.array([[0, 1, 0], [2, 0, 1]]); src = other",
                     _in_place_method("scatter_add(dim, index, src)")),
    "fill_": ("", ["t.copy_(value)"]),
    "normal_": ("", ["t.copy_(np.random.default_rng(0).normal(0.0, 1.0, t.shape))"]),
    "uniform_": ("", ["t.copy_(np.random.default_rng(0).uniform(-1.0, 1.0, t.shape))"]),
    "masked_fill_": ("", ["t[mask] = value"]),
}  # fmt: skip


def test_every_hinted_attribute_is_tested_and_absent() -> None:
    """The table here and the library's agree, so a new hint needs its code run below; and no hinted
    name is an attribute of Tensor (a method added later would leave its hint dead)."""
    from torchlean.tensor import _TORCH_METHOD_HINTS, Tensor

    assert set(HINTED) == set(_TORCH_METHOD_HINTS)
    assert not [name for name in HINTED if hasattr(Tensor, name)]


@pytest.mark.parametrize("name", sorted(HINTED))
def test_the_hint_names_code_that_runs(name: str) -> None:
    setup, snippets = HINTED[name]
    namespace = _namespace()
    with pytest.raises(AttributeError) as caught:
        getattr(namespace["t"], name)
    message = str(caught.value)
    assert message.startswith(f"'Tensor' object has no attribute '{name}': ")
    for code in snippets:
        assert code in message, (code, message)
    exec(setup, namespace)
    for code in snippets:
        if name == "cuda" and not torch.cuda.is_available():
            with pytest.raises(tl.DeviceError, match="CUDA"):  # the code is right; this machine has no CUDA
                exec(code, namespace)
            continue
        exec(code, namespace)


def test_the_hinted_compositions_are_torchs_values() -> None:
    """Where a hint says its code is torch's op (``where``, ``masked_fill``, ``cumsum``, ``var``,
    ``std``, ``log1p``, ``topk``, ``index_select``, ``prod``), float64 values against torch."""
    namespace = _namespace()
    t, other = namespace["t"], namespace["other"]
    assert isinstance(t, tl.Tensor) and isinstance(other, tl.Tensor)
    pt, po = torch.tensor(t.numpy()), torch.tensor(other.numpy())
    tm = torch.tensor(MASK)

    def run(code: str) -> np.ndarray:
        value = eval(code, dict(namespace))
        return value.numpy() if isinstance(value, tl.Tensor) else np.asarray(value)

    close = lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-13, atol=1e-15)  # noqa: E731
    keep, not_mask = "torchlean.tensor(condition, dtype=t.dtype)", "torchlean.tensor(~mask, dtype=t.dtype)"
    close(run(f"t * {keep} + other * (1 - {keep})"), torch.where(tm, pt, po).numpy())
    close(run(f"t * {not_mask} + value * (1 - {not_mask})"), pt.masked_fill(tm, 0.5).numpy())
    softmaxed = pt.masked_fill(tm, float("-inf")).softmax(1).numpy()
    close(run("torchlean.hard_masked_softmax(t, ~mask, dim)"), softmaxed)
    cumsum = "t @ torchlean.tensor(np.triu(np.ones((t.shape[-1], t.shape[-1]))), dtype=t.dtype)"
    close(run(cumsum), pt.cumsum(-1).numpy())
    close(run("((t - t.mean(dim, keepdim=True)).square()).sum(dim) / (n - 1)"), pt.var(1).numpy())
    close(run("(((t - t.mean(dim, keepdim=True)).square()).sum(dim) / (n - 1)).sqrt()"), pt.std(1).numpy())
    close(run("torchlean.softplus(t.log())"), pt.log1p().numpy())
    close(run("(1 + t).log()"), pt.log1p().numpy())
    close(run("t.log().sum(dim).exp()"), pt.prod(1).numpy())
    close(run("t.sqrt().reciprocal()"), pt.rsqrt().numpy())
    close(run("t.sin() / t.cos()"), pt.tan().numpy())
    np.testing.assert_array_equal(run("np.argsort(-t.numpy(), axis=-1)[..., :k]"), pt.topk(2).indices.numpy())
    index = torch.tensor(namespace["index"])
    rows, columns = pt.index_select(0, index).numpy(), pt.index_select(1, index).numpy()
    np.testing.assert_array_equal(run("torchlean.embedding(index, t)"), rows)
    np.testing.assert_array_equal(run("np.take(t.numpy(), index, axis=dim)"), columns)
    tiny = tl.tensor(np.array([1e-12, 3e-9]))  # where (1 + t).log() rounds: the accurate spelling
    np.testing.assert_allclose(tl.softplus(tiny.log()).numpy(), np.log1p(tiny.numpy()), rtol=4e-15)
    rounded = (1 + tiny).log().numpy()
    assert abs(rounded[0] / np.log1p(1e-12) - 1) > 1e-5  # "loses precision for small |t|", as said


def test_the_retain_grad_hint_gives_torchs_gradients() -> None:
    """review33 F2: the hint's cut (``h = t.detach().requires_grad_()``, ``loss = f(h)``,
    ``loss.backward()``, ``t.backward(h.grad)``) gives torch's ``t.retain_grad()`` gradient in
    ``h.grad`` and the leaf's gradient in ``leaf.grad``, float64."""
    values = np.array([[0.5, -1.25, 2.0], [3.0, 0.75, -0.5]])
    leaf = tl.tensor(values, requires_grad=True)
    t = (leaf * leaf).sin()
    h = t.detach().requires_grad_()
    loss = (h.exp() * h).sum()
    loss.backward()
    assert h.grad is not None
    t.backward(h.grad)
    torch_leaf = torch.tensor(values, requires_grad=True)
    torch_t = (torch_leaf * torch_leaf).sin()
    torch_t.retain_grad()
    (torch_t.exp() * torch_t).sum().backward()
    assert torch_t.grad is not None and torch_leaf.grad is not None and leaf.grad is not None
    np.testing.assert_allclose(h.grad.numpy(), torch_t.grad.numpy(), rtol=1e-15)
    np.testing.assert_allclose(leaf.grad.numpy(), torch_leaf.grad.numpy(), rtol=1e-14)


def test_in_place_hints_are_refused_as_they_say_on_a_tensor_that_requires_grad() -> None:
    """The in-place hints say "under torchlean.no_grad() when t requires grad": without it the
    write is refused, with it it runs."""
    p = tl.tensor(np.ones(3), requires_grad=True)
    with pytest.raises(tl.AutogradError):
        p.copy_(p.relu())
    with pytest.raises(tl.AutogradError):
        p += tl.tensor(np.ones(3))
    with tl.no_grad():
        p.copy_(p.relu())
        p += tl.tensor(np.ones(3))
        p[np.array([True, False, True])] = 0.5
    np.testing.assert_array_equal(p.numpy(), [0.5, 2.0, 0.5])


def test_the_register_hook_hint_edits_a_gradient_as_a_torch_hook_does() -> None:
    """review51 F2: the hint's cut, with h.grad edited before ``t.backward(h.grad)``, gives the
    leaf the gradient torch gives with ``t.register_hook(lambda g: 2 * g)``, float64."""
    values = np.array([0.5, -1.25, 2.0])
    leaf = tl.tensor(values, requires_grad=True)
    t = (leaf * leaf).sin()
    h = t.detach().requires_grad_()
    (h.exp() * h).sum().backward()
    assert h.grad is not None
    t.backward(h.grad * 2.0)
    torch_leaf = torch.tensor(values, requires_grad=True)
    torch_t = (torch_leaf * torch_leaf).sin()
    torch_t.register_hook(lambda g: 2 * g)
    (torch_t.exp() * torch_t).sum().backward()
    assert torch_leaf.grad is not None and leaf.grad is not None
    np.testing.assert_allclose(leaf.grad.numpy(), torch_leaf.grad.numpy(), rtol=1e-14)


_FLOATS = (
    "t = torchlean.tensor(np.array([[-3.5, 2.25, 7.0], [-0.5, 5.5, -8.0]], np.float32)); "
    "other = torchlean.tensor(np.array([[2.0, -1.5, 3.0], [-2.0, 2.0, 3.0]], np.float32))"
)
_ARRAY = "; other = other.numpy()"  # a numpy array on the left: Python calls t's reflected method
_MASKS = "t = torchlean.tensor(mask); other = ~mask"
_MODULAR = "torchlean.tensor(np.{name}({operands}))"
_TENSOR, _VALUE, _REFLECTED = "t.numpy(), other.numpy()", "t.numpy(), other", "other, t.numpy()"
_INTS = "t = torchlean.tensor(np.array([13, -7, 5]))"

# the refused expression -> (setup; the code its message names; torch's value of that expression,
# with a = t and b = other as torch tensors; whether torch's dtype is numpy's): float32 operands
# with negative entries, for the signs of // and % and for the dtype (review82 F1-F3: the reflected
# forms' code had its operands swapped, np.asarray(other) made float64, `other.numpy()` failed on a
# numpy mask; review84 F3: np.asarray(other, t.dtype) truncated a float for an int64 t)
_OPERATORS: dict[str, tuple[str, str, str, bool]] = {
    "t // other": (_FLOATS, _MODULAR.format(name="floor_divide", operands=_TENSOR), "(a // b,)", True),
    "other // t": (_FLOATS + _ARRAY,
                   _MODULAR.format(name="floor_divide", operands=_REFLECTED), "(b // a,)", True),
    "t // 2": (_FLOATS + "; other = 2",
               _MODULAR.format(name="floor_divide", operands=_VALUE), "(a // 2,)", True),
    "t // 2.5": (_INTS + "; other = 2.5", _MODULAR.format(name="floor_divide", operands=_VALUE),
                 "(a // 2.5,)", False),  # torch: float32 (its default dtype); numpy: float64
    "t % other": (_FLOATS, _MODULAR.format(name="remainder", operands=_TENSOR), "(a % b,)", True),
    "other % t": (_FLOATS + _ARRAY, _MODULAR.format(name="remainder", operands=_REFLECTED), "(b % a,)", True),
    "2.0 % t": (_FLOATS + "; other = 2.0",
                _MODULAR.format(name="remainder", operands=_REFLECTED), "(b % a,)", True),
    "divmod(t, other)": (_FLOATS, f"np.divmod({_TENSOR})", "(a // b, a % b)", True),
    "divmod(other, t)": (_FLOATS + _ARRAY, f"np.divmod({_REFLECTED})", "(b // a, b % a)", True),
    "round(t)": (_FLOATS, "torchlean.tensor(np.round(t.numpy()))", "(torch.round(a),)", True),
    "round(t, 1)": (_FLOATS,
                    "torchlean.tensor(np.round(t.numpy(), 1))", "(torch.round(a, decimals=1),)", True),
    "~t": (_MASKS, "torchlean.tensor(~t.numpy())", "(~a,)", True),
    "t & other": (_MASKS, "torchlean.tensor(t.numpy() & np.asarray(other))", "(a & b,)", True),
    "other & t": (_MASKS, "torchlean.tensor(np.asarray(other) & t.numpy())", "(b & a,)", True),
    "t | other": (_MASKS, "torchlean.tensor(t.numpy() | np.asarray(other))", "(a | b,)", True),
    "True | t": (_MASKS + "; other = True",
                 "torchlean.tensor(np.asarray(other) | t.numpy())", "(b | a,)", True),
    "t ^ other": (_MASKS, "torchlean.tensor(t.numpy() ^ np.asarray(other))", "(a ^ b,)", True),
    "other ^ t": (_MASKS, "torchlean.tensor(np.asarray(other) ^ t.numpy())", "(b ^ a,)", True),
}  # fmt: skip


@pytest.mark.parametrize("expression", list(_OPERATORS))
def test_refused_operators_name_numpy_code_that_gives_torchs_values(expression: str) -> None:
    """review81 F4: ``t // 2``, ``t % 2``, ``divmod``, ``round``, ``~mask`` and ``mask & other``
    raised Python's bare "unsupported operand" errors (``**`` and comparisons had hints). Each is
    now a ``TensorTypeError`` naming numpy code; that code runs and gives torch's values and
    dtype, reflected forms included (``other`` a Tensor, a numpy array or a Python number)."""
    setup, code, torch_code, same_dtype = _OPERATORS[expression]
    namespace = _namespace()
    exec(setup, namespace)
    with pytest.raises(tl.TensorTypeError) as caught:
        eval(expression, namespace)
    assert code in str(caught.value)
    ours = eval(code, namespace)
    ours = ours if isinstance(ours, tuple) else (ours,)
    a, other = torch.tensor(namespace["t"].numpy()), namespace["other"]
    b = torch.tensor(np.asarray(other)) if isinstance(other, tl.Tensor | np.ndarray) else other
    theirs = eval(torch_code, {"torch": torch, "a": a, "b": b})
    for mine, expected in zip(ours, theirs, strict=True):
        got = np.asarray(mine)
        assert got.dtype == expected.numpy().dtype or not same_dtype, expression
        np.testing.assert_array_equal(got, expected.numpy(), strict=False)
