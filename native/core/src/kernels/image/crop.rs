//! CropAndResize: each box [y1, x1, y2, x2] (normalized coordinates, corners in any order)
//! of an image resampled to crop_size, bilinearly or to the nearest pixel, float32 out
//! whatever the image's dtype. Sampling positions follow TensorFlow's CPU kernel in float32
//! (a one-pixel crop samples the box's centre, computed in double); a row or column whose
//! position falls outside the image (or is not finite) gets extrapolation_value. Boxes are
//! spread over threads when the work is large.

use rayon::prelude::*;

use crate::engine::kernel::{boxed, fail, one, tensor_input, Kernel, NodeSpec};
use crate::kernels::image::filter::{output_size, to_f32};
use crate::kernels::image::nms::zeroed;
use crate::kernels::util::{int_values, make};
use crate::tensor::{element_count, Storage};

/// Output elements above which boxes are spread over threads.
const PARALLEL_ELEMENTS: usize = 1 << 16;

#[derive(Clone, Copy)]
struct Options {
    nearest: bool,
    fill: f32,
}

pub fn crop_and_resize(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let nearest = match node.attrs.string_or("method", "bilinear")? {
        "bilinear" => false,
        "nearest" => true,
        other => return Err(format!("method must be bilinear or nearest, got {other:?}")),
    };
    let options = Options {
        nearest,
        fill: node.attrs.float_or("extrapolation_value", 0.0)?,
    };
    Ok(boxed(move |_, inputs| {
        let image = tensor_input(inputs, 0)?;
        let boxes = tensor_input(inputs, 1)?;
        let box_index = tensor_input(inputs, 2)?;
        let &[batch, height, width, depth] = image.shape() else {
            return Err(fail(format!(
                "input image must be 4-D, got shape {:?}",
                image.shape()
            )));
        };
        if height == 0 || width == 0 {
            return Err(fail("image dimensions must be positive"));
        }
        let count = match boxes.shape() {
            &[count, 4] => count,
            shape => {
                return Err(fail(format!(
                    "boxes must be 2-D [num_boxes, 4], got shape {shape:?}"
                )))
            }
        };
        if box_index.shape() != [count] {
            return Err(fail(format!(
                "box_index has incompatible shape {:?} for {count} boxes",
                box_index.shape()
            )));
        }
        let (crop_height, crop_width) = output_size(&*tensor_input(inputs, 3)?, "crop_size")?;
        let indices = int_values(&box_index, "box_index")?
            .into_iter()
            .map(|b| usize::try_from(b).ok().filter(|&b| b < batch))
            .collect::<Option<Vec<usize>>>()
            .ok_or_else(|| fail(format!("box_index has values outside [0, {batch})")))?;
        let boxes = boxes
            .values::<f32>()
            .ok_or_else(|| fail(format!("boxes must be float32, got {}", boxes.dtype())))?;
        let shape = vec![count, crop_height, crop_width, depth];
        let total = element_count(&shape)
            .ok_or_else(|| fail(format!("output shape {shape:?} is too large")))?;
        let crop = Crop {
            image: to_f32(&image)?,
            size: [height, width, depth],
            out: [crop_height, crop_width],
            options,
        };
        let mut out: Vec<f32> = zeroed(total)?;
        let per_box = crop_height * crop_width * depth;
        if per_box > 0 {
            let body = |(b, dst): (usize, &mut [f32])| {
                crop.one(&boxes[b * 4..b * 4 + 4], indices[b], dst);
            };
            if total >= PARALLEL_ELEMENTS && count > 1 {
                out.par_chunks_mut(per_box).enumerate().for_each(body);
            } else {
                out.chunks_mut(per_box).enumerate().for_each(body);
            }
        }
        one(make(shape, Storage::Float32(out))?)
    }))
}

/// Sampling positions of one axis of one box: the input coordinate of each output row (or
/// column), None where it falls outside the image.
fn positions(start: f32, end: f32, out: usize, size: usize) -> Vec<Option<f32>> {
    let last = (size - 1) as f32;
    let at = |p: f32| Some(p).filter(|p| p.is_finite() && *p >= 0.0 && *p <= last);
    if out == 1 {
        let centre = 0.5 * (f64::from(start) + f64::from(end)) * (size - 1) as f64;
        return vec![at(centre as f32)];
    }
    let step = (end - start) * last / (out - 1) as f32;
    (0..out)
        .map(|i| at(start * last + i as f32 * step))
        .collect()
}

struct Crop {
    image: Vec<f32>,
    /// Height, width and depth of the image.
    size: [usize; 3],
    out: [usize; 2],
    options: Options,
}

impl Crop {
    /// The crop of one box from image `b` into `dst` (crop height × width × depth).
    fn one(&self, corners: &[f32], b: usize, dst: &mut [f32]) {
        let [height, width, depth] = self.size;
        let [out_height, out_width] = self.out;
        let ys = positions(corners[0], corners[2], out_height, height);
        let xs = positions(corners[1], corners[3], out_width, width);
        let image = &self.image[b * height * width * depth..(b + 1) * height * width * depth];
        let pixel =
            |y: usize, x: usize| &image[(y * width + x) * depth..(y * width + x + 1) * depth];
        for (row, y) in dst.chunks_exact_mut(out_width * depth).zip(&ys) {
            let Some(y) = *y else {
                row.fill(self.options.fill);
                continue;
            };
            for (out, x) in row.chunks_exact_mut(depth).zip(&xs) {
                let Some(x) = *x else {
                    out.fill(self.options.fill);
                    continue;
                };
                if self.options.nearest {
                    // std::round: halves away from zero (positions here are non-negative).
                    let (yi, xi) = (y.round() as usize, x.round() as usize);
                    out.copy_from_slice(pixel(yi.min(height - 1), xi.min(width - 1)));
                    continue;
                }
                let (top, left) = (y.floor(), x.floor());
                let (y_lerp, x_lerp) = (y - top, x - left);
                let (t, l) = (top as usize, left as usize);
                let (bo, r) = (
                    (y.ceil() as usize).min(height - 1),
                    (x.ceil() as usize).min(width - 1),
                );
                let (tl, tr, bl, br) = (pixel(t, l), pixel(t, r), pixel(bo, l), pixel(bo, r));
                for (c, o) in out.iter_mut().enumerate() {
                    let upper = tl[c] + (tr[c] - tl[c]) * x_lerp;
                    let lower = bl[c] + (br[c] - bl[c]) * x_lerp;
                    *o = upper + (lower - upper) * y_lerp;
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn positions_span_the_box_and_mark_the_outside() {
        let p = positions(0.0, 1.0, 3, 5);
        assert_eq!(p, vec![Some(0.0), Some(2.0), Some(4.0)]);
        let p = positions(-0.5, 0.5, 3, 5);
        assert_eq!(p, vec![None, Some(0.0), Some(2.0)]);
        assert_eq!(positions(0.25, 0.75, 1, 5), vec![Some(2.0)]);
        assert_eq!(positions(f32::NAN, 1.0, 2, 5), vec![None, None]);
    }
}
