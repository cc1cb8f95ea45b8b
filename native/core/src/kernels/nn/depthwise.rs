//! DepthwiseConv2dNative (and Conv2D with one input channel per group): a direct kernel over
//! NHWC. float32 with channel multiplier 1 (the hot case) goes through a register-blocked
//! kernel (sums over all taps kept in registers and stored once: strips of output pixels
//! sharing their input loads for 3- and 5-wide kernels, blocks of channels otherwise;
//! AVX-512 or AVX2+FMA chosen at run time); other types and multipliers accumulate tap by
//! tap over a whole row of channels. Output rows are spread over rayon's threads when the
//! work is large.

use std::ops::Range;

use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec};
use crate::kernels::nn::conv::{Epilogue, Geometry};
use crate::kernels::nn::gemm::PARALLEL_WORK;
use crate::kernels::nn::layout::{to_nchw, to_nhwc};
use crate::kernels::nn::num::{f32_values, run_num, zeros, Num, NumOp, FLOATS};
use crate::kernels::nn::output::{zeroed_chunks, Split};
use crate::kernels::nn::prefetch::prefetch;
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
    geometry_of(spec, x.shape(), filter.shape())
}

/// [`geometry`] from the input's and the filter's shapes.
pub(crate) fn geometry_of(
    spec: &Spec,
    x: &[usize],
    filter: &[usize],
) -> KResult<(Geometry, usize)> {
    let [n, h, w, c] = nhwc(rank4(x, "input")?, spec.channels_first);
    let [kh, kw, fc, multiplier] = rank4(filter, "filter")?;
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
    let out = direct(
        &g,
        multiplier,
        f32_values(x, "input")?,
        f32_values(filter, "filter")?,
        epilogue,
    )?;
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
        if !self.channels_first {
            return direct(&self.g, self.multiplier, x, filter, &|_, _| {});
        }
        let x = to_nhwc(x, self.input_shape);
        let out = direct(&self.g, self.multiplier, &x, filter, &|_, _| {})?;
        Ok(to_nchw(&out, self.g.out_shape()))
    }
}

/// The depthwise convolution of NHWC `x` (NHWC out), `epilogue` applied to each finished
/// output row; `filter` is (kh, kw, c · multiplier) in memory.
pub fn direct<T: Num>(
    g: &Geometry,
    multiplier: usize,
    x: &[T],
    filter: &[T],
    epilogue: Epilogue<T>,
) -> KResult<Vec<T>> {
    let count = g.out_shape().iter().product();
    let row_len = g.cols.out * g.o;
    if row_len == 0 || filter.len() < g.kh * g.kw * g.o || x.len() < g.n * g.h * g.w * g.c {
        return zeros(count);
    }
    let oh = g.rows.out.max(1);
    let work = count.saturating_mul(g.kh * g.kw);
    let split = Split {
        count,
        chunk: row_len,
        share: row_len,
        parallel: work >= PARALLEL_WORK && count > row_len,
    };
    let flat = flat_patterns(g, multiplier, filter);
    zeroed_chunks(
        split,
        || (),
        |_, first, row| {
            let r = first / row_len;
            let (image, oy) = (r / oh, r % oh);
            prefetch_new_lines(g, x, image, oy + 1);
            let done = match &flat {
                Some(flat) => flat_row(g, x, flat, image, oy, row),
                None => fast_row(g, multiplier, x, filter, image, oy, row),
            };
            if !done {
                output_row(g, multiplier, x, filter, image, oy, row);
            }
            epilogue(first, row);
            Ok(())
        },
    )
}

/// The input rows that output rows `rows` of one image read (padding aside), and the
/// geometry of a one-image convolution over just those input rows giving just those output
/// rows: the same windows, the padding above moved so that output row `rows.start` is its row
/// 0. A kernel that produces its input a band of rows at a time (kernels/bottleneck.rs)
/// convolves each band as an image of its own.
pub(crate) fn band(g: &Geometry, rows: Range<usize>) -> (Range<usize>, Geometry) {
    let axis = g.rows;
    let top = rows.start * axis.stride;
    let reach =
        rows.end.saturating_sub(1) * axis.stride + (g.kh.saturating_sub(1)) * axis.dilation + 1;
    let first = top.saturating_sub(axis.before).min(g.h);
    let end = reach.saturating_sub(axis.before).min(g.h).max(first);
    let mut band = Geometry {
        n: 1,
        h: end - first,
        ..*g
    };
    band.rows.out = rows.len();
    // Input row `first` becomes row 0; a band that reads no row (all padding) has none.
    match (axis.before + first).checked_sub(top) {
        Some(before) => band.rows.before = before,
        None => band.h = 0,
    }
    (first..first + band.h, band)
}

/// Prefetches the input lines that output row `oy` of `image` reads and row `oy - 1` did
/// not (the last `stride` kernel rows'), if `oy` is a row: started a row ahead, they arrive
/// while the row before is computed. The row kernels read each pixel's channels a 64-byte
/// chunk at a time, one pass over the row per chunk, and lines that came from memory (an
/// image's input is 1.8 MB in MobileNetV2's 56x56x144 layer) stalled those passes.
/// MobileNetV2 at batch 32: the row kernel's share of `perf` samples over 15 calls fell by a
/// fifth (1724 and 1577 -> 1309 and 1278, two runs each; the GEMM's, unchanged).
fn prefetch_new_lines<T: Num>(g: &Geometry, x: &[T], image: usize, oy: usize) {
    if oy >= g.rows.out {
        return;
    }
    let line_len = g.w * g.c;
    for tap in g.kh.saturating_sub(g.rows.stride)..g.kh {
        if let Some(ih) = g.rows.source(oy, tap, g.h) {
            let start = (image * g.h + ih) * line_len;
            if let Some(line) = x.get(start..start + line_len) {
                prefetch(line);
            }
        }
    }
}

/// For a float32 convolution with channel multiplier 1, fewer than 8 channels and stride 1
/// along the width (the depthwise half of a SeparableConv2D over an RGB image): each tap's filter values repeated
/// along a whole output row, so that [`blocked::flat`] runs along the row's values whatever
/// the channel count. Channel-vectorized, 3 channels fill no vector and each pixel's 3 sums
/// ran as scalar code (separable_cnn's first layer took 95 us at batch 32 for 124k
/// multiply-adds; this way 47 us). At stride 2, gathering each tap's input pixels first cost
/// more than it saved, so those stay on the channel blocks. None otherwise.
fn flat_patterns<T: Num>(g: &Geometry, multiplier: usize, filter: &[T]) -> Option<blocked::Flat> {
    let filter = T::as_f32(filter)?;
    if multiplier != 1 || g.c >= 8 || g.cols.stride != 1 || filter.len() < g.kh * g.kw * g.c {
        return None;
    }
    let pixels = g.cols.out;
    let taps = filter[..g.kh * g.kw * g.c].chunks_exact(g.c.max(1));
    Some(blocked::Flat {
        patterns: taps.flat_map(|tap| tap.repeat(pixels)).collect(),
        spans: g.cols.spans(g.w),
    })
}

/// One output row through [`blocked::flat`] when the values are float32; false otherwise.
fn flat_row<T: Num>(
    g: &Geometry,
    x: &[T],
    flat: &blocked::Flat,
    image: usize,
    oy: usize,
    row: &mut [T],
) -> bool {
    match (T::as_f32(x), T::as_f32_mut(row)) {
        (Some(x), Some(row)) => {
            blocked::flat(g, x, flat, image, oy, row);
            true
        }
        _ => false,
    }
}

/// One output row through the register-blocked f32 kernel when it applies (float32, channel
/// multiplier 1: every Keras DepthwiseConv2D in the target models); false otherwise.
fn fast_row<T: Num>(
    g: &Geometry,
    multiplier: usize,
    x: &[T],
    filter: &[T],
    image: usize,
    oy: usize,
    row: &mut [T],
) -> bool {
    if multiplier != 1 {
        return false;
    }
    match (T::as_f32(x), T::as_f32(filter), T::as_f32_mut(row)) {
        (Some(x), Some(filter), Some(row)) => {
            blocked::row(g, x, filter, image, oy, row);
            true
        }
        _ => false,
    }
}

/// One output row (image, oy): every output pixel's channels, tap by tap. The general path
/// (any element type, any channel multiplier); compiled also for AVX2 (chosen at run time),
/// where the channel loops run 8 lanes wide.
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

/// The f32 kernel for channel multiplier 1, register-blocked: each output pixel's channels
/// are taken a block at a time (64, then what is left), and a block's sums stay in
/// local accumulators (registers) across all kh·kw taps and are stored once, instead of a
/// load, multiply-add and store of the whole row per tap. Compiled for AVX-512 and
/// AVX2+FMA (chosen at run time, where the sums use fused multiply-adds) and the baseline.
pub(crate) mod blocked {
    use std::ops::Range;

    use crate::kernels::nn::conv::Geometry;
    use crate::kernels::nn::window::Axis;

    /// Output row (image, oy) of a depthwise convolution with multiplier 1 (`g.o == g.c`);
    /// every value of `row` is written (it need not be zeroed first).
    #[multiversion::multiversion(targets(
        "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
        "x86_64+avx2+fma"
    ))]
    pub(crate) fn row(
        g: &Geometry,
        x: &[f32],
        filter: &[f32],
        image: usize,
        oy: usize,
        row: &mut [f32],
    ) {
        const FUSED: bool = multiversion::target::selected_target!().supports_feature_str("fma");
        const WIDE: bool = multiversion::target::selected_target!().supports_feature_str("avx512f");
        row_body::<FUSED, WIDE>(g, x, filter, image, oy, row);
    }

    /// The signature of [`row`] and its variants.
    #[cfg(test)]
    pub(super) type RowKernel = fn(&Geometry, &[f32], &[f32], usize, usize, &mut [f32]);

    /// [`row`] with multiply-adds fused or not, for a target with 32 vector registers of 16
    /// lanes (`WIDE`) or fewer and narrower. The channels are viewed as chunks of `L` lanes
    /// (the widest of 16, 8 and 1 that divides the depth), so that one bounds check covers a
    /// whole block of channels. Kernels 3 or 5 columns wide with stride 1 or 2 (every
    /// depthwise layer of the target models) go a chunk at a time through [`strips`];
    /// the others take `G` chunks (64 channels) at a time: 4 AVX-512 or 8 AVX2 registers of
    /// independent sums in the main loop.
    #[inline(always)]
    pub(super) fn row_body<const FUSED: bool, const WIDE: bool>(
        g: &Geometry,
        x: &[f32],
        filter: &[f32],
        image: usize,
        oy: usize,
        row: &mut [f32],
    ) {
        if g.c.is_multiple_of(16) {
            if !strip_row::<16, FUSED, WIDE>(g, x, filter, image, oy, row) {
                chunked_row::<16, 4, FUSED>(g, x, filter, image, oy, row);
            }
        } else if g.c.is_multiple_of(8) {
            if !strip_row::<8, FUSED, true>(g, x, filter, image, oy, row) {
                chunked_row::<8, 8, FUSED>(g, x, filter, image, oy, row);
            }
        } else {
            chunked_row::<1, 64, FUSED>(g, x, filter, image, oy, row);
        }
    }

    /// The row through [`strips`] when the kernel's columns are 3 or 5, undilated, with
    /// stride 1 or 2; false (nothing written) otherwise. `ROOMY`: the target has registers
    /// for 8 pixels' sums of a chunk.
    #[inline(always)]
    fn strip_row<const L: usize, const FUSED: bool, const ROOMY: bool>(
        g: &Geometry,
        x: &[f32],
        filter: &[f32],
        image: usize,
        oy: usize,
        row: &mut [f32],
    ) -> bool {
        // Called in each arm, not through a function pointer, so that they are inlined
        // into (and compiled for) the target `row` was chosen for.
        match (g.cols.dilation, g.kw, g.cols.stride) {
            (1, 3, 1) => strip_chunks::<L, 3, 1, FUSED, ROOMY>(g, x, filter, image, oy, row),
            (1, 3, 2) => strip_chunks::<L, 3, 2, FUSED, ROOMY>(g, x, filter, image, oy, row),
            (1, 5, 1) => strip_chunks::<L, 5, 1, FUSED, ROOMY>(g, x, filter, image, oy, row),
            (1, 5, 2) => strip_chunks::<L, 5, 2, FUSED, ROOMY>(g, x, filter, image, oy, row),
            _ => return false,
        }
        true
    }

    /// Where one output pixel's window lies in the input.
    struct Window<'v, 'a, const L: usize> {
        view: &'v RowView<'a, L>,
        /// The kernel columns whose taps read the image (not padding).
        cols: Range<usize>,
        /// Where kernel column 0 would read, padding not yet subtracted.
        left: usize,
    }

    /// One output row's view of its image and the filter in chunks of `L` lanes.
    struct RowView<'a, const L: usize> {
        /// The image's (h, w, c / L) chunks.
        plane: &'a [[f32; L]],
        /// The filter's (kh, kw, c / L) chunks.
        filter: &'a [[f32; L]],
        /// Chunks per pixel.
        depth: usize,
        /// The kernel rows whose taps read the image (not padding).
        rows: Range<usize>,
        /// The output columns whose whole window lies inside the image (none when the
        /// window is wider than the image): kernel column 0's valid outputs start last, the
        /// last column's end first.
        inner: Range<usize>,
        top: usize,
    }

    impl<'a, const L: usize> RowView<'a, L> {
        /// None when the channels fill no chunk.
        #[inline(always)]
        fn new(
            g: &Geometry,
            x: &'a [f32],
            filter: &'a [f32],
            image: usize,
            oy: usize,
        ) -> Option<Self> {
            let depth = g.c / L;
            if depth == 0 {
                return None;
            }
            let plane_len = g.h * g.w * depth;
            let start = g.cols.valid(0, g.w).start.min(g.cols.out);
            let end = g.cols.valid(g.kw.saturating_sub(1), g.w).end.max(start);
            Some(Self {
                plane: &x.as_chunks::<L>().0[image * plane_len..][..plane_len],
                filter: &filter.as_chunks::<L>().0[..g.kh * g.kw * depth],
                depth,
                rows: g.rows.taps(oy, g.h),
                inner: start..end,
                top: oy * g.rows.stride,
            })
        }

        /// Output pixel `ox`'s window.
        #[inline(always)]
        fn window(&self, g: &Geometry, ox: usize) -> Window<'_, 'a, L> {
            Window {
                view: self,
                cols: if self.inner.contains(&ox) {
                    0..g.kw
                } else {
                    taps(&g.cols, ox, g.w)
                },
                left: ox * g.cols.stride,
            }
        }
    }

    /// Channel groups outermost, so that a group's filter taps (kh·kw·G·L values) stay in
    /// L1 across the row's pixels: with all channels at once per pixel, the filters of the
    /// wide late layers (up to 115 KB) would come from L2 at every pixel.
    #[inline(always)]
    pub(super) fn chunked_row<const L: usize, const G: usize, const FUSED: bool>(
        g: &Geometry,
        x: &[f32],
        filter: &[f32],
        image: usize,
        oy: usize,
        row: &mut [f32],
    ) {
        let Some(view) = RowView::<L>::new(g, x, filter, image, oy) else {
            return;
        };
        let (depth, window) = (view.depth, |ox: usize| view.window(g, ox));
        let pixels = row.as_chunks_mut::<L>().0;
        let full = depth - depth % G;
        for k in (0..full).step_by(G) {
            for (ox, out) in pixels.chunks_exact_mut(depth).enumerate() {
                sums::<L, G, FUSED>(g, &window(ox), k, &mut out[k..k + G]);
            }
        }
        if full < depth {
            for (ox, out) in pixels.chunks_exact_mut(depth).enumerate() {
                rest_sums::<L, G, FUSED>(g, &window(ox), full, &mut out[full..]);
            }
        }
    }

    /// A row a chunk at a time: the output pixels whose window lies inside the image in
    /// strips of 8 (or 4), 4, 2 and 1 through [`strips`], the border pixels through [`sums`].
    /// A chunk is one cache line of each pixel, so the chunks' passes over the row's input
    /// lines read each line once.
    #[inline(always)]
    fn strip_chunks<
        const L: usize,
        const KW: usize,
        const S: usize,
        const FUSED: bool,
        const ROOMY: bool,
    >(
        g: &Geometry,
        x: &[f32],
        filter: &[f32],
        image: usize,
        oy: usize,
        row: &mut [f32],
    ) {
        let Some(view) = RowView::<L>::new(g, x, filter, image, oy) else {
            return;
        };
        let (depth, inner, window) = (view.depth, view.inner.clone(), |ox| view.window(g, ox));
        let pixels = row.as_chunks_mut::<L>().0;
        let borders = (0..inner.start).chain(inner.end..g.cols.out);
        for k in 0..depth {
            for ox in borders.clone() {
                sums::<L, 1, FUSED>(g, &window(ox), k, &mut pixels[ox * depth + k..][..1]);
            }
            let mut ox = inner.start;
            if ROOMY {
                ox = strips::<L, KW, S, 8, FUSED>(g, &view, k, ox..inner.end, pixels);
            }
            ox = strips::<L, KW, S, 4, FUSED>(g, &view, k, ox..inner.end, pixels);
            ox = strips::<L, KW, S, 2, FUSED>(g, &view, k, ox..inner.end, pixels);
            strips::<L, KW, S, 1, FUSED>(g, &view, k, ox..inner.end, pixels);
        }
    }

    /// Chunk `k` of the output pixels `cols` (all with whole windows), `P` side by side,
    /// for a kernel `KW` columns wide and stride `S`; returns where the pixels that do not
    /// fill a strip start. The `P` sums are independent chains kept in registers, a kernel
    /// row's taps are read once per strip, and side by side the pixels' windows overlap
    /// (`(P - 1)·S + KW` input columns for `P·KW` multiply-adds). Each pixel still adds its
    /// taps in the order [`sums`] does (kernel rows, then columns), so the two agree bit for
    /// bit.
    #[inline(always)]
    fn strips<
        const L: usize,
        const KW: usize,
        const S: usize,
        const P: usize,
        const FUSED: bool,
    >(
        g: &Geometry,
        view: &RowView<L>,
        k: usize,
        cols: Range<usize>,
        pixels: &mut [[f32; L]],
    ) -> usize {
        let depth = view.depth;
        let span = (P - 1) * S + KW;
        let mut ox = cols.start;
        while ox + P <= cols.end {
            let mut acc = [[0f32; L]; P];
            for i in view.rows.clone() {
                // Whole windows: these neither underflow nor pass the image's edge.
                let ih = view.top + i * g.rows.dilation - g.rows.before;
                let iw = ox * S - g.cols.before;
                let line = &view.plane[(ih * g.w + iw) * depth + k..][..(span - 1) * depth + 1];
                let taps = &view.filter[i * KW * depth + k..][..(KW - 1) * depth + 1];
                let taps: [[f32; L]; KW] = std::array::from_fn(|j| taps[j * depth]);
                match (KW, S) {
                    (3, 1) => input_by_input::<L, KW, P, FUSED>(&mut acc, line, &taps, depth),
                    _ => tap_by_tap::<L, KW, S, P, FUSED>(&mut acc, line, &taps, depth),
                }
            }
            for (p, a) in acc.iter().enumerate() {
                pixels[(ox + p) * depth + k] = *a;
            }
            ox += P;
        }
        ox
    }

    /// One kernel row's taps (in registers) added to the sums of `P` adjacent pixels at
    /// stride 1, an input value at a time: each of the row's `P + KW - 1` input values is
    /// loaded once and added to every pixel whose window holds it. Tap by tap, each pixel's
    /// input loaded where it is used, 40x40x32 by 3x3 took 28 us on one core of a Xeon with
    /// AVX-512, 16 us this way (`bench_depthwise` with `DW_LAYER=40,40,32,3,1`, builds
    /// alternating); 5-wide rows and stride 2 ran slower this way (28x28x240 by 5x5: 331
    /// against 198 us; 56x56x144 by 3x3 at stride 2: 150 against 114), so they go
    /// [`tap_by_tap`]. Each pixel still takes its taps in column order.
    #[inline(always)]
    fn input_by_input<const L: usize, const KW: usize, const P: usize, const FUSED: bool>(
        acc: &mut [[f32; L]; P],
        line: &[[f32; L]],
        taps: &[[f32; L]; KW],
        depth: usize,
    ) {
        for q in 0..P + KW - 1 {
            let v = &line[q * depth];
            // Pixel q - j reads input q at tap j.
            for (j, t) in taps.iter().enumerate() {
                if let Some(a) = q.checked_sub(j).and_then(|p| acc.get_mut(p)) {
                    for ((a, &v), &t) in a.iter_mut().zip(v).zip(t) {
                        *a = multiply_add::<FUSED>(*a, v, t);
                    }
                }
            }
        }
    }

    /// One kernel row's taps (in registers) added to the sums of `P` adjacent pixels at
    /// stride `S`, a tap at a time, each pixel's input value loaded where it is used. With
    /// the taps read from memory at every multiply-add instead (the compiler's choice when
    /// they were not loaded first), `bench_depthwise`'s layers took 2.94 ms in all, 2.30 ms
    /// with both changes.
    #[inline(always)]
    fn tap_by_tap<
        const L: usize,
        const KW: usize,
        const S: usize,
        const P: usize,
        const FUSED: bool,
    >(
        acc: &mut [[f32; L]; P],
        line: &[[f32; L]],
        taps: &[[f32; L]; KW],
        depth: usize,
    ) {
        for (j, t) in taps.iter().enumerate() {
            for (p, a) in acc.iter_mut().enumerate() {
                let v = &line[(p * S + j) * depth];
                for ((a, &v), &t) in a.iter_mut().zip(v).zip(t) {
                    *a = multiply_add::<FUSED>(*a, v, t);
                }
            }
        }
    }

    /// [`Axis::taps`], without its divisions when the axis is not dilated (the common case,
    /// computed at every border pixel of every channel group).
    #[inline(always)]
    pub(super) fn taps(axis: &Axis, o: usize, size: usize) -> Range<usize> {
        if axis.dilation != 1 {
            return axis.taps(o, size);
        }
        // Tap t reads o·stride + t - before, which must lie in 0..size.
        let start = o * axis.stride;
        let lo = axis.before.saturating_sub(start).min(axis.window);
        let hi = (size + axis.before).saturating_sub(start).min(axis.window);
        lo.min(hi)..hi
    }

    /// The chunks from `k` on that do not fill a group of `G`: in groups of 16 and 4 while
    /// they last, then the last one to three together (so that their sums too run side by
    /// side in registers).
    #[inline(always)]
    fn rest_sums<const L: usize, const G: usize, const FUSED: bool>(
        g: &Geometry,
        window: &Window<L>,
        mut k: usize,
        mut out: &mut [[f32; L]],
    ) {
        if G > 16 {
            let mut groups = out.chunks_exact_mut(16);
            for block in groups.by_ref() {
                sums::<L, 16, FUSED>(g, window, k, block);
                k += 16;
            }
            out = groups.into_remainder();
        }
        if G > 4 {
            let mut groups = out.chunks_exact_mut(4);
            for block in groups.by_ref() {
                sums::<L, 4, FUSED>(g, window, k, block);
                k += 4;
            }
            out = groups.into_remainder();
        }
        match out.len() {
            1 => sums::<L, 1, FUSED>(g, window, k, out),
            2 => sums::<L, 2, FUSED>(g, window, k, out),
            3 => sums::<L, 3, FUSED>(g, window, k, out),
            _ => {}
        }
    }

    /// `N` chunks from chunk `k` of one output pixel: the sums over the window stay in
    /// registers and are stored once. Taps go in the general path's order (kernel rows,
    /// then columns).
    #[inline(always)]
    fn sums<const L: usize, const N: usize, const FUSED: bool>(
        g: &Geometry,
        window: &Window<L>,
        k: usize,
        out: &mut [[f32; L]],
    ) {
        let mut acc = [[0f32; L]; N];
        let view = window.view;
        let depth = view.depth;
        let step = g.cols.dilation * depth;
        for i in view.rows.clone() {
            // `rows` and `cols` hold only taps inside the image, so these neither
            // underflow nor pass the image's edge.
            let ih = view.top + i * g.rows.dilation - g.rows.before;
            let iw = window.left + window.cols.start * g.cols.dilation - g.cols.before;
            let mut at = (ih * g.w + iw) * depth + k;
            let mut tap = (i * g.kw + window.cols.start) * depth + k;
            for _ in window.cols.clone() {
                let pixel = &view.plane[at..][..N];
                let taps = &view.filter[tap..][..N];
                for ((a, p), t) in acc.iter_mut().zip(pixel).zip(taps) {
                    for ((a, &v), &t) in a.iter_mut().zip(p).zip(t) {
                        *a = multiply_add::<FUSED>(*a, v, t);
                    }
                }
                at += step;
                tap += depth;
            }
        }
        out.copy_from_slice(&acc);
    }

    /// What [`flat`] reads besides the input, worked out once per call.
    pub(super) struct Flat {
        /// Each tap's filter values repeated for every output pixel of a row.
        pub patterns: Vec<f32>,
        /// Per kernel column: the output pixels whose tap there reads the input, and the
        /// input pixel the first of them reads ([`Axis::spans`]).
        pub spans: Vec<(Range<usize>, usize)>,
    }

    /// Output row (image, oy) of a convolution with stride 1 along the width, tap by tap along
    /// the row's values: for each tap, the run of output pixels whose window has it inside the
    /// input, multiplied-added with the run of input values they read and the tap's repeated
    /// filter values. Each sum takes its taps in the same order as
    /// [`chunked_row`]'s, with the same (fused or not) multiply-adds, so the two agree bit for
    /// bit.
    #[multiversion::multiversion(targets(
        "x86_64+avx2+fma+avx512f+avx512bw+avx512dq+avx512vl",
        "x86_64+avx2+fma"
    ))]
    pub(super) fn flat(
        g: &Geometry,
        x: &[f32],
        flat: &Flat,
        image: usize,
        oy: usize,
        row: &mut [f32],
    ) {
        const FUSED: bool = multiversion::target::selected_target!().supports_feature_str("fma");
        let c = g.c;
        let (line_len, row_len) = (g.w * c, g.cols.out * c);
        for i in 0..g.kh {
            let Some(ih) = g.rows.source(oy, i, g.h) else {
                continue;
            };
            let line = &x[(image * g.h + ih) * line_len..][..line_len];
            for (j, (valid, first)) in flat.spans.iter().enumerate() {
                if valid.is_empty() {
                    continue;
                }
                let span = valid.start * c..valid.end * c;
                let source = &line[first * c..][..span.len()];
                let taps = &flat.patterns[(i * g.kw + j) * row_len..][span.clone()];
                for ((a, &v), &t) in row[span].iter_mut().zip(source).zip(taps) {
                    *a = multiply_add::<FUSED>(*a, v, t);
                }
            }
        }
    }

    /// `a + v·t`, fused (one rounding) where the target has FMA.
    #[inline(always)]
    fn multiply_add<const FUSED: bool>(a: f32, v: f32, t: f32) -> f32 {
        if FUSED {
            v.mul_add(t, a)
        } else {
            a + v * t
        }
    }
}

#[cfg(test)]
mod tests {
    use rayon::prelude::*;

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

    fn spec(padding: Padding, stride: usize, dilation: usize, explicit: [[usize; 2]; 2]) -> Spec {
        Spec {
            channels_first: false,
            strides: [stride; 2],
            dilations: [dilation; 2],
            padding,
            explicit,
        }
    }

    /// Values in [-1, 1) that are exact in f32, deterministic per seed.
    fn values(count: usize, seed: usize) -> Vec<f32> {
        (0..count)
            .map(|i| ((i * 7919 + seed * 104729) % 61) as f32 / 30.5 - 1.0)
            .collect()
    }

    /// The definition, in f64: out[b, oy, ox, c·m + k] = Σ x[b, y, z, c] · f[i, j, c, k].
    fn reference(spec: &Spec, xs: [usize; 4], fs: [usize; 4], x: &[f32], f: &[f32]) -> Vec<f64> {
        let ([n, h, w, c], [kh, kw, _, m]) = (xs, fs);
        let [rows, cols] = spec.axes(h, w, [kh, kw]).unwrap();
        let mut out = vec![];
        for b in 0..n {
            for oy in 0..rows.out {
                for ox in 0..cols.out {
                    for oc in 0..c * m {
                        let mut s = 0.0;
                        for i in 0..kh {
                            for j in 0..kw {
                                if let (Some(y), Some(z)) =
                                    (rows.source(oy, i, h), cols.source(ox, j, w))
                                {
                                    s += f64::from(x[((b * h + y) * w + z) * c + oc / m])
                                        * f64::from(f[(i * kw + j) * c * m + oc]);
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

    /// Shapes that exercise the blocked f32 kernel's channel blocks (64, 16, the rest) and
    /// borders, with every padding, strides 1 and 2, dilation 2 and multipliers 1 and 2.
    fn cases() -> Vec<(Spec, [usize; 4], [usize; 4])> {
        let mut cases = vec![];
        let paddings = [
            (Padding::Same, [[0, 0]; 2]),
            (Padding::Valid, [[0, 0]; 2]),
            (Padding::Explicit, [[2, 0], [1, 3]]),
        ];
        for (padding, explicit) in paddings {
            for (stride, dilation) in [(1, 1), (2, 1), (1, 2), (2, 2)] {
                for c in [1, 3, 16, 17, 40, 83, 144] {
                    for (k, m) in [([3, 3], 1), ([5, 2], 1), ([3, 3], 2)] {
                        let s = spec(padding, stride, dilation, explicit);
                        cases.push((s, [2, 9, 8, c], [k[0], k[1], c, m]));
                    }
                }
            }
        }
        // Rows wide enough for strips of 8, 4, 2 and 1 pixels between the borders, with
        // kernels 3 and 5 columns wide.
        for (padding, explicit) in paddings {
            for stride in [1, 2] {
                for c in [16, 24, 48] {
                    for k in [[3, 3], [2, 5]] {
                        let s = spec(padding, stride, 1, explicit);
                        cases.push((s, [1, 4, 37, c], [k[0], k[1], c, 1]));
                    }
                }
            }
        }
        // A window larger than the image: no output column has its whole window inside.
        cases.push((
            spec(Padding::Same, 1, 1, [[0, 0]; 2]),
            [1, 3, 2, 20],
            [5, 5, 20, 1],
        ));
        cases
    }

    #[test]
    fn fast_and_general_paths_match_the_definition() {
        for (s, xs, fs) in cases() {
            let (xv, fv) = (
                values(xs.iter().product(), 1),
                values(fs.iter().product(), 2),
            );
            let want = reference(&s, xs, fs, &xv, &fv);
            let x = Tensor::from_vec(xs.to_vec(), xv.clone());
            let f = Tensor::from_vec(fs.to_vec(), fv.clone());
            let got = depthwise(&s, &x, &f).unwrap();
            let got = got.values::<f32>().unwrap();
            assert_eq!(got.len(), want.len(), "{s:?} {xs:?} {fs:?}");
            for (a, b) in got.iter().zip(&want) {
                // At most 25 products of magnitude ≤ 1 summed in f32.
                assert!(
                    (f64::from(*a) - b).abs() < 1e-5,
                    "{s:?} {xs:?} {fs:?}: {a} vs {b}"
                );
            }
            let wide = |v: &[f32]| v.iter().map(|&v| f64::from(v)).collect::<Vec<_>>();
            let x = Tensor::from_vec(xs.to_vec(), wide(&xv));
            let f = Tensor::from_vec(fs.to_vec(), wide(&fv));
            let general = depthwise(&s, &x, &f).unwrap();
            for (a, b) in general.values::<f64>().unwrap().iter().zip(&want) {
                assert!((a - b).abs() < 1e-12, "{s:?} {xs:?} {fs:?}: {a} vs {b}");
            }
        }
    }

    #[test]
    fn blocked_rows_match_the_general_rows_in_f32() {
        for (s, xs, fs) in cases().into_iter().filter(|(_, _, fs)| fs[3] == 1) {
            let (xv, fv) = (
                values(xs.iter().product(), 3),
                values(fs.iter().product(), 4),
            );
            let x = Tensor::from_vec(xs.to_vec(), xv.clone());
            let f = Tensor::from_vec(fs.to_vec(), fv.clone());
            let (g, _) = geometry(&s, &x, &f).unwrap();
            let row_len = g.cols.out * g.o;
            for r in 0..g.n * g.rows.out {
                let (image, oy) = (r / g.rows.out, r % g.rows.out);
                let mut general = vec![0f32; row_len];
                output_row(&g, 1, &xv, &fv, image, oy, &mut general);
                // The version chosen for this CPU, and both sums (fused or not) as compiled
                // for the baseline, which other CPUs run.
                let kernels: [blocked::RowKernel; 4] = [
                    blocked::row,
                    blocked::row_body::<true, true>,
                    blocked::row_body::<true, false>,
                    blocked::row_body::<false, false>,
                ];
                for kernel in kernels {
                    let mut fast = vec![0f32; row_len];
                    kernel(&g, &xv, &fv, image, oy, &mut fast);
                    for (a, b) in fast.iter().zip(&general) {
                        assert!((a - b).abs() < 1e-5, "{s:?} {xs:?} {fs:?}: {a} vs {b}");
                    }
                }
            }
        }
    }

    #[test]
    fn flat_rows_agree_with_channel_blocks_bit_for_bit() {
        let mut checked = 0;
        for (s, xs, fs) in cases() {
            let (x, f) = (
                Tensor::from_vec(xs.to_vec(), values(xs.iter().product(), 5)),
                { Tensor::from_vec(fs.to_vec(), values(fs.iter().product(), 6)) },
            );
            let (g, multiplier) = geometry(&s, &x, &f).unwrap();
            let (xv, fv) = (x.values::<f32>().unwrap(), f.values::<f32>().unwrap());
            let Some(flat) = flat_patterns(&g, multiplier, fv) else {
                continue;
            };
            let row_len = g.cols.out * g.o;
            for r in 0..g.n * g.rows.out {
                let (image, oy) = (r / g.rows.out, r % g.rows.out);
                let (mut by_values, mut blocks) = (vec![0f32; row_len], vec![0f32; row_len]);
                blocked::flat(&g, xv, &flat, image, oy, &mut by_values);
                blocked::row(&g, xv, fv, image, oy, &mut blocks);
                let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                assert_eq!(bits(&by_values), bits(&blocks), "{s:?} {xs:?} {fs:?}");
            }
            checked += 1;
        }
        assert!(checked >= 24, "only {checked} cases took the flat rows");
    }

    #[test]
    fn strips_agree_with_channel_blocks_bit_for_bit() {
        let mut checked = 0;
        for (s, xs, fs) in cases() {
            let (x, f) = (
                Tensor::from_vec(xs.to_vec(), values(xs.iter().product(), 7)),
                { Tensor::from_vec(fs.to_vec(), values(fs.iter().product(), 8)) },
            );
            let (g, multiplier) = geometry(&s, &x, &f).unwrap();
            let strip_shape = g.cols.dilation == 1 && [3, 5].contains(&g.kw) && g.cols.stride <= 2;
            if multiplier != 1 || !strip_shape || g.c % 8 != 0 {
                continue;
            }
            let (xv, fv) = (x.values::<f32>().unwrap(), f.values::<f32>().unwrap());
            let row_len = g.cols.out * g.o;
            for r in 0..g.n * g.rows.out {
                let (image, oy) = (r / g.rows.out, r % g.rows.out);
                for fused in [true, false] {
                    let (mut strips, mut blocks) = (vec![0f32; row_len], vec![0f32; row_len]);
                    if fused {
                        blocked::row_body::<true, true>(&g, xv, fv, image, oy, &mut strips);
                        blocked::chunked_row::<8, 8, true>(&g, xv, fv, image, oy, &mut blocks);
                    } else {
                        blocked::row_body::<false, false>(&g, xv, fv, image, oy, &mut strips);
                        blocked::chunked_row::<8, 8, false>(&g, xv, fv, image, oy, &mut blocks);
                    }
                    let bits = |v: &[f32]| v.iter().map(|x| x.to_bits()).collect::<Vec<_>>();
                    assert_eq!(bits(&strips), bits(&blocks), "{s:?} {xs:?} {fs:?}");
                }
            }
            checked += 1;
        }
        assert!(checked >= 24, "only {checked} cases took the strips");
    }

    #[test]
    fn undilated_taps_match_the_axis() {
        for padding in [Padding::Same, Padding::Valid, Padding::Explicit] {
            for (size, window, stride) in [(7, 3, 1), (7, 5, 2), (2, 5, 1), (9, 1, 3), (4, 7, 2)] {
                let s = spec(padding, stride, 1, [[3, 1], [2, 4]]);
                let [axis, _] = s.axes(size, size, [window, window]).unwrap();
                for o in 0..axis.out {
                    assert_eq!(blocked::taps(&axis, o, size), axis.taps(o, size));
                }
            }
        }
    }

    #[test]
    fn fused_epilogue_sees_every_row_once() {
        let shift = |_: usize, v: &mut [f32]| v.iter_mut().for_each(|x| *x = x.max(0.0) + 1.0);
        for (s, xs, fs) in cases().into_iter().step_by(5) {
            let x = Tensor::from_vec(xs.to_vec(), values(xs.iter().product(), 5));
            let f = Tensor::from_vec(fs.to_vec(), values(fs.iter().product(), 6));
            let fused = depthwise_fused(&s, &x, &f, &shift).unwrap();
            let mut plain = depthwise(&s, &x, &f).unwrap();
            shift(0, plain.values_mut::<f32>().unwrap());
            assert_eq!(fused, plain, "{s:?} {xs:?} {fs:?}");
        }
    }

    /// [`direct`] as it was before the blocked kernel: every row through the general path.
    fn general_direct(g: &Geometry, x: &[f32], filter: &[f32], out: &mut [f32]) {
        let (row_len, oh) = (g.cols.out * g.o, g.rows.out);
        let body = |(r, row): (usize, &mut [f32])| {
            output_row(g, 1, x, filter, r / oh, r % oh, row);
        };
        if out.len() * g.kh * g.kw >= PARALLEL_WORK && out.len() > row_len {
            out.par_chunks_mut(row_len).enumerate().for_each(body);
        } else {
            out.chunks_mut(row_len).enumerate().for_each(body);
        }
    }

    /// Milliseconds per call of the general and the blocked kernel on the depthwise layers of
    /// MobileNetV2 and EfficientNetB0 (`cargo test --release -p savedmodel-core --lib --
    /// --ignored bench_depthwise --nocapture`): the minimum and median of interleaved runs,
    /// so that other load on the machine hits both alike. DW_BATCH images, DW_THREADS threads
    /// (0: rayon's default), DW_LAYER=h,w,c,k,stride for one layer of that shape.
    #[test]
    #[ignore = "timing only"]
    fn bench_depthwise() {
        let batch: usize = std::env::var("DW_BATCH")
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(1);
        let layers: [([usize; 3], usize, usize); 16] = [
            ([112, 112, 32], 3, 1),
            ([112, 112, 96], 3, 2),
            ([56, 56, 144], 3, 1),
            ([56, 56, 144], 3, 2),
            ([28, 28, 192], 3, 1),
            ([28, 28, 192], 3, 2),
            ([14, 14, 384], 3, 1),
            ([14, 14, 576], 3, 1),
            ([14, 14, 576], 3, 2),
            ([7, 7, 960], 3, 1),
            ([112, 112, 32], 3, 1),
            ([56, 56, 144], 5, 2),
            ([28, 28, 240], 5, 1),
            ([14, 14, 480], 3, 1),
            ([14, 14, 672], 5, 1),
            ([7, 7, 1152], 5, 1),
        ];
        let threads = std::env::var("DW_THREADS")
            .ok()
            .and_then(|b| b.parse().ok())
            .unwrap_or(0);
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        // DW_LAYER=h,w,c,k,stride times that one layer instead.
        let one: Option<Vec<usize>> = std::env::var("DW_LAYER")
            .ok()
            .map(|v| v.split(',').filter_map(|d| d.parse().ok()).collect());
        let layers = match one.as_deref() {
            Some(&[h, w, c, k, stride]) => vec![([h, w, c], k, stride)],
            _ => layers.to_vec(),
        };
        pool.install(|| time_layers(batch, &layers));
    }

    fn time_layers(batch: usize, layers: &[([usize; 3], usize, usize)]) {
        let (mut old_total, mut new_total) = (0.0, 0.0);
        for &([h, w, c], k, stride) in layers {
            let s = spec(Padding::Same, stride, 1, [[0, 0]; 2]);
            let xs = [batch, h, w, c];
            let x = Tensor::from_vec(xs.to_vec(), values(xs.iter().product(), 1));
            let f = Tensor::from_vec(vec![k, k, c, 1], values(k * k * c, 2));
            let (g, _) = geometry(&s, &x, &f).unwrap();
            let (xv, fv) = (x.values::<f32>().unwrap(), f.values::<f32>().unwrap());
            let mut out = vec![0f32; g.out_shape().iter().product()];
            let reps = (2e8 / (out.len() * k * k) as f64).clamp(5.0, 200.0) as usize;
            let (mut old, mut new) = (vec![], vec![]);
            for _ in 0..reps {
                let start = std::time::Instant::now();
                general_direct(&g, xv, fv, &mut out);
                old.push(start.elapsed().as_secs_f64() * 1e3);
                let start = std::time::Instant::now();
                out = direct(&g, 1, xv, fv, &|_, _| {}).unwrap();
                new.push(start.elapsed().as_secs_f64() * 1e3);
            }
            let stats = |v: &mut Vec<f64>| {
                v.sort_by(f64::total_cmp);
                (v[0], v[v.len() / 2])
            };
            let ((old_min, old_p50), (new_min, new_p50)) = (stats(&mut old), stats(&mut new));
            old_total += old_min;
            new_total += new_min;
            println!(
                "{xs:?} k{k} /{stride}: general min {old_min:.3} p50 {old_p50:.3} ms, \
                 blocked min {new_min:.3} p50 {new_p50:.3} ms, x{:.2}",
                old_min / new_min
            );
        }
        println!("sum of minima: general {old_total:.3} ms, blocked {new_total:.3} ms");
    }
}
