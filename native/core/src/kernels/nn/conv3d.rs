//! Conv3D and Conv3DBackpropInputV2 (Keras' Conv3D and Conv3DTranspose): the 2-D scheme
//! (conv.rs, backprop.rs) over three spatial axes. The convolution gathers the receptive
//! fields of a tile of output positions into a bounded patch matrix (im2col) and multiplies it
//! by the filter, tiles spread over rayon's threads when the work is large; a 1x1x1 window at
//! stride 1 multiplies the input itself. The input gradient multiplies each tile of output
//! gradients by the filter's transpose and adds each tap's products back where the tap read
//! (col2im). Computed in NDHWC; NCDHW (which only TensorFlow's GPU kernels accept) is
//! transposed in and out, as is dilation computed, so graphs exported on GPU machines run.

use rayon::prelude::*;

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::gemm::{Layout, Product, PARALLEL_WORK};
use crate::kernels::nn::narrow;
use crate::kernels::nn::num::{run_num, zeros, Num, NumOp, FLOATS};
use crate::kernels::nn::volume::{
    conv_spec, ndhwc, position, rank5, split, stored, to_first, to_last, Spec3,
};
use crate::kernels::nn::window::Axis;
use crate::kernels::util::{int_values, make};
use crate::tensor::{element_count, Tensor};

/// Patch-matrix elements per tile: large enough for an efficient product, small enough to
/// stay in cache.
const TILE_ELEMENTS: usize = 1 << 16;

/// The fewest output positions per tile (each tile packs the filter anew for its product).
const MIN_TILE_ROWS: usize = 192;

pub fn conv3d(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = conv_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let filter = tensor_input(inputs, 1)?;
        one(conv(&spec, &x, &filter)?)
    }))
}

pub fn conv3d_backprop_input_v2(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = conv_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let sizes = tensor_input(inputs, 0)?;
        let filter = tensor_input(inputs, 1)?;
        let grad = tensor_input(inputs, 2)?;
        one(backprop_input(&spec, &sizes, &filter, &grad)?)
    }))
}

/// The shapes of one 3-D convolution, NDHWC.
#[derive(Clone, Copy, Debug)]
struct Geometry {
    n: usize,
    size: [usize; 3],
    c: usize,
    window: [usize; 3],
    o: usize,
    axes: [Axis; 3],
}

impl Geometry {
    /// The geometry of an input of NDHWC `input` by a DHWIO `filter`, with TensorFlow's
    /// checks.
    fn new(spec: &Spec3, input: [usize; 5], filter: &Tensor) -> KResult<Self> {
        let [n, d, h, w, c] = input;
        let [kd, kh, kw, depth, o] = rank5(filter.shape(), "filter")?;
        if c != depth {
            return Err(fail(format!(
                "input and filter must have the same depth: {c} vs {depth}"
            )));
        }
        let axes = spec.axes([d, h, w], [kd, kh, kw])?;
        let g = Self {
            n,
            size: [d, h, w],
            c,
            window: [kd, kh, kw],
            o,
            axes,
        };
        let out = g.out_shape();
        let count = element_count(&out)
            .ok_or_else(|| fail(format!("output shape {out:?} is too large")))?;
        if filter.is_empty() && count != 0 {
            return Err(fail(
                "filter must not have zero elements (i.e. all dimensions must be non-zero)",
            ));
        }
        element_count(&input).ok_or_else(|| fail(format!("input shape {input:?} is too large")))?;
        Ok(g)
    }

    fn outs(&self) -> [usize; 3] {
        self.axes.map(|a| a.out)
    }

    fn out_shape(&self) -> [usize; 5] {
        let [od, oh, ow] = self.outs();
        [self.n, od, oh, ow, self.o]
    }

    fn in_shape(&self) -> [usize; 5] {
        let [d, h, w] = self.size;
        [self.n, d, h, w, self.c]
    }

    fn positions(&self) -> usize {
        self.n * self.outs().iter().product::<usize>()
    }

    /// Patch-matrix columns: one per filter tap and channel.
    fn depth(&self) -> usize {
        self.window.iter().product::<usize>() * self.c
    }

    /// A 1x1x1 window at stride 1 with no padding: each output is its input position's
    /// channels times the filter matrix.
    fn pointwise(&self) -> bool {
        self.axes
            .iter()
            .zip(self.size)
            .all(|(a, size)| a.window == 1 && a.stride == 1 && a.before == 0 && a.out == size)
    }

    /// Calls `tap(t, start)` for every filter tap `t` (flat over kd, kh, kw) of output
    /// position `p` that reads the input, `start` the first element of the input position it
    /// reads; undilated runs of width taps come as one call per run with `run` taps.
    fn each_tap(&self, p: usize, mut tap: impl FnMut(usize, usize, usize)) {
        let (image, [od, oh, ow]) = position(p, self.outs());
        let [ad, ah, aw] = self.axes;
        let [d, h, w] = self.size;
        let [_, kh, kw] = self.window;
        for i in ad.taps(od, d) {
            let z = od * ad.stride + i * ad.dilation - ad.before;
            for j in ah.taps(oh, h) {
                let y = oh * ah.stride + j * ah.dilation - ah.before;
                let line = ((image * d + z) * h + y) * w;
                let cols = aw.taps(ow, w);
                let first_tap = (i * kh + j) * kw;
                let x_of = |k: usize| ow * aw.stride + k * aw.dilation - aw.before;
                if aw.dilation == 1 {
                    if !cols.is_empty() {
                        let start = (line + x_of(cols.start)) * self.c;
                        tap(first_tap + cols.start, start, cols.len());
                    }
                    continue;
                }
                for k in cols {
                    tap(first_tap + k, (line + x_of(k)) * self.c, 1);
                }
            }
        }
    }
}

/// Conv3D of `x` by a DHWIO `filter` under `spec`.
fn conv(spec: &Spec3, x: &Tensor, filter: &Tensor) -> KResult<Tensor> {
    let x_stored = rank5(x.shape(), "input")?;
    let g = Geometry::new(spec, ndhwc(x_stored, spec.channels_first), filter)?;
    let call = Forward {
        g,
        channels_first: spec.channels_first,
        x_stored,
    };
    let storage = run_num(&call, &[x, filter], &FLOATS, "Conv3D")?;
    make(stored(g.out_shape(), spec.channels_first), storage)
}

struct Forward {
    g: Geometry,
    channels_first: bool,
    x_stored: [usize; 5],
}

impl NumOp for Forward {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x, filter] = inputs else {
            return Err(fail("Conv3D takes 2 inputs"));
        };
        if !self.channels_first {
            return convolve(&self.g, x, filter);
        }
        let out = convolve(&self.g, &to_last(x, self.x_stored), filter)?;
        Ok(to_first(&out, self.g.out_shape()))
    }
}

/// The NDHWC convolution of `x` by `filter`: GEMM over tiles of output positions, each thread
/// taking one contiguous share of the tiles and one patch buffer when the work is large.
fn convolve<T: Num>(g: &Geometry, x: &[T], filter: &[T]) -> KResult<Vec<T>> {
    let positions = g.positions();
    if positions * g.o == 0 {
        return Ok(Vec::new());
    }
    if let Some(out) = direct(g, x, filter) {
        return out;
    }
    let mut out = zeros(positions * g.o)?;
    let depth = g.depth().max(1);
    let tile = (TILE_ELEMENTS / depth).max(MIN_TILE_ROWS).min(positions);
    let tiles = positions.div_ceil(tile);
    let work = positions.saturating_mul(depth).saturating_mul(g.o);
    let parallel = tiles > 1 && work >= PARALLEL_WORK;
    let tile_len = tile * g.o;
    let run = |first_tile: usize, share: &mut [T]| {
        let mut buffer = Vec::new();
        share
            .chunks_mut(tile_len)
            .enumerate()
            .try_for_each(|(t, chunk)| {
                let first = (first_tile + t) * tile;
                tile_product(g, x, filter, first, chunk, &mut buffer, !parallel)
            })
    };
    if !parallel {
        run(0, &mut out)?;
        return Ok(out);
    }
    let threads = rayon::current_num_threads().max(1);
    let per_thread = tiles.div_ceil(threads);
    out.par_chunks_mut(per_thread * tile_len)
        .enumerate()
        .try_for_each(|(i, share)| run(i * per_thread, share))?;
    Ok(out)
}

/// The convolution by the direct kernel (narrow.rs) when it serves `g`: each output row (along
/// the width) sums the input lines of its depth and row taps, each by its block of the filter.
/// None, with nothing done, when it does not.
fn direct<T: Num>(g: &Geometry, x: &[T], filter: &[T]) -> Option<KResult<Vec<T>>> {
    let [d, h, w] = g.size;
    let [ad, ah, aw] = g.axes;
    let [od, oh, _] = g.outs().map(|o| o.max(1));
    let [kd, kh, _] = g.window;
    if !narrow::serves(g.c, g.o) || x.len() < g.n * d * h * w * g.c {
        return None;
    }
    let lines = |r: usize, lines: &mut Vec<(usize, usize)>| {
        let (rest, oy) = (r / oh, r % oh);
        let (image, oz) = (rest / od, rest % od);
        for i in ad.taps(oz, d) {
            let z = oz * ad.stride + i * ad.dilation - ad.before;
            for j in ah.taps(oy, h) {
                let y = oy * ah.stride + j * ah.dilation - ah.before;
                lines.push(((((image * d + z) * h + y) * w) * g.c, i * kh + j));
            }
        }
    };
    let rows = narrow::Rows {
        cols: aw,
        w,
        c: g.c,
        o: g.o,
        count: g.n * g.axes[0].out * g.axes[1].out,
        blocks: kd * kh,
        lines: &lines,
    };
    narrow::run(&rows, x, filter, &|_, _| {})
}

/// The output rows of positions `first..` (as many as `out` holds).
fn tile_product<T: Num>(
    g: &Geometry,
    x: &[T],
    filter: &[T],
    first: usize,
    out: &mut [T],
    buffer: &mut Vec<T>,
    parallel: bool,
) -> KResult<()> {
    let rows = out.len() / g.o;
    let depth = g.depth();
    let a = if g.pointwise() {
        // Each output's patch is its input position's channels: read them in place.
        Layout::rows(first * g.c, g.c)
    } else {
        im2col(g, x, first, rows, buffer);
        Layout::rows(0, depth)
    };
    let product = Product {
        m: rows,
        n: g.o,
        k: depth,
        a,
        b: Layout::rows(0, g.o),
        dst: Layout::rows(0, g.o),
    };
    let source = if g.pointwise() { x } else { buffer.as_slice() };
    T::product(&product, source, filter, out, parallel)
}

/// The patch matrix of positions `first..first + rows`: a row per position, columns in filter
/// order (kd, kh, kw, channel), zeros where the window covers padding.
fn im2col<T: Num>(g: &Geometry, x: &[T], first: usize, rows: usize, buffer: &mut Vec<T>) {
    let depth = g.depth();
    buffer.clear();
    buffer.resize(rows * depth, T::default());
    let c = g.c;
    for (r, row) in buffer.chunks_exact_mut(depth).enumerate() {
        g.each_tap(first + r, |tap, start, run| {
            let (dst, src) = (tap * c, start..start + run * c);
            if let (Some(dst), Some(src)) = (row.get_mut(dst..dst + run * c), x.get(src)) {
                dst.copy_from_slice(src);
            }
        });
    }
}

// ---------------------------------------------------------------------------------------------
// The input gradient

/// The gradient of Conv3D's input (of `sizes`, data_format order), given its output's
/// gradient `grad`.
fn backprop_input(spec: &Spec3, sizes: &Tensor, filter: &Tensor, grad: &Tensor) -> KResult<Tensor> {
    if sizes.rank() != 1 {
        return Err(fail(format!(
            "input_sizes must be 1-D, got shape {:?}",
            sizes.shape()
        )));
    }
    let values = int_values(sizes, "input_sizes")?;
    let dims = split(&values, spec.channels_first, "input_sizes").map_err(fail)?;
    let mut input = [0usize; 5];
    for (slot, d) in input.iter_mut().zip(dims) {
        *slot = usize::try_from(d)
            .map_err(|_| fail(format!("input_sizes must be non-negative, got {values:?}")))?;
    }
    let g = Geometry::new(spec, input, filter)?;
    let grad_stored = rank5(grad.shape(), "out_backprop")?;
    let grad_shape = ndhwc(grad_stored, spec.channels_first);
    if grad_shape != g.out_shape() {
        return Err(fail(format!(
            "out_backprop has shape {grad_shape:?} in NDHWC, but a convolution of an input of \
             {input:?} gives {:?}",
            g.out_shape()
        )));
    }
    let call = Backward {
        g,
        channels_first: spec.channels_first,
        grad_stored,
    };
    let storage = run_num(&call, &[filter, grad], &FLOATS, "Conv3DBackpropInputV2")?;
    make(stored(input, spec.channels_first), storage)
}

struct Backward {
    g: Geometry,
    channels_first: bool,
    grad_stored: [usize; 5],
}

impl NumOp for Backward {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [filter, grad] = inputs else {
            return Err(fail("Conv3DBackpropInputV2 takes 3 inputs"));
        };
        if !self.channels_first {
            return transposed(&self.g, filter, grad);
        }
        let out = transposed(&self.g, filter, &to_last(grad, self.grad_stored))?;
        Ok(to_first(&out, self.g.in_shape()))
    }
}

/// Products buffered per step: bounds the memory of large volumes and filters.
const BACKPROP_TILE: usize = 1 << 18;

/// The transposed convolution of NDHWC `grad` by `filter`, NDHWC, an image per task (on
/// rayon's threads when the work is large).
fn transposed<T: Num>(g: &Geometry, filter: &[T], grad: &[T]) -> KResult<Vec<T>> {
    let image = g.in_shape()[1..].iter().product::<usize>();
    let mut out = zeros(g.n * image)?;
    let per_image = g.outs().iter().product::<usize>();
    if out.is_empty() || per_image == 0 || g.o == 0 {
        return Ok(out);
    }
    let work = (g.n * per_image).saturating_mul(g.o * g.depth());
    let run = |cols: &mut Vec<T>, (b, dst): (usize, &mut [T])| {
        image_gradient(g, filter, grad, b, dst, cols, g.n == 1)
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

/// Image `b`'s input gradient, tile of output positions by tile: products, then col2im.
fn image_gradient<T: Num>(
    g: &Geometry,
    filter: &[T],
    grad: &[T],
    b: usize,
    dst: &mut [T],
    cols: &mut Vec<T>,
    parallel: bool,
) -> KResult<()> {
    let per_image = g.outs().iter().product::<usize>();
    let depth = g.depth();
    let image = dst.len();
    let tile = (BACKPROP_TILE / depth.max(1)).clamp(1, per_image);
    for first in (0..per_image).step_by(tile) {
        let rows = tile.min(per_image - first);
        cols.clear();
        cols.resize(rows * depth, T::default());
        let product = Product {
            m: rows,
            n: depth,
            k: g.o,
            a: Layout::rows((b * per_image + first) * g.o, g.o),
            b: Layout::rows(0, g.o).t(),
            dst: Layout::rows(0, depth),
        };
        T::product(&product, grad, filter, cols, parallel)?;
        // col2im: each tap's products go back to the input position the tap read (the
        // positions are the image's own, so offsets are taken relative to it).
        let base = b * image;
        for (r, row) in cols.chunks_exact(depth).enumerate() {
            g.each_tap(b * per_image + first + r, |tap, start, run| {
                let len = run * g.c;
                let (Some(src), Some(to)) = (
                    row.get(tap * g.c..tap * g.c + len),
                    start
                        .checked_sub(base)
                        .and_then(|s| dst.get_mut(s..s + len)),
                ) else {
                    return;
                };
                for (d, &v) in to.iter_mut().zip(src) {
                    *d = d.add(v);
                }
            });
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::window::Padding;

    /// Input shape, filter shape, padding, strides and dilations.
    type Case = (
        &'static [usize],
        &'static [usize],
        Padding,
        [usize; 3],
        [usize; 3],
    );

    fn spec(padding: Padding, strides: [usize; 3], dilations: [usize; 3]) -> Spec3 {
        Spec3 {
            channels_first: false,
            strides,
            dilations,
            padding,
        }
    }

    fn tensor(shape: &[usize], seed: u64) -> Tensor {
        let count = shape.iter().product::<usize>() as u64;
        let values = (0..count)
            .map(|i| ((i * 7919 + seed * 104729) % 23) as f64 / 8.0 - 1.0)
            .collect();
        Tensor::from_vec(shape.to_vec(), values)
    }

    /// The definition: a direct loop over every output, tap and channel.
    fn reference(spec: &Spec3, x: &Tensor, f: &Tensor) -> Vec<f64> {
        let [n, d, h, w, c] = rank5(x.shape(), "x").unwrap();
        let [kd, kh, kw, _, o] = rank5(f.shape(), "f").unwrap();
        let axes = spec.axes([d, h, w], [kd, kh, kw]).unwrap();
        let (xv, fv) = (x.values::<f64>().unwrap(), f.values::<f64>().unwrap());
        let mut out = vec![];
        for b in 0..n {
            for oz in 0..axes[0].out {
                for oy in 0..axes[1].out {
                    for ox in 0..axes[2].out {
                        for oc in 0..o {
                            let mut s = 0.0;
                            for i in 0..kd {
                                for j in 0..kh {
                                    for k in 0..kw {
                                        let (Some(z), Some(y), Some(q)) = (
                                            axes[0].source(oz, i, d),
                                            axes[1].source(oy, j, h),
                                            axes[2].source(ox, k, w),
                                        ) else {
                                            continue;
                                        };
                                        for ci in 0..c {
                                            s += xv[(((b * d + z) * h + y) * w + q) * c + ci]
                                                * fv[(((i * kh + j) * kw + k) * c + ci) * o + oc];
                                        }
                                    }
                                }
                            }
                            out.push(s);
                        }
                    }
                }
            }
        }
        out
    }

    #[test]
    fn tiled_parallel_dilated_and_pointwise_match_the_definition() {
        let cases: [Case; 5] = [
            (
                &[2, 4, 5, 6, 3],
                &[2, 3, 2, 3, 4],
                Padding::Same,
                [1; 3],
                [1; 3],
            ),
            (
                &[1, 5, 7, 6, 3],
                &[2, 3, 2, 3, 4],
                Padding::Valid,
                [2, 1, 2],
                [1; 3],
            ),
            (
                &[2, 9, 12, 10, 8],
                &[3, 3, 3, 8, 16],
                Padding::Same,
                [1; 3],
                [1; 3],
            ),
            (
                &[1, 6, 7, 8, 2],
                &[2, 2, 3, 2, 3],
                Padding::Same,
                [1, 2, 1],
                [2, 1, 2],
            ),
            (
                &[2, 3, 4, 5, 6],
                &[1, 1, 1, 6, 5],
                Padding::Valid,
                [1; 3],
                [1; 3],
            ),
        ];
        for (xs, fs, padding, strides, dilations) in cases {
            let (x, f) = (tensor(xs, 1), tensor(fs, 2));
            let s = spec(padding, strides, dilations);
            let got = conv(&s, &x, &f).unwrap();
            let want = reference(&s, &x, &f);
            let got = got.values::<f64>().unwrap();
            assert_eq!(got.len(), want.len());
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() < 1e-9, "{xs:?} {fs:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn direct_kernel_in_float32_matches_the_definition() {
        let cases: [Case; 8] = [
            (
                &[1, 4, 5, 6, 6],
                &[2, 2, 3, 6, 12],
                Padding::Same,
                [1; 3],
                [1; 3],
            ),
            (
                &[1, 4, 4, 5, 7],
                &[2, 2, 2, 7, 5],
                Padding::Valid,
                [1, 1, 2],
                [1; 3],
            ),
            (
                &[2, 6, 6, 6, 2],
                &[3, 3, 3, 2, 4],
                Padding::Same,
                [1; 3],
                [1; 3],
            ),
            (
                &[2, 6, 6, 6, 3],
                &[1, 2, 2, 3, 2],
                Padding::Valid,
                [1, 2, 1],
                [1; 3],
            ),
            (
                &[1, 6, 7, 8, 2],
                &[2, 2, 3, 2, 3],
                Padding::Same,
                [1, 2, 1],
                [2, 1, 2],
            ),
            (
                &[2, 4, 5, 6, 3],
                &[2, 3, 2, 3, 12],
                Padding::Same,
                [1; 3],
                [1; 3],
            ),
            (
                &[2, 3, 4, 5, 4],
                &[1, 1, 1, 4, 5],
                Padding::Valid,
                [1; 3],
                [1; 3],
            ),
            (
                &[16, 6, 6, 6, 2],
                &[3, 3, 3, 2, 8],
                Padding::Same,
                [1; 3],
                [1; 3],
            ),
        ];
        let single = |t: &Tensor| {
            let values: Vec<f32> = t
                .values::<f64>()
                .unwrap()
                .iter()
                .map(|&v| v as f32)
                .collect();
            Tensor::from_vec(t.shape().to_vec(), values)
        };
        for (xs, fs, padding, strides, dilations) in cases {
            assert!(narrow::serves(fs[3], fs[4]));
            let (x, f) = (tensor(xs, 1), tensor(fs, 2));
            let s = spec(padding, strides, dilations);
            let want = reference(&s, &x, &f);
            let got = conv(&s, &single(&x), &single(&f)).unwrap();
            // Eighths times eighths, summed over at most 72 taps: exact in float32.
            let got: Vec<f64> = got
                .values::<f32>()
                .unwrap()
                .iter()
                .map(|&v| f64::from(v))
                .collect();
            assert_eq!(got, want, "{xs:?} {fs:?}");
        }
    }

    #[test]
    fn channels_first_is_the_transposed_channels_last() {
        let (x, f) = (tensor(&[2, 4, 5, 6, 3], 1), tensor(&[2, 3, 2, 3, 4], 2));
        let last = conv(&spec(Padding::Same, [2, 1, 2], [1; 3]), &x, &f).unwrap();
        let first_spec = Spec3 {
            channels_first: true,
            ..spec(Padding::Same, [2, 1, 2], [1; 3])
        };
        let x_first = Tensor::from_vec(
            vec![2, 3, 4, 5, 6],
            to_first(x.values::<f64>().unwrap(), [2, 4, 5, 6, 3]),
        );
        let out = conv(&first_spec, &x_first, &f).unwrap();
        let shape = rank5(out.shape(), "out").unwrap();
        let back = to_last(out.values::<f64>().unwrap(), shape);
        assert_eq!(back, last.values::<f64>().unwrap());
    }

    /// The transposed convolution is the adjoint of the convolution: <conv(x), dy> equals
    /// <x, backprop(dy)> for any x and dy.
    #[test]
    fn backprop_is_the_adjoint_of_conv3d() {
        let cases: [Case; 3] = [
            (
                &[2, 5, 6, 7, 3],
                &[2, 3, 2, 3, 4],
                Padding::Same,
                [2; 3],
                [1; 3],
            ),
            (
                &[1, 7, 7, 7, 3],
                &[2, 3, 2, 3, 4],
                Padding::Valid,
                [3; 3],
                [1; 3],
            ),
            (
                &[2, 6, 5, 7, 2],
                &[3, 2, 2, 2, 3],
                Padding::Same,
                [1, 2, 1],
                [1, 2, 2],
            ),
        ];
        for (xs, fs, padding, strides, dilations) in cases {
            let s = spec(padding, strides, dilations);
            let (x, f) = (tensor(xs, 1), tensor(fs, 2));
            let y = conv(&s, &x, &f).unwrap();
            let dy = Tensor::from_vec(
                y.shape().to_vec(),
                tensor(y.shape(), 3).values::<f64>().unwrap().to_vec(),
            );
            let sizes = Tensor::from_vec(vec![5], xs.iter().map(|&v| v as i32).collect());
            let dx = backprop_input(&s, &sizes, &f, &dy).unwrap();
            let dot = |a: &Tensor, b: &Tensor| -> f64 {
                let (a, b) = (a.values::<f64>().unwrap(), b.values::<f64>().unwrap());
                a.iter().zip(b).map(|(p, q)| p * q).sum()
            };
            assert!((dot(&y, &dy) - dot(&x, &dx)).abs() < 1e-9, "{xs:?} {fs:?}");
        }
    }

    #[test]
    fn bad_shapes_are_errors() {
        let s = spec(Padding::Same, [1; 3], [1; 3]);
        let f = tensor(&[2, 3, 2, 3, 4], 2);
        assert!(conv(&s, &tensor(&[1, 3, 4, 4, 2], 1), &f).is_err());
        assert!(conv(&s, &tensor(&[3, 4, 4, 3], 1), &f).is_err());
        let sizes = Tensor::from_vec(vec![5], vec![1i32, 4, 4, 4, 3]);
        let s2 = spec(Padding::Same, [2; 3], [1; 3]);
        assert!(backprop_input(&s2, &sizes, &f, &tensor(&[1, 3, 2, 2, 4], 3)).is_err());
        let negative = Tensor::from_vec(vec![5], vec![1i32, -4, 4, 4, 3]);
        assert!(backprop_input(&s2, &negative, &f, &tensor(&[1, 2, 2, 2, 4], 3)).is_err());
    }
}
