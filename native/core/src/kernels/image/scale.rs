//! ScaleAndTranslate: resampling with a filter kernel (lanczos1/3/5, gaussian, box, triangle,
//! keyscubic, mitchellcubic), widened by the downscale factor when `antialias` is set; what
//! `tf.image.resize` and `scale_and_translate` run. TensorFlow's ComputeSpans: each output
//! pixel reads a span of consecutive input pixels whose normalized filter weights are
//! computed once per axis; the rows are filtered first, then the columns.

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::value::Value;
use crate::kernels::image::filter::{
    filter_cols, filter_rows, output_size, to_f32, Geometry, Taps, TINY,
};
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

#[derive(Clone, Copy, Debug, PartialEq)]
enum Filter {
    Lanczos(f32),
    Gaussian,
    Box,
    Triangle,
    KeysCubic,
    MitchellCubic,
}

impl Filter {
    fn parse(name: &str) -> Option<Self> {
        Some(match name {
            "lanczos1" => Self::Lanczos(1.0),
            "lanczos3" => Self::Lanczos(3.0),
            "lanczos5" => Self::Lanczos(5.0),
            "gaussian" => Self::Gaussian,
            "box" => Self::Box,
            "triangle" => Self::Triangle,
            "keyscubic" => Self::KeysCubic,
            "mitchellcubic" => Self::MitchellCubic,
            _ => return None,
        })
    }

    /// How far from its center the filter is non-zero.
    fn radius(self) -> f32 {
        match self {
            Self::Lanczos(r) => r,
            Self::Gaussian => 1.5,
            Self::Box | Self::Triangle => 1.0,
            Self::KeysCubic | Self::MitchellCubic => 2.0,
        }
    }

    /// The filter's value at distance `x` (non-negative) from its center, in float32.
    fn weight(self, x: f32) -> f32 {
        match self {
            Self::Lanczos(r) => {
                if x > r {
                    0.0
                } else if x <= 1e-3 {
                    1.0
                } else {
                    let pi = std::f32::consts::PI;
                    r * (pi * x).sin() * (pi * x / r).sin() / (pi * pi * x * x)
                }
            }
            Self::Gaussian => {
                let sigma = f64::from(1.5f32 / 3.0);
                if x >= 1.5 {
                    0.0
                } else {
                    (f64::from(-x * x) / (2.0 * sigma * sigma)).exp() as f32
                }
            }
            Self::Box => {
                if x < 0.5 {
                    1.0
                } else if x == 0.5 {
                    0.5
                } else {
                    0.0
                }
            }
            Self::Triangle => {
                if x < 1.0 {
                    1.0 - x
                } else {
                    0.0
                }
            }
            Self::KeysCubic => cubic(x, [-0.5, 2.5, -4.0, 2.0], [1.5, -2.5, 1.0]),
            Self::MitchellCubic => cubic(
                x,
                [
                    (-7.0 / 18.0) as f32,
                    2.0,
                    (-10.0 / 3.0) as f32,
                    (16.0 / 9.0) as f32,
                ],
                [(7.0 / 6.0) as f32, -2.0, (8.0 / 9.0) as f32],
            ),
        }
    }
}

/// A piecewise cubic: `((f0 x + f1) x + f2) x + f3` for 1 <= x < 2, `((n0 x + n1) x) x + n2`
/// below 1, zero from 2.
fn cubic(x: f32, far: [f32; 4], near: [f32; 3]) -> f32 {
    if x >= 2.0 {
        0.0
    } else if x >= 1.0 {
        ((far[0] * x + far[1]) * x + far[2]) * x + far[3]
    } else {
        ((near[0] * x + near[1]) * x) * x + near[2]
    }
}

pub fn scale_and_translate(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let kernel_type = node.attrs.string_or("kernel_type", "lanczos3")?.to_string();
    let antialias = node.attrs.bool_or("antialias", true)?;
    Ok(boxed(move |_, inputs| {
        let filter = Filter::parse(&kernel_type)
            .ok_or_else(|| fail(format!("Unrecognized kernel type: {kernel_type}")))?;
        run(filter, antialias, inputs)
    }))
}

fn run(filter: Filter, antialias: bool, inputs: &[Value]) -> KResult {
    let images = tensor_input(inputs, 0)?;
    if images.rank() != 4 {
        return Err(fail(format!(
            "input must be 4-dimensional, got shape {:?}",
            images.shape()
        )));
    }
    let (height, width) = output_size(&*tensor_input(inputs, 1)?, "output_shape_t")?;
    let g = Geometry::of(&images)?;
    let (row_scale, col_scale) = pair(&*tensor_input(inputs, 2)?, "scale")?;
    let positive = row_scale > 0.0 && col_scale > 0.0;
    if !positive {
        return Err(fail("Scale must be greater than zero."));
    }
    let (row_shift, col_shift) = pair(&*tensor_input(inputs, 3)?, "translation")?;
    let out = g.resized(height, width);
    out.count()?;
    if g.batch == 0 {
        return one(make(out.shape(), Storage::Float32(Vec::new()))?);
    }
    let rows = spans(filter, height, g.height, row_scale, row_shift, antialias);
    let cols = spans(filter, width, g.width, col_scale, col_shift, antialias);
    let x = to_f32(&images)?;
    let across_rows = filter_rows(&x, g, &rows)?;
    let values = filter_cols(&across_rows, g.resized(height, g.width), &cols)?;
    one(make(out.shape(), Storage::Float32(values))?)
}

fn pair(t: &Tensor, what: &str) -> KResult<(f32, f32)> {
    match t.values::<f32>() {
        Some(&[a, b]) if t.rank() == 1 => Ok((a, b)),
        _ => Err(fail(format!(
            "{what} must be a 1-dimensional float32 tensor of two elements, got a {} tensor \
             of shape {:?}",
            t.dtype(),
            t.shape()
        ))),
    }
}

/// TensorFlow's ComputeSpansCore: for each output pixel, the normalized filter weights of
/// `span` consecutive source pixels from the first it reaches (none at all when the sample
/// falls outside the image); taps past the image's end are never read.
fn spans(
    filter: Filter,
    out_size: usize,
    in_size: usize,
    scale: f32,
    translate: f32,
    antialias: bool,
) -> Taps {
    let inv_scale = (1.0 / f64::from(scale)) as f32;
    let inv_translate = -inv_scale * translate;
    let kernel_scale = if antialias { inv_scale.max(1.0) } else { 1.0 };
    let reach = filter.radius() * kernel_scale;
    let span = (reach.ceil() as usize)
        .saturating_mul(2)
        .saturating_add(1)
        .min(in_size);
    let last = in_size as f32 - 1.0;
    let mut taps = Taps {
        count: span,
        ..Taps::default()
    };
    let mut weights = vec![0f32; span];
    for o in 0..out_size {
        let sample = (o as f32 + 0.5) * inv_scale + inv_translate;
        let inside = !(sample < 0.0 || sample > in_size as f32);
        let first = (sample - reach - 0.5).ceil().clamp(0.0, last);
        let end = (sample + reach - 0.5).floor().clamp(0.0, last) + 1.0;
        let first = if first.is_nan() { 0 } else { first as usize };
        let end = if end.is_nan() { 0 } else { end as usize };
        let mut total = 0f32;
        for (k, w) in weights.iter_mut().enumerate() {
            let source = first + k;
            *w = if source < end {
                let position = source as f32 + 0.5 - sample;
                filter.weight((position * (1.0 / kernel_scale)).abs())
            } else {
                0.0
            };
            total += *w;
        }
        let good = inside && total.abs() >= TINY;
        let norm = 1.0 / if good { total } else { 1.0 };
        let start = if inside { first } else { 0 };
        for (k, &w) in weights.iter().enumerate() {
            let source = start + k;
            taps.index.push(source.min(in_size - 1));
            taps.weight.push(if good { w * norm } else { 0.0 });
            taps.valid.push(source < in_size);
        }
    }
    taps
}
