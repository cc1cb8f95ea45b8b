//! Helpers shared by the integration tests: fixture paths, a reader for the `.npz` files in
//! which the fixtures record TensorFlow's values (numpy's uncompressed zip of `.npy` files), and
//! NodeDefs for hand-built graphs.
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use savedmodel_core::protos::attr_value::Value as A;
use savedmodel_core::protos::{AttrValue, NodeDef};
use savedmodel_core::{DType, Storage, Tensor};

/// A NodeDef of a hand-built graph.
pub fn node(name: &str, op: &str, inputs: &[&str], attrs: Vec<(&str, A)>) -> NodeDef {
    NodeDef {
        name: name.into(),
        op: op.into(),
        input: inputs.iter().map(|s| s.to_string()).collect(),
        attr: attrs
            .into_iter()
            .map(|(k, v)| (k.to_string(), AttrValue { value: Some(v) }))
            .collect(),
        ..Default::default()
    }
}

/// The repository's `tests/data`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
}

/// The models `tests/data/models/numpy_only.txt` lists as needing ops the native engine lacks,
/// each with those op types (sorted).
pub fn numpy_only() -> BTreeMap<String, Vec<String>> {
    let text = std::fs::read_to_string(data_dir().join("models/numpy_only.txt"))
        .expect("tests/data/models/numpy_only.txt");
    let mut out = BTreeMap::new();
    for line in text
        .lines()
        .filter(|l| !l.trim().is_empty() && !l.starts_with('#'))
    {
        let (name, ops) = line.split_once(':').expect("`name: Op, Op`");
        let mut ops: Vec<String> = ops.split(',').map(|op| op.trim().to_string()).collect();
        ops.sort();
        out.insert(name.trim().to_string(), ops);
    }
    out
}

/// The SavedModels the native engine runs: all but those `numpy_only` lists.
pub fn native_models() -> Vec<PathBuf> {
    let skipped = numpy_only();
    saved_models()
        .into_iter()
        .filter(|dir| {
            let name = dir.file_name().map(|n| n.to_string_lossy().into_owned());
            !name.is_some_and(|n| skipped.contains_key(&n))
        })
        .collect()
}

/// Every SavedModel directory the fixtures hold, with the `.io.npz` TensorFlow recorded for it.
pub fn saved_models() -> Vec<PathBuf> {
    let mut dirs = Vec::new();
    for parent in ["reference/savedmodels", "models"] {
        for entry in std::fs::read_dir(data_dir().join(parent)).expect("fixture directory") {
            let path = entry.expect("directory entry").path();
            if path.join("saved_model.pb").is_file() {
                dirs.push(path);
            }
        }
    }
    dirs.sort();
    assert!(dirs.len() >= 19, "fixtures missing: {dirs:?}");
    dirs
}

/// The member names of a zip archive.
pub fn npz_names(path: &Path) -> Vec<String> {
    let archive = zip::ZipArchive::new(std::fs::File::open(path).expect("npz")).expect("zip");
    archive.file_names().map(String::from).collect()
}

/// Every array of an `.npz`, by member name without `.npy`.
pub fn read_npz(path: &Path) -> BTreeMap<String, Tensor> {
    let mut archive = zip::ZipArchive::new(std::fs::File::open(path).expect("npz")).expect("zip");
    let mut out = BTreeMap::new();
    for i in 0..archive.len() {
        let mut member = archive.by_index(i).expect("zip member");
        let name = member.name().trim_end_matches(".npy").to_string();
        let mut bytes = Vec::new();
        member.read_to_end(&mut bytes).expect("zip member bytes");
        out.insert(name, parse_npy(&bytes));
    }
    out
}

/// A `.npy` file (format 1.0 or 2.0, C order, little-endian numeric dtypes).
fn parse_npy(bytes: &[u8]) -> Tensor {
    assert_eq!(&bytes[..6], b"\x93NUMPY", "not a .npy file");
    let (header_len, start) = match bytes[6] {
        1 => (u16::from_le_bytes([bytes[8], bytes[9]]) as usize, 10),
        _ => (
            u32::from_le_bytes(bytes[8..12].try_into().unwrap()) as usize,
            12,
        ),
    };
    let header = std::str::from_utf8(&bytes[start..start + header_len]).expect("npy header");
    assert!(header.contains("'fortran_order': False"), "{header}");
    let descr = header
        .split("'descr': '")
        .nth(1)
        .and_then(|s| s.split('\'').next())
        .unwrap();
    let shape_text = header
        .split("'shape': (")
        .nth(1)
        .and_then(|s| s.split(')').next())
        .unwrap();
    let shape: Vec<usize> = shape_text
        .split(',')
        .map(str::trim)
        .filter(|s| !s.is_empty())
        .map(|s| s.parse().unwrap())
        .collect();
    let data = &bytes[start + header_len..];
    if let Some(width) = descr.strip_prefix("|S") {
        let width: usize = width.parse().unwrap();
        let strings = if width == 0 {
            vec![Vec::new(); shape.iter().product()]
        } else {
            data.chunks(width)
                .map(|c| c.iter().copied().take_while(|&b| b != 0).collect())
                .collect()
        };
        return Tensor::strings(shape, strings);
    }
    if let Some(width) = descr.strip_prefix("<U") {
        let width: usize = width.parse().unwrap();
        let strings = data
            .chunks(width * 4)
            .map(|c| {
                c.chunks(4)
                    .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
                    .take_while(|&u| u != 0)
                    .filter_map(char::from_u32)
                    .collect::<String>()
                    .into_bytes()
            })
            .collect();
        return Tensor::strings(shape, strings);
    }
    let dtype = match descr {
        "<f2" => DType::Float16,
        "<f4" => DType::Float32,
        "<f8" => DType::Float64,
        "|i1" => DType::Int8,
        "<i4" => DType::Int32,
        "<i8" => DType::Int64,
        "<i2" => DType::Int16,
        "<u2" => DType::UInt16,
        "<u4" => DType::UInt32,
        "<u8" => DType::UInt64,
        "|u1" => DType::UInt8,
        "|b1" => DType::Bool,
        other => panic!("npy dtype {other} not handled by this test reader"),
    };
    let storage = Storage::from_le_bytes(dtype, data).unwrap();
    Tensor::new(shape, storage).expect("npy data fits its shape")
}

/// Writes `records` (sorted by key) as a LevelDB-format table the way TensorFlow's writer lays
/// it out (one data block, an empty metaindex block, an index block, the footer), so that tests
/// can damage single fields of an index and still pass its checksums.
pub fn write_table(path: &Path, records: &[(Vec<u8>, Vec<u8>)]) {
    write_table_listing_data_block(path, records, 1);
}

/// [`write_table`] with an index that lists its one data block `times` times.
pub fn write_table_listing_data_block(path: &Path, records: &[(Vec<u8>, Vec<u8>)], times: usize) {
    use savedmodel_core::checksum::{crc32c, mask};
    fn varint(out: &mut Vec<u8>, mut value: u64) {
        while value >= 0x80 {
            out.push((value as u8) | 0x80);
            value >>= 7;
        }
        out.push(value as u8);
    }
    fn block(file: &mut Vec<u8>, records: &[(Vec<u8>, Vec<u8>)]) -> (u64, u64) {
        let mut body = Vec::new();
        for (key, value) in records {
            varint(&mut body, 0);
            varint(&mut body, key.len() as u64);
            varint(&mut body, value.len() as u64);
            body.extend(key);
            body.extend(value);
        }
        body.extend(0u32.to_le_bytes()); // one restart point, at 0
        body.extend(1u32.to_le_bytes());
        let handle = (file.len() as u64, body.len() as u64);
        body.push(0); // no compression
        let crc = mask(crc32c(&body));
        file.extend(&body);
        file.extend(crc.to_le_bytes());
        handle
    }
    let mut file = Vec::new();
    let data = block(&mut file, records);
    let meta = block(&mut file, &[]);
    let mut data_handle = Vec::new();
    varint(&mut data_handle, data.0);
    varint(&mut data_handle, data.1);
    let last_key = records.last().map(|(k, _)| k.clone()).unwrap_or_default();
    let index = block(&mut file, &vec![(last_key, data_handle); times]);
    let mut footer = Vec::new();
    for value in [meta.0, meta.1, index.0, index.1] {
        varint(&mut footer, value);
    }
    footer.resize(40, 0);
    footer.extend(0xDB47_7524_8B80_FB57u64.to_le_bytes());
    file.extend(footer);
    std::fs::write(path, file).unwrap();
}
