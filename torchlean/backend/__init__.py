"""The kernel-capsule system: vocabulary, contracts, registry, planner, audit, acceptance gate.

Depends on nothing else in torchlean (DESIGN.md §2).
"""
