"""The `libtorch` provider package (capsule data in `capsules.py`; imports no numpy or torch)."""
