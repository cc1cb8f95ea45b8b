"""Export SavedModels with Keras 3's random image augmentation layers (RandomFlip,
RandomRotation, RandomZoom, RandomTranslation, RandomContrast), seeded, with inputs and
TensorFlow's outputs (same layout as make_models.py). Needs TensorFlow 2.21 and Keras 3.

- keras_augment: a Keras model of those layers before a small convolution, exported with
  model.export(). Keras 3's augmentation layers default to training=True, and a functional
  model called without `training` passes None on, so the exported serving signature AUGMENTS
  (it is not the identity at inference): each call draws new numbers (the layers' seed states
  are variables the call moves on), so two calls on one loaded model give different outputs.
- keras_augment_training: a tf.Module whose signature calls the same layers with training=True,
  each layer's output a signature output. Each layer draws from its own seeded Keras
  SeedGenerator (a variable the call moves on).

Besides <name>.io.npz, writes <name>.calls.npz: three calls in a row on one loaded model, which
tests/test_keras_augment.py replays.

Usage: python tests/data/models/make_models_keras_augment.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys

import keras
import numpy as np
import tensorflow as tf

from make_models import HERE, export_keras, export_module, keras_model

CALLS = 3


def _augmentations() -> list:
    return [keras.layers.RandomFlip("horizontal_and_vertical", seed=1),
            keras.layers.RandomRotation(0.2, fill_mode="reflect", seed=2),
            keras.layers.RandomZoom(0.2, 0.1, fill_mode="nearest", seed=3),
            keras.layers.RandomTranslation(0.1, 0.15, fill_mode="constant", seed=4),
            keras.layers.RandomContrast(0.4, seed=5)]


@keras_model
def keras_augment():
    inputs = keras.Input((8, 9, 3), name="image")
    x = inputs
    for layer in _augmentations():
        x = layer(x)
    x = keras.layers.Conv2D(2, 3, activation="relu")(x)
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))


class AugmentTraining(tf.Module):
    """The augmentation layers as they run in training."""

    def __init__(self):
        super().__init__()
        keras.utils.set_random_seed(0)
        self.layers = _augmentations()
        # Keras layers are not tf.Module children: track their seed states so they are saved.
        self.seed_states = [layer.generator.state.value for layer in self.layers]

    @tf.function(input_signature=[tf.TensorSpec([None, 8, 9, 3], tf.float32, name="image")])
    def augment(self, image):
        outputs, x = {}, image
        for layer in self.layers:
            x = layer(x, training=True)
            outputs[layer.__class__.__name__] = x
        return outputs


def record_calls(name: str, signature: str, inputs: dict) -> None:
    """CALLS calls in a row on one loaded model (<name>.calls.npz, keys
    <signature>/<call>/in|out/<key>): the seed states move on between calls."""
    function = tf.saved_model.load(str(HERE / name)).signatures[signature]
    arrays = {}
    for call in range(CALLS):
        outputs = function(**{k: tf.constant(v) for k, v in inputs.items()})
        arrays.update({f"{signature}/{call}/in/{k}": v for k, v in inputs.items()})
        arrays.update({f"{signature}/{call}/out/{k}": v.numpy() for k, v in outputs.items()})
    np.savez(HERE / f"{name}.calls.npz", **arrays)


def _image() -> np.ndarray:
    rng = np.random.default_rng(7)
    return rng.uniform(0, 255, (2, 8, 9, 3)).astype(np.float32)


def _export_keras_augment() -> None:
    export_keras("keras_augment", keras_augment(), {"image": _image()})
    record_calls("keras_augment", "serving_default", {"image": _image()})


def _export_keras_augment_training() -> None:
    export_module("keras_augment_training", AugmentTraining(), {"augment": {"image": _image()}})
    record_calls("keras_augment_training", "augment", {"image": _image()})


JOBS = {"keras_augment": _export_keras_augment, "keras_augment_training": _export_keras_augment_training}


def main(names: list[str]) -> None:
    for name in names or sorted(JOBS):
        shutil.rmtree(HERE / name, ignore_errors=True)
        JOBS[name]()
        print(name)


if __name__ == "__main__":
    main(sys.argv[1:])
