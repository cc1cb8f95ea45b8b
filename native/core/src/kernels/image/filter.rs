//! What the image kernels share: the checks on an NHWC image and a requested size, widening
//! any real dtype to f32 (TensorFlow's resizes compute in float32), and separable filtering
//! with precomputed taps along the rows or the columns of an image.

use rayon::prelude::*;

use crate::engine::kernel::{fail, KResult};
use crate::kernels::util::{half_to_f32, int_values};
use crate::tensor::{element_count, Storage, Tensor};

/// Multiply-adds above which a pass is spread over threads.
const PARALLEL_WORK: usize = 1 << 18;

/// Weight sums smaller than this leave weights unnormalized (TensorFlow's guard).
pub const TINY: f32 = 1000.0 * f32::MIN_POSITIVE;

/// The dimensions of an NHWC image batch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Geometry {
    pub batch: usize,
    pub height: usize,
    pub width: usize,
    pub channels: usize,
}

impl Geometry {
    /// The geometry of a rank-4 tensor, which must have channels and a non-empty image.
    pub fn of(images: &Tensor) -> KResult<Self> {
        let &[batch, height, width, channels] = images.shape() else {
            return Err(fail(format!(
                "input must be 4-dimensional, got shape {:?}",
                images.shape()
            )));
        };
        if channels == 0 {
            return Err(fail("image must have at least one channel"));
        }
        if height == 0 || width == 0 {
            return Err(fail("input image must be of non-zero size"));
        }
        Ok(Self {
            batch,
            height,
            width,
            channels,
        })
    }

    /// This geometry with another height and width.
    pub fn resized(self, height: usize, width: usize) -> Self {
        Self {
            height,
            width,
            ..self
        }
    }

    pub fn shape(self) -> Vec<usize> {
        vec![self.batch, self.height, self.width, self.channels]
    }

    /// The element count, checked against overflow.
    pub fn count(self) -> KResult<usize> {
        element_count(&self.shape())
            .ok_or_else(|| fail(format!("output shape {:?} is too large", self.shape())))
    }
}

/// A requested output size: a vector of two positive integers.
pub fn output_size(size: &Tensor, what: &str) -> KResult<(usize, usize)> {
    if size.rank() != 1 {
        return Err(fail(format!(
            "{what} must be 1-dimensional, got shape {:?}",
            size.shape()
        )));
    }
    let values = int_values(size, what)?;
    let &[height, width] = values.as_slice() else {
        return Err(fail(format!(
            "{what} must have two elements, got {}",
            values.len()
        )));
    };
    match (usize::try_from(height), usize::try_from(width)) {
        (Ok(h), Ok(w)) if h > 0 && w > 0 => Ok((h, w)),
        _ => Err(fail(format!(
            "output dimensions must be positive, got {height}x{width}"
        ))),
    }
}

/// Any real tensor's elements as f32 (integers and doubles converted as C++'s static_cast).
pub fn to_f32(t: &Tensor) -> KResult<Vec<f32>> {
    if let Some(v) = half_to_f32(t) {
        return Ok(v);
    }
    Ok(match t.storage() {
        Storage::Float32(v) => v.clone(),
        Storage::Float64(v) => v.iter().map(|&x| x as f32).collect(),
        Storage::Int8(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::Int16(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::Int32(v) => v.iter().map(|&x| x as f32).collect(),
        Storage::Int64(v) => v.iter().map(|&x| x as f32).collect(),
        Storage::UInt8(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::UInt16(v) => v.iter().map(|&x| f32::from(x)).collect(),
        Storage::UInt32(v) => v.iter().map(|&x| x as f32).collect(),
        Storage::UInt64(v) => v.iter().map(|&x| x as f32).collect(),
        _ => {
            return Err(fail(format!(
                "images must be a real number type, got {}",
                t.dtype()
            )))
        }
    })
}

/// For each output index along one axis, `count` source indices and weights; a tap whose
/// `valid` is false is never read (TensorFlow's loops stop before it).
#[derive(Clone, Debug, Default)]
pub struct Taps {
    pub count: usize,
    pub index: Vec<usize>,
    pub weight: Vec<f32>,
    pub valid: Vec<bool>,
}

impl Taps {
    /// The number of output indices.
    pub fn outputs(&self) -> usize {
        self.index.len().checked_div(self.count).unwrap_or(0)
    }

    fn of(&self, o: usize) -> impl Iterator<Item = (usize, f32)> + '_ {
        let range = o * self.count..(o + 1) * self.count;
        self.index[range.clone()]
            .iter()
            .zip(&self.weight[range.clone()])
            .zip(&self.valid[range])
            .filter(|(_, &valid)| valid)
            .map(|((&i, &w), _)| (i, w))
    }
}

/// `dst = sum_k w_k * src_k` over the taps, in tap order, starting from the first tap's
/// product (or zeros when there is none).
fn accumulate<'a>(dst: &mut [f32], taps: impl Iterator<Item = (&'a [f32], f32)>) {
    let mut first = true;
    for (src, w) in taps {
        if first {
            dst.iter_mut().zip(src).for_each(|(d, &s)| *d = s * w);
            first = false;
        } else {
            dst.iter_mut().zip(src).for_each(|(d, &s)| *d += s * w);
        }
    }
    if first {
        dst.fill(0.0);
    }
}

/// Filters the rows: `out[b, o, x, c] = sum_k w[o, k] * x[b, index[o, k], x, c]`.
pub fn filter_rows(x: &[f32], g: Geometry, taps: &Taps) -> KResult<Vec<f32>> {
    let out_g = g.resized(taps.outputs(), g.width);
    let mut out = vec![0f32; out_g.count()?];
    let row = g.width * g.channels;
    if row == 0 || out.is_empty() {
        return Ok(out);
    }
    let image = g.height * row;
    let run = |(i, dst): (usize, &mut [f32])| {
        let (b, o) = (i / out_g.height, i % out_g.height);
        let src = &x[b * image..(b + 1) * image];
        accumulate(
            dst,
            taps.of(o).map(|(k, w)| (&src[k * row..(k + 1) * row], w)),
        );
    };
    if out.len() * taps.count >= PARALLEL_WORK {
        out.par_chunks_mut(row).enumerate().for_each(run);
    } else {
        out.chunks_mut(row).enumerate().for_each(run);
    }
    Ok(out)
}

/// Filters the columns: `out[b, y, o, c] = sum_k w[o, k] * x[b, y, index[o, k], c]`.
pub fn filter_cols(x: &[f32], g: Geometry, taps: &Taps) -> KResult<Vec<f32>> {
    let out_g = g.resized(g.height, taps.outputs());
    let mut out = vec![0f32; out_g.count()?];
    let (c, in_row, out_row) = (g.channels, g.width * g.channels, out_g.width * g.channels);
    if out_row == 0 || out.is_empty() {
        return Ok(out);
    }
    let run = |(i, dst): (usize, &mut [f32])| {
        let src = &x[i * in_row..(i + 1) * in_row];
        for (o, pixel) in dst.chunks_mut(c).enumerate() {
            accumulate(
                pixel,
                taps.of(o).map(|(k, w)| (&src[k * c..(k + 1) * c], w)),
            );
        }
    };
    if out.len() * taps.count >= PARALLEL_WORK {
        out.par_chunks_mut(out_row).enumerate().for_each(run);
    } else {
        out.chunks_mut(out_row).enumerate().for_each(run);
    }
    Ok(out)
}

/// TensorFlow's resize scale: input over output size, or (align_corners) the distance
/// between the corner pixels.
pub fn resize_scale(in_size: usize, out_size: usize, align_corners: bool) -> f32 {
    if align_corners && in_size > 1 && out_size > 1 {
        (in_size - 1) as f32 / (out_size - 1) as f32
    } else {
        in_size as f32 / out_size as f32
    }
}

/// Where output index `x` samples the input: `(x + 0.5) * scale` with half-pixel centers
/// (minus the half pixel again when `shift`), `x * scale` otherwise.
pub fn position(x: usize, scale: f32, half_pixel: bool, shift: bool) -> f32 {
    let x = x as f32;
    if !half_pixel {
        return x * scale;
    }
    let center = (x + 0.5) * scale;
    if shift {
        center - 0.5
    } else {
        center
    }
}

/// An index computed in floating point, clamped into `0..size` (NaN goes to 0).
pub fn clamp_index(v: f32, size: usize) -> usize {
    if v.is_nan() || v <= 0.0 {
        return 0;
    }
    (v as usize).min(size.saturating_sub(1))
}
