"""Export a Keras model of the convolution family (issue 14) with inputs and TensorFlow's outputs:
a dilated Conv1D (which TensorFlow exports as SpaceToBatchND -> Conv2D -> BatchToSpaceND), and
Conv3D, Conv3DTranspose, MaxPooling3D and AveragePooling3D over a small volume. Needs TensorFlow
2.21 and Keras 3. Writes tests/data/models/conv_family/ and conv_family.io.npz.

Usage: python tests/data/models/make_models_conv.py
"""
from __future__ import annotations

import shutil
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from make_models import HERE, export_keras, keras_model  # noqa: E402

import keras  # noqa: E402
import numpy as np  # noqa: E402


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


def main() -> None:
    rng = np.random.default_rng(14)
    shutil.rmtree(HERE / "conv_family", ignore_errors=True)
    export_keras("conv_family", conv_family(), {
        "sequence": rng.standard_normal((2, 16, 3)).astype(np.float32),
        "volume": rng.standard_normal((2, 6, 6, 6, 2)).astype(np.float32)})
    print("wrote conv_family")


if __name__ == "__main__":
    main()
