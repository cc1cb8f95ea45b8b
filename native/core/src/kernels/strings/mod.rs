//! Strings, text and lookup tables: the string ops saver graphs and logging emit (file names,
//! formatting, regular expressions), the text preprocessing Keras layers emit (lowercasing,
//! punctuation stripping, splitting, hashing), ReadFile, and the lookup tables behind
//! `tf.lookup` and Keras' lookup layers.
//!
//! Strings are byte strings, never required to be UTF-8: ops that care about characters
//! (UTF8_CHAR units, regular expressions, `utf-8` lowercasing) read UTF-8 where it is valid and
//! pass other bytes through as TensorFlow does.

use crate::engine::kernel::{fail, KResult, Kernel, Registry};
use crate::tensor::Tensor;

mod convert;
mod farmhash;
mod file;
mod format;
mod join;
mod keyed_hash;
mod ngrams;
mod printf;
mod re2;
mod regex_ops;
mod split;
mod tables;
mod text;
mod unicode;
mod unicode_scripts;

pub use farmhash::fingerprint64;

pub fn register(r: &mut Registry) {
    text::register(r);
    split::register(r);
    ngrams::register(r);
    join::register(r);
    unicode::register(r);
    regex_ops::register(r);
    convert::register(r);
    format::register(r);
    file::register(r);
    tables::register(r);
}

/// What a factory returns.
type Made = Result<Box<dyn Kernel>, String>;

/// The strings of a string tensor; `what` names it in the error.
fn strings<'a>(t: &'a Tensor, what: &str) -> KResult<&'a [Vec<u8>]> {
    t.string_values()
        .ok_or_else(|| fail(format!("{what} must be a string tensor, got {}", t.dtype())))
}

/// The one string of a scalar string tensor.
fn scalar_bytes<'a>(t: &'a Tensor, what: &str) -> KResult<&'a [u8]> {
    match t.string_values() {
        Some([s]) if t.rank() == 0 => Ok(s),
        _ => Err(fail(format!(
            "{what} must be a scalar string, got a {} tensor of shape {:?}",
            t.dtype(),
            t.shape()
        ))),
    }
}

/// The one integer of a scalar int32 or int64 tensor.
fn scalar_int(t: &Tensor, what: &str) -> KResult<i64> {
    let values = crate::kernels::util::int_values(t, what)?;
    match values.as_slice() {
        [v] if t.rank() == 0 => Ok(*v),
        _ => Err(fail(format!(
            "{what} must be a scalar, got shape {:?}",
            t.shape()
        ))),
    }
}

/// A string tensor of `shape` (whose element count the caller computed from `values`).
fn strings_tensor(shape: Vec<usize>, values: Vec<Vec<u8>>) -> KResult<Tensor> {
    crate::kernels::util::make(shape, crate::tensor::Storage::String(values))
}
