//! The arrays of a numpy `.npz` (an uncompressed zip of `.npy` files, as the fixtures record
//! TensorFlow's values), kept as raw little-endian bytes: what the C interface takes and gives.
//! Byte strings (`|S<width>`, NUL-padded) become the interface's packed string layout.

use std::io::Read;
use std::path::Path;

/// One `.npy` member: its name without `.npy`, numpy dtype descr (`<f4`), shape and bytes.
pub struct Array {
    pub name: String,
    pub descr: String,
    pub shape: Vec<i64>,
    pub bytes: Vec<u8>,
}

impl Array {
    /// TensorFlow's DataType value for the numeric descrs the fixtures use.
    pub fn dtype(&self) -> i32 {
        match self.descr.as_str() {
            "<f4" => 1,
            "<f8" => 2,
            "<i4" => 3,
            "|u1" => 4,
            "<i2" => 5,
            "|i1" => 6,
            "<i8" => 9,
            "|b1" => 10,
            "<u2" => 17,
            "<f2" => 19,
            "<u4" => 22,
            "<u8" => 23,
            descr if descr.starts_with("|S") => 7,
            other => panic!(
                "{}: npy dtype {other} not handled by this test reader",
                self.name
            ),
        }
    }
}

pub fn read(path: &Path) -> Vec<Array> {
    let file = std::fs::File::open(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let mut archive = zip::ZipArchive::new(file).expect("zip");
    (0..archive.len())
        .map(|i| {
            let mut member = archive.by_index(i).expect("zip member");
            let name = member.name().trim_end_matches(".npy").to_string();
            let mut bytes = Vec::new();
            member.read_to_end(&mut bytes).expect("zip member bytes");
            parse(name, &bytes)
        })
        .collect()
}

/// A `.npy` file of format 1.0 or 2.0 in C order.
fn parse(name: String, bytes: &[u8]) -> Array {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "{name}: not a .npy file");
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).expect("npy header");
    assert!(header.contains("'fortran_order': False"), "{header}");
    let field = |key: &str, end: char| {
        header
            .split(key)
            .nth(1)
            .and_then(|s| s.split(end).next())
            .unwrap()
            .to_string()
    };
    let shape: Vec<i64> = field("'shape': (", ')')
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let descr = field("'descr': '", '\'');
    let data = &bytes[start + header_len..];
    let bytes = match descr.strip_prefix("|S") {
        Some(width) => packed_strings(data, width.parse().unwrap(), &shape),
        None => data.to_vec(),
    };
    Array {
        descr,
        shape,
        bytes,
        name,
    }
}

/// numpy's fixed-width, NUL-padded strings in the packed layout (lengths, then bytes).
fn packed_strings(data: &[u8], width: usize, shape: &[i64]) -> Vec<u8> {
    let count: i64 = shape.iter().product();
    let items: Vec<&[u8]> = if width == 0 {
        vec![&[]; count as usize]
    } else {
        data.chunks(width)
            .map(|c| &c[..c.iter().position(|&b| b == 0).unwrap_or(c.len())])
            .collect()
    };
    super::packed(&items)
}
