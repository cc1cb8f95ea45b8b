//! Sparse-tensor ops over TensorFlow's three-tensor form (`indices`, n x rank; `values`, n;
//! `dense_shape`, rank): SparseToDense, SparseReduceSum and SparseTensorDenseMatMul, which
//! `tf.sparse.to_dense`, `tf.sparse.reduce_sum` and `tf.sparse.sparse_dense_matmul` emit.
//!
//! Every index is checked against the dense shape before anything is written, so a bad index
//! is an error naming its entry, never a write out of bounds. Sums and products run on values
//! widened once (floats in f64, integers wrapping in i64, complex in f64 pairs; see
//! `segment::widen`) and narrowed once at the end, as the segment reductions do: integers give
//! TensorFlow's wrapped bits, floats agree within rounding. Repeated indices add up
//! (SparseReduceSum, SparseTensorDenseMatMul) or the last one wins (SparseToDense without
//! `validate_indices`).

use super::copy::{checked_count, strides};
use super::segment::{narrow, widen, Elem, Wide};
use super::{axis_index, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::{int_values, make, shape_values};
use crate::tensor::Tensor;

pub fn register(r: &mut Registry) {
    r.add("SparseToDense", sparse_to_dense);
    r.add("SparseReduceSum", sparse_reduce_sum);
    r.add("SparseTensorDenseMatMul", sparse_dense_mat_mul);
}

/// A sparse tensor's components, checked against one another as TensorFlow checks them: the
/// indices (row-major, `rank` per entry) and the dense shape.
fn components(
    indices: &Tensor,
    values: &Tensor,
    shape: &Tensor,
) -> KResult<(Vec<i64>, Vec<usize>)> {
    if indices.rank() != 2 {
        return Err(fail(format!(
            "indices must be a matrix, got shape {:?}",
            indices.shape()
        )));
    }
    if values.rank() != 1 || shape.rank() != 1 {
        return Err(fail(format!(
            "values and dense_shape must be vectors, got shapes {:?} and {:?}",
            values.shape(),
            shape.shape()
        )));
    }
    let dims = shape_values(shape, "dense_shape")?;
    match indices.shape() {
        [n, _] if *n != values.len() => {
            Err(fail(format!("{n} indices for {} values", values.len())))
        }
        [_, cols] if *cols != dims.len() => Err(fail(format!(
            "indices have {cols} columns for a dense shape of rank {}",
            dims.len()
        ))),
        _ => Ok((int_values(indices, "indices")?, dims)),
    }
}

/// Each of the `n` entries' row-major position in the dense tensor of `dims` restricted to
/// the axes `kept` (all axes: its position in the dense tensor). Every index is checked
/// against `dims` first, so the positions are below the product of the kept dimensions.
fn positions(indices: &[i64], n: usize, dims: &[usize], kept: &[usize]) -> KResult<Vec<usize>> {
    let rank = dims.len();
    if rank == 0 {
        return Ok(vec![0; n]);
    }
    let kept_dims: Vec<usize> = kept.iter().filter_map(|&a| dims.get(a).copied()).collect();
    let kept_strides = strides(&kept_dims);
    indices
        .chunks_exact(rank)
        .take(n)
        .enumerate()
        .map(|(entry, index)| {
            let inside = index
                .iter()
                .zip(dims)
                .all(|(&i, &d)| usize::try_from(i).is_ok_and(|i| i < d));
            if !inside {
                return Err(fail(format!(
                    "index {index:?} (entry {entry}) is out of bounds of the dense shape {dims:?}"
                )));
            }
            Ok(kept
                .iter()
                .zip(&kept_strides)
                .map(|(&a, &s)| index.get(a).map_or(0, |&i| i as usize) * s)
                .sum())
        })
        .collect()
}

fn sparse_to_dense(node: &NodeSpec) -> Made {
    let validate = node.attrs.bool_or("validate_indices", true)?;
    Ok(boxed(move |_, inputs| {
        let indices = tensor_input(inputs, 0)?;
        let shape = tensor_input(inputs, 1)?;
        let values = tensor_input(inputs, 2)?;
        let default = tensor_input(inputs, 3)?;
        if shape.rank() > 1 {
            return Err(fail(format!(
                "output_shape must have rank <= 1, got shape {:?}",
                shape.shape()
            )));
        }
        let dims = shape_values(&shape, "output_shape")?;
        // A scalar index is one position in a vector; a vector, one position per value.
        let (n, cols) = match *indices.shape() {
            [] => (1, 1),
            [n] => (n, 1),
            [n, cols] => (n, cols),
            _ => {
                return Err(fail(format!(
                    "sparse_indices must have rank <= 2, got shape {:?}",
                    indices.shape()
                )))
            }
        };
        if cols != dims.len() {
            return Err(fail(format!(
                "sparse_indices have {cols} columns for an output of rank {}",
                dims.len()
            )));
        }
        let scalar = values.rank() == 0;
        if !scalar && values.shape() != [n] {
            return Err(fail(format!(
                "sparse_values must be a scalar or a vector of {n}, got shape {:?}",
                values.shape()
            )));
        }
        if default.rank() != 0 {
            return Err(fail(format!(
                "default_value must be a scalar, got shape {:?}",
                default.shape()
            )));
        }
        let index = int_values(&indices, "sparse_indices")?;
        let all: Vec<usize> = (0..dims.len()).collect();
        let flat = positions(&index, n, &dims, &all)?;
        if validate {
            check_ordered(&flat, &index, cols)?;
        }
        let size = checked_count(&dims)?;
        let mismatch = || {
            fail(format!(
                "sparse_values ({}) and default_value ({}) must have one dtype",
                values.dtype(),
                default.dtype()
            ))
        };
        let storage = map_storage2!(
            values.storage(), default.storage(), v, d => scatter(v, d, &flat, size)?, mismatch()
        );
        one(make(dims, storage)?)
    }))
}

/// Strictly increasing positions, as SparseToDense requires when it validates its indices.
fn check_ordered(flat: &[usize], index: &[i64], cols: usize) -> KResult<()> {
    match flat.windows(2).position(|w| w[1] <= w[0]) {
        None => Ok(()),
        Some(k) => {
            let what = if flat.get(k) == flat.get(k + 1) {
                "repeated"
            } else {
                "out of order"
            };
            let entry = index.get((k + 1) * cols..(k + 2) * cols).unwrap_or(&[]);
            Err(fail(format!(
                "index {entry:?} (entry {}) is {what}; many sparse ops require sorted indices \
                 (use tf.sparse.reorder)",
                k + 1
            )))
        }
    }
}

/// `size` copies of `fill[0]` with `values` (one, or one per position) written at `flat`.
fn scatter<T: Clone>(values: &[T], fill: &[T], flat: &[usize], size: usize) -> KResult<Vec<T>> {
    let first = |v: &[T]| {
        v.first()
            .cloned()
            .ok_or_else(|| fail("internal: empty value"))
    };
    let mut out = vec![first(fill)?; size];
    let single = values.len() == 1 && flat.len() != 1;
    for (k, &p) in flat.iter().enumerate() {
        let value = if single {
            values.first()
        } else {
            values.get(k)
        };
        if let (Some(slot), Some(v)) = (out.get_mut(p), value) {
            slot.clone_from(v);
        }
    }
    Ok(out)
}

fn sparse_reduce_sum(node: &NodeSpec) -> Made {
    let keep_dims = node.attrs.bool_or("keep_dims", false)?;
    Ok(boxed(move |_, inputs| {
        let values = tensor_input(inputs, 1)?;
        let (indices, shape) = (tensor_input(inputs, 0)?, tensor_input(inputs, 2)?);
        let (index, dims) = components(&indices, &values, &shape)?;
        let rank = dims.len();
        let mut reduced = vec![false; rank];
        let axes = tensor_input(inputs, 3)?;
        for axis in int_values(&axes, "reduction_axes")? {
            if let Some(r) = reduced.get_mut(axis_index(axis, rank)?) {
                *r = true;
            }
        }
        let kept: Vec<usize> = (0..rank).filter(|&d| !reduced[d]).collect();
        let out_shape: Vec<usize> = if keep_dims {
            dims.iter()
                .zip(&reduced)
                .map(|(&d, &r)| if r { 1 } else { d })
                .collect()
        } else {
            kept.iter().map(|&d| dims[d]).collect()
        };
        let size = checked_count(&out_shape)?;
        let flat = positions(&index, values.len(), &dims, &kept)?;
        let sums = match widen(&values)? {
            Wide::F(v) => Wide::F(sum_at(&v, &flat, size)),
            Wide::I(v) => Wide::I(sum_at(&v, &flat, size)),
            Wide::U(v) => Wide::U(sum_at(&v, &flat, size)),
            Wide::C(v) => Wide::C(sum_at(&v, &flat, size)),
        };
        one(narrow(sums, values.dtype(), out_shape)?)
    }))
}

/// `size` sums, value `k` added to sum `flat[k]` (positions below `size`).
fn sum_at<T: Elem>(values: &[T], flat: &[usize], size: usize) -> Vec<T> {
    let mut out = vec![T::zero(); size];
    for (&p, &v) in flat.iter().zip(values) {
        if let Some(slot) = out.get_mut(p) {
            *slot = slot.add(v);
        }
    }
    out
}

fn sparse_dense_mat_mul(node: &NodeSpec) -> Made {
    let adjoint_a = node.attrs.bool_or("adjoint_a", false)?;
    let adjoint_b = node.attrs.bool_or("adjoint_b", false)?;
    Ok(boxed(move |_, inputs| {
        let values = tensor_input(inputs, 1)?;
        let b = tensor_input(inputs, 3)?;
        let (indices, shape) = (tensor_input(inputs, 0)?, tensor_input(inputs, 2)?);
        let (index, dims) = components(&indices, &values, &shape)?;
        let (&[a_rows, a_cols], &[b_rows, b_cols]) = (dims.as_slice(), b.shape()) else {
            return Err(fail(format!(
                "both operands must be matrices, got a of shape {dims:?} and b of shape {:?}",
                b.shape()
            )));
        };
        let (out_rows, inner) = if adjoint_a {
            (a_cols, a_rows)
        } else {
            (a_rows, a_cols)
        };
        let (b_inner, out_cols) = if adjoint_b {
            (b_cols, b_rows)
        } else {
            (b_rows, b_cols)
        };
        if b_inner != inner {
            return Err(fail(format!(
                "cannot multiply a with {inner} columns by b with {b_inner} rows \
                 (adjoint_a={adjoint_a}, adjoint_b={adjoint_b})"
            )));
        }
        if values.dtype() != b.dtype() {
            return Err(fail(format!(
                "a_values ({}) and b ({}) must have one dtype",
                values.dtype(),
                b.dtype()
            )));
        }
        let terms = product_terms(&index, adjoint_a, out_rows, inner)?;
        let out_shape = vec![out_rows, out_cols];
        let size = checked_count(&out_shape)?;
        let shape = Operand {
            rows: b_rows,
            cols: b_cols,
            adjoint: adjoint_b,
        };
        let product = match (widen(&values)?, widen(&b)?) {
            (Wide::F(a), Wide::F(b)) => {
                Wide::F(sparse_times(&terms, &a, &shape.dense(b), out_cols, size))
            }
            (Wide::I(a), Wide::I(b)) => {
                Wide::I(sparse_times(&terms, &a, &shape.dense(b), out_cols, size))
            }
            (Wide::U(a), Wide::U(b)) => {
                Wide::U(sparse_times(&terms, &a, &shape.dense(b), out_cols, size))
            }
            (Wide::C(mut a), Wide::C(mut b)) => {
                // The adjoint of a complex matrix conjugates it too.
                if adjoint_a {
                    a.iter_mut().for_each(|c| c[1] = -c[1]);
                }
                if adjoint_b {
                    b.iter_mut().for_each(|c| c[1] = -c[1]);
                }
                Wide::C(sparse_times(&terms, &a, &shape.dense(b), out_cols, size))
            }
            _ => return Err(fail(format!("unsupported dtype {}", b.dtype()))),
        };
        one(narrow(product, b.dtype(), out_shape)?)
    }))
}

/// Each entry of a (adjoint or not) as (row, column) of the product's left operand, checked.
fn product_terms(
    index: &[i64],
    adjoint: bool,
    rows: usize,
    cols: usize,
) -> KResult<Vec<(usize, usize)>> {
    index
        .chunks_exact(2)
        .enumerate()
        .map(|(entry, pair)| {
            let (i, j) = match *pair {
                [i, j] if adjoint => (j, i),
                [i, j] => (i, j),
                _ => return Err(fail("internal: index pair")),
            };
            let check = |v: i64, limit: usize, what: &str| {
                usize::try_from(v)
                    .ok()
                    .filter(|&v| v < limit)
                    .ok_or_else(|| {
                        fail(format!(
                            "{what} index {v} of entry {entry} is out of bounds [0, {limit})"
                        ))
                    })
            };
            let (row_name, col_name) = if adjoint {
                ("column", "row")
            } else {
                ("row", "column")
            };
            Ok((check(i, rows, row_name)?, check(j, cols, col_name)?))
        })
        .collect()
}

/// The dense right operand as stored, and whether the product uses its adjoint.
struct Operand {
    rows: usize,
    cols: usize,
    adjoint: bool,
}

impl Operand {
    /// The operand as the product reads it (inner x out_cols, row-major): transposed once when
    /// adjoint (complex values arrive already conjugated).
    fn dense<T: Copy>(&self, b: Vec<T>) -> Vec<T> {
        if !self.adjoint {
            return b;
        }
        let mut out = Vec::with_capacity(b.len());
        for c in 0..self.cols {
            out.extend((0..self.rows).filter_map(|r| b.get(r * self.cols + c).copied()));
        }
        out
    }
}

/// out[row] += value * b[column] for every term, over rows of `n` (terms checked in bounds).
fn sparse_times<T: Elem>(
    terms: &[(usize, usize)],
    a: &[T],
    b: &[T],
    n: usize,
    size: usize,
) -> Vec<T> {
    let mut out = vec![T::zero(); size];
    for (&(row, col), &v) in terms.iter().zip(a) {
        let (Some(dst), Some(src)) = (
            out.get_mut(row * n..(row + 1) * n),
            b.get(col * n..(col + 1) * n),
        ) else {
            continue;
        };
        for (o, &x) in dst.iter_mut().zip(src) {
            *o = o.add(v.mul(x));
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use crate::engine::run_node;
    use crate::engine::Value;
    use crate::tensor::Tensor;

    fn node(op: &str) -> crate::protos::NodeDef {
        crate::protos::NodeDef {
            name: "n".into(),
            op: op.into(),
            ..Default::default()
        }
    }

    #[test]
    fn bad_indices_are_errors() {
        let out = run_node(
            &node("SparseToDense"),
            vec![
                Tensor::from_vec(vec![1, 2], vec![0i64, i64::MAX]),
                Tensor::from_vec(vec![2], vec![2i64, 2]),
                Tensor::from_vec(vec![1], vec![1f32]),
                Tensor::scalar(0f32),
            ],
        );
        assert!(out.is_err());
        let out = run_node(
            &node("SparseTensorDenseMatMul"),
            vec![
                Tensor::from_vec(vec![1, 2], vec![-1i64, 0]),
                Tensor::from_vec(vec![1], vec![1f32]),
                Tensor::from_vec(vec![2], vec![2i64, 2]),
                Tensor::from_vec(vec![2, 1], vec![1f32, 2.0]),
            ],
        );
        assert!(out.is_err());
    }

    #[test]
    fn reduce_sum_adds_repeated_entries() {
        let out = run_node(
            &node("SparseReduceSum"),
            vec![
                Tensor::from_vec(vec![3, 2], vec![0i64, 1, 0, 1, 1, 0]),
                Tensor::from_vec(vec![3], vec![1i32, 2, 4]),
                Tensor::from_vec(vec![2], vec![2i64, 2]),
                Tensor::from_vec(vec![1], vec![1i32]),
            ],
        )
        .unwrap();
        let Value::Tensor(t) = &out[0] else { panic!() };
        assert_eq!(t.values::<i32>().unwrap(), &[3, 4]);
    }
}
