"""Export the model the serving tests use, with TensorFlow's outputs. Needs TensorFlow 2.21.

`half_plus_three/00000123/`: like TensorFlow Serving's example model of the same name (its REST
documentation's curl examples run against it), written by TensorFlow's TF1 SavedModelBuilder so
its signatures carry the classify and regress method names:
- serving_default (predict): x float32 [?] -> y = 0.5 * x + 3
- tensorflow/serving/regress (regress): inputs string [?] (serialized tf.Example) ->
  outputs = 0.5 * (bytes in the serialized example) + 3  (the runtime has no ParseExample
  kernel, so the signature reads only the string's length)
- tensorflow/serving/classify (classify): inputs -> classes [?, 2] ("short", "long"), scores
- echo_bytes (predict): data string [?] -> data_bytes (the same strings; a `_bytes` output)
- two_outputs (predict): x float32 [?] -> y (as serving_default) and doubled = 2 * x

`half_plus_three.io.npz`: the examples the tests send, serialized as the server serializes the
REST examples (tf.train.Example, deterministic), and TensorFlow's outputs for each signature.
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
        if isinstance(value, str):
            feature.bytes_list.value.append(value.encode())
        else:
            feature.float_list.value.append(value)
    return message.SerializeToString(deterministic=True)


def build(export_dir: Path) -> None:
    v1 = tf.compat.v1
    with tf.Graph().as_default() as graph, v1.Session(graph=graph) as session:
        x = v1.placeholder(tf.float32, [None], name="x")
        y = tf.add(0.5 * x, 3.0, name="y")
        doubled = tf.multiply(2.0, x, name="doubled")
        examples = v1.placeholder(tf.string, [None], name="examples")
        length = tf.cast(tf.strings.length(examples), tf.float32)
        regression = tf.add(0.5 * length, 3.0, name="regression")
        batch = tf.shape(examples)[0]
        classes = tf.tile(tf.constant([["short", "long"]]), tf.stack([batch, 1]), name="classes")
        long_score = tf.sigmoid(length - 20.0)
        scores = tf.stack([1.0 - long_score, long_score], axis=1, name="scores")
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


def record(export_dir: Path) -> dict[str, np.ndarray]:
    loaded = tf.saved_model.load(str(export_dir))
    x = np.array([1.0, 2.0, 5.0], np.float32)
    strings = np.array([serialized(e) for e in EXAMPLES], object)
    calls = [("serving_default", "x", x), ("two_outputs", "x", x),
             ("echo_bytes", "data", np.array([b"\x00\xffbinary", b"text"], object)),
             ("tensorflow/serving/regress", "inputs", strings), ("tensorflow/serving/classify", "inputs", strings)]
    io = {}
    for signature, arg, value in calls:
        io[f"sig/{signature}/in/{arg}"] = value
        for out, result in loaded.signatures[signature](**{arg: tf.constant(value)}).items():
            io[f"sig/{signature}/out/{out}"] = result.numpy()
    return io


def main() -> None:
    target = HERE / "half_plus_three"
    with tempfile.TemporaryDirectory() as tmp:
        export_dir = Path(tmp) / "00000123"
        build(export_dir)
        io = record(export_dir)
        shutil.rmtree(target, ignore_errors=True)
        target.mkdir()
        shutil.copytree(export_dir, target / "00000123")
    np.savez(HERE / "half_plus_three.io.npz", allow_pickle=False,
             **{k: v.astype(bytes) if v.dtype == object else v for k, v in io.items()})


if __name__ == "__main__":
    main()
