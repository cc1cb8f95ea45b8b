"""FusedBatchNormV3 in inference mode (is_training=False) against live TensorFlow.

TensorFlow traces a tf.function that calls tf.raw_ops.FusedBatchNormV3 on placeholders; our kernel
then runs with the NodeDef from that traced graph (attrs decoded as the runtime decodes them, so
TensorFlow's defaults are included) on the same inputs. `y` must agree to the precision of its
dtype (TensorFlow normalizes as (x - mean) * (scale * rsqrt(variance + epsilon)) + offset, we as
x * multiplier + shift, which round differently), and batch_mean and batch_variance, which
inference passes through, exactly. The reserve_space outputs are left uninitialized by TensorFlow's
CPU kernel in inference, so they are not compared.
"""
from __future__ import annotations

import numpy as np
import pytest

from savedmodel.protos import graph_pb2
from savedmodel.runtime import registry
from savedmodel.runtime.attrs import decode_attrs

SHAPES = [(2, 5, 6, 1), (2, 5, 6, 3), (1, 4, 4, 8), (3, 7, 5, 16), (2, 3, 3, 64),
          (8, 16, 16, 8)]  # the last is large enough for the kernel's row-tiled path
EPSILONS = [1e-3, 1e-5, 0.1]
TOLERANCE = {"float32": dict(rtol=1e-5, atol=1e-5), "float16": dict(rtol=2e-3, atol=2e-3)}


def _inputs(shape: tuple[int, ...], dtype: str, seed: int) -> list[np.ndarray]:
    """x of `dtype`; scale, offset, mean and variance in float32, as Keras passes them."""
    rng = np.random.default_rng(seed)
    channels = shape[-1]
    return [(rng.standard_normal(shape) * 2 + 0.5).astype(dtype),
            rng.uniform(0.5, 2.0, channels).astype(np.float32),
            rng.standard_normal(channels).astype(np.float32),
            (rng.standard_normal(channels) * 0.5).astype(np.float32),
            rng.uniform(0.05, 3.0, channels).astype(np.float32)]


def _traced_node(tf, inputs: list[np.ndarray], epsilon: float):
    """The concrete function and its FusedBatchNormV3 NodeDef (parsed with our protos)."""
    def program(x, scale, offset, mean, variance):
        out = tf.raw_ops.FusedBatchNormV3(x=x, scale=scale, offset=offset, mean=mean,
                                          variance=variance, epsilon=epsilon,
                                          data_format="NHWC", is_training=False)
        return out.y, out.batch_mean, out.batch_variance

    specs = [tf.TensorSpec(a.shape, tf.as_dtype(a.dtype)) for a in inputs]
    concrete = tf.function(program).get_concrete_function(*specs)
    graph_def = graph_pb2.GraphDef.FromString(concrete.graph.as_graph_def().SerializeToString())
    [node] = [n for n in graph_def.node if n.op == "FusedBatchNormV3"]
    placeholders = [t.op.name for t in concrete.graph.inputs]
    assert [name.split(":")[0] for name in node.input] == placeholders, \
        "the node reads the five placeholders in order"
    return concrete, node


@pytest.mark.parametrize("dtype", ["float32", "float16"])
@pytest.mark.parametrize("epsilon", EPSILONS)
@pytest.mark.parametrize("shape", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_fused_batch_norm_v3_inference_matches_tensorflow(tf, shape, epsilon, dtype):
    inputs = _inputs(shape, dtype, seed=sum(shape) + int(epsilon * 1e5))
    concrete, node = _traced_node(tf, inputs, epsilon)
    assert node.attr["is_training"].b is False
    expected = [t.numpy() for t in concrete(*inputs)]

    kernel = registry.lookup(node.op, node.name)
    with np.errstate(all="ignore"):  # the run loop's setting, under which kernels run
        ours = kernel.fn(*inputs, **decode_attrs(node.attr, node.name))
    assert isinstance(ours, tuple) and len(ours) == 6, "y, batch stats, three reserve spaces"

    names = ["y", "batch_mean", "batch_variance"]
    for name, actual, want in zip(names, ours[:3], expected):
        assert isinstance(actual, np.ndarray), f"{name} is {type(actual).__name__}"
        assert actual.shape == want.shape, f"{name}: shape {actual.shape} != {want.shape}"
        assert actual.dtype == want.dtype, f"{name}: dtype {actual.dtype} != {want.dtype}"
    np.testing.assert_allclose(ours[0].astype(np.float64), expected[0].astype(np.float64),
                               err_msg="y", **TOLERANCE[dtype])
    np.testing.assert_array_equal(ours[1], expected[1], err_msg="batch_mean")
    np.testing.assert_array_equal(ours[2], expected[2], err_msg="batch_variance")
