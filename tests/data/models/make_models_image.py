"""Export TensorFlow-written SavedModels that use image and detection ops, with inputs and
TensorFlow's outputs (same layout as make_models.py). Needs TensorFlow 2.21 and Keras 3.

- keras_resizing: Keras Resizing (bilinear) before a convolution. (Keras 3's RandomFlip and
  RandomRotation are left out: although they pass images through at inference, their exported
  graphs still draw random numbers, StatelessRandomGetKeyCounter/StatelessRandomUniformV2, and
  run ImageProjectiveTransformV3, so such a model needs the stateless random ops as well.)
- keras_resizing_antialias: Resizing with antialias (ScaleAndTranslate), with
  crop_to_aspect_ratio (nearest neighbor after a crop) and bicubic and area resizes.
- detector_head: a tf.Module whose signatures take boxes and scores and return
  tf.image.combined_non_max_suppression's outputs, soft-NMS scores, and box crops.
- image_augment: the projective transform Keras' RandomRotation/RandomZoom emit in training, and
  colour adjustments (hue, saturation, contrast, HSV round trip).

Usage: python tests/data/models/make_models_image.py [NAME ...]   (default: all)
"""
from __future__ import annotations

import shutil
import sys

import keras
import numpy as np
import tensorflow as tf

from make_models import HERE, export_keras, export_module, keras_model


@keras_model
def keras_resizing():
    inputs = keras.Input((9, 11, 3), name="image")
    x = keras.layers.Resizing(6, 8, interpolation="bilinear")(inputs)
    x = keras.layers.Conv2D(4, 3, activation="relu")(x)
    return keras.Model(inputs, keras.layers.GlobalAveragePooling2D()(x))


@keras_model
def keras_resizing_antialias():
    inputs = keras.Input((12, 10, 3), name="image")
    smooth = keras.layers.Resizing(5, 4, interpolation="bilinear", antialias=True)(inputs)
    lanczos = keras.layers.Resizing(5, 4, interpolation="lanczos3", antialias=True)(inputs)
    cropped = keras.layers.Resizing(5, 4, interpolation="nearest", crop_to_aspect_ratio=True)(inputs)
    cubic = keras.layers.Resizing(5, 4, interpolation="bicubic")(inputs)
    area = keras.layers.Resizing(5, 4, interpolation="area")(inputs)
    return keras.Model(inputs, keras.layers.Concatenate()([smooth, lanczos, cropped, cubic, area]))


class DetectorHead(tf.Module):
    """Post-processing of a detector: per-class NMS over all anchors, soft-NMS of one class,
    and crops of the kept boxes from the image (as a second stage would take them)."""

    @tf.function(input_signature=[tf.TensorSpec([None, None, 1, 4], tf.float32, name="boxes"),
                                  tf.TensorSpec([None, None, 3], tf.float32, name="scores")])
    def detect(self, boxes, scores):
        found = tf.image.combined_non_max_suppression(
            boxes, scores, max_output_size_per_class=4, max_total_size=6, iou_threshold=0.5,
            score_threshold=0.2, clip_boxes=True)
        return {"boxes": found.nmsed_boxes, "scores": found.nmsed_scores,
                "classes": found.nmsed_classes, "count": found.valid_detections}

    @tf.function(input_signature=[tf.TensorSpec([None, 4], tf.float32, name="boxes"),
                                  tf.TensorSpec([None], tf.float32, name="scores"),
                                  tf.TensorSpec([1, None, None, 3], tf.float32, name="image")])
    def soft(self, boxes, scores, image):
        indices, kept = tf.image.non_max_suppression_with_scores(
            boxes, scores, max_output_size=5, iou_threshold=1.0, score_threshold=0.1,
            soft_nms_sigma=0.5)
        crops = tf.image.crop_and_resize(image, tf.gather(boxes, indices),
                                         tf.zeros_like(indices), crop_size=[4, 4])
        return {"indices": indices, "scores": kept, "crops": crops}


class ImageAugment(tf.Module):
    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32, name="image"),
                                  tf.TensorSpec([None, 8], tf.float32, name="transforms")])
    def transform(self, image, transforms):
        size = tf.shape(image)[1:3]
        warped = tf.raw_ops.ImageProjectiveTransformV3(
            images=image, transforms=transforms, output_shape=size, fill_value=0.0,
            interpolation="BILINEAR", fill_mode="REFLECT")
        nearest = tf.raw_ops.ImageProjectiveTransformV3(
            images=image, transforms=transforms, output_shape=size, fill_value=0.5,
            interpolation="NEAREST", fill_mode="CONSTANT")
        return {"warped": warped, "nearest": nearest}

    @tf.function(input_signature=[tf.TensorSpec([None, None, None, 3], tf.float32, name="image")])
    def colors(self, image):
        adjusted = tf.image.adjust_hue(image, 0.15)
        adjusted = tf.image.adjust_saturation(adjusted, 1.4)
        adjusted = tf.image.adjust_contrast(adjusted, 0.8)
        hsv = tf.image.rgb_to_hsv(adjusted)
        return {"adjusted": adjusted, "hsv": hsv, "back": tf.image.hsv_to_rgb(hsv)}


def _distinct_scores(rng, *shape):
    values = rng.permutation(np.prod(shape)).astype(np.float32) / np.prod(shape)
    return (values * 0.98 + 0.01).reshape(shape).astype(np.float32)


def _boxes(rng, n):
    centres = rng.uniform(0, 1, (n, 2))
    sizes = rng.uniform(0.1, 0.5, (n, 2))
    return np.concatenate([centres - sizes / 2, centres + sizes / 2], axis=1).astype(np.float32)


def main(names: list[str]) -> None:
    rng = np.random.default_rng(14)
    angle = 0.3
    rotate = [np.cos(angle), -np.sin(angle), 2.0, np.sin(angle), np.cos(angle), -1.5, 0, 0]
    zoom = [0.8, 0, 1.0, 0, 1.25, -0.8, 0, 0]
    jobs = {
        "keras_resizing": lambda: export_keras("keras_resizing", keras_resizing(), {
            "image": rng.uniform(0, 255, (2, 9, 11, 3)).astype(np.float32)}),
        "keras_resizing_antialias": lambda: export_keras(
            "keras_resizing_antialias", keras_resizing_antialias(), {
                "image": rng.uniform(0, 1, (2, 12, 10, 3)).astype(np.float32)}),
        "detector_head": lambda: export_module("detector_head", DetectorHead(), {
            "detect": {"boxes": np.stack([_boxes(rng, 10) for _ in range(2)])[:, :, None, :],
                       "scores": _distinct_scores(rng, 2, 10, 3)},
            "soft": {"boxes": _boxes(rng, 8), "scores": _distinct_scores(rng, 8),
                     "image": rng.uniform(0, 1, (1, 10, 12, 3)).astype(np.float32)}}),
        "image_augment": lambda: export_module("image_augment", ImageAugment(), {
            "transform": {"image": rng.uniform(0, 1, (2, 7, 9, 3)).astype(np.float32),
                          "transforms": np.array([rotate, zoom], np.float32)},
            "colors": {"image": rng.uniform(0, 1, (2, 5, 6, 3)).astype(np.float32)}}),
    }
    for name in names or list(jobs):
        shutil.rmtree(HERE / name, ignore_errors=True)
        jobs[name]()
        print("wrote", name)


if __name__ == "__main__":
    main(sys.argv[1:])
