//! `SM_Model`: loading, freeing, the signatures' inputs and outputs, and running one.
//!
//! A handle holds the core model plus C copies of every name and shape it hands out, made once
//! at load, so the returned pointers stay valid (and unchanged) until `sm_model_free`.

use std::ffi::{c_char, c_int, c_void, CString};
use std::path::Path;
use std::ptr::null;

use savedmodel_core::engine::TensorSpec;
use savedmodel_core::{LoadOptions, Model};

use crate::error::call;
use crate::feed::{self, Feeds};
use crate::outputs::SmOutputs;
use crate::{c_string, dtype, raw, RANK_ERROR, RANK_UNKNOWN};

/// The handle behind `SM_Model*`.
pub struct SmModel {
    model: Model,
    signatures: Vec<SignatureInfo>,
}

struct SignatureInfo {
    name: String,
    c_name: CString,
    inputs: Vec<SpecInfo>,
    outputs: Vec<SpecInfo>,
}

/// A signature input or output as the ABI hands it out.
struct SpecInfo {
    key: CString,
    dtype: c_int,
    /// None for an unknown rank; -1 for an unknown dimension.
    dims: Option<Vec<i64>>,
}

#[derive(Clone, Copy)]
enum Side {
    Input,
    Output,
}

impl SpecInfo {
    fn new(spec: &TensorSpec) -> Self {
        Self {
            key: c_string(&spec.key),
            dtype: spec.dtype.to_proto(),
            dims: spec.shape.clone(),
        }
    }
}

impl SmModel {
    fn new(model: Model) -> Self {
        let signatures = model
            .signatures()
            .iter()
            .map(|s| SignatureInfo {
                name: s.name.clone(),
                c_name: c_string(&s.name),
                inputs: s.inputs.iter().map(SpecInfo::new).collect(),
                outputs: s.outputs.iter().map(SpecInfo::new).collect(),
            })
            .collect();
        Self { model, signatures }
    }

    /// Signature `name`, or the core's error listing the available ones.
    fn signature(&self, name: *const c_char) -> Result<&SignatureInfo, String> {
        let name = raw::str(name, "signature")?;
        if let Some(found) = self.signatures.iter().find(|s| s.name == name) {
            return Ok(found);
        }
        Err(match self.model.signature(name) {
            Err(err) => err.to_string(),
            Ok(_) => format!("no signature {name:?}"),
        })
    }
}

/// The tag-set a `tags` argument names: NULL means `serve`, otherwise comma-separated tags
/// (spaces around them ignored; "" is the empty tag-set).
fn tag_set(tags: *const c_char) -> Result<Vec<String>, String> {
    if tags.is_null() {
        return Ok(LoadOptions::default().tags);
    }
    Ok(raw::str(tags, "tags")?
        .split(',')
        .map(str::trim)
        .filter(|t| !t.is_empty())
        .map(String::from)
        .collect())
}

fn load(path: *const c_char, tags: *const c_char) -> Result<*mut SmModel, String> {
    let path = Path::new(raw::str(path, "path")?);
    let options = LoadOptions {
        tags: tag_set(tags)?,
        ..LoadOptions::default()
    };
    savedmodel_alloc::keep_freed();
    let model = if path.is_dir() {
        Model::load(path, &options)
    } else {
        Model::load_graph_def(path, &options)
    };
    savedmodel_alloc::release_freed();
    Ok(raw::into_handle(SmModel::new(
        model.map_err(|e| e.to_string())?,
    )))
}

/// Loads a SavedModel directory (the MetaGraphDef tagged exactly `tags`) or a frozen GraphDef
/// file; NULL on error.
#[no_mangle]
pub extern "C" fn sm_model_load(path: *const c_char, tags: *const c_char) -> *mut SmModel {
    call(std::ptr::null_mut(), || load(path, tags))
}

/// Frees a model; NULL is ignored. Outputs of its runs stay valid.
#[no_mangle]
pub extern "C" fn sm_model_free(model: *mut SmModel) {
    crate::error::quiet(|| raw::free_handle(model));
}

#[no_mangle]
pub extern "C" fn sm_model_num_signatures(model: *const SmModel) -> usize {
    call(0, || Ok(raw::handle(model, "model")?.signatures.len()))
}

#[no_mangle]
pub extern "C" fn sm_model_signature_name(model: *const SmModel, index: usize) -> *const c_char {
    call(null(), || {
        let signatures = &raw::handle(model, "model")?.signatures;
        let found = signatures.get(index).ok_or_else(|| {
            format!(
                "signature index {index} is out of range: the model has {}",
                signatures.len()
            )
        })?;
        Ok(found.c_name.as_ptr())
    })
}

fn specs<'a>(
    model: *const SmModel,
    signature: *const c_char,
    side: Side,
) -> Result<(&'a SignatureInfo, &'a [SpecInfo]), String> {
    let found = raw::handle(model, "model")?.signature(signature)?;
    Ok(match side {
        Side::Input => (found, &found.inputs),
        Side::Output => (found, &found.outputs),
    })
}

fn spec<'a>(
    model: *const SmModel,
    signature: *const c_char,
    side: Side,
    index: usize,
) -> Result<&'a SpecInfo, String> {
    let (found, list) = specs(model, signature, side)?;
    let what = match side {
        Side::Input => "input",
        Side::Output => "output",
    };
    list.get(index).ok_or_else(|| {
        format!(
            "{what} index {index} is out of range: signature {:?} has {} {what}s",
            found.name,
            list.len()
        )
    })
}

fn count(model: *const SmModel, signature: *const c_char, side: Side) -> usize {
    call(0, || Ok(specs(model, signature, side)?.1.len()))
}

fn key(m: *const SmModel, s: *const c_char, side: Side, i: usize) -> *const c_char {
    call(null(), || Ok(spec(m, s, side, i)?.key.as_ptr()))
}

fn dtype_of(m: *const SmModel, s: *const c_char, side: Side, i: usize) -> c_int {
    call(dtype::INVALID, || Ok(spec(m, s, side, i)?.dtype))
}

fn rank(m: *const SmModel, s: *const c_char, side: Side, i: usize) -> c_int {
    call(RANK_ERROR, || {
        Ok(match &spec(m, s, side, i)?.dims {
            None => RANK_UNKNOWN,
            Some(dims) => c_int::try_from(dims.len()).map_err(|e| e.to_string())?,
        })
    })
}

fn dims(m: *const SmModel, s: *const c_char, side: Side, i: usize) -> *const i64 {
    call(null(), || {
        Ok(spec(m, s, side, i)?
            .dims
            .as_ref()
            .map_or(null(), |d| d.as_ptr()))
    })
}

#[no_mangle]
pub extern "C" fn sm_model_num_inputs(model: *const SmModel, signature: *const c_char) -> usize {
    count(model, signature, Side::Input)
}

#[no_mangle]
pub extern "C" fn sm_model_num_outputs(model: *const SmModel, signature: *const c_char) -> usize {
    count(model, signature, Side::Output)
}

#[no_mangle]
pub extern "C" fn sm_model_input_key(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> *const c_char {
    key(model, signature, Side::Input, index)
}

#[no_mangle]
pub extern "C" fn sm_model_output_key(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> *const c_char {
    key(model, signature, Side::Output, index)
}

#[no_mangle]
pub extern "C" fn sm_model_input_dtype(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> c_int {
    dtype_of(model, signature, Side::Input, index)
}

#[no_mangle]
pub extern "C" fn sm_model_output_dtype(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> c_int {
    dtype_of(model, signature, Side::Output, index)
}

#[no_mangle]
pub extern "C" fn sm_model_input_rank(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> c_int {
    rank(model, signature, Side::Input, index)
}

#[no_mangle]
pub extern "C" fn sm_model_output_rank(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> c_int {
    rank(model, signature, Side::Output, index)
}

#[no_mangle]
pub extern "C" fn sm_model_input_dims(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> *const i64 {
    dims(model, signature, Side::Input, index)
}

#[no_mangle]
pub extern "C" fn sm_model_output_dims(
    model: *const SmModel,
    signature: *const c_char,
    index: usize,
) -> *const i64 {
    dims(model, signature, Side::Output, index)
}

/// Runs `signature` on the caller's buffers (see `feed` and the header); NULL on error.
// The argument list is the documented C signature: one array per input attribute.
#[allow(clippy::too_many_arguments)]
#[no_mangle]
pub extern "C" fn sm_model_run(
    model: *mut SmModel,
    signature: *const c_char,
    n_inputs: usize,
    keys: *const *const c_char,
    dtypes: *const c_int,
    shapes: *const *const i64,
    ranks: *const c_int,
    data: *const *const c_void,
    byte_lengths: *const usize,
) -> *mut SmOutputs {
    call(std::ptr::null_mut(), || {
        let model = raw::handle(model.cast_const(), "model")?;
        let name = &model.signature(signature)?.name;
        let feeds = Feeds {
            keys: raw::slice(keys, n_inputs, "keys")?,
            dtypes: raw::slice(dtypes, n_inputs, "dtypes")?,
            shapes: raw::slice(shapes, n_inputs, "shapes")?,
            ranks: raw::slice(ranks, n_inputs, "ranks")?,
            data: raw::slice(data, n_inputs, "data")?,
            byte_lengths: raw::slice(byte_lengths, n_inputs, "byte_lengths")?,
        };
        let inputs = feed::inputs(&feeds)?;
        let outputs = model.model.run(name, inputs).map_err(|e| e.to_string())?;
        Ok(raw::into_handle(SmOutputs::new(outputs)))
    })
}
