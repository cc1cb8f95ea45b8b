//! The C ABI of the native engine: `libsavedmodel.so` / `libsavedmodel.a`, declared by the
//! hand-written `include/savedmodel.h`, which documents the contract (ownership, lifetimes,
//! thread-safety, errors) that C callers keep.
//!
//! A thin layer over `savedmodel_core`, like the Python module: C buffers become the core's
//! tensors and back, the core's errors become `sm_last_error` text. Every entry point runs inside
//! `error::call`, which catches panics, so none crosses the ABI. The only `unsafe` code is in
//! `raw`, which turns the caller's pointers into references, slices and strings.

#[cfg(target_endian = "big")]
compile_error!("the C ABI hands out tensor buffers as little-endian bytes in place");

mod dtype;
mod error;
mod feed;
mod model;
mod outputs;
mod raw;

pub use dtype::sm_dtype_name;
pub use error::sm_last_error;
pub use model::{
    sm_model_free, sm_model_input_dims, sm_model_input_dtype, sm_model_input_key,
    sm_model_input_rank, sm_model_load, sm_model_num_inputs, sm_model_num_outputs,
    sm_model_num_signatures, sm_model_output_dims, sm_model_output_dtype, sm_model_output_key,
    sm_model_output_rank, sm_model_run, sm_model_signature_name, SmModel,
};
pub use outputs::{
    sm_outputs_byte_length, sm_outputs_count, sm_outputs_data, sm_outputs_dims, sm_outputs_dtype,
    sm_outputs_free, sm_outputs_key, sm_outputs_num_elements, sm_outputs_rank, sm_outputs_string,
    SmOutputs,
};

/// `text` as a C string; a NUL byte (which TensorFlow names never hold) is spelled `\0`.
fn c_string(text: &str) -> std::ffi::CString {
    std::ffi::CString::new(text.replace('\0', "\\0")).unwrap_or_default()
}

/// The rank the shape functions return when the rank is unknown (`SM_RANK_UNKNOWN`).
pub const RANK_UNKNOWN: i32 = -1;
/// The rank the shape functions return on error (`SM_RANK_ERROR`).
pub const RANK_ERROR: i32 = -2;
