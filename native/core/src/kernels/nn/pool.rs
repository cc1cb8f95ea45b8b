//! MaxPool, MaxPoolV2 (ksize and strides as inputs) and AvgPool: direct loops over NHWC, a
//! row of channels at a time, output rows spread over threads when the work is large. Max
//! pooling starts from the dtype's lowest finite value and keeps an element only if it
//! compares greater (so NaNs are skipped, as TensorFlow's are); average pooling divides by
//! the number of input (not padding) elements a window covers. MaxPool also pools across
//! channels (a depth window equal to its stride). A max pool whose node carries
//! [`ZERO_PADDING`] counts its padding as zeros: a zero Pad before it, folded into the pool by
//! `engine::pad_fold`.

use rayon::prelude::*;

use crate::dtype::DType;
use crate::engine::attrs::Attrs;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::layout::{to_nchw, to_nhwc};
use crate::kernels::nn::num::{run_float, run_real, Float, FloatOp, Real, RealOp, FLOATS};
use crate::kernels::nn::pool_row::{Columns, PARALLEL_READS};
use crate::kernels::nn::window::{channels_first, nhwc, padding, rank4, split, Axis, Spec};
use crate::kernels::util::{int_values, make};
use crate::tensor::{element_count, Storage, Tensor};

/// The internal attr (a bool) of a MaxPool whose padding holds zeros rather than nothing: each
/// window that covers padding pools a 0 with its input elements, as it would over a zero-padded
/// copy of the input. Only `engine::pad_fold` sets it; TensorFlow's graphs never carry it.
pub const ZERO_PADDING: &str = "_zero_padding";

const MAX_TYPES: [DType; 12] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
    DType::Int8,
    DType::Int16,
    DType::Int32,
    DType::Int64,
    DType::UInt8,
    DType::UInt16,
    DType::UInt32,
    DType::UInt64,
];

/// Validated pooling attrs: a spatial window, or (max pooling) a window across channels.
#[derive(Clone, Debug)]
struct Pool {
    spec: Spec,
    window: [usize; 2],
    /// The channel window (1 for spatial pooling).
    depth: usize,
    /// Whether the padding holds zeros (see [`ZERO_PADDING`]).
    zeros: bool,
}

fn pool_spec(ksize: &[i64], strides: &[i64], attrs: &Attrs, max: bool) -> Result<Pool, String> {
    let channels_first = channels_first(attrs)?;
    let k = split(ksize, channels_first, "Sliding window ksize")?;
    let s = split(strides, channels_first, "Sliding window strides")?;
    if k.iter().any(|&v| v <= 0) {
        return Err(format!(
            "Sliding window ksize must be positive. The specified or inferred ksize is: \
             {ksize:?}"
        ));
    }
    if s.iter().any(|&v| v <= 0) {
        return Err(format!("Stride must be > 0, but got {strides:?}"));
    }
    if k[0] != 1 || s[0] != 1 {
        return Err("Pooling is not yet supported on the batch dimension.".into());
    }
    let (padding, explicit) = padding(attrs, channels_first)?;
    let size = |v: i64| usize::try_from(v).map_err(|_| format!("{v} is too large"));
    let mut pool = Pool {
        spec: Spec {
            channels_first,
            strides: [size(s[1])?, size(s[2])?],
            dilations: [1, 1],
            padding,
            explicit,
        },
        window: [size(k[1])?, size(k[2])?],
        depth: 1,
        zeros: max && attrs.bool_or(ZERO_PADDING, false)?,
    };
    if k[3] == 1 && s[3] == 1 {
        return Ok(pool);
    }
    if !max {
        return Err("Non-spatial pooling is not yet supported.".into());
    }
    if pool.window != [1, 1] || pool.spec.strides != [1, 1] {
        return Err(
            "MaxPooling supports exactly one of pooling across depth or pooling \
                    across width/height."
                .into(),
        );
    }
    if k[3] != s[3] {
        return Err(
            "Depthwise max pooling requires the depth window to equal the depth stride.".into(),
        );
    }
    pool.depth = size(k[3])?;
    Ok(pool)
}

pub fn max_pool(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pool = pool_spec(
        &node.attrs.ints("ksize")?,
        &node.attrs.ints("strides")?,
        &node.attrs,
        true,
    )?;
    Ok(boxed(move |_, inputs| {
        one(max_pool_tensor(&pool, &*tensor_input(inputs, 0)?)?)
    }))
}

pub fn max_pool_v2(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let map = node.attrs.map().clone();
    // Padding and data_format are checked now; ksize and strides on each call.
    pool_spec(&[1, 1, 1, 1], &[1, 1, 1, 1], &node.attrs, true)?;
    Ok(boxed(move |_, inputs| {
        let attrs = Attrs::new(&map);
        let vector = |i: usize, what: &str| -> KResult<Vec<i64>> {
            let t = tensor_input(inputs, i)?;
            if t.rank() != 1 || t.len() != 4 {
                return Err(fail(format!(
                    "Sliding window {what} field must specify 4 dimensions"
                )));
            }
            int_values(&t, what)
        };
        let pool =
            pool_spec(&vector(1, "ksize")?, &vector(2, "strides")?, &attrs, true).map_err(fail)?;
        one(max_pool_tensor(&pool, &*tensor_input(inputs, 0)?)?)
    }))
}

pub fn avg_pool(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pool = pool_spec(
        &node.attrs.ints("ksize")?,
        &node.attrs.ints("strides")?,
        &node.attrs,
        false,
    )?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let (g, out_shape) = geometry(&pool, &x, "value")?;
        let call = Call { g, pool: &pool };
        one(make(
            out_shape,
            run_float(&call, &[&x], &FLOATS, "AvgPool")?,
        )?)
    }))
}

fn max_pool_tensor(pool: &Pool, x: &Tensor) -> KResult<Tensor> {
    let (g, out_shape) = geometry(pool, x, "input")?;
    let call = Call { g, pool };
    let storage = run_real(&call, &[x], &MAX_TYPES, "MaxPool")?;
    make(out_shape, finite_halves(storage))
}

/// Half-type results that rounded the f32 lowest value to -inf hold the type's own lowest
/// finite value instead (a max pool never yields -inf).
pub(super) fn finite_halves(storage: Storage) -> Storage {
    let fix = |mut v: Vec<u16>, minus_inf: u16, lowest: u16| {
        v.iter_mut()
            .filter(|b| **b == minus_inf)
            .for_each(|b| *b = lowest);
        v
    };
    match storage {
        Storage::Float16(v) => Storage::Float16(fix(v, 0xfc00, 0xfbff)),
        Storage::BFloat16(v) => Storage::BFloat16(fix(v, 0xff80, 0xff7f)),
        other => other,
    }
}

/// The shapes of one pooling, NHWC.
#[derive(Clone, Copy)]
struct Geometry {
    input: [usize; 4],
    out: [usize; 4],
    axes: [Axis; 2],
    /// The input shape as stored (NCHW or NHWC).
    stored: [usize; 4],
}

/// The pooling's geometry and its output shape as stored.
fn geometry(pool: &Pool, x: &Tensor, what: &str) -> KResult<(Geometry, Vec<usize>)> {
    let stored = rank4(x.shape(), what)?;
    let input = nhwc(stored, pool.spec.channels_first);
    let [n, h, w, c] = input;
    if c % pool.depth != 0 {
        return Err(fail(format!(
            "Depthwise max pooling requires the depth window to evenly divide the input \
             depth {c}"
        )));
    }
    let axes = if pool.depth > 1 {
        [unit(h), unit(w)]
    } else {
        pool.spec.axes(h, w, pool.window)?
    };
    let out = [n, axes[0].out, axes[1].out, c / pool.depth];
    element_count(&out).ok_or_else(|| fail(format!("output shape {out:?} is too large")))?;
    let shape = if pool.spec.channels_first {
        vec![out[0], out[3], out[1], out[2]]
    } else {
        out.to_vec()
    };
    Ok((
        Geometry {
            input,
            out,
            axes,
            stored,
        },
        shape,
    ))
}

/// The identity window of depth pooling along a spatial axis.
fn unit(size: usize) -> Axis {
    Axis {
        window: 1,
        stride: 1,
        dilation: 1,
        before: 0,
        out: size,
    }
}

struct Call<'a> {
    g: Geometry,
    pool: &'a Pool,
}

impl Call<'_> {
    /// Runs `pixel` for every output pixel (NHWC) over the NHWC input, in and out of NCHW.
    fn each_pixel<T: Copy + Default + Send + Sync>(
        &self,
        x: &[T],
        pixel: impl Fn(&[T], usize, usize, &mut [T]) + Sync,
    ) -> Vec<T> {
        let oc = self.g.out[3];
        self.each_row(x, |x, r, row| {
            for (ox, acc) in row.chunks_exact_mut(oc).enumerate() {
                pixel(x, r, ox, acc);
            }
        })
    }

    /// Runs `fill` for every output row (image·oh + oy, NHWC) over the NHWC input, in and out
    /// of NCHW.
    fn each_row<T: Copy + Default + Send + Sync>(
        &self,
        x: &[T],
        fill: impl Fn(&[T], usize, &mut [T]) + Sync,
    ) -> Vec<T> {
        let g = &self.g;
        let transposed;
        let x = if self.pool.spec.channels_first {
            transposed = to_nhwc(x, g.stored);
            &transposed
        } else {
            x
        };
        let [_, _, ow, oc] = g.out;
        let mut out = vec![T::default(); g.out.iter().product()];
        let row_len = ow * oc;
        if row_len > 0 {
            let body = |(r, row): (usize, &mut [T])| fill(x, r, row);
            let [kh, kw] = self.pool.window;
            if out.len().saturating_mul(kh * kw) >= PARALLEL_READS && out.len() > row_len {
                out.par_chunks_mut(row_len).enumerate().for_each(body);
            } else {
                out.chunks_mut(row_len).enumerate().for_each(body);
            }
        }
        if self.pool.spec.channels_first {
            to_nchw(&out, g.out)
        } else {
            out
        }
    }

    /// The pooled columns along the input's rows.
    fn columns(&self) -> Columns {
        Columns::new(self.g.axes[1], self.g.input[2], self.g.input[3])
    }

    /// The output columns whose windows cover padding, when the padding holds zeros (see
    /// [`ZERO_PADDING`]); none otherwise.
    fn padded_columns(&self) -> Vec<usize> {
        let (cols, w) = (self.g.axes[1], self.g.input[2]);
        if !self.pool.zeros {
            return Vec::new();
        }
        (0..cols.out)
            .filter(|&ox| cols.taps(ox, w).len() < cols.window)
            .collect()
    }

    /// Pools a 0 into each pixel of output row `r` (image·oh + oy) whose window covers
    /// padding, when the padding holds zeros: the whole row when its window rows do, else the
    /// `padded` columns. NaNs never reach the output, so `0 > v` is the comparison the
    /// pooling itself makes.
    fn pool_zeros<T: Real>(&self, r: usize, padded: &[usize], row: &mut [T]) {
        if !self.pool.zeros {
            return;
        }
        let (rows, h, c) = (self.g.axes[0], self.g.input[1], self.g.out[3]);
        let zero = T::default();
        let clamp = |values: &mut [T]| {
            for v in values.iter_mut().filter(|v| zero > **v) {
                *v = zero;
            }
        };
        if rows.taps(r % rows.out.max(1), h).len() < rows.window {
            clamp(row);
            return;
        }
        for &ox in padded {
            clamp(&mut row[ox * c..(ox + 1) * c]);
        }
    }

    /// The first elements of the input lines that output row `r` (image·oh + oy) pools.
    fn lines(&self, r: usize) -> impl Iterator<Item = usize> {
        let [_, h, w, c] = self.g.input;
        let rows = self.g.axes[0];
        let (image, oy) = (r / rows.out.max(1), r % rows.out.max(1));
        rows.taps(oy, h)
            .map(move |i| (image * h + oy * rows.stride + i - rows.before) * w * c)
    }

    /// The input pixels (as channel slices) of output pixel (row `r` = image·oh + oy, `ox`).
    fn window<'x, T>(&self, x: &'x [T], r: usize, ox: usize) -> impl Iterator<Item = &'x [T]> {
        let [_, h, w, c] = self.g.input;
        let [rows, cols] = self.g.axes;
        let oh = rows.out.max(1);
        let (image, oy) = (r / oh, r % oh);
        rows.taps(oy, h)
            .map(move |i| oy * rows.stride + i - rows.before)
            .flat_map(move |ih| {
                cols.taps(ox, w)
                    .map(move |j| ((image * h + ih) * w + ox * cols.stride + j - cols.before) * c)
            })
            .filter_map(move |start| x.get(start..start + c))
    }
}

impl RealOp for Call<'_> {
    fn run<T: Real>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x] = inputs else {
            return Err(fail("MaxPool takes 1 input"));
        };
        let depth = self.pool.depth;
        if depth == 1 {
            let cols = self.columns();
            let padded = self.padded_columns();
            return Ok(self.each_row(x, |x, r, row| {
                cols.max_row(x, self.lines(r), row);
                self.pool_zeros(r, &padded, row);
            }));
        }
        // Across channels: each window is one pixel, each output the maximum of a group.
        Ok(self.each_pixel(x, |x, r, ox, acc| {
            acc.fill(T::LOWEST);
            for pixel in self.window(x, r, ox) {
                for (a, group) in acc.iter_mut().zip(pixel.chunks_exact(depth)) {
                    for &v in group {
                        if v > *a {
                            *a = v;
                        }
                    }
                }
            }
        }))
    }
}

impl FloatOp for Call<'_> {
    fn run<T: Float>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x] = inputs else {
            return Err(fail("AvgPool takes 1 input"));
        };
        let cols = self.columns();
        Ok(self.each_row(x, |x, r, row| cols.avg_row(x, self.lines(r), row)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::pool3d::tests::by_definition;
    use crate::kernels::nn::window::Padding;

    fn pool(window: usize, stride: usize) -> Pool {
        Pool {
            spec: Spec {
                channels_first: false,
                strides: [stride; 2],
                dilations: [1, 1],
                padding: Padding::Same,
                explicit: [[0, 0]; 2],
            },
            window: [window; 2],
            depth: 1,
            zeros: false,
        }
    }

    #[test]
    fn same_padding_averages_valid_elements_only() {
        let x = Tensor::from_vec(vec![1, 2, 2, 1], vec![1.0f32, 2.0, 3.0, 4.0]);
        let p = pool(2, 1);
        let (g, shape) = geometry(&p, &x, "x").unwrap();
        let out = run_float(&Call { g, pool: &p }, &[&x], &FLOATS, "AvgPool").unwrap();
        assert_eq!(shape, vec![1, 2, 2, 1]);
        assert_eq!(out, Storage::Float32(vec![2.5, 3.0, 3.5, 4.0]));
    }

    /// Every channel block width (16, 8, 4, 1 lanes) against the definition: the largest
    /// non-NaN input value in each window, padding excluded.
    #[test]
    fn max_and_average_pools_match_the_definition() {
        for c in [1, 3, 4, 8, 12, 16, 32, 40] {
            for (window, stride) in [(2, 2), (3, 2), (3, 1), (1, 1), (2, 3)] {
                for padding in [Padding::Same, Padding::Valid] {
                    let shape = [2, 7, 9, c];
                    let values: Vec<f32> = (0..shape.iter().product::<usize>())
                        .map(|i| match i % 23 {
                            5 => f32::NAN,
                            k => ((i * 37) % 101) as f32 - 50.0 + k as f32 * 0.01,
                        })
                        .collect();
                    let x = Tensor::from_vec(shape.to_vec(), values.clone());
                    let mut p = pool(window, stride);
                    p.spec.padding = padding;
                    let got = max_pool_tensor(&p, &x).unwrap();
                    let call = Call {
                        g: geometry(&p, &x, "x").unwrap().0,
                        pool: &p,
                    };
                    let avg = run_float(&call, &[&x], &FLOATS, "AvgPool").unwrap();
                    let (want, want_avg, _) = by_definition(
                        [1, window, window],
                        [1, stride, stride],
                        padding,
                        [2, 1, 7, 9, c],
                        &values,
                    );
                    assert_eq!(
                        got.values::<f32>().unwrap(),
                        &want[..],
                        "{c} channels, {window}/{stride} {padding:?}"
                    );
                    let Storage::Float32(avg) = avg else {
                        panic!("dtype")
                    };
                    let same = |(a, b): (&f32, &f32)| {
                        a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan()
                    };
                    assert!(
                        avg.len() == want_avg.len() && avg.iter().zip(&want_avg).all(same),
                        "average: {c} channels, {window}/{stride} {padding:?}"
                    );
                }
            }
        }
    }

    /// `x` (NHWC) with `pad` (before, after) rows and columns of zeros.
    fn zero_padded<T: Copy + Default>(
        x: &[T],
        [n, h, w, c]: [usize; 4],
        pad: [[usize; 2]; 2],
    ) -> (Vec<T>, [usize; 4]) {
        let (ph, pw) = (h + pad[0][0] + pad[0][1], w + pad[1][0] + pad[1][1]);
        let mut out = vec![T::default(); n * ph * pw * c];
        for (i, pixel) in x.chunks_exact(c).enumerate() {
            let (image, y, col) = (i / (h * w), i / w % h, i % w);
            let at = ((image * ph + y + pad[0][0]) * pw + col + pad[1][0]) * c;
            out[at..at + c].copy_from_slice(pixel);
        }
        (out, [n, ph, pw, c])
    }

    /// A max pool whose padding holds zeros equals a VALID max pool over the zero-padded input
    /// (what a folded zero Pad computed): negative values, NaNs, windows partly and wholly over
    /// padding, float and integer values. The sign of a zero is not kept (a window of -0.0 and
    /// padding may give either zero).
    #[test]
    fn zero_padding_pools_the_zeros() {
        for c in [1, 3, 8, 16, 20] {
            for (window, stride) in [(3, 2), (2, 1), (1, 1), (3, 3)] {
                for pad in [[[1, 1], [1, 1]], [[0, 2], [3, 0]], [[4, 0], [0, 5]]] {
                    let shape = [2, 5, 6, c];
                    let count = shape.iter().product::<usize>();
                    let floats: Vec<f32> = (0..count)
                        .map(|i| match i % 13 {
                            4 => f32::NAN,
                            k => ((i * 29) % 31) as f32 - 20.0 + k as f32 * 0.5,
                        })
                        .collect();
                    let ints: Vec<i32> = (0..count).map(|i| (i * 7 % 19) as i32 - 12).collect();
                    let mut folded = pool(window, stride);
                    folded.spec.padding = Padding::Explicit;
                    folded.spec.explicit = pad;
                    folded.zeros = true;
                    let mut valid = pool(window, stride);
                    valid.spec.padding = Padding::Valid;
                    let (pf, padded_shape) = zero_padded(&floats, shape, pad);
                    let (pi, _) = zero_padded(&ints, shape, pad);
                    let run = |p: &Pool, x: Tensor| max_pool_tensor(p, &x).unwrap();
                    let got = run(&folded, Tensor::from_vec(shape.to_vec(), floats.clone()));
                    let want = run(&valid, Tensor::from_vec(padded_shape.to_vec(), pf));
                    let case = format!("{c} channels, {window}/{stride}, pad {pad:?}");
                    assert_eq!(got.shape(), want.shape(), "{case}");
                    assert_eq!(
                        got.values::<f32>().unwrap(),
                        want.values::<f32>().unwrap(),
                        "{case}"
                    );
                    let got = run(&folded, Tensor::from_vec(shape.to_vec(), ints.clone()));
                    let want = run(&valid, Tensor::from_vec(padded_shape.to_vec(), pi));
                    assert_eq!(
                        got.values::<i32>().unwrap(),
                        want.values::<i32>().unwrap(),
                        "{case}"
                    );
                }
            }
        }
    }

    #[test]
    fn max_pool_skips_nan_and_starts_at_lowest() {
        let x = Tensor::from_vec(vec![1, 1, 2, 1], vec![f32::NAN, f32::NEG_INFINITY]);
        let out = max_pool_tensor(&pool(1, 1), &x).unwrap();
        assert_eq!(out.values::<f32>().unwrap(), &[f32::MIN, f32::MIN]);
    }
}

#[cfg(test)]
mod bench {
    use super::*;
    use crate::kernels::nn::window::Padding;

    /// keras_cnn's pooling at batch 32 by default (`cargo test --release -p savedmodel-core
    /// --lib bench_max_pool -- --ignored --nocapture`); `POOL_LAYER=n,h,w,c,k,stride,pad`
    /// times another shape (`pad` 1: explicit zero padding of k/2 pixels on each side, as a
    /// folded Pad leaves it, e.g. DenseNet121's `1,112,112,64,3,2,1`).
    #[test]
    #[ignore]
    fn bench_max_pool() {
        let layer: Vec<usize> = std::env::var("POOL_LAYER")
            .unwrap_or_else(|_| "32,26,26,8,2,2,0".into())
            .split(',')
            .map(|v| v.parse().expect("POOL_LAYER holds numbers"))
            .collect();
        let [n, h, w, c, k, stride, pad] = layer[..] else {
            panic!("POOL_LAYER=n,h,w,c,k,stride,pad");
        };
        let values: Vec<f32> = (0..n * h * w * c)
            .map(|i| (i % 101) as f32 - 50.0)
            .collect();
        let x = Tensor::from_vec(vec![n, h, w, c], values);
        let side = pad * (k / 2);
        let pool = Pool {
            spec: Spec {
                channels_first: false,
                strides: [stride; 2],
                dilations: [1, 1],
                padding: if pad == 1 {
                    Padding::Explicit
                } else {
                    Padding::Valid
                },
                explicit: [[side, side]; 2],
            },
            window: [k; 2],
            depth: 1,
            zeros: pad == 1,
        };
        let mut best = f64::INFINITY;
        for _ in 0..500 {
            let start = std::time::Instant::now();
            std::hint::black_box(max_pool_tensor(&pool, &x).unwrap());
            best = best.min(start.elapsed().as_secs_f64());
        }
        println!(
            "max pool {:?} {k}x{k}/{stride}: {:.1} us",
            [n, h, w, c],
            best * 1e6
        );
    }
}
