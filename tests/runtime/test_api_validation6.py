"""Documented ``Raises:`` contracts kept at the API boundary (documentation review 6, items 4, 6-9,
11, 12, 14, 17-19): ragged array-likes, non-integer spec axes, huge window parameters, ``concat``
of a non-sequence, a ``safe_log`` eps that rounds away, ``cross_entropy`` targets outside the
classes, a non-config ``flash_attention`` config, wrong planner arguments, datetime state entries,
out-of-range group indices and a non-sequence ``check_dims`` shape.

Oracles: the error class and message each docstring promises; hand-computed values for the calls
that stay accepted (a ``safe_log`` eps that survives float32, the largest accepted window
parameter); torch where the behaviour mirrors it (``torch.cat`` refuses a tensor, torch's pools
refuse window parameters above ``2**31 - 1``).
"""

from __future__ import annotations

import math
import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, Literal

import numpy as np
import pytest
import torch
import torch.nn.functional as F

import torchlean as tl
from torchlean import nn, spec
from torchlean.backend import profiles
from torchlean.backend.acceptance import GroupIndexError, accepted_kernel_of_group
from torchlean.backend.errors import GuardError, TorchLeanError
from torchlean.backend.fields import BackendTypeError, BackendValueError
from torchlean.backend.planner import explain_op, plan_op, plan_ops
from torchlean.backend.providers.reference import spatial_guards
from torchlean.nn.lowering import lower_model
from torchlean.nn.model import StateError
from torchlean.shapes import Shape, ShapeSpecError, check_dims
from torchlean.spec import SpecTypeError, SpecValueError
from torchlean.tensor import TensorError, TensorTypeError
from torchlean.trainer import Trainer, TrainerError

RAGGED_MASK = [[True], [True, False]]
RAGGED_INDEX = [[0], [0, 1]]


def _f() -> tl.Tensor:
    return tl.tensor(np.ones((2, 3)))


# ------------------------------------------------------------------- item 4: ragged array-likes


@pytest.mark.parametrize(
    ("call", "fn", "name"),
    [
        (
            lambda f: tl.scaled_dot_product_attention(f, f, f, RAGGED_MASK),
            "scaled_dot_product_attention",
            "mask",
        ),
        (lambda f: tl.hard_masked_softmax(f, RAGGED_MASK), "hard_masked_softmax", "mask"),
        (lambda f: tl.gather(f, RAGGED_INDEX, 1), "gather", "index"),
        (lambda f: tl.scatter_add(f, RAGGED_INDEX, f, 1), "scatter_add", "index"),
        (lambda f: tl.cross_entropy(f, RAGGED_INDEX), "cross_entropy", "target"),
    ],
)
def test_ragged_functional_array_likes_are_tensor_errors(
    call: Callable[[tl.Tensor], object], fn: str, name: str
) -> None:
    with pytest.raises(TensorError, match=rf"^{fn}: {name} .* is not a rectangular array"):
        call(_f())


def _ones(*shape: int) -> np.ndarray[Any, Any]:
    return np.ones(shape)


@pytest.mark.parametrize(
    ("call", "name"),
    [
        (lambda: spec.scaled_dot_product_attention([[1.0], [1.0, 2.0]], _ones(2, 1), _ones(2, 1)), "q"),
        (lambda: spec.scaled_dot_product_attention(_ones(2, 1), _ones(2, 1), [[1.0], [1.0, 2.0]]), "v"),
        (
            lambda: spec.scaled_dot_product_attention(_ones(2, 1), _ones(2, 1), _ones(2, 1), RAGGED_MASK),
            "mask",
        ),
        (
            lambda: spec.scaled_dot_product_attention_backward(
                _ones(2, 1), _ones(2, 1), _ones(2, 1), [[1.0], [1.0, 2.0]]
            ),
            "d_out",
        ),
        (lambda: spec.hard_masked_softmax([[1.0], [1.0, 2.0]], np.ones((2, 2), bool)), "scores"),
        (lambda: spec.hard_masked_softmax(_ones(2, 2), RAGGED_MASK), "mask"),
        (lambda: spec.flash_attention(_ones(2, 1), _ones(2, 1), _ones(2, 1), RAGGED_MASK), "mask"),
        (
            lambda: spec.flash_attention_backward(
                _ones(2, 1), _ones(2, 1), _ones(2, 1), _ones(2, 1), _ones(2), [[1.0], [1.0, 2.0]]
            ),
            "d_out",
        ),
        (
            lambda: spec.flash_attention_backward(
                _ones(2, 1), _ones(2, 1), _ones(2, 1), _ones(2, 1), [[1.0], [1.0, 2.0]], _ones(2, 1)
            ),
            "lse",
        ),
        (lambda: spec.as_mpf_array([[1.0], [1.0, 2.0]]), "values"),
    ],
)
def test_ragged_spec_inputs_are_spec_value_errors(call: Callable[[], object], name: str) -> None:
    with pytest.raises(SpecValueError, match=rf"^{name} .* is not a rectangular array"):
        call()


def test_ragged_trainer_labels_are_trainer_errors() -> None:
    trainer = Trainer(nn.linear(2, 1))
    with pytest.raises(TrainerError, match=r"^targets .* rectangular array"):
        trainer.fit(np.ones((2, 2)), [[0], [1, 2]])
    with pytest.raises(TrainerError, match=r"^targets .* rectangular array"):
        trainer.evaluate(np.ones((2, 2)), [[0], [1, 2]])
    with pytest.raises(TrainerError, match=r"^targets .* rectangular array"):
        trainer.step(np.ones((2, 2)), [[0], [1, 2]])


# ------------------------------------------------------------------- item 6: spec axis type


@pytest.mark.parametrize("axis", [1.0, "1", True, np.bool_(True), None])
def test_spec_hard_masked_softmax_refuses_a_non_integer_axis(axis: object) -> None:
    with pytest.raises(SpecTypeError, match=r"^axis must be an int"):
        spec.hard_masked_softmax(np.ones((2, 3)), np.ones((2, 3), bool), axis=axis)  # type: ignore[arg-type]


def test_spec_hard_masked_softmax_accepts_a_numpy_integer_axis() -> None:
    out = spec.hard_masked_softmax(np.zeros((2, 2)), np.ones((2, 2), bool), axis=np.int64(0))  # type: ignore[arg-type]
    np.testing.assert_array_equal(out, np.full((2, 2), 0.5))  # two equal scores per column


# ------------------------------------------------------------------- item 7: huge window parameters

LIMIT = spatial_guards.MAX_WINDOW_PARAMETER
X4 = np.ones((1, 2, 4, 4))
W4 = np.ones((1, 2, 2, 2))

WINDOW_CALLS: list[tuple[str, Callable[[tl.Tensor, tl.Tensor, int], tl.Tensor]]] = [
    ("conv_transpose stride", lambda x, w, v: tl.conv_transpose(x, w, stride=v)),
    ("conv_transpose dilation", lambda x, w, v: tl.conv_transpose(x, w, dilation=v)),
    ("max_pool kernel_size", lambda x, w, v: tl.max_pool(x, v)),
    ("max_pool stride", lambda x, w, v: tl.max_pool(x, 2, v)),
    ("max_pool dilation", lambda x, w, v: tl.max_pool(x, 1, 1, 0, v)),
    ("avg_pool stride", lambda x, w, v: tl.avg_pool(x, 2, v)),
    ("avg_pool kernel_size", lambda x, w, v: tl.avg_pool(x, v)),
    ("smooth_max_pool stride", lambda x, w, v: tl.smooth_max_pool(x, 2, 1.0, v)),
]


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("value", [LIMIT + 1, 2**63 - 1, 2**63, 2**200])
@pytest.mark.parametrize(("what", "call"), WINDOW_CALLS)
def test_window_parameters_above_the_bound_are_guard_errors(
    profile: str, value: int, what: str, call: Callable[[tl.Tensor, tl.Tensor, int], tl.Tensor]
) -> None:
    name = what.split()[1]
    with tl.session(profile=profile):
        x = tl.tensor(X4)
        w = tl.tensor(np.ones((2, 1, 2, 2))) if what.startswith("conv_transpose") else tl.tensor(W4)
        with pytest.raises(GuardError, match=rf"{name}={value} .*at most {LIMIT}"):
            call(x, w, value)


CONV_CALLS: list[tuple[str, Callable[[tl.Tensor, tl.Tensor, int], tl.Tensor]]] = [
    ("stride", lambda x, w, v: tl.conv(x, w, stride=v)),
    ("padding", lambda x, w, v: tl.conv(x, w, padding=v)),
    ("dilation", lambda x, w, v: tl.conv(x, w, dilation=v)),
]


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("value", [2**63, 2**200])
@pytest.mark.parametrize(("name", "call"), CONV_CALLS)
def test_conv_parameters_beyond_int64_are_guard_errors(
    profile: str, value: int, name: str, call: Callable[[tl.Tensor, tl.Tensor, int], tl.Tensor]
) -> None:
    expected = rf"{name}={value} .*at most 2\*\*63 - 1"
    with tl.session(profile=profile), pytest.raises(GuardError, match=expected):
        call(tl.tensor(X4), tl.tensor(W4), value)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("stride", [LIMIT + 1, 2**40, 2**63 - 1])
def test_conv_takes_int64_strides_as_torch(profile: str, stride: int) -> None:
    # torch's convolution takes 64-bit strides (the regression review: a 2**31 cap refused them)
    x = np.arange(32.0).reshape(1, 2, 4, 4)
    expected = F.conv2d(torch.from_numpy(x), torch.from_numpy(W4), stride=2**40).numpy()
    assert expected.shape == (1, 1, 1, 1)
    with tl.session(profile=profile):
        np.testing.assert_array_equal(tl.conv(tl.tensor(x), tl.tensor(W4), stride=stride).numpy(), expected)


def test_the_bound_is_torchs_pool_limit() -> None:
    """torch's pools hold window parameters in 32-bit ints: 2**31 - 1 works, 2**31 does not."""
    assert LIMIT == 2**31 - 1
    x = torch.ones(1, 2, 4, 4, dtype=torch.float64)
    assert F.max_pool2d(x, 2, LIMIT).shape == (1, 2, 1, 1)
    with pytest.raises(RuntimeError):
        F.max_pool2d(x, 2, LIMIT + 1)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_window_parameters_at_the_bound_are_accepted(profile: str) -> None:
    with tl.session(profile=profile):
        x = tl.tensor(np.arange(32.0).reshape(1, 2, 4, 4))
        # one window at the origin: the top-left 2x2 block of each channel
        np.testing.assert_array_equal(tl.max_pool(x, 2, LIMIT).numpy(), [[[[5.0]], [[21.0]]]])
        np.testing.assert_array_equal(tl.avg_pool(x, 2, LIMIT).numpy(), [[[[2.5]], [[18.5]]]])
        # a 1x1 kernel reads one element whatever the dilation: the identity per channel sum
        w = tl.tensor(np.ones((1, 2, 1, 1)))
        np.testing.assert_array_equal(
            tl.conv(x, w, dilation=LIMIT).numpy(), np.arange(16.0).reshape(1, 1, 4, 4) * 2 + 16
        )


def test_guard_names_the_huge_value_directly() -> None:
    expected = r"^max_pool: stride=\(1, 9223372036854775808\) .*at most 2147483647"
    with pytest.raises(GuardError, match=expected):
        spatial_guards.check_max_pool(X4, kernel_size=2, stride=(1, 2**63))


# ------------------------------------------------------------------- item 8: concat's argument


def test_concat_refuses_a_tensor_as_torch_cat_does() -> None:
    with pytest.raises(TypeError):
        torch.cat(torch.ones(2, 3))  # type: ignore[arg-type]
    with pytest.raises(TensorTypeError, match=r"^concat: xs must be a sequence of Tensors; got a Tensor"):
        tl.concat(_f())  # type: ignore[arg-type]


@pytest.mark.parametrize("value", [1.5, None, "ab"])
def test_concat_refuses_a_non_sequence(value: object) -> None:
    expected = rf"^concat: xs must be a sequence of Tensors; got .* {type(value).__name__}"
    with pytest.raises(TensorTypeError, match=expected):
        tl.concat(value)  # type: ignore[arg-type]


def test_concat_still_takes_a_list_or_tuple() -> None:
    a, b = tl.tensor(np.array([1.0])), tl.tensor(np.array([2.0, 3.0]))
    np.testing.assert_array_equal(tl.concat([a, b]).numpy(), [1.0, 2.0, 3.0])
    np.testing.assert_array_equal(tl.concat((b, a)).numpy(), [2.0, 3.0, 1.0])


# ------------------------------------------------------------------- item 9: safe_log eps in dtype


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
@pytest.mark.parametrize("eps", [1e-50, 1e39])
def test_safe_log_refuses_an_eps_that_rounds_to_zero_or_inf_in_float32(profile: str, eps: float) -> None:
    x = tl.tensor(np.array([-200.0], np.float32))
    refusal = rf"^safe_log: eps = {re.escape(repr(eps))} rounds to \S+ in x's dtype float32 "
    with tl.session(profile=profile), pytest.raises(GuardError, match=refusal):
        tl.safe_log(x, eps)


def test_safe_log_keeps_the_same_eps_in_float64() -> None:
    out = tl.safe_log(tl.tensor(np.array([0.0])), 1e-50).numpy()
    np.testing.assert_allclose(out, [math.log(math.log(2.0))], rtol=1e-15)  # softplus(0) = log 2


def test_safe_log_smallest_float32_subnormal_eps_stays_finite() -> None:
    tiny = float(np.finfo(np.float32).smallest_subnormal)
    out = tl.safe_log(tl.tensor(np.array([-200.0], np.float32)), tiny).numpy()
    assert np.isfinite(out).all()  # softplus(-200) underflows to 0 in float32; log(eps) remains


# ------------------------------------------------------------------- item 11: cross_entropy targets


@pytest.mark.parametrize("bad", [3, -1])
def test_cross_entropy_names_itself_the_target_and_the_class_range(bad: int) -> None:
    with pytest.raises(GuardError, match=rf"^cross_entropy: target value {bad} is out of range .*\[0, 3\)"):
        tl.cross_entropy(_f(), np.array([bad, 0]))
    with pytest.raises(GuardError, match=rf"^cross_entropy: target value {bad} "):
        tl.cross_entropy(_f(), tl.tensor(np.array([0, bad])))
    # torch's default ignore_index, -100, as a target: named as the ignored id it is (review91 F5)
    with pytest.raises(GuardError, match=r"^cross_entropy: 1 target equals ignore_index=-100, which torch"):
        tl.cross_entropy(_f(), np.array([-100, 0]))


def test_cross_entropy_docstring_says_ignore_index_is_not_supported() -> None:
    assert "ignore_index" in (tl.cross_entropy.__doc__ or "")


def test_cross_entropy_in_range_targets_still_match_torch() -> None:
    logits = np.array([[1.0, 2.0, 0.5], [0.0, -1.0, 3.0]])
    target = np.array([2, 0])
    expected = F.cross_entropy(torch.tensor(logits), torch.tensor(target)).item()
    assert tl.cross_entropy(tl.tensor(logits), target).numpy() == pytest.approx(expected, rel=1e-15)


# ------------------------------------------------------------------- item 12: flash config type


@pytest.mark.parametrize("config", [(2, 2), None, {"block_q": 2}])
def test_flash_attention_refuses_a_config_that_is_not_a_flash_attention_config(config: object) -> None:
    q = np.ones((2, 2))
    for call in (
        lambda: spec.flash_attention(q, q, q, config=config),  # type: ignore[arg-type]
        lambda: spec.flash_attention_forward(q, q, q, config=config),  # type: ignore[arg-type]
        lambda: spec.flash_attention_backward(q, q, q, q, np.ones(2), q, config=config),  # type: ignore[arg-type]
    ):
        with pytest.raises(SpecTypeError, match=r"^config must be a FlashAttentionConfig"):
            call()


# ------------------------------------------------------------------- item 14: planner arguments


def test_planner_refuses_a_policy_that_is_not_a_kernel_policy() -> None:
    registry = profiles.get("checked_cpu").registry()
    with pytest.raises(BackendTypeError, match=r"^policy must be a KernelPolicy, got None \(NoneType\)"):
        plan_op(None, registry, "relu")  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError, match=r"^policy must be a KernelPolicy"):
        plan_ops("checked", registry, ["relu"])  # type: ignore[arg-type]


def test_planner_refuses_a_registry_entry_that_is_not_a_capsule() -> None:
    profile = profiles.get("checked_cpu")
    policy = profile.policy
    with pytest.raises(BackendTypeError, match=r"^registry\[0\] must be a KernelCapsule, got 1 \(int\)"):
        plan_ops(policy, [1], ["relu"])  # type: ignore[list-item]
    with pytest.raises(BackendTypeError, match=r"^registry\[1\] must be a KernelCapsule"):
        plan_op(policy, [profile.registry()[0], "relu"], "relu")  # type: ignore[list-item]
    with pytest.raises(BackendTypeError, match=r"^registry must be an ordered iterable of KernelCapsule"):
        plan_op(policy, None, "relu")  # type: ignore[arg-type]
    zero_d = r"^registry must be an ordered iterable of KernelCapsule, got array\(1\) \(ndarray\) \(a 0-d"
    with pytest.raises(BackendTypeError, match=zero_d):  # numpy's "iteration over a 0-d array" before
        plan_op(policy, np.array(1), "relu")  # type: ignore[arg-type]
    huge = r"^registry must have at most 16777216 entries, got 1099511627776: "
    with pytest.raises(BackendValueError, match=huge):  # listed in full into a MemoryError before
        plan_op(policy, np.broadcast_to(np.int64(1), (2**40,)), "relu")  # type: ignore[arg-type]
    with pytest.raises(BackendTypeError, match=r"^policy must be a KernelPolicy"):
        explain_op(None, profile.availability, profile.registry(), "relu")  # type: ignore[arg-type]


def test_planner_still_plans_from_a_generator_registry() -> None:
    profile = profiles.get("checked_cpu")
    planned = plan_op(profile.policy, (c for c in profile.registry()), "relu")
    assert planned.capsule.op.label == "relu"


# ------------------------------------------------------------------- item 17: load_state dtypes


@pytest.mark.parametrize("dtype", ["datetime64[s]", "timedelta64[s]"])
def test_load_state_refuses_datetime_and_timedelta_arrays(dtype: str) -> None:
    model = nn.build(nn.linear(2, 2))
    before = [p.copy() for p in model.parameters]
    with pytest.raises(StateError, match=rf"^state entry weight has dtype {dtype.split('[')[0]}"):
        model.load_state({"weight": np.array([[1, 2], [3, 4]], dtype=dtype), "bias": np.zeros(2)})
    for old, new in zip(before, model.parameters, strict=True):
        np.testing.assert_array_equal(old, new)


def test_load_state_still_accepts_bool_int_and_float_arrays() -> None:
    model = nn.build(nn.linear(2, 2))
    model.load_state({"weight": np.array([[True, False], [False, True]]), "bias": np.array([1, 2])})
    np.testing.assert_array_equal(model.parameters[0], [[1.0, 0.0], [0.0, 1.0]])
    np.testing.assert_array_equal(model.parameters[1], [1.0, 2.0])


# ------------------------------------------------------------------- item 18: group indices


@pytest.fixture(scope="module")
def accepted_plan() -> Any:
    model = nn.build(nn.sequential(nn.linear(4, 3), nn.relu(), nn.linear(3, 1)), seed=0)
    result = profiles.get("checked_cpu").accept_graph(lower_model(model, (4,)).built.graph)
    assert result.plan is not None
    return result.plan


def test_group_index_refuses_a_negative_one(accepted_plan: Any) -> None:
    n = len(accepted_plan.kernels)
    with pytest.raises(GroupIndexError, match=rf"group index -1 .*\[0, {n}\)"):
        accepted_kernel_of_group(accepted_plan, -1)


@pytest.mark.parametrize("index", [True, False])
def test_group_index_refuses_a_bool_as_no_int(accepted_plan: Any, index: bool) -> None:
    """review129 F8: a bool (an ``int`` to Python and beartype) was refused as "out of range",
    though ``True`` is 1, in range; it is refused as not an int, naming the bool, in a sentence
    that says "an int"."""
    with pytest.raises(BackendTypeError) as refused:
        accepted_kernel_of_group(accepted_plan, index)
    assert str(refused.value) == (
        "accepted_kernel_of_group: group_index must be an int (a Python or numpy integer), got "
        f"{index!r} (bool): a bool is not read as 0/1"
    )


@pytest.mark.parametrize("integer", [np.int64, np.int32, np.uint8])
def test_group_index_takes_a_numpy_integer(accepted_plan: Any, integer: type[np.integer[Any]]) -> None:
    """review129 F8: the index of a numpy integer array (beartype refused it: its hint was ``int``),
    as every other index and axis of the library; out of range it is named by its value."""
    n = len(accepted_plan.kernels)
    for i in (0, n - 1):
        assert accepted_kernel_of_group(accepted_plan, integer(i)) is accepted_plan.kernels[i]
    with pytest.raises(GroupIndexError, match=rf"^accepted_kernel_of_group: group index {n} is out of range"):
        accepted_kernel_of_group(accepted_plan, integer(n))


OPTIMISED_GROUP_INDEX = """\
import numpy as np
from torchlean import nn
from torchlean.backend import profiles
from torchlean.backend.acceptance import accepted_kernel_of_group
from torchlean.nn.lowering import lower_model

model = nn.build(nn.sequential(nn.linear(4, 3), nn.relu()), seed=0)
plan = profiles.get("checked_cpu").accept_graph(lower_model(model, (4,)).built.graph).plan
print(accepted_kernel_of_group(plan, np.int64(0)) is plan.kernels[0])
for index in ("0", 0.0, np.True_):
    try:
        accepted_kernel_of_group(plan, index)
    except TypeError as error:
        print(type(error).__name__, error)
"""


def test_group_index_under_python_o_names_an_int(tmp_path: Path) -> None:
    """Under ``python -O`` beartype checks nothing and the function's own check refuses: "an int"
    (it said "must be a int", and refused a numpy integer)."""
    done = subprocess.run(
        [sys.executable, "-O", "-c", OPTIMISED_GROUP_INDEX], capture_output=True, text=True, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    prefix = (
        "BackendTypeError accepted_kernel_of_group: group_index must be an int (a Python or numpy "
        "integer), got"
    )
    assert done.stdout.splitlines() == [
        "True",
        f"{prefix} '0' (str)",
        f"{prefix} 0.0 (float)",
        f"{prefix} np.True_ (bool): a bool is not read as 0/1",
    ]


def test_group_index_out_of_range_is_an_index_error(accepted_plan: Any) -> None:
    n = len(accepted_plan.kernels)
    assert issubclass(GroupIndexError, IndexError) and issubclass(GroupIndexError, TorchLeanError)
    with pytest.raises(IndexError, match=rf"group index {n} .*\[0, {n}\)"):
        accepted_kernel_of_group(accepted_plan, n)
    assert accepted_kernel_of_group(accepted_plan, n - 1) is accepted_plan.kernels[n - 1]


# ------------------------------------------------------------------- item 19: check_dims


@pytest.mark.parametrize("actual", [3, None, "3", (3.0,), (True,), (-1,)])
def test_check_dims_refuses_an_actual_that_is_not_a_shape(actual: object) -> None:
    with pytest.raises(ShapeSpecError, match=r"^x: actual shape .* is not a sequence of non-negative ints"):
        check_dims(Shape[Literal[3]], actual, what="x")  # type: ignore[arg-type]


def test_check_dims_still_accepts_lists_and_numpy_ints() -> None:
    check_dims(Shape[Literal[3], Literal[2]], [3, 2], what="x")
    check_dims(Shape[Literal[3], Literal[2]], (np.int64(3), 2), what="x")


def test_check_dims_accepts_ranges_and_1d_integer_arrays_as_before() -> None:
    # the old code took any sequence of ints (Trainer documents a 1-d int array as input_shape)
    check_dims(Shape[Literal[3], Literal[4]], np.array([3, 4]), what="x")
    check_dims(Shape[Literal[3], Literal[4]], range(3, 5), what="x")
    for bad in (np.array([[3, 4]]), np.array([True, True]), np.array([3.0, 4.0])):
        with pytest.raises(ShapeSpecError, match=r"is not a sequence of non-negative ints"):
            check_dims(Shape[Literal[3], Literal[4]], bad, what="x")  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("actual", "shown"),
    [
        ({3: 0, 4: 0}, r"\{3: 0, 4: 0\} \(dict\)"),
        ({3, 4}, r"\{3, 4\} \(set\)"),
        (frozenset({3, 4}), r"frozenset\(\{3, 4\}\) \(frozenset\)"),
        ({3: 0, 4: 0}.keys(), r"dict_keys\(\[3, 4\]\) \(dict_keys\)"),
        (iter((3, 4)), r"<tuple_iterator object at 0x[0-9a-f]+> \(tuple_iterator\)"),
        ((d for d in (3, 4)), r"<generator object .*> \(generator\)"),
    ],
    ids=["dict", "set", "frozenset", "dict-keys", "iterator", "generator"],
)
def test_check_dims_refuses_mappings_sets_and_one_shot_iterators(actual: Any, shown: str) -> None:
    """A dict would be read as its keys, a set in hash order, an iterator consumed by the check: each
    matches Shape[3, 4] element for element, yet none is a shape (review17 F8)."""
    with pytest.raises(ShapeSpecError) as error:
        check_dims(Shape[Literal[3], Literal[4]], actual, what="x")
    assert re.fullmatch(
        rf"x: actual shape {shown} is not a sequence of non-negative ints \(accepted: a tuple, list, "
        r"range or 1-d integer numpy array or torch tensor, such as an array's \.shape\)",
        str(error.value),
    ), str(error.value)


@pytest.mark.parametrize("actual", [b"\x03\x04", bytearray(b"\x03\x04"), memoryview(b"\x03\x04")],
                         ids=["bytes", "bytearray", "memoryview"])
def test_check_dims_refuses_binary_data_alike(actual: Any) -> None:
    """review217 F5: bytes was refused while a bytearray or memoryview of the same bytes was read as
    the shape (3, 4); binary data is no shape, whichever type holds it."""
    with pytest.raises(ShapeSpecError) as info:
        check_dims(Shape[Literal[3], Literal[4]], actual, what="x")
    assert str(info.value) == (
        f"x: actual shape b'\\x03\\x04' ({type(actual).__name__}) is binary data, not a shape (accepted: a "
        "tuple, list, range or 1-d integer numpy array or torch tensor, such as an array's .shape)"
    )


def test_check_dims_accepts_an_array_array_of_ints_and_a_memoryview_of_one() -> None:
    """review225 F7: a memoryview of an int array holds that array's ints, no binary data."""
    import array

    check_dims(Shape[Literal[3], Literal[4]], array.array("q", [3, 4]), what="x")
    check_dims(Shape[Literal[3], Literal[4]], memoryview(np.array([3, 4])), what="x")
    check_dims(Shape[Literal[3], Literal[4]], memoryview(array.array("q", [3, 4])), what="x")
    released = memoryview(np.array([3, 4]))
    released.release()  # review228 F8: a bare ValueError; a float view was shown by its address
    for view, shown in ((released, "is a memoryview that cannot be read (operation forbidden on released "
                                   "memoryview object)"),
                        (memoryview(np.array([3.0, 4.0])), "[3.0, 4.0] (memoryview) is not a sequence of "
                                                           "non-negative ints"),
                        (memoryview(np.array([True, True])), "[True, True] (memoryview) is not a sequence of "
                                                             "non-negative ints")):  # review231 F7: bools
        with pytest.raises(ShapeSpecError) as info:
            check_dims(Shape[Literal[3], Literal[4]], view, what="x")
        assert str(info.value).startswith(f"x: actual shape {shown} (accepted: a tuple"), str(info.value)


def test_check_dims_accepts_the_values_of_a_dict_and_a_tensor() -> None:
    """Re-iterable, ordered, one axis: still shapes (control for the refusals above)."""
    check_dims(Shape[Literal[3], Literal[4]], {"a": 3, "b": 4}.values(), what="x")  # type: ignore[arg-type]
    check_dims(Shape[Literal[3], Literal[4]], torch.tensor([3, 4]), what="x")


def test_check_dims_type_hints_resolve_at_run_time() -> None:
    """``typing.get_type_hints`` (beartype, pydantic, Sphinx) raised ``NameError: name 'npt' is not
    defined`` once the annotation named numpy and torch types imported only for mypy (review17
    diff F7); it resolves without importing either."""
    import typing

    from torchlean import shapes

    hints = typing.get_type_hints(shapes.check_dims)
    assert set(hints) == {"shape", "actual", "what", "return"} and hints["what"] is str


def _torch_wrong(call: Callable[[], torch.Tensor], extent: int) -> bool:
    """Whether torch's CPU convolution ``call`` fails, or returns another extent than ``extent``,
    the one its sizes give in exact arithmetic."""
    try:
        return call().shape[-1] != extent
    except RuntimeError:
        return True


_SPANS = [  # (x length, kernel, conv keywords, the span n + 2p - d(k-1) - 1, the exact output extent)
    (3, 1, {"padding": 10**10}, 20_000_000_002, 20_000_000_003),
    (3, 1, {"padding": 2**30}, 2**31 + 2, 2**31 + 3),
    (5, 3, {"stride": 8589934593, "padding": 2**31, "dilation": 5}, 2**32 - 6, 1),  # review201 F1
    (1, 1, {"stride": 2**40, "padding": 2**31 - 4}, 2**32 - 8, 1),
]


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu", "libtorch_forward_cpu"])
@pytest.mark.parametrize(("n", "k", "keywords", "span", "extent"), _SPANS)
def test_a_conv_span_beyond_int32_is_a_guard_error(
    profile: str, n: int, k: int, keywords: dict[str, int], span: int, extent: int
) -> None:
    """review199 F1, review201 F1: under fast_cpu, ``input + 2*padding - dilation*(kernel - 1) -
    1`` beyond 2**31 - 1 escaped as torch's ``RuntimeError`` ("Calculated output size ... -2147483645",
    its 32-bit arithmetic wrapped) or, with a stride, gave a wrong (empty) shape; checked_cpu tried
    to allocate it. Every profile refuses it. The oracle: torch itself, failing or wrong on it (the
    stride cases only: the others would allocate gigabytes)."""
    x, w = np.ones((1, 1, n)), np.ones((1, 1, k))
    if "stride" in keywords:
        assert _torch_wrong(lambda: F.conv1d(torch.from_numpy(x), torch.from_numpy(w), **keywords), extent)
    with tl.session(profile=profile), pytest.raises(GuardError) as caught:
        tl.conv(tl.tensor(x), tl.tensor(w), **keywords)
    assert str(caught.value) == (
        f"conv: input + 2*padding - dilation*(kernel - 1) - 1 = {span} on spatial axis 0 is too large "
        "(accepted: at most 2147483647 = 2**31 - 1 for a non-empty batch; ATen's convolution computes it "
        "in 32-bit ints)"
    )


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_the_largest_span_and_an_empty_batch_compute_as_torch(profile: str) -> None:
    """The bound is the span's, not the output extent's: a stride shrinks a span of 2**31 - 1 to one
    position, which torch computes; an empty batch computes nothing and keeps torch's shape."""
    x, w = np.arange(1.0, 4.0).reshape(1, 1, 3), np.ones((1, 1, 1))
    padding, stride = 2**30 - 2, 2**31 - 1  # span 3 + 2**31 - 4 - 1 = 2**31 - 2: positions 0 and 2**31 - 2
    expected = F.conv1d(torch.from_numpy(x), torch.from_numpy(w), stride=stride, padding=padding).numpy()
    assert expected.shape == (1, 1, 1)
    with tl.session(profile=profile):
        got = tl.conv(tl.tensor(x), tl.tensor(w), stride=stride, padding=padding).numpy()
    np.testing.assert_array_equal(got, expected)
    empty = np.ones((0, 1, 3))
    shape = F.conv1d(torch.from_numpy(empty), torch.from_numpy(w), padding=2**30).shape
    with tl.session(profile=profile):
        assert tl.conv(tl.tensor(empty), tl.tensor(w), padding=2**30).shape == tuple(shape)


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_a_conv_transpose_effective_kernel_beyond_int32_is_a_guard_error(profile: str) -> None:
    """review201 F1: ``dilation*(kernel - 1) + 1`` of 2**31 made torch's transposed convolution
    compute "output size -4294967240" (the true extent is 56); it is refused under every profile."""
    x, w = np.ones((1, 1, 3)), np.ones((1, 1, 2))
    keywords = {"padding": 1073741797, "dilation": 2**31 - 1}
    assert _torch_wrong(lambda: F.conv_transpose1d(torch.from_numpy(x), torch.from_numpy(w), **keywords), 56)
    with tl.session(profile=profile), pytest.raises(GuardError) as caught:
        tl.conv_transpose(tl.tensor(x), tl.tensor(w), **keywords)
    assert str(caught.value) == (
        "conv_transpose: dilation*(kernel - 1) + 1 = 2147483648 on spatial axis 0 is too large (accepted: at "
        "most 2147483647 = 2**31 - 1; ATen's transposed convolution computes it in 32-bit ints)"
    )


@pytest.mark.parametrize("profile", ["checked_cpu", "fast_cpu"])
def test_a_conv_transpose_padding_whose_double_passes_int32_is_a_guard_error(profile: str) -> None:
    """review203 F2, review204 F1: ``2*padding`` beyond 2**31 - 1 gave a right forward whose
    backward failed with torch's raw ``RuntimeError`` (torch's shape check takes 32-bit sizes; its
    own autograd fails alike: the oracle below); it is refused before the forward, for a
    non-empty batch. A long ``(input - 1)*stride`` with a smaller padding computes as torch's."""
    x = np.ones((1, 1, 2))
    w = np.ones((1, 1, 2))
    keywords = {"stride": 2147483629, "padding": 2147483628, "output_padding": 1, "dilation": 2147483629}
    xt = torch.tensor(x, requires_grad=True)
    y = F.conv_transpose1d(xt, torch.from_numpy(w), **keywords)
    with pytest.raises(RuntimeError):
        y.sum().backward()
    with tl.session(profile=profile), pytest.raises(GuardError) as caught:
        tl.conv_transpose(tl.tensor(x), tl.tensor(w), **keywords)
    assert str(caught.value) == (
        "conv_transpose: 2*padding = 4294967256 on spatial axis 0 is too large (accepted: at most "
        "2147483647 = 2**31 - 1 for a non-empty batch; the backward of ATen's transposed convolution "
        "computes it in 32-bit ints)"
    )
    # (input - 1)*stride past 2**31 - 1, 2*padding below it: torch's forward and backward, bit for bit
    x = np.arange(1.0, 4.0).reshape(1, 1, 3)
    w = np.ones((1, 1, 1))
    keywords = {"stride": 1073741829, "padding": 1073741823}
    xt = torch.tensor(x, requires_grad=True)
    y = F.conv_transpose1d(xt, torch.from_numpy(w), **keywords)
    y.sum().backward()
    with tl.session(profile=profile):
        ours = tl.tensor(x, requires_grad=True)
        out = tl.conv_transpose(ours, tl.tensor(w), **keywords)
        out.sum().backward()
    np.testing.assert_array_equal(out.numpy(), y.detach().numpy())
    assert ours.grad is not None
    np.testing.assert_array_equal(ours.grad.numpy(), xt.grad.numpy())
