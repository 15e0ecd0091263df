"""A character-level language model trained on the Zen of Python (the standard library's ``this``
module, so nothing is downloaded), with the recipe of transformer training: a causal pre-norm
transformer over learned token and position embeddings, AdamW whose weight decay spares biases,
norm scales and embedding tables (a parameter group), a per-step linear-warmup cosine schedule and
gradient clipping. Every op runs on an accepted capsule; the audit lists them at the end.

    python examples/char_lm.py [--steps 300] [--profile checked_cpu]

``--steps`` is a lower bound: the run trains whole epochs (26 steps each), so 60 gives 78.

Prints the loss every 50 steps, a greedy continuation of a prompt and the capsules used.
"""

from __future__ import annotations

import argparse
import codecs
import contextlib
import importlib
import io
import math
import sys
from typing import Any

import numpy as np
from tqdm import tqdm

from torchlean import nn, optim, profiles
from torchlean.backend import report
from torchlean.backend.errors import TorchLeanError
from torchlean.trainer import Objective, RunConfig, Trainer

CONTEXT = 32
"""Characters the model reads at once (its fixed sequence length)."""


def corpus() -> str:
    """The Zen of Python, decoded from ``this.s`` (importing ``this`` prints it: silenced)."""
    with contextlib.redirect_stdout(io.StringIO()):
        this = importlib.import_module("this")
    return codecs.decode(this.s, "rot13")


def windows(ids: np.ndarray[Any, Any], context: int) -> tuple[np.ndarray[Any, Any], np.ndarray[Any, Any]]:
    """Every window of ``context`` ids and the window one character later (next-token targets)."""
    starts = np.arange(len(ids) - context)
    x = np.stack([ids[s : s + context] for s in starts])
    return x, np.stack([ids[s + 1 : s + context + 1] for s in starts])


def model(vocab: int, d_model: int = 48, heads: int = 4, blocks: int = 2) -> nn.Layer:
    """Embedding, learned positions, causal transformer blocks, a final norm and the logits."""
    return nn.sequential(
        nn.embedding(vocab, d_model),
        nn.positional_embedding(CONTEXT, d_model),
        *[nn.transformer_block(d_model, heads, causal=True) for _ in range(blocks)],
        nn.layer_norm(d_model),
        nn.linear(d_model, vocab),
    )


EMBEDDINGS = ("0.weight", "1.table")
"""The token and position tables of :func:`model` (layers 0 and 1)."""


def no_decay(name: str, shape: tuple[int, ...]) -> bool:
    """Vectors (biases, norm scales: nanoGPT's rule) and the embedding tables take no weight decay."""
    return len(shape) < 2 or name in EMBEDDINGS


def trainer_for(profile: str, seed: int = 0, execution: str = "eager") -> tuple[Trainer[Any, Any], str]:
    """The trainer of :func:`train` and the corpus's alphabet, its session opened: an unknown
    profile, one this machine cannot run (CUDA) or an execution mode the profile's device does not
    take is refused here, before any training (``TorchLeanError``)."""
    alphabet = "".join(sorted(set(corpus())))
    config = RunConfig(
        optim.adamw(3e-3, betas=(0.9, 0.95), weight_decay=0.1),
        param_groups=[optim.group(no_decay, weight_decay=0.0)],
        max_grad_norm=1.0,
        execution=execution,
    ).with_profile(profile)
    trainer: Trainer[Any, Any] = Trainer(
        model(len(alphabet)), objective=Objective.CROSS_ENTROPY, config=config, seed=seed,
        input_shape=(CONTEXT,),
    )
    trainer.open()
    return trainer, alphabet


def train(
    steps: int, profile: str, seed: int = 0, batch_size: int = 32, chunk: int = 50, execution: str = "eager",
    trainer: Trainer[Any, Any] | None = None,
) -> tuple[Trainer[Any, Any], str, list[tuple[int, int, float]]]:
    """Train for ``steps`` optimizer steps or a little more (whole epochs) under ``execution``
    (``"eager"`` or ``"typed-graph"``: the same bits), with ``trainer`` (:func:`trainer_for`'s of
    ``profile``, ``seed`` and ``execution`` when None); returns the trainer, the alphabet and
    ``(first step, last step, mean loss)`` of each ``chunk`` steps."""
    if trainer is None:
        trainer, _ = trainer_for(profile, seed, execution)
    text = corpus()
    alphabet = "".join(sorted(set(text)))
    ids = np.array([alphabet.index(c) for c in text], dtype=np.int64)
    x, y = windows(ids, CONTEXT)
    per_epoch = math.ceil(len(x) / batch_size)
    epochs = max(1, math.ceil(steps / per_epoch))
    schedule = optim.warmup_cosine(3e-3, min(30, epochs * per_epoch - 1), epochs * per_epoch, min_lr=3e-4)
    losses: list[tuple[int, int, float]] = []
    window: list[float] = []
    with tqdm(total=epochs * per_epoch, desc="training", unit="step", disable=None, file=sys.stderr) as bar:

        def logged(_epoch: int, loss: float) -> None:
            window.append(loss)
            bar.set_postfix(loss=f"{loss:.3f}", refresh=False)
            bar.update(1)
            if len(window) == chunk:
                losses.append((trainer.steps_done - chunk + 1, trainer.steps_done, sum(window) / chunk))
                window.clear()

        trainer.fit(x, y, epochs=epochs, batch_size=batch_size, on_batch=logged, lr_schedule=schedule,
                    schedule_by="step")
    if window:
        losses.append((trainer.steps_done - len(window) + 1, trainer.steps_done, sum(window) / len(window)))
    return trainer, alphabet, losses


def complete(trainer: Trainer[Any, Any], alphabet: str, prompt: str, length: int) -> str:
    """Greedy continuation: each next character is the most likely one after the last
    ``CONTEXT`` characters (the prompt left-padded with spaces)."""
    text = prompt
    for _ in range(length):
        window = text[-CONTEXT:].rjust(CONTEXT)
        ids = np.array([[alphabet.index(c) if c in alphabet else alphabet.index(" ") for c in window]])
        logits = trainer.predict(ids)[0, -1]
        text += alphabet[int(np.argmax(logits))]
    return text


def _positive(text: str) -> int:
    """An argparse ``type``: an int >= 1."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"expected an int >= 1, got {text!r}")
    return value


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description="Train a character-level language model on the Zen of Python, print a greedy "
        "continuation and the capsules that computed it."
    )
    parser.add_argument("--steps", type=_positive, default=300,
                        help="optimizer steps at least: whole epochs of 26 steps are run (default: 300)")
    parser.add_argument("--profile", default="checked_cpu",
                        help=f"backend profile: {', '.join(profiles.names())} (default: checked_cpu)")
    parser.add_argument("--execution", default="eager", choices=("eager", "typed-graph"),
                        help="eager, or typed-graph: the model and loss planned and accepted as one graph "
                        "before any kernel runs, with the same bits (default: eager)")
    args = parser.parse_args(argv)
    try:  # an unknown profile, one this machine cannot run (CUDA), before any training
        trainer, _ = trainer_for(args.profile, execution=args.execution)
    except TorchLeanError as error:
        parser.exit(2, f"{parser.prog}: error: {error}\n")
    trainer, alphabet, losses = train(args.steps, args.profile, execution=args.execution, trainer=trainer)
    for first, last, loss in losses:
        print(f"steps {first:>4}-{last:<4} loss={loss:.4f}")
    print(f"uniform guess: loss={math.log(len(alphabet)):.4f} ({len(alphabet)} characters)")
    print(repr(complete(trainer, alphabet, "Beautiful is better than ", 40)))
    print(f"backend capsules used ({len(trainer.selected)}, first-use order):")
    for kernel in trainer.selected:
        print(report.audit_line(kernel.audit()))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
