"""The `sm.nn` namespace: activations."""
from __future__ import annotations

from savedmodel.op_builder import apply_op, convert_to_tensor
from savedmodel.tensor import Tensor

__all__ = ["relu", "softmax"]


def relu(features, name=None) -> Tensor:
    return apply_op("Relu", [features], name=name or "Relu")[0]


def softmax(logits, axis=None, name=None) -> Tensor:
    """`Softmax` over the last axis; another axis is first swapped with the last (a
    `Transpose` with a constant permutation on either side), then swapped back."""
    logits = convert_to_tensor(logits)
    rank = logits.shape.rank
    if axis is None or axis == -1 or rank is not None and axis == rank - 1:
        return apply_op("Softmax", [logits], name=name or "Softmax")[0]
    if rank is None:
        raise ValueError("softmax over an axis other than the last needs a tensor of known rank")
    axis %= rank
    perm = list(range(rank))
    perm[axis], perm[-1] = perm[-1], perm[axis]
    swapped = apply_op("Transpose", [logits, perm], name="transpose")[0]
    result = apply_op("Softmax", [swapped], name=name or "Softmax")[0]
    return apply_op("Transpose", [result, perm], name="transpose")[0]
