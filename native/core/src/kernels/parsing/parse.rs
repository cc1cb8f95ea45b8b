//! The parse shared by the three ops: decode each serialized tf.Example (prost, the types
//! generated from protos/example.proto), then gather each requested feature over the batch.
//!
//! Semantics are TensorFlow's: a dense feature has a fixed shape (a missing one takes its
//! default, or is an error when the default is empty: a required feature) or a variable first
//! dimension (rows padded per batch with the default, which must be one element); a sparse
//! feature becomes indices [n, rank + 1] (example, position), values and a dense shape; a ragged
//! one values and row splits. An empty Feature (no list set) counts as missing. Errors name the
//! key and the example ("Name: <unknown>, Key: x, Index: 1.  Data types don't match...").
//! Nothing from the bytes is trusted: every count is checked and nothing indexes unchecked.

use std::collections::HashMap;
use std::sync::Arc;

use prost::Message;

use crate::engine::kernel::{fail, KResult};
use crate::engine::Value;
use crate::kernels::util::make;
use crate::protos::{feature, Example, Feature};
use crate::tensor::{Storage, Tensor};

/// A feature's element type: float32, int64 or bytes.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Float,
    Int64,
    Bytes,
}

impl Kind {
    pub const EXPECTED: &'static str = "parsed features are float32, int64 or string";

    pub fn from_dtype(number: i32) -> Option<Self> {
        match number {
            1 => Some(Self::Float),
            9 => Some(Self::Int64),
            7 => Some(Self::Bytes),
            _ => None,
        }
    }

    fn of(list: &feature::Kind) -> Self {
        match list {
            feature::Kind::FloatList(_) => Self::Float,
            feature::Kind::Int64List(_) => Self::Int64,
            feature::Kind::BytesList(_) => Self::Bytes,
        }
    }

    /// TensorFlow's name of the dtype, as its messages say it.
    fn name(self) -> &'static str {
        match self {
            Self::Float => "float",
            Self::Int64 => "int64",
            Self::Bytes => "string",
        }
    }
}

/// Whether a row-split dtype number is int64 (true) or int32 (false); None for others.
pub fn split_is_int64(number: i32) -> Option<bool> {
    match number {
        9 => Some(true),
        3 => Some(false),
        _ => None,
    }
}

/// What a node's attrs fix: sparse kinds, dense (kind, shape with -1 first for variable
/// length), ragged (kind, int64 splits).
pub struct Layout {
    pub sparse: Vec<Kind>,
    pub dense: Vec<(Kind, Vec<i64>)>,
    pub ragged: Vec<(Kind, bool)>,
}

/// What a run supplies: the keys of each kind and the dense defaults.
pub struct Features {
    pub sparse: Vec<String>,
    pub dense: Vec<String>,
    pub ragged: Vec<String>,
    pub defaults: Vec<Arc<Tensor>>,
}

/// Values of one kind gathered over the batch.
enum Column {
    Float(Vec<f32>),
    Int64(Vec<i64>),
    Bytes(Vec<Vec<u8>>),
}

impl Column {
    fn new(kind: Kind) -> Self {
        match kind {
            Kind::Float => Self::Float(Vec::new()),
            Kind::Int64 => Self::Int64(Vec::new()),
            Kind::Bytes => Self::Bytes(Vec::new()),
        }
    }

    /// Appends a feature's values (the caller checked the kind).
    fn extend(&mut self, list: &feature::Kind) {
        match (self, list) {
            (Self::Float(out), feature::Kind::FloatList(l)) => out.extend_from_slice(&l.value),
            (Self::Int64(out), feature::Kind::Int64List(l)) => out.extend_from_slice(&l.value),
            (Self::Bytes(out), feature::Kind::BytesList(l)) => out.extend(l.value.iter().cloned()),
            _ => {}
        }
    }

    /// Appends `times` copies of a default's values (the caller checked its dtype).
    fn extend_default(&mut self, default: &Tensor, times: usize) {
        for _ in 0..times {
            match (&mut *self, default.storage()) {
                (Self::Float(out), Storage::Float32(v)) => out.extend_from_slice(v),
                (Self::Int64(out), Storage::Int64(v)) => out.extend_from_slice(v),
                (Self::Bytes(out), Storage::String(v)) => out.extend(v.iter().cloned()),
                _ => {}
            }
        }
    }

    fn into_tensor(self, shape: Vec<usize>) -> KResult<Tensor> {
        make(
            shape,
            match self {
                Self::Float(v) => Storage::Float32(v),
                Self::Int64(v) => Storage::Int64(v),
                Self::Bytes(v) => Storage::String(v),
            },
        )
    }
}

fn list_len(list: &feature::Kind) -> usize {
    match list {
        feature::Kind::FloatList(l) => l.value.len(),
        feature::Kind::Int64List(l) => l.value.len(),
        feature::Kind::BytesList(l) => l.value.len(),
    }
}

/// The decoded batch: each example's features and its name for errors.
struct Batch {
    examples: Vec<HashMap<String, Feature>>,
    names: Vec<String>,
    batched: bool,
}

impl Batch {
    fn decode(serialized: &Tensor, names: &Tensor) -> KResult<Self> {
        let strings = serialized.string_values().ok_or_else(|| {
            fail(format!(
                "serialized must be strings, got {}",
                serialized.dtype()
            ))
        })?;
        let labels = names
            .string_values()
            .ok_or_else(|| fail(format!("names must be strings, got {}", names.dtype())))?;
        if !labels.is_empty() && names.shape() != serialized.shape() {
            return Err(fail(format!(
                "Expected names have the same shape as serialized: name.shape={:?}, serialized.shape={:?}",
                names.shape(),
                serialized.shape()
            )));
        }
        let examples = strings
            .iter()
            .map(|bytes| {
                Example::decode(bytes.as_slice())
                    .map(|e| e.features.map(|f| f.feature).unwrap_or_default())
                    .map_err(|_| {
                        fail(format!(
                            "Could not parse example input, value: '{}'",
                            preview(bytes)
                        ))
                    })
            })
            .collect::<KResult<Vec<_>>>()?;
        let names = (0..examples.len())
            .map(|i| match labels.get(i) {
                Some(label) => String::from_utf8_lossy(label).into_owned(),
                None => "<unknown>".to_string(),
            })
            .collect();
        Ok(Self {
            examples,
            names,
            batched: serialized.rank() == 1,
        })
    }

    fn name(&self, i: usize) -> &str {
        self.names.get(i).map_or("<unknown>", String::as_str)
    }

    /// Example `i`'s values of `key`, None when it lacks the key or the Feature is empty.
    fn values(
        &self,
        i: usize,
        key: &str,
        kind: Kind,
        dense: bool,
    ) -> KResult<Option<&feature::Kind>> {
        let Some(list) = self
            .examples
            .get(i)
            .and_then(|e| e.get(key))
            .and_then(|f| f.kind.as_ref())
        else {
            return Ok(None);
        };
        let found = Kind::of(list);
        if found != kind {
            let detail = if dense {
                format!(
                    "Data type: {} but expected type: {}",
                    found.name(),
                    kind.name()
                )
            } else {
                format!(
                    "Expected type: {}, Actual type: {}",
                    kind.name(),
                    found.name()
                )
            };
            return Err(fail(format!(
                "Name: {}, Key: {key}, Index: {i}.  Data types don't match. {detail}",
                self.name(i)
            )));
        }
        Ok(Some(list))
    }

    /// The output shape: the batch dimension (when batched) before `dims`.
    fn shape(&self, dims: &[usize]) -> Vec<usize> {
        let batch = self.batched.then_some(self.examples.len());
        batch.into_iter().chain(dims.iter().copied()).collect()
    }
}

/// The first bytes of a bad input, printable.
fn preview(bytes: &[u8]) -> String {
    let shown: String = bytes
        .iter()
        .take(100)
        .flat_map(|&b| std::ascii::escape_default(b))
        .map(char::from)
        .collect();
    if bytes.len() > 100 {
        format!("{shown}...")
    } else {
        shown
    }
}

/// Every output of one parse: sparse indices, values and shapes, dense values, ragged values
/// and row splits, each list in key order.
pub fn run(layout: &Layout, features: &Features, serialized: &Tensor, names: &Tensor) -> KResult {
    check_unique(features)?;
    let batch = Batch::decode(serialized, names)?;
    let (mut indices, mut values, mut shapes) = (Vec::new(), Vec::new(), Vec::new());
    for (key, &kind) in features.sparse.iter().zip(&layout.sparse) {
        let [i, v, s] = sparse_feature(&batch, key, kind)?;
        indices.push(Value::tensor(i));
        values.push(Value::tensor(v));
        shapes.push(Value::tensor(s));
    }
    let mut outputs: Vec<Value> = indices.into_iter().chain(values).chain(shapes).collect();
    let dense = features
        .dense
        .iter()
        .zip(&layout.dense)
        .zip(&features.defaults);
    for (j, ((key, (kind, shape)), default)) in dense.enumerate() {
        outputs.push(Value::tensor(dense_feature(
            &batch, key, *kind, shape, default, j,
        )?));
    }
    let mut splits = Vec::new();
    for (key, &(kind, int64)) in features.ragged.iter().zip(&layout.ragged) {
        let (values, row_splits) = ragged_feature(&batch, key, kind, int64)?;
        outputs.push(Value::tensor(values));
        splits.push(Value::tensor(row_splits));
    }
    outputs.extend(splits);
    Ok(outputs)
}

/// TensorFlow answers nonsense (empty outputs) when one key is asked for twice; refuse.
fn check_unique(features: &Features) -> KResult<()> {
    let all: Vec<&String> = features
        .sparse
        .iter()
        .chain(&features.dense)
        .chain(&features.ragged)
        .collect();
    for (i, key) in all.iter().enumerate() {
        if all[..i].contains(key) {
            return Err(fail(format!(
                "feature key '{key}' is requested more than once"
            )));
        }
    }
    Ok(())
}

fn sparse_feature(batch: &Batch, key: &str, kind: Kind) -> KResult<[Tensor; 3]> {
    let mut values = Column::new(kind);
    let mut indices = Vec::new();
    let mut longest = 0;
    for i in 0..batch.examples.len() {
        let Some(list) = batch.values(i, key, kind, false)? else {
            continue;
        };
        let count = list_len(list);
        for position in 0..count {
            if batch.batched {
                indices.push(i as i64);
            }
            indices.push(position as i64);
        }
        values.extend(list);
        longest = longest.max(count);
    }
    let rank = if batch.batched { 2 } else { 1 };
    let count = indices.len() / rank;
    let mut dense_shape = Vec::new();
    if batch.batched {
        dense_shape.push(batch.examples.len() as i64);
    }
    dense_shape.push(longest as i64);
    Ok([
        Tensor::from_vec(vec![count, rank], indices),
        values.into_tensor(vec![count])?,
        Tensor::from_vec(vec![rank], dense_shape),
    ])
}

fn ragged_feature(batch: &Batch, key: &str, kind: Kind, int64: bool) -> KResult<(Tensor, Tensor)> {
    let mut values = Column::new(kind);
    let mut splits = vec![0i64];
    let mut total = 0usize;
    for i in 0..batch.examples.len() {
        if let Some(list) = batch.values(i, key, kind, false)? {
            total += list_len(list);
            values.extend(list);
        }
        splits.push(total as i64);
    }
    if !batch.batched {
        splits.clear();
    }
    let n = splits.len();
    let row_splits = if int64 {
        Tensor::from_vec(vec![n], splits)
    } else {
        let narrow = splits
            .into_iter()
            .map(|s| {
                i32::try_from(s)
                    .map_err(|_| fail(format!("Key: {key}: too many values for int32 row splits")))
            })
            .collect::<KResult<Vec<i32>>>()?;
        Tensor::from_vec(vec![n], narrow)
    };
    Ok((values.into_tensor(vec![total])?, row_splits))
}

/// The dtype a default of `kind` must have.
fn default_matches(default: &Tensor, kind: Kind) -> bool {
    matches!(
        (default.storage(), kind),
        (Storage::Float32(_), Kind::Float)
            | (Storage::Int64(_), Kind::Int64)
            | (Storage::String(_), Kind::Bytes)
    )
}

fn dense_feature(
    batch: &Batch,
    key: &str,
    kind: Kind,
    shape: &[i64],
    default: &Tensor,
    j: usize,
) -> KResult<Tensor> {
    if !default_matches(default, kind) {
        return Err(fail(format!(
            "dense_defaults[{j}] must be {}, got {}",
            kind.name(),
            default.dtype()
        )));
    }
    if shape.first() == Some(&-1) {
        return variable_dense(batch, key, kind, shape, default, j);
    }
    let (dims, size) = dims_and_size(shape, 0, j)?;
    if !default.is_empty() && default.shape() != dims.as_slice() {
        return Err(fail(format!(
            "def_value[{j}].shape() == {:?} is not compatible with dense_shapes_[{j}] == {shape:?}",
            default.shape()
        )));
    }
    let mut out = Column::new(kind);
    for i in 0..batch.examples.len() {
        match batch.values(i, key, kind, true)? {
            Some(list) if list_len(list) == size => out.extend(list),
            Some(list) => {
                return Err(fail(format!(
                    "Name: {}, Key: {key}, Index: {i}.  Number of {} values != expected.  Values size: {} but output shape: {shape:?}",
                    batch.name(i),
                    kind.name(),
                    list_len(list)
                )))
            }
            None if default.is_empty() => {
                return Err(fail(format!(
                    "Name: {}, Feature: {key} (data type: {}) is required but could not be found.",
                    batch.name(i),
                    kind.name()
                )))
            }
            None => out.extend_default(default, 1),
        }
    }
    out.into_tensor(batch.shape(&dims))
}

/// `dense_shapes[j]` without its first `skip` dimensions, and how many elements that holds.
fn dims_and_size(shape: &[i64], skip: usize, j: usize) -> KResult<(Vec<usize>, usize)> {
    let too_large = || fail(format!("dense_shapes[{j}] {shape:?} is too large"));
    let dims = shape
        .iter()
        .skip(skip)
        .map(|&d| {
            usize::try_from(d).map_err(|_| {
                fail(format!(
                    "dense_shapes[{j}] {shape:?} has a negative dimension"
                ))
            })
        })
        .collect::<KResult<Vec<usize>>>()?;
    let size = dims
        .iter()
        .try_fold(1usize, |acc, &d| acc.checked_mul(d))
        .ok_or_else(too_large)?;
    Ok((dims, size))
}

/// A dense feature whose first dimension varies: rows of `stride` values, padded to the
/// longest example with the default's one element.
fn variable_dense(
    batch: &Batch,
    key: &str,
    kind: Kind,
    shape: &[i64],
    default: &Tensor,
    j: usize,
) -> KResult<Tensor> {
    if default.len() != 1 {
        return Err(fail(format!(
            "dense_shape[{j}] is a variable length shape: {shape:?}, therefore def_value[{j}] must contain a single element (the padding element)"
        )));
    }
    let (inner, stride) = dims_and_size(shape, 1, j)?;
    let mut lists = Vec::with_capacity(batch.examples.len());
    for i in 0..batch.examples.len() {
        let list = batch.values(i, key, kind, true)?;
        let count = list.map_or(0, list_len);
        if stride == 0 || count % stride != 0 {
            if count == 0 {
                lists.push((None, 0));
                continue;
            }
            return Err(fail(format!(
                "Name: {}, Key: {key}, Index: {i}.  Number of {} values is not a multiple of stride length. Saw {count} values but output shape is: {shape:?}",
                batch.name(i),
                kind.name()
            )));
        }
        lists.push((list, count / stride));
    }
    let longest = lists.iter().map(|&(_, rows)| rows).max().unwrap_or(0);
    let mut out = Column::new(kind);
    for &(list, rows) in &lists {
        if let Some(list) = list {
            out.extend(list);
        }
        out.extend_default(default, (longest - rows) * stride);
    }
    let mut dims = vec![longest];
    dims.extend(inner);
    out.into_tensor(batch.shape(&dims))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::protos::{Features as FeatureMap, FloatList};

    fn example_bytes() -> Vec<u8> {
        let mut map = HashMap::new();
        map.insert(
            "x".to_string(),
            Feature {
                kind: Some(feature::Kind::FloatList(FloatList {
                    value: vec![1.5, 2.5],
                })),
            },
        );
        Example {
            features: Some(FeatureMap { feature: map }),
        }
        .encode_to_vec()
    }

    fn parse(bytes: Vec<u8>) -> KResult {
        let layout = Layout {
            sparse: vec![Kind::Float],
            dense: vec![(Kind::Float, vec![-1])],
            ragged: vec![(Kind::Float, false)],
        };
        let features = Features {
            sparse: vec!["x".into()],
            dense: vec!["y".into()],
            ragged: vec!["z".into()],
            defaults: vec![Arc::new(Tensor::from_vec(vec![1], vec![0f32]))],
        };
        let serialized = Tensor::strings(vec![1], vec![bytes]);
        run(
            &layout,
            &features,
            &serialized,
            &Tensor::strings(vec![0], Vec::new()),
        )
    }

    #[test]
    fn damaged_bytes_are_errors_or_results_never_panics() {
        let valid = example_bytes();
        assert_eq!(parse(valid.clone()).map(|v| v.len()).ok(), Some(6));
        for cut in 0..valid.len() {
            let _ = parse(valid[..cut].to_vec());
        }
        for at in 0..valid.len() {
            for byte in [0x00, 0x7f, 0x80, 0xff] {
                let mut damaged = valid.clone();
                damaged[at] = byte;
                let _ = parse(damaged);
            }
        }
        assert!(parse(vec![0xff, 0xff, 0xff]).is_err());
    }
}
