//! Segment reductions (Segment*, UnsortedSegment*, SparseSegment*), the ops behind embedding
//! combiners and ragged reductions.
//!
//! Rows of `data` go to segments by id; each segment folds its rows in order. Values are
//! widened once (floats to f64, integers to i64 with wrapping arithmetic, which narrows back
//! to the same bits as TensorFlow's wrapping in the narrow type, complex to f64 pairs) and
//! narrowed once at the end: float16 and bfloat16 thus accumulate wider than TensorFlow's
//! float32, within its tolerance. An empty segment of a sorted op is 0 (1 for products); of an
//! unsorted one its reduction's identity (0, 1, the dtype's lowest for max, highest for min).
//! Unsorted ops drop rows with negative ids; sorted ops reject ids that are negative or
//! decrease. Max and min fold `acc = max(row, acc)` as C++'s `std::max` computes it, so a NaN
//! row makes the accumulator NaN and the next row replaces it, as TensorFlow's CPU kernels do.

use super::Made;
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult};
use crate::engine::Registry;
use crate::kernels::util::{f32_to_half, half_to_f32, int_values, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("SegmentSum", |_| sorted_op(Red::Sum));
    r.add("SegmentMean", |_| sorted_op(Red::Mean));
    r.add("SegmentProd", |_| sorted_op(Red::Prod));
    r.add("SegmentMax", |_| sorted_op(Red::Max));
    r.add("SegmentMin", |_| sorted_op(Red::Min));
    r.add("UnsortedSegmentSum", |_| unsorted_op(Red::Sum));
    r.add("UnsortedSegmentProd", |_| unsorted_op(Red::Prod));
    r.add("UnsortedSegmentMax", |_| unsorted_op(Red::Max));
    r.add("UnsortedSegmentMin", |_| unsorted_op(Red::Min));
    r.add("SparseSegmentSum", |_| sparse_op(Scale::Sum, false));
    r.add("SparseSegmentMean", |_| sparse_op(Scale::Mean, false));
    r.add("SparseSegmentSqrtN", |_| sparse_op(Scale::SqrtN, false));
    r.add("SparseSegmentSumWithNumSegments", |_| {
        sparse_op(Scale::Sum, true)
    });
    r.add("SparseSegmentMeanWithNumSegments", |_| {
        sparse_op(Scale::Mean, true)
    });
    r.add("SparseSegmentSqrtNWithNumSegments", |_| {
        sparse_op(Scale::SqrtN, true)
    });
}

#[derive(Clone, Copy, PartialEq)]
enum Red {
    Sum,
    Mean,
    Prod,
    Max,
    Min,
}

#[derive(Clone, Copy, PartialEq)]
enum Scale {
    Sum,
    Mean,
    SqrtN,
}

/// One widened element type.
pub(super) trait Elem: Copy {
    fn zero() -> Self;
    fn one() -> Self;
    fn add(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `std::max(row = o, acc = self)`.
    fn max_fold(self, o: Self) -> Self;
    fn min_fold(self, o: Self) -> Self;
    fn div_count(self, n: f64) -> Self;
}

impl Elem for f64 {
    fn zero() -> Self {
        0.0
    }
    fn one() -> Self {
        1.0
    }
    fn add(self, o: Self) -> Self {
        self + o
    }
    fn mul(self, o: Self) -> Self {
        self * o
    }
    fn max_fold(self, o: Self) -> Self {
        if o < self {
            self
        } else {
            o
        }
    }
    fn min_fold(self, o: Self) -> Self {
        if self < o {
            self
        } else {
            o
        }
    }
    fn div_count(self, n: f64) -> Self {
        self / n
    }
}

impl Elem for i64 {
    fn zero() -> Self {
        0
    }
    fn one() -> Self {
        1
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    fn max_fold(self, o: Self) -> Self {
        self.max(o)
    }
    fn min_fold(self, o: Self) -> Self {
        self.min(o)
    }
    fn div_count(self, n: f64) -> Self {
        // Counts are exact in f64 far beyond any row count; the division truncates as C++'s.
        self / (n as i64).max(1)
    }
}

impl Elem for u64 {
    fn zero() -> Self {
        0
    }
    fn one() -> Self {
        1
    }
    fn add(self, o: Self) -> Self {
        self.wrapping_add(o)
    }
    fn mul(self, o: Self) -> Self {
        self.wrapping_mul(o)
    }
    fn max_fold(self, o: Self) -> Self {
        self.max(o)
    }
    fn min_fold(self, o: Self) -> Self {
        self.min(o)
    }
    fn div_count(self, n: f64) -> Self {
        self / (n as u64).max(1)
    }
}

impl Elem for [f64; 2] {
    fn zero() -> Self {
        [0.0; 2]
    }
    fn one() -> Self {
        [1.0, 0.0]
    }
    fn add(self, o: Self) -> Self {
        [self[0] + o[0], self[1] + o[1]]
    }
    fn mul(self, o: Self) -> Self {
        [
            self[0] * o[0] - self[1] * o[1],
            self[0] * o[1] + self[1] * o[0],
        ]
    }
    fn max_fold(self, _: Self) -> Self {
        self
    }
    fn min_fold(self, _: Self) -> Self {
        self
    }
    fn div_count(self, n: f64) -> Self {
        [self[0] / n, self[1] / n]
    }
}

/// A tensor's values widened.
pub(super) enum Wide {
    F(Vec<f64>),
    I(Vec<i64>),
    U(Vec<u64>),
    C(Vec<[f64; 2]>),
}

pub(super) fn widen(t: &Tensor) -> KResult<Wide> {
    use Storage as S;
    let f = |v: &[f32]| v.iter().map(|&x| f64::from(x)).collect();
    Ok(match t.storage() {
        S::Float16(_) | S::BFloat16(_) => {
            Wide::F(f(&half_to_f32(t).ok_or_else(|| fail("internal: half"))?))
        }
        S::Float32(v) => Wide::F(f(v)),
        S::Float64(v) => Wide::F(v.clone()),
        S::Int8(v) => Wide::I(v.iter().map(|&x| i64::from(x)).collect()),
        S::Int16(v) => Wide::I(v.iter().map(|&x| i64::from(x)).collect()),
        S::Int32(v) => Wide::I(v.iter().map(|&x| i64::from(x)).collect()),
        S::Int64(v) => Wide::I(v.clone()),
        S::UInt64(v) => Wide::U(v.clone()),
        S::UInt8(v) => Wide::I(v.iter().map(|&x| i64::from(x)).collect()),
        S::UInt16(v) => Wide::I(v.iter().map(|&x| i64::from(x)).collect()),
        S::UInt32(v) => Wide::I(v.iter().map(|&x| i64::from(x)).collect()),
        S::Complex64(v) => Wide::C(
            v.iter()
                .map(|c| [f64::from(c[0]), f64::from(c[1])])
                .collect(),
        ),
        S::Complex128(v) => Wide::C(v.clone()),
        _ => {
            return Err(fail(format!(
                "data must be a number tensor, got {}",
                t.dtype()
            )))
        }
    })
}

/// Widened values back in `dtype` (integers wrap, as TensorFlow's narrow arithmetic does).
pub(super) fn narrow(w: Wide, dtype: DType, shape: Vec<usize>) -> KResult<Tensor> {
    use Storage as S;
    #[allow(clippy::cast_possible_truncation)]
    let storage = match (w, dtype) {
        (Wide::F(v), DType::Float16 | DType::BFloat16) => {
            let v: Vec<f32> = v.iter().map(|&x| x as f32).collect();
            f32_to_half(dtype, &v).ok_or_else(|| fail("internal: half"))?
        }
        (Wide::F(v), DType::Float32) => S::Float32(v.iter().map(|&x| x as f32).collect()),
        (Wide::F(v), DType::Float64) => S::Float64(v),
        (Wide::I(v), DType::Int8) => S::Int8(v.iter().map(|&x| x as i8).collect()),
        (Wide::I(v), DType::Int16) => S::Int16(v.iter().map(|&x| x as i16).collect()),
        (Wide::I(v), DType::Int32) => S::Int32(v.iter().map(|&x| x as i32).collect()),
        (Wide::I(v), DType::Int64) => S::Int64(v),
        (Wide::U(v), DType::UInt64) => S::UInt64(v),
        (Wide::I(v), DType::UInt8) => S::UInt8(v.iter().map(|&x| x as u8).collect()),
        (Wide::I(v), DType::UInt16) => S::UInt16(v.iter().map(|&x| x as u16).collect()),
        (Wide::I(v), DType::UInt32) => S::UInt32(v.iter().map(|&x| x as u32).collect()),
        (Wide::C(v), DType::Complex64) => {
            S::Complex64(v.iter().map(|c| [c[0] as f32, c[1] as f32]).collect())
        }
        (Wide::C(v), DType::Complex128) => S::Complex128(v),
        (_, other) => return Err(fail(format!("internal: cannot narrow to {other}"))),
    };
    make(shape, storage)
}

/// The dtype's lowest (or highest) finite value, widened.
fn extreme_f(dtype: DType, lowest: bool) -> f64 {
    let top = match dtype {
        DType::Float16 => 65504.0,
        DType::BFloat16 => f64::from(half::bf16::MAX.to_f32()),
        DType::Float32 => f64::from(f32::MAX),
        _ => f64::MAX,
    };
    if lowest {
        -top
    } else {
        top
    }
}

fn extreme_i(dtype: DType, lowest: bool) -> i64 {
    let (lo, hi) = match dtype {
        DType::Int8 => (i64::from(i8::MIN), i64::from(i8::MAX)),
        DType::Int16 => (i64::from(i16::MIN), i64::from(i16::MAX)),
        DType::Int32 => (i64::from(i32::MIN), i64::from(i32::MAX)),
        DType::UInt8 => (0, i64::from(u8::MAX)),
        DType::UInt16 => (0, i64::from(u16::MAX)),
        DType::UInt32 => (0, i64::from(u32::MAX)),
        _ => (i64::MIN, i64::MAX),
    };
    if lowest {
        lo
    } else {
        hi
    }
}

/// Where each row goes: `Some(segment)`, or None for a dropped row.
struct Plan<'a> {
    targets: &'a [Option<usize>],
    count: usize,
    inner: usize,
    sorted: bool,
}

/// `rows` (`targets.len()` rows of `inner`) folded into `count` segments.
fn fold<T: Elem>(rows: &[T], plan: &Plan, red: Red, start: T) -> KResult<(Vec<T>, Vec<usize>)> {
    let init = match red {
        Red::Sum | Red::Mean => T::zero(),
        Red::Prod => T::one(),
        Red::Max | Red::Min => start,
    };
    let inner = plan.inner;
    let size = plan
        .count
        .checked_mul(inner)
        .ok_or_else(|| fail("output shape is too large"))?;
    super::copy::checked_count(&[size])?;
    let mut out = vec![init; size];
    let mut counts = vec![0usize; plan.count];
    let oob = || fail("internal: segment row out of bounds");
    for (r, target) in plan.targets.iter().enumerate() {
        let Some(s) = *target else { continue };
        let row = rows.get(r * inner..(r + 1) * inner).ok_or_else(oob)?;
        let acc = out.get_mut(s * inner..(s + 1) * inner).ok_or_else(oob)?;
        *counts.get_mut(s).ok_or_else(oob)? += 1;
        for (a, &x) in acc.iter_mut().zip(row) {
            *a = match red {
                Red::Sum | Red::Mean => a.add(x),
                Red::Prod => a.mul(x),
                Red::Max => a.max_fold(x),
                Red::Min => a.min_fold(x),
            };
        }
    }
    for (seg, &n) in counts.iter().enumerate() {
        let acc = &mut out[seg * inner..(seg + 1) * inner];
        if n == 0 && plan.sorted && red != Red::Prod {
            acc.fill(T::zero());
        } else if n > 0 && red == Red::Mean {
            acc.iter_mut().for_each(|a| *a = a.div_count(n as f64));
        }
    }
    Ok((out, counts))
}

/// `data` reduced by `plan` into a tensor of `data`'s dtype with `count` rows.
fn reduce(data: &Tensor, plan: &Plan, red: Red) -> KResult<(Wide, Vec<usize>)> {
    let lowest = red == Red::Max;
    let minmax = matches!(red, Red::Max | Red::Min);
    Ok(match widen(data)? {
        Wide::F(v) => {
            // A sorted segment's fold starts from infinity: only its rows decide.
            let start = match (plan.sorted, lowest) {
                (true, true) => f64::NEG_INFINITY,
                (true, false) => f64::INFINITY,
                (false, _) => extreme_f(data.dtype(), lowest),
            };
            let (o, c) = fold(&v, plan, red, start)?;
            (Wide::F(o), c)
        }
        Wide::I(v) => {
            let (o, c) = fold(&v, plan, red, extreme_i(data.dtype(), lowest))?;
            (Wide::I(o), c)
        }
        Wide::U(v) => {
            let start = if lowest { 0 } else { u64::MAX };
            let (o, c) = fold(&v, plan, red, start)?;
            (Wide::U(o), c)
        }
        Wide::C(_) if minmax => {
            return Err(fail(format!(
                "max and min are not defined for {}",
                data.dtype()
            )))
        }
        Wide::C(v) => {
            let (o, c) = fold(&v, plan, red, <[f64; 2]>::zero())?;
            (Wide::C(o), c)
        }
    })
}

fn out_shape(count: usize, tail: &[usize]) -> Vec<usize> {
    let mut shape = vec![count];
    shape.extend_from_slice(tail);
    shape
}

/// Checked sorted ids: the number of segments.
fn sorted_count(ids: &[i64], num_segments: Option<usize>) -> KResult<usize> {
    let (Some(&first), Some(&last)) = (ids.first(), ids.last()) else {
        return Ok(num_segments.unwrap_or(0));
    };
    let max = ids.iter().copied().max().unwrap_or(last);
    let min = ids.iter().copied().min().unwrap_or(first);
    if let Some(n) = num_segments {
        if max >= n as i64 {
            return Err(fail("segment ids must be < num_segments"));
        }
    }
    let count = match num_segments {
        Some(n) => n,
        None => usize::try_from(last).map_or(0, |l| l + 1),
    };
    if min < 0 {
        return Err(fail(format!(
            "Segment id {min} out of range [0, {count}), possibly because 'segment_ids' input \
             is not sorted."
        )));
    }
    if ids.windows(2).any(|w| w[1] < w[0]) {
        return Err(fail("segment ids are not increasing"));
    }
    Ok(count)
}

fn vector_ids(t: &Tensor, what: &str) -> KResult<Vec<i64>> {
    if t.rank() != 1 {
        return Err(fail(format!(
            "{what} should be a vector, got shape {:?}",
            t.shape()
        )));
    }
    int_values(t, what)
}

fn scalar_count(t: &Tensor) -> KResult<usize> {
    let v = int_values(t, "num_segments")?;
    match v.as_slice() {
        [n] if t.rank() == 0 => usize::try_from(*n)
            .map_err(|_| fail(format!("Input num_segments == {n} must not be negative."))),
        _ => Err(fail(format!(
            "num_segments should be a scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

fn sorted_op(red: Red) -> Made {
    Ok(boxed(move |_, inputs| {
        let data = tensor_input(inputs, 0)?;
        let ids = vector_ids(&*tensor_input(inputs, 1)?, "segment_ids")?;
        if data.rank() < 1 || data.shape()[0] != ids.len() {
            return Err(fail(format!(
                "segment_ids should be the same size as dimension 0 of input, got {} ids for \
                 data of shape {:?}",
                ids.len(),
                data.shape()
            )));
        }
        let count = sorted_count(&ids, None)?;
        let targets: Vec<Option<usize>> = ids.iter().map(|&i| usize::try_from(i).ok()).collect();
        let tail = &data.shape()[1..];
        let plan = Plan {
            targets: &targets,
            count,
            inner: super::copy::prod(tail),
            sorted: true,
        };
        let (wide, _) = reduce(&data, &plan, red)?;
        one(narrow(wide, data.dtype(), out_shape(count, tail))?)
    }))
}

fn unsorted_op(red: Red) -> Made {
    Ok(boxed(move |_, inputs| {
        let data = tensor_input(inputs, 0)?;
        let ids_t = tensor_input(inputs, 1)?;
        let ids = int_values(&ids_t, "segment_ids")?;
        let count = scalar_count(&*tensor_input(inputs, 2)?)?;
        if !data.shape().starts_with(ids_t.shape()) {
            return Err(fail(format!(
                "data.shape = {:?} does not start with segment_ids.shape = {:?}",
                data.shape(),
                ids_t.shape()
            )));
        }
        if let Some((at, &id)) = ids.iter().enumerate().find(|(_, &i)| i >= count as i64) {
            return Err(fail(format!(
                "segment_ids[{at}] = {id} is out of range [0, {count})"
            )));
        }
        let targets: Vec<Option<usize>> = ids.iter().map(|&i| usize::try_from(i).ok()).collect();
        let tail = &data.shape()[ids_t.rank()..];
        let plan = Plan {
            targets: &targets,
            count,
            inner: super::copy::prod(tail),
            sorted: false,
        };
        let (wide, _) = reduce(&data, &plan, red)?;
        one(narrow(wide, data.dtype(), out_shape(count, tail))?)
    }))
}

fn sparse_op(scale: Scale, with_count: bool) -> Made {
    Ok(boxed(move |_, inputs| {
        let data = tensor_input(inputs, 0)?;
        let picks = vector_ids(&*tensor_input(inputs, 1)?, "indices")?;
        let ids = vector_ids(&*tensor_input(inputs, 2)?, "segment_ids")?;
        if picks.len() != ids.len() {
            return Err(fail(format!(
                "segment_ids and indices should have same size, got {} and {}",
                ids.len(),
                picks.len()
            )));
        }
        let Some((&rows, tail)) = data.shape().split_first() else {
            return Err(fail("data must be at least 1-D"));
        };
        let num = if with_count {
            Some(scalar_count(&*tensor_input(inputs, 3)?)?)
        } else {
            None
        };
        let count = sorted_count(&ids, num)?;
        let picked: Vec<usize> = picks
            .iter()
            .enumerate()
            .map(|(at, &p)| {
                usize::try_from(p)
                    .ok()
                    .filter(|&p| p < rows)
                    .ok_or_else(|| {
                        fail(format!(
                            "Bad: indices[{at}] == {p} out of range [0, {rows})"
                        ))
                    })
            })
            .collect::<KResult<_>>()?;
        let inner = super::copy::prod(tail);
        let gathered = super::copy::gather_storage(
            data.storage(),
            &[
                picked.iter().map(|&p| p * inner).collect(),
                (0..inner).collect(),
            ],
        )?;
        let gathered = make(vec![picked.len(), inner], gathered)?;
        let targets: Vec<Option<usize>> = ids.iter().map(|&i| usize::try_from(i).ok()).collect();
        let plan = Plan {
            targets: &targets,
            count,
            inner,
            sorted: true,
        };
        let (wide, counts) = reduce(&gathered, &plan, Red::Sum)?;
        let wide = match (scale, wide) {
            (Scale::Sum, w) => w,
            (_, Wide::F(mut v)) => {
                for (seg, &n) in counts.iter().enumerate() {
                    let n = n as f64;
                    let d = if scale == Scale::Mean { n } else { n.sqrt() }.max(1.0);
                    v[seg * inner..(seg + 1) * inner]
                        .iter_mut()
                        .for_each(|x| *x /= d);
                }
                Wide::F(v)
            }
            _ => {
                return Err(fail(format!(
                    "data must be a float tensor for a mean, got {}",
                    data.dtype()
                )))
            }
        };
        one(narrow(wide, data.dtype(), out_shape(count, tail))?)
    }))
}
