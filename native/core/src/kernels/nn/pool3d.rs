//! MaxPool3D and AvgPool3D (Keras' MaxPooling3D and AveragePooling3D): direct loops over
//! NDHWC, one output row (along the width) at a time, tap by tap as the 2-D pools
//! (pool_row.rs), rows spread over threads when the work is large. As in the 2-D pools (pool.rs), max pooling starts from the dtype's lowest finite
//! value and takes an element only if it compares greater (NaNs are skipped, as TensorFlow's
//! are), and average pooling divides by the number of input (not padding) elements a window
//! covers. NCDHW is transposed in and out.

use rayon::prelude::*;

use crate::engine::attrs::Attrs;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::num::{run_float, run_real, Float, FloatOp, Real, RealOp, FLOATS};
use crate::kernels::nn::pool::finite_halves;
use crate::kernels::nn::pool_row::{Columns, PARALLEL_READS};
use crate::kernels::nn::volume::{
    channels_first, ndhwc, padding, positive, rank5, split, stored, to_first, to_last, Spec3,
};
use crate::kernels::nn::window::Axis;
use crate::kernels::util::make;
use crate::tensor::{element_count, Tensor};

/// Validated pooling attrs.
#[derive(Clone, Debug)]
struct Pool {
    spec: Spec3,
    window: [usize; 3],
}

fn pool_spec(attrs: &Attrs) -> Result<Pool, String> {
    let channels_first = channels_first(attrs)?;
    let ksize = attrs.ints("ksize")?;
    let strides = attrs.ints("strides")?;
    let k = split(&ksize, channels_first, "Sliding window ksize")?;
    let s = split(&strides, channels_first, "Sliding window strides")?;
    if k.iter().chain(&s).any(|&v| v <= 0) {
        return Err(format!(
            "ksize and strides must be positive, got {ksize:?} and {strides:?}"
        ));
    }
    if k[0] != 1 || s[0] != 1 {
        return Err("Pooling is not yet supported on the batch dimension.".into());
    }
    if k[4] != 1 || s[4] != 1 {
        return Err("Pooling is not yet supported on the depth dimension.".into());
    }
    Ok(Pool {
        spec: Spec3 {
            channels_first,
            strides: positive(s, "strides")?,
            dilations: [1; 3],
            padding: padding(attrs)?,
        },
        window: positive(k, "ksize")?,
    })
}

pub fn max_pool3d(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pool = pool_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let call = Call::new(&pool, &x)?;
        let storage = run_real(&call, &[&x], &FLOATS, "MaxPool3D")?;
        one(make(call.shape(), finite_halves(storage))?)
    }))
}

pub fn avg_pool3d(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let pool = pool_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let call = Call::new(&pool, &x)?;
        let storage = run_float(&call, &[&x], &FLOATS, "AvgPool3D")?;
        one(make(call.shape(), storage)?)
    }))
}

/// One pooling: its NDHWC input and output shapes and windows.
struct Call {
    input: [usize; 5],
    out: [usize; 5],
    axes: [Axis; 3],
    /// The input's shape as stored (NCDHW or NDHWC).
    x_stored: [usize; 5],
    channels_first: bool,
}

impl Call {
    fn new(pool: &Pool, x: &Tensor) -> KResult<Self> {
        let x_stored = rank5(x.shape(), "input")?;
        let input = ndhwc(x_stored, pool.spec.channels_first);
        let [n, d, h, w, c] = input;
        let axes = pool.spec.axes([d, h, w], pool.window)?;
        let out = [n, axes[0].out, axes[1].out, axes[2].out, c];
        element_count(&out).ok_or_else(|| fail(format!("output shape {out:?} is too large")))?;
        Ok(Self {
            input,
            out,
            axes,
            x_stored,
            channels_first: pool.spec.channels_first,
        })
    }

    /// The output shape as stored.
    fn shape(&self) -> Vec<usize> {
        stored(self.out, self.channels_first)
    }

    /// The first elements of the input lines (along the width) that output row `r`
    /// ((image·od + z)·oh + y) pools: one per depth and row tap that reads the input.
    fn lines(&self, r: usize) -> impl Iterator<Item = usize> {
        let [_, od, oh, _, _] = self.out;
        let [_, d, h, w, c] = self.input;
        let [ad, ah, _] = self.axes;
        let (rest, y) = (r / oh.max(1), r % oh.max(1));
        let (image, z) = (rest / od.max(1), rest % od.max(1));
        ad.taps(z, d).flat_map(move |i| {
            let zi = z * ad.stride + i - ad.before;
            ah.taps(y, h).map(move |j| {
                let yi = y * ah.stride + j - ah.before;
                ((image * d + zi) * h + yi) * w * c
            })
        })
    }

    /// Runs `fill(x, r, row)` for every output row (along the width, NDHWC) over the NDHWC
    /// input, in and out of NCDHW; rows spread over threads when the work is large.
    fn each_row<T: Copy + Default + Send + Sync>(
        &self,
        x: &[T],
        fill: impl Fn(&[T], usize, &mut [T]) + Sync,
    ) -> Vec<T> {
        let transposed;
        let x = if self.channels_first {
            transposed = to_last(x, self.x_stored);
            &transposed
        } else {
            x
        };
        let mut out = vec![T::default(); self.out.iter().product()];
        let row_len = self.out[3] * self.out[4];
        if row_len > 0 {
            let body = |(r, row): (usize, &mut [T])| fill(x, r, row);
            let taps = self.axes.iter().map(|a| a.window).product::<usize>();
            if out.len().saturating_mul(taps) >= PARALLEL_READS && out.len() > row_len {
                out.par_chunks_mut(row_len).enumerate().for_each(body);
            } else {
                out.chunks_mut(row_len).enumerate().for_each(body);
            }
        }
        if self.channels_first {
            to_first(&out, self.out)
        } else {
            out
        }
    }

    /// The pooled columns along the input's lines.
    fn columns(&self) -> Columns {
        Columns::new(self.axes[2], self.input[3], self.input[4])
    }
}

impl RealOp for Call {
    fn run<T: Real>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x] = inputs else {
            return Err(fail("MaxPool3D takes 1 input"));
        };
        let cols = self.columns();
        Ok(self.each_row(x, |x, r, row| cols.max_row(x, self.lines(r), row)))
    }
}

impl FloatOp for Call {
    fn run<T: Float>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x] = inputs else {
            return Err(fail("AvgPool3D takes 1 input"));
        };
        let cols = self.columns();
        Ok(self.each_row(x, |x, r, row| cols.avg_row(x, self.lines(r), row)))
    }
}

#[cfg(test)]
pub(super) mod tests {
    use super::*;
    use crate::kernels::nn::window::Padding;
    use crate::tensor::Storage;

    fn pool(window: [usize; 3], strides: [usize; 3], padding: Padding) -> Pool {
        Pool {
            spec: Spec3 {
                channels_first: false,
                strides,
                dilations: [1; 3],
                padding,
            },
            window,
        }
    }

    #[test]
    fn same_padding_averages_valid_elements_and_max_skips_nan() {
        let x = Tensor::from_vec(
            vec![1, 2, 2, 2, 1],
            vec![f32::NAN, 1.0, f32::NEG_INFINITY, 2.0, 3.0, 4.0, 5.0, 6.0],
        );
        let p = pool([2; 3], [1; 3], Padding::Same);
        let call = Call::new(&p, &x).unwrap();
        let max = run_real(&call, &[&x], &FLOATS, "MaxPool3D").unwrap();
        let Storage::Float32(max) = max else {
            panic!("dtype")
        };
        assert_eq!(max, vec![6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0, 6.0]);
        let y = Tensor::from_vec(vec![1, 1, 2, 2, 1], vec![1.0f32, 2.0, 3.0, 4.0]);
        let call = Call::new(&p, &y).unwrap();
        let avg = run_float(&call, &[&y], &FLOATS, "AvgPool3D").unwrap();
        assert_eq!(avg, Storage::Float32(vec![2.5, 3.0, 3.5, 4.0]));
        let all_nan = Tensor::from_vec(vec![1, 1, 1, 1, 1], vec![f32::NAN]);
        let call = Call::new(&p, &all_nan).unwrap();
        let max = run_real(&call, &[&all_nan], &FLOATS, "MaxPool3D").unwrap();
        assert_eq!(max, Storage::Float32(vec![f32::MIN]));
    }

    /// Max and average of every window of an NDHWC input by the definition, in the window's
    /// order, and the output shape (also the 2-D pools' reference, with a depth of 1).
    pub(in crate::kernels::nn) fn by_definition(
        window: [usize; 3],
        strides: [usize; 3],
        padding: Padding,
        shape: [usize; 5],
        values: &[f32],
    ) -> (Vec<f32>, Vec<f32>, Vec<usize>) {
        let p = pool(window, strides, padding);
        let [n, d, h, w, c] = shape;
        let axes = p.spec.axes([d, h, w], p.window).unwrap();
        let out = [n, axes[0].out, axes[1].out, axes[2].out, c];
        let (mut max, mut avg) = (Vec::new(), Vec::new());
        for i in 0..out.iter().product::<usize>() {
            let (ch, rest) = (i % c, i / c);
            let (ox, rest) = (rest % out[3], rest / out[3]);
            let (oy, rest) = (rest % out[2], rest / out[2]);
            let (oz, image) = (rest % out[1], rest / out[1]);
            let (mut m, mut sum, mut count) = (f32::MIN, 0.0f32, 0);
            for tz in 0..p.window[0] {
                for ty in 0..p.window[1] {
                    for tx in 0..p.window[2] {
                        let (Some(z), Some(y), Some(xx)) = (
                            axes[0].source(oz, tz, d),
                            axes[1].source(oy, ty, h),
                            axes[2].source(ox, tx, w),
                        ) else {
                            continue;
                        };
                        let v = values[(((image * d + z) * h + y) * w + xx) * c + ch];
                        if v > m {
                            m = v;
                        }
                        sum += v;
                        count += 1;
                    }
                }
            }
            max.push(m);
            avg.push(sum / count as f32);
        }
        (max, avg, out.to_vec())
    }

    #[test]
    fn rows_of_windows_match_the_definition() {
        let same = |(a, b): (&f32, &f32)| a.to_bits() == b.to_bits() || a.is_nan() && b.is_nan();
        for c in [1, 2, 3, 4, 5, 8, 12, 16, 20] {
            for (window, strides) in [
                ([2, 2, 2], [2, 2, 2]),
                ([2, 3, 2], [1, 2, 2]),
                ([1, 3, 3], [1, 1, 2]),
                ([3, 1, 2], [2, 3, 1]),
            ] {
                for padding in [Padding::Same, Padding::Valid] {
                    let shape = [2, 4, 5, 7, c];
                    let values: Vec<f32> = (0..shape.iter().product::<usize>())
                        .map(|i| match i % 29 {
                            5 => f32::NAN,
                            k => ((i * 37) % 101) as f32 - 50.0 + k as f32 * 0.01,
                        })
                        .collect();
                    let x = Tensor::from_vec(shape.to_vec(), values.clone());
                    let p = pool(window, strides, padding);
                    let (max, avg, out) = by_definition(window, strides, padding, shape, &values);
                    let call = Call::new(&p, &x).unwrap();
                    assert_eq!(call.shape(), out);
                    let case = format!("{c} channels, {window:?}/{strides:?} {padding:?}");
                    let got = run_real(&call, &[&x], &FLOATS, "MaxPool3D").unwrap();
                    assert_eq!(got, Storage::Float32(max), "max: {case}");
                    let Storage::Float32(got) =
                        run_float(&call, &[&x], &FLOATS, "AvgPool3D").unwrap()
                    else {
                        panic!("dtype")
                    };
                    let equal = got.len() == avg.len() && got.iter().zip(&avg).all(same);
                    assert!(equal, "average: {case}");
                }
            }
        }
    }

    #[test]
    fn valid_windows_larger_than_the_input_give_empty_outputs() {
        let x = Tensor::from_vec(vec![1, 1, 2, 2, 1], vec![1.0f32; 4]);
        let call = Call::new(&pool([2, 1, 1], [1; 3], Padding::Valid), &x).unwrap();
        assert_eq!(call.shape(), vec![1, 0, 2, 2, 1]);
        assert!(run_float(&call, &[&x], &FLOATS, "AvgPool3D")
            .unwrap()
            .is_empty());
    }
}
