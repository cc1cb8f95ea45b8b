//! The caller's input buffers as the core's tensors.
//!
//! Numeric tensors arrive as little-endian row-major bytes (float16/bfloat16 as 16-bit
//! patterns, bool as one byte, complex as (real, imaginary) pairs). String tensors arrive
//! packed: one little-endian uint64 length per element, then the elements' bytes back to back;
//! outputs use the same layout, so an output can be fed back as is.

use std::ffi::{c_char, c_int, c_void};

use savedmodel_core::tensor::element_count;
use savedmodel_core::{DType, Storage, Tensor};

use crate::{dtype, raw};

/// The parallel arrays of `sm_model_run`, one entry per input.
pub(crate) struct Feeds<'a> {
    pub keys: &'a [*const c_char],
    pub dtypes: &'a [c_int],
    pub shapes: &'a [*const i64],
    pub ranks: &'a [c_int],
    pub data: &'a [*const c_void],
    pub byte_lengths: &'a [usize],
}

/// Every input by key; a key given twice is an error (the core would keep one silently).
pub(crate) fn inputs(feeds: &Feeds<'_>) -> Result<Vec<(String, Tensor)>, String> {
    let mut out: Vec<(String, Tensor)> = Vec::with_capacity(feeds.keys.len());
    for i in 0..feeds.keys.len() {
        let (key, tensor) = input(feeds, i)?;
        if out.iter().any(|(k, _)| *k == key) {
            return Err(format!("input {i}: key {key:?} is given twice"));
        }
        out.push((key, tensor));
    }
    Ok(out)
}

/// Input `i`; every slice of `feeds` has at least `i + 1` entries (they share one length).
fn input(feeds: &Feeds<'_>, i: usize) -> Result<(String, Tensor), String> {
    let key = raw::str(feeds.keys[i], &format!("keys[{i}]"))?.to_string();
    let what = format!("input {i} ({key:?})");
    let dtype = dtype::from_c(feeds.dtypes[i], &what)?;
    let shape = shape(feeds.shapes[i], feeds.ranks[i], &what)?;
    let bytes = raw::slice(feeds.data[i].cast::<u8>(), feeds.byte_lengths[i], &what)?;
    let tensor = match dtype {
        DType::String => strings(shape, bytes, &what)?,
        _ => numeric(dtype, shape, bytes, &what)?,
    };
    Ok((key, tensor))
}

fn shape(dims: *const i64, rank: c_int, what: &str) -> Result<Vec<usize>, String> {
    let rank = usize::try_from(rank).map_err(|_| format!("{what}: rank {rank} is negative"))?;
    raw::slice(dims, rank, &format!("{what}: shape"))?
        .iter()
        .map(|&d| usize::try_from(d).map_err(|_| format!("{what}: dimension {d} is negative")))
        .collect()
}

/// Elements of `shape`, or an error if the count overflows.
fn count(shape: &[usize], what: &str) -> Result<usize, String> {
    element_count(shape).ok_or_else(|| format!("{what}: shape {shape:?} has too many elements"))
}

fn numeric(dtype: DType, shape: Vec<usize>, bytes: &[u8], what: &str) -> Result<Tensor, String> {
    let size = dtype.item_size().unwrap_or(1);
    let needed = count(&shape, what)?
        .checked_mul(size)
        .ok_or_else(|| format!("{what}: shape {shape:?} has too many elements"))?;
    if bytes.len() != needed {
        return Err(format!(
            "{what}: {dtype} {shape:?} takes {needed} bytes, got {}",
            bytes.len()
        ));
    }
    let storage = Storage::from_le_bytes(dtype, bytes)
        .ok_or_else(|| format!("{what}: {dtype} is not a fixed-size dtype"))?;
    Tensor::new(shape, storage).ok_or_else(|| format!("{what}: data does not fill its shape"))
}

/// A packed string tensor: `n` uint64 lengths, then the bytes, nothing after.
fn strings(shape: Vec<usize>, bytes: &[u8], what: &str) -> Result<Tensor, String> {
    let n = count(&shape, what)?;
    let header = n
        .checked_mul(8)
        .filter(|&h| h <= bytes.len())
        .ok_or_else(|| {
            format!(
                "{what}: {n} strings need {n}×8 bytes of lengths, got {} bytes in all",
                bytes.len()
            )
        })?;
    let (lengths, mut rest) = bytes.split_at(header);
    let mut items = Vec::with_capacity(n);
    for (j, chunk) in lengths.chunks_exact(8).enumerate() {
        let mut le = [0u8; 8];
        le.copy_from_slice(chunk);
        let len = usize::try_from(u64::from_le_bytes(le))
            .ok()
            .filter(|&len| len <= rest.len())
            .ok_or_else(|| format!("{what}: string {j} runs past the end of the buffer"))?;
        let (item, tail) = rest.split_at(len);
        items.push(item.to_vec());
        rest = tail;
    }
    if !rest.is_empty() {
        return Err(format!(
            "{what}: {} bytes follow the last string",
            rest.len()
        ));
    }
    Ok(Tensor::strings(shape, items))
}

/// `items` in the packed string layout.
pub(crate) fn pack_strings(items: &[Vec<u8>]) -> Vec<u8> {
    let total = items.iter().map(|s| 8 + s.len()).sum();
    let mut out = Vec::with_capacity(total);
    for item in items {
        out.extend_from_slice(&(item.len() as u64).to_le_bytes());
    }
    for item in items {
        out.extend_from_slice(item);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn packed_strings_round_trip() {
        let items = vec![b"ab".to_vec(), Vec::new(), b"\0xyz".to_vec()];
        let packed = pack_strings(&items);
        assert_eq!(packed.len(), 3 * 8 + 6);
        let tensor = strings(vec![3], &packed, "s").unwrap();
        assert_eq!(tensor.string_values(), Some(items.as_slice()));
    }

    #[test]
    fn packed_strings_must_fit_exactly() {
        let mut packed = pack_strings(&[b"ab".to_vec()]);
        assert!(strings(vec![2], &packed, "s")
            .unwrap_err()
            .contains("lengths"));
        packed.push(0);
        assert!(strings(vec![1], &packed, "s")
            .unwrap_err()
            .contains("1 bytes follow"));
        packed.truncate(9);
        assert!(strings(vec![1], &packed, "s")
            .unwrap_err()
            .contains("string 0 runs past"));
        let huge = u64::MAX.to_le_bytes();
        assert!(strings(vec![1], &huge, "s")
            .unwrap_err()
            .contains("runs past"));
    }

    #[test]
    fn numeric_bytes_must_match_the_shape() {
        let err = numeric(DType::Float32, vec![2, 3], &[0; 20], "input 0 (\"x\")").unwrap_err();
        assert_eq!(
            err,
            "input 0 (\"x\"): float32 [2, 3] takes 24 bytes, got 20"
        );
        let t = numeric(DType::Int16, vec![2], &[1, 0, 0xff, 0xff], "x").unwrap();
        assert_eq!(t.storage(), &Storage::Int16(vec![1, -1]));
        let err = numeric(DType::Int8, vec![usize::MAX, 2], &[], "x").unwrap_err();
        assert!(err.contains("too many elements"), "{err}");
    }

    #[test]
    fn negative_ranks_and_dimensions_are_errors() {
        assert!(shape(std::ptr::null(), -1, "x")
            .unwrap_err()
            .contains("rank -1"));
        let dims = [2i64, -3];
        let err = shape(dims.as_ptr(), 2, "x").unwrap_err();
        assert!(err.contains("dimension -3"), "{err}");
        assert!(shape(std::ptr::null(), 1, "x")
            .unwrap_err()
            .contains("NULL"));
        assert_eq!(shape(std::ptr::null(), 0, "x"), Ok(Vec::new()));
    }
}
