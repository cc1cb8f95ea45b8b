"""Export SavedModels that draw random numbers, with TensorFlow's outputs of several calls.

- random_stateful: stateful ops (uniform, normal, truncated normal, uniform int, categorical)
  under a global seed, some with op seeds; each call of a loaded model moves every node's
  generator on, so call N gives other numbers than call 1.
- random_generator: a tf.random.Generator's state moved on by RngReadAndSkip, the older
  Stateful* ops and RngSkip on another generator, and the stateless tf.random.stateless_*
  functions (StatelessRandomGetKeyCounter + V2 ops) with a fixed seed and with a seed fed as
  input.

Writes <name>/, <name>.io.npz (first call of each signature on a freshly loaded model, as
make_models.py does) and <name>.calls.npz (keys <signature>/<call>/in|out/<key>, calls 0..2 of
each signature on one loaded model), which tests/test_random_ops.py replays call by call.
Usage: python tests/data/models/make_models_random.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys

from make_models import HERE, save_io, tf  # sets TensorFlow's log level before importing it
import numpy as np

CALLS = 3


class Stateful(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, 3], tf.float32)])
    def draw(self, x):
        logits = tf.constant([[0.0, 1.0, -1.0, 2.0], [3.0, 3.0, -5.0, 0.0]])
        return {"noisy": x + tf.random.uniform(tf.shape(x), -1.0, 1.0),
                "normal": tf.random.normal([5], seed=7),
                "truncated": tf.random.truncated_normal([2, 3], dtype=tf.float64, seed=8),
                "ints": tf.random.uniform([7], maxval=100, dtype=tf.int64, seed=9),
                "classes": tf.random.categorical(logits, 6, seed=10)}

    @tf.function(input_signature=[])
    def half(self):
        return {"values": tf.random.normal([3], dtype=tf.float16)}


class Generators(tf.Module):
    def __init__(self):
        super().__init__()
        self.generator = tf.random.Generator.from_seed(42)
        self.older = tf.random.Generator.from_seed(-3)

    @tf.function(input_signature=[tf.TensorSpec([], tf.uint64)])
    def skip(self, delta):
        state = tf.raw_ops.RngReadAndSkip(resource=self.generator.state.handle, alg=1, delta=delta)
        return {"state": state}

    @tf.function(input_signature=[])
    def stateful_ops(self):
        """The ops Generator methods used before RngReadAndSkip, on a generator of their own."""
        handle, philox = self.older.state.handle, tf.constant(1, tf.int64)
        values = {"uniform": tf.raw_ops.StatefulUniform(resource=handle, algorithm=philox, shape=[5],
                                                        dtype=tf.float32),
                  "normal": tf.raw_ops.StatefulStandardNormalV2(resource=handle, algorithm=philox, shape=[3],
                                                                dtype=tf.float64),
                  "truncated": tf.raw_ops.StatefulTruncatedNormal(resource=handle, algorithm=philox,
                                                                  shape=[2, 3], dtype=tf.float16)}
        with tf.control_dependencies(values.values()):
            ints = tf.raw_ops.StatefulUniformInt(resource=handle, algorithm=philox, shape=[4],
                                                 minval=tf.constant(-10, tf.int64),
                                                 maxval=tf.constant(10, tf.int64))
        with tf.control_dependencies([ints]):
            full = tf.raw_ops.StatefulUniformFullInt(resource=handle, algorithm=tf.constant(3, tf.int64),
                                                     shape=[3], dtype=tf.uint32)
        with tf.control_dependencies([full]):
            skip = tf.raw_ops.RngSkip(resource=handle, algorithm=philox, delta=tf.constant(2, tf.int64))
        with tf.control_dependencies([skip]):
            state = self.older.state.read_value()
        return {**values, "ints": ints, "full": full, "state": state}

    @tf.function(input_signature=[tf.TensorSpec([2], tf.int32)])
    def stateless(self, seed):
        return {"uniform": tf.random.stateless_uniform([5], seed=[3, 4]),
                "normal": tf.random.stateless_normal([2, 3], seed=seed, dtype=tf.float64),
                "truncated": tf.random.stateless_truncated_normal([6], seed=seed),
                "ints": tf.random.stateless_uniform([4], seed=seed, minval=-5, maxval=5, dtype=tf.int32),
                "full": tf.random.stateless_uniform([3], seed=seed, minval=None, maxval=None,
                                                    dtype=tf.uint64),
                "classes": tf.random.stateless_categorical([[0.5, 0.2, 0.3]], 5, seed=seed)}


def export_calls(name: str, module: tf.Module, calls: dict) -> None:
    """Save the module; record each signature's first call on a fresh load (the .io.npz of
    the model corpus) and CALLS calls in a row on one load (the .calls.npz)."""
    path = HERE / name
    tf.saved_model.save(module, str(path), signatures={k: getattr(module, k) for k in calls})
    first, arrays = {}, {}
    for signature, inputs in calls.items():
        feeds = {k: tf.constant(v) for k, v in inputs.items()}
        first[signature] = (inputs, tf.saved_model.load(str(path)).signatures[signature](**feeds))
        function = tf.saved_model.load(str(path)).signatures[signature]
        for call in range(CALLS):
            outputs = function(**feeds)
            arrays.update({f"{signature}/{call}/in/{k}": v for k, v in inputs.items()})
            arrays.update({f"{signature}/{call}/out/{k}": v.numpy() for k, v in outputs.items()})
    save_io(name, first)
    np.savez(HERE / f"{name}.calls.npz", **arrays)


def main(names: list[str]) -> None:
    tf.random.set_seed(1234)
    jobs = {
        "random_stateful": lambda: export_calls("random_stateful", Stateful(), {
            "draw": {"x": np.arange(6, dtype=np.float32).reshape(2, 3)}, "half": {}}),
        "random_generator": lambda: export_calls("random_generator", Generators(), {
            "skip": {"delta": np.array(3, np.uint64)}, "stateful_ops": {},
            "stateless": {"seed": np.array([-8, 2 ** 31 - 1], np.int32)}}),
    }
    for name in names or list(jobs):
        shutil.rmtree(HERE / name, ignore_errors=True)
        jobs[name]()
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])
