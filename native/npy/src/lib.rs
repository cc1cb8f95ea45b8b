//! numpy's `.npy` format (and `.npz`, a zip of them), read and written without numpy: how
//! `savedmodel-run` takes inputs and writes outputs, and how the tests read TensorFlow's
//! recorded values. One reader, so the runner and the tests cannot disagree about a file.
//!
//! Only plain arrays: a header whose `descr` is a fixed-size little-endian number, bool, byte
//! string or unicode string type. Object arrays (which numpy stores pickled) are refused, so a
//! file can never run code; the header's shape must fit the bytes that follow before anything is
//! allocated.

use std::io::Read;
use std::path::Path;

use savedmodel_core::{DType, Storage, Tensor};

const MAGIC: &[u8] = b"\x93NUMPY";

/// Deflate cannot expand data more than about 1032-fold: what an .npz member may claim.
const DEFLATE_MAX_RATIO: u64 = 1032;

/// A `.npy` file's header and the bytes after it, not yet decoded: for callers (the C ABI's
/// tests) that want numpy's raw layout.
pub struct Raw<'a> {
    /// numpy's dtype string without quotes, e.g. `<f4` or `|S5`.
    pub descr: String,
    pub shape: Vec<usize>,
    pub data: &'a [u8],
}

/// The array of a `.npy` file's bytes; `where_` names it in errors.
pub fn parse(bytes: &[u8], where_: &str) -> Result<Tensor, String> {
    let raw = parse_raw(bytes, where_)?;
    decode(&raw.descr, raw.shape, raw.data, where_)
}

/// The header of a `.npy` file's bytes and its data, checked to be a C-order array.
pub fn parse_raw<'a>(bytes: &'a [u8], where_: &str) -> Result<Raw<'a>, String> {
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
    Ok(Raw {
        descr: descr.trim_matches(|c| c == '\'' || c == '"').to_string(),
        shape,
        data: &bytes[start + header_len..],
    })
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
        return fixed_strings(shape, count, width, false, data, where_);
    }
    if let Some(width) = kind.strip_prefix('U') {
        let width: usize = width
            .parse()
            .map_err(|_| format!("{where_}: bad dtype {descr}"))?;
        return fixed_strings(shape, count, width, true, data, where_);
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

/// numpy's fixed-width strings: bytes (`|S<n>`) or UTF-32 characters (`<U<n>`, as UTF-8 bytes),
/// each element padded with NULs, which it drops.
fn fixed_strings(
    shape: Vec<usize>,
    count: usize,
    width: usize,
    unicode: bool,
    data: &[u8],
    where_: &str,
) -> Result<Tensor, String> {
    let (unit, what) = if unicode {
        (4, "characters")
    } else {
        (1, "bytes")
    };
    let item_bytes = width.saturating_mul(unit);
    if count.saturating_mul(item_bytes) > data.len() {
        return Err(format!(
            "{where_}: the header claims {count} strings of {width} {what}, but the file has {} bytes of data",
            data.len()
        ));
    }
    let items = (0..count)
        .map(|i| {
            let item = &data[i * item_bytes..(i + 1) * item_bytes];
            if unicode {
                utf32(item).ok_or_else(|| format!("{where_}: a string holds an invalid character"))
            } else {
                let end = item.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
                Ok(item[..end].to_vec())
            }
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok(Tensor::strings(shape, items))
}

/// UTF-32 little-endian characters up to the first NUL, as UTF-8; None for an invalid one.
fn utf32(item: &[u8]) -> Option<Vec<u8>> {
    let text: Option<String> = item
        .chunks_exact(4)
        .map(|b| u32::from_le_bytes([b[0], b[1], b[2], b[3]]))
        .take_while(|&u| u != 0)
        .map(char::from_u32)
        .collect();
    text.map(String::into_bytes)
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
    let mut archive = Npz::new(bytes, where_)?;
    let keys = archive.keys();
    let unnamed = || {
        format!(
            "{where_} has arrays {keys:?}; name one as {}[key]",
            path.display()
        )
    };
    let index = match key {
        Some(k) => keys.iter().position(|name| name == k),
        None if keys.len() == 1 => Some(0),
        None => None,
    }
    .ok_or_else(unnamed)?;
    let data = archive.member(index)?;
    parse(&data, &format!("{where_}[{}]", keys[index]))
}

/// Every member of the `.npz` at `path` as `(key, .npy bytes)`, in archive order; keys drop
/// the `.npy` suffix.
pub fn read_npz(path: &Path) -> Result<Vec<(String, Vec<u8>)>, String> {
    let where_ = path.display().to_string();
    let bytes = std::fs::read(path).map_err(|e| format!("{where_}: cannot read ({e})"))?;
    let mut archive = Npz::new(bytes, &where_)?;
    let keys = archive.keys();
    keys.into_iter()
        .enumerate()
        .map(|(i, key)| Ok((key, archive.member(i)?)))
        .collect()
}

/// Every array of the `.npz` at `path`, by key.
pub fn read_npz_arrays(path: &Path) -> Result<Vec<(String, Tensor)>, String> {
    let where_ = path.display().to_string();
    read_npz(path)?
        .into_iter()
        .map(|(key, bytes)| {
            let tensor = parse(&bytes, &format!("{where_}[{key}]"))?;
            Ok((key, tensor))
        })
        .collect()
}

/// An open `.npz` archive whose members are read with their claimed sizes checked.
struct Npz {
    archive: zip::ZipArchive<std::io::Cursor<Vec<u8>>>,
    where_: String,
}

impl Npz {
    fn new(bytes: Vec<u8>, where_: &str) -> Result<Self, String> {
        let archive = zip::ZipArchive::new(std::io::Cursor::new(bytes))
            .map_err(|e| format!("{where_}: damaged .npz file ({e})"))?;
        Ok(Self {
            archive,
            where_: where_.to_string(),
        })
    }

    /// Member names without `.npy`, in archive order.
    fn keys(&self) -> Vec<String> {
        self.archive
            .file_names()
            .map(|n| n.strip_suffix(".npy").unwrap_or(n).to_string())
            .collect()
    }

    /// The bytes of member `index`, refused when the archive claims more than deflate can give.
    fn member(&mut self, index: usize) -> Result<Vec<u8>, String> {
        let where_ = &self.where_;
        let mut member = self
            .archive
            .by_index(index)
            .map_err(|e| format!("{where_}: damaged .npz file ({e})"))?;
        let name = member.name();
        let name = name.strip_suffix(".npy").unwrap_or(name).to_string();
        let bound = member.compressed_size().saturating_mul(DEFLATE_MAX_RATIO);
        if member.size() > bound {
            return Err(format!(
                "{where_}[{name}]: the archive claims {} bytes from {} stored",
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
            .map_err(|e| format!("{where_}[{name}]: damaged .npz file ({e})"))?;
        Ok(data)
    }
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
        let mut unicode = b"\x93NUMPY\x01\x00\x00\x00".to_vec();
        let header = "{'descr': '<U2', 'fortran_order': False, 'shape': (2,), }";
        unicode[8..10].copy_from_slice(&(header.len() as u16).to_le_bytes());
        unicode.extend_from_slice(header.as_bytes());
        for c in ['é', 'x', 'y', '\0'] {
            unicode.extend_from_slice(&(c as u32).to_le_bytes());
        }
        let words = Tensor::strings(vec![2], vec!["éx".as_bytes().to_vec(), b"y".to_vec()]);
        assert_eq!(parse(&unicode, "u").unwrap(), words);
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
