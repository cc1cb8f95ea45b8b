//! DepthwiseConv2dNative (and Conv2D with one input channel per group): a direct kernel over
//! NHWC. Each output pixel accumulates its taps a whole row of channels at a time (the channel
//! axis is contiguous in input, filter and output, so the loop vectorizes); output rows are
//! spread over rayon's threads when the work is large.

use rayon::prelude::*;

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::conv::{Epilogue, Geometry};
use crate::kernels::nn::gemm::PARALLEL_WORK;
use crate::kernels::nn::layout::{to_nchw, to_nhwc};
use crate::kernels::nn::num::{f32_values, run_num, zeros, Num, NumOp, FLOATS};
use crate::kernels::nn::window::{conv_spec, nhwc, rank4, Spec};
use crate::kernels::util::make;
use crate::tensor::{element_count, Tensor};

pub fn depthwise_conv2d(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = conv_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let filter = tensor_input(inputs, 1)?;
        one(depthwise(&spec, &x, &filter)?)
    }))
}

/// The geometry of a depthwise convolution and its channel multiplier.
fn geometry(spec: &Spec, x: &Tensor, filter: &Tensor) -> KResult<(Geometry, usize)> {
    let [n, h, w, c] = nhwc(rank4(x.shape(), "input")?, spec.channels_first);
    let [kh, kw, fc, multiplier] = rank4(filter.shape(), "filter")?;
    if fc != c {
        return Err(fail(format!(
            "input and filter must have the same depth: {c} vs {fc}"
        )));
    }
    let [rows, cols] = spec.axes(h, w, [kh, kw])?;
    let o = c
        .checked_mul(multiplier)
        .ok_or_else(|| fail("output depth overflows"))?;
    let g = Geometry {
        n,
        h,
        w,
        c,
        kh,
        kw,
        gi: 1,
        o,
        groups: c,
        rows,
        cols,
    };
    element_count(&g.out_shape())
        .ok_or_else(|| fail(format!("output shape {:?} is too large", g.out_shape())))?;
    Ok((g, multiplier))
}

/// DepthwiseConv2dNative of `x` by `filter` (H, W, C, multiplier): output channel
/// `c * multiplier + m` is input channel `c` convolved with `filter[.., c, m]`.
pub fn depthwise(spec: &Spec, x: &Tensor, filter: &Tensor) -> KResult<Tensor> {
    let (g, multiplier) = geometry(spec, x, filter)?;
    let call = Call {
        g,
        multiplier,
        channels_first: spec.channels_first,
        input_shape: rank4(x.shape(), "input")?,
    };
    let storage = run_num(&call, &[x, filter], &FLOATS, "DepthwiseConv2dNative")?;
    let [n, oh, ow, o] = g.out_shape();
    let shape = if spec.channels_first {
        vec![n, o, oh, ow]
    } else {
        vec![n, oh, ow, o]
    };
    make(shape, storage)
}

/// The NHWC output shape of DepthwiseConv2dNative of `x` by `filter` under `spec`.
pub fn depthwise_out_shape(spec: &Spec, x: &Tensor, filter: &Tensor) -> KResult<[usize; 4]> {
    Ok(geometry(spec, x, filter)?.0.out_shape())
}

/// DepthwiseConv2dNative of float32 NHWC tensors with `epilogue` applied to each output row
/// as soon as it is computed (see [`crate::kernels::nn::conv_fused`]).
pub fn depthwise_fused(
    spec: &Spec,
    x: &Tensor,
    filter: &Tensor,
    epilogue: Epilogue<f32>,
) -> KResult<Tensor> {
    if spec.channels_first {
        return Err(fail("a fused DepthwiseConv2dNative must be NHWC"));
    }
    let (g, multiplier) = geometry(spec, x, filter)?;
    let mut out = zeros(g.out_shape().iter().product())?;
    direct(
        &g,
        multiplier,
        f32_values(x, "input")?,
        f32_values(filter, "filter")?,
        &mut out,
        epilogue,
    );
    Ok(Tensor::from_vec(g.out_shape().to_vec(), out))
}

struct Call {
    g: Geometry,
    multiplier: usize,
    channels_first: bool,
    input_shape: [usize; 4],
}

impl NumOp for Call {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x, filter] = inputs else {
            return Err(fail("DepthwiseConv2dNative takes 2 inputs"));
        };
        let mut out = zeros(self.g.out_shape().iter().product())?;
        if !self.channels_first {
            direct(&self.g, self.multiplier, x, filter, &mut out, &|_, _| {});
            return Ok(out);
        }
        let x = to_nhwc(x, self.input_shape);
        direct(&self.g, self.multiplier, &x, filter, &mut out, &|_, _| {});
        Ok(to_nchw(&out, self.g.out_shape()))
    }
}

/// The depthwise convolution of NHWC `x` into `out` (zeroed, NHWC), `epilogue` applied to
/// each finished output row; `filter` is (kh, kw, c · multiplier) in memory.
pub fn direct<T: Num>(
    g: &Geometry,
    multiplier: usize,
    x: &[T],
    filter: &[T],
    out: &mut [T],
    epilogue: Epilogue<T>,
) {
    let row_len = g.cols.out * g.o;
    if row_len == 0 || filter.len() < g.kh * g.kw * g.o || x.len() < g.n * g.h * g.w * g.c {
        return;
    }
    let oh = g.rows.out.max(1);
    let body = |(r, row): (usize, &mut [T])| {
        output_row(g, multiplier, x, filter, r / oh, r % oh, row);
        epilogue(r * row_len, row);
    };
    let work = out.len().saturating_mul(g.kh * g.kw);
    if work >= PARALLEL_WORK && out.len() > row_len {
        out.par_chunks_mut(row_len).enumerate().for_each(body);
    } else {
        out.chunks_mut(row_len).enumerate().for_each(body);
    }
}

/// One output row (image, oy): every output pixel's channels, tap by tap. Compiled also for
/// AVX2 (chosen at run time), where the channel loops run 8 lanes wide.
#[multiversion::multiversion(targets("x86_64+avx2+fma"))]
fn output_row<T: Num>(
    g: &Geometry,
    multiplier: usize,
    x: &[T],
    filter: &[T],
    image: usize,
    oy: usize,
    row: &mut [T],
) {
    let line_len = g.w * g.c;
    for i in 0..g.kh {
        let Some(ih) = g.rows.source(oy, i, g.h) else {
            continue;
        };
        let line = &x[(image * g.h + ih) * line_len..][..line_len];
        for j in 0..g.kw {
            let taps = &filter[(i * g.kw + j) * g.o..][..g.o];
            for ox in g.cols.valid(j, g.w) {
                let iw = ox * g.cols.stride + j * g.cols.dilation - g.cols.before;
                let pixel = &line[iw * g.c..][..g.c];
                accumulate(&mut row[ox * g.o..][..g.o], pixel, taps, multiplier);
            }
        }
    }
}

/// `acc[c·m + k] += pixel[c] · taps[c·m + k]`.
#[inline]
fn accumulate<T: Num>(acc: &mut [T], pixel: &[T], taps: &[T], multiplier: usize) {
    if multiplier == 1 {
        for ((a, &v), &t) in acc.iter_mut().zip(pixel).zip(taps) {
            *a = a.add(v.mul(t));
        }
        return;
    }
    for ((accs, &v), taps) in acc
        .chunks_exact_mut(multiplier)
        .zip(pixel)
        .zip(taps.chunks_exact(multiplier))
    {
        for (a, &t) in accs.iter_mut().zip(taps) {
            *a = a.add(v.mul(t));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::window::Padding;

    #[test]
    fn multiplier_channels_follow_the_filter_layout() {
        let spec = Spec {
            channels_first: false,
            strides: [1, 1],
            dilations: [1, 1],
            padding: Padding::Valid,
            explicit: [[0, 0]; 2],
        };
        // One pixel, 2 channels, multiplier 2: out = [x0·f00, x0·f01, x1·f10, x1·f11].
        let x = Tensor::from_vec(vec![1, 1, 1, 2], vec![2.0f32, 3.0]);
        let f = Tensor::from_vec(vec![1, 1, 2, 2], vec![1.0f32, 10.0, 100.0, 1000.0]);
        let y = depthwise(&spec, &x, &f).unwrap();
        assert_eq!(y.shape(), &[1, 1, 1, 4]);
        assert_eq!(y.values::<f32>().unwrap(), &[2.0, 20.0, 300.0, 3000.0]);
        let bad = Tensor::from_vec(vec![1, 1, 3, 1], vec![1.0f32; 3]);
        assert!(depthwise(&spec, &x, &bad).is_err());
    }
}
