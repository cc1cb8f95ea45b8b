//! Band and diagonal ops over the last two axes: MatrixBandPart, MatrixDiagV3,
//! MatrixDiagPartV3, MatrixSetDiagV3. Each builds, once per call, a plan saying for every
//! element of one output matrix which element of which source it copies (the data, a padding
//! value, or the original input), then applies it to every matrix of the batch.

use super::copy::{checked_count, zeros};
use super::{any_ints, Made};
use crate::engine::kernel::{boxed, fail, one, tensor_input, KResult, NodeSpec};
use crate::engine::Registry;
use crate::kernels::util::make;
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("MatrixBandPart", band_part);
    r.add("MatrixDiagV3", diag);
    r.add("MatrixDiagPartV3", diag_part);
    r.add("MatrixSetDiagV3", set_diag);
}

/// Where one output element comes from: offset in the current block of source A or of B.
#[derive(Clone, Copy)]
enum Pick {
    A(usize),
    B(usize),
}

/// For each of `batches` blocks: the output block of `plan`, reading A's block `i` (of
/// `a_block` elements) and B's (of `b_block`; 0 for a single padding value).
fn apply<T: Clone>(
    batches: usize,
    (a, a_block): (&[T], usize),
    (b, b_block): (&[T], usize),
    plan: &[Pick],
) -> KResult<Vec<T>> {
    let mut out = Vec::with_capacity(batches * plan.len());
    let oob = || fail("internal: matrix plan out of bounds");
    for i in 0..batches {
        for p in plan {
            out.push(match *p {
                Pick::A(o) => a.get(i * a_block + o).ok_or_else(oob)?.clone(),
                Pick::B(o) => b.get(i * b_block + o).ok_or_else(oob)?.clone(),
            });
        }
    }
    Ok(out)
}

fn run_plan(
    batches: usize,
    a: (&Storage, usize),
    b: (&Storage, usize),
    plan: &[Pick],
) -> KResult<Storage> {
    let mismatch = fail(format!(
        "padding must be {}, got {}",
        a.0.dtype(),
        b.0.dtype()
    ));
    Ok(map_storage2!(a.0, b.0, x, y => apply(batches, (x, a.1), (y, b.1), plan)?, mismatch))
}

fn scalar_of(t: &Tensor, what: &str) -> KResult<i64> {
    match any_ints(t, what)?.as_slice() {
        [x] if t.rank() <= 1 => Ok(*x),
        _ => Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

fn matrix_dims(t: &Tensor) -> KResult<(usize, usize, usize)> {
    let r = t.rank();
    if r < 2 {
        return Err(fail(format!(
            "input must be at least 2-dim, got shape {:?}",
            t.shape()
        )));
    }
    let (rows, cols) = (t.shape()[r - 2], t.shape()[r - 1]);
    Ok((super::copy::prod(&t.shape()[..r - 2]), rows, cols))
}

fn band_part(_: &NodeSpec) -> Made {
    Ok(boxed(|_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let (batches, rows, cols) = matrix_dims(&t)?;
        let lower = scalar_of(&*tensor_input(inputs, 1)?, "num_lower")?;
        let upper = scalar_of(&*tensor_input(inputs, 2)?, "num_upper")?;
        if lower > rows as i64 {
            return Err(fail(format!(
                "num_lower must be negative or less or equal to number of rows ({rows}) got: \
                 {lower}"
            )));
        }
        if upper > cols as i64 {
            return Err(fail(format!(
                "num_upper must be negative or less or equal to number of columns ({cols}) \
                 got: {upper}"
            )));
        }
        if t.is_empty() {
            return Ok(vec![inputs[0].clone()]);
        }
        let mut plan = Vec::with_capacity(rows * cols);
        for r in 0..rows as i64 {
            for c in 0..cols as i64 {
                let keep = (lower < 0 || r - c <= lower) && (upper < 0 || c - r <= upper);
                plan.push(if keep {
                    Pick::A((r * cols as i64 + c) as usize)
                } else {
                    Pick::B(0)
                });
            }
        }
        let zero = zeros(t.dtype(), 1);
        let out = run_plan(batches, (t.storage(), rows * cols), (&zero, 0), &plan)?;
        one(make(t.shape().to_vec(), out)?)
    }))
}

/// `k`: one diagonal offset or a `[lower, upper]` pair.
fn diag_range(k: &Tensor) -> KResult<(i64, i64)> {
    let v = any_ints(k, "k")?;
    if k.rank() > 1 || v.is_empty() || v.len() > 2 {
        return Err(fail(format!(
            "k must be a scalar or a vector with at most 2 elements, got shape {:?}",
            k.shape()
        )));
    }
    let (lower, upper) = (v[0], v[v.len() - 1]);
    if lower > upper {
        return Err(fail(format!(
            "lower_diag_index {lower} must not be greater than upper_diag_index {upper}"
        )));
    }
    Ok((lower, upper))
}

/// (superdiagonals left-aligned, subdiagonals left-aligned).
fn alignment(node: &NodeSpec) -> Result<(bool, bool), String> {
    Ok(match node.attrs.string_or("align", "RIGHT_LEFT")? {
        "RIGHT_LEFT" => (false, true),
        "LEFT_RIGHT" => (true, false),
        "LEFT_LEFT" => (true, true),
        "RIGHT_RIGHT" => (false, false),
        other => return Err(format!("unknown diagonal alignment {other:?}")),
    })
}

/// The length of diagonal `d` of a rows x cols matrix, and where its values start in a packed
/// row of `length`: a right-aligned diagonal shorter than the longest is padded on the left.
fn diag_start(d: i64, rows: i64, cols: i64, length: i64, align: (bool, bool)) -> (i64, i64) {
    let len = (rows + d.min(0)).min(cols - d.max(0));
    let left = (d >= 0 && align.0) || (d <= 0 && align.1);
    (len, if left { 0 } else { length - len })
}

fn check_bounds(lower: i64, upper: i64, rows: usize, cols: usize) -> KResult<()> {
    let (r, c) = (rows as i64, cols as i64);
    for (name, i) in [("lower_diag_index", lower), ("upper_diag_index", upper)] {
        if !(-r < i && i < c || i == 0) {
            return Err(fail(format!(
                "{name} is out of bound: {i}. It must be between {} and {c}",
                -r
            )));
        }
    }
    Ok(())
}

/// For every element of a rows x cols matrix: Some(position in the packed `[diagonals,
/// length]` block) when one of the diagonals lower..=upper holds it.
fn scatter_plan(
    rows: usize,
    cols: usize,
    (lower, upper): (i64, i64),
    length: usize,
    align: (bool, bool),
) -> Vec<Option<usize>> {
    let (r, c, len) = (rows as i64, cols as i64, length as i64);
    let mut plan = Vec::with_capacity(rows * cols);
    for i in 0..r {
        for j in 0..c {
            let d = j - i;
            if d < lower || d > upper {
                plan.push(None);
                continue;
            }
            let (_, start) = diag_start(d, r, c, len, align);
            plan.push(Some(((upper - d) * len + i.min(j) + start) as usize));
        }
    }
    plan
}

fn diag(node: &NodeSpec) -> Made {
    let align = alignment(node)?;
    Ok(boxed(move |_, inputs| {
        let diagonal = tensor_input(inputs, 0)?;
        let (lower, upper) = diag_range(&*tensor_input(inputs, 1)?)?;
        let num_rows = scalar_of(&*tensor_input(inputs, 2)?, "num_rows")?;
        let num_cols = scalar_of(&*tensor_input(inputs, 3)?, "num_cols")?;
        let padding = tensor_input(inputs, 4)?;
        if padding.len() != 1 {
            return Err(fail("padding_value must be a scalar"));
        }
        let count = upper.saturating_sub(lower).saturating_add(1) as usize;
        let rank = diagonal.rank();
        if rank < if count == 1 { 1 } else { 2 } {
            return Err(fail(format!(
                "diagonal of shape {:?} has too few dimensions for {count} diagonals",
                diagonal.shape()
            )));
        }
        if count > 1 && diagonal.shape()[rank - 2] != count {
            return Err(fail(format!(
                "The number of diagonals provided in the input ({}) does not match the range \
                 [{lower}, {upper}]",
                diagonal.shape()[rank - 2]
            )));
        }
        let length = diagonal.shape()[rank - 1];
        let (rows, cols) = diag_matrix_size(length as i64, lower, upper, num_rows, num_cols)?;
        let batch = &diagonal.shape()[..rank - if count == 1 { 1 } else { 2 }];
        let mut out_shape = batch.to_vec();
        out_shape.extend([rows, cols]);
        if let Some(empty) = super::copy::if_empty(diagonal.dtype(), &out_shape)? {
            return one(empty);
        }
        checked_count(&[rows, cols])?;
        let plan: Vec<Pick> = scatter_plan(rows, cols, (lower, upper), length, align)
            .into_iter()
            .map(|p| p.map_or(Pick::B(0), Pick::A))
            .collect();
        let batches: usize = super::copy::prod(batch);
        let out = run_plan(
            batches,
            (diagonal.storage(), count * length),
            (padding.storage(), 0),
            &plan,
        )?;
        one(make(out_shape, out)?)
    }))
}

/// The matrix size left as -1: the smallest matrix that holds every diagonal.
fn diag_matrix_size(
    length: i64,
    lower: i64,
    upper: i64,
    rows: i64,
    cols: i64,
) -> KResult<(usize, usize)> {
    let min_rows = length - upper.min(0);
    let min_cols = length + lower.max(0);
    let (rows, cols) = match (rows, cols) {
        (-1, -1) => (min_rows.max(min_cols), min_rows.max(min_cols)),
        (-1, c) => (min_rows, c),
        (r, -1) => (r, min_cols),
        rc => rc,
    };
    if rows < min_rows || cols < min_cols || !(rows == min_rows || cols == min_cols) {
        return Err(fail(format!(
            "The number of rows ({rows}) or columns ({cols}) is not consistent with the \
             diagonal range [{lower}, {upper}] and diagonal length {length}"
        )));
    }
    Ok((rows as usize, cols as usize))
}

fn diag_part(node: &NodeSpec) -> Made {
    let align = alignment(node)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let (batches, rows, cols) = matrix_dims(&t)?;
        let (lower, upper) = diag_range(&*tensor_input(inputs, 1)?)?;
        check_bounds(lower, upper, rows, cols)?;
        let padding = tensor_input(inputs, 2)?;
        if padding.len() != 1 {
            return Err(fail("padding_value must be a scalar"));
        }
        let (r, c) = (rows as i64, cols as i64);
        let length = (r + upper.min(0)).min(c - lower.max(0)).max(0);
        let mut out_shape = t.shape()[..t.rank() - 2].to_vec();
        if lower != upper {
            out_shape.push(upper.saturating_sub(lower).saturating_add(1) as usize);
        }
        out_shape.push(length as usize);
        if let Some(empty) = super::copy::if_empty(t.dtype(), &out_shape)? {
            return one(empty);
        }
        let mut plan = Vec::new();
        for d in (lower..=upper).rev() {
            let (len, start) = diag_start(d, r, c, length, align);
            for j in 0..length {
                let along = j - start;
                plan.push(if along >= 0 && along < len {
                    let (i, k) = (along + (-d).max(0), along + d.max(0));
                    Pick::A((i * c + k) as usize)
                } else {
                    Pick::B(0)
                });
            }
        }
        let out = run_plan(
            batches,
            (t.storage(), rows * cols),
            (padding.storage(), 0),
            &plan,
        )?;
        one(make(out_shape, out)?)
    }))
}

fn set_diag(node: &NodeSpec) -> Made {
    let align = alignment(node)?;
    Ok(boxed(move |_, inputs| {
        let t = tensor_input(inputs, 0)?;
        let diagonal = tensor_input(inputs, 1)?;
        let (batches, rows, cols) = matrix_dims(&t)?;
        let (lower, upper) = diag_range(&*tensor_input(inputs, 2)?)?;
        check_bounds(lower, upper, rows, cols)?;
        let count = upper.saturating_sub(lower).saturating_add(1) as usize;
        let length = (rows as i64 + upper.min(0))
            .min(cols as i64 - lower.max(0))
            .max(0) as usize;
        let mut want = t.shape()[..t.rank() - 2].to_vec();
        if count > 1 {
            want.push(count);
        }
        want.push(length);
        if diagonal.shape() != want.as_slice() {
            return Err(fail(format!(
                "diagonal must have shape {want:?} for input of shape {:?} and diagonals \
                 [{lower}, {upper}], got {:?}",
                t.shape(),
                diagonal.shape()
            )));
        }
        if t.is_empty() {
            return Ok(vec![inputs[0].clone()]);
        }
        let plan: Vec<Pick> = scatter_plan(rows, cols, (lower, upper), length, align)
            .into_iter()
            .enumerate()
            .map(|(i, p)| p.map_or(Pick::B(i), Pick::A))
            .collect();
        let out = run_plan(
            batches,
            (diagonal.storage(), count * length),
            (t.storage(), rows * cols),
            &plan,
        )?;
        one(make(t.shape().to_vec(), out)?)
    }))
}
