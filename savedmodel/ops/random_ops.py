"""The `sm.random` namespace: uniform random tensors (`RandomUniform`, `RandomUniformInt`).

The kernels (runtime/kernels/random.py) are TensorFlow's: an op seeded as `tf.random.uniform`
seeds it gives TensorFlow's numbers, and run eagerly, one op (and seed) gives the next numbers
on each call, as TensorFlow's cached eager kernel does. Without a seed the numbers are random.
"""
from __future__ import annotations

import numpy as np

from savedmodel.dtypes import as_dtype, float32, is_integer
from savedmodel.op_builder import apply_op, op_scope
from savedmodel.ops.array_ops import constant
from savedmodel.tensor import Tensor

__all__ = ["uniform"]

DEFAULT_GRAPH_SEED = 87654321
"""The graph-level seed TensorFlow pairs with an op seed when no global seed is set."""
_MAXINT32 = 2 ** 31 - 1
"""TensorFlow takes seeds modulo this, to fit them in 32 bits."""


def _seeds(seed) -> dict:
    """The seed attrs TensorFlow's `get_seed` gives an op seeded `seed` (without a global seed,
    which this namespace has no way to set): the op seed, modulo 2**31 - 1, goes second; no
    seed is (0, 0)."""
    if seed is None:
        return {"seed": 0, "seed2": 0}
    return {"seed": DEFAULT_GRAPH_SEED, "seed2": int(seed) % _MAXINT32}


def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None) -> Tensor:
    """Values drawn uniformly from [minval, maxval): floats default to [0, 1); integers need
    `maxval`."""
    dtype = as_dtype(dtype)
    seeds = _seeds(seed)
    with op_scope(name or "random_uniform") as prefix:
        dims = constant(np.array(list(shape), np.int32), name="shape")
        if is_integer(dtype):
            if maxval is None:
                raise ValueError(f"Must specify maxval for integer dtype {dtype.name}")
            low = constant(minval, dtype, name="min")
            high = constant(maxval, dtype, name="max")
            return apply_op("RandomUniformInt", [dims, low, high], seeds, name=prefix or None)[0]
        values = apply_op("RandomUniform", [dims], {"dtype": dtype, **seeds})[0]
        if minval == 0 and maxval in (None, 1):
            return values
        low = constant(minval, dtype, name="min")
        high = constant(1 if maxval is None else maxval, dtype, name="max")
        return apply_op("AddV2", [values * (high - low), low], name=prefix or None)[0]
