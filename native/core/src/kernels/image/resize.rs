//! ResizeBilinear, ResizeNearestNeighbor, ResizeBicubic and ResizeArea. All but nearest
//! neighbor compute in float32 and return float32 whatever the input dtype (TensorFlow's
//! kernels do); nearest neighbor copies elements and keeps the dtype.

use std::sync::Arc;

use rayon::prelude::*;

use crate::engine::attrs::Attrs;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::value::Value;
use crate::kernels::image::filter::{
    clamp_index, filter_cols, filter_rows, output_size, position, resize_scale, to_f32, Geometry,
    Taps, TINY,
};
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

/// Elements above which a resize is spread over threads.
const PARALLEL_ELEMENTS: usize = 1 << 16;

#[derive(Clone, Copy)]
struct Mode {
    align_corners: bool,
    half_pixel: bool,
}

fn mode(attrs: &Attrs) -> Result<Mode, String> {
    Ok(Mode {
        align_corners: attrs.bool_or("align_corners", false)?,
        half_pixel: attrs.bool_or("half_pixel_centers", false)?,
    })
}

/// TensorFlow's ImageResizerState checks: the input and output geometry.
fn geometry(mode: Mode, inputs: &[Value]) -> KResult<(Arc<Tensor>, Geometry, Geometry)> {
    if mode.half_pixel && mode.align_corners {
        return Err(fail(
            "If half_pixel_centers is True, align_corners must be False.",
        ));
    }
    let images = tensor_input(inputs, 0)?;
    let g = Geometry::of(&images)?;
    let (height, width) = output_size(&*tensor_input(inputs, 1)?, "size")?;
    let out = g.resized(height, width);
    out.count()?;
    Ok((images, g, out))
}

fn f32_output(out: Geometry, values: Vec<f32>) -> KResult {
    one(make(out.shape(), Storage::Float32(values))?)
}

// ---------------------------------------------------------------------------------------------
// Bilinear

pub fn resize_bilinear(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let mode = mode(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let (images, g, out) = geometry(mode, inputs)?;
        let x = to_f32(&images)?;
        f32_output(out, bilinear(&x, g, out, mode)?)
    }))
}

/// The lower and upper source index and the weight of the upper one, per output index.
struct Lerp {
    lower: Vec<usize>,
    upper: Vec<usize>,
    lerp: Vec<f32>,
}

fn lerp_axis(out_size: usize, in_size: usize, mode: Mode) -> Lerp {
    let scale = resize_scale(in_size, out_size, mode.align_corners);
    let mut axis = Lerp {
        lower: Vec::with_capacity(out_size),
        upper: Vec::with_capacity(out_size),
        lerp: Vec::with_capacity(out_size),
    };
    for o in 0..out_size {
        let p = position(o, scale, mode.half_pixel, true);
        let floor = p.floor();
        axis.lower.push(clamp_index(floor, in_size));
        axis.upper.push(clamp_index(p.ceil(), in_size));
        axis.lerp.push(p - floor);
    }
    axis
}

fn bilinear(x: &[f32], g: Geometry, out: Geometry, mode: Mode) -> KResult<Vec<f32>> {
    let ys = lerp_axis(out.height, g.height, mode);
    let xs = lerp_axis(out.width, g.width, mode);
    let mut values = vec![0f32; out.count()?];
    let c = g.channels;
    let (in_row, in_image, out_row) = (g.width * c, g.height * g.width * c, out.width * c);
    let run = |(i, dst): (usize, &mut [f32])| {
        let (b, y) = (i / out.height, i % out.height);
        let image = &x[b * in_image..(b + 1) * in_image];
        let top = &image[ys.lower[y] * in_row..(ys.lower[y] + 1) * in_row];
        let bottom = &image[ys.upper[y] * in_row..(ys.upper[y] + 1) * in_row];
        let y_lerp = ys.lerp[y];
        for (o, pixel) in dst.chunks_mut(c).enumerate() {
            let (lo, hi, x_lerp) = (xs.lower[o] * c, xs.upper[o] * c, xs.lerp[o]);
            let parts = (&top[lo..lo + c], &top[hi..hi + c]);
            let lower = (&bottom[lo..lo + c], &bottom[hi..hi + c]);
            for (k, v) in pixel.iter_mut().enumerate() {
                let t = parts.0[k] + (parts.1[k] - parts.0[k]) * x_lerp;
                let b = lower.0[k] + (lower.1[k] - lower.0[k]) * x_lerp;
                *v = t + (b - t) * y_lerp;
            }
        }
    };
    if out_row > 0 {
        if values.len() >= PARALLEL_ELEMENTS {
            values.par_chunks_mut(out_row).enumerate().for_each(run);
        } else {
            values.chunks_mut(out_row).enumerate().for_each(run);
        }
    }
    Ok(values)
}

// ---------------------------------------------------------------------------------------------
// Nearest neighbor

pub fn resize_nearest_neighbor(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let mode = mode(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let (images, g, out) = geometry(mode, inputs)?;
        let rows = nearest_axis(out.height, g.height, mode);
        let cols = nearest_axis(out.width, g.width, mode);
        let pick = Pick {
            g,
            out,
            rows: &rows,
            cols: &cols,
        };
        let storage = match images.storage() {
            Storage::Float16(v) => Storage::Float16(pick.gather(v)),
            Storage::BFloat16(v) => Storage::BFloat16(pick.gather(v)),
            Storage::Float32(v) => Storage::Float32(pick.gather(v)),
            Storage::Float64(v) => Storage::Float64(pick.gather(v)),
            Storage::Int8(v) => Storage::Int8(pick.gather(v)),
            Storage::Int16(v) => Storage::Int16(pick.gather(v)),
            Storage::Int32(v) => Storage::Int32(pick.gather(v)),
            Storage::Int64(v) => Storage::Int64(pick.gather(v)),
            Storage::UInt8(v) => Storage::UInt8(pick.gather(v)),
            Storage::UInt16(v) => Storage::UInt16(pick.gather(v)),
            Storage::UInt32(v) => Storage::UInt32(pick.gather(v)),
            Storage::UInt64(v) => Storage::UInt64(pick.gather(v)),
            _ => {
                return Err(fail(format!(
                    "images must be a real number type, got {}",
                    images.dtype()
                )))
            }
        };
        one(make(out.shape(), storage)?)
    }))
}

/// The source index of each output index: the floor of the (unshifted) position, or with
/// align_corners its rounding half away from zero.
fn nearest_axis(out_size: usize, in_size: usize, mode: Mode) -> Vec<usize> {
    let scale = resize_scale(in_size, out_size, mode.align_corners);
    (0..out_size)
        .map(|o| {
            let p = position(o, scale, mode.half_pixel, false);
            let index = if mode.align_corners {
                p.round()
            } else {
                p.floor()
            };
            clamp_index(index, in_size)
        })
        .collect()
}

struct Pick<'a> {
    g: Geometry,
    out: Geometry,
    rows: &'a [usize],
    cols: &'a [usize],
}

impl Pick<'_> {
    fn gather<T: Copy + Default + Send + Sync>(&self, x: &[T]) -> Vec<T> {
        let c = self.g.channels;
        let (in_row, in_image) = (self.g.width * c, self.g.height * self.g.width * c);
        let out_row = self.out.width * c;
        let mut values = vec![T::default(); self.out.count().unwrap_or(0)];
        let run = |(i, dst): (usize, &mut [T])| {
            let (b, y) = (i / self.out.height, i % self.out.height);
            let start = b * in_image + self.rows[y] * in_row;
            let src = &x[start..start + in_row];
            for (pixel, &col) in dst.chunks_mut(c).zip(self.cols) {
                pixel.copy_from_slice(&src[col * c..(col + 1) * c]);
            }
        };
        if out_row > 0 {
            if values.len() >= PARALLEL_ELEMENTS {
                values.par_chunks_mut(out_row).enumerate().for_each(run);
            } else {
                values.chunks_mut(out_row).enumerate().for_each(run);
            }
        }
        values
    }
}

// ---------------------------------------------------------------------------------------------
// Bicubic

pub fn resize_bicubic(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let mode = mode(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let (images, g, out) = geometry(mode, inputs)?;
        let x = to_f32(&images)?;
        let rows = bicubic_axis(out.height, g.height, mode);
        let cols = bicubic_axis(out.width, g.width, mode);
        let across_rows = filter_rows(&x, g, &rows)?;
        let values = filter_cols(&across_rows, g.resized(out.height, g.width), &cols)?;
        f32_output(out, values)
    }))
}

const CUBIC_TABLE_SIZE: usize = 1024;

/// Keys cubic weights (coefficient `a`) of the near tap at distance `x` and the far tap at
/// `1 + x`, as TensorFlow tabulates them (in double, stored as float).
fn cubic_weights(a: f64, x: f32) -> (f32, f32) {
    let xd = f64::from(x);
    let near = (((a + 2.0) * xd - (a + 3.0)) * xd * xd + 1.0) as f32;
    let x1 = f64::from(x + 1.0);
    let far = (((a * x1 - 5.0 * a) * x1 + 8.0 * a) * x1 - 4.0 * a) as f32;
    (near, far)
}

/// The table entry at offset `i` (of [`CUBIC_TABLE_SIZE`]).
fn cubic_entry(a: f64, i: usize) -> (f32, f32) {
    cubic_weights(a, (i as f64 / CUBIC_TABLE_SIZE as f64) as f32)
}

/// The 4 source indices and weights of each output index (TensorFlow's GetWeightsAndIndices):
/// the legacy mode clamps taps to the edge and keeps their weights; the half-pixel mode
/// drops taps outside the image and renormalizes.
fn bicubic_axis(out_size: usize, in_size: usize, mode: Mode) -> Taps {
    let scale = resize_scale(in_size, out_size, mode.align_corners);
    let a = if mode.half_pixel { -0.5 } else { -0.75 };
    let mut taps = Taps {
        count: 4,
        ..Taps::default()
    };
    for o in 0..out_size {
        let (p, start) = if mode.half_pixel {
            let p = position(o, scale, true, true);
            (p, p.floor())
        } else {
            let p = o as f32 * scale;
            (p, p.trunc())
        };
        let delta = p - start;
        let offset =
            ((delta * CUBIC_TABLE_SIZE as f32).round_ties_even() as usize).min(CUBIC_TABLE_SIZE);
        let (near0, far0) = cubic_entry(a, offset);
        let (near1, far1) = cubic_entry(a, CUBIC_TABLE_SIZE - offset);
        let mut weights = [far0, near0, near1, far1];
        let start = start as i64;
        let last = in_size as i64 - 1;
        let raw: [i64; 4] = std::array::from_fn(|k| start + k as i64 - 1);
        let index = raw.map(|r| r.clamp(0, last.max(0)));
        if mode.half_pixel {
            for ((w, i), r) in weights.iter_mut().zip(index).zip(raw) {
                if i != r {
                    *w = 0.0;
                }
            }
            let total = ((weights[0] + weights[1]) + weights[2]) + weights[3];
            if total.abs() >= TINY {
                let inv = 1.0 / total;
                weights = weights.map(|w| w * inv);
            }
        }
        taps.index.extend(index.map(|i| i as usize));
        taps.weight.extend(weights);
        taps.valid.extend([true; 4]);
    }
    taps
}

// ---------------------------------------------------------------------------------------------
// Area

pub fn resize_area(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let align_corners = node.attrs.bool_or("align_corners", false)?;
    let mode = Mode {
        align_corners,
        half_pixel: false,
    };
    Ok(boxed(move |_, inputs| {
        let (images, g, out) = geometry(mode, inputs)?;
        let x = to_f32(&images)?;
        let row_scale = resize_scale(g.height, out.height, align_corners);
        let col_scale = resize_scale(g.width, out.width, align_corners);
        let cols = area_axis(out.width, g.width, col_scale);
        let rows = area_axis(out.height, g.height, row_scale);
        let across_cols = filter_cols(&x, g, &cols)?;
        let mut values = filter_rows(&across_cols, g.resized(g.height, out.width), &rows)?;
        let norm = (1.0 / f64::from(row_scale * col_scale)) as f32;
        values.iter_mut().for_each(|v| *v *= norm);
        f32_output(out, values)
    }))
}

/// The input cells each output cell covers, weighted by the covered fraction of each.
fn area_axis(out_size: usize, in_size: usize, scale: f32) -> Taps {
    let bounds: Vec<(f32, f32)> = (0..out_size)
        .map(|o| (o as f32 * scale, (o + 1) as f32 * scale))
        .collect();
    let cells = |&(lo, hi): &(f32, f32)| (lo.floor() as i64, hi.ceil() as i64);
    let count = bounds
        .iter()
        .map(|b| {
            let (start, end) = cells(b);
            usize::try_from(end - start).unwrap_or(0)
        })
        .max()
        .unwrap_or(0);
    let mut taps = Taps {
        count,
        ..Taps::default()
    };
    let last = in_size as i64 - 1;
    for b in &bounds {
        let (lo, hi) = *b;
        let (start, end) = cells(b);
        for k in 0..count as i64 {
            let cell = start + k;
            let (first, after) = (cell as f32, (cell + 1) as f32);
            let weight = match (first < lo, after > hi) {
                (true, true) => scale,
                (true, false) => after - lo,
                (false, true) => hi - first,
                (false, false) => 1.0,
            };
            taps.index.push(cell.clamp(0, last.max(0)) as usize);
            taps.weight.push(weight);
            taps.valid.push(cell < end);
        }
    }
    taps
}
