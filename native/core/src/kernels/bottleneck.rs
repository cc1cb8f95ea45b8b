//! `_SavedModelBottleneck`: a depthwise convolution together with the pointwise (1x1)
//! convolutions around it, as MobileNetV2's inverted residual blocks chain them (expand,
//! depthwise, project, each a fused node with its bias and activation) and EfficientNet's up to
//! their squeeze-and-excitation (expand, depthwise). engine::fuse_block rewrites such chains
//! into one node that keeps each part's op and attributes under the part's name
//! (`expand/strides`, `depthwise/fused_ops`, ...) and takes the block's input, then each part's
//! other inputs in order.
//!
//! Why: the expanded activations are the largest tensors of these models (MobileNetV2's
//! second block expands 112x112x16 to 96 channels: 4.8 MB an image, 154 MB at batch 32),
//! and run op by op each is written to memory by one convolution and read back by the next.
//! Here the output is computed a band of rows at a time through all parts: the band's
//! expanded rows (the rows its windows read, those shared with the band before copied rather
//! than recomputed) and its depthwise rows stay in cache, and only the block's input and
//! output cross memory. Where that cannot gain (float types other than float32, a channel
//! multiplier, small images, passes other than bias, activation and residual) or does not
//! apply, the parts run one after another through their own kernels, as unfused.

use std::cell::Cell;
use std::collections::HashMap;
use std::mem::{take, MaybeUninit};
use std::ops::Range;
use std::sync::Arc;

use crate::dtype::DType;
use crate::engine::attrs::Attrs;
use crate::engine::context::RunContext;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, Kernel, NodeSpec, Registry};
use crate::engine::Value;
use crate::kernels::fused::{OutputPass, Patterns, RowPass};
use crate::kernels::nn::conv::{self, Geometry};
use crate::kernels::nn::depthwise::{self, blocked, geometry_of};
use crate::kernels::nn::gemm::{self, Layout, Product, PARALLEL_WORK};
use crate::kernels::nn::output::{written_chunks, zeroed, Split};
use crate::kernels::nn::prefetch::prefetch;
use crate::kernels::nn::{conv_spec, Spec};
use crate::protos::AttrValue;
use crate::tensor::Tensor;

mod channels;

pub const BOTTLENECK: &str = "_SavedModelBottleneck";

/// The parts a block may have, in the order they run (the depthwise one always).
pub const PARTS: [&str; 3] = ["expand", "depthwise", "project"];

/// Under a part's prefix: the attribute naming the part's op, and the one counting its inputs.
pub const PART_OP: &str = "_op";
pub const PART_INPUTS: &str = "_inputs";

/// The least size of an image's expanded activations (the depthwise part's input, or its
/// output when there is no expand part) for the banded path whatever the weights: a smaller
/// image stays in the second-level cache between the ops anyway, and gains only as below.
const MIN_BANDED_BYTES: usize = 512 << 10;

/// Smaller expanded images (down to this size) take the banded path when the pointwise
/// parts' weights are at most [`MAX_BANDED_WEIGHTS`] (every band reads them again, from the
/// second-level cache as long as they fit there) and the threads' shares compute at most a
/// sixth more expanded rows than the images have (see [`expanded_rows`]). MobileNetV2 at
/// batch 1 on a 2-vCPU Xeon with 2 MB of L2 a core (`savedmodel-run --bench 100 --profile`,
/// medians of five runs alternating with the build before, ms a call): its 14x14 blocks
/// (weights 197-590 KB, two bands of 7 rows computing 16 or 15 expanded rows of 14) 0.16-0.33
/// -> 0.13-0.27, about 0.3 ms a call in all; its 7x7 blocks in one-row bands (9 rows of 7)
/// and those with 1.2-1.8 MB of weights lost, as did EfficientNetB0's 14x14 blocks with a
/// 5x5 window (18 rows of 14). (Blocks with both 1x1 parts now go by channels there,
/// channels.rs.) At batch 32, whole images a band, MobileNetV2's 14x14 blocks at stride 1
/// (three runs of 10 calls, alternating) 3.7-7.5 -> 3.0-6.9 ms.
const MIN_SMALL_BANDED_BYTES: usize = 64 << 10;
const MAX_BANDED_WEIGHTS: usize = 1 << 20;

/// The least input (in bytes) for which a block without an expand part prefetches the next
/// band's input rows. Below it the input was just written and sits in the caches, where the
/// prefetch cost more than it saved: MobileNetV2's first block (112x112x32 to 16, `cargo test
/// --release -p savedmodel-core --test engine_bottleneck -- --ignored bench_block`, builds
/// alternating, on a Xeon with 2 MB of L2 a core) took 0.262 ms a call with it at batch 1,
/// 0.245 without (medians of 8 runs; without it faster in 7 of the 8 pairs); at batch 4
/// (6.4 MB) 1.01 and 0.96. From batch 8 on the runs disagreed.
const PREFETCH_BYTES: usize = 8 << 20;

/// The fewest output pixels per band: the pointwise parts are matrix products over a band's
/// pixels, which pack their weights once per band.
const BAND_PIXELS: usize = 192;

pub fn register(r: &mut Registry) {
    if r.contains("_FusedConv2D") && r.contains("_FusedDepthwiseConv2dNative") {
        r.add(BOTTLENECK, bottleneck);
    }
}

/// One part: its own kernel, its inputs other than the one the part before gives it, its
/// window, and its output pass when the banded path can run it.
struct Part {
    kernel: Box<dyn Kernel>,
    extra: usize,
    spec: Spec,
    pass: Option<OutputPass>,
}

/// The part `name` of the block `node`, None if the block has none.
fn part(node: &NodeSpec, name: &str) -> Result<Option<Part>, String> {
    let prefix = format!("{name}/");
    let map: HashMap<String, AttrValue> = node
        .attrs
        .map()
        .iter()
        .filter_map(|(k, v)| Some((k.strip_prefix(&prefix)?.to_string(), v.clone())))
        .collect();
    if map.is_empty() {
        return Ok(None);
    }
    let attrs = Attrs::new(&map);
    let op = attrs.string(PART_OP)?;
    let inputs = usize::try_from(attrs.int(PART_INPUTS)?)
        .ok()
        .filter(|&n| n >= 2)
        .ok_or_else(|| format!("the {name} part must take at least 2 inputs"))?;
    let registry = crate::kernels::registry();
    let info = registry
        .get(op)
        .ok_or_else(|| format!("no kernel for the {name} part's op {op}"))?;
    let window = conv_spec(&attrs)?;
    let spec = NodeSpec {
        name: node.name,
        op,
        attrs,
        num_inputs: inputs,
    };
    Ok(Some(Part {
        kernel: (info.factory)(&spec)?,
        extra: inputs - 1,
        spec: window,
        // A pass is run here only when the part's inputs are the ones it names (weights, bias
        // and a residual); any other part runs through its own kernel, which checks them.
        pass: OutputPass::of(&spec)?.filter(|p| inputs == 3 + usize::from(p.residual())),
    }))
}

struct Block {
    expand: Option<Part>,
    depthwise: Part,
    project: Option<Part>,
}

fn bottleneck(node: &NodeSpec) -> Result<Box<dyn Kernel>, String> {
    let [expand, depthwise, project] = PARTS.map(|name| part(node, name));
    let block = Block {
        expand: expand?,
        depthwise: depthwise?.ok_or("the block has no depthwise part")?,
        project: project?,
    };
    if block.expand.is_none() && block.project.is_none() {
        return Err("the block has no pointwise part".into());
    }
    let arity = 1 + block.parts().map(|p| p.extra).sum::<usize>();
    Ok(boxed(move |ctx, inputs| {
        if inputs.len() != arity {
            return Err(fail(format!("takes {arity} inputs, got {}", inputs.len())));
        }
        match block.banded(inputs)? {
            Some(out) => one(out),
            None => block.one_by_one(ctx, inputs),
        }
    }))
}

impl Block {
    fn parts(&self) -> impl Iterator<Item = &Part> {
        [
            self.expand.as_ref(),
            Some(&self.depthwise),
            self.project.as_ref(),
        ]
        .into_iter()
        .flatten()
    }

    /// Each part through its own kernel, the output of one the input of the next.
    fn one_by_one(&self, ctx: &RunContext, inputs: &[Value]) -> KResult {
        let (mut value, mut rest) = match inputs.split_first() {
            Some((x, rest)) => (x.clone(), rest),
            None => return Err(fail("the block has no input")),
        };
        for part in self.parts() {
            let (extra, others) = rest.split_at(part.extra.min(rest.len()));
            let mut feed = Vec::with_capacity(1 + extra.len());
            feed.push(value);
            feed.extend_from_slice(extra);
            let mut outputs = part.kernel.run(ctx, &feed)?;
            value = match (outputs.pop(), outputs.is_empty()) {
                (Some(v), true) => v,
                _ => return Err(fail("a part of the block gave other than one output")),
            };
            rest = others;
        }
        Ok(vec![value])
    }

    /// The block a band of output rows at a time, or for a small one a range of expanded
    /// channels a thread (channels.rs); None where neither applies or gains.
    fn banded(&self, inputs: &[Value]) -> KResult<Option<Tensor>> {
        let mut tensors = Vec::with_capacity(inputs.len());
        for i in 0..inputs.len() {
            let t = tensor_input(inputs, i)?;
            if t.dtype() != DType::Float32 {
                return Ok(None);
            }
            tensors.push(t);
        }
        let Some(shapes) = Shapes::of(self, &tensors) else {
            return Ok(None);
        };
        let mut fresh = [None, None, None];
        let [f0, f1, f2] = &mut fresh;
        let (c, at) = (shapes.g.c, 1 + self.expand.as_ref().map_or(0, |p| p.extra));
        let expand = match &self.expand {
            Some(part) => Some(stage(part, &tensors[1..], c, f0)?),
            None => None,
        };
        let depthwise = stage(&self.depthwise, &tensors[at..], c, f1)?;
        let project = match &self.project {
            Some(part) => {
                let at = at + self.depthwise.extra;
                Some(stage(part, &tensors[at..], shapes.output, f2)?)
            }
            None => None,
        };
        let run = Run {
            shapes,
            x: values(&tensors[0]),
            expand: expand.as_ref().map(|(w, pass, _)| (values(w), *pass)),
            depthwise: (values(&depthwise.0), depthwise.1),
            project: project.as_ref().map(|(w, pass, _)| (values(w), *pass)),
            residual: project
                .as_ref()
                .and_then(|(_, _, r)| r.as_deref())
                .map(values),
        };
        match shapes.by_channels {
            true => run.by_channels().map(Some),
            false => run.all().map(Some),
        }
    }
}

/// A part's weights, output pass (over `channels` channels) and residual input, from its
/// inputs other than the block's (`tensors`).
fn stage<'a>(
    part: &'a Part,
    tensors: &[Arc<Tensor>],
    channels: usize,
    fresh: &'a mut Option<Patterns>,
) -> KResult<(Arc<Tensor>, RowPass<'a>, Option<Arc<Tensor>>)> {
    let pass = part
        .pass
        .as_ref()
        .ok_or_else(|| fail("internal: no pass"))?;
    let [weights, bias, rest @ ..] = tensors else {
        return Err(fail("internal: a part without weights and bias"));
    };
    let residual = match (pass.residual(), rest.first()) {
        (true, Some(r)) => Some(Arc::clone(r)),
        (true, None) => return Err(fail("internal: no residual input")),
        (false, _) => None,
    };
    Ok((
        Arc::clone(weights),
        pass.rows(bias, channels, fresh)?,
        residual,
    ))
}

/// A float32 tensor's values (checked to be float32 before).
fn values(t: &Tensor) -> &[f32] {
    t.values::<f32>().unwrap_or(&[])
}

/// The block's sizes, when the banded path applies: the depthwise part's geometry (its
/// input the expanded image), the block's input and output channels, and the band's rows.
#[derive(Clone, Copy)]
struct Shapes {
    g: Geometry,
    input: usize,
    output: usize,
    band: usize,
    /// Whether the block goes by ranges of expanded channels (channels.rs), not bands.
    by_channels: bool,
}

impl Shapes {
    fn of(block: &Block, tensors: &[Arc<Tensor>]) -> Option<Shapes> {
        let &[n, h, w, input] = tensors.first()?.shape() else {
            return None;
        };
        let mut at = 1;
        let mut channels = input;
        if let Some(expand) = &block.expand {
            channels = pointwise(expand, tensors.get(at..)?, [n, h, w, input], false)?;
            at += expand.extra;
        }
        let depthwise = &block.depthwise;
        let simple = depthwise.pass.as_ref().is_some_and(|p| !p.residual());
        let filter = tensors.get(at)?.shape();
        let (g, multiplier) = geometry_of(&depthwise.spec, &[n, h, w, channels], filter).ok()?;
        if !simple || multiplier != 1 || depthwise.spec.channels_first {
            return None;
        }
        at += depthwise.extra;
        let mut output = channels;
        if let Some(project) = &block.project {
            let input = [n, g.rows.out, g.cols.out, channels];
            output = pointwise(project, tensors.get(at..)?, input, true)?;
            if project.pass.as_ref()?.residual() {
                let residual = tensors.get(at + 2)?.shape();
                if residual != [n, g.rows.out, g.cols.out, output] {
                    return None;
                }
            }
        }
        let image = if block.expand.is_some() {
            h.saturating_mul(w).saturating_mul(channels)
        } else {
            g.rows.out * g.cols.out * channels
        };
        // Empty outputs (a window larger than the image, no images) go the general way.
        if n * g.rows.out * g.cols.out == 0 {
            return None;
        }
        let band = band_rows(n, g.rows.out, g.cols.out);
        let mut shapes = Shapes {
            g,
            input,
            output,
            band,
            by_channels: false,
        };
        if channels::applies(&shapes, block.expand.is_some() && block.project.is_some()) {
            shapes.by_channels = true;
            return Some(shapes);
        }
        let weights = input.saturating_mul(channels) * usize::from(block.expand.is_some())
            + channels.saturating_mul(output) * usize::from(block.project.is_some());
        let bytes = |values: usize| values.saturating_mul(4);
        let small = bytes(image) >= MIN_SMALL_BANDED_BYTES
            && bytes(weights) <= MAX_BANDED_WEIGHTS
            && (block.expand.is_none() || expanded_rows(&g, band) * 6 <= n * g.h * 7);
        (bytes(image) >= MIN_BANDED_BYTES || small).then_some(shapes)
    }
}

/// The expanded input rows the banded path computes for bands of `band` output rows split
/// between the threads: each thread's first band of an image computes all the rows it
/// reads, the bands after it only those the band before did not read, so a thread's share
/// of an image costs the rows from its first band's first to its last band's last, and rows
/// read by two threads' bands are computed twice.
fn expanded_rows(g: &Geometry, band: usize) -> usize {
    let per_image = g.rows.out / band.max(1);
    let bands = g.n * per_image;
    let share = bands.div_ceil(rayon::current_num_threads().max(1)).max(1);
    let rows = |index: usize| {
        depthwise::band(g, index % per_image * band..(index % per_image + 1) * band).0
    };
    (0..bands)
        .step_by(share)
        .map(|start| {
            let end = (start + share).min(bands);
            (start..end)
                .filter(|&i| i == start || i % per_image == 0)
                .map(|first| {
                    let last = (first / per_image * per_image + per_image).min(end) - 1;
                    rows(last).end - rows(first).start
                })
                .sum::<usize>()
        })
        .sum()
}

/// Output rows per band: a divisor of the image's `oh` rows (so that every band lies in one
/// image), the fewest that make [`BAND_PIXELS`] pixels of `ow`, unless the `n` images would
/// then have fewer bands than there are threads: then the most that give every thread one
/// (MobileNetV2's 14x14 layers at batch 1 would otherwise run on one thread).
fn band_rows(n: usize, oh: usize, ow: usize) -> usize {
    let mut divisors = (1..=oh).filter(|d| oh.is_multiple_of(*d));
    let enough = divisors
        .clone()
        .find(|d| d * ow >= BAND_PIXELS)
        .unwrap_or(oh);
    let threads = rayon::current_num_threads().max(1);
    if n * (oh / enough.max(1)) >= threads {
        return enough;
    }
    divisors
        .rfind(|&d| n * (oh / d) >= threads)
        .unwrap_or(enough)
}

/// The output channels of a pointwise part reading `input` (NHWC; its weights first in
/// `tensors`), if it is a 1x1 window at stride 1 without padding, in one group, NHWC, with a
/// bias and activation pass (and a residual only where `residual_ok`).
fn pointwise(
    part: &Part,
    tensors: &[Arc<Tensor>],
    input: [usize; 4],
    residual_ok: bool,
) -> Option<usize> {
    let pass_ok = part
        .pass
        .as_ref()
        .is_some_and(|p| residual_ok || !p.residual());
    let g = conv::geometry_of(&part.spec, &input, tensors.first()?.shape()).ok()?;
    let whole = g.groups == 1 && g.o > 0 && !part.spec.channels_first;
    (pass_ok && whole && conv::is_pointwise(&g)).then_some(g.o)
}

/// One call of the banded path.
struct Run<'a> {
    shapes: Shapes,
    x: &'a [f32],
    expand: Option<(&'a [f32], RowPass<'a>)>,
    depthwise: (&'a [f32], RowPass<'a>),
    project: Option<(&'a [f32], RowPass<'a>)>,
    residual: Option<&'a [f32]>,
}

/// A share's buffers: the expanded input rows of its latest band (`rows` of `image`) and
/// the band's depthwise output, borrowed from the thread's [`KEPT`] buffers and given back
/// when the share is done.
struct Scratch {
    expanded: Vec<f32>,
    depthwise: Vec<f32>,
    image: Option<usize>,
    rows: Range<usize>,
}

thread_local! {
    /// Each thread's scratch buffers between calls (the largest a block has needed on it: a
    /// few hundred KB). New ones for every call and share had to be allocated and zeroed:
    /// about 6 MB a call for MobileNetV2 at batch 1, whose call takes 6-9 ms.
    static KEPT: [Cell<Vec<f32>>; 2] = const { [Cell::new(Vec::new()), Cell::new(Vec::new())] };
}

impl Scratch {
    /// Buffers of at least these lengths (their contents not meaningful).
    fn new(expanded: usize, depthwise: usize) -> Scratch {
        let lend = |kept: &Cell<Vec<f32>>, len: usize| {
            let mut buffer = kept.take();
            if buffer.len() < len {
                buffer.resize(len, 0.0);
            }
            buffer
        };
        let [expanded, depthwise] = KEPT.with(|[a, b]| [lend(a, expanded), lend(b, depthwise)]);
        Scratch {
            expanded,
            depthwise,
            image: None,
            rows: 0..0,
        }
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let buffers = [take(&mut self.expanded), take(&mut self.depthwise)];
        // A thread that is exiting has no buffers to keep; the error is that.
        let _ = KEPT.try_with(|kept| {
            for (cell, buffer) in kept.iter().zip(buffers) {
                cell.set(buffer);
            }
        });
    }
}

impl Run<'_> {
    fn all(&self) -> KResult<Tensor> {
        let Shapes {
            g, output, band, ..
        } = self.shapes;
        let [n, oh, ow, _] = g.out_shape();
        let chunk = band * ow * output;
        let count = n * oh * ow * output;
        let chunks = count / chunk.max(1);
        let threads = rayon::current_num_threads().max(1);
        let work = count
            .saturating_mul(g.c)
            .saturating_mul(g.kh * g.kw + self.shapes.input);
        let parallel = work >= PARALLEL_WORK && threads > 1 && chunks > 1;
        let split = Split {
            count,
            chunk,
            share: chunks.div_ceil(if parallel { threads } else { 1 }) * chunk,
            parallel,
        };
        let reach = ((band - 1) * g.rows.stride + (g.kh - 1) * g.rows.dilation + 1).min(g.h);
        let expanded = if self.expand.is_some() {
            reach * g.w * g.c
        } else {
            0
        };
        let depthwise = if self.project.is_some() {
            band * ow * g.c
        } else {
            0
        };
        let init = || Scratch::new(expanded, depthwise);
        let out = written_chunks(split, init, |scratch, first, out| {
            self.band(scratch, first, out)
        })?;
        Ok(Tensor::from_vec(vec![n, oh, ow, output], out))
    }

    /// The output band starting at element `first`.
    fn band<'o>(
        &self,
        scratch: &mut Scratch,
        first: usize,
        out: &'o mut [MaybeUninit<f32>],
    ) -> KResult<&'o mut [f32]> {
        let Shapes {
            g, output, band, ..
        } = self.shapes;
        let (oh, ow) = (g.rows.out, g.cols.out);
        let index = first / (band * ow * output);
        let bands = oh / band;
        let (image, top) = (index / bands, (index % bands) * band);
        let (rows, geometry) = depthwise::band(&g, top..top + band);
        let line = g.w * g.c;
        let plane = match self.expand {
            Some(expand) => {
                self.expand_rows(scratch, expand, image, rows.clone())?;
                &scratch.expanded[..rows.len() * line]
            }
            None => {
                self.prefetch_next(image, top + band, rows.end);
                &self.x[(image * g.h + rows.start) * line..][..rows.len() * line]
            }
        };
        let (filter, pass) = self.depthwise;
        let depthwise_rows = |values: &mut [f32]| {
            for (oy, row) in values.chunks_exact_mut(ow * g.c).enumerate() {
                blocked::row(&geometry, plane, filter, 0, oy, row);
                pass.apply(row, None);
            }
        };
        let Some((weights, pass)) = self.project else {
            let out = zeroed(out);
            depthwise_rows(out);
            return Ok(out);
        };
        let middle = &mut scratch.depthwise[..band * ow * g.c];
        depthwise_rows(middle);
        let product = Product {
            m: band * ow,
            n: output,
            k: g.c,
            a: Layout::rows(0, g.c),
            b: Layout::rows(0, output),
            dst: Layout::rows(0, output),
        };
        let out = gemm::fast_into(&product, middle, weights, out, false)?;
        let residual = self.residual.map(|r| &r[first..first + out.len()]);
        pass.apply(out, residual);
        Ok(out)
    }

    /// Starts loading the input rows that the band of output rows from `top` of `image` reads
    /// and the band before did not (from `held` on), when the input is larger than
    /// [`PREFETCH_BYTES`]: read in place from memory, they arrive while this band is computed
    /// (as the depthwise kernel's own prefetch does).
    fn prefetch_next(&self, image: usize, top: usize, held: usize) {
        let g = self.shapes.g;
        if top >= g.rows.out || self.x.len() * 4 <= PREFETCH_BYTES {
            return;
        }
        let (rows, _) = depthwise::band(&g, top..top + self.shapes.band);
        let line = g.w * g.c;
        let start = (image * g.h + rows.start.max(held)) * line;
        if let Some(values) = self.x.get(start..(image * g.h + rows.end) * line) {
            prefetch(values);
        }
    }

    /// Leaves the expanded input rows `rows` of `image` at the start of the scratch buffer:
    /// those the band before also read moved there, the others computed.
    fn expand_rows(
        &self,
        scratch: &mut Scratch,
        (weights, pass): (&[f32], RowPass),
        image: usize,
        rows: Range<usize>,
    ) -> KResult<()> {
        let g = self.shapes.g;
        let line = g.w * g.c;
        let held = &scratch.rows;
        let kept = match scratch.image == Some(image) && held.contains(&rows.start) {
            true => rows.start..held.end.min(rows.end),
            false => rows.start..rows.start,
        };
        if !kept.is_empty() {
            let from = (kept.start - held.start) * line;
            scratch
                .expanded
                .copy_within(from..from + kept.len() * line, 0);
        }
        let fresh = kept.end..rows.end;
        if !fresh.is_empty() {
            let input = self.shapes.input;
            let product = Product {
                m: fresh.len() * g.w,
                n: g.c,
                k: input,
                a: Layout::rows((image * g.h + fresh.start) * g.w * input, input),
                b: Layout::rows(0, g.c),
                dst: Layout::rows(0, g.c),
            };
            let dst = &mut scratch.expanded[kept.len() * line..rows.len() * line];
            gemm::fast(&product, self.x, weights, dst, false)?;
            pass.apply(dst, None);
        }
        scratch.image = Some(image);
        scratch.rows = rows;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::nn::bench::spec;

    /// The rows two threads' shares compute for a depthwise window of `k` at `stride` on `n`
    /// images of `hw` x `hw`, with the bands `band_rows` picks.
    fn rows_on_two_threads(n: usize, hw: usize, k: usize, stride: usize) -> usize {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(2)
            .build()
            .expect("pool");
        pool.install(|| {
            let (g, _) = geometry_of(&spec(stride), &[n, hw, hw, 8], &[k, k, 8, 1]).unwrap();
            expanded_rows(&g, band_rows(n, g.rows.out, g.cols.out))
        })
    }

    #[test]
    fn expanded_rows_count_the_rows_both_threads_compute() {
        // One 14x14 image in two bands of 7 rows: a 3x3 window reads one row beyond each
        // band's, a 5x5 two (SAME padding covers the image's edges).
        assert_eq!(rows_on_two_threads(1, 14, 3, 1), 16);
        assert_eq!(rows_on_two_threads(1, 14, 5, 1), 18);
        // Stride 2 to 7x7 (no padding above): output rows 0-3 read input rows 0-8, rows 4-6
        // read 8-13.
        assert_eq!(rows_on_two_threads(1, 14, 3, 2), 15);
        // 7x7 in one-row bands, four on one thread and three on the other.
        assert_eq!(rows_on_two_threads(1, 7, 3, 1), 9);
        // Whole images a band: nothing read twice.
        assert_eq!(rows_on_two_threads(4, 14, 3, 1), 56);
        // Three 56x56 images at stride 2, four bands of 7 output rows each, six bands a
        // thread: the second image's first two bands (input rows 0-28) on one thread, its
        // last two (rows 28-55) on the other.
        assert_eq!(rows_on_two_threads(3, 56, 3, 2), 56 + 29 + 28 + 56);
    }
}
