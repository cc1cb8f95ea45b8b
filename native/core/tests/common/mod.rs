//! Helpers shared by the integration tests: fixture paths, and a reader for the `.npz` files in
//! which the fixtures record TensorFlow's values (numpy's uncompressed zip of `.npy` files).
#![allow(dead_code)] // each test binary uses its own subset

use std::collections::BTreeMap;
use std::io::Read;
use std::path::{Path, PathBuf};

use savedmodel_core::{DType, Storage, Tensor};

/// The repository's `tests/data`.
pub fn data_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../../tests/data")
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
    let dtype = match descr {
        "<f2" => DType::Float16,
        "<f4" => DType::Float32,
        "<f8" => DType::Float64,
        "|i1" => DType::Int8,
        "<i4" => DType::Int32,
        "<i8" => DType::Int64,
        "|u1" => DType::UInt8,
        "|b1" => DType::Bool,
        other => panic!("npy dtype {other} not handled by this test reader"),
    };
    let storage = Storage::from_le_bytes(dtype, &bytes[start + header_len..]).unwrap();
    Tensor::new(shape, storage).expect("npy data fits its shape")
}
