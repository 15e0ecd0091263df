"""A correct program: every sealed value comes from its gate; mypy reports nothing.

Plan ``relu`` under ``checked_cpu``, accept it, bind it to a handler and run it; shape-typed
``torchlean.trainer.Trainer`` values use the plugin's ``Shape[N]`` shorthand.
"""

from typing import Any, Literal, NewType, TypeAlias

import numpy as np

import torchlean as tl
from torchlean import nn
from torchlean.backend import profiles
from torchlean.backend.acceptance import AcceptedKernel, accept
from torchlean.backend.binding import ExecutableKernel, KernelHandler, bind
from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.vocabulary import BackendOp
from torchlean.shapes import Shape
from torchlean.trainer import ExecutionMode, RunConfig, Trainer


def capsule_name(capsule: KernelCapsule) -> str:
    return capsule.name


def relu_kernel() -> ExecutableKernel[str]:
    profile = profiles.get("checked_cpu")
    planned = profile.plan_ops([BackendOp.RELU]).kernels[0]
    accepted: AcceptedKernel = accept(planned, profile.policy)
    handler = KernelHandler("name", accepted.op, accepted.capsule.provider, accepted.capsule.device, capsule_name)
    return bind(accepted, handler)


print(relu_kernel().run())

def train_iris(trainer: Trainer[Shape[3], Shape[1]]) -> None:
    """Accepts only trainers for 3 features and 1 target."""


three_features: Trainer[Shape[3], Shape[1]] = Trainer(nn.linear(3, 1))
# the execution mode is a config field: a typed-graph trainer has the same type
typed_graph: Trainer[Shape[3], Shape[1]] = Trainer(
    nn.linear(3, 1), config=RunConfig(execution=ExecutionMode.TYPED_GRAPH)
)
train_iris(typed_graph)
train_iris(three_features)
spelled_out: Trainer[Shape[Literal[3]], Shape[Literal[1]]] = three_features
train_iris(spelled_out)
# Where Python evaluates the subscript (alias right-hand side, base class, explicit application),
# mypy reads each argument on its own: quote the type or spell Literal there.
IrisTrainer: TypeAlias = "Trainer[Shape[3], Shape[1]]"
explicit: IrisTrainer = Trainer[Shape[Literal[3]], Shape[Literal[1]]](nn.linear(3, 1))
train_iris(explicit)
batch_of_32: Shape[32, 4] = Shape()
any_batch: Shape[Any, 4] = batch_of_32
scalar: Shape[()] = Shape()

KernelId = NewType("KernelId", AcceptedKernel)


def tagged(kernel: AcceptedKernel) -> KernelId:
    """A NewType of a sealed class returns its argument: nothing new is produced."""
    return KernelId(kernel)


class Tags:
    make = KernelId

    def tag(self, kernel: AcceptedKernel) -> KernelId:
        return self.make(kernel)  # also through an attribute holding the NewType


@tl.no_grad()
def doubled(x: tl.Tensor) -> tl.Tensor:
    """Grad-mode decorators keep the function's type (with or without parentheses)."""
    return x * 2.0


@tl.no_grad
def tripled(x: tl.Tensor) -> tl.Tensor:
    return x * 3.0


six: tl.Tensor = tripled(doubled(tl.tensor([1.0], requires_grad=True)))
assert not six.requires_grad

# numpy integers and a 1-d integer array where the run time takes them (review117 F4)
numpy_sized: Trainer[Shape[4], Shape[3]] = Trainer(
    nn.linear(4, 3), seed=np.int64(7), input_shape=np.array([4])
)
