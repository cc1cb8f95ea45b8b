"""Export the models the serving tests use, with TensorFlow's outputs. Needs TensorFlow 2.21.

`half_plus_three/00000123/`: like TensorFlow Serving's example model of the same name (its REST
documentation's curl examples run against it), written by TensorFlow's TF1 SavedModelBuilder so
its signatures carry the classify and regress method names:
- serving_default (predict): x float32 [?] -> y = 0.5 * x + 3
- tensorflow/serving/regress (regress): inputs string [?] (serialized tf.Example), parsed with
  tf.io.parse_example (ParseExampleV2) for feature "x" (float, [1], required) ->
  outputs = 0.5 * x + 3, [?, 1]
- tensorflow/serving/classify (classify): inputs, parsed the same way -> classes [?, 2]
  ("small", "large"), scores [?, 2] (sigmoid(x - 2) for "large")
- echo_bytes (predict): data string [?] -> data_bytes (the same strings; a `_bytes` output)
- two_outputs (predict): x float32 [?] -> y (as serving_default) and doubled = 2 * x

`fruit/00000001/`: a TensorFlow 1 style classifier whose classify signature parses with the
version 1 ParseExample op: "weight" (float, [1], default 0) and "tags" (string, variable
length: a sparse feature) -> classes [?, 2] ("apple", "pear"), scores [?, 2]
(sigmoid(0.5 * weight - number of tags) for "pear").

`<model>.io.npz`: the examples the tests send, serialized as the server serializes the REST
examples (tf.train.Example, deterministic), and TensorFlow's outputs for each signature.
Usage: /work/main/.venv/bin/python tests/data/serving/make_models.py
"""
from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path

os.environ.setdefault("TF_CPP_MIN_LOG_LEVEL", "3")
os.environ.setdefault("TF_ENABLE_ONEDNN_OPTS", "0")  # TensorFlow's own kernels on every CPU (tests/conftest.py)
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402

HERE = Path(__file__).resolve().parent
EXAMPLES = [{"x": 1.0}, {"x": 2.0}, {"x": 5.0, "tag": "seaside"}]
"""The REST examples of the tests (TensorFlow Serving's documented regress request, and one more)."""


def serialized(example: dict) -> bytes:
    message = tf.train.Example()
    for name, value in example.items():
        feature = message.features.feature[name]
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str):
                feature.bytes_list.value.append(item.encode())
            else:
                feature.float_list.value.append(item)
    return message.SerializeToString(deterministic=True)


def half_plus_three(export_dir: Path) -> None:
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph, v1.Session(graph=graph) as session:
        x = v1.placeholder(tf.float32, [None], name="x")
        y = tf.add(0.5 * x, 3.0, name="y")
        doubled = tf.multiply(2.0, x, name="doubled")
        examples = v1.placeholder(tf.string, [None], name="examples")
        parsed = tf.io.parse_example(examples, {"x": tf.io.FixedLenFeature([1], tf.float32)})["x"]
        regression = tf.add(0.5 * parsed, 3.0, name="regression")
        batch = tf.shape(examples)[0]
        classes = tf.tile(tf.constant([["small", "large"]]), tf.stack([batch, 1]), name="classes")
        large = tf.sigmoid(parsed - 2.0)
        scores = tf.concat([1.0 - large, large], axis=1, name="scores")
        data = v1.placeholder(tf.string, [None], name="data")
        data_bytes = tf.identity(data, name="data_bytes")
        sigs = v1.saved_model.signature_def_utils
        builder = v1.saved_model.Builder(str(export_dir))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={
            "serving_default": sigs.predict_signature_def({"x": x}, {"y": y}),
            "tensorflow/serving/regress": sigs.regression_signature_def(examples, regression),
            "tensorflow/serving/classify": sigs.classification_signature_def(examples, classes, scores),
            "echo_bytes": sigs.predict_signature_def({"data": data}, {"data_bytes": data_bytes}),
            "two_outputs": sigs.predict_signature_def({"x": x}, {"y": y, "doubled": doubled}),
        })
        builder.save()


def fruit(export_dir: Path) -> None:
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph, v1.Session(graph=graph) as session:
        examples = v1.placeholder(tf.string, [None], name="examples")
        parsed = tf.raw_ops.ParseExample(
            serialized=examples, names=[], sparse_keys=[tf.constant("tags")], dense_keys=[tf.constant("weight")],
            dense_defaults=[tf.constant([0.0])], sparse_types=[tf.string], dense_shapes=[[1]])
        (tag_indices,), (weight,) = parsed.sparse_indices, parsed.dense_values
        batch = tf.shape(examples)[0]
        tag_count = tf.math.unsorted_segment_sum(tf.ones_like(tag_indices[:, 0], tf.float32), tag_indices[:, 0], batch)
        pear = tf.sigmoid(0.5 * weight[:, 0] - tag_count)
        scores = tf.stack([1.0 - pear, pear], axis=1, name="scores")
        classes = tf.tile(tf.constant([["apple", "pear"]]), tf.stack([batch, 1]), name="classes")
        builder = v1.saved_model.Builder(str(export_dir))
        builder.add_meta_graph_and_variables(session, ["serve"], signature_def_map={
            "serving_default": v1.saved_model.signature_def_utils.classification_signature_def(
                examples, classes, scores)})
        builder.save()


FRUIT_EXAMPLES = [{"weight": 4.0, "tags": "round"}, {"weight": 1.0}, {"tags": ["green", "long"]}]


def record(export_dir: Path, calls: list) -> dict[str, np.ndarray]:
    loaded = tf.saved_model.load(str(export_dir))
    io = {}
    for signature, arg, value in calls:
        io[f"sig/{signature}/in/{arg}"] = value
        for out, result in loaded.signatures[signature](**{arg: tf.constant(value)}).items():
            io[f"sig/{signature}/out/{out}"] = result.numpy()
    return io


def half_plus_three_calls() -> list:
    x = np.array([1.0, 2.0, 5.0], np.float32)
    strings = np.array([serialized(e) for e in EXAMPLES], object)
    return [("serving_default", "x", x), ("two_outputs", "x", x),
            ("echo_bytes", "data", np.array([b"\x00\xffbinary", b"text"], object)),
            ("tensorflow/serving/regress", "inputs", strings), ("tensorflow/serving/classify", "inputs", strings)]


def export(name: str, version: str, build, calls: list) -> None:
    target = HERE / name
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = Path(tmp) / version
        build(export_dir)
        io = record(export_dir, calls)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        shutil.copytree(export_dir, target / version)
    np.savez(HERE / f"{name}.io.npz", allow_pickle=False,
             **{k: v.astype(bytes) if v.dtype == object else v for k, v in io.items()})


def main() -> None:
    export("half_plus_three", "00000123", half_plus_three, half_plus_three_calls())
    fruit_strings = np.array([serialized(e) for e in FRUIT_EXAMPLES], object)
    export("fruit", "00000001", fruit, [("serving_default", "inputs", fruit_strings)])


if __name__ == "__main__":
    main()
