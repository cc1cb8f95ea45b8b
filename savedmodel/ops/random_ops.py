"""The `sm.random` namespace: uniform random tensors (`RandomUniform`, `RandomUniformInt`).

The kernels (runtime/kernels/random.py) draw from one numpy generator per process, so `seed`
arguments are recorded in the graph but do not make the numbers reproducible.
"""
from __future__ import annotations

import numpy as np

from savedmodel.dtypes import as_dtype, float32, is_integer
from savedmodel.op_builder import apply_op, op_scope
from savedmodel.ops.array_ops import constant
from savedmodel.tensor import Tensor

__all__ = ["uniform"]

def uniform(shape, minval=0, maxval=None, dtype=float32, seed=None, name=None) -> Tensor:
    """Values drawn uniformly from [minval, maxval): floats default to [0, 1); integers need
    `maxval`."""
    dtype = as_dtype(dtype)
    seeds = {"seed": 0 if seed is None else int(seed), "seed2": 0}
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
