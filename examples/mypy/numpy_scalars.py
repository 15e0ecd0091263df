"""numpy scalars where the run time takes them. In ``torchlean.functional`` and the ``Tensor``
methods an integer parameter (axis, dim, shape, permutation, slice bound, seed, ``groups``,
``padding_idx``, ``ignore_index``, ``normalized_ndim``) takes a numpy integer (``IntLike``), a
flag (``keepdims``, ``training``, ``is_causal``, ``requires_grad``) a numpy bool (``BoolLike``)
and a real parameter (a factor, a bound, ``eps``, a probability, ``scale``) a numpy float such
as ``np.float32`` (``RealLike``); so do the real parameters (and the optimizers' flags) of the
``nn`` layer builders, the optimizers, the clipping functions, ``RunConfig`` and ``Trainer``, and
``accepted_kernel_of_group``'s group index takes a numpy integer, as at run time (review129 F1, F2,
F8).

mypy reports nothing here (tests/typing/test_mypy_examples.py), and the program runs
(tests/typing/test_numpy_scalars.py runs it and checks what it prints).
"""

from typing import Any

import numpy as np
import numpy.typing as npt

import torchlean as tl
from torchlean import nn, optim
from torchlean.backend import profiles
from torchlean.backend.acceptance import accepted_kernel_of_group
from torchlean.models import build_model
from torchlean.nn.lowering import lower_model
from torchlean.trainer import Objective, RunConfig, Trainer

i = np.int64(1)  # e.g. read from an integer array
on, off = np.bool_(True), np.bool_(False)
r = np.float32(0.25)  # e.g. read from a float32 array of sweep settings

x = tl.tensor(np.arange(24.0).reshape(2, 3, 4))
index: npt.NDArray[np.int64] = np.zeros((2, 1, 4), dtype=np.int64)
mask: npt.NDArray[np.bool_] = np.ones((2, 3, 4), dtype=bool)

functional = [
    tl.softmax(x, i),
    tl.softmax(x, dim=i),
    tl.log_softmax(x, dim=np.int32(-1)),
    tl.hard_masked_softmax(x, mask, i),
    tl.hard_masked_softmax(x, mask, dim=i),
    tl.concat([x, x], i),
    tl.concat([x, x], dim=i),
    tl.gather(x, index, i),
    tl.gather(x, index, dim=i),
    tl.scatter_add(x, index, tl.tensor(np.ones((2, 1, 4))), i),
    tl.scatter_add(x, index, tl.tensor(np.ones((2, 1, 4))), dim=i),
    tl.transpose(x, i, np.int64(2)),
    tl.permute(x, (i, np.int64(0), 2)),
    tl.reshape(x, (np.int64(24),)),
    tl.broadcast_to(x, [np.int64(2), 2, 3, 4]),
    tl.slice(x, (0, i, 0), (np.int64(2), 3, 4), (1, 1, np.uint8(2))),
    tl.rand_uniform((np.int64(2), 3), seed=np.uint64(7)),
    tl.bernoulli_mask((2, np.int64(3)), r, seed=np.int64(3)),
    tl.dropout(x, r, training=on, seed=np.int64(5)),
    tl.dropout(x, r, off),
    tl.reduce_sum(x, axis=i, keepdims=on),
    tl.reduce_sum(x, dim=(i, 2), keepdim=off),
    tl.reduce_mean(x, 0, on),
    tl.logsumexp(x, i, on),
    tl.logsumexp(x, dim=i, keepdim=on),
    tl.layer_norm(x, normalized_ndim=np.int64(2), eps=r),
    tl.batch_norm(x, training=on, eps=r),
    tl.scale(x, r),
    tl.clamp(x, r, np.float32(3.5)),
    tl.clamp(x, min=np.float64(1.0), max=np.float16(2.0)),
    tl.safe_log(x, eps=np.float32(1e-6)),
    tl.scaled_dot_product_attention(x, x, x, None, np.float32(0.0), on, scale=r),
]
logits = tl.tensor(np.zeros((2, 3)))
losses = [
    tl.cross_entropy(logits, np.array([0, 2]), i, label_smoothing=r, ignore_index=np.int64(-100)),
    tl.cross_entropy(logits, np.array([0, 2]), ignore_index=np.int32(-1)),
]
table = tl.tensor(np.ones((5, 2)))
image = tl.tensor(np.ones((1, 2, 5, 5)))
kernel = tl.tensor(np.ones((2, 1, 3, 3)))
windows = [
    tl.embedding(np.array([0, 3]), table, padding_idx=np.int64(0)),
    tl.conv(image, kernel, groups=np.int64(2)),
    tl.conv_transpose(image, tl.tensor(np.ones((2, 1, 3, 3))), groups=np.int64(2)),
    tl.smooth_max_pool(image, 2, beta=r),
]

t = tl.tensor(np.arange(24.0).reshape(2, 3, 4), requires_grad=on)
methods = [
    t.softmax(i),
    t.log_softmax(i),
    t.unsqueeze(i),
    t.transpose(i, np.int64(2)),
    t.flatten(i),
    t.flatten(np.int64(0), end_dim=i),
    t.unsqueeze(0).squeeze(np.int64(0)),
    t.unsqueeze(0).squeeze((np.int64(0),)),
    t.logsumexp(i, on),
    t.logsumexp((i, 2), keepdim=off),
    t.gather(i, index),
    t.scatter_add(i, index, tl.tensor(np.ones((2, 1, 4)))),
    t.sum(i, on),
    t.sum(dim=i, keepdim=on),
    t.mean(axis=(0, i), keepdims=off),
    t.clamp(r, np.float32(3.0)),
    t.clip(min=r),
]
loss = t.sum()
loss.backward(retain_graph=on, create_graph=off)
loss.backward()
leaf = tl.tensor(np.ones(3)).requires_grad_(on)
leaf.requires_grad = off

model = nn.build(
    nn.sequential(
        nn.linear(4, 4),
        nn.leaky_relu(np.float32(0.125)),
        nn.layer_norm(4, eps=np.float32(1e-5)),
        nn.dropout(r),
        nn.linear(4, 3),
    ),
    input_shape=(4,),
    seed=np.int64(0),
)
norms = nn.sequential(nn.batch_norm1d(4, eps=np.float32(1e-5), momentum=r))
records = [
    optim.sgd(lr=r, momentum=r, dampening=r, weight_decay=r, nesterov=off),
    optim.adam(r, np.float32(0.5), np.float32(0.75), np.float32(1e-6), r, on),
    optim.adam(lr=r, betas=(np.float32(0.5), np.float32(0.75))),
    optim.adamw(lr=r, weight_decay=r, amsgrad=off),
    optim.rmsprop(lr=r, alpha=np.float32(0.5), eps=np.float32(1e-6), momentum=r, centered=on),
    optim.adagrad(lr=r, lr_decay=r, weight_decay=r, initial_accumulator_value=r, eps=np.float32(1e-6)),
    optim.by_name("adam", r),
]
groups = [
    optim.group("bias", weight_decay=np.float32(0.0), lr_scale=r, amsgrad=on),
    optim.group("weight", betas=(np.float32(0.5), np.float32(0.75))),
    optim.group("weight", alpha=np.float32(0.5)),
    optim.group("^0", frozen=on),
]
grads: list[npt.NDArray[Any] | None] = [np.ones(3, dtype=np.float32), None]
clipped = optim.clip_grad_value(grads, r)
rescaled, norm = optim.clip_grad_norm(grads, r, norm_type=np.float32(2.0))
schedule = optim.warmup_cosine(r, np.int64(1), np.int64(10), min_lr=np.float32(0.0))
params = model.tensors()
optimizer = optim.sgd(lr=0.1).create(model.parameters, names=model.names)
optimizer.set_lr(r)
for p in params:
    p.grad = tl.tensor(np.ones(p.shape, dtype=np.float32))
step_norm = optimizer.step_(params, max_grad_norm=r, max_grad_value=np.float32(10.0))

config = RunConfig(optimizer=records[0], show_backend=off, max_grad_norm=r, max_grad_value=np.float32(1.0))
trainer: Trainer[object, object] = Trainer(
    nn.sequential(nn.linear(3, 3), nn.dropout(r)),
    objective=Objective.CROSS_ENTROPY,
    config=config,
    seed=np.int64(0),
    label_smoothing=r,
)
built = build_model("mlp", 4, 3, hidden=8, dropout=r)
plan = profiles.get("checked_cpu").accept_graph(lower_model(model, (2, 4)).built.graph).plan
assert plan is not None
group_kernel = accepted_kernel_of_group(plan, np.int64(0))  # a group index too (review129 F8)

print([tuple(y.shape) for y in functional + losses + windows + methods])
print(type(leaf.requires_grad).__name__, leaf.requires_grad, t.grad is not None)
print(type(records[0].lr).__name__, records[0].lr, type(config.max_grad_norm).__name__, trainer.label_smoothing)
print(type(groups[0].overrides[0][1]).__name__, groups[0].frozen, groups[3].frozen, type(norm).__name__)
print(len(clipped), len(rescaled), schedule(0), type(step_norm).__name__, built[0].describe().count("dropout"))
print(group_kernel is plan.kernels[0])
