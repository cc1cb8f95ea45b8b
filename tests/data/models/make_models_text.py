"""Export TensorFlow-written SavedModels that preprocess text with the string ops of issue 14,
with inputs and TensorFlow's outputs (same layout as make_models.py). Needs TensorFlow 2.21 and
Keras 3. tf-keras is not installed beside them, so no tf-keras export is made.

- keras_text_ngrams_chars: two Keras 3 TextVectorization layers on one input, one with
  ngrams=2 over whitespace tokens (StringNGrams), one with split="character"
  (UnicodeDecode + UnicodeEncode), and a Hashing layer with a salt (StringToHashBucketStrong).
- string_ops_module: a tf.Module whose signature uses the other string ops (case, strip,
  hashing, splitting, n-grams with padding, joins, Unicode transcoding and decoding).

Usage: python tests/data/models/make_models_text.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys

import keras
import numpy as np
import tensorflow as tf

from make_models import HERE, export_keras, export_module, keras_model


@keras_model
def keras_text_ngrams_chars():
    text = keras.Input((), dtype="string", name="text")
    bigrams = keras.layers.TextVectorization(
        vocabulary=["the", "cat", "the cat", "sat", "cat sat", "é"], ngrams=2,
        output_sequence_length=8)
    chars = keras.layers.TextVectorization(
        vocabulary=list("abcdeéhst"), split="character", output_sequence_length=10)
    salted = keras.layers.Hashing(num_bins=7, salt=[5, 9])
    return keras.Model(text, {"bigrams": bigrams(text), "chars": chars(text),
                              "salted_hash": salted(text)})


def _fingerprint(strings: tf.Tensor) -> tf.Tensor:
    """String outputs as int64s that change with every byte (FarmHash Fingerprint64 modulo
    2**62): .npz files hold bytes arrays only without pickle, and those drop trailing NULs."""
    return tf.strings.to_hash_bucket_fast(strings, 2**62)


class StringOps(tf.Module):
    """Each output exercises one op family on the same batch of sentences."""

    @tf.function(input_signature=[tf.TensorSpec([None], tf.string)])
    def run(self, text):
        clean = tf.strings.strip(tf.strings.upper(text, encoding="utf-8"))
        words = tf.strings.split(clean)
        sparse = tf.compat.v1.string_split(clean, delimiter=" ,", skip_empty=True)
        trigrams = tf.strings.ngrams(words, 3, separator="_", pad_values=("<s>", "</s>"),
                                     padding_width=1, preserve_short_sequences=True)
        segments = tf.strings.unsorted_segment_join(
            sparse.values, sparse.indices[:, 0], tf.shape(text)[0], separator="|")
        code_points = tf.strings.unicode_decode(text, "UTF-8", errors="replace")
        return {
            "upper_stripped": _fingerprint(clean),
            "hash_strong": tf.strings.to_hash_bucket_strong(clean, 97, key=[7, 11]),
            "hash_legacy": tf.strings.to_hash_bucket(clean, 97),
            "trigrams": _fingerprint(tf.strings.reduce_join(trigrams, axis=-1, separator=" ")),
            "joined_rows": _fingerprint(
                tf.strings.reduce_join(trigrams.to_tensor("-"), axis=1, separator=",")),
            "segments": _fingerprint(segments),
            "code_points": code_points.to_tensor(-1),
            "utf16": _fingerprint(
                tf.strings.unicode_transcode(text, "UTF-8", "UTF-16-BE", errors="replace")),
            "utf32": _fingerprint(tf.strings.unicode_encode(code_points, "UTF-32-BE")),
        }


def _bytes(*texts: str) -> np.ndarray:
    """UTF-8 strings as a numpy bytes array (what .npz files hold without pickling)."""
    return np.array([t.encode() for t in texts], dtype="S")


def jobs() -> dict:
    sentences = _bytes("The cat sat", "", "  the cat  é ", "é a b c d", "sat, cat, the")
    return {
        "keras_text_ngrams_chars": lambda: export_keras(
            "keras_text_ngrams_chars", keras_text_ngrams_chars(), {"text": _bytes(
                "The cat sat", "", "the the cat é", "béd hats", "a b c d e f g h i j k")}),
        "string_ops_module": lambda: export_module(
            "string_ops_module", StringOps(), {"run": {"text": np.concatenate(
                [sentences, np.array([b"bad \xff byte\xe2\x82"])])}}),
    }


def main(names: list[str]) -> None:
    found = jobs()
    for name in names or list(found):
        shutil.rmtree(HERE / name, ignore_errors=True)
        found[name]()
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])
