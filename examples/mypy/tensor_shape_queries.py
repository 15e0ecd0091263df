"""Tensor shape queries have torch's types: ``size()`` a tuple of ints, ``size(d)``, ``numel()``,
``dim()`` and ``nelement()`` ints; ``size`` is a method, not numpy's element-count attribute.

The marker after ``# E:`` / ``# N:`` is the exact output mypy prints (tests/typing/test_mypy_examples.py
compares them); the unmarked lines are clean.
"""

from typing import assert_type

import numpy as np

import torchlean as tl

x = tl.tensor(np.zeros((2, 3, 4)))
assert_type(x.size(), tuple[int, ...])
assert_type(x.size(None), tuple[int, ...])
assert_type(x.size(0), int)
assert_type(x.size(dim=-1), int)
assert_type(x.size(np.int64(1)), int)
assert_type(x.numel(), int)
assert_type(x.nelement(), int)
assert_type(x.dim(), int)
rows: int = x.size(0)
batch, *rest = x.size()
# numpy's element-count attribute is torch's numel(): the old spelling is a type error
elements = x.size * 2  # E: Unsupported operand types for * (overloaded function and "int")  [operator]
# a float axis is refused statically (and at run time; so is a bool, which mypy takes for an int)
x.size(1.0)  # E: No overload variant of "size" of "Tensor" matches argument type "float"  [call-overload] # N: Possible overload variants: # N:     def size(self, dim: None = ...) -> tuple[int, ...] # N:     def size(self, dim: int | integer[Any]) -> int
