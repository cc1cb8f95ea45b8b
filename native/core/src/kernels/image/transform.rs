//! ImageProjectiveTransformV2 and V3: each output pixel (x, y) samples the input at
//! `((a0 x + a1 y + a2) / k, (b0 x + b1 y + b2) / k)` with `k = c0 x + c1 y + 1`, per image
//! (or one transform for all), mapped back into the image by the fill mode (REFLECT, WRAP,
//! NEAREST, or CONSTANT: outside reads the fill value) and read by nearest neighbor (rounding
//! half away from zero) or bilinear interpolation in float32, cast back to the image's dtype
//! as C++ does (integers truncate).

use rayon::prelude::*;

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::value::Value;
use crate::kernels::image::filter::output_size;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

/// Output elements above which images are transformed on several threads.
const PARALLEL_ELEMENTS: usize = 1 << 16;

#[derive(Clone, Copy, PartialEq, Eq)]
enum Fill {
    Reflect,
    Wrap,
    Constant,
    Nearest,
}

#[derive(Clone, Copy)]
struct Spec {
    bilinear: bool,
    fill: Fill,
}

fn spec(node: &NodeSpec) -> Result<Spec, String> {
    let bilinear = match node.attrs.string("interpolation")? {
        "NEAREST" => false,
        "BILINEAR" => true,
        other => return Err(format!("Invalid interpolation {other}")),
    };
    let fill = match node.attrs.string_or("fill_mode", "CONSTANT")? {
        "REFLECT" => Fill::Reflect,
        "WRAP" => Fill::Wrap,
        "CONSTANT" => Fill::Constant,
        "NEAREST" => Fill::Nearest,
        other => return Err(format!("Invalid fill_mode {other}")),
    };
    Ok(Spec { bilinear, fill })
}

pub fn image_projective_transform_v2(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = spec(node)?;
    Ok(boxed(move |_, inputs| transform(spec, inputs, 0.0)))
}

pub fn image_projective_transform_v3(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = spec(node)?;
    Ok(boxed(move |_, inputs| {
        let fill = tensor_input(inputs, 3)?;
        let value = match fill.values::<f32>() {
            Some(&[v]) => v,
            _ => {
                return Err(fail(format!(
                    "fill_value must be a float32 scalar, got a {} tensor of shape {:?}",
                    fill.dtype(),
                    fill.shape()
                )))
            }
        };
        transform(spec, inputs, value)
    }))
}

/// The element types the transform reads and writes, through f32.
trait Pixel: Copy + Send + Sync + Default {
    fn to_f32(self) -> f32;
    /// C++'s static_cast from float: integers truncate (NaN becomes 0), floats round.
    fn from_f32(x: f32) -> Self;
}

macro_rules! pixel {
    ($($t:ty),*) => {$(
        impl Pixel for $t {
            fn to_f32(self) -> f32 {
                self as f32
            }
            fn from_f32(x: f32) -> Self {
                x as $t
            }
        }
    )*};
}
pixel!(f64, i32, i64, u8, i8, i16, u16);

impl Pixel for f32 {
    fn to_f32(self) -> f32 {
        self
    }
    fn from_f32(x: f32) -> Self {
        x
    }
}

impl Pixel for half::f16 {
    fn to_f32(self) -> f32 {
        self.to_f32()
    }
    fn from_f32(x: f32) -> Self {
        half::f16::from_f32(x)
    }
}

impl Pixel for half::bf16 {
    fn to_f32(self) -> f32 {
        self.to_f32()
    }
    fn from_f32(x: f32) -> Self {
        half::bf16::from_f32(x)
    }
}

/// The checked inputs of one transform.
struct Job<'a> {
    spec: Spec,
    shape: [usize; 4],
    out_height: usize,
    out_width: usize,
    transforms: &'a [f32],
    /// Whether every image has its own transform row.
    per_image: bool,
    fill: f32,
}

fn transform(spec: Spec, inputs: &[Value], fill: f32) -> KResult {
    let images = tensor_input(inputs, 0)?;
    let transforms = tensor_input(inputs, 1)?;
    let &[batch, height, width, channels] = images.shape() else {
        return Err(fail(format!(
            "Input images must have rank 4, got shape {:?}",
            images.shape()
        )));
    };
    let rows = match transforms.shape() {
        &[n, 8] if n == 1 || n == batch => n,
        other => {
            return Err(fail(format!(
                "Input transform should be num_images x 8 or 1 x 8, got shape {other:?}"
            )))
        }
    };
    let t = transforms.values::<f32>().ok_or_else(|| {
        fail(format!(
            "transforms must be float32, got {}",
            transforms.dtype()
        ))
    })?;
    let (out_height, out_width) = output_size(&*tensor_input(inputs, 2)?, "output_shape")?;
    crate::tensor::element_count(&[batch, out_height, out_width, channels])
        .ok_or_else(|| fail("output shape is too large"))?;
    let job = Job {
        spec,
        shape: [batch, height, width, channels],
        out_height,
        out_width,
        transforms: t,
        per_image: rows > 1,
        fill,
    };
    let storage = dispatch(&job, &images)?;
    one(make(vec![batch, out_height, out_width, channels], storage)?)
}

fn dispatch(job: &Job, images: &Tensor) -> KResult<Storage> {
    Ok(match images.storage() {
        Storage::Float32(v) => Storage::Float32(job.run(v)),
        Storage::Float64(v) => Storage::Float64(job.run(v)),
        Storage::Int32(v) => Storage::Int32(job.run(v)),
        Storage::Int64(v) => Storage::Int64(job.run(v)),
        Storage::UInt8(v) => Storage::UInt8(job.run(v)),
        Storage::Int8(v) => Storage::Int8(job.run(v)),
        Storage::Int16(v) => Storage::Int16(job.run(v)),
        Storage::UInt16(v) => Storage::UInt16(job.run(v)),
        Storage::Float16(v) => {
            let x: Vec<half::f16> = v.iter().map(|&b| half::f16::from_bits(b)).collect();
            Storage::Float16(job.run(&x).iter().map(|h| h.to_bits()).collect())
        }
        Storage::BFloat16(v) => {
            let x: Vec<half::bf16> = v.iter().map(|&b| half::bf16::from_bits(b)).collect();
            Storage::BFloat16(job.run(&x).iter().map(|h| h.to_bits()).collect())
        }
        _ => {
            return Err(fail(format!(
                "images must be a real number type, got {}",
                images.dtype()
            )))
        }
    })
}

impl Job<'_> {
    fn run<T: Pixel>(&self, x: &[T]) -> Vec<T> {
        let [_, _, _, c] = self.shape;
        let out_row = self.out_width * c;
        let mut out = vec![T::default(); self.shape[0] * self.out_height * out_row];
        if out_row == 0 {
            return out;
        }
        let row = |(i, dst): (usize, &mut [T])| {
            self.row(x, i / self.out_height, i % self.out_height, dst)
        };
        if out.len() >= PARALLEL_ELEMENTS {
            out.par_chunks_mut(out_row).enumerate().for_each(row);
        } else {
            out.chunks_mut(out_row).enumerate().for_each(row);
        }
        out
    }

    /// Output row `y` of image `b`.
    fn row<T: Pixel>(&self, x: &[T], b: usize, y: usize, dst: &mut [T]) {
        let [_, height, width, c] = self.shape;
        let image = &x[b * height * width * c..(b + 1) * height * width * c];
        let t = if self.per_image {
            &self.transforms[b * 8..b * 8 + 8]
        } else {
            &self.transforms[..8]
        };
        let fill = T::from_f32(self.fill);
        let yf = y as f32;
        for (o, pixel) in dst.chunks_mut(c).enumerate() {
            let xf = o as f32;
            let projection = t[6] * xf + t[7] * yf + 1.0;
            if projection == 0.0 {
                pixel.fill(fill);
                continue;
            }
            let in_x = map(
                self.spec.fill,
                (t[0] * xf + t[1] * yf + t[2]) / projection,
                width,
            );
            let in_y = map(
                self.spec.fill,
                (t[3] * xf + t[4] * yf + t[5]) / projection,
                height,
            );
            let read = Reader {
                image,
                height,
                width,
                c,
                fill,
            };
            if self.spec.bilinear {
                read.bilinear(in_y, in_x, pixel);
            } else {
                read.nearest(in_y.round(), in_x.round(), pixel);
            }
        }
    }
}

struct Reader<'a, T> {
    image: &'a [T],
    height: usize,
    width: usize,
    c: usize,
    fill: T,
}

impl<T: Pixel> Reader<'_, T> {
    /// The pixel at whole-number coordinates, None outside the image (or NaN).
    fn at(&self, y: f32, x: f32) -> Option<&[T]> {
        let inside = y >= 0.0 && y < self.height as f32 && x >= 0.0 && x < self.width as f32;
        inside.then(|| {
            let start = ((y as usize) * self.width + x as usize) * self.c;
            &self.image[start..start + self.c]
        })
    }

    fn nearest(&self, y: f32, x: f32, dst: &mut [T]) {
        match self.at(y, x) {
            Some(src) => dst.copy_from_slice(src),
            None => dst.fill(self.fill),
        }
    }

    fn bilinear(&self, y: f32, x: f32, dst: &mut [T]) {
        let (y0, x0) = (y.floor(), x.floor());
        let (y1, x1) = (y0 + 1.0, x0 + 1.0);
        let corners = [
            self.at(y0, x0),
            self.at(y0, x1),
            self.at(y1, x0),
            self.at(y1, x1),
        ];
        let fill = self.fill.to_f32();
        let value = |k: usize, ch: usize| corners[k].map_or(fill, |p| p[ch].to_f32());
        for (ch, out) in dst.iter_mut().enumerate() {
            let upper = (x1 - x) * value(0, ch) + (x - x0) * value(1, ch);
            let lower = (x1 - x) * value(2, ch) + (x - x0) * value(3, ch);
            *out = T::from_f32((y1 - y) * upper + (y - y0) * lower);
        }
    }
}

/// A coordinate mapped into `0..size` by the fill mode (CONSTANT leaves it).
fn map(fill: Fill, coord: f32, size: usize) -> f32 {
    match fill {
        Fill::Constant => coord,
        Fill::Nearest => clamp(coord, size),
        Fill::Reflect | Fill::Wrap if size <= 1 => {
            if coord.is_nan() {
                coord
            } else {
                0.0
            }
        }
        Fill::Reflect => clamp(reflect(coord, size), size),
        Fill::Wrap => clamp(wrap(coord, size), size),
    }
}

/// Whole turns as an integer (0 when not finite).
fn turns(x: f32) -> i64 {
    let t = x.trunc();
    if t.is_finite() {
        t as i64
    } else {
        0
    }
}

fn reflect(coord: f32, size: usize) -> f32 {
    let size_i = size as i64;
    let period = 2 * size_i;
    if coord < 0.0 {
        let low = (turns(-coord / period as f32).saturating_mul(period)) as f32 + coord;
        if low < -(size as f32) {
            low + period as f32
        } else {
            -low - 1.0
        }
    } else if coord > size as f32 - 1.0 {
        let high = coord - (turns(coord / period as f32).saturating_mul(period)) as f32;
        if high >= size as f32 {
            period as f32 - high - 1.0
        } else {
            high
        }
    } else {
        coord
    }
}

fn wrap(coord: f32, size: usize) -> f32 {
    let size_i = size as i64;
    let period = (size_i - 1) as f32;
    if coord < 0.0 {
        coord
            + (turns(-coord / period)
                .saturating_add(1)
                .saturating_mul(size_i)) as f32
    } else if coord > size as f32 - 1.0 {
        coord - (turns(coord / period).saturating_mul(size_i)) as f32
    } else {
        coord
    }
}

fn clamp(coord: f32, size: usize) -> f32 {
    if coord < 0.0 {
        0.0
    } else if coord > size as f32 - 1.0 {
        size as f32 - 1.0
    } else {
        coord
    }
}
