"""The templated capsule variants shared by the ``reference`` and ``native-cuda`` modules.

Source: anchor-backend.md §4.1 ("Common templates"). Each provider file builds most capsules from
one base template plus the variants pointwise, reduction, view, forward-only and convPool /
selection; the variants differ between providers only in the subject of the value summary, three
VJP summaries and the reduction policy of the accumulating variants. This module is data only.

Unlike the original, whose catalog labels every pointwise and view capsule ``n/a``, the ops whose
VJP sums (the broadcasting binary ops, ``broadcast``, ``gather``) take the accumulating policy:
the order of those sums decides a bias gradient's bits, so ``n/a`` would be a false claim.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from torchlean.backend.capsule import KernelCapsule
from torchlean.backend.vocabulary import BackendOp, ReductionPolicy

__all__ = ["CapsuleBuilder", "VariantTemplate"]


class CapsuleBuilder(Protocol):
    """A provider's base template: one capsule from an op, its two summaries and its reduction."""

    def __call__(
        self,
        op: BackendOp,
        value_summary: str,
        vjp_summary: str,
        reduction: ReductionPolicy,
        *,
        forward_only: bool = False,
    ) -> KernelCapsule: ...


@dataclass(frozen=True, slots=True)
class VariantTemplate:
    """The variant texts of one provider (anchor-backend.md §4.1) over its base template ``build``.

    ``subject`` opens the value summaries (``Reference``, ``Native CUDA``); ``pointwise_vjp``,
    ``adjoint_vjp`` (reduction and view) and ``conv_pool_vjp`` are VJP summaries with an ``{op}``
    field for the op label; ``accumulating`` is the reduction policy of the reduction and
    selection variants. Backticks around the op label are literal characters.
    """

    build: CapsuleBuilder
    subject: str
    pointwise_vjp: str
    adjoint_vjp: str
    conv_pool_vjp: str
    accumulating: ReductionPolicy

    def _value(self, op: BackendOp, contract: str) -> str:
        return f"{self.subject} `{op.label}` follows the {contract} contract."

    def pointwise(self, op: BackendOp, *, vjp_sums: bool = False) -> KernelCapsule:
        """The pointwise variant: no reduction, or ``accumulating`` when ``vjp_sums`` (a binary op
        whose operands broadcast: its VJP sums each cotangent over the broadcast axes)."""
        return self.build(
            op,
            self._value(op, "pointwise tensor"),
            self.pointwise_vjp.format(op=op.label),
            self.accumulating if vjp_sums else ReductionPolicy.NOT_APPLICABLE,
        )

    def reduction(self, op: BackendOp) -> KernelCapsule:
        """The reduction variant (reduction policy ``accumulating``)."""
        return self.build(
            op,
            self._value(op, "explicit reduction shape"),
            self.adjoint_vjp.format(op=op.label),
            self.accumulating,
        )

    def view(self, op: BackendOp, *, vjp_sums: bool = False) -> KernelCapsule:
        """The view variant: no reduction, or ``accumulating`` when ``vjp_sums`` (``broadcast``
        sums its cotangent over the broadcast axes, ``gather`` adds the cotangents of repeated
        indices)."""
        return self.build(
            op,
            self._value(op, "explicit shape/layout"),
            self.adjoint_vjp.format(op=op.label),
            self.accumulating if vjp_sums else ReductionPolicy.NOT_APPLICABLE,
        )

    def forward_only(self, op: BackendOp, value_summary: str) -> KernelCapsule:
        """The forward-only variant: bespoke value summary, VJP mode ``none``, no reduction."""
        return self.build(
            op,
            value_summary,
            f"{self.subject} `{op.label}` is a forward-only capsule with no registered VJP.",
            ReductionPolicy.NOT_APPLICABLE,
            forward_only=True,
        )

    def selection(self, op: BackendOp) -> KernelCapsule:
        """The selection variant: convPool texts with reduction policy ``accumulating``."""
        return self.build(
            op,
            self._value(op, "channel-first runtime"),
            self.conv_pool_vjp.format(op=op.label),
            self.accumulating,
        )
