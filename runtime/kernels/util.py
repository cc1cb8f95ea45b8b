"""Small helpers shared by kernel modules."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.errors import KernelError


def check(condition: bool, message: str) -> None:
    """Raise KernelError(message) unless `condition`: TensorFlow's InvalidArgument. The message
    is built before the call, so hot paths write `if not condition: raise KernelError(...)`
    instead, which formats it only on failure."""
    if not condition:
        raise KernelError(message)


def scalar_int(value, what: str) -> int:
    """An int from a 0-d (or 1-element) integer tensor, as ops take axes and counts."""
    array = value if type(value) is np.ndarray else np.asarray(value)
    if array.size != 1 or array.dtype.kind not in "iu":
        raise KernelError(f"{what} must be an integer scalar, got shape {array.shape} of {array.dtype}")
    return int(array.item())


def normalize_axis(axis: int, rank: int, what: str = "axis") -> int:
    """A non-negative axis; negative axes count from the end, as in TensorFlow."""
    if not (-rank <= axis < rank or (rank == 0 and axis in (0, -1))):
        raise KernelError(f"{what} {axis} is out of range for a tensor of rank {rank}")
    return axis + rank if axis < 0 else axis
