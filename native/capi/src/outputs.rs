//! `SM_Outputs`: the tensors one run returned, with their keys, dtypes, shapes and bytes.
//!
//! Numeric data is handed out in place (the core's buffers are little-endian row-major already);
//! string tensors are packed once (see `feed`) so `sm_outputs_data` has one layout for all.

use std::ffi::{c_char, c_int, c_void, CString};
use std::ptr::null;
use std::sync::Arc;

use savedmodel_core::{Storage, Tensor};

use crate::error::call;
use crate::feed::pack_strings;
use crate::{c_string, dtype, raw, RANK_ERROR};

/// The handle behind `SM_Outputs*`; independent of the model that made it.
pub struct SmOutputs {
    items: Vec<Output>,
}

struct Output {
    key: CString,
    dims: Vec<i64>,
    tensor: Arc<Tensor>,
    /// The packed bytes of a string tensor; empty for the others.
    packed: Vec<u8>,
}

impl SmOutputs {
    pub(crate) fn new(outputs: Vec<(String, Arc<Tensor>)>) -> Self {
        let items = outputs
            .into_iter()
            .map(|(key, tensor)| Output {
                key: c_string(&key),
                // A dimension of an allocated tensor fits in i64: memory is smaller.
                dims: tensor.shape().iter().map(|&d| d as i64).collect(),
                packed: tensor.string_values().map(pack_strings).unwrap_or_default(),
                tensor,
            })
            .collect();
        Self { items }
    }
}

impl Output {
    /// The data pointer and byte length `sm_outputs_data` / `sm_outputs_byte_length` give.
    fn bytes(&self) -> (*const c_void, usize) {
        fn raw_bytes<T>(values: &[T]) -> (*const c_void, usize) {
            (values.as_ptr().cast(), size_of_val(values))
        }
        match self.tensor.storage() {
            Storage::Float16(v) | Storage::BFloat16(v) | Storage::UInt16(v) => raw_bytes(v),
            Storage::Float32(v) => raw_bytes(v),
            Storage::Float64(v) => raw_bytes(v),
            Storage::Int8(v) => raw_bytes(v),
            Storage::Int16(v) => raw_bytes(v),
            Storage::Int32(v) => raw_bytes(v),
            Storage::Int64(v) => raw_bytes(v),
            Storage::UInt8(v) => raw_bytes(v),
            Storage::UInt32(v) => raw_bytes(v),
            Storage::UInt64(v) => raw_bytes(v),
            Storage::Bool(v) => raw_bytes(v),
            Storage::Complex64(v) => raw_bytes(v),
            Storage::Complex128(v) => raw_bytes(v),
            Storage::String(_) => raw_bytes(&self.packed),
        }
    }
}

fn item<'a>(outputs: *const SmOutputs, index: usize) -> Result<&'a Output, String> {
    let items = &raw::handle(outputs, "outputs")?.items;
    items.get(index).ok_or_else(|| {
        format!(
            "output index {index} is out of range: the run returned {}",
            items.len()
        )
    })
}

#[no_mangle]
pub extern "C" fn sm_outputs_count(outputs: *const SmOutputs) -> usize {
    call(0, || Ok(raw::handle(outputs, "outputs")?.items.len()))
}

#[no_mangle]
pub extern "C" fn sm_outputs_key(outputs: *const SmOutputs, index: usize) -> *const c_char {
    call(null(), || Ok(item(outputs, index)?.key.as_ptr()))
}

#[no_mangle]
pub extern "C" fn sm_outputs_dtype(outputs: *const SmOutputs, index: usize) -> c_int {
    call(dtype::INVALID, || {
        Ok(item(outputs, index)?.tensor.dtype().to_proto())
    })
}

#[no_mangle]
pub extern "C" fn sm_outputs_rank(outputs: *const SmOutputs, index: usize) -> c_int {
    call(RANK_ERROR, || {
        c_int::try_from(item(outputs, index)?.dims.len()).map_err(|e| e.to_string())
    })
}

#[no_mangle]
pub extern "C" fn sm_outputs_dims(outputs: *const SmOutputs, index: usize) -> *const i64 {
    call(null(), || Ok(item(outputs, index)?.dims.as_ptr()))
}

#[no_mangle]
pub extern "C" fn sm_outputs_num_elements(outputs: *const SmOutputs, index: usize) -> usize {
    call(0, || Ok(item(outputs, index)?.tensor.len()))
}

#[no_mangle]
pub extern "C" fn sm_outputs_data(outputs: *const SmOutputs, index: usize) -> *const c_void {
    call(null(), || Ok(item(outputs, index)?.bytes().0))
}

#[no_mangle]
pub extern "C" fn sm_outputs_byte_length(outputs: *const SmOutputs, index: usize) -> usize {
    call(0, || Ok(item(outputs, index)?.bytes().1))
}

/// Element `element` of string output `index`: its bytes (not NUL-terminated), its length
/// stored through `length` unless that is NULL.
#[no_mangle]
pub extern "C" fn sm_outputs_string(
    outputs: *const SmOutputs,
    index: usize,
    element: usize,
    length: *mut usize,
) -> *const c_char {
    call(null(), || {
        let found = item(outputs, index)?;
        let items = found.tensor.string_values().ok_or_else(|| {
            format!(
                "output {index} ({:?}) is {}, not string",
                found.key,
                found.tensor.dtype()
            )
        })?;
        let text = items.get(element).ok_or_else(|| {
            format!(
                "element {element} is out of range: output {index} ({:?}) has {}",
                found.key,
                items.len()
            )
        })?;
        raw::write(length, text.len(), "length")?;
        Ok(text.as_ptr().cast())
    })
}

/// Frees outputs; NULL is ignored. Pointers into them become invalid.
#[no_mangle]
pub extern "C" fn sm_outputs_free(outputs: *mut SmOutputs) {
    crate::error::quiet(|| raw::free_handle(outputs));
}
