//! numpy's `.npy` format (and `.npz`, a zip of them), read and written without numpy.
//!
//! Only plain arrays: a header whose `descr` is a fixed-size little-endian number, bool or byte
//! string type. Object arrays (which numpy stores pickled) are refused, so a file can never run
//! code; the header's shape must fit the bytes that follow before anything is allocated.

use std::io::Read;
use std::path::Path;

use savedmodel_core::{DType, Storage, Tensor};

const MAGIC: &[u8] = b"\x93NUMPY";

/// Deflate cannot expand data more than about 1032-fold: what an .npz member may claim.
const DEFLATE_MAX_RATIO: u64 = 1032;

/// The array of a `.npy` file's bytes; `where_` names it in errors.
pub fn parse(bytes: &[u8], where_: &str) -> Result<Tensor, String> {
    let bad = |detail: &str| format!("{where_}: not a numpy .npy file ({detail})");
    if bytes.len() < 10 || &bytes[..6] != MAGIC {
        return Err(bad("no .npy magic string"));
    }
    let (header_len, start): (usize, usize) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        2 | 3 if bytes.len() >= 12 => (
            u32::from_le_bytes([bytes[8], bytes[9], bytes[10], bytes[11]]) as usize,
            12,
        ),
        v => return Err(bad(&format!("format version {v}"))),
    };
    let header = bytes
        .get(start..start.saturating_add(header_len))
        .ok_or_else(|| bad("truncated header"))?;
    let header = std::str::from_utf8(header).map_err(|_| bad("header is not text"))?;
    let descr = field(header, "descr").ok_or_else(|| bad("no descr in the header"))?;
    let fortran = field(header, "fortran_order").unwrap_or("False");
    let shape = parse_shape(field(header, "shape").ok_or_else(|| bad("no shape in the header"))?)
        .ok_or_else(|| bad("unreadable shape"))?;
    if fortran.starts_with("True") {
        return Err(format!(
            "{where_}: Fortran-order arrays are not supported; save a C-order array"
        ));
    }
    let data = &bytes[start + header_len..];
    decode(
        descr.trim_matches(|c| c == '\'' || c == '"'),
        shape,
        data,
        where_,
    )
}

/// The text of `key`'s value in a header dict such as `{'descr': '<f4', 'shape': (2, 3), }`.
fn field<'h>(header: &'h str, key: &str) -> Option<&'h str> {
    let at = header.find(&format!("'{key}'"))? + key.len() + 2;
    let rest = header[at..].trim_start().strip_prefix(':')?.trim_start();
    let end = if rest.starts_with('(') {
        rest.find(')')? + 1
    } else {
        rest.find([',', '}']).unwrap_or(rest.len())
    };
    Some(rest[..end].trim())
}

fn parse_shape(text: &str) -> Option<Vec<usize>> {
    text.strip_prefix('(')?
        .strip_suffix(')')?
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().ok())
        .collect()
}

fn decode(descr: &str, shape: Vec<usize>, data: &[u8], where_: &str) -> Result<Tensor, String> {
    let count = savedmodel_core::tensor::element_count(&shape)
        .ok_or_else(|| format!("{where_}: shape {shape:?} is too large"))?;
    if descr.starts_with('>') && !descr.ends_with("1") {
        return Err(format!(
            "{where_}: big-endian arrays ({descr}) are not supported"
        ));
    }
    let kind = descr.trim_start_matches(['<', '|', '=']);
    if let Some(width) = kind.strip_prefix('S') {
        let width: usize = width
            .parse()
            .map_err(|_| format!("{where_}: bad dtype {descr}"))?;
        return strings(shape, count, width, data, where_);
    }
    let dtype = match kind {
        "f2" => DType::Float16,
        "f4" => DType::Float32,
        "f8" => DType::Float64,
        "i1" => DType::Int8,
        "i2" => DType::Int16,
        "i4" => DType::Int32,
        "i8" => DType::Int64,
        "u1" => DType::UInt8,
        "u2" => DType::UInt16,
        "u4" => DType::UInt32,
        "u8" => DType::UInt64,
        "b1" => DType::Bool,
        "c8" => DType::Complex64,
        "c16" => DType::Complex128,
        "O" => {
            return Err(format!(
                "{where_}: holds Python objects, which load only with pickle"
            ))
        }
        _ => return Err(format!("{where_}: unsupported dtype {descr}")),
    };
    let size = dtype.item_size().unwrap_or(1);
    let needed = count.saturating_mul(size);
    if needed > data.len() {
        return Err(format!(
            "{where_}: the header claims shape {shape:?} of {dtype} ({needed} bytes), but the file has {} bytes of data",
            data.len()
        ));
    }
    let storage = Storage::from_le_bytes(dtype, &data[..needed])
        .ok_or_else(|| format!("{where_}: bad {dtype} data"))?;
    Tensor::new(shape, storage).ok_or_else(|| format!("{where_}: shape does not fit the data"))
}

/// numpy's fixed-width byte strings (`|S<n>`): each element is padded with NULs, which it drops.
fn strings(
    shape: Vec<usize>,
    count: usize,
    width: usize,
    data: &[u8],
    where_: &str,
) -> Result<Tensor, String> {
    let needed = count.saturating_mul(width);
    if needed > data.len() {
        return Err(format!(
            "{where_}: the header claims {count} strings of {width} bytes, but the file has {} bytes of data",
            data.len()
        ));
    }
    let items = (0..count)
        .map(|i| {
            let item = &data[i * width..(i + 1) * width];
            let end = item.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
            item[..end].to_vec()
        })
        .collect();
    Ok(Tensor::strings(shape, items))
}

/// A tensor as `.npy` bytes (format 1.0; strings as `|S<longest>`, as numpy saves bytes).
pub fn encode(tensor: &Tensor) -> Vec<u8> {
    let (descr, data) = match tensor.storage() {
        Storage::String(items) => {
            let width = items.iter().map(Vec::len).max().unwrap_or(0).max(1);
            let mut data = Vec::with_capacity(width * items.len());
            for item in items {
                data.extend_from_slice(item);
                data.resize(data.len() + width - item.len(), 0);
            }
            (format!("|S{width}"), data)
        }
        storage => (descr_of(storage.dtype()).to_string(), storage.to_le_bytes()),
    };
    let dims: Vec<String> = tensor.shape().iter().map(usize::to_string).collect();
    let shape = match dims.len() {
        1 => format!("({},)", dims[0]),
        _ => format!("({})", dims.join(", ")),
    };
    let mut header = format!("{{'descr': '{descr}', 'fortran_order': False, 'shape': {shape}, }}");
    // numpy pads the header with spaces so that the data starts on a 64-byte boundary.
    while (10 + header.len() + 1) % 64 != 0 {
        header.push(' ');
    }
    header.push('\n');
    let mut out = Vec::with_capacity(10 + header.len() + data.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(&[1, 0]);
    out.extend_from_slice(&(header.len() as u16).to_le_bytes());
    out.extend_from_slice(header.as_bytes());
    out.extend_from_slice(&data);
    out
}

fn descr_of(dtype: DType) -> &'static str {
    match dtype {
        DType::Float16 => "<f2",
        // ml_dtypes' bfloat16 has no numpy descr; its 16-bit patterns are saved as uint16.
        DType::BFloat16 | DType::UInt16 => "<u2",
        DType::Float32 => "<f4",
        DType::Float64 => "<f8",
        DType::Int8 => "|i1",
        DType::Int16 => "<i2",
        DType::Int32 => "<i4",
        DType::Int64 => "<i8",
        DType::UInt8 => "|u1",
        DType::UInt32 => "<u4",
        DType::UInt64 => "<u8",
        DType::Bool => "|b1",
        DType::Complex64 => "<c8",
        DType::Complex128 => "<c16",
        DType::String => "|O",
    }
}

/// The array `path` holds (`.npy`), or its member `key` (`.npz`; the only member when `key` is
/// None).
pub fn read_file(path: &Path, key: Option<&str>, where_: &str) -> Result<Tensor, String> {
    let bytes = std::fs::read(path).map_err(|e| format!("{where_}: cannot read ({e})"))?;
    if !bytes.starts_with(b"PK") {
        if key.is_some() {
            return Err(format!("{where_} is a .npy file; [key] applies to .npz"));
        }
        return parse(&bytes, where_);
    }
    let damaged = |e: zip::result::ZipError| format!("{where_}: damaged .npz file ({e})");
    let mut archive = zip::ZipArchive::new(std::io::Cursor::new(bytes)).map_err(damaged)?;
    let names: Vec<String> = archive.file_names().map(str::to_string).collect();
    let keys: Vec<&str> = names
        .iter()
        .map(|n| n.strip_suffix(".npy").unwrap_or(n))
        .collect();
    let key = match key {
        Some(k) => k,
        None if keys.len() == 1 => keys[0],
        None => {
            return Err(format!(
                "{where_} has arrays {keys:?}; name one as {}[key]",
                path.display()
            ))
        }
    };
    let Some(index) = keys.iter().position(|k| *k == key) else {
        return Err(format!(
            "{where_} has arrays {keys:?}; name one as {}[key]",
            path.display()
        ));
    };
    let mut member = archive.by_index(index).map_err(damaged)?;
    let bound = member.compressed_size().saturating_mul(DEFLATE_MAX_RATIO);
    if member.size() > bound {
        return Err(format!(
            "{where_}[{key}]: the archive claims {} bytes from {} stored",
            member.size(),
            member.compressed_size()
        ));
    }
    let mut data = Vec::new();
    let size = member.size();
    member
        .by_ref()
        .take(size)
        .read_to_end(&mut data)
        .map_err(|e| format!("{where_}[{key}]: damaged .npz file ({e})"))?;
    parse(&data, &format!("{where_}[{key}]"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arrays_round_trip_through_npy_bytes() {
        let t = Tensor::from_vec(vec![2, 3], vec![1.0f32, 2.0, 3.0, 4.0, 5.0, 6.0]);
        let back = parse(&encode(&t), "t").unwrap();
        assert_eq!(back, t);
        let s = Tensor::strings(vec![2], vec![b"ab".to_vec(), b"c".to_vec()]);
        assert_eq!(parse(&encode(&s), "s").unwrap(), s);
        let scalar = Tensor::scalar(7i64);
        assert_eq!(parse(&encode(&scalar), "x").unwrap(), scalar);
    }

    #[test]
    fn a_header_claiming_more_than_the_file_is_an_error() {
        let mut bytes = encode(&Tensor::from_vec(vec![2], vec![1i32, 2]));
        bytes.truncate(bytes.len() - 4);
        let err = parse(&bytes, "x.npy").unwrap_err();
        assert!(
            err.contains("x.npy: the header claims shape [2] of int32"),
            "{err}"
        );
    }

    #[test]
    fn object_arrays_and_garbage_are_refused() {
        let mut bytes = encode(&Tensor::from_vec(vec![1], vec![1i64]));
        let at = bytes.windows(5).position(|w| w == b"'<i8'").unwrap();
        bytes[at..at + 5].copy_from_slice(b"'|O' ");
        assert!(parse(&bytes, "o").unwrap_err().contains("pickle"));
        assert!(parse(b"hello world", "g")
            .unwrap_err()
            .contains("not a numpy"));
    }
}
