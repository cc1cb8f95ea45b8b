"""Export a SavedModel that serves encoded images, with inputs and TensorFlow's outputs (same
layout as make_models.py). Needs TensorFlow 2.21.

- image_bytes_serving: the usual image-serving front end: a batch of encoded images (JPEG,
  and PNG through decode_image) as strings, each decoded (tf.map_fn over the batch), resized
  and scaled; plus the first image's shape read from the header, and the image re-encoded as
  JPEG and decoded again (the corpus compares arrays, not strings).

Usage: python tests/data/models/make_models_codecs.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys

import numpy as np
import tensorflow as tf

from make_models import HERE, export_module


class ImageBytesServing(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None], tf.string, name="jpegs")])
    def classify(self, jpegs):
        def decode(data):
            image = tf.io.decode_jpeg(data, channels=3, dct_method="INTEGER_ACCURATE")
            return tf.image.resize(tf.cast(image, tf.float32) / 255.0, [6, 6])

        pixels = tf.map_fn(decode, jpegs, fn_output_signature=tf.TensorSpec([6, 6, 3], tf.float32))
        first = tf.io.decode_jpeg(jpegs[0])
        return {"pixels": pixels, "shape": tf.io.extract_jpeg_shape(jpegs[0]),
                "reencoded": tf.io.decode_jpeg(tf.io.encode_jpeg(first, quality=70)),
                "default_decode": first}

    @tf.function(input_signature=[tf.TensorSpec([], tf.string, name="image")])
    def any_format(self, image):
        decoded = tf.io.decode_image(image, channels=3, dtype=tf.float32, expand_animations=False)
        return {"pixels": decoded, "mean": tf.reduce_mean(decoded, axis=[0, 1])}


def _pictures() -> list[np.ndarray]:
    rng = np.random.default_rng(11)
    y, x = np.mgrid[0:13, 0:17]
    smooth = np.stack([x * 15, y * 19, (x + y) * 8], axis=-1) % 256
    return [np.clip(smooth + rng.integers(-25, 26, smooth.shape), 0, 255).astype(np.uint8) for _ in range(3)]


def image_bytes_serving() -> None:
    pictures = _pictures()
    jpegs = np.array([tf.io.encode_jpeg(p, quality=85).numpy() for p in pictures], dtype=object)
    png = tf.io.encode_png(pictures[0]).numpy()
    export_module("image_bytes_serving", ImageBytesServing(), {
        "classify": {"jpegs": jpegs.astype("S")},
        "any_format": {"image": np.array(png, dtype="S")},
    })


JOBS = {"image_bytes_serving": image_bytes_serving}


def main(names: list[str]) -> None:
    for name in names or sorted(JOBS):
        shutil.rmtree(HERE / name, ignore_errors=True)
        JOBS[name]()
        print(name)


if __name__ == "__main__":
    main(sys.argv[1:])
