//! Writing rows at computed positions: ScatterNd (into zeros, duplicates accumulating),
//! TensorScatterAdd/Sub/Max/Min and TensorScatterUpdate (into a copy of a tensor). Max and
//! min replace an element when `update > element` (`<`), so a NaN on either side never
//! replaces. "Adding" follows the
//! numpy engine's `np.add.at`: numbers add (integers wrapping), booleans OR, strings
//! concatenate; float16 and bfloat16 add in f32 and round back.

use super::copy::{checked_count, zeros};
use super::gather::nd_rows;
use super::Made;
use crate::dtype::DType;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{f32_to_half, half_to_f32, make, shape_values};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("ScatterNd", |n| scatter_op(n, Base::Zeros));
    r.add("TensorScatterAdd", |n| scatter_op(n, Base::Add));
    r.add("TensorScatterUpdate", |n| scatter_op(n, Base::Update));
    r.add("TensorScatterSub", |n| scatter_op(n, Base::Sub));
    r.add("TensorScatterMax", |n| scatter_op(n, Base::Max));
    r.add("TensorScatterMin", |n| scatter_op(n, Base::Min));
}

/// What a scatter writes into, and how.
#[derive(Clone, Copy, PartialEq)]
enum Base {
    /// ScatterNd: a new tensor of zeros, updates added.
    Zeros,
    /// TensorScatterAdd: the tensor input, updates added.
    Add,
    /// TensorScatterUpdate: the tensor input, updates replacing.
    Update,
    /// TensorScatterSub: the tensor input, updates subtracted.
    Sub,
    /// TensorScatterMax / Min: the tensor input, the larger (smaller) value kept.
    Max,
    Min,
}

impl Base {
    fn mode(self) -> Mode {
        match self {
            Base::Zeros | Base::Add => Mode::Add,
            Base::Update => Mode::Set,
            Base::Sub => Mode::Sub,
            Base::Max => Mode::Max,
            Base::Min => Mode::Min,
        }
    }
}

/// How an update row meets the row it lands on.
#[derive(Clone, Copy, PartialEq)]
enum Mode {
    Set,
    Add,
    Sub,
    Max,
    Min,
}

/// In-place accumulation of one element into another.
trait Accumulate: Clone {
    fn accumulate(&mut self, other: &Self);
    /// Subtracts `other`; false when the type has no subtraction.
    fn subtract(&mut self, _other: &Self) -> bool {
        false
    }
    /// Takes `other` when it is greater (`max`) or smaller; false when the type is unordered.
    fn extremum(&mut self, _other: &Self, _max: bool) -> bool {
        false
    }
}

macro_rules! ordered {
    () => {
        fn extremum(&mut self, other: &Self, max: bool) -> bool {
            if (max && *other > *self) || (!max && *other < *self) {
                *self = *other;
            }
            true
        }
    };
}

macro_rules! wrapping {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            fn accumulate(&mut self, other: &Self) {
                *self = self.wrapping_add(*other);
            }
            fn subtract(&mut self, other: &Self) -> bool {
                *self = self.wrapping_sub(*other);
                true
            }
            ordered!();
        }
    )*};
}
wrapping!(i8, i16, i32, i64, u8, u16, u32, u64);

macro_rules! float_add {
    ($($t:ty),*) => {$(
        impl Accumulate for $t {
            fn accumulate(&mut self, other: &Self) {
                *self += *other;
            }
            fn subtract(&mut self, other: &Self) -> bool {
                *self -= *other;
                true
            }
            ordered!();
        }
        impl Accumulate for [$t; 2] {
            fn accumulate(&mut self, other: &Self) {
                self[0] += other[0];
                self[1] += other[1];
            }
            fn subtract(&mut self, other: &Self) -> bool {
                self[0] -= other[0];
                self[1] -= other[1];
                true
            }
        }
    )*};
}
float_add!(f32, f64);

impl Accumulate for bool {
    fn accumulate(&mut self, other: &Self) {
        *self |= *other;
    }
}

impl Accumulate for Vec<u8> {
    fn accumulate(&mut self, other: &Self) {
        self.extend_from_slice(other);
    }
}

fn scatter_op(node: &NodeSpec, base: Base) -> Made {
    let ignore = match node.attrs.string_or("bad_indices_policy", "")? {
        "" | "DEFAULT" | "ERROR" => false,
        "IGNORE" => true,
        other => return Err(format!("unknown bad_indices_policy {other:?}")),
    };
    Ok(boxed(move |_, inputs| {
        let (target, indices, updates) = if base == Base::Zeros {
            let updates = tensor_input(inputs, 1)?;
            let shape_t = tensor_input(inputs, 2)?;
            if shape_t.rank() != 1 {
                return Err(fail("shape must be a vector"));
            }
            let shape = shape_values(&shape_t, "shape")?;
            let n = checked_count(&shape)?;
            let target = make(shape, zeros(updates.dtype(), n))?;
            (target, tensor_input(inputs, 0)?, updates)
        } else {
            let t = tensor_input(inputs, 0)?;
            (
                (*t).clone(),
                tensor_input(inputs, 1)?,
                tensor_input(inputs, 2)?,
            )
        };
        one(scatter(target, &indices, &updates, base.mode(), ignore)?)
    }))
}

/// `updates` written (or added) into `target` at the index rows of `indices`.
fn scatter(
    target: Tensor,
    indices: &Tensor,
    updates: &Tensor,
    mode: Mode,
    ignore: bool,
) -> KResult<Tensor> {
    let shape = target.shape().to_vec();
    if indices.rank() < 2 {
        return Err(fail(format!(
            "indices must have rank at least 2 (a batch of index rows), got shape {:?}",
            indices.shape()
        )));
    }
    let depth = indices.shape()[indices.rank() - 1];
    if depth > shape.len() {
        return Err(fail(format!(
            "index depth {depth} is greater than the rank of shape {shape:?}"
        )));
    }
    let mut want = indices.shape()[..indices.rank() - 1].to_vec();
    want.extend_from_slice(&shape[depth..]);
    if updates.shape() != want.as_slice() {
        return Err(fail(format!(
            "updates must have shape {want:?} for indices of shape {:?} and shape {shape:?}, \
             got {:?}",
            indices.shape(),
            updates.shape()
        )));
    }
    if target.is_empty() {
        if !indices.is_empty() {
            return Err(fail(format!(
                "Indices and updates specified for empty output shape {shape:?}"
            )));
        }
        return Ok(target);
    }
    if depth == 0 {
        return Err(fail(
            "index rows must not be empty (indices.shape[-1] is 0)",
        ));
    }
    let (rows, bad) = nd_rows(indices, &shape, ignore)?;
    let inner: usize = super::copy::prod(&shape[depth..]);
    let moves: Vec<(usize, usize)> = rows
        .iter()
        .zip(&bad)
        .enumerate()
        .filter(|(_, (_, &b))| !b)
        .map(|(i, (&r, _))| (i, r))
        .collect();
    let half = matches!(target.dtype(), DType::Float16 | DType::BFloat16);
    if half {
        let dtype = target.dtype();
        let wide = |t: &Tensor| {
            half_to_f32(t)
                .map(|v| Tensor::from_vec(t.shape().to_vec(), v))
                .ok_or_else(|| fail(format!("updates must be {dtype}")))
        };
        let out = write(wide(&target)?, &wide(updates)?, &moves, inner, mode)?;
        let narrow = f32_to_half(dtype, out.values::<f32>().unwrap_or_default())
            .ok_or_else(|| fail("internal: half"))?;
        return make(shape, narrow);
    }
    write(target, updates, &moves, inner, mode)
}

fn write(
    target: Tensor,
    updates: &Tensor,
    moves: &[(usize, usize)],
    inner: usize,
    mode: Mode,
) -> KResult<Tensor> {
    let shape = target.shape().to_vec();
    let mismatch = fail(format!(
        "updates must be {}, got {}",
        target.dtype(),
        updates.dtype()
    ));
    let mut storage: Storage = target.into_storage();
    let out = map_storage2!(&mut storage, updates.storage(), o, u =>
        apply(std::mem::take(o), u, moves, inner, mode)?, mismatch);
    make(shape, out)
}

/// `out` with update row `i` written to (or added into) row `r` for each `(i, r)`.
fn apply<T: Accumulate>(
    mut out: Vec<T>,
    u: &[T],
    moves: &[(usize, usize)],
    inner: usize,
    mode: Mode,
) -> KResult<Vec<T>> {
    for &(i, r) in moves {
        let (Some(src), Some(dst)) = (
            u.get(i * inner..(i + 1) * inner),
            out.get_mut(r * inner..(r + 1) * inner),
        ) else {
            continue;
        };
        let unsupported = || fail("this scatter is not defined for the tensor's dtype");
        match mode {
            Mode::Set => dst.clone_from_slice(src),
            Mode::Add => dst.iter_mut().zip(src).for_each(|(d, s)| d.accumulate(s)),
            Mode::Sub => {
                for (d, s) in dst.iter_mut().zip(src) {
                    if !d.subtract(s) {
                        return Err(unsupported());
                    }
                }
            }
            Mode::Max | Mode::Min => {
                for (d, s) in dst.iter_mut().zip(src) {
                    if !d.extremum(s, mode == Mode::Max) {
                        return Err(unsupported());
                    }
                }
            }
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn duplicates_accumulate() {
        let target = Tensor::from_vec(vec![3], vec![0i64; 3]);
        let idx = Tensor::from_vec(vec![3, 1], vec![1i32, 1, 2]);
        let upd = Tensor::from_vec(vec![3], vec![5i64, 6, 7]);
        let out = scatter(target.clone(), &idx, &upd, Mode::Add, false).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[0, 11, 7]);
        let out = scatter(target.clone(), &idx, &upd, Mode::Max, false).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[0, 6, 7]);
        let out = scatter(target.clone(), &idx, &upd, Mode::Sub, false).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[0, -11, -7]);
        let out = scatter(target.clone(), &idx, &upd, Mode::Set, false).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[0, 6, 7]);
        let bad = Tensor::from_vec(vec![1, 1], vec![3i32]);
        let one = Tensor::from_vec(vec![1], vec![1i64]);
        assert!(scatter(target.clone(), &bad, &one, Mode::Add, false).is_err());
        let out = scatter(target, &bad, &one, Mode::Add, true).unwrap();
        assert_eq!(out.values::<i64>().unwrap(), &[0, 0, 0]);
    }
}
