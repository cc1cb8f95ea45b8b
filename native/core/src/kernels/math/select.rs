//! Ops that pick or combine whole elements: Select (TensorFlow 1's: a vector condition picks
//! rows, a scalar one a whole tensor), SelectV2 (broadcasting), ClipByValue and AddN.

use super::binary::add;
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{
    broadcast_shape, broadcast_strides, f32_to_half, half_to_f32, make, strided_offsets,
};
use crate::tensor::{element_count, Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("Select", |_| {
        Ok(boxed(|_ctx, inputs| three(inputs, select)))
    });
    r.add("SelectV2", |_| {
        Ok(boxed(|_ctx, inputs| three(inputs, select_v2)))
    });
    r.add("ClipByValue", |_| {
        Ok(boxed(|_ctx, inputs| three(inputs, clip)))
    });
    r.add("AddN", add_n_factory);
}

fn three(
    inputs: &[crate::engine::Value],
    f: fn(&Tensor, &Tensor, &Tensor) -> KResult<Tensor>,
) -> KResult {
    let a = tensor_input(inputs, 0)?;
    let b = tensor_input(inputs, 1)?;
    let c = tensor_input(inputs, 2)?;
    one(f(&a, &b, &c)?)
}

/// `$body` (giving `KResult<Vec<T>>` from slices `$p`, `$q`) for two tensors of one dtype,
/// wrapped back into that dtype's storage.
macro_rules! same_kind {
    ($x:expr, $y:expr, |$p:ident, $q:ident| $body:expr) => {{
        use crate::tensor::Storage as S;
        match ($x.storage(), $y.storage()) {
            (S::Float16($p), S::Float16($q)) => $body.map(S::Float16),
            (S::BFloat16($p), S::BFloat16($q)) => $body.map(S::BFloat16),
            (S::Float32($p), S::Float32($q)) => $body.map(S::Float32),
            (S::Float64($p), S::Float64($q)) => $body.map(S::Float64),
            (S::Int8($p), S::Int8($q)) => $body.map(S::Int8),
            (S::Int16($p), S::Int16($q)) => $body.map(S::Int16),
            (S::Int32($p), S::Int32($q)) => $body.map(S::Int32),
            (S::Int64($p), S::Int64($q)) => $body.map(S::Int64),
            (S::UInt8($p), S::UInt8($q)) => $body.map(S::UInt8),
            (S::UInt16($p), S::UInt16($q)) => $body.map(S::UInt16),
            (S::UInt32($p), S::UInt32($q)) => $body.map(S::UInt32),
            (S::UInt64($p), S::UInt64($q)) => $body.map(S::UInt64),
            (S::Bool($p), S::Bool($q)) => $body.map(S::Bool),
            (S::Complex64($p), S::Complex64($q)) => $body.map(S::Complex64),
            (S::Complex128($p), S::Complex128($q)) => $body.map(S::Complex128),
            (S::String($p), S::String($q)) => $body.map(S::String),
            _ => Err(fail(format!(
                "the two value inputs differ in dtype: {} vs {}",
                $x.dtype(),
                $y.dtype()
            ))),
        }
    }};
}

fn condition(c: &Tensor) -> KResult<&[bool]> {
    c.values::<bool>()
        .ok_or_else(|| fail(format!("condition must be bool, got {}", c.dtype())))
}

/// TensorFlow 1's Select: no broadcasting, except a scalar condition (the whole of x or y)
/// and a vector one that picks rows (the first dimension).
fn select(c: &Tensor, x: &Tensor, y: &Tensor) -> KResult<Tensor> {
    let cond = condition(c)?;
    if x.shape() != y.shape() {
        return Err(fail(format!(
            "'then' and 'else' must have the same size.  but received: {:?} vs. {:?}",
            x.shape(),
            y.shape()
        )));
    }
    if c.rank() == 0 {
        return Ok(if cond.first() == Some(&true) {
            x.clone()
        } else {
            y.clone()
        });
    }
    let row = if c.shape() == x.shape() {
        1
    } else if c.rank() == 1 && x.rank() >= 1 {
        if c.shape()[0] != x.shape()[0] {
            return Err(fail(format!(
                "Number of batches of 'then' must match size of 'cond', but saw: {} vs. {}",
                x.shape()[0],
                c.shape()[0]
            )));
        }
        x.len().checked_div(c.shape()[0]).unwrap_or(0)
    } else {
        return Err(fail(format!(
            "Inputs to operation Select must have the same size and shape.  Input 0: {:?} != \
             input 1: {:?}",
            c.shape(),
            x.shape()
        )));
    };
    let storage = same_kind!(x, y, |p, q| Ok::<_, crate::error::Error>(rows(
        cond, row, p, q
    )))?;
    make(x.shape().to_vec(), storage)
}

fn rows<T: Clone>(cond: &[bool], row: usize, x: &[T], y: &[T]) -> Vec<T> {
    if row == 0 {
        return Vec::new();
    }
    let mut out = Vec::with_capacity(x.len());
    for ((&pick, a), b) in cond.iter().zip(x.chunks(row)).zip(y.chunks(row)) {
        out.extend_from_slice(if pick { a } else { b });
    }
    out
}

/// np.where: the condition, x and y broadcast together.
fn select_v2(c: &Tensor, x: &Tensor, y: &Tensor) -> KResult<Tensor> {
    let cond = condition(c)?;
    let incompatible = || {
        fail(format!(
            "Incompatible shapes: {:?} vs. {:?} vs. {:?}",
            c.shape(),
            x.shape(),
            y.shape()
        ))
    };
    let out = broadcast_shape(c.shape(), x.shape())
        .and_then(|s| broadcast_shape(&s, y.shape()))
        .map_err(|_| incompatible())?;
    element_count(&out).ok_or_else(incompatible)?;
    let same = c.shape() == out.as_slice() && x.shape() == c.shape() && y.shape() == c.shape();
    let storage = if same {
        same_kind!(x, y, |p, q| Ok::<_, crate::error::Error>(pick(cond, p, q)))?
    } else {
        let rows = [c.shape(), x.shape(), y.shape()].map(|s| Rows::of(s, &out));
        let width = out.last().copied().unwrap_or(1);
        same_kind!(x, y, |p, q| Ok::<_, crate::error::Error>(pick_rows(
            cond, p, q, &rows, width
        )))?
    };
    make(out, storage)
}

fn pick<T: Clone>(cond: &[bool], x: &[T], y: &[T]) -> Vec<T> {
    let pairs = x.iter().zip(y);
    cond.iter()
        .zip(pairs)
        .map(|(&k, (a, b))| if k { a } else { b }.clone())
        .collect()
}

/// An operand broadcast to the output, read row by row (a row: the output's last dimension):
/// where each row starts and the step along it (0 when the operand repeats one element). An
/// attention mask broadcast over heads and queries then costs one offset per row, not three
/// per element.
struct Rows {
    starts: Vec<usize>,
    step: usize,
}

impl Rows {
    fn of(shape: &[usize], out: &[usize]) -> Rows {
        let strides = broadcast_strides(shape, out);
        match out.len().checked_sub(1) {
            Some(last) => Rows {
                starts: strided_offsets(&strides[..last], &out[..last]),
                step: strides[last],
            },
            None => Rows {
                starts: vec![0],
                step: 0,
            },
        }
    }
}

/// `pick` with each operand (condition, x, y) read along its broadcast rows of `width`: each
/// output row starts as y's and takes x where the condition holds, as whole slices when both
/// run along the row (a mask over scores), so that the common case is a vectorized blend.
fn pick_rows<T: Clone>(cond: &[bool], x: &[T], y: &[T], rows: &[Rows; 3], width: usize) -> Vec<T> {
    let [rc, rx, ry] = rows;
    let mut out = Vec::with_capacity(rc.starts.len() * width);
    for ((&c0, &x0), &y0) in rc.starts.iter().zip(&rx.starts).zip(&ry.starts) {
        let start = out.len();
        if ry.step == 0 {
            out.resize(start + width, y[y0].clone());
        } else {
            out.extend_from_slice(&y[y0..y0 + width]);
        }
        let row = &mut out[start..];
        if rc.step == 1 && rx.step == 1 {
            let pairs = cond[c0..c0 + width].iter().zip(&x[x0..x0 + width]);
            for (o, (&k, a)) in row.iter_mut().zip(pairs) {
                if k {
                    *o = a.clone();
                }
            }
        } else {
            for (i, o) in row.iter_mut().enumerate() {
                if cond[c0 + i * rc.step] {
                    *o = x[x0 + i * rx.step].clone();
                }
            }
        }
    }
    out
}

/// min(max) in TensorFlow's order and comparison form: the upper bound first, so min > max
/// gives min, a NaN bound clips nothing, and NaN in t stays NaN.
fn clip(t: &Tensor, lo: &Tensor, hi: &Tensor) -> KResult<Tensor> {
    for (name, bound) in [("clip_value_min", lo), ("clip_value_max", hi)] {
        if bound.rank() != 0 && bound.shape() != t.shape() {
            return Err(fail(format!(
                "{name} must be either of the same shape as input, or a scalar. input shape: \
                 {:?} {name} shape: {:?}",
                t.shape(),
                bound.shape()
            )));
        }
        if bound.dtype() != t.dtype() {
            return Err(fail(format!(
                "{name} must be {}, got {}",
                t.dtype(),
                bound.dtype()
            )));
        }
    }
    if let (Some(v), Some(a), Some(b)) = (half_to_f32(t), half_to_f32(lo), half_to_f32(hi)) {
        let out = clip_values(&v, &a, &b);
        let storage = f32_to_half(t.dtype(), &out).unwrap_or(Storage::Float32(out));
        return make(t.shape().to_vec(), storage);
    }
    macro_rules! arms {
        ($($variant:ident),*) => {
            match (t.storage(), lo.storage(), hi.storage()) {
                $((Storage::$variant(v), Storage::$variant(a), Storage::$variant(b)) => {
                    Storage::$variant(clip_values(v, a, b))
                })*
                _ => return Err(fail(format!("ClipByValue does not support {}", t.dtype()))),
            }
        };
    }
    let storage = arms!(Float32, Float64, Int8, Int16, Int32, Int64, UInt8, UInt16, UInt32, UInt64);
    make(t.shape().to_vec(), storage)
}

fn clip_values<T: PartialOrd + Copy>(v: &[T], lo: &[T], hi: &[T]) -> Vec<T> {
    let bound = |b: &[T], i: usize| if b.len() == 1 { b[0] } else { b[i] };
    v.iter()
        .enumerate()
        .map(|(i, &x)| {
            let (l, h) = (bound(lo, i), bound(hi, i));
            let upper = if h < x { h } else { x };
            if upper < l {
                l
            } else {
                upper
            }
        })
        .collect()
}

fn add_n_factory(_spec: &NodeSpec) -> Result<Box<dyn crate::engine::Kernel>, String> {
    Ok(boxed(|_ctx, inputs| {
        let first = tensor_input(inputs, 0)?;
        let mut total = (*first).clone();
        for i in 1..inputs.len() {
            let next = tensor_input(inputs, i)?;
            if next.shape() != first.shape() {
                return Err(fail(format!(
                    "Inputs to operation AddN must have the same size and shape.  Input 0: \
                     {:?} != input {i}: {:?}",
                    first.shape(),
                    next.shape()
                )));
            }
            total = add(&total, &next)?;
        }
        one(total)
    }))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::kernels::util::broadcast_offsets;

    /// Row-wise picking against the per-element definition (every operand read at its broadcast
    /// offset), for masks, scalars and operands broadcast along and across rows.
    #[test]
    fn rows_pick_as_elementwise_offsets_do() {
        let cases: [[&[usize]; 3]; 6] = [
            [&[2, 1, 1, 5], &[2, 3, 4, 5], &[]],
            [&[2, 3, 4, 1], &[2, 3, 4, 5], &[5]],
            [&[5], &[3, 1], &[3, 5]],
            [&[], &[4, 1], &[1, 6]],
            [&[3, 1], &[1], &[3, 1]],
            [&[2, 0, 3], &[3], &[]],
        ];
        for shapes in cases {
            let out = shapes
                .iter()
                .try_fold(vec![], |s, t| broadcast_shape(&s, t))
                .unwrap();
            let len = |s: &[usize]| s.iter().product::<usize>();
            let cond: Vec<bool> = (0..len(shapes[0])).map(|i| i % 3 != 1).collect();
            let x: Vec<i32> = (0..len(shapes[1]) as i32).collect();
            let y: Vec<i32> = (0..len(shapes[2]) as i32).map(|i| -1 - i).collect();
            let rows = shapes.map(|s| Rows::of(s, &out));
            let got = pick_rows(&cond, &x, &y, &rows, out.last().copied().unwrap_or(1));
            let [oc, ox, oy] = shapes.map(|s| broadcast_offsets(s, &out));
            let want: Vec<i32> = (0..oc.len())
                .map(|e| if cond[oc[e]] { x[ox[e]] } else { y[oy[e]] })
                .collect();
            assert_eq!(got, want, "{shapes:?}");
        }
    }
}
