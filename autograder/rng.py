"""Seeding torch cheaply: `torch.manual_seed` formats a stack trace on every call to queue a CUDA seed."""
from __future__ import annotations


def manual_seed(seed: int) -> None:
    """Same numbers as `torch.manual_seed(seed)` on the CPU, at about 1 µs instead of 200 µs without CUDA."""
    import torch
    if torch.cuda.is_available():  # CUDA's generators must follow too (queued until CUDA starts)
        torch.manual_seed(seed)
    else:
        torch.random.default_generator.manual_seed(seed)
