//! The arrays of a numpy `.npz` (as the fixtures record TensorFlow's values), kept as raw
//! little-endian bytes: what the C interface takes and gives. savedmodel-npy reads the files.
//! Byte strings (`|S<width>`, NUL-padded) become the interface's packed string layout.

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

/// Every array of the `.npz` at `path`, in archive order.
pub fn read(path: &Path) -> Vec<Array> {
    let members = savedmodel_npy::read_npz(path).unwrap_or_else(|e| panic!("{e}"));
    members
        .into_iter()
        .map(|(name, bytes)| {
            let raw = savedmodel_npy::parse_raw(&bytes, &name).unwrap_or_else(|e| panic!("{e}"));
            let shape: Vec<i64> = raw.shape.iter().map(|&d| d as i64).collect();
            let bytes = match raw.descr.strip_prefix("|S") {
                Some(width) => packed_strings(raw.data, width.parse().expect("|S width"), &shape),
                None => raw.data.to_vec(),
            };
            Array {
                descr: raw.descr,
                shape,
                bytes,
                name,
            }
        })
        .collect()
}

/// numpy's fixed-width, NUL-padded strings in the packed layout (lengths, then bytes): numpy
/// drops the trailing NULs only, so binary strings (encoded images) keep the ones inside.
fn packed_strings(data: &[u8], width: usize, shape: &[i64]) -> Vec<u8> {
    let count: i64 = shape.iter().product();
    let items: Vec<&[u8]> = if width == 0 {
        vec![&[]; count as usize]
    } else {
        data.chunks(width)
            .map(|c| &c[..c.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1)])
            .collect()
    };
    super::packed(&items)
}
