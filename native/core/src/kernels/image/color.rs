//! Colour kernels: RGBToHSV and HSVToRGB (float types; half types computed in f32 and rounded
//! once), and the float32 adjustments AdjustContrastv2, AdjustHue and AdjustSaturation, each
//! with TensorFlow's own formulas (the adjustments do not go through RGBToHSV: they have
//! their own hue sectors and roundings). Every pixel is independent; the last axis holds its
//! three channels.

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::engine::value::Value;
use crate::kernels::util::{f32_to_half, half_to_f32, make};
use crate::tensor::{Storage, Tensor};

/// Whether `x` is unordered with itself (NaN).
fn is_nan<T: PartialOrd>(x: T) -> bool {
    x.partial_cmp(&x).is_none()
}

/// The largest of three values, NaN if any is NaN (numpy's max, which the reference uses).
fn max3<T: PartialOrd + Copy>(a: T, b: T, c: T) -> T {
    let m = if b > a || is_nan(b) { b } else { a };
    if c > m || is_nan(c) {
        c
    } else {
        m
    }
}

fn min3<T: PartialOrd + Copy>(a: T, b: T, c: T) -> T {
    let m = if b < a || is_nan(b) { b } else { a };
    if c < m || is_nan(c) {
        c
    } else {
        m
    }
}

/// Checks an image's rank and its 3 channels.
fn rgb(t: &Tensor, least_rank: usize) -> KResult<()> {
    if t.rank() < least_rank {
        return Err(fail(format!(
            "input must be at least {least_rank}-D, got shape {:?}",
            t.shape()
        )));
    }
    match t.shape().last() {
        Some(3) => Ok(()),
        other => Err(fail(format!(
            "input must have 3 channels but input only has {} channels.",
            other.copied().unwrap_or(0)
        ))),
    }
}

macro_rules! hsv_fns {
    ($t:ty, $to_hsv:ident, $to_rgb:ident) => {
        fn $to_hsv(p: &mut [$t]) {
            let (r, g, b) = (p[0], p[1], p[2]);
            let value = max3(r, g, b);
            let spread = value - min3(r, g, b);
            let saturation = if value > 0.0 { spread / value } else { 0.0 };
            let norm = (1.0 / spread) * (1.0 / 6.0);
            let mut hue = if r == value {
                norm * (g - b)
            } else if g == value {
                norm * (b - r) + 2.0 / 6.0
            } else {
                norm * (r - g) + 4.0 / 6.0
            };
            if spread.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
                hue = 0.0;
            }
            if hue < 0.0 {
                hue += 1.0;
            }
            p.copy_from_slice(&[hue, saturation, value]);
        }

        fn $to_rgb(p: &mut [$t]) {
            let (h, s, v) = (p[0], p[1], p[2]);
            let dh = h * 6.0;
            let unit = |x: $t| x.clamp(0.0, 1.0);
            let d = [
                unit((dh - 3.0).abs() - 1.0),
                unit(-(dh - 2.0).abs() + 2.0),
                unit(-(dh - 4.0).abs() + 2.0),
            ];
            let one_s = -s + 1.0;
            for (out, d) in p.iter_mut().zip(d) {
                *out = (one_s + s * d) * v;
            }
        }
    };
}

hsv_fns!(f32, rgb_to_hsv_f32, hsv_to_rgb_f32);
hsv_fns!(f64, rgb_to_hsv_f64, hsv_to_rgb_f64);

/// A per-pixel conversion over a float image of any of TensorFlow's float types.
fn per_pixel(t: &Tensor, f32_fn: fn(&mut [f32]), f64_fn: fn(&mut [f64])) -> KResult<Tensor> {
    rgb(t, 1)?;
    let storage = match t.storage() {
        Storage::Float32(v) => {
            let mut v = v.clone();
            v.chunks_exact_mut(3).for_each(f32_fn);
            Storage::Float32(v)
        }
        Storage::Float64(v) => {
            let mut v = v.clone();
            v.chunks_exact_mut(3).for_each(f64_fn);
            Storage::Float64(v)
        }
        _ => {
            let mut v = half_to_f32(t)
                .ok_or_else(|| fail(format!("images must be a float type, got {}", t.dtype())))?;
            v.chunks_exact_mut(3).for_each(f32_fn);
            f32_to_half(t.dtype(), &v)
                .ok_or_else(|| fail(format!("images must be a float type, got {}", t.dtype())))?
        }
    };
    make(t.shape().to_vec(), storage)
}

pub fn rgb_to_hsv(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| {
        one(per_pixel(
            &*tensor_input(inputs, 0)?,
            rgb_to_hsv_f32,
            rgb_to_hsv_f64,
        )?)
    }))
}

pub fn hsv_to_rgb(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| {
        one(per_pixel(
            &*tensor_input(inputs, 0)?,
            hsv_to_rgb_f32,
            hsv_to_rgb_f64,
        )?)
    }))
}

/// A float32 scalar input.
fn scalar(t: &Tensor, what: &str) -> KResult<f32> {
    match t.values::<f32>() {
        Some(&[x]) if t.rank() == 0 => Ok(x),
        _ => Err(fail(format!(
            "{what} must be a float32 scalar, got a {} tensor of shape {:?}",
            t.dtype(),
            t.shape()
        ))),
    }
}

fn f32_image<'a>(t: &'a Tensor, what: &str) -> KResult<&'a [f32]> {
    t.values::<f32>()
        .ok_or_else(|| fail(format!("{what} must be float32, got {}", t.dtype())))
}

pub fn adjust_contrast_v2(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| {
        let images = tensor_input(inputs, 0)?;
        let factor = tensor_input(inputs, 1)?;
        if images.rank() < 3 {
            return Err(fail(format!(
                "input must be at least 3-D, got shape {:?}",
                images.shape()
            )));
        }
        let factor = scalar(&factor, "contrast_factor")?;
        let x = f32_image(&images, "images")?;
        let shape = images.shape();
        let channels = shape[shape.len() - 1];
        let plane = shape[shape.len() - 3] * shape[shape.len() - 2] * channels;
        let mut out = x.to_vec();
        if plane > 0 && channels > 0 {
            for image in out.chunks_mut(plane) {
                contrast(image, channels, factor);
            }
        }
        one(make(shape.to_vec(), Storage::Float32(out))?)
    }))
}

/// `(x - mean) * factor + mean` per channel of one image, the mean taken in double.
fn contrast(image: &mut [f32], channels: usize, factor: f32) {
    let pixels = (image.len() / channels) as f64;
    let mut sums = vec![0f64; channels];
    for pixel in image.chunks(channels) {
        sums.iter_mut()
            .zip(pixel)
            .for_each(|(s, &v)| *s += f64::from(v));
    }
    let means: Vec<f32> = sums.iter().map(|&s| (s / pixels) as f32).collect();
    for pixel in image.chunks_mut(channels) {
        pixel
            .iter_mut()
            .zip(&means)
            .for_each(|(v, &m)| *v = (*v - m) * factor + m);
    }
}

/// Runs `f` on each pixel of a float32 image of at least rank 3 with 3 channels, with the
/// scalar second input.
fn adjust(inputs: &[Value], what: &str, f: fn(&mut [f32], f32)) -> KResult {
    let images = tensor_input(inputs, 0)?;
    rgb(&images, 3)?;
    let amount = scalar(&*tensor_input(inputs, 1)?, what)?;
    let mut out = f32_image(&images, "images")?.to_vec();
    out.chunks_exact_mut(3).for_each(|p| f(p, amount));
    one(make(images.shape().to_vec(), Storage::Float32(out))?)
}

pub fn adjust_hue(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| adjust(inputs, "delta", hue_shift)))
}

pub fn adjust_saturation(_: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    Ok(boxed(|_, inputs| adjust(inputs, "scale", saturate)))
}

/// Moves `x` into [0, period) by whole periods (NaN and infinity stay).
fn wrap(mut x: f32, period: f32, low_inclusive: bool) -> f32 {
    if !x.is_finite() {
        return x;
    }
    if x.abs() > 1e6 {
        x = x.rem_euclid(period);
    }
    while if low_inclusive { x < 0.0 } else { x <= 0.0 } {
        x += period;
    }
    while x >= period {
        x -= period;
    }
    x
}

/// TensorFlow's AdjustHue: hue in [0, 6) from the order of the channels, shifted by
/// `delta * 6`, and the pixel rebuilt from its largest and smallest channel.
fn hue_shift(p: &mut [f32], delta: f32) {
    let (r, g, b) = (p[0], p[1], p[2]);
    let (top, mid, low, sector) = if r < g {
        if b < r {
            (g, r, b, 1)
        } else if b > g {
            (b, g, r, 3)
        } else {
            (g, b, r, 2)
        }
    } else if b < g {
        (r, g, b, 0)
    } else if b > r {
        (b, r, g, 4)
    } else {
        (r, b, g, 5)
    };
    let ratio = (mid - low) / (top - low);
    let mut hue = sector as f32 + if sector % 2 == 0 { ratio } else { 1.0 - ratio };
    if top == low {
        hue = 0.0;
    }
    let hue = wrap(hue + delta * 6.0, 6.0, true);
    let sector = if hue.is_finite() {
        hue as i64
    } else {
        i64::MIN
    };
    let mut ratio = hue - sector as f32;
    if sector % 2 != 0 {
        ratio = 1.0 - ratio;
    }
    let mid = low + ratio * (top - low);
    let rgb = match sector {
        0 => [top, mid, low],
        1 => [mid, top, low],
        2 => [low, top, mid],
        3 => [low, mid, top],
        4 => [mid, low, top],
        _ => [top, low, mid],
    };
    p.copy_from_slice(&rgb);
}

/// TensorFlow's AdjustSaturation: to hue, saturation and value, the saturation scaled and
/// clamped to [0, 1], then back by hue sector.
fn saturate(p: &mut [f32], scale: f32) {
    let (r, g, b) = (p[0], p[1], p[2]);
    let value = max3(r, g, b);
    let spread = value - min3(r, g, b);
    let saturation = if value > 0.0 { spread / value } else { 0.0 };
    let norm = 1.0 / (6.0 * spread);
    let mut hue = if r == value {
        norm * (g - b)
    } else if g == value {
        (f64::from(norm * (b - r)) + 2.0 / 6.0) as f32
    } else {
        (f64::from(norm * (r - g)) + 4.0 / 6.0) as f32
    };
    if spread <= 0.0 {
        hue = 0.0;
    }
    if hue < 0.0 {
        hue += 1.0;
    }
    let saturation = (saturation * scale).clamp(0.0, 1.0);
    let chroma = saturation * value;
    let offset = value - chroma;
    let dh = hue * 6.0;
    let sector = if dh.is_finite() { dh as i64 } else { -1 };
    let ramp = wrap(dh, 2.0, false);
    let x = chroma * (1.0 - (ramp - 1.0).abs());
    let rgb = match sector {
        0 => [chroma, x, 0.0],
        1 => [x, chroma, 0.0],
        2 => [0.0, chroma, x],
        3 => [0.0, x, chroma],
        4 => [x, 0.0, chroma],
        5 => [chroma, 0.0, x],
        _ => [0.0; 3],
    };
    for (out, c) in p.iter_mut().zip(rgb) {
        *out = c + offset;
    }
}
