"""Export SavedModels with ragged and sparse (composite) signature inputs, and one whose unused
method needs an op no engine has, with inputs and TensorFlow's outputs. Needs TensorFlow 2.21.

TensorFlow lists a composite input's components as flat signature inputs (`x`: the ragged
values or sparse indices, `x_1`, `x_2`: the rest, in the TypeSpec's component order), which
tests/test_runtime_corpus.py feeds like any other. Composite *outputs* (and object-graph
functions taking composite values) go to tests/data/composite/, outside the replayed corpus,
with their components recorded as `<key>/<component index>` (tests/test_composite.py).
Usage: python tests/data/models/make_models_sparse.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

import numpy as np
import tensorflow as tf
from make_models import HERE, export_keras, export_module

COMPOSITE = HERE.parent / "composite"
RAGGED = tf.RaggedTensorSpec([None, None], tf.float32, ragged_rank=1, row_splits_dtype=tf.int64)
SPARSE = tf.SparseTensorSpec([None, 4], tf.float32)


class RaggedRows(tf.Module):
    """Per-row sum, max (padding with -inf) and length of a ragged batch."""

    @tf.function(input_signature=[RAGGED])
    def rows(self, x):
        return {"sum": tf.reduce_sum(x.to_tensor(0.0), axis=1),
                "max": tf.reduce_max(x.to_tensor(-np.inf), axis=1),
                "length": x.row_lengths()}


class RaggedMap(tf.Module):
    """tf.map_fn over the rows of a ragged batch with a ragged result: the rows travel as
    variant tensors (RaggedTensorToVariant / FromVariant) in TensorLists through a While loop."""

    @tf.function(input_signature=[RAGGED])
    def scaled(self, x):
        row_spec = tf.RaggedTensorSpec([None], tf.float32, ragged_rank=0, row_splits_dtype=tf.int64)
        mapped = tf.map_fn(lambda row: row * tf.cast(tf.size(row), tf.float32) + 1.0, x,
                           fn_output_signature=row_spec)
        return {"padded": mapped.to_tensor(-1.0), "splits": mapped.row_splits}


class SparseMatmul(tf.Module):
    """A sparse batch times a dense weight matrix, its row sums and its dense form."""

    def __init__(self):
        super().__init__()
        self.w = tf.Variable(np.arange(12, dtype=np.float32).reshape(4, 3) / 4 - 1)

    @tf.function(input_signature=[SPARSE])
    def matmul(self, x):
        return {"y": tf.sparse.sparse_dense_matmul(x, self.w),
                "y_t": tf.sparse.sparse_dense_matmul(x, tf.transpose(self.w), adjoint_b=True),
                "row_sum": tf.sparse.reduce_sum(x, axis=1),
                "dense": tf.sparse.to_dense(x)}


class UnusedFunction(tf.Module):
    """A signature that needs only common ops, a method no signature calls that needs
    Dilation2D, which neither engine has, and one that takes a dataset iterator (as a Keras
    `adapt_step` does) and runs dataset ops: loading and the signature must still work."""

    def __init__(self):
        super().__init__()
        self.total = tf.Variable(0.0)

    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def serve(self, x):
        return {"y": x * 2.0 + 1.0 + self.total}

    @tf.function(input_signature=[tf.data.IteratorSpec(tf.TensorSpec([None], tf.float32))])
    def adapt_step(self, iterator):
        self.total.assign_add(tf.reduce_sum(next(iterator)))

    @tf.function(input_signature=[tf.TensorSpec([1, 5, 5, 1], tf.float32)])
    def dilate(self, image):
        return tf.nn.dilation2d(image, tf.zeros([2, 2, 1]), [1, 1, 1, 1], "SAME", "NHWC", [1, 1, 1, 1])


class CompositeOutputs(tf.Module):
    """Ragged and sparse values in and out, through signatures and object-graph functions."""

    @tf.function(input_signature=[RAGGED])
    def doubled(self, x):
        return {"doubled": x * 2.0, "sum": tf.reduce_sum(x.to_tensor(0.0), axis=1)}

    @tf.function(input_signature=[SPARSE])
    def reordered(self, x):
        return {"sparse": tf.sparse.reorder(x), "dense": tf.sparse.to_dense(tf.sparse.reorder(x))}


RAGGED_IN = {"x": np.array([1.0, -2.0, 3.0, 0.5, 4.0, -1.0, 2.5], np.float32),
             "x_1": np.array([0, 2, 2, 5, 7], np.int64)}
SPARSE_IN = {"x": np.array([[0, 1], [2, 0], [2, 3], [3, 3]], np.int64),
             "x_1": np.array([1.5, -2.0, 4.0, 0.25], np.float32),
             "x_2": np.array([4, 4], np.int64)}
UNORDERED_IN = {**SPARSE_IN, "x": SPARSE_IN["x"][[2, 0, 3, 1]]}


def keras_hashed_crossing():
    """A Keras HashedCrossing of a string and an integer feature (SparseCross underneath)."""
    import keras
    color = keras.Input((1,), dtype="string", name="color")
    size = keras.Input((1,), dtype="int64", name="size")
    crossed = keras.layers.HashedCrossing(num_bins=16)((color, size))
    return keras.Model({"color": color, "size": size}, crossed)


def export_composite(name: str, module: tf.Module, calls: dict) -> None:
    """Save `module` under tests/data/composite with one signature per call; record each
    signature's (flat) inputs and each output's components."""
    path = COMPOSITE / name
    tf.saved_model.save(module, str(path), signatures={k: getattr(module, k) for k in calls})
    arrays = {}
    for signature, inputs in calls.items():
        outputs = tf.saved_model.load(str(path)).signatures[signature](
            **{k: tf.constant(v) for k, v in inputs.items()})
        arrays.update({f"sig/{signature}/in/{k}": v for k, v in inputs.items()})
        for key, value in outputs.items():
            for i, component in enumerate(tf.nest.flatten(value, expand_composites=True)):
                arrays[f"sig/{signature}/out/{key}/{i}"] = component.numpy()
    np.savez(COMPOSITE / f"{name}.io.npz", **arrays)


def export_tf1_sparse(name: str) -> None:
    """A TensorFlow 1 export whose signature takes a sparse placeholder (a `coo_sparse` input:
    the SignatureDef names its indices, values and dense shape tensors) and returns a sparse
    tensor too; recorded as components like export_composite."""
    path = COMPOSITE / name
    graph = tf.Graph()
    with graph.as_default():
        x = tf.compat.v1.sparse_placeholder(tf.float32, [None, 4], name="x")
        w = tf.constant(np.arange(8, dtype=np.float32).reshape(4, 2) - 3)
        y = tf.sparse.sparse_dense_matmul(x, w)
        doubled = tf.sparse.reorder(x * 2.0)
        with tf.compat.v1.Session(graph=graph) as session:
            builder = tf.compat.v1.saved_model.Builder(str(path))
            build = tf.compat.v1.saved_model.build_tensor_info
            signature = tf.compat.v1.saved_model.build_signature_def(
                {"x": build(x)}, {"y": build(y), "doubled": build(doubled)}, "tensorflow/serving/predict")
            builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={"serving_default": signature})
            builder.save()
    feed = tf.compat.v1.SparseTensorValue(UNORDERED_IN["x"], UNORDERED_IN["x_1"], UNORDERED_IN["x_2"])
    with tf.compat.v1.Session(graph=tf.Graph()) as session:
        meta = tf.compat.v1.saved_model.load(session, ["serve"], str(path))
        outputs = meta.signature_def["serving_default"].outputs
        coo = meta.signature_def["serving_default"].inputs["x"].coo_sparse
        y_value, doubled_value = session.run(
            [outputs["y"].name, [outputs["doubled"].coo_sparse.indices_tensor_name,
                                 outputs["doubled"].coo_sparse.values_tensor_name,
                                 outputs["doubled"].coo_sparse.dense_shape_tensor_name]],
            {coo.indices_tensor_name: feed.indices, coo.values_tensor_name: feed.values,
             coo.dense_shape_tensor_name: feed.dense_shape})
    arrays = {f"sig/serving_default/in/x/{i}": v for i, v in enumerate(feed)}
    arrays["sig/serving_default/out/y/0"] = y_value
    arrays.update({f"sig/serving_default/out/doubled/{i}": v for i, v in enumerate(doubled_value)})
    np.savez(COMPOSITE / f"{name}.io.npz", **arrays)


JOBS = {
    "keras_hashed_crossing": lambda: export_keras("keras_hashed_crossing", keras_hashed_crossing(), {
        "color": np.array([[b"red"], [b"blue"], [b""]], dtype="S"), "size": np.array([[3], [-1], [7]], np.int64)}),
    "ragged_rows": lambda: export_module("ragged_rows", RaggedRows(), {"rows": RAGGED_IN}),
    "ragged_map": lambda: export_module("ragged_map", RaggedMap(), {"scaled": RAGGED_IN}),
    "sparse_matmul": lambda: export_module("sparse_matmul", SparseMatmul(), {"matmul": SPARSE_IN}),
    "unused_function": lambda: export_module("unused_function", UnusedFunction(), {
        "serve": {"x": np.array([[1.0, -2.0, 0.5]], np.float32)}}),
    "composite_outputs": lambda: export_composite("composite_outputs", CompositeOutputs(), {
        "doubled": RAGGED_IN, "reordered": UNORDERED_IN}),
    "tf1_sparse": lambda: export_tf1_sparse("tf1_sparse"),
}


def main(names: list[str]) -> None:
    for name in names or list(JOBS):
        shutil.rmtree((COMPOSITE if name in ("composite_outputs", "tf1_sparse") else HERE) / name,
                      ignore_errors=True)
        JOBS[name]()


if __name__ == "__main__":
    main(sys.argv[1:])
