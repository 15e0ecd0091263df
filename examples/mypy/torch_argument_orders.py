"""Where torchlean's functional order differs from torch's, type checkers see it too:
``tl.batch_norm`` takes x positionally and every other argument by keyword (torch's
``batch_norm(input, running_mean, running_var, weight, bias, training)`` order would run with the
statistics as weight and bias), so a call in torch's order is an error here as at run time;
``tl.conv_transpose`` takes torch's order (``groups`` before ``dilation``). ``tl.layer_norm``
takes a count of trailing axes, ``normalized_ndim``, where torch takes ``normalized_shape``: that
keyword is typed ``None``, an error where it is written, as at run time (review129 F3).

The marker after ``# E:`` / ``# N:`` is the exact output mypy prints (tests/typing/test_mypy_examples.py
compares them); the unmarked lines are clean.
"""

from typing import assert_type

import numpy as np

import torchlean as tl
from torchlean import Tensor

x = tl.tensor(np.zeros((4, 3)))
mean, var = tl.tensor(np.zeros(3)), tl.tensor(np.ones(3))
assert_type(tl.batch_norm(x, running_mean=mean, running_var=var, training=False), Tensor)
assert_type(tl.batch_norm(x), Tensor)
tl.batch_norm(x, mean, var)  # E: Too many positional arguments for "batch_norm"  [call-arg] # N: "batch_norm" defined in "torchlean.functional._normalization"
tl.batch_norm(x, mean)  # E: Too many positional arguments for "batch_norm"  [call-arg] # N: "batch_norm" defined in "torchlean.functional._normalization"

image = tl.tensor(np.zeros((1, 4, 5, 5)))
kernel = tl.tensor(np.zeros((4, 1, 3, 3)))
assert_type(tl.conv_transpose(image, kernel, None, 1, 0, 0, 2, 1), Tensor)
tl.conv_transpose(image, kernel, None, 1, 0, 0, (1, 1), 2)  # E: Argument 7 to "conv_transpose" has incompatible type "tuple[int, int]"; expected "int | integer[Any]"  [arg-type]

assert_type(tl.layer_norm(x, normalized_ndim=1), Tensor)
tl.layer_norm(x, normalized_shape=(3,))  # E: Argument "normalized_shape" to "layer_norm" has incompatible type "tuple[int]"; expected "None"  [arg-type]
