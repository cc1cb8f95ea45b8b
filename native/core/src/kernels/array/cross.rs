//! Feature crosses: SparseCross and SparseCrossV2 (`tf.sparse.cross(_hashed)`, TensorFlow 1
//! feature columns, Keras' HashedCrossing) and RaggedCross (`tf.ragged.cross`).
//!
//! Every input becomes a column: flat features plus row splits (a sparse input's row is its
//! first index, a dense matrix's row its row, a ragged input's row its row). Per batch row,
//! every combination of one feature from each column is crossed, the last column varying
//! fastest: the features joined by a separator ("_X_" by default, integers as decimal text),
//! or hashed: `hash_key` combined with each feature's hash (Fingerprint64 of a string, an
//! int64's own bits) by TensorFlow's FingerprintCat64, then taken modulo `num_buckets` (or
//! modulo the largest int64 when there are no buckets). Sparse columns come first, then dense
//! ones (SparseCross), or in `input_order` (RaggedCross).

use std::sync::Arc;

use super::copy::checked_count;
use super::Made;
use crate::engine::kernel::{boxed, fail, tensor_input, KResult, NodeSpec};
use crate::engine::{Registry, Value};
use crate::kernels::strings::fingerprint64;
use crate::kernels::util::{int_values, make};
use crate::tensor::{Storage, Tensor};

pub fn register(r: &mut Registry) {
    r.add("SparseCross", sparse_cross);
    r.add("SparseCrossV2", sparse_cross_v2);
    r.add("RaggedCross", ragged_cross);
}

/// One input's features, row by row.
struct Column<'a> {
    features: Features<'a>,
    /// Row `i` is features `splits[i]..splits[i + 1]`.
    splits: Vec<usize>,
    /// Feature positions in row order, when the input's own order is not (a sparse input's
    /// entries of one row need not be adjacent).
    order: Option<Vec<usize>>,
}

enum Features<'a> {
    Ints(&'a [i64]),
    Strings(&'a [Vec<u8>]),
}

impl<'a> Features<'a> {
    fn of(t: &'a Tensor) -> KResult<Self> {
        match t.storage() {
            Storage::Int64(v) => Ok(Self::Ints(v)),
            Storage::String(v) => Ok(Self::Strings(v)),
            _ => Err(fail(format!(
                "crossed features must be int64 or string, got {}",
                t.dtype()
            ))),
        }
    }

    fn len(&self) -> usize {
        match self {
            Self::Ints(v) => v.len(),
            Self::Strings(v) => v.len(),
        }
    }

    /// The hash a hashed cross combines: Fingerprint64 of a string, an int64's bits.
    fn hash(&self, i: usize) -> u64 {
        match self {
            Self::Ints(v) => v.get(i).map_or(0, |&x| x as u64),
            Self::Strings(v) => v.get(i).map_or(0, |s| fingerprint64(s)),
        }
    }

    /// The text a joined cross uses: a string's bytes, an int64 in decimal.
    fn text(&self, i: usize, out: &mut Vec<u8>) {
        match self {
            Self::Ints(v) => {
                out.extend_from_slice(v.get(i).map_or(0, |&x| x).to_string().as_bytes())
            }
            Self::Strings(v) => out.extend_from_slice(v.get(i).map_or(&[][..], |s| s)),
        }
    }
}

impl Column<'_> {
    fn rows(&self) -> usize {
        self.splits.len().saturating_sub(1)
    }

    /// Feature `k` of row `row` (both in range: the odometer counts within the row's size).
    fn feature(&self, row: usize, k: usize) -> usize {
        let at = self.splits.get(row).map_or(0, |&s| s + k);
        match &self.order {
            Some(order) => order.get(at).copied().unwrap_or(at),
            None => at,
        }
    }

    fn count(&self, row: usize) -> usize {
        match (self.splits.get(row), self.splits.get(row + 1)) {
            (Some(&a), Some(&b)) => b.saturating_sub(a),
            _ => 0,
        }
    }
}

/// A sparse matrix input (indices n x 2, values n, shape 2): rows by first index, in the
/// order of the entries.
fn sparse_column<'a>(indices: &Tensor, values: &'a Tensor, shape: &Tensor) -> KResult<Column<'a>> {
    let dims = int_values(shape, "a sparse input's shape")?;
    let n = values.len();
    let (&[batch, _], true, &[_, 2]) = (dims.as_slice(), values.rank() == 1, indices.shape())
    else {
        return Err(fail(format!(
            "a sparse input of a cross must be a matrix (indices n x 2, values n, shape 2), got \
             indices {:?}, values {:?}, shape {:?}",
            indices.shape(),
            values.shape(),
            shape.shape()
        )));
    };
    if indices.shape().first() != Some(&n) {
        return Err(fail(format!(
            "a sparse input of a cross has {:?} indices for {n} values",
            indices.shape()
        )));
    }
    let batch = usize::try_from(batch)
        .map_err(|_| fail(format!("a sparse input's shape {dims:?} is negative")))?;
    checked_count(&[batch, 2])?;
    let rows = int_values(indices, "a sparse input's indices")?
        .chunks_exact(2)
        .map(|pair| {
            let row = pair.first().copied().unwrap_or(-1);
            usize::try_from(row)
                .ok()
                .filter(|&r| r < batch)
                .ok_or_else(|| {
                    fail(format!(
                        "a sparse input of a cross has row index {row} outside its {batch} rows"
                    ))
                })
        })
        .collect::<KResult<Vec<usize>>>()?;
    // A counting sort: positions grouped by row, in entry order within a row.
    let mut splits = vec![0usize; batch + 1];
    for &r in &rows {
        splits[r + 1] += 1;
    }
    for i in 0..batch {
        splits[i + 1] += splits[i];
    }
    let mut next = splits.clone();
    let mut order = vec![0usize; n];
    for (k, &r) in rows.iter().enumerate() {
        order[next[r]] = k;
        next[r] += 1;
    }
    Ok(Column {
        features: Features::of(values)?,
        splits,
        order: Some(order),
    })
}

/// A dense matrix input: row `i` is its row `i`.
fn dense_column(dense: &Tensor) -> KResult<Column<'_>> {
    let &[rows, cols] = dense.shape() else {
        return Err(fail(format!(
            "a dense input of a cross must be a matrix, got shape {:?}",
            dense.shape()
        )));
    };
    Ok(Column {
        features: Features::of(dense)?,
        splits: (0..=rows).map(|i| i * cols).collect(),
        order: None,
    })
}

/// A ragged input (values, row splits), its splits checked.
fn ragged_column<'a>(values: &'a Tensor, splits: &Tensor) -> KResult<Column<'a>> {
    let features = Features::of(values)?;
    let raw = int_values(splits, "ragged row splits")?;
    let ok = splits.rank() == 1
        && raw.first() == Some(&0)
        && raw.windows(2).all(|w| w[0] <= w[1])
        && raw.last().is_some_and(|&l| l == features.len() as i64);
    if !ok || values.rank() != 1 {
        return Err(fail(format!(
            "invalid row splits {raw:?} for {} values",
            features.len()
        )));
    }
    Ok(Column {
        features,
        splits: raw.into_iter().map(|s| s as usize).collect(),
        order: None,
    })
}

/// How crossed features become output values.
#[derive(Clone)]
enum Combine {
    Join(Vec<u8>),
    Hash { key: u64, buckets: u64 },
}

/// TensorFlow's FingerprintCat64: two fingerprints combined into one.
fn fingerprint_cat64(first: u64, second: u64) -> u64 {
    const MUL: u64 = 0xc6a4_a793_5bd1_e995;
    let shift_mix = |v: u64| v ^ (v >> 47);
    let mut result = first ^ MUL;
    result ^= shift_mix(second.wrapping_mul(MUL)).wrapping_mul(MUL);
    result = shift_mix(result.wrapping_mul(MUL)).wrapping_mul(MUL);
    shift_mix(result)
}

/// The crosses of every row, flat, and how many each row has.
fn cross(columns: &[Column], combine: &Combine) -> KResult<(Storage, Vec<usize>)> {
    let rows = columns.first().map_or(0, Column::rows);
    if let Some(other) = columns.iter().find(|c| c.rows() != rows) {
        return Err(fail(format!(
            "inputs have different batch sizes: {rows} and {}",
            other.rows()
        )));
    }
    let mut hashes = Vec::new();
    let mut texts = Vec::new();
    let mut lengths = Vec::with_capacity(rows);
    // Hashes are computed once per feature, not once per combination.
    let feature_hashes: Vec<Vec<u64>> = match combine {
        Combine::Hash { .. } => columns
            .iter()
            .map(|c| (0..c.features.len()).map(|i| c.features.hash(i)).collect())
            .collect(),
        Combine::Join(_) => Vec::new(),
    };
    let mut picks = vec![0usize; columns.len()];
    for row in 0..rows {
        let counts: Vec<usize> = columns.iter().map(|c| c.count(row)).collect();
        let total = if columns.is_empty() {
            0
        } else {
            counts
                .iter()
                .try_fold(1usize, |p, &c| p.checked_mul(c))
                .ok_or_else(|| fail("the cross of a row has too many features"))?
        };
        lengths.push(total);
        picks.fill(0);
        for _ in 0..total {
            match combine {
                Combine::Hash { key, buckets } => {
                    let mut h = *key;
                    for (c, (column, &k)) in columns.iter().zip(&picks).enumerate() {
                        let f = column.feature(row, k);
                        let fh = feature_hashes
                            .get(c)
                            .and_then(|v| v.get(f))
                            .copied()
                            .unwrap_or(0);
                        h = fingerprint_cat64(h, fh);
                    }
                    hashes.push((h % buckets) as i64);
                }
                Combine::Join(sep) => {
                    let mut text = Vec::new();
                    for (c, (column, &k)) in columns.iter().zip(&picks).enumerate() {
                        if c > 0 {
                            text.extend_from_slice(sep);
                        }
                        column.features.text(column.feature(row, k), &mut text);
                    }
                    texts.push(text);
                }
            }
            // The odometer: the last column turns fastest.
            for (p, &n) in picks.iter_mut().zip(&counts).rev() {
                *p += 1;
                if *p < n {
                    break;
                }
                *p = 0;
            }
        }
    }
    let values = match combine {
        Combine::Hash { .. } => Storage::Int64(hashes),
        Combine::Join(_) => Storage::String(texts),
    };
    Ok((values, lengths))
}

/// The crosses as a sparse matrix: (indices, values, dense shape [rows, longest row]).
fn sparse_output(values: Storage, lengths: &[usize]) -> KResult<Vec<Value>> {
    let n = values.len();
    let mut indices = Vec::with_capacity(2 * n);
    for (row, &len) in lengths.iter().enumerate() {
        for k in 0..len {
            indices.extend([row as i64, k as i64]);
        }
    }
    let longest = lengths.iter().copied().max().unwrap_or(0);
    Ok(vec![
        Value::tensor(Tensor::from_vec(vec![n, 2], indices)),
        Value::tensor(make(vec![n], values)?),
        Value::tensor(Tensor::from_vec(
            vec![2],
            vec![lengths.len() as i64, longest as i64],
        )),
    ])
}

/// The hashed or joined combination a node's attrs ask for.
fn combine_attrs(node: &NodeSpec) -> Result<Combine, String> {
    if !node.attrs.bool_or("hashed_output", false)? {
        return Ok(Combine::Join(b"_X_".to_vec()));
    }
    let buckets = node.attrs.int_or("num_buckets", 0)?;
    Ok(Combine::Hash {
        key: node.attrs.int_or("hash_key", 0)? as u64,
        buckets: if buckets > 0 {
            buckets as u64
        } else {
            i64::MAX as u64
        },
    })
}

/// The number of sparse inputs (`N`), checked against the node's inputs.
fn sparse_count(node: &NodeSpec, extra: usize) -> Result<usize, String> {
    let n = usize::try_from(node.attrs.int("N")?).map_err(|_| "attr N is negative".to_string())?;
    match n.checked_mul(3).and_then(|k| k.checked_add(extra)) {
        Some(k) if k <= node.num_inputs => Ok(n),
        _ => Err(format!(
            "{n} sparse inputs need {} inputs, got {}",
            3 * n + extra,
            node.num_inputs
        )),
    }
}

/// SparseCross's columns: the `n` sparse inputs (all indices, then values, then shapes), then
/// the dense ones.
fn sparse_columns(tensors: &[Arc<Tensor>], n: usize) -> KResult<Vec<Column<'_>>> {
    let mut columns = Vec::with_capacity(tensors.len().saturating_sub(2 * n));
    for i in 0..n {
        let (Some(indices), Some(values), Some(shape)) =
            (tensors.get(i), tensors.get(n + i), tensors.get(2 * n + i))
        else {
            return Err(fail("missing sparse input"));
        };
        columns.push(sparse_column(indices, values, shape)?);
    }
    for dense in tensors.iter().skip(3 * n) {
        columns.push(dense_column(dense)?);
    }
    Ok(columns)
}

fn all_tensors(inputs: &[Value], count: usize) -> KResult<Vec<Arc<Tensor>>> {
    (0..count).map(|i| tensor_input(inputs, i)).collect()
}

fn sparse_cross(node: &NodeSpec) -> Made {
    let n = sparse_count(node, 0)?;
    let combine = combine_attrs(node)?;
    let count = node.num_inputs;
    Ok(boxed(move |_, inputs| {
        let tensors = all_tensors(inputs, count)?;
        let columns = sparse_columns(&tensors, n)?;
        let (values, lengths) = cross(&columns, &combine)?;
        sparse_output(values, &lengths)
    }))
}

/// SparseCross joining strings by its last input, `sep`.
fn sparse_cross_v2(node: &NodeSpec) -> Made {
    let n = sparse_count(node, 1)?;
    let count = node.num_inputs;
    Ok(boxed(move |_, inputs| {
        let mut tensors = all_tensors(inputs, count)?;
        let sep = tensors.pop().ok_or_else(|| fail("missing input sep"))?;
        let separator = match sep.string_values() {
            Some([s]) if sep.rank() == 0 => s.clone(),
            _ => return Err(fail("sep must be a scalar string")),
        };
        let columns = sparse_columns(&tensors, n)?;
        let (values, lengths) = cross(&columns, &Combine::Join(separator))?;
        sparse_output(values, &lengths)
    }))
}

/// RaggedCross: ragged (values, splits), sparse and dense inputs crossed in `input_order`;
/// the crosses as a ragged tensor (values, row splits of `out_row_splits_type`).
fn ragged_cross(node: &NodeSpec) -> Made {
    let order = node.attrs.string("input_order")?.to_string();
    let n_ragged = node.attrs.dtype_numbers("ragged_values_types")?.len();
    let n_sparse =
        usize::try_from(node.attrs.int("Nsparse")?).map_err(|_| "attr Nsparse is negative")?;
    let n_dense = node.attrs.dtype_numbers("dense_types")?.len();
    let kinds = |k: char| order.chars().filter(|&c| c == k).count();
    if order.len() != n_ragged + n_sparse + n_dense
        || kinds('R') != n_ragged
        || kinds('S') != n_sparse
        || kinds('D') != n_dense
    {
        return Err(format!(
            "input_order {order:?} does not match {n_ragged} ragged, {n_sparse} sparse and \
             {n_dense} dense inputs"
        ));
    }
    if 2 * n_ragged + 3 * n_sparse + n_dense != node.num_inputs {
        return Err(format!(
            "RaggedCross has {} inputs, its attrs say {}",
            node.num_inputs,
            2 * n_ragged + 3 * n_sparse + n_dense
        ));
    }
    let combine = combine_attrs(node)?;
    let splits_type =
        super::int_dtype_attr(node, "out_row_splits_type", crate::dtype::DType::Int64)?;
    let count = node.num_inputs;
    Ok(boxed(move |_, inputs| {
        let t = all_tensors(inputs, count)?;
        let get = |i: usize| t.get(i).ok_or_else(|| fail(format!("missing input {i}")));
        let (mut r, mut s, mut d) = (0, 0, 0);
        let mut columns = Vec::with_capacity(order.len());
        for kind in order.chars() {
            let column = match kind {
                'R' => {
                    r += 1;
                    ragged_column(get(r - 1)?, get(n_ragged + r - 1)?)?
                }
                'S' => {
                    s += 1;
                    let base = 2 * n_ragged;
                    sparse_column(
                        get(base + s - 1)?,
                        get(base + n_sparse + s - 1)?,
                        get(base + 2 * n_sparse + s - 1)?,
                    )?
                }
                _ => {
                    d += 1;
                    dense_column(get(2 * n_ragged + 3 * n_sparse + d - 1)?)?
                }
            };
            columns.push(column);
        }
        let (values, lengths) = cross(&columns, &combine)?;
        let mut splits = Vec::with_capacity(lengths.len() + 1);
        let mut total = 0i64;
        splits.push(0);
        for &len in &lengths {
            total += len as i64;
            splits.push(total);
        }
        let n = values.len();
        Ok(vec![
            Value::tensor(make(vec![n], values)?),
            Value::tensor(super::int_tensor(
                splits_type,
                vec![lengths.len() + 1],
                splits,
            )?),
        ])
    }))
}
