//! Reductions over a set of axes (Sum, Prod, Max, Min, Mean, All, Any) and L2Loss. Results
//! keep the input's dtype: integer sums and products wrap in it, half types accumulate in f32
//! and round once, an empty reduction gives the identity (Max -inf or the minimum integer,
//! Mean NaN for floats and 0 for integers).
//!
//! The input is seen as alternating blocks of kept and reduced axes (size-1 axes dropped,
//! neighbours merged), and reduced recursively block by block, so that reducing the last axis
//! folds contiguous rows and reducing middle axes (global pooling) adds contiguous rows into
//! the output: both vectorize.

use num_complex::Complex;

use rayon::prelude::*;

use super::num::{real_map, Int, Real, PARALLEL_MIN};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{f32_to_half, half_to_f32, int_values, make};
use crate::tensor::{Storage, Tensor};

#[derive(Clone, Copy, PartialEq)]
enum Op {
    Sum,
    Prod,
    Max,
    Min,
    Mean,
    All,
    Any,
}

pub fn register(r: &mut Registry) {
    r.add("Sum", |s| factory(s, Op::Sum));
    r.add("Prod", |s| factory(s, Op::Prod));
    r.add("Max", |s| factory(s, Op::Max));
    r.add("Min", |s| factory(s, Op::Min));
    r.add("Mean", |s| factory(s, Op::Mean));
    r.add("All", |s| factory(s, Op::All));
    r.add("Any", |s| factory(s, Op::Any));
    r.add("L2Loss", |_| {
        Ok(boxed(|_ctx, inputs| {
            one(l2_loss(tensor_input(inputs, 0)?.as_ref())?)
        }))
    });
}

fn factory(spec: &NodeSpec, op: Op) -> Result<Box<dyn crate::engine::Kernel>, String> {
    let keep_dims = spec.attrs.bool_or("keep_dims", false)?;
    Ok(boxed(move |_ctx, inputs| {
        let x = tensor_input(inputs, 0)?;
        let axes = tensor_input(inputs, 1)?;
        one(reduce(&x, &axes, op, keep_dims)?)
    }))
}

/// Which axes a reduction's axis tensor names: negative ones count from the end; out of range
/// and repeated axes are errors, as in TensorFlow.
fn reduced_mask(axes: &Tensor, rank: usize) -> KResult<Vec<bool>> {
    let mut mask = vec![false; rank];
    for value in int_values(axes, "reduction axes")? {
        let r = rank as i64;
        if value < -r || value >= r {
            return Err(fail(format!(
                "Invalid reduction dimension ({value} for input with {rank} dimension(s)"
            )));
        }
        let axis = if value < 0 { value + r } else { value } as usize;
        if mask[axis] {
            return Err(fail(format!(
                "Invalid reduction arguments: Axes contains duplicate dimension: {axis}"
            )));
        }
        mask[axis] = true;
    }
    Ok(mask)
}

/// The reduction's plan: output shape, output count, and the (size, reduced) blocks.
struct Plan {
    shape: Vec<usize>,
    out_len: usize,
    /// How many input elements each output combines.
    count: usize,
    blocks: Vec<(usize, bool)>,
}

fn plan(dims: &[usize], mask: &[bool], keep_dims: bool) -> Plan {
    let mut shape = Vec::new();
    let mut blocks: Vec<(usize, bool)> = Vec::new();
    let (mut out_len, mut count) = (1usize, 1usize);
    for (&d, &reduced) in dims.iter().zip(mask) {
        if reduced {
            count *= d;
            if keep_dims {
                shape.push(1);
            }
        } else {
            out_len *= d;
            shape.push(d);
        }
        if d == 1 {
            continue;
        }
        match blocks.last_mut() {
            Some((size, r)) if *r == reduced => *size *= d,
            _ => blocks.push((d, reduced)),
        }
    }
    Plan {
        shape,
        out_len,
        count,
        blocks,
    }
}

fn reduce(x: &Tensor, axes: &Tensor, op: Op, keep_dims: bool) -> KResult<Tensor> {
    let mask = reduced_mask(axes, x.rank())?;
    let p = plan(x.shape(), &mask, keep_dims);
    let storage = if x.is_empty() {
        empty_result(x, op, p.out_len)?
    } else {
        compute(x, op, &p)?
    };
    make(p.shape, storage)
}

/// `f` folded over `x` into `out` (which starts at the identity, `init`) block by block.
fn fold_blocks<T: Copy + Send + Sync>(
    x: &[T],
    blocks: &[(usize, bool)],
    out: &mut [T],
    init: T,
    f: &(impl Fn(T, T) -> T + Sync),
) {
    let Some((&(n, reduced), rest)) = blocks.split_first() else {
        if let (Some(o), Some(&v)) = (out.first_mut(), x.first()) {
            *o = f(*o, v);
        }
        return;
    };
    if rest.is_empty() {
        if reduced {
            if let Some(o) = out.first_mut() {
                *o = fold_row(*o, x, f);
            }
        } else {
            out.iter_mut().zip(x).for_each(|(o, &v)| *o = f(*o, v));
        }
        return;
    }
    let inner_in = x.len() / n;
    if let (true, [(_, false)]) = (reduced, rest) {
        fold_rows(x, inner_in, out, init, f);
        return;
    }
    let inner_out = if reduced { out.len() } else { out.len() / n };
    for (i, sub) in x.chunks_exact(inner_in).enumerate() {
        let at = if reduced { 0 } else { i * inner_out };
        fold_blocks(sub, rest, &mut out[at..at + inner_out], init, f);
    }
}

/// Rows of `width` values folded into one (a global average pooling's pixels into its
/// channels). A large input is cut into [`PARTS`] runs of rows, each folded from `init` on a
/// thread of its own, and the parts' results folded into `out` in order: each thread reads
/// only its rows, which the op before most likely wrote from the same core (split by columns,
/// each thread read every row, half of them from the other core's cache: EfficientNetB0's
/// squeeze-and-excite Means took 3-4x onnxruntime's time). The parts do not depend on the
/// thread count, so neither does the result.
fn fold_rows<T: Copy + Send + Sync>(
    x: &[T],
    width: usize,
    out: &mut [T],
    init: T,
    f: &(impl Fn(T, T) -> T + Sync),
) {
    let rows = x.len() / width.max(1);
    if x.len() < PARALLEL_MIN || rows < PARTS {
        fold_columns(x, width, out, f);
        return;
    }
    let part = rows.div_ceil(PARTS) * width;
    let partials: Vec<Vec<T>> = x
        .par_chunks(part)
        .map(|rows| {
            let mut partial = vec![init; width];
            fold_columns(rows, width, &mut partial, f);
            partial
        })
        .collect();
    for partial in partials {
        out.iter_mut().zip(partial).for_each(|(o, v)| *o = f(*o, v));
    }
}

/// How many runs of rows a large [`fold_rows`] folds separately.
const PARTS: usize = 8;

/// [`fold_rows`] on one thread, in the rows' order. Blocks of `BLOCK` columns keep their sums
/// in registers over all the rows; one row at a time, each sum went through memory (a store,
/// then a load of it for the next row: keras_cnn's Mean took 3x onnxruntime's time).
fn fold_columns<T: Copy>(x: &[T], width: usize, out: &mut [T], f: &impl Fn(T, T) -> T) {
    const BLOCK: usize = 16;
    let whole = out.len() / BLOCK * BLOCK;
    let (blocks, tail) = out.split_at_mut(whole);
    for (b, block) in blocks.chunks_exact_mut(BLOCK).enumerate() {
        let mut sums: [T; BLOCK] = std::array::from_fn(|k| block[k]);
        for row in x.chunks_exact(width) {
            if let Some(values) = row[b * BLOCK..].first_chunk::<BLOCK>() {
                for (s, &v) in sums.iter_mut().zip(values) {
                    *s = f(*s, v);
                }
            }
        }
        block.copy_from_slice(&sums);
    }
    for row in x.chunks_exact(width) {
        for (o, &v) in tail.iter_mut().zip(&row[whole..]) {
            *o = f(*o, v);
        }
    }
}

/// A row folded with eight independent accumulators (which vectorizes, and for float sums
/// rounds less than one running total).
fn fold_row<T: Copy>(acc: T, row: &[T], f: &impl Fn(T, T) -> T) -> T {
    if row.len() < 32 {
        return row.iter().fold(acc, |a, &v| f(a, v));
    }
    let chunks = row.chunks_exact(8);
    let tail = chunks.remainder();
    let mut lanes: [T; 8] = std::array::from_fn(|i| row[i]);
    for c in chunks.skip(1) {
        for k in 0..8 {
            lanes[k] = f(lanes[k], c[k]);
        }
    }
    let total = lanes.iter().fold(acc, |a, &v| f(a, v));
    tail.iter().fold(total, |a, &v| f(a, v))
}

fn fold_all<T: Copy + Send + Sync>(
    x: &[T],
    p: &Plan,
    init: T,
    f: impl Fn(T, T) -> T + Sync,
) -> Vec<T> {
    let mut out = vec![init; p.out_len];
    fold_blocks(x, &p.blocks, &mut out, init, &f);
    out
}

fn real_reduce<T: Real>(x: &[T], op: Op, p: &Plan) -> Vec<T> {
    match op {
        Op::Sum => fold_all(x, p, T::zero(), |a, b| a + b),
        Op::Mean => {
            let n = T::of(p.count as f64);
            let mut sums = fold_all(x, p, T::zero(), |a, b| a + b);
            sums.iter_mut().for_each(|s| *s = *s / n);
            sums
        }
        Op::Prod => fold_all(x, p, T::one(), |a, b| a * b),
        Op::Max => fold_all(x, p, T::neg_infinity(), |a, b| {
            if b > a || b.is_nan() {
                b
            } else {
                a
            }
        }),
        _ => fold_all(
            x,
            p,
            T::infinity(),
            |a, b| if b < a || b.is_nan() { b } else { a },
        ),
    }
}

fn int_reduce<T: Int>(x: &[T], op: Op, p: &Plan) -> Vec<T> {
    match op {
        Op::Sum => fold_all(x, p, T::ZERO, Int::wadd),
        Op::Prod => fold_all(x, p, T::ONE, Int::wmul),
        Op::Max => fold_all(x, p, T::MIN, Ord::max),
        Op::Min => fold_all(x, p, T::MAX, Ord::min),
        _ => int_mean(x, p),
    }
}

/// TensorFlow sums integers in 64 bits (wrapping) and divides toward zero.
fn int_mean<T: Int>(x: &[T], p: &Plan) -> Vec<T> {
    let signed = T::MIN != T::ZERO;
    let n = p.count as i128;
    if n == 0 {
        return vec![T::ZERO; p.out_len];
    }
    if signed {
        let wide: Vec<i64> = x.iter().map(|v| v.as_i128() as i64).collect();
        let sums = fold_all(&wide, p, 0, i64::wrapping_add);
        sums.iter().map(|&s| T::wrap(i128::from(s) / n)).collect()
    } else {
        let wide: Vec<u64> = x.iter().map(|v| v.as_i128() as u64).collect();
        let sums = fold_all(&wide, p, 0, u64::wrapping_add);
        sums.iter().map(|&s| T::wrap(i128::from(s) / n)).collect()
    }
}

fn complex_reduce<T: Real>(x: &[[T; 2]], op: Op, p: &Plan) -> Option<Vec<[T; 2]>> {
    let z: Vec<Complex<T>> = x.iter().map(|c| Complex::new(c[0], c[1])).collect();
    let out = match op {
        Op::Sum => fold_all(&z, p, Complex::new(T::zero(), T::zero()), |a, b| a + b),
        Op::Prod => fold_all(&z, p, Complex::new(T::one(), T::zero()), |a, b| a * b),
        Op::Mean => {
            let n = T::of(p.count as f64);
            let sums = fold_all(&z, p, Complex::new(T::zero(), T::zero()), |a, b| a + b);
            sums.into_iter().map(|s| s / n).collect()
        }
        _ => return None,
    };
    Some(out.into_iter().map(|c| [c.re, c.im]).collect())
}

fn compute(x: &Tensor, op: Op, p: &Plan) -> KResult<Storage> {
    let boolean = matches!(op, Op::All | Op::Any);
    let storage = match x.storage() {
        Storage::Bool(v) if boolean => Some(Storage::Bool(if op == Op::All {
            fold_all(v, p, true, |a, b| a && b)
        } else {
            fold_all(v, p, false, |a, b| a || b)
        })),
        _ if boolean => None,
        Storage::Float32(v) => Some(Storage::Float32(real_reduce(v, op, p))),
        Storage::Float64(v) => Some(Storage::Float64(real_reduce(v, op, p))),
        Storage::Float16(_) | Storage::BFloat16(_) => {
            let wide = half_to_f32(x).unwrap_or_default();
            f32_to_half(x.dtype(), &real_reduce(&wide, op, p))
        }
        Storage::Int8(v) => Some(Storage::Int8(int_reduce(v, op, p))),
        Storage::Int16(v) => Some(Storage::Int16(int_reduce(v, op, p))),
        Storage::Int32(v) => Some(Storage::Int32(int_reduce(v, op, p))),
        Storage::Int64(v) => Some(Storage::Int64(int_reduce(v, op, p))),
        Storage::UInt8(v) => Some(Storage::UInt8(int_reduce(v, op, p))),
        Storage::UInt16(v) => Some(Storage::UInt16(int_reduce(v, op, p))),
        Storage::UInt32(v) => Some(Storage::UInt32(int_reduce(v, op, p))),
        Storage::UInt64(v) => Some(Storage::UInt64(int_reduce(v, op, p))),
        Storage::Complex64(v) => complex_reduce(v, op, p).map(Storage::Complex64),
        Storage::Complex128(v) => complex_reduce(v, op, p).map(Storage::Complex128),
        _ => None,
    };
    storage.ok_or_else(|| {
        fail(format!(
            "this reduction does not support {} inputs",
            x.dtype()
        ))
    })
}

/// An empty input: every output is the identity (Mean: NaN for floats, 0 for integers).
fn empty_result(x: &Tensor, op: Op, n: usize) -> KResult<Storage> {
    let nothing = Plan {
        shape: Vec::new(),
        out_len: n,
        count: 0,
        blocks: Vec::new(),
    };
    compute(x, op, &nothing)
}

/// sum(t²) / 2 as a scalar, half types accumulated in f32.
fn l2_loss(t: &Tensor) -> KResult<Tensor> {
    let storage = real_map!(t, |v| vec![half_square_sum(v)])
        .ok_or_else(|| fail(format!("L2Loss does not support {} inputs", t.dtype())))?;
    make(Vec::new(), storage)
}

fn half_square_sum<T: Real>(v: &[T]) -> T {
    let squares: Vec<T> = v.iter().map(|&x| x * x).collect();
    fold_row(T::zero(), &squares, &|a, b| a + b) / (T::one() + T::one())
}
