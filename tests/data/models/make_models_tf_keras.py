"""Export a tf-keras (Keras 2) model with TextVectorization, with inputs and TensorFlow's
outputs (same layout as make_models.py). Needs TensorFlow 2.21 and tf_keras 2.21, which the
project's other fixture scripts do not use; make them in a separate environment:
    python3 -m venv /tmp/tfk && /tmp/tfk/bin/pip install tensorflow-cpu==2.21.0 tf_keras==2.21.0
    /tmp/tfk/bin/python tests/data/models/make_models_tf_keras.py

- tf_keras_text_vectorization: a tf-keras Sequential of TextVectorization (word bigrams,
  adapted on a few sentences) and an Embedding, saved with tf.saved_model.save. tf-keras
  saves the layer's `adapt_step` tf.function (and the model's training functions) in the
  SavedModel, functions no signature needs: they must not stop the model from loading.

Usage: python tests/data/models/make_models_tf_keras.py
"""
from __future__ import annotations

import shutil

import numpy as np
import tensorflow as tf
import tf_keras

from make_models import HERE, save_io

NAME = "tf_keras_text_vectorization"
SENTENCES = ["the cat sat on the mat", "the dog ate my homework", "a cat and a dog",
             "my cat likes the dog", "nothing here"]


def tf_keras_text_vectorization():
    tf_keras.utils.set_random_seed(0)
    vectorize = tf_keras.layers.TextVectorization(max_tokens=40, ngrams=2, output_mode="int",
                                                  output_sequence_length=8)
    vectorize.adapt(SENTENCES)
    model = tf_keras.Sequential([tf_keras.Input(shape=(), dtype=tf.string, name="text"), vectorize,
                                 tf_keras.layers.Embedding(40, 3, name="embed")])
    return model


def main() -> None:
    path = HERE / NAME
    shutil.rmtree(path, ignore_errors=True)
    model = tf_keras_text_vectorization()
    tf.saved_model.save(model, str(path))
    text = np.array([b"the cat sat", b"my dog ate the mat", b"unknown words only", b""], dtype="S")
    loaded = tf.saved_model.load(str(path))
    save_io(NAME, {"serving_default": ({"text": text}, loaded.signatures["serving_default"](
        text=tf.constant(text)))})
    print(NAME, sorted(loaded.signatures["serving_default"].structured_outputs))


if __name__ == "__main__":
    main()
