//! Conv2D: im2col + GEMM. A 1x1 stride-1 unpadded convolution is a plain matrix product over
//! the NHWC input (no copy); any other gathers the receptive fields of a tile of output pixels
//! into a patch matrix (bounded size, one buffer per worker) and multiplies it by the filter,
//! tiles spread over rayon's threads when the work is large. Grouped convolutions (input
//! channels a multiple of the filter's) multiply each group's channels by its filter columns;
//! one input channel per group is the depthwise kernel's work, a float32 layer with few
//! input and output channels the direct kernel's (narrow.rs), and a float32 3x3 layer at
//! stride 1 Winograd's (winograd.rs). NCHW is transposed in and out.

use std::mem::MaybeUninit;
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::gemm::{Layout, Product, FEW_ROWS, PARALLEL_WORK};
use crate::kernels::nn::layout::{to_nchw, to_nhwc};
use crate::kernels::nn::num::{f32_values, run_num, Num, NumOp};
use crate::kernels::nn::output::{written_chunks, zeroed_chunks, Split};
use crate::kernels::nn::panels::Panels;
use crate::kernels::nn::window::{conv_spec, nhwc, rank4, Axis, Spec};
use crate::kernels::nn::{depthwise, narrow, winograd};
use crate::kernels::util::make;
use crate::tensor::{element_count, Tensor};

/// Conv2D's dtypes on TensorFlow's CPU.
const TYPES: [DType; 5] = [
    DType::Float16,
    DType::BFloat16,
    DType::Float32,
    DType::Float64,
    DType::Int32,
];

/// Patch-matrix elements per tile: large enough for an efficient product, small enough to
/// stay in cache.
const TILE_ELEMENTS: usize = 1 << 16;

/// The fewest output pixels per tile: each tile packs the filter anew for its product, which
/// must be tall enough to repay that.
const MIN_TILE_ROWS: usize = 192;

pub fn conv2d(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let spec = conv_spec(&node.attrs)?;
    Ok(boxed(move |_, inputs| {
        let x = tensor_input(inputs, 0)?;
        let filter = tensor_input(inputs, 1)?;
        one(conv(&spec, &x, &filter)?)
    }))
}

/// The shapes of one convolution, in NHWC.
#[derive(Clone, Copy, Debug)]
pub struct Geometry {
    pub n: usize,
    pub h: usize,
    pub w: usize,
    pub c: usize,
    pub kh: usize,
    pub kw: usize,
    /// Input channels per group (the filter's in-depth).
    pub gi: usize,
    pub o: usize,
    pub groups: usize,
    pub rows: Axis,
    pub cols: Axis,
}

impl Geometry {
    pub fn out_shape(&self) -> [usize; 4] {
        [self.n, self.rows.out, self.cols.out, self.o]
    }

    fn pixels(&self) -> usize {
        self.n * self.rows.out * self.cols.out
    }

    fn depth(&self) -> usize {
        self.kh * self.kw * self.gi
    }
}

/// The geometry of Conv2D of `x` by an HWIO `filter` under `spec`, with TensorFlow's checks.
fn geometry(spec: &Spec, x: &Tensor, filter: &Tensor) -> KResult<Geometry> {
    geometry_of(spec, x.shape(), filter.shape())
}

/// [`geometry`] from the input's and the filter's shapes.
pub(crate) fn geometry_of(spec: &Spec, x: &[usize], filter: &[usize]) -> KResult<Geometry> {
    let [n, h, w, c] = nhwc(rank4(x, "input")?, spec.channels_first);
    let [kh, kw, gi, o] = rank4(filter, "filter")?;
    if gi == 0 {
        return Err(fail(format!(
            "filter depth must be stricly positive, got {gi}"
        )));
    }
    if c % gi != 0 {
        return Err(fail(format!(
            "input depth must be evenly divisible by filter depth: {c} vs {gi}"
        )));
    }
    let groups = c / gi;
    if o % groups != 0 {
        return Err(fail(format!(
            "output depth must be evenly divisible by number of groups: {o} vs {groups}"
        )));
    }
    let [rows, cols] = spec.axes(h, w, [kh, kw])?;
    let g = Geometry {
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
    };
    let count = element_count(&g.out_shape())
        .ok_or_else(|| fail(format!("output shape {:?} is too large", g.out_shape())))?;
    if [kh, kw, o].contains(&0) && count != 0 {
        return Err(fail(
            "filter must not have zero elements (i.e. all dimensions must be non-zero)",
        ));
    }
    Ok(g)
}

/// Conv2D of `x` by an HWIO `filter` under `spec`.
pub fn conv(spec: &Spec, x: &Tensor, filter: &Tensor) -> KResult<Tensor> {
    let g = geometry(spec, x, filter)?;
    let call = Call {
        g,
        channels_first: spec.channels_first,
        input_shape: rank4(x.shape(), "input")?,
    };
    let storage = run_num(&call, &[x, filter], &TYPES, "Conv2D")?;
    let [n, oh, ow, o] = g.out_shape();
    let shape = if spec.channels_first {
        vec![n, o, oh, ow]
    } else {
        vec![n, oh, ow, o]
    };
    make(shape, storage)
}

/// A pass over finished output rows (whole pixels, channels last) while they are in cache;
/// it is told where in the output the rows start (in elements), so that it can read another
/// tensor of the output's shape alongside (a fused residual add).
pub type Epilogue<'a, T> = &'a (dyn Fn(usize, &mut [T]) + Sync);

/// The NHWC output shape of Conv2D of `x` by `filter` under `spec`, with TensorFlow's checks.
pub fn conv_out_shape(spec: &Spec, x: &Tensor, filter: &Tensor) -> KResult<[usize; 4]> {
    Ok(geometry(spec, x, filter)?.out_shape())
}

/// Conv2D of float32 NHWC tensors with `epilogue` applied to each block of output pixels as
/// soon as it is computed: a fused bias and activation without another pass over memory.
pub fn conv_fused(
    spec: &Spec,
    x: &Tensor,
    filter: &Tensor,
    epilogue: Epilogue<f32>,
) -> KResult<Tensor> {
    if spec.channels_first {
        return Err(fail("a fused Conv2D must be NHWC"));
    }
    let g = geometry(spec, x, filter)?;
    let out = convolve(
        &g,
        f32_values(x, "input")?,
        f32_values(filter, "filter")?,
        epilogue,
    )?;
    Ok(Tensor::from_vec(g.out_shape().to_vec(), out))
}

struct Call {
    g: Geometry,
    channels_first: bool,
    input_shape: [usize; 4],
}

impl NumOp for Call {
    fn run<T: Num>(&self, inputs: &[&[T]]) -> KResult<Vec<T>> {
        let [x, filter] = inputs else {
            return Err(fail("Conv2D takes 2 inputs"));
        };
        if !self.channels_first {
            return convolve(&self.g, x, filter, &|_, _| {});
        }
        let x = to_nhwc(x, self.input_shape);
        let out = convolve(&self.g, &x, filter, &|_, _| {})?;
        Ok(to_nchw(&out, self.g.out_shape()))
    }
}

/// The NHWC convolution of `x` by `filter` (HWIO, I the channels per group), `epilogue`
/// applied to every output pixel once.
pub fn convolve<T: Num>(
    g: &Geometry,
    x: &[T],
    filter: &[T],
    epilogue: Epilogue<T>,
) -> KResult<Vec<T>> {
    if g.pixels() * g.o == 0 {
        return Ok(Vec::new());
    }
    if g.gi == 1 && g.groups > 1 {
        let multiplier = g.o / g.groups;
        return depthwise::direct(g, multiplier, x, filter, epilogue);
    }
    if narrow::applies(g) {
        if let Some(out) = narrow::convolve(g, x, filter, epilogue) {
            return out;
        }
    }
    if winograd::applies(g) {
        if let Some(out) = winograd::convolve(g, x, filter, epilogue) {
            return out;
        }
    }
    tiled_product(g, x, filter, epilogue)
}

/// A 1x1 window at stride 1 with no padding: each output pixel is its input pixel's channels
/// times the filter matrix.
pub(crate) fn is_pointwise(g: &Geometry) -> bool {
    g.kh == 1
        && g.kw == 1
        && g.rows.stride == 1
        && g.cols.stride == 1
        && g.rows.before == 0
        && g.cols.before == 0
        && g.rows.out == g.h
        && g.cols.out == g.w
}

/// Output pixels per tile, and whether tiles run on several threads. A product that fits one
/// tile but is large enough for threads is cut into one tile per thread when it has at least
/// [`FEW_ROWS`] pixels: the gemm crate's own threading of the single product was slower
/// (MobileNetV2 at batch 1, whose pointwise layers are one tile each: 5.18 -> 4.79 ms a call;
/// EfficientNetB0 9.29 -> 8.64 ms). With fewer pixels (a 7x7 layer at batch 1) each thread
/// would pack all of the filter for a few rows, so the product stays whole and gemm.rs splits
/// its output channels between the threads.
fn tiling(g: &Geometry) -> (usize, bool) {
    let pixels = g.pixels();
    let depth = g.depth().max(1);
    let tile = (TILE_ELEMENTS / depth).max(MIN_TILE_ROWS).min(pixels);
    let tiles = pixels.div_ceil(tile);
    let work = pixels.saturating_mul(depth).saturating_mul(g.o);
    let threads = rayon::current_num_threads().max(1);
    if work < PARALLEL_WORK || threads < 2 {
        return (tile, false);
    }
    if tiles < 2 {
        if pixels >= FEW_ROWS {
            return (pixels.div_ceil(threads), true);
        }
        return (tile, false);
    }
    // Even out the tiles over the threads' rounds.
    let rounds = tiles.div_ceil(threads);
    (pixels.div_ceil(rounds * threads).max(1), true)
}

/// The output's tiles ([`tiling`]), each thread's share of them contiguous.
fn tile_split(g: &Geometry) -> Split {
    let (tile, parallel) = tiling(g);
    let count = g.pixels() * g.o;
    let tile_len = tile * g.o;
    let threads = if parallel {
        rayon::current_num_threads().max(1)
    } else {
        1
    };
    Split {
        count,
        chunk: tile_len,
        share: count.div_ceil(tile_len).div_ceil(threads) * tile_len,
        parallel,
    }
}

/// GEMM over tiles of output pixels (of the input itself for a pointwise convolution, else of
/// its patch matrix), `epilogue` run on each tile while it is in cache; in parallel, each thread
/// takes one contiguous share of the tiles and one patch buffer for all of them.
fn tiled_product<T: Num>(
    g: &Geometry,
    x: &[T],
    filter: &[T],
    epilogue: Epilogue<T>,
) -> KResult<Vec<T>> {
    let split = tile_split(g);
    if g.groups > 1 {
        return zeroed_chunks(split, Vec::new, |buffer, first, chunk| {
            tile_product(g, x, filter, first / g.o, chunk, buffer, !split.parallel)?;
            epilogue(first, chunk);
            Ok(())
        });
    }
    tiles_by(g, x, split, epilogue, &|product, source, chunk, single| {
        T::product_into(product, source, filter, chunk, single)
    })
}

/// Fills one tile of output with its product: `(product, left side, tile, whether the product
/// may use threads itself)`, the tile returned initialized.
type Multiply<'a, T> = &'a (dyn for<'c> Fn(&Product, &[T], &'c mut [MaybeUninit<T>], bool) -> KResult<&'c mut [T]>
         + Sync);

/// The tiles of an ungrouped convolution, each filled by one `multiply` (which writes the tile
/// without it being zeroed first) and then passed to `epilogue`.
fn tiles_by<T: Num>(
    g: &Geometry,
    x: &[T],
    split: Split,
    epilogue: Epilogue<T>,
    multiply: Multiply<T>,
) -> KResult<Vec<T>> {
    written_chunks(split, Vec::new, |buffer: &mut Vec<T>, first, chunk| {
        let rows = chunk.len() / g.o;
        let (source, product) = group_product(g, x, 0, first / g.o, rows, buffer);
        let out = multiply(&product, source, chunk, !split.parallel)?;
        epilogue(first, out);
        Ok(out)
    })
}

/// A float32 filter handed over by the plan (engine::kernel's `absorb`) and kept as panels
/// for the products of the tiled path, so that no call packs it again.
pub struct PackedFilter {
    shape: [usize; 4],
    panels: Panels,
}

/// The filters packed and still in use, for the next plan that holds one of them: each of a
/// model's signatures inlines and folds its layers into a plan of its own (Keras exports
/// `serve` and `serving_default`, both calling one function), and the plans share one packed
/// copy of equal weights, as they shared the folded tensor before handing it over. Found by
/// shape and then every value (bit for bit), so only equal weights are shared.
static PACKED: Mutex<Vec<Weak<PackedFilter>>> = Mutex::new(Vec::new());

/// The fewest weights worth keeping packed: below this the crate's packing is a small part
/// of a product.
const MIN_PACKED: usize = 1 << 15;

impl PackedFilter {
    /// The filter packed, when it is float32 HWIO with enough weights and `spec`'s convolution
    /// takes the tiled path whatever the input (neither the narrow direct kernel nor
    /// Winograd's could take it: both read the filter as it is); else None.
    pub fn of(spec: &Spec, filter: &Tensor) -> Option<Arc<PackedFilter>> {
        let shape: [usize; 4] = filter.shape().try_into().ok()?;
        let values = filter.values::<f32>()?;
        let [kh, kw, gi, o] = shape;
        if spec.channels_first || values.len() < MIN_PACKED {
            return None;
        }
        // Whether either kernel applies depends on the input only through its size, and a
        // large one is where both would: probe with a 256x256 image.
        let probe = geometry_of(spec, &[1, 256, 256, gi], &shape).ok()?;
        if narrow::applies(&probe) || winograd::applies(&probe) {
            return None;
        }
        let mut packed = PACKED.lock().unwrap_or_else(PoisonError::into_inner);
        packed.retain(|p| p.strong_count() > 0);
        let same = |p: &Arc<PackedFilter>| p.shape == shape && p.panels.holds(values);
        if let Some(found) = packed.iter().filter_map(Weak::upgrade).find(same) {
            return Some(found);
        }
        let panels = Panels::pack(values, kh * kw * gi, o)?;
        let made = Arc::new(PackedFilter { shape, panels });
        packed.push(Arc::downgrade(&made));
        Some(made)
    }

    /// The NHWC output shape for input `x`, with TensorFlow's checks.
    pub fn out_shape(&self, spec: &Spec, x: &Tensor) -> KResult<[usize; 4]> {
        Ok(geometry_of(spec, x.shape(), &self.shape)?.out_shape())
    }

    /// The filter as a tensor again, for a call the panels do not serve.
    pub fn tensor(&self) -> Tensor {
        Tensor::from_vec(self.shape.to_vec(), self.panels.matrix())
    }

    /// [`conv_fused`] by this filter. A grouped call (an input with a multiple of the filter's
    /// channels) rebuilds the filter first, as it is not kept.
    pub fn conv_fused(&self, spec: &Spec, x: &Tensor, epilogue: Epilogue<f32>) -> KResult<Tensor> {
        let g = geometry_of(spec, x.shape(), &self.shape)?;
        let x = f32_values(x, "input")?;
        let out = if g.pixels() * g.o == 0 {
            Vec::new()
        } else if g.groups > 1 || narrow::applies(&g) || winograd::applies(&g) {
            convolve(&g, x, &self.panels.matrix(), epilogue)?
        } else {
            let split = tile_split(&g);
            tiles_by(&g, x, split, epilogue, &|product, source, chunk, single| {
                self.panels
                    .product(source, product.a, product.m, chunk, single)
            })?
        };
        Ok(Tensor::from_vec(g.out_shape().to_vec(), out))
    }
}

/// The output rows of pixels `first..` (as many as `out` holds), group by group.
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
    for group in 0..g.groups {
        let (source, product) = group_product(g, x, group, first, rows, buffer);
        T::product(&product, source, filter, out, parallel)?;
    }
    Ok(())
}

/// The product giving `group`'s output channels of `rows` pixels from `first` (row-major,
/// `g.o` a pixel), and the matrix its left side reads: the input itself for a pointwise
/// convolution (each pixel's patch is its channels, read in place), else the patch matrix
/// built in `buffer`.
fn group_product<'a, T: Num>(
    g: &Geometry,
    x: &'a [T],
    group: usize,
    first: usize,
    rows: usize,
    buffer: &'a mut Vec<T>,
) -> (&'a [T], Product) {
    let depth = g.depth();
    let go = g.o / g.groups;
    let (source, a) = if is_pointwise(g) {
        let a = Layout {
            offset: first * g.c + group * g.gi,
            rs: g.c,
            cs: 1,
        };
        (x, a)
    } else {
        im2col(g, x, group, first, rows, buffer);
        (&buffer[..], Layout::rows(0, depth))
    };
    let product = Product {
        m: rows,
        n: go,
        k: depth,
        a,
        b: Layout::rows(group * go, g.o),
        dst: Layout::rows(group * go, g.o),
    };
    (source, product)
}

/// The patch matrix of pixels `first..first + rows` for `group`'s channels: a row per pixel,
/// columns in filter order (kh, kw, channel), zeros where the window covers padding.
fn im2col<T: Num>(
    g: &Geometry,
    x: &[T],
    group: usize,
    first: usize,
    rows: usize,
    buffer: &mut Vec<T>,
) {
    let depth = g.depth();
    buffer.clear();
    buffer.resize(rows * depth, T::default());
    let (oh, ow) = (g.rows.out, g.cols.out);
    // With undilated columns and every channel in one group, a window row's taps are one
    // contiguous run of the input.
    let runs = g.cols.dilation == 1 && g.groups == 1;
    for (r, row) in buffer.chunks_exact_mut(depth).enumerate() {
        let p = first + r;
        let (col, rest) = (p % ow, p / ow);
        let (out_row, image) = (rest % oh, rest / oh);
        for i in 0..g.kh {
            let Some(ih) = g.rows.source(out_row, i, g.h) else {
                continue;
            };
            let line = (image * g.h + ih) * g.w;
            let dst = &mut row[i * g.kw * g.gi..(i + 1) * g.kw * g.gi];
            if runs {
                copy_run(g, x, line, col, dst);
                continue;
            }
            for j in 0..g.kw {
                if let Some(iw) = g.cols.source(col, j, g.w) {
                    let src = (line + iw) * g.c + group * g.gi;
                    dst[j * g.gi..(j + 1) * g.gi].copy_from_slice(&x[src..src + g.gi]);
                }
            }
        }
    }
}

/// Copies the in-bounds taps of one window row (undilated, all channels) in one run.
fn copy_run<T: Num>(g: &Geometry, x: &[T], line: usize, col: usize, dst: &mut [T]) {
    let Some(first) = (0..g.kw).find(|&j| g.cols.source(col, j, g.w).is_some()) else {
        return;
    };
    let last = (first..g.kw)
        .take_while(|&j| g.cols.source(col, j, g.w).is_some())
        .last()
        .unwrap_or(first);
    let Some(iw) = g.cols.source(col, first, g.w) else {
        return;
    };
    let len = (last + 1 - first) * g.c;
    let src = (line + iw) * g.c;
    dst[first * g.c..first * g.c + len].copy_from_slice(&x[src..src + len]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::window::Padding;

    fn spec(padding: Padding, stride: usize) -> Spec {
        Spec {
            channels_first: false,
            strides: [stride; 2],
            dilations: [1; 2],
            padding,
            explicit: [[0, 0]; 2],
        }
    }

    /// A direct 4-deep loop, the definition of a (grouped) convolution.
    fn reference(spec: &Spec, x: &Tensor, f: &Tensor) -> Vec<f64> {
        let [n, h, w, c] = rank4(x.shape(), "x").unwrap();
        let [kh, kw, gi, o] = rank4(f.shape(), "f").unwrap();
        let [rows, cols] = spec.axes(h, w, [kh, kw]).unwrap();
        let (xv, fv) = (x.values::<f64>().unwrap(), f.values::<f64>().unwrap());
        let go = o / (c / gi);
        let mut out = vec![];
        for b in 0..n {
            for oy in 0..rows.out {
                for ox in 0..cols.out {
                    for oc in 0..o {
                        let mut s = 0.0;
                        for i in 0..kh {
                            for j in 0..kw {
                                let (Some(y), Some(z)) =
                                    (rows.source(oy, i, h), cols.source(ox, j, w))
                                else {
                                    continue;
                                };
                                for ci in 0..gi {
                                    let ic = (oc / go) * gi + ci;
                                    s += xv[((b * h + y) * w + z) * c + ic]
                                        * fv[((i * kw + j) * gi + ci) * o + oc];
                                }
                            }
                        }
                        out.push(s);
                    }
                }
            }
        }
        out
    }

    fn tensor(shape: &[usize], seed: u64) -> Tensor {
        let count = shape.iter().product::<usize>() as u64;
        let values = (0..count)
            .map(|i| ((i * 7919 + seed * 104729) % 23) as f64 / 8.0 - 1.0)
            .collect();
        Tensor::from_vec(shape.to_vec(), values)
    }

    #[test]
    fn tiled_parallel_and_grouped_products_match_the_definition() {
        let cases: [(&[usize], &[usize], Padding, usize); 4] = [
            (&[2, 40, 30, 8], &[3, 3, 8, 16], Padding::Same, 1),
            (&[1, 33, 31, 6], &[5, 3, 3, 4], Padding::Valid, 2),
            (&[2, 9, 9, 4], &[1, 1, 4, 8], Padding::Same, 1),
            (&[1, 7, 7, 6], &[3, 3, 1, 12], Padding::Same, 2),
        ];
        for (xs, fs, padding, stride) in cases {
            let (x, f) = (tensor(xs, 1), tensor(fs, 2));
            let spec = spec(padding, stride);
            let ours = conv(&spec, &x, &f).unwrap();
            let want = reference(&spec, &x, &f);
            let got = ours.values::<f64>().unwrap();
            assert_eq!(got.len(), want.len());
            for (a, b) in got.iter().zip(&want) {
                assert!((a - b).abs() < 1e-9, "{xs:?} {fs:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn direct_kernel_for_few_channels_matches_the_definition() {
        let cases: [(&[usize], &[usize], Padding, usize); 14] = [
            (&[2, 9, 11, 1], &[3, 3, 1, 8], Padding::Valid, 1),
            // ResNet50's stem in small (rows of several blocks of 6 pixels and fewer), and the
            // widths between 32 and 64 channels.
            (&[1, 19, 23, 3], &[7, 7, 3, 64], Padding::Same, 2),
            (&[1, 5, 60, 3], &[7, 7, 3, 64], Padding::Same, 2),
            (&[2, 6, 27, 8], &[3, 3, 8, 40], Padding::Same, 1),
            (&[1, 9, 14, 5], &[2, 3, 5, 56], Padding::Valid, 2),
            (&[2, 13, 13, 8], &[3, 3, 8, 16], Padding::Same, 1),
            (&[1, 9, 14, 5], &[3, 3, 5, 8], Padding::Same, 2),
            (&[1, 8, 11, 6], &[2, 3, 6, 24], Padding::Valid, 1),
            (&[1, 7, 10, 7], &[3, 3, 7, 32], Padding::Same, 1),
            (&[1, 6, 21, 1], &[3, 3, 1, 8], Padding::Same, 1),
            (&[1, 5, 40, 2], &[3, 5, 2, 8], Padding::Same, 2),
            (&[1, 12, 10, 3], &[3, 3, 3, 16], Padding::Same, 2),
            (&[2, 7, 8, 2], &[5, 3, 2, 32], Padding::Same, 1),
            (&[1, 10, 9, 4], &[2, 2, 4, 24], Padding::Valid, 3),
        ];
        for (xs, fs, padding, stride) in cases {
            // Eighths (at most 1.75 in magnitude) times eighths, summed over at most 147 taps:
            // exact in float32.
            assert_exact(xs, fs, spec(padding, stride), narrow::applies);
        }
    }

    /// The float32 convolution of `xs` by `fs` (tensor's values, eighths) under `spec`, which
    /// `kernel` must serve, equals the definition exactly: callers choose sizes whose sums of
    /// products of eighths (transformed or not) float32 holds without rounding.
    fn assert_exact(xs: &[usize], fs: &[usize], spec: Spec, kernel: fn(&Geometry) -> bool) {
        let (x, f) = (tensor(xs, 1), tensor(fs, 2));
        let want = reference(&spec, &x, &f);
        let g = geometry(&spec, &x, &f).unwrap();
        assert!(kernel(&g), "{xs:?} {fs:?}");
        let got = convolve(&g, &single(&x), &single(&f), &|_, _| {}).unwrap();
        let got: Vec<f64> = got.iter().map(|&v| f64::from(v)).collect();
        assert_eq!(got, want, "{xs:?} {fs:?}");
    }

    /// `t`'s values as float32.
    fn single(t: &Tensor) -> Vec<f32> {
        t.values::<f64>()
            .unwrap()
            .iter()
            .map(|&v| v as f32)
            .collect()
    }

    #[test]
    fn winograd_matches_the_definition() {
        // Channels in multiples of 16 (the AVX-512 transforms where the CPU has them), of 8
        // (the AVX ones) and neither (the portable ones); output channels in one block and in
        // two (256 x 80: products for 64 output channels, then 16); odd sizes (a last tile row
        // or column half outside the output); several images; one thread and several.
        let cases: [(&[usize], &[usize], Padding); 6] = [
            (&[2, 9, 11, 32], &[3, 3, 32, 48], Padding::Same),
            (&[1, 16, 14, 24], &[3, 3, 24, 40], Padding::Valid),
            (&[3, 7, 7, 16], &[3, 3, 16, 16], Padding::Same),
            (&[1, 12, 12, 256], &[3, 3, 256, 80], Padding::Same),
            (&[2, 13, 10, 16], &[3, 3, 16, 24], Padding::Valid),
            (&[1, 11, 12, 20], &[3, 3, 20, 36], Padding::Same),
        ];
        for (xs, fs, padding) in cases {
            // Eighths, their transforms (halves of sums) and products stay exact in float32
            // at these sizes, so the result is the definition's exactly.
            assert_exact(xs, fs, spec(padding, 1), winograd::applies);
        }
    }

    /// Few tiles on two threads split the output channels between them (winograd/channels.rs):
    /// blocks of 48 and 32 channels, two blocks of input channels summed (256 in, 128 out a
    /// thread), several images with odd sizes through the portable filter transform (72
    /// output channels, a block of 24). Many tiles keep the split by rows.
    #[test]
    fn winograd_by_output_channels_matches_the_definition() {
        let cases: [(&[usize], &[usize], Padding); 3] = [
            (&[1, 12, 12, 256], &[3, 3, 256, 80], Padding::Same),
            (&[1, 14, 14, 256], &[3, 3, 256, 256], Padding::Same),
            (&[3, 7, 9, 20], &[3, 3, 20, 72], Padding::Valid),
        ];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            for (xs, fs, padding) in cases {
                assert_exact(xs, fs, spec(padding, 1), |g| {
                    winograd::applies(g) && winograd::by_channels(g)
                });
            }
            let many = geometry(
                &spec(Padding::Same, 1),
                &tensor(&[1, 56, 56, 64], 1),
                &tensor(&[3, 3, 64, 64], 2),
            )
            .unwrap();
            assert!(winograd::applies(&many) && !winograd::by_channels(&many));
        });
    }

    /// Products with few pixels (a 7x7 image) split their output channels between two
    /// threads (gemm.rs's column blocks), a 1x1 layer reading the input in place and a 3x3
    /// one through im2col; larger ones split their pixels.
    #[test]
    fn products_split_between_threads_match_the_definition() {
        let cases: [(&[usize], &[usize]); 4] = [
            (&[1, 7, 7, 64], &[1, 1, 64, 200]),
            (&[1, 7, 7, 40], &[3, 3, 40, 100]),
            (&[2, 7, 7, 48], &[1, 1, 48, 96]),
            (&[1, 20, 20, 32], &[1, 1, 32, 64]),
        ];
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .unwrap();
        pool.install(|| {
            for (xs, fs) in cases {
                let few = xs[0] * xs[1] * xs[2] < FEW_ROWS;
                let work = xs.iter().product::<usize>() * fs[0] * fs[1] * fs[3];
                assert!(work >= PARALLEL_WORK, "{xs:?} {fs:?}");
                // At most 360 products of eighths a sum: exact in float32.
                assert_exact(xs, fs, spec(Padding::Same, 1), |g| {
                    !winograd::applies(g) && !narrow::applies(g)
                });
                assert_eq!(
                    tiling(
                        &geometry(&spec(Padding::Same, 1), &tensor(xs, 1), &tensor(fs, 2)).unwrap()
                    )
                    .1,
                    !few
                );
            }
        });
    }

    #[test]
    fn equal_filters_share_one_packed_copy_and_others_do_not() {
        let f32_filter = |shape: &[usize], seed: u64| {
            Tensor::from_vec(shape.to_vec(), single(&tensor(shape, seed)))
        };
        let same = spec(Padding::Same, 2);
        let (a, b) = (
            f32_filter(&[3, 3, 64, 64], 1),
            f32_filter(&[3, 3, 64, 64], 1),
        );
        let first = PackedFilter::of(&same, &a).unwrap();
        assert!(Arc::ptr_eq(&first, &PackedFilter::of(&same, &b).unwrap()));
        let other = PackedFilter::of(&same, &f32_filter(&[3, 3, 64, 64], 2)).unwrap();
        assert!(!Arc::ptr_eq(&first, &other));
        assert_eq!(first.tensor().values::<f32>(), a.values::<f32>());
        // Too few weights, and a filter Winograd may take at stride 1: left to the plan.
        assert!(PackedFilter::of(&same, &f32_filter(&[1, 1, 64, 64], 1)).is_none());
        assert!(PackedFilter::of(&spec(Padding::Same, 1), &a).is_none());
    }

    #[test]
    fn mismatched_dtypes_and_ranks_are_errors() {
        let spec = spec(Padding::Same, 1);
        let x = tensor(&[1, 3, 3, 2], 1);
        let f32_filter = Tensor::from_vec(vec![1, 1, 2, 1], vec![1.0f32, 2.0]);
        assert!(conv(&spec, &x, &f32_filter).is_err());
        assert!(conv(&spec, &tensor(&[3, 3, 2], 1), &tensor(&[1, 1, 2, 1], 1)).is_err());
    }

    #[test]
    fn channels_first_is_the_transposed_channels_last() {
        let (x, f) = (tensor(&[2, 6, 5, 3], 1), tensor(&[3, 2, 3, 4], 2));
        let nhwc = conv(&spec(Padding::Same, 2), &x, &f).unwrap();
        let nchw_spec = Spec {
            channels_first: true,
            ..spec(Padding::Same, 2)
        };
        let x_nchw = Tensor::from_vec(
            vec![2, 3, 6, 5],
            to_nchw(x.values::<f64>().unwrap(), [2, 6, 5, 3]),
        );
        let out = conv(&nchw_spec, &x_nchw, &f).unwrap();
        let [n, h, w, c] = rank4(nhwc.shape(), "out").unwrap();
        assert_eq!(out.shape(), &[n, c, h, w]);
        let back = to_nhwc(out.values::<f64>().unwrap(), [n, c, h, w]);
        assert_eq!(back, nhwc.values::<f64>().unwrap());
    }

    #[test]
    fn fused_epilogue_sees_every_output_once() {
        let float = |shape: &[usize], seed: u64| {
            let t = tensor(shape, seed);
            let v = t
                .values::<f64>()
                .unwrap()
                .iter()
                .map(|&x| x as f32)
                .collect();
            Tensor::from_vec(shape.to_vec(), v)
        };
        let shift = |_: usize, v: &mut [f32]| v.iter_mut().for_each(|x| *x = x.max(0.0) + 1.0);
        let cases: [(&[usize], &[usize]); 3] = [
            (&[2, 40, 30, 8], &[3, 3, 8, 16]),
            (&[1, 9, 9, 4], &[1, 1, 4, 8]),
            (&[1, 7, 7, 6], &[3, 3, 1, 12]),
        ];
        for (xs, fs) in cases {
            let (x, f) = (float(xs, 1), float(fs, 2));
            let s = spec(Padding::Same, 1);
            let fused = conv_fused(&s, &x, &f, &shift).unwrap();
            let mut plain = conv(&s, &x, &f).unwrap();
            shift(0, plain.values_mut::<f32>().unwrap());
            assert_eq!(fused, plain, "{xs:?} {fs:?}");
        }
        let (x, f) = (float(&[1, 6, 6, 3], 1), float(&[3, 3, 3, 2], 2));
        let s = spec(Padding::Valid, 2);
        let fused = depthwise::depthwise_fused(&s, &x, &f, &shift).unwrap();
        let mut plain = depthwise::depthwise(&s, &x, &f).unwrap();
        shift(0, plain.values_mut::<f32>().unwrap());
        assert_eq!(fused, plain);
    }
}
