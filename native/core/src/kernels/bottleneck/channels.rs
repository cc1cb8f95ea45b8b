//! A small block split between the threads by its expanded channels. Each thread takes a
//! range of them through all three parts: the expand product's columns for those channels,
//! their depthwise convolution, and the project product over those channels only (a partial
//! sum of every output); the partial sums are added and the project's pass runs once.
//!
//! Why: at batch 1 the blocks of MobileNetV2's last stages have a few hundred KB of expanded
//! activations, too few rows to share out as bands (a 7x7 image in bands of one row computes
//! each thread's edge rows twice) and too little work per part for a fork and join each.
//! Depthwise convolutions work channel by channel, so a range of channels needs nothing from
//! the other threads until the project's partial sums; each thread reads its share of both
//! weight matrices once. MobileNetV2 at batch 1 on a 2-vCPU Xeon (`savedmodel-run --bench
//! 100 --profile`, medians of six runs alternating with the build before, ms a call): its
//! 7x7 blocks 0.23-0.30 -> 0.19-0.27 (they had run part by part), the 14x14 one at stride 2
//! 0.19 -> 0.17, the 14x14 ones at stride 1 as in bands; the nodes' sum 4.52 -> 4.27.

use std::ops::Range;

use rayon::prelude::*;

use super::{Run, Shapes};
use crate::engine::kernel::{fail, KResult};
use crate::kernels::nn::conv::Geometry;
use crate::kernels::nn::depthwise::blocked;
use crate::kernels::nn::gemm::{self, Layout, Product, PARALLEL_WORK};
use crate::kernels::nn::kept::Kept;
use crate::kernels::nn::output::{written_chunks, Split};
use crate::tensor::Tensor;

/// Expanded channels of a share are a multiple of this (one AVX-512 vector of float32).
const GRAIN: usize = 16;

/// The most expanded activations (all images, bytes) the split takes: each thread's range of
/// them and of the depthwise output stay in its second-level cache.
const MAX_BYTES: usize = 512 << 10;

/// Whether a block of these shapes, with both pointwise parts, goes by channels: on two or
/// more threads, with at least two grains of channels a thread, all its images' expanded
/// activations at most [`MAX_BYTES`], and work enough for threads.
pub(super) fn applies(shapes: &Shapes, both_parts: bool) -> bool {
    let g = &shapes.g;
    let threads = rayon::current_num_threads();
    let expanded = g.n.saturating_mul(g.h * g.w).saturating_mul(g.c);
    let outputs = g.n.saturating_mul(g.rows.out * g.cols.out);
    let work = expanded
        .saturating_mul(shapes.input)
        .saturating_add(outputs.saturating_mul(g.c).saturating_mul(shapes.output));
    both_parts
        && threads >= 2
        && g.c >= threads * 2 * GRAIN
        && expanded.saturating_mul(4) <= MAX_BYTES
        && work >= PARALLEL_WORK
}

impl Run<'_> {
    /// The block's output, its expanded channels shared out between the threads.
    pub(super) fn by_channels(&self) -> KResult<Tensor> {
        let Shapes { g, output, .. } = self.shapes;
        let (Some(_), Some((_, pass))) = (self.expand, self.project) else {
            return Err(fail(
                "internal: a block split by channels needs both pointwise parts",
            ));
        };
        let threads = rayon::current_num_threads().max(1);
        let per = g.c.div_ceil(threads).next_multiple_of(GRAIN);
        let ranges: Vec<Range<usize>> = (0..g.c)
            .step_by(per)
            .map(|start| start..(start + per).min(g.c))
            .collect();
        let mut partials = ranges
            .into_par_iter()
            .map(|range| self.partial(range))
            .collect::<KResult<Vec<Vec<f32>>>>()?
            .into_iter();
        let mut out = partials
            .next()
            .ok_or_else(|| fail("internal: a block split into no shares"))?;
        for partial in partials {
            for (o, p) in out.iter_mut().zip(&partial) {
                *o += p;
            }
        }
        pass.apply(&mut out, self.residual);
        let [n, oh, ow, _] = g.out_shape();
        Ok(Tensor::from_vec(vec![n, oh, ow, output], out))
    }

    /// The project product over expanded channels `range` only (before bias and residual).
    fn partial(&self, range: Range<usize>) -> KResult<Vec<f32>> {
        let Shapes {
            g, input, output, ..
        } = self.shapes;
        let (Some((expand, expand_pass)), Some((project, _))) = (self.expand, self.project) else {
            return Err(fail(
                "internal: a block split by channels needs both pointwise parts",
            ));
        };
        let width = range.len();
        let pixels = g.n * g.h * g.w;
        let mut expanded = Kept::new(pixels * width)?;
        let product = Product {
            m: pixels,
            n: width,
            k: input,
            a: Layout::rows(0, input),
            b: Layout::rows(range.start, g.c),
            dst: Layout::rows(0, width),
        };
        gemm::fast(&product, self.x, expand, &mut expanded, false)?;
        expand_pass.part(range.clone())?.apply(&mut expanded, None);

        let (weights, pass) = self.depthwise;
        let filter: Vec<f32> = weights
            .chunks_exact(g.c)
            .flat_map(|tap| &tap[range.clone()])
            .copied()
            .collect();
        let geometry = Geometry {
            c: width,
            o: width,
            ..g
        };
        let (oh, ow) = (g.rows.out, g.cols.out);
        let mut middle = Kept::new(g.n * oh * ow * width)?;
        let pass = pass.part(range.clone())?;
        for (index, row) in middle.chunks_exact_mut(ow * width).enumerate() {
            blocked::row(&geometry, &expanded, &filter, index / oh, index % oh, row);
            pass.apply(row, None);
        }

        let product = Product {
            m: g.n * oh * ow,
            n: output,
            k: width,
            a: Layout::rows(0, width),
            b: Layout::rows(range.start * output, output),
            dst: Layout::rows(0, output),
        };
        // Written by the product itself, not zeroed first.
        let count = g.n * oh * ow * output;
        let whole = Split {
            count,
            chunk: count,
            share: count,
            parallel: false,
        };
        written_chunks(
            whole,
            || (),
            |_, _, out| gemm::fast_into(&product, &middle, project, out, false),
        )
    }
}
