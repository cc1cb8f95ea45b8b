//! The tf.Example parsing ops: ParseExampleV2 (`tf.io.parse_example` in TensorFlow 2),
//! ParseExample (TensorFlow 1 graphs, Estimator exports) and ParseSingleExample.
//!
//! They are what a model's classify and regress signatures run on the serialized tf.Example
//! protos a server feeds them, so a served model runs natively only when the engine has them.
//! The three ops differ only in where their keys come from (a vector input, one scalar input per
//! key, or attrs) and in the batch (a vector or a scalar); the parse itself is in [`parse`].

use std::sync::Arc;

use crate::engine::kernel::{boxed, fail, tensor_input, KResult, Kernel, NodeSpec, Registry};
use crate::protos::attr_value::Value as A;
use crate::tensor::Tensor;

mod parse;

use parse::{Features, Kind, Layout};

pub fn register(r: &mut Registry) {
    r.add("ParseExampleV2", parse_example_v2);
    r.add("ParseExample", parse_example);
    r.add("ParseSingleExample", parse_single_example);
}

type Made = Result<Box<dyn Kernel>, String>;

/// A list-of-types attr, empty when absent.
fn types(node: &NodeSpec, name: &str) -> Result<Vec<i32>, String> {
    if node.attrs.has(name) {
        node.attrs.dtype_numbers(name)
    } else {
        Ok(Vec::new())
    }
}

/// The feature kinds of a list-of-types attr.
fn kinds(node: &NodeSpec, name: &str) -> Result<Vec<Kind>, String> {
    types(node, name)?
        .into_iter()
        .map(|t| Kind::from_dtype(t).ok_or_else(|| format!("attr {name:?}: {}", Kind::EXPECTED)))
        .collect()
}

/// `dense_shapes`: one shape per dense feature; only the first dimension may be unknown (-1),
/// which makes the feature variable-length.
fn dense_shapes(node: &NodeSpec) -> Result<Vec<Vec<i64>>, String> {
    let Some(value) = node
        .attrs
        .map()
        .get("dense_shapes")
        .and_then(|a| a.value.as_ref())
    else {
        return Ok(Vec::new());
    };
    let A::List(list) = value else {
        return Err("attr \"dense_shapes\" should be a list of shapes".into());
    };
    list.shape
        .iter()
        .enumerate()
        .map(|(j, shape)| {
            let dims: Vec<i64> = shape.dim.iter().map(|d| d.size).collect();
            let inner_unknown = dims.iter().skip(1).any(|&d| d < 0);
            if shape.unknown_rank || inner_unknown || dims.first().is_some_and(|&d| d < -1) {
                return Err(format!(
                    "dense_shapes[{j}] has unknown rank or unknown inner dimensions: {dims:?}"
                ));
            }
            Ok(dims)
        })
        .collect()
}

/// What every op's attrs say: the kinds of sparse and dense features, the dense shapes, and
/// the ragged features' value kinds and split dtypes.
fn layout(node: &NodeSpec, sparse_attr: &str, ragged: bool) -> Result<Layout, String> {
    let sparse = kinds(node, sparse_attr)?;
    let dense = kinds(node, "Tdense")?;
    let shapes = dense_shapes(node)?;
    if shapes.len() != dense.len() {
        return Err(format!(
            "{} dense_shapes for {} Tdense",
            shapes.len(),
            dense.len()
        ));
    }
    let (ragged_kinds, splits) = if ragged {
        let splits = types(node, "ragged_split_types")?
            .into_iter()
            .map(|t| parse::split_is_int64(t).ok_or("ragged_split_types are int32 or int64"))
            .collect::<Result<Vec<_>, _>>()?;
        (kinds(node, "ragged_value_types")?, splits)
    } else {
        (Vec::new(), Vec::new())
    };
    if ragged_kinds.len() != splits.len() {
        return Err(format!(
            "{} ragged_value_types for {} ragged_split_types",
            ragged_kinds.len(),
            splits.len()
        ));
    }
    Ok(Layout {
        sparse,
        dense: dense.into_iter().zip(shapes).collect(),
        ragged: ragged_kinds.into_iter().zip(splits).collect(),
    })
}

fn check_count(node: &NodeSpec, expected: usize) -> Result<(), String> {
    if node.num_inputs != expected {
        return Err(format!(
            "{} inputs, expected {expected} for these attrs",
            node.num_inputs
        ));
    }
    Ok(())
}

/// The strings of a string tensor input.
fn strings_of(t: &Tensor, what: &str) -> KResult<Vec<String>> {
    let values = t
        .string_values()
        .ok_or_else(|| fail(format!("{what} must be strings, got {}", t.dtype())))?;
    Ok(values
        .iter()
        .map(|s| String::from_utf8_lossy(s).into_owned())
        .collect())
}

/// Keys from a string vector input, `count` of them.
fn key_vector(
    inputs: &[crate::engine::Value],
    i: usize,
    count: usize,
    what: &str,
) -> KResult<Vec<String>> {
    let t = tensor_input(inputs, i)?;
    if t.rank() > 1 || t.len() != count {
        return Err(fail(format!(
            "{what} must be a vector of {count} keys, got shape {:?}",
            t.shape()
        )));
    }
    strings_of(&t, what)
}

/// One key from each of `count` scalar string inputs starting at `first`.
fn key_scalars(
    inputs: &[crate::engine::Value],
    first: usize,
    count: usize,
    what: &str,
) -> KResult<Vec<String>> {
    (first..first + count)
        .map(|i| {
            let t = tensor_input(inputs, i)?;
            match strings_of(&t, what)?.as_slice() {
                [key] if t.rank() == 0 => Ok(key.clone()),
                _ => Err(fail(format!(
                    "{what}: each key must be a scalar string, got shape {:?}",
                    t.shape()
                ))),
            }
        })
        .collect()
}

fn inputs_from(
    inputs: &[crate::engine::Value],
    first: usize,
    count: usize,
) -> KResult<Vec<Arc<Tensor>>> {
    (first..first + count)
        .map(|i| tensor_input(inputs, i))
        .collect()
}

/// ParseExampleV2: serialized (scalar or vector), names, sparse_keys, dense_keys, ragged_keys,
/// dense_defaults.
fn parse_example_v2(node: &NodeSpec) -> Made {
    let layout = layout(node, "sparse_types", true)?;
    let num_sparse = node.attrs.int_or("num_sparse", 0)?;
    if usize::try_from(num_sparse).ok() != Some(layout.sparse.len()) {
        return Err(format!(
            "num_sparse ({num_sparse}) != {} sparse_types",
            layout.sparse.len()
        ));
    }
    check_count(node, 5 + layout.dense.len())?;
    Ok(boxed(move |_, inputs| {
        let serialized = tensor_input(inputs, 0)?;
        let names = tensor_input(inputs, 1)?;
        let features = Features {
            sparse: key_vector(inputs, 2, layout.sparse.len(), "sparse_keys")?,
            dense: key_vector(inputs, 3, layout.dense.len(), "dense_keys")?,
            ragged: key_vector(inputs, 4, layout.ragged.len(), "ragged_keys")?,
            defaults: inputs_from(inputs, 5, layout.dense.len())?,
        };
        if serialized.rank() > 1 {
            return Err(fail(format!(
                "Expected serialized to be a scalar or vector, got shape: {:?}",
                serialized.shape()
            )));
        }
        parse::run(&layout, &features, &serialized, &names)
    }))
}

/// ParseExample (version 1): serialized (a vector), names, one scalar input per sparse key,
/// then per dense key, then the dense defaults.
fn parse_example(node: &NodeSpec) -> Made {
    let layout = layout(node, "sparse_types", false)?;
    let (sparse, dense) = (layout.sparse.len(), layout.dense.len());
    let (n_sparse, n_dense) = (
        node.attrs.int_or("Nsparse", 0)?,
        node.attrs.int_or("Ndense", 0)?,
    );
    if usize::try_from(n_sparse).ok() != Some(sparse)
        || usize::try_from(n_dense).ok() != Some(dense)
    {
        return Err(format!(
            "Nsparse={n_sparse}, Ndense={n_dense} for {sparse} sparse_types and {dense} Tdense"
        ));
    }
    check_count(node, 2 + sparse + 2 * dense)?;
    Ok(boxed(move |_, inputs| {
        let serialized = tensor_input(inputs, 0)?;
        let names = tensor_input(inputs, 1)?;
        let features = Features {
            sparse: key_scalars(inputs, 2, sparse, "sparse_keys")?,
            dense: key_scalars(inputs, 2 + sparse, dense, "dense_keys")?,
            ragged: Vec::new(),
            defaults: inputs_from(inputs, 2 + sparse + dense, dense)?,
        };
        if serialized.rank() != 1 {
            return Err(fail(format!(
                "Expected serialized to be a vector, got shape: {:?}",
                serialized.shape()
            )));
        }
        parse::run(&layout, &features, &serialized, &names)
    }))
}

/// ParseSingleExample: one serialized Example (a scalar) and the dense defaults; keys are attrs.
fn parse_single_example(node: &NodeSpec) -> Made {
    let layout = layout(node, "sparse_types", false)?;
    let strings_attr = |name: &str| {
        if node.attrs.has(name) {
            node.attrs.strings(name)
        } else {
            Ok(Vec::new())
        }
    };
    let (sparse_keys, dense_keys) = (strings_attr("sparse_keys")?, strings_attr("dense_keys")?);
    if sparse_keys.len() != layout.sparse.len() || dense_keys.len() != layout.dense.len() {
        return Err(format!(
            "{} sparse_keys for {} sparse_types, {} dense_keys for {} Tdense",
            sparse_keys.len(),
            layout.sparse.len(),
            dense_keys.len(),
            layout.dense.len()
        ));
    }
    check_count(node, 1 + layout.dense.len())?;
    Ok(boxed(move |_, inputs| {
        let serialized = tensor_input(inputs, 0)?;
        if serialized.rank() != 0 {
            return Err(fail(format!(
                "Expected serialized to be a scalar, got shape: {:?}",
                serialized.shape()
            )));
        }
        let features = Features {
            sparse: sparse_keys.clone(),
            dense: dense_keys.clone(),
            ragged: Vec::new(),
            defaults: inputs_from(inputs, 1, layout.dense.len())?,
        };
        let names = Tensor::strings(vec![0], Vec::new());
        parse::run(&layout, &features, &serialized, &names)
    }))
}
