"""SplitMix64 on Python ints: the independent oracle of the reference random sources' bits (the
formula of anchor-runtime.md §1.6, written without numpy or any torchlean helper)."""

from __future__ import annotations

M64 = (1 << 64) - 1


def splitmix64_int(x: int) -> int:
    """The SplitMix64 finaliser of ``x + golden gamma``, modulo 2**64."""
    z = (x + 0x9E3779B97F4A7C15) & M64
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & M64
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & M64
    return z ^ (z >> 31)
