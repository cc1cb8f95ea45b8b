"""Random ops. They draw from one numpy generator per process (TensorFlow's global generator):
`seed` attrs are kept in graphs but do not make the numbers reproducible."""
from __future__ import annotations

import numpy as np

from savedmodel.runtime.kernels.util import check
from savedmodel.runtime.registry import kernel

_GENERATOR = np.random.default_rng()


@kernel("RandomUniform", stateful=True)
def random_uniform(shape, *, dtype, **_):
    return (_GENERATOR.random(tuple(int(d) for d in shape)).astype(dtype.numpy),)


@kernel("RandomUniformInt", stateful=True)
def random_uniform_int(shape, minval, maxval, **_):
    low, high = int(minval), int(maxval)
    check(low < high, f"Need minval < maxval: {low} >= {high}")
    values = _GENERATOR.integers(low, high, tuple(int(d) for d in shape))
    return (values.astype(np.asarray(minval).dtype),)
