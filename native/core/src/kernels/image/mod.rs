//! Image kernels: the resizes (bilinear, nearest neighbor, bicubic, area), ScaleAndTranslate
//! (filtered resampling, what `tf.image.resize` with antialias runs), the colour conversions
//! and adjustments, projective transforms, EnsureShape, and the detection ops: CropAndResize
//! and non-max suppression (every NonMaxSuppression version and CombinedNonMaxSuppression).
//!
//! They follow the arithmetic of TensorFlow's CPU kernels (and so of the reference engine's
//! `runtime/kernels/image.py`): sampling positions in float32, computed once per output row
//! and column; filtered resizes work separably, one axis then the other, in the order
//! TensorFlow's do, so NaN and infinity reach the pixels they reach there. Images are NHWC, and
//! every inner loop runs over a contiguous row of channels (or a whole row), so it vectorizes;
//! output rows are spread over threads when the work is large.

use crate::engine::kernel::Registry;

mod color;
mod crop;
mod ensure;
mod filter;
mod nms;
mod resize;
mod scale;
mod transform;

pub fn register(r: &mut Registry) {
    r.add("ResizeBilinear", resize::resize_bilinear);
    r.add("ResizeNearestNeighbor", resize::resize_nearest_neighbor);
    r.add("ResizeBicubic", resize::resize_bicubic);
    r.add("ResizeArea", resize::resize_area);
    r.add("ScaleAndTranslate", scale::scale_and_translate);
    r.add("EnsureShape", ensure::ensure_shape);
    r.add(
        "ImageProjectiveTransformV2",
        transform::image_projective_transform_v2,
    );
    r.add(
        "ImageProjectiveTransformV3",
        transform::image_projective_transform_v3,
    );
    r.add("RGBToHSV", color::rgb_to_hsv);
    r.add("HSVToRGB", color::hsv_to_rgb);
    r.add("AdjustContrastv2", color::adjust_contrast_v2);
    r.add("AdjustHue", color::adjust_hue);
    r.add("AdjustSaturation", color::adjust_saturation);
    r.add("CropAndResize", crop::crop_and_resize);
    r.add("NonMaxSuppression", nms::non_max_suppression);
    r.add("NonMaxSuppressionV2", nms::non_max_suppression_v2);
    r.add("NonMaxSuppressionV3", nms::non_max_suppression_v3);
    r.add("NonMaxSuppressionV4", nms::non_max_suppression_v4);
    r.add("NonMaxSuppressionV5", nms::non_max_suppression_v5);
    r.add(
        "NonMaxSuppressionWithOverlaps",
        nms::non_max_suppression_with_overlaps,
    );
    r.add(
        "CombinedNonMaxSuppression",
        nms::combined_non_max_suppression,
    );
}
