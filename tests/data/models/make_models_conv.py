"""Export models of issue 14's convolution, segment and search families with inputs and
TensorFlow's outputs. Needs TensorFlow 2.21 and Keras 3; run with TF_ENABLE_ONEDNN_OPTS=0 so
that TensorFlow's own CPU kernels give the expected outputs (as tests/conftest.py has it).

- conv_family: a Keras model with a dilated Conv1D (which TensorFlow exports as SpaceToBatchND ->
  Conv2D -> BatchToSpaceND), and Conv3D, Conv3DTranspose, MaxPooling3D and AveragePooling3D over a
  small volume.
- swish_cnn: EfficientNet's building blocks: convolutions, depthwise convolutions and dense
  layers followed by swish (Keras writes x * sigmoid(1 * x)), a squeeze-and-excitation block, a
  residual add, and a swish whose input something else reads too (the native engine fuses the
  others into the convolution before it).
- segments_search: a tf.Module whose signature uses segment reductions (sorted, unsorted,
  sparse), dynamic partition and stitch, tensor scatter, searchsorted, bucketize, roll,
  reverse_sequence, cumulative_logsumexp and both CTC decoders.

Writes tests/data/models/<name>/ and <name>.io.npz.
Usage: python tests/data/models/make_models_conv.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_models import HERE, export_keras, export_module, keras_model  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402
import tensorflow as tf  # noqa: E402


@keras_model
def conv_family():
    sequence = keras.Input((16, 3), name="sequence")
    s = keras.layers.Conv1D(4, 3, dilation_rate=2, padding="same", activation="relu")(sequence)
    s = keras.layers.Conv1D(2, 2, dilation_rate=3, padding="valid")(s)
    volume = keras.Input((6, 6, 6, 2), name="volume")
    v = keras.layers.Conv3D(4, 3, padding="same", activation="relu")(volume)
    v = keras.layers.MaxPooling3D(2)(v)
    v = keras.layers.Conv3DTranspose(3, 2, strides=2, padding="valid")(v)
    v = keras.layers.AveragePooling3D((2, 3, 2), strides=(1, 2, 2), padding="same")(v)
    v = keras.layers.Conv3D(2, (1, 2, 2), strides=(1, 2, 1), padding="valid")(v)
    return keras.Model([sequence, volume], {"sequence_features": s,
                                            "volume_features": keras.layers.Flatten()(v)})


@keras_model
def swish_cnn():
    image = keras.Input((10, 10, 3), name="image")
    x = keras.layers.Conv2D(8, 3, padding="same", use_bias=False)(image)
    x = keras.layers.BatchNormalization()(x)
    x = keras.layers.Activation("swish")(x)
    y = keras.layers.DepthwiseConv2D(3, padding="same", use_bias=False)(x)
    y = keras.layers.BatchNormalization()(y)
    y = keras.layers.Activation("silu")(y)
    se = keras.layers.GlobalAveragePooling2D(keepdims=True)(y)
    se = keras.layers.Conv2D(2, 1, activation="swish")(se)
    se = keras.layers.Conv2D(8, 1, activation="sigmoid")(se)
    y = keras.layers.Multiply()([y, se])
    y = keras.layers.Conv2D(8, 1, use_bias=False)(y)
    y = keras.layers.BatchNormalization()(y)
    x = keras.layers.Add()([x, y])
    shared = keras.layers.Conv2D(4, 3, strides=2)(x)
    x = keras.layers.Activation("swish")(shared)
    x = keras.layers.Concatenate()([x, shared])
    x = keras.layers.Flatten()(x)
    return keras.Model(image, keras.layers.Dense(3, activation="swish")(x))


class SegmentsAndSearch(tf.Module):
    """Segment, scatter and search ops as tf.math, tf.nn and tf.sparse emit them."""

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="x"),
                                  tf.TensorSpec([None], tf.int32, name="ids"),
                                  tf.TensorSpec([6, None, 5], tf.float32, name="logits")])
    def serve(self, x, ids, logits):
        ordered = tf.sort(ids)
        rows = tf.shape(x)[0]
        parts = tf.dynamic_partition(x, ids % 2, 2)
        positions = tf.dynamic_partition(tf.range(rows), ids % 2, 2)
        batch = tf.shape(logits)[1]
        lengths = tf.fill([batch], 6) - tf.range(batch) % 3
        greedy, greedy_score = tf.nn.ctc_greedy_decoder(logits, lengths)
        beams, beam_scores = tf.nn.ctc_beam_search_decoder(logits, lengths, beam_width=4,
                                                           top_paths=2)
        edges = tf.sort(x[:, 0])
        return {
            "unsorted_max": tf.math.unsorted_segment_max(x, ids, 4),
            "unsorted_sum": tf.math.unsorted_segment_sum(x, ids - 1, 4),
            "segment_mean": tf.math.segment_mean(x, ordered),
            "segment_min": tf.math.segment_min(x, ordered),
            "sparse_sqrt_n": tf.sparse.segment_sqrt_n(x, tf.reverse(tf.range(rows), [0]), ordered),
            "sparse_sum_n": tf.sparse.segment_sum(x, tf.range(rows), ordered, num_segments=5),
            "stitched": tf.dynamic_stitch(positions, parts),
            "scatter_max": tf.tensor_scatter_nd_max(x, tf.reshape(ids % rows, [-1, 1]), x * 2.0),
            "scatter_sub": tf.tensor_scatter_nd_sub(x, tf.reshape(ids % rows, [-1, 1]), x),
            "searchsorted": tf.searchsorted(edges[None], x[:, 1][None], side="right"),
            "bucketized": tf.raw_ops.Bucketize(input=x, boundaries=[-1.0, 0.0, 0.5, 1.0]),
            "rolled": tf.roll(x, shift=[1, -1], axis=[0, 1]),
            "reversed": tf.reverse_sequence(x, tf.fill([rows], 3), seq_axis=1, batch_axis=0),
            "logsumexp": tf.math.cumulative_logsumexp(x, axis=1, reverse=True),
            "greedy_values": greedy[0].values, "greedy_indices": greedy[0].indices,
            "greedy_score": greedy_score,
            "beam_values": beams[1].values, "beam_indices": beams[1].indices,
            "beam_scores": beam_scores,
        }


def main(names: list[str]) -> None:
    rng = np.random.default_rng(14)
    jobs = {
        "conv_family": lambda: export_keras("conv_family", conv_family(), {
            "sequence": rng.standard_normal((2, 16, 3)).astype(np.float32),
            "volume": rng.standard_normal((2, 6, 6, 6, 2)).astype(np.float32)}),
        "swish_cnn": lambda: export_keras("swish_cnn", swish_cnn(), {
            "image": rng.standard_normal((2, 10, 10, 3)).astype(np.float32) * 2}),
        "segments_search": lambda: export_module("segments_search", SegmentsAndSearch(), {
            "serve": {"x": rng.standard_normal((7, 4)).astype(np.float32),
                      "ids": np.array([3, 0, 3, 1, 0, 3, 2], np.int32),
                      "logits": rng.standard_normal((6, 3, 5)).astype(np.float32) * 2}}),
    }
    for name in names or list(jobs):
        shutil.rmtree(HERE / name, ignore_errors=True)
        jobs[name]()
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])
