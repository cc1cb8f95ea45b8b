//! Conv2DBackpropInput, the transposed convolution (as Keras' Conv2DTranspose emits it): per
//! image, one GEMM multiplies every output gradient by every filter tap (out_backprop ×
//! filterᵀ), then col2im adds each tap's products into the input pixel it was read from. No
//! work is spent on the zeros a strided transposed convolution would otherwise insert.
//! Images run on rayon's threads when the work is large.

use rayon::prelude::*;

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::conv::Geometry;
use crate::kernels::nn::gemm::{Layout, Product, PARALLEL_WORK};
use crate::kernels::nn::layout::{to_nchw, to_nhwc};
use crate::kernels::nn::num::{run_num, zeros, Num, NumOp};
use crate::kernels::nn::window::{conv_spec, nhwc, rank4, split, Spec};
use crate::kernels::util::{int_values, make};
use crate::tensor::{element_count, Tensor};

const TYPES: [DType; 5] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
    DType::Int32,
];

pub fn conv2d_backprop_input(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = conv_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let sizes = tensor_input(inputs, 0)?;
        let filter = tensor_input(inputs, 1)?;
        let grad = tensor_input(inputs, 2)?;
        one(backprop_input(&spec, &sizes, &filter, &grad)?)
    }))
}

/// The NHWC shape of the input gradient: input_sizes holds all 4 dims (in data_format
/// order), or only the spatial two (batch and depth then come from out_backprop and filter).
fn input_shape(
    sizes: &Tensor,
    spec: &Spec,
    batch: usize,
    filter_depth: usize,
) -> KResult<[usize; 4]> {
    if sizes.rank() != 1 {
        return Err(fail(format!(
            "input_sizes must be 1-D, got shape {:?}",
            sizes.shape()
        )));
    }
    let values = int_values(sizes, "input_sizes")?;
    let dims = match values.len() {
        2 => [batch as i64, values[0], values[1], filter_depth as i64],
        4 => split(&values, spec.channels_first, "input_sizes").map_err(fail)?,
        n => {
            return Err(fail(format!(
                "input_sizes must have 2 or 4 elements, got {n}"
            )))
        }
    };
    let mut out = [0usize; 4];
    for (slot, d) in out.iter_mut().zip(dims) {
        *slot = usize::try_from(d)
            .map_err(|_| fail(format!("input_sizes must be non-negative, got {values:?}")))?;
    }
    Ok(out)
}

/// The gradient of a convolution's input, given its output's gradient `grad`.
pub fn backprop_input(
    spec: &Spec,
    sizes: &Tensor,
    filter: &Tensor,
    grad: &Tensor,
) -> KResult<Tensor> {
    let [kh, kw, gi, o] = rank4(filter.shape(), "filter")?;
    let grad_stored = rank4(grad.shape(), "out_backprop")?;
    let grad_shape = nhwc(grad_stored, spec.channels_first);
    let [n, h, w, c] = input_shape(sizes, spec, grad_shape[0], gi)?;
    if gi == 0 || c % gi != 0 {
        return Err(fail(format!(
            "input depth {c} must be evenly divisible by filter depth {gi}"
        )));
    }
    let groups = c / gi;
    if o % groups != 0 || o != grad_shape[3] {
        return Err(fail(format!(
            "filter out depth {o} must match out_backprop depth {} and be divisible by the \
             {groups} groups",
            grad_shape[3]
        )));
    }
    let [rows, cols] = spec.axes(h, w, [kh, kw])?;
    if grad_shape[..3] != [n, rows.out, cols.out] {
        return Err(fail(format!(
            "out_backprop has shape {grad_shape:?} in NHWC, but a convolution of an input of \
             {:?} gives {:?}",
            [n, h, w, c],
            [n, rows.out, cols.out, o]
        )));
    }
    element_count(&[n, h, w, c]).ok_or_else(|| fail("input_sizes is too large"))?;
    let call = Call {
        g: Geometry {
            n,
            h,
            w,
            c,
            kh,
            kw,
            gi,
            o,
            groups,
            rows,
            cols,
        },
        channels_first: spec.channels_first,
        grad_stored,
    };
    let storage = run_num(&call, &[filter, grad], &TYPES, "Conv2DBackpropInput")?;
    let shape = if spec.channels_first {
        vec![n, c, h, w]
    } else {
        vec![n, h, w, c]
    };
    make(shape, storage)
}

struct Call {
    g: Geometry,
    channels_first: bool,
    grad_stored: [usize; 4],
}

impl NumOp for Call {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [filter, grad] = inputs else {
            return Err(fail("Conv2DBackpropInput takes 3 inputs"));
        };
        let g = &self.g;
        if !self.channels_first {
            return transposed(g, filter, grad);
        }
        let grad = to_nhwc(grad, self.grad_stored);
        let out = transposed(g, filter, &grad)?;
        Ok(to_nchw(&out, [g.n, g.h, g.w, g.c]))
    }
}

/// The transposed convolution of NHWC `grad` by `filter`, NHWC.
fn transposed<T: Num>(g: &Geometry, filter: &[T], grad: &[T]) -> KResult<Vec<T>> {
    let image = g.h * g.w * g.c;
    let mut out = zeros(g.n * image)?;
    let pixels = g.rows.out * g.cols.out;
    if out.is_empty() || pixels == 0 {
        return Ok(out);
    }
    let work = (g.n * pixels).saturating_mul(g.o * g.kh * g.kw * g.gi);
    let run = |cols: &mut Vec<T>, (b, dst): (usize, &mut [T])| {
        image_gradient(g, filter, grad, b, dst, cols)
    };
    if g.n > 1 && work >= PARALLEL_WORK {
        out.par_chunks_mut(image)
            .enumerate()
            .try_for_each_init(Vec::new, run)?;
    } else {
        let mut cols = Vec::new();
        out.chunks_mut(image)
            .enumerate()
            .try_for_each(|item| run(&mut cols, item))?;
    }
    Ok(out)
}

/// Products buffered per step: bounds the memory of large images and filters.
const TILE_ELEMENTS: usize = 1 << 18;

/// Image `b`'s input gradient, group by group and tile of output pixels by tile: products,
/// then col2im.
fn image_gradient<T: Num>(
    g: &Geometry,
    filter: &[T],
    grad: &[T],
    b: usize,
    dst: &mut [T],
    cols: &mut Vec<T>,
) -> KResult<()> {
    let pixels = g.rows.out * g.cols.out;
    let depth = g.kh * g.kw * g.gi;
    let go = g.o / g.groups;
    let tile = (TILE_ELEMENTS / depth.max(1)).clamp(1, pixels.max(1));
    for group in 0..g.groups {
        for first in (0..pixels).step_by(tile) {
            let rows = tile.min(pixels - first);
            cols.clear();
            cols.resize(rows * depth, T::default());
            let product = Product {
                m: rows,
                n: depth,
                k: go,
                a: Layout::rows((b * pixels + first) * g.o + group * go, g.o),
                b: Layout::rows(group * go, g.o).t(),
                dst: Layout::rows(0, depth),
            };
            T::product(&product, grad, filter, cols, g.n == 1)?;
            scatter(g, group, first, cols, dst);
        }
    }
    Ok(())
}

/// col2im: adds the tap products of pixels `first..` into the input pixels the taps read.
fn scatter<T: Num>(g: &Geometry, group: usize, first: usize, cols: &[T], dst: &mut [T]) {
    let depth = g.kh * g.kw * g.gi;
    for (p, row) in cols.chunks_exact(depth).enumerate() {
        let p = first + p;
        let (oy, ox) = (p / g.cols.out, p % g.cols.out);
        for i in 0..g.kh {
            let Some(ih) = g.rows.source(oy, i, g.h) else {
                continue;
            };
            for j in 0..g.kw {
                let Some(iw) = g.cols.source(ox, j, g.w) else {
                    continue;
                };
                let start = (ih * g.w + iw) * g.c + group * g.gi;
                let taps = &row[(i * g.kw + j) * g.gi..][..g.gi];
                for (d, &v) in dst[start..start + g.gi].iter_mut().zip(taps) {
                    *d = d.add(v);
                }
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::window::Padding;

    #[test]
    fn stride_two_scatters_each_gradient_into_its_window() {
        let spec = Spec {
            channels_first: false,
            strides: [2, 2],
            dilations: [1, 1],
            padding: Padding::Valid,
            explicit: [[0, 0]; 2],
        };
        // A 1x2 window of ones at stride 2 over a 1x4 row: each gradient lands on 2 pixels.
        let sizes = Tensor::from_vec(vec![4], vec![1i32, 1, 4, 1]);
        let filter = Tensor::from_vec(vec![1, 2, 1, 1], vec![1.0f32, 1.0]);
        let grad = Tensor::from_vec(vec![1, 1, 2, 1], vec![3.0f32, 5.0]);
        let out = backprop_input(&spec, &sizes, &filter, &grad).unwrap();
        assert_eq!(out.values::<f32>().unwrap(), &[3.0, 3.0, 5.0, 5.0]);
        let bad = Tensor::from_vec(vec![1, 1, 3, 1], vec![1.0f32; 3]);
        assert!(backprop_input(&spec, &sizes, &filter, &bad).is_err());
    }

    /// The transposed convolution is the adjoint of the convolution: <conv(x), dy> equals
    /// <x, backprop(dy)> for any x and dy (here large enough to take several tiles, and with
    /// two groups).
    #[test]
    fn is_the_adjoint_of_conv2d() {
        let spec = Spec {
            channels_first: false,
            strides: [1, 2],
            dilations: [1, 1],
            padding: Padding::Same,
            explicit: [[0, 0]; 2],
        };
        let values = |n: usize, seed: usize| -> Vec<f64> {
            (0..n)
                .map(|i| ((i * 31 + seed) % 13) as f64 - 6.0)
                .collect()
        };
        for filter_shape in [[3, 3, 4, 5], [3, 3, 2, 6]] {
            let x = Tensor::from_vec(vec![1, 200, 100, 4], values(80000, 1));
            let count = filter_shape.iter().product();
            let filter = Tensor::from_vec(filter_shape.to_vec(), values(count, 2));
            let y = crate::kernels::nn::conv::conv(&spec, &x, &filter).unwrap();
            let dy = Tensor::from_vec(y.shape().to_vec(), values(y.len(), 3));
            let sizes = Tensor::from_vec(vec![4], vec![1i64, 200, 100, 4]);
            let dx = backprop_input(&spec, &sizes, &filter, &dy).unwrap();
            let dot = |a: &Tensor, b: &Tensor| -> f64 {
                let (a, b) = (a.values::<f64>().unwrap(), b.values::<f64>().unwrap());
                a.iter().zip(b).map(|(p, q)| p * q).sum()
            };
            assert_eq!(dot(&y, &dy), dot(&x, &dx));
        }
    }
}
